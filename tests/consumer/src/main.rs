//! A consumer's first GEMM: default features (emulator backend), prebuilt kernels, stable Rust.
//! Exits non-zero unless every element of D is the exact product.

use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::{Context, DeviceActivations, DeviceWeights, Stream, fp8_gemm_nt};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Powers of two quantize exactly: A = 1, B = ±0.5 by row, so D[i][j] = ±0.5 · K.
    let (m, n, k) = (48, 256, 384);
    let a = vec![1.0f32; m * k];
    let b: Vec<f32> = (0..n * k).map(|i| if (i / k) % 2 == 0 { 0.5 } else { -0.5 }).collect();
    let ctx = Context::new()?;
    let qa = QuantizedActivations::<E4M3Fnuz>::quantize(&a, m, k)?;
    let qb = QuantizedWeights::<E4M3Fnuz>::quantize(&b, n, k)?;
    let (da, db) = (DeviceActivations::upload(&ctx, &qa)?, DeviceWeights::upload(&ctx, &qb)?);
    let mut d = ctx.alloc_zeroed::<half::bf16>(m * n)?;
    let stream = Stream::new(&ctx)?;
    fp8_gemm_nt(&stream, &da, &db, &mut d)?;
    let d = d.download(&stream)?;
    for (i, v) in d.iter().enumerate() {
        let want = if (i % n) % 2 == 0 { 0.5 * k as f32 } else { -0.5 * k as f32 };
        if v.to_f32() != want {
            return Err(format!("D[{}][{}] = {v}, expected {want}", i / n, i % n).into());
        }
    }
    println!("consumer: {m}x{n}x{k} GEMM on the {:?} backend, all {} elements exact", ctx.backend(), d.len());
    Ok(())
}
