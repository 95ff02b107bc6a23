//! End-to-end executor tests: real code objects (LLVM-compiled fixtures and the shipped
//! `add_one_f32`) run through `exec::launch` and are checked against CPU computations.

use std::path::Path;

use amdgpu_emu::exec::{Checks, Class, LaunchConfig, LaunchError, launch};
use amdgpu_emu::loader::{CodeObject, Kernel};
use amdgpu_emu::memory::DeviceMemory;

/// The gfx942 code object the `fp8gemm` crate embeds (a dev-dependency of this crate, so building
/// this test builds it).
fn shipped_gfx942() -> CodeObject {
    CodeObject::parse(fp8gemm::codeobj::GFX942).expect("the gfx942 code object embedded in fp8gemm does not load")
}

fn fixture() -> CodeObject {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/classes.hsaco");
    CodeObject::parse(&std::fs::read(p).expect("fixture")).expect("parse")
}

/// Builds the kernarg segment: explicit args in order from `explicit` (each written at its
/// `.offset`), hidden block count / group size / remainder filled in from the launch.
fn kernarg(k: &Kernel, explicit: &[&[u8]], grid: [u32; 3], block: [u32; 3]) -> Vec<u8> {
    let mut ka = vec![0u8; k.meta.kernarg_segment_size as usize];
    let mut i = 0;
    for a in &k.meta.args {
        let o = a.offset as usize;
        match a.value_kind.as_str() {
            "hidden_block_count_x" | "hidden_block_count_y" | "hidden_block_count_z" => {
                let d = (a.value_kind.as_bytes()[a.value_kind.len() - 1] - b'x') as usize;
                ka[o..o + 4].copy_from_slice(&grid[d].to_le_bytes());
            }
            "hidden_group_size_x" | "hidden_group_size_y" | "hidden_group_size_z" => {
                let d = (a.value_kind.as_bytes()[a.value_kind.len() - 1] - b'x') as usize;
                ka[o..o + 2].copy_from_slice(&(block[d] as u16).to_le_bytes());
            }
            k if k.starts_with("hidden_") => {}
            _ => {
                let v = explicit[i];
                ka[o..o + v.len()].copy_from_slice(v);
                i += 1;
            }
        }
    }
    assert_eq!(i, explicit.len(), "explicit argument count");
    ka
}

fn upload<T: Copy>(mem: &DeviceMemory, data: &[T]) -> u64 {
    let bytes = std::mem::size_of_val(data);
    // SAFETY: `data` is a slice of plain `Copy` values (u32/f32/u64 in these tests); viewing its
    // initialized memory as bytes is valid for `bytes` bytes.
    let raw = unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), bytes) };
    let p = mem.alloc(bytes as u64).expect("alloc");
    mem.write(p, raw).expect("write");
    p
}

fn download_u32(mem: &DeviceMemory, p: u64, n: usize) -> Vec<u32> {
    let mut b = vec![0u8; n * 4];
    mem.read(p, &mut b).expect("read");
    b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[allow(clippy::result_large_err)] // the executor's own error type, returned as is (cold path)
fn run(
    co: &CodeObject,
    name: &str,
    args: &[&[u8]],
    grid: [u32; 3],
    block: [u32; 3],
    mem: &DeviceMemory,
) -> Result<amdgpu_emu::exec::LaunchReport, LaunchError> {
    let k = co.kernel(name).unwrap_or_else(|| panic!("kernel {name}"));
    let cfg = LaunchConfig { grid, block, dynamic_lds_bytes: 0, kernarg: kernarg(k, args, grid, block) };
    launch(co, k, &cfg, mem, &Checks::default())
}

#[test]
#[allow(clippy::needless_range_loop)] // `t` is the lane number of the CPU model, not only an index into `got`
fn lds_barrier_four_waves() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let input: Vec<u32> = (0..256).map(|i| i * 3 + 7).collect();
    let inp = upload(&mem, &input);
    let out = mem.alloc(256 * 4).unwrap();
    let r = run(&co, "lds_barrier", &[&out.to_le_bytes(), &inp.to_le_bytes()], [1, 1, 1], [256, 1, 1], &mem).unwrap();
    assert_eq!(r.waves, 4);
    assert!(r.barriers >= 3, "three barriers released: {r:?}");
    let got = download_u32(&mem, out, 256);
    // CPU model of the kernel: b = in[255 - t]; c = b of lane t^1; LDS128 row t = (c, b, a, t);
    // w = row of t^1; sum = w0 + w3; atomic add of sum into lds[0] returns the old value.
    let a = |t: usize| input[t];
    let bv = |t: usize| a(255 - t);
    let c = |t: usize| bv(t ^ 1);
    let sum = |t: usize| c(t ^ 1).wrapping_add((t ^ 1) as u32);
    // lds[0] after the first barrier holds b-store? No: the i64 stores go to a different array;
    // lds[0] = in[0] before the atomics. Atomics apply in wave order, lanes in order.
    let mut acc = input[0];
    for t in 0..256 {
        let old = acc;
        acc = acc.wrapping_add(sum(t));
        assert_eq!(got[t], sum(t).wrapping_add(old), "lane {t}");
    }
}

