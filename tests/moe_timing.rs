//! Modelled time per stage of a `MoeLayer` forward pass: the observer of
//! `MoeLayer::forward_with` synchronizes after each launch and reads the emulator's timing report
//! (every figure *modelled* by the timing model, not measured). Its own test binary, because the
//! timing switch is process-wide and would time (and skip the MFMA math of) other tests' launches.

mod common;

use std::collections::BTreeMap;

use amdgpu_emu::exec::Checks;
use amdgpu_emu::hip::{self as emu, TimingMode};
use amdgpu_emu::timing::{Machine, Scope, SimOptions};
use common::{checked_context, randn_bf16, random_ids};
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::quant::{GroupedQuantizedWeights, QuantizedWeights};
use fp8gemm::{DeviceGroupedWeights, DeviceWeights, MoeLayer, MoeLayout, MoeOptions, MoeScratch, MoeStage, Stream};
use half::bf16;
use rand::{Rng, SeedableRng, rngs::StdRng};

/// The emulator's timing switch and its last report are process-wide: the tests of this binary
/// take turns (the test harness runs them on parallel threads).
fn timing_lock() -> std::sync::MutexGuard<'static, ()> {
    static TIMING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that panicked while holding it leaves nothing behind that the next one reads.
    TIMING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn modelled_time_per_stage() {
    let _serial = timing_lock();
    let ctx = checked_context();
    let (e, h, i, k, t) = (16usize, 256usize, 128usize, 4usize, 64usize);
    let mut rng = StdRng::seed_from_u64(3);
    let gu = GroupedQuantizedWeights::<E4M3Fnuz>::quantize(&randn_bf16(e * 2 * i * h, &mut rng), e, 2 * i, h).unwrap();
    let dn = GroupedQuantizedWeights::<E4M3Fnuz>::quantize(&randn_bf16(e * h * i, &mut rng), e, h, i).unwrap();
    let s1 = QuantizedWeights::<E4M3Fnuz>::quantize(&randn_bf16(2 * 128 * h, &mut rng), 256, h).unwrap();
    let s2 = QuantizedWeights::<E4M3Fnuz>::quantize(&randn_bf16(h * 128, &mut rng), h, 128).unwrap();
    let layer = MoeLayer::new(
        &ctx,
        DeviceGroupedWeights::upload(&ctx, &gu).unwrap(),
        DeviceGroupedWeights::upload(&ctx, &dn).unwrap(),
        Some((DeviceWeights::upload(&ctx, &s1).unwrap(), DeviceWeights::upload(&ctx, &s2).unwrap())),
        MoeOptions { top_k: k, masked_max_tokens: 8 },
    )
    .unwrap();
    let mut scratch = MoeScratch::new(&layer, t, 8).unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let x: Vec<bf16> = randn_bf16(t * h, &mut rng).into_iter().map(bf16::from_f32).collect();
    let ids: Vec<i32> = (0..t * k).map(|_| rng.random_range(0..e as i32)).collect();
    let w = vec![0.25f32; t * k];
    let (d_x, d_ids, d_w) = (ctx.upload(&x).unwrap(), ctx.upload(&ids).unwrap(), ctx.upload(&w).unwrap());
    let mut out = ctx.alloc_zeroed::<bf16>(t * h).unwrap();
    for (layout, tokens) in [(MoeLayout::Contiguous, t), (MoeLayout::Masked, 8)] {
        let mut per_stage: BTreeMap<String, (f64, Vec<String>)> = BTreeMap::new();
        let options = SimOptions { scope: Scope::Full, skip_mfma_math: true, checks: Checks::default(), top: 3, trace_workgroup: None };
        emu::set_timing(Some(TimingMode { machine: Machine::MI300X.clone(), options }));
        let run = layer.forward_with(
            &stream,
            d_x.slice(..tokens * h).unwrap(),
            d_ids.slice(..tokens * k).unwrap(),
            d_w.slice(..tokens * k).unwrap(),
            out.slice_mut(..tokens * h).unwrap(),
            &mut scratch,
            layout,
            &mut |stage: MoeStage| {
                // The queued launch runs (timed) when the stream is synchronized.
                stream.synchronize()?;
                let r = emu::last_launch_timing().expect("a timing report for the stage's launch");
                let entry = per_stage.entry(format!("{stage:?}")).or_default();
                entry.0 += r.seconds;
                entry.1.push(r.kernel.clone());
                if std::env::var_os("MOE_TIMING_VERBOSE").is_some() {
                    print!("{r}");
                }
                Ok(())
            },
        );
        emu::set_timing(None);
        let run = run.unwrap();
        let names = |s: &str| per_stage[s].1.clone();
        let l = if layout == MoeLayout::Masked { "masked" } else { "contiguous" };
        let route: Vec<String> = if tokens * k > 256 {
            vec!["moe_route_count".into(), format!("moe_route_offsets_{l}"), format!("moe_route_scatter_{l}")]
        } else if run.rows <= fp8gemm_device::moe::SINGLE_ROUTE_ROWS as usize {
            vec![format!("moe_route_single_{l}")]
        } else {
            vec![format!("moe_route_count_offsets_{l}"), format!("moe_route_scatter_{l}")]
        };
        assert_eq!(names("Route"), route);
        assert_eq!(names("GatherQuantize"), ["moe_gather_quantize_bf16"]);
        assert_eq!(names("Unpermute"), ["moe_unpermute_bf16"]);
        assert!(names("GateUpGemm")[0].starts_with(if layout == MoeLayout::Masked {
            "m_grouped_fp8_gemm_nt_masked"
        } else {
            "m_grouped_fp8_gemm_nt_contiguous"
        }));
        assert_eq!(names("SharedExpert").len(), 4);
        println!("{layout:?} T={tokens} E={e} H={h} I={i} k={k} + shared Is=128, MI300X (modelled):");
        for (stage, (secs, kernels)) in &per_stage {
            assert!(*secs > 0.0, "{stage}: no modelled time");
            println!("  {stage:<16} {:>8.2} µs  {}", secs * 1e6, kernels.join(", "));
        }
    }
}

