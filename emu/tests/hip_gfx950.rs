//! The HIP device as a gfx950 (MI355X): `hip::set_device_arch`, its properties, which code
//! objects it accepts and its 160 KiB LDS limit. The device's processor is process-wide state, so
//! this binary has one test that walks through it in order.
//!
//! Kernel fixture: `tests/data/classes.hsaco` (gfx942; `lds_barrier` has 7168 bytes of static LDS
//! and two pointer arguments), relabelled as gfx950: ELF `e_flags` machine byte 0x4f and the
//! metadata's `amdhsa.target` string (its code uses no instruction the two targets differ on).
#![cfg(feature = "hip-abi")]

use std::ffi::{CStr, c_void};
use std::ptr::null_mut;

use amdgpu_emu::hip::*;
use amdgpu_emu::loader::Target;

mod common;
use common::hip_result::{err, ok};

const CLASSES: &[u8] = include_bytes!("data/classes.hsaco");

fn c_str(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8(bytes).unwrap()
}

fn load(image: &[u8]) -> Result<hipModule_t, hipError_t> {
    let mut m = null_mut();
    // SAFETY: `image` is a complete code object; `m` a valid out-pointer.
    let code = unsafe { hipModuleLoadData(&mut m, image.as_ptr().cast()) };
    if code == hipSuccess { Ok(m) } else { Err(code) }
}

fn function(m: hipModule_t, kname: &CStr) -> hipFunction_t {
    let mut f = null_mut();
    // SAFETY: valid out-pointer and C string.
    ok(unsafe { hipModuleGetFunction(&mut f, m, kname.as_ptr()) });
    f
}

fn props() -> hipDeviceProp_tR0600 {
    let mut p = std::mem::MaybeUninit::<hipDeviceProp_tR0600>::zeroed();
    // SAFETY: `p` is valid for a write of the struct.
    ok(unsafe { hipGetDevicePropertiesR0600(p.as_mut_ptr(), 0) });
    // SAFETY: written in full by the call.
    unsafe { p.assume_init() }
}

fn attr(a: hipDeviceAttribute_t) -> i32 {
    let mut v = -1;
    // SAFETY: valid out-pointer.
    ok(unsafe { hipDeviceGetAttribute(&mut v, a, 0) });
    v
}

/// `lds_barrier(out, in)` on one 256-work-item block with `dynamic` bytes of dynamic LDS.
fn launch_lds_barrier(f: hipFunction_t, buf: *mut c_void, dynamic: u32) -> hipError_t {
    let (mut out, mut inp) = (buf, buf);
    let mut args = [(&raw mut out).cast::<c_void>(), (&raw mut inp).cast()];
    // SAFETY: `args` matches lds_barrier's two pointer arguments; `buf` holds 4096 bytes.
    unsafe { hipModuleLaunchKernel(f, 1, 1, 1, 256, 1, 1, dynamic, null_mut(), args.as_mut_ptr(), null_mut()) }
}

fn relabelled_gfx950() -> Vec<u8> {
    let mut b = CLASSES.to_vec();
    b[48] = 0x4f;
    let (from, to) = (b"amdgcn-amd-amdhsa--gfx942", b"amdgcn-amd-amdhsa--gfx950");
    let mut n = 0;
    for i in 0..b.len() - from.len() {
        if &b[i..i + from.len()] == from {
            b[i..i + to.len()].copy_from_slice(to);
            n += 1;
        }
    }
    assert!(n > 0, "classes.hsaco has no amdhsa.target string to relabel");
    b
}

