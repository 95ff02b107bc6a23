//! `fp8gemm tune --cost`: the selector's cost model (`host/tuned/<arch>.<machine>.cost.csv`,
//! read by `fp8gemm::select`) generated from the emulator's timing model. Every figure in it is
//! **modelled**, not measured.
//!
//! For every registered dense kernel (both weight layouts): `--samples` shapes drawn from a
//! seeded random distribution — K = 128·b with b log-uniform in 2 … 64 (`--k-blocks`), N log-uniform in
//! 256 … 32768 (a multiple of 64), M set so the kernel's tiles per CU are log-uniform over the
//! range where its schedule applies (data-parallel 0.05 … 12, split-K 0.02 … 1.5, stream-K
//! 0.02 … 12), any integer — with a random schedule among the selector's candidates for that
//! shape; each is launched with its plan given ([`fp8gemm::fp8_gemm_nt_with_plan`]) and the
//! timing model on (every XCD for grids of at most one workgroup per CU, XCD 0's share above), and
//! shapes whose simulated work passes `--max-blocks` (tiles × K blocks in 64 × 128-tile
//! equivalents) are redrawn.
//! The plain m-grouped contiguous split-K kernels (the MoE layer's GEMMs; their epilogue
//! variants take their coefficients) are sampled on grouped problems of their own
//! ([`draw_contiguous`]: active groups, rows per group, N, K and a split count drawn at random;
//! with `--padded` each group's routed rows are rounded up to whole tiles with padding rows
//! marked −1, the MoE layer's layout, whose stores the kernels skip) and launched through the
//! gathered entry point ([`launch_contiguous`]); a sample row of theirs carries the group count
//! as a ninth column, and a padded one its routed rows as a tenth. The MoE layer's gate·up
//! kernels with the activation epilogue (`…_splitk_silu_bs_*`, the `_qa_` one quantizing bf16
//! token rows in its A loads; the layer runs them only where the launch fits one round of the
//! device) are sampled the same way on one-round launches of their own ([`draw_silu`]), so
//! their coefficients are their own rather than their plain twins'. So do the other grouped kernels' samples, each on
//! problems of its own: DeepGEMM's m-grouped contiguous, masked and masked split-K kernels
//! ([`draw_grouped`], [`launch_grouped`]: contiguous groups of whole 128-row blocks ending in
//! padding rows; masked groups of capacity `⌈1.3·expected_m⌉` with counts spread around
//! `expected_m`; `m` is the contiguous layout's rows, the masked layout's `expected_m`) and
//! the k-grouped kernels ([`draw_kgrouped`], [`launch_kgrouped`]: `m × n` outputs per group
//! over `k` tokens in equal groups).
//! The samples are written to `--samples-out` so the fit can be redone without timing
//! (`--from-samples`). The fit: for each candidate memory fill and HBM and per-XCD L2
//! bandwidths on a grid (fractions of the machine's bandwidths, fills of 0 … 3 µs, then a finer
//! grid of HBM rates and fills around the best), every kernel's coefficients by non-negative
//! least squares ([`fp8gemm::select::fit_kernel`]); the figures with the smallest mean |log
//! error| over all samples are kept. With `--only` the matching kernels are fitted at the
//! shipped model's figures and merged into it; with `--own-memory` as well, they get one HBM
//! rate and fill of their own on the same grid ([`fit_own_memory`]), which only their own
//! estimates read. `--chains` measures the finisher chains of the dense and the plain
//! contiguous split-K kernels on one-round launches; `--chain-lines` takes a kernel's
//! reduction tail from those measurements instead of fitting it. The evaluation shapes of
//! `fp8gemm eval` are never drawn here (they come from public model configurations, not from
//! this distribution).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use amdgpu_emu::hip::{self as emu, TimingMode};
use amdgpu_emu::timing::{Machine, Scope, SimOptions};
use fp8gemm::codeobj::Arch;
use fp8gemm::config::{GemmDesc, Overrides};
use fp8gemm::dense_layouts::{MnMajorActivationsView, MnMajorWeightsView};
use fp8gemm::registry::{self, KernelEntry, Major, Problem, ScheduleKind};
use fp8gemm::select::{self, CostModel, Features, MemoryRates, Plan, Sample};
use fp8gemm::{Context, Stream};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::operands::{Operands, Problem as OpProblem};

/// Arguments of `tune --cost`.
pub struct CostArgs {
    pub machine: String,
    pub samples: usize,
    pub max_blocks: u64,
    pub out: Option<PathBuf>,
    pub samples_out: Option<PathBuf>,
    pub from_samples: Option<Vec<PathBuf>>,
    /// Time the samples of `from_samples` again instead of reusing their times.
    pub retime: bool,
    /// The contiguous split-K draws end their groups in padding rows (`tune --padded`).
    pub padded: bool,
    pub only: Option<String>,
    /// Kernels left out (`tune --skip`).
    pub skip: Option<String>,
    /// The `--only` kernels fitted one HBM rate and fill of their own (`tune --own-memory`).
    pub own_memory: bool,
    pub seed: u64,
    /// The K blocks (K / 128) the draws take, log-uniform between the two.
    pub k_blocks: (u32, u32),
    /// Fit on one side of a shape split, judge on the other (`--judge`).
    pub judge: Option<Judge>,
    /// Judge the shipped cost model on the samples instead of fitting (`--shipped`).
    pub shipped: bool,
    /// Write every sample's modelled time, estimate and signed error here (`--residuals`).
    pub residuals: Option<PathBuf>,
    /// Measure the dense split-K kernels' finisher chains at these split counts instead of
    /// fitting (`--chains`; empty: [`CHAIN_SPLITS`]).
    pub chains: Option<Vec<u32>>,
    /// The split-K kernels' measured finisher chains (`--chain-lines`: a `tune --chains`
    /// report), whose lines replace the fitted reduction tail.
    pub chain_lines: Option<PathBuf>,
    /// Row tiles of the `--chains` launches (`--chain-rows`, default 1: every piece streams its
    /// own B).
    pub chain_rows: u32,
}

/// A split of the samples by shape family (`tune --judge dim=V`): the fit uses the samples
/// whose dimension is below `at`, the report judges it on the rest.
#[derive(Clone, Copy, Debug)]
pub struct Judge {
    /// Which dimension: `'m'`, `'n'` or `'k'`.
    pub dim: char,
    /// The first value of the judged side.
    pub at: u32,
}

impl Judge {
    /// Parses `k=V`, `n=V` or `m=V`.
    pub fn parse(s: &str) -> Result<Judge, String> {
        let bad = || format!("--judge: expected m=V, n=V or k=V with V a positive integer, got `{s}`");
        let (d, v) = s.split_once('=').ok_or_else(bad)?;
        let dim = match d.trim() {
            "m" => 'm',
            "n" => 'n',
            "k" => 'k',
            _ => return Err(bad()),
        };
        let at = v.trim().parse::<u32>().ok().filter(|&v| v > 0).ok_or_else(bad)?;
        Ok(Judge { dim, at })
    }

    /// Whether `t` is on the judged side.
    fn judged(&self, t: &Timed) -> bool {
        let v = match self.dim {
            'm' => t.m,
            'n' => t.n,
            _ => t.k,
        };
        v >= self.at
    }
}

/// One timed launch.
#[derive(Clone, Debug)]
pub struct Timed {
    pub kernel: &'static str,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub splits: u32,
    pub dp: u32,
    pub g: u32,
    /// Groups of a grouped sample, 0 for a dense one: active groups of a contiguous split-K
    /// sample or of a DeepGEMM contiguous one (`m` rows, `m / groups` per group), the groups of
    /// a masked one (`m` = `expected_m`, the capacity [`crate::operands::masked_capacity`]`(m)`).
    pub groups: u32,
    pub seconds: f64,
    /// Routed rows of a contiguous split-K sample whose groups end in padding rows (the MoE
    /// layer's layout: `stored / groups` routed rows per group, the rest of each group's rows
    /// marked −1 in `m_indices`, their stores skipped); 0: every row routed.
    pub stored: u32,
}

/// Launches the NN / TN / TT GEMM of `majors` on zero operands of format `F`.
fn launch_layout<F: fp8gemm::fp8::Fp8Format>(
    stream: &Stream,
    majors: (Major, Major),
    a: (fp8gemm::DeviceSlice<'_, u8>, fp8gemm::DeviceSlice<'_, f32>),
    b: (fp8gemm::DeviceSlice<'_, u8>, fp8gemm::DeviceSlice<'_, f32>),
    (m, n, k): (usize, usize, usize),
    d: &mut fp8gemm::DeviceBuffer<half::bf16>,
) -> Result<fp8gemm::GemmRun, fp8gemm::Error> {
    let ak = || fp8gemm::ActivationsView::<F>::new(a.0, a.1, m, k);
    let am = || MnMajorActivationsView::<F>::new(a.0, a.1, m, k);
    let bk = || fp8gemm::WeightsView::<F>::new(b.0, b.1, n, k);
    let bm = || MnMajorWeightsView::<F>::new(b.0, b.1, n, k);
    match majors {
        (Major::K, Major::Mn) => fp8gemm::dense_layouts::fp8_gemm_nn(stream, ak()?, bm()?, d),
        (Major::Mn, Major::Mn) => fp8gemm::dense_layouts::fp8_gemm_tn(stream, am()?, bm()?, d),
        _ => fp8gemm::dense_layouts::fp8_gemm_tt(stream, am()?, bk()?, d),
    }
}

/// Times `plan` on the problem `desc` (dense `m × n × k`; for the contiguous split-K family,
/// [`launch_contiguous`]'s layout) with the timing model of `machine`; returns modelled seconds.
pub fn time_plan(ctx: &Context, machine: &Machine, plan: &Plan, desc: &GemmDesc) -> Result<f64, String> {
    Ok(profile_plan(ctx, machine, plan, desc)?.seconds)
}

/// [`time_plan`] of a sample: a contiguous split-K one with `stored` routed rows
/// ([`Timed::stored`], 0: every row) launched with its padding rows marked.
fn time_sample(ctx: &Context, machine: &Machine, plan: &Plan, desc: &GemmDesc, stored: u32) -> Result<f64, String> {
    let routed = (stored > 0).then(|| stored / desc.groups.max(1));
    Ok(profile_plan_with(ctx, machine, plan, desc, None, routed)?.seconds)
}

/// [`time_plan`]'s whole timing report.
pub fn profile_plan(ctx: &Context, machine: &Machine, plan: &Plan, desc: &GemmDesc) -> Result<std::sync::Arc<amdgpu_emu::timing::TimingReport>, String> {
    profile_plan_with(ctx, machine, plan, desc, None, None)
}

