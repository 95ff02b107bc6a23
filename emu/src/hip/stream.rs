//! Streams and events.

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
    r.state().streams.insert(id, StreamEntry { flags, priority: priority.clamp(-1, 0) });
    // SAFETY: non-null; the exported callers' contract makes it writable.
    unsafe { stream.write(handle_ptr(id)) };
    Ok(())
}

/// `hipError_t hipStreamCreate(hipStream_t*)`.
///
/// # Safety
/// `stream` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreate(stream: *mut hipStream_t) -> hipError_t {
    api(|| create_stream(stream, hipStreamDefault, 0))
}

/// `hipError_t hipStreamCreateWithFlags(hipStream_t*, unsigned flags)`: flags 0 or
/// `hipStreamNonBlocking`.
///
/// # Safety
/// `stream` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreateWithFlags(stream: *mut hipStream_t, flags: c_uint) -> hipError_t {
    api(|| create_stream(stream, flags, 0))
}

/// `hipError_t hipStreamCreateWithPriority(hipStream_t*, unsigned flags, int priority)`.
///
/// # Safety
/// `stream` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreateWithPriority(stream: *mut hipStream_t, flags: c_uint, priority: c_int) -> hipError_t {
    api(|| create_stream(stream, flags, priority))
}

/// `hipError_t hipStreamDestroy(hipStream_t)`: the handle becomes invalid (a second destroy is
/// `hipErrorInvalidHandle`). The null stream cannot be destroyed (`hipErrorInvalidHandle`).
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamDestroy(stream: hipStream_t) -> hipError_t {
    api(|| rt().state().streams.remove(&handle_id(stream)).map(|_| ()).ok_or(hipErrorInvalidHandle))
}

/// `hipError_t hipStreamSynchronize(hipStream_t)`: work completes when issued; validates the
/// handle.
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamSynchronize(stream: hipStream_t) -> hipError_t {
    api(|| check_stream(stream))
}

/// `hipError_t hipStreamQuery(hipStream_t)`: always complete (`hipSuccess`) for a valid stream.
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamQuery(stream: hipStream_t) -> hipError_t {
    api(|| check_stream(stream))
}

/// `hipError_t hipStreamWaitEvent(hipStream_t, hipEvent_t, unsigned flags)`: the event has
/// completed by construction; validates both handles (`flags` must be 0).
#[unsafe(no_mangle)]
pub extern "C" fn hipStreamWaitEvent(stream: hipStream_t, event: hipEvent_t, flags: c_uint) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        if !rt().state().events.contains_key(&handle_id(event)) {
            return Err(hipErrorInvalidHandle);
        }
        if flags != 0 { Err(hipErrorInvalidValue) } else { Ok(()) }
    })
}

/// `hipError_t hipStreamAddCallback(hipStream_t, hipStreamCallback_t, void* userData, unsigned
/// flags)`: all earlier work is complete, so the callback runs immediately, on the calling
/// thread, with status `hipSuccess`. `flags` must be 0.
///
/// # Safety
/// `callback` is safe to call with `(stream, hipSuccess, userData)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamAddCallback(
    stream: hipStream_t,
    callback: hipStreamCallback_t,
    userData: *mut c_void,
    flags: c_uint,
) -> hipError_t {
    let checked = api(|| {
        check_stream(stream)?;
        if callback.is_none() || flags != 0 { Err(hipErrorInvalidValue) } else { Ok(()) }
    });
    if checked != hipSuccess {
        return checked;
    }
    if let Some(cb) = callback {
        // SAFETY: caller contract. Called outside `api` (and outside every lock) so that the
        // callback may itself call HIP functions.
        unsafe { cb(stream, hipSuccess, userData) };
    }
    hipSuccess
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
#[unsafe(no_mangle)]
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
#[unsafe(no_mangle)]
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
#[unsafe(no_mangle)]
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

const EVENT_FLAGS: c_uint = hipEventBlockingSync
    | hipEventDisableTiming
    | hipEventInterprocess
    | hipEventDisableSystemFence
    | hipEventReleaseToDevice
    | hipEventReleaseToSystem;

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
    r.state().events.insert(id, EventEntry { flags, recorded: None });
    // SAFETY: non-null; the exported callers' contract makes it writable.
    unsafe { event.write(handle_ptr(id)) };
    Ok(())
}

/// `hipError_t hipEventCreate(hipEvent_t*)`.
///
/// # Safety
/// `event` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventCreate(event: *mut hipEvent_t) -> hipError_t {
    api(|| create_event(event, hipEventDefault))
}

/// `hipError_t hipEventCreateWithFlags(hipEvent_t*, unsigned flags)`.
///
/// # Safety
/// `event` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventCreateWithFlags(event: *mut hipEvent_t, flags: c_uint) -> hipError_t {
    api(|| create_event(event, flags))
}

/// `hipError_t hipEventRecord(hipEvent_t, hipStream_t)`: timestamps the event with the host
/// clock now — all work issued before has completed.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventRecord(event: hipEvent_t, stream: hipStream_t) -> hipError_t {
    api(|| {
        check_stream(stream)?;
        let now = Instant::now();
        let mut state = rt().state();
        let e = state.events.get_mut(&handle_id(event)).ok_or(hipErrorInvalidHandle)?;
        e.recorded = Some(now);
        Ok(())
    })
}

/// `hipError_t hipEventSynchronize(hipEvent_t)`: nothing to wait for; validates the handle.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventSynchronize(event: hipEvent_t) -> hipError_t {
    api(|| if rt().state().events.contains_key(&handle_id(event)) { Ok(()) } else { Err(hipErrorInvalidHandle) })
}

/// `hipError_t hipEventQuery(hipEvent_t)`: `hipSuccess` (complete) for a valid event.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventQuery(event: hipEvent_t) -> hipError_t {
    hipEventSynchronize(event)
}

/// `hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop)`: milliseconds
/// of **emulator wall time** between the two records. An event never recorded, or created with
/// `hipEventDisableTiming`, is `hipErrorInvalidHandle` (as in HIP).
///
/// # Safety
/// `ms` is null or writable.
#[unsafe(no_mangle)]
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
        let elapsed = if t1 >= t0 {
            t1.duration_since(t0).as_secs_f64() * 1e3
        } else {
            -(t0.duration_since(t1).as_secs_f64() * 1e3)
        };
        // SAFETY: non-null; caller contract.
        unsafe { ms.write(elapsed as f32) };
        Ok(())
    })
}

/// `hipError_t hipEventDestroy(hipEvent_t)`: the handle becomes invalid.
#[unsafe(no_mangle)]
pub extern "C" fn hipEventDestroy(event: hipEvent_t) -> hipError_t {
    api(|| rt().state().events.remove(&handle_id(event)).map(|_| ()).ok_or(hipErrorInvalidHandle))
}
