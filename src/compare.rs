//! `fp8gemm compare`: our kernels, as the library chooses them, through the emulator's timing
//! model, beside the numbers of other implementations:
//!
//! * `peers`: every row of `measured_mi325x.csv` (AMD's asm FP8 GEMMs, **measured** on an
//!   MI325X) against our **modelled** time on the MI325X machine;
//! * `peers-mi355x`: every row of `measured_mi355x.csv` (AMD's gfx950 builds, **measured** on
//!   MI350X/MI355X) against our gfx950 code object **modelled** on the MI355X machine;
//! * `deepseek`: DeepSeek-V3's dense shapes (M ∈ {64, 128, 4096} × six (N, K)) modelled on the
//!   MI300X, beside AITER's CK numbers on MI300X where `shared/reference/deepgemm.md` has one;
//! * `grouped`: the m-grouped contiguous and masked benchmark shapes of DeepGEMM, modelled.
//!
//! Our figures are all *modelled* (never measured: no AMD GPU is available to the project); the
//! others are labelled with their source. `--csv` writes the rows, `--plot` an SVG of TFLOPS vs M.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use amdgpu_emu::hip::{self as emu, TimingMode};
use amdgpu_emu::timing::{Machine, Scope, SimOptions, TimingReport};
use fp8gemm::Context;
use fp8gemm::codeobj::Arch;
use fp8gemm::config::{self, GemmDesc};

use crate::operands::{Operands, Problem};

/// Which comparison `fp8gemm compare` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Set {
    /// The shapes of `measured_mi325x.csv`, ours modelled on MI325X vs AMD's measured times.
    Peers,
    /// The shapes of `measured_mi355x.csv` (gfx950), ours run on an emulated gfx950 device
    /// (the gfx950 code object, E4M3FN) and modelled on MI355X vs AMD's measured times. Not part
    /// of `all` (the emulated device's architecture is process-wide).
    PeersMi355x,
    /// DeepSeek-V3's dense shapes on MI300X vs AITER's CK numbers.
    Deepseek,
    /// DeepGEMM's m-grouped contiguous and masked benchmark shapes on MI300X.
    Grouped,
    /// All three.
    All,
}

/// The `--scope` choice of `compare`: one-XCD simulation is 8× cheaper but coarse for grids
/// of a few workgroups per XCD, so `auto` simulates small grids in full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareScope {
    /// Full for grids of at most 4 workgroups per CU, one XCD above that.
    Auto,
    /// Every workgroup on all XCDs.
    Full,
    /// XCD 0's share.
    Xcd,
}

impl Problem {
    fn flops(&self) -> f64 {
        let (n, k) = self.nk();
        2.0 * (self.rows() * n * k) as f64
    }
    fn label(&self) -> String {
        match *self {
            Problem::Dense { m, n, k } => format!("dense {m}x{n}x{k}"),
            Problem::Contiguous { groups, rows, n, k } => format!("contiguous {groups}x{rows} over {n}x{k}"),
            Problem::ContiguousPadded { groups, rows, n, k } => format!("contiguous {groups}x{rows} (padded) over {n}x{k}"),
            Problem::MaskedSpread { groups, expected, n, k, .. } => format!("masked {groups}x~{expected} over {n}x{k}"),
            Problem::Masked { groups, rows, n, k } => format!("masked {groups}x{rows} over {n}x{k}"),
        }
    }
    /// The configuration the library chooses (to size the grid for the `auto` scope).
    fn desc(&self, a: Arch) -> GemmDesc {
        match *self {
            Problem::Dense { m, n, k } => GemmDesc::dense(m as u32, n as u32, k as u32, a),
            Problem::Contiguous { groups, rows, n, k } | Problem::ContiguousPadded { groups, rows, n, k } => {
                GemmDesc::m_grouped_contiguous((groups * rows) as u32, n as u32, k as u32, groups as u32, a)
            }
            Problem::Masked { groups, rows, n, k } => GemmDesc::m_grouped_masked(rows as u32, n as u32, k as u32, groups as u32, rows as u32, a),
            Problem::MaskedSpread { groups, expected, n, k, .. } => crate::operands::masked_spread_desc(groups as u32, expected as u32, n as u32, k as u32, a),
        }
    }
}

