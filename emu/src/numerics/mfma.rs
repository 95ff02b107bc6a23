//! Dense gfx942 MFMA arithmetic on whole-wave operands (`D = A·B + C`, wave64, one block).
//!
//! Operands are lane-major: `a[l]` / `b[l]` is lane `l`'s source register (pair), `c[l][r]` /
//! result `[l][r]` is accumulator register `r` (the `r`-th VGPR/AccVGPR of the tuple) of lane `l`.
//!
//! # Lane layouts (AMD matrix instruction calculator, `-a cdna3`; project `gfx942.md`)
//! All instructions here are single-block. With `M` = 16 or 32 (= N) and `n` elements per lane
//! (8 for FP8, 4 for BF16/F16, 1 for F32; element `e` is byte `e` / 16-bit half `e` of the lane's
//! 64-bit operand, i.e. VGPR `⌊e·w/32⌋`, low bits first):
//! * `A[i][k]` is element `k mod n` of lane `M·⌊k/n⌋ + i`; `B[k][j]` is element `k mod n` of lane
//!   `M·⌊k/n⌋ + j` (so `K = n·64/M`).
//! * 16×16 results (4 registers): `D[i][j]` is register `i mod 4` of lane `16·⌊i/4⌋ + j`;
//!   inverse: register `r` of lane `l` holds `i = 4·⌊l/16⌋ + r`, `j = l mod 16`.
//! * 32×32 results (16 registers): `D[i][j]` is register `4·⌊i/8⌋ + (i mod 4)` of lane
//!   `(32·⌊i/4⌋) mod 64 + j`; inverse: `i = 8·⌊r/4⌋ + 4·⌊l/32⌋ + (r mod 4)`, `j = l mod 32`.
//!
//! # Accumulation model
//! For each output element, `acc = C[i][j]`, then for `k = 0, 1, …, K−1`:
//! `acc = fma(A[i][k], B[k][j], acc)` in IEEE f32 (round to nearest even, one rounding per step,
//! subnormals kept, NaN/∞ propagate by IEEE rules); `D[i][j] = acc`.
//! Public facts behind this choice: CDNA3 accumulates FP8 MFMAs in full FP32 (AMD CDNA3 white
//! paper; unlike Hopper's reduced-width FP8 accumulator), and gem5 PR #2478 found MI300X MFMA
//! results match a fused multiply-add per step rather than a separate multiply and add. The exact
//! internal adder tree and summation order of the hardware are not published, so results that
//! depend on rounding of intermediate sums may differ from silicon in the last bits; the model is
//! deterministic and exact whenever every partial sum is representable in f32.
//! For FP8, F16 and BF16 inputs the product of two elements is exact in f32 (≤ 22 significant
//! bits), so the FMA is computed as an f32 multiply and add (identical result) except for BF16,
//! whose products can leave the f32 exponent range and use a true FMA. F32 MFMAs use a true FMA.

use super::fp8::{F8Kind, decode_table_bits};

/// The MFMA instructions implemented here, for issue timing (the executor's hazard checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MfmaOp {
    /// `v_mfma_f32_16x16x32_{fp8,bf8}_{fp8,bf8}`.
    F32_16x16x32F8,
    /// `v_mfma_f32_32x32x16_{fp8,bf8}_{fp8,bf8}`.
    F32_32x32x16F8,
    /// `v_mfma_f32_16x16x16_bf16` (gfx90a `16x16x16bf16_1k`).
    F32_16x16x16Bf16,
    /// `v_mfma_f32_32x32x8_bf16` (gfx90a `32x32x8bf16_1k`).
    F32_32x32x8Bf16,
    /// `v_mfma_f32_16x16x16_f16`.
    F32_16x16x16F16,
    /// `v_mfma_f32_32x32x8_f16`.
    F32_32x32x8F16,
    /// `v_mfma_f32_16x16x4_f32` (single block, `16x16x4f32`).
    F32_16x16x4F32,
    /// `v_mfma_f32_32x32x2_f32` (single block, `32x32x2f32`).
    F32_32x32x2F32,
    /// `v_mfma_i32_16x16x32_i8` (gfx940+).
    I32_16x16x32I8,
    /// `v_mfma_i32_32x32x16_i8` (gfx940+).
    I32_32x32x16I8,
    /// gfx950 `v_mfma_f32_16x16x128_f8f6f4` (FP8/BF8 operands; FP6/FP4 take half the passes).
    F32_16x16x128F8f6f4,
    /// gfx950 `v_mfma_f32_32x32x64_f8f6f4` (FP8/BF8 operands; FP6/FP4 take half the passes).
    F32_32x32x64F8f6f4,
}

