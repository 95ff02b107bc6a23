//! The timing model on every peer family (`$FP8GEMM_PEERS_DIR`): MFMA results never steer
//! control flow or addresses of AMD's kernels, so a timing run may skip computing them
//! ([`SimOptions::skip_mfma_math`]); these tests check that the modelled timing — cycles, issued
//! instructions, stalls by reason, every workgroup's span — is identical with and without the
//! skip, one small shape per family: BpreShuffle (gfx942 on MI325X, gfx950 on MI355X), I8gemm,
//! MoE stage 1 and 1-stage (MI325X); for the MoE families also with the calibration's timing
//! operands (zero values, same routing). Then the calibration's per-row path on one measured MI355X
//! row and one I8gemm row. Without the peers directory every test fails, naming it. Every time
//! here is *modelled*; wall times are printed, never asserted.

use std::path::PathBuf;
use std::time::Instant;

use amdgpu_emu::peers::{self, PeerFamily};
use amdgpu_emu::peers_gfx950::load_gfx950_peer;
use amdgpu_emu::peers_i8::{I8_TILES, I8Revision, load_i8_peer};
use amdgpu_emu::peers_moe::{self, MoeFamily};
use amdgpu_emu::timing::calibrate::{self as cal, RowFamily};
use amdgpu_emu::timing::{Machine, Scope, SimOptions, TimingReport};

fn dir() -> PathBuf {
    peers::peers_dir().unwrap_or_else(|e| panic!("the peer timing tests need AMD's code objects: {e}"))
}

fn opts(scope: Scope, skip: bool) -> SimOptions {
    SimOptions { scope, skip_mfma_math: skip, ..SimOptions::default() }
}

/// Runs `f` with and without MFMA math; asserts the timing is identical; prints both wall times.
fn same_with_and_without_math(what: &str, f: &dyn Fn(&SimOptions) -> TimingReport) -> TimingReport {
    let t = Instant::now();
    let full = f(&opts(Scope::Full, false));
    let full_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let skip = f(&opts(Scope::Full, true));
    let skip_s = t.elapsed().as_secs_f64();
    println!("{what}: modelled {:.2} µs; wall {full_s:.2} s with MFMA math, {skip_s:.2} s without ({:.2}×)", full.seconds * 1e6, full_s / skip_s.max(1e-9));
    assert_eq!((full.cycles, full.issued, full.stalls), (skip.cycles, skip.issued, skip.stalls), "{what}");
    assert_eq!(full.spans, skip.spans, "{what}: workgroup spans");
    assert_eq!(full.hbm_bytes, skip.hbm_bytes, "{what}");
    assert!(full.cycles > 0 && full.issued > 0, "{what}");
    full
}

#[test]
fn bpreshuffle_gfx942_and_gfx950_timing_is_independent_of_mfma_math() {
    let d = dir();
    let k942 = peers::load_peer(&d, PeerFamily::BpreShuffle { tm: 64 }).unwrap();
    let a = same_with_and_without_math("BpreShuffle 64x128 gfx942 on MI325X, 200x256x1024", &|o| {
        cal::time_peer(&k942, 200, 256, 1024, &Machine::MI325X, o).unwrap()
    });
    let k950 = load_gfx950_peer(&d, 64).unwrap();
    let b = same_with_and_without_math("BpreShuffle 64x128 gfx950 on MI355X, 200x256x1024", &|o| {
        cal::time_peer(&k950, 200, 256, 1024, &Machine::MI355X, o).unwrap()
    });
    assert_eq!((a.machine.as_str(), b.machine.as_str()), ("mi325x", "mi355x"));
    // Same code, same MFMAs: the same FLOPs on either machine (⌈200/64⌉ × 2 tiles of 64×128×1024).
    assert_eq!(a.flops, (2 * 4 * 64 * 2 * 128 * 1024) as f64);
    assert_eq!(b.flops, a.flops);
}

#[test]
fn i8gemm_timing_is_independent_of_mfma_math() {
    let d = dir();
    for tile in [I8_TILES[0], I8_TILES.into_iter().find(|t| t.tn == 256).unwrap()] {
        let k = load_i8_peer(&d, tile, I8Revision::Measured).unwrap();
        let m = 2 * tile.tm + 5;
        same_with_and_without_math(&format!("{} on MI325X, {m}x{}x1024 lda 1152", tile.name(), 2 * tile.tn), &|o| {
            cal::time_i8(&k, m, 2 * tile.tn, 1024, 1024 + 128, &Machine::MI325X, o).unwrap()
        });
    }
}

