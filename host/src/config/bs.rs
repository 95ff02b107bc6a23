//! The dense bs choice (B pre-shuffled straight to registers, [`fp8gemm_device::mainloop_bs`]):
//! the tile rules, the fitted per-tile estimates, the split-K / stream-K candidates, the
//! tuned-table replay ([`get_bs_config_for_workspace`]) and the kernel specs of the dense bs
//! kernels.

use super::*;

/// bs tile choice: the 64-row tile once it has at least this many tiles per CU (see
/// [`bs_tile_rule`]).
pub const BS_BM64_TILES_PER_CU: u32 = 8;

/// The narrow-tile rule of [`get_bs_config_for_workspace`]: the 32 × 64 data-parallel kernel
/// ([`bs_narrow_kernel`]: one barrier per two blocks, or per block above three tiles per CU)
/// for a problem of at most 256
/// rows and 16 K blocks (K ≤ 2048) whose 32 × 64 tiles number from 0.6 per CU up to 4 per CU
/// (one round) with at most 64 rows, or up to 2 per CU above 64 rows; `Some(tiles per CU)`
/// where it applies.
///
/// Where it comes from (modelled MI300X µs, full scope, the choice before → the 32 × 64
/// kernel; `FP8GEMM_PRESHUFFLED=1 fp8gemm profile`, with `FP8GEMM_FORCE_TILE=32x64`):
/// chosen — 16×16384×2048 14.24 → 11.85, 16×24576×1536 14.11 → 12.92, 32×16384×2048 14.23 → 11.91, 64×7168×2048 9.83 →
/// 8.70, 64×8192×1024 9.05 → 6.45, 64×12288×2048 12.67 → 11.36, 64×16384×256 6.18 → 5.63,
/// 64×20480×1024 10.99 → 9.88, 64×24576×1536 14.94 → 13.62, 64×32768×512 9.18 → 8.66,
/// 96×4096×1024 9.04 → 6.27, 128×4096×2048 9.04 → 8.60, 128×7168×2048 11.38 → 10.91,
/// 128×8192×1024 9.08 → 7.78, 192×4096×2048 10.91 → 10.91, 256×2048×2048 8.93 → 8.57,
/// 256×4096×1536 11.06 → 9.41; left out — 128×16384×1024 (3.4 per CU) 9.86 → 11.59,
/// 128×24576×1536 (5.1) 15.27 → 21.31, 200×6000×1024 (2.2) 9.57 → 9.75, 256×7168×2048 (2.9)
/// 13.30 → 15.16, and K beyond 2048 (64×7168×16384 unsplit 40.47 against 34.34 split;
/// the tuned table holds the split 32 × 64 configs of DeepSeek's long-K shapes). Those figures
/// are of the kernel with one barrier per block; [`bs_narrow_kernel`] lists the gains of the
/// one with one barrier per two blocks.
pub fn bs_narrow_rule(m: u32, n: u32, nkb: u32, cus: u32) -> Option<f64> {
    let tiles = tile::DENSE_BS_PIPE_BM32_BN64.grid(m, n);
    let per_cu = f64::from(tiles) / f64::from(cus.max(1));
    let most = if m <= 64 { 4.0 } else { 2.0 };
    (m <= 256 && nkb <= 16 && (0.6..=most).contains(&per_cu)).then_some(per_cu)
}

/// The narrow split rule of [`get_bs_config_for_workspace`]: for a decode problem of at most 64
/// rows and at least 32 K blocks (K ≥ 4096) whose 32 × 64 tiles split in two fit two
/// workgroups per CU, the 32 × 64 split-K kernel ([`tile::DENSE_SPLITK_BS_BM32_BN64`]) with the
/// largest split count of {2, 3, 4, 6, 8} (at most `k/128` and [`MAX_SPLITS`]) whose
/// workgroups fit two per CU; `Some(splits)` where it applies.
///
/// Where it comes from (modelled MI300X µs, full scope, the rules' choice before → this rule's
/// count; `FP8GEMM_PRESHUFFLED=1 fp8gemm profile`, with `FP8GEMM_FORCE_TILE=32x64
/// FP8GEMM_FORCE_SPLIT=S`): 16×4096×7168 14.52 → 13.07 (8), 32×2112×7168 11.52 → 9.90 (8),
/// 32×4096×7168 14.59 → 13.23 (8), 32×7168×16384 34.90 → 33.50 (4), 48×2048×8192 11.63 →
/// 10.06 (8), 64×512×7168 10.15 → 8.22 (8), 64×1024×7168 10.35 → 8.34 (8), 64×1536×7168
/// 10.74 → 9.54 (8), 64×2112×4096 9.78 → 8.87 (8), 64×2112×7168 11.70 → 10.75 (8),
/// 64×3072×7168 12.51 → 11.26 (6), 64×4096×4096 10.79 → 9.89 (4), 64×4096×7168 14.26 → 13.15
/// (4), 64×4096×16384 24.88 → 21.98 (4), 64×6144×7168 17.25 → 16.60 (3), 64×7168×7168 19.81 →
/// 19.03 (2), 64×8192×4096 14.91 → 14.31 (2). Every point is faster, not always at the best
/// count (64×2112×7168: 4 splits 10.23, tabled; 64×1536×7168: 6 splits 8.84). Those figures
/// are of the split-K loop with one barrier per block; with one per two blocks (the shipped
/// kernel, [`fp8gemm_device::mainloop_bs`], "One barrier per two blocks") 64×2112×7168 split 4
/// is 9.94 and 64×4096×7168 split 4 13.10.
pub fn bs_narrow_split_rule(m: u32, n: u32, nkb: u32, cus: u32) -> Option<u32> {
    let tiles = tile::DENSE_SPLITK_BS_BM32_BN64.grid(m, n);
    let wave = 2 * u64::from(cus.max(1));
    if m > 64 || nkb < 32 || tiles > tile::SPLITK_WAVES_MAX_TILES {
        return None;
    }
    [2u32, 3, 4, 6, 8].into_iter().filter(|&s| s <= nkb.min(MAX_SPLITS) && u64::from(tiles) * u64::from(s) <= wave).max()
}

/// The data-parallel 32 × 64 kernel for an `m × n` output on `cus` CUs of `lds_per_cu` bytes of
/// LDS: the one with one barrier per two blocks ([`tile::DENSE_BS_PIPE_BM32_BN64`], 18 KiB of LDS) while
/// its tiles fit one round at its occupancy (three workgroups per CU), else the one with one
/// barrier per block ([`tile::DENSE_BS_PIPE_B1_BM32_BN64`], 10 KiB, four per CU).
///
/// Modelled MI300X µs (`FP8GEMM_PRESHUFFLED=1 fp8gemm profile`, full scope), one barrier per
/// block → per two: 64×7168×2048 (0.7 tiles per CU) 8.70 → 8.10, 64×24576×1536 (2.5)
/// 13.62 → 13.23, 128×7168×2048 (1.5) 10.91 → 10.76; 64×32768×512 (3.4 per CU) 8.68 →
/// 9.22, the second round at three per CU.
pub fn bs_narrow_kernel(m: u32, n: u32, cus: u32, lds_per_cu: u32) -> tile::BsTile {
    let t = tile::DENSE_BS_PIPE_BM32_BN64;
    let per_cu = (lds_per_cu / t.lds_bytes()).max(1);
    if u64::from(t.grid(m, n)) <= u64::from(per_cu) * u64::from(cus.max(1)) { t } else { tile::DENSE_BS_PIPE_B1_BM32_BN64 }
}

/// A forced split count `s > 1` of bs tile `t` over `nkb` K blocks: at most
/// `min(k/128, MAX_SPLITS)` splits and at most `tile::bs_splitk_max_tiles` tiles, else a typed error
/// saying which.
fn check_forced_split(desc: &GemmDesc, t: tile::BsTile, s: u32, nkb: u32) -> Result<(), ConfigError> {
    let max_splits = nkb.min(MAX_SPLITS);
    if s > max_splits {
        return Err(ConfigError::ForcedSplit {
            splits: s.to_string(),
            expected: format!("at most {max_splits} (k/128 = {nkb} blocks, MAX_SPLITS = {MAX_SPLITS})"),
        });
    }
    // The split-K kernels on the pipelined loop count arrivals per wave: four counters per tile.
    let max_tiles = tile::bs_splitk_max_tiles(t.block_m);
    if t.grid(desc.m, desc.n) > max_tiles {
        let expected = format!("1 ({}×{} is more than {} output tiles of {}×{})", desc.m, desc.n, max_tiles, t.block_m, t.block_n);
        return Err(ConfigError::ForcedSplit { splits: s.to_string(), expected });
    }
    Ok(())
}

/// The config of the narrow split-K kernel with `splits` splits.
fn bs_narrow_split_config(desc: &GemmDesc, spec: &ArchSpec, splits: u32) -> GemmConfig {
    let t = tile::DENSE_SPLITK_BS_BM32_BN64;
    bs_tile_config(desc, spec, t, t.name, t.grid(desc.m, desc.n) * splits, splits, None)
}

/// The bs tile (index into the bs tile tables: 0 = 32 × 128, 1 = 64 × 128) for a problem of
/// `tiles32` / `tiles64` working tiles of each on `cus` CUs. With at least
/// [`BS_BM64_TILES_PER_CU`] 64-row tiles per CU (many rounds: throughput, where the 64-row
/// tile's operand reuse wins) the 64-row tile; below, the smaller of the per-round estimates
/// `⌈tiles32 / (3·CUs)⌉ · 0.95` and `⌈tiles64 / (2·CUs)⌉ · (1.52 with two workgroups per CU,
/// 1.1 alone)` — modelled µs per 128-K block of one round of each tile (3 and 2 workgroups per
/// CU by registers), read off the timing model at 4096×2048×7168, 1024×2048×7168 and the masked
/// 1 × 1024 × 4096 × 7168 (MI300X/MI325X). The 128-row tile (1 wave per SIMD) is never chosen.
pub fn bs_tile_rule(tiles32: u64, tiles64: u64, cus: u32) -> usize {
    let cus = u64::from(cus);
    if tiles64 >= u64::from(BS_BM64_TILES_PER_CU) * cus {
        return 1;
    }
    let est32 = tiles32.div_ceil(3 * cus) as f64 * 0.95;
    let est64 = tiles64.div_ceil(2 * cus) as f64 * if tiles64 > cus { 1.52 } else { 1.1 };
    usize::from(est64 < est32)
}

/// The data-parallel kernel of bs tile `i` (index of [`tile::DENSE_BS_TILES`]; also a forced
/// tile's, `FP8GEMM_FORCE_TILE`), whatever the tile count. The 64 × 128 tile runs the
/// pipelined kernel ([`tile::DENSE_BS_PIPE_BM64`]) at every tile count: since the loop's
/// one-exit shape it runs two workgroups per CU (220 registers) like the two-phase
/// `fp8_gemm_nt_bs_bm64_bn128`, and is modelled faster at every point measured (µs, two-phase
/// → pipelined): MI300X 4096×7168×2048 (11.8 tiles per CU) 175.57 → 145.53, 4096×7168×16384
/// 1034.02 → 850.44; MI325X 10240×2048×7168 367.43 → 285.16. (Before, at one workgroup per
/// CU, it ran only below [`BS_BM64_TILES_PER_CU`] tiles per CU: 4096×7168×2048 191.6 µs.)
/// The 128-row tile (unsplit) runs its pipelined kernel ([`tile::DENSE_BS_PIPE_BM128`],
/// `fp8gemm_device::mainloop_bs128`) at every tile count (modelled MI325X 4096×2048×7168:
/// 138.8 µs, 202.0 the two-phase `fp8_gemm_nt_bs_bm128_bn128`, which stays for its split-K
/// and stream-K twins' sake only).
pub fn bs_kernel(i: usize) -> tile::BsTile {
    match i {
        1 => tile::DENSE_BS_PIPE_BM64,
        2 => tile::DENSE_BS_PIPE_BM128,
        _ => tile::DENSE_BS_TILES[i],
    }
}

