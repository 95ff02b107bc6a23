//! CPU reference GEMMs against naive triple loops written from DeepGEMM's definitions, every grouped
//! semantic (−1 padding, empty groups, masked_m = 0 and = m_max, k_g = 0), input validation, the
//! unquantized reference and `calc_diff`.

use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz, E5M2Fnuz, Fp8Format};
use fp8gemm::quant::{GroupedQuantizedWeights, KGroupedOperand, QuantizedActivations, QuantizedWeights};
use fp8gemm::reference::{
    M_ALIGNMENT_CONTIGUOUS, ReferenceError, calc_diff, contiguous_m_indices, fp8_gemm_nt, fp8_gemm_nt_f32, gemm_nt_f32, k_grouped_fp8_gemm_nt_contiguous,
    m_grouped_fp8_gemm_nt_contiguous, m_grouped_fp8_gemm_nt_contiguous_f32, m_grouped_fp8_gemm_nt_masked, m_grouped_fp8_gemm_nt_masked_f32,
    validate_contiguous_layout,
};
use half::bf16;
use proptest::prelude::*;

/// Deterministic pseudo-normal values (SplitMix64, sum of four uniforms).
fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
    let mut next = move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..len).map(|_| (next() + next() + next() + next() - 2.0) * 1.7).collect()
}

/// Naive block-scaled product of one row of A and one row of B, straight from the definition
/// `Σ_kb sfa[kb] · sfb[kb] · Σ_{k ∈ kb} a[k]·b[k]`, in f64. Also returns the magnitude sum
/// `Σ_kb |sfa·sfb| · Σ |a·b|` that bounds the rounding error.
fn naive_dot(a: &[f32], sfa: &[f32], b: &[f32], sfb: &[f32]) -> (f64, f64) {
    let (mut sum, mut mag) = (0.0f64, 0.0f64);
    for kb in 0..a.len().div_ceil(128) {
        let (mut part, mut part_mag) = (0.0f64, 0.0f64);
        for kk in kb * 128..((kb + 1) * 128).min(a.len()) {
            part += a[kk] as f64 * b[kk] as f64;
            part_mag += (a[kk] as f64 * b[kk] as f64).abs();
        }
        let s = sfa[kb] as f64 * sfb[kb] as f64;
        sum += s * part;
        mag += s.abs() * part_mag;
    }
    (sum, mag)
}

/// Checks an f32 reference result against the naive value: the library sums each 128-K block in
/// f32 (error ≤ 128·u·Σ|ab|), scales and sums in f64, and rounds once to f32.
fn assert_close(got: f32, (want, mag): (f64, f64), what: &str) {
    let tol = 130.0 * f32::EPSILON as f64 / 2.0 * mag + f32::EPSILON as f64 * want.abs() + 1e-30;
    assert!((got as f64 - want).abs() <= tol, "{what}: got {got:e}, naive {want:e}, tolerance {tol:e}");
}

fn decoded<F: Fp8Format>(x: &[F]) -> Vec<f32> {
    x.iter().map(|v| v.to_f32()).collect()
}

/// Naive dense result for row-major decoded data, `[m, n]` of (value, magnitude).
fn naive_dense<F: Fp8Format>(a: &QuantizedActivations<F>, b: &QuantizedWeights<F>) -> Vec<(f64, f64)> {
    let (av, bv) = (decoded(&a.data), decoded(&b.data));
    let (k, kb) = (a.k, a.k.div_ceil(128));
    let mut out = Vec::with_capacity(a.m * b.n);
    for i in 0..a.m {
        for j in 0..b.n {
            out.push(naive_dot(
                &av[i * k..(i + 1) * k],
                &a.scales[i * kb..(i + 1) * kb],
                &bv[j * k..(j + 1) * k],
                &b.scales[(j / 128) * kb..(j / 128 + 1) * kb],
            ));
        }
    }
    out
}

