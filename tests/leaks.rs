//! Regression: every `Context` that launched a kernel leaked its code object (≈0.7 MiB with its
//! decode cache) for ever, because `hipModuleUnload` left the module's function handles — and
//! the code object they held — alive. Counted through the emulator's `live_objects`, which is
//! process-wide: one test in its own binary.
#![cfg(feature = "emu")]

use amdgpu_emu::hip as emu;
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::{ActivationsViewMut, Context, Event, Stream, quantize_activations};

#[test]
fn contexts_free_everything_they_made() {
    let (m, k) = (4, 128);
    let x: Vec<f32> = (0..m * k).map(|i| (i as f32 - 200.0) * 0.01).collect();
    // A first context loads the process-wide state (thread outcome of this thread, ...).
    let warm = || {
        let ctx = Context::new().unwrap();
        let stream = Stream::new(&ctx).unwrap();
        let xd = ctx.upload(&x).unwrap();
        let mut data = ctx.alloc_zeroed::<u8>(m * k).unwrap();
        let mut scales = ctx.alloc_zeroed::<f32>(m).unwrap();
        let out = ActivationsViewMut::<E4M3Fnuz>::new(data.as_slice_mut(), scales.as_slice_mut(), m, k).unwrap();
        quantize_activations(&stream, xd.as_slice(), out).unwrap();
        let e = Event::new(&ctx).unwrap();
        e.record(&stream).unwrap();
        stream.synchronize().unwrap();
        assert!(scales.download(&stream).unwrap().iter().all(|&s| s > 0.0), "the kernel ran");
    };
    warm();
    let base = emu::live_objects();
    for round in 0..30 {
        warm();
        assert_eq!(emu::live_objects(), base, "round {round}: something outlived its context");
    }
    assert_eq!((base.modules, base.functions, base.code_objects, base.streams, base.events, base.allocations), (0, 0, 0, 0, 0, 0));

    // A stream-ordered free that fails (here: the stream handle is stale) frees the buffer
    // synchronously instead of leaking it.
    let ctx = Context::new().unwrap();
    let mut raw = std::ptr::null_mut();
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { emu::hipStreamCreate(&mut raw) }, emu::hipSuccess);
    assert_eq!(emu::hipStreamDestroy(raw), emu::hipSuccess);
    // SAFETY (deliberately stale handle): the emulator reports a destroyed stream as an invalid
    // handle and never dereferences it.
    let stale = unsafe { Stream::from_raw(&ctx, raw.cast()) };
    let buf = ctx.alloc_zeroed::<f32>(256).unwrap();
    let allocations = emu::live_objects().allocations;
    // SAFETY: nothing uses the buffer.
    let err = unsafe { buf.free_async(&stale) }.unwrap_err();
    assert!(matches!(err, fp8gemm::Error::Hip { call: "hipFreeAsync", code: 400, .. }), "{err:?}");
    assert_eq!(emu::live_objects().allocations, allocations - 1, "freed, not leaked");
}
