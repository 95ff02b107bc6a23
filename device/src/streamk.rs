//! Dense FP8 GEMM, **stream-K with a data-parallel head** (`fp8_gemm_nt_streamk_bm*_bn*`,
//! arguments [`DenseStreamKArgs`]): the product of [`crate::dense`] with the work balanced over
//! the device instead of quantized into waves of whole tiles.
//!
//! # Why
//!
//! A grid of one workgroup per tile runs in rounds ("waves") of `CUs · slots` workgroups; the
//! last round is usually partial (4096 × 2048 × 7168 at 128 × 128 is 512 tiles on 608 slots:
//! 96 CUs run one workgroup, 208 run two, and the launch takes as long as a CU running two
//! whole tiles). Stream-K deals the K iterations (tile × 128-K block) of the tail evenly to a
//! fixed number of workgroups, so every CU does the same work.
//!
//! # Schedule ([`StreamKSchedule`], the same math on host and device)
//!
//! The grid is `dp + g` workgroups (1-D), with `tiles = ⌈m/BM⌉·⌈n/BN⌉` output tiles in the
//! dense kernels' logical order ([`crate::tile::tile_coords`], panels of M tiles):
//! * **data-parallel head**: workgroups `0 .. dp` each compute one whole tile (logical tiles
//!   `0 .. dp`) and store bf16 directly, exactly like the dense kernels. The host chooses `dp`
//!   as whole waves' worth of tiles, so these run in full rounds first (the hardware dispatches
//!   in id order).
//! * **stream-K tail**: the remaining `T = tiles − dp` tiles have `T · nkb` K iterations
//!   (`nkb = k/128`), flattened tile-major (`i = t·nkb + kb`). Workgroup `dp + w` (`w < g`, after
//!   the XCD remap of [`crate::tile::xcd_remap`]) takes the contiguous range
//!   [`StreamKSchedule::range`]`(w)`: `⌊T·nkb/g⌋` iterations, one more for the first
//!   `T·nkb mod g` (the schedule requires `T ≤ g ≤ T·nkb`, so every range is non-empty and at
//!   most `nkb` long: it touches at most two tiles). The workgroup runs its range as one or two
//!   **pieces** (its iterations of one tile: one run of the shared main loop over that piece's
//!   K blocks), as straight-line code: a loop around the main loop let LLVM hoist the loop's
//!   per-lane values out of it and keep them live through the main loop (260 VGPRs for
//!   128 × 128 instead of 224, one workgroup per CU instead of two). A piece is:
//!   - a **whole** tile (the range covers all of its `nkb` blocks) stores bf16 directly;
//!   - a **partial** piece stores its FP32 accumulators (promotion domain, fragment order) to
//!     its workspace slot with device-scope stores, then arrives on the tile's counter; the
//!     last of the tile's contributors to arrive reduces.
//!
//! # Workspace (bounded, no per-tile fan-out table)
//!
//! The split-K layout's fixed region of [`crate::tile::SPLITK_COUNTER_FLOATS`] u32 arrival
//! counters (counter `t` for stream-K tile `t < T ≤` [`crate::tile::SPLITK_MAX_TILES`]), then
//! `g + T − 1` partial slots of `BM · BN` f32. The piece of workgroup `w` in tile `t` owns slot
//! `w + t`: walking the pieces in iteration order, each step moves to the next tile, the next
//! workgroup or both, so `w + t` strictly increases (a bijection onto at most `g + T − 1`
//! slots) and the contributors `w_first(t) ..= w_last(t)` of tile `t` own the **contiguous**
//! slots `w_first + t ..= w_last + t`, in K order. ([`StreamKSchedule::workspace_floats`].)
//!
//! # Reduction (the split-K protocol, [`crate::dense`] "Split-K")
//!
//! 1. every wave's partial stores are `sc1` (device scope); `s_waitcnt vmcnt(0)` + `s_barrier`
//!    (release), then work-item 0 adds 1 to the tile's counter and broadcasts the old value
//!    through LDS;
//! 2. the workgroup that sees `old + 1 = w_last − w_first + 1` (it arrived last) reads the
//!    contributors' slots with `sc1` loads **in K order** (slot `w_first + t` first: the sum is
//!    the same whatever the arrival order, so results are deterministic), multiplies by `2^60`,
//!    rounds to bf16, stores D with D's row stride, and sets the counter back to 0 (re-armed for
//!    the next launch or graph replay; no memset).
//!
//! No float or bf16 atomics: the only atomic is the u32 counter. The memory-ordering argument
//! (gfx942's non-coherent per-XCD L2s, `sc1` stores and loads, why no `buffer_wbl2` /
//! `buffer_inv` is needed) is split-K's, in [`crate::dense`]. A workgroup with more pieces runs
//! its second piece after an LDS barrier (every wave finished reading the previous piece's
//! last block and the arrival broadcast before the next prologue writes LDS).
//!
//! Like split-K, a partial tile's FP32 sum is taken in a different order than the unsplit
//! kernel's (per-piece partial sums, then their sum in K order), so a stream-K result is not
//! bit-identical to the data-parallel one; it is within the same accuracy, and bit-identical
//! run to run.
//!
//! The main loop is reached through the `imp::TileLoop` trait: `imp::DenseLoop` over
//! `dense::imp::tile_gemm` (the logical-B kernels above) and `imp::BsLoop` over
//! `mainloop_bs::imp::tile_gemm_bs` (B pre-shuffled straight to registers, 1 × 4 waves: the
//! **bs stream-K kernels** `fp8_gemm_nt_streamk_bs_bm{32,64}_bn128`, [`STREAMK_BS_TILES`], the
//! same loop variants as their split-K twins — `A2`, and `AHEAD` for the 32-row tile). The bs
//! loop is called only as `tile_gemm_bs(&job, keep_row, &epi)`, so a new bs loop behind that
//! interface is scheduled here unchanged. With `BS` the tile is `16·FM × 64·FN`, `rs_b` covers
//! the pre-shuffled B ([`tile::shuffled_b_bytes`]) and the partial slots and the reduction
//! use split-K's `BS` fragment order (wave `w` owns all rows and columns `32·w ..`). The
//! partial slot layout is a function of the position in the tile only (`frag_offset`), so it
//! does not depend on which lanes of which loop hold which accumulators.
//!
//! # Code objects (LLVM 22.1.4; `tests/dense_kernel.rs` re-checks them)
//!
//! | kernel | VGPR | AGPR | spills | scratch | LDS (dynamic) | waves/SIMD (regs) | WGs/CU (LDS) |
//! |---|---|---|---|---|---|---|---|
//! | `fp8_gemm_nt_streamk_bm64_bn64`   | 104 | 0 | 0 | 0 | 16 KiB | 4 | 4 |
//! | `fp8_gemm_nt_streamk_bm64_bn128`  | 146 | 0 | 0 | 0 | 24 KiB | 3 | 2 |
//! | `fp8_gemm_nt_streamk_bm128_bn128` | 224 | 0 | 0 | 0 | 32 KiB | 2 | 2 |
//! | `fp8_gemm_nt_streamk_bs_bm32_bn128` | 136 | 0 | 0 | 0 | 9 KiB | 3 | 7 |
//! | `fp8_gemm_nt_streamk_bs_bm64_bn128` | 188 | 0 | 0 | 0 | 18 KiB | 2 | 3 |
//! | `fp8_gemm_nt_streamk_bs_pipe_bm48_bn128` | 214 | 0 | 0 | 0 | 18 KiB | 2 | 3 |
//! | `fp8_gemm_nt_streamk_bs_pipe_bm64_bn128` | 224 | 0 | 0 | 0 | 18 KiB | 2 | 3 |
//!
//! (The bs stream-K kernels keep the waves per SIMD of the data-parallel bs kernels, 158 and
//! 238 VGPRs: 3 and 2 workgroups per CU; `tests/dense_kernel.rs`
//! `bs_streamk_kernels_meet_the_resource_goals`.)
//!
//! The **pipelined bs stream-K kernels** `fp8_gemm_nt_streamk_bs_pipe_bm{48,64}_bn128`
//! ([`STREAMK_BS_PIPE_TILES`], `imp::BsPipeLoop` over `mainloop_bs::imp::tile_gemm_bs_pipe`,
//! B two blocks ahead as the data-parallel `fp8_gemm_nt_bs_pipe_*` kernels) run two workgroups
//! per CU at 214 and 224 registers, no AGPRs, as their data-parallel twins (211 and 220) since
//! the loop's one-exit shape ([`crate::mainloop_bs`], "Loop shape"; with the former exit after
//! every step these kernels took 183 and 209 registers, 204 after the `llc` option of the
//! builder, their twins 250 and 294: one per CU); `tests/dense_kernel.rs`
//! `bs_pipe_streamk_kernels_meet_the_resource_goals` holds them at two. A whole tile costs the
//! same on either kernel (1024×2048×7168, 256 tiles of 64 rows, one per CU: data-parallel
//! 40.47 µs, stream-K `0 + 256` whole tiles 39.41, MI325X, *modelled*), so the stream-K kernel
//! with whole tiles only (`g = T`) is the 64-row data-parallel grid at two per CU: from 1.5
//! rounds of 64-row tiles on, it wins outright (2048×2048×7168: 69.3 against 78.9 µs).
//!
//! (A loop over pieces instead of the two straight-line pieces: 124 / 168 / 260 + 4 AGPRs —
//! one workgroup per CU at 128 × 128; with `waves_per_eu = 2` it spilled.) The kernel holds
//! five inlined copies of the main loop: the head's, and per piece a whole tile's (constant K
//! bounds, as the dense kernel) and a partial piece's (K bounds from the schedule). Whole tiles
//! run through the partial-piece code cost 5–9 % in the timing model (2432×2048×7168 64×128,
//! exactly one wave of whole tiles: 107.3 µs against the dense kernel's 98.7); through the
//! constant-bound copy 99.6.
//!
//! # Timing model (*modelled*, never measured; `fp8gemm profile`, MI300X, µs)
//!
//! Forced configs (`FP8GEMM_FORCE_TILE`, `FP8GEMM_FORCE_SPLIT`, `FP8GEMM_FORCE_STREAMK=G/DP`):
//!
//! | shape | data-parallel | split-K | stream-K |
//! |---|---|---|---|
//! | 1024×2048×7168 | 64×128 81.0; 64×64 70.4 | 64×128/2 60.8; 128×128/4 60.6 | 64×128 0+608 63.1, 0+512 61.8; 64×64 0+1216 64.0; 128×128 0+608 82.1 |
//! | 1408×2048×7168 | 64×64 84.2; 64×128 98.5 | 128×128/2 103.3 | 64×128 0+608 94.9 |
//! | 1664×768×7168 | 64×128 82.0 | 64×128/3 45.7 | 64×128 0+608 48.8; 64×64 0+1216 47.6 |
//! | 4096×2048×7168 | 128×128 182.6 | | 128×128 0+608 177.9 |
//! | 6144×768×7168 | 64×128 97.5 | 128×128/2 105.8 | 64×128 0+608 143.8 |
//! | 8192×2048×7168 | 64×128 381.2; 128×128 357.5 | | 64×128 1824+608 347.8 (356.4 before the constant-bound paths), 1824+448 363.4 |
//!
//! Where the data-parallel grid leaves CUs idle or half-used (1024 × 2048: 256 tiles of
//! 64 × 128 on 304 CUs, one workgroup each), stream-K fills every slot and gains 22 % over
//! that tile (and 10 % over the best data-parallel tile) — but split-K, whose tiles split
//! evenly, does as well or better. Where the last wave is nearly full (6144 × 768: 576 of 608
//! slots), stream-K splits almost every tile in two and loses 47 %. A tail block runs 1.3–2.1×
//! slower than a data-parallel block of the same tile in the model (`config`'s
//! `STREAMK_TAIL_FACTOR`): the second piece's prologue, the partial stores and reduction, and
//! the L2 sharing lost when the workgroups running together read different K ranges.
//!
//! Sanity check on shapes of an exact number of waves (64 × 128, 608 slots; no tile split, so
//! stream-K must cost what data-parallel costs): 2432×2048×7168 (one wave) stream-K 99.6 vs
//! data-parallel 98.7; 4864×2048×7168 (two waves: head 608, tail 608 whole tiles) 199.6 vs
//! 194.0 (measured before whole tail tiles took the constant-bound path, which the one-wave
//! shape shows is worth 4 %). Busy % ("CUs occupied") 97–99 % in both.
//!
//! The model therefore chooses stream-K only where its estimate wins (`config`).
//!
//! # The bs stream-K kernels on the timing model (*modelled*, MI325X, `--scope xcd`, µs)
//!
//! Forced (`FP8GEMM_PRESHUFFLED=1 FP8GEMM_FORCE_TILE=32x128 FP8GEMM_FORCE_STREAMK=G/DP`), the
//! cliffs of the data-parallel bs kernels (more tiles than two 32-row workgroups per CU):
//!
//! | shape | data-parallel | head 0, all tail | head + g (best forced) |
//! |---|---|---|---|
//! | 1280×2048×7168 (640 tiles) | 67.8 | g 912: 120.0 | 608 + 192: 54.5; 608 + 608: 57.4 |
//! | 1472×2048×7168 (736) | 67.5 | g 912: 127.5 | 608 + 256: 57.9; 608 + 304: 60.4 |
//! | 1856×2048×7168 (928) | 98.2 (64 × 128: 88.7) | – | 912 + 128: 74.3; 912 + 608: 80.7 |
//! | 1664×768×7168 (312) | 50.4 | g 608: 39.5 | 304 + 32: 38.1 |
//! | 640×2048×7168 (320) | 50.3 | – | 304 + 64: 38.2; 304 + 304: 42.6 |
//! | 256×7168×16384 (448) | 106.0 | g 912: 136.0 | 304 + 912: 124.2 (split-K 2: 77.4) |
//!
//! A tail of every tile (no head) is the worst: the workgroups running together start at
//! staggered K offsets, so they share little of the L2 (HBM traffic 174 against 138 MB at
//! 1280×2048×7168) — the 32-row tile re-reads B for every 32 rows and lives on that sharing. A
//! head of whole waves and a short tail, best with few contributors per tile (`g` a small
//! multiple of the tail tiles: aligned pieces that run in lock-step across tiles), removes the
//! cliffs. `config::get_bs_config_for_workspace` chooses among these by a fitted estimate.
//!
//! # The pipelined bs stream-K kernels on the timing model (*modelled*, `--scope xcd`, µs)
//!
//! Forced (`FP8GEMM_PRESHUFFLED=1 FP8GEMM_FORCE_TILE=BMx128 FP8GEMM_FORCE_STREAMK=G/DP`; MI325X
//! unless stated), against the pipelined data-parallel kernel the host chose before:
//!
//! | shape | data-parallel (before) | pipelined stream-K, `head + g` |
//! |---|---|---|
//! | 2048×2048×7168 (512 tiles of 64 rows) | 78.9 (64, one per CU) | 64: 0 + 512 (whole tiles, two per CU) 69.3; 48: 608 + 160 78.3 |
//! | 1856×2048×7168 (464) | 74.7 (32-row stream-K 912 + 128) | 64: 0 + 464 69.4, 304 + 160 69.0, 304 + 320 76.6, 0 + 608 (staggered) 116.7 |
//! | 4096×2048×7168 (1024) | 146.8 (48) | 64: 912 + 224 (112 tail tiles in 2 pieces) 119.9, 912 + 112 132.4, 912 + 448 123.0 |
//! | 8192×2048×7168 (2048) | 262.8 (48) | 64: 1824 + 224 227.7; 48: 2432 + 304 258.6 |
//! | 14336×768×7168 (1344) | 174.9 (48) | 64: 1216 + 256 152.0, 1216 + 128 164.3 |
//! | 4096×4096×7168 MI300X (2048) | 285.9 (48) | 64: 1824 + 224 228.2 |
//! | 1728×2048×7168 (432) | 59.8 (96) | 64: 304 + 256 56.3, 0 + 432 69.2 |
//! | 1664×768×7168 (156 / 210) | 35.3 (48) | 64: 0 + 304 (staggered) 33.9, 0 + 312 40.2; 48: 0 + 304 42.8, 0 + 420 38.9 |
//! | 768×2048×7168 (192 / 256) | 35.3 (48) | 48: 0 + 256 35.2, 0 + 304 54.7, 0 + 608 48.6; 64: 0 + 304 44.7 |
//!
//! What wins is **occupancy**, not balance: the 64-row stream-K kernel runs two workgroups per
//! CU (209 registers) where the 64-row data-parallel kernel runs one (304), so whole tiles on
//! it, after a head of whole waves, take the fractional rounds and the many-round shapes
//! (4096–14336 rows) that the 48-row kernel ran before; a short tail split into 2–4 aligned
//! pieces per tile evens out the last round. Stream-K proper — a tail dealt evenly over every
//! CU — loses wherever the pieces are staggered: the workgroups running together read
//! different K ranges and the L2 stops serving them (768×2048×7168: 54.7 µs for 304 workgroups
//! against 35.2 for the 256 whole tiles; 1856×2048×7168 116.7 against 69.4). The one-partial-
//! round shapes (640–896 × 2048, 1664–2048 × 768: 200–300 tiles of 48 rows on 304 CUs) stay
//! data-parallel: a second workgroup on a CU adds little (48 rows: 0.51 µs per block alone,
//! 0.90 for two), so splitting their tiles in aligned pieces does not pay (1664×768×7168 48
//! rows 0 + 420: 38.9 against 35.3), and a staggered tail loses the L2. The candidates and
//! their estimate: `fp8gemm::config` (`bs_pipe_streamk_candidates`, `bs_pipe_streamk_estimate`:
//! aligned tails only, fit table there).
//!
//! **What a piece costs** (that fit, 95 forced runs): every workgroup of these kernels, whole
//! tile or piece, costs its blocks plus about 8 blocks' worth (its exposed prologue and
//! epilogue: 8 × 0.58 = 4.6 µs alone on a CU, 8 × 1.05 = 8.4 µs when two share it), and a
//! partial piece about 4 blocks more (partial stores, release, arrival, the last arriver's
//! reduction: 2.3 / 4.2 µs). A tile split in `c` pieces therefore pays `c − 1` extra prologues
//! and `c` partial hand-offs, which short pieces do not earn back (4096×2048×7168: 112 tail
//! tiles in 2 pieces of 28 blocks 119.9 µs, in 4 of 14 blocks 123.0).
//!
//! `FP8GEMM_PEERS_DIR=… FP8GEMM_PRESHUFFLED=1 fp8gemm compare --set peers` (the library's
//! choice, *modelled* MI325X µs, and the ratio to AMD's measured TFLOPS), before (main at
//! d14831b, `docs/perf/compare_preshuffled.txt`) → after, every row that moved by 1 % or more
//! (none got slower; the choices under the stream's default 32 MiB workspace, which is what
//! turns 6144×768 from `0 + 576` into `304 + 272` and 14336×2048 from `3040 + 544` into
//! `3344 + 240`, each within 0.3 % of the other):
//!
//! | shape | before (config) | after (config) | ratio to AMD |
//! |---|---|---|---|
//! | 4096×768×7168 | 59.37 (bs 96x128 pipe) | 56.29 (bs 64x128 pipe sk 304+160) | 0.96 → 1.02 |
//! | 6144×768×7168 | 79.07 (bs 64x128 pipe) | 69.71 (bs 64x128 pipe sk 304+272) | 0.94 → 1.07 |
//! | 14336×768×7168 | 174.94 (bs 48x128 pipe) | 152.04 (bs 64x128 pipe sk 1216+256) | 0.98 → 1.13 |
//! | 928×2048×7168 | 40.42 (bs 64x128 pipe) | 39.17 (bs 64x128 pipe sk 0+240) | 0.96 → 0.99 |
//! | 960×2048×7168 | 40.42 (bs 64x128 pipe) | 39.22 (bs 64x128 pipe sk 0+240) | 0.92 → 0.95 |
//! | 992×2048×7168 | 40.44 (bs 64x128 pipe) | 39.18 (bs 64x128 pipe sk 0+256) | 0.92 → 0.95 |
//! | 1024×2048×7168 | 40.44 (bs 64x128 pipe) | 39.25 (bs 64x128 pipe sk 0+256) | 0.98 → 1.01 |
//! | 1152×2048×7168 | 40.74 (bs 64x128 pipe) | 39.61 (bs 64x128 pipe sk 0+288) | 0.97 → 1.00 |
//! | 1216×2048×7168 | 40.95 (bs 64x128 pipe) | 39.81 (bs 64x128 pipe sk 0+304) | 1.03 → 1.06 |
//! | 1280×2048×7168 | 50.91 (bs 80x128 pipe) | 48.34 (bs 48x128 pipe sk 304+256) | 0.89 → 0.94 |
//! | 1344×2048×7168 | 51.07 (bs 80x128 pipe) | 49.32 (bs 48x128 pipe sk 304+288) | 0.96 → 0.99 |
//! | 1408×2048×7168 | 51.30 (bs 80x128 pipe) | 49.75 (bs 64x128 pipe sk 304+192) | 0.97 → 1.00 |
//! | 1472×2048×7168 | 51.58 (bs 80x128 pipe) | 49.84 (bs 64x128 pipe sk 304+256) | 0.97 → 1.00 |
//! | 1536×2048×7168 | 59.35 (bs 96x128 pipe) | 56.29 (bs 64x128 pipe sk 304+160) | 0.94 → 0.99 |
//! | 1600×2048×7168 | 59.52 (bs 96x128 pipe) | 56.55 (bs 64x128 pipe sk 304+192) | 0.94 → 0.98 |
//! | 1664×2048×7168 | 59.84 (bs 96x128 pipe) | 56.35 (bs 64x128 pipe sk 304+224) | 0.96 → 1.01 |
//! | 1728×2048×7168 | 59.84 (bs 96x128 pipe) | 56.55 (bs 64x128 pipe sk 304+256) | 0.96 → 1.02 |
//! | 1792×2048×7168 | 60.17 (bs 96x128 pipe) | 57.34 (bs 64x128 pipe sk 304+288) | 0.97 → 1.02 |
//! | 1856×2048×7168 | 74.68 (bs 32x128 sk 912+128) | 69.31 (bs 64x128 pipe sk 0+464) | 0.91 → 0.99 |
//! | 1920×2048×7168 | 78.85 (bs 64x128 pipe) | 69.27 (bs 64x128 pipe sk 0+480) | 0.86 → 0.98 |
//! | 1984×2048×7168 | 78.88 (bs 64x128 pipe) | 69.36 (bs 64x128 pipe sk 0+496) | 0.90 → 1.02 |
//! | 2048×2048×7168 | 78.89 (bs 64x128 pipe) | 69.27 (bs 64x128 pipe sk 0+512) | 0.89 → 1.01 |
//! | 4096×2048×7168 | 146.75 (bs 48x128 pipe) | 120.01 (bs 64x128 pipe sk 912+224) | 0.89 → 1.08 |
//! | 6144×2048×7168 | 202.40 (bs 48x128 pipe) | 177.12 (bs 64x128 pipe sk 1520+64) | 0.94 → 1.07 |
//! | 8192×2048×7168 | 262.80 (bs 48x128 pipe) | 227.71 (bs 64x128 pipe sk 1824+224) | 0.93 → 1.08 |
//! | 10240×2048×7168 | 341.86 (bs 48x128 pipe) | 278.56 (bs 64x128 pipe sk 2432+256) | 0.88 → 1.08 |
//! | 12288×2048×7168 | 398.75 (bs 48x128 pipe) | 335.28 (bs 64x128 pipe sk 3040+128) | 0.90 → 1.07 |
//! | 14336×2048×7168 | 455.09 (bs 48x128 pipe) | 386.56 (bs 64x128 pipe sk 3344+240) | 0.86 → 1.01 |
//! | 16384×2048×7168 | 519.88 (bs 48x128 pipe) | 438.49 (bs 64x128 pipe sk 3952+288) | 0.89 → 1.05 |
//! | 32768×2048×7168 | 1020.60 (bs 48x128 pipe) | 863.26 (bs 64x128 pipe sk 7904+288) | 0.89 → 1.05 |
//!
//! Geometric mean over the 47 shapes 0.930× → 0.986× AMD's measured TFLOPS (goal 1.1×), lowest
//! 0.860× (1920×2048×7168) → 0.867× (640×2048×7168, unchanged: one partial round of 48-row
//! tiles, above). Shapes of the estimate's fit (`fp8gemm::config::bs_pipe_streamk_estimate`):
//! 1664, 1792, 1920, 2048, 4096, 6144 × 768 and 640, 768, 896, 1024, 1216, 1472, 1728, 1856,
//! 1984, 4096 × 2048 (× 7168); every other row here was held out — among them the gains at
//! 928–1152, 1920, 2048 and 6144–32768 × 2048 and 14336 × 768.
//!
//! `--set deepseek` (MI300X, *modelled* µs; ratio to AITER CK's published TFLOPS where there
//! is one), rows that moved by 1 % or more:
//!
//! | shape | before (config) | after (config) | ratio to AITER |
//! |---|---|---|---|
//! | 4096×2112×7168 | 146.37 (bs 48x128 pipe) | 132.50 (bs 64x128 pipe sk 608+480) | 1.00 → 1.11 |
//! | 4096×4096×7168 | 285.87 (bs 48x128 pipe) | 227.95 (bs 64x128 pipe sk 1824+224) | – |
//! | 4096×7168×2048 | 168.05 (bs 48x128 pipe) | 147.85\* (bs 64x128 pipe sk 3344+240) | 0.86 → 0.98 |
//! | 128×7168×16384 | 54.64 (bs 32x128 split 4) | 59.20 (bs 32x128 split 4, the same config) | – |
//!
//! (\*: the stream's default 32 MiB workspace; with more, 3040 + 544, 147.97 by `profile`.
//! 128×24576×1536 keeps the 48-row kernel, 19.89 by `profile` with the final choice rule,
//! 19.81 before; the `compare` run above was made before that rule and had taken a two-loop
//! stream-K, 27.63. 128×7168×16384 is the split-K kernel this
//! change does not touch, chosen as before; its modelled time moves with the code object's
//! layout — main's notes record 61.67 → 55.36 → 60.12 for it across changes — and
//! `profile --scope xcd` gives 47.9: not investigated.) The two 4096-row shapes with an AITER
//! figure are now at 1.11× and 0.98×; 128×7168×2048 stays at 0.83× (split-K, below one tile per
//! CU, untouched).
//!
//! # `fp8gemm compare --set peers` before → after (*modelled* MI325X µs vs AMD's measured)
//!
//! Every row of `measured_mi325x.csv`, the library's own choice with the stream's default
//! 32 MiB workspace; "before" is main's `docs/perf/compare.txt`. Rows that moved by 1 % or more
//! (the config choice changed: stream-K, the last-round estimate, the calibrated split-K
//! estimate):
//!
//! | shape | before | after (config) | ratio to AMD |
//! |---|---|---|---|
//! | 14336×768×7168 | 286.73 | 236.21 (stream-K 64×128, 1216 + 608 over 128 tiles) | 0.60 → 0.72 |
//! | 1344×2048×7168 | 78.69 | 75.16 (split-K 64×64 / 3) | 0.62 → 0.65 |
//! | 1408×2048×7168 | 84.91 | 83.32 (64×64) | 0.58 → 0.60 |
//! | 1472×2048×7168 | 83.29 | 86.69 (64×64, was split) | 0.60 → 0.57 |
//! | 1792×2048×7168 | 83.89 | 85.65 (64×64, was split) | 0.70 → 0.68 |
//! | 1856×2048×7168 | 103.70 | 98.55 (64×128) | 0.66 → 0.69 |
//! | 1920×2048×7168 | 103.77 | 97.85 (64×128) | 0.65 → 0.69 |
//! | 6144×2048×7168 | 285.01 | 270.98 (stream-K 64×128, 1216 + 608 over 320 tiles) | 0.67 → 0.70 |
//! | 8192×2048×7168 | 357.48 | 342.13 (stream-K 64×128, 1824 + 608 over 224 tiles) | 0.69 → 0.72 |
//! | 10240×2048×7168 | 470.90 | 378.16 (stream-K 128×128, 1216 + 304 over 64 tiles) | 0.64 → 0.80 |
//! | 12288×2048×7168 | 527.90 | 504.44 (stream-K 64×128, 3040 + 304 over 32 tiles) | 0.68 → 0.71 |
//! | 16384×2048×7168 | 674.22 | 614.68 (128×128, last round at its own sharing) | 0.69 → 0.75 |
//!
//! Geometric mean over the 47 shapes 0.690× → 0.701× AMD's measured TFLOPS (goal 1.1×);
//! lowest 0.584× → 0.575× (1472×2048×7168, where the calibrated split-K estimate now prefers
//! the data-parallel 64 × 64 tile, 4 % slower in the model). The whole table:
//! `docs/perf/compare_peers_streamk.txt`. Stream-K is not what stands between these kernels and
//! the peers: their main loop is (the data-parallel 128 × 128 kernel runs 4096×2048×7168 at
//! 0.71× with a 90 % full device).

