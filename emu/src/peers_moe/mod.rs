//! Running AMD's FP8 block-scale mixture-of-experts code objects ("MoE peers") on the emulator.
//!
//! Two families of AITER's hand-written gfx942 kernels live in the peers directory
//! ([`crate::peers::PEERS_DIR_ENV`]); its `README.md` is the launch contract followed here:
//!
//! * **stage 1** (`fmoe_stage1/*.co`, [`MoeFamily::Stage1`]): for each routed row of an expert
//!   block, `h = silu(X·W1_gate) · (X·W1_up)` over `TN` columns of the intermediate dimension,
//!   re-quantised to FP8 per 128 columns with one appended f32 scale per (token, slot, block)
//!   ([`stage1`]);
//! * **1-stage** (`fmoe_1stage/*.co`, [`MoeFamily::OneStage`]): the whole expert computation
//!   fused — gate·up, silu·mul, FP8 re-quantisation, down projection, routing weight and
//!   `global_atomic_pk_add_bf16` into a zeroed bf16 output — with `s_setvskip`-guarded stores
//!   (`vs` kernels), persistent (`ps`) and XCD-swizzled persistent (`psx`) variants ([`fused`]).
//!
//! Both consume the routing produced by AITER's `moe_sorting`, reproduced as a typed function in
//! [`routing`] together with the random routing the contract prescribes (each token's experts a
//! uniformly random top-k subset, drawn with a fixed seed).
//!
//! Use: [`load_moe_kernel`] (or [`load_moe_kernels`]) → [`MoeProblem::generate`] →
//! [`stage1::prepare`] / [`fused::prepare`] → [`crate::exec::launch`] with
//! [`MoeKernelSpec::clean_checks`] → read the output → [`stage1::check`] / [`fused::check`].
//! [`shape_rows`] parses the timed configurations (`shapes_fmoe_stage1.csv`,
//! `shapes_fmoe_1stage.csv`) and [`prepare_row`] builds the launch for one of them (optionally
//! scaled down), for conformance and timing runs alike.
//!
//! **Data** follows the contract's generator: activations and weights are `randn/10` (a
//! deterministic SplitMix64 + Box–Muller stream, not PyTorch's), quantised to E4M3FNUZ with
//! `scale = amax/240` per 1×128 (activations) and per 128×128 (weights) blocks. The references
//! work from the quantised values, so the generator's rounding does not matter for conformance.

pub mod fused;
pub mod routing;
pub mod stage1;

use std::path::{Path, PathBuf};

use bytemuck::Pod;
use rayon::prelude::*;

use crate::loader::{CodeObject, Kernel};
use crate::memory::{DeviceMemory, MemError};
use crate::numerics::{F8Kind, f8_to_f32, f32_to_f8_rne};
use crate::peers::PeerError;
use crate::peers::SplitMix64;

pub use routing::{MoeSorting, Routing, moe_sorting};

/// Sub-directory of the peers directory holding the stage-1 code objects.
pub const STAGE1_DIR: &str = "fmoe_stage1";
/// Sub-directory of the peers directory holding the 1-stage code objects.
pub const ONE_STAGE_DIR: &str = "fmoe_1stage";
/// The stage-1 configurations file.
pub const STAGE1_CSV: &str = "shapes_fmoe_stage1.csv";
/// The 1-stage configurations file.
pub const ONE_STAGE_CSV: &str = "shapes_fmoe_1stage.csv";
/// Elements per scale block along the reduction and output dimensions.
pub const BLOCK: u32 = 128;
/// Work-items per workgroup of every MoE peer.
pub const BLOCK_THREADS: u32 = 256;
/// FP8 E4M3FNUZ largest finite value (the quantisation target of `amax`).
pub const FP8_MAX: f32 = 240.0;
/// Compute units of the GPU the configurations were timed on (MI300X / MI325X).
pub const TIMED_CUS: u32 = 304;

/// Why a MoE peer could not be found, loaded, prepared or checked.
#[derive(Debug, thiserror::Error)]
pub enum MoeError {
    /// What every peer family can report: a missing directory or file, a malformed CSV, an
    /// argument or operand length the contract rejects, metadata that disagrees with the
    /// contract, device memory.
    #[error(transparent)]
    Peers(#[from] PeerError),
    /// A kernel name that is not one of the thirteen MoE peers.
    #[error("`{0}` is not one of the MoE peer kernels")]
    UnknownKernel(String),
    /// A size computed from the configuration overflows.
    #[error("size of {what} overflows")]
    Overflow {
        /// The size.
        what: &'static str,
    },
}

/// Device memory errors arrive as the shared [`PeerError::Mem`].
impl From<MemError> for MoeError {
    fn from(e: MemError) -> Self {
        MoeError::Peers(PeerError::Mem(e))
    }
}

/// The two MoE launch contracts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MoeFamily {
    /// `fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_*` (368-byte kernarg).
    Stage1,
    /// `fmoe_bf16_blockscaleFp8_g1u1_*` (448-byte kernarg).
    OneStage,
}

/// How a 1-stage kernel maps workgroups to work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// Grid (⌈I/TN⌉, max_num_m_blocks, 1); one (m-block, I-slice) per workgroup.
    Grid,
    /// Persistent: grid (tg_num_perCU·CUs, 1, 1); workgroup w takes I-slice w % ps_deno and
    /// m-blocks ⌊w/ps_deno⌋ + i·(total_tgs/ps_deno).
    Persistent,
    /// Persistent, after swizzling w across the 8 XCDs: w' = (w & 7)·(total_tgs/8) + (w >> 3).
    PersistentXcd,
}

