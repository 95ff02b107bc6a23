//! `set_launch_checks` switches memcheck for every launch of the process, so this test has its
//! own binary (its own process).
#![cfg(feature = "hip-abi")]

use std::ffi::c_void;
use std::ptr::null_mut;

use amdgpu_emu::exec::Checks;
use amdgpu_emu::hip::*;

fn malloc_from(words: &[u32]) -> *mut c_void {
    let mut p = null_mut();
    // SAFETY: valid out-pointer; `words` is valid for its byte length.
    unsafe {
        assert_eq!(hipMalloc(&mut p, size_of_val(words)), hipSuccess);
        assert_eq!(hipMemcpy(p, words.as_ptr().cast(), size_of_val(words), hipMemcpyHostToDevice), hipSuccess);
    }
    p
}

/// Launches `int_ops(out, inp, n = 3, s = 5)` over one workgroup of 256 work-items (it reads
/// `inp[i]` and writes `out[i]` for every i < 256, without bounds checks).
fn int_ops(f: hipFunction_t, out: *mut c_void, inp: *mut c_void) -> hipError_t {
    let (mut o, mut i, mut n, mut s) = (out, inp, 3u32, 5u32);
    let mut args = [(&raw mut o).cast(), (&raw mut i).cast(), (&raw mut n).cast(), (&raw mut s).cast::<c_void>()];
    // SAFETY: `args` holds one pointer per explicit argument of int_ops, to live locals.
    unsafe { hipModuleLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()) }
}

/// The module's `int_ops` and four buffers: `small` (100 words: work-items 100..255 read past
/// it), `full` (the same words, then zeros) and an output for each.
struct Setup {
    m: hipModule_t,
    f: hipFunction_t,
    small: *mut c_void,
    full: *mut c_void,
    out_small: *mut c_void,
    out_full: *mut c_void,
}

fn setup() -> Setup {
    let code = include_bytes!("data/classes.hsaco");
    let (mut m, mut f) = (null_mut(), null_mut());
    // SAFETY: a complete code object; valid out-pointers and C string.
    unsafe {
        assert_eq!(hipModuleLoadData(&mut m, code.as_ptr().cast()), hipSuccess);
        assert_eq!(hipModuleGetFunction(&mut f, m, c"int_ops".as_ptr()), hipSuccess);
    }
    let data: Vec<u32> = (0..100).map(|i| i * 37 + 5).collect();
    let mut padded = data.clone();
    padded.resize(256, 0);
    Setup { m, f, small: malloc_from(&data), full: malloc_from(&padded), out_small: malloc_from(&[0; 256]), out_full: malloc_from(&[0; 256]) }
}

#[test]
fn memcheck_can_be_switched_off_process_wide() {
    let t = setup();
    // Memcheck (the default) stops the out-of-bounds launch: work-item 100 is wave 1, lane 36.
    // The fault poisons the device (as on HIP) until it is reset.
    assert_eq!(int_ops(t.f, t.out_small, t.small), hipErrorIllegalAddress);
    let msg = last_launch_error().unwrap();
    assert!(msg.contains("int_ops") && msg.contains("wave 1 lane 36"), "{msg}");
    assert_eq!(int_ops(t.f, t.out_full, t.full), hipErrorIllegalAddress, "sticky");
    assert_eq!(hipDeviceReset(), hipSuccess);

    let t = setup();
    assert_eq!(int_ops(t.f, t.out_full, t.full), hipSuccess);
    // Without memcheck, reads outside every allocation return zeros: the result equals the
    // zero-padded input's.
    set_launch_checks(Checks { memcheck: false, ..Checks::default() });
    assert_eq!(int_ops(t.f, t.out_small, t.small), hipSuccess, "{:?}", last_launch_error());
    set_launch_checks(Checks::default());
    let (mut a, mut b) = ([0u32; 256], [0u32; 256]);
    // SAFETY: host buffers of 1024 bytes.
    unsafe {
        assert_eq!(hipMemcpy(a.as_mut_ptr().cast(), t.out_small, 1024, hipMemcpyDeviceToHost), hipSuccess);
        assert_eq!(hipMemcpy(b.as_mut_ptr().cast(), t.out_full, 1024, hipMemcpyDeviceToHost), hipSuccess);
    }
    assert_eq!(a, b);
    assert!(a[..100].iter().any(|&x| x != 0), "the in-bounds part computed something");
    for p in [t.small, t.full, t.out_small, t.out_full] {
        assert_eq!(hipFree(p), hipSuccess);
    }
    assert_eq!(hipModuleUnload(t.m), hipSuccess);

    let t = setup();
    assert_eq!(int_ops(t.f, t.out_small, t.small), hipErrorIllegalAddress, "memcheck is back on");
    assert_eq!(hipDeviceReset(), hipSuccess);
}
