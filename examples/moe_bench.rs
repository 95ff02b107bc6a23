//! Modelled per-stage times of [`MoeLayer`] at real MoE configurations: the rows of AMD's fused
//! FP8 block-scale MoE kernel's configuration table (`shapes_fmoe_1stage.csv` in the peers
//! directory: experts, top-k, hidden `model_dim`, expert width `inter_dim`, tokens), run through
//! the emulator's timing model. **Every time printed is modelled, not measured.**
//!
//! The layer's weights are all-zero device allocations (the kernels' control flow and memory
//! traffic do not depend on the values, and the model skips the MFMA math); each token is routed
//! to `k` distinct experts drawn uniformly (seeded). The contiguous layout runs at every token
//! count (`masked_max_tokens = 0`), with the row alignment the layer chooses (the grouped GEMMs'
//! tile height) or pinned to DeepGEMM's 128 rows (`--align 128`, the layout before issue 31, with
//! the tight `T·k + 127·min(E, T·k)` bound).
//!
//! ```text
//! cargo run --release --example moe_bench -- --machine mi325x --weights both --align both --max-tokens 1024
//! ```
//!
//! Options: `--csv PATH` (default `$FP8GEMM_PEERS_DIR/shapes_fmoe_1stage.csv`, else
//! `../shared/peers/shapes_fmoe_1stage.csv`), `--machine mi300x|mi325x`, `--weights
//! logical|preshuffled|both`, `--align auto|128|both|ROWS`, `--max-tokens N` (the largest token count run, default 1024;
//! not applied to the counts `--tokens` lists), `--tokens T,T,…`,
//! `--experts E` (only rows with that many experts), `--layer E,k,H,I[,Is]` (instead of the CSV: a
//! layer of `E` experts, top-`k`, hidden `H`, width `I`, a shared expert of width `Is`, at the
//! `--tokens` counts; repeatable), `--verbose` (every launch's kernel, grid,
//! modelled time, HBM traffic, busy pipes and stall cycles, and per XCD its working workgroups, last end and fabric-link bytes, on standard error), `--split S` (force every GEMM's
//! split-K count, [`fp8gemm::Overrides::with_split`], with a 256 MiB workspace; a count a launch
//! cannot take is its error), `--seed S` (another routing draw; 0 is the tables'), `--plot PATH` (an SVG of the modelled
//! layer time, with and without the routing launches, vs tokens), `--choices` (only the row alignment the layer chooses for each
//! configuration, from the cost model: nothing is run), `--epilogues auto|none|activation|unpermute|both`
//! (pin which steps run as GEMM epilogues, [`fp8gemm::MoeLayer::set_epilogues`]; `auto`, the
//! default, is the layer's own choice). Prints one Markdown table row per run.

use std::collections::BTreeMap;
use std::path::PathBuf;

use amdgpu_emu::hip::TimingMode;
use amdgpu_emu::timing::{Machine, Scope, SimOptions};
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::{Context, DeviceGroupedWeights, DeviceWeights, MoeLayer, MoeLayout, MoeOptions, MoeScratch, MoeStage, Stream, WeightLayout};
use half::bf16;
use rand::{Rng, SeedableRng, rngs::StdRng};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// One configuration: experts, top-k, hidden, expert width, tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Config {
    experts: usize,
    top_k: usize,
    hidden: usize,
    inter: usize,
    /// Shared expert width (0: none).
    shared: usize,
    tokens: usize,
}

struct Args {
    csv: PathBuf,
    machine: String,
    weights: Vec<WeightLayout>,
    aligns: Vec<Option<usize>>,
    max_tokens: usize,
    tokens: Option<Vec<usize>>,
    experts: Option<usize>,
    verbose: bool,
    /// `--split S`: force every GEMM's split count (an explicit override, for experiments).
    split: Option<u32>,
    /// `--layer` shapes `(E, k, H, I, Is)` instead of the CSV's.
    layers: Vec<(usize, usize, usize, usize, usize)>,
    /// `--choices`: print the row alignment the layer chooses per configuration, run nothing.
    choices: bool,
    /// `--seed S`: another routing draw (0, the default, is the tables' draw).
    seed: u64,
    /// `--plot PATH`: an SVG of the modelled layer time vs tokens, a line per layer shape,
    /// weight layout and row alignment.
    plot: Option<PathBuf>,
    /// `--epilogues`: pinned epilogues (`None`: the layer's choice).
    epilogues: Option<fp8gemm::MoeEpilogues>,
}

