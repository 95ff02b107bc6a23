//! The HIP C ABI of the emulated gfx942 device.
//!
//! Every `hip*` function here is exported unmangled with the exact C signature HIP declares
//! (checked against the bindings `rocm-rs` 0.4.2 ships, HIP 6.3), so a binary that calls HIP —
//! through `rocm-rs` or any other binding that declares the functions without linking
//! `libamdhip64` — runs its kernels on this emulator.
//!
//! # The emulated runtime
//! * One device, ordinal 0: an "AMD Instinct MI300X (emulated)", `gfx942:sramecc+:xnack-`,
//!   304 CUs, 64 KiB LDS per workgroup, wave64, 192 GiB of reported memory
//!   ([`hipGetDevicePropertiesR0600`] lists every value).
//! * Device memory is [`crate::memory::DeviceMemory`]: bounds-checked allocations at 64-bit
//!   device addresses handed out upward from `0x1000_0000_0000` (16 TiB) and never reused. A pointer
//!   in the window of addresses ever allocated is a device pointer (live, or stale and rejected);
//!   any other is ordinary host memory. A copy's direction is validated against where its
//!   pointers really are (see [`hipMemcpy`]). The window ends at `0x5000_0000_0000`, below where
//!   Linux x86-64 places host mappings, so no host pointer is ever mistaken for a device one.
//! * Handles (`hipModule_t`, `hipFunction_t`, `hipStream_t`, `hipEvent_t`) are opaque non-null
//!   ids, never dereferenced; every use looks them up, and an unknown or destroyed handle is
//!   `hipErrorInvalidHandle` (400), never undefined behaviour. (HIP itself reports some destroyed
//!   streams as `hipErrorContextIsDestroyed`; the emulator uses 400 for every stale handle.)
//! * **Streams are in-order and complete immediately**: every operation, `*Async` or not, runs
//!   to completion inside the call that enqueues it, on the calling thread (a kernel launch's
//!   workgroups may run in parallel on the host's cores). Stream and event queries therefore
//!   always report completion, and stream/device synchronization has nothing to wait for.
//! * Event timestamps are taken from the host's monotonic clock when the event is recorded, so
//!   [`hipEventElapsedTime`] measures **emulator wall time**, not GPU time.
//! * Kernel faults (memcheck violations, traps, unimplemented instructions) make the launch
//!   itself return an error (`hipErrorIllegalAddress` for memory faults,
//!   `hipErrorLaunchFailure` otherwise); the full message — kernel, pc, lane, address — is
//!   printed to stderr and kept for [`last_launch_error`]. Unlike a real device, a fault does
//!   not poison later calls.
//! * The "last error" of [`hipGetLastError`] / [`hipPeekAtLastError`] is per thread: a failing
//!   call stores its code, `hipGetLastError` returns and clears it. So is the current device
//!   and the launch outcome read by [`last_launch_error`] / [`last_launch_report`].
//!
//! # Rust-side accessors
//! For the host library and tests (not part of HIP): [`last_launch_error`],
//! [`last_launch_report`] and [`last_launch_kernarg`] describe the calling thread's most recent
//! [`hipModuleLaunchKernel`]; [`set_launch_checks`] selects the executor's checks (every mode —
//! memcheck, mfma-hazard, racecheck, late-arrival, uninit-lds — on by default; the environment
//! variable `AMDGPU_EMU_CHECKS`, e.g. `AMDGPU_EMU_CHECKS=memcheck`, sets the initial modes, see
//! [`crate::exec::Checks::parse`]); [`device_memory`] exposes the allocations; [`device_properties`] is what
//! [`hipGetDevicePropertiesR0600`] reports. Note that a binary gets these `hip*` symbols only
//! if it links this crate, i.e. references it somewhere (`use amdgpu_emu as _;` suffices).
//!
//! # Kernel arguments
//! [`hipModuleLaunchKernel`] builds the kernarg segment (`.kernarg_segment_size` bytes, zeroed)
//! from the kernel's `.args` metadata, as the HIP runtime does:
//! * explicit arguments (every `.value_kind` not starting with `hidden_`), in order: with
//!   `kernelParams`, `kernelParams[i]` points to the `.size` bytes of the i-th explicit argument,
//!   copied to its `.offset`; with `extra` (`{HIP_LAUNCH_PARAM_BUFFER_POINTER, buf,
//!   HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END}`), each explicit argument is
//!   copied from `buf + .offset`. (A buffer too short for an explicit argument is rejected with
//!   `hipErrorInvalidValue`, where HIP would leave that argument undefined.)
//! * hidden arguments, by `.value_kind`: `hidden_block_count_{x,y,z}` = grid size in
//!   workgroups, `hidden_group_size_{x,y,z}` = block size, `hidden_remainder_{x,y,z}` = 0 (the
//!   grid is a whole number of workgroups), `hidden_grid_dims` = 3 (HIP always dispatches a 3-D
//!   grid), `hidden_dynamic_lds_size` = `sharedMemBytes`, `hidden_global_offset_{x,y,z}` = 0,
//!   `hidden_shared_base` / `hidden_private_base` = the high 32 bits of the executor's flat
//!   LDS / scratch apertures. Every other hidden argument (printf/hostcall buffers, heap, queue
//!   pointer, multigrid sync, default queue, completion action, `hidden_none`) is written as 0:
//!   the emulator provides none of those services.
//!
//! # Launch validation (as HIP 6.x does it)
//! Zero grid or block dimension, a grid larger than 2³¹−1 × 65536 × 65536, a block of more
//! than 1024 work-items or with a dimension over 1024, `sharedMemBytes` over 64 KiB, both or
//! neither of `kernelParams` / `extra` for a kernel with arguments, or a malformed `extra`:
//! `hipErrorInvalidValue`. A block larger than the kernel's `.max_flat_workgroup_size` (its
//! launch bound): `hipErrorLaunchFailure`, with HIP's "Launch params (x, y, z) are larger than
//! launch bounds (n)" message. Static (`.group_segment_fixed_size`) plus dynamic LDS over
//! 64 KiB: the emulator returns `hipErrorLaunchOutOfResources`.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, RwLock};
use std::time::Instant;

use crate::exec::{self, Checks, LaunchConfig, LaunchReport};
use crate::loader::{CodeObject, Kernel};
use crate::memory::DeviceMemory;

// ---------------------------------------------------------------------------------------------
// C types and constants (values from HIP's headers, as in rocm-rs 0.4.2's bindings)
// ---------------------------------------------------------------------------------------------

/// HIP's `hipError_t` (a C enum, 32-bit unsigned).
pub type hipError_t = c_uint;
/// HIP's `hipMemcpyKind`.
pub type hipMemcpyKind = c_uint;
/// HIP's `hipDevice_t` (a device ordinal).
pub type hipDevice_t = c_int;
/// HIP's `hipDeviceptr_t`.
pub type hipDeviceptr_t = *mut c_void;
/// HIP's `hipDeviceAttribute_t`.
pub type hipDeviceAttribute_t = c_uint;
/// HIP's `hipFunction_attribute`.
pub type hipFunction_attribute = c_uint;
/// HIP's `hipJitOption`.
pub type hipJitOption = c_uint;

/// Opaque stream object (never dereferenced; handles are ids).
#[repr(C)]
pub struct ihipStream_t {
    _opaque: [u8; 0],
}
/// Opaque module object.
#[repr(C)]
pub struct ihipModule_t {
    _opaque: [u8; 0],
}
/// Opaque function object.
#[repr(C)]
pub struct ihipModuleSymbol_t {
    _opaque: [u8; 0],
}
/// Opaque event object.
#[repr(C)]
pub struct ihipEvent_t {
    _opaque: [u8; 0],
}
/// HIP's `hipStream_t`; null is the default (null) stream.
pub type hipStream_t = *mut ihipStream_t;
/// HIP's `hipModule_t`.
pub type hipModule_t = *mut ihipModule_t;
/// HIP's `hipFunction_t`.
pub type hipFunction_t = *mut ihipModuleSymbol_t;
/// HIP's `hipEvent_t`.
pub type hipEvent_t = *mut ihipEvent_t;
/// HIP's `hipStreamCallback_t`.
pub type hipStreamCallback_t =
    Option<unsafe extern "C" fn(stream: hipStream_t, status: hipError_t, user_data: *mut c_void)>;

/// `hipSuccess`.
pub const hipSuccess: hipError_t = 0;
/// `hipErrorInvalidValue`.
pub const hipErrorInvalidValue: hipError_t = 1;
/// `hipErrorOutOfMemory`.
pub const hipErrorOutOfMemory: hipError_t = 2;
/// `hipErrorNotInitialized`.
pub const hipErrorNotInitialized: hipError_t = 3;
/// `hipErrorInvalidConfiguration`.
pub const hipErrorInvalidConfiguration: hipError_t = 9;
/// `hipErrorInvalidSymbol`.
pub const hipErrorInvalidSymbol: hipError_t = 13;
/// `hipErrorInvalidDevicePointer`.
pub const hipErrorInvalidDevicePointer: hipError_t = 17;
/// `hipErrorInvalidMemcpyDirection`.
pub const hipErrorInvalidMemcpyDirection: hipError_t = 21;
/// `hipErrorInvalidDeviceFunction`.
pub const hipErrorInvalidDeviceFunction: hipError_t = 98;
/// `hipErrorNoDevice`.
pub const hipErrorNoDevice: hipError_t = 100;
/// `hipErrorInvalidDevice`.
pub const hipErrorInvalidDevice: hipError_t = 101;
/// `hipErrorInvalidImage`.
pub const hipErrorInvalidImage: hipError_t = 200;
/// `hipErrorInvalidContext`.
pub const hipErrorInvalidContext: hipError_t = 201;
/// `hipErrorNoBinaryForGpu`.
pub const hipErrorNoBinaryForGpu: hipError_t = 209;
/// `hipErrorInvalidKernelFile`.
pub const hipErrorInvalidKernelFile: hipError_t = 218;
/// `hipErrorFileNotFound`.
pub const hipErrorFileNotFound: hipError_t = 301;
/// `hipErrorInvalidHandle` (also `hipErrorInvalidResourceHandle`).
pub const hipErrorInvalidHandle: hipError_t = 400;
/// `hipErrorInvalidResourceHandle` (same value as `hipErrorInvalidHandle`).
pub const hipErrorInvalidResourceHandle: hipError_t = 400;
/// `hipErrorNotFound`.
pub const hipErrorNotFound: hipError_t = 500;
/// `hipErrorNotReady`.
pub const hipErrorNotReady: hipError_t = 600;
/// `hipErrorIllegalAddress`.
pub const hipErrorIllegalAddress: hipError_t = 700;
/// `hipErrorLaunchOutOfResources`.
pub const hipErrorLaunchOutOfResources: hipError_t = 701;
/// `hipErrorLaunchFailure`.
pub const hipErrorLaunchFailure: hipError_t = 719;
/// `hipErrorLaunchTimeOut` (the emulator's watchdog: a wave exceeded its instruction budget).
pub const hipErrorLaunchTimeOut: hipError_t = 702;
/// `hipErrorNotSupported`.
pub const hipErrorNotSupported: hipError_t = 801;
/// `hipErrorUnknown`.
pub const hipErrorUnknown: hipError_t = 999;

/// `hipMemcpyHostToHost`.
pub const hipMemcpyHostToHost: hipMemcpyKind = 0;
/// `hipMemcpyHostToDevice`.
pub const hipMemcpyHostToDevice: hipMemcpyKind = 1;
/// `hipMemcpyDeviceToHost`.
pub const hipMemcpyDeviceToHost: hipMemcpyKind = 2;
/// `hipMemcpyDeviceToDevice`.
pub const hipMemcpyDeviceToDevice: hipMemcpyKind = 3;
/// `hipMemcpyDefault`: direction inferred from the pointers.
pub const hipMemcpyDefault: hipMemcpyKind = 4;
/// `hipMemcpyDeviceToDeviceNoCU` (treated as device to device).
pub const hipMemcpyDeviceToDeviceNoCU: hipMemcpyKind = 1024;

/// `HIP_LAUNCH_PARAM_BUFFER_POINTER` (`(void*)0x01` in HIP's headers).
pub const HIP_LAUNCH_PARAM_BUFFER_POINTER: *mut c_void = std::ptr::without_provenance_mut(0x01);
/// `HIP_LAUNCH_PARAM_BUFFER_SIZE` (`(void*)0x02`).
pub const HIP_LAUNCH_PARAM_BUFFER_SIZE: *mut c_void = std::ptr::without_provenance_mut(0x02);
/// `HIP_LAUNCH_PARAM_END` (`(void*)0x03`).
pub const HIP_LAUNCH_PARAM_END: *mut c_void = std::ptr::without_provenance_mut(0x03);

/// `hipStreamPerThread` (`(hipStream_t)2`): the per-thread default stream.
pub const hipStreamPerThread: hipStream_t = std::ptr::without_provenance_mut(2);
/// `hipStreamDefault` flag.
pub const hipStreamDefault: c_uint = 0;
/// `hipStreamNonBlocking` flag.
pub const hipStreamNonBlocking: c_uint = 1;
/// `hipEventDefault` flag.
pub const hipEventDefault: c_uint = 0;
/// `hipEventBlockingSync` flag.
pub const hipEventBlockingSync: c_uint = 1;
/// `hipEventDisableTiming` flag.
pub const hipEventDisableTiming: c_uint = 2;
/// `hipEventInterprocess` flag.
pub const hipEventInterprocess: c_uint = 4;
/// `hipEventDisableSystemFence` flag.
pub const hipEventDisableSystemFence: c_uint = 0x2000_0000;
/// `hipEventReleaseToDevice` flag.
pub const hipEventReleaseToDevice: c_uint = 0x4000_0000;
/// `hipEventReleaseToSystem` flag.
pub const hipEventReleaseToSystem: c_uint = 0x8000_0000;

