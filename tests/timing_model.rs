//! The timing model (`amdgpu_emu::timing`) through the library's real launch path (HIP timing
//! mode). The calibration against AMD's measured times is `tests/peers.rs` (it needs their kernels).
//! Every time asserted on here is *modelled*.
#![cfg(feature = "emu")]

mod common;

use std::sync::{Arc, Mutex};

use amdgpu_emu::hip::{self as emu, TimingMode};
use amdgpu_emu::timing::{Machine, Scope, SimOptions, Stall, TimingReport};
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::{Context, DeviceActivations, DeviceWeights, Overrides, Stream, WeightLayout, fp8_gemm_nt};
use half::bf16;

/// Timing mode is process-wide: the tests of this file take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn opts(scope: Scope, skip: bool) -> SimOptions {
    common::timing_opts(scope, skip)
}

/// Deterministic quantized operands of an `m × n × k` dense GEMM on `ctx`, and a zeroed D.
fn operands(ctx: &Context, m: usize, n: usize, k: usize) -> (DeviceActivations<E4M3Fnuz>, DeviceWeights<E4M3Fnuz>, fp8gemm::DeviceBuffer<bf16>) {
    operands_in(ctx, m, n, k, WeightLayout::Logical)
}

/// [`operands`] with the weights in `layout`.
fn operands_in(
    ctx: &Context,
    m: usize,
    n: usize,
    k: usize,
    layout: WeightLayout,
) -> (DeviceActivations<E4M3Fnuz>, DeviceWeights<E4M3Fnuz>, fp8gemm::DeviceBuffer<bf16>) {
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 250.0).collect();
    let b: Vec<f32> = (0..n * k).map(|i| ((i * 104729 % 997) as f32 - 498.0) / 250.0).collect();
    let qa = QuantizedActivations::<E4M3Fnuz>::quantize(&a, m, k).unwrap();
    let qb = QuantizedWeights::<E4M3Fnuz>::quantize(&b, n, k).unwrap();
    (DeviceActivations::upload(ctx, &qa).unwrap(), DeviceWeights::upload_with_layout(ctx, &qb, layout).unwrap(), ctx.alloc_zeroed::<bf16>(m * n).unwrap())
}

/// One dense GEMM of the library on a stream with the selector overrides `forced`, launched once
/// per entry of `runs` (same buffers, so the same addresses), each modelled on its machine;
/// returns the reports and the config's tile.
fn dense_runs(m: usize, n: usize, k: usize, forced: Overrides, runs: &[(&Machine, SimOptions)]) -> (Vec<Arc<TimingReport>>, (usize, usize)) {
    let ctx = Context::new().expect("context");
    let (da, db, mut d) = operands(&ctx, m, n, k);
    let mut stream = Stream::new(&ctx).unwrap();
    stream.set_overrides(forced);
    let mut out = Vec::new();
    let mut tile = (0, 0);
    for (machine, o) in runs {
        emu::set_timing(Some(TimingMode { machine: (*machine).clone(), options: o.clone() }));
        // The queued launch runs (timed) when the stream is synchronized.
        let run = fp8_gemm_nt(&stream, &da, &db, &mut d).and_then(|r| stream.synchronize().map(|()| r));
        emu::set_timing(None);
        let cfg = run.expect("timed launch").config.expect("a launch");
        tile = (cfg.block_m as usize, cfg.block_n as usize);
        out.push(emu::last_launch_timing().expect("a timing report for the launch"));
    }
    (out, tile)
}

