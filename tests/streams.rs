//! The GPU-resident API on the emulator: streams and events (cross-stream ordering), views
//! (validation, sub-ranges, raw pointers, row strides), capture-safe launches (capture, replay with
//! new data, forbidden calls), no host round trips in the launch path, and dropping everything
//! while work is in flight.
//!
//! Every test takes `LOCK`: a global-mode capture forbids allocations in all threads of the
//! process, so it must not overlap the other tests of this binary.

use std::ffi::c_void;
use std::sync::Mutex;

use amdgpu_emu::hip as emu;
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::quant::{GroupedQuantizedWeights, QuantizedActivations, QuantizedWeights};
use fp8gemm::reference::{self, contiguous_m_indices};
use fp8gemm::{
    ActivationsView, CaptureMode, Context, DeviceActivations, DeviceBuffer, DeviceGroupedWeights, DeviceSlice, DeviceSliceMut, DeviceWeights, Error, Event,
    GroupedWeightsView, OutputViewMut, Stream, WeightsView, fp8_gemm_nt, m_grouped_fp8_gemm_nt_contiguous, m_grouped_fp8_gemm_nt_masked,
};
use half::bf16;
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::StandardNormal;

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn randn(count: usize, rng: &mut StdRng) -> Vec<f32> {
    (0..count).map(|_| bf16::from_f32(rng.sample::<f32, _>(StandardNormal)).to_f32()).collect()
}

fn qa(m: usize, k: usize, seed: u64) -> QuantizedActivations<E4M3Fnuz> {
    QuantizedActivations::quantize(&randn(m * k, &mut StdRng::seed_from_u64(seed)), m, k).unwrap()
}

fn qb(n: usize, k: usize, seed: u64) -> QuantizedWeights<E4M3Fnuz> {
    QuantizedWeights::quantize(&randn(n * k, &mut StdRng::seed_from_u64(seed)), n, k).unwrap()
}

/// Element-wise check against the CPU reference of the same quantized operands (so no FP8 error
/// is involved): the kernels and the reference sum the same FP32 products in different orders,
/// so an element may round to the neighbouring BF16 (one ulp, at most 2⁻⁷ relative) plus FP32
/// reassociation error (tiny against the output's magnitude).
#[track_caller]
fn assert_close(got: &[bf16], want: &[bf16], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let scale = want.iter().map(|w| w.to_f32().abs()).fold(0.0f32, f32::max).max(1e-30);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (g.to_f32(), w.to_f32());
        let bound = w.abs() * 2f32.powi(-7) + scale * 1e-5;
        assert!((g - w).abs() <= bound, "{what}: element {i}: got {g}, want {w} (bound {bound})");
    }
}

fn want_dense(a: &QuantizedActivations<E4M3Fnuz>, b: &QuantizedWeights<E4M3Fnuz>) -> Vec<bf16> {
    let mut want = vec![bf16::ZERO; a.m * b.n];
    reference::fp8_gemm_nt(a, b, &mut want).unwrap();
    want
}

fn shape_err(e: Error) -> (&'static str, String) {
    match e {
        Error::Shape { arg, expected, .. } => (arg, expected),
        other => panic!("expected a shape error, got {other}"),
    }
}

