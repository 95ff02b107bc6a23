//! Conformance of AMD's production FP8 GEMM code objects ("peers", `amdgpu_emu::peers`) on the
//! emulator: every code object in `$FP8GEMM_PEERS_DIR` runs at several shapes (including
//! M % TM ≠ 0) and its output is checked against the exact f64 product, element by element.
//!
//! The directory comes from `FP8GEMM_PEERS_DIR` (CI sets it to `../shared/peers` beside the
//! checkout); an unset variable or a missing directory fails every test here with a message
//! naming the variable and the path.
//!
//! Checking modes: memcheck, racecheck, late-arrival and uninit-lds are on for every value run.
//! mfma-hazard is asserted separately ([`mfma_hazard_finding_in_every_peer`]): all seven peers
//! read a 4-pass XDL MFMA result with a VALU instruction 2 instructions after the MFMA issues,
//! where LLVM's gfx940 hazard recognizer (which the check implements, counting every instruction
//! as one wait state) requires 7. The kernels are correct on MI300X/MI325X, so on hardware the
//! two wave64 VALU instructions in between must cover the latency: LLVM counts each instruction
//! as a single wait state, which is conservative if wait states are cycles (an LLVM maintainer in
//! llvm/llvm-project#83782: the recognizer uses "the number of cycles to insert a correct number
//! of waits"; ROCm/llvm-project#2838: a VALU cannot co-execute with an 8-pass XDL MFMA during its
//! first two passes). No public document states the hardware rule, so the check stays as LLVM
//! defines it and this finding is recorded, not hidden. (Measured once by hand: counting each
//! VALU instruction as 4 wait states — one wave64 issue on a 16-lane SIMD — all six BpreShuffle
//! kernels pass every check at every shape here; flatmm still trips at pc 0x2398, where an
//! independent MFMA and a buffer load, not VALU instructions, separate the read from its
//! producer, so only issue cycles from a timing model could judge it.)

use amdgpu_emu::exec::{Checks, LaunchError, launch};
use amdgpu_emu::memory::DeviceMemory;
use amdgpu_emu::peers::*;

fn dir() -> std::path::PathBuf {
    peers_dir().unwrap_or_else(|e| panic!("peer conformance needs the peer code objects: {e}"))
}

fn peers() -> Vec<PeerKernel> {
    let d = dir();
    load_peers(&d).unwrap_or_else(|e| panic!("loading the peers from {}: {e}", d.display()))
}

/// Every mode except mfma-hazard (see the module docs).
fn value_checks() -> Checks {
    Checks { mfma_hazard: false, ..Checks::all() }
}

/// bf16 of `x` truncated toward zero, and rounded to nearest even.
fn bf16_trunc(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0xffff_0000)
}
fn bf16_rne(x: f32) -> f32 {
    half::bf16::from_f32(x).to_f32()
}