#[test]
fn dense_timing_is_deterministic_and_independent_of_mfma_math() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (m, n, k) = (300, 512, 1024);
    let mi = &Machine::MI300X;
    // The unsplit kernels (the model would split this shape; split-K is timed below).
    let unsplit = Overrides::NONE.with_split(1);
    let (r, tile) = dense_runs(m, n, k, unsplit, &[(mi, opts(Scope::Full, false)), (mi, opts(Scope::Full, true)), (mi, opts(Scope::Full, true))]);
    let (full, skip, again) = (&r[0], &r[1], &r[2]);
    // The MFMA results do not steer our kernels: skipping their math must not change the
    // instruction stream or any modelled figure.
    assert_eq!(full.cycles, skip.cycles);
    assert_eq!(full.issued, skip.issued);
    assert_eq!(full.stalls, skip.stalls);
    assert_eq!(skip.cycles, again.cycles, "the model is deterministic");
    // Exact work: every launched tile runs k/32 16x16x32 MFMAs per 16×16 output block.
    let tiles = m.div_ceil(tile.0) * n.div_ceil(tile.1);
    assert_eq!(full.flops, (2 * tiles * tile.0 * tile.1 * k) as f64);
    assert_eq!(full.workgroups, tiles as u64);
    assert_eq!(full.simulated_workgroups, tiles as u64);
    // Every wave issued every instruction it executed; the time is positive and above the
    // MFMA-throughput bound at the model's clock.
    let mfma_bound = full.flops / (Machine::MI300X.peak_fp8_flops());
    assert!(full.seconds > mfma_bound, "{} s vs MFMA bound {mfma_bound} s", full.seconds);
    assert!(full.busy.mfma > 0.0 && full.busy.mfma <= 1.0, "{:?}", full.busy);
    assert!(full.top.iter().all(|s| s.cycles > 0 && !s.text.is_empty()));
    let shown = format!("{full}");
    assert!(shown.contains("modelled") && shown.contains("TFLOPS"), "{shown}");
}

#[test]
fn workgroup_spans_and_the_issue_trace_cover_the_launch() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mi = &Machine::MI300X;
    let traced = SimOptions { trace_workgroup: Some(1), ..opts(Scope::Full, true) };
    let (r, _) = dense_runs(300, 512, 1024, Overrides::NONE.with_split(1), &[(mi, traced), (mi, opts(Scope::Full, true))]);
    let (t, plain) = (&r[0], &r[1]);
    // Tracing observes: the same modelled launch.
    assert_eq!((t.cycles, t.issued, t.stalls), (plain.cycles, plain.issued, plain.stalls));
    // One span per simulated workgroup, each inside the launch; the last one ends it.
    assert_eq!(t.spans.len() as u64, t.simulated_workgroups);
    let mut ids: Vec<u64> = t.spans.iter().map(|s| s.workgroup).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..t.workgroups).collect::<Vec<_>>());
    assert!(t.spans.iter().all(|s| s.start < s.end && s.end <= t.cycles), "{:?}", t.spans);
    assert_eq!(t.spans.iter().map(|s| s.end).max(), Some(t.cycles));
    assert!(plain.trace.is_empty());
    // The trace: workgroup 1's first wave from its first instruction to `s_endpgm`, in issue
    // order, inside its span.
    let span = t.spans.iter().find(|s| s.workgroup == 1).expect("workgroup 1 ran");
    let (first, last) = (t.trace.first().expect("a trace"), t.trace.last().expect("a trace"));
    assert!(t.trace.windows(2).all(|w| w[0].cycle < w[1].cycle), "issue cycles increase");
    assert!(first.cycle >= span.start && last.cycle <= span.end, "{first:?} {last:?} {span:?}");
    assert_eq!(last.text, "s_endpgm");
    let shown = format!("{t}");
    assert!(shown.contains("workgroup durations") && shown.contains("issue trace"), "{shown}");
}

