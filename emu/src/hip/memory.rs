//! Device and host memory: allocation, copies, fills.

use super::*;

// ---------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------

/// Free host RAM (`MemAvailable` of /proc/meminfo), if known: emulated device memory lives in
/// host RAM, so a larger allocation is refused with `hipErrorOutOfMemory` instead of aborting
/// the process.
fn host_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn device_alloc(size: usize) -> Result<u64, hipError_t> {
    capture_guard(&mut *sched()?)?;
    count(|t| t.allocations += 1);
    let r = rt();
    let size = size as u64;
    let free = device_spec().total_global_mem.saturating_sub(r.memory.bytes_live());
    if size > free || host_available_bytes().is_some_and(|avail| size > avail) {
        return Err(hipErrorOutOfMemory);
    }
    let addr = r.memory.alloc(size).map_err(|_| hipErrorOutOfMemory)?;
    r.window_lo.fetch_min(addr, Ordering::AcqRel);
    r.window_hi.fetch_max(addr + size, Ordering::AcqRel);
    r.state().allocations.insert(addr);
    Ok(addr)
}

/// `hipError_t hipMalloc(void** ptr, size_t size)`: a zero-filled device allocation. Size 0
/// gives a null pointer and `hipSuccess`, as in HIP. More than the reported free memory (or the
/// host's available RAM) is `hipErrorOutOfMemory`.
///
/// # Safety
/// `ptr` is null or valid for a write of a pointer.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipMalloc(ptr: *mut *mut c_void, size: usize) -> hipError_t {
    api(|| {
        if ptr.is_null() {
            return Err(hipErrorInvalidValue);
        }
        let value = if size == 0 { std::ptr::null_mut() } else { handle_ptr::<c_void>(device_alloc(size)?) };
        // SAFETY: non-null; caller contract.
        unsafe { ptr.write(value) };
        Ok(())
    })
}

/// `hipError_t hipMallocAsync(void**, size_t, hipStream_t)`: [`hipMalloc`] after validating the
/// stream (the allocation is usable at once by any stream). On a capturing stream:
/// `hipErrorStreamCaptureUnsupported` (graph memory nodes are not modelled).
///
/// # Safety
/// As [`hipMalloc`].
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipMallocAsync(dev_ptr: *mut *mut c_void, size: usize, stream: hipStream_t) -> hipError_t {
    let checked = api(|| forbid_on_capturing(stream));
    if checked != hipSuccess {
        return checked;
    }
    // SAFETY: forwarded caller contract.
    unsafe { hipMalloc(dev_ptr, size) }
}

/// Fails with `hipErrorStreamCaptureUnsupported` (invalidating the capture) if `stream` is
/// capturing, `hipErrorInvalidHandle` if it is unknown.
pub(super) fn forbid_on_capturing(stream: hipStream_t) -> Result<(), hipError_t> {
    let mut g = sched()?;
    let q = g.queues.get_mut(&stream_key(stream)).ok_or(hipErrorInvalidHandle)?;
    if let Some(c) = &mut q.capture {
        c.invalidated = true;
        return Err(hipErrorStreamCaptureUnsupported);
    }
    Ok(())
}

pub(super) fn device_free(ptr: *mut c_void) -> Result<(), hipError_t> {
    if ptr.is_null() {
        return Ok(());
    }
    let r = rt();
    let addr = ptr as usize as u64;
    let mut state = r.state();
    if !state.allocations.remove(&addr) {
        return Err(hipErrorInvalidValue);
    }
    drop(state);
    r.memory.free(addr).map_err(|_| hipErrorInvalidValue)
}

/// `hipError_t hipFree(void*)`: frees a [`hipMalloc`] allocation; null is a no-op. Any other
/// pointer (interior, already freed, host) is `hipErrorInvalidValue`. As in HIP, it first
/// synchronizes the device (all queued work completes, so none can touch the freed memory); so
/// it is forbidden while a capture is active (`hipErrorStreamCaptureUnsupported`).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipFree(ptr: *mut c_void) -> hipError_t {
    api(|| {
        if ptr.is_null() {
            return Ok(());
        }
        let mut g = sched()?;
        capture_guard(&mut g)?;
        count(|t| {
            t.device_synchronizations += 1;
            t.frees += 1;
        });
        drain_all(&mut g);
        device_free(ptr)
    })
}

