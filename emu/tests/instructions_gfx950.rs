//! gfx950 (CDNA4) instructions case by case, through `exec::run_snippet` with
//! `WaveState::target = Gfx950` on hand-encoded words (their disassembly asserted too; the printer
//! is checked against `llvm-objdump --mcpu=gfx950` in `disasm_llvm.rs`). Expected values are
//! computed here from the documented register layouts, element by element.

use amdgpu_emu::decode::{DecodeError, decode_one_for};
use amdgpu_emu::disasm::format_inst;
use amdgpu_emu::exec::{LaunchError, WaveState, max_lds_bytes, run_snippet};
use amdgpu_emu::loader::Target;
use amdgpu_emu::memory::DeviceMemory;

#[path = "common/f8f6f4.rs"]
mod f8f6f4;
use f8f6f4::{codes, d_pos, pack_lanes};

const V: u32 = 256;

fn disasm950(words: &[u32]) -> Vec<String> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut off = 0;
    let mut out = Vec::new();
    while off < bytes.len() {
        let i = decode_one_for(Target::Gfx950, &bytes[off..], off as u64, "t").unwrap_or_else(|e| panic!("{e}"));
        out.push(format_inst(&i));
        off += usize::from(i.len);
    }
    out
}

fn state950() -> WaveState {
    let mut st = WaveState::new(256);
    st.target = Target::Gfx950;
    st
}

fn run950(words: &[u32], st: &mut WaveState, lds: &mut [u8]) -> Result<(), Box<LaunchError>> {
    let mem = DeviceMemory::new();
    run_snippet(words, st, lds, &mem).map(|_| ()).map_err(Box::new)
}

// ---------------------------------------------------------------------------------------------
// v_mfma_f32_{16x16x128,32x32x64}_f8f6f4
// ---------------------------------------------------------------------------------------------

/// Packs `x(row, k)` (row = i of A or j of B) into lanes' VGPRs `base..` of `st`.
fn pack(st: &mut WaveState, base: usize, fmt: u32, m: usize, x: &dyn Fn(usize, usize) -> u32) {
    let regs = [8usize, 8, 6, 6, 4][fmt as usize];
    for (l, lane) in pack_lanes(fmt, m, x).iter().enumerate() {
        for (r, &v) in lane.iter().enumerate().take(regs) {
            st.vgpr[base + r][l] = v;
        }
    }
}

fn mfma_words(m: usize, cbsz: u32, blgp: u32) -> Vec<u32> {
    // v_mfma_f32_*_f8f6f4 v[32:..], v[0:..], v[8:..], v[16:..] (VOP3P 0x2d / 0x2e, acc_cd = 0).
    let op = if m == 16 { 0x2D } else { 0x2E };
    vec![0xD380_0000 | op << 16 | cbsz << 8 | 32, V | (V + 8) << 9 | (V + 16) << 18 | blgp << 29]
}

/// Runs one f8f6f4 MFMA with A in format `fa`, B in `fb` and checks every element of D against
/// `C + Σ_k A·B` computed in f64 (exact here: small dyadic values).
fn check_f8f6f4(m: usize, fa: u32, fb: u32) {
    let kdim = 2048 / m;
    let (ca, cb) = (codes(fa), codes(fb));
    let ai = |i: usize, k: usize| (i * 7 + k * 3) % ca.len();
    let bi = |k: usize, j: usize| (k * 5 + j * 11 + 1) % cb.len();
    let c = |i: usize, j: usize| (i * 100) as f64 - j as f64 * 0.25;
    let mut st = state950();
    pack(&mut st, 0, fa, m, &|i, k| ca[ai(i, k)].1);
    pack(&mut st, 8, fb, m, &|j, k| cb[bi(k, j)].1);
    for i in 0..m {
        for j in 0..m {
            let (r, l) = d_pos(m, i, j);
            st.vgpr[16 + r][l] = (c(i, j) as f32).to_bits();
        }
    }
    let p = mfma_words(m, fa, fb);
    run950(&p, &mut st, &mut [0u8; 16]).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..m {
        for j in 0..m {
            let want = c(i, j) + (0..kdim).map(|k| ca[ai(i, k)].0 * cb[bi(k, j)].0).sum::<f64>();
            let (r, l) = d_pos(m, i, j);
            assert_eq!(f64::from(f32::from_bits(st.vgpr[32 + r][l])), want, "{m}x{m} cbsz:{fa} blgp:{fb} D[{i}][{j}]");
        }
    }
}

