//! The `kgrouped` demo: DeepGEMM's K-grouped (MoE weight-gradient) test recipe end to end through
//! the public API: `G` groups of tokens with sizes drawn around `K` (×0.7 … ×1.3, rounded to
//! multiples of 128; `--k 0` gives empty groups), normal BF16 inputs `A[Σk, M]`, `B[Σk, N]`,
//! (`--uniform`: every group exactly `K`), `C = 32·randn` accumulated in place (`D = C + Σ A_gᵀ·B_g`), per-channel 1×128 quantization.

use std::time::Instant;

use fp8gemm::codeobj::Arch;
use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz, Fp8Format};
use fp8gemm::kgrouped::{reference_f32, reference_fp8, upload_ks};
use fp8gemm::{Context, DeviceKGroupedOperand, KGroupedMnMajor, k_grouped_fp8_gemm_tn_contiguous};
use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::gemm::randn_bf16;

/// Runs one K-grouped GEMM with `groups` groups of about `k` tokens.
pub fn run_kgrouped(groups: usize, m: usize, n: usize, k: usize, uniform: bool, seed: u64) -> Result<(), String> {
    let ctx = Context::new().map_err(|e| e.to_string())?;
    match ctx.arch() {
        Arch::Gfx942 => with::<E4M3Fnuz>(&ctx, groups, m, n, k, uniform, seed),
        Arch::Gfx950 => with::<E4M3Fn>(&ctx, groups, m, n, k, uniform, seed),
        other => Err(format!("no demo for {other}")),
    }
}

fn with<F: Fp8Format>(ctx: &Context, groups: usize, m: usize, n: usize, k: usize, uniform: bool, seed: u64) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut rng = StdRng::seed_from_u64(seed);
    let ks: Vec<usize> =
        if uniform { vec![k; groups] } else { (0..groups).map(|_| ((k as f64 * rng.random_range(0.7..1.3)) as usize).div_ceil(128) * 128).collect() };
    let total: usize = ks.iter().sum();
    let a = randn_bf16(total * m, &mut rng);
    let b = randn_bf16(total * n, &mut rng);
    let c: Vec<f32> = randn_bf16(groups * m * n, &mut rng).iter().map(|v| 32.0 * v).collect();
    let qa = KGroupedMnMajor::<F>::quantize(&a, m, &ks).map_err(|x| e(&x))?;
    let qb = KGroupedMnMajor::<F>::quantize(&b, n, &ks).map_err(|x| e(&x))?;
    let da = DeviceKGroupedOperand::upload(ctx, &qa).map_err(|x| e(&x))?;
    let db = DeviceKGroupedOperand::upload(ctx, &qb).map_err(|x| e(&x))?;
    let (dks, total_k) = upload_ks(ctx, &ks).map_err(|x| e(&x))?;
    let mut dd = ctx.upload(&c).map_err(|x| e(&x))?;

    let stream = crate::env::stream(ctx).map_err(|x| e(&x))?;
    let t0 = Instant::now();
    crate::profile::begin();
    let run = k_grouped_fp8_gemm_tn_contiguous(&stream, &da, &db, &mut dd, &dks, total_k, None).map_err(|x| e(&x))?;
    // The launch runs here (the emulator's streams are lazy queues): profile::end reads its timing.
    stream.synchronize().map_err(|x| e(&x))?;
    // Useful work: 2·m·n·Σks.
    if crate::profile::end(m, n, total_k, 1)? {
        println!("  k_grouped_fp8_gemm_tn_contiguous: G={groups} ks {ks:?}");
        if let Some(c) = &run.config {
            println!("  config {c}");
        }
        return Ok(());
    }
    let d = dd.download(&stream).map_err(|x| e(&x))?;
    let wall = t0.elapsed();

    let mut want_q = c.clone();
    reference_fp8(&qa, &qb, &mut want_q).map_err(|x| e(&x))?;
    let mut want_f = c.clone();
    reference_f32(&a, &b, m, n, &ks, &mut want_f).map_err(|x| e(&x))?;
    let diff_q = fp8gemm::reference::calc_diff(&d, &want_q).map_err(|x| e(&x))?;
    let diff_f = fp8gemm::reference::calc_diff(&d, &want_f).map_err(|x| e(&x))?;
    // The product alone (C subtracted in f64), which C = 32·randn would otherwise dominate.
    let sub = |x: &[f32]| -> Vec<f64> { x.iter().zip(&c).map(|(&v, &c)| f64::from(v) - f64::from(c)).collect() };
    let diff_pq = fp8gemm::reference::calc_diff(&sub(&d), &sub(&want_q)).map_err(|x| e(&x))?;
    let diff_pf = fp8gemm::reference::calc_diff(&sub(&d), &sub(&want_f)).map_err(|x| e(&x))?;

    println!("k_grouped_fp8_gemm_tn_contiguous  G={groups} m={m} n={n} k≈{k} seed={seed}  on {} ({}, FP8 {})", ctx.device_name(), ctx.arch(), F::NAME);
    println!("ks           {ks:?} (total {total_k})");
    match &run.config {
        Some(c) => println!("config       {c}"),
        None => println!("config       (empty problem: nothing launched)"),
    }
    println!("calc_diff    {diff_q:.3e} vs the dequantized reference (goal < 1e-5), {diff_pq:.3e} on D − C");
    println!("calc_diff    {diff_f:.3e} vs the unquantized reference (goal < 1e-3), {diff_pf:.3e} on D − C");
    crate::gemm::report_emulator(wall, m, n, total_k);
    if diff_q >= 1e-5 || diff_f >= 1e-3 || diff_pq >= 1e-5 || diff_pf >= 1e-3 {
        return Err(format!("accuracy goal missed: {diff_q:.3e} / {diff_f:.3e} / {diff_pq:.3e} / {diff_pf:.3e}"));
    }
    Ok(())
}