/// `hipError_t hipFreeAsync(void*, hipStream_t)`: a stream-ordered free: the allocation is
/// released when the stream reaches this point (a bad pointer is `hipErrorInvalidValue` now).
/// On a capturing stream: `hipErrorStreamCaptureUnsupported`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipFreeAsync(dev_ptr: *mut c_void, stream: hipStream_t) -> hipError_t {
    api(|| {
        forbid_on_capturing(stream)?;
        if dev_ptr.is_null() {
            return Ok(());
        }
        if !rt().state().allocations.contains(&(dev_ptr as usize as u64)) {
            return Err(hipErrorInvalidValue);
        }
        count(|t| t.frees += 1);
        submit(stream, vec![Op::Free { addr: dev_ptr as usize as u64 }]).map(|_| ())
    })
}

/// `hipError_t hipMemGetInfo(size_t* free, size_t* total)`: total = 192 GiB, free = total minus
/// the bytes currently allocated.
///
/// # Safety
/// Each pointer is null or valid for a write of a `size_t`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipMemGetInfo(free: *mut usize, total: *mut usize) -> hipError_t {
    api(|| {
        if free.is_null() || total.is_null() {
            return Err(hipErrorInvalidValue);
        }
        let total_bytes = device_spec().total_global_mem;
        let f = total_bytes.saturating_sub(rt().memory.bytes_live());
        // SAFETY: both non-null; caller contract.
        unsafe {
            free.write(f as usize);
            total.write(total_bytes as usize);
        }
        Ok(())
    })
}

/// `hipError_t hipHostMalloc(void**, size_t, unsigned flags)`: page-aligned, zeroed host memory.
/// In the emulator it is ordinary host memory: copies to and from it work, kernels cannot
/// access it ([`hipHostGetDevicePointer`] is `hipErrorNotSupported`).
///
/// # Safety
/// `ptr` is null or valid for a write of a pointer.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipHostMalloc(ptr: *mut *mut c_void, size: usize, flags: c_uint) -> hipError_t {
    let _ = flags;
    api(|| {
        if ptr.is_null() {
            return Err(hipErrorInvalidValue);
        }
        if size == 0 {
            // SAFETY: non-null; caller contract.
            unsafe { ptr.write(std::ptr::null_mut()) };
            return Ok(());
        }
        let layout = std::alloc::Layout::from_size_align(size, 4096).map_err(|_| hipErrorOutOfMemory)?;
        if host_available_bytes().is_some_and(|avail| size as u64 > avail) {
            return Err(hipErrorOutOfMemory);
        }
        // SAFETY: the layout has non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(hipErrorOutOfMemory);
        }
        rt().state().host_allocations.insert(p as usize, layout);
        // SAFETY: non-null; caller contract.
        unsafe { ptr.write(p.cast()) };
        Ok(())
    })
}

/// `hipError_t hipHostFree(void*)`: frees a [`hipHostMalloc`] buffer; null is a no-op, any other
/// pointer `hipErrorInvalidValue`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipHostFree(ptr: *mut c_void) -> hipError_t {
    api(|| {
        if ptr.is_null() {
            return Ok(());
        }
        let layout = rt().state().host_allocations.remove(&(ptr as usize)).ok_or(hipErrorInvalidValue)?;
        // SAFETY: `ptr` came from `alloc_zeroed(layout)` in `hipHostMalloc` and was live (it was
        // in the table, from which it is now removed, so it cannot be freed twice).
        unsafe { std::alloc::dealloc(ptr.cast(), layout) };
        Ok(())
    })
}

