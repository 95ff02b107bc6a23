//! `fp8gemm eval`: the selector judged on shapes it was never tuned on. Every time printed is
//! **modelled** by the emulator's timing model, not measured.
//!
//! The evaluation set was fixed before the cost model was generated and is never sampled by
//! `fp8gemm tune --cost` (whose shapes are random draws): the (N, K) pairs of the dense
//! projections of public model configurations (the `config.json` of each model card on
//! Hugging Face), at M from 1 to 32768 including values that are not multiples of 16:
//!
//! | model (config.json) | hidden | projection | N | K |
//! |---|---|---|---|---|
//! | DeepSeek-V3 / V3.2 (`deepseek-ai/DeepSeek-V3`) | 7168 | fused q_a + kv_a (1536 + 512 + 64) | 2112 | 7168 |
//! | DeepSeek-V3 / V3.2 | 7168 | dense-layer down (intermediate 18432) | 7168 | 18432 |
//! | Qwen3-235B-A22B (`Qwen/Qwen3-235B-A22B`) | 4096 | q,k,v (64 + 4 + 4 heads × 128) | 9216 | 4096 |
//! | Qwen3-235B-A22B | 4096 | o (64 × 128 → 4096) | 4096 | 8192 |
//! | Llama-3.1-70B (`meta-llama/Llama-3.1-70B`) | 8192 | gate+up, 8-way TP (2 · 28672 / 8) | 7168 | 8192 |
//! | Llama-3.1-70B | 8192 | down, 8-way TP (28672 / 8) | 8192 | 3584 |
//! | Llama-3.1-405B (`meta-llama/Llama-3.1-405B`) | 16384 | q,k,v 8-way TP ((128 + 16) · 128 / 8) | 2304 | 16384 |
//! | GLM-4.5 (`zai-org/GLM-4.5`) | 5120 | o (96 × 128 → 5120) | 5120 | 12288 |
//! | Kimi K2 (`moonshotai/Kimi-K2-Instruct`) | 7168 | q_b (64 heads × 192, q_lora 1536) | 12288 | 1536 |
//! | Mixtral-8x7B (`mistralai/Mixtral-8x7B-v0.1`) | 4096 | w2 (intermediate 14336) | 4096 | 14336 |
//!
//! For each shape: the selector's plan (`fp8gemm::select::plan`) is timed; so is, for every
//! registered kernel, its best-estimated schedule (split count, stream-K `g`/head) if that is
//! within `--prune` of the plan's estimate, and every schedule estimated within 1.1× of the plan
//! (what is not timed is counted and printed); the best timed candidate gives the regret
//! `time(plan) / time(best) − 1`. The cliff check times the plan chosen at M + 16 and
//! flags `time(M+16) / time(M) > 1.15` unless the best candidate at M + 16 (timed the same way)
//! jumps as much.
//!
//! `--time-cache FILE` keeps every modelled time in a file ([`crate::time_cache`]): judging a
//! change to the cost model then simulates only the plans no earlier run timed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use fp8gemm::config::{GemmDesc, Overrides};
use fp8gemm::select::{self, CostModel, Plan};
use fp8gemm::{Context, WeightLayout};

use crate::time_cache::TimeCache;
use crate::tune_cost::time_plan;

/// The (N, K) pairs of the evaluation set (module docs), with their source.
pub const PAIRS: [(u32, u32, &str); 10] = [
    (2112, 7168, "DeepSeek-V3 q_a+kv_a"),
    (7168, 18432, "DeepSeek-V3 dense down"),
    (9216, 4096, "Qwen3-235B qkv"),
    (4096, 8192, "Qwen3-235B o"),
    (7168, 8192, "Llama-3.1-70B gate+up TP8"),
    (8192, 3584, "Llama-3.1-70B down TP8"),
    (2304, 16384, "Llama-3.1-405B qkv TP8"),
    (5120, 12288, "GLM-4.5 o"),
    (12288, 1536, "Kimi-K2 q_b"),
    (4096, 14336, "Mixtral-8x7B w2"),
];

/// The M values of the evaluation set.
pub const MS: [u32; 14] = [1, 7, 32, 64, 100, 200, 333, 512, 777, 1024, 2000, 4096, 8192, 32768];

