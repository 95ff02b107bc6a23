//! The HIP C ABI of the emulator, called directly (as a C program or `rocm-rs` would).
//!
//! Kernel fixtures: `tests/data/classes.hsaco` (built from `tests/data/classes.ll`): `int_ops`
//! (out, in, n, s; launch bound 256), `lds_barrier` (7168 bytes of static LDS: 256 × (4 + 8 +
//! 16) bytes in three arrays; bound 256),
//! `loop_2d` (bound 1024), each with the full code object v5 hidden-argument block.
#![cfg(feature = "hip-abi")]

use std::ffi::{CStr, c_int, c_void};
use std::ptr::{null, null_mut};

use amdgpu_emu::hip::*;

mod common;
use common::hip_result::{err, name, ok};

const CLASSES: &[u8] = include_bytes!("data/classes.hsaco");

fn malloc(size: usize) -> *mut c_void {
    let mut p = null_mut();
    // SAFETY: `p` is a valid out-pointer.
    ok(unsafe { hipMalloc(&mut p, size) });
    assert!(!p.is_null());
    p
}

fn htod<T: Copy>(dst: *mut c_void, src: &[T]) {
    // SAFETY: `src` is valid for its byte length.
    ok(unsafe { hipMemcpy(dst, src.as_ptr().cast(), size_of_val(src), hipMemcpyHostToDevice) });
}

fn dtoh<T: Copy>(dst: &mut [T], src: *mut c_void) {
    // SAFETY: `dst` is valid for its byte length.
    ok(unsafe { hipMemcpy(dst.as_mut_ptr().cast(), src, size_of_val(dst), hipMemcpyDeviceToHost) });
}

fn load_classes() -> hipModule_t {
    let mut m = null_mut();
    // SAFETY: CLASSES is a complete code object.
    ok(unsafe { hipModuleLoadData(&mut m, CLASSES.as_ptr().cast()) });
    assert!(!m.is_null());
    m
}

fn function(m: hipModule_t, kname: &CStr) -> hipFunction_t {
    let mut f = null_mut();
    // SAFETY: valid out-pointer and C string.
    ok(unsafe { hipModuleGetFunction(&mut f, m, kname.as_ptr()) });
    f
}

fn c_str(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn device_queries() {
    let mut n = -1;
    // SAFETY: valid out-pointers throughout.
    unsafe {
        ok(hipInit(0));
        err(hipInit(1), hipErrorInvalidValue);
        ok(hipGetDeviceCount(&mut n));
        assert_eq!(n, 1);
        err(hipGetDeviceCount(null_mut()), hipErrorInvalidValue);
        let mut d = -1;
        ok(hipGetDevice(&mut d));
        assert_eq!(d, 0);
        ok(hipSetDevice(0));
        err(hipSetDevice(1), hipErrorInvalidDevice);
        err(hipSetDevice(-1), hipErrorInvalidDevice);
        let mut v = 0;
        ok(hipRuntimeGetVersion(&mut v));
        assert_eq!(v, 60_342_133);
        ok(hipDriverGetVersion(&mut v));
        assert_eq!(v, 60_342_133);

        let mut p = std::mem::MaybeUninit::<hipDeviceProp_tR0600>::zeroed();
        ok(hipGetDevicePropertiesR0600(p.as_mut_ptr(), 0));
        let p = p.assume_init();
        assert_eq!(c_str(&p.name), "AMD Instinct MI300X (emulated)");
        assert_eq!(c_str(&p.gcnArchName), "gfx942:sramecc+:xnack-");
        assert_eq!(p.multiProcessorCount, 304);
        assert_eq!(p.sharedMemPerBlock, 65536);
        assert_eq!(p.warpSize, 64);
        assert_eq!(p.maxThreadsPerBlock, 1024);
        assert_eq!(p.clockRate, 2_100_000);
        assert_eq!(p.totalGlobalMem, 192 << 30);
        assert_eq!((p.major, p.minor), (9, 4));
        assert_eq!(p.maxGridSize, [i32::MAX, 65536, 65536]);
        err(hipGetDevicePropertiesR0600(null_mut(), 0), hipErrorInvalidValue);
        let mut q = std::mem::MaybeUninit::<hipDeviceProp_tR0600>::zeroed();
        err(hipGetDevicePropertiesR0600(q.as_mut_ptr(), 1), hipErrorInvalidDevice);

        let mut a = 0;
        ok(hipDeviceGetAttribute(&mut a, 63, 0)); // hipDeviceAttributeMultiprocessorCount
        assert_eq!(a, 304);
        ok(hipDeviceGetAttribute(&mut a, 87, 0)); // hipDeviceAttributeWarpSize
        assert_eq!(a, 64);
        ok(hipDeviceGetAttribute(&mut a, 74, 0)); // hipDeviceAttributeMaxSharedMemoryPerBlock
        assert_eq!(a, 65536);
        err(hipDeviceGetAttribute(&mut a, 4242, 0), hipErrorInvalidValue);

        let mut buf = [0 as std::ffi::c_char; 12];
        ok(hipDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, 0));
        assert_eq!(c_str(&buf), "AMD Instinc", "truncated to len - 1 bytes and NUL-terminated");

        let (mut lo, mut hi) = (7, 7);
        ok(hipDeviceGetStreamPriorityRange(&mut lo, &mut hi));
        assert_eq!((lo, hi), (0, -1));
        ok(hipDeviceSynchronize());
    }
}

