//! gfx950 end to end: LLVM-compiled kernels (`tests/data/gfx950.hsaco`, built from
//! `tests/data/gfx950.ll` by the pinned llc for `--mcpu=gfx950`) run through `exec::launch`
//! with every check on, against CPU computations element by element. They exercise what LLVM
//! emits for the CDNA4 intrinsics: `v_mfma_scale_f32_*_f8f6f4` (LLVM emits the scaled form even
//! at scale 1) with its hazard padding, `ds_read_b64_tr_b{8,16}`, `global_load_lds_dwordx4`,
//! `v_cvt_scalef32_pk_*` and more than 64 KiB of LDS.

use std::path::Path;

use amdgpu_emu::exec::{Checks, LaunchConfig, LaunchError, launch};
use amdgpu_emu::loader::{CodeObject, Kernel, Target};
use amdgpu_emu::memory::DeviceMemory;

#[path = "common/f8f6f4.rs"]
mod f8f6f4;
use f8f6f4::{codes, d_pos, pack_lanes};

fn fixture() -> CodeObject {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gfx950.hsaco");
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let co = CodeObject::parse(&bytes).expect("parse gfx950.hsaco");
    assert_eq!(co.target(), Target::Gfx950);
    co
}

fn kernel<'a>(co: &'a CodeObject, name: &str) -> &'a Kernel {
    co.kernels().iter().find(|k| k.name == name).unwrap_or_else(|| panic!("kernel {name} missing from gfx950.hsaco"))
}

/// The kernarg segment: explicit arguments at their offsets (the kernels read no hidden ones).
fn kernarg(k: &Kernel, explicit: &[&[u8]]) -> Vec<u8> {
    let mut ka = vec![0u8; k.meta.kernarg_segment_size as usize];
    let args: Vec<_> = k.meta.args.iter().filter(|a| !a.value_kind.starts_with("hidden_")).collect();
    assert_eq!(args.len(), explicit.len(), "{}: explicit argument count", k.name);
    for (a, v) in args.iter().zip(explicit) {
        ka[a.offset as usize..a.offset as usize + v.len()].copy_from_slice(v);
    }
    ka
}

fn upload(mem: &DeviceMemory, bytes: &[u8]) -> u64 {
    let p = mem.alloc(bytes.len() as u64).expect("alloc");
    mem.write(p, bytes).expect("write");
    p
}

fn download(mem: &DeviceMemory, p: u64, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    mem.read(p, &mut b).expect("read");
    b
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn run(co: &CodeObject, name: &str, args: &[&[u8]], mem: &DeviceMemory, dynamic_lds: u32) -> Result<(), Box<LaunchError>> {
    let k = kernel(co, name);
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [64, 1, 1], dynamic_lds_bytes: dynamic_lds, kernarg: kernarg(k, args) };
    launch(co, k, &cfg, mem, &Checks::all()).map(|_| ()).map_err(Box::new)
}

fn lanes_bytes(l: &[[u32; 8]; 64], regs: usize) -> Vec<u8> {
    l.iter().flat_map(|lane| lane[..regs].iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<_>>()).collect()
}

/// One f8f6f4 MFMA kernel: D = A·B (C = 0) for formats (fa, fb), checked element-wise.
fn check_mfma(co: &CodeObject, name: &str, m: usize, fa: u32, fb: u32, scales: Option<(u32, u32)>, factor: f64) {
    let kdim = 2048 / m;
    let (ca, cb) = (codes(fa), codes(fb));
    let ai = |i: usize, k: usize| (i * 5 + k * 3 + 1) % ca.len();
    let bi = |k: usize, j: usize| (k * 7 + j * 2) % cb.len();
    let regs = |f: u32| [8usize, 8, 6, 6, 4][f as usize];
    let mem = DeviceMemory::new();
    let a = upload(&mem, &lanes_bytes(&pack_lanes(fa, m, &|i, k| ca[ai(i, k)].1), regs(fa)));
    let b = upload(&mem, &lanes_bytes(&pack_lanes(fb, m, &|j, k| cb[bi(k, j)].1), regs(fb)));
    let nreg = m * m / 64;
    let out = mem.alloc((64 * nreg * 4) as u64).unwrap();
    let (o, pa, pb) = (out.to_le_bytes(), a.to_le_bytes(), b.to_le_bytes());
    let s = scales.map(|(x, y)| (x.to_le_bytes(), y.to_le_bytes()));
    let mut args: Vec<&[u8]> = vec![&o, &pa, &pb];
    if let Some((x, y)) = &s {
        args.push(x);
        args.push(y);
    }
    run(co, name, &args, &mem, 0).unwrap_or_else(|e| panic!("{name}: {e}"));
    let d = words(&download(&mem, out, 64 * nreg * 4));
    for i in 0..m {
        for j in 0..m {
            let want = factor * (0..kdim).map(|k| ca[ai(i, k)].0 * cb[bi(k, j)].0).sum::<f64>();
            let (r, l) = d_pos(m, i, j);
            assert_eq!(f64::from(f32::from_bits(d[l * nreg + r])), want, "{name} D[{i}][{j}]");
        }
    }
}