/// Runs `p` at `problem` and checks the output; returns (calc_diff, elements equal to the
/// f64 value truncated to bf16 / rounded to fp16).
fn run_and_check(p: &PeerKernel, problem: &PeerProblem, padding: Padding) -> (f64, usize) {
    let mem = DeviceMemory::new();
    let l = prepare(&mem, p, problem, padding).unwrap_or_else(|e| panic!("{}: prepare: {e}", p.symbol));
    launch(&p.code_object, p.kernel(), &l.config, &mem, &value_checks())
        .unwrap_or_else(|e| panic!("{} at {}x{}x{} ks {}: {e}", p.symbol, problem.m, problem.n, problem.k, problem.ks));
    let c = l.read_c(&mem).unwrap();
    let exact = reference_f64(problem).unwrap();
    let diff = calc_diff(&c, &exact).unwrap();
    let shape = format!("{} at {}x{}x{} ks {}", p.symbol, problem.m, problem.n, problem.k, problem.ks);
    // f32 accumulation error bound: each output is a chain of f32 roundings (32 products per
    // MFMA lane sum, 4 MFMAs per 128-block, one scaled FMA per block): at most
    // (48 + K/128) · 2^-24 · Σ|terms|. Σ|terms| is the exact product of the operands' magnitudes.
    let abs = PeerProblem {
        a: problem.a.iter().map(|&x| x & 0x7f).collect(),
        b: problem.b.iter().map(|&x| x & 0x7f).collect(),
        bias: problem.bias.iter().map(|x| x.abs()).collect(),
        ..problem.clone()
    };
    let magnitude = reference_f64(&abs).unwrap();
    let eps = (48.0 + f64::from(problem.k / 128)) * 2f64.powi(-24);
    let mut matches = 0;
    for (i, ((&got, &want), &mag)) in c.iter().zip(&exact).zip(&magnitude).enumerate() {
        let w32 = want as f32;
        let slack = eps * mag;
        let at = format!("{shape}: C[{}][{}] = {got}, exact {want}", i / problem.n as usize, i % problem.n as usize);
        assert!(got.is_finite(), "{at}");
        match p.family.output() {
            OutputFormat::Bf16 => {
                // The kernel keeps f32 sums and stores their upper halves (v_perm_b32): bf16
                // truncation toward zero of a value within `slack` of the exact one. So: not
                // larger in magnitude than exact + slack, less than one bf16 ulp (2^-7 relative)
                // below it, same sign unless within slack of zero.
                let ulp = f64::from(bf16_trunc(w32)).abs() * 2f64.powi(-7);
                assert!(f64::from(got).abs() <= want.abs() + slack, "{at}: larger than exact (slack {slack:e})");
                assert!(want.abs() - f64::from(got).abs() <= ulp + slack, "{at}: more than 1 bf16 ulp below exact");
                assert!(got == 0.0 || (got > 0.0) == (want > 0.0) || want.abs() <= slack, "{at}: sign");
                if got == bf16_trunc(w32) {
                    matches += 1;
                }
            }
            OutputFormat::F16 => {
                let r = half::f16::from_f32(w32);
                let ulp = (f64::from(half::f16::from_bits(r.to_bits() + 1).to_f32()) - f64::from(r.to_f32())).abs();
                assert!((f64::from(got) - want).abs() <= 0.5 * ulp + slack, "{at}: more than half an fp16 ulp from exact");
                if got == r.to_f32() {
                    matches += 1;
                }
            }
        }
    }
    let limit = match p.family.output() {
        OutputFormat::Bf16 => 1e-5,
        OutputFormat::F16 => 1e-7,
    };
    assert!(diff < limit, "{shape}: calc_diff {diff:e} ≥ {limit:e}");
    println!(
        "{shape}: calc_diff {diff:.3e}, {matches}/{} outputs equal the exact value {}",
        c.len(),
        if p.family.output() == OutputFormat::Bf16 { "truncated to bf16" } else { "rounded to fp16" }
    );
    l.free(&mem).unwrap();
    (diff, matches)
}

fn shapes(f: PeerFamily) -> Vec<(u32, u32, u32)> {
    let tm = f.tile_m();
    let tn = f.tile_n();
    // M: one row, a partial first tile, a partial last tile (M % TM ≠ 0) and whole tiles.
    vec![(1, tn, 128), (tm - 3, tn, 256), (2 * tm + 5, 2 * tn, 384), (2 * tm, tn, 512)]
}

#[test]
fn every_peer_is_correct_at_several_shapes() {
    for p in peers() {
        for (i, (m, n, k)) in shapes(p.family).into_iter().enumerate() {
            let problem = PeerProblem::generate(m, n, k, 100 + i as u64);
            let (_, matches) = run_and_check(&p, &problem, Padding::WholeTiles);
            // Rounding characterization (the bound checks above are element-wise): nearly every
            // element is exactly the exact value rounded the kernel's way; the rest sit within
            // f32 accumulation error of a rounding boundary.
            let total = (m * n) as usize;
            assert!(matches * 100 >= total * 95, "{}: only {matches}/{total} outputs equal the exact value rounded", p.symbol);
        }
    }
}

#[test]
fn bpreshuffle_truncates_to_bf16() {
    // Element-wise characterization: against the exact value truncated and rounded to nearest.
    let d = dir();
    let p = load_peer(&d, PeerFamily::BpreShuffle { tm: 64 }).unwrap();
    let problem = PeerProblem::generate(64, 256, 512, 7);
    let mem = DeviceMemory::new();
    let l = prepare(&mem, &p, &problem, Padding::WholeTiles).unwrap();
    launch(&p.code_object, p.kernel(), &l.config, &mem, &value_checks()).unwrap();
    let c = l.read_c(&mem).unwrap();
    let exact = reference_f64(&problem).unwrap();
    let trunc = c.iter().zip(&exact).filter(|(g, w)| **g == bf16_trunc(**w as f32)).count();
    let rne = c.iter().zip(&exact).filter(|(g, w)| **g == bf16_rne(**w as f32)).count();
    println!("BpreShuffle_64x128 64x256x512: {trunc}/{} equal truncation, {rne} equal round-to-nearest", c.len());
    assert!(trunc * 100 >= c.len() * 99, "{trunc}/{} equal truncation", c.len());
    assert!(rne * 100 <= c.len() * 75, "{rne}/{} equal round-to-nearest: the kernel would be rounding", c.len());
}

