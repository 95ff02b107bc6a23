//! Kernel selection by a generated cost model: `plan(problem, arch, overrides, workspace)`.
//!
//! # Design
//!
//! The selector knows no tile and no shape. It enumerates every [`registry`] row that solves
//! the problem, with every schedule the row allows ([`candidates`]: one tile per workgroup;
//! split-K into 2 … [`MAX_SPLITS`] pieces while the split launch still fits in one round of the
//! device; stream-K with 1 … slots waves of workgroups after a data-parallel head of 0 or of the
//! whole waves), and ranks them by [`CostModel::estimate`], a small analytical model of how the
//! timing model runs a launch:
//!
//! * **Workgroups on CUs.** A launch's workgroups are *jobs* of some number of 128-K blocks
//!   (one tile: `k/128`; a split: its share; a stream-K workgroup: its iteration range). They are
//!   dealt round-robin to the CUs, so the busiest CU gets `⌈jobs/CUs⌉` of each kind and runs
//!   them in batches of at most `slots` (workgroups per CU from registers and LDS, from the code
//!   object). A batch of `o` concurrent workgroups of `b` blocks costs `fixed[o] + b·block[o]`
//!   cycles, and the CU's first batch `first_batch` more (in a launch of many workgroups per
//!   CU a later workgroup's prologue and epilogue overlap its neighbours' main loops, the
//!   first's overlap nothing; without this figure `fixed`, fitted mostly on launches of one
//!   batch or a few, charges every batch of a long launch the first one's cost);
//!   a split or stream-K piece adds `partial` cycles for its partial tile and `reduce`
//!   for each partial the finishing workgroup adds; a block whose B tile the CU reads first
//!   (cold, from HBM: one in `⌈m/BM⌉` of the workgroups sharing that B tile) adds `cold`.
//! * **Memory.** The launch moves at least its unique bytes (A, B and D) through HBM at
//!   `hbm_bytes_per_s`, and every workgroup's A and B tiles (and scales) for each K block it runs,
//!   its output tile and partials through its XCD's L2: the busiest XCD (`⌈jobs/XCDs⌉` of each
//!   kind, dealt round-robin) at `l2_bytes_per_s`. Small tiles over a long K re-read B and A from
//!   the L2 many times; this bound is what makes them lose there.
//!   A dense data-parallel or split-K launch also moves, over the busiest XCD's fabric link
//!   (`fabric_bytes_per_s`, the machine's figure), the distinct A and B tiles of the tile ids
//!   that XCD runs ([`fabric_bytes`]): what a small-M, long-K split launch spends its time on.
//! * **Reduction tail.** A split tile is finished by its last piece, which reads the tile's
//!   partials back after its own streaming ([`Features::chain`]: a split-K tile's `s` partials,
//!   a stream-K tile's pieces). Nothing overlaps that chain at the end of the launch, so it adds
//!   `tail` cycles per partial to whatever bounds the rest: without it a memory-bound decode
//!   launch looks as cheap split in 8 as in 2. Where the tuner is given the kernel's measured
//!   finisher chains (`fp8gemm tune --chain-lines`), the chain costs `chain_fixed + tail ·
//!   chain` from their line instead of a fitted `tail` (the shipped models: the dense split-K
//!   kernels; the grouped ones fit `tail` alone).
//! * **Fill.** A memory-bound launch also pays `memory_fill_s` once: its stream's ramp (the
//!   first loads' latency before the memory system streams) and drain. Without it the fitted
//!   HBM rate is a compromise between short, ramp-dominated launches and long streaming ones,
//!   which then beat the rate they are estimated at.
//!   A kernel row may carry an HBM rate and fill of its own ([`KernelCost::memory`], fitted by
//!   `fp8gemm tune --only … --own-memory` for a family that runs only in launches of its own
//!   shape): the MoE layer's contiguous split-K kernels stream their experts' weights at a
//!   rate and with a ramp of their own, which a machine-wide figure fitted over every kernel
//!   hides (`docs/perf/cost_fit_s31.txt`), and no other kernel's estimate moves.
//! * `time = launch + max(busiest CU cycles / clock, fill + max(HBM bytes / its bandwidth, L2
//!   bytes / its bandwidth, fabric bytes / its bandwidth)) + tail · chain / clock`; launches a
//!   memory bound estimates alike are ranked by their compute term.
//!
//! A file written before the fill and `first_batch` figures reads both as 0 and estimates as
//! it was fitted (the shipped gfx942 and gfx950 files: refits with them chose better MoE
//! layer heights but moved ties among masked grouped candidates the wrong way,
//! `docs/perf/cost_fit_s30.txt`).
//!
//! Every coefficient is **generated**: `fp8gemm tune --cost` times each registered kernel with
//! the timing model (`amdgpu_emu::timing`) on a seeded random sample of shapes, measures each
//! kernel's L2 traffic per counted byte on two launches (`l2_block_scale`, `l2_other_scale`),
//! fits `block`, `fixed`, `partial`, `reduce` and `tail` per kernel by non-negative least
//! squares on relative error ([`fit_kernel`]: compute-bound samples fit every term,
//! memory-bound split samples the `tail` alone, from what the memory bound leaves of their
//! time) and the fill and the HBM and L2 bandwidths on a grid (fractions of the machine's
//! bandwidths, then a finer grid around the best; the fabric link's is the machine's figure), and writes them to `host/tuned/<arch>.<machine>.cost.csv`, which is
//! embedded here ([`CostModel::for_arch`]). No coefficient is typed by hand; regenerate the file
//! when the timing model or a kernel changes. `fp8gemm eval` judges the result on shapes the
//! tuner never saw (regret against every candidate, timed through the model).
//!
//! Overrides are an explicit argument ([`Overrides`]: a tile, a split count, a stream-K
//! schedule) that filter the candidates; a filter that leaves none is a typed error.
//!
//! # Grouped problems
//!
//! The m-grouped (contiguous, masked; [`plan_grouped`]), k-grouped ([`plan_kgrouped`]) and
//! contiguous split-K / gathered-A ([`plan_contiguous_splitk`]) launches are planned the same
//! way: every registered kernel of the problem and weight layout, ranked by the same estimate.
//! **Own samples:** the tuner samples every grouped kernel on grouped problems of its own
//! (`fp8gemm tune --cost`): the plain contiguous split-K kernels (the MoE layer's; random active
//! groups, rows per group, N and K; with `--padded` each group's routed rows end in padding
//! rows whose stores the kernels skip, as in the layer's launches), whose MoE epilogue variants
//! take their coefficients ([`contiguous_splitk_twin`], [`CostModel::cost_of`]), estimated over
//! [`contiguous_features`] (every group's B read once from HBM and shared by that group's row
//! tiles; the rows a batch does not store, [`Features::unstored`], save [`KernelCost::store`],
//! a figure only samples with padding rows can fit and every other sample leaves at 0); DeepGEMM's
//! contiguous kernels (groups of whole 128-row blocks, each ending in padding rows), masked
//! kernels and masked split-K kernels (groups of capacity `⌈1.3·expected_m⌉`, counts spread
//! around `expected_m`, as a decode step sees them), estimated over
//! [`grouped_features`]; the k-grouped kernels ([`kgrouped_features`]). Which of them have
//! coefficients of their own is the architecture's file's choice (gfx942's ships the
//! contiguous and k-grouped ones: the masked samples' fit chose worse than the stand-in).
//! **Stand-in:** a grouped kernel without coefficients of its own in the architecture's file is
//! estimated with the
//! coefficients of the dense kernel whose main loop it runs on every tile
//! ([`dense_counterpart`]: same tile, same LDS or bs loop, same schedule; the k-grouped kernels,
//! which have no dense twin, take the dense LDS kernel of their tile, the nearest loop). The
//! features are the grouped launch's own ([`Features::of_tiles`]): its *working* tiles (a
//! contiguous layout's expected all-padding tiles and a masked layout's tiles past
//! `expected_m` return at once; a masked launch's are counted on its busiest XCD, which with
//! few groups holds the largest count: `masked_busiest_xcd`; a masked plan comes in two grid
//! orders, a launch argument: [`RUNS`], each XCD whole groups, and [`COLUMNS`], each group's
//! columns round-robin over the XCDs, every XCD near the even share but reading all of A), its K blocks per tile, the
//! workgroups that share each group's B tile (one group's row tiles: the first reads it cold),
//! the unique bytes it moves through HBM (the rows of A and D in use and every active group's
//! B once; f32 C and D for k-grouped), and over the busiest XCD's fabric link its tiles' B once
//! per sharing group of tiles and its share of A (the kernels' XCD remap gives each XCD a
//! contiguous run of tiles). Where the caller knows how the groups' sizes are drawn (the MoE
//! layer's routing, [`Routing`] in [`ContiguousQuery::routing`]), a contiguous launch's busiest
//! XCD reads the distinct B columns of its run as [`RoutedTiles`] counts them over seeded draws
//! of the sizes, not each group's B shared evenly by its row tiles.
//! Estimates that the memory term bounds alike are ranked unsplit first, then by their
//! compute term. No time constant is typed by hand.

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use fp8gemm_device::streamk::StreamKSchedule;
use fp8gemm_device::tile;

use crate::codeobj::Arch;
use crate::config::{ConfigError, GemmConfig, GemmDesc, GemmKind, Overrides, Remap, StreamK, WorkspaceLimit};
use crate::layout::WeightLayout;
use crate::registry::{self, KernelEntry, Major, Problem, ScheduleKind};

mod routed;
pub use routed::{ROUTED_DRAWS, RoutedTiles, Routing};

/// Most pieces a split-K launch cuts K into.
pub const MAX_SPLITS: u32 = 32;

/// The grid order of every kernel (the masked ones' other choice is [`COLUMNS`]):
/// contiguous runs of the logical tile order per XCD.
pub const RUNS: Remap = Remap::Xcd { xcds: tile::NUM_XCDS };

/// The masked kernels' other grid order: each N column of each group whole to one XCD, the
/// columns round-robin over the XCDs.
pub const COLUMNS: Remap = Remap::Columns { xcds: tile::NUM_XCDS };

/// A chosen kernel with its launch geometry: what an entry point launches.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// The registered kernel.
    pub kernel: &'static KernelEntry,
    /// Workgroups in the 1-D grid.
    pub grid: u32,
    /// Workgroups per output tile (split-K); 1 otherwise.
    pub splits: u32,
    /// The stream-K schedule of a stream-K kernel.
    pub stream_k: Option<StreamK>,
    /// How workgroups are dealt to the XCDs: [`RUNS`] for every kernel, or for a masked
    /// kernel [`Remap::Columns`] where the planner chose it.
    pub remap: Remap,
    /// The cost model's estimate of the launch, seconds (*modelled*; `NaN` when the
    /// architecture has no cost data).
    pub estimate_s: f64,
}

impl Plan {
    /// FP32 elements of workspace the launch needs.
    pub fn workspace_floats(&self, arch: Arch) -> u64 {
        self.config(arch).workspace_floats()
    }

    /// The launch as a [`GemmConfig`] (what entry points report).
    pub fn config(&self, arch: Arch) -> GemmConfig {
        let k = self.kernel;
        GemmConfig {
            block_m: k.block_m,
            block_n: k.block_n,
            block_k: tile::SCALE_BLOCK_K,
            workgroup_size: k.spec.workgroup_size(),
            lds_bytes: k.lds_bytes,
            kernel: k.name(),
            grid: self.grid,
            splits: self.splits,
            remap: self.remap,
            arch,
            stream_k: self.stream_k,
        }
    }

    /// A short label: `bs 64x128 pipe split 4` (`… cols`: a masked grid in the [`COLUMNS`]
    /// order).
    pub fn label(&self) -> String {
        let k = self.kernel;
        let mut s = format!("{}{}x{}", if k.weights == WeightLayout::Preshuffled { "bs " } else { "" }, k.block_m, k.block_n);
        if k.pipelined() || (k.schedule == ScheduleKind::SplitK && k.weights == WeightLayout::Preshuffled && k.block_m < 128) {
            s.push_str(" pipe");
        }
        if k.name().contains("_b1_") {
            s.push_str(" b1");
        }
        if k.schedule == ScheduleKind::DataParallel && k.weights == WeightLayout::Preshuffled && !k.pipelined() && k.block_m == 64 {
            s.push_str(" 2wg");
        }
        if let Some(sk) = self.stream_k {
            s.push_str(&format!(" sk {}+{}", sk.dp_tiles, sk.sk_wgs));
        } else if self.splits > 1 {
            s.push_str(&format!(" split {}", self.splits));
        }
        if self.remap == COLUMNS {
            s.push_str(" cols");
        }
        s
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.kernel.name(), self.label())
    }
}

fn problem_of(kind: GemmKind) -> Problem {
    match kind {
        GemmKind::Dense => Problem::Dense,
        GemmKind::MGroupedContiguous => Problem::MGroupedContiguous,
        GemmKind::MGroupedMasked => Problem::MGroupedMasked,
    }
}

/// Every launch of a registered kernel that computes `desc` with weights in `weights`
/// (dense problems; see the module docs for the schedules enumerated: split counts stop once
/// the pieces fill one round of the device, unless forced).
pub fn candidates(desc: &GemmDesc, weights: WeightLayout) -> Vec<Plan> {
    candidates_with(desc, weights, (Major::K, Major::K), false)
}

/// [`candidates`] for operands stored as `majors` (NN / TN / TT).
pub fn candidates_with_majors(desc: &GemmDesc, weights: WeightLayout, majors: (Major, Major)) -> Vec<Plan> {
    candidates_with(desc, weights, majors, false)
}

/// [`candidates_with_majors`] with every split count `2 ..= min(k/128, MAX_SPLITS)` (what a
/// forced split count may choose from; the tuner's samples include them).
pub fn candidates_all_splits(desc: &GemmDesc, weights: WeightLayout, majors: (Major, Major)) -> Vec<Plan> {
    candidates_with(desc, weights, majors, true)
}

/// [`candidates`], with every split count `2 ..= min(k/128, MAX_SPLITS)` when `all_splits`
/// (a forced split count is taken as given).
fn candidates_with(desc: &GemmDesc, weights: WeightLayout, majors: (Major, Major), all_splits: bool) -> Vec<Plan> {
    let problem = problem_of(desc.kind);
    let cus = desc.cus.max(1);
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let mut v = Vec::new();
    if problem != Problem::Dense {
        return v;
    }
    for e in registry::candidates_with_majors(problem, weights, majors) {
        let tiles64 = e.tiles(desc.m, desc.n);
        let Ok(tiles) = u32::try_from(tiles64) else { continue };
        let slots = e.slots_per_cu(desc.arch).unwrap_or(1);
        let plan = |grid, splits, stream_k| Plan { kernel: e, grid, splits, stream_k, remap: RUNS, estimate_s: f64::NAN };
        match e.schedule {
            ScheduleKind::DataParallel => v.push(plan(tiles, 1, None)),
            ScheduleKind::SplitK => {
                if tiles > e.max_tiles {
                    continue;
                }
                for s in 2..=nkb.min(MAX_SPLITS) {
                    // Splitting K fills slots the tiles leave idle: the pieces stay within one
                    // round of the device (more pieces than slots only add a round).
                    if !all_splits && u64::from(tiles) * u64::from(s) > u64::from(cus * slots) {
                        break;
                    }
                    if let Some(grid) = tiles.checked_mul(s) {
                        v.push(plan(grid, s, None));
                    }
                }
            }
            ScheduleKind::StreamK => {
                let mut dps = vec![0, crate::config::streamk_default_dp(tiles, cus * slots)];
                dps.dedup();
                for waves in 1..=slots {
                    for &dp in &dps {
                        let g = cus * waves;
                        if StreamKSchedule::new(tiles, nkb, dp, g).is_ok() {
                            let sk = StreamK { tiles, nkb, dp_tiles: dp, sk_wgs: g };
                            v.push(plan(dp + g, 1, Some(sk)));
                        }
                    }
                }
            }
        }
    }
    v
}

/// The stream-K plans of a forced schedule `(g, dp)` (`dp` `None`: the whole waves of the
/// kernel's slots that leave a tail), one per stream-K row it is valid for.
fn forced_stream_k(desc: &GemmDesc, weights: WeightLayout, (g, dp): (u32, Option<u32>)) -> Vec<Plan> {
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let cus = desc.cus.max(1);
    registry::candidates(problem_of(desc.kind), weights)
        .filter(|e| e.schedule == ScheduleKind::StreamK)
        .filter_map(|e| {
            let tiles = u32::try_from(e.tiles(desc.m, desc.n)).ok()?;
            let slots = e.slots_per_cu(desc.arch).unwrap_or(1);
            let dp = dp.unwrap_or_else(|| crate::config::streamk_default_dp(tiles, cus * slots));
            StreamKSchedule::new(tiles, nkb, dp, g).ok()?;
            Some(Plan {
                kernel: e,
                grid: dp.checked_add(g)?,
                splits: 1,
                stream_k: Some(StreamK { tiles, nkb, dp_tiles: dp, sk_wgs: g }),
                remap: RUNS,
                estimate_s: f64::NAN,
            })
        })
        .collect()
}

/// Whether `p` is allowed by the overrides: the forced tile (data-parallel unless a split or
/// stream-K schedule is forced too), split count, stream-K schedule and bs loop variants.
fn passes(p: &Plan, o: &Overrides) -> bool {
    if let Some(t) = o.tile {
        if (p.kernel.block_m, p.kernel.block_n) != t {
            return false;
        }
        // A forced tile alone runs it data-parallel (one workgroup per tile, the whole K).
        if o.split.is_none() && o.stream_k.is_none() && p.kernel.schedule != ScheduleKind::DataParallel {
            return false;
        }
    }
    match (o.split, o.stream_k) {
        (Some(s), _) if p.splits != s || (s > 1 && p.stream_k.is_some()) => return false,
        (Some(1), None) if p.stream_k.is_some() => return false,
        (_, Some((g, dp))) => {
            let Some(sk) = p.stream_k else { return false };
            if sk.sk_wgs != g || dp.is_some_and(|d| d != sk.dp_tiles) {
                return false;
            }
        }
        _ => {}
    }
    if let Some(pipe) = o.bs_pipelined
        && p.kernel.weights == WeightLayout::Preshuffled
        && p.kernel.block_m == 64
        && p.kernel.schedule != ScheduleKind::SplitK
        && p.kernel.pipelined() != pipe
    {
        return false;
    }
    if o.remap.is_some_and(|r| r != p.remap) {
        return false;
    }
    if o.kernel.is_some_and(|k| k != p.kernel.name()) {
        return false;
    }
    if let Some(b) = o.bs_narrow_barrier
        && p.kernel.block_n == 64
        && p.kernel.weights == WeightLayout::Preshuffled
        && p.kernel.schedule == ScheduleKind::DataParallel
        && (b == 1) != p.kernel.name().contains("_b1_")
    {
        return false;
    }
    true
}

/// Chooses the launch of a dense problem: the candidate ([`candidates`]) the overrides allow
/// with the smallest [`CostModel::estimate`] among those whose workspace need fits in
/// `available` FP32 elements. If a faster candidate needed more workspace, it is reported as
/// the [`WorkspaceLimit`]. A forced schedule whose workspace does not fit is still returned
/// (the caller reports the shortfall as an error).
pub fn plan(desc: &GemmDesc, weights: WeightLayout, overrides: &Overrides, available: u64) -> Result<(Plan, Option<WorkspaceLimit>), ConfigError> {
    plan_with_majors(desc, weights, (Major::K, Major::K), overrides, available)
}

/// [`plan`] for operands stored as `majors` (`fp8_gemm_nn` / `_tn` / `_tt`). A kernel without
/// generated coefficients is estimated at `+∞`: it is chosen only as the sole candidate (the
/// other layouts have one tile each today) or when forced.
pub fn plan_with_majors(
    desc: &GemmDesc,
    weights: WeightLayout,
    majors: (Major, Major),
    overrides: &Overrides,
    available: u64,
) -> Result<(Plan, Option<WorkspaceLimit>), ConfigError> {
    crate::config::validate(desc)?;
    if overrides.split == Some(0) {
        return Err(ConfigError::ForcedSplit { splits: "0".into(), expected: "at least 1".into() });
    }
    if let (Some(s), Some((g, dp))) = (overrides.split, overrides.stream_k)
        && s > 1
    {
        return Err(ConfigError::ForcedStreamK {
            schedule: dp.map_or(format!("{g}"), |d| format!("{g}/{d}")),
            expected: "no forced split-K at the same time (Overrides::split > 1)".into(),
        });
    }
    let model = CostModel::for_arch(desc.arch)?;
    let all_splits = overrides.split.is_some_and(|s| s > 1);
    let mut all: Vec<Plan> = match overrides.stream_k {
        Some(forced) if majors == (Major::K, Major::K) => forced_stream_k(desc, weights, forced),
        Some(_) => Vec::new(),
        None => candidates_with(desc, weights, majors, all_splits),
    };
    all.retain(|p| passes(p, overrides));
    if all.is_empty() {
        return Err(forced_error(desc, weights, majors, overrides));
    }
    // Estimates with their compute terms: launches a memory bound estimates alike are ranked
    // by the time their CUs need.
    let mut ranked: Vec<(Plan, f64)> = all
        .into_iter()
        .map(|mut p| {
            let (t, compute) = model.estimate_parts(&p, desc);
            p.estimate_s = t;
            (p, compute)
        })
        .collect();
    ranked.sort_by(|a, b| a.0.estimate_s.total_cmp(&b.0.estimate_s).then(a.1.total_cmp(&b.1)));
    let all: Vec<Plan> = ranked.into_iter().map(|(p, _)| p).collect();
    let best = *all.first().ok_or_else(|| forced_error(desc, weights, majors, overrides))?;
    let forced = overrides.split.is_some_and(|s| s > 1) || overrides.stream_k.is_some();
    if best.workspace_floats(desc.arch) <= available || forced {
        return Ok((best, None));
    }
    let fitting = *all.iter().find(|p| p.workspace_floats(desc.arch) <= available).ok_or_else(|| forced_error(desc, weights, majors, overrides))?;
    let limit = WorkspaceLimit { preferred: best.config(desc.arch), needed: best.workspace_floats(desc.arch), available };
    Ok((fitting, Some(limit)))
}

