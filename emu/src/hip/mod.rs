//! The HIP C ABI of the emulated device: a gfx942 MI300X, or a gfx950 MI355X after
//! [`set_device_arch`] (or with `AMDGPU_EMU_ARCH=gfx950` in the environment; [`DeviceSpec`]).
//!
//! Every `hip*` function here has the exact C signature HIP declares (checked against the
//! bindings `rocm-rs` 0.4.2 ships, HIP 6.3). Rust code calls them directly (the `fp8gemm`
//! library's emulator backend does); with the crate feature `hip-abi` they are also exported
//! unmangled, so a binary that calls HIP — through `rocm-rs` or any other binding that declares
//! the functions without linking `libamdhip64` — runs its kernels on this emulator. Only
//! binaries that opt in (the workspace's tests and CLI) enable `hip-abi`; a library that depends
//! on this crate exports no HIP symbol.
//!
//! # The emulated runtime
//! * One device, ordinal 0 (or several identical ones sharing everything, see [`set_device_count`]): an "AMD Instinct MI300X (emulated)", `gfx942:sramecc+:xnack-`,
//!   304 CUs, 64 KiB LDS per workgroup, wave64, 192 GiB of reported memory
//!   ([`hipGetDevicePropertiesR0600`] lists every value); or, after [`set_device_arch`]
//!   (`AMDGPU_EMU_ARCH=gfx950`), an "AMD Instinct MI355X (emulated)", `gfx950:sramecc+:xnack-`,
//!   256 CUs, 160 KiB LDS per workgroup ([`DeviceSpec::MI355X`]). The device runs code objects
//!   of its own processor only.
//! * Device memory is [`crate::memory::DeviceMemory`]: bounds-checked allocations at 64-bit
//!   device addresses handed out upward from `0x1000_0000_0000` (16 TiB) and never reused. A pointer
//!   in the window of addresses ever allocated is a device pointer (live, or stale and rejected);
//!   any other is ordinary host memory. A copy's direction is validated against where its
//!   pointers really are (see [`hipMemcpy`]). The window ends at `0x5000_0000_0000`, below where
//!   Linux x86-64 places host mappings, so no host pointer is ever mistaken for a device one.
//! * Handles (`hipModule_t`, `hipFunction_t`, `hipStream_t`, `hipEvent_t`) are opaque non-null
//!   ids, never dereferenced; every use looks them up, and an unknown or destroyed handle is
//!   `hipErrorInvalidHandle` (400), never undefined behaviour. (HIP itself reports some destroyed
//!   streams as `hipErrorContextIsDestroyed`; the emulator uses 400 for every stale handle.)
//! * **Streams are asynchronous, in-order queues that run lazily** (see `sched.rs`): work
//!   submitted to a created stream is validated and queued, and runs only when something waits
//!   for it (stream, event or device synchronization, a dependent stream's `hipStreamWaitEvent`,
//!   `hipFree`, or a null-stream operation, which — like HIP's legacy null stream — first
//!   completes all blocking streams' work). So a missing event between two streams yields stale
//!   data deterministically. Null-stream work (including every synchronous copy) runs inside
//!   the call. [`stream_stats`] counts what each stream was given (launches, host copies,
//!   synchronizations), [`thread_stats`] the device-wide calls a thread made (allocations, frees,
//!   device synchronizations), for "no host round trip" assertions.
//! * Stream capture and graphs (`graph.rs`): captured work is recorded instead of queued and
//!   replayed by `hipGraphLaunch`; allocations, frees, synchronous copies and synchronizations
//!   fail during a capture with `hipErrorStreamCaptureUnsupported`, as in HIP.
//! * Event timestamps are taken from the host's monotonic clock when the record completes, so
//!   [`hipEventElapsedTime`] measures **emulator wall time**, not GPU time.
//! * **A kernel fault poisons its device, as on HIP.** A fault while a kernel runs — a memory
//!   fault or memcheck violation (`hipErrorIllegalAddress`), a trap, an undecodable or
//!   unimplemented instruction or another checker's finding (`hipErrorLaunchFailure`), the
//!   watchdog (`hipErrorLaunchTimeOut`) — fails the call that ran it (the launch on the null
//!   stream, the synchronization of a queued launch) and makes the fault *sticky*: every later
//!   HIP call made while that device is current returns the same code, and no further kernel of
//!   that device runs, until [`hipDeviceReset`]. HIP documents this state as a prior launch
//!   failure that "affected the current HIP context state" and may need a device reset
//!   (`hipErrorPriorLaunchFailure`, ROCm/HIP `docs/reference/error_codes.rst`), and ROCm returns
//!   the kernel's error from every later API call (JuliaGPU/AMDGPU.jl pull request 914, "Drain
//!   sticky HIP error"). Exempt, so a program can still inspect and recover: the
//!   error queries ([`hipGetLastError`], [`hipPeekAtLastError`], [`hipGetErrorName`],
//!   [`hipGetErrorString`]), version and device-count queries, [`hipGetDevice`] /
//!   [`hipSetDevice`] and [`hipDeviceReset`]. The full message — kernel, pc, lane, address — is
//!   kept for [`device_fault`] (any thread) and [`last_launch_error`] (the submitting thread);
//!   the library never prints. Launch *validation* failures (bad geometry, arguments, handles)
//!   are returned by the launch and poison nothing, as in HIP.
//! * The "last error" of [`hipGetLastError`] / [`hipPeekAtLastError`] is per thread: a failing
//!   call stores its code, `hipGetLastError` returns and clears it. So is the current device
//!   and the launch outcome read by [`last_launch_error`] / [`last_launch_report`].
//!
//! # Rust-side accessors
//! For the host library and tests (not part of HIP): [`device_fault`] (a device's sticky
//! fault and its message), [`last_error_detail`] (the message behind the calling thread's last
//! failure, e.g. why a code object was rejected), [`live_objects`] (counts of everything alive
//! on the emulated device, for leak tests), [`last_launch_error`],
//! [`last_launch_report`] and [`last_launch_kernarg`] describe the calling thread's most recent
//! [`hipModuleLaunchKernel`]; [`set_launch_checks`] selects the executor's checks (every mode —
//! memcheck, mfma-hazard, racecheck, late-arrival, uninit-lds — on by default; the environment
//! variable `AMDGPU_EMU_CHECKS`, e.g. `AMDGPU_EMU_CHECKS=memcheck`, sets the initial modes, see
//! [`crate::exec::Checks::parse`]); [`device_memory`] exposes the allocations; [`device_properties`] is what
//! [`hipGetDevicePropertiesR0600`] reports; [`stream_stats`] and [`thread_stats`] count what
//! was submitted to each stream and the device-wide calls of each thread; [`graph_len`] is the
//! number of operations a captured graph holds. Note that a binary gets the exported `hip*`
//! symbols only with feature `hip-abi` and if it links this crate, i.e. references it somewhere
//! (`use amdgpu_emu as _;` suffices).
//!
//! # Kernel arguments
//! [`hipModuleLaunchKernel`] builds the kernarg segment (`.kernarg_segment_size` bytes, zeroed)
//! from the kernel's `.args` metadata, as the HIP runtime does:
//! * explicit arguments (every `.value_kind` not starting with `hidden_`), in order: with
//!   `kernelParams`, `kernelParams[i]` points to the `.size` bytes of the i-th explicit argument,
//!   copied to its `.offset`; with `extra` (`{HIP_LAUNCH_PARAM_BUFFER_POINTER, buf,
//!   HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END}`), each explicit argument is
//!   copied from `buf + .offset`. (A buffer too short for an explicit argument is rejected with
//!   `hipErrorInvalidValue`, where HIP would leave that argument undefined.)
//! * hidden arguments, by `.value_kind`: `hidden_block_count_{x,y,z}` = grid size in
//!   workgroups, `hidden_group_size_{x,y,z}` = block size, `hidden_remainder_{x,y,z}` = 0 (the
//!   grid is a whole number of workgroups), `hidden_grid_dims` = 3 (HIP always dispatches a 3-D
//!   grid), `hidden_dynamic_lds_size` = `sharedMemBytes`, `hidden_global_offset_{x,y,z}` = 0,
//!   `hidden_shared_base` / `hidden_private_base` = the high 32 bits of the executor's flat
//!   LDS / scratch apertures. Every other hidden argument (printf/hostcall buffers, heap, queue
//!   pointer, multigrid sync, default queue, completion action, `hidden_none`) is written as 0:
//!   the emulator provides none of those services.
//!
//! # Launch validation (as HIP 6.x does it)
//! Zero grid or block dimension, a grid larger than 2³¹−1 × 65536 × 65536, a block of more
//! than 1024 work-items or with a dimension over 1024, `sharedMemBytes` over 64 KiB, both or
//! neither of `kernelParams` / `extra` for a kernel with arguments, or a malformed `extra`:
//! `hipErrorInvalidValue`. A block larger than the kernel's `.max_flat_workgroup_size` (its
//! launch bound): `hipErrorLaunchFailure`, with HIP's "Launch params (x, y, z) are larger than
//! launch bounds (n)" message. Static (`.group_segment_fixed_size`) plus dynamic LDS over
//! 64 KiB: the emulator returns `hipErrorLaunchOutOfResources`.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, RwLock};
use std::time::Instant;

