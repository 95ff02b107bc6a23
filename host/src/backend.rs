//! The HIP runtime behind a [`Context`](crate::Context), chosen at run time.
//!
//! * [`Backend::Emulator`] (crate feature `emu`, on by default): the bundled gfx942 emulator
//!   (`amdgpu-emu`), called as a Rust library. Nothing is linked or exported: a binary that also
//!   links the real `libamdhip64` keeps both, unambiguously.
//! * [`Backend::Hip`] (crate feature `rocm`): the ROCm runtime through `rocm-rs`, which links
//!   `libamdhip64` (and needs ROCm's headers, or `SKIP_BINDGEN=1`, to build).
//!
//! The features are additive: with both, [`Backend::default_backend`] is `Hip` and the emulator stays
//! available through [`Context::with_backend`](crate::Context::with_backend). Both backends are
//! the same HIP C API (the emulator implements HIP's signatures), so one implementation, written
//! once as a macro, serves both.
#![cfg_attr(not(any(feature = "emu", feature = "rocm")), allow(dead_code, unused_macros, unused_imports))]

use std::ffi::{CStr, c_char, c_void};

/// Which HIP runtime a [`Context`](crate::Context) uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// The bundled gfx942 emulator (crate feature `emu`).
    Emulator,
    /// The ROCm runtime, `libamdhip64` (crate feature `rocm`).
    Hip,
}

impl Backend {
    /// The backends compiled into this build.
    pub fn available() -> &'static [Backend] {
        &[
            #[cfg(feature = "rocm")]
            Backend::Hip,
            #[cfg(feature = "emu")]
            Backend::Emulator,
        ]
    }

    /// The first of [`Backend::available`]: `Hip` when built with `rocm`, else `Emulator`;
    /// `None` in a build with neither feature.
    pub fn default_backend() -> Option<Backend> {
        Self::available().first().copied()
    }

    pub(crate) fn api(self) -> Option<&'static dyn Api> {
        match self {
            #[cfg(feature = "emu")]
            Backend::Emulator => Some(&emu::EMU),
            #[cfg(feature = "rocm")]
            Backend::Hip => Some(&rocm::ROCM),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::Emulator => "emulator",
            Backend::Hip => "hip",
        })
    }
}

/// A raw HIP handle (stream, event, module, function, graph): an opaque pointer.
pub(crate) type Handle = *mut c_void;

/// A failed HIP call: its `hipError_t`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Code(pub(crate) u32);

pub(crate) type HipResult<T> = std::result::Result<T, Code>;

/// What a device reports about itself.
pub(crate) struct DeviceInfo {
    pub(crate) name: String,
    pub(crate) arch_name: String,
    pub(crate) compute_units: u32,
}

