//! Hand-checked unit tests, through `exec::run_snippet`, of the instructions AMD's I8gemm code
//! objects need beyond the FP8 peers (`peers_i8.rs` runs the kernels themselves):
//! `v_mfma_i32_16x16x32_i8` (CDNA3 ISA opcode 87; layout from AMD's matrix instruction
//! calculator, `-a cdna3`), DPP `row_newbcast` (gfx90a+ dpp_ctrl 0x150 + n: "Broadcast a thread
//! within a row to the whole row", LLVM `AMDGPUModifierSyntax.rst`) and VGPR index mode
//! (`s_set_gpr_idx_on`: M0[7:0] is added to the VGPR number of the operands M0[15:12] selects,
//! CDNA3 ISA "VGPR Indexing"), on the encodings the kernels use.

#[path = "common/snippet.rs"]
mod snippet;
use snippet::{disasm, run};

use amdgpu_emu::exec::WaveState;

const V: u32 = 256;

/// `v_mov_b32_dpp vdst, vsrc row_newbcast:n row_mask bank_mask:0xf`.
fn mov_newbcast(vdst: u32, vsrc: u32, n: u32, row_mask: u32) -> Vec<u32> {
    vec![0x7E00_0000 | vdst << 17 | 1 << 9 | 0xFA, row_mask << 28 | 0xF << 24 | (0x150 + n) << 8 | vsrc]
}

#[test]
fn row_newbcast_broadcasts_one_lane_per_row() {
    // The kernels' own word: v_mov_b32_dpp v152, v130 row_newbcast:0 (0x7F3002FA 0xFF015082).
    assert_eq!(disasm(&[0x7F30_02FA, 0xFF01_5082]), ["v_mov_b32_dpp v152, v130 row_newbcast:0 row_mask:0xf bank_mask:0xf"]);
    let p = [mov_newbcast(2, 1, 5, 0xF), mov_newbcast(3, 1, 15, 0x5)].concat();
    assert_eq!(
        disasm(&p),
        ["v_mov_b32_dpp v2, v1 row_newbcast:5 row_mask:0xf bank_mask:0xf", "v_mov_b32_dpp v3, v1 row_newbcast:15 row_mask:0x5 bank_mask:0xf"]
    );
    let mut st = WaveState::new(256);
    for l in 0..64 {
        st.vgpr[1][l] = 1000 + l as u32;
        st.vgpr[3][l] = 7;
    }
    run(&p, &mut st);
    for l in 0..64 {
        let row = l / 16;
        assert_eq!(st.vgpr[2][l], 1000 + (16 * row + 5) as u32, "lane {l}");
        // row_mask 0x5: rows 0 and 2 written, rows 1 and 3 keep their value.
        let want3 = if row % 2 == 0 { 1000 + (16 * row + 15) as u32 } else { 7 };
        assert_eq!(st.vgpr[3][l], want3, "lane {l}");
    }
}

