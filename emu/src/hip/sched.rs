//! The device's work queues: every stream is an in-order queue of operations that run lazily.
//!
//! Work submitted to a created stream is only validated and queued; it runs when something
//! waits for it — [`hipStreamSynchronize`], [`hipDeviceSynchronize`], [`hipEventSynchronize`],
//! an operation on the legacy null stream (which first completes all work of the blocking
//! streams, as HIP's null stream does), [`hipFree`] (which synchronizes the device, as in HIP),
//! or a [`hipStreamWaitEvent`] dependency of such work. So a kernel on stream B that reads what
//! stream A writes sees the old data unless an event orders the two: a missing dependency shows
//! up deterministically in a test instead of depending on timing.
//!
//! Work on the null stream (and `hipStreamPerThread`) runs inside the call that submits it, after
//! the blocking streams' earlier work; its errors are the call's result. Errors of queued work
//! are sticky per stream and returned by the next synchronization of that stream (or of the
//! device), as HIP reports asynchronous errors.
//!
//! One lock serializes all execution (the emulated device runs one operation at a time; a kernel's
//! workgroups still run in parallel on the host's cores). A stream callback runs with that lock
//! held, so — as HIP requires — it must not call HIP: such calls fail with
//! `hipErrorIllegalState` instead of deadlocking.

use std::collections::VecDeque;
use std::thread::ThreadId;

use super::*;

/// Key of the legacy null stream (also used for `hipStreamPerThread`).
pub(super) const NULL_STREAM: u64 = 0;

/// A host address carried by a queued operation; the submitter's HIP contract keeps the memory
/// valid until the operation has completed.
#[derive(Clone, Copy)]
pub(super) struct HostPtr(pub(super) usize);

/// One queued operation.
#[derive(Clone)]
pub(super) enum Op {
    /// A validated kernel launch (kernarg segment built at submission) and the thread that
    /// submitted it (whose `last_launch_*` it updates when it runs).
    Launch { func: FunctionEntry, cfg: Arc<LaunchConfig>, submitter: std::thread::ThreadId, device: c_int },
    /// Host-to-device copy of bytes staged at submission (the caller's buffer may be reused at once).
    HtoD { dst: u64, data: Arc<Vec<u8>> },
    /// Host-to-device copy read from host memory when it runs (captured into a graph: every replay
    /// reads the buffer's current contents, as a HIP graph's memcpy node does).
    HtoDLive { dst: u64, src: HostPtr, len: usize },
    /// Device-to-host copy into host memory when it runs.
    DtoH { dst: HostPtr, src: u64, len: usize },
    /// Device-to-device copy.
    DtoD { dst: u64, src: u64, len: usize },
    /// Fill `count` repetitions of `pattern` at `dst`.
    Fill { dst: u64, pattern: Vec<u8>, count: usize },
    /// Stream-ordered free of an allocation.
    Free { addr: u64 },
    /// Completes an event (timestamp taken when it runs).
    Record { event: u64 },
    /// Waits until op `seq` of stream `stream` has completed.
    Wait { stream: u64, seq: u64 },
    /// A host callback.
    Callback { cb: unsafe extern "C" fn(hipStream_t, hipError_t, *mut c_void), stream: u64, user: HostPtr },
}

// SAFETY: the raw host addresses inside `Op` (HostPtr, the callback's user data) are plain
// integers owned by the submitter, who guarantees (HIP's contract) that they stay valid until the
// operation runs; HIP allows that to happen on any thread.
unsafe impl Send for Op {}

/// What was submitted to one stream (counted at submission; work captured into a graph is counted
/// when the graph is launched).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Kernel launches.
    pub launches: u64,
    /// Host-to-device copies.
    pub host_to_device: u64,
    /// Device-to-host copies.
    pub device_to_host: u64,
    /// Device-to-device copies.
    pub device_to_device: u64,
    /// Memsets.
    pub fills: u64,
    /// Host synchronizations with this stream ([`hipStreamSynchronize`], [`hipEventSynchronize`]
    /// of an event recorded on it).
    pub synchronizations: u64,
    /// Graphs launched on it.
    pub graph_launches: u64,
}

impl StreamStats {
    /// Copies between host and device memory (either direction).
    pub fn host_copies(&self) -> u64 {
        self.host_to_device + self.device_to_host
    }
}

/// Device-wide operations issued by the calling thread (they concern no single stream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadStats {
    /// Device synchronizations: [`hipDeviceSynchronize`], and [`hipFree`], which synchronizes the
    /// device first.
    pub device_synchronizations: u64,
    /// Device allocations ([`hipMalloc`], [`hipMallocAsync`]).
    pub allocations: u64,
    /// Device frees ([`hipFree`], [`hipFreeAsync`]).
    pub frees: u64,
    /// Synchronous copies and memsets (on the null stream).
    pub synchronous_transfers: u64,
}