use crate::amdgpu_kernel;
use crate::args::GlobalPtr;
use crate::tile::{self, DenseTile};

/// Arguments of the dense stream-K FP8 GEMM kernels (symbols `fp8_gemm_nt_streamk_bm*_bn*`):
/// the product of [`crate::args::DenseGemmArgs`], scheduled as `dp_tiles` data-parallel tiles
/// followed by a stream-K tail over `sk_wgs` workgroups (module docs).
///
/// Operands and requirements are those of [`crate::args::DenseGemmArgs`], plus (checked by the
/// host, [`StreamKSchedule::new`]): `dp_tiles < tiles`, `T ≤ sk_wgs ≤ T·k/128` with
/// `T = tiles − dp_tiles`,
/// `tiles − dp_tiles ≤` [`tile::SPLITK_MAX_TILES`], and a workspace of at least
/// [`StreamKSchedule::workspace_floats`] f32 (below 2^31 bytes) whose first
/// [`tile::SPLITK_COUNTER_FLOATS`] words are 0 at launch (a zeroed allocation; every completed
/// launch leaves them 0). A launch violating them does no work. The grid is 1-D with
/// `dp_tiles + sk_wgs` workgroups of 256 work-items.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DenseStreamKArgs {
    /// A, `m × k` FP8 bytes, rows `lda` bytes apart.
    pub a: GlobalPtr<u8>,
    /// B, `n × k` FP8 bytes.
    pub b: GlobalPtr<u8>,
    /// SFA, `m × ⌈k/128⌉` f32.
    pub sfa: GlobalPtr<f32>,
    /// SFB, `⌈n/128⌉ × ⌈k/128⌉` f32.
    pub sfb: GlobalPtr<f32>,
    /// D, `m × n` bf16 (as raw `u16` bits), rows `ldd` elements apart.
    pub d: GlobalPtr<u16>,
    /// Workspace: arrival counters (u32) followed by the FP32 partial slots.
    pub ws: GlobalPtr<f32>,
    /// Rows of A and D.
    pub m: u32,
    /// Rows of B, columns of D.
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Row stride of A in bytes (`≥ k`, a multiple of 16).
    pub lda: u32,
    /// Row stride of D in elements (`≥ n`, a multiple of 4).
    pub ldd: u32,
    /// Tiles computed data-parallel (one workgroup each) before the stream-K tail.
    pub dp_tiles: u32,
    /// Workgroups sharing the stream-K tail.
    pub sk_wgs: u32,
    /// Reserved, must be 0 (keeps the struct a multiple of 8 bytes).
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<DenseStreamKArgs>() == 80);

