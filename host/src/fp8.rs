//! 8-bit floating-point formats: the FNUZ pair that gfx942 (MI300) computes with and the OCP pair
//! that gfx950 (MI350) and most checkpoints (DeepSeek-V3) use.
//!
//! Every type is a `#[repr(transparent)]` wrapper around its bit pattern (`u8`), so slices of them
//! can be cast to and from bytes with [`bytemuck`] and copied to the device unchanged.
//!
//! | type         | bias | max    | min normal | min subnormal | NaN                | infinity      | −0  |
//! |--------------|------|--------|------------|---------------|--------------------|---------------|-----|
//! | [`E4M3Fnuz`] | 8    | 240    | 2⁻⁷        | 2⁻¹⁰          | `0x80` only        | none          | no  |
//! | [`E5M2Fnuz`] | 16   | 57344  | 2⁻¹⁵       | 2⁻¹⁷          | `0x80` only        | none          | no  |
//! | [`E4M3Fn`]   | 7    | 448    | 2⁻⁶        | 2⁻⁹           | `0x7F`, `0xFF`     | none          | yes |
//! | [`E5M2`]     | 15   | 57344  | 2⁻¹⁴       | 2⁻¹⁶          | exp = 31, mant ≠ 0 | `0x7C`,`0xFC` | yes |
//!
//! Decoding ([`Fp8Format::to_f32`]) is exact: every FP8 value is a normal `f32`.
//!
//! Encoding rounds to nearest, ties to even, and differs between the two variants only in what
//! happens to values whose rounded magnitude exceeds `MAX` and to infinities:
//!
//! | type         | NaN in        | overflow / ±∞, saturating | overflow / ±∞, non-saturating |
//! |--------------|---------------|---------------------------|-------------------------------|
//! | [`E4M3Fnuz`] | `0x80`        | ±240                      | `0x80` (NaN)                  |
//! | [`E5M2Fnuz`] | `0x80`        | ±57344                    | `0x80` (NaN)                  |
//! | [`E4M3Fn`]   | `0x7F`/`0xFF` | ±448                      | `0x7F`/`0xFF` (NaN, sign kept)|
//! | [`E5M2`]     | `0x7E`/`0xFE` | ±57344                    | ±∞ (`0x7C`/`0xFC`)            |
//!
//! "Overflow" means that rounding the magnitude to nearest-even on an unbounded exponent range
//! gives a value above `MAX`; e.g. for E4M3FN, 464 (the midpoint between 448 and the would-be 480)
//! rounds to 448 (even mantissa) while anything above 464 overflows. The saturating variant matches
//! CUDA's `__NV_SATFINITE` and CK's clamp-then-convert; the non-saturating one matches PyTorch's
//! `tensor.to(torch.float8_*)`. [`Fp8Format::from_f32`] is the saturating one.
//!
//! In the FNUZ formats the sign of zero is lost: −0.0 and negative values that round to zero encode
//! as `0x00` (the `0x80` pattern is NaN). The OCP formats keep the sign (`0x80` is −0).

use core::fmt;

use bytemuck::{Pod, Zeroable};

/// How a format uses its special bit patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Specials {
    /// "Finite, NaN = unsigned zero": `0x80` is the only NaN, no infinities, no negative zero.
    Fnuz,
    /// "Finite with NaN" (OCP E4M3): all-ones exponent and mantissa (`S.1111.111`) is NaN, no infinities.
    Fn,
    /// IEEE-754 style (OCP E5M2): all-ones exponent is infinity (mantissa 0) or NaN.
    Ieee,
}

/// What [`Fp8Format::from_f32_with`] does with magnitudes above `MAX` and with infinities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Overflow {
    /// Clamp to ±`MAX` (infinities too). NaN stays NaN.
    Saturate,
    /// Produce the format's overflow value: infinity for [`E5M2`], NaN for the others.
    NonSaturating,
}

mod sealed {
    pub trait Sealed {}
}

