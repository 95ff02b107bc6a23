//! MFMA tests: logical matrices are placed into lanes/registers by a layout helper written from
//! the AMD matrix instruction calculator formulas (gfx942.md), results are compared with scalar
//! references (f64 and the documented sequential-FMA f32 model), and single-element influence
//! tests pin down every A row / B column mapping.
// Matrix code indexes several arrays by the same (i, j, k); index loops read clearer here.
#![allow(clippy::needless_range_loop)]

use amdgpu_emu::numerics::fp8::{F8Kind, f8_to_f32};
use amdgpu_emu::numerics::mfma::{
    MfmaOp, mfma_f32_16x16x4_f32, mfma_f32_16x16x16_bf16, mfma_f32_16x16x16_f16, mfma_f32_16x16x32_f8, mfma_f32_32x32x2_f32, mfma_f32_32x32x8_bf16,
    mfma_f32_32x32x8_f16, mfma_f32_32x32x16_f8,
};

// ---------------------------------------------------------------------------------------------
// Deterministic PRNG (splitmix64).

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

// ---------------------------------------------------------------------------------------------
// Layout helpers (forward formulas: logical element → lane/register).

/// Packs a logical M×K operand (`elem(i, k)` = raw element bits of width `w`) into lanes:
/// `X[i][k]` → element `k mod n` of lane `M·⌊k/n⌋ + i`, n = 64/w elements per 64-bit lane.
fn pack_operand(m: usize, k: usize, w: u32, elem: impl Fn(usize, usize) -> u64) -> [u64; 64] {
    let n = (64 / w) as usize;
    assert_eq!(n * 64 / m, k);
    let mut out = [0u64; 64];
    for i in 0..m {
        for kk in 0..k {
            let lane = m * (kk / n) + i;
            let shift = w as usize * (kk % n);
            out[lane] |= elem(i, kk) << shift;
        }
    }
    out
}

/// F32 operands: one element per lane, `X[i][k]` in lane `M·k + i`.
fn pack_f32(m: usize, k: usize, elem: impl Fn(usize, usize) -> f32) -> [f32; 64] {
    assert_eq!(64 / m, k);
    let mut out = [f32::NAN; 64];
    for i in 0..m {
        for kk in 0..k {
            out[m * kk + i] = elem(i, kk);
        }
    }
    out
}

/// (lane, register) of `D[i][j]` for M = 16 or 32.
fn d_slot(m: usize, i: usize, j: usize) -> (usize, usize) {
    if m == 16 { (16 * (i / 4) + j, i % 4) } else { ((32 * (i / 4)) % 64 + j, 4 * (i / 8) + (i % 4)) }
}

fn pack_acc<const R: usize>(m: usize, c: &[Vec<f32>]) -> [[f32; R]; 64] {
    let mut out = [[f32::NAN; R]; 64];
    for i in 0..m {
        for j in 0..m {
            let (l, r) = d_slot(m, i, j);
            out[l][r] = c[i][j];
        }
    }
    assert!(out.iter().flatten().all(|v| !v.is_nan()), "C layout must fill every register");
    out
}