/// Modelled µs per 128-K block of one round of the pipelined bs kernels
/// ([`tile::DENSE_BS_PIPE_TILES`]: 48, 64, 80, 96 rows): `(workgroups per CU, one per CU, CUs
/// shared)`. Read off the timing model (MI325X, `--scope xcd`, `(t − 2 µs) / blocks / rounds`):
/// 48 rows 640×2048×7168 36.11 µs (alone), 1408×2048×7168 60.98 (2 per CU on most CUs);
/// 64 rows 1024×2048×7168 41.13; 80 rows 1408×2048×7168 52.30; 96 rows 1664×2048×7168 60.03.
/// The 48-row kernel fits two workgroups per CU (250 registers), the others one. Appended: 128
/// rows ([`tile::DENSE_BS_PIPE_BM128`], index [`BS_PIPE128`]), 1024×2048×7168 70.08 µs alone
/// (1.22), 4096×2048×7168 138.77 in 2 rounds (1.22), 14336×2048×7168 411.48 in 6 (1.22).
const BS_PIPE_BLOCK_US: [(u64, f64, f64); 5] = [(2, 0.61, 1.05), (2, 0.70, 1.18), (1, 0.90, 0.90), (1, 1.04, 1.04), (1, 1.22, 1.22)];
/// Modelled µs per 128-K block of one round of the 64-row pipelined kernel over several rounds
/// (two per CU, rounds overlapping): MI325X 4096×2048×7168 129.79 µs in 2 rounds (1.14).
const BS_PIPE64_ROUNDS_US: f64 = 1.14;
/// Index of the 128-row kernel in [`tile::DENSE_BS_PIPE_TILES`] / [`BS_PIPE_BLOCK_US`].
pub(super) const BS_PIPE128: usize = 4;
const _: () = assert!(tile::DENSE_BS_PIPE_TILES[BS_PIPE128].block_m == 128);
/// Modelled µs per 128-K block of one round of the 48-row pipelined kernel from
/// [`BS_PIPE48_MANY_ROUNDS`] rounds on, where its tiles' B traffic saturates the texture path
/// (VMEM/L1 97 % busy): MI325X 10240×2048×7168 342.6 µs in 6 rounds (1.01), 14336×2048×7168
/// 454.4 in 8 (1.01), 16384×2048×7168 511.3 in 9 (1.01). Used only to rank the 48-row
/// kernel against the 128-row one in [`bs_pipe_rule`] (its estimate elsewhere, against the
/// base and stream-K choices, stays [`BS_PIPE48_ROUNDS_US`]).
const BS_PIPE48_MANY_ROUNDS_US: f64 = 1.01;
/// See [`BS_PIPE48_MANY_ROUNDS_US`].
const BS_PIPE48_MANY_ROUNDS: u64 = 6;
/// Modelled µs per 128-K block of one round of the 48-row pipelined kernel over several rounds
/// (two per CU, rounds overlapping): MI325X 4096×2048×7168 146.4 µs in 3 rounds, MI300X
/// 4096×2112×7168 147.4 µs in 3.
const BS_PIPE48_ROUNDS_US: f64 = 0.87;
/// The 48-row pipelined kernel replaces the two-per-CU 64-row kernel of the many-tiles regime
/// only while B (`n·k` bytes) fits the device's L2 (8 × 4 MiB): its tiles read B 4/3 times as
/// often. Modelled: 10240×2048×7168 MI325X 370.3 → 342.6 µs, 16384×2048×7168 566.3 → 511.3,
/// MI300X 4096×7168×2048 175.2 → 173.3; but 4096×7168×16384 (B 112 MiB) 1049.6 → 1127.2.
pub const BS_PIPE48_MAX_B_BYTES: u64 = 32 << 20;
/// The pipelined bs kernels are considered from this many 128-K blocks on: with fewer, one
/// workgroup per CU leaves the prologue and epilogue exposed (modelled MI300X 128×32768×512, 4
/// blocks: 20.57 µs pipelined 64-row, 17.37 the two-per-CU 64-row kernel).
pub const BS_PIPE_MIN_BLOCKS: u32 = 8;

/// Per-block estimate (µs, same units as [`BS_PIPE_BLOCK_US`]) of the bs rule's unsplit choice
/// `i` (0 = 32 rows, 1 = 64 rows two per CU): the 32-row tile within one round of 3 per CU by
/// how many share a CU (modelled MI325X 1024×2048×7168 0.86 with 2, 1664×2048×7168 1.18 with
/// 3; 384×2048×7168 alone 0.63), else [`bs_tile_rule`]'s per-round figures.
fn bs_base_estimate(i: usize, tiles32: u64, tiles64: u64, cus: u64) -> f64 {
    if i == 1 {
        // The 64-row tile runs its pipelined kernel (`bs_kernel`).
        return bs_pipe_round_estimate(1, tiles64, cus);
    }
    if tiles32 <= 3 * cus { [0.63, 0.86, 1.18][(tiles32.div_ceil(cus).max(1) - 1) as usize] } else { tiles32.div_ceil(3 * cus) as f64 * 0.95 }
}

/// The pipelined bs tile (index into [`tile::DENSE_BS_PIPE_TILES`]) that replaces the bs rule's
/// unsplit choice `base` ([`bs_tile_rule`]) for an `m × n` problem of `nkb` 128-K blocks on `cus`
/// CUs, if any: the one of least `⌈tiles / (slots·CUs)⌉ · per-block` (`BS_PIPE_BLOCK_US`) when
/// that is below the base's estimate (`bs_base_estimate`; the 48-row kernel over several rounds:
/// `BS_PIPE48_ROUNDS_US` per round), from [`BS_PIPE_MIN_BLOCKS`] blocks on; from
/// [`BS_BM64_TILES_PER_CU`] 64-row tiles per CU (the two-per-CU 64-row kernel's regime) only the
/// 48-row kernel or the 128-row one (ranked with `BS_PIPE48_MANY_ROUNDS_US`) and only up to
/// [`BS_PIPE48_MAX_B_BYTES`] of B; above 64 rows (a single row of tiles: modelled MI300X 64×24576×1536,
/// 12 blocks, 17.67 µs with the 32-row tile, 18.21 pipelined 64-row; the estimate there said
/// otherwise). Modelled effect (MI325X; before → after, µs): 640×2048×7168 50.8
/// (32 rows) → 36.1 (48), 1024×2048×7168 50.3 → 41.1 (64), 1408×2048×7168 67.8 → 52.3 (80),
/// 1664×2048×7168 68.2 → 60.0 (96), 4096×2048×7168 160.2 → 151.6 (80); MI300X 4096×2112×7168
/// 172.6 → 152.0 (80), 256×7168×2048 19.9 → 18.0 (64).
pub fn bs_pipe_rule(m: u32, n: u32, nkb: u32, cus: u32, base: usize) -> Option<usize> {
    let cus = u64::from(cus.max(1));
    let tiles = |bm: u32| u64::from(m.div_ceil(bm)) * u64::from(n.div_ceil(128));
    let (t32, t64) = (tiles(32), tiles(64));
    // Many tiles (the two-per-CU 64-row kernel's regime): only the 48-row kernel, two per CU.
    let many = t64 >= u64::from(BS_BM64_TILES_PER_CU) * cus;
    if m <= 64 || nkb < BS_PIPE_MIN_BLOCKS || (base == 0 && t32 < cus) || (many && u64::from(n) * u64::from(nkb) * 128 > BS_PIPE48_MAX_B_BYTES) {
        return None;
    }
    let base_est = bs_base_estimate(base, t32, t64, cus);
    let mut best: Option<(usize, f64)> = None;
    for (p, t) in tile::DENSE_BS_PIPE_TILES.iter().enumerate() {
        // Many tiles: the 48-row kernel, or the 128-row one (a quarter less B per row).
        if many && p != 0 && p != BS_PIPE128 {
            continue;
        }
        let e = bs_pipe_round_estimate(p, tiles(t.block_m), cus);
        let rank = bs_pipe_rank_estimate(p, tiles(t.block_m), cus);
        if e.max(rank) < base_est && best.is_none_or(|(_, b)| rank < b) {
            best = Some((p, rank));
        }
    }
    best.map(|(p, _)| p)
}

/// The figure by which [`bs_pipe_rule`] ranks the pipelined tiles against each other (µs per
/// 128-K block, all rounds): [`bs_pipe_round_estimate`], except that the 48-row kernel at
/// [`BS_PIPE48_MANY_ROUNDS`] rounds or more costs its texture-bound figure
/// ([`BS_PIPE48_MANY_ROUNDS_US`]) per round.
fn bs_pipe_rank_estimate(p: usize, tiles: u64, cus: u64) -> f64 {
    match tiles.div_ceil(2 * cus.max(1)) {
        r if p == 0 && r >= BS_PIPE48_MANY_ROUNDS => r as f64 * BS_PIPE48_MANY_ROUNDS_US,
        _ => bs_pipe_round_estimate(p, tiles, cus),
    }
}

/// [`bs_pipe_rule`]'s estimate (µs per 128-K block, all rounds) of the pipelined bs tile `p`
/// ([`tile::DENSE_BS_PIPE_TILES`]) with `tiles` tiles on `cus` CUs: one round alone, several
/// rounds of the two-per-CU 48-row kernel at `BS_PIPE48_ROUNDS_US` each, else the rounds at
/// the shared per-block figure of [`BS_PIPE_BLOCK_US`].
pub(super) fn bs_pipe_round_estimate(p: usize, tiles: u64, cus: u64) -> f64 {
    let (slots, alone, shared) = BS_PIPE_BLOCK_US[p];
    let rounds = tiles.div_ceil(slots * cus.max(1));
    match () {
        _ if tiles <= cus => alone,
        _ if rounds > 1 && slots > 1 => rounds as f64 * if p == 1 { BS_PIPE64_ROUNDS_US } else { BS_PIPE48_ROUNDS_US },
        _ => rounds as f64 * shared,
    }
}

/// Estimated µs (launch overhead excluded) of the pipelined bs tile `p` over an `m × n`
/// problem of `nkb` 128-K blocks on `cus` CUs: [`bs_pipe_round_estimate`] × `nkb` (the unit of
/// `bs_estimate`, against which the stream-K and split-K candidates are weighed).
pub(super) fn bs_pipe_estimate(p: usize, m: u32, n: u32, nkb: u32, cus: u32) -> f64 {
    let tiles = u64::from(tile::DENSE_BS_PIPE_TILES[p].grid(m, n));
    bs_pipe_round_estimate(p, tiles, u64::from(cus)) * f64::from(nkb)
}

/// Modelled time (µs, timing model on MI300X, `--scope full`, launch overhead excluded) per
/// 128-K block of one 32 × 128 bs workgroup when 1, 2 or 3 of them share a CU (the most that fit:
/// 3 waves per SIMD), [`bs_split_estimate`] (fitted).
const BS_SPLIT_BLOCK_US: [f64; 3] = [0.62, 1.07, 1.41];
/// Fixed modelled cost (µs) of the bs split-K hand-off (partial store, release, counter, the
/// reduced tile's store), per round of workgroups, [`bs_split_estimate`] (fitted).
const BS_SPLIT_FIXED_US: f64 = 1.90;
/// Modelled cost (µs) per split of the last arriver's reduction (one 16 KiB partial tile of
/// 32 × 128 FP32 each through its CU's texture path), [`bs_split_estimate`] (fitted).
const BS_SPLIT_PER_SPLIT_US: f64 = 0.45;

/// Estimated time (µs, excluding the launch overhead) of `tiles` bs 32 × 128 tiles over `nkb`
/// 128-K blocks in `splits` splits on `cus` CUs: `rounds · (⌈nkb / splits⌉ · block(sharing) +
/// fixed + per_split · splits)` (the last two only when split), where up to `slots` workgroups
/// share a CU (`sharing = min(slots, ⌈tiles · splits / cus⌉)`, `rounds = ⌈tiles · splits /
/// (slots · cus)⌉`).
///
/// The constants are fitted, not derived: a random search (over values of two decimals)
/// minimising the summed log ratio of the chosen split's time to the best split's over a sweep
/// of forced split counts through the timing model (`FP8GEMM_PRESHUFFLED=1
/// FP8GEMM_FORCE_TILE=32x128 FP8GEMM_FORCE_SPLIT=s fp8gemm profile --scope full`, MI300X,
/// s ∈ {1, 2, 3, 4, 5, 6, 8, 10, 12, 16}, M ∈ {16, 64, 128, 256} × DeepSeek-V3 (N, K) pairs and
/// 16×256×{1024, 4096}; *modelled*, not measured), with the split-K reduction that stages the
/// reduced tile in LDS (`fp8gemm_device::dense`, split-K). They are for the 32-row tile: the
/// only tile [`get_bs_config_for_workspace`]'s rule splits (it takes the 64-row tile only from
/// 8 of its tiles per CU, where nothing splits). The summed log ratio is 0.48 (previous
/// constants `[0.97, 1.66, 2.69]`, 3.16, 0.63, fitted on the previous reduction: 0.54); on that
/// sweep (µs; bold where this fit chooses better than the previous one):
///
/// | shape (m×n×k) | previous fit | this fit | best forced split |
/// |---|---|---|---|
/// | 16×256×1024 | 4: 8.23 | 4: 8.23 | 5: 7.81 |
/// | 16×256×4096 | 8: 10.00 | 8: 10.00 | 8: 10.00 |
/// | 16×2112×7168 | 8: 11.96 | 8: 11.96 | 8: 11.96 |
/// | 16×4096×7168 | 8: 14.65 | 8: 14.65 | 5: 14.38 |
/// | 16×7168×2048 | 4: 10.64 | 4: 10.64 | 6: 10.12 |
/// | 16×7168×16384 | 10: 35.78 | **5: 34.81** | 3: 34.72 |
/// | 16×24576×1536 | 1: 14.22 | 1: 14.22 | 1: 14.22 |
/// | 64×2112×7168 | 8: 12.18 | 8: 12.18 | 8: 12.18 |
/// | 64×4096×7168 | 4: 14.99 | 4: 14.99 | 4: 14.99 |
/// | 64×7168×2048 | 2: 11.05 | 2: 11.05 | 5: 10.55 |
/// | 64×7168×16384 | 5: 36.38 | 8: 38.04 | 5: 36.38 |
/// | 128×2112×7168 | 4: 14.55 | 4: 14.55 | 8: 13.91 |
/// | 128×4096×7168 | 4: 18.26 | 4: 18.26 | 4: 18.26 |
/// | 128×7168×2048 | 1: 14.65 | **4: 14.11** | 3: 12.84 |
/// | 128×7168×16384 | 4: 58.52 | 4: 58.52 | 3: 51.55 |
/// | 256×2112×7168 | 4: 18.25 | 4: 18.25 | 4: 18.25 |
/// | 256×4096×7168 | 2: 28.23 | **3: 27.11** | 3: 27.11 |
///
/// (64×24576×1536, 64×32768×512, 128×24576×1536, 256×7168×2048: at least one tile per CU, no
/// split.) Worse than the previous fit only at 64×7168×16384 (5 %). The sweep's curves are not
/// smooth in the split count (128×7168×2048: 2 splits 14.08, 3 12.84, 4 14.11 µs: uneven block
/// ranges and workgroups per CU), which no estimate of this form follows; the fit's choices are
/// sensitive to its constants at the second decimal (rounding the unrounded optimum moved the
/// summed log ratio from 0.48 to 0.59), hence the search over rounded values. The modelled
/// timing is sensitive to code layout by about ±2 %, so differences of that size are noise.
///
/// `slots`: workgroups per CU of the kernel (3 for the phase-loop 32-row kernels the constants
/// were fitted on, the masked split-K ones; [`BS_SPLITK32_SLOTS`] for the dense split-K kernel,
/// which runs the pipelined loop — its per-block constants are the phase loop's, an
/// overestimate: refitting them on that kernel is open).
pub(super) fn bs_split_estimate(tiles: u32, nkb: u32, splits: u32, cus: u32, slots: u32) -> f64 {
    let slots = u64::from(slots.clamp(1, 3));
    let (splits, cus) = (splits.max(1), u64::from(cus.max(1)));
    let wgs = u64::from(tiles) * u64::from(splits);
    let rounds = wgs.div_ceil(slots * cus) as f64;
    let sharing = wgs.div_ceil(cus).clamp(1, slots) as usize;
    let blocks = f64::from(nkb.div_ceil(splits));
    let extra = if splits > 1 { BS_SPLIT_FIXED_US + BS_SPLIT_PER_SPLIT_US * f64::from(splits) } else { 0.0 };
    rounds * (blocks * BS_SPLIT_BLOCK_US[sharing - 1] + extra)
}

