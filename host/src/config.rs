//! Launch configuration: a problem description ([`GemmDesc`]) → the kernel and launch geometry
//! that computes it ([`GemmConfig`]).
//!
//! Every problem is planned by the generated selector ([`crate::select`]) over the kernel
//! registry ([`crate::registry`]): dense problems by [`crate::select::plan`], the m-grouped ones
//! (contiguous, masked) by [`crate::select::plan_grouped`], with the coefficients of the dense
//! kernels whose main loop the grouped kernels run (a documented stand-in, see
//! [`crate::select`]). [`get_config_for_workspace`] (logical B), [`get_bs_config_for_workspace`]
//! (dense, pre-shuffled B) and [`get_grouped_bs_config_for_workspace`] (m-grouped, pre-shuffled
//! B) are its entry points here. Every choice takes the caller's [`Overrides`] as an explicit
//! argument (the entry points pass their stream's, [`crate::Stream::overrides`]); nothing here
//! reads thread or process state, nor any environment variable.

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
use fp8gemm_device::streamk::{FP8_GEMM_NT_STREAMK_BM64_BN64, FP8_GEMM_NT_STREAMK_BM64_BN128, FP8_GEMM_NT_STREAMK_BM128_BN128, StreamKSchedule};
use fp8gemm_device::tile;

use crate::codeobj::Arch;
use crate::layout::WeightLayout;

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
    /// MI308X). The selector's cost model deals the workgroups over it.
    pub cus: u32,
}

impl GemmDesc {
    /// A dense `m × n × k` problem on `arch`.
    pub fn dense(m: u32, n: u32, k: u32, arch: Arch) -> Self {
        GemmDesc { kind: GemmKind::Dense, m, n, k, groups: 1, expected_m: m, arch, cus: arch_cus(arch) }
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
        GemmDesc { kind: GemmKind::MGroupedContiguous, m: m_sum, n, k, groups, expected_m, arch, cus: arch_cus(arch) }
    }

