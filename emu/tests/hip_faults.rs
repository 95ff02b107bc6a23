//! A kernel fault poisons its device as on HIP: the faulting call fails, every later HIP call on
//! that device returns the same sticky code (and no later kernel of the device runs) until
//! `hipDeviceReset`; the finding is reported through [`device_fault`], never printed. Its own
//! binary (its own process): the faults and the reset concern the whole emulated device.
#![cfg(feature = "hip-abi")]

use std::ffi::c_void;
use std::ptr::null_mut;

use amdgpu_emu::exec::Checks;
use amdgpu_emu::hip::*;

const CLASSES: &[u8] = include_bytes!("data/classes.hsaco");
const CHECKS: &[u8] = include_bytes!("data/checks.hsaco");

fn ok(code: hipError_t) {
    assert_eq!(code, hipSuccess, "{:?}", last_error_detail());
}

/// Loads `image` and returns the function `name` (and the module).
fn function(image: &[u8], name: &std::ffi::CStr) -> (hipModule_t, hipFunction_t) {
    let (mut m, mut f) = (null_mut(), null_mut());
    // SAFETY: a complete code object; valid out-pointers and C string.
    unsafe {
        ok(hipModuleLoadData(&mut m, image.as_ptr().cast()));
        ok(hipModuleGetFunction(&mut f, m, name.as_ptr()));
    }
    (m, f)
}

fn malloc_from(words: &[u32]) -> *mut c_void {
    let mut p = null_mut();
    // SAFETY: valid out-pointer; `words` is valid for its byte length.
    unsafe {
        ok(hipMalloc(&mut p, size_of_val(words)));
        ok(hipMemcpy(p, words.as_ptr().cast(), size_of_val(words), hipMemcpyHostToDevice));
    }
    p
}

/// Submits `int_ops(out, inp, n = 3, s = 5)` over one workgroup of 256 work-items on `stream`
/// (it reads `inp[i]` and writes `out[i]` for every i < 256, without bounds checks).
fn int_ops(f: hipFunction_t, out: *mut c_void, inp: *mut c_void, stream: hipStream_t) -> hipError_t {
    let (mut o, mut i, mut n, mut s) = (out, inp, 3u32, 5u32);
    let mut args = [(&raw mut o).cast(), (&raw mut i).cast(), (&raw mut n).cast(), (&raw mut s).cast::<c_void>()];
    // SAFETY: `args` holds one pointer per explicit argument of int_ops, to live locals.
    unsafe { hipModuleLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, stream, args.as_mut_ptr(), null_mut()) }
}

