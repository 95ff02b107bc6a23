//! The shipped dense FP8 GEMM kernels (the code object the `fp8gemm` crate embeds; a
//! dev-dependency, so it is always built) run on the emulator and match an f64 CPU reference
//! within bf16 output rounding.

use std::time::Instant;

use amdgpu_emu::exec::{Checks, Class, LaunchConfig, launch};
use amdgpu_emu::loader::CodeObject;
use amdgpu_emu::memory::DeviceMemory;
use amdgpu_emu::numerics::{F8Kind, f8_to_f32};

mod common;
use common::{dense_launch, shipped, shipped_arch};

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    /// An E4M3FNUZ byte with |value| in [2^-4, 2^3] (never NaN).
    fn fp8(&mut self) -> u8 {
        let r = self.next();
        let sign = (r & 1) as u8;
        let exp = 4 + (r >> 1) % 8; // biased exponent 4..=11
        let man = (r >> 4) & 7;
        (sign << 7) | ((exp as u8) << 3) | man as u8
    }
}

fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

// The problem shape and tile are separate parameters; the launch error is only formatted here.
#[allow(clippy::too_many_arguments, clippy::result_large_err)]
fn run_gemm(co: &CodeObject, name: &str, bm: u32, bn: u32, m: u32, n: u32, k: u32, check: bool) -> (u64, f64) {
    let kern = co.kernel(name).unwrap();
    let mem = DeviceMemory::new();
    let mut rng = Lcg(m as u64 * 1_000_003 + n as u64 * 101 + k as u64);
    let a: Vec<u8> = (0..m * k).map(|_| rng.fp8()).collect();
    let b: Vec<u8> = (0..n * k).map(|_| rng.fp8()).collect();
    let kb = k.div_ceil(128);
    let sfa: Vec<f32> = (0..m * kb).map(|i| 0.5 + (i % 7) as f32 * 0.125).collect();
    let sfb: Vec<f32> = (0..n.div_ceil(128) * kb).map(|i| 0.25 + (i % 5) as f32 * 0.5).collect();
    let (cfg, pd) = dense_launch(co, &mem, name, (bm, bn), (m, n, k), &a, &b, &sfa, &sfb);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let t = Instant::now();
    let r = pool.install(|| launch(co, kern, &cfg, &mem, &Checks::default())).unwrap_or_else(|e| panic!("{e}"));
    let dt = t.elapsed().as_secs_f64();
    assert!(r.count(Class::Mfma) > 0);
    if check {
        let mut d = vec![0u8; (m * n * 2) as usize];
        mem.read(pd, &mut d).unwrap();
        let kind = if co.arch() == "gfx950" { F8Kind::Fp8Ocp } else { F8Kind::Fp8Fnuz };
        let af: Vec<f32> = a.iter().map(|&x| f8_to_f32(x, kind)).collect();
        let bf: Vec<f32> = b.iter().map(|&x| f8_to_f32(x, kind)).collect();
        for i in 0..m as usize {
            for j in 0..n as usize {
                let mut acc = 0f64;
                for q in 0..kb as usize {
                    let mut s = 0f64;
                    for kk in q * 128..(q * 128 + 128).min(k as usize) {
                        s += f64::from(af[i * k as usize + kk]) * f64::from(bf[j * k as usize + kk]);
                    }
                    acc += s * f64::from(sfa[i * kb as usize + q]) * f64::from(sfb[(j / 128) * kb as usize + q]);
                }
                let got = bf16_to_f32(u16::from_le_bytes([d[(i * n as usize + j) * 2], d[(i * n as usize + j) * 2 + 1]]));
                let tol = acc.abs() * 2f64.powi(-7) + 1e-3;
                assert!((f64::from(got) - acc).abs() <= tol, "D[{i}][{j}] = {got}, reference {acc}");
            }
        }
    }
    (r.instructions, dt)
}

#[test]
fn dense_fp8_gemm_kernels_match_reference() {
    let co = shipped();
    for (name, bm, bn) in [("fp8_gemm_nt_bm64_bn64", 64, 64), ("fp8_gemm_nt_bm64_bn128", 64, 128), ("fp8_gemm_nt_bm128_bn128", 128, 128)] {
        assert!(co.kernel(name).is_some(), "the shipped code object has no kernel {name}");
        // Ragged m and n exercise the kernels' edge handling.
        run_gemm(&co, name, bm, bn, 100, 72, 256, true);
        run_gemm(&co, name, bm, bn, 130, 132, 384, true);
    }
}

/// gfx950 code object: same instructions, FP8 operands decoded as OCP E4M3FN.
#[test]
fn dense_fp8_gemm_gfx950_uses_ocp_fp8() {
    let co = shipped_arch("gfx950");
    assert_eq!(co.arch(), "gfx950");
    run_gemm(&co, "fp8_gemm_nt_bm64_bn64", 64, 64, 100, 72, 256, true);
}

#[test]
fn dense_fp8_gemm_one_core_speed() {
    let co = shipped();
    let (insts, dt) = run_gemm(&co, "fp8_gemm_nt_bm128_bn128", 128, 128, 256, 256, 512, false);
    println!(
        "256x256x512 fp8 GEMM: {insts} wave-instructions in {dt:.3} s on one core ({:.2} M/s); 1024^3 extrapolates to {:.1} s",
        insts as f64 / dt / 1e6,
        dt * (1024.0 * 1024.0 * 1024.0) / (256.0 * 256.0 * 512.0)
    );
}

