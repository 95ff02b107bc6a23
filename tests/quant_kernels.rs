//! The device quantization kernels (`fp8gemm::quantize`, device/src/quant.rs) through the public
//! API on the emulator (all checking modes on, the HIP runtime's default), bit for bit against the
//! CPU recipes of `fp8gemm::quant`: dense (= contiguous), masked, fused `silu(gate)·up`, 128×128
//! weights, bf16 and f32 inputs, random shapes (K tails included), large/small/zero/subnormal
//! magnitudes, non-finite groups, every rejected argument, and quantize → GEMM end to end. The
//! gfx950 code object (E4M3FN) is run through the emulator's own launch API at the end.

use amdgpu_emu::exec::{self, Checks, LaunchConfig};
use amdgpu_emu::loader::CodeObject;
use amdgpu_emu::memory::DeviceMemory;
use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz, Fp8Format};
use fp8gemm::quant::{QuantError, QuantizedActivations, QuantizedWeights};
use fp8gemm::{
    Context, DeviceActivations, DeviceWeights, Error, fp8_gemm_nt, quantize_activations, quantize_activations_masked, quantize_weights, reference,
    silu_mul_quantize_activations, silu_mul_quantize_activations_masked,
};
use fp8gemm_device::args::{GlobalPtr, QuantActArgs, QuantWeightArgs};
use fp8gemm_device::quant as dq;
use half::{bf16, f16};
use proptest::prelude::*;
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::StandardNormal;

/// Random values with a per-row magnitude class (so whole 1×128 groups are large, tiny, zero…).
fn values(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(rows * cols);
    for _ in 0..rows {
        let class = rng.random_range(0..8u32);
        let mag = match class {
            0 => 0.0,   // all-zero row: amax clamps to 1e-4
            1 => 1e-30, // tiny: amax below the floor
            2 => 1e30,  // huge
            3 => 3e-39, // f32 subnormals
            4 => 1e-5,  // around the floor
            _ => 1.0,
        };
        for _ in 0..cols {
            let v: f32 = rng.sample(StandardNormal);
            // A few exact ties and large outliers inside ordinary rows.
            let v = if class >= 5 && rng.random_range(0..64) == 0 { v * 1e4 } else { v };
            out.push(v * mag);
        }
    }
    out
}

/// [`values`] with the huge rows scaled down to ~1e15, so that `silu(gate)·up` stays finite.
fn silu_values(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    values(rows, cols, seed).into_iter().map(|v| if v.abs() > 1e20 { v * 1e-15 } else { v }).collect()
}

fn to_bf16(x: &[f32]) -> Vec<bf16> {
    x.iter().map(|&v| bf16::from_f32(v)).collect()
}

fn bits<F: Fp8Format>(q: &[F]) -> Vec<u8> {
    q.iter().map(|v| v.to_bits()).collect()
}

fn scale_bits(s: &[f32]) -> Vec<u32> {
    s.iter().map(|v| v.to_bits()).collect()
}

/// Asserts the two operands are identical bit for bit, naming the first differing element.
fn assert_same_act<F: Fp8Format>(what: &str, got: &QuantizedActivations<F>, want: &QuantizedActivations<F>) {
    assert_eq!((got.m, got.k), (want.m, want.k), "{what}: shape");
    let (g, w) = (bits(&got.data), bits(&want.data));
    if let Some(i) = g.iter().zip(&w).position(|(a, b)| a != b) {
        panic!("{what}: q[{}, {}] = {:#04x}, CPU recipe {:#04x}", i / want.k, i % want.k, g[i], w[i]);
    }
    let (g, w) = (scale_bits(&got.scales), scale_bits(&want.scales));
    if let Some(i) = g.iter().zip(&w).position(|(a, b)| a != b) {
        panic!("{what}: scale[{i}] = {:e}, CPU recipe {:e}", got.scales[i], want.scales[i]);
    }
}

fn device_act<X: fp8gemm::quantize::QuantInput>(ctx: &Context, x: &[X], m: usize, k: usize) -> QuantizedActivations<E4M3Fnuz> {
    let dx = ctx.upload(x).unwrap();
    let mut out = DeviceActivations::<E4M3Fnuz>::alloc(ctx, m, k).unwrap();
    quantize_activations(&stream(ctx), &dx, &mut out).unwrap_or_else(|e| panic!("{m}x{k}: {e}"));
    out.download(&stream(ctx)).unwrap()
}

fn stream(ctx: &Context) -> fp8gemm::Stream {
    fp8gemm::Stream::new(ctx).unwrap()
}

#[test]
fn dense_bf16_and_f32_match_the_cpu_recipe_on_a_shape_grid() {
    let ctx = Context::new().unwrap();
    for &m in &[1usize, 3, 17, 64] {
        for &k in &[8usize, 120, 128, 136, 384, 1000, 7168] {
            let x = values(m, k, (m * 7919 + k) as u64);
            let xb = to_bf16(&x);
            let want = QuantizedActivations::<E4M3Fnuz>::quantize(&xb, m, k).unwrap();
            assert_same_act(&format!("bf16 {m}x{k}"), &device_act(&ctx, &xb, m, k), &want);
            let want = QuantizedActivations::<E4M3Fnuz>::quantize(&x, m, k).unwrap();
            assert_same_act(&format!("f32 {m}x{k}"), &device_act(&ctx, &x, m, k), &want);
        }
    }
}

/// [`values`] as f16: finite (overflow clamped to ±60000), with f16 subnormals and zeros where
/// the f32 magnitudes fall below f16's range.
fn to_f16(x: &[f32]) -> Vec<f16> {
    x.iter().map(|&v| f16::from_f32(v.clamp(-60000.0, 60000.0))).collect()
}

