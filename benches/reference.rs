//! Criterion benchmark of the CPU reference: the block-scaled FP8 reference GEMM against a plain
//! `gemm` f32 GEMM of the same product (DeepSeek-V3 shape 4096 × 2112 × 7168).
//!
//! Run with `cargo bench --bench reference`; set `FP8GEMM_BENCH_SHAPE=m,n,k` for another shape.
//! On a shared machine wall times are noisy: `FP8GEMM_BENCH_INTERLEAVED=3` first runs the two
//! alternately that many times and prints wall and process CPU time (Linux) for each.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::reference::{fp8_gemm_nt, gemm_nt_f32};
use half::bf16;

/// Deterministic standard-normal-ish values (sum of uniforms from a SplitMix64 stream).
fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..len).map(|_| (next() + next() + next() + next() - 2.0) * 1.7).collect()
}

fn shape() -> (usize, usize, usize) {
    std::env::var("FP8GEMM_BENCH_SHAPE")
        .ok()
        .and_then(|s| {
            let v: Vec<usize> = s.split(',').filter_map(|x| x.trim().parse().ok()).collect();
            (v.len() == 3).then(|| (v[0], v[1], v[2]))
        })
        .unwrap_or((4096, 2112, 7168))
}

/// Process CPU time (user + system) in seconds, from /proc/self/stat; `None` elsewhere.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Runs `f` once, returning (wall seconds, CPU seconds).
fn timed(f: impl FnOnce()) -> (f64, f64) {
    let (c0, t0) = (cpu_seconds(), std::time::Instant::now());
    f();
    let wall = t0.elapsed().as_secs_f64();
    (wall, cpu_seconds().zip(c0).map_or(f64::NAN, |(c1, c0)| c1 - c0))
}

fn bench(c: &mut Criterion) {
    let (m, n, k) = shape();
    let a = random(m * k, 1);
    let b = random(n * k, 2);
    let qa = QuantizedActivations::<E4M3Fnuz>::quantize(&a, m, k).expect("valid shape");
    let qb = QuantizedWeights::<E4M3Fnuz>::quantize(&b, n, k).expect("valid shape");

    let rounds: usize = std::env::var("FP8GEMM_BENCH_INTERLEAVED").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    for _ in 0..rounds {
        let mut d = vec![bf16::ZERO; m * n];
        let mut df = vec![0.0f32; m * n];
        let (rw, rc) = timed(|| fp8_gemm_nt(&qa, &qb, &mut d).expect("valid shapes"));
        let (gw, gc) = timed(|| gemm_nt_f32(&a, &b, m, n, k, &mut df).expect("valid shapes"));
        eprintln!(
            "interleaved {m}x{n}x{k}: reference {rw:.3} s wall / {rc:.2} s CPU, gemm {gw:.3} s wall / {gc:.2} s CPU, ratio {:.2} wall / {:.2} CPU",
            rw / gw,
            rc / gc
        );
    }

    let mut group = c.benchmark_group(format!("{m}x{n}x{k}"));
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements((2 * m * n * k) as u64));

    let mut d = vec![bf16::ZERO; m * n];
    group.bench_function("fp8_reference_dense", |bench| bench.iter(|| fp8_gemm_nt(black_box(&qa), black_box(&qb), &mut d).expect("valid shapes")));
    let mut df = vec![0.0f32; m * n];
    group.bench_function("gemm_f32_plain", |bench| bench.iter(|| gemm_nt_f32(black_box(&a), black_box(&b), m, n, k, &mut df).expect("valid shapes")));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
