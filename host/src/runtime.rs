//! The GPU runtime layer: a [`Context`] owns the loaded code object of the current device's
//! architecture and its kernels; [`DeviceBuffer`] is a typed device allocation; launches are
//! typed by the kernel's argument struct ([`fp8gemm_device::KernelSpec`]).
//!
//! Everything goes through `rocm-rs`, i.e. the HIP C API: by default that API is served by the
//! bundled emulator (`amdgpu-emu`, feature `emu`), with feature `rocm` by `libamdhip64`.

use std::collections::HashMap;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytemuck::Pod;
use fp8gemm_device::args::GlobalPtr;
use fp8gemm_device::KernelSpec;
use rocm_rs::hip;

use crate::codeobj::Arch;
use crate::error::{Error, Result};

static NEXT_CONTEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The emulator's description of the last failed launch (kernel, pc, lane, address), if the
/// emulator serves HIP in this build.
pub(crate) fn last_launch_detail() -> Option<String> {
    #[cfg(feature = "emu")]
    {
        amdgpu_emu::hip::last_launch_error()
    }
    #[cfg(not(feature = "emu"))]
    {
        None
    }
}

struct Inner {
    id: u64,
    arch: Arch,
    device: i32,
    device_name: String,
    // Declared before `module` so that functions are dropped before the module that owns them
    // (rocm-rs's Function does not keep its Module alive).
    functions: Mutex<HashMap<&'static str, Arc<KernelFn>>>,
    module: LoadedModule,
}

/// The loaded code object. Only read (to look up kernels) after loading; unloaded by its Drop
/// when the last `Context` clone goes.
struct LoadedModule(hip::Module);

// SAFETY: a HIP module handle is a process-wide object that the HIP runtime allows to be used and
// unloaded from any host thread; `Context` never unloads it while shared (it is dropped once,
// with `Inner`, when the last Arc goes).
unsafe impl Send for LoadedModule {}
// SAFETY: as above; the only operation through `&LoadedModule` is hipModuleGetFunction.
unsafe impl Sync for LoadedModule {}

/// A kernel handle of the loaded module, shared between launches on any host thread.
struct KernelFn(hip::Function);

// SAFETY: a HIP function handle is an immutable, process-wide object owned by its module; rocm-rs's
// `Function` is only that handle (no Drop, no interior state), and HIP allows launching it from
// any host thread. Every `KernelFn` lives in `Inner::functions` or in a `launch` call borrowing the
// `Context`, so the module that owns the handle stays loaded while it is reachable.
unsafe impl Send for KernelFn {}
// SAFETY: as above; the only operation through `&KernelFn` is launching the kernel.
unsafe impl Sync for KernelFn {}

/// A device with fp8gemm's code object loaded. Cheap to clone (an `Arc`); `Send + Sync`.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

// The documented `Send + Sync` of `Context` (and of the buffers) is checked by the compiler.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Context>();
    assert_send_sync::<DeviceBuffer<u8>>();
};

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.inner.device)
            .field("name", &self.inner.device_name)
            .field("arch", &self.inner.arch)
            .finish()
    }
}

fn hip_check(call: &'static str, code: hip::ffi::hipError_t) -> Result<()> {
    if code == hip::ffi::hipError_t_hipSuccess {
        Ok(())
    } else {
        Err(Error::hip(call, hip::Error::new(code)))
    }
}

impl Context {
    /// Opens device 0.
    pub fn new() -> Result<Context> {
        Self::on_device(0)
    }

