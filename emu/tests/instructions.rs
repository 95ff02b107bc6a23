//! Per-instruction-class unit tests with hand-computed expected values, run through
//! `exec::run_snippet` on hand-encoded gfx942 instruction words. Each snippet's disassembly is
//! asserted too, so the encodings are documented in LLVM syntax (the printer is itself checked
//! against llvm-objdump in `disasm_llvm.rs`).

#[path = "common/snippet.rs"]
mod snippet;
use snippet::{disasm, run};

use amdgpu_emu::exec::{LaunchError, WaveState, run_snippet};
use amdgpu_emu::memory::DeviceMemory;

const V: u32 = 256;
const EXEC: u32 = 126;
/// Inline integer constant `n` (0..=64).
fn ic(n: u32) -> u32 {
    128 + n
}

fn vop2(op: u32, vdst: u32, src0: u32, vsrc1: u32) -> Vec<u32> {
    vec![op << 25 | vdst << 17 | vsrc1 << 9 | src0]
}
fn vop1(op: u32, vdst: u32, src0: u32) -> Vec<u32> {
    vec![0x7E00_0000 | vdst << 17 | op << 9 | src0]
}
fn vopc(op: u32, src0: u32, vsrc1: u32) -> Vec<u32> {
    vec![0x7C00_0000 | op << 17 | vsrc1 << 9 | src0]
}
fn vop3(op: u32, vdst: u32, hi8: u32, s0: u32, s1: u32, s2: u32, neg: u32) -> Vec<u32> {
    vec![0xD000_0000 | op << 16 | hi8 << 8 | vdst, s0 | s1 << 9 | s2 << 18 | neg << 29]
}
fn sop2(op: u32, d: u32, s0: u32, s1: u32) -> Vec<u32> {
    vec![0x8000_0000 | op << 23 | d << 16 | s1 << 8 | s0]
}
fn sop1(op: u32, d: u32, s0: u32) -> Vec<u32> {
    vec![0xBE80_0000 | d << 16 | op << 8 | s0]
}
fn sopc(op: u32, s0: u32, s1: u32) -> Vec<u32> {
    vec![0xBF00_0000 | op << 16 | s1 << 8 | s0]
}
fn sopp(op: u32, simm: i16) -> Vec<u32> {
    vec![0xBF80_0000 | op << 16 | u32::from(simm as u16)]
}
fn ds(op: u32, offset: u32, addr: u32, d0: u32, d1: u32, vdst: u32) -> Vec<u32> {
    vec![0xD800_0000 | op << 17 | offset, addr | d0 << 8 | d1 << 16 | vdst << 24]
}

fn program(parts: &[Vec<u32>]) -> Vec<u32> {
    parts.concat()
}

#[test]
fn vector_carries_under_exec_mask() {
    let p = program(&[vop2(0x19, 2, V, 1), vop2(0x1c, 3, V + 4, 5)]);
    assert_eq!(disasm(&p), ["v_add_co_u32_e32 v2, vcc, v0, v1", "v_addc_co_u32_e32 v3, vcc, v4, v5, vcc"]);
    let mut st = WaveState::new(256);
    st.set_exec((1u64 << 48) - 1);
    for l in 0..64 {
        st.vgpr[0][l] = if l % 2 == 0 { u32::MAX } else { 1 };
        st.vgpr[1][l] = 1;
        st.vgpr[2][l] = 0xDEAD;
        st.vgpr[3][l] = 0xBEEF;
        st.vgpr[4][l] = 10;
        st.vgpr[5][l] = u32::MAX - 10 + (l as u32 % 3); // 10 + this carries when l % 3 != 0
    }
    run(&p, &mut st);
    for l in 0..64 {
        if l < 48 {
            assert_eq!(st.vgpr[2][l], if l % 2 == 0 { 0 } else { 2 }, "lane {l}");
            let cin = u64::from(l % 2 == 0);
            let sum = 10u64 + u64::from(u32::MAX - 10 + (l as u32 % 3)) + cin;
            assert_eq!(st.vgpr[3][l], sum as u32, "lane {l}");
        } else {
            assert_eq!((st.vgpr[2][l], st.vgpr[3][l]), (0xDEAD, 0xBEEF), "masked lane {l} untouched");
        }
    }
    // Final VCC = carry-out of the addc for active lanes: sum >= 2^32.
    let want: u64 = (0..48).filter(|&l| (10 + u64::from(u32::MAX - 10 + (l as u32 % 3)) + u64::from(l % 2 == 0)) >> 32 != 0).fold(0, |m, l| m | 1 << l);
    assert_eq!(st.vcc(), want);
}

#[test]
fn sixteen_bit_add_sub_subrev_wrap_and_zero_the_high_half() {
    // VOP2 opcodes 38 / 39 / 40 (gfx9): v_add_u16, v_sub_u16, v_subrev_u16 (LLVM emits the
    // last for `b - a` on u16 when a is the VGPR operand).
    let p = program(&[vop2(38, 2, V, 1), vop2(39, 3, V, 1), vop2(40, 4, V, 1)]);
    assert_eq!(disasm(&p), ["v_add_u16_e32 v2, v0, v1", "v_sub_u16_e32 v3, v0, v1", "v_subrev_u16_e32 v4, v0, v1"]);
    let mut st = WaveState::new(256);
    st.set_exec(u64::MAX >> 1);
    for l in 0..64 {
        // High halves set to check they are ignored on input and zeroed on output.
        st.vgpr[0][l] = 0xABCD_0000 | (l as u32 * 1000) & 0xFFFF;
        st.vgpr[1][l] = 0x1234_0000 | (0xFFF0 + l as u32) & 0xFFFF;
        for r in 2..5 {
            st.vgpr[r][l] = 0xDEAD_BEEF;
        }
    }
    run(&p, &mut st);
    for l in 0..64 {
        let (x, y) = ((l as u32 * 1000) as u16, (0xFFF0 + l as u32) as u16);
        let got = [st.vgpr[2][l], st.vgpr[3][l], st.vgpr[4][l]];
        if l < 63 {
            let want = [x.wrapping_add(y) as u32, x.wrapping_sub(y) as u32, y.wrapping_sub(x) as u32];
            assert_eq!(got, want, "lane {l}");
        } else {
            assert_eq!(got, [0xDEAD_BEEF; 3], "inactive lane {l} untouched");
        }
    }
}

