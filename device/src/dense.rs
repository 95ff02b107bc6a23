//! Dense FP8 GEMM, "NT" (A `m × k` and B `n × k`, both K-contiguous) with DeepGEMM's block
//! scales, BF16 output: `D[i,j] = Σ_kb SFA[i,kb]·SFB[j/128,kb]·Σ_{k∈kb} A[i,k]·B[j,k]`
//! (arguments: [`DenseGemmArgs`]; tile math and the LDS layout: [`crate::tile`]).
//!
//! # Structure of one workgroup (256 work-items = 4 waves, 2 × 2 waves over a `BM × BN` tile)
//!
//! * **MFMA**: `v_mfma_f32_16x16x32_fp8_fp8`, computed *transposed*: the MFMA's row operand is a
//!   16-row fragment of B and its column operand a 16-row fragment of A, so the 16×16 result
//!   `Dᵀ` has, in lane `l`, register `r`: column `n = 4·(l >> 4) + r`, row `m = l & 15`. Each
//!   lane then owns one row of A per fragment — it needs one activation scale per A fragment
//!   (instead of four) and it stores 4 consecutive bf16 of a row of D (one `buffer_store_dwordx2`).
//!   16x16x32 rather than 32x32x16: both feed the matrix pipe the same FLOPs per cycle, read the
//!   same operand bytes per FLOP at these wave tiles, and need the same promotion VALU work per
//!   output; but a 32x32x16 does twice the work per instruction, so per 128-K block a 32×32 region
//!   is 8 MFMAs against 8 promotion `v_pk_fma_f32`, where four 16×16 fragments are 16 MFMAs
//!   against the same 8. The 16x16 form keeps the MFMA share of issued instructions higher (2:1
//!   instead of 1:1) and its 4-pass latency keeps the dependent accumulation chains short.
//! * **Register reuse**: a wave owns `FM × FN` fragments (16×16 each); per 64-K half it reads
//!   `FM` A fragments and `FN` B fragments once (`ds_read_b128`, two k-steps each) and issues
//!   `2·FM·FN` MFMAs: each A fragment is used against all `FN` B fragments and vice versa.
//! * **Pipeline**: K advances in halves of a 128-K scale block. The global loads of the next half
//!   (`buffer_load_dwordx4`, raw buffer resources whose size bounds each tensor, so rows past `m`
//!   or `n` read as 0) are issued before the current half's MFMAs and land in registers; after the
//!   MFMAs they are written to the other LDS stage (double buffering, one barrier per half).
//! * **Promotion**: each 128-K block accumulates into zeroed partial accumulators (the first MFMA
//!   of a block takes the inline constant 0 as C); after its second half
//!   `acc += partial · (SFA[row,kb] · (SFB[n0/128,kb] · 2^-60))` with `v_pk_fma_f32`, and the
//!   epilogue multiplies by `2^60` ([`crate::tile::PROMOTION_EXP`]): exact power-of-two scaling
//!   (results bit-identical to the unscaled form wherever that stays finite and normal) that
//!   lets `SFA · SFB` reach `2^188` instead of overflowing at `2^128` — inputs of ±4.5e21 on both
//!   sides used to make it `inf` and return inf/NaN where the exact result is representable.
//!   The supported scale range is [`crate::tile::MIN_SCALE`] (the host rejects other host-side
//!   scales). Cost: one `v_mul_f32` per block (hidden in an `s_nop` slot on gfx942 bm64_bn64)
//!   and one multiply per output value. SFB is wave-uniform
//!   (a tile never straddles a 128-column scale block: `BN ≤ 128` divides 128): one
//!   `buffer_load_dword` of the same address in every lane; SFA is one `buffer_load_dword` per A
//!   fragment per block. Both are issued at the start of the block and consumed at its end.
//! * **Epilogue**: round to BF16 (nearest even), `buffer_store_dwordx2`; rows past `m` fall outside
//!   D's resource and are dropped by the hardware, columns past `n` are parked out of range.
//!
//! Supported shapes: any `m ≥ 1`, `n % 4 == 0`, `k % 128 == 0` (see [`DenseGemmArgs`]).
//!
//! # Split-K (`fp8_gemm_nt_splitk_bm*_bn*`, arguments [`DenseSplitKArgs`])
//!
//! For problems with too few tiles to fill the device (decode) the K blocks of every tile are
//! dealt to `splits` workgroups ([`crate::tile::split_range`]: contiguous, as even as
//! possible). The grid is `tiles · splits`, XCD-remapped like the dense grid with the split
//! index fastest, so a tile's splits are neighbouring logical ids on one XCD. Each workgroup:
//! 1. runs the shared main loop over its blocks (`TileJob::kb0`, `nkb`) and stores its FP32
//!    accumulators (promotion domain) to its own partial slot of the workspace, `BM · BN` f32
//!    in fragment order (`frag_offset`: each store instruction of a wave writes 1 KiB
//!    contiguous), with **device-scope** stores (`sc1`);
//! 2. **release**: `s_waitcnt vmcnt(0)` in every wave (its stores have completed at device
//!    scope) and `s_barrier`; then work-item 0 adds 1 to the tile's arrival counter
//!    (`flat_atomic_add … sc0 sc1`, relaxed) and broadcasts the old value through LDS;
//! 3. every workgroup but the last to arrive (`old = splits − 1`) ends here. **acquire**: the
//!    last one reads all `splits` partial slots with device-scope loads (`sc1`; issued after
//!    the counter's value is known, so they cannot see older data), sums them in split order
//!    0, 1, …, splits − 1 (deterministic whatever the arrival order), multiplies by `2^60`,
//!    rounds to bf16 and stores D (`ldd`, tails as the non-split epilogue), then sets the
//!    counter back to 0 so the next launch (or graph replay) finds it armed.
//!
//! Memory ordering on gfx942 (LLVM AMDGPUUsage, "Memory Model GFX942"): the XCDs' L2 caches are
//! not coherent with each other for ordinary accesses; a monotonic agent-scope atomic store or
//! load is a plain store / load with `sc1`, and the release of a set of stores to agent scope is
//! "`buffer_wbl2 sc1`; `s_waitcnt vmcnt(0)`" before the releasing atomic. Every store that
//! must be visible here is itself an `sc1` store, which needs no L2 write-back, so the release
//! is the `s_waitcnt vmcnt(0)` (per wave) + `s_barrier` (all waves) before the atomic, and the
//! acquire is the `sc1` loads after it. No `buffer_wbl2` / `buffer_inv` is emitted (the
//! emulator, whose memory is coherent, does not decode them). The emulator executes the
//! counter atomically (striped host locks) with sequentially consistent memory, so it checks
//! the protocol's logic (every tile reduced exactly once, counters re-armed), not the cache
//! behaviour, which is argued here from the ISA documentation; the timing model treats the
//! atomic as a store and ignores the scope bits.
//!
//! Splitting changes the FP32 summation order (per-split partial sums, then their sum), so a
//! split result is not bit-identical to the unsplit one; it is within the same accuracy.
//!
//! Timing model caveats: the model runs a batch of workgroups functionally in parallel, so
//! which workgroup of a tile reduces (and so the modelled time, by well under 3 %) may vary
//! between runs; `--scope xcd` simulates only XCD 0's workgroups, so tiles whose splits
//! straddle an XCD boundary are never reduced there — profile split-K launches with
//! `--scope full` (64×2112×7168: 23.9 µs one-XCD vs 27.5 µs full).
//!
//! The main loop is one generic function, `imp::tile_gemm`, over an `imp::TileJob` (buffer
//! resources of one problem's operands, their row strides, the tile origin and the range of
//! 128-K blocks to run), a per-row store predicate and an `imp::Epilogue` that consumes the
//! accumulators (`imp::Bf16Store`: today's bf16 store); the dense kernels and the m-grouped
//! kernels of [`crate::grouped`] only differ in how they build the job and the epilogue.
//!
//! # Measured on the code objects (LLVM 22.1.4; `tests/dense_kernel.rs` re-checks them)
//!
//! | kernel | VGPR | AGPR | SGPR | spills | scratch | LDS (dynamic) | waves/SIMD (regs) | WGs/CU (LDS) |
//! |---|---|---|---|---|---|---|---|---|
//! | `fp8_gemm_nt_bm64_bn64`   |  76 | 0 | 40 | 0 | 0 | 16 KiB | 6 | 4 |
//! | `fp8_gemm_nt_bm64_bn128`  | 124 | 0 | 42 | 0 | 0 | 24 KiB | 4 | 2 |
//! | `fp8_gemm_nt_bm128_bn128` | 222 | 0 | 42 | 0 | 0 | 32 KiB | 2 | 2 |
//!
//! | `fp8_gemm_nt_splitk_bm64_bn64`   |  76 | 0 | 50 | 0 | 0 | 16 KiB | 6 | 4 |
//! | `fp8_gemm_nt_splitk_bm64_bn128`  | 134 | 0 | 51 | 0 | 0 | 24 KiB | 3 | 2 |
//! | `fp8_gemm_nt_splitk_bm128_bn128` | 210 | 0 | 50 | 0 | 0 | 32 KiB | 2 | 2 |
//!
//! `agprs = false`: with AccVGPRs allowed LLVM keeps the partial sums in AGPRs and copies them out
//! with `v_accvgpr_read` for every promotion (measured: bm128_bn128 224 VGPR + 92 AGPR = 1
//! wave/SIMD; bm64_bn128 128 + 44; bm64_bn64 76 + 24), so the kernels use arch VGPRs only.
//!
//! Steady-state main loop, one 128-K block per wave (gfx942 objdump, loop head to back edge):
//!
//! | kernel | instructions | MFMA | `v_pk_fma_f32` + `v_mul` (promotion) | `ds_read_b128` | `ds_write_b128` | `buffer_load` x4 / x1 | waitcnt | SALU, SMEM, branch, barrier |
//! |---|---|---|---|---|---|---|---|---|
//! | bm64_bn64   |  72 | 16 (22.2%) |  8 + 3 |  8 | 4 | 4 / 3 | 11 | 15 |
//! | bm64_bn128  | 106 | 32 (30.2%) | 16 + 3 | 12 | 6 | 6 / 3 | 13 | 15 |
//! | bm128_bn128 | 175 | 64 (36.6%) | 32 + 5 | 16 | 8 | 8 / 5 | 19 | 15 (+ 3 VALU address ops) |
//!
//! (Before the `2^-60` promotion scaling: 72, 105, 174; the gfx950 bm64_bn64 loop is 73.)
//!
//! Why the MFMA share cannot reach 60% of *issued instructions* with exact FP32 promotion on
//! gfx942: per 128-K block a 16×16 fragment takes 4 MFMAs (K = 32 each) and its promotion takes 2
//! `v_pk_fma_f32` (4 f32 per lane, 2 per instruction — the widest f32 VALU op), so promotion alone
//! caps the share at 4 / (4 + 2) = 66.7% before a single load, LDS access or barrier is counted
//! (32x32x16 is worse: 8 MFMAs vs 8 `v_pk_fma_f32` per 32×32 block, a 50% cap). By issue
//! *cycles* (an MFMA occupies the matrix pipe for 16 cycles, other instructions issue in 4) the
//! bm128_bn128 loop is 1024 MFMA cycles vs ≈ 450 for the rest, which other waves' MFMAs overlap.