/// [`profile_plan`], a masked plan's group row counts drawn from `masked_seed`
/// ([`crate::operands::random_masked_counts`]) instead of the even spread
/// ([`crate::operands::masked_count`]) where it is given, and a contiguous split-K plan's
/// groups holding `routed` routed rows each where it is given (the rest padding).
pub fn profile_plan_with(
    ctx: &Context,
    machine: &Machine,
    plan: &Plan,
    desc: &GemmDesc,
    masked_seed: Option<u64>,
    routed: Option<u32>,
) -> Result<std::sync::Arc<amdgpu_emu::timing::TimingReport>, String> {
    let (m, n, k) = (desc.m, desc.n, desc.k);
    let e = |x: fp8gemm::Error| x.to_string();
    let full = plan.grid <= machine.xcds * machine.cus_per_xcd;
    let options = SimOptions { scope: if full { Scope::Full } else { Scope::OneXcd }, ..SimOptions::default() };
    let mode = TimingMode { machine: machine.clone(), options };
    let mut stream = Stream::new(ctx).map_err(e)?;
    let ws = plan.workspace_floats(ctx.arch());
    if ws > 0 {
        stream.set_workspace(Some(fp8gemm::Workspace::new(ctx, ws as usize).map_err(e)?)).map_err(e)?;
    }
    if select::contiguous_splitk_twin(plan.kernel).is_some() {
        launch_contiguous(ctx, &mut stream, plan, desc, mode, routed)?;
    } else if select::is_deepgemm_grouped(plan.kernel) {
        launch_grouped(ctx, &mut stream, plan, desc, mode, masked_seed)?;
    } else if plan.kernel.problem == Problem::KGrouped {
        launch_kgrouped(ctx, &mut stream, plan, desc, mode)?;
    } else if plan.kernel.majors != (Major::K, Major::K) {
        // NN / TN / TT: zero operands in their majors, through their entry point (whose plan
        // is this kernel: the only candidate of its layout).
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let nkb = ku / 128;
        let a_data = ctx.alloc_zeroed::<u8>(mu * ku).map_err(e)?;
        let a_scales = ctx.alloc_zeroed::<f32>(mu * nkb).map_err(e)?;
        let b_data = ctx.alloc_zeroed::<u8>(nu * ku).map_err(e)?;
        let b_scales = ctx.alloc_zeroed::<f32>(nu.div_ceil(128) * nkb).map_err(e)?;
        let mut d = ctx.alloc_zeroed::<half::bf16>(mu * nu).map_err(e)?;
        let (a, b) = ((a_data.as_slice(), a_scales.as_slice()), (b_data.as_slice(), b_scales.as_slice()));
        emu::set_timing(Some(mode));
        // The operands' FP8 format is the device's (E4M3FNUZ on gfx942, E4M3FN on gfx950).
        let run = match ctx.arch() {
            Arch::Gfx950 => launch_layout::<fp8gemm::fp8::E4M3Fn>(&stream, plan.kernel.majors, a, b, (mu, nu, ku), &mut d),
            _ => launch_layout::<fp8gemm::fp8::E4M3Fnuz>(&stream, plan.kernel.majors, a, b, (mu, nu, ku), &mut d),
        }
        .and_then(|r| stream.synchronize().map(|_| r));
        emu::set_timing(None);
        let cfg = run.map_err(e)?.config.ok_or("nothing was launched")?;
        if cfg.kernel != plan.kernel.name() {
            return Err(format!("the {} entry point ran {} where {} was asked for", plan.label(), cfg.kernel, plan.kernel.name()));
        }
    } else {
        let mut ops = Operands::with_layout(ctx, OpProblem::Dense { m: m as usize, n: n as usize, k: k as usize }, plan.kernel.weights).map_err(e)?;
        emu::set_timing(Some(mode));
        let run = ops.launch_plan(&stream, plan);
        emu::set_timing(None);
        run.map_err(e)?;
    }
    emu::last_launch_timing().ok_or_else(|| "the timed launch left no report".to_string())
}

/// Launches `plan` of a DeepGEMM m-grouped kernel ([`select::is_deepgemm_grouped`]) through its entry point
/// on zero operands laid out as `desc` describes (masked: `desc.groups` groups of capacity
/// `desc.m` = [`crate::operands::masked_capacity`]`(expected_m)` with counts spread around
/// `expected_m` ([`crate::operands::masked_count`]), as a decode step sees them; contiguous:
/// `desc.m` rows in `desc.groups` groups of whole 128-row blocks, each ending in [`crate::operands::padding_rows`] rows of
/// padding, as the planner's layout assumes), the plan's tile, split count and loop as the
/// stream's overrides, with the timing model `mode` on; checks that the entry point ran the
/// plan.
fn launch_grouped(ctx: &Context, stream: &mut Stream, plan: &Plan, desc: &GemmDesc, mode: TimingMode, seed: Option<u64>) -> Result<(), String> {
    let e = |x: fp8gemm::Error| x.to_string();
    let kernel = plan.kernel;
    let (n, k, g) = (desc.n as usize, desc.k as usize, desc.groups.max(1) as usize);
    let problem = if kernel.problem == Problem::MGroupedMasked {
        let expected = desc.expected_m as usize;
        if desc.m as usize != crate::operands::masked_capacity(expected) {
            return Err(format!(
                "{}: m_max {} is not the capacity {} of expected_m {expected}",
                kernel.name(),
                desc.m,
                crate::operands::masked_capacity(expected)
            ));
        }
        OpProblem::MaskedSpread { groups: g, expected, n, k, seed }
    } else {
        OpProblem::ContiguousPadded { groups: g, rows: desc.m as usize / g, n, k }
    };
    let mut ops = Operands::with_layout(ctx, problem, kernel.weights).map_err(e)?;
    let mut o = Overrides::NONE.with_tile(kernel.block_m, kernel.block_n).with_split(plan.splits).with_remap(plan.remap);
    if kernel.weights == fp8gemm::WeightLayout::Preshuffled {
        o = o.with_bs_pipelined(kernel.pipelined());
    }
    stream.set_overrides(o);
    emu::set_timing(Some(mode));
    let run = ops.launch(stream);
    emu::set_timing(None);
    let cfg = run.map_err(e)?.config.ok_or("nothing was launched")?;
    if cfg.kernel != kernel.name() || cfg.grid != plan.grid || cfg.remap != plan.remap {
        return Err(format!(
            "the m-grouped entry point ran {} (grid {}, {:?}) where {} (grid {}, {:?}) was asked for",
            cfg.kernel,
            cfg.grid,
            cfg.remap,
            plan.label(),
            plan.grid,
            plan.remap
        ));
    }
    Ok(())
}

/// Launches `plan` of a k-grouped kernel through its entry point on zero operands: `desc.groups`
/// groups of `desc.m × desc.n` f32 outputs over `desc.k` tokens, every group `desc.k /
/// desc.groups` of them, the plan's tile as the stream's override, with the timing model
/// `mode` on; checks that the entry point ran the plan.
fn launch_kgrouped(ctx: &Context, stream: &mut Stream, plan: &Plan, desc: &GemmDesc, mode: TimingMode) -> Result<(), String> {
    let e = |x: fp8gemm::Error| x.to_string();
    let kernel = plan.kernel;
    let (m, n, total, g) = (desc.m as usize, desc.n as usize, desc.k as usize, desc.groups.max(1) as usize);
    if !total.is_multiple_of(128 * g) {
        return Err(format!("{}: {total} tokens are not {g} groups of whole 128-token blocks", kernel.name()));
    }
    let ks = vec![total / g; g];
    let (dks, total_k) = fp8gemm::upload_ks(ctx, &ks).map_err(e)?;
    let a_data = ctx.alloc_zeroed::<u8>(total * m).map_err(e)?;
    let a_scales = ctx.alloc_zeroed::<f32>(total / 128 * m).map_err(e)?;
    let b_data = ctx.alloc_zeroed::<u8>(total * n).map_err(e)?;
    let b_scales = ctx.alloc_zeroed::<f32>(total / 128 * n).map_err(e)?;
    let mut d = ctx.alloc_zeroed::<f32>(g * m * n).map_err(e)?;
    stream.set_overrides(Overrides::NONE.with_tile(kernel.block_m, kernel.block_n));
    /// FP8 bytes and their scales on the device.
    type Operand<'a> = (&'a fp8gemm::DeviceBuffer<u8>, &'a fp8gemm::DeviceBuffer<f32>);
    /// The launch with operands of the device's FP8 format `F`.
    fn go<F: fp8gemm::fp8::Fp8Format>(
        stream: &Stream,
        (a, b): (Operand<'_>, Operand<'_>),
        d: &mut fp8gemm::DeviceBuffer<f32>,
        ks: &fp8gemm::DeviceBuffer<i32>,
        (m, n, total): (usize, usize, usize),
    ) -> Result<fp8gemm::GemmRun, fp8gemm::Error> {
        let av = fp8gemm::KGroupedOperandView::<F>::new(a.0.as_slice(), a.1.as_slice(), m, total)?;
        let bv = fp8gemm::KGroupedOperandView::<F>::new(b.0.as_slice(), b.1.as_slice(), n, total)?;
        fp8gemm::k_grouped_fp8_gemm_tn_contiguous(stream, av, bv, d, ks.as_slice(), total, None)
    }
    let ops = ((&a_data, &a_scales), (&b_data, &b_scales));
    emu::set_timing(Some(mode));
    let run = match ctx.arch() {
        Arch::Gfx950 => go::<fp8gemm::fp8::E4M3Fn>(stream, ops, &mut d, &dks, (m, n, total_k)),
        _ => go::<fp8gemm::fp8::E4M3Fnuz>(stream, ops, &mut d, &dks, (m, n, total_k)),
    }
    .and_then(|r| stream.synchronize().map(|_| r));
    emu::set_timing(None);
    let cfg = run.map_err(e)?.config.ok_or("nothing was launched")?;
    if cfg.kernel != kernel.name() {
        return Err(format!("the k-grouped entry point ran {} where {} was asked for", cfg.kernel, plan.label()));
    }
    Ok(())
}