#[test]
fn bpreshuffle_split_k_accumulates_with_bf16_atomics() {
    let d = dir();
    let p = load_peer(&d, PeerFamily::BpreShuffle { tm: 32 }).unwrap();
    let mut problem = PeerProblem::generate(40, 256, 512, 9);
    problem.ks = 2;
    let mem = DeviceMemory::new();
    let l = prepare(&mem, &p, &problem, Padding::WholeTiles).unwrap();
    assert_eq!(l.config.grid, [4, 2, 1]);
    launch(&p.code_object, p.kernel(), &l.config, &mem, &value_checks()).unwrap_or_else(|e| panic!("{e}"));
    let c = l.read_c(&mem).unwrap();
    let exact = reference_f64(&problem).unwrap();
    let diff = calc_diff(&c, &exact).unwrap();
    println!("BpreShuffle_32x128 40x256x512 ks 2: calc_diff {diff:.3e}");
    // Each split (K blocks [0, 2) and [2, 4)) stores its f32 sum truncated to bf16 with
    // `global_atomic_pk_add_bf16` onto the zeroed C, which adds in bf16: every element is within
    // one bf16 ulp of each partial plus one of the result of the exact value.
    let half_k = |lo: u32| {
        let (k, kb) = (problem.k, problem.k / 128);
        let rows = |v: &[u8], r: u32| (0..r).flat_map(|i| v[(i * k + lo * 128) as usize..(i * k + lo * 128 + k / 2) as usize].to_vec()).collect::<Vec<u8>>();
        let scales = |v: &[f32], r: u32| (0..r).flat_map(|i| v[(i * kb + lo) as usize..(i * kb + lo + kb / 2) as usize].to_vec()).collect::<Vec<f32>>();
        let part = PeerProblem {
            k: k / 2,
            a: rows(&problem.a, problem.m),
            b: rows(&problem.b, problem.n),
            sa: scales(&problem.sa, problem.m),
            sb: scales(&problem.sb, problem.n / 128),
            ks: 1,
            ..problem.clone()
        };
        reference_f64(&part).unwrap()
    };
    let (p0, p1) = (half_k(0), half_k(2));
    let u = 2f64.powi(-7);
    for (i, &g) in c.iter().enumerate() {
        let (a, b) = (p0[i], p1[i]);
        let bound = u * (a.abs() + b.abs() + (a + b).abs()) * 1.01;
        assert!((f64::from(g) - exact[i]).abs() <= bound, "C[{i}] = {g}, exact {} = {a} + {b}, bound {bound:e}", exact[i]);
        assert!(((a + b) - exact[i]).abs() <= 1e-9 * (a.abs() + b.abs()), "the halves add up to the exact value");
    }
    assert!(diff < 1e-4, "calc_diff {diff:e}");
}

#[test]
fn bias_is_added() {
    let d = dir();
    let p = load_peer(&d, PeerFamily::BpreShuffle { tm: 48 }).unwrap();
    let mut problem = PeerProblem::generate(50, 128, 256, 11);
    problem.bias = (0..128).map(|j| j as f32 * 0.25 - 8.0).collect();
    run_and_check(&p, &problem, Padding::WholeTiles);
}

/// With allocations of exactly M rows the BpreShuffle kernels stay in bounds: each workgroup
/// builds its A and C buffer resources with num_records = (rows of this tile that are < M) ·
/// row bytes (0x800 for the last tile of M = 200, TM = 32, N = 128, K = 256: 8 rows), so the
/// rows past M fail the raw-buffer range check (loads 0, stores dropped).
#[test]
fn bpreshuffle_stays_in_bounds_with_exact_allocations() {
    for p in peers().into_iter().filter(|p| p.family != PeerFamily::Flatmm) {
        let tm = p.family.tile_m();
        let problem = PeerProblem::generate(2 * tm + 7, 256, 256, 13);
        run_and_check(&p, &problem, Padding::Exact);
    }
}