/// Runs `p` once through the public API (the library's own config choice) with the timing
/// model on; the operands are zeros (their values do not steer the kernels).
fn model(ctx: &Context, p: Problem, machine: &Machine, scope: CompareScope) -> Result<(std::sync::Arc<TimingReport>, String, String), String> {
    let e = |x: fp8gemm::Error| x.to_string();
    // `FP8GEMM_PRESHUFFLED=1`: the operands' B is pre-shuffled, which the bs kernels run.
    // The environment's selector overrides, for the choice here and the launch's stream.
    let stream = crate::env::stream(ctx).map_err(e)?;
    let overrides = stream.overrides();
    let desc = p.desc(ctx.arch());
    let chosen = match (crate::env::get().preshuffled, p) {
        (false, _) => config::get_best_config(&desc, &overrides),
        (true, Problem::Dense { .. }) => config::get_bs_config(&desc, &overrides),
        (true, _) => config::get_grouped_bs_config(&desc, &overrides),
    };
    // (Dense problems: both go through the generated selector, `fp8gemm::select`.)
    let grid = chosen.map(|c| c.grid).map_err(|x| x.to_string())?;
    let full = match scope {
        CompareScope::Full => true,
        CompareScope::Xcd => false,
        CompareScope::Auto => grid <= 4 * machine.xcds * machine.cus_per_xcd,
    };
    let options = SimOptions { scope: if full { Scope::Full } else { Scope::OneXcd }, ..SimOptions::default() };
    let mode = TimingMode { machine: machine.clone(), options };
    let mut ops = Operands::new(ctx, p).map_err(e)?;
    emu::set_timing(Some(mode));
    let run = ops.launch(&stream);
    emu::set_timing(None);
    let cfg = run.map_err(e)?.config.ok_or("nothing was launched")?;
    let tile = format!("{}{}x{}", if cfg.kernel.contains("_bs_") { "bs " } else { "" }, cfg.block_m, cfg.block_n);
    let t = emu::last_launch_timing().ok_or("the timed launch left no report")?;
    Ok((t, tile, schedule(&cfg)))
}

/// The launch's schedule in a few characters: `sk DP+SK` for stream-K (`DP` data-parallel
/// tiles, then `SK` workgroups sharing the rest), `split S` for split-K, `pipe` for the
/// pipelined kernels, empty for a plain one-tile-per-workgroup launch.
fn schedule(cfg: &fp8gemm::config::GemmConfig) -> String {
    let mut parts = Vec::new();
    if cfg.kernel.contains("_pipe_") {
        parts.push("pipe".to_string());
    }
    if let Some(sk) = cfg.stream_k {
        parts.push(format!("sk {}+{}", sk.dp_tiles, sk.sk_wgs));
    } else if cfg.splits > 1 {
        parts.push(format!("split {}", cfg.splits));
    }
    parts.join(" ")
}

/// One printed row.
#[derive(Clone, Debug)]
struct Row {
    set: &'static str,
    machine: &'static str,
    problem: Problem,
    /// The tile (`bs 32x128` for the pre-shuffled-B kernels).
    config: String,
    /// [`schedule`] of the launch.
    schedule: String,
    our_us: f64,
    /// The other implementation's time (µs) or TFLOPS, and where it comes from.
    other_us: Option<f64>,
    other_tflops: Option<f64>,
    other: String,
}

impl Row {
    fn our_tflops(&self) -> f64 {
        self.problem.flops() / (self.our_us * 1e-6) / 1e12
    }
    fn ratio(&self) -> Option<f64> {
        self.other_tflops.map(|o| self.our_tflops() / o)
    }
}

/// AITER's CK `gemm_a8w8_blockscale` on MI300X (`shared/reference/deepgemm.md`), TFLOPS.
const AITER_MI300X: [((usize, usize, usize), f64); 6] = [
    ((64, 2112, 7168), 118.0),
    ((128, 2112, 7168), 196.0),
    ((4096, 2112, 7168), 844.0),
    ((64, 7168, 2048), 170.0),
    ((128, 7168, 2048), 321.0),
    ((4096, 7168, 2048), 833.0),
];

/// DeepSeek-V3's dense (N, K) pairs (DeepGEMM's benchmark shapes).
pub(crate) const DEEPSEEK_NK: [(usize, usize); 6] = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)];

/// One measured row: kernel (short name), M, N, K, µs, TFLOPS.
pub(crate) type Measured = (String, usize, usize, usize, f64, f64);

pub(crate) fn peers_rows(dir: &Path) -> Result<Vec<Measured>, String> {
    measured_rows(&dir.join("measured_mi325x.csv"))
}