/// f16 inputs (`QuantInput for f16`): every kernel reads them exactly (f16 → f32 is exact, f16
/// subnormals included) and matches the CPU recipe on the same values bit for bit.
#[test]
fn f16_inputs_match_the_cpu_recipe_in_every_kernel() {
    let ctx = Context::new().unwrap();
    for &(m, k) in &[(1usize, 8usize), (17, 136), (64, 1000), (3, 7168)] {
        let x = to_f16(&values(m, k, (m * 131 + k) as u64));
        assert!(x.iter().any(|v| v.is_finite() && !v.is_normal() && v.to_bits() & 0x7fff != 0) || m < 17, "{m}x{k}: the data should reach f16 subnormals");
        let want = QuantizedActivations::<E4M3Fnuz>::quantize(&x, m, k).unwrap();
        assert_same_act(&format!("f16 {m}x{k}"), &device_act(&ctx, &x, m, k), &want);
    }
    for &(n, k) in &[(129usize, 136usize), (256, 384)] {
        let x = to_f16(&values(n, k, (n * 7 + k) as u64));
        assert_same_weights(&format!("f16 weights {n}x{k}"), &device_weights(&ctx, &x, n, k), &QuantizedWeights::quantize(&x, n, k).unwrap());
    }
    let (m, i) = (5usize, 136usize);
    let x = to_f16(&silu_values(m, 2 * i, 5));
    let dx = ctx.upload(&x).unwrap();
    let mut out = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, m, i).unwrap();
    silu_mul_quantize_activations(&stream(&ctx), &dx, &mut out).unwrap();
    let want = QuantizedActivations::<E4M3Fnuz>::quantize_silu_mul(&x, m, i).unwrap();
    assert_same_act("silu f16", &out.download(&stream(&ctx)).unwrap(), &want);
    let (groups, m_max, k) = (3, 6, 264);
    let x = to_f16(&values(groups * m_max, k, 21));
    let (got, want) = masked_case(&ctx, &x, groups, m_max, k, &[6, -1, 4], false);
    assert_same_act("masked f16", &got, &want);
    let x = to_f16(&silu_values(groups * m_max, 2 * k, 22));
    let (got, want) = masked_case(&ctx, &x, groups, m_max, k, &[2, 6, 0], true);
    assert_same_act("silu masked f16", &got, &want);
}

#[test]
fn all_zero_rows_get_the_floor_scale_and_zeros() {
    let ctx = Context::new().unwrap();
    let (m, k) = (3, 256);
    let got = device_act(&ctx, &vec![bf16::ZERO; m * k], m, k);
    assert!(got.data.iter().all(|q| q.to_bits() == 0));
    assert!(got.scales.iter().all(|&s| s == 1e-4f32 / 240.0), "{:?}", got.scales);
    // −0.0 too (E4M3FNUZ has no −0).
    let got = device_act(&ctx, &vec![bf16::NEG_ZERO; m * k], m, k);
    assert!(got.data.iter().all(|q| q.to_bits() == 0));
}

#[test]
fn non_finite_groups_become_nan_and_the_cpu_recipe_rejects_them() {
    let ctx = Context::new().unwrap();
    let (m, k) = (4, 512);
    let mut x = values(m, k, 5);
    x[3] = f32::NAN; // row 0, group 0
    x[k + 200] = f32::INFINITY; // row 1, group 1
    x[2 * k + 511] = f32::NEG_INFINITY; // row 2, group 3 (last element)
    for xb in [to_bf16(&x)] {
        let want = QuantizedActivations::<E4M3Fnuz>::quantize_nan_groups(&xb, m, k).unwrap();
        let got = device_act(&ctx, &xb, m, k);
        assert_same_act("bf16 with NaN/±inf", &got, &want);
        for (row, group) in [(0usize, 0usize), (1, 1), (2, 3)] {
            assert!(got.scales[row * 4 + group].is_nan(), "scale of row {row} group {group}");
            let q = &got.data[row * k + group * 128..][..128];
            assert!(q.iter().all(|v| v.to_bits() == 0x80), "row {row} group {group}: all NaN");
        }
        // Every other group is the ordinary recipe.
        assert!(got.scales.iter().filter(|s| s.is_nan()).count() == 3);
        let err = QuantizedActivations::<E4M3Fnuz>::quantize(&xb, m, k).unwrap_err();
        assert!(matches!(err, QuantError::NonFinite { arg: "x", index: 3, .. }), "{err:?}");
    }
    let want = QuantizedActivations::<E4M3Fnuz>::quantize_nan_groups(&x, m, k).unwrap();
    assert_same_act("f32 with NaN/±inf", &device_act(&ctx, &x, m, k), &want);
}

/// The masked layout: returns the operand after quantizing into an output pre-filled with a
/// sentinel, plus the expected operand (sentinel where rows must stay untouched).
fn masked_case<X: fp8gemm::quantize::QuantInput + Into<f32> + Sync>(
    ctx: &Context,
    x: &[X],
    groups: usize,
    m_max: usize,
    k: usize,
    masked_m: &[i32],
    silu: bool,
) -> (QuantizedActivations<E4M3Fnuz>, QuantizedActivations<E4M3Fnuz>) {
    let rows = groups * m_max;
    let kb = k.div_ceil(128);
    let sentinel = QuantizedActivations::from_parts(vec![E4M3Fnuz::from_bits(0x55); rows * k], vec![7.0; rows * kb], rows, k).unwrap();
    let mut out = DeviceActivations::upload(ctx, &sentinel).unwrap();
    let dx = ctx.upload(x).unwrap();
    let dm = ctx.upload(masked_m).unwrap();
    if silu {
        silu_mul_quantize_activations_masked(&stream(ctx), &dx, &dm, &mut out).unwrap();
    } else {
        quantize_activations_masked(&stream(ctx), &dx, &dm, &mut out).unwrap();
    }
    let got = out.download(&stream(ctx)).unwrap();
    let width = if silu { 2 * k } else { k };
    let full = if silu {
        QuantizedActivations::<E4M3Fnuz>::quantize_silu_mul(x, rows, k).unwrap()
    } else {
        QuantizedActivations::<E4M3Fnuz>::quantize(x, rows, k).unwrap()
    };
    assert_eq!(x.len(), rows * width);
    let mut want = sentinel.clone();
    for (g, &count) in masked_m.iter().enumerate().take(groups) {
        let valid = (count.max(0) as usize).min(m_max);
        for r in g * m_max..g * m_max + valid {
            want.data[r * k..(r + 1) * k].copy_from_slice(&full.data[r * k..(r + 1) * k]);
            want.scales[r * kb..(r + 1) * kb].copy_from_slice(&full.scales[r * kb..(r + 1) * kb]);
        }
    }
    (got, want)
}