#[test]
fn lds_barrier_sixteen_waves() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let input: Vec<u32> = (0..1024).map(|i| i * 7 + 1).collect();
    let inp = upload(&mem, &input);
    let out = mem.alloc(1024 * 4).unwrap();
    let r = run(&co, "lds_reverse_1024", &[&out.to_le_bytes(), &inp.to_le_bytes()], [1, 1, 1], [1024, 1, 1], &mem).unwrap();
    assert_eq!(r.waves, 16);
    let got = download_u32(&mem, out, 1024);
    for t in 0..1024 {
        assert_eq!(got[t], input[1023 - t], "work-item {t} reads what wave {} wrote", (1023 - t) / 64);
    }
}

#[test]
fn int_ops_match_cpu() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let n_items = 512usize;
    let input: Vec<u32> = (0..n_items as u32).map(|i| i.wrapping_mul(2654435761).rotate_left(7) ^ (i * 13)).collect();
    let inp = upload(&mem, &input);
    let out = mem.alloc((n_items * 4) as u64).unwrap();
    let (n, s) = (-37i32, 5u32);
    run(&co, "int_ops", &[&out.to_le_bytes(), &inp.to_le_bytes(), &n.to_le_bytes(), &s.to_le_bytes()], [2, 1, 1], [256, 1, 1], &mem).unwrap();
    let got = download_u32(&mem, out, n_items);
    for (i, &a) in input.iter().enumerate() {
        let b = a.wrapping_mul(s);
        let c = b / 7;
        let d = (a as i32).wrapping_div(n) as u32;
        let e = a >> s;
        let f = ((b as i32) >> 3) as u32;
        let g = e ^ f;
        let h = g.min(c);
        let k = (h as i32).max(d as i32) as u32;
        let pc = k.count_ones();
        let lz = k.leading_zeros();
        let tz = a.trailing_zeros();
        let br = a.reverse_bits();
        let fs = ((u64::from(a) << 32 | u64::from(b)) >> (s % 32)) as u32;
        let m4 = (pc + lz + tz) ^ br;
        let m4 = m4.wrapping_add(fs);
        let w4 = ((u64::from(a).wrapping_mul(1234567891011)) >> 17) as u32;
        let m5 = m4.wrapping_add(w4);
        let sel = if (a as i32) > 100 { m5 } else { b };
        assert_eq!(got[i], (sel >> 5) & 1023, "item {i} a={a:#x}");
    }
}

#[test]
fn lane_ops_match_cpu() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let input: Vec<u32> = (0..64).map(|i| 1000 + i * i).collect();
    let inp = upload(&mem, &input);
    let out = mem.alloc(64 * 4).unwrap();
    run(&co, "lane_ops", &[&out.to_le_bytes(), &inp.to_le_bytes()], [1, 1, 1], [64, 1, 1], &mem).unwrap();
    let got = download_u32(&mem, out, 64);
    for t in 0..64 {
        let want = input[0] + input[5] + input[t ^ 3] + t as u32;
        assert_eq!(got[t], want, "lane {t}");
    }
}

