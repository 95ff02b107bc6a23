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

fn machine(name: &str) -> Result<Machine, String> {
    let base = base_machine(name)?;
    match std::env::var(Machine::OVERRIDES_ENV) {
        Ok(spec) => base.with_overrides(&spec).map_err(|e| format!("{}: {e}", Machine::OVERRIDES_ENV)),
        Err(_) => Ok(base.clone()),
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

/// The machine (with `AMDGPU_EMU_MACHINE_OVERRIDES` applied) and timing-only options.
pub fn machine_and_options(name: &str, scope: ScopeArg) -> Result<(Machine, SimOptions), String> {
    Ok((machine(name)?, options(scope, false, None)))
}

/// Turns profiling on for this process: the demos' GEMM launch is timed on `machine`
/// (`trace_workgroup`: print that workgroup's first wave's issue trace).
pub fn enable(name: &str, scope: ScopeArg, full_math: bool, trace_workgroup: Option<u64>) -> Result<(), String> {
    let machine = machine(name)?;
    MODE.set(TimingMode { machine, options: options(scope, full_math, trace_workgroup) }).map_err(|_| "profiling enabled twice".to_string())
}

/// `calibrate --fit`: see [`crate::fit::run`].
pub fn fit(dir: Option<std::path::PathBuf>, name: &str, scope: ScopeArg, rows: &[usize], max_m: Option<u32>, csv: Option<&std::path::Path>) -> Result<(), String> {
    let dir = match dir {
        Some(d) => d,
        None => amdgpu_emu::peers::peers_dir().map_err(|e| e.to_string())?,
    };
    crate::fit::run(&dir, &machine(name)?, &options(scope, false, None), rows, max_m, csv)
}

/// `fp8gemm calibrate`: the model against the measured MI325X rows.

pub fn calibrate(
    dir: Option<std::path::PathBuf>,
    name: &str,
    scope: ScopeArg,
    rows: &[usize],
    verbose: bool,
    csv: Option<&std::path::Path>,
) -> Result<(), String> {
    use amdgpu_emu::timing::calibrate as cal;
    let dir = match dir {
        Some(d) => d,
        None => amdgpu_emu::peers::peers_dir().map_err(|e| e.to_string())?,
    };
    let machine = machine(name)?;
    println!("timing model calibration on {} (modelled vs measured MI325X kernel times; modelled figures are not measurements)", machine.name);
    println!("{machine:?}");
    println!("{}", cal::HEADER);
    let started = std::time::Instant::now();
    let select = |i: usize| rows.is_empty() || rows.contains(&i);
    let out = cal::calibrate(&dir, &machine, &options(scope, false, None), &select, &mut |_, r| {
        println!("{r}");
        if verbose {
            print!("{}", r.report);
        }
    })
    .map_err(|e| e.to_string())?;
    if let Some(path) = csv {
        let file = dir.join(amdgpu_emu::peers::MEASURED_CSV);
        let mut text = String::from("file,kernel,m,n,k,measured_us,modelled_us,signed_error,machine,scope\n");
        for r in &out {
            let m = &r.measured;
            text.push_str(&format!(
                "{},{},{},{},{},{:.4},{:.4},{:+.5},{},{}\n",
                file.display(),
                m.kernel,
                m.m,
                m.n,
                m.k,
                m.us,
                r.modelled_us(),
                r.rel_err(),
                machine.name,
                if matches!(scope, ScopeArg::Full) { "full" } else { "xcd" }
            ));
        }
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {} ({} rows, modelled figures)", path.display(), out.len());
    }
    let (med, worst) = cal::error_summary(&out);
    println!(
        "{} rows: median |error| {:.1} %, worst |error| {:.1} %, median signed error {:+.1} % (modelled − measured; goal ≤ 10 % / ≤ 25 %); {:.0} s",
        out.len(),
        med * 100.0,
        worst * 100.0,
        cal::median_signed_error(&out) * 100.0,
        started.elapsed().as_secs_f64()
    );
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