#[test]
fn view_constructors_validate_every_argument() {
    let _g = lock();
    let ctx = Context::new().unwrap();
    let data = ctx.alloc_zeroed::<u8>(4 * 256).unwrap();
    let scales = ctx.alloc_zeroed::<f32>(8).unwrap();

    // Sub-ranges of buffers.
    assert_eq!(data.slice(256..512).unwrap().len(), 256);
    assert_eq!(data.slice(..=9).unwrap().len(), 10);
    assert_eq!(data.slice(1024..).unwrap().len(), 0);
    assert_eq!(data.slice(256..512).unwrap().device_ptr().addr(), data.device_ptr().addr() + 256);
    assert_eq!(shape_err(data.slice(0..1025).unwrap_err()).0, "range");
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = data.slice(5..4).unwrap_err();
    assert_eq!(shape_err(reversed).0, "range");
    assert_eq!(shape_err(data.as_slice().sub(1000, 25).unwrap_err()).0, "range");
    assert_eq!(shape_err(data.as_slice().sub(usize::MAX, 2).unwrap_err()).0, "range");

    // Raw pointers: null, misaligned, wrapping.
    // SAFETY (all from_raw calls below): every accepted view is dropped unused.
    unsafe {
        assert!(DeviceSlice::<f32>::from_raw(0, 0).is_ok());
        assert_eq!(shape_err(DeviceSlice::<f32>::from_raw(0, 1).unwrap_err()), ("ptr", "a non-null device pointer".into()));
        assert!(shape_err(DeviceSlice::<f32>::from_raw(0x1002, 1).unwrap_err()).1.contains("aligned to 4"));
        assert!(shape_err(DeviceSliceMut::<bf16>::from_raw(u64::MAX - 1, 2).unwrap_err()).1.contains("64-bit address space"));
        assert_eq!(shape_err(DeviceSlice::<f32>::from_raw(0x1000, usize::MAX).unwrap_err()).0, "ptr");
    }

    // Activations: row stride, data, scales, overflow.
    let (d, s) = (data.as_slice(), scales.as_slice());
    assert!(ActivationsView::<E4M3Fnuz>::new(d, s, 4, 256).is_ok());
    assert!(ActivationsView::<E4M3Fnuz>::with_row_stride(d, s, 3, 256, 384).is_ok(), "2·384 + 256 = 1024 bytes");
    let e = ActivationsView::<E4M3Fnuz>::with_row_stride(d, s, 4, 256, 384).unwrap_err();
    assert!(matches!(&e, Error::Shape { arg: "a", actual, .. } if actual == "1024 elements"), "{e}");
    assert_eq!(shape_err(ActivationsView::<E4M3Fnuz>::with_row_stride(d, s, 4, 256, 255).unwrap_err()).0, "lda");
    assert!(shape_err(ActivationsView::<E4M3Fnuz>::new(d, scales.slice(..7).unwrap(), 4, 256).unwrap_err()).1.contains("scales of at least 8"));
    assert!(shape_err(ActivationsView::<E4M3Fnuz>::new(d, s, 5, 256).unwrap_err()).1.contains("data of at least 1280"));
    assert!(shape_err(ActivationsView::<E4M3Fnuz>::new(d, s, usize::MAX, 256).unwrap_err()).1.contains("fit in usize"));
    assert!(ActivationsView::<E4M3Fnuz>::new(d, s, 0, 256).is_ok(), "no rows need no memory");

    // Weights and grouped weights.
    assert!(WeightsView::<E4M3Fnuz>::new(d, s, 4, 256).is_ok());
    assert!(shape_err(WeightsView::<E4M3Fnuz>::new(d, s, 8, 256).unwrap_err()).1.contains("data of at least 2048"));
    assert!(shape_err(WeightsView::<E4M3Fnuz>::new(d, scales.slice(..1).unwrap(), 4, 256).unwrap_err()).1.contains("scales of at least 2"));
    assert!(shape_err(WeightsView::<E4M3Fnuz>::new(d, s, usize::MAX, usize::MAX).unwrap_err()).1.contains("fit in usize"));
    assert!(GroupedWeightsView::<E4M3Fnuz>::new(d, s, 2, 2, 256).is_ok());
    assert!(shape_err(GroupedWeightsView::<E4M3Fnuz>::new(d, s, 3, 2, 256).unwrap_err()).1.contains("data of at least 1536"));
    assert!(shape_err(GroupedWeightsView::<E4M3Fnuz>::new(d, scales.slice(..7).unwrap(), 8, 1, 128).unwrap_err()).1.contains("scales of at least 8"));
    assert!(shape_err(GroupedWeightsView::<E4M3Fnuz>::new(d, s, usize::MAX, 2, 128).unwrap_err()).1.contains("fit in usize"));

    // Outputs.
    let mut out = ctx.alloc_zeroed::<bf16>(64).unwrap();
    assert!(OutputViewMut::with_row_stride(out.as_slice_mut(), 3, 16, 24).is_ok());
    assert_eq!(shape_err(OutputViewMut::with_row_stride(out.as_slice_mut(), 3, 16, 8).unwrap_err()).0, "ldd");
    assert!(shape_err(OutputViewMut::with_row_stride(out.as_slice_mut(), 4, 16, 24).unwrap_err()).1.contains("data of at least 88"));
    assert!(shape_err(OutputViewMut::new(out.as_slice_mut(), usize::MAX, 2).unwrap_err()).1.contains("fit in usize"));
}

#[test]
fn entry_points_check_views_against_the_problem_and_kernels() {
    let _g = lock();
    let ctx = Context::new().unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let (m, n, k) = (4, 128, 256);
    let a = DeviceActivations::upload(&ctx, &qa(m, k, 1)).unwrap();
    let b = DeviceWeights::upload(&ctx, &qb(n, k, 2)).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(m * (n + 8)).unwrap();
    // An output view of the wrong shape.
    let e = fp8_gemm_nt(&stream, &a, &b, OutputViewMut::new(d.as_slice_mut(), m, n + 4).unwrap()).unwrap_err();
    assert!(matches!(&e, Error::Shape { arg: "d", .. }), "{e}");
    // A slice of the wrong length.
    let e = fp8_gemm_nt(&stream, &a, &b, d.slice_mut(..m * n + 1).unwrap()).unwrap_err();
    assert!(matches!(&e, Error::Shape { arg: "d", .. }), "{e}");
    // ldd not a multiple of 4 (the kernel stores 4 columns at once).
    let e = fp8_gemm_nt(&stream, &a, &b, OutputViewMut::with_row_stride(d.as_slice_mut(), m, n, n + 2).unwrap()).unwrap_err();
    assert_eq!(shape_err(e).0, "ldd");
    // lda not a multiple of 16.
    let wide = ctx.alloc_zeroed::<u8>(m * (k + 8)).unwrap();
    let sc = ctx.alloc_zeroed::<f32>(m * 2).unwrap();
    let av = ActivationsView::<E4M3Fnuz>::with_row_stride(wide.as_slice(), sc.as_slice(), m, k, k + 8).unwrap();
    let e = fp8_gemm_nt(&stream, av.clone(), &b, d.slice_mut(..m * n).unwrap()).unwrap_err();
    assert_eq!(shape_err(e).0, "lda");
    // The grouped kernels need contiguous rows.
    let gb = DeviceGroupedWeights::upload(&ctx, &GroupedQuantizedWeights::quantize(&vec![0.5f32; n * k], 1, n, k).unwrap()).unwrap();
    let mask = ctx.upload(&[1i32]).unwrap();
    let e = m_grouped_fp8_gemm_nt_masked(&stream, av, &gb, d.slice_mut(..m * n).unwrap(), &mask, 1).unwrap_err();
    assert_eq!(shape_err(e).0, "lda");
    let e = m_grouped_fp8_gemm_nt_masked(&stream, &a, &gb, OutputViewMut::with_row_stride(d.as_slice_mut(), m, n, n + 8).unwrap(), &mask, 1).unwrap_err();
    assert_eq!(shape_err(e).0, "ldd");
    // A view of another context's buffer, and a stream of another context.
    let other = Context::new().unwrap();
    let foreign = other.alloc_zeroed::<bf16>(m * n).unwrap();
    let mut foreign_mut = foreign;
    let e = fp8_gemm_nt(&stream, &a, &b, &mut foreign_mut).unwrap_err();
    assert!(matches!(e, Error::ForeignBuffer { arg: "d" }), "{e}");
    let other_stream = Stream::new(&other).unwrap();
    let e = fp8_gemm_nt(&other_stream, &a, &b, d.slice_mut(..m * n).unwrap()).unwrap_err();
    assert!(matches!(e, Error::ForeignBuffer { arg: "a" }), "{e}");
}