/// `hipError_t hipHostGetDevicePointer(void**, void*, unsigned)`: `hipErrorNotSupported` (the
/// emulated device cannot address host memory).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipHostGetDevicePointer(devPtr: *mut *mut c_void, hstPtr: *mut c_void, flags: c_uint) -> hipError_t {
    let _ = (devPtr, hstPtr, flags);
    api(|| Err(hipErrorNotSupported))
}

/// Where a copy operand lives.
#[derive(Clone, Copy)]
enum Loc {
    Host(*mut u8),
    Device(u64),
}

/// Classifies `[p, p + len)`: inside the device address window it must be inside one live
/// allocation (else `hipErrorInvalidValue`); anywhere else it is host memory.
fn locate(p: *const c_void, len: usize) -> Result<Loc, hipError_t> {
    if p.is_null() {
        return Err(hipErrorInvalidValue);
    }
    let r = rt();
    let addr = p as usize as u64;
    if r.in_device_window(addr) {
        r.memory.find(addr, len as u64).map_err(|_| hipErrorInvalidValue)?;
        Ok(Loc::Device(addr))
    } else {
        Ok(Loc::Host(p as *mut u8))
    }
}

/// Validates a copy and turns it into a queued operation: the direction is checked against where
/// the pointers are (an explicit kind that contradicts them is `hipErrorInvalidMemcpyDirection`,
/// since the emulator cannot treat host memory as device memory or vice versa). A host-to-host
/// copy is done at once (`None`). A host source is staged (copied now) unless `live`, in which
/// case it is read when the op runs.
///
/// # Safety
/// Host operands are valid for `len` bytes (reads for `src`, writes for `dst`) until the op runs.
unsafe fn copy_op(dst: *mut c_void, src: *const c_void, len: usize, kind: hipMemcpyKind, live: bool) -> Result<Option<Op>, hipError_t> {
    if len == 0 {
        return Ok(None);
    }
    let (d, s) = (locate(dst, len)?, locate(src, len)?);
    let expected = match kind {
        hipMemcpyHostToHost => Some((false, false)),
        hipMemcpyHostToDevice => Some((true, false)),
        hipMemcpyDeviceToHost => Some((false, true)),
        hipMemcpyDeviceToDevice | hipMemcpyDeviceToDeviceNoCU => Some((true, true)),
        hipMemcpyDefault => None,
        _ => return Err(hipErrorInvalidMemcpyDirection),
    };
    let actual = (matches!(d, Loc::Device(_)), matches!(s, Loc::Device(_)));
    if expected.is_some_and(|e| e != actual) {
        return Err(hipErrorInvalidMemcpyDirection);
    }
    Ok(match (d, s) {
        (Loc::Device(da), Loc::Host(hs)) if live => Some(Op::HtoDLive { dst: da, src: HostPtr(hs as usize), len }),
        (Loc::Device(da), Loc::Host(hs)) => {
            // SAFETY: caller contract: `src` is valid for reads of `len` bytes now.
            let bytes = unsafe { std::slice::from_raw_parts(hs, len) };
            Some(Op::HtoD { dst: da, data: Arc::new(bytes.to_vec()) })
        }
        (Loc::Host(hd), Loc::Device(sa)) => Some(Op::DtoH { dst: HostPtr(hd as usize), src: sa, len }),
        (Loc::Device(da), Loc::Device(sa)) => Some(Op::DtoD { dst: da, src: sa, len }),
        (Loc::Host(hd), Loc::Host(hs)) => {
            // SAFETY: caller contract: both valid for `len` bytes; `copy` tolerates overlap.
            unsafe { std::ptr::copy(hs, hd, len) };
            None
        }
    })
}

/// A synchronous copy (`hipMemcpy`, `hipMemcpyHtoD`, ...): forbidden during a capture, then run
/// on the null stream (after the blocking streams' earlier work).
///
/// # Safety
/// Host operands are valid for `len` bytes for the duration of the call.
unsafe fn copy_sync(dst: *mut c_void, src: *const c_void, len: usize, kind: hipMemcpyKind) -> Result<(), hipError_t> {
    capture_guard(&mut *sched()?)?;
    count(|t| t.synchronous_transfers += 1);
    // SAFETY: forwarded; the op runs before this call returns.
    if let Some(op) = unsafe { copy_op(dst, src, len, kind, true)? } {
        submit(std::ptr::null_mut(), vec![op])?;
    }
    Ok(())
}