#[test]
fn error_names_and_strings() {
    assert_eq!(name(hipSuccess), "hipSuccess");
    assert_eq!(name(hipErrorInvalidValue), "hipErrorInvalidValue");
    assert_eq!(name(hipErrorInvalidHandle), "hipErrorInvalidHandle");
    assert_eq!(name(hipErrorIllegalAddress), "hipErrorIllegalAddress");
    assert_eq!(name(hipErrorLaunchFailure), "hipErrorLaunchFailure");
    assert_eq!(name(12345), "hipErrorUnknown");
    let s = |c| {
        // SAFETY: hipGetErrorString returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(hipGetErrorString(c)) }.to_str().unwrap()
    };
    assert_eq!(s(hipSuccess), "no error");
    assert_eq!(s(hipErrorInvalidValue), "invalid argument");
    assert_eq!(s(hipErrorOutOfMemory), "out of memory");
    assert_eq!(s(hipErrorIllegalAddress), "an illegal memory access was encountered");
    assert_eq!(s(12345), "unknown error");
}

#[test]
fn last_error_is_sticky_per_thread_until_read() {
    // Run on a fresh thread so other tests' failures cannot interfere.
    std::thread::spawn(|| {
        assert_eq!(hipGetLastError(), hipSuccess);
        err(hipSetDevice(3), hipErrorInvalidDevice);
        ok(hipSetDevice(0));
        assert_eq!(hipPeekAtLastError(), hipErrorInvalidDevice, "a success does not clear it");
        assert_eq!(hipPeekAtLastError(), hipErrorInvalidDevice, "peek does not clear it");
        assert_eq!(hipGetLastError(), hipErrorInvalidDevice);
        assert_eq!(hipGetLastError(), hipSuccess, "get clears it");
        // Another thread's errors are not seen here.
        std::thread::spawn(|| err(hipFree(0x1234 as *mut c_void), hipErrorInvalidValue)).join().unwrap();
        assert_eq!(hipGetLastError(), hipSuccess);
    })
    .join()
    .unwrap();
}

