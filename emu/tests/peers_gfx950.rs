//! The gfx950 builds of AMD's BpreShuffle FP8 GEMMs (`$FP8GEMM_PEERS_DIR/gfx950`,
//! `amdgpu_emu::peers_gfx950`) on the emulator. Their `.text` equals the gfx942 builds'; only the
//! ELF `e_flags` machine byte (0x4F) differs, and with it the FP8 encoding the MFMAs read: OCP
//! E4M3FN. Three checks per kernel, with E4M3FN operands:
//! * against the exact f64 product decoded as E4M3FN, element-wise (bf16 truncation of an f32
//!   accumulation: within one bf16 ulp below the exact value plus the f32 accumulation slack);
//! * bit for bit against the gfx942 build run on the same values encoded as E4M3FNUZ (same
//!   instructions, same arithmetic: any difference is the target selection's);
//! * bit for bit against the gfx942 build run on the same *bytes*, times 4 (each FNUZ operand
//!   decodes to half the E4M3FN value, bias 8 vs 7; scaling by 4 is exact) — so the gfx950 object
//!   really decodes E4M3FN.
//!
//! Every checking mode but mfma-hazard is on (see `peers.rs` for that finding, which the
//! identical code has here too); allocations are exact.

use amdgpu_emu::exec::{Checks, launch};
use amdgpu_emu::loader::Target;
use amdgpu_emu::memory::DeviceMemory;
use amdgpu_emu::numerics::F8Kind;
use amdgpu_emu::peers::*;
use amdgpu_emu::peers_gfx950::*;

fn dir() -> std::path::PathBuf {
    peers_dir().unwrap_or_else(|e| panic!("gfx950 peer conformance needs the peer code objects: {e}"))
}

fn run(p: &PeerKernel, q: &PeerProblem) -> Vec<f32> {
    let mem = DeviceMemory::new();
    let l = prepare(&mem, p, q, Padding::Exact).unwrap_or_else(|e| panic!("{}: {e}", p.path.display()));
    launch(&p.code_object, p.kernel(), &l.config, &mem, &Checks { mfma_hazard: false, ..Checks::all() })
        .unwrap_or_else(|e| panic!("{} at {}x{}x{}: {e}", p.path.display(), q.m, q.n, q.k));
    let c = l.read_c(&mem).unwrap();
    l.free(&mem).unwrap();
    c
}

#[test]
fn gfx950_objects_select_gfx950_from_e_flags() {
    let d = dir();
    for tm in BPRESHUFFLE_TILES {
        let p = load_gfx950_peer(&d, tm).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.code_object.target(), Target::Gfx950, "{}", p.path.display());
        assert_eq!(p.code_object.arch(), "gfx950");
        assert!(p.code_object.target().fp8_ocp());
        let g942 = load_peer(&d, PeerFamily::BpreShuffle { tm }).unwrap();
        assert_eq!(g942.code_object.target(), Target::Gfx942);
        // Same kernel: same descriptor and code size.
        assert_eq!(p.kernel().code_size, g942.kernel().code_size);
        assert_eq!(p.kernel().meta.kernarg_segment_size, 256);
    }
    // These objects' e_flags are 0x54F (SRAMECC_ANY_V4 | XNACK_ANY_V4 | MACH 0x4F).
    assert_eq!(Target::from_e_flags(0x54f), Some(Target::Gfx950));
    assert_eq!(Target::from_e_flags(0x54c), Some(Target::Gfx942));
    assert_eq!(Target::from_e_flags(0x540), None);
}

#[test]
fn gfx950_kernels_read_e4m3fn_bit_for_bit() {
    let d = dir();
    for tm in BPRESHUFFLE_TILES {
        let p950 = load_gfx950_peer(&d, tm).unwrap();
        let p942 = load_peer(&d, PeerFamily::BpreShuffle { tm }).unwrap();
        for (i, (m, n, k)) in [(1, 128, 128), (tm - 3, 256, 256), (2 * tm + 5, 256, 384)].into_iter().enumerate() {
            let mut q = PeerProblem::generate(m, n, k, 40 + i as u64);
            q.bias = (0..n).map(|j| j as f32 * 0.5 - 30.0).collect();
            let shape = format!("gfx950 BpreShuffle_{tm}x128 at {m}x{n}x{k}");
            let c950 = run(&p950, &q);

            // 1. Against the exact product of the E4M3FN values.
            let exact = reference_f64_kind(&q, F8Kind::Fp8Ocp).unwrap();
            let abs = PeerProblem {
                a: q.a.iter().map(|&x| x & 0x7f).collect(),
                b: q.b.iter().map(|&x| x & 0x7f).collect(),
                bias: q.bias.iter().map(|x| x.abs()).collect(),
                ..q.clone()
            };
            let magnitude = reference_f64_kind(&abs, F8Kind::Fp8Ocp).unwrap();
            let eps = (48.0 + f64::from(k / 128)) * 2f64.powi(-24);
            for (idx, ((&got, &want), &mag)) in c950.iter().zip(&exact).zip(&magnitude).enumerate() {
                let at = format!("{shape}: C[{}][{}] = {got}, exact {want}", idx / n as usize, idx % n as usize);
                let slack = eps * mag;
                let ulp = want.abs() * 2f64.powi(-7);
                assert!(f64::from(got).abs() <= want.abs() + slack, "{at}: larger than exact");
                assert!(want.abs() - f64::from(got).abs() <= ulp + slack, "{at}: more than 1 bf16 ulp below exact");
                assert!(got == 0.0 || (got > 0.0) == (want > 0.0) || want.abs() <= slack, "{at}: sign");
            }
            let diff = calc_diff(&c950, &exact).unwrap();
            assert!(diff < 1e-5, "{shape}: calc_diff {diff:e}");

            // 2. The gfx942 build on the same values (E4M3FNUZ twins): bit-identical.
            let twin = PeerProblem {
                a: q.a.iter().map(|&x| e4m3fn_to_fnuz(x).expect("generated values have FNUZ twins")).collect(),
                b: q.b.iter().map(|&x| e4m3fn_to_fnuz(x).expect("generated values have FNUZ twins")).collect(),
                ..q.clone()
            };
            let c942 = run(&p942, &twin);
            for (idx, (a, b)) in c950.iter().zip(&c942).enumerate() {
                assert_eq!(a.to_bits(), b.to_bits(), "{shape}: C[{idx}] gfx950 {a} vs gfx942 on the FNUZ twins {b}");
            }

            // 3. The gfx942 build on the same bytes: a quarter of the value, exactly (bias 0).
            let q0 = PeerProblem { bias: vec![0.0; n as usize], ..q.clone() };
            let (c950_0, c942_same) = (run(&p950, &q0), run(&p942, &q0));
            for (idx, (a, b)) in c950_0.iter().zip(&c942_same).enumerate() {
                assert_eq!(a.to_bits(), (b * 4.0).to_bits(), "{shape}: C[{idx}] gfx950 {a} vs 4 x gfx942 on the same bytes {b}");
            }
            println!("{shape}: calc_diff {diff:.3e}; bit-identical to gfx942 on the FNUZ twins and to 4x gfx942 on the same bytes");
        }
    }
}