use crate::amdgpu_kernel;
use crate::args::{DenseGemmArgs, DenseSplitKArgs};

#[cfg(target_arch = "amdgpu")]
pub(crate) mod imp {
    use core::num::NonZeroU32;

    use crate::args::{DenseGemmArgs, DenseSplitKArgs};
    use crate::intrinsics::*;
    use crate::tile::{self, lds_swizzle, stage_offset, NUM_XCDS, SCALE_BLOCK_K, SCALE_BLOCK_N, STAGE_K};

    /// Buffer offset that is out of range of every resource (all tensors are smaller than
    /// `tile::MAX_TENSOR_BYTES`): stores there are dropped.
    const PARKED: u32 = tile::MAX_TENSOR_BYTES as u32;

    /// One output tile of one block-scaled GEMM problem over a range of its 128-K scale blocks,
    /// as buffer resources over that problem's operands. Every kernel (dense, m-grouped, split-K)
    /// reduces its work to this: the grouped kernels point the resources at one group's slices and
    /// bound them by that group's valid rows; the split-K kernels give each workgroup of a tile
    /// its own block range `kb0 .. kb0 + nkb`.
    ///
    /// All resources are wave-uniform (built from kernel arguments and workgroup ids). Offsets
    /// inside them are relative to their bases: row `r` of the problem's A is at byte `r·lda` of
    /// `rs_a`, its scales at `r·ldsf·4` of `rs_sfa`, row `j` of B at `j·ldb` of `rs_b`, block
    /// row `j/128` of SFB at `(j/128)·ldsf·4` of `rs_sfb`; K block `kb` of a row starts at byte
    /// `kb·128` of the row (A, B) and at element `kb` of a scale row.
    /// Rows past the end of a resource read as 0, which is how tail rows (and a group's
    /// masked-out rows) are handled; the output side is the [`Epilogue`]'s.
    #[derive(Clone, Copy)]
    pub(crate) struct TileJob {
        /// A of the problem (`rows × k` FP8).
        pub rs_a: BufferResource,
        /// SFA of the problem (`rows × ⌈k/128⌉` f32).
        pub rs_sfa: BufferResource,
        /// B of the problem (`n × k` FP8).
        pub rs_b: BufferResource,
        /// SFB of the problem (`⌈n/128⌉ × ⌈k/128⌉` f32).
        pub rs_sfb: BufferResource,
        /// Columns of D (rows of B); a multiple of 4.
        pub n: u32,
        /// Row stride of A in bytes (`≥ k`, a multiple of 16).
        pub lda: u32,
        /// Row stride of B in bytes (the problem's `k` for the logical layout).
        pub ldb: u32,
        /// Row stride of SFA and of SFB in f32 elements (the problem's `⌈k/128⌉`).
        pub ldsf: u32,
        /// First 128-K block of this job.
        pub kb0: u32,
        /// Number of 128-K blocks of this job (`≥ 1`; `kb0 + nkb ≤ ⌈k/128⌉`).
        pub nkb: u32,
        /// First row of the tile (a multiple of the tile height).
        pub m0: u32,
        /// First column of the tile (a multiple of the tile width, `< n`).
        pub n0: u32,
    }