#[test]
fn masked_counts_are_clamped_on_the_device() {
    let ctx = Context::new().unwrap();
    let (groups, m_max, k) = (5, 9, 264);
    let x = to_bf16(&values(groups * m_max, k, 11));
    // 0 rows, negative, exactly m_max, beyond m_max, i32 extremes.
    let masked_m = [0, -4, 9, 100, i32::MIN];
    let (got, want) = masked_case(&ctx, &x, groups, m_max, k, &masked_m, false);
    assert_same_act("masked", &got, &want);
    let masked_m = [3, i32::MAX, 1, 8, 2];
    let (got, want) = masked_case(&ctx, &x, groups, m_max, k, &masked_m, false);
    assert_same_act("masked", &got, &want);
}

#[test]
fn silu_mul_matches_the_cpu_formula_bit_for_bit() {
    let ctx = Context::new().unwrap();
    for &(m, i) in &[(1usize, 128usize), (5, 136), (33, 512), (2, 2048)] {
        let mut x = silu_values(m, 2 * i, (m * 31 + i) as u64);
        // Gate values across the whole formula's range (cut-off, both signs, ±0).
        for (c, v) in x.iter_mut().take(i).enumerate() {
            *v = [-100.0, -80.5, -79.9, -20.0, -1.5, -0.0, 0.0, 1e-3, 2.5, 30.0, 100.0][c % 11];
        }
        let xin = x;
        let xb = to_bf16(&xin);
        let dx = ctx.upload(&xb).unwrap();
        let mut out = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, m, i).unwrap();
        silu_mul_quantize_activations(&stream(&ctx), &dx, &mut out).unwrap();
        let want = QuantizedActivations::<E4M3Fnuz>::quantize_silu_mul(&xb, m, i).unwrap();
        assert_same_act(&format!("silu bf16 {m}x{i}"), &out.download(&stream(&ctx)).unwrap(), &want);
        let dx = ctx.upload(&xin).unwrap();
        silu_mul_quantize_activations(&stream(&ctx), &dx, &mut out).unwrap();
        let want = QuantizedActivations::<E4M3Fnuz>::quantize_silu_mul(&xin, m, i).unwrap();
        assert_same_act(&format!("silu f32 {m}x{i}"), &out.download(&stream(&ctx)).unwrap(), &want);
    }
    // Masked fused variant.
    let (groups, m_max, i) = (3, 6, 256);
    let x = to_bf16(&silu_values(groups * m_max, 2 * i, 99));
    let (got, want) = masked_case(&ctx, &x, groups, m_max, i, &[6, -1, 4], true);
    assert_same_act("silu masked", &got, &want);
}

#[test]
fn silu_mul_overflow_and_nan_are_defined() {
    let ctx = Context::new().unwrap();
    let (m, i) = (2, 256);
    let mut x = silu_values(m, 2 * i, 3);
    x[10] = 3e38; // gate huge, up = x[i + 10]
    x[i + 10] = 3e38; // → silu·up = +inf in group 0 of row 0
    x[2 * i + 300] = f32::NAN; // row 1, up column 300 - 256 = 44 → group 0 of row 1
    let dx = ctx.upload(&x).unwrap();
    let mut out = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, m, i).unwrap();
    silu_mul_quantize_activations(&stream(&ctx), &dx, &mut out).unwrap();
    let got = out.download(&stream(&ctx)).unwrap();
    let y = fp8gemm::quant::silu_mul_rows(&x, m, i).unwrap();
    let want = QuantizedActivations::<E4M3Fnuz>::quantize_nan_groups(&y, m, i).unwrap();
    assert_same_act("silu non-finite", &got, &want);
    assert!(got.scales[0].is_nan() && got.scales[2].is_nan());
    assert!(!got.scales[1].is_nan() && !got.scales[3].is_nan());
    let err = QuantizedActivations::<E4M3Fnuz>::quantize_silu_mul(&x, m, i).unwrap_err();
    assert!(matches!(err, QuantError::NonFinite { arg: "x", .. }), "{err:?}");
    x[2 * i + 300] = 1.0;
    let err = QuantizedActivations::<E4M3Fnuz>::quantize_silu_mul(&x, m, i).unwrap_err();
    assert!(matches!(err, QuantError::NonFinite { arg: "silu(gate)·up", index: 10, .. }), "{err:?}");
}

fn assert_same_weights<F: Fp8Format>(what: &str, got: &QuantizedWeights<F>, want: &QuantizedWeights<F>) {
    let (g, w) = (bits(&got.data), bits(&want.data));
    if let Some(i) = g.iter().zip(&w).position(|(a, b)| a != b) {
        panic!("{what}: q[{}, {}] = {:#04x}, CPU recipe {:#04x}", i / want.k, i % want.k, g[i], w[i]);
    }
    assert_eq!(scale_bits(&got.scales), scale_bits(&want.scales), "{what}: scales");
}

fn device_weights<X: fp8gemm::quantize::QuantInput>(ctx: &Context, x: &[X], n: usize, k: usize) -> QuantizedWeights<E4M3Fnuz> {
    let dx = ctx.upload(x).unwrap();
    let mut out = DeviceWeights::<E4M3Fnuz>::alloc(ctx, n, k).unwrap();
    quantize_weights(&stream(ctx), &dx, &mut out).unwrap_or_else(|e| panic!("{n}x{k}: {e}"));
    out.download(&stream(ctx)).unwrap()
}

