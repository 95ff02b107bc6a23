//! The "bs" main loop (issue 12 parts 2 + 3): B **pre-shuffled** ([`crate::tile::shuffled_b_offset`])
//! straight from global memory into the MFMA operand registers, only A staged in LDS, and the
//! dense kernels `fp8_gemm_nt_bs_bm{32,64,128}_bn128` built on it (arguments: [`DenseGemmArgs`]
//! with `b` pointing at the pre-shuffled B, [`crate::tile::shuffled_b_bytes`] bytes; tiles:
//! [`crate::tile::DENSE_BS_TILES`], split-K twins [`crate::tile::DENSE_SPLITK_BS_TILES`]; the
//! m-grouped twins are in [`crate::grouped`]), and the pipelined kernels
//! `fp8_gemm_nt_bs_pipe_bm{48,64,80,96}_bn128` on its pipelined form
//! ([`crate::tile::DENSE_BS_PIPE_TILES`], "Pipelined loop" below). The host runs them for
//! pre-shuffled weights.
//!
//! # Structure of one workgroup (256 work-items = 4 waves, **1 × 4** over a `BM × 128` tile)
//!
//! * **Waves**: wave `w` owns all `BM = 16·FM` rows of the tile × columns `32·w .. 32·w + 32`:
//!   `FM` A fragments × 2 B fragments = `2·FM` 16×16 outputs, `8·FM` MFMAs per 128-K block
//!   (the pipelined loop also runs one B fragment per wave, columns `16·w .. 16·w + 16` of a
//!   `BM × 64` tile: "Narrow tiles" below)
//!   (the transposed `v_mfma_f32_16x16x32_fp8_fp8` mapping, K permutation, MFMA order and
//!   promotion of [`crate::dense`], so the result is the dense kernels' bit for bit; a tile
//!   never straddles a 128-column SFB block).
//! * **B**: per block a wave issues 4 `buffer_load_dwordx4` (2 fragments × 2 reads), each 1 KiB
//!   contiguous (8 whole lines) of the pre-shuffled layout, straight into the MFMA operand
//!   registers, **one block ahead** (two register sets; the loop is unrolled by 4 so that they
//!   never move and the 4-block scale window is static). No wave shares a B fragment: B is read
//!   once per tile and never touches LDS.
//! * **A**: global → registers → LDS (the dense loop's full-line copy and rotation swizzle,
//!   [`crate::tile::block_swizzle`]), **two LDS stages**, **one barrier per block**, loaded from
//!   global memory one block before it is written (`A2`: two register sets). Without `AHEAD`
//!   block `i` reads A(i)'s fragments from its stage and runs its MFMAs, then writes A(i + 1)
//!   into the other stage (last read by block `i − 1`); with `AHEAD` block `i` reads A(i + 1)'s
//!   fragments into a second register set during its MFMAs (on A(i)'s, read one block ago) and
//!   writes A(i + 2), so no block starts on an LDS wait (more registers: used where they cost
//!   no occupancy, the 32-row tile).
//! * **The barrier opens each block** (not closes it): LLVM sinks a load whose value is first
//!   used in a later basic block to the top of that block, so a read-ahead placed before a
//!   closing barrier ended up after it (the emulator's race check caught it). At the top of the
//!   next block it stays before that block's barrier; both orders are then the hand-off's: the
//!   barrier publishes the previous block's writes and tells every wave that all have read the
//!   stage this block overwrites.
//! * **SFA through LDS**: every wave needs the scales of all `BM` rows. Loading them per wave
//!   made SFA as much texture-path traffic as A itself (16 lines per 16-row load); instead wave
//!   `w` loads the 4-block window of fragments `fm ≡ w (mod 4)` one window ahead and writes it
//!   to one of two LDS regions at the window's last block; each block reads its scale with one
//!   `ds_read_b32` per fragment (in place of the dense loop's `ds_bpermute`). SFB: one load per
//!   wave per window, also one window ahead, `v_readlane_b32`.
//! * **Unconditional hand-off**: every block issues its loads and LDS writes whether or not a
//!   next block exists (past the job's blocks they read in-range bytes of the same tensors or
//!   zeros past a resource's end, every offset in `voffset` so the range check applies, and
//!   write a stage nobody reads), so the loop body has no branches besides the exit tests
//!   between the unrolled steps.
//! * **Promotion, epilogue**: as the dense loop: fresh partial accumulators per block,
//!   `acc += partial · (SFA·SFB·2^-60)` with `v_pk_fma_f32`, then the `Epilogue`.
//!
//! The loop is `imp::tile_gemm_bs::<FM, A2, AHEAD, _>(job, keep_row, epi)`: the `TileJob` /
//! `Epilogue` interface of the dense `tile_gemm` (so split-K / stream-K can wrap it), where
//! `job.rs_b` is the problem's **pre-shuffled** B and `job.ldsf` (the problem's K blocks) its
//! units per fragment; `job.ldb` is unused. The split-K twins `fp8_gemm_nt_splitk_bs_*`
//! ([`DenseSplitKArgs`]) run the dense split-K protocol (partial slots in the 1 × 4 waves'
//! fragment order): the 128-row one over this loop (`dense::imp::gemm_splitk` with
//! `BS = true`), the 32- and 64-row ones over the pipelined loop below
//! (`dense::imp::gemm_splitk_with`, "Split-K on the pipelined loop").
//!
//! Code-generation notes (each measured on the code object): every register-array loop is
//! expanded by the `unroll!` macro (literal indices) and the per-block step is a macro rather
//! than a closure — with `for` loops / a closure borrowing the accumulators, LLVM kept the
//! 128-row tile's accumulators in scratch (late unrolling after the last SROA; an
//! `assume(&acc != null)`); LDS accesses are plain (volatile ones became `flat_load … sc0 sc1`,
//! each waiting `vmcnt(0)`).
//!
//! # Measured on the code objects (LLVM 22.1.4; `fp8gemm info`, `tests/dense_kernel.rs`)
//!
//! | kernel | `A2`/`AHEAD` | VGPR (total, incl. AGPR) | AGPR | spills | scratch | LDS (dynamic) | waves/SIMD | WGs/CU |
//! |---|---|---|---|---|---|---|---|---|
//! | `fp8_gemm_nt_bs_bm32_bn128`  | yes / yes | 158 | 0   | 0 | 0 | 9 KiB  | 3 | 3 |
//! | `fp8_gemm_nt_bs_bm64_bn128`  | yes / no  | 238 | 0   | 0 | 0 | 18 KiB | 2 | 2 |
//! | `fp8_gemm_nt_bs_pipe_bm48_bn128` | pipelined, B 2 ahead | 195 | 0 | 0 | 0 | 18 KiB | 2 | 2 |
//! | `fp8_gemm_nt_bs_pipe_bm64_bn128` | pipelined, B 2 ahead | 220 | 0 | 0 | 0 | 18 KiB | 2 | 2 |
//! | `fp8_gemm_nt_bs_pipe_bm80_bn128` | pipelined, B 2 ahead | 257 | 1 | 0 | 0 | 28 KiB | 1 | 1 |
//! | `fp8_gemm_nt_bs_pipe_bm96_bn128` | pipelined, B 2 ahead | 281 | 25 | 0 | 0 | 28 KiB | 1 | 1 |
//! | `fp8_gemm_nt_bs_pipe_bm112_bn128` | pipelined, B 2 ahead | 316 | 60 | 0 | 0 | 36 KiB | 1 | 1 |
//! | `fp8_gemm_nt_bs_bm128_bn128` | yes / no  | 420 | 164 | 0 | 0 | 36 KiB | 1 | 1 |
//! | `fp8_gemm_nt_splitk_bs_bm32_bn128`  | pipelined, B 2 ahead, per-wave split-K | 172 | 0  | 0 | 0 | 10 KiB | 2 | 2 |
//! | `fp8_gemm_nt_splitk_bs_bm64_bn128`  | pipelined, B 2 ahead, per-wave split-K | 224 | 0  | 0 | 0 | 18 KiB | 2 | 2 |
//! | `fp8_gemm_nt_splitk_bs_bm128_bn128` | yes / no  | 290 | 34 | 0 | 0 | 36 KiB | 1 | 1 |
//! | `fp8_gemm_nt_bs_pipe_bm32_bn64` | pipelined, 1 B fragment, B 2 ahead, A 5 ahead, 1 barrier per 2 blocks | 117 | 0 | 0 | 0 | 18 KiB | 4 | 3 |
//! | `fp8_gemm_nt_bs_pipe_b1_bm32_bn64` | pipelined, 1 B fragment, B 2 ahead, A 4 ahead | 117 | 0 | 0 | 0 | 10 KiB | 4 | 4 |
//! | `fp8_gemm_nt_splitk_bs_bm32_bn64` | pipelined, 1 B fragment, B 2 ahead, A 5 ahead, 1 barrier per 2 blocks, per-wave split-K | 120 | 0 | 0 | 0 | 18 KiB | 4 | 3 |
//!
//! Modelled figures and the steps that led here: [`crate::dense`], "B straight to registers".
//!
//! # Pipelined loop (`tile_gemm_bs_pipe`, the kernels `fp8_gemm_nt_bs_pipe_bm{48,64,80,96,112}_bn128`)
//!
//! At one workgroup per CU (few tiles: 640–1216 × 2048 × 7168, 1664–2048 × 768 × 7168) the loop
//! above is a serial chain per block: the A fragments are read at the block's start and the
//! first MFMA waits for them (`lgkmcnt`); the SFA `ds_read` issued after them and used early
//! turns that into `lgkmcnt(0)`; the per-window SFA loads under `if fm % 4 == wave` become
//! branches whose join LLVM closes with `s_waitcnt vmcnt(0)` (waiting for the B and A loads
//! just issued); loads, MFMAs, promotion and LDS writes run as separate phases. Modelled
//! (1024×2048×7168, MI325X, 64-row tile): 61.8 µs, stalls lgkmcnt 33 %, barrier 15 %, vmcnt 13 %.
//!
//! The pipelined loop keeps the same tile, operands, LDS layout, MFMA chains and promotion
//! arithmetic (so the same result bit for bit) and reorders the rest:
//! * **A fragments one block ahead** (`AHEAD`'s two register sets, stages as above: block `i`
//!   reads A(i + 1) from its stage and writes A(i + 2) into A(i)'s), **B two blocks ahead**
//!   (four register sets indexed by block mod 4, three live), A loaded three blocks ahead;
//! * **one instruction stream in a fixed order**: the block's `8·FM` MFMAs (output pair `fm`
//!   = outputs `(fm, 0..2)`, order `(r, s, f)` inside it, so consecutive MFMAs of a chain are
//!   one apart), each followed by at most one other instruction — the next block's A fragment
//!   reads after the even MFMAs, the global loads (A, B, at the window's second block the next
//!   window's scales) after the odd ones, A's LDS writes after the odd ones of the second half
//!   — each group closed by a `sched_fence` so LLVM keeps the order (with
//!   `sched_group_barrier` it is free to move the loads together again);
//! * **promotion one pair behind**: pair `fm − 1` is promoted after pair `fm`'s fourth MFMA,
//!   the last pair during the next block (after the whole loop for the last block), so no VALU
//!   ever waits on an MFMA result (no `s_nop`); the SFA `ds_read`s are the block's first LDS
//!   instructions, so the wait before the first promotion is a counted `lgkmcnt(N)`;
//! * **straight-line SFA loads**: wave `w` loads the windows of fragments `4q + w`
//!   (`q < FM / 4`), no branch on the wave.
//!
//! **Loop shape.** The loop's form decides LLVM's register allocation. The former
//! `while i < nkb { step0; if i + 1 >= nkb { break } step1; …; i += 4 }` (an exit after every
//! step) took 294 registers for the 64-row kernel (38 AGPRs; 300–312 for its grouped twins),
//! so one workgroup per CU, while the same loop inlined into the stream-K kernel took 204.
//! Nested conditions instead of `break`s (`step0; if i + 1 < nkb { step1; if i + 2 < nkb { … } }
//! i += 4`: the loop's only exit is its header) take 211 / 220 / 257 / 281 registers for the
//! 48 / 64 / 80 / 96-row kernels (226 / 219 / 256 the grouped contiguous 64, masked 64 and
//! masked 80): the 48- and 64-row kernels, data-parallel, m-grouped and stream-K, all run two
//! workgroups per CU, 0 spills, 0 scratch. (A loop without exits plus 0–3 remainder steps
//! after it: 265–300, worse.) Two details keep that form from costing waits: the partial
//! paths (a job whose block count is not a multiple of 4) reach the latch with loads in
//! flight whose registers the next trip's header reuses, and the wait-count pass, which does
//! not know those paths end the loop, made the header wait for them (`vmcnt(4)` before the
//! first fragment read, `vmcnt(1)` before the first MFMA: 640×2048×7168 36.75 µs against
//! 33.01 with the `break`s), so each partial path drains its loads (`s_waitcnt vmcnt(0)`,
//! once per tile, at its end); and the SFB of a window is moved to scalar registers at its
//! first block (`readlane` of the four blocks' values) instead of copying the vector register
//! (`sfb = sfb_next` became a copy at the latch waiting `vmcnt(0)` for every load in flight).
//! Modelled (MI325X, µs), `break`s → nested: 640×2048×7168 (48 rows) 33.01 → 32.86;
//! 1024×2048×7168 64 rows data-parallel 40.47 → 38.28, stream-K `0 + 256` 38.52 → 38.60.
//!
//! At two per CU the 64-row kernel replaces the two-phase `fp8_gemm_nt_bs_bm64_bn128` at every
//! tile count (`fp8gemm::config::bs_kernel`; MI300X 4096×7168×2048 175.57 → 145.53 µs,
//! 4096×7168×16384 1034.02 → 850.44; MI325X 10240×2048×7168 367.43 → 285.16,
//! 4096×2048×7168 129.79 against 138.8 for the 128-row tile). Before, at one per CU, the host
//! kept the older kernels for fewer than 8 K blocks (MI300X 128×32768×512 20.6 µs pipelined
//! 64-row vs 17.3; now 16.09) and from 8 64-row tiles per CU (4096×7168×2048 191.6 µs against
//! 175.2); forced into 256 registers (`waves_per_eu = 2`) it spilled (26–55 registers, scratch).
//! The tables below are from the one-per-CU kernels.
//!
//! **48/80/96 rows** (`FM` = 3, 5, 6; AMD picks these heights for 640–1800-row shapes so that
//! the tile count stays within one wave of CUs): the A copy moves 32 rows per pass, so odd `FM`
//! pads each stage to `32·⌈FM/2⌉` rows (the last pass's upper 16 rows are other rows of A, or 0,
//! written to padding nobody reads), and the SFA regions have `4·⌈FM/4⌉` slots (wave `w` loads
//! and writes slots `4q + w`; slots past `FM` hold unused scales):
//! [`crate::tile::bs_pipe_lds_bytes`]. The host's choice among them is
//! `fp8gemm::config::bs_pipe_rule` (a per-round estimate per tile from the figures below).
//!
//! | pipelined tile, modelled µs (MI325X) | 640×2048×7168 | 1024×2048×7168 | 1408×2048×7168 | 1664×2048×7168 | 2048×2048×7168 | 4096×2048×7168 | 4096×768×7168 |
//! |---|---|---|---|---|---|---|---|
//! | 48 rows (2 WGs/CU) | **36.11** | 61.31 | 60.98 | 61.36 | | | |
//! | 64 rows | 41.13 | **41.13** | 79.89 | 80.23 | **80.45** | 157.90 | |
//! | 80 rows | 51.79 | 51.69 | **52.30** | 101.34 | 101.48 | **151.60** | |
//! | 96 rows | | 59.54 | | **60.03** | 116.98 | 174.20 | **59.94** |
//! | before (main's choice) | 50.76 (32) | 50.91 (32) | 67.79 (32) | 68.23 (32) | 89.23 (64) | 161.81 (32) | 67.98 (32) |
//! | *AMD, measured* | *30.63 (48)* | *39.54 (64)* | *49.63 (80)* | *57.17 (96)* | *70.19 (128)* | *130.20 (128)* | *57.16 (96)* |
//!
//! (Table before the prologue change; after it, one memory round trip instead of five before
//! the first block: 48 rows 640×2048×7168 35.63, 4096×2048×7168 146.42; 64 rows
//! 1024×2048×7168 40.47; 80 rows 1408×2048×7168 51.39, 4096×2048×7168 149.15; 96 rows
//! 1664×2048×7168 59.86, 4096×2048×7168 173.65.)
//!
//! MI300X: 4096×2112×7168 32 rows 172.59 µs → 48 / 64 / 80 rows 147.41 / 158.01 / 152.03;
//! 128×24576×1536 21.84 → 20.45 (48); 256×7168×2048 19.90 → 18.01 (64). The 128-row tile on
//! this loop (`FM` = 8) was tried: 512 registers with 4–24 spilled, 1024×2048×7168 88 µs,
//! 4096×2048×7168 174 µs (old loop: 101.9 / 202.0): not shipped; the 128-row tile now has its
//! own loop, [`crate::mainloop_bs128`] (340 registers, 4096×2048×7168 138.8 µs).
//!
//! Several rounds of the 48-row kernel (two per CU), modelled µs, before (main's choice) →
//! after: MI325X 4096×2048×7168 161.8 (32) → 146.4, 6144×2048×7168 240.1 (32) → 203.3,
//! 8192×2048×7168 304.1 (32) → 261.6, 10240×2048×7168 370.2 (64) → 342.6, 16384×2048×7168
//! 565.8 (64) → 511.3, 14336×768×7168 199.1 (32) → 175.6; MI300X 4096×2112×7168 172.6 (32) →
//! 146.2, 4096×4096×7168 304.1 (32) → 285.8, 4096×7168×2048 175.2 (64) → 173.3. The 32-row
//! tile on this loop was tried too: 194 registers (2 per CU instead of 3), 1024×2048×7168
//! 51.5 µs and 4096×2048×7168 172.6 (old loop 50.3 / 160.2): not shipped.
//!
//! Peers table (`FP8GEMM_PEERS_DIR=… FP8GEMM_PRESHUFFLED=1 fp8gemm compare --set peers`, ours
//! modelled on MI325X vs AMD's measured): geometric mean 0.738× → 0.927× of AMD's TFLOPS, lowest
//! 0.60× → 0.86× (1920×2048×7168, the 64-row kernel's second round); per row 0.86–1.03×.
//!
//! Modelled µs (timing model, `FP8GEMM_PRESHUFFLED=1 FP8GEMM_FORCE_TILE=64x128 fp8gemm profile
//! --scope xcd`; MI325X unless stated):
//!
//! | 64-row loop | regs (AGPR) | 1024×2048×7168 | 2048×768×7168 | 4096×2048×7168 | 4096×7168×2048 MI300X |
//! |---|---|---|---|---|---|
//! | phases (`fp8_gemm_nt_bs_bm64_bn128`, 2 WGs/CU) | 238 (0) | 61.81 | 61.81 | 171.01 | **175.21** |
//! | phases + `AHEAD` (1 WG/CU) | 275 (19) | 61.16 | 61.16 | – | – |
//! | pipelined, B one block ahead | 282 (26) | 42.32 | 42.31 | 160.55 | 181.09 |
//! | pipelined, B two blocks ahead | 308 (52) | 41.13 | 41.13 | 157.90 | 191.63 |
//! | **+ prologue: all loads before the LDS writes** (shipped) | 304 (48) | **40.47** | | **155.05** | |
//! | pipelined, B two ahead, `waves_per_eu = 2` | 256 + 55 spilled | 53.76 | 53.85 | 164.94 | 170.94 |
//! | pipelined, B one ahead, `waves_per_eu = 2` | 256 + 26 spilled | 53.57 | 53.51 | 162.68 | 171.10 |
//! | *AMD's `BpreShuffle_64x128` on the same model* | 512 | *39.39* | | | |
//! | *the 32-row tile (3 WGs/CU), for reference* | 158 | *50.25* | *50.27* | *160.24* | *187.40* |
//!
//! Profile of the shipped variant at 1024×2048×7168: MFMA 51 % busy (83 % of CUs occupied),
//! stalls "MFMA pipe busy" 82.5 %, vmcnt 10.2 % (mostly the prologue), barrier 5.5 %, lgkmcnt
//! 1.0 % (before: 37.6 / 13.2 / 14.8 / 33.1 %). (At two per CU, 38.28 µs: stalls "MFMA pipe
//! busy" 83.9 %, vmcnt 8.1 %, barrier 5.5 %.) Not done: more LDS stages with a barrier every
//! 2 blocks.
//!
//! **Filling the MFMA shadows.** A trace of one wave of the 48-row kernel in the timing model
//! (`FP8GEMM_PRESHUFFLED=1 fp8gemm profile --m 128 --n 7168 --k 2048 --scope xcd
//! --trace-workgroup 144`: MI300X, one workgroup per CU) showed ~560 cycles per block against 384 of
//! MFMA pipe: with one wave per SIMD nothing covers an instruction group that outlasts the
//! 16-cycle MFMA it follows. Three groups did: (1) the promotions, which LLVM gathered into one
//! lump of 12 `v_pk_fma` per block (the 48-row kernel used `fma_splat`, whose repeat-array
//! splat lets IndVarSimplify sink them; `fma_splat_in_place` no longer costs it registers: 211
//! → 195); (2) a pair's two promotions after one MFMA (now one output after `t = 4`, the other
//! after `t = 6`, even MFMAs that carry no global load); (3) the next window's SFA write and
//! its region arithmetic after the block's last MFMA, in the loop latch (164 cycles between
//! the blocks across the latch against 64 elsewhere; now after MFMA `8·FM − 3` of the window's
//! last block, a free odd slot). Modelled (`fp8gemm compare --set deepseek`, MI300X, full
//! scope), before → after: 128×7168×2048 (48 rows) 11.82 → 11.37 µs, 128×24576×1536 (48)
//! 16.08 → 15.45, 128×32768×512 (64) 10.84 → 10.65, 4096×2112×7168 (64) 119.63 → 112.25,
//! 4096×24576×1536 297.24 → 284.44, 4096×7168×16384 761.51 → 713.81, 4096×7168×2048 113.84 →
//! 109.12, 4096×4096×7168 (stream-K) 204.50 → 192.79. Tried and not kept: the block's barrier
//! after its first MFMA (11.70 → 11.73 µs) and four MFMAs before the block's end (→ 12.11): an
//! in-order wave waiting at `s_waitcnt lgkmcnt(0)` + `s_barrier` issues no MFMA either, and the
//! waves' skew mid-block is larger than at the block's start.
//!
//! **Split-K on the pipelined loop.** The bs split-K kernels of 32 and 64 rows run this loop
//! (`dense::imp::gemm_splitk_with` with `tile_gemm_bs_pipe::<2 or 4, 2>`; `FM = 2` is allowed
//! for them: 16 MFMAs per block have the slots for its 1 + 4 + 2 loads and one A write). At 32
//! rows it takes 170 registers, two workgroups per CU instead of the phase loop's three, which
//! the decode grids do not use (one per CU or fewer); with B one block ahead it fits three
//! (154) but the decode shapes lose 5 %: modelled `--scope xcd`, MI300X, B two ahead / one
//! ahead: 64×2112×7168 split 8 13.04 / 13.76 µs, 128×2112×7168 split 8 15.34 / 16.15,
//! 128×7168×16384 split 6 56.97 / 46.73 but split 2 46.49 with B two ahead (the tuned table
//! picks the split). Against the phase loop (`compare --set deepseek`, full scope):
//! 64×7168×2048 split 2 11.27 → 9.90 µs, 64×2112×7168 split 8 11.81 → 11.60.
//!
//! **Narrow tiles: 32 × 64** (`fp8_gemm_nt_bs_pipe_bm32_bn64`, `fp8_gemm_nt_splitk_bs_bm32_bn64`:
//! `tile_gemm_bs_pipe::<2, 1, 2, _>`, one B fragment of 16 columns per wave). At decode
//! (M ≤ 128) the 32 × 128 tile's workgroup moves 16 KiB of B and 4 KiB of A per block through
//! one CU's texture path and, split, reduces 16 KiB partial slots on one CU; the 32 × 64 tile
//! moves 8 + 4 KiB for half the outputs, so twice as many workgroups share the same B bytes and
//! its slots are 8 KiB: at 64×2112×7168 the 32 × 128 split-8 reducer spent ~4.3k cycles
//! reading 8 slots against ~2k for the 32 × 64 split-4 one, and 64×7168×2048 fills 224 CUs
//! without splitting. With `NF = 1` a block is 8 MFMAs per wave, so the loop's other slots move:
//! the global loads go after every MFMA (not the odd ones: 1 A + 2 B + at the window's second
//! block 2 scale loads need 5 slots), A's fragment reads after each of the first `2·FM`
//! (before: the even ones, which left the last read's latency to the next barrier's
//! `lgkmcnt(0)`: 64×7168×2048 9.08 → 8.70 µs), and A is loaded four blocks ahead instead of
//! three (one block of 8 MFMAs between a load and its LDS write left the write waiting:
//! 64×2112×7168 split 4 10.72 → 10.22 µs); B three blocks ahead instead of two was slower
//! (10.72 → 10.84). 117 registers: four workgroups per CU. A 64 × 64 tile (`FM = 4`, 180
//! registers) was built and modelled slower than the choices below on every decode shape
//! (64×2112×7168 best 11.88 µs, 128×2112×7168 13.52, 128×7168×2048 11.73): not shipped.
//! Modelled µs (MI300X, full scope; `FP8GEMM_PRESHUFFLED=1 FP8GEMM_FORCE_TILE=32x64
//! FP8GEMM_FORCE_SPLIT=S fp8gemm profile`), against the choice before:
//!
//! | shape | before | 32 × 64 |
//! |---|---|---|
//! | 64×2112×7168 | 11.70 (32 × 128 split 8) | **10.22** (split 4; split 8 10.75) |
//! | 64×7168×2048 | 9.83 (32 × 128 split 2) | **8.70** (unsplit) |
//! | 64×24576×1536 | 14.94 (32 × 128 stream-K) | **13.62** (unsplit) |
//! | 64×32768×512 | 9.18 (32 × 128) | **8.66** (unsplit) |
//! | 64×4096×7168 | 13.79 (32 × 128 split 3) | **13.15** (split 4) |
//! | 128×7168×2048 | 11.38 (48 × 128) | **10.91** (unsplit) |
//! | 64×7168×16384 | **34.34** (32 × 128 split 2) | 34.80 (split 4) |
//! | 128×2112×7168 | **12.19** (32 × 128 split 4) | 13.01 (split 4) |
//! | 128×4096×7168 | **16.39** (32 × 128 split 2) | 17.70 (split 2) |
//!
//! **One barrier per two blocks** (`BB = 2`, the shipped 32 × 64 kernels). Even so the narrow
//! loop ran ~330 cycles per block at one workgroup per CU against 128 of MFMA per wave (trace
//! of 64×2112×7168): each block was one barrier, then the first MFMA waiting for the block's
//! A fragment reads and scale read, then the wait for every LDS access before the next barrier.
//! With four A stages (stage = block mod 4) and a barrier only before the even blocks, A is
//! written to LDS three blocks ahead of its MFMAs (one more) and loaded from global memory five
//! ahead: the barrier before block `i` (even) publishes A(i + 1) and A(i + 2), written during
//! blocks `i − 2` and `i − 1`, and the stage block `i` (or `i + 1`) overwrites held A(i − 1)
//! (A(i)), whose fragments were read during block `i − 2` (`i − 1`), before that barrier. LDS
//! 10 → 18 KiB (three workgroups per CU). Modelled MI300X µs, one barrier per block → per two:
//! 64×2112×7168 split 4 10.23 → 9.94, 64×7168×2048 8.70 → 8.10, 64×24576×1536 13.62 → 13.23,
//! 128×7168×2048 10.91 → 10.76, 64×4096×7168 split 4 13.14 → 13.10; 64×32768×512 (1024 tiles,
//! 3.4 per CU: a second round at three per CU) 8.68 → 9.22, so the one-barrier-per-block
//! kernel stays (`fp8_gemm_nt_bs_pipe_b1_bm32_bn64`, 10 KiB, four per CU) for more than three
//! tiles per CU (`fp8gemm::config::bs_narrow_kernel`). Not kept: B three blocks ahead on top
//! (64×2112×7168 9.94 → 10.05 µs, 64×7168×2048 8.10 → 8.08); the same two-block barrier for the
//! 32 × 128 split-K kernel (`NF = 2`): 128×2112×7168 split 4 12.19 → 12.04, 64×7168×16384 split
//! 2 34.34 → 34.45, 128×4096×7168 split 4 16.36 → 16.49.
//!
//! The host picks them by `fp8gemm::config::bs_narrow_rule` (unsplit, short K),
//! `fp8gemm::config::bs_narrow_split_rule` (split, long K, at most 64 rows) and the tuned
//! table (`host/tuned/gfx942_bs.csv`).
//!
//! **Direct-to-LDS A (tried, not shipped).** Loading A with `buffer_load_dword … lds` (through an
//! LLVM IR shim over `llvm.amdgcn.raw.buffer.load.lds`, each lane's dword chosen so the rotation
//! swizzle lands in LDS) was built and exact (bit for bit the logical kernels, all emulator checks
//! on), but modelled slower on 8 of 9 points: TFLOPS register path → direct-to-LDS, 32 / 64 / 128-row
//! tile, 4096×2048×7168 MI325X 750.5 → 740.5 / 703.2 → 670.6 / 595.4 → 580.8; 4096×7168×2048
//! MI300X 641.7 → 649.9 / 686.4 → 658.6 / 561 → 542.3; 4096×2112×7168 MI300X 740.4 → 729.2 /
//! 750.7 → 712.4 / 614 → 617.1. LLVM makes every LDS access wait for an LDS DMA in flight, which
//! limits A to one block in flight (two on the register path). The kernels were also not
//! shippable as built: the shim is an external call when rustc optimizes the crate, so the
//! kernels lost the `amdgpu-no-*` and `amdgpu-agpr-alloc` facts (320-byte kernarg segment with
//! hidden arguments, AGPRs allowed against their declaration; `codeobj` artifact tests). The code
//! is on branch `s-lds` (8e7ff78); the emulator fix it needed (a MUBUF load to LDS has no VGPR
//! data operand) is kept in `amdgpu_emu`.
//!
//! # Row groups (`fp8_gemm_nt_bs_pipe_rg2_bm{96,128}_bn128`)
//!
//! `tile_gemm_bs_pipe_rg::<FM, 2, BA, 1, 2, _>`: a workgroup of 512 work-items, two row
//! groups of 4 waves, over a `2·16·FM × 128` tile. Group `g` runs the 4-wave pipelined loop on
//! rows `16·FM·g ..` of the tile with its own A stages and SFA regions (LDS from byte
//! `g · pipe_group_lds_bytes`); both groups pass the same barriers, so they run at most a
//! block apart and issue their B loads — the same bytes: the groups share the tile's columns
//! — together. The second group's loads hit the CU's vector L1 (in the timing model a hit on
//! a line whose fill is in flight waits for that fill), so the L2 serves B once for
//! `2·16·FM` rows where two workgroups of `16·FM` rows per CU each fetch it. Each wave keeps
//! the 48- / 64-row kernel's registers (two waves per SIMD), so one workgroup per CU holds what
//! two of those did; the bf16 epilogue stages the whole tile (`Bf16Store::rows`, 512
//! work-items).
//!
//! Modelled (MI355X, `--scope xcd`, `FP8GEMM_FORCE_KERNEL`), µs: see `docs/perf/gfx950.md`
//! ("Row groups"). The win is at large M, where the 64-row kernel's L2 is saturated
//! (4096×7168×2048: L2 97 % busy); with few tiles the halved workgroup count loses.
//!
//! # Scales on gfx950 (`sfa_packed`)
//!
//! With the doubled MFMA rate of gfx950 the LDS is the pipelined loop's busiest unit after the
//! MFMA pipe: per block a wave reads its A fragments (`2·FM` `ds_read_b128`) and one
//! `ds_read_b32` of scales per fragment, 4 LDS cycles each (16 lanes per cycle, 16 distinct
//! rows broadcast to the other lanes): a third of the wave's LDS cycles at `FM = 4`, and the
//! two-row-group kernels put 8 waves on one LDS. With `sfa_packed` the SFA regions are laid out
//! `[block][row][slot]` instead of `[slot][block][row]`, so one `ds_read_b128` (4 cycles) gives
//! a lane the scales of four fragments; the window's writes (one `ds_write_b32` per 4
//! fragments and window) then stride 16 or 32 bytes, 4-way conflicted once per window. It is
//! on where it measured faster (modelled, MI355X, `--scope xcd`): the two-row-group kernels
//! and 112 rows (416×7168×2304 14.17 → 12.62 µs); the 48- to 96-row kernels keep the
//! slot-major layout (packed: 160×7168×2304 48 rows 10.34 → 10.46, 1280×2048×7168 96 rows 25.31
//! → 26.15), as does every gfx942 kernel.
use crate::amdgpu_kernel;
use crate::args::{DenseGemmArgs, DenseSplitKArgs};