use crate::exec::{self, Checks, LaunchConfig, LaunchReport};
use crate::loader::{CodeObject, Kernel};
use crate::memory::DeviceMemory;

mod graph;
mod memory;
mod module;
mod sched;
mod stream;
mod types;

pub use graph::*;
pub use memory::*;
pub use module::*;
pub use sched::{StreamStats, ThreadStats, stream_stats, thread_stats};
pub use stream::*;
pub use types::*;

use sched::{HostPtr, NULL_STREAM, Op, capture_guard, count, drain_all, sched, stream_key, submit, synchronize_device, synchronize_stream};

// ---------------------------------------------------------------------------------------------
// Runtime state
// ---------------------------------------------------------------------------------------------

/// The outcome of the most recent kernel launch on a thread.
struct LaunchOutcome {
    error: Option<String>,
    report: Option<Arc<LaunchReport>>,
    kernarg: Option<Vec<u8>>,
    timing: Option<Arc<crate::timing::TimingReport>>,
}

thread_local! {
    static LAST_ERROR: Cell<hipError_t> = const { Cell::new(hipSuccess) };
    static CURRENT_DEVICE: Cell<c_int> = const { Cell::new(0) };
    /// While this thread runs a queued launch: the thread that submitted it (its outcome is
    /// recorded for that thread).
    static LAUNCH_OWNER: Cell<Option<std::thread::ThreadId>> = const { Cell::new(None) };
    /// The message behind the thread's last failure ([`last_error_detail`]).
    static LAST_DETAIL: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    /// Removes the thread's entry of [`LAST_LAUNCH`] when the thread exits.
    static OUTCOME_GUARD: OutcomeGuard = OutcomeGuard(std::thread::current().id());
}

