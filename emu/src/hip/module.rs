//! Modules, functions and kernel launches.

use super::*;

// ---------------------------------------------------------------------------------------------
// Modules and functions
// ---------------------------------------------------------------------------------------------

/// Largest code object image accepted (sanity bound on sizes read from an untrusted header).
const MAX_IMAGE_BYTES: u64 = 1 << 30;
/// `e_machine` of AMDGPU ELF files.
const EM_AMDGPU: u16 = 224;
/// Magic of a clang offload bundle (what `hipcc --genco` may produce).
const BUNDLE_MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";

/// Reads `N` bytes at `p + off`.
///
/// # Safety
/// `[p + off, p + off + N)` is readable.
unsafe fn read_at<const N: usize>(p: *const u8, off: u64) -> [u8; N] {
    let mut out = [0u8; N];
    // SAFETY: caller contract.
    unsafe { std::ptr::copy_nonoverlapping(p.add(off as usize), out.as_mut_ptr(), N) };
    out
}

/// The length of the ELF image at `p`, computed from its headers: the end of the furthest of
/// the ELF header, program headers, section headers and section contents.
///
/// # Safety
/// `p` points to a complete ELF64 file (HIP's contract for `hipModuleLoadData`); the headers are
/// read in order, each only after the fields locating it have been bounds-checked for sanity.
unsafe fn elf_image_len(p: *const u8) -> Result<u64, hipError_t> {
    // SAFETY: every ELF64 file starts with its 64-byte header (caller contract).
    let ident: [u8; 64] = unsafe { read_at(p, 0) };
    if &ident[..4] != b"\x7fELF" || ident[4] != 2 || ident[5] != 1 {
        return Err(hipErrorInvalidImage);
    }
    let u16_at = |o: usize| u16::from_le_bytes([ident[o], ident[o + 1]]);
    let u64_at = |o: usize| u64::from_le_bytes(ident[o..o + 8].try_into().expect("8 bytes"));
    if u16_at(18) != EM_AMDGPU {
        return Err(hipErrorInvalidImage);
    }
    let (phoff, shoff) = (u64_at(32), u64_at(40));
    let (phentsize, phnum, shentsize, shnum) = (u16_at(54) as u64, u16_at(56) as u64, u16_at(58) as u64, u16_at(60) as u64);
    let ph_end = phoff.checked_add(phentsize * phnum).ok_or(hipErrorInvalidImage)?;
    let sh_end = shoff.checked_add(shentsize * shnum).ok_or(hipErrorInvalidImage)?;
    let mut end = 64u64.max(ph_end).max(sh_end);
    if end > MAX_IMAGE_BYTES || (shnum > 0 && shentsize < 64) || (phnum > 0 && phentsize < 56) {
        return Err(hipErrorInvalidImage);
    }
    for i in 0..shnum {
        // SAFETY: section header i lies inside the file the caller vouches for, at the offset its
        // ELF header gives (checked above to be below MAX_IMAGE_BYTES, with 64-byte entries).
        let sh: [u8; 64] = unsafe { read_at(p, shoff + i * shentsize) };
        let sh_type = u32::from_le_bytes(sh[4..8].try_into().expect("4 bytes"));
        let off = u64::from_le_bytes(sh[24..32].try_into().expect("8 bytes"));
        let size = u64::from_le_bytes(sh[32..40].try_into().expect("8 bytes"));
        if sh_type != 8 {
            // Not SHT_NOBITS: the contents are in the file.
            end = end.max(off.checked_add(size).ok_or(hipErrorInvalidImage)?);
        }
    }
    for i in 0..phnum {
        // SAFETY: program header i lies inside the file, as for the section headers above.
        let ph: [u8; 56] = unsafe { read_at(p, phoff + i * phentsize) };
        let off = u64::from_le_bytes(ph[8..16].try_into().expect("8 bytes"));
        let filesz = u64::from_le_bytes(ph[32..40].try_into().expect("8 bytes"));
        end = end.max(off.checked_add(filesz).ok_or(hipErrorInvalidImage)?);
    }
    if end > MAX_IMAGE_BYTES {
        return Err(hipErrorInvalidImage);
    }
    Ok(end)
}

