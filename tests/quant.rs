//! Quantization recipes (1×128 per token, 128×128 per block), their scale layouts, the
//! quantize → dequantize error bound, and E4M3FN → E4M3FNUZ checkpoint conversion.

use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz, E5M2Fnuz, Fp8Format};
use fp8gemm::quant::{
    GroupedQuantizedWeights, KGroupedOperand, QuantError, QuantizedActivations, QuantizedWeights, e4m3fn_to_e4m3fnuz, e4m3fn_to_e4m3fnuz_value,
};
use proptest::prelude::*;

fn vals<F: Fp8Format>(q: &[F]) -> Vec<f32> {
    q.iter().map(|v| v.to_f32()).collect()
}

#[test]
fn per_token_recipe_by_hand() {
    // E4M3FN: amax 3 → sf = 3/448, 1/sf = 149.33…; 0.5 → 74.67 → 72; 1 → 149.33 → 144; −3 → −448.
    let q = QuantizedActivations::<E4M3Fn>::quantize(&[0.5f32, -3.0, 1.0], 1, 3).unwrap();
    assert_eq!(q.scales, vec![3.0f32 / 448.0]);
    assert_eq!(vals(&q.data), vec![72.0, -448.0, 144.0]);
    assert_eq!(q.dequantize(), vec![72.0 * (3.0f32 / 448.0), -3.0, 144.0 * (3.0f32 / 448.0)]);
    // E4M3FNUZ: the same inputs with max 240: 1/sf = 80; 0.5 → 40; 1 → 80; −3 → −240.
    let q = QuantizedActivations::<E4M3Fnuz>::quantize(&[0.5f32, -3.0, 1.0], 1, 3).unwrap();
    assert_eq!(q.scales, vec![3.0f32 / 240.0]);
    assert_eq!(vals(&q.data), vec![40.0, -240.0, 80.0]);
}

#[test]
fn per_token_groups_and_layout() {
    // m = 2, k = 300: groups [0,128), [128,256), [256,300) (partial). Element (i, kk) = (i+1)·(g+1)
    // with the group's last element negated and doubled, so every group's amax is 2·(i+1)·(g+1).
    let (m, k) = (2, 300);
    let mut x = vec![0.0f32; m * k];
    for i in 0..m {
        for kk in 0..k {
            let g = kk / 128;
            let last = (kk + 1) % 128 == 0 || kk == k - 1;
            x[i * k + kk] = (i + 1) as f32 * (g + 1) as f32 * if last { -2.0 } else { 1.0 };
        }
    }
    let q = QuantizedActivations::<E4M3Fnuz>::quantize(&x, m, k).unwrap();
    assert_eq!(q.k_blocks(), 3);
    assert_eq!(q.scales.len(), m * 3);
    for i in 0..m {
        for g in 0..3 {
            let amax = 2.0 * ((i + 1) * (g + 1)) as f32;
            assert_eq!(q.scales[i * 3 + g], amax / 240.0, "SFA[{i}, {g}]");
        }
        // Every non-last element is amax/2 → 120; the last ones are −240.
        assert_eq!(q.data[i * k].to_f32(), 120.0);
        assert_eq!(q.data[i * k + 127].to_f32(), -240.0);
        assert_eq!(q.data[i * k + 299].to_f32(), -240.0);
        assert_eq!(q.data[i * k + 298].to_f32(), 120.0);
    }
    // 120 · fl(amax / 240) and 240 · fl(amax / 240) are within two f32 roundings of x.
    for (d, x) in q.dequantize().iter().zip(&x) {
        assert!((d - x).abs() <= 2.0 * f32::EPSILON * x.abs(), "{d} vs {x}");
    }
}