/// Launches `plan` of the contiguous split-K family (a plain kernel through
/// [`fp8gemm::m_grouped_fp8_gemm_nt_contiguous_gathered`], one with the activation epilogue
/// through [`fp8gemm::m_grouped_fp8_gemm_nt_contiguous_gathered_silu`], with the plan's tile,
/// loop and split count as the stream's overrides) on zero operands laid out as `desc` describes: `desc.m`
/// rows, `desc.groups` groups of `m / groups` rows each (a multiple of the tile height), every
/// row in use and read from its own row of A (the row map the identity), with the timing model
/// `mode` on; checks that the entry point ran the plan.
fn launch_contiguous(ctx: &Context, stream: &mut Stream, plan: &Plan, desc: &GemmDesc, mode: TimingMode, routed: Option<u32>) -> Result<(), String> {
    let e = |x: fp8gemm::Error| x.to_string();
    let kernel = plan.kernel;
    let (m, n, k, g) = (desc.m as usize, desc.n as usize, desc.k as usize, desc.groups.max(1) as usize);
    let bm = kernel.block_m as usize;
    if !m.is_multiple_of(bm * g) {
        return Err(format!("{}: {m} rows are not {g} groups of whole {bm}-row tiles", kernel.name()));
    }
    let per = m / g;
    let routed = routed.map_or(per, |r| r as usize);
    if routed == 0 || routed > per {
        return Err(format!("{}: {routed} routed rows in groups of {per}", kernel.name()));
    }
    let nkb = k / 128;
    let a_data = ctx.alloc_zeroed::<u8>(m * k).map_err(e)?;
    let a_scales = ctx.alloc_zeroed::<f32>(m * nkb).map_err(e)?;
    let rows: Vec<i32> = (0..m as i32).collect();
    // Each group's rows past its routed ones are padding (−1: no store), as the MoE layer's.
    let groups: Vec<i32> = (0..m).map(|r| if r % per < routed { (r / per) as i32 } else { -1 }).collect();
    let row_src = ctx.upload(&rows).map_err(e)?;
    let m_indices = ctx.upload(&groups).map_err(e)?;
    let mut d = ctx.alloc_zeroed::<half::bf16>(m * n).map_err(e)?;
    stream.set_overrides(Overrides::NONE.with_split(plan.splits).with_bs_pipelined(kernel.pipelined()));
    /// The launch with operands of the device's FP8 format `F`.
    fn go<F: fp8gemm::fp8::Fp8Format>(
        ctx: &Context,
        stream: &Stream,
        (a_data, a_scales): (&fp8gemm::DeviceBuffer<u8>, &fp8gemm::DeviceBuffer<f32>),
        (row_src, m_indices): (&fp8gemm::DeviceBuffer<i32>, &fp8gemm::DeviceBuffer<i32>),
        d: &mut fp8gemm::DeviceBuffer<half::bf16>,
        (m, n, k, g, bm): (usize, usize, usize, usize, usize),
        variant: select::ContiguousVariant,
    ) -> Result<fp8gemm::GemmRun, fp8gemm::Error> {
        let b = fp8gemm::DeviceGroupedWeights::<F>::alloc_preshuffled(ctx, g, n, k)?;
        let a = fp8gemm::ActivationsView::<F>::new(a_data.as_slice(), a_scales.as_slice(), m, k)?;
        if matches!(variant, select::ContiguousVariant::Silu | select::ContiguousVariant::SiluQa) {
            // The gate·up kernels with the activation epilogue; the `_qa_` one reads bf16
            // token rows (one per row of the problem) and quantizes them in its A loads.
            let qa = variant == select::ContiguousVariant::SiluQa;
            let inter = n / 2;
            let a_bf16 = ctx.alloc_zeroed::<half::bf16>(if qa { m * k } else { 1 })?;
            let mut act = ctx.alloc_zeroed::<u8>(m * inter)?;
            let mut act_sf = ctx.alloc_zeroed::<f32>(m * (inter / 128))?;
            let mut counters = ctx.alloc_zeroed::<u32>((m / bm) * (inter / 128))?;
            let epilogue = (act.slice_mut(..)?, act_sf.slice_mut(..)?, counters.slice_mut(..)?);
            let a_bf16 = qa.then(|| a_bf16.as_slice());
            return fp8gemm::m_grouped_fp8_gemm_nt_contiguous_gathered_silu(
                stream,
                a,
                a_bf16,
                row_src.as_slice(),
                (&b).into(),
                d,
                m_indices.as_slice(),
                epilogue,
                bm,
                g,
            );
        }
        fp8gemm::m_grouped_fp8_gemm_nt_contiguous_gathered(stream, a, row_src.as_slice(), &b, d, m_indices.as_slice(), bm, g)
    }
    let (ops, maps, dims) = ((&a_data, &a_scales), (&row_src, &m_indices), (m, n, k, g, bm));
    let variant = variant_of(kernel);
    emu::set_timing(Some(mode));
    // The operands' FP8 format is the device's (E4M3FNUZ on gfx942, E4M3FN on gfx950).
    let run = match ctx.arch() {
        Arch::Gfx950 => go::<fp8gemm::fp8::E4M3Fn>(ctx, stream, ops, maps, &mut d, dims, variant),
        _ => go::<fp8gemm::fp8::E4M3Fnuz>(ctx, stream, ops, maps, &mut d, dims, variant),
    }
    .and_then(|r| stream.synchronize().map(|_| r));
    emu::set_timing(None);
    let cfg = run.map_err(e)?.config.ok_or("nothing was launched")?;
    if cfg.kernel != kernel.name() || cfg.grid != plan.grid {
        return Err(format!("the contiguous entry point ran {} (grid {}) where {} (grid {}) was asked for", cfg.kernel, cfg.grid, plan.label(), plan.grid));
    }
    Ok(())
}

/// Kernel `e`'s L2 traffic per counted byte ([`select::KernelCost::l2_block_scale`] and
/// `l2_other_scale`): the timing model's L2 bytes `T` of two launches (`4·BM × 16·BN` at
/// K = 1024 and 4096, the kernel's first candidate schedule: data-parallel, split 2, or one wave
/// of stream-K; grids whose workgroups divide evenly over the XCDs, so the busiest XCD's count
/// is an eighth of the launch's) solved for `T = a·block + c·other` over what the features
/// count ([`Features::l2_block_bytes`], [`Features::l2_other_bytes`]), `a, c ≥ 0`.
fn l2_scales(ctx: &Context, machine: &Machine, e: &'static KernelEntry, arch: Arch, cus: u32) -> Result<(f64, f64), String> {
    let xcds = f64::from(fp8gemm_device::tile::NUM_XCDS);
    let mut rows = Vec::new();
    for k in [1024, 4096] {
        let (m, n) = (4 * e.block_m, 16 * e.block_n);
        // A contiguous split-K kernel: 4 groups of one row tile each.
        let desc = if select::contiguous_splitk_twin(e).is_some() {
            GemmDesc { cus, ..GemmDesc::m_grouped_contiguous(m, n, k, 4, arch) }
        } else if e.problem == Problem::MGroupedMasked {
            // 4 groups expected at one row tile each.
            GemmDesc { cus, ..crate::operands::masked_spread_desc(4, e.block_m, n, k, arch) }
        } else if e.problem == Problem::KGrouped {
            // One group of `m × n` outputs over K tokens.
            GemmDesc::dense(m, n, k, arch).with_cus(cus)
        } else if select::is_deepgemm_grouped(e) {
            // 4 groups of one 128-row block each.
            let rows = 4 * fp8gemm_device::tile::M_ALIGNMENT_CONTIGUOUS;
            GemmDesc { cus, ..GemmDesc::m_grouped_contiguous(rows, n, k, 4, arch) }
        } else {
            GemmDesc::dense(m, n, k, arch).with_cus(cus)
        };
        let plan =
            candidates_of(e, &desc).into_iter().next().ok_or_else(|| format!("{}: no candidate at {m}x{n}x{k} to measure its L2 traffic on", e.name()))?;
        let r = profile_plan(ctx, machine, &plan, &desc)?;
        let f = Features::of(&plan, &desc);
        rows.push((f.l2_block_bytes * xcds, f.l2_other_bytes * xcds, r.l2_bytes));
    }
    let [(p1, f1, t1), (p2, f2, t2)] = rows[..] else { unreachable!("two launches") };
    let det = p1 * f2 - p2 * f1;
    let (a, c) = if det.abs() > 1e-9 * p1 * f2 { ((t1 * f2 - t2 * f1) / det, (p1 * t2 - p2 * t1) / det) } else { (f64::NAN, f64::NAN) };
    if a.is_finite() && c.is_finite() && a > 0.0 && c >= 0.0 {
        Ok((a, c))
    } else {
        // The other bytes explain nothing here: all of the traffic per tile byte.
        Ok(((t1 * p1 + t2 * p2) / (p1 * p1 + p2 * p2), 0.0))
    }
}

/// Every plan of kernel `e` for `desc` with every split count (dense: the selector's
/// candidates of `e`'s layout and majors; the contiguous split-K family:
/// [`select::contiguous_splitk_candidates`] of `e`'s tile and loop, `desc.groups` active
/// groups).
fn candidates_of(e: &'static KernelEntry, desc: &GemmDesc) -> Vec<Plan> {
    let all = if select::contiguous_splitk_twin(e).is_some() {
        let q = select::ContiguousQuery {
            rows: desc.m,
            n: desc.n,
            k: desc.k,
            active: desc.groups,
            arch: desc.arch,
            cus: desc.cus,
            available: u64::MAX,
            forced: None,
            variant: variant_of(e),
            pipelined: Some(e.pipelined()),
            bytes: None,
            routing: None,
        };
        select::contiguous_splitk_candidates(Some(e.block_m), &q)
    } else if select::is_deepgemm_grouped(e) {
        select::grouped_candidates(desc, e.weights)
    } else if e.problem == Problem::KGrouped {
        let o = Overrides::NONE.with_tile(e.block_m, e.block_n);
        select::plan_kgrouped(desc.m, desc.n, desc.groups, u64::from(desc.k), desc.arch, desc.cus, &o).into_iter().collect()
    } else {
        select::candidates_all_splits(desc, e.weights, e.majors)
    };
    all.into_iter().filter(|p| std::ptr::eq(p.kernel, e)).collect()
}

/// Draws a contiguous split-K problem and a plan of `e` (module docs): `G` active groups
/// log-uniform in 1 … 512, rows per group log-uniform in 1 … 1024 rounded up to whole tiles,
/// N log-uniform in 256 … 16384 (a multiple of 128), K as the dense draws; redrawn past
/// 64 tiles per CU or `max_blocks` as those.
fn draw_contiguous(
    rng: &mut StdRng,
    e: &'static KernelEntry,
    arch: Arch,
    cus: u32,
    max_blocks: u64,
    (lo, hi): (u32, u32),
    padded: bool,
) -> Option<(GemmDesc, Plan, u32)> {
    let nkb = log_uniform(rng, f64::from(lo), f64::from(hi)).round() as u32;
    let n = ((log_uniform(rng, 256.0, 16384.0) / 128.0).round() as u32).max(1) * 128;
    let g = log_uniform(rng, 1.0, 512.0).round().max(1.0) as u32;
    let routed = (log_uniform(rng, 1.0, 1024.0).round() as u32).max(1);
    let per = routed.div_ceil(e.block_m) * e.block_m;
    let m = g.checked_mul(per)?;
    // At most 64 tiles per CU: an MoE layer's down GEMM at prefill runs tens of short tiles
    // per CU (257 experts, 1024 tokens: 40).
    let desc = GemmDesc { cus, ..GemmDesc::m_grouped_contiguous(m, n, nkb * 128, g, arch) };
    // With `padded`, each group's rows past `routed` are padding, as the MoE layer's.
    let stored = if padded && routed < per { g.checked_mul(routed)? } else { 0 };
    pick_within(rng, e, desc, e.tiles(m, n), nkb, max_blocks).map(|(d, p)| (d, p, stored))
}