/// The length of the bundle at `p` from its headers: the furthest of the entry table and the
/// entries' contents.
///
/// # Safety
/// `p` points to a complete clang offload bundle.
unsafe fn bundle_image_len(p: *const u8) -> Result<u64, hipError_t> {
    // SAFETY: a bundle's entry count follows its 24-byte magic (caller contract).
    let n = u64::from_le_bytes(unsafe { read_at(p, 24) });
    if n > 1024 {
        return Err(hipErrorInvalidImage);
    }
    let mut off = 32u64;
    let mut end = off;
    for _ in 0..n {
        // SAFETY: entry headers (offset, size, triple length, triple) follow each other inside
        // the bundle the caller vouches for; this one starts where the previous one, found sane,
        // ended.
        let (eoff, esize, tlen) =
            unsafe { (u64::from_le_bytes(read_at(p, off)), u64::from_le_bytes(read_at(p, off + 8)), u64::from_le_bytes(read_at(p, off + 16))) };
        if tlen > 4096 || eoff > MAX_IMAGE_BYTES || esize > MAX_IMAGE_BYTES {
            return Err(hipErrorInvalidImage);
        }
        off += 24 + tlen;
        end = end.max(off).max(eoff + esize);
    }
    if end > MAX_IMAGE_BYTES {
        return Err(hipErrorInvalidImage);
    }
    Ok(end)
}

/// The length of the image (AMDGPU ELF or clang offload bundle) at `p`, from its headers.
///
/// # Safety
/// `p` points to a complete image (HIP's contract for `hipModuleLoadData`), at least 24 bytes.
unsafe fn image_len(p: *const u8) -> Result<u64, hipError_t> {
    // SAFETY: both formats are longer than 24 bytes (caller contract).
    let magic: [u8; 24] = unsafe { read_at(p, 0) };
    if magic.starts_with(b"\x7fELF") {
        // SAFETY: caller contract.
        unsafe { elf_image_len(p) }
    } else if &magic == BUNDLE_MAGIC {
        // SAFETY: caller contract.
        unsafe { bundle_image_len(p) }
    } else {
        Err(hipErrorInvalidImage)
    }
}

/// The code object for this device in `bytes`: the bytes themselves for an ELF file, or the
/// `hip*-amdgcn-amd-amdhsa--<device processor>*` entry of a clang offload bundle (`gfx942`, or
/// `gfx950` after [`set_device_arch`]; `hipErrorNoBinaryForGpu` if it has none).
fn select_code_object(bytes: &[u8]) -> Result<&[u8], hipError_t> {
    if !bytes.starts_with(BUNDLE_MAGIC) {
        return Ok(bytes);
    }
    let rd = |o: usize| -> Result<usize, hipError_t> {
        let b = bytes.get(o..o.checked_add(8).ok_or(hipErrorInvalidImage)?).ok_or(hipErrorInvalidImage)?;
        usize::try_from(u64::from_le_bytes(b.try_into().expect("8 bytes"))).map_err(|_| hipErrorInvalidImage)
    };
    let n = rd(24)?;
    let device = device_arch().name();
    let mut off = 32usize;
    for _ in 0..n.min(1024) {
        let (eoff, esize, tlen) = (rd(off)?, rd(off + 8)?, rd(off + 16)?);
        let tstart = off + 24;
        let tend = tstart.checked_add(tlen).ok_or(hipErrorInvalidImage)?;
        let triple = bytes.get(tstart..tend).ok_or(hipErrorInvalidImage)?;
        off = tend;
        let triple = String::from_utf8_lossy(triple);
        let processor = triple.split_once("--").map(|(_, t)| t.split(':').next().unwrap_or(""));
        if triple.starts_with("hip") && processor == Some(device) && esize > 0 {
            let eend = eoff.checked_add(esize).ok_or(hipErrorInvalidImage)?;
            return bytes.get(eoff..eend).ok_or(hipErrorInvalidImage);
        }
    }
    Err(hipErrorNoBinaryForGpu)
}

/// Code objects alive (see [`LoadedCode`]).
static LIVE_CODE_OBJECTS: AtomicU64 = AtomicU64::new(0);

/// The number of loaded code objects still in memory (for [`super::live_objects`]).
pub(super) fn live_code_objects() -> usize {
    LIVE_CODE_OBJECTS.load(Ordering::Relaxed) as usize
}

