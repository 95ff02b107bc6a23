//! Launch configuration: a problem description ([`GemmDesc`]) → the kernel and launch geometry
//! that computes it ([`GemmConfig`]), through a per-architecture heuristic ([`get_best_config`]).
//!
//! Configs are plain data; every kernel a config names is one of the device crate's
//! `KernelSpec` constants (see [`fp8gemm_device::dense`] and [`fp8gemm_device::tile`]).
//!
//! # The heuristic (gfx942: 304 CUs; gfx950: 256 CUs)
//!
//! For each candidate tile the model estimates the time of the whole launch as
//!
//! ```text
//! rounds    = ⌈tiles / (CUs · slots)⌉                 (wave quantization)
//! sharing   = min(slots, ⌈tiles / CUs⌉)               (workgroups that share one CU at a time)
//! time      = rounds · sharing · nkb · cost_per_kb
//! ```
//!
//! where `slots` is how many workgroups of that kernel fit on one CU (limited by its LDS and its
//! registers, from the code object), and `cost_per_kb` the issue cycles one wave spends per
//! 128-K block in the main loop (16 per MFMA, 4 per other instruction; counted from the objdump
//! of the loop body). The candidate with the smallest estimate wins; ties go to the tile with
//! more workgroups (more CUs pulling memory bandwidth). It ignores memory bandwidth, which bounds
//! all candidates alike for the small-M, weight-streaming shapes, and L2 reuse; what it captures
//! is that small M wastes most of a 128-row tile, and that for large problems the 128 × 128
//! tile's better operand reuse (fewer LDS reads and copies per MFMA) wins.
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

use std::collections::HashSet;
use std::fmt;
use std::sync::{Mutex, OnceLock};

use fp8gemm_device::args::{DenseGemmArgs, MGroupedContiguousArgs, MGroupedMaskedArgs};
use fp8gemm_device::dense::{FP8_GEMM_NT_BM128_BN128, FP8_GEMM_NT_BM64_BN128, FP8_GEMM_NT_BM64_BN64};
use fp8gemm_device::grouped::{
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM128_BN128, M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN128,
    M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN64, M_GROUPED_FP8_GEMM_NT_MASKED_BM128_BN128,
    M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN64,
};
use fp8gemm_device::tile::{self, DenseTile};
use fp8gemm_device::KernelSpec;

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
}

impl GemmDesc {
    /// A dense `m × n × k` problem on `arch`.
    pub fn dense(m: u32, n: u32, k: u32, arch: Arch) -> Self {
        GemmDesc { kind: GemmKind::Dense, m, n, k, groups: 1, expected_m: m, arch }
    }

    /// An m-grouped contiguous problem: `m_sum` stacked rows (a multiple of the alignment, 128)
    /// over `groups` experts of `n × k`.
    pub fn m_grouped_contiguous(m_sum: u32, n: u32, k: u32, groups: u32, arch: Arch) -> Self {
        let expected_m = m_sum.checked_div(groups).unwrap_or(0);
        GemmDesc { kind: GemmKind::MGroupedContiguous, m: m_sum, n, k, groups, expected_m, arch }
    }