#[test]
fn weights_match_the_cpu_recipe_including_nan_blocks() {
    let ctx = Context::new().unwrap();
    for &(n, k) in &[(1usize, 8usize), (128, 128), (129, 136), (300, 520)] {
        let x = values(n, k, (n * 13 + k) as u64);
        let xb = to_bf16(&x);
        assert_same_weights(&format!("bf16 {n}x{k}"), &device_weights(&ctx, &xb, n, k), &QuantizedWeights::quantize(&xb, n, k).unwrap());
        assert_same_weights(&format!("f32 {n}x{k}"), &device_weights(&ctx, &x, n, k), &QuantizedWeights::quantize(&x, n, k).unwrap());
    }
    let (n, k) = (256, 384);
    let mut x = values(n, k, 8);
    x[200 * k + 130] = f32::NAN; // block (1, 1)
    x[5 * k + 383] = f32::NEG_INFINITY; // block (0, 2)
    let got = device_weights(&ctx, &x, n, k);
    assert_same_weights("non-finite", &got, &QuantizedWeights::quantize_nan_groups(&x, n, k).unwrap());
    let nan: Vec<usize> = (0..6).filter(|&i| got.scales[i].is_nan()).collect();
    assert_eq!(nan, [2, 4]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_shapes_dense_masked_weights(m in 1usize..40, k8 in 1usize..80, groups in 1usize..4, seed in any::<u64>()) {
        let ctx = Context::new().unwrap();
        let k = 8 * k8;
        let x = values(m, k, seed);
        let xb = to_bf16(&x);
        let want = QuantizedActivations::<E4M3Fnuz>::quantize(&xb, m, k).unwrap();
        assert_same_act(&format!("dense {m}x{k}"), &device_act(&ctx, &xb, m, k), &want);
        let want = QuantizedWeights::quantize(&x, m, k).unwrap();
        assert_same_weights(&format!("weights {m}x{k}"), &device_weights(&ctx, &x, m, k), &want);
        let mut rng = StdRng::seed_from_u64(seed ^ 1);
        let m_max = m.div_ceil(groups).max(1);
        let xm = to_bf16(&values(groups * m_max, k, seed ^ 2));
        let masked: Vec<i32> = (0..groups).map(|_| rng.random_range(-3..m_max as i32 + 4)).collect();
        let (got, want) = masked_case(&ctx, &xm, groups, m_max, k, &masked, false);
        assert_same_act(&format!("masked {groups}x{m_max}x{k} {masked:?}"), &got, &want);
    }
}

const SPECIALS: [f32; 8] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 3.0e38, -1e-40, 1e-45, 65504.0];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// Random shapes with special values sprinkled in (NaN, ±inf, −0, near-f32::MAX, subnormals),
    /// bf16 or f32, plain or fused silu·mul, dense or masked: always bit-identical to the CPU
    /// definition of the device behaviour (`quantize_nan_groups`).
    #[test]
    fn random_special_values(m in 1usize..12, k8 in 1usize..40, seed in any::<u64>(), f32_in in any::<bool>(), silu in any::<bool>(),
                             masked in any::<bool>(),
                             specials in prop::collection::vec((any::<prop::sample::Index>(), 0usize..SPECIALS.len()), 0..6)) {
        let ctx = Context::new().unwrap();
        let k = 8 * k8;
        let width = if silu { 2 * k } else { k };
        let mut x = silu_values(m, width, seed);
        let len = x.len();
        for (at, which) in &specials {
            x[at.index(len)] = SPECIALS[*which];
        }
        // The CPU sees exactly the values the device reads.
        let xr: Vec<f32> = if f32_in { x.clone() } else { to_bf16(&x).iter().map(|v| v.to_f32()).collect() };
        let y = if silu { fp8gemm::quant::silu_mul_rows(&xr, m, k).unwrap() } else { xr.clone() };
        let full = QuantizedActivations::<E4M3Fnuz>::quantize_nan_groups(&y, m, k).unwrap();
        let (groups, masked_m) = if masked { (m, vec![1i32, 0, -1, 5].into_iter().cycle().take(m).collect::<Vec<_>>()) } else { (1, vec![]) };
        let m_max = m / groups;
        let sentinel = QuantizedActivations::from_parts(vec![E4M3Fnuz::from_bits(0x55); m * k], vec![7.0; m * k.div_ceil(128)], m, k).unwrap();
        let mut out = DeviceActivations::upload(&ctx, &sentinel).unwrap();
        let dm = ctx.upload(&masked_m).unwrap();
        let run = |out: &mut DeviceActivations<E4M3Fnuz>| -> fp8gemm::Result<()> {
            macro_rules! go {
                ($dx:expr) => {
                    match (masked, silu) {
                        (false, false) => quantize_activations(&stream(&ctx), $dx, out),
                        (false, true) => silu_mul_quantize_activations(&stream(&ctx), $dx, out),
                        (true, false) => quantize_activations_masked(&stream(&ctx), $dx, &dm, out),
                        (true, true) => silu_mul_quantize_activations_masked(&stream(&ctx), $dx, &dm, out),
                    }
                };
            }
            if f32_in { go!(&ctx.upload(&x).unwrap()) } else { go!(&ctx.upload(&to_bf16(&x)).unwrap()) }
        };
        run(&mut out).unwrap();
        let got = out.download(&stream(&ctx)).unwrap();
        let mut want = sentinel.clone();
        let kb = k.div_ceil(128);
        for r in 0..m {
            let valid = !masked || (r % m_max) < (masked_m[r / m_max].max(0) as usize).min(m_max);
            if valid {
                want.data[r * k..(r + 1) * k].copy_from_slice(&full.data[r * k..(r + 1) * k]);
                want.scales[r * kb..(r + 1) * kb].copy_from_slice(&full.scales[r * kb..(r + 1) * kb]);
            }
        }
        assert_same_act(&format!("{m}x{k} f32 {f32_in} silu {silu} masked {masked}"), &got, &want);
    }
}