/// An 8-bit floating-point format. Implemented by [`E4M3Fnuz`], [`E5M2Fnuz`], [`E4M3Fn`] and [`E5M2`].
///
/// Quantization ([`crate::quant`]) and the CPU reference (`crate::reference`) are generic over it.
/// The trait is sealed: the reference and the kernels rely on the exact formats listed here.
pub trait Fp8Format: sealed::Sealed + Copy + Default + Pod + Send + Sync + fmt::Debug + 'static {
    /// The PyTorch dtype suffix of the format (`"e4m3fnuz"`, `"e5m2fnuz"`, `"e4m3fn"`, `"e5m2"`).
    const NAME: &'static str;
    /// Width of the exponent field in bits.
    const EXPONENT_BITS: u32;
    /// Width of the mantissa (trailing significand) field in bits.
    const MANTISSA_BITS: u32;
    /// Exponent bias: a normal number with exponent field `e` is `1.m × 2^(e − BIAS)`.
    const BIAS: i32;
    /// How the format uses its special bit patterns.
    const SPECIALS: Specials;
    /// Largest finite value.
    const MAX: f32;
    /// Smallest positive normal value, `2^(1 − BIAS)`.
    const MIN_POSITIVE: f32 = pow2(1 - Self::BIAS);
    /// Smallest positive subnormal value, `2^(1 − BIAS − MANTISSA_BITS)`.
    const MIN_POSITIVE_SUBNORMAL: f32 = pow2(1 - Self::BIAS - Self::MANTISSA_BITS as i32);
    /// The canonical NaN pattern (`0x80` for FNUZ, `0x7F` for E4M3FN, `0x7E` for E5M2).
    const NAN_BITS: u8;
    /// Exact `f32` value of every bit pattern (NaN patterns decode to an `f32` NaN of the same sign).
    const DECODE: [f32; 256] = decode_table(Self::EXPONENT_BITS, Self::MANTISSA_BITS, Self::BIAS, Self::SPECIALS);

    /// Wraps a bit pattern.
    fn from_bits(bits: u8) -> Self;
    /// The bit pattern.
    fn to_bits(self) -> u8;

    /// The exact value as `f32`.
    #[inline]
    fn to_f32(self) -> f32 {
        Self::DECODE[self.to_bits() as usize]
    }

    /// Whether this bit pattern is a NaN.
    #[inline]
    fn is_nan(self) -> bool {
        self.to_f32().is_nan()
    }

    /// Rounds to nearest, ties to even, saturating (see the module docs):
    /// the same as `from_f32_with(x, Overflow::Saturate)`.
    #[inline]
    fn from_f32(x: f32) -> Self {
        Self::from_f32_saturating(x)
    }

    /// Rounds to nearest-even; overflow and ±∞ clamp to ±`MAX`, NaN stays NaN.
    #[inline]
    fn from_f32_saturating(x: f32) -> Self {
        Self::from_f32_with(x, Overflow::Saturate)
    }

    /// Rounds to nearest-even; overflow and ±∞ give ±∞ for [`E5M2`] and NaN for the other formats.
    #[inline]
    fn from_f32_nonsaturating(x: f32) -> Self {
        Self::from_f32_with(x, Overflow::NonSaturating)
    }

    /// Rounds to nearest-even with the given overflow behaviour.
    #[inline]
    fn from_f32_with(x: f32, overflow: Overflow) -> Self {
        Self::from_bits(encode(x, overflow, Self::MANTISSA_BITS, Self::BIAS, Self::SPECIALS, Self::MAX, Self::NAN_BITS))
    }
}

/// `2^e` as an `f32`, for `-126 ≤ e ≤ 127`.
const fn pow2(e: i32) -> f32 {
    f32::from_bits(((e + 127) as u32) << 23)
}

/// The value of every bit pattern of a format, computed at compile time.
const fn decode_table(exp_bits: u32, man_bits: u32, bias: i32, specials: Specials) -> [f32; 256] {
    let mut table = [0.0f32; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = decode_bits(i as u8, exp_bits, man_bits, bias, specials);
        i += 1;
    }
    table
}

/// Exact value of one bit pattern.
const fn decode_bits(bits: u8, exp_bits: u32, man_bits: u32, bias: i32, specials: Specials) -> f32 {
    let negative = bits & 0x80 != 0;
    let exp_max = (1u32 << exp_bits) - 1;
    let exp = ((bits as u32) >> man_bits) & exp_max;
    let man = (bits as u32) & ((1u32 << man_bits) - 1);
    let sign_bit = if negative { 0x8000_0000u32 } else { 0 };
    let nan = f32::from_bits(0x7FC0_0000 | sign_bit);
    match specials {
        Specials::Fnuz if bits == 0x80 => return nan,
        Specials::Fn if bits & 0x7F == 0x7F => return nan,
        Specials::Ieee if exp == exp_max => {
            return if man == 0 { f32::from_bits(0x7F80_0000 | sign_bit) } else { nan };
        }
        _ => {}
    }
    // value = significand × 2^(scale), with the significand an integer below 2^(man_bits + 1).
    let (significand, scale) = if exp == 0 { (man, 1 - bias - man_bits as i32) } else { (man | (1u32 << man_bits), exp as i32 - bias - man_bits as i32) };
    let magnitude = significand as f32 * pow2(scale);
    if negative { -magnitude } else { magnitude }
}

