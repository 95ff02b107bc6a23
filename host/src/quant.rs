//! DeepGEMM's FP8 quantization recipes, generic over the FP8 format, and FP8 checkpoint conversion.
//!
//! # Recipes
//! Both recipes compute, per scaling group, `amax = max(|x|)` clamped to at least [`AMAX_FLOOR`]
//! (1e-4), the scale `sf = amax / F::MAX` and the FP8 values `q = F::from_f32(x · (1 / sf))`, all in
//! `f32`: exactly the arithmetic of DeepGEMM's test helpers (`per_token_cast_to_fp8`,
//! `per_block_cast_to_fp8`, with FP8_MAX = 448 for E4M3FN and **240 for E4M3FNUZ**). The conversion
//! saturates (see [`crate::fp8`]); DeepGEMM's non-saturating cast gives the same bits here because
//! `|x · (1 / sf)|` never rounds above `MAX`. The dequantized value is `q.to_f32() · sf`.
//!
//! - Activations ([`QuantizedActivations`], "per-token", 1×128): one scale per row and 128-wide
//!   K group.
//! - Weights ([`QuantizedWeights`], "per-block", 128×128): one scale per 128×128 block.
//!
//! K and N need not be multiples of 128: the last group along each dimension is partial and its
//! amax covers only the elements that exist (DeepGEMM zero-pads, which does not change the amax).
//!
//! # Layouts (what the kernels read)
//! All matrices are row-major and K-major ("NT" GEMMs: `A[m, k]`, `B[n, k]`):
//! - `A`: `data[i·k + kk]`, `m × k`; **SFA** `scales[i·⌈k/128⌉ + kb]`: `[m, ⌈k/128⌉]` row-major `f32`.
//! - `B`: `data[j·k + kk]`, `n × k`; **SFB** `scales[jb·⌈k/128⌉ + kb]`: `[⌈n/128⌉, ⌈k/128⌉]`
//!   row-major `f32` (row `j` uses `jb = j / 128`).
//! - Grouped `B` ([`GroupedQuantizedWeights`]): `G` such matrices back to back: data `[G, n, k]`,
//!   scales `[G, ⌈n/128⌉, ⌈k/128⌉]`.
//! - K-grouped operands ([`KGroupedOperand`]): groups of `rows × k_g` per-token-quantized matrices
//!   back to back (see its docs).
//!
//! # Fused activation and device semantics
//! [`QuantizedActivations::quantize_silu_mul`] quantizes `silu(gate) · up` of a `[m, 2·i]`
//! input ([`silu_mul`] gives the exact `f32` formula, shared with the device kernels);
//! [`QuantizedActivations::quantize_nan_groups`] and [`QuantizedWeights::quantize_nan_groups`]
//! reproduce what the device quantization kernels ([`crate::quantize`]) write for non-finite
//! input (NaN scale and FP8 NaNs for the affected group) instead of returning an error.
//!
//! # Checkpoint conversion
//! [`e4m3fn_to_e4m3fnuz`] turns E4M3FN weights with their dequantization scales (DeepSeek-V3's
//! `weight_scale_inv`) into E4M3FNUZ weights with doubled scales, exactly.

use half::bf16;
use rayon::prelude::*;

use crate::fp8::{E4M3Fn, E4M3Fnuz, Fp8Format};

/// Width of a scaling group along K (and height of a weight block along N).
pub const BLOCK: usize = 128;

/// Lower bound applied to every group's `amax` before computing its scale (as DeepGEMM does).
pub const AMAX_FLOOR: f32 = 1e-4;

/// `⌈x / 128⌉`: the number of scaling groups covering `x` elements.
#[inline]
pub const fn blocks(x: usize) -> usize {
    x.div_ceil(BLOCK)
}