/// Dropped when its thread exits: forgets that thread's launch outcome, so a process that
/// launches from short-lived threads does not keep one outcome (report, kernarg) per thread
/// it ever ran. Holds the thread's id (`thread::current` is not available while thread-locals
/// are being destroyed).
struct OutcomeGuard(std::thread::ThreadId);

impl Drop for OutcomeGuard {
    fn drop(&mut self) {
        LAST_LAUNCH.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.0);
    }
}

/// The outcome of each thread's most recent launch, by the thread that *submitted* it: a
/// launch queued on a stream may run on whichever thread synchronizes (even a device-wide
/// synchronization or free by another thread), and its outcome still belongs to its submitter.
static LAST_LAUNCH: LazyLock<Mutex<HashMap<std::thread::ThreadId, LaunchOutcome>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn with_outcome<T>(f: impl FnOnce(&LaunchOutcome) -> Option<T>) -> Option<T> {
    let map = LAST_LAUNCH.lock().unwrap_or_else(|p| p.into_inner());
    map.get(&std::thread::current().id()).and_then(f)
}

/// Records the outcome of a launch for its owner: the submitter while a queued launch runs,
/// else the calling thread.
fn set_outcome(outcome: LaunchOutcome) {
    let owner = LAUNCH_OWNER.get().unwrap_or_else(|| {
        // The owner is this thread: make sure its entry goes when it exits. (A queued launch
        // run by another thread records for its submitter, which registered at submission.)
        OUTCOME_GUARD.with(|_| ());
        std::thread::current().id()
    });
    LAST_LAUNCH.lock().unwrap_or_else(|p| p.into_inner()).insert(owner, outcome);
}

struct ModuleEntry {
    code: Arc<module::LoadedCode>,
    /// Function handles already handed out for this module, by kernel index.
    functions: HashMap<usize, u64>,
}

#[derive(Clone)]
struct FunctionEntry {
    /// The module's code object (shared with the module; a queued launch or a captured graph
    /// keeps it alive until it has run or been destroyed, even after `hipModuleUnload`).
    code: Arc<module::LoadedCode>,
    /// The module handle it came from.
    module: u64,
    kernel: usize,
}

struct StreamEntry {
    flags: c_uint,
    priority: c_int,
}

struct EventEntry {
    flags: c_uint,
    /// When the event last completed (`None`: never recorded, or its last record is pending).
    recorded: Option<Instant>,
    /// The last record: (stream key, sequence number of the record op), 0 if it completed at once.
    pending: Option<(u64, u64)>,
}

#[derive(Default)]
struct State {
    modules: HashMap<u64, ModuleEntry>,
    functions: HashMap<u64, FunctionEntry>,
    streams: HashMap<u64, StreamEntry>,
    events: HashMap<u64, EventEntry>,
    /// Captured graphs and their instantiations: the operations to submit, in order.
    graphs: HashMap<u64, Arc<Vec<Op>>>,
    graph_execs: HashMap<u64, Arc<Vec<Op>>>,
    /// Live `hipMalloc` allocations (device addresses).
    allocations: HashSet<u64>,
    /// Live `hipHostMalloc` allocations: address → layout.
    host_allocations: HashMap<usize, std::alloc::Layout>,
}

