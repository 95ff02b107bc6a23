//! The kernel registry: every GEMM kernel of the code objects, described once.
//!
//! A row ([`KernelEntry`]) says what a kernel computes and how: the [`Problem`] it solves, the
//! weight [`WeightLayout`] it reads, its [`ScheduleKind`] (one tile per workgroup, split-K or
//! stream-K), its tile, LDS stages and dynamic LDS bytes, and its typed launch handle
//! ([`Spec`], the device crate's `KernelSpec` with the kernel's argument struct). Everything
//! else is derived: the selector ([`crate::select`]) enumerates the rows of a problem, the
//! tuner times them, and a [`crate::select::Plan`] carries its row, so a launch never looks a
//! kernel up by name. Resources (registers, hence workgroups per CU) come from the code object
//! ([`KernelEntry::slots_per_cu`]), never from a typed constant.
//!
//! Adding a tile is one row here (plus its `#[amdgpu_kernel]` function, and regenerated cost
//! data, `fp8gemm tune --cost`); the selector picks it up without further code.

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use fp8gemm_device::KernelSpec;
use fp8gemm_device::args::{
    DenseGemmArgs, DenseSplitKArgs, KGroupedArgs, MGroupedContiguousArgs, MGroupedContiguousScatterArgs, MGroupedContiguousSiluArgs,
    MGroupedContiguousSplitKArgs, MGroupedMaskedArgs, MGroupedMaskedSplitKArgs,
};
use fp8gemm_device::dense::{
    FP8_GEMM_NT_BM64_BN64, FP8_GEMM_NT_BM64_BN128, FP8_GEMM_NT_BM128_BN128, FP8_GEMM_NT_SPLITK_BM64_BN64, FP8_GEMM_NT_SPLITK_BM64_BN128,
    FP8_GEMM_NT_SPLITK_BM128_BN128,
};
pub use fp8gemm_device::dense_layouts::Major;
use fp8gemm_device::dense_layouts::{FP8_GEMM_NN_BM64_BN128, FP8_GEMM_TN_BM64_BN128, FP8_GEMM_TT_BM64_BN128};
use fp8gemm_device::grouped::{
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN64, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM128_BN128,
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM64_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM128_BN128,
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_BS_BM64_BN128,
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_BS_PIPE_BM64_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SCATTER_BS_BM32_BN128,
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SCATTER_BS_BM64_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SCATTER_BS_PIPE_BM64_BN128,
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SILU_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SILU_BS_BM64_BN128,
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SILU_BS_PIPE_BM64_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SILU_BS_QA_BM32_BN128,
    M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN64, M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BM128_BN128,
    M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM128_BN128,
    M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM64_BN128,
};
use fp8gemm_device::grouped_pipe::{
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_PIPE_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM32_BN64, M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM64_BN128,
    M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM80_BN128,
};
use fp8gemm_device::kgrouped::{K_GROUPED_FP8_GEMM_TN_CONTIGUOUS_BM64_BN64, K_GROUPED_FP8_GEMM_TN_CONTIGUOUS_BM128_BN128};
use fp8gemm_device::mainloop_bs::{
    FP8_GEMM_NT_BS_BM32_BN128, FP8_GEMM_NT_BS_BM64_BN128, FP8_GEMM_NT_BS_BM128_BN128, FP8_GEMM_NT_BS_PIPE_B1_BM32_BN64, FP8_GEMM_NT_BS_PIPE_BM32_BN64,
    FP8_GEMM_NT_BS_PIPE_BM48_BN128, FP8_GEMM_NT_BS_PIPE_BM64_BN128, FP8_GEMM_NT_BS_PIPE_BM80_BN128, FP8_GEMM_NT_BS_PIPE_BM96_BN128,
    FP8_GEMM_NT_BS_PIPE_BM112_BN128, FP8_GEMM_NT_BS_PIPE_RG2_BM96_BN128, FP8_GEMM_NT_BS_PIPE_RG2_BM128_BN128, FP8_GEMM_NT_SPLITK_BS_BM32_BN64,
    FP8_GEMM_NT_SPLITK_BS_BM32_BN128, FP8_GEMM_NT_SPLITK_BS_BM64_BN128, FP8_GEMM_NT_SPLITK_BS_BM128_BN128,
};
use fp8gemm_device::mainloop_bs128::FP8_GEMM_NT_BS_PIPE_BM128_BN128;
use fp8gemm_device::streamk::{
    DenseStreamKArgs, FP8_GEMM_NT_STREAMK_BM64_BN64, FP8_GEMM_NT_STREAMK_BM64_BN128, FP8_GEMM_NT_STREAMK_BM128_BN128, FP8_GEMM_NT_STREAMK_BS_BM32_BN128,
    FP8_GEMM_NT_STREAMK_BS_BM64_BN128, FP8_GEMM_NT_STREAMK_BS_PIPE_BM48_BN128, FP8_GEMM_NT_STREAMK_BS_PIPE_BM64_BN128,
};
use fp8gemm_device::tile;