/// The stream-K schedule of one launch: which K iterations each stream-K workgroup runs, which
/// workgroups contribute to each tile, and the workspace slots (module docs). Pure integer
/// math shared by the kernels and the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamKSchedule {
    /// All output tiles of the problem.
    pub tiles: u32,
    /// 128-K blocks per tile (`k / 128`).
    pub nkb: u32,
    /// Tiles computed data-parallel.
    pub dp_tiles: u32,
    /// Stream-K workgroups.
    pub sk_wgs: u32,
    /// `⌊T·nkb / g⌋` (≥ 1).
    q: u32,
    /// `T·nkb mod g`.
    r: u32,
}

/// Why a stream-K schedule is not possible (the host turns it into a typed error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKScheduleError {
    /// `dp_tiles ≥ tiles`: no tile left for the stream-K tail.
    NoTail,
    /// More stream-K tiles than the workspace has counters for ([`tile::SPLITK_MAX_TILES`]).
    TooManyTiles,
    /// `sk_wgs` is below the tail's tile count (a workgroup would span more than two tiles) or
    /// above its K iterations (some workgroup would get none).
    Workgroups,
    /// The iteration count or the slot count does not fit in 32 bits.
    Overflow,
}

impl StreamKSchedule {
    /// The schedule of `tiles` tiles of `nkb` K blocks with `dp_tiles` data-parallel tiles and
    /// `sk_wgs` stream-K workgroups, if valid.
    #[inline(always)]
    pub const fn new(tiles: u32, nkb: u32, dp_tiles: u32, sk_wgs: u32) -> Result<Self, StreamKScheduleError> {
        if dp_tiles >= tiles {
            return Err(StreamKScheduleError::NoTail);
        }
        let t = tiles - dp_tiles;
        if t > tile::SPLITK_MAX_TILES {
            return Err(StreamKScheduleError::TooManyTiles);
        }
        let iters = t as u64 * nkb as u64;
        if iters >= u32::MAX as u64 || (sk_wgs as u64 + t as u64) > u32::MAX as u64 {
            return Err(StreamKScheduleError::Overflow);
        }
        if sk_wgs < t || sk_wgs as u64 > iters {
            return Err(StreamKScheduleError::Workgroups);
        }
        let iters = iters as u32;
        Ok(StreamKSchedule { tiles, nkb, dp_tiles, sk_wgs, q: iters / sk_wgs, r: iters % sk_wgs })
    }