    /// What a tile does with its accumulators once the main loop is done: called once per
    /// (fragment row, 4-column group) a lane owns, i.e. `FM · FN` times per lane.
    pub(crate) trait Epilogue {
        /// Consumes the FP32 accumulators of `D[row, col .. col + 4]` (`col % 4 == 0`),
        /// **in the promotion domain** (`D · 2^-PROMOTION_EXP`, see [`tile::PROMOTION_EXP`]:
        /// multiply by [`tile::PROMOTION_UP`] for the value of D). `valid` is false when the
        /// columns are past `n` or the tile's `keep_row` rejected the row; the epilogue must
        /// then not store them (rows past the problem's end are the epilogue's own business,
        /// typically dropped by its resource's range check).
        fn store(&self, row: u32, col: u32, valid: bool, acc: F32x4);
    }

    /// The default epilogue: `D[row, col..col+4] = bf16(acc · 2^60)` (round to nearest even),
    /// one `buffer_store_dwordx2`.
    #[derive(Clone, Copy)]
    pub(crate) struct Bf16Store {
        /// D of the problem (`rows × n` bf16): `D[r, j]` at byte `(r·ldd + j)·2`.
        pub rs_d: BufferResource,
        /// Row stride of D in elements (`≥ n`, a multiple of 4).
        pub ldd: u32,
    }

