//! The `gemm` demo: DeepGEMM's test recipe end to end through the public API.

use std::time::Instant;

use fp8gemm::codeobj::Arch;
use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz, Fp8Format};
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::{Context, DeviceActivations, DeviceWeights, reference};
use half::bf16;
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::StandardNormal;

/// `count` standard-normal values rounded to BF16 (as DeepGEMM's tests draw them).
pub fn randn_bf16(count: usize, rng: &mut StdRng) -> Vec<f32> {
    (0..count).map(|_| bf16::from_f32(rng.sample::<f32, _>(StandardNormal)).to_f32()).collect()
}

pub fn run_dense(m: usize, n: usize, k: usize, seed: u64) -> Result<(), String> {
    let ctx = Context::new().map_err(|e| e.to_string())?;
    match ctx.arch() {
        Arch::Gfx942 => dense_with::<E4M3Fnuz>(&ctx, m, n, k, seed),
        Arch::Gfx950 => dense_with::<E4M3Fn>(&ctx, m, n, k, seed),
        other => Err(format!("no demo for {other}")),
    }
}

fn dense_with<F: Fp8Format>(ctx: &Context, m: usize, n: usize, k: usize, seed: u64) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut rng = StdRng::seed_from_u64(seed);
    let a = randn_bf16(m * k, &mut rng);
    let b = randn_bf16(n * k, &mut rng);
    let qa = QuantizedActivations::<F>::quantize(&a, m, k).map_err(|x| e(&x))?;
    let qb = QuantizedWeights::<F>::quantize(&b, n, k).map_err(|x| e(&x))?;
    let da = DeviceActivations::upload(ctx, &qa).map_err(|x| e(&x))?;
    let db = DeviceWeights::upload(ctx, &qb).map_err(|x| e(&x))?;
    let mut dd = ctx.alloc_zeroed::<bf16>(m * n).map_err(|x| e(&x))?;
    let mut stream = crate::env::stream(ctx).map_err(|x| e(&x))?;
    // The configuration the model prefers (or a forced one) runs even when it needs more
    // workspace than a stream's default holds (stream-K at large M): say so.
    let need = fp8gemm::workspace_floats(m, n, k, &stream.overrides());
    if need > fp8gemm::workspace::DEFAULT_STREAM_WORKSPACE_FLOATS {
        eprintln!(
            "note: the stream's workspace is enlarged to {need} floats for this configuration (default {})",
            fp8gemm::workspace::DEFAULT_STREAM_WORKSPACE_FLOATS
        );
        stream.set_workspace(Some(fp8gemm::Workspace::new(ctx, need).map_err(|x| e(&x))?)).map_err(|x| e(&x))?;
    }
    let t0 = Instant::now();
    crate::profile::begin();
    // `FP8GEMM_PRESHUFFLED=1`: the same weights in the pre-shuffled layout (the bs kernels).
    let db = if crate::env::get().preshuffled { DeviceWeights::upload_preshuffled(ctx, &qb).map_err(|x| e(&x))? } else { db };
    let run = fp8gemm::fp8_gemm_nt(&stream, &da, &db, &mut dd).map_err(|x| e(&x))?;
    // The launch runs here (the emulator's streams are lazy queues): profile::end reads its timing.
    stream.synchronize().map_err(|x| e(&x))?;
    if crate::profile::end(m, n, k, 1)? {
        if let Some(c) = &run.config {
            println!("  config {c}");
        }
        return Ok(());
    }
    let d = dd.download(&stream).map_err(|x| e(&x))?;
    let wall = t0.elapsed();

    let mut want_q = vec![bf16::ZERO; m * n];
    reference::fp8_gemm_nt(&qa, &qb, &mut want_q).map_err(|x| e(&x))?;
    let mut want_f = vec![0f32; m * n];
    reference::gemm_nt_f32(&a, &b, m, n, k, &mut want_f).map_err(|x| e(&x))?;
    let diff_q = reference::calc_diff(&d, &want_q).map_err(|x| e(&x))?;
    let diff_f = reference::calc_diff(&d, &want_f).map_err(|x| e(&x))?;

    println!("fp8_gemm_nt  m={m} n={n} k={k} seed={seed}  on {} ({}, FP8 {})", ctx.device_name(), ctx.arch(), F::NAME);
    match &run.config {
        Some(c) => println!("config       {c}"),
        None => println!("config       (empty problem: nothing launched)"),
    }
    println!("calc_diff    {diff_q:.3e} vs the dequantized reference (goal < 1e-5)");
    println!("calc_diff    {diff_f:.3e} vs the unquantized reference (goal < 1e-3)");
    report_emulator(wall, m, n, k);
    if diff_q >= 1e-5 || diff_f >= 1e-3 {
        return Err(format!("accuracy goal missed: {diff_q:.3e} / {diff_f:.3e}"));
    }
    Ok(())
}

