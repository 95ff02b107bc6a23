//! `fp8gemm validate`: the hardware validation kit. Every dense and m-grouped kernel the library
//! selects (and, with `--all-tiles`, every registered tile forced) runs at a set of shapes on whatever backend
//! is present; each result is checked against the CPU reference, each launch is timed the way
//! AMD's tuner times its kernels, and one CSV (plus an SVG) puts the time beside the timing
//! model's prediction for the same launch.
//!
//! Timing, as AITER's `run_perftest` does it (`../shared/peers/README.md`, "How AITER measured"):
//! `--warmup` launches first; then `--iters` launches, each between two events, with the operands
//! rotated through enough copies that every launch reads A and B cold (copies ≥ 2 × (L2 + the
//! 256 MB Infinity Cache) / operand bytes, at most `--iters`); the first timed launch is
//! dropped, then every time outside 1.5 × the interquartile range; the mean of the rest is the
//! *measured* time.
//!
//! On the emulator there is nothing to measure: the "measured" column is then the timing model
//! too (one launch, labelled `emulator timing model` in the `measured_source` column), and the
//! kit checks only that the whole path runs. The *modelled* column is always the emulator's
//! timing model of the same launch (same overrides, same shape) on `--machine`; with the `rocm`
//! feature alone (no emulator built) it is empty.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use fp8gemm::codeobj::Arch;
use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz, Fp8Format};
use fp8gemm::grouped::upload_m_indices;
use fp8gemm::quant::{GroupedQuantizedWeights, QuantizedActivations, QuantizedWeights};
use fp8gemm::reference::contiguous_m_indices;
use fp8gemm::{
    Backend, Context, DeviceActivations, DeviceGroupedWeights, DeviceWeights, Event, GemmRun, Overrides, Stream, WeightLayout,
    m_alignment_for_contiguous_layout, reference,
};
use half::bf16;
use rand::{SeedableRng, rngs::StdRng};

use crate::gemm::randn_bf16;

/// Which shapes `validate` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ValidateSet {
    /// A few small dense and m-grouped problems covering the tile and schedule families
    /// (seconds on the emulator).
    Small,
    /// DeepSeek-V3's dense shapes (M ∈ {64, 128, 4096} × six (N, K)), as `compare`.
    Deepseek,
    /// The shapes of `measured_mi325x.csv` (needs `--peers`/`FP8GEMM_PEERS_DIR`), as `compare`.
    Peers,
    /// DeepGEMM's m-grouped contiguous and masked benchmark shapes, as `compare`.
    Grouped,
}

/// Which weight layouts `validate` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutArg {
    /// Row-major B (the logical kernels).
    Logical,
    /// Pre-shuffled B (the bs kernels).
    Preshuffled,
    /// Both.
    Both,
}

/// `fp8gemm validate`'s options.
pub struct Options {
    pub set: ValidateSet,
    pub shapes: Option<String>,
    pub peers: Option<PathBuf>,
    pub layout: LayoutArg,
    pub all_tiles: bool,
    pub warmup: u32,
    pub iters: u32,
    pub machine: String,
    pub max_diff: f64,
    pub csv: PathBuf,
    pub plot: Option<PathBuf>,
    pub seed: u64,
}

/// One problem: dense, or m-grouped with `groups` groups of `rows` rows each (contiguous: each
/// group padded to the layout's alignment; masked: `masked_m = m_max = rows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Problem {
    Dense { m: usize, n: usize, k: usize },
    Contiguous { groups: usize, rows: usize, n: usize, k: usize },
    Masked { groups: usize, rows: usize, n: usize, k: usize },
}