/// A is the first `k` columns of a wider matrix (row stride `k + 128`), taken from a sub-range of
/// a bigger buffer; D is written into every other 4-column group of a wider output (row stride
/// `n + 12`) through a raw-pointer view; the padding columns keep their contents.
#[test]
fn strided_sub_range_and_raw_views_compute_the_gemm() {
    let _g = lock();
    let ctx = Context::new().unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let (m, n, k) = (70, 132, 256);
    let (lda, ldd) = (k + 128, n + 12);
    let a = qa(m, k, 11);
    let b = qb(n, k, 12);
    // Wide A at an offset of 4096 bytes into its buffer: the padding holds garbage (0x7f bytes,
    // large FP8 values) that must not leak into the result.
    let offset = 4096;
    let mut wide = vec![0x7fu8; offset + m * lda];
    for r in 0..m {
        wide[offset + r * lda..offset + r * lda + k].copy_from_slice(fp8gemm::fp8::as_bits(&a.data[r * k..(r + 1) * k]));
    }
    let wide = ctx.upload(&wide).unwrap();
    let sfa = ctx.upload(&a.scales).unwrap();
    let db = DeviceWeights::upload(&ctx, &b).unwrap();
    let sentinel = bf16::from_f32(-777.0);
    let out = ctx.upload(&vec![sentinel; m * ldd]).unwrap();

    let av = ActivationsView::<E4M3Fnuz>::with_row_stride(wide.slice(offset..).unwrap(), sfa.as_slice(), m, k, lda).unwrap();
    // SAFETY: `out` is a live allocation of m·ldd bf16 of this context, not otherwise accessed
    // until the stream has been synchronized below.
    let raw = unsafe { DeviceSliceMut::<bf16>::from_raw(out.device_ptr().addr(), m * ldd) }.unwrap();
    let dv = OutputViewMut::with_row_stride(raw, m, n, ldd).unwrap();
    fp8_gemm_nt(&stream, av, &db, dv).unwrap();
    let got = out.download(&stream).unwrap();
    let want = want_dense(&a, &b);
    for r in 0..m {
        assert_close(&got[r * ldd..r * ldd + n], &want[r * n..(r + 1) * n], &format!("row {r}"));
        assert!(got[r * ldd + n..(r + 1) * ldd].iter().all(|&x| x == sentinel), "row {r}: padding columns written");
    }
}

/// Stream `producer` computes D; stream `consumer` copies D elsewhere. Without an event the copy
/// sees the old contents (the emulator runs each stream's queue only when it is waited for), with
/// `record` + `wait` it sees the GEMM's result.
#[test]
fn events_order_work_across_streams() {
    let _g = lock();
    let ctx = Context::new().unwrap();
    let (producer, consumer) = (Stream::new(&ctx).unwrap(), Stream::new(&ctx).unwrap());
    let (m, n, k) = (64, 128, 128);
    let (a, b) = (qa(m, k, 21), qb(n, k, 22));
    let da = DeviceActivations::upload(&ctx, &a).unwrap();
    let db = DeviceWeights::upload(&ctx, &b).unwrap();
    let want = want_dense(&a, &b);
    let event = Event::new(&ctx).unwrap();

    for with_event in [false, true] {
        let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
        let mut copy = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
        fp8_gemm_nt(&producer, &da, &db, &mut d).unwrap();
        if with_event {
            event.record(&producer).unwrap();
            assert!(!event.is_complete().unwrap(), "the GEMM has not run yet");
            consumer.wait(&event).unwrap();
        }
        copy.as_slice_mut().copy_from_device(&consumer, d.as_slice()).unwrap();
        let seen = copy.download(&consumer).unwrap();
        if with_event {
            assert_close(&seen, &want, "consumer after the event");
            assert!(event.is_complete().unwrap());
        } else {
            assert!(seen.iter().all(|&x| x == bf16::ZERO), "the consumer saw the producer's result without an event");
        }
        producer.synchronize().unwrap();
        assert_close(&d.download(&producer).unwrap(), &want, "producer");
    }
}

/// The launch path allocates, frees, copies and synchronizes nothing: the emulator's per-stream
/// and per-thread counters do not move across a dense and two grouped GEMMs.
#[test]
fn launch_paths_make_no_host_round_trip() {
    let _g = lock();
    let ctx = Context::new().unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let (m, n, k, groups) = (128, 128, 256, 2);
    let da = DeviceActivations::upload(&ctx, &qa(m * groups, k, 31)).unwrap();
    let db = DeviceWeights::upload(&ctx, &qb(n, k, 32)).unwrap();
    let gb =
        DeviceGroupedWeights::upload(&ctx, &GroupedQuantizedWeights::quantize(&randn(groups * n * k, &mut StdRng::seed_from_u64(33)), groups, n, k).unwrap())
            .unwrap();
    let idx = ctx.upload(&contiguous_m_indices(&[100, 128], 128)).unwrap();
    let mask = ctx.upload(&[60i32, 128]).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(m * groups * n).unwrap();

    let raw = stream.as_raw().cast();
    let (s0, t0) = (emu::stream_stats(raw).unwrap(), emu::thread_stats());
    fp8_gemm_nt(&stream, &da, &db, &mut d).unwrap();
    m_grouped_fp8_gemm_nt_contiguous(&stream, &da, &gb, &mut d, &idx).unwrap();
    m_grouped_fp8_gemm_nt_masked(&stream, &da, &gb, &mut d, &mask, 64).unwrap();
    let (s1, t1) = (emu::stream_stats(raw).unwrap(), emu::thread_stats());
    assert_eq!(s1.launches - s0.launches, 3);
    assert_eq!(s1.host_copies(), s0.host_copies(), "host copies in the launch path");
    assert_eq!(s1.synchronizations, s0.synchronizations, "stream synchronizations in the launch path");
    assert_eq!(t1, t0, "allocations, frees, device synchronizations or synchronous copies in the launch path");
    stream.synchronize().unwrap();
}