fn unpack_acc<const R: usize>(m: usize, d: &[[f32; R]; 64]) -> Vec<Vec<f32>> {
    (0..m)
        .map(|i| {
            (0..m)
                .map(|j| {
                    let (l, r) = d_slot(m, i, j);
                    d[l][r]
                })
                .collect()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A uniform view of every MFMA under test: logical f64-valued matrices in, logical D out.

#[derive(Clone, Copy, Debug)]
enum Elem {
    F8(F8Kind, F8Kind),
    Bf16,
    F16,
    F32,
}

struct Case {
    op: MfmaOp,
    elem: Elem,
}

/// Raw-bit logical inputs: `a[i][k]`, `b[k][j]` as element bits, `c[i][j]`.
struct Inputs {
    a: Vec<Vec<u64>>,
    b: Vec<Vec<u64>>,
    c: Vec<Vec<f32>>,
}

fn value_a(elem: Elem, bits: u64) -> f32 {
    match elem {
        Elem::F8(ka, _) => f8_to_f32(bits as u8, ka),
        _ => value_b(elem, bits),
    }
}

fn value_b(elem: Elem, bits: u64) -> f32 {
    match elem {
        Elem::F8(_, kb) => f8_to_f32(bits as u8, kb),
        Elem::Bf16 => f32::from_bits((bits as u32) << 16),
        Elem::F16 => f16_reference(bits as u16) as f32,
        Elem::F32 => f32::from_bits(bits as u32),
    }
}

/// Independent binary16 decode in f64.
fn f16_reference(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1F);
    let man = f64::from(h & 0x3FF);
    match exp {
        0 => sign * man * 2f64.powi(-24),
        31 => {
            if man == 0.0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            }
        }
        _ => sign * (1.0 + man / 1024.0) * 2f64.powi(exp - 15),
    }
}

fn run(case: &Case, x: &Inputs) -> Vec<Vec<f32>> {
    let (m, _, k) = case.op.shape();
    let w = match case.elem {
        Elem::F8(..) => 8,
        Elem::Bf16 | Elem::F16 => 16,
        Elem::F32 => 32,
    };
    if let Elem::F32 = case.elem {
        let a = pack_f32(m, k, |i, kk| f32::from_bits(x.a[i][kk] as u32));
        let b = pack_f32(m, k, |j, kk| f32::from_bits(x.b[kk][j] as u32));
        return match m {
            16 => unpack_acc(16, &mfma_f32_16x16x4_f32(&a, &b, &pack_acc::<4>(16, &x.c))),
            _ => unpack_acc(32, &mfma_f32_32x32x2_f32(&a, &b, &pack_acc::<16>(32, &x.c))),
        };
    }
    let a = pack_operand(m, k, w, |i, kk| x.a[i][kk]);
    let b = pack_operand(m, k, w, |j, kk| x.b[kk][j]);
    match (case.elem, m) {
        (Elem::F8(ka, kb), 16) => unpack_acc(16, &mfma_f32_16x16x32_f8(&a, &b, &pack_acc::<4>(16, &x.c), ka, kb)),
        (Elem::F8(ka, kb), _) => unpack_acc(32, &mfma_f32_32x32x16_f8(&a, &b, &pack_acc::<16>(32, &x.c), ka, kb)),
        (Elem::Bf16, 16) => unpack_acc(16, &mfma_f32_16x16x16_bf16(&a, &b, &pack_acc(16, &x.c))),
        (Elem::Bf16, _) => unpack_acc(32, &mfma_f32_32x32x8_bf16(&a, &b, &pack_acc(32, &x.c))),
        (Elem::F16, 16) => unpack_acc(16, &mfma_f32_16x16x16_f16(&a, &b, &pack_acc(16, &x.c))),
        (Elem::F16, _) => unpack_acc(32, &mfma_f32_32x32x8_f16(&a, &b, &pack_acc(32, &x.c))),
        (Elem::F32, _) => unreachable!(),
    }
}

fn all_cases() -> Vec<Case> {
    use F8Kind::*;
    let mut v = Vec::new();
    for (ka, kb) in [(Fp8Fnuz, Fp8Fnuz), (Fp8Fnuz, Bf8Fnuz), (Bf8Fnuz, Fp8Fnuz), (Bf8Fnuz, Bf8Fnuz)] {
        v.push(Case { op: MfmaOp::F32_16x16x32F8, elem: Elem::F8(ka, kb) });
        v.push(Case { op: MfmaOp::F32_32x32x16F8, elem: Elem::F8(ka, kb) });
    }
    v.push(Case { op: MfmaOp::F32_16x16x32F8, elem: Elem::F8(Fp8Ocp, Bf8Ocp) });
    v.push(Case { op: MfmaOp::F32_16x16x16Bf16, elem: Elem::Bf16 });
    v.push(Case { op: MfmaOp::F32_32x32x8Bf16, elem: Elem::Bf16 });
    v.push(Case { op: MfmaOp::F32_16x16x16F16, elem: Elem::F16 });
    v.push(Case { op: MfmaOp::F32_32x32x8F16, elem: Elem::F16 });
    v.push(Case { op: MfmaOp::F32_16x16x4F32, elem: Elem::F32 });
    v.push(Case { op: MfmaOp::F32_32x32x2F32, elem: Elem::F32 });
    v
}

/// Raw bits of an element with value `x` (x must be exactly representable).
fn encode_exact(elem: Elem, x: f32, second: bool) -> u64 {
    match elem {
        Elem::F8(ka, kb) => {
            let k = if second { kb } else { ka };
            let b = (0..=255u8).find(|&b| f8_to_f32(b, k) == x && !(x == 0.0 && b == 0x80)).expect("exactly representable fp8 value");
            u64::from(b)
        }
        Elem::Bf16 => {
            assert_eq!(x.to_bits() & 0xFFFF, 0);
            u64::from(x.to_bits() >> 16)
        }
        Elem::F16 => {
            let h = (0..=0xFFFFu16).find(|&h| f16_reference(h) == f64::from(x) && !(x == 0.0 && h == 0x8000)).expect("exactly representable f16 value");
            u64::from(h)
        }
        Elem::F32 => u64::from(x.to_bits()),
    }
}

/// Random raw element bits of a finite value (all finite encodings equally likely for FP8;
/// moderate exponents for 16/32-bit types so sums stay in range).
fn random_bits(elem: Elem, second: bool, rng: &mut Rng) -> u64 {
    match elem {
        Elem::F8(ka, kb) => {
            let k = if second { kb } else { ka };
            loop {
                let b = rng.below(256) as u8;
                if f8_to_f32(b, k).is_finite() {
                    return u64::from(b);
                }
            }
        }
        Elem::Bf16 => {
            // sign, exponent 2^-20..2^20, random 7-bit mantissa.
            let e = 127 - 20 + rng.below(41);
            (rng.below(2) << 15) | (e << 7) | rng.below(128)
        }
        Elem::F16 => {
            // any finite binary16 except the largest binades (exponent field 0..=24)
            let e = rng.below(25);
            (rng.below(2) << 15) | (e << 10) | rng.below(1024)
        }
        Elem::F32 => {
            let e = 127 - 20 + rng.below(41);
            (rng.below(2) << 31) | (e << 23) | rng.below(1 << 23)
        }
    }
}

fn reference_f64(case: &Case, x: &Inputs) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let (m, _, k) = case.op.shape();
    let mut sum = vec![vec![0f64; m]; m];
    let mut abs = vec![vec![0f64; m]; m];
    for i in 0..m {
        for j in 0..m {
            let c = f64::from(x.c[i][j]);
            let mut s = c;
            let mut a_s = c.abs();
            for kk in 0..k {
                let p = f64::from(value_a(case.elem, x.a[i][kk])) * f64::from(value_b(case.elem, x.b[kk][j]));
                s += p;
                a_s += p.abs();
            }
            sum[i][j] = s;
            abs[i][j] = a_s;
        }
    }
    (sum, abs)
}

