//! The emulator's asynchronous stream model: lazy per-stream queues, cross-stream ordering by
//! events, the legacy null stream, per-stream counters, stream capture and graphs.
//!
//! Every test takes `LOCK`: a global-mode capture forbids allocations in every thread of the
//! process, so captures must not overlap the other tests of this binary.
#![allow(non_snake_case)]

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::Mutex;

use amdgpu_emu::hip::*;

mod common;
use common::hip_result::{err, ok};

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn malloc(size: usize) -> *mut c_void {
    let mut p = null_mut();
    // SAFETY: `p` is a valid out-pointer.
    ok(unsafe { hipMalloc(&mut p, size) });
    p
}

fn read_u32(src: *mut c_void, n: usize) -> Vec<u32> {
    let mut out = vec![0u32; n];
    // SAFETY: `out` is valid for n·4 bytes.
    ok(unsafe { hipMemcpy(out.as_mut_ptr().cast(), src, n * 4, hipMemcpyDeviceToHost) });
    out
}

fn stream(flags: u32) -> hipStream_t {
    let mut s = null_mut();
    // SAFETY: valid out-pointer.
    ok(unsafe { hipStreamCreateWithFlags(&mut s, flags) });
    s
}

fn event() -> hipEvent_t {
    let mut e = null_mut();
    // SAFETY: valid out-pointer.
    ok(unsafe { hipEventCreateWithFlags(&mut e, hipEventDisableTiming) });
    e
}

/// Stream B copies what stream A writes: without an event B reads the old contents (A's work
/// has not run), with `record(A)` + `wait(B)` it reads A's result.
#[test]
fn cross_stream_ordering_needs_an_event() {
    let _g = lock();
    let (a, b) = (stream(hipStreamNonBlocking), stream(hipStreamNonBlocking));
    let (x, y) = (malloc(64), malloc(64));
    let e = event();

    // No dependency: B's copy runs when B is synchronized, A's fill has not run.
    ok(hipMemsetD32Async(x, 7, 16, a));
    ok(hipMemcpyDtoDAsync(y, x, 64, b));
    ok(hipStreamSynchronize(b));
    assert_eq!(read_u32(y, 16), vec![0; 16], "B saw A's write without an event");
    err(hipStreamQuery(a), hipErrorNotReady);
    ok(hipStreamSynchronize(a));
    assert_eq!(read_u32(x, 16), vec![7; 16]);

    // With the event: B's copy waits for A's fill.
    ok(hipMemsetD32Async(x, 9, 16, a));
    ok(hipEventRecord(e, a));
    err(hipEventQuery(e), hipErrorNotReady);
    ok(hipStreamWaitEvent(b, e, 0));
    ok(hipMemcpyDtoDAsync(y, x, 64, b));
    ok(hipStreamSynchronize(b));
    assert_eq!(read_u32(y, 16), vec![9; 16], "B did not see A's write after waiting for the event");
    ok(hipEventQuery(e));
    ok(hipStreamQuery(a));

    // Work submitted to A after the record is not part of the dependency.
    ok(hipEventRecord(e, a));
    ok(hipMemsetD32Async(x, 11, 16, a));
    ok(hipStreamWaitEvent(b, e, 0));
    ok(hipMemcpyDtoDAsync(y, x, 64, b));
    ok(hipStreamSynchronize(b));
    assert_eq!(read_u32(y, 16), vec![9; 16]);
    ok(hipEventSynchronize(e));
    err(hipStreamQuery(a), hipErrorNotReady);
    ok(hipStreamSynchronize(a));
    assert_eq!(read_u32(x, 16), vec![11; 16]);

    for p in [x, y] {
        ok(hipFree(p));
    }
    ok(hipEventDestroy(e));
    ok(hipStreamDestroy(a));
    ok(hipStreamDestroy(b));
}

