//! Calibration and validation of the timing model against measured hardware times: AMD's asm
//! kernels run on the emulator at each measured shape, timed by the model, and compared with the
//! measurement.
//!
//! # Given rows
//! Every `measured_*.csv` of the peers directory ([`measured_files`]) is a table of measured
//! kernel times (columns found by header name: `kernel`, `M`, `N`, `K`, `us`, optionally `splitK`
//! and `lda_bytes`; [`read_given`]). The chip a file was measured on is the last `_`-separated
//! word of its name (`measured_mi325x.csv`, `measured_i8gemm_mi325x.csv` → `mi325x`;
//! `measured_mi355x.csv` → `mi355x`), and that chip's [`Machine`] times its rows unless the
//! caller overrides the machine. The kernel named by a row and the machine's instruction set
//! ([`Machine::target`]) give the row's [`RowFamily`]: the BpreShuffle FP8 GEMMs (gfx942 objects,
//! or the gfx950 builds of `gfx950/` on a gfx950 machine) or the int8 GEMMs (`i8gemm/`, the
//! objects as measured). [`run_given`] models the rows, [`summarize`] reports per family and
//! chip the median and worst |error| and the median signed error.
//!
//! # Shape-only rows
//! `shapes_fmoe_stage1.csv` and `shapes_fmoe_1stage.csv` list configurations at which AMD timed
//! its MoE kernels, without the times: [`run_moe`] models them (optionally scaled down by a
//! divisor, which every result carries), adding to the 1-stage kernels the output zero-fill their
//! times include ([`memset_seconds`]).
//!
//! Every time produced here is **modelled**.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::path::{Path, PathBuf};

use super::{Machine, SimOptions, TimingReport, simulate};
use crate::loader::Target;
use crate::memory::DeviceMemory;
use crate::peers::{self, MeasuredRow, Padding, PeerError, PeerKernel, PeerProblem};
use crate::peers_i8::{I8_TILES, I8PeerKernel, I8Problem, I8Revision, I8Tile};
use crate::peers_moe::{self, MoeError, MoeFamily, MoeKernel, MoeKernelSpec};

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
    /// Loading or preparing a MoE peer failed.
    #[error(transparent)]
    Moe(#[from] MoeError),
    /// A row the model cannot time as given.
    #[error("{file} row {index}: {what}")]
    Unsupported {
        /// The file.
        file: PathBuf,
        /// The row (0-based data row).
        index: usize,
        /// Why.
        what: String,
    },
}

/// Runs the model on every row of `dir`'s `measured_mi325x.csv` (the gfx942 BpreShuffle rows
/// only) selected by `select(index)` on `machine`, calling `each` after each row (for progress
/// output). [`run_given`] runs any set of measurement files, each row on its chip's machine.
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
    on_peer_launch(kernel, m, n, k, &mut |co, kk, cfg, mem| simulate(co, kk, cfg, mem, machine, opts))
}

/// What [`on_peer_launch`] and [`on_i8_launch`] run on a prepared launch (code object,
/// kernel, config, memory).
type OnLaunch<'a, R> =
    dyn FnMut(&crate::loader::CodeObject, &crate::loader::Kernel, &crate::exec::LaunchConfig, &DeviceMemory) -> Result<R, crate::exec::LaunchError> + 'a;

/// Sets up `kernel` at one shape (operands generated cheaply; padded to whole tiles), hands
/// the launch to `f` and frees it.
fn on_peer_launch<R>(kernel: &PeerKernel, m: u32, n: u32, k: u32, f: &mut OnLaunch<'_, R>) -> Result<R, CalError> {
    let mem = DeviceMemory::new();
    let launch = peers::prepare(&mem, kernel, &PeerProblem::generate(m, n, k, 1), Padding::WholeTiles)?;
    let r =
        f(&kernel.code_object, kernel.kernel(), &launch.config, &mem).map_err(|source| CalError::Launch { kernel: kernel.symbol.clone(), m, n, k, source })?;
    launch.free(&mem)?;
    Ok(r)
}

