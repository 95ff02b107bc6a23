//! The GPU runtime layer: a [`Context`] owns the loaded code object of one device; [`Stream`]s
//! order work on it and [`Event`]s order streams; [`DeviceBuffer`] is a typed device
//! allocation; captured work becomes a [`Graph`]. Launches are typed by the kernel's argument
//! struct ([`fp8gemm_device::KernelSpec`]).
//!
//! Everything goes through the HIP C API of the context's [`Backend`]: the bundled emulator or
//! `libamdhip64`.
//!
//! # Asynchrony and lifetimes
//! Launches and `*_async` copies are queued on a stream and return at once. What keeps them
//! sound:
//! * The kernels' code: a [`Context`] unloads its module only after synchronizing its device
//!   (dropping the last clone waits for all work in flight); streams, events, buffers and graphs
//!   hold a clone.
//! * Buffers: dropping a [`DeviceBuffer`] calls `hipFree`, which — in HIP and in the emulator —
//!   synchronizes the device first, so work still reading or writing it completes before the
//!   memory is released. [`DeviceBuffer::free_async`] is the stream-ordered alternative (no
//!   device synchronization) when only one stream used the buffer. Don't drop buffers during a
//!   stream capture: the free is forbidden then (it fails, the memory is leaked and the capture
//!   invalidated).
//! * Memory the library does not own (views from raw pointers, streams from raw handles): the
//!   caller keeps it alive until the work using it has completed (see each `unsafe` constructor).
//!
//! # Device faults
//! A kernel that faults (memory fault, memcheck violation, trap, illegal instruction, a
//! checker's finding, the watchdog) poisons its device, as HIP does: the call that observes it
//! — the launch on the null stream, or the synchronization, copy or query that follows a queued
//! launch — fails with [`Error::DeviceFault`] carrying the finding, and so does every later
//! operation of that [`Context`] and of everything created from it (streams, events, buffers,
//! graphs), without calling HIP again. Other contexts on the same device see the fault from the
//! backend (HIP keeps the error sticky on the device until `hipDeviceReset`). Dropping objects of
//! a poisoned context still hands their handles back to HIP (which may refuse; the reset frees
//! everything).

use std::any::Any;
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytemuck::Pod;
use fp8gemm_device::KernelSpec;
use fp8gemm_device::args::GlobalPtr;

pub use crate::backend::Backend;
use crate::backend::{Api, Code, Handle};
use crate::codeobj::Arch;
use crate::error::{Error, Result};
use crate::view::{DeviceSlice, DeviceSliceMut};

static NEXT_CONTEXT_ID: AtomicU64 = AtomicU64::new(1);

struct Inner {
    id: u64,
    api: &'static dyn Api,
    arch: Arch,
    device: i32,
    device_name: String,
    compute_units: u32,
    /// Kernel handles by name (raw `hipFunction_t`s owned by `module`).
    functions: Mutex<HashMap<&'static str, usize>>,
    /// The loaded `hipModule_t`.
    module: usize,
    /// The device fault that poisoned this context, once one was seen (see the module
    /// documentation).
    fault: Mutex<Option<Fault>>,
}

/// A recorded device fault: what [`Error::DeviceFault`] repeats on every later call.
#[derive(Clone)]
struct Fault {
    call: &'static str,
    code: u32,
    name: String,
    finding: String,
}

impl Fault {
    fn error(&self) -> Error {
        Error::DeviceFault { call: self.call, code: self.code, name: self.name.clone(), finding: self.finding.clone() }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last clone is gone, but launches may still be queued on streams we never saw
        // (raw handles): wait for the device before unloading the code they run.
        if let Ok(_guard) = DeviceGuard::enter(self.api, self.device) {
            let _ = self.api.device_synchronize();
            // SAFETY: the module was loaded by this context and, after the synchronization, no
            // queued work uses it; no clone of the context (the only route to its kernels) is left.
            let _ = unsafe { self.api.module_unload(self.module as Handle) };
        }
    }
}

/// Makes a device current for the calling thread and restores the caller's device on drop.
pub(crate) struct DeviceGuard {
    api: &'static dyn Api,
    previous: Option<i32>,
}

impl DeviceGuard {
    fn enter(api: &'static dyn Api, device: i32) -> std::result::Result<DeviceGuard, Code> {
        let previous = api.get_device().ok();
        if previous != Some(device) {
            api.set_device(device)?;
        }
        Ok(DeviceGuard { api, previous: previous.filter(|&p| p != device) })
    }
}

impl Drop for DeviceGuard {
    fn drop(&mut self) {
        if let Some(p) = self.previous {
            let _ = self.api.set_device(p);
        }
    }
}

/// A device with fp8gemm's code object loaded. Cheap to clone (an `Arc`); `Send + Sync`.
///
/// Every operation makes the context's device current for its duration and then restores the
/// calling thread's previous current device.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

