//! The 128-row pipelined bs kernel (issue 12 part 2): `fp8_gemm_nt_bs_pipe_bm128_bn128`, a
//! `128 × 128` tile of the pre-shuffled-B ("bs") dense GEMM ([`crate::mainloop_bs`]) on the
//! pipelined loop's structure, one workgroup per CU, for large M (modelled faster than the
//! 48-row two-per-CU kernel where the 128-row tiles fill whole rounds; table below).
//!
//! # What it is
//! The same operands, LDS layout, MFMA chains and promotion arithmetic as the other bs kernels
//! (1 × 4 waves over `BM × 128`, wave `w` owns columns `32·w ..` and all 128 rows = 8 A
//! fragments × 2 B fragments, `8·FM = 64` MFMAs per 128-K block, transposed
//! `v_mfma_f32_16x16x32_fp8_fp8` mapping, K permutation and order of [`crate::dense`]), so the
//! result is the logical-layout kernels' bit for bit; B straight from global memory into the
//! MFMA operands one block ahead, A global → registers → LDS (two stages, one barrier per
//! block), its fragments read one block ahead, SFA through LDS per 4-block window, as in
//! `mainloop_bs::imp::tile_gemm_bs_pipe`. What differs is the order of the instruction stream
//! and three code-generation fixes that the 128-row tile needs to fit and to issue:
//!
//! * **Slots**: each output pair `fm` (8 MFMAs, `t = 0..8`) carries, after its MFMAs
//!   `t = 0..3`, the next block's A fragment reads (pairs 0–3, in MFMA order, so they land
//!   long before the next barrier, which waits for every LDS operation) and at most one more
//!   memory operation (B(i + 1) at pair 0, A(i + 3) at pair 4, A(i + 2)'s LDS writes at pair
//!   5, the next window's scales at pair 6 of the window's second block); after its MFMAs
//!   `t = 4..7` one half (two elements, one `v_pk_fma_f32`) of the previous pair's promotion
//!   each (pair 0 promotes the previous block's last pair). With one wave per SIMD a wave
//!   issues one instruction per 4-cycle slot and an FP8 16x16x32 MFMA holds the matrix pipe
//!   16 cycles, so up to three other instructions per MFMA are free; more stall the pipe.
//! * **Splats written out** (`F32x2([s, s])`): `F32x4::fma_splat`'s repeat expression `[s; 4]`
//!   becomes a 4-trip store loop in rustc's IR, and LLVM's IndVarSimplify sinks everything
//!   before such a loop into its exit block — every promotion of a block ended up in one
//!   lump of ~100 instructions after the block's last promotion point (the same happens in
//!   the pipelined kernels of [`crate::mainloop_bs`] until they took the written-out splat
//!   too, "Filling the MFMA shadows" there).
//! * **The next window's SFA write in the last pair's free slots** (after its MFMA `t = 1`
//!   of the window's last block), not after the block, where it lengthened the loop's
//!   latch: MI325X 4096×2048×7168 128.31 → 124.41 µs modelled (`--scope xcd`).
//! * **A loop without exits**: whole 4-block windows in a loop, the last 0–3 blocks after it.
//!   With an exit after each unrolled step (as in `tile_gemm_bs_pipe`) the accumulators'
//!   registers differed between the steps and LLVM copied half of them through AGPRs in every
//!   block (32 `v_accvgpr_write` per block) and back at the loop's back-edge; the kernel
//!   needed 502–512 registers. Without: 340 (84 AGPRs), no copies.
//!
//! The kernel is compiled with AccVGPRs allowed (`agprs` left at its default): LLVM then
//! keeps the MFMA partial sums and part of the A fragments in AGPRs (the partials are read
//! back with `v_accvgpr_read_b32` for the promotion, 64 per block) and the accumulators in
//! VGPRs. Forbidden (as for the 48–96-row kernels), the 128-row tile spilled (below).
//!
//! # Measured (code objects: LLVM 22.1.4, `fp8gemm info`; times: the timing model, *modelled*,
//! `FP8GEMM_PRESHUFFLED=1 FP8GEMM_FORCE_TILE=128x128 fp8gemm profile --scope xcd`)
//!
//! | variant (128-row tile) | registers (AGPR) | spills | 4096×2048×7168 MI325X µs |
//! |---|---|---|---|
//! | `tile_gemm_bs_pipe::<8, 2>`, AGPRs forbidden (before this work) | 512 | 4–24 | 174 |
//! | `tile_gemm_bs_pipe::<8, 1>`, AGPRs allowed | 496 (240) | 0 | 171.50 |
//! | `tile_gemm_bs_pipe::<8, 2>`, AGPRs allowed | 512 (256) | 0 | 172.67 |
//! | `<8, 1>`, AGPRs allowed, `llc -amdgpu-mfma-vgpr-form` (a global flag) | 250 VGPR + 256 AGPR as spill space (195 `v_accvgpr_read`) | 0 | not run |
//! | + splats written out (promotion no longer lumped) | 488 (232) | 0 | 168.45 |
//! | + the slot order above, halves of the promotion | 508 (252) | 0 | 158.75 |
//! | same, B two blocks ahead | 512 (256) | 9 (40 B scratch) | 153.34 |
//! | **+ loop without exits (shipped, B one block ahead)** | **340 (84)** | **0** | **138.77** |
//! | same, B two blocks ahead | 372 (116) | 0 | 138.60 |
//! | *48-row pipelined kernel, two per CU (main's choice)* | *250* | *0* | *146.42* |
//! | *AMD's `BpreShuffle_128x128` on the same model (measured 130.20)* | *512* | | *137.32* |
//!
//! The shipped kernel against the host's choice before it (modelled µs; *AMD's asm kernels,
//! measured on MI325X*, `shared/peers/measured_mi325x.csv`):
//!
//! | shape | before (main's choice) | 128-row pipelined | *AMD, measured* |
//! |---|---|---|---|
//! | MI325X 1024×2048×7168 (128 tiles, alone) | **40.47** (64 rows) | 70.08 | *39.54 (64)* |
//! | MI325X 1856×2048×7168 | 74.4 (stream-K 32 rows) | **70.16** | *68.32 (128)* |
//! | MI325X 2048×2048×7168 | 80.45 (64 rows) | **70.09** | *70.19 (128)* |
//! | MI325X 4096×2048×7168 (2 rounds) | 146.42 (48 rows) | **138.77** | *130.20 (128)* |
//! | MI325X 14336×2048×7168 (6 rounds) | 454.42 (48 rows) | **411.48** | *391.91 (128)* |
//! | MI325X 16384×2048×7168 (7 rounds) | 511.3 (48 rows) | **478.99** | *462.34 (128)* |
//! | MI325X 32768×2048×7168 (14 rounds) | 1020.6 (48 rows) | **952.57** | *909.41 (128)* |
//! | MI325X 6144×768×7168 (288 tiles, alone) | not run | **70.84** | *74.40 (128)* |
//! | MI300X 4096×7168×2048 (16 blocks) | 173.28 (48 rows) | **162.33** | *AITER CK (`shared/reference/deepgemm.md`): 833 TFLOPS = 144.4* |
//! | MI300X 4096×2112×7168 | 146.21 (48 rows; stream-K 32 rows 162.1 before that) | **138.81** | |
//!
//! The host takes it (`fp8gemm::config::bs_pipe_rule`) where its rounds (1.22 µs per block
//! and round, fitted on the runs above) beat the other pipelined tiles' and the base choice's
//! estimates; a forced `128x128` tile runs it unsplit (`config::bs_kernel`). Not done: the
//! m-grouped contiguous / masked twins (`grouped_pipe`), split-K and stream-K on this loop.
//!
//! Block time, the issue budget: 64 MFMAs × 16 cycles = 1024 cycles per block and wave; the
//! shipped loop issues ≈ 250 instructions per block (64 MFMAs, 64 `v_accvgpr_read_b32`, 32
//! `v_pk_fma_f32`/`v_fma_f32`, 16 `ds_read_b128`, 8 + 3 buffer loads, 4 `ds_write_b128`, 4
//! `ds_read2st64_b32`, waits and scale products). AMD's kernel (its disassembly; structure
//! only) keeps the MFMA A/B operands in AGPRs and the partial sums in VGPRs (no
//! `v_accvgpr_read` at all), 4 consecutive MFMAs per partial, 64 KiB of LDS and A through
//! direct-to-LDS loads; LLVM offers no per-kernel way to ask for that split (rustc's `asm!`
//! is unsupported on this target: error E0472 with this toolchain).

