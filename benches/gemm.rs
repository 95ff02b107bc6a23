//! Criterion benches of `fp8_gemm_nt` through the public API.
//!
//! * `fp8_gemm_nt` (wall time): on the default (emulator) build this measures the emulator's
//!   speed on the CPU — useful to keep `cargo test` fast — not GPU time; with
//!   `--no-default-features --features rocm` on an MI300X it measures the kernels.
//! * `fp8_gemm_nt_modelled` (emulator build only): the **modelled** MI300X time of each
//!   DeepSeek-V3 shape from the emulator's timing model (`amdgpu_emu::timing`), reported through
//!   criterion's `iter_custom`. The model is deterministic, so each shape is modelled once and
//!   every iteration reports that time; it is a model's prediction, never a measurement.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::{Context, DeviceActivations, DeviceWeights, Stream, fp8_gemm_nt};
use half::bf16;
use std::time::Duration;

fn data(len: usize, seed: u32) -> Vec<f32> {
    // A cheap deterministic pattern in [-1, 1): the bench needs realistic magnitudes, not randomness.
    (0..len).map(|i| ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) as f32 / (1u32 << 23) as f32 - 1.0).collect()
}

fn wall(c: &mut Criterion) {
    let ctx = Context::new().expect("a device (the emulator by default)");
    let stream = Stream::new(&ctx).unwrap();
    let mut g = c.benchmark_group("fp8_gemm_nt");
    g.sample_size(10);
    let shapes: &[(usize, usize, usize)] = if cfg!(feature = "rocm") {
        &[(64, 2112, 7168), (128, 7168, 2048), (4096, 2112, 7168), (4096, 7168, 2048)]
    } else {
        &[(128, 512, 1024), (512, 512, 512)]
    };
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

/// The modelled MI300X time of one dense GEMM as the library configures it (zero operands:
/// their values do not steer the kernels).
#[cfg(feature = "emu")]
fn modelled(ctx: &Context, m: usize, n: usize, k: usize) -> Duration {
    use amdgpu_emu::hip::{TimingMode, last_launch_timing, set_timing};
    use amdgpu_emu::timing::{Machine, SimOptions};
    let stream = Stream::new(ctx).unwrap();
    let a = DeviceActivations::<E4M3Fnuz>::alloc(ctx, m, k).unwrap();
    let b = DeviceWeights::<E4M3Fnuz>::alloc(ctx, n, k).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
    set_timing(Some(TimingMode { machine: Machine::MI300X, options: SimOptions::default() }));
    fp8_gemm_nt(&stream, &a, &b, &mut d).unwrap();
    // Launches are queued per stream: the timed run happens here.
    stream.synchronize().unwrap();
    set_timing(None);
    Duration::from_secs_f64(last_launch_timing().expect("a timing report").seconds)
}

#[cfg(feature = "emu")]
fn model(c: &mut Criterion) {
    let ctx = Context::new().expect("the emulator");
    let mut g = c.benchmark_group("fp8_gemm_nt_modelled");
    g.sample_size(10).warm_up_time(Duration::from_millis(1)).measurement_time(Duration::from_millis(10));
    for &(m, n, k) in &[(64, 2112, 7168), (64, 7168, 2048), (128, 2112, 7168), (128, 7168, 2048), (4096, 7168, 2048)] {
        let t = modelled(&ctx, m, n, k);
        g.throughput(Throughput::Elements((2 * m * n * k) as u64));
        g.bench_function(format!("{m}x{n}x{k}"), |bch| bch.iter_custom(|iters| t.mul_f64(iters as f64)));
    }
    g.finish();
}

#[cfg(not(feature = "emu"))]
fn model(_: &mut Criterion) {}

criterion_group!(benches, wall, model);
criterion_main!(benches);