use crate::codeobj::{self, Arch};
use crate::layout::WeightLayout;

/// What a kernel computes (DeepGEMM's entry points).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Problem {
    /// `fp8_gemm_nt`: one `m × n × k` GEMM.
    Dense,
    /// `m_grouped_fp8_gemm_nt_contiguous`: experts' rows stacked.
    MGroupedContiguous,
    /// `m_grouped_fp8_gemm_nt_masked`: `G × m_max` rows, valid counts on the device.
    MGroupedMasked,
    /// `k_grouped_fp8_gemm_tn_contiguous`: groups stacked along K (weight gradients).
    KGrouped,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Problem::Dense => "dense",
            Problem::MGroupedContiguous => "m-grouped contiguous",
            Problem::MGroupedMasked => "m-grouped masked",
            Problem::KGrouped => "k-grouped",
        })
    }
}

/// How a kernel's workgroups share the work of the output tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScheduleKind {
    /// One workgroup per output tile, the whole K.
    DataParallel,
    /// `splits` workgroups per tile, each a contiguous K range; the last to arrive reduces
    /// ([`fp8gemm_device::dense`], "Split-K").
    SplitK,
    /// A data-parallel head of whole tiles, then a fixed number of workgroups over the K
    /// iterations of the rest ([`fp8gemm_device::streamk`]).
    StreamK,
}

impl fmt::Display for ScheduleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScheduleKind::DataParallel => "data-parallel",
            ScheduleKind::SplitK => "split-K",
            ScheduleKind::StreamK => "stream-K",
        })
    }
}

/// A kernel's typed launch handle: the device crate's spec with its argument struct.
#[derive(Clone, Copy, Debug)]
pub enum Spec {
    /// Dense, one tile per workgroup.
    Dense(KernelSpec<DenseGemmArgs>),
    /// Dense split-K.
    DenseSplitK(KernelSpec<DenseSplitKArgs>),
    /// Dense stream-K.
    DenseStreamK(KernelSpec<DenseStreamKArgs>),
    /// M-grouped contiguous.
    Contiguous(KernelSpec<MGroupedContiguousArgs>),
    /// M-grouped contiguous split-K, or over a gathered A (the MoE layer's token rows).
    ContiguousSplitK(KernelSpec<MGroupedContiguousSplitKArgs>),
    /// M-grouped contiguous split-K with the MoE scatter epilogue (the MoE layer's down GEMM
    /// and unpermute in one launch).
    ContiguousScatter(KernelSpec<MGroupedContiguousScatterArgs>),
    /// M-grouped contiguous split-K with the MoE activation epilogue (the MoE layer's gate·up
    /// GEMM and its silu·mul quantization in one launch).
    ContiguousSilu(KernelSpec<MGroupedContiguousSiluArgs>),
    /// [`Spec::ContiguousSilu`] over bf16 token rows it quantizes in its A loads (the MoE
    /// layer's decode gate·up GEMM without a quantize launch).
    ContiguousSiluQa(KernelSpec<MGroupedContiguousSiluArgs>),
    /// M-grouped masked.
    Masked(KernelSpec<MGroupedMaskedArgs>),
    /// M-grouped masked split-K.
    MaskedSplitK(KernelSpec<MGroupedMaskedSplitKArgs>),
    /// K-grouped.
    KGrouped(KernelSpec<KGroupedArgs>),
}