/// Captures dense → contiguous grouped → masked grouped GEMMs (the grouped ones reading device
/// `m_indices` / `masked_m`), replays the graph three times with new activations and new masked
/// counts written into the same buffers, and checks every replay against the references.
#[test]
fn capture_once_replay_with_new_data() {
    let _g = lock();
    let ctx = Context::new().unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let (n, k, groups) = (128, 256, 2);
    let rows = 256;
    let b = qb(n, k, 41);
    let gq = GroupedQuantizedWeights::<E4M3Fnuz>::quantize(&randn(groups * n * k, &mut StdRng::seed_from_u64(42)), groups, n, k).unwrap();
    let db = DeviceWeights::upload(&ctx, &b).unwrap();
    let gb = DeviceGroupedWeights::upload(&ctx, &gq).unwrap();
    let idx_host = contiguous_m_indices(&[100, 128], 128);
    assert_eq!(idx_host.len(), rows);
    let idx = ctx.upload(&idx_host).unwrap();
    // Input buffers, rewritten before every replay.
    let mut a_data = ctx.alloc_zeroed::<u8>(rows * k).unwrap();
    let mut a_scales = ctx.alloc_zeroed::<f32>(rows * (k / 128)).unwrap();
    let mut mask = ctx.alloc_zeroed::<i32>(groups).unwrap();
    let mut d1 = ctx.alloc_zeroed::<bf16>(rows * n).unwrap();
    let mut d2 = ctx.alloc_zeroed::<bf16>(rows * n).unwrap();
    let mut d3 = ctx.alloc_zeroed::<bf16>(rows * n).unwrap();

    // Thread-local: a global-mode capture would forbid the allocations of the other tests of
    // this binary running at the same time (HIP semantics, modelled by the emulator).
    stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
    {
        let av = ActivationsView::<E4M3Fnuz>::new(a_data.as_slice(), a_scales.as_slice(), rows, k).unwrap();
        fp8_gemm_nt(&stream, av.clone(), &db, &mut d1).unwrap();
        m_grouped_fp8_gemm_nt_contiguous(&stream, av.clone(), &gb, &mut d2, &idx).unwrap();
        m_grouped_fp8_gemm_nt_masked(&stream, av, &gb, &mut d3, &mask, 64).unwrap();
    }
    let graph = stream.end_capture().unwrap();
    let exec = graph.instantiate().unwrap();
    drop(graph);
    assert_eq!(emu::stream_stats(stream.as_raw().cast()).unwrap().launches, 0, "nothing ran during the capture");

    for (round, counts) in [[128i32, 0], [5, 77], [200, -3]].into_iter().enumerate() {
        let a = qa(rows, k, 100 + round as u64);
        a_data.copy_from_host(&stream, fp8gemm::fp8::as_bits(&a.data)).unwrap();
        a_scales.copy_from_host(&stream, &a.scales).unwrap();
        mask.copy_from_host(&stream, &counts).unwrap();
        for d in [&mut d1, &mut d2, &mut d3] {
            d.as_slice_mut().zero(&stream).unwrap();
        }
        // SAFETY: every buffer the captured launches use is alive (owned by this test).
        unsafe { exec.launch(&stream) }.unwrap();
        let (g1, g2, g3) = (d1.download(&stream).unwrap(), d2.download(&stream).unwrap(), d3.download(&stream).unwrap());

        assert_close(&g1, &want_dense(&a, &b), &format!("replay {round}: dense"));
        let mut want2 = vec![bf16::ZERO; rows * n];
        reference::m_grouped_fp8_gemm_nt_contiguous(&a, &gq, &idx_host, &mut want2).unwrap();
        assert_close(&g2, &want2, &format!("replay {round}: contiguous"));
        let clamped: Vec<i32> = counts.iter().map(|&c| c.clamp(0, (rows / groups) as i32)).collect();
        let mut want3 = vec![bf16::ZERO; rows * n];
        reference::m_grouped_fp8_gemm_nt_masked(&a, &gq, &clamped, &mut want3).unwrap();
        assert_close(&g3, &want3, &format!("replay {round}: masked"));
    }
    assert_eq!(emu::stream_stats(stream.as_raw().cast()).unwrap().graph_launches, 3);
}

/// During a capture, allocation, synchronous upload, host copies and synchronization fail with
/// typed errors, and the capture is invalidated (its end fails).
#[test]
fn capture_rejects_forbidden_calls() {
    let _g = lock();
    let ctx = Context::new().unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let mut buf = ctx.alloc_zeroed::<f32>(16).unwrap();
    type Call<'a> = Box<dyn Fn(&mut DeviceBuffer<f32>) -> Error + 'a>;
    let calls: Vec<(&str, Call)> = vec![
        ("alloc_zeroed", Box::new(|_| ctx.alloc_zeroed::<f32>(4).unwrap_err())),
        ("upload", Box::new(|_| ctx.upload(&[1.0f32]).unwrap_err())),
        ("synchronize", Box::new(|_| ctx.synchronize().unwrap_err())),
        ("stream.synchronize", Box::new(|_| stream.synchronize().unwrap_err())),
        ("download", Box::new(|b| b.download(&stream).unwrap_err())),
        ("copy_from_host", Box::new(|b| b.copy_from_host(&stream, &[0.0; 16]).unwrap_err())),
    ];
    for (what, call) in &calls {
        stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
        buf.as_slice_mut().zero(&stream).unwrap();
        let e = call(&mut buf);
        match (&e, *what) {
            (Error::Capturing { .. }, "download" | "copy_from_host") => {
                // Refused before touching the stream: the capture is still valid.
                assert!(stream.is_capturing().unwrap());
                stream.end_capture().unwrap();
                continue;
            }
            (Error::Hip { name, .. }, _) => assert_eq!(name, "hipErrorStreamCaptureUnsupported", "{what}"),
            _ => panic!("{what}: unexpected {e}"),
        }
        let e = stream.end_capture().err().unwrap_or_else(|| panic!("{what}: the capture survived"));
        assert!(matches!(&e, Error::Hip { name, .. } if name == "hipErrorStreamCaptureInvalidated"), "{what}: {e}");
    }
    // Nothing captured ran; the stream works normally afterwards.
    buf.copy_from_host(&stream, &[2.0; 16]).unwrap();
    assert_eq!(buf.download(&stream).unwrap(), vec![2.0; 16]);
}