#[test]
fn malloc_memcpy_free_round_trip() {
    let n = 1000usize;
    let a = malloc(n * 4);
    let b = malloc(n * 4);
    let src: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let mut zero = vec![1u32; n];
    dtoh(&mut zero, a);
    assert!(zero.iter().all(|&x| x == 0), "hipMalloc memory is zeroed");
    htod(a, &src);
    let mut back = vec![0u32; n];
    dtoh(&mut back, a);
    assert_eq!(back, src);

    // SAFETY: all host buffers are valid for the sizes passed.
    unsafe {
        // Device to device, then Default (direction from the pointers).
        ok(hipMemcpy(b, a, n * 4, hipMemcpyDeviceToDevice));
        let mut viab = vec![0u32; n];
        ok(hipMemcpy(viab.as_mut_ptr().cast(), b, n * 4, hipMemcpyDefault));
        assert_eq!(viab, src);
        // Explicit entry points, on an interior range.
        let part = [7u32, 8, 9];
        ok(hipMemcpyHtoD(a.byte_add(40), part.as_ptr() as *mut c_void, 12));
        ok(hipMemcpyDtoD(b.byte_add(400), a.byte_add(40), 12));
        let mut got = [0u32; 3];
        ok(hipMemcpyDtoH(got.as_mut_ptr().cast(), b.byte_add(400), 12));
        assert_eq!(got, part);
        // Host to host.
        let mut h = [0u32; 3];
        ok(hipMemcpy(h.as_mut_ptr().cast(), part.as_ptr().cast(), 12, hipMemcpyHostToHost));
        assert_eq!(h, part);
        // Size 0 is a no-op even with null pointers.
        ok(hipMemcpy(null_mut(), null(), 0, hipMemcpyHostToDevice));

        // Errors: past the end, wrong direction, null, unknown kind, host pointer as device.
        let mut big = vec![0u8; n * 4 + 1];
        err(hipMemcpy(big.as_mut_ptr().cast(), a, n * 4 + 1, hipMemcpyDeviceToHost), hipErrorInvalidValue);
        err(hipMemcpy(a.byte_add(4), big.as_ptr().cast(), n * 4, hipMemcpyHostToDevice), hipErrorInvalidValue);
        err(hipMemcpy(a, b, 4, hipMemcpyHostToDevice), hipErrorInvalidMemcpyDirection);
        err(hipMemcpy(big.as_mut_ptr().cast(), a, 4, hipMemcpyHostToDevice), hipErrorInvalidMemcpyDirection);
        err(hipMemcpy(a, big.as_ptr().cast(), 4, hipMemcpyDeviceToHost), hipErrorInvalidMemcpyDirection);
        err(hipMemcpy(a, big.as_ptr().cast(), 4, 77), hipErrorInvalidMemcpyDirection);
        err(hipMemcpy(null_mut(), a, 4, hipMemcpyDeviceToHost), hipErrorInvalidValue);
        err(hipMemcpyDtoD(a, big.as_mut_ptr().cast(), 4), hipErrorInvalidMemcpyDirection);
    }

    ok(hipFree(a));
    ok(hipFree(b));
    let mut after = [0u32; 1];
    // SAFETY: valid host buffer.
    err(unsafe { hipMemcpy(after.as_mut_ptr().cast(), a, 4, hipMemcpyDeviceToHost) }, hipErrorInvalidValue);
    err(hipFree(a), hipErrorInvalidValue);
    ok(hipFree(null_mut()));
}

#[test]
fn malloc_edge_cases() {
    let mut p = 0x55 as *mut c_void;
    // SAFETY: valid out-pointers.
    unsafe {
        ok(hipMalloc(&mut p, 0));
        assert!(p.is_null(), "size 0 gives null");
        err(hipMalloc(null_mut(), 16), hipErrorInvalidValue);
        err(hipMalloc(&mut p, 193 << 30), hipErrorOutOfMemory);
        let (mut free, mut total) = (0usize, 0usize);
        ok(hipMemGetInfo(&mut free, &mut total));
        assert_eq!(total, 192 << 30);
        assert!(free <= total);
        err(hipMemGetInfo(null_mut(), &mut total), hipErrorInvalidValue);
    }
    let a = malloc(4096);
    err(hipFree(a.wrapping_byte_add(16)), hipErrorInvalidValue);
    let host = [0u8; 4];
    err(hipFree(host.as_ptr() as *mut c_void), hipErrorInvalidValue);
    ok(hipFree(a));
}