/// Reads `n` words of device memory without a HIP call (a poisoned device answers none).
fn peek(addr: *mut c_void, n: usize) -> Vec<u32> {
    let mut bytes = vec![0u8; 4 * n];
    device_memory().read(addr as u64, &mut bytes).expect("a live allocation");
    bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Every context call on the current (poisoned) device returns `code`; the exempt ones work.
fn assert_poisoned(code: hipError_t, f: hipFunction_t, live: *mut c_void) {
    let (mut p, mut s, mut e, mut m) = (null_mut(), null_mut(), null_mut(), null_mut());
    let mut x = [0u32; 4];
    // SAFETY: valid out-pointers and host buffers; `live` is a live 1 KiB allocation.
    unsafe {
        assert_eq!(hipMalloc(&mut p, 64), code, "hipMalloc");
        assert!(p.is_null(), "nothing allocated");
        assert_eq!(hipMemcpy(x.as_mut_ptr().cast(), live, 16, hipMemcpyDeviceToHost), code, "hipMemcpy");
        assert_eq!(hipMemset(live, 0, 16), code, "hipMemset");
        assert_eq!(hipStreamCreate(&mut s), code, "hipStreamCreate");
        assert_eq!(hipEventCreate(&mut e), code, "hipEventCreate");
        assert_eq!(hipModuleLoadData(&mut m, CLASSES.as_ptr().cast()), code, "hipModuleLoadData");
        assert_eq!(hipDeviceSynchronize(), code, "hipDeviceSynchronize");
        assert_eq!(hipStreamSynchronize(null_mut()), code, "hipStreamSynchronize");
        assert_eq!(int_ops(f, live, live, null_mut()), code, "a correct launch");
        let mut prop = std::mem::MaybeUninit::<hipDeviceProp_tR0600>::zeroed();
        assert_eq!(hipGetDevicePropertiesR0600(prop.as_mut_ptr(), 0), code, "hipGetDeviceProperties");
        assert_eq!(hipFree(live), code, "hipFree");
        // The error queries, device selection, counts and versions still answer.
        assert_eq!(hipGetLastError(), code);
        assert_eq!(hipGetLastError(), hipSuccess, "read and cleared");
        let (mut n, mut d, mut v) = (0, -1, 0);
        ok(hipGetDeviceCount(&mut n));
        ok(hipGetDevice(&mut d));
        ok(hipRuntimeGetVersion(&mut v));
        assert_eq!(v, EMULATED_HIP_VERSION);
    }
}

#[test]
fn a_kernel_fault_poisons_its_device_until_reset() {
    set_device_count(2);
    let (_m, f) = function(CLASSES, c"int_ops");
    let data: Vec<u32> = (0..100).map(|i| i * 37 + 5).collect();
    let small = malloc_from(&data); // 100 words: work-items 100..255 read past it
    let out = malloc_from(&[0; 256]);
    assert_eq!(device_fault(0), None);

    // 1. The faulting launch (null stream) fails with the memcheck finding's code, which is
    // sticky from then on; the finding is kept for any thread.
    assert_eq!(int_ops(f, out, small, null_mut()), hipErrorIllegalAddress);
    let fault = device_fault(0).expect("the device is poisoned");
    assert_eq!(fault.code, hipErrorIllegalAddress);
    assert!(fault.message.contains("int_ops") && fault.message.contains("wave 1 lane 36"), "{}", fault.message);
    assert_eq!(last_launch_error().as_deref(), Some(fault.message.as_str()));
    assert_eq!(last_error_detail().as_deref(), Some(fault.message.as_str()));
    assert_eq!(std::thread::spawn(|| device_fault(0)).join().unwrap().as_ref(), Some(&fault), "any thread sees it");
    assert_poisoned(hipErrorIllegalAddress, f, out);
    // Another thread with the same current device (0) is refused too.
    assert_eq!(std::thread::spawn(|| hipDeviceSynchronize()).join().unwrap(), hipErrorIllegalAddress);

    // 2. Device 1 is not poisoned. There a fault of a *queued* launch is reported by the
    // synchronization, and the correct launch queued after it does not run.
    ok(hipSetDevice(1));
    let (_m1, f1) = function(CLASSES, c"int_ops");
    let padded: Vec<u32> = data.iter().copied().chain(std::iter::repeat_n(0, 156)).collect();
    let full = malloc_from(&padded);
    let out1 = malloc_from(&[0; 256]);
    let mut s = null_mut();
    // SAFETY: valid out-pointer.
    ok(unsafe { hipStreamCreateWithFlags(&mut s, hipStreamNonBlocking) });
    ok(int_ops(f1, out1, small, s));
    ok(int_ops(f1, out1, full, s));
    assert_eq!(device_fault(1), None, "nothing has run yet");
    assert_eq!(hipStreamSynchronize(s), hipErrorIllegalAddress);
    assert_eq!(device_fault(1).map(|f| f.code), Some(hipErrorIllegalAddress));
    assert_eq!(peek(out1, 256)[100..], [0; 156], "the correct launch after the fault did not run");
    assert_poisoned(hipErrorIllegalAddress, f1, full);

    // 3. hipDeviceReset clears the poison (and destroys everything): the device works again.
    ok(hipDeviceReset());
    assert_eq!(device_fault(1), None);
    assert_eq!(last_error_detail(), None);
    ok(hipSetDevice(0));
    assert_eq!(device_fault(0), None);
    let (m, f) = function(CLASSES, c"int_ops");
    let inp = malloc_from(&padded);
    let out = malloc_from(&[0; 256]);
    ok(int_ops(f, out, inp, null_mut()));
    let mut got = [0u32; 256];
    // SAFETY: a host buffer of 1 KiB; `out` is a 1 KiB allocation.
    ok(unsafe { hipMemcpy(got.as_mut_ptr().cast(), out, 1024, hipMemcpyDeviceToHost) });
    assert_eq!(got.to_vec(), peek(out, 256));
    assert!(got[..100].iter().any(|&x| x != 0));
    ok(hipModuleUnload(m));

    // 4. A checker's finding (here racecheck: with the waves interleaved, wave 0 reads what wave
    //    1 wrote without a barrier; hipErrorLaunchFailure) poisons the same way.
    set_launch_checks(Checks::all());
    let (_m, race) = function(CHECKS, c"lds_race");
    let mut o = out;
    let mut args = [(&raw mut o).cast::<c_void>()];
    // SAFETY: one pointer per explicit argument (the output pointer), to a live local.
    let code = unsafe { hipModuleLaunchKernel(race, 1, 1, 1, 128, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()) };
    assert_eq!(code, hipErrorLaunchFailure);
    let fault = device_fault(0).expect("poisoned by the finding");
    assert!(fault.message.contains("racecheck") && fault.message.contains("lds_race"), "{}", fault.message);
    let mut p = null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { hipMalloc(&mut p, 16) }, hipErrorLaunchFailure);
    ok(hipDeviceReset());
    set_launch_checks(Checks::default());

    // 5. A launch the runtime refuses (larger than the kernel's launch bound) poisons nothing.
    let (_m, f) = function(CLASSES, c"int_ops");
    let mut args = [(&raw mut o).cast::<c_void>(); 4];
    // SAFETY: four pointers to a live local (the launch is refused before any is read as more
    // than its argument's size).
    let code = unsafe { hipModuleLaunchKernel(f, 1, 1, 1, 512, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()) };
    assert_eq!(code, hipErrorLaunchFailure);
    assert_eq!(device_fault(0), None);
    // SAFETY: valid out-pointer.
    ok(unsafe { hipMalloc(&mut p, 16) });
}

/// An unparsable `AMDGPU_EMU_CHECKS` is reported through [`checks_env_error`], not printed.
/// (Nothing here sets the variable; the runtime read it at its first call.)
#[test]
fn checks_env_error_is_an_accessor() {
    assert_eq!(checks_env_error().is_some(), std::env::var("AMDGPU_EMU_CHECKS").is_ok_and(|v| Checks::parse(&v).is_err()));
}
