//! CPU reference GEMMs with DeepGEMM's block-scale semantics, an unquantized reference and
//! DeepGEMM's accuracy metric [`calc_diff`].
//!
//! # Semantics
//! All FP8 GEMMs are "NT": `A[m, k]` and `B[n, k]` are both K-major (layouts in [`crate::quant`]).
//! With `a`, `b` the exact decoded FP8 values and `sfa`, `sfb` the scales,
//!
//! ```text
//! D[i, j] = Σ_kb  sfa[i, kb] · sfb[j / 128, kb] · Σ_{k ∈ block kb} a[i, k] · b[j, k]
//! ```
//!
//! (`sfb[j, kb]` for the per-token right operand of the K-grouped GEMM). Each per-block partial sum
//! is one `gemm` (crate `gemm`) call over the decoded-but-unscaled 128-wide K panels with `f32`
//! accumulation, as the MFMA accumulates in `f32`; the partial sums are then scaled and summed in
//! `f64` (the scale product `sfa · sfb` is exact in `f64`). The `f32` results are that `f64` sum
//! rounded once to `f32`; the `bf16` results round that `f32` to nearest-even, as the kernels'
//! epilogue does. Work is split into 256×128 output tiles run in parallel with rayon.
//!
//! Grouped variants write only the rows they compute: rows whose `m_indices` entry is −1 and rows at
//! or beyond `masked_m[g]` are left untouched.
//!
//! # Errors
//! Every entry point validates all lengths and indices before computing and returns a
//! [`ReferenceError`] naming the argument and the expected value; a failed call writes nothing.
//!
//! # Example
//! ```
//! use fp8gemm::fp8::E4M3Fnuz;
//! use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
//! use fp8gemm::reference::{calc_diff, fp8_gemm_nt, gemm_nt_f32};
//! use half::bf16;
//!
//! let (m, n, k) = (4, 3, 200);
//! let a: Vec<f32> = (0..m * k).map(|i| ((i % 13) as f32 - 6.0) / 7.0).collect();
//! let b: Vec<f32> = (0..n * k).map(|i| ((i % 11) as f32 - 5.0) / 3.0).collect();
//! let qa = QuantizedActivations::<E4M3Fnuz>::quantize(&a, m, k)?;
//! let qb = QuantizedWeights::<E4M3Fnuz>::quantize(&b, n, k)?;
//! let mut d = vec![bf16::ZERO; m * n];
//! fp8_gemm_nt(&qa, &qb, &mut d)?;
//! let mut exact = vec![0.0f32; m * n];
//! gemm_nt_f32(&a, &b, m, n, k, &mut exact)?;
//! assert!(calc_diff(&d, &exact)? < 1e-3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use gemm::{Parallelism, gemm};
use half::bf16;
use rayon::prelude::*;

use crate::fp8::{Fp8Format, to_f32_vec};
use crate::quant::{BLOCK, GroupedQuantizedWeights, KGroupedOperand, QuantizedActivations, QuantizedWeights, blocks};

/// Output tile height of the parallel decomposition (256 measured fastest with `gemm` 0.19 on AVX2).
const TILE_M: usize = 256;
/// Output tile width: one 128-row block of B, so a tile uses a single SFB row per K block.
const TILE_N: usize = BLOCK;

