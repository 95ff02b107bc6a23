//! K-grouped FP8 GEMM, "TN" with both operands MN-major (DeepGEMM's
//! `k_grouped_fp8_gemm_tn_contiguous`, the MoE weight gradient): for every group `g`,
//! `D[g] = C[g] + A_gᵀ · B_g` in f32, where `A_g` (`k_g × m`) and `B_g` (`k_g × n`) are the
//! group's rows of `A[total_k, m]` and `B[total_k, n]` (arguments: [`KGroupedArgs`]). Both
//! operands carry one scale per 128-token block and column (`SFA[total_k/128, m]`,
//! `SFB[total_k/128, n]`):
//! `D[g][i,j] = C[g][i,j] + Σ_kb SFA[kb,i]·SFB[kb,j]·Σ_{t∈kb} A[t,i]·B[t,j]`.
//!
//! # What differs from the NT kernels ([`crate::dense`])
//!
//! The MFMA (`v_mfma_f32_16x16x32_fp8_fp8`, same transposed mapping and fragment reads as the
//! dense kernels) wants each lane to hold 8 consecutive K values of one row of each operand. Here
//! K is the *strided* axis in global memory, so every tile is transposed on its way into LDS; the
//! LDS stage has exactly the dense kernels' shape (`BM + BN` rows of the 64 K bytes of one half
//! block, K contiguous inside a row), so the fragment reads are the dense kernels' `ds_read_b128`.
//!
//! * **Copy unit**: per 64-K half, each operand tile is `64 × BM` (or `BN`) bytes; a work-item
//!   owns one 8 × 8 unit (8 consecutive K rows × 8 consecutive columns, [`copy_unit`]): 8
//!   `buffer_load_dwordx2` (consecutive lanes read consecutive 8-byte pieces of one K row: one
//!   128-byte line per 16 lanes), an 8 × 8 byte transpose in registers with 32 `v_perm_b32`
//!   ([`transpose_8x8`]), and 8 `ds_write_b64`: output `j` is column `8·m8 + (j ⊕ (m8 & 3))` of
//!   the unit ([`unit_xor`]; the rotation costs nothing, it is in the per-lane `v_perm_b32`
//!   selectors) and goes to that column's LDS row at K offset `8·k8`. Waves `0..BM/64` copy A,
//!   the next `BN/64` copy B (wave-uniform roles); with a 64 × 64 tile waves 2 and 3 only compute.
//! * **LDS swizzle** ([`kg_lds_swizzle`]): logical 16-byte chunk `c` of row `r` sits at
//!   `64·r + 16·(c ⊕ s(r))`, `s(r) = ((r >> 1) ⊕ ((r >> 4) & 2)) & 3`: the dense swizzle with bit 1
//!   also flipped by bit 5 of the row. Reads: a read phase touches 8 consecutive rows `8j..8j+7`
//!   only, for which the extra term is a constant XOR, so the dense kernels' conflict-free read
//!   argument carries over; a fragment's offset depends on bit 1 of its index
//!   ([`frag_lds_offset`], two per-lane offsets). Writes (`ds_write_b64`, phases of 8
//!   consecutive lanes = 16 banks × 2): the 8 lanes of a phase have the same `k8` and
//!   `m8 = 8q .. 8q+7`, so their rows `8·m8 + (j ⊕ (m8 & 3))` differ in bit 0 (`m8` bit 0), in
//!   bit 1 (`m8` bit 1) and in bit 5 (`m8` bit 2): `8·(r & 1) + 2·(c ⊕ s(r))` takes 8 distinct
//!   values, conflict-free. The host test `kgrouped_lds_is_bank_conflict_free` checks both
//!   patterns for both tile widths.
//! * **Promotion**: per 128-K block, `acc += partial · (SFA[kb, i] · SFB[kb, j..j+4])`: one
//!   `buffer_load_dword` of SFA per A fragment (a lane owns one row) and one `buffer_load_dwordx4`
//!   of SFB per B fragment (a lane owns 4 consecutive columns), 2 `v_pk_mul_f32` + 2
//!   `v_pk_fma_f32` per fragment pair.
//! * **Epilogue**: `D = C + acc` with `buffer_load_dwordx4` / `buffer_store_dwordx4` of the 4
//!   consecutive f32 a lane owns; every element is read and written by the same lane, so `C` may
//!   be `D`. All C loads are issued before the first store. An empty group (`k_g = 0`) stores `C`
//!   unchanged (bit for bit), or returns at once when `C` is `D`.
//! * **Groups**: the grid is `G · ⌈m/BM⌉ · ⌈n/BN⌉` tiles (XCD remap over all, groups outermost,
//!   M fastest inside a group: [`crate::tile::masked_tile_coords`]); a workgroup sums `ks[0..g]`
//!   with scalar loads (no host round trip) and bounds every resource by its group's slice.
//!
//! Supported shapes: `m % 8 == 0`, `n % 8 == 0` (8-byte column pieces), any `m, n ≥ 8` with tails
//! handled by parking (columns past `m` or `n` read 0 and are not stored), `total_k % 128 == 0`.
//! Parking must be explicit for every access whose offset is split into a lane part and a
//! wave-uniform `soffset` part (the operand rows and the scale rows of block `kb`): the buffer
//! range check covers `voffset` only, so an unparked tail column would read the next row.
//!
//! # Measured on the code objects (LLVM 22.1.4; `fp8gemm info`, `tests/gemm_kgrouped.rs`)
//!
//! | kernel | VGPR | AGPR | SGPR | spills | scratch | LDS (dynamic) | waves/SIMD (regs) |
//! |---|---|---|---|---|---|---|---|
//! | `k_grouped_fp8_gemm_tn_contiguous_bm64_bn64`   | 108 | 0 | 54 | 0 | 0 | 16 KiB | 4 |
//! | `k_grouped_fp8_gemm_tn_contiguous_bm128_bn128` | 256 | 0 | 60 | 0 | 0 | 32 KiB | 2 |
//!
//! Steady-state main loop per 128-K block and wave (the emulator's hottest-loop counters,
//! `fp8gemm kgrouped`): bm128_bn128 247 wave-instructions of which 64 MFMA (25.9 %); bm64_bn64
//! 98 of which 16 MFMA (16.3 %). Besides the MFMAs a bm128_bn128 block holds 32 `v_pk_mul_f32`
//! and 32 `v_pk_fma_f32` (per-column promotion), 64 `v_perm_b32` (transpose), 16 `ds_read_b128`,
//! 16 `buffer_load_dwordx2` and 16 `ds_write_b64` (copy), 4 + 4 scale loads, waitcnts and loop
//! control. LDS: 0 bank-conflict cycles in every launch measured
//! (`no_lds_bank_conflicts_and_exact_mfma_count`).
//!
//! Lane order of the copy matters for the memory pipeline: a first version gave consecutive
//! lanes consecutive K rows (the obvious way to make the LDS writes conflict-free), so each
//! `buffer_load_dwordx2` touched 64 separate 128-byte lines instead of 4; the timing model
//! (`fp8gemm profile --kgrouped`) put its vector-L1 pipe at 94 % busy and a 2048² problem with
//! K = 1024 at 80 µs. Copying along M/N with the per-lane column rotation instead: 37.5 µs.
//! Against the dense 128 × 128 kernel (174 instructions, 36.8 % MFMA) the extra cost is the
//! transpose (64 `v_perm_b32`), the per-column scales (32 `v_pk_mul_f32`) and twice as many LDS
//! write instructions (8-byte instead of 16-byte writes).