/// An active stream capture.
pub(super) struct Capture {
    pub(super) mode: c_uint,
    pub(super) thread: ThreadId,
    pub(super) ops: Vec<Op>,
    pub(super) invalidated: bool,
}

pub(super) struct Queue {
    pub(super) blocking: bool,
    /// The device ordinal current when the stream was created (the null stream: `None`, every
    /// device's).
    device: Option<c_int>,
    ops: VecDeque<(u64, Op)>,
    /// Sequence number of the last submitted op (ops are numbered from 1).
    submitted: u64,
    /// Sequence number of the last completed op.
    done: u64,
    error: Option<hipError_t>,
    pub(super) stats: StreamStats,
    pub(super) capture: Option<Capture>,
}

impl Queue {
    pub(super) fn new(blocking: bool, device: Option<c_int>) -> Queue {
        Queue { blocking, device, ops: VecDeque::new(), submitted: 0, done: 0, error: None, stats: StreamStats::default(), capture: None }
    }
    pub(super) fn idle(&self) -> bool {
        self.ops.is_empty()
    }
}

pub(super) struct Sched {
    pub(super) queues: HashMap<u64, Queue>,
}

impl Sched {
    fn new() -> Sched {
        Sched { queues: HashMap::from([(NULL_STREAM, Queue::new(true, None))]) }
    }
}

static SCHED: LazyLock<Mutex<Sched>> = LazyLock::new(|| Mutex::new(Sched::new()));

thread_local! {
    /// Set while this thread executes queued work (a stream callback must not call HIP).
    static DRAINING: Cell<bool> = const { Cell::new(false) };
    static THREAD_STATS: Cell<ThreadStats> = const { Cell::new(ThreadStats {
        device_synchronizations: 0, allocations: 0, frees: 0, synchronous_transfers: 0,
    }) };
}