/// `HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
pub const HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: hipFunction_attribute = 0;
/// `HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`.
pub const HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: hipFunction_attribute = 1;
/// `HIP_FUNC_ATTRIBUTE_CONST_SIZE_BYTES`.
pub const HIP_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: hipFunction_attribute = 2;
/// `HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`.
pub const HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: hipFunction_attribute = 3;
/// `HIP_FUNC_ATTRIBUTE_NUM_REGS`.
pub const HIP_FUNC_ATTRIBUTE_NUM_REGS: hipFunction_attribute = 4;
/// `HIP_FUNC_ATTRIBUTE_PTX_VERSION`.
pub const HIP_FUNC_ATTRIBUTE_PTX_VERSION: hipFunction_attribute = 5;
/// `HIP_FUNC_ATTRIBUTE_BINARY_VERSION`.
pub const HIP_FUNC_ATTRIBUTE_BINARY_VERSION: hipFunction_attribute = 6;
/// `HIP_FUNC_ATTRIBUTE_CACHE_MODE_CA`.
pub const HIP_FUNC_ATTRIBUTE_CACHE_MODE_CA: hipFunction_attribute = 7;
/// `HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
pub const HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: hipFunction_attribute = 8;
/// `HIP_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`.
pub const HIP_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: hipFunction_attribute = 9;

/// The HIP version the emulator reports (`HIP_VERSION` of the bindings it mirrors: 6.3.42133).
pub const EMULATED_HIP_VERSION: c_int = 60_342_133;

// ---------------------------------------------------------------------------------------------
// The emulated device's properties
// ---------------------------------------------------------------------------------------------

/// Device name reported by [`hipGetDevicePropertiesR0600`] and [`hipDeviceGetName`].
pub const DEVICE_NAME: &str = "AMD Instinct MI300X (emulated)";
/// `gcnArchName` of the emulated device.
pub const GCN_ARCH_NAME: &str = "gfx942:sramecc+:xnack-";
/// Reported device memory (MI300X: 192 GiB of HBM3).
pub const TOTAL_GLOBAL_MEM: u64 = 192 << 30;
/// LDS bytes available to one workgroup (and per CU) on gfx942.
pub const LDS_BYTES_PER_WORKGROUP: u32 = 64 * 1024;
/// Largest workgroup HIP accepts.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
/// Compute units of an MI300X.
pub const MULTIPROCESSOR_COUNT: c_int = 304;
/// Peak engine clock in kHz (2100 MHz).
pub const CLOCK_RATE_KHZ: c_int = 2_100_000;
/// Memory clock in kHz (HBM3 at 1300 MHz).
pub const MEMORY_CLOCK_RATE_KHZ: c_int = 1_300_000;
/// Memory bus width in bits (8 HBM3 stacks × 1024).
pub const MEMORY_BUS_WIDTH: c_int = 8192;
/// L2 cache bytes (4 MiB per XCD).
pub const L2_CACHE_SIZE: c_int = 4 << 20;
/// Constant clock for `s_memrealtime` in kHz (100 MHz).
pub const WALL_CLOCK_RATE_KHZ: c_int = 100_000;

/// HIP's `hipUUID`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hipUUID {
    /// 16 bytes.
    pub bytes: [c_char; 16],
}

/// HIP's `hipDeviceProp_tR0600` (the `hipDeviceProp_t` of HIP 6.x), field for field.
///
/// Field meanings are HIP's; the `rocm-rs` layout is checked against this one in the workspace's
/// `tests/hip_emu.rs` (size and every field offset).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct hipDeviceProp_tR0600 {
    /// Device name, NUL-terminated.
    pub name: [c_char; 256],
    /// Device UUID.
    pub uuid: hipUUID,
    /// LUID (Windows only).
    pub luid: [c_char; 8],
    /// LUID node mask (Windows only).
    pub luidDeviceNodeMask: c_uint,
    /// Device memory in bytes.
    pub totalGlobalMem: usize,
    /// LDS bytes per block.
    pub sharedMemPerBlock: usize,
    /// Registers per block.
    pub regsPerBlock: c_int,
    /// Wavefront size.
    pub warpSize: c_int,
    /// Maximum pitch of a pitched allocation.
    pub memPitch: usize,
    /// Maximum work-items per block.
    pub maxThreadsPerBlock: c_int,
    /// Maximum block dimensions.
    pub maxThreadsDim: [c_int; 3],
    /// Maximum grid dimensions.
    pub maxGridSize: [c_int; 3],
    /// Engine clock in kHz.
    pub clockRate: c_int,
    /// Constant memory bytes.
    pub totalConstMem: usize,
    /// Major "compute capability" (9 for gfx9).
    pub major: c_int,
    /// Minor "compute capability".
    pub minor: c_int,
    /// Texture alignment.
    pub textureAlignment: usize,
    /// Texture pitch alignment.
    pub texturePitchAlignment: usize,
    /// Copy/compute overlap.
    pub deviceOverlap: c_int,
    /// Compute units.
    pub multiProcessorCount: c_int,
    /// Kernel run-time limit.
    pub kernelExecTimeoutEnabled: c_int,
    /// Integrated (APU) device.
    pub integrated: c_int,
    /// Can map host memory.
    pub canMapHostMemory: c_int,
    /// Compute mode.
    pub computeMode: c_int,
    /// Texture limit.
    pub maxTexture1D: c_int,
    /// Texture limit.
    pub maxTexture1DMipmap: c_int,
    /// Texture limit.
    pub maxTexture1DLinear: c_int,
    /// Texture limit.
    pub maxTexture2D: [c_int; 2],
    /// Texture limit.
    pub maxTexture2DMipmap: [c_int; 2],
    /// Texture limit.
    pub maxTexture2DLinear: [c_int; 3],
    /// Texture limit.
    pub maxTexture2DGather: [c_int; 2],
    /// Texture limit.
    pub maxTexture3D: [c_int; 3],
    /// Texture limit.
    pub maxTexture3DAlt: [c_int; 3],
    /// Texture limit.
    pub maxTextureCubemap: c_int,
    /// Texture limit.
    pub maxTexture1DLayered: [c_int; 2],
    /// Texture limit.
    pub maxTexture2DLayered: [c_int; 3],
    /// Texture limit.
    pub maxTextureCubemapLayered: [c_int; 2],
    /// Surface limit.
    pub maxSurface1D: c_int,
    /// Surface limit.
    pub maxSurface2D: [c_int; 2],
    /// Surface limit.
    pub maxSurface3D: [c_int; 3],
    /// Surface limit.
    pub maxSurface1DLayered: [c_int; 2],
    /// Surface limit.
    pub maxSurface2DLayered: [c_int; 3],
    /// Surface limit.
    pub maxSurfaceCubemap: c_int,
    /// Surface limit.
    pub maxSurfaceCubemapLayered: [c_int; 2],
    /// Surface alignment.
    pub surfaceAlignment: usize,
    /// Concurrent kernels supported.
    pub concurrentKernels: c_int,
    /// ECC enabled.
    pub ECCEnabled: c_int,
    /// PCI bus id.
    pub pciBusID: c_int,
    /// PCI device id.
    pub pciDeviceID: c_int,
    /// PCI domain id.
    pub pciDomainID: c_int,
    /// TCC driver (Windows).
    pub tccDriver: c_int,
    /// Asynchronous copy engines.
    pub asyncEngineCount: c_int,
    /// Unified addressing.
    pub unifiedAddressing: c_int,
    /// Memory clock in kHz.
    pub memoryClockRate: c_int,
    /// Memory bus width in bits.
    pub memoryBusWidth: c_int,
    /// L2 cache bytes.
    pub l2CacheSize: c_int,
    /// Persisting L2 maximum.
    pub persistingL2CacheMaxSize: c_int,
    /// Maximum resident work-items per CU.
    pub maxThreadsPerMultiProcessor: c_int,
    /// Stream priorities supported.
    pub streamPrioritiesSupported: c_int,
    /// Global L1 cache supported.
    pub globalL1CacheSupported: c_int,
    /// Local L1 cache supported.
    pub localL1CacheSupported: c_int,
    /// LDS bytes per CU.
    pub sharedMemPerMultiprocessor: usize,
    /// Registers per CU.
    pub regsPerMultiprocessor: c_int,
    /// Managed memory supported.
    pub managedMemory: c_int,
    /// Part of a multi-GPU board.
    pub isMultiGpuBoard: c_int,
    /// Multi-GPU board group id.
    pub multiGpuBoardGroupID: c_int,
    /// Host-native atomics.
    pub hostNativeAtomicSupported: c_int,
    /// FP32:FP64 throughput ratio.
    pub singleToDoublePrecisionPerfRatio: c_int,
    /// Pageable memory access.
    pub pageableMemoryAccess: c_int,
    /// Concurrent managed access.
    pub concurrentManagedAccess: c_int,
    /// Compute preemption.
    pub computePreemptionSupported: c_int,
    /// Registered host pointers usable directly.
    pub canUseHostPointerForRegisteredMem: c_int,
    /// Cooperative launch.
    pub cooperativeLaunch: c_int,
    /// Cooperative multi-device launch.
    pub cooperativeMultiDeviceLaunch: c_int,
    /// Opt-in LDS per block.
    pub sharedMemPerBlockOptin: usize,
    /// Pageable access via host page tables.
    pub pageableMemoryAccessUsesHostPageTables: c_int,
    /// Direct managed access from host.
    pub directManagedMemAccessFromHost: c_int,
    /// Maximum resident blocks per CU.
    pub maxBlocksPerMultiProcessor: c_int,
    /// Access policy window.
    pub accessPolicyMaxWindowSize: c_int,
    /// Reserved LDS per block.
    pub reservedSharedMemPerBlock: usize,
    /// Host register supported.
    pub hostRegisterSupported: c_int,
    /// Sparse arrays.
    pub sparseHipArraySupported: c_int,
    /// Read-only host register.
    pub hostRegisterReadOnlySupported: c_int,
    /// Timeline semaphore interop.
    pub timelineSemaphoreInteropSupported: c_int,
    /// Memory pools supported.
    pub memoryPoolsSupported: c_int,
    /// GPUDirect RDMA.
    pub gpuDirectRDMASupported: c_int,
    /// GPUDirect RDMA flush options.
    pub gpuDirectRDMAFlushWritesOptions: c_uint,
    /// GPUDirect RDMA ordering.
    pub gpuDirectRDMAWritesOrdering: c_int,
    /// Memory pool handle types.
    pub memoryPoolSupportedHandleTypes: c_uint,
    /// Deferred mapping arrays.
    pub deferredMappingHipArraySupported: c_int,
    /// IPC events.
    pub ipcEventSupported: c_int,
    /// Cluster launch.
    pub clusterLaunch: c_int,
    /// Unified function pointers.
    pub unifiedFunctionPointers: c_int,
    /// Reserved.
    pub reserved: [c_int; 63],
    /// Reserved for HIP.
    pub hipReserved: [c_int; 32],
    /// Target id (`gfx942:sramecc+:xnack-`), NUL-terminated.
    pub gcnArchName: [c_char; 256],
    /// LDS bytes per CU.
    pub maxSharedMemoryPerMultiProcessor: usize,
    /// Constant timer clock in kHz.
    pub clockInstructionRate: c_int,
    /// `hipDeviceArch_t` feature bits (bit 0 `hasGlobalInt32Atomics` … bit 16
    /// `hasDynamicParallelism`, in HIP's declaration order).
    pub arch: u32,
    /// HDP memory flush register (not emulated: null).
    pub hdpMemFlushCntl: *mut c_uint,
    /// HDP register flush register (not emulated: null).
    pub hdpRegFlushCntl: *mut c_uint,
    /// Cooperative multi-device: unmatched functions allowed.
    pub cooperativeMultiDeviceUnmatchedFunc: c_int,
    /// Cooperative multi-device: unmatched grid dims allowed.
    pub cooperativeMultiDeviceUnmatchedGridDim: c_int,
    /// Cooperative multi-device: unmatched block dims allowed.
    pub cooperativeMultiDeviceUnmatchedBlockDim: c_int,
    /// Cooperative multi-device: unmatched LDS allowed.
    pub cooperativeMultiDeviceUnmatchedSharedMem: c_int,
    /// Large BAR.
    pub isLargeBar: c_int,
    /// ASIC revision.
    pub asicRevision: c_int,
}

fn c_chars<const N: usize>(s: &str) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    for (o, b) in out.iter_mut().zip(s.bytes().take(N - 1)) {
        *o = b as c_char;
    }
    out
}

