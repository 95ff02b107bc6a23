//! Build script of the CLI package: exports `FP8GEMM_LAUNCH_SOURCE_HASH`, a hash of the sources
//! that decide what an `eval` launch of a given plan does and how the timing model times it —
//! the emulator (`emu/src`), the library's launch code (`host/src`) and the CLI's operands and
//! launch set-up (`src/operands.rs`, `src/profile.rs`, `src/tune_cost.rs`). Left out: the
//! selector's cost model (`host/src/select.rs` and `host/src/select/`: it decides *which* plan runs, not what a plan
//! does) and the library code no `eval` launch reaches (`host/src/moe.rs`,
//! `host/src/checkpoint.rs`, `host/src/reference.rs`). The `eval --time-cache` file keys its
//! modelled times on it (with the embedded code object's bytes and the machine's parameters,
//! hashed at run time), so a change to any of them starts a fresh cache instead of reusing
//! stale times.

use std::path::{Path, PathBuf};

#[path = "src/fnv.rs"]
mod fnv;
use fnv::fnv1a;

/// Every `.rs` file under `dir`, sorted, recursively.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["emu/src", "host/src"] {
        let d = root.join(dir);
        println!("cargo::rerun-if-changed={}", d.display());
        sources(&d, &mut files);
    }
    for f in ["src/operands.rs", "src/profile.rs", "src/tune_cost.rs"] {
        let p = root.join(f);
        println!("cargo::rerun-if-changed={}", p.display());
        files.push(p);
    }
    const LEFT_OUT: [&str; 4] = ["host/src/select.rs", "host/src/moe.rs", "host/src/checkpoint.rs", "host/src/reference.rs"];
    // The selector's submodules (`host/src/select/`) are left out with it.
    let selector = root.join("host/src/select");
    println!("cargo::rerun-if-changed={}", root.join("src/fnv.rs").display());
    let mut h = fnv::OFFSET;
    for f in files.iter().filter(|f| !LEFT_OUT.iter().any(|l| f.ends_with(l)) && !f.starts_with(&selector)) {
        let rel = f.strip_prefix(&root).unwrap_or(f);
        h = fnv1a(h, rel.to_string_lossy().as_bytes());
        // A file that cannot be read changes the hash too (its name is in it already).
        h = fnv1a(h, &std::fs::read(f).unwrap_or_default());
    }
    println!("cargo::rustc-env=FP8GEMM_LAUNCH_SOURCE_HASH={h:016x}");
}