#[cfg(target_arch = "amdgpu")]
pub(crate) mod imp {
    use crate::args::DenseGemmArgs;
    use crate::dense::imp::{Bf16Store, Epilogue, TileJob, dense_job, dense_job_tile};
    use crate::intrinsics::*;
    use crate::tile::{self, SCALE_BLOCK_K, SCALE_BLOCK_N, SHUFFLED_UNIT, block_swizzle, frag_chunk};

    /// Bytes of one LDS row: one whole 128-K scale block of FP8.
    pub(crate) const ROW: u32 = SCALE_BLOCK_K;
    /// B fragments per wave (32 columns).
    pub(crate) const FN: usize = 2;
    /// LDS bytes of one A fragment's SFA for one 4-block window (64 lanes × f32), laid out
    /// `[block j][row r]` (`4·(16·j + r)`).
    pub(crate) const SFA_REGION: u32 = 256;

    /// The SFA window load of every bs loop: lane `l` loads block `l & 3` of the window of
    /// fragment row `l >> 2`, returned as `(row, block)`. Four neighbouring lanes read one
    /// row's 16 contiguous bytes, so a load instruction is 16 line requests; with the row
    /// fastest (lane `l`: row `l & 15`, block `l >> 4`) it was 64, one per lane, which at
    /// K = 7168 was a quarter of the texture path's cycles in the timing model
    /// (4096×2048×7168, 64-row tile: VMEM/L1 81 % → 67 % busy).
    #[inline(always)]
    pub(crate) fn sfa_lane(lane: u32) -> (u32, u32) {
        (lane >> 2, lane & 3)
    }