/// One MoE peer kernel: its file, symbol and tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MoeKernelSpec {
    /// Contract.
    pub family: MoeFamily,
    /// File name inside [`STAGE1_DIR`] / [`ONE_STAGE_DIR`], without `.co`.
    pub file_stem: &'static str,
    /// Unmangled kernel name (the symbol is `_ZN5aiter<len><name>E`).
    pub name: &'static str,
    /// Rows of sorted tokens per workgroup (= the sorting's block_m).
    pub tm: u32,
    /// Columns of the intermediate dimension per workgroup.
    pub tn: u32,
    /// Whether the kernel guards its output atomics with `s_setvskip` (1-stage `vs`).
    pub vskip: bool,
    /// Workgroup schedule (stage 1 is always [`Schedule::Grid`]).
    pub schedule: Schedule,
}

const fn s1(stem: &'static str, tm: u32, tn: u32) -> MoeKernelSpec {
    MoeKernelSpec { family: MoeFamily::Stage1, file_stem: stem, name: stem, tm, tn, vskip: false, schedule: Schedule::Grid }
}
const fn one(stem: &'static str, name: &'static str, tm: u32, tn: u32, vskip: bool, schedule: Schedule) -> MoeKernelSpec {
    MoeKernelSpec { family: MoeFamily::OneStage, file_stem: stem, name, tm, tn, vskip, schedule }
}

/// The five stage-1 kernels.
pub const STAGE1_KERNELS: [MoeKernelSpec; 5] = [
    s1("fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_16x128_4tg_pf2", 16, 128),
    s1("fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_16x128_4tg_pf3", 16, 128),
    s1("fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_16x256_2tg_pf3", 16, 256),
    s1("fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_32x256_2tg_pf3", 32, 256),
    s1("fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_64x256_pf3", 64, 256),
];

/// The eight 1-stage kernels (flags from the contract's table; note the two 64x256 objects whose
/// symbols differ from their file names).
pub const ONE_STAGE_KERNELS: [MoeKernelSpec; 8] = [
    one("fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x128", "fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x128", 32, 128, true, Schedule::Grid),
    one("fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x128", "fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x128", 32, 128, true, Schedule::Persistent),
    one("fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x256", "fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x256", 32, 256, true, Schedule::Grid),
    one("fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256", "fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256", 32, 256, true, Schedule::Persistent),
    one("fmoe_bf16_blockscaleFp8_g1u1_novs_silu_1tg_32x256", "fmoe_bf16_blockscaleFp8_g1u1_novs_silu_1tg_32x256", 32, 256, false, Schedule::Grid),
    one("fmoe_bf16_blockscaleFp8_g1u1_novs_silu_1tg_ps_32x256", "fmoe_bf16_blockscaleFp8_g1u1_novs_silu_1tg_ps_32x256", 32, 256, false, Schedule::Persistent),
    one("fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_64x256", "fmoe_bf16_blockscaleFp8_g1u1_vs_silu_64x256", 64, 256, true, Schedule::Grid),
    one("fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_psx_64x256", "fmoe_bf16_blockscaleFp8_g1u1_vs_ps_silu_64x256", 64, 256, true, Schedule::PersistentXcd),
];

impl MoeKernelSpec {
    /// The Itanium-mangled kernel symbol (`_ZN5aiter<len><name>E`).
    pub fn symbol(&self) -> String {
        format!("_ZN5aiter{}{}E", self.name.len(), self.name)
    }
    /// The code object's path relative to the peers directory.
    pub fn relative_path(&self) -> PathBuf {
        let dir = match self.family {
            MoeFamily::Stage1 => STAGE1_DIR,
            MoeFamily::OneStage => ONE_STAGE_DIR,
        };
        Path::new(dir).join(format!("{}.co", self.file_stem))
    }
    /// The spec whose symbol or unmangled name is `kernel`.
    pub fn by_symbol(kernel: &str) -> Result<MoeKernelSpec, MoeError> {
        STAGE1_KERNELS
            .iter()
            .chain(ONE_STAGE_KERNELS.iter())
            .find(|s| s.symbol() == kernel || s.name == kernel)
            .copied()
            .ok_or_else(|| MoeError::UnknownKernel(kernel.to_string()))
    }
    /// What D must be a multiple of. Stage 1: 128. 1-stage: the down projection walks D in
    /// chunks, 512 columns for the 32x256 kernels and 256 for the others; other D values make
    /// the padding rows' atomics escape the VSKIP/EXEC guard (writes at row T, found with
    /// D = 128, 384, 640) or give wrong sums (32x256 at D = 768). Every configuration AMD timed
    /// has D = 6144 or 7168, multiples of 512.
    pub fn model_dim_multiple(&self) -> u32 {
        match (self.family, self.tm, self.tn) {
            (MoeFamily::Stage1, ..) => BLOCK,
            (MoeFamily::OneStage, 32, 256) => 512,
            (MoeFamily::OneStage, ..) => 256,
        }
    }
    /// Whether the kernel exchanges per-row amax values through one LDS slot reused without a
    /// barrier (the 1-stage kernels with TN = 256): a racecheck finding (write-after-read). The
    /// result is right when the readers issue right after the barrier, about a hundred
    /// instructions before the writer reaches the second write — as on hardware and under the
    /// executor's round-robin issue order (one instruction per wave per turn); a schedule that
    /// ran each wave to its next barrier would quantise with the wrong scale.
    pub fn amax_slot_race(&self) -> bool {
        self.family == MoeFamily::OneStage && self.tn == 256
    }
    /// Whether the kernel feeds its output atomics from `ds_read_b32` results without an
    /// `s_waitcnt lgkmcnt` (the 1-stage 32x256 kernels; a late-arrival finding).
    pub fn unwaited_lds_reads(&self) -> bool {
        self.family == MoeFamily::OneStage && self.tm == 32 && self.tn == 256
    }
    /// Whether the kernel reads a 4-pass MFMA result with `v_fma_f32` 4-5 wait states after the
    /// MFMA issues where LLVM's gfx940 hazard rule asks for 7 (the stage-1 kernels; the same
    /// finding as the GEMM peers', see `tests/peers.rs`). The 1-stage kernels pass mfma-hazard.
    pub fn mfma_hazard_finding(&self) -> bool {
        self.family == MoeFamily::Stage1
    }
    /// The launch options under which the kernel runs clean: every check except the findings
    /// above. Conformance and timing runs use these.
    pub fn clean_checks(&self) -> crate::exec::Checks {
        crate::exec::Checks {
            mfma_hazard: !self.mfma_hazard_finding(),
            racecheck: !self.amax_slot_race(),
            late_arrival: !self.unwaited_lds_reads(),
            ..crate::exec::Checks::all()
        }
    }
    /// All thirteen, stage 1 first.
    pub fn all() -> Vec<MoeKernelSpec> {
        STAGE1_KERNELS.iter().chain(ONE_STAGE_KERNELS.iter()).copied().collect()
    }
}