/// Whether `e` is one of the MoE layer's gate·up kernels with the activation epilogue
/// (`…_splitk_silu_bs_*`; the `_qa_` one also quantizes bf16 token rows in its A loads).
fn is_silu(e: &KernelEntry) -> bool {
    matches!(e.spec, registry::Spec::ContiguousSilu(_) | registry::Spec::ContiguousSiluQa(_))
}

/// The contiguous split-K variant kernel `e` is planned as.
fn variant_of(e: &KernelEntry) -> select::ContiguousVariant {
    match e.spec {
        registry::Spec::ContiguousSilu(_) => select::ContiguousVariant::Silu,
        registry::Spec::ContiguousSiluQa(_) => select::ContiguousVariant::SiluQa,
        registry::Spec::ContiguousScatter(_) => select::ContiguousVariant::Scatter,
        _ => select::ContiguousVariant::Plain,
    }
}

/// Draws a launch of the gate·up kernel `e` with the activation epilogue ([`is_silu`]) as the
/// MoE layer runs it: `G` active groups log-uniform in 1 … 64, routed rows per group
/// log-uniform in 1 … 64 (rounded up to whole tiles, the rest padding), `N = 2·inter` with
/// `inter` log-uniform in 128 … 4096 (a multiple of 128), K as the dense draws; only launches
/// that fit one round of the device (where the layer runs these kernels), redrawn otherwise.
fn draw_silu(rng: &mut StdRng, e: &'static KernelEntry, arch: Arch, cus: u32, max_blocks: u64, (lo, hi): (u32, u32)) -> Option<(GemmDesc, Plan, u32)> {
    let nkb = log_uniform(rng, f64::from(lo), f64::from(hi)).round() as u32;
    let inter = ((log_uniform(rng, 128.0, 4096.0) / 128.0).round() as u32).max(1) * 128;
    let g = log_uniform(rng, 1.0, 64.0).round().max(1.0) as u32;
    let routed = (log_uniform(rng, 1.0, 64.0).round() as u32).max(1);
    let per = routed.div_ceil(e.block_m) * e.block_m;
    let m = g.checked_mul(per)?;
    let desc = GemmDesc { cus, ..GemmDesc::m_grouped_contiguous(m, 2 * inter, nkb * 128, g, arch) };
    let (d, p) = pick_within(rng, e, desc, e.tiles(m, 2 * inter), nkb, max_blocks)?;
    let round = u64::from(cus) * u64::from(e.slots_per_cu(arch).unwrap_or(1));
    // Groups without padding rows store every row (0: no padding).
    let stored = if routed < per { g.checked_mul(routed)? } else { 0 };
    (u64::from(p.grid) <= round).then_some((d, p, stored))
}

/// `desc` with a random candidate plan of `e`, unless its `tiles` tiles of `nkb` K blocks pass
/// 64 tiles per CU or `max_blocks` (in 64 × 128-tile equivalents), or `e` has no candidate.
fn pick_within(rng: &mut StdRng, e: &'static KernelEntry, desc: GemmDesc, tiles: u64, nkb: u32, max_blocks: u64) -> Option<(GemmDesc, Plan)> {
    if tiles > 64 * u64::from(desc.cus) || tiles * u64::from(nkb) * u64::from(e.block_m * e.block_n) > max_blocks * 64 * 128 {
        return None;
    }
    let cands = candidates_of(e, &desc);
    if cands.is_empty() {
        return None;
    }
    let p = cands[rng.random_range(0..cands.len())];
    Some((desc, p))
}

/// Draws a DeepGEMM m-grouped problem and a plan of `e` ([`select::is_deepgemm_grouped`]): `G` groups
/// log-uniform in 1 … 256, rows per group log-uniform in 1 … 1024 (masked: `expected_m`, the
/// capacity `⌈1.3·expected_m⌉`, counts spread around it; contiguous: rounded up to whole
/// 128-row blocks), N log-uniform in 256 … 16384 (a multiple of 128), K as the dense draws;
/// redrawn past 64 tiles per CU or `max_blocks` ([`pick_within`]).
fn draw_grouped(rng: &mut StdRng, e: &'static KernelEntry, arch: Arch, cus: u32, max_blocks: u64, (lo, hi): (u32, u32)) -> Option<(GemmDesc, Plan)> {
    let nkb = log_uniform(rng, f64::from(lo), f64::from(hi)).round() as u32;
    let n = ((log_uniform(rng, 256.0, 16384.0) / 128.0).round() as u32).max(1) * 128;
    let g = log_uniform(rng, 1.0, 256.0).round().max(1.0) as u32;
    let r = (log_uniform(rng, 1.0, 1024.0).round() as u32).max(1);
    let desc = if e.problem == Problem::MGroupedMasked {
        GemmDesc { cus, ..crate::operands::masked_spread_desc(g, r, n, nkb * 128, arch) }
    } else {
        let align = fp8gemm_device::tile::M_ALIGNMENT_CONTIGUOUS;
        GemmDesc { cus, ..GemmDesc::m_grouped_contiguous(g.checked_mul(r.div_ceil(align) * align)?, n, nkb * 128, g, arch) }
    };
    let rows = if e.problem == Problem::MGroupedMasked { u64::from(g) * u64::from(desc.m.div_ceil(e.block_m) * e.block_m) } else { u64::from(desc.m) };
    let tiles = rows.div_ceil(u64::from(e.block_m)) * u64::from(n.div_ceil(e.block_n));
    pick_within(rng, e, desc, tiles, nkb, max_blocks)
}

/// Draws a k-grouped problem for `e` (a weight-gradient GEMM): `G` groups log-uniform in
/// 1 … 64, M and N log-uniform in 256 … 8192 (multiples of 64), tokens per group 128·b with b
/// log-uniform in the K-block range; redrawn past 64 tiles per CU or `max_blocks` as the
/// dense draws. The sample's desc is `m × n` over `k` = all tokens in `groups` groups.
fn draw_kgrouped(rng: &mut StdRng, e: &'static KernelEntry, arch: Arch, cus: u32, max_blocks: u64, (lo, hi): (u32, u32)) -> Option<(GemmDesc, Plan)> {
    let nkb = log_uniform(rng, f64::from(lo), f64::from(hi)).round() as u32;
    let g = log_uniform(rng, 1.0, 64.0).round().max(1.0) as u32;
    let dim = |rng: &mut StdRng| ((log_uniform(rng, 256.0, 8192.0) / 64.0).round() as u32).max(1) * 64;
    let (m, n) = (dim(rng), dim(rng));
    let tiles = u64::from(g) * e.tiles(m, n);
    if tiles > 64 * u64::from(cus) || tiles * u64::from(nkb) * u64::from(e.block_m * e.block_n) > max_blocks * 64 * 128 {
        return None;
    }
    let desc = GemmDesc { groups: g, ..GemmDesc::dense(m, n, g.checked_mul(nkb * 128)?, arch).with_cus(cus) };
    let p = candidates_of(e, &desc).into_iter().next()?;
    Some((desc, p))
}

fn log_uniform(rng: &mut StdRng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + rng.random::<f64>() * (hi.ln() - lo.ln())).exp()
}

/// Draws a shape and a plan of `e` (module docs), or `None` if the draw gave no candidate.
fn draw(rng: &mut StdRng, e: &'static KernelEntry, arch: Arch, cus: u32, max_blocks: u64, (lo, hi): (u32, u32)) -> Option<(GemmDesc, Plan)> {
    let nkb = log_uniform(rng, f64::from(lo), f64::from(hi)).round() as u32;
    let n = ((log_uniform(rng, 256.0, 32768.0) / 64.0).round() as u32).max(1) * 64;
    let (lo, hi) = match e.schedule {
        ScheduleKind::DataParallel => (0.05, 12.0),
        ScheduleKind::SplitK => (0.02, 1.5),
        // Down to decode sizes: the selector offers stream-K there too.
        ScheduleKind::StreamK => (0.02, 12.0),
    };
    let per_cu = log_uniform(rng, lo, hi);
    let tiles_n = n.div_ceil(e.block_n);
    let tiles = (per_cu * f64::from(cus)).max(1.0);
    let m_tiles = (tiles / f64::from(tiles_n)).max(1.0 / f64::from(e.block_m));
    let mut m = ((m_tiles * f64::from(e.block_m)) * (0.75 + 0.5 * rng.random::<f64>())).round().max(1.0) as u32;
    if e.majors.0 == Major::Mn {
        // An MN-major A: M a multiple of 8 (`fp8gemm::dense_layouts::MN_ALIGN`).
        m = m.div_ceil(8) * 8;
    }
    let desc = GemmDesc::dense(m, n, nkb * 128, arch).with_cus(cus);
    // Simulation time grows with the MFMA work: count blocks in 64 × 128-tile equivalents.
    if e.tiles(m, n) * u64::from(nkb) * u64::from(e.block_m * e.block_n) > max_blocks * 64 * 128 {
        return None;
    }
    let cands: Vec<Plan> = select::candidates_with_majors(&desc, e.weights, e.majors).into_iter().filter(|p| std::ptr::eq(p.kernel, e)).collect();
    if cands.is_empty() {
        return None;
    }
    let p = cands[rng.random_range(0..cands.len())];
    Some((desc, p))
}

fn parse_samples(path: &Path) -> Result<Vec<Timed>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut v = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        let bad = || format!("{}:{}: expected kernel,m,n,k,splits,dp,g,modelled_s[,groups[,stored]]", path.display(), i + 1);
        if !(8..=10).contains(&f.len()) {
            return Err(bad());
        }
        let kernel = registry::by_name(f[0]).ok_or_else(|| format!("{}:{}: unknown kernel {}", path.display(), i + 1, f[0]))?.name();
        let u = |j: usize| f[j].trim().parse::<u32>().map_err(|_| bad());
        let groups = if f.len() >= 9 { u(8)? } else { 0 };
        let stored = if f.len() == 10 { u(9)? } else { 0 };
        if stored > 0 && (groups == 0 || !stored.is_multiple_of(groups) || stored >= u(1)?) {
            return Err(format!(
                "{}:{}: {stored} stored rows are not fewer than the {} rows, the same in each of {groups} groups",
                path.display(),
                i + 1,
                u(1)?
            ));
        }
        v.push(Timed {
            kernel,
            m: u(1)?,
            n: u(2)?,
            k: u(3)?,
            splits: u(4)?,
            dp: u(5)?,
            g: u(6)?,
            groups,
            seconds: f[7].trim().parse().map_err(|_| bad())?,
            stored,
        });
    }
    Ok(v)
}