use crate::amdgpu_kernel;
use crate::args::DenseGemmArgs;

#[cfg(target_arch = "amdgpu")]
pub(crate) mod imp {
    use crate::args::DenseGemmArgs;
    use crate::dense::imp::{Epilogue, TileJob, dense_job};
    use crate::intrinsics::*;
    use crate::mainloop_bs::imp::{ARegs, BSets, FN, ROW, SFA_REGION, pipe_sfa_slots, pipe_stage_bytes, sfa_lane, sfa_slot_byte};
    use crate::tile::{self, SCALE_BLOCK_K, SCALE_BLOCK_N, SHUFFLED_UNIT, block_swizzle, frag_chunk};

    macro_rules! unroll {
        ($i:ident < $n:expr => $body:block) => {{
            const { assert!($n <= 8) };
            unroll!(@ $i, $n, $body, 0 1 2 3 4 5 6 7)
        }};
        (@ $i:ident, $n:expr, $body:block, $($k:literal)*) => {
            { $( { let $i: usize = $k; if $i < $n $body } )* }
        };
    }

    /// Two f32 lanes: half of an accumulator (one `v_pk_fma_f32`).
    #[repr(simd)]
    #[derive(Clone, Copy)]
    pub(crate) struct F32x2([f32; 2]);

    /// The two halves (elements 0, 1 and 2, 3) of `v`.
    #[inline(always)]
    fn halves(v: F32x4) -> [F32x2; 2] {
        // SAFETY: 16 bytes of f32 lanes reinterpreted as two 8-byte vectors of f32 lanes.
        unsafe { core::mem::transmute::<F32x4, [F32x2; 2]>(v) }
    }