/// One loaded MoE peer.
#[derive(Clone, Debug)]
pub struct MoeKernel {
    /// What it is.
    pub spec: MoeKernelSpec,
    /// The file it came from.
    pub path: PathBuf,
    /// The parsed code object.
    pub code_object: CodeObject,
    entry: Kernel,
}

impl MoeKernel {
    /// The kernel inside [`MoeKernel::code_object`].
    pub fn kernel(&self) -> &Kernel {
        &self.entry
    }
}

/// Loads one MoE peer from the peers directory `dir`.
pub fn load_moe_kernel(dir: &Path, spec: MoeKernelSpec) -> Result<MoeKernel, MoeError> {
    let (path, code_object, entry) = crate::peers::load_code_object(dir, Path::new(&spec.relative_path()), &spec.symbol())?;
    Ok(MoeKernel { spec, path, code_object, entry })
}

/// Loads all thirteen MoE peers (stage 1 first); any missing file is an error.
pub fn load_moe_kernels(dir: &Path) -> Result<Vec<MoeKernel>, MoeError> {
    MoeKernelSpec::all().into_iter().map(|s| load_moe_kernel(dir, s)).collect()
}

/// Problem dimensions of one MoE configuration (the CSVs' columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MoeConfig {
    /// Tokens T.
    pub tokens: u32,
    /// Model dimension D (K of gate/up, N of down).
    pub model_dim: u32,
    /// Intermediate dimension I (gate and up each have I rows per expert).
    pub inter_dim: u32,
    /// Experts E.
    pub experts: u32,
    /// Experts per token.
    pub topk: u32,
    /// Rows per sorted block (= the kernel's TM).
    pub block_m: u32,
}

impl MoeConfig {
    /// Checks the dimensions against `spec`'s contract: D a positive multiple of
    /// [`MoeKernelSpec::model_dim_multiple`], I of TN, 1 ≤ topk ≤ E, block_m = TM, T ≥ 1, T and E small enough for the 24-bit token field
    /// of the sorted ids and the 8-bit slot field.
    pub fn validate(&self, spec: &MoeKernelSpec) -> Result<(), MoeError> {
        let shape = |arg: &'static str, value: u32, expected: String| {
            MoeError::from(PeerError::Shape { kernel: spec.name.to_string(), arg, value: value.into(), expected })
        };
        if self.tokens == 0 || self.tokens >= 1 << 24 {
            return Err(shape("tokens", self.tokens, "1 ..= 2^24 − 1 (24-bit token field)".into()));
        }
        let dm = spec.model_dim_multiple();
        if self.model_dim == 0 || !self.model_dim.is_multiple_of(dm) {
            return Err(shape("model_dim", self.model_dim, format!("a positive multiple of {dm}")));
        }
        if self.inter_dim == 0 || !self.inter_dim.is_multiple_of(spec.tn) {
            return Err(shape("inter_dim", self.inter_dim, format!("a positive multiple of the kernel's TN = {}", spec.tn)));
        }
        if self.experts == 0 || self.experts > 65536 {
            return Err(shape("experts", self.experts, "1 ..= 65536".into()));
        }
        if self.topk == 0 || self.topk > self.experts || self.topk > 255 {
            return Err(shape("topk", self.topk, format!("1 ..= min(experts = {}, 255)", self.experts)));
        }
        if self.block_m != spec.tm {
            return Err(shape("block_m", self.block_m, format!("the kernel's TM = {}", spec.tm)));
        }
        // Every byte count the launch computes must fit u32 kernarg fields and host memory.
        let d = u64::from(self.model_dim);
        let i = u64::from(self.inter_dim);
        let checks = [
            u64::from(self.tokens).checked_mul(d),
            u64::from(self.experts).checked_mul(2 * i).and_then(|x| x.checked_mul(d)),
            u64::from(self.tokens).checked_mul(u64::from(self.topk)).and_then(|x| x.checked_mul(i)),
        ];
        for c in checks {
            match c {
                Some(v) if v < 1 << 40 => {}
                _ => return Err(MoeError::Overflow { what: "operand bytes" }),
            }
        }
        if 2 * d * i > u64::from(u32::MAX) {
            return Err(MoeError::Overflow { what: "per-expert weight bytes (kernarg eGUs)" });
        }
        Ok(())
    }

    /// The configuration with tokens, model_dim, inter_dim and experts divided by `div` (rounded
    /// up to `spec`'s multiples: D of [`MoeKernelSpec::model_dim_multiple`], I of TN, tokens and
    /// experts ≥ 1, experts ≥ topk): a cheaper problem of the same shape class.
    pub fn scaled(&self, div: u32, spec: &MoeKernelSpec) -> MoeConfig {
        let div = div.max(1);
        let round = |x: u32, m: u32| x.div_ceil(div).div_ceil(m).max(1) * m;
        MoeConfig {
            tokens: self.tokens.div_ceil(div).max(1),
            model_dim: round(self.model_dim, spec.model_dim_multiple()),
            inter_dim: round(self.inter_dim, spec.tn.max(BLOCK)),
            experts: self.experts.div_ceil(div).max(self.topk),
            ..*self
        }
    }
}