impl Spec {
    /// The kernel's symbol in the code object.
    pub fn name(&self) -> &'static str {
        match self {
            Spec::Dense(s) => s.name,
            Spec::DenseSplitK(s) => s.name,
            Spec::DenseStreamK(s) => s.name,
            Spec::Contiguous(s) => s.name,
            Spec::ContiguousSplitK(s) => s.name,
            Spec::ContiguousScatter(s) => s.name,
            Spec::ContiguousSilu(s) => s.name,
            Spec::ContiguousSiluQa(s) => s.name,
            Spec::Masked(s) => s.name,
            Spec::MaskedSplitK(s) => s.name,
            Spec::KGrouped(s) => s.name,
        }
    }
    /// Work-items per workgroup (the compiled launch bound).
    pub fn workgroup_size(&self) -> u32 {
        match self {
            Spec::Dense(s) => s.workgroup_size,
            Spec::DenseSplitK(s) => s.workgroup_size,
            Spec::DenseStreamK(s) => s.workgroup_size,
            Spec::Contiguous(s) => s.workgroup_size,
            Spec::ContiguousSplitK(s) => s.workgroup_size,
            Spec::ContiguousScatter(s) => s.workgroup_size,
            Spec::ContiguousSilu(s) => s.workgroup_size,
            Spec::ContiguousSiluQa(s) => s.workgroup_size,
            Spec::Masked(s) => s.workgroup_size,
            Spec::MaskedSplitK(s) => s.workgroup_size,
            Spec::KGrouped(s) => s.workgroup_size,
        }
    }
}

/// One registered kernel.
#[derive(Clone, Copy, Debug)]
pub struct KernelEntry {
    /// Typed launch handle (symbol, workgroup size, argument struct).
    pub spec: Spec,
    /// What it computes.
    pub problem: Problem,
    /// Which weight layout it reads (logical row-major, or pre-shuffled for the bs kernels).
    pub weights: WeightLayout,
    /// How A and B are stored: `(K, K)` for `fp8_gemm_nt`, `(K, Mn)` NN, `(Mn, Mn)` TN,
    /// `(Mn, K)` TT (DeepGEMM's dense layouts; the m-grouped kernels are `(K, K)`, the
    /// k-grouped ones read both MN-major and are described by their problem).
    pub majors: (Major, Major),
    /// How its workgroups share the tiles.
    pub schedule: ScheduleKind,
    /// Rows of D per tile.
    pub block_m: u32,
    /// Columns of D per tile.
    pub block_n: u32,
    /// A stages in LDS.
    pub stages: u32,
    /// Dynamic LDS bytes of a launch.
    pub lds_bytes: u32,
    /// Most output tiles a launch may have (split-K arrival counters), `u32::MAX` if unbounded.
    pub max_tiles: u32,
}

impl KernelEntry {
    /// The kernel's symbol.
    pub fn name(&self) -> &'static str {
        self.spec.name()
    }

    /// A `_pipe_` kernel: the bs pipelined loop (`fp8gemm_device::mainloop_bs`, "Pipelined
    /// loop": B prefetched from global memory straight into the MFMA operands blocks ahead) as
    /// its own kernel beside a two-phase twin of the same tile. (The bs split-K kernels run the
    /// pipelined loop too, without a twin.)
    pub fn pipelined(&self) -> bool {
        self.name().contains("_pipe_")
    }

    /// Output tiles of an `m × n` output.
    pub fn tiles(&self, m: u32, n: u32) -> u64 {
        u64::from(m.div_ceil(self.block_m)) * u64::from(n.div_ceil(self.block_n))
    }

    /// Workgroups of this kernel one CU holds at once on `arch`: the fewest of what its
    /// registers (from the code object) and its LDS allow. `None` if the code object lacks it.
    pub fn slots_per_cu(&self, arch: Arch) -> Option<u32> {
        let res = resources(arch).get(self.name())?;
        let waves_per_wg = self.spec.workgroup_size().div_ceil(tile::WAVE).max(1);
        let by_waves = 4 * res.0 / waves_per_wg;
        let lds = lds_per_cu(arch);
        let by_lds = lds.checked_div(self.lds_bytes + res.1).unwrap_or(u32::MAX);
        Some(by_waves.min(by_lds).max(1))
    }
}

