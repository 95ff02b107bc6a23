//! Launch configuration: a problem description ([`GemmDesc`]) → the kernel and launch geometry
//! that computes it ([`GemmConfig`]), through a per-architecture heuristic ([`get_best_config`]).
//!
//! Configs are plain data; every kernel a config names is one of the device crate's
//! `KernelSpec` constants (see [`fp8gemm_device::dense`] and [`fp8gemm_device::tile`]).
//!
//! # The choice (gfx942: 304 CUs; gfx950: 256 CUs)
//!
//! All figures come from the project's one performance model, the emulator's cycle-level
//! timing model (`amdgpu_emu::timing`), through the table `host/tuned/gfx942.csv` that
//! `fp8gemm tune` writes (modelled MI300X times, not measurements):
//! 1. a tile forced with [`force_tile`] or `FP8GEMM_FORCE_TILE=BMxBN` and/or a split count
//!    forced with [`force_split`] or `FP8GEMM_FORCE_SPLIT=S`, or a stream-K schedule forced
//!    with [`force_stream_k`] or `FP8GEMM_FORCE_STREAMK=G[/DP]` (experiments, tuning);
//! 2. else, for a problem in the table (`best` rows: DeepSeek-V3's dense and MoE shapes), the
//!    tile the timing model found fastest for exactly that problem — or its `split` row (the
//!    fastest dense split-K config, [`fp8gemm_device::dense`]) or `streamk` row (the fastest
//!    stream-K config) if that is faster and the launch's workspace holds it ([`get_config_for_workspace`], [`crate::workspace`]);
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
//! The candidate with the smallest estimate wins; ties go to the tile with more workgroups.
//! Dense split-K candidates (every tile with 2 ..= min(k/128, [`MAX_SPLITS`]) splits) count
//! `tiles · splits` workgroups of `⌈nkb / splits⌉` blocks each (`SPLITK_BLOCK_FACTOR` slower),
//! plus the hand-off and reduction cost per round (`splitk_extra_cycles`). Dense **stream-K**
//! candidates ([`fp8gemm_device::streamk`]: a data-parallel head of whole waves, then `g`
//! workgroups over the rest) count the head's rounds and `⌈T·nkb / g⌉` tail blocks per
//! workgroup (`STREAMK_TAIL_FACTOR` slower when tiles are split, plus the reduction); see
//! `streamk_time`. `FP8GEMM_PRINT_CONFIGS=2` prints every candidate's estimate. A stream-K or
//! split-K choice whose workspace the launch does not have is replaced by the best one that
//! fits, and reported ([`WorkspaceLimit`]).
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
//! Weights in the pre-shuffled layout run the bs kernels instead ([`get_bs_config`] for dense
//! problems, [`get_grouped_bs_config`] for the m-grouped ones, which counts working tiles as
//! above): a tile rule read off the timing model, until the tuned table has bs rows.

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
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_PIPE_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM80_BN128,
};
use fp8gemm_device::mainloop_bs::{
    FP8_GEMM_NT_BS_BM32_BN128, FP8_GEMM_NT_BS_BM64_BN128, FP8_GEMM_NT_BS_BM128_BN128, FP8_GEMM_NT_BS_PIPE_BM32_BN64, FP8_GEMM_NT_BS_PIPE_BM48_BN128,
    FP8_GEMM_NT_BS_PIPE_BM64_BN128, FP8_GEMM_NT_BS_PIPE_BM80_BN128, FP8_GEMM_NT_BS_PIPE_BM96_BN128, FP8_GEMM_NT_SPLITK_BS_BM32_BN64,
    FP8_GEMM_NT_SPLITK_BS_BM32_BN128, FP8_GEMM_NT_SPLITK_BS_BM64_BN128, FP8_GEMM_NT_SPLITK_BS_BM128_BN128,
};
use fp8gemm_device::mainloop_bs128::FP8_GEMM_NT_BS_PIPE_BM128_BN128;
use fp8gemm_device::streamk::DenseStreamKArgs;
use fp8gemm_device::streamk::{
    FP8_GEMM_NT_STREAMK_BM64_BN64, FP8_GEMM_NT_STREAMK_BM64_BN128, FP8_GEMM_NT_STREAMK_BM128_BN128, FP8_GEMM_NT_STREAMK_BS_BM32_BN128,
    FP8_GEMM_NT_STREAMK_BS_BM64_BN128, FP8_GEMM_NT_STREAMK_BS_PIPE_BM48_BN128, FP8_GEMM_NT_STREAMK_BS_PIPE_BM64_BN128, STREAMK_BS_PIPE_TILES, STREAMK_BS_TILES,
    STREAMK_TILES, StreamKSchedule,
};
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
    /// The forced tile (`FP8GEMM_FORCE_TILE` / [`force_tile`]) is not one of the kind's tiles.
    #[error("forced tile `{tile}` (FP8GEMM_FORCE_TILE or config::force_tile) is not available; expected one of {available}")]
    ForcedTile {
        /// The tile asked for.
        tile: String,
        /// The tiles that exist.
        available: &'static str,
    },
    /// The forced split count (`FP8GEMM_FORCE_SPLIT` / [`force_split`]) cannot be used for this
    /// problem.
    #[error("forced split-K `{splits}` (FP8GEMM_FORCE_SPLIT or config::force_split): expected {expected}")]
    ForcedSplit {
        /// The split count asked for.
        splits: String,
        /// What is accepted for this problem.
        expected: String,
    },
    /// The forced stream-K schedule (`FP8GEMM_FORCE_STREAMK` / [`force_stream_k`]) cannot be
    /// used for this problem.
    #[error("forced stream-K `{schedule}` (FP8GEMM_FORCE_STREAMK or config::force_stream_k): expected {expected}")]
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
/// [`tuned`]). gfx950 has no machine model yet; its kernels are the same Rust code, so it
/// uses the gfx942 figures (a documented approximation, printed with the config).
const TUNED_GFX942: &str = include_str!("../tuned/gfx942.csv");

pub mod bs_table;

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

thread_local! {
    /// A tile forced for this thread's config choices (experiments, tuning); `None` = not set
    /// here, fall back to `FP8GEMM_FORCE_TILE=BMxBN` (e.g. `64x128`) for every thread.
    static FORCED: std::cell::Cell<Option<Option<(u32, u32)>>> = const { std::cell::Cell::new(None) };
}

/// Forces the tile `(block_m, block_n)` for every subsequent config choice made by this thread
/// (`None`: choose normally again; `FP8GEMM_FORCE_TILE` still applies). A forced tile that no
/// kernel of the requested kind has makes [`get_best_config`] fail with
/// [`ConfigError::ForcedTile`].
pub fn force_tile(tile: Option<(u32, u32)>) {
    FORCED.with(|f| f.set(tile.map(Some)));
}

thread_local! {
    /// A split count forced for this thread's config choices; `None` = not set here, fall back
    /// to `FP8GEMM_FORCE_SPLIT=s`.
    static FORCED_SPLIT: std::cell::Cell<Option<Option<u32>>> = const { std::cell::Cell::new(None) };
}

/// Forces `splits` workgroups per output tile (split-K) for every subsequent config choice of
/// this thread (`Some(1)`: never split; `None`: choose normally again, `FP8GEMM_FORCE_SPLIT`
/// still applies). Combined with a forced tile ([`force_tile`]) it pins the whole config. A
/// split count the problem cannot use (more than its `k/128` blocks, or a kind without split-K
/// kernels) makes [`get_best_config`] fail with [`ConfigError::ForcedSplit`].
pub fn force_split(splits: Option<u32>) {
    FORCED_SPLIT.with(|f| f.set(splits.map(Some)));
}

thread_local! {
    /// Which loop a forced 64 × 128 bs tile runs for this thread; `None` = [`bs_kernel`]'s rule.
    static FORCED_BS_PIPELINED: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
}

/// Pins the loop of a forced 64 × 128 bs tile ([`force_tile`] / `FP8GEMM_FORCE_TILE=64x128`
/// with pre-shuffled B) for every subsequent bs config choice of this thread, data-parallel
/// and stream-K alike: `Some(true)` the pipelined kernels
/// (`fp8_gemm_nt_bs_pipe_bm64_bn128`, `fp8_gemm_nt_streamk_bs_pipe_bm64_bn128`),
/// `Some(false)` the two-per-CU ones (`fp8_gemm_nt_bs_bm64_bn128`,
/// `fp8_gemm_nt_streamk_bs_bm64_bn128`), `None` [`bs_kernel`]'s rule again (pipelined). No
/// effect on other tiles or on unforced choices.
pub fn force_bs_pipelined(pipelined: Option<bool>) {
    FORCED_BS_PIPELINED.with(|f| f.set(pipelined));
}

