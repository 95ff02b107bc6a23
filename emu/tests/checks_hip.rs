//! Through the HIP C ABI, `set_launch_checks(Checks::all())` turns on every checking mode: the
//! planted LDS race of `tests/data/checks.hsaco` fails its launch with `hipErrorLaunchFailure`
//! and a message naming the kernel, the check, waves and address, while the corrected kernel runs and
//! its counters are kept. A finding poisons the device as a fault does, so the test resets it after
//! each. (`set_launch_checks` and the reset are process-wide, so this test has its own binary.)
#![cfg(feature = "hip-abi")]

use std::ffi::c_void;
use std::ptr::null_mut;

use amdgpu_emu::exec::Checks;
use amdgpu_emu::hip::*;

/// Launches `kernel(out)` as one workgroup of 128 work-items.
fn launch(f: hipFunction_t, out: *mut c_void) -> hipError_t {
    let mut o = out;
    let mut args = [(&raw mut o).cast::<c_void>()];
    // SAFETY: `args` holds one pointer per explicit argument (the output pointer), to a live local.
    unsafe { hipModuleLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()) }
}

/// Loads the checks module: `(module, lds_race, lds_exchange, a 512-byte output)`.
fn setup() -> (hipModule_t, hipFunction_t, hipFunction_t, *mut c_void) {
    let code = include_bytes!("data/checks.hsaco");
    let (mut m, mut race, mut exchange) = (null_mut(), null_mut(), null_mut());
    let mut out = null_mut();
    // SAFETY: a complete code object; valid out-pointers and C strings.
    unsafe {
        assert_eq!(hipModuleLoadData(&mut m, code.as_ptr().cast()), hipSuccess);
        assert_eq!(hipModuleGetFunction(&mut race, m, c"lds_race".as_ptr()), hipSuccess);
        assert_eq!(hipModuleGetFunction(&mut exchange, m, c"lds_exchange".as_ptr()), hipSuccess);
        assert_eq!(hipMalloc(&mut out, 512), hipSuccess);
    }
    (m, race, exchange, out)
}

#[test]
fn all_checks_through_hip() {
    let (_, race, _, out) = setup();
    // Memcheck only: the race goes unseen.
    set_launch_checks(Checks::default());
    assert_eq!(launch(race, out), hipSuccess, "{:?}", last_launch_error());

    // Every mode: the waves issue round-robin, so wave 1 has written word 64 when wave 0 reads
    // it in the same barrier interval: racecheck reports the read.
    set_launch_checks(Checks::all());
    assert_eq!(launch(race, out), hipErrorLaunchFailure);
    let msg = last_launch_error().expect("the finding's message");
    assert!(msg.contains("racecheck") && msg.contains("lds_race") && msg.contains("wave 0 lane 0 LDS address 0x100"), "{msg}");
    assert!(last_launch_report().is_none());
    assert_eq!(device_fault(0).map(|f| f.message), Some(msg), "the finding poisons the device");
    assert_eq!(hipDeviceReset(), hipSuccess);

    // racecheck alone: wave 1's write of what wave 0 read.
    let (_, race, _, out) = setup();
    set_launch_checks(Checks { racecheck: true, ..Checks::default() });
    assert_eq!(launch(race, out), hipErrorLaunchFailure);
    let msg = last_launch_error().expect("the finding's message");
    assert!(msg.contains("racecheck") && msg.contains("lds_race") && msg.contains("wave 1") && msg.contains("wave 0"), "{msg}");
    assert_eq!(hipDeviceReset(), hipSuccess);

    let (m, _, exchange, out) = setup();
    set_launch_checks(Checks::all());

    assert_eq!(launch(exchange, out), hipSuccess, "{:?}", last_launch_error());
    let r = last_launch_report().expect("counters");
    assert_eq!(r.waves, 2);
    assert_eq!(r.counters.global_write_bytes, 128 * 4);
    let mut got = [0u32; 128];
    // SAFETY: host buffer of 512 bytes; `out` is a 512-byte device allocation.
    unsafe {
        assert_eq!(hipMemcpy(got.as_mut_ptr().cast(), out, 512, hipMemcpyDeviceToHost), hipSuccess);
        assert_eq!(hipFree(out), hipSuccess);
        assert_eq!(hipModuleUnload(m), hipSuccess);
    }
    let want: Vec<u32> = (0..128).map(|i| (i + 64) % 128).collect();
    assert_eq!(got.to_vec(), want);
    set_launch_checks(Checks::default());
}
