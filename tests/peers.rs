//! The suites that need AMD's peer kernels (`FP8GEMM_PEERS_DIR`, `../shared/peers` beside the
//! checkout): the timing model's calibration against their measured MI325X times, and the CLI's
//! `calibrate`. Not part of `cargo test --workspace` (a fresh clone has no peers directory); run
//! it with `FP8GEMM_PEERS_DIR=../shared/peers cargo test --release --test peers` (`.ci/run` does).
//! Without the variable every test here fails, naming it. Every time asserted on is *modelled*.
#![cfg(feature = "emu")]

mod common;

use std::process::Command;
use std::sync::Mutex;

use amdgpu_emu::peers::{self, PeerFamily};
use amdgpu_emu::timing::calibrate::{CalRow, error_summary, time_peer};
use amdgpu_emu::timing::{Machine, Scope, SimOptions};

/// Timing mode is process-wide: the tests of this file take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn opts(scope: Scope, skip: bool) -> SimOptions {
    common::timing_opts(scope, skip)
}

fn fp8gemm(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fp8gemm")).args(args).output().expect("run fp8gemm");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn peers_dir() -> std::path::PathBuf {
    peers::peers_dir().unwrap_or_else(|e| panic!("{e} (the peer-kernel timing tests need AMD's code objects; .ci/run sets it to ../shared/peers)"))
}

#[test]
fn peer_kernel_timing_is_independent_of_mfma_math() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = peers_dir();
    let kernel = peers::load_peer(&dir, PeerFamily::BpreShuffle { tm: 64 }).unwrap();
    let full = time_peer(&kernel, 200, 256, 1024, &Machine::MI325X, &opts(Scope::Full, false)).unwrap();
    let skip = time_peer(&kernel, 200, 256, 1024, &Machine::MI325X, &opts(Scope::Full, true)).unwrap();
    assert_eq!((full.cycles, full.issued, full.stalls), (skip.cycles, skip.issued, skip.stalls));
    assert_eq!(full.flops, (2 * 4 * 64 * 2 * 128 * 1024) as f64, "⌈200/64⌉ × 2 tiles of 64×128×1024");
}

/// A recorded launch replayed gives exactly what `simulate` gives, on the machine it was
/// recorded for and on one with other timing parameters; another XCD count or scope is a typed
/// error, not a wrong answer.
#[test]
fn replay_of_a_recording_equals_simulate() {
    use amdgpu_emu::memory::DeviceMemory;
    use amdgpu_emu::timing::{ReplayError, record, replay, simulate};
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = peers_dir();
    let kernel = peers::load_peer(&dir, PeerFamily::BpreShuffle { tm: 48 }).unwrap();
    let mem = DeviceMemory::new();
    let launch = peers::prepare(&mem, &kernel, &peers::PeerProblem::generate(200, 512, 1024, 1), peers::Padding::WholeTiles).unwrap();
    let o = opts(Scope::OneXcd, true);
    let rec = record(&kernel.code_object, kernel.kernel(), &launch.config, &mem, &Machine::MI325X, &o).unwrap();
    assert!(rec.instructions() > 0);
    let slower = Machine::MI325X.with_overrides("mfma_chain_latency=0,l2_latency=150,clock_hz=1.5e9").unwrap();
    for m in [&Machine::MI325X, &slower] {
        let direct = simulate(&kernel.code_object, kernel.kernel(), &launch.config, &mem, m, &o).unwrap();
        let replayed = replay(&rec, m, &o).unwrap();
        assert_eq!((replayed.cycles, replayed.issued, replayed.stalls), (direct.cycles, direct.issued, direct.stalls), "{}", m.name);
        assert_eq!((replayed.flops, replayed.hbm_bytes, replayed.seconds), (direct.flops, direct.hbm_bytes, direct.seconds));
    }
    let other = Machine { xcds: 4, ..Machine::MI325X };
    assert_eq!(replay(&rec, &other, &o).err(), Some(ReplayError::Xcds { recorded: 8, machine: "mi325x".into(), xcds: 4 }));
    assert_eq!(replay(&rec, &Machine::MI325X, &opts(Scope::Full, true)).err(), Some(ReplayError::Scope { recorded: Scope::OneXcd, asked: Scope::Full }));
    launch.free(&mem).unwrap();
}