/// The documented model, written as plainly as possible: acc = C; acc = fma(a, b, acc) for k
/// in order, in f32.
fn reference_model(case: &Case, x: &Inputs) -> Vec<Vec<f32>> {
    let (m, _, k) = case.op.shape();
    let mut d = vec![vec![0f32; m]; m];
    for i in 0..m {
        for j in 0..m {
            let mut acc = x.c[i][j];
            for kk in 0..k {
                acc = value_a(case.elem, x.a[i][kk]).mul_add(value_b(case.elem, x.b[kk][j]), acc);
            }
            d[i][j] = acc;
        }
    }
    d
}

fn random_inputs(case: &Case, rng: &mut Rng) -> Inputs {
    let (m, _, k) = case.op.shape();
    Inputs {
        a: (0..m).map(|_| (0..k).map(|_| random_bits(case.elem, false, rng)).collect()).collect(),
        b: (0..k).map(|_| (0..m).map(|_| random_bits(case.elem, true, rng)).collect()).collect(),
        c: (0..m).map(|_| (0..m).map(|_| (rng.below(2001) as f32 - 1000.0) * 0.25).collect()).collect(),
    }
}

// ---------------------------------------------------------------------------------------------

#[test]
fn exact_small_integer_products_match_f64_reference() {
    let small = [0.0f32, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0, -2.0, 3.0, -3.0, 4.0, -4.0];
    let mut rng = Rng(1);
    for case in all_cases() {
        let (m, _, k) = case.op.shape();
        let bits_a: Vec<u64> = small.iter().map(|&v| encode_exact(case.elem, v, false)).collect();
        let bits_b: Vec<u64> = small.iter().map(|&v| encode_exact(case.elem, v, true)).collect();
        for _ in 0..3 {
            let pick = |rng: &mut Rng, second: bool| {
                let idx = rng.below(small.len() as u64) as usize;
                if second { bits_b[idx] } else { bits_a[idx] }
            };
            let x = Inputs {
                a: (0..m).map(|_| (0..k).map(|_| pick(&mut rng, false)).collect()).collect(),
                b: (0..k).map(|_| (0..m).map(|_| pick(&mut rng, true)).collect()).collect(),
                c: (0..m).map(|_| (0..m).map(|_| rng.below(201) as f32 - 100.0).collect()).collect(),
            };
            let d = run(&case, &x);
            let (want, _) = reference_f64(&case, &x);
            for i in 0..m {
                for j in 0..m {
                    assert_eq!(f64::from(d[i][j]), want[i][j], "{:?} {:?} D[{i}][{j}]", case.op, case.elem);
                }
            }
        }
    }
}

