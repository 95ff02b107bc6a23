//! The m-grouped bs choice (contiguous and masked, B pre-shuffled): the tile rule, the masked
//! split-K estimate and the kernel specs ([`get_grouped_bs_config_for_workspace`]).

use super::*;

/// How much more work per cycle a CU does with 64-row bs tiles than with 32-row ones once at
/// least two 64-row workgroups share it (modelled, MI300X: dense 4096×7168×2048, 11.8 tiles per
/// CU, 688 vs 637 TFLOPS; [`get_grouped_bs_config`]).
pub(super) const BS_BM64_GAIN: f64 = 1.08;

/// Chooses the m-grouped bs kernel (B pre-shuffled straight to registers,
/// [`fp8gemm_device::grouped`] on [`fp8gemm_device::mainloop_bs`]) of a contiguous or masked
/// problem under `overrides`: the tile forced with [`Overrides::tile`] (32x128, 64x128 or
/// 128x128, and for masked 80x128, the pipelined kernel of [`fp8gemm_device::grouped_pipe`];
/// a forced split count other than 1 is rejected, these kernels do not split K), else
/// the 32- or 64-row tile by the rows of work on the busiest CU: with `w` working tiles of
/// height `bm` (counted as for the logical-B kernels: contiguous without the expected
/// all-padding tiles, masked with `expected_m` rows per group; see the [`config`](crate::config) module docs),
/// a CU gets at most `⌈w / CUs⌉` of them, i.e. `bm · ⌈w / CUs⌉` rows. The 64-row tile wins
/// when its rows are fewer, or fewer than `BS_BM64_GAIN` = 1.08 times the 32-row tile's while each
/// CU gets at least two 64-row workgroups (which then overlap; alone, one 64-row workgroup per
/// CU is latency-bound and two 32-row ones beat it). This agrees with every modelled point we
/// have (MI300X): the grouped table in [`fp8gemm_device::grouped`] (64 rows everywhere there,
/// e.g. masked 1×1024 over 4096×7168 673 vs 606 TFLOPS) and [`get_bs_config`]'s dense points
/// (4096×2048×7168 → 32 rows, 1024×2048×7168 → 32, 4096×2112×7168 and 4096×7168×2048 → 64).
/// The 128 × 128 tile (1 wave per SIMD) is never chosen: contiguous 4×8192 over 4096×7168
/// runs 890 TFLOPS modelled with 64 × 128 tiles and 710 with 128 × 128. A 64-row tile (chosen
/// or forced) then runs on the pipelined loop from [`GROUPED_BS_PIPE_MIN_BLOCKS`] K blocks on
/// (`grouped_bs_pipe_rule`, its modelled table there).
pub fn get_grouped_bs_config(desc: &GemmDesc, overrides: &Overrides) -> Result<GemmConfig, ConfigError> {
    get_grouped_bs_config_for_workspace(desc, overrides, u64::MAX).map(|(c, _)| c)
}

/// Split counts the masked split-K choice considers (besides 1): the counts of the forced-split
/// sweep it was fitted on ([`get_grouped_bs_config_for_workspace`]).
const MASKED_SPLITS: [u32; 5] = [2, 3, 4, 6, 8];
/// HBM bandwidth (TB/s) of the masked split-K choice's memory floor (fitted; the timing model
/// shows the memory-bound masked launches at 3.1–3.9 TB/s on MI300X).
const MASKED_SPLIT_HBM_TBPS: f64 = 3.5;
/// Least estimated gain (relative) for which the masked choice takes more splits.
const MASKED_SPLIT_MIN_GAIN: f64 = 0.05;

/// Working tiles of a masked launch for the split choice: `G · ⌈rows/BM⌉ · ⌈n/128⌉` with
/// `rows = min(expected_m + BM/2, m_max)` (real counts scatter around `expected_m`, and a count
/// just past a multiple of `BM` adds a whole tile: `BM/2` is that tile's average share).
fn masked_split_work(desc: &GemmDesc, bm: u32) -> u64 {
    let rows = (desc.expected_m.clamp(1, desc.m.max(1)) + bm / 2).min(desc.m.max(1));
    u64::from(desc.groups) * u64::from(rows.div_ceil(bm)) * u64::from(desc.n.div_ceil(128))
}