/// The legacy null stream waits for blocking streams (not for non-blocking ones); destroying a
/// stream and freeing memory complete the queued work first.
#[test]
fn null_stream_destroy_and_free_complete_queued_work() {
    let _g = lock();
    let (blocking, nonblocking) = (stream(hipStreamDefault), stream(hipStreamNonBlocking));
    let x = malloc(16);
    let y = malloc(16);
    ok(hipMemsetD32Async(x, 3, 4, blocking));
    ok(hipMemsetD32Async(y, 4, 4, nonblocking));
    assert_eq!(read_u32(x, 4), vec![3; 4], "a synchronous copy waits for the blocking stream");
    assert_eq!(read_u32(y, 4), vec![0; 4], "but not for a non-blocking one");
    ok(hipStreamDestroy(nonblocking));
    assert_eq!(read_u32(y, 4), vec![4; 4], "destroying the stream ran its work");

    let s = stream(hipStreamNonBlocking);
    let mut host = [0u32; 4];
    ok(hipMemsetD32Async(x, 5, 4, s));
    // SAFETY: `host` outlives the copy, which runs inside hipFree's device synchronization.
    ok(unsafe { hipMemcpyDtoHAsync(host.as_mut_ptr().cast(), x, 16, s) });
    let before = thread_stats();
    ok(hipFree(y));
    let after = thread_stats();
    assert_eq!(host, [5; 4], "hipFree synchronized the device first");
    assert_eq!(after.device_synchronizations - before.device_synchronizations, 1);
    assert_eq!(after.frees - before.frees, 1);

    // A stream-ordered free runs when the stream reaches it.
    ok(hipFreeAsync(x, s));
    ok(hipStreamSynchronize(s));
    err(hipMemsetD32Async(x, 0, 1, s), hipErrorInvalidValue);
    ok(hipStreamDestroy(s));
    ok(hipStreamDestroy(blocking));
}

/// Per-stream counters of what was submitted, and errors of queued work surfacing at the next
/// synchronization; a callback may not call HIP.
#[test]
fn stream_counters_sticky_errors_and_callbacks() {
    let _g = lock();
    let s = stream(hipStreamNonBlocking);
    let x = malloc(64);
    let src = [1u32; 16];
    let mut dst = [0u32; 16];
    let before = stream_stats(s).expect("known stream");
    assert_eq!(before, StreamStats::default());
    // SAFETY: host buffers outlive the synchronization below.
    unsafe {
        ok(hipMemcpyHtoDAsync(x, src.as_ptr() as *mut c_void, 64, s));
        ok(hipMemsetD8Async(x, 0, 4, s));
        ok(hipMemcpyDtoHAsync(dst.as_mut_ptr().cast(), x, 64, s));
    }
    ok(hipStreamSynchronize(s));
    let st = stream_stats(s).unwrap();
    assert_eq!((st.host_to_device, st.device_to_host, st.fills, st.synchronizations, st.launches), (1, 1, 1, 1, 0));
    assert_eq!(st.host_copies(), 2);
    assert_eq!(dst[0], 0);
    assert_eq!(&dst[1..], &[1; 15]);
    assert!(stream_stats(0xdead_0000 as hipStream_t).is_none());

    // A stream-ordered free of memory freed in between fails when it runs: the error is
    // returned by the next synchronization, once.
    let y = malloc(16);
    ok(hipFreeAsync(y, s));
    ok(hipFreeAsync(y, s));
    err(hipStreamSynchronize(s), hipErrorInvalidValue);
    ok(hipStreamSynchronize(s));

    unsafe extern "C" fn calls_hip(_s: hipStream_t, _status: hipError_t, user: *mut c_void) {
        // SAFETY: `user` is the u32 passed below.
        unsafe { *user.cast::<u32>() = hipDeviceSynchronize() };
    }
    let mut seen = 0u32;
    // SAFETY: `seen` outlives the synchronization that runs the callback.
    ok(unsafe { hipStreamAddCallback(s, Some(calls_hip), (&raw mut seen).cast(), 0) });
    ok(hipStreamSynchronize(s));
    assert_eq!(seen, hipErrorIllegalState, "HIP called from a callback fails instead of deadlocking");

    ok(hipFree(x));
    ok(hipStreamDestroy(s));
}