/// Sets up the I8gemm `kernel` at one shape with A's pitch `lda` bytes (split-K 1), hands the
/// launch to `f` and frees it.
fn on_i8_launch<R>(kernel: &I8PeerKernel, m: u32, n: u32, k: u32, lda: u32, f: &mut OnLaunch<'_, R>) -> Result<R, CalError> {
    let mem = DeviceMemory::new();
    let mut problem = I8Problem::generate(m, n, k, 1);
    problem.lda = lda;
    let launch = crate::peers_i8::prepare_i8(&mem, kernel, &problem)?;
    drop(problem);
    let r =
        f(&kernel.code_object, kernel.kernel(), &launch.config, &mem).map_err(|source| CalError::Launch { kernel: kernel.symbol.clone(), m, n, k, source })?;
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

/// Kernel family of a modelled row: summaries are grouped by it and by chip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RowFamily {
    /// `fp8gemm_bf16_blockscale_BpreShuffle_<TM>x128`, gfx942 objects.
    BpreShuffle,
    /// The same kernels' gfx950 builds (`gfx950/`).
    BpreShuffleGfx950,
    /// `I8gemm_bf16_perTokenI8_BpreShuffle_<TM>x<TN>` (`i8gemm/`, as measured).
    I8gemm,
    /// `fmoe_stage1_…` (shape-only rows).
    MoeStage1,
    /// `fmoe_bf16_blockscaleFp8_g1u1_…` (shape-only rows).
    MoeOneStage,
}

impl RowFamily {
    /// Short label, as printed and written to CSV.
    pub fn label(self) -> &'static str {
        match self {
            RowFamily::BpreShuffle => "bpreshuffle",
            RowFamily::BpreShuffleGfx950 => "bpreshuffle-gfx950",
            RowFamily::I8gemm => "i8gemm",
            RowFamily::MoeStage1 => "fmoe-stage1",
            RowFamily::MoeOneStage => "fmoe-1stage",
        }
    }
}

/// The kernel a measured row names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKernel {
    /// BpreShuffle FP8 GEMM with M tile `tm`.
    BpreShuffle {
        /// M tile.
        tm: u32,
    },
    /// An I8gemm tile.
    I8(I8Tile),
}

impl RowKernel {
    /// The kernel of `name`, mangled (`_ZN5aiter42fp8gemm_…E`) or plain (`fp8gemm_…`), if it is
    /// a BpreShuffle or I8gemm peer.
    pub fn parse(name: &str) -> Option<RowKernel> {
        let plain = name.strip_prefix("_ZN5aiter").map_or(name, |rest| rest.trim_start_matches(|c: char| c.is_ascii_digit()).trim_end_matches('E'));
        if let Some(tile) = I8_TILES.into_iter().find(|t| t.name() == plain) {
            return Some(RowKernel::I8(tile));
        }
        let tm = plain.strip_prefix("fp8gemm_bf16_blockscale_BpreShuffle_")?.strip_suffix("x128")?.parse().ok()?;
        peers::BPRESHUFFLE_TILES.contains(&tm).then_some(RowKernel::BpreShuffle { tm })
    }

    /// The family of this kernel timed on a machine of `target` (`None`: no build for it).
    pub fn family(self, target: Target) -> Option<RowFamily> {
        match (self, target) {
            (RowKernel::BpreShuffle { .. }, Target::Gfx942) => Some(RowFamily::BpreShuffle),
            (RowKernel::BpreShuffle { .. }, Target::Gfx950) => Some(RowFamily::BpreShuffleGfx950),
            (RowKernel::I8(_), Target::Gfx942) => Some(RowFamily::I8gemm),
            (RowKernel::I8(_), Target::Gfx950) => None,
        }
    }
}

/// One row of a `measured_*.csv` file.
#[derive(Clone, Debug, PartialEq)]
pub struct GivenRow {
    /// The file it came from.
    pub file: PathBuf,
    /// 0-based data row of the file.
    pub index: usize,
    /// The chip it was measured on (from the file name, see [`chip_of`]).
    pub chip: String,
    /// Kernel name as the file gives it.
    pub kernel: String,
    /// The kernel it names.
    pub which: RowKernel,
    /// M.
    pub m: u32,
    /// N.
    pub n: u32,
    /// K.
    pub k: u32,
    /// Measured microseconds.
    pub us: f64,
    /// Split-K (`splitK` column; 1 when absent).
    pub split_k: u32,
    /// A's row pitch in bytes (`lda_bytes` column; K when absent).
    pub lda: Option<u32>,
}

/// The chip of a measurement file: the last `_`-separated word of `measured_…_<chip>.csv`.
pub fn chip_of(path: &Path) -> Option<String> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".csv")?.strip_prefix("measured_")?;
    let chip = stem.rsplit('_').next()?;
    (!chip.is_empty()).then(|| chip.to_ascii_lowercase())
}