/// The properties of the emulated device.
pub fn device_properties() -> hipDeviceProp_tR0600 {
    let i32max = i32::MAX;
    let arch_bits: u32 = (0..=16).filter(|&b| b != 14 && b != 16).fold(0, |acc, b| acc | (1 << b)); // no surfaces, no dynamic parallelism
    hipDeviceProp_tR0600 {
        name: c_chars(DEVICE_NAME),
        uuid: hipUUID { bytes: c_chars::<16>("GPU-emu-gfx942-0") },
        luid: [0; 8],
        luidDeviceNodeMask: 0,
        totalGlobalMem: TOTAL_GLOBAL_MEM as usize,
        sharedMemPerBlock: LDS_BYTES_PER_WORKGROUP as usize,
        regsPerBlock: 512 * 64 * 2,
        warpSize: 64,
        memPitch: i32max as usize,
        maxThreadsPerBlock: MAX_THREADS_PER_BLOCK as c_int,
        maxThreadsDim: [1024, 1024, 1024],
        maxGridSize: [i32max, 65536, 65536],
        clockRate: CLOCK_RATE_KHZ,
        totalConstMem: i32max as usize,
        major: 9,
        minor: 4,
        textureAlignment: 256,
        texturePitchAlignment: 256,
        deviceOverlap: 1,
        multiProcessorCount: MULTIPROCESSOR_COUNT,
        kernelExecTimeoutEnabled: 0,
        integrated: 0,
        canMapHostMemory: 0,
        computeMode: 0,
        maxTexture1D: 0,
        maxTexture1DMipmap: 0,
        maxTexture1DLinear: 0,
        maxTexture2D: [0; 2],
        maxTexture2DMipmap: [0; 2],
        maxTexture2DLinear: [0; 3],
        maxTexture2DGather: [0; 2],
        maxTexture3D: [0; 3],
        maxTexture3DAlt: [0; 3],
        maxTextureCubemap: 0,
        maxTexture1DLayered: [0; 2],
        maxTexture2DLayered: [0; 3],
        maxTextureCubemapLayered: [0; 2],
        maxSurface1D: 0,
        maxSurface2D: [0; 2],
        maxSurface3D: [0; 3],
        maxSurface1DLayered: [0; 2],
        maxSurface2DLayered: [0; 3],
        maxSurfaceCubemap: 0,
        maxSurfaceCubemapLayered: [0; 2],
        surfaceAlignment: 0,
        concurrentKernels: 1,
        ECCEnabled: 0,
        pciBusID: 0,
        pciDeviceID: 0,
        pciDomainID: 0,
        tccDriver: 0,
        asyncEngineCount: 0,
        unifiedAddressing: 0,
        memoryClockRate: MEMORY_CLOCK_RATE_KHZ,
        memoryBusWidth: MEMORY_BUS_WIDTH,
        l2CacheSize: L2_CACHE_SIZE,
        persistingL2CacheMaxSize: 0,
        maxThreadsPerMultiProcessor: 2048,
        streamPrioritiesSupported: 1,
        globalL1CacheSupported: 1,
        localL1CacheSupported: 1,
        sharedMemPerMultiprocessor: LDS_BYTES_PER_WORKGROUP as usize,
        regsPerMultiprocessor: 512 * 64 * 4,
        managedMemory: 0,
        isMultiGpuBoard: 0,
        multiGpuBoardGroupID: 0,
        hostNativeAtomicSupported: 0,
        singleToDoublePrecisionPerfRatio: 0,
        pageableMemoryAccess: 0,
        concurrentManagedAccess: 0,
        computePreemptionSupported: 0,
        canUseHostPointerForRegisteredMem: 0,
        cooperativeLaunch: 0,
        cooperativeMultiDeviceLaunch: 0,
        sharedMemPerBlockOptin: LDS_BYTES_PER_WORKGROUP as usize,
        pageableMemoryAccessUsesHostPageTables: 0,
        directManagedMemAccessFromHost: 0,
        maxBlocksPerMultiProcessor: 32,
        accessPolicyMaxWindowSize: 0,
        reservedSharedMemPerBlock: 0,
        hostRegisterSupported: 0,
        sparseHipArraySupported: 0,
        hostRegisterReadOnlySupported: 0,
        timelineSemaphoreInteropSupported: 0,
        memoryPoolsSupported: 0,
        gpuDirectRDMASupported: 0,
        gpuDirectRDMAFlushWritesOptions: 0,
        gpuDirectRDMAWritesOrdering: 0,
        memoryPoolSupportedHandleTypes: 0,
        deferredMappingHipArraySupported: 0,
        ipcEventSupported: 0,
        clusterLaunch: 0,
        unifiedFunctionPointers: 0,
        reserved: [0; 63],
        hipReserved: [0; 32],
        gcnArchName: c_chars(GCN_ARCH_NAME),
        maxSharedMemoryPerMultiProcessor: LDS_BYTES_PER_WORKGROUP as usize,
        clockInstructionRate: WALL_CLOCK_RATE_KHZ,
        arch: arch_bits,
        hdpMemFlushCntl: std::ptr::null_mut(),
        hdpRegFlushCntl: std::ptr::null_mut(),
        cooperativeMultiDeviceUnmatchedFunc: 0,
        cooperativeMultiDeviceUnmatchedGridDim: 0,
        cooperativeMultiDeviceUnmatchedBlockDim: 0,
        cooperativeMultiDeviceUnmatchedSharedMem: 0,
        isLargeBar: 1,
        asicRevision: 1,
    }
}

// ---------------------------------------------------------------------------------------------
// Error names and descriptions
// ---------------------------------------------------------------------------------------------

/// (code, name, description) of every code the emulator can return, plus the common others.
const ERRORS: &[(hipError_t, &CStr, &CStr)] = &[
    (0, c"hipSuccess", c"no error"),
    (1, c"hipErrorInvalidValue", c"invalid argument"),
    (2, c"hipErrorOutOfMemory", c"out of memory"),
    (3, c"hipErrorNotInitialized", c"initialization error"),
    (4, c"hipErrorDeinitialized", c"driver shutting down"),
    (9, c"hipErrorInvalidConfiguration", c"invalid configuration argument"),
    (12, c"hipErrorInvalidPitchValue", c"invalid pitch argument"),
    (13, c"hipErrorInvalidSymbol", c"invalid device symbol"),
    (17, c"hipErrorInvalidDevicePointer", c"invalid device pointer"),
    (21, c"hipErrorInvalidMemcpyDirection", c"invalid copy direction for memcpy"),
    (35, c"hipErrorInsufficientDriver", c"driver version is insufficient for runtime version"),
    (52, c"hipErrorMissingConfiguration", c"__global__ function call is not configured"),
    (53, c"hipErrorPriorLaunchFailure", c"unspecified launch failure in prior launch"),
    (98, c"hipErrorInvalidDeviceFunction", c"invalid device function"),
    (100, c"hipErrorNoDevice", c"no ROCm-capable device is detected"),
    (101, c"hipErrorInvalidDevice", c"invalid device ordinal"),
    (200, c"hipErrorInvalidImage", c"device kernel image is invalid"),
    (201, c"hipErrorInvalidContext", c"invalid device context"),
    (209, c"hipErrorNoBinaryForGpu", c"no kernel image is available for execution on the device"),
    (218, c"hipErrorInvalidKernelFile", c"invalid kernel file"),
    (301, c"hipErrorFileNotFound", c"file not found"),
    (400, c"hipErrorInvalidHandle", c"invalid resource handle"),
    (401, c"hipErrorIllegalState", c"the operation cannot be performed in the present state"),
    (500, c"hipErrorNotFound", c"named symbol not found"),
    (600, c"hipErrorNotReady", c"device not ready"),
    (700, c"hipErrorIllegalAddress", c"an illegal memory access was encountered"),
    (701, c"hipErrorLaunchOutOfResources", c"too many resources requested for launch"),
    (702, c"hipErrorLaunchTimeOut", c"the launch timed out and was terminated"),
    (709, c"hipErrorContextIsDestroyed", c"context is destroyed"),
    (710, c"hipErrorAssert", c"device-side assert triggered"),
    (719, c"hipErrorLaunchFailure", c"unspecified launch failure"),
    (801, c"hipErrorNotSupported", c"operation not supported"),
    (999, c"hipErrorUnknown", c"unknown error"),
];

fn error_entry(code: hipError_t) -> Option<&'static (hipError_t, &'static CStr, &'static CStr)> {
    ERRORS.iter().find(|e| e.0 == code)
}

/// `const char* hipGetErrorName(hipError_t)`: the enumerator's name (`"hipErrorInvalidValue"`);
/// `"hipErrorUnknown"` for codes the emulator does not know. The string is static.
#[unsafe(no_mangle)]
pub extern "C" fn hipGetErrorName(hip_error: hipError_t) -> *const c_char {
    error_entry(hip_error).map_or(c"hipErrorUnknown", |e| e.1).as_ptr()
}

/// `const char* hipGetErrorString(hipError_t)`: a description (`"invalid argument"`);
/// `"unknown error"` for unknown codes. The string is static.
#[unsafe(no_mangle)]
pub extern "C" fn hipGetErrorString(hip_error: hipError_t) -> *const c_char {
    error_entry(hip_error).map_or(c"unknown error", |e| e.2).as_ptr()
}

// ---------------------------------------------------------------------------------------------
// Runtime state
// ---------------------------------------------------------------------------------------------

/// The outcome of the most recent kernel launch on a thread.
struct LaunchOutcome {
    error: Option<String>,
    report: Option<Arc<LaunchReport>>,
    kernarg: Option<Vec<u8>>,
    timing: Option<Arc<crate::timing::TimingReport>>,
}

thread_local! {
    static LAST_ERROR: Cell<hipError_t> = const { Cell::new(hipSuccess) };
    static CURRENT_DEVICE: Cell<c_int> = const { Cell::new(0) };
    static LAST_LAUNCH: RefCell<Option<LaunchOutcome>> = const { RefCell::new(None) };
}

struct ModuleEntry {
    code: Arc<CodeObject>,
    /// Function handles already handed out for this module, by kernel index.
    functions: HashMap<usize, u64>,
}

#[derive(Clone)]
struct FunctionEntry {
    /// Keeps the code object alive even after `hipModuleUnload`.
    code: Arc<CodeObject>,
    kernel: usize,
}

struct StreamEntry {
    flags: c_uint,
    priority: c_int,
}

struct EventEntry {
    flags: c_uint,
    recorded: Option<Instant>,
}

#[derive(Default)]
struct State {
    modules: HashMap<u64, ModuleEntry>,
    functions: HashMap<u64, FunctionEntry>,
    streams: HashMap<u64, StreamEntry>,
    events: HashMap<u64, EventEntry>,
    /// Live `hipMalloc` allocations (device addresses).
    allocations: HashSet<u64>,
    /// Live `hipHostMalloc` allocations: address → layout.
    host_allocations: HashMap<usize, std::alloc::Layout>,
}

/// The process-global emulated runtime: one device and everything created on it.
struct Runtime {
    memory: DeviceMemory,
    state: Mutex<State>,
    /// Next handle id; ids are multiples of 16 from 0x1000 so that no handle equals null,
    /// `hipStreamPerThread` (2) or any other small sentinel.
    next_handle: AtomicU64,
    /// `[lo, hi)`: the device address window every allocation ever made lies in. A pointer in
    /// it is a device pointer (live or stale), never host memory.
    window_lo: AtomicU64,
    window_hi: AtomicU64,
    /// Checks applied to every launch.
    checks: RwLock<Checks>,
    /// When set, launches run through the timing model ([`crate::timing::simulate`]).
    timing: RwLock<Option<TimingMode>>,
}

/// Launches run through the timing model: the machine and the simulation options.
#[derive(Clone, Debug)]
pub struct TimingMode {
    /// The machine modelled.
    pub machine: crate::timing::Machine,
    /// Scope, MFMA-math skipping and checks of the functional run (the checks of
    /// [`set_launch_checks`] are not used while timing).
    pub options: crate::timing::SimOptions,
}

static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| Runtime {
    memory: DeviceMemory::new(),
    state: Mutex::new(State::default()),
    next_handle: AtomicU64::new(0x1000),
    window_lo: AtomicU64::new(u64::MAX),
    window_hi: AtomicU64::new(0),
    checks: RwLock::new(checks_from_env()),
    timing: RwLock::new(None),
});

/// The checks a new process starts with: every mode ([`Checks::all`]: memcheck, mfma-hazard,
/// racecheck, late-arrival, uninit-lds), or the modes listed in the `AMDGPU_EMU_CHECKS`
/// environment variable (read once, at the first HIP call), e.g. `AMDGPU_EMU_CHECKS=memcheck`
/// for the fastest checked runs or `AMDGPU_EMU_CHECKS=memcheck,racecheck` (syntax of
/// [`Checks::parse`]). An unparsable value is reported on stderr and every mode is used.
/// (All modes cost about 1.5x emulation time on the dense GEMM kernels.)
fn checks_from_env() -> Checks {
    match std::env::var("AMDGPU_EMU_CHECKS") {
        Ok(v) => Checks::parse(&v).unwrap_or_else(|e| {
            eprintln!("amdgpu-emu: AMDGPU_EMU_CHECKS={v:?}: {e}; using every check");
            Checks::all()
        }),
        Err(_) => Checks::all(),
    }
}

impl Runtime {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn new_handle(&self) -> u64 {
        self.next_handle.fetch_add(16, Ordering::Relaxed)
    }

    fn in_device_window(&self, addr: u64) -> bool {
        addr >= self.window_lo.load(Ordering::Acquire) && addr < self.window_hi.load(Ordering::Acquire)
    }
}

fn rt() -> &'static Runtime {
    &RUNTIME
}