impl Problem {
    fn label(&self) -> String {
        match *self {
            Problem::Dense { m, n, k } => format!("dense {m}x{n}x{k}"),
            Problem::Contiguous { groups, rows, n, k } => format!("contiguous {groups}x{rows} over {n}x{k}"),
            Problem::Masked { groups, rows, n, k } => format!("masked {groups}x{rows} over {n}x{k}"),
        }
    }
    fn kind(&self) -> &'static str {
        match self {
            Problem::Dense { .. } => "dense",
            Problem::Contiguous { .. } => "contiguous",
            Problem::Masked { .. } => "masked",
        }
    }
    /// (rows of A, per-group rows, groups, n, k).
    fn dims(&self) -> (usize, usize, usize, usize) {
        match *self {
            Problem::Dense { m, n, k } => (m, 1, n, k),
            Problem::Contiguous { groups, rows, n, k } | Problem::Masked { groups, rows, n, k } => (rows, groups, n, k),
        }
    }
}

/// The shapes of `--shapes 64x2112x7168,128x4096x512` (dense).
fn parse_shapes(spec: &str) -> Result<Vec<Problem>, String> {
    spec.split(',')
        .map(|s| {
            let d: Vec<Option<usize>> = s.trim().split('x').map(|v| v.trim().parse().ok()).collect();
            match d.as_slice() {
                [Some(m), Some(n), Some(k)] if *m > 0 && *n > 0 && *k > 0 => Ok(Problem::Dense { m: *m, n: *n, k: *k }),
                _ => Err(format!("--shapes: `{s}` is not MxNxK with positive sizes")),
            }
        })
        .collect()
}

fn problems(o: &Options) -> Result<Vec<Problem>, String> {
    if let Some(spec) = &o.shapes {
        return parse_shapes(spec);
    }
    let dense = |(m, n, k): (usize, usize, usize)| Problem::Dense { m, n, k };
    Ok(match o.set {
        ValidateSet::Small => vec![
            dense((1, 256, 512)),
            dense((64, 512, 1024)),
            dense((200, 384, 384)),
            dense((512, 1024, 256)),
            Problem::Contiguous { groups: 2, rows: 100, n: 256, k: 384 },
            Problem::Masked { groups: 2, rows: 32, n: 256, k: 1024 },
        ],
        ValidateSet::Deepseek => [64, 128, 4096].into_iter().flat_map(|m| crate::compare::DEEPSEEK_NK.map(|(n, k)| dense((m, n, k)))).collect(),
        ValidateSet::Peers => {
            let dir = match &o.peers {
                Some(d) => d.clone(),
                None => amdgpu_emu::peers::peers_dir().map_err(|e| e.to_string())?,
            };
            crate::compare::peers_rows(&dir)?.into_iter().map(|(_, m, n, k, _, _)| dense((m, n, k))).collect()
        }
        ValidateSet::Grouped => {
            let mut v = Vec::new();
            for (n, k) in [(4096, 7168), (7168, 2048)] {
                for (groups, rows) in [(4, 8192), (8, 4096)] {
                    v.push(Problem::Contiguous { groups, rows, n, k });
                }
                for (groups, rows) in [(1, 1024), (2, 512), (4, 256)] {
                    v.push(Problem::Masked { groups, rows, n, k });
                }
            }
            v
        }
    })
}

/// One row of the CSV.
struct Row {
    backend: &'static str,
    source: &'static str,
    kernel: String,
    layout: WeightLayout,
    problem: Problem,
    overrides: String,
    kept: usize,
    measured_us: f64,
    measured_min_us: f64,
    measured_max_us: f64,
    modelled_us: Option<f64>,
    calc_diff: f64,
    max_abs_err: f64,
    correct: bool,
}

const HEADER: &str = "backend,measured_source,problem,kernel,layout,groups,m,n,k,overrides,kept,measured_us,measured_min_us,measured_max_us,modelled_us,modelled_over_measured,calc_diff,max_abs_err,correct";