/// Chooses the bs kernel (B pre-shuffled straight to registers, [`fp8gemm_device::mainloop_bs`])
/// of a dense problem, as [`get_bs_config_for_workspace`] with unlimited workspace.
pub fn get_bs_config(desc: &GemmDesc) -> Result<GemmConfig, ConfigError> {
    get_bs_config_for_workspace(desc, u64::MAX).map(|(c, _)| c)
}

/// Chooses the bs kernel of a dense problem when the launch has `available` FP32 elements of
/// workspace.
///
/// **Tile**: the one forced with [`force_tile`] / `FP8GEMM_FORCE_TILE` (32x128, 64x128 or
/// 128x128 — a forced 64x128 runs [`bs_kernel`]'s kernel; or 48x128, 80x128, 96x128, the
/// pipelined kernels, unsplit; or 32x64, the narrow kernels, split with a forced split count),
/// else the 32 × 64 data-parallel kernel where [`bs_narrow_rule`] applies (short K, 0.6–4
/// narrow tiles per CU), else the 32 × 64 split-K kernel where [`bs_narrow_split_rule`]
/// applies (at most 64 rows, K ≥ 4096; its split count; when its workspace does not fit
/// `available`, the rules below choose among what fits and it is reported as preferred), else
/// [`bs_tile_rule`]'s; from one tile per CU on, the
/// data-parallel baseline is the pipelined tile ([`tile::DENSE_BS_PIPE_TILES`]) where
/// [`bs_pipe_rule`] estimates one faster than the rule's, and the stream-K / split-K candidates
/// below must beat that baseline. Modelled TFLOPS of the rule's tiles (MI300X, 32 / 64 / 128-row tile):
/// 4096×7168×2048 (11.8 bm64 tiles per CU) 637 / 688 / 561, 4096×2112×7168 (3.6) 717 / 727 /
/// 614, 4096×2048×7168 (3.4) 742 / 706 / 595, 1024×2048×7168 (0.8) 599 / 487 / 295. Until the
/// tuned table has bs rows.
///
/// **Split-K** (the bs split-K kernels, [`fp8gemm_device::dense`]'s protocol): the count forced
/// with [`force_split`] / `FP8GEMM_FORCE_SPLIT` (`≤ min(k/128, MAX_SPLITS)`, at most
/// `tile::bs_splitk_max_tiles` tiles, never reduced for lack of workspace), else the count
/// `1 ≤ s ≤ min(k/128, MAX_SPLITS)` of least `bs_split_estimate` (private, `host/src/config/bs.rs`) when the tile count is below
/// the CU count (else 1; ties: fewer splits), among the counts whose workspace fits `available` (no
/// split always fits; a smaller choice than the unlimited one is reported as a
/// [`WorkspaceLimit`]). It replaced "one workgroup per CU" (`⌈CUs / tiles⌉` splits): modelled
/// 64×2112×7168 9 splits 14.51 µs → 8: 13.22; 128×2112×7168 5: 18.58 → 4: 15.06;
/// 128×7168×2048 2: 15.32 → 1 (no split): 14.62 (table in the docs of the private `bs_split_estimate`).
///
/// **Stream-K** (the bs stream-K kernels, [`fp8gemm_device::streamk`] over the bs loop): the
/// schedule forced with [`force_stream_k`] / `FP8GEMM_FORCE_STREAMK=G[/DP]` (on the forced
/// tile, 32x128 or 64x128, else on the bs stream-K tile of least estimate the schedule is valid
/// for; an invalid schedule, a forced split at the same time or the 128x128 tile is a
/// [`ConfigError::ForcedStreamK`]; never reduced for lack of workspace).
///
/// **At least one tile per CU** (no forcing): a model-driven comparison instead of the rule's
/// wave quantization — the rule's data-parallel tile against every bs stream-K candidate
/// (32- and 64-row tiles, heads of whole waves, `g` of whole waves or `c ≤ 16` contributors per
/// tail tile) and every one-wave split-K candidate of the 32-row tile, by the private
/// `bs_estimate` (processor sharing on the busiest CU, fitted to forced timing-model runs; fit
/// table and where it cannot be trusted there). A stream-K or split-K candidate replaces the
/// data-parallel tile only when its estimate is `BS_STREAMK_MIN_GAIN` = 8 % lower, among
/// those whose workspace fits `available` (a smaller choice than the unlimited one is reported
/// as a [`WorkspaceLimit`]). `FP8GEMM_PRINT_CONFIGS=1` prints the choice and both estimates,
/// `=2` every candidate's.
///
/// The **pipelined bs stream-K** candidates (`fp8_gemm_nt_streamk_bs_pipe_bm{48,64}_bn128`, two
/// workgroups per CU; private `bs_pipe_streamk_candidates`: aligned tails of `c ∈ {1, 2, 4}`
/// pieces per tile after whole waves or no head, up to 64 K blocks) join them with their own
/// fitted estimate (`bs_pipe_streamk_estimate`) and margin (`BS_PIPE_SK_MIN_GAIN` = 1 %),
/// each weighed against the baseline as its own estimate sees it (the 48-row pipelined kernel by
/// the pipelined estimate); the candidate of the largest estimated relative gain wins. Modelled
/// effect (before → after, every row): `fp8gemm_device::streamk`, "The pipelined bs stream-K
/// kernels on the timing model". (The table below is the two-loop stream-K candidates' step.)
///
/// `FP8GEMM_PEERS_DIR=… FP8GEMM_PRESHUFFLED=1 fp8gemm compare --set peers` (*modelled*
/// MI325X µs, and the ratio to AMD's measured TFLOPS), before (`docs/perf/compare_preshuffled.txt`,
/// the rule alone) → after, every row that moved by 1 % or more (no row got slower):
///
/// | shape (m×n×k) | before | after | choice |
/// |---|---|---|---|
/// | 1664×768×7168 | 50.99 (0.63×) | 38.21 (0.84×) | stream-K 32×128, 304 + 64 |
/// | 1728×768×7168 | 51.04 (0.64×) | 38.35 (0.85×) | stream-K 32×128, 304 + 160 |
/// | 1792×768×7168 | 50.96 (0.64×) | 38.84 (0.84×) | stream-K 32×128, 304 + 256 |
/// | 1856×768×7168 | 51.09 (0.65×) | 40.26 (0.82×) | stream-K 32×128, 304 + 264 |
/// | 1920×768×7168 | 51.06 (0.65×) | 38.34 (0.86×) | stream-K 32×128, 304 + 224 |
/// | 1984×768×7168 | 50.92 (0.67×) | 38.81 (0.88×) | stream-K 32×128, 304 + 272 |
/// | 2048×768×7168 | 50.11 (0.68×) | 39.90 (0.85×) | stream-K 32×128, 304 + 240 |
/// | 640×2048×7168 | 50.76 (0.60×) | 38.17 (0.80×) | stream-K 32×128, 304 + 128 |
/// | 672×2048×7168 | 51.29 (0.63×) | 39.66 (0.81×) | stream-K 32×128, 304 + 256 |
/// | 704×2048×7168 | 51.39 (0.62×) | 40.87 (0.78×) | stream-K 32×128, 304 + 288 |
/// | 736×2048×7168 | 51.42 (0.64×) | 38.73 (0.84×) | stream-K 32×128, 304 + 256 |
/// | 768×2048×7168 | 50.94 (0.64×) | 40.00 (0.81×) | stream-K 32×128, 304 + 240 |
/// | 800×2048×7168 | 51.10 (0.62×) | 40.39 (0.78×) | stream-K 32×128, 304 + 288 |
/// | 832×2048×7168 | 51.14 (0.66×) | 40.52 (0.83×) | split-K 32×128 / 2 |
/// | 864×2048×7168 | 51.45 (0.67×) | 40.59 (0.85×) | split-K 32×128 / 2 |
/// | 896×2048×7168 | 50.78 (0.67×) | 40.74 (0.83×) | split-K 32×128 / 2 |
/// | 928×2048×7168 | 51.28 (0.76×) | 48.79 (0.80×) | stream-K 32×128, 304 + 480 |
/// | 960×2048×7168 | 50.88 (0.73×) | 49.09 (0.76×) | stream-K 32×128, 304 + 528 |
/// | 992×2048×7168 | 50.83 (0.73×) | 49.61 (0.75×) | stream-K 32×128, 304 + 576 |
/// | 1024×2048×7168 | 50.91 (0.78×) | 48.57 (0.81×) | stream-K 32×128, 304 + 832 |
/// | 1280×2048×7168 | 68.19 (0.67×) | 55.28 (0.82×) | stream-K 32×128, 608 + 256 |
/// | 1344×2048×7168 | 67.89 (0.72×) | 55.54 (0.88×) | stream-K 32×128, 608 + 256 |
/// | 1408×2048×7168 | 67.79 (0.73×) | 59.49 (0.83×) | stream-K 32×128, 608 + 288 |
/// | 1472×2048×7168 | 68.03 (0.73×) | 58.09 (0.86×) | stream-K 32×128, 608 + 256 |
/// | 1856×2048×7168 | 89.17 (0.77×) | 74.68 (0.91×) | stream-K 32×128, 912 + 128 |
/// | 1920×2048×7168 | 89.35 (0.76×) | 87.88 (0.77×) | stream-K 32×128, 912 + 288 |
/// | 1984×2048×7168 | 89.41 (0.79×) | 85.42 (0.83×) | stream-K 32×128, 912 + 240 |
/// | 2048×2048×7168 | 89.23 (0.79×) | 84.78 (0.83×) | stream-K 32×128, 912 + 896 |
/// | 10240×2048×7168 | 370.15 (0.81×) | 362.33 (0.83×) | stream-K 64×128, 2432 + 512 |
/// | 12288×2048×7168 | 449.11 (0.80×) | 425.82 (0.84×) | stream-K 64×128, 3040 + 256 |
///
/// Geometric mean over the 47 shapes 0.738× → 0.827× AMD's measured TFLOPS (goal 1.1×), lowest
/// 0.603× (640×2048×7168) → 0.749× (992×2048×7168). The wave-quantization cliffs are gone:
/// 1216 → 1280 rows at N = 2048 was 51.1 → 68.2 µs, now 51.1 → 55.3; 1792 → 1856 was
/// 69.8 → 89.2, now 69.8 → 74.7; N = 768 from 1664 rows 50–51 µs, now 38–40.
/// `--set deepseek` (MI300X): 4096×2112×7168 173.24 → 162.12 µs (0.85× → 0.91× AITER;
/// stream-K 32×128, 2128 + 288), 64×24576×1536 17.58 → 16.91 (stream-K 32×128, 304 + 240);
/// every other row within ±0.5 % but 128×7168×16384, 61.67 → 55.36, whose choice (below one
/// tile per CU: split-K 32×128 / 4, `bs_split_estimate`) this does not touch (the same forced
/// config under `fp8gemm profile --scope full` is 60.12; not investigated). Whole tables:
/// `docs/perf/compare_preshuffled_streamk.txt`.
///
/// **Tuned table** (`host/tuned/gfx942_bs.csv`, [`bs_table`]): with nothing forced, a problem
/// with a row there (same shape and CU count) gets the row's config, replayed through the
/// forced paths above; if its workspace does not fit `available`, the rules choose among what
/// fits and the row's config is reported as the preferred one ([`WorkspaceLimit`]).
pub fn get_bs_config_for_workspace(desc: &GemmDesc, available: u64) -> Result<(GemmConfig, Option<WorkspaceLimit>), ConfigError> {
    validate(desc)?;
    if desc.kind != GemmKind::Dense {
        return Err(ConfigError::NoKernel { kind: desc.kind, arch: desc.arch });
    }
    let rows = if bs_table::ignored() { &[][..] } else { bs_table::table()? };
    get_bs_config_with_table(desc, available, rows)
}

