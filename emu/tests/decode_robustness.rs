//! Arbitrary bytes never panic the decoder, the printer or the single-wave executor: they decode
//! to an instruction or a typed error, and execution ends in a result or a typed error.

use amdgpu_emu::decode::decode_one;
use amdgpu_emu::disasm::format_inst;
use amdgpu_emu::exec::{WaveState, run_snippet};
use amdgpu_emu::memory::DeviceMemory;

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 32) as u32
    }
}

#[test]
fn random_words_decode_print_or_error() {
    let mut rng = Lcg(7);
    let mut decoded = 0;
    for _ in 0..200_000 {
        let words = [rng.next(), rng.next(), rng.next()];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let cut = (rng.next() % 13) as usize;
        match decode_one(&bytes[..cut], 0x100, "fuzz") {
            Ok(i) => {
                assert!(usize::from(i.len) <= cut);
                let text = format_inst(&i);
                assert!(!text.is_empty());
                decoded += 1;
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    assert!(decoded > 10_000, "{decoded}");
}

#[test]
fn random_straight_line_vector_code_runs_or_errors() {
    // Random VALU, LDS, memory and scalar words (no branches, so every run terminates) on one
    // wave; random addresses end in memcheck errors, never in a panic.
    let mut rng = Lcg(11);
    let mem = DeviceMemory::new();
    for _ in 0..30_000 {
        let mut words = Vec::new();
        for _ in 0..4 {
            match rng.next() % 8 {
                0 => words.push(rng.next() & 0x7fff_ffff),                                 // VOP2 / VOP1 / VOPC
                1 => words.extend([0xD000_0000 | (rng.next() & 0x03ff_ffff), rng.next()]), // VOP3
                2 => words.extend([0xD380_0000 | (rng.next() & 0x007f_ffff), rng.next()]), // VOP3P
                3 => words.extend([0xD800_0000 | (rng.next() & 0x03ff_ffff), rng.next()]), // DS
                4 => words.extend([0xDC00_0000 | (rng.next() & 0x03ff_ffff), rng.next()]), // FLAT/GLOBAL/SCRATCH
                5 => words.extend([0xE000_0000 | (rng.next() & 0x03ff_ffff), rng.next()]), // MUBUF
                6 => words.extend([0xC000_0000 | (rng.next() & 0x03ff_ffff), rng.next()]), // SMEM
                _ => {
                    // SOP2 / SOPC / SOP1 without the program-counter operations.
                    let w = 0x8000_0000 | (rng.next() & 0x3fff_ffff);
                    let sop1_pc = w >> 23 == 0x17D && matches!((w >> 8) & 0xff, 0x1c..=0x1f | 0x2e);
                    if w >> 23 != 0x17F && w >> 28 != 0xB && !sop1_pc {
                        words.push(w);
                    }
                }
            }
        }
        let mut st = WaveState::new(256);
        let mut lds = vec![0u8; 64];
        let _ = run_snippet(&words, &mut st, &mut lds, &mem);
    }
}