/// A loaded code object (with its decode cache), counted while alive so that leak tests can see
/// that it goes with the last module, function handle, queued launch or graph holding it.
pub(super) struct LoadedCode(CodeObject);

impl LoadedCode {
    fn new(code: CodeObject) -> LoadedCode {
        LIVE_CODE_OBJECTS.fetch_add(1, Ordering::Relaxed);
        LoadedCode(code)
    }
}

impl Drop for LoadedCode {
    fn drop(&mut self) {
        LIVE_CODE_OBJECTS.fetch_sub(1, Ordering::Relaxed);
    }
}

impl std::ops::Deref for LoadedCode {
    type Target = CodeObject;
    fn deref(&self) -> &CodeObject {
        &self.0
    }
}

fn load_module(bytes: &[u8]) -> Result<u64, hipError_t> {
    let code = CodeObject::parse(bytes).map_err(|e| {
        set_detail(format!("hipModuleLoadData: {e}"));
        match e {
            crate::loader::LoadError::WrongArch { .. } => hipErrorNoBinaryForGpu,
            _ => hipErrorInvalidImage,
        }
    })?;
    // The emulated HIP device is one processor (gfx942 unless `set_device_arch` /
    // AMDGPU_EMU_ARCH chose gfx950); a code object for another target has no binary for it, as
    // on hardware. (exec::launch runs any loaded target directly.)
    let device = device_arch();
    if code.target() != device {
        set_detail(format!("hipModuleLoadData: code object is for {}, the device is {}", code.arch(), device.name()));
        return Err(hipErrorNoBinaryForGpu);
    }
    let r = rt();
    let id = r.new_handle();
    r.state().modules.insert(id, ModuleEntry { code: Arc::new(LoadedCode::new(code)), functions: HashMap::new() });
    Ok(id)
}

/// `hipError_t hipModuleLoadData(hipModule_t*, const void* image)`: loads a code object for the
/// device's processor ([`device_arch`]: gfx942 unless set to gfx950)
/// (an AMDGPU ELF, or a clang offload bundle holding one). A malformed image is
/// `hipErrorInvalidImage`; a code object for another GPU `hipErrorNoBinaryForGpu` (the loader's
/// message is kept for [`last_error_detail`]).
///
/// # Safety
/// `module` is null or writable; `image` is null or points to a complete code object (its
/// length is taken from its own headers, as HIP does).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipModuleLoadData(module: *mut hipModule_t, image: *const c_void) -> hipError_t {
    api(|| {
        if module.is_null() || image.is_null() {
            return Err(hipErrorInvalidValue);
        }
        let image = image.cast::<u8>();
        // SAFETY: caller contract: a complete image; `image_len` reads only its headers.
        let len = unsafe { image_len(image)? };
        // SAFETY: `len` is the image's extent computed from its own headers.
        let bytes = unsafe { std::slice::from_raw_parts(image, len as usize) };
        let id = load_module(select_code_object(bytes)?)?;
        // SAFETY: non-null; caller contract.
        unsafe { module.write(handle_ptr(id)) };
        Ok(())
    })
}

/// `hipError_t hipModuleLoadDataEx(hipModule_t*, const void*, unsigned, hipJitOption*, void**)`:
/// [`hipModuleLoadData`]; the JIT options do not apply to code objects and are ignored.
///
/// # Safety
/// As [`hipModuleLoadData`].
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipModuleLoadDataEx(
    module: *mut hipModule_t,
    image: *const c_void,
    numOptions: c_uint,
    options: *mut hipJitOption,
    optionValues: *mut *mut c_void,
) -> hipError_t {
    let _ = (numOptions, options, optionValues);
    // SAFETY: forwarded caller contract.
    unsafe { hipModuleLoadData(module, image) }
}

/// `hipError_t hipModuleLoad(hipModule_t*, const char* fname)`: loads a code object file. A
/// missing file is `hipErrorFileNotFound`.
///
/// # Safety
/// `module` is null or writable; `fname` is null or a NUL-terminated string.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipModuleLoad(module: *mut hipModule_t, fname: *const c_char) -> hipError_t {
    api(|| {
        if module.is_null() || fname.is_null() {
            return Err(hipErrorInvalidValue);
        }
        // SAFETY: caller contract: NUL-terminated.
        let name = unsafe { CStr::from_ptr(fname) };
        let path = name.to_str().map_err(|_| hipErrorFileNotFound)?;
        let bytes = std::fs::read(path).map_err(|_| hipErrorFileNotFound)?;
        let id = load_module(select_code_object(&bytes)?)?;
        // SAFETY: non-null; caller contract.
        unsafe { module.write(handle_ptr(id)) };
        Ok(())
    })
}