#[test]
fn vop3b_carry_to_sgpr_pair_and_64bit_mad() {
    // v_mad_u64_u32 v[10:11], s[20:21], v12, v13, v[14:15]
    let p = program(&[vop3(488, 10, 20, V + 12, V + 13, V + 14, 0)]);
    assert_eq!(disasm(&p), ["v_mad_u64_u32 v[10:11], s[20:21], v12, v13, v[14:15]"]);
    let mut st = WaveState::new(256);
    st.set_exec(0b1011);
    for l in 0..64 {
        st.vgpr[12][l] = u32::MAX;
        st.vgpr[13][l] = if l == 1 { 2 } else { u32::MAX };
        st.vgpr[14][l] = u32::MAX;
        st.vgpr[15][l] = u32::MAX;
    }
    run(&p, &mut st);
    // lane 0: (2^32-1)^2 + (2^64-1) = 0x1_FFFFFFFE_00000000 → low 64 bits, carry 1.
    assert_eq!((st.vgpr[10][0], st.vgpr[11][0]), (0, 0xFFFF_FFFE));
    // lane 1: (2^32-1)*2 + 2^64-1 = 0x1_00000001_FFFFFFFD → carry 1.
    assert_eq!((st.vgpr[10][1], st.vgpr[11][1]), (0xFFFF_FFFD, 1));
    assert_eq!(st.vgpr[10][2], 0, "lane 2 inactive");
    assert_eq!(u64::from(st.sgpr[20]) | u64::from(st.sgpr[21]) << 32, 0b1011);
}

#[test]
fn sixty_four_bit_shifts_mask_the_amount() {
    // v_lshlrev_b64 v[6:7], s0, v[8:9]; v_ashrrev_i64 v[2:3], s1, v[8:9]
    let p = program(&[vop3(655, 6, 0, 0, V + 8, 0, 0), vop3(657, 2, 0, 1, V + 8, 0, 0)]);
    assert_eq!(disasm(&p), ["v_lshlrev_b64 v[6:7], s0, v[8:9]", "v_ashrrev_i64 v[2:3], s1, v[8:9]"]);
    let mut st = WaveState::new(256);
    st.sgpr[0] = 68; // 68 & 63 = 4
    st.sgpr[1] = 65; // 65 & 63 = 1
    st.vgpr[8] = [0x8000_0001; 64];
    st.vgpr[9] = [0x8000_0001; 64];
    run(&p, &mut st);
    // 0x80000001_80000001 << 4 = 0x00000018_00000010 (high bits shifted out).
    assert_eq!((st.vgpr[6][0], st.vgpr[7][0]), (0x10, 0x18));
    // arithmetic >> 1: 0xC0000000_C0000000.
    assert_eq!((st.vgpr[2][5], st.vgpr[3][5]), (0xC000_0000, 0xC000_0000));
}

#[test]
fn bit_manipulation() {
    let p = program(&[
        vop3(493, 1, 0, V + 2, V + 3, V + 4, 0),  // v_perm_b32 v1, v2, v3, v4
        vop3(456, 5, 0, V + 6, ic(4), ic(8), 0),  // v_bfe_u32 v5, v6, 4, 8
        vop3(457, 7, 0, V + 6, ic(28), ic(4), 0), // v_bfe_i32 v7, v6, 28, 4
        vop3(509, 8, 0, V + 3, ic(3), V + 2, 0),  // v_lshl_add_u32 v8, v3, 3, v2
        vop3(451, 9, 0, V + 10, ic(5), ic(7), 0), // v_mad_u32_u24 v9, v10, 5, 7
        vop3(462, 11, 0, V + 2, V + 3, ic(8), 0), // v_alignbit_b32 v11, v2, v3, 8
    ]);
    assert_eq!(
        disasm(&p),
        [
            "v_perm_b32 v1, v2, v3, v4",
            "v_bfe_u32 v5, v6, 4, 8",
            "v_bfe_i32 v7, v6, 28, 4",
            "v_lshl_add_u32 v8, v3, 3, v2",
            "v_mad_u32_u24 v9, v10, 5, 7",
            "v_alignbit_b32 v11, v2, v3, 8",
        ]
    );
    let mut st = WaveState::new(256);
    st.vgpr[2] = [0x1122_3344; 64];
    st.vgpr[3] = [0x5566_7788; 64];
    st.vgpr[4] = [0x0D0C_0700; 64];
    st.vgpr[6] = [0xF0F0_1234; 64];
    st.vgpr[10] = [0x0100_0003; 64];
    run(&p, &mut st);
    // perm: byte0 ← sel 0x00 = src1 byte 0 (0x88), byte1 ← 0x07 = src0 byte 3 (0x11),
    // byte2 ← 0x0C = 0x00, byte3 ← 0x0D = 0xFF.
    assert_eq!(st.vgpr[1][0], 0xFF00_1188);
    assert_eq!(st.vgpr[5][0], 0x23);
    assert_eq!(st.vgpr[7][0], 0xFFFF_FFFF);
    assert_eq!(st.vgpr[8][0], 0x5566_7788u32.wrapping_shl(3).wrapping_add(0x1122_3344));
    assert_eq!(st.vgpr[9][0], 3 * 5 + 7, "only the low 24 bits multiply");
    assert_eq!(st.vgpr[11][0], 0x4455_6677);
}