fn parse_args() -> Res<Args> {
    let peers = std::env::var_os("FP8GEMM_PEERS_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("../shared/peers"));
    let mut a = Args {
        csv: peers.join("shapes_fmoe_1stage.csv"),
        machine: "mi325x".into(),
        weights: vec![WeightLayout::Logical, WeightLayout::Preshuffled],
        aligns: vec![None],
        max_tokens: 1024,
        tokens: None,
        experts: None,
        verbose: false,
        split: None,
        seed: 0,
        plot: None,
        layers: Vec::new(),
        choices: false,
        epilogues: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--csv" => a.csv = PathBuf::from(value()?),
            "--machine" => a.machine = value()?,
            "--weights" => {
                a.weights = match value()?.as_str() {
                    "logical" => vec![WeightLayout::Logical],
                    "preshuffled" => vec![WeightLayout::Preshuffled],
                    "both" => vec![WeightLayout::Logical, WeightLayout::Preshuffled],
                    v => return Err(format!("--weights {v}: expected logical, preshuffled or both").into()),
                }
            }
            "--align" => {
                a.aligns = match value()?.as_str() {
                    "auto" => vec![None],
                    "128" => vec![Some(128)],
                    "both" => vec![Some(128), None],
                    v => match v.parse::<usize>() {
                        Ok(n) => vec![Some(n)],
                        Err(_) => return Err(format!("--align {v}: expected auto, 128, both or a row count (32, 64, 128)").into()),
                    },
                }
            }
            "--max-tokens" => a.max_tokens = value()?.parse()?,
            "--tokens" => a.tokens = Some(value()?.split(',').map(str::parse).collect::<Result<_, _>>()?),
            "--experts" => a.experts = Some(value()?.parse()?),
            "--verbose" => a.verbose = true,
            "--choices" => a.choices = true,
            "--one-xcd" => {
                return Err("--one-xcd: the one-XCD scope runs only XCD 0's workgroups functionally, and the layer's \
                            later launches read what the others would have written (the route's rows steer the GEMMs); \
                            the layer is timed with all XCDs"
                    .into());
            }
            "--split" => a.split = Some(value()?.parse()?),
            "--epilogues" => {
                let v = value()?;
                let (activation, unpermute) = match v.as_str() {
                    "auto" => {
                        a.epilogues = None;
                        continue;
                    }
                    "none" => (false, false),
                    "activation" => (true, false),
                    "unpermute" => (false, true),
                    "both" => (true, true),
                    v => return Err(format!("--epilogues {v}: expected auto, none, activation, unpermute or both").into()),
                };
                a.epilogues = Some(fp8gemm::MoeEpilogues { activation, unpermute });
            }
            "--seed" => a.seed = value()?.parse()?,
            "--plot" => a.plot = Some(PathBuf::from(value()?)),
            "--layer" => {
                let v: Vec<usize> = value()?.split(',').map(str::parse).collect::<Result<_, _>>()?;
                match v[..] {
                    [e, k, h, i] => a.layers.push((e, k, h, i, 0)),
                    [e, k, h, i, is] => a.layers.push((e, k, h, i, is)),
                    _ => return Err("--layer E,k,H,I[,Is]".into()),
                }
            }
            f => return Err(format!("unknown option {f} (see the example's docs)").into()),
        }
    }
    Ok(a)
}

/// The distinct configurations of the CSV (columns by header name).
fn read_configs(path: &PathBuf) -> Res<Vec<Config>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e} (set FP8GEMM_PEERS_DIR to the peers directory)", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("empty CSV")?.split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).ok_or_else(|| format!("{}: no column {name}", path.display()));
    let (ct, cm, ci, ce, ck) = (col("token")?, col("model_dim")?, col("inter_dim")?, col("expert")?, col("topk")?);
    let mut v = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(',').collect();
        let get = |i: usize| -> Res<usize> { Ok(f.get(i).ok_or_else(|| format!("short row: {line}"))?.trim().parse()?) };
        let c = Config { experts: get(ce)?, top_k: get(ck)?, hidden: get(cm)?, inter: get(ci)?, shared: 0, tokens: get(ct)? };
        if !v.contains(&c) {
            v.push(c);
        }
    }
    Ok(v)
}