#[test]
fn split_k_timing_counts_every_split_and_stays_stable() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (m, n, k, splits) = (64, 512, 2048, 4);
    let mi = &Machine::MI300X;
    let tile64 = Overrides::NONE.with_tile(64, 64);
    let (r, _) =
        dense_runs(m, n, k, tile64.with_split(splits), &[(mi, opts(Scope::Full, false)), (mi, opts(Scope::Full, true)), (mi, opts(Scope::Full, true))]);
    let (unsplit, _) = dense_runs(m, n, k, tile64.with_split(1), &[(mi, opts(Scope::Full, true))]);
    let tiles = (m / 64) * (n / 64);
    for x in &r {
        // Every (tile, split) workgroup ran; together they execute exactly the unsplit MFMA work.
        assert_eq!(x.workgroups, (tiles * splits as usize) as u64);
        assert_eq!(x.flops, (2 * m * n * k) as f64);
    }
    // Which workgroup of a tile reduces is decided by the functional run; under timing, a
    // launch with global atomics runs its workgroups one at a time in dispatch order, so the
    // traces and every modelled figure are the same run to run (and with or without MFMA math).
    let (a, b, c) = (r[0].seconds, r[1].seconds, r[2].seconds);
    for x in &r[1..] {
        assert_eq!((x.cycles, x.issued, x.stalls), (r[0].cycles, r[0].issued, r[0].stalls), "split-K modelled times {a} s, {b} s, {c} s");
    }
    assert!(a < unsplit[0].seconds, "split 4: {a} s, unsplit {} s", unsplit[0].seconds);
}

#[test]
fn more_bandwidth_never_makes_a_memory_bound_launch_slower() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // 64 rows against a wide weight: weight streaming dominates.
    let slow = Machine { hbm_bytes_per_s: 1.0e12, ..Machine::MI300X };
    let (r, _) = dense_runs(64, 2048, 2048, Overrides::NONE, &[(&slow, opts(Scope::Full, true)), (&Machine::MI300X, opts(Scope::Full, true))]);
    let (a, b) = (&r[0], &r[1]);
    assert!(b.cycles <= a.cycles, "5.3 TB/s: {} cycles, 1 TB/s: {} cycles", b.cycles, a.cycles);
    assert!(a.stalls[Stall::Vmcnt as usize] > 0);
}

#[test]
fn one_xcd_scope_stays_close_to_the_full_simulation() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // Mid-size shapes with several workgroups per XCD, and a split-K launch (64×2112×7168,
    // the config table's split) whose tiles' splits straddle XCDs.
    for (m, n, k) in [(1024, 2048, 1024), (512, 4096, 2048), (64, 2112, 7168)] {
        let (r, _) = dense_runs(m, n, k, Overrides::NONE, &[(&Machine::MI300X, opts(Scope::Full, true)), (&Machine::MI300X, opts(Scope::OneXcd, true))]);
        let (full, one) = (&r[0], &r[1]);
        let err = one.seconds / full.seconds - 1.0;
        println!("{m}x{n}x{k}: full {:.2} µs, one XCD {:.2} µs ({:+.1} %)", full.seconds * 1e6, one.seconds * 1e6, err * 100.0);
        assert_eq!(one.simulated_workgroups, full.workgroups.div_ceil(8));
        assert!(err.abs() < 0.10, "{m}x{n}x{k}: one-XCD shortcut off by {:.1} %", err * 100.0);
    }
}

/// Like [`dense_runs`] for one run, with `pad` bytes allocated (and kept) before the operands,
/// which moves every buffer of the launch by `pad` + the allocator's 4 KiB guard gap.
#[allow(clippy::too_many_arguments)]
fn dense_shifted(m: usize, n: usize, k: usize, pad: usize, layout: WeightLayout, forced: Overrides, machine: &Machine, o: &SimOptions) -> Arc<TimingReport> {
    let ctx = Context::new().expect("context");
    let _pad = (pad > 0).then(|| ctx.alloc_zeroed::<u8>(pad).expect("padding allocation"));
    let (da, db, mut d) = operands_in(&ctx, m, n, k, layout);
    let mut stream = Stream::new(&ctx).unwrap();
    stream.set_overrides(forced);
    emu::set_timing(Some(TimingMode { machine: machine.clone(), options: o.clone() }));
    let run = fp8_gemm_nt(&stream, &da, &db, &mut d).and_then(|r| stream.synchronize().map(|()| r));
    emu::set_timing(None);
    run.expect("timed launch");
    emu::last_launch_timing().expect("a timing report for the launch")
}