/// Whether `stream` runs submitted work now (null stream) or is capturing: then host sources
/// are read when the op runs instead of being staged.
fn reads_live(stream: hipStream_t) -> Result<bool, hipError_t> {
    let key = stream_key(stream);
    let g = sched()?;
    let q = g.queues.get(&key).ok_or(hipErrorInvalidHandle)?;
    Ok(key == NULL_STREAM || q.capture.is_some())
}

/// An asynchronous copy on `stream`.
///
/// # Safety
/// Host operands stay valid for `len` bytes until the copy has run (HIP's contract; a host source
/// is staged at submission unless the stream is capturing, where the graph reads it at replay).
unsafe fn copy_async(dst: *mut c_void, src: *const c_void, len: usize, kind: hipMemcpyKind, stream: hipStream_t) -> Result<(), hipError_t> {
    let live = reads_live(stream)?;
    // SAFETY: forwarded caller contract.
    if let Some(op) = unsafe { copy_op(dst, src, len, kind, live)? } {
        submit(stream, vec![op])?;
    }
    Ok(())
}

/// Copies `len` bytes between two device ranges already validated by [`locate`] (overlap
/// allowed).
pub(super) fn device_to_device(dst: u64, src: u64, len: usize) -> Result<(), hipError_t> {
    let mem = &rt().memory;
    let mut tmp = vec![0u8; len];
    mem.read(src, &mut tmp).map_err(|_| hipErrorInvalidValue)?;
    mem.write(dst, &tmp).map_err(|_| hipErrorInvalidValue)
}

/// A device-to-device copy op from the `hipMemcpyDtoD*` entry points: both operands must be device
/// memory (`hipErrorInvalidMemcpyDirection` otherwise); no host memory is touched.
fn dtod_op(dst: hipDeviceptr_t, src: hipDeviceptr_t, len: usize) -> Result<Vec<Op>, hipError_t> {
    if len == 0 {
        return Ok(vec![]);
    }
    match (locate(dst, len)?, locate(src, len)?) {
        (Loc::Device(d), Loc::Device(s)) => Ok(vec![Op::DtoD { dst: d, src: s, len }]),
        _ => Err(hipErrorInvalidMemcpyDirection),
    }
}

/// `hipError_t hipMemcpy(void* dst, const void* src, size_t, hipMemcpyKind)`: a synchronous copy
/// on the null stream (it first completes the blocking streams' work).
///
/// Device pointers must lie inside one live allocation for the whole length; `hipMemcpyDefault`
/// infers the direction; an explicit kind that contradicts the pointers is
/// `hipErrorInvalidMemcpyDirection`. Size 0 is a no-op. While a capture is active:
/// `hipErrorStreamCaptureUnsupported`.
///
/// # Safety
/// Host operands are valid for `sizeBytes` bytes (HIP's contract).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipMemcpy(dst: *mut c_void, src: *const c_void, sizeBytes: usize, kind: hipMemcpyKind) -> hipError_t {
    // SAFETY: forwarded caller contract.
    api(|| unsafe { copy_sync(dst, src, sizeBytes, kind) })
}

/// `hipError_t hipMemcpyAsync(...)`: [`hipMemcpy`] queued on `stream` (see the module
/// documentation: it runs when the stream is synchronized or waited for). A host source is
/// staged when the call is made; a host destination is written when the copy runs.
///
/// # Safety
/// As [`hipMemcpy`], and a host destination stays valid until the copy has run.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipMemcpyAsync(dst: *mut c_void, src: *const c_void, sizeBytes: usize, kind: hipMemcpyKind, stream: hipStream_t) -> hipError_t {
    // SAFETY: forwarded caller contract.
    api(|| unsafe { copy_async(dst, src, sizeBytes, kind, stream) })
}