#[test]
fn loop_2d_matches_cpu_and_exec_masking() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let input: Vec<f32> = (0..1024).map(|i| (i as f32) * 0.25 - 3.0).collect();
    let inp = upload(&mem, &input);
    // block 48 x 4: the second wave of each row pair is partially masked (192 = 3 waves).
    let (bx, by, gy) = (48u32, 4u32, 3u32);
    let rows = (by + gy) as usize;
    let out = mem.alloc((rows * 64 * 4) as u64).unwrap();
    let n = 37i32;
    run(&co, "loop_2d", &[&out.to_le_bytes(), &inp.to_le_bytes(), &n.to_le_bytes()], [1, gy, 1], [bx, by, 1], &mem).unwrap();
    let got = download_u32(&mem, out, rows * 64);
    for gyi in 0..gy {
        for ty in 0..by {
            let row = ty + gyi;
            for tx in 0..bx {
                let mut acc = 0f32;
                for k in 0..n as u32 {
                    let idx = (k.wrapping_mul(row).wrapping_add(tx)) & 1023;
                    acc = input[idx as usize].mul_add(2.0, acc);
                }
                let o = (row * 64 + tx) as usize;
                assert_eq!(f32::from_bits(got[o]), acc, "row {row} tx {tx}");
            }
        }
    }
}

#[test]
fn buffer_ops_range_checked() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let input: Vec<u32> = (0..256).map(|i| i + 1).collect();
    let inp = upload(&mem, &input);
    let out = mem.alloc(64 * 4).unwrap();
    // Source V#: only 100 dwords in range (num_records = 400 bytes); destination: 64 dwords.
    let rsrc = |base: u64, bytes: u32| -> [u8; 16] {
        let mut r = [0u8; 16];
        r[0..8].copy_from_slice(&base.to_le_bytes());
        r[8..12].copy_from_slice(&bytes.to_le_bytes());
        r[12..16].copy_from_slice(&0x0002_0000u32.to_le_bytes());
        r
    };
    let (r1, r2) = (rsrc(inp, 400), rsrc(out, 256));
    let dummy = mem.alloc(8).unwrap();
    run(&co, "buffer_ops", &[&dummy.to_le_bytes(), &r1, &r2], [1, 1, 1], [64, 1, 1], &mem).unwrap();
    let got = download_u32(&mem, out, 64);
    let ld = |byte: u32| if byte + 4 <= 400 { input[(byte / 4) as usize] } else { 0 };
    for t in 0..64u32 {
        // v = 16-byte load at 16 t (dwords 4t..4t+3); w = dword load at 4 t + 16.
        let v0 = if 16 * t + 16 <= 400 { ld(16 * t) } else { 0 };
        let v3 = if 16 * t + 16 <= 400 { ld(16 * t + 12) } else { 0 };
        let w = ld(4 * t + 16);
        assert_eq!(got[t as usize], v0 + v3 + w, "lane {t}");
    }
}

#[test]
fn fp8_conversions_run() {
    let co = fixture();
    let mem = DeviceMemory::new();
    // E4M3FNUZ has bias 8: byte 0x40 = 2^0 = 1.0, 0x38 = 2^-1 = 0.5. E5M2FNUZ has bias 16:
    // 0x38 = 2^(14-16) = 0.25, 0x44 = 2^(17-16) = 2.0.
    let input: Vec<u32> = vec![0x4438_3840; 64];
    let inp = upload(&mem, &input);
    let out = mem.alloc(64 * 4).unwrap();
    run(&co, "fp8_cvt", &[&out.to_le_bytes(), &inp.to_le_bytes()], [1, 1, 1], [64, 1, 1], &mem).unwrap();
    let got = download_u32(&mem, out, 64);
    // f0 = fp8(byte 0) = 1.0, f2 = fp8(byte 2) = 0.5 → s = 1.5; pk bf8 of the high word
    // (0x38, 0x44) = (0.25, 2.0) → t = 2.25. In E4M3FNUZ 1.5 = 0x44 (2^0·1.5) and
    // 2.25 = 0x49 (2^1·1.125). r = pk(s, t) in the low half = 0x4944; r2 = pk(t, s) in the high
    // half = 0x4449.
    assert!(got.iter().all(|&g| g == 0x4449_4944), "{:#x}", got[0]);
}