#[test]
fn memset_variants() {
    let a = malloc(64);
    ok(hipMemset(a, 0x1AB, 64)); // (unsigned char)0x1AB = 0xAB
    let mut b = [0u8; 64];
    dtoh(&mut b, a);
    assert!(b.iter().all(|&x| x == 0xAB));
    ok(hipMemsetD16(a.wrapping_byte_add(2), 0x1234, 3));
    ok(hipMemsetD32(a.wrapping_byte_add(8), 0x0102_0304, 2));
    ok(hipMemsetD8(a.wrapping_byte_add(16), 0x5A, 1));
    dtoh(&mut b, a);
    assert_eq!(&b[..20], &[0xAB, 0xAB, 0x34, 0x12, 0x34, 0x12, 0x34, 0x12, 4, 3, 2, 1, 4, 3, 2, 1, 0x5A, 0xAB, 0xAB, 0xAB]);
    // Out of the allocation, host memory, null.
    err(hipMemset(a, 0, 65), hipErrorInvalidValue);
    err(hipMemsetD32(a.wrapping_byte_add(60), 0, 2), hipErrorInvalidValue);
    let mut host = [0u8; 8];
    err(hipMemset(host.as_mut_ptr().cast(), 0, 8), hipErrorInvalidValue);
    err(hipMemsetD8(null_mut(), 0, 1), hipErrorInvalidValue);
    ok(hipMemset(a, 0, 0));
    ok(hipFree(a));
    err(hipMemset(a, 0, 1), hipErrorInvalidValue);
}

#[test]
fn streams_async_copies_and_callbacks() {
    let mut s = null_mut();
    // SAFETY: valid out-pointers and host buffers throughout.
    unsafe {
        ok(hipStreamCreate(&mut s));
        assert!(!s.is_null());
        let mut nb = null_mut();
        ok(hipStreamCreateWithFlags(&mut nb, hipStreamNonBlocking));
        let mut flags = 9;
        ok(hipStreamGetFlags(nb, &mut flags));
        assert_eq!(flags, hipStreamNonBlocking);
        err(hipStreamCreateWithFlags(&mut nb, 8), hipErrorInvalidValue);
        let mut pr = null_mut();
        ok(hipStreamCreateWithPriority(&mut pr, 0, -7));
        let mut prio = 0;
        ok(hipStreamGetPriority(pr, &mut prio));
        assert_eq!(prio, -1, "clamped to the greatest priority");
        let mut dev = 5;
        ok(hipStreamGetDevice(s, &mut dev));
        assert_eq!(dev, 0);

        let a = malloc(16);
        let src = [1u32, 2, 3, 4];
        ok(hipMemcpyAsync(a, src.as_ptr().cast(), 16, hipMemcpyHostToDevice, s));
        ok(hipMemsetD32Async(a, 9, 1, s));
        let mut out = [0u32; 4];
        ok(hipMemcpyDtoHAsync(out.as_mut_ptr().cast(), a, 16, s));
        unsafe extern "C" fn cb(_s: hipStream_t, status: hipError_t, user: *mut c_void) {
            // SAFETY: `user` is the counter passed below.
            unsafe { *user.cast::<u32>() += 1 + status };
        }
        let mut hits = 0u32;
        ok(hipStreamAddCallback(s, Some(cb), (&raw mut hits).cast(), 0));
        err(hipStreamAddCallback(s, None, null_mut(), 0), hipErrorInvalidValue);
        // Streams are in-order queues that run when synchronized: nothing has happened yet.
        assert_eq!(out, [0; 4]);
        assert_eq!(hits, 0);
        err(hipStreamQuery(s), hipErrorNotReady);
        ok(hipStreamSynchronize(s));
        assert_eq!(out, [9, 2, 3, 4]);
        assert_eq!(hits, 1, "the callback ran after the copies, with hipSuccess");
        ok(hipStreamQuery(s));
        ok(hipStreamSynchronize(null_mut()));
        ok(hipStreamSynchronize(hipStreamPerThread));

        ok(hipStreamDestroy(s));
        ok(hipStreamDestroy(nb));
        ok(hipStreamDestroy(pr));
        // Destroyed and made-up handles are rejected, never dereferenced.
        err(hipStreamDestroy(s), hipErrorInvalidHandle);
        err(hipStreamSynchronize(s), hipErrorInvalidHandle);
        err(hipStreamQuery(0xdead_0000 as hipStream_t), hipErrorInvalidHandle);
        err(hipMemcpyAsync(a, src.as_ptr().cast(), 16, hipMemcpyHostToDevice, s), hipErrorInvalidHandle);
        err(hipMemsetAsync(a, 0, 4, s), hipErrorInvalidHandle);
        err(hipStreamDestroy(null_mut()), hipErrorInvalidHandle);
        err(hipStreamCreate(null_mut()), hipErrorInvalidValue);
        ok(hipFree(a));
    }
}