/// Family-specific columns of a configurations row.
#[derive(Clone, Debug, PartialEq)]
pub enum RowExtra {
    /// `shapes_fmoe_stage1.csv`: split-K (0 in every row) and activation.
    Stage1 {
        /// `ksplit`.
        ksplit: u32,
        /// `act` (e.g. `Silu`).
        act: String,
    },
    /// `shapes_fmoe_1stage.csv`: bytes of the output zero-fill included in AMD's time.
    OneStage {
        /// `memset_bytes_in_us` (= 2·T·D).
        memset_bytes: u64,
    },
}

/// One row of a configurations CSV.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeRow {
    /// The kernel (resolved from the CSV's symbol).
    pub spec: MoeKernelSpec,
    /// The CSV's `M` (= tokens · topk).
    pub m: u32,
    /// The CSV's `N`.
    pub n: u32,
    /// The CSV's `K`.
    pub k: u32,
    /// The problem.
    pub config: MoeConfig,
    /// Family-specific columns.
    pub extra: RowExtra,
}

/// Parses the configurations of `family` from the peers directory `dir`. The header is read by
/// column name (order free, unknown columns ignored); every row must name a known kernel of that
/// family, have block_m = its TM, and M = tokens·topk.
pub fn shape_rows(dir: &Path, family: MoeFamily) -> Result<Vec<ShapeRow>, MoeError> {
    let file = match family {
        MoeFamily::Stage1 => STAGE1_CSV,
        MoeFamily::OneStage => ONE_STAGE_CSV,
    };
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(|source| PeerError::Io { path: path.clone(), source })?;
    parse_shape_rows(&text, family, &path)
}

/// [`shape_rows`] on text already read (`path` names it in errors).
pub fn parse_shape_rows(text: &str, family: MoeFamily, path: &Path) -> Result<Vec<ShapeRow>, MoeError> {
    let err = |line: usize, msg: String| MoeError::from(PeerError::Csv { path: path.to_path_buf(), line, msg });
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or_else(|| err(1, "empty file".into()))?;
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let col = |name: &str| cols.iter().position(|c| *c == name).ok_or_else(|| err(1, format!("no column `{name}` in header `{header}`")));
    let common = ["kernel", "M", "N", "K", "token", "model_dim", "inter_dim", "expert", "topk", "block_m"];
    let idx: Vec<usize> = common.iter().map(|c| col(c)).collect::<Result<_, _>>()?;
    let extra_idx: Vec<usize> = match family {
        MoeFamily::Stage1 => vec![col("ksplit")?, col("act")?],
        MoeFamily::OneStage => vec![col("memset_bytes_in_us")?],
    };
    let mut rows = Vec::new();
    for (i, line) in lines {
        let ln = i + 1;
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != cols.len() {
            return Err(err(ln, format!("{} fields, header has {}", f.len(), cols.len())));
        }
        let int = |j: usize| f[idx[j]].parse::<u32>().map_err(|e| err(ln, format!("{} `{}`: {e}", common[j], f[idx[j]])));
        let spec = MoeKernelSpec::by_symbol(f[idx[0]]).map_err(|e| err(ln, e.to_string()))?;
        if spec.family != family {
            return Err(err(ln, format!("kernel `{}` belongs to the other MoE family", f[idx[0]])));
        }
        let config = MoeConfig { tokens: int(4)?, model_dim: int(5)?, inter_dim: int(6)?, experts: int(7)?, topk: int(8)?, block_m: int(9)? };
        let (m, n, k) = (int(1)?, int(2)?, int(3)?);
        if config.block_m != spec.tm {
            return Err(err(ln, format!("block_m {} differs from the kernel's TM {}", config.block_m, spec.tm)));
        }
        if u64::from(m) != u64::from(config.tokens) * u64::from(config.topk) {
            return Err(err(ln, format!("M = {m}, expected token·topk = {}", u64::from(config.tokens) * u64::from(config.topk))));
        }
        let extra = match family {
            MoeFamily::Stage1 => RowExtra::Stage1 {
                ksplit: f[extra_idx[0]].parse().map_err(|e| err(ln, format!("ksplit `{}`: {e}", f[extra_idx[0]])))?,
                act: f[extra_idx[1]].to_string(),
            },
            MoeFamily::OneStage => {
                RowExtra::OneStage { memset_bytes: f[extra_idx[0]].parse().map_err(|e| err(ln, format!("memset_bytes_in_us `{}`: {e}", f[extra_idx[0]])))? }
            }
        };
        rows.push(ShapeRow { spec, m, n, k, config, extra });
    }
    Ok(rows)
}

/// A MoE problem: quantised operands in logical layouts and the routing (the launch builders
/// apply the shuffles and scale layouts).
#[derive(Clone, Debug)]
pub struct MoeProblem {
    /// Dimensions.
    pub config: MoeConfig,
    /// Activations `[T][D]` E4M3FNUZ.
    pub x: Vec<u8>,
    /// Activation scales `[T][D/128]` (logical; the kernels take the transpose).
    pub x_scale: Vec<f32>,
    /// Gate/up weights `[E][2I][D]` E4M3FNUZ, logical row-major (gate rows 0..I, up rows I..2I).
    pub w1: Vec<u8>,
    /// Gate/up scales `[E][2I/128][D/128]`.
    pub w1_scale: Vec<f32>,
    /// Down weights `[E][D][I]` E4M3FNUZ (empty for stage-1 problems).
    pub w2: Vec<u8>,
    /// Down scales `[E][D/128][I/128]` (empty for stage-1 problems).
    pub w2_scale: Vec<f32>,
    /// Routing (expert ids and weights per token and slot).
    pub routing: Routing,
}