    /// Opens device `device`, detects its architecture and loads the matching embedded code
    /// object once.
    pub fn on_device(device: i32) -> Result<Context> {
        let count = hip::get_device_count().map_err(|e| Error::hip("hipGetDeviceCount", e))?;
        if count <= 0 {
            return Err(Error::NoDevice);
        }
        if device < 0 || device >= count {
            return Err(Error::Shape {
                arg: "device",
                expected: format!("a device index in 0..{count}"),
                actual: device.to_string(),
            });
        }
        // SAFETY: hipSetDevice takes a plain index, validated above.
        hip_check("hipSetDevice", unsafe { hip::ffi::hipSetDevice(device) })?;
        // SAFETY: hipDeviceProp_tR0600 is a plain C struct for which all-zero bytes are valid;
        // hipGetDevicePropertiesR0600 fills it for a valid device index.
        let props = unsafe {
            let mut props = std::mem::zeroed::<hip::ffi::hipDeviceProp_tR0600>();
            hip_check("hipGetDeviceProperties", hip::ffi::hipGetDevicePropertiesR0600(&mut props, device))?;
            props
        };
        let cstr = |chars: &[std::ffi::c_char]| -> String {
            let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        let arch_name = cstr(&props.gcnArchName);
        let arch = Arch::from_name(&arch_name).ok_or(Error::UnsupportedArch { found: arch_name })?;
        let module = hip::Module::load_data(arch.code_object()).map_err(|e| Error::hip("hipModuleLoadData", e))?;
        Ok(Context {
            inner: Arc::new(Inner {
                id: NEXT_CONTEXT_ID.fetch_add(1, Ordering::Relaxed),
                arch,
                device,
                device_name: cstr(&props.name),
                functions: Mutex::new(HashMap::new()),
                module: LoadedModule(module),
            }),
        })
    }

    /// The device's architecture.
    pub fn arch(&self) -> Arch {
        self.inner.arch
    }

    /// The device's marketing name as HIP reports it.
    pub fn device_name(&self) -> &str {
        &self.inner.device_name
    }

    /// Makes this context's device the calling thread's current HIP device. HIP's current
    /// device is per thread, and a `Context` may be used from any thread: every operation that
    /// allocates, launches or synchronizes calls this first.
    fn activate(&self) -> Result<()> {
        // SAFETY: hipSetDevice takes a plain index, validated when the context was created.
        hip_check("hipSetDevice", unsafe { hip::ffi::hipSetDevice(self.inner.device) })
    }

    /// Waits until all work on the device is complete.
    pub fn synchronize(&self) -> Result<()> {
        self.activate()?;
        // SAFETY: no arguments; valid at any time after the device was selected.
        hip_check("hipDeviceSynchronize", unsafe { hip::ffi::hipDeviceSynchronize() })
    }

    /// Allocates `len` zeroed elements. `len · size_of::<T>()` must fit in `isize` (a typed
    /// [`Error::Shape`] naming `len` otherwise), so a buffer's length never claims more bytes than
    /// were allocated.
    pub fn alloc_zeroed<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        byte_len::<T>(len)?;
        self.activate()?;
        let mut mem = hip::DeviceMemory::<T>::new(len).map_err(|e| Error::hip("hipMalloc", e))?;
        if len > 0 {
            mem.memset(0).map_err(|e| Error::hip("hipMemset", e))?;
        }
        Ok(DeviceBuffer { mem, len, ctx: self.inner.id, _t: PhantomData })
    }

