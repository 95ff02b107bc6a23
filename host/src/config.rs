//! Launch configuration: a problem description ([`GemmDesc`]) → the kernel and launch geometry
//! that computes it ([`GemmConfig`]).
//!
//! **Dense problems** (both weight layouts) are planned by the generated selector,
//! [`crate::select::plan`], over the kernel registry ([`crate::registry`]):
//! [`get_config_for_workspace`] (logical B) and [`get_bs_config_for_workspace`] (pre-shuffled
//! B) are its entry points here. Every choice takes the caller's [`Overrides`] as an explicit
//! argument (the entry points pass their stream's, [`crate::Stream::overrides`]); nothing here
//! reads thread or process state, nor any environment variable.
//!
//! **M-grouped problems** still use the per-tile cost rows of `host/tuned/gfx942.csv`
//! (`fp8gemm tune`, modelled MI300X figures) and, for pre-shuffled weights, the grouped bs rules
//! ([`get_grouped_bs_config`]), until they move to the generated selector:
//! 1. a tile forced through [`Overrides::tile`] (experiments, tuning);
//! 2. else, for a problem in the table (`best` rows), the tile the timing model found fastest;
//! 3. else an estimate per candidate from the model's per-tile costs (`cost` rows: the
//!    modelled cycles per 128-K block of a CU running 1 or `slots` workgroups of the tile):
//!
//! ```text
//! full      = ⌊tiles / (CUs · slots)⌋                  (whole rounds, every slot busy)
//! rest      = tiles mod (CUs · slots)                  (the last round: wave quantization)
//! time      = full · nkb · cycles_per_kb(slots)
//!           + [rest > 0] · nkb · cycles_per_kb(min(slots, ⌈rest / CUs⌉))   (interpolated)
//! ```
//!
//! where `slots` is how many workgroups of that kernel fit on one CU (limited by its LDS and its
//! registers, from the code object) and `CUs` the device's compute units ([`GemmDesc::cus`]).
//!
//! The m-grouped kernels run the same main loop per tile (same candidates, same costs); only the
//! number of tiles that do work differs:
//! * **contiguous**: the grid is `(m_sum / BM) · ⌈n/BN⌉`; the working tiles are that minus the
//!   all-padding ones, which the real row counts (on the device) decide. The model uses the
//!   group count: each of the `min(G, m_sum/128)` non-empty groups ends in a partly padded
//!   128-row block, whose second 64-row half is all padding half of the time (padding length
//!   taken as uniform), so 64-row tiles skip `⌊min(G, m_sum/128) / 2⌋ · ⌈n/BN⌉` tiles. Many small
//!   experts (`m_sum / G` near 128) thus favour 64-row tiles, few large ones the 128 × 128 tile.
//! * **masked**: the grid is sized from the capacity `m_max` (`G · ⌈m_max/BM⌉ · ⌈n/BN⌉`, what the
//!   hardware launches, since `masked_m` is only known on the device), but the model counts the
//!   tiles that will work: `G · ⌈expected_m/BM⌉ · ⌈n/BN⌉` with the hint `expected_m` clamped to
//!   `1..=m_max` (tiles past a group's count return after one scalar load).
//!
//! Weights in the pre-shuffled layout run the bs kernels instead ([`get_grouped_bs_config`] for
//! the m-grouped ones, which counts working tiles as above).

use std::collections::HashSet;
use std::fmt;
use std::sync::{Mutex, OnceLock};

use fp8gemm_device::KernelSpec;
use fp8gemm_device::args::{DenseGemmArgs, DenseSplitKArgs, MGroupedContiguousArgs, MGroupedMaskedArgs, MGroupedMaskedSplitKArgs};
use fp8gemm_device::dense::{
    FP8_GEMM_NT_BM64_BN64, FP8_GEMM_NT_BM64_BN128, FP8_GEMM_NT_BM128_BN128, FP8_GEMM_NT_SPLITK_BM64_BN64, FP8_GEMM_NT_SPLITK_BM64_BN128,
    FP8_GEMM_NT_SPLITK_BM128_BN128,
};
use fp8gemm_device::grouped::{
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN64, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM128_BN128,
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM64_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM128_BN128,
    M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN64, M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BM128_BN128,
    M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM128_BN128,
    M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM64_BN128,
};
use fp8gemm_device::grouped_pipe::{
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_PIPE_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM32_BN64, M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM64_BN128,
    M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM80_BN128,
};
use fp8gemm_device::streamk::DenseStreamKArgs;
use fp8gemm_device::streamk::{FP8_GEMM_NT_STREAMK_BM64_BN64, FP8_GEMM_NT_STREAMK_BM64_BN128, FP8_GEMM_NT_STREAMK_BM128_BN128, STREAMK_TILES, StreamKSchedule};
use fp8gemm_device::tile::{self, DenseTile};

use crate::codeobj::Arch;

/// Which GEMM entry point a problem belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmKind {
    /// `fp8_gemm_nt`: one `m × n × k` GEMM.
    Dense,
    /// M-grouped, contiguous layout: `groups` experts, rows of all groups stacked (`m` = total).
    MGroupedContiguous,
    /// M-grouped, masked layout: `groups` × `m` rows (`m` = rows per group, the max),
    /// `expected_m` the typical number of valid rows per group.
    MGroupedMasked,
}

impl fmt::Display for GemmKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GemmKind::Dense => "dense",
            GemmKind::MGroupedContiguous => "m-grouped contiguous",
            GemmKind::MGroupedMasked => "m-grouped masked",
        })
    }
}

/// A problem to configure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmDesc {
    /// Entry point.
    pub kind: GemmKind,
    /// Rows of A / D (see [`GemmKind`] for the grouped meanings).
    pub m: u32,
    /// Columns of D (rows of B).
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Number of groups (1 for dense).
    pub groups: u32,
    /// Expected valid rows per group (masked layout; otherwise equal to `m`).
    pub expected_m: u32,
    /// Target architecture.
    pub arch: Arch,
    /// Compute units of the device (the constructors take the architecture's full count,
    /// 304 on MI300X / MI325X; [`GemmDesc::with_cus`] sets the device's own, e.g. 80 on an
    /// MI308X). Stream-K sizes its grid from it, and the tuned table, written for the full
    /// count, is consulted only when it matches.
    pub cus: u32,
}

impl GemmDesc {
    /// A dense `m × n × k` problem on `arch`.
    pub fn dense(m: u32, n: u32, k: u32, arch: Arch) -> Self {
        GemmDesc { kind: GemmKind::Dense, m, n, k, groups: 1, expected_m: m, arch, cus: arch_spec(arch).cus }
    }

    /// The same problem on a device with `cus` compute units (`Context::compute_units`; 0
    /// keeps the architecture's count).
    pub fn with_cus(self, cus: u32) -> Self {
        GemmDesc { cus: if cus == 0 { self.cus } else { cus }, ..self }
    }

    /// An m-grouped contiguous problem: `m_sum` stacked rows (a multiple of the alignment, 128)
    /// over `groups` experts of `n × k`.
    pub fn m_grouped_contiguous(m_sum: u32, n: u32, k: u32, groups: u32, arch: Arch) -> Self {
        let expected_m = m_sum.checked_div(groups).unwrap_or(0);
        GemmDesc { kind: GemmKind::MGroupedContiguous, m: m_sum, n, k, groups, expected_m, arch, cus: arch_spec(arch).cus }
    }

    /// An m-grouped masked problem: `groups` groups of capacity `m_max` rows, of which about
    /// `expected_m` are valid (a hint; the real counts live on the device).
    pub fn m_grouped_masked(m_max: u32, n: u32, k: u32, groups: u32, expected_m: u32, arch: Arch) -> Self {
        GemmDesc { kind: GemmKind::MGroupedMasked, m: m_max, n, k, groups, expected_m, arch, cus: arch_spec(arch).cus }
    }
}

/// How workgroup ids map to tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Remap {
    /// Workgroup `p` is dealt to XCD `p mod xcds`; each XCD gets a contiguous range of tiles
    /// ([`fp8gemm_device::tile::xcd_remap`]), tiles walked M-fastest.
    Xcd {
        /// Number of XCDs.
        xcds: u32,
    },
}

/// A chosen kernel and its launch geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmConfig {
    /// Rows of D per workgroup.
    pub block_m: u32,
    /// Columns of D per workgroup.
    pub block_n: u32,
    /// K per main-loop iteration (one scale block).
    pub block_k: u32,
    /// Work-items per workgroup (the kernel's compiled launch bound).
    pub workgroup_size: u32,
    /// Dynamic LDS bytes (`sharedMemBytes` of the launch).
    pub lds_bytes: u32,
    /// Kernel symbol in the code object.
    pub kernel: &'static str,
    /// Workgroups in the 1-D grid (output tiles × `splits`).
    pub grid: u32,
    /// Workgroups per output tile, each running a contiguous range of the K blocks (split-K,
    /// [`fp8gemm_device::dense`]); 1 for the kernels that do not split K.
    pub splits: u32,
    /// Workgroup → tile order (implemented inside the kernel; recorded for reporting).
    pub remap: Remap,
    /// Architecture the config was chosen for.
    pub arch: Arch,
    /// The stream-K schedule when the kernel is a stream-K one ([`fp8gemm_device::streamk`]:
    /// `grid = dp_tiles + sk_wgs`); `None` otherwise.
    pub stream_k: Option<StreamK>,
}

/// The schedule of a stream-K launch ([`fp8gemm_device::streamk`]): `dp_tiles` tiles run
/// data-parallel, then `sk_wgs` workgroups share the K iterations of the other
/// `tiles − dp_tiles` tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamK {
    /// Output tiles of the problem.
    pub tiles: u32,
    /// 128-K blocks per tile (`k / 128`).
    pub nkb: u32,
    /// Tiles computed data-parallel first (whole waves' worth).
    pub dp_tiles: u32,
    /// Workgroups sharing the stream-K tail.
    pub sk_wgs: u32,
}

impl StreamK {
    /// The device-side schedule (`None` if the numbers are not a valid schedule).
    pub fn schedule(&self) -> Option<StreamKSchedule> {
        StreamKSchedule::new(self.tiles, self.nkb, self.dp_tiles, self.sk_wgs).ok()
    }
}

impl GemmConfig {
    /// Output tiles of the launch.
    pub fn tiles(&self) -> u32 {
        match self.stream_k {
            Some(sk) => sk.tiles,
            None => self.grid / self.splits.max(1),
        }
    }
    /// FP32 elements of workspace the launch needs (0 unless it splits K or runs stream-K): the
    /// per-tile arrival counters and one partial tile per (tile, split),
    /// [`tile::splitk_workspace_floats`], or per stream-K slot, [`StreamKSchedule::workspace_floats`].
    pub fn workspace_floats(&self) -> u64 {
        if let Some(sk) = self.stream_k {
            return sk.schedule().map_or(u64::MAX, |s| s.workspace_floats(self.block_m, self.block_n));
        }
        if self.splits <= 1 { 0 } else { tile::splitk_workspace_floats(self.tiles(), self.splits, self.block_m, self.block_n) }
    }
}

impl fmt::Display for GemmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Remap::Xcd { xcds } = self.remap;
        write!(
            f,
            "{} on {}: block {}x{}x{}, {} threads, {} B LDS, grid {} (XCD remap over {})",
            self.kernel, self.arch, self.block_m, self.block_n, self.block_k, self.workgroup_size, self.lds_bytes, self.grid, xcds
        )?;
        if self.splits > 1 {
            write!(f, ", split-K {} ({} workspace floats)", self.splits, self.workspace_floats())?;
        }
        if let Some(sk) = self.stream_k {
            write!(
                f,
                ", stream-K: {} data-parallel tiles, then {} workgroups over {} tiles × {} K blocks ({} workspace floats)",
                sk.dp_tiles,
                sk.sk_wgs,
                sk.tiles - sk.dp_tiles,
                sk.nkb,
                self.workspace_floats()
            )?;
        }
        Ok(())
    }
}