    /// An m-grouped masked problem: `groups` groups of capacity `m_max` rows, of which about
    /// `expected_m` are valid (a hint; the real counts live on the device).
    pub fn m_grouped_masked(m_max: u32, n: u32, k: u32, groups: u32, expected_m: u32, arch: Arch) -> Self {
        GemmDesc { kind: GemmKind::MGroupedMasked, m: m_max, n, k, groups, expected_m, arch }
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
    /// Workgroups in the 1-D grid.
    pub grid: u32,
    /// Workgroup → tile order (implemented inside the kernel; recorded for reporting).
    pub remap: Remap,
    /// Architecture the config was chosen for.
    pub arch: Arch,
}

impl fmt::Display for GemmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Remap::Xcd { xcds } = self.remap;
        write!(
            f,
            "{} on {}: block {}x{}x{}, {} threads, {} B LDS, grid {} (XCD remap over {})",
            self.kernel,
            self.arch,
            self.block_m,
            self.block_n,
            self.block_k,
            self.workgroup_size,
            self.lds_bytes,
            self.grid,
            xcds
        )
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
    workgroup_size: u32,
    /// Workgroups of this kernel per CU (min over the LDS and register limits).
    slots_per_cu: u32,
    /// Issue cycles of one wave per 128-K block of the main loop.
    cost_per_kb: u64,
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

/// The candidates of one entry point (all three share the tile main loop). Register counts (arch
/// VGPRs, no AGPRs; `fp8gemm info`) and main-loop instruction counts are measured on the gfx942
/// code object (`llvm-objdump -d`; loop body with the prefetch branch taken): dense bm128_bn128
/// 222 VGPRs, 64 MFMA + 110 other; bm64_bn128 124 VGPRs, 32 + 73; bm64_bn64 76 VGPRs, 16 + 56.
/// The grouped kernels' loops are instruction for instruction the same counts (they run the same
/// `tile_gemm`); their VGPRs: contiguous 226 / 126 / 78, masked 222 / 124 / 76 — the same waves
/// per SIMD in every case.
fn candidates(arch: Arch, kind: GemmKind) -> [Candidate; 3] {
    let (tiles, vgprs) = match kind {
        GemmKind::Dense => (tile::DENSE_TILES, [76, 124, 222]),
        GemmKind::MGroupedContiguous => (tile::CONTIGUOUS_TILES, [78, 126, 226]),
        GemmKind::MGroupedMasked => (tile::MASKED_TILES, [76, 124, 222]),
    };
    let spec = arch_spec(arch);
    let make = |tile: DenseTile, vgprs: u32, mfma: u64, other: u64| {
        let waves_per_wg_per_simd = tile::THREADS / tile::WAVE / 4;
        let by_regs = waves_per_simd(vgprs) / waves_per_wg_per_simd;
        let by_lds = spec.lds_per_cu / tile.lds_bytes();
        Candidate {
            tile,
            workgroup_size: tile::THREADS,
            slots_per_cu: by_regs.min(by_lds).max(1),
            cost_per_kb: 16 * mfma + 4 * other,
        }
    };
    [make(tiles[0], vgprs[0], 16, 56), make(tiles[1], vgprs[1], 32, 73), make(tiles[2], vgprs[2], 64, 110)]
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
    let tensors = [
        ("a", (m + max_tile) * k),
        ("b", (n + max_tile) * k),
        ("d", (m + max_tile) * n * 2),
        ("a", ga * m * k),
        ("b", gb * n * k),
        ("d", ga * m * n * 2),
    ];
    for (tensor, bytes) in tensors {
        if bytes >= limit {
            return Err(ConfigError::TooLarge { tensor, bytes, limit });
        }
    }
    Ok(())
}

/// Workgroups a candidate launches for `desc`, and the tiles that do work (the model's input).
fn grid_and_work(c: &Candidate, desc: &GemmDesc) -> Result<(u32, u64), ConfigError> {
    let t = c.tile;
    Ok(match desc.kind {
        GemmKind::Dense => {
            let grid = t.grid(desc.m, desc.n);
            (grid, u64::from(grid))
        }
        GemmKind::MGroupedContiguous => {
            let grid = t.grid(desc.m, desc.n);
            // Each non-empty group ends in an aligned block that is part padding; with the
            // padding length taken as uniform in 0..alignment, half of those blocks have an
            // all-padding second half, which a half-alignment-high tile skips.
            let align = tile::M_ALIGNMENT_CONTIGUOUS;
            let live_groups = desc.groups.min(desc.m / align);
            let skipped = if t.block_m * 2 == align { live_groups / 2 } else { 0 };
            (grid, u64::from(grid - skipped * desc.n.div_ceil(t.block_n)))
        }
        GemmKind::MGroupedMasked => {
            let g = u64::from(desc.groups);
            let grid = g * u64::from(t.grid(desc.m, desc.n));
            let grid = u32::try_from(grid).map_err(|_| ConfigError::TooLarge {
                tensor: "grid",
                bytes: grid,
                limit: u64::from(u32::MAX),
            })?;
            let expected = desc.expected_m.clamp(1, desc.m);
            (grid, g * u64::from(t.grid(expected, desc.n)))
        }
    })
}

/// Modelled time (arbitrary units) of `c` running `tiles` working tiles of reduction length `k`.
fn modelled_time(c: &Candidate, spec: ArchSpec, tiles: u64, k: u32) -> u64 {
    let cus = u64::from(spec.cus);
    let slots = u64::from(c.slots_per_cu);
    let rounds = tiles.div_ceil(cus * slots);
    let sharing = slots.min(tiles.div_ceil(cus));
    let nkb = u64::from(k / tile::SCALE_BLOCK_K);
    rounds * sharing * nkb * c.cost_per_kb
}

/// Chooses the kernel and launch geometry for `desc`.
///
/// With `FP8GEMM_PRINT_CONFIGS=1` in the environment each distinct chosen config is printed
/// once (to stderr) with the problem that first chose it.
pub fn get_best_config(desc: &GemmDesc) -> Result<GemmConfig, ConfigError> {
    validate(desc)?;
    let spec = arch_spec(desc.arch);
    let mut best: Option<(u64, u32, Candidate)> = None;
    for c in candidates(desc.arch, desc.kind) {
        let (grid, work) = grid_and_work(&c, desc)?;
        let t = modelled_time(&c, spec, work, desc.k);
        let better = match best {
            None => true,
            Some((bt, bg, _)) => t < bt || (t == bt && grid > bg),
        };
        if better {
            best = Some((t, grid, c));
        }
    }
    let (_, grid, c) = best.expect("the candidate list is not empty");
    let config = GemmConfig {
        block_m: c.tile.block_m,
        block_n: c.tile.block_n,
        block_k: c.tile.block_k(),
        workgroup_size: c.workgroup_size,
        lds_bytes: c.tile.lds_bytes(),
        kernel: c.tile.name,
        grid,
        remap: Remap::Xcd { xcds: spec.xcds },
        arch: desc.arch,
    };
    print_once(desc, &config);
    Ok(config)
}

/// Prints `config` once per process if `FP8GEMM_PRINT_CONFIGS=1`.
fn print_once(desc: &GemmDesc, config: &GemmConfig) {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    static SEEN: OnceLock<Mutex<HashSet<GemmConfig>>> = OnceLock::new();
    if !*ENABLED.get_or_init(|| std::env::var("FP8GEMM_PRINT_CONFIGS").is_ok_and(|v| v == "1")) {
        return;
    }
    if first_sighting(SEEN.get_or_init(|| Mutex::new(HashSet::new())), config) {
        eprintln!(
            "fp8gemm config: {config} (first for {} m={} n={} k={} groups={} expected_m={})",
            desc.kind, desc.m, desc.n, desc.k, desc.groups, desc.expected_m
        );
    }
}

/// Records `config` in `seen`; true the first time a config is seen.
fn first_sighting(seen: &Mutex<HashSet<GemmConfig>>, config: &GemmConfig) -> bool {
    // A poisoned lock only means another thread panicked while printing; the set is still valid.
    seen.lock().unwrap_or_else(|e| e.into_inner()).insert(*config)
}

/// The launch spec (symbol, workgroup size, argument type) of a dense config's kernel.
pub fn dense_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<DenseGemmArgs>> {
    [FP8_GEMM_NT_BM64_BN64, FP8_GEMM_NT_BM64_BN128, FP8_GEMM_NT_BM128_BN128]
        .into_iter()
        .find(|s| s.name == config.kernel)
}

/// The launch spec of an m-grouped contiguous config's kernel.
pub fn contiguous_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<MGroupedContiguousArgs>> {
    [
        M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN64,
        M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM64_BN128,
        M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BM128_BN128,
    ]
    .into_iter()
    .find(|s| s.name == config.kernel)
}

/// The launch spec of an m-grouped masked config's kernel.
pub fn masked_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<MGroupedMaskedArgs>> {
    [M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN64, M_GROUPED_FP8_GEMM_NT_MASKED_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BM128_BN128]
        .into_iter()
        .find(|s| s.name == config.kernel)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPES: [(u32, u32, u32); 18] = [
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
    fn every_config_names_an_existing_kernel_and_covers_the_problem() {
        for arch in Arch::ALL {
            for (m, n, k) in SHAPES {
                let c = get_best_config(&GemmDesc::dense(m, n, k, arch)).unwrap();
                let spec = dense_kernel_spec(&c).unwrap_or_else(|| panic!("{c}: no such kernel"));
                assert_eq!(spec.workgroup_size, c.workgroup_size);
                assert!(c.lds_bytes <= 64 * 1024, "{c}");
                assert_eq!(c.lds_bytes, tile::lds_bytes(c.block_m, c.block_n));
                assert_eq!(c.block_k, 128);
                // Grid covers the problem exactly: every tile once, no tile entirely outside.
                assert_eq!(c.grid, m.div_ceil(c.block_m) * n.div_ceil(c.block_n), "{c}");
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
        assert_eq!(pick(64, 2112, 7168).kernel, "fp8_gemm_nt_bm64_bn64");
        // M = 4096: more than two rounds of tiles on 304 CUs; the 128 × 128 tile's reuse wins.
        assert_eq!(pick(4096, 7168, 2048).kernel, "fp8_gemm_nt_bm128_bn128");
        assert_eq!(pick(4096, 24576, 1536).kernel, "fp8_gemm_nt_bm128_bn128");
    }

    #[test]
    fn model_numbers_by_hand() {
        // bm128_bn128 on gfx942: 222 VGPRs → 2 waves/SIMD → 2 workgroups/CU (LDS 32 KiB allows 2).
        let c = candidates(Arch::Gfx942, GemmKind::Dense);
        assert_eq!((c[0].slots_per_cu, c[1].slots_per_cu, c[2].slots_per_cu), (4, 2, 2));
        assert_eq!(c[2].cost_per_kb, 16 * 64 + 4 * 110);
        // 4096 × 7168: 32 × 56 = 1792 tiles, 608 slots → 3 rounds, 2 sharing, 16 blocks.
        let t = modelled_time(&c[2], arch_spec(Arch::Gfx942), 32 * 56, 2048);
        assert_eq!(t, 3 * 2 * 16 * (16 * 64 + 4 * 110));
        assert_eq!(waves_per_simd(222), 2);
        assert_eq!(waves_per_simd(128), 4);
        assert_eq!(waves_per_simd(76), 6);
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
            let c = candidates(arch, GemmKind::MGroupedContiguous);
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
        let c = candidates(Arch::Gfx942, GemmKind::MGroupedMasked);
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
    fn display() {
        let c = get_best_config(&GemmDesc::dense(4096, 7168, 2048, Arch::Gfx942)).unwrap();
        assert_eq!(
            c.to_string(),
            "fp8_gemm_nt_bm128_bn128 on gfx942: block 128x128x128, 256 threads, 32768 B LDS, grid 1792 (XCD remap over 8)"
        );
    }
}