/// An engine-owned stream and engine-owned memory: the library's `Stream`, views and `Context` are
/// all dropped while the GEMM is still queued; the context's drop waits for the device before
/// unloading the code, so the engine later finds the correct result (a module unloaded under a
/// queued launch fails it: see the emulator's `queued_launches_run_later_and_need_their_module`).
#[test]
fn dropping_everything_while_work_is_in_flight() {
    let _g = lock();
    let (m, n, k) = (64, 128, 256);
    let (a, b) = (qa(m, k, 51), qb(n, k, 52));
    let mut raw_stream = std::ptr::null_mut();
    let alloc = |bytes: usize| {
        let mut p = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        assert_eq!(unsafe { emu::hipMalloc(&mut p, bytes) }, emu::hipSuccess);
        p as u64
    };
    let (pa, psa, pb, psb, pd) = (alloc(m * k), alloc(m * 8), alloc(n * k), alloc(8 * 2), alloc(m * n * 2));
    let upload = |dst: u64, bytes: &[u8]| {
        // SAFETY: `dst` is an allocation of at least `bytes.len()` bytes.
        assert_eq!(unsafe { emu::hipMemcpy(dst as *mut c_void, bytes.as_ptr().cast(), bytes.len(), emu::hipMemcpyHostToDevice) }, 0);
    };
    upload(pa, fp8gemm::fp8::as_bits(&a.data));
    upload(psa, &a.scales.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
    upload(pb, fp8gemm::fp8::as_bits(&b.data));
    upload(psb, &b.scales.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { emu::hipStreamCreateWithFlags(&mut raw_stream, emu::hipStreamNonBlocking) }, 0);
    {
        let ctx = Context::new().unwrap();
        // SAFETY: the engine's stream and allocations outlive every use below (freed at the end,
        // after the stream is synchronized).
        unsafe {
            let stream = Stream::from_raw(&ctx, raw_stream.cast());
            let av = ActivationsView::<E4M3Fnuz>::new(DeviceSlice::from_raw(pa, m * k).unwrap(), DeviceSlice::from_raw(psa, m * 2).unwrap(), m, k).unwrap();
            let bv = WeightsView::<E4M3Fnuz>::new(DeviceSlice::from_raw(pb, n * k).unwrap(), DeviceSlice::from_raw(psb, 2).unwrap(), n, k).unwrap();
            let dv = DeviceSliceMut::<bf16>::from_raw(pd, m * n).unwrap();
            fp8_gemm_nt(&stream, av, bv, dv).unwrap();
            assert_eq!(emu::hipStreamQuery(raw_stream), 600, "the launch is still queued");
        }
        // `stream` (borrowed: not destroyed), the views and `ctx` are gone here.
    }
    // The engine's stream is live.
    assert_eq!(emu::hipStreamSynchronize(raw_stream), 0, "{:?}", emu::last_launch_error());
    let mut got = vec![bf16::ZERO; m * n];
    // SAFETY: `got` holds m·n bf16.
    assert_eq!(unsafe { emu::hipMemcpy(got.as_mut_ptr().cast(), pd as *const c_void, m * n * 2, emu::hipMemcpyDeviceToHost) }, 0);
    assert_close(&got, &want_dense(&a, &b), "engine-owned output");
    for p in [pa, psa, pb, psb, pd] {
        assert_eq!(emu::hipFree(p as *mut c_void), 0);
    }
    assert_eq!(emu::hipStreamDestroy(raw_stream), 0);

    // Owned buffers: dropped (freed) while a GEMM using them is queued on a stream. The free
    // synchronizes first, so the GEMM still completes correctly into an output that survives.
    let ctx = Context::new().unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
    {
        let da = DeviceActivations::upload(&ctx, &a).unwrap();
        let db = DeviceWeights::upload(&ctx, &b).unwrap();
        fp8_gemm_nt(&stream, &da, &db, &mut d).unwrap();
    }
    assert_close(&d.download(&stream).unwrap(), &want_dense(&a, &b), "after dropping the inputs");
    // A stream-ordered free needs no device synchronization.
    let t0 = emu::thread_stats();
    let tmp = ctx.alloc_zeroed::<f32>(16).unwrap();
    // SAFETY: nothing else uses `tmp`.
    unsafe { tmp.free_async(&stream) }.unwrap();
    stream.synchronize().unwrap();
    let t1 = emu::thread_stats();
    assert_eq!(t1.device_synchronizations, t0.device_synchronizations);
    assert_eq!(t1.frees - t0.frees, 1);
}

/// Device state comes from the device; the caller's current device is restored; the workspace
/// size query and allocation.
#[test]
fn per_device_state_and_workspace() {
    let _g = lock();
    let ctx = Context::new().unwrap();
    let props = emu::device_properties();
    assert_eq!(ctx.compute_units(), props.multiProcessorCount as u32);
    assert_eq!(ctx.arch(), fp8gemm::codeobj::Arch::Gfx942);
    assert_eq!(ctx.device(), 0);
    assert_eq!(ctx.backend(), fp8gemm::Backend::Emulator);
    assert!(matches!(Context::on_device(1).unwrap_err(), Error::Shape { arg: "device", .. }));
    let mut dev = -1;
    // SAFETY: valid out-pointer.
    assert_eq!(unsafe { emu::hipGetDevice(&mut dev) }, 0);
    assert_eq!(dev, 0, "the calling thread's current device is unchanged");

    // With two (emulated) devices: a thread whose current device is 1 uses a context of device 0;
    // every operation switches to device 0 and back.
    emu::set_device_count(2);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        assert_eq!(emu::hipSetDevice(1), 0);
        let ctx1 = Context::on_device(1).unwrap();
        assert_eq!(ctx1.device(), 1);
        let stream = Stream::new(&ctx).unwrap();
        let mut buf = ctx.alloc_zeroed::<f32>(4).unwrap();
        buf.copy_from_host(&stream, &[1.0; 4]).unwrap();
        assert_eq!(buf.download(&stream).unwrap(), vec![1.0; 4]);
        drop((buf, stream, ctx1));
        let mut dev = -1;
        // SAFETY: valid out-pointer.
        assert_eq!(unsafe { emu::hipGetDevice(&mut dev) }, 0);
        assert_eq!(dev, 1, "the caller's current device was not restored");
    }));
    emu::set_device_count(1);
    assert_eq!(emu::hipSetDevice(0), 0);
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }

    // Large M fills the device without splitting K; decode-sized M splits (tests/gemm_splitk.rs).
    assert_eq!(fp8gemm::workspace_floats(4096, 7168, 2048, &fp8gemm::Overrides::NONE), 0, "M = 4096 does not split K");
    let need = fp8gemm::workspace_floats(128, 2112, 7168, &fp8gemm::Overrides::NONE);
    assert!(need > 0, "128 × 2112 × 7168 splits K");
    let mut ws = fp8gemm::Workspace::for_problems(&ctx, &[(128, 2112, 7168), (4096, 7168, 2048)], &fp8gemm::Overrides::NONE).unwrap();
    assert!(ws.fits(4096, 7168, 2048, &fp8gemm::Overrides::NONE) && ws.fits(128, 2112, 7168, &fp8gemm::Overrides::NONE));
    let mut big = fp8gemm::Workspace::new(&ctx, 1024).unwrap();
    assert_eq!((big.len(), ws.len()), (1024, need));
    assert!(!big.fits(128, 2112, 7168, &fp8gemm::Overrides::NONE));
    assert_eq!(big.as_slice_mut().len(), 1024);
    assert_eq!(ws.as_slice_mut().len(), need);
    let mut empty = fp8gemm::Workspace::new(&ctx, 0).unwrap();
    assert!(empty.is_empty() && empty.as_slice_mut().is_empty());
    assert!(matches!(fp8gemm::Workspace::new(&ctx, usize::MAX).unwrap_err(), Error::Shape { arg: "len", .. }));
}