fn forced_error(desc: &GemmDesc, weights: WeightLayout, majors: (Major, Major), o: &Overrides) -> ConfigError {
    let all = candidates_with_majors(desc, weights, majors);
    if let Some(e) = forced_kernel_error(o, all.iter().map(|p| p.kernel)) {
        return e;
    }
    if let Some((bm, bn)) = o.tile
        && !all.iter().any(|p| (p.kernel.block_m, p.kernel.block_n) == (bm, bn))
    {
        return ConfigError::ForcedTile {
            tile: format!("{bm}x{bn}"),
            available: if majors != (Major::K, Major::K) {
                "64x128 (the NN / TN / TT layouts)"
            } else if weights == WeightLayout::Preshuffled {
                "32x64, 32x128, 48x128, 64x128, 80x128, 96x128, 128x128 (pre-shuffled weights)"
            } else {
                "64x64, 64x128, 128x128 (logical weights)"
            },
        };
    }
    if let Some((g, dp)) = o.stream_k {
        let nkb = desc.k / tile::SCALE_BLOCK_K;
        let rows: Vec<&KernelEntry> = registry::candidates(problem_of(desc.kind), weights)
            .filter(|e| e.schedule == ScheduleKind::StreamK && o.tile.is_none_or(|t| (e.block_m, e.block_n) == t))
            .collect();
        let expected = if rows.is_empty() {
            let have: Vec<String> = registry::candidates(problem_of(desc.kind), weights)
                .filter(|e| e.schedule == ScheduleKind::StreamK)
                .map(|e| format!("{}x{}{}", e.block_m, e.block_n, if e.pipelined() { " pipelined" } else { "" }))
                .collect();
            match o.tile {
                Some((bm, bn)) => format!("no stream-K kernel for the {weights} {bm}x{bn} tile (stream-K tiles: {})", have.join(", ")),
                None => format!("no stream-K kernel for {weights} weights"),
            }
        } else {
            rows.iter()
                .map(|e| {
                    let tiles = e.tiles(desc.m, desc.n).min(u64::from(u32::MAX)) as u32;
                    let slots = e.slots_per_cu(desc.arch).unwrap_or(1);
                    let d = dp.unwrap_or_else(|| crate::config::streamk_default_dp(tiles, desc.cus.max(1) * slots));
                    let why = match StreamKSchedule::new(tiles, nkb, d, g) {
                        Ok(_) => "valid".to_string(),
                        Err(fp8gemm_device::streamk::StreamKScheduleError::NoTail) => "data-parallel tiles below the tile count".to_string(),
                        Err(fp8gemm_device::streamk::StreamKScheduleError::TooManyTiles) => format!("at most {} stream-K tiles", tile::SPLITK_MAX_TILES),
                        Err(fp8gemm_device::streamk::StreamKScheduleError::Workgroups) => {
                            format!(
                                "{} ..= {} workgroups (the tail's tiles ..= its K iterations)",
                                tiles.saturating_sub(d),
                                u64::from(tiles.saturating_sub(d)) * u64::from(nkb)
                            )
                        }
                        Err(fp8gemm_device::streamk::StreamKScheduleError::Overflow) => "a tail that fits in 32-bit counts".to_string(),
                    };
                    format!("{}x{}{}: {tiles} tiles, {d} data-parallel: {why}", e.block_m, e.block_n, if e.pipelined() { " pipelined" } else { "" })
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let expected = if o.split.is_some_and(|s| s > 1) { format!("no forced split-K at the same time; {expected}") } else { expected };
        return ConfigError::ForcedStreamK { schedule: dp.map_or(format!("{g}"), |d| format!("{g}/{d}")), expected };
    }
    let splits = o.split.unwrap_or(0);
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let most = nkb.min(MAX_SPLITS);
    let split_rows: Vec<&KernelEntry> = registry::candidates(problem_of(desc.kind), weights)
        .filter(|e| e.schedule == ScheduleKind::SplitK && o.tile.is_none_or(|t| (e.block_m, e.block_n) == t))
        .collect();
    let expected = if splits > most {
        format!("at most {most} (k/128 = {nkb} blocks, MAX_SPLITS = {MAX_SPLITS})")
    } else if split_rows.is_empty() {
        match o.tile {
            Some((bm, bn)) => format!("1 (no split-K kernel for the {bm}x{bn} tile on {weights} weights)"),
            None => format!("1 (no split-K kernel for {weights} weights)"),
        }
    } else if let Some(e) = split_rows.iter().find(|e| e.tiles(desc.m, desc.n) > u64::from(e.max_tiles)) {
        format!(
            "1: {} tiles is more than {} output tiles of {}×{} (the split-K kernel's arrival counters)",
            e.tiles(desc.m, desc.n),
            e.max_tiles,
            e.block_m,
            e.block_n
        )
    } else {
        format!("1, or 2 ..= {most} (k/128 = {nkb}) for a tile with a split-K kernel")
    };
    ConfigError::ForcedSplit { splits: splits.to_string(), expected }
}

/// The error of a forced kernel ([`Overrides::kernel`]) that is none of `candidates` (the
/// kernels that solve the launch's problem), naming them; `None` when no kernel is forced or
/// it is one of them.
fn forced_kernel_error(o: &Overrides, candidates: impl Iterator<Item = &'static KernelEntry>) -> Option<ConfigError> {
    let k = o.kernel?;
    let mut names: Vec<&str> = candidates.map(|e| e.name()).collect();
    names.sort_unstable();
    names.dedup();
    (!names.contains(&k)).then(|| ConfigError::ForcedKernel { kernel: k.into(), expected: format!("a kernel of this launch's problem: {}", names.join(", ")) })
}

/// The generated coefficients of one kernel (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelCost {
    /// Cycles per 128-K block of one workgroup when `o` run on the CU at once, index `o − 1`.
    pub block: Vec<f64>,
    /// Fixed cycles of a batch of `o` workgroups (prologue, epilogue, dispatch), index `o − 1`.
    pub fixed: Vec<f64>,
    /// Cycles per partial tile a split-K / stream-K piece stores.
    pub partial: f64,
    /// Cycles per partial tile a finishing workgroup reads and adds.
    pub reduce: f64,
    /// Cycles per partial tile of [`Features::chain`]: the reduction at the end of a split
    /// tile, after the memory-bound streaming it cannot overlap.
    pub tail: f64,
    /// Cycles of that reduction whatever its length (a launch with a chain pays
    /// `chain_fixed + tail · chain`): where the tuner measured the kernel's finisher chains
    /// (`fp8gemm tune --chains`, `--chain-lines`), the line through them; 0 where `tail` is
    /// fitted alone.
    pub chain_fixed: f64,
    /// Extra cycles per block whose B tile comes cold from HBM (its first reader among the
    /// `⌈m/BM⌉` workgroups that share it).
    pub cold: f64,
    /// Cycles a batch saves per tile's worth of rows its epilogue does not store
    /// ([`Features::unstored`]: the contiguous layout's padding rows, whose `m_indices` entry is
    /// −1). Fitted only where samples skip rows (0 elsewhere: every dense and full sample
    /// stores every row).
    pub store: f64,
    /// Cycles the busiest CU's first batch adds to its `fixed` figure
    /// ([`Features::first_batch`]): in a launch of many workgroups per CU they do not run in
    /// lockstep batches; a later workgroup's prologue and epilogue overlap its neighbours' main
    /// loops, the first batch's prologue overlaps nothing. Fitted with the other figures (0 in
    /// files written before it, whose `fixed` charges every batch alike).
    pub first_batch: f64,
    /// The HBM rate and memory fill this kernel's own launches reach, where the tuner fitted
    /// them for it (`fp8gemm tune --cost --only … --own-memory`); `None`: the machine's
    /// ([`CostModel::hbm_bytes_per_s`], [`CostModel::memory_fill_s`]). How many loads a kernel
    /// keeps in flight per CU — its occupancy, its prefetch depth — sets the rate its streaming
    /// reaches (Little's law over the memory system's latency), so a kernel family used only in
    /// launches of its own shape (the MoE layer's contiguous split-K kernels) can carry its
    /// own figures without moving every other kernel's.
    pub memory: Option<KernelMemory>,
    /// The kernel's L2 traffic per byte of [`Features::l2_block_bytes`], as the timing model
    /// measured it (`fp8gemm tune --cost` runs two launches per kernel, [`KernelCost::l2_bytes`]):
    /// what the tiles' line granularity, scale reads and the waves' re-reads past the L1 add.
    pub l2_block_scale: f64,
    /// The same per byte of [`Features::l2_other_bytes`] (output tiles and partials).
    pub l2_other_scale: f64,
}

/// A kernel's own HBM figures ([`KernelCost::memory`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelMemory {
    /// The HBM rate its streaming launches reach, bytes per second (positive).
    pub hbm_bytes_per_s: f64,
    /// What a memory-bound launch of it adds to its bytes at their bandwidth, seconds (not
    /// negative).
    pub fill_s: f64,
}

impl KernelCost {
    /// The bytes the busiest XCD's L2 serves for `f` under these coefficients.
    pub fn l2_bytes(&self, f: &Features) -> f64 {
        self.l2_block_scale * f.l2_block_bytes + self.l2_other_scale * f.l2_other_bytes
    }
}

/// The generated cost model of one architecture (module docs).
#[derive(Clone, Debug, Default)]
pub struct CostModel {
    /// Timing-model machine the coefficients were generated on.
    pub machine: String,
    /// Its shader clock, Hz.
    pub clock_hz: f64,
    /// Its launch overhead, seconds.
    pub launch_s: f64,
    /// The HBM bandwidth a streaming launch reaches on it, bytes per second (fitted).
    pub hbm_bytes_per_s: f64,
    /// What a memory-bound launch adds to its bytes at their bandwidth, seconds: the stream's
    /// ramp (its first loads' latency before the memory system streams) and drain (fitted
    /// with the bandwidths; 0 in files written before it, which have no such column).
    pub memory_fill_s: f64,
    /// The bandwidth one XCD's L2 reaches serving its workgroups' tile loads, bytes per second
    /// (fitted as a fraction of the machine's L2 bandwidth).
    pub l2_bytes_per_s: f64,
    /// One XCD's fabric link to the MALL and HBM, bytes per second (the timing model's
    /// machine figure).
    pub fabric_bytes_per_s: f64,
    /// Per kernel symbol.
    pub kernels: HashMap<String, KernelCost>,
    /// The version of the features the coefficients were fitted with (a `features,N` row; 1
    /// where the file has none): [`FEATURES`] for a file the current tuner wrote; 1 counts a
    /// split launch's fabric bytes as files before session 26 did
    /// ([`Features::fabric_v1_extra`]), so an older file estimates as it was fitted until it is
    /// regenerated.
    pub features: u32,
}

/// The memory figures of a [`CostModel`] (or of a fit trying them): a memory-bound launch
/// takes `fill_s` plus the longest of its HBM bytes at `hbm_bytes_per_s`, its busiest XCD's L2
/// traffic at `l2_bytes_per_s` and its fabric bytes at `fabric_bytes_per_s` (the last two per
/// XCD).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemoryRates {
    /// [`CostModel::memory_fill_s`].
    pub fill_s: f64,
    /// [`CostModel::hbm_bytes_per_s`].
    pub hbm_bytes_per_s: f64,
    /// [`CostModel::l2_bytes_per_s`].
    pub l2_bytes_per_s: f64,
    /// [`CostModel::fabric_bytes_per_s`].
    pub fabric_bytes_per_s: f64,
}

/// The version of [`Features`] the tuner fits coefficients on ([`CostModel::features`]).
pub const FEATURES: u32 = 2;

const COST_GFX942: &str = include_str!("../tuned/gfx942.mi325x.cost.csv");
const COST_GFX950: &str = include_str!("../tuned/gfx950.mi355x.cost.csv");

/// What a launch costs, broken down as the model sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Features {
    /// Blocks run by the busiest CU's workgroups at each concurrency `o` (index `o − 1`):
    /// Σ over its batches at that concurrency of the batch's blocks per workgroup.
    pub blocks: [f64; 8],
    /// Batches of the busiest CU at each concurrency.
    pub batches: [f64; 8],
    /// Partial tiles the busiest CU's workgroups store.
    pub partials: f64,
    /// Partial tiles the busiest CU's finishing workgroups read.
    pub reduces: f64,
    /// Partial tiles the finishing workgroup of one split tile reads after its own piece:
    /// the chain of reads at the end of the launch that follows its streaming (a split-K
    /// tile's `s` partials, a stream-K tile's pieces; 0 for whole tiles). Its cost,
    /// [`KernelCost::tail`] each, adds to the launch's time whatever bounds the rest.
    pub chain: f64,
    /// The busiest CU's blocks whose B tile is read cold: its blocks / `⌈m/BM⌉`.
    pub cold: f64,
    /// The busiest CU's batches weighted by the share of their tiles' rows the epilogue does
    /// not store (a contiguous launch's padding rows, skipped: [`ContiguousBytes::stored`]);
    /// 0 where every row is stored. Saves [`KernelCost::store`] each.
    pub unstored: f64,
    /// Unique bytes the launch moves through HBM (A, B and D once each).
    pub hbm_bytes: f64,
    /// Bytes the busiest XCD's L2 serves its workgroups' A and B tiles (with their scales) for
    /// every K block they run. Workgroups are dealt to the [`tile::NUM_XCDS`] XCDs
    /// round-robin, so the busiest gets `⌈jobs/XCDs⌉` of each kind.
    pub l2_block_bytes: f64,
    /// The same for their output tiles and partials (stored and read back).
    pub l2_other_bytes: f64,
    /// Bytes the busiest XCD moves over its fabric link: for dense data-parallel and split-K
    /// launches ([`fabric_bytes`]) the distinct A and B tiles (over their K ranges) of the
    /// logical tile ids the XCD runs, read once each (its workgroups share them in its L2), and
    /// its output tiles and partials; for grouped ones ([`Features::of_tiles`]) its pieces' A
    /// tiles, their B tiles once per sharing workgroups, partials and outputs; 0 (no bound) for
    /// stream-K.
    pub fabric_bytes: f64,
    /// What cost models of [`CostModel::features`] 1 (files written before session 26) add to
    /// [`Features::fabric_bytes`]: a split launch's partials read back counted over the link,
    /// and (dense) its A and B counted over a uniform share of K; 0 for whole tiles. Kept so a
    /// file's coefficients meet the features they were fitted with.
    pub fabric_v1_extra: f64,
}

/// The bytes the busiest XCD moves over its fabric link for a dense launch of a
/// `tiles_m × tiles_n` grid of tiles of bytes `tb` over `nkb` K blocks in `splits` pieces:
/// workgroup `p` runs on XCD `p mod 8` with logical id [`tile::xcd_remap`], so each XCD holds
/// a contiguous id range. Data-parallel ids walk [`tile::tile_coords`]' panels (per panel the
/// range covers some of its rows and a run of its columns: those A and B tiles are read once,
/// over all of K); split-K ids are split-fastest over M-fastest tiles (its distinct rows and
/// columns, each over the K ranges of its pieces that read it, counted exactly). Output tiles (bf16) and,
/// split, the partials stored are added (read back by the finisher from the L2, not the link).
pub fn fabric_bytes(tiles_m: u64, tiles_n: u64, nkb: u64, splits: u64, tb: TileBytes) -> f64 {
    fabric_bytes_both(tiles_m, tiles_n, nkb, splits, tb).0
}

/// [`fabric_bytes`] and what files of [`CostModel::features`] 1 count instead (the busiest
/// XCD's A and B over a uniform share of K, the partials read back over the link).
fn fabric_bytes_both(tiles_m: u64, tiles_n: u64, nkb: u64, splits: u64, tb: TileBytes) -> (f64, f64) {
    let xcds = u64::from(tile::NUM_XCDS);
    // Per K block: an A tile with its scales, a B tile with its scale.
    let (a_blk, b_blk) = (tb.block - tb.b_block, tb.b_block);
    let s = splits.max(1);
    let grid = tiles_m * tiles_n * s;
    if grid == 0 || nkb == 0 {
        return (0.0, 0.0);
    }
    let (q, r) = (grid / xcds, grid % xcds);
    let (mut worst, mut worst_v1) = (0.0f64, 0.0f64);
    for x in 0..xcds.min(grid) {
        let start = x * q + x.min(r);
        let count = q + u64::from(x < r);
        if count == 0 {
            continue;
        }
        let end = start + count;
        let mut bytes = 0.0;
        let bytes_v1 = if s == 1 {
            let p = u64::from(tile::PANEL_M);
            let last = if tiles_m >= p { tiles_m / p - 1 } else { 0 };
            let panel_of = |id: u64| (id / (p * tiles_n)).min(last);
            for panel in panel_of(start)..=panel_of(end - 1) {
                let first = panel * p * tiles_n;
                let rows = if panel == last { tiles_m - panel * p } else { p };
                let lo = start.max(first) - first;
                let hi = end.min(first + rows * tiles_n) - first;
                if hi <= lo {
                    continue;
                }
                let cols = (hi - 1) / rows - lo / rows + 1;
                let used_rows = (hi - lo).min(rows);
                bytes += (used_rows as f64 * a_blk + cols as f64 * b_blk) * nkb as f64;
            }
            bytes += count as f64 * tb.out;
            bytes
        } else {
            // Piece `j` of tile `t` (id `t·s + j`, tile `t` at row `t mod tiles_m`, column
            // `t / tiles_m`) reads its row's A and its column's B over K range `j`
            // ([`tile::split_range`]): the XCD's link moves each distinct (row, range) and
            // (column, range) once.
            let (mut a_ranges, mut b_ranges): (Vec<u64>, Vec<u64>) = (start..end)
                .map(|id| {
                    let (t, j) = (id / s, id % s);
                    ((t % tiles_m) * s + j, (t / tiles_m) * s + j)
                })
                .unzip();
            let (s32, nkb32) = (u32::try_from(s).unwrap_or(u32::MAX), u32::try_from(nkb).unwrap_or(u32::MAX));
            let blocks = |v: &mut Vec<u64>| -> f64 {
                v.sort_unstable();
                v.dedup();
                v.iter().map(|&x| f64::from(tile::split_range(u32::try_from(x % s).unwrap_or(0), s32, nkb32).1)).sum()
            };
            bytes += blocks(&mut a_ranges) * a_blk + blocks(&mut b_ranges) * b_blk;
            // Each piece stores its partial (f32) and each tile finished here stores D; the
            // finisher reads the partials back from the L2 (stored on this XCD just before:
            // the pieces of a tile are neighbouring ids), not over the link.
            bytes += count as f64 * tb.partial + (count as f64 / s as f64) * tb.out;
            // Version 1: a uniform share of K over the run's distinct rows and columns, and
            // the partials read back.
            let (t0, t1) = (start / s, (end - 1) / s);
            let run = t1 - t0 + 1;
            let k_share = (count as f64 / s as f64 / run as f64).min(1.0) * nkb as f64;
            (run.min(tiles_m) as f64 * a_blk + (t1 / tiles_m - t0 / tiles_m + 1) as f64 * b_blk) * k_share
                + count as f64 * tb.partial
                + (count as f64 / s as f64) * (s as f64 * tb.partial + tb.out)
        };
        worst = worst.max(bytes);
        worst_v1 = worst_v1.max(bytes_v1);
    }
    (worst, worst_v1)
}

/// What one workgroup of a `bm × bn` tile moves through its XCD's L2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TileBytes {
    /// Per 128-K block: the A and B tiles in FP8 and their f32 scales.
    pub block: f64,
    /// The B tile's share of `block` (B and its scale).
    pub b_block: f64,
    /// The output tile (bf16).
    pub out: f64,
    /// A partial tile (f32), stored or read back.
    pub partial: f64,
}

impl TileBytes {
    /// The bytes of a `bm × bn` tile.
    pub fn of(bm: u32, bn: u32) -> TileBytes {
        let (bm, bn) = (f64::from(bm), f64::from(bn));
        let k = f64::from(tile::SCALE_BLOCK_K);
        let b_block = bn * k + 4.0 * (bn / k).ceil();
        TileBytes { block: bm * k + 4.0 * bm + b_block, b_block, out: 2.0 * bm * bn, partial: 4.0 * bm * bn }
    }
}

/// Adds `jobs` jobs of `blocks` blocks dealt round-robin over `cus` CUs (the busiest gets
/// `⌈jobs/cus⌉`), run `slots` at a time, each moving `blocks · tb.block` tile bytes and
/// `other` output or partial bytes through its XCD's L2.
fn add_jobs(f: &mut Features, jobs: u64, blocks: f64, cus: u64, slots: u32, tb: TileBytes, other: f64) {
    if jobs == 0 {
        return;
    }
    let per_xcd = jobs.div_ceil(u64::from(tile::NUM_XCDS)) as f64;
    f.l2_block_bytes += per_xcd * blocks * tb.block;
    f.l2_other_bytes += per_xcd * other;
    let per_cu = jobs.div_ceil(cus);
    let slots = u64::from(slots.clamp(1, 8));
    let full = per_cu / slots;
    let rest = per_cu % slots;
    // With fewer jobs than CUs · slots, the busiest CU runs all of its jobs at once.
    let o = slots as usize;
    f.blocks[o - 1] += full as f64 * blocks;
    f.batches[o - 1] += full as f64;
    if rest > 0 {
        f.blocks[rest as usize - 1] += blocks;
        f.batches[rest as usize - 1] += 1.0;
    }
}

impl Features {
    /// 1 where the busiest CU runs a batch (its first pays [`KernelCost::first_batch`]), else 0.
    pub fn first_batch(&self) -> f64 {
        self.batches.iter().sum::<f64>().min(1.0)
    }

    /// The features of `plan` for `desc` on a device of `desc.cus` CUs (a k-grouped kernel's
    /// problem described as `desc.m × desc.n` outputs per group over `desc.k` tokens in
    /// `desc.groups` groups).
    pub fn of(plan: &Plan, desc: &GemmDesc) -> Features {
        let k = plan.kernel;
        let cus = u64::from(desc.cus.max(1));
        let slots = k.slots_per_cu(desc.arch).unwrap_or(1);
        let nkb = u64::from(desc.k / tile::SCALE_BLOCK_K);
        let tiles = k.tiles(desc.m, desc.n);
        let tb = TileBytes::of(k.block_m, k.block_n);
        let mut f = Features::default();
        if let Some(sk) = plan.stream_k {
            let dp = u64::from(sk.dp_tiles);
            add_jobs(&mut f, dp, nkb as f64, cus, slots, tb, tb.out);
            let g = u64::from(sk.sk_wgs.max(1));
            let iters = (tiles - dp) * nkb;
            let per = iters.div_ceil(g);
            // Each stream-K workgroup stores a partial for every tile it starts or ends in
            // the middle of; the owners add them.
            let pieces = (per as f64 / nkb as f64).ceil() + 1.0;
            let adds = (nkb as f64 / per as f64).ceil().max(1.0);
            add_jobs(&mut f, g, per as f64, cus, slots, tb, (pieces + adds) * tb.partial);
            f.partials += g.div_ceil(cus) as f64 * pieces;
            f.reduces += ((tiles - dp) as f64 / cus as f64).ceil() * adds;
            if tiles > dp {
                f.chain = adds;
            }
            let m_tiles = f64::from(desc.m.div_ceil(k.block_m).max(1));
            f.cold = f.blocks.iter().sum::<f64>() / m_tiles;
            f.hbm_bytes = dense_bytes(desc);
            f
        } else if contiguous_splitk_twin(k).is_some() {
            contiguous_features(plan, desc)
        } else if is_deepgemm_grouped(k) {
            grouped_features(k, desc, plan.splits, plan.remap)
        } else if k.problem == Problem::KGrouped {
            // A k-grouped launch described as `desc.m × desc.n` outputs per group over
            // `desc.k` tokens in `desc.groups` groups.
            kgrouped_features(k, desc.m, desc.n, desc.groups, u64::from(desc.k), desc.arch, desc.cus)
        } else {
            let mut f = Features::of_tiles(tiles, nkb, plan.splits, cus, slots, f64::from(desc.m.div_ceil(k.block_m).max(1)), dense_bytes(desc), tb);
            let tiles_m = u64::from(desc.m.div_ceil(k.block_m.max(1)));
            let tiles_n = u64::from(desc.n.div_ceil(k.block_n.max(1)));
            let (now, v1) = fabric_bytes_both(tiles_m, tiles_n, nkb, u64::from(plan.splits), tb);
            (f.fabric_bytes, f.fabric_v1_extra) = (now, v1 - now);
            f
        }
    }