#[test]
fn random_finite_inputs_match_model_and_f64_within_bound() {
    let mut rng = Rng(42);
    for case in all_cases() {
        let (m, _, k) = case.op.shape();
        for _ in 0..4 {
            let x = random_inputs(&case, &mut rng);
            let d = run(&case, &x);
            let model = reference_model(&case, &x);
            let (want, abs) = reference_f64(&case, &x);
            // Sequential f32 FMA: |error| ≤ γ_{K+1}·Σ|terms|, γ_n = n·u/(1 − n·u), u = 2^-24.
            let u = 2f64.powi(-24);
            let n = (k + 1) as f64;
            let gamma = n * u / (1.0 - n * u);
            for i in 0..m {
                for j in 0..m {
                    assert_eq!(d[i][j].to_bits(), model[i][j].to_bits(), "{:?} {:?} D[{i}][{j}] vs model", case.op, case.elem);
                    let err = (f64::from(d[i][j]) - want[i][j]).abs();
                    assert!(
                        err <= gamma * abs[i][j],
                        "{:?} {:?} D[{i}][{j}] = {} want {} err {err:e} bound {:e}",
                        case.op,
                        case.elem,
                        d[i][j],
                        want[i][j],
                        gamma * abs[i][j]
                    );
                }
            }
        }
    }
}

/// A single non-zero A[i][k] with B all ones must light up exactly row i of D (value A[i][k]);
/// a single non-zero B[k][j] with A all ones exactly column j. Catches any lane/register mixup.
#[test]
fn single_element_influence_rows_and_columns() {
    for case in all_cases() {
        let (m, _, k) = case.op.shape();
        let one_a = encode_exact(case.elem, 1.0, false);
        let one_b = encode_exact(case.elem, 1.0, true);
        let zero_a = encode_exact(case.elem, 0.0, false);
        let zero_b = encode_exact(case.elem, 0.0, true);
        let v_a = encode_exact(case.elem, 3.0, false);
        let v_b = encode_exact(case.elem, -1.5, true);
        let c0 = vec![vec![0f32; m]; m];
        for ii in 0..m {
            for kk in 0..k {
                let x = Inputs {
                    a: (0..m).map(|i| (0..k).map(|q| if (i, q) == (ii, kk) { v_a } else { zero_a }).collect()).collect(),
                    b: vec![vec![one_b; m]; k],
                    c: c0.clone(),
                };
                let d = run(&case, &x);
                for i in 0..m {
                    for j in 0..m {
                        let want = if i == ii { 3.0 } else { 0.0 };
                        assert_eq!(d[i][j], want, "{:?} A[{ii}][{kk}] → D[{i}][{j}]", case.op);
                    }
                }
            }
        }
        for kk in 0..k {
            for jj in 0..m {
                let x = Inputs {
                    a: vec![vec![one_a; k]; m],
                    b: (0..k).map(|q| (0..m).map(|j| if (q, j) == (kk, jj) { v_b } else { zero_b }).collect()).collect(),
                    c: c0.clone(),
                };
                let d = run(&case, &x);
                for i in 0..m {
                    for j in 0..m {
                        let want = if j == jj { -1.5 } else { 0.0 };
                        assert_eq!(d[i][j], want, "{:?} B[{kk}][{jj}] → D[{i}][{j}]", case.op);
                    }
                }
            }
        }
        // C passes through unchanged when A = B = 0, element by element.
        let c: Vec<Vec<f32>> = (0..m).map(|i| (0..m).map(|j| (i * 100 + j) as f32).collect()).collect();
        let x = Inputs { a: vec![vec![zero_a; k]; m], b: vec![vec![zero_b; m]; k], c: c.clone() };
        assert_eq!(run(&case, &x), c, "{:?} C passthrough", case.op);
    }
}