/// The plan a sample row describes.
pub fn plan_of(t: &Timed, arch: Arch, cus: u32) -> Option<(GemmDesc, Plan)> {
    let e = registry::by_name(t.kernel)?;
    let desc = if e.problem == Problem::MGroupedMasked {
        GemmDesc { cus, ..crate::operands::masked_spread_desc(t.groups.max(1), t.m, t.n, t.k, arch) }
    } else if e.problem == Problem::KGrouped {
        GemmDesc { groups: t.groups.max(1), ..GemmDesc::dense(t.m, t.n, t.k, arch).with_cus(cus) }
    } else if t.groups > 0 {
        GemmDesc { cus, ..GemmDesc::m_grouped_contiguous(t.m, t.n, t.k, t.groups, arch) }
    } else {
        GemmDesc::dense(t.m, t.n, t.k, arch).with_cus(cus)
    };
    candidates_of(e, &desc)
        .into_iter()
        .find(|p| p.splits == t.splits && p.stream_k.map_or((0, 0), |s| (s.dp_tiles, s.sk_wgs)) == (t.dp, t.g))
        .map(|p| (desc, p))
}

/// Runs `tune --cost`.
pub fn run(a: CostArgs) -> Result<(), String> {
    let machine = crate::profile::machine_by_name(&a.machine)?;
    let cus = machine.xcds * machine.cus_per_xcd;
    let (ctx, arch) = crate::profile::context_for(&machine)?;
    // `--only`: the kernels sampled or fitted, from sample files too (the others keep the
    // shipped model's rows).
    let keep = |name: &str| {
        a.only.as_deref().is_none_or(|o| o.split(',').any(|o| name.contains(o))) && a.skip.as_deref().is_none_or(|o| !o.split(',').any(|o| name.contains(o)))
    };
    let kernels: Vec<&'static KernelEntry> = registry::KERNELS
        .iter()
        .filter(|e| {
            // Dense kernels, the plain contiguous split-K ones and those with the activation
            // epilogue (the scatter variants take their plain twin's coefficients:
            // `CostModel::cost_of`), DeepGEMM's m-grouped kernels and the k-grouped ones.
            let sampled = matches!(e.problem, Problem::Dense | Problem::KGrouped)
                || matches!(e.spec, registry::Spec::ContiguousSplitK(_) | registry::Spec::ContiguousSilu(_) | registry::Spec::ContiguousSiluQa(_))
                || select::is_deepgemm_grouped(e);
            sampled && keep(e.name())
        })
        .collect();
    if let Some(splits) = &a.chains {
        let splits = if splits.is_empty() { &CHAIN_SPLITS[..] } else { &splits[..] };
        return print_chains(&ctx, &machine, arch, cus, &kernels, splits, a.chain_rows.max(1));
    }
    let timed: Vec<Timed> = match &a.from_samples {
        Some(p) => {
            let old = p.iter().map(|f| parse_samples(f)).collect::<Result<Vec<_>, _>>()?.concat();
            if a.retime { retime(&ctx, &machine, arch, cus, &old, a.samples_out.as_deref())? } else { old }
        }
        None => {
            let mut out = Vec::new();
            let start = std::time::Instant::now();
            for (ki, e) in kernels.iter().enumerate() {
                let mut rng = StdRng::seed_from_u64(0x5eed_0000 + 1000 * a.seed + ki as u64);
                // The contiguous split-K kernels draw grouped problems of their own.
                let grouped = select::contiguous_splitk_twin(e).is_some();
                let mut got = 0;
                let mut tries = 0;
                while got < a.samples && tries < 200 * a.samples {
                    tries += 1;
                    let plain = |d: Option<(GemmDesc, Plan)>| d.map(|(d, p)| (d, p, 0));
                    let drawn = if is_silu(e) {
                        draw_silu(&mut rng, e, arch, cus, a.max_blocks, a.k_blocks)
                    } else if grouped {
                        draw_contiguous(&mut rng, e, arch, cus, a.max_blocks, a.k_blocks, a.padded)
                    } else if select::is_deepgemm_grouped(e) {
                        plain(draw_grouped(&mut rng, e, arch, cus, a.max_blocks, a.k_blocks))
                    } else if e.problem == Problem::KGrouped {
                        plain(draw_kgrouped(&mut rng, e, arch, cus, a.max_blocks, a.k_blocks))
                    } else {
                        plain(draw(&mut rng, e, arch, cus, a.max_blocks, a.k_blocks))
                    };
                    let Some((desc, p, stored)) = drawn else { continue };
                    let s = time_sample(&ctx, &machine, &p, &desc, stored)?;
                    let (dp, g) = p.stream_k.map_or((0, 0), |s| (s.dp_tiles, s.sk_wgs));
                    eprintln!(
                        "[{:>6.0} s] {:<44} {:>6}x{:<6}x{:<6} {:<22} {:>9.2} µs modelled",
                        start.elapsed().as_secs_f64(),
                        e.name(),
                        desc.m,
                        desc.n,
                        desc.k,
                        p.label(),
                        s * 1e6
                    );
                    let groups = if e.problem == Problem::Dense { 0 } else { desc.groups };
                    // A masked sample records its expected_m (its capacity follows from it).
                    let m = if e.problem == Problem::MGroupedMasked { desc.expected_m } else { desc.m };
                    out.push(Timed { kernel: e.name(), m, n: desc.n, k: desc.k, splits: p.splits, dp, g, groups, seconds: s, stored });
                    got += 1;
                }
                if let Some(path) = &a.samples_out {
                    write_samples(path, &machine, &out)?;
                }
            }
            out
        }
    };
    let timed: Vec<Timed> = timed.into_iter().filter(|t| keep(t.kernel)).collect();
    let launches = timed.len();
    let samples = timed.into_iter().map(|t| Resolved::new(t, arch, cus)).collect::<Result<Vec<_>, _>>()?;
    if a.shipped {
        let model = CostModel::for_arch(arch).map_err(|e| e.to_string())?;
        println!("the shipped cost model of {} judged on these samples (not fitted on them):", arch.name());
        report(&samples, model);
        if let Some(p) = &a.residuals {
            write_residuals(p, &[("judged", &samples)], model)?;
        }
        return Ok(());
    }
    let mut scales: HashMap<&'static str, (f64, f64)> = HashMap::new();
    for r in &samples {
        if !scales.contains_key(r.t.kernel) {
            let e = r.plan.kernel;
            let x = l2_scales(&ctx, &machine, e, arch, cus)?;
            eprintln!("{:<44} L2 traffic {:.3}× the tile bytes + {:.3}× the output and partial bytes (modelled)", e.name(), x.0, x.1);
            scales.insert(e.name(), x);
        }
    }
    let chains = match &a.chain_lines {
        Some(p) => chain_lines(p, machine.name)?,
        None => HashMap::new(),
    };
    let (samples, judged): (Vec<Resolved>, Vec<Resolved>) = match a.judge {
        Some(j) => samples.into_iter().partition(|r| !j.judged(&r.t)),
        None => (samples, Vec::new()),
    };
    if a.judge.is_some() && (samples.is_empty() || judged.is_empty()) {
        return Err(format!("--judge: the split leaves {} samples to fit and {} to judge; both sides need samples", samples.len(), judged.len()));
    }
    let model = match &a.only {
        // One kernel (a new registry row): fitted at the shipped model's bandwidth and merged
        // into it.
        Some(_) => {
            let mut base = CostModel::for_arch(arch).map_err(|e| e.to_string())?.clone();
            let rates = MemoryRates { fabric_bytes_per_s: machine.fabric_bytes_per_s, ..base.rates() };
            let fitted = if a.own_memory {
                fit_own_memory(&samples, &scales, &machine, arch, rates, &chains)?
            } else {
                fit_at(&samples, &scales, &machine, arch, rates, &chains)?
            };
            // Only split launches' features differ between the versions: merging data-parallel
            // kernels keeps the shipped file's version (and so its other rows' estimates).
            let splits = fitted.kernels.keys().any(|k| registry::by_name(k).is_none_or(|e| e.schedule != ScheduleKind::DataParallel));
            if base.features < select::FEATURES && splits {
                // The merged file declares the current features: the rows it keeps were fitted
                // on version `base.features`, which differs only for split launches' fabric
                // bytes (`Features::fabric_v1_extra`).
                eprintln!(
                    "note: the shipped {} model was fitted on features version {}; the merged file declares version {} (split launches' fabric bytes of the kernels not refitted here change)",
                    arch.name(),
                    base.features,
                    select::FEATURES
                );
                base.features = select::FEATURES;
            }
            base.kernels.extend(fitted.kernels);
            base
        }
        None => fit(&samples, &scales, &machine, arch, &chains)?,
    };
    report(&samples, &model);
    if let Some(j) = a.judge {
        println!("out of sample: the {} samples with {} ≥ {} (not fitted on)", judged.len(), j.dim, j.at);
        report(&judged, &model);
    }
    if let Some(p) = &a.residuals {
        write_residuals(p, &[("fitted", &samples), ("judged", &judged)], &model)?;
    }
    let merged = a.only.as_ref().map_or(String::new(), |o| format!(" (kernels matching `--only {o}`, merged into the shipped model)"));
    let header = format!(
        "fp8gemm selector cost model for {}, written by `fp8gemm tune --cost --machine {}` from {} launches{merged} timed by the\n\
         emulator's timing model (MODELLED, not measured). Regenerate when the timing model or a kernel changes.",
        arch.name(),
        a.machine,
        launches
    );
    let csv = model.to_csv(&header);
    match &a.out {
        Some(p) => std::fs::write(p, csv).map_err(|e| format!("{}: {e}", p.display()))?,
        None => print!("{csv}"),
    }
    Ok(())
}

/// The launches of `old` (kernel, shape, schedule) timed again on the current timing model and
/// code objects (`tune --retime`); written to `samples_out` every 16 launches and at the end.
fn retime(ctx: &Context, machine: &Machine, arch: Arch, cus: u32, old: &[Timed], samples_out: Option<&Path>) -> Result<Vec<Timed>, String> {
    let start = std::time::Instant::now();
    let mut out = Vec::with_capacity(old.len());
    for (i, t) in old.iter().enumerate() {
        let (desc, plan) = plan_of(t, arch, cus).ok_or_else(|| {
            format!("sample {}x{}x{} of {} (splits {}, stream-K {}+{}) is no plan of this registry", t.m, t.n, t.k, t.kernel, t.splits, t.dp, t.g)
        })?;
        let s = time_sample(ctx, machine, &plan, &desc, t.stored)?;
        eprintln!(
            "[{:>6.0} s] {:>4}/{} {:<44} {:>6}x{:<6}x{:<6} {:<22} {:>9.2} µs modelled (was {:.2})",
            start.elapsed().as_secs_f64(),
            i + 1,
            old.len(),
            t.kernel,
            t.m,
            t.n,
            t.k,
            plan.label(),
            s * 1e6,
            t.seconds * 1e6
        );
        out.push(Timed { seconds: s, ..t.clone() });
        if let Some(path) = samples_out
            && ((i + 1) % 16 == 0 || i + 1 == old.len())
        {
            write_samples(path, machine, &out)?;
        }
    }
    Ok(out)
}

