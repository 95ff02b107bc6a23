//! A kernel fault poisons the device as on HIP, seen through `rocm-rs` (the sticky code on every
//! later call, until `hipDeviceReset`) and through `fp8gemm::Context` (a typed
//! `Error::DeviceFault` with the finding, on the failing call and every later call of the
//! context). One test in its own binary: the fault and the reset concern the whole emulated
//! device of the process.
// The emulator exports the HIP C ABI only in `emu` builds; with `rocm` the real runtime serves it.
#![cfg(feature = "emu")]

use std::ffi::c_void;

use amdgpu_emu::hip as emu;
use fp8gemm::codeobj::GFX942;
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::{ActivationsView, Context, DeviceSliceMut, Error, Event, Stream, WeightsView, fp8_gemm_nt};
use fp8gemm_device::args::{AddOneArgs, GlobalPtr};
use half::bf16;
use rocm_rs::hip::{self, DeviceMemory, Dim3, Module};

const N: usize = 1000;

fn input() -> Vec<f32> {
    (0..N).map(|i| (i as f32) * 0.37 - 91.5).collect()
}

/// Launches `add_one_f32` through `rocm-rs` with grid 4 × block 256 on the null stream.
fn launch_add_one(module: &Module, inp: &DeviceMemory<f32>, out: &DeviceMemory<f32>, n: u32) -> hip::Result<()> {
    let f = module.get_function("add_one_f32")?;
    let mut args = AddOneArgs { inp: GlobalPtr::new(inp.as_ptr() as u64), out: GlobalPtr::new(out.as_ptr() as u64), n };
    // One kernel parameter: the whole argument struct, by value; `args` outlives the
    // (synchronous) launch.
    let mut params = [(&raw mut args).cast::<c_void>()];
    f.launch(Dim3::new_1d(4), Dim3::new_1d(256), 0, None, &mut params)
}

/// The memcheck fault through rocm-rs: the launch fails, every later call returns the same code,
/// the reset recovers.
fn through_rocm_rs() {
    {
        let module = Module::load_data(GFX942).unwrap();
        let mut inp = DeviceMemory::<f32>::new(N).unwrap();
        let out = DeviceMemory::<f32>::new(N).unwrap();
        inp.copy_from_host(&input()).unwrap();
        // n = 1024 > 1000: work-items 1000..1023 (workgroup 3, wave 3, lanes 40..63) read past `inp`.
        let err = launch_add_one(&module, &inp, &out, 1024).expect_err("memcheck must stop the launch");
        assert_eq!(err.code(), hip::bindings::hipError_t_hipErrorIllegalAddress, "{err}");
        let msg = emu::last_launch_error().expect("the fault message is kept");
        let first_bad = inp.as_ptr() as u64 + 4 * N as u64;
        assert!(msg.contains("add_one_f32"), "names the kernel: {msg}");
        assert!(msg.contains("pc 0x"), "names the pc: {msg}");
        // Work-item 1000 = workgroup 3 (768..1023), wave 3 (960..1023), lane 1000 - 960 = 40.
        assert!(msg.contains("workgroup [3, 0, 0] wave 3 lane 40"), "names the first faulting lane: {msg}");
        assert!(msg.contains(&format!("{first_bad:#x}")), "names the first address past the buffer ({first_bad:#x}): {msg}");
        assert_eq!(emu::device_fault(0).map(|f| f.message), Some(msg));

        // The fault poisons the device, as on HIP: a correct launch and a copy fail with it.
        let err = launch_add_one(&module, &inp, &out, N as u32).unwrap_err();
        assert_eq!(err.code(), hip::bindings::hipError_t_hipErrorIllegalAddress);
        let mut got = vec![0f32; N];
        assert_eq!(out.copy_to_host(&mut got).unwrap_err().code(), hip::bindings::hipError_t_hipErrorIllegalAddress);
        // (Dropping these handles fails quietly: the reset below frees everything.)
    }
    assert_eq!(emu::hipDeviceReset(), emu::hipSuccess);
    let module = Module::load_data(GFX942).unwrap();
    let mut inp = DeviceMemory::<f32>::new(N).unwrap();
    let out = DeviceMemory::<f32>::new(N).unwrap();
    inp.copy_from_host(&input()).unwrap();
    launch_add_one(&module, &inp, &out, N as u32).unwrap();
    let mut got = vec![0f32; N];
    out.copy_to_host(&mut got).unwrap();
    for (i, (&g, &x)) in got.iter().zip(&input()).enumerate() {
        assert_eq!(g.to_bits(), (x + 1.0).to_bits(), "out[{i}] after the reset");
    }
}

