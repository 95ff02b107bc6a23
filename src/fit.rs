//! `fp8gemm calibrate --fit`: the timing model's joint fit over every measured row, with
//! per-family/chip error tables and leave-one-(N,K)-out cross-validation. Every time printed
//! is modelled, beside the measured one it is compared with.

use amdgpu_emu::timing::SimOptions;
use amdgpu_emu::timing::fit::{self, FitRow};

/// Runs the fit over the rows of the measured tables `files` that `select(file, index)` picks
/// (rows with M above `max_m` are left out and counted), each on its chip's machine with
/// `overrides` applied, replayed over the grid of `params` (and the launch overhead); prints
/// the tables and writes every row to `csv` if given.
#[allow(clippy::too_many_arguments)]
pub fn run(
    dir: &std::path::Path,
    files: &[std::path::PathBuf],
    opts: &SimOptions,
    overrides: &str,
    params: &[fit::FitParam],
    select: &dyn Fn(&std::path::Path, usize) -> bool,
    max_m: Option<u32>,
    csv: Option<&std::path::Path>,
) -> Result<(), String> {
    let started = std::time::Instant::now();
    println!("timing model fit (modelled vs measured kernel times, each row on its chip's machine; modelled figures are not measurements)");
    let mut skipped = 0usize;
    let mut keep = |file: &std::path::Path, index: usize, row: &amdgpu_emu::timing::calibrate::GivenRow| -> bool {
        if !select(file, index) {
            return false;
        }
        let ok = max_m.is_none_or(|x| row.m <= x);
        skipped += usize::from(!ok);
        ok
    };
    if !overrides.is_empty() {
        println!("  machine overrides on every row: {overrides}");
    }
    let all = fit::given_rows(dir, files, opts, overrides, &mut keep, &mut |r: &FitRow| {
        println!("  traced {} {} {}x{}x{} ({} instructions)", r.machine.name, r.family, r.m, r.n, r.k, r.recording.instructions())
    })
    .map_err(|e| e.to_string())?;
    if skipped > 0 {
        println!("  {skipped} rows with M > {} left out (--max-m)", max_m.unwrap_or(0));
    }
    if all.is_empty() {
        return Err("no rows selected".into());
    }
    let grid = fit::evaluate(&all, params, opts, &mut |i, n| eprint!("\r  replayed {i}/{n} rows over the grid")).map_err(|e| e.to_string())?;
    eprintln!();
    let best = fit::fit(&grid, &all, &|_| true).map_err(|e| e.to_string())?;
    let names: Vec<&str> = grid.params.iter().map(|p| p.name.as_ref()).collect();
    println!("grid: {} (replayed) × launch_overhead_s {}..{} µs", names.join(", "), fit::LAUNCH.lo * 1e6, fit::LAUNCH.hi * 1e6);
    let mut groups: Vec<(String, String)> = all.iter().map(|r| (r.family.clone(), r.machine.name.to_string())).collect();
    groups.sort();
    groups.dedup();
    for (p, values) in grid.points.iter().enumerate() {
        let f = fit::fit_at(&grid, &all, p, &|_| true).map_err(|e| e.to_string())?;
        let per: Vec<String> = groups
            .iter()
            .map(|(fam, chip)| {
                let e: Vec<f64> =
                    (0..all.len()).filter(|&i| &all[i].family == fam && all[i].machine.name == chip).map(|i| fit::rel_err(&grid, &all, &f, i)).collect();
                let (med, worst, signed) = fit::summary(&e);
                format!("{fam} {chip} {:.1}/{:.1}/{:+.1}", med * 100.0, worst * 100.0, signed * 100.0)
            })
            .collect();
        println!("  {:?} → best launch {:.2} µs, rms log error {:.4}; median/worst/signed %: {}", values, f.launch_s * 1e6, f.objective.sqrt(), per.join(", "));
    }
    println!("fit: {} = {:?}, launch_overhead_s = {:.2} µs, rms log error {:.4}", names.join(", "), best.values, best.launch_s * 1e6, best.objective.sqrt());
    println!("{:<12} {:<8} {:>6} {:>6} {:>6} {:>10} {:>10} {:>8}", "family", "chip", "M", "N", "K", "meas µs", "model µs", "error");
    let errs: Vec<f64> = (0..all.len()).map(|i| fit::rel_err(&grid, &all, &best, i)).collect();
    for (r, e) in all.iter().zip(&errs) {
        println!(
            "{:<12} {:<8} {:>6} {:>6} {:>6} {:>10.2} {:>10.2} {:>+7.1} %",
            r.family,
            r.machine.name,
            r.m,
            r.n,
            r.k,
            r.measured_us,
            r.measured_us * (1.0 + e),
            e * 100.0
        );
    }
    println!("per family and chip (modelled vs measured):");
    for (fam, chip) in &groups {
        let e: Vec<f64> = all.iter().zip(&errs).filter(|(r, _)| &r.family == fam && r.machine.name == chip).map(|(_, e)| *e).collect();
        let (med, worst, signed) = fit::summary(&e);
        println!(
            "  {fam:<12} {chip:<8} {:>3} rows: median |error| {:.1} %, worst {:.1} %, median signed {:+.1} %",
            e.len(),
            med * 100.0,
            worst * 100.0,
            signed * 100.0
        );
    }
    let (med, worst, signed) = fit::summary(&errs);
    println!("  all {} rows: median |error| {:.1} %, worst {:.1} %, median signed {:+.1} %", errs.len(), med * 100.0, worst * 100.0, signed * 100.0);
    println!("leave-one-(N,K)-out (fit without the pair, predict it):");
    let held = fit::leave_one_out(&grid, &all).map_err(|e| e.to_string())?;
    if held.is_empty() {
        println!("  (one (N,K) pair only: nothing to cross-validate)");
    }
    for h in &held {
        let (med, worst, signed) = fit::summary(&h.errors);
        println!(
            "  {:<12} {:<8} N {:>5} K {:>5}: {:>3} rows, fit {:?} launch {:.2} µs → median |error| {:.1} %, worst {:.1} %, median signed {:+.1} %",
            h.family,
            h.chip,
            h.n,
            h.k,
            h.rows,
            h.fit.values,
            h.fit.launch_s * 1e6,
            med * 100.0,
            worst * 100.0,
            signed * 100.0
        );
    }
    if let Some(path) = csv {
        let mut text = String::from("file,family,kernel,m,n,k,measured_us,modelled_us,signed_error,machine\n");
        for (r, e) in all.iter().zip(&errs) {
            text.push_str(&format!(
                "{},{},{},{},{},{},{:.4},{:.4},{:+.5},{}\n",
                r.source,
                r.family,
                r.kernel,
                r.m,
                r.n,
                r.k,
                r.measured_us,
                r.measured_us * (1.0 + e),
                e,
                r.machine.name
            ));
        }
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {} ({} rows, modelled figures)", path.display(), all.len());
        // Every row at every grid point (modelled µs without the launch overhead), for
        // re-fitting other selections offline.
        let grid_path = path.with_extension("grid.csv");
        let mut text = String::from("file,family,kernel,m,n,k,measured_us,machine");
        for pt in &grid.points {
            let cols: Vec<String> = names.iter().zip(pt).map(|(n, v)| format!("{n}={v}")).collect();
            text.push_str(&format!(",{}", cols.join(" ")));
        }
        text.push('\n');
        for (i, r) in all.iter().enumerate() {
            text.push_str(&format!("{},{},{},{},{},{},{:.4},{}", r.source, r.family, r.kernel, r.m, r.n, r.k, r.measured_us, r.machine.name));
            for s in &grid.seconds[i] {
                text.push_str(&format!(",{:.4}", s * 1e6));
            }
            text.push('\n');
        }
        std::fs::write(&grid_path, text).map_err(|e| format!("{}: {e}", grid_path.display()))?;
        println!("wrote {} (every row at every grid point, modelled µs without the launch overhead)", grid_path.display());
    }
    println!("{:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}