// The documented `Send + Sync` of the runtime types is checked by the compiler.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Context>();
    assert_send_sync::<DeviceBuffer<u8>>();
    assert_send_sync::<Stream>();
    assert_send_sync::<Event>();
    assert_send_sync::<GraphExec>();
};

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("backend", &self.inner.api.backend())
            .field("device", &self.inner.device)
            .field("name", &self.inner.device_name)
            .field("arch", &self.inner.arch)
            .field("compute_units", &self.inner.compute_units)
            .finish()
    }
}

impl Context {
    /// Opens device 0 of the default backend ([`Backend::default_backend`]).
    pub fn new() -> Result<Context> {
        Self::on_device(0)
    }

    /// Opens device `device` of the default backend.
    pub fn on_device(device: i32) -> Result<Context> {
        let backend = Backend::default_backend().ok_or(Error::NoBackend)?;
        Self::with_backend(backend, device)
    }

    /// Opens device `device` of `backend`, reads its architecture and compute-unit count from
    /// the device and loads the matching embedded code object once.
    ///
    /// A machine without a usable GPU (`hipErrorNoDevice`, or no device counted) is
    /// [`Error::NoDevice`]; a device poisoned by an earlier kernel fault (of another context) is
    /// [`Error::DeviceFault`].
    pub fn with_backend(backend: Backend, device: i32) -> Result<Context> {
        let api = backend.api().ok_or(Error::BackendNotBuilt { backend })?;
        let version = api.runtime_version().map_err(|c| hip_error(api, device, "hipRuntimeGetVersion", c))?;
        if version < MIN_HIP_VERSION {
            return Err(Error::HipVersion { found: hip_version_string(version), required: hip_version_string(MIN_HIP_VERSION) });
        }
        // hipErrorNoDevice is Error::NoDevice (hip_error maps it on every call).
        let count = api.device_count().map_err(|c| hip_error(api, device, "hipGetDeviceCount", c))?;
        if count <= 0 {
            return Err(Error::NoDevice);
        }
        if device < 0 || device >= count {
            return Err(Error::Shape { arg: "device", expected: format!("a device index in 0..{count}"), actual: device.to_string() });
        }
        let _guard = DeviceGuard::enter(api, device).map_err(|c| hip_error(api, device, "hipSetDevice", c))?;
        let info = api.device_info(device).map_err(|c| hip_error(api, device, "hipGetDeviceProperties", c))?;
        let arch = Arch::from_name(&info.arch_name).ok_or(Error::UnsupportedArch { found: info.arch_name })?;
        let module = api.module_load(arch.code_object()).map_err(|c| hip_error(api, device, "hipModuleLoadData", c))?;
        Ok(Context {
            inner: Arc::new(Inner {
                id: NEXT_CONTEXT_ID.fetch_add(1, Ordering::Relaxed),
                api,
                arch,
                device,
                device_name: info.name,
                compute_units: info.compute_units,
                functions: Mutex::new(HashMap::new()),
                module: module as usize,
                fault: Mutex::new(None),
            }),
        })
    }

    /// The HIP runtime this context uses.
    pub fn backend(&self) -> Backend {
        self.inner.api.backend()
    }

    /// The device's architecture (read from the device).
    pub fn arch(&self) -> Arch {
        self.inner.arch
    }

    /// The device ordinal.
    pub fn device(&self) -> i32 {
        self.inner.device
    }

    /// The device's compute units (read from the device).
    pub fn compute_units(&self) -> u32 {
        self.inner.compute_units
    }

    /// The device's marketing name as HIP reports it.
    pub fn device_name(&self) -> &str {
        &self.inner.device_name
    }