/// Deterministic standard normal samples (SplitMix64 + Box–Muller).
pub(crate) struct Normal(SplitMix64);

impl Normal {
    pub(crate) fn new(seed: u64) -> Self {
        Normal(SplitMix64::new(seed))
    }
    fn uniform(&mut self) -> f64 {
        // (0, 1]: 53 random bits, never 0 (ln is finite).
        ((self.0.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
    /// Two independent N(0, 1) samples.
    pub(crate) fn pair(&mut self) -> (f64, f64) {
        let (u, v) = (self.uniform(), self.uniform());
        let r = (-2.0 * u.ln()).sqrt();
        let t = std::f64::consts::TAU * v;
        (r * t.cos(), r * t.sin())
    }
}

/// Quantises `rows × cols` samples of N(0, 1)/10 (streamed from `seed`) to E4M3FNUZ with one
/// scale `amax/240` per `br × 128` block (`br` = 1 or 128): returns (bytes row-major, scales
/// `[rows/br][cols/128]`). Parallel over row blocks, deterministic.
fn randn_quantised(rows: usize, cols: usize, br: usize, seed: u64) -> (Vec<u8>, Vec<f32>) {
    let cb = cols / BLOCK as usize;
    let nrb = rows / br;
    let mut q = vec![0u8; rows * cols];
    let mut s = vec![0f32; nrb * cb];
    q.par_chunks_mut(br * cols).zip(s.par_chunks_mut(cb)).enumerate().for_each(|(rb, (qb, sb))| {
        let mut g = Normal::new(seed ^ (rb as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x5851_F42D_4C95_7F2D));
        let mut vals = vec![0f32; br * cols];
        for pair in vals.chunks_mut(2) {
            let (a, b) = g.pair();
            pair[0] = (a / 10.0) as f32;
            if let Some(y) = pair.get_mut(1) {
                *y = (b / 10.0) as f32;
            }
        }
        for (c, scale) in sb.iter_mut().enumerate() {
            let mut amax = 0f32;
            for r in 0..br {
                for &v in &vals[r * cols + c * 128..r * cols + c * 128 + 128] {
                    amax = amax.max(v.abs());
                }
            }
            let amax = amax.max(1e-10);
            *scale = amax / FP8_MAX;
            for r in 0..br {
                for j in c * 128..c * 128 + 128 {
                    qb[r * cols + j] = f32_to_f8_rne(vals[r * cols + j] / *scale, F8Kind::Fp8Fnuz, true);
                }
            }
        }
    });
    (q, s)
}

impl MoeProblem {
    /// Deterministic operands for `config` as the contract's generator draws them (see the
    /// module docs), with routing from [`Routing::random`]; `with_down` adds the down-projection
    /// weights the 1-stage kernels need. Dimensions are validated by the launch builders.
    pub fn generate(config: MoeConfig, with_down: bool, seed: u64) -> MoeProblem {
        let (t, d, i, e) = (config.tokens as usize, config.model_dim as usize, config.inter_dim as usize, config.experts as usize);
        let (x, x_scale) = randn_quantised(t, d, 1, seed.wrapping_mul(7).wrapping_add(1));
        let (w1, w1_scale) = randn_quantised(e * 2 * i, d, BLOCK as usize, seed.wrapping_mul(7).wrapping_add(2));
        let (w2, w2_scale) = if with_down { randn_quantised(e * d, i, BLOCK as usize, seed.wrapping_mul(7).wrapping_add(3)) } else { (Vec::new(), Vec::new()) };
        let routing = Routing::random(config.tokens, config.experts, config.topk, seed.wrapping_mul(7).wrapping_add(4));
        MoeProblem { config, x, x_scale, w1, w1_scale, w2, w2_scale, routing }
    }

    /// The problem [`MoeProblem::generate`] draws with `seed`, same routing, but with every
    /// operand value zero and every scale one: for timing runs, where only the routing (which
    /// sets the sorted rows, the grid and every address) matters. The values feed only
    /// arithmetic, never control flow or addresses (`tests/peers_timing.rs` checks that the
    /// modelled timing equals [`MoeProblem::generate`]'s), and skipping the normal draws of
    /// every expert's weights makes a large configuration's set-up seconds instead of minutes.
    pub fn timing_operands(config: MoeConfig, with_down: bool, seed: u64) -> MoeProblem {
        let (t, d, i, e) = (config.tokens as usize, config.model_dim as usize, config.inter_dim as usize, config.experts as usize);
        let (db, ib) = (d / BLOCK as usize, i / BLOCK as usize);
        let routing = Routing::random(config.tokens, config.experts, config.topk, seed.wrapping_mul(7).wrapping_add(4));
        let (w2, w2_scale) = if with_down { (vec![0u8; e * d * i], vec![1.0; e * db * ib]) } else { (Vec::new(), Vec::new()) };
        MoeProblem {
            config,
            x: vec![0; t * d],
            x_scale: vec![1.0; t * db],
            w1: vec![0; e * 2 * i * d],
            w1_scale: vec![1.0; e * 2 * ib * db],
            w2,
            w2_scale,
            routing,
        }
    }

    pub(crate) fn validate(&self, spec: &MoeKernelSpec) -> Result<(), MoeError> {
        self.config.validate(spec)?;
        let c = &self.config;
        let (t, d, i, e, k) = (c.tokens as usize, c.model_dim as usize, c.inter_dim as usize, c.experts as usize, c.topk as usize);
        let (db, ib) = (d / 128, i / 128);
        let mut lens = vec![
            ("x", self.x.len(), t * d),
            ("x_scale", self.x_scale.len(), t * db),
            ("w1", self.w1.len(), e * 2 * i * d),
            ("w1_scale", self.w1_scale.len(), e * 2 * ib * db),
            ("routing.experts", self.routing.experts.len(), t * k),
            ("routing.weights", self.routing.weights.len(), t * k),
        ];
        if spec.family == MoeFamily::OneStage {
            lens.push(("w2", self.w2.len(), e * d * i));
            lens.push(("w2_scale", self.w2_scale.len(), e * db * ib));
        }
        for (arg, got, expected) in lens {
            if got != expected {
                return Err(MoeError::from(PeerError::Length { arg, got, expected }));
            }
        }
        if self.routing.tokens != c.tokens || self.routing.topk != c.topk {
            return Err(MoeError::from(PeerError::Shape {
                kernel: spec.name.into(),
                arg: "routing",
                value: self.routing.tokens.into(),
                expected: format!("{} tokens × topk {}", c.tokens, c.topk),
            }));
        }
        if let Some(&bad) = self.routing.experts.iter().find(|&&x| x >= c.experts) {
            return Err(MoeError::from(PeerError::Shape {
                kernel: spec.name.into(),
                arg: "routing expert id",
                value: bad.into(),
                expected: format!("< experts = {}", c.experts),
            }));
        }
        Ok(())
    }
}

/// A device pointer in a 16-byte kernarg slot (the MoE kernargs' packing).
pub type PtrSlot = crate::peers::PtrSlot;
/// A u32 in a 16-byte kernarg slot.
pub type U32Slot = crate::peers::U32Slot;

pub(crate) fn ptr(p: u64) -> PtrSlot {
    PtrSlot { ptr: p, pad: 0 }
}
pub(crate) fn u32s(v: u32) -> U32Slot {
    U32Slot { value: v, pad: [0; 3] }
}

/// Size of the operand allocations.
///
/// With short reductions (D ≤ 256, two 128-K blocks) every MoE peer prefetches past the end of
/// an operand: the activation-scale buffer (XQ) has num_records = T·4 from a base that advances
/// T·4 bytes per 128-K block, and the weight buffers are unbounded (num_records 0xfffffff0), so
/// the loads of the blocks after the last one pass the buffer range check and read past the end
/// (the values are never used). From D = 384 (stage 1) / 512 (1-stage) on, the kernels stop
/// advancing their pointers at the end of the loop (`s_cselect_b32 …, 0`) and stay inside: every
/// configuration AMD timed (D ≥ 6144) runs with [`MoePadding::Exact`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoePadding {
    /// Exactly the operands' sizes (memcheck reports the short-D prefetch reads).
    Exact,
    /// [`PREFETCH_TAIL_BLOCKS`] zeroed 128-K blocks' worth of bytes after X, XQ, the weights and
    /// their scales, so the prefetches stay inside (conformance and timing runs).
    PrefetchTail,
}

impl MoePadding {
    /// [`MoePadding::Exact`] for D ≥ 512 (the kernels stay in bounds), else
    /// [`MoePadding::PrefetchTail`].
    pub fn for_model_dim(model_dim: u32) -> MoePadding {
        if model_dim >= 512 { MoePadding::Exact } else { MoePadding::PrefetchTail }
    }
}

/// K blocks of zeros [`MoePadding::PrefetchTail`] appends to the operands the kernels prefetch.
pub const PREFETCH_TAIL_BLOCKS: usize = 4;

/// Uploads operands; frees everything already allocated when a later step fails.
pub(crate) struct Uploader<'m> {
    pub mem: &'m DeviceMemory,
    pub allocations: Vec<u64>,
    pub padding: MoePadding,
}

impl<'m> Uploader<'m> {
    pub fn new(mem: &'m DeviceMemory, padding: MoePadding) -> Self {
        Uploader { mem, allocations: Vec::new(), padding }
    }
    /// [`Uploader::upload`] plus `tail_per_block · PREFETCH_TAIL_BLOCKS` zero bytes with
    /// [`MoePadding::PrefetchTail`].
    pub fn upload_tail(&mut self, bytes: &[u8], size: usize, tail_per_block: usize) -> Result<u64, MoeError> {
        let tail = match self.padding {
            MoePadding::Exact => 0,
            MoePadding::PrefetchTail => tail_per_block.checked_mul(PREFETCH_TAIL_BLOCKS).ok_or(MoeError::Overflow { what: "prefetch tail" })?,
        };
        self.upload(bytes, size.checked_add(tail).ok_or(MoeError::Overflow { what: "prefetch tail" })?)
    }
    /// Allocates `max(size, bytes.len())` bytes (at least 4) holding `bytes` then zeros.
    pub fn upload(&mut self, bytes: &[u8], size: usize) -> Result<u64, MoeError> {
        let p = self.mem.alloc(size.max(bytes.len()).max(4) as u64)?;
        self.allocations.push(p);
        self.mem.write(p, bytes)?;
        Ok(p)
    }
    /// Frees everything (after an error).
    pub fn abandon(self) {
        for p in self.allocations {
            // Best effort: the first error is the one reported.
            let _ = self.mem.free(p);
        }
    }
}

/// `v` as little-endian bytes.
pub(crate) fn bytes_of<T: Pod>(v: &[T]) -> &[u8] {
    bytemuck::cast_slice(v)
}

/// Pre-shuffles each expert's `[n][k]` FP8 matrix of `w` (`experts × n × k` bytes) with the
/// peers' `(16,16)` layout ([`crate::peers::preshuffle_b`]).
pub(crate) fn shuffle_experts(w: &[u8], experts: usize, n: usize, k: usize) -> Result<Vec<u8>, MoeError> {
    let per = n * k;
    let mut out = vec![0u8; w.len()];
    out.par_chunks_mut(per.max(1)).zip(w.par_chunks(per.max(1))).try_for_each(|(o, src)| -> Result<(), MoeError> {
        o.copy_from_slice(&crate::peers::preshuffle_b(src, n, k)?);
        Ok(())
    })?;
    debug_assert_eq!(out.len(), experts * per);
    Ok(out)
}

/// Outcome of comparing a kernel's output with its reference (the `check` functions of
/// [`stage1`] and [`fused`]).
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    /// Output elements compared.
    pub elements: usize,
    /// Elements equal to the reference value (bit-exact; see each `check` for what that is).
    pub exact: usize,
    /// Elements outside their stated bound.
    pub violations: usize,
    /// The first few violations, described.
    pub first: Vec<String>,
    /// DeepGEMM's `calc_diff` of the (dequantised) output against the reference values.
    pub calc_diff: f64,
}