/// The process-global emulated runtime: one device and everything created on it.
struct Runtime {
    memory: DeviceMemory,
    state: Mutex<State>,
    /// Next handle id; ids are multiples of 16 from 0x1000 so that no handle equals null,
    /// `hipStreamPerThread` (2) or any other small sentinel.
    next_handle: AtomicU64,
    /// `[lo, hi)`: the device address window every allocation ever made lies in. A pointer in
    /// it is a device pointer (live or stale), never host memory.
    window_lo: AtomicU64,
    window_hi: AtomicU64,
    /// Checks applied to every launch.
    checks: RwLock<Checks>,
    /// When set, launches run through the timing model ([`crate::timing::simulate`]).
    timing: RwLock<Option<TimingMode>>,
    /// The sticky kernel fault of each poisoned device ordinal (see [`device_fault`]).
    faults: Mutex<HashMap<c_int, DeviceFault>>,
    /// The processor the device is ([`set_device_arch`]).
    arch: RwLock<crate::loader::Target>,
}

/// A kernel fault that poisoned a device: every later HIP call on it returns [`Self::code`]
/// until [`hipDeviceReset`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceFault {
    /// The sticky `hipError_t` (`hipErrorIllegalAddress`, `hipErrorLaunchFailure`,
    /// `hipErrorLaunchTimeOut`).
    pub code: hipError_t,
    /// The finding: kernel, check, pc, workgroup, wave, lane, address.
    pub message: String,
}

/// Launches run through the timing model: the machine and the simulation options.
#[derive(Clone, Debug)]
pub struct TimingMode {
    /// The machine modelled.
    pub machine: crate::timing::Machine,
    /// Scope, MFMA-math skipping and checks of the functional run (the checks of
    /// [`set_launch_checks`] are not used while timing).
    pub options: crate::timing::SimOptions,
}

static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| Runtime {
    memory: DeviceMemory::new(),
    state: Mutex::new(State::default()),
    next_handle: AtomicU64::new(0x1000),
    window_lo: AtomicU64::new(u64::MAX),
    window_hi: AtomicU64::new(0),
    checks: RwLock::new(checks_from_env()),
    timing: RwLock::new(None),
    faults: Mutex::new(HashMap::new()),
    arch: RwLock::new(arch_from_env()),
});

/// Why `AMDGPU_EMU_ARCH` could not be parsed, if it could not (see [`arch_env_error`]).
static ARCH_ENV_ERROR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The processor a new process's device is: gfx942 (MI300X), or the one the `AMDGPU_EMU_ARCH`
/// environment variable names (`gfx942` or `gfx950`; read once, at the first HIP call, and
/// nowhere else). An unknown value keeps gfx942 and is reported by [`arch_env_error`].
fn arch_from_env() -> crate::loader::Target {
    use crate::loader::Target;
    match std::env::var("AMDGPU_EMU_ARCH") {
        Ok(v) => match v.trim() {
            "gfx942" => Target::Gfx942,
            "gfx950" => Target::Gfx950,
            other => {
                let _ = ARCH_ENV_ERROR.set(format!("AMDGPU_EMU_ARCH={other:?}: expected gfx942 or gfx950; the device is a gfx942"));
                Target::Gfx942
            }
        },
        Err(_) => Target::Gfx942,
    }
}

/// Why the `AMDGPU_EMU_ARCH` environment variable was rejected (the device is then a gfx942), if
/// it was.
pub fn arch_env_error() -> Option<String> {
    let _ = rt();
    ARCH_ENV_ERROR.get().cloned()
}

/// Makes the emulated device a `target` part ([`DeviceSpec::of`]: gfx942 = MI300X, gfx950 =
/// MI355X) for everything that follows: device properties, which code objects
/// `hipModuleLoadData` accepts (the device's target only; others are `hipErrorNoBinaryForGpu`),
/// LDS limits of launches. Modules loaded before keep their code; launching one whose target is
/// not the device's is `hipErrorNoBinaryForGpu`. Process-wide, like the device itself.
pub fn set_device_arch(target: crate::loader::Target) {
    *rt().arch.write().unwrap_or_else(|p| p.into_inner()) = target;
}

/// The processor the emulated device is (see [`set_device_arch`]).
pub fn device_arch() -> crate::loader::Target {
    *rt().arch.read().unwrap_or_else(|p| p.into_inner())
}

/// The part the emulated device is: [`DeviceSpec::of`] its [`device_arch`].
pub fn device_spec() -> DeviceSpec {
    DeviceSpec::of(device_arch())
}