    pub(crate) fn api(&self) -> &'static dyn Api {
        self.inner.api
    }

    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// Makes this context's device current until the guard drops (then the caller's is
    /// restored). Every operation starts here: on a context poisoned by a device fault it fails
    /// with that [`Error::DeviceFault`] instead.
    pub(crate) fn enter(&self) -> Result<DeviceGuard> {
        if let Some(fault) = self.fault() {
            return Err(fault);
        }
        self.enter_unchecked()
    }

    /// [`Context::enter`] even on a poisoned context: for handing resources back on drop.
    pub(crate) fn enter_unchecked(&self) -> Result<DeviceGuard> {
        DeviceGuard::enter(self.inner.api, self.inner.device).map_err(|c| self.err("hipSetDevice", c))
    }

    /// The device fault that poisoned this context, if one did: the [`Error::DeviceFault`] every
    /// operation of the context now fails with.
    pub fn fault(&self) -> Option<Error> {
        self.inner.fault.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(Fault::error)
    }

    /// The error for HIP call `call` failing with `code`; a device fault poisons the context.
    pub(crate) fn err(&self, call: &'static str, code: Code) -> Error {
        let e = hip_error(self.inner.api, self.inner.device, call, code);
        if let Error::DeviceFault { call, code, name, finding } = &e {
            let mut fault = self.inner.fault.lock().unwrap_or_else(|p| p.into_inner());
            // The first fault stays: later ones are its consequences.
            return fault.get_or_insert_with(|| Fault { call, code: *code, name: name.clone(), finding: finding.clone() }).error();
        }
        e
    }

    /// Waits until all work on the device is complete (every stream). Forbidden during a
    /// stream capture.
    pub fn synchronize(&self) -> Result<()> {
        let _g = self.enter()?;
        self.inner.api.device_synchronize().map_err(|c| self.err("hipDeviceSynchronize", c))
    }

    /// Allocates `len` zeroed elements (synchronously: the memory is zero when this returns).
    /// `len · size_of::<T>()` must fit in `isize` (a typed [`Error::Shape`] naming `len`
    /// otherwise), so a buffer's length never claims more bytes than were allocated. Forbidden
    /// during a stream capture.
    pub fn alloc_zeroed<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = byte_len::<T>("len", len)?;
        let _g = self.enter()?;
        let addr = self.inner.api.malloc(bytes).map_err(|c| self.err("hipMalloc", c))?;
        let buf = DeviceBuffer { addr, len, ctx: self.clone(), _t: PhantomData };
        if bytes > 0 {
            // SAFETY: `addr` is the fresh allocation of `bytes` bytes.
            unsafe { self.inner.api.memset_sync(addr, 0, bytes) }.map_err(|c| self.err("hipMemset", c))?;
        }
        Ok(buf)
    }

    /// Allocates a buffer holding a copy of `data` (synchronously). Forbidden during a stream
    /// capture.
    pub fn upload<T: Pod>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let bytes = byte_len::<T>("data", data.len())?;
        let _g = self.enter()?;
        let addr = self.inner.api.malloc(bytes).map_err(|c| self.err("hipMalloc", c))?;
        let buf = DeviceBuffer { addr, len: data.len(), ctx: self.clone(), _t: PhantomData };
        if bytes > 0 {
            // SAFETY: `addr` is a fresh allocation of `bytes` bytes; `data` is readable for them.
            unsafe { self.inner.api.htod_sync(addr, data.as_ptr().cast(), bytes) }.map_err(|c| self.err("hipMemcpyHtoD", c))?;
        }
        Ok(buf)
    }

    /// Checks that a view of `arg` belongs to this context (raw views belong to none and pass).
    pub(crate) fn check_owner(&self, arg: &'static str, owner: Option<u64>) -> Result<()> {
        match owner {
            Some(id) if id != self.inner.id => Err(Error::ForeignBuffer { arg }),
            _ => Ok(()),
        }
    }

    fn function(&self, name: &'static str) -> Result<Handle> {
        let mut map = self.inner.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&f) = map.get(name) {
            return Ok(f as Handle);
        }
        let cname = CString::new(name).map_err(|_| Error::MissingKernel { kernel: name, arch: self.inner.arch })?;
        // SAFETY: the module is loaded for as long as this context lives.
        let f = unsafe { self.inner.api.module_function(self.inner.module as Handle, &cname) }
            .map_err(|_| Error::MissingKernel { kernel: name, arch: self.inner.arch })?;
        map.insert(name, f as usize);
        Ok(f)
    }
}

/// The oldest HIP runtime the bindings work with: `rocm-rs` 0.4.2 binds HIP 6.3 (it calls
/// `hipGetDevicePropertiesR0600`, absent before 6.0). In `HIP_VERSION` form, major·10⁷ +
/// minor·10⁵ + patch.
pub const MIN_HIP_VERSION: i32 = 60_300_000;

/// `hipErrorNoDevice`: `hipGetDeviceCount` on a machine without a GPU (or without its driver);
/// [`Error::NoDevice`] from any call.
const HIP_ERROR_NO_DEVICE: u32 = 100;

/// `60342133` → `6.3.42133`.
fn hip_version_string(v: i32) -> String {
    format!("{}.{}.{}", v / 10_000_000, v / 100_000 % 100, v % 100_000)
}

/// `len` elements of `T` in bytes, or a typed error naming `arg` when that exceeds `isize::MAX`
/// bytes (the most any allocation can hold).
pub(crate) fn byte_len<T>(arg: &'static str, len: usize) -> Result<usize> {
    len.checked_mul(size_of::<T>()).filter(|&b| b <= isize::MAX as usize).ok_or_else(|| Error::Shape {
        arg,
        expected: format!("at most {} elements of {} bytes (isize::MAX bytes)", isize::MAX as usize / size_of::<T>().max(1), size_of::<T>()),
        actual: format!("{len} elements"),
    })
}

