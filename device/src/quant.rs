//! Quantization kernels: DeepGEMM's FP8 recipes on the device, bit-identical to the host's CPU
//! recipes (`fp8gemm::quant`), plus the pure math they share with the host.
//!
//! # The recipe (per scaling group: 1×128 for activations, 128×128 for weights)
//! All in `f32`: `amax = max |x|` over the group's elements, `sf = max(amax, 1e-4) / FP8_MAX`,
//! `q = fp8(clamp(x · (1 / sf), −FP8_MAX, FP8_MAX))` with round to nearest even
//! (`v_cvt_pk_fp8_f32`), where `FP8_MAX` is 240 for E4M3FNUZ (gfx942) and 448 for E4M3FN
//! (gfx950). The clamp never changes a value of a finite group (`|x · (1/sf)|` rounds to at most
//! `FP8_MAX`) and only makes explicit the saturation of the CPU recipe, because the hardware
//! conversion turns an overflow into NaN. `amax` is computed exactly as the integer maximum of
//! `bits(x) & 0x7fff_ffff`, which orders finite magnitudes like the float maximum and puts ±∞
//! and NaN above every finite value.
//!
//! # Non-finite inputs (device behaviour, tested)
//! A group that contains a NaN or ±∞ (or, for the fused `silu_mul` kernels, whose `silu(gate)·up`
//! is NaN or ±∞) gets scale **NaN** and every one of its FP8 values is the format's NaN
//! (`0x80` E4M3FNUZ, `0x7F` E4M3FN). Other groups of the same row are unaffected. A GEMM that
//! reads such a group produces NaN in that row, so bad input is never silently turned into
//! plausible numbers. (The host-side CPU recipes reject non-finite input with a typed error; the
//! CPU function that mirrors this device definition is `QuantizedActivations::quantize_nan_groups`.)
//! All-zero groups: `amax` clamps to 1e-4, so `sf = 1e-4 / FP8_MAX` and every `q` is 0.
//!
//! # Work mapping
//! * Activations (`quantize_act_*`, 256 work-items): 16 consecutive lanes (one DPP row) own one
//!   1×128 group, 8 consecutive elements each (one 16-byte bf16 or two 16-byte f32 loads, one
//!   8-byte store); the group maximum is a 4-step DPP `row_ror` reduction (`intrinsics::row16_umax`,
//!   device builds only), so every lane gets it without LDS or barriers. A workgroup covers 16 groups
//!   of the flattened `(row, k block)` space, which keeps every lane busy whatever `k` is.
//! * Weights (`quantize_weight_*`, 64 work-items = one wave per 128×128 block): lane `l` owns
//!   columns `8·(l & 15) ..+8` of rows `l >> 4, +4, +8, …`; a DPP row reduction followed by 4
//!   `v_readlane_b32` gives the block maximum; the block is read twice (maximum, then convert)
//!   rather than held in registers.

//!
//! # Measured on the code objects (LLVM 22.1.4; `fp8gemm info`, `tests/quant_kernels.rs`)
//!
//! Same on gfx942 and gfx950; no spills, no scratch, no LDS, 8 waves/SIMD by registers.
//!
//! | kernel | VGPR | SGPR | workgroup |
//! |---|---|---|---|
//! | `quantize_act_{bf16,f32}`, `quantize_act_masked_{bf16,f32}` | 21–22 | 20 | 256 |
//! | `quantize_act_silu_mul{,_masked}_{bf16,f32}` | 32 / 35 | 22 | 256 |
//! | `quantize_weight_{bf16,f32}` | 21 / 22 | 26 | 64 |
//!
//! Emulator counters (`counters_show_the_expected_memory_traffic`): 128 × 7168 bf16 activations
//! = 1792 waves, 191 wave-instructions each (140 VALU, of which two correctly rounded `f32`
//! divisions), exactly one 16-byte load and two stores per lane; the fused `silu_mul` kernel on
//! 128 × 2·2048 707 per wave; 2112 × 7168 bf16 weights 952 waves of 2928 (two passes).