/// [`get_bs_config_for_workspace`] with the bs tuned table `rows`.
pub(super) fn get_bs_config_with_table(desc: &GemmDesc, available: u64, rows: &[bs_table::BsRow]) -> Result<(GemmConfig, Option<WorkspaceLimit>), ConfigError> {
    let forced = (forced_tile(), forced_split(), forced_stream_k());
    let row = match forced {
        (None, None, None) => bs_table::lookup(rows, desc),
        _ => None,
    };
    let (config, why, limited) = match row {
        Some(row) => {
            let f = row.forcing;
            let replay = (Some(f.tile), Some(f.splits), f.stream_k);
            let (tabled, _, _) = bs_choose(desc, u64::MAX, replay)
                .map_err(|e| ConfigError::Tuned(format!("bs table row {} for {}x{}x{} does not resolve: {e}", f, desc.m, desc.n, desc.k)))?;
            if tabled.workspace_floats() <= available {
                (tabled, Choice::BsTable(row.us, row.rule_us, f), None)
            } else {
                let (config, why, _) = bs_choose(desc, available, (None, None, None))?;
                (config, why, Some(WorkspaceLimit { needed: tabled.workspace_floats(), preferred: tabled, available }))
            }
        }
        None => bs_choose(desc, available, forced)?,
    };
    print_once(desc, &config, why, limited.as_ref());
    Ok((config, limited))
}

/// The bs choice of [`get_bs_config_for_workspace`] with the forcing `(tile, splits, stream-K)`
/// given (from the thread / environment, or a tuned row's): the config, why, and the workspace
/// limit it met.
fn bs_choose(
    desc: &GemmDesc,
    available: u64,
    forced: (Option<(u32, u32)>, Option<u32>, Option<ForcedStreamK>),
) -> Result<(GemmConfig, Choice, Option<WorkspaceLimit>), ConfigError> {
    // The device's own CU count (GemmDesc::with_cus), not the architecture's.
    let spec = ArchSpec { cus: desc.cus.max(1), ..arch_spec(desc.arch) };
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let (forced_t, forced_s, forced_sk) = forced;
    if forced_s == Some(0) {
        return Err(ConfigError::ForcedSplit { splits: "0".into(), expected: "at least 1".into() });
    }
    // The narrow 32 × 64 tile: its split-K kernel when a split is forced, else its
    // data-parallel pipelined kernel.
    if forced_t == Some((32, 64)) {
        let config = match (forced_sk, forced_s.filter(|&s| s > 1)) {
            // No stream-K kernel for this tile: bs_forced_streamk's error.
            (Some(sk), _) => bs_forced_streamk(desc, spec, sk, forced_t, forced_s)?,
            (None, Some(s)) => {
                check_forced_split(desc, tile::DENSE_SPLITK_BS_BM32_BN64, s, nkb)?;
                bs_narrow_split_config(desc, &spec, s)
            }
            (None, None) => {
                let t = match forced_bs_narrow_barrier() {
                    None => bs_narrow_kernel(desc.m, desc.n, spec.cus, spec.lds_per_cu),
                    Some(2) => tile::DENSE_BS_PIPE_BM32_BN64,
                    Some(1) => tile::DENSE_BS_PIPE_B1_BM32_BN64,
                    Some(b) => {
                        return Err(ConfigError::ForcedTile {
                            tile: format!("32x64 with {b} blocks per barrier (config::force_bs_narrow_barrier)"),
                            available: "32x64 with 1 or 2 blocks per barrier",
                        });
                    }
                };
                bs_pipe_config(desc, &spec, t)?
            }
        };
        return Ok((config, Choice::Forced, None));
    }
    // A forced pipelined-only tile (48, 80, 96 rows): that kernel, unsplit.
    if let Some((bm, bn)) = forced_t
        && let Some(t) = tile::DENSE_BS_PIPE_TILES.iter().find(|t| (t.block_m, t.block_n) == (bm, bn) && !tile::DENSE_BS_TILES.iter().any(|d| d.block_m == bm))
    {
        if let Some(s) = forced_s.filter(|&s| s > 1) {
            return Err(ConfigError::ForcedSplit { splits: s.to_string(), expected: format!("1 (no split-K kernel for the pre-shuffled {bm}x{bn} tile)") });
        }
        let config = match forced_sk {
            // The 48-row tile has a stream-K kernel (pipelined); 80 and 96 rows do not.
            Some(sk) => bs_forced_streamk(desc, spec, sk, forced_t, forced_s)?,
            None => bs_pipe_config(desc, &spec, *t)?,
        };
        return Ok((config, Choice::Forced, None));
    }
    let forced_i = match forced_t {
        Some((bm, bn)) => Some(tile::DENSE_BS_TILES.iter().position(|t| (t.block_m, t.block_n) == (bm, bn)).ok_or_else(|| ConfigError::ForcedTile {
            tile: format!("{bm}x{bn}"),
            available: "32x128, 64x128, 128x128, 32x64 (pre-shuffled B; also 48x128, 80x128, 96x128 unsplit)",
        })?),
        None => None,
    };
    let tiles_of = |i: usize| tile::DENSE_BS_TILES[i].grid(desc.m, desc.n);
    let make = |c: BsCandidate| bs_config(desc, spec, c);
    let estimate = |c: &BsCandidate| bs_estimate(c, c.bs_tile().grid(desc.m, desc.n), nkb, spec.cus);
    let max_splits = nkb.min(MAX_SPLITS);
    let mut limited = None;
    // The narrow split rule's config (nothing forced), used where its workspace fits.
    let narrow_split = if forced_t.is_none() && forced_s.is_none() && forced_sk.is_none() {
        bs_narrow_split_rule(desc.m, desc.n, nkb, spec.cus).map(|s| (s, bs_narrow_split_config(desc, &spec, s)))
    } else {
        None
    };
    let (config, why) = if let Some(sk) = forced_sk {
        (bs_forced_streamk(desc, spec, sk, forced_t, forced_s)?, Choice::Forced)
    } else if let Some(s) = forced_s.filter(|&s| s > 1) {
        let i = forced_i.unwrap_or(0);
        check_forced_split(desc, tile::DENSE_BS_TILES[i], s, nkb)?;
        (make(BsCandidate { tile: i, schedule: BsSchedule::Split(s) })?, Choice::Forced)
    } else if forced_t.is_some() || forced_s.is_some() {
        let i = match forced_i {
            Some(i) => i,
            None => bs_tile_rule(u64::from(tiles_of(0)), u64::from(tiles_of(1)), spec.cus),
        };
        // A forced 64-row tile runs the pipelined kernel (`bs_kernel`), or as
        // `force_bs_pipelined` says.
        let k =
            if i == 1 && forced_t.is_some() { if forced_bs64_pipelined() { tile::DENSE_BS_PIPE_BM64 } else { tile::DENSE_BS_TILES[1] } } else { bs_kernel(i) };
        let config = if k.name != tile::DENSE_BS_TILES[i].name {
            bs_pipe_config(desc, &spec, k)?
        } else {
            make(BsCandidate { tile: i, schedule: BsSchedule::DataParallel })?
        };
        (config, Choice::Forced)
    } else if let Some(per_cu) = bs_narrow_rule(desc.m, desc.n, nkb, spec.cus) {
        (bs_pipe_config(desc, &spec, bs_narrow_kernel(desc.m, desc.n, spec.cus, spec.lds_per_cu))?, Choice::BsNarrow(per_cu))
    } else if let Some((s, c)) = narrow_split.filter(|(_, c)| c.workspace_floats() <= available) {
        (c, Choice::BsNarrowSplit(s))
    } else {
        let i = bs_tile_rule(u64::from(tiles_of(0)), u64::from(tiles_of(1)), spec.cus);
        let tiles = tiles_of(i);
        let tiles_per_cu = f64::from(tiles) / f64::from(spec.cus);
        if tiles < spec.cus {
            // Fewer tiles than CUs (decode): the split count of least `bs_split_estimate` (ties:
            // fewer splits), overall and among the counts whose workspace fits (`s = 1` always
            // fits). Only launches of fewer tiles than CUs split this way (the estimate was
            // fitted there).
            let most = if tiles <= tile::bs_splitk_max_tiles(tile::DENSE_BS_TILES[i].block_m) { max_splits.max(1) } else { 1 };
            let best = |fits: &dyn Fn(u32) -> Result<bool, ConfigError>| -> Result<u32, ConfigError> {
                let mut best = (1, bs_split_estimate(tiles, nkb, 1, spec.cus, BS_SPLITK32_SLOTS));
                for s in 2..=most {
                    let e = bs_split_estimate(tiles, nkb, s, spec.cus, BS_SPLITK32_SLOTS);
                    if e < best.1 && fits(s)? {
                        best = (s, e);
                    }
                }
                Ok(best.0)
            };
            let cand = |s: u32| BsCandidate { tile: i, schedule: if s > 1 { BsSchedule::Split(s) } else { BsSchedule::DataParallel } };
            let want = best(&|_| Ok(true))?;
            let s = best(&|s| Ok(make(cand(s))?.workspace_floats() <= available))?;
            if s != want {
                let preferred = make(cand(want))?;
                limited = Some(WorkspaceLimit { needed: preferred.workspace_floats(), preferred, available });
            }
            (make(cand(s))?, Choice::BsRule(tiles_per_cu))
        } else {
            // At least one tile per CU: the rule's data-parallel tile against every bs stream-K
            // candidate (bs_streamk_candidates), by `bs_estimate`; stream-K must win by
            // BS_STREAMK_MIN_GAIN.
            let dp = BsCandidate { tile: i, schedule: BsSchedule::DataParallel };
            // The data-parallel baseline: the rule's tile, or the pipelined tile `bs_pipe_rule`
            // estimates faster than it (its per-block-round estimate × blocks, the same µs).
            let pipe = bs_pipe_rule(desc.m, desc.n, nkb, spec.cus, i).map(|p| (p, bs_pipe_estimate(p, desc.m, desc.n, nkb, spec.cus)));
            let dp_us = match pipe {
                Some((_, us)) => us,
                None => estimate(&dp),
            };
            // Each candidate is weighed against the baseline as its own estimate's family sees
            // it: the pipelined stream-K candidates against the 48-row pipelined kernel by their
            // estimate (`bs_pipe48_dp_estimate`: same tile, same occupancy), the others against
            // `dp_us` (their fit's; `bs_pipe_rule`'s figure for the 48-row kernel is low at a
            // single round of short K, where the two-loop stream-K estimate is low too —
            // 128×24576×1536 MI300X: baseline 12.6 µs estimated, 17.8 modelled; the 32-row
            // stream-K 608 + 480 estimated more than 8 % below 17.8, modelled 27.6). The winner is the
            // candidate of the largest estimated relative gain over its baseline.
            // Where the rule picked the 128-row kernel, the pipelined stream-K candidates meet
            // the 48-row baseline of their own family scaled by the 128-row kernel's advantage
            // over the 48-row one in the rule's ranking figures (the two fits have no shape in
            // common; modelled MI300X 4096×7168×2048: 48 rows 168.1 µs, 128 rows 162.3, the
            // 64-row stream-K kernel 3040 + 544 148.0).
            let pipe_dp_us = match pipe {
                Some((0, _)) => bs_pipe48_dp_estimate(desc, nkb, spec.cus),
                Some((p, us)) if p == BS_PIPE128 => {
                    let tiles48 = u64::from(tile::DENSE_BS_PIPE_TILES[0].grid(desc.m, desc.n));
                    let rank48 = bs_pipe_rank_estimate(0, tiles48, u64::from(spec.cus)) * f64::from(nkb);
                    bs_pipe48_dp_estimate(desc, nkb, spec.cus) * us / rank48
                }
                _ => dp_us,
            };
            let base_us = |c: &BsCandidate| if matches!(c.schedule, BsSchedule::PipeStreamK { .. }) { pipe_dp_us } else { dp_us };
            if verbose_candidates()
                && let Some((p, us)) = pipe
            {
                let t = tile::DENSE_BS_PIPE_TILES[p];
                eprintln!(
                    "fp8gemm bs candidate: m={} n={} k={}: {}x{} pipelined data-parallel: {us:.2} µs estimated",
                    desc.m, desc.n, desc.k, t.block_m, t.block_n
                );
            }
            let mut sks = bs_streamk_candidates(desc, spec.cus);
            sks.extend(bs_pipe_streamk_candidates(desc, spec.cus));
            sks.extend(bs_split_candidates(desc, spec.cus));
            if verbose_candidates() {
                for c in std::iter::once(&dp).chain(&sks) {
                    eprintln!("fp8gemm bs candidate: m={} n={} k={}: {}: {:.2} µs estimated", desc.m, desc.n, desc.k, c, estimate(c));
                }
            }
            let best_sk = |fits: &dyn Fn(&BsCandidate) -> Result<bool, ConfigError>| -> Result<Option<(f64, BsCandidate)>, ConfigError> {
                // (relative estimated time against its baseline, estimate, candidate)
                let mut best: Option<(f64, f64, BsCandidate)> = None;
                for c in &sks {
                    let e = estimate(c);
                    let rel = e / base_us(c);
                    if rel < 1.0 - c.min_gain() && best.is_none_or(|(b, _, _)| rel < b) && fits(c)? {
                        best = Some((rel, e, *c));
                    }
                }
                Ok(best.map(|(_, e, c)| (e, c)))
            };
            let want = best_sk(&|_| Ok(true))?;
            let got = best_sk(&|c| Ok(make(*c)?.workspace_floats() <= available))?;
            if let Some((_, w)) = want
                && got.is_none_or(|(_, g)| g != w)
            {
                let preferred = make(w)?;
                limited = Some(WorkspaceLimit { needed: preferred.workspace_floats(), preferred, available });
            }
            match (got, pipe) {
                (Some((us, c)), _) => (make(c)?, Choice::BsStreamK(us, base_us(&c))),
                (None, Some((p, _))) => {
                    let config = bs_pipe_config(desc, &spec, tile::DENSE_BS_PIPE_TILES[p])?;
                    let per_cu = f64::from(config.grid) / f64::from(spec.cus);
                    (config, Choice::BsRule(per_cu))
                }
                // The 64-row tile runs its pipelined kernel (`bs_kernel`).
                (None, None) if dp.tile == 1 => (bs_pipe_config(desc, &spec, bs_kernel(1))?, Choice::BsRule(tiles_per_cu)),
                (None, None) => (make(dp)?, Choice::BsRule(tiles_per_cu)),
            }
        }
    };
    // The narrow split was preferred but its workspace did not fit: it is the preferred config
    // (what unlimited workspace chooses), whatever the rules below it reported.
    if let Some((_, c)) = narrow_split
        && c.workspace_floats() > available
    {
        limited = Some(WorkspaceLimit { needed: c.workspace_floats(), preferred: c, available });
    }
    Ok((config, why, limited))
}