/// Moving a launch's buffers by a non-pathological offset must not move its modelled time by
/// more than a few percent (the caches index sets by a hash of the line address, the shared
/// bandwidth servers do not depend on request order; see `emu/src/timing/{cache,server}.rs`).
/// K = 7168 makes every operand row 56 lines long, the power-of-two-heavy stride of DeepSeek-V3.
#[test]
fn modelled_time_does_not_depend_on_where_the_buffers_landed() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let pads = [0usize, 4 << 10, 1 << 20, 32 << 20];
    // A split-K launch on all XCDs, and an unsplit one on XCD 0's share.
    for (m, n, k, scope, split) in [(64, 2112, 7168, Scope::Full, None), (1024, 2112, 7168, Scope::OneXcd, Some(1))] {
        let mut forced = Overrides::NONE;
        forced.split = split;
        let t: Vec<f64> =
            pads.iter().map(|&p| dense_shifted(m, n, k, p, WeightLayout::Logical, forced, &Machine::MI300X, &opts(scope, true)).seconds).collect();
        println!("{m}x{n}x{k} {scope:?}: modelled µs per shift {pads:?}: {:?}", t.iter().map(|x| x * 1e6).collect::<Vec<_>>());
        for (p, x) in pads.iter().zip(&t).skip(1) {
            let rel = x / t[0] - 1.0;
            assert!(
                rel.abs() < 0.02,
                "{m}x{n}x{k} {scope:?}: buffers moved by {p} B changed the modelled time by {:+.2} % ({} vs {} µs)",
                rel * 100.0,
                x * 1e6,
                t[0] * 1e6
            );
        }
    }
}

/// Exploration aid: `SHAPES=MxNxK,... PADS=0,4096,... [PRESHUFFLED=1] [MACHINE=mi325x] cargo test
/// --release --test timing_model -- --ignored --nocapture address_sweep` prints the modelled time
/// per shape and padding (weights pre-shuffled with `PRESHUFFLED`; on MI300X unless `MACHINE`
/// names another; each run's whole report with `VERBOSE`).
#[test]
#[ignore = "exploration: prints modelled times of shapes under buffer shifts"]
fn address_sweep() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let shapes = std::env::var("SHAPES").unwrap_or_else(|_| "64x2112x7168".into());
    let pads = std::env::var("PADS").unwrap_or_else(|_| "0,4096,1048576,33554432".into());
    let scope = if std::env::var("FULL").is_ok() { Scope::Full } else { Scope::OneXcd };
    let layout = if std::env::var("PRESHUFFLED").is_ok() { WeightLayout::Preshuffled } else { WeightLayout::Logical };
    let name = std::env::var("MACHINE").unwrap_or_else(|_| "mi300x".into());
    let machine = Machine::by_name(&name).unwrap_or_else(|| panic!("MACHINE={name}: not a timing-model machine"));
    for s in shapes.split(',') {
        let v: Vec<usize> = s.split('x').map(|x| x.parse().expect("MxNxK")).collect();
        let mut times = Vec::new();
        for p in pads.split(',') {
            let pad: usize = p.parse().expect("pad bytes");
            let r = dense_shifted(v[0], v[1], v[2], pad, layout, Overrides::NONE, machine, &opts(scope, true));
            times.push(r.seconds * 1e6);
            println!("{s} pad {pad}: {:.2} µs  {}", r.seconds * 1e6, r.kernel);
            if std::env::var("VERBOSE").is_ok() {
                println!("{r}");
            }
        }
        let (lo, hi) = times.iter().fold((f64::MAX, 0f64), |(a, b), &t| (a.min(t), b.max(t)));
        println!("{s}: spread {:.1} %", (hi / lo - 1.0) * 100.0);
    }
}