    /// The features of `tiles` output tiles of `nkb` 128-K blocks each, cut into `splits`
    /// pieces (1: whole tiles), dealt to `cus` CUs that hold `slots` workgroups each, where
    /// `b_sharers` workgroups read each B tile (the first reads it cold), the launch moves
    /// `hbm_bytes` unique bytes and each tile `tb` through its XCD's L2: a data-parallel or
    /// split-K launch, dense or grouped.
    #[allow(clippy::too_many_arguments)]
    pub fn of_tiles(tiles: u64, nkb: u64, splits: u32, cus: u64, slots: u32, b_sharers: f64, hbm_bytes: f64, tb: TileBytes) -> Features {
        let mut f = Features::default();
        if splits > 1 {
            let s = u64::from(splits);
            let per = nkb.div_ceil(s);
            // Each piece stores its partial; the finishing one reads the tile's `s` partials
            // back (counted on every piece: which one finishes is not known) and stores D.
            add_jobs(&mut f, tiles * s, per as f64, cus, slots, tb, tb.partial);
            f.l2_other_bytes += tiles.div_ceil(u64::from(tile::NUM_XCDS)) as f64 * (s as f64 * tb.partial + tb.out);
            f.partials += (tiles * s).div_ceil(cus) as f64;
            f.reduces += tiles.div_ceil(cus) as f64 * s as f64;
            f.chain = s as f64;
        } else {
            add_jobs(&mut f, tiles, nkb as f64, cus, slots, tb, tb.out);
        }
        f.cold = f.blocks.iter().sum::<f64>() / b_sharers.max(1.0);
        // Over the busiest XCD's fabric link (a grid order is not known here: the dense
        // launches replace this with [`fabric_bytes`]): its pieces' A tiles each, their B tiles
        // once per `b_sharers` workgroups that share them, its partials and output tiles.
        let s = u64::from(splits.max(1));
        let xcds = u64::from(tile::NUM_XCDS);
        let (pieces, tiles_here) = ((tiles * s).div_ceil(xcds) as f64, tiles.div_ceil(xcds) as f64);
        let a_block = tb.block - tb.b_block;
        f.fabric_bytes = pieces * nkb.div_ceil(s) as f64 * a_block + shared_b_fabric(tiles, nkb, splits, b_sharers, tb);
        f.fabric_bytes += tiles_here * tb.out;
        if s > 1 {
            // The partials the finisher reads back are L2 hits (stored on the same XCD).
            f.fabric_bytes += pieces * tb.partial;
            f.fabric_v1_extra = tiles_here * s as f64 * tb.partial;
        }
        // Partial tiles stay in the L2 / MALL (written, then read back by the finishing
        // workgroup soon after): their cost is the `partial` / `reduce` terms, not HBM.
        f.hbm_bytes = hbm_bytes;
        f
    }
}

/// The B bytes [`Features::of_tiles`] puts over the busiest XCD's link: its pieces' B tiles
/// (`tiles` tiles of `nkb` K blocks in `splits` pieces, a share of them per XCD) once per
/// `b_sharers` workgroups that share them.
fn shared_b_fabric(tiles: u64, nkb: u64, splits: u32, b_sharers: f64, tb: TileBytes) -> f64 {
    let s = u64::from(splits.max(1));
    let pieces = (tiles * s).div_ceil(u64::from(tile::NUM_XCDS)) as f64;
    pieces * nkb.div_ceil(s) as f64 * tb.b_block / b_sharers.max(1.0).min(pieces.max(1.0))
}

/// Unique bytes of a dense problem: A, B and D once each.
fn dense_bytes(desc: &GemmDesc) -> f64 {
    let (m, n, kk) = (f64::from(desc.m), f64::from(desc.n), f64::from(desc.k));
    m * kk + n * kk + 2.0 * m * n
}

impl CostModel {
    /// The embedded cost model of `arch`, generated by `fp8gemm tune --cost` on its machine:
    /// gfx942's on MI325X (`host/tuned/gfx942.mi325x.cost.csv`), gfx950's on MI355X
    /// (`host/tuned/gfx950.mi355x.cost.csv`, the gfx950 code object with its CDNA4 MFMAs run on
    /// an emulated gfx950 device). A file that does not parse is [`ConfigError::Tuned`].
    pub fn for_arch(arch: Arch) -> Result<&'static CostModel, ConfigError> {
        static GFX942: OnceLock<Result<CostModel, String>> = OnceLock::new();
        static GFX950: OnceLock<Result<CostModel, String>> = OnceLock::new();
        let parsed = match arch {
            Arch::Gfx942 => GFX942.get_or_init(|| CostModel::parse(COST_GFX942)),
            Arch::Gfx950 => GFX950.get_or_init(|| CostModel::parse(COST_GFX950)),
        };
        parsed.as_ref().map_err(|e| ConfigError::Tuned(format!("cost model {}: {e}", arch.name())))
    }

    /// Parses the CSV `fp8gemm tune --cost` writes.
    pub fn parse(text: &str) -> Result<CostModel, String> {
        let mut m = CostModel { features: 1, ..CostModel::default() };
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            let num = |j: usize| -> Result<f64, String> {
                f.get(j).ok_or_else(|| format!("line {}: missing field {j}", i + 1))?.parse::<f64>().map_err(|e| format!("line {}: field {j}: {e}", i + 1))
            };
            match f[0] {
                "features" => {
                    let v = num(1)?;
                    if !(1.0..=f64::from(FEATURES)).contains(&v) || v.fract() != 0.0 {
                        return Err(format!("line {}: features version {v}: this build knows 1 ..= {FEATURES}", i + 1));
                    }
                    m.features = v as u32;
                }
                "machine" => {
                    m.machine = f.get(1).ok_or_else(|| format!("line {}: machine name missing", i + 1))?.to_string();
                    m.clock_hz = num(2)?;
                    m.launch_s = num(3)?;
                    m.hbm_bytes_per_s = num(4)?;
                    m.l2_bytes_per_s = num(5)?;
                    m.fabric_bytes_per_s = num(6)?;
                    // Files written before the fill have seven fields.
                    m.memory_fill_s = if f.len() > 7 { num(7)? } else { 0.0 };
                    if m.memory_fill_s < 0.0 {
                        return Err(format!("line {}: memory_fill_s must not be negative", i + 1));
                    }
                }
                "kernel" => {
                    let name = f.get(1).ok_or_else(|| format!("line {}: kernel name missing", i + 1))?.to_string();
                    let slots = num(2)? as usize;
                    // The store, chain_fixed and first_batch figures and the kernel's own memory
                    // figures (the last five) are absent from files written before them.
                    if !(1..=8).contains(&slots) || !(9 + 2 * slots..=14 + 2 * slots).contains(&f.len()) || f.len() == 13 + 2 * slots {
                        return Err(format!(
                            "line {}: expected name, slots, partial, reduce, tail, cold, l2_block_scale, l2_other_scale, then slots block and slots fixed figures, then store, chain_fixed, first_batch, and the kernel's own hbm_bytes_per_s and memory_fill_s (both or neither)",
                            i + 1
                        ));
                    }
                    let store = if f.len() > 9 + 2 * slots { num(9 + 2 * slots)? } else { 0.0 };
                    let chain_fixed = if f.len() > 10 + 2 * slots { num(10 + 2 * slots)? } else { 0.0 };
                    let first_batch = if f.len() > 11 + 2 * slots { num(11 + 2 * slots)? } else { 0.0 };
                    if first_batch < 0.0 {
                        return Err(format!("line {}: first_batch must not be negative", i + 1));
                    }
                    // An own HBM rate of 0: the machine's figures.
                    let memory = if f.len() > 12 + 2 * slots {
                        let (hbm, fill) = (num(12 + 2 * slots)?, num(13 + 2 * slots)?);
                        if hbm < 0.0 || fill < 0.0 || (hbm == 0.0 && fill != 0.0) {
                            return Err(format!(
                                "line {}: the kernel's own hbm_bytes_per_s and memory_fill_s must not be negative, and a fill needs a rate (0,0: the machine's)",
                                i + 1
                            ));
                        }
                        (hbm > 0.0).then_some(KernelMemory { hbm_bytes_per_s: hbm, fill_s: fill })
                    } else {
                        None
                    };
                    if chain_fixed < 0.0 {
                        return Err(format!("line {}: chain_fixed must not be negative", i + 1));
                    }
                    let (partial, reduce, tail, cold, l2_block_scale, l2_other_scale) = (num(3)?, num(4)?, num(5)?, num(6)?, num(7)?, num(8)?);
                    if l2_block_scale <= 0.0 || l2_other_scale < 0.0 {
                        return Err(format!("line {}: l2_block_scale must be positive and l2_other_scale not negative", i + 1));
                    }
                    let block = (0..slots).map(|o| num(9 + o)).collect::<Result<Vec<_>, _>>()?;
                    let fixed = (0..slots).map(|o| num(9 + slots + o)).collect::<Result<Vec<_>, _>>()?;
                    m.kernels.insert(
                        name,
                        KernelCost { block, fixed, partial, reduce, tail, chain_fixed, cold, store, first_batch, memory, l2_block_scale, l2_other_scale },
                    );
                }
                other => return Err(format!("line {}: unknown row kind `{other}`", i + 1)),
            }
        }
        if m.clock_hz <= 0.0 || m.hbm_bytes_per_s <= 0.0 || m.l2_bytes_per_s <= 0.0 || m.fabric_bytes_per_s <= 0.0 {
            return Err("no `machine` row with a clock and HBM, L2 and fabric bandwidths".into());
        }
        Ok(m)
    }

    /// Writes the model in the format [`CostModel::parse`] reads.
    pub fn to_csv(&self, header: &str) -> String {
        let mut s = String::new();
        for l in header.lines() {
            s.push_str("# ");
            s.push_str(l);
            s.push('\n');
        }
        if self.features > 1 {
            s.push_str(&format!("# features,version (of the fabric feature the coefficients were fitted on)\nfeatures,{}\n", self.features));
        }
        s.push_str("# machine,name,clock_hz,launch_s,hbm_bytes_per_s,l2_bytes_per_s_per_xcd,fabric_bytes_per_s_per_xcd,memory_fill_s\n");
        s.push_str(&format!(
            "machine,{},{},{:e},{:e},{:e},{:e},{:e}\n",
            self.machine, self.clock_hz, self.launch_s, self.hbm_bytes_per_s, self.l2_bytes_per_s, self.fabric_bytes_per_s, self.memory_fill_s
        ));
        s.push_str(
            "# kernel,symbol,slots,partial_cycles,reduce_cycles,tail_cycles,cold_block_cycles,l2_block_scale,l2_other_scale,block_cycles[slots],fixed_cycles[slots],store_cycles,chain_fixed_cycles,first_batch_cycles,own_hbm_bytes_per_s,own_memory_fill_s (0,0: the machine's)\n",
        );
        let mut names: Vec<&String> = self.kernels.keys().collect();
        names.sort();
        for n in names {
            let c = &self.kernels[n];
            let fig = |v: &[f64]| v.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>().join(",");
            s.push_str(&format!(
                "kernel,{n},{},{:.1},{:.1},{:.1},{:.1},{:.3},{:.3},{},{},{:.1},{:.1},{:.1},{:e},{:e}\n",
                c.block.len(),
                c.partial,
                c.reduce,
                c.tail,
                c.cold,
                c.l2_block_scale,
                c.l2_other_scale,
                fig(&c.block),
                fig(&c.fixed),
                c.store,
                c.chain_fixed,
                c.first_batch,
                c.memory.map_or(0.0, |m| m.hbm_bytes_per_s),
                c.memory.map_or(0.0, |m| m.fill_s)
            ));
        }
        s
    }

    /// The busiest CU's cycles for `f` under `c`.
    pub fn cu_cycles(c: &KernelCost, f: &Features) -> f64 {
        let mut t = c.partial * f.partials + c.reduce * f.reduces + c.cold * f.cold - c.store * f.unstored + c.first_batch * f.first_batch();
        for o in 0..c.block.len().min(8) {
            t += c.block[o] * f.blocks[o] + c.fixed[o] * f.batches[o];
        }
        // Concurrency above what the kernel was fitted at: scale the widest figures.
        for o in c.block.len()..8 {
            if f.batches[o] > 0.0 {
                let w = c.block.len() - 1;
                t += c.block[w] * f.blocks[o] + c.fixed[w] * f.batches[o];
            }
        }
        t.max(0.0)
    }

    /// The modelled seconds of `plan` on `desc` (`+∞` for a kernel without coefficients, so
    /// it is chosen only when forced).
    pub fn estimate(&self, plan: &Plan, desc: &GemmDesc) -> f64 {
        self.estimate_parts(plan, desc).0
    }

    /// [`CostModel::estimate`] and its compute term alone (the busiest CU's seconds), which
    /// ranks launches that a memory bound estimates alike.
    pub fn estimate_parts(&self, plan: &Plan, desc: &GemmDesc) -> (f64, f64) {
        self.estimate_features(plan, &Features::of(plan, desc))
    }

    /// [`CostModel::estimate_parts`] of `plan` over the features `f` (the launch's own, when
    /// they are not [`Features::of`]'s: [`contiguous_features`] with [`ContiguousBytes`]).
    pub fn estimate_features(&self, plan: &Plan, f: &Features) -> (f64, f64) {
        let Some(c) = self.cost_of(plan.kernel) else { return (f64::INFINITY, f64::INFINITY) };
        self.estimate_with(&c, f)
    }

    /// The estimate of a launch with features `f` under coefficients `c` (module docs: launch,
    /// the larger of compute and memory, then the reduction tail) and its compute term alone.
    pub fn estimate_with(&self, c: &KernelCost, f: &Features) -> (f64, f64) {
        let compute = Self::cu_cycles(c, f) / self.clock_hz;
        (self.launch_s + compute.max(self.memory_s(c, f)) + self.tail_s(c, f), compute)
    }

    /// The coefficients that estimate kernel `e`: its own; for a kernel of the contiguous
    /// split-K family without its own, those of its plain twin ([`contiguous_splitk_twin`]:
    /// the epilogue variants run the same main loop on the same tiles; the epilogues' cost is
    /// not in the features), else the stand-in of the dense kernels with the same loop (per
    /// block and batch the data-parallel bs kernel of the tile, `fp8_gemm_nt_bs[_pipe]_bm{BM}_bn128`,
    /// per partial and reduced partial the dense bs split-K kernel,
    /// `fp8_gemm_nt_splitk_bs_bm{BM}_bn128`); for another grouped kernel without its own, those
    /// of its [`dense_counterpart`]; `None` for a kernel the model has no data for.
    pub fn cost_of(&self, e: &KernelEntry) -> Option<std::borrow::Cow<'_, KernelCost>> {
        use std::borrow::Cow;
        if let Some(c) = self.kernels.get(e.name()) {
            return Some(Cow::Borrowed(c));
        }
        let Some(twin) = contiguous_splitk_twin(e) else {
            // Another grouped kernel: its dense twin's (module docs, "Grouped problems").
            return dense_counterpart(e).filter(|d| !std::ptr::eq(*d, e)).and_then(|d| self.kernels.get(d.name())).map(Cow::Borrowed);
        };
        if let Some(c) = self.kernels.get(twin.name()) {
            return Some(Cow::Borrowed(c));
        }
        let bm = e.block_m;
        let dp = if e.pipelined() { format!("fp8_gemm_nt_bs_pipe_bm{bm}_bn128") } else { format!("fp8_gemm_nt_bs_bm{bm}_bn128") };
        let sk = format!("fp8_gemm_nt_splitk_bs_bm{bm}_bn128");
        let (d, s) = (self.kernels.get(&dp)?, self.kernels.get(&sk)?);
        Some(Cow::Owned(KernelCost { partial: s.partial, reduce: s.reduce, tail: s.tail, chain_fixed: s.chain_fixed, ..d.clone() }))
    }

    /// The seconds of `f`'s reduction chain under `c` ([`Features::chain`]), which follow
    /// whatever bounds the rest of the launch.
    pub fn tail_s(&self, c: &KernelCost, f: &Features) -> f64 {
        chain_cycles(c.chain_fixed, c.tail, f.chain) / self.clock_hz
    }

    /// The seconds the memory hierarchy needs for `f` under `c` at the least: the stream's
    /// fill ([`CostModel::memory_fill_s`]) and its unique bytes through HBM, the busiest XCD's
    /// traffic ([`KernelCost::l2_bytes`]) through its L2 or its fabric bytes through its link,
    /// whichever takes longer.
    pub fn memory_s(&self, c: &KernelCost, f: &Features) -> f64 {
        Self::memory_at(c, &self.versioned(f), self.rates_of(c))
    }

    /// The memory figures that estimate a launch of `c`: the model's, with the kernel's own
    /// HBM rate and fill where it has them ([`KernelCost::memory`]).
    pub fn rates_of(&self, c: &KernelCost) -> MemoryRates {
        let r = self.rates();
        c.memory.map_or(r, |m| MemoryRates { hbm_bytes_per_s: m.hbm_bytes_per_s, fill_s: m.fill_s, ..r })
    }

    /// The model's memory figures ([`MemoryRates`]).
    pub fn rates(&self) -> MemoryRates {
        MemoryRates {
            fill_s: self.memory_fill_s,
            hbm_bytes_per_s: self.hbm_bytes_per_s,
            l2_bytes_per_s: self.l2_bytes_per_s,
            fabric_bytes_per_s: self.fabric_bytes_per_s,
        }
    }

    /// The seconds of a memory-bound pass (no kernel of the model: an MoE layer's separate
    /// activation or unpermute launch) that moves `bytes` through HBM: the launch, the fill
    /// and the bytes at the HBM rate.
    pub fn pass_s(&self, bytes: f64) -> f64 {
        self.launch_s + self.memory_fill_s + bytes / self.hbm_bytes_per_s
    }

    /// `f` as this model's coefficients were fitted on it ([`CostModel::features`]).
    pub fn versioned(&self, f: &Features) -> Features {
        if self.features < FEATURES { Features { fabric_bytes: f.fabric_bytes + f.fabric_v1_extra, ..*f } } else { *f }
    }

    /// [`CostModel::memory_s`] at the given figures.
    pub fn memory_at(c: &KernelCost, f: &Features, r: MemoryRates) -> f64 {
        r.fill_s + (f.hbm_bytes / r.hbm_bytes_per_s).max(c.l2_bytes(f) / r.l2_bytes_per_s).max(f.fabric_bytes / r.fabric_bytes_per_s)
    }
}

/// Cycles of a reduction chain of `chain` partials at `chain_fixed + tail · chain` (none
/// without a chain: whole tiles pay nothing).
fn chain_cycles(chain_fixed: f64, tail: f64, chain: f64) -> f64 {
    if chain > 0.0 { chain_fixed + tail * chain } else { 0.0 }
}

/// Which kernel of the m-grouped contiguous split-K family [`plan_contiguous_splitk`] plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContiguousVariant {
    /// [`registry::Spec::ContiguousSplitK`].
    Plain,
    /// [`registry::Spec::ContiguousScatter`] (the MoE down GEMM with its unpermute).
    Scatter,
    /// [`registry::Spec::ContiguousSilu`] (the MoE gate·up GEMM with its activation).
    Silu,
    /// [`registry::Spec::ContiguousSiluQa`] (the same over bf16 tokens it quantizes itself).
    SiluQa,
}

/// The plain kernel of the contiguous split-K family ([`registry::Spec::ContiguousSplitK`]) with
/// `e`'s tile and main loop: `e` itself, or the plain twin of an epilogue variant
/// ([`registry::Spec::ContiguousScatter`], [`registry::Spec::ContiguousSilu`],
/// [`registry::Spec::ContiguousSiluQa`]); `None` outside the family (or for a variant without a
/// plain twin).
pub fn contiguous_splitk_twin(e: &KernelEntry) -> Option<&'static KernelEntry> {
    use registry::Spec;
    if !matches!(e.spec, Spec::ContiguousSplitK(_) | Spec::ContiguousScatter(_) | Spec::ContiguousSilu(_) | Spec::ContiguousSiluQa(_)) {
        return None;
    }
    registry::KERNELS
        .iter()
        .find(|t| matches!(t.spec, Spec::ContiguousSplitK(_)) && t.block_m == e.block_m && t.block_n == e.block_n && t.pipelined() == e.pipelined())
}

/// The features of a contiguous split-K / gathered-A launch `plan` on `desc`
/// (`GemmDesc::m_grouped_contiguous`: `m` the layout's rows, each of the `groups` active
/// groups padded to the kernel's tile height, so every tile works): [`Features::of_tiles`] over
/// its tiles, each group's B shared by that group's row tiles (`⌈m/BM⌉ / groups` of them, the
/// first reading it cold), unique HBM bytes the rows of A and D and every group's B once.
pub fn contiguous_features(plan: &Plan, desc: &GemmDesc) -> Features {
    contiguous_features_with(plan, desc, None, None)
}

/// The unique bytes a contiguous split-K launch reads of A and writes as its output, where they
/// are not the plain launch's (A `rows · k` FP8 read, D `rows · n` bf16 written): the MoE
/// layer's launches, whose gathered A reads each token row once, whose plain D is stored for
/// the routed rows only (a padding row's `m_indices` entry is −1: the kernels skip its store),
/// and whose epilogues write FP8 activations (`rows · n/2` bytes and their scales) or the
/// token rows of the scatter (`T · n` bf16, plus the shared expert's rows read).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContiguousBytes {
    /// Bytes of A read from HBM.
    pub a: f64,
    /// Bytes the launch writes (and reads besides A and B: the shared expert's rows).
    pub out: f64,
    /// The share of the layout's rows whose output the epilogue stores: the routed rows of the
    /// plain and scatter launches (a padding row's store is skipped), every row of the
    /// activation epilogues'.
    pub stored: f64,
    /// Whether A is gathered from token rows (shared by tiles on every XCD) rather than read
    /// from the layout's own rows (each row tile's A on the XCD that runs it).
    pub gathered: bool,
}