#[test]
fn bad_arguments_are_typed_errors() {
    let ctx = Context::new().unwrap();
    let x = ctx.upload(&vec![bf16::ONE; 4 * 100]).unwrap();
    // k not a multiple of 8.
    let mut out = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, 4, 100).unwrap();
    let e = quantize_activations(&stream(&ctx), &x, &mut out).unwrap_err();
    assert!(matches!(&e, Error::Shape { arg: "k", .. }), "{e}");
    // Input length.
    let mut out = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, 4, 96).unwrap();
    let e = quantize_activations(&stream(&ctx), &x, &mut out).unwrap_err();
    assert!(matches!(&e, Error::Shape { arg: "x", .. }), "{e}");
    assert!(e.to_string().contains("384"), "{e}");
    // silu input must be [m, 2k].
    let x2 = ctx.upload(&vec![bf16::ONE; 4 * 96]).unwrap();
    let e = silu_mul_quantize_activations(&stream(&ctx), &x2, &mut out).unwrap_err();
    assert!(matches!(&e, Error::Shape { arg: "x", .. }), "{e}");
    // Wrong FP8 format for gfx942.
    let mut ocp = DeviceActivations::<E4M3Fn>::alloc(&ctx, 4, 96).unwrap();
    let e = quantize_activations(&stream(&ctx), &x2, &mut ocp).unwrap_err();
    assert!(matches!(&e, Error::Format { arg: "out", .. }), "{e}");
    let mut ocpw = DeviceWeights::<E4M3Fn>::alloc(&ctx, 4, 96).unwrap();
    assert!(matches!(quantize_weights(&stream(&ctx), &x2, &mut ocpw), Err(Error::Format { arg: "out", .. })));
    // Masked: rows not a multiple of G, and G = 0 with rows.
    let mm = ctx.upload(&[1i32, 2, 3]).unwrap();
    let e = quantize_activations_masked(&stream(&ctx), &x2, &mm, &mut out).unwrap_err();
    assert!(matches!(&e, Error::Shape { arg: "out", .. }), "{e}");
    let empty = ctx.alloc_zeroed::<i32>(0).unwrap();
    let e = quantize_activations_masked(&stream(&ctx), &x2, &empty, &mut out).unwrap_err();
    assert!(matches!(&e, Error::Shape { arg: "out", .. }), "{e}");
    // Weights: input length and k alignment.
    let mut w = DeviceWeights::<E4M3Fnuz>::alloc(&ctx, 4, 100).unwrap();
    assert!(matches!(quantize_weights(&stream(&ctx), &x, &mut w), Err(Error::Shape { arg: "k", .. })));
    let mut w = DeviceWeights::<E4M3Fnuz>::alloc(&ctx, 5, 96).unwrap();
    assert!(matches!(quantize_weights(&stream(&ctx), &x2, &mut w), Err(Error::Shape { arg: "x", .. })));
    // Buffers of another context.
    let other = Context::new().unwrap();
    let xo = other.upload(&vec![bf16::ONE; 4 * 96]).unwrap();
    assert!(matches!(quantize_activations(&stream(&ctx), &xo, &mut out), Err(Error::ForeignBuffer { arg: "x" })));
    let mut oo = DeviceActivations::<E4M3Fnuz>::alloc(&other, 4, 96).unwrap();
    assert!(matches!(quantize_activations(&stream(&ctx), &x2, &mut oo), Err(Error::ForeignBuffer { arg: "out" })));
    let mmo = other.upload(&[4i32]).unwrap();
    assert!(matches!(quantize_activations_masked(&stream(&ctx), &x2, &mmo, &mut out), Err(Error::ForeignBuffer { arg: "masked_m" })));
    // Shapes whose element count overflows.
    assert!(matches!(DeviceActivations::<E4M3Fnuz>::alloc(&ctx, 1 << 62, 1 << 8), Err(Error::Shape { arg: "m", .. })));
    assert!(matches!(DeviceWeights::<E4M3Fnuz>::alloc(&ctx, usize::MAX, 256), Err(Error::Shape { arg: "n", .. })));
    // Empty problems launch nothing and succeed.
    let mut e0 = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, 0, 128).unwrap();
    quantize_activations(&stream(&ctx), &ctx.alloc_zeroed::<f32>(0).unwrap(), &mut e0).unwrap();
}

/// bf16 activations and weights on the device → quantize kernels → `fp8_gemm_nt` → calc_diff
/// against the CPU f32 GEMM, and bit-identical to the GEMM of the CPU-quantized operands.
#[test]
fn quantize_then_gemm_end_to_end() {
    let ctx = Context::new().unwrap();
    let (m, n, k) = (96, 256, 512);
    let mut rng = StdRng::seed_from_u64(42);
    let a: Vec<bf16> = (0..m * k).map(|_| bf16::from_f32(rng.sample(StandardNormal))).collect();
    let b: Vec<bf16> = (0..n * k).map(|_| bf16::from_f32(rng.sample(StandardNormal))).collect();
    let (da_in, db_in) = (ctx.upload(&a).unwrap(), ctx.upload(&b).unwrap());
    let mut qa = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, m, k).unwrap();
    let mut qb = DeviceWeights::<E4M3Fnuz>::alloc(&ctx, n, k).unwrap();
    quantize_activations(&stream(&ctx), &da_in, &mut qa).unwrap();
    quantize_weights(&stream(&ctx), &db_in, &mut qb).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
    fp8_gemm_nt(&stream(&ctx), &qa, &qb, &mut d).unwrap();
    let d = d.download(&stream(&ctx)).unwrap();

    let (af, bf): (Vec<f32>, Vec<f32>) = (a.iter().map(|v| v.to_f32()).collect(), b.iter().map(|v| v.to_f32()).collect());
    let mut want = vec![0f32; m * n];
    reference::gemm_nt_f32(&af, &bf, m, n, k, &mut want).unwrap();
    let diff = reference::calc_diff(&d, &want).unwrap();
    assert!(diff < 1e-3, "calc_diff vs f32 reference {diff:e}");

    let cpu_a = QuantizedActivations::<E4M3Fnuz>::quantize(&a, m, k).unwrap();
    let cpu_b = QuantizedWeights::<E4M3Fnuz>::quantize(&b, n, k).unwrap();
    let (ua, ub) = (DeviceActivations::upload(&ctx, &cpu_a).unwrap(), DeviceWeights::upload(&ctx, &cpu_b).unwrap());
    let mut d2 = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
    fp8_gemm_nt(&stream(&ctx), &ua, &ub, &mut d2).unwrap();
    let d2 = d2.download(&stream(&ctx)).unwrap();
    let same = d.iter().zip(&d2).all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(same, "GEMM of device-quantized operands differs from the GEMM of CPU-quantized ones");
}