/// The fit over two tiny families of rows picks the grid point whose replay matches them, and
/// its cross-validation holds each (N, K) pair out in turn.
#[test]
fn fit_recovers_a_known_parameter() {
    use amdgpu_emu::timing::fit::{self, FitParam, FitRow};
    use amdgpu_emu::timing::{record, replay};
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = peers_dir();
    let kernel = peers::load_peer(&dir, PeerFamily::BpreShuffle { tm: 64 }).unwrap();
    let o = opts(Scope::OneXcd, true);
    // "Measured" times made by the model itself at mfma_chain_latency = 6, launch 1 µs.
    let truth = Machine::MI325X.with_overrides("mfma_chain_latency=6,launch_overhead_s=1e-6").unwrap();
    let mut rows = Vec::new();
    for (m, n, k) in [(128, 256, 1024), (256, 256, 1024), (128, 512, 2048), (320, 512, 2048)] {
        let mem = amdgpu_emu::memory::DeviceMemory::new();
        let launch = peers::prepare(&mem, &kernel, &peers::PeerProblem::generate(m, n, k, 1), peers::Padding::WholeTiles).unwrap();
        let recording = record(&kernel.code_object, kernel.kernel(), &launch.config, &mem, &Machine::MI325X, &o).unwrap();
        launch.free(&mem).unwrap();
        let measured_us = replay(&recording, &truth, &o).unwrap().seconds * 1e6;
        rows.push(FitRow {
            source: "test".into(),
            family: "bpreshuffle".into(),
            kernel: kernel.symbol.clone(),
            m,
            n,
            k,
            measured_us,
            machine: Machine::MI325X,
            recording,
        });
    }
    let params = [FitParam { name: "mfma_chain_latency".into(), lo: 0.0, hi: 12.0, step: 6.0 }];
    let grid = fit::evaluate(&rows, &params, &o, &mut |_, _| {}).unwrap();
    assert_eq!(grid.points, vec![vec![0.0], vec![6.0], vec![12.0]]);
    let best = fit::fit(&grid, &rows, &|_| true).unwrap();
    assert_eq!(best.values, vec![6.0]);
    assert!((best.launch_s - 1e-6).abs() < 1e-12, "{}", best.launch_s);
    assert!(best.objective < 1e-12);
    for i in 0..rows.len() {
        assert!(fit::rel_err(&grid, &rows, &best, i).abs() < 1e-9);
    }
    let held = fit::leave_one_out(&grid, &rows).unwrap();
    let pairs: Vec<(u32, u32, usize)> = held.iter().map(|h| (h.n, h.k, h.rows)).collect();
    assert_eq!(pairs, vec![(256, 1024, 2), (512, 2048, 2)]);
    assert!(held.iter().all(|h| h.fit.values == vec![6.0] && h.errors.iter().all(|e| e.abs() < 1e-9)));
}

/// A few measured MI325X rows (both N, small and large tiles) as a regression guard of the
/// calibration; the whole table is `fp8gemm calibrate` (and the ignored test below).
#[test]
fn calibration_rows_stay_within_the_goal() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = peers_dir();
    let rows = peers::measured_rows(&dir).unwrap();
    let pick = [0usize, 7, 10, 16, 24, 38];
    let mut out = Vec::new();
    for &i in &pick {
        let row = rows[i].clone();
        let kernel = peers::load_peer(&dir, row.family().unwrap()).unwrap();
        let report = time_peer(&kernel, row.m, row.n, row.k, &Machine::MI325X, &opts(Scope::OneXcd, true)).unwrap();
        let r = CalRow { measured: row, report };
        println!("{r}");
        assert!(r.rel_err().abs() <= 0.25, "row {i}: modelled {:.2} µs vs measured {:.2} µs", r.modelled_us(), r.measured.us);
        out.push(r);
    }
    let (median, worst) = error_summary(&out);
    println!("median |error| {:.1} %, worst {:.1} %", median * 100.0, worst * 100.0);
    assert!(median <= 0.10);
}

/// The whole calibration table (47 rows, one-XCD scope): `cargo test --release --test
/// timing_model -- --ignored --nocapture`.
#[test]
#[ignore = "minutes: the whole measured table"]
fn calibration_table() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = peers_dir();
    let out = amdgpu_emu::timing::calibrate::calibrate(&dir, &Machine::MI325X, &opts(Scope::OneXcd, true), &|_| true, &mut |_, r| println!("{r}")).unwrap();
    let (median, worst) = error_summary(&out);
    println!("{} rows: median |error| {:.1} %, worst {:.1} %", out.len(), median * 100.0, worst * 100.0);
    assert_eq!(out.len(), peers::measured_rows(&dir).unwrap().len(), "every row of the file is timed");
    assert!(median <= 0.10 && worst <= 0.25, "median {median}, worst {worst}");
}