#[test]
fn compares_cndmask_and_cmpx() {
    let p = program(&[
        vopc(0xcc, ic(10), 0),   // v_cmp_gt_u32_e32 vcc, 10, v0
        vop2(0x00, 3, V + 1, 2), // v_cndmask_b32_e32 v3, v1, v2, vcc
        vopc(0xda, ic(3), 0),    // v_cmpx_eq_u32_e32 vcc, 3, v0 (writes EXEC too)
        vop1(0x01, 4, ic(42)),   // v_mov_b32_e32 v4, 42
    ]);
    assert_eq!(disasm(&p), ["v_cmp_gt_u32_e32 vcc, 10, v0", "v_cndmask_b32_e32 v3, v1, v2, vcc", "v_cmpx_eq_u32_e32 vcc, 3, v0", "v_mov_b32_e32 v4, 42"]);
    let mut st = WaveState::new(256);
    st.set_exec(!(1u64 << 2)); // lane 2 inactive
    for l in 0..64 {
        st.vgpr[0][l] = l as u32;
        st.vgpr[1][l] = 100;
        st.vgpr[2][l] = 200;
    }
    run(&p, &mut st);
    for l in 0..64 {
        let want = if l == 2 {
            0
        } else if l < 10 {
            200
        } else {
            100
        };
        assert_eq!(st.vgpr[3][l], want, "lane {l}");
        assert_eq!(st.vgpr[4][l], if l == 3 { 42 } else { 0 }, "only lane 3 stays active");
    }
    assert_eq!(st.exec(), 1 << 3);
    assert_eq!(st.vcc(), 1 << 3);
}

#[test]
fn lane_access_ops() {
    // v_readfirstlane_b32 s0, v1; v_readlane_b32 s1, v1, 9; v_writelane_b32 v2, s2, 7
    let p = program(&[vop1(0x02, 0, V + 1), vop3(649, 1, 0, V + 1, ic(9), 0, 0), vop3(650, 2, 0, 2, ic(7), 0, 0)]);
    assert_eq!(disasm(&p), ["v_readfirstlane_b32 s0, v1", "v_readlane_b32 s1, v1, 9", "v_writelane_b32 v2, s2, 7"]);
    let mut st = WaveState::new(256);
    st.set_exec(0xFFFF_FFFF_FFFF_FFE0); // first active lane 5
    st.sgpr[2] = 77;
    for l in 0..64 {
        st.vgpr[1][l] = 1000 + l as u32;
    }
    run(&p, &mut st);
    assert_eq!((st.sgpr[0], st.sgpr[1]), (1005, 1009));
    assert_eq!(st.vgpr[2][7], 77, "writelane ignores EXEC");
    assert_eq!(st.vgpr[2][8], 0);
}

#[test]
fn scalar_alu_carries_shifts_and_exec() {
    let p = program(&[
        sop2(0x00, 0, 10, ic(2)),    // s_add_u32 s0, s10, 2
        sop2(0x04, 1, ic(0), ic(0)), // s_addc_u32 s1, 0, 0
        sop2(0x1d, 2, 4, ic(36)),    // s_lshl_b64 s[2:3], s[4:5], 36
        sop2(0x25, 6, 7, 8),         // s_bfe_u32 s6, s7, s8
        sop1(0x11, 9, 4),            // s_ff1_i32_b64 s9, s[4:5]
        sop1(0x0d, 11, EXEC),        // s_bcnt1_i32_b64 s11, exec
        sop1(0x20, 12, 14),          // s_and_saveexec_b64 s[12:13], s[14:15]
    ]);
    assert_eq!(
        disasm(&p),
        [
            "s_add_u32 s0, s10, 2",
            "s_addc_u32 s1, 0, 0",
            "s_lshl_b64 s[2:3], s[4:5], 36",
            "s_bfe_u32 s6, s7, s8",
            "s_ff1_i32_b64 s9, s[4:5]",
            "s_bcnt1_i32_b64 s11, exec",
            "s_and_saveexec_b64 s[12:13], s[14:15]",
        ]
    );
    let mut st = WaveState::new(256);
    st.sgpr[10] = u32::MAX;
    st.sgpr[4] = 0x10; // bits 4, 32 and 40 set
    st.sgpr[5] = 0x0000_0101;
    st.sgpr[7] = 0xABCD_1234;
    st.sgpr[8] = 12 << 16 | 8; // width 12, offset 8
    st.set_exec(0x0000_00FF_0000_000F);
    st.sgpr[14] = 0x3;
    st.sgpr[15] = 0x1;
    run(&p, &mut st);
    assert_eq!((st.sgpr[0], st.sgpr[1]), (1, 1), "carry out of s_add_u32 feeds s_addc_u32");
    // 0x00000101_00000010 << 36: bit 4 → bit 40, bits 32 and 40 shift out of 64 bits.
    assert_eq!((st.sgpr[2], st.sgpr[3]), (0, 0x100));
    assert_eq!(st.sgpr[6], (0xABCD_1234 >> 8) & 0xFFF);
    assert_eq!(st.sgpr[9], 4);
    assert_eq!(st.sgpr[11], 12);
    assert_eq!((st.sgpr[12], st.sgpr[13]), (0xF, 0xFF), "old EXEC saved");
    assert_eq!(st.exec(), 0x0000_0001_0000_0003);
    assert!(st.scc, "SCC = new EXEC != 0");
}