use crate::amdgpu_kernel;
use crate::args::{QuantActArgs, QuantWeightArgs};

/// Lower bound of every group's `amax` (DeepGEMM's clamp, the host's `quant::AMAX_FLOOR`).
pub const AMAX_FLOOR: f32 = 1e-4;
/// Width of a scaling group along K (and height of a weight block).
pub const GROUP: u32 = 128;
/// Input type of a quantization kernel: bf16 (`load8`'s `IN`).
pub const IN_BF16: u8 = 0;
/// Input type of a quantization kernel: IEEE binary16.
pub const IN_F16: u8 = 1;
/// Input type of a quantization kernel: f32.
pub const IN_F32: u8 = 2;

/// Elements each work-item converts per group row (one 16-byte bf16 load).
pub const ELEMS_PER_LANE: u32 = 8;
/// The kernels' requirement on K: a multiple of this (every lane's 8 elements are all in range
/// or all out of range, and every row starts 16-byte aligned for bf16 and f32).
pub const K_ALIGN: u32 = ELEMS_PER_LANE;
/// Work-items per workgroup of the activation kernels.
pub const ACT_THREADS: u32 = 256;
/// 1×128 groups per activation workgroup (16 lanes each).
pub const ACT_GROUPS_PER_WG: u32 = ACT_THREADS / (GROUP / ELEMS_PER_LANE);
/// Work-items per workgroup of the weight kernels (one wave per 128×128 block).
pub const WEIGHT_THREADS: u32 = 64;
/// Below this argument [`exp_nonpositive`] returns 0 (`e^-80 ≈ 1.8e-35`, far below anything
/// that survives FP8 quantization with the 1e-4 amax floor).
pub const EXP_CUTOFF: f32 = -80.0;

/// `e^x` for `x ≤ 0` (and NaN → NaN), computed with `f32` additions and multiplications only, so
/// the host and the device produce the same bits: Cody–Waite reduction `x = k·ln2 + r`
/// (`k = trunc(x·log2(e) − 0.5)`, `ln2` split into [`LN2_HI`] (15 significant bits, so `k·LN2_HI`
/// is exact) and [`LN2_LO`]), a degree-7 Taylor polynomial of `e^r` on `|r| ≤ 0.35` in Horner
/// form, and `2^k` built from its bits. `x < −80` gives 0. Relative error below 1e-6 (tested
/// against `f64::exp`). Positive `x` is treated as 0 (result 1); [`silu_mul`] only passes `−|g|`.
#[inline(always)]
pub fn exp_nonpositive(x: f32) -> f32 {
    // Branch-free (the device evaluates it per lane: selects instead of divergent branches);
    // the arithmetic on the valid range is the same as the early-return form's.
    #[allow(clippy::eq_op)] // x != x is the NaN test (no std on the device)
    let nan = x != x;
    let under = x < EXP_CUTOFF;
    // Not NaN, not below the cutoff, at most 0 from here on (other inputs are replaced by 0,
    // whose result is discarded or, for positive x, is the result).
    let xc = if nan || under || x > 0.0 { 0.0 } else { x };
    let t = xc * core::f32::consts::LOG2_E;
    // t ∈ [−115.5, 0]: truncating t − 0.5 rounds t to nearest (ties away from zero): k ∈ [−116, 0].
    // SAFETY: t − 0.5 ∈ [−116, −0.5] is finite and in i32's range, so the conversion is the
    // truncation `as` performs, without its saturation selects.
    let k = unsafe { (t - 0.5).to_int_unchecked::<i32>() };
    let kf = k as f32;
    let r = (xc - kf * LN2_HI) - kf * LN2_LO;
    let p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // 2^k, k ∈ [−116, 0]: a normal number.
    let scale = f32::from_bits(((k + 127) as u32) << 23);
    let e = p * scale;
    if nan {
        x
    } else if under {
        0.0
    } else {
        e
    }
}