impl CheckReport {
    /// One report from per-part reports and their `calc_diff` sums (Σ x·y, Σ x² + y²), which
    /// give the whole output's `calc_diff = 1 − 2·Σxy / Σ(x² + y²)`.
    pub(crate) fn merge(parts: Vec<(CheckReport, f64, f64)>) -> CheckReport {
        let mut rep = CheckReport::default();
        let (mut xy, mut sq) = (0f64, 0f64);
        for (r, a, b) in parts {
            rep.elements += r.elements;
            rep.exact += r.exact;
            rep.violations += r.violations;
            for f in r.first {
                if rep.first.len() < 8 {
                    rep.first.push(f);
                }
            }
            xy += a;
            sq += b;
        }
        rep.calc_diff = if sq == 0.0 { 0.0 } else { 1.0 - 2.0 * xy / sq };
        rep
    }

    pub(crate) fn violation(&mut self, msg: impl FnOnce() -> String) {
        self.violations += 1;
        if self.first.len() < 8 {
            self.first.push(msg());
        }
    }
}

/// The grid, block, LDS and kernarg of a prepared MoE launch, plus its buffers.
#[derive(Clone, Debug)]
pub struct MoeLaunch {
    /// For [`crate::exec::launch`].
    pub config: crate::exec::LaunchConfig,
    /// The sorting the launch uses.
    pub sorting: MoeSorting,
    /// Device address of the output buffer (stage 1: FP8 + scales; 1-stage: bf16 `[T][D]`).
    pub out: u64,
    /// Bytes of the output buffer.
    pub out_bytes: u64,
    /// Bytes the caller must zero before the launch and that AMD's time includes (1-stage: 2·T·D,
    /// already zeroed by `prepare`; stage 1: 0).
    pub memset_bytes: u64,
    /// Every allocation made, for [`MoeLaunch::free`].
    pub allocations: Vec<u64>,
}

