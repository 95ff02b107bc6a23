//! M-grouped FP8 GEMMs, "NT", DeepGEMM's two MoE entry points (arguments:
//! [`MGroupedContiguousArgs`], [`MGroupedMaskedArgs`]).
//!
//! Both reduce every workgroup's work to one tile of one group's problem and run the dense
//! kernels' main loop on it (`crate::dense::imp::tile_gemm`: same LDS layout, MFMA mapping,
//! pipeline, promotion and epilogue). What differs is only how a workgroup finds its problem:
//!
//! * **Contiguous** (`m_grouped_fp8_gemm_nt_contiguous_bm*_bn*`): the grid is the dense grid over
//!   `m_sum × n` (XCD remap, M fastest). The workgroup reads `m_indices[m0]` (one
//!   `s_buffer_load_dword`, so the group is wave-uniform and lives in an SGPR). A group outside
//!   `0..groups` (−1 padding, or garbage) makes the whole workgroup return: no operand load, no
//!   MFMA, no store. Otherwise B and SFB resources are built over that group's slices only, so no
//!   index can reach another group's or foreign memory. Inside the block, each lane reads the
//!   `m_indices` entry of its own output rows once before the main loop; a row is stored only if
//!   its entry equals the block's group, so the −1 padding rows at the end of a group's last
//!   aligned block are computed (with that group's weights) but **left untouched** in D.
//! * **Masked** (`m_grouped_fp8_gemm_nt_masked_bm*_bn*`): the grid is `groups × ⌈m_max/BM⌉ ×
//!   ⌈n/BN⌉` tiles (groups outermost, M fastest inside a group), dealt to the XCDs in the order
//!   the host chose (`MGroupedMaskedArgs::order`: contiguous runs of that order, each XCD whole
//!   groups; or each N column of each group whole to one XCD, the columns round-robin, so the
//!   working tiles spread evenly whatever the counts, every XCD reading all of A). The
//!   workgroup reads `masked_m[g]` (scalar load) and clamps it to `0..=m_max` (negative → 0, so a
//!   garbage count can neither skip the clamp nor reach past the group's slice); a tile starting
//!   at or past that count returns. Otherwise the A, SFA and D resources cover exactly the
//!   group's first `rows` rows: the hardware's range check reads zeros for the tile's rows past
//!   `rows` and drops their stores, just like the dense kernels' M tail.
//!
//! # Measured on the code objects (LLVM 22.1.4; `fp8gemm info`, `tests/dense_kernel.rs`)
//!
//! | kernel | VGPR | AGPR | SGPR | spills | scratch | LDS (dynamic) | waves/SIMD (regs) |
//! |---|---|---|---|---|---|---|---|
//! | `m_grouped_fp8_gemm_nt_contiguous_bm64_bn64`   | 108 | 0 | 42 | 0 | 0 | 16 KiB | 4 |
//! | `m_grouped_fp8_gemm_nt_contiguous_bm64_bn128`  | 136 | 0 | 42 | 0 | 0 | 24 KiB | 3 |
//! | `m_grouped_fp8_gemm_nt_contiguous_bm128_bn128` | 224 | 0 | 42 | 0 | 0 | 32 KiB | 2 |
//! | `m_grouped_fp8_gemm_nt_masked_bm64_bn64`       | 102 | 0 | 42 | 0 | 0 | 16 KiB | 4 |
//! | `m_grouped_fp8_gemm_nt_masked_bm64_bn128`      | 134 | 0 | 41 | 0 | 0 | 24 KiB | 3 |
//! | `m_grouped_fp8_gemm_nt_masked_bm128_bn128`     | 220 | 0 | 41 | 0 | 0 | 32 KiB | 2 |
//!
//! The main loop of every grouped kernel has exactly the instruction mix of the dense kernel
//! with the same tile (table in [`crate::dense`]; per loop trip: bm64_bn64 (2 blocks) 161
//! instructions, 32 MFMA, 16 `ds_read_b128`, 8 `ds_write_b128`, 11 buffer loads; bm64_bn128 114,
//! 32, 12, 6, 9; bm128_bn128 183, 64, 16, 8, 13), checked by `grouped_kernels_share_the_dense_main_loop`.
//! The per-row store predicate of the contiguous kernels costs `BM/32` `buffer_load_dword`s and
//! compares per lane before the loop (2 more VGPRs), nothing inside it.
//!
//! # The bs kernels: pre-shuffled B (`m_grouped_fp8_gemm_nt_{contiguous,masked}_bs_bm{32,64,128}_bn128`)
//!
//! For weights in the pre-shuffled layout ([`crate::tile::shuffled_b_offset`], group `g` at byte
//! `g · shuffled_b_bytes(n, k)`) the same two job builders run the "bs" main loop
//! ([`crate::mainloop_bs`]: B straight from global memory into the MFMA operands, only A in
//! LDS, 1 × 4 waves over a `16·FM × 128` tile) with the loop variant of the dense bs kernel of
//! the same height; B's resource covers exactly the group's pre-shuffled slice, so fragments
//! past `n` read zeros. Everything else — group lookup, skipped blocks, the per-row store
//! predicate, the masked clamp — is the logical kernels' code, and the results are bit for bit
//! theirs (`tests/gemm_bs.rs`, `tests/layout.rs`, `tests/moe.rs`). Tiles:
//! [`crate::tile::CONTIGUOUS_BS_TILES`], [`crate::tile::MASKED_BS_TILES`]; the host picks one
//! with its generated cost model (`fp8gemm::select::plan_grouped`).
//!
//! Resources (`fp8gemm info`, gfx942; VGPR = unified VGPR + AGPR count; 0 spills, 0 scratch,
//! checked by `grouped_bs_kernels_meet_the_resource_goals`):
//!
//! | kernel | VGPR | AGPR | SGPR | LDS (dynamic) | waves/SIMD |
//! |---|---|---|---|---|---|
//! | `m_grouped_fp8_gemm_nt_contiguous_bs_bm32_bn128`  | 160 | 0   | 47 | 9 KiB  | 3 |
//! | `m_grouped_fp8_gemm_nt_contiguous_bs_bm64_bn128`  | 242 | 0   | 47 | 18 KiB | 2 |
//! | `m_grouped_fp8_gemm_nt_contiguous_bs_bm128_bn128` | 434 | 178 | 55 | 36 KiB | 1 |
//! | `m_grouped_fp8_gemm_nt_masked_bs_bm32_bn128`      | 158 | 0   | 48 | 9 KiB  | 3 |
//! | `m_grouped_fp8_gemm_nt_masked_bs_bm64_bn128`      | 238 | 0   | 48 | 18 KiB | 2 |
//! | `m_grouped_fp8_gemm_nt_masked_bs_bm128_bn128`     | 426 | 170 | 56 | 36 KiB | 1 |
//!
//! ## Before / after (modelled, MI300X)
//!
//! `fp8gemm compare --set grouped` (logical B, the tuned/modelled choice) and the same with
//! `FP8GEMM_PRESHUFFLED=1` (bs kernels), all figures **modelled** by the timing model, TFLOPS;
//! `FP8GEMM_FORCE_TILE` for the forced bs columns; the bs choice is 64 × 128 on every row:
//!
//! | problem | logical (tile) | bs 32 × 128 | bs 64 × 128 (chosen) |
//! |---|---|---|---|
//! | contiguous 4×8192 over 4096×7168 | 843.2 (128×128) | 837.2 | **890.3** |
//! | contiguous 8×4096 over 4096×7168 | 846.1 (128×128) | 837.3 | **890.6** |
//! | masked 1×1024 over 4096×7168     | 616.5 (64×128)  | 603.0 | **672.9** |
//! | masked 2×512 over 4096×7168      | 617.3 (64×128)  | 605.4 | **673.4** |
//! | masked 4×256 over 4096×7168      | 616.6 (64×128)  | 606.5 | **673.9** |
//! | contiguous 4×8192 over 7168×2048 | 725.5 (128×128) | 659.6 | **723.5** |
//! | contiguous 8×4096 over 7168×2048 | 725.3 (128×128) | 659.2 | **725.1** |
//! | masked 1×1024 over 7168×2048     | 571.6 (64×64)   | 596.2 | **598.9** |
//! | masked 2×512 over 7168×2048      | 573.7 (64×64)   | 591.8 | **602.3** |
//! | masked 4×256 over 7168×2048      | 575.1 (64×64)   | 598.5 | **600.9** |
//!
//! The 128 × 128 bs tile (1 wave per SIMD) is slower still: 709.7 on contiguous 4×8192 over
//! 4096×7168 (an earlier build of the same loop). The goal for contiguous, ≥ 900,
//! is not reached: 890 at K = 7168 (+5.6 % over the logical kernels), no gain at K = 2048;
//! masked +9 % (4096×7168) and +5 % (7168×2048). `fp8gemm profile --layout contiguous` shows
//! what limits the bs loop (`--m 4096 --n 7168 --k 2048 --groups 8 --scope xcd`, 64 × 128,
//! 723 TFLOPS: MFMA busy 48 %; stalls: MFMA pipe 25 %, `lgkmcnt` 24 %, `vmcnt` 20 %, issue
//! arbitration 18 %, barrier 14 %; VMEM/L1 72 % and L2 78 % busy) — the loop, not the grouped
//! wrapper, is where the remaining time is.