// ---- gfx950 (E4M3FN) through the emulator's launch API ----

fn gfx950() -> CodeObject {
    CodeObject::parse(fp8gemm::codeobj::GFX950).expect("the embedded gfx950 code object parses")
}

fn put(mem: &DeviceMemory, bytes: &[u8]) -> u64 {
    let addr = mem.alloc(bytes.len().max(1) as u64).expect("alloc");
    mem.write(addr, bytes).expect("write");
    addr
}

fn read(mem: &DeviceMemory, addr: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    mem.read(addr, &mut out).expect("read");
    out
}

/// Runs an activation kernel of the gfx950 object on f32 input; returns (q bytes, scales).
fn run950_act(name: &str, x: &[f32], rows: usize, k: usize, silu: bool) -> (Vec<u8>, Vec<f32>) {
    run950_act_masked(name, x, rows, k, silu, &[])
}

/// [`run950_act`] for the masked kernels: `masked_m` gives G (rows = G · m_max); the outputs
/// start as 0x55 bytes and 7.0 scales.
fn run950_act_masked(name: &str, x: &[f32], rows: usize, k: usize, silu: bool, masked_m: &[i32]) -> (Vec<u8>, Vec<f32>) {
    let co = gfx950();
    let kernel = co.kernel(name).unwrap_or_else(|| panic!("{name} missing from gfx950"));
    let mem = DeviceMemory::new();
    let bf = name.ends_with("bf16");
    let xbytes: Vec<u8> =
        if bf { to_bf16(x).iter().flat_map(|v| v.to_bits().to_le_bytes()).collect() } else { x.iter().flat_map(|v| v.to_le_bytes()).collect() };
    assert_eq!(x.len(), rows * k * if silu { 2 } else { 1 });
    let kb = k.div_ceil(128);
    let sentinel: Vec<u8> = (0..rows * kb).flat_map(|_| 7.0f32.to_le_bytes()).collect();
    let (xa, q, sf) = (put(&mem, &xbytes), put(&mem, &vec![0x55u8; rows * k]), put(&mem, &sentinel));
    let groups = masked_m.len().max(1);
    let mm = if masked_m.is_empty() { 0 } else { put(&mem, &masked_m.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()) };
    let args = QuantActArgs {
        x: GlobalPtr::new(xa),
        q: GlobalPtr::new(q),
        sf: GlobalPtr::new(sf),
        masked_m: GlobalPtr::new(mm),
        rows: (rows / groups) as u32,
        k: k as u32,
        groups: groups as u32,
        fp8_max: E4M3Fn::MAX,
    };
    let grid = ((rows * kb) as u32).div_ceil(dq::ACT_GROUPS_PER_WG);
    let cfg = LaunchConfig { grid: [grid, 1, 1], block: [dq::ACT_THREADS, 1, 1], dynamic_lds_bytes: 0, kernarg: args.as_bytes().to_vec() };
    exec::launch(&co, kernel, &cfg, &mem, &Checks::all()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let s = read(&mem, sf, rows * kb * 4).chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    (read(&mem, q, rows * k), s)
}

#[test]
fn gfx950_kernels_match_the_e4m3fn_recipe() {
    let (m, k) = (24, 392);
    let mut x = values(m, k, 77);
    x[5] = f32::NAN;
    x[k + 130] = f32::NEG_INFINITY;
    for name in ["quantize_act_bf16", "quantize_act_f32"] {
        let xin: Vec<f32> = if name.ends_with("bf16") { to_bf16(&x).iter().map(|v| v.to_f32()).collect() } else { x.clone() };
        let want = QuantizedActivations::<E4M3Fn>::quantize_nan_groups(&xin, m, k).unwrap();
        let (q, s) = run950_act(name, &x, m, k, false);
        let got = QuantizedActivations::from_parts(q.into_iter().map(E4M3Fn::from_bits).collect(), s, m, k).unwrap();
        assert_same_act(name, &got, &want);
        assert!(got.data[..128].iter().all(|v| v.to_bits() == 0x7F), "{name}: OCP NaN group");
        // (Tiny negative values give OCP −0, 0x80; the bitwise comparison above covers it.)
    }
    let i = 264;
    let xs = silu_values(m, 2 * i, 78);
    let want = QuantizedActivations::<E4M3Fn>::quantize_silu_mul(&xs, m, i).unwrap();
    let (q, s) = run950_act("quantize_act_silu_mul_f32", &xs, m, i, true);
    let got = QuantizedActivations::from_parts(q.into_iter().map(E4M3Fn::from_bits).collect(), s, m, i).unwrap();
    assert_same_act("gfx950 silu", &got, &want);

    // Masked bf16 (G = 3, m_max = 8, counts 8, −2 and 30 → 8, 0, 8 rows).
    let (g, m_max, k2) = (3usize, 8usize, 136usize);
    let xm = values(g * m_max, k2, 80);
    let xr: Vec<f32> = to_bf16(&xm).iter().map(|v| v.to_f32()).collect();
    let full = QuantizedActivations::<E4M3Fn>::quantize(&xr, g * m_max, k2).unwrap();
    let (q, s) = run950_act_masked("quantize_act_masked_bf16", &xm, g * m_max, k2, false, &[8, -2, 30]);
    let kb2 = k2.div_ceil(128);
    for r in 0..g * m_max {
        let valid = r / m_max != 1;
        for c in 0..k2 {
            let want = if valid { full.data[r * k2 + c].to_bits() } else { 0x55 };
            assert_eq!(q[r * k2 + c], want, "gfx950 masked q[{r},{c}]");
        }
        for b in 0..kb2 {
            let want = if valid { full.scales[r * kb2 + b] } else { 7.0 };
            assert_eq!(s[r * kb2 + b].to_bits(), want.to_bits(), "gfx950 masked scale[{r},{b}]");
        }
    }

    // Weights, f32 and bf16.
    let (n, k) = (200, 264);
    let w = values(n, k, 79);
    let co = gfx950();
    for name in ["quantize_weight_f32", "quantize_weight_bf16"] {
        gfx950_weights(&co, name, &w, n, k);
    }
}

fn gfx950_weights(co: &CodeObject, name: &str, w: &[f32], n: usize, k: usize) {
    let kernel = co.kernel(name).unwrap_or_else(|| panic!("{name} missing from gfx950"));
    let mem = DeviceMemory::new();
    let bf = name.ends_with("bf16");
    let xbytes: Vec<u8> =
        if bf { to_bf16(w).iter().flat_map(|v| v.to_bits().to_le_bytes()).collect() } else { w.iter().flat_map(|v| v.to_le_bytes()).collect() };
    let wr: Vec<f32> = if bf { to_bf16(w).iter().map(|v| v.to_f32()).collect() } else { w.to_vec() };
    let (nb, kb) = (n.div_ceil(128), k.div_ceil(128));
    let (xa, q, sf) = (put(&mem, &xbytes), put(&mem, &vec![0u8; n * k]), put(&mem, &vec![0u8; nb * kb * 4]));
    let args =
        QuantWeightArgs { x: GlobalPtr::new(xa), q: GlobalPtr::new(q), sf: GlobalPtr::new(sf), n: n as u32, k: k as u32, fp8_max: E4M3Fn::MAX, reserved: 0 };
    let cfg = LaunchConfig { grid: [(nb * kb) as u32, 1, 1], block: [dq::WEIGHT_THREADS, 1, 1], dynamic_lds_bytes: 0, kernarg: args.as_bytes().to_vec() };
    exec::launch(co, kernel, &cfg, &mem, &Checks::all()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let s: Vec<f32> = read(&mem, sf, nb * kb * 4).chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let got = QuantizedWeights::from_parts(read(&mem, q, n * k).into_iter().map(E4M3Fn::from_bits).collect(), s, n, k).unwrap();
    assert_same_weights(name, &got, &QuantizedWeights::<E4M3Fn>::quantize(&wr, n, k).unwrap());
}

/// Emulator counters of DeepSeek-V3-sized launches (printed with `--nocapture` for the report)
/// and the memory traffic they must have: activations read their input once and write exactly
/// the FP8 values and scales; weights read their input twice (maximum, then convert).
#[test]
fn counters_show_the_expected_memory_traffic() {
    let ctx = Context::new().unwrap();
    let (m, k) = (128usize, 7168usize);
    let x = to_bf16(&values(m, k, 1));
    let dx = ctx.upload(&x).unwrap();
    let mut qa = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, m, k).unwrap();
    quantize_activations(&stream(&ctx), &dx, &mut qa).unwrap();
    let r = fp8gemm::runtime::last_emulator_report().expect("a launch report");
    eprintln!("{r}");
    assert_eq!(r.kernel, "quantize_act_bf16");
    assert_eq!(r.counters.global_read_bytes, (m * k * 2) as u64);
    assert_eq!(r.counters.global_write_bytes, (m * k + m * (k / 128) * 4) as u64);

    let i = 2048;
    let gu = to_bf16(&silu_values(m, 2 * i, 2));
    let dgu = ctx.upload(&gu).unwrap();
    let mut qd = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, m, i).unwrap();
    silu_mul_quantize_activations(&stream(&ctx), &dgu, &mut qd).unwrap();
    let r = fp8gemm::runtime::last_emulator_report().unwrap();
    eprintln!("{r}");
    assert_eq!(r.counters.global_read_bytes, (m * 2 * i * 2) as u64);
    assert_eq!(r.counters.global_write_bytes, (m * i + m * (i / 128) * 4) as u64);

    let (n, k) = (2112usize, 7168usize);
    let w = to_bf16(&values(n, k, 3));
    let dw = ctx.upload(&w).unwrap();
    let mut qw = DeviceWeights::<E4M3Fnuz>::alloc(&ctx, n, k).unwrap();
    quantize_weights(&stream(&ctx), &dw, &mut qw).unwrap();
    let r = fp8gemm::runtime::last_emulator_report().unwrap();
    eprintln!("{r}");
    assert_eq!(r.counters.global_read_bytes, (2 * n * k * 2) as u64);
    assert_eq!(r.counters.global_write_bytes, (n * k + n.div_ceil(128) * (k / 128) * 4) as u64);
    assert_same_weights("2112x7168", &qw.download(&stream(&ctx)).unwrap(), &QuantizedWeights::quantize(&w, n, k).unwrap());
}