fn check_dense<F: Fp8Format>(m: usize, n: usize, k: usize, seed: u64) {
    let a = QuantizedActivations::<F>::quantize(&random(m * k, seed), m, k).unwrap();
    let b = QuantizedWeights::<F>::quantize(&random(n * k, seed + 1), n, k).unwrap();
    let mut d32 = vec![f32::NAN; m * n];
    fp8_gemm_nt_f32(&a, &b, &mut d32).unwrap();
    let mut d16 = vec![bf16::NAN; m * n];
    fp8_gemm_nt(&a, &b, &mut d16).unwrap();
    for (e, want) in naive_dense(&a, &b).into_iter().enumerate() {
        assert_close(d32[e], want, &format!("{} {m}x{n}x{k} element {e}", F::NAME));
        assert_eq!(d16[e].to_bits(), bf16::from_f32(d32[e]).to_bits(), "bf16 is the rounded f32 result");
    }
}

#[test]
fn dense_fixed_shapes_with_tails() {
    for (i, &(m, n, k)) in
        [(1, 1, 1), (3, 5, 7), (2, 128, 128), (5, 129, 257), (130, 136, 128), (17, 260, 300), (1, 300, 640), (300, 130, 260)].iter().enumerate()
    {
        check_dense::<E4M3Fnuz>(m, n, k, 10 + i as u64);
    }
    check_dense::<E4M3Fn>(9, 200, 384, 3);
    check_dense::<E5M2Fnuz>(9, 131, 129, 4);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn dense_random_shapes(m in 1usize..40, n in 1usize..270, k in 1usize..330, seed in any::<u64>()) {
        check_dense::<E4M3Fnuz>(m, n, k, seed);
    }
}

#[test]
fn block_scale_semantics_by_hand() {
    // A = [1 × 256] of ones with SFA = [2, 3]; B = [130 × 256] of ones with SFB rows [5, 7] and [11, 13].
    // D[0, j<128] = 2·5·128 + 3·7·128 = 3968; D[0, j≥128] = 2·11·128 + 3·13·128 = 7808.
    let one = E4M3Fnuz::from_f32(1.0);
    let a = QuantizedActivations::from_parts(vec![one; 256], vec![2.0, 3.0], 1, 256).unwrap();
    let b = QuantizedWeights::from_parts(vec![one; 130 * 256], vec![5.0, 7.0, 11.0, 13.0], 130, 256).unwrap();
    let mut d = vec![0.0f32; 130];
    fp8_gemm_nt_f32(&a, &b, &mut d).unwrap();
    assert!(d[..128].iter().all(|&v| v == 3968.0), "{:?}", &d[..4]);
    assert_eq!(&d[128..], &[7808.0, 7808.0]);
    // A tail block: k = 130 gives one full block and a 2-wide one.
    let a = QuantizedActivations::from_parts(vec![one; 130], vec![1.0, 100.0], 1, 130).unwrap();
    let b = QuantizedWeights::from_parts(vec![one; 130], vec![1.0, 1.0], 1, 130).unwrap();
    let mut d = vec![bf16::ZERO; 1];
    fp8_gemm_nt(&a, &b, &mut d).unwrap();
    assert_eq!(d[0].to_f32(), 128.0 + 200.0);
}

#[test]
fn dense_errors() {
    let a = QuantizedActivations::<E4M3Fnuz>::quantize(&random(4 * 200, 1), 4, 200).unwrap();
    let b = QuantizedWeights::<E4M3Fnuz>::quantize(&random(3 * 100, 2), 3, 100).unwrap();
    let mut d = vec![0.0f32; 12];
    assert_eq!(fp8_gemm_nt_f32(&a, &b, &mut d), Err(ReferenceError::Dimension { arg: "b.k", expected: 200, actual: 100 }));
    let b = QuantizedWeights::<E4M3Fnuz>::quantize(&random(3 * 200, 2), 3, 200).unwrap();
    assert_eq!(fp8_gemm_nt_f32(&a, &b, &mut d[..11]), Err(ReferenceError::Length { arg: "d", expected: 12, actual: 11 }));
    let mut bad = a.clone();
    bad.scales.pop();
    assert_eq!(fp8_gemm_nt_f32(&bad, &b, &mut d), Err(ReferenceError::Length { arg: "a.scales", expected: 8, actual: 7 }));
    let mut bad = b.clone();
    bad.data.push(E4M3Fnuz::ZERO);
    assert_eq!(fp8_gemm_nt_f32(&a, &bad, &mut d), Err(ReferenceError::Length { arg: "b.data", expected: 600, actual: 601 }));
    assert_eq!(ReferenceError::Dimension { arg: "b.k", expected: 200, actual: 100 }.to_string(), "`b.k` is 100, expected 200");
    // k = 0: an empty sum.
    let a0 = QuantizedActivations::<E4M3Fnuz>::quantize(&[0.0f32; 0], 2, 0).unwrap();
    let b0 = QuantizedWeights::<E4M3Fnuz>::quantize(&[0.0f32; 0], 3, 0).unwrap();
    let mut d0 = vec![5.0f32; 6];
    fp8_gemm_nt_f32(&a0, &b0, &mut d0).unwrap();
    assert_eq!(d0, vec![0.0; 6]);
}