/// Whether a forced 64 × 128 bs tile runs the pipelined loop ([`force_bs_pipelined`], else
/// [`bs_kernel`]'s rule).
fn forced_bs64_pipelined() -> bool {
    FORCED_BS_PIPELINED.with(std::cell::Cell::get).unwrap_or_else(|| bs_kernel(1).name != tile::DENSE_BS_TILES[1].name)
}

/// A forced stream-K schedule: `(sk_wgs, dp_tiles)`, `dp_tiles` `None` for the default head.
pub type ForcedStreamK = (u32, Option<u32>);

/// A stream-K configuration of `fp8gemm tune`: `((block_m, block_n), sk_wgs, dp_tiles)`.
pub type StreamKSchedule3 = ((u32, u32), u32, u32);

thread_local! {
    /// A stream-K schedule forced for this thread's config choices; `None` = not set here, fall
    /// back to `FP8GEMM_FORCE_STREAMK=G[/DP]`.
    static FORCED_STREAMK: std::cell::Cell<Option<Option<ForcedStreamK>>> = const { std::cell::Cell::new(None) };
}

/// Forces a stream-K launch ([`fp8gemm_device::streamk`]) for every subsequent dense config
/// choice of this thread: `Some((g, None))` runs `g` stream-K workgroups after the default
/// data-parallel head (the whole waves of `CUs · slots` tiles that leave at least one tile for
/// the tail), `Some((g, Some(dp)))` pins the head to `dp` tiles; `None` chooses normally again
/// (`FP8GEMM_FORCE_STREAMK=G` or `G/DP` still applies). Combined with a forced tile
/// ([`force_tile`]) it pins the whole config. A schedule the problem cannot use (`dp` not below
/// the tile count, `g` more than the tail's K iterations, more than
/// [`tile::SPLITK_MAX_TILES`] tail tiles, a forced split, a kind without stream-K kernels)
/// makes [`get_best_config`] fail with [`ConfigError::ForcedStreamK`].
pub fn force_stream_k(schedule: Option<ForcedStreamK>) {
    FORCED_STREAMK.with(|f| f.set(schedule.map(Some)));
}

/// The stream-K schedule forced for this thread or by `FP8GEMM_FORCE_STREAMK`, if any.
pub(crate) fn forced_stream_k() -> Result<Option<ForcedStreamK>, ConfigError> {
    if let Some(t) = FORCED_STREAMK.with(std::cell::Cell::get) {
        return Ok(t);
    }
    let Ok(v) = std::env::var("FP8GEMM_FORCE_STREAMK") else { return Ok(None) };
    let bad = || ConfigError::ForcedStreamK { schedule: v.clone(), expected: "G or G/DP (stream-K workgroups ≥ 1, data-parallel tiles)".into() };
    let (g, dp) = match v.split_once('/') {
        Some((g, dp)) => (g.trim().parse::<u32>().map_err(|_| bad())?, Some(dp.trim().parse::<u32>().map_err(|_| bad())?)),
        None => (v.trim().parse::<u32>().map_err(|_| bad())?, None),
    };
    if g == 0 {
        return Err(bad());
    }
    Ok(Some((g, dp)))
}

/// The split count forced for this thread or by `FP8GEMM_FORCE_SPLIT`, if any.
pub(crate) fn forced_split() -> Result<Option<u32>, ConfigError> {
    if let Some(t) = FORCED_SPLIT.with(std::cell::Cell::get) {
        return Ok(t);
    }
    let Ok(v) = std::env::var("FP8GEMM_FORCE_SPLIT") else { return Ok(None) };
    match v.trim().parse::<u32>() {
        Ok(s) if s >= 1 => Ok(Some(s)),
        _ => Err(ConfigError::ForcedSplit { splits: v, expected: "a positive integer".into() }),
    }
}

/// Largest split count the model considers (and the most `FP8GEMM_FORCE_SPLIT` may ask for
/// is `k/128`, one block per split).
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