/// A GLM-5.1-class layer (257 experts, top-9, hidden 6144, expert width 256) at 16384 tokens:
/// it runs — the contiguous layout pads each active expert only to the GEMMs' tile height, so
/// the down GEMM's output is 163,648 × 6144 bf16 instead of 180,096 × 6144 (past the 2 GiB of
/// 32-bit buffer offsets, which made it an `Error::Shape` before); larger ones run in row chunks
/// (`m_grouped_fp8_gemm_nt_contiguous_aligned`). The routing (every `(t, j)`'s row) is checked
/// against the CPU index math; the times printed are *modelled* (MI325X, MFMA math skipped, so
/// the output itself is not checked). Long: `cargo test --release --test moe_timing -- --ignored`.
#[test]
#[ignore]
fn glm_class_layer_runs_at_16384_tokens() {
    let _serial = timing_lock();
    let ctx = checked_context();
    let (e, h, i, k, t) = (257usize, 6144usize, 256usize, 9usize, 16384usize);
    let mut per_stage: BTreeMap<String, f64> = BTreeMap::new();
    let (run, ids, stream, scratch) = timed_zero_layer(&ctx, (e, h, i, k, t), fp8gemm::WeightLayout::Logical, 16384, |stage, r| {
        *per_stage.entry(format!("{stage:?}")).or_default() += r.seconds;
    });
    let bound = fp8gemm::moe::contiguous_rows_bound_aligned(t, k, e, run.align).unwrap();
    assert_eq!(run.rows, bound);
    assert!((run.rows * h * 2) as u64 > 2_000_000_000, "the down GEMM's output is near the 2 GiB limit: {} rows", run.rows);
    assert_eq!(scratch.status(&stream).unwrap(), Default::default());
    let want = fp8gemm::moe::route_reference_aligned(&ids, k, e, run.rows, None, run.align);
    let got = scratch.slots(&stream, t).unwrap();
    for (p, (g, w)) in got.iter().zip(&want.slots).enumerate() {
        assert_eq!(g, w, "slots[{p}] (expert {})", ids[p]);
    }
    println!("E=257 k=9 H=6144 I=256 T=16384, align {} ({} rows), MI325X (modelled):", run.align, run.rows);
    for (stage, secs) in &per_stage {
        assert!(*secs > 0.0, "{stage}: no modelled time");
        println!("  {stage:<16} {:>10.1} µs", secs * 1e6);
    }
}

