//! The toolchain's `llvm-objdump` as the disassembler's oracle: every instruction of every kernel
//! of a code object must print exactly as `llvm-objdump -d --mcpu=<its target>` prints it.
#![allow(dead_code)]

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
fn llvm_listing(path: &Path, mcpu: &str) -> BTreeMap<u64, String> {
    let out = Command::new(objdump()).args(["-d", &format!("--mcpu={mcpu}")]).arg(path).output().expect("run llvm-objdump");
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
    let llvm = llvm_listing(path, co.target().name());
    let mut n = 0;
    let mut bad = Vec::new();
    let mut names = std::collections::HashMap::<String, u64>::new();
    for k in co.kernels() {
        for (pc, text) in disassemble(&co, k).unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
            let want = llvm.get(&pc).unwrap_or_else(|| panic!("llvm-objdump printed nothing at {pc:#x}"));
            // For some objects (AMD's peers) llvm-objdump names branch targets: `label_XXXX` (the
            // target's dword index in .text) or an ELF symbol (`L_end0`) instead of the offset.
            // Compare the mnemonic and check that each name stands for one target address.
            let named = want.rsplit_once(' ').filter(|(m, op)| m.starts_with("s_") && m.contains("branch") && op.parse::<i64>().is_err());
            if let Some((mn, name)) = named {
                let ours = text.rsplit_once(' ').and_then(|(m, off)| Some((m, off.parse::<u16>().ok()? as i16)));
                match ours {
                    Some((m, off)) if m == mn => {
                        let target = (pc as i64 + 4 + 4 * i64::from(off)) as u64;
                        if let Some(&t) = names.get(name)
                            && t != target
                        {
                            bad.push(format!("{}+{pc:#x}: `{name}` is {t:#x} elsewhere, {target:#x} here", k.name));
                        }
                        names.insert(name.to_string(), target);
                    }
                    _ => bad.push(format!("{}+{pc:#x}: ours `{text}` llvm `{want}`", k.name)),
                }
                n += 1;
                continue;
            }
            if *want != text {
                bad.push(format!("{}+{pc:#x}: ours `{text}` llvm `{want}`", k.name));
            }
            n += 1;
        }
    }
    assert!(bad.is_empty(), "{} of {n} instructions differ:\n{}", bad.len(), bad.join("\n"));
    // Labels are dword indices from one origin: every label's target minus 4 × its index agrees.
    let origins: std::collections::BTreeSet<u64> =
        names.iter().filter_map(|(name, t)| Some(t.wrapping_sub(4 * u64::from_str_radix(name.strip_prefix("label_")?, 16).ok()?))).collect();
    assert!(origins.len() <= 1, "{}: branch labels imply several origins {origins:x?}", path.display());
    n
}
