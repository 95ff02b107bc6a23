//! Chooses the GPU code objects the library embeds.
//!
//! By default they are the **prebuilt** ones checked in under `host/kernels/` (one `.hsaco` and
//! one `.kernels` manifest per architecture), so a consumer builds `fp8gemm` on any toolchain
//! that compiles the host code (stable included) without compiling a single kernel.
//!
//! With the `build-kernels` feature the device crate is compiled from source instead (through
//! `amdgpu-builder`, which needs the nightly pinned in `rust-toolchain.toml` with `rust-src` and
//! `llvm-tools`), into `OUT_DIR`, and those objects are embedded. This workspace enables the
//! feature for its own tests, and `tests/prebuilt.rs` fails unless the rebuilt objects are
//! byte-identical to the checked-in ones. After a kernel change, refresh them with
//! `FP8GEMM_WRITE_PREBUILT=1 cargo build --features fp8gemm/build-kernels` (the README says so).
//!
//! Either way the build sets `FP8GEMM_KERNELS_DIR` for `src/codeobj.rs`'s `include_bytes!`.

use std::path::{Path, PathBuf};

/// Architectures with an embedded code object, in the order `host/src/codeobj.rs` lists them.
const ARCHS: [&str; 2] = ["gfx942", "gfx950"];

/// Environment variable: with `build-kernels`, copy the rebuilt objects over the prebuilt ones.
const WRITE_PREBUILT: &str = "FP8GEMM_WRITE_PREBUILT";

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let prebuilt = manifest.join("kernels");

    if std::env::var_os("CARGO_FEATURE_ROCM").is_some() {
        let rocm = std::env::var("ROCM_PATH").unwrap_or_else(|_| "/opt/rocm".into());
        println!("cargo::rustc-link-search=native={rocm}/lib");
        println!("cargo::rustc-link-lib=dylib=amdhip64");
        println!("cargo::rerun-if-env-changed=ROCM_PATH");
    }

    let dir = if std::env::var_os("CARGO_FEATURE_BUILD_KERNELS").is_some() {
        match build_from_source(&manifest, &prebuilt) {
            Ok(dir) => dir,
            Err(message) => {
                // `cargo::error` shows the message without a backtrace-like panic dump.
                for line in message.lines() {
                    println!("cargo::error={line}");
                }
                return;
            }
        }
    } else {
        for arch in ARCHS {
            for ext in ["hsaco", "kernels"] {
                let f = prebuilt.join(format!("{arch}.{ext}"));
                if !f.is_file() {
                    println!(
                        "cargo::error=the prebuilt code object {} is missing; rebuild it from the device crate with `FP8GEMM_WRITE_PREBUILT=1 cargo build --features fp8gemm/build-kernels` (needs the pinned nightly)",
                        f.display()
                    );
                    return;
                }
                println!("cargo::rerun-if-changed={}", f.display());
            }
        }
        prebuilt
    };
    println!("cargo::rustc-env=FP8GEMM_KERNELS_DIR={}", dir.display());
    println!("cargo::rerun-if-env-changed={WRITE_PREBUILT}");
}

#[cfg(feature = "build-kernels")]
fn build_from_source(manifest: &Path, prebuilt: &Path) -> Result<PathBuf, String> {
    let root = manifest.parent().ok_or("host/ sits inside the workspace")?.to_path_buf();
    let device = root.join("device");
    if !device.join("Cargo.toml").is_file() {
        return Err(format!(
            "feature `build-kernels`: the device crate is not at {} (it is only in a checkout of the fp8gemm workspace); build without the feature to use the prebuilt code objects",
            device.display()
        ));
    }
    check_nightly()?;
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR")?);
    let mut builder = amdgpu_builder::KernelBuilder::new(&device).watch(device.join("macros/src")).watch(root.join("rust-toolchain.toml")).out_dir(&out_dir);
    for arch in ARCHS {
        builder = builder.arch(arch);
    }
    let out = builder.build().map_err(|e| e.to_string())?;
    let write = std::env::var_os(WRITE_PREBUILT).is_some_and(|v| v == "1");
    for co in &out.code_objects {
        // A manifest of what each kernel declared, for the host's resource checks.
        let mut text = String::new();
        for k in &co.kernels {
            text.push_str(&format!("{} {} {} {} {}\n", k.name, k.workgroup_size, k.waves_per_eu, u8::from(k.agprs), k.kernarg_size));
        }
        let manifest_path = co.path.with_extension("kernels");
        std::fs::write(&manifest_path, &text).map_err(|e| format!("writing {}: {e}", manifest_path.display()))?;
        if write {
            std::fs::create_dir_all(prebuilt).map_err(|e| format!("creating {}: {e}", prebuilt.display()))?;
            for (from, name) in [(co.path.clone(), format!("{}.hsaco", co.arch)), (manifest_path.clone(), format!("{}.kernels", co.arch))] {
                let to = prebuilt.join(name);
                std::fs::copy(&from, &to).map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))?;
            }
        }
    }
    for p in &out.rerun_if_changed {
        println!("cargo::rerun-if-changed={}", p.display());
    }
    for v in &out.rerun_if_env_changed {
        println!("cargo::rerun-if-env-changed={v}");
    }
    Ok(out_dir)
}

/// The kernels need nightly rustc (`-Zbuild-std`, the `abi_gpu_kernel` feature): say so plainly
/// instead of letting the inner build fail on a missing component.
#[cfg(feature = "build-kernels")]
fn check_nightly() -> Result<(), String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = std::process::Command::new(&rustc).arg("-vV").output().map_err(|e| format!("could not run {}: {e}", rustc.to_string_lossy()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let release = text.lines().find_map(|l| l.strip_prefix("release: ")).unwrap_or("unknown");
    if !release.contains("nightly") {
        let pinned = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../rust-toolchain.toml")).ok();
        let channel = pinned
            .as_deref()
            .and_then(|t| {
                t.lines().find_map(|l| l.trim().strip_prefix("channel").map(|v| v.trim_start_matches([' ', '=']).trim().trim_matches('"').to_string()))
            })
            .unwrap_or_else(|| "the nightly named in rust-toolchain.toml".into());
        return Err(format!(
            "feature `build-kernels` compiles the GPU kernels from source, which needs a nightly rustc (found {release}). Install the pinned one with `rustup toolchain install {channel} --component rust-src,llvm-tools` and build with `cargo +{channel} …`, or build without `build-kernels` to embed the prebuilt code objects (host/kernels/)"
        ));
    }
    Ok(())
}

#[cfg(not(feature = "build-kernels"))]
fn build_from_source(_manifest: &Path, _prebuilt: &Path) -> Result<PathBuf, String> {
    Err("internal: build-kernels enabled without its build dependency".into())
}
