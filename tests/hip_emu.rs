//! The real host path on the emulator: `rocm-rs` (which declares the HIP C functions without
//! linking anything) → the HIP C ABI exported by `amdgpu-emu` → the gfx942 executor, running the
//! code object the project ships (`fp8gemm::codeobj::GFX942`).
//!
//! `rocm-rs` 0.4.2 soundness traps avoided here: `Stream` is never cloned (its `Drop` destroys the
//! stream, so a clone would destroy it twice); no `copy_*_async` / `PendingCopy` (it does not
//! synchronize and drops the source early); `Function::launch` takes raw parameter pointers, so
//! every pointer passed points to a live local; the `Module` outlives every `Function` taken from
//! it (`Function` does not keep it alive on real HIP).
// The emulator exports the HIP C ABI only in `emu` builds; with `rocm` the real runtime serves it.
#![cfg(feature = "emu")]

use std::ffi::c_void;
use std::mem::offset_of;

use amdgpu_emu::hip as emu;
use fp8gemm::codeobj::GFX942;
use fp8gemm_device::args::{AddOneArgs, GlobalPtr};
use rocm_rs::hip::{self, DeviceMemory, Dim3, Event, Module, Stream};

const N: usize = 1000;

fn input() -> Vec<f32> {
    (0..N).map(|i| (i as f32) * 0.37 - 91.5).collect()
}

/// Launches `add_one_f32` through `rocm-rs` with grid 4 × block 256 on `stream`.
fn launch_add_one(module: &Module, inp: &DeviceMemory<f32>, out: &DeviceMemory<f32>, n: u32, stream: Option<&Stream>) -> hip::Result<()> {
    let f = module.get_function("add_one_f32")?;
    let mut args = AddOneArgs { inp: GlobalPtr::new(inp.as_ptr() as u64), out: GlobalPtr::new(out.as_ptr() as u64), n };
    // One kernel parameter: the whole argument struct, by value (its bytes are the kernarg
    // segment). The pointer refers to `args`, alive across the (synchronous) launch.
    let mut params = [(&raw mut args).cast::<c_void>()];
    f.launch(Dim3::new_1d(4), Dim3::new_1d(256), 0, stream, &mut params)
}

#[test]
fn device_properties_layout_matches_the_rocm_rs_bindings() {
    use emu::hipDeviceProp_tR0600 as Ours;
    use hip::bindings::hipDeviceProp_tR0600 as Theirs;
    assert_eq!(size_of::<Ours>(), size_of::<Theirs>());
    assert_eq!(align_of::<Ours>(), align_of::<Theirs>());
    macro_rules! same_offsets {
        ($($f:ident),* $(,)?) => {$(
            assert_eq!(offset_of!(Ours, $f), offset_of!(Theirs, $f), stringify!($f));
        )*};
    }
    same_offsets!(
        name,
        uuid,
        luid,
        luidDeviceNodeMask,
        totalGlobalMem,
        sharedMemPerBlock,
        regsPerBlock,
        warpSize,
        memPitch,
        maxThreadsPerBlock,
        maxThreadsDim,
        maxGridSize,
        clockRate,
        totalConstMem,
        major,
        minor,
        textureAlignment,
        texturePitchAlignment,
        deviceOverlap,
        multiProcessorCount,
        kernelExecTimeoutEnabled,
        integrated,
        canMapHostMemory,
        computeMode,
        maxTexture1D,
        maxTexture1DMipmap,
        maxTexture1DLinear,
        maxTexture2D,
        maxTexture2DMipmap,
        maxTexture2DLinear,
        maxTexture2DGather,
        maxTexture3D,
        maxTexture3DAlt,
        maxTextureCubemap,
        maxTexture1DLayered,
        maxTexture2DLayered,
        maxTextureCubemapLayered,
        maxSurface1D,
        maxSurface2D,
        maxSurface3D,
        maxSurface1DLayered,
        maxSurface2DLayered,
        maxSurfaceCubemap,
        maxSurfaceCubemapLayered,
        surfaceAlignment,
        concurrentKernels,
        ECCEnabled,
        pciBusID,
        pciDeviceID,
        pciDomainID,
        tccDriver,
        asyncEngineCount,
        unifiedAddressing,
        memoryClockRate,
        memoryBusWidth,
        l2CacheSize,
        persistingL2CacheMaxSize,
        maxThreadsPerMultiProcessor,
        streamPrioritiesSupported,
        globalL1CacheSupported,
        localL1CacheSupported,
        sharedMemPerMultiprocessor,
        regsPerMultiprocessor,
        managedMemory,
        isMultiGpuBoard,
        multiGpuBoardGroupID,
        hostNativeAtomicSupported,
        singleToDoublePrecisionPerfRatio,
        pageableMemoryAccess,
        concurrentManagedAccess,
        computePreemptionSupported,
        canUseHostPointerForRegisteredMem,
        cooperativeLaunch,
        cooperativeMultiDeviceLaunch,
        sharedMemPerBlockOptin,
        pageableMemoryAccessUsesHostPageTables,
        directManagedMemAccessFromHost,
        maxBlocksPerMultiProcessor,
        accessPolicyMaxWindowSize,
        reservedSharedMemPerBlock,
        hostRegisterSupported,
        sparseHipArraySupported,
        hostRegisterReadOnlySupported,
        timelineSemaphoreInteropSupported,
        memoryPoolsSupported,
        gpuDirectRDMASupported,
        gpuDirectRDMAFlushWritesOptions,
        gpuDirectRDMAWritesOrdering,
        memoryPoolSupportedHandleTypes,
        deferredMappingHipArraySupported,
        ipcEventSupported,
        clusterLaunch,
        unifiedFunctionPointers,
        reserved,
        hipReserved,
        gcnArchName,
        maxSharedMemoryPerMultiProcessor,
        clockInstructionRate,
        arch,
        hdpMemFlushCntl,
        hdpRegFlushCntl,
        cooperativeMultiDeviceUnmatchedFunc,
        cooperativeMultiDeviceUnmatchedGridDim,
        cooperativeMultiDeviceUnmatchedBlockDim,
        cooperativeMultiDeviceUnmatchedSharedMem,
        isLargeBar,
        asicRevision,
    );
    // The launch-parameter markers rocm-rs users pass in `extra` (HIP's `(void*)1..3`).
    assert_eq!(emu::HIP_LAUNCH_PARAM_BUFFER_POINTER as usize, 1);
    assert_eq!(emu::HIP_LAUNCH_PARAM_BUFFER_SIZE as usize, 2);
    assert_eq!(emu::HIP_LAUNCH_PARAM_END as usize, 3);
}