#[test]
fn moe_timing_is_independent_of_mfma_math() {
    let d = dir();
    for family in [MoeFamily::Stage1, MoeFamily::OneStage] {
        let rows = peers_moe::shape_rows(&d, family).unwrap();
        // The first row (one token) and the last (many tokens, the largest tile), made small
        // (divisor 16 or 64, as the calibration's output would say).
        for (row, div) in [(rows[0].clone(), 16), (rows[rows.len() - 1].clone(), 64)] {
            let kernel = peers_moe::load_moe_kernel(&d, row.spec).unwrap();
            let run = |o: &SimOptions, zeros: bool| {
                let mem = amdgpu_emu::memory::DeviceMemory::new();
                let prep = if zeros { peers_moe::prepare_row_for_timing } else { peers_moe::prepare_row };
                let (_, launch) = prep(&mem, &kernel, &row, div, 1, Machine::MI325X.cus()).unwrap();
                let r = amdgpu_emu::timing::simulate(&kernel.code_object, kernel.kernel(), &launch.config, &mem, &Machine::MI325X, o).unwrap();
                launch.free(&mem).unwrap();
                r
            };
            let random = same_with_and_without_math(&format!("{} scaled 1/{div} on MI325X", row.spec.name), &|o| run(o, false));
            // The calibration's timing operands (same routing, zero values) time the same.
            let zeros = run(&opts(Scope::Full, true), true);
            assert_eq!((zeros.cycles, zeros.issued, zeros.stalls), (random.cycles, random.issued, random.stalls), "{}: timing operands", row.spec.name);
            assert_eq!(zeros.spans, random.spans, "{}: timing operands", row.spec.name);
        }
    }
}

/// One measured MI355X row (the smallest: BpreShuffle 32x128, 96x7168x384) on MI355X with the
/// gfx950 build, and one I8gemm row (64x1536x5120) on MI325X, through the calibration's row
/// path, as `fp8gemm calibrate` runs them.
#[test]
fn calibrate_runs_an_mi355x_row_and_an_i8gemm_row() {
    let d = dir();
    let mi355 = d.join("measured_mi355x.csv");
    let i8 = d.join("measured_i8gemm_mi325x.csv");
    let files = cal::measured_files(&d).unwrap();
    assert!(files.contains(&mi355) && files.contains(&i8), "{files:?}");
    let pick = |r: &cal::GivenRow| (r.file == mi355 && r.m == 96 && r.n == 7168 && r.k == 384) || (r.file == i8 && r.index == 0);
    let t = Instant::now();
    let out =
        cal::run_given(&d, &[mi355.clone(), i8.clone()], &|r| cal::machine_for(r, None), &opts(Scope::OneXcd, true), &pick, &mut |r| println!("{r}")).unwrap();
    println!("2 rows in {:.1} s (wall)", t.elapsed().as_secs_f64());
    assert_eq!(out.len(), 2);
    let (a, b) = (&out[0], &out[1]);
    assert_eq!((a.family, a.report.machine.as_str(), a.row.chip.as_str()), (RowFamily::BpreShuffleGfx950, "mi355x", "mi355x"));
    assert_eq!((a.row.m, a.row.n, a.row.k, a.row.us), (96, 7168, 384, 5.3807));
    assert_eq!(a.report.grid, [7168 / 128, 96 / 32, 1]);
    assert_eq!((b.family, b.report.machine.as_str(), b.row.lda), (RowFamily::I8gemm, "mi325x", Some(5248)));
    assert_eq!((b.row.m, b.row.n, b.row.k, b.row.us), (64, 1536, 5120, 16.7759));
    assert_eq!(b.report.grid, [1536 / 128, 64 / 16, 1]);
    for r in &out {
        assert!(r.modelled_us() > 1.0 && r.modelled_us() < 1e4, "{r}");
        assert!((r.rel_err() - (r.modelled_us() / r.row.us - 1.0)).abs() < 1e-12);
    }
    let s = cal::summarize(&out);
    let keys: Vec<(&str, &str, usize)> = s.iter().map(|g| (g.family.as_str(), g.chip.as_str(), g.rows)).collect();
    assert_eq!(keys, [("bpreshuffle-gfx950", "mi355x", 1), ("i8gemm", "mi325x", 1), ("all", "all", 2)]);
}