#[test]
fn scalar_loop_with_branches() {
    let p = program(&[
        sop1(0x00, 0, ic(0)),    // s_mov_b32 s0, 0
        sop2(0x00, 0, 0, ic(1)), // s_add_u32 s0, s0, 1
        sopc(0x0a, 0, ic(10)),   // s_cmp_lt_u32 s0, 10
        sopp(0x05, -3),          // s_cbranch_scc1 back to the add
        sop2(0x02, 1, 0, 0),     // s_add_i32 s1, s0, s0
    ]);
    assert_eq!(disasm(&p), ["s_mov_b32 s0, 0", "s_add_u32 s0, s0, 1", "s_cmp_lt_u32 s0, 10", "s_cbranch_scc1 65533", "s_add_i32 s1, s0, s0"]);
    let mut st = WaveState::new(256);
    let mem = DeviceMemory::new();
    let r = run_snippet(&p, &mut st, &mut [], &mem).unwrap();
    assert_eq!((st.sgpr[0], st.sgpr[1]), (10, 20));
    assert_eq!(r.instructions, 1 + 10 * 3 + 1 + 1, "mov, 10 × (add, cmp, branch), add, s_endpgm");
}

#[test]
fn lds_offsets_and_bounds() {
    let p = program(&[
        ds(0x0e, 3 << 8 | 1, 0, 1, 2, 0), // ds_write2_b32 v0, v1, v2 offset0:1 offset1:3
        ds(0x36, 12, 0, 0, 0, 3),         // ds_read_b32 v3, v0 offset:12
        ds(0x76, 4, 0, 0, 0, 4),          // ds_read_b64 v[4:5], v0 offset:4
    ]);
    assert_eq!(disasm(&p), ["ds_write2_b32 v0, v1, v2 offset0:1 offset1:3", "ds_read_b32 v3, v0 offset:12", "ds_read_b64 v[4:5], v0 offset:4"]);
    let mut st = WaveState::new(256);
    st.set_exec(0b11);
    st.vgpr[0][0] = 0;
    st.vgpr[0][1] = 32;
    st.vgpr[1][0] = 11;
    st.vgpr[1][1] = 21;
    st.vgpr[2][0] = 13;
    st.vgpr[2][1] = 23;
    let mem = DeviceMemory::new();
    let mut lds = vec![0u8; 64];
    run_snippet(&p, &mut st, &mut lds, &mem).unwrap();
    // write2 puts v1 at addr + 4·1 and v2 at addr + 4·3.
    assert_eq!((st.vgpr[3][0], st.vgpr[3][1]), (13, 23));
    assert_eq!((st.vgpr[4][0], st.vgpr[5][0]), (11, 0));
    assert_eq!(u32::from_le_bytes(lds[36..40].try_into().unwrap()), 21);
    // Lane 1 at 60 + 12 reads past the 64-byte LDS: a memcheck error naming lane and address.
    st.vgpr[0][1] = 60;
    let e = run_snippet(&p[2..4], &mut st, &mut lds, &mem).unwrap_err();
    match e {
        LaunchError::Memory { lane, addr, space, .. } => assert_eq!((lane, addr, space), (1, 72, "LDS")),
        other => panic!("{other}"),
    }
}

#[test]
#[allow(clippy::identity_op)] // `V + n` spells VGPR operand vn, including v0
fn float_rounding_saturation_and_modifiers() {
    let p = program(&[
        vop3(0x101, 2, 0b10, V + 0, V + 1, 0, 0b01), // v_add_f32_e64 v2, -v0, |v1|
        vop1(0x07, 3, V + 4),                        // v_cvt_u32_f32_e32 v3, v4
        vop1(0x1e, 5, V + 4),                        // v_rndne_f32_e32 v5, v4
        vop1(0x0a, 6, V + 7),                        // v_cvt_f16_f32_e32 v6, v7
        vop2(0x0b, 8, V + 9, 0),                     // v_max_f32_e32 v8, v9, v0
        vop2(0x3b, 10, V + 0, 1),                    // v_fmac_f32_e32 v10, v0, v1
    ]);
    assert_eq!(
        disasm(&p),
        [
            "v_add_f32_e64 v2, -v0, |v1|",
            "v_cvt_u32_f32_e32 v3, v4",
            "v_rndne_f32_e32 v5, v4",
            "v_cvt_f16_f32_e32 v6, v7",
            "v_max_f32_e32 v8, v9, v0",
            "v_fmac_f32_e32 v10, v0, v1",
        ]
    );
    let mut st = WaveState::new(256);
    let inputs = [(-1.5f32, 2.5f32), (5e9, 3.5), (f32::NAN, -0.5), (1.0 / 3.0, 65520.0)];
    for (l, &(a, c)) in inputs.iter().enumerate() {
        st.vgpr[0][l] = 3.0f32.to_bits();
        st.vgpr[1][l] = (-4.0f32).to_bits();
        st.vgpr[4][l] = a.to_bits();
        st.vgpr[7][l] = c.to_bits();
        st.vgpr[9][l] = f32::NAN.to_bits();
        st.vgpr[10][l] = 0.5f32.to_bits();
    }
    run(&p, &mut st);
    let f = |x: u32| f32::from_bits(x);
    assert_eq!(f(st.vgpr[2][0]), 1.0, "-3 + |-4|");
    // Float → u32 saturates; NaN → 0.
    assert_eq!([st.vgpr[3][0], st.vgpr[3][1], st.vgpr[3][2], st.vgpr[3][3]], [0, u32::MAX, 0, 0]);
    // Round half to even: -1.5 → -2.0; 1/3 → 0.0.
    assert_eq!(f(st.vgpr[5][0]), -2.0);
    assert_eq!(f(st.vgpr[5][1]), 5e9);
    assert_eq!(f(st.vgpr[5][3]), 0.0);
    // f16: 2.5 = 0x4100, 3.5 = 0x4300, -0.5 = 0xB800, 65520 rounds up to +inf (0x7C00).
    assert_eq!([st.vgpr[6][0] & 0xffff, st.vgpr[6][1] & 0xffff, st.vgpr[6][2] & 0xffff, st.vgpr[6][3] & 0xffff], [0x4100, 0x4300, 0xB800, 0x7C00]);
    assert_eq!(f(st.vgpr[8][0]), 3.0, "max(NaN, 3) = 3 (IEEE mode)");
    assert_eq!(f(st.vgpr[10][0]), 3.0f32.mul_add(-4.0, 0.5));
}