/// The emulated device's memory (the allocations `hipMalloc` made), for Rust-side inspection.
pub fn device_memory() -> &'static DeviceMemory {
    &rt().memory
}

/// Replaces the checks (memcheck, ...) applied to every subsequent kernel launch in the process.
/// The initial value is [`Checks::all`] (every mode) unless the `AMDGPU_EMU_CHECKS` environment
/// variable lists other modes (e.g. `memcheck` for [`Checks::default`]).
pub fn set_launch_checks(checks: Checks) {
    *rt().checks.write().unwrap_or_else(|p| p.into_inner()) = checks;
}

/// The full error message of the most recent kernel launch made by this thread, if that launch
/// failed (validation or kernel fault), e.g. ``kernel `add_one_f32`: memcheck: ... pc 0x1c ...
/// lane 5 ... address 0x...``. `None` if the most recent launch succeeded or there was none.
pub fn last_launch_error() -> Option<String> {
    LAST_LAUNCH.with(|l| l.borrow().as_ref().and_then(|o| o.error.clone()))
}

/// The counters of the most recent kernel launch made by this thread, if it ran to completion.
pub fn last_launch_report() -> Option<Arc<LaunchReport>> {
    LAST_LAUNCH.with(|l| l.borrow().as_ref().and_then(|o| o.report.clone()))
}

/// The kernarg segment (explicit and hidden arguments) the most recent launch made by this
/// thread passed to the kernel, if the launch got as far as building it. For inspecting the
/// argument marshalling.
pub fn last_launch_kernarg() -> Option<Vec<u8>> {
    LAST_LAUNCH.with(|l| l.borrow().as_ref().and_then(|o| o.kernarg.clone()))
}

fn set_last_launch(error: Option<String>, report: Option<Arc<LaunchReport>>, kernarg: Option<Vec<u8>>) {
    LAST_LAUNCH.with(|l| *l.borrow_mut() = Some(LaunchOutcome { error, report, kernarg, timing: None }));
}

/// Makes every subsequent kernel launch of the process run through the timing model (`Some`),
/// or run normally again (`None`). While timing, [`last_launch_timing`] holds each launch's
/// modelled time and [`last_launch_report`] is `None`.
pub fn set_timing(mode: Option<TimingMode>) {
    *rt().timing.write().unwrap_or_else(|p| p.into_inner()) = mode;
}

/// The timing model's report of the most recent kernel launch made by this thread, if it ran
/// with [`set_timing`] on and completed. Every figure in it is modelled, not measured.
pub fn last_launch_timing() -> Option<Arc<crate::timing::TimingReport>> {
    LAST_LAUNCH.with(|l| l.borrow().as_ref().and_then(|o| o.timing.clone()))
}

/// Runs one API call: stores a failure as the thread's last error, and turns a panic (an
/// emulator bug) into `hipErrorUnknown` instead of unwinding into C.
fn api(f: impl FnOnce() -> Result<(), hipError_t>) -> hipError_t {
    let code = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => hipSuccess,
        Ok(Err(code)) => code,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            eprintln!("amdgpu-emu: internal error in a HIP call: {msg}");
            hipErrorUnknown
        }
    };
    if code != hipSuccess {
        LAST_ERROR.with(|e| e.set(code));
    }
    code
}

fn handle_id<T>(p: *mut T) -> u64 {
    p as usize as u64
}

fn handle_ptr<T>(id: u64) -> *mut T {
    std::ptr::without_provenance_mut(id as usize)
}

/// Validates a stream handle: null and `hipStreamPerThread` are the default stream.
fn check_stream(stream: hipStream_t) -> Result<(), hipError_t> {
    if stream.is_null() || stream == hipStreamPerThread {
        return Ok(());
    }
    if rt().state().streams.contains_key(&handle_id(stream)) { Ok(()) } else { Err(hipErrorInvalidHandle) }
}

fn check_device(device: c_int) -> Result<(), hipError_t> {
    if device == 0 { Ok(()) } else { Err(hipErrorInvalidDevice) }
}

/// Writes `value` through an out-pointer, or fails with `hipErrorInvalidValue` if it is null.
///
/// # Safety
/// `out` is null or valid for a write of `T`.
unsafe fn put<T>(out: *mut T, value: T) -> Result<(), hipError_t> {
    if out.is_null() {
        return Err(hipErrorInvalidValue);
    }
    // SAFETY: non-null, and the caller guarantees it is valid for writes of T.
    unsafe { out.write(value) };
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Initialization, versions, devices, errors
// ---------------------------------------------------------------------------------------------

/// `hipError_t hipInit(unsigned int flags)`: `flags` must be 0.
#[unsafe(no_mangle)]
pub extern "C" fn hipInit(flags: c_uint) -> hipError_t {
    api(|| if flags == 0 { Ok(()) } else { Err(hipErrorInvalidValue) })
}

/// `hipError_t hipDriverGetVersion(int*)`: [`EMULATED_HIP_VERSION`].
///
/// # Safety
/// `driverVersion` is null or valid for a write of an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDriverGetVersion(driverVersion: *mut c_int) -> hipError_t {
    // SAFETY: caller contract (null is rejected by `put`).
    api(|| unsafe { put(driverVersion, EMULATED_HIP_VERSION) })
}

/// `hipError_t hipRuntimeGetVersion(int*)`: [`EMULATED_HIP_VERSION`].
///
/// # Safety
/// `runtimeVersion` is null or valid for a write of an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipRuntimeGetVersion(runtimeVersion: *mut c_int) -> hipError_t {
    // SAFETY: caller contract (null is rejected by `put`).
    api(|| unsafe { put(runtimeVersion, EMULATED_HIP_VERSION) })
}

/// `hipError_t hipGetDeviceCount(int*)`: 1.
///
/// # Safety
/// `count` is null or valid for a write of an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDeviceCount(count: *mut c_int) -> hipError_t {
    // SAFETY: caller contract (null is rejected by `put`).
    api(|| unsafe { put(count, 1) })
}

/// `hipError_t hipGetDevice(int*)`: the calling thread's current device (always 0).
///
/// # Safety
/// `deviceId` is null or valid for a write of an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevice(deviceId: *mut c_int) -> hipError_t {
    let current = CURRENT_DEVICE.with(Cell::get);
    // SAFETY: caller contract (null is rejected by `put`).
    api(|| unsafe { put(deviceId, current) })
}

/// `hipError_t hipSetDevice(int)`: only device 0 exists (`hipErrorInvalidDevice` otherwise).
#[unsafe(no_mangle)]
pub extern "C" fn hipSetDevice(deviceId: c_int) -> hipError_t {
    api(|| {
        check_device(deviceId)?;
        CURRENT_DEVICE.with(|c| c.set(deviceId));
        Ok(())
    })
}

/// `hipError_t hipDeviceGet(hipDevice_t*, int ordinal)`.
///
/// # Safety
/// `device` is null or valid for a write of an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGet(device: *mut hipDevice_t, ordinal: c_int) -> hipError_t {
    api(|| {
        check_device(ordinal)?;
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(device, ordinal) }
    })
}

/// `hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600*, int)` (what HIP 6's
/// `hipGetDeviceProperties` macro names): see [`device_properties`].
///
/// # Safety
/// `prop` is null or valid for a write of a `hipDeviceProp_tR0600`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGetDevicePropertiesR0600(prop: *mut hipDeviceProp_tR0600, deviceId: c_int) -> hipError_t {
    api(|| {
        check_device(deviceId)?;
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(prop, device_properties()) }
    })
}

/// `hipError_t hipDeviceGetName(char* name, int len, hipDevice_t)`: the NUL-terminated name,
/// truncated to `len - 1` bytes.
///
/// # Safety
/// `name` is null or valid for writes of `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetName(name: *mut c_char, len: c_int, device: hipDevice_t) -> hipError_t {
    api(|| {
        check_device(device)?;
        if name.is_null() || len <= 0 {
            return Err(hipErrorInvalidValue);
        }
        let n = DEVICE_NAME.len().min(len as usize - 1);
        // SAFETY: `name` is valid for `len` > n bytes (caller contract); the source is our
        // static string of at least n bytes; the regions cannot overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(DEVICE_NAME.as_ptr().cast::<c_char>(), name, n);
            name.add(n).write(0);
        }
        Ok(())
    })
}

/// `hipError_t hipDeviceGetAttribute(int*, hipDeviceAttribute_t, int)`, for the attributes
/// listed in [`hipGetDevicePropertiesR0600`]'s struct; others are `hipErrorInvalidValue`.
///
/// # Safety
/// `pi` is null or valid for a write of an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetAttribute(pi: *mut c_int, attr: hipDeviceAttribute_t, deviceId: c_int) -> hipError_t {
    api(|| {
        check_device(deviceId)?;
        let p = device_properties();
        let sat = |v: usize| c_int::try_from(v).unwrap_or(c_int::MAX);
        // Values of HIP's hipDeviceAttribute_t enumerators.
        let v = match attr {
            3 => p.canMapHostMemory,
            5 => p.clockRate,
            6 => p.computeMode,
            8 => p.concurrentKernels,
            10 => p.cooperativeLaunch,
            16 => p.integrated,
            19 => p.l2CacheSize,
            23 => p.major,
            25 => p.maxBlocksPerMultiProcessor,
            26..=28 => p.maxThreadsDim[(attr - 26) as usize],
            29..=31 => p.maxGridSize[(attr - 29) as usize],
            56 => p.maxThreadsPerBlock,
            57 => p.maxThreadsPerMultiProcessor,
            59 => p.memoryBusWidth,
            60 => p.memoryClockRate,
            61 => p.minor,
            63 => p.multiProcessorCount,
            71 => p.regsPerBlock,
            72 => p.regsPerMultiprocessor,
            74 => sat(p.sharedMemPerBlock),
            75 => sat(p.sharedMemPerBlockOptin),
            76 => sat(p.sharedMemPerMultiprocessor),
            78 => p.streamPrioritiesSupported,
            83 => sat(p.totalConstMem),
            84 => sat(p.totalGlobalMem),
            85 => p.unifiedAddressing,
            87 => p.warpSize,
            10000 => CLOCK_RATE_KHZ,
            10002 => sat(p.maxSharedMemoryPerMultiProcessor),
            10011 => p.isLargeBar,
            10012 => p.asicRevision,
            10015 => p.multiProcessorCount,
            10017 => p.clockInstructionRate,
            _ => return Err(hipErrorInvalidValue),
        };
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(pi, v) }
    })
}

/// `hipError_t hipDeviceSynchronize(void)`: nothing is ever pending (operations complete when
/// issued), so this returns `hipSuccess`.
#[unsafe(no_mangle)]
pub extern "C" fn hipDeviceSynchronize() -> hipError_t {
    api(|| Ok(()))
}

/// `hipError_t hipDeviceReset(void)`: destroys everything the process created on the device —
/// allocations, modules, functions, streams, events, pinned host buffers — and clears the
/// thread's last error. Handles and pointers from before the reset become invalid (and are
/// reported as such, not dereferenced).
#[unsafe(no_mangle)]
pub extern "C" fn hipDeviceReset() -> hipError_t {
    let code = api(|| {
        let r = rt();
        let old = std::mem::take(&mut *r.state());
        for addr in old.allocations {
            let _ = r.memory.free(addr);
        }
        for (addr, layout) in old.host_allocations {
            // SAFETY: `addr` was returned by `alloc_zeroed(layout)` in `hipHostMalloc` and was
            // not freed (it was still in the table, which we now own exclusively).
            unsafe { std::alloc::dealloc(addr as *mut u8, layout) };
        }
        Ok(())
    });
    LAST_ERROR.with(|e| e.set(hipSuccess));
    code
}

/// `hipError_t hipDeviceGetStreamPriorityRange(int* least, int* greatest)`: 0 and -1. Either
/// pointer may be null.
///
/// # Safety
/// Each pointer is null or valid for a write of an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipDeviceGetStreamPriorityRange(leastPriority: *mut c_int, greatestPriority: *mut c_int) -> hipError_t {
    api(|| {
        if !leastPriority.is_null() {
            // SAFETY: non-null; caller contract.
            unsafe { leastPriority.write(0) };
        }
        if !greatestPriority.is_null() {
            // SAFETY: non-null; caller contract.
            unsafe { greatestPriority.write(-1) };
        }
        Ok(())
    })
}

/// `hipError_t hipGetLastError(void)`: the thread's most recent failure code, which is then
/// reset to `hipSuccess`.
#[unsafe(no_mangle)]
pub extern "C" fn hipGetLastError() -> hipError_t {
    LAST_ERROR.with(|e| e.replace(hipSuccess))
}

/// `hipError_t hipPeekAtLastError(void)`: like [`hipGetLastError`] without resetting.
#[unsafe(no_mangle)]
pub extern "C" fn hipPeekAtLastError() -> hipError_t {
    LAST_ERROR.with(Cell::get)
}

// ---------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------

/// Free host RAM (`MemAvailable` of /proc/meminfo), if known: emulated device memory lives in
/// host RAM, so a larger allocation is refused with `hipErrorOutOfMemory` instead of aborting
/// the process.
fn host_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn device_alloc(size: usize) -> Result<u64, hipError_t> {
    let r = rt();
    let size = size as u64;
    let free = TOTAL_GLOBAL_MEM.saturating_sub(r.memory.bytes_live());
    if size > free || host_available_bytes().is_some_and(|avail| size > avail) {
        return Err(hipErrorOutOfMemory);
    }
    let addr = r.memory.alloc(size).map_err(|_| hipErrorOutOfMemory)?;
    r.window_lo.fetch_min(addr, Ordering::AcqRel);
    r.window_hi.fetch_max(addr + size, Ordering::AcqRel);
    r.state().allocations.insert(addr);
    Ok(addr)
}