/// High part of ln 2 (`0x3f31_7200`, 15 significant bits).
pub const LN2_HI: f32 = f32::from_bits(0x3f31_7200);
/// `ln 2 − LN2_HI`, rounded to `f32`.
pub const LN2_LO: f32 = f32::from_bits(0x35bf_be8e);

/// The fused MoE/MLP activation `silu(gate) · up`, exactly as the `silu_mul` kernels and the
/// host's CPU recipe compute it, in `f32`:
///
/// ```text
/// e = exp_nonpositive(−|gate|)            // e^(−|gate|) ∈ [0, 1]
/// s = (gate ≥ 0 ? 1 : e) / (1 + e)        // sigmoid(gate), one correctly rounded division
/// y = (gate · s) · up
/// ```
///
/// The `e^(−|g|)` form never overflows and keeps the division's operands in `[0, 2]`. NaN in
/// either input gives NaN; `gate = −∞` gives NaN (`−∞ · 0`), `gate = +∞` gives `±∞` (or NaN for
/// `up = 0`).
#[inline(always)]
pub fn silu_mul(gate: f32, up: f32) -> f32 {
    let e = exp_nonpositive(f32::from_bits(gate.to_bits() | 0x8000_0000));
    let num = if gate >= 0.0 { 1.0 } else { e };
    let s = num / (1.0 + e);
    (gate * s) * up
}

/// [`silu_mul`] of 8 pairs, element `i` from `gate[i]` and `up[i]`: the same bits as 8 calls.
/// On the device the same operations run two elements per packed-FP32 instruction
/// (`v_pk_mul_f32`, `v_pk_add_f32`; the divisions stay scalar), which halves the VALU work of
/// the polynomial that dominates the activation kernels.
#[inline(always)]
pub fn silu_mul8(gate: &[f32; 8], up: &[f32; 8]) -> [f32; 8] {
    #[cfg(target_arch = "amdgpu")]
    {
        imp::silu_mul8_packed(gate, up)
    }
    #[cfg(not(target_arch = "amdgpu"))]
    {
        core::array::from_fn(|i| silu_mul(gate[i], up[i]))
    }
}

#[cfg(target_arch = "amdgpu")]
pub(crate) mod imp {
    use crate::args::{QuantActArgs, QuantWeightArgs};
    use crate::intrinsics::*;

    use super::{AMAX_FLOOR, ELEMS_PER_LANE, EXP_CUTOFF, GROUP, LN2_HI, LN2_LO};

    /// Two f32 lanes of a packed-FP32 operation.
    #[repr(simd)]
    #[derive(Clone, Copy)]
    struct F2([f32; 2]);
    /// Two i32 lanes (comparison masks, exponents).
    #[repr(simd)]
    #[derive(Clone, Copy)]
    struct I2([i32; 2]);

    /// `v` in both lanes (written out: see `F32x4::fma_splat_in_place`).
    #[inline(always)]
    fn f2(v: f32) -> F2 {
        F2([v, v])
    }
    /// `v` in both lanes.
    #[inline(always)]
    fn i2(v: i32) -> I2 {
        I2([v, v])
    }