    /// An m-grouped masked problem: `groups` groups of capacity `m_max` rows, of which about
    /// `expected_m` are valid (a hint; the real counts live on the device).
    pub fn m_grouped_masked(m_max: u32, n: u32, k: u32, groups: u32, expected_m: u32, arch: Arch) -> Self {
        GemmDesc { kind: GemmKind::MGroupedMasked, m: m_max, n, k, groups, expected_m, arch, cus: arch_cus(arch) }
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
    /// The masked layout's other order: workgroup `p` is dealt to XCD `p mod xcds`; each N
    /// column of each group (its row tiles, and their split pieces) goes whole to one XCD, the
    /// columns round-robin over the XCDs ([`fp8gemm_device::tile::masked_xcd_order`]), so the
    /// working tiles spread evenly whatever the group counts, and every XCD reads all of A.
    Columns {
        /// Number of XCDs.
        xcds: u32,
    },
}

impl Remap {
    /// The masked kernels' `order` argument for this order
    /// ([`fp8gemm_device::args::MASKED_ORDER_RUNS`], [`fp8gemm_device::args::MASKED_ORDER_COLUMNS`]).
    pub fn masked_order(self) -> u32 {
        match self {
            Remap::Xcd { .. } => fp8gemm_device::args::MASKED_ORDER_RUNS,
            Remap::Columns { .. } => fp8gemm_device::args::MASKED_ORDER_COLUMNS,
        }
    }
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
        let remap = match self.remap {
            Remap::Xcd { xcds } => format!("XCD remap over {xcds}"),
            Remap::Columns { xcds } => format!("columns round-robin over {xcds} XCDs"),
        };
        write!(
            f,
            "{} on {}: block {}x{}x{}, {} threads, {} B LDS, grid {} ({remap})",
            self.kernel, self.arch, self.block_m, self.block_n, self.block_k, self.workgroup_size, self.lds_bytes, self.grid
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
    /// The forced kernel ([`Overrides::kernel`]) is not a registered kernel, or not one of the
    /// launch's candidates.
    #[error("forced kernel `{kernel}` (Overrides::kernel): expected {expected}")]
    ForcedKernel {
        /// The name asked for.
        kernel: String,
        /// What would have been accepted.
        expected: String,
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
    /// The embedded cost model ([`crate::select::CostModel`]) does not parse.
    #[error("tuned cost model: {0} (regenerate it with `fp8gemm tune --cost`)")]
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

/// Compute units of `arch`'s full device (MI300X / MI325X: 304; MI355X: 256 in 8 XCDs).
fn arch_cus(arch: Arch) -> u32 {
    match arch {
        Arch::Gfx942 => 304,
        Arch::Gfx950 => 256,
    }
}

/// The name of a kind in the CLI's tables.
pub fn kind_name(kind: GemmKind) -> &'static str {
    match kind {
        GemmKind::Dense => "dense",
        GemmKind::MGroupedContiguous => "contiguous",
        GemmKind::MGroupedMasked => "masked",
    }
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
    /// A masked launch's grid order ([`Remap::Xcd`] or [`Remap::Columns`]; the other kernels
    /// have only [`Remap::Xcd`]).
    pub remap: Option<Remap>,
    /// Only the registered kernel of this name ([`crate::registry::KernelEntry::name`]), even
    /// one without generated cost coefficients (for measuring a new kernel before its
    /// coefficients exist).
    pub kernel: Option<&'static str>,
}

impl Overrides {
    /// No override: the selector chooses everything.
    pub const NONE: Overrides = Overrides {
        tile: None,
        split: None,
        stream_k: None,
        bs_pipelined: None,
        bs_narrow_barrier: None,
        contiguous_chunk_rows: None,
        remap: None,
        kernel: None,
    };
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
    /// These overrides with a masked launch's grid order pinned.
    pub fn with_remap(mut self, remap: Remap) -> Self {
        self.remap = Some(remap);
        self
    }
    /// These overrides with the 32 × 64 bs kernel's blocks per barrier pinned.
    pub fn with_bs_narrow_barrier(mut self, blocks: u32) -> Self {
        self.bs_narrow_barrier = Some(blocks);
        self
    }
    /// These overrides with the kernel pinned to the registered one named `name`; an error
    /// naming it when no registered kernel has that name.
    pub fn with_kernel(mut self, name: &str) -> Result<Self, ConfigError> {
        let e = crate::registry::by_name(name)
            .ok_or_else(|| ConfigError::ForcedKernel { kernel: name.into(), expected: "a registered kernel (`fp8gemm info` lists them)".into() })?;
        self.kernel = Some(e.name());
        Ok(self)
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

/// The default data-parallel head of a stream-K launch of `tiles` tiles on `wave` workgroup
/// slots (`CUs · slots per CU`): the whole waves that leave at least one tile for the tail.
pub fn streamk_default_dp(tiles: u32, wave: u32) -> u32 {
    if wave == 0 || tiles == 0 { 0 } else { (tiles - 1) / wave * wave }
}

/// The stream-K configurations the selector weighs for a dense problem on logical B (for
/// `fp8gemm tune`): `(tile, sk_wgs, dp_tiles)` of every stream-K candidate of
/// [`crate::select::candidates`] (none for the m-grouped kinds).
pub fn streamk_schedules(desc: &GemmDesc) -> Result<Vec<StreamKSchedule3>, ConfigError> {
    validate(desc)?;
    Ok(crate::select::candidates(desc, WeightLayout::Logical)
        .into_iter()
        .filter_map(|p| p.stream_k.map(|sk| ((p.kernel.block_m, p.kernel.block_n), sk.sk_wgs, sk.dp_tiles)))
        .collect())
}

/// Workgroups per CU the data-parallel logical-B kernel of a tile holds at once on `arch`
/// (from the code object, [`crate::registry::KernelEntry::slots_per_cu`]; for `fp8gemm tune`).
pub fn slots_per_cu(arch: Arch, kind: GemmKind, block_m: u32, block_n: u32) -> Option<u32> {
    let problem = match kind {
        GemmKind::Dense => crate::registry::Problem::Dense,
        GemmKind::MGroupedContiguous => crate::registry::Problem::MGroupedContiguous,
        GemmKind::MGroupedMasked => crate::registry::Problem::MGroupedMasked,
    };
    crate::registry::candidates(problem, WeightLayout::Logical)
        .find(|e| e.schedule == crate::registry::ScheduleKind::DataParallel && (e.block_m, e.block_n) == (block_m, block_n))?
        .slots_per_cu(arch)
}

/// The logical-B tiles of one entry point, `(block_m, block_n)`.
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

/// Chooses the kernel and launch geometry for `desc` (logical B) under `overrides` when the
/// launch has `available` FP32 elements of workspace: dense problems by the generated selector
/// ([`crate::select::plan`]), m-grouped ones by its grouped planner
/// ([`crate::select::plan_grouped`]: the logical m-grouped kernels never split K, so they need
/// no workspace). A forced tile, split count or stream-K schedule ([`Overrides`]) filters the
/// candidates (a forced tile alone runs unsplit); one the problem cannot use is a typed error. A
/// split-K or stream-K choice that needs more than `available` floats is replaced by the best
/// one that fits, returned with the preferred one as a [`WorkspaceLimit`] (a forced schedule is
/// never replaced: the caller reports the shortfall).
pub fn get_config_for_workspace(desc: &GemmDesc, overrides: &Overrides, available: u64) -> Result<(GemmConfig, Option<WorkspaceLimit>), ConfigError> {
    validate(desc)?;
    let (plan, limit) = match desc.kind {
        // Dense problems: the generated selector over the kernel registry.
        GemmKind::Dense => crate::select::plan(desc, WeightLayout::Logical, overrides, available)?,
        _ => {
            let (plan, limit) = crate::select::plan_grouped(desc, WeightLayout::Logical, overrides, available)?;
            report_choice(desc, &plan.config(desc.arch), &plan.label(), plan.estimate_s, limit.as_ref());
            (plan, limit)
        }
    };
    Ok((plan.config(desc.arch), limit))
}

/// How much of its choice the selector prints to stderr: 0 nothing (the library's default), 1
/// (or more) each distinct configuration once with the problem that first chose it and its
/// modelled estimate.
static PRINT_CONFIGS: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Makes the selector print its choices to stderr (a diagnostic for the `fp8gemm` CLI's
/// `FP8GEMM_PRINT_CONFIGS`; see [`PRINT_CONFIGS`]): 0 off, 1 (or more) each configuration once.
pub fn set_print_configs(level: u8) {
    PRINT_CONFIGS.store(level, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`set_print_configs`] asked for any printing.
pub(crate) fn printing_configs() -> bool {
    PRINT_CONFIGS.load(std::sync::atomic::Ordering::Relaxed) > 0
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
                let spec = if c.splits > 1 { masked_splitk_bs_kernel_spec(&c).map(|s| s.name) } else { masked_bs_kernel_spec(&c).map(|s| s.name) };
                assert!(spec.is_some() && masked_kernel_spec(&c).is_none(), "{c}");
                assert_eq!(c.grid, groups * m_max.div_ceil(c.block_m) * 7168 / c.block_n * c.splits, "{c}");
            }
            // Dense problems have no grouped bs kernel.
            let e = get_grouped_bs_config(&GemmDesc::dense(128, 128, 128, arch), &Overrides::NONE).unwrap_err();
            assert!(matches!(e, ConfigError::NoKernel { kind: GemmKind::Dense, .. }), "{e}");
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
        // A forced 64-row tile runs on the loop the model prefers; Overrides::bs_pipelined pins it.
        let t64 = tile(64, 128);
        for d in [desc, GemmDesc::m_grouped_masked(256, 4096, 128, 4, 256, Arch::Gfx942)] {
            assert!(get_grouped_bs_config(&d, &t64).unwrap().kernel.starts_with("m_grouped_fp8_gemm_nt_masked_bs_"));
            for (pipe, name) in [(true, "m_grouped_fp8_gemm_nt_masked_bs_pipe_bm64_bn128"), (false, "m_grouped_fp8_gemm_nt_masked_bs_bm64_bn128")] {
                assert_eq!(get_grouped_bs_config(&d, &t64.with_bs_pipelined(pipe)).unwrap().kernel, name);
            }
        }
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
