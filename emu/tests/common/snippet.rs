//! Running and printing hand-encoded instruction sequences (`exec::run_snippet`): shared by the
//! instruction tests.
#![allow(dead_code)]

use amdgpu_emu::decode::decode_one;
use amdgpu_emu::disasm::format_inst;
use amdgpu_emu::exec::{WaveState, run_snippet};
use amdgpu_emu::memory::DeviceMemory;

/// The disassembly of `words`, one line per instruction.
pub fn disasm(words: &[u32]) -> Vec<String> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut off = 0;
    let mut out = Vec::new();
    while off < bytes.len() {
        let i = decode_one(&bytes[off..], off as u64, "t").unwrap();
        out.push(format_inst(&i));
        off += usize::from(i.len);
    }
    out
}

/// Runs `words` on one wave with 256 bytes of LDS and no device memory; panics on an error.
pub fn run(words: &[u32], st: &mut WaveState) {
    let mem = DeviceMemory::new();
    let mut lds = vec![0u8; 256];
    run_snippet(words, st, &mut lds, &mem).unwrap_or_else(|e| panic!("{e}"));
}