impl MfmaOp {
    /// Number of 4-cycle passes the instruction occupies the matrix core on gfx942.
    ///
    /// Cycle counts from AMD's CDNA3 dense MFMA intrinsic reference ("Instruction throughput"
    /// table: 16x16x32 fp8 16, 32x32x16 fp8 32, 16x16x16 f16/bf16_1k 16, 32x32x8 f16/bf16_1k 32,
    /// 16x16x4 f32 32, 32x32x2 f32 64 cycles), consistent with `gfx942.md` (fp8: 4 and 8 passes)
    /// and with MI300X's published peak rates per CU per clock (FP8 4096, BF16/F16 2048, F32
    /// matrix 256 FLOP). gfx950's f8f6f4 forms with FP8 operands: 8 and 16 passes (32 / 64
    /// cycles, 8192 FLOP/clk/CU; project `hardware.md`).
    pub const fn passes(self) -> u32 {
        match self {
            MfmaOp::F32_16x16x128F8f6f4 => 8,
            MfmaOp::F32_32x32x64F8f6f4 => 16,
            MfmaOp::F32_16x16x32F8 | MfmaOp::F32_16x16x16Bf16 | MfmaOp::F32_16x16x16F16 | MfmaOp::I32_16x16x32I8 => 4,
            MfmaOp::F32_32x32x16F8 | MfmaOp::F32_32x32x8Bf16 | MfmaOp::F32_32x32x8F16 | MfmaOp::F32_16x16x4F32 | MfmaOp::I32_32x32x16I8 => 8,
            MfmaOp::F32_32x32x2F32 => 16,
        }
    }

    /// Cycles the instruction occupies the matrix core (`4 · passes`).
    pub const fn cycles(self) -> u32 {
        4 * self.passes()
    }

    /// `(M, N, K)` of the instruction.
    pub const fn shape(self) -> (usize, usize, usize) {
        match self {
            MfmaOp::F32_16x16x128F8f6f4 => (16, 16, 128),
            MfmaOp::F32_32x32x64F8f6f4 => (32, 32, 64),
            MfmaOp::F32_16x16x32F8 | MfmaOp::I32_16x16x32I8 => (16, 16, 32),
            MfmaOp::F32_32x32x16F8 | MfmaOp::I32_32x32x16I8 => (32, 32, 16),
            MfmaOp::F32_16x16x16Bf16 | MfmaOp::F32_16x16x16F16 => (16, 16, 16),
            MfmaOp::F32_32x32x8Bf16 | MfmaOp::F32_32x32x8F16 => (32, 32, 8),
            MfmaOp::F32_16x16x4F32 => (16, 16, 4),
            MfmaOp::F32_32x32x2F32 => (32, 32, 2),
        }
    }
}

/// `(i, j)` of accumulator register `r` of lane `l` for an `m`×`m` single-block result.
#[inline(always)]
fn d_index(m: usize, lane: usize, r: usize) -> (usize, usize) {
    if m == 16 { (4 * (lane / 16) + r, lane % 16) } else { (8 * (r / 4) + 4 * (lane / 32) + (r % 4), lane % 32) }
}

/// How each step `acc = fma(a, b, acc)` may be evaluated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Every product is exact in f32, so `acc + a·b` equals the fused result.
    ExactProducts,
    /// True fused multiply-add.
    Fused,
}

/// Shared single-block kernel for an `M`×`M`×`K` MFMA with `N` elements per lane
/// (`K = N·64/M`) and `R = M·M/64` accumulator registers. `a_elem(lane, e)` / `b_elem(lane, e)`
/// decode element `e` of lane `lane` of each operand.
#[inline(always)]
fn mfma_core<const M: usize, const K: usize, const N: usize, const R: usize>(
    a_elem: impl Fn(usize, usize) -> f32,
    b_elem: impl Fn(usize, usize) -> f32,
    c: &[[f32; R]; 64],
    step: Step,
) -> [[f32; R]; 64] {
    const { assert!(K * M == N * 64 && R * 64 == M * M) };
    // at[i][k] = A[i][k]; bt[k][j] = B[k][j].
    let mut at = [[0f32; K]; M];
    let mut bt = [[0f32; M]; K];
    for lane in 0..64 {
        let row = lane % M;
        let k0 = N * (lane / M);
        for e in 0..N {
            at[row][k0 + e] = a_elem(lane, e);
            bt[k0 + e][row] = b_elem(lane, e);
        }
    }
    let mut acc = [[0f32; M]; M];
    for (lane, regs) in c.iter().enumerate() {
        for (r, &v) in regs.iter().enumerate() {
            let (i, j) = d_index(M, lane, r);
            acc[i][j] = v;
        }
    }
    // Rows are processed in groups so that enough independent accumulator chains are in flight
    // (a 16-wide row is only 4 SSE vectors); the per-element operation order is unchanged.
    if M <= 16 {
        accumulate_rows::<M, K, 2>(&mut acc, &at, &bt, step);
    } else {
        accumulate_rows::<M, K, 1>(&mut acc, &at, &bt, step);
    }
    let mut out = [[0f32; R]; 64];
    for (lane, regs) in out.iter_mut().enumerate() {
        for (r, v) in regs.iter_mut().enumerate() {
            let (i, j) = d_index(M, lane, r);
            *v = acc[i][j];
        }
    }
    out
}