fn stage_name(s: MoeStage) -> &'static str {
    match s {
        MoeStage::Route => "route",
        MoeStage::GatherQuantize => "gather",
        MoeStage::GateUpGemm => "gate_up",
        MoeStage::SiluMulQuantize => "silu",
        MoeStage::DownGemm => "down",
        MoeStage::SharedExpert => "shared",
        MoeStage::Unpermute => "unpermute",
        _ => "other",
    }
}

const STAGES: [&str; 7] = ["route", "gather", "gate_up", "silu", "shared", "down", "unpermute"];

fn main() -> Res<()> {
    let args = parse_args()?;
    let verbose = args.verbose;
    let machine = Machine::by_name(&args.machine).ok_or_else(|| format!("unknown machine {} (mi300x, mi325x)", args.machine))?.clone();
    let from_csv = if args.layers.is_empty() { read_configs(&args.csv)? } else { Vec::new() };
    let mut from_flags = Vec::new();
    for &(experts, top_k, hidden, inter, shared) in &args.layers {
        let tokens = args.tokens.clone().ok_or("--layer needs --tokens")?;
        from_flags.extend(tokens.into_iter().map(|tokens| Config { experts, top_k, hidden, inter, shared, tokens }));
    }
    let mut configs: Vec<Config> = from_csv
        .into_iter()
        .chain(from_flags)
        // `--max-tokens` bounds the CSV's rows; token counts listed with `--tokens` all run.
        .filter(|c| args.tokens.is_some() || c.tokens <= args.max_tokens)
        .filter(|c| args.tokens.as_ref().is_none_or(|t| t.contains(&c.tokens)))
        .filter(|c| args.experts.is_none_or(|e| e == c.experts))
        .collect();
    configs.sort();
    let ctx = Context::new()?;
    let mut stream = Stream::new(&ctx)?;
    println!("modelled {} times per stage (emulator timing model; modelled, not measured), µs:", machine.name);
    println!(
        "| E, k, H, I | T | weights | align | rows | route | gather+quant | gate_up | silu·mul | shared | down | unpermute | total (modelled) | launches |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    // The plotted series: label → (tokens, total µs, excl. route µs).
    let mut series: BTreeMap<String, Vec<(usize, f64, f64)>> = BTreeMap::new();
    // Group by layer shape: one weight allocation per shape and weight layout.
    let mut shapes: BTreeMap<(usize, usize, usize, usize, usize), Vec<usize>> = BTreeMap::new();
    for c in &configs {
        shapes.entry((c.experts, c.top_k, c.hidden, c.inter, c.shared)).or_default().push(c.tokens);
    }
    for ((e, k, h, i, is), tokens) in shapes {
        for &wl in &args.weights {
            let gate_up = DeviceGroupedWeights::<E4M3Fnuz>::alloc_with_layout(&ctx, e, 2 * i, h, wl)?;
            let down = DeviceGroupedWeights::<E4M3Fnuz>::alloc_with_layout(&ctx, e, h, i, wl)?;
            let shared = match is {
                0 => None,
                is => {
                    Some((DeviceWeights::<E4M3Fnuz>::alloc_with_layout(&ctx, 2 * is, h, wl)?, DeviceWeights::<E4M3Fnuz>::alloc_with_layout(&ctx, h, is, wl)?))
                }
            };
            let mut layer = MoeLayer::new(&ctx, gate_up, down, shared, MoeOptions { top_k: k, masked_max_tokens: 0 })?;
            layer.set_epilogues(args.epilogues);
            for &align in &args.aligns {
                layer.set_contiguous_align(align)?;
                for &t in &tokens {
                    if args.choices {
                        let wname = if wl == WeightLayout::Logical { "logical" } else { "pre-shuffled" };
                        println!("| {e}, {k}, {h}, {i} | {t} | {wname} | {} (chosen, nothing run) |", layer.contiguous_align(&stream, t)?);
                        for c in layer.fused_plans(&stream, t)? {
                            println!(
                                "    align {:>3}: {} experts, {} rows; gate_up {} ({}) est {:.1} µs, down {} ({}) est {:.1} µs, separate passes {:.1} µs, sum {:.1} µs (modelled estimates)",
                                c.align,
                                c.active,
                                c.rows,
                                c.gate_up.label(),
                                c.gate_up.kernel.name(),
                                c.gate_up.estimate_s * 1e6,
                                c.down.label(),
                                c.down.kernel.name(),
                                c.down.estimate_s * 1e6,
                                c.passes_s * 1e6,
                                c.estimate_s * 1e6
                            );
                        }
                        continue;
                    }
                    let mut rng = StdRng::seed_from_u64((e * 31 + t) as u64 ^ args.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    let mut ids = Vec::with_capacity(t * k);
                    for _ in 0..t {
                        let mut row: Vec<i32> = Vec::with_capacity(k);
                        while row.len() < k.min(e) {
                            let x = rng.random_range(0..e as i32);
                            if !row.contains(&x) {
                                row.push(x);
                            }
                        }
                        ids.extend(row);
                    }
                    let mut scratch = MoeScratch::new(&layer, t, 0)?;
                    let x = ctx.alloc_zeroed::<bf16>(t * h)?;
                    let d_ids = ctx.upload(&ids)?;
                    let d_w = ctx.upload(&vec![1.0f32 / k as f32; t * k])?;
                    let mut out = ctx.alloc_zeroed::<bf16>(t * h)?;
                    stream.set_overrides(match args.split {
                        Some(s) => fp8gemm::Overrides::NONE.with_split(s),
                        None => fp8gemm::Overrides::NONE,
                    });
                    if args.split.is_some() {
                        // A forced split needs partials for every tile of the largest launch.
                        stream.set_workspace(Some(fp8gemm::Workspace::new(&ctx, 64 << 20)?))?;
                    }
                    stream.synchronize()?;
                    let options = SimOptions { scope: Scope::Full, skip_mfma_math: true, checks: Default::default(), top: 0, trace_workgroup: None };
                    let mut per: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
                    let started = std::time::Instant::now();
                    amdgpu_emu::hip::set_timing(Some(TimingMode { machine: machine.clone(), options }));
                    let run = layer.forward_with(&stream, &x, &d_ids, &d_w, &mut out, &mut scratch, MoeLayout::Contiguous, &mut |stage| {
                        stream.synchronize()?;
                        let report = amdgpu_emu::hip::last_launch_timing();
                        let secs = report.as_ref().map_or(0.0, |r| r.seconds);
                        if let (true, Some(r)) = (verbose, &report) {
                            {
                                let stalls: Vec<String> =
                                    amdgpu_emu::timing::Stall::ALL.iter().zip(r.stalls).filter(|(_, c)| *c > 0).map(|(s, c)| format!("{s:?} {c}")).collect();
                                eprintln!(
                                    "    {stage:?}: {} grid {:?} ({} per CU), {:.2} µs (modelled), {} cycles, HBM {:.1} MB ({:.2} TB/s), L2 {:.1} MB, fabric {:.1} MB; busy MFMA {:.0} % VMEM {:.0} % L2 {:.0} % HBM {:.0} %; stalls {}",
                                    r.kernel,
                                    r.grid,
                                    r.workgroups_per_cu,
                                    r.seconds * 1e6,
                                    r.cycles,
                                    r.hbm_bytes / 1e6,
                                    r.hbm_bytes / r.seconds / 1e12,
                                    r.l2_bytes / 1e6,
                                    r.fabric_bytes / 1e6,
                                    r.busy.mfma * 100.0,
                                    r.busy.vmem * 100.0,
                                    r.busy.l2 * 100.0,
                                    r.busy.hbm * 100.0,
                                    stalls.join(", ")
                                );
                                let mut d: Vec<u64> = r.spans.iter().map(|s| s.end - s.start).collect();
                                d.sort_unstable();
                                if let (Some(&lo), Some(&hi)) = (d.first(), d.last()) {
                                    let last_start = r.spans.iter().map(|s| s.start).max().unwrap_or(0);
                                    eprintln!(
                                        "      workgroups: cycles min {lo} median {} max {hi}; last start at cycle {last_start}",
                                        d[d.len() / 2]
                                    );
                                    // Per XCD: workgroups that ran longer than an empty tile's
                                    // return, and when the XCD's last one ended.
                                    let per_xcd = r.spans.iter().map(|s| s.cu).max().map_or(1, |c| c as usize + 1).div_ceil(8).max(1);
                                    let mut xcd = [(0u64, 0u64); 8];
                                    for s in &r.spans {
                                        let x = (s.cu as usize / per_xcd).min(7);
                                        if s.end - s.start > 4 * lo.max(1) {
                                            xcd[x].0 += 1;
                                        }
                                        xcd[x].1 = xcd[x].1.max(s.end);
                                    }
                                    let cells: Vec<String> = xcd.iter().map(|(n, e)| format!("{n}/{}k", e / 1000)).collect();
                                    eprintln!("      per XCD (working workgroups / last end, cycles): {}", cells.join(" "));
                                    let fab: Vec<String> = r.fabric_by_xcd.iter().map(|b| format!("{:.1}", b / 1e6)).collect();
                                    eprintln!("      per XCD fabric MB: {}", fab.join(" "));
                                }
                            }
                        }
                        let slot = per.entry(stage_name(stage)).or_default();
                        slot.0 += secs;
                        slot.1 += 1;
                        Ok(())
                    });
                    amdgpu_emu::hip::set_timing(None);
                    let run = run?;
                    let total: f64 = per.values().map(|v| v.0).sum();
                    let cells: Vec<String> = STAGES.iter().map(|s| per.get(s).map_or("-".into(), |v| format!("{:.1}", v.0 * 1e6))).collect();
                    let launches: usize = per.values().map(|v| v.1).sum();
                    let route = per.get("route").map_or(0.0, |v| v.0);
                    let wname = if wl == WeightLayout::Logical { "logical" } else { "pre-shuffled" };
                    let label = format!(
                        "E={e} k={k} H={h} I={i}{} {wname}, align {}",
                        if is > 0 { format!(" +shared {is}") } else { String::new() },
                        align.map_or("auto".to_string(), |a| a.to_string())
                    );
                    series.entry(label).or_default().push((t, total * 1e6, (total - route) * 1e6));
                    println!(
                        "| {e}, {k}, {h}, {i}{} | {t} | {} | {} | {} | {} | **{:.1}** | {launches} |",
                        if is > 0 { format!(" + shared {is}") } else { String::new() },
                        if wl == WeightLayout::Logical { "logical" } else { "pre-shuffled" },
                        run.align,
                        run.rows,
                        cells.join(" | "),
                        total * 1e6
                    );
                    eprintln!(
                        "  (E={e} T={t} {wl:?} align {}: {} launches, {:.1} s of emulation)",
                        run.align,
                        per.values().map(|v| v.1).sum::<usize>(),
                        started.elapsed().as_secs_f64()
                    );
                }
            }
        }
    }
    if let Some(path) = &args.plot {
        plot(path, machine.name, &series)?;
    }
    Ok(())
}

/// The modelled layer time vs tokens (log-log): a solid line per series with the routing
/// launches, a dashed one without them.
fn plot(path: &std::path::Path, machine: &str, series: &BTreeMap<String, Vec<(usize, f64, f64)>>) -> Res<()> {
    use plotters::prelude::*;
    let e = |x: &dyn std::fmt::Display| format!("{}: {x}", path.display());
    let pts = series.values().flatten();
    let (t_max, us_max) = pts.clone().fold((1.0f64, 1.0f64), |(t, u), p| (t.max(p.0 as f64), u.max(p.1)));
    let us_min = pts.map(|p| p.2).fold(f64::INFINITY, f64::min).max(0.1);
    let root = SVGBackend::new(path, (1100, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("MoeLayer on {machine}: layer time vs tokens (MODELLED, timing model; dashed: without routing)"), ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((0.8f64..t_max * 1.25).log_scale(), (us_min * 0.8..us_max * 1.25).log_scale())
        .map_err(|x| e(&x))?;
    chart.configure_mesh().x_desc("tokens").y_desc("µs (modelled)").draw().map_err(|x| e(&x))?;
    let palette = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK, RGBColor(255, 140, 0), RGBColor(128, 0, 128), RGBColor(0, 128, 128), RGBColor(128, 128, 0)];
    for (i, (label, pts)) in series.iter().enumerate() {
        let c = palette[i % palette.len()];
        let mut pts = pts.clone();
        pts.sort_by_key(|p| p.0);
        let total: Vec<(f64, f64)> = pts.iter().map(|p| (p.0 as f64, p.1)).collect();
        let excl: Vec<(f64, f64)> = pts.iter().map(|p| (p.0 as f64, p.2)).collect();
        chart
            .draw_series(LineSeries::new(total.clone(), c.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        chart.draw_series(total.into_iter().map(|p| Circle::new(p, 3, c.filled()))).map_err(|x| e(&x))?;
        chart.draw_series(DashedLineSeries::new(excl, 6, 4, c.stroke_width(1))).map_err(|x| e(&x))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).position(SeriesLabelPosition::UpperLeft).draw().map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