impl ContiguousBytes {
    /// The bytes of a launch of `variant` over `rows` rows of the layout, `stored` of them
    /// routed rows (the rest padding), `n × k` per group: A read from its own rows, or from
    /// `gathered` token rows, each once (bf16 for [`ContiguousVariant::SiluQa`], which
    /// quantizes them itself); as output, D in bf16 for the stored rows (plain), FP8
    /// activations of `n/2` columns and their 1×128 scales for every row of the tiles (the
    /// activation epilogues), or with `scatter = Some((tokens, shared))` the scatter's token
    /// rows in bf16, plus the shared expert's rows read where `shared`.
    pub fn of(variant: ContiguousVariant, rows: f64, stored: f64, n: f64, k: f64, gathered: Option<f64>, scatter: Option<(f64, bool)>) -> ContiguousBytes {
        let a_elem = if variant == ContiguousVariant::SiluQa { 2.0 } else { 1.0 };
        let a = gathered.map_or(rows * k, |t| t * k * a_elem);
        let out = match (variant, scatter) {
            (ContiguousVariant::Silu | ContiguousVariant::SiluQa, _) => rows * n / 2.0 + rows * (n / 256.0).ceil() * 4.0,
            (ContiguousVariant::Scatter, Some((tokens, shared))) => tokens * n * 2.0 * if shared { 2.0 } else { 1.0 },
            _ => 2.0 * stored.min(rows) * n,
        };
        let stored = match variant {
            ContiguousVariant::Silu | ContiguousVariant::SiluQa => 1.0,
            _ if rows > 0.0 => (stored / rows).clamp(0.0, 1.0),
            _ => 1.0,
        };
        ContiguousBytes { a, out, stored, gathered: gathered.is_some() }
    }
}

/// [`contiguous_features`] with the launch's own A and output bytes (`None`: the plain
/// launch's) and, where the groups' sizes are drawn (`routed`: the MoE layer's routing, drawn
/// for the kernel's tile height), the busiest XCD's B over its fabric link as the draws give it
/// ([`RoutedTiles::busiest_b_columns`]) instead of every group's B shared evenly by its row
/// tiles.
pub fn contiguous_features_with(plan: &Plan, desc: &GemmDesc, bytes: Option<ContiguousBytes>, routed: Option<&RoutedTiles>) -> Features {
    let e = plan.kernel;
    let (rows, n, k) = (desc.m, desc.n, desc.k);
    let active = desc.groups.max(1);
    let nkb = u64::from(k / tile::SCALE_BLOCK_K);
    let slots = e.slots_per_cu(desc.arch).unwrap_or(1);
    let per_group = (f64::from(rows.div_ceil(e.block_m.max(1))) / f64::from(active)).max(1.0);
    let (r, nn, kk) = (f64::from(rows), f64::from(n), f64::from(k));
    let io = bytes.unwrap_or_else(|| ContiguousBytes::of(ContiguousVariant::Plain, r, r, nn, kk, None, None));
    let hbm = io.a + f64::from(active) * nn * kk + io.out;
    let tiles = e.tiles(rows, n);
    let tb = TileBytes::of(e.block_m, e.block_n);
    let mut f = Features::of_tiles(tiles, nkb, plan.splits, u64::from(desc.cus.max(1)), slots, per_group, hbm, tb);
    // Over the busiest XCD's link, A is read at most once whatever its tiles' rows: a gathered
    // A (its token rows shared by many tiles, on every XCD) is below the per-tile sum
    // `of_tiles` counts; the layout's own rows are each read by the one XCD whose contiguous
    // id run holds their row tile (shared there by its columns): the XCD's share of A and a
    // tile's, as the DeepGEMM grouped launches count it.
    let cap = if io.gathered { io.a } else { fabric_a_bound(io.a, true, nkb, tb) };
    cap_fabric_a(&mut f, tiles, nkb, plan.splits, tb, cap);
    if let Some(r) = routed {
        // `of_tiles` counted the busiest XCD's B as its pieces' share of each group's B; the
        // draws count its distinct columns.
        let n_tiles = u64::from(n.div_ceil(e.block_n.max(1)));
        let drawn = r.busiest_b_columns(n_tiles, u64::from(plan.splits.max(1))) * nkb as f64 * tb.b_block;
        f.fabric_bytes += drawn - shared_b_fabric(tiles, nkb, plan.splits, per_group, tb);
    }
    // The skipped padding rows, spread evenly over the tiles (each active group's last tile
    // holds its padding).
    f.unstored = (1.0 - io.stored) * f.batches.iter().sum::<f64>();
    f
}

/// The registered kernels of the contiguous split-K family `variant` of height `block_m` (any
/// when `None`) on (`Some(true)`) or off the pipelined bs loop (any when `None`).
fn contiguous_entries(variant: ContiguousVariant, block_m: Option<u32>, pipelined: Option<bool>) -> impl Iterator<Item = &'static KernelEntry> {
    registry::KERNELS.iter().filter(move |e| {
        let kind = match variant {
            ContiguousVariant::Plain => matches!(e.spec, registry::Spec::ContiguousSplitK(_)),
            ContiguousVariant::Scatter => matches!(e.spec, registry::Spec::ContiguousScatter(_)),
            ContiguousVariant::Silu => matches!(e.spec, registry::Spec::ContiguousSilu(_)),
            ContiguousVariant::SiluQa => matches!(e.spec, registry::Spec::ContiguousSiluQa(_)),
        };
        kind && block_m.is_none_or(|b| e.block_m == b) && pipelined.is_none_or(|p| p == e.pipelined())
    })
}

/// A launch of the m-grouped contiguous split-K family to plan ([`contiguous_splitk_candidates`],
/// [`plan_contiguous_splitk`]).
#[derive(Clone, Copy, Debug)]
pub struct ContiguousQuery {
    /// Rows of the layout (every group padded to whole tiles; the bound the host knows).
    pub rows: u32,
    /// Columns of D (rows of each group's B).
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Groups with rows (each reads its B once).
    pub active: u32,
    /// The device's architecture.
    pub arch: Arch,
    /// Its compute units.
    pub cus: u32,
    /// f32 elements of split-K workspace the launch may use.
    pub available: u64,
    /// A forced split count ([`Overrides::split`]).
    pub forced: Option<u32>,
    /// Which kernel of the family (plain, or with an MoE epilogue).
    pub variant: ContiguousVariant,
    /// Only kernels on (`true`) or off (`false`) the pipelined bs loop ([`Overrides::bs_pipelined`]).
    pub pipelined: Option<bool>,
    /// The launch's own A and output bytes (`None`: the plain launch's).
    pub bytes: Option<ContiguousBytes>,
    /// How the layout's rows fall to the groups where the caller draws them (the MoE layer's
    /// routing; [`contiguous_features_with`]); `None`: every group alike.
    pub routing: Option<Routing>,
}

/// Every launch of the m-grouped contiguous split-K family `q.variant` over `q.rows` rows of
/// `block_m`-row blocks (any registered height when `None`) for `q.active` groups of `n × k`
/// pre-shuffled weights on `q.cus` CUs, with its [`CostModel`] estimate
/// ([`contiguous_features_with`] the launch's `bytes`, [`CostModel::cost_of`]; `NaN` without
/// coefficients): each kernel (filtered by `pipelined`,
/// [`Overrides::bs_pipelined`]) at every split count from 1 (data-parallel) while the split
/// launch fits one round of the device, within [`MAX_SPLITS`], `k/128`, the kernel's tile
/// limit and `available` f32 of workspace; `forced` pins the count (kernels that cannot run it
/// give nothing). The plans of [`plan_contiguous_splitk`] and the tuner's samples of this
/// family.
pub fn contiguous_splitk_candidates(block_m: Option<u32>, q: &ContiguousQuery) -> Vec<Plan> {
    let ContiguousQuery { rows, n, k, active, arch, cus, available, forced, variant, pipelined, bytes, routing } = *q;
    let model = CostModel::for_arch(arch).ok();
    // The routing's draws, once per tile height.
    let mut draws: Vec<(u32, RoutedTiles)> = Vec::new();
    let nkb = k / tile::SCALE_BLOCK_K;
    let desc = GemmDesc { cus, ..GemmDesc::m_grouped_contiguous(rows, n, k, active.max(1), arch) };
    let mut out = Vec::new();
    for entry in contiguous_entries(variant, block_m, pipelined) {
        if let Some(r) = routing.filter(|_| model.is_some() && !draws.iter().any(|(bm, _)| *bm == entry.block_m)) {
            draws.push((entry.block_m, RoutedTiles::draw(r, entry.block_m)));
        }
        let tiles = entry.tiles(rows, n);
        let slots = entry.slots_per_cu(arch).unwrap_or(1);
        let round = u64::from(cus.max(1)) * u64::from(slots);
        let fits = |s: u32| -> bool {
            s >= 1
                && s <= nkb.max(1)
                && (s == 1
                    || (tiles <= u64::from(entry.max_tiles) && tile::splitk_workspace_floats(tiles as u32, s, entry.block_m, entry.block_n) <= available))
        };
        let grid = |s: u32| u32::try_from(tiles * u64::from(s)).ok();
        let counts: Vec<u32> = match forced {
            Some(s) => vec![s],
            None => (1..=MAX_SPLITS.min(nkb.max(1))).filter(|&s| s == 1 || tiles * u64::from(s) <= round).collect(),
        };
        for s in counts {
            let Some(g) = grid(s).filter(|_| fits(s)) else { continue };
            let mut plan = Plan { kernel: entry, grid: g, splits: s, stream_k: None, remap: RUNS, estimate_s: f64::NAN };
            if let Some(m) = model {
                let routed = draws.iter().find(|(bm, _)| *bm == entry.block_m).map(|d| &d.1);
                let (t, _) = m.estimate_features(&plan, &contiguous_features_with(&plan, &desc, bytes, routed));
                plan.estimate_s = if t.is_finite() { t } else { f64::NAN };
            }
            out.push(plan);
        }
    }
    out
}

/// The plan of an m-grouped contiguous split-K / gathered-A launch
/// (`m_grouped_fp8_gemm_nt_contiguous_splitk_bs_*`, [`registry::Spec::ContiguousSplitK`]) over
/// `rows` rows of `block_m`-row blocks (the bound the host knows: blocks past the rows in use
/// return at once) for `active` groups of `n × k` pre-shuffled weights: the candidate of
/// [`contiguous_splitk_candidates`] with the least estimate (the first where none has one).
/// `forced` pins the split count (an impossible one is [`ConfigError::ForcedSplit`]);
/// `variant` picks the kernel with the MoE scatter or activation epilogue, estimated with its
/// own coefficients where the model has them (the activation-epilogue kernels, sampled by the
/// tuner on one-round launches), else its plain twin's
/// ([`CostModel::cost_of`]); `pipelined` keeps only the kernels on (`true`) or off (`false`) the
/// pipelined bs loop ([`Overrides::bs_pipelined`]); `bytes` the launch's own A and output
/// bytes ([`ContiguousBytes`]; `None`: the plain launch's).
pub fn plan_contiguous_splitk(block_m: u32, q: &ContiguousQuery) -> Result<Plan, ConfigError> {
    let ContiguousQuery { k, arch, forced, variant, pipelined, .. } = *q;
    if contiguous_entries(variant, Some(block_m), pipelined).next().is_none() {
        return Err(ConfigError::ForcedTile { tile: format!("{block_m}x128"), available: "32x128, 64x128 (m-grouped contiguous split-K)" });
    }
    CostModel::for_arch(arch)?;
    let nkb = k / tile::SCALE_BLOCK_K;
    let mut best: Option<Plan> = None;
    for p in contiguous_splitk_candidates(Some(block_m), q) {
        // NaN (no coefficients) never beats a number; the first candidate stands in.
        if best.as_ref().is_none_or(|b| p.estimate_s < b.estimate_s || (b.estimate_s.is_nan() && !p.estimate_s.is_nan())) {
            best = Some(p);
        }
    }
    best.ok_or_else(|| ConfigError::ForcedSplit {
        splits: forced.map_or_else(|| "-".into(), |s| s.to_string()),
        expected: format!("1 ..= {} (k/128 = {nkb}), with at most {} tiles and the workspace's room", nkb.min(MAX_SPLITS), tile::SPLITK_MAX_TILES),
    })
}

/// The dense kernel whose main loop a grouped kernel runs on each of its tiles, and whose
/// generated coefficients therefore stand in for its own (module docs, "Grouped problems"):
/// `m_grouped_fp8_gemm_nt_{contiguous,masked}_X` runs the loop of `fp8_gemm_nt_X` (same
/// tile, same LDS or bs loop, same schedule: e.g. the masked bs split-K kernels the dense bs
/// split-K ones, the masked narrow `…_bs_pipe_bm32_bn64` the dense narrow kernel). The
/// k-grouped kernels have no dense twin (both operands MN-major, f32 C/D): they take the
/// nearest main loop's, the dense LDS kernel of the same tile (`fp8_gemm_nt_bm{BM}_bn{BN}`).
/// A dense kernel is its own counterpart; `None` where no registered dense kernel matches
/// (the contiguous split-K epilogue kernels, planned by [`plan_contiguous_splitk`]).
pub fn dense_counterpart(e: &KernelEntry) -> Option<&'static KernelEntry> {
    let name = match e.problem {
        Problem::Dense => return registry::by_name(e.name()),
        Problem::MGroupedContiguous | Problem::MGroupedMasked => e.name().strip_prefix("m_grouped_")?.replacen("_contiguous", "", 1).replacen("_masked", "", 1),
        Problem::KGrouped => format!("fp8_gemm_nt_bm{}_bn{}", e.block_m, e.block_n),
    };
    let schedule = if e.problem == Problem::KGrouped { ScheduleKind::DataParallel } else { e.schedule };
    registry::by_name(&name).filter(|d| d.problem == Problem::Dense && d.weights == e.weights && d.schedule == schedule && d.majors == (Major::K, Major::K))
}

/// What the cost model needs of a grouped launch of one kernel (module docs, "Grouped
/// problems").
#[derive(Clone, Debug, PartialEq)]
struct GroupedWork {
    /// Output tiles that do work (the model's jobs).
    work: u64,
    /// Output tiles of the grid (what is launched: masked grids are sized from `m_max`).
    grid_tiles: u64,
    /// 128-K blocks per tile.
    nkb: u64,
    /// Workgroups that read each B tile (one group's row tiles): one of them reads it cold.
    b_sharers: f64,
    /// Unique bytes through HBM: the rows of A and D in use, every active group's B once.
    hbm_bytes: f64,
    /// Unique bytes of A (the rows in use), of which the busiest XCD's fabric link moves its
    /// share, however many of its tiles read each row ([`work_features`]).
    a_bytes: f64,
    /// A masked grid's draws of its row counts ([`MaskedDraws`]), from which the busiest XCD
    /// of each split count follows; `None` where the working tiles spread evenly over the XCDs.
    busiest_xcd: Option<MaskedDraws>,
}

/// Draws of the row counts [`masked_busiest_xcd`] takes.
const MASKED_DRAWS: usize = 32;

/// The mean over the draws of the busiest XCD's working workgroups at split count `s`.
fn mean_busiest(b: &MaskedDraws, s: u32, remap: Remap) -> f64 {
    b.busiest(s, remap).iter().map(|&x| f64::from(x)).sum::<f64>() / MASKED_DRAWS as f64
}

/// A masked layout's row counts in [`MASKED_DRAWS`] draws, from which [`MaskedDraws::busiest`]
/// gives the working workgroups of the grid's busiest XCD in each draw, for any split count and
/// either grid order: `groups` groups of `tiles_m × n_tiles` tiles of `bm` rows, ids dealt as the
/// kernels deal them (in [`RUNS`], logical id = [`tile::xcd_remap`] of the workgroup id, so XCD
/// `x` runs a contiguous run of logical ids; in [`COLUMNS`], [`MaskedDraws::busiest_by_columns`];
/// groups outermost, inside a group M fastest, [`tile::masked_tile_coords`]; a split grid's
/// `s` pieces of a tile on neighbouring ids). A tile works when its first row is below its
/// group's count.
///
/// The counts live on the device: they are drawn uniform over `expected − h .. expected + h`
/// (`h` the capacity's headroom over `expected`, at most `expected`; half-open, as DeepGEMM's
/// tests draw `⌊expected · U[0.7, 1.3)⌋` under a capacity of `⌈1.3 · expected⌉`),
/// [`MASKED_DRAWS`] times from a fixed seed, so the estimate is deterministic. The planner
/// averages its estimate over the draws ([`grouped_estimate`]): the time is a step in the
/// busiest XCD's rounds, so the mean of the times, not the time of the mean count.
///
/// Each XCD's dispatcher hands its workgroups round-robin to its CUs and refills a slot as soon
/// as a tile past its count returns, so the launch lasts as long as the busiest XCD's working
/// workgroups take on its CUs: with few groups (a group spans several XCDs) that XCD is the one
/// holding the largest count, not the average.
#[derive(Clone, Debug, PartialEq)]
struct MaskedDraws {
    groups: u64,
    tiles_m: u64,
    n_tiles: u64,
    /// Per draw (draw-major), the working tiles of groups `0 .. g`, for `g` in `0 ..= groups`.
    prefix: Vec<u64>,
}

/// [`MaskedDraws`] of `groups` groups of `tiles_m × n_tiles` tiles of `bm` rows, counts around
/// `expected` under the capacity `m_max` (see [`MaskedDraws::busiest`]).
fn masked_busiest_xcd(groups: u64, tiles_m: u64, n_tiles: u64, bm: u64, expected: u64, m_max: u64) -> MaskedDraws {
    let h = m_max.saturating_sub(expected).min(expected);
    let (lo, span) = (expected - h, (2 * h).max(1));
    // SplitMix64: a fixed, portable sequence.
    let mut rng = routed::SplitMix(0x9E37_79B9_7F4A_7C15);
    let mut next = move || rng.next_u64();
    let groups_us = usize::try_from(groups).unwrap_or(usize::MAX);
    let mut prefix = Vec::with_capacity(MASKED_DRAWS * (groups_us + 1));
    for _ in 0..MASKED_DRAWS {
        let mut sum = 0;
        prefix.push(sum);
        for _ in 0..groups_us {
            sum += (lo + next() % span).div_ceil(bm).min(tiles_m) * n_tiles;
            prefix.push(sum);
        }
    }
    MaskedDraws { groups, tiles_m, n_tiles, prefix }
}

impl MaskedDraws {
    /// The busiest XCD's working workgroups in each draw, the grid split `s` ways (clamped to
    /// `1 ..= MAX_SPLITS`) and dealt in the order `remap`; computed for the split counts a
    /// planner asks for only.
    fn busiest(&self, s: u32, remap: Remap) -> [u32; MASKED_DRAWS] {
        let mut out = [0; MASKED_DRAWS];
        let (groups, tiles_m) = (self.groups, self.tiles_m);
        let per_group = tiles_m * self.n_tiles;
        if groups == 0 || per_group == 0 {
            return out;
        }
        if remap == COLUMNS {
            return self.busiest_by_columns(s);
        }
        let (xcds, s) = (u64::from(tile::NUM_XCDS), u64::from(s.clamp(1, MAX_SPLITS)));
        let grid = groups * per_group * s;
        let (q, r) = (grid / xcds, grid % xcds);
        let stride = usize::try_from(groups).unwrap_or(usize::MAX) + 1;
        for (draw, busy) in out.iter_mut().enumerate() {
            let prefix = &self.prefix[draw * stride..(draw + 1) * stride];
            // Working tiles among logical tile ids `0 .. t`.
            let below = |t: u64| -> u64 {
                let g = t / per_group;
                if g >= groups {
                    return prefix[stride - 1];
                }
                let (local, w) = (t % per_group, (prefix[g as usize + 1] - prefix[g as usize]) / self.n_tiles);
                prefix[g as usize] + (local / tiles_m) * w + (local % tiles_m).min(w)
            };
            // Working ids among `a .. b` of the split grid (id / s is the tile).
            let working = |a: u64, b: u64| -> u64 {
                if a >= b {
                    return 0;
                }
                let works = |t: u64| below(t + 1) - below(t);
                let (ta, tb) = (a / s, (b - 1) / s);
                if ta == tb {
                    return (b - a) * works(ta);
                }
                (s - a % s) * works(ta) + s * (below(tb) - below(ta + 1)) + (b - tb * s) * works(tb)
            };
            let most = (0..xcds).map(|x| {
                let start = x * q + x.min(r);
                working(start, start + q + u64::from(x < r))
            });
            *busy = u32::try_from(most.max().unwrap_or(0)).unwrap_or(u32::MAX);
        }
        out
    }

    /// [`MaskedDraws::busiest`] in the [`COLUMNS`] order ([`tile::masked_xcd_order`]): column
    /// `c` (of `groups · n_tiles`, group-major) whole to XCD `c mod XCDs`, its row tiles and
    /// their `s` pieces on consecutive workgroups; the last `columns mod XCDs` columns in the
    /// identity order (workgroup `p` on XCD `p mod XCDs`).
    fn busiest_by_columns(&self, s: u32) -> [u32; MASKED_DRAWS] {
        let mut out = [0; MASKED_DRAWS];
        let (groups, tiles_m, n_tiles) = (self.groups, self.tiles_m, self.n_tiles);
        let (xcds, s) = (u64::from(tile::NUM_XCDS), u64::from(s.clamp(1, MAX_SPLITS)));
        let chunks = groups * n_tiles;
        let dealt = chunks / xcds * xcds;
        // Columns `c` in `a .. b` with `c mod xcds == x`.
        let on = |a: u64, b: u64, x: u64| (b + xcds - 1 - x) / xcds - (a + xcds - 1 - x) / xcds;
        let stride = usize::try_from(groups).unwrap_or(usize::MAX) + 1;
        let len = tiles_m * s;
        for (draw, busy) in out.iter_mut().enumerate() {
            let prefix = &self.prefix[draw * stride..(draw + 1) * stride];
            let rows = |g: u64| (prefix[g as usize + 1] - prefix[g as usize]) / n_tiles.max(1);
            let mut per_xcd = [0u64; tile::NUM_XCDS as usize];
            for g in 0..groups {
                let (a, b) = ((g * n_tiles).min(dealt), ((g + 1) * n_tiles).min(dealt));
                for (x, t) in per_xcd.iter_mut().enumerate() {
                    *t += rows(g) * s * on(a, b, x as u64);
                }
            }
            // The identity-ordered tail: id `p` on XCD `p mod xcds`, a working piece where its
            // row tile is below its group's count.
            for p in dealt * len..chunks * len {
                let (c, i) = (p / len, p % len);
                if i / s < rows(c / n_tiles) {
                    per_xcd[(p % xcds) as usize] += 1;
                }
            }
            *busy = u32::try_from(per_xcd.iter().max().copied().unwrap_or(0)).unwrap_or(u32::MAX);
        }
        out
    }
}