impl Row {
    fn csv(&self) -> String {
        let (m, groups, n, k) = self.problem.dims();
        let modelled = self.modelled_us.map_or(String::new(), |v| format!("{v:.3}"));
        let ratio = self.modelled_us.map_or(String::new(), |v| format!("{:.4}", v / self.measured_us));
        format!(
            "{},{},{},{},{},{groups},{m},{n},{k},{},{},{:.3},{:.3},{:.3},{modelled},{ratio},{:.3e},{:.3e},{}",
            self.backend,
            self.source,
            self.problem.kind(),
            self.kernel,
            self.layout,
            self.overrides,
            self.kept,
            self.measured_us,
            self.measured_min_us,
            self.measured_max_us,
            self.calc_diff,
            self.max_abs_err,
            self.correct
        )
    }
}

/// AITER's outlier rule: drop the first sample, then everything outside `[q1 − 1.5·iqr, q3 +
/// 1.5·iqr]`; returns (mean, min, max, kept) of the rest.
pub fn robust_mean(samples: &[f64]) -> Option<(f64, f64, f64, usize)> {
    let rest = if samples.len() > 1 { &samples[1..] } else { samples };
    if rest.is_empty() {
        return None;
    }
    let mut s = rest.to_vec();
    s.sort_by(f64::total_cmp);
    let q = |p: f64| s[((s.len() - 1) as f64 * p).round() as usize];
    let (q1, q3) = (q(0.25), q(0.75));
    let (lo, hi) = (q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1));
    let kept: Vec<f64> = rest.iter().copied().filter(|&t| t >= lo && t <= hi).collect();
    let mean = kept.iter().sum::<f64>() / kept.len() as f64;
    Some((mean, kept.iter().copied().fold(f64::MAX, f64::min), kept.iter().copied().fold(0.0, f64::max), kept.len()))
}

fn overrides_label(o: &Overrides) -> String {
    match o.tile {
        Some((bm, bn)) => format!("tile {bm}x{bn}"),
        None => "selector".into(),
    }
}

/// The candidate plans of one problem: the selector's, and every tile forced with `--all-tiles`.
fn plans(all_tiles: bool, layout: WeightLayout, p: Problem) -> Vec<Overrides> {
    let mut out = vec![Overrides::NONE];
    if all_tiles {
        // Every tile the selector can be forced to (its ConfigError::ForcedTile lists them).
        let tiles: Vec<(u32, u32)> = match (layout, p) {
            (WeightLayout::Logical, _) => fp8gemm_device::tile::DENSE_TILES.iter().map(|t| (t.block_m, t.block_n)).collect(),
            (_, Problem::Dense { .. }) => vec![(32, 64), (32, 128), (48, 128), (64, 128), (80, 128), (96, 128), (128, 128)],
            _ => vec![(32, 64), (32, 128), (64, 128), (80, 128), (128, 128)],
        };
        out.extend(tiles.into_iter().map(|(bm, bn)| Overrides::NONE.with_tile(bm, bn)));
    }
    out
}

/// A problem's operands on the host, its reference and which output rows are defined.
struct HostCase<F: Fp8Format> {
    qa: QuantizedActivations<F>,
    qb: HostB<F>,
    /// `m_indices` (contiguous) or `masked_m` (masked).
    index: Vec<i32>,
    want: Vec<bf16>,
    valid: Vec<bool>,
}

enum HostB<F: Fp8Format> {
    Dense(QuantizedWeights<F>),
    Grouped(GroupedQuantizedWeights<F>),
}

/// The same on a device.
struct DevCase<F: Fp8Format> {
    a: DeviceActivations<F>,
    b: DevB<F>,
    index: Option<fp8gemm::DeviceBuffer<i32>>,
}

enum DevB<F: Fp8Format> {
    Dense(DeviceWeights<F>),
    Grouped(DeviceGroupedWeights<F>),
}