/// Capture records work instead of running it; the graph replays it, reading the host source
/// of a captured copy at each replay.
#[test]
fn capture_and_replay_with_new_data() {
    let _g = lock();
    let s = stream(hipStreamNonBlocking);
    let (x, y) = (malloc(64), malloc(64));
    let mut input = [0u32; 16];
    let mut output = [0u32; 16];
    let mut status = 9;
    // SAFETY: valid out-pointers; `input`/`output` outlive every replay.
    unsafe {
        ok(hipStreamIsCapturing(s, &mut status));
        assert_eq!(status, hipStreamCaptureStatusNone);
        ok(hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal));
        err(hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal), hipErrorIllegalState);
        ok(hipStreamIsCapturing(s, &mut status));
        assert_eq!(status, hipStreamCaptureStatusActive);
        ok(hipMemcpyHtoDAsync(x, input.as_mut_ptr().cast(), 64, s));
        ok(hipMemsetD32Async(y, 1, 16, s));
        ok(hipMemcpyDtoDAsync(y, x, 32, s));
        ok(hipMemcpyDtoHAsync(output.as_mut_ptr().cast(), y, 64, s));
        let mut graph = null_mut();
        ok(hipStreamEndCapture(s, &mut graph));
        assert_eq!(graph_len(graph), Some(4));
        err(hipStreamEndCapture(s, &mut graph), hipErrorIllegalState);
        // Nothing ran during the capture, and nothing was counted.
        assert_eq!(stream_stats(s).unwrap(), StreamStats::default());
        assert_eq!(read_u32(y, 16), vec![0; 16]);

        let mut exec = null_mut();
        ok(hipGraphInstantiate(&mut exec, graph, null_mut(), null_mut(), 0));
        ok(hipGraphDestroy(graph));
        for round in 1..=3u32 {
            for (i, v) in input.iter_mut().enumerate() {
                *v = round * 100 + i as u32;
            }
            ok(hipGraphLaunch(exec, s));
            ok(hipStreamSynchronize(s));
            let expected: Vec<u32> = (0..16).map(|i| if i < 8 { round * 100 + i } else { 1 }).collect();
            assert_eq!(output.to_vec(), expected, "replay {round}");
        }
        let st = stream_stats(s).unwrap();
        assert_eq!((st.graph_launches, st.host_to_device, st.device_to_host, st.fills, st.device_to_device), (3, 3, 3, 3, 3));
        ok(hipGraphExecDestroy(exec));
        err(hipGraphExecDestroy(exec), hipErrorInvalidHandle);
        err(hipGraphLaunch(exec, s), hipErrorInvalidHandle);
        // The null stream cannot be captured.
        err(hipStreamBeginCapture(null_mut(), hipStreamCaptureModeGlobal), hipErrorStreamCaptureUnsupported);
    }
    ok(hipFree(x));
    ok(hipFree(y));
    ok(hipStreamDestroy(s));
}

/// Each forbidden call fails with hipErrorStreamCaptureUnsupported and invalidates the capture,
/// whose end then fails; a global capture forbids them in other threads too, a relaxed one not.
#[test]
fn capture_forbids_unsafe_calls() {
    let _g = lock();
    let s = stream(hipStreamNonBlocking);
    let x = malloc(64);
    let mut host = [0u8; 64];
    type Forbidden = Box<dyn Fn() -> hipError_t>;
    let hp = host.as_mut_ptr() as usize;
    let xa = x as usize;
    let calls: Vec<(&str, Forbidden)> = vec![
        (
            "hipMalloc",
            Box::new(|| {
                let mut p = null_mut();
                // SAFETY: valid out-pointer.
                unsafe { hipMalloc(&mut p, 16) }
            }),
        ),
        ("hipFree", Box::new(move || hipFree(xa as *mut c_void))),
        // SAFETY (closure bodies): `host` is valid for 64 bytes for the whole test.
        ("hipMemcpy", Box::new(move || unsafe { hipMemcpy(hp as *mut c_void, xa as *mut c_void, 64, hipMemcpyDeviceToHost) })),
        ("hipMemcpyHtoD", Box::new(move || unsafe { hipMemcpyHtoD(xa as *mut c_void, hp as *mut c_void, 64) })),
        ("hipMemset", Box::new(move || hipMemset(xa as *mut c_void, 0, 64))),
        ("hipDeviceSynchronize", Box::new(|| hipDeviceSynchronize())),
        ("hipStreamSynchronize(capturing)", Box::new(move || hipStreamSynchronize(s))),
        (
            "hipMallocAsync(capturing)",
            Box::new(move || {
                let mut p = null_mut();
                // SAFETY: valid out-pointer.
                unsafe { hipMallocAsync(&mut p, 16, s) }
            }),
        ),
    ];
    for (what, call) in &calls {
        // SAFETY: valid out-pointers throughout.
        unsafe {
            ok(hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal));
            ok(hipMemsetAsync(x, 1, 64, s));
            err(call(), hipErrorStreamCaptureUnsupported);
            let mut status = 0;
            ok(hipStreamIsCapturing(s, &mut status));
            assert_eq!(status, hipStreamCaptureStatusInvalidated, "{what}");
            // Submitting to an invalidated capture fails too.
            err(hipMemsetAsync(x, 1, 64, s), hipErrorStreamCaptureInvalidated);
            let mut graph = 0x10 as hipGraph_t;
            err(hipStreamEndCapture(s, &mut graph), hipErrorStreamCaptureInvalidated);
            assert!(graph.is_null(), "{what}: no graph from an invalidated capture");
        }
    }
    // After the captures, the same calls work again (x is still allocated: its free failed).
    assert_eq!(read_u32(x, 16), vec![0; 16], "nothing captured ran");

    // Global mode: another thread's allocation is forbidden; thread-local and relaxed: allowed.
    for (mode, other_thread_allowed) in [(hipStreamCaptureModeGlobal, false), (hipStreamCaptureModeThreadLocal, true), (hipStreamCaptureModeRelaxed, true)] {
        // SAFETY: valid out-pointers throughout.
        unsafe {
            ok(hipStreamBeginCapture(s, mode));
            let code = std::thread::spawn(|| {
                let mut p = null_mut();
                // SAFETY: valid out-pointer.
                let code = hipMalloc(&mut p, 16);
                if code == hipSuccess {
                    assert_eq!(hipFree(p), hipSuccess);
                }
                code
            })
            .join()
            .unwrap();
            let mut graph = null_mut();
            if other_thread_allowed {
                assert_eq!(code, hipSuccess, "mode {mode}");
                ok(hipStreamEndCapture(s, &mut graph));
                ok(hipGraphDestroy(graph));
            } else {
                err(code, hipErrorStreamCaptureUnsupported);
                err(hipStreamEndCapture(s, &mut graph), hipErrorStreamCaptureInvalidated);
            }
        }
    }

    // A thread-local capture cannot be ended by another thread; the legacy null stream may not
    // depend on a capturing blocking stream.
    let blocking = stream(hipStreamDefault);
    ok(hipStreamBeginCapture(blocking, hipStreamCaptureModeThreadLocal));
    let sa = blocking as usize;
    let code = std::thread::spawn(move || {
        let mut graph = null_mut();
        // SAFETY: valid out-pointer.
        unsafe { hipStreamEndCapture(sa as hipStream_t, &mut graph) }
    })
    .join()
    .unwrap();
    err(code, hipErrorStreamCaptureWrongThread);
    err(hipMemsetD32Async(x, 0, 1, null_mut()), hipErrorStreamCaptureImplicit);
    let mut graph = null_mut();
    // SAFETY: valid out-pointer.
    err(unsafe { hipStreamEndCapture(blocking, &mut graph) }, hipErrorStreamCaptureInvalidated);
    ok(hipStreamDestroy(blocking));
    ok(hipFree(x));
    ok(hipStreamDestroy(s));
}