use crate::amdgpu_kernel;
use crate::args::KGroupedArgs;
use crate::tile::{DenseTile, STAGE_K};

/// The K-grouped kernels' requirement on `m` and `n` (each lane loads 8 consecutive columns).
pub const MN_ALIGN: u32 = 8;

/// The K-grouped kernels ([`crate::kgrouped`]): tile name and shape.
pub const KGROUPED_TILES: [DenseTile; 2] = [
    DenseTile { name: "k_grouped_fp8_gemm_tn_contiguous_bm64_bn64", block_m: 64, block_n: 64 },
    DenseTile { name: "k_grouped_fp8_gemm_tn_contiguous_bm128_bn128", block_m: 128, block_n: 128 },
];

/// LDS byte offset (inside a stage's A or B region) of logical 16-byte chunk `chunk` (0..4) of
/// row `row` in the K-grouped kernels; see the module docs.
#[inline(always)]
pub const fn kg_lds_swizzle(row: u32, chunk: u32) -> u32 {
    row * STAGE_K + 16 * (chunk ^ (((row >> 1) ^ ((row >> 4) & 2)) & 3))
}

/// LDS byte offset of logical chunk `chunk` of row `16·frag + q` (`q < 16`), computed from the
/// per-lane part `kg_lds_swizzle(q + 32·b, chunk) − 2048·b` with `b = (frag >> 1) & 1` (the only
/// bit of the fragment index the swizzle sees): the fragment reads' two lane offsets.
#[inline(always)]
pub const fn frag_lds_offset(frag: u32, lane_part: (u32, u32)) -> u32 {
    // A bitwise select rather than an index or a branch: LLVM turned both into a scratch
    // array indexed by the (wave-uniform) fragment bit.
    let pick = 0u32.wrapping_sub((frag >> 1) & 1);
    16 * frag * STAGE_K + (lane_part.0 ^ ((lane_part.0 ^ lane_part.1) & pick))
}