/// The rows of one `measured_*.csv` of the peers directory (`kernel,M,N,K,us,tflops[,…]`).
pub(crate) fn measured_rows(path: &Path) -> Result<Vec<Measured>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        let bad = || format!("{}:{}: expected kernel,M,N,K,us,tflops[,source]", path.display(), i + 1);
        if f.len() < 6 {
            return Err(bad());
        }
        let num = |s: &str| s.trim().parse::<f64>().map_err(|_| bad());
        let kernel = f[0].trim();
        // `_ZN5aiter42fp8gemm_bf16_blockscale_BpreShuffle_48x128E` → `BpreShuffle_48x128`.
        let short = kernel.rsplit_once("blockscale_").map_or(kernel, |(_, s)| s.trim_end_matches('E')).to_string();
        out.push((short, num(f[1])? as usize, num(f[2])? as usize, num(f[3])? as usize, num(f[4])?, num(f[5])?));
    }
    Ok(out)
}

/// `fp8gemm compare`.
pub fn run(set: Set, peers: Option<PathBuf>, scope: CompareScope, max_m: Option<usize>, csv: Option<PathBuf>, plot: Option<PathBuf>) -> Result<(), String> {
    if set == Set::PeersMi355x {
        // Before the first HIP call: the device is then an MI355X running the gfx950 object.
        emu::set_device_arch(amdgpu_emu::loader::Target::Gfx950);
    }
    let ctx = Context::new().map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let mut rows = Vec::new();
    let want = |s: Set| set == s || set == Set::All;
    let keep = |m: usize| max_m.is_none_or(|x| m <= x);
    let push = |set: &'static str, machine: &Machine, p: Problem, other_us: Option<f64>, other_tflops: Option<f64>, other: String| -> Result<Row, String> {
        let (t, config, schedule) = model(&ctx, p, machine, scope)?;
        let row = Row { set, machine: machine.name, problem: p, config, schedule, our_us: t.seconds * 1e6, other_us, other_tflops, other };
        print_row(&row, started.elapsed().as_secs_f64());
        Ok(row)
    };
    // `--set all` without AMD's peers directory prints the tables it can; `--set peers` needs it.
    let peers_dir = match &peers {
        Some(d) => Ok(d.clone()),
        None => amdgpu_emu::peers::peers_dir().map_err(|e| e.to_string()),
    };
    if set == Set::All
        && let Err(why) = &peers_dir
    {
        println!("## peers: skipped ({why}); pass --peers DIR for AMD's measured MI325X rows");
    }
    if set == Set::Peers || (set == Set::All && peers_dir.is_ok()) {
        let dir = peers_dir.clone()?;
        println!("## peers: our kernels (modelled, mi325x) vs AMD's asm kernels (measured on MI325X, {})", dir.join("measured_mi325x.csv").display());
        for (kernel, m, n, k, us, tf) in peers_rows(&dir)? {
            if keep(m) {
                rows.push(push("peers", &Machine::MI325X, Problem::Dense { m, n, k }, Some(us), Some(tf), format!("{kernel} measured"))?);
            }
        }
    }
    if set == Set::PeersMi355x {
        let dir = peers_dir.clone()?;
        let path = dir.join("measured_mi355x.csv");
        println!("## peers-mi355x: our gfx950 kernels (modelled, mi355x) vs AMD's gfx950 asm kernels (measured on MI355X, {})", path.display());
        for (kernel, m, n, k, us, tf) in measured_rows(&path)? {
            if keep(m) {
                rows.push(push("peers-mi355x", &Machine::MI355X, Problem::Dense { m, n, k }, Some(us), Some(tf), format!("{kernel} measured"))?);
            }
        }
    }
    if want(Set::Deepseek) {
        println!("## deepseek: DeepSeek-V3 dense shapes, ours modelled on mi300x vs AITER CK on MI300X (shared/reference/deepgemm.md)");
        for m in [64, 128, 4096] {
            for (n, k) in DEEPSEEK_NK {
                let aiter = AITER_MI300X.iter().find(|(s, _)| *s == (m, n, k)).map(|(_, tf)| *tf);
                if keep(m) {
                    let other = if aiter.is_some() { "AITER CK (published)".to_string() } else { String::new() };
                    rows.push(push("deepseek", &Machine::MI300X, Problem::Dense { m, n, k }, None, aiter, other)?);
                }
            }
        }
    }
    if want(Set::Grouped) {
        println!("## grouped: DeepGEMM's m-grouped benchmark shapes, ours modelled on mi300x");
        for (n, k) in [(4096, 7168), (7168, 2048)] {
            for (groups, r) in [(4, 8192), (8, 4096)] {
                rows.push(push("grouped", &Machine::MI300X, Problem::Contiguous { groups, rows: r, n, k }, None, None, String::new())?);
            }
            for (groups, r) in [(1, 1024), (2, 512), (4, 256)] {
                rows.push(push("grouped", &Machine::MI300X, Problem::Masked { groups, rows: r, n, k }, None, None, String::new())?);
            }
        }
    }
    summarize(&rows);
    if let Some(path) = csv {
        write_csv(&path, &rows)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = plot {
        plot_svg(&path, &rows)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn print_row(r: &Row, elapsed: f64) {
    let other = match (r.other_us, r.other_tflops) {
        (Some(us), Some(tf)) => format!("{us:>9.2} µs {tf:>7.1} TF"),
        (None, Some(tf)) => format!("{:>12} {tf:>7.1} TF", ""),
        _ => format!("{:>23}", ""),
    };
    let ratio = r.ratio().map_or("      -".to_string(), |x| format!("{x:>6.2}×"));
    let config = if r.schedule.is_empty() { r.config.clone() } else { format!("{} {}", r.config, r.schedule) };
    println!(
        "{:<38} {:<24} {:>10.2} µs {:>7.1} TF modelled | {other} {:<28} | {ratio}   ({elapsed:.0} s)",
        r.problem.label(),
        config,
        r.our_us,
        r.our_tflops(),
        r.other
    );
}

fn geomean(x: &[f64]) -> f64 {
    (x.iter().map(|v| v.ln()).sum::<f64>() / x.len() as f64).exp()
}

fn summarize(rows: &[Row]) {
    let gfx950: Vec<&Row> = rows.iter().filter(|r| r.set == "peers-mi355x").collect();
    if !gfx950.is_empty() {
        let ratios: Vec<f64> = gfx950.iter().filter_map(|r| r.ratio()).collect();
        let worst = gfx950.iter().min_by(|a, b| a.ratio().partial_cmp(&b.ratio()).unwrap()).unwrap();
        let best = gfx950.iter().map(|r| r.our_tflops()).fold(0.0, f64::max);
        println!(
            "peers-mi355x: {} shapes, geomean of our modelled TFLOPS / AMD's measured TFLOPS {:.3}× (goal ≥ 1.5×), lowest {:.3}× at {} (goal ≥ 1.2×); best {:.0} TFLOPS modelled",
            ratios.len(),
            geomean(&ratios),
            worst.ratio().unwrap_or(f64::NAN),
            worst.problem.label(),
            best
        );
    }
    let peers: Vec<&Row> = rows.iter().filter(|r| r.set == "peers").collect();
    if !peers.is_empty() {
        let ratios: Vec<f64> = peers.iter().filter_map(|r| r.ratio()).collect();
        let worst = peers.iter().min_by(|a, b| a.ratio().partial_cmp(&b.ratio()).unwrap()).unwrap();
        println!(
            "peers: {} shapes, geomean of our modelled TFLOPS / AMD's measured TFLOPS {:.3}× (goal ≥ 1.1×), lowest {:.3}× at {} (goal ≥ 0.9×)",
            ratios.len(),
            geomean(&ratios),
            worst.ratio().unwrap_or(f64::NAN),
            worst.problem.label()
        );
    }
    let ds: Vec<&Row> = rows.iter().filter(|r| r.set == "deepseek" && r.other_tflops.is_some()).collect();
    if !ds.is_empty() {
        let s: Vec<String> = ds.iter().map(|r| format!("{} {:.2}×", r.problem.label(), r.ratio().unwrap())).collect();
        println!("deepseek vs AITER CK (goal ≥ 1.0×, ≥ 2× at M = 64): {}", s.join(", "));
    }
    let contiguous: Vec<&Row> = rows.iter().filter(|r| matches!(r.problem, Problem::Contiguous { .. })).collect();
    if !contiguous.is_empty() {
        let s: Vec<String> = contiguous.iter().map(|r| format!("{:.0}", r.our_tflops())).collect();
        println!("contiguous grouped: {} TFLOPS modelled (goal ≥ 900)", s.join(" / "));
    }
}

fn write_csv(path: &Path, rows: &[Row]) -> Result<(), String> {
    let mut s = String::new();
    let _ = writeln!(s, "# fp8gemm compare: `our_*` columns are MODELLED by the emulator's timing model; `other_*` are as labelled in `other`");
    let _ = writeln!(s, "set,machine,problem,config,our_us,our_tflops,other,other_us,other_tflops,ratio,schedule");
    for r in rows {
        let o = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.2}"));
        let _ = writeln!(
            s,
            "{},{},{},{},{:.3},{:.3},{},{},{},{},{}",
            r.set,
            r.machine,
            r.problem.label(),
            r.config,
            r.our_us,
            r.our_tflops(),
            r.other,
            o(r.other_us),
            o(r.other_tflops),
            r.ratio().map_or(String::new(), |v| format!("{v:.3}")),
            r.schedule
        );
    }
    std::fs::write(path, s).map_err(|e| format!("{}: {e}", path.display()))
}

/// TFLOPS vs M: the peers shapes (one series per N: ours modelled, AMD's measured) and the
/// DeepSeek shapes (ours modelled per (N, K), AITER's published points).
fn plot_svg(path: &Path, rows: &[Row]) -> Result<(), String> {
    use plotters::prelude::*;
    let e = |x: &dyn std::fmt::Display| format!("{}: {x}", path.display());
    let root = SVGBackend::new(path, (1100, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let dense: Vec<&Row> = rows.iter().filter(|r| matches!(r.problem, Problem::Dense { .. })).collect();
    if dense.is_empty() {
        return Err(e(&"no dense rows to plot (use --set peers, deepseek or all)"));
    }
    let m_of = |r: &Row| match r.problem {
        Problem::Dense { m, .. } => m as f64,
        _ => 0.0,
    };
    let max_tf = dense.iter().map(|r| r.our_tflops().max(r.other_tflops.unwrap_or(0.0))).fold(0.0, f64::max) * 1.1;
    let (lo, hi) = dense.iter().map(|r| m_of(r)).fold((f64::MAX, 0f64), |(a, b), m| (a.min(m), b.max(m)));
    let mut chart = ChartBuilder::on(&root)
        .caption("FP8 GEMM TFLOPS vs M — fp8gemm MODELLED (timing model) vs others as labelled", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((lo * 0.8..hi * 1.25).log_scale(), 0.0..max_tf)
        .map_err(|x| e(&x))?;
    chart.configure_mesh().x_desc("M (rows)").y_desc("TFLOPS").draw().map_err(|x| e(&x))?;
    let palette = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK, RGBColor(255, 140, 0), RGBColor(128, 0, 128)];
    // One colour per (N, K, machine): our modelled line and the other implementation's points
    // of the same shape family share it.
    let mut families: Vec<(usize, usize, &str)> = Vec::new();
    // (legend, points, ours?, colour index)
    type Series = (String, Vec<(f64, f64)>, bool, usize);
    let mut series: Vec<Series> = Vec::new();
    for r in &dense {
        let (n, k) = r.problem.nk();
        let fam = (n, k, r.set);
        let c = families.iter().position(|f| *f == fam).unwrap_or_else(|| {
            families.push(fam);
            families.len() - 1
        });
        let mut add = |name: String, pt: (f64, f64), ours: bool| match series.iter_mut().find(|s| s.0 == name) {
            Some(s) => s.1.push(pt),
            None => series.push((name, vec![pt], ours, c)),
        };
        // The row's own machine (every set models ours on the machine its other figures come from).
        let who = r.machine;
        add(format!("fp8gemm {n}x{k} ({who}, modelled)"), (m_of(r), r.our_tflops()), true);
        if let Some(tf) = r.other_tflops {
            let src = match r.set {
                "peers" => "AMD asm, measured MI325X",
                "peers-mi355x" => "AMD asm, measured MI355X",
                _ => "AITER CK, MI300X",
            };
            add(format!("{src} {n}x{k}"), (m_of(r), tf), false);
        }
    }
    for (name, mut pts, ours, c) in series {
        pts.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        let color = palette[c % palette.len()];
        if ours {
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|x| e(&x))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled()))).map_err(|x| e(&x))?;
        } else {
            chart
                .draw_series(pts.into_iter().map(|p| TriangleMarker::new(p, 6, color.filled())))
                .map_err(|x| e(&x))?
                .label(name)
                .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, color.filled()));
        }
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).position(SeriesLabelPosition::UpperLeft).draw().map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