/// Every `measured_*.csv` of `dir`, sorted by name (at least one).
pub fn measured_files(dir: &Path) -> Result<Vec<PathBuf>, PeerError> {
    if !dir.is_dir() {
        return Err(PeerError::DirMissing { path: dir.to_path_buf(), source_of: "argument".into() });
    }
    let entries = std::fs::read_dir(dir).map_err(|source| PeerError::Io { path: dir.to_path_buf(), source })?;
    let mut files = Vec::new();
    for e in entries {
        let e = e.map_err(|source| PeerError::Io { path: dir.to_path_buf(), source })?;
        let name = e.file_name();
        if name.to_str().is_some_and(|n| n.starts_with("measured_") && n.ends_with(".csv")) {
            files.push(e.path());
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(PeerError::Io { path: dir.join("measured_*.csv"), source: std::io::Error::new(std::io::ErrorKind::NotFound, "no measured_*.csv file") });
    }
    Ok(files)
}

/// Reads the measured rows of `path` (see the module docs for the format); every row must name
/// a BpreShuffle or I8gemm peer, and the file name must give the chip.
pub fn read_given(path: &Path) -> Result<Vec<GivenRow>, PeerError> {
    let text = std::fs::read_to_string(path).map_err(|source| PeerError::Io { path: path.to_path_buf(), source })?;
    parse_given(&text, path)
}

/// [`read_given`] on the text of the file (`path` names it and gives the chip).
pub fn parse_given(text: &str, path: &Path) -> Result<Vec<GivenRow>, PeerError> {
    let err = |line: usize, msg: String| PeerError::Csv { path: path.to_path_buf(), line, msg };
    let chip = chip_of(path).ok_or_else(|| err(0, "file name is not measured_…_<chip>.csv: the chip it was measured on is unknown".into()))?;
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().map(|(_, h)| h.split(',').map(str::trim).collect()).unwrap_or_default();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let need = |name: &str| col(name).ok_or_else(|| err(1, format!("no column `{name}` in header `{}`", header.join(","))));
    let (ck, cm, cn, ckk, cus) = (need("kernel")?, need("M")?, need("N")?, need("K")?, need("us")?);
    let (csk, clda) = (col("splitK"), col("lda_bytes"));
    let mut rows = Vec::new();
    for (i, line) in lines {
        let ln = i + 1;
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() < header.len() {
            return Err(err(ln, format!("{} fields, the header has {}", f.len(), header.len())));
        }
        let int = |j: usize, name: &str| f[j].parse::<u32>().map_err(|e| err(ln, format!("{name} `{}`: {e}", f[j])));
        let kernel = f[ck].to_string();
        let which = RowKernel::parse(&kernel).ok_or_else(|| err(ln, format!("kernel `{kernel}` is not a BpreShuffle or I8gemm peer")))?;
        let us: f64 = f[cus].parse().map_err(|e| err(ln, format!("us `{}`: {e}", f[cus])))?;
        if !(us.is_finite() && us > 0.0) {
            return Err(err(ln, format!("us = {us}, expected a positive time")));
        }
        let split_k = csk.map(|c| int(c, "splitK")).transpose()?.unwrap_or(1);
        let lda = clda.map(|c| int(c, "lda_bytes")).transpose()?;
        rows.push(GivenRow {
            file: path.to_path_buf(),
            index: rows.len(),
            chip: chip.clone(),
            kernel,
            which,
            m: int(cm, "M")?,
            n: int(cn, "N")?,
            k: int(ckk, "K")?,
            us,
            split_k,
            lda,
        });
    }
    if rows.is_empty() {
        return Err(err(text.lines().count(), "no data rows".into()));
    }
    Ok(rows)
}

/// The code objects [`run_given`] loaded, by kernel and target.
#[derive(Default)]
pub struct KernelCache {
    bpreshuffle: HashMap<(u32, Target), PeerKernel>,
    i8: HashMap<I8Tile, I8PeerKernel>,
}

/// A measured row with its modelled time.
#[derive(Clone, Debug)]
pub struct RowResult {
    /// The row.
    pub row: GivenRow,
    /// Its family on the machine that timed it.
    pub family: RowFamily,
    /// The timing model's report (its `machine` names the machine).
    pub report: TimingReport,
}

impl RowResult {
    /// Modelled time in microseconds.
    pub fn modelled_us(&self) -> f64 {
        self.report.seconds * 1e6
    }
    /// Relative error of the model: modelled / measured − 1.
    pub fn rel_err(&self) -> f64 {
        self.modelled_us() / self.row.us - 1.0
    }
}

impl fmt::Display for RowResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.row;
        let name = r.kernel.strip_prefix("_ZN5aiter").map_or(r.kernel.as_str(), |x| x.trim_start_matches(|c: char| c.is_ascii_digit()).trim_end_matches('E'));
        write!(
            f,
            "{:<18} {:<7} {:<46} {:>6} {:>5} {:>5}  {:>9.2} {:>9.2}  {:>+7.1} %",
            self.family.label(),
            self.report.machine,
            name,
            r.m,
            r.n,
            r.k,
            r.us,
            self.modelled_us(),
            self.rel_err() * 100.0
        )
    }
}