/// With exactly M rows of SA the flatmm kernel reads past the SA allocation in the last M tile:
/// its SA buffer resource keeps num_records = the whole SA size (K/128 · M · 4 bytes) while the
/// base advances one column (M · 4 bytes) per K block, so in the last K block rows m ≥ M of the
/// last tile (up to (TM − M % TM) · 4 bytes past the end) pass the range check and are read.
/// This is the kernel's behaviour (an out-of-bounds read on hardware too); A and D stay in
/// bounds.
#[test]
fn flatmm_reads_sa_past_the_allocation() {
    let d = dir();
    let p = load_peer(&d, PeerFamily::Flatmm).unwrap();
    let problem = PeerProblem::generate(200, 256, 512, 17);
    let mem = DeviceMemory::new();
    let l = prepare(&mem, &p, &problem, Padding::Exact).unwrap();
    let e = launch(&p.code_object, p.kernel(), &l.config, &mem, &value_checks()).unwrap_err();
    let LaunchError::Memory { text, addr, space, .. } = &e else { panic!("expected a memcheck finding, got {e}") };
    assert_eq!(*space, "buffer", "{e}");
    assert!(text.starts_with("buffer_load_dword "), "{e}");
    let (sa, sa_len) = l.sa;
    let end = sa + sa_len;
    assert!(*addr >= end && *addr < end + 56 * 4, "finding at {addr:#x}, SA ends at {end:#x}: {e}");
}

#[test]
fn mfma_hazard_finding_in_every_peer() {
    for p in peers() {
        let problem = PeerProblem::generate(p.family.tile_m(), p.family.tile_n(), 128, 19);
        let mem = DeviceMemory::new();
        let l = prepare(&mem, &p, &problem, Padding::WholeTiles).unwrap();
        let e = launch(&p.code_object, p.kernel(), &l.config, &mem, &Checks::all()).unwrap_err();
        let LaunchError::Check { check, detail, text, .. } = &e else { panic!("{}: expected an mfma-hazard finding, got {e}", p.symbol) };
        assert_eq!(*check, "mfma-hazard", "{e}");
        assert!(text.starts_with("v_pk_fma_f32") || text.starts_with("v_fmac_f32"), "{e}");
        assert!(detail.contains("4-pass MFMA writes (read-after-write)") && detail.contains("after 2 wait state(s); gfx942 requires 7"), "{e}");
        println!("{}: {e}", p.symbol);
    }
}

#[test]
fn measured_rows_are_parsed() {
    let rows = measured_rows(&dir()).unwrap();
    assert_eq!(rows.len(), 47);
    assert_eq!(
        rows[0],
        MeasuredRow { kernel: "_ZN5aiter42fp8gemm_bf16_blockscale_BpreShuffle_48x128E".into(), m: 1664, n: 768, k: 7168, us: 32.0867, tflops: 570.98 }
    );
    for r in &rows {
        let tflops = 2.0 * f64::from(r.m) * f64::from(r.n) * f64::from(r.k) / (r.us * 1e-6) / 1e12;
        assert!((tflops - r.tflops).abs() <= r.tflops * 1e-3, "{r:?}: 2MNK/t = {tflops}");
        assert!(matches!(r.family(), Some(PeerFamily::BpreShuffle { .. })), "{r:?}");
        assert!(r.n.is_multiple_of(128) && r.k.is_multiple_of(128), "{r:?}");
    }
}

#[test]
fn peers_load_with_their_contracts() {
    let ps = peers();
    assert_eq!(ps.len(), 7);
    for p in &ps {
        let k = p.kernel();
        let want = if p.family == PeerFamily::Flatmm { 112 } else { 256 };
        assert_eq!(k.meta.kernarg_segment_size, want, "{}", p.symbol);
        assert_eq!(k.meta.group_segment_fixed_size, 65536, "{}", p.symbol);
        assert_eq!(k.meta.wavefront_size, 64, "{}", p.symbol);
        assert_eq!(p.code_object.arch(), "gfx942", "{}", p.symbol);
    }
}