/// The per-lane parts of [`frag_lds_offset`] for a lane reading row `q` (of its fragment), chunk
/// `chunk`.
#[inline(always)]
pub const fn frag_lane_parts(q: u32, chunk: u32) -> (u32, u32) {
    (kg_lds_swizzle(q, chunk), kg_lds_swizzle(q + 32, chunk).wrapping_sub(32 * STAGE_K))
}

/// The 8 × 8 copy unit of work-item `u` (`0..width`) of an operand tile `width` columns wide
/// (64 or 128): `(m8, k8)`, i.e. columns `8·m8 .. +8` and K rows `8·k8 .. +8` of the 64-K half.
/// `m8` is the low part of `u`, so consecutive lanes read consecutive 8-byte pieces of one K row
/// (one 128-byte line per 16 lanes with 128-wide tiles).
#[inline(always)]
pub const fn copy_unit(u: u32, width: u32) -> (u32, u32) {
    let w8 = width / 8;
    (u % w8, u / w8)
}

/// The column rotation of unit `m8`: its transposed output `j` holds column `j ⊕ unit_xor(m8)`,
/// so that 8 consecutive lanes write 8 different rows modulo 8 (see the module docs).
#[inline(always)]
pub const fn unit_xor(m8: u32) -> u32 {
    m8 & 3
}

/// LDS byte offset (inside the operand's region) where output `j` of copy unit `(m8, k8)` goes:
/// column `8·m8 + (j ⊕ unit_xor(m8))`, K bytes `8·k8 .. +8` of the half.
#[inline(always)]
pub const fn unit_lds_offset(m8: u32, k8: u32, j: u32) -> u32 {
    kg_lds_swizzle(8 * m8 + (j ^ unit_xor(m8)), k8 >> 1) + 8 * (k8 & 1)
}

/// Transposes an 8 × 8 byte block with a column rotation: byte `j ⊕ xor` of `x[kk]` becomes
/// byte `kk` of the result's `[j]` (`xor < 4`, so the rotation stays inside each 4-column half).
/// `perm` is `v_perm_b32` (on the device `intrinsics::perm_b32`; the selectors of the first
/// stage depend on `xor`, per lane); 32 calls.
#[inline(always)]
pub fn transpose_8x8(x: &[u64; 8], xor: u32, perm: impl Fn(u32, u32, u32) -> u32) -> [u64; 8] {
    let sel = |a: u32, b: u32| a | (4 + a) << 8 | b << 16 | (4 + b) << 24;
    let (sel_lo, sel_hi) = (sel(xor, 1 ^ xor), sel(2 ^ xor, 3 ^ xor));
    let mut y = [0u64; 8];
    for half_m in 0..2 {
        for half_k in 0..2 {
            let r = |i: usize| (x[4 * half_k + i] >> (32 * half_m)) as u32;
            // (r0[σ0], r1[σ0], r0[σ1], r1[σ1]) and (r0[σ2], r1[σ2], r0[σ3], r1[σ3]) with
            // σi = i ⊕ xor; same for r2, r3.
            let t0 = perm(r(1), r(0), sel_lo);
            let t1 = perm(r(1), r(0), sel_hi);
            let t2 = perm(r(3), r(2), sel_lo);
            let t3 = perm(r(3), r(2), sel_hi);
            let o = [perm(t2, t0, 0x0504_0100), perm(t2, t0, 0x0706_0302), perm(t3, t1, 0x0504_0100), perm(t3, t1, 0x0706_0302)];
            for (j, &oj) in o.iter().enumerate() {
                y[4 * half_m + j] |= u64::from(oj) << (32 * half_k);
            }
        }
    }
    y
}

