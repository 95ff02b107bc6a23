//! FP8 (E4M3) and BF8 (E5M2) formats, FNUZ (gfx942) and OCP (gfx950), and the gfx942 conversion
//! instructions `v_cvt_f32_{fp8,bf8}`, `v_cvt_pk_f32_{fp8,bf8}`, `v_cvt_pk_{fp8,bf8}_f32` and
//! `v_cvt_sr_{fp8,bf8}_f32`.
//!
//! # Formats
//! | kind | exp/man bits | bias | max finite | specials |
//! |---|---|---|---|---|
//! | [`F8Kind::Fp8Fnuz`] (E4M3FNUZ) | 4/3 | 8 | 240 (`0x7F`) | `0x80` NaN, no −0, no ∞ |
//! | [`F8Kind::Bf8Fnuz`] (E5M2FNUZ) | 5/2 | 16 | 57344 (`0x7F`) | `0x80` NaN, no −0, no ∞ |
//! | [`F8Kind::Fp8Ocp`] (OCP E4M3FN) | 4/3 | 7 | 448 (`0x7E`) | `0x7F`/`0xFF` NaN, ±0, no ∞ |
//! | [`F8Kind::Bf8Ocp`] (OCP E5M2) | 5/2 | 15 | 57344 (`0x7B`) | `0x7C`/`0xFC` ±∞, exp 31 man≠0 NaN, ±0 |
//!
//! Subnormals (exponent field 0) exist in all four and are converted exactly in both directions.
//!
//! # Conversion model (f32 → f8)
//! The conversion is defined on the exact value of the f32 input (f32 subnormal inputs are not
//! flushed; they simply round to zero or the smallest subnormal). With `q` the quantum (one unit in
//! the last place) of the f8 binade containing `|x|` (the subnormal quantum `2^(1-bias-m)` below the
//! normal range):
//! * **round to nearest even** (`v_cvt_pk_*`): `|x|/q` is rounded to an integer, ties to even.
//!   Rounding happens *before* the range check, as if the exponent were unbounded, so E4M3FN 464
//!   (halfway between 448 and the non-existent 480) rounds to 448, while E4M3FNUZ 248 (halfway
//!   between 240, odd mantissa, and 256) rounds up and overflows.
//! * **stochastic** (`v_cvt_sr_*`): `|x|` is first truncated to a multiple of `q·2^-D` where
//!   `D = 23 − m` (20 for E4M3, 21 for E5M2: the f32 mantissa bits below the f8 mantissa of a
//!   normal result), the low `D` bits of the random operand are added in those units, and the sum
//!   is truncated to a multiple of `q`. Round-up probability is therefore the dropped fraction
//!   (quantised to 2^-D). This is the algorithm of AMD's host reference
//!   (composable_kernel `f8_utils.hpp`, `run_cast_to_f8` with `stoch`; HIP's FNUZ host fallback
//!   has the same form), including its truncation of bits below `q·2^-D` for subnormal results.
//!   **Model / known uncertainty**: which random bits the gfx942 hardware consumes is not
//!   documented. All FNUZ host references (CK, HIP, MIOpen, rocBLAS) add the *low* bits
//!   (`rng & drop_mask`; rocBLAS/MIOpen widen the mask for subnormal results instead of
//!   pre-truncating), whereas AMD's newer OCP-format models — HIP's `amd_hip_ocp_host.hpp`
//!   fallback as mirrored by the rocjitsu emulator, and the gfx1250 comgr patch in
//!   ROCm/llvm-project PR #3275 ("matching the ISA's stochastic rounding behavior") — add the
//!   *high* bits (`rnd >> (32 − D)`). The round-up probability is the same either way; only the
//!   exact mapping from a given `rnd` to the result differs. Our kernels do not use SR.
//! * **overflow** (a rounded magnitude above the max finite value) and **infinite inputs**:
//!   without clamp, FNUZ gives NaN `0x80` (ROCm/rocm-systems issue #9556: on gfx942
//!   `v_cvt_pk_fp8_f32` "rounds; [it does] not saturate", a finite overflow becomes NaN; AMD's HIP
//!   headers therefore `fmed3`-clamp to ±240 before converting and pass NaN/∞ through unclamped),
//!   OCP E4M3 gives NaN `S.1111.111`, OCP E5M2 gives ±∞. The `clamp` parameter models the VOP3
//!   clamp bit as saturation to ±max finite. **Model**: no public source describes it, and the
//!   bit does not occur in code we run: LLVM never sets it for these instructions, and the
//!   pinned LLVM 22 disassembler rejects `v_cvt_pk_fp8_f32`/`v_cvt_sr_fp8_f32` encodings with
//!   bit 15 set for both gfx942 and gfx950 (checked by patching `D2A24000` → `D2A2C000` in an
//!   `llc` output and running `llvm-objdump --mcpu=gfx942`), so a decoder may as well treat it
//!   as an invalid encoding.
//! * **NaN inputs** give the NaN encoding (`0x80` FNUZ; `S.1111.111` OCP E4M3; `S.11111.11` OCP
//!   E5M2) with or without clamp.
//! * **zero**: FNUZ has no −0, so ±0 and anything rounding to zero give `0x00`; OCP keeps the sign.
//!
//! # Decode model (f8 → f32)
//! Exact (every f8 value is an f32 normal number). NaN encodings decode to the canonical quiet NaN
//! `0x7FC0_0000` (**Model**: the payload/sign of the NaN the hardware writes is not documented).