    /// [`super::silu_mul`] of two pairs with its operations on two lanes at once: every step
    /// is the scalar function's (`exp_nonpositive`'s selects, truncation, Horner form, the
    /// exponent bits; one IEEE operation per lane each), so the bits are the scalar ones.
    #[inline(always)]
    fn silu_mul2(g: F2, u: F2) -> F2 {
        use core::intrinsics::simd::*;
        // SAFETY: F2 and I2 are 8-byte repr(simd) vectors of 4-byte plain values (the
        // transmutes reinterpret bits); the comparisons return I2 masks of the same lane count;
        // simd_cast of f32 to i32 truncates and is defined for in-range finite lanes: t − 0.5 ∈
        // [−116, −0.5] (xc ∈ [−80, 0], as in exp_nonpositive); the i32 add and shift cannot
        // overflow (k + 127 ∈ [11, 127]).
        unsafe {
            // x = −|g|.
            let x: F2 = core::mem::transmute(simd_or(core::mem::transmute::<F2, I2>(g), i2(i32::MIN)));
            let nan: I2 = simd_ne(x, x);
            let under: I2 = simd_lt(x, f2(EXP_CUTOFF));
            let pos: I2 = simd_gt(x, f2(0.0));
            let xc = simd_select(simd_or(simd_or(nan, under), pos), f2(0.0), x);
            let t = simd_mul(xc, f2(core::f32::consts::LOG2_E));
            let k: I2 = simd_cast(simd_sub(t, f2(0.5)));
            let kf: F2 = simd_cast(k);
            let r = simd_sub(simd_sub(xc, simd_mul(kf, f2(LN2_HI))), simd_mul(kf, f2(LN2_LO)));
            let mut q = simd_add(f2(1.0 / 720.0), simd_mul(r, f2(1.0 / 5040.0)));
            q = simd_add(f2(1.0 / 120.0), simd_mul(r, q));
            q = simd_add(f2(1.0 / 24.0), simd_mul(r, q));
            q = simd_add(f2(1.0 / 6.0), simd_mul(r, q));
            q = simd_add(f2(0.5), simd_mul(r, q));
            q = simd_add(f2(1.0), simd_mul(r, q));
            let p = simd_add(f2(1.0), simd_mul(r, q));
            let scale: F2 = core::mem::transmute(simd_shl(simd_add(k, i2(127)), i2(23)));
            let e = simd_select(nan, x, simd_select(under, f2(0.0), simd_mul(p, scale)));
            let num = simd_select(simd_ge::<F2, I2>(g, f2(0.0)), f2(1.0), e);
            let s = simd_div(num, simd_add(f2(1.0), e));
            simd_mul(simd_mul(g, s), u)
        }
    }

    /// [`super::silu_mul8`] on the device: four [`silu_mul2`].
    #[inline(always)]
    pub(crate) fn silu_mul8_packed(g: &[f32; 8], u: &[f32; 8]) -> [f32; 8] {
        let mut out = [0f32; 8];
        for i in 0..4 {
            let y = silu_mul2(F2([g[2 * i], g[2 * i + 1]]), F2([u[2 * i], u[2 * i + 1]]));
            // SAFETY: F2 is repr(simd) over [f32; 2]: same size, same element order.
            let y = unsafe { core::mem::transmute::<F2, [f32; 2]>(y) };
            out[2 * i] = y[0];
            out[2 * i + 1] = y[1];
        }
        out
    }

    /// `|x|` bits of every element of `v` whose maximum is the group's `amax` (see module docs).
    #[inline(always)]
    pub(crate) fn abs_bits_max(v: &[f32; 8]) -> u32 {
        let mut m = 0u32;
        for x in v {
            m = m.max(x.to_bits() & 0x7fff_ffff);
        }
        m
    }

    /// 8 consecutive input values at element `elem` of `base`, as f32 (exactly: every bf16 and
    /// f16 value is an f32 value). `IN` is the input type ([`super::IN_BF16`], [`super::IN_F16`],
    /// [`super::IN_F32`]).
    ///
    /// # Safety
    /// `base + elem · size` must be 16-byte aligned and the 8 elements inside a live allocation.
    #[inline(always)]
    pub(crate) unsafe fn load8<const IN: u8>(base: u64, elem: u64) -> [f32; 8] {
        let mut out = [0f32; 8];
        if IN == super::IN_F32 {
            let p = (base + elem * 4) as usize as *const U32x4;
            // SAFETY: the caller guarantees 32 aligned, readable bytes at p.
            let (a, b) = unsafe { ((*p).to_array(), (*p.add(1)).to_array()) };
            for i in 0..4 {
                out[i] = f32::from_bits(a[i]);
                out[4 + i] = f32::from_bits(b[i]);
            }
        } else {
            let p = (base + elem * 2) as usize as *const U32x4;
            // SAFETY: the caller guarantees 16 aligned, readable bytes at p.
            let v = unsafe { *p };
            if IN == super::IN_F16 {
                let w = v.to_array();
                for i in 0..4 {
                    // `fpext half to float` (v_cvt_f32_f16): exact, subnormals and NaN included.
                    out[2 * i] = f16::from_bits(w[i] as u16) as f32;
                    out[2 * i + 1] = f16::from_bits((w[i] >> 16) as u16) as f32;
                }
            } else {
                out = bf16x8(v);
            }
        }
        out
    }