#[test]
fn events_time_with_the_host_clock() {
    let (mut e0, mut e1, mut nt) = (null_mut(), null_mut(), null_mut());
    let mut s = null_mut();
    // SAFETY: valid out-pointers throughout.
    unsafe {
        ok(hipStreamCreate(&mut s));
        ok(hipEventCreate(&mut e0));
        ok(hipEventCreateWithFlags(&mut e1, hipEventBlockingSync));
        ok(hipEventCreateWithFlags(&mut nt, hipEventDisableTiming));
        err(hipEventCreateWithFlags(&mut nt, 0x10), hipErrorInvalidValue);
        err(hipEventCreateWithFlags(&mut nt, hipEventInterprocess), hipErrorInvalidValue);
        let mut ms = -1.0f32;
        err(hipEventElapsedTime(&mut ms, e0, e1), hipErrorInvalidHandle); // never recorded
        ok(hipEventRecord(e0, s));
        std::thread::sleep(std::time::Duration::from_millis(30));
        ok(hipEventRecord(e1, null_mut()));
        ok(hipEventSynchronize(e1));
        ok(hipEventQuery(e1));
        ok(hipEventElapsedTime(&mut ms, e0, e1));
        assert!((30.0..10_000.0).contains(&ms), "elapsed {ms} ms for a 30 ms sleep");
        let mut back = 0.0f32;
        ok(hipEventElapsedTime(&mut back, e1, e0));
        assert_eq!(back, -ms);
        ok(hipEventRecord(nt, s));
        err(hipEventElapsedTime(&mut ms, e0, nt), hipErrorInvalidHandle);
        err(hipEventElapsedTime(null_mut(), e0, e1), hipErrorInvalidValue);
        ok(hipStreamWaitEvent(s, e0, 0));
        ok(hipEventDestroy(e0));
        err(hipEventDestroy(e0), hipErrorInvalidHandle);
        err(hipEventRecord(e0, s), hipErrorInvalidHandle);
        err(hipEventSynchronize(e0), hipErrorInvalidHandle);
        err(hipStreamWaitEvent(s, e0, 0), hipErrorInvalidHandle);
        err(hipEventRecord(e1, 0xbad0 as hipStream_t), hipErrorInvalidHandle);
        ok(hipEventDestroy(e1));
        ok(hipEventDestroy(nt));
        ok(hipStreamDestroy(s));
    }
}

#[test]
fn host_malloc() {
    let mut p = null_mut();
    // SAFETY: valid out-pointer; the buffer is 256 bytes.
    unsafe {
        ok(hipHostMalloc(&mut p, 256, 0));
        assert_eq!(p as usize % 4096, 0);
        let d = malloc(256);
        p.cast::<u8>().write_bytes(0x3C, 256);
        ok(hipMemcpy(d, p, 256, hipMemcpyHostToDevice));
        let mut b = [0u8; 256];
        dtoh(&mut b, d);
        assert!(b.iter().all(|&x| x == 0x3C));
        let mut dp = null_mut();
        err(hipHostGetDevicePointer(&mut dp, p, 0), hipErrorNotSupported);
        ok(hipHostFree(p));
        err(hipHostFree(p), hipErrorInvalidValue);
        ok(hipFree(d));
    }
}