/// Errors from the reference GEMMs; each names the offending argument and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ReferenceError {
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
    /// A dimension disagrees with another argument.
    #[error("`{arg}` is {actual}, expected {expected}")]
    Dimension {
        /// The argument (e.g. `b.k`).
        arg: &'static str,
        /// Required value.
        expected: usize,
        /// Actual value.
        actual: usize,
    },
    /// The masked layout needs `a.m` to be a multiple of the number of groups.
    #[error("`a.m` is {m}, expected a multiple of the group count {groups} (a is [groups, m_max, k])")]
    MaskedRows {
        /// Rows of `a`.
        m: usize,
        /// Number of groups.
        groups: usize,
    },
    /// An `m_indices` entry is neither −1 nor a valid group.
    #[error("`m_indices[{index}]` is {value}, expected -1 or a group index in 0..{groups}")]
    GroupIndex {
        /// Row.
        index: usize,
        /// The entry.
        value: i32,
        /// Number of groups.
        groups: usize,
    },
    /// A `masked_m` entry is outside `0..=m_max`.
    #[error("`masked_m[{group}]` is {value}, expected a row count in 0..={m_max}")]
    MaskedM {
        /// Group.
        group: usize,
        /// The entry.
        value: i32,
        /// Rows per group.
        m_max: usize,
    },
    /// A dimension product does not fit in `usize`.
    #[error("`{arg}`: the element count overflows usize")]
    SizeOverflow {
        /// The argument.
        arg: &'static str,
    },
    /// An aligned block of `m_indices` mixes groups (the kernels' contiguous layout allows one group
    /// per block, plus −1 padding rows).
    #[error("`m_indices[{index}]` is {value}, expected {expected} or -1 like the rest of its {alignment}-row block starting at row {block_start}")]
    MixedBlock {
        /// First row of the block.
        block_start: usize,
        /// Block height.
        alignment: usize,
        /// Offending row.
        index: usize,
        /// Its entry.
        value: i32,
        /// The entry of the block's first row.
        expected: i32,
    },
}

type Result<T> = core::result::Result<T, ReferenceError>;

fn product(arg: &'static str, dims: &[usize]) -> Result<usize> {
    dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or(ReferenceError::SizeOverflow { arg })
}

fn check_len(arg: &'static str, actual: usize, expected: usize) -> Result<()> {
    if actual == expected { Ok(()) } else { Err(ReferenceError::Length { arg, expected, actual }) }
}

fn check_dim(arg: &'static str, actual: usize, expected: usize) -> Result<()> {
    if actual == expected { Ok(()) } else { Err(ReferenceError::Dimension { arg, expected, actual }) }
}

fn check_activations<F>(arg_data: &'static str, arg_scales: &'static str, a: &QuantizedActivations<F>) -> Result<()> {
    check_len(arg_data, a.data.len(), product(arg_data, &[a.m, a.k])?)?;
    check_len(arg_scales, a.scales.len(), product(arg_scales, &[a.m, blocks(a.k)])?)
}

/// How the right operand's scales are indexed.
#[derive(Clone, Copy)]
enum BScales {
    /// 128×128 blocks: row `j` uses scale row `j / 128` (dense and m-grouped GEMMs).
    Block,
    /// 1×128 groups: row `j` uses scale row `j` (K-grouped GEMM).
    PerToken,
}

/// One block-scaled product `A[rows, k] · B[n, k]ᵀ` on decoded (unscaled) values.
struct Problem<'a> {
    a: &'a [f32],
    sfa: &'a [f32],
    b: &'a [f32],
    sfb: &'a [f32],
    b_scales: BScales,
    rows: usize,
    n: usize,
    k: usize,
    /// Output row of the problem's first row.
    out_row: usize,
}