/// `hipError_t hipMalloc(void** ptr, size_t size)`: a zero-filled device allocation. Size 0
/// gives a null pointer and `hipSuccess`, as in HIP. More than the reported free memory (or the
/// host's available RAM) is `hipErrorOutOfMemory`.
///
/// # Safety
/// `ptr` is null or valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> hipError_t {
    api(|| {
        if ptr.is_null() {
            return Err(hipErrorInvalidValue);
        }
        let value = if size == 0 { std::ptr::null_mut() } else { handle_ptr::<c_void>(device_alloc(size)?) };
        // SAFETY: non-null; caller contract.
        unsafe { ptr.write(value) };
        Ok(())
    })
}

/// `hipError_t hipMallocAsync(void**, size_t, hipStream_t)`: [`hipMalloc`] after validating the
/// stream.
///
/// # Safety
/// As [`hipMalloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMallocAsync(dev_ptr: *mut *mut c_void, size: usize, stream: hipStream_t) -> hipError_t {
    let checked = api(|| check_stream(stream));
    if checked != hipSuccess {
        return checked;
    }
    // SAFETY: forwarded caller contract.
    unsafe { hipMalloc(dev_ptr, size) }
}

fn device_free(ptr: *mut c_void) -> Result<(), hipError_t> {
    if ptr.is_null() {
        return Ok(());
    }
    let r = rt();
    let addr = ptr as usize as u64;
    let mut state = r.state();
    if !state.allocations.remove(&addr) {
        return Err(hipErrorInvalidValue);
    }
    drop(state);
    r.memory.free(addr).map_err(|_| hipErrorInvalidValue)
}

/// `hipError_t hipFree(void*)`: frees a [`hipMalloc`] allocation; null is a no-op. Any other
/// pointer (interior, already freed, host) is `hipErrorInvalidValue`.
#[unsafe(no_mangle)]
pub extern "C" fn hipFree(ptr: *mut c_void) -> hipError_t {
    api(|| device_free(ptr))
}

/// `hipError_t hipFreeAsync(void*, hipStream_t)`: [`hipFree`] after validating the stream.
#[unsafe(no_mangle)]
pub extern "C" fn hipFreeAsync(dev_ptr: *mut c_void, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        device_free(dev_ptr)
    })
}

/// `hipError_t hipMemGetInfo(size_t* free, size_t* total)`: total = 192 GiB, free = total minus
/// the bytes currently allocated.
///
/// # Safety
/// Each pointer is null or valid for a write of a `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemGetInfo(free: *mut usize, total: *mut usize) -> hipError_t {
    api(|| {
        if free.is_null() || total.is_null() {
            return Err(hipErrorInvalidValue);
        }
        let f = TOTAL_GLOBAL_MEM.saturating_sub(rt().memory.bytes_live());
        // SAFETY: both non-null; caller contract.
        unsafe {
            free.write(f as usize);
            total.write(TOTAL_GLOBAL_MEM as usize);
        }
        Ok(())
    })
}

/// `hipError_t hipHostMalloc(void**, size_t, unsigned flags)`: page-aligned, zeroed host memory.
/// In the emulator it is ordinary host memory: copies to and from it work, kernels cannot
/// access it ([`hipHostGetDevicePointer`] is `hipErrorNotSupported`).
///
/// # Safety
/// `ptr` is null or valid for a write of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipHostMalloc(ptr: *mut *mut c_void, size: usize, flags: c_uint) -> hipError_t {
    let _ = flags;
    api(|| {
        if ptr.is_null() {
            return Err(hipErrorInvalidValue);
        }
        if size == 0 {
            // SAFETY: non-null; caller contract.
            unsafe { ptr.write(std::ptr::null_mut()) };
            return Ok(());
        }
        let layout = std::alloc::Layout::from_size_align(size, 4096).map_err(|_| hipErrorOutOfMemory)?;
        if host_available_bytes().is_some_and(|avail| size as u64 > avail) {
            return Err(hipErrorOutOfMemory);
        }
        // SAFETY: the layout has non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(hipErrorOutOfMemory);
        }
        rt().state().host_allocations.insert(p as usize, layout);
        // SAFETY: non-null; caller contract.
        unsafe { ptr.write(p.cast()) };
        Ok(())
    })
}

/// `hipError_t hipHostFree(void*)`: frees a [`hipHostMalloc`] buffer; null is a no-op, any other
/// pointer `hipErrorInvalidValue`.
#[unsafe(no_mangle)]
pub extern "C" fn hipHostFree(ptr: *mut c_void) -> hipError_t {
    api(|| {
        if ptr.is_null() {
            return Ok(());
        }
        let layout = rt().state().host_allocations.remove(&(ptr as usize)).ok_or(hipErrorInvalidValue)?;
        // SAFETY: `ptr` came from `alloc_zeroed(layout)` in `hipHostMalloc` and was live (it was
        // in the table, from which it is now removed, so it cannot be freed twice).
        unsafe { std::alloc::dealloc(ptr.cast(), layout) };
        Ok(())
    })
}

/// `hipError_t hipHostGetDevicePointer(void**, void*, unsigned)`: `hipErrorNotSupported` (the
/// emulated device cannot address host memory).
#[unsafe(no_mangle)]
pub extern "C" fn hipHostGetDevicePointer(devPtr: *mut *mut c_void, hstPtr: *mut c_void, flags: c_uint) -> hipError_t {
    let _ = (devPtr, hstPtr, flags);
    api(|| Err(hipErrorNotSupported))
}

/// Where a copy operand lives.
#[derive(Clone, Copy)]
enum Loc {
    Host(*mut u8),
    Device(u64),
}

/// Classifies `[p, p + len)`: inside the device address window it must be inside one live
/// allocation (else `hipErrorInvalidValue`); anywhere else it is host memory.
fn locate(p: *const c_void, len: usize) -> Result<Loc, hipError_t> {
    if p.is_null() {
        return Err(hipErrorInvalidValue);
    }
    let r = rt();
    let addr = p as usize as u64;
    if r.in_device_window(addr) {
        r.memory.find(addr, len as u64).map_err(|_| hipErrorInvalidValue)?;
        Ok(Loc::Device(addr))
    } else {
        Ok(Loc::Host(p as *mut u8))
    }
}

/// The copy behind every `hipMemcpy*`: validates the direction against where the pointers are
/// (an explicit kind that contradicts them is `hipErrorInvalidMemcpyDirection`, since the
/// emulator cannot treat host memory as device memory or vice versa).
///
/// # Safety
/// Host operands are valid for `len` bytes (reads for `src`, writes for `dst`).
unsafe fn copy(dst: *mut c_void, src: *const c_void, len: usize, kind: hipMemcpyKind) -> Result<(), hipError_t> {
    if len == 0 {
        return Ok(());
    }
    let (d, s) = (locate(dst, len)?, locate(src, len)?);
    let expected = match kind {
        hipMemcpyHostToHost => Some((false, false)),
        hipMemcpyHostToDevice => Some((true, false)),
        hipMemcpyDeviceToHost => Some((false, true)),
        hipMemcpyDeviceToDevice | hipMemcpyDeviceToDeviceNoCU => Some((true, true)),
        hipMemcpyDefault => None,
        _ => return Err(hipErrorInvalidMemcpyDirection),
    };
    let actual = (matches!(d, Loc::Device(_)), matches!(s, Loc::Device(_)));
    if expected.is_some_and(|e| e != actual) {
        return Err(hipErrorInvalidMemcpyDirection);
    }
    let mem = &rt().memory;
    match (d, s) {
        (Loc::Device(da), Loc::Host(hs)) => {
            // SAFETY: caller contract: `src` is valid for reads of `len` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(hs, len) };
            mem.write(da, bytes).map_err(|_| hipErrorInvalidValue)
        }
        (Loc::Host(hd), Loc::Device(sa)) => {
            // SAFETY: caller contract: `dst` is valid for writes of `len` bytes, and host memory
            // cannot alias emulated device storage (which the memory module owns).
            let out = unsafe { std::slice::from_raw_parts_mut(hd, len) };
            mem.read(sa, out).map_err(|_| hipErrorInvalidValue)
        }
        (Loc::Device(da), Loc::Device(sa)) => device_to_device(da, sa, len),
        (Loc::Host(hd), Loc::Host(hs)) => {
            // SAFETY: caller contract: both valid for `len` bytes; `copy` tolerates overlap.
            unsafe { std::ptr::copy(hs, hd, len) };
            Ok(())
        }
    }
}

/// Copies `len` bytes between two device ranges already validated by [`locate`] (overlap
/// allowed).
fn device_to_device(dst: u64, src: u64, len: usize) -> Result<(), hipError_t> {
    let mem = &rt().memory;
    let mut tmp = vec![0u8; len];
    mem.read(src, &mut tmp).map_err(|_| hipErrorInvalidValue)?;
    mem.write(dst, &tmp).map_err(|_| hipErrorInvalidValue)
}

/// A device-to-device copy from the `hipMemcpyDtoD*` entry points: both operands must be device
/// memory (`hipErrorInvalidMemcpyDirection` otherwise); no host memory is touched.
fn copy_dtod(dst: hipDeviceptr_t, src: hipDeviceptr_t, len: usize) -> Result<(), hipError_t> {
    if len == 0 {
        return Ok(());
    }
    match (locate(dst, len)?, locate(src, len)?) {
        (Loc::Device(d), Loc::Device(s)) => device_to_device(d, s, len),
        _ => Err(hipErrorInvalidMemcpyDirection),
    }
}

/// `hipError_t hipMemcpy(void* dst, const void* src, size_t, hipMemcpyKind)`.
///
/// Device pointers must lie inside one live allocation for the whole length; `hipMemcpyDefault`
/// infers the direction; an explicit kind that contradicts the pointers is
/// `hipErrorInvalidMemcpyDirection`. Size 0 is a no-op.
///
/// # Safety
/// Host operands are valid for `sizeBytes` bytes (HIP's contract).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpy(dst: *mut c_void, src: *const c_void, sizeBytes: usize, kind: hipMemcpyKind) -> hipError_t {
    // SAFETY: forwarded caller contract.
    api(|| unsafe { copy(dst, src, sizeBytes, kind) })
}

/// `hipError_t hipMemcpyAsync(...)`: [`hipMemcpy`] on `stream`, complete on return.
///
/// # Safety
/// As [`hipMemcpy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyAsync(
    dst: *mut c_void,
    src: *const c_void,
    sizeBytes: usize,
    kind: hipMemcpyKind,
    stream: hipStream_t,
) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        // SAFETY: forwarded caller contract.
        unsafe { copy(dst, src, sizeBytes, kind) }
    })
}

/// `hipError_t hipMemcpyWithStream(...)`: [`hipMemcpy`] on `stream`.
///
/// # Safety
/// As [`hipMemcpy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyWithStream(
    dst: *mut c_void,
    src: *const c_void,
    sizeBytes: usize,
    kind: hipMemcpyKind,
    stream: hipStream_t,
) -> hipError_t {
    // SAFETY: forwarded caller contract.
    unsafe { hipMemcpyAsync(dst, src, sizeBytes, kind, stream) }
}

/// `hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void* src, size_t)`.
///
/// # Safety
/// `src` is valid for reads of `sizeBytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyHtoD(dst: hipDeviceptr_t, src: *mut c_void, sizeBytes: usize) -> hipError_t {
    // SAFETY: forwarded caller contract.
    api(|| unsafe { copy(dst, src, sizeBytes, hipMemcpyHostToDevice) })
}

/// `hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t)`.
///
/// # Safety
/// `dst` is valid for writes of `sizeBytes` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyDtoH(dst: *mut c_void, src: hipDeviceptr_t, sizeBytes: usize) -> hipError_t {
    // SAFETY: forwarded caller contract.
    api(|| unsafe { copy(dst, src, sizeBytes, hipMemcpyDeviceToHost) })
}

/// `hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t)`.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemcpyDtoD(dst: hipDeviceptr_t, src: hipDeviceptr_t, sizeBytes: usize) -> hipError_t {
    api(|| copy_dtod(dst, src, sizeBytes))
}

/// `hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t, void*, size_t, hipStream_t)`.
///
/// # Safety
/// As [`hipMemcpyHtoD`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyHtoDAsync(dst: hipDeviceptr_t, src: *mut c_void, sizeBytes: usize, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        // SAFETY: forwarded caller contract.
        unsafe { copy(dst, src, sizeBytes, hipMemcpyHostToDevice) }
    })
}

/// `hipError_t hipMemcpyDtoHAsync(void*, hipDeviceptr_t, size_t, hipStream_t)`.
///
/// # Safety
/// As [`hipMemcpyDtoH`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipMemcpyDtoHAsync(dst: *mut c_void, src: hipDeviceptr_t, sizeBytes: usize, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        // SAFETY: forwarded caller contract.
        unsafe { copy(dst, src, sizeBytes, hipMemcpyDeviceToHost) }
    })
}

/// `hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t, hipDeviceptr_t, size_t, hipStream_t)`.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemcpyDtoDAsync(dst: hipDeviceptr_t, src: hipDeviceptr_t, sizeBytes: usize, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        copy_dtod(dst, src, sizeBytes)
    })
}