#[test]
fn device_queries_through_rocm_rs() {
    hip::init().unwrap();
    assert_eq!(hip::device_count().unwrap(), 1);
    assert_eq!(hip::runtime_version().unwrap(), 60_342_133);
    let d = hip::Device::new(0).unwrap();
    d.set_current().unwrap();
    let p = d.properties().unwrap();
    assert_eq!(p.name, "AMD Instinct MI300X (emulated)");
    assert_eq!(p.multi_processor_count, 304);
    assert_eq!(p.warp_size, 64);
    assert_eq!(p.shared_mem_per_block, 65536);
    assert_eq!(p.max_threads_per_block, 1024);
    assert_eq!(p.clock_rate, 2_100_000);
    assert_eq!(p.total_global_mem, 192 << 30);
    assert_eq!((p.major, p.minor), (9, 4));
    assert!(hip::Device::new(1).unwrap_err().is_invalid_device());
    let info = hip::memory_info().unwrap();
    assert_eq!(info.total, 192 << 30);
    let e = hip::Error::new(emu::hipErrorIllegalAddress);
    assert_eq!(e.name(), "hipErrorIllegalAddress");
    assert_eq!(e.description(), "an illegal memory access was encountered");
}

#[test]
fn add_one_runs_through_rocm_rs() {
    let module = Module::load_data(GFX942).expect("load the embedded gfx942 code object");
    let host_in = input();
    let mut inp = DeviceMemory::<f32>::new(N).unwrap();
    let out = DeviceMemory::<f32>::new(N).unwrap();
    inp.copy_from_host(&host_in).unwrap();

    let stream = hip::Device::new(0).unwrap().get_stream().unwrap();
    let (start, stop) = (Event::new().unwrap(), Event::new().unwrap());
    start.record(&stream).unwrap();
    launch_add_one(&module, &inp, &out, N as u32, Some(&stream)).unwrap_or_else(|e| {
        panic!("launch failed: {e}; emulator: {:?}", emu::last_launch_error());
    });
    stop.record(&stream).unwrap();
    stream.synchronize().unwrap();
    let ms = start.elapsed_time(&stop).unwrap();
    assert!(ms >= 0.0, "emulator wall time {ms} ms");
    assert!(emu::last_launch_error().is_none());
    assert!(emu::last_launch_report().is_some(), "the launch's counters are kept");

    let mut got = vec![0f32; N];
    out.copy_to_host(&mut got).unwrap();
    for (i, (&g, &x)) in got.iter().zip(&host_in).enumerate() {
        assert_eq!(g.to_bits(), (x + 1.0).to_bits(), "out[{i}] = {g}, expected {x} + 1");
    }
}