    /// Byte offset inside a fragment's [`SFA_REGION`] of the scale lane `lane` loaded
    /// ([`sfa_lane`]).
    #[inline(always)]
    pub(crate) fn sfa_slot_byte(lane: u32) -> u32 {
        let (r, j) = sfa_lane(lane);
        4 * (16 * j + r)
    }

    /// A `voffset` past every A and SFA resource (all below `tile::MAX_TENSOR_BYTES`), with room
    /// for the K offsets added to it: where a padding row of a gathered A reads (zeros).
    const PARKED: u32 = tile::MAX_TENSOR_BYTES as u32;

    /// The A / SFA row that row `r` of the problem reads for a job with a gathered A
    /// (`job.a_rows`; `r` itself without), or `None` for a padding row (its offsets are parked
    /// past both resources: it reads 0). One buffer load, before a main loop.
    #[inline(always)]
    pub(crate) fn a_row_of(job: &TileJob, r: u32) -> Option<u32> {
        match job.a_rows {
            None => Some(r),
            Some(map) => {
                // SAFETY: map.rs_rows is a wave-uniform resource over the row map (read-only
                // during the launch); the whole offset is in voffset, so rows past it read 0.
                let src = unsafe { buffer_load_i32(map.rs_rows, r * 4, 0) };
                if src >= 0 && (src as u32) < map.count { Some(src as u32) } else { None }
            }
        }
    }

