//! `fp8gemm profile`: the dense and grouped demos' launches run through the emulator's timing
//! model instead of being checked against the CPU references. Every figure printed is
//! **modelled** (a cycle-level model of the machine, see `amdgpu_emu::timing`), not measured.

use std::sync::OnceLock;

use amdgpu_emu::hip::TimingMode;
use amdgpu_emu::timing::{Machine, Scope, SimOptions};

static MODE: OnceLock<TimingMode> = OnceLock::new();

/// The `--scope` of `fp8gemm profile`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ScopeArg {
    /// Every workgroup on all 8 XCDs.
    Full,
    /// Only XCD 0's workgroups, shared bandwidth scaled (8× cheaper).
    Xcd,
}

/// The timing model's machine `name` (with `AMDGPU_EMU_MACHINE_OVERRIDES` applied).
pub fn machine_by_name(name: &str) -> Result<Machine, String> {
    machine(name)
}

/// The emulated device for timing runs on `machine`, and its architecture: the machine's chip
/// decides the code object (a gfx950 machine runs on an emulated gfx950 device, selected here,
/// before the first HIP call). An error if the device was already made for another chip.
pub fn context_for(machine: &Machine) -> Result<(fp8gemm::Context, fp8gemm::codeobj::Arch), String> {
    use fp8gemm::codeobj::Arch;
    let arch = match machine.target {
        amdgpu_emu::loader::Target::Gfx950 => {
            amdgpu_emu::hip::set_device_arch(amdgpu_emu::loader::Target::Gfx950);
            Arch::Gfx950
        }
        _ => Arch::Gfx942,
    };
    let ctx = fp8gemm::Context::new().map_err(|e| e.to_string())?;
    if ctx.arch() != arch {
        return Err(format!("machine {} is a {} part, the device runs {}", machine.name, arch.name(), ctx.arch().name()));
    }
    Ok((ctx, arch))
}

fn machine(name: &str) -> Result<Machine, String> {
    let base = base_machine(name)?;
    match &crate::env::get().machine_overrides {
        Some(spec) => base.with_overrides(spec).map_err(|e| format!("{}: {e}", Machine::OVERRIDES_ENV)),
        None => Ok(base.clone()),
    }
}

fn base_machine(name: &str) -> Result<&'static Machine, String> {
    Ok(match name {
        "env" => Machine::from_env()?,
        name => Machine::by_name(name).ok_or_else(|| {
            let names: Vec<&str> = Machine::ALL.iter().map(|m| m.name).collect();
            format!("--machine {name:?}: unknown machine; expected one of {} (or `env` for ${})", names.join(", "), Machine::ENV)
        })?,
    })
}

fn options(scope: ScopeArg, full_math: bool, trace_workgroup: Option<u64>) -> SimOptions {
    SimOptions {
        scope: match scope {
            ScopeArg::Full => Scope::Full,
            ScopeArg::Xcd => Scope::OneXcd,
        },
        skip_mfma_math: !full_math,
        checks: amdgpu_emu::exec::Checks::default(),
        top: 8,
        trace_workgroup,
    }
}

/// Turns profiling on for this process: the demos' GEMM launch is timed on `machine`
/// (`trace_workgroup`: print that workgroup's first wave's issue trace).
pub fn enable(name: &str, scope: ScopeArg, full_math: bool, trace_workgroup: Option<u64>) -> Result<(), String> {
    let machine = machine(name)?;
    MODE.set(TimingMode { machine, options: options(scope, full_math, trace_workgroup) }).map_err(|_| "profiling enabled twice".to_string())
}

/// `calibrate --fit`: see [`crate::fit::run`]; `files` and `rows` select the measured rows as
/// for `calibrate`.
pub fn fit(
    dir: Option<std::path::PathBuf>,
    files: &[String],
    scope: ScopeArg,
    rows: &[String],
    max_m: Option<u32>,
    csv: Option<&std::path::Path>,
    grid: &[String],
) -> Result<(), String> {
    let params: Vec<amdgpu_emu::timing::fit::FitParam> = if grid.is_empty() {
        amdgpu_emu::timing::fit::REPLAYED.to_vec()
    } else {
        grid.iter().map(|g| amdgpu_emu::timing::fit::FitParam::parse(g)).collect::<Result<_, _>>()?
    };
    let overrides = crate::env::get().machine_overrides.clone().unwrap_or_default();
    let dir = match dir {
        Some(d) => d,
        None => amdgpu_emu::peers::peers_dir().map_err(|e| e.to_string())?,
    };
    let files: Vec<std::path::PathBuf> = if files.is_empty() {
        amdgpu_emu::timing::calibrate::measured_files(&dir).map_err(|e| e.to_string())?
    } else {
        files.iter().map(|f| if std::path::Path::new(f).is_absolute() { f.into() } else { dir.join(f) }).collect()
    };
    let sel = parse_rows(rows)?;
    crate::fit::run(&dir, &files, &options(scope, false, None), &overrides, &params, &|file, index| selects(&sel, file, index), max_m, csv)
}