/// Why no config exists.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A dimension violates the kernels' shape requirements.
    #[error("invalid `{arg}` = {value}: expected {expected}")]
    Shape {
        /// Argument name.
        arg: &'static str,
        /// Value given.
        value: u64,
        /// What is accepted.
        expected: &'static str,
    },
    /// The problem is too large for the kernels' 32-bit buffer offsets.
    #[error("tensor `{tensor}` needs {bytes} B of addressing; the kernels support less than {limit} B")]
    TooLarge {
        /// Which tensor.
        tensor: &'static str,
        /// Bytes it (plus one tile of tail rows) spans.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The forced tile ([`Overrides::tile`]) is not one of the kind's tiles.
    #[error("forced tile `{tile}` (Overrides::tile) is not available; expected one of {available}")]
    ForcedTile {
        /// The tile asked for.
        tile: String,
        /// The tiles that exist.
        available: &'static str,
    },
    /// The forced split count ([`Overrides::split`]) cannot be used for this
    /// problem.
    #[error("forced split-K `{splits}` (Overrides::split): expected {expected}")]
    ForcedSplit {
        /// The split count asked for.
        splits: String,
        /// What is accepted for this problem.
        expected: String,
    },
    /// The forced stream-K schedule ([`Overrides::stream_k`]) cannot be
    /// used for this problem.
    #[error("forced stream-K `{schedule}` (Overrides::stream_k): expected {expected}")]
    ForcedStreamK {
        /// The schedule asked for (`G` or `G/DP`).
        schedule: String,
        /// What is accepted for this problem.
        expected: String,
    },
    /// The embedded tuned table does not parse or lacks a candidate's figures.
    #[error("tuned config table: {0} (regenerate it with `fp8gemm tune`)")]
    Tuned(String),
    /// No kernel of this kind is compiled into the code objects yet.
    #[error("no {kind} FP8 GEMM kernel exists for {arch}")]
    NoKernel {
        /// Requested kind.
        kind: GemmKind,
        /// Requested architecture.
        arch: Arch,
    },
}

/// A candidate kernel with the per-architecture numbers the model needs.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    tile: DenseTile,
    /// Workgroups per output tile (1: the kernel does not split K).
    splits: u32,
    /// Stream-K `(dp_tiles, sk_wgs)` (`None`: not a stream-K kernel).
    stream_k: Option<(u32, u32)>,
    workgroup_size: u32,
    /// Workgroups of this kernel per CU (min over the LDS and register limits).
    slots_per_cu: u32,
    /// Modelled cycles per 128-K block of a CU running 1 and `slots_per_cu` workgroups of this
    /// tile at once (the timing model, through `host/tuned/<arch>.csv`); `None` if the table
    /// has no cost rows for the tile (then only a forced or tabled choice can pick it).
    cycles_per_kb: Option<[f64; 2]>,
}

/// The timing model's figures for config selection, generated by `fp8gemm tune` (see
/// [`tuned`]): the older per-tile table the m-grouped and k-grouped choices still read. It
/// exists for gfx942 only; gfx950's grouped choices use it too (a documented approximation,
/// printed with the config), while gfx950's dense plans come from its own generated cost model
/// (`host/tuned/gfx950.mi355x.cost.csv`, [`crate::select::CostModel::for_arch`]).
const TUNED_GFX942: &str = include_str!("../tuned/gfx942.csv");

/// One `best` row of the tuned table: the fastest modelled tile of one problem.
#[derive(Clone, Copy, Debug, PartialEq)]
struct TunedBest {
    kind: GemmKind,
    groups: u32,
    m: u32,
    n: u32,
    k: u32,
    expected_m: u32,
    tile: (u32, u32),
    /// Modelled µs of the chosen tile.
    us: f64,
}

/// The parsed tuned table.
#[derive(Clone, Debug, Default)]
struct Tuned {
    /// (block_m, block_n, sharing, modelled cycles per 128-K block) of the dense / m-grouped
    /// main loop.
    costs: Vec<(u32, u32, u32, f64)>,
    /// The same for the K-grouped kernels (`kcost` rows).
    kcosts: Vec<(u32, u32, u32, f64)>,
    best: Vec<TunedBest>,
    /// `streamk` rows: the fastest stream-K configuration of a problem (same fields as `best`,
    /// plus `(sk_wgs, dp_tiles)`).
    streamk: Vec<(TunedBest, u32, u32)>,
    /// `split` rows: the fastest split-K configuration of a problem (same fields as `best`,
    /// plus the split count).
    split: Vec<(TunedBest, u32)>,
}

fn parse_kind(s: &str) -> Option<GemmKind> {
    match s {
        "dense" => Some(GemmKind::Dense),
        "contiguous" => Some(GemmKind::MGroupedContiguous),
        "masked" => Some(GemmKind::MGroupedMasked),
        _ => None,
    }
}

/// The name of a kind in the tuned table.
pub fn kind_name(kind: GemmKind) -> &'static str {
    match kind {
        GemmKind::Dense => "dense",
        GemmKind::MGroupedContiguous => "contiguous",
        GemmKind::MGroupedMasked => "masked",
    }
}

/// The comma-separated fields of one record line of a tuned table (`table` names the table in
/// errors, `no` is the 1-based line number).
struct Record<'a> {
    table: &'static str,
    no: usize,
    line: &'a str,
    fields: Vec<&'a str>,
}

impl<'a> Record<'a> {
    /// The records of `text`: every line but blank ones and `#` comments.
    fn all(text: &'a str, table: &'static str) -> impl Iterator<Item = Record<'a>> {
        text.lines().enumerate().filter_map(move |(i, line)| {
            let line = line.trim();
            (!line.is_empty() && !line.starts_with('#')).then(|| Record { table, no: i + 1, line, fields: line.split(',').map(str::trim).collect() })
        })
    }
    /// An error naming the line.
    fn bad(&self, what: &str) -> String {
        format!("{} line {}: {what}: `{}`", self.table, self.no, self.line)
    }
    /// Field `j` as an unsigned integer.
    fn u(&self, j: usize) -> Result<u32, String> {
        self.fields.get(j).and_then(|x| x.parse::<u32>().ok()).ok_or_else(|| self.bad(&format!("field {j} is not an unsigned integer")))
    }
    /// Field `j` as a finite positive number.
    fn x(&self, j: usize) -> Result<f64, String> {
        self.fields
            .get(j)
            .and_then(|x| x.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 0.0)
            .ok_or_else(|| self.bad(&format!("field {j} is not a positive number")))
    }
}

fn parse_tuned(text: &str) -> Result<Tuned, String> {
    let mut t = Tuned::default();
    for r in Record::all(text, "tuned table") {
        let (f, bad, u, x) = (&r.fields, |w: &str| r.bad(w), |j| r.u(j), |j| r.x(j));
        match f[0] {
            "cost" => t.costs.push((u(1)?, u(2)?, u(3)?, x(4)?)),
            "kcost" => t.kcosts.push((u(1)?, u(2)?, u(3)?, x(4)?)),
            "best" => {
                let kind = f.get(1).and_then(|k| parse_kind(k)).ok_or_else(|| bad("unknown kind"))?;
                t.best.push(TunedBest { kind, groups: u(2)?, m: u(3)?, n: u(4)?, k: u(5)?, expected_m: u(6)?, tile: (u(7)?, u(8)?), us: x(9)? });
            }
            "split" => {
                let kind = f.get(1).and_then(|k| parse_kind(k)).ok_or_else(|| bad("unknown kind"))?;
                let b = TunedBest { kind, groups: u(2)?, m: u(3)?, n: u(4)?, k: u(5)?, expected_m: u(6)?, tile: (u(7)?, u(8)?), us: x(10)? };
                t.split.push((b, u(9)?));
            }
            "streamk" => {
                let kind = f.get(1).and_then(|k| parse_kind(k)).ok_or_else(|| bad("unknown kind"))?;
                let b = TunedBest { kind, groups: u(2)?, m: u(3)?, n: u(4)?, k: u(5)?, expected_m: u(6)?, tile: (u(7)?, u(8)?), us: x(11)? };
                t.streamk.push((b, u(9)?, u(10)?));
            }
            _ => return Err(bad("unknown record type (expected cost, kcost, best, split or streamk)")),
        }
    }
    Ok(t)
}

/// The tuned table of `arch` (parsed once).
fn tuned(arch: Arch) -> Result<&'static Tuned, ConfigError> {
    static GFX942: OnceLock<Result<Tuned, String>> = OnceLock::new();
    let _ = arch;
    GFX942.get_or_init(|| parse_tuned(TUNED_GFX942)).as_ref().map_err(|e| ConfigError::Tuned(e.clone()))
}

/// Explicit choices that replace the selector's own for the launches of one [`Stream`]
/// ([`Stream::set_overrides`](crate::Stream::set_overrides)): for experiments, benchmarks and
/// tests. Every field is `None` by default (the selector chooses). An override the problem cannot
/// use is a typed error at launch ([`ConfigError::ForcedTile`], [`ConfigError::ForcedSplit`],
/// [`ConfigError::ForcedStreamK`]), never a silent fallback. The library reads no environment
/// variable for them (the `fp8gemm` CLI maps `FP8GEMM_FORCE_TILE`, `FP8GEMM_FORCE_SPLIT` and
/// `FP8GEMM_FORCE_STREAMK` onto this struct).
///
/// [`Stream`]: crate::Stream
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Overrides {
    /// The output tile `(block_m, block_n)`.
    pub tile: Option<(u32, u32)>,
    /// Workgroups per output tile (split-K); `Some(1)` never splits.
    pub split: Option<u32>,
    /// A stream-K schedule: `(g, None)` runs `g` stream-K workgroups after the default
    /// data-parallel head, `(g, Some(dp))` pins the head to `dp` tiles.
    pub stream_k: Option<ForcedStreamK>,
    /// With pre-shuffled B and a 64 × 128 tile: the pipelined loop (`true`) or the
    /// two-workgroups-per-CU one (`false`).
    pub bs_pipelined: Option<bool>,
    /// With pre-shuffled B and a 32 × 64 data-parallel tile: blocks per barrier (1 or 2).
    pub bs_narrow_barrier: Option<u32>,
    /// Rows per launch of an m-grouped contiguous GEMM (a positive multiple of 128): cuts
    /// every problem into row chunks as the 2 GiB buffer limit cuts the largest ones
    /// ([`crate::m_grouped_fp8_gemm_nt_contiguous_aligned`]), to exercise that path on small
    /// problems. A larger value than the limit's chunk has no effect.
    pub contiguous_chunk_rows: Option<u32>,
}

impl Overrides {
    /// No override: the selector chooses everything.
    pub const NONE: Overrides = Overrides { tile: None, split: None, stream_k: None, bs_pipelined: None, bs_narrow_barrier: None, contiguous_chunk_rows: None };
    /// These overrides with the tile `block_m × block_n`.
    pub fn with_tile(mut self, block_m: u32, block_n: u32) -> Self {
        self.tile = Some((block_m, block_n));
        self
    }
    /// These overrides with `splits` workgroups per tile.
    pub fn with_split(mut self, splits: u32) -> Self {
        self.split = Some(splits);
        self
    }
    /// These overrides with a stream-K schedule of `sk_wgs` workgroups after `dp_tiles`
    /// data-parallel tiles (`None`: the default head).
    pub fn with_stream_k(mut self, sk_wgs: u32, dp_tiles: Option<u32>) -> Self {
        self.stream_k = Some((sk_wgs, dp_tiles));
        self
    }
    /// These overrides with the 64 × 128 bs loop pinned.
    pub fn with_bs_pipelined(mut self, pipelined: bool) -> Self {
        self.bs_pipelined = Some(pipelined);
        self
    }
    /// These overrides with the 32 × 64 bs kernel's blocks per barrier pinned.
    pub fn with_bs_narrow_barrier(mut self, blocks: u32) -> Self {
        self.bs_narrow_barrier = Some(blocks);
        self
    }
    /// These overrides with m-grouped contiguous GEMMs cut into launches of `rows` rows.
    pub fn with_contiguous_chunk_rows(mut self, rows: u32) -> Self {
        self.contiguous_chunk_rows = Some(rows);
        self
    }
}

/// The selector's overrides of a stream (the selector's per-stream state, kept in the stream's
/// attachments: see [`Stream`](crate::Stream)).
impl crate::Stream {
    /// The overrides of the kernel selector for launches on this stream (none by default).
    pub fn overrides(&self) -> Overrides {
        self.attachment::<Overrides>().copied().unwrap_or(Overrides::NONE)
    }

    /// Replaces the selector's own choices for later launches on this stream with `overrides`
    /// (a tile, a split count, a stream-K schedule): for experiments, benchmarks and tests. An
    /// override a launch's problem cannot use fails that launch with a typed error.
    pub fn set_overrides(&mut self, overrides: Overrides) {
        self.replace_attachment(Some(overrides));
    }
}

/// A forced stream-K schedule: `(sk_wgs, dp_tiles)`, `dp_tiles` `None` for the default head.
pub type ForcedStreamK = (u32, Option<u32>);

/// A stream-K configuration of `fp8gemm tune`: `((block_m, block_n), sk_wgs, dp_tiles)`.
pub type StreamKSchedule3 = ((u32, u32), u32, u32);

/// Largest split count the model considers (and the most [`Overrides::split`] may ask for is
/// `k/128`, one block per split).
pub const MAX_SPLITS: u32 = 32;