    /// One block's B operands of a wave: `[fragment][read]`, 16 bytes per lane each.
    pub(crate) type BRegs = [[U32x4; 2]; FN];
    /// One block's A fragments of a wave: `[read][fragment]` as the two MFMA k-steps.
    pub(crate) type ARegs<const FM: usize> = [[[u64; 2]; FM]; 2];

    /// The GEMM of one `16·FM × 128` tile over the job's K blocks `kb0 .. kb0 + nkb` with B
    /// pre-shuffled (module docs), then `epi`. `keep_row` as for the dense `tile_gemm`.
    /// `FM` ∈ {2, 4, 8}.
    /// `$body` once per `$i` = 0, 1, …, `$n − 1` (`$n ≤ 8`), as straight-line copies with
    /// literal indices: every register array index is a constant before any loop pass runs, so
    /// the arrays always become registers (with `for` loops LLVM unrolled some of the FM = 8
    /// loops only in its late unroll pass, after the last SROA, and kept the accumulators in
    /// scratch).
    macro_rules! unroll {
        ($i:ident < $n:expr => $body:block) => {{
            const { assert!($n <= 8) };
            unroll!(@ $i, $n, $body, 0 1 2 3 4 5 6 7)
        }};
        (@ $i:ident, $n:expr, $body:block, $($k:literal)*) => {
            { $( { let $i: usize = $k; if $i < $n $body } )* }
        };
    }

    #[inline(always)]
    pub(crate) fn tile_gemm_bs<const FM: usize, const A2: bool, const AHEAD: bool, E: Epilogue>(job: &TileJob, keep_row: impl Fn(u32) -> bool, epi: &E) {
        tile_gemm_bs_q::<FM, A2, AHEAD, false, E>(job, keep_row, epi)
    }