/// The MoE-style chain on the device, captured once: bf16 `x` → quantize → dense GEMM (gate‖up)
/// → fused silu·mul + quantize → masked grouped GEMM (down), replayed with new `x` and new
/// `masked_m`; every stage is checked against the CPU (bit for bit for the quantizations, element
/// bounds for the GEMMs, each stage fed the device's previous stage).
#[test]
fn capture_quantize_gemm_quantize_grouped_gemm_and_replay() {
    use fp8gemm::{quantize_activations, silu_mul_quantize_activations};
    let _g = lock();
    let ctx = Context::new().unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let (m, k, i, groups) = (128, 256, 128, 2);
    let (n_up, n_down, m_max) = (2 * i, 128, m / groups);
    let w1 = qb(n_up, k, 61);
    let w2 = GroupedQuantizedWeights::<E4M3Fnuz>::quantize(&randn(groups * n_down * i, &mut StdRng::seed_from_u64(62)), groups, n_down, i).unwrap();
    let (dw1, dw2) = (DeviceWeights::upload(&ctx, &w1).unwrap(), DeviceGroupedWeights::upload(&ctx, &w2).unwrap());
    let mut x = ctx.alloc_zeroed::<bf16>(m * k).unwrap();
    let mut mask = ctx.alloc_zeroed::<i32>(groups).unwrap();
    let mut qa = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, m, k).unwrap();
    let mut h = ctx.alloc_zeroed::<bf16>(m * n_up).unwrap();
    let mut q2 = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, m, i).unwrap();
    let mut out = ctx.alloc_zeroed::<bf16>(m * n_down).unwrap();

    stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
    quantize_activations(&stream, &x, &mut qa).unwrap();
    fp8_gemm_nt(&stream, &qa, &dw1, &mut h).unwrap();
    silu_mul_quantize_activations(&stream, &h, &mut q2).unwrap();
    m_grouped_fp8_gemm_nt_masked(&stream, &q2, &dw2, &mut out, &mask, m_max).unwrap();
    let exec = stream.end_capture().unwrap().instantiate().unwrap();

    for (round, counts) in [[64i32, 64], [13, 50], [0, 99]].into_iter().enumerate() {
        let xs: Vec<bf16> = randn(m * k, &mut StdRng::seed_from_u64(200 + round as u64)).into_iter().map(bf16::from_f32).collect();
        x.copy_from_host(&stream, &xs).unwrap();
        mask.copy_from_host(&stream, &counts).unwrap();
        out.as_slice_mut().zero(&stream).unwrap();
        let before = emu::stream_stats(stream.as_raw().cast()).unwrap();
        // SAFETY: every buffer the captured work uses is alive.
        unsafe { exec.launch(&stream) }.unwrap();
        let after = emu::stream_stats(stream.as_raw().cast()).unwrap();
        assert_eq!((after.launches - before.launches, after.host_copies() - before.host_copies()), (4, 0), "replay {round}");
        stream.synchronize().unwrap();

        let what = |s: &str| format!("replay {round}: {s}");
        let qa_dev = qa.download(&stream).unwrap();
        let qa_cpu = QuantizedActivations::<E4M3Fnuz>::quantize(&xs, m, k).unwrap();
        assert_eq!(fp8gemm::fp8::as_bits(&qa_dev.data), fp8gemm::fp8::as_bits(&qa_cpu.data), "{}", what("quantize values"));
        assert_eq!(qa_dev.scales.iter().map(|s| s.to_bits()).collect::<Vec<_>>(), qa_cpu.scales.iter().map(|s| s.to_bits()).collect::<Vec<_>>());
        let h_dev = h.download(&stream).unwrap();
        assert_close(&h_dev, &want_dense(&qa_cpu, &w1), &what("gate_up GEMM"));
        let q2_dev = q2.download(&stream).unwrap();
        let q2_cpu = QuantizedActivations::<E4M3Fnuz>::quantize_silu_mul(&h_dev, m, i).unwrap();
        assert_eq!(fp8gemm::fp8::as_bits(&q2_dev.data), fp8gemm::fp8::as_bits(&q2_cpu.data), "{}", what("silu·mul quantize"));
        let clamped: Vec<i32> = counts.iter().map(|&c| c.clamp(0, m_max as i32)).collect();
        let mut want = vec![bf16::ZERO; m * n_down];
        reference::m_grouped_fp8_gemm_nt_masked(&q2_cpu, &w2, &clamped, &mut want).unwrap();
        assert_close(&out.download(&stream).unwrap(), &want, &what("down GEMM"));
    }
}

