//! The shipped kernels (`add_one_f32` and the dense FP8 GEMMs of the code object the `fp8gemm`
//! crate embeds; a dev-dependency, so it is always built) run clean under every checking mode
//! ([`Checks::all`]), and their counters are what the kernels' structure implies.

use amdgpu_emu::exec::counters::Kind;
use amdgpu_emu::exec::{Checks, LaunchConfig, LaunchReport, launch};
use amdgpu_emu::loader::CodeObject;
use amdgpu_emu::memory::DeviceMemory;
use amdgpu_emu::timing::bound as cost;

mod common;
use common::{dense_launch, shipped};

#[test]
fn add_one_f32_is_clean_and_moves_8n_bytes() {
    let co = shipped();
    let k = co.kernel("add_one_f32").expect("add_one_f32");
    let mem = DeviceMemory::new();
    let n = 1000u32;
    let input: Vec<u8> = (0..n).flat_map(|i| (i as f32 * 0.25).to_le_bytes()).collect();
    let x = mem.alloc(u64::from(n) * 4).unwrap();
    mem.write(x, &input).unwrap();
    let y = mem.alloc(u64::from(n) * 4).unwrap();
    let mut args = vec![0u8; k.meta.kernarg_segment_size as usize];
    args[0..8].copy_from_slice(&x.to_le_bytes());
    args[8..16].copy_from_slice(&y.to_le_bytes());
    args[16..20].copy_from_slice(&n.to_le_bytes());
    let cfg = LaunchConfig { grid: [n.div_ceil(256), 1, 1], block: [256, 1, 1], dynamic_lds_bytes: 0, kernarg: args };
    let r = launch(&co, k, &cfg, &mem, &Checks::all()).unwrap_or_else(|e| panic!("{e}"));
    // One f32 read and one written per element; the 24 surplus work-items touch nothing.
    assert_eq!(r.counters.global_read_bytes, 4 * u64::from(n));
    assert_eq!(r.counters.global_write_bytes, 4 * u64::from(n));
    // Each 4000-byte buffer starts 4 KiB aligned: 32 lines of 128 bytes.
    assert_eq!(r.counters.global_footprint_bytes, 2 * 32 * 128);
    assert_eq!(r.counters.count(Kind::VmemLoad), r.waves);
    assert_eq!(r.counters.count(Kind::VmemStore), r.waves);
    assert_eq!(r.counters.count(Kind::Mfma), 0);
    assert_eq!(r.counters.kinds.iter().sum::<u64>(), r.instructions);
    let mut out = vec![0u8; n as usize * 4];
    mem.read(y, &mut out).unwrap();
    for i in 0..n as usize {
        let got = f32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(got, i as f32 * 0.25 + 1.0);
    }
}

/// Runs a dense GEMM kernel with `checks`; returns the report.
fn gemm(co: &CodeObject, name: &str, bm: u32, bn: u32, (m, n, k): (u32, u32, u32), checks: &Checks) -> LaunchReport {
    let kern = co.kernel(name).unwrap();
    let mem = DeviceMemory::new();
    let fill = |len: u32, seed: u32| -> Vec<u8> { (0..len).map(|i| (0x30 + (i.wrapping_mul(2654435761).wrapping_add(seed) >> 27)) as u8).collect() };
    let a = fill(m * k, 1);
    let b = fill(n * k, 2);
    let kb = k.div_ceil(128);
    let sfa = vec![1.0f32; (m * kb) as usize];
    let sfb = vec![0.5f32; (n.div_ceil(128) * kb) as usize];
    let (cfg, _) = dense_launch(co, &mem, name, (bm, bn), (m, n, k), &a, &b, &sfa, &sfb);
    launch(co, kern, &cfg, &mem, checks).unwrap_or_else(|e| panic!("{name} {m}x{n}x{k}: {e}"))
}