#[test]
fn accvgprs_live_at_accum_offset() {
    // v_accvgpr_write_b32 a1, v2; v_accvgpr_read_b32 v3, a1
    let p = vec![0xD3D9_0001, 0x1800_0102, 0xD3D8_0003, 0x1800_0101];
    assert_eq!(disasm(&p), ["v_accvgpr_write_b32 a1, v2", "v_accvgpr_read_b32 v3, a1"]);
    let mut st = WaveState::new(128);
    st.vgpr[2] = [0x1234_5678; 64];
    run(&p, &mut st);
    assert_eq!(st.vgpr[128 + 1][0], 0x1234_5678, "a1 is unified register accum_offset + 1");
    assert_eq!(st.vgpr[3][63], 0x1234_5678);
}

#[test]
fn unimplemented_instruction_is_an_error_naming_it() {
    // v_cubeid_f32 v0, v1, v2, v3 — decoded, not executed.
    let p = vop3(452, 0, 0, V + 1, V + 2, V + 3, 0);
    let mut st = WaveState::new(256);
    let mem = DeviceMemory::new();
    let e = run_snippet(&p, &mut st, &mut [], &mem).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("v_cubeid_f32 v0, v1, v2, v3") && msg.contains("pc 0x0") && msg.contains("D1C40000"), "{msg}");
}

#[test]
fn f32_denormal_modes() {
    // v_add_f32_e32 v2, v0, v1 and v_mul_f32_e32 v3, v0, v4 with denormal inputs / results.
    let p = program(&[vop2(0x01, 2, V, 1), vop2(0x05, 3, V, 4)]);
    assert_eq!(disasm(&p), ["v_add_f32_e32 v2, v0, v1", "v_mul_f32_e32 v3, v0, v4"]);
    let tiny = f32::from_bits(0x0000_0400); // denormal
    let run_mode = |mode: u8| {
        let mut st = WaveState::new(256);
        st.float_denorm_mode_32 = mode;
        st.vgpr[0] = [tiny.to_bits(); 64];
        st.vgpr[1] = [0; 64];
        st.vgpr[4] = [0.5f32.to_bits(); 64];
        run(&p, &mut st);
        (st.vgpr[2][0], st.vgpr[3][0])
    };
    // Mode 3 keeps denormals: tiny + 0 = tiny, tiny · 0.5 = 0x200.
    assert_eq!(run_mode(3), (0x400, 0x200));
    // Mode 0 flushes inputs and outputs to zero.
    assert_eq!(run_mode(0), (0, 0));
    // Mode 2 flushes inputs only (same results here); mode 1 flushes outputs only.
    assert_eq!(run_mode(2), (0, 0));
    assert_eq!(run_mode(1), (0, 0));
}

#[test]
fn vgpr_index_mode_offsets_enabled_operands() {
    // s_set_gpr_idx_on s0, gpr_idx(SRC0); v_mov_b32 v1, v2 (reads v2 + M0[7:0]); off; v_mov again.
    let p = program(&[sopc(0x11, 0, 1), vop1(0x01, 1, V + 2), sopp(0x1c, 0), vop1(0x01, 3, V + 2)]);
    assert_eq!(disasm(&p), ["s_set_gpr_idx_on s0, gpr_idx(SRC0)", "v_mov_b32_e32 v1, v2", "s_set_gpr_idx_off", "v_mov_b32_e32 v3, v2"]);
    let mut st = WaveState::new(256);
    st.sgpr[0] = 3;
    for r in 0..8 {
        st.vgpr[r] = [100 + r as u32; 64];
    }
    run(&p, &mut st);
    assert_eq!(st.vgpr[1][0], 105, "v1 = v(2 + 3)");
    assert_eq!(st.vgpr[3][0], 102, "index mode off again");
    assert_eq!(st.sgpr[124] & 0xf0ff, 0x1003, "M0 holds index 3 and mode SRC0");
}