/// The MoE decode path on the device: `[G, m_max, k]` bf16 → masked quantize kernel (counts read
/// on the device) → `m_grouped_fp8_gemm_nt_masked`, bit-identical to the same GEMM on
/// CPU-quantized activations and within calc_diff < 1e-3 of the f32 GEMM on the valid rows.
#[test]
fn masked_quantize_then_masked_gemm() {
    use fp8gemm::quant::GroupedQuantizedWeights;
    use fp8gemm::{DeviceGroupedWeights, m_grouped_fp8_gemm_nt_masked};
    let ctx = Context::new().unwrap();
    let (groups, m_max, n, k) = (3usize, 40usize, 128usize, 256usize);
    let masked_m = [40i32, 0, 17];
    let mut rng = StdRng::seed_from_u64(7);
    let a: Vec<bf16> = (0..groups * m_max * k).map(|_| bf16::from_f32(rng.sample(StandardNormal))).collect();
    let b: Vec<f32> = (0..groups * n * k).map(|_| bf16::from_f32(rng.sample(StandardNormal)).to_f32()).collect();
    let qb = GroupedQuantizedWeights::<E4M3Fnuz>::quantize(&b, groups, n, k).unwrap();
    let db = DeviceGroupedWeights::upload(&ctx, &qb).unwrap();
    let dm = ctx.upload(&masked_m).unwrap();
    let mut qa = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, groups * m_max, k).unwrap();
    quantize_activations_masked(&stream(&ctx), &ctx.upload(&a).unwrap(), &dm, &mut qa).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(groups * m_max * n).unwrap();
    m_grouped_fp8_gemm_nt_masked(&stream(&ctx), &qa, &db, &mut d, &dm, 32).unwrap();
    let d = d.download(&stream(&ctx)).unwrap();

    let cpu_a = DeviceActivations::upload(&ctx, &QuantizedActivations::<E4M3Fnuz>::quantize(&a, groups * m_max, k).unwrap()).unwrap();
    let mut d2 = ctx.alloc_zeroed::<bf16>(groups * m_max * n).unwrap();
    m_grouped_fp8_gemm_nt_masked(&stream(&ctx), &cpu_a, &db, &mut d2, &dm, 32).unwrap();
    let d2 = d2.download(&stream(&ctx)).unwrap();
    assert!(d.iter().zip(&d2).all(|(x, y)| x.to_bits() == y.to_bits()), "differs from the GEMM of CPU-quantized activations");

    let (mut got, mut want) = (Vec::new(), Vec::new());
    let mut row = vec![0f32; n];
    for g in 0..groups {
        for r in 0..masked_m[g] as usize {
            let i = g * m_max + r;
            let ar: Vec<f32> = a[i * k..(i + 1) * k].iter().map(|v| v.to_f32()).collect();
            reference::gemm_nt_f32(&ar, &b[g * n * k..(g + 1) * n * k], 1, n, k, &mut row).unwrap();
            want.extend_from_slice(&row);
            got.extend_from_slice(&d[i * n..(i + 1) * n]);
        }
    }
    let diff = reference::calc_diff(&got, &want).unwrap();
    assert!(diff < 1e-3, "calc_diff over the valid rows {diff:e}");
    // Rows past each group's count stay untouched (zero).
    assert!(d[m_max * n..2 * m_max * n].iter().all(|v| v.to_bits() == 0));
}