/// One of the four 8-bit floating point encodings. gfx942 decodes the FNUZ kinds; gfx950 uses the
/// OCP kinds for the same instruction names (`fp8` = E4M3, `bf8` = E5M2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum F8Kind {
    /// E4M3FNUZ: bias 8, max 240, `0x80` = NaN, no −0, no infinity (gfx942 `fp8`).
    Fp8Fnuz,
    /// E5M2FNUZ: bias 16, max 57344, `0x80` = NaN, no −0, no infinity (gfx942 `bf8`).
    Bf8Fnuz,
    /// OCP E4M3FN: bias 7, max 448, `0x7F`/`0xFF` = NaN, has −0, no infinity (gfx950 `fp8`).
    Fp8Ocp,
    /// OCP E5M2: bias 15, max 57344, IEEE-like ±infinity and NaNs, has −0 (gfx950 `bf8`).
    Bf8Ocp,
}

/// The canonical quiet NaN produced when an f8 NaN is widened.
const F32_CANONICAL_NAN: u32 = 0x7FC0_0000;

impl F8Kind {
    /// All four kinds, in declaration order.
    pub const ALL: [F8Kind; 4] = [F8Kind::Fp8Fnuz, F8Kind::Bf8Fnuz, F8Kind::Fp8Ocp, F8Kind::Bf8Ocp];

    /// The `fp8` (E4M3) kind of a target: FNUZ on gfx942 (`ocp == false`), OCP on gfx950.
    pub const fn fp8(ocp: bool) -> F8Kind {
        if ocp { F8Kind::Fp8Ocp } else { F8Kind::Fp8Fnuz }
    }

    /// The `bf8` (E5M2) kind of a target: FNUZ on gfx942 (`ocp == false`), OCP on gfx950.
    pub const fn bf8(ocp: bool) -> F8Kind {
        if ocp { F8Kind::Bf8Ocp } else { F8Kind::Bf8Fnuz }
    }

    /// Number of exponent bits (4 for E4M3, 5 for E5M2).
    pub const fn exponent_bits(self) -> u32 {
        match self {
            F8Kind::Fp8Fnuz | F8Kind::Fp8Ocp => 4,
            F8Kind::Bf8Fnuz | F8Kind::Bf8Ocp => 5,
        }
    }

    /// Number of explicit mantissa bits (3 for E4M3, 2 for E5M2).
    pub const fn mantissa_bits(self) -> u32 {
        7 - self.exponent_bits()
    }

    /// Exponent bias.
    pub const fn bias(self) -> i32 {
        match self {
            F8Kind::Fp8Fnuz => 8,
            F8Kind::Bf8Fnuz => 16,
            F8Kind::Fp8Ocp => 7,
            F8Kind::Bf8Ocp => 15,
        }
    }

    /// Whether this is one of the FNUZ encodings (single NaN `0x80`, no −0, no infinity).
    pub const fn is_fnuz(self) -> bool {
        matches!(self, F8Kind::Fp8Fnuz | F8Kind::Bf8Fnuz)
    }