/// The contiguous layout is sized by the route's bound, so the rows past the ones in use (up to
/// `align − 1` per expert) are all at its end. The grouped GEMMs read the route's count of rows
/// in use on the device and deal the tiles of those rows to the grid's first workgroups, which
/// the hardware spreads over every XCD: each XCD's fabric link then carries a like share of the
/// weights, where per-XCD id ranges over the bound gave the last XCD the padding and nothing to
/// load (64 experts, top-8, 256 tokens: 1152 of the bound's 4032 rows are padding).
#[test]
fn contiguous_gemms_spread_the_rows_in_use_over_every_xcd() {
    let _serial = timing_lock();
    let ctx = checked_context();
    let (e, h, i, k, t) = (64usize, 1024usize, 256usize, 8usize, 256usize);
    let mut gemms: Vec<(String, Vec<f64>)> = Vec::new();
    let (run, ids, stream, scratch) = timed_zero_layer(&ctx, (e, h, i, k, t), fp8gemm::WeightLayout::Preshuffled, 31, |stage, r| {
        if matches!(stage, MoeStage::GateUpGemm | MoeStage::DownGemm) {
            gemms.push((r.kernel.clone(), r.fabric_by_xcd.clone()));
        }
    });
    // The route used fewer rows than the bound the launches are sized by.
    let used = scratch.status(&stream).unwrap();
    let want = fp8gemm::moe::route_reference_aligned(&ids, k, e, run.rows, None, run.align);
    assert!(want.used_rows * 5 <= run.rows * 4, "padding is at least a fifth of the bound: {} of {} rows used", want.used_rows, run.rows);
    assert_eq!(used, Default::default());
    assert_eq!(gemms.len(), 2, "{gemms:?}");
    for (kernel, per_xcd) in &gemms {
        assert!(kernel.starts_with("m_grouped_fp8_gemm_nt_contiguous_splitk"), "{kernel}");
        assert_eq!(per_xcd.len(), 8, "{kernel}: {per_xcd:?}");
        let (lo, hi) = per_xcd.iter().fold((f64::INFINITY, 0f64), |(lo, hi), &b| (lo.min(b), hi.max(b)));
        assert!(lo >= 0.6 * hi, "{kernel}: fabric bytes per XCD {per_xcd:?} (least {lo}, most {hi})");
    }
}

/// A layer of `e` all-zero experts (top-`k`, hidden `h`, expert width `i`, routed weights in
/// `layout`) run once on `t` zero tokens, each routed to `k` distinct experts drawn with `seed`,
/// in the contiguous layout, timed on MI325X (every XCD, MFMA math skipped; *modelled*):
/// `on_launch` gets each launch's stage and timing report. Returns the run, the routed ids, and
/// the stream and scratch holding the route's results.
fn timed_zero_layer(
    ctx: &fp8gemm::Context,
    (e, h, i, k, t): (usize, usize, usize, usize, usize),
    layout: fp8gemm::WeightLayout,
    seed: u64,
    mut on_launch: impl FnMut(MoeStage, &amdgpu_emu::timing::TimingReport),
) -> (fp8gemm::MoeRun, Vec<i32>, Stream, MoeScratch<E4M3Fnuz>) {
    let layer = MoeLayer::new(
        ctx,
        DeviceGroupedWeights::<E4M3Fnuz>::alloc_with_layout(ctx, e, 2 * i, h, layout).unwrap(),
        DeviceGroupedWeights::<E4M3Fnuz>::alloc_with_layout(ctx, e, h, i, layout).unwrap(),
        None,
        MoeOptions { top_k: k, masked_max_tokens: 0 },
    )
    .unwrap();
    let mut scratch = MoeScratch::new(&layer, t, 0).unwrap();
    let stream = Stream::new(ctx).unwrap();
    let ids = random_ids(t, k, e, &mut StdRng::seed_from_u64(seed), false, 0.0);
    let x = ctx.alloc_zeroed::<bf16>(t * h).unwrap();
    let (d_ids, d_w) = (ctx.upload(&ids).unwrap(), ctx.upload(&vec![1.0f32 / k as f32; t * k]).unwrap());
    let mut out = ctx.alloc_zeroed::<bf16>(t * h).unwrap();
    let options = SimOptions { scope: Scope::Full, skip_mfma_math: true, checks: Checks::default(), top: 0, trace_workgroup: None };
    emu::set_timing(Some(TimingMode { machine: Machine::MI325X.clone(), options }));
    let run = layer.forward_with(&stream, &x, &d_ids, &d_w, &mut out, &mut scratch, MoeLayout::Contiguous, &mut |stage: MoeStage| {
        stream.synchronize()?;
        on_launch(stage, &emu::last_launch_timing().expect("a timing report for the stage's launch"));
        Ok(())
    });
    emu::set_timing(None);
    (run.unwrap(), ids, stream, scratch)
}
