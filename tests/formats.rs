//! FP8 formats: every bit pattern of every format against an independent decoder written from the
//! format definitions, hand-checked spot values, and property tests of the encoder against a
//! brute-force nearest-value search.

use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz, E5M2, E5M2Fnuz, Fp8Format};
use proptest::prelude::*;

/// Special-value rules, restated from the format definitions (not taken from the library).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// NaN = 0x80 only; no infinities; no negative zero.
    Fnuz,
    /// NaN = S.1111.111; no infinities.
    OcpE4m3,
    /// IEEE-like: exponent all ones → ±inf (mantissa 0) or NaN.
    OcpE5m2,
}

/// A format's definition as written in its specification.
#[derive(Clone, Copy, Debug)]
struct Spec {
    exp_bits: u32,
    man_bits: u32,
    bias: i32,
    kind: Kind,
    /// Largest finite value.
    max: f64,
    /// Magnitudes at or above this overflow (above only, when `tie_to_max`).
    overflow_at: f64,
    /// Whether the exact midpoint `overflow_at` rounds down to `max` (max has an even mantissa).
    tie_to_max: bool,
    /// Has infinities.
    has_inf: bool,
}

const E4M3FNUZ: Spec = Spec { exp_bits: 4, man_bits: 3, bias: 8, kind: Kind::Fnuz, max: 240.0, overflow_at: 248.0, tie_to_max: false, has_inf: false };
const E5M2FNUZ: Spec = Spec { exp_bits: 5, man_bits: 2, bias: 16, kind: Kind::Fnuz, max: 57344.0, overflow_at: 61440.0, tie_to_max: false, has_inf: false };
const E4M3FN: Spec = Spec { exp_bits: 4, man_bits: 3, bias: 7, kind: Kind::OcpE4m3, max: 448.0, overflow_at: 464.0, tie_to_max: true, has_inf: false };
const E5M2_: Spec = Spec { exp_bits: 5, man_bits: 2, bias: 15, kind: Kind::OcpE5m2, max: 57344.0, overflow_at: 61440.0, tie_to_max: false, has_inf: true };

#[derive(Clone, Copy, Debug, PartialEq)]
enum Decoded {
    Nan,
    Inf(bool),
    /// Value and whether the sign bit is set (distinguishes −0).
    Num(f64, bool),
}

/// Decodes from the sign / exponent / mantissa fields with `f64` arithmetic.
fn independent_decode(spec: &Spec, bits: u8) -> Decoded {
    let neg = bits >> 7 == 1;
    let e = ((bits & 0x7F) >> spec.man_bits) as i32;
    let m = (bits as u32 & ((1 << spec.man_bits) - 1)) as f64;
    let all_ones_exp = (1 << spec.exp_bits) - 1;
    match spec.kind {
        Kind::Fnuz if bits == 0x80 => return Decoded::Nan,
        Kind::OcpE4m3 if e == all_ones_exp && m == 7.0 => return Decoded::Nan,
        Kind::OcpE5m2 if e == all_ones_exp => return if m == 0.0 { Decoded::Inf(neg) } else { Decoded::Nan },
        _ => {}
    }
    let frac = m / f64::from(1u32 << spec.man_bits);
    let mag = if e == 0 { frac * 2f64.powi(1 - spec.bias) } else { (1.0 + frac) * 2f64.powi(e - spec.bias) };
    Decoded::Num(if neg { -mag } else { mag }, neg)
}

fn check_all_patterns<F: Fp8Format>(spec: &Spec) {
    let (mut nans, mut infs, mut neg_zero) = (0, 0, 0);
    for bits in 0..=255u8 {
        let got = F::from_bits(bits).to_f32();
        assert_eq!(F::from_bits(bits).to_bits(), bits);
        match independent_decode(spec, bits) {
            Decoded::Nan => {
                nans += 1;
                assert!(got.is_nan(), "{} {bits:#04x}: expected NaN, got {got}", F::NAME);
                assert!(F::from_bits(bits).is_nan());
            }
            Decoded::Inf(neg) => {
                infs += 1;
                assert_eq!(got, if neg { f32::NEG_INFINITY } else { f32::INFINITY }, "{} {bits:#04x}", F::NAME);
            }
            Decoded::Num(v, neg) => {
                assert_eq!(got as f64, v, "{} {bits:#04x}", F::NAME);
                assert_eq!(got.is_sign_negative(), neg, "{} {bits:#04x}: sign", F::NAME);
                assert!(!F::from_bits(bits).is_nan());
                if v == 0.0 && neg {
                    neg_zero += 1;
                }
            }
        }
    }
    let (exp_nans, exp_infs, exp_neg_zero) = match spec.kind {
        Kind::Fnuz => (1, 0, 0),
        Kind::OcpE4m3 => (2, 0, 1),
        Kind::OcpE5m2 => (6, 2, 1),
    };
    assert_eq!((nans, infs, neg_zero), (exp_nans, exp_infs, exp_neg_zero), "{}", F::NAME);
    // The largest finite value is MAX, and the constants agree with the definition.
    let finite_max = (0..=255u8).map(|b| F::from_bits(b).to_f32()).filter(|v| v.is_finite()).fold(0.0f32, f32::max);
    assert_eq!(finite_max as f64, spec.max);
    assert_eq!(F::MAX as f64, spec.max);
    assert_eq!(F::EXPONENT_BITS, spec.exp_bits);
    assert_eq!(F::MANTISSA_BITS, spec.man_bits);
    assert_eq!(F::BIAS, spec.bias);
    assert_eq!(F::MIN_POSITIVE as f64, 2f64.powi(1 - spec.bias));
    assert_eq!(F::MIN_POSITIVE_SUBNORMAL as f64, 2f64.powi(1 - spec.bias - spec.man_bits as i32));
    assert!(F::from_bits(F::NAN_BITS).is_nan());
}

