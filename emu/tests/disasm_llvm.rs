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

#[test]
fn fixture_matches_llvm_objdump() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/classes.hsaco");
    let n = compare(&p);
    assert!(n > 200, "only {n} instructions");
}

#[test]
fn shipped_code_objects_match_llvm_objdump() {
    // The gfx942 code object the `fp8gemm` crate embeds (a dev-dependency: always built),
    // written to a file for llvm-objdump.
    let p = std::env::temp_dir().join(format!("amdgpu-emu-disasm-gfx942-{}.hsaco", std::process::id()));
    std::fs::write(&p, fp8gemm::codeobj::GFX942).unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
    let n = compare(&p);
    let _ = std::fs::remove_file(&p);
    assert!(n > 1000, "only {n} instructions in the shipped gfx942 code object");
}

/// AMD's peer code objects (`$FP8GEMM_PEERS_DIR`, see `amdgpu_emu::peers`) decode and print
/// exactly as llvm-objdump prints them.
#[test]
fn peer_code_objects_match_llvm_objdump() {
    let dir = amdgpu_emu::peers::peers_dir().unwrap_or_else(|e| panic!("{e}"));
    let mut total = 0;
    for f in amdgpu_emu::peers::PeerFamily::all() {
        total += compare(&dir.join(f.file_name()));
    }
    assert!(total > 5000, "only {total} instructions in the seven peers");
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