/// Computes one tile: per 128-K block a `gemm` of the unscaled panels, then the scaled `f64` sum.
fn compute_tile(p: &Problem<'_>, i0: usize, j0: usize, partial: &mut Vec<f32>) -> (usize, usize, Vec<f64>) {
    let tm = TILE_M.min(p.rows - i0);
    let tn = TILE_N.min(p.n - j0);
    let kbs = blocks(p.k);
    let mut acc = vec![0.0f64; tm * tn];
    partial.resize(tm * tn, 0.0);
    for kb in 0..kbs {
        let k0 = kb * BLOCK;
        let kw = BLOCK.min(p.k - k0);
        // SAFETY: `gemm` reads lhs[r·k + c] for r < tm, c < kw starting at a[(i0)·k + k0]: the last
        // element read is (i0 + tm − 1)·k + k0 + kw − 1 < rows·k = a.len(). It reads rhs (Bᵀ) with
        // row stride 1 and column stride k starting at b[j0·k + k0]: the last element is
        // (j0 + tn − 1)·k + k0 + kw − 1 < n·k = b.len(). It writes dst[r·tn + c] for r < tm, c < tn,
        // inside `partial` (len tm·tn), and with read_dst = false never reads it. The three
        // regions are distinct allocations, and `f32` is a supported element type.
        unsafe {
            gemm(
                tm,
                tn,
                kw,
                partial.as_mut_ptr(),
                1,
                tn as isize,
                false,
                p.a.as_ptr().add(i0 * p.k + k0),
                1,
                p.k as isize,
                p.b.as_ptr().add(j0 * p.k + k0),
                p.k as isize,
                1,
                0.0f32,
                1.0f32,
                false,
                false,
                false,
                Parallelism::None,
            );
        }
        for i in 0..tm {
            let sa = p.sfa[(i0 + i) * kbs + kb] as f64;
            let row = &mut acc[i * tn..(i + 1) * tn];
            let prow = &partial[i * tn..(i + 1) * tn];
            match p.b_scales {
                BScales::Block => {
                    let s = sa * p.sfb[(j0 / BLOCK) * kbs + kb] as f64;
                    for (o, &v) in row.iter_mut().zip(prow) {
                        *o += s * v as f64;
                    }
                }
                BScales::PerToken => {
                    for (j, (o, &v)) in row.iter_mut().zip(prow).enumerate() {
                        *o += sa * p.sfb[(j0 + j) * kbs + kb] as f64 * v as f64;
                    }
                }
            }
        }
    }
    (tm, tn, acc)
}

