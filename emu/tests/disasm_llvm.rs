//! The disassembler against the independent oracle: every instruction of every kernel must print
//! exactly as the toolchain's `llvm-objdump -d --mcpu=gfx942` prints it (text before `//`).

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

/// `pc -> text` as llvm-objdump prints it.
fn llvm_listing(path: &Path) -> BTreeMap<u64, String> {
    let out = Command::new(objdump()).args(["-d", "--mcpu=gfx942"]).arg(path).output().expect("run llvm-objdump");
    assert!(out.status.success(), "llvm-objdump failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut m = BTreeMap::new();
    for line in String::from_utf8(out.stdout).expect("utf8").lines() {
        let Some((ins, comment)) = line.rsplit_once("// ") else { continue };
        let Some((addr, _)) = comment.split_once(':') else { continue };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else { continue };
        m.insert(addr, ins.trim().to_string());
    }
    m
}

/// Compares every kernel's disassembly; returns the number of instructions compared.
pub fn compare(path: &Path) -> usize {
    let bytes = std::fs::read(path).expect("read code object");
    let co = CodeObject::parse(&bytes).expect("parse code object");
    let llvm = llvm_listing(path);
    let mut n = 0;
    let mut bad = Vec::new();
    for k in co.kernels() {
        for (pc, text) in disassemble(&co, k).unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
            let want = llvm.get(&pc).unwrap_or_else(|| panic!("llvm-objdump printed nothing at {pc:#x}"));
            if *want != text {
                bad.push(format!("{}+{pc:#x}: ours `{text}` llvm `{want}`", k.name));
            }
            n += 1;
        }
    }
    assert!(bad.is_empty(), "{} of {n} instructions differ:\n{}", bad.len(), bad.join("\n"));
    n
}

#[test]
fn fixture_matches_llvm_objdump() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/classes.hsaco");
    let n = compare(&p);
    assert!(n > 200, "only {n} instructions");
}

#[test]
fn shipped_code_objects_match_llvm_objdump() {
    // The build directory of the host crate (present once `cargo build -p fp8gemm` ran).
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/build");
    let Ok(dirs) = std::fs::read_dir(&target) else { return };
    for d in dirs.flatten() {
        let p = d.path().join("out/gfx942.hsaco");
        if d.file_name().to_string_lossy().starts_with("fp8gemm-") && p.exists() {
            compare(&p);
        }
    }
}

/// Every (encoding, opcode) the decoder knows, as probed from llvm-objdump (one instruction per
/// 16-byte slot; `emu/tests/data/objdump_probe.py`), prints exactly as LLVM printed it.
#[test]
fn every_probed_opcode_prints_like_llvm() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/llvm_probe.txt")).unwrap();
    let mut n = 0;
    let mut bad = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (words, want) = line.split_once('\t').unwrap();
        let bytes: Vec<u8> = words.split(' ').flat_map(|w| u32::from_str_radix(w, 16).unwrap().to_le_bytes()).collect();
        match amdgpu_emu::decode::decode_one(&bytes, 0, "probe") {
            Ok(inst) => {
                let got = amdgpu_emu::disasm::format_inst(&inst);
                // Not modelled: s_sendmsg's symbolic message names (compute kernels send none)
                // and LLVM's "/*Invalid register*/" remarks on illegal readlane/writelane
                // encodings (lane select in a VGPR).
                let excused = want.starts_with("s_sendmsg") || want.contains("/*Invalid register");
                if got != want && !excused {
                    bad.push(format!("{words}: ours `{got}` llvm `{want}`"));
                }
            }
            Err(e) => bad.push(format!("{words}: {e} (llvm `{want}`)")),
        }
        n += 1;
    }
    assert!(n > 5000, "{n} probes");
    assert!(bad.is_empty(), "{} of {n} probes differ:\n{}", bad.len(), bad.join("\n"));
}