    /// Tiles of the stream-K tail (`tiles − dp_tiles`).
    #[inline(always)]
    pub const fn sk_tiles(&self) -> u32 {
        self.tiles - self.dp_tiles
    }

    /// Workgroups of the launch's 1-D grid (`dp_tiles + sk_wgs`).
    #[inline(always)]
    pub const fn grid(&self) -> u32 {
        self.dp_tiles + self.sk_wgs
    }

    /// K iterations of stream-K workgroup `w`: `(first, count)` in the flattened tail
    /// (`i = t·nkb + kb`), contiguous, as even as possible (the first `T·nkb mod g` get one
    /// more).
    #[inline(always)]
    pub const fn range(&self, w: u32) -> (u32, u32) {
        let extra = if w < self.r { w } else { self.r };
        (w * self.q + extra, self.q + if w < self.r { 1 } else { 0 })
    }

    /// The stream-K workgroup whose range holds iteration `i`.
    #[inline(always)]
    pub const fn wg_of(&self, i: u32) -> u32 {
        let big = self.r * (self.q + 1);
        if i < big {
            i / (self.q + 1)
        } else {
            // q ≥ 1 (checked by `new`).
            self.r + (i - big) / if self.q == 0 { 1 } else { self.q }
        }
    }

    /// The first and last stream-K workgroups that run iterations of tail tile `t` (K order).
    #[inline(always)]
    pub const fn contributors(&self, t: u32) -> (u32, u32) {
        (self.wg_of(t * self.nkb), self.wg_of((t + 1) * self.nkb - 1))
    }