    impl Epilogue for Bf16Store {
        #[inline(always)]
        fn store(&self, row: u32, col: u32, valid: bool, acc: F32x4) {
            let voff = if valid { (row * self.ldd + col) * 2 } else { PARKED };
            let v = acc.to_array();
            let v = [v[0] * tile::PROMOTION_UP, v[1] * tile::PROMOTION_UP, v[2] * tile::PROMOTION_UP, v[3] * tile::PROMOTION_UP];
            let data = U32x2([tile::pack_bf16x2(v[0], v[1]), tile::pack_bf16x2(v[2], v[3])]);
            // SAFETY: rs_d covers the problem's D; rows past it are out of range and dropped,
            // invalid columns / rows are parked out of range; offsets are 8-byte aligned
            // (n % 4 == 0, ldd % 4 == 0).
            unsafe { buffer_store_b64(data, self.rs_d, voff, 0) };
        }
    }

    /// The dense kernels: pick the tile of this workgroup and run it over the whole operands.
    #[inline(always)]
    pub fn gemm<const FM: usize, const FN: usize>(args: DenseGemmArgs) {
        let bm = 32 * FM as u32;
        let bn = 32 * FN as u32;
        let (m, n, k, lda, ldd) = (args.m, args.n, args.k, args.lda, args.ldd);
        let nkb = k / SCALE_BLOCK_K;

        // Tile of this workgroup (XCD-aware order, see tile.rs).
        let tiles_m = m.div_ceil(bm);
        let grid = tiles_m * n.div_ceil(bn);
        let pid = workgroup_id_x();
        // A grid larger than the tile count (not what the host launches) does no work. The
        // `tiles_m == 0` test is implied for valid arguments; stating it lets LLVM drop the
        // division-by-zero panic path of `tile_coords`.
        if pid >= grid || tiles_m == 0 {
            return;
        }
        let id = tile::xcd_remap(pid, grid, NUM_XCDS);
        let (tm, tn) = tile::tile_coords(id, tiles_m);

        let job = TileJob {
            // Extents of strided A and D: (m − 1) rows of stride plus one row (m ≥ 1 here).
            rs_a: BufferResource::new(args.a.addr(), (m - 1) * lda + k),
            rs_sfa: BufferResource::new(args.sfa.addr(), m * nkb * 4),
            rs_b: BufferResource::new(args.b.addr(), n * k),
            rs_sfb: BufferResource::new(args.sfb.addr(), n.div_ceil(SCALE_BLOCK_N) * nkb * 4),
            n,
            lda,
            ldb: k,
            ldsf: nkb,
            kb0: 0,
            nkb,
            m0: tm * bm,
            n0: tn * bn,
        };
        let epi = Bf16Store { rs_d: BufferResource::new(args.d.addr(), ((m - 1) * ldd + n) * 2), ldd };
        tile_gemm::<FM, FN, _>(&job, |_| true, &epi);
    }

    /// Byte offset inside a partial slot of the four accumulators of `D[m0 + r, n0 + c .. +4]`
    /// of a `32·FM × 32·FN` tile: **fragment order**, `(((wave·FM + fm)·FN + fn)·64 + lane)·16`
    /// for the wave, fragment and lane that own them in `tile_gemm`'s epilogue (row
    /// `16·(wm·FM + fm) + (lane & 15)`, column `16·(wn·FN + fn) + 4·(lane >> 4)`, wave
    /// `wm + 2·wn`), so each `buffer_store_dwordx4` of a wave writes 1 KiB contiguous (8 whole
    /// 128-byte lines) and the reduction reads it back the same way.
    #[inline(always)]
    fn frag_offset<const FM: usize, const FN: usize>(r: u32, c: u32) -> u32 {
        let (fm_n, fn_n) = (FM as u32, FN as u32);
        let (wm, fm, lo) = (r / (16 * fm_n), (r / 16) % fm_n, r % 16);
        let (wn, fnn, hi) = (c / (16 * fn_n), (c / 16) % fn_n, (c % 16) / 4);
        let wave = wm + 2 * wn;
        (((wave * fm_n + fm) * fn_n + fnn) * 64 + lo + 16 * hi) * 16
    }