//!
//! # Pre-shuffled B: the grouped bs kernels
//!
//! `m_grouped_fp8_gemm_nt_{contiguous,masked}_bs_bm{32,64,128}_bn128` take B pre-shuffled per
//! group (group `g` at byte `g · shuffled_b_bytes(n, k)`) and run the bs loop
//! ([`crate::mainloop_bs`]) on the same per-tile jobs (`BS = true` in `contiguous` / `masked`;
//! the existing kernels are unchanged, `BS = false`). Bit-identical to the logical kernels
//! (`tests/gemm_bs.rs`). Timing model (*modelled*, `fp8gemm profile --layout … --scope xcd`,
//! `FP8GEMM_PRESHUFFLED=1` for bs, the configs' choices), TFLOPS, MI300X / MI325X:
//!
//! | problem (groups × rows, n, k) | logical | bs (tile) |
//! |---|---|---|
//! | contiguous 4 × 8192, 4096, 7168 | 817 / 817 | **860 / 860** (64) |
//! | contiguous 8 × 4096, 4096, 7168 | 818 / 818 | **860 / 860** (64) |
//! | contiguous 4 × 8192, 7168, 2048 | **710 / 711** | 710 / 706 (64) |
//! | contiguous 8 × 4096, 7168, 2048 | **710 / 710** | 704 / 704 (64) |
//! | masked 1 × 1024, 4096, 7168 | 608 / 610 | **671 / 670** (64) |
//! | masked 2 × 512, 4096, 7168 | 351 / 351 | **444 / 444** (64) |
//! | masked 4 × 256, 4096, 7168 | 355 / 355 | **443 / 443** (64) |
//! | masked 1 × 1024, 7168, 2048 | 483 / 484 | **498 / 502** (32) |
//! | masked 4 × 256, 7168, 2048 | 337 / 337 | **471 / 471** (32) |
//!
//! Issue 12's contiguous goal (≥ 900 TFLOPS) is not reached: 860.
//!
//! The same jobs on the pipelined bs loop (one workgroup per CU, the host's choice from 40 K
//! blocks on): [`crate::grouped_pipe`], through `imp::contiguous_with` and `imp::masked_with`,
//! which take the main loop as a `TileLoop`.