/// Arguments of `fp8gemm calibrate` (see its `--help`).
pub struct CalibrateArgs {
    /// Peers directory (default `$FP8GEMM_PEERS_DIR`).
    pub peers: Option<std::path::PathBuf>,
    /// Machine for every given row instead of each file's chip.
    pub machine: Option<String>,
    /// Measurement files (default: every `measured_*.csv`).
    pub files: Vec<String>,
    /// Scope.
    pub scope: ScopeArg,
    /// Row selectors `N` or `FILE:N`.
    pub rows: Vec<String>,
    /// Print full reports.
    pub verbose: bool,
    /// CSV output.
    pub csv: Option<std::path::PathBuf>,
    /// Also the MoE shape-only rows.
    pub moe: bool,
    /// Only the MoE rows.
    pub moe_only: bool,
    /// MoE row selection (empty: all).
    pub moe_rows: Vec<usize>,
    /// MoE scale divisor.
    pub moe_div: u32,
    /// Machine of the MoE rows.
    pub moe_machine: String,
    /// Compute MFMA results instead of skipping them.
    pub full_math: bool,
}

/// A `--rows` selector: row `index` of every file, or of the file named `file`.
#[derive(Debug, PartialEq)]
struct RowSel {
    file: Option<String>,
    index: usize,
}

fn parse_rows(specs: &[String]) -> Result<Vec<RowSel>, String> {
    specs
        .iter()
        .map(|s| {
            let (file, n) = match s.rsplit_once(':') {
                Some((f, n)) => (Some(f.trim().to_string()), n),
                None => (None, s.as_str()),
            };
            let index = n.trim().parse().map_err(|e| format!("--rows `{s}`: {e} (expected N or FILE:N)"))?;
            Ok(RowSel { file, index })
        })
        .collect()
}

fn selects(sel: &[RowSel], file: &std::path::Path, index: usize) -> bool {
    sel.is_empty()
        || sel.iter().any(|s| {
            s.index == index
                && s.file.as_deref().is_none_or(|f| {
                    let p = std::path::Path::new(f);
                    p == file || file.file_name() == p.file_name() && p.parent().is_none_or(|d| d.as_os_str().is_empty())
                })
        })
}

