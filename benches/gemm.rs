//! Criterion bench of `fp8_gemm_nt` through the public API. On the default (emulator) build this
//! measures the emulator's speed on the CPU — useful to keep `cargo test` fast — not GPU time;
//! with `--no-default-features --features rocm` on an MI300X it measures the kernels.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::{fp8_gemm_nt, Context, DeviceActivations, DeviceWeights, Stream};
use half::bf16;

fn data(len: usize, seed: u32) -> Vec<f32> {
    // A cheap deterministic pattern in [-1, 1): the bench needs realistic magnitudes, not randomness.
    (0..len).map(|i| ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) as f32 / (1u32 << 23) as f32 - 1.0).collect()
}

fn bench(c: &mut Criterion) {
    let ctx = Context::new().expect("a device (the emulator by default)");
    let stream = Stream::new(&ctx).unwrap();
    let mut g = c.benchmark_group("fp8_gemm_nt");
    g.sample_size(10);
    let shapes: &[(usize, usize, usize)] =
        if cfg!(feature = "rocm") { &[(64, 2112, 7168), (128, 7168, 2048), (4096, 2112, 7168), (4096, 7168, 2048)] } else { &[(128, 512, 1024), (512, 512, 512)] };
    for &(m, n, k) in shapes {
        let qa = QuantizedActivations::<E4M3Fnuz>::quantize(&data(m * k, 1), m, k).unwrap();
        let qb = QuantizedWeights::<E4M3Fnuz>::quantize(&data(n * k, 2), n, k).unwrap();
        let a = DeviceActivations::upload(&ctx, &qa).unwrap();
        let b = DeviceWeights::upload(&ctx, &qb).unwrap();
        let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
        g.throughput(Throughput::Elements((2 * m * n * k) as u64));
        g.bench_function(format!("{m}x{n}x{k}"), |bch| {
            bch.iter(|| {
                fp8_gemm_nt(&stream, &a, &b, &mut d).unwrap();
                stream.synchronize().unwrap();
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