//!
//! # Split-K for the masked layout (`m_grouped_fp8_gemm_nt_masked_splitk_bs_bm{32,64}_bn128`)
//!
//! Decode MoE (a few rows per expert, long K) launches too few masked tiles to fill the device:
//! 2 groups × 64 rows over n = 4096 are 128 working 32 × 128 tiles on 304 CUs. These kernels
//! (arguments [`MGroupedMaskedSplitKArgs`], B pre-shuffled) deal each tile's K blocks to
//! `splits` workgroups: the grid is `groups · ⌈m_max/BM⌉ · ⌈n/128⌉ · splits` (the masked tile
//! grid with the split index fastest, XCD-remapped), and each workgroup runs the bs loop over its
//! blocks into its partial slot and then the dense split-K protocol (`crate::dense`, "Split-K":
//! device-scope partial stores, release, arrival counter, the last arriver reduces in split
//! order — deterministic — stages bf16 in LDS, stores D along rows, re-arms the counter), the
//! same code (`dense::imp::splitk_finish`). The workspace is the dense one
//! (`tile::splitk_workspace_floats` over all `groups · ⌈m_max/BM⌉ · ⌈n/128⌉` tiles, at most
//! `tile::SPLITK_MAX_TILES`), so launches of any kind share a stream's workspace.
//!
//! `masked_m` is read on the device: a tile at or past its group's clamped count returns
//! before its main loop, and since all splits of a tile read the same count, either all of
//! them arrive at its counter or none touches it (0 rows: nothing computed, counter still 0).
//! The reduction's D resource covers the group's first `rows` rows, so rows past the count are
//! never written (also with more rows than `expected_m`, up to `m_max`). The host chooses the
//! split count from `expected_m` with its generated cost model (`fp8gemm::select::plan_grouped`).
//!
//! Resources (`fp8gemm info`, gfx942; 0 spills, 0 scratch; `tests/dense_kernel.rs`
//! `bs_kernels_meet_the_resource_goals`): `…_splitk_bs_bm32_bn128` 134 VGPR, 0 AGPR, 52 SGPR,
//! 9 KiB LDS, 3 waves/SIMD; `…_splitk_bs_bm64_bn128` 182, 0, 54, 18 KiB, 2 (the dense bs split-K
//! kernels' counts).
//!
//! Before / after, **modelled** (timing model, MI300X, `FP8GEMM_PRESHUFFLED=1 fp8gemm profile
//! --layout masked --groups G --m m --n N --k K --scope full`: `m` = expected_m, m_max = ⌈1.3·m⌉,
//! counts drawn in 0.7…1.3·m); before = the unsplit bs kernel (`FP8GEMM_FORCE_SPLIT=1`), after
//! = the configuration's choice; µs (TFLOPS of the useful work). The choice is 32 × 128 on every
//! row:
//!
//! | G × m over (N, K) | before | after (splits) | best forced split (s ∈ 1,2,3,4,6,8) |
//! |---|---|---|---|
//! | 1×64 over (4096, 7168)  | 36.93 (101.8) | **16.57 (226.8)** (3) | 15.98 (6) |
//! | 2×64 over (4096, 7168)  | 36.98 (203.2) | **22.68 (331.4)** (3) | 22.68 (3) |
//! | 4×32 over (4096, 7168)  | 38.12 (197.2) | 38.12 (197.2) (1)     | 37.07 (2) |
//! | 8×16 over (4096, 7168)  | 61.49 (122.2) | 61.49 (122.2) (1)     | 61.49 (1) |
//! | 2×128 over (4096, 7168) | 49.91 (301.2) | **38.26 (392.9)** (2) | 37.38 (4) |
//! | 4×64 over (4096, 7168)  | 49.89 (301.3) | **39.30 (382.5)** (2) | 39.30 (2) |
//! | 1×64 over (7168, 2048)  | 14.56         | **13.37 (140.6)** (4) | 11.72 (3) |
//! | 2×64 over (7168, 2048)  | 19.91         | **17.20 (218.5)** (2) | 17.20 (2) |
//! | 4×32 over (7168, 2048)  | 22.13 (169.8) | 22.13 (169.8) (1)     | 22.13 (1) |
//! | 8×16 over (7168, 2048)  | 33.44 (112.4) | 33.44 (112.4) (1)     | 33.44 (1) |
//! | 2×128 over (7168, 2048) | 25.10 (299.5) | 25.10 (299.5) (1)     | 24.75 (2) |
//! | 4×64 over (7168, 2048)  | 24.99 (300.8) | 24.99 (300.8) (1)     | 24.99 (1) |
//!
//! 4×32 and 8×16 are HBM-bound unsplit (3.1 and 3.9 TB/s modelled: every group streams its whole
//! B for a few rows), so splitting only adds partial traffic; the choice's HBM floor keeps them
//! unsplit. 1×1024, 2×512 and 4×256 (≥ 1000 working tiles) never split. The 64-row split kernel
//! is not chosen: forced, it beats the 32-row choice only at 2×128 over (4096, 7168) (3 splits
//! 35.50 µs vs 38.26) and loses elsewhere (4×64: 49.58 at 2 splits; 2×64: 29.50 at 4).
//!
//! # Contiguous split-K and gathered A (`m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm{32,64}_bn128`)
//!
//! Arguments [`MGroupedContiguousSplitKArgs`], B pre-shuffled. The contiguous tile grid with a
//! split index fastest (`(m_sum/BM)·⌈n/128⌉·splits` workgroups, XCD-remapped), the block's
//! group from `m_indices` as in the contiguous kernels, then the bs loop over the split's K
//! blocks and the masked split-K kernels' protocol (`dense::imp::splitk_finish`: partial
//! slots, arrival counter, reduction in split order by the last arriver — deterministic —
//! with the per-row store predicate of the contiguous kernels). `splits = 1` stores the tile
//! directly (no workspace). With a non-null `row_src` the A loads are **gathered**: row `i`
//! of the problem reads row `row_src[i]` of an A of `a_rows` rows (an MoE layer's tokens,
//! quantized once), one buffer load per copied row before the main loop
//! (`dense::imp::ARowMap`); entries outside `0..a_rows` park the row's A and SFA offsets past
//! their resources, so padding rows read zeros. Everything inside the loop is the bs loop's.
//! The `_pipe_` 64-row variants run the same jobs on the pipelined bs loop ([`crate::grouped_pipe`]).
//!
//! **Rows in use.** A non-null `valid_rows` (the MoE route's "rows used", written on the
//! device) limits the tile grid to the rows in use: `⌈used/BM⌉·⌈n/128⌉·splits` logical tiles,
//! XCD-remapped over that count, taken by the grid's first workgroups; the others return at
//! once. The host launches the grid of the bound (`m_sum` rows, all it knows without a
//! synchronisation); the padding the bound adds at the end of the layout (up to `(BM − 1)` rows
//! per expert) then costs every XCD alike a few empty workgroups instead of leaving the XCDs
//! whose id ranges fall on it idle while the others take all the work (257 experts at 1024
//! tokens: a fifth of the bound's tiles are padding, all on the last XCDs).
//!
//! ## MoE epilogues (`…_splitk_silu_bs_*`, `…_splitk_scatter_bs_*`)
//!
//! The same kernels with an epilogue that continues where the tile is stored (at device
//! scope), counted in with arrival counters in the style of the split-K protocol — the last to
//! arrive does the work, nobody waits, so the kernels run on an emulator that executes
//! workgroups one after another as on hardware:
//!
//! * **activation** ([`MGroupedContiguousSiluArgs`]): gate tile `j` and up tile `j + inter/128`
//!   of a row block share a counter; the second reads both back and writes
//!   `FP8(silu(gate)·up)` with its 1×128 scales (the `quantize_act_silu_mul` recipe, bit for
//!   bit), so the MoE layer's gate·up GEMM needs no separate activation launch;
//! * **scatter** ([`MGroupedContiguousScatterArgs`]): each stored row counts in on its token's
//!   counter for the tile's columns; the row that completes a token's count adds the token's
//!   rows in `j` order into `out` (the unpermute's arithmetic, bit for bit) and re-arms the
//!   counter; tokens without a valid slot are written by a fallback. The result does not depend
//!   on which workgroup arrives last: deterministic, no float atomics.

use crate::amdgpu_kernel;
use crate::args::{
    MGroupedContiguousArgs, MGroupedContiguousScatterArgs, MGroupedContiguousSiluArgs, MGroupedContiguousSplitKArgs, MGroupedMaskedArgs,
    MGroupedMaskedSplitKArgs,
};

#[cfg(target_arch = "amdgpu")]
pub(crate) mod imp {
    use core::num::NonZeroU32;

    use crate::args::{
        MASKED_ORDER_COLUMNS, MGroupedContiguousArgs, MGroupedContiguousScatterArgs, MGroupedContiguousSiluArgs, MGroupedContiguousSplitKArgs,
        MGroupedMaskedArgs, MGroupedMaskedSplitKArgs, MoeScatterArgs, MoeSiluArgs,
    };
    use crate::dense::imp::{ARowMap, Bf16Store, PartialStore, SplitKUnit, TileJob, run_loop, splitk_finish, tile_dims};
    use crate::intrinsics::*;
    use crate::tile::{self, NUM_XCDS, SCALE_BLOCK_K, SCALE_BLOCK_N};

    /// `(BM, BN)` of a grouped tile and the bytes of one group's B: `32·FM × 32·FN` over the
    /// logical B (`n·k` per group), or with `BS` (the bs loop, [`crate::mainloop_bs`])
    /// `16·FM × 64·FN` over the pre-shuffled B (`shuffled_b_bytes(n, k)` per group).
    #[inline(always)]
    fn dims<const FM: usize, const FN: usize, const BS: bool>(n: u32, k: u32) -> (u32, u32, u32) {
        let (bm, bn) = tile_dims(FM, FN, BS);
        (bm, bn, if BS { tile::shuffled_b_bytes(u64::from(n), u64::from(k)) as u32 } else { n * k })
    }

    /// A main loop over one grouped tile job (the builders' last step; [`Loop`] is [`run_loop`], the
    /// pipelined bs kernels of `crate::grouped_pipe` bring their own).
    pub(crate) trait TileLoop {
        /// The loop reads a bf16 A and quantizes it itself
        /// (`crate::mainloop_bs::imp::tile_gemm_bs_q`).
        const QA: bool = false;
        /// Runs the loop over `job`, storing through `epi` the rows `keep_row` accepts.
        fn run<E: crate::dense::imp::Epilogue>(job: &TileJob, keep_row: impl Fn(u32) -> bool, epi: &E);
    }

    /// The two-phase bs loop over a bf16 A it quantizes itself, `FM` fragments, A fragments
    /// read a block ahead.
    pub(crate) struct LoopQa<const FM: usize>;
    impl<const FM: usize> TileLoop for LoopQa<FM> {
        const QA: bool = true;
        #[inline(always)]
        fn run<E: crate::dense::imp::Epilogue>(job: &TileJob, keep_row: impl Fn(u32) -> bool, epi: &E) {
            crate::mainloop_bs::imp::tile_gemm_bs_q::<FM, true, true, true, _>(job, keep_row, epi)
        }
    }

    /// [`run_loop`] as a [`TileLoop`].
    pub(crate) struct Loop<const FM: usize, const FN: usize, const DEPTH: u32, const BS: bool>;
    impl<const FM: usize, const FN: usize, const DEPTH: u32, const BS: bool> TileLoop for Loop<FM, FN, DEPTH, BS> {
        #[inline(always)]
        fn run<E: crate::dense::imp::Epilogue>(job: &TileJob, keep_row: impl Fn(u32) -> bool, epi: &E) {
            run_loop::<FM, FN, DEPTH, BS, E>(job, keep_row, epi)
        }
    }