    /// [`tile_gemm_bs`], and with `QA` over a **bf16** A quantized on its way into LDS: the
    /// job's A resource holds bf16 rows (`lda` bytes apart; `job.a_rows` must be `Some`, its
    /// `fp8_max` the format's), each work-item's 16 values of a 128-K block are reduced with the
    /// 7 other work-items of the row (DPP) to the block's maximum, scaled and converted with the
    /// activation kernels' recipe (`crate::quant`: the same bits as quantizing first), and the
    /// row's scale goes straight to the promotion's LDS slot; no SFA is loaded.
    #[inline(always)]
    pub(crate) fn tile_gemm_bs_q<const FM: usize, const A2: bool, const AHEAD: bool, const QA: bool, E: Epilogue>(
        job: &TileJob,
        keep_row: impl Fn(u32) -> bool,
        epi: &E,
    ) {
        const { assert!(FM == 2 || FM == 4 || FM == 8) };
        // Bytes of A per K element.
        let ab: u32 = if QA { 2 } else { 1 };
        let Some(qmax) = (if QA { job.a_rows.map(|m| m.fp8_max) } else { Some(0.0) }) else {
            return;
        };
        let bm = 16 * FM as u32;
        let stage = bm * ROW;
        let (n, m0, n0, lda, ldsf, nkb) = (job.n, job.m0, job.n0, job.lda, job.ldsf, job.nkb);
        let (rs_a, rs_b, rs_sfa, rs_sfb) = (job.rs_a, job.rs_b, job.rs_sfa, job.rs_sfb);
        let (k0, sf0) = (job.kb0 * SCALE_BLOCK_K, job.kb0 * 4);

        let tid = workitem_id_x();
        let lane = tid & 63;
        let wave = readfirstlane_u32(tid >> 6);

        // Gathered A (`job.a_rows`): one row-map load per row this work-item copies or scales.
        let a_row = |r: u32| a_row_of(job, r);

        // A copy: work-item t moves chunk (t & 7) of row (t >> 3) + 32·pass, FM/2 passes (16
        // elements: 16 bytes, or with QA 32 bytes of bf16).
        let (copy_row, copy_chunk) = (tid >> 3, tid & 7);
        let mut a_voff = [0u32; FM];
        unroll!(p < FM / 2 => {
            a_voff[p] = match a_row(m0 + 32 * p as u32 + copy_row) {
                Some(r) => r * lda + ab * (k0 + 16 * copy_chunk),
                None => PARKED + ab * (k0 + 16 * copy_chunk),
            };
        });
        let copy_lds = block_swizzle(copy_row, copy_chunk);
        let frag_lds = [block_swizzle(lane & 15, frag_chunk(lane >> 4, 0)), block_swizzle(lane & 15, frag_chunk(lane >> 4, 1))];

        // B: the wave's fragments n0/16 + 2·wave + f, unit (frag, kb0) onwards (one unit per block).
        let mut b_voff = [0u32; FN];
        unroll!(f < FN => {
            b_voff[f] = tile::shuffled_b_offset(n0 / 16 + 2 * wave + f as u32, job.kb0, ldsf, 0, lane);
        });

        let row_of = |fm: usize| m0 + 16 * fm as u32 + (lane & 15);
        // SFA through LDS: wave w loads the 4-block windows of the A fragments fm ≡ w (mod 4)
        // (lanes as `sfa_lane`) and writes them to the window's LDS region (fragment fm's 64
        // values at `sfa_region + 256·fm + sfa_slot_byte(l)`); every wave reads its scale of
        // block j of the window at `4·(16·j + (l & 15))`. Each row's scale line is loaded once
        // per workgroup instead of once per wave (the texture path's cost of SFA ÷ 4).
        let grp = lane >> 4;
        let (sfa_row, sfa_blk) = sfa_lane(lane);
        let mut sfa_voff = [0u32; FM];
        let mut keep = [true; FM];
        unroll!(fm < FM => {
            sfa_voff[fm] = match a_row(m0 + 16 * fm as u32 + sfa_row) {
                Some(r) => r * ldsf * 4 + sf0 + 4 * sfa_blk,
                None => PARKED + sf0 + 4 * sfa_blk,
            };
            keep[fm] = keep_row(row_of(fm));
        });
        let sfb_voff = (n0 / SCALE_BLOCK_N) * ldsf * 4 + sf0 + 4 * grp;
        let sf_read = 4 * (lane & 15);

        let load_a = #[inline(always)]
        |i: u32, ga: &mut [[U32x4; 2]; FM]| {
            unroll!(p < FM / 2 => {
                // SAFETY: rs_a covers exactly the problem's A (readable for the launch); the
                // whole offset is in voffset, so the range check reads 0 past it (tail rows,
                // blocks past the job's end on the last row), others are in-range bytes of A;
                // 16-byte aligned (lda % 16 == 0).
                ga[p][0] = unsafe { buffer_load_b128(rs_a, a_voff[p] + i * ab * SCALE_BLOCK_K, 0) };
                if QA {
                    // SAFETY: as above, the chunk's second 16 bytes of bf16.
                    ga[p][1] = unsafe { buffer_load_b128(rs_a, a_voff[p] + i * ab * SCALE_BLOCK_K + 16, 0) };
                }
            });
        };
        let load_b = #[inline(always)]
        |i: u32, gb: &mut BRegs| {
            unroll!(f < FN => {
                unroll!(r < 2 => {
                    // SAFETY: rs_b covers the problem's pre-shuffled B (shuffled_b_bytes(n, k));
                    // the whole offset is in voffset (the range check ignores soffset), so
                    // fragments past n (and units past the job's end on the last fragment)
                    // read 0; 16-byte aligned.
                    gb[f][r] = unsafe { buffer_load_b128(rs_b, b_voff[f] + i * SHUFFLED_UNIT + 1024 * r as u32, 0) };
                });
            });
        };
        // The two SFA regions after the two A stages (window w uses region w & 1).
        let sfa_region = |w: u32| 2 * stage + w * SFA_REGION * FM as u32;
        // Block `blk` (relative to the job) of A into stage `st`; with QA quantized here, its
        // scales into their promotion slots of window blk/4's region (the other windows'
        // readers are past a barrier: the block is written at most two blocks ahead).
        let write_a = #[inline(always)]
        |st: u32, ga: &[[U32x4; 2]; FM], blk: u32| {
            unroll!(p < FM / 2 => {
                let data = if QA {
                    let (v0, v1) = (bf16x8(ga[p][0]), bf16x8(ga[p][1]));
                    let amax = row8_umax(crate::quant::imp::abs_bits_max(&v0).max(crate::quant::imp::abs_bits_max(&v1)));
                    let (sf, inv, bad) = crate::quant::imp::scale_of(amax, qmax);
                    let (d0, d1) = (crate::quant::imp::convert8(&v0, inv, qmax, bad), crate::quant::imp::convert8(&v1, inv, qmax, bad));
                    if copy_chunk == 0 {
                        let row = 32 * p as u32 + copy_row;
                        let slot = sfa_region((blk / 4) & 1) + SFA_REGION * (row / 16) + 4 * (16 * (blk % 4) + row % 16);
                        // SAFETY: inside the window's SFA region (< lds_bytes), 4-byte aligned;
                        // its readers of two windows ago passed a barrier since.
                        unsafe { lds_write_b32(slot, sf.to_bits()) };
                    }
                    let (lo, hi) = (d0.to_u64(), d1.to_u64());
                    U32x4([lo as u32, (lo >> 32) as u32, hi as u32, (hi >> 32) as u32])
                } else {
                    ga[p][0]
                };
                // SAFETY: inside stage st (< 2·stage = the launch's sharedMemBytes), 16-byte
                // aligned; every wave has passed the barrier after its last read of this stage.
                unsafe { lds_write_b128(st * stage + copy_lds + 32 * p as u32 * ROW, data) };
            });
        };
        let read_a = #[inline(always)]
        |st: u32, af: &mut ARegs<FM>| {
            unroll!(r < 2 => {
                unroll!(fm < FM => {
                    // SAFETY: inside stage st, written and published by a barrier before.
                    af[r][fm] = unsafe { lds_read_b128(st * stage + frag_lds[r] + fm as u32 * 16 * ROW) }.to_u64x2();
                });
            });
        };
        // Per fragment read (two k-steps each): `read == 0` starts the block (C = 0).
        // With the CDNA4 MFMA (`K128_MFMA`) the whole block is one instruction per output, issued
        // at the second read (both reads' fragments are in registers by then).
        let mfmas = #[inline(always)]
        |r: usize, af: &ARegs<FM>, bf: &BRegs, part: &mut [[F32x4; FN]; FM]| {
            if K128_MFMA {
                if r == 1 {
                    unroll!(fm < FM => {
                        unroll!(f < FN => {
                            part[fm][f] = mfma_k128_frags(bf[f], [af[0][fm], af[1][fm]]);
                        });
                    });
                }
                return;
            }
            unroll!(s < 2 => {
                unroll!(fm < FM => {
                    unroll!(f < FN => {
                        let c = if r == 0 && s == 0 { F32x4::zero() } else { part[fm][f] };
                        part[fm][f] = mfma_f32_16x16x32_fp8_fp8(bf[f][r].to_u64x2()[s], af[r][fm][s], c);
                    });
                });
            });
        };
        // A constant-size memset rather than `[[zero; FN]; FM]`: rustc fills repeat arrays of
        // 8 elements with a loop, which LLVM unrolled only after its last SROA at FM = 8 (the
        // accumulators then lived in scratch).
        // SAFETY: all-zero bits are a valid [[F32x4; FN]; FM] (+0.0 in every lane).
        let mut acc: [[F32x4; FN]; FM] = unsafe { core::mem::zeroed() };
        // Scales: SFA of the next 4-block window (this wave's fragments) and SFB of the
        // current and the next window, loaded at the window's second block (so that no
        // promotion waits on a scale load); SFA is written to LDS at the window's last block.
        let mut sfa_ld = [0f32; FM];
        let (mut sfb, mut sfb_next) = (0f32, 0f32);
        let load_scales = #[inline(always)]
        |i: u32, sa: &mut [f32; FM], sb: &mut f32| {
            unroll!(fm < FM => {
                if !QA && fm as u32 % 4 == wave {
                    // SAFETY: rs_sfa covers the problem's SFA; the whole offset is in voffset,
                    // so offsets past its end read 0 (lane groups past a row's last block read
                    // the next row's scales, which are never used).
                    sa[fm] = unsafe { buffer_load_f32(rs_sfa, sfa_voff[fm] + i * 4, 0) };
                }
            });
            // SAFETY: rs_sfb covers the problem's SFB; offsets past its end read 0.
            *sb = unsafe { buffer_load_f32(rs_sfb, sfb_voff + i * 4, 0) };
        };
        let write_scales = #[inline(always)]
        |w: u32, sa: &[f32; FM]| {
            unroll!(fm < FM => {
                if !QA && fm as u32 % 4 == wave {
                    // SAFETY: inside region w & 1 (< lds_bytes), 4-byte aligned; every wave
                    // passed the barrier after its last read of this region (one window ago).
                    unsafe { lds_write_b32(sfa_region(w) + SFA_REGION * fm as u32 + sfa_slot_byte(lane), sa[fm].to_bits()) };
                }
            });
        };
        let mut window = 0u32;

        let zb = || [[U32x4([0; 4]); 2]; FN];
        let (mut b0, mut b1) = (zb(), zb());
        let (mut ga0, mut ga1) = ([[U32x4([0; 4]); 2]; FM], [[U32x4([0; 4]); 2]; FM]);
        let (mut a0, mut a1): (ARegs<FM>, ARegs<FM>) = ([[[0; 2]; FM]; 2], [[[0; 2]; FM]; 2]);
        // A is written to LDS `W` blocks ahead of its MFMAs (AHEAD: its fragments are read one
        // block ahead, so the stage must be ready a block earlier) and loaded from global
        // memory `L` blocks ahead (A2: one block earlier than it is written).
        let w_ahead: u32 = if AHEAD { 2 } else { 1 };
        let l_ahead: u32 = w_ahead + A2 as u32;
        // Prologue: window 0's scales; A(0 .. W) into stages 0 .. W; B(0) into registers; with
        // A2, A(W) into registers; with AHEAD, A(0)'s fragments into registers.
        load_scales(0, &mut sfa_ld, &mut sfb_next);
        write_scales(0, &sfa_ld);
        load_b(0, &mut b0);
        load_a(0, &mut ga0);
        write_a(0, &ga0, 0);
        if AHEAD {
            load_a(1, &mut ga0);
            write_a(1, &ga0, 1);
        }
        if A2 {
            load_a(w_ahead, &mut ga1);
        }
        lds_barrier();
        if AHEAD {
            read_a(0, &mut a0);
        }

        // One block `i` (j = i mod 4, static in each unrolled copy). It starts with the
        // barrier that publishes the stages and scales written by the previous block and tells
        // every wave that the stage this block overwrites has been read by all (reads whose
        // values are used only in a later block are sunk by LLVM to the top of that block, so
        // they must not be separated from their block's start by a barrier — hence barrier
        // first). Then: the next block's B into `bnext`, A(i + L) into `gload`; A(i)'s
        // fragments (read now from stage j & 1, or, AHEAD, read during the previous block into
        // `acur` while this block reads A(i + 1)'s into `anext`); MFMAs; promotion; A(i + W)
        // (from `gwrite`, loaded a block ago with A2) into stage (j + W) & 1.
        // A macro rather than a closure: a closure borrowing `acc` left an `assume(&acc != null)`
        // in the IR at FM = 8, which kept LLVM's SROA from putting the accumulators in registers.
        macro_rules! step {
            ($i:expr, $j:expr, $bcur:expr, $bnext:expr, $gload:expr, $gwrite:expr, $acur:expr, $anext:expr) => {{
                let (i, j): (u32, u32) = ($i, $j);
                let (bcur, bnext): (&BRegs, &mut BRegs) = ($bcur, $bnext);
                lds_barrier();
                if j == 0 {
                    sfb = sfb_next;
                }
                if j == 1 {
                    load_scales(i + 3, &mut sfa_ld, &mut sfb_next);
                }
                load_a(i + l_ahead, $gload);
                load_b(i + 1, bnext);
                sched_fence();
                // The block's partial sums: local to the step.
                let mut part = [[F32x4::zero(); FN]; FM];
                if AHEAD {
                    let (acur, anext): (&ARegs<FM>, &mut ARegs<FM>) = ($acur, $anext);
                    read_a((j + 1) & 1, anext);
                    mfmas(0, acur, bcur, &mut part);
                    mfmas(1, acur, bcur, &mut part);
                } else {
                    let mut af: ARegs<FM> = [[[0; 2]; FM]; 2];
                    read_a(j & 1, &mut af);
                    mfmas(0, &af, bcur, &mut part);
                    mfmas(1, &af, bcur, &mut part);
                }
                sched_fence();
                let s_b = f32::from_bits(readlane_dyn(sfb.to_bits(), 16 * j)) * tile::PROMOTION_DOWN;
                unroll!(fm < FM => {
                    // SAFETY: inside this window's region, written before a barrier.
                    let s_a = f32::from_bits(unsafe { lds_read_b32(sfa_region(window & 1) + SFA_REGION * fm as u32 + sf_read + 64 * j) });
                    let s = s_a * s_b;
                    unroll!(f < FN => {
                        acc[fm][f] = part[fm][f].fma_splat(s, acc[fm][f]);
                    });
                });
                sched_fence();
                write_a((j + w_ahead) & 1, if A2 { $gwrite } else { &*$gload }, i + w_ahead);
                if j == 3 {
                    window += 1;
                    write_scales(window & 1, &sfa_ld);
                }
            }};
        }

        let mut i = 0;
        while i < nkb {
            step!(i, 0, &b0, &mut b1, &mut ga0, &ga1, &a0, &mut a1);
            if i + 1 >= nkb {
                break;
            }
            step!(i + 1, 1, &b1, &mut b0, &mut ga1, &ga0, &a1, &mut a0);
            if i + 2 >= nkb {
                break;
            }
            step!(i + 2, 2, &b0, &mut b1, &mut ga0, &ga1, &a0, &mut a1);
            if i + 3 >= nkb {
                break;
            }
            step!(i + 3, 3, &b1, &mut b0, &mut ga1, &ga0, &a1, &mut a0);
            i += 4;
        }

        // Epilogue: lane holds rows row_of(fm), columns n0 + 32·wave + 16·f + 4·(l >> 4) + 0..4.
        epi.begin();
        unroll!(fm < FM => {
            let row = row_of(fm);
            unroll!(f < FN => {
                let col = n0 + 32 * wave + 16 * f as u32 + 4 * (lane >> 4);
                epi.store(row, col, col < n && keep[fm], acc[fm][f]);
            });
        });
        epi.finish(keep_row);
    }