fn host_case<F: Fp8Format>(p: Problem, seed: u64) -> Result<HostCase<F>, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let (rows, groups, n, k) = p.dims();
    let mut rng = StdRng::seed_from_u64(seed ^ (rows * 31 + n * 7 + k + groups) as u64);
    let (m_total, index, valid): (usize, Vec<i32>, Vec<bool>) = match p {
        Problem::Dense { m, .. } => (m, Vec::new(), vec![true; m]),
        Problem::Contiguous { .. } => {
            let idx = contiguous_m_indices(&vec![rows; groups], m_alignment_for_contiguous_layout());
            let valid = idx.iter().map(|&g| g >= 0).collect();
            (idx.len(), idx, valid)
        }
        Problem::Masked { .. } => (groups * rows, vec![rows as i32; groups], vec![true; groups * rows]),
    };
    let a = randn_bf16(m_total * k, &mut rng);
    let b = randn_bf16(groups * n * k, &mut rng);
    let qa = QuantizedActivations::<F>::quantize(&a, m_total, k).map_err(|x| e(&x))?;
    let mut want = vec![bf16::ZERO; m_total * n];
    let qb = match p {
        Problem::Dense { .. } => {
            let qb = QuantizedWeights::<F>::quantize(&b, n, k).map_err(|x| e(&x))?;
            reference::fp8_gemm_nt(&qa, &qb, &mut want).map_err(|x| e(&x))?;
            HostB::Dense(qb)
        }
        Problem::Contiguous { .. } => {
            let qb = GroupedQuantizedWeights::<F>::quantize(&b, groups, n, k).map_err(|x| e(&x))?;
            reference::m_grouped_fp8_gemm_nt_contiguous(&qa, &qb, &index, &mut want).map_err(|x| e(&x))?;
            HostB::Grouped(qb)
        }
        Problem::Masked { .. } => {
            let qb = GroupedQuantizedWeights::<F>::quantize(&b, groups, n, k).map_err(|x| e(&x))?;
            reference::m_grouped_fp8_gemm_nt_masked(&qa, &qb, &index, &mut want).map_err(|x| e(&x))?;
            HostB::Grouped(qb)
        }
    };
    Ok(HostCase { qa, qb, index, want, valid })
}

fn upload<F: Fp8Format>(ctx: &Context, h: &HostCase<F>, layout: WeightLayout, p: Problem) -> fp8gemm::Result<DevCase<F>> {
    let a = DeviceActivations::upload(ctx, &h.qa)?;
    let b = match &h.qb {
        HostB::Dense(qb) => DevB::Dense(match layout {
            WeightLayout::Logical => DeviceWeights::upload(ctx, qb)?,
            _ => DeviceWeights::upload_preshuffled(ctx, qb)?,
        }),
        HostB::Grouped(qb) => DevB::Grouped(DeviceGroupedWeights::upload_with_layout(ctx, qb, layout)?),
    };
    let index = match p {
        Problem::Dense { .. } => None,
        Problem::Contiguous { groups, .. } => Some(upload_m_indices(ctx, &h.index, groups)?),
        Problem::Masked { .. } => Some(ctx.upload(&h.index)?),
    };
    Ok(DevCase { a, b, index })
}

/// One launch of `p` on `stream` into `d` (A and B from `ops`, which may be a rotated copy).
fn launch<F: Fp8Format>(stream: &Stream, p: Problem, ops: &DevCase<F>, d: &mut fp8gemm::DeviceBuffer<bf16>) -> fp8gemm::Result<GemmRun> {
    match (&ops.b, p, &ops.index) {
        (DevB::Dense(b), _, _) => fp8gemm::fp8_gemm_nt(stream, &ops.a, b, d),
        (DevB::Grouped(b), Problem::Contiguous { .. }, Some(i)) => fp8gemm::m_grouped_fp8_gemm_nt_contiguous(stream, &ops.a, b, d, i),
        (DevB::Grouped(b), Problem::Masked { rows, .. }, Some(i)) => fp8gemm::m_grouped_fp8_gemm_nt_masked(stream, &ops.a, b, d, i, rows),
        _ => Err(fp8gemm::Error::Unsupported("validate: operands do not match the problem".into())),
    }
}

/// `fp8gemm validate`.
pub fn run(o: Options) -> Result<(), String> {
    let ctx = Context::new().map_err(|e| e.to_string())?;
    match ctx.arch() {
        Arch::Gfx942 => run_with::<E4M3Fnuz>(&ctx, &o),
        Arch::Gfx950 => run_with::<E4M3Fn>(&ctx, &o),
        other => Err(format!("no validation for {other}")),
    }
}