    /// Contiguous layout on [`run_loop`] ([`contiguous_with`]).
    #[inline(always)]
    pub fn contiguous<const FM: usize, const FN: usize, const DEPTH: u32, const BS: bool>(args: MGroupedContiguousArgs) {
        contiguous_with::<FM, FN, BS, Loop<FM, FN, DEPTH, BS>>(args)
    }

    /// Masked layout on [`run_loop`] ([`masked_with`]).
    #[inline(always)]
    pub fn masked<const FM: usize, const FN: usize, const DEPTH: u32, const BS: bool>(args: MGroupedMaskedArgs) {
        masked_with::<FM, FN, BS, Loop<FM, FN, DEPTH, BS>>(args)
    }

    /// Contiguous layout: one tile of `D[m_sum, n]` ([`dims`]) with the group of its block.
    #[inline(always)]
    pub(crate) fn contiguous_with<const FM: usize, const FN: usize, const BS: bool, L: TileLoop>(args: MGroupedContiguousArgs) {
        let (bm, bn, b_bytes) = dims::<FM, FN, BS>(args.n, args.k);
        let (m, n, k, groups) = (args.m_sum, args.n, args.k, args.groups);
        let nkb = k / SCALE_BLOCK_K;
        let nb = n.div_ceil(SCALE_BLOCK_N);

        let tiles_m = m.div_ceil(bm);
        let grid = tiles_m * n.div_ceil(bn);
        let pid = workgroup_id_x();
        // `tiles_m == 0` is implied for valid arguments; stating it removes the division-by-zero
        // panic path of `tile_coords`.
        if pid >= grid || tiles_m == 0 {
            return;
        }
        let id = tile::xcd_remap(pid, grid, NUM_XCDS);
        let (tm, tn) = tile::tile_coords(id, tiles_m, n.div_ceil(bn));
        let (m0, n0) = (tm * bm, tn * bn);

        let rs_idx = BufferResource::new(args.m_indices.addr(), m * 4);
        // SAFETY: rs_idx covers m_indices (m_sum i32, read-only during the launch); the offset is
        // wave-uniform and in range (m0 < m_sum), 4-byte aligned.
        let g = unsafe { s_buffer_load_i32(rs_idx, m0 * 4) };
        if g < 0 || g as u32 >= groups {
            // −1 padding (or an invalid index): the block is skipped, its D rows untouched.
            return;
        }
        let g = g as u64;
        let sfb_bytes = nb * nkb * 4;
        let job = TileJob {
            rs_a: BufferResource::new(args.a.addr(), m * k),
            rs_sfa: BufferResource::new(args.sfa.addr(), m * nkb * 4),
            rs_b: BufferResource::new(args.b.addr() + g * u64::from(b_bytes), b_bytes),
            rs_sfb: BufferResource::new(args.sfb.addr() + g * u64::from(sfb_bytes), sfb_bytes),
            n,
            lda: k,
            ldb: k,
            ldsf: nkb,
            kb0: 0,
            nkb,
            m0,
            n0,
            a_rows: None,
        };
        let epi = Bf16Store::tile::<FM, FN, BS>(BufferResource::new(args.d.addr(), m * n * 2), n, n, m0, n0);
        let g = g as i32;
        L::run(
            &job,
            |row| {
                // SAFETY: rs_idx as above; rows ≥ m_sum read 0, and their stores fall outside D's
                // resource anyway.
                unsafe { buffer_load_i32(rs_idx, row * 4, 0) == g }
            },
            &epi,
        );
    }

    /// Masked layout: one tile ([`dims`]) of `D[g]` of one group, rows below `masked_m[g]`.
    #[inline(always)]
    pub(crate) fn masked_with<const FM: usize, const FN: usize, const BS: bool, L: TileLoop>(args: MGroupedMaskedArgs) {
        let (bm, bn, b_bytes) = dims::<FM, FN, BS>(args.n, args.k);
        let (m_max, n, k, groups) = (args.m_max, args.n, args.k, args.groups);
        let nkb = k / SCALE_BLOCK_K;
        let nb = n.div_ceil(SCALE_BLOCK_N);

        let tiles_m = m_max.div_ceil(bm);
        let per_group = tiles_m * n.div_ceil(bn);
        // Both are non-zero for valid arguments (otherwise the grid is empty).
        let (Some(tiles_m_nz), Some(per_group_nz)) = (NonZeroU32::new(tiles_m), NonZeroU32::new(per_group)) else {
            return;
        };
        let grid = groups * per_group;
        let pid = workgroup_id_x();
        if pid >= grid {
            return;
        }
        // The grid order the host chose (args::MASKED_ORDER_*).
        let id = if args.order == MASKED_ORDER_COLUMNS {
            tile::masked_xcd_order(pid, tiles_m, grid / tiles_m, NUM_XCDS)
        } else {
            tile::xcd_remap(pid, grid, NUM_XCDS)
        };
        let (g, tm, tn) = tile::masked_tile_coords(id, tiles_m_nz, per_group_nz);
        let (m0, n0) = (tm * bm, tn * bn);

        let rs_mask = BufferResource::new(args.masked_m.addr(), groups * 4);
        // SAFETY: rs_mask covers masked_m (groups i32, read-only during the launch); g < groups,
        // so the wave-uniform offset is in range.
        let count = unsafe { s_buffer_load_i32(rs_mask, g * 4) };
        let rows = if count <= 0 { 0 } else { (count as u32).min(m_max) };
        if m0 >= rows {
            return;
        }
        let g = u64::from(g);
        let a_rows = u64::from(m_max) * g;
        let sfb_bytes = nb * nkb * 4;
        let job = TileJob {
            rs_a: BufferResource::new(args.a.addr() + a_rows * u64::from(k), rows * k),
            rs_sfa: BufferResource::new(args.sfa.addr() + a_rows * u64::from(nkb * 4), rows * nkb * 4),
            rs_b: BufferResource::new(args.b.addr() + g * u64::from(b_bytes), b_bytes),
            rs_sfb: BufferResource::new(args.sfb.addr() + g * u64::from(sfb_bytes), sfb_bytes),
            n,
            lda: k,
            ldb: k,
            ldsf: nkb,
            kb0: 0,
            nkb,
            m0,
            n0,
            a_rows: None,
        };
        let epi = Bf16Store::tile::<FM, FN, BS>(BufferResource::new(args.d.addr() + a_rows * u64::from(n * 2), rows * n * 2), n, n, m0, n0);
        L::run(&job, |_| true, &epi);
    }