    /// Split-K epilogue: the tile's FP32 accumulators (promotion domain) to its partial slot in
    /// the workspace (`bm · bn` f32 from byte `base`, in [`frag_offset`] order), at device
    /// scope. Every value is stored (also columns past `n` and rows past `m`: the reduction
    /// reads the whole slot).
    #[derive(Clone, Copy)]
    struct PartialStore<const FM: usize, const FN: usize> {
        rs_ws: BufferResource,
        base: u32,
        m0: u32,
        n0: u32,
    }

    impl<const FM: usize, const FN: usize> Epilogue for PartialStore<FM, FN> {
        #[inline(always)]
        fn store(&self, row: u32, col: u32, _valid: bool, acc: F32x4) {
            let voff = self.base + frag_offset::<FM, FN>(row - self.m0, col - self.n0);
            // SAFETY: rs_ws covers the launch's workspace (the host checks its size against
            // tile::splitk_workspace_floats); the slot of (tile, split) is written only by this
            // workgroup; offsets are 16-byte aligned (frag_offset is a multiple of 16, base of
            // 256).
            unsafe { buffer_store_b128_device(acc.to_bits(), self.rs_ws, voff, 0) };
        }
    }

    /// The dense split-K kernels: workgroup → (tile, split); the split's K blocks into the
    /// tile's partial slot; the last workgroup of a tile to arrive reduces all partial slots in
    /// split order into bf16 D and re-arms the tile's counter.
    #[inline(always)]
    pub fn gemm_splitk<const FM: usize, const FN: usize>(args: DenseSplitKArgs) {
        let bm = 32 * FM as u32;
        let bn = 32 * FN as u32;
        let (m, n, k, lda, ldd) = (args.m, args.n, args.k, args.lda, args.ldd);
        let nkb = k / SCALE_BLOCK_K;
        let tiles_m = m.div_ceil(bm);
        let tiles = tiles_m * n.div_ceil(bn);
        // Invalid split counts (the host never launches them) do no work; NonZeroU32 removes
        // the division-by-zero panic paths.
        let (Some(splits), Some(tiles_m_nz)) = (NonZeroU32::new(args.splits), NonZeroU32::new(tiles_m)) else {
            return;
        };
        if splits.get() > nkb {
            return;
        }
        let grid = tiles * splits.get();
        let pid = workgroup_id_x();
        if pid >= grid {
            return;
        }
        // Split fastest: the splits of one tile are neighbouring logical ids, which the XCD
        // remap keeps on one XCD (one L2) except at the boundaries of its ranges.
        let id = tile::xcd_remap(pid, grid, NUM_XCDS);
        let (t, j) = (id / splits, id % splits);
        let (tm, tn) = (t % tiles_m_nz, t / tiles_m_nz);
        let (m0, n0) = (tm * bm, tn * bn);
        let (kb0, count) = tile::split_range(j, splits.get(), nkb);

        let job = TileJob {
            rs_a: BufferResource::new(args.a.addr(), (m - 1) * lda + k),
            rs_sfa: BufferResource::new(args.sfa.addr(), m * nkb * 4),
            rs_b: BufferResource::new(args.b.addr(), n * k),
            rs_sfb: BufferResource::new(args.sfb.addr(), n.div_ceil(SCALE_BLOCK_N) * nkb * 4),
            n,
            lda,
            ldb: k,
            ldsf: nkb,
            kb0,
            nkb: count,
            m0,
            n0,
        };
        // Workspace: `counters` u32 arrival counters, then tiles × splits partial slots.
        let counters = tile::splitk_counter_floats(tiles) as u32;
        let ws_bytes = tile::splitk_workspace_floats(tiles, splits.get(), bm, bn) as u32 * 4;
        let rs_ws = BufferResource::new(args.ws.addr(), ws_bytes);
        let slot = bm * bn * 4;
        let tile_base = counters * 4 + t * splits.get() * slot;
        let epi = PartialStore::<FM, FN> { rs_ws, base: tile_base + j * slot, m0, n0 };
        tile_gemm::<FM, FN, _>(&job, |_| true, &epi);

        // Release: every wave's partial stores have completed at device scope before the
        // barrier; only then does one work-item count the workgroup in.
        release_barrier();
        let tid = workitem_id_x();
        let counter = args.ws.addr() + u64::from(t) * 4;
        if tid == 0 {
            // SAFETY: the counter of tile t lies in the workspace's counter words (t < tiles),
            // 4-byte aligned, accessed only atomically during the launch.
            let arrived = unsafe { atomic_add_u32(counter, 1) };
            // SAFETY: LDS bytes 0..16 are inside every tile's stage 0; all waves finished their
            // LDS reads before release_barrier, and the next lds_barrier orders the reads below.
            unsafe { lds_write_b128(0, U32x4([arrived, 0, 0, 0])) };
        }
        lds_barrier();
        // SAFETY: written by work-item 0 before the barrier above.
        let arrived = readfirstlane_u32(unsafe { lds_read_b128(0) }.to_array()[0]);
        if arrived + 1 != splits.get() {
            return;
        }

        // Acquire: the counter said every other split has stored its partial (their stores
        // completed at device scope before their increments); device-scope loads read them.
        // Reduction in fixed split order 0, 1, …, splits − 1 (independent of arrival order, so
        // the result is deterministic), then ×2^60 and bf16 as the non-split epilogue.
        let rs_d = BufferResource::new(args.d.addr(), ((m - 1) * ldd + n) * 2);
        // Work-item (wave, lane) reduces the values it would have stored itself: fragment
        // (fm, fn) at frag_offset order, i.e. 1 KiB contiguous per wave and fragment.
        let lane = tid & 63;
        let wave = tid >> 6;
        let (wm, wn) = (wave & 1, wave >> 1);
        let lane_base = (wave * (FM * FN) as u32 * 64 + lane) * 16;
        // Splits are read CHUNK at a time: all CHUNK · FM · FN loads are issued before the
        // first add waits (one memory latency per chunk instead of per split). CHUNK keeps the
        // loads in flight within the tile's register budget (16 / 32 / 32 `dwordx4`).
        const CHUNK: usize = 4;
        let chunk = if FM * FN >= 16 { 2 } else { CHUNK };
        let mut sum = [[F32x4::zero(); FN]; FM];
        let mut s0 = 0;
        while s0 < splits.get() {
            let mut v = [[[F32x4::zero(); FN]; FM]; CHUNK];
            #[allow(clippy::needless_range_loop)] // constant trip count: fully unrolled, no scratch
            for c in 0..CHUNK {
                if c >= chunk {
                    continue;
                }
                let s = s0 + c as u32;
                // Splits past the last read nothing (parked out of range) and are not added.
                let base = tile_base + s * slot + lane_base;
                for fm in 0..FM {
                    for fnn in 0..FN {
                        let p = (fm * FN + fnn) as u32;
                        let voff = if s < splits.get() { base + p * 64 * 16 } else { PARKED };
                        // SAFETY: inside slot s of tile t of the workspace (rs_ws), 16-byte
                        // aligned, or parked out of range (reads 0).
                        v[c][fm][fnn] = unsafe { buffer_load_b128_device(rs_ws, voff, 0) }.to_f32x4();
                    }
                }
            }
            #[allow(clippy::needless_range_loop)]
            for c in 0..CHUNK {
                let s = s0 + c as u32;
                if c < chunk && s < splits.get() {
                    for fm in 0..FM {
                        for fnn in 0..FN {
                            sum[fm][fnn] = if s == 0 { v[c][fm][fnn] } else { sum[fm][fnn].add(v[c][fm][fnn]) };
                        }
                    }
                }
            }
            s0 += chunk as u32;
        }
        let out = Bf16Store { rs_d, ldd };
        for fm in 0..FM {
            let row = m0 + 16 * (wm * FM as u32 + fm as u32) + (lane & 15);
            for fnn in 0..FN {
                let col = n0 + 16 * (wn * FN as u32 + fnn as u32) + 4 * (lane >> 4);
                out.store(row, col, col < n, sum[fm][fnn]);
            }
        }
        // Re-arm the counter for the next launch that uses this workspace (all `splits`
        // increments of this launch have happened: this workgroup saw the last one).
        if tid == 0 {
            // SAFETY: as for the increment above.
            unsafe { atomic_store_u32(counter, 0) };
        }
    }