#[test]
fn memcheck_reports_out_of_bounds_with_kernel_pc_lane_address() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let input: Vec<u32> = vec![1; 64];
    let inp = upload(&mem, &input);
    let out = mem.alloc(63 * 4).unwrap(); // one element short
    let e = run(&co, "lane_ops", &[&out.to_le_bytes(), &inp.to_le_bytes()], [1, 1, 1], [64, 1, 1], &mem).unwrap_err();
    let msg = e.to_string();
    assert!(e.is_memory_fault(), "{msg}");
    match e {
        LaunchError::Memory { kernel, lane, addr, len, .. } => {
            assert_eq!(kernel, "lane_ops");
            assert_eq!(lane, 63);
            assert_eq!(addr, out + 63 * 4);
            assert_eq!(len, 4);
        }
        other => panic!("{other}"),
    }
    assert!(msg.contains("lane 63") && msg.contains("pc 0x") && msg.contains("global_store_dword"), "{msg}");
}

#[test]
fn launch_validation() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let k = co.kernel("lds_barrier").unwrap();
    let ka = vec![0u8; k.meta.kernarg_segment_size as usize];
    let cfg = |grid, block, dynamic_lds_bytes, kernarg: Vec<u8>| LaunchConfig { grid, block, dynamic_lds_bytes, kernarg };
    let c = Checks::default();
    assert!(matches!(launch(&co, k, &cfg([1, 1, 1], [512, 1, 1], 0, ka.clone()), &mem, &c), Err(LaunchError::BlockTooLarge { volume: 512, max: 256, .. })));
    assert!(matches!(launch(&co, k, &cfg([0, 1, 1], [256, 1, 1], 0, ka.clone()), &mem, &c), Err(LaunchError::ZeroDim { what: "grid", dim: 0, .. })));
    assert!(matches!(launch(&co, k, &cfg([1, 1, 1], [256, 1, 1], 65536, ka.clone()), &mem, &c), Err(LaunchError::LdsTooLarge { .. })));
    assert!(matches!(launch(&co, k, &cfg([1, 1, 1], [256, 1, 1], 0, vec![0; 3]), &mem, &c), Err(LaunchError::KernargSize { got: 3, .. })));
    assert_eq!(mem.bytes_live(), 0, "nothing leaked by failed launches");
}

#[test]
fn shipped_add_one_f32_end_to_end() {
    let co = shipped_gfx942();
    assert_eq!(co.arch(), "gfx942");
    assert_eq!(co.code_object_version(), 5);
    let k = co.kernel("add_one_f32").expect("add_one_f32");
    let mem = DeviceMemory::new();
    let n = 1000u32;
    let input: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 17.25).collect();
    let x = upload(&mem, &input);
    let y = mem.alloc(u64::from(n) * 4).unwrap();
    // by-value struct: { x: *const f32, y: *mut f32, n: u32 } (offsets 0, 8, 16).
    let mut args = vec![0u8; k.meta.kernarg_segment_size as usize];
    args[0..8].copy_from_slice(&x.to_le_bytes());
    args[8..16].copy_from_slice(&y.to_le_bytes());
    args[16..20].copy_from_slice(&n.to_le_bytes());
    let grid = [n.div_ceil(256), 1, 1];
    let cfg = LaunchConfig { grid, block: [256, 1, 1], dynamic_lds_bytes: 0, kernarg: args.clone() };
    let r = launch(&co, k, &cfg, &mem, &Checks::default()).unwrap();
    assert!(r.count(Class::Vmem) > 0 && r.count(Class::Valu) > 0);
    let got = download_u32(&mem, y, n as usize);
    for i in 0..n as usize {
        assert_eq!(f32::from_bits(got[i]), input[i] + 1.0, "element {i}");
    }
    // Out of bounds: claim more elements than the buffers hold.
    args[16..20].copy_from_slice(&(n + 5).to_le_bytes());
    let cfg = LaunchConfig { kernarg: args, ..cfg };
    let e = launch(&co, k, &cfg, &mem, &Checks::default()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("add_one_f32") && msg.contains("lane") && msg.contains(&format!("{:#x}", x + u64::from(n) * 4)), "{msg}");
}