/// Errors from quantization and conversion; each names the offending argument and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantError {
    /// A slice has the wrong number of elements.
    #[error("`{arg}` has {actual} elements, expected {expected}")]
    Length {
        /// The argument.
        arg: &'static str,
        /// Required length.
        expected: usize,
        /// Actual length.
        actual: usize,
    },
    /// A dimension product does not fit in `usize`.
    #[error("`{arg}`: the element count {dims} overflows usize")]
    SizeOverflow {
        /// The argument.
        arg: &'static str,
        /// The dimensions, as text.
        dims: String,
    },
    /// An input to quantize is NaN or infinite.
    #[error("`{arg}[{index}]` is {value}, expected a finite value")]
    NonFinite {
        /// The argument.
        arg: &'static str,
        /// Flat index of the element.
        index: usize,
        /// The value.
        value: f32,
    },
    /// An E4M3FN element to convert is a NaN pattern (`0x7F` or `0xFF`), which has no FNUZ equivalent
    /// (keeping the bits would read as ±240 in E4M3FNUZ).
    #[error("`{arg}[{index}]` is the E4M3FN NaN pattern {bits:#04x}, expected a finite value")]
    NanInput {
        /// The argument.
        arg: &'static str,
        /// Flat index of the element.
        index: usize,
        /// The bit pattern.
        bits: u8,
    },
    /// A scale to convert is not finite, or doubling it overflows `f32`.
    #[error("`{arg}[{index}]` is {value}, expected a finite scale with |scale| ≤ f32::MAX / 2")]
    Scale {
        /// The argument.
        arg: &'static str,
        /// Flat index of the scale.
        index: usize,
        /// The value.
        value: f32,
    },
}

fn product(arg: &'static str, dims: &[usize]) -> Result<usize, QuantError> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| QuantError::SizeOverflow { arg, dims: dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(" × ") })
}

fn check_len(arg: &'static str, actual: usize, expected: usize) -> Result<(), QuantError> {
    if actual == expected { Ok(()) } else { Err(QuantError::Length { arg, expected, actual }) }
}

fn check_finite<X: Copy + Into<f32>>(arg: &'static str, x: &[X]) -> Result<(), QuantError> {
    match x.iter().position(|v| !(*v).into().is_finite()) {
        None => Ok(()),
        Some(index) => Err(QuantError::NonFinite { arg, index, value: x[index].into() }),
    }
}

/// The scale of a group whose largest magnitude is `amax`: `max(amax, 1e-4) / F::MAX`.
#[inline]
pub fn scale_for_amax<F: Fp8Format>(amax: f32) -> f32 {
    amax.max(AMAX_FLOOR) / F::MAX
}

/// Quantizes one element with a group's scale: `F::from_f32(x · (1 / sf))`.
#[inline]
fn quantize_with<F: Fp8Format>(x: f32, inv_scale: f32) -> F {
    F::from_f32(x * inv_scale)
}

/// Per-token (1×128) quantization of a row-major `rows × k` matrix into `data`/`scales`.
fn quantize_rows<F: Fp8Format, X: Copy + Into<f32> + Sync>(x: &[X], k: usize, data: &mut [F], scales: &mut [f32]) {
    let kb = blocks(k);
    if k == 0 {
        return;
    }
    data.par_chunks_mut(k).zip(scales.par_chunks_mut(kb)).zip(x.par_chunks(k)).for_each(|((q, s), xr)| {
        for (b, sf) in s.iter_mut().enumerate() {
            let range = b * BLOCK..((b + 1) * BLOCK).min(k);
            let amax = xr[range.clone()].iter().fold(0.0f32, |m, v| m.max((*v).into().abs()));
            *sf = scale_for_amax::<F>(amax);
            let inv = 1.0 / *sf;
            for (qv, xv) in q[range.clone()].iter_mut().zip(&xr[range]) {
                *qv = quantize_with::<F>((*xv).into(), inv);
            }
        }
    });
}

/// Per-block (128×128) quantization of a row-major `n × k` matrix into `data`/`scales`.
fn quantize_blocks<F: Fp8Format, X: Copy + Into<f32> + Sync>(x: &[X], k: usize, data: &mut [F], scales: &mut [f32]) {
    let kb = blocks(k);
    if k == 0 {
        return;
    }
    data.par_chunks_mut(BLOCK * k).zip(scales.par_chunks_mut(kb)).zip(x.par_chunks(BLOCK * k)).for_each(|((q, s), xb)| {
        let rows = xb.len() / k;
        for (b, sf) in s.iter_mut().enumerate() {
            let cols = b * BLOCK..((b + 1) * BLOCK).min(k);
            let mut amax = 0.0f32;
            for r in 0..rows {
                for v in &xb[r * k + cols.start..r * k + cols.end] {
                    amax = amax.max((*v).into().abs());
                }
            }
            *sf = scale_for_amax::<F>(amax);
            let inv = 1.0 / *sf;
            for r in 0..rows {
                let span = r * k + cols.start..r * k + cols.end;
                for (qv, xv) in q[span.clone()].iter_mut().zip(&xb[span]) {
                    *qv = quantize_with::<F>((*xv).into(), inv);
                }
            }
        }
    });
}

