//! Streams and events (the queues behind them are in `sched.rs`).

use super::*;

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
    sched::add_queue(id, flags & hipStreamNonBlocking == 0)?;
    r.state().streams.insert(id, StreamEntry { flags, priority: priority.clamp(-1, 0) });
    // SAFETY: non-null; the exported callers' contract makes it writable.
    unsafe { stream.write(handle_ptr(id)) };
    Ok(())
}

/// `hipError_t hipStreamCreate(hipStream_t*)`.
///
/// # Safety
/// `stream` is null or writable.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipStreamCreate(stream: *mut hipStream_t) -> hipError_t {
    api(|| create_stream(stream, hipStreamDefault, 0))
}

/// `hipError_t hipStreamCreateWithFlags(hipStream_t*, unsigned flags)`: flags 0 or
/// `hipStreamNonBlocking`.
///
/// # Safety
/// `stream` is null or writable.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipStreamCreateWithFlags(stream: *mut hipStream_t, flags: c_uint) -> hipError_t {
    api(|| create_stream(stream, flags, 0))
}

/// `hipError_t hipStreamCreateWithPriority(hipStream_t*, unsigned flags, int priority)`.
///
/// # Safety
/// `stream` is null or writable.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipStreamCreateWithPriority(stream: *mut hipStream_t, flags: c_uint, priority: c_int) -> hipError_t {
    api(|| create_stream(stream, flags, priority))
}

/// `hipError_t hipStreamDestroy(hipStream_t)`: the stream's queued work completes (as HIP lets
/// it), then the handle becomes invalid (a second destroy is `hipErrorInvalidHandle`). The null
/// stream cannot be destroyed (`hipErrorInvalidHandle`).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipStreamDestroy(stream: hipStream_t) -> hipError_t {
    api(|| {
        let id = handle_id(stream);
        if !rt().state().streams.contains_key(&id) {
            return Err(hipErrorInvalidHandle);
        }
        sched::remove_queue(id)?;
        rt().state().streams.remove(&id);
        Ok(())
    })
}

/// `hipError_t hipStreamSynchronize(hipStream_t)`: runs the stream's queued work (for the null
/// stream: the blocking streams' work, then its own) and returns the first error of that work
/// since the last synchronization. On a capturing stream: `hipErrorStreamCaptureUnsupported`
/// (and the capture is invalidated).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipStreamSynchronize(stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        synchronize_stream(stream)
    })
}

/// `hipError_t hipStreamQuery(hipStream_t)`: `hipSuccess` if the stream has no queued work,
/// `hipErrorNotReady` if it has (querying runs nothing).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipStreamQuery(stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        if sched::stream_busy(stream)? { Err(hipErrorNotReady) } else { Ok(()) }
    })
}

/// `hipError_t hipStreamWaitEvent(hipStream_t, hipEvent_t, unsigned flags)`: work submitted to
/// `stream` afterwards runs only after the event's last record has completed (a never-recorded
/// event imposes nothing). `flags` must be 0. On a capturing stream, waiting for an event
/// recorded in the same capture is a no-op (capture is in order); any other event is
/// `hipErrorStreamCaptureIsolation` (cross-stream capture is not modelled).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipStreamWaitEvent(stream: hipStream_t, event: hipEvent_t, flags: c_uint) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        let pending = rt().state().events.get(&handle_id(event)).ok_or(hipErrorInvalidHandle)?.pending;
        if flags != 0 {
            return Err(hipErrorInvalidValue);
        }
        let key = stream_key(stream);
        {
            let mut g = sched()?;
            if let Some(c) = &mut g.queues.get_mut(&key).ok_or(hipErrorInvalidHandle)?.capture {
                return if pending.is_some_and(|(s, seq)| s == key && seq == 0) {
                    Ok(())
                } else {
                    c.invalidated = true;
                    Err(hipErrorStreamCaptureIsolation)
                };
            }
            match pending {
                Some((s, seq)) if seq > 0 && s != key && !sched::completed(&g, s, seq) => {}
                _ => return Ok(()),
            }
        }
        let (s, seq) = pending.expect("checked above");
        submit(stream, vec![Op::Wait { stream: s, seq }]).map(|_| ())
    })
}

/// `hipError_t hipStreamAddCallback(hipStream_t, hipStreamCallback_t, void* userData, unsigned
/// flags)`: queues the callback; it runs, with status `hipSuccess`, on whichever thread runs the
/// stream's work (at the next synchronization), after all earlier work. `flags` must be 0. As HIP
/// requires, the callback must not call HIP: such calls fail with `hipErrorIllegalState`.
///
/// # Safety
/// `callback` is safe to call with `(stream, hipSuccess, userData)` from any thread until it has
/// run.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipStreamAddCallback(stream: hipStream_t, callback: hipStreamCallback_t, userData: *mut c_void, flags: c_uint) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        let Some(cb) = callback else { return Err(hipErrorInvalidValue) };
        if flags != 0 {
            return Err(hipErrorInvalidValue);
        }
        submit(stream, vec![Op::Callback { cb, stream: stream_key(stream), user: HostPtr(userData as usize) }]).map(|_| ())
    })
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
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
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
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
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
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
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