    /// Bytes of one A stage of the pipelined loop: `32·⌈FM/2⌉` rows (the copy moves 32 rows per
    /// pass; odd `FM` pads 16 rows), as in [`tile::bs_pipe_lds_bytes`].
    pub(crate) const fn pipe_stage_bytes(fm: u32) -> u32 {
        32 * fm.div_ceil(2) * ROW
    }
    /// SFA slots (of [`SFA_REGION`] bytes) per window region of the pipelined loop: `4·⌈FM/4⌉`
    /// (wave `w` writes slots `4q + w`).
    pub(crate) const fn pipe_sfa_slots(fm: u32) -> u32 {
        4 * fm.div_ceil(4)
    }
    const _: () = assert!(2 * pipe_stage_bytes(2) + 2 * SFA_REGION * pipe_sfa_slots(2) == tile::bs_pipe_lds_bytes(32));
    const _: () = assert!(4 * pipe_stage_bytes(2) + 2 * SFA_REGION * pipe_sfa_slots(2) == tile::bs_narrow_lds_bytes(4));
    const _: () = assert!(2 * pipe_stage_bytes(2) + 2 * SFA_REGION * pipe_sfa_slots(2) == tile::bs_narrow_lds_bytes(2));
    const _: () = assert!(2 * pipe_stage_bytes(4) + 2 * SFA_REGION * pipe_sfa_slots(4) == tile::bs_pipe_lds_bytes(64));
    const _: () = assert!(2 * pipe_stage_bytes(3) + 2 * SFA_REGION * pipe_sfa_slots(3) == tile::bs_pipe_lds_bytes(48));
    const _: () = assert!(2 * pipe_stage_bytes(5) + 2 * SFA_REGION * pipe_sfa_slots(5) == tile::bs_pipe_lds_bytes(80));
    const _: () = assert!(2 * pipe_stage_bytes(6) + 2 * SFA_REGION * pipe_sfa_slots(6) == tile::bs_pipe_lds_bytes(96));

    /// Whether the pipelined loop of `rg` row groups of `fm` fragments lays its SFA regions out
    /// row-major (`[block][row][slot]`: a lane reads four fragments' scales with one
    /// `ds_read_b128`) rather than slot-major (one `ds_read_b32` per fragment): on gfx950,
    /// whose LDS the doubled MFMA rate leaves busier, for the kernels it made faster — two row
    /// groups (the LDS shared by 8 waves) and 112 rows (module docs, "Scales on gfx950").
    pub(crate) const fn sfa_packed(fm: usize, rg: u32) -> bool {
        cfg!(fp8gemm_gfx950) && (rg == 2 || fm >= 7)
    }

    /// One block's B operands of a wave in the pipelined loop: indexed by block mod 4.
    pub(crate) type BSets = [BRegs; 4];

    /// The pipelined loop's promotion `part · s + acc`: [`F32x4::fma_splat_in_place`] from 64
    /// rows on (the promotions stay interleaved with the MFMAs instead of one lump per block;
    /// registers 64 / 80 / 96 rows 304 / 366 / 412 → 294 / 344 / 398, the 64-row stream-K
    /// kernel 209 → 204; modelled MI325X µs: 1024×2048×7168 64-row data-parallel 40.47 →
    /// 39.34, 64-row stream-K 1408×2048×7168 49.9 → 47.8, 1664×2048×7168 56.3 → 55.6,
    /// 4096×768×7168 56.2 → 55.5, 4096×2048×7168 119.9 → 120.5; MI300X 4096×7168×2048
    /// 148.0 → 147.5), `fma_splat` for 48 rows (the written-out splat costs it 10 registers
    /// and its second workgroup per CU).
    #[inline(always)]
    fn promote<const FM: usize>(part: F32x4, s: f32, acc: F32x4) -> F32x4 {
        if FM >= 3 { part.fma_splat_in_place(s, acc) } else { part.fma_splat(s, acc) }
    }

    /// The pipelined bs loop (module docs, "Pipelined loop", "Loop shape"): the
    /// same tile, operands, MFMA chains and promotion as [`tile_gemm_bs`] (so the same result
    /// bit for bit), scheduled so that the MFMAs never wait. B is loaded `BA` blocks ahead,
    /// A's fragments one block ahead (read during the previous block's MFMAs), A from global
    /// memory three blocks ahead and written to LDS two ahead; each MFMA is followed by at most
    /// two other memory instructions or one output pair's promotion, in a fixed source order
    /// held by `sched_fence`s; the promotion of an output pair runs after the next pair's
    /// MFMAs (the last pair's in the next block), so no VALU waits on an MFMA result; the
    /// per-window SFA loads are straight-line (wave `w` loads fragments `4q + w`).
    /// `FM` ∈ 2..=8 (the dense data-parallel kernels use 3, 4, 5, 6; the split-K kernels 2
    /// and 4); `NF` ∈ {1, 2} B fragments per wave (tile `16·FM × 64·NF`; 1: the 32 × 64
    /// kernels, module docs "Narrow tiles"); `BA` ∈ {1, 2} blocks of B ahead; `BB` ∈ {1, 2}
    /// blocks per barrier (2: four A stages, A written to LDS three blocks ahead; only with
    /// `NF = 1`, module docs "One barrier per two blocks").
    #[inline(always)]
    pub(crate) fn tile_gemm_bs_pipe<const FM: usize, const NF: usize, const BA: u32, const BB: u32, E: Epilogue>(
        job: &TileJob,
        keep_row: impl Fn(u32) -> bool,
        epi: &E,
    ) {
        tile_gemm_bs_pipe_rg::<FM, NF, BA, BB, 1, E>(job, keep_row, epi)
    }

    /// Bytes of LDS one row group of the pipelined loop uses (its A stages and SFA regions):
    /// [`tile::bs_pipe_lds_bytes_staged`] of its `16·FM` rows.
    pub(crate) const fn pipe_group_lds_bytes(fm: u32, bb: u32) -> u32 {
        2 * bb * pipe_stage_bytes(fm) + 2 * SFA_REGION * pipe_sfa_slots(fm)
    }

    /// [`tile_gemm_bs_pipe`] for a workgroup of `RG` row groups of 4 waves (`256·RG`
    /// work-items) over a `RG·16·FM × 64·NF` tile at `(job.m0, job.n0)`: row group `g` (waves
    /// `4g .. 4g + 4`) runs the 4-wave loop on rows `job.m0 + 16·FM·g ..` with its own A
    /// stages and SFA regions (LDS from byte `g ·` [`pipe_group_lds_bytes`]); the groups
    /// share every barrier, so they run a block apart at most, and load the same B bytes at
    /// the same time — the second group's B loads hit the CU's vector L1, so the tile reads B
    /// from the L2 once for `RG·16·FM` rows (module docs, "Row groups").
    #[inline(always)]
    pub(crate) fn tile_gemm_bs_pipe_rg<const FM: usize, const NF: usize, const BA: u32, const BB: u32, const RG: u32, E: Epilogue>(
        job: &TileJob,
        keep_row: impl Fn(u32) -> bool,
        epi: &E,
    ) {
        const { assert!(RG == 1 || RG == 2) };
        const { assert!(FM >= 2 && FM <= 8) };
        const { assert!(BA == 1 || BA == 2) };
        const { assert!(NF == 1 || NF == 2) };
        const { assert!(BB == 1 || (BB == 2 && NF == 1)) };
        let stage = pipe_stage_bytes(FM as u32);
        // LDS stages of one block of A each: 2·BB (BB blocks per barrier).
        let nst = 2 * BB;
        // Row group of this wave (0 with one group): its rows and its LDS.
        let group = if RG == 1 { 0 } else { readfirstlane_u32(workitem_id_x() >> 8) };
        let gbase = group * pipe_group_lds_bytes(FM as u32, BB);
        let (n, m0, n0, lda, ldsf, nkb) = (job.n, job.m0 + group * 16 * FM as u32, job.n0, job.lda, job.ldsf, job.nkb);
        let (rs_a, rs_b, rs_sfa, rs_sfb) = (job.rs_a, job.rs_b, job.rs_sfa, job.rs_sfb);
        let (k0, sf0) = (job.kb0 * SCALE_BLOCK_K, job.kb0 * 4);

        let tid = if RG == 1 { workitem_id_x() } else { workitem_id_x() & (tile::THREADS - 1) };
        let lane = tid & 63;
        let wave = readfirstlane_u32(tid >> 6);

        // A copy: work-item t moves chunk (t & 7) of row (t >> 3) + 32·pass, ⌈FM/2⌉ passes (odd
        // FM: the last pass's upper 16 rows are other rows of A, or 0, written to the stage's
        // padding rows, never read).
        // Gathered A (`job.a_rows`), as in tile_gemm_bs.
        let a_row = |r: u32| a_row_of(job, r);
        let (copy_row, copy_chunk) = (tid >> 3, tid & 7);
        let mut a_voff = [0u32; FM];
        unroll!(p < FM.div_ceil(2) => {
            a_voff[p] = match a_row(m0 + 32 * p as u32 + copy_row) {
                Some(r) => r * lda + k0 + 16 * copy_chunk,
                None => PARKED + k0 + 16 * copy_chunk,
            };
        });
        let copy_lds = block_swizzle(copy_row, copy_chunk);
        let frag_lds = [block_swizzle(lane & 15, frag_chunk(lane >> 4, 0)), block_swizzle(lane & 15, frag_chunk(lane >> 4, 1))];

        let mut b_voff = [0u32; NF];
        unroll!(f < NF => {
            b_voff[f] = tile::shuffled_b_offset(n0 / 16 + NF as u32 * wave + f as u32, job.kb0, ldsf, 0, lane);
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
            sfa_voff[q] = match a_row(m0 + 16 * (4 * q as u32 + wave) + sfa_row) {
                Some(r) => r * ldsf * 4 + sf0 + 4 * sfa_blk,
                None => PARKED + sf0 + 4 * sfa_blk,
            };
        });
        let sfb_voff = (n0 / SCALE_BLOCK_N) * ldsf * 4 + sf0 + 4 * grp;
        let sfa_region = |w: u32| gbase + nst * stage + w * SFA_REGION * pipe_sfa_slots(FM as u32);
        // Where this lane's window scale of slot `slot` goes in a region: slot-major
        // (`[slot][block][row]`), or with `sfa_packed(FM, RG)` row-major (`[block][row][slot]`, so that one
        // `ds_read_b128` gives a lane the scales of four fragments; module docs, "Scales on
        // gfx950").
        let sfa_slots = pipe_sfa_slots(FM as u32);
        let sfa_write_byte = |slot: u32| {
            if sfa_packed(FM, RG) {
                let (r, jj) = sfa_lane(lane);
                4 * (sfa_slots * (16 * jj + r) + slot)
            } else {
                SFA_REGION * slot + sfa_slot_byte(lane)
            }
        };
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
            unsafe { lds_write_b128(gbase + st * stage + copy_lds + 32 * p as u32 * ROW, v) };
        };
        let read_a = #[inline(always)]
        |st: u32, r: usize, fm: usize| -> [u64; 2] {
            // SAFETY: inside stage st, written and published by a barrier before.
            unsafe { lds_read_b128(gbase + st * stage + frag_lds[r] + fm as u32 * 16 * ROW) }.to_u64x2()
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
            unsafe { lds_write_b32(sfa_region(w) + sfa_write_byte(4 * q as u32 + wave), v.to_bits()) };
        };