/// Grouped inputs shared by the m-grouped tests.
struct Grouped {
    b: GroupedQuantizedWeights<E4M3Fnuz>,
    bv: Vec<f32>,
}

fn grouped(groups: usize, n: usize, k: usize, seed: u64) -> Grouped {
    let b = GroupedQuantizedWeights::<E4M3Fnuz>::quantize(&random(groups * n * k, seed), groups, n, k).unwrap();
    let bv = decoded(&b.data);
    Grouped { b, bv }
}

/// Naive row `i` of `A · B[g]ᵀ`.
fn naive_row(a: &QuantizedActivations<E4M3Fnuz>, g: &Grouped, group: usize, i: usize) -> Vec<(f64, f64)> {
    let (k, n) = (a.k, g.b.n);
    let (kb, nb) = (k.div_ceil(128), n.div_ceil(128));
    let av = decoded(&a.data[i * k..(i + 1) * k]);
    (0..n)
        .map(|j| {
            let row = group * n + j;
            let srow = group * nb + j / 128;
            naive_dot(&av, &a.scales[i * kb..(i + 1) * kb], &g.bv[row * k..(row + 1) * k], &g.b.scales[srow * kb..(srow + 1) * kb])
        })
        .collect()
}

/// Runs both contiguous variants on pre-filled outputs and checks every row: rows with −1 keep the
/// sentinel, the others match the naive product with their group's weights.
fn check_contiguous(m_indices: &[i32], groups: usize, n: usize, k: usize, seed: u64) {
    let m = m_indices.len();
    let a = QuantizedActivations::<E4M3Fnuz>::quantize(&random(m * k, seed), m, k).unwrap();
    let g = grouped(groups, n, k, seed + 1);
    let sentinel = 12345.0f32;
    let sentinel16 = bf16::from_f32(sentinel);
    let mut d32 = vec![sentinel; m * n];
    m_grouped_fp8_gemm_nt_contiguous_f32(&a, &g.b, m_indices, &mut d32).unwrap();
    let mut d16 = vec![sentinel16; m * n];
    m_grouped_fp8_gemm_nt_contiguous(&a, &g.b, m_indices, &mut d16).unwrap();
    for (i, &gi) in m_indices.iter().enumerate() {
        let row32 = &d32[i * n..(i + 1) * n];
        let row16 = &d16[i * n..(i + 1) * n];
        if gi < 0 {
            assert!(row32.iter().all(|&v| v == sentinel), "padding row {i} was written");
            assert!(row16.iter().all(|&v| v.to_bits() == sentinel16.to_bits()), "padding row {i} was written (bf16)");
            continue;
        }
        for (j, want) in naive_row(&a, &g, gi as usize, i).into_iter().enumerate() {
            assert_close(row32[j], want, &format!("row {i} (group {gi}) col {j}"));
            assert_eq!(row16[j].to_bits(), bf16::from_f32(row32[j]).to_bits());
        }
    }
}

