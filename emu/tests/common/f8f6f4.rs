//! gfx950 f8f6f4 MFMA operand layouts for tests: the formats' exact values and which lane and
//! element hold `A[i][k]` / `B[k][j]` (AMD ROCm blog "Matrix Core Programming on AMD CDNA3 and
//! CDNA4 architecture", §5.4 / §5.5), stated here independently of the emulator.
#![allow(dead_code)]

/// `(value, encoding)` pairs of each f8f6f4 operand format (OCP FP8 E4M3FN, BF8 E5M2, MX FP6
/// E2M3 / BF6 E3M2 / FP4 E2M1, in the `cbsz`/`blgp` order 0..=4), all exactly representable.
pub fn codes(fmt: u32) -> &'static [(f64, u32)] {
    match fmt {
        0 => &[(1.0, 0x38), (2.0, 0x40), (-1.0, 0xB8), (0.5, 0x30), (1.5, 0x3C), (-3.0, 0xC4), (0.0, 0x00)],
        1 => &[(1.0, 0x3C), (2.0, 0x40), (-1.0, 0xBC), (0.5, 0x38), (1.5, 0x3E), (-3.0, 0xC2), (0.0, 0x00)],
        2 => &[(1.0, 0x08), (2.0, 0x10), (-1.0, 0x28), (0.5, 0x04), (1.5, 0x0C), (-3.0, 0x34), (0.0, 0x00)],
        3 => &[(1.0, 0x0C), (2.0, 0x10), (-1.0, 0x2C), (0.5, 0x08), (1.5, 0x0E), (-3.0, 0x32), (0.0, 0x00)],
        4 => &[(1.0, 0x2), (2.0, 0x4), (-1.0, 0xA), (0.5, 0x1), (1.5, 0x3), (-3.0, 0xD), (0.0, 0x0)],
        _ => unreachable!(),
    }
}

/// Lane group and element holding logical `k` of an `m`×`m` f8f6f4 operand in format `fmt`:
/// FP8/BF8 split K in two halves of 16·G (G = 64/m lane groups), 16 consecutive k per lane per
/// half; FP6/FP4 hold 32 consecutive k per lane.
pub fn holder(fmt: u32, m: usize, k: usize) -> (usize, usize) {
    let groups = 64 / m;
    if fmt <= 1 {
        let half = k / (16 * groups);
        let r = k % (16 * groups);
        (r / 16, 16 * half + r % 16)
    } else {
        (k / 32, k % 32)
    }
}

/// Each lane's operand VGPRs (8 slots; FP6 uses 6, FP4 4) holding `x(row, k)` (row = i of A or
/// j of B) in format `fmt` for an `m`×`m` instruction.
pub fn pack_lanes(fmt: u32, m: usize, x: &dyn Fn(usize, usize) -> u32) -> [[u32; 8]; 64] {
    let kdim = 2048 / m;
    let bits = [8usize, 8, 6, 6, 4][fmt as usize];
    let mut lanes = [[0u32; 8]; 64];
    for row in 0..m {
        for k in 0..kdim {
            let (g, e) = holder(fmt, m, k);
            let lane = row + m * g;
            let v = u64::from(x(row, k)) << (e * bits % 32);
            let w = e * bits / 32;
            lanes[lane][w] |= v as u32;
            if e * bits % 32 + bits > 32 {
                lanes[lane][w + 1] |= (v >> 32) as u32;
            }
        }
    }
    lanes
}

/// Register and lane of `D[i][j]` for an `m`×`m` result.
pub fn d_pos(m: usize, i: usize, j: usize) -> (usize, usize) {
    if m == 16 { (i % 4, 16 * (i / 4) + j) } else { (4 * (i / 8) + i % 4, 32 * ((i / 4) % 2) + j) }
}