    /// The group's scale and its inverse from the group maximum's bits; `None` for a group with
    /// a non-finite element.
    #[inline(always)]
    pub(crate) fn scale_of(amax_bits: u32, fp8_max: f32) -> (f32, f32, bool) {
        let bad = amax_bits >= 0x7f80_0000;
        let amax = f32::from_bits(if bad { 0 } else { amax_bits });
        let sf = amax.max(AMAX_FLOOR) / fp8_max;
        let inv = 1.0 / sf;
        (if bad { f32::NAN } else { sf }, inv, bad)
    }

    /// The 8 FP8 bytes of `v` (little-endian in a u64 as two words).
    #[inline(always)]
    pub(crate) fn convert8(v: &[f32; 8], inv: f32, fp8_max: f32, bad: bool) -> U32x2 {
        let mut y = [0f32; 8];
        for i in 0..8 {
            let t = (v[i] * inv).max(-fp8_max).min(fp8_max);
            y[i] = if bad { f32::NAN } else { t };
        }
        let lo = cvt_pk_fp8_f32::<true>(y[2], y[3], cvt_pk_fp8_f32::<false>(y[0], y[1], 0));
        let hi = cvt_pk_fp8_f32::<true>(y[6], y[7], cvt_pk_fp8_f32::<false>(y[4], y[5], 0));
        U32x2([lo, hi])
    }

    /// Activation kernels: one 1×128 group per 16 lanes (see the module docs).
    #[inline(always)]
    pub fn act<const IN: u8, const MASKED: bool, const SILU: bool>(args: QuantActArgs) {
        let tid = workitem_id_x();
        let (k, rows, groups) = (args.k, args.rows, args.groups);
        let kb = k.div_ceil(GROUP);
        // Implied by valid arguments; stating them removes the division-by-zero panic paths.
        if kb == 0 || rows == 0 {
            return;
        }
        let units = groups.saturating_mul(rows).saturating_mul(kb);
        let unit = workgroup_id_x() * super::ACT_GROUPS_PER_WG + (tid >> 4);
        let j = tid & 15;
        let row = unit / kb; // flattened over groups · rows
        let kbi = unit % kb;
        let col = kbi * GROUP + j * ELEMS_PER_LANE;
        let mut valid = unit < units && col < k;
        if MASKED && unit < units {
            let g = row / rows;
            // SAFETY: g < groups (unit < units = groups · rows · kb) and masked_m holds `groups`
            // i32 (checked by the host).
            let cnt = unsafe { *args.masked_m.as_ptr().add(g as usize) };
            let cnt = if cnt < 0 {
                0
            } else if cnt as u32 > rows {
                rows
            } else {
                cnt as u32
            };
            valid &= row % rows < cnt;
        }
        let (row64, col64, k64) = (row as u64, col as u64, k as u64);
        let mut v = [0f32; 8];
        if valid {
            if SILU {
                let base = row64 * 2 * k64 + col64;
                // SAFETY: row < groups · rows and col + 8 ≤ k (k % 8 == 0): both 8-element runs
                // lie inside the `groups · rows × 2k` input, 16-byte aligned (k % 8 == 0, base
                // aligned; checked by the host).
                let (g, u) = unsafe { (load8::<IN>(args.x.addr(), base), load8::<IN>(args.x.addr(), base + k64)) };
                v = super::silu_mul8(&g, &u);
            } else {
                // SAFETY: as above for the `groups · rows × k` input.
                v = unsafe { load8::<IN>(args.x.addr(), row64 * k64 + col64) };
            }
        }
        // Every lane takes part in the reduction (invalid lanes contribute 0).
        let amax_bits = row16_umax(if valid { abs_bits_max(&v) } else { 0 });
        let (sf, inv, bad) = scale_of(amax_bits, args.fp8_max);
        if valid {
            let data = convert8(&v, inv, args.fp8_max, bad);
            let p = (args.q.addr() + row64 * k64 + col64) as usize as *mut U32x2;
            // SAFETY: 8 bytes inside the `groups · rows × k` output, 8-byte aligned.
            unsafe { *p = data };
            if j == 0 {
                // SAFETY: (row, kbi) indexes the `groups · rows × kb` scale output.
                unsafe { *args.sf.as_mut_ptr().add((row64 * kb as u64 + kbi as u64) as usize) = sf };
            }
        }
    }