    /// Masked layout, split-K (pre-shuffled B, the bs loop, `FN = 2`): workgroup → (tile of
    /// [`masked`]'s grid, split); the split's K blocks into the tile's partial slot, then the
    /// dense split-K protocol (`crate::dense::imp::splitk_finish`: release, arrival counter, the
    /// last arriver reduces in split order and re-arms the counter).
    ///
    /// A tile at or past its group's clamped row count returns before touching anything: every
    /// split of that tile reads the same `masked_m[g]` (read-only during the launch), so either
    /// all of its splits arrive at its counter or none does, and a counter nobody touched stays
    /// armed (0). The reduction's D resource covers the group's first `rows` rows, so the tile's
    /// rows past them are dropped, as in [`masked`].
    #[inline(always)]
    pub fn masked_splitk<const FM: usize, const DEPTH: u32>(args: MGroupedMaskedSplitKArgs) {
        let (bm, bn, b_bytes) = dims::<FM, 2, true>(args.n, args.k);
        let (m_max, n, k, groups) = (args.m_max, args.n, args.k, args.groups);
        let nkb = k / SCALE_BLOCK_K;
        let nb = n.div_ceil(SCALE_BLOCK_N);

        let tiles_m = m_max.div_ceil(bm);
        let per_group = tiles_m * n.div_ceil(bn);
        let (Some(tiles_m_nz), Some(per_group_nz), Some(splits)) = (NonZeroU32::new(tiles_m), NonZeroU32::new(per_group), NonZeroU32::new(args.splits)) else {
            return;
        };
        let tiles = groups * per_group;
        // More splits than K blocks, or more tiles than the workspace has counters for: not
        // what the host launches; no work.
        if splits.get() > nkb || tiles > tile::SPLITK_MAX_TILES {
            return;
        }
        let grid = tiles * splits.get();
        let pid = workgroup_id_x();
        if pid >= grid {
            return;
        }
        // Split fastest (neighbouring logical ids, one XCD), as the dense split-K grid; the
        // order the host chose (args::MASKED_ORDER_*; by columns, a column's row tiles with
        // their pieces whole to one XCD).
        let len = tiles_m * splits.get();
        let id = if args.order == MASKED_ORDER_COLUMNS { tile::masked_xcd_order(pid, len, grid / len, NUM_XCDS) } else { tile::xcd_remap(pid, grid, NUM_XCDS) };
        let (t, j) = (id / splits, id % splits);
        let (g, tm, tn) = tile::masked_tile_coords(t, tiles_m_nz, per_group_nz);
        let (m0, n0) = (tm * bm, tn * bn);

        let rs_mask = BufferResource::new(args.masked_m.addr(), groups * 4);
        // SAFETY: rs_mask covers masked_m (groups i32, read-only during the launch); g < groups,
        // so the wave-uniform offset is in range.
        let count = unsafe { s_buffer_load_i32(rs_mask, g * 4) };
        let rows = if count <= 0 { 0 } else { (count as u32).min(m_max) };
        if m0 >= rows {
            return;
        }
        let (kb0, nkb_j) = tile::split_range(j, splits.get(), nkb);
        let g = u64::from(g);
        let a_rows = u64::from(m_max) * g;
        let sfb_bytes = nb * nkb * 4;
        let job = TileJob {
            rs_a: BufferResource::new(args.a.addr() + a_rows * u64::from(k), rows * k),
            rs_sfa: BufferResource::new(args.sfa.addr() + a_rows * u64::from(nkb * 4), rows * nkb * 4),
            rs_b: BufferResource::new(args.b.addr() + g * u64::from(b_bytes), b_bytes),
            rs_sfb: BufferResource::new(args.sfb.addr() + g * u64::from(sfb_bytes), sfb_bytes),
            n,
            lda: k,
            ldb: k,
            ldsf: nkb,
            kb0,
            nkb: nkb_j,
            m0,
            n0,
            a_rows: None,
        };
        // Workspace: the counters, then tiles × splits partial slots (the dense layout).
        let ws_bytes = tile::splitk_workspace_floats(tiles, splits.get(), bm, bn) as u32 * 4;
        let rs_ws = BufferResource::new(args.ws.addr(), ws_bytes);
        let slot = bm * bn * 4;
        let tile_base = tile::SPLITK_COUNTER_FLOATS as u32 * 4 + t * splits.get() * slot;
        let epi = PartialStore::<FM, 2, true> { rs_ws, base: tile_base + j * slot, m0, n0 };
        run_loop::<FM, 2, DEPTH, true, _>(&job, |_| true, &epi);
        let rs_d = || BufferResource::new(args.d.addr() + a_rows * u64::from(n * 2), rows * n * 2);
        splitk_finish::<FM, 2, true>(SplitKUnit { ws_addr: args.ws.addr(), rs_ws, t, tile_base, slot, splits, rs_d, ldd: n, n, m0, n0 }, |_| true, false);
    }

    /// Contiguous layout, pre-shuffled B (the bs loop, `FN = 2`), split-K and/or gathered A
    /// ([`MGroupedContiguousSplitKArgs`]): workgroup → (tile of [`contiguous`]'s grid, split).
    /// The block's group comes from `m_indices` as in [`contiguous`] (a block outside `0..groups`
    /// returns before touching anything; all splits of a tile read the same entry, so either
    /// all of them arrive at its counter or none does). With `splits = 1` the tile is stored
    /// straight through the bf16 epilogue; otherwise each split runs its K blocks into its
    /// partial slot and the dense split-K protocol reduces them in split order (deterministic).
    /// Either way a row is stored only if its own `m_indices` entry is the block's group.
    #[inline(always)]
    pub fn contiguous_splitk<const FM: usize, L: TileLoop>(args: MGroupedContiguousSplitKArgs) {
        contiguous_splitk_with::<FM, L>(&args, Epi::None)
    }

    /// [`contiguous_splitk`] with the MoE scatter epilogue ([`MoeScatterArgs`]): the tile of
    /// `y` is stored at device scope, then [`scatter_tile`] runs for it; afterwards (also in
    /// workgroups that had no work) [`scatter_empty_tokens`].
    #[inline(always)]
    pub fn contiguous_scatter<const FM: usize, L: TileLoop>(args: MGroupedContiguousScatterArgs) {
        contiguous_splitk_with::<FM, L>(&args.gemm, Epi::Scatter(&args.scatter));
        let grid = args.gemm.m_sum.div_ceil(16 * FM as u32) * args.gemm.n.div_ceil(128) * args.gemm.splits.max(1);
        // Once per layer pass: the first row chunk's launch.
        if args.scatter.row0 == 0 {
            scatter_empty_tokens(&args.scatter, args.gemm.n, grid);
        }
    }