/// The header line matching [`RowResult`]'s `Display`.
pub const ROW_HEADER: &str = "family             machine kernel                                              M     N     K   meas µs  model µs    error";

/// The machine of `row`: `overrides` if given, else the built-in machine of its chip.
pub fn machine_for(row: &GivenRow, overrides: Option<&Machine>) -> Result<Machine, CalError> {
    match overrides {
        Some(m) => Ok(m.clone()),
        None => Machine::by_name(&row.chip).cloned().ok_or_else(|| CalError::Unsupported {
            file: row.file.clone(),
            index: row.index,
            what: format!("chip `{}` (from the file name) is not a built-in machine", row.chip),
        }),
    }
}

/// Sets up the launch of one measured row on `machine` (its family follows from the row's
/// kernel and the machine's target; code objects are loaded from `dir` once into `cache`),
/// hands it to `f` and frees it.
fn with_given<R>(dir: &Path, row: &GivenRow, machine: &Machine, cache: &mut KernelCache, f: &mut OnLaunch<'_, R>) -> Result<(RowFamily, R), CalError> {
    let unsupported = |what: String| CalError::Unsupported { file: row.file.clone(), index: row.index, what };
    let family = row.which.family(machine.target).ok_or_else(|| unsupported(format!("no {} build of `{}`", machine.target.name(), row.kernel)))?;
    if row.split_k != 1 {
        return Err(unsupported(format!("splitK = {}: only split-K 1 is modelled (ks > 1 adds a memset to the time)", row.split_k)));
    }
    let r = match row.which {
        RowKernel::BpreShuffle { tm } => {
            let kernel = match cache.bpreshuffle.entry((tm, machine.target)) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert(match machine.target {
                    Target::Gfx942 => peers::load_peer(dir, peers::PeerFamily::BpreShuffle { tm })?,
                    Target::Gfx950 => crate::peers_gfx950::load_gfx950_peer(dir, tm)?,
                }),
            };
            on_peer_launch(kernel, row.m, row.n, row.k, f)?
        }
        RowKernel::I8(tile) => {
            let kernel = match cache.i8.entry(tile) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert(crate::peers_i8::load_i8_peer(dir, tile, I8Revision::Measured)?),
            };
            on_i8_launch(kernel, row.m, row.n, row.k, row.lda.unwrap_or(row.k), f)?
        }
    };
    Ok((family, r))
}

/// Models one measured row on `machine` (its family follows from the row's kernel and the
/// machine's target); code objects are loaded from `dir` once into `cache`.
pub fn model_given(dir: &Path, row: &GivenRow, machine: &Machine, opts: &SimOptions, cache: &mut KernelCache) -> Result<RowResult, CalError> {
    let (family, report) = with_given(dir, row, machine, cache, &mut |co, k, cfg, mem| simulate(co, k, cfg, mem, machine, opts))?;
    Ok(RowResult { row: row.clone(), family, report })
}

/// Traces one measured row for replays on machines like `machine` ([`super::record`]).
pub fn record_given(
    dir: &Path,
    row: &GivenRow,
    machine: &Machine,
    opts: &SimOptions,
    cache: &mut KernelCache,
) -> Result<(RowFamily, super::Recording), CalError> {
    with_given(dir, row, machine, cache, &mut |co, k, cfg, mem| super::record(co, k, cfg, mem, machine, opts))
}

/// Models an I8gemm peer at one shape with A's pitch `lda` bytes (split-K 1).
pub fn time_i8(kernel: &I8PeerKernel, m: u32, n: u32, k: u32, lda: u32, machine: &Machine, opts: &SimOptions) -> Result<TimingReport, CalError> {
    on_i8_launch(kernel, m, n, k, lda, &mut |co, kk, cfg, mem| simulate(co, kk, cfg, mem, machine, opts))
}

