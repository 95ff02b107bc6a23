//! Builds the device crate into one code object per GPU architecture and embeds them.

use std::path::PathBuf;

/// Architectures with an embedded code object, in the order `host/src/codeobj.rs` lists them.
const ARCHS: [&str; 2] = ["gfx942", "gfx950"];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.parent().expect("host/ sits inside the workspace").to_path_buf();
    let device = root.join("device");

    if std::env::var_os("CARGO_FEATURE_ROCM").is_some() {
        let rocm = std::env::var("ROCM_PATH").unwrap_or_else(|_| "/opt/rocm".into());
        println!("cargo::rustc-link-search=native={rocm}/lib");
        println!("cargo::rustc-link-lib=dylib=amdhip64");
        println!("cargo::rerun-if-env-changed=ROCM_PATH");
    }

    let mut builder = amdgpu_builder::KernelBuilder::new(&device).watch(device.join("macros/src")).watch(root.join("rust-toolchain.toml"));
    for arch in ARCHS {
        builder = builder.arch(arch);
    }
    match builder.build() {
        Ok(out) => {
            // A manifest of what each kernel declared, for the host's resource checks.
            for co in &out.code_objects {
                let mut text = String::new();
                for k in &co.kernels {
                    text.push_str(&format!("{} {} {} {} {}\n", k.name, k.workgroup_size, k.waves_per_eu, u8::from(k.agprs), k.kernarg_size));
                }
                let path = co.path.with_extension("kernels");
                if let Err(e) = std::fs::write(&path, text) {
                    println!("cargo::error=writing {}: {e}", path.display());
                }
            }
            for p in &out.rerun_if_changed {
                println!("cargo::rerun-if-changed={}", p.display());
            }
            for v in &out.rerun_if_env_changed {
                println!("cargo::rerun-if-env-changed={v}");
            }
        }
        Err(e) => {
            // `cargo::error` shows the message without a backtrace-like panic dump.
            for line in e.to_string().lines() {
                println!("cargo::error={line}");
            }
        }
    }
}