/// A queued launch runs when its stream is synchronized (by any thread), its report belonging to
/// the submitting thread; a launch whose module was unloaded before it ran fails (the code is gone), which is
/// what `fp8gemm::Context`'s drop must prevent.
#[test]
fn queued_launches_run_later_and_need_their_module() {
    let _g = lock();
    const CLASSES: &[u8] = include_bytes!("data/classes.hsaco");
    let s = stream(hipStreamNonBlocking);
    let (inp, out) = (malloc(4096 * 4), malloc(4096 * 4));
    let (mut o, mut i, mut n, mut sh) = (out, inp, 3u32, 5u32);
    let mut args = [(&raw mut o).cast(), (&raw mut i).cast(), (&raw mut n).cast(), (&raw mut sh).cast::<c_void>()];
    for unload_first in [false, true] {
        let mut m = null_mut();
        let mut f = null_mut();
        // SAFETY: CLASSES is a complete code object; valid out-pointers; `args` matches int_ops
        // (indices stay below 3 * 256 + 64 < 4096).
        unsafe {
            ok(hipModuleLoadData(&mut m, CLASSES.as_ptr().cast()));
            ok(hipModuleGetFunction(&mut f, m, c"int_ops".as_ptr()));
            ok(hipModuleLaunchKernel(f, 3, 2, 1, 64, 1, 1, 0, s, args.as_mut_ptr(), null_mut()));
        }
        assert_eq!(stream_stats(s).unwrap().launches, 1 + unload_first as u64);
        err(hipStreamQuery(s), hipErrorNotReady);
        if unload_first {
            ok(hipModuleUnload(m));
            err(hipStreamSynchronize(s), hipErrorInvalidHandle);
            let msg = last_launch_error().expect("the failed launch's message");
            assert!(msg.contains("int_ops") && msg.contains("unloaded"), "{msg}");
        } else {
            // Another thread's device synchronization runs the launch; its outcome still
            // belongs to the submitting thread.
            assert_eq!(std::thread::spawn(|| hipDeviceSynchronize()).join().unwrap(), hipSuccess);
            ok(hipStreamQuery(s));
            ok(hipStreamSynchronize(s));
            let report = last_launch_report().expect("the submitter sees its queued launch's report");
            assert_eq!((report.workgroups, report.waves), (6, 6));
            ok(hipModuleUnload(m));
        }
    }
    ok(hipFree(inp));
    ok(hipFree(out));
    ok(hipStreamDestroy(s));
}
