//! The fitting procedure of the timing model: one joint fit of the *fitted* [`Machine`]
//! parameters over every measured row given, with leave-one-(N,K)-out cross-validation.
//!
//! Each measured row's launch is traced once ([`super::record`]); the fit then replays the
//! traces ([`super::replay`]) on every point of a grid over the fitted parameters, each inside
//! its stated range ([`FitParam`]), so the functional emulation (most of the cost) runs once
//! per row. The objective is the mean squared log error, ln(modelled / measured)², over all
//! rows jointly: one parameter set for every kernel family, shape and chip (a row's chip
//! decides only which [`Machine`] it runs on). Cross-validation refits on the rows of every
//! (N, K) pair but one and predicts the held-out pair, for each pair, from the same grid of
//! replays (the grid is evaluated once for all rows, so a refit is a minimum over a table).
//!
//! The fixed launch overhead ([`Machine::launch_overhead_s`]) adds to every modelled time
//! and needs no replay; it is fitted over its own grid on top of each replay.

use std::path::Path;

use super::calibrate;
use super::{Machine, Recording, ReplayError, SimOptions, replay};
use crate::peers::PeerError;

/// One measured row with its recorded launch.
pub struct FitRow {
    /// Where the row came from (file name), for reports.
    pub source: String,
    /// Kernel family label (e.g. `bpreshuffle`, `i8gemm`), for per-family summaries.
    pub family: String,
    /// Kernel name, for reports.
    pub kernel: String,
    /// Shape.
    pub m: u32,
    /// Shape.
    pub n: u32,
    /// Shape.
    pub k: u32,
    /// Measured time in microseconds.
    pub measured_us: f64,
    /// The machine (chip) the row was measured on; the grid's overrides apply on top of it.
    pub machine: Machine,
    /// The traced launch.
    pub recording: Recording,
}

/// A fitted machine parameter and the grid it is searched over: `lo..=hi` in steps of
/// `step`, a range the parameter's documentation justifies.
#[derive(Clone, Debug, PartialEq)]
pub struct FitParam {
    /// A [`Machine::with_overrides`] field name.
    pub name: std::borrow::Cow<'static, str>,
    /// Lowest value.
    pub lo: f64,
    /// Highest value.
    pub hi: f64,
    /// Grid step.
    pub step: f64,
}

impl FitParam {
    /// Parses `name=lo:hi:step` (a [`Machine::with_overrides`] field and its grid).
    pub fn parse(spec: &str) -> Result<FitParam, String> {
        let bad = || format!("grid `{spec}`: expected name=lo:hi:step with lo <= hi and step > 0");
        let (name, range) = spec.split_once('=').ok_or_else(bad)?;
        let v: Vec<f64> = range.split(':').map(|x| x.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|_| bad())?;
        let [lo, hi, step] = v[..] else { return Err(bad()) };
        if !(lo <= hi && step > 0.0) {
            return Err(bad());
        }
        let name = name.trim();
        // Only machine fields: checked by applying the lowest value to a machine.
        Machine::MI325X.with_overrides(&format!("{name}={lo}"))?;
        Ok(FitParam { name: name.to_string().into(), lo, hi, step })
    }

    /// The grid's values.
    pub fn values(&self) -> Vec<f64> {
        let n = ((self.hi - self.lo) / self.step).round().max(0.0) as usize;
        (0..=n).map(|i| self.lo + self.step * i as f64).collect()
    }
}

/// The parameters the fit searches by replaying: the MFMA accumulation-chain latency
/// (between back-to-back forwarding and no forwarding, [`Machine::mfma_chain_latency`]).
pub const REPLAYED: [FitParam; 1] = [FitParam { name: std::borrow::Cow::Borrowed("mfma_chain_latency"), lo: 0.0, hi: 12.0, step: 2.0 }];

/// The launch overhead grid, seconds: 0 to 4 µs, the latter the hipEvent-timed cost of an
/// empty kernel (`hardware.md` "Launch"), an upper bound of what a profiler's device time
/// counts.
pub const LAUNCH: FitParam = FitParam { name: std::borrow::Cow::Borrowed("launch_overhead_s"), lo: 0.0, hi: 4e-6, step: 0.25e-6 };

