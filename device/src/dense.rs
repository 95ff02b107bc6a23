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
//! * **Register reuse**: a wave owns `FM × FN` fragments (16×16 each); per 128-K block it reads
//!   `FM` A fragments and `FN` B fragments twice (`ds_read_b128`, two k-steps each) and issues
//!   `4·FM·FN` MFMAs: each A fragment is used against all `FN` B fragments and vice versa.
//! * **Global → LDS copy**: one whole 128-K block per LDS row ([`crate::tile`] has the layout).
//!   Work-item `t` loads chunk `t & 7` (16 B) of row `t >> 3` (+ 32 rows per pass) with
//!   `buffer_load_dwordx4`, so every load instruction of a wave covers 8 rows × 128 B = 8 *whole*
//!   128-byte lines (raw buffer resources whose size bounds each tensor, so rows past `m` or `n`
//!   read as 0). (Before: 64-K half blocks, 16 half-used lines per instruction — twice the
//!   texture-path cycles per byte in the timing model, which was the limit.)
//! * **Pipeline**: one LDS buffer of one block. The operand loads of block `kb + DEPTH` are
//!   issued at the start of block `kb` into registers (`DEPTH` = [`crate::tile::DenseTile::prefetch_depth`]:
//!   2 for 64×64 with two register sets and the loop unrolled by 2, 1 for the larger tiles,
//!   whose second set would cost occupancy); the block's MFMAs run from LDS; then a barrier (all
//!   waves done reading), the `ds_write_b128` of block `kb + 1` from registers, and a barrier.
//!   Two workgroups per CU (one for 64×64 … four) overlap each other's barriers and waits.
//! * **Scales**: one load covers 4 blocks: lane group `g = l >> 4` loads the scale of block
//!   `kb + g` of the tile's SFB row, and lane `l` the scale of block `kb + (l & 3)` of fragment
//!   row `l >> 2` (SFA, one `buffer_load_dword` per A fragment every 4 blocks: the 16 rows' lines
//!   are touched once per 4 blocks instead of every block, four neighbouring lanes on one row's
//!   16 bytes); block `kb` takes its SFA from lane `4·(l & 15) + (kb & 3)` with a `ds_bpermute_b32` per fragment and
//!   its SFB with one `v_readlane_b32`. The scale loads are issued *before* the operand prefetch
//!   (vector memory retires in order, so waiting for the scales does not wait for the prefetch).
//!   The whole offset is in `voffset`, so the range check reads 0 past the end of SFA/SFB (a
//!   lane group past a row's last block reads the next row's scales, which are never used).
//! * **Promotion**: each 128-K block accumulates into zeroed partial accumulators (the first MFMA
//!   of a block takes the inline constant 0 as C); after the block
//!   `acc += partial · (SFA[row,kb] · (SFB[n0/128,kb] · 2^-60))` with `v_pk_fma_f32`, and the
//!   epilogue multiplies by `2^60` ([`crate::tile::PROMOTION_EXP`]): exact power-of-two scaling
//!   (results bit-identical to the unscaled form wherever that stays finite and normal) that
//!   lets `SFA · SFB` reach `2^188` instead of overflowing at `2^128` — inputs of ±4.5e21 on both
//!   sides used to make it `inf` and return inf/NaN where the exact result is representable.
//!   The supported scale range is [`crate::tile::MIN_SCALE`] (the host rejects other host-side
//!   scales). Cost: one `v_mul_f32` per block and one multiply per output value. SFB is
//!   wave-uniform (a tile never straddles a 128-column scale block: `BN ≤ 128` divides 128).
//! * **Epilogue** (`imp::Bf16Store`, every kernel family): round to BF16 (nearest even), stage
//!   the tile in LDS, then store D along rows (`buffer_store_dwordx2`, consecutive lanes on
//!   consecutive bytes, each instruction whole rows of the tile); rows past `m` fall outside D's
//!   resource and are dropped by the hardware, columns past `n` are parked out of range.
//!
//! Supported shapes: any `m ≥ 1`, `n % 4 == 0`, `k % 128 == 0` (see [`DenseGemmArgs`]).
//!
//! # Split-K (`fp8_gemm_nt_splitk_bm*_bn*`, arguments [`DenseSplitKArgs`])
//!
//! For problems with too few tiles to fill the device (decode) the K blocks of every tile are
//! dealt to `splits` workgroups ([`crate::tile::split_range`]: contiguous, as even as
//! possible). The grid is `tiles · splits`, XCD-remapped like the dense grid with the split
//! index fastest, so a tile's splits are neighbouring logical ids on one XCD. The prologue
//! divides by the split count (id → tile and split, K blocks → blocks per split) and by the tile
//! rows (tile → row and column) with the host's multipliers ([`crate::tile::FastDiv`] in the
//! arguments: seven scalar instructions each instead of LLVM's ~25-instruction expansion), and
//! tests every argument once, after all of its arithmetic, so the argument loads are issued
//! together; a launch whose divisors are not its own does no work, and whatever their bits the
//! tile and split are bounded before they address the workspace. Modelled MI300X: the first
//! load of a 64×2112×7168 workgroup at cycle 1113 instead of 1209 after dispatch, 128×7168×16384
//! 39.79 → 39.43 µs, 128×2112×7168 11.81 → 11.74, 64×4096×7168 12.80 → 12.77; at M = 64 the
//! loop is near the model's HBM rate, so 64×2112×7168 gains little (9.65 → 9.64). Each workgroup:
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
//!    rounds to bf16 and stores D through the LDS-staged epilogue of every kernel
//!    (`imp::Bf16Store`: a wave's store covers whole rows instead of one 8-byte piece of 16
//!    rows per fragment), then sets the counter back to 0 so the next launch (or graph replay) finds it
//!    armed. For the bs 32-row tile all (up to 8) splits' loads are issued before the first
//!    add waits.
//!
//!    Why (timing model, 64×2112×7168, bs 32 × 128, 8 splits; per-workgroup timelines): the
//!    non-reducing workgroups end at ≈ 7.5k cycles, the reducing ones ≈ 6k cycles later. Of
//!    that, the bf16 stores straight from the fragments took ≈ 1.8k cycles to drain (each
//!    `buffer_store_dwordx2` puts its 64 lanes on 16 rows, which the model — coalescing only
//!    lanes that are neighbours in a line — charges as 64 line requests, 2 texture-path cycles
//!    each), the partial loads ≈ 2k (8 × 16 KiB through one CU's texture path at 64 B/clk: the
//!    bound of a reduction by one workgroup), the reduction's instructions (a wave issues one
//!    per 4 cycles) and the hand-off (partial store acknowledged, counter) the rest. A variant
//!    that kept the workgroup's own partial in registers instead of re-loading it cost more in
//!    per-value selects than the one load saved, and raised the larger tiles' VGPRs (the
//!    logical 128 × 128 to 1 wave per SIMD); not kept. (The LDS staging began here, in the
//!    reduction; it is now the epilogue of every kernel, `imp::Bf16Store`.)
//!
//! **Per wave** (the bs split-K kernels on the pipelined loop, 32 × 64, 32 × 128 and 64 × 128:
//! `imp::splitk_finish_waves`): in their 1 × 4 waves wave `w` of every split owns the same columns,
//! so steps 2 and 3 run per wave with no barrier and no LDS: the wave's own `s_waitcnt vmcnt(0)` is
//! its release, one lane counts the wave in on the counter of unit `(t, w)` (u32 `4·t + w`, so at
//! most `tile::SPLITK_WAVES_MAX_TILES` = 1024 tiles), and the wave that counts in last for its unit
//! reduces that unit (the same slots, order and arithmetic: the same result bit for bit) and stores
//! it through a lane permute (`ds_bpermute`: the 4 lanes of one row's 32 bytes become neighbours,
//! 16 line requests per store instead of 64). Modelled MI300X µs: 64×2112×7168 (32 × 64, split 4)
//! 9.94 → 9.65; 64×4096×7168 (split 4) 13.11 → 12.80; 128×2112×7168 (32 × 128, split 4) 12.19 →
//! 11.81; 128×7168×16384 (64 × 128, split 2) 40.10 → 39.79. The slot-reading loop is
//! `imp::sum_slots`, shared with `splitk_finish` and the stream-K fix-up (generic over the chunk
//! array's size: one size for all three changed LLVM's code for eleven kernels). The reducer's tail
//! from its loop's end: partial stores acknowledged ~330 cycles, counter ~200, the 4 slots ~1000
//! (32 KiB through one CU's texture path, the last workgroup's four waves all reducing), conversion
//! and stores ~400; before, ~2.6k with the release barrier, the LDS broadcast of the counter and
//! the staged epilogue's two barriers. (Per-wave counters with bf16 stores straight from the
//! fragments, 64 line requests each, were slower than the workgroup protocol: 10.23 → 10.31 µs.)
//!
//! Steps 2 and 3 (everything after the partial store) are `imp::splitk_finish`, shared with the
//! m-grouped masked split-K kernels of [`crate::grouped`]; factoring it out left the dense
//! split-K kernels' instruction counts and register counts unchanged.
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
//! Timing model: a launch whose code contains global atomics (these kernels) runs its
//! workgroups functionally one at a time in dispatch order under the timing model, so the
//! last-dispatched split of a tile reduces and the modelled time is identical run to run; with
//! `--scope xcd` the whole grid runs functionally and XCD 0's workgroups are replayed (see
//! `amdgpu_emu::timing`).
//!
//! The main loop is one generic function, `imp::tile_gemm`, over an `imp::TileJob` (buffer
//! resources of one problem's operands, their row strides, the tile origin and the range of
//! 128-K blocks to run), a per-row store predicate and an `imp::Epilogue` that consumes the
//! accumulators (`imp::Bf16Store`: the LDS-staged bf16 store); the dense kernels and the m-grouped
//! kernels of [`crate::grouped`] only differ in how they build the job and the epilogue.
//!
//! Each operand's global → LDS copy is chosen by its major (`imp::tile_gemm_majors`, type
//! parameters `imp::KMajor` / `imp::MnMajor` implementing `imp::OperandMajor`): `tile_gemm` is
//! the K-major copy of both operands (every NT kernel); the NN / TN / TT kernels of
//! [`crate::dense_layouts`] run the same loop with an MN-major copy (16 K rows × 8 columns per
//! work-item, transposed in registers) for A and/or B, into the same LDS rows.
//!
//! # Measured on the code objects (LLVM 22.1.4; `tests/dense_kernel.rs` re-checks them)
//!
//! | kernel | VGPR | AGPR | SGPR | spills | scratch | LDS (dynamic) | waves/SIMD (regs) | WGs/CU (LDS) |
//! |---|---|---|---|---|---|---|---|---|
//! | `fp8_gemm_nt_bm64_bn64`   | 102 | 0 | 42 | 0 | 0 | 16 KiB | 4 | 4 |
//! | `fp8_gemm_nt_bm64_bn128`  | 134 | 0 | 42 | 0 | 0 | 24 KiB | 3 | 2 |
//! | `fp8_gemm_nt_bm128_bn128` | 220 | 0 | 42 | 0 | 0 | 32 KiB | 2 | 2 |
//!
//! | `fp8_gemm_nt_splitk_bm64_bn64`   | 104 | 0 | 50 | 0 | 0 | 16 KiB | 4 | 4 |
//! | `fp8_gemm_nt_splitk_bm64_bn128`  | 140 | 0 | 52 | 0 | 0 | 24 KiB | 3 | 2 |
//! | `fp8_gemm_nt_splitk_bm128_bn128` | 224 | 0 | 53 | 0 | 0 | 32 KiB | 2 | 2 |
//!
//! `agprs = false`: with AccVGPRs allowed LLVM keeps the partial sums in AGPRs and copies them out
//! with `v_accvgpr_read` for every promotion (measured on the previous loop: bm128_bn128 224
//! VGPR and 92 AGPR = 1 wave/SIMD; bm64_bn128 128 and 44; bm64_bn64 76 and 24), so the kernels use arch
//! VGPRs only. With prefetch depth 2, bm128_bn128 needs 276 VGPRs (1 wave/SIMD, modelled 23 %
//! slower), hence depth 1 there.
//!
//! Main loop (gfx942 objdump, earliest back-branch target to the last back edge: one trip =
//! `prefetch_depth` blocks, including the every-4th-block scale-load path), as counted by
//! `tests/dense_kernel.rs` `grouped_kernels_share_the_dense_main_loop`:
//!
//! | kernel | blocks per trip | instructions | MFMA | VALU (promotion, addresses) | `ds_read_b128` | `ds_write_b128` | buffer loads | waitcnt |
//! |---|---|---|---|---|---|---|---|---|
//! | bm64_bn64   | 2 | 161 | 32 (19.9%) | 33 | 16 | 8 | 11 | 19 |
//! | bm64_bn128  | 1 | 114 | 32 (28.1%) | 24 | 12 | 6 |  9 | 11 |
//! | bm128_bn128 | 1 | 183 | 64 (35.0%) | 44 | 16 | 8 | 13 | 16 |
//!
//! Timing model (*modelled*, `fp8gemm profile --scope xcd`, MI300X), before → after the
//! full-line copy, the 4-block scale loads, the load order and the panel grid order
//! ([`crate::tile::tile_coords`]), same tile choice, no split-K: 4096×7168×2048 503 → 680 TFLOPS,
//! 4096×2112×7168 365 → 724, 1024×2048×7168 241 → 431; m-grouped contiguous 4 × 8192 rows
//! (4096, 7168) 321 → 759. What limits now: the per-block hand-off (barrier, `ds_write`,
//! barrier, then the next block's `ds_read` latency before the first MFMA; lgkmcnt waits) and
//! the vmcnt wait for the prefetch (the CU's texture path serves all its waves' loads in order).
//! With a 4× faster texture path the model gives only 743 TFLOPS on 4096×7168×2048: the LDS
//! traffic (A and B written once and read twice per block, ≈ 0.75 LDS cycles per MFMA cycle
//! at 128×128) is the next wall; B straight to registers (issue part 3) or bigger tiles are the
//! way past it.
//!
//! Why the MFMA share cannot reach 60% of *issued instructions* with exact FP32 promotion on
//! gfx942: per 128-K block a 16×16 fragment takes 4 MFMAs (K = 32 each) and its promotion takes 2
//! `v_pk_fma_f32` (4 f32 per lane, 2 per instruction — the widest f32 VALU op), so promotion alone
//! caps the share at 4 / (4 + 2) = 66.7% before a single load, LDS access or barrier is counted
//! (32x32x16 is worse: 8 MFMAs vs 8 `v_pk_fma_f32` per 32×32 block, a 50% cap). By issue
//! *cycles* (an MFMA occupies the matrix pipe for 16 cycles, other instructions issue in 4) the
//! bm128_bn128 loop is 1024 MFMA cycles vs ≈ 480 for the rest, which other waves' MFMAs overlap.
//!
//! # B straight to registers: the bs kernels (issue 12 parts 2 + 3, [`crate::mainloop_bs`])
//!
//! For weights in the pre-shuffled layout the host runs `fp8_gemm_nt_bs_bm{32,64,128}_bn128`:
//! 1 × 4 waves, B from global memory straight into the MFMA operands one block ahead, A in two
//! LDS stages with one barrier per block, SFA shared through LDS (design: [`crate::mainloop_bs`]).
//! Same result as these kernels bit for bit (`tests/gemm_bs.rs`).
//!
//! Timing model (*modelled*, `fp8gemm profile --scope xcd`; `FP8GEMM_PRESHUFFLED=1` for the
//! bs kernels, `FP8GEMM_FORCE_TILE=BMx128` to force one; "logical" = these kernels with the
//! config's choice, split-K included; "bs chosen" = `config::get_bs_config`'s choice), TFLOPS,
//! MI300X / MI325X:
//!
//! | shape (m×n×k) | logical | bs chosen | bs 32×128 | bs 64×128 | bs 128×128 |
//! |---|---|---|---|---|---|
//! | 4096×7168×2048 | 683 / 682 | **688 / 688** (64) | 637 / 638 | 688 / 688 | 561 / 561 |
//! | 4096×2112×7168 | 678 / 678 | 717 / 721 (32) | 717 / 721 | **727 / 728** | 614 / 614 |
//! | 4096×2048×7168 | 657 / 657 | **742 / 751** (32) | 742 / 751 | 706 / 707 | 595 / 595 |
//! | 1024×2048×7168 | 493 / 495 | **599 / 598** (32) | 599 / 598 | 487 / 487 | 295 / 295 |
//! | 64×2112×7168   | 116 / 117 (split 8) | **139 / 145** (32, split 8; was 128 / 128 at split 9) | 50 / 50 (no split) | 31 / 31 | 20 / 20 |
//! | 128×2112×7168  | 217 / 217 | **258 / 259** (32, split 4; was 206 / 206 at split 5) | | | |
//! | 64×7168×2048   | 151 / 158 | **162 / 163** (32, split 2; was 160 / 162 at split 3) | | | |
//!
//! AMD's pre-shuffled 128 × 128 asm kernel on the same model: 875.7 TFLOPS at 4096×2048×7168 on
//! MI325X (measured on an MI325X: 923.6); the bs kernels reach 751 there, the logical ones 657.
//! The bs rule (`config::get_bs_config_for_workspace`): 64 × 128 from 8 of its tiles per CU or
//! where its rounds are modelled shorter, else 32 × 128, split-K (the bs split-K twins
//! `fp8_gemm_nt_splitk_bs_*`, this module's protocol over the bs loop) when there are fewer tiles
//! than CUs, the split count of least `config::bs_split_estimate` (fitted to forced-split
//! timing-model sweeps; it replaced "up to one workgroup per CU"). Slower than the logical
//! kernels: 4096×7168×2048 had the 32-row tile
//! been chosen.
//!
//! ## Decode (issue 12 part 1): small M on the bs path
//!
//! `FP8GEMM_PRESHUFFLED=1 fp8gemm profile --scope full`, MI300X, *modelled*; TFLOPS = 2·m·n·k / t
//! (the profile's "useful work" line, no tile padding), against AITER CK's published MI300X
//! figures (`shared/reference/deepgemm.md`):
//!
//! | shape (m×n×k) | first rule (split) | fitted rule (split) | LDS-staged reduction, re-fit (split) | AITER | now / AITER | goal |
//! |---|---|---|---|---|---|---|
//! | 64×2112×7168  | 14.51 µs, 133.5 (9) | 13.22 µs, 146.6 (8) | 12.18 µs, **159.1** (8) | 118 | 1.35× | 2× (236) — not met |
//! | 64×7168×2048  | 11.77 µs, 159.6 (3) | 11.57 µs, 162.3 (2) | 11.05 µs, **170.0** (2) | 170 | 1.00× | 2× (340) — not met |
//! | 128×2112×7168 | 18.58 µs, 208.6 (5) | 15.06 µs, 257.3 (4) | 14.55 µs, **266.4** (4) | 196 | 1.36× | 1× — met |
//! | 128×7168×2048 | 15.32 µs, 245.3 (2) | 14.62 µs, 257.0 (1) | 14.11 µs, **266.3** (4) | 321 | 0.83× | 1× — not met |
//!
//! (`FP8GEMM_PRESHUFFLED=1 fp8gemm compare --set deepseek --scope full` prints the last column.)
//! What limits (64×2112×7168, 8 splits, per-workgroup timelines of the model, cycles at
//! 1.2 GHz): every time includes the model's 2 µs launch overhead. The workgroups start within
//! ≈ 560 cycles of each other and finish their 7 blocks of main loop at ≈ 7.2k (≈ 0.8 µs per
//! block: at one workgroup per CU the loop is a serial chain per 128-K block — B loaded one
//! block ahead, A through LDS, one barrier). The reducing workgroup of a tile then spends ≈ 0.8k
//! on the hand-off (partial stores acknowledged, counter round trip, LDS broadcast), ≈ 2.05k on
//! the 8 partial loads (128 KiB through its CU's texture path at 64 B/clk: the floor of a
//! reduction by one workgroup) and ≈ 2k on the last adds, the bf16 conversion (≈ 145
//! instructions per wave at one per 4 cycles), the LDS staging and the stores' acknowledgement:
//! ≈ 12.05k cycles = 10.05 µs + 2 µs launch. So the split-K overhead is now ≈ 3.9k cycles
//! (3.3 µs) at 8 splits, ≈ 2.6 µs of it the reduction proper; the main loop's chain is the
//! larger share and the one that has to shrink for 2× (B two or more blocks ahead, A
//! direct-to-LDS, more waves per workgroup splitting K inside the workgroup). A two-level
//! (tree) reduction does not pay at 8 splits in this model: its extra hand-off (store,
//! acknowledgement, counter ≈ 0.8k) costs about what halving the loads saves.
//!
//! **What bounds decode now, and what does not help** (`FP8GEMM_PRESHUFFLED=1 fp8gemm profile
//! --machine mi300x --scope xcd`, *modelled* µs incl. the 2 µs launch; `--scope xcd` reads
//! 5–7 % above `--scope full` at these shapes, so compare within one scope):
//! * *Per-workgroup timeline*, 128×7168×2048, 32 × 128, 3 splits (12.74 µs; 84 workgroups on
//!   XCD 0's 38 CUs, all resident from cycle ≈ 630): the 5-block and 6-block non-reducing
//!   workgroups end at ≈ 8.2k / 8.6k cycles, the reducing ones at ≈ 11.0k on average, 12.9k
//!   the last. The main loop is ≈ 1.4k cycles per block at 2–3 workgroups per CU (≈ 0.9k at
//!   one per CU: 32×128 unsplit, 16 blocks, 14.08 µs), against 256 cycles of MFMA per wave
//!   and block; the hand-off and reduction add ≈ 2.4k. The top stalls are the release's
//!   `s_waitcnt vmcnt(0)` (partial stores acknowledged, ≈ 560 cycles per wave) and the barrier
//!   behind the arrival atomic (≈ 355).
//! * *Not bandwidth*: with `AMDGPU_EMU_MACHINE_OVERRIDES` the same launch is 12.74 µs at 10×
//!   fabric bandwidth, 12.60 at 10× HBM bandwidth, 12.74 at 10× L2 bandwidth, 11.57 at 10×
//!   the texture path, and still 11.18 with the texture path 10× wider *and* every memory
//!   latency 10× shorter; the split-K partials (11 MB written and read back at 3 splits) are
//!   not what limits. It is the per-block latency chain of the loop (B one block ahead, A
//!   through LDS behind a barrier) times the 5–6 blocks per workgroup, plus the reducer's tail.
//! * *Split-K over the pipelined loop* (48/64 rows, B two blocks ahead): the pipelined
//!   stream-K kernels with aligned pieces (`g = T·c`, empty head) are exactly that schedule,
//!   and lose at decode: 128×7168×2048 64-row `c = 2` 15.67, `c = 4` 17.31, whole tiles 16.97,
//!   48-row `c = 2` 18.94, whole tiles 14.33 (vs 12.74); 128×2112×7168 64-row 238 / 272
//!   workgroups 19.87 / 20.40, 48-row 204 / 306 17.94 / 22.88 (vs 15.09 chosen, 14.94 at 4 splits); 64×2112×7168
//!   64-row 136 / 238 / 272 18.82 / 21.45 / 21.78 (vs 13.03); 64×7168×2048 64-row 112 / 224
//!   15.59 / 15.18 (vs 11.06). The pipelined loop's prologue (A three blocks ahead, B two)
//!   and its one workgroup per CU leave the few blocks per workgroup exposed (its own
//!   estimate charges 8 blocks' worth per workgroup, `BS_PIPE_SK_WG_BLOCKS` in the host).
//!   A 32-row (`FM = 2`) pipelined loop would need `tile_gemm_bs_pipe`'s `FM ≥ 3` bound
//!   lifted (its schedule has room: 16 MFMAs per block for at most 7 loads and 4 fragment
//!   reads, one A copy pass) and 10 KiB of LDS for the 32-row tile; tried as the 32-row
//!   split-K kernel's loop (experiment, not kept): 64×7168×2048 2 splits 11.06 → 10.38,
//!   128×2112×7168 4 splits 14.94 → 14.44, but 128×7168×2048 best 13.51 (2 splits) against
//!   12.74, 64×2112×7168 13.21 against 13.03 — not a step that reaches the goals.
//! * *Other schedules on the existing kernels* (same sweep): 128×7168×2048 32-row splits
//!   1/2/3/4/5/6/7/8 14.08/13.55/**12.74**/14.21/16.27/15.81/17.71/18.67, 64-row 2/3/4
//!   15.48/16.25/16.00, 128-row 2/3/4 23.55/20.41/19.72, 32-row stream-K 448 / 896
//!   workgroups 16.20 / 15.90; 64×2112×7168 32-row splits 6/8/10/12/14/16
//!   13.33/**13.03**/15.05/14.61/15.54/16.38; 64×7168×2048 32-row splits 2/3/4/5/6
//!   11.06/11.18/11.20/**10.97**/11.44. The split-K choice is within ≈ 1 % of the best
//!   schedule the existing kernels offer at every decode shape.
//! * *Tuned table* (`fp8gemm tune --bs --set deepseek --max-m 128`, `compare`'s scope, MI300X
//!   µs, the rules' own choice → the best candidate): 64×2112×7168 12.13 → 12.13 (split 8),
//!   64×7168×2048 11.04 → 10.96 (split 6), 64×7168×16384 37.74 (8) → 37.14 (4), 64×4096×7168
//!   14.99 → 14.86, 128×2112×7168 14.55 (4) → **13.89** (8), 128×7168×2048 14.06 (4) →
//!   **12.71** (3), 128×7168×16384 55.95 (4) → **51.90** (6), 128×4096×7168 18.41 → 18.12,
//!   128×32768×512 17.15 → **16.40** (128-row pipelined), 64/128×24576×1536 16.84 / 19.46,
//!   64×32768×512 10.97 (unchanged): the bold ones are the table's rows (a gain of at least
//!   2 %); 64×7168×16384 lost its row (1.6 %). The tuner used to time "the rules' choice"
//!   with the table applied, so a re-run found no gain at a tabled shape and dropped the row;
//!   it now times it under `bs_table::without_table`.
//!
//! How it got there (MI325X, 4096×2048×7168, bs 32 / 64 / 128-row tile, TFLOPS):
//!
//! | step | 32 | 64 | 128 |
//! |---|---|---|---|
//! | first correct loop: barrier closing each block, SFA per wave, LDS accesses volatile (32, 64: A fragments read a block ahead) | 327 | 246 | 205 |
//! | plain LDS accesses (the volatile ones were `flat_load … sc0 sc1`, each waiting on `vmcnt(0)`) | 505 | 542 | 525 (accumulators in scratch) |
//! | accumulators out of scratch (`unroll!`, step macro): 128-row tile at 394 VGPRs, 1 wave/SIMD | – | – | 444 |
//! | scales one window ahead, A loaded two blocks ahead (`A2`) | 539 | 559 | 454 |
//! | SFA through LDS (one load per row line per workgroup, not per wave: texture path 75 → 56 % busy at 64) | 745 | 695 | 594 |
//! | barrier opening each block; `AHEAD` (A fragments read a block ahead) | **751** | 506 (1 wave/SIMD) | 574 |
//!
//! The last row's 64- and 128-row `AHEAD` variants were slower (the 64-row tile's second A
//! register set costs it its second wave per SIMD) and are not used: those kernels read A in
//! its block. What limits now (profile): the 32-row tile is bound by the texture path and the
//! L2 (B is re-read for every 32 rows: 87 % / 90 % busy at 4096×2048×7168) and waits at the
//! barrier (28 % of stalls); the 64-row tile waits on LDS (`lgkmcnt`, the in-block A reads)
//! and the barrier; the 128-row tile runs one wave per SIMD (420 registers incl. 164 AGPRs:
//! LLVM holds both A-fragment reads and all partial sums) whose MFMAs LLVM does not interleave
//! with the loads (MFMA 40 % busy). Next: a hand-scheduled single-wave 128-row loop
//! (`sched_group_barrier`), direct-to-LDS A loads, tuned-table rows for the bs kernels.
//!
//! **Pipelined bs kernels** (issue 12 part 2, [`crate::mainloop_bs`], "Pipelined loop"): the
//! loop rescheduled for one workgroup per CU (A fragments a block ahead, B two ahead, one memory
//! instruction per MFMA in a fixed order, promotion one output pair behind) in 48/64/80/96-row
//! tiles, chosen by `config::bs_pipe_rule` where one round of them beats the rule's tile:
//! modelled MI325X 1024×2048×7168 50.9 → 41.1 µs, 4096×2048×7168 161.8 → 151.6 µs (806
//! TFLOPS); MI300X 4096×2112×7168 172.6 → 152.0 µs (854 TFLOPS); 4096×7168×2048 unchanged.