/// `register_pressure`: 48 chained MFMA accumulators per wave; checks operand/accumulator register
/// plumbing against the numerics model applied per wave on the CPU.
#[test]
#[allow(clippy::needless_range_loop)] // `r` and `l` address the output buffer and the transposed accumulator
fn register_pressure_mfma_chain_matches_model() {
    let co = shipped();
    let kern = co.kernel("register_pressure").expect("the shipped code object has no kernel register_pressure");
    let mem = DeviceMemory::new();
    let iters = 3usize;
    let mut rng = Lcg(99);
    let mk = |rng: &mut Lcg| -> Vec<u64> { (0..iters * 512).map(|_| (0..8).fold(0u64, |acc, i| acc | u64::from(rng.fp8()) << (8 * i))).collect() };
    let (a, b) = (mk(&mut rng), mk(&mut rng));
    let up = |v: &[u64]| {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let p = mem.alloc(bytes.len() as u64).unwrap();
        mem.write(p, &bytes).unwrap();
        p
    };
    let (pa, pb) = (up(&a), up(&b));
    let pout = mem.alloc(256 * 48 * 4 * 4).unwrap();
    let mut args = Vec::new();
    for p in [pa, pb, pout] {
        args.extend_from_slice(&p.to_le_bytes());
    }
    args.extend_from_slice(&(iters as u32).to_le_bytes());
    args.resize(kern.meta.kernarg_segment_size as usize, 0);
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [256, 1, 1], dynamic_lds_bytes: 0, kernarg: args };
    launch(&co, kern, &cfg, &mem, &Checks::default()).unwrap_or_else(|e| panic!("{e}"));
    let mut out = vec![0u8; 256 * 48 * 4 * 4];
    mem.read(pout, &mut out).unwrap();
    let outf = |i: usize| f32::from_le_bytes(out[i * 4..i * 4 + 4].try_into().unwrap());
    for w in 0..4 {
        let mut acc = vec![[[0f32; 4]; 64]; 48];
        for it in 0..iters {
            let frag = |v: &[u64], o: usize| -> [u64; 64] { std::array::from_fn(|l| v[(it * 256 + w * 64 + l) * 2 + o]) };
            let (a0, a1, b0, b1) = (frag(&a, 0), frag(&a, 1), frag(&b, 0), frag(&b, 1));
            for (j, accj) in acc.iter_mut().enumerate() {
                let av = if j % 2 == 0 { a0 } else { a1 };
                let bv: [u64; 64] = if j % 3 == 0 { b0 } else { std::array::from_fn(|l| b1[l] ^ j as u64) };
                *accj = amdgpu_emu::numerics::mfma_f32_16x16x32_f8(&av, &bv, accj, F8Kind::Fp8Fnuz, F8Kind::Fp8Fnuz);
            }
        }
        for (j, accj) in acc.iter().enumerate() {
            for r in 0..4 {
                for l in 0..64 {
                    let got = outf((j * 4 + r) * 256 + w * 64 + l);
                    assert_eq!(got.to_bits(), accj[l][r].to_bits(), "acc {j} reg {r} wave {w} lane {l}: {got} vs {}", accj[l][r]);
                }
            }
        }
    }
}

/// The 1024³ FP8 GEMM on one core (the project's budget is ≤ 5 s). Ignored by default (a few
/// seconds); run with `cargo test -p amdgpu-emu --release --test gemm_kernel -- --ignored`.
#[test]
#[ignore]
fn dense_fp8_gemm_1024_cubed_one_core() {
    let co = shipped();
    let (insts, dt) = run_gemm(&co, "fp8_gemm_nt_bm128_bn128", 128, 128, 1024, 1024, 1024, false);
    println!("1024^3 fp8 GEMM: {insts} wave-instructions in {dt:.2} s on one core");
    assert!(dt < 5.0, "{dt} s");
}

/// The watchdog: a wave that runs past its instruction budget fails the launch with the kernel,
/// workgroup, wave and budget named, instead of hanging the caller.
#[test]
fn watchdog_stops_a_wave_over_its_instruction_budget() {
    let co = shipped();
    let kern = co.kernel("register_pressure").expect("the shipped code object has no kernel register_pressure");
    let mem = DeviceMemory::new();
    let iters = 4u32;
    let pa = mem.alloc(u64::from(iters) * 512 * 8).unwrap();
    let pb = mem.alloc(u64::from(iters) * 512 * 8).unwrap();
    let pout = mem.alloc(256 * 48 * 4 * 4).unwrap();
    let mut args = Vec::new();
    for p in [pa, pb, pout] {
        args.extend_from_slice(&p.to_le_bytes());
    }
    args.extend_from_slice(&iters.to_le_bytes());
    args.resize(kern.meta.kernarg_segment_size as usize, 0);
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [256, 1, 1], dynamic_lds_bytes: 0, kernarg: args };
    let tight = Checks { max_wave_instructions: 100, ..Checks::default() };
    let e = launch(&co, kern, &cfg, &mem, &tight).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, amdgpu_emu::exec::LaunchError::Watchdog { limit: 100, wave: 0, workgroup: [0, 0, 0], .. }), "{msg}");
    assert!(msg.contains("register_pressure") && msg.contains("more than 100 instructions"), "{msg}");
    // The same launch fits the default budget.
    launch(&co, kern, &cfg, &mem, &Checks::default()).unwrap_or_else(|e| panic!("{e}"));
}