impl fmt::Display for KernelEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}, {} B, {}x{}, {})", self.name(), self.problem, self.weights, self.block_m, self.block_n, self.schedule)
    }
}

/// LDS bytes per CU of `arch` (64 KiB on CDNA3, 160 KiB on CDNA4: the CDNA3 and CDNA4 ISA
/// guides, "Local data share").
pub fn lds_per_cu(arch: Arch) -> u32 {
    match arch {
        Arch::Gfx942 => 64 * 1024,
        Arch::Gfx950 => 160 * 1024,
    }
}

/// (waves per SIMD by registers, static LDS bytes) of every kernel of `arch`'s code object.
fn resources(arch: Arch) -> &'static HashMap<String, (u32, u32)> {
    static CACHE: [OnceLock<HashMap<String, (u32, u32)>>; 2] = [OnceLock::new(), OnceLock::new()];
    let i = Arch::ALL.iter().position(|&a| a == arch).unwrap_or(0);
    CACHE[i]
        .get_or_init(|| codeobj::inspect(arch.code_object()).map(|rows| rows.into_iter().map(|r| (r.name, (r.occupancy, r.lds))).collect()).unwrap_or_default())
}

#[allow(clippy::too_many_arguments)] // One table row's fields, in the table's column order.
const fn row(
    spec: Spec,
    problem: Problem,
    weights: WeightLayout,
    schedule: ScheduleKind,
    (block_m, block_n): (u32, u32),
    stages: u32,
    lds_bytes: u32,
    max_tiles: u32,
) -> KernelEntry {
    let majors = match problem {
        Problem::KGrouped => (Major::Mn, Major::Mn),
        _ => (Major::K, Major::K),
    };
    KernelEntry { spec, problem, weights, majors, schedule, block_m, block_n, stages, lds_bytes, max_tiles }
}

/// A dense row of another operand layout (NN / TN / TT).
const fn layout_row(spec: KernelSpec<DenseGemmArgs>, majors: (Major, Major), (block_m, block_n): (u32, u32), lds_bytes: u32) -> KernelEntry {
    KernelEntry {
        spec: Spec::Dense(spec),
        problem: Problem::Dense,
        weights: WeightLayout::Logical,
        majors,
        schedule: ScheduleKind::DataParallel,
        block_m,
        block_n,
        stages: 1,
        lds_bytes,
        max_tiles: NO_LIMIT,
    }
}

use Problem::{Dense, KGrouped as KG, MGroupedContiguous as Contig, MGroupedMasked as Masked};
use ScheduleKind::{DataParallel as DP, SplitK as SK, StreamK as STK};
use WeightLayout::{Logical as L, Preshuffled as P};

const NO_LIMIT: u32 = u32::MAX;
const fn dl(bm: u32, bn: u32) -> u32 {
    tile::lds_bytes(bm, bn)
}
const fn pl(bm: u32) -> u32 {
    tile::bs_pipe_lds_bytes(bm)
}
const fn bs(t: tile::BsTile) -> u32 {
    t.lds_bytes()
}