/// Fixed cost of a split-K tile's hand-off in modelled cycles, added once per round of
/// workgroups: the partial stores draining (`s_waitcnt vmcnt(0)`), the barrier, the counter
/// atomic's round trip to the L2 and the LDS broadcast. Fitted by hand to one timing-model
/// run (not a measurement): 64×2112×1024 on 64×64 tiles, 8 splits of one block each, took
/// 9.78 µs modelled on MI300X, 3.07 µs (3684 cycles at the model's 1.2 GHz) more than the
/// unsplit kernel with the same K per workgroup and the same workgroup count (64×16896×128,
/// 6.71 µs), of which the reduction of 8 × 16 KiB at [`SPLITK_REDUCE_BYTES_PER_CYCLE`] is
/// 2048. (Re-fitted after the model's clock re-fit 1.3 → 1.2 GHz; was 2000 from 3800 cycles
/// at 1.3 GHz.)
const SPLITK_FIXED_CYCLES: f64 = 1600.0;
/// Bytes per cycle the reducing workgroup reads its `splits` partial tiles at (one CU's
/// 64 B/clk L1 fill rate; an estimate, not fitted).
const SPLITK_REDUCE_BYTES_PER_CYCLE: f64 = 64.0;

/// Modelled cycles a split-K candidate adds to its main loop: the hand-off and the last
/// workgroup's reduction of `splits` FP32 partial tiles (`splits · BM · BN · 4` bytes).
fn splitk_extra_cycles(c: &Candidate) -> f64 {
    if c.splits <= 1 {
        return 0.0;
    }
    let bytes = f64::from(c.splits) * f64::from(c.tile.block_m * c.tile.block_n * 4);
    SPLITK_FIXED_CYCLES + bytes / SPLITK_REDUCE_BYTES_PER_CYCLE
}

/// The timing model's cost of a K-grouped tile: modelled cycles per 128-token block of a CU
/// running `sharing` workgroups at once (interpolated between the table's 1 and `slots`), for
/// the K-grouped tile choice (`crate::kgrouped`).
pub(crate) fn kgrouped_cycles_per_kb(arch: Arch, block_m: u32, block_n: u32, sharing: u32, slots: u32) -> Result<f64, ConfigError> {
    let t = tuned(arch)?;
    let cost = |s: u32| t.kcosts.iter().find(|c| (c.0, c.1, c.2) == (block_m, block_n, s)).map(|c| c.3);
    let missing = || ConfigError::Tuned(format!("no kcost rows for K-grouped tile {block_m}x{block_n} (1 and {slots} workgroups per CU)"));
    let (one, full) = (cost(1).ok_or_else(missing)?, cost(slots).ok_or_else(missing)?);
    if slots <= 1 {
        return Ok(one);
    }
    let f = f64::from(sharing.clamp(1, slots) - 1) / f64::from(slots - 1);
    Ok(one + f * (full - one))
}

/// Architecture description for the heuristic.
#[derive(Clone, Copy, Debug)]
struct ArchSpec {
    cus: u32,
    xcds: u32,
    lds_per_cu: u32,
}

fn arch_spec(arch: Arch) -> ArchSpec {
    match arch {
        Arch::Gfx942 => ArchSpec { cus: 304, xcds: 8, lds_per_cu: 64 * 1024 },
        // MI355X: 256 CUs in 8 XCDs, 160 KiB LDS per CU.
        Arch::Gfx950 => ArchSpec { cus: 256, xcds: 8, lds_per_cu: 160 * 1024 },
    }
}

/// Waves per SIMD a kernel using `regs` VGPRs + AGPRs per lane can keep resident.
fn waves_per_simd(regs: u32) -> u32 {
    (512 / regs.div_ceil(8).max(1) / 8).min(8)
}

/// The candidates of one entry point (all three share the tile main loop). Register counts
/// (arch VGPRs, no AGPRs; `fp8gemm info`) set the slots per CU: dense 76 / 124 / 222 VGPRs,
/// contiguous 78 / 126 / 226, masked 76 / 124 / 222 — the same waves per SIMD in every case.
/// The cost per 128-K block comes from the timing model ([`tuned`]); the grouped kernels run
/// the dense kernels' main loop (`tile_gemm`) instruction for instruction, so they share the
/// dense figures.
fn candidates(arch: Arch, kind: GemmKind) -> Result<[Candidate; 3], ConfigError> {
    let (tiles, vgprs) = match kind {
        GemmKind::Dense => (tile::DENSE_TILES, [76, 124, 222]),
        GemmKind::MGroupedContiguous => (tile::CONTIGUOUS_TILES, [78, 126, 226]),
        GemmKind::MGroupedMasked => (tile::MASKED_TILES, [76, 124, 222]),
    };
    let spec = arch_spec(arch);
    let tuned = tuned(arch)?;
    let make = |tile: DenseTile, vgprs: u32| -> Result<Candidate, ConfigError> {
        let waves_per_wg_per_simd = tile::THREADS / tile::WAVE / 4;
        let by_regs = waves_per_simd(vgprs) / waves_per_wg_per_simd;
        let by_lds = spec.lds_per_cu / tile.lds_bytes();
        let slots = by_regs.min(by_lds).max(1);
        let cost = |sharing: u32| tuned.costs.iter().find(|c| (c.0, c.1, c.2) == (tile.block_m, tile.block_n, sharing)).map(|c| c.3);
        // The table holds 1 and the gfx942 slot count; where this architecture holds more
        // workgroups per CU (gfx950's 160 KiB LDS), the CU is taken as already saturated at the
        // largest tabled sharing, so time grows in proportion (an approximation until a gfx950
        // machine model exists).
        let widest = tuned.costs.iter().filter(|c| (c.0, c.1) == (tile.block_m, tile.block_n) && c.2 <= slots).max_by_key(|c| c.2);
        let at_slots = cost(slots).or_else(|| widest.map(|c| c.3 * f64::from(slots) / f64::from(c.2)));
        let cycles_per_kb = cost(1).zip(at_slots).map(|(a, b)| [a, b]);
        Ok(Candidate { tile, splits: 1, stream_k: None, workgroup_size: tile::THREADS, slots_per_cu: slots, cycles_per_kb })
    };
    Ok([make(tiles[0], vgprs[0])?, make(tiles[1], vgprs[1])?, make(tiles[2], vgprs[2])?])
}

/// VGPRs of the dense split-K kernels (`fp8gemm info`; `tests/dense_kernel.rs` checks them).
const SPLITK_VGPRS: [u32; 3] = [76, 134, 210];

/// The split-K candidates of `kind` for `nkb` K blocks: every split-K tile with every split
/// count `2 ..= min(nkb, MAX_SPLITS)` (none for the m-grouped kinds, which have no split-K
/// kernels). They run the dense main loop, so they share its cost rows.
fn split_candidates(arch: Arch, kind: GemmKind, nkb: u32) -> Result<Vec<Candidate>, ConfigError> {
    if kind != GemmKind::Dense {
        return Ok(Vec::new());
    }
    let base = candidates(arch, kind)?;
    let spec = arch_spec(arch);
    let mut v = Vec::new();
    for (i, t) in tile::DENSE_SPLITK_TILES.into_iter().enumerate() {
        let by_regs = waves_per_simd(SPLITK_VGPRS[i]) / (tile::THREADS / tile::WAVE / 4);
        let slots = by_regs.min(spec.lds_per_cu / t.lds_bytes()).max(1);
        for splits in 2..=nkb.min(MAX_SPLITS) {
            v.push(Candidate { tile: t, splits, slots_per_cu: slots, ..base[i] });
        }
    }
    Ok(v)
}

/// VGPRs of the dense stream-K kernels (`fp8gemm info`; `tests/dense_kernel.rs` checks that
/// they allow as many workgroups per CU as the tile's LDS).
const STREAMK_VGPRS: [u32; 3] = [104, 146, 224];

/// Workgroups per CU of stream-K tile `i` of [`fp8gemm_device::streamk::STREAMK_TILES`].
fn streamk_slots(arch: Arch, i: usize) -> u32 {
    let t = STREAMK_TILES[i];
    let by_regs = waves_per_simd(STREAMK_VGPRS[i]) / (tile::THREADS / tile::WAVE / 4);
    by_regs.min(arch_spec(arch).lds_per_cu / t.lds_bytes()).max(1)
}

/// The default data-parallel head of a stream-K launch of `tiles` tiles on `wave` workgroup
/// slots (`CUs · slots per CU`): the whole waves that leave at least one tile for the tail.
pub fn streamk_default_dp(tiles: u32, wave: u32) -> u32 {
    if wave == 0 || tiles == 0 { 0 } else { (tiles - 1) / wave * wave }
}

/// How much slower a 128-K block of a stream-K tail runs than the `cost` rows say (the second
/// piece's prologue, the partial stores and the reduction, and the lost L2 sharing: workgroups
/// that run together read the operands of different K ranges). Fitted by hand to timing-model
/// runs on MI300X (modelled time ÷ `⌈T·nkb/g⌉ · cycles_per_kb` at the model's 1.2 GHz, forced
/// stream-K, no head unless stated): 1024×2048×7168 64×128 g = 608: 1.67, 64×64 g = 1216: 1.63;
/// 6144×768×7168 64×128 g = 608: 1.73; 1664×768×7168 64×128 g = 608: 2.07, 64×64 g = 1216:
/// 1.94; 1408×2048×7168 64×128 g = 608: 1.83; 8192×2048×7168 64×128 head 1824, g = 608: ≈ 2.0;
/// 4096×2048×7168 128×128 g = 608: 1.28. (The data-parallel estimates run 1.03–1.11 under the
/// model on the same shapes.)
const STREAMK_TAIL_FACTOR: f64 = 1.75;
/// The same for the blocks of a split-K workgroup (its hand-off and reduction are counted
/// apart, [`splitk_extra_cycles`]): 1024×2048×7168 128×128 / 4 splits 1.33, 64×128 / 2 1.32;
/// 1664×768×7168 64×128 / 3 1.41; 1408×2048×7168 128×128 / 2 1.23; 6144×768×7168 128×128 / 2
/// 1.26 (modelled ÷ estimated, MI300X).
const SPLITK_BLOCK_FACTOR: f64 = 1.25;

/// The stream-K candidates of a dense problem: every stream-K tile with `g` ∈ {`CUs · s`:
/// `s = slots … 1`} workgroups after a data-parallel head of the default whole waves
/// ([`streamk_default_dp`], tail ≤ one wave), where the schedule is valid (tail ≤
/// [`tile::SPLITK_MAX_TILES`] tiles, tail tiles ≤ `g` ≤ its K iterations).
fn streamk_candidates(desc: &GemmDesc) -> Result<Vec<Candidate>, ConfigError> {
    if desc.kind != GemmKind::Dense {
        return Ok(Vec::new());
    }
    let base = candidates(desc.arch, desc.kind)?;
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let mut v = Vec::new();
    for (i, t) in STREAMK_TILES.into_iter().enumerate() {
        let slots = streamk_slots(desc.arch, i);
        let tiles = t.grid(desc.m, desc.n);
        let wave = desc.cus * slots;
        let dps = [streamk_default_dp(tiles, wave)];
        // One to `slots` stream-K workgroups per CU (fewer need less workspace).
        let gs: Vec<u32> = (1..=slots).rev().map(|s| desc.cus * s).collect();
        for &dp in &dps {
            for &g in &gs {
                if StreamKSchedule::new(tiles, nkb, dp, g).is_ok() {
                    v.push(Candidate { tile: t, splits: 1, stream_k: Some((dp, g)), slots_per_cu: slots, ..base[i] });
                }
            }
        }
    }
    Ok(v)
}

/// The stream-K configurations the model weighs for `desc` (for `fp8gemm tune`): `(tile,
/// sk_wgs, dp_tiles)` of every stream-K candidate (none for the m-grouped kinds).
pub fn streamk_schedules(desc: &GemmDesc) -> Result<Vec<StreamKSchedule3>, ConfigError> {
    Ok(streamk_candidates(desc)?.into_iter().filter_map(|c| c.stream_k.map(|(dp, g)| ((c.tile.block_m, c.tile.block_n), g, dp))).collect())
}