/// Models every row of `files` selected by `select`, each on the machine `machine(row)` gives
/// (usually [`machine_for`]: its chip's), calling `each` after each row.
pub fn run_given(
    dir: &Path,
    files: &[PathBuf],
    machine: &dyn Fn(&GivenRow) -> Result<Machine, CalError>,
    opts: &SimOptions,
    select: &dyn Fn(&GivenRow) -> bool,
    each: &mut dyn FnMut(&RowResult),
) -> Result<Vec<RowResult>, CalError> {
    let mut cache = KernelCache::default();
    let mut out = Vec::new();
    for file in files {
        for row in read_given(file)? {
            if !select(&row) {
                continue;
            }
            let m = machine(&row)?;
            let r = model_given(dir, &row, &m, opts, &mut cache)?;
            each(&r);
            out.push(r);
        }
    }
    Ok(out)
}

/// Error statistics of one group of rows.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupSummary {
    /// Family label (`all` for the overall line).
    pub family: String,
    /// Chip (`all` for the overall line).
    pub chip: String,
    /// Rows in the group.
    pub rows: usize,
    /// Median |modelled / measured − 1|.
    pub median_abs: f64,
    /// Worst |modelled / measured − 1|.
    pub worst_abs: f64,
    /// Median signed error (positive: the model is too slow).
    pub median_signed: f64,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Groups `(family, chip, signed relative error)` triples by family and chip (sorted), each
/// with its statistics, then one overall group (`all`, `all`) when there are any rows.
pub fn summarize_errors(items: &[(&str, &str, f64)]) -> Vec<GroupSummary> {
    let stats = |family: &str, chip: &str, errs: &[f64]| {
        let mut abs: Vec<f64> = errs.iter().map(|e| e.abs()).collect();
        let worst = abs.iter().copied().fold(0.0, f64::max);
        GroupSummary {
            family: family.into(),
            chip: chip.into(),
            rows: errs.len(),
            median_abs: median(&mut abs),
            worst_abs: worst,
            median_signed: median(&mut errs.to_vec()),
        }
    };
    let mut keys: Vec<(&str, &str)> = items.iter().map(|&(f, c, _)| (f, c)).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut out: Vec<GroupSummary> = keys
        .into_iter()
        .map(|(f, c)| {
            let errs: Vec<f64> = items.iter().filter(|x| x.0 == f && x.1 == c).map(|x| x.2).collect();
            stats(f, c, &errs)
        })
        .collect();
    if !items.is_empty() {
        let errs: Vec<f64> = items.iter().map(|x| x.2).collect();
        out.push(stats("all", "all", &errs));
    }
    out
}

/// [`summarize_errors`] of modelled rows (the chip is the row's file's).
pub fn summarize(rows: &[RowResult]) -> Vec<GroupSummary> {
    let items: Vec<(&str, &str, f64)> = rows.iter().map(|r| (r.family.label(), r.row.chip.as_str(), r.rel_err())).collect();
    summarize_errors(&items)
}

impl fmt::Display for GroupSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:<18} {:<7} {:>4} rows: median |error| {:>5.1} %, worst |error| {:>5.1} %, median signed error {:>+6.1} % (modelled vs measured)",
            self.family,
            self.chip,
            self.rows,
            self.median_abs * 100.0,
            self.worst_abs * 100.0,
            self.median_signed * 100.0
        )
    }
}

/// The CSV header of [`csv_line`] rows: every given row and shape-only row run. `measured_us`
/// and `signed_error` are empty for shape-only rows; `note` says what a modelled figure includes
/// or how its problem was scaled, and for given rows the launch's modelled busy fractions
/// (`busy mfma … valu … lds … vmem … l2 … hbm … cus …`, [`super::Busy`]).
pub const CSV_HEADER: &str = "file,kernel,m,n,k,measured_us,modelled_us,signed_error,machine,scope,family,note";

/// One CSV line (see [`CSV_HEADER`]); `measured` is `None` for shape-only rows.
#[allow(clippy::too_many_arguments)]
pub fn csv_line(
    file: &Path,
    kernel: &str,
    mnk: (u32, u32, u32),
    measured: Option<f64>,
    modelled_us: f64,
    machine: &str,
    scope: &str,
    family: RowFamily,
    note: &str,
) -> String {
    let (meas, err) = match measured {
        Some(m) => (format!("{m:.4}"), format!("{:+.5}", modelled_us / m - 1.0)),
        None => (String::new(), String::new()),
    };
    // Notes must not break the columns.
    let note = note.replace([',', '\n'], ";");
    format!("{},{},{},{},{},{meas},{modelled_us:.4},{err},{machine},{scope},{},{note}", file.display(), kernel, mnk.0, mnk.1, mnk.2, family.label())
}