fn write_samples(path: &Path, machine: &Machine, v: &[Timed]) -> Result<(), String> {
    let mut s = format!(
        "# tune --cost samples on {} (seconds MODELLED by the timing model)\n# kernel,m,n,k,splits,dp,g,modelled_s[,groups: grouped samples (contiguous: all rows; masked: expected_m; k-grouped: m x n over k tokens)[,stored: a contiguous split-K sample's routed rows, the rest of each group padding]]\n",
        machine.name
    );
    for t in v {
        let _ = write!(s, "{},{},{},{},{},{},{},{:e}", t.kernel, t.m, t.n, t.k, t.splits, t.dp, t.g, t.seconds);
        let _ = match (t.groups, t.stored) {
            (0, _) => writeln!(s),
            (g, 0) => writeln!(s, ",{g}"),
            (g, st) => writeln!(s, ",{g},{st}"),
        };
    }
    std::fs::write(path, s).map_err(|e| format!("{}: {e}", path.display()))
}

/// A sample resolved once against the selector: its problem, plan and features.
struct Resolved {
    t: Timed,
    plan: Plan,
    features: Features,
}

impl Resolved {
    /// The sample with its plan (`plan_of`), or an error naming it.
    fn new(t: Timed, arch: Arch, cus: u32) -> Result<Resolved, String> {
        let (desc, plan) = plan_of(&t, arch, cus).ok_or_else(|| format!("sample {t:?} is not a candidate of the current selector"))?;
        let features = if is_silu(plan.kernel) || t.stored > 0 {
            // A launch whose groups end in padding rows stores `t.stored` rows; the activation
            // kernels read every routed row's own token row, gathered (bf16 for the one that
            // quantizes its A loads).
            let (rows, n, k) = (f64::from(t.m), f64::from(t.n), f64::from(t.k));
            let stored = if t.stored > 0 { f64::from(t.stored) } else { rows };
            let gathered = is_silu(plan.kernel).then_some(stored);
            select::contiguous_features_with(&plan, &desc, Some(select::ContiguousBytes::of(variant_of(plan.kernel), rows, stored, n, k, gathered, None)), None)
        } else {
            Features::of(&plan, &desc)
        };
        Ok(Resolved { features, t, plan })
    }
    /// The model's estimate over the sample's modelled time.
    fn ratio(&self, model: &CostModel) -> f64 {
        model.estimate_features(&self.plan, &self.features).0 / self.t.seconds
    }
}

/// Every kernel's coefficients at the memory figures `rates` (the fill, the HBM and per-XCD L2
/// bandwidths tried or shipped; callers pass the machine's fabric link figure). `scales`: each
/// kernel's [`l2_scales`].
fn fit_at(
    samples: &[Resolved],
    scales: &HashMap<&'static str, (f64, f64)>,
    machine: &Machine,
    arch: Arch,
    rates: MemoryRates,
    chains: &HashMap<String, (f64, f64)>,
) -> Result<CostModel, String> {
    let mut by_kernel: HashMap<&'static str, Vec<Sample>> = HashMap::new();
    for r in samples {
        by_kernel.entry(r.t.kernel).or_default().push(Sample { features: r.features, seconds: r.t.seconds });
    }
    let mut model = CostModel {
        machine: machine.name.to_string(),
        clock_hz: machine.clock_hz,
        launch_s: machine.launch_overhead_s,
        hbm_bytes_per_s: rates.hbm_bytes_per_s,
        l2_bytes_per_s: rates.l2_bytes_per_s,
        fabric_bytes_per_s: rates.fabric_bytes_per_s,
        memory_fill_s: rates.fill_s,
        kernels: HashMap::new(),
        features: select::FEATURES,
    };
    for (name, samples) in &by_kernel {
        let e = registry::by_name(name).ok_or("unregistered kernel")?;
        let slots = e.slots_per_cu(arch).unwrap_or(1);
        let scale = scales.get(name).copied().unwrap_or((1.0, 1.0));
        model.kernels.insert(
            name.to_string(),
            select::fit_kernel(samples, slots, machine.clock_hz, machine.launch_overhead_s, rates, scale, chains.get(*name).copied()),
        );
    }
    Ok(model)
}

/// Fits every kernel's coefficients (module docs): the memory fill and the HBM and L2
/// bandwidths (fractions of the machine's: 0.30 … 1.10 of its HBM peak, 0.40 … 1.00 of its
/// L2's; the fill 0 … 4 µs) of least mean |log error|.
fn fit(
    samples: &[Resolved],
    scales: &HashMap<&'static str, (f64, f64)>,
    machine: &Machine,
    arch: Arch,
    chains: &HashMap<String, (f64, f64)>,
) -> Result<CostModel, String> {
    let peak = machine.hbm_bytes_per_s;
    let l2_peak = machine.l2_bytes_per_clk * machine.clock_hz;
    // Mean |log error| over every sample (a median would let the memory-bound tail go).
    let score = |model: &CostModel| samples.iter().map(|r| r.ratio(model).ln().abs()).sum::<f64>() / samples.len().max(1) as f64;
    let mut best: Option<(f64, CostModel)> = None;
    let consider = |rates: MemoryRates, best: &mut Option<(f64, CostModel)>| -> Result<(), String> {
        let model = fit_at(samples, scales, machine, arch, rates, chains)?;
        let mean = score(&model);
        if best.as_ref().is_none_or(|(b, _)| mean < *b) {
            *best = Some((mean, model));
        }
        Ok(())
    };
    // A coarse grid (HBM 0.30 … 1.10 of the peak in steps of 0.05, L2 0.40 … 1.00 of its peak,
    // fill 0 … 3 µs in steps of 1), then a finer one around its best (HBM in quarter steps,
    // fill in quarter microseconds).
    for fill_step in 0..=3 {
        for step in 0..=16 {
            for l2_step in 0..=12 {
                let rates = MemoryRates {
                    fill_s: 1e-6 * f64::from(fill_step),
                    hbm_bytes_per_s: peak * (0.3 + 0.05 * f64::from(step)),
                    l2_bytes_per_s: l2_peak * (0.4 + 0.05 * f64::from(l2_step)),
                    fabric_bytes_per_s: machine.fabric_bytes_per_s,
                };
                consider(rates, &mut best)?;
            }
        }
    }
    let coarse = best.as_ref().map(|(_, m)| m.rates()).ok_or("no samples")?;
    for rates in fine_grid(coarse, peak) {
        consider(rates, &mut best)?;
    }
    best.map(|(_, m)| m).ok_or_else(|| "no samples".to_string())
}

/// The finer grid around `coarse`: HBM rates in steps of 1.25 % of the `peak`, fills in
/// quarter microseconds (not negative), four steps each way, `coarse` itself left out.
fn fine_grid(coarse: MemoryRates, peak: f64) -> Vec<MemoryRates> {
    let mut out = Vec::new();
    for fill_step in -4..=4 {
        for step in -4..=4 {
            let rates = MemoryRates {
                fill_s: coarse.fill_s + 0.25e-6 * f64::from(fill_step),
                hbm_bytes_per_s: coarse.hbm_bytes_per_s + peak * 0.0125 * f64::from(step),
                ..coarse
            };
            if rates.fill_s >= 0.0 && (fill_step, step) != (0, 0) {
                out.push(rates);
            }
        }
    }
    out
}

/// The kernels of `samples` fitted with an HBM rate and memory fill of their own, one pair of
/// figures for them all (`tune --own-memory`: a family whose launches share the memory
/// system's behaviour; [`fp8gemm::select::KernelCost::memory`]): the same grid as [`fit`]'s
/// HBM rates and fills (coarse, then finer around the best) with `base`'s L2 and fabric
/// figures, every kernel's coefficients fitted at each pair tried
/// ([`fp8gemm::select::fit_kernel`]); the pair of least mean |log error| over the samples is
/// kept.
fn fit_own_memory(
    samples: &[Resolved],
    scales: &HashMap<&'static str, (f64, f64)>,
    machine: &Machine,
    arch: Arch,
    base: MemoryRates,
    chains: &HashMap<String, (f64, f64)>,
) -> Result<CostModel, String> {
    let peak = machine.hbm_bytes_per_s;
    let probe = fit_at(&[], scales, machine, arch, base, chains)?;
    let at = |rates: MemoryRates| -> Result<(f64, CostModel), String> {
        let mut m = fit_at(samples, scales, machine, arch, rates, chains)?;
        let own = select::KernelMemory { hbm_bytes_per_s: rates.hbm_bytes_per_s, fill_s: rates.fill_s };
        for c in m.kernels.values_mut() {
            c.memory = Some(own);
        }
        // The machine's figures stay the base's: the kernels carry their own.
        let m = CostModel { kernels: m.kernels, ..probe.clone() };
        let score = samples.iter().map(|r| r.ratio(&m).ln().abs()).sum::<f64>() / samples.len().max(1) as f64;
        Ok((score, m))
    };
    type Best = Option<(f64, CostModel, MemoryRates)>;
    let consider = |rates: MemoryRates, best: &mut Best| -> Result<(), String> {
        let (score, m) = at(rates)?;
        if best.as_ref().is_none_or(|b| score < b.0) {
            *best = Some((score, m, rates));
        }
        Ok(())
    };
    let mut best: Best = None;
    for fill_step in 0..=3 {
        for step in 0..=16 {
            consider(MemoryRates { fill_s: 1e-6 * f64::from(fill_step), hbm_bytes_per_s: peak * (0.3 + 0.05 * f64::from(step)), ..base }, &mut best)?;
        }
    }
    let coarse = best.as_ref().map(|b| b.2).ok_or("no samples")?;
    for rates in fine_grid(coarse, peak) {
        consider(rates, &mut best)?;
    }
    let (score, model, rates) = best.ok_or("no samples")?;
    eprintln!(
        "own memory figures of the {} kernels fitted: HBM {:.3} TB/s, fill {:.2} µs (mean |log error| {:.4} over {} samples)",
        model.kernels.len(),
        rates.hbm_bytes_per_s / 1e12,
        rates.fill_s * 1e6,
        score,
        samples.len()
    );
    Ok(model)
}