#[test]
fn mfma_i32_16x16x32_i8_is_exact() {
    // The kernels' encoding with A/B from AccVGPRs: v_mfma_i32_16x16x32_i8 v[30:33], a[0:1],
    // a[48:49], v[30:33] (0xD3D7001E 0x1C7A6100).
    assert_eq!(disasm(&[0xD3D7_001E, 0x1C7A_6100]), ["v_mfma_i32_16x16x32_i8 v[30:33], a[0:1], a[48:49], v[30:33]"]);
    // Same with VGPR sources: v[10:13] = v[2:3] · v[4:5] + v[10:13].
    let p = [0xD3D7_000A, (V + 2) | (V + 4) << 9 | (V + 10) << 18];
    assert_eq!(disasm(&p), ["v_mfma_i32_16x16x32_i8 v[10:13], v[2:3], v[4:5], v[10:13]"]);
    // A[i][k] = byte k%8 of lane 16·⌊k/8⌋ + i; B[k][j] = byte k%8 of lane 16·⌊k/8⌋ + j.
    let a = |i: usize, k: usize| ((i * 37 + k * 11) % 256) as u8 as i8;
    let b = |k: usize, j: usize| ((k * 53 + j * 29 + 128) % 256) as u8 as i8;
    let mut st = WaveState::new(256);
    for l in 0..64 {
        let (row, k0) = (l % 16, 8 * (l / 16));
        let pa = (0..8).fold(0u64, |w, e| w | u64::from(a(row, k0 + e) as u8) << (8 * e));
        let pb = (0..8).fold(0u64, |w, e| w | u64::from(b(k0 + e, row) as u8) << (8 * e));
        st.vgpr[2][l] = pa as u32;
        st.vgpr[3][l] = (pa >> 32) as u32;
        st.vgpr[4][l] = pb as u32;
        st.vgpr[5][l] = (pb >> 32) as u32;
        for r in 0..4 {
            st.vgpr[10 + r][l] = (-1_000_000 + (l * 4 + r) as i32) as u32;
        }
    }
    run(&p, &mut st);
    for l in 0..64 {
        for r in 0..4 {
            let (i, j) = (4 * (l / 16) + r, l % 16);
            let dot: i32 = (0..32).map(|k| i32::from(a(i, k)) * i32::from(b(k, j))).sum();
            assert_eq!(st.vgpr[10 + r][l] as i32, -1_000_000 + (l * 4 + r) as i32 + dot, "D[{i}][{j}] (lane {l}, reg {r})");
        }
    }
}

#[test]
fn gpr_index_mode_offsets_the_selected_operands() {
    let p = [
        vec![0xBE80_0000 | 65 << 16 | (128 + 2)],                // s_mov_b32 s65, 2
        vec![0xBF11_0141],                                       // s_set_gpr_idx_on s65, gpr_idx(SRC0)  (the kernels' word)
        vec![0x7E00_0000 | 20 << 17 | 5 << 9 | (V + 1)],         // v_cvt_f32_i32 v20, v1 -> reads v3
        vec![0xD3B1_4016, 0x1800_0000 | (V + 2) | (V + 8) << 9], // v_pk_mul_f32 v[22:23], v[2:3] -> v[4:5], v[8:9]
        vec![0xBF9C_0000],                                       // s_set_gpr_idx_off
        vec![0x7E00_0000 | 24 << 17 | 5 << 9 | (V + 1)],         // v_cvt_f32_i32 v24, v1 (no index)
    ]
    .concat();
    assert_eq!(
        disasm(&p),
        [
            "s_mov_b32 s65, 2",
            "s_set_gpr_idx_on s65, gpr_idx(SRC0)",
            "v_cvt_f32_i32_e32 v20, v1",
            "v_pk_mul_f32 v[22:23], v[2:3], v[8:9]",
            "s_set_gpr_idx_off",
            "v_cvt_f32_i32_e32 v24, v1",
        ]
    );
    let mut st = WaveState::new(256);
    for l in 0..64 {
        st.vgpr[1][l] = (-(l as i32)) as u32;
        st.vgpr[3][l] = 16_777_217 + l as u32; // rounds to nearest even in f32
        st.vgpr[4][l] = (1.5f32 + l as f32).to_bits();
        st.vgpr[5][l] = (-2.0f32).to_bits();
        st.vgpr[2][l] = 99f32.to_bits();
        st.vgpr[8][l] = 3f32.to_bits();
        st.vgpr[9][l] = 0.25f32.to_bits();
    }
    run(&p, &mut st);
    for l in 0..64 {
        assert_eq!(f32::from_bits(st.vgpr[20][l]), (16_777_217 + l as i32) as f32, "lane {l}: v_cvt reads v1 + 2 = v3");
        assert_eq!(f32::from_bits(st.vgpr[22][l]), (1.5 + l as f32) * 3.0, "lane {l}: pk_mul src0 v[2:3] + 2 = v[4:5]");
        assert_eq!(f32::from_bits(st.vgpr[23][l]), -0.5, "lane {l}");
        assert_eq!(f32::from_bits(st.vgpr[24][l]), -(l as f32), "lane {l}: index mode off");
    }
}