/// The [`GroupedWork`] of kernel `e` on the m-grouped problem `desc`:
/// * contiguous: the grid is `(m_sum/BM) · ⌈n/BN⌉`; each of the `live = min(G, m_sum/128)`
///   non-empty groups ends in a partly padded 128-row block, and with the padding length taken
///   as uniform a `BM`-row tile of it is all padding `(128/BM − 1)/2` times on average (64: half
///   the time; 32: 1.5 times), so `live · (128/BM − 1)/2 · ⌈n/BN⌉` tiles do no work; the rest
///   share each group's B over `work rows / live` tiles;
/// * masked: the grid is `G · ⌈m_max/BM⌉ · ⌈n/BN⌉`, the working tiles `G · ⌈r/BM⌉ · ⌈n/BN⌉`
///   with `r` = `expected_m` clamped to `1 ..= m_max` (the counts live on the device; a tile
///   past its group's count returns after one scalar load); the features charge every XCD
///   with the busiest XCD's expected working tiles under counts spread around `r`
///   ([`masked_busiest_xcd`]).
fn grouped_work(e: &KernelEntry, desc: &GemmDesc) -> GroupedWork {
    let (bm, bn) = (e.block_m.max(1), e.block_n.max(1));
    let (n, k) = (u64::from(desc.n), u64::from(desc.k));
    let n_tiles = n.div_ceil(u64::from(bn));
    let nkb = k / u64::from(tile::SCALE_BLOCK_K);
    let g = u64::from(desc.groups.max(1));
    match desc.kind {
        GemmKind::MGroupedMasked => {
            let m_max = desc.m.max(1);
            let r = u64::from(desc.expected_m.clamp(1, m_max));
            let per_group = r.div_ceil(u64::from(bm));
            GroupedWork {
                work: g * per_group * n_tiles,
                grid_tiles: g * u64::from(m_max.div_ceil(bm)) * n_tiles,
                nkb,
                b_sharers: per_group as f64,
                hbm_bytes: (g * r * k + g * n * k + 2 * g * r * n) as f64,
                a_bytes: (g * r * k) as f64,
                busiest_xcd: Some(masked_busiest_xcd(g, u64::from(m_max.div_ceil(bm)), n_tiles, u64::from(bm), r, u64::from(m_max))),
            }
        }
        _ => {
            let align = tile::M_ALIGNMENT_CONTIGUOUS;
            let m = u64::from(desc.m);
            let m_tiles = m.div_ceil(u64::from(bm));
            let live = u64::from(desc.groups.min(desc.m / align).max(1));
            let skipped = if bm < align { (live * u64::from(align / bm - 1) / 2).min(m_tiles.saturating_sub(1)) } else { 0 };
            let rows = m_tiles - skipped;
            GroupedWork {
                work: rows * n_tiles,
                grid_tiles: m_tiles * n_tiles,
                nkb,
                b_sharers: rows as f64 / live as f64,
                hbm_bytes: (m * k + live * n * k + 2 * m * n) as f64,
                a_bytes: (m * k) as f64,
                busiest_xcd: None,
            }
        }
    }
}

/// The features of kernel `e`'s grouped launch on `desc` in `splits` pieces in grid order
/// `remap` (module docs, "Grouped problems": its working tiles, K blocks, B sharers and unique
/// HBM bytes; a masked launch's at the mean over the draws of its busiest XCD in that order);
/// what the tuner fits a grouped kernel's own coefficients over.
pub fn grouped_features(e: &KernelEntry, desc: &GemmDesc, splits: u32, remap: Remap) -> Features {
    let w = grouped_work(e, desc);
    let busiest = w.busiest_xcd.as_ref().map(|b| (mean_busiest(b, splits, remap), remap));
    work_features_at(e, &w, splits, desc.arch, desc.cus, busiest)
}

/// [`Features::of_tiles`] of a [`GroupedWork`] whose working tiles spread evenly over the XCDs
/// (contiguous and k-grouped launches; a masked one goes through [`work_features_at`] with its
/// busiest XCD), with A over the busiest XCD's fabric link at most its share: the grouped
/// kernels remap workgroup ids so that each XCD runs a contiguous run of the tile order, whose
/// tiles share their rows of A across N, so an XCD reads about `1/XCDs` of A (one row tile's
/// rows more where its run starts mid-row).
fn work_features(e: &KernelEntry, w: &GroupedWork, splits: u32, arch: Arch, cus: u32) -> Features {
    work_features_at(e, w, splits, arch, cus, None)
}

/// [`work_features`] of a masked launch in grid order `remap` with `busiest` working
/// workgroups on the busiest XCD (`None`: the working tiles spread evenly, in runs): its
/// working tiles are counted as if every XCD had the busiest XCD's ([`Features::of_tiles`]
/// deals jobs evenly, and the busiest XCD is what the launch waits for). In the [`COLUMNS`]
/// order every XCD runs columns of every group, so its link moves all of A.
fn work_features_at(e: &KernelEntry, w: &GroupedWork, splits: u32, arch: Arch, cus: u32, busiest: Option<(f64, Remap)>) -> Features {
    let slots = e.slots_per_cu(arch).unwrap_or(1);
    let tb = TileBytes::of(e.block_m, e.block_n);
    let s = splits.clamp(1, MAX_SPLITS);
    // The busiest XCD reads the same B columns as the average one; its extra working tiles
    // share them.
    let columns = busiest.is_some_and(|(_, r)| r == COLUMNS);
    let (work, b_sharers) = match busiest.map(|(b, _)| b) {
        Some(b) if w.work > 0 => {
            let work = ((b * f64::from(tile::NUM_XCDS) / f64::from(s)).ceil() as u64).max(1);
            (work, w.b_sharers * work as f64 / w.work as f64)
        }
        _ => (w.work, w.b_sharers),
    };
    let mut f = Features::of_tiles(work, w.nkb, splits, u64::from(cus.max(1)), slots, b_sharers, w.hbm_bytes, tb);
    cap_fabric_a(&mut f, work, w.nkb, splits, tb, fabric_a_bound(w.a_bytes, !columns, w.nkb, tb));
    f
}

/// The most A bytes a grouped launch's busiest XCD moves over its fabric link when its tiles
/// read `a_bytes` of A from the layout's own rows: its share of them (`per_xcd`: each row tile
/// on the one XCD whose contiguous id run holds it; else all of A, as where every XCD runs
/// every group's columns) and one tile's A over `nkb` K blocks of tile bytes `tb` (a row tile
/// cut by the XCD's run).
fn fabric_a_bound(a_bytes: f64, per_xcd: bool, nkb: u64, tb: TileBytes) -> f64 {
    let share = if per_xcd { a_bytes / f64::from(tile::NUM_XCDS) } else { a_bytes };
    share + nkb as f64 * (tb.block - tb.b_block)
}

/// Lowers `f`'s fabric bytes, whose A part [`Features::of_tiles`] counts per tile (`tiles`
/// tiles of `nkb` K blocks in `splits` pieces, the busiest XCD's share of them), to at most
/// `cap` bytes of A.
fn cap_fabric_a(f: &mut Features, tiles: u64, nkb: u64, splits: u32, tb: TileBytes, cap: f64) {
    let s = u64::from(splits.max(1));
    let pieces = (tiles * s).div_ceil(u64::from(tile::NUM_XCDS)) as f64;
    let per_tile_a = pieces * nkb.div_ceil(s) as f64 * (tb.block - tb.b_block);
    f.fabric_bytes -= per_tile_a - per_tile_a.min(cap);
}

/// The modelled seconds of `tiles` tiles of kernel `e` in `splits` pieces (see
/// [`Features::of_tiles`]) under [`CostModel::cost_of`] (its own generated coefficients where
/// the model has them, else those of its [`dense_counterpart`]; `+∞` without either, so such a
/// kernel is chosen only when it is the only one left).
/// Also returns the compute term alone (seconds of the busiest CU), which breaks ties between
/// launches the memory term bounds alike. A masked launch's is the mean over the draws of its
/// row counts ([`masked_busiest_xcd`]).
fn grouped_estimate(model: &CostModel, e: &KernelEntry, w: &GroupedWork, splits: u32, remap: Remap, arch: Arch, cus: u32) -> (f64, f64) {
    let Some(c) = model.cost_of(e) else { return (f64::INFINITY, f64::INFINITY) };
    let Some(b) = &w.busiest_xcd else { return model.estimate_with(&c, &work_features(e, w, splits, arch, cus)) };
    // A masked launch: the mean over the draws of the counts of each draw's estimate (equal
    // busiest XCDs estimated once).
    let mut draws = b.busiest(splits, remap);
    draws.sort_unstable();
    let (mut total, mut compute) = (0.0, 0.0);
    for run in draws.chunk_by(|x, y| x == y) {
        let (t, cu) = model.estimate_with(&c, &work_features_at(e, w, splits, arch, cus, Some((f64::from(run[0]), remap))));
        let weight = run.len() as f64 / MASKED_DRAWS as f64;
        (total, compute) = (total + weight * t, compute + weight * cu);
    }
    (total, compute)
}

/// The tiles of an m-grouped layout's kernels, for [`ConfigError::ForcedTile`].
fn grouped_tiles(kind: GemmKind, weights: WeightLayout) -> &'static str {
    match (kind, weights) {
        (GemmKind::MGroupedMasked, WeightLayout::Preshuffled) => "32x128, 64x128, 128x128, 32x64 and 80x128 (m-grouped masked, pre-shuffled B)",
        (_, WeightLayout::Preshuffled) => "32x128, 64x128, 128x128 (m-grouped contiguous, pre-shuffled B)",
        _ => "64x64, 64x128, 128x128 (m-grouped, logical B)",
    }
}

/// Whether `e` is one of DeepGEMM's m-grouped kernels ([`registry::Spec::Contiguous`],
/// [`registry::Spec::Masked`], [`registry::Spec::MaskedSplitK`]) that [`plan_grouped`] plans,
/// not the MoE layer's contiguous split-K family ([`plan_contiguous_splitk`]).
pub fn is_deepgemm_grouped(e: &KernelEntry) -> bool {
    matches!(e.spec, registry::Spec::Contiguous(_) | registry::Spec::Masked(_) | registry::Spec::MaskedSplitK(_))
}

/// The registered kernels [`plan_grouped`] ranks for an m-grouped problem of `kind` on weights
/// in `weights` ([`is_deepgemm_grouped`]).
fn grouped_rows(kind: GemmKind, weights: WeightLayout) -> Vec<&'static KernelEntry> {
    registry::candidates(problem_of(kind), weights).filter(|e| is_deepgemm_grouped(e)).collect()
}

/// Plans with their compute terms, and the error of a grid left out for its size.
type GroupedPlans = (Vec<(Plan, f64)>, Option<ConfigError>);

/// Every plan of the grouped kernels `rows` on `desc` with its compute term ([`plan_grouped`]'s
/// candidates: data-parallel kernels unsplit, split-K ones with every split count `2 ..=
/// min(k/128, MAX_SPLITS)` whose working tiles fill at most one round of the device, or only
/// `forced_split`; a masked plan in the [`RUNS`] order, and in the [`COLUMNS`] order where
/// [`offers_columns`] or `forced_columns`), and the error of a grid past 32 bits if one was left
/// out.
fn grouped_plans(desc: &GemmDesc, rows: &[&'static KernelEntry], forced_split: Option<u32>, forced_columns: bool) -> Result<GroupedPlans, ConfigError> {
    let model = CostModel::for_arch(desc.arch)?;
    let (nkb, cus) = (desc.k / tile::SCALE_BLOCK_K, desc.cus.max(1));
    let mut all = Vec::new();
    let mut too_large = None;
    for &e in rows {
        let w = grouped_work(e, desc);
        let slots = e.slots_per_cu(desc.arch).unwrap_or(1);
        // A masked grid in either order (the planner's choice, a launch argument).
        let orders: &[Remap] = if w.busiest_xcd.is_some() && (forced_columns || offers_columns(desc)) { &[RUNS, COLUMNS] } else { &[RUNS] };
        let mut push = |splits: u32| {
            let grid = w.grid_tiles * u64::from(splits);
            match u32::try_from(grid) {
                Ok(g) => {
                    for &remap in orders {
                        let (estimate_s, compute_s) = grouped_estimate(model, e, &w, splits, remap, desc.arch, cus);
                        all.push((Plan { kernel: e, grid: g, splits, stream_k: None, remap, estimate_s }, compute_s));
                    }
                }
                Err(_) => too_large = Some(ConfigError::TooLarge { tensor: "grid", bytes: grid, limit: u64::from(u32::MAX) }),
            }
        };
        match e.schedule {
            ScheduleKind::DataParallel => push(1),
            ScheduleKind::SplitK if w.grid_tiles <= u64::from(e.max_tiles) => {
                for s in 2..=nkb.min(MAX_SPLITS) {
                    // As for the dense problems: the pieces stay within one round of the device.
                    if forced_split.is_none() && w.work * u64::from(s) > u64::from(cus) * u64::from(slots) {
                        break;
                    }
                    if forced_split.is_none_or(|f| f == s) {
                        push(s);
                    }
                }
            }
            _ => {}
        }
    }
    Ok((all, too_large))
}

/// Whether the planner offers a masked launch on `desc` in the [`COLUMNS`] order: where its
/// groups are fewer than the XCDs, so that in the [`RUNS`] order a group's tiles span several
/// XCDs and the XCD holding the largest count may run more rounds than the others. With as
/// many groups as XCDs or more, the runs already give each XCD whole groups; the columns order
/// would only even out the counts between groups, at the cost of every XCD reading all of A
/// over its fabric link, which the estimate cannot weigh yet: its HBM rate is fitted below what
/// a streaming launch reaches (4.2 against 4.5 TB/s on MI325X), its fabric rate is the link's
/// peak, so a launch the fabric binds looks no slower than one HBM binds (masked 8×100 over
/// (4096, 7168), 64×128 pipelined, modelled: 54.7 µs in runs, 62.7 in columns, where the
/// estimates are 64.3 and 62.1). A forced order ([`Overrides::remap`]) is planned at any group
/// count.
pub fn offers_columns(desc: &GemmDesc) -> bool {
    desc.kind == GemmKind::MGroupedMasked && desc.groups < tile::NUM_XCDS
}

/// Every candidate plan of the m-grouped problem `desc` on weights in `weights` (the kernels
/// [`plan_grouped`] ranks, each with every schedule it would consider), unranked: what the
/// tuner samples the grouped kernels' own coefficients over.
pub fn grouped_candidates(desc: &GemmDesc, weights: WeightLayout) -> Vec<Plan> {
    let rows = grouped_rows(desc.kind, weights);
    grouped_plans(desc, &rows, None, false).map(|(all, _)| all.into_iter().map(|(p, _)| p).collect()).unwrap_or_default()
}

/// Chooses the launch of an m-grouped problem (`desc.kind` contiguous or masked; DeepGEMM's
/// `m_grouped_fp8_gemm_nt_{contiguous,masked}`) on weights in `weights`: every registered
/// kernel of the problem and layout ([`registry::Spec::Contiguous`], [`registry::Spec::Masked`],
/// [`registry::Spec::MaskedSplitK`]; not the gathered-A / epilogue family of
/// [`plan_contiguous_splitk`]), the split-K ones with every split count `2 ..= min(k/128,
/// MAX_SPLITS)` whose working tiles fill at most one round of the device, ranked by the
/// generated cost model with the coefficients of each kernel's [`dense_counterpart`] and the
/// features of the grouped launch (module docs, "Grouped problems"). Overrides filter as for
/// [`plan`] (a tile alone runs unsplit; a forced split runs that count on a split-K kernel,
/// never reduced for lack of workspace); the workspace limit is handled as [`plan`]'s.
///
/// Errors: a forced stream-K schedule ([`ConfigError::ForcedStreamK`], no grouped stream-K
/// kernel), a tile the layout lacks ([`ConfigError::ForcedTile`]), a split count no split-K
/// kernel of the layout / tile / grid takes ([`ConfigError::ForcedSplit`]), a grid past 32
/// bits ([`ConfigError::TooLarge`]).
pub fn plan_grouped(desc: &GemmDesc, weights: WeightLayout, overrides: &Overrides, available: u64) -> Result<(Plan, Option<WorkspaceLimit>), ConfigError> {
    crate::config::validate(desc)?;
    if desc.kind == GemmKind::Dense {
        return Err(ConfigError::NoKernel { kind: desc.kind, arch: desc.arch });
    }
    if overrides.split == Some(0) {
        return Err(ConfigError::ForcedSplit { splits: "0".into(), expected: "at least 1".into() });
    }
    if let Some((g, dp)) = overrides.stream_k {
        return Err(ConfigError::ForcedStreamK {
            schedule: dp.map_or(format!("{g}"), |d| format!("{g}/{d}")),
            expected: format!("no stream-K (no stream-K kernel for the {} layout)", desc.kind),
        });
    }
    let rows = grouped_rows(desc.kind, weights);
    if let Some((bm, bn)) = overrides.tile
        && !rows.iter().any(|e| (e.block_m, e.block_n) == (bm, bn))
    {
        return Err(ConfigError::ForcedTile { tile: format!("{bm}x{bn}"), available: grouped_tiles(desc.kind, weights) });
    }
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let forced_split = overrides.split.filter(|&s| s > 1);
    if let Some(s) = forced_split {
        let split_rows: Vec<&&KernelEntry> = rows.iter().filter(|e| e.schedule == ScheduleKind::SplitK).collect();
        let of_tile: Vec<&&KernelEntry> = split_rows.iter().copied().filter(|e| overrides.tile.is_none_or(|t| t == (e.block_m, e.block_n))).collect();
        let err = |expected: String| Err(ConfigError::ForcedSplit { splits: s.to_string(), expected });
        if split_rows.is_empty() {
            return err(format!("1 (no split-K kernel for the {} layout with {weights} B)", desc.kind));
        }
        if of_tile.is_empty() {
            let (bm, bn) = overrides.tile.unwrap_or_default();
            let have: Vec<String> = split_rows.iter().map(|e| format!("{}x{}", e.block_m, e.block_n)).collect();
            return err(format!("1 (no {} split-K kernel for the {bm}x{bn} tile; {} have one)", crate::config::kind_name(desc.kind), have.join(" and ")));
        }
        let most = nkb.min(MAX_SPLITS);
        if s > most {
            return err(format!("at most {most} (k/128 = {nkb} blocks, MAX_SPLITS = {MAX_SPLITS})"));
        }
        if let Some(e) = of_tile.iter().find(|e| grouped_work(e, desc).grid_tiles > u64::from(e.max_tiles))
            && of_tile.iter().all(|e| grouped_work(e, desc).grid_tiles > u64::from(e.max_tiles))
        {
            let tiles = grouped_work(e, desc).grid_tiles;
            return err(format!("1 ({tiles} output tiles of {}x{}, more than {})", e.block_m, e.block_n, e.max_tiles));
        }
    }
    let (mut all, too_large) = grouped_plans(desc, &rows, forced_split, overrides.remap == Some(COLUMNS))?;
    all.retain(|(p, _)| passes(p, overrides));
    if let Some(e) = forced_kernel_error(overrides, rows.iter().copied()) {
        return Err(e);
    }
    let none = || {
        too_large.clone().unwrap_or_else(|| ConfigError::ForcedTile {
            tile: overrides.tile.map_or_else(|| "-".into(), |(bm, bn)| format!("{bm}x{bn}")),
            available: grouped_tiles(desc.kind, weights),
        })
    };
    // The least estimate; among equal ones (the same memory bound), one that needs no
    // workspace (splitting a memory-bound launch only adds partial tiles), then the least
    // compute term.
    let split_of = |p: &Plan| p.splits > 1;
    let best_of = |ps: &mut dyn Iterator<Item = &(Plan, f64)>| -> Option<Plan> {
        ps.min_by(|a, b| a.0.estimate_s.total_cmp(&b.0.estimate_s).then(split_of(&a.0).cmp(&split_of(&b.0))).then(a.1.total_cmp(&b.1))).map(|x| x.0)
    };
    let best = best_of(&mut all.iter()).ok_or_else(none)?;
    if best.workspace_floats(desc.arch) <= available || forced_split.is_some() {
        return Ok((best, None));
    }
    let fitting = best_of(&mut all.iter().filter(|(p, _)| p.workspace_floats(desc.arch) <= available)).ok_or_else(none)?;
    let limit = WorkspaceLimit { preferred: best.config(desc.arch), needed: best.workspace_floats(desc.arch), available };
    Ok((fitting, Some(limit)))
}

/// The [`GroupedWork`] of k-grouped kernel `e` ([`plan_kgrouped`]'s problem): `G · ⌈m/BM⌉ ·
/// ⌈n/BN⌉` tiles of `total_k/(128·G)` blocks, each group's B tile shared by its `⌈m/BM⌉` row
/// tiles, A, B and the f32 C read and D written once through HBM.
fn kgrouped_work(e: &KernelEntry, m: u32, n: u32, groups: u32, total_k: u64) -> GroupedWork {
    let g = u64::from(groups.max(1));
    let nkb = (total_k / g / u64::from(tile::SCALE_BLOCK_K)).max(1);
    let (mm, nn) = (u64::from(m), u64::from(n));
    let tiles = g * e.tiles(m, n);
    GroupedWork {
        work: tiles,
        grid_tiles: tiles,
        nkb,
        b_sharers: f64::from(m.div_ceil(e.block_m.max(1))),
        hbm_bytes: (total_k * (mm + nn) + 8 * g * mm * nn) as f64,
        a_bytes: (total_k * mm) as f64,
        busiest_xcd: None,
    }
}

/// The features of k-grouped kernel `e` on `groups` groups of `m × n` outputs over `total_k`
/// tokens (every group `total_k / groups`), as [`plan_kgrouped`] estimates it; what the tuner
/// fits the k-grouped kernels' own coefficients over.
pub fn kgrouped_features(e: &KernelEntry, m: u32, n: u32, groups: u32, total_k: u64, arch: Arch, cus: u32) -> Features {
    work_features(e, &kgrouped_work(e, m, n, groups, total_k), 1, arch, cus)
}

/// Chooses the kernel of a k-grouped problem (DeepGEMM's `k_grouped_fp8_gemm_tn_contiguous`:
/// `groups` groups of `m × n` f32 outputs over `total_k` tokens; the group sizes live on the
/// device, so every group is taken to have `total_k / groups`) on `cus` CUs: the registered
/// k-grouped kernel (the tile forced by [`Overrides::tile`], else every one) with the least
/// cost-model estimate — `G · ⌈m/BM⌉ · ⌈n/BN⌉` tiles of `total_k/(128·G)` blocks under the
/// coefficients of the [`dense_counterpart`] (the dense LDS kernel of the tile: the nearest
/// main loop, a documented stand-in), each group's B tile shared by its `⌈m/BM⌉` row tiles, and
/// A, B and the f32 C read and D written once through HBM. Ties go to the larger tile (less
/// operand traffic). The forced tile and kernel apply; the other overrides do not.
pub fn plan_kgrouped(m: u32, n: u32, groups: u32, total_k: u64, arch: Arch, cus: u32, overrides: &Overrides) -> Result<Plan, ConfigError> {
    let mut rows: Vec<&'static KernelEntry> = registry::candidates(Problem::KGrouped, WeightLayout::Logical).collect();
    if let Some((bm, bn)) = overrides.tile {
        rows.retain(|e| (e.block_m, e.block_n) == (bm, bn));
        if rows.is_empty() {
            return Err(ConfigError::ForcedTile { tile: format!("{bm}x{bn}"), available: "64x64, 128x128 (k-grouped)" });
        }
    }
    if let Some(e) = forced_kernel_error(overrides, rows.iter().copied()) {
        return Err(e);
    }
    if let Some(k) = overrides.kernel {
        rows.retain(|e| e.name() == k);
    }
    let model = CostModel::for_arch(arch)?;
    let mut best: Option<Plan> = None;
    for e in rows {
        let w = kgrouped_work(e, m, n, groups, total_k);
        let tiles = w.work;
        let (t, _) = grouped_estimate(model, e, &w, 1, RUNS, arch, cus);
        let grid = u32::try_from(tiles).map_err(|_| ConfigError::TooLarge { tensor: "grid", bytes: tiles, limit: u64::from(u32::MAX) })?;
        let larger = |b: &Plan| e.block_m * e.block_n > b.kernel.block_m * b.kernel.block_n;
        if best.as_ref().is_none_or(|b| t < b.estimate_s || (t == b.estimate_s && larger(b))) {
            best = Some(Plan { kernel: e, grid, splits: 1, stream_k: None, remap: RUNS, estimate_s: t });
        }
    }
    best.ok_or(ConfigError::ForcedTile { tile: "-".into(), available: "64x64, 128x128 (k-grouped)" })
}

/// One sample of the tuner: a launch's features and its modelled seconds.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// The launch's features.
    pub features: Features,
    /// The timing model's seconds.
    pub seconds: f64,
}