#[test]
fn dense_gemm_kernels_are_clean_under_every_check() {
    let co = shipped();
    for (name, bm, bn) in [("fp8_gemm_nt_bm64_bn64", 64, 64), ("fp8_gemm_nt_bm64_bn128", 64, 128), ("fp8_gemm_nt_bm128_bn128", 128, 128)] {
        if co.kernel(name).is_none() {
            continue;
        }
        // Full tiles and ragged edges.
        for shape in [(bm, bn, 256), (100, 72, 384), (130, 132, 128)] {
            let checked = gemm(&co, name, bm, bn, shape, &Checks::all());
            let plain = gemm(&co, name, bm, bn, shape, &Checks::default());
            // The checks observe; they do not change what runs.
            assert_eq!(checked, plain, "{name} {shape:?}");
            let c = &checked.counters;
            assert_eq!(c.kinds.iter().sum::<u64>(), checked.instructions);
            assert_eq!(c.count(Kind::Mfma), checked.count(amdgpu_emu::exec::Class::Mfma));
            assert!(c.lds_cycles > 0 && c.global_read_bytes > 0);
            // Every output element is written exactly once as bf16.
            assert_eq!(c.global_write_bytes, u64::from(shape.0 * shape.1) * 2, "{name} {shape:?}");
            if shape == (bm, bn, 256) {
                // One tile: the footprint is A, B, D and the scales, each in whole 128 B lines.
                let lines = |b: u32| u64::from(b.div_ceil(128) * 128);
                let (m, n, k) = shape;
                let want = lines(m * k) + lines(n * k) + lines(m * 2 * 4) + lines(n.div_ceil(128) * 2 * 4) + lines(m * n * 2);
                assert_eq!(c.global_footprint_bytes, want, "{name}");
            }
            let e = cost::estimate(&checked, &checked.resources, checked.grid);
            assert!(e.seconds > 0.0 && e.tflops > 0.0);
        }
    }
}

/// One full-tile launch's hottest loop is the K loop: it holds MFMAs.
#[test]
fn dense_gemm_steady_state_is_the_k_loop() {
    let co = shipped();
    let r = gemm(&co, "fp8_gemm_nt_bm64_bn64", 64, 64, (64, 64, 1024), &Checks::default());
    eprintln!("{r}");
    let s = r.steady.clone().expect("the kernel loops over K");
    assert!(s.mfma > 0 && s.instructions > s.mfma, "{r}");
    assert!(s.start_pc < s.end_pc);
    let text = r.to_string();
    assert!(text.contains("steady state") && text.contains("bank-conflict cycles"), "{text}");
}

/// Cost of the checking modes: a 512×512×512 GEMM on one thread with the default checks and with
/// every mode. Run with `cargo test --release -p amdgpu-emu --test checks_shipped -- --ignored
/// --nocapture`.
#[test]
#[ignore = "timing; run explicitly in release mode"]
fn checks_slowdown_512_cubed() {
    let co = shipped();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    for (name, bm, bn) in [("fp8_gemm_nt_bm64_bn64", 64, 64), ("fp8_gemm_nt_bm64_bn128", 64, 128), ("fp8_gemm_nt_bm128_bn128", 128, 128)] {
        // Best of 5 (the machine is shared).
        let time = |checks: &Checks| {
            let mut best = (f64::MAX, LaunchReport::default());
            for _ in 0..5 {
                let t = std::time::Instant::now();
                let r = pool.install(|| gemm(&co, name, bm, bn, (512, 512, 512), checks));
                let dt = t.elapsed().as_secs_f64();
                if dt < best.0 {
                    best = (dt, r);
                }
            }
            best
        };
        let (plain, r) = time(&Checks::default());
        let (all, _) = time(&Checks::all());
        println!("{name} 512^3 one thread: default checks {plain:.3} s, all checks {all:.3} s ({:.2}x)", all / plain);
        println!("{r}\n{}", cost::estimate(&r, &r.resources, r.grid));
    }
}

/// Counters and modelled MI300X time of each dense kernel on the README's 512×2112×1024 shape.
/// Run with `cargo test --release -p amdgpu-emu --test checks_shipped -- --ignored --nocapture`.
#[test]
#[ignore = "report; run explicitly"]
fn dense_counters_512x2112x1024() {
    let co = shipped();
    for (name, bm, bn) in [("fp8_gemm_nt_bm64_bn64", 64, 64), ("fp8_gemm_nt_bm64_bn128", 64, 128), ("fp8_gemm_nt_bm128_bn128", 128, 128)] {
        let r = gemm(&co, name, bm, bn, (512, 2112, 1024), &Checks::all());
        let mfma = r.counters.count(Kind::Mfma) as f64;
        println!(
            "{r}\n  LDS bank-conflict cycles per MFMA: {:.3}\n{}\n",
            r.counters.lds_conflict_cycles as f64 / mfma,
            cost::estimate(&r, &r.resources, r.grid)
        );
    }
}
