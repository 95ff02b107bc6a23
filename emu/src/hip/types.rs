//! HIP C types, constants, the emulated device's properties and error names.

use super::*;

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
/// Opaque graph object.
#[repr(C)]
pub struct ihipGraph {
    _private: [u8; 0],
}
/// Opaque executable graph object.
#[repr(C)]
pub struct hipGraphExec {
    _private: [u8; 0],
}
/// Opaque graph node object.
#[repr(C)]
pub struct hipGraphNode {
    _private: [u8; 0],
}
/// HIP's `hipGraph_t`.
pub type hipGraph_t = *mut ihipGraph;
/// HIP's `hipGraphExec_t`.
pub type hipGraphExec_t = *mut hipGraphExec;
/// HIP's `hipGraphNode_t`.
pub type hipGraphNode_t = *mut hipGraphNode;
/// HIP's `hipStreamCallback_t`.
pub type hipStreamCallback_t = Option<unsafe extern "C" fn(stream: hipStream_t, status: hipError_t, user_data: *mut c_void)>;

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
/// `hipErrorIllegalState`.
pub const hipErrorIllegalState: hipError_t = 401;
/// `hipErrorStreamCaptureUnsupported`: the call is not permitted while a stream captures.
pub const hipErrorStreamCaptureUnsupported: hipError_t = 900;
/// `hipErrorStreamCaptureInvalidated`: the capture was invalidated by a forbidden call.
pub const hipErrorStreamCaptureInvalidated: hipError_t = 901;
/// `hipErrorStreamCaptureIsolation`: a dependency on work outside the capture.
pub const hipErrorStreamCaptureIsolation: hipError_t = 905;
/// `hipErrorStreamCaptureImplicit`: an implicit dependency on a capturing (blocking) stream
/// through the legacy null stream.
pub const hipErrorStreamCaptureImplicit: hipError_t = 906;
/// `hipErrorStreamCaptureWrongThread`: the capture was ended by another thread.
pub const hipErrorStreamCaptureWrongThread: hipError_t = 908;

/// HIP's `hipStreamCaptureMode`.
pub type hipStreamCaptureMode = c_uint;
/// `hipStreamCaptureModeGlobal`: unsafe calls are forbidden in every thread during the capture.
pub const hipStreamCaptureModeGlobal: hipStreamCaptureMode = 0;
/// `hipStreamCaptureModeThreadLocal`: unsafe calls are forbidden in the capturing thread.
pub const hipStreamCaptureModeThreadLocal: hipStreamCaptureMode = 1;
/// `hipStreamCaptureModeRelaxed`: no call is forbidden.
pub const hipStreamCaptureModeRelaxed: hipStreamCaptureMode = 2;
/// HIP's `hipStreamCaptureStatus`.
pub type hipStreamCaptureStatus = c_uint;
/// `hipStreamCaptureStatusNone`.
pub const hipStreamCaptureStatusNone: hipStreamCaptureStatus = 0;
/// `hipStreamCaptureStatusActive`.
pub const hipStreamCaptureStatusActive: hipStreamCaptureStatus = 1;
/// `hipStreamCaptureStatusInvalidated`.
pub const hipStreamCaptureStatusInvalidated: hipStreamCaptureStatus = 2;

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

/// The part the emulated HIP device is, by processor ([`DeviceSpec::of`]): what
/// [`hipGetDevicePropertiesR0600`] reports and what the runtime accepts (code objects of
/// [`DeviceSpec::target`] only; LDS per workgroup). Selected with [`set_device_arch`] or the
/// `AMDGPU_EMU_ARCH` environment variable; the default is the gfx942 MI300X.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceSpec {
    /// The processor whose code objects the device runs.
    pub target: crate::loader::Target,
    /// Device name (`hipDeviceGetName`).
    pub name: &'static str,
    /// `gcnArchName` (target id with its features).
    pub gcn_arch_name: &'static str,
    /// LDS bytes one workgroup may use (and per CU).
    pub lds_bytes_per_workgroup: u32,
    /// Compute units.
    pub multiprocessor_count: c_int,
    /// Device memory bytes.
    pub total_global_mem: u64,
    /// Peak engine clock in kHz.
    pub clock_rate_khz: c_int,
    /// `major.minor` of the gfx9 processor (9.4 gfx942, 9.5 gfx950).
    pub minor: c_int,
}

impl DeviceSpec {
    /// AMD Instinct MI300X (gfx942): 304 CUs, 64 KiB LDS, 192 GiB HBM3, 2100 MHz.
    pub const MI300X: DeviceSpec = DeviceSpec {
        target: crate::loader::Target::Gfx942,
        name: DEVICE_NAME,
        gcn_arch_name: GCN_ARCH_NAME,
        lds_bytes_per_workgroup: LDS_BYTES_PER_WORKGROUP,
        multiprocessor_count: MULTIPROCESSOR_COUNT,
        total_global_mem: TOTAL_GLOBAL_MEM,
        clock_rate_khz: CLOCK_RATE_KHZ,
        minor: 4,
    };
    /// AMD Instinct MI355X (gfx950): 256 CUs (8 XCDs × 32), 160 KiB LDS per CU (all of it
    /// available to one workgroup), 288 GiB HBM3E, 2400 MHz (AMD MI355X data sheet; the
    /// project's `hardware.md` parts table).
    pub const MI355X: DeviceSpec = DeviceSpec {
        target: crate::loader::Target::Gfx950,
        name: "AMD Instinct MI355X (emulated)",
        gcn_arch_name: "gfx950:sramecc+:xnack-",
        lds_bytes_per_workgroup: crate::exec::MAX_LDS_BYTES_GFX950,
        multiprocessor_count: 256,
        total_global_mem: 288 << 30,
        clock_rate_khz: 2_400_000,
        minor: 5,
    };