/// Fits one kernel's coefficients to `samples` (non-negative least squares on relative error,
/// over the samples that the compute term explains: a sample whose memory bound at `rates`
/// ([`CostModel::memory_at`]: its fill, and its bytes through HBM, or, scaled by the kernel's
/// measured `l2_scales` (block, other; [`KernelCost::l2_bytes`]), through the busiest XCD's
/// L2, or its [`Features::fabric_bytes`] through its link) exceeds the fitted compute time is
/// memory-bound: it fits only the `tail` coefficient, with the cycles its memory bound leaves
/// unexplained over its [`Features::chain`]; iterated to a fixed point). `slots` is the
/// kernel's workgroups per CU. `chain`: the kernel's finisher chain measured on its own
/// (`(chain_fixed, tail)` cycles, [`KernelCost::chain_fixed`]); it is then taken off every
/// split sample's time and not fitted (memory-bound split samples fit nothing).
pub fn fit_kernel(
    samples: &[Sample],
    slots: u32,
    clock_hz: f64,
    launch_s: f64,
    rates: MemoryRates,
    l2_scales: (f64, f64),
    chain: Option<(f64, f64)>,
) -> KernelCost {
    let s = slots.clamp(1, 8) as usize;
    // The store column only where a sample skips rows (an all-zero column would only perturb
    // the solver).
    let stores = samples.iter().any(|x| x.features.unstored > 0.0);
    // The first-batch column where a sample has batches after its first (else it is the
    // fixed column again).
    let firsts = samples.iter().any(|x| x.features.batches.iter().sum::<f64>() > 1.0);
    let store_col = stores.then_some(2 * s + 4);
    let first_col = firsts.then_some(2 * s + 4 + usize::from(stores));
    let cols = 2 * s + 4 + usize::from(stores) + usize::from(firsts);
    let row = |x: &Features| -> Vec<f64> {
        let mut r = vec![0.0; cols];
        for o in 0..8 {
            let oo = o.min(s - 1);
            r[oo] += x.blocks[o];
            r[s + oo] += x.batches[o];
        }
        r[2 * s] = x.partials;
        r[2 * s + 1] = x.reduces;
        r[2 * s + 2] = x.cold;
        r[2 * s + 3] = if chain.is_some() { 0.0 } else { x.chain };
        if let Some(j) = store_col {
            // Saved cycles: the coefficient is non-negative, the feature counts against.
            r[j] = -x.unstored;
        }
        if let Some(j) = first_col {
            r[j] = x.first_batch();
        }
        r
    };
    // Each sample's memory bound, seconds: it depends on the bandwidths and the L2 scales only,
    // not on the coefficients being fitted.
    let scales = to_cost(&vec![0.0; cols], s, l2_scales, store_col, first_col);
    let mem_s: Vec<f64> = samples.iter().map(|smp| CostModel::memory_at(&scales, &smp.features, rates)).collect();
    let mut use_: Vec<bool> = vec![true; samples.len()];
    let mut coef = vec![0.0; cols];
    for _ in 0..6 {
        let mut a = Vec::new();
        let mut b = Vec::new();
        for (i, smp) in samples.iter().enumerate() {
            let known = chain.map_or(0.0, |(a, b)| chain_cycles(a, b, smp.features.chain));
            let cycles = ((smp.seconds - launch_s).max(0.0) * clock_hz - known).max(0.0);
            let w = 1.0 / cycles.max(1.0);
            if use_[i] {
                a.push(row(&smp.features).into_iter().map(|v| v * w).collect::<Vec<_>>());
                b.push(cycles * w);
            } else if smp.features.chain > 0.0 && chain.is_none() {
                // Memory-bound: what the bound leaves of its time is the reduction chain.
                let mut r = vec![0.0; cols];
                r[2 * s + 3] = smp.features.chain * w;
                a.push(r);
                b.push((cycles - mem_s[i] * clock_hz) * w);
            }
        }
        coef = nnls(&a, &b, cols);
        let c = to_cost(&coef, s, l2_scales, store_col, first_col);
        let mut changed = false;
        for (i, smp) in samples.iter().enumerate() {
            let keep = CostModel::cu_cycles(&c, &smp.features) / clock_hz >= mem_s[i];
            if keep != use_[i] {
                changed = true;
                use_[i] = keep;
            }
        }
        if !changed || use_.iter().filter(|&&u| u).count() < cols {
            break;
        }
    }
    let mut c = to_cost(&coef, s, l2_scales, store_col, first_col);
    if let Some((a, b)) = chain {
        (c.chain_fixed, c.tail) = (a, b);
    }
    c
}

/// The coefficients of `fit_kernel`'s columns: `s` block and `s` fixed figures, partial,
/// reduce, cold, tail, then the store and first-batch figures at their columns where the fit
/// has them (0 where not).
fn to_cost(coef: &[f64], s: usize, (l2_block_scale, l2_other_scale): (f64, f64), store_col: Option<usize>, first_col: Option<usize>) -> KernelCost {
    let at = |col: Option<usize>| col.map_or(0.0, |j| coef[j]);
    let (store, first_batch) = (at(store_col), at(first_col));
    KernelCost {
        block: coef[..s].to_vec(),
        fixed: coef[s..2 * s].to_vec(),
        partial: coef[2 * s],
        reduce: coef[2 * s + 1],
        cold: coef[2 * s + 2],
        tail: coef[2 * s + 3],
        chain_fixed: 0.0,
        store,
        first_batch,
        memory: None,
        l2_block_scale,
        l2_other_scale,
    }
}