fn run_with<F: Fp8Format>(ctx: &Context, o: &Options) -> Result<(), String> {
    let on_emulator = ctx.backend() == Backend::Emulator;
    let (backend, source) = if on_emulator { ("emulator", "emulator timing model") } else { ("hip", "hip events") };
    let machine = crate::profile::machine_by_name(&o.machine)?;
    println!(
        "validate on {} ({}, {} CUs, backend {backend}); measured = {source}{}; modelled = timing model, {}",
        ctx.device_name(),
        ctx.arch(),
        ctx.compute_units(),
        if on_emulator { " (NOT a measurement)" } else { "" },
        machine.name
    );
    let layouts: &[WeightLayout] = match o.layout {
        LayoutArg::Logical => &[WeightLayout::Logical],
        LayoutArg::Preshuffled => &[WeightLayout::Preshuffled],
        LayoutArg::Both => &[WeightLayout::Logical, WeightLayout::Preshuffled],
    };
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for p in problems(o)? {
        let host = host_case::<F>(p, o.seed)?;
        for &layout in layouts {
            for plan in plans(o.all_tiles, layout, p) {
                let label = overrides_label(&plan);
                let r = match validate_one(ctx, o, &machine, &host, layout, plan, p) {
                    Ok(r) => r,
                    // A forced tile some problems cannot use (e.g. no such bs kernel) is reported, not fatal.
                    Err(msg) if plan.tile.is_some() => {
                        println!("{} {layout} {label}: not applicable ({msg})", p.label());
                        continue;
                    }
                    Err(msg) => return Err(format!("{} {layout} {label}: {msg}", p.label())),
                };
                let r = Row { backend, source, ..r };
                println!(
                    "{:<32} {layout:<12} {:<48} {:<9} measured {:>9.2} µs ({} kept)  modelled {:>9}  calc_diff {:.2e}  {}",
                    p.label(),
                    r.kernel,
                    label,
                    r.measured_us,
                    r.kept,
                    r.modelled_us.map_or("-".into(), |v| format!("{v:.2} µs")),
                    r.calc_diff,
                    if r.correct { "ok" } else { "WRONG" }
                );
                if !r.correct {
                    failures.push(format!("{} {layout} {} ({label}): calc_diff {:.3e}, max |error| {:.3e}", p.label(), r.kernel, r.calc_diff, r.max_abs_err));
                }
                rows.push(r);
            }
        }
    }
    write_csv(&o.csv, &rows)?;
    println!("wrote {} ({} rows)", o.csv.display(), rows.len());
    if let Some(path) = &o.plot {
        plot_svg(path, &rows, source)?;
        println!("wrote {}", path.display());
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} of {} results are wrong against the CPU reference:\n  {}", failures.len(), rows.len(), failures.join("\n  ")))
    }
}

/// A stream with `plan` and a workspace large enough for any split-K / stream-K plan of `p`.
fn stream_for(ctx: &Context, plan: Overrides, p: Problem) -> Result<Stream, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut stream = Stream::new(ctx).map_err(|x| e(&x))?;
    stream.set_overrides(plan);
    if let Problem::Dense { m, n, k } = p {
        let need = fp8gemm::workspace_floats(m, n, k, &plan).max(fp8gemm::workspace_floats_preshuffled(m, n, k, &plan));
        if need > fp8gemm::workspace::DEFAULT_STREAM_WORKSPACE_FLOATS {
            stream.set_workspace(Some(fp8gemm::Workspace::new(ctx, need).map_err(|x| e(&x))?)).map_err(|x| e(&x))?;
        }
    }
    Ok(stream)
}

