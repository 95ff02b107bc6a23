//! Stream capture and graphs.
//!
//! [`hipStreamBeginCapture`] turns a created stream into a recorder: the kernel launches, async
//! copies, memsets, event records and host callbacks submitted to it are validated as usual but
//! appended to the capture instead of being queued. [`hipStreamEndCapture`] makes the recorded
//! sequence a graph; [`hipGraphInstantiate`] an executable graph; every [`hipGraphLaunch`]
//! submits the whole sequence, in order, to a stream. A captured host-to-device copy reads its
//! host source when the graph runs (every replay sees the buffer's current contents), as HIP's
//! memcpy nodes do.
//!
//! Like HIP, a capture forbids potentially unsafe calls: in `hipStreamCaptureModeGlobal` from any
//! thread, in `hipStreamCaptureModeThreadLocal` from the capturing thread, in
//! `hipStreamCaptureModeRelaxed` none. The forbidden calls are allocation ([`hipMalloc`]), free
//! ([`hipFree`], which synchronizes), synchronous copies and memsets, [`hipDeviceSynchronize`],
//! [`hipEventSynchronize`]; synchronizing or querying the capturing stream itself is always
//! forbidden, and the legacy null stream may not depend on a capturing blocking stream
//! (`hipErrorStreamCaptureImplicit`). A forbidden call fails with
//! `hipErrorStreamCaptureUnsupported` and invalidates the capture: [`hipStreamEndCapture`] then
//! fails with `hipErrorStreamCaptureInvalidated` and returns a null graph.
//!
//! Not modelled: captures spanning several streams (an event wait on a capturing stream for an
//! event recorded outside the capture is `hipErrorStreamCaptureIsolation`), graph memory nodes
//! ([`hipMallocAsync`] / [`hipFreeAsync`] on a capturing stream), graph editing APIs.

use super::*;

/// `hipError_t hipStreamBeginCapture(hipStream_t, hipStreamCaptureMode)`: starts capturing a
/// created stream. The null stream cannot be captured (`hipErrorStreamCaptureUnsupported`); a
/// stream already capturing is `hipErrorIllegalState`; an unknown mode `hipErrorInvalidValue`.
/// Work already queued on the stream stays queued (it is not part of the capture).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipStreamBeginCapture(stream: hipStream_t, mode: hipStreamCaptureMode) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        if mode > hipStreamCaptureModeRelaxed {
            return Err(hipErrorInvalidValue);
        }
        let key = stream_key(stream);
        if key == NULL_STREAM {
            return Err(hipErrorStreamCaptureUnsupported);
        }
        let mut g = sched()?;
        let q = g.queues.get_mut(&key).ok_or(hipErrorInvalidHandle)?;
        if q.capture.is_some() {
            return Err(hipErrorIllegalState);
        }
        q.capture = Some(sched::Capture { mode, thread: std::thread::current().id(), ops: Vec::new(), invalidated: false });
        Ok(())
    })
}

/// `hipError_t hipStreamEndCapture(hipStream_t, hipGraph_t*)`: ends the capture and returns the
/// recorded graph. Not capturing: `hipErrorIllegalState`; a thread-local or global capture ended
/// by another thread: `hipErrorStreamCaptureWrongThread`; an invalidated capture:
/// `hipErrorStreamCaptureInvalidated` with `*pGraph` set to null (the capture ends either way).
///
/// # Safety
/// `pGraph` is null or writable.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipStreamEndCapture(stream: hipStream_t, pGraph: *mut hipGraph_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        if pGraph.is_null() {
            return Err(hipErrorInvalidValue);
        }
        let mut g = sched()?;
        let q = g.queues.get_mut(&stream_key(stream)).ok_or(hipErrorInvalidHandle)?;
        let Some(c) = &q.capture else { return Err(hipErrorIllegalState) };
        if c.mode != hipStreamCaptureModeRelaxed && c.thread != std::thread::current().id() {
            return Err(hipErrorStreamCaptureWrongThread);
        }
        let c = q.capture.take().expect("checked above");
        drop(g);
        if c.invalidated {
            // SAFETY: non-null; caller contract.
            unsafe { pGraph.write(std::ptr::null_mut()) };
            return Err(hipErrorStreamCaptureInvalidated);
        }
        let r = rt();
        let id = r.new_handle();
        r.state().graphs.insert(id, Arc::new(c.ops));
        // SAFETY: non-null; caller contract.
        unsafe { pGraph.write(handle_ptr(id)) };
        Ok(())
    })
}