#[test]
fn all_patterns_e4m3fnuz() {
    check_all_patterns::<E4M3Fnuz>(&E4M3FNUZ);
}
#[test]
fn all_patterns_e5m2fnuz() {
    check_all_patterns::<E5M2Fnuz>(&E5M2FNUZ);
}
#[test]
fn all_patterns_e4m3fn() {
    check_all_patterns::<E4M3Fn>(&E4M3FN);
}
#[test]
fn all_patterns_e5m2() {
    check_all_patterns::<E5M2>(&E5M2_);
}

#[test]
fn hand_checked_values() {
    let v = |b: u8| E4M3Fnuz::from_bits(b).to_f32();
    assert_eq!(v(0x7F), 240.0);
    assert!(v(0x80).is_nan());
    assert_eq!(v(0x40), 1.0); // exponent 8 = bias
    assert_eq!(v(0x08), 2f32.powi(-7)); // smallest normal
    assert_eq!(v(0x01), 2f32.powi(-10)); // smallest subnormal
    assert_eq!(v(0x07), 7.0 * 2f32.powi(-10)); // largest subnormal
    assert_eq!(v(0xC4), -1.5);
    let v = |b: u8| E4M3Fn::from_bits(b).to_f32();
    assert_eq!(v(0x7E), 448.0);
    assert!(v(0x7F).is_nan() && v(0xFF).is_nan());
    assert_eq!(v(0x38), 1.0);
    assert_eq!(v(0x01), 2f32.powi(-9));
    assert_eq!(v(0x80).to_bits(), (-0.0f32).to_bits());
    assert_eq!(v(0xFE), -448.0);
    let v = |b: u8| E5M2Fnuz::from_bits(b).to_f32();
    assert_eq!(v(0x7F), 57344.0);
    assert!(v(0x80).is_nan());
    assert_eq!(v(0x40), 1.0);
    assert_eq!(v(0x01), 2f32.powi(-17));
    assert_eq!(v(0xFF), -57344.0);
    let v = |b: u8| E5M2::from_bits(b).to_f32();
    assert_eq!(v(0x7B), 57344.0);
    assert_eq!(v(0x7C), f32::INFINITY);
    assert_eq!(v(0xFC), f32::NEG_INFINITY);
    assert!(v(0x7D).is_nan() && v(0x7E).is_nan() && v(0x7F).is_nan() && v(0xFD).is_nan());
    assert_eq!(v(0x3C), 1.0);
    assert_eq!(v(0x01), 2f32.powi(-16));
    // The same bits are worth half as much in E4M3FNUZ as in E4M3FN.
    for b in (0..=255u8).filter(|b| b & 0x7F != 0x7F && *b != 0x80) {
        assert_eq!(E4M3Fnuz::from_bits(b).to_f32() * 2.0, E4M3Fn::from_bits(b).to_f32());
    }
    // Names and byte casts.
    assert_eq!((E4M3Fnuz::NAME, E5M2Fnuz::NAME, E4M3Fn::NAME, E5M2::NAME), ("e4m3fnuz", "e5m2fnuz", "e4m3fn", "e5m2"));
    let xs: &[E4M3Fnuz] = fp8gemm::fp8::from_bits_slice(&[0x40, 0x7F]);
    assert_eq!(xs[1].to_f32(), 240.0);
    assert_eq!(fp8gemm::fp8::as_bits(xs), &[0x40, 0x7F]);
}