/// Workgroups per CU of the bs kernels of [`tile::DENSE_BS_TILES`] (32 / 64 / 128 rows: 3 / 2 /
/// 1, set by their registers; `tests/dense_kernel.rs` checks the data-parallel, split-K and
/// stream-K twins keep them).
pub(super) const BS_SLOTS: [u32; 3] = [3, 2, 1];
/// Workgroups per CU of the dense bs split-K 32-row kernel (`fp8_gemm_nt_splitk_bs_bm32_bn128`:
/// the pipelined loop, 170 registers; `tests/dense_kernel.rs` checks it).
const BS_SPLITK32_SLOTS: u32 = 2;

/// How a bs launch schedules its tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BsSchedule {
    /// One workgroup per tile.
    DataParallel,
    /// Split-K with this many splits.
    Split(u32),
    /// Stream-K: `dp` data-parallel tiles, then `g` workgroups over the rest.
    StreamK { dp: u32, g: u32 },
    /// Stream-K on the pipelined loop ([`STREAMK_BS_PIPE_TILES`]): `dp` data-parallel tiles,
    /// then `g` workgroups over the rest.
    PipeStreamK { dp: u32, g: u32 },
}

/// A bs candidate: tile index into [`tile::DENSE_BS_TILES`] (into [`STREAMK_BS_PIPE_TILES`]
/// for [`BsSchedule::PipeStreamK`]) and schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BsCandidate {
    pub(super) tile: usize,
    pub(super) schedule: BsSchedule,
}

impl BsCandidate {
    /// The least relative gain (estimated) over the data-parallel baseline for which the
    /// candidate replaces it: [`BS_PIPE_SK_MIN_GAIN`] for the pipelined stream-K candidates
    /// (their estimate's fit is tighter), [`BS_STREAMK_MIN_GAIN`] for the others.
    fn min_gain(&self) -> f64 {
        match self.schedule {
            BsSchedule::PipeStreamK { .. } => BS_PIPE_SK_MIN_GAIN,
            _ => BS_STREAMK_MIN_GAIN,
        }
    }

    /// The candidate's tile (its kernel's tile table entry).
    fn bs_tile(&self) -> tile::BsTile {
        match self.schedule {
            BsSchedule::PipeStreamK { .. } => STREAMK_BS_PIPE_TILES[self.tile],
            _ => tile::DENSE_BS_TILES[self.tile],
        }
    }
}

impl fmt::Display for BsCandidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.bs_tile();
        match self.schedule {
            BsSchedule::DataParallel => write!(f, "{}x{} data-parallel", t.block_m, t.block_n),
            BsSchedule::Split(s) => write!(f, "{}x{} split-K {s}", t.block_m, t.block_n),
            BsSchedule::StreamK { dp, g } => write!(f, "{}x{} stream-K {dp}+{g}", t.block_m, t.block_n),
            BsSchedule::PipeStreamK { dp, g } => write!(f, "{}x{} pipelined stream-K {dp}+{g}", t.block_m, t.block_n),
        }
    }
}

/// The launch config of a bs candidate.
pub(super) fn bs_config(desc: &GemmDesc, spec: ArchSpec, c: BsCandidate) -> Result<GemmConfig, ConfigError> {
    let t = c.bs_tile();
    let tiles = t.grid(desc.m, desc.n);
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let (grid, splits, name, stream_k) = match c.schedule {
        BsSchedule::DataParallel => (u64::from(tiles), 1, t.name, None),
        BsSchedule::Split(s) => (u64::from(tiles) * u64::from(s), s, tile::DENSE_SPLITK_BS_TILES[c.tile].name, None),
        BsSchedule::StreamK { dp, g } => {
            let sk = STREAMK_BS_TILES.get(c.tile).ok_or(ConfigError::NoKernel { kind: desc.kind, arch: desc.arch })?;
            (u64::from(dp) + u64::from(g), 1, sk.name, Some(StreamK { tiles, nkb, dp_tiles: dp, sk_wgs: g }))
        }
        BsSchedule::PipeStreamK { dp, g } => (u64::from(dp) + u64::from(g), 1, t.name, Some(StreamK { tiles, nkb, dp_tiles: dp, sk_wgs: g })),
    };
    let grid = u32::try_from(grid).map_err(|_| ConfigError::TooLarge { tensor: "grid", bytes: grid, limit: u64::from(u32::MAX) })?;
    // The launched kernel's own tile entry (its LDS): the split-K kernel's for a split.
    let t = if let BsSchedule::Split(_) = c.schedule { tile::DENSE_SPLITK_BS_TILES[c.tile] } else { t };
    Ok(bs_tile_config(desc, &spec, t, name, grid, splits, stream_k))
}

/// The unsplit config of a pipelined bs tile ([`tile::DENSE_BS_PIPE_TILES`]).
fn bs_pipe_config(desc: &GemmDesc, spec: &ArchSpec, t: tile::BsTile) -> Result<GemmConfig, ConfigError> {
    Ok(bs_tile_config(desc, spec, t, t.name, t.grid(desc.m, desc.n), 1, None))
}

/// The launch config of kernel `name` over the bs tile `t` (its shape and LDS) with `grid`
/// workgroups, `splits` and `stream_k` as given.
fn bs_tile_config(desc: &GemmDesc, spec: &ArchSpec, t: tile::BsTile, name: &'static str, grid: u32, splits: u32, stream_k: Option<StreamK>) -> GemmConfig {
    GemmConfig {
        block_m: t.block_m,
        block_n: t.block_n,
        block_k: tile::SCALE_BLOCK_K,
        workgroup_size: tile::THREADS,
        lds_bytes: t.lds_bytes(),
        kernel: name,
        grid,
        splits,
        stream_k,
        remap: Remap::Xcd { xcds: spec.xcds },
        arch: desc.arch,
    }
}

/// Why a forced stream-K schedule is invalid, in words.
fn streamk_error_text(e: fp8gemm_device::streamk::StreamKScheduleError, tiles: u32, dp: u32, nkb: u32) -> String {
    use fp8gemm_device::streamk::StreamKScheduleError as E;
    match e {
        E::NoTail => "data-parallel tiles below the tile count".to_string(),
        E::TooManyTiles => format!("at most {} stream-K tiles", tile::SPLITK_MAX_TILES),
        E::Workgroups => format!(
            "{} ..= {} workgroups (the tail's tiles ..= its K iterations)",
            tiles.saturating_sub(dp),
            u64::from(tiles.saturating_sub(dp)) * u64::from(nkb)
        ),
        E::Overflow => "a tail that fits in 32-bit counts".to_string(),
    }
}

/// The bs stream-K candidates of a dense problem: each bs stream-K tile
/// ([`STREAMK_BS_TILES`]) with a data-parallel head of whole waves of `s_h` workgroups per CU
/// (`dp = ⌊(tiles − 1) / (CUs · s_h)⌋ · CUs · s_h`, `s_h = 1 ..= slots`; heads of 0 tiles are
/// left out: a tail of every tile, all workgroups at staggered K offsets, loses the L2 sharing
/// and was modelled up to 1.8× slower than the data-parallel kernel, e.g. 1280×2048×7168 on
/// 32 × 128 tiles with g = 912: 120.0 against 67.8 µs) and `g = CUs · s_t` workgroups
/// (`s_t = 1 ..= slots`), where the schedule is valid.
pub(super) fn bs_streamk_candidates(desc: &GemmDesc, cus: u32) -> Vec<BsCandidate> {
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let mut v = Vec::new();
    for (i, t) in STREAMK_BS_TILES.iter().enumerate() {
        let tiles = t.grid(desc.m, desc.n);
        let mut dps: Vec<u32> = (1..=BS_SLOTS[i]).map(|s| streamk_default_dp(tiles, cus * s)).filter(|&dp| dp > 0).collect();
        dps.sort_unstable();
        dps.dedup();
        for dp in dps {
            let tail = tiles - dp;
            // g: whole waves of 1 ..= slots per CU, and `c` contributors per tail tile while
            // that stays within one wave.
            let mut gs: Vec<u32> = (1..=BS_SLOTS[i]).map(|s| cus * s).collect();
            gs.extend(BS_STREAMK_CONTRIBUTORS.iter().map(|&c| tail.saturating_mul(c)).filter(|&g| g <= cus * BS_SLOTS[i]));
            gs.sort_unstable();
            gs.dedup();
            for g in gs {
                if g <= tail.saturating_mul(BS_STREAMK_MAX_CONTRIBUTORS) && StreamKSchedule::new(tiles, nkb, dp, g).is_ok() {
                    v.push(BsCandidate { tile: i, schedule: BsSchedule::StreamK { dp, g } });
                }
            }
        }
    }
    v
}

/// The bs stream-K candidates on the pipelined loop ([`STREAMK_BS_PIPE_TILES`]: 48 and 64
/// rows, two workgroups per CU each), where the pipelined data-parallel kernels are considered
/// at all (`bs_pipe_rule`'s conditions: at least [`BS_PIPE_MIN_BLOCKS`] blocks — and at most
/// [`BS_PIPE_SK_MAX_BLOCKS`] —, more than 64
/// rows, and from [`BS_BM64_TILES_PER_CU`] 64-row tiles per CU only while B fits
/// [`BS_PIPE48_MAX_B_BYTES`]; both kernels run two workgroups per CU): heads of whole waves of `s_h` workgroups per
/// CU (`s_h = 1, 2`) and the empty head, each with a tail of `g = T · c` workgroups for `c` in
/// [`BS_PIPE_SK_CONTRIBUTORS`] within one wave (`g ≤ 2 · CUs`): **aligned** pieces only, every
/// tail tile split into `c` equal K ranges that run in lock-step across tiles (`c = 1`: whole
/// tiles — with the empty head, the data-parallel grid on the stream-K kernel, which for 64
/// rows runs two workgroups per CU where the data-parallel kernel runs one). Staggered tails
/// (`g` not a multiple of `T`) are left out: the workgroups running together read different
/// K ranges and lose the L2 sharing (modelled MI325X 768×2048×7168, 48 rows, g = 304 over 256
/// tiles: 54.7 µs against 35.2 for whole tiles; 1856×2048×7168, 64 rows, g = 608 over 464
/// tiles: 116.7 against 69.4), and the few that won did so by under 5 % (1664×768×7168, 64
/// rows, g = 304 over 156 tiles: 33.9 against 35.3 for the data-parallel 48-row kernel).
pub(super) fn bs_pipe_streamk_candidates(desc: &GemmDesc, cus: u32) -> Vec<BsCandidate> {
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let cus64 = u64::from(cus.max(1));
    let mut v = Vec::new();
    if desc.m <= 64 || !(BS_PIPE_MIN_BLOCKS..=BS_PIPE_SK_MAX_BLOCKS).contains(&nkb) {
        return v;
    }
    let many = u64::from(tile::DENSE_BS_TILES[1].grid(desc.m, desc.n)) >= u64::from(BS_BM64_TILES_PER_CU) * cus64;
    if many && u64::from(desc.n) * u64::from(nkb) * 128 > BS_PIPE48_MAX_B_BYTES {
        return v;
    }
    for (p, t) in STREAMK_BS_PIPE_TILES.iter().enumerate() {
        let slots = BS_PIPE_SK_SLOTS[p];
        let tiles = t.grid(desc.m, desc.n);
        let mut dps: Vec<u32> = (1..=slots).map(|s| streamk_default_dp(tiles, cus * s)).collect();
        dps.push(0);
        dps.sort_unstable();
        dps.dedup();
        for dp in dps {
            let tail = tiles - dp.min(tiles);
            for c in BS_PIPE_SK_CONTRIBUTORS {
                let g = tail.saturating_mul(c);
                if g <= cus * slots && StreamKSchedule::new(tiles, nkb, dp, g).is_ok() {
                    v.push(BsCandidate { tile: p, schedule: BsSchedule::PipeStreamK { dp, g } });
                }
            }
        }
    }
    v
}