#[test]
fn per_block_blocks_and_layout() {
    // n = 200, k = 130: blocks (jb, kb) ∈ {0,1} × {0,1}, the last row and column partial.
    // Element = 10^(jb) · 3^(kb) · (1 or 0.5), amax of each block = 10^jb · 3^kb.
    let (n, k) = (200, 130);
    let x: Vec<f32> = (0..n * k)
        .map(|e| {
            let (j, kk) = (e / k, e % k);
            let base = 10f32.powi((j / 128) as i32) * 3f32.powi((kk / 128) as i32);
            if (j + kk) % 2 == 0 { base } else { 0.5 * base }
        })
        .collect();
    let q = QuantizedWeights::<E4M3Fnuz>::quantize(&x, n, k).unwrap();
    assert_eq!((q.n_blocks(), q.k_blocks()), (2, 2));
    for jb in 0..2 {
        for kb in 0..2 {
            let amax = 10f32.powi(jb as i32) * 3f32.powi(kb as i32);
            assert_eq!(q.scales[jb * 2 + kb], amax / 240.0, "SFB[{jb}, {kb}]");
        }
    }
    for (e, v) in q.data.iter().enumerate() {
        let expect = if (e / k + e % k) % 2 == 0 { 240.0 } else { 120.0 };
        assert_eq!(v.to_f32(), expect, "element {e}");
    }
    // A block whose values are all tiny uses the 1e-4 amax floor.
    let t = QuantizedWeights::<E4M3Fnuz>::quantize(&[1e-6f32; 4], 2, 2).unwrap();
    assert_eq!(t.scales, vec![1e-4f32 / 240.0]);
    assert_eq!(vals(&t.data), vec![E4M3Fnuz::from_f32(1e-6 * (1.0 / (1e-4f32 / 240.0))).to_f32(); 4]);
}

#[test]
fn bf16_inputs_are_accepted() {
    let x: Vec<half::bf16> = [1.0f32, -2.0, 0.25].iter().map(|&v| half::bf16::from_f32(v)).collect();
    let q = QuantizedActivations::<E4M3Fnuz>::quantize(&x, 1, 3).unwrap();
    assert_eq!(vals(&q.data), vec![120.0, -240.0, 30.0]);
}

#[test]
fn errors_name_the_argument() {
    assert_eq!(QuantizedActivations::<E4M3Fnuz>::quantize(&[0.0f32; 7], 2, 4).unwrap_err(), QuantError::Length { arg: "x", expected: 8, actual: 7 });
    let err = QuantizedActivations::<E4M3Fnuz>::quantize(&[0.0, f32::NAN, 1.0, 2.0], 2, 2).unwrap_err();
    assert!(matches!(err, QuantError::NonFinite { arg: "x", index: 1, .. }), "{err}");
    let err = QuantizedWeights::<E4M3Fnuz>::quantize(&[0.0, 0.0, f32::INFINITY], 1, 3).unwrap_err();
    assert!(matches!(err, QuantError::NonFinite { arg: "x", index: 2, .. }), "{err}");
    assert_eq!(
        QuantizedWeights::<E4M3Fnuz>::from_parts(vec![E4M3Fnuz::ZERO; 4], vec![1.0; 2], 2, 2).unwrap_err(),
        QuantError::Length { arg: "scales", expected: 1, actual: 2 }
    );
    assert_eq!(
        QuantizedActivations::<E4M3Fnuz>::from_parts(vec![E4M3Fnuz::ZERO; 4], vec![1.0; 2], 2, 129).unwrap_err(),
        QuantError::Length { arg: "data", expected: 258, actual: 4 }
    );
    assert!(matches!(QuantizedActivations::<E4M3Fnuz>::quantize(&[0.0f32; 0], usize::MAX, 2).unwrap_err(), QuantError::SizeOverflow { arg: "x", .. }));
    let msg = QuantError::Length { arg: "x", expected: 8, actual: 7 }.to_string();
    assert_eq!(msg, "`x` has 7 elements, expected 8");
}