#[test]
fn encode_specials_and_saturation() {
    // NaN in → the format's NaN, in both modes.
    for x in [f32::NAN, -f32::NAN] {
        assert_eq!(E4M3Fnuz::from_f32(x).to_bits(), 0x80);
        assert_eq!(E5M2Fnuz::from_f32_nonsaturating(x).to_bits(), 0x80);
        assert!(E4M3Fn::from_f32(x).is_nan());
        assert!(E5M2::from_f32_nonsaturating(x).is_nan());
    }
    // Infinities and overflow.
    assert_eq!(E4M3Fnuz::from_f32(f32::INFINITY).to_bits(), 0x7F);
    assert_eq!(E4M3Fnuz::from_f32(f32::NEG_INFINITY).to_bits(), 0xFF);
    assert_eq!(E4M3Fnuz::from_f32_nonsaturating(f32::INFINITY).to_bits(), 0x80);
    assert_eq!(E4M3Fnuz::from_f32_nonsaturating(248.0).to_bits(), 0x80); // tie above odd 240 → overflow
    assert_eq!(E4M3Fnuz::from_f32_nonsaturating(247.9).to_bits(), 0x7F);
    assert_eq!(E4M3Fn::from_f32_nonsaturating(464.0).to_bits(), 0x7E); // tie to even 448
    assert_eq!(E4M3Fn::from_f32_nonsaturating(-465.0).to_bits(), 0xFF);
    assert_eq!(E4M3Fn::from_f32_saturating(-1e30).to_bits(), 0xFE);
    assert_eq!(E5M2::from_f32_nonsaturating(61440.0).to_bits(), 0x7C);
    assert_eq!(E5M2::from_f32_nonsaturating(f32::NEG_INFINITY).to_bits(), 0xFC);
    assert_eq!(E5M2::from_f32_saturating(f32::INFINITY).to_bits(), 0x7B);
    assert_eq!(E5M2Fnuz::from_f32_saturating(-1e6).to_bits(), 0xFF);
    assert_eq!(E5M2Fnuz::from_f32_nonsaturating(1e6).to_bits(), 0x80);
    // Zero signs.
    assert_eq!(E4M3Fnuz::from_f32(-0.0).to_bits(), 0x00);
    assert_eq!(E5M2Fnuz::from_f32(-1e-30).to_bits(), 0x00);
    assert_eq!(E4M3Fn::from_f32(-0.0).to_bits(), 0x80);
    assert_eq!(E5M2::from_f32(-1e-30).to_bits(), 0x80);
    // Subnormal ties: half the smallest subnormal rounds to zero (even), 1.5× rounds to 2 (even).
    let s = 2f32.powi(-10);
    assert_eq!(E4M3Fnuz::from_f32(0.5 * s).to_bits(), 0x00);
    assert_eq!(E4M3Fnuz::from_f32(0.5001 * s).to_bits(), 0x01);
    assert_eq!(E4M3Fnuz::from_f32(1.5 * s).to_bits(), 0x02);
    assert_eq!(E4M3Fnuz::from_f32(2.5 * s).to_bits(), 0x02);
    // Normal ties: 1 + 1/16 lies between 1 (0x40) and 1.125 (0x41) → 1; 1 + 3/16 → 1.25 (0x42).
    assert_eq!(E4M3Fnuz::from_f32(1.0625).to_bits(), 0x40);
    assert_eq!(E4M3Fnuz::from_f32(1.1875).to_bits(), 0x42);
}

/// The expected encoding: brute-force nearest finite value (ties to the even bit pattern), with the
/// overflow rule and sign-of-zero rule of the spec.
fn expected_encoding(spec: &Spec, x: f32, saturate: bool) -> Decoded {
    if x.is_nan() {
        return Decoded::Nan;
    }
    let neg = x.is_sign_negative();
    let a = (x as f64).abs();
    let overflows = a > spec.overflow_at || (a == spec.overflow_at && !spec.tie_to_max);
    if overflows {
        return if saturate {
            Decoded::Num(if neg { -spec.max } else { spec.max }, neg)
        } else if spec.has_inf {
            Decoded::Inf(neg)
        } else {
            Decoded::Nan
        };
    }
    let mut best: Option<(f64, u8)> = None;
    for bits in 0..=127u8 {
        if let Decoded::Num(v, _) = independent_decode(spec, bits) {
            let d = (v - a).abs();
            best = match best {
                Some((bd, bb)) if bd < d || (bd == d && bb & 1 == 0) => Some((bd, bb)),
                _ => Some((d, bits)),
            };
        }
    }
    let (_, bits) = best.expect("formats have finite values");
    let Decoded::Num(v, _) = independent_decode(spec, bits) else { unreachable!() };
    if v == 0.0 {
        // FNUZ has no −0.
        return Decoded::Num(0.0, neg && spec.kind != Kind::Fnuz);
    }
    Decoded::Num(if neg { -v } else { v }, neg)
}