/// `hipError_t hipMemcpyWithStream(...)`: [`hipMemcpyAsync`] followed by synchronizing `stream`.
///
/// # Safety
/// As [`hipMemcpy`].
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipMemcpyWithStream(dst: *mut c_void, src: *const c_void, sizeBytes: usize, kind: hipMemcpyKind, stream: hipStream_t) -> hipError_t {
    api(|| {
        // SAFETY: forwarded caller contract; the stream is synchronized before returning.
        unsafe { copy_async(dst, src, sizeBytes, kind, stream)? };
        synchronize_stream(stream)
    })
}

/// `hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void* src, size_t)`: synchronous.
///
/// # Safety
/// `src` is valid for reads of `sizeBytes` bytes.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipMemcpyHtoD(dst: hipDeviceptr_t, src: *mut c_void, sizeBytes: usize) -> hipError_t {
    // SAFETY: forwarded caller contract.
    api(|| unsafe { copy_sync(dst, src, sizeBytes, hipMemcpyHostToDevice) })
}

/// `hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t)`: synchronous.
///
/// # Safety
/// `dst` is valid for writes of `sizeBytes` bytes.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipMemcpyDtoH(dst: *mut c_void, src: hipDeviceptr_t, sizeBytes: usize) -> hipError_t {
    // SAFETY: forwarded caller contract.
    api(|| unsafe { copy_sync(dst, src, sizeBytes, hipMemcpyDeviceToHost) })
}

/// `hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t)`: synchronous.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipMemcpyDtoD(dst: hipDeviceptr_t, src: hipDeviceptr_t, sizeBytes: usize) -> hipError_t {
    api(|| {
        capture_guard(&mut *sched()?)?;
        count(|t| t.synchronous_transfers += 1);
        submit(std::ptr::null_mut(), dtod_op(dst, src, sizeBytes)?).map(|_| ())
    })
}

/// `hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t, void*, size_t, hipStream_t)`.
///
/// # Safety
/// As [`hipMemcpyHtoD`].
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipMemcpyHtoDAsync(dst: hipDeviceptr_t, src: *mut c_void, sizeBytes: usize, stream: hipStream_t) -> hipError_t {
    // SAFETY: forwarded caller contract.
    api(|| unsafe { copy_async(dst, src, sizeBytes, hipMemcpyHostToDevice, stream) })
}

/// `hipError_t hipMemcpyDtoHAsync(void*, hipDeviceptr_t, size_t, hipStream_t)`.
///
/// # Safety
/// As [`hipMemcpyDtoH`], until the copy has run.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipMemcpyDtoHAsync(dst: *mut c_void, src: hipDeviceptr_t, sizeBytes: usize, stream: hipStream_t) -> hipError_t {
    // SAFETY: forwarded caller contract.
    api(|| unsafe { copy_async(dst, src, sizeBytes, hipMemcpyDeviceToHost, stream) })
}

/// `hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t, hipDeviceptr_t, size_t, hipStream_t)`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipMemcpyDtoDAsync(dst: hipDeviceptr_t, src: hipDeviceptr_t, sizeBytes: usize, stream: hipStream_t) -> hipError_t {
    api(|| submit(stream, dtod_op(dst, src, sizeBytes)?).map(|_| ()))
}

/// Validates a fill of `count` elements of `pattern` at device address `dst` (all inside one
/// allocation) and returns its op (none for `count == 0`).
fn fill_op(dst: *mut c_void, pattern: &[u8], count: usize) -> Result<Vec<Op>, hipError_t> {
    if count == 0 {
        return Ok(vec![]);
    }
    let len = count.checked_mul(pattern.len()).ok_or(hipErrorInvalidValue)?;
    let r = rt();
    let addr = dst as usize as u64;
    if dst.is_null() || !r.in_device_window(addr) {
        return Err(hipErrorInvalidValue);
    }
    r.memory.find(addr, len as u64).map_err(|_| hipErrorInvalidValue)?;
    Ok(vec![Op::Fill { dst: addr, pattern: pattern.to_vec(), count }])
}