#[cfg(target_arch = "amdgpu")]
mod imp {
    use core::num::NonZeroU32;

    use super::{copy_unit, frag_lane_parts, frag_lds_offset, transpose_8x8, unit_lds_offset, unit_xor};
    use crate::args::KGroupedArgs;
    use crate::intrinsics::*;
    use crate::tile::{self, NUM_XCDS, SCALE_BLOCK_K, STAGE_K, stage_offset};

    /// Buffer offset out of range of every resource (all tensors are smaller than
    /// `tile::MAX_TENSOR_BYTES`): loads there read 0, stores are dropped.
    const PARKED: u32 = tile::MAX_TENSOR_BYTES as u32;

    /// One output tile of one group, as buffer resources over that group's slices.
    #[derive(Clone, Copy)]
    struct Job {
        /// The group's rows of A (`k_g × m` FP8).
        rs_a: BufferResource,
        /// The group's rows of B (`k_g × n` FP8).
        rs_b: BufferResource,
        /// The group's scale rows of SFA (`k_g/128 × m` f32).
        rs_sfa: BufferResource,
        /// The group's scale rows of SFB (`k_g/128 × n` f32).
        rs_sfb: BufferResource,
        /// `C[g]` (`m × n` f32).
        rs_c: BufferResource,
        /// `D[g]` (`m × n` f32).
        rs_d: BufferResource,
        m: u32,
        n: u32,
        /// 128-K blocks of the group.
        nkb: u32,
        m0: u32,
        n0: u32,
    }

    /// Finds this workgroup's group and tile and runs it.
    #[inline(always)]
    pub fn kgrouped<const FM: usize, const FN: usize>(args: KGroupedArgs) {
        let bm = 32 * FM as u32;
        let bn = 32 * FN as u32;
        let (m, n, total_k, groups) = (args.m, args.n, args.total_k, args.groups);
        let tiles_m = m.div_ceil(bm);
        let per_group = tiles_m * n.div_ceil(bn);
        // Both are non-zero for valid arguments (otherwise the host launches nothing).
        let (Some(tiles_m_nz), Some(per_group_nz)) = (NonZeroU32::new(tiles_m), NonZeroU32::new(per_group)) else {
            return;
        };
        let grid = groups * per_group;
        let pid = workgroup_id_x();
        if pid >= grid {
            return;
        }
        let id = tile::xcd_remap(pid, grid, NUM_XCDS);
        let (g, tm, tn) = tile::masked_tile_coords(id, tiles_m_nz, per_group_nz);

        // The group's K range, from the sizes on the device (never trusted, see KGroupedArgs).
        let rs_ks = BufferResource::new(args.ks.addr(), groups * 4);
        let size = |v: i32| if v < 0 { 0 } else { v as u32 };
        // SAFETY (every `ks` below): rs_ks covers ks (groups i32, read-only during the launch);
        // h < g < groups, so offsets are in range, wave-uniform and 4-byte aligned.
        let ks = |h: u32| size(unsafe { s_buffer_load_i32(rs_ks, h * 4) });
        let mut k_off = 0u32;
        let mut h = 0;
        // Four independent scalar loads per wait rather than one.
        while h + 4 <= g {
            let (a, b, c, d) = (ks(h), ks(h + 1), ks(h + 2), ks(h + 3));
            k_off = k_off.saturating_add(a).saturating_add(b).saturating_add(c).saturating_add(d);
            h += 4;
        }
        while h < g {
            k_off = k_off.saturating_add(ks(h));
            h += 1;
        }
        let k_off = k_off.min(total_k);
        let k_g = ks(g).min(total_k - k_off) & !(SCALE_BLOCK_K - 1);
        let nkb = k_g / SCALE_BLOCK_K;
        if nkb == 0 && args.c.addr() == args.d.addr() {
            // D[g] = C[g] + 0 in place: nothing to do.
            return;
        }

        let out_bytes = m * n * 4;
        let out_base = u64::from(g) * u64::from(out_bytes);
        let kb0 = u64::from(k_off / SCALE_BLOCK_K);
        let (k_off, m64, n64) = (u64::from(k_off), u64::from(m), u64::from(n));
        let job = Job {
            rs_a: BufferResource::new(args.a.addr() + k_off * m64, k_g * m),
            rs_b: BufferResource::new(args.b.addr() + k_off * n64, k_g * n),
            rs_sfa: BufferResource::new(args.sfa.addr() + kb0 * m64 * 4, nkb * m * 4),
            rs_sfb: BufferResource::new(args.sfb.addr() + kb0 * n64 * 4, nkb * n * 4),
            rs_c: BufferResource::new(args.c.addr() + out_base, out_bytes),
            rs_d: BufferResource::new(args.d.addr() + out_base, out_bytes),
            m,
            n,
            nkb,
            m0: tm * bm,
            n0: tn * bn,
        };
        tile_kgrouped::<FM, FN>(&job);
    }