    /// The scatter epilogue of one stored tile of `y` (rows `m0 ..` of the launch, columns
    /// `n0 .. n0 + 128`, tile column `tn`; [`MoeScatterArgs`]): after a release of the tile's
    /// device-scope stores, work-item `i < bm` counts row `m0 + i` in on its token's counter for
    /// these columns (if the row was stored and has a token); a row that completes its token's
    /// count puts the token on an LDS list, and 16 work-items per listed token then add its
    /// rows of y (device-scope loads: other workgroups stored them before counting in) in `j`
    /// order into `out` (`weighted_rows_to`, the unpermute's arithmetic) and re-arm the counter.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn scatter_tile(sc: &MoeScatterArgs, bm: u32, m_sum: u32, n: u32, m0: u32, n0: u32, tn: u32, keep_row: impl Fn(u32) -> bool) {
        release_barrier();
        let tid = workitem_id_x();
        let tiles_n = n.div_ceil(128);
        let rs_tok = BufferResource::new(sc.row_token.addr(), m_sum * 4);
        let counter = |t: u32| sc.counters.addr() + (u64::from(t) * u64::from(tiles_n) + u64::from(tn)) * 4;
        let mut mine = -1i32;
        if tid < bm {
            let row = m0 + tid;
            // SAFETY: rs_tok covers the launch's m_sum row tokens (read-only during the launch);
            // row < m_sum (m_sum is a multiple of bm).
            let t = unsafe { buffer_load_i32(rs_tok, row * 4, 0) };
            if keep_row(row) && t >= 0 && (t as u32) < sc.tokens {
                let t = t as u32;
                let expected = valid_slots(sc, t);
                // SAFETY: the counter of (t, tn) lies in the tokens × ⌈n/128⌉ counters, 4-byte
                // aligned, accessed only atomically during the launch.
                let old = unsafe { atomic_add_u32(counter(t), 1) };
                if old + 1 == expected {
                    mine = t as i32;
                }
            }
        }
        if tid < bm {
            // SAFETY: word tid < bm ≤ 64 of LDS, free after the barrier of release_barrier (the
            // tile's epilogue finished its LDS reads before its stores).
            unsafe { lds_write_b32(4 * tid, mine as u32) };
        }
        lds_barrier();
        let (slot_of, q) = (tid / 16, tid % 16);
        let col = n0 + 8 * q;
        for pass in 0..bm / 16 {
            // SAFETY: written before the barrier above.
            let t = unsafe { lds_read_b32(4 * (pass * 16 + slot_of)) } as i32;
            if t >= 0 {
                let t = t as u32;
                let (y, n64) = (sc.y.addr(), u64::from(n));
                if col < n {
                    // SAFETY: t < tokens; slots and weights hold tokens · top_k, y y_rows × n,
                    // shared (if any) and out tokens × n bf16, 16-byte aligned (n % 8 == 0,
                    // host-checked); col + 8 ≤ n. The loads of y are device-scope
                    // (load16_device): the rows were stored at device scope and released before
                    // their counts.
                    unsafe {
                        crate::moe::imp::weighted_rows_to::<{ crate::moe::UNPERMUTE_BATCH as usize }>(
                            sc.slots.as_ptr(),
                            sc.weights.as_ptr(),
                            t,
                            sc.top_k,
                            sc.y_rows,
                            |row| load16_device(y + (row * n64 + u64::from(col)) * 2),
                            sc.shared.addr(),
                            sc.out.addr(),
                            n64,
                            col,
                        )
                    };
                }
                if q == 0 {
                    // SAFETY: as for the increment; every count of (t, tn) has happened.
                    unsafe { atomic_store_u32(counter(t), 0) };
                }
            }
        }
    }

    /// Valid slots of token `t` (`0 ≤ slot < y_rows`), loaded 8 at a time without branches.
    #[inline(always)]
    fn valid_slots(sc: &MoeScatterArgs, t: u32) -> u32 {
        let (base, last) = (t * sc.top_k, t * sc.top_k + sc.top_k - 1);
        let mut count = 0u32;
        let mut j0 = 0;
        while j0 < sc.top_k {
            let mut s = [-1i32; 8];
            for (q, v) in s.iter_mut().enumerate() {
                // SAFETY: min(base + j0 + q, last) < tokens · top_k, the length of slots.
                *v = unsafe { *sc.slots.as_ptr().add((base + j0 + q as u32).min(last) as usize) };
            }
            for (q, &v) in s.iter().enumerate() {
                count += u32::from(j0 + (q as u32) < sc.top_k && v >= 0 && (v as u32) < sc.y_rows);
            }
            j0 += 8;
        }
        count
    }

    /// 16 bytes at device address `addr` (16-byte aligned) read at device scope: two relaxed
    /// system-scope atomic 8-byte loads (`global_load_dwordx2 … sc0 sc1` on gfx942), which see
    /// stores other workgroups made at device scope and released before an atomic this
    /// workgroup observed. Unlike a volatile load, no wait follows each.
    ///
    /// # Safety
    /// `addr` must be 16-byte aligned inside a live allocation this kernel may read.
    #[inline(always)]
    unsafe fn load16_device(addr: u64) -> U32x4 {
        use core::sync::atomic::{AtomicU64, Ordering};
        // SAFETY: the caller guarantees 16 aligned, readable bytes at addr.
        let (lo, hi) = unsafe {
            (
                AtomicU64::from_ptr(addr as usize as *mut u64).load(Ordering::Relaxed),
                AtomicU64::from_ptr((addr + 8) as usize as *mut u64).load(Ordering::Relaxed),
            )
        };
        U32x4([lo as u32, (lo >> 32) as u32, hi as u32, (hi >> 32) as u32])
    }

    /// Tokens with no valid slot (every id −1 or invalid): nothing counts them in, so in the
    /// launch of the first row chunk (`row0 = 0`) the workgroup whose id is `t` modulo `grid`
    /// writes `out[t] = bf16(0 + shared[t])` (0 without
    /// a shared expert), the unpermute's result for such a token.
    #[inline(always)]
    fn scatter_empty_tokens(sc: &MoeScatterArgs, n: u32, grid: u32) {
        let tid = workitem_id_x();
        let mut t = workgroup_id_x();
        while t < sc.tokens && grid > 0 {
            if valid_slots(sc, t) == 0 {
                let mut col = 8 * tid;
                while col < n {
                    // SAFETY: as in scatter_tile; with no valid slot `load` is never called.
                    unsafe {
                        crate::moe::imp::weighted_rows_to::<{ crate::moe::UNPERMUTE_BATCH as usize }>(
                            sc.slots.as_ptr(),
                            sc.weights.as_ptr(),
                            t,
                            sc.top_k,
                            0,
                            |_| U32x4([0; 4]),
                            sc.shared.addr(),
                            sc.out.addr(),
                            u64::from(n),
                            col,
                        )
                    };
                    col += 8 * tile::THREADS;
                }
            }
            t += grid;
        }
    }

    /// [`contiguous_splitk`] with the MoE activation epilogue ([`MoeSiluArgs`]): the tile of
    /// `d` (gate·up) is stored at device scope, then [`silu_tile`] runs for it.
    #[inline(always)]
    pub fn contiguous_silu<const FM: usize, L: TileLoop>(args: MGroupedContiguousSiluArgs) {
        contiguous_splitk_with::<FM, L>(&args.gemm, Epi::Silu(&args.silu));
    }

    /// The activation epilogue of one stored tile (rows `m0 .. m0 + bm` = row block `tm`,
    /// columns of tile `tn`; [`MoeSiluArgs`]): after a release of the tile's device-scope
    /// stores, one work-item counts the tile in on the counter of (block `tm`, act group
    /// `tn mod inter/128`); the second tile of the pair to arrive reads the block's gate and up
    /// columns of that group back (device scope) and, 16 work-items per row, writes
    /// `FP8(silu(gate)·up)` and the row's scale with the activation kernels' recipe, then
    /// re-arms the counter.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn silu_tile(sc: &MoeSiluArgs, d: u64, row_src: u64, bm: u32, m_sum: u32, n: u32, m0: u32, tm: u32, tn: u32) {
        release_barrier();
        let tid = workitem_id_x();
        let groups = sc.inter / 128;
        if groups == 0 || n != 2 * sc.inter {
            return;
        }
        let jg = tn % groups;
        let counter = sc.counters.addr() + (u64::from(tm) * u64::from(groups) + u64::from(jg)) * 4;
        if tid == 0 {
            // SAFETY: the counter of (tm, jg) lies in the (m_sum/bm) × groups counters, 4-byte
            // aligned, accessed only atomically during the launch.
            let old = unsafe { atomic_add_u32(counter, 1) };
            // SAFETY: LDS word 0, free after release_barrier's barrier.
            unsafe { lds_write_b32(0, old) };
        }
        lds_barrier();
        // SAFETY: written by work-item 0 before the barrier.
        let old = readfirstlane_u32(unsafe { lds_read_b32(0) });
        if old != 1 {
            return;
        }
        let (lane, r16) = (tid & 15, tid >> 4);
        let (n64, i64_) = (u64::from(n), u64::from(sc.inter));
        let col = jg * 128 + 8 * lane;
        for pass in 0..bm / 16 {
            let row = m0 + 16 * pass + r16;
            let ok = row < m_sum;
            // A padding row of the gathered layout (`row_src` −1; its A row was zero, so is
            // its d row) is written as the all-zero row without reading d back.
            let routed = ok
                && (row_src == 0 || {
                    // SAFETY: row < m_sum, the length of row_src (the gathered launch's row map).
                    let src = unsafe { *(row_src as usize as *const i32).add(row as usize) };
                    src >= 0
                });
            let mut v = [0f32; 8];
            if routed {
                let at = d + (u64::from(row) * n64 + u64::from(col)) * 2;
                // SAFETY: row < m_sum, col + 8 ≤ inter and inter + col + 8 ≤ n: both 16-byte
                // runs inside this launch's m_sum × n bf16 d, stored at device scope and
                // released before the counter said both tiles arrived.
                let (g, u) = unsafe { (bf16x8(load16_device(at)), bf16x8(load16_device(at + i64_ * 2))) };
                v = crate::quant::silu_mul8(&g, &u);
            }
            let amax_bits = row16_umax(if routed { crate::quant::imp::abs_bits_max(&v) } else { 0 });
            let (sf, inv, bad) = crate::quant::imp::scale_of(amax_bits, sc.fp8_max);
            if ok {
                let data = crate::quant::imp::convert8(&v, inv, sc.fp8_max, bad);
                let p = (sc.act.addr() + u64::from(row) * i64_ + u64::from(col)) as usize as *mut U32x2;
                // SAFETY: 8 bytes inside the m_sum × inter act, 8-byte aligned.
                unsafe { *p = data };
                if lane == 0 {
                    // SAFETY: (row, jg) indexes the m_sum × inter/128 scales.
                    unsafe { *sc.act_sf.as_mut_ptr().add((u64::from(row) * u64::from(groups) + u64::from(jg)) as usize) = sf };
                }
            }
        }
        if tid == 0 {
            // SAFETY: as for the increment; both increments of this pair have happened.
            unsafe { atomic_store_u32(counter, 0) };
        }
    }

    /// What a contiguous split-K workgroup does after its tile is stored.
    #[derive(Clone, Copy)]
    enum Epi<'a> {
        /// Nothing.
        None,
        /// The MoE scatter ([`scatter_tile`]).
        Scatter(&'a MoeScatterArgs),
        /// The MoE activation ([`silu_tile`]).
        Silu(&'a MoeSiluArgs),
    }

    /// The body of [`contiguous_splitk`], [`contiguous_scatter`] and [`contiguous_silu`].
    #[inline(always)]
    fn contiguous_splitk_with<const FM: usize, L: TileLoop>(args: &MGroupedContiguousSplitKArgs, epi_kind: Epi<'_>) {
        let (bm, bn, b_bytes) = dims::<FM, 2, true>(args.n, args.k);
        let (m, n, k, groups) = (args.m_sum, args.n, args.k, args.groups);
        let nkb = k / SCALE_BLOCK_K;
        let nb = n.div_ceil(SCALE_BLOCK_N);

        // The tiles of the rows in use only (`valid_rows`, when given): the grid's first
        // workgroups, which the hardware deals round-robin to the XCDs, take them.
        let rows_used = match args.valid_rows.addr() {
            0 => m,
            p => {
                let rs_v = BufferResource::new(p, 4);
                // SAFETY: valid_rows addresses one i32 (the host's contract), read-only during
                // the launch; the offset 0 is wave-uniform and 4-byte aligned.
                let v = unsafe { s_buffer_load_i32(rs_v, 0) };
                (v.max(0) as u32).saturating_sub(args.valid_base).min(m)
            }
        };
        let tiles_m = rows_used.div_ceil(bm);
        let tiles_n = n.div_ceil(bn);
        let (Some(splits), true) = (NonZeroU32::new(args.splits), tiles_m > 0) else {
            return;
        };
        let tiles = tiles_m * tiles_n;
        // More splits than K blocks, or (split) more tiles than the workspace has counters for:
        // not what the host launches; no work.
        if splits.get() > nkb || (splits.get() > 1 && tiles > tile::SPLITK_MAX_TILES) {
            return;
        }
        let grid = tiles * splits.get();
        let pid = workgroup_id_x();
        if pid >= grid {
            return;
        }
        // Split fastest (neighbouring logical ids, one XCD), as the dense split-K grid.
        let id = tile::xcd_remap(pid, grid, NUM_XCDS);
        let (t, j) = (id / splits, id % splits);
        let (tm, tn) = tile::tile_coords(t, tiles_m, tiles_n);
        let (m0, n0) = (tm * bm, tn * bn);

        let rs_idx = BufferResource::new(args.m_indices.addr(), m * 4);
        // SAFETY: rs_idx covers m_indices (m_sum i32, read-only during the launch); the offset is
        // wave-uniform and in range (m0 < m_sum), 4-byte aligned.
        let g = unsafe { s_buffer_load_i32(rs_idx, m0 * 4) };
        if g < 0 || g as u32 >= groups {
            return;
        }
        let g = g as u64;
        let (kb0, nkb_j) = tile::split_range(j, splits.get(), nkb);
        let sfb_bytes = nb * nkb * 4;
        let gathered = args.row_src.addr() != 0;
        let a_rows = if gathered { args.a_rows } else { m };
        // A loop that quantizes a bf16 A itself (`L::QA`) reads 2 bytes per element and no
        // SFA; it needs the row map (and the format's maximum, from the activation epilogue).
        let ab = if L::QA { 2 } else { 1 };
        let fp8_max = match epi_kind {
            Epi::Silu(sc) => sc.fp8_max,
            _ => 0.0,
        };
        if L::QA && (!gathered || fp8_max <= 0.0) {
            return;
        }
        let job = TileJob {
            rs_a: BufferResource::new(args.a.addr(), a_rows * k * ab),
            rs_sfa: BufferResource::new(args.sfa.addr(), if L::QA { 0 } else { a_rows * nkb * 4 }),
            rs_b: BufferResource::new(args.b.addr() + g * u64::from(b_bytes), b_bytes),
            rs_sfb: BufferResource::new(args.sfb.addr() + g * u64::from(sfb_bytes), sfb_bytes),
            n,
            lda: k * ab,
            ldb: k,
            ldsf: nkb,
            kb0,
            nkb: nkb_j,
            m0,
            n0,
            a_rows: if gathered { Some(ARowMap { rs_rows: BufferResource::new(args.row_src.addr(), m * 4), count: a_rows, fp8_max }) } else { None },
        };
        let g = g as i32;
        let keep_row = |row: u32| {
            // SAFETY: rs_idx as above; rows ≥ m_sum read 0, and their stores fall outside D's
            // resource anyway.
            unsafe { buffer_load_i32(rs_idx, row * 4, 0) == g }
        };
        let rs_d = || BufferResource::new(args.d.addr(), m * n * 2);
        let device = !matches!(epi_kind, Epi::None);
        let stored = if splits.get() == 1 {
            let epi = Bf16Store { device, ..Bf16Store::tile::<FM, 2, true>(rs_d(), n, n, m0, n0) };
            L::run(&job, &keep_row, &epi);
            true
        } else {
            // Workspace: the counters, then tiles × splits partial slots (the dense layout).
            let ws_bytes = tile::splitk_workspace_floats(tiles, splits.get(), bm, bn) as u32 * 4;
            let rs_ws = BufferResource::new(args.ws.addr(), ws_bytes);
            let slot = bm * bn * 4;
            let tile_base = tile::SPLITK_COUNTER_FLOATS as u32 * 4 + t * splits.get() * slot;
            let epi = PartialStore::<FM, 2, true> { rs_ws, base: tile_base + j * slot, m0, n0 };
            L::run(&job, |_| true, &epi);
            splitk_finish::<FM, 2, true>(SplitKUnit { ws_addr: args.ws.addr(), rs_ws, t, tile_base, slot, splits, rs_d, ldd: n, n, m0, n0 }, &keep_row, device)
        };
        if stored {
            match epi_kind {
                Epi::None => {}
                Epi::Scatter(sc) => scatter_tile(sc, bm, m, n, m0, n0, tn, &keep_row),
                Epi::Silu(sc) => silu_tile(sc, args.d.addr(), args.row_src.addr(), bm, m, n, m0, tm, tn),
            }
        }
    }
}