/// A forced bs stream-K schedule `(g, dp)` ([`force_stream_k`]): on the forced tile's stream-K
/// kernel (32 rows: the two-loop kernel; 48 rows: the pipelined one; 64 rows: the pipelined
/// one or the two-per-CU one as [`force_bs_pipelined`] / [`bs_kernel`] say), else on the bs
/// stream-K kernel of least [`bs_estimate`] among those the schedule is valid for.
fn bs_forced_streamk(
    desc: &GemmDesc,
    spec: ArchSpec,
    (g, dp): ForcedStreamK,
    forced_t: Option<(u32, u32)>,
    forced_s: Option<u32>,
) -> Result<GemmConfig, ConfigError> {
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let schedule = match dp {
        Some(dp) => format!("{g}/{dp}"),
        None => g.to_string(),
    };
    let err = |expected: String| ConfigError::ForcedStreamK { schedule: schedule.clone(), expected };
    if forced_s.is_some_and(|s| s > 1) {
        return Err(err("no forced split-K at the same time (FP8GEMM_FORCE_SPLIT > 1)".into()));
    }
    // (tile index, pipelined) of the kernels to try.
    let kernels: Vec<(usize, bool)> = match forced_t {
        None => vec![(0, false), (1, false), (0, true), (1, true)],
        Some((32, 128)) => vec![(0, false)],
        Some((48, 128)) => vec![(0, true)],
        Some((64, 128)) => vec![(1, forced_bs64_pipelined())],
        Some((bm, bn))
            if tile::DENSE_BS_TILES
                .iter()
                .chain(&tile::DENSE_BS_PIPE_TILES)
                .chain(&[tile::DENSE_BS_PIPE_BM32_BN64])
                .any(|t| (t.block_m, t.block_n) == (bm, bn)) =>
        {
            return Err(err(format!("a bs stream-K tile: 32x128, 48x128 or 64x128 (no stream-K kernel for the pre-shuffled {bm}x{bn} tile)")));
        }
        Some((bm, bn)) => {
            return Err(ConfigError::ForcedTile {
                tile: format!("{bm}x{bn}"),
                available: "32x128, 64x128, 128x128, 32x64 (pre-shuffled B; also 48x128, 80x128, 96x128 unsplit)",
            });
        }
    };
    let mut best: Option<(f64, BsCandidate)> = None;
    let mut why_not = Vec::new();
    for (i, pipe) in kernels {
        let (t, slots) = if pipe { (STREAMK_BS_PIPE_TILES[i], BS_PIPE_SK_SLOTS[i]) } else { (STREAMK_BS_TILES[i], BS_SLOTS[i]) };
        let tiles = t.grid(desc.m, desc.n);
        let dp = dp.unwrap_or_else(|| streamk_default_dp(tiles, spec.cus * slots));
        match StreamKSchedule::new(tiles, nkb, dp, g) {
            Ok(_) => {
                let c = BsCandidate { tile: i, schedule: if pipe { BsSchedule::PipeStreamK { dp, g } } else { BsSchedule::StreamK { dp, g } } };
                let e = bs_estimate(&c, tiles, nkb, spec.cus);
                if best.is_none_or(|(b, _)| e < b) {
                    best = Some((e, c));
                }
            }
            Err(e) => why_not.push(format!(
                "{}x128{}: {tiles} tiles, {dp} data-parallel: {}",
                t.block_m,
                if pipe { " pipelined" } else { "" },
                streamk_error_text(e, tiles, dp, nkb)
            )),
        }
    }
    let c = best.ok_or_else(|| err(why_not.join("; ")))?.1;
    bs_config(desc, spec, c)
}

/// The pipelined stream-K candidates are made up to this many 128-K blocks, the range their
/// estimate was fitted on (16–56 blocks): beyond it they compete with split-K on estimates
/// that are off in opposite directions (256×7168×16384, 128 blocks: 64-row whole tiles
/// estimated 80.9 µs, modelled 78.7; split-K 2 on the 32-row tile estimated 81.5, modelled
/// 75.4).
const BS_PIPE_SK_MAX_BLOCKS: u32 = 64;

/// Contributors per tail tile of the pipelined stream-K candidates
/// ([`bs_pipe_streamk_candidates`]; more were slower wherever they fit in one wave).
const BS_PIPE_SK_CONTRIBUTORS: [u32; 3] = [1, 2, 4];

/// Workgroups per CU of the pipelined bs stream-K kernels ([`STREAMK_BS_PIPE_TILES`]: 48 / 64
/// rows, 183 / 209 registers: 2 each — the 64-row one fits two where its data-parallel twin,
/// 304 registers, fits one; `tests/dense_kernel.rs` checks them).
const BS_PIPE_SK_SLOTS: [u32; 2] = [2, 2];

/// Contributors per tail tile of the `g = T · c` stream-K candidates ([`bs_streamk_candidates`]):
/// a small tail spread over a whole wave has dozens of contributors per tile, whose hand-off
/// and reduction cost more than the blocks they save (1856×2048×7168, 32 × 128, head 912, 16
/// tail tiles: g = 608 80.7 µs modelled, g = 128 74.3).
const BS_STREAMK_CONTRIBUTORS: [u32; 7] = [2, 3, 4, 6, 8, 12, 16];

/// The bs split-K candidates above one tile per CU: the 32-row tile with `s ≥ 2` splits while
/// all `tiles · s` workgroups fit in one wave (`CUs · 2`, [`BS_SPLITK32_SLOTS`]; beyond, splitting only adds
/// reduction work: 1472×2048×7168 in 2 splits is modelled at 72.1 µs against 67.5 unsplit).
pub(super) fn bs_split_candidates(desc: &GemmDesc, cus: u32) -> Vec<BsCandidate> {
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let tiles = u64::from(tile::DENSE_BS_TILES[0].grid(desc.m, desc.n));
    if tiles > u64::from(tile::bs_splitk_max_tiles(32)) {
        return Vec::new();
    }
    (2..=nkb.min(MAX_SPLITS))
        .take_while(|&s| tiles * u64::from(s) <= u64::from(cus * BS_SPLITK32_SLOTS))
        .map(|s| BsCandidate { tile: 0, schedule: BsSchedule::Split(s) })
        .collect()
}

/// The least relative gain (estimated) for which a bs stream-K or split-K candidate replaces
/// the data-parallel tile: the estimate's error on the fit (table at [`bs_estimate`]) and the
/// timing model's code-layout noise (±2 %). At 5 % the choice took stream-K at
/// 1536×2048×7168 (head 608 + 480, estimated 62.2 against 66.1 µs) and 1600×2048×7168 (608 +
/// 576), modelled 68.3 and 74.9 µs against 67.5 and 67.6 data-parallel; at 8 % it keeps
/// every gain of the compare table but those of 4096×2048×7168 (155.5 against 161.8) and
/// 6144×2048×7168 (225.9 against 240.1), whose estimated gains are 5–8 %.
pub(super) const BS_STREAMK_MIN_GAIN: f64 = 0.08;

/// Modelled µs per 128-K block of a bs workgroup of tile `i` (32 / 64 rows) when 1, 2, 3 of
/// them share a CU (`fp8gemm profile --machine mi325x --scope xcd`, data-parallel, launch
/// overhead of 2 µs taken off): 32 rows 480 / 1216 / 1792 × 2048 × 7168 (1 / 2 / 3 tiles per
/// CU), 64 rows 1664 × 768 × 7168 (156 tiles) and 6144 × 768 × 7168 (576 tiles).
const BS_BLOCK_US: [[f64; 3]; 2] = [[0.487, 0.875, 1.18], [1.068, 1.56, 1.56]];
/// How much longer a block of a stream-K tail piece takes than a data-parallel block when the
/// tail workgroups start at staggered K offsets (`g` not a multiple of the tail tiles: the
/// workgroups running together share less of the L2), fitted ([`bs_estimate`]).
const BS_STREAMK_STAGGER_FACTOR: f64 = 1.8;
/// Blocks' worth of work every split tail workgroup adds (prologue, partial stores, hand-off),
/// fitted ([`bs_estimate`]).
const BS_STREAMK_FIXED_BLOCKS: f64 = 1.0;
/// µs the last arriver's reduction adds per contributor of a tile, after the tail, fitted
/// ([`bs_estimate`]).
const BS_STREAMK_REDUCE_US: f64 = 0.2;
/// Most contributors per tail tile a stream-K candidate may have ([`bs_streamk_candidates`]).
const BS_STREAMK_MAX_CONTRIBUTORS: u32 = 16;

/// µs a bs split-K launch above one tile per CU adds for the hand-off and the last arriver's
/// reduction, fitted ([`bs_estimate`]; with it 256×7168×2048 is not split: 2 splits are
/// modelled 3 % slower there, 20.5 against 19.9 µs on MI325X, 20.4 against 20.0 on MI300X).
const BS_SPLIT_HANDOFF_US: f64 = 4.0;

/// The time (µs) of the busiest CU running `head` workgroups of `head_blocks` blocks then
/// `tail` of `tail_blocks`, at most `slots` at once, each running at the per-block time of
/// the current number of workgroups on the CU ([`BS_BLOCK_US`]: processor sharing).
fn bs_cu_time(i: usize, head: u64, head_blocks: f64, tail: u64, tail_blocks: f64) -> f64 {
    bs_cu_time_at(&BS_BLOCK_US[i][..BS_SLOTS[i] as usize], head, head_blocks, tail, tail_blocks)
}

/// [`bs_cu_time`] for a kernel of `per_block.len()` workgroups per CU whose per-block µs with
/// `j + 1` workgroups on the CU is `per_block[j]`.
fn bs_cu_time_at(per_block: &[f64], head: u64, head_blocks: f64, tail: u64, tail_blocks: f64) -> f64 {
    let slots = per_block.len();
    let mut queue = std::iter::repeat_n(head_blocks, head as usize).chain(std::iter::repeat_n(tail_blocks, tail as usize));
    let mut active: Vec<f64> = queue.by_ref().take(slots).collect();
    let mut t = 0.0;
    while !active.is_empty() {
        let per_block = per_block[active.len().min(slots) - 1];
        let step = active.iter().copied().fold(f64::INFINITY, f64::min);
        t += step * per_block;
        active.retain_mut(|w| {
            *w -= step;
            *w > 1e-9
        });
        while active.len() < slots {
            match queue.next() {
                Some(w) => active.push(w),
                None => break,
            }
        }
    }
    t
}