    /// Workspace slots (`BM · BN` f32 each) after the counter region: `g + T − 1`.
    #[inline(always)]
    pub const fn slots(&self) -> u32 {
        self.sk_wgs + self.sk_tiles() - 1
    }

    /// f32 elements of workspace the launch needs for `bm × bn` tiles: the counter region, then
    /// [`Self::slots`] partial tiles.
    pub const fn workspace_floats(&self, bm: u32, bn: u32) -> u64 {
        tile::SPLITK_COUNTER_FLOATS + self.slots() as u64 * bm as u64 * bn as u64
    }
}

/// The bs stream-K kernels (B pre-shuffled, `fp8_gemm_nt_streamk_bs_bm*_bn128`), the 32- and
/// 64-row tiles of [`tile::DENSE_BS_TILES`] (the same loop variants as their split-K twins).
pub const STREAMK_BS_TILES: [tile::BsTile; 2] = [
    tile::BsTile { name: "fp8_gemm_nt_streamk_bs_bm32_bn128", block_m: 32, block_n: 128, lds_stages: 2 },
    tile::BsTile { name: "fp8_gemm_nt_streamk_bs_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 },
];

/// The bs stream-K kernels on the **pipelined** bs loop (`fp8_gemm_nt_streamk_bs_pipe_bm*_bn128`,
/// [`crate::mainloop_bs`] "Pipelined loop"), the 48- and 64-row tiles of
/// [`tile::DENSE_BS_PIPE_TILES`] (same LDS: [`tile::bs_pipe_lds_bytes`]).
pub const STREAMK_BS_PIPE_TILES: [tile::BsTile; 2] = [
    tile::BsTile { name: "fp8_gemm_nt_streamk_bs_pipe_bm48_bn128", block_m: 48, block_n: 128, lds_stages: 2 },
    tile::BsTile { name: "fp8_gemm_nt_streamk_bs_pipe_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 },
];

/// The dense stream-K kernels, same tiles as [`tile::DENSE_TILES`].
pub const STREAMK_TILES: [DenseTile; 3] = [
    DenseTile { name: "fp8_gemm_nt_streamk_bm64_bn64", block_m: 64, block_n: 64 },
    DenseTile { name: "fp8_gemm_nt_streamk_bm64_bn128", block_m: 64, block_n: 128 },
    DenseTile { name: "fp8_gemm_nt_streamk_bm128_bn128", block_m: 128, block_n: 128 },
];

#[cfg(target_arch = "amdgpu")]
pub(crate) mod imp {
    use core::num::NonZeroU32;

    use super::{DenseStreamKArgs, StreamKSchedule};
    use crate::dense::imp::{Bf16Store, Epilogue, PartialStore, TileJob, tile_dims, tile_gemm};
    use crate::intrinsics::*;
    use crate::mainloop_bs::imp::{tile_gemm_bs, tile_gemm_bs_pipe};
    use crate::tile::{self, NUM_XCDS, SCALE_BLOCK_K, SCALE_BLOCK_N};

    /// Out of range of every resource (all tensors are smaller than `MAX_TENSOR_BYTES`).
    const PARKED: u32 = tile::MAX_TENSOR_BYTES as u32;

    /// A main loop: one tile over a job's K blocks into an epilogue. Stream-K is generic over
    /// it, so any loop with the `TileJob` / `Epilogue` interface can be scheduled.
    pub(crate) trait TileLoop {
        /// Runs the tile.
        fn run<E: Epilogue>(job: &TileJob, epi: &E);
    }

    /// The dense kernels' main loop (`dense::imp::tile_gemm`).
    pub(crate) struct DenseLoop<const FM: usize, const FN: usize, const DEPTH: u32>;

    impl<const FM: usize, const FN: usize, const DEPTH: u32> TileLoop for DenseLoop<FM, FN, DEPTH> {
        #[inline(always)]
        fn run<E: Epilogue>(job: &TileJob, epi: &E) {
            tile_gemm::<FM, FN, DEPTH, E>(job, |_| true, epi)
        }
    }

    /// The bs main loop (`mainloop_bs::imp::tile_gemm_bs`: B pre-shuffled, straight to
    /// registers; `16·FM × 128` tiles, 1 × 4 waves), as the bs split-K kernels run it (`A2`,
    /// and `AHEAD` for the 32-row tile). Called only through `tile_gemm_bs(&job, keep_row,
    /// &epi)`, so any loop behind that interface is scheduled unchanged.
    pub(crate) struct BsLoop<const FM: usize, const AHEAD: bool>;

    impl<const FM: usize, const AHEAD: bool> TileLoop for BsLoop<FM, AHEAD> {
        #[inline(always)]
        fn run<E: Epilogue>(job: &TileJob, epi: &E) {
            tile_gemm_bs::<FM, true, AHEAD, E>(job, |_| true, epi)
        }
    }

    /// The pipelined bs loop (`mainloop_bs::imp::tile_gemm_bs_pipe`: `16·FM × 128` tiles, 1 × 4
    /// waves, B `BA` blocks ahead), as the data-parallel `fp8_gemm_nt_bs_pipe_*` kernels run it.
    /// Called only through `tile_gemm_bs_pipe(&job, keep_row, &epi)`: it honours the job's
    /// `kb0` / `nkb`, so a piece is one run of the loop over its K blocks.
    pub(crate) struct BsPipeLoop<const FM: usize, const BA: u32>;

    impl<const FM: usize, const BA: u32> TileLoop for BsPipeLoop<FM, BA> {
        #[inline(always)]
        fn run<E: Epilogue>(job: &TileJob, epi: &E) {
            tile_gemm_bs_pipe::<FM, 2, BA, 1, E>(job, |_| true, epi)
        }
    }

    /// The epilogue of one piece: bf16 to D (a whole tile) or FP32 partial to the workspace.
    /// One call site of the main loop serves both (a wave-uniform branch per store).
    struct PieceStore<const FM: usize, const FN: usize, const BS: bool> {
        partial: bool,
        direct: Bf16Store,
        part: PartialStore<FM, FN, BS>,
    }

    impl<const FM: usize, const FN: usize, const BS: bool> Epilogue for PieceStore<FM, FN, BS> {
        #[inline(always)]
        fn begin(&self) {
            if !self.partial {
                self.direct.begin();
            }
        }

        #[inline(always)]
        fn finish(&self, keep_row: impl Fn(u32) -> bool) {
            if !self.partial {
                self.direct.finish(keep_row);
            }
        }

        #[inline(always)]
        fn store(&self, row: u32, col: u32, valid: bool, acc: F32x4) {
            if self.partial {
                self.part.store(row, col, valid, acc);
            } else {
                self.direct.store(row, col, valid, acc);
            }
        }
    }

    /// Sums `count` partial slots of one tile ([`tile_dims`], f32 in fragment order) starting
    /// at byte `base` of `rs_ws`, **in slot order**, and stores the bf16 result of tile
    /// `(m0, n0)` to D (the split-K reduction, [`crate::dense`]). Work-item (wave, lane) reads
    /// back the values at the fragment positions it owns: 1 KiB contiguous per wave and
    /// fragment (with `BS` wave `w` owns all rows and column block `w`).
    #[inline(always)]
    fn reduce_slots<const FM: usize, const FN: usize, const BS: bool>(rs_ws: BufferResource, base: u32, count: u32, m0: u32, n0: u32, n: u32, out: &Bf16Store) {
        let (bm, bn) = tile_dims(FM, FN, BS);
        let slot = bm * bn * 4;
        let tid = workitem_id_x();
        let lane = tid & 63;
        let wave = tid >> 6;
        let (wm, wn) = if BS { (0, wave) } else { (wave & 1, wave >> 1) };
        let lane_base = (wave * (FM * FN) as u32 * 64 + lane) * 16;
        // Slots are read CHUNK at a time: all of a chunk's loads are issued before the first
        // add waits (one memory latency per chunk), within the tile's register budget
        // (16 / 32 / 32 `dwordx4`, as split-K).
        let sum = crate::dense::imp::sum_slots::<FM, FN, 4>(rs_ws, base, lane_base, slot, count, if FM * FN >= 16 { 2 } else { 4 });
        let out = out.at(m0, n0);
        // begin: every wave has read the arrival word (LDS 0..16) before anyone overwrites it.
        out.begin();
        for fm in 0..FM {
            let row = m0 + 16 * (wm * FM as u32 + fm as u32) + (lane & 15);
            for fnn in 0..FN {
                let col = n0 + 16 * (wn * FN as u32 + fnn as u32) + 4 * (lane >> 4);
                out.store(row, col, col < n, sum[fm][fnn]);
            }
        }
        out.finish(|_| true);
    }

    /// The dense stream-K kernels (module docs): data-parallel head, then the stream-K tail,
    /// over the main loop `L` of [`tile_dims`] tiles. `BS`: `L` is a bs loop (B pre-shuffled,
    /// `args.b` holds [`tile::shuffled_b_bytes`], 1 × 4 waves).
    #[inline(always)]
    pub(crate) fn gemm_streamk<L: TileLoop, const FM: usize, const FN: usize, const BS: bool>(args: DenseStreamKArgs) {
        let (bm, bn) = tile_dims(FM, FN, BS);
        let (m, n, k, lda, ldd) = (args.m, args.n, args.k, args.lda, args.ldd);
        let nkb = k / SCALE_BLOCK_K;
        let tiles_m = m.div_ceil(bm);
        let tiles_n = n.div_ceil(bn);
        let tiles = tiles_m * tiles_n;
        // Invalid schedules (the host never launches them) do no work.
        let Ok(sched) = StreamKSchedule::new(tiles, nkb, args.dp_tiles, args.sk_wgs) else { return };
        let (Some(nkb_nz), Some(_)) = (NonZeroU32::new(nkb), NonZeroU32::new(tiles_m)) else { return };
        let dp = sched.dp_tiles;
        let pid = workgroup_id_x();
        if pid >= sched.grid() {
            return;
        }
        let counters = tile::SPLITK_COUNTER_FLOATS as u32;
        let slot = bm * bn * 4;
        let ws_floats = sched.workspace_floats(bm, bn);
        if ws_floats * 4 >= tile::MAX_TENSOR_BYTES {
            return;
        }
        let rs_ws = BufferResource::new(args.ws.addr(), ws_floats as u32 * 4);
        // The bf16 epilogue of tile (0, 0); `at` moves it to each tile.
        let direct = Bf16Store::tile::<FM, FN, BS>(BufferResource::new(args.d.addr(), ((m - 1) * ldd + n) * 2), ldd, n, 0, 0);
        let job = TileJob {
            rs_a: BufferResource::new(args.a.addr(), (m - 1) * lda + k),
            rs_sfa: BufferResource::new(args.sfa.addr(), m * nkb * 4),
            rs_b: BufferResource::new(args.b.addr(), if BS { tile::shuffled_b_bytes(n as u64, k as u64) as u32 } else { n * k }),
            rs_sfb: BufferResource::new(args.sfb.addr(), n.div_ceil(SCALE_BLOCK_N) * nkb * 4),
            n,
            lda,
            ldb: k,
            ldsf: nkb,
            kb0: 0,
            nkb,
            m0: 0,
            n0: 0,
            a_rows: None,
        };

        if pid < dp {
            // Data-parallel head: one whole tile, the dense kernel's path (the main loop over
            // K blocks 0 .. nkb with constant bounds; through the pieces below the same work
            // ran 9 % slower in the timing model, 2432×2048×7168 64×128: 107.3 vs 98.7 µs).
            let p = tile::xcd_remap(pid, dp, NUM_XCDS);
            let (tm, tn) = tile::tile_coords(p, tiles_m, tiles_n);
            let head = TileJob { kb0: 0, nkb, m0: tm * bm, n0: tn * bn, ..job };
            L::run(&head, &direct.at(head.m0, head.n0));
            return;
        }
        // The tail: this workgroup's iterations [it, end), where the tail's tile t is tile
        // dp + t of the logical order (iteration i of the tail is dp·nkb + i).
        let w = tile::xcd_remap(pid - dp, sched.sk_wgs, NUM_XCDS);
        let (first, count) = sched.range(w);
        let (it, end) = (dp * nkb + first, dp * nkb + first + count);
        let tid = workitem_id_x();
        // One piece: the range's iterations from `it` in its tile; returns where it stopped.
        let piece = |it: u32, first_piece: bool| -> u32 {
            let abs = it / nkb_nz;
            let kb0 = it % nkb_nz;
            let stop = if end < (abs + 1) * nkb { end } else { (abs + 1) * nkb };
            let count = stop - it;
            let whole = kb0 == 0 && count == nkb;
            let (tm, tn) = tile::tile_coords(abs, tiles_m, tiles_n);
            let (m0, n0) = (tm * bm, tn * bn);
            // The tail tile (for counters and slots); unused for whole tiles.
            let t = abs - dp;
            let job = TileJob { kb0, nkb: count, m0, n0, ..job };
            if whole {
                // A whole tail tile: the head's path (constant K bounds).
                if !first_piece {
                    lds_barrier();
                }
                L::run(&TileJob { kb0: 0, nkb, ..job }, &direct.at(m0, n0));
                return stop;
            }
            let epi = PieceStore::<FM, FN, BS> {
                partial: !whole,
                direct: direct.at(m0, n0),
                part: PartialStore { rs_ws, base: counters * 4 + (w + t) * slot, m0, n0 },
            };
            if !first_piece {
                // Every wave has finished reading the previous piece's last block (and the
                // arrival broadcast) before the next prologue writes LDS.
                lds_barrier();
            }
            L::run(&job, &epi);
            if whole {
                return stop;
            }

            // Release: every wave's partial stores have completed at device scope before the
            // barrier; only then does one work-item count the workgroup in.
            release_barrier();
            let counter = args.ws.addr() + u64::from(t) * 4;
            if tid == 0 {
                // SAFETY: the counter of tail tile t lies in the workspace's counter words
                // (t < T ≤ SPLITK_MAX_TILES), 4-byte aligned, accessed only atomically during
                // the launch.
                let arrived = unsafe { atomic_add_u32(counter, 1) };
                // SAFETY: LDS bytes 0..16 are inside every tile's LDS; all waves finished their
                // LDS reads before release_barrier, and the next lds_barrier orders the reads.
                unsafe { lds_write_b128(0, U32x4([arrived, 0, 0, 0])) };
            }
            lds_barrier();
            // SAFETY: written by work-item 0 before the barrier above.
            let arrived = readfirstlane_u32(unsafe { lds_read_b128(0) }.to_array()[0]);
            let (w_first, w_last) = sched.contributors(t);
            if arrived + 1 != w_last - w_first + 1 {
                return stop;
            }
            // Acquire: every other contributor's partial is stored (their stores completed at
            // device scope before their increments); device-scope loads read them, in K order.
            reduce_slots::<FM, FN, BS>(rs_ws, counters * 4 + (w_first + t) * slot, w_last - w_first + 1, m0, n0, n, &direct);
            // Re-arm the counter (all contributions of this launch have arrived).
            if tid == 0 {
                // SAFETY: as for the increment above.
                unsafe { atomic_store_u32(counter, 0) };
            }
            stop
        };
        // At most two pieces (the host keeps every range within `nkb` iterations, so it
        // touches at most two tiles): straight-line code, no loop around the main loop.
        let stop = piece(it, true);
        if stop < end {
            piece(stop, false);
        }
    }
}

/// Stream-K, 64 × 64 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_streamk_bm64_bn64(args: DenseStreamKArgs) {
    imp::gemm_streamk::<imp::DenseLoop<2, 2, { STREAMK_TILES[0].prefetch_depth() }>, 2, 2, false>(args)
}

/// Stream-K, 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_streamk_bm64_bn128(args: DenseStreamKArgs) {
    imp::gemm_streamk::<imp::DenseLoop<2, 4, { STREAMK_TILES[1].prefetch_depth() }>, 2, 4, false>(args)
}