/// Applies the device kernels' rule for non-finite input to an already quantized operand: every
/// scaling group (`rows_per_block` rows × 128 columns) holding a NaN or ±∞ in `x` gets scale NaN
/// and all of its values become the format's NaN (`F::from_f32(NaN)`: `0x80` E4M3FNUZ, `0x7F`
/// E4M3FN).
fn poison_nonfinite_groups<F: Fp8Format>(x: &[f32], k: usize, rows_per_block: usize, data: &mut [F], scales: &mut [f32]) {
    if k == 0 {
        return;
    }
    let kb = blocks(k);
    let nan = F::from_f32(f32::NAN);
    for (i, row) in x.chunks(k).enumerate() {
        for (b, chunk) in row.chunks(BLOCK).enumerate() {
            if chunk.iter().any(|v| !v.is_finite()) {
                let bi = i / rows_per_block;
                scales[bi * kb + b] = f32::NAN;
                let rows = bi * rows_per_block..((bi + 1) * rows_per_block).min(x.len() / k);
                for r in rows {
                    let cols = r * k + b * BLOCK..r * k + ((b + 1) * BLOCK).min(k);
                    data[cols].iter_mut().for_each(|q| *q = nan);
                }
            }
        }
    }
}

/// `silu(gate) · up` of every row of a row-major `[m, 2·i]` matrix whose first `i` columns are
/// the gate and last `i` the up projection (DeepSeek's MoE/MLP down-projection input): a
/// row-major `[m, i]` result computed with [`silu_mul`] (the exact `f32` formula the device's
/// fused kernels use).
pub fn silu_mul_rows<X: Copy + Into<f32> + Sync>(x: &[X], m: usize, i: usize) -> Result<Vec<f32>, QuantError> {
    let width = product("x", &[2, i])?;
    check_len("x", x.len(), product("x", &[m, width])?)?;
    let mut y = vec![0f32; m * i];
    if i > 0 {
        y.par_chunks_mut(i).zip(x.par_chunks(width)).for_each(|(yr, xr)| {
            for (c, yv) in yr.iter_mut().enumerate() {
                *yv = silu_mul(xr[c].into(), xr[i + c].into());
            }
        });
    }
    Ok(y)
}

pub use fp8gemm_device::quant::silu_mul;

/// Multiplies each element by the scale of its group: `out[i, kk] = q[i, kk] · scales[row(i), kk / 128]`.
fn dequantize_with<F: Fp8Format>(data: &[F], scales: &[f32], k: usize, scale_row: impl Fn(usize) -> usize + Sync) -> Vec<f32> {
    let mut out = vec![0.0f32; data.len()];
    if k == 0 {
        return out;
    }
    let kb = blocks(k);
    out.par_chunks_mut(k).zip(data.par_chunks(k)).enumerate().for_each(|(i, (o, q))| {
        let s = &scales[scale_row(i) * kb..][..kb];
        for (kk, (ov, qv)) in o.iter_mut().zip(q).enumerate() {
            *ov = qv.to_f32() * s[kk / BLOCK];
        }
    });
    out
}

/// An activation matrix `A[m, k]` quantized per token (1×128), with its scales SFA.
///
/// Layout: `data` is `[m, k]` row-major; `scales` is `[m, ⌈k/128⌉]` row-major `f32`, entry
/// `(i, kb)` scaling `data[i, 128·kb .. min(128·kb + 128, k)]`.
#[derive(Debug, Clone)]
pub struct QuantizedActivations<F> {
    /// FP8 values, `[m, k]` row-major.
    pub data: Vec<F>,
    /// Dequantization scales SFA, `[m, ⌈k/128⌉]` row-major.
    pub scales: Vec<f32>,
    /// Rows.
    pub m: usize,
    /// Columns (the reduction dimension).
    pub k: usize,
}