/// The error for HIP call `call` failing with `code` while `device` was current: a device fault
/// ([`Error::DeviceFault`]), no device ([`Error::NoDevice`]) or an ordinary failure
/// ([`Error::Hip`]).
pub(crate) fn hip_error(api: &dyn Api, device: i32, call: &'static str, code: Code) -> Error {
    let fault = api.device_fault(device, call, code.0);
    let detail = if fault.is_none() && (call == "launch" || call == "hipStreamSynchronize") { api.launch_detail() } else { None };
    error_for(call, code.0, api.error_name(code.0), fault, detail)
}

/// [`hip_error`] once the backend has been asked: `fault` is the finding if the code is a device
/// fault, `detail` the backend's launch report.
fn error_for(call: &'static str, code: u32, name: String, fault: Option<String>, detail: Option<String>) -> Error {
    match fault {
        _ if code == HIP_ERROR_NO_DEVICE => Error::NoDevice,
        Some(finding) => Error::DeviceFault { call, code, name, finding },
        None => Error::Hip { call, code, name, detail },
    }
}

/// How a stream capture restricts other HIP calls while it is active (HIP's
/// `hipStreamCaptureMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CaptureMode {
    /// Potentially unsafe calls (allocation, free, synchronous copies, synchronization) are
    /// forbidden in every thread.
    Global,
    /// They are forbidden in the capturing thread.
    ThreadLocal,
    /// Nothing is forbidden.
    Relaxed,
}

/// An in-order queue of device work (HIP's `hipStream_t`). Every launch and asynchronous copy
/// of the library takes the stream to run on.
///
/// [`Stream::new`] creates a non-blocking stream (it does not synchronize with the legacy null
/// stream) and destroys it on drop (HIP lets its queued work complete);
/// [`Stream::from_raw`] wraps a stream the caller owns.
///
/// The runtime knows no operation. The layers above it keep their per-stream state in the
/// stream's attachments (at most one value per type, dropped after the stream is destroyed) and
/// give a new owned stream its initial state through the crate root's `STREAM_SETUP` hooks, which
/// [`Stream::new`] runs (wrapped and null streams start without). That state and its accessors
/// on `Stream` live with the layer that owns them: the GEMMs' split-K workspace
/// ([`Stream::workspace`], [`crate::workspace`]) and the selector's overrides
/// ([`Stream::overrides`], [`crate::Overrides`]).
pub struct Stream {
    raw: usize,
    owned: bool,
    ctx: Context,
    attachments: Attachments,
}

/// Per-stream values of the layers above the runtime, at most one per type: operation-agnostic
/// storage (the runtime only keeps them and drops them after the stream is destroyed).
#[derive(Default)]
struct Attachments(Vec<Box<dyn Any + Send + Sync>>);

impl Attachments {
    /// The value of type `T`, if attached.
    fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.iter().find_map(|a| a.downcast_ref::<T>())
    }

    /// Attaches `value` (`None`: detaches) in place of the value of type `T`, which it returns.
    fn replace<T: Any + Send + Sync>(&mut self, value: Option<T>) -> Option<T> {
        let old = self.0.iter().position(|a| a.is::<T>()).and_then(|i| self.0.swap_remove(i).downcast::<T>().ok());
        if let Some(v) = value {
            self.0.push(Box::new(v));
        }
        old.map(|b| *b)
    }
}

// SAFETY: a HIP stream handle may be used from any host thread (HIP's streams are thread-safe);
// the wrapper only holds the handle and a `Context` (itself Send + Sync).
unsafe impl Send for Stream {}
// SAFETY: as above; `&Stream` only submits work, synchronizes or queries.
unsafe impl Sync for Stream {}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stream({:#x}{})", self.raw, if self.owned { "" } else { ", borrowed" })
    }
}

impl Stream {
    /// Creates a non-blocking stream on `ctx`'s device.
    pub fn new(ctx: &Context) -> Result<Stream> {
        let _g = ctx.enter()?;
        let raw = ctx.api().stream_create(true).map_err(|c| ctx.err("hipStreamCreateWithFlags", c))?;
        // Owned from here on: a failure below destroys it on drop.
        let mut stream = Stream { raw: raw as usize, owned: true, ctx: ctx.clone(), attachments: Attachments::default() };
        for setup in crate::STREAM_SETUP {
            setup(&mut stream)?;
        }
        Ok(stream)
    }