/// Why `AMDGPU_EMU_CHECKS` could not be parsed, if it could not (see [`checks_env_error`]).
static CHECKS_ENV_ERROR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The checks a new process starts with: every mode ([`Checks::all`]: memcheck, mfma-hazard,
/// racecheck, late-arrival, uninit-lds), or the modes listed in the `AMDGPU_EMU_CHECKS`
/// environment variable (read once, at the first HIP call), e.g. `AMDGPU_EMU_CHECKS=memcheck`
/// for the fastest checked runs or `AMDGPU_EMU_CHECKS=memcheck,racecheck` (syntax of
/// [`Checks::parse`]). With an unparsable value every mode is used and the parse error is kept
/// for [`checks_env_error`] (the library does not print).
/// (All modes cost about 1.5x emulation time on the dense GEMM kernels.)
fn checks_from_env() -> Checks {
    match std::env::var("AMDGPU_EMU_CHECKS") {
        Ok(v) => Checks::parse(&v).unwrap_or_else(|e| {
            let _ = CHECKS_ENV_ERROR.set(format!("AMDGPU_EMU_CHECKS={v:?}: {e}; using every check"));
            Checks::all()
        }),
        Err(_) => Checks::all(),
    }
}

/// Why the `AMDGPU_EMU_CHECKS` environment variable was rejected (every check is then on), if it
/// was. Read once, when the runtime starts (the first HIP call).
pub fn checks_env_error() -> Option<String> {
    let _ = rt();
    CHECKS_ENV_ERROR.get().cloned()
}

impl Runtime {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn new_handle(&self) -> u64 {
        self.next_handle.fetch_add(16, Ordering::Relaxed)
    }

    fn in_device_window(&self, addr: u64) -> bool {
        addr >= self.window_lo.load(Ordering::Acquire) && addr < self.window_hi.load(Ordering::Acquire)
    }
}

fn rt() -> &'static Runtime {
    &RUNTIME
}

/// The emulated device's memory (the allocations `hipMalloc` made), for Rust-side inspection.
pub fn device_memory() -> &'static DeviceMemory {
    &rt().memory
}

/// The sticky fault of device `device`, if a kernel fault has poisoned it since the process
/// started or since the last [`hipDeviceReset`] (see the module documentation). Any thread may
/// ask: this is how a host library reports the finding on every later failing call.
pub fn device_fault(device: c_int) -> Option<DeviceFault> {
    rt().faults.lock().unwrap_or_else(|p| p.into_inner()).get(&device).cloned()
}

/// Poisons `device` with a kernel fault (the first fault stays: later ones are its consequences).
fn poison(device: c_int, code: hipError_t, message: &str) {
    rt().faults.lock().unwrap_or_else(|p| p.into_inner()).entry(device).or_insert_with(|| DeviceFault { code, message: message.to_string() });
}

/// `Err(sticky code)` if the calling thread's current device is poisoned.
fn check_poison() -> Result<(), hipError_t> {
    let device = CURRENT_DEVICE.with(Cell::get);
    match rt().faults.lock().unwrap_or_else(|p| p.into_inner()).get(&device) {
        Some(f) => Err(f.code),
        None => Ok(()),
    }
}

/// How many objects of each kind are alive on the emulated device (every device ordinal; they
/// share one runtime). For leak tests: after everything a program created is destroyed, every
/// count is back where it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveObjects {
    /// Loaded modules.
    pub modules: usize,
    /// Function handles (each belongs to a loaded module).
    pub functions: usize,
    /// Code objects in memory: held by modules, function handles, queued launches and graphs.
    pub code_objects: usize,
    /// Created streams.
    pub streams: usize,
    /// Events.
    pub events: usize,
    /// Captured graphs.
    pub graphs: usize,
    /// Instantiated graphs.
    pub graph_execs: usize,
    /// `hipMalloc` allocations.
    pub allocations: usize,
    /// `hipHostMalloc` allocations.
    pub host_allocations: usize,
    /// Threads with a kept launch outcome ([`last_launch_error`] and friends); an entry goes
    /// with its thread.
    pub launch_outcomes: usize,
}

/// Counts of everything alive on the emulated device (see [`LiveObjects`]).
pub fn live_objects() -> LiveObjects {
    let launch_outcomes = LAST_LAUNCH.lock().unwrap_or_else(|p| p.into_inner()).len();
    let s = rt().state();
    LiveObjects {
        modules: s.modules.len(),
        functions: s.functions.len(),
        code_objects: module::live_code_objects(),
        streams: s.streams.len(),
        events: s.events.len(),
        graphs: s.graphs.len(),
        graph_execs: s.graph_execs.len(),
        allocations: s.allocations.len(),
        host_allocations: s.host_allocations.len(),
        launch_outcomes,
    }
}

/// The message behind the calling thread's most recent failed HIP call, when the emulator has
/// more to say than the code: why a code object was rejected, a kernel's fault or launch
/// validation failure, an internal error. Cleared by [`hipDeviceReset`]; not cleared by success.
pub fn last_error_detail() -> Option<String> {
    LAST_DETAIL.with(|d| d.borrow().clone())
}