/// DeepGEMM's contiguous layout: each group's rows padded up to a multiple of 128 with −1.
fn padded_indices(sizes: &[usize]) -> Vec<i32> {
    let mut m_indices = Vec::new();
    for (g, &s) in sizes.iter().enumerate() {
        m_indices.extend(std::iter::repeat_n(g as i32, s));
        m_indices.extend(std::iter::repeat_n(-1, s.div_ceil(128) * 128 - s));
    }
    m_indices
}

#[test]
fn m_grouped_contiguous_padding_rows_untouched() {
    // Groups of 100, 130 and 3 rows, each padded to 128 with −1 (n with a tail block).
    check_contiguous(&padded_indices(&[100, 130, 3]), 3, 136, 200, 7);
}

#[test]
fn m_grouped_contiguous_empty_groups() {
    // Groups 1 and 3 have no rows at all; groups 0, 2, 4 are exact multiples of 128 (group 2 spans
    // more than one 256-row output tile).
    let m_indices = padded_indices(&[128, 0, 384, 0, 128]);
    assert!(!m_indices.contains(&1) && !m_indices.contains(&3) && !m_indices.contains(&-1));
    check_contiguous(&m_indices, 5, 64, 256, 9);
}

#[test]
fn m_grouped_contiguous_unaligned_runs() {
    // The reference accepts any assignment: short runs, a group reused, padding in between.
    check_contiguous(&[2, 2, 0, -1, 0, 1, 1, 1, -1, -1, 2, 0], 3, 130, 129, 5);
}

#[test]
fn contiguous_layout_helpers() {
    assert_eq!(M_ALIGNMENT_CONTIGUOUS, 128);
    assert_eq!(contiguous_m_indices(&[2, 0, 3, 4], 4), vec![0, 0, -1, -1, 2, 2, 2, -1, 3, 3, 3, 3]);
    assert_eq!(contiguous_m_indices(&[2, 1], 0), vec![0, 0, 1]);
    assert_eq!(contiguous_m_indices(&[100, 0, 130, 3], 128), padded_indices(&[100, 0, 130, 3]));
    assert_eq!(validate_contiguous_layout(&padded_indices(&[100, 0, 130, 3]), 4, 128), Ok(()));
    assert_eq!(validate_contiguous_layout(&[0, 0, 1, 1, -1, -1, 1], 2, 2), Ok(()));
    assert_eq!(validate_contiguous_layout(&[0, 0, 1, -1, -1, -1], 2, 2), Ok(()));
    assert_eq!(
        validate_contiguous_layout(&[0, 0, -1, 1, 1, 0, 0], 2, 4),
        Err(ReferenceError::MixedBlock { block_start: 0, alignment: 4, index: 3, value: 1, expected: 0 })
    );
    assert_eq!(
        validate_contiguous_layout(&[1, 1, 1, 1, -1, 1, 0], 2, 4),
        Err(ReferenceError::MixedBlock { block_start: 4, alignment: 4, index: 6, value: 0, expected: 1 })
    );
    assert_eq!(validate_contiguous_layout(&[0, 0, 2, 2], 2, 2), Err(ReferenceError::GroupIndex { index: 2, value: 2, groups: 2 }));
}

#[test]
fn m_grouped_contiguous_all_padding_and_errors() {
    let (groups, n, k) = (2, 64, 128);
    let g = grouped(groups, n, k, 3);
    let a = QuantizedActivations::<E4M3Fnuz>::quantize(&random(4 * k, 4), 4, k).unwrap();
    let mut d = vec![bf16::from_f32(-7.0); 4 * n];
    m_grouped_fp8_gemm_nt_contiguous(&a, &g.b, &[-1; 4], &mut d).unwrap();
    assert!(d.iter().all(|v| v.to_f32() == -7.0));
    assert_eq!(m_grouped_fp8_gemm_nt_contiguous(&a, &g.b, &[0, 1, 2, 0], &mut d), Err(ReferenceError::GroupIndex { index: 2, value: 2, groups: 2 }));
    assert_eq!(m_grouped_fp8_gemm_nt_contiguous(&a, &g.b, &[0, -2, 1, 0], &mut d), Err(ReferenceError::GroupIndex { index: 1, value: -2, groups: 2 }));
    assert_eq!(m_grouped_fp8_gemm_nt_contiguous(&a, &g.b, &[0, 1, 1], &mut d), Err(ReferenceError::Length { arg: "m_indices", expected: 4, actual: 3 }));
    assert!(d.iter().all(|v| v.to_f32() == -7.0), "a failed call writes nothing");
}