    /// The attached value of type `T` (see [`Stream`]), if any.
    pub(crate) fn attachment<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.attachments.get()
    }

    /// Attaches `value` (`None`: detaches) in place of the attached value of type `T`, which it
    /// returns.
    pub(crate) fn replace_attachment<T: Any + Send + Sync>(&mut self, value: Option<T>) -> Option<T> {
        self.attachments.replace(value)
    }

    /// The device's legacy null stream (synchronous with every blocking stream).
    pub fn null(ctx: &Context) -> Stream {
        Stream { raw: 0, owned: false, ctx: ctx.clone(), attachments: Attachments::default() }
    }

    /// Wraps a stream the caller (e.g. an inference engine) owns; it is not destroyed on drop.
    ///
    /// # Safety
    /// `raw` is null (the null stream) or a live `hipStream_t` of `ctx`'s device and backend, and
    /// stays live until the returned `Stream` is dropped and all work submitted through it has
    /// completed.
    pub unsafe fn from_raw(ctx: &Context, raw: *mut c_void) -> Stream {
        Stream { raw: raw as usize, owned: false, ctx: ctx.clone(), attachments: Attachments::default() }
    }

    /// The raw `hipStream_t` (for the engine's own HIP calls, or the emulator's counters).
    pub fn as_raw(&self) -> *mut c_void {
        self.raw as Handle
    }

    /// The context the stream belongs to.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    pub(crate) fn handle(&self) -> Handle {
        self.raw as Handle
    }

    /// Allocates `len` zeroed elements in stream order (`hipMallocAsync` + `hipMemsetAsync`):
    /// nothing synchronizes, and the zeroing is ordered before later work on this stream (other
    /// streams must wait for it through an [`Event`]). The buffer is freed, synchronously, when
    /// dropped, or in stream order with [`DeviceBuffer::free_async`]. Not on a capturing stream
    /// ([`Error::Capturing`]).
    pub fn alloc_zeroed<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let mut buf = self.alloc_uninit::<T>(len)?;
        buf.as_slice_mut().zero(self)?;
        Ok(buf)
    }

    /// Allocates a buffer holding a copy of `data` in stream order (`hipMallocAsync` +
    /// `hipMemcpyHtoDAsync`): `data` is read (staged) before this returns, the device copy is
    /// ordered before later work on this stream, and nothing synchronizes. Not on a capturing
    /// stream ([`Error::Capturing`]).
    pub fn upload<T: Pod>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buf = self.alloc_uninit::<T>(data.len())?;
        buf.as_slice_mut().copy_from_host(self, data)?;
        Ok(buf)
    }

    /// A stream-ordered allocation whose contents are unspecified until written (crate-internal:
    /// device memory is never handed out unwritten).
    fn alloc_uninit<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = byte_len::<T>("len", len)?;
        self.forbid_capture("stream-ordered allocation")?;
        let _g = self.ctx.enter()?;
        // SAFETY: the stream handle is live (constructor contracts).
        let addr = unsafe { self.ctx.api().malloc_async(bytes, self.handle()) }.map_err(|c| self.ctx.err("hipMallocAsync", c))?;
        Ok(DeviceBuffer { addr, len, ctx: self.ctx.clone(), _t: PhantomData })
    }

    /// Waits until all work submitted to the stream has completed, and returns the first error of
    /// that work (HIP reports errors of asynchronous work here). Forbidden while capturing.
    pub fn synchronize(&self) -> Result<()> {
        let _g = self.ctx.enter()?;
        // SAFETY: the handle is live (constructor contracts).
        unsafe { self.ctx.api().stream_synchronize(self.handle()) }.map_err(|c| self.ctx.err("hipStreamSynchronize", c))
    }

    /// Makes work submitted to this stream from now on wait until `event`'s last record has
    /// completed (no host synchronization).
    pub fn wait(&self, event: &Event) -> Result<()> {
        let _g = self.ctx.enter()?;
        // SAFETY: both handles are live.
        unsafe { self.ctx.api().stream_wait_event(self.handle(), event.raw as Handle) }.map_err(|c| self.ctx.err("hipStreamWaitEvent", c))
    }

    /// Whether a capture is active on the stream.
    pub fn is_capturing(&self) -> Result<bool> {
        let _g = self.ctx.enter()?;
        // SAFETY: the handle is live.
        unsafe { self.ctx.api().stream_is_capturing(self.handle()) }.map_err(|c| self.ctx.err("hipStreamIsCapturing", c))
    }

    /// Fails with [`Error::Capturing`] if the stream is capturing (for operations that cannot be
    /// captured soundly, e.g. copies from borrowed host memory).
    pub(crate) fn forbid_capture(&self, op: &'static str) -> Result<()> {
        if self.is_capturing()? { Err(Error::Capturing { op }) } else { Ok(()) }
    }

    /// Starts capturing: work submitted to the stream is recorded into a graph instead of run,
    /// until [`Stream::end_capture`]. The library's launch paths and device-to-device copies are
    /// capture-safe (they allocate, free, copy to the host and synchronize nothing).
    pub fn begin_capture(&self, mode: CaptureMode) -> Result<()> {
        let mode = match mode {
            CaptureMode::Global => 0,
            CaptureMode::ThreadLocal => 1,
            CaptureMode::Relaxed => 2,
        };
        let _g = self.ctx.enter()?;
        // SAFETY: the handle is live.
        unsafe { self.ctx.api().begin_capture(self.handle(), mode) }.map_err(|c| self.ctx.err("hipStreamBeginCapture", c))
    }

    /// Ends the capture and returns the recorded work. If a forbidden call invalidated the
    /// capture, this fails (HIP's `hipErrorStreamCaptureInvalidated`).
    pub fn end_capture(&self) -> Result<Graph> {
        let _g = self.ctx.enter()?;
        // SAFETY: the handle is live.
        let raw = unsafe { self.ctx.api().end_capture(self.handle()) }.map_err(|c| self.ctx.err("hipStreamEndCapture", c))?;
        Ok(Graph { raw: raw as usize, ctx: self.ctx.clone() })
    }

    /// Launches `spec` on a `grid` of workgroups of its declared size with `lds_bytes` of
    /// dynamic LDS on this stream; `args` becomes the kernarg segment (copied at the call).
    ///
    /// # Safety
    /// Every device address in `args` must point into memory that stays live, and large enough
    /// for everything the kernel reads and writes with these arguments, until the launch has
    /// completed; the memory the kernel writes must not be accessed concurrently. The typed
    /// entry points (e.g. `fp8_gemm_nt`) check the sizes before calling.
    pub(crate) unsafe fn launch<A: Copy>(&self, spec: KernelSpec<A>, grid: [u32; 3], lds_bytes: u32, args: &A) -> Result<()> {
        let _g = self.ctx.enter()?;
        let f = self.ctx.function(spec.name)?;
        // HIP copies the `size` bytes behind kernelParams[i] into the kernarg segment at launch;
        // the kernel has exactly one by-value argument, the struct itself.
        let mut params = [args as *const A as *mut c_void];
        let block = [spec.workgroup_size, 1, 1];
        // SAFETY: `f` is a kernel of the loaded module whose single argument is `A`; `params`
        // points to it; memory validity is the caller's contract.
        unsafe { self.ctx.api().launch(f, grid, block, lds_bytes, self.handle(), params.as_mut_ptr()) }.map_err(|c| self.ctx.err("launch", c))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.owned
            && let Ok(_g) = self.ctx.enter_unchecked()
        {
            // SAFETY: the stream was created by `Stream::new` and is not used after this.
            let _ = unsafe { self.ctx.api().stream_destroy(self.handle()) };
        }
    }
}