    /// The part emulated for `target`.
    pub const fn of(target: crate::loader::Target) -> DeviceSpec {
        match target {
            crate::loader::Target::Gfx942 => DeviceSpec::MI300X,
            crate::loader::Target::Gfx950 => DeviceSpec::MI355X,
        }
    }
}

/// Device name of the gfx942 device ([`DeviceSpec::MI300X`]).
pub const DEVICE_NAME: &str = "AMD Instinct MI300X (emulated)";
/// `gcnArchName` of the gfx942 device.
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

/// The properties of the emulated device (the part [`device_spec`] selects).
pub fn device_properties() -> hipDeviceProp_tR0600 {
    device_properties_of(&device_spec())
}

/// The properties of the device `spec` describes.
pub fn device_properties_of(spec: &DeviceSpec) -> hipDeviceProp_tR0600 {
    let i32max = i32::MAX;
    let arch_bits: u32 = (0..=16).filter(|&b| b != 14 && b != 16).fold(0, |acc, b| acc | (1 << b)); // no surfaces, no dynamic parallelism
    hipDeviceProp_tR0600 {
        name: c_chars(spec.name),
        uuid: hipUUID { bytes: c_chars::<16>(&format!("GPU-emu-{}-0", spec.target.name())) },
        luid: [0; 8],
        luidDeviceNodeMask: 0,
        totalGlobalMem: spec.total_global_mem as usize,
        sharedMemPerBlock: spec.lds_bytes_per_workgroup as usize,
        regsPerBlock: 512 * 64 * 2,
        warpSize: 64,
        memPitch: i32max as usize,
        maxThreadsPerBlock: MAX_THREADS_PER_BLOCK as c_int,
        maxThreadsDim: [1024, 1024, 1024],
        maxGridSize: [i32max, 65536, 65536],
        clockRate: spec.clock_rate_khz,
        totalConstMem: i32max as usize,
        major: 9,
        minor: spec.minor,
        textureAlignment: 256,
        texturePitchAlignment: 256,
        deviceOverlap: 1,
        multiProcessorCount: spec.multiprocessor_count,
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
        sharedMemPerMultiprocessor: spec.lds_bytes_per_workgroup as usize,
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
        sharedMemPerBlockOptin: spec.lds_bytes_per_workgroup as usize,
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
        gcnArchName: c_chars(spec.gcn_arch_name),
        maxSharedMemoryPerMultiProcessor: spec.lds_bytes_per_workgroup as usize,
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
    (900, c"hipErrorStreamCaptureUnsupported", c"operation not permitted when stream is capturing"),
    (901, c"hipErrorStreamCaptureInvalidated", c"operation failed due to a previous error during capture"),
    (902, c"hipErrorStreamCaptureMerge", c"operation would result in a merge of separate capture sequences"),
    (903, c"hipErrorStreamCaptureUnmatched", c"capture was not ended in the same stream as it began"),
    (904, c"hipErrorStreamCaptureUnjoined", c"capturing stream has unjoined work"),
    (905, c"hipErrorStreamCaptureIsolation", c"dependency created on uncaptured work in another stream"),
    (906, c"hipErrorStreamCaptureImplicit", c"operation would make the legacy stream depend on a capturing blocking stream"),
    (907, c"hipErrorCapturedEvent", c"operation not permitted on an event last recorded in a capturing stream"),
    (908, c"hipErrorStreamCaptureWrongThread", c"attempt to terminate a thread-local capture sequence from another thread"),
    (999, c"hipErrorUnknown", c"unknown error"),
];

fn error_entry(code: hipError_t) -> Option<&'static (hipError_t, &'static CStr, &'static CStr)> {
    ERRORS.iter().find(|e| e.0 == code)
}

/// `const char* hipGetErrorName(hipError_t)`: the enumerator's name (`"hipErrorInvalidValue"`);
/// `"hipErrorUnknown"` for codes the emulator does not know. The string is static.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipGetErrorName(hip_error: hipError_t) -> *const c_char {
    error_entry(hip_error).map_or(c"hipErrorUnknown", |e| e.1).as_ptr()
}

/// `const char* hipGetErrorString(hipError_t)`: a description (`"invalid argument"`);
/// `"unknown error"` for unknown codes. The string is static.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipGetErrorString(hip_error: hipError_t) -> *const c_char {
    error_entry(hip_error).map_or(c"unknown error", |e| e.2).as_ptr()
}