fn f16_bits_rne(x: f32) -> u16 {
    // f32 → f16 for the values this test produces (normal range, integers up to 2048).
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    if x == 0.0 {
        return sign;
    }
    let e = ((b >> 23) & 0xff) as i32 - 127 + 15;
    assert!((1..31).contains(&e), "test value {x} outside the f16 normal range");
    let m = b & 0x7f_ffff;
    let mut r = ((e as u32) << 10) | (m >> 13);
    let rem = m & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

fn f16_value(h: u16) -> f32 {
    let e = i32::from((h >> 10) & 0x1f);
    let m = f32::from(h & 0x3ff);
    let v = if e == 0 { m * 2f32.powi(-24) } else { (1.0 + m / 1024.0) * 2f32.powi(e - 15) };
    if h & 0x8000 != 0 { -v } else { v }
}

fn bf16_rne(x: f32) -> f32 {
    let b = x.to_bits();
    let r = b.wrapping_add(0x7fff + ((b >> 16) & 1)) & 0xffff_0000;
    f32::from_bits(r)
}

#[test]
fn float_ops_match_cpu() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let input: Vec<f32> = (0..64).map(|i| 0.6 + i as f32 * 0.37).collect();
    let inp = upload(&mem, &input);
    let out = mem.alloc(64 * 4).unwrap();
    let x = 0.75f32;
    run(&co, "float_ops", &[&out.to_le_bytes(), &inp.to_le_bytes(), &x.to_le_bytes()], [1, 1, 1], [64, 1, 1], &mem).unwrap();
    let got = download_u32(&mem, out, 64);
    for (t, &a) in input.iter().enumerate() {
        let b = a * x;
        let c = a.mul_add(b, 1.0);
        let d = c / a;
        let e = d.sqrt();
        let f = e.exp2();
        let g = f.floor();
        let h = g.max(0.5);
        let i = h as i32;
        let j = i as f32;
        let k = f16_value(f16_bits_rne(j));
        let l = f16_value(f16_bits_rne(k + 1.0));
        let bc = bf16_rne(l);
        let r = if bc < 3.0 { bc } else { b };
        let v = (r as u32) as f32;
        assert_eq!(f32::from_bits(got[t]), v, "lane {t}: a = {a}");
    }
}

#[test]
fn kernarg_over_read_is_a_memcheck_error() {
    // add_one_f32 reads `n` at kernarg offset 16; pretend the segment is only 16 bytes long.
    let co = shipped_gfx942();
    let mut k = co.kernel("add_one_f32").unwrap().clone();
    k.meta.kernarg_segment_size = 16;
    let mem = DeviceMemory::new();
    let buf = mem.alloc(1024).unwrap();
    let mut ka = buf.to_le_bytes().to_vec();
    ka.extend_from_slice(&buf.to_le_bytes());
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [64, 1, 1], dynamic_lds_bytes: 0, kernarg: ka };
    let e = launch(&co, &k, &cfg, &mem, &Checks::default()).unwrap_err();
    match &e {
        LaunchError::Memory { kernel, space, len, detail, .. } => {
            assert_eq!(kernel, "add_one_f32");
            assert_eq!(*space, "scalar");
            assert_eq!(*len, 4);
            assert!(detail.contains("offset 16") && detail.contains("16 bytes"), "{detail}");
        }
        other => panic!("{other}"),
    }
    assert_eq!(mem.bytes_live(), 1024, "kernarg and dispatch allocations freed after the failure");
}