/// Rounds `x` to nearest-even in a format described by its parameters and returns the bit pattern.
fn encode(x: f32, overflow: Overflow, man_bits: u32, bias: i32, specials: Specials, max: f32, nan_bits: u8) -> u8 {
    let sign: u8 = if x.is_sign_negative() { 0x80 } else { 0 };
    // Bit pattern of the largest finite magnitude (the format is monotonic in its low 7 bits).
    let max_bits = |sign: u8| -> u8 {
        match specials {
            Specials::Fnuz => 0x7F | sign,
            Specials::Fn => 0x7E | sign,
            // Exponent field 30, mantissa all ones.
            Specials::Ieee => (0x7C - 1) | sign,
        }
    };
    let nan = |sign: u8| -> u8 {
        match specials {
            Specials::Fnuz => nan_bits,
            Specials::Fn | Specials::Ieee => nan_bits | sign,
        }
    };
    let overflowed = |sign: u8| -> u8 {
        match (overflow, specials) {
            (Overflow::Saturate, _) => max_bits(sign),
            (Overflow::NonSaturating, Specials::Ieee) => 0x7C | sign,
            (Overflow::NonSaturating, _) => nan(sign),
        }
    };

    if x.is_nan() {
        return nan(sign);
    }
    let a = x.abs();
    // Anything at or above 2·MAX overflows in every format (covers ±∞ and keeps a / q finite).
    if a >= 2.0 * max {
        return overflowed(sign);
    }
    let emin = 1 - bias;
    // Exponent of `a` (f32 subnormals are far below every FP8 subnormal, so use emin for them).
    let e = if a >= f32::MIN_POSITIVE { ((a.to_bits() >> 23) as i32 - 127).max(emin) } else { emin };
    // Spacing of representable values around `a`; a / q and r are exact (power-of-two scaling).
    let q = pow2(e - man_bits as i32);
    let r = (a / q).round_ties_even() * q;
    if r > max {
        return overflowed(sign);
    }
    if r == 0.0 {
        return match specials {
            Specials::Fnuz => 0x00,
            Specials::Fn | Specials::Ieee => sign,
        };
    }
    let rb = r.to_bits();
    let re = (rb >> 23) as i32 - 127;
    let magnitude = if re < emin {
        // Subnormal: the mantissa counts multiples of the smallest subnormal.
        (r / pow2(emin - man_bits as i32)) as u8
    } else {
        let man = ((rb >> (23 - man_bits)) & ((1 << man_bits) - 1)) as u8;
        (((re + bias) as u8) << man_bits) | man
    };
    sign | magnitude
}

macro_rules! fp8_type {
    (
        $(#[$doc:meta])*
        $name:ident, $fmt_name:literal, exp = $e:literal, man = $m:literal, bias = $bias:literal,
        specials = $specials:expr, max = $max:literal, nan = $nan:literal
    ) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, Default, Pod, Zeroable)]
        pub struct $name(u8);

        impl $name {
            /// Wraps a bit pattern.
            #[inline]
            pub const fn from_bits(bits: u8) -> Self {
                Self(bits)
            }
            /// The bit pattern.
            #[inline]
            pub const fn to_bits(self) -> u8 {
                self.0
            }
            /// Positive zero.
            pub const ZERO: Self = Self(0);
            /// The canonical NaN.
            pub const NAN: Self = Self($nan);
            /// The largest finite value (its `f32` value is [`Fp8Format::MAX`]).
            pub const MAX_FINITE: Self = Self(match $specials {
                Specials::Fnuz => 0x7F,
                Specials::Fn => 0x7E,
                Specials::Ieee => 0x7B,
            });
        }

        impl sealed::Sealed for $name {}

        impl Fp8Format for $name {
            const NAME: &'static str = $fmt_name;
            const EXPONENT_BITS: u32 = $e;
            const MANTISSA_BITS: u32 = $m;
            const BIAS: i32 = $bias;
            const SPECIALS: Specials = $specials;
            const MAX: f32 = $max;
            const NAN_BITS: u8 = $nan;

            #[inline]
            fn from_bits(bits: u8) -> Self {
                Self(bits)
            }
            #[inline]
            fn to_bits(self) -> u8 {
                self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?} = {:#04x})", stringify!($name), Fp8Format::to_f32(*self), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&Fp8Format::to_f32(*self), f)
            }
        }

        impl From<$name> for f32 {
            #[inline]
            fn from(x: $name) -> f32 {
                Fp8Format::to_f32(x)
            }
        }
    };
}