#[test]
fn packed_f16_math() {
    // v_pk_fma_f16 v0, v1, v2, v3 (default op_sel_hi); v_pk_mul_f16 v4, v1, v2 op_sel:[1,0] op_sel_hi:[0,1]
    let fma = vec![0xD38E_0000 | 1 << 14, (V + 1) | (V + 2) << 9 | (V + 3) << 18 | 3 << 27];
    let mul = vec![0xD390_0004 | 1 << 11, (V + 1) | (V + 2) << 9 | 2 << 27];
    let p = program(&[fma, mul]);
    assert_eq!(disasm(&p), ["v_pk_fma_f16 v0, v1, v2, v3", "v_pk_mul_f16 v4, v1, v2 op_sel:[1,0] op_sel_hi:[0,1]"]);
    let mut st = WaveState::new(256);
    // v1 = (lo 1.5, hi -2.0), v2 = (lo 4.0, hi 0.5), v3 = (lo 0.25, hi 1.0) in f16.
    st.vgpr[1] = [0xC000_3E00; 64];
    st.vgpr[2] = [0x3800_4400; 64];
    st.vgpr[3] = [0x3C00_3400; 64];
    run(&p, &mut st);
    // lo = 1.5·4 + 0.25 = 6.25 (0x4640); hi = -2·0.5 + 1 = 0 (0x0000).
    assert_eq!(st.vgpr[0][0], 0x0000_4640);
    // lo = v1.hi · v2.lo = -2·4 = -8 (0xC800); hi = v1.lo · v2.hi = 1.5·0.5 = 0.75 (0x3A00).
    assert_eq!(st.vgpr[4][0], 0x3A00_C800);
}

#[test]
fn scratch_is_per_lane_private_memory() {
    // scratch_store_dword v1, v2, off offset:4 (SVE: VGPR address); scratch_load_dword v3, v1, off offset:4
    let st_w = vec![0xDC70_0000 | 1 << 14 | 1 << 13 | 4, 1 | 2 << 8 | 0x7f << 16];
    let ld_w = vec![0xDC50_0000 | 1 << 14 | 1 << 13 | 4, 1 | 0x7f << 16 | 3 << 24];
    let p = program(&[st_w, ld_w]);
    assert_eq!(disasm(&p), ["scratch_store_dword v1, v2, off offset:4", "scratch_load_dword v3, v1, off offset:4"]);
    let mut st = WaveState::new(256);
    st.private_bytes = 16;
    for l in 0..64 {
        st.vgpr[1][l] = 8; // same private offset in every lane
        st.vgpr[2][l] = 500 + l as u32;
    }
    run(&p, &mut st);
    for l in 0..64 {
        assert_eq!(st.vgpr[3][l], 500 + l as u32, "lane {l} reads its own private dword");
    }
    // Offset 8 + 4 + 4 bytes = 16 fits; 12 + 4 + 4 = 20 > 16 is a memcheck error.
    st.vgpr[1][9] = 12;
    let mem = DeviceMemory::new();
    let e = run_snippet(&p, &mut st, &mut [], &mem).unwrap_err();
    match e {
        LaunchError::Memory { lane, addr, space, .. } => assert_eq!((lane, addr, space), (9, 16, "scratch")),
        other => panic!("{other}"),
    }
}

#[test]
fn d16_loads_and_stores_keep_the_other_half() {
    let p = program(&[
        ds(85, 8, 0, 1, 0, 0),                                            // ds_write_b16_d16_hi v0, v1 offset:8
        ds(90, 8, 0, 0, 0, 2),                                            // ds_read_u16_d16 v2, v0 offset:8
        ds(91, 8, 0, 0, 0, 3),                                            // ds_read_u16_d16_hi v3, v0 offset:8
        vec![0xDC00_0000 | 37 << 18 | 2 << 14, 4 | 0x7f << 16 | 5 << 24], // global_load_short_d16_hi v5, v[4:5]... (v5 is also the address high)
    ]);
    assert_eq!(disasm(&p)[..3], ["ds_write_b16_d16_hi v0, v1 offset:8", "ds_read_u16_d16 v2, v0 offset:8", "ds_read_u16_d16_hi v3, v0 offset:8"]);
    let mem = DeviceMemory::new();
    let g = mem.alloc(8).unwrap();
    mem.write(g, &[0x34, 0x12, 0, 0, 0, 0, 0, 0]).unwrap();
    let mut st = WaveState::new(256);
    st.set_exec(1);
    st.vgpr[0][0] = 0;
    st.vgpr[1][0] = 0xBEEF_0000;
    st.vgpr[2][0] = 0xAAAA_5555;
    st.vgpr[3][0] = 0xAAAA_5555;
    st.vgpr[4][0] = g as u32;
    st.vgpr[5][0] = (g >> 32) as u32;
    let mut lds = vec![0u8; 64];
    run_snippet(&p, &mut st, &mut lds, &mem).unwrap();
    assert_eq!(&lds[8..10], &[0xEF, 0xBE], "the high half of v1 is stored");
    assert_eq!(st.vgpr[2][0], 0xAAAA_BEEF, "d16 load replaces the low half only");
    assert_eq!(st.vgpr[3][0], 0xBEEF_5555, "d16_hi load replaces the high half only");
    assert_eq!(st.vgpr[5][0], 0x1234 << 16 | (g >> 32) as u32 & 0xffff, "global d16_hi");
}

#[test]
fn fma_mix_reads_f16_and_f32_sources() {
    // v_fma_mix_f32 v0, v1, v2, v3 op_sel:[1,0,0] op_sel_hi:[1,1,0]:
    // a = high f16 half of v1, b = low f16 half of v2, c = f32 v3.
    let p = vec![0xD3A0_0000 | 1 << 11, (V + 1) | (V + 2) << 9 | (V + 3) << 18 | 3 << 27];
    assert_eq!(disasm(&p), ["v_fma_mix_f32 v0, v1, v2, v3 op_sel:[1,0,0] op_sel_hi:[1,1,0]"]);
    let mut st = WaveState::new(256);
    st.vgpr[1] = [0x4200_3C00; 64]; // hi = 3.0, lo = 1.0
    st.vgpr[2] = [0x0000_C100; 64]; // lo = -2.5
    st.vgpr[3] = [0.25f32.to_bits(); 64];
    run(&p, &mut st);
    assert_eq!(f32::from_bits(st.vgpr[0][0]), 3.0 * -2.5 + 0.25);
}