/// `hipError_t hipStreamIsCapturing(hipStream_t, hipStreamCaptureStatus*)`: none, active or
/// invalidated.
///
/// # Safety
/// `pCaptureStatus` is null or writable.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipStreamIsCapturing(stream: hipStream_t, pCaptureStatus: *mut hipStreamCaptureStatus) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        let g = sched()?;
        let q = g.queues.get(&stream_key(stream)).ok_or(hipErrorInvalidHandle)?;
        let status = match &q.capture {
            None => hipStreamCaptureStatusNone,
            Some(c) if c.invalidated => hipStreamCaptureStatusInvalidated,
            Some(_) => hipStreamCaptureStatusActive,
        };
        drop(g);
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(pCaptureStatus, status) }
    })
}

/// The number of operations a captured graph holds (`None` for an unknown handle): for tests.
pub fn graph_len(graph: hipGraph_t) -> Option<usize> {
    rt().state().graphs.get(&handle_id(graph)).map(|g| g.len())
}

fn instantiate(pGraphExec: *mut hipGraphExec_t, graph: hipGraph_t) -> Result<(), hipError_t> {
    if pGraphExec.is_null() {
        return Err(hipErrorInvalidValue);
    }
    let r = rt();
    let ops = r.state().graphs.get(&handle_id(graph)).cloned().ok_or(hipErrorInvalidHandle)?;
    let id = r.new_handle();
    r.state().graph_execs.insert(id, ops);
    // SAFETY: non-null; the exported callers' contract makes it writable.
    unsafe { pGraphExec.write(handle_ptr(id)) };
    Ok(())
}

/// `hipError_t hipGraphInstantiate(hipGraphExec_t*, hipGraph_t, hipGraphNode_t* pErrorNode,
/// char* pLogBuffer, size_t bufferSize)`: an executable copy of the graph (later changes to or
/// destruction of the graph do not affect it). `pErrorNode` and the log are not written.
///
/// # Safety
/// `pGraphExec` is null or writable.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipGraphInstantiate(
    pGraphExec: *mut hipGraphExec_t,
    graph: hipGraph_t,
    pErrorNode: *mut hipGraphNode_t,
    pLogBuffer: *mut c_char,
    bufferSize: usize,
) -> hipError_t {
    let _ = (pErrorNode, pLogBuffer, bufferSize);
    api(|| instantiate(pGraphExec, graph))
}

/// `hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t*, hipGraph_t, unsigned long long
/// flags)`: as [`hipGraphInstantiate`]; flags must be 0.
///
/// # Safety
/// `pGraphExec` is null or writable.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipGraphInstantiateWithFlags(pGraphExec: *mut hipGraphExec_t, graph: hipGraph_t, flags: u64) -> hipError_t {
    api(|| if flags != 0 { Err(hipErrorInvalidValue) } else { instantiate(pGraphExec, graph) })
}

/// `hipError_t hipGraphLaunch(hipGraphExec_t, hipStream_t)`: submits the graph's operations to
/// `stream` in their captured order (on a capturing stream they join that capture). Each launch
/// is counted in the stream's [`StreamStats::graph_launches`], and its operations in the other
/// counters.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipGraphLaunch(graphExec: hipGraphExec_t, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        let ops = rt().state().graph_execs.get(&handle_id(graphExec)).cloned().ok_or(hipErrorInvalidHandle)?;
        // The replayed launches belong to the thread that launches the graph, on its device.
        let me = std::thread::current().id();
        OUTCOME_GUARD.with(|_| ());
        let device = CURRENT_DEVICE.with(Cell::get);
        let ops: Vec<Op> = ops
            .iter()
            .cloned()
            .map(|op| match op {
                Op::Launch { func, cfg, .. } => Op::Launch { func, cfg, submitter: me, device },
                other => other,
            })
            .collect();
        let mut g = sched()?;
        sched::submit_locked(&mut g, stream, ops)?;
        if let Some(q) = g.queues.get_mut(&stream_key(stream)) {
            q.stats.graph_launches += 1;
        }
        Ok(())
    })
}

/// `hipError_t hipGraphDestroy(hipGraph_t)`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipGraphDestroy(graph: hipGraph_t) -> hipError_t {
    api(|| rt().state().graphs.remove(&handle_id(graph)).map(|_| ()).ok_or(hipErrorInvalidHandle))
}

/// `hipError_t hipGraphExecDestroy(hipGraphExec_t)`: launches already submitted still run.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipGraphExecDestroy(graphExec: hipGraphExec_t) -> hipError_t {
    api(|| rt().state().graph_execs.remove(&handle_id(graphExec)).map(|_| ()).ok_or(hipErrorInvalidHandle))
}