/// Every row's modelled cycles-derived time (without launch overhead) at every grid point.
pub struct Grid {
    /// The replayed parameters.
    pub params: Vec<FitParam>,
    /// The points: one value per parameter.
    pub points: Vec<Vec<f64>>,
    /// `seconds[row][point]`: modelled time without the launch overhead.
    pub seconds: Vec<Vec<f64>>,
}

/// Replays every row at every point of the grid over `params` (the cartesian product).
pub fn evaluate(rows: &[FitRow], params: &[FitParam], opts: &SimOptions, progress: &mut dyn FnMut(usize, usize)) -> Result<Grid, FitError> {
    let mut points: Vec<Vec<f64>> = vec![Vec::new()];
    for p in params {
        points = points.into_iter().flat_map(|pt| p.values().into_iter().map(move |v| [pt.clone(), vec![v]].concat())).collect();
    }
    let mut seconds = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let mut per = Vec::with_capacity(points.len());
        for pt in &points {
            let m = overridden(&row.machine, params, pt, 0.0)?;
            let r = replay(&row.recording, &m, opts)?;
            per.push(r.cycles as f64 / m.clock_hz);
        }
        seconds.push(per);
        progress(i + 1, rows.len());
    }
    Ok(Grid { params: params.to_vec(), points, seconds })
}

fn overridden(base: &Machine, params: &[FitParam], point: &[f64], launch: f64) -> Result<Machine, FitError> {
    let spec: Vec<String> =
        params.iter().zip(point).map(|(p, v)| format!("{}={v}", p.name)).chain(std::iter::once(format!("launch_overhead_s={launch}"))).collect();
    base.with_overrides(&spec.join(",")).map_err(FitError::Override)
}

/// Records every row of the measured tables `files` that `select(file, index)` picks, each on
/// its chip's machine ([`calibrate::machine_for`]) with `overrides` applied
/// ([`Machine::with_overrides`]; empty for none) and its family's code object.
pub fn given_rows(
    dir: &Path,
    files: &[std::path::PathBuf],
    opts: &SimOptions,
    overrides: &str,
    select: &mut dyn FnMut(&Path, usize, &calibrate::GivenRow) -> bool,
    progress: &mut dyn FnMut(&FitRow),
) -> Result<Vec<FitRow>, FitError> {
    let mut cache = calibrate::KernelCache::default();
    let mut out = Vec::new();
    for file in files {
        for row in calibrate::read_given(file)? {
            if !select(file, row.index, &row) {
                continue;
            }
            let machine = calibrate::machine_for(&row, None).map_err(|e| FitError::Launch(e.to_string()))?;
            let machine = machine.with_overrides(overrides).map_err(FitError::Override)?;
            let (family, recording) = calibrate::record_given(dir, &row, &machine, opts, &mut cache).map_err(|e| FitError::Launch(e.to_string()))?;
            let source = file.file_name().map_or_else(|| file.display().to_string(), |n| n.to_string_lossy().into_owned());
            let r = FitRow {
                source,
                family: family.label().to_string(),
                kernel: row.kernel,
                m: row.m,
                n: row.n,
                k: row.k,
                measured_us: row.us,
                machine,
                recording,
            };
            progress(&r);
            out.push(r);
        }
    }
    Ok(out)
}

/// Why the fit failed.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// Loading a peer kernel or its measured rows failed.
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// A row could not be set up or run on the emulator (file, row, kernel, shape and why).
    #[error("{0}")]
    Launch(String),
    /// A grid parameter is not a machine field.
    #[error("{0}")]
    Override(String),
    /// A recording does not fit the machine.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// Nothing to fit.
    #[error("no rows to fit")]
    Empty,
}

/// The best grid point for a set of rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// Index into [`Grid::points`].
    pub point: usize,
    /// Values of the replayed parameters.
    pub values: Vec<f64>,
    /// Fitted launch overhead, seconds.
    pub launch_s: f64,
    /// Mean squared log error over the rows fitted.
    pub objective: f64,
}

/// Fits the launch overhead at grid point `point`, minimising the mean squared log error over
/// the rows `use_row` selects.
pub fn fit_at(grid: &Grid, rows: &[FitRow], point: usize, use_row: &dyn Fn(usize) -> bool) -> Result<Fit, FitError> {
    let chosen: Vec<usize> = (0..rows.len()).filter(|&i| use_row(i)).collect();
    if chosen.is_empty() || point >= grid.points.len() {
        return Err(FitError::Empty);
    }
    let mut best: Option<Fit> = None;
    for launch in LAUNCH.values() {
        let obj = chosen.iter().map(|&i| ((grid.seconds[i][point] + launch) * 1e6 / rows[i].measured_us).ln().powi(2)).sum::<f64>() / chosen.len() as f64;
        if best.as_ref().is_none_or(|b| obj < b.objective) {
            best = Some(Fit { point, values: grid.points[point].clone(), launch_s: launch, objective: obj });
        }
    }
    best.ok_or(FitError::Empty)
}