fn check_encode<F: Fp8Format>(spec: &Spec, x: f32) -> Result<(), TestCaseError> {
    for saturate in [true, false] {
        let got = if saturate { F::from_f32_saturating(x) } else { F::from_f32_nonsaturating(x) };
        let got_v = got.to_f32();
        match expected_encoding(spec, x, saturate) {
            Decoded::Nan => prop_assert!(got_v.is_nan(), "{} {x:e} sat={saturate}: got {got_v}", F::NAME),
            Decoded::Inf(neg) => prop_assert_eq!(got_v, if neg { f32::NEG_INFINITY } else { f32::INFINITY }),
            Decoded::Num(v, neg) => {
                prop_assert_eq!(got_v as f64, v, "{} {:e} sat={}", F::NAME, x, saturate);
                prop_assert_eq!(got_v.is_sign_negative(), neg, "{} {:e}: sign of {}", F::NAME, x, got_v);
            }
        }
    }
    // `from_f32` is the saturating conversion.
    prop_assert_eq!(F::from_f32(x).to_bits(), F::from_f32_saturating(x).to_bits());
    Ok(())
}

/// Values that stress the encoder: arbitrary f32 bit patterns, values in range, exact midpoints
/// between neighbouring FP8 values (ties), and magnitudes around the subnormal range.
fn interesting(spec: Spec) -> impl Strategy<Value = f32> {
    let max = spec.max as f32;
    let finite: Vec<f32> = (0..=255u8)
        .filter_map(|b| match independent_decode(&spec, b) {
            Decoded::Num(v, _) => Some(v as f32),
            _ => None,
        })
        .collect();
    let mut sorted = finite.clone();
    sorted.sort_by(f32::total_cmp);
    sorted.dedup();
    let mids: Vec<f32> = sorted.windows(2).map(|w| (w[0] + w[1]) / 2.0).collect();
    let mids_len = mids.len();
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        (-1.3f32 * max..1.3 * max),
        (0..mids_len, any::<bool>()).prop_map(move |(i, n)| if n { -mids[i] } else { mids[i] }),
        (-30i32..6, -1.0f32..1.0).prop_map(|(e, f)| f * 2f32.powi(e)),
        (0..finite.len(), -1e-3f32..1e-3).prop_map(move |(i, r)| finite[i] * (1.0 + r)),
        Just(spec.overflow_at as f32),
        Just(-(spec.overflow_at as f32)),
    ]
}

fn check_monotonic<F: Fp8Format>(x: f32, y: f32) -> Result<(), TestCaseError> {
    let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
    for f in [F::from_f32_saturating, F::from_f32_nonsaturating] {
        let (a, b) = (f(lo).to_f32(), f(hi).to_f32());
        if !a.is_nan() && !b.is_nan() {
            prop_assert!(a <= b, "{}: {lo:e} → {a}, {hi:e} → {b}", F::NAME);
        }
    }
    Ok(())
}

fn check_round_trip<F: Fp8Format>() {
    for bits in 0..=255u8 {
        let v = F::from_bits(bits).to_f32();
        if v.is_nan() {
            continue;
        }
        assert_eq!(F::from_f32_nonsaturating(v).to_bits(), bits, "{} {bits:#04x}", F::NAME);
        if v.is_finite() {
            assert_eq!(F::from_f32_saturating(v).to_bits(), bits, "{} {bits:#04x}", F::NAME);
        }
    }
}

#[test]
fn round_trip_of_every_representable_value() {
    check_round_trip::<E4M3Fnuz>();
    check_round_trip::<E5M2Fnuz>();
    check_round_trip::<E4M3Fn>();
    check_round_trip::<E5M2>();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn encode_e4m3fnuz(x in interesting(E4M3FNUZ)) { check_encode::<E4M3Fnuz>(&E4M3FNUZ, x)?; }
    #[test]
    fn encode_e5m2fnuz(x in interesting(E5M2FNUZ)) { check_encode::<E5M2Fnuz>(&E5M2FNUZ, x)?; }
    #[test]
    fn encode_e4m3fn(x in interesting(E4M3FN)) { check_encode::<E4M3Fn>(&E4M3FN, x)?; }
    #[test]
    fn encode_e5m2(x in interesting(E5M2_)) { check_encode::<E5M2>(&E5M2_, x)?; }

    #[test]
    fn monotonic(x in interesting(E5M2FNUZ), y in interesting(E5M2FNUZ)) {
        check_monotonic::<E4M3Fnuz>(x, y)?;
        check_monotonic::<E5M2Fnuz>(x, y)?;
        check_monotonic::<E4M3Fn>(x, y)?;
        check_monotonic::<E5M2>(x, y)?;
    }
}