/// The finisher-chain lines of `tune --chains`'s report at `path` for `machine` (its section:
/// the rows after the header naming it): per kernel, the least-squares line `a + b · s`
/// through the median chains (cycles) at its split counts, as `(a, b)`; `b` is the cycles per
/// partial the finisher reads, `a` what the chain costs whatever its length. A kernel needs two
/// split counts at least; a line with a negative figure is refused (it would price longer
/// chains below shorter ones, or a chain below nothing).
fn chain_lines(path: &Path, machine: &str) -> Result<HashMap<String, (f64, f64)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--chain-lines {}: {e}", path.display()))?;
    let mut points: HashMap<String, Vec<(f64, f64)>> = HashMap::new();
    let mut ours = false;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("finisher chains") {
            ours = line.contains(&format!(" on {machine} "));
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        // Reports since session 26 add the finisher's extra work as an eighth column.
        if !ours || !(7..=8).contains(&f.len()) || !f[0].contains("fp8_gemm") {
            continue;
        }
        let num = |j: usize| f[j].parse::<f64>().map_err(|e| format!("--chain-lines {} line {}: field {}: {e}", path.display(), i + 1, j + 1));
        points.entry(f[0].to_string()).or_default().push((num(1)?, num(5)?));
    }
    if points.is_empty() {
        return Err(format!("--chain-lines {}: no `finisher chains … on {machine}` section with kernel rows", path.display()));
    }
    let mut out = HashMap::new();
    for (k, v) in points {
        let n = v.len() as f64;
        let (sx, sy) = (v.iter().map(|p| p.0).sum::<f64>(), v.iter().map(|p| p.1).sum::<f64>());
        let (sxx, sxy) = (v.iter().map(|p| p.0 * p.0).sum::<f64>(), v.iter().map(|p| p.0 * p.1).sum::<f64>());
        let det = n * sxx - sx * sx;
        if v.len() < 2 || det <= 0.0 {
            return Err(format!("--chain-lines {}: {k} needs chains at two split counts at least", path.display()));
        }
        let b = (n * sxy - sx * sy) / det;
        let a = (sy - b * sx) / n;
        if a < 0.0 || b < 0.0 {
            return Err(format!("--chain-lines {}: {k}: the line through its chains has a negative figure ({a:.0} + {b:.0} · s)", path.display()));
        }
        eprintln!("{k:<44} finisher chain {a:.0} + {b:.0} · splits cycles (measured, modelled)");
        out.insert(k, (a, b));
    }
    Ok(out)
}

/// Writes every sample of `sides` (a label — `fitted` or `judged` — and its samples) with its
/// modelled time, `model`'s estimate, the signed error (estimate / modelled − 1), the launch's
/// grid, the estimate's compute term, memory term and reduction tail, and the launch's unique
/// HBM bytes as CSV to `path` (`tune --residuals`).
fn write_residuals(path: &Path, sides: &[(&str, &[Resolved])], model: &CostModel) -> Result<(), String> {
    let mut s = String::from(
        "# fp8gemm tune --residuals: every time MODELLED by the timing model; estimate by the cost model\n\
         kernel,m,n,k,splits,dp,g,groups,stored,plan,side,modelled_us,estimate_us,error,grid,compute_us,hbm_mb,memory_us,tail_us\n",
    );
    for &(side, rows) in sides {
        for r in rows {
            let (est, compute) = model.estimate_features(&r.plan, &r.features);
            let (memory, tail) =
                model.cost_of(r.plan.kernel).map_or((f64::NAN, f64::NAN), |c| (model.memory_s(&c, &r.features), model.tail_s(&c, &r.features)));
            let t = &r.t;
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{side},{:.3},{:.3},{:+.4},{},{:.3},{:.3},{:.3},{:.3}",
                t.kernel,
                t.m,
                t.n,
                t.k,
                t.splits,
                t.dp,
                t.g,
                t.groups,
                t.stored,
                r.plan.label(),
                t.seconds * 1e6,
                est * 1e6,
                est / t.seconds - 1.0,
                r.plan.grid,
                compute * 1e6,
                r.features.hbm_bytes / 1e6,
                memory * 1e6,
                tail * 1e6
            );
        }
    }
    std::fs::write(path, s).map_err(|e| format!("{}: {e}", path.display()))
}

/// The split counts [`print_chains`] launches each dense split-K kernel at by default.
const CHAIN_SPLITS: [u32; 6] = [2, 3, 4, 6, 8, 12];

/// K blocks per piece of the launches [`print_chains`] times.
const CHAIN_BLOCKS_PER_PIECE: u32 = 16;

/// The finisher chain of a split-K launch of `grid` workgroups, `splits` pieces per tile, from
/// the timing model's `spans` of it: per output tile, cycles from the end of its other pieces to
/// the end of its last (the one that reduces the tile's partials and stores D); the median and
/// the maximum over the tiles. Tiles are found from each workgroup's hardware id as the kernels
/// find them (`tile::xcd_remap`, split fastest). `None` without a span of every workgroup.
pub fn finisher_chain(spans: &[amdgpu_emu::timing::WorkgroupSpan], grid: u32, splits: u32) -> Option<(u64, u64)> {
    let mut chains: Vec<u64> = spans_by_tile(spans, grid, splits)?
        .into_values()
        .filter(|p| p.len() >= 2)
        .map(|p| {
            let mut e: Vec<u64> = p.iter().map(|sp| sp.end).collect();
            e.sort_unstable();
            e[e.len() - 1] - e[e.len() - 2]
        })
        .collect();
    chains.sort_unstable();
    Some((*chains.get(chains.len() / 2)?, *chains.last()?))
}

/// The spans of a split-K launch of `grid` workgroups, `splits` pieces per tile, grouped by
/// output tile as the kernels find their tiles from the hardware id (`tile::xcd_remap`, split
/// fastest); `None` unless the launch is split and `spans` holds every workgroup.
fn spans_by_tile(spans: &[amdgpu_emu::timing::WorkgroupSpan], grid: u32, splits: u32) -> Option<HashMap<u32, Vec<&amdgpu_emu::timing::WorkgroupSpan>>> {
    if splits < 2 || grid == 0 || spans.len() != grid as usize {
        return None;
    }
    let mut tiles: HashMap<u32, Vec<&amdgpu_emu::timing::WorkgroupSpan>> = HashMap::new();
    for sp in spans {
        let pid = u32::try_from(sp.workgroup).ok()?;
        let id = fp8gemm_device::tile::xcd_remap(pid, grid, fp8gemm_device::tile::NUM_XCDS);
        tiles.entry(id / splits).or_default().push(sp);
    }
    Some(tiles)
}

/// The finisher's own extra work in a split-K launch of `grid` workgroups, `splits` pieces per
/// tile, from the timing model's `spans`: per output tile, the duration of its last-ending
/// piece (the one that reduces the partials and stores D) less the median duration of its
/// other pieces (the same K blocks without the reduction); the median over the tiles, cycles
/// (0 where the difference is negative). Unlike [`finisher_chain`] it leaves out how far the
/// pieces' ends are apart for other reasons (later starts, a busier link), which the launch's
/// other bounds already count. `None` without a span of every workgroup.
pub fn finisher_extra(spans: &[amdgpu_emu::timing::WorkgroupSpan], grid: u32, splits: u32) -> Option<u64> {
    let mut extras: Vec<u64> = spans_by_tile(spans, grid, splits)?
        .into_values()
        .filter(|p| p.len() >= 2)
        .map(|p| {
            let mut p: Vec<(u64, u64)> = p.iter().map(|sp| (sp.end, sp.end.saturating_sub(sp.start))).collect();
            p.sort_unstable();
            let last = p.pop().expect("two pieces at least").1;
            let mut others: Vec<u64> = p.iter().map(|x| x.1).collect();
            others.sort_unstable();
            last.saturating_sub(others[others.len() / 2])
        })
        .collect();
    extras.sort_unstable();
    extras.get(extras.len() / 2).copied()
}