/// Computes every problem into `out` (row-major, `n` columns, all problems share `n`) in parallel,
/// storing each element with `store(&mut out[row, col], value)`. Rows outside every problem are
/// not touched. Callers guarantee that problems cover disjoint output rows inside `out`.
fn run<T: Send>(problems: &[Problem<'_>], n: usize, out: &mut [T], store: impl Fn(&mut T, f64) + Sync) {
    // One chunk per (problem, 256-row tile): its output rows are disjoint from every other chunk's.
    let mut chunks: Vec<(usize, usize, usize)> = Vec::new();
    for (pi, p) in problems.iter().enumerate() {
        for i0 in (0..p.rows).step_by(TILE_M) {
            chunks.push((p.out_row + i0, pi, i0));
        }
    }
    // Sorted by first output row; the split below relies on the ranges not overlapping (true by
    // construction: dense has one problem, m-grouped runs and groups are disjoint row ranges).
    chunks.sort_unstable();
    let mut rows_of_chunks: Vec<(&mut [T], usize, usize)> = Vec::with_capacity(chunks.len());
    let (mut rest, mut cursor) = (out, 0usize);
    for (row, pi, i0) in chunks {
        let tm = TILE_M.min(problems[pi].rows - i0);
        let (_, tail) = std::mem::take(&mut rest).split_at_mut((row - cursor) * n);
        let (mine, tail) = tail.split_at_mut(tm * n);
        rows_of_chunks.push((mine, pi, i0));
        rest = tail;
        cursor = row + tm;
    }
    rows_of_chunks.into_par_iter().for_each(|(rows, pi, i0)| {
        let p = &problems[pi];
        let tiles: Vec<(usize, usize, Vec<f64>)> = (0..p.n)
            .step_by(TILE_N)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map_init(Vec::new, |partial, j0| {
                let (_, tn, values) = compute_tile(p, i0, j0, partial);
                (j0, tn, values)
            })
            .collect();
        for (j0, tn, values) in tiles {
            for (row, vals) in rows.chunks_mut(n).zip(values.chunks(tn)) {
                for (o, &v) in row[j0..j0 + tn].iter_mut().zip(vals) {
                    store(o, v);
                }
            }
        }
    });
}

fn store_f32(o: &mut f32, v: f64) {
    *o = v as f32;
}

/// The kernels' epilogue: the `f32` accumulator rounded to nearest-even `bf16`.
fn store_bf16(o: &mut bf16, v: f64) {
    *o = bf16::from_f32(v as f32);
}

/// Dense FP8 GEMM, `f32` result: `d[m, n] = block-scaled A · Bᵀ` (every element written).
pub fn fp8_gemm_nt_f32<F: Fp8Format>(a: &QuantizedActivations<F>, b: &QuantizedWeights<F>, d: &mut [f32]) -> Result<()> {
    dense(a, b, d, store_f32)
}

/// Dense FP8 GEMM with a `bf16` result (`fp8_gemm_nt` in DeepGEMM): the [`fp8_gemm_nt_f32`] result
/// rounded to nearest-even.
pub fn fp8_gemm_nt<F: Fp8Format>(a: &QuantizedActivations<F>, b: &QuantizedWeights<F>, d: &mut [bf16]) -> Result<()> {
    dense(a, b, d, store_bf16)
}

fn dense<F: Fp8Format, T: Send>(a: &QuantizedActivations<F>, b: &QuantizedWeights<F>, d: &mut [T], store: fn(&mut T, f64)) -> Result<()> {
    check_activations("a.data", "a.scales", a)?;
    check_dim("b.k", b.k, a.k)?;
    check_len("b.data", b.data.len(), product("b.data", &[b.n, b.k])?)?;
    check_len("b.scales", b.scales.len(), product("b.scales", &[blocks(b.n), blocks(b.k)])?)?;
    check_len("d", d.len(), product("d", &[a.m, b.n])?)?;
    let (av, bv) = rayon::join(|| to_f32_vec(&a.data), || to_f32_vec(&b.data));
    let problem = Problem { a: &av, sfa: &a.scales, b: &bv, sfb: &b.scales, b_scales: BScales::Block, rows: a.m, n: b.n, k: a.k, out_row: 0 };
    run(&[problem], b.n, d, store);
    Ok(())
}

fn check_grouped<F>(b: &GroupedQuantizedWeights<F>, k: usize) -> Result<()> {
    check_dim("b.k", b.k, k)?;
    check_len("b.data", b.data.len(), product("b.data", &[b.groups, b.n, b.k])?)?;
    check_len("b.scales", b.scales.len(), product("b.scales", &[b.groups, blocks(b.n), blocks(b.k)])?)
}

/// Row alignment of each group in the m-grouped contiguous layout (DeepGEMM's
/// `get_m_alignment_for_contiguous_layout()`): every group's rows start on a multiple of it.
pub const M_ALIGNMENT_CONTIGUOUS: usize = 128;

/// Builds `m_indices` for the contiguous layout from per-group row counts: group `g` gets
/// `group_rows[g]` rows followed by −1 padding up to a multiple of `alignment` (empty groups take
/// no rows). `alignment` 0 is treated as 1 (no padding).
pub fn contiguous_m_indices(group_rows: &[usize], alignment: usize) -> Vec<i32> {
    let alignment = alignment.max(1);
    let mut m_indices = Vec::with_capacity(group_rows.iter().map(|r| r.div_ceil(alignment) * alignment).sum());
    for (g, &rows) in group_rows.iter().enumerate() {
        let group = i32::try_from(g).unwrap_or(i32::MAX);
        m_indices.extend(std::iter::repeat_n(group, rows));
        m_indices.extend(std::iter::repeat_n(-1, rows.div_ceil(alignment) * alignment - rows));
    }
    m_indices
}

/// Checks the kernels' contiguous-layout rule: within every `alignment`-row block of `m_indices`
/// (the last one may be shorter) all entries other than −1 name the same group, in `0..groups`.
/// A block may thus end in −1 padding rows (DeepGEMM pads each group to the alignment this way);
/// kernels compute a block with its group and skip all-padding blocks, so unlike the reference
/// they may write the padding rows of a mixed block, which comparisons must ignore.
/// The reference GEMMs accept any assignment; kernel entry points use this check.
pub fn validate_contiguous_layout(m_indices: &[i32], groups: usize, alignment: usize) -> Result<()> {
    contiguous_runs(m_indices, groups)?;
    let alignment = alignment.max(1);
    for (b, block) in m_indices.chunks(alignment).enumerate() {
        let Some(&expected) = block.iter().find(|&&v| v >= 0) else { continue };
        if let Some(off) = block.iter().position(|&v| v >= 0 && v != expected) {
            return Err(ReferenceError::MixedBlock { block_start: b * alignment, alignment, index: b * alignment + off, value: block[off], expected });
        }
    }
    Ok(())
}

/// Validates the contiguous layout and returns the runs `(first_row, rows, group)` of equal,
/// non-negative `m_indices`.
fn contiguous_runs(m_indices: &[i32], groups: usize) -> Result<Vec<(usize, usize, usize)>> {
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for (index, &value) in m_indices.iter().enumerate() {
        if value == -1 {
            continue;
        }
        let g = usize::try_from(value).ok().filter(|&g| g < groups).ok_or(ReferenceError::GroupIndex { index, value, groups })?;
        match runs.last_mut() {
            Some((start, len, last)) if *last == g && *start + *len == index => *len += 1,
            _ => runs.push((index, 1, g)),
        }
    }
    Ok(runs)
}

/// Builds one problem per contiguous run of rows that use the same group.
fn m_grouped_problems<'a>(
    av: &'a [f32],
    a_scales: &'a [f32],
    bv: &'a [f32],
    b: &'a GroupedQuantizedWeights<impl Fp8Format>,
    k: usize,
    runs: &[(usize, usize, usize)],
) -> Vec<Problem<'a>> {
    let (kb, nb) = (blocks(k), blocks(b.n));
    runs.iter()
        .map(|&(start, rows, g)| Problem {
            a: &av[start * k..(start + rows) * k],
            sfa: &a_scales[start * kb..(start + rows) * kb],
            b: &bv[g * b.n * k..(g + 1) * b.n * k],
            sfb: &b.scales[g * nb * kb..(g + 1) * nb * kb],
            b_scales: BScales::Block,
            rows,
            n: b.n,
            k,
            out_row: start,
        })
        .collect()
}