fn validate_one<F: Fp8Format>(
    ctx: &Context,
    o: &Options,
    machine: &amdgpu_emu::timing::Machine,
    host: &HostCase<F>,
    layout: WeightLayout,
    plan: Overrides,
    p: Problem,
) -> Result<Row, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let stream = stream_for(ctx, plan, p)?;
    // Correctness: one launch on real data against the dequantized CPU reference, over the
    // defined rows (contiguous padding rows are not written).
    let dev = upload(ctx, host, layout, p).map_err(|x| e(&x))?;
    let mut d = ctx.alloc_zeroed::<bf16>(host.want.len()).map_err(|x| e(&x))?;
    let run = launch(&stream, p, &dev, &mut d).map_err(|x| e(&x))?;
    let got = d.download(&stream).map_err(|x| e(&x))?;
    let kernel = run.config.map_or_else(|| "(nothing launched)".to_string(), |c| c.kernel.to_string());
    let n = p.dims().2;
    let (mut g, mut w) = (Vec::new(), Vec::new());
    for (r, &ok) in host.valid.iter().enumerate() {
        if ok {
            g.extend_from_slice(&got[r * n..(r + 1) * n]);
            w.extend_from_slice(&host.want[r * n..(r + 1) * n]);
        }
    }
    let calc_diff = reference::calc_diff(&g, &w).map_err(|x| e(&x))?;
    let max_abs_err = g.iter().zip(&w).map(|(a, b)| f64::from((a.to_f32() - b.to_f32()).abs())).fold(0.0, f64::max);
    let correct = calc_diff.is_finite() && calc_diff < o.max_diff;

    // Timing.
    let samples = if ctx.backend() == Backend::Emulator {
        vec![model_time(ctx, &dev, &mut d, plan, machine, p)?]
    } else {
        time_on_device(ctx, &stream, host, layout, p, (o.warmup, o.iters), &mut d)?
    };
    let (measured_us, measured_min_us, measured_max_us, kept) = robust_mean(&samples).unwrap_or((f64::NAN, f64::NAN, f64::NAN, 0));
    let modelled_us = if ctx.backend() == Backend::Emulator { Some(measured_us) } else { modelled(ctx, host, layout, plan, machine, p)? };
    Ok(Row {
        backend: "",
        source: "",
        kernel,
        layout,
        problem: p,
        overrides: overrides_label(&plan),
        kept,
        measured_us,
        measured_min_us,
        measured_max_us,
        modelled_us,
        calc_diff,
        max_abs_err,
        correct,
    })
}

/// Events around each launch, operands rotated through copies so each launch reads them cold.
fn time_on_device<F: Fp8Format>(
    ctx: &Context,
    stream: &Stream,
    host: &HostCase<F>,
    layout: WeightLayout,
    p: Problem,
    (warmup, iters): (u32, u32),
    d: &mut fp8gemm::DeviceBuffer<bf16>,
) -> Result<Vec<f64>, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    // Enough copies that their bytes exceed twice the last-level caches (MI300X/MI325X: 4 MB L2
    // per XCD × 8 + 256 MB Infinity Cache), as AITER rotates up to 101 copies.
    let b_bytes = match &host.qb {
        HostB::Dense(b) => b.data.len() + 4 * b.scales.len(),
        HostB::Grouped(b) => b.data.len() + 4 * b.scales.len(),
    };
    let bytes = (host.qa.data.len() + 4 * host.qa.scales.len() + b_bytes).max(1) as f64;
    let copies = ((2.0 * 288e6 / bytes).ceil() as usize).clamp(1, iters.max(1) as usize);
    let mut ops = Vec::with_capacity(copies);
    for _ in 0..copies {
        ops.push(upload(ctx, host, layout, p).map_err(|x| e(&x))?);
    }
    for i in 0..warmup as usize {
        launch(stream, p, &ops[i % copies], d).map_err(|x| e(&x))?;
    }
    let mut events = Vec::with_capacity(iters as usize);
    for i in 0..iters as usize {
        let (start, stop) = (Event::new(ctx).map_err(|x| e(&x))?, Event::new(ctx).map_err(|x| e(&x))?);
        start.record(stream).map_err(|x| e(&x))?;
        launch(stream, p, &ops[i % copies], d).map_err(|x| e(&x))?;
        stop.record(stream).map_err(|x| e(&x))?;
        events.push((start, stop));
    }
    stream.synchronize().map_err(|x| e(&x))?;
    events.iter().map(|(a, b)| b.elapsed_ms(a).map(|ms| f64::from(ms) * 1e3).map_err(|x| e(&x))).collect()
}