/// Fills `count` elements of `pattern` at device address `dst` (all inside one allocation).
fn fill(dst: *mut c_void, pattern: &[u8], count: usize) -> Result<(), hipError_t> {
    if count == 0 {
        return Ok(());
    }
    let len = count.checked_mul(pattern.len()).ok_or(hipErrorInvalidValue)?;
    let r = rt();
    let addr = dst as usize as u64;
    if dst.is_null() || !r.in_device_window(addr) {
        return Err(hipErrorInvalidValue);
    }
    let alloc = r.memory.find(addr, len as u64).map_err(|_| hipErrorInvalidValue)?;
    if pattern.iter().all(|&b| b == pattern[0]) {
        alloc.fill(addr, len as u64, pattern[0]);
    } else {
        // Write in bounded chunks so huge fills do not need a buffer of their full size.
        const CHUNK: usize = 1 << 20;
        let chunk: Vec<u8> = pattern.iter().copied().cycle().take(CHUNK.min(len)).collect();
        let mut done = 0;
        while done < len {
            let n = chunk.len().min(len - done);
            alloc.write(addr + done as u64, &chunk[..n]);
            done += n;
        }
    }
    Ok(())
}

/// `hipError_t hipMemset(void* dst, int value, size_t sizeBytes)`: sets bytes to
/// `(unsigned char)value`; `dst` must be device memory.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemset(dst: *mut c_void, value: c_int, sizeBytes: usize) -> hipError_t {
    api(|| fill(dst, &[value as u8], sizeBytes))
}

/// `hipError_t hipMemsetAsync(void*, int, size_t, hipStream_t)`.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemsetAsync(dst: *mut c_void, value: c_int, sizeBytes: usize, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        fill(dst, &[value as u8], sizeBytes)
    })
}

/// `hipError_t hipMemsetD8(hipDeviceptr_t, unsigned char, size_t count)`.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemsetD8(dest: hipDeviceptr_t, value: u8, count: usize) -> hipError_t {
    api(|| fill(dest, &[value], count))
}

/// `hipError_t hipMemsetD16(hipDeviceptr_t, unsigned short, size_t count)`: `count` 16-bit
/// elements.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemsetD16(dest: hipDeviceptr_t, value: u16, count: usize) -> hipError_t {
    api(|| fill(dest, &value.to_le_bytes(), count))
}

/// `hipError_t hipMemsetD32(hipDeviceptr_t, int, size_t count)`: `count` 32-bit elements.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemsetD32(dest: hipDeviceptr_t, value: c_int, count: usize) -> hipError_t {
    api(|| fill(dest, &value.to_le_bytes(), count))
}

/// `hipError_t hipMemsetD8Async(hipDeviceptr_t, unsigned char, size_t, hipStream_t)`.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemsetD8Async(dest: hipDeviceptr_t, value: u8, count: usize, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        fill(dest, &[value], count)
    })
}

/// `hipError_t hipMemsetD16Async(hipDeviceptr_t, unsigned short, size_t, hipStream_t)`.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemsetD16Async(dest: hipDeviceptr_t, value: u16, count: usize, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        fill(dest, &value.to_le_bytes(), count)
    })
}

/// `hipError_t hipMemsetD32Async(hipDeviceptr_t, int, size_t, hipStream_t)`.
#[unsafe(no_mangle)]
pub extern "C" fn hipMemsetD32Async(dst: hipDeviceptr_t, value: c_int, count: usize, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        fill(dst, &value.to_le_bytes(), count)
    })
}

// ---------------------------------------------------------------------------------------------
// Modules and functions
// ---------------------------------------------------------------------------------------------

/// Largest code object image accepted (sanity bound on sizes read from an untrusted header).
const MAX_IMAGE_BYTES: u64 = 1 << 30;
/// `e_machine` of AMDGPU ELF files.
const EM_AMDGPU: u16 = 224;
/// Magic of a clang offload bundle (what `hipcc --genco` may produce).
const BUNDLE_MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";

/// Reads `N` bytes at `p + off`.
///
/// # Safety
/// `[p + off, p + off + N)` is readable.
unsafe fn read_at<const N: usize>(p: *const u8, off: u64) -> [u8; N] {
    let mut out = [0u8; N];
    // SAFETY: caller contract.
    unsafe { std::ptr::copy_nonoverlapping(p.add(off as usize), out.as_mut_ptr(), N) };
    out
}

/// The length of the ELF image at `p`, computed from its headers: the end of the furthest of
/// the ELF header, program headers, section headers and section contents.
///
/// # Safety
/// `p` points to a complete ELF64 file (HIP's contract for `hipModuleLoadData`); the headers are
/// read in order, each only after the fields locating it have been bounds-checked for sanity.
unsafe fn elf_image_len(p: *const u8) -> Result<u64, hipError_t> {
    // SAFETY: every ELF64 file starts with its 64-byte header (caller contract).
    let ident: [u8; 64] = unsafe { read_at(p, 0) };
    if &ident[..4] != b"\x7fELF" || ident[4] != 2 || ident[5] != 1 {
        return Err(hipErrorInvalidImage);
    }
    let u16_at = |o: usize| u16::from_le_bytes([ident[o], ident[o + 1]]);
    let u64_at = |o: usize| u64::from_le_bytes(ident[o..o + 8].try_into().expect("8 bytes"));
    if u16_at(18) != EM_AMDGPU {
        return Err(hipErrorInvalidImage);
    }
    let (phoff, shoff) = (u64_at(32), u64_at(40));
    let (phentsize, phnum, shentsize, shnum) = (u16_at(54) as u64, u16_at(56) as u64, u16_at(58) as u64, u16_at(60) as u64);
    let ph_end = phoff.checked_add(phentsize * phnum).ok_or(hipErrorInvalidImage)?;
    let sh_end = shoff.checked_add(shentsize * shnum).ok_or(hipErrorInvalidImage)?;
    let mut end = 64u64.max(ph_end).max(sh_end);
    if end > MAX_IMAGE_BYTES || (shnum > 0 && shentsize < 64) || (phnum > 0 && phentsize < 56) {
        return Err(hipErrorInvalidImage);
    }
    for i in 0..shnum {
        // SAFETY: section header i lies inside the file the caller vouches for, at the offset its
        // ELF header gives (checked above to be below MAX_IMAGE_BYTES, with 64-byte entries).
        let sh: [u8; 64] = unsafe { read_at(p, shoff + i * shentsize) };
        let sh_type = u32::from_le_bytes(sh[4..8].try_into().expect("4 bytes"));
        let off = u64::from_le_bytes(sh[24..32].try_into().expect("8 bytes"));
        let size = u64::from_le_bytes(sh[32..40].try_into().expect("8 bytes"));
        if sh_type != 8 {
            // Not SHT_NOBITS: the contents are in the file.
            end = end.max(off.checked_add(size).ok_or(hipErrorInvalidImage)?);
        }
    }
    for i in 0..phnum {
        // SAFETY: program header i lies inside the file, as for the section headers above.
        let ph: [u8; 56] = unsafe { read_at(p, phoff + i * phentsize) };
        let off = u64::from_le_bytes(ph[8..16].try_into().expect("8 bytes"));
        let filesz = u64::from_le_bytes(ph[32..40].try_into().expect("8 bytes"));
        end = end.max(off.checked_add(filesz).ok_or(hipErrorInvalidImage)?);
    }
    if end > MAX_IMAGE_BYTES {
        return Err(hipErrorInvalidImage);
    }
    Ok(end)
}

/// The length of the bundle at `p` from its headers: the furthest of the entry table and the
/// entries' contents.
///
/// # Safety
/// `p` points to a complete clang offload bundle.
unsafe fn bundle_image_len(p: *const u8) -> Result<u64, hipError_t> {
    // SAFETY: a bundle's entry count follows its 24-byte magic (caller contract).
    let n = u64::from_le_bytes(unsafe { read_at(p, 24) });
    if n > 1024 {
        return Err(hipErrorInvalidImage);
    }
    let mut off = 32u64;
    let mut end = off;
    for _ in 0..n {
        // SAFETY: entry headers (offset, size, triple length, triple) follow each other inside
        // the bundle the caller vouches for; this one starts where the previous one, found sane,
        // ended.
        let (eoff, esize, tlen) = unsafe {
            (u64::from_le_bytes(read_at(p, off)), u64::from_le_bytes(read_at(p, off + 8)), u64::from_le_bytes(read_at(p, off + 16)))
        };
        if tlen > 4096 || eoff > MAX_IMAGE_BYTES || esize > MAX_IMAGE_BYTES {
            return Err(hipErrorInvalidImage);
        }
        off += 24 + tlen;
        end = end.max(off).max(eoff + esize);
    }
    if end > MAX_IMAGE_BYTES {
        return Err(hipErrorInvalidImage);
    }
    Ok(end)
}

/// The length of the image (AMDGPU ELF or clang offload bundle) at `p`, from its headers.
///
/// # Safety
/// `p` points to a complete image (HIP's contract for `hipModuleLoadData`), at least 24 bytes.
unsafe fn image_len(p: *const u8) -> Result<u64, hipError_t> {
    // SAFETY: both formats are longer than 24 bytes (caller contract).
    let magic: [u8; 24] = unsafe { read_at(p, 0) };
    if magic.starts_with(b"\x7fELF") {
        // SAFETY: caller contract.
        unsafe { elf_image_len(p) }
    } else if &magic == BUNDLE_MAGIC {
        // SAFETY: caller contract.
        unsafe { bundle_image_len(p) }
    } else {
        Err(hipErrorInvalidImage)
    }
}

/// The code object for this device in `bytes`: the bytes themselves for an ELF file, or the
/// `hip*-amdgcn-amd-amdhsa--gfx942*` entry of a clang offload bundle
/// (`hipErrorNoBinaryForGpu` if it has none).
fn select_code_object(bytes: &[u8]) -> Result<&[u8], hipError_t> {
    if !bytes.starts_with(BUNDLE_MAGIC) {
        return Ok(bytes);
    }
    let rd = |o: usize| -> Result<usize, hipError_t> {
        let b = bytes.get(o..o.checked_add(8).ok_or(hipErrorInvalidImage)?).ok_or(hipErrorInvalidImage)?;
        usize::try_from(u64::from_le_bytes(b.try_into().expect("8 bytes"))).map_err(|_| hipErrorInvalidImage)
    };
    let n = rd(24)?;
    let mut off = 32usize;
    for _ in 0..n.min(1024) {
        let (eoff, esize, tlen) = (rd(off)?, rd(off + 8)?, rd(off + 16)?);
        let tstart = off + 24;
        let tend = tstart.checked_add(tlen).ok_or(hipErrorInvalidImage)?;
        let triple = bytes.get(tstart..tend).ok_or(hipErrorInvalidImage)?;
        off = tend;
        let triple = String::from_utf8_lossy(triple);
        let processor = triple.split_once("--").map(|(_, t)| t.split(':').next().unwrap_or(""));
        if triple.starts_with("hip") && processor == Some("gfx942") && esize > 0 {
            let eend = eoff.checked_add(esize).ok_or(hipErrorInvalidImage)?;
            return bytes.get(eoff..eend).ok_or(hipErrorInvalidImage);
        }
    }
    Err(hipErrorNoBinaryForGpu)
}

fn load_module(bytes: &[u8]) -> Result<u64, hipError_t> {
    let code = CodeObject::parse(bytes).map_err(|e| {
        eprintln!("amdgpu-emu: hipModuleLoadData: {e}");
        match e {
            crate::loader::LoadError::WrongArch { .. } => hipErrorNoBinaryForGpu,
            _ => hipErrorInvalidImage,
        }
    })?;
    if code.arch() != "gfx942" {
        eprintln!("amdgpu-emu: hipModuleLoadData: code object is for {}, the device is gfx942", code.arch());
        return Err(hipErrorNoBinaryForGpu);
    }
    let r = rt();
    let id = r.new_handle();
    r.state().modules.insert(id, ModuleEntry { code: Arc::new(code), functions: HashMap::new() });
    Ok(id)
}

/// `hipError_t hipModuleLoadData(hipModule_t*, const void* image)`: loads a gfx942 code object
/// (an AMDGPU ELF, or a clang offload bundle holding one). A malformed image is
/// `hipErrorInvalidImage`; a code object for another GPU `hipErrorNoBinaryForGpu` (the loader's
/// message goes to stderr).
///
/// # Safety
/// `module` is null or writable; `image` is null or points to a complete code object (its
/// length is taken from its own headers, as HIP does).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLoadData(module: *mut hipModule_t, image: *const c_void) -> hipError_t {
    api(|| {
        if module.is_null() || image.is_null() {
            return Err(hipErrorInvalidValue);
        }
        let image = image.cast::<u8>();
        // SAFETY: caller contract: a complete image; `image_len` reads only its headers.
        let len = unsafe { image_len(image)? };
        // SAFETY: `len` is the image's extent computed from its own headers.
        let bytes = unsafe { std::slice::from_raw_parts(image, len as usize) };
        let id = load_module(select_code_object(bytes)?)?;
        // SAFETY: non-null; caller contract.
        unsafe { module.write(handle_ptr(id)) };
        Ok(())
    })
}