/// M-grouped contiguous FP8 GEMM (MoE prefill), `f32` result.
///
/// `a` is `[m_sum, k]`, `b` is `[G, n, k]`, `d` is `[m_sum, n]`, `m_indices[i]` is the group of row
/// `i` or −1 for a padding row. Row `i` of `d` becomes row `i` of `A · B[m_indices[i]]ᵀ`; rows with
/// −1 are not written. (The kernels additionally require each 128-row block to use one group plus
/// −1 padding, as DeepGEMM does — see [`validate_contiguous_layout`]; the reference accepts any
/// assignment.)
pub fn m_grouped_fp8_gemm_nt_contiguous_f32<F: Fp8Format>(
    a: &QuantizedActivations<F>,
    b: &GroupedQuantizedWeights<F>,
    m_indices: &[i32],
    d: &mut [f32],
) -> Result<()> {
    contiguous(a, b, m_indices, d, store_f32)
}

/// M-grouped contiguous FP8 GEMM with a `bf16` result (`m_grouped_fp8_gemm_nt_contiguous`); see
/// [`m_grouped_fp8_gemm_nt_contiguous_f32`]. Rows with `m_indices[i] == −1` are left untouched.
pub fn m_grouped_fp8_gemm_nt_contiguous<F: Fp8Format>(
    a: &QuantizedActivations<F>,
    b: &GroupedQuantizedWeights<F>,
    m_indices: &[i32],
    d: &mut [bf16],
) -> Result<()> {
    contiguous(a, b, m_indices, d, store_bf16)
}