/// Records the message behind a failure for [`last_error_detail`].
fn set_detail(msg: impl Into<String>) {
    let msg = msg.into();
    LAST_DETAIL.with(|d| *d.borrow_mut() = Some(msg));
}

/// Replaces the checks (memcheck, ...) applied to every subsequent kernel launch in the process.
/// The initial value is [`Checks::all`] (every mode) unless the `AMDGPU_EMU_CHECKS` environment
/// variable lists other modes (e.g. `memcheck` for [`Checks::default`]).
pub fn set_launch_checks(checks: Checks) {
    *rt().checks.write().unwrap_or_else(|p| p.into_inner()) = checks;
}

/// The full error message of the most recent kernel launch made by this thread, if that launch
/// failed (validation or kernel fault), e.g. ``kernel `add_one_f32`: memcheck: ... pc 0x1c ...
/// lane 5 ... address 0x...``. `None` if the most recent launch succeeded or there was none.
/// For a launch queued on a stream: once it has run (on whichever thread), else the
/// submission's outcome (no error, no report).
pub fn last_launch_error() -> Option<String> {
    with_outcome(|o| o.error.clone())
}

/// The counters of the most recent kernel launch made by this thread, if it ran to completion
/// (a queued launch: once its stream's work has run, on whichever thread).
pub fn last_launch_report() -> Option<Arc<LaunchReport>> {
    with_outcome(|o| o.report.clone())
}

/// The kernarg segment (explicit and hidden arguments) the most recent launch made by this
/// thread passed to the kernel, if the launch got as far as building it. For inspecting the
/// argument marshalling.
pub fn last_launch_kernarg() -> Option<Vec<u8>> {
    with_outcome(|o| o.kernarg.clone())
}

fn set_last_launch(error: Option<String>, report: Option<Arc<LaunchReport>>, kernarg: Option<Vec<u8>>) {
    set_outcome(LaunchOutcome { error, report, kernarg, timing: None });
}

/// Makes every kernel launch that *runs* from now on (queued launches run when their stream is
/// synchronized or waited for) go through the timing model (`Some`), or run normally again
/// (`None`). While timing, [`last_launch_timing`] holds each launch's modelled time and
/// [`last_launch_report`] is `None`.
pub fn set_timing(mode: Option<TimingMode>) {
    *rt().timing.write().unwrap_or_else(|p| p.into_inner()) = mode;
}

/// The timing model's report of the most recent kernel launch made by this thread, if it ran
/// with [`set_timing`] on and completed. Every figure in it is modelled, not measured.
pub fn last_launch_timing() -> Option<Arc<crate::timing::TimingReport>> {
    with_outcome(|o| o.timing.clone())
}

/// Runs one API call on the current device: fails with the device's sticky fault code if it is
/// poisoned, stores a failure as the thread's last error, and turns a panic (an emulator bug)
/// into `hipErrorUnknown` instead of unwinding into C.
fn api(f: impl FnOnce() -> Result<(), hipError_t>) -> hipError_t {
    api_unchecked(|| {
        check_poison()?;
        f()
    })
}

/// [`api`] without the poison check: for the calls HIP still answers on a poisoned device
/// (device selection, counts, versions, reset).
fn api_unchecked(f: impl FnOnce() -> Result<(), hipError_t>) -> hipError_t {
    let code = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => hipSuccess,
        Ok(Err(code)) => code,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_detail(format!("internal error in a HIP call: {msg}"));
            hipErrorUnknown
        }
    };
    if code != hipSuccess {
        LAST_ERROR.with(|e| e.set(code));
    }
    code
}

fn handle_id<T>(p: *mut T) -> u64 {
    p as usize as u64
}

fn handle_ptr<T>(id: u64) -> *mut T {
    std::ptr::without_provenance_mut(id as usize)
}

/// Validates a stream handle: null and `hipStreamPerThread` are the default stream.
fn check_stream(stream: hipStream_t) -> Result<(), hipError_t> {
    if stream.is_null() || stream == hipStreamPerThread {
        return Ok(());
    }
    if rt().state().streams.contains_key(&handle_id(stream)) { Ok(()) } else { Err(hipErrorInvalidHandle) }
}

/// How many devices the emulator reports (see [`set_device_count`]).
static DEVICE_COUNT: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1);

/// Makes the emulator report `count` (at least 1) identical devices, ordinals `0..count`, which
/// share one memory and one set of streams: enough to test how host code manages the current
/// device (which `hipSetDevice` sets per thread), not a multi-GPU model. The default is 1.
pub fn set_device_count(count: c_int) {
    DEVICE_COUNT.store(count.max(1), Ordering::Relaxed);
}

fn check_device(device: c_int) -> Result<(), hipError_t> {
    if (0..DEVICE_COUNT.load(Ordering::Relaxed)).contains(&device) { Ok(()) } else { Err(hipErrorInvalidDevice) }
}