/// Contiguous layout, 64 × 64 tiles: few rows per expert, or a small problem.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_bm64_bn64(args: MGroupedContiguousArgs) {
    imp::contiguous::<2, 2, { crate::tile::CONTIGUOUS_TILES[0].prefetch_depth() }, false>(args)
}

/// Contiguous layout, 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_bm64_bn128(args: MGroupedContiguousArgs) {
    imp::contiguous::<2, 4, { crate::tile::CONTIGUOUS_TILES[1].prefetch_depth() }, false>(args)
}

/// Contiguous layout, 128 × 128 tiles: many rows (prefill).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_bm128_bn128(args: MGroupedContiguousArgs) {
    imp::contiguous::<4, 4, { crate::tile::CONTIGUOUS_TILES[2].prefetch_depth() }, false>(args)
}

/// Masked layout, 64 × 64 tiles: decode-sized groups.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_masked_bm64_bn64(args: MGroupedMaskedArgs) {
    imp::masked::<2, 2, { crate::tile::MASKED_TILES[0].prefetch_depth() }, false>(args)
}

/// Masked layout, 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_masked_bm64_bn128(args: MGroupedMaskedArgs) {
    imp::masked::<2, 4, { crate::tile::MASKED_TILES[1].prefetch_depth() }, false>(args)
}