#[test]
fn f8f6f4_16x16x128_fp8_operands() {
    assert_eq!(disasm950(&mfma_words(16, 0, 0)), ["v_mfma_f32_16x16x128_f8f6f4 v[32:35], v[0:7], v[8:15], v[16:19]"]);
    check_f8f6f4(16, 0, 0);
    check_f8f6f4(16, 1, 0);
    check_f8f6f4(16, 0, 1);
    check_f8f6f4(16, 1, 1);
}

#[test]
fn f8f6f4_32x32x64_fp8_operands() {
    assert_eq!(disasm950(&mfma_words(32, 0, 1)), ["v_mfma_f32_32x32x64_f8f6f4 v[32:47], v[0:7], v[8:15], v[16:31] blgp:1"]);
    check_f8f6f4(32, 0, 0);
    check_f8f6f4(32, 0, 1);
    check_f8f6f4(32, 1, 0);
}

#[test]
fn f8f6f4_fp6_and_fp4_operands_and_mixed_formats() {
    assert_eq!(disasm950(&mfma_words(16, 4, 2)), ["v_mfma_f32_16x16x128_f8f6f4 v[32:35], v[0:3], v[8:13], v[16:19] cbsz:4 blgp:2"]);
    assert_eq!(disasm950(&mfma_words(32, 3, 0)), ["v_mfma_f32_32x32x64_f8f6f4 v[32:47], v[0:5], v[8:15], v[16:31] cbsz:3"]);
    for (fa, fb) in [(4, 4), (2, 3), (4, 0), (0, 2), (1, 4)] {
        check_f8f6f4(16, fa, fb);
    }
    for (fa, fb) in [(4, 4), (3, 2), (0, 4)] {
        check_f8f6f4(32, fa, fb);
    }
}

#[test]
fn f8f6f4_passes_and_flops() {
    use amdgpu_emu::decode::Op;
    use amdgpu_emu::exec::counters::{mfma_flops, mfma_passes};
    // FP8 rate of gfx950 (8192 FLOP/clk/CU = 2048 per SIMD): 32 and 64 cycles.
    assert_eq!(mfma_passes(Op::v_mfma_f32_16x16x128_f8f6f4), Some(8));
    assert_eq!(mfma_passes(Op::v_mfma_f32_32x32x64_f8f6f4), Some(16));
    assert_eq!(mfma_flops(Op::v_mfma_f32_16x16x128_f8f6f4), 2 * 16 * 16 * 128);
    assert_eq!(mfma_flops(Op::v_mfma_f32_32x32x64_f8f6f4), 2 * 32 * 32 * 64);
    // The CDNA3 form keeps its rate on gfx950.
    assert_eq!(mfma_passes(Op::v_mfma_f32_16x16x32_fp8_fp8), Some(4));
}

#[test]
fn f8f6f4_nan_and_reserved_formats() {
    // An E4M3FN NaN (0x7F) in A row 0 poisons row 0 of D only.
    let mut st = state950();
    pack(&mut st, 0, 0, 16, &|i, k| if i == 0 && k == 5 { 0x7F } else { 0x38 });
    pack(&mut st, 8, 0, 16, &|_, _| 0x38);
    run950(&mfma_words(16, 0, 0), &mut st, &mut [0u8; 16]).unwrap();
    for i in 0..16 {
        for j in 0..16 {
            let (r, l) = d_pos(16, i, j);
            let d = f32::from_bits(st.vgpr[32 + r][l]);
            if i == 0 { assert!(d.is_nan(), "D[0][{j}] = {d}") } else { assert_eq!(d, 128.0, "D[{i}][{j}]") }
        }
    }
    // cbsz 5 is reserved: a typed fault naming it, not a guess.
    let e = run950(&mfma_words(16, 5, 0), &mut state950(), &mut [0u8; 16]).unwrap_err();
    assert!(e.to_string().contains("cbsz:5"), "{e}");
}