/// `hipError_t hipModuleUnload(hipModule_t)`: the module handle and every function handle
/// obtained from it become invalid (`hipErrorInvalidHandle` on any later use, as the functions of
/// an unloaded module are gone in HIP), and the code object is freed — at once, or when the last
/// queued launch or captured graph that still refers to it is done with it (such a launch fails
/// with `hipErrorInvalidHandle` instead of running).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipModuleUnload(module: hipModule_t) -> hipError_t {
    api(|| {
        let mut state = rt().state();
        let entry = state.modules.remove(&handle_id(module)).ok_or(hipErrorInvalidHandle)?;
        for id in entry.functions.values() {
            state.functions.remove(id);
        }
        Ok(())
    })
}

/// `hipError_t hipModuleGetFunction(hipFunction_t*, hipModule_t, const char* kname)`: the same
/// handle for repeated lookups of one kernel; `hipErrorNotFound` if the module has no kernel
/// of that name.
///
/// # Safety
/// `function` is null or writable; `kname` is null or NUL-terminated.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipModuleGetFunction(function: *mut hipFunction_t, module: hipModule_t, kname: *const c_char) -> hipError_t {
    api(|| {
        if function.is_null() || kname.is_null() {
            return Err(hipErrorInvalidValue);
        }
        // SAFETY: caller contract: NUL-terminated.
        let name = unsafe { CStr::from_ptr(kname) };
        let r = rt();
        let mut guard = r.state();
        let state = &mut *guard;
        let entry = state.modules.get_mut(&handle_id(module)).ok_or(hipErrorInvalidHandle)?;
        let index = entry.code.kernels().iter().position(|k| k.name.as_bytes() == name.to_bytes()).ok_or(hipErrorNotFound)?;
        let id = match entry.functions.get(&index) {
            Some(&id) => id,
            None => {
                let id = r.new_handle();
                entry.functions.insert(index, id);
                state.functions.insert(id, FunctionEntry { code: entry.code.clone(), module: handle_id(module), kernel: index });
                id
            }
        };
        // SAFETY: non-null; caller contract.
        unsafe { function.write(handle_ptr(id)) };
        Ok(())
    })
}

/// `hipError_t hipModuleGetGlobal(hipDeviceptr_t*, size_t*, hipModule_t, const char*)`: device
/// globals are not modelled (the project's kernels have none): `hipErrorNotFound` for a valid
/// module.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipModuleGetGlobal(dptr: *mut hipDeviceptr_t, bytes: *mut usize, hmod: hipModule_t, name: *const c_char) -> hipError_t {
    api(|| {
        if name.is_null() {
            return Err(hipErrorInvalidValue);
        }
        let _ = (dptr, bytes);
        if !rt().state().modules.contains_key(&handle_id(hmod)) {
            return Err(hipErrorInvalidHandle);
        }
        Err(hipErrorNotFound)
    })
}

fn function_entry(f: hipFunction_t) -> Result<FunctionEntry, hipError_t> {
    rt().state().functions.get(&handle_id(f)).cloned().ok_or(hipErrorInvalidHandle)
}