/// `acc[i][j] = step(acc[i][j], at[i][k], bt[k][j])` for k in order, `G` rows at a time.
#[inline(always)]
fn accumulate_rows<const M: usize, const K: usize, const G: usize>(acc: &mut [[f32; M]; M], at: &[[f32; K]; M], bt: &[[f32; M]; K], step: Step) {
    const { assert!(M.is_multiple_of(G)) };
    for i0 in (0..M).step_by(G) {
        let mut rows: [[f32; M]; G] = std::array::from_fn(|g| acc[i0 + g]);
        for (k, b_row) in bt.iter().enumerate() {
            for (g, row) in rows.iter_mut().enumerate() {
                let a = at[i0 + g][k];
                match step {
                    Step::ExactProducts => {
                        for (d, &b) in row.iter_mut().zip(b_row) {
                            *d += a * b;
                        }
                    }
                    Step::Fused => {
                        for (d, &b) in row.iter_mut().zip(b_row) {
                            *d = a.mul_add(b, *d);
                        }
                    }
                }
            }
        }
        for (g, row) in rows.into_iter().enumerate() {
            acc[i0 + g] = row;
        }
    }
}

#[inline(always)]
fn mfma_f8<const M: usize, const K: usize, const R: usize>(a: &[u64; 64], b: &[u64; 64], c: &[[f32; R]; 64], ka: F8Kind, kb: F8Kind) -> [[f32; R]; 64] {
    let ta = decode_table_bits(ka);
    let tb = decode_table_bits(kb);
    // FP8 products have ≤ 8 significant bits and magnitudes in [2^-34, 2^32]: exact in f32.
    mfma_core::<M, K, 8, R>(
        |lane, e| f32::from_bits(ta[((a[lane] >> (8 * e)) & 0xFF) as usize]),
        |lane, e| f32::from_bits(tb[((b[lane] >> (8 * e)) & 0xFF) as usize]),
        c,
        Step::ExactProducts,
    )
}

/// `v_mfma_f32_16x16x32_{fp8,bf8}_{fp8,bf8} D, A, B, C` (4 passes, 16 cycles).
///
/// `a[l]`/`b[l]`: lane `l`'s 64-bit operand (VGPR pair, low VGPR in bits 31:0) holding 8 FP8
/// values; `A[i][k]` is byte `k mod 8` of lane `16·⌊k/8⌋ + i`, `B[k][j]` is byte `k mod 8` of
/// lane `16·⌊k/8⌋ + j`. `ka`/`kb` give each operand's encoding (`fp8`/`bf8` in the mnemonic,
/// FNUZ on gfx942). `c[l][r]`/result `[l][r]`: register `r` of lane `l` holds
/// `(i, j) = (4·⌊l/16⌋ + r, l mod 16)`. Arithmetic per the module's accumulation model.
/// `cbsz`/`abid`/`blgp` do not apply to FP8 MFMAs (must be 0).
pub fn mfma_f32_16x16x32_f8(a: &[u64; 64], b: &[u64; 64], c: &[[f32; 4]; 64], ka: F8Kind, kb: F8Kind) -> [[f32; 4]; 64] {
    mfma_f8::<16, 32, 4>(a, b, c, ka, kb)
}

/// `v_mfma_f32_32x32x16_{fp8,bf8}_{fp8,bf8} D, A, B, C` (8 passes, 32 cycles).
///
/// `A[i][k]` is byte `k mod 8` of lane `32·⌊k/8⌋ + i`; `B[k][j]` byte `k mod 8` of lane
/// `32·⌊k/8⌋ + j`. `D[i][j]` is register `4·⌊i/8⌋ + (i mod 4)` of lane `(32·⌊i/4⌋) mod 64 + j`;
/// register `r` of lane `l` holds `(8·⌊r/4⌋ + 4·⌊l/32⌋ + r mod 4, l mod 32)`.
pub fn mfma_f32_32x32x16_f8(a: &[u64; 64], b: &[u64; 64], c: &[[f32; 16]; 64], ka: F8Kind, kb: F8Kind) -> [[f32; 16]; 64] {
    mfma_f8::<32, 16, 16>(a, b, c, ka, kb)
}