/// Raw lane-level check of the 16x16x32 layout without the helper: lane 16·1 + 5 = 21 holds
/// A[5][8..16]; byte 3 of it is A[5][11]. B in lane 32 + 7 = 39, byte 0 is B[16][7].
/// D[5][7] (register 1 of lane 16·1 + 7 = 23) = A[5][11]·B[11][7] + A[5][16]·B[16][7].
#[test]
fn fp8_16x16x32_raw_lane_spot_check() {
    let k = F8Kind::Fp8Fnuz;
    let mut a = [0u64; 64];
    let mut b = [0u64; 64];
    a[21] = 0x48 << 24; // A[5][11] = 2.0
    a[32 + 5] = 0x40; // A[5][16] = 1.0 (lane 16·2 + 5, byte 0)
    b[16 + 7] = 0x50 << 24; // B[11][7] = 4.0 (lane 16·1 + 7, byte 3)
    b[32 + 7] = 0x38; // B[16][7] = 0.5 (lane 16·2 + 7, byte 0)
    let c = [[0f32; 4]; 64];
    let d = mfma_f32_16x16x32_f8(&a, &b, &c, k, k);
    for (l, regs) in d.iter().enumerate() {
        for (r, &v) in regs.iter().enumerate() {
            let want = if (l, r) == (23, 1) { 8.5 } else { 0.0 };
            assert_eq!(v, want, "lane {l} reg {r}");
        }
    }
    // 32x32x16: A[9][12] in lane 32 + 9, byte 4; B[12][3] in lane 32 + 3, byte 4;
    // D[9][3]: register 4·1 + 1 = 5 of lane (32·2) mod 64 + 3 = 3.
    let mut a = [0u64; 64];
    let mut b = [0u64; 64];
    a[41] = 0x48 << 32;
    b[35] = 0x50 << 32;
    let d = mfma_f32_32x32x16_f8(&a, &b, &[[0f32; 16]; 64], k, k);
    for (l, regs) in d.iter().enumerate() {
        for (r, &v) in regs.iter().enumerate() {
            let want = if (l, r) == (3, 5) { 8.0 } else { 0.0 };
            assert_eq!(v, want, "lane {l} reg {r}");
        }
    }
}

#[test]
fn nan_and_infinity_propagate() {
    let k = F8Kind::Fp8Fnuz;
    let mut a = [0x4040_4040_4040_4040u64; 64]; // all 1.0
    let b = [0x4040_4040_4040_4040u64; 64];
    a[3] = 0x80; // A[3][0] = NaN → row 3 of D is NaN
    let d = unpack_acc(16, &mfma_f32_16x16x32_f8(&a, &b, &[[0f32; 4]; 64], k, k));
    for (i, row) in d.iter().enumerate() {
        for &v in row {
            assert_eq!(v.is_nan(), i == 3);
            if i != 3 {
                assert_eq!(v, 32.0);
            }
        }
    }
    let mut c = [[0f32; 4]; 64];
    c[0][0] = f32::INFINITY; // D[0][0]
    let d = unpack_acc(16, &mfma_f32_16x16x32_f8(&b, &b, &c, k, k));
    assert_eq!(d[0][0], f32::INFINITY);
}

#[test]
fn pass_counts() {
    assert_eq!(MfmaOp::F32_16x16x32F8.passes(), 4);
    assert_eq!(MfmaOp::F32_16x16x32F8.cycles(), 16);
    assert_eq!(MfmaOp::F32_32x32x16F8.passes(), 8);
    assert_eq!(MfmaOp::F32_32x32x16F8.cycles(), 32);
}