/// Modelled cycles of a stream-K candidate: the data-parallel head's rounds of whole tiles,
/// then the tail, where each of the `g` workgroups runs `⌈T·nkb / g⌉` blocks (the CUs holding
/// `⌈g / CUs⌉` of them at a time), each [`STREAMK_TAIL_FACTOR`] times the `cost` rows when
/// tiles are split, plus then split-K's hand-off and the reduction of the most contributors a
/// tail tile can have.
fn streamk_time(c: &Candidate, spec: ArchSpec, desc: &GemmDesc) -> Result<f64, ConfigError> {
    let cost = c.cycles_per_kb.ok_or_else(|| {
        ConfigError::Tuned(format!("no cost rows for tile {}x{} (1 and {} workgroups per CU)", c.tile.block_m, c.tile.block_n, c.slots_per_cu))
    })?;
    let Some((dp, g)) = c.stream_k else { return Err(ConfigError::Tuned("not a stream-K candidate".into())) };
    let (cus, slots) = (u64::from(spec.cus.max(1)), u64::from(c.slots_per_cu));
    let per_kb = |sharing: u64| {
        if slots <= 1 { cost[0] } else { cost[0] + (sharing.clamp(1, slots) - 1) as f64 / (slots - 1) as f64 * (cost[1] - cost[0]) }
    };
    let nkb = u64::from(desc.k / tile::SCALE_BLOCK_K);
    let tiles = u64::from(c.tile.grid(desc.m, desc.n));
    let (dp, g) = (u64::from(dp), u64::from(g));
    let wave = cus * slots;
    let head = if dp == 0 { 0.0 } else { dp.div_ceil(wave) as f64 * nkb as f64 * per_kb(slots.min(dp.div_ceil(cus))) };
    let iters = (tiles - dp) * nkb;
    let per = iters.div_ceil(g);
    let split = !(iters.is_multiple_of(g) && per.is_multiple_of(nkb));
    let (factor, reduce) = if split {
        // The reduction of the most contributors a tile can have, as split-K's.
        let most = (nkb.div_ceil((iters / g).max(1)) + 1).min(g);
        (STREAMK_TAIL_FACTOR, SPLITK_FIXED_CYCLES + most as f64 * f64::from(c.tile.block_m * c.tile.block_n * 4) / SPLITK_REDUCE_BYTES_PER_CYCLE)
    } else {
        (1.0, 0.0)
    };
    let tail = g.div_ceil(wave) as f64 * (per as f64 * per_kb(slots.min(g.div_ceil(cus))) * factor + reduce);
    Ok(head + tail)
}

/// Workgroups per CU a tile's kernel holds at once on `arch` (for `fp8gemm tune`).
pub fn slots_per_cu(arch: Arch, kind: GemmKind, block_m: u32, block_n: u32) -> Option<u32> {
    let spec = arch_spec(arch);
    let (tiles, vgprs) = match kind {
        GemmKind::Dense => (tile::DENSE_TILES, [76, 124, 222]),
        GemmKind::MGroupedContiguous => (tile::CONTIGUOUS_TILES, [78, 126, 226]),
        GemmKind::MGroupedMasked => (tile::MASKED_TILES, [76, 124, 222]),
    };
    let i = tiles.iter().position(|t| (t.block_m, t.block_n) == (block_m, block_n))?;
    let by_regs = waves_per_simd(vgprs[i]) / (tile::THREADS / tile::WAVE / 4);
    Some(by_regs.min(spec.lds_per_cu / tiles[i].lds_bytes()).max(1))
}

/// The tiles of one entry point, `(block_m, block_n)`.
pub fn tiles(kind: GemmKind) -> [(u32, u32); 3] {
    let t = match kind {
        GemmKind::Dense => tile::DENSE_TILES,
        GemmKind::MGroupedContiguous => tile::CONTIGUOUS_TILES,
        GemmKind::MGroupedMasked => tile::MASKED_TILES,
    };
    [(t[0].block_m, t[0].block_n), (t[1].block_m, t[1].block_n), (t[2].block_m, t[2].block_n)]
}

/// Checks the kernels' shape requirements (per kind: `m` is the dense M, `m_sum` or `m_max`).
pub(crate) fn validate(desc: &GemmDesc) -> Result<(), ConfigError> {
    let shape = |arg, value: u32, expected| Err(ConfigError::Shape { arg, value: value.into(), expected });
    if desc.m == 0 {
        return shape("m", desc.m, "at least 1");
    }
    if desc.kind != GemmKind::Dense && desc.groups == 0 {
        return shape("groups", desc.groups, "at least 1");
    }
    if desc.kind == GemmKind::MGroupedContiguous && !desc.m.is_multiple_of(tile::M_ALIGNMENT_CONTIGUOUS) {
        return shape("m", desc.m, "a multiple of 128 (the contiguous layout's alignment)");
    }
    if desc.n == 0 || !desc.n.is_multiple_of(tile::N_ALIGN) {
        return shape("n", desc.n, "a positive multiple of 4");
    }
    if desc.k == 0 || !desc.k.is_multiple_of(tile::K_ALIGN) {
        return shape("k", desc.k, "a positive multiple of 128");
    }
    let (m, n, k) = (u64::from(desc.m), u64::from(desc.n), u64::from(desc.k));
    let limit = tile::MAX_TENSOR_BYTES;
    let max_tile = 128;
    // Masked: the group count multiplies every tensor; each group's slice is addressed like a
    // dense problem of m_max rows. Contiguous: B and SFB are multiplied by the group count.
    let g = u64::from(desc.groups.max(1));
    let (ga, gb) = match desc.kind {
        GemmKind::Dense => (1, 1),
        GemmKind::MGroupedContiguous => (1, g),
        GemmKind::MGroupedMasked => (g, g),
    };
    let tensors =
        [("a", (m + max_tile) * k), ("b", (n + max_tile) * k), ("d", (m + max_tile) * n * 2), ("a", ga * m * k), ("b", gb * n * k), ("d", ga * m * n * 2)];
    for (tensor, bytes) in tensors {
        if bytes >= limit {
            return Err(ConfigError::TooLarge { tensor, bytes, limit });
        }
    }
    Ok(())
}

/// Workgroups a candidate launches for `desc`, and the tiles that do work (the model's input).
fn grid_and_work(c: &Candidate, desc: &GemmDesc) -> Result<(u32, u64), ConfigError> {
    tile_grid_and_work(c.tile.block_m, c.tile.block_n, c.splits, desc)
}

/// [`grid_and_work`] of a `block_m × block_n` tile with `splits` K splits (any kernel family:
/// the logical-B tiles and the bs tiles share the grids and the work model).
fn tile_grid_and_work(block_m: u32, block_n: u32, splits: u32, desc: &GemmDesc) -> Result<(u32, u64), ConfigError> {
    let t = DenseTile { name: "", block_m, block_n };
    Ok(match desc.kind {
        GemmKind::Dense => {
            let grid = u64::from(t.grid(desc.m, desc.n)) * u64::from(splits);
            let grid = u32::try_from(grid).map_err(|_| ConfigError::TooLarge { tensor: "grid", bytes: grid, limit: u64::from(u32::MAX) })?;
            (grid, u64::from(grid))
        }
        GemmKind::MGroupedContiguous => {
            let grid = t.grid(desc.m, desc.n);
            // Each non-empty group ends in an aligned block that is part padding; with the
            // padding length taken as uniform in 0..alignment, half of those blocks have an
            // all-padding second half, which a half-alignment-high tile skips.
            // Generally, a tile of height `bm` is all padding `(align/bm − 1)/2` times per such
            // block on average (64: half the time; 128: never; 32: 1.5 times).
            let align = tile::M_ALIGNMENT_CONTIGUOUS;
            let live_groups = desc.groups.min(desc.m / align);
            let skipped = if t.block_m > 0 && t.block_m < align { live_groups * (align / t.block_m - 1) / 2 } else { 0 };
            (grid, u64::from(grid - skipped * desc.n.div_ceil(t.block_n)))
        }
        GemmKind::MGroupedMasked => {
            let g = u64::from(desc.groups);
            let grid = g * u64::from(t.grid(desc.m, desc.n));
            let grid = u32::try_from(grid).map_err(|_| ConfigError::TooLarge { tensor: "grid", bytes: grid, limit: u64::from(u32::MAX) })?;
            let expected = desc.expected_m.clamp(1, desc.m);
            (grid, g * u64::from(t.grid(expected, desc.n)))
        }
    })
}

/// Modelled cycles of `c` running `tiles` working tiles of reduction length `k`: full rounds
/// of `CUs · slots` workgroups, each CU running `sharing` at once, at the timing model's cycles
/// per 128-K block for that sharing (interpolated between 1 and `slots`).
fn modelled_time(c: &Candidate, spec: ArchSpec, tiles: u64, k: u32) -> Result<f64, ConfigError> {
    let cost = c.cycles_per_kb.ok_or_else(|| {
        ConfigError::Tuned(format!("no cost rows for tile {}x{} (1 and {} workgroups per CU)", c.tile.block_m, c.tile.block_n, c.slots_per_cu))
    })?;
    let cus = u64::from(spec.cus.max(1));
    let slots = u64::from(c.slots_per_cu);
    let per_kb = |sharing: u64| {
        if slots <= 1 {
            cost[0]
        } else {
            let f = (sharing.clamp(1, slots) - 1) as f64 / (slots - 1) as f64;
            cost[0] + f * (cost[1] - cost[0])
        }
    };
    // Each workgroup of a split-K candidate runs ⌈nkb / splits⌉ blocks (at most), slower than
    // the cost rows by SPLITK_BLOCK_FACTOR.
    let nkb = f64::from((k / tile::SCALE_BLOCK_K).div_ceil(c.splits.max(1)));
    let factor = if c.splits > 1 { SPLITK_BLOCK_FACTOR } else { 1.0 };
    let round = |sharing: u64| nkb * per_kb(sharing) * factor + splitk_extra_cycles(c);
    // Full rounds with every slot busy, then the last, partial round at its own sharing (a
    // last round of fewer workgroups than CUs runs one per CU, at the faster 1-per-CU cost:
    // 16384×2048×7168 at 128×128 is 3 full rounds and 224 tiles, not 4 full rounds).
    let (full, rest) = (tiles / (cus * slots), tiles % (cus * slots));
    let last = if rest == 0 { 0.0 } else { round(slots.min(rest.div_ceil(cus))) };
    Ok(full as f64 * round(slots) + last)
}

/// Why a config was chosen (printed with `FP8GEMM_PRINT_CONFIGS=1`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Choice {
    Forced,
    /// The m-grouped bs rule: rows per busiest CU with 32- and with 64-row tiles.
    GroupedBsRule(u64, u64),
    /// The m-grouped bs rule's tile, then the masked split-K estimate over this many working
    /// tiles (from `expected_m`).
    GroupedBsSplit(u64, u64, u64),
    /// The masked narrow rule ([`masked_narrow_rule`]) over this many working 32 × 64 tiles.
    MaskedNarrow(u64),
    Table(f64),
    /// The table's split row (µs) beat its best unsplit row (µs).
    TableSplit(f64, f64),
    /// The table's stream-K row (µs) beat its best unsplit row (µs).
    TableStreamK(f64, f64),
    /// The table's split row was faster but did not fit the workspace: its best unsplit row.
    TableUnsplit(f64),
    Model(f64),
}

/// The model preferred a split-K config whose workspace the launch did not have, so a config
/// that fits was chosen instead (the entry points report it in their `GemmRun`; the `fp8gemm` CLI
/// prints it with `FP8GEMM_PRINT_CONFIGS=1`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkspaceLimit {
    /// The config the model prefers.
    pub preferred: GemmConfig,
    /// FP32 elements of workspace it needs.
    pub needed: u64,
    /// FP32 elements the launch had.
    pub available: u64,
}

impl fmt::Display for WorkspaceLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "split {} preferred ({}) but the workspace holds {} < {} floats", self.preferred.splits, self.preferred.kernel, self.available, self.needed)
    }
}

/// Chooses the kernel and launch geometry the model prefers for `desc` under `overrides`,
/// whatever workspace it needs (see [`get_config_for_workspace`] for the rules and
/// [`GemmConfig::workspace_floats`] for the need).
///
/// At level 1 or 2 of [`set_print_configs`] each distinct chosen config is printed once (to
/// stderr) with the problem that first chose it and why.
pub fn get_best_config(desc: &GemmDesc, overrides: &Overrides) -> Result<GemmConfig, ConfigError> {
    get_config_for_workspace(desc, overrides, u64::MAX).map(|(c, _)| c)
}