fp8_type! {
    /// E4M3 FNUZ (bias 8, max 240, `0x80` = NaN, no infinities, no −0): the 4-bit-exponent format
    /// of gfx942's FP8 MFMA instructions (`fp8` operands).
    E4M3Fnuz, "e4m3fnuz", exp = 4, man = 3, bias = 8, specials = Specials::Fnuz, max = 240.0, nan = 0x80
}
fp8_type! {
    /// E5M2 FNUZ (bias 16, max 57344, `0x80` = NaN, no infinities, no −0): the 5-bit-exponent format
    /// of gfx942's FP8 MFMA instructions (`bf8` operands).
    E5M2Fnuz, "e5m2fnuz", exp = 5, man = 2, bias = 16, specials = Specials::Fnuz, max = 57344.0, nan = 0x80
}
fp8_type! {
    /// OCP E4M3 ("E4M3FN": bias 7, max 448, `0x7F`/`0xFF` = NaN, no infinities, has −0): gfx950's
    /// `fp8` format and the format of FP8 checkpoints such as DeepSeek-V3.
    E4M3Fn, "e4m3fn", exp = 4, man = 3, bias = 7, specials = Specials::Fn, max = 448.0, nan = 0x7F
}
fp8_type! {
    /// OCP E5M2 (bias 15, max 57344, IEEE-style ±∞ and NaNs, has −0): gfx950's `bf8` format.
    E5M2, "e5m2", exp = 5, man = 2, bias = 15, specials = Specials::Ieee, max = 57344.0, nan = 0x7E
}

/// Decodes a slice of FP8 values into a new vector of exact `f32` values (in parallel).
pub fn to_f32_vec<F: Fp8Format>(src: &[F]) -> Vec<f32> {
    use rayon::prelude::*;
    src.par_iter().map(|s| F::DECODE[s.to_bits() as usize]).collect()
}

/// The bit patterns of a slice of FP8 values (a free reinterpretation).
pub fn as_bits<F: Fp8Format>(src: &[F]) -> &[u8] {
    bytemuck::cast_slice(src)
}

/// A slice of bit patterns viewed as FP8 values (a free reinterpretation).
pub fn from_bits_slice<F: Fp8Format>(bits: &[u8]) -> &[F] {
    bytemuck::cast_slice(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spot_values() {
        assert_eq!(E4M3Fnuz::from_bits(0x7F).to_f32(), 240.0);
        assert!(E4M3Fnuz::from_bits(0x80).to_f32().is_nan());
        assert_eq!(E4M3Fn::from_bits(0x7E).to_f32(), 448.0);
        assert_eq!(E5M2Fnuz::from_bits(0x7F).to_f32(), 57344.0);
        assert_eq!(E5M2::from_bits(0x7B).to_f32(), 57344.0);
        assert_eq!(E5M2::from_bits(0x7C).to_f32(), f32::INFINITY);
        assert_eq!(<E4M3Fnuz as Fp8Format>::MIN_POSITIVE_SUBNORMAL, 2f32.powi(-10));
        assert_eq!(<E5M2Fnuz as Fp8Format>::MIN_POSITIVE, 2f32.powi(-15));
        assert_eq!(E4M3Fnuz::MAX_FINITE.to_f32(), 240.0);
        assert_eq!(E5M2::MAX_FINITE.to_f32(), 57344.0);
    }

    #[test]
    fn encode_specials() {
        assert_eq!(E4M3Fnuz::from_f32(-0.0).to_bits(), 0x00);
        assert_eq!(E4M3Fn::from_f32(-0.0).to_bits(), 0x80);
        assert_eq!(E4M3Fnuz::from_f32(1e9).to_bits(), 0x7F);
        assert_eq!(E4M3Fnuz::from_f32_nonsaturating(1e9).to_bits(), 0x80);
        assert_eq!(E5M2::from_f32_nonsaturating(-1e9).to_bits(), 0xFC);
        assert_eq!(E4M3Fn::from_f32_nonsaturating(f32::NEG_INFINITY).to_bits(), 0xFF);
        assert_eq!(E4M3Fn::from_f32(464.0).to_bits(), 0x7E);
        assert_eq!(E4M3Fn::from_f32_nonsaturating(464.1).to_bits(), 0x7F);
    }
}