/// `tune --chains`: every dense split-K kernel of `kernels` launched once per split count of
/// `splits` on one round of the device (one row tile, as many column tiles as fit
/// `splits` pieces each on `cus` CUs, [`CHAIN_BLOCKS_PER_PIECE`] K blocks per piece), with its
/// finisher chain ([`finisher_chain`]) printed beside the launch's modelled time: the figure
/// the cost model's `tail · chain` term stands for, measured instead of fitted.
fn print_chains(ctx: &Context, machine: &Machine, arch: Arch, cus: u32, kernels: &[&'static KernelEntry], splits: &[u32], rows: u32) -> Result<(), String> {
    println!("finisher chains of the split-K kernels on {} (timing model: every figure MODELLED), {rows} row tile(s) per launch", machine.name);
    println!("{:<40} {:>6} {:>6} {:>6} {:>10} {:>12} {:>12} {:>12}", "kernel", "split", "grid", "K", "time µs", "chain med", "chain max", "extra med");
    // The dense split-K kernels and the plain contiguous split-K ones (the MoE layer's: the same
    // split protocol and grid order; launched as one group of `rows` row tiles, every row
    // routed).
    let split_kernels = kernels.iter().filter(|e| {
        (e.problem == Problem::Dense && e.schedule == ScheduleKind::SplitK && e.majors == (Major::K, Major::K))
            || select::contiguous_splitk_twin(e).is_some_and(|t| std::ptr::eq(t, **e))
    });
    let mut any = false;
    for e in split_kernels {
        let grouped = select::contiguous_splitk_twin(e).is_some();
        for &s in splits {
            let tiles_n = (cus / (s * rows)).max(1);
            let (m, n, k) = (rows * e.block_m, tiles_n * e.block_n, s * CHAIN_BLOCKS_PER_PIECE * 128);
            let t = Timed { kernel: e.name(), m, n, k, splits: s, dp: 0, g: 0, groups: u32::from(grouped), seconds: 0.0, stored: 0 };
            let Some((desc, plan)) = plan_of(&t, arch, cus) else {
                continue;
            };
            let report = profile_plan(ctx, machine, &plan, &desc)?;
            let (med, max) = finisher_chain(&report.spans, plan.grid, s).ok_or_else(|| format!("{}: split {s}: no spans of every piece", e.name()))?;
            let extra = finisher_extra(&report.spans, plan.grid, s).ok_or_else(|| format!("{}: split {s}: no spans of every piece", e.name()))?;
            println!("{:<40} {:>6} {:>6} {:>6} {:>10.2} {:>12} {:>12} {:>12}", e.name(), s, plan.grid, k, report.seconds * 1e6, med, max, extra);
            any = true;
        }
    }
    if !any {
        return Err("--chains: no dense or contiguous split-K kernel matches `--only`".into());
    }
    Ok(())
}

fn report(samples: &[Resolved], model: &CostModel) {
    println!(
        "cost model (every time MODELLED; in-sample unless said otherwise above): HBM {:.3} TB/s, L2 {:.2} TB/s per XCD, memory fill {:.2} µs",
        model.hbm_bytes_per_s / 1e12,
        model.l2_bytes_per_s / 1e12,
        model.memory_fill_s * 1e6
    );
    let mut own: Vec<(&str, select::KernelMemory)> =
        samples.iter().filter_map(|r| model.kernels.get(r.t.kernel).and_then(|c| c.memory).map(|m| (r.t.kernel, m))).collect();
    own.sort_by(|a, b| a.0.cmp(b.0));
    own.dedup_by(|a, b| a.0 == b.0);
    for (name, m) in own {
        println!("  {name}: its own HBM {:.3} TB/s, memory fill {:.2} µs", m.hbm_bytes_per_s / 1e12, m.fill_s * 1e6);
    }
    println!("{:<46} {:>4} {:>10} {:>10} {:>10}  worst row", "kernel", "n", "median|e|", "worst|e|", "median e");
    let mut names: Vec<&str> = samples.iter().map(|r| r.t.kernel).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let rows: Vec<(f64, &Resolved)> = samples.iter().filter(|r| r.t.kernel == name).map(|r| (r.ratio(model) - 1.0, r)).collect();
        let worst_row = rows
            .iter()
            .max_by(|a, b| a.0.abs().total_cmp(&b.0.abs()))
            .map(|(_, r)| format!("{}x{}x{} {}: {:.2} µs", r.t.m, r.t.n, r.t.k, r.plan.label(), r.t.seconds * 1e6))
            .unwrap_or_default();
        let mut e: Vec<f64> = rows.iter().map(|x| x.0).collect();
        let mut abs: Vec<f64> = e.iter().map(|x| x.abs()).collect();
        abs.sort_by(f64::total_cmp);
        e.sort_by(f64::total_cmp);
        println!(
            "{:<46} {:>4} {:>9.1}% {:>9.1}% {:>+9.1}%  {worst_row}",
            name,
            e.len(),
            100.0 * abs[abs.len() / 2],
            100.0 * abs[abs.len() - 1],
            100.0 * e[e.len() / 2]
        );
    }
    let mut all: Vec<f64> = samples.iter().map(|r| r.ratio(model) - 1.0).collect();
    if !all.is_empty() {
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        all.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
        println!(
            "all {} samples: median |e| {:.1}%, 90th percentile |e| {:.1}%, mean e (bias) {:+.1}%",
            all.len(),
            100.0 * all[all.len() / 2].abs(),
            100.0 * all[(all.len() * 9 / 10).min(all.len() - 1)].abs(),
            100.0 * mean
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amdgpu_emu::timing::WorkgroupSpan;

    #[test]
    fn the_finisher_chain_is_each_tiles_last_end_after_its_other_pieces() {
        // 16 workgroups: 8 tiles × 2 pieces, split fastest over the logical ids each XCD's
        // contiguous run holds (`xcd_remap`: over 8 XCDs and 16 ids, hardware id p runs
        // logical id 2·(p mod 8) + p / 8). Tile t's pieces are logical ids
        // 2t and 2t + 1: hardware ids t and t + 8. Each tile's first piece ends at 1000, its
        // second at 1000 + 100·(t + 1).
        let spans: Vec<WorkgroupSpan> = (0..16u64)
            .map(|p| {
                let (t, second) = (p % 8, p >= 8);
                WorkgroupSpan { workgroup: p, cu: p as u32, start: 0, end: if second { 1000 + 100 * (t + 1) } else { 1000 } }
            })
            .collect();
        assert_eq!(fp8gemm_device::tile::xcd_remap(3, 16, 8), 6);
        assert_eq!(fp8gemm_device::tile::xcd_remap(11, 16, 8), 7);
        // Chains 100 … 800: the median (the 5th of 8, index 4) 500, the maximum 800.
        assert_eq!(finisher_chain(&spans, 16, 2), Some((500, 800)));
        // Not a split launch, or spans missing: none.
        assert_eq!(finisher_chain(&spans, 16, 1), None);
        assert_eq!(finisher_chain(&spans[..15], 16, 2), None);
    }

    #[test]
    fn own_memory_figures_of_a_family_are_recovered_from_its_samples() {
        // Samples of two contiguous split-K kernels timed by known coefficients with a family
        // HBM rate and fill (4.5 TB/s, 2 µs) off the shipped model's figures: the fit finds
        // that pair on its grid, gives both kernels those figures, and reproduces the times.
        let machine = crate::profile::machine_by_name("mi325x").unwrap();
        let (arch, cus) = (Arch::Gfx942, machine.xcds * machine.cus_per_xcd);
        let own = select::KernelMemory { hbm_bytes_per_s: 4.5e12, fill_s: 2e-6 };
        let truth = |slots: usize| select::KernelCost {
            block: vec![700.0; slots],
            fixed: vec![3000.0; slots],
            memory: Some(own),
            l2_block_scale: 1.0,
            l2_other_scale: 1.0,
            ..Default::default()
        };
        let base = CostModel::for_arch(arch).unwrap().clone();
        let mut samples = Vec::new();
        for (name, bm) in [("m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm32_bn128", 32u32), ("m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm64_bn128", 64)] {
            let e = registry::by_name(name).unwrap();
            let c = truth(e.slots_per_cu(arch).unwrap() as usize);
            for i in 0..30u32 {
                // Groups of one to a few tiles over short and long K: memory- and compute-bound.
                let (g, tiles_per, kb, n) = (1 + 7 * (i % 9), 1 + i % 3, 2 + 5 * (i % 12), 256 * (1 + i % 16));
                let t = Timed { kernel: e.name(), m: g * tiles_per * bm, n, k: kb * 128, splits: 1, dp: 0, g: 0, groups: g, seconds: 0.0, stored: 0 };
                let mut r = Resolved::new(t, arch, cus).unwrap();
                r.t.seconds = base.estimate_with(&c, &r.features).0;
                samples.push(r);
            }
        }
        let memory_bound =
            samples.iter().filter(|r| base.memory_s(&truth(2), &r.features) > CostModel::cu_cycles(&truth(2), &r.features) / base.clock_hz).count();
        assert!((5..=55).contains(&memory_bound), "{memory_bound} memory-bound samples of 60");
        let scales: HashMap<&'static str, (f64, f64)> = samples.iter().map(|r| (r.t.kernel, (1.0, 1.0))).collect();
        let rates = MemoryRates { fabric_bytes_per_s: machine.fabric_bytes_per_s, ..base.rates() };
        let fitted = fit_own_memory(&samples, &scales, &machine, arch, rates, &HashMap::new()).unwrap();
        assert_eq!(fitted.kernels.len(), 2);
        for (name, c) in &fitted.kernels {
            let m = c.memory.unwrap_or_else(|| panic!("{name}: no own figures"));
            assert!((m.hbm_bytes_per_s - 4.5e12).abs() < 1e9 && (m.fill_s - 2e-6).abs() < 1e-9, "{name}: {m:?}");
        }
        // The machine's figures stay the shipped model's (the other kernels keep them).
        assert_eq!((fitted.hbm_bytes_per_s, fitted.memory_fill_s), (base.hbm_bytes_per_s, base.memory_fill_s));
        let mut errs: Vec<f64> = samples.iter().map(|r| (r.ratio(&fitted) - 1.0).abs()).collect();
        errs.sort_by(f64::total_cmp);
        // The coefficients come back where the samples pin them (a few launches at a
        // concurrency few samples share are within a few per cent).
        assert!(errs[errs.len() * 9 / 10] < 1e-3 && errs[errs.len() - 1] < 0.05, "{errs:?}");
    }

    #[test]
    fn chain_lines_fit_the_machines_section_of_a_chains_report() {
        let dir = std::env::temp_dir().join(format!("fp8gemm-chain-lines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("chains.txt");
        // mi325x: 1000 + 500·s exactly; the mi355x section's rows are not read for mi325x.
        let report = "# comment\n\
            finisher chains of the dense split-K kernels on mi325x (timing model: every figure MODELLED)\n\
            kernel split grid K time med max\n\
            fp8_gemm_nt_splitk_bs_bm64_bn128 2 304 4096 25.16 2000 2100\n\
            fp8_gemm_nt_splitk_bs_bm64_bn128 4 304 8192 25.57 3000 3100\n\
            fp8_gemm_nt_splitk_bs_bm64_bn128 8 304 16384 27.80 5000 5100 4900\n\
            m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm32_bn128 2 304 4096 23.76 3000 3100 3000\n\
            m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm32_bn128 6 300 12288 24.55 4000 4100 4000\n\
            \n\
            finisher chains of the dense split-K kernels on mi355x (timing model: every figure MODELLED)\n\
            fp8_gemm_nt_splitk_bs_bm64_bn128 2 256 4096 20.0 9000 9100\n\
            fp8_gemm_nt_splitk_bs_bm64_bn128 4 256 8192 21.0 9900 9999\n";
        std::fs::write(&path, report).unwrap();
        let got = chain_lines(&path, "mi325x").unwrap();
        let (a, b) = got["fp8_gemm_nt_splitk_bs_bm64_bn128"];
        assert!((a - 1000.0).abs() < 1e-9 && (b - 500.0).abs() < 1e-9, "{a} {b}");
        // The contiguous split-K kernels' rows (the MoE layer's family) are read too:
        // 2500 + 250·s.
        let (a, b) = got["m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm32_bn128"];
        assert!((a - 2500.0).abs() < 1e-9 && (b - 250.0).abs() < 1e-9, "{a} {b}");
        assert_eq!(got.len(), 2);
        // No section for the machine: an error naming it.
        assert!(chain_lines(&path, "mi300x").unwrap_err().contains("mi300x"));
        // One split count cannot make a line; a falling line is refused.
        std::fs::write(&path, "finisher chains of x on mi325x (m)\nfp8_gemm_nt_splitk_bs_bm32_bn64 2 304 4096 1.0 1500 1600\n").unwrap();
        assert!(chain_lines(&path, "mi325x").unwrap_err().contains("two split counts"));
        std::fs::write(&path, "finisher chains of x on mi325x (m)\nfp8_gemm_nt_splitk_bs_bm32_bn64 2 304 4096 1.0 1500 1600\nfp8_gemm_nt_splitk_bs_bm32_bn64 4 304 4096 1.0 1400 1600\n").unwrap();
        assert!(chain_lines(&path, "mi325x").unwrap_err().contains("negative"));
        // A missing file is an error naming it.
        assert!(chain_lines(&dir.join("absent.txt"), "mi325x").unwrap_err().contains("absent.txt"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