impl<F: Fp8Format> QuantizedActivations<F> {
    /// Quantizes a row-major `[m, k]` matrix (`f32`, `bf16`, anything convertible to `f32`) per token.
    pub fn quantize<X: Copy + Into<f32> + Sync>(x: &[X], m: usize, k: usize) -> Result<Self, QuantError> {
        check_len("x", x.len(), product("x", &[m, k])?)?;
        check_finite("x", x)?;
        let mut data = vec![F::default(); x.len()];
        let mut scales = vec![0.0f32; m * blocks(k)];
        quantize_rows(x, k, &mut data, &mut scales);
        Ok(Self { data, scales, m, k })
    }

    /// The fused MoE/MLP activation: `silu(gate) · up` of a row-major `[m, 2·i]` input (gate =
    /// first `i` columns, up = last `i`; see [`silu_mul_rows`] and [`silu_mul`] for the exact
    /// `f32` formula), quantized per token into an `[m, i]` operand. Bit-identical to the
    /// device's `silu_mul` quantization kernels. Non-finite inputs are rejected (`x`), and so is
    /// a product that overflows to ±∞ (`silu(gate)·up`).
    pub fn quantize_silu_mul<X: Copy + Into<f32> + Sync>(x: &[X], m: usize, i: usize) -> Result<Self, QuantError> {
        let y = silu_mul_rows(x, m, i)?;
        check_finite("x", x)?;
        check_finite("silu(gate)·up", &y)?;
        Self::quantize(&y, m, i)
    }

    /// The device kernels' definition for any input, finite or not: like [`Self::quantize`],
    /// except that a 1×128 group containing a NaN or ±∞ gets scale NaN and all of its values
    /// become the format's NaN (`0x80` E4M3FNUZ, `0x7F` E4M3FN) instead of an error. This is what
    /// the device quantization kernels write (they cannot report an error without a host
    /// round trip); use it to predict or check their output.
    pub fn quantize_nan_groups<X: Copy + Into<f32> + Sync>(x: &[X], m: usize, k: usize) -> Result<Self, QuantError> {
        check_len("x", x.len(), product("x", &[m, k])?)?;
        let xf: Vec<f32> = x.iter().map(|&v| v.into()).collect();
        let mut data = vec![F::default(); x.len()];
        let mut scales = vec![0.0f32; m * blocks(k)];
        quantize_rows(&xf, k, &mut data, &mut scales);
        poison_nonfinite_groups(&xf, k, 1, &mut data, &mut scales);
        Ok(Self { data, scales, m, k })
    }

    /// Wraps existing data and scales after checking their lengths.
    pub fn from_parts(data: Vec<F>, scales: Vec<f32>, m: usize, k: usize) -> Result<Self, QuantError> {
        check_len("data", data.len(), product("data", &[m, k])?)?;
        check_len("scales", scales.len(), product("scales", &[m, blocks(k)])?)?;
        Ok(Self { data, scales, m, k })
    }

    /// `⌈k / 128⌉`, the number of scales per row.
    pub fn k_blocks(&self) -> usize {
        blocks(self.k)
    }

    /// The dequantized matrix `[m, k]`: `data[i, kk] · scales[i, kk / 128]`.
    pub fn dequantize(&self) -> Vec<f32> {
        dequantize_with(&self.data, &self.scales, self.k, |i| i)
    }
}

/// A weight matrix `B[n, k]` quantized per 128×128 block, with its scales SFB.
///
/// Layout: `data` is `[n, k]` row-major; `scales` is `[⌈n/128⌉, ⌈k/128⌉]` row-major `f32`, entry
/// `(jb, kb)` scaling rows `128·jb ..` and columns `128·kb ..` (partial at the edges).
#[derive(Debug, Clone)]
pub struct QuantizedWeights<F> {
    /// FP8 values, `[n, k]` row-major.
    pub data: Vec<F>,
    /// Dequantization scales SFB, `[⌈n/128⌉, ⌈k/128⌉]` row-major.
    pub scales: Vec<f32>,
    /// Rows (output columns of the GEMM).
    pub n: usize,
    /// Columns (the reduction dimension).
    pub k: usize,
}

impl<F: Fp8Format> QuantizedWeights<F> {
    /// Quantizes a row-major `[n, k]` matrix per 128×128 block.
    pub fn quantize<X: Copy + Into<f32> + Sync>(x: &[X], n: usize, k: usize) -> Result<Self, QuantError> {
        check_len("x", x.len(), product("x", &[n, k])?)?;
        check_finite("x", x)?;
        let mut data = vec![F::default(); x.len()];
        let mut scales = vec![0.0f32; blocks(n) * blocks(k)];
        quantize_blocks(x, k, &mut data, &mut scales);
        Ok(Self { data, scales, n, k })
    }