fn contiguous<F: Fp8Format, T: Send>(
    a: &QuantizedActivations<F>,
    b: &GroupedQuantizedWeights<F>,
    m_indices: &[i32],
    d: &mut [T],
    store: fn(&mut T, f64),
) -> Result<()> {
    check_activations("a.data", "a.scales", a)?;
    check_grouped(b, a.k)?;
    check_len("m_indices", m_indices.len(), a.m)?;
    check_len("d", d.len(), product("d", &[a.m, b.n])?)?;
    let runs = contiguous_runs(m_indices, b.groups)?;
    let (av, bv) = rayon::join(|| to_f32_vec(&a.data), || to_f32_vec(&b.data));
    let problems = m_grouped_problems(&av, &a.scales, &bv, b, a.k, &runs);
    run(&problems, b.n, d, store);
    Ok(())
}

/// M-grouped masked FP8 GEMM (MoE decode), `f32` result.
///
/// `a` is `[G, m_max, k]` (a [`QuantizedActivations`] with `m = G · m_max`, its per-token scales
/// `[G, m_max, ⌈k/128⌉]`), `b` is `[G, n, k]`, `d` is `[G, m_max, n]`. For each group `g` only rows
/// `0..masked_m[g]` are computed and written; the others are left untouched.
pub fn m_grouped_fp8_gemm_nt_masked_f32<F: Fp8Format>(
    a: &QuantizedActivations<F>,
    b: &GroupedQuantizedWeights<F>,
    masked_m: &[i32],
    d: &mut [f32],
) -> Result<()> {
    masked(a, b, masked_m, d, store_f32)
}

/// M-grouped masked FP8 GEMM with a `bf16` result (`m_grouped_fp8_gemm_nt_masked`); see
/// [`m_grouped_fp8_gemm_nt_masked_f32`]. Rows at or beyond `masked_m[g]` are left untouched.
pub fn m_grouped_fp8_gemm_nt_masked<F: Fp8Format>(a: &QuantizedActivations<F>, b: &GroupedQuantizedWeights<F>, masked_m: &[i32], d: &mut [bf16]) -> Result<()> {
    masked(a, b, masked_m, d, store_bf16)
}

fn masked<F: Fp8Format, T: Send>(
    a: &QuantizedActivations<F>,
    b: &GroupedQuantizedWeights<F>,
    masked_m: &[i32],
    d: &mut [T],
    store: fn(&mut T, f64),
) -> Result<()> {
    check_activations("a.data", "a.scales", a)?;
    check_grouped(b, a.k)?;
    check_len("masked_m", masked_m.len(), b.groups)?;
    // `is_multiple_of(0)` holds only for 0: no groups means no rows.
    if !a.m.is_multiple_of(b.groups) {
        return Err(ReferenceError::MaskedRows { m: a.m, groups: b.groups });
    }
    let m_max = a.m.checked_div(b.groups).unwrap_or(0);
    check_len("d", d.len(), product("d", &[a.m, b.n])?)?;
    let runs = masked_m
        .iter()
        .enumerate()
        .map(|(group, &value)| {
            let rows = usize::try_from(value).ok().filter(|&r| r <= m_max).ok_or(ReferenceError::MaskedM { group, value, m_max })?;
            Ok((group * m_max, rows, group))
        })
        .collect::<Result<Vec<_>>>()?;
    let (av, bv) = rayon::join(|| to_f32_vec(&a.data), || to_f32_vec(&b.data));
    let problems = m_grouped_problems(&av, &a.scales, &bv, b, a.k, &runs);
    run(&problems, b.n, d, store);
    Ok(())
}