/// The HIP runtime calls the library makes. Every method is one HIP call; `unsafe` ones take
/// raw handles or addresses, with HIP's contract for them.
pub(crate) trait Api: Send + Sync {
    fn backend(&self) -> Backend;
    fn error_name(&self, code: u32) -> String;
    /// The backend's description of the calling thread's last failed launch, if it has one.
    fn launch_detail(&self) -> Option<String>;
    /// If `code`, returned by HIP call `call` while `device` was current, is a kernel fault that
    /// poisoned the device (HIP's sticky error): the finding's description. `None` for an
    /// ordinary failure of that call alone.
    fn device_fault(&self, device: i32, call: &'static str, code: u32) -> Option<String>;
    fn device_count(&self) -> HipResult<i32>;
    fn get_device(&self) -> HipResult<i32>;
    fn set_device(&self, device: i32) -> HipResult<()>;
    fn device_info(&self, device: i32) -> HipResult<DeviceInfo>;
    fn device_synchronize(&self) -> HipResult<()>;
    /// `hipRuntimeGetVersion`: HIP_VERSION of the runtime (major·10⁷ + minor·10⁵ + patch).
    fn runtime_version(&self) -> HipResult<i32>;
    fn malloc(&self, bytes: usize) -> HipResult<u64>;
    /// # Safety
    /// `stream` is a live stream of the current device.
    unsafe fn malloc_async(&self, bytes: usize, stream: Handle) -> HipResult<u64>;
    /// # Safety
    /// `addr` is null or a live allocation of this backend, not used by any work afterwards.
    unsafe fn free(&self, addr: u64) -> HipResult<()>;
    /// # Safety
    /// `addr` is a live allocation no work ordered after this point of `stream` uses.
    unsafe fn free_async(&self, addr: u64, stream: Handle) -> HipResult<()>;
    /// # Safety
    /// `addr` is a live allocation of at least `bytes` bytes (or `bytes == 0`).
    unsafe fn memset_sync(&self, addr: u64, value: u8, bytes: usize) -> HipResult<()>;
    /// # Safety
    /// `dst` is device memory of `bytes` bytes; `src` is readable for `bytes` bytes now.
    unsafe fn htod_sync(&self, dst: u64, src: *const u8, bytes: usize) -> HipResult<()>;
    /// # Safety
    /// As [`Api::htod_sync`]; `src` stays valid until the copy has run (HIP's contract).
    unsafe fn htod_async(&self, dst: u64, src: *const u8, bytes: usize, stream: Handle) -> HipResult<()>;
    /// # Safety
    /// `dst` is writable for `bytes` bytes until the copy has run; `src` device memory.
    unsafe fn dtoh_async(&self, dst: *mut u8, src: u64, bytes: usize, stream: Handle) -> HipResult<()>;
    /// # Safety
    /// Both are device ranges of `bytes` bytes; `stream` is a live stream.
    unsafe fn dtod_async(&self, dst: u64, src: u64, bytes: usize, stream: Handle) -> HipResult<()>;
    /// # Safety
    /// `dst` is a device range of `bytes` bytes; `stream` is a live stream.
    unsafe fn memset_async(&self, dst: u64, value: u8, bytes: usize, stream: Handle) -> HipResult<()>;
    fn module_load(&self, image: &[u8]) -> HipResult<Handle>;
    /// # Safety
    /// `module` is a loaded module no queued work uses.
    unsafe fn module_unload(&self, module: Handle) -> HipResult<()>;
    /// # Safety
    /// `module` is a loaded module.
    unsafe fn module_function(&self, module: Handle, name: &CStr) -> HipResult<Handle>;
    /// # Safety
    /// `function` is a live kernel; `params` is HIP's `kernelParams` for it; `stream` is live.
    unsafe fn launch(&self, function: Handle, grid: [u32; 3], block: [u32; 3], lds: u32, stream: Handle, params: *mut *mut c_void) -> HipResult<()>;
    fn stream_create(&self, non_blocking: bool) -> HipResult<Handle>;
    /// # Safety
    /// `stream` is a stream this code created and nobody uses afterwards.
    unsafe fn stream_destroy(&self, stream: Handle) -> HipResult<()>;
    /// # Safety
    /// `stream` is live.
    unsafe fn stream_synchronize(&self, stream: Handle) -> HipResult<()>;
    /// # Safety
    /// Both handles are live.
    unsafe fn stream_wait_event(&self, stream: Handle, event: Handle) -> HipResult<()>;
    /// # Safety
    /// `stream` is live.
    unsafe fn stream_is_capturing(&self, stream: Handle) -> HipResult<bool>;
    fn event_create(&self, timing: bool) -> HipResult<Handle>;
    /// # Safety
    /// Both handles are live.
    unsafe fn event_record(&self, event: Handle, stream: Handle) -> HipResult<()>;
    /// # Safety
    /// `event` is live.
    unsafe fn event_synchronize(&self, event: Handle) -> HipResult<()>;
    /// `Ok(true)`: complete; `Ok(false)`: not ready.
    /// # Safety
    /// `event` is live.
    unsafe fn event_query(&self, event: Handle) -> HipResult<bool>;
    /// # Safety
    /// Both handles are live.
    unsafe fn event_elapsed_ms(&self, start: Handle, stop: Handle) -> HipResult<f32>;
    /// # Safety
    /// `event` is live and not used afterwards.
    unsafe fn event_destroy(&self, event: Handle) -> HipResult<()>;
    /// # Safety
    /// `stream` is live.
    unsafe fn begin_capture(&self, stream: Handle, mode: u32) -> HipResult<()>;
    /// # Safety
    /// `stream` is live.
    unsafe fn end_capture(&self, stream: Handle) -> HipResult<Handle>;
    /// # Safety
    /// `graph` is live.
    unsafe fn graph_instantiate(&self, graph: Handle) -> HipResult<Handle>;
    /// # Safety
    /// Both handles are live.
    unsafe fn graph_launch(&self, exec: Handle, stream: Handle) -> HipResult<()>;
    /// # Safety
    /// `graph` is live and not used afterwards.
    unsafe fn graph_destroy(&self, graph: Handle) -> HipResult<()>;
    /// # Safety
    /// `exec` is live and not used afterwards.
    unsafe fn graph_exec_destroy(&self, exec: Handle) -> HipResult<()>;
}

fn check(code: u32) -> HipResult<()> {
    if code == 0 { Ok(()) } else { Err(Code(code)) }
}

fn c_string(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `hipErrorNotReady`.
const NOT_READY: u32 = 600;

/// The emulator's sticky fault of `device`, if `code` is it.
#[cfg(feature = "emu")]
fn emu_device_fault(device: i32, _call: &'static str, code: u32) -> Option<String> {
    amdgpu_emu::hip::device_fault(device).filter(|f| f.code == code).map(|f| f.message)
}

/// On ROCm, the codes of a fault in a kernel that ran (HIP keeps them sticky on the context):
/// `hipErrorIllegalAddress` (700), `hipErrorLaunchTimeOut` (702), `hipErrorAssert` (710),
/// `hipErrorECCNotCorrectable` (214), `hipErrorPriorLaunchFailure` (53), and
/// `hipErrorLaunchFailure` (719) except from the launch call itself, where HIP uses it for a
/// rejected launch (block larger than the kernel's launch bound) that poisons nothing.
#[cfg(feature = "rocm")]
fn hip_device_fault(_device: i32, call: &'static str, code: u32) -> Option<String> {
    let sticky = matches!(code, 700 | 702 | 710 | 214 | 53) || (code == 719 && call != "launch");
    // SAFETY: hipGetErrorString returns a static NUL-terminated string for any code.
    sticky.then(|| unsafe { CStr::from_ptr(rocm_rs::hip::bindings::hipGetErrorString(code as _)) }.to_string_lossy().into_owned())
}

/// Implements [`Api`] for a unit struct over a module of HIP's C functions (`$m::hipMalloc`, ...).
macro_rules! hip_api {
    ($ty:ident, $backend:expr, $m:path, $detail:expr, $fault:path) => {
        use super::*;
        use $m as h;

        pub(crate) struct $ty;

        // Every call below is one HIP C function called with HIP's contract: out-pointers are
        // valid locals, handles and addresses come from the callers' own `# Safety` contracts.
        // (The emulator declares the calls that take no pointers as safe functions, the
        // bindings of libamdhip64 all as `unsafe`: one body serves both.)
        #[allow(unused_unsafe)]
        impl Api for $ty {
            fn backend(&self) -> Backend {
                $backend
            }
            fn error_name(&self, code: u32) -> String {
                // SAFETY: hipGetErrorName returns a static NUL-terminated string for any code.
                unsafe { CStr::from_ptr(h::hipGetErrorName(code as _)) }.to_string_lossy().into_owned()
            }
            fn launch_detail(&self) -> Option<String> {
                $detail
            }
            fn device_fault(&self, device: i32, call: &'static str, code: u32) -> Option<String> {
                $fault(device, call, code)
            }
            fn device_count(&self) -> HipResult<i32> {
                let mut n = 0;
                // SAFETY: valid out-pointer.
                check(unsafe { h::hipGetDeviceCount(&mut n) } as u32)?;
                Ok(n)
            }
            fn get_device(&self) -> HipResult<i32> {
                let mut d = 0;
                // SAFETY: valid out-pointer.
                check(unsafe { h::hipGetDevice(&mut d) } as u32)?;
                Ok(d)
            }
            fn set_device(&self, device: i32) -> HipResult<()> {
                // SAFETY: plain index (HIP validates it).
                check(unsafe { h::hipSetDevice(device) } as u32)
            }
            fn device_info(&self, device: i32) -> HipResult<DeviceInfo> {
                // SAFETY: hipDeviceProp_tR0600 is a plain C struct for which all-zero bytes are
                // valid; HIP fills it for a valid device index (it validates the index).
                let props = unsafe {
                    let mut props = std::mem::zeroed::<h::hipDeviceProp_tR0600>();
                    check(h::hipGetDevicePropertiesR0600(&mut props, device) as u32)?;
                    props
                };
                Ok(DeviceInfo { name: c_string(&props.name), arch_name: c_string(&props.gcnArchName), compute_units: props.multiProcessorCount.max(0) as u32 })
            }
            fn device_synchronize(&self) -> HipResult<()> {
                // SAFETY: no arguments.
                check(unsafe { h::hipDeviceSynchronize() } as u32)
            }
            fn runtime_version(&self) -> HipResult<i32> {
                let mut v = 0;
                // SAFETY: valid out-pointer.
                check(unsafe { h::hipRuntimeGetVersion(&mut v) } as u32)?;
                Ok(v)
            }
            fn malloc(&self, bytes: usize) -> HipResult<u64> {
                let mut p = std::ptr::null_mut();
                // SAFETY: valid out-pointer.
                check(unsafe { h::hipMalloc(&mut p, bytes) } as u32)?;
                Ok(p as usize as u64)
            }
            unsafe fn malloc_async(&self, bytes: usize, stream: Handle) -> HipResult<u64> {
                let mut p = std::ptr::null_mut();
                // SAFETY: valid out-pointer; the stream is the caller's contract.
                check(unsafe { h::hipMallocAsync(&mut p, bytes, stream.cast()) } as u32)?;
                Ok(p as usize as u64)
            }
            unsafe fn free(&self, addr: u64) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipFree(addr as usize as *mut c_void) } as u32)
            }
            unsafe fn free_async(&self, addr: u64, stream: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipFreeAsync(addr as usize as *mut c_void, stream.cast()) } as u32)
            }
            unsafe fn memset_sync(&self, addr: u64, value: u8, bytes: usize) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipMemset(addr as usize as *mut c_void, value as _, bytes) } as u32)
            }
            unsafe fn htod_sync(&self, dst: u64, src: *const u8, bytes: usize) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipMemcpyHtoD(dst as usize as _, src as *mut c_void, bytes) } as u32)
            }
            unsafe fn htod_async(&self, dst: u64, src: *const u8, bytes: usize, stream: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipMemcpyHtoDAsync(dst as usize as _, src as *mut c_void, bytes, stream.cast()) } as u32)
            }
            unsafe fn dtoh_async(&self, dst: *mut u8, src: u64, bytes: usize, stream: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipMemcpyDtoHAsync(dst.cast(), src as usize as _, bytes, stream.cast()) } as u32)
            }
            unsafe fn dtod_async(&self, dst: u64, src: u64, bytes: usize, stream: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipMemcpyDtoDAsync(dst as usize as _, src as usize as _, bytes, stream.cast()) } as u32)
            }
            unsafe fn memset_async(&self, dst: u64, value: u8, bytes: usize, stream: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipMemsetAsync(dst as usize as *mut c_void, value as _, bytes, stream.cast()) } as u32)
            }
            fn module_load(&self, image: &[u8]) -> HipResult<Handle> {
                let mut m = std::ptr::null_mut();
                // SAFETY: `image` is a complete code object (HIP reads its length from its
                // headers, which lie inside the slice); valid out-pointer.
                check(unsafe { h::hipModuleLoadData(&mut m, image.as_ptr().cast()) } as u32)?;
                Ok(m.cast())
            }
            unsafe fn module_unload(&self, module: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipModuleUnload(module.cast()) } as u32)
            }
            unsafe fn module_function(&self, module: Handle, name: &CStr) -> HipResult<Handle> {
                let mut f = std::ptr::null_mut();
                // SAFETY: caller contract; valid out-pointer and C string.
                check(unsafe { h::hipModuleGetFunction(&mut f, module.cast(), name.as_ptr()) } as u32)?;
                Ok(f.cast())
            }
            unsafe fn launch(&self, function: Handle, grid: [u32; 3], block: [u32; 3], lds: u32, stream: Handle, params: *mut *mut c_void) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe {
                    h::hipModuleLaunchKernel(
                        function.cast(),
                        grid[0],
                        grid[1],
                        grid[2],
                        block[0],
                        block[1],
                        block[2],
                        lds,
                        stream.cast(),
                        params,
                        std::ptr::null_mut(),
                    )
                } as u32)
            }
            fn stream_create(&self, non_blocking: bool) -> HipResult<Handle> {
                let mut s = std::ptr::null_mut();
                // SAFETY: valid out-pointer; flags 0 or hipStreamNonBlocking (1).
                check(unsafe { h::hipStreamCreateWithFlags(&mut s, non_blocking as u32) } as u32)?;
                Ok(s.cast())
            }
            unsafe fn stream_destroy(&self, stream: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipStreamDestroy(stream.cast()) } as u32)
            }
            unsafe fn stream_synchronize(&self, stream: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipStreamSynchronize(stream.cast()) } as u32)
            }
            unsafe fn stream_wait_event(&self, stream: Handle, event: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipStreamWaitEvent(stream.cast(), event.cast(), 0) } as u32)
            }
            unsafe fn stream_is_capturing(&self, stream: Handle) -> HipResult<bool> {
                let mut status = 0;
                // SAFETY: caller contract; valid out-pointer.
                check(unsafe { h::hipStreamIsCapturing(stream.cast(), &mut status) } as u32)?;
                Ok(status != 0)
            }
            fn event_create(&self, timing: bool) -> HipResult<Handle> {
                let mut e = std::ptr::null_mut();
                // SAFETY: valid out-pointer; flags 0 or hipEventDisableTiming (2).
                check(unsafe { h::hipEventCreateWithFlags(&mut e, if timing { 0 } else { 2 }) } as u32)?;
                Ok(e.cast())
            }
            unsafe fn event_record(&self, event: Handle, stream: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipEventRecord(event.cast(), stream.cast()) } as u32)
            }
            unsafe fn event_synchronize(&self, event: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipEventSynchronize(event.cast()) } as u32)
            }
            unsafe fn event_query(&self, event: Handle) -> HipResult<bool> {
                // SAFETY: caller contract.
                match unsafe { h::hipEventQuery(event.cast()) } as u32 {
                    0 => Ok(true),
                    NOT_READY => Ok(false),
                    code => Err(Code(code)),
                }
            }
            unsafe fn event_elapsed_ms(&self, start: Handle, stop: Handle) -> HipResult<f32> {
                let mut ms = 0.0f32;
                // SAFETY: caller contract; valid out-pointer.
                check(unsafe { h::hipEventElapsedTime(&mut ms, start.cast(), stop.cast()) } as u32)?;
                Ok(ms)
            }
            unsafe fn event_destroy(&self, event: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipEventDestroy(event.cast()) } as u32)
            }
            unsafe fn begin_capture(&self, stream: Handle, mode: u32) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipStreamBeginCapture(stream.cast(), mode as _) } as u32)
            }
            unsafe fn end_capture(&self, stream: Handle) -> HipResult<Handle> {
                let mut g = std::ptr::null_mut();
                // SAFETY: caller contract; valid out-pointer.
                check(unsafe { h::hipStreamEndCapture(stream.cast(), &mut g) } as u32)?;
                Ok(g.cast())
            }
            unsafe fn graph_instantiate(&self, graph: Handle) -> HipResult<Handle> {
                let mut e = std::ptr::null_mut();
                // SAFETY: caller contract; valid out-pointer, no error node or log requested.
                check(unsafe { h::hipGraphInstantiate(&mut e, graph.cast(), std::ptr::null_mut(), std::ptr::null_mut(), 0) } as u32)?;
                Ok(e.cast())
            }
            unsafe fn graph_launch(&self, exec: Handle, stream: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipGraphLaunch(exec.cast(), stream.cast()) } as u32)
            }
            unsafe fn graph_destroy(&self, graph: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipGraphDestroy(graph.cast()) } as u32)
            }
            unsafe fn graph_exec_destroy(&self, exec: Handle) -> HipResult<()> {
                // SAFETY: caller contract.
                check(unsafe { h::hipGraphExecDestroy(exec.cast()) } as u32)
            }
        }
    };
}

#[cfg(feature = "emu")]
mod emu {
    hip_api!(Emu, Backend::Emulator, amdgpu_emu::hip, amdgpu_emu::hip::last_launch_error(), super::emu_device_fault);
    pub(crate) static EMU: Emu = Emu;
}

#[cfg(feature = "rocm")]
mod rocm {
    hip_api!(Rocm, Backend::Hip, rocm_rs::hip::bindings, None, super::hip_device_fault);
    pub(crate) static ROCM: Rocm = Rocm;
}