/// Writes `value` through an out-pointer, or fails with `hipErrorInvalidValue` if it is null.
///
/// # Safety
/// `out` is null or valid for a write of `T`.
unsafe fn put<T>(out: *mut T, value: T) -> Result<(), hipError_t> {
    if out.is_null() {
        return Err(hipErrorInvalidValue);
    }
    // SAFETY: non-null, and the caller guarantees it is valid for writes of T.
    unsafe { out.write(value) };
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Initialization, versions, devices, errors
// ---------------------------------------------------------------------------------------------

/// `hipError_t hipInit(unsigned int flags)`: `flags` must be 0.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipInit(flags: c_uint) -> hipError_t {
    api_unchecked(|| if flags == 0 { Ok(()) } else { Err(hipErrorInvalidValue) })
}

/// `hipError_t hipDriverGetVersion(int*)`: [`EMULATED_HIP_VERSION`].
///
/// # Safety
/// `driverVersion` is null or valid for a write of an `int`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipDriverGetVersion(driverVersion: *mut c_int) -> hipError_t {
    // SAFETY: caller contract (null is rejected by `put`).
    api_unchecked(|| unsafe { put(driverVersion, EMULATED_HIP_VERSION) })
}

/// `hipError_t hipRuntimeGetVersion(int*)`: [`EMULATED_HIP_VERSION`].
///
/// # Safety
/// `runtimeVersion` is null or valid for a write of an `int`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipRuntimeGetVersion(runtimeVersion: *mut c_int) -> hipError_t {
    // SAFETY: caller contract (null is rejected by `put`).
    api_unchecked(|| unsafe { put(runtimeVersion, EMULATED_HIP_VERSION) })
}

/// `hipError_t hipGetDeviceCount(int*)`: 1.
///
/// # Safety
/// `count` is null or valid for a write of an `int`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipGetDeviceCount(count: *mut c_int) -> hipError_t {
    // SAFETY: caller contract (null is rejected by `put`).
    api_unchecked(|| unsafe { put(count, DEVICE_COUNT.load(Ordering::Relaxed)) })
}

/// `hipError_t hipGetDevice(int*)`: the calling thread's current device (always 0).
///
/// # Safety
/// `deviceId` is null or valid for a write of an `int`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipGetDevice(deviceId: *mut c_int) -> hipError_t {
    let current = CURRENT_DEVICE.with(Cell::get);
    // SAFETY: caller contract (null is rejected by `put`).
    api_unchecked(|| unsafe { put(deviceId, current) })
}

/// `hipError_t hipSetDevice(int)`: only device 0 exists (`hipErrorInvalidDevice` otherwise).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipSetDevice(deviceId: c_int) -> hipError_t {
    api_unchecked(|| {
        check_device(deviceId)?;
        CURRENT_DEVICE.with(|c| c.set(deviceId));
        Ok(())
    })
}

/// `hipError_t hipDeviceGet(hipDevice_t*, int ordinal)`.
///
/// # Safety
/// `device` is null or valid for a write of an `int`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipDeviceGet(device: *mut hipDevice_t, ordinal: c_int) -> hipError_t {
    api(|| {
        check_device(ordinal)?;
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(device, ordinal) }
    })
}

/// `hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600*, int)` (what HIP 6's
/// `hipGetDeviceProperties` macro names): see [`device_properties`].
///
/// # Safety
/// `prop` is null or valid for a write of a `hipDeviceProp_tR0600`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipGetDevicePropertiesR0600(prop: *mut hipDeviceProp_tR0600, deviceId: c_int) -> hipError_t {
    api(|| {
        check_device(deviceId)?;
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(prop, device_properties()) }
    })
}

/// `hipError_t hipDeviceGetName(char* name, int len, hipDevice_t)`: the NUL-terminated name,
/// truncated to `len - 1` bytes.
///
/// # Safety
/// `name` is null or valid for writes of `len` bytes.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipDeviceGetName(name: *mut c_char, len: c_int, device: hipDevice_t) -> hipError_t {
    api(|| {
        check_device(device)?;
        if name.is_null() || len <= 0 {
            return Err(hipErrorInvalidValue);
        }
        let dev_name = device_spec().name;
        let n = dev_name.len().min(len as usize - 1);
        // SAFETY: `name` is valid for `len` > n bytes (caller contract); the source is our
        // static string of at least n bytes; the regions cannot overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(dev_name.as_ptr().cast::<c_char>(), name, n);
            name.add(n).write(0);
        }
        Ok(())
    })
}