/// [`get_grouped_bs_config`] for a launch with `available` FP32 elements of workspace, and
/// **split-K for the masked layout** (the `m_grouped_fp8_gemm_nt_masked_splitk_bs_*` kernels,
/// [`fp8gemm_device::grouped`]; contiguous launches never split).
///
/// The tile is chosen as [`get_grouped_bs_config`] says. Masked rows per group are known only
/// on the device, so the split count comes from `expected_m`: with `w` working tiles
/// (`G · ⌈min(expected_m + BM/2, m_max)/BM⌉ · ⌈n/128⌉`, see `masked_split_work`) below 1.5 × the
/// CU count (and at most `SPLITK_MAX_TILES` tiles in the whole grid, `G · ⌈m_max/BM⌉ · ⌈n/128⌉`),
/// the count `s ∈ {1, 2, 3, 4, 6, 8}`, `s ≤ k/128`, of least
/// `max(bs_split_estimate(w, k/128, s, CUs), G·|B| / 3.5 TB/s)` (the dense bs split estimate,
/// private, floored by streaming every group's B once; a larger count must gain ≥ 5 %)
/// among those whose workspace fits `available` (a smaller choice than the unlimited
/// one is reported as a [`WorkspaceLimit`]); the 128-row tile has no split kernel.
///
/// Fitted on a forced-split sweep through the timing model (MI300X, `fp8gemm profile --layout
/// masked --scope full`, masked G×m over (4096, 7168) and (7168, 2048), G×m ∈ {1×64, 2×64,
/// 4×32, 8×16, 2×128, 4×64}, s ∈ {1, 2, 3, 4, 6, 8}): the summed log ratio of the chosen
/// split's time to the best one's is 0.23 (plain `bs_split_estimate` over `G·⌈expected_m/BM⌉`
/// tiles below the CU count: 1.16; never splitting: 2.26). Twelve points, five choices
/// (the `BM/2`, the floor, the 1.5, the 5 %, the candidate set): treat it as a heuristic; the
/// table is in [`fp8gemm_device::grouped`]. The
/// workspace covers every tile of the grid (any group may hold up to `m_max` rows).
/// [`Overrides::split`] forces the count (`≤ min(k/128, MAX_SPLITS)`, a
/// 32- or 64-row tile, never reduced for lack of workspace; other than 1 for contiguous is an
/// error); a tile forced without a split count runs unsplit.
pub fn get_grouped_bs_config_for_workspace(
    desc: &GemmDesc,
    overrides: &Overrides,
    available: u64,
) -> Result<(GemmConfig, Option<WorkspaceLimit>), ConfigError> {
    validate(desc)?;
    let tiles: &[tile::BsTile] = match desc.kind {
        GemmKind::Dense => return Err(ConfigError::NoKernel { kind: desc.kind, arch: desc.arch }),
        GemmKind::MGroupedContiguous => &tile::CONTIGUOUS_BS_TILES,
        GemmKind::MGroupedMasked => &tile::MASKED_BS_TILES,
    };
    let forced_s = overrides.split;
    if forced_s == Some(0) {
        return Err(ConfigError::ForcedSplit { splits: "0".into(), expected: "at least 1".into() });
    }
    if let (GemmKind::MGroupedContiguous, Some(s)) = (desc.kind, forced_s.filter(|&s| s != 1)) {
        return Err(ConfigError::ForcedSplit {
            splits: s.to_string(),
            expected: format!("1 (no split-K kernel for the {} layout with pre-shuffled B)", desc.kind),
        });
    }
    // The device's own CU count (GemmDesc::with_cus), not the architecture's.
    let spec = ArchSpec { cus: desc.cus.max(1), ..arch_spec(desc.arch) };
    let find = |bm: u32| tiles.iter().position(|t| (t.block_m, t.block_n) == (bm, 128));
    let forced_t = overrides.tile;
    let (i, why) = match forced_t {
        Some((bm, bn)) => {
            let available = match desc.kind {
                GemmKind::MGroupedMasked => "32x128, 64x128, 128x128, 32x64 and 80x128 (m-grouped masked, pre-shuffled B)",
                _ => "32x128, 64x128, 128x128 (m-grouped contiguous, pre-shuffled B)",
            };
            // 80 rows exist only on the pipelined loop (masked): its index past `tiles`.
            let i = tiles
                .iter()
                .chain(grouped_bs_pipe_tiles(desc.kind))
                .position(|t| (t.block_m, t.block_n) == (bm, bn))
                .ok_or_else(|| ConfigError::ForcedTile { tile: format!("{bm}x{bn}"), available })?;
            (i, Choice::Forced)
        }
        None => {
            let cus = u64::from(spec.cus);
            let (_, work32) = tile_grid_and_work(32, 128, 1, desc)?;
            let (_, work64) = tile_grid_and_work(64, 128, 1, desc)?;
            let (per_cu32, per_cu64) = (work32.div_ceil(cus), work64.div_ceil(cus));
            let (rows32, rows64) = (32 * per_cu32, 64 * per_cu64);
            // The 64-row tile does more work per cycle once its workgroups overlap on a CU.
            let gain = if per_cu64 >= 2 { BS_BM64_GAIN } else { 1.0 };
            let bm = if (rows64 as f64) < rows32 as f64 * gain || rows64 < rows32 { 64 } else { 32 };
            let i = find(bm).ok_or(ConfigError::NoKernel { kind: desc.kind, arch: desc.arch })?;
            (i, Choice::GroupedBsRule(rows32, rows64))
        }
    };
    let t = tiles.get(i).copied().unwrap_or_else(|| grouped_bs_pipe_tiles(desc.kind)[i - tiles.len()]);
    let t = grouped_bs_pipe_rule(desc, t).unwrap_or(t);
    // Masked decode: the narrow pipelined tile, unsplit, where `masked_narrow_rule` says.
    let narrow = match (desc.kind, forced_t, forced_s) {
        (GemmKind::MGroupedMasked, None, None) if t.block_m == 32 => masked_narrow_rule(desc, spec.cus, spec.lds_per_cu),
        _ => None,
    };
    let (t, why) = match narrow {
        Some(w) => (fp8gemm_device::grouped_pipe::MASKED_BS_PIPE_TILES[0], Choice::MaskedNarrow(w)),
        None => (t, why),
    };
    let (grid, _) = tile_grid_and_work(t.block_m, t.block_n, 1, desc)?;
    // The split kernel of this tile (masked 32- and 64-row tiles only).
    let split_kernel = if desc.kind == GemmKind::MGroupedMasked {
        tile::MASKED_SPLITK_BS_TILES.iter().find(|s| (s.block_m, s.block_n) == (t.block_m, t.block_n))
    } else {
        None
    };
    let make = |splits: u32| -> Result<GemmConfig, ConfigError> {
        let g = u64::from(grid) * u64::from(splits);
        let g = u32::try_from(g).map_err(|_| ConfigError::TooLarge { tensor: "grid", bytes: g, limit: u64::from(u32::MAX) })?;
        let kernel = match split_kernel {
            Some(s) if splits > 1 => s.name,
            _ => t.name,
        };
        Ok(GemmConfig {
            block_m: t.block_m,
            block_n: t.block_n,
            block_k: tile::SCALE_BLOCK_K,
            workgroup_size: tile::THREADS,
            lds_bytes: t.lds_bytes(),
            kernel,
            grid: g,
            splits,
            stream_k: None,
            remap: Remap::Xcd { xcds: spec.xcds },
            arch: desc.arch,
        })
    };
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let max_splits = nkb.min(MAX_SPLITS);
    let mut limited = None;
    let (config, why) = match forced_s {
        Some(s) if s > 1 => {
            if split_kernel.is_none() {
                let expected = format!("1 (no masked split-K kernel for the {}x{} tile; 32x128 and 64x128 have one)", t.block_m, t.block_n);
                return Err(ConfigError::ForcedSplit { splits: s.to_string(), expected });
            }
            if s > max_splits {
                return Err(ConfigError::ForcedSplit {
                    splits: s.to_string(),
                    expected: format!("at most {max_splits} (k/128 = {nkb} blocks, MAX_SPLITS = {MAX_SPLITS})"),
                });
            }
            if grid > tile::SPLITK_MAX_TILES {
                let expected = format!("1 ({grid} output tiles of {}x{}, more than {})", t.block_m, t.block_n, tile::SPLITK_MAX_TILES);
                return Err(ConfigError::ForcedSplit { splits: s.to_string(), expected });
            }
            (make(s)?, Choice::Forced)
        }
        Some(_) => (make(1)?, Choice::Forced),
        // A forced tile without a forced split does not split (as the dense bs choice).
        None if forced_t.is_none()
            && narrow.is_none()
            && split_kernel.is_some()
            && 2 * masked_split_work(desc, t.block_m) < 3 * u64::from(spec.cus)
            && grid <= tile::SPLITK_MAX_TILES =>
        {
            let w = masked_split_work(desc, t.block_m);
            // `w` < 1.5 · CUs fits in u32.
            let w32 = w as u32;
            // The launch cannot beat streaming every group's B once from HBM.
            let b_bytes = f64::from(desc.groups) * tile::shuffled_b_bytes(u64::from(desc.n), u64::from(desc.k)) as f64;
            let floor = b_bytes / (MASKED_SPLIT_HBM_TBPS * 1e6);
            let estimate = |s: u32| bs_split_estimate(w32, nkb, s, spec.cus, BS_SLOTS[0]).max(floor);
            let best = |fits: &dyn Fn(u32) -> Result<bool, ConfigError>| -> Result<u32, ConfigError> {
                let mut best = (1, estimate(1));
                for s in MASKED_SPLITS.into_iter().filter(|&s| s <= max_splits) {
                    let e = estimate(s);
                    if e < best.1 * (1.0 - MASKED_SPLIT_MIN_GAIN) && fits(s)? {
                        best = (s, e);
                    }
                }
                Ok(best.0)
            };
            let want = best(&|_| Ok(true))?;
            let s = best(&|s| Ok(make(s)?.workspace_floats() <= available))?;
            if s != want {
                let preferred = make(want)?;
                limited = Some(WorkspaceLimit { needed: preferred.workspace_floats(), preferred, available });
            }
            let why = match why {
                Choice::GroupedBsRule(r32, r64) => Choice::GroupedBsSplit(r32, r64, w),
                other => other,
            };
            (make(s)?, why)
        }
        None => (make(1)?, why),
    };
    print_once(desc, &config, why, limited.as_ref());
    Ok((config, limited))
}