#[test]
fn cdna3_fp8_mfma_reads_ocp_operands_on_gfx950() {
    // v_mfma_f32_16x16x32_fp8_fp8 v[32:35], v[0:1], v[8:9], v[16:19]: 0x38 is 1.0 in E4M3FN
    // (gfx950) and 0.5 in E4M3FNUZ (gfx942); K = 32 → D = 32 resp. 8.
    let p = vec![0xD3F3_0000 | 32, V | (V + 8) << 9 | (V + 16) << 18];
    assert_eq!(disasm950(&p), ["v_mfma_f32_16x16x32_fp8_fp8 v[32:35], v[0:1], v[8:9], v[16:19]"]);
    for (target, want) in [(Target::Gfx950, 32.0f32), (Target::Gfx942, 8.0)] {
        let mut st = WaveState::new(256);
        st.target = target;
        for r in [0, 1, 8, 9] {
            st.vgpr[r] = [0x3838_3838; 64];
        }
        run_snippet(&p, &mut st, &mut [0u8; 16], &DeviceMemory::new()).unwrap();
        assert!((0..4).all(|r| st.vgpr[32 + r].iter().all(|&x| f32::from_bits(x) == want)), "{target:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Transposing LDS reads
// ---------------------------------------------------------------------------------------------

fn ds(op: u32, offset: u32, addr: u32, vdst: u32) -> Vec<u32> {
    vec![0xD800_0000 | op << 17 | offset, addr | vdst << 24]
}

#[test]
fn ds_read_b64_tr_b16_transposes_a_4x16_tile_per_16_lanes() {
    // ds_read_b64_tr_b16 v[2:3], v1 (DS opcode 227). Lane L of group g addresses bytes
    // 128·g + 8·(L mod 16): the group's 128 bytes are a row-major 4×16 matrix T of 16-bit
    // values, T[r][c] = u16 at 128·g + 2·(16r + c). Lane j of the group receives column j.
    let p = ds(227, 0, 1, 2);
    assert_eq!(disasm950(&p), ["ds_read_b64_tr_b16 v[2:3], v1"]);
    let mut lds: Vec<u8> = (0..256u16).flat_map(|h| (h * 3 + 1).to_le_bytes()).collect();
    let mut st = state950();
    for l in 0..64 {
        st.vgpr[1][l] = 128 * (l as u32 / 16) + 8 * (l as u32 % 16);
    }
    run950(&p, &mut st, &mut lds).unwrap();
    for l in 0..64 {
        let (g, j) = (l / 16, l % 16);
        let t = |r: usize| u32::from((64 * g + 16 * r + j) as u16 * 3 + 1);
        assert_eq!(st.vgpr[2][l], t(0) | t(1) << 16, "lane {l} v2");
        assert_eq!(st.vgpr[3][l], t(2) | t(3) << 16, "lane {l} v3");
    }
}

#[test]
fn ds_read_b64_tr_b8_is_two_interleaved_8x8_byte_transposes() {
    // ds_read_b64_tr_b8 v[4:5], v1 offset:16 (DS opcode 226). Per 16 lanes an 8×16 byte matrix
    // T[r][c] (row r = the 16 bytes lanes 2r and 2r+1 address); lane j receives column j.
    let p = ds(226, 16, 1, 4);
    assert_eq!(disasm950(&p), ["ds_read_b64_tr_b8 v[4:5], v1 offset:16"]);
    let mut lds: Vec<u8> = (0..640u32).map(|a| (a * 7 % 251) as u8).collect();
    let mut st = state950();
    for l in 0..64 {
        st.vgpr[1][l] = 128 * (l as u32 / 16) + 8 * (l as u32 % 16);
    }
    run950(&p, &mut st, &mut lds).unwrap();
    for l in 0..64 {
        let (g, j) = (l / 16, l % 16);
        let t = |r: usize| u32::from(lds[16 + 128 * g + 16 * r + j]);
        assert_eq!(st.vgpr[4][l], t(0) | t(1) << 8 | t(2) << 16 | t(3) << 24, "lane {l} v4");
        assert_eq!(st.vgpr[5][l], t(4) | t(5) << 8 | t(6) << 16 | t(7) << 24, "lane {l} v5");
    }
}

#[test]
fn ds_read_tr_b4_and_b6_are_typed_errors() {
    for (op, text) in [(224, "ds_read_b64_tr_b4 v[2:3], v1"), (225, "ds_read_b96_tr_b6 v[2:4], v1")] {
        let p = ds(op, 0, 1, 2);
        assert_eq!(disasm950(&p), [text]);
        let e = run950(&p, &mut state950(), &mut [0u8; 64]).unwrap_err();
        assert!(matches!(*e, LaunchError::Unimplemented { .. }) && e.to_string().contains(&text[..17]), "{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Wider LDS DMA
// ---------------------------------------------------------------------------------------------

#[test]
fn wide_loads_to_lds_use_lane_slots_of_their_size() {
    // buffer_load_dwordx4 v1, s[4:7], 0 offen offset:4 lds; buffer_load_dwordx3 (same);
    // global_load_lds_dwordx4 v[2:3], off offset:4; global_load_lds_dwordx3 (same).
    let p = vec![0xE05D_1004, 0x8001_0001, 0xE059_1004, 0x8001_0001, 0xDDF4_8004, 0x007F_0002, 0xDDF8_8004, 0x007F_0002];
    assert_eq!(
        disasm950(&p),
        [
            "buffer_load_dwordx4 v1, s[4:7], 0 offen offset:4 lds",
            "buffer_load_dwordx3 v1, s[4:7], 0 offen offset:4 lds",
            "global_load_lds_dwordx4 v[2:3], off offset:4",
            "global_load_lds_dwordx3 v[2:3], off offset:4",
        ]
    );
    let mem = DeviceMemory::new();
    let src: Vec<u8> = (0..128u32).flat_map(|i| (1000 + i).to_le_bytes()).collect();
    let g = mem.alloc(512).unwrap();
    mem.write(g, &src).unwrap();
    let mut st = state950();
    st.set_exec(0b111);
    st.sgpr[4] = g as u32;
    st.sgpr[5] = (g >> 32) as u32;
    st.sgpr[6] = 512;
    st.sgpr[7] = 0x0002_0000;
    for l in 0..3 {
        st.vgpr[1][l] = 32 * l as u32;
        let a = g + 64 * l as u64;
        st.vgpr[2][l] = a as u32;
        st.vgpr[3][l] = (a >> 32) as u32;
    }
    let dw = |lds: &[u8], o: usize| u32::from_le_bytes(lds[o..o + 4].try_into().unwrap());
    for (i, size) in [(0usize, 16usize), (1, 12), (2, 16), (3, 12)] {
        let mut lds = vec![0u8; 256];
        st.sgpr[124] = 32; // M0
        run_snippet(&p[2 * i..2 * i + 2], &mut st, &mut lds, &mem).unwrap_or_else(|e| panic!("{e}"));
        for l in 0..3 {
            // Memory dword index of the lane's first dword: (32l + 4) / 4 (buffer) or
            // (64l + 4) / 4 (global); LDS slot M0 + 4 + size·l.
            let first = if i < 2 { 8 * l + 1 } else { 16 * l + 1 };
            for d in 0..size / 4 {
                assert_eq!(dw(&lds, 36 + size * l + 4 * d), 1000 + (first + d) as u32, "instruction {i} lane {l} dword {d}");
            }
        }
        assert_eq!(dw(&lds, 36 + 3 * size), 0, "instruction {i}: lane 3 is outside EXEC");
    }
    // gfx942 has no dwordx4 / dwordx3 LDS DMA: a typed error, not a silent dword load.
    let mut st942 = WaveState::new(256);
    st942.sgpr[4..8].copy_from_slice(&st.sgpr[4..8]);
    let e = run_snippet(&p[..2], &mut st942, &mut [0u8; 256], &mem).unwrap_err();
    assert!(matches!(e, LaunchError::Unimplemented { .. }), "{e}");
}

// ---------------------------------------------------------------------------------------------
// FP8 conversions
// ---------------------------------------------------------------------------------------------

#[test]
fn fp8_conversions_are_ocp_on_gfx950() {
    // v_cvt_pk_fp8_f32 v2, v0, v1 (VOP3 0x2a2): 1.0 and −2.0 into the low word of v2 (the high
    // word kept). E4M3FN: 1.0 = 0x38, −2.0 = 0xC0; E4M3FNUZ: 0x40, 0xC8.
    // v_cvt_f32_fp8_e32 v3, v4 (VOP1 0x54): 0x38 is 1.0 (FN) / 0.5 (FNUZ).
    let p = vec![0xD2A2_0002, V | (V + 1) << 9, 0x7E00_0000 | 3 << 17 | 0x54 << 9 | (V + 4)];
    assert_eq!(disasm950(&p), ["v_cvt_pk_fp8_f32 v2, v0, v1", "v_cvt_f32_fp8_e32 v3, v4"]);
    for (target, packed, back) in [(Target::Gfx950, 0xAAAA_C038u32, 1.0f32), (Target::Gfx942, 0xAAAA_C840, 0.5)] {
        let mut st = WaveState::new(256);
        st.target = target;
        st.vgpr[0] = [1.0f32.to_bits(); 64];
        st.vgpr[1] = [(-2.0f32).to_bits(); 64];
        st.vgpr[2] = [0xAAAA_0000; 64];
        st.vgpr[4] = [0x38; 64];
        run_snippet(&p, &mut st, &mut [0u8; 16], &DeviceMemory::new()).unwrap();
        assert!(st.vgpr[2].iter().all(|&x| x == packed), "{target:?}: {:#x}", st.vgpr[2][0]);
        assert!(st.vgpr[3].iter().all(|&x| f32::from_bits(x) == back), "{target:?}");
    }
}

#[test]
fn scaled_conversions_to_fp8_divide_by_the_scale() {
    // v_cvt_scalef32_pk_fp8_f32 v2, v0, v1, v3 op_sel:[0,0,0,1] (VOP3 0x235, dst op_sel: high
    // word) and v_cvt_scalef32_pk_bf8_f32 v4, v0, v1, v3 (0x236, low word): x / 2^k with k the
    // scale's exponent. Lane 0: scale 8 (a = 8 → 1.0, b = −24 → −3.0); lane 1: scale 0.25
    // (a = 0.25 → 1.0, b = −0.75 → −3.0); lane 2: a NaN scale (E8M0 0xFF) gives NaNs; lane 3:
    // scale 12.0 uses its exponent only (2^3, as 8).
    let p = vec![0xD235_4002, V | (V + 1) << 9 | (V + 3) << 18, 0xD236_0004, V | (V + 1) << 9 | (V + 3) << 18];
    assert_eq!(disasm950(&p), ["v_cvt_scalef32_pk_fp8_f32 v2, v0, v1, v3 op_sel:[0,0,0,1]", "v_cvt_scalef32_pk_bf8_f32 v4, v0, v1, v3"]);
    let mut st = state950();
    st.set_exec(0b1111);
    for (l, (a, b, scale)) in
        [(8.0f32, -24.0f32, 8.0f32), (0.25, -0.75, 0.25), (1.0, 1.0, f32::from_bits(0x7F80_0000)), (8.0, -24.0, 12.0)].into_iter().enumerate()
    {
        st.vgpr[0][l] = a.to_bits();
        st.vgpr[1][l] = b.to_bits();
        st.vgpr[3][l] = scale.to_bits();
        st.vgpr[2][l] = 0x0000_5555;
        st.vgpr[4][l] = 0xAAAA_0000;
    }
    run950(&p, &mut st, &mut [0u8; 16]).unwrap();
    // E4M3FN: 1.0 = 0x38, −3.0 = 0xC4, NaN 0x7F; E5M2: 1.0 = 0x3C, −3.0 = 0xC2, NaN 0x7F.
    assert_eq!(st.vgpr[2][..4], [0xC438_5555, 0xC438_5555, 0x7F7F_5555, 0xC438_5555]);
    assert_eq!(st.vgpr[4][..4], [0xAAAA_C23C, 0xAAAA_C23C, 0xAAAA_7F7F, 0xAAAA_C23C]);
}

#[test]
fn scaled_conversions_from_fp8_multiply_by_the_scale() {
    // v_cvt_scalef32_pk_f32_fp8 v[4:5], v0, v1 op_sel:[1,0,0] (VOP3 0x239; op_sel[0] = the
    // source's high word) and v_cvt_scalef32_pk_f32_bf8 v[6:7], v2, v1 (0x23a, low word).
    let p = vec![0xD239_0804, V | (V + 1) << 9, 0xD23A_0006, (V + 2) | (V + 1) << 9];
    assert_eq!(disasm950(&p), ["v_cvt_scalef32_pk_f32_fp8 v[4:5], v0, v1 op_sel:[1,0,0]", "v_cvt_scalef32_pk_f32_bf8 v[6:7], v2, v1"]);
    let mut st = state950();
    st.set_exec(0b11);
    // v0 high word: E4M3FN 0x38 (1.0), 0xC4 (−3.0); v2 low word: E5M2 0x40 (2.0), 0x3C (1.0).
    st.vgpr[0] = [0xC438_0000; 64];
    st.vgpr[2] = [0x0000_3C40; 64];
    st.vgpr[1][0] = 0.5f32.to_bits();
    st.vgpr[1][1] = 4.0f32.to_bits();
    run950(&p, &mut st, &mut [0u8; 16]).unwrap();
    let got = |r: usize, l: usize| f32::from_bits(st.vgpr[r][l]);
    assert_eq!([got(4, 0), got(5, 0), got(4, 1), got(5, 1)], [0.5, -1.5, 4.0, -12.0]);
    assert_eq!([got(6, 0), got(7, 0), got(6, 1), got(7, 1)], [1.0, 0.5, 8.0, 4.0]);
}

#[test]
fn other_scaled_conversions_are_typed_errors() {
    // v_cvt_scalef32_sr_fp8_f32 (stochastic rounding, VOP3 0x237) and v_cvt_scalef32_f32_fp8
    // (0x23b) decode like LLVM and are not executed.
    for (p, text) in [
        (vec![0xD237_0002, V | (V + 1) << 9 | (V + 3) << 18], "v_cvt_scalef32_sr_fp8_f32 v2, v0, v1, v3"),
        (vec![0xD23B_0004, V | (V + 1) << 9], "v_cvt_scalef32_f32_fp8 v4, v0, v1"),
    ] {
        assert_eq!(disasm950(&p), [text]);
        let e = run950(&p, &mut state950(), &mut [0u8; 16]).unwrap_err();
        assert!(matches!(*e, LaunchError::Unimplemented { .. }) && e.to_string().contains(text.split(' ').next().unwrap()), "{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Decoder: targets and typed errors
// ---------------------------------------------------------------------------------------------

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn opcodes_follow_the_target() {
    // ds_read_b64_tr_b8 is gfx950-only; v_mfma_f32_16x16x8_xf32 is gfx942-only.
    let tr = bytes(&ds(226, 0, 1, 2));
    assert!(matches!(decode_one_for(Target::Gfx942, &tr, 0, "k"), Err(DecodeError::UnknownOpcode { opcode: 226, .. })));
    assert_eq!(decode_one_for(Target::Gfx950, &tr, 0, "k").map(|i| i.name()), Ok("ds_read_b64_tr_b8"));
    let xf32 = bytes(&[0xD3BE_800A, 0x04A2_3D14]);
    assert_eq!(decode_one_for(Target::Gfx942, &xf32, 0, "k").map(|i| i.name()), Ok("v_mfma_f32_16x16x8_xf32"));
    assert!(matches!(decode_one_for(Target::Gfx950, &xf32, 0, "k"), Err(DecodeError::UnknownOpcode { .. })));
}

#[test]
fn block_scaled_mfma_decodes_as_one_instruction() {
    // v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[20:23], v24, v25
    // op_sel_hi:[0,0,0] (LLVM test/MC/AMDGPU/mai-gfx950.s encoding): 16 bytes.
    let w = [0xD3AC_0000, 0x0002_3318, 0xD3AD_0800, 0x0452_1904];
    let i = decode_one_for(Target::Gfx950, &bytes(&w), 0x40, "k").unwrap();
    assert_eq!((i.len, i.name()), (16, "v_mfma_scale_f32_16x16x128_f8f6f4"));
    assert_eq!(format_inst(&i), "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[20:23], v24, v25 op_sel_hi:[0,0,0]");
    // A bare prefix is not an instruction of its own here.
    assert!(matches!(decode_one_for(Target::Gfx950, &bytes(&w[..2]), 0, "k"), Err(DecodeError::UnknownOpcode { .. })));
}

/// `v_mfma_scale_f32_16x16x128_f8f6f4 v[32:35], v[0:7], v[8:15], v[16:19], v40, v41` with
/// `opsel_a` / `opsel_b` byte selects (op_sel[i] | op_sel_hi[i] << 1) and A/B formats.
fn mfma_scale_words(m: usize, sel_a: u32, sel_b: u32, cbsz: u32, blgp: u32) -> Vec<u32> {
    let op_sel = (sel_a & 1) | (sel_b & 1) << 1;
    let hi = (sel_a >> 1) | (sel_b >> 1) << 1;
    let pre = vec![0xD3AC_0000 | op_sel << 11, (V + 40) | (V + 41) << 9 | hi << 27];
    let mut mf = mfma_words(m, cbsz, blgp);
    mf[0] |= 1 << 11;
    [pre, mf].concat()
}

#[test]
fn block_scaled_mfma_with_lane_uniform_scales() {
    let p = mfma_scale_words(16, 2, 1, 0, 4);
    assert_eq!(disasm950(&p), ["v_mfma_scale_f32_16x16x128_f8f6f4 v[32:35], v[0:7], v[8:11], v[16:19], v40, v41 op_sel:[0,1,0] op_sel_hi:[1,0,0] blgp:4"]);
    // A = FP8 1.0 everywhere, B = FP4 1.5 everywhere, C = 1. Scale A: byte 2 of v40 = 129
    // (×4); scale B: byte 1 of v41 = 125 (×1/4). D = 1 + 128 · 1.5 = 193. The other bytes hold
    // noise that must be ignored.
    let mut st = state950();
    pack(&mut st, 0, 0, 16, &|_, _| 0x38);
    pack(&mut st, 8, 4, 16, &|_, _| 0x3);
    for r in 16..20 {
        st.vgpr[r] = [1.0f32.to_bits(); 64];
    }
    st.vgpr[40] = [0x1281_3344; 64];
    st.vgpr[41] = [0x9955_7D11; 64];
    run950(&p, &mut st, &mut [0u8; 16]).unwrap_or_else(|e| panic!("{e}"));
    assert!((32..36).all(|r| st.vgpr[r].iter().all(|&x| f32::from_bits(x) == 193.0)), "{}", f32::from_bits(st.vgpr[32][0]));
    // Scale 127 on both (2^0) on the 32x32x64 form equals the unscaled instruction.
    let p32 = mfma_scale_words(32, 0, 0, 0, 1);
    let mut st2 = state950();
    let (ca, cb) = (codes(0), codes(1));
    pack(&mut st2, 0, 0, 32, &|i, k| ca[(i + 3 * k) % ca.len()].1);
    pack(&mut st2, 8, 1, 32, &|j, k| cb[(5 * k + j) % cb.len()].1);
    let mut st3 = st2.clone();
    st2.vgpr[40] = [127; 64];
    st2.vgpr[41] = [0x7F00_7F7F; 64];
    run950(&p32, &mut st2, &mut [0u8; 16]).unwrap();
    run950(&mfma_words(32, 0, 1), &mut st3, &mut [0u8; 16]).unwrap();
    for r in 32..48 {
        assert_eq!(st2.vgpr[r], st3.vgpr[r], "v{r}");
    }
}

#[test]
fn block_scaled_mfma_nan_and_lane_varying_scales() {
    let p = mfma_scale_words(16, 0, 0, 0, 0);
    let mut st = state950();
    pack(&mut st, 0, 0, 16, &|_, _| 0x38);
    pack(&mut st, 8, 0, 16, &|_, _| 0x38);
    // E8M0 0xFF is NaN: every result NaN.
    st.vgpr[40] = [0xFF; 64];
    st.vgpr[41] = [127; 64];
    run950(&p, &mut st, &mut [0u8; 16]).unwrap();
    assert!((32..36).all(|r| st.vgpr[r].iter().all(|&x| f32::from_bits(x).is_nan())));
    // Scales that differ between lanes: a typed error, not a guessed block assignment.
    st.vgpr[40] = std::array::from_fn(|l| 120 + (l as u32 % 3));
    let e = run950(&p, &mut st, &mut [0u8; 16]).unwrap_err();
    assert!(matches!(*e, LaunchError::Unimplemented { .. }) && e.to_string().contains("differ between lanes"), "{e}");
}

#[test]
fn lds_limit_follows_the_target() {
    assert_eq!(max_lds_bytes(Target::Gfx942), 65536);
    assert_eq!(max_lds_bytes(Target::Gfx950), 160 * 1024);
}