/// `fp8gemm calibrate`: the model against every measured row (each on its chip's machine), per
/// family and chip error statistics, optionally the MoE shape-only predictions.
pub fn calibrate(a: CalibrateArgs) -> Result<(), String> {
    use amdgpu_emu::timing::calibrate as cal;
    let dir = match a.peers {
        Some(d) => d,
        None => amdgpu_emu::peers::peers_dir().map_err(|e| e.to_string())?,
    };
    if !dir.is_dir() {
        return Err(format!("peers directory {} does not exist", dir.display()));
    }
    let opts = options(a.scope, a.full_math, None);
    let scope = if matches!(a.scope, ScopeArg::Full) { "full" } else { "xcd" };
    let started = std::time::Instant::now();
    let mut csv = String::from(cal::CSV_HEADER);
    csv.push('\n');
    let mut csv_rows = 0usize;
    if !a.moe_only {
        let files: Vec<std::path::PathBuf> = if a.files.is_empty() {
            cal::measured_files(&dir).map_err(|e| e.to_string())?
        } else {
            a.files.iter().map(|f| if std::path::Path::new(f).is_absolute() { f.into() } else { dir.join(f) }).collect()
        };
        let sel = parse_rows(&a.rows)?;
        let fixed = a.machine.as_deref().map(machine).transpose()?;
        // CalError is large (it carries the emulator's LaunchError, as in amdgpu_emu::timing).
        #[allow(clippy::result_large_err)]
        let resolve = |row: &cal::GivenRow| -> Result<Machine, cal::CalError> {
            match &fixed {
                Some(m) => Ok(m.clone()),
                // The chip's built-in machine, with AMDGPU_EMU_MACHINE_OVERRIDES applied.
                None => match machine(&row.chip) {
                    Ok(m) => Ok(m),
                    Err(_) => cal::machine_for(row, None),
                },
            }
        };
        println!(
            "timing model calibration: {} file(s) of measured kernel times, each row modelled on its chip's machine{}, MFMA math {} (modelled figures are not measurements)",
            files.len(),
            a.machine.as_deref().map(|m| format!(" (overridden: {m})")).unwrap_or_default(),
            if a.full_math { "computed" } else { "skipped" }
        );
        for f in &files {
            println!("  {}", f.display());
        }
        println!("{}", cal::ROW_HEADER);
        let mut timings: Vec<f64> = Vec::new();
        let mut last = std::time::Instant::now();
        let out = cal::run_given(&dir, &files, &resolve, &opts, &|r| selects(&sel, &r.file, r.index), &mut |r| {
            timings.push(last.elapsed().as_secs_f64());
            last = std::time::Instant::now();
            println!("{r}");
            if a.verbose {
                print!("{}", r.report);
            }
        })
        .map_err(|e| e.to_string())?;
        for r in &out {
            let (m, n, k) = (r.row.m, r.row.n, r.row.k);
            // The launch's modelled activity, for joining with power or clock data.
            let b = &r.report.busy;
            let note =
                format!("busy mfma {:.3} valu {:.3} lds {:.3} vmem {:.3} l2 {:.3} hbm {:.3} cus {:.3}", b.mfma, b.valu, b.lds, b.vmem, b.l2, b.hbm, b.cus);
            csv.push_str(&cal::csv_line(&r.row.file, &r.row.kernel, (m, n, k), Some(r.row.us), r.modelled_us(), &r.report.machine, scope, r.family, &note));
            csv.push('\n');
            csv_rows += 1;
        }
        println!("summary (modelled vs measured; error = modelled / measured − 1):");
        for g in cal::summarize(&out) {
            println!("  {g}");
        }
        let total: f64 = timings.iter().sum();
        println!(
            "{} rows: median |error| {:.1} %, worst |error| {:.1} %, median signed error {:+.1} %; {:.0} s ({:.1} s per row)",
            out.len(),
            cal::summarize(&out).last().map_or(0.0, |g| g.median_abs) * 100.0,
            cal::summarize(&out).last().map_or(0.0, |g| g.worst_abs) * 100.0,
            cal::summarize(&out).last().map_or(0.0, |g| g.median_signed) * 100.0,
            total,
            total / out.len().max(1) as f64
        );
    }
    if a.moe {
        let m = machine(&a.moe_machine)?;
        println!(
            "MoE predictions on {} (shape-only rows: AMD's times are not in the peers directory; modelled µs only){}",
            m.name,
            if a.moe_div > 1 { format!("; every problem SCALED down by {} (not the rows' problems)", a.moe_div) } else { String::new() }
        );
        println!("{:<5} {:<12} {:<62} {:>6} {:>5} {:>5}  {:>10}  note", "row", "family", "kernel", "M", "N", "K", "model µs");
        let moe_started = std::time::Instant::now();
        let sel = &a.moe_rows;
        let out = cal::run_moe(&dir, &m, &opts, a.moe_div, &|i| sel.is_empty() || sel.contains(&i), &mut |i, r| {
            println!(
                "{:<5} {:<12} {:<62} {:>6} {:>5} {:>5}  {:>10.2}  {}",
                i,
                r.family().label(),
                r.row.spec.symbol(),
                r.row.m,
                r.row.n,
                r.row.k,
                r.modelled_us(),
                r.note()
            );
            if a.verbose {
                print!("{}", r.report);
            }
        })
        .map_err(|e| e.to_string())?;
        for r in &out {
            csv.push_str(&cal::csv_line(
                &r.file,
                &r.row.spec.symbol(),
                (r.row.m, r.row.n, r.row.k),
                None,
                r.modelled_us(),
                &r.report.machine,
                scope,
                r.family(),
                &r.note(),
            ));
            csv.push('\n');
            csv_rows += 1;
        }
        println!("{} MoE rows modelled in {:.0} s", out.len(), moe_started.elapsed().as_secs_f64());
    }
    if let Some(path) = &a.csv {
        std::fs::write(path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {} ({csv_rows} rows, modelled figures)", path.display());
    }
    println!("total {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Called right before the demo's GEMM launch: routes it through the timing model.
pub fn begin() {
    if let Some(m) = MODE.get() {
        amdgpu_emu::hip::set_timing(Some(m.clone()));
    }
}

/// Called right after the launch: restores normal launches and prints the modelled timing.
/// Returns whether profiling is on (the demo then skips its accuracy checks: with MFMA math
/// skipped the output is not valid).
pub fn end(m: usize, n: usize, k: usize, groups: usize) -> Result<bool, String> {
    if MODE.get().is_none() {
        return Ok(false);
    }
    amdgpu_emu::hip::set_timing(None);
    let t = amdgpu_emu::hip::last_launch_timing().ok_or("the timing run produced no report (was a kernel launched?)")?;
    print!("{t}");
    let useful = 2.0 * (groups * m * n * k) as f64;
    println!(
        "  useful work {:.3} GFLOP → {:.1} TFLOPS modelled ({} FLOP executed by MFMAs incl. tile padding)",
        useful / 1e9,
        useful / t.seconds / 1e12,
        t.flops
    );
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_selectors() {
        let sel = parse_rows(&["3".into(), "measured_mi355x.csv:7".into()]).unwrap();
        assert_eq!(sel, [RowSel { file: None, index: 3 }, RowSel { file: Some("measured_mi355x.csv".into()), index: 7 }]);
        let f = std::path::Path::new("/p/measured_mi355x.csv");
        let g = std::path::Path::new("/p/measured_mi325x.csv");
        assert!(selects(&sel, f, 3) && selects(&sel, g, 3) && selects(&sel, f, 7));
        assert!(!selects(&sel, g, 7) && !selects(&sel, f, 4));
        assert!(selects(&[], g, 99));
        assert!(parse_rows(&["x:y".into()]).is_err());
    }
}