/// A shape-only MoE row with its modelled time.
#[derive(Clone, Debug)]
pub struct ShapeResult {
    /// The configurations file.
    pub file: PathBuf,
    /// 0-based data row of the file.
    pub index: usize,
    /// The row as the file gives it.
    pub row: peers_moe::ShapeRow,
    /// Divisor the configuration was scaled down by (1 = as timed by AMD;
    /// [`peers_moe::MoeConfig::scaled`]).
    pub scale_div: u32,
    /// The configuration modelled (after scaling).
    pub modelled_config: peers_moe::MoeConfig,
    /// The kernel's modelled report.
    pub report: TimingReport,
    /// Modelled seconds of the output zero-fill included in AMD's time (1-stage; 0 for stage 1).
    pub memset_seconds: f64,
}

impl ShapeResult {
    /// The family.
    pub fn family(&self) -> RowFamily {
        match self.row.spec.family {
            MoeFamily::Stage1 => RowFamily::MoeStage1,
            MoeFamily::OneStage => RowFamily::MoeOneStage,
        }
    }
    /// Modelled microseconds as AMD's `us` counts them (kernel + zero-fill).
    pub fn modelled_us(&self) -> f64 {
        (self.report.seconds + self.memset_seconds) * 1e6
    }
    /// What the modelled figure includes and whether the problem was scaled.
    pub fn note(&self) -> String {
        let mut n = String::new();
        if self.memset_seconds > 0.0 {
            n.push_str(&format!("includes a modelled {:.2} us zero-fill of O", self.memset_seconds * 1e6));
        }
        if self.scale_div > 1 {
            let c = &self.modelled_config;
            if !n.is_empty() {
                n.push_str("; ");
            }
            n.push_str(&format!(
                "SCALED 1/{}: tokens {} model_dim {} inter_dim {} experts {} (not the row's problem)",
                self.scale_div, c.tokens, c.model_dim, c.inter_dim, c.experts
            ));
        }
        n
    }
}

/// Modelled time of a zero-fill of `bytes` as its own launch: the bytes written at the machine's
/// streaming HBM rate ([`Machine::hbm_bytes_per_s`] × [`Machine::hbm_efficiency`]) plus one
/// [`Machine::launch_overhead_s`]. AMD's 1-stage MoE times include such a fill of the output
/// (`peers/README.md`, family 3).
pub fn memset_seconds(bytes: u64, machine: &Machine) -> f64 {
    if bytes == 0 {
        return 0.0;
    }
    bytes as f64 / (machine.hbm_bytes_per_s * machine.hbm_efficiency) + machine.launch_overhead_s
}