/// `hipError_t hipModuleLoadDataEx(hipModule_t*, const void*, unsigned, hipJitOption*, void**)`:
/// [`hipModuleLoadData`]; the JIT options do not apply to code objects and are ignored.
///
/// # Safety
/// As [`hipModuleLoadData`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLoadDataEx(
    module: *mut hipModule_t,
    image: *const c_void,
    numOptions: c_uint,
    options: *mut hipJitOption,
    optionValues: *mut *mut c_void,
) -> hipError_t {
    let _ = (numOptions, options, optionValues);
    // SAFETY: forwarded caller contract.
    unsafe { hipModuleLoadData(module, image) }
}

/// `hipError_t hipModuleLoad(hipModule_t*, const char* fname)`: loads a code object file. A
/// missing file is `hipErrorFileNotFound`.
///
/// # Safety
/// `module` is null or writable; `fname` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLoad(module: *mut hipModule_t, fname: *const c_char) -> hipError_t {
    api(|| {
        if module.is_null() || fname.is_null() {
            return Err(hipErrorInvalidValue);
        }
        // SAFETY: caller contract: NUL-terminated.
        let name = unsafe { CStr::from_ptr(fname) };
        let path = name.to_str().map_err(|_| hipErrorFileNotFound)?;
        let bytes = std::fs::read(path).map_err(|_| hipErrorFileNotFound)?;
        let id = load_module(select_code_object(&bytes)?)?;
        // SAFETY: non-null; caller contract.
        unsafe { module.write(handle_ptr(id)) };
        Ok(())
    })
}

/// `hipError_t hipModuleUnload(hipModule_t)`: the module handle becomes invalid. Function
/// handles obtained from it stay valid (they keep the code object alive).
#[unsafe(no_mangle)]
pub extern "C" fn hipModuleUnload(module: hipModule_t) -> hipError_t {
    api(|| rt().state().modules.remove(&handle_id(module)).map(|_| ()).ok_or(hipErrorInvalidHandle))
}

/// `hipError_t hipModuleGetFunction(hipFunction_t*, hipModule_t, const char* kname)`: the same
/// handle for repeated lookups of one kernel; `hipErrorNotFound` if the module has no kernel
/// of that name.
///
/// # Safety
/// `function` is null or writable; `kname` is null or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleGetFunction(function: *mut hipFunction_t, module: hipModule_t, kname: *const c_char) -> hipError_t {
    api(|| {
        if function.is_null() || kname.is_null() {
            return Err(hipErrorInvalidValue);
        }
        // SAFETY: caller contract: NUL-terminated.
        let name = unsafe { CStr::from_ptr(kname) };
        let r = rt();
        let mut guard = r.state();
        let state = &mut *guard;
        let entry = state.modules.get_mut(&handle_id(module)).ok_or(hipErrorInvalidHandle)?;
        let index = entry
            .code
            .kernels()
            .iter()
            .position(|k| k.name.as_bytes() == name.to_bytes())
            .ok_or(hipErrorNotFound)?;
        let id = match entry.functions.get(&index) {
            Some(&id) => id,
            None => {
                let id = r.new_handle();
                entry.functions.insert(index, id);
                state.functions.insert(id, FunctionEntry { code: entry.code.clone(), kernel: index });
                id
            }
        };
        // SAFETY: non-null; caller contract.
        unsafe { function.write(handle_ptr(id)) };
        Ok(())
    })
}

/// `hipError_t hipModuleGetGlobal(hipDeviceptr_t*, size_t*, hipModule_t, const char*)`: device
/// globals are not modelled (the project's kernels have none): `hipErrorNotFound` for a valid
/// module.
#[unsafe(no_mangle)]
pub extern "C" fn hipModuleGetGlobal(dptr: *mut hipDeviceptr_t, bytes: *mut usize, hmod: hipModule_t, name: *const c_char) -> hipError_t {
    api(|| {
        if name.is_null() {
            return Err(hipErrorInvalidValue);
        }
        let _ = (dptr, bytes);
        if !rt().state().modules.contains_key(&handle_id(hmod)) {
            return Err(hipErrorInvalidHandle);
        }
        Err(hipErrorNotFound)
    })
}

fn function_entry(f: hipFunction_t) -> Result<FunctionEntry, hipError_t> {
    rt().state().functions.get(&handle_id(f)).cloned().ok_or(hipErrorInvalidHandle)
}

/// `hipError_t hipFuncGetAttribute(int*, hipFunction_attribute, hipFunction_t)`, from the
/// kernel's metadata: max threads per block = `.max_flat_workgroup_size`, shared size =
/// `.group_segment_fixed_size`, local size = `.private_segment_fixed_size`, registers =
/// `.vgpr_count`, max dynamic shared = 64 KiB − static LDS, versions = 94 (gfx9.4).
///
/// # Safety
/// `value` is null or valid for a write of an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipFuncGetAttribute(value: *mut c_int, attrib: hipFunction_attribute, hfunc: hipFunction_t) -> hipError_t {
    api(|| {
        let f = function_entry(hfunc)?;
        let m = &f.code.kernels()[f.kernel].meta;
        let v = match attrib {
            HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK => m.max_flat_workgroup_size,
            HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES => m.group_segment_fixed_size,
            HIP_FUNC_ATTRIBUTE_CONST_SIZE_BYTES => 0,
            HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES => m.private_segment_fixed_size,
            HIP_FUNC_ATTRIBUTE_NUM_REGS => m.vgpr_count,
            HIP_FUNC_ATTRIBUTE_PTX_VERSION | HIP_FUNC_ATTRIBUTE_BINARY_VERSION => 94,
            HIP_FUNC_ATTRIBUTE_CACHE_MODE_CA => 0,
            HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES => {
                LDS_BYTES_PER_WORKGROUP.saturating_sub(m.group_segment_fixed_size)
            }
            HIP_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT => 0,
            _ => return Err(hipErrorInvalidValue),
        };
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(value, v as c_int) }
    })
}

// ---------------------------------------------------------------------------------------------
// Kernel launch
// ---------------------------------------------------------------------------------------------

/// Value of a hidden kernel argument (see the module documentation).
fn hidden_value(kind: &str, grid: [u32; 3], block: [u32; 3], dynamic_lds: u32) -> u64 {
    let dim = |s: &str| match s {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some(d) = kind.strip_prefix("hidden_block_count_").and_then(dim) {
        return grid[d].into();
    }
    if let Some(d) = kind.strip_prefix("hidden_group_size_").and_then(dim) {
        return block[d].into();
    }
    match kind {
        "hidden_grid_dims" => 3,
        "hidden_dynamic_lds_size" => dynamic_lds.into(),
        // High halves of the flat apertures, as the executor maps them.
        "hidden_shared_base" => exec::SHARED_APERTURE >> 32,
        "hidden_private_base" => exec::PRIVATE_APERTURE >> 32,
        // hidden_remainder_*: grids are whole workgroups; hidden_global_offset_*: no offsets;
        // everything else: services the emulator does not provide.
        _ => 0,
    }
}

/// Builds the complete kernarg segment of `kernel` from `kernelParams` or `extra`.
///
/// # Safety
/// HIP's contract: `kernelParams` (if non-null) holds one pointer per explicit argument, each
/// valid for reads of that argument's `.size`; `extra` (if non-null) is a 5-element
/// `HIP_LAUNCH_PARAM_*` array whose buffer is valid for its stated size.
unsafe fn build_kernarg(
    kernel: &Kernel,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
    grid: [u32; 3],
    block: [u32; 3],
    dynamic_lds: u32,
) -> Result<Vec<u8>, String> {
    let meta = &kernel.meta;
    let seg = meta.kernarg_segment_size as usize;
    let mut kernarg = vec![0u8; seg];
    let explicit: Vec<_> = meta.args.iter().filter(|a| !a.value_kind.starts_with("hidden_")).collect();
    for a in &meta.args {
        if (a.offset as usize).checked_add(a.size as usize).is_none_or(|end| end > seg) {
            return Err(format!(
                "argument {:?} ({} bytes at offset {}) lies outside the {seg}-byte kernarg segment",
                a.name, a.size, a.offset
            ));
        }
    }
    if !kernel_params.is_null() {
        for (i, a) in explicit.iter().enumerate() {
            // SAFETY: caller contract: one pointer per explicit argument.
            let p = unsafe { *kernel_params.add(i) };
            if p.is_null() {
                return Err(format!("kernelParams[{i}] is null"));
            }
            let (o, n) = (a.offset as usize, a.size as usize);
            // SAFETY: caller contract: `p` is valid for `n` bytes; the destination range was
            // checked against the segment above.
            unsafe { std::ptr::copy_nonoverlapping(p.cast::<u8>(), kernarg[o..o + n].as_mut_ptr(), n) };
        }
    } else if !extra.is_null() {
        // SAFETY: caller contract: 5 readable pointers.
        let e: [*mut c_void; 5] = unsafe { std::array::from_fn(|i| *extra.add(i)) };
        if e[0] != HIP_LAUNCH_PARAM_BUFFER_POINTER || e[2] != HIP_LAUNCH_PARAM_BUFFER_SIZE || e[4] != HIP_LAUNCH_PARAM_END {
            return Err("extra is not {HIP_LAUNCH_PARAM_BUFFER_POINTER, buf, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END}".into());
        }
        if e[3].is_null() {
            return Err("extra: the HIP_LAUNCH_PARAM_BUFFER_SIZE pointer is null".into());
        }
        // SAFETY: non-null, points to a size_t (caller contract).
        let size = unsafe { *e[3].cast::<usize>() };
        let buf = e[1].cast::<u8>();
        if !explicit.is_empty() && (buf.is_null() || size == 0) {
            return Err("the kernel has arguments but the extra buffer is empty".into());
        }
        for a in &explicit {
            let (o, n) = (a.offset as usize, a.size as usize);
            if o + n > size {
                return Err(format!(
                    "extra buffer of {size} bytes does not cover argument {:?} ({n} bytes at offset {o})",
                    a.name
                ));
            }
            // SAFETY: `buf` is valid for `size` ≥ o + n bytes (caller contract); destination
            // checked against the segment above.
            unsafe { std::ptr::copy_nonoverlapping(buf.add(o), kernarg[o..o + n].as_mut_ptr(), n) };
        }
    }
    for a in meta.args.iter().filter(|a| a.value_kind.starts_with("hidden_")) {
        let v = hidden_value(&a.value_kind, grid, block, dynamic_lds).to_le_bytes();
        let (o, n) = (a.offset as usize, a.size as usize);
        for (i, b) in kernarg[o..o + n].iter_mut().enumerate() {
            *b = v.get(i).copied().unwrap_or(0);
        }
    }
    Ok(kernarg)
}

/// Records a launch failure message (stderr + [`last_launch_error`]) and returns `code`.
fn launch_failed(code: hipError_t, msg: String) -> hipError_t {
    eprintln!("amdgpu-emu: {msg}");
    set_last_launch(Some(msg), None, None);
    code
}

/// `hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gridDimX, gridDimY, gridDimZ,
/// unsigned blockDimX, blockDimY, blockDimZ, unsigned sharedMemBytes, hipStream_t stream,
/// void** kernelParams, void** extra)`.
///
/// Runs the kernel to completion on the emulator (grid in workgroups, as in HIP); see the module
/// documentation for argument marshalling, validation and the error codes. On a kernel fault the
/// message is on stderr and in [`last_launch_error`]; on success [`last_launch_report`] has the
/// launch's counters.
///
/// # Safety
/// HIP's contract for `kernelParams` / `extra` (see the module documentation).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipModuleLaunchKernel(
    f: hipFunction_t,
    gridDimX: c_uint,
    gridDimY: c_uint,
    gridDimZ: c_uint,
    blockDimX: c_uint,
    blockDimY: c_uint,
    blockDimZ: c_uint,
    sharedMemBytes: c_uint,
    stream: hipStream_t,
    kernelParams: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> hipError_t {
    api(|| {
        let grid = [gridDimX, gridDimY, gridDimZ];
        let block = [blockDimX, blockDimY, blockDimZ];
        let func = match function_entry(f) {
            Ok(func) => func,
            Err(code) => return Err(launch_failed(code, format!("hipModuleLaunchKernel: invalid function handle {f:p}"))),
        };
        let kernel = &func.code.kernels()[func.kernel];
        let name = &kernel.name;
        let fail = |code, what: String| Err(launch_failed(code, format!("kernel `{name}`: {what}")));
        if check_stream(stream).is_err() {
            return fail(hipErrorInvalidHandle, format!("invalid stream handle {stream:p}"));
        }
        if grid.contains(&0) || block.contains(&0) {
            return fail(hipErrorInvalidValue, format!("zero grid {grid:?} or block {block:?} dimension"));
        }
        if gridDimX > i32::MAX as u32 || gridDimY > 65536 || gridDimZ > 65536 {
            return fail(hipErrorInvalidValue, format!("grid {grid:?} exceeds the device limits [2147483647, 65536, 65536]"));
        }
        let threads = block.iter().map(|&b| u64::from(b)).product::<u64>();
        if block.iter().any(|&b| b > MAX_THREADS_PER_BLOCK) || threads > u64::from(MAX_THREADS_PER_BLOCK) {
            return fail(hipErrorInvalidValue, format!("block {block:?} ({threads} work-items) exceeds 1024 work-items"));
        }
        if sharedMemBytes > LDS_BYTES_PER_WORKGROUP {
            return fail(hipErrorInvalidValue, format!("sharedMemBytes {sharedMemBytes} exceeds 65536"));
        }
        if !kernelParams.is_null() && !extra.is_null() {
            return fail(hipErrorInvalidValue, "both kernelParams and extra are given; pass exactly one".into());
        }
        let has_explicit = kernel.meta.args.iter().any(|a| !a.value_kind.starts_with("hidden_"));
        if has_explicit && kernelParams.is_null() && extra.is_null() {
            return fail(hipErrorInvalidValue, "the kernel has arguments but neither kernelParams nor extra is given".into());
        }
        let bound = kernel.meta.max_flat_workgroup_size;
        if threads > u64::from(bound) {
            return fail(
                hipErrorLaunchFailure,
                format!(
                    "Launch params ({}, {}, {}) are larger than launch bounds ({bound}) (.max_flat_workgroup_size)",
                    block[0], block[1], block[2]
                ),
            );
        }
        let lds = u64::from(kernel.meta.group_segment_fixed_size) + u64::from(sharedMemBytes);
        if lds > u64::from(LDS_BYTES_PER_WORKGROUP) {
            return fail(
                hipErrorLaunchOutOfResources,
                format!(
                    "static LDS {} + dynamic LDS {sharedMemBytes} = {lds} bytes exceeds the 65536 bytes of a workgroup",
                    kernel.meta.group_segment_fixed_size
                ),
            );
        }
        // SAFETY: forwarded caller contract for kernelParams / extra.
        let kernarg = match unsafe { build_kernarg(kernel, kernelParams, extra, grid, block, sharedMemBytes) } {
            Ok(k) => k,
            Err(msg) => return fail(hipErrorInvalidValue, msg),
        };
        let cfg = LaunchConfig { grid, block, dynamic_lds_bytes: sharedMemBytes, kernarg };
        let r = rt();
        let timing = r.timing.read().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(mode) = timing {
            return match crate::timing::simulate(&func.code, kernel, &cfg, &r.memory, &mode.machine, &mode.options) {
                Ok(t) => {
                    LAST_LAUNCH.with(|l| *l.borrow_mut() = Some(LaunchOutcome { error: None, report: None, kernarg: Some(cfg.kernarg), timing: Some(Arc::new(t)) }));
                    Ok(())
                }
                Err(e) => {
                    let code = launch_error_code(&e);
                    let msg = format!("kernel `{name}` (timing run): {e}");
                    eprintln!("amdgpu-emu: {msg}");
                    set_last_launch(Some(msg), None, Some(cfg.kernarg));
                    Err(code)
                }
            };
        }
        let checks = r.checks.read().unwrap_or_else(|p| p.into_inner());
        let result = exec::launch(&func.code, kernel, &cfg, &r.memory, &checks);
        drop(checks);
        match result {
            Ok(report) => {
                set_last_launch(None, Some(Arc::new(report)), Some(cfg.kernarg));
                Ok(())
            }
            Err(e) => {
                let code = launch_error_code(&e);
                let text = e.to_string();
                let msg = if text.contains(name.as_str()) { text } else { format!("kernel `{name}`: {text}") };
                eprintln!("amdgpu-emu: {msg}");
                set_last_launch(Some(msg), None, Some(cfg.kernarg));
                Err(code)
            }
        }
    })
}

/// The HIP code for an executor error: memcheck findings are `hipErrorIllegalAddress`; the
/// watchdog `hipErrorLaunchTimeOut`; traps,
/// faults, undecodable or unimplemented instructions `hipErrorLaunchFailure`. (The executor's own
/// geometry checks never fire after this module's validation; they map to the codes HIP uses.)
fn launch_error_code(e: &exec::LaunchError) -> hipError_t {
    use exec::LaunchError as E;
    match e {
        E::Memory { .. } => hipErrorIllegalAddress,
        E::Alloc { .. } => hipErrorOutOfMemory,
        E::ZeroDim { .. } | E::KernargSize { .. } => hipErrorInvalidValue,
        E::LdsTooLarge { .. } => hipErrorLaunchOutOfResources,
        E::Watchdog { .. } => hipErrorLaunchTimeOut,
        E::BlockTooLarge { .. } | E::Decode(_) | E::Unimplemented { .. } | E::Trap { .. } | E::Fault { .. } | E::Check { .. } => {
            hipErrorLaunchFailure
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

fn create_stream(stream: *mut hipStream_t, flags: c_uint, priority: c_int) -> Result<(), hipError_t> {
    if stream.is_null() || flags & !hipStreamNonBlocking != 0 {
        return Err(hipErrorInvalidValue);
    }
    let r = rt();
    let id = r.new_handle();
    // Out-of-range priorities are clamped to [greatest = -1, least = 0], as HIP does.
    r.state().streams.insert(id, StreamEntry { flags, priority: priority.clamp(-1, 0) });
    // SAFETY: non-null; the exported callers' contract makes it writable.
    unsafe { stream.write(handle_ptr(id)) };
    Ok(())
}

/// `hipError_t hipStreamCreate(hipStream_t*)`.
///
/// # Safety
/// `stream` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreate(stream: *mut hipStream_t) -> hipError_t {
    api(|| create_stream(stream, hipStreamDefault, 0))
}

/// `hipError_t hipStreamCreateWithFlags(hipStream_t*, unsigned flags)`: flags 0 or
/// `hipStreamNonBlocking`.
///
/// # Safety
/// `stream` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreateWithFlags(stream: *mut hipStream_t, flags: c_uint) -> hipError_t {
    api(|| create_stream(stream, flags, 0))
}

/// `hipError_t hipStreamCreateWithPriority(hipStream_t*, unsigned flags, int priority)`.
///
/// # Safety
/// `stream` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreateWithPriority(stream: *mut hipStream_t, flags: c_uint, priority: c_int) -> hipError_t {
    api(|| create_stream(stream, flags, priority))
}

/// `hipError_t hipStreamDestroy(hipStream_t)`: the handle becomes invalid (a second destroy is
/// `hipErrorInvalidHandle`). The null stream cannot be destroyed (`hipErrorInvalidHandle`).
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamDestroy(stream: hipStream_t) -> hipError_t {
    api(|| rt().state().streams.remove(&handle_id(stream)).map(|_| ()).ok_or(hipErrorInvalidHandle))
}

/// `hipError_t hipStreamSynchronize(hipStream_t)`: work completes when issued; validates the
/// handle.
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamSynchronize(stream: hipStream_t) -> hipError_t {
    api(|| check_stream(stream))
}

/// `hipError_t hipStreamQuery(hipStream_t)`: always complete (`hipSuccess`) for a valid stream.
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamQuery(stream: hipStream_t) -> hipError_t {
    api(|| check_stream(stream))
}

/// `hipError_t hipStreamWaitEvent(hipStream_t, hipEvent_t, unsigned flags)`: the event has
/// completed by construction; validates both handles (`flags` must be 0).
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamWaitEvent(stream: hipStream_t, event: hipEvent_t, flags: c_uint) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        if !rt().state().events.contains_key(&handle_id(event)) {
            return Err(hipErrorInvalidHandle);
        }
        if flags != 0 { Err(hipErrorInvalidValue) } else { Ok(()) }
    })
}