#[test]
fn calibrate_compares_modelled_and_measured_rows() {
    let dir = std::env::var("FP8GEMM_PEERS_DIR")
        .unwrap_or_else(|_| panic!("FP8GEMM_PEERS_DIR is not set: the calibration needs AMD's peer code objects (.ci/run sets it to ../shared/peers)"));
    let csv = std::env::temp_dir().join(format!("fp8gemm-calibrate-{}.csv", std::process::id()));
    let (ok, out, err) = fp8gemm(&["calibrate", "--peers", &dir, "--rows", "measured_mi325x.csv:10", "--scope", "xcd", "--csv", csv.to_str().unwrap()]);
    assert!(ok, "{out}\n{err}");
    let table = std::fs::read_to_string(&csv).unwrap();
    let _ = std::fs::remove_file(&csv);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "file,kernel,m,n,k,measured_us,modelled_us,signed_error,machine,scope,family,note");
    assert_eq!(lines.len(), 2, "{table}");
    let f: Vec<&str> = lines[1].split(',').collect();
    assert!(f[0].ends_with("measured_mi325x.csv") && f[1].ends_with("BpreShuffle_32x128E"), "{table}");
    assert_eq!(&f[2..6], &["480", "2048", "7168", "27.1378"], "{table}");
    let (measured, modelled, signed): (f64, f64, f64) = (f[5].parse().unwrap(), f[6].parse().unwrap(), f[7].parse().unwrap());
    assert!((signed - (modelled / measured - 1.0)).abs() < 1e-4, "{table}");
    assert_eq!((f[8], f[9], f[10]), ("mi325x", "xcd", "bpreshuffle"), "{table}");
    // The note of a given row: the launch's modelled busy fractions, each in [0, 1].
    let note: Vec<&str> = f[11].split(' ').collect();
    assert_eq!(note.len(), 15, "{table}");
    assert_eq!(note[0], "busy", "{table}");
    let names: Vec<&str> = note[1..].iter().step_by(2).copied().collect();
    assert_eq!(names, ["mfma", "valu", "lds", "vmem", "l2", "hbm", "cus"], "{table}");
    for v in note[2..].iter().step_by(2) {
        let x: f64 = v.parse().unwrap_or_else(|_| panic!("busy fraction `{v}` in\n{table}"));
        assert!((0.0..=1.0).contains(&x), "busy fraction {x} in\n{table}");
    }
    assert!(note[2].parse::<f64>().unwrap() > 0.0, "an FP8 GEMM keeps its MFMAs busy: {table}");
    let row = out.lines().find(|l| l.contains("BpreShuffle_32x128")).unwrap_or_else(|| panic!("no row in\n{out}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cols[..2], &["bpreshuffle", "mi325x"], "{row}");
    assert_eq!(&cols[3..7], &["480", "2048", "7168", "27.14"], "{row}");
    let group =
        out.lines().find(|l| l.trim_start().starts_with("bpreshuffle ") && l.contains(" rows: ")).unwrap_or_else(|| panic!("no summary line in\n{out}"));
    let words: Vec<&str> = group.split_whitespace().collect();
    assert_eq!(&words[..5], &["bpreshuffle", "mi325x", "1", "rows:", "median"], "{group}");
    assert!(out.contains("1 rows: median |error|") && out.contains("median signed error"), "{out}");
    // A row selector naming a file selects nothing elsewhere; a plain index selects that row of
    // every file given.
    let (ok, out, err) = fp8gemm(&["calibrate", "--peers", &dir, "--files", "measured_mi325x.csv", "--rows", "measured_i8gemm_mi325x.csv:0"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("0 rows: median |error|"), "{out}");
    // Shape-only MoE rows: modelled µs, empty measured columns, the scaling said in the note.
    let csv = std::env::temp_dir().join(format!("fp8gemm-calibrate-moe-{}.csv", std::process::id()));
    let args = ["calibrate", "--peers", &dir, "--moe-only", "--moe-rows", "0,15", "--moe-div", "16", "--scope", "xcd", "--csv", csv.to_str().unwrap()];
    let (ok, out, err) = fp8gemm(&args);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("SCALED down by 16") && out.contains("2 MoE rows modelled"), "{out}");
    let table = std::fs::read_to_string(&csv).unwrap();
    let _ = std::fs::remove_file(&csv);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    for (line, file, family) in [(lines[1], "shapes_fmoe_stage1.csv", "fmoe-stage1"), (lines[2], "shapes_fmoe_1stage.csv", "fmoe-1stage")] {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 12, "{line}");
        assert!(f[0].ends_with(file), "{line}");
        assert_eq!((f[5], f[7], f[8], f[9], f[10]), ("", "", "mi325x", "xcd", family), "{line}");
        assert!(f[6].parse::<f64>().is_ok_and(|us| us > 0.0), "{line}");
        assert!(f[11].contains("SCALED 1/16"), "{line}");
    }
    assert_eq!(&lines[1].split(',').collect::<Vec<_>>()[2..5], &["9", "4096", "7168"], "the row's own M, N, K");
    assert!(lines[2].contains("zero-fill of O"), "the 1-stage time includes the output fill: {table}");
    let (ok, _, err) = fp8gemm(&["calibrate", "--peers", "/nonexistent/peers"]);
    assert!(!ok);
    assert!(err.contains("/nonexistent/peers"), "{err}");
}