#[test]
fn dpp_lane_permutations_match_cpu() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let a: Vec<u32> = (0..64u32).map(|t| t.wrapping_mul(2_654_435_761) >> 3).collect();
    let inp = upload(&mem, &a);
    let out = mem.alloc(128 * 4).unwrap();
    run(&co, "dpp_ops", &[&out.to_le_bytes(), &inp.to_le_bytes()], [1, 1, 1], [64, 1, 1], &mem).unwrap();
    let got = download_u32(&mem, out, 128);
    for t in 0..64usize {
        let (row, r) = (t & !15, t & 15);
        let q1 = a[(t & !3) | (3 - (t & 3))]; // quad_perm:[3,2,1,0], bound_ctrl
        let r1 = if r >= 1 { a[t - 1] } else { a[t] }; // row_shr:1, old = a
        let r2 = if r + 2 < 16 { a[t + 2] } else { 0 }; // row_shl:2, bound_ctrl → 0
        let r3 = a[row | ((r + 12) & 15)]; // row_ror:4
        let w1 = if t > 0 { a[t - 1] } else { 7 }; // wave_shr:1, old = 7
        let m1 = a[row | (15 - r)]; // row_mirror
        let m2 = a[(t & !7) | (7 - (t & 7))]; // row_half_mirror
        let b1 = if (t / 16) % 2 == 1 { a[row - 1] } else { a[t] }; // row_bcast:15, rows 1 and 3
        let b2 = if t >= 32 { a[31] } else { a[t] }; // row_bcast:31, rows 2 and 3
        let bank_on = ((t >> 2) & 3) % 2 == 0; // bank_mask 0b0101
        let k1 = if bank_on && r >= 1 { a[t - 1] } else { a[t] };
        let s = q1.wrapping_add(r1) ^ r2;
        let s = s.wrapping_add(r3) ^ w1;
        let s = s.wrapping_add(m1) ^ m2;
        let s = s.wrapping_add(b1) ^ b2;
        let s = s.wrapping_add(k1);
        assert_eq!(got[t], s, "lane {t}");
        let f = |x: u32| f32::from_bits(x);
        assert_eq!(f(got[64 + t]), f(a[t ^ 1]) + f(a[t]), "lane {t} (quad_perm:[1,0,3,2] f32)");
    }
}

fn f16_bits_rne_any(x: f32) -> u16 {
    // Values here are integers up to 16129: normal f16 range.
    f16_bits_rne(x)
}

#[test]
#[allow(clippy::needless_range_loop)] // `t` is the lane number of the CPU model, not only an index into `a`
fn wide_ops_64bit_f64_packed_f16_swizzle_reduce_atomics() {
    let co = fixture();
    let mem = DeviceMemory::new();
    let a: Vec<u64> = (0..64u64).map(|t| 1_000_000_007u64.wrapping_mul(t * t + 3) ^ (t << 40)).collect();
    let inp = upload(&mem, &a);
    let out = mem.alloc(64 * 8).unwrap();
    let den = 12_345u64;
    let idx = 5u32;
    run(&co, "wide_ops", &[&out.to_le_bytes(), &inp.to_le_bytes(), &den.to_le_bytes(), &idx.to_le_bytes()], [1, 1, 1], [64, 1, 1], &mem).unwrap();
    let mut raw = vec![0u8; 64 * 8];
    mem.read(out, &mut raw).unwrap();
    let got: Vec<u64> = raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    let mut t2s = Vec::new();
    for t in 0..64usize {
        let x = a[t];
        let s = (x / den).wrapping_add(((x as i64) % 1_000_003) as u64);
        let d = x as f64;
        let d4 = (d.mul_add(1.5, -2.5) / 3.0).sqrt();
        let tt = s.wrapping_add(d4 as u64);
        let h0 = f16_bits_rne_any(((2 * t + 1) * (2 * t + 1)) as f32);
        let hz = u64::from(h0) | 0x3C00 << 16;
        t2s.push(tt ^ hz);
    }
    let los: Vec<u32> = t2s.iter().map(|&v| v as u32).collect();
    let mx = *los.iter().max().unwrap();
    let mut t3s = Vec::new();
    for t in 0..64usize {
        let lo = los[t];
        let rd = lo ^ ((t as u32 + idx) & 15);
        let z2 = rd.wrapping_add(lo) ^ mx; // swizzle(BITMASK_PERM,"ppppp") is the identity
        let t3 = t2s[t].wrapping_add(u64::from(z2));
        t3s.push(t3);
        // Lane 0's element also received 64 atomic increments after the store.
        let want = if t == 0 { t3.wrapping_add(64) } else { t3 };
        assert_eq!(got[t], want, "lane {t}");
    }
    let mut b = [0u8; 8];
    mem.read(inp, &mut b).unwrap();
    assert_eq!(u64::from_le_bytes(b), t3s.iter().copied().chain([a[0]]).max().unwrap(), "64-bit atomic umax");
}