/// Runs both masked variants on pre-filled outputs: rows at or beyond masked_m[g] keep the
/// sentinel, the others match the naive product with group g's weights.
fn check_masked(masked_m: &[i32], m_max: usize, n: usize, k: usize, seed: u64) {
    let groups = masked_m.len();
    let a = QuantizedActivations::<E4M3Fnuz>::quantize(&random(groups * m_max * k, seed), groups * m_max, k).unwrap();
    let g = grouped(groups, n, k, seed + 1);
    let sentinel = -3.5f32;
    let mut d32 = vec![sentinel; groups * m_max * n];
    m_grouped_fp8_gemm_nt_masked_f32(&a, &g.b, masked_m, &mut d32).unwrap();
    let mut d16 = vec![bf16::from_f32(sentinel); groups * m_max * n];
    m_grouped_fp8_gemm_nt_masked(&a, &g.b, masked_m, &mut d16).unwrap();
    for (grp, &rows) in masked_m.iter().enumerate() {
        for r in 0..m_max {
            let i = grp * m_max + r;
            let (row32, row16) = (&d32[i * n..(i + 1) * n], &d16[i * n..(i + 1) * n]);
            if r >= rows as usize {
                assert!(row32.iter().all(|&v| v == sentinel), "group {grp} row {r} was written");
                assert!(row16.iter().all(|&v| v.to_f32() == sentinel), "group {grp} row {r} was written (bf16)");
                continue;
            }
            for (j, want) in naive_row(&a, &g, grp, i).into_iter().enumerate() {
                assert_close(row32[j], want, &format!("group {grp} row {r} col {j}"));
                assert_eq!(row16[j].to_bits(), bf16::from_f32(row32[j]).to_bits());
            }
        }
    }
}

#[test]
fn m_grouped_masked_zero_rows() {
    // masked_m = 0 everywhere: nothing is written.
    check_masked(&[0, 0, 0], 9, 140, 300, 11);
}

#[test]
fn m_grouped_masked_all_rows() {
    // masked_m = m_max everywhere: every row is computed.
    check_masked(&[9, 9], 9, 140, 300, 13);
}

#[test]
fn m_grouped_masked_partial_rows() {
    // A mix of 0, m_max and partial counts.
    check_masked(&[0, 9, 4, 1], 9, 140, 300, 15);
}

#[test]
fn m_grouped_masked_errors() {
    let (groups, m_max, n, k) = (2, 3, 16, 128);
    let a = QuantizedActivations::<E4M3Fnuz>::quantize(&random(groups * m_max * k, 1), groups * m_max, k).unwrap();
    let g = grouped(groups, n, k, 2);
    let mut d = vec![bf16::ZERO; groups * m_max * n];
    assert_eq!(m_grouped_fp8_gemm_nt_masked(&a, &g.b, &[1, 4], &mut d), Err(ReferenceError::MaskedM { group: 1, value: 4, m_max: 3 }));
    assert_eq!(m_grouped_fp8_gemm_nt_masked(&a, &g.b, &[-1, 0], &mut d), Err(ReferenceError::MaskedM { group: 0, value: -1, m_max: 3 }));
    assert_eq!(m_grouped_fp8_gemm_nt_masked(&a, &g.b, &[1], &mut d), Err(ReferenceError::Length { arg: "masked_m", expected: 2, actual: 1 }));
    let a5 = QuantizedActivations::<E4M3Fnuz>::quantize(&random(5 * k, 1), 5, k).unwrap();
    assert_eq!(m_grouped_fp8_gemm_nt_masked(&a5, &g.b, &[1, 1], &mut d[..5 * n]), Err(ReferenceError::MaskedRows { m: 5, groups: 2 }));
    assert!(d.iter().all(|v| v.to_bits() == 0), "a failed call writes nothing");
}

