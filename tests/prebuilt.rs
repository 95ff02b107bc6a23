//! The prebuilt code objects checked in under `host/kernels/` (what consumers embed) are exactly
//! what the device crate compiles to today: this workspace's default build compiles the kernels
//! from source (feature `kernels-from-source`, i.e. `fp8gemm/build-kernels`) and this test
//! compares the bytes. After a kernel change, refresh them with `FP8GEMM_WRITE_PREBUILT=1 cargo
//! build` and commit `host/kernels/`.
#![cfg(feature = "kernels-from-source")]

use fp8gemm::codeobj::Arch;

fn prebuilt(arch: Arch) -> (Vec<u8>, String) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("host/kernels");
    let read = |ext: &str| {
        let p = dir.join(format!("{arch}.{ext}"));
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e} (the prebuilt code objects are part of the repository)", p.display()))
    };
    (read("hsaco"), String::from_utf8(read("kernels")).expect("the kernel manifest is text"))
}

#[test]
fn prebuilt_code_objects_are_byte_identical_to_a_rebuild() {
    for arch in Arch::ALL {
        let (bytes, manifest) = prebuilt(arch);
        let built = arch.code_object();
        let first_diff = bytes.iter().zip(built).position(|(a, b)| a != b);
        assert!(
            bytes == built,
            "{arch}: host/kernels/{arch}.hsaco ({} bytes) differs from the rebuilt code object ({} bytes; first difference at byte {first_diff:?}): run `FP8GEMM_WRITE_PREBUILT=1 cargo build` and commit host/kernels/",
            bytes.len(),
            built.len()
        );
        // The manifest's line format is build.rs's: name, workgroup size, waves per EU, AGPRs, kernarg bytes.
        let rebuilt: String = arch
            .declared_kernels()
            .iter()
            .map(|k| format!("{} {} {} {} {}\n", k.name, k.workgroup_size, k.waves_per_eu, u8::from(k.agprs), k.kernarg_size))
            .collect();
        assert_eq!(manifest, rebuilt, "{arch}: host/kernels/{arch}.kernels differs from what the rebuild declares");
    }
}
