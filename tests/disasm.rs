//! The emulator's disassembler against the toolchain's `llvm-objdump -d --mcpu=<target>`: every
//! instruction of every kernel in the embedded gfx942 and gfx950 code objects, and in the emulator's
//! instruction-class fixture, must print identically (mnemonic and operands, text before `//`).
//! The comparison is the emulator tests' own (`emu/tests/common/objdump.rs`).

use std::path::Path;

#[path = "../emu/tests/common/objdump.rs"]
mod objdump;

#[test]
fn embedded_gfx942_code_object_disassembles_like_llvm_objdump() {
    let dir = std::env::temp_dir().join(format!("fp8gemm-disasm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gfx942.hsaco");
    std::fs::write(&path, fp8gemm::codeobj::GFX942).unwrap();
    let n = objdump::compare(&path);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(n > 100, "only {n} instructions");
}

#[test]
fn embedded_gfx950_code_object_disassembles_like_llvm_objdump() {
    // The gfx950 object: CDNA4 MFMAs (`v_mfma_f32_16x16x128_f8f6f4`), `v_bitop3_b32`, OCP FP8.
    let dir = std::env::temp_dir().join(format!("fp8gemm-disasm950-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gfx950.hsaco");
    std::fs::write(&path, fp8gemm::codeobj::GFX950).unwrap();
    let n = objdump::compare(&path);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(n > 100, "only {n} instructions");
}

#[test]
fn instruction_class_fixture_disassembles_like_llvm_objdump() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("emu/tests/data/classes.hsaco");
    let n = objdump::compare(&path);
    assert!(n > 300, "only {n} instructions");
}
