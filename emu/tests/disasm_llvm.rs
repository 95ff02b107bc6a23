//! The disassembler against the independent oracle: every instruction of every kernel must print
//! exactly as the toolchain's `llvm-objdump -d --mcpu=<target>` prints it (text before `//`), for
//! gfx942 and gfx950.

use std::path::Path;

use amdgpu_emu::loader::Target;

#[path = "common/objdump.rs"]
mod objdump;
use objdump::compare;

#[test]
fn fixture_matches_llvm_objdump() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/classes.hsaco");
    let n = compare(&p);
    assert!(n > 200, "only {n} instructions");
}

#[test]
fn gfx950_fixture_matches_llvm_objdump() {
    // tests/data/gfx950.hsaco: what llc emits for the CDNA4 intrinsics (v_mfma_scale_*,
    // ds_read_b64_tr_*, global_load_lds_dwordx4, v_cvt_scalef32_*).
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gfx950.hsaco");
    let n = compare(&p);
    assert!(n > 100, "only {n} instructions");
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

#[test]
fn shipped_gfx950_code_object_matches_llvm_objdump() {
    // The gfx950 code object the `fp8gemm` crate embeds, against `--mcpu=gfx950`.
    let p = std::env::temp_dir().join(format!("amdgpu-emu-disasm-gfx950-{}.hsaco", std::process::id()));
    std::fs::write(&p, fp8gemm::codeobj::GFX950).unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
    let n = compare(&p);
    let _ = std::fs::remove_file(&p);
    assert!(n > 1000, "only {n} instructions in the shipped gfx950 code object");
}

/// Every (encoding, opcode) the decoder knows, as probed from llvm-objdump (one instruction per
/// 16-byte slot; `emu/tests/data/objdump_probe.py`), prints exactly as LLVM printed it.
#[test]
fn every_probed_opcode_prints_like_llvm() {
    replay_probes("llvm_probe.txt", Target::Gfx942, 5000);
}

/// The same for gfx950 (`--mcpu=gfx950`): every probe whose text differs from gfx942's (the CDNA4
/// additions: f8f6f4 MFMAs in every operand format, transposing LDS reads, the wider LDS DMA of
/// MUBUF and GLOBAL, the scaled conversions, ...).
#[test]
fn every_gfx950_probed_opcode_prints_like_llvm() {
    replay_probes("llvm_probe_gfx950.txt", Target::Gfx950, 700);
}

fn replay_probes(file: &str, target: Target, min: usize) {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(file)).unwrap();
    let mut n = 0;
    let mut bad = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (words, want) = line.split_once('\t').unwrap();
        let bytes: Vec<u8> = words.split(' ').flat_map(|w| u32::from_str_radix(w, 16).unwrap().to_le_bytes()).collect();
        match amdgpu_emu::decode::decode_one_for(target, &bytes, 0, "probe") {
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
    assert!(n > min, "{n} probes in {file}");
    assert!(bad.is_empty(), "{} of {n} probes differ:\n{}", bad.len(), bad.join("\n"));
}