/// Every GEMM kernel of the code objects (gfx942 and gfx950 carry the same set).
pub static KERNELS: &[KernelEntry] = &[
    // Dense, logical B: the LDS main loop (`fp8gemm_device::dense`).
    row(Spec::Dense(FP8_GEMM_NT_BM64_BN64), Dense, L, DP, (64, 64), 1, dl(64, 64), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BM64_BN128), Dense, L, DP, (64, 128), 1, dl(64, 128), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BM128_BN128), Dense, L, DP, (128, 128), 1, dl(128, 128), NO_LIMIT),
    row(Spec::DenseSplitK(FP8_GEMM_NT_SPLITK_BM64_BN64), Dense, L, SK, (64, 64), 1, dl(64, 64), tile::SPLITK_MAX_TILES),
    row(Spec::DenseSplitK(FP8_GEMM_NT_SPLITK_BM64_BN128), Dense, L, SK, (64, 128), 1, dl(64, 128), tile::SPLITK_MAX_TILES),
    row(Spec::DenseSplitK(FP8_GEMM_NT_SPLITK_BM128_BN128), Dense, L, SK, (128, 128), 1, dl(128, 128), tile::SPLITK_MAX_TILES),
    row(Spec::DenseStreamK(FP8_GEMM_NT_STREAMK_BM64_BN64), Dense, L, STK, (64, 64), 1, dl(64, 64), NO_LIMIT),
    row(Spec::DenseStreamK(FP8_GEMM_NT_STREAMK_BM64_BN128), Dense, L, STK, (64, 128), 1, dl(64, 128), NO_LIMIT),
    row(Spec::DenseStreamK(FP8_GEMM_NT_STREAMK_BM128_BN128), Dense, L, STK, (128, 128), 1, dl(128, 128), NO_LIMIT),
    // Dense, pre-shuffled B (`fp8gemm_device::mainloop_bs`, `mainloop_bs128`).
    row(Spec::Dense(FP8_GEMM_NT_BS_BM32_BN128), Dense, P, DP, (32, 128), 2, bs(tile::DENSE_BS_TILES[0]), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_BM64_BN128), Dense, P, DP, (64, 128), 2, bs(tile::DENSE_BS_TILES[1]), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_BM128_BN128), Dense, P, DP, (128, 128), 2, bs(tile::DENSE_BS_TILES[2]), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_PIPE_BM32_BN64), Dense, P, DP, (32, 64), 4, bs(tile::DENSE_BS_PIPE_BM32_BN64), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_PIPE_B1_BM32_BN64), Dense, P, DP, (32, 64), 2, bs(tile::DENSE_BS_PIPE_B1_BM32_BN64), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_PIPE_BM48_BN128), Dense, P, DP, (48, 128), 2, pl(48), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_PIPE_BM64_BN128), Dense, P, DP, (64, 128), 2, pl(64), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_PIPE_BM80_BN128), Dense, P, DP, (80, 128), 2, pl(80), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_PIPE_BM96_BN128), Dense, P, DP, (96, 128), 2, pl(96), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_PIPE_BM112_BN128), Dense, P, DP, (112, 128), 2, pl(112), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_PIPE_RG2_BM96_BN128), Dense, P, DP, (96, 128), 2, 2 * pl(48), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_PIPE_RG2_BM128_BN128), Dense, P, DP, (128, 128), 2, 2 * pl(64), NO_LIMIT),
    row(Spec::Dense(FP8_GEMM_NT_BS_PIPE_BM128_BN128), Dense, P, DP, (128, 128), 2, bs(tile::DENSE_BS_PIPE_BM128), NO_LIMIT),
    row(Spec::DenseSplitK(FP8_GEMM_NT_SPLITK_BS_BM32_BN64), Dense, P, SK, (32, 64), 4, bs(tile::DENSE_SPLITK_BS_BM32_BN64), tile::bs_splitk_max_tiles(32)),
    row(Spec::DenseSplitK(FP8_GEMM_NT_SPLITK_BS_BM32_BN128), Dense, P, SK, (32, 128), 2, bs(tile::DENSE_SPLITK_BS_TILES[0]), tile::bs_splitk_max_tiles(32)),
    row(Spec::DenseSplitK(FP8_GEMM_NT_SPLITK_BS_BM64_BN128), Dense, P, SK, (64, 128), 2, bs(tile::DENSE_SPLITK_BS_TILES[1]), tile::bs_splitk_max_tiles(64)),
    row(Spec::DenseSplitK(FP8_GEMM_NT_SPLITK_BS_BM128_BN128), Dense, P, SK, (128, 128), 2, bs(tile::DENSE_SPLITK_BS_TILES[2]), tile::bs_splitk_max_tiles(128)),
    row(Spec::DenseStreamK(FP8_GEMM_NT_STREAMK_BS_BM32_BN128), Dense, P, STK, (32, 128), 2, bs(fp8gemm_device::streamk::STREAMK_BS_TILES[0]), NO_LIMIT),
    row(Spec::DenseStreamK(FP8_GEMM_NT_STREAMK_BS_BM64_BN128), Dense, P, STK, (64, 128), 2, bs(fp8gemm_device::streamk::STREAMK_BS_TILES[1]), NO_LIMIT),
    row(Spec::DenseStreamK(FP8_GEMM_NT_STREAMK_BS_PIPE_BM48_BN128), Dense, P, STK, (48, 128), 2, pl(48), NO_LIMIT),
    row(Spec::DenseStreamK(FP8_GEMM_NT_STREAMK_BS_PIPE_BM64_BN128), Dense, P, STK, (64, 128), 2, pl(64), NO_LIMIT),
    // Dense, the other operand layouts (`fp8gemm_device::dense_layouts`: the same main loop,
    // MN-major operands transposed on their way into LDS).
    layout_row(FP8_GEMM_NN_BM64_BN128, (Major::K, Major::Mn), (64, 128), dl(64, 128)),
    layout_row(FP8_GEMM_TN_BM64_BN128, (Major::Mn, Major::Mn), (64, 128), dl(64, 128)),
    layout_row(FP8_GEMM_TT_BM64_BN128, (Major::Mn, Major::K), (64, 128), dl(64, 128)),
    // M-grouped contiguous.
    row(Spec::Contiguous(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN64), Contig, L, DP, (64, 64), 1, dl(64, 64), NO_LIMIT),
    row(Spec::Contiguous(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN128), Contig, L, DP, (64, 128), 1, dl(64, 128), NO_LIMIT),
    row(Spec::Contiguous(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM128_BN128), Contig, L, DP, (128, 128), 1, dl(128, 128), NO_LIMIT),
    row(Spec::Contiguous(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM32_BN128), Contig, P, DP, (32, 128), 2, bs(tile::CONTIGUOUS_BS_TILES[0]), NO_LIMIT),
    row(Spec::Contiguous(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM64_BN128), Contig, P, DP, (64, 128), 2, bs(tile::CONTIGUOUS_BS_TILES[1]), NO_LIMIT),
    row(Spec::Contiguous(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM128_BN128), Contig, P, DP, (128, 128), 2, bs(tile::CONTIGUOUS_BS_TILES[2]), NO_LIMIT),
    row(Spec::Contiguous(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_PIPE_BM64_BN128), Contig, P, DP, (64, 128), 2, pl(64), NO_LIMIT),
    // (Split count 1 runs these as data-parallel kernels; both read a gathered A too.)
    row(
        Spec::ContiguousSplitK(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_BS_BM32_BN128),
        Contig,
        P,
        SK,
        (32, 128),
        2,
        bs(tile::CONTIGUOUS_SPLITK_BS_TILES[0]),
        tile::SPLITK_MAX_TILES,
    ),
    row(
        Spec::ContiguousSplitK(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_BS_BM64_BN128),
        Contig,
        P,
        SK,
        (64, 128),
        2,
        bs(tile::CONTIGUOUS_SPLITK_BS_TILES[1]),
        tile::SPLITK_MAX_TILES,
    ),
    row(
        Spec::ContiguousScatter(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SCATTER_BS_BM32_BN128),
        Contig,
        P,
        SK,
        (32, 128),
        2,
        bs(tile::CONTIGUOUS_SCATTER_BS_TILES[0]),
        tile::SPLITK_MAX_TILES,
    ),
    row(
        Spec::ContiguousScatter(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SCATTER_BS_BM64_BN128),
        Contig,
        P,
        SK,
        (64, 128),
        2,
        bs(tile::CONTIGUOUS_SCATTER_BS_TILES[1]),
        tile::SPLITK_MAX_TILES,
    ),
    row(
        Spec::ContiguousSilu(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SILU_BS_BM32_BN128),
        Contig,
        P,
        SK,
        (32, 128),
        2,
        bs(tile::CONTIGUOUS_SILU_BS_TILES[0]),
        tile::SPLITK_MAX_TILES,
    ),
    row(
        Spec::ContiguousSilu(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SILU_BS_BM64_BN128),
        Contig,
        P,
        SK,
        (64, 128),
        2,
        bs(tile::CONTIGUOUS_SILU_BS_TILES[1]),
        tile::SPLITK_MAX_TILES,
    ),
    row(Spec::ContiguousSplitK(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_BS_PIPE_BM64_BN128), Contig, P, SK, (64, 128), 2, pl(64), tile::SPLITK_MAX_TILES),
    row(
        Spec::ContiguousScatter(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SCATTER_BS_PIPE_BM64_BN128),
        Contig,
        P,
        SK,
        (64, 128),
        2,
        pl(64),
        tile::SPLITK_MAX_TILES,
    ),
    row(Spec::ContiguousSilu(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SILU_BS_PIPE_BM64_BN128), Contig, P, SK, (64, 128), 2, pl(64), tile::SPLITK_MAX_TILES),
    row(
        Spec::ContiguousSiluQa(M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_SPLITK_SILU_BS_QA_BM32_BN128),
        Contig,
        P,
        SK,
        (32, 128),
        2,
        bs(tile::CONTIGUOUS_SILU_QA_BS_TILE),
        tile::SPLITK_MAX_TILES,
    ),
    // M-grouped masked (the split-K kernels count arrivals per workgroup: `SPLITK_MAX_TILES` tiles).
    row(Spec::Masked(M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN64), Masked, L, DP, (64, 64), 1, dl(64, 64), NO_LIMIT),
    row(Spec::Masked(M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN128), Masked, L, DP, (64, 128), 1, dl(64, 128), NO_LIMIT),
    row(Spec::Masked(M_GROUPED_FP8_GEMM_NT_MASKED_BM128_BN128), Masked, L, DP, (128, 128), 1, dl(128, 128), NO_LIMIT),
    row(Spec::Masked(M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM32_BN128), Masked, P, DP, (32, 128), 2, bs(tile::MASKED_BS_TILES[0]), NO_LIMIT),
    row(Spec::Masked(M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM64_BN128), Masked, P, DP, (64, 128), 2, bs(tile::MASKED_BS_TILES[1]), NO_LIMIT),
    row(Spec::Masked(M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM128_BN128), Masked, P, DP, (128, 128), 2, bs(tile::MASKED_BS_TILES[2]), NO_LIMIT),
    row(
        Spec::Masked(M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM32_BN64),
        Masked,
        P,
        DP,
        (32, 64),
        4,
        bs(fp8gemm_device::grouped_pipe::MASKED_BS_PIPE_TILES[0]),
        NO_LIMIT,
    ),
    row(Spec::Masked(M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM64_BN128), Masked, P, DP, (64, 128), 2, pl(64), NO_LIMIT),
    row(Spec::Masked(M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM80_BN128), Masked, P, DP, (80, 128), 2, pl(80), NO_LIMIT),
    row(
        Spec::MaskedSplitK(M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM32_BN128),
        Masked,
        P,
        SK,
        (32, 128),
        2,
        bs(tile::MASKED_SPLITK_BS_TILES[0]),
        tile::SPLITK_MAX_TILES,
    ),
    row(
        Spec::MaskedSplitK(M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM64_BN128),
        Masked,
        P,
        SK,
        (64, 128),
        2,
        bs(tile::MASKED_SPLITK_BS_TILES[1]),
        tile::SPLITK_MAX_TILES,
    ),
    // K-grouped (weight gradients; MN-major operands).
    row(Spec::KGrouped(K_GROUPED_FP8_GEMM_TN_CONTIGUOUS_BM64_BN64), KG, L, DP, (64, 64), tile::LDS_STAGES, dl(64, 64), NO_LIMIT),
    row(Spec::KGrouped(K_GROUPED_FP8_GEMM_TN_CONTIGUOUS_BM128_BN128), KG, L, DP, (128, 128), tile::LDS_STAGES, dl(128, 128), NO_LIMIT),
];