/// The timing model's time of one launch on this (emulator) context, µs.
fn model_time<F: Fp8Format>(
    ctx: &Context,
    ops: &DevCase<F>,
    d: &mut fp8gemm::DeviceBuffer<bf16>,
    plan: Overrides,
    machine: &amdgpu_emu::timing::Machine,
    p: Problem,
) -> Result<f64, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let stream = stream_for(ctx, plan, p)?;
    let opts = amdgpu_emu::timing::SimOptions {
        scope: amdgpu_emu::timing::Scope::Full,
        skip_mfma_math: true,
        checks: amdgpu_emu::exec::Checks::default(),
        top: 0,
        trace_workgroup: None,
    };
    amdgpu_emu::hip::set_timing(Some(amdgpu_emu::hip::TimingMode { machine: machine.clone(), options: opts }));
    let r = launch(&stream, p, ops, d).and_then(|_| stream.synchronize());
    amdgpu_emu::hip::set_timing(None);
    r.map_err(|x| e(&x))?;
    let t = amdgpu_emu::hip::last_launch_timing().ok_or("the timing run produced no report")?;
    Ok(t.seconds * 1e6)
}

/// The modelled column on HIP: the same plan on an emulator context.
fn modelled<F: Fp8Format>(
    ctx: &Context,
    host: &HostCase<F>,
    layout: WeightLayout,
    plan: Overrides,
    machine: &amdgpu_emu::timing::Machine,
    p: Problem,
) -> Result<Option<f64>, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let Ok(emu) = Context::with_backend(Backend::Emulator, 0) else { return Ok(None) };
    if emu.arch() != ctx.arch() {
        return Ok(None);
    }
    let dev = upload(&emu, host, layout, p).map_err(|x| e(&x))?;
    let mut d = emu.alloc_zeroed::<bf16>(host.want.len()).map_err(|x| e(&x))?;
    model_time(&emu, &dev, &mut d, plan, machine, p).map(Some)
}

fn write_csv(path: &Path, rows: &[Row]) -> Result<(), String> {
    let mut text = String::from(HEADER);
    text.push('\n');
    for r in rows {
        let _ = writeln!(text, "{}", r.csv());
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn plot_svg(path: &Path, rows: &[Row], source: &str) -> Result<(), String> {
    use plotters::prelude::*;
    let e = |x: &dyn std::fmt::Display| format!("{}: {x}", path.display());
    let pts: Vec<(f64, f64)> = rows.iter().filter_map(|r| Some((r.measured_us, r.modelled_us?))).filter(|(a, b)| *a > 0.0 && *b > 0.0).collect();
    let root = SVGBackend::new(path, (900, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let (lo, hi) = pts.iter().fold((f64::MAX, 0f64), |(lo, hi), &(a, b)| (lo.min(a).min(b), hi.max(a).max(b)));
    let (lo, hi) = if pts.is_empty() { (1.0, 10.0) } else { (lo * 0.8, hi * 1.25) };
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("kernel time: measured ({source}) vs MODELLED (timing model)"), ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
        .map_err(|x| e(&x))?;
    chart.configure_mesh().x_desc(format!("measured µs ({source})")).y_desc("modelled µs").draw().map_err(|x| e(&x))?;
    chart.draw_series(LineSeries::new(vec![(lo, lo), (hi, hi)], BLACK.stroke_width(1))).map_err(|x| e(&x))?.label("modelled = measured");
    chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, BLUE.filled()))).map_err(|x| e(&x))?.label("one kernel at one shape");
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).draw().map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