/// The scheduler, locked; `hipErrorIllegalState` when called from a stream callback.
pub(super) fn sched() -> Result<MutexGuard<'static, Sched>, hipError_t> {
    if DRAINING.get() {
        return Err(hipErrorIllegalState);
    }
    Ok(SCHED.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Updates the calling thread's device-wide counters.
pub(super) fn count(f: impl FnOnce(&mut ThreadStats)) {
    THREAD_STATS.with(|t| {
        let mut s = t.get();
        f(&mut s);
        t.set(s);
    });
}

/// The device-wide operations the calling thread has issued so far (allocations, frees, device
/// synchronizations, synchronous copies). Compare two snapshots to assert that a code path
/// issued none.
pub fn thread_stats() -> ThreadStats {
    THREAD_STATS.get()
}

/// What has been submitted to `stream` (null: the null stream) so far; `None` for an unknown
/// handle. Compare two snapshots to assert, e.g., that a code path copied nothing to the host.
pub fn stream_stats(stream: hipStream_t) -> Option<StreamStats> {
    let g = SCHED.lock().unwrap_or_else(|p| p.into_inner());
    g.queues.get(&stream_key(stream)).map(|q| q.stats)
}

/// The queue key of a stream handle.
pub(super) fn stream_key(stream: hipStream_t) -> u64 {
    if stream.is_null() || stream == hipStreamPerThread { NULL_STREAM } else { handle_id(stream) }
}

/// Fails a potentially unsafe call (allocation, free, synchronous copy or memset, device
/// synchronization) while a capture forbids it — any `hipStreamCaptureModeGlobal` capture, or a
/// `hipStreamCaptureModeThreadLocal` one begun by this thread — with
/// `hipErrorStreamCaptureUnsupported`, invalidating those captures (as HIP does).
pub(super) fn capture_guard(g: &mut Sched) -> Result<(), hipError_t> {
    let me = std::thread::current().id();
    let mut hit = false;
    for q in g.queues.values_mut() {
        if let Some(c) = &mut q.capture
            && (c.mode == hipStreamCaptureModeGlobal || (c.mode == hipStreamCaptureModeThreadLocal && c.thread == me))
        {
            c.invalidated = true;
            hit = true;
        }
    }
    if hit { Err(hipErrorStreamCaptureUnsupported) } else { Ok(()) }
}

fn count_op(stats: &mut StreamStats, op: &Op) {
    match op {
        Op::Launch { .. } => stats.launches += 1,
        Op::HtoD { .. } | Op::HtoDLive { .. } => stats.host_to_device += 1,
        Op::DtoH { .. } => stats.device_to_host += 1,
        Op::DtoD { .. } => stats.device_to_device += 1,
        Op::Fill { .. } => stats.fills += 1,
        _ => {}
    }
}

/// Submits `ops` to `stream` in order. On a capturing stream they are appended to the capture;
/// on a created stream they are queued (an event record on an idle stream completes at once,
/// as on a GPU with nothing to do); on the null stream the blocking streams are completed first
/// and the ops run now, the first failure being the result. Returns `(stream key, sequence number
/// of the last op)`, the sequence number being 0 when the ops have already completed.
pub(super) fn submit(stream: hipStream_t, ops: Vec<Op>) -> Result<(u64, u64), hipError_t> {
    submit_locked(&mut *sched()?, stream, ops)
}

/// [`submit`] with the scheduler already locked.
pub(super) fn submit_locked(g: &mut Sched, stream: hipStream_t, ops: Vec<Op>) -> Result<(u64, u64), hipError_t> {
    let key = stream_key(stream);
    let q = g.queues.get_mut(&key).ok_or(hipErrorInvalidHandle)?;
    if let Some(c) = &mut q.capture {
        if c.invalidated {
            return Err(hipErrorStreamCaptureInvalidated);
        }
        c.ops.extend(ops);
        return Ok((key, 0));
    }
    if key == NULL_STREAM {
        // The legacy null stream waits for the blocking streams; one of them capturing makes
        // that an illegal implicit dependency.
        let me = std::thread::current().id();
        let mut implicit = false;
        for q in g.queues.values_mut() {
            if q.blocking
                && let Some(c) = &mut q.capture
                && c.mode != hipStreamCaptureModeRelaxed
                && (c.mode == hipStreamCaptureModeGlobal || c.thread == me)
            {
                c.invalidated = true;
                implicit = true;
            }
        }
        if implicit {
            return Err(hipErrorStreamCaptureImplicit);
        }
        drain_blocking(g);
        for op in ops {
            let q = g.queues.get_mut(&NULL_STREAM).expect("the null stream always exists");
            count_op(&mut q.stats, &op);
            run(g, NULL_STREAM, op)?;
        }
        return Ok((key, 0));
    }
    for op in ops {
        count_op(&mut q.stats, &op);
        q.submitted += 1;
        if q.ops.is_empty()
            && let Op::Record { event } = op
        {
            q.done = q.submitted;
            record_now(event);
            continue;
        }
        q.ops.push_back((q.submitted, op));
    }
    Ok((key, q.submitted))
}

/// Completes an event now.
fn record_now(event: u64) {
    if let Some(e) = rt().state().events.get_mut(&event) {
        e.recorded = Some(Instant::now());
    }
}

/// Runs one op with this thread marked as draining.
fn run(g: &mut Sched, key: u64, op: Op) -> Result<(), hipError_t> {
    let was = DRAINING.replace(true);
    let r = exec_op(g, key, op);
    DRAINING.set(was);
    r
}

/// Executes one op. `Wait` completes the awaited stream up to the op waited for.
fn exec_op(g: &mut Sched, _key: u64, op: Op) -> Result<(), hipError_t> {
    let r = rt();
    let mem = |res: Result<(), crate::memory::MemError>| res.map_err(|_| hipErrorIllegalAddress);
    match op {
        Op::Launch { func, cfg, submitter, device } => run_launch(&func, &cfg, submitter, device),
        Op::HtoD { dst, data } => mem(r.memory.write(dst, &data)),
        Op::HtoDLive { dst, src, len } => {
            // SAFETY: the submitter's contract (HIP's): the host source stays valid for `len`
            // bytes whenever the op (or the graph it was captured into) runs.
            let bytes = unsafe { std::slice::from_raw_parts(src.0 as *const u8, len) };
            mem(r.memory.write(dst, bytes))
        }
        Op::DtoH { dst, src, len } => {
            // SAFETY: the submitter's contract: the host destination stays valid for writes of
            // `len` bytes until the copy has run; it cannot alias emulated device storage.
            let out = unsafe { std::slice::from_raw_parts_mut(dst.0 as *mut u8, len) };
            mem(r.memory.read(src, out))
        }
        Op::DtoD { dst, src, len } => device_to_device(dst, src, len),
        Op::Fill { dst, pattern, count } => fill_now(dst, &pattern, count),
        Op::Free { addr } => device_free(handle_ptr(addr)),
        Op::Record { event } => {
            record_now(event);
            Ok(())
        }
        Op::Wait { stream, seq } => {
            drain_to(g, stream, seq);
            Ok(())
        }
        Op::Callback { cb, stream, user } => {
            // SAFETY: the submitter's contract for hipStreamAddCallback.
            unsafe { cb(handle_ptr(stream), hipSuccess, user.0 as *mut c_void) };
            Ok(())
        }
    }
}

/// Completes stream `key` up to and including op `seq`; failures become the stream's sticky error.
pub(super) fn drain_to(g: &mut Sched, key: u64, seq: u64) {
    loop {
        let Some(q) = g.queues.get_mut(&key) else { return };
        if q.done >= seq {
            return;
        }
        let Some((s, op)) = q.ops.pop_front() else { return };
        let result = run(g, key, op);
        if let Some(q) = g.queues.get_mut(&key) {
            q.done = s;
            if let Err(code) = result {
                q.error.get_or_insert(code);
            }
        }
    }
}

/// Whether op `seq` of stream `key` has completed (a destroyed stream's work has).
pub(super) fn completed(g: &Sched, key: u64, seq: u64) -> bool {
    g.queues.get(&key).is_none_or(|q| q.done >= seq)
}

fn drain_blocking(g: &mut Sched) {
    let mut keys: Vec<u64> = g.queues.iter().filter(|(k, q)| **k != NULL_STREAM && q.blocking).map(|(k, _)| *k).collect();
    keys.sort_unstable();
    for k in keys {
        drain_to(g, k, u64::MAX);
    }
}

/// Completes all queued work of every stream.
pub(super) fn drain_all(g: &mut Sched) {
    let mut keys: Vec<u64> = g.queues.keys().copied().collect();
    keys.sort_unstable();
    for k in keys {
        drain_to(g, k, u64::MAX);
    }
}

/// Takes the sticky error of stream `key`.
pub(super) fn take_error(g: &mut Sched, key: u64) -> Result<(), hipError_t> {
    match g.queues.get_mut(&key).and_then(|q| q.error.take()) {
        Some(code) => Err(code),
        None => Ok(()),
    }
}

/// `hipStreamSynchronize`: completes the stream's work (the null stream: the blocking streams'
/// and its own) and returns its sticky error.
pub(super) fn synchronize_stream(stream: hipStream_t) -> Result<(), hipError_t> {
    let key = stream_key(stream);
    let mut guard = sched()?;
    let g = &mut *guard;
    let q = g.queues.get_mut(&key).ok_or(hipErrorInvalidHandle)?;
    if let Some(c) = &mut q.capture {
        c.invalidated = true;
        return Err(hipErrorStreamCaptureUnsupported);
    }
    q.stats.synchronizations += 1;
    if key == NULL_STREAM {
        capture_guard(g)?;
        drain_blocking(g);
    }
    drain_to(g, key, u64::MAX);
    take_error(g, key)
}

/// `hipDeviceSynchronize`: completes all work and returns the first sticky error of any stream
/// of the current device (the streams created while it was current, and the null stream).
pub(super) fn synchronize_device() -> Result<(), hipError_t> {
    let mut guard = sched()?;
    let g = &mut *guard;
    capture_guard(g)?;
    count(|t| t.device_synchronizations += 1);
    drain_all(g);
    let device = CURRENT_DEVICE.with(Cell::get);
    let mut keys: Vec<u64> = g.queues.iter().filter(|(_, q)| q.device.is_none_or(|d| d == device)).map(|(k, _)| *k).collect();
    keys.sort_unstable();
    let mut first = Ok(());
    for k in keys {
        let r = take_error(g, k);
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// Whether stream `key` has queued work (for `hipStreamQuery`).
pub(super) fn stream_busy(stream: hipStream_t) -> Result<bool, hipError_t> {
    let g = sched()?;
    let q = g.queues.get(&stream_key(stream)).ok_or(hipErrorInvalidHandle)?;
    Ok(!q.idle())
}

/// Registers a created stream's queue (of the calling thread's current device).
pub(super) fn add_queue(id: u64, blocking: bool) -> Result<(), hipError_t> {
    let device = CURRENT_DEVICE.with(Cell::get);
    sched()?.queues.insert(id, Queue::new(blocking, Some(device)));
    Ok(())
}

/// Completes and removes a destroyed stream's queue (HIP lets a destroyed stream's work finish).
pub(super) fn remove_queue(id: u64) -> Result<(), hipError_t> {
    let mut guard = sched()?;
    let g = &mut *guard;
    drain_to(g, id, u64::MAX);
    g.queues.remove(&id);
    Ok(())
}

/// `hipDeviceReset`: drops all queued work, captures and streams.
pub(super) fn reset() {
    *SCHED.lock().unwrap_or_else(|p| p.into_inner()) = Sched::new();
}