/// `hipError_t hipDeviceGetAttribute(int*, hipDeviceAttribute_t, int)`, for the attributes
/// listed in [`hipGetDevicePropertiesR0600`]'s struct; others are `hipErrorInvalidValue`.
///
/// # Safety
/// `pi` is null or valid for a write of an `int`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipDeviceGetAttribute(pi: *mut c_int, attr: hipDeviceAttribute_t, deviceId: c_int) -> hipError_t {
    api(|| {
        check_device(deviceId)?;
        let p = device_properties();
        let sat = |v: usize| c_int::try_from(v).unwrap_or(c_int::MAX);
        // Values of HIP's hipDeviceAttribute_t enumerators.
        let v = match attr {
            3 => p.canMapHostMemory,
            5 => p.clockRate,
            6 => p.computeMode,
            8 => p.concurrentKernels,
            10 => p.cooperativeLaunch,
            16 => p.integrated,
            19 => p.l2CacheSize,
            23 => p.major,
            25 => p.maxBlocksPerMultiProcessor,
            26..=28 => p.maxThreadsDim[(attr - 26) as usize],
            29..=31 => p.maxGridSize[(attr - 29) as usize],
            56 => p.maxThreadsPerBlock,
            57 => p.maxThreadsPerMultiProcessor,
            59 => p.memoryBusWidth,
            60 => p.memoryClockRate,
            61 => p.minor,
            63 => p.multiProcessorCount,
            71 => p.regsPerBlock,
            72 => p.regsPerMultiprocessor,
            74 => sat(p.sharedMemPerBlock),
            75 => sat(p.sharedMemPerBlockOptin),
            76 => sat(p.sharedMemPerMultiprocessor),
            78 => p.streamPrioritiesSupported,
            83 => sat(p.totalConstMem),
            84 => sat(p.totalGlobalMem),
            85 => p.unifiedAddressing,
            87 => p.warpSize,
            10000 => p.clockRate,
            10002 => sat(p.maxSharedMemoryPerMultiProcessor),
            10011 => p.isLargeBar,
            10012 => p.asicRevision,
            10015 => p.multiProcessorCount,
            10017 => p.clockInstructionRate,
            _ => return Err(hipErrorInvalidValue),
        };
        // SAFETY: caller contract (null is rejected by `put`).
        unsafe { put(pi, v) }
    })
}

/// `hipError_t hipDeviceSynchronize(void)`: completes all queued work of every stream and
/// returns the first sticky error of any of them (which it clears). While a capture is active:
/// `hipErrorStreamCaptureUnsupported`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipDeviceSynchronize() -> hipError_t {
    api(synchronize_device)
}

/// `hipError_t hipDeviceReset(void)`: destroys everything the process created on the device —
/// allocations, modules, functions, streams (their queued work is dropped, not run), captures,
/// graphs, events, pinned host buffers — clears the sticky fault of every device ordinal (they
/// share everything, see [`set_device_count`]) and the thread's last error and
/// [`last_error_detail`]. Handles and pointers from before the reset become invalid (and are
/// reported as such, not dereferenced).
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipDeviceReset() -> hipError_t {
    let code = api_unchecked(|| {
        let r = rt();
        sched::reset();
        r.faults.lock().unwrap_or_else(|p| p.into_inner()).clear();
        LAST_DETAIL.with(|d| d.borrow_mut().take());
        let old = std::mem::take(&mut *r.state());
        for addr in old.allocations {
            let _ = r.memory.free(addr);
        }
        for (addr, layout) in old.host_allocations {
            // SAFETY: `addr` was returned by `alloc_zeroed(layout)` in `hipHostMalloc` and was
            // not freed (it was still in the table, which we now own exclusively).
            unsafe { std::alloc::dealloc(addr as *mut u8, layout) };
        }
        Ok(())
    });
    LAST_ERROR.with(|e| e.set(hipSuccess));
    code
}

/// `hipError_t hipDeviceGetStreamPriorityRange(int* least, int* greatest)`: 0 and -1. Either
/// pointer may be null.
///
/// # Safety
/// Each pointer is null or valid for a write of an `int`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub unsafe extern "C" fn hipDeviceGetStreamPriorityRange(leastPriority: *mut c_int, greatestPriority: *mut c_int) -> hipError_t {
    api(|| {
        if !leastPriority.is_null() {
            // SAFETY: non-null; caller contract.
            unsafe { leastPriority.write(0) };
        }
        if !greatestPriority.is_null() {
            // SAFETY: non-null; caller contract.
            unsafe { greatestPriority.write(-1) };
        }
        Ok(())
    })
}

/// `hipError_t hipGetLastError(void)`: the thread's most recent failure code, which is then
/// reset to `hipSuccess`.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipGetLastError() -> hipError_t {
    LAST_ERROR.with(|e| e.replace(hipSuccess))
}

/// `hipError_t hipPeekAtLastError(void)`: like [`hipGetLastError`] without resetting.
#[cfg_attr(feature = "hip-abi", unsafe(no_mangle))]
pub extern "C" fn hipPeekAtLastError() -> hipError_t {
    LAST_ERROR.with(Cell::get)
}