/// K-grouped FP8 GEMM (MoE weight gradient) with `f32` accumulation into `c`:
/// `c[g] = c[g] + A_g · B_gᵀ` for every group `g`.
///
/// `a` holds `G` matrices `[m, k_g]` and `b` holds `G` matrices `[n, k_g]`, both per-token (1×128)
/// quantized ([`KGroupedOperand`] layout, same `ks`); `c` is `[G, m, n]` row-major. The block-scaled
/// sum uses `sfb[j, kb]` (per-token scales on both sides). Each element is computed as
/// `f32(c + Σ …)` with the sum in `f64`. Groups with `k_g = 0` leave `c[g]` unchanged.
pub fn k_grouped_fp8_gemm_nt_contiguous<F: Fp8Format>(a: &KGroupedOperand<F>, b: &KGroupedOperand<F>, c: &mut [f32]) -> Result<()> {
    check_len("b.ks", b.ks.len(), a.ks.len())?;
    for (&ka, &kb) in a.ks.iter().zip(&b.ks) {
        check_dim("b.ks[_]", kb, ka)?;
    }
    let total_k = a.ks.iter().try_fold(0usize, |s, &k| s.checked_add(k)).ok_or(ReferenceError::SizeOverflow { arg: "a.ks" })?;
    let total_kb: usize = a.ks.iter().map(|&k| blocks(k)).sum();
    check_len("a.data", a.data.len(), product("a.data", &[a.rows, total_k])?)?;
    check_len("a.scales", a.scales.len(), product("a.scales", &[a.rows, total_kb])?)?;
    check_len("b.data", b.data.len(), product("b.data", &[b.rows, total_k])?)?;
    check_len("b.scales", b.scales.len(), product("b.scales", &[b.rows, total_kb])?)?;
    let (m, n) = (a.rows, b.rows);
    check_len("c", c.len(), product("c", &[a.ks.len(), m, n])?)?;

    let (av, bv) = rayon::join(|| to_f32_vec(&a.data), || to_f32_vec(&b.data));
    let mut problems = Vec::new();
    for (g, &k) in a.ks.iter().enumerate() {
        let (aoff, asoff) = a.offsets(g);
        let (boff, bsoff) = b.offsets(g);
        problems.push(Problem {
            a: &av[aoff..aoff + m * k],
            sfa: &a.scales[asoff..asoff + m * blocks(k)],
            b: &bv[boff..boff + n * k],
            sfb: &b.scales[bsoff..bsoff + n * blocks(k)],
            b_scales: BScales::PerToken,
            rows: m,
            n,
            k,
            out_row: g * m,
        });
    }
    run(&problems, n, c, |o, v| *o = (*o as f64 + v) as f32);
    Ok(())
}

/// Unquantized reference `d[m, n] = a[m, k] · b[n, k]ᵀ` in `f32` (DeepGEMM's
/// `a.float() @ b.float().t()`), computed by `gemm` on all threads.
pub fn gemm_nt_f32(a: &[f32], b: &[f32], m: usize, n: usize, k: usize, d: &mut [f32]) -> Result<()> {
    check_len("a", a.len(), product("a", &[m, k])?)?;
    check_len("b", b.len(), product("b", &[n, k])?)?;
    check_len("d", d.len(), product("d", &[m, n])?)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        d.fill(0.0);
        return Ok(());
    }
    // SAFETY: lhs a is m×k with row stride k and column stride 1 (last element (m−1)·k + k − 1 <
    // a.len()); rhs is bᵀ, k×n with row stride 1 and column stride k (last element (n−1)·k + k − 1
    // < b.len()); dst d is m×n with row stride n and column stride 1 (len m·n). With read_dst =
    // false d is only written; the slices do not overlap (distinct borrows).
    unsafe {
        gemm(
            m,
            n,
            k,
            d.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            k as isize,
            1,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            Parallelism::Rayon(0),
        );
    }
    Ok(())
}

/// DeepGEMM's accuracy metric, in `f64`: `1 − 2·Σxy / Σ(x² + y²)`, and 0 when both inputs are all
/// zero. 0 means identical; DeepGEMM's FP8 tests require < 0.001 against the unquantized reference.
pub fn calc_diff<X: Copy + Into<f64>, Y: Copy + Into<f64>>(x: &[X], y: &[Y]) -> Result<f64> {
    check_len("y", y.len(), x.len())?;
    let (mut xy, mut sq) = (0.0f64, 0.0f64);
    for (&a, &b) in x.iter().zip(y) {
        let (a, b) = (a.into(), b.into());
        xy += a * b;
        sq += a * a + b * b;
    }
    Ok(if sq == 0.0 { 0.0 } else { 1.0 - 2.0 * xy / sq })
}
