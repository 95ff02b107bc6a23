//! Calibration and validation of the timing model against measured hardware times: AMD's asm
//! FP8 block-scale GEMMs ([`crate::peers`]) run on the emulator at each shape of
//! `measured_mi325x.csv`, timed by the model, and compared with the MI325X measurement.

use std::fmt;
use std::path::Path;

use super::{Machine, SimOptions, TimingReport, simulate};
use crate::memory::DeviceMemory;
use crate::peers::{self, MeasuredRow, Padding, PeerError, PeerKernel, PeerProblem};

/// One measured row with its modelled time.
#[derive(Clone, Debug)]
pub struct CalRow {
    /// The measurement.
    pub measured: MeasuredRow,
    /// The timing model's report for the same kernel and shape.
    pub report: TimingReport,
}

impl CalRow {
    /// Modelled time in microseconds.
    pub fn modelled_us(&self) -> f64 {
        self.report.seconds * 1e6
    }
    /// Relative error of the model: modelled / measured − 1.
    pub fn rel_err(&self) -> f64 {
        self.modelled_us() / self.measured.us - 1.0
    }
}

/// Why a calibration run failed.
#[derive(Debug, thiserror::Error)]
pub enum CalError {
    /// Loading the peers or setting up a launch failed.
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// The launch failed on the emulator.
    #[error("{kernel} at {m}x{n}x{k}: {source}")]
    Launch {
        /// Kernel symbol.
        kernel: String,
        /// Shape.
        m: u32,
        /// Shape.
        n: u32,
        /// Shape.
        k: u32,
        /// The emulator's error.
        source: crate::exec::LaunchError,
    },
}

/// Runs the model on every measured row of `dir` selected by `select(index)`, calling `each`
/// after each row (for progress output).
pub fn calibrate(
    dir: &Path,
    machine: &Machine,
    opts: &SimOptions,
    select: &dyn Fn(usize) -> bool,
    each: &mut dyn FnMut(usize, &CalRow),
) -> Result<Vec<CalRow>, CalError> {
    let rows = peers::measured_rows(dir)?;
    let mut kernels: Vec<PeerKernel> = Vec::new();
    let mut out = Vec::new();
    for (i, row) in rows.into_iter().enumerate() {
        if !select(i) {
            continue;
        }
        let family = row.family().ok_or_else(|| PeerError::Contract { kernel: row.kernel.clone(), what: "not a peer kernel".into() })?;
        if !kernels.iter().any(|k| k.family == family) {
            kernels.push(peers::load_peer(dir, family)?);
        }
        let Some(kernel) = kernels.iter().find(|k| k.family == family) else { continue };
        let report = time_peer(kernel, row.m, row.n, row.k, machine, opts)?;
        let r = CalRow { measured: row, report };
        each(i, &r);
        out.push(r);
    }
    Ok(out)
}

/// Models one peer kernel at one shape (operands generated cheaply; padded to whole tiles).
pub fn time_peer(kernel: &PeerKernel, m: u32, n: u32, k: u32, machine: &Machine, opts: &SimOptions) -> Result<TimingReport, CalError> {
    let mem = DeviceMemory::new();
    let problem = PeerProblem::generate(m, n, k, 1);
    let launch = peers::prepare(&mem, kernel, &problem, Padding::WholeTiles)?;
    drop(problem);
    let r = simulate(&kernel.code_object, kernel.kernel(), &launch.config, &mem, machine, opts).map_err(|source| CalError::Launch {
        kernel: kernel.symbol.clone(),
        m,
        n,
        k,
        source,
    })?;
    launch.free(&mem)?;
    Ok(r)
}

/// Median and worst absolute relative error of a set of rows.
pub fn error_summary(rows: &[CalRow]) -> (f64, f64) {
    let mut e: Vec<f64> = rows.iter().map(|r| r.rel_err().abs()).collect();
    e.sort_by(f64::total_cmp);
    if e.is_empty() {
        return (0.0, 0.0);
    }
    let med = if e.len() % 2 == 1 { e[e.len() / 2] } else { (e[e.len() / 2 - 1] + e[e.len() / 2]) / 2.0 };
    (med, e[e.len() - 1])
}

/// The median **signed** relative error of `rows` (positive: the model is too slow), the bias
/// a median of |error| hides.
pub fn median_signed_error(rows: &[CalRow]) -> f64 {
    let mut e: Vec<f64> = rows.iter().map(CalRow::rel_err).collect();
    e.sort_by(f64::total_cmp);
    match e.len() {
        0 => 0.0,
        n if n % 2 == 1 => e[n / 2],
        n => (e[n / 2 - 1] + e[n / 2]) / 2.0,
    }
}

impl fmt::Display for CalRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.measured.kernel.trim_start_matches("_ZN5aiter42").trim_start_matches("_ZN5aiter43").trim_end_matches('E');
        write!(
            f,
            "{:<40} {:>6} {:>5} {:>5}  {:>9.2} {:>9.2}  {:>+7.1} %  {:>7.1} {:>7.1}",
            name,
            self.measured.m,
            self.measured.n,
            self.measured.k,
            self.measured.us,
            self.modelled_us(),
            self.rel_err() * 100.0,
            self.measured.tflops,
            2.0 * f64::from(self.measured.m) * f64::from(self.measured.n) * f64::from(self.measured.k) / (self.modelled_us() * 1e6)
        )
    }
}

/// The header line matching [`CalRow`]'s `Display`.
pub const HEADER: &str = "kernel                                        M     N     K   meas µs  model µs    error    meas TF model TF";