    /// Allocates a buffer holding a copy of `data`.
    pub fn upload<T: Pod>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        self.activate()?;
        let mut mem = hip::DeviceMemory::<T>::new(data.len()).map_err(|e| Error::hip("hipMalloc", e))?;
        mem.copy_from_host(data).map_err(|e| Error::hip("hipMemcpyHtoD", e))?;
        Ok(DeviceBuffer { mem, len: data.len(), ctx: self.inner.id, _t: PhantomData })
    }

    /// Checks that `buf` was allocated by this context (`arg` names it in the error).
    pub(crate) fn check_owner<T>(&self, arg: &'static str, buf: &DeviceBuffer<T>) -> Result<()> {
        if buf.ctx == self.inner.id { Ok(()) } else { Err(Error::ForeignBuffer { arg }) }
    }

    fn function(&self, name: &'static str) -> Result<Arc<KernelFn>> {
        let mut map = self.inner.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = map.get(name) {
            return Ok(f.clone());
        }
        let f = self
            .inner
            .module
            .0
            .get_function(name)
            .map_err(|_| Error::MissingKernel { kernel: name, arch: self.inner.arch })?;
        let f = Arc::new(KernelFn(f));
        map.insert(name, f.clone());
        Ok(f)
    }

    /// Launches `spec` on a `grid` of workgroups of its declared size with `lds_bytes` of
    /// dynamic LDS; `args` becomes the kernarg segment.
    ///
    /// # Safety
    /// Every device address in `args` must point into a live allocation large enough for
    /// everything the kernel reads and writes with these arguments, and the buffers the kernel
    /// writes must not be read concurrently. The typed entry points (e.g. `fp8_gemm_nt`) check
    /// this before calling.
    pub(crate) unsafe fn launch<A: Copy>(&self, spec: KernelSpec<A>, grid: [u32; 3], lds_bytes: u32, args: &A) -> Result<()> {
        self.activate()?;
        let f = self.function(spec.name)?;
        // HIP copies the `size` bytes behind kernelParams[i] into the kernarg segment at launch;
        // the kernel has exactly one by-value argument, the struct itself.
        let mut params = [args as *const A as *mut c_void];
        f.0.launch(
            hip::Dim3::new_3d(grid[0], grid[1], grid[2]),
            hip::Dim3::new_1d(spec.workgroup_size),
            lds_bytes,
            None,
            &mut params,
        )
        .map_err(|e| Error::hip("launch", e))
    }
}

/// `len · size_of::<T>()`, or a typed error if it exceeds `isize::MAX` (the largest object Rust
/// and HIP can describe).
fn byte_len<T>(len: usize) -> Result<usize> {
    len.checked_mul(std::mem::size_of::<T>()).filter(|&b| b <= isize::MAX as usize).ok_or_else(|| Error::Shape {
        arg: "len",
        expected: format!("at most {} elements of {} bytes (isize::MAX bytes)", isize::MAX as usize / std::mem::size_of::<T>().max(1), std::mem::size_of::<T>()),
        actual: format!("{len} elements"),
    })
}

/// A typed device allocation of `len` elements of `T`, owned by one [`Context`].
pub struct DeviceBuffer<T> {
    mem: hip::DeviceMemory<T>,
    len: usize,
    ctx: u64,
    _t: PhantomData<T>,
}

// SAFETY: the buffer owns its device allocation exclusively; HIP allocations may be used and
// freed from any host thread.
unsafe impl<T: Send> Send for DeviceBuffer<T> {}
// SAFETY: shared references only read the device address and copy device data out.
unsafe impl<T: Sync> Sync for DeviceBuffer<T> {}

impl<T> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer<{}>[{}] @ {:#x}", std::any::type_name::<T>(), self.len, self.mem.as_ptr() as usize)
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
        GlobalPtr::new(self.mem.as_ptr() as usize as u64)
    }
    /// Copies the whole buffer to the host.
    pub fn download(&self) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); self.len];
        self.mem.copy_to_host(&mut out).map_err(|e| Error::hip("hipMemcpyDtoH", e))?;
        Ok(out)
    }
    /// Overwrites the whole buffer with `data`, which must have exactly [`Self::len`] elements.
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::Shape {
                arg: "data",
                expected: format!("{} elements", self.len),
                actual: format!("{} elements", data.len()),
            });
        }
        self.mem.copy_from_host(data).map_err(|e| Error::hip("hipMemcpyHtoD", e))
    }
}

/// Counters of the calling thread's most recent successful kernel launch on the emulator
/// (instructions by class, waves, barriers). Emulator builds only: on hardware, use a profiler.
#[cfg(feature = "emu")]
pub fn last_emulator_report() -> Option<std::sync::Arc<amdgpu_emu::exec::LaunchReport>> {
    amdgpu_emu::hip::last_launch_report()
}