/// Models every MoE configuration of `shapes_fmoe_stage1.csv` then `shapes_fmoe_1stage.csv`
/// selected by `select(global index)` on `machine`, each problem divided by `scale_div`
/// (1 = as timed), calling `each` after each row. Persistent 1-stage kernels size their grid
/// for `machine`'s CUs.
pub fn run_moe(
    dir: &Path,
    machine: &Machine,
    opts: &SimOptions,
    scale_div: u32,
    select: &dyn Fn(usize) -> bool,
    each: &mut dyn FnMut(usize, &ShapeResult),
) -> Result<Vec<ShapeResult>, CalError> {
    let mut kernels: HashMap<&'static str, MoeKernel> = HashMap::new();
    let mut out = Vec::new();
    let mut global = 0usize;
    for (family, file) in [(MoeFamily::Stage1, peers_moe::STAGE1_CSV), (MoeFamily::OneStage, peers_moe::ONE_STAGE_CSV)] {
        for (index, row) in peers_moe::shape_rows(dir, family)?.into_iter().enumerate() {
            let g = global;
            global += 1;
            if !select(g) {
                continue;
            }
            let r = model_moe_row(dir, file, index, row, machine, opts, scale_div, &mut kernels)?;
            each(g, &r);
            out.push(r);
        }
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn model_moe_row(
    dir: &Path,
    file: &str,
    index: usize,
    row: peers_moe::ShapeRow,
    machine: &Machine,
    opts: &SimOptions,
    scale_div: u32,
    kernels: &mut HashMap<&'static str, MoeKernel>,
) -> Result<ShapeResult, CalError> {
    let spec: MoeKernelSpec = row.spec;
    let kernel = match kernels.entry(spec.name) {
        Entry::Occupied(e) => e.into_mut(),
        Entry::Vacant(e) => e.insert(peers_moe::load_moe_kernel(dir, spec)?),
    };
    let mem = DeviceMemory::new();
    let (problem, launch) = peers_moe::prepare_row_for_timing(&mem, kernel, &row, scale_div, 1, machine.cus())?;
    let config = problem.config;
    drop(problem);
    let opts = SimOptions { checks: crate::exec::Checks { memcheck: opts.checks.memcheck, ..crate::exec::Checks::default() }, ..opts.clone() };
    let report = simulate(&kernel.code_object, kernel.kernel(), &launch.config, &mem, machine, &opts).map_err(|source| CalError::Launch {
        kernel: spec.symbol(),
        m: row.m,
        n: row.n,
        k: row.k,
        source,
    })?;
    let memset = memset_seconds(launch.memset_bytes, machine);
    launch.free(&mem)?;
    Ok(ShapeResult { file: dir.join(file), index, row, scale_div: scale_div.max(1), modelled_config: config, report, memset_seconds: memset })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chips_from_file_names() {
        assert_eq!(chip_of(Path::new("/p/measured_mi325x.csv")).as_deref(), Some("mi325x"));
        assert_eq!(chip_of(Path::new("measured_i8gemm_mi325x.csv")).as_deref(), Some("mi325x"));
        assert_eq!(chip_of(Path::new("measured_MI355X.csv")).as_deref(), Some("mi355x"));
        assert_eq!(chip_of(Path::new("shapes_fmoe_stage1.csv")), None);
        assert_eq!(chip_of(Path::new("measured_mi325x.txt")), None);
    }

    #[test]
    fn kernels_and_families() {
        assert_eq!(RowKernel::parse("_ZN5aiter42fp8gemm_bf16_blockscale_BpreShuffle_48x128E"), Some(RowKernel::BpreShuffle { tm: 48 }));
        assert_eq!(RowKernel::parse("fp8gemm_bf16_blockscale_BpreShuffle_128x128"), Some(RowKernel::BpreShuffle { tm: 128 }));
        assert_eq!(RowKernel::parse("fp8gemm_bf16_blockscale_BpreShuffle_40x128"), None);
        let i8 = RowKernel::parse("_ZN5aiter41I8gemm_bf16_perTokenI8_BpreShuffle_16x128E").unwrap();
        assert!(matches!(i8, RowKernel::I8(t) if t.tm == 16 && t.tn == 128));
        assert_eq!(RowKernel::parse("flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32"), None);
        let bp = RowKernel::BpreShuffle { tm: 64 };
        assert_eq!(bp.family(Machine::MI325X.target), Some(RowFamily::BpreShuffle));
        assert_eq!(bp.family(Machine::MI355X.target), Some(RowFamily::BpreShuffleGfx950));
        assert_eq!(i8.family(Machine::MI308X.target), Some(RowFamily::I8gemm));
        assert_eq!(i8.family(Machine::MI355X.target), None);
    }

    #[test]
    fn given_rows_by_header_name() {
        let text = "kernel,M,N,K,us,tflops\nfp8gemm_bf16_blockscale_BpreShuffle_64x128,4096,512,7168,32.8452,915.35\n\n";
        let rows = parse_given(text, Path::new("/x/measured_mi355x.csv")).unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            (r.chip.as_str(), r.which, r.m, r.n, r.k, r.us, r.split_k, r.lda),
            ("mi355x", RowKernel::BpreShuffle { tm: 64 }, 4096, 512, 7168, 32.8452, 1, None)
        );
        assert_eq!(machine_for(r, None).unwrap().name, "mi355x");
        assert_eq!(machine_for(r, Some(&Machine::MI325X)).unwrap().name, "mi325x");
        let i8 = "kernel,M,N,K,us,tflops,splitK,lda_bytes,code_objects\n_ZN5aiter41I8gemm_bf16_perTokenI8_BpreShuffle_16x128E,64,1536,5120,16.7759,60.00,1,5248,i8gemm/\n";
        let rows = parse_given(i8, Path::new("measured_i8gemm_mi325x.csv")).unwrap();
        assert_eq!((rows[0].chip.as_str(), rows[0].lda, rows[0].split_k, rows[0].us), ("mi325x", Some(5248), 1, 16.7759));
        // Errors name the file and line.
        assert!(matches!(parse_given(text, Path::new("times.csv")), Err(PeerError::Csv { line: 0, .. })));
        assert!(matches!(parse_given("kernel,M,N,us\n", Path::new("measured_a.csv")), Err(PeerError::Csv { line: 1, .. })));
        let bad = text.replace("BpreShuffle_64x128", "Other_64x128");
        assert!(matches!(parse_given(&bad, Path::new("measured_mi355x.csv")), Err(PeerError::Csv { line: 2, .. })));
        let neg = text.replace("32.8452", "-1");
        assert!(matches!(parse_given(&neg, Path::new("measured_mi355x.csv")), Err(PeerError::Csv { line: 2, .. })));
        let unknown = parse_given(text, Path::new("measured_mi999x.csv")).unwrap();
        assert!(matches!(machine_for(&unknown[0], None), Err(CalError::Unsupported { .. })));
    }

    #[test]
    fn summary_per_family_and_chip() {
        let items = [
            ("i8gemm", "mi325x", 0.10),
            ("bpreshuffle", "mi325x", -0.02),
            ("bpreshuffle", "mi325x", 0.04),
            ("bpreshuffle", "mi325x", 0.30),
            ("bpreshuffle-gfx950", "mi355x", -0.05),
            ("bpreshuffle-gfx950", "mi355x", -0.07),
        ];
        let s = summarize_errors(&items);
        let key: Vec<(&str, &str, usize)> = s.iter().map(|g| (g.family.as_str(), g.chip.as_str(), g.rows)).collect();
        assert_eq!(key, [("bpreshuffle", "mi325x", 3), ("bpreshuffle-gfx950", "mi355x", 2), ("i8gemm", "mi325x", 1), ("all", "all", 6)]);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(s[0].median_abs, 0.04) && close(s[0].worst_abs, 0.30) && close(s[0].median_signed, 0.04), "{:?}", s[0]);
        assert!(close(s[1].median_abs, 0.06) && close(s[1].worst_abs, 0.07) && close(s[1].median_signed, -0.06), "{:?}", s[1]);
        assert!(close(s[2].median_abs, 0.10) && close(s[2].median_signed, 0.10), "{:?}", s[2]);
        // Overall: signed errors sorted −0.07 −0.05 −0.02 0.04 0.10 0.30 → median 0.01;
        // |errors| 0.02 0.04 0.05 0.07 0.10 0.30 → median 0.06.
        assert!(close(s[3].median_signed, 0.01) && close(s[3].median_abs, 0.06) && close(s[3].worst_abs, 0.30), "{:?}", s[3]);
        assert!(summarize_errors(&[]).is_empty());
    }

    #[test]
    fn csv_columns() {
        let cols: Vec<&str> = CSV_HEADER.split(',').collect();
        assert_eq!(cols, ["file", "kernel", "m", "n", "k", "measured_us", "modelled_us", "signed_error", "machine", "scope", "family", "note"]);
        let given =
            csv_line(Path::new("/p/measured_mi355x.csv"), "k64", (4096, 512, 7168), Some(32.0), 36.0, "mi355x", "xcd", RowFamily::BpreShuffleGfx950, "");
        let f: Vec<&str> = given.split(',').collect();
        assert_eq!(f, ["/p/measured_mi355x.csv", "k64", "4096", "512", "7168", "32.0000", "36.0000", "+0.12500", "mi355x", "xcd", "bpreshuffle-gfx950", ""]);
        let shape = csv_line(Path::new("s.csv"), "moe", (9, 256, 6144), None, 5.5, "mi325x", "full", RowFamily::MoeOneStage, "a, b");
        let f: Vec<&str> = shape.split(',').collect();
        assert_eq!(f.len(), cols.len());
        assert_eq!((f[5], f[6], f[7], f[10], f[11]), ("", "5.5000", "", "fmoe-1stage", "a; b"));
    }

    #[test]
    fn memset_model() {
        let m = &Machine::MI325X;
        assert_eq!(memset_seconds(0, m), 0.0);
        let s = memset_seconds(2 * 16384 * 7168, m);
        assert!((s - (2.0 * 16384.0 * 7168.0 / (m.hbm_bytes_per_s * m.hbm_efficiency) + m.launch_overhead_s)).abs() < 1e-15);
    }
}