/// Runs a fill validated by [`fill_op`].
pub(super) fn fill_now(addr: u64, pattern: &[u8], count: usize) -> Result<(), hipError_t> {
    let len = count * pattern.len();
    let alloc = rt().memory.find(addr, len as u64).map_err(|_| hipErrorIllegalAddress)?;
    if pattern.iter().all(|&b| b == pattern[0]) {
        alloc.fill(addr, len as u64, pattern[0]);
    } else {
        // Write in bounded chunks so huge fills do not need a buffer of their full size.
        const CHUNK: usize = 1 << 20;
        let chunk: Vec<u8> = pattern.iter().copied().cycle().take(CHUNK.min(len)).collect();
        let mut done = 0;
        while done < len {
            let n = chunk.len().min(len - done);
            alloc.write(addr + done as u64, &chunk[..n]);
            done += n;
        }
    }
    Ok(())
}

/// A synchronous fill: forbidden during a capture, then run on the null stream.
fn fill_sync(dst: *mut c_void, pattern: &[u8], count: usize) -> Result<(), hipError_t> {
    capture_guard(&mut *sched()?)?;
    let ops = fill_op(dst, pattern, count)?;
    crate::hip::sched::count(|t| t.synchronous_transfers += 1);
    submit(std::ptr::null_mut(), ops).map(|_| ())
}

/// `hipError_t hipMemset(void* dst, int value, size_t sizeBytes)`: sets bytes to
/// `(unsigned char)value`; `dst` must be device memory. Synchronous (null stream).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipMemset(dst: *mut c_void, value: c_int, sizeBytes: usize) -> hipError_t {
    api(|| fill_sync(dst, &[value as u8], sizeBytes))
}

/// `hipError_t hipMemsetAsync(void*, int, size_t, hipStream_t)`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipMemsetAsync(dst: *mut c_void, value: c_int, sizeBytes: usize, stream: hipStream_t) -> hipError_t {
    api(|| submit(stream, fill_op(dst, &[value as u8], sizeBytes)?).map(|_| ()))
}

/// `hipError_t hipMemsetD8(hipDeviceptr_t, unsigned char, size_t count)`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipMemsetD8(dest: hipDeviceptr_t, value: u8, count: usize) -> hipError_t {
    api(|| fill_sync(dest, &[value], count))
}

/// `hipError_t hipMemsetD16(hipDeviceptr_t, unsigned short, size_t count)`: `count` 16-bit
/// elements.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipMemsetD16(dest: hipDeviceptr_t, value: u16, count: usize) -> hipError_t {
    api(|| fill_sync(dest, &value.to_le_bytes(), count))
}

/// `hipError_t hipMemsetD32(hipDeviceptr_t, int, size_t count)`: `count` 32-bit elements.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipMemsetD32(dest: hipDeviceptr_t, value: c_int, count: usize) -> hipError_t {
    api(|| fill_sync(dest, &value.to_le_bytes(), count))
}

/// `hipError_t hipMemsetD8Async(hipDeviceptr_t, unsigned char, size_t, hipStream_t)`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipMemsetD8Async(dest: hipDeviceptr_t, value: u8, count: usize, stream: hipStream_t) -> hipError_t {
    api(|| submit(stream, fill_op(dest, &[value], count)?).map(|_| ()))
}

/// `hipError_t hipMemsetD16Async(hipDeviceptr_t, unsigned short, size_t, hipStream_t)`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipMemsetD16Async(dest: hipDeviceptr_t, value: u16, count: usize, stream: hipStream_t) -> hipError_t {
    api(|| submit(stream, fill_op(dest, &value.to_le_bytes(), count)?).map(|_| ()))
}

/// `hipError_t hipMemsetD32Async(hipDeviceptr_t, int, size_t, hipStream_t)`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipMemsetD32Async(dst: hipDeviceptr_t, value: c_int, count: usize, stream: hipStream_t) -> hipError_t {
    api(|| submit(stream, fill_op(dst, &value.to_le_bytes(), count)?).map(|_| ()))
}