        // SAFETY: all-zero bits are a valid [[F32x4; NF]; FM] (+0.0 in every lane).
        let mut acc: [[F32x4; NF]; FM] = unsafe { core::mem::zeroed() };
        let mut sfa_ld = [0f32; FM];
        let mut sfb = [0u32; 4];
        let mut window = 0u32;

        let zb = || [[U32x4([0; 4]); 2]; NF];
        // B operands by block mod 4: [fragment][read].
        let mut b: [[[U32x4; 2]; NF]; 4] = [zb(), zb(), zb(), zb()];
        // A from global memory: block i loads A(i + la) into register set `ga_set(i + la)` and
        // writes A(i + 2) (loaded la − 2 blocks before) into LDS. Three ahead with two B
        // fragments per wave; four with one (a block is then half as many MFMAs, and one block
        // between the load and its LDS write left the write waiting for it: modelled MI300X
        // 64×2112×7168, 32 × 64 split 4, 10.72 → 10.22 µs).
        let la: u32 = if NF == 1 { 3 + BB } else { 3 };
        let ga_set = |blk: usize| if NF == 1 { blk % 4 } else { (blk + 1) % 2 };
        let mut ga = [[U32x4([0; 4]); FM]; 4];
        let mut a: [ARegs<FM>; 2] = [[[[0; 2]; FM]; 2]; 2];
        // The last output pair's partial sums and scale, promoted during the next block.
        let mut pend = [F32x4::zero(); NF];
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
        // With two blocks per barrier, A(2) for stage 2 as well.
        let mut a2 = [U32x4([0; 4]); FM];
        if BB == 2 {
            unroll!(p < FM.div_ceil(2) => {
                a2[p] = load_a(2, p);
            });
        }
        sched_fence();
        unroll!(f < NF => {
            unroll!(r < 2 => {
                b[0][f][r] = load_b(0, f, r);
                if BA == 2 {
                    b[1][f][r] = load_b(1, f, r);
                }
            });
        });
        unroll!(p < FM.div_ceil(2) => {
            ga[ga_set(1 + BB as usize)][p] = load_a(1 + BB, p);
            if NF == 1 {
                ga[ga_set(2 + BB as usize)][p] = load_a(2 + BB, p);
            }
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
        if BB == 2 {
            unroll!(p < FM.div_ceil(2) => {
                write_a(2, p, a2[p]);
            });
        }
        lds_barrier();
        unroll!(r < 2 => {
            unroll!(fm < FM => {
                a[0][r][fm] = read_a(0, r, fm);
            });
        });

        // Block i (j = i mod 4, static in each unrolled copy): barrier; SFA of block i; then
        // the 4·NF·FM MFMAs (group fm = outputs (fm, 0..NF), order (r, s, f) inside it), the
        // extra instructions after MFMA g (NF = 2; with NF = 1 the reads and loads go after
        // every g): A(i + 1) fragment reads after the even g, global loads (A(i + la),
        // B(i + BA), at j = 1 the next window's scales) after the odd g, promotion of the
        // previous block's last group after g = 2·NF (+2) and of group fm − 1 after
        // g = 4·NF·fm + 2·NF (+2), A(i + 2)'s LDS writes after the odd g from 2·NF·FM + 1; at
        // j = 3 the next window's SFA write.
        macro_rules! step {
            ($i:expr, $j:expr) => {{
                let (i, j): (u32, u32) = ($i, $j);
                const J: usize = $j;
                if J % BB as usize == 0 {
                    lds_barrier();
                }
                if j == 0 {
                    // The window's four SFB values into scalar registers now, so `sfb_next`
                    // can be reloaded at j = 1 with no copy of it carried to the loop's latch
                    // (such a copy made the latch wait `vmcnt(0)` for every load in flight).
                    unroll!(jj < 4 => {
                        sfb[jj] = readlane_dyn(sfb_next.to_bits(), 16 * jj as u32);
                    });
                }
                let mut s_a = [0f32; FM];
                if sfa_packed(FM, RG) {
                    unroll!(h < FM.div_ceil(4) => {
                        // SAFETY: inside this window's region (row `lane & 15` of block j, slots
                        // 4h .. 4h + 4 < sfa_slots), 16-byte aligned, written before a barrier.
                        let v = unsafe { lds_read_b128(sfa_region(window & 1) + 4 * (sfa_slots * (16 * j + (lane & 15)) + 4 * h as u32)) }.to_array();
                        unroll!(e < 4 => {
                            if 4 * h + e < FM {
                                s_a[(4 * h + e) % FM] = f32::from_bits(v[e]);
                            }
                        });
                    });
                } else {
                    unroll!(fm < FM => {
                        // SAFETY: inside this window's region, written before a barrier.
                        s_a[fm] = f32::from_bits(unsafe { lds_read_b32(sfa_region(window & 1) + SFA_REGION * fm as u32 + sf_read + 64 * j) });
                    });
                }
                let s_b = f32::from_bits(sfb[J]) * tile::PROMOTION_DOWN;
                sched_fence();
                let mut part = [[F32x4::zero(); NF]; FM];
                let n_a_loads = FM.div_ceil(2);
                let n_g = n_a_loads + 2 * NF + if J == 1 { FM.div_ceil(4) + 1 } else { 0 };
                unroll!(fm < FM => {
                    unroll!(t < 4 * NF => {
                        let g = 4 * NF * fm + t;
                        let (r, s, f) = (t / (2 * NF), (t / NF) % 2, t % NF);
                        if !K128_MFMA {
                            let c = if r == 0 && s == 0 { F32x4::zero() } else { part[fm][f] };
                            part[fm][f] = mfma_f32_16x16x32_fp8_fp8(b[J][f][r].to_u64x2()[s], a[J & 1][r][fm][s], c);
                        } else if r == 1 && s == 1 {
                            // The CDNA4 MFMA: the block's four chunks at the last one's slot (the
                            // loads of this block write other register sets: b[J + BA], a[J + 1]).
                            part[fm][f] = mfma_k128_frags(b[J][f], [a[J & 1][0][fm], a[J & 1][1][fm]]);
                        }
                        // A(i + 1) fragment read slot: after the even MFMAs with two B
                        // fragments per wave, after each of the first 2·FM with one (the
                        // block's last MFMAs then cover the reads' latency before the next
                        // block's barrier waits for them).
                        let (a_slot, ax) = if NF == 2 { (g % 2 == 0, g / 2) } else { (true, g) };
                        if a_slot && ax < 2 * FM {
                            let (rr, ff) = (ax / FM, ax % FM);
                            a[(J + 1) & 1][rr][ff] = read_a(if BB == 1 { (j + 1) & 1 } else { (j + 1) % nst }, rr, ff);
                        }
                        // Global-load slot x: after the odd MFMAs with two B fragments, after
                        // every MFMA with one (half the MFMAs for the same A and scale loads).
                        let (slot, x) = if NF == 2 { (g % 2 == 1, g / 2) } else { (true, g) };
                        if slot && x < n_g {
                            if x < n_a_loads {
                                ga[ga_set(J + la as usize)][x] = load_a(i + la, x);
                            } else if x < n_a_loads + 2 * NF {
                                let y = x - n_a_loads;
                                b[(J + BA as usize) % 4][y / 2][y % 2] = load_b(i + BA, y / 2, y % 2);
                            } else if x < n_a_loads + 2 * NF + FM.div_ceil(4) {
                                let q = x - n_a_loads - 2 * NF;
                                sfa_ld[q] = load_sfa(i + 3, q);
                            } else {
                                sfb_next = load_sfb(i + 3);
                            }
                        }
                        // Promotions one output (two `v_pk_fma`) per MFMA, after the even
                        // ones of a pair's second half (t = 4, 6 with two B fragments: no
                        // global load there; t = 2 with one), so that no group outlasts the
                        // MFMA it follows.
                        if g >= 2 * NF && g < 4 * NF && g % 2 == 0 {
                            let ff = (g - 2 * NF) / 2;
                            acc[FM - 1][ff] = promote::<FM>(pend[ff], pend_s, acc[FM - 1][ff]);
                        }
                        if t >= 2 * NF && t % 2 == 0 && fm >= 1 {
                            let ff = (t - 2 * NF) / 2;
                            let s = s_a[fm - 1] * s_b;
                            acc[fm - 1][ff] = promote::<FM>(part[fm - 1][ff], s, acc[fm - 1][ff]);
                        }
                        if g % 2 == 1 && g > 2 * NF * FM && (g - 2 * NF * FM) / 2 < FM.div_ceil(2) {
                            let p = (g - 2 * NF * FM) / 2;
                            write_a(if BB == 1 { j & 1 } else { (j + 1 + BB) % nst }, p, ga[ga_set(J + 1 + BB as usize)][p]);
                        }
                        if j == 3 && g == 4 * NF * FM - 3 {
                            // The next window's SFA into LDS, in a free slot after an odd
                            // MFMA (after the loop body it lengthened the latch): its region
                            // was last read in the previous window, before this block's
                            // barrier.
                            unroll!(q < FM.div_ceil(4) => {
                                write_sfa((window + 1) & 1, q, sfa_ld[q]);
                            });
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

        // Nested conditions rather than `break`s between the unrolled steps: the loop's only
        // exit is its header (one back edge, no exiting blocks inside the body), a shape LLVM's
        // register allocator handles in fewer registers (module docs, "Loop shape").
        let mut i = 0;
        while i < nkb {
            step!(i, 0);
            if i + 1 < nkb {
                step!(i + 1, 1);
                if i + 2 < nkb {
                    step!(i + 2, 2);
                    if i + 3 < nkb {
                        step!(i + 3, 3);
                    } else {
                        s_waitcnt::<{ waitcnt::VMCNT0 }>();
                    }
                } else {
                    s_waitcnt::<{ waitcnt::VMCNT0 }>();
                }
            } else {
                s_waitcnt::<{ waitcnt::VMCNT0 }>();
            }
            i += 4;
        }
        unroll!(ff < NF => {
            acc[FM - 1][ff] = promote::<FM>(pend[ff], pend_s, acc[FM - 1][ff]);
        });

        epi.begin();
        unroll!(fm < FM => {
            let row = row_of(fm);
            unroll!(f < NF => {
                let col = n0 + 16 * NF as u32 * wave + 16 * f as u32 + 4 * (lane >> 4);
                epi.store(row, col, col < n && keep[fm], acc[fm][f]);
            });
        });
        epi.finish(keep_row);
    }

    /// The dense bs kernels: the dense grid and tile order ([`dense_job`]) over the
    /// pre-shuffled B.
    #[inline(always)]
    pub fn gemm_bs<const FM: usize, const A2: bool, const AHEAD: bool>(args: DenseGemmArgs) {
        let Some((mut job, epi)) = dense_job::<FM, 2, true>(&args) else { return };
        job.rs_b = BufferResource::new(args.b.addr(), tile::shuffled_b_bytes(args.n as u64, args.k as u64) as u32);
        tile_gemm_bs::<FM, A2, AHEAD, _>(&job, |_| true, &epi);
    }

    /// The dense bs kernels of `RG` row groups on the pipelined loop
    /// ([`tile_gemm_bs_pipe_rg`]): a `RG·16·FM × 64·NF` tile per workgroup of `256·RG`
    /// work-items, the dense grid and tile order ([`dense_job_tile`]).
    #[inline(always)]
    pub fn gemm_bs_pipe_rg<const FM: usize, const NF: usize, const BA: u32, const RG: u32>(args: DenseGemmArgs) {
        let (bm, bn) = (RG * 16 * FM as u32, 64 * NF as u32);
        let lds = RG * pipe_group_lds_bytes(FM as u32, 1);
        const {
            let (bm, bn) = (RG * 16 * FM as u32, 64 * NF as u32);
            assert!(bm * bn / 4 % (RG * tile::THREADS) == 0 && bm * bn / 4 / (RG * tile::THREADS) <= 16, "finish stores 1..=16 pieces per work-item");
            assert!(bm * 2 * bn <= RG * pipe_group_lds_bytes(FM as u32, 1), "the bf16 staging area fits the groups' LDS");
        };
        let Some(mut job) = dense_job_tile(&args, bm, bn) else { return };
        job.rs_b = BufferResource::new(args.b.addr(), tile::shuffled_b_bytes(args.n as u64, args.k as u64) as u32);
        let rs_d = BufferResource::new(args.d.addr(), ((args.m - 1) * args.ldd + args.n) * 2);
        let epi = Bf16Store::rows(rs_d, args.ldd, args.n, job.m0, job.n0, bm, bn, lds, RG * tile::THREADS);
        tile_gemm_bs_pipe_rg::<FM, NF, BA, 1, RG, _>(&job, |_| true, &epi);
    }

    /// The dense bs kernels on the pipelined loop ([`tile_gemm_bs_pipe`]).
    #[inline(always)]
    pub fn gemm_bs_pipe<const FM: usize, const NF: usize, const BA: u32, const BB: u32>(args: DenseGemmArgs) {
        let Some((mut job, epi)) = dense_job::<FM, NF, true>(&args) else { return };
        job.rs_b = BufferResource::new(args.b.addr(), tile::shuffled_b_bytes(args.n as u64, args.k as u64) as u32);
        tile_gemm_bs_pipe::<FM, NF, BA, BB, _>(&job, |_| true, &epi);
    }
}

/// bs (pre-shuffled B) 32 × 128 tile: small M.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bs_bm32_bn128(args: DenseGemmArgs) {
    imp::gemm_bs::<2, true, true>(args)
}

/// bs (pre-shuffled B) 64 × 128 tile, two workgroups per CU: medium M with many tiles per CU.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bs_bm64_bn128(args: DenseGemmArgs) {
    imp::gemm_bs::<4, true, false>(args)
}

/// bs (pre-shuffled B) 64 × 128 tile on the pipelined loop (`imp::tile_gemm_bs_pipe`), two
/// workgroups per CU: the host's 64-row data-parallel kernel at every tile count.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bs_pipe_bm64_bn128(args: DenseGemmArgs) {
    imp::gemm_bs_pipe::<4, 2, 2, 1>(args)
}

/// bs (pre-shuffled B) 48 × 128 tile on the pipelined loop, two workgroups per CU.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bs_pipe_bm48_bn128(args: DenseGemmArgs) {
    imp::gemm_bs_pipe::<3, 2, 2, 1>(args)
}

/// bs (pre-shuffled B) 80 × 128 tile on the pipelined loop, one workgroup per CU.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bs_pipe_bm80_bn128(args: DenseGemmArgs) {
    imp::gemm_bs_pipe::<5, 2, 2, 1>(args)
}

/// bs (pre-shuffled B) 96 × 128 tile on the pipelined loop, one workgroup per CU.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bs_pipe_bm96_bn128(args: DenseGemmArgs) {
    imp::gemm_bs_pipe::<6, 2, 2, 1>(args)
}

/// bs (pre-shuffled B) 112 × 128 tile on the pipelined loop, one workgroup per CU.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bs_pipe_bm112_bn128(args: DenseGemmArgs) {
    imp::gemm_bs_pipe::<7, 2, 2, 1>(args)
}

/// bs (pre-shuffled B) 96 × 128 tile of two row groups (512 work-items: two 48-row groups of
/// the pipelined loop sharing B through the L1; module docs, "Row groups").
#[amdgpu_kernel(workgroup_size = 512, agprs = false)]
pub fn fp8_gemm_nt_bs_pipe_rg2_bm96_bn128(args: DenseGemmArgs) {
    imp::gemm_bs_pipe_rg::<3, 2, 2, 2>(args)
}

/// bs (pre-shuffled B) 128 × 128 tile of two row groups (512 work-items: two 64-row groups of
/// the pipelined loop sharing B through the L1; module docs, "Row groups").
#[amdgpu_kernel(workgroup_size = 512, agprs = false)]
pub fn fp8_gemm_nt_bs_pipe_rg2_bm128_bn128(args: DenseGemmArgs) {
    imp::gemm_bs_pipe_rg::<4, 2, 2, 2>(args)
}

/// bs (pre-shuffled B) 128 × 128 tile: large M.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bs_bm128_bn128(args: DenseGemmArgs) {
    imp::gemm_bs::<8, true, false>(args)
}

/// bs split-K, 32 × 128 tile (decode: few tiles, long K; the split-K protocol of
/// [`crate::dense`], "Split-K") on the pipelined loop (`imp::tile_gemm_bs_pipe`, B two blocks
/// ahead; module docs, "Split-K on the pipelined loop"), counted per wave (`dense::imp::splitk_finish_waves`).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_splitk_bs_bm32_bn128(args: DenseSplitKArgs) {
    crate::dense::imp::gemm_splitk_units::<2, 2, true, true>(args, |job, epi| imp::tile_gemm_bs_pipe::<2, 2, 2, 1, _>(job, |_| true, epi))
}

