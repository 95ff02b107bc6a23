//! `fp8gemm::fp8_gemm_nt` end to end — public API → HIP API of the emulator backend → gfx942 emulator —
//! against the CPU references, and every class of rejected input.

mod common;
use common::*;
use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz};
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::{Context, DeviceActivations, DeviceWeights, Error, Stream, fp8_gemm_nt, reference};
use half::bf16;
use proptest::prelude::*;
use rand::{SeedableRng, rngs::StdRng};

/// Runs the GEMM on the device and returns (calc_diff vs dequantized, vs unquantized).
fn run(ctx: &Context, m: usize, n: usize, k: usize, seed: u64) -> (f64, f64) {
    run_with_floor(ctx, m, n, k, seed).0
}

/// [`run`], and the quantization's own error on this input: calc_diff of the exact product of
/// the dequantized inputs against the unquantized reference.
fn run_with_floor(ctx: &Context, m: usize, n: usize, k: usize, seed: u64) -> ((f64, f64), f64) {
    let c = case(m, n, k, seed);
    let da = DeviceActivations::upload(ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload(ctx, &c.qb).unwrap();
    // Pre-fill D with a pattern so unwritten elements cannot pass as zeros.
    let mut dd = ctx.upload(&vec![bf16::from_f32(1234.5); m * n]).unwrap();
    let r = fp8_gemm_nt(&stream(ctx), &da, &db, &mut dd).unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
    assert!(r.config.is_some());
    let d = dd.download(&stream(ctx)).unwrap();
    let (want_dq, want_uq) = (c.want_dequantized(), c.want_unquantized());
    let floor = reference::calc_diff(&want_dq, &want_uq).unwrap();
    ((reference::calc_diff(&d, &want_dq).unwrap(), reference::calc_diff(&d, &want_uq).unwrap()), floor)
}

fn assert_accurate(m: usize, n: usize, k: usize, (dq, df): (f64, f64)) {
    assert!(dq < 1e-5, "{m}x{n}x{k}: calc_diff vs dequantized reference {dq:e}");
    assert!(df < 1e-3, "{m}x{n}x{k}: calc_diff vs unquantized reference {df:e}");
}

fn stream(ctx: &Context) -> Stream {
    Stream::new(ctx).unwrap()
}

#[test]
fn shape_grid_matches_both_references() {
    let ctx = Context::new().unwrap();
    for &m in &[1usize, 7, 64, 127, 128, 200, 512] {
        for &n in &[128usize, 192, 2112] {
            for &k in &[128usize, 384, 1024] {
                assert_accurate(m, n, k, run(&ctx, m, n, k, (m * 31 + n * 7 + k) as u64));
            }
        }
    }
}

/// Random shapes down to a handful of outputs. The kernel must match the dequantized
/// reference tightly everywhere; against the unquantized reference the 10⁻³ goal is DeepGEMM's
/// for real shapes, and on a few outputs the quantization alone can exceed it (see
/// `tiny_output_quantization_error`): there the kernel may not add to it.
fn assert_accurate_random(m: usize, n: usize, k: usize, ((dq, df), floor): ((f64, f64), f64)) {
    assert!(dq < 1e-5, "{m}x{n}x{k}: calc_diff vs dequantized reference {dq:e}");
    if floor < 1e-3 {
        assert!(df < 1e-3, "{m}x{n}x{k}: calc_diff vs unquantized reference {df:e} (quantization alone {floor:e})");
    } else {
        assert!(df <= floor * (1.0 + 1e-3), "{m}x{n}x{k}: calc_diff vs unquantized reference {df:e}, above the quantization's own {floor:e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn random_valid_shapes(m in 1usize..300, n4 in 1usize..80, kb in 1usize..4, seed in any::<u64>()) {
        let ctx = Context::new().unwrap();
        let (n, k) = (4 * n4, 128 * kb);
        assert_accurate_random(m, n, k, run_with_floor(&ctx, m, n, k, seed));
    }
}

/// The case proptest found (2 × 4 × 256, 8 outputs): the exact product of the dequantized FP8
/// inputs is itself 1.574·10⁻³ from the unquantized reference, so no kernel can meet the
/// 10⁻³ goal on it; ours equals that product to < 10⁻⁵.
#[test]
fn tiny_output_quantization_error() {
    let ctx = Context::new().unwrap();
    let ((dq, df), floor) = run_with_floor(&ctx, 2, 4, 256, 7068120668682515867);
    assert!((floor - 1.574e-3).abs() < 1e-6, "quantization error {floor:e}");
    assert!(dq < 1e-5, "calc_diff vs dequantized {dq:e}");
    assert!((df - floor).abs() < 1e-5, "calc_diff vs unquantized {df:e}, quantization alone {floor:e}");
}

/// Larger DeepSeek-V3 shapes; minutes on the emulator: `cargo test --release -- --ignored`.
#[test]
#[ignore]
fn deepseek_shapes() {
    let ctx = Context::new().unwrap();
    for &(m, n, k) in &[(128usize, 7168usize, 2048usize), (64, 2112, 7168), (128, 24576, 1536), (256, 4096, 7168)] {
        assert_accurate(m, n, k, run(&ctx, m, n, k, 7));
    }
}

fn operands(ctx: &Context, m: usize, n: usize, k: usize) -> (DeviceActivations<E4M3Fnuz>, DeviceWeights<E4M3Fnuz>) {
    let c = case(m, n, k, 1);
    (DeviceActivations::upload(ctx, &c.qa).unwrap(), DeviceWeights::upload(ctx, &c.qb).unwrap())
}

#[test]
fn rejects_mismatched_k() {
    let ctx = Context::new().unwrap();
    let (a, _) = operands(&ctx, 8, 128, 256);
    let (_, b) = operands(&ctx, 8, 128, 128);
    let mut d = ctx.alloc_zeroed::<bf16>(8 * 128).unwrap();
    let e = fp8_gemm_nt(&stream(&ctx), &a, &b, &mut d).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "b", .. }), "{e}");
    assert!(e.to_string().contains("k = 256"), "{e}");
}