    /// The device weight kernels' definition for any input: like [`Self::quantize`], except that
    /// a 128×128 block containing a NaN or ±∞ gets scale NaN and all of its values become the
    /// format's NaN instead of an error (see [`QuantizedActivations::quantize_nan_groups`]).
    pub fn quantize_nan_groups<X: Copy + Into<f32> + Sync>(x: &[X], n: usize, k: usize) -> Result<Self, QuantError> {
        check_len("x", x.len(), product("x", &[n, k])?)?;
        let xf: Vec<f32> = x.iter().map(|&v| v.into()).collect();
        let mut data = vec![F::default(); x.len()];
        let mut scales = vec![0.0f32; blocks(n) * blocks(k)];
        quantize_blocks(&xf, k, &mut data, &mut scales);
        poison_nonfinite_groups(&xf, k, BLOCK, &mut data, &mut scales);
        Ok(Self { data, scales, n, k })
    }

    /// Wraps existing data and scales after checking their lengths.
    pub fn from_parts(data: Vec<F>, scales: Vec<f32>, n: usize, k: usize) -> Result<Self, QuantError> {
        check_len("data", data.len(), product("data", &[n, k])?)?;
        check_len("scales", scales.len(), product("scales", &[blocks(n), blocks(k)])?)?;
        Ok(Self { data, scales, n, k })
    }

    /// `⌈k / 128⌉`, the number of scales per block row.
    pub fn k_blocks(&self) -> usize {
        blocks(self.k)
    }

    /// `⌈n / 128⌉`, the number of block rows.
    pub fn n_blocks(&self) -> usize {
        blocks(self.n)
    }

    /// The dequantized matrix `[n, k]`: `data[j, kk] · scales[j / 128, kk / 128]`.
    pub fn dequantize(&self) -> Vec<f32> {
        dequantize_with(&self.data, &self.scales, self.k, |j| j / BLOCK)
    }
}

impl QuantizedWeights<E4M3Fn> {
    /// Converts E4M3FN weights to E4M3FNUZ with doubled scales (see [`e4m3fn_to_e4m3fnuz`]).
    pub fn to_e4m3fnuz(&self) -> Result<QuantizedWeights<E4M3Fnuz>, QuantError> {
        check_len("data", self.data.len(), product("data", &[self.n, self.k])?)?;
        check_len("scales", self.scales.len(), product("scales", &[self.n_blocks(), self.k_blocks()])?)?;
        let (data, scales) = e4m3fn_to_e4m3fnuz(&self.data, &self.scales)?;
        Ok(QuantizedWeights { data, scales, n: self.n, k: self.k })
    }
}

/// `G` weight matrices `B[g][n, k]`, each quantized per 128×128 block (the experts of an MoE layer).
///
/// Layout: `data` is `[G, n, k]` row-major; `scales` is `[G, ⌈n/128⌉, ⌈k/128⌉]` row-major `f32`.
/// Blocks never straddle two groups.
#[derive(Debug, Clone)]
pub struct GroupedQuantizedWeights<F> {
    /// FP8 values, `[G, n, k]` row-major.
    pub data: Vec<F>,
    /// Dequantization scales, `[G, ⌈n/128⌉, ⌈k/128⌉]` row-major.
    pub scales: Vec<f32>,
    /// Number of groups `G`.
    pub groups: usize,
    /// Rows per group.
    pub n: usize,
    /// Columns (the reduction dimension).
    pub k: usize,
}

impl<F: Fp8Format> GroupedQuantizedWeights<F> {
    /// Quantizes a row-major `[G, n, k]` tensor, each group per 128×128 block.
    pub fn quantize<X: Copy + Into<f32> + Sync>(x: &[X], groups: usize, n: usize, k: usize) -> Result<Self, QuantError> {
        check_len("x", x.len(), product("x", &[groups, n, k])?)?;
        check_finite("x", x)?;
        let per_scales = blocks(n) * blocks(k);
        let mut data = vec![F::default(); x.len()];
        let mut scales = vec![0.0f32; groups * per_scales];
        if n * k > 0 {
            for ((xg, dg), sg) in x.chunks(n * k).zip(data.chunks_mut(n * k)).zip(scales.chunks_mut(per_scales)) {
                quantize_blocks(xg, k, dg, sg);
            }
        }
        Ok(Self { data, scales, groups, n, k })
    }

