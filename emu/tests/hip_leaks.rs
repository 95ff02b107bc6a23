//! Every emulator object goes with its owner: a module's function handles and code object with
//! `hipModuleUnload` (or with the last queued launch / graph still holding the code), streams,
//! events, graphs and allocations with their destroy calls, a thread's launch outcome with the
//! thread. Counted through [`live_objects`], which is process-wide: one test in its own binary.
#![cfg(feature = "hip-abi")]

use std::ffi::c_void;
use std::ptr::null_mut;

use amdgpu_emu::hip::*;

const CLASSES: &[u8] = include_bytes!("data/classes.hsaco");

fn ok(code: hipError_t) {
    assert_eq!(code, hipSuccess, "{:?}", last_error_detail());
}

fn load() -> (hipModule_t, hipFunction_t) {
    let (mut m, mut f) = (null_mut(), null_mut());
    // SAFETY: a complete code object; valid out-pointers and C string.
    unsafe {
        ok(hipModuleLoadData(&mut m, CLASSES.as_ptr().cast()));
        ok(hipModuleGetFunction(&mut f, m, c"int_ops".as_ptr()));
    }
    (m, f)
}

fn malloc(bytes: usize) -> *mut c_void {
    let mut p = null_mut();
    // SAFETY: valid out-pointer.
    ok(unsafe { hipMalloc(&mut p, bytes) });
    p
}

/// Submits `int_ops(out, inp, 3, 5)` as one 256-wide workgroup on `stream`.
fn int_ops(f: hipFunction_t, buf: *mut c_void, stream: hipStream_t) -> hipError_t {
    let (mut o, mut i, mut n, mut s) = (buf, buf, 3u32, 5u32);
    let mut args = [(&raw mut o).cast(), (&raw mut i).cast(), (&raw mut n).cast(), (&raw mut s).cast::<c_void>()];
    // SAFETY: one pointer per explicit argument of int_ops, to live locals; `buf` holds 1 KiB.
    unsafe { hipModuleLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, stream, args.as_mut_ptr(), null_mut()) }
}

#[test]
fn every_object_is_freed_with_its_owner() {
    let base = live_objects();
    let buf = malloc(1024);

    // Load, launch, unload, many times: nothing accumulates (the defect: function handles kept
    // their code object — and its decode cache — after hipModuleUnload).
    for _ in 0..20 {
        let (m, f) = load();
        let during = live_objects();
        assert_eq!((during.modules, during.functions, during.code_objects), (base.modules + 1, base.functions + 1, base.code_objects + 1));
        ok(int_ops(f, buf, null_mut()));
        ok(hipModuleUnload(m));
        let mut v = 0;
        // SAFETY: valid out-pointer.
        assert_eq!(unsafe { hipFuncGetAttribute(&mut v, HIP_FUNC_ATTRIBUTE_NUM_REGS, f) }, hipErrorInvalidHandle, "the function died with its module");
        assert_eq!(int_ops(f, buf, null_mut()), hipErrorInvalidHandle);
    }
    let after = live_objects();
    assert_eq!((after.modules, after.functions, after.code_objects), (base.modules, base.functions, base.code_objects));

    // A queued launch keeps the code until it has run (and fails: its module is gone).
    let mut s = null_mut();
    // SAFETY: valid out-pointer.
    ok(unsafe { hipStreamCreateWithFlags(&mut s, hipStreamNonBlocking) });
    let (m, f) = load();
    ok(int_ops(f, buf, s));
    ok(hipModuleUnload(m));
    assert_eq!(live_objects().code_objects, base.code_objects + 1, "held by the queued launch");
    assert_eq!(live_objects().functions, base.functions);
    assert_eq!(hipStreamSynchronize(s), hipErrorInvalidHandle);
    assert_eq!(live_objects().code_objects, base.code_objects, "freed once the launch has run");

    // A captured graph (and its instantiation) keep the code until destroyed.
    let (m, f) = load();
    let (mut graph, mut exec) = (null_mut(), null_mut());
    // SAFETY: valid out-pointers; `s` is live.
    unsafe {
        ok(hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed));
        ok(int_ops(f, buf, s));
        ok(hipStreamEndCapture(s, &mut graph));
        ok(hipGraphInstantiate(&mut exec, graph, null_mut(), null_mut(), 0));
    }
    ok(hipModuleUnload(m));
    assert_eq!(live_objects().code_objects, base.code_objects + 1);
    ok(hipGraphDestroy(graph));
    assert_eq!(live_objects().code_objects, base.code_objects + 1, "the instantiation still holds it");
    ok(hipGraphExecDestroy(exec));
    assert_eq!(live_objects().code_objects, base.code_objects);

    // Streams, events, allocations go with their destroy calls.
    let mut e = null_mut();
    // SAFETY: valid out-pointer.
    ok(unsafe { hipEventCreate(&mut e) });
    let during = live_objects();
    assert_eq!((during.streams, during.events, during.allocations), (base.streams + 1, base.events + 1, base.allocations + 1));
    ok(hipEventDestroy(e));
    ok(hipStreamDestroy(s));
    ok(hipFree(buf));

    // A thread's launch outcome goes with the thread, whether its launch ran at once (null
    // stream) or was queued and run by another thread.
    let (m, f) = load();
    let buf = malloc(1024);
    let outcomes = live_objects().launch_outcomes;
    let (addr, fa) = (buf as usize, f as usize);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let buf = addr as *mut c_void;
                let f = fa as hipFunction_t;
                if t % 2 == 0 {
                    ok(int_ops(f, buf, null_mut()));
                    assert!(last_launch_report().is_some());
                } else {
                    let mut s = null_mut();
                    // SAFETY: valid out-pointer.
                    ok(unsafe { hipStreamCreateWithFlags(&mut s, hipStreamNonBlocking) });
                    ok(int_ops(f, buf, s));
                    ok(hipStreamDestroy(s));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(live_objects().launch_outcomes, outcomes, "no outcome of an exited thread is kept ({:?})", live_objects());
    ok(hipModuleUnload(m));
    ok(hipFree(buf));

    let end = live_objects();
    assert_eq!(LiveObjects { launch_outcomes: base.launch_outcomes, ..end }, LiveObjects { launch_outcomes: base.launch_outcomes, ..base });
}