/// Shared single-block kernel of the integer MFMAs: `M`×`M`×`K` with 8 signed bytes per lane
/// (`K = 8·64/M`), `R = M·M/64` i32 accumulator registers. Exact: every product of two int8
/// values and every partial sum is an integer, added in two's complement (wrapping at 2^32, the
/// only behaviour an i32 adder has; reaching it needs more than 2^31 / 2^14 = 131072 products
/// of magnitude 2^14 in one accumulator).
#[inline(always)]
fn mfma_i8<const M: usize, const K: usize, const R: usize>(a: &[u64; 64], b: &[u64; 64], c: &[[i32; R]; 64]) -> [[i32; R]; 64] {
    const { assert!(K * M == 8 * 64 && R * 64 == M * M) };
    let mut at = [[0i32; K]; M];
    let mut bt = [[0i32; M]; K];
    for lane in 0..64 {
        let row = lane % M;
        let k0 = 8 * (lane / M);
        for e in 0..8 {
            at[row][k0 + e] = i32::from((a[lane] >> (8 * e)) as u8 as i8);
            bt[k0 + e][row] = i32::from((b[lane] >> (8 * e)) as u8 as i8);
        }
    }
    let mut out = [[0i32; R]; 64];
    for (lane, regs) in out.iter_mut().enumerate() {
        for (r, v) in regs.iter_mut().enumerate() {
            let (i, j) = d_index(M, lane, r);
            let dot = (0..K).fold(0i32, |s, k| s.wrapping_add(at[i][k] * bt[k][j]));
            *v = c[lane][r].wrapping_add(dot);
        }
    }
    out
}

/// `v_mfma_i32_16x16x32_i8 D, A, B, C` (4 passes, 16 cycles; CDNA3 ISA opcode 87).
///
/// Layout as [`mfma_f32_16x16x32_f8`] with signed bytes: `A[i][k]` is byte `k mod 8` of lane
/// `16·⌊k/8⌋ + i`, `B[k][j]` byte `k mod 8` of lane `16·⌊k/8⌋ + j` (AMD matrix instruction
/// calculator, `-a cdna3 -i v_mfma_i32_16x16x32_i8 -d`: Src0/Src1 int8, Src2/Vdst int32, 2 GPRs
/// per input, 16 cycles). `c[l][r]`/result: i32 register `r` of lane `l` holds
/// `(4·⌊l/16⌋ + r, l mod 16)`. `D = C + Σ_k A·B` exactly (see [`mfma_i8`] for overflow).
pub fn mfma_i32_16x16x32_i8(a: &[u64; 64], b: &[u64; 64], c: &[[i32; 4]; 64]) -> [[i32; 4]; 64] {
    mfma_i8::<16, 32, 4>(a, b, c)
}

/// `v_mfma_i32_32x32x16_i8 D, A, B, C` (8 passes, 32 cycles; CDNA3 ISA opcode 86).
///
/// Layout as [`mfma_f32_32x32x16_f8`] with signed bytes and i32 accumulators.
pub fn mfma_i32_32x32x16_i8(a: &[u64; 64], b: &[u64; 64], c: &[[i32; 16]; 64]) -> [[i32; 16]; 64] {
    mfma_i8::<32, 16, 16>(a, b, c)
}