/// Non-negative least squares `min ‖A x − b‖², x ≥ 0` by cyclic coordinate descent on the
/// normal equations (a handful of unknowns; converges for any positive semi-definite `AᵀA`).
pub fn nnls(a: &[Vec<f64>], b: &[f64], cols: usize) -> Vec<f64> {
    let mut ata = vec![vec![0.0; cols]; cols];
    let mut atb = vec![0.0; cols];
    for (r, &y) in a.iter().zip(b) {
        for i in 0..cols {
            atb[i] += r[i] * y;
            for j in 0..cols {
                ata[i][j] += r[i] * r[j];
            }
        }
    }
    let mut x = vec![0.0; cols];
    for _ in 0..20_000 {
        let mut delta: f64 = 0.0;
        for i in 0..cols {
            if ata[i][i] <= 0.0 {
                continue;
            }
            let g: f64 = (0..cols).map(|j| ata[i][j] * x[j]).sum::<f64>() - atb[i];
            let nx = (x[i] - g / ata[i][i]).max(0.0);
            delta = delta.max((nx - x[i]).abs() / (1.0 + nx.abs()));
            x[i] = nx;
        }
        if delta < 1e-12 {
            break;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory figures no sample is bound by.
    fn no_memory() -> MemoryRates {
        MemoryRates { fill_s: 0.0, hbm_bytes_per_s: 1e18, l2_bytes_per_s: 1e18, fabric_bytes_per_s: 1e18 }
    }

    #[test]
    fn nnls_recovers_a_nonnegative_solution_and_clamps_a_negative_one() {
        // y = 2·x0 + 3·x1 exactly.
        let a: Vec<Vec<f64>> = (0..10).map(|i| vec![f64::from(i), f64::from(10 - i) * 0.5]).collect();
        let b: Vec<f64> = a.iter().map(|r| 2.0 * r[0] + 3.0 * r[1]).collect();
        let x = nnls(&a, &b, 2);
        assert!((x[0] - 2.0).abs() < 1e-6 && (x[1] - 3.0).abs() < 1e-6, "{x:?}");
        // y = x0 − x1: the best non-negative fit has x1 = 0.
        let b2: Vec<f64> = a.iter().map(|r| r[0] - r[1]).collect();
        let x2 = nnls(&a, &b2, 2);
        assert!(x2[1] == 0.0 && x2[0] > 0.0, "{x2:?}");
    }

    #[test]
    fn fit_kernel_recovers_generated_coefficients() {
        // Samples made by a known cost (compute-bound: a bandwidth no sample reaches) are
        // fitted back to it.
        let truth = KernelCost {
            block: vec![600.0, 900.0],
            fixed: vec![3000.0, 4000.0],
            partial: 500.0,
            reduce: 200.0,
            tail: 700.0,
            chain_fixed: 0.0,
            cold: 300.0,
            store: 800.0,
            first_batch: 0.0,
            memory: None,
            l2_block_scale: 1.0,
            l2_other_scale: 1.0,
        };
        let (clock, launch) = (1.8e9, 2e-6);
        let mut samples = Vec::new();
        for i in 0..40u32 {
            let mut f = Features::default();
            add_jobs(&mut f, u64::from(50 + 37 * i), f64::from(2 + i % 13), 304, 2, TileBytes::of(64, 128), 0.0);
            if i % 3 == 0 {
                f.partials = f64::from(i % 5);
                f.reduces = f64::from(i % 7);
                f.chain = f64::from(1 + i % 4);
            }
            f.cold = f.blocks.iter().sum::<f64>() / f64::from(1 + i % 4);
            if i % 4 == 1 {
                // Padding rows skipped: a share of every batch's rows not stored.
                f.unstored = f.batches.iter().sum::<f64>() * f64::from(1 + i % 3) / 8.0;
            }
            f.hbm_bytes = 1.0;
            samples.push(Sample { features: f, seconds: launch + (CostModel::cu_cycles(&truth, &f) + truth.tail * f.chain) / clock });
        }
        let got = fit_kernel(&samples, 2, clock, launch, no_memory(), (1.0, 1.0), None);
        let all = |c: &KernelCost| c.block.iter().chain(&c.fixed).chain([&c.partial, &c.reduce, &c.tail, &c.cold, &c.store]).copied().collect::<Vec<f64>>();
        for (g, t) in all(&got).into_iter().zip(all(&truth)) {
            assert!((g - t).abs() <= 1e-3 * t.max(1.0), "{got:?} vs {truth:?}");
        }
    }

    #[test]
    fn memory_bound_split_samples_fit_the_reduction_tail() {
        // Compute-bound whole-tile samples fit the batch terms; memory-bound split samples
        // (1 GB/s of HBM: every split sample's bytes take far longer than its compute) run
        // `tail` cycles per chained partial past their memory bound, and only that tail is
        // fitted from them.
        let (clock, launch, bw) = (1.8e9, 2e-6, 1e9);
        let truth = KernelCost { block: vec![600.0], fixed: vec![3000.0], tail: 400.0, l2_block_scale: 1.0, l2_other_scale: 1.0, ..Default::default() };
        let mut samples = Vec::new();
        for i in 0..30u32 {
            let mut f = Features::default();
            add_jobs(&mut f, u64::from(300 + 41 * i), f64::from(2 + i % 11), 304, 1, TileBytes::of(64, 128), 0.0);
            let mem = if i % 2 == 0 {
                f.hbm_bytes = 1.0;
                0.0
            } else {
                f.chain = f64::from(2 + i % 6);
                f.hbm_bytes = 1e5 + 1e3 * f64::from(i);
                f.hbm_bytes / bw
            };
            let compute = CostModel::cu_cycles(&truth, &f) / clock;
            samples.push(Sample { features: f, seconds: launch + compute.max(mem) + truth.tail * f.chain / clock });
        }
        let got = fit_kernel(&samples, 1, clock, launch, MemoryRates { hbm_bytes_per_s: bw, ..no_memory() }, (1.0, 1.0), None);
        assert!((got.tail - 400.0).abs() < 1.0, "{got:?}");
        assert!((got.block[0] - 600.0).abs() < 1.0 && (got.fixed[0] - 3000.0).abs() < 5.0, "{got:?}");
    }

    #[test]
    fn a_measured_chain_is_taken_off_the_split_samples_and_kept() {
        // Split samples pay a finisher chain of `a + b · s` cycles (a fixed part the fitted
        // `tail · s` cannot carry): given the measured line, the batch terms come out as the
        // truth's, the chain is the line's, and the estimate of a split launch pays it whole.
        let (clock, launch) = (1.8e9, 2e-6);
        let (a, b) = (2300.0, 520.0);
        let truth = KernelCost { block: vec![600.0], fixed: vec![3000.0], partial: 200.0, l2_block_scale: 1.0, l2_other_scale: 1.0, ..Default::default() };
        let mut samples = Vec::new();
        for i in 0..40u32 {
            let mut f = Features::default();
            add_jobs(&mut f, u64::from(300 + 41 * i), f64::from(2 + i % 11), 304, 1, TileBytes::of(64, 128), 0.0);
            f.hbm_bytes = 1.0;
            if i % 2 == 1 {
                f.chain = f64::from(2 + i % 6);
                f.partials = f64::from(1 + i % 3);
            }
            let chain = if f.chain > 0.0 { a + b * f.chain } else { 0.0 };
            samples.push(Sample { features: f, seconds: launch + (CostModel::cu_cycles(&truth, &f) + chain) / clock });
        }
        let got = fit_kernel(&samples, 1, clock, launch, no_memory(), (1.0, 1.0), Some((a, b)));
        assert_eq!((got.chain_fixed, got.tail), (a, b));
        assert!((got.block[0] - 600.0).abs() < 1.0 && (got.fixed[0] - 3000.0).abs() < 5.0 && (got.partial - 200.0).abs() < 1.0, "{got:?}");
        let model = CostModel {
            machine: "t".into(),
            clock_hz: clock,
            launch_s: launch,
            hbm_bytes_per_s: 1e18,
            l2_bytes_per_s: 1e18,
            fabric_bytes_per_s: 1e18,
            memory_fill_s: 0.0,
            kernels: HashMap::new(),
            features: FEATURES,
        };
        let split = Features { chain: 4.0, ..Features::default() };
        assert!((model.tail_s(&got, &split) - (a + 4.0 * b) / clock).abs() < 1e-15);
        // A launch without a chain (whole tiles) pays none of it.
        assert_eq!(model.tail_s(&got, &Features::default()), 0.0);
        // Written and read back, the chain's fixed part is kept; a file without the column
        // reads it as 0; a negative one is refused, naming it.
        let mut m = model.clone();
        m.kernels.insert("k".into(), got.clone());
        let text = m.to_csv("test");
        assert_eq!(CostModel::parse(&text).expect("round trip").kernels["k"].chain_fixed, a);
        let line = text.lines().find(|l| l.starts_with("kernel,k,")).expect("kernel row");
        // (chain_fixed is the fourth field from the end: first_batch and the kernel's own
        // memory figures follow it.)
        let without = line.rsplitn(5, ',').nth(4).expect("four last fields");
        assert_eq!(CostModel::parse(&text.replace(line, without)).expect("no chain_fixed column").kernels["k"].chain_fixed, 0.0);
        let negative = format!("{without},-5.0");
        assert!(CostModel::parse(&text.replace(line, &negative)).unwrap_err().contains("chain_fixed"));
    }

    #[test]
    fn skipped_padding_rows_count_as_unstored_batches() {
        // A contiguous split-K launch over 8 groups of 64 rows, every row stored, then only
        // half of them (the rest padding): the second counts half its batches as unstored,
        // and a store figure takes exactly that many times its cycles off the CU term.
        let e = registry::by_name("m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm64_bn128").expect("registered");
        let desc = GemmDesc::m_grouped_contiguous(512, 1024, 512, 8, Arch::Gfx942);
        let plan = Plan { kernel: e, grid: e.tiles(512, 1024) as u32, splits: 1, stream_k: None, remap: RUNS, estimate_s: f64::NAN };
        let full = contiguous_features_with(&plan, &desc, None, None);
        assert_eq!(full.unstored, 0.0);
        let half_bytes = ContiguousBytes::of(ContiguousVariant::Plain, 512.0, 256.0, 1024.0, 512.0, None, None);
        assert_eq!(half_bytes.stored, 0.5);
        let half = contiguous_features_with(&plan, &desc, Some(half_bytes), None);
        let batches = full.batches.iter().sum::<f64>();
        assert!(batches > 0.0 && half.unstored == 0.5 * batches, "{half:?}");
        // The activation epilogues store every row of their tiles.
        assert_eq!(ContiguousBytes::of(ContiguousVariant::Silu, 512.0, 256.0, 1024.0, 512.0, None, None).stored, 1.0);
        let c = KernelCost { block: vec![100.0, 100.0], fixed: vec![1000.0, 1000.0], store: 400.0, l2_block_scale: 1.0, ..Default::default() };
        assert_eq!(CostModel::cu_cycles(&c, &full) - CostModel::cu_cycles(&c, &half), 400.0 * half.unstored);
    }

    #[test]
    fn routed_group_sizes_load_the_busiest_xcd_with_more_b_at_32_rows() {
        // A DeepSeek-class layer's gate·up at 32 experts, top-8, 128 tokens (32 routed rows per
        // expert on average, 4096 × 6144 per expert): with 32-row tiles an expert takes one row
        // tile or two as the routing draws, and the XCD whose run holds the most one-tile
        // experts reads the most distinct B; the features count it from the draws, the even
        // count does not. 64-row tiles give every expert one row tile: the draws change little.
        let routing = Routing { tokens: 128, top_k: 8, experts: 32 };
        let (n, k) = (4096u32, 6144u32);
        let fabric = |bm: u32, rows: u32, routed: bool| -> f64 {
            let e = registry::KERNELS
                .iter()
                .find(|e| matches!(e.spec, registry::Spec::ContiguousSplitK(_)) && e.block_m == bm && !e.pipelined())
                .expect("registered");
            let desc = GemmDesc::m_grouped_contiguous(rows, n, k, 32, Arch::Gfx942);
            let plan = Plan { kernel: e, grid: e.tiles(rows, n) as u32, splits: 1, stream_k: None, remap: RUNS, estimate_s: f64::NAN };
            let draws = RoutedTiles::draw(routing, bm);
            contiguous_features_with(&plan, &desc, None, routed.then_some(&draws)).fabric_bytes
        };
        // The layouts `moe::expected_layout` gives: 1504 rows at 32, 2112 at 64.
        let (even32, drawn32) = (fabric(32, 1504, false), fabric(32, 1504, true));
        let (even64, drawn64) = (fabric(64, 2112, false), fabric(64, 2112, true));
        assert!(drawn32 > 1.25 * even32, "32 rows: {drawn32} drawn vs {even32} even");
        assert!((drawn64 / even64 - 1.0).abs() < 0.10, "64 rows: {drawn64} drawn vs {even64} even");
        assert!(drawn32 > drawn64, "{drawn32} vs {drawn64}");
        // Planned with the routing, the 32-row launch's estimate is higher than without it.
        let q = ContiguousQuery {
            rows: 1504,
            n,
            k,
            active: 32,
            arch: Arch::Gfx942,
            cus: 304,
            available: 0,
            forced: Some(1),
            variant: ContiguousVariant::Plain,
            pipelined: Some(false),
            bytes: None,
            routing: None,
        };
        let plain = plan_contiguous_splitk(32, &q).unwrap().estimate_s;
        let routed = plan_contiguous_splitk(32, &ContiguousQuery { routing: Some(routing), ..q }).unwrap().estimate_s;
        assert!(routed > 1.01 * plain, "{routed} vs {plain}");
    }

    #[test]
    fn a_contiguous_launch_reads_its_own_rows_a_once_per_xcd_and_gathered_rows_at_most_once() {
        // 257 groups of two 32-row tiles over 4 column tiles, 48 K blocks, data-parallel: the
        // busiest XCD runs ⌈2056/8⌉ = 257 tiles. Over its fabric link: B once per group's 2 row
        // tiles, and A — of the layout's own rows — the XCD's eighth of it and one tile's (its
        // row tiles' columns share it in the L2), not the 257 tiles' A blocks.
        let (groups, rows, n, k) = (257u32, 257 * 64, 512u32, 6144u32);
        let desc = GemmDesc { cus: 304, ..GemmDesc::m_grouped_contiguous(rows, n, k, groups, Arch::Gfx942) };
        let e = registry::by_name("m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm32_bn128").unwrap();
        let plan = Plan { kernel: e, grid: 257 * 2 * 4, splits: 1, stream_k: None, remap: RUNS, estimate_s: f64::NAN };
        let tb = TileBytes::of(32, 128);
        let (a_block, b_block) = (tb.block - tb.b_block, tb.b_block);
        let pieces = 257.0;
        let b = pieces * 48.0 * b_block / 2.0;
        let own = contiguous_features_with(&plan, &desc, None, None);
        let a_own = f64::from(rows) * f64::from(k) / 8.0 + 48.0 * a_block;
        assert!((own.fabric_bytes - (b + a_own + pieces * tb.out)).abs() < 1e-6, "{}", own.fabric_bytes);
        // Gathered from 1024 token rows: every XCD may need any of them, at most all once.
        let gathered = ContiguousBytes::of(ContiguousVariant::Plain, f64::from(rows), f64::from(rows), f64::from(n), f64::from(k), Some(1024.0), None);
        assert!(gathered.gathered && !ContiguousBytes::of(ContiguousVariant::Plain, 1.0, 1.0, 1.0, 1.0, None, None).gathered);
        let g = contiguous_features_with(&plan, &desc, Some(gathered), None);
        assert!((g.fabric_bytes - (b + 1024.0 * 6144.0 + pieces * tb.out)).abs() < 1e-6, "{}", g.fabric_bytes);
        // Either way below the per-tile count (every tile's A blocks).
        assert!(own.fabric_bytes < b + pieces * 48.0 * a_block);
    }

    #[test]
    fn jobs_are_dealt_round_robin_and_batched_by_slots() {
        let mut f = Features::default();
        // 10 jobs of 4 blocks on 4 CUs, 2 slots: the busiest CU gets 3 jobs: one batch of 2,
        // one of 1.
        let tb = TileBytes::of(64, 128);
        add_jobs(&mut f, 10, 4.0, 4, 2, tb, 7.0);
        assert_eq!((f.blocks[1], f.batches[1], f.blocks[0], f.batches[0]), (4.0, 1.0, 4.0, 1.0));
        // Over 8 XCDs the busiest gets 2 of the 10 jobs.
        assert_eq!((f.l2_block_bytes, f.l2_other_bytes), (2.0 * 4.0 * tb.block, 2.0 * 7.0));
        let mut g = Features::default();
        add_jobs(&mut g, 3, 5.0, 4, 2, tb, 0.0);
        assert_eq!((g.blocks[0], g.batches[0], g.batches[1]), (5.0, 1.0, 0.0));
        assert_eq!(g.l2_block_bytes, 5.0 * tb.block);
    }

    #[test]
    fn tile_bytes_by_hand() {
        // 64x128: A 64·128 + B 128·128 FP8 bytes, 64 A scales and one B scale per block.
        let tb = TileBytes::of(64, 128);
        assert_eq!(tb.block, 192.0 * 128.0 + 4.0 * 64.0 + 4.0);
        assert_eq!((tb.out, tb.partial), (2.0 * 64.0 * 128.0, 4.0 * 64.0 * 128.0));
        assert_eq!(tb.b_block, 128.0 * 128.0 + 4.0);
        // A split launch: 4 tiles × 2 pieces of 3 blocks (K = 6 blocks) over 8 XCDs: the busiest
        // XCD runs one piece (its partial) and finishes one tile (2 partials read, D stored).
        let f = Features::of_tiles(4, 6, 2, 304, 2, 1.0, 0.0, tb);
        assert_eq!(f.l2_block_bytes, 3.0 * tb.block);
        assert_eq!(f.l2_other_bytes, tb.partial + 2.0 * tb.partial + tb.out);
        // Its fabric link: one piece's A and B (B shared by no one: one sharer), its partial,
        // and the tile it finishes (D stored; the 2 partials it reads are L2 hits). Files of
        // features version 1 count the read-back over the link too.
        let a_block = tb.block - tb.b_block;
        assert_eq!(f.fabric_bytes, 3.0 * (a_block + tb.b_block) + tb.out + tb.partial);
        assert_eq!(f.fabric_v1_extra, 2.0 * tb.partial);
        let v1 = CostModel { features: 1, ..CostModel::default() };
        assert_eq!(v1.versioned(&f).fabric_bytes, 3.0 * (a_block + tb.b_block) + tb.out + tb.partial + 2.0 * tb.partial);
        assert_eq!(CostModel { features: FEATURES, ..CostModel::default() }.versioned(&f).fabric_bytes, f.fabric_bytes);
        // gfx942's shipped file is fitted on version 2; gfx950's predates it (no `features`
        // row) and estimates as it was fitted.
        assert_eq!(CostModel::for_arch(Arch::Gfx942).unwrap().features, FEATURES);
        assert_eq!(CostModel::for_arch(Arch::Gfx950).unwrap().features, 1);
        // Written and read back, a version is kept.
        let v2 = CostModel { features: FEATURES, clock_hz: 1e9, hbm_bytes_per_s: 1e12, l2_bytes_per_s: 1e12, fabric_bytes_per_s: 1e12, ..CostModel::default() };
        assert_eq!(CostModel::parse(&v2.to_csv("t")).unwrap().features, FEATURES);
        // An unknown version is refused, naming it.
        assert!(CostModel::parse("features,9\nmachine,t,1e9,1e-6,1e12,1e12,1e12\n").unwrap_err().contains("features version"));
    }

    #[test]
    fn fabric_bytes_by_hand() {
        let tb = TileBytes::of(64, 128);
        let (a, b) = (64.0 * 128.0 + 4.0 * 64.0, 128.0 * 128.0 + 4.0);
        // Data-parallel, 4 × 16 tiles of 64 × 128 over 10 K blocks: 64 ids, 8 per XCD, all in
        // the one panel (4 rows, M fastest): XCD 0 runs ids 0..8 = all 4 rows of columns 0 and 1.
        let dp = fabric_bytes(4, 16, 10, 1, tb);
        assert_eq!(dp, (4.0 * a + 2.0 * b) * 10.0 + 8.0 * 2.0 * 64.0 * 128.0);
        // Split 4 of a 2 × 9 grid over 8 K blocks (72 ids, 9 per XCD, 2 blocks per piece; tile
        // t at row t mod 2, column t / 2): XCD 3 runs piece 3 of tile 6 and all of tiles 7 and
        // 8 — row 0 over all four ranges (tiles 6 and 8), row 1 over all four, column 3 over
        // all four (tiles 6 and 7), column 4 over all four: 16 blocks of A and 16 of B, the
        // most of any XCD (XCD 0: 16 and 10). Each piece stores its partial, each tile D; the
        // partials are read back from the L2.
        let sk = fabric_bytes(2, 9, 8, 4, tb);
        let out = 9.0 * 4.0 * 64.0 * 128.0 + 9.0 / 4.0 * 2.0 * 64.0 * 128.0;
        assert!((sk - (16.0 * a + 16.0 * b + out)).abs() < 1e-6, "{sk}");
        // Against every id mapped as the split-K kernels map it (`xcd_remap`, split fastest,
        // M-fastest tiles, `split_range`), over a few grids.
        for (tm, tn, nkb, s) in [(3u64, 18u64, 128u64, 4u64), (1, 152, 32, 2), (2, 36, 112, 3), (5, 7, 13, 6)] {
            let grid = tm * tn * s;
            let mut worst = 0.0f64;
            for x in 0..8u32 {
                let (mut arows, mut bcols) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
                let mut ids = 0u64;
                for p in (u64::from(x)..grid).step_by(8) {
                    let id = u64::from(tile::xcd_remap(p as u32, grid as u32, 8));
                    let (t, j) = (id / s, id % s);
                    arows.insert((t % tm, j));
                    bcols.insert((t / tm, j));
                    ids += 1;
                }
                let kb = |j: u64| f64::from(tile::split_range(j as u32, s as u32, nkb as u32).1);
                let bytes = arows.iter().map(|&(_, j)| kb(j)).sum::<f64>() * a
                    + bcols.iter().map(|&(_, j)| kb(j)).sum::<f64>() * b
                    + ids as f64 * tb.partial
                    + ids as f64 / s as f64 * tb.out;
                worst = worst.max(bytes);
            }
            let got = fabric_bytes(tm, tn, nkb, s, tb);
            assert!((got - worst).abs() < 1e-6 * worst, "{tm}×{tn} split {s}: {got} vs {worst}");
        }
        // The busiest XCD: one more id on the first XCDs when the grid does not divide.
        assert!(fabric_bytes(4, 16, 10, 1, tb) <= fabric_bytes(4, 17, 10, 1, tb));
        assert_eq!(fabric_bytes(0, 16, 10, 1, tb), 0.0);
    }

    #[test]
    fn the_l2_bound_takes_over_when_it_is_the_longer() {
        let c = KernelCost {
            block: vec![1.0],
            fixed: vec![0.0],
            partial: 0.0,
            reduce: 0.0,
            tail: 0.0,
            chain_fixed: 0.0,
            cold: 0.0,
            store: 125.0,
            first_batch: 0.0,
            memory: None,
            l2_block_scale: 1.5,
            l2_other_scale: 2.0,
        };
        let model = CostModel {
            machine: "t".into(),
            clock_hz: 1e9,
            launch_s: 1e-6,
            hbm_bytes_per_s: 1e18,
            l2_bytes_per_s: 1e9,
            fabric_bytes_per_s: 1e18,
            memory_fill_s: 0.0,
            kernels: HashMap::new(),
            features: FEATURES,
        };
        let f = Features { l2_block_bytes: 1000.0, l2_other_bytes: 10.0, ..Features::default() };
        assert_eq!(c.l2_bytes(&f), 1520.0);
        assert_eq!(model.memory_s(&c, &f), 1520.0 / 1e9);
        // Written and read back, the model keeps its bandwidths and scales.
        let mut m2 = model.clone();
        m2.kernels.insert("k".into(), c.clone());
        let back = CostModel::parse(&m2.to_csv("test")).expect("round trip");
        assert_eq!((back.l2_bytes_per_s, back.fabric_bytes_per_s), (1e9, 1e18));
        assert_eq!((back.kernels["k"].l2_block_scale, back.kernels["k"].l2_other_scale, back.kernels["k"].store), (1.5, 2.0, 125.0));
        // A file written before the store (and chain_fixed, first_batch) figures reads with none.
        let old = m2.to_csv("test").replace(",125.0,0.0,0.0,0e0,0e0\n", "\n");
        assert_ne!(old, m2.to_csv("test"));
        assert_eq!(CostModel::parse(&old).expect("old format").kernels["k"].store, 0.0);
        // A non-positive block scale is refused, naming the field.
        let bad = m2.to_csv("test").replace(",1.500,2.000,", ",0.000,2.000,");
        assert!(CostModel::parse(&bad).unwrap_err().contains("l2_block_scale"));
    }

    #[test]
    fn a_memory_fill_and_a_first_batch_figure_are_fitted_estimated_and_kept() {
        // Samples of many batches per CU where the first batch costs 2,000 cycles more than
        // the others (its prologue overlaps nothing): the fit finds that figure and the
        // per-batch one, and estimates a one-batch and a 20-batch launch as the truth does.
        let (clock, launch) = (1.8e9, 2e-6);
        let truth = KernelCost { block: vec![600.0], fixed: vec![3000.0], first_batch: 2000.0, l2_block_scale: 1.0, l2_other_scale: 1.0, ..Default::default() };
        let mut samples = Vec::new();
        for i in 0..40u32 {
            let mut f = Features::default();
            add_jobs(&mut f, u64::from(200 + 97 * i), f64::from(2 + i % 11), 304, 1, TileBytes::of(64, 128), 0.0);
            f.hbm_bytes = 1.0;
            samples.push(Sample { features: f, seconds: launch + CostModel::cu_cycles(&truth, &f) / clock });
        }
        assert!(samples.iter().any(|s| s.features.first_batch() == 1.0 && s.features.batches.iter().sum::<f64>() > 5.0));
        let got = fit_kernel(&samples, 1, clock, launch, no_memory(), (1.0, 1.0), None);
        assert!((got.first_batch - 2000.0).abs() < 20.0 && (got.fixed[0] - 3000.0).abs() < 5.0 && (got.block[0] - 600.0).abs() < 1.0, "{got:?}");
        let one = Features { blocks: [4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], batches: [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], ..Features::default() };
        assert_eq!(CostModel::cu_cycles(&truth, &one), 4.0 * 600.0 + 3000.0 + 2000.0);
        let twenty = Features { blocks: [80.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], batches: [20.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], ..Features::default() };
        assert_eq!(CostModel::cu_cycles(&truth, &twenty), 80.0 * 600.0 + 20.0 * 3000.0 + 2000.0);
        assert_eq!(CostModel::cu_cycles(&truth, &Features::default()), 0.0);
        // The fill adds to the memory bound whichever bandwidth binds, and to a separate pass.
        let model = CostModel {
            machine: "t".into(),
            clock_hz: clock,
            launch_s: launch,
            hbm_bytes_per_s: 1e12,
            l2_bytes_per_s: 1e18,
            fabric_bytes_per_s: 5e11,
            memory_fill_s: 1.5e-6,
            kernels: HashMap::new(),
            features: FEATURES,
        };
        let hbm = Features { hbm_bytes: 1e6, fabric_bytes: 1e5, ..Features::default() };
        assert!((model.memory_s(&truth, &hbm) - (1.5e-6 + 1e-6)).abs() < 1e-15);
        let fabric = Features { hbm_bytes: 1e5, fabric_bytes: 1e6, ..Features::default() };
        assert!((model.memory_s(&truth, &fabric) - (1.5e-6 + 2e-6)).abs() < 1e-15);
        assert!((model.pass_s(2e6) - (launch + 1.5e-6 + 2e-6)).abs() < 1e-15);
        // Written and read back both figures are kept; a file without them reads 0 for each;
        // negative ones are refused, naming them.
        let mut m = model.clone();
        m.kernels.insert("k".into(), truth.clone());
        let text = m.to_csv("test");
        let back = CostModel::parse(&text).expect("round trip");
        assert_eq!((back.memory_fill_s, back.kernels["k"].first_batch), (1.5e-6, 2000.0));
        let machine = text.lines().find(|l| l.starts_with("machine,")).expect("machine row");
        let old_machine = machine.rsplit_once(',').expect("a last field").0;
        let kernel = text.lines().find(|l| l.starts_with("kernel,k,")).expect("kernel row");
        // The kernel row without first_batch and the kernel's own memory figures after it.
        let old_kernel = kernel.rsplitn(4, ',').last().expect("fields before the last three");
        let old = CostModel::parse(&text.replace(machine, old_machine).replace(kernel, old_kernel)).expect("files before the fill and first_batch figures");
        assert_eq!((old.memory_fill_s, old.kernels["k"].first_batch), (0.0, 0.0));
        assert!(CostModel::parse(&text.replace(machine, &format!("{old_machine},-1e-6"))).unwrap_err().contains("memory_fill_s"));
        assert!(CostModel::parse(&text.replace(kernel, &format!("{old_kernel},-3.0"))).unwrap_err().contains("first_batch"));
    }

    #[test]
    fn a_kernels_own_memory_figures_estimate_its_launches_and_are_kept() {
        // A kernel with its own HBM rate and fill is bound by them; another kernel of the
        // same model by the machine's; both survive a round trip, and a file without them
        // (or with 0,0) reads the machine's.
        let model = CostModel {
            machine: "t".into(),
            clock_hz: 1e9,
            launch_s: 1e-6,
            hbm_bytes_per_s: 1e12,
            l2_bytes_per_s: 1e18,
            fabric_bytes_per_s: 1e18,
            memory_fill_s: 1e-6,
            kernels: HashMap::new(),
            features: FEATURES,
        };
        let plain = KernelCost { block: vec![1.0], fixed: vec![0.0], l2_block_scale: 1.0, l2_other_scale: 1.0, ..Default::default() };
        let own = KernelCost { memory: Some(KernelMemory { hbm_bytes_per_s: 2e12, fill_s: 0.5e-6 }), ..plain.clone() };
        let f = Features { hbm_bytes: 4e6, ..Features::default() };
        assert!((model.memory_s(&plain, &f) - (1e-6 + 4e-6)).abs() < 1e-15);
        assert!((model.memory_s(&own, &f) - (0.5e-6 + 2e-6)).abs() < 1e-15);
        assert!((model.estimate_with(&own, &f).0 - (1e-6 + 2.5e-6)).abs() < 1e-15);
        let mut m = model.clone();
        m.kernels.insert("own".into(), own.clone());
        m.kernels.insert("plain".into(), plain.clone());
        let text = m.to_csv("test");
        let back = CostModel::parse(&text).expect("round trip");
        assert_eq!(back.kernels["own"].memory, own.memory);
        assert_eq!(back.kernels["plain"].memory, None);
        let row = text.lines().find(|l| l.starts_with("kernel,own,")).expect("kernel row");
        let fields: Vec<&str> = row.split(',').collect();
        let without = fields[..fields.len() - 2].join(",");
        assert_eq!(CostModel::parse(&text.replace(row, &without)).expect("a file before the figures").kernels["own"].memory, None);
        let one = fields[..fields.len() - 1].join(",");
        assert!(CostModel::parse(&text.replace(row, &one)).unwrap_err().contains("both or neither"));
        let head = fields[..fields.len() - 2].join(",");
        for bad in ["-1e12,0", "2e12,-1e-6", "0,1e-6"] {
            let err = CostModel::parse(&text.replace(row, &format!("{head},{bad}"))).unwrap_err();
            assert!(err.contains("own hbm_bytes_per_s"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_forced_kernel_of_another_problem_is_a_typed_error() {
        let grouped = "m_grouped_fp8_gemm_nt_masked_bs_pipe_bm64_bn128";
        let o = Overrides::NONE.with_kernel(grouped).unwrap();
        let desc = GemmDesc::dense(256, 4096, 1024, Arch::Gfx942);
        let e = plan(&desc, WeightLayout::Preshuffled, &o, u64::MAX).unwrap_err();
        assert!(
            matches!(&e, ConfigError::ForcedKernel { kernel, expected } if kernel == grouped && expected.contains("fp8_gemm_nt_bs_pipe_rg2_bm128_bn128")),
            "{e}"
        );
        let dense = Overrides::NONE.with_kernel("fp8_gemm_nt_bs_pipe_bm64_bn128").unwrap();
        let e = plan_kgrouped(256, 256, 2, 1024, Arch::Gfx942, 304, &dense).unwrap_err();
        assert!(matches!(&e, ConfigError::ForcedKernel { expected, .. } if expected.contains("k_grouped_fp8_gemm_tn_contiguous_bm64_bn64")), "{e}");
        // A k-grouped kernel forced by name is the one planned.
        let kg = Overrides::NONE.with_kernel("k_grouped_fp8_gemm_tn_contiguous_bm64_bn64").unwrap();
        assert_eq!(plan_kgrouped(256, 256, 2, 1024, Arch::Gfx942, 304, &kg).unwrap().kernel.name(), "k_grouped_fp8_gemm_tn_contiguous_bm64_bn64");
        let e = Overrides::NONE.with_kernel("no_such_kernel").unwrap_err();
        assert!(matches!(&e, ConfigError::ForcedKernel { kernel, .. } if kernel == "no_such_kernel"), "{e}");
    }

    #[test]
    fn every_dense_kernel_has_candidates_and_coefficients() {
        let model = CostModel::for_arch(Arch::Gfx942).expect("embedded gfx942 cost model parses");
        for e in registry::KERNELS.iter().filter(|e| e.problem == Problem::Dense) {
            let c = model.kernels.get(e.name()).unwrap_or_else(|| panic!("{} has no generated coefficients", e.name()));
            assert_eq!(c.block.len() as u32, e.slots_per_cu(Arch::Gfx942).unwrap(), "{}: one figure per concurrency", e.name());
        }
        for weights in [WeightLayout::Logical, WeightLayout::Preshuffled] {
            for (m, n, k) in [(1, 4096, 7168), (64, 2112, 7168), (1000, 7168, 2048), (4096, 24576, 1536)] {
                let desc = GemmDesc::dense(m, n, k, Arch::Gfx942);
                let c = candidates(&desc, weights);
                assert!(c.iter().any(|p| p.kernel.schedule == ScheduleKind::DataParallel), "{m}x{n}x{k} {weights}");
                let (p, _) = plan(&desc, weights, &Overrides::NONE, u64::MAX).expect("a plan");
                assert!(p.estimate_s.is_finite() && p.estimate_s > 0.0, "{p}");
                assert_eq!(p.kernel.weights, weights);
                for q in &c {
                    let est = model.estimate(q, &desc);
                    assert!(est >= p.estimate_s, "{p} is not the smallest estimate: {q} {est}");
                }
            }
        }
    }

    #[test]
    fn every_grouped_kernel_has_a_dense_counterpart_with_coefficients() {
        for arch in Arch::ALL {
            let model = CostModel::for_arch(arch).expect("embedded cost model parses");
            let grouped = registry::KERNELS.iter().filter(|e| {
                matches!(e.spec, registry::Spec::Contiguous(_) | registry::Spec::Masked(_) | registry::Spec::MaskedSplitK(_) | registry::Spec::KGrouped(_))
            });
            for e in grouped {
                let d = dense_counterpart(e).unwrap_or_else(|| panic!("{e}: no dense counterpart"));
                assert!(model.kernels.contains_key(d.name()), "{}: {e}: {} has no coefficients", arch.name(), d.name());
                assert_eq!((d.weights, d.problem), (e.weights, Problem::Dense), "{e} → {d}");
            }
        }
        let name = |n: &str| dense_counterpart(registry::by_name(n).unwrap()).unwrap().name();
        assert_eq!(name("m_grouped_fp8_gemm_nt_masked_bs_pipe_bm32_bn64"), "fp8_gemm_nt_bs_pipe_bm32_bn64");
        assert_eq!(name("m_grouped_fp8_gemm_nt_masked_splitk_bs_bm64_bn128"), "fp8_gemm_nt_splitk_bs_bm64_bn128");
        assert_eq!(name("m_grouped_fp8_gemm_nt_contiguous_bm64_bn64"), "fp8_gemm_nt_bm64_bn64");
        assert_eq!(name("k_grouped_fp8_gemm_tn_contiguous_bm128_bn128"), "fp8_gemm_nt_bm128_bn128");
    }

    #[test]
    fn grouped_work_by_hand() {
        let e = |n: &str| registry::by_name(n).unwrap();
        // 32 experts in 4096 rows: 64-row tiles skip 16 half-blocks per column tile (of 64),
        // 128-row tiles none, 32-row ones 1.5 per group (48).
        let desc = GemmDesc::m_grouped_contiguous(4096, 4096, 7168, 32, Arch::Gfx942);
        let w = grouped_work(e("m_grouped_fp8_gemm_nt_contiguous_bm64_bn64"), &desc);
        assert_eq!((w.grid_tiles, w.work, w.nkb), (64 * 64, (64 - 16) * 64, 56));
        assert_eq!(w.b_sharers, 48.0 / 32.0);
        assert_eq!(grouped_work(e("m_grouped_fp8_gemm_nt_contiguous_bm128_bn128"), &desc).work, 32 * 32);
        assert_eq!(grouped_work(e("m_grouped_fp8_gemm_nt_contiguous_bs_bm32_bn128"), &desc).work, (128 - 48) * 32);
        // Empty groups do not count: 32 experts but only 2 aligned blocks.
        let small = GemmDesc::m_grouped_contiguous(256, 4096, 7168, 32, Arch::Gfx942);
        assert_eq!(grouped_work(e("m_grouped_fp8_gemm_nt_contiguous_bm64_bn64"), &small).work, 4 * 64 - 64);
        // Masked: the grid from m_max, the work from expected_m (clamped to 1 ..= m_max).
        let masked = GemmDesc::m_grouped_masked(4096, 4096, 7168, 4, 8, Arch::Gfx942);
        let w = grouped_work(e("m_grouped_fp8_gemm_nt_masked_bm64_bn64"), &masked);
        assert_eq!((w.grid_tiles, w.work, w.b_sharers), (4 * 64 * 64, 4 * 64, 1.0));
        assert_eq!(w.hbm_bytes, (4 * 8 * 7168 + 4 * 4096 * 7168 + 2 * 4 * 8 * 4096) as f64);
        let zero = GemmDesc::m_grouped_masked(4096, 4096, 7168, 4, 0, Arch::Gfx942);
        assert_eq!(grouped_work(e("m_grouped_fp8_gemm_nt_masked_bm64_bn64"), &zero).work, 4 * 64);
    }

    #[test]
    fn contiguous_splitk_kernels_are_estimated_with_their_own_samples() {
        use registry::Spec;
        for arch in [Arch::Gfx942, Arch::Gfx950] {
            let model = CostModel::for_arch(arch).unwrap();
            for e in registry::KERNELS.iter() {
                let family = matches!(e.spec, Spec::ContiguousSplitK(_) | Spec::ContiguousScatter(_) | Spec::ContiguousSilu(_) | Spec::ContiguousSiluQa(_));
                let twin = contiguous_splitk_twin(e);
                assert_eq!(twin.is_some(), family, "{}", e.name());
                let Some(t) = twin else { continue };
                // The plain kernel of the same tile and loop, with coefficients of its own.
                assert!(matches!(t.spec, Spec::ContiguousSplitK(_)), "{}", e.name());
                assert_eq!((t.block_m, t.block_n, t.pipelined()), (e.block_m, e.block_n, e.pipelined()), "{}", e.name());
                let plain = model.kernels.get(t.name()).unwrap_or_else(|| panic!("{}: no coefficients for {}", arch.name(), t.name()));
                // A variant sampled on launches of its own is estimated with its own
                // coefficients, the others with their plain twin's.
                let own = model.kernels.get(e.name()).unwrap_or(plain);
                assert_eq!(&*model.cost_of(e).unwrap(), own, "{}", e.name());
            }
        }
        // gfx942's family: the gate·up kernels with the activation epilogue (one of them
        // quantizing its A loads) have coefficients of their own, and every sampled kernel of
        // the family (three plain, four activation) one HBM rate and fill of its own; no other
        // kernel has own memory figures.
        let gfx942 = CostModel::for_arch(Arch::Gfx942).unwrap();
        for e in registry::KERNELS.iter().filter(|e| matches!(e.spec, Spec::ContiguousSilu(_) | Spec::ContiguousSiluQa(_))) {
            assert!(gfx942.kernels.contains_key(e.name()), "{}", e.name());
        }
        let own: Vec<(&String, KernelMemory)> = gfx942.kernels.iter().filter_map(|(n, c)| c.memory.map(|m| (n, m))).collect();
        assert_eq!(own.len(), 7, "{own:?}");
        for (n, m) in &own {
            assert!(n.starts_with("m_grouped_fp8_gemm_nt_contiguous_splitk_"), "{n}");
            assert_eq!(*m, own[0].1, "{n}: one pair of figures for the family");
            assert!(m.hbm_bytes_per_s > 0.5 * gfx942.hbm_bytes_per_s && m.hbm_bytes_per_s < 1.5 * gfx942.hbm_bytes_per_s, "{n}: {m:?}");
        }
        // The features: 257 groups of two 32-row tiles over 4 column tiles, 48 K blocks; each
        // group's B shared by its 2 row tiles (half the blocks cold), every group's B once in HBM.
        let desc = GemmDesc { cus: 304, ..GemmDesc::m_grouped_contiguous(257 * 64, 512, 6144, 257, Arch::Gfx942) };
        let e = registry::by_name("m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm32_bn128").unwrap();
        let plan = Plan { kernel: e, grid: 257 * 2 * 4, splits: 1, stream_k: None, remap: RUNS, estimate_s: f64::NAN };
        let f = Features::of(&plan, &desc);
        let blocks: f64 = f.blocks.iter().sum();
        assert!((f.cold - blocks / 2.0).abs() < 1e-9, "cold {} of {blocks} blocks", f.cold);
        let hbm = (257.0 * 64.0) * 6144.0 + 257.0 * 512.0 * 6144.0 + 2.0 * (257.0 * 64.0) * 512.0;
        assert_eq!(f.hbm_bytes, hbm);
        // Planning picks among the family's launches by that estimate, finite everywhere.
        let q = ContiguousQuery {
            rows: 257 * 64,
            n: 512,
            k: 6144,
            active: 257,
            arch: Arch::Gfx942,
            cus: 304,
            available: 0,
            forced: None,
            variant: ContiguousVariant::Silu,
            pipelined: None,
            bytes: None,
            routing: None,
        };
        let p = plan_contiguous_splitk(32, &q).unwrap();
        assert!(p.estimate_s.is_finite() && p.estimate_s > 0.0);
        assert!(matches!(p.kernel.spec, Spec::ContiguousSilu(_)) && p.kernel.block_m == 32 && p.splits == 1);
    }

    #[test]
    fn masked_busiest_xcd_follows_the_grid_order() {
        // Counts fixed at the capacity (no headroom): every tile works, and each XCD runs its
        // even share of the ids, split or not.
        let full = masked_busiest_xcd(8, 2, 4, 64, 100, 100);
        for s in 1..=MAX_SPLITS {
            assert!(full.busiest(s, RUNS).iter().all(|&b| b == 8 * 2 * 4 * s / 8), "split {s}: {:?}", full.busiest(s, RUNS));
        }
        // DeepSeek-V3's gate·up over 4 groups of ~256 rows (capacity 333): 6 row tiles of 64
        // per column, 32 columns, 96 ids per XCD inside one group. A group needs 3 to 6 row
        // tiles (counts 179 … 332); the busiest XCD holds the largest count of the four, so
        // it runs at least 16 · 5 working tiles in most draws, above the even share.
        let b = masked_busiest_xcd(4, 6, 32, 64, 256, 333);
        let even = 4.0 * 32.0 * (179..=333).map(|c: u64| c.div_ceil(64) as f64).sum::<f64>() / 155.0 / 8.0;
        let mean = mean_busiest(&b, 1, RUNS);
        assert!(mean > even + 8.0 && (80.0..=96.0).contains(&mean), "busiest {mean} vs even {even}");
        // Every draw holds whole columns of 16 working tiles (3 to 6 per column).
        let (b1, b3) = (b.busiest(1, RUNS), b.busiest(3, RUNS));
        assert!(b1.iter().all(|&x| x % 16 == 0 && (48..=96).contains(&x)), "{b1:?}");
        // Split in 3: the same tiles, three ids each, draw by draw.
        assert!(b1.iter().zip(b3).all(|(&x, y)| y.abs_diff(3 * x) <= 3), "{b1:?} vs {b3:?}");
        // Many small groups average out on each XCD: 64 groups of ~4 rows in 32-row tiles
        // (one row tile per group, every one working): every XCD has its even share.
        let many = masked_busiest_xcd(64, 1, 32, 32, 4, 6);
        assert!(many.busiest(1, RUNS).iter().all(|&x| x == 64 * 32 / 8), "{:?}", many.busiest(1, RUNS));
        // The features of the 64×128 pipelined kernel on that 4×256 layout: the busiest CU
        // runs ⌈busiest/38⌉ ≥ 3 tiles, two batches at two per CU, where the even share (about
        // 72 tiles per XCD) fits one.
        let arch = Arch::Gfx942;
        let desc = GemmDesc::m_grouped_masked(333, 4096, 7168, 4, 256, arch).with_cus(304);
        let e = registry::by_name("m_grouped_fp8_gemm_nt_masked_bs_pipe_bm64_bn128").expect("registered");
        assert_eq!(e.slots_per_cu(arch), Some(2));
        let f = grouped_features(e, &desc, 1, RUNS);
        assert_eq!(f.batches.iter().sum::<f64>(), 2.0, "{:?}", f.batches);
        // The planner's estimate is the mean of the draws' estimates (a step in the busiest
        // XCD's rounds), not the estimate at the mean count.
        let model = CostModel::for_arch(arch).expect("embedded model");
        let w = grouped_work(e, &desc);
        let c = model.cost_of(e).expect("coefficients");
        let draws = w.busiest_xcd.as_ref().expect("a masked grid").busiest(1, RUNS);
        let mean: f64 = draws.iter().map(|&b| model.estimate_with(&c, &work_features_at(e, &w, 1, arch, 304, Some((f64::from(b), RUNS)))).0).sum::<f64>()
            / MASKED_DRAWS as f64;
        let (est, _) = grouped_estimate(model, e, &w, 1, RUNS, arch, 304);
        assert!((est - mean).abs() <= 1e-12 * mean, "{est} vs {mean}");
    }

    #[test]
    fn masked_busiest_xcd_in_the_columns_order() {
        // Counts at the capacity: every XCD its even share in either order.
        let full = masked_busiest_xcd(8, 2, 4, 64, 100, 100);
        for s in [1, 2, 5] {
            assert!(full.busiest(s, COLUMNS).iter().all(|&b| b == 8 * 2 * 4 * s / 8), "split {s}: {:?}", full.busiest(s, COLUMNS));
        }
        // The 4×256 layout over N = 4096 (32 columns per group, 128 columns): every XCD runs 4
        // columns of each group, so every XCD has the same working tiles, 4 · Σ ⌈count/64⌉, in
        // every draw; in runs the XCD holding the largest count is busier.
        let b = masked_busiest_xcd(4, 6, 32, 64, 256, 333);
        let (runs, cols) = (b.busiest(1, RUNS), b.busiest(1, COLUMNS));
        for draw in 0..MASKED_DRAWS {
            let rows: Vec<u64> = (0..4).map(|g| (b.prefix[draw * 5 + g + 1] - b.prefix[draw * 5 + g]) / 32).collect();
            assert_eq!(u64::from(cols[draw]), 4 * rows.iter().sum::<u64>(), "draw {draw}: {rows:?}");
            assert!(cols[draw] <= runs[draw], "draw {draw}: {} vs {}", cols[draw], runs[draw]);
        }
        assert!(mean_busiest(&b, 1, COLUMNS) + 8.0 < mean_busiest(&b, 1, RUNS));
        // Split in 3: three pieces of each working tile, draw by draw.
        assert!(b.busiest(3, COLUMNS).iter().zip(cols).all(|(&y, x)| y == 3 * x));
        // 3 groups of 4 columns (12 columns: 8 dealt, 4 in the identity order) of 2 row tiles,
        // counts at the capacity: 24 tiles, the 8 dealt columns one per XCD (2 each), the last
        // 8 ids one per XCD: 3 on every XCD.
        let tail = masked_busiest_xcd(3, 2, 4, 64, 128, 128);
        assert!(tail.busiest(1, COLUMNS).iter().all(|&x| x == 3), "{:?}", tail.busiest(1, COLUMNS));
        // In columns every XCD's link moves all of A; in runs about an eighth.
        let arch = Arch::Gfx942;
        let desc = GemmDesc::m_grouped_masked(333, 4096, 7168, 4, 256, arch).with_cus(304);
        let e = registry::by_name("m_grouped_fp8_gemm_nt_masked_bs_pipe_bm64_bn128").expect("registered");
        let w = grouped_work(e, &desc);
        let busiest = f64::from(cols[0]);
        let (fc, fr) = (work_features_at(e, &w, 1, arch, 304, Some((busiest, COLUMNS))), work_features_at(e, &w, 1, arch, 304, Some((busiest, RUNS))));
        assert!(fc.fabric_bytes > fr.fabric_bytes + 0.5 * w.a_bytes, "{} vs {} (A {})", fc.fabric_bytes, fr.fabric_bytes, w.a_bytes);
        assert_eq!((fc.blocks, fc.batches), (fr.blocks, fr.batches));
        // The planner offers both orders of every masked plan, and the stream's override
        // pins one.
        let all = grouped_candidates(&desc, WeightLayout::Preshuffled);
        assert_eq!(all.iter().filter(|p| p.remap == COLUMNS).count(), all.iter().filter(|p| p.remap == RUNS).count());
        for r in [RUNS, COLUMNS] {
            let (p, _) = plan_grouped(&desc, WeightLayout::Preshuffled, &Overrides::NONE.with_remap(r), u64::MAX).unwrap();
            assert_eq!(p.remap, r);
            assert_eq!(p.config(arch).remap, r);
        }
        // Contiguous grids have one order.
        let contiguous = GemmDesc::m_grouped_contiguous(4096, 4096, 7168, 8, arch);
        assert!(grouped_candidates(&contiguous, WeightLayout::Preshuffled).iter().all(|p| p.remap == RUNS));
    }

    #[test]
    fn grouped_features_read_a_share_over_the_fabric() {
        // 8 groups of 3 rows over N = 15104 (118 tiles of 128): every working tile reads its
        // group's A rows, but the busiest XCD's link moves only its share of A (an eighth, plus
        // one row tile's); B of each group once per sharing tile.
        let arch = Arch::Gfx942;
        let desc = GemmDesc::m_grouped_masked(3, 15104, 1536, 8, 3, arch);
        let e = registry::by_name("m_grouped_fp8_gemm_nt_masked_bs_bm32_bn128").expect("registered");
        let f = grouped_features(e, &desc, 1, RUNS);
        let w = grouped_work(e, &desc);
        assert_eq!(w.a_bytes, 8.0 * 3.0 * 1536.0);
        let tb = TileBytes::of(32, 128);
        let pieces = w.work.div_ceil(u64::from(tile::NUM_XCDS)) as f64;
        let b_part = pieces * w.nkb as f64 * tb.b_block / w.b_sharers.max(1.0).min(pieces);
        let out = w.work.div_ceil(u64::from(tile::NUM_XCDS)) as f64 * tb.out;
        let a_share = w.a_bytes / f64::from(tile::NUM_XCDS) + w.nkb as f64 * (tb.block - tb.b_block);
        assert!((f.fabric_bytes - (b_part + out + a_share)).abs() < 1e-6 * f.fabric_bytes, "{} vs {}", f.fabric_bytes, b_part + out + a_share);
        // k-grouped: the same cap.
        let kg = registry::by_name("k_grouped_fp8_gemm_tn_contiguous_bm128_bn128").expect("registered");
        let fk = kgrouped_features(kg, 256, 7168, 4, 4 * 4096, arch, 304);
        assert!(fk.fabric_bytes > 0.0 && fk.hbm_bytes == (4.0 * 4096.0 * (256.0 + 7168.0) + 8.0 * 4.0 * 256.0 * 7168.0));
    }

    #[test]
    fn a_grouped_kernel_with_coefficients_of_its_own_is_estimated_with_them() {
        let arch = Arch::Gfx942;
        let desc = GemmDesc::m_grouped_masked(64, 4096, 7168, 8, 64, arch);
        let e = registry::by_name("m_grouped_fp8_gemm_nt_masked_bs_bm64_bn128").expect("registered");
        let shipped = CostModel::for_arch(arch).expect("embedded model");
        let w = grouped_work(e, &desc);
        let stand_in = {
            let mut m = shipped.clone();
            m.kernels.remove(e.name());
            grouped_estimate(&m, e, &w, 1, RUNS, arch, 304).0
        };
        let mut own = shipped.clone();
        let d = dense_counterpart(e).expect("a dense twin");
        let mut c = own.kernels[d.name()].clone();
        c.block.iter_mut().for_each(|b| *b *= 3.0);
        c.fixed.iter_mut().for_each(|x| *x *= 3.0);
        own.kernels.insert(e.name().to_string(), c);
        let with_own = grouped_estimate(&own, e, &w, 1, RUNS, arch, 304).0;
        assert!(with_own > stand_in, "own {with_own} vs stand-in {stand_in}");
        // Without coefficients of its own or of a dense twin: +∞.
        let mut none = own.clone();
        none.kernels.remove(e.name());
        none.kernels.remove(d.name());
        assert!(grouped_estimate(&none, e, &w, 1, RUNS, arch, 304).0.is_infinite());
    }

    #[test]
    fn grouped_plans_take_the_least_estimate_and_fail_typed() {
        let arch = Arch::Gfx942;
        for weights in [WeightLayout::Logical, WeightLayout::Preshuffled] {
            for desc in [
                GemmDesc::m_grouped_contiguous(32768, 4096, 7168, 4, arch),
                GemmDesc::m_grouped_contiguous(1024, 7168, 2048, 8, arch),
                GemmDesc::m_grouped_masked(84, 4096, 7168, 2, 64, arch),
                GemmDesc::m_grouped_masked(1332, 7168, 2048, 1, 1024, arch),
            ] {
                let (p, _) = plan_grouped(&desc, weights, &Overrides::NONE, u64::MAX).unwrap();
                assert!(p.estimate_s.is_finite() && p.estimate_s > 0.0, "{p}");
                assert_eq!((p.kernel.problem, p.kernel.weights), (problem_of(desc.kind), weights));
                for e in registry::candidates(problem_of(desc.kind), weights).filter(|e| e.schedule == ScheduleKind::DataParallel) {
                    let (q, _) = plan_grouped(&desc, weights, &Overrides::NONE.with_tile(e.block_m, e.block_n), u64::MAX).unwrap();
                    assert!(q.estimate_s >= p.estimate_s, "{desc:?}: {q} beats {p}");
                }
            }
        }
        let masked = GemmDesc::m_grouped_masked(84, 4096, 7168, 2, 64, arch);
        let contiguous = GemmDesc::m_grouped_contiguous(256, 4096, 7168, 2, arch);
        let plan = |d: &GemmDesc, w, o: Overrides| plan_grouped(d, w, &o, u64::MAX);
        // Forced split: only the masked bs split-K kernels.
        let (p, _) = plan(&masked, WeightLayout::Preshuffled, Overrides::NONE.with_tile(64, 128).with_split(3)).unwrap();
        assert_eq!((p.kernel.name(), p.splits, p.grid), ("m_grouped_fp8_gemm_nt_masked_splitk_bs_bm64_bn128", 3, 2 * 2 * 32 * 3));
        assert!(
            matches!(plan(&contiguous, WeightLayout::Preshuffled, Overrides::NONE.with_split(2)), Err(ConfigError::ForcedSplit { expected, .. }) if expected.contains("no split-K kernel"))
        );
        assert!(
            matches!(plan(&masked, WeightLayout::Logical, Overrides::NONE.with_split(2)), Err(ConfigError::ForcedSplit { expected, .. }) if expected.contains("masked"))
        );
        assert!(
            matches!(plan(&masked, WeightLayout::Preshuffled, Overrides::NONE.with_tile(128, 128).with_split(2)), Err(ConfigError::ForcedSplit { expected, .. }) if expected.contains("128x128"))
        );
        assert!(
            matches!(plan(&masked, WeightLayout::Preshuffled, Overrides::NONE.with_split(57)), Err(ConfigError::ForcedSplit { expected, .. }) if expected.contains("k/128 = 56"))
        );
        assert!(matches!(plan(&masked, WeightLayout::Preshuffled, Overrides::NONE.with_stream_k(304, None)), Err(ConfigError::ForcedStreamK { .. })));
        assert!(matches!(plan(&contiguous, WeightLayout::Logical, Overrides::NONE.with_tile(32, 128)), Err(ConfigError::ForcedTile { .. })));
        // No workspace: an unsplit plan, the preferred split reported.
        let (best, _) = plan(&masked, WeightLayout::Preshuffled, Overrides::NONE).unwrap();
        let (fit, limit) = plan_grouped(&masked, WeightLayout::Preshuffled, &Overrides::NONE, 0).unwrap();
        assert_eq!(fit.workspace_floats(arch), 0, "{fit}");
        assert_eq!(limit.map(|l| l.needed), (best.splits > 1).then(|| best.workspace_floats(arch)));
        // K-grouped: one 128 × 128 group → 64 × 64 tiles (4 workgroups instead of 1); DeepGEMM's
        // wgrad shapes → 128 × 128; a forced tile that does not exist is typed.
        let kg = |m, n, g, k| plan_kgrouped(m, n, g, k, arch, 304, &Overrides::NONE).unwrap().kernel.block_m;
        assert_eq!((kg(128, 128, 1, 4096), kg(7168, 4096, 8, 8 * 4096), kg(2048, 7168, 4, 4 * 8192)), (64, 128, 128));
        assert!(matches!(plan_kgrouped(128, 128, 1, 4096, arch, 304, &Overrides::NONE.with_tile(64, 128)), Err(ConfigError::ForcedTile { .. })));
    }

    #[test]
    fn overrides_filter_the_candidates_or_fail_typed() {
        let desc = GemmDesc::dense(256, 4096, 7168, Arch::Gfx942);
        let (p, _) = plan(&desc, WeightLayout::Preshuffled, &Overrides::NONE.with_tile(48, 128), u64::MAX).unwrap();
        assert_eq!((p.kernel.block_m, p.kernel.block_n), (48, 128));
        let (p, _) = plan(&desc, WeightLayout::Logical, &Overrides::NONE.with_tile(64, 64).with_split(4), u64::MAX).unwrap();
        assert_eq!((p.kernel.block_m, p.splits, p.kernel.schedule), (64, 4, ScheduleKind::SplitK));
        assert!(matches!(plan(&desc, WeightLayout::Logical, &Overrides::NONE.with_tile(48, 128), u64::MAX), Err(ConfigError::ForcedTile { .. })));
        assert!(matches!(plan(&desc, WeightLayout::Logical, &Overrides::NONE.with_split(999), u64::MAX), Err(ConfigError::ForcedSplit { .. })));
        // No workspace: only unsplit plans, and the preferred split plan is reported.
        let small = GemmDesc::dense(16, 2048, 16384, Arch::Gfx942);
        let (p, limit) = plan(&small, WeightLayout::Preshuffled, &Overrides::NONE, 0).unwrap();
        assert_eq!(p.workspace_floats(Arch::Gfx942), 0, "{p}");
        if let Some(l) = limit {
            assert!(l.needed > 0);
        }
    }
}