/// The tile forced for this thread or by `FP8GEMM_FORCE_TILE`, if any.
pub(crate) fn forced_tile() -> Result<Option<(u32, u32)>, ConfigError> {
    if let Some(t) = FORCED.with(std::cell::Cell::get) {
        return Ok(t);
    }
    let Ok(v) = std::env::var("FP8GEMM_FORCE_TILE") else { return Ok(None) };
    let parsed = v.split_once('x').and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
    match parsed {
        Some(t) => Ok(Some(t)),
        None => Err(ConfigError::ForcedTile { tile: v, available: "64x64, 64x128, 128x128" }),
    }
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
fn validate(desc: &GemmDesc) -> Result<(), ConfigError> {
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
    /// The bs rule ([`get_bs_config_for_workspace`]) with this many of the chosen tiles per CU.
    BsRule(f64),
    /// The bs narrow-tile rule ([`bs_narrow_rule`]) with this many 32 × 64 tiles per CU.
    BsNarrow(f64),
    /// The bs choice took a stream-K or split-K candidate above one tile per CU: its estimate
    /// and the data-parallel tile's (µs).
    BsStreamK(f64, f64),
    /// The m-grouped bs rule: rows per busiest CU with 32- and with 64-row tiles.
    GroupedBsRule(u64, u64),
    /// The m-grouped bs rule's tile, then the masked split-K estimate over this many working
    /// tiles (from `expected_m`).
    GroupedBsSplit(u64, u64, u64),
    /// The bs tuned table's row: its modelled µs, the rules' modelled µs, its forcing.
    BsTable(f64, f64, bs_table::BsForcing),
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
/// that fits was chosen instead (see [`get_config_for_workspace`]; `FP8GEMM_PRINT_CONFIGS=1`
/// prints it, and the entry points report it in their `GemmRun`).
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

/// Chooses the kernel and launch geometry the model prefers for `desc`, whatever workspace it
/// needs (see [`get_config_for_workspace`] for the rules and [`GemmConfig::workspace_floats`]
/// for the need).
///
/// With `FP8GEMM_PRINT_CONFIGS=1` in the environment each distinct chosen config is printed
/// once (to stderr) with the problem that first chose it and why.
pub fn get_best_config(desc: &GemmDesc) -> Result<GemmConfig, ConfigError> {
    get_config_for_workspace(desc, u64::MAX).map(|(c, _)| c)
}

/// Chooses the kernel and launch geometry for `desc` when the launch has `available` FP32
/// elements of workspace:
/// 1. a forced tile ([`force_tile`], `FP8GEMM_FORCE_TILE`) and/or split count
///    ([`force_split`], `FP8GEMM_FORCE_SPLIT`): taken as given, the unforced half chosen by the
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
pub fn get_config_for_workspace(desc: &GemmDesc, available: u64) -> Result<(GemmConfig, Option<WorkspaceLimit>), ConfigError> {
    validate(desc)?;
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
    let (forced_t, forced_s, forced_sk) = (forced_tile()?, forced_split()?, forced_stream_k()?);
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
            return Err(err("no forced split-K at the same time (FP8GEMM_FORCE_SPLIT > 1)".into()));
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

/// `FP8GEMM_PRINT_CONFIGS=2`: also print every candidate the cost estimate weighs (each time).
fn verbose_candidates() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| std::env::var("FP8GEMM_PRINT_CONFIGS").is_ok_and(|v| v == "2"))
}

/// Prints `config` once per process if `FP8GEMM_PRINT_CONFIGS=1` (or `2`).
fn print_once(desc: &GemmDesc, config: &GemmConfig, why: Choice, limited: Option<&WorkspaceLimit>) {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    static SEEN: OnceLock<Mutex<HashSet<GemmConfig>>> = OnceLock::new();
    if !*ENABLED.get_or_init(|| std::env::var("FP8GEMM_PRINT_CONFIGS").is_ok_and(|v| v == "1" || v == "2")) {
        return;
    }
    if first_sighting(SEEN.get_or_init(|| Mutex::new(HashSet::new())), config) {
        let why = match why {
            Choice::Forced => "forced tile / split / stream-K (FP8GEMM_FORCE_TILE, FP8GEMM_FORCE_SPLIT, FP8GEMM_FORCE_STREAMK)".to_string(),
            Choice::BsRule(per_cu) => format!(
                "pre-shuffled B: bs rule ({per_cu:.2} tiles per CU; 64-row tile from {BS_BM64_TILES_PER_CU} of its tiles per CU or where its rounds are shorter, split-K below 1)"
            ),
            Choice::BsNarrow(per_cu) => {
                format!("pre-shuffled B: bs narrow-tile rule ({per_cu:.2} tiles of 32x64 per CU, at most 16 K blocks: config::bs_narrow_rule)")
            }
            Choice::BsStreamK(us, dp_us) => format!(
                "pre-shuffled B: bs estimate {us:.2} µs against {dp_us:.2} µs for the data-parallel tile of the bs rule (FP8GEMM_PRINT_CONFIGS=2 lists the candidates)"
            ),
            Choice::GroupedBsRule(r32, r64) => format!(
                "pre-shuffled B: m-grouped bs rule (rows on the busiest CU: {r32} with 32-row tiles, {r64} with 64-row tiles; 64-row tiles count {BS_BM64_GAIN}× faster when each CU gets at least 2 of them)"
            ),
            Choice::GroupedBsSplit(r32, r64, w) => format!(
                "pre-shuffled B: m-grouped bs rule (rows on the busiest CU: {r32} with 32-row tiles, {r64} with 64-row tiles), then masked split-K {} by the bs split estimate over {w} working tiles (from expected_m)",
                config.splits
            ),
            Choice::BsTable(us, rule_us, f) => {
                format!("pre-shuffled B: bs tuned table (host/tuned/gfx942_bs.csv): {f} at {us:.2} µs modelled, the rules' choice {rule_us:.2} µs modelled")
            }
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

/// bs tile choice: the 64-row tile once it has at least this many tiles per CU (see
/// [`bs_tile_rule`]).
pub const BS_BM64_TILES_PER_CU: u32 = 8;

/// The narrow-tile rule of [`get_bs_config_for_workspace`]: the 32 × 64 data-parallel kernel
/// ([`tile::DENSE_BS_PIPE_BM32_BN64`], four workgroups per CU) for a problem of at most 256
/// rows and 16 K blocks (K ≤ 2048) whose 32 × 64 tiles number from 0.6 per CU up to 4 per CU
/// (one round) with at most 64 rows, or up to 2 per CU above 64 rows; `Some(tiles per CU)`
/// where it applies.
///
/// Where it comes from (modelled MI300X µs, full scope, the choice before → the 32 × 64
/// kernel; `FP8GEMM_PRESHUFFLED=1 fp8gemm profile`, with `FP8GEMM_FORCE_TILE=32x64`):
/// chosen — 16×16384×2048 14.24 → 11.85, 32×16384×2048 14.23 → 11.91, 64×7168×2048 9.83 →
/// 8.70, 64×8192×1024 9.05 → 6.45, 64×12288×2048 12.67 → 11.36, 64×16384×256 6.18 → 5.63,
/// 64×20480×1024 10.99 → 9.88, 64×24576×1536 14.94 → 13.62, 64×32768×512 9.18 → 8.66,
/// 96×4096×1024 9.04 → 6.27, 128×4096×2048 9.04 → 8.60, 128×7168×2048 11.38 → 10.91,
/// 128×8192×1024 9.08 → 7.78, 192×4096×2048 10.91 → 10.91, 256×2048×2048 8.93 → 8.57,
/// 256×4096×1536 11.06 → 9.41; left out — 128×16384×1024 (3.4 per CU) 9.86 → 11.59,
/// 128×24576×1536 (5.1) 15.27 → 21.31, 200×6000×1024 (2.2) 9.57 → 9.75, 256×7168×2048 (2.9)
/// 13.30 → 15.16, and K beyond 2048 (64×7168×16384 unsplit 40.47 against 34.34 split;
/// the tuned table holds the split 32 × 64 configs of DeepSeek's long-K shapes).
pub fn bs_narrow_rule(m: u32, n: u32, nkb: u32, cus: u32) -> Option<f64> {
    let tiles = tile::DENSE_BS_PIPE_BM32_BN64.grid(m, n);
    let per_cu = f64::from(tiles) / f64::from(cus.max(1));
    let most = if m <= 64 { 4.0 } else { 2.0 };
    (m <= 256 && nkb <= 16 && (0.6..=most).contains(&per_cu)).then_some(per_cu)
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
const BS_PIPE128: usize = 4;
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
fn bs_pipe_round_estimate(p: usize, tiles: u64, cus: u64) -> f64 {
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
fn bs_pipe_estimate(p: usize, m: u32, n: u32, nkb: u32, cus: u32) -> f64 {
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
fn bs_split_estimate(tiles: u32, nkb: u32, splits: u32, cus: u32, slots: u32) -> f64 {
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
/// narrow tiles per CU), else [`bs_tile_rule`]'s; from one tile per CU on, the
/// data-parallel baseline is the pipelined tile ([`tile::DENSE_BS_PIPE_TILES`]) where
/// [`bs_pipe_rule`] estimates one faster than the rule's, and the stream-K / split-K candidates
/// below must beat that baseline. Modelled TFLOPS of the rule's tiles (MI300X, 32 / 64 / 128-row tile):
/// 4096×7168×2048 (11.8 bm64 tiles per CU) 637 / 688 / 561, 4096×2112×7168 (3.6) 717 / 727 /
/// 614, 4096×2048×7168 (3.4) 742 / 706 / 595, 1024×2048×7168 (0.8) 599 / 487 / 295. Until the
/// tuned table has bs rows.
///
/// **Split-K** (the bs split-K kernels, [`fp8gemm_device::dense`]'s protocol): the count forced
/// with [`force_split`] / `FP8GEMM_FORCE_SPLIT` (`≤ min(k/128, MAX_SPLITS)`, at most
/// `SPLITK_MAX_TILES` tiles, never reduced for lack of workspace), else the count
/// `1 ≤ s ≤ min(k/128, MAX_SPLITS)` of least `bs_split_estimate` (private, `host/src/config.rs`) when the tile count is below
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
fn get_bs_config_with_table(desc: &GemmDesc, available: u64, rows: &[bs_table::BsRow]) -> Result<(GemmConfig, Option<WorkspaceLimit>), ConfigError> {
    let forced = (forced_tile()?, forced_split()?, forced_stream_k()?);
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
        if let Some((g, dp)) = forced_sk {
            let schedule = match dp {
                Some(dp) => format!("{g}/{dp}"),
                None => g.to_string(),
            };
            return Err(ConfigError::ForcedStreamK { schedule, expected: "no stream-K schedule (no stream-K kernel for the pre-shuffled 32x64 tile)".into() });
        }
        let (t, dp) = (tile::DENSE_SPLITK_BS_BM32_BN64, tile::DENSE_BS_PIPE_BM32_BN64);
        let config = match forced_s.filter(|&s| s > 1) {
            Some(s) => {
                let tiles = t.grid(desc.m, desc.n);
                let max_splits = nkb.min(MAX_SPLITS);
                if s > max_splits || tiles > tile::SPLITK_MAX_TILES {
                    return Err(ConfigError::ForcedSplit {
                        splits: s.to_string(),
                        expected: format!("at most {max_splits} over at most {} tiles of 32x64", tile::SPLITK_MAX_TILES),
                    });
                }
                bs_tile_config(desc, &spec, t, t.name, tiles * s, s, None)
            }
            None => bs_pipe_config(desc, &spec, dp)?,
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
    let (config, why) = if let Some(sk) = forced_sk {
        (bs_forced_streamk(desc, spec, sk, forced_t, forced_s)?, Choice::Forced)
    } else if let Some(s) = forced_s.filter(|&s| s > 1) {
        let i = forced_i.unwrap_or(0);
        let t = tile::DENSE_BS_TILES[i];
        if s > max_splits {
            return Err(ConfigError::ForcedSplit {
                splits: s.to_string(),
                expected: format!("at most {max_splits} (k/128 = {nkb} blocks, MAX_SPLITS = {MAX_SPLITS})"),
            });
        }
        if tiles_of(i) > tile::SPLITK_MAX_TILES {
            let expected = format!("1 ({}×{} is more than {} output tiles of {}×{})", desc.m, desc.n, tile::SPLITK_MAX_TILES, t.block_m, t.block_n);
            return Err(ConfigError::ForcedSplit { splits: s.to_string(), expected });
        }
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
        (bs_pipe_config(desc, &spec, tile::DENSE_BS_PIPE_BM32_BN64)?, Choice::BsNarrow(per_cu))
    } else {
        let i = bs_tile_rule(u64::from(tiles_of(0)), u64::from(tiles_of(1)), spec.cus);
        let tiles = tiles_of(i);
        let tiles_per_cu = f64::from(tiles) / f64::from(spec.cus);
        if tiles < spec.cus {
            // Fewer tiles than CUs (decode): the split count of least `bs_split_estimate` (ties:
            // fewer splits), overall and among the counts whose workspace fits (`s = 1` always
            // fits). Only launches of fewer tiles than CUs split this way (the estimate was
            // fitted there).
            let most = if tiles <= tile::SPLITK_MAX_TILES { max_splits.max(1) } else { 1 };
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
    Ok((config, why, limited))
}

/// Workgroups per CU of the bs kernels of [`tile::DENSE_BS_TILES`] (32 / 64 / 128 rows: 3 / 2 /
/// 1, set by their registers; `tests/dense_kernel.rs` checks the data-parallel, split-K and
/// stream-K twins keep them).
const BS_SLOTS: [u32; 3] = [3, 2, 1];
/// Workgroups per CU of the dense bs split-K 32-row kernel (`fp8_gemm_nt_splitk_bs_bm32_bn128`:
/// the pipelined loop, 170 registers; `tests/dense_kernel.rs` checks it).
const BS_SPLITK32_SLOTS: u32 = 2;

/// How a bs launch schedules its tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BsSchedule {
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
struct BsCandidate {
    tile: usize,
    schedule: BsSchedule,
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
fn bs_config(desc: &GemmDesc, spec: ArchSpec, c: BsCandidate) -> Result<GemmConfig, ConfigError> {
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
fn bs_streamk_candidates(desc: &GemmDesc, cus: u32) -> Vec<BsCandidate> {
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
fn bs_pipe_streamk_candidates(desc: &GemmDesc, cus: u32) -> Vec<BsCandidate> {
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
        Some((bm, bn)) if tile::DENSE_BS_TILES.iter().chain(&tile::DENSE_BS_PIPE_TILES).any(|t| (t.block_m, t.block_n) == (bm, bn)) => {
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
fn bs_split_candidates(desc: &GemmDesc, cus: u32) -> Vec<BsCandidate> {
    let nkb = desc.k / tile::SCALE_BLOCK_K;
    let tiles = u64::from(tile::DENSE_BS_TILES[0].grid(desc.m, desc.n));
    if tiles > u64::from(tile::SPLITK_MAX_TILES) {
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
const BS_STREAMK_MIN_GAIN: f64 = 0.08;

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
fn bs_estimate(c: &BsCandidate, tiles: u32, nkb: u32, cus: u32) -> f64 {
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
const BS_PIPE_SK_BLOCK_US: [[f64; 2]; 2] = [[0.51, 0.90], [0.58, 1.05]];
/// Blocks' worth of work every pipelined stream-K workgroup adds, whole tile or piece (its
/// prologue before the first MFMA and its epilogue, exposed at these workgroup counts), fitted.
const BS_PIPE_SK_WG_BLOCKS: f64 = 8.0;
/// Blocks' worth of work a split (partial) piece adds on top (partial stores, release,
/// arrival, the reduction of the last arriver), fitted.
const BS_PIPE_SK_FIXED_BLOCKS: f64 = 4.0;

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
        ],
        config,
    )
}

/// How much more work per cycle a CU does with 64-row bs tiles than with 32-row ones once at
/// least two 64-row workgroups share it (modelled, MI300X: dense 4096×7168×2048, 11.8 tiles per
/// CU, 688 vs 637 TFLOPS; [`get_grouped_bs_config`]).
const BS_BM64_GAIN: f64 = 1.08;

/// Chooses the m-grouped bs kernel (B pre-shuffled straight to registers,
/// [`fp8gemm_device::grouped`] on [`fp8gemm_device::mainloop_bs`]) of a contiguous or masked
/// problem: the tile forced with [`force_tile`] / `FP8GEMM_FORCE_TILE` (32x128, 64x128 or
/// 128x128, and for masked 80x128, the pipelined kernel of [`fp8gemm_device::grouped_pipe`];
/// a forced split count other than 1 is rejected, these kernels do not split K), else
/// the 32- or 64-row tile by the rows of work on the busiest CU: with `w` working tiles of
/// height `bm` (counted as for the logical-B kernels: contiguous without the expected
/// all-padding tiles, masked with `expected_m` rows per group; see the [module docs](self)),
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
pub fn get_grouped_bs_config(desc: &GemmDesc) -> Result<GemmConfig, ConfigError> {
    get_grouped_bs_config_for_workspace(desc, u64::MAX).map(|(c, _)| c)
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
/// `FP8GEMM_FORCE_SPLIT` / [`force_split`] forces the count (`≤ min(k/128, MAX_SPLITS)`, a
/// 32- or 64-row tile, never reduced for lack of workspace; other than 1 for contiguous is an
/// error); a tile forced without a split count runs unsplit.
pub fn get_grouped_bs_config_for_workspace(desc: &GemmDesc, available: u64) -> Result<(GemmConfig, Option<WorkspaceLimit>), ConfigError> {
    validate(desc)?;
    let tiles: &[tile::BsTile] = match desc.kind {
        GemmKind::Dense => return Err(ConfigError::NoKernel { kind: desc.kind, arch: desc.arch }),
        GemmKind::MGroupedContiguous => &tile::CONTIGUOUS_BS_TILES,
        GemmKind::MGroupedMasked => &tile::MASKED_BS_TILES,
    };
    let forced_s = forced_split()?;
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
    let forced_t = forced_tile()?;
    let (i, why) = match forced_t {
        Some((bm, bn)) => {
            let available = match desc.kind {
                GemmKind::MGroupedMasked => "32x128, 64x128, 128x128 and 80x128 (m-grouped masked, pre-shuffled B)",
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
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM64_BN128,
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM80_BN128,
        ],
        config,
    )
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
/// (The cut at 2 blocks: 3.5 % faster contiguous, 0.3 % slower masked, both within the
/// model's ±2 % layout noise at 1–2 blocks.) The forced 80-row masked kernel (now also two per
/// CU, 256 registers) beats the 64-row one at masked 1×1024 over 7168×2048 (723.8 TFLOPS) but
/// not over 4096×7168 (832.3 against 1041.4): not chosen by this rule.
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
fn grouped_bs_pipe_rule(desc: &GemmDesc, base: tile::BsTile) -> Option<tile::BsTile> {
    if base.block_m != 64 || desc.k / tile::SCALE_BLOCK_K < GROUPED_BS_PIPE_MIN_BLOCKS {
        return None;
    }
    grouped_bs_pipe_tiles(desc.kind).iter().copied().find(|t| t.block_m == 64)
}

/// The launch spec of an m-grouped masked bs split-K config's kernel (B pre-shuffled).
pub fn masked_splitk_bs_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<MGroupedMaskedSplitKArgs>> {
    spec_named([M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM64_BN128], config)
}

/// The launch spec of a dense bs split-K config's kernel (B pre-shuffled).
pub fn dense_splitk_bs_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<DenseSplitKArgs>> {
    spec_named([FP8_GEMM_NT_SPLITK_BS_BM32_BN128, FP8_GEMM_NT_SPLITK_BS_BM64_BN128, FP8_GEMM_NT_SPLITK_BS_BM128_BN128, FP8_GEMM_NT_SPLITK_BS_BM32_BN64], config)
}

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
        // 64×2112×7168: 34 tiles of 32×128, fewer than the CUs either way, so the rules' split
        // count comes from the estimate over the CU count of the device (80 on an MI308X; the
        // bs tuned table's row for this problem is for 304 CUs, left out here).
        let desc = GemmDesc::dense(64, 2112, 7168, Arch::Gfx942);
        let (full, small) = bs_table::without_table(|| (get_bs_config(&desc).unwrap(), get_bs_config(&desc.with_cus(80)).unwrap()));
        assert!(small.splits < full.splits, "80 CUs: {} splits, 304 CUs: {}", small.splits, full.splits);
    }

    #[test]
    fn every_config_names_an_existing_kernel_and_covers_the_problem() {
        for arch in Arch::ALL {
            for (m, n, k) in SHAPES {
                let c = get_best_config(&GemmDesc::dense(m, n, k, arch)).unwrap();
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
    fn small_m_uses_64_row_tiles_and_large_m_128() {
        let pick = |m, n, k| get_best_config(&GemmDesc::dense(m, n, k, Arch::Gfx942)).unwrap();
        // M = 64 or 128 with N = 2112: 128-row tiles would leave most CUs idle.
        assert_eq!(pick(64, 2112, 7168).block_m, 64);
        assert_eq!(pick(128, 2112, 7168).block_m, 64);
        // The tuned table splits K there (33 tiles of 56 blocks); without a split it is 64 × 64.
        let c = pick(64, 2112, 7168);
        assert_eq!(c.kernel, "fp8_gemm_nt_splitk_bm64_bn64");
        assert!(c.splits > 1, "{c}");
        force_split(Some(1));
        let unsplit = pick(64, 2112, 7168);
        force_split(None);
        assert_eq!(unsplit.kernel, "fp8_gemm_nt_bm64_bn64");
        // M = 4096: more than two rounds of tiles on 304 CUs; the 128 × 128 tile's reuse wins at
        // K = 2048. (At 24576 × 1536 — 12 K blocks — the tiles are within 4 % of each other in the
        // model and the table's fastest is followed, whichever it is.)
        assert_eq!(pick(4096, 7168, 2048).kernel, "fp8_gemm_nt_bm128_bn128");
        let row = tuned(Arch::Gfx942).unwrap().best.iter().find(|b| (b.kind, b.m, b.n, b.k) == (GemmKind::Dense, 4096, 24576, 1536)).unwrap().tile;
        let c = pick(4096, 24576, 1536);
        assert_eq!((c.block_m, c.block_n, c.splits), (row.0, row.1, 1), "{c}");
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
        force_tile(Some((64, 128)));
        let c = get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942)).unwrap();
        force_tile(Some((32, 32)));
        let e = get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942)).unwrap_err();
        force_tile(None);
        assert_eq!((c.block_m, c.block_n), (64, 128));
        assert!(matches!(e, ConfigError::ForcedTile { .. }), "{e}");
    }

    #[test]
    fn bad_shapes_are_typed_errors() {
        let e = |m, n, k| get_best_config(&GemmDesc::dense(m, n, k, Arch::Gfx942)).unwrap_err();
        assert_eq!(e(0, 128, 128), ConfigError::Shape { arg: "m", value: 0, expected: "at least 1" });
        assert!(matches!(e(64, 130, 128), ConfigError::Shape { arg: "n", value: 130, .. }));
        assert!(matches!(e(64, 128, 100), ConfigError::Shape { arg: "k", value: 100, .. }));
        assert!(matches!(e(1 << 20, 4096, 4096), ConfigError::TooLarge { tensor: "a", .. }));
        let c = |m_sum, groups| get_best_config(&GemmDesc::m_grouped_contiguous(m_sum, 128, 128, groups, Arch::Gfx942));
        assert!(matches!(c(192, 2), Err(ConfigError::Shape { arg: "m", value: 192, .. })));
        assert!(matches!(c(256, 0), Err(ConfigError::Shape { arg: "groups", value: 0, .. })));
        // 80 experts of 4096 × 7168 FP8 weights: 2.35 GB, beyond 31-bit offsets.
        let big = GemmDesc::m_grouped_contiguous(128, 4096, 7168, 80, Arch::Gfx942);
        assert!(matches!(get_best_config(&big), Err(ConfigError::TooLarge { tensor: "b", .. })));
        // 128 groups × 4096 rows × 7168: 3.8 GB of activations.
        let masked = GemmDesc::m_grouped_masked(4096, 4096, 7168, 128, 64, Arch::Gfx942);
        assert!(matches!(get_best_config(&masked), Err(ConfigError::TooLarge { tensor: "a", .. })));
    }

    #[test]
    fn grouped_configs_name_grouped_kernels_and_cover_the_grid() {
        for arch in Arch::ALL {
            for (m_sum, groups) in [(128, 1), (1024, 8), (8192, 4), (32768, 8)] {
                let c = get_best_config(&GemmDesc::m_grouped_contiguous(m_sum, 4096, 7168, groups, arch)).unwrap();
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
                let c = get_best_config(&GemmDesc::m_grouped_masked(m_max, 7168, 2048, groups, expected, arch)).unwrap();
                assert!(masked_kernel_spec(&c).is_some(), "{c}");
                assert_eq!(c.grid, groups * m_max.div_ceil(c.block_m) * 7168 / c.block_n, "{c}");
            }
        }
    }

    #[test]
    fn grouped_bs_configs_name_bs_kernels_and_cover_the_grid() {
        for arch in Arch::ALL {
            for (m_sum, groups) in [(128, 1), (1024, 8), (8192, 4), (32768, 8)] {
                let c = get_grouped_bs_config(&GemmDesc::m_grouped_contiguous(m_sum, 4096, 7168, groups, arch)).unwrap();
                assert!(contiguous_bs_kernel_spec(&c).is_some(), "{c}");
                assert!(contiguous_kernel_spec(&c).is_none() && masked_bs_kernel_spec(&c).is_none(), "{c}");
                // Two A stages and two SFA regions (4·⌈FM/4⌉ slots of 256 bytes below 128 rows).
                let lds = 2 * c.block_m * 128 + if c.block_m == 128 { 32 * c.block_m } else { 2 * 1024 * c.block_m.div_ceil(64) };
                assert_eq!((c.grid, c.lds_bytes, c.splits), ((m_sum / c.block_m) * 4096 / 128, lds, 1), "{c}");
            }
            for (m_max, groups, expected) in [(1024, 1, 1024), (512, 2, 512), (256, 4, 256), (4096, 8, 7), (100, 3, 0)] {
                let c = get_grouped_bs_config(&GemmDesc::m_grouped_masked(m_max, 7168, 2048, groups, expected, arch)).unwrap();
                assert!(masked_bs_kernel_spec(&c).is_some() && masked_kernel_spec(&c).is_none(), "{c}");
                assert_eq!(c.grid, groups * m_max.div_ceil(c.block_m) * 7168 / 128, "{c}");
            }
            // Dense problems have no grouped bs kernel.
            let e = get_grouped_bs_config(&GemmDesc::dense(128, 128, 128, arch)).unwrap_err();
            assert!(matches!(e, ConfigError::NoKernel { kind: GemmKind::Dense, .. }), "{e}");
        }
        // The rule by hand (304 CUs). Decode-sized masked groups: 4·1·32 tiles of either
        // height, 1 per CU → 32 vs 64 rows: the 32-row tile.
        let pick = |d: GemmDesc| get_grouped_bs_config(&d).unwrap().block_m;
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
                let c = get_grouped_bs_config(&d).unwrap();
                assert_eq!((c.block_m, c.kernel.contains("_bs_pipe_")), (64, pipe), "k = {k}: {c}");
                let groups = if d.kind == GemmKind::MGroupedMasked { d.groups } else { 1 };
                assert_eq!(c.grid, groups * d.m.div_ceil(64) * 4096 / 128, "{c}");
            }
        }
    }

    #[test]
    fn grouped_bs_forced_tiles() {
        force_tile(Some((32, 128)));
        let desc = GemmDesc::m_grouped_masked(256, 4096, 7168, 4, 256, Arch::Gfx942);
        assert_eq!(get_grouped_bs_config(&desc).unwrap().kernel, "m_grouped_fp8_gemm_nt_masked_bs_bm32_bn128");
        let contiguous = GemmDesc::m_grouped_contiguous(256, 4096, 7168, 2, Arch::Gfx942);
        assert_eq!(get_grouped_bs_config(&contiguous).unwrap().kernel, "m_grouped_fp8_gemm_nt_contiguous_bs_bm32_bn128");
        // No bs kernel has a 64-column tile.
        force_tile(Some((64, 64)));
        for d in [desc, contiguous] {
            let e = get_grouped_bs_config(&d).unwrap_err();
            assert!(matches!(e, ConfigError::ForcedTile { .. }) && e.to_string().contains("32x128, 64x128, 128x128"), "{e}");
        }
        force_tile(Some((128, 128)));
        assert_eq!(get_grouped_bs_config(&desc).unwrap().kernel, "m_grouped_fp8_gemm_nt_masked_bs_bm128_bn128");
        // 80 rows: the pipelined masked kernel; no contiguous kernel (80 does not divide 128).
        force_tile(Some((80, 128)));
        let c = get_grouped_bs_config(&desc).unwrap();
        assert_eq!((c.kernel, c.grid, c.lds_bytes), ("m_grouped_fp8_gemm_nt_masked_bs_pipe_bm80_bn128", 4 * 4 * 32, tile::bs_pipe_lds_bytes(80)));
        assert!(masked_bs_kernel_spec(&c).is_some());
        let e = get_grouped_bs_config(&contiguous).unwrap_err();
        assert!(matches!(e, ConfigError::ForcedTile { .. }) && e.to_string().contains("80x128"), "{e}");
        // A forced 64-row tile follows the pipelined rule: K = 7168 (56 blocks) and 2048 (16)
        // pipelined, 128 (one block) not.
        force_tile(Some((64, 128)));
        assert_eq!(get_grouped_bs_config(&desc).unwrap().kernel, "m_grouped_fp8_gemm_nt_masked_bs_pipe_bm64_bn128");
        let k2048 = GemmDesc::m_grouped_masked(256, 4096, 2048, 4, 256, Arch::Gfx942);
        assert_eq!(get_grouped_bs_config(&k2048).unwrap().kernel, "m_grouped_fp8_gemm_nt_masked_bs_pipe_bm64_bn128");
        let short = GemmDesc::m_grouped_masked(256, 4096, 128, 4, 256, Arch::Gfx942);
        assert_eq!(get_grouped_bs_config(&short).unwrap().kernel, "m_grouped_fp8_gemm_nt_masked_bs_bm64_bn128");
        // A forced split: the masked split-K kernel of the forced tile (the pipelined loop has no
        // split-K twin); contiguous never splits.
        force_split(Some(2));
        let c = get_grouped_bs_config(&desc).unwrap();
        assert_eq!((c.kernel, c.splits), ("m_grouped_fp8_gemm_nt_masked_splitk_bs_bm64_bn128", 2));
        let contiguous = GemmDesc::m_grouped_contiguous(256, 4096, 7168, 2, Arch::Gfx942);
        assert!(matches!(get_grouped_bs_config(&contiguous), Err(ConfigError::ForcedSplit { .. })));
        force_split(None);
        force_tile(None);
    }

    #[test]
    fn masked_config_follows_expected_m_not_the_capacity() {
        let pick = |expected| get_best_config(&GemmDesc::m_grouped_masked(4096, 4096, 7168, 4, expected, Arch::Gfx942)).unwrap();
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
        let a = get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942)).unwrap();
        let b = get_best_config(&GemmDesc::dense(4096, 7168, 4096, Arch::Gfx942)).unwrap();
        let c = get_best_config(&GemmDesc::dense(64, 2112, 7168, Arch::Gfx942)).unwrap();
        assert_eq!(a, b, "same kernel and grid for a different k: one config");
        assert!(first_sighting(&seen, &a));
        assert!(!first_sighting(&seen, &b));
        assert!(first_sighting(&seen, &c));
        assert!(!first_sighting(&seen, &c));
    }

    #[test]
    fn bs_pipe_streamk_candidates_are_aligned_and_within_one_wave() {
        let arch = Arch::Gfx942;
        for (m, n, k) in [(1856, 2048, 7168), (4096, 2048, 7168), (1664, 768, 7168), (8192, 2048, 7168), (12288, 2048, 7168), (1024, 2048, 1152)] {
            let d = GemmDesc::dense(m, n, k, arch);
            let nkb = k / 128;
            let cands = bs_pipe_streamk_candidates(&d, 304);
            assert!(!cands.is_empty(), "{m}x{n}x{k}");
            for c in &cands {
                let BsSchedule::PipeStreamK { dp, g } = c.schedule else { panic!("{c}") };
                let tiles = STREAMK_BS_PIPE_TILES[c.tile].grid(m, n);
                let t = tiles - dp;
                // Heads of whole waves (one or two per CU) or none; g = T·c, c ∈ {1, 2, 4}, in one
                // wave of two per CU; a valid schedule.
                assert!(dp == 0 || dp % 304 == 0, "{m}x{n}x{k} {c}");
                assert!(g % t == 0 && [1, 2, 4].contains(&(g / t)) && g <= 608, "{m}x{n}x{k} {c}");
                assert!(StreamKSchedule::new(tiles, nkb, dp, g).is_ok(), "{m}x{n}x{k} {c}");
                // The config is the pipelined stream-K kernel of that tile, with its LDS.
                let cfg = bs_config(&d, arch_spec(arch), *c).unwrap();
                let t = STREAMK_BS_PIPE_TILES[c.tile];
                assert_eq!((cfg.kernel, cfg.block_m, cfg.lds_bytes, cfg.grid), (t.name, t.block_m, tile::bs_pipe_lds_bytes(t.block_m), dp + g), "{c}");
                assert_eq!(cfg.stream_k, Some(StreamK { tiles, nkb, dp_tiles: dp, sk_wgs: g }), "{c}");
            }
        }
        // 1856×2048×7168: 464 tiles of 64 rows: whole tiles (0 + 464) and 304 + 160 among them.
        let c = bs_pipe_streamk_candidates(&GemmDesc::dense(1856, 2048, 7168, arch), 304);
        for (dp, g) in [(0, 464), (304, 160), (304, 320)] {
            assert!(c.contains(&BsCandidate { tile: 1, schedule: BsSchedule::PipeStreamK { dp, g } }), "{dp} + {g}");
        }
        // None: a single row of tiles, fewer than 8 or more than 64 blocks, B beyond the L2 with
        // 8 or more 64-row tiles per CU.
        for (m, n, k) in [(64, 24576, 1536), (1024, 2048, 896), (256, 7168, 16384), (4096, 7168, 16384)] {
            assert!(bs_pipe_streamk_candidates(&GemmDesc::dense(m, n, k, arch), 304).is_empty(), "{m}x{n}x{k}");
        }
    }

    #[test]
    fn bs_pipe_streamk_estimates_by_hand() {
        let e = |tile: usize, dp, g, tiles, nkb| bs_estimate(&BsCandidate { tile, schedule: BsSchedule::PipeStreamK { dp, g } }, tiles, nkb, 304);
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        let [s48, s64] = BS_PIPE_SK_BLOCK_US;
        let w = BS_PIPE_SK_WG_BLOCKS;
        // 2048×2048×7168, 64 rows, whole tiles: 512 workgroups, two on the busiest CU, each
        // 56 blocks + the per-workgroup overhead, at the shared rate.
        close(e(1, 0, 512, 512, 56), (56.0 + w) * s64[1]);
        // One alone (256 tiles): the alone rate.
        close(e(1, 0, 256, 256, 56), (56.0 + w) * s64[0]);
        // 4096×2048×7168, 64 rows: head 912 (three per CU on the busiest: two at once, then
        // one), tail of 112 tiles over g = 224 (two aligned pieces of 28 blocks + the split
        // piece's overhead), one per CU.
        let head = 56.0 + w;
        let tail = 28.0 + w + BS_PIPE_SK_FIXED_BLOCKS;
        // Two head workgroups share the CU for `head` blocks; then the third head workgroup and
        // the tail piece share it until the piece ends; then the head workgroup alone.
        let want = head * s64[1] + tail * s64[1] + (head - tail) * s64[0];
        close(e(1, 912, 224, 1024, 56), want);
        // 48 rows use their own rates.
        close(e(0, 0, 256, 256, 56), (56.0 + w) * s48[0]);
        // The choice: 4096×2048×7168 takes the pipelined stream-K kernel (modelled MI325X
        // 117.5 µs against 129.8 data-parallel 64 rows, 138.8 the 128-row kernel);
        // 2048×2048×7168 the 64-row stream-K kernel with whole tiles, two per CU (68.24; the
        // 64-row data-parallel kernel 67.99, the 128-row one 70.03); 640×2048×7168 keeps the data-parallel 48-row kernel
        // (whole tiles on the 48-row stream-K kernel are estimated the same: a tie, not
        // switched; modelled 35.1 vs 35.3).
        let arch = Arch::Gfx942;
        let c = get_bs_config(&GemmDesc::dense(2048, 2048, 7168, arch)).unwrap();
        assert_eq!((c.kernel, c.stream_k.map(|s| (s.dp_tiles, s.sk_wgs))), ("fp8_gemm_nt_streamk_bs_pipe_bm64_bn128", Some((0, 512))));
        let c = get_bs_config(&GemmDesc::dense(4096, 2048, 7168, arch)).unwrap();
        assert_eq!((c.kernel, c.stream_k.map(|s| (s.dp_tiles, s.sk_wgs))), ("fp8_gemm_nt_streamk_bs_pipe_bm64_bn128", Some((912, 224))));
        let c = get_bs_config(&GemmDesc::dense(640, 2048, 7168, arch)).unwrap();
        assert_eq!((c.kernel, c.stream_k), ("fp8_gemm_nt_bs_pipe_bm48_bn128", None));
    }

    #[test]
    fn forced_bs_stream_k_on_the_pipelined_kernels() {
        let arch = Arch::Gfx942;
        let d = GemmDesc::dense(1024, 2048, 7168, arch);
        let forced_cfg = |t: (u32, u32), pipelined: Option<bool>, sk: Option<ForcedStreamK>| {
            force_tile(Some(t));
            force_stream_k(sk);
            force_bs_pipelined(pipelined);
            let c = get_bs_config(&d);
            force_tile(None);
            force_stream_k(None);
            force_bs_pipelined(None);
            c
        };
        // 48 rows: the pipelined stream-K kernel; the data-parallel one without stream-K.
        let c = forced_cfg((48, 128), None, Some((352, Some(0)))).unwrap();
        assert_eq!((c.kernel, c.grid, c.lds_bytes), ("fp8_gemm_nt_streamk_bs_pipe_bm48_bn128", 352, tile::bs_pipe_lds_bytes(48)));
        assert_eq!(forced_cfg((48, 128), None, None).unwrap().kernel, "fp8_gemm_nt_bs_pipe_bm48_bn128");
        // 64 rows, 256 tiles (below 8 per CU): pipelined by default, either loop when pinned,
        // stream-K and data-parallel alike.
        for (pipelined, sk, dp) in [
            (None, "fp8_gemm_nt_streamk_bs_pipe_bm64_bn128", "fp8_gemm_nt_bs_pipe_bm64_bn128"),
            (Some(true), "fp8_gemm_nt_streamk_bs_pipe_bm64_bn128", "fp8_gemm_nt_bs_pipe_bm64_bn128"),
            (Some(false), "fp8_gemm_nt_streamk_bs_bm64_bn128", "fp8_gemm_nt_bs_bm64_bn128"),
        ] {
            let c = forced_cfg((64, 128), pipelined, Some((304, None))).unwrap();
            assert_eq!((c.kernel, c.stream_k.map(|s| (s.dp_tiles, s.sk_wgs))), (sk, Some((0, 304))), "{pipelined:?}");
            assert_eq!(forced_cfg((64, 128), pipelined, None).unwrap().kernel, dp, "{pipelined:?}");
        }
        // The default head of the pipelined kernels is whole waves of two per CU.
        let c = forced_cfg((64, 128), None, Some((300, None))).unwrap();
        assert_eq!(c.stream_k.map(|s| s.dp_tiles), Some(0), "256 tiles: no whole wave of 608");
        let c = get_bs_config(&GemmDesc::dense(4096, 2048, 7168, arch)).unwrap();
        assert!(c.stream_k.is_some());
        force_tile(Some((64, 128)));
        force_stream_k(Some((416, None)));
        let c = get_bs_config(&GemmDesc::dense(4096, 2048, 7168, arch));
        force_tile(None);
        force_stream_k(None);
        assert_eq!(c.unwrap().stream_k.map(|s| (s.dp_tiles, s.sk_wgs)), Some((608, 416)), "1024 tiles: one whole wave of 608");
        // No pipelined stream-K kernel for 80 / 96 rows; a forced split with the 48-row tile.
        for bm in [80, 96] {
            let x = forced_cfg((bm, 128), None, Some((304, None))).unwrap_err();
            assert!(matches!(&x, ConfigError::ForcedStreamK { expected, .. } if expected.contains(&format!("{bm}x128"))), "{x}");
        }
        force_split(Some(2));
        let x = forced_cfg((48, 128), None, Some((304, None))).unwrap_err();
        force_split(None);
        assert!(matches!(&x, ConfigError::ForcedSplit { .. }), "{x}");
    }

    #[test]
    fn bs_estimates_by_hand() {
        let e = |tile: usize, schedule, tiles, nkb| bs_estimate(&BsCandidate { tile, schedule }, tiles, nkb, 304);
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        // 1280×2048×7168 on 32 × 128: 640 tiles of 56 blocks, the busiest CU runs 3 at 1.18
        // µs per block.
        close(e(0, BsSchedule::DataParallel, 640, 56), 56.0 * 1.18);
        // Stream-K, head 608 (2 per CU), 32 tail tiles over g = 192 (6 aligned pieces each of
        // ⌈1792/192⌉ = 10 blocks, + 1 fixed): the tail piece runs at 3 per CU, then the head's
        // remaining 45 blocks at 2 per CU; the reduction of ⌈56/9⌉ + 1 = 8 contributors.
        close(e(0, BsSchedule::StreamK { dp: 608, g: 192 }, 640, 56), 11.0 * 1.18 + 45.0 * 0.875 + 8.0 * 0.2);
        // Staggered (g = 304, not a multiple of 32): ⌈1792/304⌉ = 6 blocks × 1.8 + 1; up to
        // ⌈56/5⌉ + 1 = 13 contributors.
        close(e(0, BsSchedule::StreamK { dp: 608, g: 304 }, 640, 56), 11.8 * 1.18 + 44.2 * 0.875 + 13.0 * 0.2);
        // 256×7168×16384: 448 tiles of 128 blocks in 2 splits: 896 workgroups, 3 on the busiest
        // CU, each 64 blocks, and the hand-off.
        close(e(0, BsSchedule::Split(2), 448, 128), 64.0 * 1.18 + 4.0);
        // The 64-row tile, 464 tiles: head 304, g = 304 over 160 tiles (staggered).
        let per = (160.0f64 * 56.0 / 304.0).ceil();
        let most = (56f64 / (160.0 * 56.0 / 304.0f64).floor()).ceil() + 1.0;
        close(e(1, BsSchedule::StreamK { dp: 304, g: 304 }, 464, 56), (per * 1.8 + 1.0) * 1.56 + (56.0 - per * 1.8 - 1.0) * 1.068 + 0.2 * most);
        // The bs candidates above one tile per CU: no head of 0 tiles, at most 16 contributors
        // per tile, split-K only within one wave.
        let d = GemmDesc::dense(1280, 2048, 7168, Arch::Gfx942);
        let sk = bs_streamk_candidates(&d, 304);
        assert!(!sk.is_empty());
        for c in &sk {
            let BsSchedule::StreamK { dp, g } = c.schedule else { panic!("{c}") };
            let tiles = tile::DENSE_BS_TILES[c.tile].grid(1280, 2048);
            assert!(dp > 0 && g <= 16 * (tiles - dp), "{c}");
        }
        assert!(bs_split_candidates(&d, 304).is_empty(), "640 tiles × 2 splits exceed one wave of 608");
        // 256×7168×16384: 448 tiles × 2 splits exceed the split-K kernel's wave (2 per CU): the
        // pipelined 64-row tile, 224 tiles (modelled MI300X `--scope xcd` 69.16 µs; 2 splits
        // forced, two rounds: 91.84).
        let d = GemmDesc::dense(256, 7168, 16384, Arch::Gfx942);
        assert!(bs_split_candidates(&d, 304).is_empty());
        let c = get_bs_config(&d).unwrap();
        assert_eq!((c.kernel, c.splits), ("fp8_gemm_nt_bs_pipe_bm64_bn128", 1));
        let d = GemmDesc::dense(480, 2048, 7168, Arch::Gfx942);
        assert_eq!(bs_split_candidates(&d, 304), vec![BsCandidate { tile: 0, schedule: BsSchedule::Split(2) }], "240 tiles × 2 splits fit, × 3 do not");
        // 256×7168×2048 (16 blocks): the hand-off outweighs the halved blocks, no split (2
        // splits modelled 20.5 against 19.9 µs unsplit); the pipelined 64-row tile (224 tiles,
        // modelled 17.5 µs MI325X) is the baseline, which stream-K (304 + 288, modelled 17.7)
        // does not beat by BS_STREAMK_MIN_GAIN.
        let d = GemmDesc::dense(256, 7168, 2048, Arch::Gfx942);
        let split = e(0, BsSchedule::Split(2), 448, 16);
        assert!(split > 0.92 * e(0, BsSchedule::DataParallel, 448, 16), "{split}");
        let c = get_bs_config(&d).unwrap();
        assert_eq!((c.kernel, c.splits, c.stream_k), ("fp8_gemm_nt_bs_pipe_bm64_bn128", 1, None));
    }

    #[test]
    fn bs_pipe_rule_prefers_the_64_row_kernel_at_two_per_cu() {
        // The data-parallel kernel the bs rule ends with: the pipelined tile `bs_pipe_rule`
        // picks, else the base tile's (`bs_kernel`: the 64-row tile runs pipelined).
        let rule = |m: u32, n: u32, k: u32| {
            let t = |bm: u32| u64::from(m.div_ceil(bm)) * u64::from(n.div_ceil(128));
            let base = bs_tile_rule(t(32), t(64), 304);
            let dp = bs_pipe_rule(m, n, k / 128, 304, base).map(|p| tile::DENSE_BS_PIPE_TILES[p]).unwrap_or_else(|| bs_kernel(base));
            dp.name
        };
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        // The 128-row kernel's estimate: one round alone or shared at 1.22 µs per block per round.
        close(bs_pipe_round_estimate(BS_PIPE128, 240, 304), 1.22);
        close(bs_pipe_round_estimate(BS_PIPE128, 512, 304), 2.0 * 1.22);
        close(bs_pipe_estimate(BS_PIPE128, 14336, 2048, 56, 304), 6.0 * 1.22 * 56.0);
        // The 64-row one's: alone 0.70, one shared round 1.18, several rounds 1.14 each.
        close(bs_pipe_round_estimate(1, 256, 304), 0.70);
        close(bs_pipe_round_estimate(1, 512, 304), 1.18);
        close(bs_pipe_round_estimate(1, 1024, 304), 2.0 * 1.14);
        // Since the 64-row pipelined kernel runs two per CU it beats the 128-row kernel's
        // rounds and the 48-row kernel's from 3 rounds on. Modelled MI325X, µs, 64 rows
        // (data-parallel, pipelined) against the former choice: 1856×2048×7168 68.05 (128 rows
        // 70.12), 2048×2048×7168 67.99 (70.03), 4096×2048×7168 129.79 (138.8), 6144×2048×7168
        // 191.77 (48 rows 203.3: 4 × 0.87 against 3 × 1.14), 1024×2048×7168 38.28 (alone);
        // from 8 64-row tiles per CU, where the base is the 64-row tile itself, neither the
        // 48-row kernel (ranked at 1.01 per round from 6 rounds) nor the 128-row one beats it:
        // 14336×2048×7168 379.14 (128 rows 411.5), 10240×2048×7168 285.16 (48 rows 342.6);
        // MI300X 4096×7168×2048 145.53 (128 rows 162.3), 4096×7168×16384 850.44 (B beyond the
        // L2; the two-phase 64-row kernel 1034.02).
        for (m, n, k) in [
            (1856u32, 2048u32, 7168u32),
            (2048, 2048, 7168),
            (4096, 2048, 7168),
            (6144, 2048, 7168),
            (1024, 2048, 7168),
            (14336, 2048, 7168),
            (10240, 2048, 7168),
            (4096, 7168, 2048),
            (4096, 7168, 16384),
        ] {
            assert_eq!(rule(m, n, k), "fp8_gemm_nt_bs_pipe_bm64_bn128", "{m}x{n}x{k}");
        }
        // Where the 48-row kernel's single round is the cheaper (640×2048×7168: 32.86 µs).
        assert_eq!(rule(640, 2048, 7168), "fp8_gemm_nt_bs_pipe_bm48_bn128");
        // A forced 128 × 128 tile runs this kernel, unsplit.
        assert_eq!(bs_kernel(2), tile::DENSE_BS_PIPE_BM128);
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
        let (c, limited) = get_config_for_workspace(&desc, u64::MAX).unwrap();
        assert!(c.splits > 1 && c.kernel.starts_with("fp8_gemm_nt_splitk_"), "{c}");
        assert!(limited.is_none());
        assert_eq!(c.workspace_floats(), tile::splitk_workspace_floats(c.tiles(), c.splits, c.block_m, c.block_n));
        assert!(c.to_string().contains(&format!("split-K {}", c.splits)), "{c}");
        // Without workspace: the best config that needs none, and the preferred one reported.
        let (d, limited) = get_config_for_workspace(&desc, 0).unwrap();
        assert_eq!(d.splits, 1);
        assert_eq!(limited, Some(WorkspaceLimit { preferred: c, needed: c.workspace_floats(), available: 0 }));
        // Large M fills the device: no split.
        assert_eq!(get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942)).unwrap().splits, 1);
    }

    #[test]
    fn a_forced_split_wins_and_an_impossible_one_is_an_error() {
        force_split(Some(3));
        let c = get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942)).unwrap();
        force_tile(Some((64, 128)));
        let d = get_best_config(&GemmDesc::dense(64, 7168, 2048, Arch::Gfx942)).unwrap();
        force_split(Some(17));
        let e = get_best_config(&GemmDesc::dense(64, 7168, 2048, Arch::Gfx942)).unwrap_err();
        force_split(None);
        force_tile(None);
        assert_eq!(c.splits, 3);
        assert_eq!((d.block_m, d.block_n, d.splits), (64, 128, 3));
        assert_eq!(d.grid, 112 * 3 / 2);
        assert!(matches!(&e, ConfigError::ForcedSplit { expected, .. } if expected.contains("at most 16")), "{e}");
    }

    #[test]
    fn display() {
        let c = get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942)).unwrap();
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
        let c = get_best_config(&GemmDesc::dense(16384, 2048, 7168, Arch::Gfx942)).unwrap();
        assert_eq!((c.block_m, c.block_n), (128, 128), "{c}");
        // The lead's untuned-shape checks (modelled µs, MI300X): 1408×2048×7168 64×64 84.0 vs
        // 64×128 98.9; 4096×768×7168 64×64 14 % faster than 64×128.
        // (With the stream's default workspace: the model would split K there with more.)
        let ws = crate::workspace::DEFAULT_STREAM_WORKSPACE_FLOATS as u64;
        let pick = |m, n| get_config_for_workspace(&GemmDesc::dense(m, n, 7168, Arch::Gfx942), ws).unwrap().0.kernel;
        assert_eq!(pick(1408, 2048), "fp8_gemm_nt_bm64_bn64");
        assert_eq!(pick(4096, 768), "fp8_gemm_nt_bm64_bn64");
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
    fn stream_k_is_chosen_for_a_mostly_empty_last_wave_and_its_workspace_limit_reported() {
        // 8192 × 2048 × 7168: the 64 × 128 tail round of 224 tiles (on 608 slots) goes
        // stream-K over 608 workgroups (timing model: 356 µs, vs 381 data-parallel 64 × 128).
        let desc = GemmDesc::dense(8192, 2048, 7168, Arch::Gfx942);
        let (c, limited) = get_config_for_workspace(&desc, 8 << 20).unwrap();
        let sk = c.stream_k.expect("stream-K");
        assert_eq!((c.kernel, sk.dp_tiles, sk.sk_wgs, c.grid), ("fp8_gemm_nt_streamk_bm64_bn128", 1824, 608, 2432), "{c}");
        assert!(limited.is_none() && c.workspace_floats() <= 8 << 20);
        assert_eq!(c.workspace_floats(), SPLITK_COUNTER_FLOATS + (608 + 224 - 1) * 64 * 128);
        assert!(c.to_string().contains("stream-K: 1824 data-parallel tiles, then 608 workgroups over 224 tiles"), "{c}");
        // Without workspace: the best data-parallel config, and the stream-K one reported.
        let (d, limited) = get_config_for_workspace(&desc, 0).unwrap();
        assert!(d.stream_k.is_none() && d.splits == 1, "{d}");
        assert_eq!(limited, Some(WorkspaceLimit { preferred: c, needed: c.workspace_floats(), available: 0 }));
        // Decode shapes with a few tiles keep split-K (stream-K's tail costs more per block).
        assert!(get_best_config(&GemmDesc::dense(64, 2048, 7168, Arch::Gfx942)).unwrap().splits > 1);
    }
}