/// `hipError_t hipFuncGetAttribute(int*, hipFunction_attribute, hipFunction_t)`, from the
/// kernel's metadata: max threads per block = `.max_flat_workgroup_size`, shared size =
/// `.group_segment_fixed_size`, local size = `.private_segment_fixed_size`, registers =
/// `.vgpr_count`, max dynamic shared = 64 KiB − static LDS, versions = 94 (gfx9.4).
///
/// # Safety
/// `value` is null or valid for a write of an `int`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipFuncGetAttribute(value: *mut c_int, attrib: hipFunction_attribute, hfunc: hipFunction_t) -> hipError_t {
    api(|| {
        let f = function_entry(hfunc)?;
        let m = &f.code.kernels()[f.kernel].meta;
        let v = match attrib {
            HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK => m.max_flat_workgroup_size,
            HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES => m.group_segment_fixed_size,
            HIP_FUNC_ATTRIBUTE_CONST_SIZE_BYTES => 0,
            HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES => m.private_segment_fixed_size,
            HIP_FUNC_ATTRIBUTE_NUM_REGS => m.vgpr_count,
            HIP_FUNC_ATTRIBUTE_PTX_VERSION | HIP_FUNC_ATTRIBUTE_BINARY_VERSION => 90 + DeviceSpec::of(f.code.target()).minor as u32,
            HIP_FUNC_ATTRIBUTE_CACHE_MODE_CA => 0,
            HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES => device_spec().lds_bytes_per_workgroup.saturating_sub(m.group_segment_fixed_size),
            HIP_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT => 0,
            _ => return Err(hipErrorInvalidValue),
        };
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(value, v as c_int) }
    })
}

// ---------------------------------------------------------------------------------------------
// Kernel launch
// ---------------------------------------------------------------------------------------------