#[test]
fn quantization_like_kernel_matches_cpu() {
    use amdgpu_emu::numerics::{F8Kind, f32_to_f8_rne};
    let co = fixture();
    let mem = DeviceMemory::new();
    let x: Vec<f32> = (0..64).map(|i| ((i as f32) * 0.731).sin() * 37.5 + if i == 17 { -90.0 } else { 0.0 }).collect();
    let inp = upload(&mem, &x);
    let out = mem.alloc(64).unwrap();
    let scale = mem.alloc(4).unwrap();
    run(&co, "quant_like", &[&out.to_le_bytes(), &inp.to_le_bytes(), &scale.to_le_bytes()], [1, 1, 1], [64, 1, 1], &mem).unwrap();
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let sc = amax.max(2f32.powi(-23)) / 240.0;
    let inv = 1.0 / sc;
    let mut q = vec![0u8; 64];
    mem.read(out, &mut q).unwrap();
    for (t, &v) in x.iter().enumerate() {
        let y = (v * inv).clamp(-240.0, 240.0);
        assert_eq!(q[t], f32_to_f8_rne(y, F8Kind::Fp8Fnuz, false), "lane {t}: {v} → {y}");
    }
    let mut s = [0u8; 4];
    mem.read(scale, &mut s).unwrap();
    assert_eq!(f32::from_le_bytes(s), sc);
}

/// mfma_ops chains FP8, BF8×FP8, BF16 and F16 MFMAs; checked against the numerics model applied
/// on the CPU (this checks the executor's operand/accumulator plumbing, AGPR/VGPR placement and
/// chaining; the arithmetic itself is tested in numerics_mfma.rs).
#[test]
fn mfma_chain_matches_numerics_model() {
    use amdgpu_emu::numerics::{self as nm, F8Kind};
    let co = fixture();
    let mem = DeviceMemory::new();
    // Bytes that are finite in every interpretation used (fp8, bf8, bf16 and f16 pairs).
    let mut state = 0x1234_5678u32;
    let mut byte = || {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let b = 0x08 + ((state >> 16) % 0x38) as u8;
        if state >> 31 != 0 { b | 0x80 } else { b }
    };
    let vals: Vec<u64> = (0..128).map(|_| (0..8).fold(0u64, |acc, i| acc | u64::from(byte()) << (8 * i))).collect();
    let inp = upload(&mem, &vals);
    let out = mem.alloc(64 * 4).unwrap();
    run(&co, "mfma_ops", &[&out.to_le_bytes(), &inp.to_le_bytes()], [1, 1, 1], [64, 1, 1], &mem).unwrap();
    let got = download_u32(&mem, out, 64);
    let a: [u64; 64] = std::array::from_fn(|l| vals[l]);
    let b: [u64; 64] = std::array::from_fn(|l| vals[64 + l]);
    let zero4 = [[0f32; 4]; 64];
    let c = nm::mfma_f32_16x16x32_f8(&a, &b, &zero4, F8Kind::Fp8Fnuz, F8Kind::Fp8Fnuz);
    let c2 = nm::mfma_f32_16x16x32_f8(&b, &a, &c, F8Kind::Fp8Fnuz, F8Kind::Fp8Fnuz);
    let d = nm::mfma_f32_32x32x16_f8(&a, &b, &[[0f32; 16]; 64], F8Kind::Bf8Fnuz, F8Kind::Fp8Fnuz);
    let e = nm::mfma_f32_16x16x16_bf16(&a, &b, &c2);
    let g = nm::mfma_f32_16x16x16_f16(&a, &b, &e);
    for l in 0..64 {
        let want = (d[l][0] + d[l][15]) + (g[l][0] + g[l][3]);
        assert_eq!(f32::from_bits(got[l]).to_bits(), want.to_bits(), "lane {l}: {} vs {want}", f32::from_bits(got[l]));
    }
}