/// Chooses the kernel and launch geometry for `desc` under `overrides` when the launch has
/// `available` FP32 elements of workspace. Dense problems go to the generated selector
/// ([`crate::select::plan`], logical B); the m-grouped ones are chosen here:
/// 1. a forced tile ([`Overrides::tile`]) and/or split count ([`Overrides::split`]) or
///    stream-K schedule ([`Overrides::stream_k`]): taken as given, the unforced half chosen by the
///    model (a forced tile alone means no split; a forced split count must be `≤ k/128`);
///    never replaced for lack of workspace (the caller reports the shortfall);
/// 2. else the faster of the problem's `best` (no split) and `split` rows of the tuned table
///    (`host/tuned/<arch>.csv`, written by `fp8gemm tune`), if any;
/// 3. else the smallest `modelled_time` estimate over every candidate: the three tiles
///    without split, and (dense only) the split-K tiles with 2 ..= min(k/128, [`MAX_SPLITS`])
///    splits — per-split K length, `tiles · splits` workgroups, plus the hand-off and
///    reduction cost.
///
/// A split-K choice of 2. or 3. that needs more than `available` floats is replaced by the best
/// choice that fits (the table's `best` row, or the model's best fitting candidate; no split
/// always fits), and the replacement is returned as a [`WorkspaceLimit`].
pub fn get_config_for_workspace(desc: &GemmDesc, overrides: &Overrides, available: u64) -> Result<(GemmConfig, Option<WorkspaceLimit>), ConfigError> {
    validate(desc)?;
    if desc.kind == GemmKind::Dense {
        // Dense problems: the generated selector over the kernel registry.
        let (plan, limit) = crate::select::plan(desc, crate::layout::WeightLayout::Logical, overrides, available)?;
        return Ok((plan.config(desc.arch), limit));
    }
    let spec = ArchSpec { cus: desc.cus.max(1), ..arch_spec(desc.arch) };
    let cands = candidates(desc.arch, desc.kind)?;
    let sk_cands = streamk_candidates(desc)?;
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    // Split-K launches have at most `SPLITK_MAX_TILES` output tiles (the workspace's fixed
    // counter region); larger problems never split.
    let tiles_fit = |c: &Candidate| u64::from(c.tile.grid(desc.m, desc.n)) <= u64::from(tile::SPLITK_MAX_TILES);
    let all_splits = split_candidates(desc.arch, desc.kind, nkb)?;
    let splits: Vec<Candidate> = all_splits.iter().copied().filter(tiles_fit).collect();
    let make = |c: &Candidate| -> Result<GemmConfig, ConfigError> {
        let (grid, _) = grid_and_work(c, desc)?;
        let stream_k = c.stream_k.map(|(dp_tiles, sk_wgs)| StreamK { tiles: c.tile.grid(desc.m, desc.n), nkb, dp_tiles, sk_wgs });
        let grid = stream_k.map_or(grid, |sk| sk.dp_tiles + sk.sk_wgs);
        Ok(GemmConfig {
            stream_k,
            block_m: c.tile.block_m,
            block_n: c.tile.block_n,
            block_k: c.tile.block_k(),
            workgroup_size: c.workgroup_size,
            lds_bytes: c.tile.lds_bytes(),
            kernel: c.tile.name,
            grid,
            splits: c.splits,
            remap: Remap::Xcd { xcds: spec.xcds },
            arch: desc.arch,
        })
    };
    // The model's best candidate among `pool` (ties to more workgroups).
    let model_best = |pool: &mut dyn Iterator<Item = &Candidate>| -> Result<Option<(f64, Candidate)>, ConfigError> {
        let mut best: Option<(f64, u32, Candidate)> = None;
        for c in pool {
            let (grid, work) = grid_and_work(c, desc)?;
            let (grid, t) = match c.stream_k {
                Some((dp, g)) => (dp + g, streamk_time(c, spec, desc)?),
                None => (grid, modelled_time(c, spec, work, desc.k)?),
            };
            if verbose_candidates() {
                let how = match c.stream_k {
                    Some((dp, g)) => format!("stream-K {dp}+{g}"),
                    None if c.splits > 1 => format!("split-K {}", c.splits),
                    None => "data-parallel".to_string(),
                };
                eprintln!(
                    "fp8gemm candidate: {} m={} n={} k={}: {}x{} {how}: {t:.0} cycles estimated",
                    desc.kind, desc.m, desc.n, desc.k, c.tile.block_m, c.tile.block_n
                );
            }
            if best.is_none_or(|(bt, bg, _)| t < bt || (t == bt && grid > bg)) {
                best = Some((t, grid, *c));
            }
        }
        Ok(best.map(|(t, _, c)| (t, c)))
    };
    let no_kernel = || ConfigError::NoKernel { kind: desc.kind, arch: desc.arch };
    let tile_names = "64x64, 64x128, 128x128";
    let (forced_t, forced_s, forced_sk) = (overrides.tile, overrides.split, overrides.stream_k);
    let mut limited = None;
    let (c, why) = if let Some((g, dp)) = forced_sk {
        let schedule = match dp {
            Some(dp) => format!("{g}/{dp}"),
            None => g.to_string(),
        };
        let err = |expected: String| ConfigError::ForcedStreamK { schedule: schedule.clone(), expected };
        if desc.kind != GemmKind::Dense {
            return Err(err(format!("no stream-K (no stream-K kernel for the {} layout)", desc.kind)));
        }
        if forced_s.is_some_and(|s| s > 1) {
            return Err(err("no forced split-K at the same time (Overrides::split > 1)".into()));
        }
        let mut pool = Vec::new();
        let mut why_not = Vec::new();
        for (i, t) in STREAMK_TILES.into_iter().enumerate() {
            if forced_t.is_some_and(|f| f != (t.block_m, t.block_n)) {
                continue;
            }
            let slots = streamk_slots(desc.arch, i);
            let tiles = t.grid(desc.m, desc.n);
            let dp = dp.unwrap_or_else(|| streamk_default_dp(tiles, spec.cus * slots));
            match StreamKSchedule::new(tiles, nkb, dp, g) {
                Ok(_) => pool.push(Candidate { tile: t, splits: 1, stream_k: Some((dp, g)), slots_per_cu: slots, ..cands[i] }),
                Err(e) => why_not.push(format!(
                    "{}x{}: {} tiles, {dp} data-parallel: {}",
                    t.block_m,
                    t.block_n,
                    tiles,
                    match e {
                        fp8gemm_device::streamk::StreamKScheduleError::NoTail => "data-parallel tiles below the tile count".to_string(),
                        fp8gemm_device::streamk::StreamKScheduleError::TooManyTiles => format!("at most {} stream-K tiles", tile::SPLITK_MAX_TILES),
                        fp8gemm_device::streamk::StreamKScheduleError::Workgroups => format!(
                            "{} ..= {} workgroups (the tail's tiles ..= its K iterations)",
                            tiles.saturating_sub(dp),
                            u64::from(tiles.saturating_sub(dp)) * u64::from(nkb)
                        ),
                        fp8gemm_device::streamk::StreamKScheduleError::Overflow => "a tail that fits in 32-bit counts".to_string(),
                    }
                )),
            }
        }
        if let Some((bm, bn)) = forced_t
            && !STREAMK_TILES.iter().any(|t| (t.block_m, t.block_n) == (bm, bn))
        {
            return Err(ConfigError::ForcedTile { tile: format!("{bm}x{bn}"), available: tile_names });
        }
        let c = model_best(&mut pool.iter())?.ok_or_else(|| err(why_not.join("; ")))?.1;
        (c, Choice::Forced)
    } else if forced_t.is_some() || forced_s.is_some() {
        let s = forced_s.unwrap_or(1);
        if s == 0 {
            return Err(ConfigError::ForcedSplit { splits: "0".into(), expected: "at least 1".into() });
        }
        let pool: Vec<Candidate> = if s == 1 {
            cands.to_vec()
        } else {
            if desc.kind != GemmKind::Dense {
                return Err(ConfigError::ForcedSplit { splits: s.to_string(), expected: format!("1 (no split-K kernel for the {} layout)", desc.kind) });
            }
            if s > nkb.min(MAX_SPLITS) {
                return Err(ConfigError::ForcedSplit {
                    splits: s.to_string(),
                    expected: format!("at most {} (k/128 = {nkb} blocks, MAX_SPLITS = {MAX_SPLITS})", nkb.min(MAX_SPLITS)),
                });
            }
            all_splits.iter().filter(|c| c.splits == s).copied().collect()
        };
        let too_many = |c: &Candidate| ConfigError::ForcedSplit {
            splits: s.to_string(),
            expected: format!("1 ({}×{} is more than {} output tiles of {}×{})", desc.m, desc.n, tile::SPLITK_MAX_TILES, c.tile.block_m, c.tile.block_n),
        };
        let c = match forced_t {
            Some((bm, bn)) => *pool
                .iter()
                .find(|c| (c.tile.block_m, c.tile.block_n) == (bm, bn))
                .ok_or_else(|| ConfigError::ForcedTile { tile: format!("{bm}x{bn}"), available: tile_names })?,
            None if s > 1 => match model_best(&mut pool.iter().filter(|c| tiles_fit(c)))? {
                Some((_, c)) => c,
                None => return Err(too_many(&pool[0])),
            },
            None => model_best(&mut pool.iter())?.ok_or_else(no_kernel)?.1,
        };
        if s > 1 && !tiles_fit(&c) {
            return Err(too_many(&c));
        }
        (c, Choice::Forced)
    } else {
        let table = tuned(desc.arch)?;
        // The table was written for the architecture's full CU count.
        let full_device = desc.cus == arch_spec(desc.arch).cus;
        let key = |b: &TunedBest| (b.kind, b.groups, b.m, b.n, b.k, b.expected_m) == (desc.kind, desc.groups, desc.m, desc.n, desc.k, desc.expected_m);
        let pick = |bm: u32, bn: u32| cands.iter().find(|c| (c.tile.block_m, c.tile.block_n) == (bm, bn)).copied();
        let best_row = table.best.iter().find(|b| full_device && key(b)).and_then(|b| Some((pick(b.tile.0, b.tile.1)?, b.us)));
        let split_row = table.split.iter().find(|(b, _)| key(b)).and_then(|(b, s)| {
            let c = splits.iter().find(|c| (c.tile.block_m, c.tile.block_n, c.splits) == (b.tile.0, b.tile.1, *s))?;
            Some((*c, b.us))
        });
        let sk_row = table.streamk.iter().find(|(b, _, _)| full_device && key(b)).and_then(|(b, g, dp)| {
            let i = STREAMK_TILES.iter().position(|t| (t.block_m, t.block_n) == b.tile)?;
            StreamKSchedule::new(STREAMK_TILES[i].grid(desc.m, desc.n), nkb, *dp, *g).ok()?;
            let c = Candidate { tile: STREAMK_TILES[i], splits: 1, stream_k: Some((*dp, *g)), slots_per_cu: streamk_slots(desc.arch, i), ..cands[i] };
            Some((c, b.us))
        });
        // A stream-K row faster than the split and unsplit rows takes the split row's place.
        let split_row = match (split_row, sk_row) {
            (Some(sp), Some(sk)) if sk.1 < sp.1 => Some(sk),
            (None, Some(sk)) => Some(sk),
            (sp, _) => sp,
        };
        // A stream-K row must win by STREAMK_MIN_GAIN: modelled times move by about ±2 % with code
        // layout, and a stream-K launch needs a workspace of partial tiles.
        let needed_gain = |c: &Candidate| if c.stream_k.is_some() { 1.0 - STREAMK_MIN_GAIN } else { 1.0 };
        match (best_row, split_row) {
            (Some(b), Some(sp)) if sp.1 < b.1 * needed_gain(&sp.0) => {
                let need = make(&sp.0)?.workspace_floats();
                if need <= available {
                    (sp.0, if sp.0.stream_k.is_some() { Choice::TableStreamK(sp.1, b.1) } else { Choice::TableSplit(sp.1, b.1) })
                } else {
                    limited = Some(WorkspaceLimit { preferred: make(&sp.0)?, needed: need, available });
                    (b.0, Choice::TableUnsplit(b.1))
                }
            }
            (Some(b), _) => (b.0, Choice::Table(b.1)),
            _ => {
                let all = model_best(&mut cands.iter().chain(splits.iter()).chain(sk_cands.iter()))?.ok_or_else(no_kernel)?;
                let need = make(&all.1)?.workspace_floats();
                if need <= available {
                    (all.1, Choice::Model(all.0))
                } else {
                    limited = Some(WorkspaceLimit { preferred: make(&all.1)?, needed: need, available });
                    let fit = model_best(
                        &mut cands.iter().chain(splits.iter()).chain(sk_cands.iter()).filter(|c| make(c).is_ok_and(|g| g.workspace_floats() <= available)),
                    )?
                    .ok_or_else(no_kernel)?;
                    (fit.1, Choice::Model(fit.0))
                }
            }
        }
    };
    let config = make(&c)?;
    print_once(desc, &config, why, limited.as_ref());
    Ok((config, limited))
}