/// Runs the K-grouped GEMM on random C and checks C[g] = C0[g] + A_g·B_gᵀ (per-token scales on
/// both sides), with groups of k_g = 0 left bit-identical.
fn check_k_grouped(m: usize, n: usize, ks: &[usize], seed: u64) {
    let total: usize = ks.iter().sum();
    let a = KGroupedOperand::<E4M3Fnuz>::quantize(&random(m * total, seed), m, ks).unwrap();
    let b = KGroupedOperand::<E4M3Fnuz>::quantize(&random(n * total, seed + 1), n, ks).unwrap();
    let c0 = random(ks.len() * m * n, seed + 2);
    let mut c = c0.clone();
    k_grouped_fp8_gemm_nt_contiguous(&a, &b, &mut c).unwrap();
    for (g, &k) in ks.iter().enumerate() {
        let (ag, bg) = (a.group(g).unwrap(), b.group(g).unwrap());
        let (av, bv) = (decoded(&ag.data), decoded(&bg.data));
        let kb = k.div_ceil(128);
        for i in 0..m {
            for j in 0..n {
                let e = (g * m + i) * n + j;
                if k == 0 {
                    assert_eq!(c[e].to_bits(), c0[e].to_bits(), "empty group {g} changed C");
                    continue;
                }
                // B row j uses its own scale row j.
                let (v, mag) = naive_dot(&av[i * k..(i + 1) * k], &ag.scales[i * kb..(i + 1) * kb], &bv[j * k..(j + 1) * k], &bg.scales[j * kb..(j + 1) * kb]);
                let want = c0[e] as f64 + v;
                assert_close(c[e], (want, mag + (c0[e] as f64).abs()), &format!("group {g} ({i}, {j})"));
            }
        }
    }
}

#[test]
fn k_grouped_accumulates_into_c() {
    // ks with a tail (130), a short group (64) and an exact one (256).
    check_k_grouped(9, 140, &[130, 64, 256], 21);
}

#[test]
fn k_grouped_empty_groups_leave_c_unchanged() {
    check_k_grouped(5, 130, &[0, 128, 0, 3], 25);
}

#[test]
fn k_grouped_errors() {
    let (m, n) = (9, 140);
    let ks = [130usize, 0, 64, 256];
    let total: usize = ks.iter().sum();
    let a = KGroupedOperand::<E4M3Fnuz>::quantize(&random(m * total, 21), m, &ks).unwrap();
    let b = KGroupedOperand::<E4M3Fnuz>::quantize(&random(n * total, 22), n, &ks).unwrap();
    let mut c = vec![0.0f32; ks.len() * m * n];
    // Mismatched groups are rejected.
    let b2 = KGroupedOperand::<E4M3Fnuz>::quantize(&random(n * 130, 1), n, &[130]).unwrap();
    assert_eq!(k_grouped_fp8_gemm_nt_contiguous(&a, &b2, &mut c), Err(ReferenceError::Length { arg: "b.ks", expected: 4, actual: 1 }));
    assert_eq!(k_grouped_fp8_gemm_nt_contiguous(&a, &b, &mut c[1..]), Err(ReferenceError::Length { arg: "c", expected: 4 * m * n, actual: 4 * m * n - 1 }));
    let ks3 = [130usize, 0, 64, 255];
    let b3 = KGroupedOperand::<E4M3Fnuz>::quantize(&random(n * (total - 1), 2), n, &ks3).unwrap();
    assert_eq!(k_grouped_fp8_gemm_nt_contiguous(&a, &b3, &mut c), Err(ReferenceError::Dimension { arg: "b.ks[_]", expected: 256, actual: 255 }));
    assert!(c.iter().all(|&v| v == 0.0), "a failed call writes nothing");
}