/// A marker in a stream's work (HIP's `hipEvent_t`): record it on one stream, make another
/// stream (or the host) wait for it.
pub struct Event {
    raw: usize,
    ctx: Context,
}

// SAFETY: HIP event handles may be used from any host thread.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Event({:#x})", self.raw)
    }
}

impl Event {
    /// Creates an event (with timing, see [`Event::elapsed_ms`]).
    pub fn new(ctx: &Context) -> Result<Event> {
        let _g = ctx.enter()?;
        let raw = ctx.api().event_create(true).map_err(|c| ctx.err("hipEventCreate", c))?;
        Ok(Event { raw: raw as usize, ctx: ctx.clone() })
    }

    /// Records the event after all work submitted to `stream` so far.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        let _g = self.ctx.enter()?;
        // SAFETY: both handles are live.
        unsafe { self.ctx.api().event_record(self.raw as Handle, stream.handle()) }.map_err(|c| self.ctx.err("hipEventRecord", c))
    }

    /// Blocks the host until the event's last record has completed.
    pub fn synchronize(&self) -> Result<()> {
        let _g = self.ctx.enter()?;
        // SAFETY: the handle is live.
        unsafe { self.ctx.api().event_synchronize(self.raw as Handle) }.map_err(|c| self.ctx.err("hipEventSynchronize", c))
    }

    /// Whether the event's last record has completed (never blocks).
    pub fn is_complete(&self) -> Result<bool> {
        let _g = self.ctx.enter()?;
        // SAFETY: the handle is live.
        unsafe { self.ctx.api().event_query(self.raw as Handle) }.map_err(|c| self.ctx.err("hipEventQuery", c))
    }

    /// Milliseconds from `start`'s completion to this event's (GPU time on hardware; emulator
    /// wall time on the emulator).
    pub fn elapsed_ms(&self, start: &Event) -> Result<f32> {
        let _g = self.ctx.enter()?;
        // SAFETY: both handles are live.
        unsafe { self.ctx.api().event_elapsed_ms(start.raw as Handle, self.raw as Handle) }.map_err(|c| self.ctx.err("hipEventElapsedTime", c))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Ok(_g) = self.ctx.enter_unchecked() {
            // SAFETY: created by `Event::new`, not used after this.
            let _ = unsafe { self.ctx.api().event_destroy(self.raw as Handle) };
        }
    }
}