/// The registered kernel named `name` (for reports and the CLI; launches carry their entry).
pub fn by_name(name: &str) -> Option<&'static KernelEntry> {
    KERNELS.iter().find(|e| e.name() == name)
}

/// The kernels that solve `problem` on weights in `weights` with K-major operands (NT).
pub fn candidates(problem: Problem, weights: WeightLayout) -> impl Iterator<Item = &'static KernelEntry> {
    let majors = if problem == Problem::KGrouped { (Major::Mn, Major::Mn) } else { (Major::K, Major::K) };
    candidates_with_majors(problem, weights, majors)
}

/// The kernels that solve `problem` on weights in `weights` with operands stored as `majors`.
pub fn candidates_with_majors(problem: Problem, weights: WeightLayout, majors: (Major, Major)) -> impl Iterator<Item = &'static KernelEntry> {
    KERNELS.iter().filter(move |e| e.problem == problem && e.weights == weights && e.majors == majors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_kernel_is_in_every_code_object_once() {
        for arch in Arch::ALL {
            let declared: Vec<String> = codeobj::inspect(arch.code_object()).expect("embedded code object parses").into_iter().map(|r| r.name).collect();
            for e in KERNELS {
                assert_eq!(declared.iter().filter(|n| *n == e.name()).count(), 1, "{} in the {} code object", e.name(), arch.name());
                assert!(e.slots_per_cu(arch).is_some_and(|s| s >= 1), "{e}");
            }
        }
        let mut names: Vec<&str> = KERNELS.iter().map(|e| e.name()).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a kernel is registered twice");
    }

    #[test]
    fn every_gemm_kernel_of_the_code_object_is_registered() {
        let gemm = |n: &str| n.contains("fp8_gemm");
        for r in codeobj::inspect(Arch::Gfx942.code_object()).expect("embedded code object parses") {
            if gemm(&r.name) {
                assert!(by_name(&r.name).is_some(), "{} is in the code object but not in the registry", r.name);
            }
        }
    }

    #[test]
    fn registry_rows_agree_with_their_symbols() {
        for e in KERNELS {
            let name = e.name();
            assert!(name.ends_with(&format!("bm{}_bn{}", e.block_m, e.block_n)), "{name}: tile {}x{}", e.block_m, e.block_n);
            let layout = match e.majors {
                _ if e.problem == Problem::KGrouped => "tn",
                (Major::K, Major::K) => "nt",
                (Major::K, Major::Mn) => "nn",
                (Major::Mn, Major::Mn) => "tn",
                (Major::Mn, Major::K) => "tt",
            };
            assert!(name.contains(&format!("fp8_gemm_{layout}_")), "{name}: majors {:?}", e.majors);
            assert_eq!(name.contains("_bs_"), e.weights == WeightLayout::Preshuffled, "{name}");
            assert_eq!(name.contains("splitk"), e.schedule == ScheduleKind::SplitK, "{name}");
            assert_eq!(name.contains("streamk"), e.schedule == ScheduleKind::StreamK, "{name}");
            assert!(e.lds_bytes <= 64 * 1024, "{name}");
        }
    }
}