/// The quantization kernels write into views: sub-ranges of one engine buffer (values and
/// scales side by side), bit-identical to the CPU recipe, and the GEMM reads them back as an
/// `ActivationsView`; the writable views validate their extents.
#[test]
fn quantize_into_views_of_engine_memory() {
    use fp8gemm::{ActivationsViewMut, WeightsViewMut, quantize_activations, quantize_weights};
    let _g = lock();
    let ctx = Context::new().unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let (m, k, n) = (48, 256, 128);
    let xs: Vec<bf16> = randn(m * k, &mut StdRng::seed_from_u64(71)).into_iter().map(bf16::from_f32).collect();
    let ws: Vec<bf16> = randn(n * k, &mut StdRng::seed_from_u64(72)).into_iter().map(bf16::from_f32).collect();
    let x = ctx.upload(&xs).unwrap();
    let w = ctx.upload(&ws).unwrap();
    // One byte arena for both FP8 operands, one float arena for both scale sets.
    let mut bytes = ctx.alloc_zeroed::<u8>(m * k + n * k + 64).unwrap();
    let mut floats = ctx.alloc_zeroed::<f32>(m * 2 + 2 + 8).unwrap();
    // Views into the arenas (raw pointers: disjoint ranges of buffers this test keeps alive).
    let (ba, fa) = (bytes.device_ptr().addr(), floats.device_ptr().addr());
    // SAFETY: the ranges are inside `bytes` / `floats`, disjoint, and both buffers outlive the
    // stream synchronization below.
    let (qa_view, qb_view) = unsafe {
        (
            ActivationsViewMut::<E4M3Fnuz>::new(DeviceSliceMut::from_raw(ba, m * k).unwrap(), DeviceSliceMut::from_raw(fa, m * 2).unwrap(), m, k).unwrap(),
            WeightsViewMut::<E4M3Fnuz>::new(
                DeviceSliceMut::from_raw(ba + (m * k + 64) as u64, n * k).unwrap(),
                DeviceSliceMut::from_raw(fa + (m * 2 + 8) as u64 * 4, 2).unwrap(),
                n,
                k,
            )
            .unwrap(),
        )
    };
    assert_eq!((qa_view.as_view().m(), qa_view.as_view().lda()), (m, k));
    quantize_activations(&stream, &x, qa_view).unwrap();
    quantize_weights(&stream, &w, qb_view).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
    // SAFETY: as above.
    let (av, bv) = unsafe {
        (
            ActivationsView::<E4M3Fnuz>::new(DeviceSlice::from_raw(ba, m * k).unwrap(), DeviceSlice::from_raw(fa, m * 2).unwrap(), m, k).unwrap(),
            WeightsView::<E4M3Fnuz>::new(
                DeviceSlice::from_raw(ba + (m * k + 64) as u64, n * k).unwrap(),
                DeviceSlice::from_raw(fa + (m * 2 + 8) as u64 * 4, 2).unwrap(),
                n,
                k,
            )
            .unwrap(),
        )
    };
    fp8_gemm_nt(&stream, av, bv, &mut d).unwrap();
    let got_bytes = bytes.download(&stream).unwrap();
    let got_floats = floats.download(&stream).unwrap();
    let qa_cpu = QuantizedActivations::<E4M3Fnuz>::quantize(&xs, m, k).unwrap();
    let qb_cpu = QuantizedWeights::<E4M3Fnuz>::quantize(&ws, n, k).unwrap();
    assert_eq!(&got_bytes[..m * k], fp8gemm::fp8::as_bits(&qa_cpu.data));
    assert!(got_bytes[m * k..m * k + 64].iter().all(|&b| b == 0), "the gap between the views was written");
    assert_eq!(&got_bytes[m * k + 64..], fp8gemm::fp8::as_bits(&qb_cpu.data));
    assert_eq!(got_floats[..m * 2].iter().map(|s| s.to_bits()).collect::<Vec<_>>(), qa_cpu.scales.iter().map(|s| s.to_bits()).collect::<Vec<_>>());
    assert!(got_floats[m * 2..m * 2 + 8].iter().all(|&s| s == 0.0));
    assert_eq!(got_floats[m * 2 + 8..].iter().map(|s| s.to_bits()).collect::<Vec<_>>(), qb_cpu.scales.iter().map(|s| s.to_bits()).collect::<Vec<_>>());
    assert_close(&d.download(&stream).unwrap(), &want_dense(&qa_cpu, &qb_cpu), "GEMM of the quantized views");

    // Extent checks of the writable views.
    let e = ActivationsViewMut::<E4M3Fnuz>::new(bytes.slice_mut(..m * k - 1).unwrap(), floats.slice_mut(..m * 2).unwrap(), m, k).unwrap_err();
    assert!(shape_err(e).1.contains(&format!("data of at least {}", m * k)));
    let e = ActivationsViewMut::<E4M3Fnuz>::new(bytes.slice_mut(..m * k).unwrap(), floats.slice_mut(..m * 2 - 1).unwrap(), m, k).unwrap_err();
    assert!(shape_err(e).1.contains(&format!("scales of at least {}", m * 2)));
    let e = WeightsViewMut::<E4M3Fnuz>::new(bytes.slice_mut(..n * k).unwrap(), floats.slice_mut(..1).unwrap(), n, k).unwrap_err();
    assert!(shape_err(e).1.contains("scales of at least 2"));
    let e = WeightsViewMut::<E4M3Fnuz>::new(bytes.slice_mut(..1).unwrap(), floats.slice_mut(..2).unwrap(), usize::MAX, 2).unwrap_err();
    assert!(shape_err(e).1.contains("fit in usize"));
}

