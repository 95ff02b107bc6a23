//! `hipDeviceReset` destroys everything on the emulated device. In its own test binary (its own
//! process), since the emulated device is shared by every thread of a process.
#![cfg(feature = "hip-abi")]

use std::ffi::c_void;
use std::ptr::null_mut;

use amdgpu_emu::hip::*;

#[test]
fn device_reset_invalidates_every_resource() {
    let code = include_bytes!("data/classes.hsaco");
    let (mut p, mut h, mut s, mut e, mut m, mut f) = (null_mut(), null_mut(), null_mut(), null_mut(), null_mut(), null_mut());
    // SAFETY: valid out-pointers, a complete code object, host buffers of the sizes passed.
    unsafe {
        assert_eq!(hipMalloc(&mut p, 256), hipSuccess);
        assert_eq!(hipHostMalloc(&mut h, 256, 0), hipSuccess);
        assert_eq!(hipStreamCreate(&mut s), hipSuccess);
        assert_eq!(hipEventCreate(&mut e), hipSuccess);
        assert_eq!(hipModuleLoadData(&mut m, code.as_ptr().cast()), hipSuccess);
        assert_eq!(hipModuleGetFunction(&mut f, m, c"int_ops".as_ptr()), hipSuccess);
        assert_eq!(device_memory().bytes_live(), 256);
        assert_eq!(hipSetDevice(9), hipErrorInvalidDevice);

        assert_eq!(hipDeviceReset(), hipSuccess);
        assert_eq!(hipGetLastError(), hipSuccess, "the reset clears the last error");
        assert_eq!(device_memory().bytes_live(), 0);
        let mut x = [0u8; 4];
        assert_eq!(hipMemcpy(x.as_mut_ptr().cast(), p, 4, hipMemcpyDeviceToHost), hipErrorInvalidValue);
        assert_eq!(hipFree(p), hipErrorInvalidValue);
        assert_eq!(hipHostFree(h), hipErrorInvalidValue);
        assert_eq!(hipStreamSynchronize(s), hipErrorInvalidHandle);
        assert_eq!(hipEventRecord(e, null_mut()), hipErrorInvalidHandle);
        assert_eq!(hipModuleUnload(m), hipErrorInvalidHandle);
        let mut v = 0;
        assert_eq!(hipFuncGetAttribute(&mut v, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), hipErrorInvalidHandle);

        // The device works again afterwards.
        let mut q: *mut c_void = null_mut();
        assert_eq!(hipMalloc(&mut q, 16), hipSuccess);
        assert_eq!(hipMemsetD32(q, 7, 4), hipSuccess);
        let mut y = [0u32; 4];
        assert_eq!(hipMemcpy(y.as_mut_ptr().cast(), q, 16, hipMemcpyDefault), hipSuccess);
        assert_eq!(y, [7; 4]);
        assert_eq!(hipFree(q), hipSuccess);
    }
}