const EVENT_FLAGS: c_uint =
    hipEventBlockingSync | hipEventDisableTiming | hipEventInterprocess | hipEventDisableSystemFence | hipEventReleaseToDevice | hipEventReleaseToSystem;

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
    r.state().events.insert(id, EventEntry { flags, recorded: None, pending: None });
    // SAFETY: non-null; the exported callers' contract makes it writable.
    unsafe { event.write(handle_ptr(id)) };
    Ok(())
}

/// `hipError_t hipEventCreate(hipEvent_t*)`.
///
/// # Safety
/// `event` is null or writable.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipEventCreate(event: *mut hipEvent_t) -> hipError_t {
    api(|| create_event(event, hipEventDefault))
}

/// `hipError_t hipEventCreateWithFlags(hipEvent_t*, unsigned flags)`.
///
/// # Safety
/// `event` is null or writable.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipEventCreateWithFlags(event: *mut hipEvent_t, flags: c_uint) -> hipError_t {
    api(|| create_event(event, flags))
}

/// `hipError_t hipEventRecord(hipEvent_t, hipStream_t)`: queues the event's completion after
/// the stream's earlier work (on an idle stream, or the null stream, it completes at once); its
/// timestamp is the host clock when it completes. On a capturing stream the record is part of the
/// capture (only waits in the same capture may use it).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipEventRecord(event: hipEvent_t, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        let id = handle_id(event);
        if !rt().state().events.contains_key(&id) {
            return Err(hipErrorInvalidHandle);
        }
        // The scheduler stays locked until the event is updated, so the record cannot run in
        // between (lock order: scheduler, then state).
        let mut g = sched()?;
        let (key, seq) = sched::submit_locked(&mut g, stream, vec![Op::Record { event: id }])?;
        let mut state = rt().state();
        let e = state.events.get_mut(&id).ok_or(hipErrorInvalidHandle)?;
        if seq > 0 && !sched::completed(&g, key, seq) {
            e.recorded = None;
        }
        e.pending = Some((key, seq));
        Ok(())
    })
}

fn event_pending(event: hipEvent_t) -> Result<Option<(u64, u64)>, hipError_t> {
    Ok(rt().state().events.get(&handle_id(event)).ok_or(hipErrorInvalidHandle)?.pending)
}

/// `hipError_t hipEventSynchronize(hipEvent_t)`: runs the recording stream's work up to the
/// event's last record (nothing for a never-recorded event). Forbidden while a capture is
/// active (`hipErrorStreamCaptureUnsupported`).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipEventSynchronize(event: hipEvent_t) -> hipError_t {
    api(|| {
        let pending = event_pending(event)?;
        let mut g = sched()?;
        capture_guard(&mut g)?;
        if let Some((key, seq)) = pending
            && seq > 0
        {
            if let Some(q) = g.queues.get_mut(&key) {
                q.stats.synchronizations += 1;
            }
            sched::drain_to(&mut g, key, seq);
        }
        Ok(())
    })
}

/// `hipError_t hipEventQuery(hipEvent_t)`: `hipSuccess` if the event's last record has completed
/// (or it was never recorded), `hipErrorNotReady` otherwise.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipEventQuery(event: hipEvent_t) -> hipError_t {
    api(|| match event_pending(event)? {
        Some((key, seq)) if seq > 0 && !sched::completed(&*sched()?, key, seq) => Err(hipErrorNotReady),
        _ => Ok(()),
    })
}

/// `hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop)`: milliseconds
/// of **emulator wall time** between the two records. An event never recorded, or created with
/// `hipEventDisableTiming`, is `hipErrorInvalidHandle` (as in HIP).
///
/// # Safety
/// `ms` is null or writable.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
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
        let elapsed = if t1 >= t0 { t1.duration_since(t0).as_secs_f64() * 1e3 } else { -(t0.duration_since(t1).as_secs_f64() * 1e3) };
        // SAFETY: non-null; caller contract.
        unsafe { ms.write(elapsed as f32) };
        Ok(())
    })
}

/// `hipError_t hipEventDestroy(hipEvent_t)`: the handle becomes invalid.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipEventDestroy(event: hipEvent_t) -> hipError_t {
    api(|| rt().state().events.remove(&handle_id(event)).map(|_| ()).ok_or(hipErrorInvalidHandle))
}