    /// Weight kernels: one wave per 128×128 block (see the module docs).
    #[inline(always)]
    pub fn weight<const IN: u8>(args: QuantWeightArgs) {
        let lane = workitem_id_x();
        let (n, k) = (args.n, args.k);
        let (nb, kb) = (n.div_ceil(GROUP), k.div_ceil(GROUP));
        let blk = workgroup_id_x();
        if kb == 0 || blk >= nb.saturating_mul(kb) {
            return;
        }
        let (bi, bk) = (blk / kb, blk % kb);
        let (j, r4) = (lane & 15, lane >> 4);
        let col = bk * GROUP + j * ELEMS_PER_LANE;
        let (col64, k64) = (col as u64, k as u64);
        let row_at = |rr: u32| bi * GROUP + 4 * rr + r4;

        let mut m = 0u32;
        for rr in 0..GROUP / 4 {
            let row = row_at(rr);
            if col < k && row < n {
                // SAFETY: row < n, col + 8 ≤ k: inside the n × k input, 16-byte aligned.
                let v = unsafe { load8::<IN>(args.x.addr(), row as u64 * k64 + col64) };
                m = m.max(abs_bits_max(&v));
            }
        }
        let m = row16_umax(m);
        let m = readlane::<0>(m).max(readlane::<16>(m)).max(readlane::<32>(m)).max(readlane::<48>(m));
        let (sf, inv, bad) = scale_of(m, args.fp8_max);
        for rr in 0..GROUP / 4 {
            let row = row_at(rr);
            if col < k && row < n {
                let off = row as u64 * k64 + col64;
                // SAFETY: as in the first pass.
                let v = unsafe { load8::<IN>(args.x.addr(), off) };
                let p = (args.q.addr() + off) as usize as *mut U32x2;
                // SAFETY: 8 bytes inside the n × k output, 8-byte aligned.
                unsafe { *p = convert8(&v, inv, args.fp8_max, bad) };
            }
        }
        if lane == 0 {
            // SAFETY: (bi, bk) indexes the ⌈n/128⌉ × ⌈k/128⌉ scale output.
            unsafe { *args.sf.as_mut_ptr().add((bi * kb + bk) as usize) = sf };
        }
    }
}