/// Fits the grid point and launch overhead minimising the mean squared log error over the rows
/// `use_row` selects.
pub fn fit(grid: &Grid, rows: &[FitRow], use_row: &dyn Fn(usize) -> bool) -> Result<Fit, FitError> {
    let mut best: Option<Fit> = None;
    for p in 0..grid.points.len() {
        let f = fit_at(grid, rows, p, use_row)?;
        if best.as_ref().is_none_or(|b| f.objective < b.objective) {
            best = Some(f);
        }
    }
    best.ok_or(FitError::Empty)
}

/// Relative error (modelled / measured − 1) of row `i` at a fit.
pub fn rel_err(grid: &Grid, rows: &[FitRow], fit: &Fit, i: usize) -> f64 {
    (grid.seconds[i][fit.point] + fit.launch_s) * 1e6 / rows[i].measured_us - 1.0
}

/// Median |error|, worst |error| and median signed error of `errors`.
pub fn summary(errors: &[f64]) -> (f64, f64, f64) {
    let med = |mut v: Vec<f64>| -> f64 {
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => 0.0,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    };
    let abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    let worst = abs.iter().copied().fold(0.0, f64::max);
    (med(abs), worst, med(errors.to_vec()))
}

/// One held-out (N, K) pair of the cross-validation.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldOut {
    /// Family of the rows held out.
    pub family: String,
    /// Chip (machine name).
    pub chip: String,
    /// The pair.
    pub n: u32,
    /// The pair.
    pub k: u32,
    /// Rows held out.
    pub rows: usize,
    /// The fit without them.
    pub fit: Fit,
    /// Their errors predicted by that fit.
    pub errors: Vec<f64>,
}

/// Leave-one-(N,K)-out: for every (family, chip, N, K) group of rows, fit on all other rows and
/// predict the group.
pub fn leave_one_out(grid: &Grid, rows: &[FitRow]) -> Result<Vec<HeldOut>, FitError> {
    let mut keys: Vec<(String, String, u32, u32)> = rows.iter().map(|r| (r.family.clone(), r.machine.name.to_string(), r.n, r.k)).collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for (family, chip, n, k) in keys {
        let held = |i: usize| rows[i].family == family && rows[i].machine.name == chip && rows[i].n == n && rows[i].k == k;
        if (0..rows.len()).all(held) {
            continue; // nothing left to fit on
        }
        let f = fit(grid, rows, &|i| !held(i))?;
        let errors: Vec<f64> = (0..rows.len()).filter(|&i| held(i)).map(|i| rel_err(grid, rows, &f, i)).collect();
        out.push(HeldOut { family, chip, n, k, rows: errors.len(), fit: f, errors });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_values_cover_the_range() {
        assert_eq!(REPLAYED[0].values(), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
        assert_eq!(LAUNCH.values().len(), 17);
        assert!((LAUNCH.values()[16] - 4e-6).abs() < 1e-12);
    }

    #[test]
    fn grid_specs_parse_machine_fields_only() {
        let p = FitParam::parse("mfma_chain_latency=4:10:3").unwrap();
        assert_eq!((p.name.as_ref(), p.values()), ("mfma_chain_latency", vec![4.0, 7.0, 10.0]));
        assert!(FitParam::parse("no_such_field=0:1:1").unwrap_err().contains("no_such_field"));
        for bad in ["mfma_chain_latency", "mfma_chain_latency=4:10", "mfma_chain_latency=10:4:1", "mfma_chain_latency=0:4:0"] {
            assert!(FitParam::parse(bad).unwrap_err().contains("expected name=lo:hi:step"), "{bad}");
        }
    }

    #[test]
    fn summary_reports_bias() {
        let (med, worst, signed) = summary(&[0.1, -0.02, 0.05, 0.03]);
        assert!((med - 0.04).abs() < 1e-12 && (worst - 0.1).abs() < 1e-12 && (signed - 0.04).abs() < 1e-12);
    }
}