#[test]
fn mode_register_controls_denormals() {
    let setreg = vec![0xB000_0000 | 0x14 << 23 | 0x901, 0]; // s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 0
    let getreg = vec![0xB000_0000 | 0x11 << 23 | 5 << 16 | 0x901]; // s_getreg_b32 s5, hwreg(HW_REG_MODE, 4, 2)
    let p = program(&[getreg.clone(), setreg, getreg.clone().iter().map(|w| w & !(5 << 16) | 6 << 16).collect(), vop2(0x01, 2, V, 1)]);
    assert_eq!(
        disasm(&p),
        [
            "s_getreg_b32 s5, hwreg(HW_REG_MODE, 4, 2)",
            "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 0",
            "s_getreg_b32 s6, hwreg(HW_REG_MODE, 4, 2)",
            "v_add_f32_e32 v2, v0, v1"
        ]
    );
    let mut st = WaveState::new(256);
    st.vgpr[0] = [0x0000_0400; 64];
    run(&p, &mut st);
    assert_eq!((st.sgpr[5], st.sgpr[6]), (3, 0), "denorm mode 3 before, 0 after");
    assert_eq!(st.vgpr[2][0], 0, "denormals flushed after the setreg");
    // A round mode other than nearest-even is refused, not silently ignored.
    let p = vec![0xB000_0000 | 0x14 << 23 | 1 | (1 << 11), 1]; // hwreg(HW_REG_MODE, 0, 2), 1
    let mem = DeviceMemory::new();
    let e = run_snippet(&p, &mut WaveState::new(256), &mut [], &mem).unwrap_err();
    assert!(e.to_string().contains("round-to-nearest-even"), "{e}");
}

#[test]
fn loads_to_lds_use_m0_offset_and_lane_slots() {
    // buffer_load_dword v1, s[4:7], 0 offen offset:4 lds; global_load_lds_dword v[2:3], off offset:4
    let p = vec![0xE051_1004, 0x8001_0001, 0xDCA8_8004, 0x007F_0002];
    assert_eq!(disasm(&p), ["buffer_load_dword v1, s[4:7], 0 offen offset:4 lds", "global_load_lds_dword v[2:3], off offset:4"]);
    let mem = DeviceMemory::new();
    let src: Vec<u8> = (0..64u32).flat_map(|i| (1000 + i).to_le_bytes()).collect();
    let g = mem.alloc(256).unwrap();
    mem.write(g, &src).unwrap();
    let mut st = WaveState::new(256);
    st.set_exec(0b1111);
    // V#: base g, num_records 12 bytes: lane 2's dword at 8 + 4 = 12.. is out of range → 0.
    st.sgpr[4] = g as u32;
    st.sgpr[5] = (g >> 32) as u32;
    st.sgpr[6] = 12;
    st.sgpr[7] = 0x0002_0000;
    st.sgpr[124] = 16; // M0: LDS base for the buffer load
    for l in 0..4 {
        st.vgpr[1][l] = 4 * l as u32;
        let a = g + 8 * l as u64;
        st.vgpr[2][l] = a as u32;
        st.vgpr[3][l] = (a >> 32) as u32;
    }
    let mut lds = vec![0xffu8; 128];
    // First instruction only (M0 = 16), then the global one with M0 = 64.
    run_snippet(&p[..2], &mut st, &mut lds, &mem).unwrap();
    let dw = |lds: &[u8], o: usize| u32::from_le_bytes(lds[o..o + 4].try_into().unwrap());
    // lane l: memory offset 4l + 4 → values 1001, 1002, then out of range (0); LDS 16 + 4 + 4l.
    assert_eq!([dw(&lds, 20), dw(&lds, 24), dw(&lds, 28), dw(&lds, 32)], [1001, 1002, 0, 0]);
    st.sgpr[124] = 64;
    run_snippet(&p[2..], &mut st, &mut lds, &mem).unwrap();
    // lane l: memory g + 8l + 4 → 1000 + 2l + 1; LDS 64 + 4 + 4l.
    assert_eq!([dw(&lds, 68), dw(&lds, 72), dw(&lds, 76), dw(&lds, 80)], [1001, 1003, 1005, 1007]);
}