#[test]
fn module_load_and_function_lookup() {
    let m = load_classes();
    let f = function(m, c"int_ops");
    assert_eq!(function(m, c"int_ops"), f, "repeated lookups give the same handle");
    let g = function(m, c"loop_2d");
    assert_ne!(f, g);
    let mut h = null_mut();
    // SAFETY: valid out-pointers and C strings throughout.
    unsafe {
        err(hipModuleGetFunction(&mut h, m, c"no_such_kernel".as_ptr()), hipErrorNotFound);
        err(hipModuleGetFunction(&mut h, 0x7777_0000 as hipModule_t, c"int_ops".as_ptr()), hipErrorInvalidHandle);
        err(hipModuleGetFunction(null_mut(), m, c"int_ops".as_ptr()), hipErrorInvalidValue);
        err(hipModuleGetFunction(&mut h, m, null()), hipErrorInvalidValue);

        let mut v = 0;
        ok(hipFuncGetAttribute(&mut v, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
        assert_eq!(v, 256);
        ok(hipFuncGetAttribute(&mut v, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, g));
        assert_eq!(v, 1024);
        let lds = function(m, c"lds_barrier");
        ok(hipFuncGetAttribute(&mut v, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, lds));
        assert_eq!(v, 256 * (4 + 8 + 16), "[256 x i32], [256 x i64], [256 x <4 x i32>] of static LDS");
        ok(hipFuncGetAttribute(&mut v, HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, lds));
        assert_eq!(v, 65536 - 7168);
        err(hipFuncGetAttribute(&mut v, HIP_FUNC_ATTRIBUTE_NUM_REGS, 0x10 as hipFunction_t), hipErrorInvalidHandle);

        // Unload: the module handle and its function handles die with it (the code object is
        // freed; see tests/hip_leaks.rs for the count).
        ok(hipModuleUnload(m));
        err(hipModuleUnload(m), hipErrorInvalidHandle);
        err(hipModuleGetFunction(&mut h, m, c"int_ops".as_ptr()), hipErrorInvalidHandle);
        v = -1;
        err(hipFuncGetAttribute(&mut v, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), hipErrorInvalidHandle);
        assert_eq!(v, -1, "nothing written through the out-pointer");
    }
}

#[test]
fn module_load_rejects_bad_images() {
    let mut m = null_mut();
    // SAFETY: every image passed is a complete buffer of at least 64 bytes.
    unsafe {
        let junk = [0x42u8; 128];
        err(hipModuleLoadData(&mut m, junk.as_ptr().cast()), hipErrorInvalidImage);
        err(hipModuleLoadData(&mut m, null()), hipErrorInvalidValue);
        err(hipModuleLoadData(null_mut(), CLASSES.as_ptr().cast()), hipErrorInvalidValue);
        // An x86-64 ELF is not a code object.
        let mut x86 = CLASSES.to_vec();
        x86[18] = 62;
        err(hipModuleLoadData(&mut m, x86.as_ptr().cast()), hipErrorInvalidImage);
        // The same code object marked for gfx950 (e_flags mach 0x4f) has no binary for gfx942.
        let mut gfx950 = CLASSES.to_vec();
        gfx950[48] = 0x4f;
        err(hipModuleLoadData(&mut m, gfx950.as_ptr().cast()), hipErrorNoBinaryForGpu);
        // A truncated section table is caught by the parser, not read out of bounds: the image
        // length comes from the headers, so cut the file logically by pointing e_shoff too far.
        let mut far = CLASSES.to_vec();
        far[40..48].copy_from_slice(&(1u64 << 40).to_le_bytes());
        err(hipModuleLoadData(&mut m, far.as_ptr().cast()), hipErrorInvalidImage);
    }
}

fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut header = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    header.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    let table_len: usize = entries.iter().map(|(t, _)| 24 + t.len()).sum();
    let mut offset = (header.len() + table_len).next_multiple_of(4096);
    let mut body = Vec::new();
    for (triple, bytes) in entries {
        header.extend_from_slice(&(offset as u64).to_le_bytes());
        header.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        header.extend_from_slice(&(triple.len() as u64).to_le_bytes());
        header.extend_from_slice(triple.as_bytes());
        body.push((offset, *bytes));
        offset = (offset + bytes.len()).next_multiple_of(4096);
    }
    let mut out = header;
    for (o, b) in body {
        out.resize(o, 0);
        out.extend_from_slice(b);
    }
    out
}

#[test]
fn module_load_from_offload_bundle_and_file() {
    let good = bundle(&[("host-x86_64-unknown-linux-gnu-", &[]), ("hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", CLASSES)]);
    let other = bundle(&[("host-x86_64-unknown-linux-gnu-", &[]), ("hipv4-amdgcn-amd-amdhsa--gfx90a", CLASSES)]);
    let mut m = null_mut();
    // SAFETY: complete images; valid out-pointers and C strings.
    unsafe {
        ok(hipModuleLoadData(&mut m, good.as_ptr().cast()));
        let f = function(m, c"float_ops");
        assert!(!f.is_null());
        ok(hipModuleUnload(m));
        err(hipModuleLoadData(&mut m, other.as_ptr().cast()), hipErrorNoBinaryForGpu);

        let path = std::ffi::CString::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/classes.hsaco")).unwrap();
        ok(hipModuleLoad(&mut m, path.as_ptr()));
        let _ = function(m, c"mfma_ops");
        ok(hipModuleUnload(m));
        err(hipModuleLoad(&mut m, c"/nonexistent/x.hsaco".as_ptr()), hipErrorFileNotFound);
    }
}

/// Launches `f` with `kernelParams` built from `args` (one pointer per explicit argument).
///
/// # Safety
/// `args` matches the kernel's explicit arguments.
unsafe fn launch(f: hipFunction_t, grid: [u32; 3], block: [u32; 3], lds: u32, args: &mut [*mut c_void]) -> hipError_t {
    let params = if args.is_empty() { null_mut() } else { args.as_mut_ptr() };
    // SAFETY: caller contract.
    unsafe { hipModuleLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], lds, null_mut(), params, null_mut()) }
}