#[test]
fn llvm_compiled_f8f6f4_mfmas() {
    let co = fixture();
    // FP8 × BF8 with block scales 2^(129−127) and 2^(126−127): ×2.
    check_mfma(&co, "mfma16", 16, 0, 1, Some((129, 126)), 2.0);
    check_mfma(&co, "mfma16", 16, 0, 1, Some((127, 127)), 1.0);
    check_mfma(&co, "mfma16_fp4", 16, 4, 4, None, 1.0);
    check_mfma(&co, "mfma32", 32, 0, 0, None, 1.0);
}

#[test]
fn llvm_compiled_transposing_lds_reads() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let input: Vec<u8> = (0..2048u32).map(|i| (i * 13 % 251) as u8).collect();
    let inp = upload(&mem, &input);
    let (o16, o8) = (mem.alloc(512).unwrap(), mem.alloc(512).unwrap());
    let (a, b, c) = (o16.to_le_bytes(), o8.to_le_bytes(), inp.to_le_bytes());
    run(&co, "tr", &[&a, &b, &c], &mem, 0).unwrap_or_else(|e| panic!("{e}"));
    // Lane l reads 8 bytes at LDS 8·l (= input bytes 8l..8l+8). Per 16-lane group g, the group's
    // 128 bytes at 128·g are a row-major 4×16 matrix of u16 (tr16) / 8×16 matrix of bytes (tr8);
    // lane j of the group receives column j.
    let (r16, r8) = (download(&mem, o16, 512), download(&mem, o8, 512));
    for l in 0..64 {
        let (g, j) = (l / 16, l % 16);
        for r in 0..4 {
            let e = 128 * g + 2 * (16 * r + j);
            assert_eq!(r16[8 * l + 2 * r..8 * l + 2 * r + 2], input[e..e + 2], "tr16 lane {l} element {r}");
        }
        for r in 0..8 {
            assert_eq!(r8[8 * l + r], input[128 * g + 16 * r + j], "tr8 lane {l} element {r}");
        }
    }
}

#[test]
fn llvm_compiled_lds_dma_and_scaled_conversions() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let input: Vec<u8> = (0..256u32).flat_map(|i| (0x1000 + i).to_le_bytes()).collect();
    let inp = upload(&mem, &input);
    let out = mem.alloc(1024).unwrap();
    let (a, b) = (out.to_le_bytes(), inp.to_le_bytes());
    run(&co, "dma", &[&a, &b], &mem, 0).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(download(&mem, out, 1024), input, "global_load_lds_dwordx4 lands lane l's 16 bytes at LDS 16·l");

    // x / 4 → E4M3FN, and back × 4: values on the FP8 grid round-trip exactly.
    let xs: Vec<f32> = (0..128).map(|i| [4.0f32, -6.0, 0.5, 1792.0, -0.0625, 0.0][i % 6]).collect();
    let x = upload(&mem, &xs.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>());
    let (pk, back) = (mem.alloc(256).unwrap(), mem.alloc(512).unwrap());
    let (p0, p1, p2, p3) = (pk.to_le_bytes(), back.to_le_bytes(), x.to_le_bytes(), 4.0f32.to_le_bytes());
    run(&co, "cvt", &[&p0, &p1, &p2, &p3], &mem, 0).unwrap_or_else(|e| panic!("{e}"));
    let fp8 = |v: f32| -> u32 {
        match v {
            1.0 => 0x38,
            -1.5 => 0xBC,
            0.125 => 0x20,
            448.0 => 0x7E,
            -0.015625 => 0x88,
            _ => 0x00,
        }
    };
    let pk = words(&download(&mem, pk, 256));
    let back = words(&download(&mem, back, 512));
    for l in 0..64 {
        let (a, b) = (xs[2 * l], xs[2 * l + 1]);
        assert_eq!(pk[l], fp8(a / 4.0) | fp8(b / 4.0) << 8, "lane {l} ({a}, {b})");
        assert_eq!([f32::from_bits(back[2 * l]), f32::from_bits(back[2 * l + 1])], [a, b], "lane {l} round trip");
    }
}

#[test]
fn gfx950_workgroups_get_160_kib_of_lds() {
    let co = fixture();
    let k = kernel(&co, "big_lds");
    assert_eq!(k.meta.group_segment_fixed_size, 102_400, "100 KiB of static LDS");
    let mem = DeviceMemory::new();
    let out = mem.alloc(256).unwrap();
    let o = out.to_le_bytes();
    run(&co, "big_lds", &[&o], &mem, 0).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(words(&download(&mem, out, 256)), (1..=64).collect::<Vec<u32>>());
    // 100 KiB + 60 KiB dynamic = 160 KiB fits; one byte more does not.
    run(&co, "big_lds", &[&o], &mem, 60 * 1024).unwrap_or_else(|e| panic!("{e}"));
    let e = run(&co, "big_lds", &[&o], &mem, 60 * 1024 + 1).unwrap_err();
    assert!(matches!(*e, LaunchError::LdsTooLarge { max: 163_840, .. }), "{e}");
}