/// Resources of every quantization kernel in both code objects: no spills, no scratch, no LDS,
/// the launch bound the host launches with, and at least 8 waves per SIMD by registers.
#[test]
fn quant_kernels_meet_the_resource_goals() {
    let specs: [(&str, u32); 10] = [
        (dq::QUANTIZE_ACT_BF16.name, dq::QUANTIZE_ACT_BF16.workgroup_size),
        (dq::QUANTIZE_ACT_F32.name, dq::QUANTIZE_ACT_F32.workgroup_size),
        (dq::QUANTIZE_ACT_MASKED_BF16.name, dq::QUANTIZE_ACT_MASKED_BF16.workgroup_size),
        (dq::QUANTIZE_ACT_MASKED_F32.name, dq::QUANTIZE_ACT_MASKED_F32.workgroup_size),
        (dq::QUANTIZE_ACT_SILU_MUL_BF16.name, dq::QUANTIZE_ACT_SILU_MUL_BF16.workgroup_size),
        (dq::QUANTIZE_ACT_SILU_MUL_F32.name, dq::QUANTIZE_ACT_SILU_MUL_F32.workgroup_size),
        (dq::QUANTIZE_ACT_SILU_MUL_MASKED_BF16.name, dq::QUANTIZE_ACT_SILU_MUL_MASKED_BF16.workgroup_size),
        (dq::QUANTIZE_ACT_SILU_MUL_MASKED_F32.name, dq::QUANTIZE_ACT_SILU_MUL_MASKED_F32.workgroup_size),
        (dq::QUANTIZE_WEIGHT_BF16.name, dq::QUANTIZE_WEIGHT_BF16.workgroup_size),
        (dq::QUANTIZE_WEIGHT_F32.name, dq::QUANTIZE_WEIGHT_F32.workgroup_size),
    ];
    for (arch, bytes) in [("gfx942", fp8gemm::codeobj::GFX942), ("gfx950", fp8gemm::codeobj::GFX950)] {
        let co = CodeObject::parse(bytes).expect("code object parses");
        for (name, wg) in specs {
            let k = co.kernel(name).unwrap_or_else(|| panic!("{arch}: {name} missing"));
            let m = &k.meta;
            let what = format!("{arch} {name}");
            assert_eq!((m.vgpr_spill_count, m.sgpr_spill_count), (0, 0), "{what}: spills");
            assert_eq!(m.private_segment_fixed_size, 0, "{what}: scratch");
            assert_eq!(m.group_segment_fixed_size, 0, "{what}: LDS");
            assert_eq!(m.max_flat_workgroup_size, wg, "{what}: launch bound");
            let regs = m.vgpr_count.div_ceil(8) * 8 + m.agpr_count;
            assert!(regs <= 64, "{what}: {regs} registers (8 waves/SIMD need ≤ 64)");
            eprintln!("{what}: vgpr {} agpr {} sgpr {}", m.vgpr_count, m.agpr_count, m.sgpr_count);
        }
    }
    assert_eq!(dq::ACT_THREADS, dq::QUANTIZE_ACT_BF16.workgroup_size);
    assert_eq!(dq::WEIGHT_THREADS, dq::QUANTIZE_WEIGHT_BF16.workgroup_size);
}