/// `hipError_t hipStreamAddCallback(hipStream_t, hipStreamCallback_t, void* userData, unsigned
/// flags)`: all earlier work is complete, so the callback runs immediately, on the calling
/// thread, with status `hipSuccess`. `flags` must be 0.
///
/// # Safety
/// `callback` is safe to call with `(stream, hipSuccess, userData)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamAddCallback(
    stream: hipStream_t,
    callback: hipStreamCallback_t,
    userData: *mut c_void,
    flags: c_uint,
) -> hipError_t {
    let checked = api(|| {
        check_stream(stream)?;
        if callback.is_none() || flags != 0 { Err(hipErrorInvalidValue) } else { Ok(()) }
    });
    if checked != hipSuccess {
        return checked;
    }
    if let Some(cb) = callback {
        // SAFETY: caller contract. Called outside `api` (and outside every lock) so that the
        // callback may itself call HIP functions.
        unsafe { cb(stream, hipSuccess, userData) };
    }
    hipSuccess
}

fn with_stream<T>(stream: hipStream_t, f: impl FnOnce(Option<&StreamEntry>) -> T) -> Result<T, hipError_t> {
    if stream.is_null() || stream == hipStreamPerThread {
        return Ok(f(None));
    }
    let state = rt().state();
    state.streams.get(&handle_id(stream)).map(|s| f(Some(s))).ok_or(hipErrorInvalidHandle)
}

/// `hipError_t hipStreamGetFlags(hipStream_t, unsigned*)`.
///
/// # Safety
/// `flags` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamGetFlags(stream: hipStream_t, flags: *mut c_uint) -> hipError_t {
    api(|| {
        let v = with_stream(stream, |s| s.map_or(hipStreamDefault, |s| s.flags))?;
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(flags, v) }
    })
}

/// `hipError_t hipStreamGetPriority(hipStream_t, int*)`.
///
/// # Safety
/// `priority` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamGetPriority(stream: hipStream_t, priority: *mut c_int) -> hipError_t {
    api(|| {
        let v = with_stream(stream, |s| s.map_or(0, |s| s.priority))?;
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(priority, v) }
    })
}

/// `hipError_t hipStreamGetDevice(hipStream_t, hipDevice_t*)`: 0.
///
/// # Safety
/// `device` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamGetDevice(stream: hipStream_t, device: *mut hipDevice_t) -> hipError_t {
    api(|| {
        with_stream(stream, |_| ())?;
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(device, 0) }
    })
}

// ---------------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------------

const EVENT_FLAGS: c_uint = hipEventBlockingSync
    | hipEventDisableTiming
    | hipEventInterprocess
    | hipEventDisableSystemFence
    | hipEventReleaseToDevice
    | hipEventReleaseToSystem;

fn create_event(event: *mut hipEvent_t, flags: c_uint) -> Result<(), hipError_t> {
    if event.is_null() || flags & !EVENT_FLAGS != 0 {
        return Err(hipErrorInvalidValue);
    }
    // An interprocess event must also disable timing (HIP's rule).
    if flags & hipEventInterprocess != 0 && flags & hipEventDisableTiming == 0 {
        return Err(hipErrorInvalidValue);
    }
    let r = rt();
    let id = r.new_handle();
    r.state().events.insert(id, EventEntry { flags, recorded: None });
    // SAFETY: non-null; the exported callers' contract makes it writable.
    unsafe { event.write(handle_ptr(id)) };
    Ok(())
}

/// `hipError_t hipEventCreate(hipEvent_t*)`.
///
/// # Safety
/// `event` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventCreate(event: *mut hipEvent_t) -> hipError_t {
    api(|| create_event(event, hipEventDefault))
}

/// `hipError_t hipEventCreateWithFlags(hipEvent_t*, unsigned flags)`.
///
/// # Safety
/// `event` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventCreateWithFlags(event: *mut hipEvent_t, flags: c_uint) -> hipError_t {
    api(|| create_event(event, flags))
}

/// `hipError_t hipEventRecord(hipEvent_t, hipStream_t)`: timestamps the event with the host
/// clock now — all work issued before has completed.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventRecord(event: hipEvent_t, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        let now = Instant::now();
        let mut state = rt().state();
        let e = state.events.get_mut(&handle_id(event)).ok_or(hipErrorInvalidHandle)?;
        e.recorded = Some(now);
        Ok(())
    })
}

/// `hipError_t hipEventSynchronize(hipEvent_t)`: nothing to wait for; validates the handle.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventSynchronize(event: hipEvent_t) -> hipError_t {
    api(|| if rt().state().events.contains_key(&handle_id(event)) { Ok(()) } else { Err(hipErrorInvalidHandle) })
}

/// `hipError_t hipEventQuery(hipEvent_t)`: `hipSuccess` (complete) for a valid event.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventQuery(event: hipEvent_t) -> hipError_t {
    hipEventSynchronize(event)
}

/// `hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop)`: milliseconds
/// of **emulator wall time** between the two records. An event never recorded, or created with
/// `hipEventDisableTiming`, is `hipErrorInvalidHandle` (as in HIP).
///
/// # Safety
/// `ms` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventElapsedTime(ms: *mut f32, start: hipEvent_t, stop: hipEvent_t) -> hipError_t {
    api(|| {
        if ms.is_null() {
            return Err(hipErrorInvalidValue);
        }
        let state = rt().state();
        let get = |e: hipEvent_t| state.events.get(&handle_id(e)).ok_or(hipErrorInvalidHandle);
        let (a, b) = (get(start)?, get(stop)?);
        if (a.flags | b.flags) & hipEventDisableTiming != 0 {
            return Err(hipErrorInvalidHandle);
        }
        let (Some(t0), Some(t1)) = (a.recorded, b.recorded) else { return Err(hipErrorInvalidHandle) };
        let elapsed = if t1 >= t0 {
            t1.duration_since(t0).as_secs_f64() * 1e3
        } else {
            -(t0.duration_since(t1).as_secs_f64() * 1e3)
        };
        // SAFETY: non-null; caller contract.
        unsafe { ms.write(elapsed as f32) };
        Ok(())
    })
}

/// `hipError_t hipEventDestroy(hipEvent_t)`: the handle becomes invalid.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventDestroy(event: hipEvent_t) -> hipError_t {
    api(|| rt().state().events.remove(&handle_id(event)).map(|_| ()).ok_or(hipErrorInvalidHandle))
}