/// Stream-K, 128 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_streamk_bm128_bn128(args: DenseStreamKArgs) {
    imp::gemm_streamk::<imp::DenseLoop<4, 4, { STREAMK_TILES[2].prefetch_depth() }>, 4, 4, false>(args)
}

/// bs stream-K (B pre-shuffled, [`crate::mainloop_bs`]'s loop), 32 × 128 tiles: arguments
/// [`DenseStreamKArgs`] with `b` the pre-shuffled B ([`tile::shuffled_b_bytes`] bytes).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_streamk_bs_bm32_bn128(args: DenseStreamKArgs) {
    imp::gemm_streamk::<imp::BsLoop<2, true>, 2, 2, true>(args)
}

/// bs stream-K, 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_streamk_bs_bm64_bn128(args: DenseStreamKArgs) {
    imp::gemm_streamk::<imp::BsLoop<4, false>, 4, 2, true>(args)
}

/// bs stream-K on the pipelined loop ([`crate::mainloop_bs`], "Pipelined loop"), 48 × 128
/// tiles (two workgroups per CU): arguments [`DenseStreamKArgs`] with `b` the pre-shuffled B.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_streamk_bs_pipe_bm48_bn128(args: DenseStreamKArgs) {
    imp::gemm_streamk::<imp::BsPipeLoop<3, 2>, 3, 2, true>(args)
}

