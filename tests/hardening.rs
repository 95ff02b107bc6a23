//! Inputs a hostile caller can build through the public API: shape products that wrap, buffer
//! lengths that overflow their byte size. Each class is a typed error naming the argument.

use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::{Context, DeviceActivations, DeviceWeights, Error};
use proptest::prelude::*;

fn stream(ctx: &Context) -> fp8gemm::Stream {
    fp8gemm::Stream::new(ctx).unwrap()
}

#[test]
fn upload_rejects_shapes_whose_products_wrap() {
    let ctx = Context::new().unwrap();
    // m · k = 2^63 · 2 wraps to 0 = the empty data's length.
    let a = QuantizedActivations::<E4M3Fnuz> { data: vec![], scales: vec![], m: 1 << 63, k: 2 };
    let e = DeviceActivations::upload(&ctx, &a).err().expect("m = 2^63 must be rejected");
    assert!(matches!(&e, Error::Shape { arg: "a", .. }), "{e}");
    assert!(e.to_string().contains("overflows"), "{e}");
    // n · k = 2^71 wraps; so does 2^40 · 2^40.
    let b = QuantizedWeights::<E4M3Fnuz> { data: vec![], scales: vec![], n: 1 << 63, k: 256 };
    let e = DeviceWeights::upload(&ctx, &b).err().expect("n = 2^63 must be rejected");
    assert!(matches!(&e, Error::Shape { arg: "b", .. }), "{e}");
    let b = QuantizedWeights::<E4M3Fnuz> { data: vec![], scales: vec![], n: 1 << 40, k: 1 << 40 };
    assert!(matches!(DeviceWeights::upload(&ctx, &b), Err(Error::Shape { arg: "b", .. })));
}