#[test]
fn grouped_weights_match_per_group_quantization() {
    let (g, n, k) = (3, 130, 140);
    let x: Vec<f32> = (0..g * n * k).map(|i| ((i * 7919) % 1001) as f32 / 100.0 - 5.0 + (i / (n * k)) as f32).collect();
    let gq = GroupedQuantizedWeights::<E4M3Fnuz>::quantize(&x, g, n, k).unwrap();
    let per: Vec<_> = x.chunks(n * k).map(|c| QuantizedWeights::<E4M3Fnuz>::quantize(c, n, k).unwrap()).collect();
    let stacked = GroupedQuantizedWeights::from_groups(&per).unwrap();
    assert_eq!(fp8gemm::fp8::as_bits(&gq.data), fp8gemm::fp8::as_bits(&stacked.data));
    assert_eq!(gq.scales, stacked.scales);
    assert_eq!(gq.scales.len(), g * 2 * 2);
    let deq: Vec<f32> = per.iter().flat_map(|p| p.dequantize()).collect();
    assert_eq!(gq.dequantize(), deq);
}

#[test]
fn k_grouped_operand_layout() {
    let (rows, ks) = (3, [130usize, 0, 5, 128]);
    let total: usize = ks.iter().sum();
    let x: Vec<f32> = (0..rows * total).map(|i| ((i * 31) % 97) as f32 - 48.0).collect();
    let op = KGroupedOperand::<E4M3Fnuz>::quantize(&x, rows, &ks).unwrap();
    // ⌈k/128⌉ per group: 2 + 0 + 1 + 1.
    assert_eq!(op.scales.len(), rows * 4);
    let mut off = 0;
    for (g, &k) in ks.iter().enumerate() {
        let expect = QuantizedActivations::<E4M3Fnuz>::quantize(&x[off..off + rows * k], rows, k).unwrap();
        let got = op.group(g).unwrap();
        assert_eq!(fp8gemm::fp8::as_bits(&got.data), fp8gemm::fp8::as_bits(&expect.data), "group {g}");
        assert_eq!(got.scales, expect.scales, "group {g}");
        off += rows * k;
    }
    assert_eq!(op.offsets(2), (rows * 130, rows * 2));
    assert!(op.group(4).is_none());
}

/// Distance between neighbouring FP8 values around magnitude `y` (independent of the encoder).
fn quantum<F: Fp8Format>(y: f32) -> f64 {
    let emin = 1 - F::BIAS;
    let e = if y == 0.0 { emin } else { (y.abs() as f64).log2().floor() as i32 }.max(emin);
    2f64.powi(e - F::MANTISSA_BITS as i32)
}

/// |dequantized − x| ≤ ½ ulp(x / sf) · sf, plus a few f32 roundings of x (the 1/sf product and the
/// dequantizing product).
fn check_bound<F: Fp8Format>(x: &[f32], deq: &[f32], scale_of: impl Fn(usize) -> f32) -> Result<(), TestCaseError> {
    for (e, (&xv, &dv)) in x.iter().zip(deq).enumerate() {
        let sf = scale_of(e) as f64;
        let y = (xv as f64 / sf) as f32;
        let bound = 0.5 * quantum::<F>(y) * sf * (1.0 + 1e-6) + 4.0 * f32::EPSILON as f64 * (xv as f64).abs();
        let err = (dv as f64 - xv as f64).abs();
        prop_assert!(err <= bound, "{}: element {e}: x = {xv:e}, dequantized {dv:e}, error {err:e} > {bound:e}", F::NAME);
    }
    Ok(())
}

/// A row-major matrix with per-row magnitudes spanning 1e-7 … 1e4 (so some groups hit the amax floor).
fn matrix(max_rows: usize, max_cols: usize) -> impl Strategy<Value = (usize, usize, Vec<f32>)> {
    (1..=max_rows, 1..=max_cols).prop_flat_map(|(r, c)| {
        (
            Just(r),
            Just(c),
            prop::collection::vec((-1.0f32..1.0, -7i32..5), r * c).prop_map(|v| v.into_iter().map(|(f, e)| f * 10f32.powi(e)).collect::<Vec<f32>>()),
        )
    })
}