/// Estimated µs (launch overhead excluded) of a bs candidate with `tiles` tiles of `nkb`
/// blocks on `cus` CUs: the busiest CU (`⌈wgs / CUs⌉` workgroups of each kind, in dispatch
/// order) under processor sharing, [`bs_cu_time`], at the data-parallel per-block costs
/// [`BS_BLOCK_US`]:
/// * data-parallel: `⌈tiles / CUs⌉` workgroups of `nkb` blocks;
/// * split-K (`s` splits): `⌈tiles·s / CUs⌉` workgroups of `⌈nkb/s⌉` blocks, plus
///   [`BS_SPLIT_HANDOFF_US`];
/// * stream-K (head `dp`, `g` workgroups over `T = tiles − dp` tiles): `⌈dp / CUs⌉` head
///   workgroups of `nkb` blocks, then `⌈g / CUs⌉` tail workgroups of `per = ⌈T·nkb / g⌉`
///   blocks — when tiles are split, `per · f + `[`BS_STREAMK_FIXED_BLOCKS`] with `f = 1` if
///   `g` is a multiple of `T` (every workgroup one aligned piece: the tail runs in lock-step
///   across tiles, like split-K) and [`BS_STREAMK_STAGGER_FACTOR`] otherwise — plus
///   [`BS_STREAMK_REDUCE_US`] per contributor of the most-shared tile (the last arriver's
///   reduction).
///
/// The constants were fitted (grid search on the summed squared log error) to forced runs
/// through the timing model: `FP8GEMM_PRESHUFFLED=1 FP8GEMM_FORCE_TILE=BMx128
/// FP8GEMM_FORCE_STREAMK=G/DP` (or `FP8GEMM_FORCE_SPLIT=S`) `fp8gemm profile --machine mi325x
/// --scope xcd`, *modelled* µs, launch overhead (2 µs) included in both columns. Only the
/// candidate family of [`bs_streamk_candidates`] / [`bs_split_candidates`] was fitted: heads of
/// 0 tiles (all-tail, staggered: 1280×2048×7168 g = 912 120.0 µs modelled vs 88.7 estimated),
/// more than 16 contributors per tile (640×2048×7168 head 304 + 304: 42.6 vs 36.6) and split-K
/// beyond one wave (1472×2048×7168 in 2 splits: 72.1 vs 63.5) were estimated too optimistically
/// and are not candidates. Median |log error| 0.036, worst 0.27:
///
/// | shape (m×n×k) | tile rows | schedule (head + g, or split) | modelled | estimate | ratio |
/// |---|---|---|---|---|---|
/// | 1280×2048×7168 | 32 | data-parallel | 67.8 | 68.1 | 1.00 |
/// | 1280×2048×7168 | 32 | 304 + 608 | 83.8 | 69.4 | 0.83 |
/// | 1280×2048×7168 | 32 | 304 + 912 | 76.5 | 74.2 | 0.97 |
/// | 1280×2048×7168 | 32 | 608 + 304 | 58.9 | 57.2 | 0.97 |
/// | 1280×2048×7168 | 64 | data-parallel | 88.7 | 89.4 | 1.01 |
/// | 1856×2048×7168 | 32 | data-parallel | 98.2 | 95.4 | 0.97 |
/// | 1856×2048×7168 | 32 | 304 + 912 | 126.1 | 113.9 | 0.90 |
/// | 1856×2048×7168 | 32 | 608 + 608 | 89.9 | 95.0 | 1.06 |
/// | 1856×2048×7168 | 32 | 608 + 912 | 84.8 | 93.9 | 1.11 |
/// | 1856×2048×7168 | 64 | data-parallel | 88.7 | 89.4 | 1.01 |
/// | 1856×2048×7168 | 64 | 304 + 304 | 78.5 | 89.5 | 1.14 |
/// | 1856×2048×7168 | 64 | 304 + 608 | 83.9 | 90.4 | 1.08 |
/// | 1856×2048×7168 | 64 | 304 + 912 | 87.5 | 92.0 | 1.05 |
/// | 1664×768×7168 | 32 | data-parallel | 50.4 | 51.0 | 1.01 |
/// | 1664×768×7168 | 64 | data-parallel | 61.8 | 61.8 | 1.00 |
/// | 2048×768×7168 | 32 | data-parallel | 50.3 | 51.0 | 1.01 |
/// | 2048×768×7168 | 32 | 304 + 304 | 41.1 | 41.1 | 1.00 |
/// | 2048×768×7168 | 32 | 304 + 608 | 41.2 | 41.7 | 1.01 |
/// | 2048×768×7168 | 32 | 304 + 912 | 42.9 | 43.1 | 1.00 |
/// | 2048×768×7168 | 64 | data-parallel | 61.8 | 61.8 | 1.00 |
/// | 1472×2048×7168 | 32 | data-parallel | 67.5 | 68.1 | 1.01 |
/// | 1472×2048×7168 | 32 | 304 + 608 | 91.2 | 83.6 | 0.92 |
/// | 1472×2048×7168 | 32 | 304 + 912 | 77.2 | 88.0 | 1.14 |
/// | 1472×2048×7168 | 32 | 608 + 304 | 60.4 | 65.3 | 1.08 |
/// | 1472×2048×7168 | 32 | 608 + 608 | 64.4 | 66.2 | 1.03 |
/// | 1472×2048×7168 | 32 | 608 + 912 | 62.8 | 66.9 | 1.06 |
/// | 1472×2048×7168 | 64 | data-parallel | 90.0 | 89.4 | 0.99 |
/// | 1472×2048×7168 | 64 | 304 + 304 | 70.2 | 74.3 | 1.06 |
/// | 1472×2048×7168 | 64 | 304 + 608 | 70.6 | 76.0 | 1.08 |
/// | 1472×2048×7168 | 64 | 304 + 912 | 71.6 | 77.9 | 1.09 |
/// | 256×7168×16384 | 32 | data-parallel | 106.0 | 114.0 | 1.08 |
/// | 256×7168×16384 | 32 | 304 + 304 | 136.4 | 108.1 | 0.79 |
/// | 256×7168×16384 | 32 | 304 + 608 | 137.7 | 104.9 | 0.76 |
/// | 256×7168×16384 | 32 | 304 + 912 | 124.2 | 107.9 | 0.87 |
/// | 256×7168×16384 | 64 | data-parallel | 130.8 | 138.7 | 1.06 |
/// | 1856×2048×7168 | 32 | 912 + 32 | 83.8 | 82.8 | 0.99 |
/// | 1856×2048×7168 | 32 | 912 + 64 | 77.0 | 76.4 | 0.99 |
/// | 1856×2048×7168 | 32 | 912 + 128 | 74.3 | 73.8 | 0.99 |
/// | 1856×2048×7168 | 32 | 912 + 224 | 74.9 | 73.5 | 0.98 |
/// | 1280×2048×7168 | 32 | 608 + 64 | 58.2 | 60.4 | 1.04 |
/// | 1280×2048×7168 | 32 | 608 + 128 | 54.9 | 56.6 | 1.03 |
/// | 1280×2048×7168 | 32 | 608 + 192 | 54.5 | 56.0 | 1.03 |
/// | 256×7168×16384 | 32 | split 2 | 77.4 | 81.5 | 1.05 |
/// | 256×7168×16384 | 32 | split 3 | 88.5 | 94.4 | 1.07 |
/// | 1664×768×7168 | 32 | split 2 | 40.7 | 39.0 | 0.96 |
/// | 2048×768×7168 | 32 | split 2 | 41.4 | 39.0 | 0.94 |
/// | 1280×2048×7168 | 32 | split 2 | 61.4 | 63.5 | 1.04 |
/// | 1472×2048×7168 | 32 | split 2 | 72.1 | 63.5 | 0.88 |
/// | 1856×2048×7168 | 64 | split 2 | 90.7 | 93.4 | 1.03 |
/// | 256×7168×16384 | 64 | split 2 | 105.0 | 105.8 | 1.01 |
/// | 256×7168×16384 | 64 | split 4 | 87.7 | 90.1 | 1.03 |
/// | 1472×2048×7168 | 32 | 608 + 256 | 57.9 | 60.4 | 1.04 |
/// | 1472×2048×7168 | 32 | 608 + 512 | 59.6 | 61.1 | 1.03 |
/// | 1664×768×7168 | 32 | 304 + 32 | 38.1 | 36.1 | 0.95 |
/// | 1664×768×7168 | 32 | 304 + 64 | 38.3 | 34.2 | 0.89 |
/// | 2048×768×7168 | 32 | 304 + 160 | 38.9 | 41.1 | 1.06 |
/// | 640×2048×7168 | 32 | data-parallel | 50.2 | 51.0 | 1.01 |
/// | 640×2048×7168 | 32 | 304 + 64 | 38.2 | 36.1 | 0.94 |
/// | 1856×2048×7168 | 64 | 304 + 320 | 95.4 | 92.1 | 0.97 |
/// | 4096×768×7168 | 32 | data-parallel | 67.2 | 68.1 | 1.01 |
/// | 4096×768×7168 | 32 | 608 + 304 | 63.7 | 68.4 | 1.07 |
/// | 4096×768×7168 | 32 | 608 + 320 | 71.0 | 69.7 | 0.98 |
/// | 4096×768×7168 | 32 | 608 + 608 | 67.2 | 69.1 | 1.03 |
/// | 8192×2048×7168 | 32 | data-parallel | 303.4 | 315.3 | 1.04 |
/// | 8192×2048×7168 | 32 | 3648 + 896 | 299.1 | 301.1 | 1.01 |
/// | 8192×2048×7168 | 32 | 3648 + 608 | 316.8 | 333.9 | 1.05 |
///
/// Where the estimate cannot be trusted: stream-K on long-K, wide-N shapes (256×7168×16384:
/// every head-304 schedule estimated 0.76–0.87× of its modelled time — there split-K, estimated
/// within 5 %, wins anyway), and staggered tails running beside a head of one workgroup per CU
/// (1280×2048×7168 head 304 + 608: 0.83×). The choice therefore demands a gain of
/// [`BS_STREAMK_MIN_GAIN`] over the data-parallel estimate. (Split-K below one tile per CU
/// keeps its own estimate, [`bs_split_estimate`].)
pub(super) fn bs_estimate(c: &BsCandidate, tiles: u32, nkb: u32, cus: u32) -> f64 {
    let i = c.tile.min(1);
    let (cus64, nkb64) = (u64::from(cus.max(1)), u64::from(nkb));
    match c.schedule {
        BsSchedule::PipeStreamK { dp, g } => bs_pipe_streamk_estimate(i, tiles, nkb, cus, dp, g),
        BsSchedule::DataParallel => bs_cu_time(i, u64::from(tiles).div_ceil(cus64), f64::from(nkb), 0, 0.0),
        BsSchedule::Split(s) => {
            let blocks = f64::from(nkb.div_ceil(s.max(1)));
            bs_cu_time(i, (u64::from(tiles) * u64::from(s)).div_ceil(cus64), blocks, 0, 0.0) + BS_SPLIT_HANDOFF_US
        }
        BsSchedule::StreamK { dp, g } => {
            let (dp, g) = (u64::from(dp), u64::from(g).max(1));
            let iters = (u64::from(tiles) - dp.min(u64::from(tiles))) * nkb64;
            let per = iters.div_ceil(g);
            let split = !(iters.is_multiple_of(g) && per.is_multiple_of(nkb64.max(1)));
            let tail_tiles = iters / nkb64.max(1);
            let (tail_blocks, reduce) = if split {
                // Aligned pieces (every tail tile split in g / T equal parts, each workgroup
                // one piece) run in lock-step across tiles like split-K; otherwise staggered.
                let factor = if g.is_multiple_of(tail_tiles.max(1)) { 1.0 } else { BS_STREAMK_STAGGER_FACTOR };
                let most = (nkb64.div_ceil((iters / g).max(1)) + 1).min(g);
                (per as f64 * factor + BS_STREAMK_FIXED_BLOCKS, BS_STREAMK_REDUCE_US * most as f64)
            } else {
                (per as f64, 0.0)
            };
            bs_cu_time(i, dp.div_ceil(cus64), f64::from(nkb), g.div_ceil(cus64), tail_blocks) + reduce
        }
    }
}

/// The least relative gain (estimated) for which a pipelined stream-K candidate
/// ([`bs_pipe_streamk_candidates`]) replaces the data-parallel baseline. Against the 48-row
/// pipelined kernel both come from the same estimate (`bs_pipe48_dp_estimate`), so whole tiles
/// on either kernel tie and never switch; against the 64/80/96-row ones (`bs_pipe_estimate`,
/// another fit) the stream-K estimate tends high (pessimistic by 0–6 % on the several-round
/// shapes it was checked on). Every shape of the peers and DeepSeek sets whose choice a margin
/// between 0 and 5 % decides won in the timing model (MI325X, µs, data-parallel → pipelined
/// stream-K): 4096×768×7168 59.4 → 56.2 (304 + 160), and × 2048 × 7168: 1280 50.9 → 48.4 (48
/// rows, 304 + 256), 1344 51.1 → 49.0 (48, 304 + 288), 1408 51.3 → 49.9 (304 + 192), 1472 51.6
/// → 50.1 (304 + 256), 1536 59.4 → 56.4, 1600 59.5 → 56.4, 1664 59.8 → 56.3, 1728 59.8 → 56.3,
/// 1792 60.2 → 56.8; at 5 % none of them switched, at 0 % and 1 % all of them do (the same
/// choices). 1 % keeps a tie from switching on rounding.
const BS_PIPE_SK_MIN_GAIN: f64 = 0.01;

/// Modelled µs per 128-K block of a pipelined bs stream-K workgroup ([`STREAMK_BS_PIPE_TILES`])
/// with 1 or 2 of them on a CU (48 rows, 64 rows), fitted ([`bs_pipe_streamk_estimate`]).
pub(super) const BS_PIPE_SK_BLOCK_US: [[f64; 2]; 2] = [[0.51, 0.90], [0.58, 1.05]];
/// Blocks' worth of work every pipelined stream-K workgroup adds, whole tile or piece (its
/// prologue before the first MFMA and its epilogue, exposed at these workgroup counts), fitted.
pub(super) const BS_PIPE_SK_WG_BLOCKS: f64 = 8.0;
/// Blocks' worth of work a split (partial) piece adds on top (partial stores, release,
/// arrival, the reduction of the last arriver), fitted.
pub(super) const BS_PIPE_SK_FIXED_BLOCKS: f64 = 4.0;

/// Estimated µs (launch overhead excluded) of the data-parallel pipelined 48-row kernel
/// (`fp8_gemm_nt_bs_pipe_bm48_bn128`, two per CU) as the stream-K candidates' baseline: the
/// 48-row pipelined stream-K kernel's estimate with whole tiles only ([`bs_pipe_streamk_estimate`]
/// with `dp = 0`, `g = tiles`: the same tile at the same occupancy; whole tiles cost the same on
/// both kernels, modelled MI325X 640×2048×7168 35.3 data-parallel, 35.1 stream-K `0 + 224`).
/// `bs_pipe_rule`'s per-round figure for it (`BS_PIPE48_ROUNDS_US`) was fitted on 3 rounds and
/// is 16 % below the modelled time at 14336×768×7168 (148.2 against 174.9 µs, 3 rounds of
/// 1794 tiles), which hid a 13 % stream-K gain there; this estimate gives 174.8. Only the
/// pipelined stream-K candidates are weighed against it (`get_bs_config_for_workspace`).
fn bs_pipe48_dp_estimate(desc: &GemmDesc, nkb: u32, cus: u32) -> f64 {
    let tiles = STREAMK_BS_PIPE_TILES[0].grid(desc.m, desc.n);
    bs_pipe_streamk_estimate(0, tiles, nkb, cus, 0, tiles)
}