/// The same kernel launched with HIP's `extra` convention, through rocm-rs's raw declaration of
/// `hipModuleLaunchKernel`.
#[test]
fn add_one_through_extra_buffer() {
    let module = Module::load_data(GFX942).unwrap();
    let f = module.get_function("add_one_f32").unwrap();
    let host_in = input();
    let mut inp = DeviceMemory::<f32>::new(N).unwrap();
    let out = DeviceMemory::<f32>::new(N).unwrap();
    inp.copy_from_host(&host_in).unwrap();
    let mut args = AddOneArgs { inp: GlobalPtr::new(inp.as_ptr() as u64), out: GlobalPtr::new(out.as_ptr() as u64), n: N as u32 };
    let mut size = size_of::<AddOneArgs>();
    let mut extra =
        [emu::HIP_LAUNCH_PARAM_BUFFER_POINTER, (&raw mut args).cast(), emu::HIP_LAUNCH_PARAM_BUFFER_SIZE, (&raw mut size).cast(), emu::HIP_LAUNCH_PARAM_END];
    // SAFETY: `f` is a live function handle (its module is alive); `extra` is a well-formed
    // 5-entry array whose buffer and size outlive the synchronous call.
    let code = unsafe { hip::ffi::hipModuleLaunchKernel(f.as_raw(), 4, 1, 1, 256, 1, 1, 0, std::ptr::null_mut(), std::ptr::null_mut(), extra.as_mut_ptr()) };
    assert_eq!(code, hip::ffi::hipError_t_hipSuccess, "{:?}", emu::last_launch_error());
    let mut got = vec![0f32; N];
    out.copy_to_host(&mut got).unwrap();
    assert!(got.iter().zip(&host_in).all(|(&g, &x)| g.to_bits() == (x + 1.0).to_bits()));
}

#[test]
fn launch_bound_is_enforced_through_rocm_rs() {
    let module = Module::load_data(GFX942).unwrap();
    let f = module.get_function("add_one_f32").unwrap();
    let inp = DeviceMemory::<f32>::new(N).unwrap();
    let mut args = AddOneArgs { inp: GlobalPtr::new(inp.as_ptr() as u64), out: GlobalPtr::new(inp.as_ptr() as u64), n: 0 };
    let mut params = [(&raw mut args).cast::<c_void>()];
    // add_one_f32 is compiled with workgroup_size = 256: a 512-wide block exceeds its bound.
    let err = f.launch(Dim3::new_1d(1), Dim3::new_1d(512), 0, None, &mut params).unwrap_err();
    assert_eq!(err.code(), hip::bindings::hipError_t_hipErrorLaunchFailure);
    let msg = emu::last_launch_error().unwrap();
    assert!(msg.contains("larger than launch bounds (256)"), "{msg}");
    assert!(matches!(module.get_function("no_such_kernel"), Err(e) if e.code() == 500));
}

/// Threads load, copy and launch concurrently; each sees its own results and its own launch
/// outcome (`last_launch_error` is per thread), including one thread's rejected launch (a
/// block over the launch bound, which — unlike a kernel fault, see `tests/hip_emu_fault.rs` —
/// poisons nothing).
#[test]
fn concurrent_launches_keep_their_own_outcomes() {
    std::thread::scope(|scope| {
        for t in 0..4u32 {
            scope.spawn(move || {
                // rocm-rs's Module is neither Send nor Sync: each thread loads its own.
                let module = Module::load_data(GFX942).unwrap();
                let host_in: Vec<f32> = (0..N).map(|i| i as f32 * (t as f32 + 1.5)).collect();
                let mut inp = DeviceMemory::<f32>::new(N).unwrap();
                let out = DeviceMemory::<f32>::new(N).unwrap();
                inp.copy_from_host(&host_in).unwrap();
                for round in 0..3 {
                    if t == 3 && round == 1 {
                        let f = module.get_function("add_one_f32").unwrap();
                        let mut args = AddOneArgs { inp: GlobalPtr::new(inp.as_ptr() as u64), out: GlobalPtr::new(out.as_ptr() as u64), n: N as u32 };
                        let mut params = [(&raw mut args).cast::<c_void>()];
                        let err = f.launch(Dim3::new_1d(1), Dim3::new_1d(512), 0, None, &mut params).unwrap_err();
                        assert_eq!(err.code(), hip::bindings::hipError_t_hipErrorLaunchFailure);
                        assert!(emu::last_launch_error().unwrap().contains("launch bounds"));
                        continue;
                    }
                    launch_add_one(&module, &inp, &out, N as u32, None).unwrap();
                    assert_eq!(emu::last_launch_error(), None, "thread {t} round {round}");
                    let mut got = vec![0f32; N];
                    out.copy_to_host(&mut got).unwrap();
                    assert!(got.iter().zip(&host_in).all(|(&g, &x)| g == x + 1.0), "thread {t} round {round}");
                }
            });
        }
    });
}