/// How much of its choice the selector prints to stderr: 0 nothing (the library's default), 1
/// each distinct configuration once with why it was chosen, 2 also every candidate's estimate.
static PRINT_CONFIGS: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Makes the selector print its choices to stderr (a diagnostic for the `fp8gemm` CLI's
/// `FP8GEMM_PRINT_CONFIGS`; see [`PRINT_CONFIGS`]): 0 off, 1 each configuration once, 2 also
/// every candidate's estimate.
pub fn set_print_configs(level: u8) {
    PRINT_CONFIGS.store(level, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`set_print_configs`] asked for any printing.
pub(crate) fn printing_configs() -> bool {
    PRINT_CONFIGS.load(std::sync::atomic::Ordering::Relaxed) > 0
}

/// Level 2 of [`set_print_configs`]: also print every candidate the cost estimate weighs.
fn verbose_candidates() -> bool {
    PRINT_CONFIGS.load(std::sync::atomic::Ordering::Relaxed) >= 2
}

/// Prints `config` once per process at level 1 or 2 of [`set_print_configs`].
fn print_once(desc: &GemmDesc, config: &GemmConfig, why: Choice, limited: Option<&WorkspaceLimit>) {
    static SEEN: OnceLock<Mutex<HashSet<GemmConfig>>> = OnceLock::new();
    if PRINT_CONFIGS.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        return;
    }
    if first_sighting(SEEN.get_or_init(|| Mutex::new(HashSet::new())), config) {
        let why = match why {
            Choice::Forced => "forced tile / split / stream-K (Overrides)".to_string(),
            Choice::GroupedBsRule(r32, r64) => format!(
                "pre-shuffled B: m-grouped bs rule (rows on the busiest CU: {r32} with 32-row tiles, {r64} with 64-row tiles; 64-row tiles count {BS_BM64_GAIN}× faster when each CU gets at least 2 of them)"
            ),
            Choice::GroupedBsSplit(r32, r64, w) => format!(
                "pre-shuffled B: m-grouped bs rule (rows on the busiest CU: {r32} with 32-row tiles, {r64} with 64-row tiles), then masked split-K {} by the bs split estimate over {w} working tiles (from expected_m)",
                config.splits
            ),
            Choice::MaskedNarrow(w) => format!(
                "pre-shuffled B: masked narrow rule ({w} working 32x64 tiles from expected_m, unsplit, one barrier per two K blocks: config::masked_narrow_rule)"
            ),
            Choice::Table(us) => format!("tuned table: fastest config for this problem, {us:.2} µs modelled"),
            Choice::TableSplit(us, unsplit) => {
                format!("tuned table: split-K {} at {us:.2} µs modelled beats the fastest unsplit tile at {unsplit:.2} µs", config.splits)
            }
            Choice::TableStreamK(us, unsplit) => {
                format!("tuned table: stream-K at {us:.2} µs modelled beats the fastest data-parallel tile at {unsplit:.2} µs")
            }
            Choice::TableUnsplit(us) => format!("tuned table: fastest unsplit tile, {us:.2} µs modelled"),
            Choice::Model(cyc) if config.stream_k.is_some() => {
                format!(
                    "timing-model cost estimate {cyc:.0} cycles with stream-K, below every data-parallel and split-K candidate (no tuned row for this problem)"
                )
            }
            Choice::Model(cyc) if config.splits > 1 => {
                format!("timing-model cost estimate {cyc:.0} cycles with split-K {} (no tuned row for this problem)", config.splits)
            }
            Choice::Model(cyc) => format!("timing-model cost estimate {cyc:.0} cycles (no tuned row for this problem)"),
        };
        let arch_note = if desc.arch == Arch::Gfx950 { "; gfx950 uses the gfx942 figures" } else { "" };
        let limit_note = limited.map(|l| format!("; {l}")).unwrap_or_default();
        eprintln!(
            "fp8gemm config: {config} (first for {} m={} n={} k={} groups={} expected_m={}; {why}{arch_note}{limit_note})",
            desc.kind, desc.m, desc.n, desc.k, desc.groups, desc.expected_m
        );
    }
}

/// Prints a choice of the generated selector ([`crate::select::plan`]) once per distinct
/// config at level 1 or 2 of [`set_print_configs`].
pub(crate) fn report_choice(desc: &GemmDesc, config: &GemmConfig, label: &str, estimate_s: f64, limited: Option<&WorkspaceLimit>) {
    static SEEN: OnceLock<Mutex<HashSet<GemmConfig>>> = OnceLock::new();
    if PRINT_CONFIGS.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        return;
    }
    if first_sighting(SEEN.get_or_init(|| Mutex::new(HashSet::new())), config) {
        let limit_note = limited.map(|l| format!("; {l}")).unwrap_or_default();
        eprintln!(
            "fp8gemm config: {config} (first for {} m={} n={} k={}; {label}: the generated cost model's smallest estimate, {:.2} µs modelled{limit_note})",
            desc.kind,
            desc.m,
            desc.n,
            desc.k,
            estimate_s * 1e6
        );
    }
}

/// Records `config` in `seen`; true the first time a config is seen.
fn first_sighting(seen: &Mutex<HashSet<GemmConfig>>, config: &GemmConfig) -> bool {
    // A poisoned lock only means another thread panicked while printing; the set is still valid.
    seen.lock().unwrap_or_else(|e| e.into_inner()).insert(*config)
}

/// The spec among `specs` whose symbol is `config`'s kernel (what every `*_kernel_spec` below
/// looks up in its own kernel family).
fn spec_named<A, const N: usize>(specs: [KernelSpec<A>; N], config: &GemmConfig) -> Option<KernelSpec<A>> {
    specs.into_iter().find(|s| s.name == config.kernel)
}

/// The least relative gain (modelled) for which a tuned stream-K row replaces the fastest
/// data-parallel tile: the timing model's figures move by about ±2 % when only the code layout
/// changes, and stream-K needs a workspace of partial tiles (e.g. 77 MB at 4096×7168×2048, where
/// the tuned row is 0.6 % faster: noise, so that shape stays data-parallel).
pub const STREAMK_MIN_GAIN: f64 = 0.02;

/// The launch spec (symbol, workgroup size, argument type) of a dense config's kernel.
pub fn dense_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<DenseGemmArgs>> {
    spec_named([FP8_GEMM_NT_BM64_BN64, FP8_GEMM_NT_BM64_BN128, FP8_GEMM_NT_BM128_BN128], config)
}

/// The launch spec of a dense split-K config's kernel.
pub fn dense_splitk_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<DenseSplitKArgs>> {
    spec_named([FP8_GEMM_NT_SPLITK_BM64_BN64, FP8_GEMM_NT_SPLITK_BM64_BN128, FP8_GEMM_NT_SPLITK_BM128_BN128], config)
}

/// The launch spec of a dense stream-K config's kernel.
pub fn dense_streamk_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<DenseStreamKArgs>> {
    spec_named([FP8_GEMM_NT_STREAMK_BM64_BN64, FP8_GEMM_NT_STREAMK_BM64_BN128, FP8_GEMM_NT_STREAMK_BM128_BN128], config)
}

/// The launch spec of an m-grouped contiguous config's kernel.
pub fn contiguous_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<MGroupedContiguousArgs>> {
    spec_named([M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN64, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM128_BN128], config)
}

/// The launch spec of an m-grouped masked config's kernel.
pub fn masked_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<MGroupedMaskedArgs>> {
    spec_named([M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN64, M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BM128_BN128], config)
}

mod bs;
mod grouped_bs;
pub use bs::*;
pub use grouped_bs::*;

#[cfg(test)]
mod tests {
    use super::*;
    use tile::SPLITK_COUNTER_FLOATS;

    const SHAPES: [(u32, u32, u32); 22] = [
        (6144, 2048, 7168),
        (8192, 768, 7168),
        (1408, 2048, 7168),
        (16384, 2048, 7168),
        (64, 2112, 7168),
        (64, 24576, 1536),
        (64, 32768, 512),
        (64, 7168, 16384),
        (64, 4096, 7168),
        (64, 7168, 2048),
        (128, 2112, 7168),
        (128, 24576, 1536),
        (128, 7168, 2048),
        (4096, 2112, 7168),
        (4096, 24576, 1536),
        (4096, 32768, 512),
        (4096, 7168, 16384),
        (4096, 4096, 7168),
        (4096, 7168, 2048),
        (1, 128, 128),
        (200, 192, 384),
        (127, 4, 128),
    ];

    #[test]
    fn bs_configs_follow_the_device_cu_count() {
        // 64×2112×7168 with 32×64 tiles: 66 tiles, fewer than the CUs either way; the cost model
        // sees the device's CUs (80 on an MI308X), so the plan's workgroups never exceed two
        // rounds of it.
        let desc = GemmDesc::dense(64, 2112, 7168, Arch::Gfx942);
        let (full, small) = (get_bs_config(&desc, &Overrides::NONE).unwrap(), get_bs_config(&desc.with_cus(80), &Overrides::NONE).unwrap());
        assert!(small.grid <= 2 * 80 * 4, "80 CUs: {small}");
        assert!(small.splits <= full.splits, "80 CUs: {} splits, 304 CUs: {}", small.splits, full.splits);
    }

    #[test]
    fn every_config_names_an_existing_kernel_and_covers_the_problem() {
        for arch in Arch::ALL {
            for (m, n, k) in SHAPES {
                let c = get_best_config(&GemmDesc::dense(m, n, k, arch), &Overrides::NONE).unwrap();
                let size = if let Some(sk) = c.stream_k {
                    // Stream-K: a valid schedule over exactly the problem's tiles.
                    let sched = sk.schedule().unwrap_or_else(|| panic!("{c}: invalid schedule"));
                    assert_eq!((sk.tiles, sk.nkb), (m.div_ceil(c.block_m) * n.div_ceil(c.block_n), k / 128), "{c}");
                    assert_eq!((c.grid, c.splits), (sched.grid(), 1), "{c}");
                    dense_streamk_kernel_spec(&c).unwrap_or_else(|| panic!("{c}: no such kernel")).workgroup_size
                } else if c.splits > 1 {
                    dense_splitk_kernel_spec(&c).unwrap_or_else(|| panic!("{c}: no such kernel")).workgroup_size
                } else {
                    dense_kernel_spec(&c).unwrap_or_else(|| panic!("{c}: no such kernel")).workgroup_size
                };
                assert_eq!(size, c.workgroup_size);
                assert!(c.lds_bytes <= 64 * 1024, "{c}");
                assert_eq!(c.lds_bytes, tile::lds_bytes(c.block_m, c.block_n));
                assert_eq!(c.block_k, 128);
                assert!(c.splits >= 1 && c.splits <= (k / 128).min(MAX_SPLITS), "{c}");
                if c.stream_k.is_some() {
                    continue;
                }
                // Grid covers the problem exactly: every tile once (per split), no tile entirely
                // outside.
                assert_eq!(c.grid, m.div_ceil(c.block_m) * n.div_ceil(c.block_n) * c.splits, "{c}");
                assert!(u64::from(c.grid) * u64::from(c.block_m) * u64::from(c.block_n) >= u64::from(m) * u64::from(n));
            }
        }
    }

    #[test]
    fn model_numbers_by_hand() {
        // bm128_bn128 on gfx942: 222 VGPRs → 2 waves/SIMD → 2 workgroups/CU (LDS 32 KiB allows 2).
        let c = candidates(Arch::Gfx942, GemmKind::Dense).unwrap();
        assert_eq!((c[0].slots_per_cu, c[1].slots_per_cu, c[2].slots_per_cu), (4, 2, 2));
        assert!(c.iter().all(|c| c.cycles_per_kb.is_some_and(|k| k[0] > 0.0 && k[1] > 0.0)), "{c:?}");
        // 4096 × 7168: 32 × 56 = 1792 tiles, 608 slots → 3 rounds, 2 sharing, 16 blocks.
        let x = Candidate { cycles_per_kb: Some([1000.0, 1600.0]), ..c[2] };
        assert_eq!(modelled_time(&x, arch_spec(Arch::Gfx942), 32 * 56, 2048).unwrap(), 3.0 * 16.0 * 1600.0);
        // 100 tiles: one round, one workgroup per CU.
        assert_eq!(modelled_time(&x, arch_spec(Arch::Gfx942), 100, 2048).unwrap(), 16.0 * 1000.0);
        let none = Candidate { cycles_per_kb: None, ..c[2] };
        assert!(matches!(modelled_time(&none, arch_spec(Arch::Gfx942), 100, 2048), Err(ConfigError::Tuned(_))));
        assert_eq!(waves_per_simd(222), 2);
        assert_eq!(waves_per_simd(128), 4);
        assert_eq!(waves_per_simd(76), 6);
    }