#[test]
fn unquantized_reference_and_accuracy_metric() {
    let (m, n, k) = (33, 70, 300);
    let (a, b) = (random(m * k, 31), random(n * k, 32));
    let mut d = vec![0.0f32; m * n];
    gemm_nt_f32(&a, &b, m, n, k, &mut d).unwrap();
    for i in 0..m {
        for j in 0..n {
            let (mut s, mut mag) = (0.0f64, 0.0f64);
            for kk in 0..k {
                let p = a[i * k + kk] as f64 * b[j * k + kk] as f64;
                s += p;
                mag += p.abs();
            }
            let tol = (k as f64 + 2.0) * f32::EPSILON as f64 * mag;
            assert!((d[i * n + j] as f64 - s).abs() <= tol, "({i}, {j}): {} vs {s}", d[i * n + j]);
        }
    }
    assert_eq!(gemm_nt_f32(&a, &b, m, n, k + 1, &mut d), Err(ReferenceError::Length { arg: "a", expected: m * (k + 1), actual: m * k }));

    // DeepGEMM's acceptance test: FP8 (both E4M3 variants) against the unquantized product of
    // bf16 inputs, calc_diff < 0.001.
    let a16: Vec<bf16> = a.iter().map(|&v| bf16::from_f32(v)).collect();
    let b16: Vec<bf16> = b.iter().map(|&v| bf16::from_f32(v)).collect();
    let (af, bf): (Vec<f32>, Vec<f32>) = (a16.iter().map(|v| v.to_f32()).collect(), b16.iter().map(|v| v.to_f32()).collect());
    gemm_nt_f32(&af, &bf, m, n, k, &mut d).unwrap();
    let mut out = vec![bf16::ZERO; m * n];
    let qa = QuantizedActivations::<E4M3Fnuz>::quantize(&a16, m, k).unwrap();
    let qb = QuantizedWeights::<E4M3Fnuz>::quantize(&b16, n, k).unwrap();
    fp8_gemm_nt(&qa, &qb, &mut out).unwrap();
    let diff_fnuz = calc_diff(&out, &d).unwrap();
    let qa = QuantizedActivations::<E4M3Fn>::quantize(&a16, m, k).unwrap();
    let qb = QuantizedWeights::<E4M3Fn>::quantize(&b16, n, k).unwrap();
    fp8_gemm_nt(&qa, &qb, &mut out).unwrap();
    let diff_fn = calc_diff(&out, &d).unwrap();
    assert!(diff_fnuz > 0.0 && diff_fnuz < 1e-3, "e4m3fnuz calc_diff {diff_fnuz}");
    assert!(diff_fn > 0.0 && diff_fn < 1e-3, "e4m3fn calc_diff {diff_fn}");
}

#[test]
fn calc_diff_by_hand() {
    assert_eq!(calc_diff(&[1.0f32, -2.0, 3.0], &[1.0f32, -2.0, 3.0]).unwrap(), 0.0);
    assert_eq!(calc_diff(&[1.0f32, 2.0], &[-1.0f32, -2.0]).unwrap(), 2.0);
    assert_eq!(calc_diff(&[1.0f32, 0.0], &[0.0f32, 1.0]).unwrap(), 1.0);
    assert_eq!(calc_diff(&[0.0f32; 3], &[0.0f32; 3]).unwrap(), 0.0);
    assert_eq!(calc_diff::<f32, f32>(&[], &[]).unwrap(), 0.0);
    // 1 − 2·5.4 / 10.84 (Σxy = 1 + 4.4, Σx² + y² = 1 + 4 + 1 + 4.84), in f64 of the f32 inputs.
    let y = [1.0f32, 2.2];
    let (y0, y1) = (y[0] as f64, y[1] as f64);
    let expect = 1.0 - 2.0 * (y0 + 2.0 * y1) / (1.0 + 4.0 + y0 * y0 + y1 * y1);
    assert_eq!(calc_diff(&[1.0f32, 2.0], &y).unwrap(), expect);
    assert!((expect - (1.0 - 10.8 / 10.84)).abs() < 1e-7);
    let x16 = [bf16::from_f32(1.0), bf16::from_f32(2.0)];
    assert_eq!(calc_diff(&x16, &[1.0f32, 2.0]).unwrap(), 0.0);
    assert_eq!(calc_diff(&[1.0f32], &[1.0f32, 2.0]), Err(ReferenceError::Length { arg: "y", expected: 1, actual: 2 }));
}