/// Work recorded by a stream capture ([`Stream::end_capture`]); [`Graph::instantiate`] makes it
/// launchable.
pub struct Graph {
    raw: usize,
    ctx: Context,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Graph({:#x})", self.raw)
    }
}

impl Graph {
    /// An executable copy of the graph.
    pub fn instantiate(&self) -> Result<GraphExec> {
        let _g = self.ctx.enter()?;
        // SAFETY: the handle is live.
        let raw = unsafe { self.ctx.api().graph_instantiate(self.raw as Handle) }.map_err(|c| self.ctx.err("hipGraphInstantiate", c))?;
        Ok(GraphExec { raw: raw as usize, ctx: self.ctx.clone() })
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if let Ok(_g) = self.ctx.enter_unchecked() {
            // SAFETY: created by `end_capture`, not used after this.
            let _ = unsafe { self.ctx.api().graph_destroy(self.raw as Handle) };
        }
    }
}

/// An instantiated graph: replays the captured work on any stream of its device.
///
/// The captured launches hold the device addresses they were captured with: the buffers and
/// views used during the capture must stay alive (and keep their size) for as long as the graph
/// may be launched. New input data goes into those same buffers between launches.
pub struct GraphExec {
    raw: usize,
    ctx: Context,
}

// SAFETY: HIP graph-exec handles may be launched from any host thread.
unsafe impl Send for GraphExec {}
// SAFETY: as above.
unsafe impl Sync for GraphExec {}

impl std::fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GraphExec({:#x})", self.raw)
    }
}

impl GraphExec {
    /// Submits the captured work to `stream` (asynchronous, like the launches it holds).
    ///
    /// # Safety
    /// Every buffer the captured work uses is still live (not dropped since the capture).
    pub unsafe fn launch(&self, stream: &Stream) -> Result<()> {
        let _g = self.ctx.enter()?;
        // SAFETY: both handles are live; memory validity is the caller's contract.
        unsafe { self.ctx.api().graph_launch(self.raw as Handle, stream.handle()) }.map_err(|c| self.ctx.err("hipGraphLaunch", c))
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if let Ok(_g) = self.ctx.enter_unchecked() {
            // SAFETY: created by `instantiate`, not used after this (launches already submitted
            // still run, as in HIP).
            let _ = unsafe { self.ctx.api().graph_exec_destroy(self.raw as Handle) };
        }
    }
}

/// A typed device allocation of `len` elements of `T`, owned by one [`Context`].
///
/// Dropping it frees the memory after synchronizing the device (HIP's `hipFree`), so no queued
/// work can still use it; [`DeviceBuffer::free_async`] frees it in stream order instead.
pub struct DeviceBuffer<T> {
    addr: u64,
    len: usize,
    ctx: Context,
    _t: PhantomData<T>,
}

// SAFETY: the buffer owns its device allocation exclusively; HIP allocations may be used and
// freed from any host thread.
unsafe impl<T: Send> Send for DeviceBuffer<T> {}
// SAFETY: shared references only read the device address and copy device data out.
unsafe impl<T: Sync> Sync for DeviceBuffer<T> {}

impl<T> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer<{}>[{}] @ {:#x}", std::any::type_name::<T>(), self.len, self.addr)
    }
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.addr != 0
            && let Ok(_g) = self.ctx.enter_unchecked()
        {
            // SAFETY: the allocation is owned by this buffer; hipFree synchronizes the device
            // first, so no queued work uses it afterwards.
            let _ = unsafe { self.ctx.api().free(self.addr) };
        }
    }
}

fn resolve_range(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(s), Some(e)) if s <= e && e <= len => Ok((s, e)),
        _ => Err(Error::Shape {
            arg: "range",
            expected: format!("a range inside 0..{len}"),
            actual: format!("{:?}..{:?}", range.start_bound(), range.end_bound()),
        }),
    }
}