/// Value of a hidden kernel argument (see the module documentation).
fn hidden_value(kind: &str, grid: [u32; 3], block: [u32; 3], dynamic_lds: u32) -> u64 {
    let dim = |s: &str| match s {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some(d) = kind.strip_prefix("hidden_block_count_").and_then(dim) {
        return grid[d].into();
    }
    if let Some(d) = kind.strip_prefix("hidden_group_size_").and_then(dim) {
        return block[d].into();
    }
    match kind {
        "hidden_grid_dims" => 3,
        "hidden_dynamic_lds_size" => dynamic_lds.into(),
        // High halves of the flat apertures, as the executor maps them.
        "hidden_shared_base" => exec::SHARED_APERTURE >> 32,
        "hidden_private_base" => exec::PRIVATE_APERTURE >> 32,
        // hidden_remainder_*: grids are whole workgroups; hidden_global_offset_*: no offsets;
        // everything else: services the emulator does not provide.
        _ => 0,
    }
}

/// Builds the complete kernarg segment of `kernel` from `kernelParams` or `extra`.
///
/// # Safety
/// HIP's contract: `kernelParams` (if non-null) holds one pointer per explicit argument, each
/// valid for reads of that argument's `.size`; `extra` (if non-null) is a 5-element
/// `HIP_LAUNCH_PARAM_*` array whose buffer is valid for its stated size.
unsafe fn build_kernarg(
    kernel: &Kernel,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
    grid: [u32; 3],
    block: [u32; 3],
    dynamic_lds: u32,
) -> Result<Vec<u8>, String> {
    let meta = &kernel.meta;
    let seg = meta.kernarg_segment_size as usize;
    let mut kernarg = vec![0u8; seg];
    let explicit: Vec<_> = meta.args.iter().filter(|a| !a.value_kind.starts_with("hidden_")).collect();
    for a in &meta.args {
        if (a.offset as usize).checked_add(a.size as usize).is_none_or(|end| end > seg) {
            return Err(format!("argument {:?} ({} bytes at offset {}) lies outside the {seg}-byte kernarg segment", a.name, a.size, a.offset));
        }
    }
    if !kernel_params.is_null() {
        for (i, a) in explicit.iter().enumerate() {
            // SAFETY: caller contract: one pointer per explicit argument.
            let p = unsafe { *kernel_params.add(i) };
            if p.is_null() {
                return Err(format!("kernelParams[{i}] is null"));
            }
            let (o, n) = (a.offset as usize, a.size as usize);
            // SAFETY: caller contract: `p` is valid for `n` bytes; the destination range was
            // checked against the segment above.
            unsafe { std::ptr::copy_nonoverlapping(p.cast::<u8>(), kernarg[o..o + n].as_mut_ptr(), n) };
        }
    } else if !extra.is_null() {
        // SAFETY: caller contract: 5 readable pointers.
        let e: [*mut c_void; 5] = unsafe { std::array::from_fn(|i| *extra.add(i)) };
        if e[0] != HIP_LAUNCH_PARAM_BUFFER_POINTER || e[2] != HIP_LAUNCH_PARAM_BUFFER_SIZE || e[4] != HIP_LAUNCH_PARAM_END {
            return Err("extra is not {HIP_LAUNCH_PARAM_BUFFER_POINTER, buf, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END}".into());
        }
        if e[3].is_null() {
            return Err("extra: the HIP_LAUNCH_PARAM_BUFFER_SIZE pointer is null".into());
        }
        // SAFETY: non-null, points to a size_t (caller contract).
        let size = unsafe { *e[3].cast::<usize>() };
        let buf = e[1].cast::<u8>();
        if !explicit.is_empty() && (buf.is_null() || size == 0) {
            return Err("the kernel has arguments but the extra buffer is empty".into());
        }
        for a in &explicit {
            let (o, n) = (a.offset as usize, a.size as usize);
            if o + n > size {
                return Err(format!("extra buffer of {size} bytes does not cover argument {:?} ({n} bytes at offset {o})", a.name));
            }
            // SAFETY: `buf` is valid for `size` ≥ o + n bytes (caller contract); destination
            // checked against the segment above.
            unsafe { std::ptr::copy_nonoverlapping(buf.add(o), kernarg[o..o + n].as_mut_ptr(), n) };
        }
    }
    for a in meta.args.iter().filter(|a| a.value_kind.starts_with("hidden_")) {
        let v = hidden_value(&a.value_kind, grid, block, dynamic_lds).to_le_bytes();
        let (o, n) = (a.offset as usize, a.size as usize);
        for (i, b) in kernarg[o..o + n].iter_mut().enumerate() {
            *b = v.get(i).copied().unwrap_or(0);
        }
    }
    Ok(kernarg)
}

/// Records a launch failure message ([`last_launch_error`], [`last_error_detail`]) and returns
/// `code`.
fn launch_failed(code: hipError_t, msg: String) -> hipError_t {
    set_detail(msg.clone());
    set_last_launch(Some(msg), None, None);
    code
}

/// `hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gridDimX, gridDimY, gridDimZ,
/// unsigned blockDimX, blockDimY, blockDimZ, unsigned sharedMemBytes, hipStream_t stream,
/// void** kernelParams, void** extra)`.
///
/// Validates the launch and builds its kernarg segment now, then submits it to `stream` (grid in
/// workgroups, as in HIP): on the null stream it runs to completion inside the call, on a created
/// stream when that stream's work runs, in a capture when the graph is replayed. See the module
/// documentation for argument marshalling, validation and the error codes. A kernel fault poisons
/// the device (see the module documentation): its message is kept for [`device_fault`] and the
/// submitter's [`last_launch_error`], and its code is returned by this call (null stream) or the
/// next synchronization (queued launch) and every later call. On success [`last_launch_report`]
/// has the launch's counters. A function whose module was unloaded cannot be launched
/// (`hipErrorInvalidHandle`, also if the unload happens while the launch is queued).
///
/// # Safety
/// HIP's contract for `kernelParams` / `extra` (see the module documentation).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipModuleLaunchKernel(
    f: hipFunction_t,
    gridDimX: c_uint,
    gridDimY: c_uint,
    gridDimZ: c_uint,
    blockDimX: c_uint,
    blockDimY: c_uint,
    blockDimZ: c_uint,
    sharedMemBytes: c_uint,
    stream: hipStream_t,
    kernelParams: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> hipError_t {
    api(|| {
        let grid = [gridDimX, gridDimY, gridDimZ];
        let block = [blockDimX, blockDimY, blockDimZ];
        let func = match function_entry(f) {
            Ok(func) => func,
            Err(code) => return Err(launch_failed(code, format!("hipModuleLaunchKernel: invalid function handle {f:p}"))),
        };
        let kernel = &func.code.kernels()[func.kernel];
        let name = &kernel.name;
        let fail = |code, what: String| Err(launch_failed(code, format!("kernel `{name}`: {what}")));
        if check_stream(stream).is_err() {
            return fail(hipErrorInvalidHandle, format!("invalid stream handle {stream:p}"));
        }
        if grid.contains(&0) || block.contains(&0) {
            return fail(hipErrorInvalidValue, format!("zero grid {grid:?} or block {block:?} dimension"));
        }
        if gridDimX > i32::MAX as u32 || gridDimY > 65536 || gridDimZ > 65536 {
            return fail(hipErrorInvalidValue, format!("grid {grid:?} exceeds the device limits [2147483647, 65536, 65536]"));
        }
        let threads = block.iter().map(|&b| u64::from(b)).product::<u64>();
        if block.iter().any(|&b| b > MAX_THREADS_PER_BLOCK) || threads > u64::from(MAX_THREADS_PER_BLOCK) {
            return fail(hipErrorInvalidValue, format!("block {block:?} ({threads} work-items) exceeds 1024 work-items"));
        }
        let spec = device_spec();
        if func.code.target() != spec.target {
            return fail(hipErrorNoBinaryForGpu, format!("its code object is for {}, the device is {}", func.code.arch(), spec.target.name()));
        }
        let lds_max = spec.lds_bytes_per_workgroup;
        if sharedMemBytes > lds_max {
            return fail(hipErrorInvalidValue, format!("sharedMemBytes {sharedMemBytes} exceeds {lds_max}"));
        }
        if !kernelParams.is_null() && !extra.is_null() {
            return fail(hipErrorInvalidValue, "both kernelParams and extra are given; pass exactly one".into());
        }
        let has_explicit = kernel.meta.args.iter().any(|a| !a.value_kind.starts_with("hidden_"));
        if has_explicit && kernelParams.is_null() && extra.is_null() {
            return fail(hipErrorInvalidValue, "the kernel has arguments but neither kernelParams nor extra is given".into());
        }
        let bound = kernel.meta.max_flat_workgroup_size;
        if threads > u64::from(bound) {
            return fail(
                hipErrorLaunchFailure,
                format!("Launch params ({}, {}, {}) are larger than launch bounds ({bound}) (.max_flat_workgroup_size)", block[0], block[1], block[2]),
            );
        }
        let lds = u64::from(kernel.meta.group_segment_fixed_size) + u64::from(sharedMemBytes);
        if lds > u64::from(lds_max) {
            return fail(
                hipErrorLaunchOutOfResources,
                format!(
                    "static LDS {} + dynamic LDS {sharedMemBytes} = {lds} bytes exceeds the {lds_max} bytes of a workgroup",
                    kernel.meta.group_segment_fixed_size
                ),
            );
        }
        // SAFETY: forwarded caller contract for kernelParams / extra.
        let kernarg = match unsafe { build_kernarg(kernel, kernelParams, extra, grid, block, sharedMemBytes) } {
            Ok(k) => k,
            Err(msg) => return fail(hipErrorInvalidValue, msg),
        };
        if !rt().state().modules.contains_key(&func.module) {
            return fail(hipErrorInvalidHandle, "its module was unloaded".into());
        }
        let cfg = LaunchConfig { grid, block, dynamic_lds_bytes: sharedMemBytes, kernarg };
        let kernarg = cfg.kernarg.clone();
        let submitter = std::thread::current().id();
        // The outcome is recorded for this thread (by whichever thread runs the launch); the
        // guard forgets it when this thread exits.
        OUTCOME_GUARD.with(|_| ());
        let device = CURRENT_DEVICE.with(Cell::get);
        match submit(stream, vec![Op::Launch { func: func.clone(), cfg: Arc::new(cfg), submitter, device }]) {
            Ok((_, 0)) => Ok(()),
            Ok(_) => {
                // Queued: the outcome is known when it runs.
                set_last_launch(None, None, Some(kernarg));
                Ok(())
            }
            Err(code) => Err(code),
        }
    })
}

/// Runs a launch validated (and queued) by [`hipModuleLaunchKernel`] on device `device`: fails
/// with the device's sticky code if a fault poisoned it in the meantime (the kernel does not
/// run), with `hipErrorInvalidHandle` if the kernel's module was unloaded (the code a real device
/// would run is gone), otherwise executes it and records the outcome for the submitter's
/// [`last_launch_error`] / [`last_launch_report`]. A kernel fault poisons `device`.
pub(super) fn run_launch(func: &FunctionEntry, cfg: &LaunchConfig, submitter: std::thread::ThreadId, device: c_int) -> Result<(), hipError_t> {
    let previous = LAUNCH_OWNER.replace(Some(submitter));
    let result = run_launch_as_owner(func, cfg, device);
    LAUNCH_OWNER.set(previous);
    result
}

fn run_launch_as_owner(func: &FunctionEntry, cfg: &LaunchConfig, device: c_int) -> Result<(), hipError_t> {
    let kernel = &func.code.kernels()[func.kernel];
    let name = &kernel.name;
    if let Some(f) = device_fault(device) {
        set_last_launch(Some(format!("kernel `{name}` not run: device {device} is poisoned by an earlier fault: {}", f.message)), None, None);
        return Err(f.code);
    }
    if !rt().state().modules.contains_key(&func.module) {
        return Err(launch_failed(hipErrorInvalidHandle, format!("kernel `{name}`: its module was unloaded while the launch was queued")));
    }
    let r = rt();
    let timing = r.timing.read().unwrap_or_else(|p| p.into_inner()).clone();
    if let Some(mode) = timing {
        return match crate::timing::simulate(&func.code, kernel, cfg, &r.memory, &mode.machine, &mode.options) {
            Ok(t) => {
                set_outcome(LaunchOutcome { error: None, report: None, kernarg: Some(cfg.kernarg.clone()), timing: Some(Arc::new(t)) });
                Ok(())
            }
            Err(e) => {
                let code = launch_error_code(&e);
                let msg = format!("kernel `{name}` (timing run): {e}");
                Err(launch_faulted(device, &e, code, msg, cfg))
            }
        };
    }
    let checks = r.checks.read().unwrap_or_else(|p| p.into_inner()).clone();
    match exec::launch(&func.code, kernel, cfg, &r.memory, &checks) {
        Ok(report) => {
            set_last_launch(None, Some(Arc::new(report)), Some(cfg.kernarg.clone()));
            Ok(())
        }
        Err(e) => {
            let code = launch_error_code(&e);
            let text = e.to_string();
            let msg = if text.contains(name.as_str()) { text } else { format!("kernel `{name}`: {text}") };
            Err(launch_faulted(device, &e, code, msg, cfg))
        }
    }
}

/// Records a launch that failed while running: poisons `device` if the error is a kernel fault
/// ([`is_kernel_fault`]), keeps the message for the submitter and the running thread, returns
/// `code`.
fn launch_faulted(device: c_int, e: &exec::LaunchError, code: hipError_t, msg: String, cfg: &LaunchConfig) -> hipError_t {
    if is_kernel_fault(e) {
        poison(device, code, &msg);
    }
    set_detail(msg.clone());
    set_last_launch(Some(msg), None, Some(cfg.kernarg.clone()));
    code
}

/// Whether an executor error is a fault of the running kernel (memory fault or memcheck
/// violation, trap, undecodable or unimplemented instruction, a checker's finding, the watchdog),
/// which poisons the device as on HIP — rather than a launch the executor refused to start
/// (geometry, resources), which fails alone.
fn is_kernel_fault(e: &exec::LaunchError) -> bool {
    use exec::LaunchError as E;
    match e {
        E::Memory { .. } | E::Watchdog { .. } | E::Decode(_) | E::Unimplemented { .. } | E::Trap { .. } | E::Fault { .. } | E::Check { .. } => true,
        E::Alloc { .. } | E::ZeroDim { .. } | E::KernargSize { .. } | E::LdsTooLarge { .. } | E::BlockTooLarge { .. } => false,
    }
}

/// The HIP code for an executor error: memcheck findings are `hipErrorIllegalAddress`; the
/// watchdog `hipErrorLaunchTimeOut`; traps,
/// faults, undecodable or unimplemented instructions `hipErrorLaunchFailure`. (The executor's own
/// geometry checks never fire after this module's validation; they map to the codes HIP uses.)
fn launch_error_code(e: &exec::LaunchError) -> hipError_t {
    use exec::LaunchError as E;
    match e {
        E::Memory { .. } => hipErrorIllegalAddress,
        E::Alloc { .. } => hipErrorOutOfMemory,
        E::ZeroDim { .. } | E::KernargSize { .. } => hipErrorInvalidValue,
        E::LdsTooLarge { .. } => hipErrorLaunchOutOfResources,
        E::Watchdog { .. } => hipErrorLaunchTimeOut,
        E::BlockTooLarge { .. } | E::Decode(_) | E::Unimplemented { .. } | E::Trap { .. } | E::Fault { .. } | E::Check { .. } => hipErrorLaunchFailure,
    }
}