#[test]
fn alloc_rejects_lengths_whose_byte_size_overflows() {
    let ctx = Context::new().unwrap();
    // 2^62 u32 = 2^64 bytes: used to return Ok with len() = 2^62 backed by 0 bytes.
    let e = ctx.alloc_zeroed::<u32>(1 << 62).expect_err("2^62 u32 must be rejected");
    assert!(matches!(&e, Error::Shape { arg: "len", .. }), "{e}");
    assert!(matches!(ctx.alloc_zeroed::<u8>(usize::MAX), Err(Error::Shape { arg: "len", .. })));
    assert!(matches!(ctx.alloc_zeroed::<f32>(usize::MAX / 4 + 1), Err(Error::Shape { arg: "len", .. })));
    // Representable but absurd sizes are the runtime's out-of-memory error, not a lying buffer.
    match ctx.alloc_zeroed::<u8>(1 << 60) {
        Err(Error::Hip { call: "hipMalloc", .. }) => {}
        other => panic!("2^60 bytes: expected a hipMalloc error, got {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Any shape with empty data is rejected unless the shape really has no elements.
    #[test]
    fn empty_data_only_for_empty_shapes(m in prop_oneof![Just(0usize), 1usize..4, (40u32..64).prop_map(|e| 1usize << e)],
                                        k in prop_oneof![Just(0usize), 1usize..300, (40u32..64).prop_map(|e| 1usize << e)]) {
        let ctx = Context::new().unwrap();
        let a = QuantizedActivations::<E4M3Fnuz> { data: vec![], scales: vec![], m, k };
        let empty = m == 0 || k == 0;
        prop_assert_eq!(DeviceActivations::upload(&ctx, &a).is_ok(), empty, "m = {}, k = {}", m, k);
        let b = QuantizedWeights::<E4M3Fnuz> { data: vec![], scales: vec![], n: m, k };
        prop_assert_eq!(DeviceWeights::upload(&ctx, &b).is_ok(), empty, "n = {}, k = {}", m, k);
    }
}

/// Finite inputs whose block scales multiply past f32::MAX (SFA · SFB = 2^129) while every
/// output is representable (≈ 1e37): the kernels used to return inf and NaN (`0 · inf`) here.
/// Now every element is finite, within a per-element bound of the CPU reference, and the
/// calc_diff goal holds.
#[test]
fn huge_scales_with_representable_results_stay_finite() {
    use fp8gemm::{fp8_gemm_nt, reference};
    use half::bf16;
    let ctx = Context::new().unwrap();
    let (m, n, k) = (64, 256, 256);
    let big = 240.0 * 2f32.powf(64.5); // amax giving a scale of 2^64.5 (≈ 5.5e21 inputs)
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut small = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.2 * 2f32.powf(64.5) // q in ±0.1
    };
    // Column 0 of every 128-K group of A is huge (sets SFA), the rest small; B's row 0 of every
    // 128-row block carries the huge value (sets SFB) and its other rows are small with a 0 in
    // column 0, so their partial sums stay below 1 in magnitude.
    let mut a = vec![0f32; m * k];
    for i in 0..m {
        for kk in 0..k {
            a[i * k + kk] = if kk % 128 == 0 { if i % 2 == 0 { big } else { -big } } else { small() };
        }
    }
    let mut b = vec![0f32; n * k];
    for j in 0..n {
        for kk in 0..k {
            b[j * k + kk] = if kk % 128 == 0 { if j % 128 == 0 { big } else { 0.0 } } else { small() };
        }
    }
    let qa = QuantizedActivations::<E4M3Fnuz>::quantize(&a, m, k).unwrap();
    let qb = QuantizedWeights::<E4M3Fnuz>::quantize(&b, n, k).unwrap();
    assert!(qa.scales.iter().chain(&qb.scales).all(|&s| s > 2f32.powi(64)), "scales must be huge");
    assert!((qa.scales[0] as f64) * (qb.scales[0] as f64) > f32::MAX as f64, "SFA·SFB must overflow f32");
    let (da, db) = (DeviceActivations::upload(&ctx, &qa).unwrap(), DeviceWeights::upload(&ctx, &qb).unwrap());
    let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
    fp8_gemm_nt(&stream(&ctx), &da, &db, &mut d).unwrap();
    let d = d.download(&stream(&ctx)).unwrap();
    let mut want = vec![bf16::ZERO; m * n];
    reference::fp8_gemm_nt(&qa, &qb, &mut want).unwrap();
    // Exact dequantized products in f64, for the per-element bound.
    let (ad, bd) = (qa.dequantize(), qb.dequantize());
    for i in 0..m {
        for j in 0..n {
            let exact: f64 = (0..k).map(|kk| ad[i * k + kk] as f64 * bd[j * k + kk] as f64).sum();
            let scale: f64 = (0..k).map(|kk| (ad[i * k + kk] as f64 * bd[j * k + kk] as f64).abs()).sum();
            let got = d[i * n + j].to_f32() as f64;
            if exact.abs() > bf16::MAX.to_f64() * (1.0 + 2f64.powi(-9)) {
                // Columns 0 and 128 (B rows holding the huge value): the exact result overflows.
                assert_eq!(got, exact.signum() * f64::INFINITY, "D[{i},{j}] exact {exact:e}");
                continue;
            }
            assert!(got.is_finite(), "D[{i},{j}] = {got} (exact {exact:e})");
            // bf16 rounding of the result plus f32 accumulation error.
            let bound = exact.abs() * 2f64.powi(-8) + scale * 2f64.powi(-20);
            assert!((got - exact).abs() <= bound, "D[{i},{j}] = {got:e}, exact {exact:e}, bound {bound:e}");
        }
    }
    assert!(d.iter().any(|v| v.to_f32().abs() > 1e36), "results are in the huge range");
    let finite = |v: &[bf16]| -> Vec<bf16> { (0..m * n).filter(|x| x % 128 != 0).map(|x| v[x]).collect() };
    let diff = reference::calc_diff(&finite(&d), &finite(&want)).unwrap();
    assert!(diff < 1e-5, "calc_diff over the representable columns {diff:e}");
}

/// Scales outside the range the kernels compute exactly are a typed error at upload.
#[test]
fn scales_outside_the_supported_range_are_rejected() {
    let ctx = Context::new().unwrap();
    let mk = |s: f32| QuantizedActivations::<E4M3Fnuz>::from_parts(vec![E4M3Fnuz::ZERO; 256], vec![1.0, s], 1, 256).unwrap();
    for bad in [2f32.powi(94), 1e30, f32::INFINITY, f32::NAN, 2f32.powi(-25), -2f32.powi(100), f32::MIN_POSITIVE] {
        match DeviceActivations::upload(&ctx, &mk(bad)) {
            Err(Error::ScaleRange { arg: "a.scales", index: 1, .. }) => {}
            other => panic!("scale {bad:e}: expected ScaleRange, got {:?}", other.map(|_| ())),
        }
    }
    for good in [0.0f32, -0.0, 2f32.powi(-24), 1e28, -3.5, 2f32.powi(94) * (1.0 - f32::EPSILON)] {
        DeviceActivations::upload(&ctx, &mk(good)).unwrap_or_else(|e| panic!("scale {good:e}: {e}"));
    }
    let b = QuantizedWeights::<E4M3Fnuz>::from_parts(vec![E4M3Fnuz::ZERO; 128 * 128], vec![1e38], 128, 128).unwrap();
    assert!(matches!(DeviceWeights::upload(&ctx, &b), Err(Error::ScaleRange { arg: "b.scales", index: 0, .. })));
}

/// `GroupedQuantizedWeights::from_groups` sized its buffers from the first group's (public)
/// `n` and `k` before checking them: a lying shape was a capacity-overflow panic.
#[test]
fn from_groups_rejects_lying_shapes_before_allocating() {
    use fp8gemm::quant::{GroupedQuantizedWeights, QuantError};
    let liar = QuantizedWeights::<E4M3Fnuz> { data: vec![], scales: vec![], n: 1 << 40, k: 1 << 40 };
    let e = GroupedQuantizedWeights::from_groups(&[liar.clone(), liar]).unwrap_err();
    assert!(matches!(e, QuantError::SizeOverflow { arg: "groups[_].data", .. }), "{e:?}");
    let liar = QuantizedWeights::<E4M3Fnuz> { data: vec![], scales: vec![], n: 1 << 20, k: 1 << 20 };
    let e = GroupedQuantizedWeights::from_groups(&[liar]).unwrap_err();
    assert!(matches!(e, QuantError::Length { arg: "groups[_].data", .. }), "{e:?}");
}