impl MoeLaunch {
    /// Frees every allocation the launch builder made.
    pub fn free(&self, mem: &DeviceMemory) -> Result<(), MoeError> {
        for &p in &self.allocations {
            mem.free(p)?;
        }
        Ok(())
    }
}

pub(crate) fn launch_config(kernel: &MoeKernel, kernarg: Vec<u8>, grid: [u32; 3]) -> Result<crate::exec::LaunchConfig, MoeError> {
    let k = kernel.kernel();
    if k.meta.kernarg_segment_size as usize != kernarg.len() {
        return Err(MoeError::from(PeerError::Contract {
            kernel: kernel.spec.name.into(),
            what: format!("metadata kernarg_segment_size is {}, the contract's argument block is {} bytes", k.meta.kernarg_segment_size, kernarg.len()),
        }));
    }
    if grid.contains(&0) {
        return Err(MoeError::from(PeerError::Shape { kernel: kernel.spec.name.into(), arg: "grid", value: 0, expected: "every dimension ≥ 1".into() }));
    }
    // The kernels use exactly their static LDS (group_segment_fixed_size); no dynamic LDS.
    Ok(crate::exec::LaunchConfig { grid, block: [BLOCK_THREADS, 1, 1], dynamic_lds_bytes: 0, kernarg })
}

/// Generates the problem of `row` (its configuration divided by `scale_div`, see
/// [`MoeConfig::scaled`]; 1 = as timed) with `seed`, and prepares its launch in `mem`: what a
/// conformance or timing run of one configurations row needs. `cus` is the CU count the
/// persistent 1-stage kernels size their grid for ([`TIMED_CUS`] as AMD timed them).
/// Operands are allocated exactly ([`MoePadding::Exact`]) when D ≥ 512, with
/// [`MoePadding::PrefetchTail`] below (a heavily scaled row).
pub fn prepare_row(mem: &DeviceMemory, kernel: &MoeKernel, row: &ShapeRow, scale_div: u32, seed: u64, cus: u32) -> Result<(MoeProblem, MoeLaunch), MoeError> {
    prepare_row_with(mem, kernel, row, scale_div, seed, cus, MoeProblem::generate)
}

/// [`prepare_row`] with the operands of [`MoeProblem::timing_operands`] (same routing, zero
/// values): the launch a timing run needs, set up without drawing every expert's weights.
pub fn prepare_row_for_timing(
    mem: &DeviceMemory,
    kernel: &MoeKernel,
    row: &ShapeRow,
    scale_div: u32,
    seed: u64,
    cus: u32,
) -> Result<(MoeProblem, MoeLaunch), MoeError> {
    prepare_row_with(mem, kernel, row, scale_div, seed, cus, MoeProblem::timing_operands)
}