/// The (N, K) pairs of the m-grouped evaluation set: routed-expert GEMMs of public MoE
/// configurations (`config.json` of each model card), gate·up (N = 2 · moe_intermediate, K =
/// hidden) and down (N = hidden, K = moe_intermediate).
pub const GROUPED_PAIRS: [(u32, u32, &str); 4] = [
    (4096, 7168, "DeepSeek-V3 expert gate+up"),
    (7168, 2048, "DeepSeek-V3 expert down"),
    (3072, 4096, "Qwen3-235B expert gate+up"),
    (4096, 1536, "Qwen3-235B expert down"),
];

/// The layouts of the m-grouped evaluation set: masked `(groups, expected_m)` from one group
/// of 1024 rows to 64 groups of 4 rows (decode over many local experts), contiguous
/// `(groups, rows per group)` at prefill sizes.
pub const GROUPED_MASKED: [(u32, u32); 6] = [(1, 1024), (4, 256), (8, 100), (16, 64), (32, 17), (64, 4)];
/// See [`GROUPED_MASKED`].
pub const GROUPED_CONTIGUOUS: [(u32, u32); 3] = [(4, 1024), (8, 384), (32, 128)];

/// `eval --grouped`: for each shape of the m-grouped set (fixed before the grouped kernels'
/// coefficients were generated; the tuner's grouped draws are random), the planner's choice
/// ([`select::plan_grouped`]) and every candidate ([`select::grouped_candidates`]) timed
/// through the timing model (masked: capacity `⌈1.3·expected_m⌉`, counts spread around
/// `expected_m` as in a decode step; contiguous: each group's
/// last 128-row block partly padding, as the tuner lays it out), the regret
/// `time(plan)/time(best) − 1`. Every time is modelled. With `masked_seeds`, only the masked
/// layouts, their counts drawn independently from each seed
/// ([`crate::operands::random_masked_counts`], as DeepGEMM's tests draw them): every candidate
/// timed on every draw and judged by its mean time (the counts live on the device, so a plan
/// is right when it is fastest on average). A non-empty `groups` keeps only the shapes with
/// those group counts. With `time_cache`, modelled times are kept in that file between runs
/// ([`crate::time_cache`]).
#[allow(clippy::too_many_arguments)]
pub fn run_grouped(
    machine: &str,
    layout: WeightLayout,
    csv: Option<&Path>,
    verbose: bool,
    estimates: bool,
    masked_seeds: &[u64],
    groups: &[u32],
    time_cache: Option<&Path>,
) -> Result<(), String> {
    let machine = crate::profile::machine_by_name(machine)?;
    let cus = machine.xcds * machine.cus_per_xcd;
    let (ctx, arch) = crate::profile::context_for(&machine)?;
    let mut cache = TimeCache::open(time_cache, &machine, arch)?;
    println!(
        "fp8gemm eval --grouped on {} ({layout} weights): the planner's choice against every candidate — all times MODELLED by the timing model",
        machine.name
    );
    println!(
        "{:<10} {:>5} {:>6} {:>6} {:>6} {:<28} {:<26} {:>9} {:<26} {:>9} {:>7}",
        "layout", "G", "m", "N", "K", "source", "plan", "plan µs", "best", "best µs", "regret"
    );
    let mut descs = Vec::new();
    for &(n, k, src) in &GROUPED_PAIRS {
        for &(g, m) in &GROUPED_MASKED {
            descs.push((crate::operands::masked_spread_desc(g, m, n, k, arch).with_cus(cus), src));
        }
        for &(g, r) in GROUPED_CONTIGUOUS.iter().filter(|_| masked_seeds.is_empty()) {
            descs.push((GemmDesc::m_grouped_contiguous(g * r, n, k, g, arch).with_cus(cus), src));
        }
    }
    descs.retain(|(d, _)| groups.is_empty() || groups.contains(&d.groups));
    let mut rows = Vec::new();
    let mut out = String::new();
    let _ = writeln!(out, "# fp8gemm eval --grouped on {}, {layout} weights: every µs MODELLED by the emulator's timing model", machine.name);
    let _ = writeln!(out, "layout,groups,m,n,k,source,plan,plan_us,best,best_us,regret");
    for (desc, src) in descs {
        let (plan, _) = select::plan_grouped(&desc, layout, &Overrides::NONE, u64::MAX).map_err(|e| e.to_string())?;
        if estimates {
            // The choice alone, nothing timed.
            println!(
                "{:?} G {} m {} over {}x{} ({src}): plan {} estimate {:.2} µs",
                desc.kind,
                desc.groups,
                desc.expected_m,
                desc.n,
                desc.k,
                plan.label(),
                plan.estimate_s * 1e6
            );
            if verbose {
                let model = CostModel::for_arch(desc.arch).map_err(|e| e.to_string())?;
                for c in select::grouped_candidates(&desc, layout) {
                    // The planner's estimate (a masked launch's: the mean over draws of its
                    // counts), and the terms of the features at the mean.
                    let f = select::Features::of(&c, &desc);
                    let (est, compute, memory) = match model.cost_of(c.kernel) {
                        Some(k) => (c.estimate_s, model.estimate_with(&k, &f).1, model.memory_s(&k, &f)),
                        None => (f64::INFINITY, f64::INFINITY, f64::NAN),
                    };
                    println!(
                        "    {:<32} estimate {:>9.2} µs (CUs {:>8.2}, memory {:>8.2})",
                        c.label(),
                        est * 1e6,
                        (compute + model.launch_s) * 1e6,
                        memory * 1e6
                    );
                }
            }
            continue;
        }
        // The mean over the draws of the counts (one: the even spread).
        let draws: Vec<Option<u64>> = if masked_seeds.is_empty() { vec![None] } else { masked_seeds.iter().copied().map(Some).collect() };
        let mut mean_us = |p: &Plan| -> Result<f64, String> {
            let mut sum = 0.0;
            for &d in &draws {
                sum += cache.time(&desc, p, d, || time_masked(&ctx, &machine, p, &desc, d))?;
            }
            Ok(sum / draws.len() as f64 * 1e6)
        };
        let plan_us = mean_us(&plan)?;
        let (mut best, mut best_us) = (plan.label(), plan_us);
        for c in select::grouped_candidates(&desc, layout) {
            if std::ptr::eq(c.kernel, plan.kernel) && c.splits == plan.splits && c.remap == plan.remap {
                continue;
            }
            let t = mean_us(&c)?;
            if verbose {
                println!("    {:<32} estimate {:>9.2} µs, modelled {:>9.2} µs", c.label(), c.estimate_s * 1e6, t);
            }
            if t < best_us {
                (best, best_us) = (c.label(), t);
            }
        }
        let kind = if desc.kind == fp8gemm::config::GemmKind::MGroupedMasked { "masked" } else { "contiguous" };
        let m = if kind == "masked" { desc.expected_m } else { desc.m / desc.groups };
        let regret = plan_us / best_us - 1.0;
        println!(
            "{:<10} {:>5} {:>6} {:>6} {:>6} {:<28} {:<26} {:>9.2} {:<26} {:>9.2} {:>6.1}%",
            kind,
            desc.groups,
            m,
            desc.n,
            desc.k,
            src,
            plan.label(),
            plan_us,
            best,
            best_us,
            100.0 * regret
        );
        let _ = writeln!(out, "{kind},{},{m},{},{},{src},{},{plan_us:.3},{best},{best_us:.3},{regret:.4}", desc.groups, desc.n, desc.k, plan.label());
        rows.push(regret);
    }
    if !rows.is_empty() {
        let g = (rows.iter().map(|r| (1.0 + r).ln()).sum::<f64>() / rows.len() as f64).exp() - 1.0;
        let worst = rows.iter().copied().fold(0.0, f64::max);
        let over = if masked_seeds.is_empty() {
            String::new()
        } else {
            format!(" (mean times over {} draws of the masked counts, seeds {masked_seeds:?})", masked_seeds.len())
        };
        println!("summary (modelled): {} grouped shapes, regret geomean {:.2}%, worst {:.1}%{over}", rows.len(), 100.0 * g, 100.0 * worst);
        cache.print_use();
    }
    if let Some(p) = csv {
        std::fs::write(p, out).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// Arguments of `eval`.
pub struct EvalArgs {
    pub machine: String,
    pub layout: WeightLayout,
    pub prune: f64,
    pub max_blocks: u64,
    pub pairs: Vec<usize>,
    pub ms: Vec<u32>,
    pub csv: Option<PathBuf>,
    pub plot: Option<PathBuf>,
    pub no_cliff: bool,
    pub shapes: Vec<(u32, u32, u32)>,
    pub verbose: bool,
    pub estimates: bool,
    /// `--time-cache`: modelled times kept between runs ([`crate::time_cache`]).
    pub time_cache: Option<PathBuf>,
    /// `--import-verbose`: `eval --verbose` logs read into the time cache first.
    pub import_verbose: Vec<PathBuf>,
}

/// One evaluated shape.
#[derive(Clone, Debug)]
struct Row {
    m: u32,
    n: u32,
    k: u32,
    source: &'static str,
    plan: String,
    plan_us: f64,
    best: String,
    best_us: f64,
    timed: usize,
    pruned: usize,
    /// time(plan at M+16) / time(plan at M), and whether the best candidate jumps as much.
    cliff: Option<(f64, bool)>,
}

impl Row {
    fn regret(&self) -> f64 {
        self.plan_us / self.best_us - 1.0
    }
    fn tflops(&self) -> f64 {
        2.0 * f64::from(self.m) * f64::from(self.n) * f64::from(self.k) / (self.plan_us * 1e-6) / 1e12
    }
}

/// Modelled seconds of `plan` on `desc`, a masked layout's counts drawn from `seed` where given.
fn time_masked(ctx: &Context, machine: &amdgpu_emu::timing::Machine, plan: &Plan, desc: &GemmDesc, seed: Option<u64>) -> Result<f64, String> {
    Ok(crate::tune_cost::profile_plan_with(ctx, machine, plan, desc, seed, None)?.seconds)
}

/// Times the plan and the candidates within `prune` of its estimate; returns (plan µs, best
/// label, best µs, timed, pruned).
fn judge(
    ctx: &Context,
    machine: &amdgpu_emu::timing::Machine,
    desc: &GemmDesc,
    layout: WeightLayout,
    prune: f64,
    verbose: bool,
    cache: &mut TimeCache,
) -> Result<(Plan, f64, String, f64, usize, usize), String> {
    let (plan, _) = select::plan(desc, layout, &Overrides::NONE, u64::MAX).map_err(|e| e.to_string())?;
    let model = CostModel::for_arch(desc.arch).map_err(|e| e.to_string())?;
    let plan_s = cache.time(desc, &plan, None, || time_plan(ctx, machine, &plan, desc))?;
    if verbose {
        println!("    plan {:<32} estimate {:>9.2} µs, modelled {:>9.2} µs", plan.label(), plan.estimate_s * 1e6, plan_s * 1e6);
    }
    let (mut best_label, mut best_s) = (plan.label(), plan_s);
    let (mut timed, mut pruned) = (1, 0);
    let cands: Vec<(Plan, f64)> = select::candidates(desc, layout).into_iter().map(|c| (c, model.estimate(&c, desc))).collect();
    // Per registered kernel, its best-estimated schedule; plus every schedule estimated
    // within `NEAR` of the plan.
    const NEAR: f64 = 1.1;
    let mut best_of_kernel: std::collections::HashMap<&'static str, f64> = std::collections::HashMap::new();
    for (c, est) in &cands {
        let e = best_of_kernel.entry(c.kernel.name()).or_insert(f64::INFINITY);
        *e = e.min(*est);
    }
    for (c, est) in cands {
        if std::ptr::eq(c.kernel, plan.kernel) && c.splits == plan.splits && c.stream_k == plan.stream_k {
            continue;
        }
        // (An estimate that is NaN or +∞ counts as beyond the bound.)
        let kernel_best = best_of_kernel.get(c.kernel.name()).is_some_and(|&b| est <= b) && est <= prune * plan.estimate_s;
        let near = est <= NEAR * plan.estimate_s;
        if !(kernel_best || near) {
            pruned += 1;
            continue;
        }
        let s = cache.time(desc, &c, None, || time_plan(ctx, machine, &c, desc))?;
        if verbose {
            println!("         {:<32} estimate {:>9.2} µs, modelled {:>9.2} µs", c.label(), est * 1e6, s * 1e6);
        }
        timed += 1;
        if s < best_s {
            best_s = s;
            best_label = c.label();
        }
    }
    Ok((plan, plan_s * 1e6, best_label, best_s * 1e6, timed, pruned))
}

/// Prints the plan and every candidate's estimate, least first (nothing is timed).
fn print_estimates(desc: &GemmDesc, layout: WeightLayout) -> Result<(), String> {
    let (plan, _) = select::plan(desc, layout, &Overrides::NONE, u64::MAX).map_err(|e| e.to_string())?;
    let model = CostModel::for_arch(desc.arch).map_err(|e| e.to_string())?;
    println!("{}x{}x{}: plan {} (estimate {:.2} µs)", desc.m, desc.n, desc.k, plan.label(), plan.estimate_s * 1e6);
    let mut cands: Vec<(Plan, (f64, f64))> = select::candidates(desc, layout).into_iter().map(|c| (c, model.estimate_parts(&c, desc))).collect();
    cands.sort_by(|a, b| a.1.0.total_cmp(&b.1.0).then(a.1.1.total_cmp(&b.1.1)));
    for (c, (est, compute)) in cands {
        // The bound that sets the estimate: the CUs, or the memory hierarchy.
        let f = model.versioned(&select::Features::of(&c, desc));
        println!(
            "    {:<36} grid {:>6}  estimate {:>9.2} µs (CUs {:>8.2}; fabric {:>7.1} MB, L2 {:>7.1} MB on the busiest XCD)",
            c.label(),
            c.grid,
            est * 1e6,
            (compute + model.launch_s) * 1e6,
            f.fabric_bytes / 1e6,
            f.l2_block_bytes / 1e6 + f.l2_other_bytes / 1e6
        );
    }
    Ok(())
}

/// Runs `eval`.
pub fn run(a: EvalArgs) -> Result<(), String> {
    let machine = crate::profile::machine_by_name(&a.machine)?;
    let cus = machine.xcds * machine.cus_per_xcd;
    let (ctx, arch) = crate::profile::context_for(&machine)?;
    let mut cache = TimeCache::open(a.time_cache.as_deref(), &machine, arch)?;
    for log in &a.import_verbose {
        let n = cache.import_verbose(log, |m, n, k| GemmDesc::dense(m, n, k, arch).with_cus(cus))?;
        println!("imported {n} modelled times from {} into the time cache", log.display());
    }
    let pairs: Vec<(u32, u32, &str)> = if a.pairs.is_empty() { PAIRS.to_vec() } else { a.pairs.iter().filter_map(|&i| PAIRS.get(i).copied()).collect() };
    let ms: Vec<u32> = if a.ms.is_empty() { MS.to_vec() } else { a.ms.clone() };
    // Explicit shapes replace the set (one (N, K) "pair" per shape, its M alone).
    let shapes: Vec<(u32, u32, u32, &str)> = if a.shapes.is_empty() {
        pairs.iter().flat_map(|&(n, k, src)| ms.iter().map(move |&m| (m, n, k, src))).collect()
    } else {
        a.shapes.iter().map(|&(m, n, k)| (m, n, k, "--shapes")).collect()
    };
    println!(
        "fp8gemm eval on {} ({} weights): the selector's plan against each kernel's best-estimated schedule within {:.2}× of its estimate — all times MODELLED by the timing model",
        machine.name, a.layout, a.prune
    );
    println!(
        "{:>6} {:>6} {:>6} {:<28} {:<26} {:>9} {:<26} {:>9} {:>7} {:>6} {:>9}",
        "M", "N", "K", "source", "plan", "plan µs", "best", "best µs", "regret", "timed", "M+16"
    );
    let mut rows = Vec::new();
    let start = std::time::Instant::now();
    {
        for &(m, n, k, source) in &shapes {
            let desc = GemmDesc::dense(m, n, k, arch).with_cus(cus);
            let work = u64::from(m.div_ceil(64)) * u64::from(n.div_ceil(128)) * u64::from(k / 128);
            if work > a.max_blocks {
                println!("{m:>6} {n:>6} {k:>6} {source:<28} skipped: {work} 64x128 tile-blocks > --max-blocks {}", a.max_blocks);
                continue;
            }
            if a.estimates {
                print_estimates(&desc, a.layout)?;
                continue;
            }
            let (plan, plan_us, best, best_us, timed, pruned) = judge(&ctx, &machine, &desc, a.layout, a.prune, a.verbose, &mut cache)?;
            let cliff = if a.no_cliff {
                None
            } else {
                let up = GemmDesc::dense(m + 16, n, k, arch).with_cus(cus);
                let (p2, _) = select::plan(&up, a.layout, &Overrides::NONE, u64::MAX).map_err(|e| e.to_string())?;
                let t2 = cache.time(&up, &p2, None, || time_plan(&ctx, &machine, &p2, &up))? * 1e6;
                let ratio = t2 / plan_us;
                let best_jumps = if ratio > 1.15 {
                    let (_, _, _, b2, _, _) = judge(&ctx, &machine, &up, a.layout, a.prune, false, &mut cache)?;
                    b2 / best_us > 1.15
                } else {
                    false
                };
                Some((ratio, best_jumps))
            };
            let row = Row { m, n, k, source, plan: plan.label(), plan_us, best, best_us, timed, pruned, cliff };
            println!(
                "{:>6} {:>6} {:>6} {:<28} {:<26} {:>9.2} {:<26} {:>9.2} {:>6.1}% {:>3}/{:<2} {:>9}   [{:.0} s]",
                m,
                n,
                k,
                source,
                row.plan,
                row.plan_us,
                row.best,
                row.best_us,
                100.0 * row.regret(),
                timed,
                timed + pruned,
                row.cliff.map_or("-".to_string(), |(r, j)| format!("{r:.3}{}", if r > 1.15 && !j { " CLIFF" } else { "" })),
                start.elapsed().as_secs_f64()
            );
            rows.push(row);
        }
    }
    summarize(&rows);
    cache.print_use();
    if let Some(p) = &a.csv {
        write_csv(p, &rows, machine.name, a.layout)?;
    }
    if let Some(p) = &a.plot {
        plot(p, &rows, a.layout)?;
    }
    Ok(())
}

fn summarize(rows: &[Row]) {
    if rows.is_empty() {
        return;
    }
    let g = (rows.iter().map(|r| (1.0 + r.regret()).ln()).sum::<f64>() / rows.len() as f64).exp() - 1.0;
    let worst = rows.iter().max_by(|a, b| a.regret().total_cmp(&b.regret())).expect("rows");
    let cliffs: Vec<&Row> = rows.iter().filter(|r| r.cliff.is_some_and(|(x, j)| x > 1.15 && !j)).collect();
    println!(
        "summary (modelled): {} shapes, regret geomean {:.2}%, worst {:.1}% ({}x{}x{}: {} vs {}); cliffs (M+16 > 1.15× without the best jumping): {}",
        rows.len(),
        100.0 * g,
        100.0 * worst.regret(),
        worst.m,
        worst.n,
        worst.k,
        worst.plan,
        worst.best,
        cliffs.len()
    );
    for c in cliffs {
        println!("  cliff at {}x{}x{}: {} → ×{:.3}", c.m, c.n, c.k, c.plan, c.cliff.map_or(0.0, |x| x.0));
    }
}

fn write_csv(path: &Path, rows: &[Row], machine: &str, layout: WeightLayout) -> Result<(), String> {
    let mut s = String::new();
    let _ = writeln!(s, "# fp8gemm eval on {machine}, {layout} weights: every µs MODELLED by the emulator's timing model");
    let _ = writeln!(s, "m,n,k,source,plan,plan_us,best,best_us,regret,timed,pruned,cliff_ratio,best_jumps");
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{:.3},{},{:.3},{:.4},{},{},{},{}",
            r.m,
            r.n,
            r.k,
            r.source,
            r.plan,
            r.plan_us,
            r.best,
            r.best_us,
            r.regret(),
            r.timed,
            r.pruned,
            r.cliff.map_or(String::new(), |c| format!("{:.4}", c.0)),
            r.cliff.map_or(String::new(), |c| c.1.to_string())
        );
    }
    std::fs::write(path, s).map_err(|e| format!("{}: {e}", path.display()))
}