#[test]
fn bad_problems_are_typed_errors() {
    let d = dir();
    let p = load_peer(&d, PeerFamily::BpreShuffle { tm: 32 }).unwrap();
    let mem = DeviceMemory::new();
    let e = prepare(&mem, &p, &PeerProblem::generate(8, 100, 128, 1), Padding::Exact).unwrap_err();
    assert!(matches!(e, PeerError::Shape { arg: "n", value: 100, .. }), "{e}");
    let e = prepare(&mem, &p, &PeerProblem::generate(8, 128, 100, 1), Padding::Exact).unwrap_err();
    assert!(matches!(e, PeerError::Shape { arg: "k", value: 100, .. }), "{e}");
    let e = prepare(&mem, &p, &PeerProblem::generate(0, 128, 128, 1), Padding::Exact).unwrap_err();
    assert!(matches!(e, PeerError::Shape { arg: "m", .. }), "{e}");
    let mut q = PeerProblem::generate(8, 128, 384, 1);
    q.ks = 2;
    assert!(matches!(prepare(&mem, &p, &q, Padding::Exact).unwrap_err(), PeerError::Shape { arg: "ks", value: 2, .. }));
    let mut q = PeerProblem::generate(8, 128, 128, 1);
    q.a.pop();
    assert!(matches!(prepare(&mem, &p, &q, Padding::Exact).unwrap_err(), PeerError::Length { arg: "a", .. }));
    let f = load_peer(&d, PeerFamily::Flatmm).unwrap();
    let e = prepare(&mem, &f, &PeerProblem::generate(8, 128, 128, 1), Padding::Exact).unwrap_err();
    assert!(matches!(e, PeerError::Shape { arg: "n", value: 128, .. }), "{e}");
    let mut q = PeerProblem::generate(8, 256, 128, 1);
    q.bias[3] = 1.0;
    assert!(matches!(prepare(&mem, &f, &q, Padding::Exact).unwrap_err(), PeerError::Shape { arg: "bias", .. }));
    assert_eq!(mem.bytes_live(), 0, "a refused problem allocates nothing");
}

/// The measured shapes at full size (M up to 32768): minutes of emulation, so not in the
/// default suite. Checks every output element-wise like the small shapes but samples the
/// reference (rows 0, M/2 and M − 1) to keep the f64 product affordable.
#[test]
#[ignore = "full-size measured shapes: many minutes on 2 cores"]
fn measured_shapes_are_correct() {
    let d = dir();
    for r in measured_rows(&d).unwrap().into_iter().step_by(8) {
        let p = load_peer(&d, r.family().unwrap()).unwrap();
        let problem = PeerProblem::generate(r.m, r.n, r.k, 23);
        let mem = DeviceMemory::new();
        let l = prepare(&mem, &p, &problem, Padding::WholeTiles).unwrap();
        launch(&p.code_object, p.kernel(), &l.config, &mem, &value_checks()).unwrap_or_else(|e| panic!("{e}"));
        let c = l.read_c(&mem).unwrap();
        for row in [0, r.m / 2, r.m - 1] {
            let one = PeerProblem {
                m: 1,
                a: problem.a[(row * r.k) as usize..((row + 1) * r.k) as usize].to_vec(),
                sa: problem.sa[(row * r.k / 128) as usize..((row + 1) * r.k / 128) as usize].to_vec(),
                ..problem.clone()
            };
            let exact = reference_f64(&one).unwrap();
            let got = &c[(row * r.n) as usize..((row + 1) * r.n) as usize];
            let diff = calc_diff(got, &exact).unwrap();
            println!("{} {}x{}x{} row {row}: calc_diff {diff:.3e}", r.kernel, r.m, r.n, r.k);
            assert!(diff < 1e-5, "{r:?} row {row}: calc_diff {diff:e}");
        }
        l.free(&mem).unwrap();
    }
}

#[path = "common/objdump.rs"]
mod objdump;

/// AMD's peer code objects (`$FP8GEMM_PEERS_DIR`, see `amdgpu_emu::peers`) decode and print
/// exactly as llvm-objdump prints them.
#[test]
fn peer_code_objects_match_llvm_objdump() {
    let dir = amdgpu_emu::peers::peers_dir().unwrap_or_else(|e| panic!("{e}"));
    let mut total = 0;
    for f in amdgpu_emu::peers::PeerFamily::all() {
        total += objdump::compare(&dir.join(f.file_name()));
    }
    assert!(total > 5000, "only {total} instructions in the seven peers");
}