/// The launch spec of an m-grouped contiguous bs config's kernel (B pre-shuffled).
pub fn contiguous_bs_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<MGroupedContiguousArgs>> {
    spec_named(
        [
            M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM32_BN128,
            M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM64_BN128,
            M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM128_BN128,
            M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_PIPE_BM64_BN128,
        ],
        config,
    )
}

/// The launch spec of an m-grouped masked bs config's kernel (B pre-shuffled).
pub fn masked_bs_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<MGroupedMaskedArgs>> {
    spec_named(
        [
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM32_BN128,
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM64_BN128,
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM128_BN128,
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM32_BN64,
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM64_BN128,
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM80_BN128,
        ],
        config,
    )
}

/// K blocks up to which [`masked_narrow_rule`] prefers the narrow masked tile to split-K.
pub const MASKED_NARROW_SHORT_BLOCKS: u32 = 16;

/// Whether a masked launch for which the m-grouped bs rule chose the 32-row tile (no tile or
/// split forced) runs, unsplit, the narrow pipelined kernel `m_grouped_fp8_gemm_nt_masked_bs_pipe_bm32_bn64`
/// instead (32 × 64 tiles, one B fragment per wave, one barrier per two K blocks; MoE decode);
/// `Some(w)` with its working tiles `w`. With `rows = min(expected_m, m_max)` expected rows per
/// group, `w = G · ⌈rows/32⌉ · ⌈n/64⌉` and `p` the
/// workgroups a CU holds at the kernel's LDS (three on gfx942): the narrow tile when `w ≤ p · CUs`
/// (one round) and either
/// * K ≤ 16 blocks ([`MASKED_NARROW_SHORT_BLOCKS`]) and (`w ≤ 1.5 · CUs` or each group's rows fit
///   one 32-row tile): with so few blocks per split, split-K's reduction costs more than the
///   narrow tile's idle CUs; or
/// * longer K, each group's rows fit one tile and `w ≥ 0.4 · CUs` (enough workgroups without
///   splitting).
///
/// Fitted on a sweep through the timing model (MI300X, `FP8GEMM_PRESHUFFLED=1 fp8gemm profile
/// --layout masked --groups G --m M`: `expected_m = M`, `m_max = ⌈1.3·M⌉`, `masked_m` drawn
/// around `M`; the narrow column with
/// `FP8GEMM_FORCE_TILE=32x64`), µs modelled, the previous choice and the narrow tile, **bold**:
/// this rule's pick:
///
/// | G × M over N × K | w | previous choice | narrow |
/// |---|---|---|---|
/// | 1 × 16 over 7168 × 2048 | 112 | 11.03 (32x128 split 4) | **8.08** |
/// | 1 × 32 over 7168 × 2048 | 112 | 11.27 (split 2) | **8.08** |
/// | 2 × 32 over 7168 × 2048 | 224 | 16.42 (split 4) | **11.60** |
/// | 1 × 64 over 7168 × 2048 | 224 | 12.80 (split 4) | **10.73** |
/// | 2 × 64 over 7168 × 2048 | 448 | 17.05 (split 2) | **14.26** |
/// | 1 × 128 over 7168 × 2048 | 448 | 16.31 | **14.28** |
/// | 4 × 32 over 7168 × 2048 | 448 | 19.56 | **18.31** |
/// | 8 × 16 over 7168 × 2048 | 896 | 32.75 | **31.98** |
/// | 4 × 64 over 7168 × 2048 | 896 | **22.05** | 25.76 |
/// | 16 × 8 over 7168 × 2048 | 1792 | **60.27** | 60.01 |
/// | 32 × 4 over 7168 × 2048 | 3584 | **116.22** | 115.66 |
/// | 2 × 16 over 4096 × 7168 | 128 | 21.11 (split 3) | **18.24** |
/// | 4 × 32 over 4096 × 7168 | 256 | 34.42 | **32.48** |
/// | 8 × 16 over 4096 × 7168 | 512 | 60.96 | **59.75** |
/// | 1 × 32 over 4096 × 7168 | 64 | **14.84** (split 4) | 17.08 |
/// | 1 × 64 over 4096 × 7168 | 128 | **16.52** (split 3) | 17.27 |
/// | 2 × 64 over 4096 × 7168 | 256 | **21.96** (split 3) | 26.33 |
/// | 4 × 64 over 4096 × 7168 | 512 | **38.84** (split 2) | 37.53 |
/// | 16 × 8 over 4096 × 7168 | 1024 | **117.28** | 119.68 |
///
/// Nineteen points, four choices (the 16 blocks, the 1.5, the one-tile test, the 0.4): a
/// heuristic, right on every point but one (4 × 64 over 4096 × 7168: 3 % left on the table).
pub fn masked_narrow_rule(desc: &GemmDesc, cus: u32, lds_per_cu: u32) -> Option<u64> {
    let narrow = fp8gemm_device::grouped_pipe::MASKED_BS_PIPE_TILES[0];
    let m_max = desc.m.max(1);
    let rows = desc.expected_m.clamp(1, m_max);
    let single = rows <= narrow.block_m;
    let w = u64::from(desc.groups) * u64::from(rows.div_ceil(narrow.block_m)) * u64::from(desc.n.div_ceil(narrow.block_n));
    let cus = u64::from(cus.max(1));
    let per_cu = u64::from((lds_per_cu / narrow.lds_bytes()).max(1));
    let short = desc.k / tile::SCALE_BLOCK_K <= MASKED_NARROW_SHORT_BLOCKS;
    let take = w <= per_cu * cus && if short { 2 * w <= 3 * cus || single } else { single && 5 * w >= 2 * cus };
    take.then_some(w)
}