    /// Stacks per-group weights (all with the same `n` and `k`).
    pub fn from_groups(groups: &[QuantizedWeights<F>]) -> Result<Self, QuantError> {
        let (n, k) = groups.first().map_or((0, 0), |g| (g.n, g.k));
        // Validate every group before sizing anything from the (public, so untrusted) fields.
        let (per_data, per_scales) = (product("groups[_].data", &[n, k])?, product("groups[_].scales", &[blocks(n), blocks(k)])?);
        for g in groups {
            check_len("groups[_].n", g.n, n)?;
            check_len("groups[_].k", g.k, k)?;
            check_len("groups[_].data", g.data.len(), per_data)?;
            check_len("groups[_].scales", g.scales.len(), per_scales)?;
        }
        let mut data = Vec::with_capacity(product("data", &[groups.len(), per_data])?);
        let mut scales = Vec::with_capacity(product("scales", &[groups.len(), per_scales])?);
        for g in groups {
            data.extend_from_slice(&g.data);
            scales.extend_from_slice(&g.scales);
        }
        Ok(Self { data, scales, groups: groups.len(), n, k })
    }

    /// Wraps existing data and scales after checking their lengths.
    pub fn from_parts(data: Vec<F>, scales: Vec<f32>, groups: usize, n: usize, k: usize) -> Result<Self, QuantError> {
        check_len("data", data.len(), product("data", &[groups, n, k])?)?;
        check_len("scales", scales.len(), product("scales", &[groups, blocks(n), blocks(k)])?)?;
        Ok(Self { data, scales, groups, n, k })
    }

    /// The dequantized tensor `[G, n, k]`.
    pub fn dequantize(&self) -> Vec<f32> {
        let nb = blocks(self.n);
        let n = self.n.max(1);
        dequantize_with(&self.data, &self.scales, self.k, |row| (row / n) * nb + (row % n) / BLOCK)
    }
}

/// One operand of a K-grouped GEMM (MoE weight gradient): `G` matrices of `rows × k_g`, each
/// quantized per token (1×128 along its own K), stored back to back.
///
/// Layout: group `g` starts at element `rows · Σ_{h<g} k_h` of `data` and is `[rows, k_g]` row-major;
/// its scales start at `rows · Σ_{h<g} ⌈k_h/128⌉` of `scales` and are `[rows, ⌈k_g/128⌉]` row-major.
/// Scaling groups never straddle two K groups.
#[derive(Debug, Clone)]
pub struct KGroupedOperand<F> {
    /// FP8 values, groups back to back.
    pub data: Vec<F>,
    /// Per-token scales, groups back to back.
    pub scales: Vec<f32>,
    /// Rows (`m` for the left operand, `n` for the right one).
    pub rows: usize,
    /// K extent of each group.
    pub ks: Vec<usize>,
}

impl<F: Fp8Format> KGroupedOperand<F> {
    /// Quantizes `G` row-major `[rows, k_g]` matrices stored back to back in `x`.
    pub fn quantize<X: Copy + Into<f32> + Sync>(x: &[X], rows: usize, ks: &[usize]) -> Result<Self, QuantError> {
        let total_k = ks
            .iter()
            .try_fold(0usize, |a, &k| a.checked_add(k))
            .ok_or_else(|| QuantError::SizeOverflow { arg: "ks", dims: format!("sum of {} group sizes", ks.len()) })?;
        check_len("x", x.len(), product("x", &[rows, total_k])?)?;
        check_finite("x", x)?;
        let total_kb: usize = ks.iter().map(|&k| blocks(k)).sum();
        let mut data = vec![F::default(); x.len()];
        let mut scales = vec![0.0f32; product("scales", &[rows, total_kb])?];
        let (mut off, mut soff) = (0, 0);
        for &k in ks {
            let (len, slen) = (rows * k, rows * blocks(k));
            quantize_rows(&x[off..off + len], k, &mut data[off..off + len], &mut scales[soff..soff + slen]);
            off += len;
            soff += slen;
        }
        Ok(Self { data, scales, rows, ks: ks.to_vec() })
    }