    /// The GEMM of one tile of `32·FM × 32·FN` (each of the 2 × 2 waves owns `FM × FN` 16×16
    /// fragments) over the job's K blocks `kb0 .. kb0 + nkb`: load, LDS stage, MFMA, per-128-K
    /// promotion, then `epi` — the whole main loop, shared by every kernel. `FM` and `FN` must
    /// be even (the global → LDS copy moves 64 rows per pass).
    ///
    /// `keep_row(r)` decides, per row `r` of the problem (`job.m0 ≤ r < job.m0 + 32·FM`), whether
    /// that row of D is stored; it is evaluated once per row before the main loop (so any load it
    /// issues overlaps the prologue's), and a `false` row reaches the epilogue with
    /// `valid = false`.
    #[inline(always)]
    pub(crate) fn tile_gemm<const FM: usize, const FN: usize, E: Epilogue>(
        job: &TileJob,
        keep_row: impl Fn(u32) -> bool,
        epi: &E,
    ) {
        let bm = 32 * FM as u32;
        let bn = 32 * FN as u32;
        let (n, m0, n0, lda, ldb, ldsf) = (job.n, job.m0, job.n0, job.lda, job.ldb, job.ldsf);
        let nkb = job.nkb;
        let (rs_a, rs_b, rs_sfa, rs_sfb) = (job.rs_a, job.rs_b, job.rs_sfa, job.rs_sfb);
        // Byte offset of the job's first K block inside a row of A / B, and element offset
        // inside a scale row (both folded into the per-lane offsets once).
        let (k0, sf0) = (job.kb0 * SCALE_BLOCK_K, job.kb0 * 4);

        let tid = workitem_id_x();
        let lane = tid & 63;
        let wave = readfirstlane_u32(tid >> 6);
        let (wm, wn) = (wave & 1, wave >> 1);

        // Global → LDS copy: work-item t moves chunk (t & 3) of row (t >> 2) + 64·pass.
        let (copy_row, copy_chunk) = (tid >> 2, tid & 3);
        let mut a_voff = [0u32; FM];
        let mut b_voff = [0u32; FN];
        for p in 0..FM / 2 {
            a_voff[p] = (m0 + 64 * p as u32 + copy_row) * lda + k0 + 16 * copy_chunk;
        }
        for p in 0..FN / 2 {
            b_voff[p] = (n0 + 64 * p as u32 + copy_row) * ldb + k0 + 16 * copy_chunk;
        }
        let copy_lds = lds_swizzle(copy_row, copy_chunk);
        let b_region = bm * STAGE_K;

        // Fragment reads: lane l reads row (l & 15) + 16·frag, logical chunk l >> 4. Fragment
        // bases are multiples of 16 rows, which leave the swizzle term unchanged.
        let frag_lds = lds_swizzle(lane & 15, lane >> 4);
        let a_frag0 = (wm * FM as u32 * 16) * STAGE_K;
        let b_frag0 = b_region + (wn * FN as u32 * 16) * STAGE_K;

        // Scales and output rows: lane's A rows are m0 + 16·(wm·FM + fm) + (l & 15). (Recomputed
        // in the epilogue rather than kept live across the loop: holding them makes LLVM
        // rematerialize the SFA offsets inside the loop instead.)
        let row_of = |fm: usize| m0 + 16 * (wm * FM as u32 + fm as u32) + (lane & 15);
        let mut sfa_voff = [0u32; FM];
        let mut keep = [true; FM];
        for fm in 0..FM {
            sfa_voff[fm] = row_of(fm) * ldsf * 4 + sf0;
            keep[fm] = keep_row(row_of(fm));
        }
        let sfb_row = (n0 / SCALE_BLOCK_N) * ldsf * 4 + sf0;

        let load = |kofs: u32, ga: &mut [U32x4; FM], gb: &mut [U32x4; FN]| {
            for p in 0..FM / 2 {
                // SAFETY: rs_a covers exactly the problem's A (readable for the launch); rows
                // past it have voffset ≥ its size and read 0; offsets are 16-byte aligned
                // (k % 128 == 0).
                ga[p] = unsafe { buffer_load_b128(rs_a, a_voff[p], kofs) };
            }
            for p in 0..FN / 2 {
                // SAFETY: as above for the problem's B (n·k bytes).
                gb[p] = unsafe { buffer_load_b128(rs_b, b_voff[p], kofs) };
            }
        };
        let store = |stage: u32, ga: &[U32x4; FM], gb: &[U32x4; FN]| {
            let base = stage_offset(bm, bn, stage) + copy_lds;
            for p in 0..FM / 2 {
                // SAFETY: the offset is inside stage `stage` of the A region (< lds_bytes, the
                // launch's sharedMemBytes), 16-byte aligned; the stage is not read by any wave
                // until the next barrier (double buffering, see the loop below).
                unsafe { lds_write_b128(base + 64 * p as u32 * STAGE_K, ga[p]) };
            }
            for p in 0..FN / 2 {
                // SAFETY: as above, B region of the stage.
                unsafe { lds_write_b128(base + b_region + 64 * p as u32 * STAGE_K, gb[p]) };
            }
        };
        // MFMAs of one 64-K half held in LDS stage `stage`; `first` starts a new 128-K block.
        let compute = |stage: u32, first: bool, part: &mut [[F32x4; FN]; FM]| {
            let base = stage_offset(bm, bn, stage) + frag_lds;
            let mut af = [[0u64; 2]; FM];
            let mut bf = [[0u64; 2]; FN];
            for fm in 0..FM {
                // SAFETY: inside the stage's A region, written before the last barrier.
                af[fm] = unsafe { lds_read_b128(base + a_frag0 + fm as u32 * 16 * STAGE_K) }.to_u64x2();
            }
            for fnn in 0..FN {
                // SAFETY: inside the stage's B region, written before the last barrier.
                bf[fnn] = unsafe { lds_read_b128(base + b_frag0 + fnn as u32 * 16 * STAGE_K) }.to_u64x2();
            }
            for s in 0..2 {
                for fm in 0..FM {
                    for fnn in 0..FN {
                        let c = if first && s == 0 { F32x4::zero() } else { part[fm][fnn] };
                        part[fm][fnn] = mfma_f32_16x16x32_fp8_fp8(bf[fnn][s], af[fm][s], c);
                    }
                }
            }
        };

        let mut acc = [[F32x4::zero(); FN]; FM];
        let mut part = [[F32x4::zero(); FN]; FM];
        let mut ga = [U32x4([0; 4]); FM];
        let mut gb = [U32x4([0; 4]); FN];

        // Prologue: first half into stage 0.
        load(0, &mut ga, &mut gb);
        store(0, &ga, &gb);
        lds_barrier();

        let mut kb = 0;
        while kb < nkb {
            let kofs = kb * SCALE_BLOCK_K;
            // Second half of this block: global → registers while stage 0 is consumed.
            load(kofs + STAGE_K, &mut ga, &mut gb);
            let mut sfa = [0f32; FM];
            for fm in 0..FM {
                // SAFETY: rs_sfa covers the problem's SFA; rows past it read 0.
                sfa[fm] = unsafe { buffer_load_f32(rs_sfa, sfa_voff[fm], kb * 4) };
            }
            // A vector load (the same address in every lane) rather than `s_buffer_load`: LLVM
            // treats the scalar load as free of memory effects and sinks it to its use at the
            // end of the block, exposing its latency; this one is issued with the SFA loads.
            // SAFETY: rs_sfb covers the problem's SFB; the offset is inside it (n0 < n).
            let sfb = unsafe { buffer_load_f32(rs_sfb, sfb_row, kb * 4) };
            // Issue the loads first: they have the longest latency.
            sched_fence();

            compute(0, true, &mut part);
            // Keep the LDS stores (which wait for the global loads) behind the MFMAs, so the
            // loads' latency is covered by this half's math.
            sched_fence();
            store(1, &ga, &gb);
            lds_barrier();

            let more = kb + 1 < nkb;
            if more {
                load(kofs + SCALE_BLOCK_K, &mut ga, &mut gb);
            }
            sched_fence();
            compute(1, false, &mut part);
            // Promotion in the 2^-60 domain (tile::PROMOTION_EXP): exact power-of-two scaling
            // that keeps SFA·SFB finite up to 2^188 (one v_mul per block).
            let sfb = sfb * tile::PROMOTION_DOWN;
            for fm in 0..FM {
                let s = sfa[fm] * sfb;
                for fnn in 0..FN {
                    acc[fm][fnn] = part[fm][fnn].fma_splat(s, acc[fm][fnn]);
                }
            }
            sched_fence();
            if more {
                store(0, &ga, &gb);
                lds_barrier();
            }
            kb += 1;
        }

        // Epilogue: lane holds rows `row_of(fm)`, columns n0 + 16·(wn·FN + fn) + 4·(l >> 4) + 0..4.
        for fm in 0..FM {
            let row = row_of(fm);
            for fnn in 0..FN {
                let col = n0 + 16 * (wn * FN as u32 + fnn as u32) + 4 * (lane >> 4);
                epi.store(row, col, col < n && keep[fm], acc[fm][fnn]);
            }
        }
    }
}

