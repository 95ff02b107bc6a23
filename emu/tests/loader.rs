//! Loader: metadata, kernel descriptors and architecture checks on real code objects.

use std::path::Path;

use amdgpu_emu::loader::{CodeObject, LoadError};

fn fixture_bytes() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/classes.hsaco")).unwrap()
}

#[test]
fn fixture_metadata_and_descriptors() {
    let co = CodeObject::parse(&fixture_bytes()).unwrap();
    assert_eq!(co.arch(), "gfx942");
    assert_eq!(co.code_object_version(), 5);
    let k = co.kernel("int_ops").unwrap();
    let m = &k.meta;
    assert_eq!(m.kernarg_segment_size, 280);
    assert_eq!(m.wavefront_size, 64);
    assert_eq!(m.max_flat_workgroup_size, 256);
    let names: Vec<_> = m.args.iter().take(4).map(|a| (a.name.as_deref(), a.offset, a.size, a.value_kind.as_str())).collect();
    assert_eq!(
        names,
        [(Some("out"), 0, 8, "global_buffer"), (Some("in"), 8, 8, "global_buffer"), (Some("n"), 16, 4, "by_value"), (Some("s"), 20, 4, "by_value"),]
    );
    assert_eq!(m.args[4].value_kind, "hidden_block_count_x");
    let d = &k.descriptor;
    assert_eq!(d.kernarg_size, 280);
    assert!(d.user_sgprs.kernarg_segment_ptr);
    assert!(d.vgprs >= m.vgpr_count && d.accum_offset.is_multiple_of(4) && d.accum_offset <= d.vgprs);
    // lds_barrier: static LDS of three arrays (1 KiB + 2 KiB + 4 KiB).
    let l = co.kernel("lds_barrier").unwrap();
    assert_eq!(l.meta.group_segment_fixed_size, 7168);
    assert_eq!(l.descriptor.group_segment_fixed_size, 7168);
    assert!(co.kernel("nope").is_none());
}

/// Every kernel descriptor field the loader derives equals the `.amdhsa_*` directive llc prints
/// for the same IR (the independent oracle: `llc -filetype=asm`).
#[test]
fn descriptors_match_llc_directives() {
    let out = std::process::Command::new("rustc").args(["--print", "sysroot"]).output().unwrap();
    let sysroot = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let llc = Path::new(&sysroot).join("lib/rustlib/x86_64-unknown-linux-gnu/bin/llc");
    let ll = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/classes.ll");
    let asm = std::process::Command::new(llc)
        .args(["-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-O3", "--amdhsa-code-object-version=5", "-o", "-"])
        .arg(&ll)
        .output()
        .unwrap();
    assert!(asm.status.success());
    let asm = String::from_utf8(asm.stdout).unwrap();
    let co = CodeObject::parse(&fixture_bytes()).unwrap();
    let mut checked = 0;
    for block in asm.split(".amdhsa_kernel ").skip(1) {
        let name = block.lines().next().unwrap().trim();
        let dir = |key: &str| -> u32 {
            let line = block.lines().find(|l| l.trim().starts_with(&format!(".amdhsa_{key} "))).unwrap_or_else(|| panic!("{name}: no {key}"));
            line.split_whitespace().nth(1).unwrap().parse().unwrap()
        };
        let d = &co.kernel(name).unwrap_or_else(|| panic!("kernel {name}")).descriptor;
        let u = d.user_sgprs;
        let b = |x: bool| u32::from(x);
        let pairs = [
            ("group_segment_fixed_size", d.group_segment_fixed_size),
            ("private_segment_fixed_size", d.private_segment_fixed_size),
            ("kernarg_size", d.kernarg_size),
            ("user_sgpr_count", d.user_sgpr_count),
            ("user_sgpr_dispatch_ptr", b(u.dispatch_ptr)),
            ("user_sgpr_queue_ptr", b(u.queue_ptr)),
            ("user_sgpr_kernarg_segment_ptr", b(u.kernarg_segment_ptr)),
            ("user_sgpr_dispatch_id", b(u.dispatch_id)),
            ("user_sgpr_private_segment_size", b(u.private_segment_size)),
            ("enable_private_segment", b(d.private_segment)),
            ("system_sgpr_workgroup_id_x", b(d.workgroup_id[0])),
            ("system_sgpr_workgroup_id_y", b(d.workgroup_id[1])),
            ("system_sgpr_workgroup_id_z", b(d.workgroup_id[2])),
            ("system_sgpr_workgroup_info", b(d.workgroup_info)),
            ("system_vgpr_workitem_id", d.workitem_id_vgprs),
            ("accum_offset", d.accum_offset),
            ("float_round_mode_32", u32::from(d.float_round_mode_32)),
            ("float_round_mode_16_64", u32::from(d.float_round_mode_16_64)),
            ("float_denorm_mode_32", u32::from(d.float_denorm_mode_32)),
            ("float_denorm_mode_16_64", u32::from(d.float_denorm_mode_16_64)),
            ("dx10_clamp", b(d.dx10_clamp)),
            ("ieee_mode", b(d.ieee_mode)),
        ];
        for (key, ours) in pairs {
            assert_eq!(ours, dir(key), "{name}: .amdhsa_{key}");
        }
        // VGPR granule: next_free_vgpr rounded up to 8.
        assert_eq!(d.vgprs, dir("next_free_vgpr").max(1).div_ceil(8) * 8, "{name}: vgprs");
        checked += 1;
    }
    assert_eq!(checked, co.kernels().len());
}