    /// The accumulator of two halves (inverse of [`halves`]).
    #[inline(always)]
    fn join(h: [F32x2; 2]) -> F32x4 {
        // SAFETY: as in `halves`.
        unsafe { core::mem::transmute::<[F32x2; 2], F32x4>(h) }
    }

    /// `x · s + c` element-wise with one rounding per element (`v_pk_fma_f32`): per element
    /// the same operation as `F32x4::fma_splat`. The splat is written out (`[s, s]`, not
    /// `[s; 2]`: module docs).
    #[inline(always)]
    fn fma2(x: F32x2, s: f32, c: F32x2) -> F32x2 {
        // SAFETY: simd_fma on three values of the same repr(simd) f32 vector type.
        unsafe { core::intrinsics::simd::simd_fma(x, F32x2([s, s]), c) }
    }

    /// The 128-row pipelined bs loop (module docs): one `16·FM × 128` tile (`FM` = 8) over the
    /// job's K blocks, B loaded `BA` blocks ahead, then `epi`; `keep_row` as for the dense
    /// `tile_gemm`. Same result bit for bit as `mainloop_bs::imp::tile_gemm_bs`.
    #[inline(always)]
    pub(crate) fn tile_gemm_bs_pipe128<const FM: usize, const BA: u32, E: Epilogue>(job: &TileJob, keep_row: impl Fn(u32) -> bool, epi: &E) {
        const { assert!(FM == 8) };
        const { assert!(BA == 1 || BA == 2) };
        let stage = pipe_stage_bytes(FM as u32);
        let (n, m0, n0, lda, ldsf, nkb) = (job.n, job.m0, job.n0, job.lda, job.ldsf, job.nkb);
        let (rs_a, rs_b, rs_sfa, rs_sfb) = (job.rs_a, job.rs_b, job.rs_sfa, job.rs_sfb);
        let (k0, sf0) = (job.kb0 * SCALE_BLOCK_K, job.kb0 * 4);

        let tid = workitem_id_x();
        let lane = tid & 63;
        let wave = readfirstlane_u32(tid >> 6);

        // A copy: work-item t moves chunk (t & 7) of row (t >> 3) + 32·pass, ⌈FM/2⌉ passes (odd
        // FM: the last pass's upper 16 rows are other rows of A, or 0, written to the stage's
        // padding rows, never read).
        let (copy_row, copy_chunk) = (tid >> 3, tid & 7);
        let mut a_voff = [0u32; FM];
        unroll!(p < FM.div_ceil(2) => {
            a_voff[p] = (m0 + 32 * p as u32 + copy_row) * lda + k0 + 16 * copy_chunk;
        });
        let copy_lds = block_swizzle(copy_row, copy_chunk);
        let frag_lds = [block_swizzle(lane & 15, frag_chunk(lane >> 4, 0)), block_swizzle(lane & 15, frag_chunk(lane >> 4, 1))];

        let mut b_voff = [0u32; FN];
        unroll!(f < FN => {
            b_voff[f] = tile::shuffled_b_offset(n0 / 16 + 2 * wave + f as u32, job.kb0, ldsf, 0, lane);
        });

        let row_of = |fm: usize| m0 + 16 * fm as u32 + (lane & 15);
        let grp = lane >> 4;
        let mut keep = [true; FM];
        unroll!(fm < FM => {
            keep[fm] = keep_row(row_of(fm));
        });
        // SFA: this wave loads the windows of fragments 4q + wave (q < ⌈FM/4⌉) — no branch on
        // the wave, so the wait before the LDS write is a counted `vmcnt(N)`; slots 4q + wave
        // ≥ FM load other rows' scales (or 0) into LDS slots nobody reads. Lanes as `sfa_lane`.
        let (sfa_row, sfa_blk) = sfa_lane(lane);
        let mut sfa_voff = [0u32; FM];
        unroll!(q < FM.div_ceil(4) => {
            sfa_voff[q] = (m0 + 16 * (4 * q as u32 + wave) + sfa_row) * ldsf * 4 + sf0 + 4 * sfa_blk;
        });
        let sfb_voff = (n0 / SCALE_BLOCK_N) * ldsf * 4 + sf0 + 4 * grp;
        let sfa_region = |w: u32| 2 * stage + w * SFA_REGION * pipe_sfa_slots(FM as u32);
        let sf_read = 4 * (lane & 15);

        let load_a = #[inline(always)]
        |i: u32, p: usize| -> U32x4 {
            // SAFETY: as in tile_gemm_bs: rs_a covers the problem's A; the whole offset is in
            // voffset (range-checked, 0 past the end); 16-byte aligned.
            unsafe { buffer_load_b128(rs_a, a_voff[p] + i * SCALE_BLOCK_K, 0) }
        };
        let load_b = #[inline(always)]
        |i: u32, f: usize, r: usize| -> U32x4 {
            // SAFETY: as in tile_gemm_bs: rs_b covers the pre-shuffled B; the whole offset is
            // in voffset (0 past the end); 16-byte aligned.
            unsafe { buffer_load_b128(rs_b, b_voff[f] + i * SHUFFLED_UNIT + 1024 * r as u32, 0) }
        };
        let write_a = #[inline(always)]
        |st: u32, p: usize, v: U32x4| {
            // SAFETY: inside stage st (< 2·stage ≤ the launch's sharedMemBytes), 16-byte
            // aligned; every wave has passed the barrier after its last read of this stage.
            unsafe { lds_write_b128(st * stage + copy_lds + 32 * p as u32 * ROW, v) };
        };
        let read_a = #[inline(always)]
        |st: u32, r: usize, fm: usize| -> [u64; 2] {
            // SAFETY: inside stage st, written and published by a barrier before.
            unsafe { lds_read_b128(st * stage + frag_lds[r] + fm as u32 * 16 * ROW) }.to_u64x2()
        };
        let load_sfa = #[inline(always)]
        |i: u32, q: usize| -> f32 {
            // SAFETY: rs_sfa covers the problem's SFA; the whole offset is in voffset, so
            // offsets past its end read 0 (never-used lanes may read other rows' scales).
            unsafe { buffer_load_f32(rs_sfa, sfa_voff[q] + i * 4, 0) }
        };
        let load_sfb = #[inline(always)]
        |i: u32| -> f32 {
            // SAFETY: rs_sfb covers the problem's SFB; offsets past its end read 0.
            unsafe { buffer_load_f32(rs_sfb, sfb_voff + i * 4, 0) }
        };
        let write_sfa = #[inline(always)]
        |w: u32, q: usize, v: f32| {
            // SAFETY: inside region w & 1 (< lds_bytes), 4-byte aligned; every wave passed the
            // barrier after its last read of this region (one window ago).
            unsafe { lds_write_b32(sfa_region(w) + SFA_REGION * (4 * q as u32 + wave) + sfa_slot_byte(lane), v.to_bits()) };
        };

        // SAFETY: all-zero bits are a valid [[[F32x2; 2]; FN]; FM] (+0.0 in every lane).
        let mut acc: [[[F32x2; 2]; FN]; FM] = unsafe { core::mem::zeroed() };
        let mut sfa_ld = [0f32; FM];
        let mut sfb = 0f32;
        let mut window = 0u32;

        let zb = || [[U32x4([0; 4]); 2]; FN];
        let mut b: BSets = [zb(), zb(), zb(), zb()];
        let mut ga = [[U32x4([0; 4]); FM]; 2];
        let mut a: [ARegs<FM>; 2] = [[[[0; 2]; FM]; 2]; 2];
        // The last output pair's partial sums and scale, promoted during the next block.
        let mut pend = [F32x4::zero(); FN];
        let mut pend_s = 0f32;

        // Prologue: window 0's scales; A(0), A(1) for stages 0, 1; B(0 .. BA); A(2) into
        // registers — all loads issued first, then the LDS writes (each waits only for its own
        // load: one memory round trip instead of one per write); then A(0)'s fragments. The
        // fence after A(0), A(1) keeps LLVM from moving their second copy pass behind B's loads:
        // the LDS writes then wait for A alone and the first MFMA for B(0)'s first load, not
        // for the whole burst (at one tile per CU the first blocks' loads queue on the XCD's
        // fabric link: MI300X 128×7168×2048, 48 rows, 12.34 → 11.90 µs modelled).
        unroll!(q < FM.div_ceil(4) => {
            sfa_ld[q] = load_sfa(0, q);
        });
        let mut sfb_next = load_sfb(0);
        let mut a01 = [[U32x4([0; 4]); FM]; 2];
        unroll!(st < 2 => {
            unroll!(p < FM.div_ceil(2) => {
                a01[st][p] = load_a(st as u32, p);
            });
        });
        sched_fence();
        unroll!(f < FN => {
            unroll!(r < 2 => {
                b[0][f][r] = load_b(0, f, r);
                if BA == 2 {
                    b[1][f][r] = load_b(1, f, r);
                }
            });
        });
        unroll!(p < FM.div_ceil(2) => {
            ga[1][p] = load_a(2, p);
        });
        sched_fence();
        unroll!(q < FM.div_ceil(4) => {
            write_sfa(0, q, sfa_ld[q]);
        });
        unroll!(st < 2 => {
            unroll!(p < FM.div_ceil(2) => {
                write_a(st as u32, p, a01[st][p]);
            });
        });
        lds_barrier();
        unroll!(r < 2 => {
            unroll!(fm < FM => {
                a[0][r][fm] = read_a(0, r, fm);
            });
        });

        // Block i (j = i mod 4, static in each unrolled copy): barrier; SFA of block i; then
        // the 8·FM MFMAs (pair fm = outputs (fm, 0..2), order (r, s, f) inside the pair), the
        // extra instructions after MFMA g: A(i + 1) fragment reads after the even g, global
        // loads (A(i + 3), B(i + BA), at j = 1 the next window's scales) after the odd g,
        // promotion of the previous block's last pair after g = 4 and of pair fm − 1 after
        // g = 8·fm + 4, A(i + 2)'s LDS writes after the odd g from 8·FM / 2 + 1; at j = 3 the
        // next window's SFA write.
        macro_rules! step {
            ($i:expr, $j:expr) => {{
                let (i, j): (u32, u32) = ($i, $j);
                const J: usize = $j;
                lds_barrier();
                if j == 0 {
                    sfb = sfb_next;
                }
                // SAFETY: all-zero bits are a valid [f32; FM] (a memset, not a repeat loop).
                let mut s_a: [f32; FM] = unsafe { core::mem::zeroed() };
                unroll!(fm < FM => {
                    // SAFETY: inside this window's region, written before a barrier.
                    s_a[fm] = f32::from_bits(unsafe { lds_read_b32(sfa_region(window & 1) + SFA_REGION * fm as u32 + sf_read + 64 * j) });
                });
                let s_b = f32::from_bits(readlane_dyn(sfb.to_bits(), 16 * j)) * tile::PROMOTION_DOWN;
                sched_fence();
                // SAFETY: all-zero bits are a valid [[F32x4; FN]; FM] (+0.0 in every lane).
                let mut part: [[F32x4; FN]; FM] = unsafe { core::mem::zeroed() };
                // The block's memory operations, two per output pair (after its MFMAs t = 2, 3):
                // B(i + BA), A(i + 3) from global memory, A(i + 2)'s LDS writes, at j = 1 the
                // next window's scales.
                let n_a = FM.div_ceil(2);
                unroll!(fm < FM => {
                    unroll!(t < 8 => {
                        let (r, s, f) = (t / 4, (t / 2) % 2, t % 2);
                        if !K128_MFMA {
                            let c = if r == 0 && s == 0 { F32x4::zero() } else { part[fm][f] };
                            part[fm][f] = mfma_f32_16x16x32_fp8_fp8(b[J][f][r].to_u64x2()[s], a[J & 1][r][fm][s], c);
                        } else if r == 1 && s == 1 {
                            // The CDNA4 MFMA: the block's four chunks at the last one's slot.
                            part[fm][f] = mfma_k128_frags(b[J][f], [a[J & 1][0][fm], a[J & 1][1][fm]]);
                        }
                        if t < 4 {
                            if fm < 4 {
                                // The next block's fragments, in MFMA order (fragment q / 2,
                                // read q % 2), early so that they land long before the next
                                // barrier (which waits for every LDS operation).
                                let q = 4 * fm + t;
                                a[(J + 1) & 1][q % 2][q / 2] = read_a((j + 1) & 1, q % 2, q / 2);
                            }
                            // Memory operations: B(i + BA) at pair 0, A(i + 3) at pair 4, its
                            // LDS writes at pair 5, the next window's scales at pair 6 (j = 1).
                            let x = match fm {
                                0 => t,
                                4 => 2 * FN + t,
                                5 => 2 * FN + n_a + t,
                                6 => 2 * FN + 2 * n_a + t,
                                _ => usize::MAX,
                            };
                            if x < 2 * FN {
                                b[(J + BA as usize) % 4][x / 2][x % 2] = load_b(i + BA, x / 2, x % 2);
                            } else if x < 2 * FN + n_a {
                                ga[J & 1][x - 2 * FN] = load_a(i + 3, x - 2 * FN);
                            } else if x < 2 * FN + 2 * n_a {
                                let p = x - 2 * FN - n_a;
                                write_a(j & 1, p, ga[(J + 1) & 1][p]);
                            } else if J == 1 && x < 2 * FN + 2 * n_a + FM.div_ceil(4) {
                                let q = x - 2 * FN - 2 * n_a;
                                sfa_ld[q] = load_sfa(i + 3, q);
                            } else if J == 1 && x == 2 * FN + 2 * n_a + FM.div_ceil(4) {
                                sfb_next = load_sfb(i + 3);
                            }
                            if j == 3 && fm == FM - 1 && t == 1 {
                                // The next window's SFA into LDS in the last pair's free slots
                                // (after the block it lengthened the loop's latch): its region
                                // was last read in the previous window, before this block's
                                // barrier.
                                unroll!(q < FM.div_ceil(4) => {
                                    write_sfa((window + 1) & 1, q, sfa_ld[q]);
                                });
                            }
                        } else {
                            // Half (two elements) of one output of the previous pair (the
                            // previous block's last pair during pair 0).
                            let (ff, h) = ((t - 4) / 2, (t - 4) % 2);
                            if fm == 0 {
                                acc[FM - 1][ff][h] = fma2(halves(pend[ff])[h], pend_s, acc[FM - 1][ff][h]);
                            } else {
                                let sc = s_a[fm - 1] * s_b;
                                acc[fm - 1][ff][h] = fma2(halves(part[fm - 1][ff])[h], sc, acc[fm - 1][ff][h]);
                            }
                        }
                        sched_fence();
                    });
                });
                pend = part[FM - 1];
                pend_s = s_a[FM - 1] * s_b;
                if j == 3 {
                    window += 1;
                }
            }};
        }

        // Whole windows in a loop without exits, then the last 0–3 blocks: one loop back-edge
        // is the only place the accumulators cross, so their registers stay put (with an exit
        // after every step LLVM copied half of them through AGPRs in every block).
        let mut i = 0;
        while i + 4 <= nkb {
            step!(i, 0);
            step!(i + 1, 1);
            step!(i + 2, 2);
            step!(i + 3, 3);
            i += 4;
        }
        if i < nkb {
            step!(i, 0);
            if i + 1 < nkb {
                step!(i + 1, 1);
                if i + 2 < nkb {
                    step!(i + 2, 2);
                }
            }
        }
        unroll!(ff < FN => {
            unroll!(h < 2 => {
                acc[FM - 1][ff][h] = fma2(halves(pend[ff])[h], pend_s, acc[FM - 1][ff][h]);
            });
        });

        epi.begin();
        unroll!(fm < FM => {
            let row = row_of(fm);
            unroll!(f < FN => {
                let col = n0 + 32 * wave + 16 * f as u32 + 4 * (lane >> 4);
                epi.store(row, col, col < n && keep[fm], join(acc[fm][f]));
            });
        });
        epi.finish(keep_row);
    }

    /// The dense kernel on [`tile_gemm_bs_pipe128`]: the dense grid and tile order
    /// (`dense_job`) over the pre-shuffled B.
    #[inline(always)]
    pub fn gemm_bs_pipe128<const BA: u32>(args: DenseGemmArgs) {
        let Some((mut job, epi)) = dense_job::<8, 2, true>(&args) else { return };
        job.rs_b = BufferResource::new(args.b.addr(), tile::shuffled_b_bytes(args.n as u64, args.k as u64) as u32);
        tile_gemm_bs_pipe128::<8, BA, _>(&job, |_| true, &epi);
    }
}

/// bs (pre-shuffled B) 128 × 128 tile on the 128-row pipelined loop (module docs), one
/// workgroup per CU: large M.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn fp8_gemm_nt_bs_pipe_bm128_bn128(args: DenseGemmArgs) {
    imp::gemm_bs_pipe128::<1>(args)
}