/// Estimated µs (launch overhead excluded) of the pipelined bs stream-K kernel `p` (index into
/// [`STREAMK_BS_PIPE_TILES`]) with `tiles` tiles of `nkb` blocks, head `dp`, `g` tail
/// workgroups on `cus` CUs, for the aligned candidates of [`bs_pipe_streamk_candidates`]: the
/// busiest CU under processor sharing ([`bs_cu_time_at`]; `⌈dp / CUs⌉` head workgroups of
/// `nkb` blocks, then `⌈g / CUs⌉` tail workgroups of `per = ⌈T·nkb / g⌉` blocks) at the
/// per-block costs [`BS_PIPE_SK_BLOCK_US`], every workgroup `+` [`BS_PIPE_SK_WG_BLOCKS`],
/// a split tail piece `+` [`BS_PIPE_SK_FIXED_BLOCKS`]. A staggered tail (not a candidate) is
/// estimated as if aligned.
///
/// Fitted (grid search on the summed squared log error; all 96 runs, launch overhead of 2 µs
/// included in both columns) to forced timing-model runs of the candidate family:
/// `FP8GEMM_PRESHUFFLED=1 FP8GEMM_FORCE_TILE=BMx128 FP8GEMM_FORCE_STREAMK=G/DP fp8gemm profile
/// --scope xcd`, MI325X for the peers' shapes and MI300X (304 CUs both) for the DeepSeek ones,
/// *modelled* µs. Median |log error| 0.017, worst 0.090; the estimate is at most 8 % below the
/// modelled time (the direction that would choose a loser). The fit's shapes were every other
/// peer shape (below) and 4 DeepSeek shapes; the other peer shapes and DeepSeek shapes were
/// held out (the `compare` tables in `fp8gemm_device::streamk`).
///
/// | shape (m×n×k) | tile rows | head + g | modelled | estimate | ratio |
/// |---|---|---|---|---|---|
/// | 1664×768×7168 | 48 | 0 + 210 | 35.2 | 34.6 | 0.98 |
/// | 1664×768×7168 | 48 | 0 + 420 | 38.9 | 38.0 | 0.98 |
/// | 1664×768×7168 | 64 | 0 + 156 | 39.4 | 39.1 | 0.99 |
/// | 1664×768×7168 | 64 | 0 + 312 | 40.2 | 44.0 | 1.09 |
/// | 1792×768×7168 | 48 | 0 + 228 | 35.2 | 34.6 | 0.98 |
/// | 1792×768×7168 | 48 | 0 + 456 | 38.8 | 38.0 | 0.98 |
/// | 1792×768×7168 | 64 | 0 + 168 | 39.9 | 39.1 | 0.98 |
/// | 1792×768×7168 | 64 | 0 + 336 | 44.2 | 44.0 | 0.99 |
/// | 1920×768×7168 | 48 | 0 + 240 | 35.2 | 34.6 | 0.98 |
/// | 1920×768×7168 | 48 | 0 + 480 | 38.8 | 38.0 | 0.98 |
/// | 1920×768×7168 | 64 | 0 + 180 | 39.4 | 39.1 | 0.99 |
/// | 1920×768×7168 | 64 | 0 + 360 | 44.1 | 44.0 | 1.00 |
/// | 2048×768×7168 | 48 | 0 + 258 | 35.1 | 34.6 | 0.99 |
/// | 2048×768×7168 | 48 | 0 + 516 | 38.9 | 38.0 | 0.98 |
/// | 2048×768×7168 | 64 | 0 + 192 | 39.4 | 39.1 | 0.99 |
/// | 2048×768×7168 | 64 | 0 + 384 | 44.3 | 44.0 | 0.99 |
/// | 4096×768×7168 | 48 | 0 + 516 | 60.0 | 59.6 | 0.99 |
/// | 4096×768×7168 | 48 | 304 + 212 | 59.7 | 59.6 | 1.00 |
/// | 4096×768×7168 | 48 | 304 + 424 | 65.5 | 67.8 | 1.03 |
/// | 4096×768×7168 | 64 | 0 + 384 | 70.0 | 69.2 | 0.99 |
/// | 4096×768×7168 | 64 | 304 + 80 | 69.3 | 69.2 | 1.00 |
/// | 4096×768×7168 | 64 | 304 + 160 | 56.2 | 57.9 | 1.03 |
/// | 4096×768×7168 | 64 | 304 + 320 | 59.8 | 63.6 | 1.06 |
/// | 6144×768×7168 | 48 | 608 + 160 | 89.7 | 92.2 | 1.03 |
/// | 6144×768×7168 | 48 | 608 + 320 | 95.8 | 95.6 | 1.00 |
/// | 6144×768×7168 | 64 | 0 + 576 | 69.7 | 69.2 | 0.99 |
/// | 6144×768×7168 | 64 | 304 + 272 | 69.5 | 69.2 | 1.00 |
/// | 6144×768×7168 | 64 | 304 + 544 | 76.5 | 78.5 | 1.03 |
/// | 640×2048×7168 | 48 | 0 + 224 | 35.1 | 34.6 | 0.99 |
/// | 640×2048×7168 | 64 | 0 + 160 | 39.4 | 39.1 | 0.99 |
/// | 768×2048×7168 | 48 | 0 + 256 | 35.2 | 34.6 | 0.99 |
/// | 768×2048×7168 | 64 | 0 + 192 | 39.4 | 39.1 | 0.99 |
/// | 896×2048×7168 | 48 | 0 + 304 | 35.9 | 34.6 | 0.97 |
/// | 896×2048×7168 | 48 | 0 + 608 | 39.3 | 38.0 | 0.97 |
/// | 896×2048×7168 | 64 | 0 + 224 | 39.4 | 39.1 | 0.99 |
/// | 1024×2048×7168 | 48 | 0 + 352 | 60.4 | 59.6 | 0.99 |
/// | 1024×2048×7168 | 48 | 304 + 48 | 60.6 | 59.6 | 0.98 |
/// | 1024×2048×7168 | 48 | 304 + 96 | 48.1 | 50.2 | 1.04 |
/// | 1024×2048×7168 | 48 | 304 + 192 | 43.8 | 44.8 | 1.02 |
/// | 1024×2048×7168 | 64 | 0 + 256 | 39.4 | 39.1 | 0.99 |
/// | 1216×2048×7168 | 48 | 0 + 416 | 60.2 | 59.6 | 0.99 |
/// | 1216×2048×7168 | 48 | 304 + 112 | 60.3 | 59.6 | 0.99 |
/// | 1216×2048×7168 | 48 | 304 + 224 | 48.2 | 50.2 | 1.04 |
/// | 1216×2048×7168 | 48 | 304 + 448 | 52.5 | 54.9 | 1.05 |
/// | 1216×2048×7168 | 64 | 0 + 304 | 40.0 | 39.1 | 0.98 |
/// | 1216×2048×7168 | 64 | 0 + 608 | 45.2 | 44.0 | 0.97 |
/// | 1472×2048×7168 | 48 | 0 + 496 | 60.4 | 59.6 | 0.99 |
/// | 1472×2048×7168 | 48 | 304 + 192 | 60.1 | 59.6 | 0.99 |
/// | 1472×2048×7168 | 48 | 304 + 384 | 64.4 | 67.8 | 1.05 |
/// | 1472×2048×7168 | 64 | 0 + 368 | 70.2 | 69.2 | 0.99 |
/// | 1472×2048×7168 | 64 | 304 + 64 | 70.2 | 69.2 | 0.99 |
/// | 1472×2048×7168 | 64 | 304 + 128 | 56.3 | 57.9 | 1.03 |
/// | 1472×2048×7168 | 64 | 304 + 256 | 50.1 | 51.3 | 1.03 |
/// | 1728×2048×7168 | 48 | 0 + 576 | 60.3 | 59.6 | 0.99 |
/// | 1728×2048×7168 | 48 | 304 + 272 | 60.0 | 59.6 | 0.99 |
/// | 1728×2048×7168 | 48 | 304 + 544 | 68.0 | 67.8 | 1.00 |
/// | 1728×2048×7168 | 64 | 0 + 432 | 69.2 | 69.2 | 1.00 |
/// | 1728×2048×7168 | 64 | 304 + 128 | 69.0 | 69.2 | 1.00 |
/// | 1728×2048×7168 | 64 | 304 + 256 | 56.3 | 57.9 | 1.03 |
/// | 1728×2048×7168 | 64 | 304 + 512 | 65.1 | 63.6 | 0.98 |
/// | 1856×2048×7168 | 48 | 608 + 16 | 90.0 | 92.2 | 1.02 |
/// | 1856×2048×7168 | 48 | 608 + 32 | 78.0 | 80.0 | 1.03 |
/// | 1856×2048×7168 | 48 | 608 + 64 | 72.0 | 72.9 | 1.01 |
/// | 1856×2048×7168 | 64 | 0 + 464 | 69.4 | 69.2 | 1.00 |
/// | 1856×2048×7168 | 64 | 304 + 160 | 69.0 | 69.2 | 1.00 |
/// | 1856×2048×7168 | 64 | 304 + 320 | 76.6 | 78.5 | 1.02 |
/// | 1984×2048×7168 | 48 | 608 + 64 | 89.3 | 92.2 | 1.03 |
/// | 1984×2048×7168 | 48 | 608 + 128 | 77.9 | 80.0 | 1.03 |
/// | 1984×2048×7168 | 48 | 608 + 256 | 72.7 | 72.9 | 1.00 |
/// | 1984×2048×7168 | 64 | 0 + 496 | 69.5 | 69.2 | 1.00 |
/// | 1984×2048×7168 | 64 | 304 + 192 | 69.0 | 69.2 | 1.00 |
/// | 1984×2048×7168 | 64 | 304 + 384 | 76.6 | 78.5 | 1.02 |
/// | 4096×2048×7168 | 48 | 1216 + 160 | 145.5 | 149.8 | 1.03 |
/// | 4096×2048×7168 | 48 | 1216 + 320 | 151.0 | 153.2 | 1.01 |
/// | 4096×2048×7168 | 64 | 608 + 416 | 132.4 | 136.4 | 1.03 |
/// | 4096×2048×7168 | 64 | 912 + 112 | 132.4 | 136.4 | 1.03 |
/// | 4096×2048×7168 | 64 | 912 + 224 | 119.9 | 125.1 | 1.04 |
/// | 4096×2048×7168 | 64 | 912 + 448 | 123.0 | 130.8 | 1.06 |
/// | 128×24576×1536 | 48 | 0 + 576 | 20.1 | 20.0 | 1.00 |
/// | 128×24576×1536 | 48 | 304 + 272 | 20.1 | 20.0 | 1.00 |
/// | 128×24576×1536 | 48 | 304 + 544 | 27.9 | 28.2 | 1.01 |
/// | 128×24576×1536 | 64 | 0 + 384 | 24.0 | 23.0 | 0.96 |
/// | 128×24576×1536 | 64 | 304 + 80 | 23.8 | 23.0 | 0.97 |
/// | 128×24576×1536 | 64 | 304 + 160 | 24.0 | 22.1 | 0.92 |
/// | 128×24576×1536 | 64 | 304 + 320 | 26.5 | 28.8 | 1.09 |
/// | 4096×2112×7168 | 48 | 1216 + 246 | 145.2 | 149.8 | 1.03 |
/// | 4096×2112×7168 | 48 | 1216 + 492 | 151.2 | 153.2 | 1.01 |
/// | 4096×2112×7168 | 64 | 608 + 480 | 132.3 | 136.4 | 1.03 |
/// | 4096×2112×7168 | 64 | 912 + 176 | 132.5 | 136.4 | 1.03 |
/// | 4096×2112×7168 | 64 | 912 + 352 | 138.5 | 145.7 | 1.05 |
/// | 4096×7168×2048 | 48 | 4256 + 560 | 168.6 | 174.8 | 1.04 |
/// | 4096×7168×2048 | 48 | 4560 + 256 | 168.6 | 174.8 | 1.04 |
/// | 4096×7168×2048 | 48 | 4560 + 512 | 174.8 | 183.0 | 1.05 |
/// | 6144×2048×7168 | 48 | 1824 + 224 | 201.8 | 207.4 | 1.03 |
/// | 6144×2048×7168 | 48 | 1824 + 448 | 208.5 | 210.8 | 1.01 |
fn bs_pipe_streamk_estimate(p: usize, tiles: u32, nkb: u32, cus: u32, dp: u32, g: u32) -> f64 {
    let (cus64, nkb64) = (u64::from(cus.max(1)), u64::from(nkb).max(1));
    let (dp, g) = (u64::from(dp), u64::from(g).max(1));
    let iters = (u64::from(tiles) - dp.min(u64::from(tiles))) * nkb64;
    let per = iters.div_ceil(g);
    let split = !(iters.is_multiple_of(g) && per.is_multiple_of(nkb64));
    let tail_blocks = per as f64 + BS_PIPE_SK_WG_BLOCKS + if split { BS_PIPE_SK_FIXED_BLOCKS } else { 0.0 };
    let head_blocks = f64::from(nkb) + BS_PIPE_SK_WG_BLOCKS;
    bs_cu_time_at(&BS_PIPE_SK_BLOCK_US[p.min(1)], dp.div_ceil(cus64), head_blocks, g.div_ceil(cus64), tail_blocks)
}

/// The launch spec of a dense bs stream-K config's kernel (B pre-shuffled).
pub fn dense_streamk_bs_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<DenseStreamKArgs>> {
    spec_named(
        [FP8_GEMM_NT_STREAMK_BS_BM32_BN128, FP8_GEMM_NT_STREAMK_BS_BM64_BN128, FP8_GEMM_NT_STREAMK_BS_PIPE_BM48_BN128, FP8_GEMM_NT_STREAMK_BS_PIPE_BM64_BN128],
        config,
    )
}

/// The launch spec of a dense bs config's kernel (B pre-shuffled).
pub fn dense_bs_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<DenseGemmArgs>> {
    spec_named(
        [
            FP8_GEMM_NT_BS_BM32_BN128,
            FP8_GEMM_NT_BS_BM64_BN128,
            FP8_GEMM_NT_BS_PIPE_BM48_BN128,
            FP8_GEMM_NT_BS_PIPE_BM64_BN128,
            FP8_GEMM_NT_BS_PIPE_BM80_BN128,
            FP8_GEMM_NT_BS_PIPE_BM96_BN128,
            FP8_GEMM_NT_BS_BM128_BN128,
            FP8_GEMM_NT_BS_PIPE_BM128_BN128,
            FP8_GEMM_NT_BS_PIPE_BM32_BN64,
            FP8_GEMM_NT_BS_PIPE_B1_BM32_BN64,
        ],
        config,
    )
}

/// The launch spec of a dense bs split-K config's kernel (B pre-shuffled).
pub fn dense_splitk_bs_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<DenseSplitKArgs>> {
    spec_named([FP8_GEMM_NT_SPLITK_BS_BM32_BN128, FP8_GEMM_NT_SPLITK_BS_BM64_BN128, FP8_GEMM_NT_SPLITK_BS_BM128_BN128, FP8_GEMM_NT_SPLITK_BS_BM32_BN64], config)
}