    /// The GEMM of one `32·FM × 32·FN` tile of one group: transposing copy into LDS, MFMA,
    /// per-128-K promotion with per-column scales, `D = C + acc`.
    #[inline(always)]
    fn tile_kgrouped<const FM: usize, const FN: usize>(job: &Job) {
        let bm = 32 * FM as u32;
        let bn = 32 * FN as u32;
        let (m, n, nkb, m0, n0) = (job.m, job.n, job.nkb, job.m0, job.n0);

        let tid = workitem_id_x();
        let lane = tid & 63;
        let wave = readfirstlane_u32(tid >> 6);
        let (wm, wn) = (wave & 1, wave >> 1);

        // Copy roles (wave-uniform): waves 0..bm/64 copy A, the next bn/64 copy B.
        let copy_a = wave < bm / 64;
        let copy_any = wave < (bm + bn) / 64;
        let (rs_op, dim, origin, region) = if copy_a { (job.rs_a, m, m0, 0) } else { (job.rs_b, n, n0, bm * STAGE_K) };
        let (m8, k8) = if copy_a { copy_unit(tid, bm) } else { copy_unit(tid.wrapping_sub(bm), bn) };
        let col = origin + 8 * m8;
        // Columns past the operand's width read 0 (their outputs are never stored).
        let load_voff = if col < dim { 8 * k8 * dim + col } else { PARKED };
        let xor = unit_xor(m8);
        let mut write_off = [0u32; 8];
        for (j, w) in write_off.iter_mut().enumerate() {
            *w = region + unit_lds_offset(m8, k8, j as u32);
        }

        // Fragment reads, as in the dense kernels: lane l reads row l & 15 of its fragment,
        // logical chunk l >> 4; the swizzle sees bit 1 of the fragment index (frag_lds_offset).
        let lane_parts = frag_lane_parts(lane & 15, lane >> 4);
        let b_region = bm * STAGE_K;

        let row_of = |fm: usize| m0 + 16 * (wm * FM as u32 + fm as u32) + (lane & 15);
        let col_of = |fnn: usize| n0 + 16 * (wn * FN as u32 + fnn as u32) + 4 * (lane >> 4);

        let load = |kofs: u32, gx: &mut [u64; 8]| {
            if copy_any {
                let soff = kofs * dim;
                for (kk, x) in gx.iter_mut().enumerate() {
                    // SAFETY: rs_op covers the group's rows of the operand (readable for the
                    // launch); voffset < 64·dim ≤ k_g·dim for real columns, parked ones are out
                    // of range and read 0; soffset + voffset stays inside the group's rows
                    // (kofs + 64 ≤ k_g). Offsets are 8-byte aligned (dim % 8 == 0).
                    *x = unsafe { buffer_load_b64(rs_op, load_voff + kk as u32 * dim, soff) }.to_u64();
                }
            }
        };
        let store = |stage: u32, gx: &[u64; 8]| {
            if copy_any {
                let y = transpose_8x8(gx, xor, perm_b32);
                let base = stage_offset(bm, bn, stage);
                for (mm, &v) in y.iter().enumerate() {
                    // SAFETY: inside stage `stage` of this operand's region (< lds_bytes, the
                    // launch's sharedMemBytes), 8-byte aligned; no wave reads the stage until
                    // the next barrier (double buffering as in the dense kernels).
                    unsafe { lds_write_b64(base + write_off[mm], v) };
                }
            }
        };
        let compute = |stage: u32, first: bool, part: &mut [[F32x4; FN]; FM]| -> ([[u64; 2]; FM], [[u64; 2]; FN]) {
            let base = stage_offset(bm, bn, stage);
            let mut af = [[0u64; 2]; FM];
            let mut bf = [[0u64; 2]; FN];
            for (fm, a) in af.iter_mut().enumerate() {
                let off = frag_lds_offset(wm * FM as u32 + fm as u32, lane_parts);
                // SAFETY: inside the stage's A region (fragment < BM/16), written before the
                // last barrier.
                *a = unsafe { lds_read_b128(base + off) }.to_u64x2();
            }
            for (fnn, b) in bf.iter_mut().enumerate() {
                let off = frag_lds_offset(wn * FN as u32 + fnn as u32, lane_parts);
                // SAFETY: inside the stage's B region (bm is a multiple of 64 rows, so the
                // swizzle sees the same fragment bit), written before the last barrier.
                *b = unsafe { lds_read_b128(base + b_region + off) }.to_u64x2();
            }
            // With the CDNA4 MFMA the caller issues the block's MFMAs once it has both stages'
            // fragments (`mfma_f32_16x16x128_fp8`); this returns them.
            if !K128_MFMA {
                for s in 0..2 {
                    for fm in 0..FM {
                        for fnn in 0..FN {
                            let c = if first && s == 0 { F32x4::zero() } else { part[fm][fnn] };
                            part[fm][fnn] = mfma_f32_16x16x32_fp8_fp8(bf[fnn][s], af[fm][s], c);
                        }
                    }
                }
            }
            (af, bf)
        };

        // Scale offsets inside one block row. The hardware range-checks only voffset, not
        // voffset + soffset, so a tail row or column must be parked explicitly: in any block but
        // the last its offset would otherwise land in the next block's scales, in the last one
        // past the group.
        let mut sfa_voff = [PARKED; FM];
        for (fm, v) in sfa_voff.iter_mut().enumerate() {
            if row_of(fm) < m {
                *v = row_of(fm) * 4;
            }
        }
        let mut sfb_voff = [PARKED; FN];
        for (fnn, v) in sfb_voff.iter_mut().enumerate() {
            if col_of(fnn) < n {
                *v = col_of(fnn) * 4;
            }
        }

        let mut acc = [[F32x4::zero(); FN]; FM];
        if nkb > 0 {
            let mut part = [[F32x4::zero(); FN]; FM];
            let mut gx = [0u64; 8];
            load(0, &mut gx);
            store(0, &gx);
            lds_barrier();

            let mut kb = 0;
            while kb < nkb {
                let kofs = kb * SCALE_BLOCK_K;
                load(kofs + STAGE_K, &mut gx);
                let mut sfa = [0f32; FM];
                for (fm, s) in sfa.iter_mut().enumerate() {
                    // SAFETY: rs_sfa covers the group's SFA rows; soffset kb·m·4 (not range
                    // checked) selects block kb < nkb, voffset < m·4 a column of it; tail rows
                    // are parked out of range and read 0.
                    *s = unsafe { buffer_load_f32(job.rs_sfa, sfa_voff[fm], kb * m * 4) };
                }
                let mut sfb = [F32x4::zero(); FN];
                for (fnn, s) in sfb.iter_mut().enumerate() {
                    // SAFETY: as above for SFB; 16-byte aligned (n % 4 == 0, column % 4 == 0).
                    *s = unsafe { buffer_load_b128(job.rs_sfb, sfb_voff[fnn], kb * n * 4) }.to_f32x4();
                }
                sched_fence();

                let (af0, bf0) = compute(0, true, &mut part);
                sched_fence();
                store(1, &gx);
                lds_barrier();

                let more = kb + 1 < nkb;
                if more {
                    load(kofs + SCALE_BLOCK_K, &mut gx);
                }
                sched_fence();
                let (af1, bf1) = compute(1, false, &mut part);
                if K128_MFMA {
                    for fm in 0..FM {
                        for fnn in 0..FN {
                            part[fm][fnn] = mfma_k128([bf0[fnn], bf1[fnn]], [af0[fm], af1[fm]]);
                        }
                    }
                }
                for fm in 0..FM {
                    for fnn in 0..FN {
                        acc[fm][fnn] = part[fm][fnn].fma(sfb[fnn].mul_splat(sfa[fm]), acc[fm][fnn]);
                    }
                }
                sched_fence();
                if more {
                    store(0, &gx);
                    lds_barrier();
                }
                kb += 1;
            }
        }

        // Epilogue: lane holds rows row_of(fm), columns col_of(fn) + 0..4.
        let mut voff = [[PARKED; FN]; FM];
        let mut c = [[F32x4::zero(); FN]; FM];
        for fm in 0..FM {
            let row = row_of(fm);
            for fnn in 0..FN {
                let col = col_of(fnn);
                voff[fm][fnn] = if row < m && col < n { (row * n + col) * 4 } else { PARKED };
                // SAFETY: rs_c covers C[g] (m·n f32); parked lanes read 0; 16-byte aligned.
                c[fm][fnn] = unsafe { buffer_load_b128(job.rs_c, voff[fm][fnn], 0) }.to_f32x4();
            }
        }
        for fm in 0..FM {
            for fnn in 0..FN {
                let out = if nkb == 0 { c[fm][fnn] } else { c[fm][fnn].add(acc[fm][fnn]) };
                // SAFETY: rs_d covers D[g] (m·n f32); parked lanes are dropped. Each element is
                // loaded from C and stored to D by this lane only, after its load, so C may be D.
                unsafe { buffer_store_b128(out.to_bits(), job.rs_d, voff[fm][fnn], 0) };
            }
        }
    }
}