#[test]
fn rejects_other_architectures_and_garbage() {
    let mut b = fixture_bytes();
    // e_flags at offset 48 (ELF64): change the mach to gfx90a (0x3f).
    b[48] = 0x3f;
    let e = CodeObject::parse(&b).unwrap_err();
    assert!(matches!(e, LoadError::WrongArch { .. }), "{e}");
    assert!(e.to_string().contains("gfx942"), "{e}");
    b[48] = 0x4f; // gfx950 in e_flags, but metadata says gfx942
    assert!(matches!(CodeObject::parse(&b), Err(LoadError::WrongArch { .. })));
    assert!(matches!(CodeObject::parse(b"not an elf"), Err(LoadError::Elf(_))));
    let mut m = fixture_bytes();
    m[18] = 62; // e_machine = x86-64
    assert!(matches!(CodeObject::parse(&m), Err(LoadError::NotAmdgpu { found: 62 })));
}

#[test]
fn gfx950_object_loads_as_gfx950() {
    // The code object the `fp8gemm` crate embeds (a dev-dependency: always built).
    let co = CodeObject::parse(fp8gemm::codeobj::GFX950).expect("the gfx950 code object embedded in fp8gemm does not load");
    assert_eq!(co.arch(), "gfx950");
    assert!(co.kernel("add_one_f32").is_some());
}

/// The checked-in fixture is exactly what the pinned llc + rust-lld build from classes.ll.
#[test]
fn fixture_is_up_to_date_with_its_ir() {
    let out = std::process::Command::new("rustc").args(["--print", "sysroot"]).output().unwrap();
    let bin = Path::new(String::from_utf8(out.stdout).unwrap().trim()).join("lib/rustlib/x86_64-unknown-linux-gnu/bin");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let dir = std::env::temp_dir().join(format!("amdgpu-emu-fixture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (obj, hsaco) = (dir.join("classes.o"), dir.join("classes.hsaco"));
    let ok = std::process::Command::new(bin.join("llc"))
        .args(["-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-O3", "-filetype=obj", "--amdhsa-code-object-version=5"])
        .arg(data.join("classes.ll"))
        .arg("-o")
        .arg(&obj)
        .status()
        .unwrap()
        .success();
    assert!(ok, "llc");
    let ok = std::process::Command::new(bin.join("rust-lld")).args(["-flavor", "gnu", "-shared"]).arg(&obj).arg("-o").arg(&hsaco).status().unwrap().success();
    assert!(ok, "rust-lld");
    let fresh = std::fs::read(&hsaco).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(fresh == fixture_bytes(), "tests/data/classes.hsaco is stale: rebuild it from classes.ll (commands in its header)");
}