use crate::amdgpu_kernel;
use crate::args::{DenseGemmArgs, DenseSplitKArgs};

#[cfg(target_arch = "amdgpu")]
pub(crate) mod imp {
    use core::num::NonZeroU32;

    use crate::args::{DenseGemmArgs, DenseSplitKArgs};
    use crate::intrinsics::*;
    use crate::tile::{self, NUM_XCDS, SCALE_BLOCK_K, SCALE_BLOCK_N, block_swizzle, frag_chunk};

    /// Bytes of one LDS row: one whole 128-K scale block of FP8.
    const ROW: u32 = SCALE_BLOCK_K;
    /// Scale blocks whose SFA/SFB one load covers (one per lane group of 16 lanes).
    const SF_BLOCKS: u32 = 4;

    /// Buffer offset that is out of range of every resource (all tensors are smaller than
    /// `tile::MAX_TENSOR_BYTES`): stores there are dropped.
    const PARKED: u32 = tile::MAX_TENSOR_BYTES as u32;

    /// `$body` for `$i` = 0, 1, …, `$n − 1` (`$n ≤ 16`) as straight-line code with constant
    /// indices: the MN-major copy's register arrays then never live in memory (with `for`
    /// loops over them LLVM kept the arrays in scratch and unrolled the loops only afterwards).
    macro_rules! unroll {
        ($i:ident < $n:expr => $body:block) => {{
            const { assert!($n <= 16) };
            unroll!(@ $i, $n, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
        }};
        (@ $i:ident, $n:expr, $body:block, $($k:literal)*) => {
            { $( { let $i: usize = $k; if $i < $n $body } )* }
        };
    }

    /// How one operand's tile of one 128-K block travels from global memory into its LDS rows
    /// (tile row `r` = one M or N index, holding the block's 128 K bytes in [`block_swizzle`]
    /// order — the layout the fragment reads of [`tile_gemm_majors`] expect), held in registers in
    /// between (the loop's prefetch).
    pub(crate) trait OperandCopy: Copy {
        /// One block of the copy in registers.
        type Regs: Copy;
        /// Registers holding no block (the loop's initial register sets).
        fn zero() -> Self::Regs;
        /// Issues the loads of the block at byte `kofs` of K past the job's first block (a
        /// multiple of 128). `live = false`: loads that read 0 and touch no memory (the loop
        /// prefetches past its last block without a branch).
        fn load(&self, kofs: u32, live: bool, regs: &mut Self::Regs);
        /// Writes a loaded block into the operand's LDS rows. Only between the barrier that
        /// follows every wave's last read of the previous block and the barrier before the next
        /// block's reads.
        fn store(&self, regs: &Self::Regs);
    }

    /// How an operand is stored, as a type: which [`OperandCopy`] the main loop runs for it.
    /// [`KMajor`]: rows of K contiguous bytes (both operands of NT); [`MnMajor`]: K rows of M (or
    /// N) contiguous bytes (DeepGEMM's MN-major operands of NN, TN, TT).
    pub(crate) trait OperandMajor {
        /// Whether this is the MN-major layout.
        const MN: bool;
        /// The copy stage of an operand tile of `32·F` rows (M or N indices).
        type Copy<const F: usize>: OperandCopy;
        /// The copy of the operand tile whose first M (or N) index is `origin`, of an operand
        /// with `extent` M (or N) indices in resource `rs` (`ld`: byte stride of its rows — M/N
        /// rows for K-major, K rows for MN-major), starting at K byte `k0`, into the LDS rows
        /// from byte `region`. An MN-major copy runs on work-items `first .. first + 32·F`
        /// (`first` a multiple of 64; a K-major copy uses all 256 and ignores it).
        fn copy<const F: usize>(rs: BufferResource, origin: u32, extent: u32, ld: u32, k0: u32, region: u32, first: u32) -> Self::Copy<F>;
    }

    /// The K-major operand (`rows × k` bytes, rows `ld` apart).
    pub(crate) struct KMajor;

    /// The copy of a K-major operand tile: work-item `t` moves 16-byte chunk `t & 7` of row
    /// `(t >> 3) + 32·pass` with one `buffer_load_dwordx4` per pass (`F` passes): every load
    /// instruction covers 8 whole 128-byte lines.
    #[derive(Clone, Copy)]
    pub(crate) struct KMajorCopy<const F: usize> {
        rs: BufferResource,
        /// Per pass: byte offset of the work-item's chunk in the job's first block.
        voff: [u32; F],
        /// LDS byte offset of the work-item's chunk in pass 0.
        lds: u32,
    }

    impl OperandMajor for KMajor {
        const MN: bool = false;
        type Copy<const F: usize> = KMajorCopy<F>;
        #[inline(always)]
        fn copy<const F: usize>(rs: BufferResource, origin: u32, _extent: u32, ld: u32, k0: u32, region: u32, _first: u32) -> KMajorCopy<F> {
            let tid = workitem_id_x();
            let (copy_row, copy_chunk) = (tid >> 3, tid & 7);
            let mut voff = [0u32; F];
            for (p, v) in voff.iter_mut().enumerate() {
                *v = (origin + 32 * p as u32 + copy_row) * ld + k0 + 16 * copy_chunk;
            }
            // Pass offsets (32 rows) leave `row & 7`, hence the swizzle term, unchanged.
            KMajorCopy { rs, voff, lds: block_swizzle(copy_row, copy_chunk) + region }
        }
    }

    impl<const F: usize> OperandCopy for KMajorCopy<F> {
        type Regs = [U32x4; F];
        #[inline(always)]
        fn zero() -> [U32x4; F] {
            [U32x4([0; 4]); F]
        }
        #[inline(always)]
        fn load(&self, kofs: u32, live: bool, regs: &mut [U32x4; F]) {
            let vo = |v: u32| if live { v } else { BUFFER_PAST_END };
            let kofs = if live { kofs } else { 0 };
            for p in 0..F {
                // SAFETY: rs covers exactly the problem's operand (readable for the launch);
                // rows past it have voffset ≥ its size and read 0; offsets are 16-byte aligned
                // (ld % 16 == 0, k % 128 == 0). When !live: voffset BUFFER_PAST_END and
                // soffset 0, past the end of any buffer below 4 GiB − 16 bytes, else inside it.
                regs[p] = unsafe { buffer_load_b128(self.rs, vo(self.voff[p]), kofs) };
            }
        }
        #[inline(always)]
        fn store(&self, regs: &[U32x4; F]) {
            for p in 0..F {
                // SAFETY: the offset is inside the operand's region (< lds_bytes, the launch's
                // sharedMemBytes), 16-byte aligned; ordered against the reads by the caller's
                // barriers (OperandCopy::store).
                unsafe { lds_write_b128(self.lds + 32 * p as u32 * ROW, regs[p]) };
            }
        }
    }

    /// The MN-major operand (`k × extent` bytes, K rows `ld` apart, `extent % 8 == 0`).
    pub(crate) struct MnMajor;

    /// The copy of an MN-major operand tile (`32·F` columns of the operand's K rows), transposed
    /// on its way into LDS as the K-grouped kernels do ([`crate::kgrouped`]): work-item `u`
    /// (`0 .. 32·F`, from `first`) owns the unit of 16 consecutive K rows × 8 consecutive
    /// columns ([`crate::dense_layouts::mn_copy_unit`]: consecutive work-items on consecutive 8-byte pieces of one K
    /// row), loads it with 16 `buffer_load_dwordx2`, transposes it with two
    /// [`crate::kgrouped::transpose_8x8`] (64 `v_perm_b32`) and writes each column's 16 K bytes as
    /// one `ds_write_b128` to that column's LDS row at chunk `k16` — the chunk the K-major copy
    /// writes there. Output `j` is column `j ⊕ (m8 & 3)` of the unit (the rotation is free, in
    /// the permute selectors), so the 8 lanes of a write phase start on 4 different rows modulo
    /// 4, i.e. 4 different swizzle rotations (at most 2-way bank conflicts instead of 8-way).
    #[derive(Clone, Copy)]
    pub(crate) struct MnMajorCopy<const F: usize> {
        rs: BufferResource,
        /// Byte offset of the unit's first K row and column in the job's first block, or
        /// `PARKED` for a unit past the operand's extent (read as 0).
        voff: u32,
        /// Byte stride of the K rows.
        ld: u32,
        /// Whether this work-item's wave copies (wave-uniform).
        active: bool,
        /// The column rotation `m8 & 3`.
        xor: u32,
        /// LDS byte offset of transposed output `j`.
        lds: [u32; 8],
    }

    impl OperandMajor for MnMajor {
        const MN: bool = true;
        type Copy<const F: usize> = MnMajorCopy<F>;
        #[inline(always)]
        fn copy<const F: usize>(rs: BufferResource, origin: u32, extent: u32, ld: u32, k0: u32, region: u32, first: u32) -> MnMajorCopy<F> {
            const { assert!(F == 2 || F == 4, "MN-major copies of 64 or 128 columns: 16 K rows × 8 columns per work-item") };
            let width = 32 * F as u32;
            let tid = workitem_id_x();
            let wave = readfirstlane_u32(tid >> 6);
            let active = wave.wrapping_sub(first / 64) < width / 64;
            let (m8, k16) = crate::dense_layouts::mn_copy_unit(tid.wrapping_sub(first), width);
            let col = origin + 8 * m8;
            // Columns past the extent read 0 (their rows of D are never stored); parking them in
            // voffset keeps voffset + soffset inside the operand for every other unit.
            let voff = if col < extent { (k0 + 16 * k16) * ld + col } else { PARKED };
            let xor = crate::dense_layouts::mn_unit_xor(m8);
            let mut lds = [0u32; 8];
            unroll!(j < 8 => {
                lds[j] = region + crate::dense_layouts::mn_unit_lds_offset(m8, k16, j as u32);
            });
            MnMajorCopy { rs, voff, ld, active, xor, lds }
        }
    }

    impl<const F: usize> OperandCopy for MnMajorCopy<F> {
        /// The unit's 16 K rows, 8 bytes (columns) each.
        type Regs = [u64; 16];
        #[inline(always)]
        fn zero() -> [u64; 16] {
            [0; 16]
        }
        #[inline(always)]
        fn load(&self, kofs: u32, live: bool, regs: &mut [u64; 16]) {
            if self.active {
                let (voff, kofs) = if live { (self.voff, kofs) } else { (PARKED, 0) };
                unroll!(kk < 16 => {
                    // SAFETY: rs covers the operand's (k − 1)·ld + extent bytes (readable for
                    // the launch). A real unit's voffset + soffset is its K row · ld + its
                    // column, with K row < k and column + 8 ≤ extent: inside; 8-byte aligned
                    // (ld % 8 == 0, extent % 8 == 0). A parked unit (or !live): voffset
                    // PARKED = 2^31 ≥ the resource's size, so the load reads 0 and touches no
                    // memory; soffset < k·ld < 2^31, so the sum does not wrap either.
                    regs[kk] = unsafe { buffer_load_b64(self.rs, voff, (kofs + kk as u32) * self.ld) }.to_u64();
                });
            }
        }
        #[inline(always)]
        fn store(&self, regs: &[u64; 16]) {
            if self.active {
                let r = regs;
                let lo = crate::kgrouped::transpose_8x8(&[r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]], self.xor, perm_b32);
                let hi = crate::kgrouped::transpose_8x8(&[r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]], self.xor, perm_b32);
                unroll!(j < 8 => {
                    // SAFETY: chunk k16 of a row of the operand's region (< lds_bytes), 16-byte
                    // aligned; each (row, chunk) is written by one work-item; ordered against
                    // the reads by the caller's barriers (OperandCopy::store).
                    unsafe { lds_write_b128(self.lds[j], U32x4::from_u64x2([lo[j], hi[j]])) };
                });
            }
        }
    }

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
        /// Gathered A ([`ARowMap`]): `None` (every kernel but the gathering ones) reads row `r`
        /// of the problem from row `r` of `rs_a` / `rs_sfa`. Honoured only by the bs loops
        /// (`crate::mainloop_bs::imp::tile_gemm_bs` and `tile_gemm_bs_pipe`); the other loops
        /// are never given one.
        pub a_rows: Option<ARowMap>,
    }

    /// Where each row of a gathered A lives: row `r` of the problem reads row `rows[r]` (an i32
    /// of `rs_rows`) of the resources `rs_a` / `rs_sfa`, which then cover `count` rows (the
    /// tokens of an MoE layer, quantized once). An entry outside `0..count` (the padding rows of
    /// an expert's last block, −1) parks the row's offsets past both resources, so it reads
    /// zeros; a row past `rs_rows` reads entry 0 (such rows are never stored).
    #[derive(Clone, Copy)]
    pub(crate) struct ARowMap {
        /// The row map, one i32 per row of the problem.
        pub rs_rows: BufferResource,
        /// Rows of `rs_a` / `rs_sfa`.
        pub count: u32,
        /// Largest finite value of the FP8 format: used only by the loop that quantizes a bf16
        /// A itself (`crate::mainloop_bs::imp::tile_gemm_bs_q` with `QA`).
        pub fp8_max: f32,
    }

    /// What a tile does with its accumulators once the main loop is done. Every work-item of
    /// the workgroup calls [`Epilogue::begin`] once, then [`Epilogue::store`] once per
    /// (fragment row, 4-column group) it owns (`FM · FN` times), then [`Epilogue::finish`]
    /// once, all in wave-uniform control flow (`begin` and `finish` may hold a barrier).
    pub(crate) trait Epilogue {
        /// Before the first `store`: the main loop's LDS reads are done in this work-item.
        #[inline(always)]
        fn begin(&self) {}
        /// Consumes the FP32 accumulators of `D[row, col .. col + 4]` (`col % 4 == 0`),
        /// **in the promotion domain** (`D · 2^-PROMOTION_EXP`, see [`tile::PROMOTION_EXP`]:
        /// multiply by [`tile::PROMOTION_UP`] for the value of D). `valid` is false when the
        /// columns are past `n` or the tile's `keep_row` rejected the row; the epilogue must
        /// then not store them (rows past the problem's end are the epilogue's own business,
        /// typically dropped by its resource's range check).
        fn store(&self, row: u32, col: u32, valid: bool, acc: F32x4);
        /// After the last `store`; `keep_row` is the tile's row predicate (the one that made
        /// `valid` false), for an epilogue that stores rows other than the ones it was given.
        #[inline(always)]
        fn finish(&self, keep_row: impl Fn(u32) -> bool) {
            let _ = keep_row;
        }
    }

    /// Bytes of padding after each row of the bf16 staging area of [`Bf16Store`] in LDS (`bm`
    /// rows of `2·bn + pad` bytes): 16 (the 16 rows one `ds_write_b64` touches then start on
    /// different banks) where the LDS the host launches the tile with (`tile::lds_bytes` /
    /// `BsTile::lds_bytes`) has room, else 0 (the 128 × 128 logical tile, exactly 32 KiB), or
    /// `u32::MAX` when even the unpadded area does not fit (rejected at compile time).
    const fn stage_pad(fm: usize, fnn: usize, bs: bool) -> u32 {
        let (bm, bn) = tile_dims(fm, fnn, bs);
        let lds = if bs { tile::BsTile { name: "", block_m: bm, block_n: bn, lds_stages: 2 }.lds_bytes() } else { tile::lds_bytes(bm, bn) };
        if bm * (2 * bn + 16) <= lds {
            16
        } else if bm * 2 * bn <= lds {
            0
        } else {
            u32::MAX
        }
    }

    /// The bf16 epilogue of one `bm × bn` tile at `(m0, n0)`: `D[row, col..col+4] =
    /// bf16(acc · 2^60)` (round to nearest even), **staged through LDS** so that every store
    /// instruction covers whole rows of D.
    ///
    /// A lane's accumulators are 4 columns of 16 different rows per fragment (the transposed
    /// MFMA layout), so a `buffer_store_dwordx2` straight from them puts the 64 lanes of an
    /// instruction on 16 rows of D: 64 line requests for 512 bytes in the timing model
    /// (which coalesces only neighbouring lanes in one 128-byte line), 2 texture-path cycles
    /// and one L2 line each. At 640×2048×7168 (48-row tile, one tile per CU) the stores of a
    /// tile then took ≈ 2.2k cycles to drain after its last instruction, and at 4096×7168×2048
    /// they were as much L2 traffic as the operand loads. Staged: `begin` waits for every
    /// wave to leave the main loop's LDS (a barrier), `store` writes its 8 bytes to row
    /// `row − m0` of the staging area (`bm` rows of `pitch = 2·bn + stage_pad` bytes from LDS
    /// byte 0), and `finish` (after a barrier) has work-item `t` store the 8-byte pieces
    /// `t + 256·i` in row order: each instruction covers `512 / (2·bn)` whole rows,
    /// consecutive lanes on consecutive bytes (4 lines for the 128-column tiles).
    ///
    /// Rows: rows past the problem's end fall outside `rs_d` and are dropped; `finish` asks
    /// `keep_row` for the rows it stores. Columns past `n` (a multiple of 4, so a piece is
    /// wholly inside or wholly past) are parked out of range.
    #[derive(Clone, Copy)]
    pub(crate) struct Bf16Store {
        /// D of the problem (`rows × n` bf16): `D[r, j]` at byte `(r·ldd + j)·2`.
        pub rs_d: BufferResource,
        /// Row stride of D in elements (`≥ n`, a multiple of 4).
        pub ldd: u32,
        /// Columns of D (a multiple of 4).
        pub n: u32,
        /// First row and column of the tile.
        pub m0: u32,
        pub n0: u32,
        /// Tile rows and columns (`bn` a multiple of 4 with `bm · bn` a multiple of 1024).
        pub bm: u32,
        pub bn: u32,
        /// Bytes per staged row (`2·bn + stage_pad`, a multiple of 8).
        pub pitch: u32,
        /// Store at device scope (`sc1`), for a reader on another XCD after a release (the MoE
        /// scatter epilogue); `false` from [`Bf16Store::tile`].
        pub device: bool,
        /// Work-items of the workgroup that share `finish`'s stores ([`tile::THREADS`], or 512
        /// for the two-row-group bs kernels, [`Bf16Store::rows`]).
        pub threads: u32,
    }

    impl Bf16Store {
        /// The epilogue of the `FM × FN`-fragment tile ([`tile_dims`]; `BS`: the
        /// bs loops' 1 × 4 waves) at `(m0, n0)`, staged in the LDS that tile is launched with.
        #[inline(always)]
        pub(crate) fn tile<const FM: usize, const FN: usize, const BS: bool>(rs_d: BufferResource, ldd: u32, n: u32, m0: u32, n0: u32) -> Bf16Store {
            const { assert!(stage_pad(FM, FN, BS) != u32::MAX, "the bf16 staging area does not fit the tile's LDS") };
            const {
                let (bm, bn) = tile_dims(FM, FN, BS);
                assert!(bm * bn % 1024 == 0 && bm * bn <= 16 * 1024, "finish stores 1..=16 whole 8-byte pieces per work-item");
            };
            let (bm, bn) = tile_dims(FM, FN, BS);
            Bf16Store { rs_d, ldd, n, m0, n0, bm, bn, pitch: 2 * bn + stage_pad(FM, FN, BS), device: false, threads: tile::THREADS }
        }

        /// The epilogue of a `bm × bn` tile at `(m0, n0)` whose workgroup has `threads`
        /// work-items and `lds` bytes of LDS (the staging rows padded by 16 bytes where they
        /// fit). `bm · bn / 4` must be a multiple of `threads`, at most 16 pieces per
        /// work-item, and `bm · 2·bn ≤ lds` (checked by the caller's `const` assertions).
        #[inline(always)]
        pub(crate) fn rows(rs_d: BufferResource, ldd: u32, n: u32, m0: u32, n0: u32, bm: u32, bn: u32, lds: u32, threads: u32) -> Bf16Store {
            let pad = if bm * (2 * bn + 16) <= lds { 16 } else { 0 };
            Bf16Store { rs_d, ldd, n, m0, n0, bm, bn, pitch: 2 * bn + pad, device: false, threads }
        }

        /// The same epilogue for another tile of the same launch.
        #[inline(always)]
        pub(crate) fn at(&self, m0: u32, n0: u32) -> Bf16Store {
            Bf16Store { m0, n0, ..*self }
        }
    }

    impl Epilogue for Bf16Store {
        #[inline(always)]
        fn begin(&self) {
            // Every wave has done its last LDS read of the main loop (or of whatever ran before
            // the epilogue) before any wave overwrites LDS with the staging area.
            lds_barrier();
        }

        #[inline(always)]
        fn store(&self, row: u32, col: u32, _valid: bool, acc: F32x4) {
            let v = acc.to_array();
            let v = [v[0] * tile::PROMOTION_UP, v[1] * tile::PROMOTION_UP, v[2] * tile::PROMOTION_UP, v[3] * tile::PROMOTION_UP];
            let data = U32x2([tile::pack_bf16x2(v[0], v[1]), tile::pack_bf16x2(v[2], v[3])]);
            // SAFETY: row − m0 < bm and col − n0 + 4 ≤ bn (the caller's tile): inside the
            // staging area, which fits the launch's LDS (Bf16Store::tile); 8-byte aligned (pitch
            // and the column's 8 bytes are); each (row, col) is written by one work-item; begin's
            // barrier ordered every earlier LDS access, finish's orders the reads.
            unsafe { lds_write_b64((row - self.m0) * self.pitch + 2 * (col - self.n0), data.to_u64()) };
        }

        #[inline(always)]
        fn finish(&self, keep_row: impl Fn(u32) -> bool) {
            // Pieces per work-item: bm·bn/4 pieces over `threads` work-items (≤ 16: 128 × 128
            // over 256).
            const MAX: usize = 16;
            let per_row = self.bn / 4; // 8-byte pieces (4 columns) per row
            let pieces = self.bm * per_row / self.threads;
            let tid = workitem_id_x();
            let rc = |i: usize| {
                let q = tid + self.threads * i as u32;
                (q / per_row, 4 * (q % per_row))
            };
            // The row predicate first, for every piece (it may load: the loads are all issued
            // before the barrier's wait instead of one round trip per store).
            let mut keep = [true; MAX];
            for (i, k) in keep.iter_mut().enumerate() {
                if (i as u32) < pieces {
                    *k = keep_row(self.m0 + rc(i).0);
                }
            }
            lds_barrier();
            for (i, &k) in keep.iter().enumerate() {
                if (i as u32) < pieces {
                    let (r, c) = rc(i);
                    // SAFETY: r < bm, c + 4 ≤ bn: inside the staging area, 8-byte aligned,
                    // written before the barrier above.
                    let data = unsafe { lds_read_b64(r * self.pitch + 2 * c) };
                    let (row, col) = (self.m0 + r, self.n0 + c);
                    let voff = if (col < self.n) & k { (row * self.ldd + col) * 2 } else { PARKED };
                    // SAFETY: rs_d covers the problem's D; rows past it are out of range and
                    // dropped, invalid columns / rows are parked out of range; offsets are
                    // 8-byte aligned (n % 4 == 0, ldd % 4 == 0).
                    unsafe { if self.device { buffer_store_b64_device(data, self.rs_d, voff, 0) } else { buffer_store_b64(data, self.rs_d, voff, 0) } };
                }
            }
        }
    }

    /// The job and bf16 epilogue of this workgroup's tile ([`tile_dims`] of `FM × FN`
    /// fragments, `BS`: the bs loops' 1 × 4 waves) of a dense launch over the whole operands
    /// (XCD-aware tile order, see tile.rs), or `None` for a workgroup past the tile count (not
    /// what the host launches). `rs_b` covers the logical B (`n·k` bytes).
    #[inline(always)]
    pub(crate) fn dense_job<const FM: usize, const FN: usize, const BS: bool>(args: &DenseGemmArgs) -> Option<(TileJob, Bf16Store)> {
        let (bm, bn) = tile_dims(FM, FN, BS);
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
            return None;
        }
        let id = tile::xcd_remap(pid, grid, NUM_XCDS);
        let (tm, tn) = tile::tile_coords(id, tiles_m, n.div_ceil(bn));

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
            a_rows: None,
        };
        let epi = Bf16Store::tile::<FM, FN, BS>(BufferResource::new(args.d.addr(), ((m - 1) * ldd + n) * 2), ldd, n, job.m0, job.n0);
        Some((job, epi))
    }

    /// The job of this workgroup's `bm × bn` tile of a dense launch over the whole operands
    /// (XCD-aware tile order, see tile.rs), or `None` for a workgroup past the tile count:
    /// [`dense_job`]'s tile for any tile height (the two-row-group bs kernels), kept apart from
    /// it so that the other kernels' code stays as it was. `rs_b` covers the logical B (`n·k`
    /// bytes).
    #[inline(always)]
    pub(crate) fn dense_job_tile(args: &DenseGemmArgs, bm: u32, bn: u32) -> Option<TileJob> {
        let (m, n, k, lda) = (args.m, args.n, args.k, args.lda);
        let nkb = k / SCALE_BLOCK_K;

        // Tile of this workgroup (XCD-aware order, see tile.rs).
        let tiles_m = m.div_ceil(bm);
        let grid = tiles_m * n.div_ceil(bn);
        let pid = workgroup_id_x();
        // A grid larger than the tile count (not what the host launches) does no work. The
        // `tiles_m == 0` test is implied for valid arguments; stating it lets LLVM drop the
        // division-by-zero panic path of `tile_coords`.
        if pid >= grid || tiles_m == 0 {
            return None;
        }
        let id = tile::xcd_remap(pid, grid, NUM_XCDS);
        let (tm, tn) = tile::tile_coords(id, tiles_m, n.div_ceil(bn));

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
            a_rows: None,
        };
        Some(job)
    }

    /// The dense kernels: pick the tile of this workgroup and run it over the whole operands.
    #[inline(always)]
    pub fn gemm<const FM: usize, const FN: usize, const DEPTH: u32>(args: DenseGemmArgs) {
        let Some((job, epi)) = dense_job::<FM, FN, false>(&args) else { return };
        tile_gemm::<FM, FN, DEPTH, _>(&job, |_| true, &epi);
    }

    /// The dense kernels of the other operand majors ([`crate::dense_layouts`]): the dense
    /// job with an MN-major A's resource (`(k − 1)·lda + m` bytes, K rows `lda` apart) and an
    /// MN-major B's row stride (`n`: B is `k × n`, the same `n·k` bytes), then
    /// [`tile_gemm_majors`].
    #[inline(always)]
    pub fn gemm_majors<const FM: usize, const FN: usize, const DEPTH: u32, MA: OperandMajor, MB: OperandMajor>(args: DenseGemmArgs) {
        let Some((mut job, epi)) = dense_job::<FM, FN, false>(&args) else { return };
        if MA::MN {
            job.rs_a = BufferResource::new(args.a.addr(), args.k.saturating_sub(1) * args.lda + args.m);
        }
        if MB::MN {
            job.ldb = args.n;
        }
        tile_gemm_majors::<FM, FN, DEPTH, MA, MB, _>(&job, args.m, |_| true, &epi);
    }

    /// Byte offset inside a partial slot of the four accumulators of `D[m0 + r, n0 + c .. +4]`
    /// of a `32·FM × 32·FN` tile: **fragment order**, `(((wave·FM + fm)·FN + fn)·64 + lane)·16`
    /// for the wave, fragment and lane that own them in `tile_gemm`'s epilogue (row
    /// `16·(wm·FM + fm) + (lane & 15)`, column `16·(wn·FN + fn) + 4·(lane >> 4)`, wave
    /// `wm + 2·wn`), so each `buffer_store_dwordx4` of a wave writes 1 KiB contiguous (8 whole
    /// 128-byte lines) and the reduction reads it back the same way.
    ///
    /// With `BS` (the 1 × 4 waves of [`crate::mainloop_bs`], tile `16·FM × 64·FN`) wave `wn`
    /// owns rows `16·fm + (lane & 15)` and columns `16·(wn·FN + fn) + 4·(lane >> 4)`: the same
    /// formula with `wm = 0` and wave `wn`.
    #[inline(always)]
    fn frag_offset<const FM: usize, const FN: usize, const BS: bool>(r: u32, c: u32) -> u32 {
        let (fm_n, fn_n) = (FM as u32, FN as u32);
        let (wm, fm, lo) = (r / (16 * fm_n), (r / 16) % fm_n, r % 16);
        let (wn, fnn, hi) = (c / (16 * fn_n), (c / 16) % fn_n, (c % 16) / 4);
        let wave = if BS { wn } else { wm + 2 * wn };
        (((wave * fm_n + fm) * fn_n + fnn) * 64 + lo + 16 * hi) * 16
    }

    /// `(BM, BN)` of the tile of an `fm × fnn`-fragment wave: `32·fm × 32·fnn` for the 2 × 2
    /// waves of the dense loop, with `bs` `16·fm × 64·fnn` for the 1 × 4 waves of the bs loops
    /// (every kernel family's tile, split-K and stream-K included).
    pub(crate) const fn tile_dims(fm: usize, fnn: usize, bs: bool) -> (u32, u32) {
        if bs { (16 * fm as u32, 64 * fnn as u32) } else { (32 * fm as u32, 32 * fnn as u32) }
    }

    /// Split-K epilogue: the tile's FP32 accumulators (promotion domain) to its partial slot in
    /// the workspace (`bm · bn` f32 from byte `base`, in [`frag_offset`] order), at device
    /// scope. Every value is stored (also columns past `n` and rows past `m`: the reduction
    /// reads the whole slot).
    #[derive(Clone, Copy)]
    pub(crate) struct PartialStore<const FM: usize, const FN: usize, const BS: bool> {
        pub rs_ws: BufferResource,
        pub base: u32,
        pub m0: u32,
        pub n0: u32,
    }

    impl<const FM: usize, const FN: usize, const BS: bool> Epilogue for PartialStore<FM, FN, BS> {
        #[inline(always)]
        fn store(&self, row: u32, col: u32, _valid: bool, acc: F32x4) {
            let voff = self.base + frag_offset::<FM, FN, BS>(row - self.m0, col - self.n0);
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
    ///
    /// `BS = false`: the logical B and `tile_gemm::<FM, FN, DEPTH>`. `BS = true` (the 128-row
    /// bs split-K kernel; the 32- and 64-row ones run the pipelined loop through
    /// [`gemm_splitk_with`]): B pre-shuffled, `FN = 2`, the main loop
    /// `mainloop_bs::imp::tile_gemm_bs::<FM, true, DEPTH == 2>` (DEPTH 2: A fragments read a
    /// block ahead).
    #[inline(always)]
    pub fn gemm_splitk<const FM: usize, const FN: usize, const DEPTH: u32, const BS: bool>(args: DenseSplitKArgs) {
        gemm_splitk_with::<FM, FN, BS>(args, |job, epi| run_loop::<FM, FN, DEPTH, BS, _>(job, |_| true, epi));
    }

    /// The phase loops over `job` (every kernel but the pipelined ones): the dense
    /// `tile_gemm::<FM, FN, DEPTH>`, or with `BS` `mainloop_bs::imp::tile_gemm_bs::<FM, true,
    /// DEPTH == 2>` (`FN = 2`).
    #[inline(always)]
    pub(crate) fn run_loop<const FM: usize, const FN: usize, const DEPTH: u32, const BS: bool, E: Epilogue>(
        job: &TileJob,
        keep_row: impl Fn(u32) -> bool,
        epi: &E,
    ) {
        if !BS {
            tile_gemm::<FM, FN, DEPTH, _>(job, keep_row, epi);
        } else if DEPTH == 2 {
            crate::mainloop_bs::imp::tile_gemm_bs::<FM, true, true, _>(job, keep_row, epi);
        } else {
            crate::mainloop_bs::imp::tile_gemm_bs::<FM, true, false, _>(job, keep_row, epi);
        }
    }

    /// [`gemm_splitk`] over the main loop `main` (the split's job and its partial-slot
    /// epilogue): the bs split-K kernels on the pipelined loop pass
    /// `mainloop_bs::imp::tile_gemm_bs_pipe`.
    #[inline(always)]
    pub fn gemm_splitk_with<const FM: usize, const FN: usize, const BS: bool>(args: DenseSplitKArgs, main: impl FnOnce(&TileJob, &PartialStore<FM, FN, BS>)) {
        gemm_splitk_units::<FM, FN, BS, false>(args, main)
    }

    /// [`gemm_splitk_with`], and with `WAVES` the protocol of [`splitk_finish_waves`] (one
    /// arrival counter per wave's columns; the bs split-K kernels on the pipelined loop, `BS`).
    #[inline(always)]
    pub fn gemm_splitk_units<const FM: usize, const FN: usize, const BS: bool, const WAVES: bool>(
        args: DenseSplitKArgs,
        main: impl FnOnce(&TileJob, &PartialStore<FM, FN, BS>),
    ) {
        const { assert!(!WAVES || BS) };
        let (bm, bn) = tile_dims(FM, FN, BS);
        let (m, n, k, lda, ldd) = (args.m, args.n, args.k, args.lda, args.ldd);
        let nkb = k / SCALE_BLOCK_K;
        let tiles_m = m.div_ceil(bm);
        let tiles = tiles_m * n.div_ceil(bn);
        // Split fastest: the splits of one tile are neighbouring logical ids, which the XCD
        // remap keeps on one XCD (one L2) except at the boundaries of its ranges. The divisions
        // by the launch's split and tile-row counts use the host's multipliers (tile::FastDiv).
        let sp = args.splits.d;
        let grid = tiles.wrapping_mul(sp);
        let pid = workgroup_id_x();
        let id = tile::xcd_remap(pid, grid, NUM_XCDS);
        let (t, j) = args.splits.div_rem(id);
        let (tn, tm) = args.tiles_m.div_rem(t);
        let (kb0, count) = tile::split_range_div(j, args.splits, nkb);
        // A launch the host never makes does no work: divisors that are not this launch's, an
        // invalid split count, more tiles than the workspace has counters for
        // (tile::SPLITK_MAX_TILES, a quarter of it with a counter per wave:
        // tile::SPLITK_WAVES_MAX_TILES), a workgroup past the grid; and whatever the divisors,
        // the tile and split are bounded before they address the workspace. One test after all
        // of the arithmetic (wrapping, nothing above can fault), so that the kernel argument
        // loads are issued together instead of one round trip per early exit.
        let max_tiles = if WAVES { tile::SPLITK_WAVES_MAX_TILES } else { tile::SPLITK_MAX_TILES };
        let valid = (args.tiles_m.d == tiles_m) & (sp <= nkb) & (tiles <= max_tiles) & (pid < grid) & (t < tiles) & (j < sp);
        // NonZeroU32 removes the division-by-zero panic paths of the reduction's math.
        let (Some(splits), true) = (NonZeroU32::new(sp), valid) else {
            return;
        };
        let (m0, n0) = (tm.wrapping_mul(bm), tn.wrapping_mul(bn));

        let job = TileJob {
            rs_a: BufferResource::new(args.a.addr(), (m - 1) * lda + k),
            rs_sfa: BufferResource::new(args.sfa.addr(), m * nkb * 4),
            rs_b: BufferResource::new(args.b.addr(), if BS { tile::shuffled_b_bytes(n as u64, k as u64) as u32 } else { n * k }),
            rs_sfb: BufferResource::new(args.sfb.addr(), n.div_ceil(SCALE_BLOCK_N) * nkb * 4),
            n,
            lda,
            ldb: k,
            ldsf: nkb,
            kb0,
            nkb: count,
            m0,
            n0,
            a_rows: None,
        };
        // Workspace: the fixed region of u32 arrival counters, then tiles × splits partial slots.
        let counters = tile::SPLITK_COUNTER_FLOATS as u32;
        let ws_bytes = tile::splitk_workspace_floats(tiles, splits.get(), bm, bn) as u32 * 4;
        let rs_ws = BufferResource::new(args.ws.addr(), ws_bytes);
        let slot = bm * bn * 4;
        let tile_base = counters * 4 + t * splits.get() * slot;
        let epi = PartialStore::<FM, FN, BS> { rs_ws, base: tile_base + j * slot, m0, n0 };
        main(&job, &epi);

        let rs_d = || BufferResource::new(args.d.addr(), ((m - 1) * ldd + n) * 2);
        let unit = SplitKUnit { ws_addr: args.ws.addr(), rs_ws, t, tile_base, slot, splits, rs_d, ldd, n, m0, n0 };
        if WAVES {
            splitk_finish_waves::<FM, FN>(unit);
        } else {
            splitk_finish::<FM, FN, BS>(unit, |_| true, false);
        }
    }

    /// The sum, in slot order 0, 1, …, `count − 1`, of `count` FP32 partial slots of `slot`
    /// bytes at byte `tile_base` of `rs_ws` onwards: at byte `lane_base` of a slot this
    /// work-item's `FM × FN` fragments ([`frag_offset`] order, 1 KiB apart). Slots are read
    /// `chunk` (≤ `CHUNK`) at a time: all of a chunk's loads are issued before the first add
    /// waits (one memory latency per chunk instead of per slot), `chunk` keeping the loads in
    /// flight within the caller's register budget. Slots past `count` read nothing (parked out
    /// of range) and are not added. The reduction of the split-K protocols ([`splitk_finish`],
    /// [`splitk_finish_waves`]) and of the stream-K fix-up.
    #[inline(always)]
    pub(crate) fn sum_slots<const FM: usize, const FN: usize, const CHUNK: usize>(
        rs_ws: BufferResource,
        tile_base: u32,
        lane_base: u32,
        slot: u32,
        count: u32,
        chunk: usize,
    ) -> [[F32x4; FN]; FM] {
        let mut sum = [[F32x4::zero(); FN]; FM];
        // The first chunk is written outside the loop: it always runs (the callers' counts are
        // at least 1), and peeling it by hand keeps LLVM from deciding per kernel whether to,
        // which changed the reducers' code whenever unrelated code changed.
        add_chunk::<FM, FN, CHUNK>(&mut sum, rs_ws, tile_base, lane_base, slot, 0, count, chunk);
        let mut s0 = chunk as u32;
        while s0 < count {
            add_chunk::<FM, FN, CHUNK>(&mut sum, rs_ws, tile_base, lane_base, slot, s0, count, chunk);
            s0 += chunk as u32;
        }
        sum
    }

    /// Step of [`sum_slots`]: adds slots `s0 .. s0 + chunk` (those below `count`) to `sum`, in
    /// order, all of their loads issued before the first add waits.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn add_chunk<const FM: usize, const FN: usize, const CHUNK: usize>(
        sum: &mut [[F32x4; FN]; FM],
        rs_ws: BufferResource,
        tile_base: u32,
        lane_base: u32,
        slot: u32,
        s0: u32,
        count: u32,
        chunk: usize,
    ) {
        let mut v = [[[F32x4::zero(); FN]; FM]; CHUNK];
        #[allow(clippy::needless_range_loop)] // constant trip count: fully unrolled, no scratch
        for c in 0..CHUNK {
            if c >= chunk {
                continue;
            }
            let s = s0 + c as u32;
            let base = tile_base + s * slot + lane_base;
            for fm in 0..FM {
                for fnn in 0..FN {
                    let p = (fm * FN + fnn) as u32;
                    let voff = if s < count { base + p * 64 * 16 } else { PARKED };
                    // SAFETY: inside slot s of the caller's workspace resource (rs_ws covers
                    // the launch's workspace, checked by the host), 16-byte aligned, or
                    // parked out of range (reads 0).
                    v[c][fm][fnn] = unsafe { buffer_load_b128_device(rs_ws, voff, 0) }.to_f32x4();
                }
            }
        }
        #[allow(clippy::needless_range_loop)]
        for c in 0..CHUNK {
            let s = s0 + c as u32;
            if c < chunk && s < count {
                for fm in 0..FM {
                    for fnn in 0..FN {
                        sum[fm][fnn] = if s == 0 { v[c][fm][fnn] } else { sum[fm][fnn].add(v[c][fm][fnn]) };
                    }
                }
            }
        }
    }

    /// What the split-K protocol's steps 2 and 3 ([`splitk_finish`], [`splitk_finish_waves`])
    /// know of a workgroup's unit of work: the workspace (`ws_addr`, its counters; `rs_ws`, its
    /// resource), output tile `t` whose `splits` partial slots of `slot` bytes start at byte
    /// `tile_base` of `rs_ws`, and bf16 `D[m0.., n0..]` through the resource `rs_d()` (built
    /// only by the reducer), `ldd` elements a row, `n` columns.
    pub(crate) struct SplitKUnit<D> {
        pub ws_addr: u64,
        pub rs_ws: BufferResource,
        pub t: u32,
        pub tile_base: u32,
        pub slot: u32,
        pub splits: NonZeroU32,
        pub rs_d: D,
        pub ldd: u32,
        pub n: u32,
        pub m0: u32,
        pub n0: u32,
    }

    /// The split-K protocol of the bs split-K kernels on the pipelined loop, per wave: wave `w`
    /// of every split owns the same `16·FN` columns of the tile (its `FM × FN` fragments, 1 × 4
    /// waves), so the waves count in and reduce on their own. After its main loop a wave waits
    /// for its own partial stores (release at device scope, no workgroup barrier), one lane
    /// adds 1 to the counter of unit `(t, w)` (u32 `4·t + w` of the workspace, so at most
    /// [`tile::SPLITK_WAVES_MAX_TILES`] tiles), and the wave that counts in last for its unit
    /// reduces that unit's fragments of the `splits` partial slots in split order (the same
    /// values, order and arithmetic as [`splitk_finish`], so the same result bit for bit),
    /// converts them to bf16 and stores them through a lane permute (`ds_bpermute`: lanes
    /// `4r .. 4r + 3` take row `r`'s 16 columns, so the 4 lanes of one 32-byte row piece are
    /// neighbours and an instruction writes 16 whole row pieces), then re-arms the counter.
    /// No barrier and no LDS: the other waves of the workgroup may still be in their main loop.
    #[inline(always)]
    pub(crate) fn splitk_finish_waves<const FM: usize, const FN: usize>(u: SplitKUnit<impl Fn() -> BufferResource>) {
        let SplitKUnit { ws_addr, rs_ws, t, tile_base, slot, splits, rs_d, ldd, n, m0, n0 } = u;
        release_wave();
        let tid = workitem_id_x();
        let lane = tid & 63;
        let wave = readfirstlane_u32(tid >> 6);
        let counter = ws_addr + u64::from(4 * t + wave) * 4;
        // SAFETY: the counter of unit (t, wave) lies in the workspace's counter words
        // (4·t + wave < 4·SPLITK_WAVES_MAX_TILES = SPLITK_MAX_TILES), 4-byte aligned, accessed
        // only atomically during the launch.
        let old = if lane == 0 { unsafe { atomic_add_u32(counter, 1) } } else { 0 };
        let arrived = readfirstlane_u32(old);
        if arrived + 1 != splits.get() {
            return;
        }
        // Acquire: every other split's wave `w` stored its fragments before its increment;
        // device-scope loads read them, 1 KiB contiguous per fragment and split,
        // `tile::splitk_chunk` splits at a time (up to 32 `dwordx4` in flight). Each chunk is a
        // round trip through a memory system the other workgroups may still be loading, so the
        // wider chunk is what keeps the reduction short.
        let lane_base = (wave * (FM * FN) as u32 * 64 + lane) * 16;
        let (bm, bn) = tile_dims(FM, FN, true);
        let chunk = tile::splitk_chunk(bm, bn, true, true) as usize;
        let sum = sum_slots::<FM, FN, 8>(rs_ws, tile_base, lane_base, slot, splits.get(), chunk);
        // Lane l holds row 16·fm + (l & 15), columns 4·(l >> 4) .. + 4 of fragment (fm, fn);
        // lane 4r + c stores row 16·fm + r, columns 4c .. 4c + 4 of it, taken from lane r + 16c.
        // Every fragment's permutes are issued before the first store waits for one, so the
        // wave waits for the LDS crossbar once instead of once per fragment.
        let rs_d = rs_d();
        let (r, c) = (lane >> 2, lane & 3);
        let src = 4 * (r + 16 * c);
        let mut out = [[U32x2([0, 0]); FN]; FM];
        #[allow(clippy::needless_range_loop)] // constant trip counts: fully unrolled, no scratch
        for fm in 0..FM {
            for fnn in 0..FN {
                let v = sum[fm][fnn].to_array();
                let lo = tile::pack_bf16x2(v[0] * tile::PROMOTION_UP, v[1] * tile::PROMOTION_UP);
                let hi = tile::pack_bf16x2(v[2] * tile::PROMOTION_UP, v[3] * tile::PROMOTION_UP);
                out[fm][fnn] = U32x2([ds_bpermute(src, lo), ds_bpermute(src, hi)]);
            }
        }
        #[allow(clippy::needless_range_loop)]
        for fm in 0..FM {
            for fnn in 0..FN {
                let data = out[fm][fnn];
                let (row, col) = (m0 + 16 * fm as u32 + r, n0 + 16 * (wave * FN as u32 + fnn as u32) + 4 * c);
                let voff = if col < n { (row * ldd + col) * 2 } else { PARKED };
                // SAFETY: rs_d covers the problem's D; rows past it are out of range and
                // dropped, columns past n are parked out of range; 8-byte aligned (n % 4 == 0,
                // ldd % 4 == 0).
                unsafe { buffer_store_b64(data, rs_d, voff, 0) };
            }
        }
        // Re-arm the unit's counter (all `splits` increments of this launch have happened).
        if lane == 0 {
            // SAFETY: as for the increment above.
            unsafe { atomic_store_u32(counter, 0) };
        }
    }

    /// The split-K protocol after a workgroup's main loop has stored its partial slot (shared
    /// by the dense split-K kernels and the m-grouped masked split-K kernels of
    /// [`crate::grouped`]): release, count in on tile `t`'s arrival counter (u32 `t` of the
    /// workspace at `ws_addr`), and if this workgroup is the last of the `splits` to arrive,
    /// reduce the tile's partial slots (`splits` slots of `slot` bytes from byte `tile_base`
    /// of `rs_ws`) in split order into bf16 `D[m0.., n0..]` (the resource `rs_d()`, built only
    /// by the reducing workgroup; row stride `ldd` elements, `n` columns; rows past its range
    /// are dropped; so are the rows `keep_row` rejects, as in the non-split epilogue; `device`:
    /// stored at device scope, [`Bf16Store::device`]) and re-arm the counter. Returns whether
    /// this workgroup was the one that stored the tile.
    #[inline(always)]
    pub(crate) fn splitk_finish<const FM: usize, const FN: usize, const BS: bool>(
        u: SplitKUnit<impl Fn() -> BufferResource>,
        keep_row: impl Fn(u32) -> bool,
        device: bool,
    ) -> bool {
        let SplitKUnit { ws_addr, rs_ws, t, tile_base, slot, splits, rs_d, ldd, n, m0, n0 } = u;
        let (bm, bn) = tile_dims(FM, FN, BS);
        // Release: every wave's partial stores have completed at device scope before the
        // barrier; only then does one work-item count the workgroup in.
        release_barrier();
        let tid = workitem_id_x();
        let counter = ws_addr + u64::from(t) * 4;
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
            return false;
        }

        // Acquire: the counter said every other split has stored its partial (their stores
        // completed at device scope before their increments); device-scope loads read them.
        // Reduction in fixed split order 0, 1, …, splits − 1 (independent of arrival order, so
        // the result is deterministic), then ×2^60 and bf16 as the non-split epilogue.
        // Work-item (wave, lane) reduces the values it holds itself: fragment (fm, fn) at
        // frag_offset order, i.e. 1 KiB contiguous per wave and fragment.
        let lane = tid & 63;
        let wave = tid >> 6;
        let (wm, wn) = if BS { (0, wave) } else { (wave & 1, wave >> 1) };
        let lane_base = (wave * (FM * FN) as u32 * 64 + lane) * 16;
        // Splits are read `tile::splitk_chunk` at a time (`sum_slots`).
        let chunk = tile::splitk_chunk(bm, bn, false, BS) as usize;
        let sum = sum_slots::<FM, FN, 8>(rs_ws, tile_base, lane_base, slot, splits.get(), chunk);

        // Output through LDS (`Bf16Store`: each store instruction covers whole rows of D).
        let out = Bf16Store { device, ..Bf16Store::tile::<FM, FN, BS>(rs_d(), ldd, n, m0, n0) };
        // begin: every wave has read the arrival word (LDS 0..16) before anyone overwrites it.
        out.begin();
        for fm in 0..FM {
            let row = m0 + 16 * (wm * FM as u32 + fm as u32) + (lane & 15);
            for fnn in 0..FN {
                let col = n0 + 16 * (wn * FN as u32 + fnn as u32) + 4 * (lane >> 4);
                out.store(row, col, col < n, sum[fm][fnn]);
            }
        }
        out.finish(keep_row);
        // Re-arm the counter for the next launch that uses this workspace (all `splits`
        // increments of this launch have happened: this workgroup saw the last one).
        if tid == 0 {
            // SAFETY: as for the increment above.
            unsafe { atomic_store_u32(counter, 0) };
        }
        true
    }

    /// The GEMM of one tile of `32·FM × 32·FN` (each of the 2 × 2 waves owns `FM × FN` 16×16
    /// fragments) over the job's K blocks `kb0 .. kb0 + nkb`: load, LDS stage, MFMA, per-128-K
    /// promotion, then `epi` — the whole main loop, shared by every kernel. The global → LDS
    /// copy moves 32 rows of whole 128-K blocks per pass (8 work-items × 16 B per row: every
    /// load instruction covers 8 full 128-byte lines).
    ///
    /// `keep_row(r)` decides, per row `r` of the problem (`job.m0 ≤ r < job.m0 + 32·FM`), whether
    /// that row of D is stored; it is evaluated once per row before the main loop (so any load it
    /// issues overlaps the prologue's), and a `false` row reaches the epilogue with
    /// `valid = false`.
    #[inline(always)]
    pub(crate) fn tile_gemm<const FM: usize, const FN: usize, const DEPTH: u32, E: Epilogue>(job: &TileJob, keep_row: impl Fn(u32) -> bool, epi: &E) {
        tile_gemm_majors::<FM, FN, DEPTH, KMajor, KMajor, E>(job, 0, keep_row, epi)
    }

    /// [`tile_gemm`] with each operand's copy stage chosen by its major (`MA` for A, `MB` for B:
    /// [`KMajor`] or [`MnMajor`], see [`OperandMajor`]): the same LDS layout, fragment reads,
    /// MFMAs, promotion and epilogue, so the majors differ only in how a block reaches LDS.
    /// `m` is the problem's row count (A's extent along M; only an MN-major A reads it, to park
    /// its columns past the end). For an MN-major operand `job.lda` / `job.ldb` is the byte
    /// stride of its K rows (`≥` its M / N extent, a multiple of 8) and its resource covers
    /// `(k − 1)·ld + extent` bytes.
    #[inline(always)]
    pub(crate) fn tile_gemm_majors<const FM: usize, const FN: usize, const DEPTH: u32, MA: OperandMajor, MB: OperandMajor, E: Epilogue>(
        job: &TileJob,
        m: u32,
        keep_row: impl Fn(u32) -> bool,
        epi: &E,
    ) {
        let bm = 32 * FM as u32;
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

        // Global → LDS copy of each operand (its major's `OperandCopy`): A into rows 0..bm, B
        // into rows bm..bm + bn. MN-major copies run on work-items 0..bm (A) and after A's
        // (B), so both fit in the workgroup when both operands are MN-major.
        let b_region = bm * ROW;
        let copy_a = MA::copy::<FM>(rs_a, m0, m, lda, k0, 0, 0);
        let copy_b = MB::copy::<FN>(rs_b, n0, n, ldb, k0, b_region, if MA::MN { bm } else { 0 });

        // Fragment reads: lane l reads row (l & 15) + 16·frag, logical chunk frag_chunk(l >> 4,
        // read). Fragment bases are multiples of 16 rows, which leave the swizzle term unchanged.
        let frag_lds = [block_swizzle(lane & 15, frag_chunk(lane >> 4, 0)), block_swizzle(lane & 15, frag_chunk(lane >> 4, 1))];
        let a_frag0 = (wm * FM as u32 * 16) * ROW;
        let b_frag0 = b_region + (wn * FN as u32 * 16) * ROW;

        // Scales and output rows: lane's A rows are m0 + 16·(wm·FM + fm) + (l & 15). (Recomputed
        // in the epilogue rather than kept live across the loop: holding them makes LLVM
        // rematerialize the SFA offsets inside the loop instead.)
        let row_of = |fm: usize| m0 + 16 * (wm * FM as u32 + fm as u32) + (lane & 15);
        // Scales of 4 blocks per load: lane l reads block kb + (l & 3) of fragment row l >> 2
        // (one 16-byte piece of each row's scale line instead of one dword per block; four
        // neighbouring lanes on one piece, so a load is 16 line requests, not 64), and lane
        // (row r, block kb) takes its scale from lane 4·r + (kb & 3) with a lane permute.
        let grp = lane >> 4;
        let mut sfa_voff = [0u32; FM];
        let mut keep = [true; FM];
        for fm in 0..FM {
            sfa_voff[fm] = (row_of(fm) - (lane & 15) + (lane >> 2)) * ldsf * 4 + sf0 + 4 * (lane & 3);
            keep[fm] = keep_row(row_of(fm));
        }
        let sfb_voff = (n0 / SCALE_BLOCK_N) * ldsf * 4 + sf0 + 4 * grp;
        let sf_src = 16 * (lane & 15);

        // `live = false` moves every lane's voffset out of range: the loads then read 0 and touch
        // no memory, so the loop issues its prefetch on every block without a branch (with the
        // builder's `-structurizecfg-skip-uniform-regions`, LLVM sank prefetch loads behind a
        // branch into the conditional LDS hand-off, next to the stores that wait for them).
        type Regs<M, const F: usize> = <<M as OperandMajor>::Copy<F> as OperandCopy>::Regs;
        let load = |kofs: u32, live: bool, ga: &mut Regs<MA, FM>, gb: &mut Regs<MB, FN>| {
            copy_a.load(kofs, live, ga);
            copy_b.load(kofs, live, gb);
        };
        let store = |ga: &Regs<MA, FM>, gb: &Regs<MB, FN>| {
            // Every wave has passed the barrier after its last read of the previous block, and
            // no wave reads before the next barrier (the callers below).
            copy_a.store(ga);
            copy_b.store(gb);
        };
        // MFMAs of fragment read `read` (K chunks 2g + read of the block held in LDS): two
        // k-steps; `read == 0` starts a new 128-K block (C = 0 for the first k-step).
        let compute = |read: usize, part: &mut [[F32x4; FN]; FM]| {
            let base = frag_lds[read];
            let mut af = [[0u64; 2]; FM];
            let mut bf = [[0u64; 2]; FN];
            for fm in 0..FM {
                // SAFETY: inside the A region, written before the last barrier.
                af[fm] = unsafe { lds_read_b128(base + a_frag0 + fm as u32 * 16 * ROW) }.to_u64x2();
            }
            for fnn in 0..FN {
                // SAFETY: inside the B region, written before the last barrier.
                bf[fnn] = unsafe { lds_read_b128(base + b_frag0 + fnn as u32 * 16 * ROW) }.to_u64x2();
            }
            for s in 0..2 {
                for fm in 0..FM {
                    for fnn in 0..FN {
                        let c = if read == 0 && s == 0 { F32x4::zero() } else { part[fm][fnn] };
                        part[fm][fnn] = mfma_f32_16x16x32_fp8_fp8(bf[fnn][s], af[fm][s], c);
                    }
                }
            }
        };

        // With the CDNA4 MFMA: both reads' fragments, then one 16x16x128 per output (the same
        // four 32-deep chunks per lane, `mfma_f32_16x16x128_fp8`).
        let compute_k128 = |part: &mut [[F32x4; FN]; FM]| {
            let mut af = [[[0u64; 2]; FM]; 2];
            let mut bf = [[[0u64; 2]; FN]; 2];
            for read in 0..2 {
                let base = frag_lds[read];
                for fm in 0..FM {
                    // SAFETY: inside the A region, written before the last barrier.
                    af[read][fm] = unsafe { lds_read_b128(base + a_frag0 + fm as u32 * 16 * ROW) }.to_u64x2();
                }
                for fnn in 0..FN {
                    // SAFETY: inside the B region, written before the last barrier.
                    bf[read][fnn] = unsafe { lds_read_b128(base + b_frag0 + fnn as u32 * 16 * ROW) }.to_u64x2();
                }
            }
            for fm in 0..FM {
                for fnn in 0..FN {
                    part[fm][fnn] = mfma_k128([bf[0][fnn], bf[1][fnn]], [af[0][fm], af[1][fm]]);
                }
            }
        };

        let mut acc = [[F32x4::zero(); FN]; FM];
        let mut part = [[F32x4::zero(); FN]; FM];
        let mut sfa_raw = [0f32; FM];
        let mut sfb_raw = 0f32;

        // One 128-K block `kb` held in LDS: scale loads (every SF_BLOCKS blocks), then the
        // operand loads of block `kb + DEPTH` into `next` (after the scale loads: vmcnt retires
        // in order, so the promotion's wait for the scales does not wait for them), MFMAs,
        // promotion, and the hand-off of block `kb + 1` (`ready`, loaded DEPTH − 1 blocks ago
        // — or `next` itself when DEPTH = 1) into LDS.
        let mut step = |kb: u32, ready: &mut (Regs<MA, FM>, Regs<MB, FN>), next: &mut (Regs<MA, FM>, Regs<MB, FN>)| {
            if kb % SF_BLOCKS == 0 {
                for fm in 0..FM {
                    // SAFETY: rs_sfa covers the problem's SFA; the whole offset is in voffset, so
                    // the hardware's range check reads 0 for rows past the end and, on the last
                    // row, for blocks past its end (lane groups past a row's last block read the
                    // next row's scales, which are in range and unused).
                    sfa_raw[fm] = unsafe { buffer_load_f32(rs_sfa, sfa_voff[fm] + kb * 4, 0) };
                }
                // A vector load rather than `s_buffer_load`: LLVM treats the scalar load as
                // free of memory effects and sinks it to its use at the end of the block,
                // exposing its latency; this one is issued with the SFA loads.
                // SAFETY: rs_sfb covers the problem's SFB; offsets past its end read 0.
                sfb_raw = unsafe { buffer_load_f32(rs_sfb, sfb_voff + kb * 4, 0) };
            }
            load((kb + DEPTH) * SCALE_BLOCK_K, kb + DEPTH < nkb, &mut next.0, &mut next.1);
            // Issue the loads first: they have the longest latency.
            sched_fence();

            if K128_MFMA {
                compute_k128(&mut part);
            } else {
                compute(0, &mut part);
                compute(1, &mut part);
            }
            // The scale permutes wait for the scale loads: keep them behind the MFMAs.
            sched_fence();
            // Promotion in the 2^-60 domain (tile::PROMOTION_EXP): exact power-of-two scaling
            // that keeps SFA·SFB finite up to 2^188 (one v_mul per block).
            let j = kb % SF_BLOCKS;
            let sfb = f32::from_bits(readlane_dyn(sfb_raw.to_bits(), 16 * j)) * tile::PROMOTION_DOWN;
            for fm in 0..FM {
                let sfa = f32::from_bits(ds_bpermute(sf_src + 4 * j, sfa_raw[fm].to_bits()));
                let s = sfa * sfb;
                for fnn in 0..FN {
                    acc[fm][fnn] = part[fm][fnn].fma_splat(s, acc[fm][fnn]);
                }
            }
            // Keep the LDS stores (which wait for the global loads) behind the MFMAs, so the
            // loads' latency is covered by this block's math. Unconditional (after the last
            // block it writes a stage nobody reads): behind a branch, LLVM sank the prefetch
            // loads into the branch, next to the stores, and exposed their whole latency.
            sched_fence();
            // Every wave is done reading the block before anyone overwrites it.
            lds_barrier();
            let r = if DEPTH == 1 { &*next } else { &*ready };
            store(&r.0, &r.1);
            lds_barrier();
        };

        let zero = || (<MA::Copy<FM> as OperandCopy>::zero(), <MB::Copy<FN> as OperandCopy>::zero());
        let (mut set0, mut set1) = (zero(), zero());
        // Prologue: block 0 into LDS; with DEPTH = 2, block 1 into registers.
        load(0, true, &mut set0.0, &mut set0.1);
        store(&set0.0, &set0.1);
        lds_barrier();
        if DEPTH == 2 && nkb > 1 {
            load(SCALE_BLOCK_K, true, &mut set1.0, &mut set1.1);
        }

        // DEPTH = 2: set1 holds block kb + 1 at even kb, set0 at odd kb (two steps per trip so
        // the register sets never move). DEPTH = 1: set0 only.
        let mut kb = 0;
        while kb < nkb {
            if DEPTH == 1 {
                step(kb, &mut set1, &mut set0);
            } else {
                step(kb, &mut set1, &mut set0);
                kb += 1;
                if kb >= nkb {
                    break;
                }
                step(kb, &mut set0, &mut set1);
            }
            kb += 1;
        }

        epi.begin();
        // Epilogue: lane holds rows `row_of(fm)`, columns n0 + 16·(wn·FN + fn) + 4·(l >> 4) + 0..4.
        for fm in 0..FM {
            let row = row_of(fm);
            for fnn in 0..FN {
                let col = n0 + 16 * (wn * FN as u32 + fnn as u32) + 4 * (lane >> 4);
                epi.store(row, col, col < n && keep[fm], acc[fm][fnn]);
            }
        }
        epi.finish(keep_row);
    }
}