fn prepare_row_with(
    mem: &DeviceMemory,
    kernel: &MoeKernel,
    row: &ShapeRow,
    scale_div: u32,
    seed: u64,
    cus: u32,
    make: fn(MoeConfig, bool, u64) -> MoeProblem,
) -> Result<(MoeProblem, MoeLaunch), MoeError> {
    if kernel.spec != row.spec {
        return Err(MoeError::from(PeerError::Contract { kernel: kernel.spec.name.into(), what: format!("row is for `{}`", row.spec.name) }));
    }
    let config = row.config.scaled(scale_div, &kernel.spec);
    config.validate(&kernel.spec)?;
    let problem = make(config, kernel.spec.family == MoeFamily::OneStage, seed);
    let padding = MoePadding::for_model_dim(config.model_dim);
    let launch = match kernel.spec.family {
        MoeFamily::Stage1 => stage1::prepare(mem, kernel, &problem, padding)?,
        MoeFamily::OneStage => fused::prepare(mem, kernel, &problem, cus, padding)?,
    };
    Ok((problem, launch))
}

/// `|x| ≤ bound`, false for NaN (a NaN output is a violation).
#[inline]
pub(crate) fn within(x: f64, bound: f64) -> bool {
    matches!(x.abs().partial_cmp(&bound), Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal))
}

/// FP8 value of `x` rounded to nearest even (saturating; for reference intervals).
#[inline]
pub(crate) fn fp8_round(x: f64) -> f64 {
    f64::from(f8_to_f32(f32_to_f8_rne(x as f32, F8Kind::Fp8Fnuz, true), F8Kind::Fp8Fnuz))
}

/// The f32 `amax` floor both families apply (`0x358637bd` ≈ 1e-6).
pub const AMAX_FLOOR_BITS: u32 = 0x3586_37bd;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_and_files() {
        assert_eq!(STAGE1_KERNELS[0].symbol(), "_ZN5aiter59fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_16x128_4tg_pf2E");
        assert_eq!(STAGE1_KERNELS[4].symbol(), "_ZN5aiter55fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_64x256_pf3E");
        assert_eq!(ONE_STAGE_KERNELS[7].symbol(), "_ZN5aiter46fmoe_bf16_blockscaleFp8_g1u1_vs_ps_silu_64x256E");
        assert_eq!(ONE_STAGE_KERNELS[6].symbol(), "_ZN5aiter43fmoe_bf16_blockscaleFp8_g1u1_vs_silu_64x256E");
        assert_eq!(ONE_STAGE_KERNELS[0].relative_path(), Path::new("fmoe_1stage/fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x128.co"));
        assert!(matches!(MoeKernelSpec::by_symbol("nope"), Err(MoeError::UnknownKernel(_))));
    }

    #[test]
    fn csv_parser_is_typed_and_strict() {
        let p = Path::new("x.csv");
        let ok = "kernel,M,N,K,token,model_dim,inter_dim,expert,topk,block_m,memset_bytes_in_us\n\
                  _ZN5aiter47fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_32x128E,9,256,6144,1,6144,256,257,9,32,12288\n";
        let rows = parse_shape_rows(ok, MoeFamily::OneStage, p).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].config, MoeConfig { tokens: 1, model_dim: 6144, inter_dim: 256, experts: 257, topk: 9, block_m: 32 });
        assert_eq!(rows[0].extra, RowExtra::OneStage { memset_bytes: 12288 });
        let bad_m = ok.replace(",9,256,", ",10,256,");
        assert!(matches!(parse_shape_rows(&bad_m, MoeFamily::OneStage, p), Err(MoeError::Peers(PeerError::Csv { line: 2, .. }))));
        let bad_bm = ok.replace(",9,32,", ",9,64,");
        assert!(matches!(parse_shape_rows(&bad_bm, MoeFamily::OneStage, p), Err(MoeError::Peers(PeerError::Csv { line: 2, .. }))));
        assert!(matches!(parse_shape_rows(ok, MoeFamily::Stage1, p), Err(MoeError::Peers(PeerError::Csv { line: 1, .. }))));
    }

    #[test]
    fn scaled_configs_stay_valid() {
        let c = MoeConfig { tokens: 16384, model_dim: 7168, inter_dim: 2048, experts: 33, topk: 9, block_m: 64 };
        let s = c.scaled(64, &STAGE1_KERNELS[4]);
        assert_eq!(s, MoeConfig { tokens: 256, model_dim: 128, inter_dim: 256, experts: 9, topk: 9, block_m: 64 });
        s.validate(&STAGE1_KERNELS[4]).unwrap();
        assert_eq!(c.scaled(1, &STAGE1_KERNELS[4]), c);
        let one = MoeConfig { block_m: 32, ..c };
        assert_eq!(one.scaled(8, &ONE_STAGE_KERNELS[2]).model_dim, 1024);
        assert!(matches!(MoeConfig { model_dim: 768, ..one }.validate(&ONE_STAGE_KERNELS[2]), Err(MoeError::Peers(PeerError::Shape { arg: "model_dim", .. }))));
    }

    #[test]
    fn quantised_data_is_in_range() {
        let (q, s) = randn_quantised(128, 256, 128, 5);
        assert_eq!(s.len(), 2);
        assert!(q.iter().all(|&b| b != 0x80));
        // Each block reaches ±240 (its amax) exactly once at least.
        for c in 0..2 {
            let m = (0..128)
                .flat_map(|r| (0..128).map(move |j| (r, c * 128 + j)))
                .map(|(r, j)| f8_to_f32(q[r * 256 + j], F8Kind::Fp8Fnuz).abs())
                .fold(0f32, f32::max);
            assert_eq!(m, 240.0);
        }
    }
}