/// `Stream::alloc_zeroed` / `Stream::upload` allocate in stream order: no host round trip (the
/// emulator counts none), the zeroing and the copy are ordered before later work on the stream,
/// and a GEMM on the buffers gives the reference result. Forbidden while capturing.
#[test]
fn stream_ordered_allocation_and_upload() {
    let _g = lock();
    let ctx = Context::new().unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let (m, n, k) = (32, 128, 256);
    let (a, b) = (qa(m, k, 41), qb(n, k, 42));
    let db = DeviceWeights::upload(&ctx, &b).unwrap();
    let raw = stream.as_raw().cast();
    let (s0, t0) = (emu::stream_stats(raw).unwrap(), emu::thread_stats());
    let a_data = stream.upload(fp8gemm::fp8::as_bits(&a.data)).unwrap();
    let a_scales = stream.upload(&a.scales).unwrap();
    let zeros = stream.alloc_zeroed::<f32>(1000).unwrap();
    let mut d = stream.alloc_zeroed::<bf16>(m * n).unwrap();
    let view = ActivationsView::<E4M3Fnuz>::new(a_data.as_slice(), a_scales.as_slice(), m, k).unwrap();
    fp8_gemm_nt(&stream, view, &db, &mut d).unwrap();
    let (s1, t1) = (emu::stream_stats(raw).unwrap(), emu::thread_stats());
    assert_eq!(s1.synchronizations, s0.synchronizations, "stream synchronizations");
    assert_eq!((s1.host_to_device - s0.host_to_device, s1.fills - s0.fills), (2, 2), "two uploads and two zero fills, on the stream");
    assert_eq!(t1.device_synchronizations, t0.device_synchronizations, "device synchronizations");
    assert_eq!(t1.synchronous_transfers, t0.synchronous_transfers, "synchronous copies or memsets");
    let got = d.download(&stream).unwrap();
    assert_close(&got, &want_dense(&a, &b), "GEMM on stream-uploaded operands");
    let z = zeros.download(&stream).unwrap();
    assert!(z.iter().all(|&v| v.to_bits() == 0), "alloc_zeroed: every element zero");
    stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
    assert!(matches!(stream.alloc_zeroed::<f32>(8), Err(Error::Capturing { .. })));
    assert!(matches!(stream.upload(&[1f32; 8]), Err(Error::Capturing { .. })));
    let _ = stream.end_capture().unwrap();
    assert!(matches!(stream.alloc_zeroed::<f32>(usize::MAX), Err(Error::Shape { arg: "len", .. })));
}

/// A stream's selector overrides pin the configuration of its launches and nothing else's; an
/// override the problem cannot use is a typed error, not a fallback.
#[test]
fn stream_overrides_pin_the_tile_and_bad_ones_are_errors() {
    let _g = lock();
    let ctx = Context::new().unwrap();
    let (m, n, k) = (64, 256, 512);
    let (a, b) = (qa(m, k, 43), qb(n, k, 44));
    let (da, db) = (DeviceActivations::upload(&ctx, &a).unwrap(), DeviceWeights::upload(&ctx, &b).unwrap());
    let want = want_dense(&a, &b);
    for (bm, bn) in [(64, 64), (64, 128), (128, 128)] {
        let mut stream = Stream::new(&ctx).unwrap();
        stream.set_overrides(fp8gemm::Overrides::NONE.with_tile(bm, bn));
        let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
        let run = fp8_gemm_nt(&stream, &da, &db, &mut d).unwrap();
        let cfg = run.config.unwrap();
        assert_eq!((cfg.block_m, cfg.block_n), (bm, bn));
        assert_close(&d.download(&stream).unwrap(), &want, &format!("forced {bm}x{bn}"));
    }
    // Another stream is not affected, and an impossible tile fails with the config error.
    let mut stream = Stream::new(&ctx).unwrap();
    stream.set_overrides(fp8gemm::Overrides::NONE.with_tile(96, 96));
    let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
    let e = fp8_gemm_nt(&stream, &da, &db, &mut d).unwrap_err();
    assert!(e.to_string().contains("forced tile `96x96`"), "{e}");
    let plain = Stream::new(&ctx).unwrap();
    assert!(fp8_gemm_nt(&plain, &da, &db, &mut d).is_ok());
    assert_eq!(stream.overrides().tile, Some((96, 96)));
    assert_eq!(plain.overrides(), fp8gemm::Overrides::NONE);
}