#[test]
fn launch_validation() {
    let m = load_classes();
    let int_ops = function(m, c"int_ops");
    let lds_barrier = function(m, c"lds_barrier");
    let buf = malloc(4096);
    let (mut out, mut inp, mut n, mut s) = (buf, buf, 3u32, 1u32);
    let mut args = [(&raw mut out).cast(), (&raw mut inp).cast(), (&raw mut n).cast(), (&raw mut s).cast::<c_void>()];
    // SAFETY: `args` matches int_ops / lds_barrier (whose two pointer arguments come first).
    unsafe {
        // Larger than the launch bound (256): hipErrorLaunchFailure with HIP's message.
        err(launch(int_ops, [1, 1, 1], [512, 1, 1], 0, &mut args), hipErrorLaunchFailure);
        let msg = last_launch_error().expect("message kept");
        assert!(msg.contains("int_ops") && msg.contains("Launch params (512, 1, 1) are larger than launch bounds (256)"), "{msg}");
        err(launch(int_ops, [1, 1, 1], [16, 16, 2], 0, &mut args), hipErrorLaunchFailure);
        // Device limits: hipErrorInvalidValue.
        err(launch(int_ops, [1, 1, 1], [2048, 1, 1], 0, &mut args), hipErrorInvalidValue);
        err(launch(int_ops, [1, 1, 1], [64, 1, 0], 0, &mut args), hipErrorInvalidValue);
        err(launch(int_ops, [0, 1, 1], [64, 1, 1], 0, &mut args), hipErrorInvalidValue);
        err(launch(int_ops, [1, 65537, 1], [64, 1, 1], 0, &mut args), hipErrorInvalidValue);
        err(launch(int_ops, [1, 1, 1], [64, 1, 1], 65537, &mut args), hipErrorInvalidValue);
        // LDS: 7168 static + 58369 dynamic does not fit in 64 KiB; 58368 would.
        err(launch(lds_barrier, [1, 1, 1], [256, 1, 1], 58369, &mut args[..2]), hipErrorLaunchOutOfResources);
        let msg = last_launch_error().unwrap();
        assert!(msg.contains("lds_barrier") && msg.contains("65537"), "{msg}");
        // Arguments: none, or both forms.
        err(launch(int_ops, [1, 1, 1], [64, 1, 1], 0, &mut []), hipErrorInvalidValue);
        let mut size = 24usize;
        let mut extra = [HIP_LAUNCH_PARAM_BUFFER_POINTER, args[0], HIP_LAUNCH_PARAM_BUFFER_SIZE, (&raw mut size).cast(), HIP_LAUNCH_PARAM_END];
        err(hipModuleLaunchKernel(int_ops, 1, 1, 1, 64, 1, 1, 0, null_mut(), args.as_mut_ptr(), extra.as_mut_ptr()), hipErrorInvalidValue);
        extra[4] = null_mut();
        err(hipModuleLaunchKernel(int_ops, 1, 1, 1, 64, 1, 1, 0, null_mut(), null_mut(), extra.as_mut_ptr()), hipErrorInvalidValue);
        // Handles.
        err(launch(0x30 as hipFunction_t, [1, 1, 1], [64, 1, 1], 0, &mut args), hipErrorInvalidHandle);
        err(launch(null_mut(), [1, 1, 1], [64, 1, 1], 0, &mut args), hipErrorInvalidHandle);
        err(hipModuleLaunchKernel(int_ops, 1, 1, 1, 64, 1, 1, 0, 0xabc0 as hipStream_t, args.as_mut_ptr(), null_mut()), hipErrorInvalidHandle);
        assert!(last_launch_error().unwrap().contains("invalid stream"));
    }
    ok(hipFree(buf));
    ok(hipModuleUnload(m));
}