/// bf16 bits → f32 (exact).
#[inline(always)]
fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// IEEE binary16 bits → f32 (exact; NaN payload kept in the top mantissa bits, quiet bit set as
/// in the input).
#[inline(always)]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1F);
    let man = u32::from(h & 0x3FF);
    let bits = match exp {
        0 if man == 0 => sign,
        0 => {
            // Subnormal: man · 2^-24, normalise.
            let shift = man.leading_zeros() - 21; // bring the leading one to bit 10
            let m = (man << shift) & 0x3FF;
            let e = 127 - 15 + 1 - shift;
            sign | (e << 23) | (m << 13)
        }
        0x1F => sign | 0x7F80_0000 | (man << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// Whether every product of two bf16 values from `a` and `b` is exact in f32: true when each
/// finite non-zero element lies in [2^-63, 2^63] (products then stay normal; zeros, infinities
/// and NaNs behave identically under fused and unfused evaluation).
fn bf16_products_exact(a: &[u64; 64], b: &[u64; 64]) -> bool {
    a.iter().chain(b).all(|&v| {
        (0..4).all(|e| {
            let exp = ((v >> (16 * e + 7)) & 0xFF) as i32;
            // exponent field 0 (zero/subnormal) must be exactly zero; 255 is inf/NaN.
            let man = (v >> (16 * e)) & 0x7F;
            (exp == 0 && man == 0) || exp == 255 || (127 - 63..=127 + 63).contains(&exp)
        })
    })
}

#[inline(always)]
fn mfma_bf16<const M: usize, const K: usize, const R: usize>(a: &[u64; 64], b: &[u64; 64], c: &[[f32; R]; 64]) -> [[f32; R]; 64] {
    let step = if bf16_products_exact(a, b) { Step::ExactProducts } else { Step::Fused };
    mfma_core::<M, K, 4, R>(|lane, e| bf16_to_f32((a[lane] >> (16 * e)) as u16), |lane, e| bf16_to_f32((b[lane] >> (16 * e)) as u16), c, step)
}

#[inline(always)]
fn mfma_f16<const M: usize, const K: usize, const R: usize>(a: &[u64; 64], b: &[u64; 64], c: &[[f32; R]; 64]) -> [[f32; R]; 64] {
    // binary16 products have ≤ 22 significant bits and magnitudes in [2^-48, 2^32] (or are
    // ±0/∞/NaN): exact in f32.
    mfma_core::<M, K, 4, R>(|lane, e| f16_to_f32((a[lane] >> (16 * e)) as u16), |lane, e| f16_to_f32((b[lane] >> (16 * e)) as u16), c, Step::ExactProducts)
}

/// `v_mfma_f32_16x16x16_bf16 D, A, B, C` (4 passes).
///
/// `a[l]`/`b[l]`: 4 bf16 per lane (element `e` = bits `16e+15:16e`); `A[i][k]` is element
/// `k mod 4` of lane `16·⌊k/4⌋ + i`, `B[k][j]` element `k mod 4` of lane `16·⌊k/4⌋ + j`.
/// Result layout as [`mfma_f32_16x16x32_f8`].
pub fn mfma_f32_16x16x16_bf16(a: &[u64; 64], b: &[u64; 64], c: &[[f32; 4]; 64]) -> [[f32; 4]; 64] {
    mfma_bf16::<16, 16, 4>(a, b, c)
}

/// `v_mfma_f32_32x32x8_bf16 D, A, B, C` (8 passes).
///
/// `A[i][k]` is bf16 element `k mod 4` of lane `32·⌊k/4⌋ + i`; `B[k][j]` element `k mod 4` of
/// lane `32·⌊k/4⌋ + j`. Result layout as [`mfma_f32_32x32x16_f8`].
pub fn mfma_f32_32x32x8_bf16(a: &[u64; 64], b: &[u64; 64], c: &[[f32; 16]; 64]) -> [[f32; 16]; 64] {
    mfma_bf16::<32, 8, 16>(a, b, c)
}

/// `v_mfma_f32_16x16x16_f16 D, A, B, C` (4 passes).
///
/// Layout as [`mfma_f32_16x16x16_bf16`] with IEEE binary16 elements.
pub fn mfma_f32_16x16x16_f16(a: &[u64; 64], b: &[u64; 64], c: &[[f32; 4]; 64]) -> [[f32; 4]; 64] {
    mfma_f16::<16, 16, 4>(a, b, c)
}

/// `v_mfma_f32_32x32x8_f16 D, A, B, C` (8 passes).
///
/// Layout as [`mfma_f32_32x32x8_bf16`] with IEEE binary16 elements.
pub fn mfma_f32_32x32x8_f16(a: &[u64; 64], b: &[u64; 64], c: &[[f32; 16]; 64]) -> [[f32; 16]; 64] {
    mfma_f16::<32, 8, 16>(a, b, c)
}

/// `v_mfma_f32_16x16x4_f32 D, A, B, C` (single block, 8 passes).
///
/// One f32 per lane: `A[i][k]` is lane `16·k + i`, `B[k][j]` lane `16·k + j` (k < 4). Result
/// layout as [`mfma_f32_16x16x32_f8`]. True FMA per step.
pub fn mfma_f32_16x16x4_f32(a: &[f32; 64], b: &[f32; 64], c: &[[f32; 4]; 64]) -> [[f32; 4]; 64] {
    mfma_core::<16, 4, 1, 4>(|lane, _| a[lane], |lane, _| b[lane], c, Step::Fused)
}

/// `v_mfma_f32_32x32x2_f32 D, A, B, C` (single block, 16 passes).
///
/// One f32 per lane: `A[i][k]` is lane `32·k + i`, `B[k][j]` lane `32·k + j` (k < 2). Result
/// layout as [`mfma_f32_32x32x16_f8`]. True FMA per step.
pub fn mfma_f32_32x32x2_f32(a: &[f32; 64], b: &[f32; 64], c: &[[f32; 16]; 64]) -> [[f32; 16]; 64] {
    mfma_core::<32, 2, 1, 16>(|lane, _| a[lane], |lane, _| b[lane], c, Step::Fused)
}

/// Operand format of a gfx950 `v_mfma_f32_{16x16x128,32x32x64}_f8f6f4` source, from its 3-bit
/// `cbsz` (A) or `blgp` (B) field (LLVM `SIDefines.h` `MFMAScaleFormats` and the
/// `__builtin_amdgcn_mfma_scale_f32_*_f8f6f4` type codes: 0 FP8 E4M3, 1 BF8 E5M2, 2 FP6 E2M3,
/// 3 BF6 E3M2, 4 FP4 E2M1; all OCP encodings, AMD "AMD Instinct MI300/CDNA4 ISA", "Matrix
/// Arithmetic Instructions").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum F8f6f4Format {
    /// OCP FP8 E4M3FN (8 VGPRs of 32 values).
    Fp8,
    /// OCP BF8 E5M2 (8 VGPRs).
    Bf8,
    /// OCP FP6 E2M3 (6 VGPRs of 32 packed 6-bit values).
    Fp6,
    /// OCP BF6 E3M2 (6 VGPRs).
    Bf6,
    /// OCP FP4 E2M1 (4 VGPRs of 32 packed 4-bit values).
    Fp4,
}

impl F8f6f4Format {
    /// The format of field value `v` (`None` for the reserved 5..=7).
    pub fn from_field(v: u8) -> Option<F8f6f4Format> {
        Some(match v {
            0 => F8f6f4Format::Fp8,
            1 => F8f6f4Format::Bf8,
            2 => F8f6f4Format::Fp6,
            3 => F8f6f4Format::Bf6,
            4 => F8f6f4Format::Fp4,
            _ => return None,
        })
    }
    /// VGPRs an operand of field value `v` occupies, as LLVM's disassembler sizes the register
    /// tuple (the reserved values 5..=7 print as 8).
    pub fn regs_of_field(v: u8) -> u8 {
        match v {
            2 | 3 => 6,
            4 => 4,
            _ => 8,
        }
    }
    /// Bits per element.
    pub const fn bits(self) -> u32 {
        match self {
            F8f6f4Format::Fp8 | F8f6f4Format::Bf8 => 8,
            F8f6f4Format::Fp6 | F8f6f4Format::Bf6 => 6,
            F8f6f4Format::Fp4 => 4,
        }
    }
    /// Exact value of the `bits()`-bit encoding `x` (low bits of `x`). FP8/BF8 as
    /// [`F8Kind::Fp8Ocp`] / [`F8Kind::Bf8Ocp`] (NaN, ±∞ for BF8); the OCP MX FP6/FP4 formats
    /// (OCP "Microscaling Formats (MX) v1.0", section 5.3) have no NaN or infinity:
    /// E2M3 bias 1, E3M2 bias 3, E2M1 bias 1, subnormals at exponent field 0.
    pub fn value(self, x: u32) -> f32 {
        let (e_bits, m_bits, bias): (u32, u32, i32) = match self {
            F8f6f4Format::Fp8 => return f32::from_bits(decode_table_bits(F8Kind::Fp8Ocp)[(x & 0xFF) as usize]),
            F8f6f4Format::Bf8 => return f32::from_bits(decode_table_bits(F8Kind::Bf8Ocp)[(x & 0xFF) as usize]),
            F8f6f4Format::Fp6 => (2, 3, 1),
            F8f6f4Format::Bf6 => (3, 2, 3),
            F8f6f4Format::Fp4 => (2, 1, 1),
        };
        let m = x & ((1 << m_bits) - 1);
        let e = (x >> m_bits) & ((1 << e_bits) - 1);
        let neg = (x >> (m_bits + e_bits)) & 1 != 0;
        // value = m·2^(1−bias−m_bits) for e = 0, (2^m_bits + m)·2^(e−bias−m_bits) otherwise;
        // every such value is exact in f32.
        let (sig, exp) = if e == 0 { (m, 1 - bias - m_bits as i32) } else { (m | 1 << m_bits, e as i32 - bias - m_bits as i32) };
        let v = sig as f32 * 2f32.powi(exp);
        if neg { -v } else { v }
    }
}

/// Logical K index of element `e` (0..32) of lane group `g` (`lane / M`) for an f8f6f4 MFMA
/// operand of `fmt` in an `M`×`M` instruction (`G = 64 / M` lane groups):
/// * FP8/BF8 (8 VGPRs): element `e` is byte `e`; bytes 0..16 hold `k = 16·g + e` and bytes
///   16..32 hold `k = 16·G + 16·g + (e − 16)` (AMD ROCm blog "Matrix Core Programming on AMD
///   CDNA3 and CDNA4 architecture", 2025, §5.4: for 32x32x64 FP8 lane `l` holds
///   `A[l mod 32][32·i + 16·⌊l/32⌋ + j]` in byte `16·i + j`; the 16x16x128 form is the same
///   split over its four lane groups);
/// * FP6/BF6 (6 VGPRs) and FP4 (4 VGPRs): elements are packed low bits first across the lane's
///   VGPRs and element `e` holds `k = 32·g + e` (same blog, §5.5: for 32x32x64 FP4 lane `l`
///   holds `A[l mod 32][32·⌊l/32⌋ + e]`; FP6 packs the same 32 elements into 6 VGPRs).
///
/// The same map serves B (`B[k][j]`, `j = lane mod M`).
#[inline]
fn f8f6f4_k(fmt: F8f6f4Format, groups: usize, g: usize, e: usize) -> usize {
    match fmt {
        F8f6f4Format::Fp8 | F8f6f4Format::Bf8 => (e / 16) * 16 * groups + 16 * g + e % 16,
        _ => 32 * g + e,
    }
}

/// Element `e` (0..32) of a lane's f8f6f4 operand `regs` (its VGPRs, low first) in `fmt`.
#[inline]
fn f8f6f4_elem(regs: &[u32; 8], fmt: F8f6f4Format, e: usize) -> f32 {
    let w = fmt.bits() as usize;
    let bit = e * w;
    let lo = u64::from(regs[bit / 32]) | u64::from(*regs.get(bit / 32 + 1).unwrap_or(&0)) << 32;
    fmt.value(((lo >> (bit % 32)) & ((1 << w) - 1)) as u32)
}

#[inline(always)]
fn mfma_f8f6f4<const M: usize, const K: usize, const R: usize>(
    a: &[[u32; 8]; 64],
    b: &[[u32; 8]; 64],
    c: &[[f32; R]; 64],
    fa: F8f6f4Format,
    fb: F8f6f4Format,
    scale_exp: [i32; 2],
) -> [[f32; R]; 64] {
    // Uniform block scales: each operand's elements times 2^e (exact in f32 while in range);
    // i32::MAX is the E8M0 NaN.
    let factor = |e: i32| if e == i32::MAX { f32::NAN } else { (2f64).powi(e) as f32 };
    let (sa, sb) = (factor(scale_exp[0]), factor(scale_exp[1]));
    // Inverse of f8f6f4_k per format: (lane group, element) holding logical k.
    let groups = 64 / M;
    let inv = |fmt: F8f6f4Format| -> [(usize, usize); K] {
        let mut t = [(0, 0); K];
        for g in 0..groups {
            for e in 0..32 {
                t[f8f6f4_k(fmt, groups, g, e)] = (g, e);
            }
        }
        t
    };
    let (ia, ib) = (inv(fa), inv(fb));
    // mfma_core reads logical element `k = 32·⌊lane/M⌋ + e` of row `lane mod M`; each operand
    // maps that k to the lane and element holding it, so A and B pair on the same logical k and
    // the accumulation runs in logical k order. Products of two FP8/FP6/FP4 values have ≤ 8
    // significant bits and magnitudes within [2^-32, 2^32]: exact in f32.
    mfma_core::<M, K, 32, R>(
        |lane, e| {
            let (g, e2) = ia[32 * (lane / M) + e];
            f8f6f4_elem(&a[lane % M + M * g], fa, e2) * sa
        },
        |lane, e| {
            let (g, e2) = ib[32 * (lane / M) + e];
            f8f6f4_elem(&b[lane % M + M * g], fb, e2) * sb
        },
        c,
        Step::ExactProducts,
    )
}

/// gfx950 `v_mfma_f32_16x16x128_f8f6f4 D, A, B, C` (CDNA4; VOP3P opcode 0x2d; 8 passes with FP8
/// operands).
///
/// `a[l]` / `b[l]`: lane `l`'s source VGPRs (8 for FP8/BF8, 6 for FP6/BF6, 4 for FP4; the rest
/// ignored), `fa` / `fb` their formats (`cbsz` / `blgp`). `A[i][k]` is held by lane
/// `16·g + i` and `B[k][j]` by lane `16·g + j`, with `(g, element)` from the logical-K map of
/// [`F8f6f4Format`] operands (see `f8f6f4_k`). `c[l][r]`/result: as [`mfma_f32_16x16x32_f8`]
/// (register `r` of lane `l` holds `(4·⌊l/16⌋ + r, l mod 16)`). Arithmetic per the module's
/// accumulation model, in logical k order.
pub fn mfma_f32_16x16x128_f8f6f4(a: &[[u32; 8]; 64], b: &[[u32; 8]; 64], c: &[[f32; 4]; 64], fa: F8f6f4Format, fb: F8f6f4Format) -> [[f32; 4]; 64] {
    mfma_f8f6f4::<16, 128, 4>(a, b, c, fa, fb, [0, 0])
}

/// gfx950 `v_mfma_scale_f32_16x16x128_f8f6f4` with block scales the same in every lane: as
/// [`mfma_f32_16x16x128_f8f6f4`] with every A element times `2^scale_exp[0]` and every B element
/// times `2^scale_exp[1]` (`i32::MAX` = the E8M0 NaN scale, giving NaN). Exact scaling while the
/// scaled values stay within f32's range.
pub fn mfma_scale_f32_16x16x128_f8f6f4(
    a: &[[u32; 8]; 64],
    b: &[[u32; 8]; 64],
    c: &[[f32; 4]; 64],
    fa: F8f6f4Format,
    fb: F8f6f4Format,
    scale_exp: [i32; 2],
) -> [[f32; 4]; 64] {
    mfma_f8f6f4::<16, 128, 4>(a, b, c, fa, fb, scale_exp)
}

/// gfx950 `v_mfma_f32_32x32x64_f8f6f4 D, A, B, C` (CDNA4; VOP3P opcode 0x2e; 16 passes with FP8
/// operands).
///
/// As [`mfma_f32_16x16x128_f8f6f4`] with two lane groups (`A[i][k]` in lane `32·g + i`); the
/// result layout is [`mfma_f32_32x32x16_f8`]'s.
pub fn mfma_f32_32x32x64_f8f6f4(a: &[[u32; 8]; 64], b: &[[u32; 8]; 64], c: &[[f32; 16]; 64], fa: F8f6f4Format, fb: F8f6f4Format) -> [[f32; 16]; 64] {
    mfma_f8f6f4::<32, 64, 16>(a, b, c, fa, fb, [0, 0])
}

/// gfx950 `v_mfma_scale_f32_32x32x64_f8f6f4` with lane-uniform block scales (see
/// [`mfma_scale_f32_16x16x128_f8f6f4`]).
pub fn mfma_scale_f32_32x32x64_f8f6f4(
    a: &[[u32; 8]; 64],
    b: &[[u32; 8]; 64],
    c: &[[f32; 16]; 64],
    fa: F8f6f4Format,
    fb: F8f6f4Format,
    scale_exp: [i32; 2],
) -> [[f32; 16]; 64] {
    mfma_f8f6f4::<32, 64, 16>(a, b, c, fa, fb, scale_exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_decode_spot_values() {
        assert_eq!(f16_to_f32(0x3C00), 1.0);
        assert_eq!(f16_to_f32(0xC000), -2.0);
        assert_eq!(f16_to_f32(0x7BFF), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x03FF), 1023.0 * 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7C00), f32::INFINITY);
        assert!(f16_to_f32(0x7E00).is_nan());
    }

    #[test]
    fn i8_mfma_is_the_exact_integer_product() {
        // A[i][k] = (i·7 + k·3) mod 256 − 128, B[k][j] = (k·5 + j·11 + 1) mod 256 − 128, packed
        // in the calculator's layout; C[i][j] = i·1000 − j.
        let av = |i: usize, k: usize| ((i * 7 + k * 3) % 256) as i32 - 128;
        let bv = |k: usize, j: usize| ((k * 5 + j * 11 + 1) % 256) as i32 - 128;
        for m in [16usize, 32] {
            let kdim = 512 / m;
            let pack = |f: &dyn Fn(usize, usize) -> i32| -> [u64; 64] {
                std::array::from_fn(|lane| (0..8).fold(0u64, |w, e| w | u64::from(f(lane % m, 8 * (lane / m) + e) as i8 as u8) << (8 * e)))
            };
            let a = pack(&|i, k| av(i, k));
            let b = pack(&|j, k| bv(k, j));
            let want = |i: usize, j: usize| (i * 1000) as i32 - j as i32 + (0..kdim).map(|k| av(i, k) * bv(k, j)).sum::<i32>();
            if m == 16 {
                let c: [[i32; 4]; 64] = std::array::from_fn(|l| {
                    std::array::from_fn(|r| {
                        let (i, j) = d_index(16, l, r);
                        (i * 1000) as i32 - j as i32
                    })
                });
                let d = mfma_i32_16x16x32_i8(&a, &b, &c);
                for (l, regs) in d.iter().enumerate() {
                    for (r, &v) in regs.iter().enumerate() {
                        let (i, j) = d_index(16, l, r);
                        assert_eq!(v, want(i, j), "16x16 D[{i}][{j}]");
                    }
                }
            } else {
                let c: [[i32; 16]; 64] = std::array::from_fn(|l| {
                    std::array::from_fn(|r| {
                        let (i, j) = d_index(32, l, r);
                        (i * 1000) as i32 - j as i32
                    })
                });
                let d = mfma_i32_32x32x16_i8(&a, &b, &c);
                for (l, regs) in d.iter().enumerate() {
                    for (r, &v) in regs.iter().enumerate() {
                        let (i, j) = d_index(32, l, r);
                        assert_eq!(v, want(i, j), "32x32 D[{i}][{j}]");
                    }
                }
            }
        }
        // Extremes: −128·−128 = 2^14 summed 32 times (2^19) onto i32::MAX − 2^19 reaches
        // i32::MAX exactly; one more wraps to i32::MIN (two's complement).
        let a = [0x8080_8080_8080_8080u64; 64];
        let c = [[i32::MAX - (1 << 19); 4]; 64];
        assert!(mfma_i32_16x16x32_i8(&a, &a, &c).iter().all(|r| r.iter().all(|&v| v == i32::MAX)));
        let c = [[i32::MAX - (1 << 19) + 1; 4]; 64];
        assert!(mfma_i32_16x16x32_i8(&a, &a, &c).iter().all(|r| r.iter().all(|&v| v == i32::MIN)));
    }

    #[test]
    fn d_index_is_a_bijection() {
        for m in [16usize, 32] {
            let regs = m * m / 64;
            let mut seen = vec![false; m * m];
            for lane in 0..64 {
                for r in 0..regs {
                    let (i, j) = d_index(m, lane, r);
                    assert!(!seen[i * m + j]);
                    seen[i * m + j] = true;
                }
            }
        }
    }
}