fn activations_bound<F: Fp8Format>(m: usize, k: usize, x: &[f32]) -> Result<(), TestCaseError> {
    let q = QuantizedActivations::<F>::quantize(x, m, k).unwrap();
    prop_assert!(q.data.iter().all(|v| !v.is_nan()));
    let kb = k.div_ceil(128);
    let deq = q.dequantize();
    check_bound::<F>(x, &deq, |e| q.scales[(e / k) * kb + (e % k) / 128])
}

fn weights_bound<F: Fp8Format>(n: usize, k: usize, x: &[f32]) -> Result<(), TestCaseError> {
    let q = QuantizedWeights::<F>::quantize(x, n, k).unwrap();
    prop_assert!(q.data.iter().all(|v| !v.is_nan()));
    let kb = k.div_ceil(128);
    let deq = q.dequantize();
    check_bound::<F>(x, &deq, |e| q.scales[(e / k / 128) * kb + (e % k) / 128])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn activations_error_bound((m, k, x) in matrix(4, 300)) {
        activations_bound::<E4M3Fnuz>(m, k, &x)?;
        activations_bound::<E4M3Fn>(m, k, &x)?;
        activations_bound::<E5M2Fnuz>(m, k, &x)?;
    }

    #[test]
    fn weights_error_bound((n, k, x) in matrix(260, 140)) {
        weights_bound::<E4M3Fnuz>(n, k, &x)?;
        weights_bound::<E4M3Fn>(n, k, &x)?;
    }
}

#[test]
fn checkpoint_conversion_every_pattern() {
    let scales = [1.0f32, 0.0123, 3.5e-5, 7.0e3, f32::MAX / 2.0];
    for bits in 0..=255u8 {
        let w = E4M3Fn::from_bits(bits);
        let converted = e4m3fn_to_e4m3fnuz(&[w], &scales);
        if bits & 0x7F == 0x7F {
            assert_eq!(converted.unwrap_err(), QuantError::NanInput { arg: "weights", index: 0, bits });
            assert!(e4m3fn_to_e4m3fnuz_value(w).is_none());
            continue;
        }
        let (data, doubled) = converted.unwrap();
        let expect_bits = if bits == 0x80 { 0x00 } else { bits };
        assert_eq!(data[0].to_bits(), expect_bits);
        for (s, d) in scales.iter().zip(&doubled) {
            assert_eq!(*d, s * 2.0);
            // Same dequantized value, exactly (products of f32 values are exact in f64).
            assert_eq!(data[0].to_f32() as f64 * *d as f64, w.to_f32() as f64 * *s as f64, "bits {bits:#04x}");
        }
    }
}

#[test]
fn checkpoint_conversion_errors_and_weights() {
    let w = [E4M3Fn::from_bits(0x38), E4M3Fn::from_bits(0xFF)];
    assert_eq!(e4m3fn_to_e4m3fnuz(&w, &[1.0]).unwrap_err(), QuantError::NanInput { arg: "weights", index: 1, bits: 0xFF });
    let err = e4m3fn_to_e4m3fnuz(&w[..1], &[1.0, f32::MAX]).unwrap_err();
    assert_eq!(err, QuantError::Scale { arg: "scale_inv", index: 1, value: f32::MAX });
    assert!(matches!(e4m3fn_to_e4m3fnuz(&w[..1], &[f32::NAN]).unwrap_err(), QuantError::Scale { index: 0, .. }));

    // A DeepSeek-V3-style weight: E4M3FN data with 128×128 scales; FNUZ dequantizes bit-identically.
    let (n, k) = (150, 260);
    let x: Vec<f32> = (0..n * k).map(|i| (((i * 2654435761usize) % 2001) as f32 - 1000.0) * 1e-3).collect();
    let fn_w = QuantizedWeights::<E4M3Fn>::quantize(&x, n, k).unwrap();
    let fnuz_w = fn_w.to_e4m3fnuz().unwrap();
    assert_eq!(fnuz_w.scales, fn_w.scales.iter().map(|s| s * 2.0).collect::<Vec<_>>());
    assert_eq!(fnuz_w.dequantize(), fn_w.dequantize());
}