/// bs split-K, 32 × 64 tile (decode: one B fragment per wave, so half the texture-path bytes
/// per block of the 32 × 128 tile and half its partial slot), on the pipelined loop, with the
/// per-wave split-K protocol (`dense::imp::splitk_finish_waves`).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_splitk_bs_bm32_bn64(args: DenseSplitKArgs) {
    crate::dense::imp::gemm_splitk_units::<2, 1, true, true>(args, |job, epi| imp::tile_gemm_bs_pipe::<2, 1, 2, 2, _>(job, |_| true, epi))
}

/// bs (pre-shuffled B) 32 × 64 tile on the pipelined loop (decode shapes whose 32 × 64 tiles
/// fill the device without splitting K).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bs_pipe_bm32_bn64(args: DenseGemmArgs) {
    imp::gemm_bs_pipe::<2, 1, 2, 2>(args)
}

/// bs (pre-shuffled B) 32 × 64 tile on the pipelined loop with one barrier per block (two A
/// stages, 10 KiB of LDS: four workgroups per CU), for more than three 32 × 64 tiles per CU.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bs_pipe_b1_bm32_bn64(args: DenseGemmArgs) {
    imp::gemm_bs_pipe::<2, 1, 2, 1>(args)
}

/// bs split-K, 64 × 128 tile, on the pipelined loop, counted per wave
/// (`dense::imp::splitk_finish_waves`).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_splitk_bs_bm64_bn128(args: DenseSplitKArgs) {
    crate::dense::imp::gemm_splitk_units::<4, 2, true, true>(args, |job, epi| imp::tile_gemm_bs_pipe::<4, 2, 2, 1, _>(job, |_| true, epi))
}

/// bs split-K, 128 × 128 tile.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_splitk_bs_bm128_bn128(args: DenseSplitKArgs) {
    crate::dense::imp::gemm_splitk::<8, 2, 1, true>(args)
}
