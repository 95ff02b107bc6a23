//! The emulator's disassembler against the toolchain's `llvm-objdump -d --mcpu=gfx942`: every
//! instruction of every kernel in the embedded gfx942 code object, and in the emulator's
//! instruction-class fixture, must print identically (mnemonic and operands, text before `//`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use amdgpu_emu::disasm::disassemble;
use amdgpu_emu::loader::CodeObject;

fn objdump() -> PathBuf {
    let out = Command::new("rustc").args(["--print", "sysroot"]).output().expect("rustc --print sysroot");
    let sysroot = String::from_utf8(out.stdout).expect("utf8").trim().to_string();
    Path::new(&sysroot).join("lib/rustlib/x86_64-unknown-linux-gnu/bin/llvm-objdump")
}

fn llvm_listing(path: &Path) -> BTreeMap<u64, String> {
    let out = Command::new(objdump()).args(["-d", "--mcpu=gfx942"]).arg(path).output().expect("run llvm-objdump");
    assert!(out.status.success(), "llvm-objdump: {}", String::from_utf8_lossy(&out.stderr));
    let mut m = BTreeMap::new();
    for line in String::from_utf8(out.stdout).expect("utf8").lines() {
        let Some((ins, comment)) = line.rsplit_once("// ") else { continue };
        let Some((addr, _)) = comment.split_once(':') else { continue };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else { continue };
        m.insert(addr, ins.trim().to_string());
    }
    m
}

fn compare(bytes: &[u8], path: &Path) -> usize {
    let co = CodeObject::parse(bytes).expect("parse code object");
    let llvm = llvm_listing(path);
    let (mut n, mut bad) = (0, Vec::new());
    for k in co.kernels() {
        for (pc, text) in disassemble(&co, k).unwrap_or_else(|e| panic!("{e}")) {
            let want = llvm.get(&pc).unwrap_or_else(|| panic!("{}: llvm-objdump printed nothing at {pc:#x}", k.name));
            if *want != text {
                bad.push(format!("{} {pc:#x}: ours `{text}` llvm `{want}`", k.name));
            }
            n += 1;
        }
    }
    assert!(bad.is_empty(), "{} of {n} instructions differ:\n{}", bad.len(), bad.join("\n"));
    n
}

#[test]
fn embedded_gfx942_code_object_disassembles_like_llvm_objdump() {
    let dir = std::env::temp_dir().join(format!("fp8gemm-disasm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gfx942.hsaco");
    std::fs::write(&path, fp8gemm::codeobj::GFX942).unwrap();
    let n = compare(fp8gemm::codeobj::GFX942, &path);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(n > 100, "only {n} instructions");
}

#[test]
fn instruction_class_fixture_disassembles_like_llvm_objdump() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("emu/tests/data/classes.hsaco");
    let n = compare(&std::fs::read(&path).unwrap(), &path);
    assert!(n > 300, "only {n} instructions");
}