/// 64 × 64 tile (each wave 32 × 32): small M, or many workgroups for a small problem.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bm64_bn64(args: DenseGemmArgs) {
    imp::gemm::<2, 2>(args)
}

/// 64 × 128 tile (each wave 32 × 64): small and medium M.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bm64_bn128(args: DenseGemmArgs) {
    imp::gemm::<2, 4>(args)
}

/// 128 × 128 tile (each wave 64 × 64): large M.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bm128_bn128(args: DenseGemmArgs) {
    imp::gemm::<4, 4>(args)
}

/// Split-K, 64 × 64 tiles: small M with long K (decode).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_splitk_bm64_bn64(args: DenseSplitKArgs) {
    imp::gemm_splitk::<2, 2>(args)
}

/// Split-K, 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_splitk_bm64_bn128(args: DenseSplitKArgs) {
    imp::gemm_splitk::<2, 4>(args)
}

/// Split-K, 128 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_splitk_bm128_bn128(args: DenseSplitKArgs) {
    imp::gemm_splitk::<4, 4>(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile::DENSE_TILES;

    #[test]
    fn specs_match_the_tile_table() {
        let specs = [FP8_GEMM_NT_BM64_BN64, FP8_GEMM_NT_BM64_BN128, FP8_GEMM_NT_BM128_BN128];
        for (spec, tile) in specs.iter().zip(DENSE_TILES) {
            assert_eq!(spec.name, tile.name);
            assert_eq!(spec.workgroup_size, crate::tile::THREADS);
        }
        let split = [FP8_GEMM_NT_SPLITK_BM64_BN64, FP8_GEMM_NT_SPLITK_BM64_BN128, FP8_GEMM_NT_SPLITK_BM128_BN128];
        for (spec, tile) in split.iter().zip(crate::tile::DENSE_SPLITK_TILES) {
            assert_eq!(spec.name, tile.name);
            assert_eq!(spec.workgroup_size, crate::tile::THREADS);
        }
    }
}