    /// Encoding of the largest positive finite value (`0x7F`, `0x7F`, `0x7E`, `0x7B`).
    pub const fn max_finite_bits(self) -> u8 {
        match self {
            F8Kind::Fp8Fnuz | F8Kind::Bf8Fnuz => 0x7F,
            F8Kind::Fp8Ocp => 0x7E,
            F8Kind::Bf8Ocp => 0x7B,
        }
    }

    /// Largest finite value (240, 57344, 448, 57344).
    pub fn max_finite(self) -> f32 {
        f8_to_f32(self.max_finite_bits(), self)
    }

    /// The NaN encoding the conversions produce for a value of the given sign (`0x80` for FNUZ).
    pub const fn nan_bits(self, negative: bool) -> u8 {
        match self {
            F8Kind::Fp8Fnuz | F8Kind::Bf8Fnuz => 0x80,
            F8Kind::Fp8Ocp | F8Kind::Bf8Ocp => 0x7F | ((negative as u8) << 7),
        }
    }

    /// Whether `bits` encodes a NaN in this kind.
    pub const fn is_nan_bits(self, bits: u8) -> bool {
        match self {
            F8Kind::Fp8Fnuz | F8Kind::Bf8Fnuz => bits == 0x80,
            F8Kind::Fp8Ocp => bits & 0x7F == 0x7F,
            F8Kind::Bf8Ocp => bits & 0x7C == 0x7C && bits & 0x03 != 0,
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// Field-level decode used to build the tables: returns the f32 bit pattern of `bits`.
const fn decode_to_f32_bits(bits: u8, kind: F8Kind) -> u32 {
    let b = bits as u32;
    let sign = (b >> 7) << 31;
    let man_bits = kind.mantissa_bits();
    let exp_bits = kind.exponent_bits();
    let exp = (b >> man_bits) & ((1 << exp_bits) - 1);
    let man = b & ((1 << man_bits) - 1);
    match kind {
        F8Kind::Fp8Fnuz | F8Kind::Bf8Fnuz => {
            if bits == 0x80 {
                return F32_CANONICAL_NAN;
            }
        }
        F8Kind::Fp8Ocp => {
            if b & 0x7F == 0x7F {
                return F32_CANONICAL_NAN;
            }
        }
        F8Kind::Bf8Ocp => {
            if exp == 31 {
                return if man == 0 { sign | 0x7F80_0000 } else { F32_CANONICAL_NAN };
            }
        }
    }
    if exp == 0 {
        if man == 0 {
            return sign; // ±0 (FNUZ 0x80 was handled above)
        }
        // Subnormal: man · 2^(1 − bias − m). Normalise so the leading one becomes implicit.
        let mut e = 1 - kind.bias();
        let mut m = man;
        while m & (1 << man_bits) == 0 {
            m <<= 1;
            e -= 1;
        }
        m &= (1 << man_bits) - 1;
        return sign | (((e + 127) as u32) << 23) | (m << (23 - man_bits));
    }
    let e = exp as i32 - kind.bias();
    sign | (((e + 127) as u32) << 23) | (man << (23 - man_bits))
}

const fn build_tables() -> [[u32; 256]; 4] {
    let mut t = [[0u32; 256]; 4];
    let mut k = 0;
    while k < 4 {
        let kind = F8Kind::ALL[k];
        let mut b = 0;
        while b < 256 {
            t[k][b] = decode_to_f32_bits(b as u8, kind);
            b += 1;
        }
        k += 1;
    }
    t
}

/// f32 bit patterns of all 256 encodings of each kind, indexed `[kind as usize][bits]`.
static DECODE_TABLES: [[u32; 256]; 4] = build_tables();

/// Decoded values of all 256 encodings of `kind` (index = encoding), as f32 bit patterns.
/// This is the table the MFMA operand decode uses.
pub fn decode_table_bits(kind: F8Kind) -> &'static [u32; 256] {
    &DECODE_TABLES[kind.index()]
}

/// Exact value of the 8-bit encoding `bits` of `kind` (table lookup). NaN encodings give the
/// canonical quiet NaN `0x7FC0_0000`; OCP E5M2 `0x7C`/`0xFC` give ±∞; FNUZ `0x7F` E4M3 = 240.
#[inline]
pub fn f8_to_f32(bits: u8, kind: F8Kind) -> f32 {
    f32::from_bits(DECODE_TABLES[kind.index()][bits as usize])
}

/// 2^e as f64 for −1022 ≤ e ≤ 1023.
#[inline]
fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// How a finite non-zero magnitude is rounded to the f8 grid.
#[derive(Clone, Copy)]
enum Rounding {
    NearestEven,
    Stochastic(u32),
}

/// Shared f32 → f8 conversion (see the module documentation for the model).
fn encode(x: f32, kind: F8Kind, clamp: bool, rounding: Rounding) -> u8 {
    let negative = x.is_sign_negative();
    let sign = (negative as u8) << 7;
    if x.is_nan() {
        return kind.nan_bits(negative);
    }
    let overflow = || -> u8 {
        if clamp {
            sign | kind.max_finite_bits()
        } else {
            match kind {
                F8Kind::Fp8Fnuz | F8Kind::Bf8Fnuz => 0x80,
                F8Kind::Fp8Ocp => sign | 0x7F,
                F8Kind::Bf8Ocp => sign | 0x7C,
            }
        }
    };
    if x.is_infinite() {
        return overflow();
    }
    let zero = if kind.is_fnuz() { 0x00 } else { sign };
    if x == 0.0 {
        return zero;
    }
    let a = f64::from(x.abs()); // exact; every f32 (subnormals too) is an f64 normal number
    let m = kind.mantissa_bits() as i32;
    let e_min = 1 - kind.bias(); // exponent of the smallest normal
    let e = ((a.to_bits() >> 52) & 0x7FF) as i32 - 1023; // floor(log2(a))
    let q_exp = e.max(e_min) - m; // log2 of the quantum of a's binade (subnormal quantum below)
    // Number of quanta after rounding (≤ 2^(m+1)).
    let r: u64 = match rounding {
        Rounding::NearestEven => (a * pow2(-q_exp)).round_ties_even() as u64,
        Rounding::Stochastic(rnd) => {
            let d = 23 - m;
            // Truncate to units of q·2^-d (exact scaling; floor drops bits below the unit).
            let t = (a * pow2(d - q_exp)).floor() as u64;
            (t + u64::from(rnd & ((1u32 << d) - 1))) >> d
        }
    };
    if r == 0 {
        return zero;
    }
    let magnitude = r as f64 * pow2(q_exp);
    if magnitude > f64::from(kind.max_finite()) {
        return overflow();
    }
    // Re-encode r · 2^q_exp.
    let implicit = 1u64 << m;
    let (exp_field, man) = if r < implicit {
        (0, r) // subnormal (only possible when q_exp is the subnormal quantum)
    } else if r == implicit << 1 {
        (q_exp + m + 1 + kind.bias(), 0) // rounded up into the next binade
    } else {
        (q_exp + m + kind.bias(), r - implicit)
    };
    debug_assert!(exp_field >= 0 && exp_field < (1 << kind.exponent_bits()));
    sign | ((exp_field as u8) << m) | man as u8
}

/// f32 → f8 with round to nearest even, as `v_cvt_pk_{fp8,bf8}_f32` converts each source.
/// `clamp` is the VOP3 clamp bit: saturate overflow and ±∞ to ±max finite instead of producing
/// NaN (FNUZ, OCP E4M3) or ±∞ (OCP E5M2). See the module documentation for the full model.
pub fn f32_to_f8_rne(x: f32, kind: F8Kind, clamp: bool) -> u8 {
    encode(x, kind, clamp, Rounding::NearestEven)
}

/// f32 → f8 with stochastic rounding by the random bits `rnd`, as `v_cvt_sr_{fp8,bf8}_f32`:
/// the low `23 − m` bits of `rnd` (20 for E4M3, 21 for E5M2) are added below the kept mantissa
/// and the result truncated (composable_kernel `f8_utils.hpp` model; `rnd = 0` truncates toward
/// zero). Overflow, NaN, ∞ and `clamp` behave as in [`f32_to_f8_rne`].
pub fn f32_to_f8_sr(x: f32, rnd: u32, kind: F8Kind, clamp: bool) -> u8 {
    encode(x, kind, clamp, Rounding::Stochastic(rnd))
}

/// `v_cvt_f32_fp8` / `v_cvt_f32_bf8`: widen byte `byte_sel` (0..=3; only the low 2 bits are used)
/// of `src`. On gfx942 the byte comes from the SDWA `src0_sel` (BYTE_0..3; `llc -mcpu=gfx942`
/// emits `v_cvt_f32_fp8_sdwa v2, v0 src0_sel:BYTE_3` for `llvm.amdgcn.cvt.f32.fp8(x, 3)`); the
/// plain VOP1/VOP3 forms convert byte 0.
pub fn cvt_f32_f8(src: u32, byte_sel: u32, kind: F8Kind) -> f32 {
    f8_to_f32((src >> (8 * (byte_sel & 3))) as u8, kind)
}

/// `v_cvt_pk_f32_fp8` / `v_cvt_pk_f32_bf8`: widen the two bytes of the low (`word_sel_hi ==
/// false`) or high 16-bit half of `src` (gfx942: SDWA `src0_sel` WORD_1 selects the high half,
/// as `llc` emits for `llvm.amdgcn.cvt.pk.f32.fp8(x, true)`; plain VOP1 = low half).
/// Returns `[byte 2w, byte 2w+1]`: element 0 goes to `vdst`, element 1 to `vdst+1`.
pub fn cvt_pk_f32_f8(src: u32, word_sel_hi: bool, kind: F8Kind) -> [f32; 2] {
    let half = if word_sel_hi { src >> 16 } else { src };
    [f8_to_f32(half as u8, kind), f8_to_f32((half >> 8) as u8, kind)]
}

/// `v_cvt_pk_fp8_f32` / `v_cvt_pk_bf8_f32 vdst, a, b`: convert `a` and `b` with round to nearest
/// even ([`f32_to_f8_rne`]) and write `a` to byte 0 and `b` to byte 1 of the low 16-bit half
/// (`word_sel_hi == false`) or high half (`word_sel_hi`: VOP3 `op_sel[3]`, encoding bit 14,
/// printed `op_sel:[0,0,1]`) of the old `vdst`
/// value `old`; the other half keeps `old`'s bits (LLVM ties `vdst` to `vdst_in`). Source
/// modifiers (neg/abs) must be applied by the caller.
pub fn cvt_pk_f8_f32(a: f32, b: f32, old: u32, word_sel_hi: bool, clamp: bool, kind: F8Kind) -> u32 {
    let packed = u32::from(f32_to_f8_rne(a, kind, clamp)) | (u32::from(f32_to_f8_rne(b, kind, clamp)) << 8);
    if word_sel_hi { (old & 0x0000_FFFF) | (packed << 16) } else { (old & 0xFFFF_0000) | packed }
}

/// `v_cvt_sr_fp8_f32` / `v_cvt_sr_bf8_f32 vdst, x, rnd`: convert `x` with stochastic rounding by
/// `rnd` ([`f32_to_f8_sr`]) and write the byte into byte `byte_sel` (0..=3, VOP3 `op_sel[3:2]`,
/// encoding bits 14:13, e.g. byte 2 is printed `op_sel:[0,0,0,1]`;
/// only the low 2 bits are used) of the old `vdst` value `old`; the other three bytes keep `old`'s
/// bits (LLVM ties `vdst` to the dummy `src2`).
pub fn cvt_sr_f8_f32(x: f32, rnd: u32, old: u32, byte_sel: u32, clamp: bool, kind: F8Kind) -> u32 {
    let shift = 8 * (byte_sel & 3);
    (old & !(0xFFu32 << shift)) | (u32::from(f32_to_f8_sr(x, rnd, kind, clamp)) << shift)
}

/// The power of two a gfx950 `v_cvt_scalef32_*` conversion scales by: the E8M0 exponent held in
/// bits 30:23 of the f32 `scale` operand, `2^(e − 127)`, or `None` for `e = 0xFF` (the E8M0 NaN).
///
/// **Model.** Only the exponent field is used (the MX block scale is E8M0: OCP "Microscaling
/// Formats (MX) v1.0" §5.4; callers pass `2^k` as an f32, e.g. composable_kernel and AMD's
/// `hip_ext_ocp.h` `__amd_scale_to_float`); sign and mantissa bits are ignored.
pub fn scalef32_exponent(scale: f32) -> Option<i32> {
    let e = (scale.to_bits() >> 23) & 0xFF;
    (e != 0xFF).then(|| e as i32 - 127)
}

/// gfx950 `v_cvt_scalef32_pk_{fp8,bf8}_f32 vdst, a, b, scale`: `a / 2^k` and `b / 2^k`
/// (`k` = [`scalef32_exponent`]) converted as [`cvt_pk_f8_f32`] does (OCP `kind`, round to
/// nearest even, `clamp` saturating) into the low (`word_sel_hi` false) or high 16 bits of
/// `old`; a NaN scale gives NaN encodings.
///
/// The division is the MX quantization direction (AMD `hip_ext_ocp.h` host reference:
/// `srcExp -= scale_exp` before rounding; users pass the block's `2^k` and store `x / 2^k`).
/// **Model:** `x / 2^k` is formed in f64 and rounded once to f32 before the FP8 rounding; the
/// f32 step is exact unless `x / 2^k` is below 2^-126 (far below the smallest FP8/BF8
/// subnormal, so both round to zero) or overflows f32 (then ±∞, which converts as an overflow).
pub fn cvt_scalef32_pk_f8_f32(a: f32, b: f32, scale: f32, old: u32, word_sel_hi: bool, clamp: bool, kind: F8Kind) -> u32 {
    let (x, y) = match scalef32_exponent(scale) {
        Some(k) => {
            let s = 2f64.powi(-k);
            ((f64::from(a) * s) as f32, (f64::from(b) * s) as f32)
        }
        None => (f32::NAN, f32::NAN),
    };
    cvt_pk_f8_f32(x, y, old, word_sel_hi, clamp, kind)
}

/// gfx950 `v_cvt_scalef32_pk_f32_{fp8,bf8} vdst[2], src, scale`: the two 8-bit values of the low
/// (`word_sel_hi` false) or high 16 bits of `src` ([`cvt_pk_f32_f8`], OCP `kind`) times `2^k`
/// (`k` = [`scalef32_exponent`]), rounded to f32 (±∞ on overflow, as AMD's `hip_ext_ocp.h`
/// host reference notes for gfx950); a NaN scale gives NaN.
pub fn cvt_scalef32_pk_f32_f8(src: u32, scale: f32, word_sel_hi: bool, kind: F8Kind) -> [f32; 2] {
    let v = cvt_pk_f32_f8(src, word_sel_hi, kind);
    match scalef32_exponent(scale) {
        Some(k) => v.map(|x| (f64::from(x) * 2f64.powi(k)) as f32),
        None => [f32::NAN; 2],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spot_values() {
        assert_eq!(f8_to_f32(0x7F, F8Kind::Fp8Fnuz), 240.0);
        assert_eq!(f8_to_f32(0x7F, F8Kind::Bf8Fnuz), 57344.0);
        assert_eq!(f8_to_f32(0x7E, F8Kind::Fp8Ocp), 448.0);
        assert_eq!(f8_to_f32(0x7B, F8Kind::Bf8Ocp), 57344.0);
        assert_eq!(f8_to_f32(0x7C, F8Kind::Bf8Ocp), f32::INFINITY);
        assert_eq!(f8_to_f32(0x01, F8Kind::Fp8Fnuz), 2f32.powi(-10));
        assert_eq!(f8_to_f32(0x01, F8Kind::Bf8Fnuz), 2f32.powi(-17));
        assert_eq!(f8_to_f32(0x40, F8Kind::Fp8Fnuz), 1.0);
        assert_eq!(f8_to_f32(0x38, F8Kind::Fp8Ocp), 1.0);
        assert!(f8_to_f32(0x80, F8Kind::Fp8Fnuz).is_nan());
        assert_eq!(f8_to_f32(0x80, F8Kind::Fp8Ocp).to_bits(), 0x8000_0000);
    }

    #[test]
    fn encode_boundaries() {
        assert_eq!(f32_to_f8_rne(247.9, F8Kind::Fp8Fnuz, false), 0x7F);
        assert_eq!(f32_to_f8_rne(248.0, F8Kind::Fp8Fnuz, false), 0x80);
        assert_eq!(f32_to_f8_rne(248.0, F8Kind::Fp8Fnuz, true), 0x7F);
        assert_eq!(f32_to_f8_rne(-1e9, F8Kind::Fp8Fnuz, true), 0xFF);
        assert_eq!(f32_to_f8_rne(464.0, F8Kind::Fp8Ocp, false), 0x7E);
        assert_eq!(f32_to_f8_rne(465.0, F8Kind::Fp8Ocp, false), 0x7F);
        assert_eq!(f32_to_f8_rne(-0.0, F8Kind::Fp8Fnuz, false), 0x00);
        assert_eq!(f32_to_f8_rne(-0.0, F8Kind::Fp8Ocp, false), 0x80);
    }
}