/// 64 × 64 tiles (each wave 32 × 32): small `m × n` per group, or many workgroups.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn k_grouped_fp8_gemm_tn_contiguous_bm64_bn64(args: KGroupedArgs) {
    imp::kgrouped::<2, 2>(args)
}

/// 128 × 128 tiles (each wave 64 × 64): large `m × n` (best operand reuse).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn k_grouped_fp8_gemm_tn_contiguous_bm128_bn128(args: KGroupedArgs) {
    imp::kgrouped::<4, 4>(args)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::tile::{THREADS, lds_bytes};
    use std::vec::Vec;

    #[test]
    fn specs_match_the_tile_table() {
        let specs = [K_GROUPED_FP8_GEMM_TN_CONTIGUOUS_BM64_BN64, K_GROUPED_FP8_GEMM_TN_CONTIGUOUS_BM128_BN128];
        for (spec, tile) in specs.iter().zip(KGROUPED_TILES) {
            assert_eq!(spec.name, tile.name);
            assert_eq!(spec.workgroup_size, THREADS);
            assert!(tile.block_m % 64 == 0 && tile.block_n % 64 == 0);
            assert!(2 * lds_bytes(tile.block_m, tile.block_n) <= 64 * 1024);
        }
    }

    /// `v_perm_b32` as the CDNA3 ISA defines it (selectors 0..=7 only are used).
    fn perm_ref(src0: u32, src1: u32, sel: u32) -> u32 {
        let bytes = (u64::from(src0) << 32) | u64::from(src1);
        (0..4).map(|i| (((bytes >> (8 * ((sel >> (8 * i)) & 7))) & 0xff) as u32) << (8 * i)).fold(0, |a, b| a | b)
    }

    #[test]
    fn transpose_8x8_transposes() {
        let mut x = [0u64; 8];
        for (kk, v) in x.iter_mut().enumerate() {
            for mm in 0..8 {
                *v |= ((kk * 16 + mm) as u64 + 0x11) << (8 * mm);
            }
        }
        for xor in 0..4 {
            let y = transpose_8x8(&x, xor, perm_ref);
            for (j, yj) in y.iter().enumerate() {
                for (kk, xk) in x.iter().enumerate() {
                    let col = j as u32 ^ xor;
                    assert_eq!((yj >> (8 * kk)) & 0xff, (xk >> (8 * col)) & 0xff, "xor {xor} j {j} kk {kk}");
                }
            }
        }
    }

    #[test]
    fn copy_units_cover_each_operand_tile_once() {
        for width in [64u32, 128] {
            let mut seen = std::vec![false; (width / 8 * 8) as usize];
            for u in 0..width {
                let (m8, k8) = copy_unit(u, width);
                assert!(m8 < width / 8 && k8 < 8, "width {width} u {u}");
                let i = (k8 * (width / 8) + m8) as usize;
                assert!(!seen[i], "width {width}: unit ({m8}, {k8}) twice");
                seen[i] = true;
            }
            // Every LDS byte of the operand region is written exactly once per half.
            let mut bytes = std::vec![0u8; (width * STAGE_K) as usize];
            for u in 0..width {
                let (m8, k8) = copy_unit(u, width);
                for j in 0..8 {
                    let off = unit_lds_offset(m8, k8, j) as usize;
                    for b in &mut bytes[off..off + 8] {
                        *b += 1;
                    }
                    // Logical position: row 8·m8 + (j ⊕ xor), K bytes 8·k8 ..: chunk k8 / 2.
                    assert_eq!(off & !15, kg_lds_swizzle(8 * m8 + (j ^ unit_xor(m8)), k8 >> 1) as usize);
                }
            }
            assert!(bytes.iter().all(|&b| b == 1), "width {width}");
        }
    }

    /// Bank (0..32) of every dword a `len`-byte access at `addr` touches.
    fn banks(addr: u32, len: u32) -> Vec<u32> {
        (0..len / 4).map(|i| (addr / 4 + i) % 32).collect()
    }

    #[test]
    fn kgrouped_lds_is_bank_conflict_free() {
        // Swizzle permutes the chunks of each row and is invariant under +64 rows (the B region
        // starts at row 64 or 128); fragment offsets as the kernels compute them.
        for row in 0..256 {
            let mut offs: Vec<u32> = (0..4).map(|c| kg_lds_swizzle(row, c)).collect();
            offs.sort();
            assert_eq!(offs, [row * 64, row * 64 + 16, row * 64 + 32, row * 64 + 48]);
            for c in 0..4 {
                assert_eq!(kg_lds_swizzle(row + 64, c), kg_lds_swizzle(row, c) + 64 * STAGE_K);
                assert_eq!(frag_lds_offset(row / 16, frag_lane_parts(row % 16, c)), kg_lds_swizzle(row, c));
            }
        }
        // ds_read_b128 lane groups (as the dense kernels' test).
        let groups: [[u32; 8]; 4] =
            [[0, 1, 2, 3, 20, 21, 22, 23], [4, 5, 6, 7, 16, 17, 18, 19], [8, 9, 10, 11, 28, 29, 30, 31], [12, 13, 14, 15, 24, 25, 26, 27]];
        for frag_row0 in (0..256).step_by(16) {
            for half in [0, 32] {
                for g in &groups {
                    let mut used = [false; 32];
                    for &l in g {
                        let lane = l + half;
                        for b in banks(kg_lds_swizzle(frag_row0 + (lane & 15), lane >> 4), 16) {
                            assert!(!used[b as usize], "read conflict: row0 {frag_row0} lane {lane} bank {b}");
                            used[b as usize] = true;
                        }
                    }
                }
            }
        }
        // ds_write_b64 phases of 8 consecutive lanes, every output j, both widths.
        for width in [64u32, 128] {
            for j in 0..8 {
                for phase in 0..width / 8 {
                    let mut used = [false; 32];
                    for u in phase * 8..phase * 8 + 8 {
                        let (m8, k8) = copy_unit(u, width);
                        for b in banks(unit_lds_offset(m8, k8, j), 8) {
                            assert!(!used[b as usize], "write conflict: width {width} j {j} u {u} bank {b}");
                            used[b as usize] = true;
                        }
                    }
                }
            }
        }
    }
}