    /// Element offset of group `g`'s data and of its scales.
    pub fn offsets(&self, g: usize) -> (usize, usize) {
        let ks = &self.ks[..g.min(self.ks.len())];
        (self.rows * ks.iter().sum::<usize>(), self.rows * ks.iter().map(|&k| blocks(k)).sum::<usize>())
    }

    /// Group `g` as a standalone [`QuantizedActivations`] (`m = rows`, `k = k_g`); `None` if `g ≥ G`
    /// or the vectors are shorter than the layout requires.
    pub fn group(&self, g: usize) -> Option<QuantizedActivations<F>> {
        let k = *self.ks.get(g)?;
        let (off, soff) = self.offsets(g);
        Some(QuantizedActivations {
            data: self.data.get(off..off + self.rows * k)?.to_vec(),
            scales: self.scales.get(soff..soff + self.rows * blocks(k))?.to_vec(),
            m: self.rows,
            k,
        })
    }
}

/// Converts one E4M3FN value to the E4M3FNUZ bit pattern that is worth exactly half of it, or
/// `None` for the E4M3FN NaNs (`0x7F`, `0xFF`).
///
/// Both formats share the field layout; E4M3FNUZ has bias 8 instead of 7, so the same bits mean
/// half the value (subnormals included). The only other difference is `0x80`: −0 in E4M3FN, NaN in
/// E4M3FNUZ, so it becomes `0x00` (+0).
#[inline]
pub fn e4m3fn_to_e4m3fnuz_value(x: E4M3Fn) -> Option<E4M3Fnuz> {
    match x.to_bits() {
        0x7F | 0xFF => None,
        0x80 => Some(E4M3Fnuz::from_bits(0x00)),
        b => Some(E4M3Fnuz::from_bits(b)),
    }
}

/// Converts E4M3FN data and its dequantization scales (for example DeepSeek-V3's `weight_scale_inv`)
/// into E4M3FNUZ data and scales that dequantize to exactly the same values.
///
/// Bits are kept except `0x80` (−0) → `0x00`; every scale is doubled (exact in `f32`). The scales
/// may use any layout: each is simply doubled.
///
/// Errors: an E4M3FN NaN (`0x7F`/`0xFF`) in `weights` is rejected with [`QuantError::NanInput`]
/// (a checkpoint containing NaN weights is corrupt, and keeping the bits would silently produce
/// ±240·scale); a scale that is not finite or whose double overflows gives [`QuantError::Scale`].
pub fn e4m3fn_to_e4m3fnuz(weights: &[E4M3Fn], scale_inv: &[f32]) -> Result<(Vec<E4M3Fnuz>, Vec<f32>), QuantError> {
    let scales = scale_inv
        .iter()
        .enumerate()
        .map(|(index, &s)| {
            let d = s * 2.0;
            if d.is_finite() { Ok(d) } else { Err(QuantError::Scale { arg: "scale_inv", index, value: s }) }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let data = weights
        .iter()
        .enumerate()
        .map(|(index, &w)| e4m3fn_to_e4m3fnuz_value(w).ok_or(QuantError::NanInput { arg: "weights", index, bits: w.to_bits() }))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((data, scales))
}

/// Rounds each `f32` to the nearest `bf16` (ties to even), as the GEMM epilogue does.
pub fn to_bf16(x: &[f32]) -> Vec<bf16> {
    x.iter().map(|&v| bf16::from_f32(v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activation_recipe_by_hand() {
        // One row, one partial group: amax = 3, sf = 3/240 = 0.0125; 1.5 / 0.0125 = 120.
        let q = QuantizedActivations::<E4M3Fnuz>::quantize(&[3.0f32, -1.5, 0.0], 1, 3).unwrap();
        assert_eq!(q.scales, vec![3.0f32 / 240.0]);
        assert_eq!(q.data.iter().map(|v| v.to_f32()).collect::<Vec<_>>(), vec![240.0, -120.0, 0.0]);
        // All-zero group: amax clamps to 1e-4.
        let z = QuantizedActivations::<E4M3Fn>::quantize(&[0.0f32; 4], 2, 2).unwrap();
        assert_eq!(z.scales, vec![1e-4f32 / 448.0; 2]);
    }

    #[test]
    fn lengths_are_checked() {
        assert_eq!(QuantizedWeights::<E4M3Fnuz>::quantize(&[0.0f32; 5], 2, 3).unwrap_err(), QuantError::Length { arg: "x", expected: 6, actual: 5 });
    }
}