/// Modelled TFLOPS vs M, one line per (N, K).
fn plot(path: &Path, rows: &[Row], layout: WeightLayout) -> Result<(), String> {
    use plotters::prelude::*;
    let e = |x: &dyn std::fmt::Display| format!("{}: {x}", path.display());
    let root = SVGBackend::new(path, (1100, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let max_tf = rows.iter().map(Row::tflops).fold(0.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("fp8gemm selector, {layout} weights: TFLOPS vs M (MODELLED, timing model)"), ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((0.8f64..50000.0).log_scale(), 0.0..max_tf.max(1.0))
        .map_err(|x| e(&x))?;
    chart.configure_mesh().x_desc("M (rows)").y_desc("TFLOPS (modelled)").draw().map_err(|x| e(&x))?;
    let palette = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK, RGBColor(255, 140, 0), RGBColor(128, 0, 128), RGBColor(0, 128, 128), RGBColor(128, 128, 0)];
    let mut fams: Vec<(u32, u32, &str)> = rows.iter().map(|r| (r.n, r.k, r.source)).collect();
    fams.dedup();
    for (i, (n, k, src)) in fams.into_iter().enumerate() {
        let c = palette[i % palette.len()];
        let pts: Vec<(f64, f64)> = rows.iter().filter(|r| (r.n, r.k) == (n, k)).map(|r| (f64::from(r.m), r.tflops())).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(format!("{src} {n}x{k}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled()))).map_err(|x| e(&x))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).position(SeriesLabelPosition::UpperLeft).draw().map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}