    #[test]
    fn the_tuned_table_parses_and_covers_every_tile() {
        let t = parse_tuned(TUNED_GFX942).unwrap();
        for kind in [GemmKind::Dense, GemmKind::MGroupedContiguous, GemmKind::MGroupedMasked] {
            candidates(Arch::Gfx942, kind).unwrap();
        }
        assert!(!t.best.is_empty());
        assert!(parse_tuned("cost,64,64,1,-3").is_err());
        assert!(parse_tuned("best,sparse,1,1,1,1,1,64,64,1.0").is_err());
        assert!(parse_tuned("what,1").is_err());
    }

    #[test]
    fn a_forced_tile_wins_and_an_unknown_one_is_an_error() {
        let c = get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942), &Overrides::NONE.with_tile(64, 128)).unwrap();
        let e = get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942), &Overrides::NONE.with_tile(32, 32)).unwrap_err();
        assert_eq!((c.block_m, c.block_n), (64, 128));
        assert!(matches!(e, ConfigError::ForcedTile { .. }), "{e}");
    }

    #[test]
    fn bad_shapes_are_typed_errors() {
        let e = |m, n, k| get_best_config(&GemmDesc::dense(m, n, k, Arch::Gfx942), &Overrides::NONE).unwrap_err();
        assert_eq!(e(0, 128, 128), ConfigError::Shape { arg: "m", value: 0, expected: "at least 1" });
        assert!(matches!(e(64, 130, 128), ConfigError::Shape { arg: "n", value: 130, .. }));
        assert!(matches!(e(64, 128, 100), ConfigError::Shape { arg: "k", value: 100, .. }));
        assert!(matches!(e(1 << 20, 4096, 4096), ConfigError::TooLarge { tensor: "a", .. }));
        let c = |m_sum, groups| get_best_config(&GemmDesc::m_grouped_contiguous(m_sum, 128, 128, groups, Arch::Gfx942), &Overrides::NONE);
        assert!(matches!(c(192, 2), Err(ConfigError::Shape { arg: "m", value: 192, .. })));
        assert!(matches!(c(256, 0), Err(ConfigError::Shape { arg: "groups", value: 0, .. })));
        // 80 experts of 4096 × 7168 FP8 weights: 2.35 GB, beyond 31-bit offsets.
        let big = GemmDesc::m_grouped_contiguous(128, 4096, 7168, 80, Arch::Gfx942);
        assert!(matches!(get_best_config(&big, &Overrides::NONE), Err(ConfigError::TooLarge { tensor: "b", .. })));
        // 128 groups × 4096 rows × 7168: 3.8 GB of activations.
        let masked = GemmDesc::m_grouped_masked(4096, 4096, 7168, 128, 64, Arch::Gfx942);
        assert!(matches!(get_best_config(&masked, &Overrides::NONE), Err(ConfigError::TooLarge { tensor: "a", .. })));
    }

    #[test]
    fn grouped_configs_name_grouped_kernels_and_cover_the_grid() {
        for arch in Arch::ALL {
            for (m_sum, groups) in [(128, 1), (1024, 8), (8192, 4), (32768, 8)] {
                let c = get_best_config(&GemmDesc::m_grouped_contiguous(m_sum, 4096, 7168, groups, arch), &Overrides::NONE).unwrap();
                assert!(contiguous_kernel_spec(&c).is_some(), "{c}");
                assert!(dense_kernel_spec(&c).is_none() && masked_kernel_spec(&c).is_none(), "{c}");
                assert_eq!(c.grid, (m_sum / c.block_m) * 4096 / c.block_n, "{c}");
            }
            // Work model by hand: 32 experts in 4096 rows, 64-row tiles skip 16 half-blocks per
            // column tile; the 128-row tiles skip nothing.
            let desc = GemmDesc::m_grouped_contiguous(4096, 4096, 7168, 32, arch);
            let c = candidates(arch, GemmKind::MGroupedContiguous).unwrap();
            assert_eq!(grid_and_work(&c[0], &desc).unwrap(), (64 * 64, 64 * 64 - 16 * 64));
            assert_eq!(grid_and_work(&c[2], &desc).unwrap(), (32 * 32, 32 * 32));
            // Empty groups do not count: 32 experts but only 2 aligned blocks.
            let desc = GemmDesc::m_grouped_contiguous(256, 4096, 7168, 32, arch);
            assert_eq!(grid_and_work(&c[0], &desc).unwrap(), (4 * 64, 4 * 64 - 64));
            for (m_max, groups, expected) in [(1024, 1, 1024), (512, 2, 512), (256, 4, 256), (4096, 8, 7)] {
                let c = get_best_config(&GemmDesc::m_grouped_masked(m_max, 7168, 2048, groups, expected, arch), &Overrides::NONE).unwrap();
                assert!(masked_kernel_spec(&c).is_some(), "{c}");
                assert_eq!(c.grid, groups * m_max.div_ceil(c.block_m) * 7168 / c.block_n, "{c}");
            }
        }
    }

    #[test]
    fn grouped_bs_configs_name_bs_kernels_and_cover_the_grid() {
        for arch in Arch::ALL {
            for (m_sum, groups) in [(128, 1), (1024, 8), (8192, 4), (32768, 8)] {
                let c = get_grouped_bs_config(&GemmDesc::m_grouped_contiguous(m_sum, 4096, 7168, groups, arch), &Overrides::NONE).unwrap();
                assert!(contiguous_bs_kernel_spec(&c).is_some(), "{c}");
                assert!(contiguous_kernel_spec(&c).is_none() && masked_bs_kernel_spec(&c).is_none(), "{c}");
                // Two A stages and two SFA regions (4·⌈FM/4⌉ slots of 256 bytes below 128 rows).
                let lds = 2 * c.block_m * 128 + if c.block_m == 128 { 32 * c.block_m } else { 2 * 1024 * c.block_m.div_ceil(64) };
                assert_eq!((c.grid, c.lds_bytes, c.splits), ((m_sum / c.block_m) * 4096 / 128, lds, 1), "{c}");
            }
            for (m_max, groups, expected) in [(1024, 1, 1024), (512, 2, 512), (256, 4, 256), (4096, 8, 7), (100, 3, 0)] {
                let c = get_grouped_bs_config(&GemmDesc::m_grouped_masked(m_max, 7168, 2048, groups, expected, arch), &Overrides::NONE).unwrap();
                assert!(masked_bs_kernel_spec(&c).is_some() && masked_kernel_spec(&c).is_none(), "{c}");
                // (4096, 8, 7) and (100, 3, 0): decode, the narrow 32 × 64 tile (masked_narrow_rule).
                assert_eq!(c.block_n, if expected <= 7 { 64 } else { 128 }, "{c}");
                assert_eq!(c.grid, groups * m_max.div_ceil(c.block_m) * 7168 / c.block_n, "{c}");
            }
            // Dense problems have no grouped bs kernel.
            let e = get_grouped_bs_config(&GemmDesc::dense(128, 128, 128, arch), &Overrides::NONE).unwrap_err();
            assert!(matches!(e, ConfigError::NoKernel { kind: GemmKind::Dense, .. }), "{e}");
        }
        // The rule by hand (304 CUs). Decode-sized masked groups: 4·1·32 tiles of either
        // height, 1 per CU → 32 vs 64 rows: the 32-row tile.
        let pick = |d: GemmDesc| get_grouped_bs_config(&d, &Overrides::NONE).unwrap().block_m;
        assert_eq!(pick(GemmDesc::m_grouped_masked(4096, 4096, 7168, 4, 8, Arch::Gfx942)), 32);
        // Masked 1×1024 over 4096×7168: 1024 tiles of 32 rows (4 per CU = 128 rows) or 512 of
        // 64 (2 per CU = 128 rows): a tie with 2 per CU → 64 (modelled 673 vs 540 TFLOPS).
        assert_eq!(pick(GemmDesc::m_grouped_masked(1024, 4096, 7168, 1, 1024, Arch::Gfx942)), 64);
        // A tie with 1 tile of 64 rows per CU keeps the 32-row tile (two workgroups per CU
        // instead of one; dense 1024×2048×7168: 599 vs 487 TFLOPS): 1×1024 over n = 2048 →
        // 512 tiles of 32 rows (2 per CU) or 256 of 64 (1 per CU).
        assert_eq!(pick(GemmDesc::m_grouped_masked(1024, 2048, 7168, 1, 1024, Arch::Gfx942)), 32);
        // Fewer rows on the busiest CU wins outright: 2 groups of 96 rows over n = 4096 →
        // 192 tiles of 32 rows or 128 of 64, 1 per CU either way (32 vs 64 rows).
        assert_eq!(pick(GemmDesc::m_grouped_masked(96, 4096, 7168, 2, 96, Arch::Gfx942)), 32);
        // Contiguous 4×8192 over 4096×7168: 108 · 32 = 3456 rows vs 54 · 64 = 3456 → 64.
        assert_eq!(pick(GemmDesc::m_grouped_contiguous(32768, 4096, 7168, 4, Arch::Gfx942)), 64);
        // Every row of the grouped table in `fp8gemm_device::grouped` (64 rows modelled fastest).
        for (n, k) in [(4096, 7168), (7168, 2048)] {
            for (g, r) in [(4, 8192), (8, 4096)] {
                assert_eq!(pick(GemmDesc::m_grouped_contiguous(g * r, n, k, g, Arch::Gfx942)), 64, "contiguous {g}x{r} {n}x{k}");
            }
            for (g, r) in [(1, 1024), (2, 512), (4, 256)] {
                assert_eq!(pick(GemmDesc::m_grouped_masked(r, n, k, g, r, Arch::Gfx942)), 64, "masked {g}x{r} {n}x{k}");
            }
        }
        // The pipelined loop (grouped_bs_pipe_rule) from GROUPED_BS_PIPE_MIN_BLOCKS K blocks on.
        for (k, pipe) in [(7168, true), (128 * GROUPED_BS_PIPE_MIN_BLOCKS, true), (128 * GROUPED_BS_PIPE_MIN_BLOCKS - 128, false), (2048, true)] {
            for d in [GemmDesc::m_grouped_contiguous(32768, 4096, k, 4, Arch::Gfx942), GemmDesc::m_grouped_masked(1024, 4096, k, 1, 1024, Arch::Gfx942)] {
                let c = get_grouped_bs_config(&d, &Overrides::NONE).unwrap();
                assert_eq!((c.block_m, c.kernel.contains("_bs_pipe_")), (64, pipe), "k = {k}: {c}");
                let groups = if d.kind == GemmKind::MGroupedMasked { d.groups } else { 1 };
                assert_eq!(c.grid, groups * d.m.div_ceil(64) * 4096 / 128, "{c}");
            }
        }
    }

    #[test]
    fn grouped_bs_forced_tiles() {
        let tile = |bm, bn| Overrides::NONE.with_tile(bm, bn);
        let desc = GemmDesc::m_grouped_masked(256, 4096, 7168, 4, 256, Arch::Gfx942);
        assert_eq!(get_grouped_bs_config(&desc, &tile(32, 128)).unwrap().kernel, "m_grouped_fp8_gemm_nt_masked_bs_bm32_bn128");
        let contiguous = GemmDesc::m_grouped_contiguous(256, 4096, 7168, 2, Arch::Gfx942);
        assert_eq!(get_grouped_bs_config(&contiguous, &tile(32, 128)).unwrap().kernel, "m_grouped_fp8_gemm_nt_contiguous_bs_bm32_bn128");
        // No bs kernel has a 64-column tile.
        for d in [desc, contiguous] {
            let e = get_grouped_bs_config(&d, &tile(64, 64)).unwrap_err();
            assert!(matches!(e, ConfigError::ForcedTile { .. }) && e.to_string().contains("32x128, 64x128, 128x128"), "{e}");
        }
        assert_eq!(get_grouped_bs_config(&desc, &tile(128, 128)).unwrap().kernel, "m_grouped_fp8_gemm_nt_masked_bs_bm128_bn128");
        // 80 rows: the pipelined masked kernel; no contiguous kernel (80 does not divide 128).
        let c = get_grouped_bs_config(&desc, &tile(80, 128)).unwrap();
        assert_eq!((c.kernel, c.grid, c.lds_bytes), ("m_grouped_fp8_gemm_nt_masked_bs_pipe_bm80_bn128", 4 * 4 * 32, tile::bs_pipe_lds_bytes(80)));
        assert!(masked_bs_kernel_spec(&c).is_some());
        let e = get_grouped_bs_config(&contiguous, &tile(80, 128)).unwrap_err();
        assert!(matches!(e, ConfigError::ForcedTile { .. }) && e.to_string().contains("80x128"), "{e}");
        // A forced 64-row tile follows the pipelined rule: K = 7168 (56 blocks) and 2048 (16)
        // pipelined, 128 (one block) not.
        let t64 = tile(64, 128);
        assert_eq!(get_grouped_bs_config(&desc, &t64).unwrap().kernel, "m_grouped_fp8_gemm_nt_masked_bs_pipe_bm64_bn128");
        let k2048 = GemmDesc::m_grouped_masked(256, 4096, 2048, 4, 256, Arch::Gfx942);
        assert_eq!(get_grouped_bs_config(&k2048, &t64).unwrap().kernel, "m_grouped_fp8_gemm_nt_masked_bs_pipe_bm64_bn128");
        let short = GemmDesc::m_grouped_masked(256, 4096, 128, 4, 256, Arch::Gfx942);
        assert_eq!(get_grouped_bs_config(&short, &t64).unwrap().kernel, "m_grouped_fp8_gemm_nt_masked_bs_bm64_bn128");
        // A forced split: the masked split-K kernel of the forced tile (the pipelined loop has no
        // split-K twin); contiguous never splits.
        let split2 = t64.with_split(2);
        let c = get_grouped_bs_config(&desc, &split2).unwrap();
        assert_eq!((c.kernel, c.splits), ("m_grouped_fp8_gemm_nt_masked_splitk_bs_bm64_bn128", 2));
        let contiguous = GemmDesc::m_grouped_contiguous(256, 4096, 7168, 2, Arch::Gfx942);
        assert!(matches!(get_grouped_bs_config(&contiguous, &split2), Err(ConfigError::ForcedSplit { .. })));
    }

    #[test]
    fn masked_config_follows_expected_m_not_the_capacity() {
        let pick = |expected| get_best_config(&GemmDesc::m_grouped_masked(4096, 4096, 7168, 4, expected, Arch::Gfx942), &Overrides::NONE).unwrap();
        // Decode: a handful of tokens per expert → 64-row tiles (4 · 1 · 64 = 256 working tiles of
        // 64 × 64 fill the CUs better than 4 · 1 · 32 = 128 of 128 × 128).
        assert_eq!(pick(8).block_m, 64);
        // Large expected groups: the 128 × 128 tile's reuse wins, as for dense M = 4096.
        assert_eq!(pick(4096).kernel, "m_grouped_fp8_gemm_nt_masked_bm128_bn128");
        // expected_m 0 or beyond m_max is only a hint: clamped, never an error.
        assert_eq!(pick(0), pick(1));
        assert_eq!(pick(100_000), pick(4096));
        // Work model: 4 groups · ⌈8/64⌉ · (4096/64) tiles for bm64_bn64.
        let c = candidates(Arch::Gfx942, GemmKind::MGroupedMasked).unwrap();
        let desc = GemmDesc::m_grouped_masked(4096, 4096, 7168, 4, 8, Arch::Gfx942);
        assert_eq!(grid_and_work(&c[0], &desc).unwrap(), (4 * 64 * 64, 4 * 64));
    }

    #[test]
    fn each_distinct_config_is_reported_once() {
        let seen = Mutex::new(HashSet::new());
        let a = get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942), &Overrides::NONE).unwrap();
        let b = a;
        let c = GemmConfig { grid: a.grid + 1, ..a };
        assert!(first_sighting(&seen, &a));
        assert!(!first_sighting(&seen, &b));
        assert!(first_sighting(&seen, &c));
        assert!(!first_sighting(&seen, &c));
    }

    #[test]
    fn split_k_model_numbers_by_hand() {
        // 64 × 2112 × 7168 on 64 × 64: 33 tiles, 56 blocks. 8 splits: 264 workgroups in one
        // round on 304 CUs, one per CU, 7 blocks each, plus the hand-off and the reduction of
        // 8 partial tiles of 16 KiB.
        let c = split_candidates(Arch::Gfx942, GemmKind::Dense, 56).unwrap();
        assert_eq!(c.len(), 3 * (32 - 1));
        let s8 = c.iter().find(|c| (c.tile.block_m, c.tile.block_n, c.splits) == (64, 64, 8)).unwrap();
        assert_eq!(s8.slots_per_cu, 4);
        let x = Candidate { cycles_per_kb: Some([1000.0, 3000.0]), ..*s8 };
        let desc = GemmDesc::dense(64, 2112, 7168, Arch::Gfx942);
        assert_eq!(grid_and_work(&x, &desc).unwrap(), (264, 264));
        let extra = SPLITK_FIXED_CYCLES + 8.0 * 16384.0 / SPLITK_REDUCE_BYTES_PER_CYCLE;
        assert_eq!(modelled_time(&x, arch_spec(Arch::Gfx942), 264, 7168).unwrap(), 7.0 * 1000.0 * SPLITK_BLOCK_FACTOR + extra);
        // 9 blocks over 2 splits: the longer split (5 blocks) sets the time.
        let s2 = Candidate { splits: 2, ..x };
        assert_eq!(
            modelled_time(&s2, arch_spec(Arch::Gfx942), 66, 9 * 128).unwrap(),
            5.0 * 1000.0 * SPLITK_BLOCK_FACTOR + SPLITK_FIXED_CYCLES + 2.0 * 16384.0 / 64.0
        );
        // No split-K kernels for the m-grouped layouts; none beyond the block count.
        assert!(split_candidates(Arch::Gfx942, GemmKind::MGroupedMasked, 56).unwrap().is_empty());
        assert!(split_candidates(Arch::Gfx942, GemmKind::Dense, 1).unwrap().is_empty());
        assert_eq!(split_candidates(Arch::Gfx942, GemmKind::Dense, 3).unwrap().iter().map(|c| c.splits).max(), Some(3));
    }

    #[test]
    fn the_model_splits_small_problems_with_long_k_and_the_workspace_limit_is_reported() {
        // 4 tiles of 16 blocks on 304 CUs: splitting wins in the model.
        let desc = GemmDesc::dense(48, 256, 2048, Arch::Gfx942);
        let (c, limited) = get_config_for_workspace(&desc, &Overrides::NONE, u64::MAX).unwrap();
        assert!(c.splits > 1 && c.kernel.starts_with("fp8_gemm_nt_splitk_"), "{c}");
        assert!(limited.is_none());
        assert_eq!(c.workspace_floats(), tile::splitk_workspace_floats(c.tiles(), c.splits, c.block_m, c.block_n));
        assert!(c.to_string().contains(&format!("split-K {}", c.splits)), "{c}");
        // Without workspace: the best config that needs none, and the preferred one reported.
        let (d, limited) = get_config_for_workspace(&desc, &Overrides::NONE, 0).unwrap();
        assert_eq!(d.splits, 1);
        assert_eq!(limited, Some(WorkspaceLimit { preferred: c, needed: c.workspace_floats(), available: 0 }));
        // Large M fills the device: no split.
        assert_eq!(get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942), &Overrides::NONE).unwrap().splits, 1);
    }

    #[test]
    fn a_forced_split_wins_and_an_impossible_one_is_an_error() {
        let split3 = Overrides::NONE.with_split(3);
        let c = get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942), &split3).unwrap();
        let d = get_best_config(&GemmDesc::dense(64, 7168, 2048, Arch::Gfx942), &split3.with_tile(64, 128)).unwrap();
        let e = get_best_config(&GemmDesc::dense(64, 7168, 2048, Arch::Gfx942), &split3.with_tile(64, 128).with_split(17)).unwrap_err();
        assert_eq!(c.splits, 3);
        assert_eq!((d.block_m, d.block_n, d.splits), (64, 128, 3));
        assert_eq!(d.grid, 112 * 3 / 2);
        assert!(matches!(&e, ConfigError::ForcedSplit { expected, .. } if expected.contains("k/128 = 16")), "{e}");
    }

    #[test]
    fn display() {
        let c = get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942), &Overrides::NONE.with_tile(128, 128)).unwrap();
        assert_eq!(c.to_string(), "fp8_gemm_nt_bm128_bn128 on gfx942: block 128x128x128, 256 threads, 32768 B LDS, grid 1792 (XCD remap over 8)");
    }

    #[test]
    fn the_last_round_is_estimated_at_its_own_sharing() {
        // 16384 × 2048 at 128 × 128: 2048 tiles = 3 full rounds of 608 and 224 tiles, which run
        // one per CU (the 1-per-CU cost), so 128 × 128 beats 64 × 128 (7 rounds) as the timing
        // model says (614 vs 669 µs modelled) — an estimate of 4 full rounds picked 64 × 128.
        let c = candidates(Arch::Gfx942, GemmKind::Dense).unwrap();
        let x = Candidate { cycles_per_kb: Some([1000.0, 1600.0]), ..c[2] };
        assert_eq!(modelled_time(&x, arch_spec(Arch::Gfx942), 2048, 7168).unwrap(), 3.0 * 56.0 * 1600.0 + 56.0 * 1000.0);
    }

    #[test]
    fn stream_k_model_numbers_by_hand() {
        // 8192 × 2048 × 7168 on 64 × 128 (2 per CU): 2048 tiles, 56 blocks; head 1824 tiles (3
        // full waves of 608), tail 224 tiles over 608 workgroups: ⌈224·56/608⌉ = 21 blocks each.
        let desc = GemmDesc::dense(8192, 2048, 7168, Arch::Gfx942);
        let c = streamk_candidates(&desc).unwrap();
        let x = c.iter().find(|c| (c.tile.block_m, c.tile.block_n, c.stream_k) == (64, 128, Some((1824, 608)))).unwrap();
        let x = Candidate { cycles_per_kb: Some([1000.0, 1600.0]), ..*x };
        let most = (56f64 / 20.0).ceil() + 1.0;
        let reduce = SPLITK_FIXED_CYCLES + most * 32768.0 / SPLITK_REDUCE_BYTES_PER_CYCLE;
        let want = 3.0 * 56.0 * 1600.0 + 21.0 * 1600.0 * STREAMK_TAIL_FACTOR + reduce;
        assert!((streamk_time(&x, arch_spec(Arch::Gfx942), &desc).unwrap() - want).abs() < 1e-6);
        // Every candidate is a valid schedule with tail tiles ≤ g ≤ one wave, g a multiple of
        // the CU count; none for the m-grouped kinds.
        for c in &c {
            let (dp, g) = c.stream_k.unwrap();
            let tiles = c.tile.grid(8192, 2048);
            assert!(StreamKSchedule::new(tiles, 56, dp, g).is_ok() && g % 304 == 0 && g <= 304 * c.slots_per_cu, "{c:?}");
            assert_eq!(dp % (304 * c.slots_per_cu), 0, "{c:?}: the head is whole waves");
        }
        assert!(streamk_candidates(&GemmDesc::m_grouped_masked(64, 2048, 7168, 2, 8, Arch::Gfx942)).unwrap().is_empty());
        // The CU count comes from the device: 80 CUs → waves of 160 for 64 × 128.
        let small = streamk_candidates(&desc.with_cus(80)).unwrap();
        assert!(small.iter().any(|c| c.stream_k == Some((1920, 160)) && c.tile.block_n == 128), "{small:?}");
    }

    #[test]
    fn a_forced_stream_k_schedule_and_the_workspace_limit_are_reported() {
        // 8192 × 2048 × 7168 on 64 × 128 forced stream-K 1824 + 608: 224 tail tiles.
        let desc = GemmDesc::dense(8192, 2048, 7168, Arch::Gfx942);
        let forced = Overrides::NONE.with_tile(64, 128).with_stream_k(608, Some(1824));
        let (c, limited) = get_config_for_workspace(&desc, &forced, 8 << 20).unwrap();
        let sk = c.stream_k.expect("stream-K");
        assert_eq!((c.kernel, sk.dp_tiles, sk.sk_wgs, c.grid), ("fp8_gemm_nt_streamk_bm64_bn128", 1824, 608, 2432), "{c}");
        assert!(limited.is_none());
        assert_eq!(c.workspace_floats(), SPLITK_COUNTER_FLOATS + (608 + 224 - 1) * 64 * 128);
        assert!(c.to_string().contains("stream-K: 1824 data-parallel tiles, then 608 workgroups over 224 tiles"), "{c}");
        // Unforced without workspace: a plan that needs none, the preferred one reported if it
        // needed some.
        let (best, _) = get_config_for_workspace(&desc, &Overrides::NONE, u64::MAX).unwrap();
        let (d, limited) = get_config_for_workspace(&desc, &Overrides::NONE, 0).unwrap();
        assert!(d.stream_k.is_none() && d.splits == 1, "{d}");
        if best.workspace_floats() > 0 {
            assert_eq!(limited, Some(WorkspaceLimit { preferred: best, needed: best.workspace_floats(), available: 0 }));
        } else {
            assert_eq!((d, limited), (best, None));
        }
    }
}