/// The explicit arguments land at their `.offset`s and the hidden ones get HIP's values, whether
/// passed through `kernelParams` or through `extra`.
#[test]
fn kernarg_marshalling() {
    let m = load_classes();
    let int_ops = function(m, c"int_ops");
    let inp = malloc(4096 * 4);
    let out = malloc(4096 * 4);
    let (mut o, mut i, mut n, mut s) = (out, inp, 3u32, 5u32);
    let mut args = [(&raw mut o).cast(), (&raw mut i).cast(), (&raw mut n).cast(), (&raw mut s).cast::<c_void>()];
    // SAFETY: `args` matches int_ops; its indices stay below 3 * 256 + 64 < 4096.
    let code = unsafe { launch(int_ops, [3, 2, 1], [64, 1, 1], 0, &mut args) };
    assert_eq!(code, hipSuccess, "{:?}", last_launch_error());
    let report = last_launch_report().expect("counters of the successful launch");
    assert_eq!((report.workgroups, report.waves), (6, 6), "3 × 2 workgroups of one wave each");
    let k = last_launch_kernarg().expect("kernarg built");
    assert_eq!(k.len(), 280);
    let u64_at = |o: usize| u64::from_le_bytes(k[o..o + 8].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(k[o..o + 4].try_into().unwrap());
    let u16_at = |o: usize| u16::from_le_bytes(k[o..o + 2].try_into().unwrap());
    assert_eq!(u64_at(0), out as u64);
    assert_eq!(u64_at(8), inp as u64);
    assert_eq!((u32_at(16), u32_at(20)), (3, 5));
    assert_eq!([u32_at(24), u32_at(28), u32_at(32)], [3, 2, 1], "hidden_block_count_*");
    assert_eq!([u16_at(36), u16_at(38), u16_at(40)], [64, 1, 1], "hidden_group_size_*");
    assert_eq!([u16_at(42), u16_at(44), u16_at(46)], [0, 0, 0], "hidden_remainder_*");
    assert_eq!(u16_at(88), 3, "hidden_grid_dims");
    assert!(k[48..88].iter().all(|&b| b == 0), "padding and global offsets are zero");
    assert!(k[90..].iter().all(|&b| b == 0), "unmodelled services are zero");

    // The same through `extra`: a packed buffer holding the explicit arguments.
    let mut packed = Vec::new();
    packed.extend_from_slice(&(out as u64).to_le_bytes());
    packed.extend_from_slice(&(inp as u64).to_le_bytes());
    packed.extend_from_slice(&3u32.to_le_bytes());
    packed.extend_from_slice(&5u32.to_le_bytes());
    let mut size = packed.len();
    let mut extra = [HIP_LAUNCH_PARAM_BUFFER_POINTER, packed.as_mut_ptr().cast(), HIP_LAUNCH_PARAM_BUFFER_SIZE, (&raw mut size).cast(), HIP_LAUNCH_PARAM_END];
    // SAFETY: a well-formed `extra` array.
    let code2 = unsafe { hipModuleLaunchKernel(int_ops, 3, 2, 1, 64, 1, 1, 0, null_mut(), null_mut(), extra.as_mut_ptr()) };
    assert_eq!(code2, code, "both forms launch alike");
    assert_eq!(last_launch_kernarg().unwrap(), k);
    // A buffer too short for the last explicit argument is rejected.
    // SAFETY: extra[3] points to `size`, alive and not otherwise borrowed; then as above.
    unsafe { extra[3].cast::<usize>().write(20) };
    // SAFETY: as above.
    err(unsafe { hipModuleLaunchKernel(int_ops, 3, 2, 1, 64, 1, 1, 0, null_mut(), null_mut(), extra.as_mut_ptr()) }, hipErrorInvalidValue);
    assert!(last_launch_error().unwrap().contains("does not cover"));
    ok(hipFree(inp));
    ok(hipFree(out));
    ok(hipModuleUnload(m));
}