#[test]
fn device_as_gfx950() {
    // The default (without AMDGPU_EMU_ARCH) is the gfx942 MI300X.
    let from_env = match std::env::var("AMDGPU_EMU_ARCH").as_deref() {
        Ok("gfx950") => Target::Gfx950,
        _ => Target::Gfx942,
    };
    assert_eq!(device_arch(), from_env);
    // lds_barrier's LDS atomics are a deliberate cross-wave race for the racecheck tests;
    // memcheck is what matters here.
    set_launch_checks(amdgpu_emu::exec::Checks::default());
    set_device_arch(Target::Gfx942);
    let gfx942_module = load(CLASSES).expect("gfx942 code object on the gfx942 device");
    let gfx942_lds = function(gfx942_module, c"lds_barrier");

    set_device_arch(Target::Gfx950);
    assert_eq!(device_spec(), DeviceSpec::MI355X);
    let p = props();
    assert_eq!(c_str(&p.gcnArchName), "gfx950:sramecc+:xnack-");
    assert_eq!(c_str(&p.name), "AMD Instinct MI355X (emulated)");
    assert_eq!(p.sharedMemPerBlock, 160 * 1024);
    assert_eq!(p.sharedMemPerMultiprocessor, 160 * 1024);
    assert_eq!(p.maxSharedMemoryPerMultiProcessor, 160 * 1024);
    assert_eq!(p.multiProcessorCount, 256);
    assert_eq!((p.major, p.minor), (9, 5));
    assert_eq!(p.totalGlobalMem, 288 << 30);
    assert_eq!(attr(63), 256, "hipDeviceAttributeMultiprocessorCount");
    assert_eq!(attr(74), 163_840, "hipDeviceAttributeMaxSharedMemoryPerBlock");
    let mut name = [0 as std::ffi::c_char; 64];
    // SAFETY: `name` holds 64 bytes.
    ok(unsafe { hipDeviceGetName(name.as_mut_ptr(), 64, 0) });
    assert_eq!(c_str(&name), "AMD Instinct MI355X (emulated)");

    // A gfx942 code object has no binary for the gfx950 device (symmetric to gfx942 rejecting
    // gfx950), and a gfx942 module loaded before the switch cannot be launched on it.
    assert_eq!(load(CLASSES).err(), Some(hipErrorNoBinaryForGpu));
    assert!(last_error_detail().unwrap().contains("the device is gfx950"));
    let buf = {
        let mut b = null_mut();
        // SAFETY: valid out-pointer.
        ok(unsafe { hipMalloc(&mut b, 4096) });
        b
    };
    err(launch_lds_barrier(gfx942_lds, buf, 0), hipErrorNoBinaryForGpu);

    // The same code relabelled gfx950 loads; LDS up to 160 KiB per workgroup.
    let gfx950 = relabelled_gfx950();
    let m = load(&gfx950).expect("gfx950 code object on the gfx950 device");
    let f = function(m, c"lds_barrier");
    let mut v = 0;
    // SAFETY: valid out-pointer.
    ok(unsafe { hipFuncGetAttribute(&mut v, HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f) });
    assert_eq!(v, 163_840 - 7168);
    // SAFETY: valid out-pointer.
    ok(unsafe { hipFuncGetAttribute(&mut v, HIP_FUNC_ATTRIBUTE_BINARY_VERSION, f) });
    assert_eq!(v, 95, "gfx9.5");
    let r = launch_lds_barrier(f, buf, 100_000);
    assert_eq!(r, hipSuccess, "{:?}", last_launch_error()); // 107168 bytes: over gfx942's 64 KiB, within 160 KiB
    assert_eq!(last_launch_report().expect("report").kernel, "lds_barrier");
    err(launch_lds_barrier(f, buf, 163_840 - 7168 + 1), hipErrorLaunchOutOfResources);
    assert!(last_launch_error().unwrap().contains("163840"), "{:?}", last_launch_error());
    err(launch_lds_barrier(f, buf, 163_841), hipErrorInvalidValue);
    ok(hipModuleUnload(m));

    // Back to gfx942: its properties and its code objects again.
    set_device_arch(Target::Gfx942);
    assert_eq!(c_str(&props().gcnArchName), "gfx942:sramecc+:xnack-");
    assert_eq!(props().sharedMemPerBlock, 65536);
    assert_eq!(load(&gfx950).err(), Some(hipErrorNoBinaryForGpu));
    ok(launch_lds_barrier(gfx942_lds, buf, 0));
    ok(hipModuleUnload(gfx942_module));
    ok(hipFree(buf));
}