/// The MUBUF range-checking rule (emu/src/exec/buffer.rs) case by case, with hand-computed
/// expectations: `buffer_load_dword v3, <vaddr>, s[4:7], s8 [offen|idxen] offset:<imm>` over a
/// 64-dword allocation holding 1000 + i at dword i.
#[test]
fn buffer_range_rules() {
    let mem = DeviceMemory::new();
    let src: Vec<u8> = (0..64u32).flat_map(|i| (1000 + i).to_le_bytes()).collect();
    let g = mem.alloc(256).unwrap();
    mem.write(g, &src).unwrap();
    // word0: 0xE0500000 (buffer_load_dword) | offen << 12 | idxen << 13 | offset; word1: soffset
    // s8, srsrc s[4:7], vdata v3, vaddr v1.
    let load = |offen: bool, idxen: bool, imm: u32| vec![0xE050_0000 | u32::from(offen) << 12 | u32::from(idxen) << 13 | imm, 0x0801_0301];
    let run_case = |code: &[u32], stride: u32, num: u32, word3: u32, soff: u32, v1: [u32; 4], v2: [u32; 4]| -> Result<[u32; 4], String> {
        let mut st = WaveState::new(256);
        st.set_exec(0b1111);
        st.sgpr[4] = g as u32;
        st.sgpr[5] = (g >> 32) as u32 | stride << 16;
        st.sgpr[6] = num;
        st.sgpr[7] = word3;
        st.sgpr[8] = soff;
        for l in 0..4 {
            st.vgpr[1][l] = v1[l];
            st.vgpr[2][l] = v2[l];
            st.vgpr[3][l] = 0xdead;
        }
        run_snippet(code, &mut st, &mut [], &mem).map_err(|e| e.to_string())?;
        Ok([st.vgpr[3][0], st.vgpr[3][1], st.vgpr[3][2], st.vgpr[3][3]])
    };
    let d = |i: u32| 1000 + i;
    // Raw (stride 0): offset = v1 + imm, in range while offset + 4 ≤ num_records (12 bytes).
    assert_eq!(run_case(&load(true, false, 0), 0, 12, 0x0002_0000, 0, [0, 4, 8, 12], [0; 4]), Ok([d(0), d(1), d(2), 0]));
    // The instruction offset is range checked too: 4 + 8 = 12 is out.
    assert_eq!(run_case(&load(true, false, 4), 0, 12, 0x0002_0000, 0, [0, 4, 8, 12], [0; 4]), Ok([d(1), d(2), 0, 0]));
    // Stride ≠ 0 without idxen is still a raw buffer: the stride does not limit the offset
    // (AMD's BpreShuffle kernels: stride 4, num_records 2^31, offen).
    assert_eq!(run_case(&load(true, false, 0), 4, 12, 0x0002_0000, 0, [0, 4, 8, 12], [0; 4]), Ok([d(0), d(1), d(2), 0]));
    // The SGPR offset moves the address but is not range checked: num_records 4 bytes, soffset 8.
    assert_eq!(run_case(&load(true, false, 0), 0, 4, 0x0002_0000, 8, [0, 4, 8, 12], [0; 4]), Ok([d(2), 0, 0, 0]));
    // Structured (idxen, no offen): v1 is the index, address = base + stride · index + imm,
    // in range while index < num_records (2 records of 8 bytes), whatever the byte offset.
    assert_eq!(run_case(&load(false, true, 4), 8, 2, 0x0002_0000, 0, [0, 1, 2, 1], [0; 4]), Ok([d(1), d(3), 0, d(3)]));
    // Structured with offen: v1 = index, v2 = offset; an offset past the stride is not checked.
    assert_eq!(run_case(&load(true, true, 0), 8, 3, 0x0002_0000, 0, [0, 1, 2, 3], [0, 4, 16, 0]), Ok([d(0), d(3), d(8), 0]));
    // add_tid_enable (dword3 bit 23): index = lane (+ v1 with idxen), stride 4 (data_format 0),
    // num_records 3 records: lanes 0..2 read dwords 0..2, lane 3 is out of range.
    assert_eq!(run_case(&load(false, false, 0), 4, 3, 1 << 23, 0, [0; 4], [0; 4]), Ok([d(0), d(1), d(2), 0]));
    assert_eq!(run_case(&load(false, true, 0), 4, 3, 1 << 23, 0, [1, 1, 1, 1], [0; 4]), Ok([d(1), d(2), 0, 0]));
    // swizzle_enable (bit 63 of the V#) is refused, not executed with a wrong address.
    let e = run_case(&load(true, false, 0), 4 | 1 << 15, 12, 0x0002_0000, 0, [0; 4], [0; 4]).unwrap_err();
    assert!(e.contains("not implemented") && e.contains("swizzle"), "{e}");
    // dwordx2 straddling num_records: per-dword range check (first dword in, second out).
    // buffer_load_dwordx2 v[3:4], v1, s[4:7], s8 offen (op 0x15).
    let x2 = vec![0xE054_1000, 0x0801_0301];
    let mut st = WaveState::new(256);
    st.set_exec(1);
    st.sgpr[4] = g as u32;
    st.sgpr[5] = (g >> 32) as u32;
    st.sgpr[6] = 12;
    st.sgpr[7] = 0x0002_0000;
    st.vgpr[1][0] = 8;
    st.vgpr[3][0] = 7;
    st.vgpr[4][0] = 7;
    run_snippet(&x2, &mut st, &mut [], &mem).unwrap();
    assert_eq!((st.vgpr[3][0], st.vgpr[4][0]), (d(2), 0));
}

/// `global_atomic_pk_add_bf16` adds two packed bf16 pairs half by half, rounding to nearest
/// even (AMD's BpreShuffle kernels accumulate split-K partial sums with it).
#[test]
fn global_atomic_pk_add_bf16_rounds_each_half_to_nearest() {
    // global_atomic_pk_add_bf16 v[2:3], v1, off
    let p = vec![0xDD48_8000, 0x007F_0102];
    assert_eq!(disasm(&p), ["global_atomic_pk_add_bf16 v[2:3], v1, off"]);
    let mem = DeviceMemory::new();
    let g = mem.alloc(8).unwrap();
    // lo: 1.0 (0x3F80) + 3·2^-9 (0x3BC0) = 1.005859…, between 1.0 and 1.0078125: nearest is
    // 1.0078125 (0x3F81; truncation would give 0x3F80). hi: -2.5 (0xC020) + 0.5 (0x3F00) = -2.0.
    mem.write(g, &0xC020_3F80u32.to_le_bytes()).unwrap();
    let mut st = WaveState::new(256);
    st.set_exec(1);
    st.vgpr[1][0] = 0x3F00_3BC0;
    st.vgpr[2][0] = g as u32;
    st.vgpr[3][0] = (g >> 32) as u32;
    run_snippet(&p, &mut st, &mut [], &mem).unwrap();
    let mut out = [0u8; 4];
    mem.read(g, &mut out).unwrap();
    assert_eq!(u32::from_le_bytes(out), 0xC000_3F81);
}