/// Masked layout, 128 × 128 tiles: large groups.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_masked_bm128_bn128(args: MGroupedMaskedArgs) {
    imp::masked::<4, 4, { crate::tile::MASKED_TILES[2].prefetch_depth() }, false>(args)
}

/// Contiguous layout, pre-shuffled B (the bs loop), 32 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_bs_bm32_bn128(args: MGroupedContiguousArgs) {
    imp::contiguous::<2, 2, 2, true>(args)
}

/// Contiguous layout, pre-shuffled B, 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_bs_bm64_bn128(args: MGroupedContiguousArgs) {
    imp::contiguous::<4, 2, 1, true>(args)
}

/// Contiguous layout, pre-shuffled B, 128 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_bs_bm128_bn128(args: MGroupedContiguousArgs) {
    imp::contiguous::<8, 2, 1, true>(args)
}

/// Masked layout, pre-shuffled B (the bs loop), 32 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_masked_bs_bm32_bn128(args: MGroupedMaskedArgs) {
    imp::masked::<2, 2, 2, true>(args)
}

/// Masked layout, pre-shuffled B, 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_masked_bs_bm64_bn128(args: MGroupedMaskedArgs) {
    imp::masked::<4, 2, 1, true>(args)
}

/// Masked layout, pre-shuffled B, 128 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_masked_bs_bm128_bn128(args: MGroupedMaskedArgs) {
    imp::masked::<8, 2, 1, true>(args)
}

/// Masked layout, pre-shuffled B, split-K, 32 × 128 tiles: decode (few rows per group, long K).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_masked_splitk_bs_bm32_bn128(args: MGroupedMaskedSplitKArgs) {
    imp::masked_splitk::<2, 2>(args)
}

/// Masked layout, pre-shuffled B, split-K, 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_masked_splitk_bs_bm64_bn128(args: MGroupedMaskedSplitKArgs) {
    imp::masked_splitk::<4, 1>(args)
}

/// Contiguous layout, pre-shuffled B, split-K and/or gathered A, 32 × 128 tiles: MoE decode
/// (few rows per expert, long K) and the MoE layer's gate·up GEMM over the token rows.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm32_bn128(args: MGroupedContiguousSplitKArgs) {
    imp::contiguous_splitk::<2, imp::Loop<2, 2, 2, true>>(args)
}

/// Contiguous layout, pre-shuffled B, split-K and/or gathered A, 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm64_bn128(args: MGroupedContiguousSplitKArgs) {
    imp::contiguous_splitk::<4, imp::Loop<4, 2, 1, true>>(args)
}

/// Contiguous layout, pre-shuffled B, split-K, 32 × 128 tiles, with the MoE scatter epilogue
/// ([`MGroupedContiguousScatterArgs`]): the MoE layer's down GEMM and its unpermute in one launch.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_splitk_scatter_bs_bm32_bn128(args: MGroupedContiguousScatterArgs) {
    imp::contiguous_scatter::<2, imp::Loop<2, 2, 2, true>>(args)
}

/// The scatter kernel with 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_splitk_scatter_bs_bm64_bn128(args: MGroupedContiguousScatterArgs) {
    imp::contiguous_scatter::<4, imp::Loop<4, 2, 1, true>>(args)
}

/// Contiguous layout, pre-shuffled B, split-K and/or gathered A, 32 × 128 tiles, with the MoE
/// activation epilogue ([`MGroupedContiguousSiluArgs`]): the MoE layer's gate·up GEMM and its
/// `silu(gate)·up` quantization in one launch.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_bm32_bn128(args: MGroupedContiguousSiluArgs) {
    imp::contiguous_silu::<2, imp::Loop<2, 2, 2, true>>(args)
}

/// The silu kernel with 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_bm64_bn128(args: MGroupedContiguousSiluArgs) {
    imp::contiguous_silu::<4, imp::Loop<4, 2, 1, true>>(args)
}

/// [`m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm64_bn128`] on the pipelined bs loop (B two
/// blocks ahead, two workgroups per CU): many rows per expert.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_splitk_bs_pipe_bm64_bn128(args: MGroupedContiguousSplitKArgs) {
    imp::contiguous_splitk::<4, crate::grouped_pipe::imp::Pipe<4>>(args)
}

/// [`m_grouped_fp8_gemm_nt_contiguous_splitk_scatter_bs_bm64_bn128`] on the pipelined bs loop.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_splitk_scatter_bs_pipe_bm64_bn128(args: MGroupedContiguousScatterArgs) {
    imp::contiguous_scatter::<4, crate::grouped_pipe::imp::Pipe<4>>(args)
}

/// [`m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_bm64_bn128`] on the pipelined bs loop.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_pipe_bm64_bn128(args: MGroupedContiguousSiluArgs) {
    imp::contiguous_silu::<4, crate::grouped_pipe::imp::Pipe<4>>(args)
}

/// [`m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_bm32_bn128`] over the **bf16** token rows,
/// quantized in the A loads (`mainloop_bs::imp::tile_gemm_bs_q`; `a` is `a_rows × k` bf16,
/// `sfa` unused, `row_src` required): the MoE layer's decode gate·up GEMM without a quantize
/// launch.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_qa_bm32_bn128(args: MGroupedContiguousSiluArgs) {
    imp::contiguous_silu::<2, imp::LoopQa<2>>(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile::{CONTIGUOUS_BS_TILES, CONTIGUOUS_TILES, MASKED_BS_TILES, MASKED_SPLITK_BS_TILES, MASKED_TILES, THREADS};

    #[test]
    fn specs_match_the_tile_tables() {
        let c = [M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN64, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM128_BN128];
        for (spec, tile) in c.iter().zip(CONTIGUOUS_TILES) {
            assert_eq!(spec.name, tile.name);
            assert_eq!(spec.workgroup_size, THREADS);
        }
        let m = [M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN64, M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BM128_BN128];
        for (spec, tile) in m.iter().zip(MASKED_TILES) {
            assert_eq!(spec.name, tile.name);
            assert_eq!(spec.workgroup_size, THREADS);
        }
        let cb =
            [M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM64_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM128_BN128];
        for (spec, tile) in cb.iter().zip(CONTIGUOUS_BS_TILES) {
            assert_eq!(spec.name, tile.name);
            assert_eq!(spec.workgroup_size, THREADS);
        }
        let mb = [M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM128_BN128];
        for (spec, tile) in mb.iter().zip(MASKED_BS_TILES) {
            assert_eq!(spec.name, tile.name);
            assert_eq!(spec.workgroup_size, THREADS);
        }
        let ms = [M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM64_BN128];
        for (spec, tile) in ms.iter().zip(MASKED_SPLITK_BS_TILES) {
            assert_eq!(spec.name, tile.name);
            assert_eq!(spec.workgroup_size, THREADS);
        }
    }
}