#[test]
fn rejects_wrong_output_size() {
    let ctx = Context::new().unwrap();
    let (a, b) = operands(&ctx, 8, 128, 128);
    let mut d = ctx.alloc_zeroed::<bf16>(8 * 128 - 1).unwrap();
    let e = fp8_gemm_nt(&stream(&ctx), &a, &b, &mut d).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "d", .. }), "{e}");
    assert!(e.to_string().contains("1024 elements"), "{e}");
}

#[test]
fn rejects_k_not_a_multiple_of_128() {
    let ctx = Context::new().unwrap();
    let (a, b) = operands(&ctx, 4, 128, 200);
    let mut d = ctx.alloc_zeroed::<bf16>(4 * 128).unwrap();
    let e = fp8_gemm_nt(&stream(&ctx), &a, &b, &mut d).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "k", .. }), "{e}");
    assert!(e.to_string().contains("multiple of 128"), "{e}");
}

#[test]
fn rejects_n_not_a_multiple_of_4() {
    let ctx = Context::new().unwrap();
    let (a, b) = operands(&ctx, 4, 130, 128);
    let mut d = ctx.alloc_zeroed::<bf16>(4 * 130).unwrap();
    let e = fp8_gemm_nt(&stream(&ctx), &a, &b, &mut d).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "n", .. }), "{e}");
}

#[test]
fn rejects_the_format_the_architecture_does_not_decode() {
    let ctx = Context::new().unwrap();
    assert_eq!(ctx.arch(), fp8gemm::codeobj::Arch::Gfx942);
    let mut rng = StdRng::seed_from_u64(5);
    let x = randn_bf16(4 * 128, &mut rng);
    let qa = QuantizedActivations::<E4M3Fn>::quantize(&x, 4, 128).unwrap();
    let qb = QuantizedWeights::<E4M3Fn>::quantize(&x, 4, 128).unwrap();
    let a = DeviceActivations::upload(&ctx, &qa).unwrap();
    let b = DeviceWeights::upload(&ctx, &qb).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(16).unwrap();
    let e = fp8_gemm_nt(&stream(&ctx), &a, &b, &mut d).unwrap_err();
    assert!(matches!(e, Error::Format { arg: "a", expected: "e4m3fnuz", actual: "e4m3fn", .. }), "{e}");
}

#[test]
fn rejects_buffers_of_another_context() {
    let ctx = Context::new().unwrap();
    let other = Context::new().unwrap();
    let (a, b) = operands(&ctx, 4, 128, 128);
    let mut d = other.alloc_zeroed::<bf16>(4 * 128).unwrap();
    let e = fp8_gemm_nt(&stream(&ctx), &a, &b, &mut d).unwrap_err();
    assert!(matches!(e, Error::ForeignBuffer { arg: "d" }), "{e}");
}

#[test]
fn empty_problems_launch_nothing() {
    let ctx = Context::new().unwrap();
    let (a, b) = operands(&ctx, 0, 128, 128);
    let mut d = ctx.alloc_zeroed::<bf16>(0).unwrap();
    let r = fp8_gemm_nt(&stream(&ctx), &a, &b, &mut d).unwrap();
    assert!(r.config.is_none());
}

#[test]
fn rows_beyond_m_are_never_written() {
    // D is a view of exactly m·n elements; the emulator's memcheck would fail the launch on any
    // store past it. Here: m = 65 forces a second, nearly empty 64-row tile.
    let ctx = Context::new().unwrap();
    assert_accurate(65, 128, 128, run(&ctx, 65, 128, 128, 9));
}

#[test]
fn upload_rejects_operands_whose_buffers_disagree_with_their_shape() {
    let ctx = Context::new().unwrap();
    let mut c = case(4, 128, 256, 2);
    c.qa.data.pop();
    let e = DeviceActivations::upload(&ctx, &c.qa).err().unwrap();
    assert!(matches!(e, Error::Shape { arg: "a", .. }), "{e}");
    assert!(e.to_string().contains("data of 1024 elements"), "{e}");
    c.qb.scales.push(1.0);
    let e = DeviceWeights::upload(&ctx, &c.qb).err().unwrap();
    assert!(matches!(e, Error::Shape { arg: "b", .. }), "{e}");
    assert!(e.to_string().contains("scales of 2 elements"), "{e}");
}

#[test]
fn a_context_works_from_other_threads() {
    // HIP's current device is per thread; the context re-selects its device for each operation.
    let ctx = Context::new().unwrap();
    let results: Vec<(f64, f64)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..3)
            .map(|i| {
                let ctx = &ctx;
                s.spawn(move || run(ctx, 33 + i, 128, 256, i as u64))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, r) in results.into_iter().enumerate() {
        assert_accurate(33 + i, 128, 256, r);
    }
}