/// bf16 activations → FP8 + 1×128 scales (dense and contiguous layouts).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_bf16(args: QuantActArgs) {
    imp::act::<IN_BF16, false, false>(args)
}
/// f32 activations → FP8 + 1×128 scales (dense and contiguous layouts).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_f32(args: QuantActArgs) {
    imp::act::<IN_F32, false, false>(args)
}
/// bf16 activations → FP8 + 1×128 scales, masked layout (`masked_m` read on the device).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_masked_bf16(args: QuantActArgs) {
    imp::act::<IN_BF16, true, false>(args)
}
/// f32 activations → FP8 + 1×128 scales, masked layout.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_masked_f32(args: QuantActArgs) {
    imp::act::<IN_F32, true, false>(args)
}
/// bf16 `[gate | up]` rows → `silu(gate)·up` → FP8 + 1×128 scales (dense and contiguous).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_silu_mul_bf16(args: QuantActArgs) {
    imp::act::<IN_BF16, false, true>(args)
}
/// f32 `[gate | up]` rows → `silu(gate)·up` → FP8 + 1×128 scales (dense and contiguous).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_silu_mul_f32(args: QuantActArgs) {
    imp::act::<IN_F32, false, true>(args)
}
/// bf16 `[gate | up]` rows → `silu(gate)·up` → FP8 + 1×128 scales, masked layout.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_silu_mul_masked_bf16(args: QuantActArgs) {
    imp::act::<IN_BF16, true, true>(args)
}
/// f32 `[gate | up]` rows → `silu(gate)·up` → FP8 + 1×128 scales, masked layout.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_silu_mul_masked_f32(args: QuantActArgs) {
    imp::act::<IN_F32, true, true>(args)
}
/// bf16 weights → FP8 + 128×128 block scales.
#[amdgpu_kernel(workgroup_size = 64)]
pub fn quantize_weight_bf16(args: QuantWeightArgs) {
    imp::weight::<IN_BF16>(args)
}
/// f32 weights → FP8 + 128×128 block scales.
#[amdgpu_kernel(workgroup_size = 64)]
pub fn quantize_weight_f32(args: QuantWeightArgs) {
    imp::weight::<IN_F32>(args)
}
/// f16 activations → FP8 + 1×128 scales (dense and contiguous layouts).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_f16(args: QuantActArgs) {
    imp::act::<IN_F16, false, false>(args)
}
/// f16 activations → FP8 + 1×128 scales, masked layout.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_masked_f16(args: QuantActArgs) {
    imp::act::<IN_F16, true, false>(args)
}
/// f16 `[gate | up]` rows → `silu(gate)·up` → FP8 + 1×128 scales (dense and contiguous).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_silu_mul_f16(args: QuantActArgs) {
    imp::act::<IN_F16, false, true>(args)
}
/// f16 `[gate | up]` rows → `silu(gate)·up` → FP8 + 1×128 scales, masked layout.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn quantize_act_silu_mul_masked_f16(args: QuantActArgs) {
    imp::act::<IN_F16, true, true>(args)
}
/// f16 weights → FP8 + 128×128 block scales.
#[amdgpu_kernel(workgroup_size = 64)]
pub fn quantize_weight_f16(args: QuantWeightArgs) {
    imp::weight::<IN_F16>(args)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn exp_is_accurate_and_total() {
        let mut worst = 0f64;
        let mut x = 0.0f32;
        while x > -80.0 {
            let want = (x as f64).exp();
            let got = exp_nonpositive(x) as f64;
            worst = worst.max(((got - want) / want).abs());
            x -= 0.000_713;
        }
        assert!(worst < 1e-6, "worst relative error {worst:e}");
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-80.5), 0.0);
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
        assert!(exp_nonpositive(f32::NAN).is_nan());
    }

    #[test]
    fn silu_mul_values() {
        assert_eq!(silu_mul(0.0, 5.0), 0.0);
        for &(g, u) in &[(1.0f32, 1.0f32), (-1.0, 2.0), (3.5, -0.25), (-20.0, 1.0), (50.0, 1.0)] {
            let want = (g as f64) / (1.0 + (-(g as f64)).exp()) * u as f64;
            let got = silu_mul(g, u) as f64;
            assert!((got - want).abs() <= 1e-6 * want.abs().max(1e-30), "silu({g})·{u}: {got} vs {want}");
        }
        assert_eq!(silu_mul(-100.0, 1.0), 0.0);
        assert!(silu_mul(f32::NAN, 1.0).is_nan());
        assert!(silu_mul(1.0, f32::NAN).is_nan());
        assert!(silu_mul(f32::NEG_INFINITY, 1.0).is_nan());
        assert_eq!(silu_mul(f32::INFINITY, 2.0), f32::INFINITY);
        assert_eq!(ACT_GROUPS_PER_WG, 16);
    }
}