/// Release-mode timing of one whole-wave 16x16x32 FP8 MFMA:
/// `cargo test -p amdgpu-emu --release --test numerics_mfma -- --ignored --nocapture`.
#[test]
#[ignore]
fn time_mfma_16x16x32_f8() {
    let mut rng = Rng(7);
    let a: [u64; 64] = std::array::from_fn(|_| rng.next() & 0x7F7F_7F7F_7F7F_7F7F);
    let b: [u64; 64] = std::array::from_fn(|_| rng.next() & 0x7F7F_7F7F_7F7F_7F7F);
    let mut c = [[0f32; 4]; 64];
    let iters = 200_000;
    let t = std::time::Instant::now();
    for _ in 0..iters {
        c = mfma_f32_16x16x32_f8(std::hint::black_box(&a), std::hint::black_box(&b), &c, F8Kind::Fp8Fnuz, F8Kind::Fp8Fnuz);
    }
    let per = t.elapsed().as_secs_f64() / f64::from(iters);
    std::hint::black_box(&c);
    println!("mfma_f32_16x16x32_f8: {:.1} ns/call", per * 1e9);
    let mut c32 = [[0f32; 16]; 64];
    let t = std::time::Instant::now();
    for _ in 0..iters / 4 {
        c32 = mfma_f32_32x32x16_f8(std::hint::black_box(&a), std::hint::black_box(&b), &c32, F8Kind::Fp8Fnuz, F8Kind::Fp8Fnuz);
    }
    let per = t.elapsed().as_secs_f64() / f64::from(iters / 4);
    std::hint::black_box(&c32);
    println!("mfma_f32_32x32x16_f8: {:.1} ns/call", per * 1e9);
    let ab: [u64; 64] = std::array::from_fn(|_| rng.next() & 0x3FFF_3FFF_3FFF_3FFF);
    let t = std::time::Instant::now();
    for _ in 0..iters / 4 {
        c = mfma_f32_16x16x16_bf16(std::hint::black_box(&ab), std::hint::black_box(&ab), &c);
    }
    let per = t.elapsed().as_secs_f64() / f64::from(iters / 4);
    std::hint::black_box(&c);
    println!("mfma_f32_16x16x16_bf16: {:.1} ns/call", per * 1e9);
}

/// BF16 products can leave the f32 range; the result must then be the fused one:
/// fma(2^64, 2^64, −1.5·2^127) = 2^128 − 1.5·2^127 = 2^126, whereas rounding the product
/// first would give +∞.
#[test]
fn bf16_out_of_range_products_are_fused() {
    let two_64 = 0x5F80u64; // bf16 2^64: exponent field 127 + 64 = 191
    let mut x = Inputs { a: vec![vec![0u64; 16]; 16], b: vec![vec![0u64; 16]; 16], c: vec![vec![0f32; 16]; 16] };
    x.a[0][0] = two_64;
    x.b[0][0] = two_64;
    x.c[0][0] = -1.5 * 2f32.powi(127);
    let case = Case { op: MfmaOp::F32_16x16x16Bf16, elem: Elem::Bf16 };
    let d = run(&case, &x);
    assert_eq!(d[0][0], 2f32.powi(126));
    let case32 = Case { op: MfmaOp::F32_32x32x8Bf16, elem: Elem::Bf16 };
    let mut x32 = Inputs { a: vec![vec![0u64; 8]; 32], b: vec![vec![0u64; 32]; 8], c: vec![vec![0f32; 32]; 32] };
    x32.a[31][7] = two_64;
    x32.b[7][30] = two_64 | 0x8000;
    x32.c[31][30] = 1.5 * 2f32.powi(127);
    assert_eq!(run(&case32, &x32)[31][30], -(2f32.powi(126)));
}

/// Cycle counts from AMD's CDNA3 dense MFMA intrinsic reference (throughput table).
#[test]
fn cycle_counts_of_all_ops() {
    for (op, cycles) in [
        (MfmaOp::F32_16x16x32F8, 16),
        (MfmaOp::F32_32x32x16F8, 32),
        (MfmaOp::F32_16x16x16Bf16, 16),
        (MfmaOp::F32_32x32x8Bf16, 32),
        (MfmaOp::F32_16x16x16F16, 16),
        (MfmaOp::F32_32x32x8F16, 32),
        (MfmaOp::F32_16x16x4F32, 32),
        (MfmaOp::F32_32x32x2F32, 64),
        // gfx950 f8f6f4 with FP8 operands (8192 FLOP/clk/CU; project hardware.md).
        (MfmaOp::F32_16x16x128F8f6f4, 32),
        (MfmaOp::F32_32x32x64F8f6f4, 64),
    ] {
        assert_eq!(op.cycles(), cycles, "{op:?}");
        assert_eq!(op.passes() * 4, cycles, "{op:?}");
    }
}