/// Prints the emulator's counters and the throughput lower bound for the last launch,
/// and the emulator's wall time over an `m × n × k` problem (`m` = rows actually computed).
#[cfg(feature = "emu")]
pub fn report_emulator(wall: std::time::Duration, m: usize, n: usize, k: usize) {
    if let Some(r) = fp8gemm::runtime::last_emulator_report() {
        // Emulator counters of the launch and the throughput lower bound; the timing model's
        // modelled time is `fp8gemm profile` (it runs the launch again, traced).
        for line in r.to_string().lines() {
            println!("counters     {line}");
        }
        let est = amdgpu_emu::timing::bound::estimate(&r, &r.resources, r.grid);
        for line in est.to_string().lines() {
            println!("modelled     {line}");
        }
        println!("modelled     the timing model's modelled time, stalls and pipes: `fp8gemm profile` with the same shape");
    }
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    println!(
        "emulator     wall time {:.3} s ({:.2} GFLOP/s emulated on the CPU; measured here, not a GPU figure)",
        wall.as_secs_f64(),
        flops / wall.as_secs_f64() / 1e9
    );
}

/// Prints the measured time of the last GEMM (launch to copy-back) on real hardware.
#[cfg(not(feature = "emu"))]
pub fn report_emulator(wall: std::time::Duration, m: usize, n: usize, k: usize) {
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    println!("time         {:.3} ms including the copy back ({:.1} TFLOPS)", wall.as_secs_f64() * 1e3, flops / wall.as_secs_f64() / 1e12);
}

pub fn bench_dense(m: usize, n: usize, k: usize, iters: u32) -> Result<(), String> {
    let ctx = Context::new().map_err(|e| e.to_string())?;
    match ctx.arch() {
        Arch::Gfx942 => bench_with::<E4M3Fnuz>(&ctx, m, n, k, iters),
        Arch::Gfx950 => bench_with::<E4M3Fn>(&ctx, m, n, k, iters),
        other => Err(format!("no demo for {other}")),
    }
}

fn bench_with<F: Fp8Format>(ctx: &Context, m: usize, n: usize, k: usize, iters: u32) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut rng = StdRng::seed_from_u64(1);
    let qa = QuantizedActivations::<F>::quantize(&randn_bf16(m * k, &mut rng), m, k).map_err(|x| e(&x))?;
    let qb = QuantizedWeights::<F>::quantize(&randn_bf16(n * k, &mut rng), n, k).map_err(|x| e(&x))?;
    let da = DeviceActivations::upload(ctx, &qa).map_err(|x| e(&x))?;
    let db = DeviceWeights::upload(ctx, &qb).map_err(|x| e(&x))?;
    let mut dd = ctx.alloc_zeroed::<bf16>(m * n).map_err(|x| e(&x))?;
    let stream = crate::env::stream(ctx).map_err(|x| e(&x))?;
    let run = fp8gemm::fp8_gemm_nt(&stream, &da, &db, &mut dd).map_err(|x| e(&x))?; // warm-up
    stream.synchronize().map_err(|x| e(&x))?;
    let mut times = Vec::with_capacity(iters as usize);
    for _ in 0..iters.max(1) {
        let t0 = Instant::now();
        fp8gemm::fp8_gemm_nt(&stream, &da, &db, &mut dd).map_err(|x| e(&x))?;
        stream.synchronize().map_err(|x| e(&x))?;
        times.push(t0.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    let bytes = (m * k + k * n + 2 * m * n) as f64;
    if let Some(c) = &run.config {
        println!("config       {c}");
    }
    let what = if ctx.backend() == fp8gemm::Backend::Emulator { "emulator wall time on this CPU, NOT a GPU figure" } else { "GPU, launch to synchronize" };
    println!(
        "bench        m={m} n={n} k={k}: median {:.3} ms over {} launches ({what}): {:.3} TFLOPS, {:.1} GB/s",
        median * 1e3,
        times.len(),
        flops / median / 1e12,
        bytes / median / 1e9
    );
    Ok(())
}