impl<T: Pod> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The device address, for kernel argument structs.
    pub fn device_ptr(&self) -> GlobalPtr<T> {
        GlobalPtr::new(self.addr)
    }
    /// The context that owns the buffer.
    pub fn context(&self) -> &Context {
        &self.ctx
    }
    /// The id of the owning context (for ownership checks).
    pub(crate) fn owner(&self) -> Option<u64> {
        Some(self.ctx.id())
    }
    /// A view of the whole buffer.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice::from_parts(self.addr, self.len, Some(self.ctx.id()))
    }
    /// A mutable view of the whole buffer.
    pub fn as_slice_mut(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut::from_parts(self.addr, self.len, Some(self.ctx.id()))
    }
    /// A view of elements `range` (a typed error if it is not inside the buffer).
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        let (s, e) = resolve_range(range, self.len)?;
        Ok(DeviceSlice::from_parts(self.addr + (s * size_of::<T>()) as u64, e - s, Some(self.ctx.id())))
    }
    /// A mutable view of elements `range`.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        let (s, e) = resolve_range(range, self.len)?;
        Ok(DeviceSliceMut::from_parts(self.addr + (s * size_of::<T>()) as u64, e - s, Some(self.ctx.id())))
    }

    /// Copies the whole buffer to the host: queued on `stream` after its earlier work, then waits
    /// for the stream (a host round trip by definition). Fails with [`Error::Capturing`] on a
    /// capturing stream.
    pub fn download(&self, stream: &Stream) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); self.len];
        self.as_slice().copy_to_host(stream, &mut out)?;
        Ok(out)
    }

    /// Overwrites the whole buffer with `data` (exactly [`Self::len`] elements), in order on
    /// `stream`: `data` is read (staged) before this returns. Not on a capturing stream
    /// ([`Error::Capturing`]: a graph would read the borrowed slice after it is gone).
    pub fn copy_from_host(&mut self, stream: &Stream, data: &[T]) -> Result<()> {
        self.as_slice_mut().copy_from_host(stream, data)
    }

    /// Frees the buffer in stream order: the memory is released when `stream` reaches this
    /// point, without synchronizing the device. If that fails (e.g. on a stream of another
    /// device or backend), the error is returned and the buffer is freed as on drop
    /// (`hipFree`, after a device synchronization), never leaked.
    ///
    /// # Safety
    /// All work that uses the buffer is ordered before this point of `stream` (submitted to it
    /// earlier, or to other streams that `stream` waits for through an [`Event`]).
    pub unsafe fn free_async(mut self, stream: &Stream) -> Result<()> {
        let addr = std::mem::replace(&mut self.addr, 0);
        if addr == 0 {
            return Ok(());
        }
        // On any failure the buffer takes its allocation back, so that dropping it (at the end
        // of this call) frees it with `hipFree` — which synchronizes the device first — instead
        // of leaking it.
        let _g = match self.ctx.enter() {
            Ok(g) => g,
            Err(e) => {
                self.addr = addr;
                return Err(e);
            }
        };
        let api = self.ctx.api();
        // SAFETY: `addr` is the allocation this buffer owned (now forgotten by it); the caller
        // orders every use before this point of the stream.
        unsafe { api.free_async(addr, stream.handle()) }.map_err(|c| {
            self.addr = addr;
            self.ctx.err("hipFreeAsync", c)
        })
    }
}

/// Counters of the calling thread's most recent successful kernel launch on the emulator
/// (instructions by class, waves, barriers). Emulator builds only: on hardware, use a profiler.
#[cfg(feature = "emu")]
pub fn last_emulator_report() -> Option<std::sync::Arc<amdgpu_emu::exec::LaunchReport>> {
    amdgpu_emu::hip::last_launch_report()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream's attachments hold one value per type: replacing returns the previous value of
    /// that type only, detaching leaves the others.
    #[test]
    fn attachments_hold_one_value_per_type() {
        let mut a = Attachments::default();
        assert_eq!(a.replace(Some(1u32)), None);
        assert_eq!(a.replace(Some("x")), None);
        assert_eq!(a.replace(Some(2u32)), Some(1));
        assert_eq!((a.get::<u32>(), a.get::<&str>(), a.get::<u64>()), (Some(&2), Some(&"x"), None));
        assert_eq!(a.replace::<u32>(None), Some(2));
        assert_eq!((a.get::<u32>(), a.get::<&str>()), (None, Some(&"x")));
    }

    /// `hipErrorNoDevice` (what `hipGetDeviceCount` returns on a machine without a GPU) is
    /// [`Error::NoDevice`] from any call; a fault is [`Error::DeviceFault`] with its finding;
    /// anything else [`Error::Hip`].
    #[test]
    fn hip_codes_map_to_typed_errors() {
        let name = || "n".to_string();
        assert!(matches!(error_for("hipGetDeviceCount", 100, name(), None, None), Error::NoDevice));
        assert!(matches!(error_for("hipSetDevice", 100, name(), None, None), Error::NoDevice));
        match error_for("hipStreamSynchronize", 700, name(), Some("kernel `k`: memcheck".into()), None) {
            Error::DeviceFault { call, code, finding, .. } => assert_eq!((call, code, finding.as_str()), ("hipStreamSynchronize", 700, "kernel `k`: memcheck")),
            e => panic!("expected a device fault, got {e:?}"),
        }
        match error_for("launch", 719, name(), None, Some("launch bounds".into())) {
            Error::Hip { call, code, detail, .. } => assert_eq!((call, code, detail.as_deref()), ("launch", 719, Some("launch bounds"))),
            e => panic!("expected a plain HIP error, got {e:?}"),
        }
    }
}