/// 64 × 64 tile (each wave 32 × 32): small M, or many workgroups for a small problem.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bm64_bn64(args: DenseGemmArgs) {
    imp::gemm::<2, 2, { crate::tile::BM64_BN64.prefetch_depth() }>(args)
}

/// 64 × 128 tile (each wave 32 × 64): small and medium M.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bm64_bn128(args: DenseGemmArgs) {
    imp::gemm::<2, 4, { crate::tile::BM64_BN128.prefetch_depth() }>(args)
}

/// 128 × 128 tile (each wave 64 × 64): large M.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_bm128_bn128(args: DenseGemmArgs) {
    imp::gemm::<4, 4, { crate::tile::BM128_BN128.prefetch_depth() }>(args)
}

/// Split-K, 64 × 64 tiles: small M with long K (decode).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_splitk_bm64_bn64(args: DenseSplitKArgs) {
    imp::gemm_splitk::<2, 2, { crate::tile::DENSE_SPLITK_TILES[0].prefetch_depth() }, false>(args)
}

/// Split-K, 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_splitk_bm64_bn128(args: DenseSplitKArgs) {
    imp::gemm_splitk::<2, 4, { crate::tile::DENSE_SPLITK_TILES[1].prefetch_depth() }, false>(args)
}

/// Split-K, 128 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nt_splitk_bm128_bn128(args: DenseSplitKArgs) {
    imp::gemm_splitk::<4, 4, { crate::tile::DENSE_SPLITK_TILES[2].prefetch_depth() }, false>(args)
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