/// bs stream-K on the pipelined loop, 64 × 128 tiles (two workgroups per CU).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_streamk_bs_pipe_bm64_bn128(args: DenseStreamKArgs) {
    imp::gemm_streamk::<imp::BsPipeLoop<4, 2>, 4, 2, true>(args)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;

    #[test]
    fn specs_match_the_tile_table() {
        let specs = [FP8_GEMM_NT_STREAMK_BM64_BN64, FP8_GEMM_NT_STREAMK_BM64_BN128, FP8_GEMM_NT_STREAMK_BM128_BN128];
        for (spec, tile) in specs.iter().zip(STREAMK_TILES) {
            assert_eq!(spec.name, tile.name);
            assert_eq!(spec.workgroup_size, tile::THREADS);
        }
        for (s, d) in STREAMK_TILES.iter().zip(tile::DENSE_TILES) {
            assert_eq!((s.block_m, s.block_n, s.prefetch_depth()), (d.block_m, d.block_n, d.prefetch_depth()));
        }
    }

    #[test]
    fn bs_specs_match_the_bs_tile_table() {
        let specs = [FP8_GEMM_NT_STREAMK_BS_BM32_BN128, FP8_GEMM_NT_STREAMK_BS_BM64_BN128];
        for ((spec, t), d) in specs.iter().zip(STREAMK_BS_TILES).zip(tile::DENSE_BS_TILES) {
            assert_eq!(spec.name, t.name);
            assert_eq!(spec.workgroup_size, tile::THREADS);
            assert_eq!((t.block_m, t.block_n, t.lds_bytes()), (d.block_m, d.block_n, d.lds_bytes()));
        }
    }

    #[test]
    fn bs_pipe_specs_match_the_pipelined_tile_table() {
        let specs = [FP8_GEMM_NT_STREAMK_BS_PIPE_BM48_BN128, FP8_GEMM_NT_STREAMK_BS_PIPE_BM64_BN128];
        for (spec, t) in specs.iter().zip(STREAMK_BS_PIPE_TILES) {
            assert_eq!(spec.name, t.name);
            assert_eq!(spec.workgroup_size, tile::THREADS);
            let d = tile::DENSE_BS_PIPE_TILES.iter().find(|d| d.block_m == t.block_m).unwrap();
            assert_eq!((t.block_n, t.lds_bytes()), (d.block_n, d.lds_bytes()));
            assert_eq!(t.lds_bytes(), tile::bs_pipe_lds_bytes(t.block_m));
        }
    }

    /// Walks every stream-K workgroup's pieces as the kernel does and checks the schedule:
    /// every tail iteration covered exactly once, contributors and slots as documented, slots
    /// unique, contiguous per tile in K order and inside the workspace.
    fn check(tiles: u32, nkb: u32, dp: u32, g: u32) {
        let s = StreamKSchedule::new(tiles, nkb, dp, g).unwrap();
        let t_n = s.sk_tiles();
        let mut covered = vec![0u32; (t_n * nkb) as usize];
        let mut slot_used = vec![false; s.slots() as usize];
        // Per tile: (w, kb0, count) pieces in walking order.
        let mut pieces = vec![vec![]; t_n as usize];
        let mut next = 0;
        for w in 0..g {
            let (first, count) = s.range(w);
            assert!(count >= 1, "g {g} ≤ iterations: every range non-empty");
            assert!(count <= nkb, "g {g} ≥ tiles: at most nkb iterations, two pieces");
            assert_eq!(first, next, "ranges contiguous");
            next = first + count;
            let mut it = first;
            while it < first + count {
                let t = it / nkb;
                let stop = (first + count).min((t + 1) * nkb);
                for i in it..stop {
                    covered[i as usize] += 1;
                    assert_eq!(s.wg_of(i), w, "wg_of({i})");
                }
                if stop - it != nkb {
                    let slot = (w + t) as usize;
                    assert!(!slot_used[slot], "slot {slot} used twice");
                    slot_used[slot] = true;
                }
                pieces[t as usize].push((w, it % nkb, stop - it));
                it = stop;
            }
        }
        assert_eq!(next, t_n * nkb);
        assert!(covered.iter().all(|&c| c == 1));
        for (t, p) in pieces.iter().enumerate() {
            let (wf, wl) = s.contributors(t as u32);
            assert_eq!(p.len() as u32, wl - wf + 1, "tile {t}: contributors");
            assert_eq!(p.first().unwrap().0, wf);
            assert_eq!(p.last().unwrap().0, wl);
            // K order = workgroup order, pieces abut.
            let mut kb = 0;
            for (i, &(w, kb0, c)) in p.iter().enumerate() {
                assert_eq!((w, kb0), (wf + i as u32, kb));
                kb += c;
            }
            assert_eq!(kb, nkb);
        }
        assert!(s.workspace_floats(128, 128) >= tile::SPLITK_COUNTER_FLOATS + u64::from(s.slots()) * 16384);
    }

    #[test]
    fn schedules_cover_every_iteration_once_with_unique_contiguous_slots() {
        for (tiles, nkb) in [(1, 1), (1, 56), (5, 3), (33, 56), (100, 16), (512, 56), (13, 7)] {
            for dp in [0, tiles / 2, tiles - 1] {
                let t = tiles - dp;
                let iters = t * nkb;
                for g in [1, 2, 3, 7, 8, 64, 304, 608, 1216, t, t + 1] {
                    if (t..=iters).contains(&g) {
                        check(tiles, nkb, dp, g);
                    }
                }
                check(tiles, nkb, dp, iters);
            }
        }
    }

    #[test]
    fn invalid_schedules_are_rejected() {
        assert_eq!(StreamKSchedule::new(10, 4, 10, 8), Err(StreamKScheduleError::NoTail));
        assert_eq!(StreamKSchedule::new(10, 4, 0, 0), Err(StreamKScheduleError::Workgroups));
        assert_eq!(StreamKSchedule::new(10, 4, 8, 9), Err(StreamKScheduleError::Workgroups));
        // Fewer workgroups than tail tiles: a range would span three tiles.
        assert_eq!(StreamKSchedule::new(10, 4, 0, 9), Err(StreamKScheduleError::Workgroups));
        assert!(StreamKSchedule::new(10, 4, 0, 10).is_ok());
        assert_eq!(StreamKSchedule::new(5000, 4, 0, 8), Err(StreamKScheduleError::TooManyTiles));
        assert!(StreamKSchedule::new(5000, 4, 1000, 4000).is_ok());
    }
}