/// The typed error: a GEMM into an engine-owned output whose raw view claims more memory than the
/// allocation has faults in memcheck when its stream is synchronized; from then on every call of
/// the context fails with the same `Error::DeviceFault`, and a new context on the device too.
fn through_context() {
    let (m, n, k) = (64, 128, 256);
    let x: Vec<f32> = (0..m * k).map(|i| ((i % 23) as f32 - 11.0) * 0.25).collect();
    let w: Vec<f32> = (0..n * k).map(|i| ((i % 17) as f32 - 8.0) * 0.125).collect();
    let a = QuantizedActivations::<E4M3Fnuz>::quantize(&x, m, k).unwrap();
    let b = QuantizedWeights::<E4M3Fnuz>::quantize(&w, n, k).unwrap();
    let ctx = Context::new().unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let (da, dsa) = (ctx.upload(fp8gemm::fp8::as_bits(&a.data)).unwrap(), ctx.upload(&a.scales).unwrap());
    let (db, dsb) = (ctx.upload(fp8gemm::fp8::as_bits(&b.data)).unwrap(), ctx.upload(&b.scales).unwrap());
    let mut small = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { emu::hipMalloc(&mut small, 64) }, emu::hipSuccess);
    let av = ActivationsView::<E4M3Fnuz>::new(da.as_slice(), dsa.as_slice(), m, k).unwrap();
    let bv = WeightsView::<E4M3Fnuz>::new(db.as_slice(), dsb.as_slice(), n, k).unwrap();
    // SAFETY (deliberately broken, to make the kernel fault): the view claims m·n bf16 of a
    // 64-byte allocation. The emulator's memcheck stops the kernel at its first write past the
    // allocation, so no memory outside the emulated device is touched.
    let dv = unsafe { DeviceSliceMut::<bf16>::from_raw(small as u64, m * n) }.unwrap();
    fp8_gemm_nt(&stream, av, bv, dv).expect("queued: the fault shows when the stream runs");
    assert!(ctx.fault().is_none());

    let fault = stream.synchronize().expect_err("the kernel faults");
    let Error::DeviceFault { call, code, ref name, ref finding } = fault else { panic!("expected Error::DeviceFault, got {fault:?}") };
    assert_eq!((call, code, name.as_str()), ("hipStreamSynchronize", 700, "hipErrorIllegalAddress"));
    assert!(finding.contains("fp8_gemm_nt") && finding.contains("memcheck") && finding.contains("lane"), "{finding}");
    assert!(fault.to_string().contains(finding.as_str()), "the message carries the finding: {fault}");
    let same = |e: Error| match e {
        Error::DeviceFault { call: c, code: k, finding: f, .. } => assert_eq!((c, k, &f), (call, code, finding), "the first fault, repeated"),
        e => panic!("expected the device fault again, got {e:?}"),
    };
    same(ctx.fault().expect("the context is poisoned"));
    // Every later call of the context and of what it made: the same typed error.
    same(stream.synchronize().unwrap_err());
    same(ctx.synchronize().unwrap_err());
    same(ctx.upload(&[1u8, 2, 3]).unwrap_err());
    same(ctx.alloc_zeroed::<f32>(16).unwrap_err());
    same(Stream::new(&ctx).unwrap_err());
    same(Event::new(&ctx).unwrap_err());
    same(da.download(&Stream::null(&ctx)).unwrap_err());
    let av = ActivationsView::<E4M3Fnuz>::new(da.as_slice(), dsa.as_slice(), m, k).unwrap();
    let bv = WeightsView::<E4M3Fnuz>::new(db.as_slice(), dsb.as_slice(), n, k).unwrap();
    // SAFETY: never launched: the poisoned context refuses before anything is queued.
    let dv = unsafe { DeviceSliceMut::<bf16>::from_raw(small as u64, m * n) }.unwrap();
    same(fp8_gemm_nt(&stream, av, bv, dv).unwrap_err());
    // A new context on the poisoned device: the backend reports the fault.
    match Context::new().unwrap_err() {
        Error::DeviceFault { code, finding: f, .. } => assert_eq!((code, &f), (700, finding)),
        e => panic!("expected a device fault, got {e:?}"),
    }
    drop((stream, da, dsa, db, dsb, ctx));

    // After the reset the device works again (with new contexts).
    assert_eq!(emu::hipDeviceReset(), emu::hipSuccess);
    let ctx = Context::new().unwrap();
    let buf = ctx.upload(&[7u32, 8, 9]).unwrap();
    assert_eq!(buf.download(&Stream::null(&ctx)).unwrap(), [7, 8, 9]);
    assert!(ctx.fault().is_none());
}

#[test]
fn a_kernel_fault_poisons_the_device_until_reset() {
    through_rocm_rs();
    through_context();
}