/// The m-grouped pipelined bs tiles of a layout ([`fp8gemm_device::grouped_pipe`]).
fn grouped_bs_pipe_tiles(kind: GemmKind) -> &'static [tile::BsTile] {
    match kind {
        GemmKind::MGroupedContiguous => &fp8gemm_device::grouped_pipe::CONTIGUOUS_BS_PIPE_TILES,
        GemmKind::MGroupedMasked => &fp8gemm_device::grouped_pipe::MASKED_BS_PIPE_TILES,
        GemmKind::Dense => &[],
    }
}

/// Fewest 128-K blocks from which the m-grouped bs choice runs its 64-row tile on the pipelined
/// loop (`grouped_bs_pipe_rule`, whose docs hold the modelled table).
pub const GROUPED_BS_PIPE_MIN_BLOCKS: u32 = 2;

/// The pipelined grouped bs tile ([`fp8gemm_device::grouped_pipe`]) that replaces the grouped bs
/// choice `base` ([`get_grouped_bs_config`], forced or chosen), if any: the 64-row tile runs on
/// the pipelined loop (two workgroups per CU since the loop's one-exit shape, B two blocks
/// ahead) from [`GROUPED_BS_PIPE_MIN_BLOCKS`] 128-K blocks on; with a single block the
/// two-phase 64-row kernel is 2 % faster. A forced 80-row (masked) tile is pipelined already.
///
/// Modelled since the pipelined 64-row kernels run two per CU (timing model, MI300X, `--scope
/// xcd`; the pipelined column with `GROUPED_BS_PIPE_MIN_BLOCKS` set to 1, the two-phase one with
/// it above every K), TFLOPS, two-phase two-per-CU 64 × 128 → pipelined two-per-CU 64 × 128:
///
/// | problem | K blocks | two-phase | pipelined |
/// |---|---|---|---|
/// | contiguous 4×8192 over 7168×128 | 1 | **125.3** | 123.0 |
/// | contiguous 4×8192 over 7168×256 | 2 | 218.9 | **226.6** |
/// | masked 1×1024 over 7168×256 | 2 | **175.5** | 175.0 |
/// | contiguous 4×8192 over 7168×512 | 4 | 368.0 | **389.9** |
/// | masked 1×1024 over 7168×512 | 4 | 290.7 | **319.5** |
/// | contiguous 4×8192 over 7168×1024 | 8 | 555.7 | **625.3** |
/// | masked 1×1024 over 7168×1024 | 8 | 436.6 | **506.7** |
/// | contiguous 4×8192 over 7168×1536 | 12 | 665.2 | **769.2** |
/// | contiguous 4×8192 over 7168×2048 | 16 | 721.2 | **864.5** |
/// | contiguous 8×4096 over 7168×2048 | 16 | 723.5 | **867.1** |
/// | masked 1×1024 over 7168×2048 | 16 | 569.2 | **702.9** |
/// | masked 2×512 over 7168×2048 | 16 | 601.2 | **747.5** |
/// | masked 4×256 over 7168×2048 | 16 | 601.4 | **749.2** |
/// | contiguous 4×8192 over 4096×1024 | 8 | 547.4 | **617.9** |
/// | contiguous 4×8192 over 4096×4096 | 32 | 827.6 | **1018.9** |
/// | contiguous 4×8192 over 4096×7168 (held out) | 56 | | **1127.3** |
/// | masked 1×1024 over 4096×7168 (held out) | 56 | | **1041.4** |
///
/// (The cut at 2 blocks: 3.5 % faster contiguous, 0.3 % slower masked, both within the model's ±2 %
/// layout noise at 1–2 blocks.) The forced 80-row masked kernel (two per CU at 256 registers when
/// this was measured; 257 since, so one per CU: `fp8gemm info`) beat the 64-row one at masked
/// 1×1024 over 7168×2048 (723.8 TFLOPS) but not over 4096×7168 (832.3 against 1041.4): not chosen
/// by this rule.
///
/// Before (the pipelined 64-row kernels at one workgroup per CU, 300–312 registers):
/// Modelled (timing model, MI300X, `--scope xcd`, `FP8GEMM_PRESHUFFLED=1 fp8gemm profile`),
/// TFLOPS of executed MFMA work, two-per-CU 64 × 128 → pipelined 64 × 128:
///
/// | problem | K blocks | two per CU | pipelined |
/// |---|---|---|---|
/// | contiguous 4×8192 over 4096×7168 | 56 | 880.1 | **913.4** |
/// | contiguous 8×4096 over 4096×7168 | 56 | 883.8 | **916.8** |
/// | contiguous 4×8192 over 4096×6144 | 48 | 864.8 | **888.1** |
/// | contiguous 4×8192 over 4096×5120 | 40 | 847.2 | **855.1** |
/// | contiguous 4×8192 over 4096×4096 | 32 | **813.4** | 809.6 |
/// | contiguous 4×8192 over 7168×2048 | 16 | **727.1** | 656.3 |
/// | contiguous 8×4096 over 7168×2048 | 16 | **721.0** | 658.6 |
/// | masked 1×1024 over 4096×7168 | 56 | 797.1 | **901.1** |
///
/// The cut then lay between 32 blocks (pipelined 0.5 % slower) and 40 (0.9 % faster). The masked
/// 80-row kernel runs only forced (`FP8GEMM_FORCE_TILE=80x128`).
pub(super) fn grouped_bs_pipe_rule(desc: &GemmDesc, base: tile::BsTile) -> Option<tile::BsTile> {
    if base.block_m != 64 || desc.k / tile::SCALE_BLOCK_K < GROUPED_BS_PIPE_MIN_BLOCKS {
        return None;
    }
    grouped_bs_pipe_tiles(desc.kind).iter().copied().find(|t| t.block_m == 64)
}

/// The launch spec of an m-grouped masked bs split-K config's kernel (B pre-shuffled).
pub fn masked_splitk_bs_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<MGroupedMaskedSplitKArgs>> {
    spec_named([M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM64_BN128], config)
}
