//! The gfx942 / gfx950 executor: wave64 with per-lane register arrays under EXEC, workgroups of up
//! to 1024 work-items with `s_barrier`, 64 KiB LDS (160 KiB on gfx950, [`max_lds_bytes`]), scalar/vector/buffer/scratch memory over
//! [`DeviceMemory`] with memcheck, and launches that run workgroups in parallel (rayon).
//!
//! Initial wave state follows LLVM AMDGPUUsage "Initial Kernel Execution State": user SGPRs in
//! their fixed order as enabled by kernel_code_properties, then the workgroup id / info SGPRs
//! enabled in COMPUTE_PGM_RSRC2, work-item ids in v0 (packed `x | y << 10 | z << 20` when more
//! than one is enabled, as gfx90a+ do).

// Errors end the launch (cold path); keeping `LaunchError` unboxed keeps the API plain.
#![allow(clippy::result_large_err)]
// Lane loops index several parallel per-lane arrays by the lane number.
#![allow(clippy::needless_range_loop)]

mod buffer;
pub(crate) mod checks;
pub mod counters;
pub mod trace;
mod wave;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::decode::{DecodeError, Inst, Program};
use crate::loader::{CodeObject, Kernel, Target};
use crate::memory::{DeviceMemory, MemError};

pub use wave::Class;

/// LDS available to one workgroup on gfx942.
pub const MAX_LDS_BYTES: u32 = 64 * 1024;
/// LDS available to one workgroup on gfx950 (MI350X / MI355X: 160 KiB per CU, all of it
/// addressable by one workgroup; LLVM `AMDGPUUsage.rst` "LDS" / `GCNSubtarget` 163840 bytes for
/// gfx950; the project's `hardware.md` parts table).
pub const MAX_LDS_BYTES_GFX950: u32 = 160 * 1024;

/// LDS available to one workgroup on `target`.
pub const fn max_lds_bytes(target: Target) -> u32 {
    match target {
        Target::Gfx942 => MAX_LDS_BYTES,
        Target::Gfx950 => MAX_LDS_BYTES_GFX950,
    }
}
/// Base of the flat address aperture that maps to LDS (as `src_shared_base` reports it).
pub const SHARED_APERTURE: u64 = 0x0001_0000_0000_0000;
/// Base of the flat address aperture that maps to the lane's private (scratch) memory.
pub const PRIVATE_APERTURE: u64 = 0x0002_0000_0000_0000;

/// Launch geometry and arguments.
#[derive(Clone, Debug)]
pub struct LaunchConfig {
    /// Workgroups per dimension.
    pub grid: [u32; 3],
    /// Work-items per workgroup per dimension.
    pub block: [u32; 3],
    /// Dynamic LDS bytes on top of the kernel's static `group_segment_fixed_size`.
    pub dynamic_lds_bytes: u32,
    /// The complete kernarg segment (explicit and hidden arguments).
    pub kernarg: Vec<u8>,
}

/// Which checks run during a launch. [`Checks::default`] is memcheck only; [`Checks::all`] turns
/// on every mode (what tests use). A finding of any mode fails the launch with a
/// [`LaunchError`] (`Memory` for memcheck, `Check` for the others); see `checks.rs` for the rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checks {
    /// Report any access outside live allocations / the LDS size / the kernarg segment.
    pub memcheck: bool,
    /// Report reads of an MFMA's result (or overwrites of its sources) issued before the wait
    /// states gfx942 requires (LLVM `GCNHazardRecognizer` gfx940 rules).
    pub mfma_hazard: bool,
    /// Report two waves of a workgroup touching the same LDS byte between barriers, one writing.
    pub racecheck: bool,
    /// Treat load results as landing only at the `s_waitcnt` that covers them and report reads
    /// (or overwrites) of registers whose load has not been waited for.
    pub late_arrival: bool,
    /// Report reads of LDS bytes no wave of the workgroup has written.
    pub uninit_lds: bool,
    /// Watchdog: a wave that executes more instructions than this fails the launch
    /// ([`LaunchError::Watchdog`]) instead of looping forever (a kernel bug must fail a test, not
    /// hang it). Default [`Checks::DEFAULT_MAX_WAVE_INSTRUCTIONS`].
    pub max_wave_instructions: u64,
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            memcheck: true,
            mfma_hazard: false,
            racecheck: false,
            late_arrival: false,
            uninit_lds: false,
            max_wave_instructions: Checks::DEFAULT_MAX_WAVE_INSTRUCTIONS,
        }
    }
}

impl Checks {
    /// Default per-wave instruction budget: 2^28 wave-instructions, about a minute of emulation
    /// for one wave and over 10^4 times what one wave of the largest DeepSeek-V3 GEMM executes.
    pub const DEFAULT_MAX_WAVE_INSTRUCTIONS: u64 = 1 << 28;

    /// Every checking mode on.
    pub fn all() -> Checks {
        Checks { mfma_hazard: true, racecheck: true, late_arrival: true, uninit_lds: true, ..Checks::default() }
    }
    /// Every mode off (no memcheck either: out-of-bounds reads return 0, writes are dropped);
    /// the watchdog stays at its default.
    pub fn none() -> Checks {
        Checks { memcheck: false, ..Checks::default() }
    }
    /// Parses a comma-separated list of modes: `all`, `none`, `default`, `memcheck`,
    /// `mfma-hazard`, `racecheck`, `late-arrival`, `uninit-lds` (applied left to right, starting
    /// from no modes), e.g. `memcheck,racecheck`. This is the syntax of the `AMDGPU_EMU_CHECKS`
    /// environment variable the HIP runtime reads.
    pub fn parse(s: &str) -> Result<Checks, String> {
        let mut c = Checks::none();
        for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            match item {
                "all" => c = Checks::all(),
                "none" => c = Checks::none(),
                "default" => c = Checks::default(),
                "memcheck" => c.memcheck = true,
                "mfma-hazard" => c.mfma_hazard = true,
                "racecheck" => c.racecheck = true,
                "late-arrival" => c.late_arrival = true,
                "uninit-lds" => c.uninit_lds = true,
                other => {
                    return Err(format!(
                        "unknown check `{other}`: expected a comma-separated list of all, none, default, memcheck, mfma-hazard, racecheck, late-arrival, uninit-lds"
                    ));
                }
            }
        }
        Ok(c)
    }
}

/// Per-launch counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchReport {
    /// Workgroups run.
    pub workgroups: u64,
    /// Waves run.
    pub waves: u64,
    /// Wave-instructions executed, total.
    pub instructions: u64,
    /// Wave-instructions by [`Class`] (index = `Class as usize`).
    pub by_class: [u64; Class::COUNT],
    /// `s_barrier` releases (per workgroup, summed).
    pub barriers: u64,
    /// Kernel name.
    pub kernel: String,
    /// Launch geometry: workgroups per dimension.
    pub grid: [u32; 3],
    /// Launch geometry: work-items per workgroup per dimension.
    pub block: [u32; 3],
    /// The kernel's resources (registers, LDS, workgroup size) for occupancy and cost models.
    pub resources: crate::timing::bound::Resources,
    /// Detailed counters (instruction kinds, LDS bank conflicts, global bytes, MFMA passes).
    pub counters: counters::Counters,
    /// The hottest loop's instruction mix, if the kernel has a loop that ran.
    pub steady: Option<counters::SteadyState>,
}

impl LaunchReport {
    /// Wave-instructions of one class.
    pub fn count(&self, c: Class) -> u64 {
        self.by_class[c as usize]
    }
}

/// Why a launch failed.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// A block dimension or grid dimension is zero.
    #[error("launch of `{kernel}`: {what} dimension {dim} is 0 (grid {grid:?}, block {block:?})")]
    ZeroDim {
        /// Kernel.
        kernel: String,
        /// "grid" or "block".
        what: &'static str,
        /// Dimension index.
        dim: usize,
        /// Grid.
        grid: [u32; 3],
        /// Block.
        block: [u32; 3],
    },
    /// The block has more work-items than the kernel's `.max_flat_workgroup_size`.
    #[error("launch of `{kernel}`: block {block:?} has {volume} work-items, kernel allows at most {max}")]
    BlockTooLarge {
        /// Kernel.
        kernel: String,
        /// Block.
        block: [u32; 3],
        /// Work-items per block.
        volume: u64,
        /// `.max_flat_workgroup_size`.
        max: u32,
    },
    /// LDS request above the target's [`max_lds_bytes`] (64 KiB gfx942, 160 KiB gfx950).
    #[error("launch of `{kernel}`: LDS of {bytes} bytes (static {fixed} + dynamic {dynamic}) exceeds {max}")]
    LdsTooLarge {
        /// Kernel.
        kernel: String,
        /// Total.
        bytes: u64,
        /// Static part.
        fixed: u32,
        /// Dynamic part.
        dynamic: u32,
        /// The target's limit.
        max: u32,
    },
    /// The kernarg bytes do not match `.kernarg_segment_size`.
    #[error("launch of `{kernel}`: kernarg is {got} bytes, kernel expects kernarg_segment_size {expected}")]
    KernargSize {
        /// Kernel.
        kernel: String,
        /// Bytes given.
        got: usize,
        /// `.kernarg_segment_size`.
        expected: u32,
    },
    /// The kernel's code does not decode (reported when the instruction is reached).
    #[error("{0}")]
    Decode(#[from] DecodeError),
    /// An instruction the executor does not implement was reached.
    #[error("kernel `{kernel}` pc {pc:#x}: instruction `{text}` (bytes {bytes}) is not implemented by the emulator")]
    Unimplemented {
        /// Kernel.
        kernel: String,
        /// Address.
        pc: u64,
        /// Disassembly.
        text: String,
        /// Bytes.
        bytes: String,
    },
    /// A memcheck finding: an access outside live memory, LDS or the kernarg segment.
    #[error(
        "memcheck: kernel `{kernel}` pc {pc:#x} (`{text}`) workgroup {workgroup:?} wave {wave} lane {lane}: {space} access of {len} bytes at {addr:#x}: {detail}"
    )]
    Memory {
        /// Kernel.
        kernel: String,
        /// Address of the instruction.
        pc: u64,
        /// Disassembly of the instruction.
        text: String,
        /// Workgroup id.
        workgroup: [u32; 3],
        /// Wave index in the workgroup.
        wave: u32,
        /// Lane (0..64); 64 for scalar accesses.
        lane: u32,
        /// "global", "LDS", "scratch", "scalar", "buffer".
        space: &'static str,
        /// Address (device address, LDS offset or scratch offset).
        addr: u64,
        /// Bytes.
        len: u64,
        /// Description (the MemError text or the bound violated).
        detail: String,
    },
    /// `s_trap` executed.
    #[error("kernel `{kernel}` pc {pc:#x}: s_trap {code} (workgroup {workgroup:?} wave {wave})")]
    Trap {
        /// Kernel.
        kernel: String,
        /// Address.
        pc: u64,
        /// Trap code.
        code: u16,
        /// Workgroup.
        workgroup: [u32; 3],
        /// Wave.
        wave: u32,
    },
    /// A wave exceeded [`Checks::max_wave_instructions`] (most likely a loop that never ends).
    #[error(
        "watchdog: kernel `{kernel}` workgroup {workgroup:?} wave {wave} executed more than {limit} instructions (now at pc {pc:#x}); a loop that never exits?"
    )]
    Watchdog {
        /// Kernel.
        kernel: String,
        /// Address of the instruction that exceeded the budget.
        pc: u64,
        /// Workgroup id.
        workgroup: [u32; 3],
        /// Wave within the workgroup.
        wave: u32,
        /// The budget.
        limit: u64,
    },
    /// Execution left the kernel's code or read an unallocated register.
    #[error("kernel `{kernel}` pc {pc:#x}: {msg}")]
    Fault {
        /// Kernel.
        kernel: String,
        /// Address.
        pc: u64,
        /// What happened.
        msg: String,
    },
    /// A finding of a checking mode (mfma-hazard, racecheck, late-arrival, uninit-lds).
    #[error("{check}: kernel `{kernel}` pc {pc:#x} (`{text}`) workgroup {workgroup:?} wave {wave}{}: {detail}", where_(.lane, .addr))]
    Check {
        /// The mode that found it.
        check: &'static str,
        /// Kernel.
        kernel: String,
        /// Address of the instruction that tripped the check.
        pc: u64,
        /// Its disassembly.
        text: String,
        /// Workgroup id.
        workgroup: [u32; 3],
        /// Wave index in the workgroup.
        wave: u32,
        /// Lane, for per-lane findings.
        lane: Option<u32>,
        /// LDS address, for LDS findings.
        addr: Option<u64>,
        /// What happened, including the other instruction's pc (and wave).
        detail: String,
    },
    /// Device memory for the kernarg segment could not be allocated.
    #[error("launch of `{kernel}`: {source}")]
    Alloc {
        /// Kernel.
        kernel: String,
        /// Cause.
        source: MemError,
    },
}

impl LaunchError {
    /// Whether this is a memcheck finding (an illegal address), as opposed to another failure.
    pub fn is_memory_fault(&self) -> bool {
        matches!(self, LaunchError::Memory { .. })
    }
    /// Whether this is a finding of one of the other checking modes ([`LaunchError::Check`]).
    pub fn is_check_finding(&self) -> bool {
        matches!(self, LaunchError::Check { .. })
    }
}

fn where_(lane: &Option<u32>, addr: &Option<u64>) -> String {
    let mut s = String::new();
    if let Some(l) = lane {
        s += &format!(" lane {l}");
    }
    if let Some(a) = addr {
        s += &format!(" LDS address {a:#x}");
    }
    s
}

/// A kernel decoded for execution: instructions, their addresses and resolved branch targets.
#[derive(Debug)]
pub struct Compiled {
    pub(crate) kernel: Kernel,
    pub(crate) pcs: Vec<u64>,
    pub(crate) insts: Vec<Result<Inst, DecodeError>>,
    /// Instruction index of each SOPP branch target (`u32::MAX` if none / outside).
    pub(crate) targets: Vec<u32>,
    /// Per-instruction precomputed helper (e.g. the compare spec of v_cmp).
    pub(crate) aux: Vec<u32>,
    /// FP8 operands use the OCP encodings (gfx950) instead of FNUZ (gfx942): the code object's
    /// [`crate::loader::Target::fp8_ocp`].
    pub(crate) ocp: bool,
    /// The processor the code was decoded for.
    pub(crate) target: Target,
    /// Initial HW_REG_MODE of every wave (round and denorm modes, DX10_CLAMP, IEEE) from RSRC1.
    pub(crate) initial_mode: u32,
}

/// HW_REG_MODE as the hardware initializes it from COMPUTE_PGM_RSRC1: FP_ROUND in bits 3:0,
/// FP_DENORM in bits 7:4, DX10_CLAMP bit 8, IEEE bit 9.
fn mode_register(d: &crate::loader::KernelDescriptor) -> u32 {
    u32::from(d.float_round_mode_32)
        | u32::from(d.float_round_mode_16_64) << 2
        | u32::from(d.float_denorm_mode_32) << 4
        | u32::from(d.float_denorm_mode_16_64) << 6
        | u32::from(d.dx10_clamp) << 8
        | u32::from(d.ieee_mode) << 9
}

impl Compiled {
    /// Decodes `kernel` once for execution.
    pub fn new(co: &CodeObject, kernel: &Kernel) -> Result<Compiled, DecodeError> {
        let prog = Program::decode(co, kernel)?;
        let pcs: Vec<u64> = prog.insts.iter().map(|(pc, _)| *pc).collect();
        let insts: Vec<Result<Inst, DecodeError>> = prog.insts.into_iter().map(|(_, r)| r).collect();
        let index = |pc: u64| pcs.binary_search(&pc).map_or(u32::MAX, |i| i as u32);
        let mut targets = vec![u32::MAX; insts.len()];
        let mut aux = vec![0u32; insts.len()];
        for (i, r) in insts.iter().enumerate() {
            if let Ok(inst) = r {
                if crate::decode::is_branch(inst.op) {
                    targets[i] = index(inst.branch_target(pcs[i]));
                }
                aux[i] = wave::precompute(inst);
            }
        }
        let target = co.target();
        Ok(Compiled { kernel: kernel.clone(), pcs, insts, targets, aux, ocp: target.fp8_ocp(), target, initial_mode: mode_register(&kernel.descriptor) })
    }
}

/// A launch validated and set up (kernarg, dispatch packet, queue stub, decoded program): what
/// [`launch`] and the timing model ([`crate::timing`]) run workgroups from. Dropping it frees
/// the launch's own allocations.
pub(crate) struct Prepared<'a> {
    pub(crate) program: Arc<Compiled>,
    pub(crate) plan: checks::Plan,
    pub(crate) cfg: &'a LaunchConfig,
    pub(crate) mem: &'a DeviceMemory,
    checks: Checks,
    kernarg_ptr: u64,
    packet: u64,
    queue: u64,
    lds: u32,
}

impl Drop for Prepared<'_> {
    fn drop(&mut self) {
        for p in [self.kernarg_ptr, self.packet, self.queue] {
            if p != 0 {
                let _ = self.mem.free(p);
            }
        }
    }
}

/// Validates a launch like HIP and sets it up (see [`Prepared`]).
pub(crate) fn prepare<'a>(
    co: &CodeObject,
    kernel: &Kernel,
    cfg: &'a LaunchConfig,
    mem: &'a DeviceMemory,
    checks: &Checks,
) -> Result<Prepared<'a>, LaunchError> {
    let name = || kernel.name.clone();
    for (what, dims) in [("grid", cfg.grid), ("block", cfg.block)] {
        if let Some(dim) = dims.iter().position(|&d| d == 0) {
            return Err(LaunchError::ZeroDim { kernel: name(), what, dim, grid: cfg.grid, block: cfg.block });
        }
    }
    let volume: u64 = cfg.block.iter().map(|&d| u64::from(d)).product();
    let max = if kernel.meta.max_flat_workgroup_size == 0 { 1024 } else { kernel.meta.max_flat_workgroup_size };
    if volume > u64::from(max) || volume > 1024 {
        return Err(LaunchError::BlockTooLarge { kernel: name(), block: cfg.block, volume, max: max.min(1024) });
    }
    let fixed = kernel.descriptor.group_segment_fixed_size.max(kernel.meta.group_segment_fixed_size);
    let lds = u64::from(fixed) + u64::from(cfg.dynamic_lds_bytes);
    let max_lds = max_lds_bytes(co.target());
    if lds > u64::from(max_lds) {
        return Err(LaunchError::LdsTooLarge { kernel: name(), bytes: lds, fixed, dynamic: cfg.dynamic_lds_bytes, max: max_lds });
    }
    if cfg.kernarg.len() != kernel.meta.kernarg_segment_size as usize {
        return Err(LaunchError::KernargSize { kernel: name(), got: cfg.kernarg.len(), expected: kernel.meta.kernarg_segment_size });
    }
    // Decoded once per kernel and code object; a kernel that is not this code object's own
    // (same entry, other name) is decoded afresh.
    let cached = co.decoded.get_or_try_insert(kernel.entry, || Compiled::new(co, kernel))?;
    let program =
        if cached.kernel.name == kernel.name && cached.kernel.descriptor == kernel.descriptor { cached } else { Arc::new(Compiled::new(co, kernel)?) };
    let plan = checks::Plan::new(&program, checks);
    let mut p = Prepared { program, plan, cfg, mem, checks: checks.clone(), kernarg_ptr: 0, packet: 0, queue: 0, lds: lds as u32 };
    let alloc = |size: u64| mem.alloc(size.max(1)).map_err(|source| LaunchError::Alloc { kernel: name(), source });
    if !cfg.kernarg.is_empty() {
        p.kernarg_ptr = alloc(cfg.kernarg.len() as u64)?;
        mem.write(p.kernarg_ptr, &cfg.kernarg).map_err(|source| LaunchError::Alloc { kernel: name(), source })?;
    }
    // HSA kernel dispatch packet (for kernels that read the dispatch pointer) and a queue stub.
    p.packet = alloc(64)?;
    let mut pkt = [0u8; 64];
    let dims = if cfg.grid[2] > 1 || cfg.block[2] > 1 {
        3u16
    } else if cfg.grid[1] > 1 || cfg.block[1] > 1 {
        2
    } else {
        1
    };
    pkt[2..4].copy_from_slice(&dims.to_le_bytes());
    for d in 0..3 {
        pkt[4 + 2 * d..6 + 2 * d].copy_from_slice(&(cfg.block[d] as u16).to_le_bytes());
        pkt[12 + 4 * d..16 + 4 * d].copy_from_slice(&(cfg.grid[d].wrapping_mul(cfg.block[d])).to_le_bytes());
    }
    pkt[24..28].copy_from_slice(&kernel.descriptor.private_segment_fixed_size.to_le_bytes());
    pkt[28..32].copy_from_slice(&(lds as u32).to_le_bytes());
    pkt[32..40].copy_from_slice(&kernel.descriptor_address.to_le_bytes());
    pkt[40..48].copy_from_slice(&p.kernarg_ptr.to_le_bytes());
    let _ = mem.write(p.packet, &pkt);
    p.queue = alloc(256)?;
    Ok(p)
}

impl Prepared<'_> {
    /// Workgroups in the grid.
    pub(crate) fn workgroups(&self) -> u64 {
        self.cfg.grid.iter().map(|&g| u64::from(g)).product()
    }

    fn setup(&self, trace: bool, skip_mfma_math: bool) -> wave::Setup<'_> {
        wave::Setup {
            plan: &self.plan,
            program: self.program.clone(),
            mem: self.mem,
            memcheck: self.checks.memcheck,
            max_wave_instructions: self.checks.max_wave_instructions,
            kernarg_ptr: self.kernarg_ptr,
            dispatch_ptr: self.packet,
            queue_ptr: self.queue,
            lds_bytes: self.lds,
            kernarg: &self.cfg.kernarg,
            block: self.cfg.block,
            grid: self.cfg.grid,
            trace,
            skip_mfma_math,
        }
    }

    /// The workgroup id of linear workgroup number `i` (x fastest).
    pub(crate) fn workgroup_id(&self, i: u64) -> [u32; 3] {
        let g = self.cfg.grid;
        [(i % u64::from(g[0])) as u32, ((i / u64::from(g[0])) % u64::from(g[1])) as u32, (i / (u64::from(g[0]) * u64::from(g[1]))) as u32]
    }

    /// Runs the workgroups `ids` (linear numbers) in parallel, with every wave traced, and
    /// returns their traces and counters in the order of `ids`. The error is that of the first
    /// failing workgroup in `ids` order.
    pub(crate) fn run_traced(&self, ids: &[u64], skip_mfma_math: bool) -> Result<Vec<WorkgroupRun>, LaunchError> {
        let setup = self.setup(true, skip_mfma_math);
        ids.par_iter()
            .map(|&i| {
                let c = wave::run_workgroup(&setup, self.workgroup_id(i))?;
                Ok(WorkgroupRun { counts: c.counts, traces: c.traces })
            })
            .collect()
    }
}

/// One traced workgroup: its waves' traces and its executions per instruction.
pub(crate) struct WorkgroupRun {
    pub(crate) counts: Vec<u64>,
    pub(crate) traces: Vec<trace::WaveTrace>,
}

/// Runs `kernel` over the grid. Validates like HIP, copies the kernarg bytes into a fresh
/// exact-size allocation (freed afterwards), runs every workgroup (in parallel) and returns the
/// counters or the first error.
pub fn launch(co: &CodeObject, kernel: &Kernel, cfg: &LaunchConfig, mem: &DeviceMemory, checks: &Checks) -> Result<LaunchReport, LaunchError> {
    let prep = prepare(co, kernel, cfg, mem, checks)?;
    let program = &prep.program;
    let agg = std::sync::Mutex::new((counters::Counters::default(), vec![0u64; program.insts.len()], checks::LineSet::default()));
    let setup = prep.setup(false, false);
    let n_wg = prep.workgroups();
    let totals: [AtomicU64; Class::COUNT + 3] = std::array::from_fn(|_| AtomicU64::new(0));
    // The reported error is the one of the lowest-numbered failing workgroup (deterministic
    // regardless of how rayon schedules the workgroups).
    let result = (0..n_wg)
        .into_par_iter()
        .map(|i| {
            let c = wave::run_workgroup(&setup, prep.workgroup_id(i))?;
            for (k, v) in c.by_class.iter().enumerate() {
                if *v != 0 {
                    totals[k].fetch_add(*v, Ordering::Relaxed);
                }
            }
            totals[Class::COUNT].fetch_add(c.waves, Ordering::Relaxed);
            totals[Class::COUNT + 1].fetch_add(c.barriers, Ordering::Relaxed);
            let mut a = agg.lock().unwrap_or_else(|p| p.into_inner());
            a.0.merge(&c.counters);
            for (x, y) in a.1.iter_mut().zip(&c.counts) {
                *x += y;
            }
            a.2.union(c.lines);
            Ok::<(), LaunchError>(())
        })
        .find_first(Result::is_err)
        .unwrap_or(Ok(()));
    result?;
    let mut r = LaunchReport { workgroups: n_wg, ..Default::default() };
    for k in 0..Class::COUNT {
        r.by_class[k] = totals[k].load(Ordering::Relaxed);
    }
    r.instructions = r.by_class.iter().sum();
    r.waves = totals[Class::COUNT].load(Ordering::Relaxed);
    r.barriers = totals[Class::COUNT + 1].load(Ordering::Relaxed);
    let (mut counters, counts, lines) = agg.into_inner().unwrap_or_else(|p| p.into_inner());
    counters.global_footprint_bytes = lines.len() as u64 * checks::LINE_BYTES;
    r.steady = prep.plan.finish(program, &counts, &mut counters);
    r.counters = counters;
    r.kernel = kernel.name.clone();
    r.grid = cfg.grid;
    r.block = cfg.block;
    r.resources = crate::timing::bound::Resources::of(kernel, cfg.block, cfg.dynamic_lds_bytes);
    Ok(r)
}

/// Architectural state of one wave for [`run_snippet`].
#[derive(Clone, Debug)]
pub struct WaveState {
    /// SGPRs 0..=127 with VCC at 106:107, M0 at 124 and EXEC at 126:127 (gfx9 numbering).
    pub sgpr: [u32; 128],
    /// The unified vector register file: `vgpr[r][lane]`; AccVGPR `a[i]` is `vgpr[accum_offset + i]`.
    pub vgpr: Vec<[u32; 64]>,
    /// First AccVGPR in [`WaveState::vgpr`].
    pub accum_offset: u32,
    /// SCC.
    pub scc: bool,
    /// Private (scratch) bytes per lane.
    pub private_bytes: u32,
    /// FLOAT_DENORM_MODE_32 as in COMPUTE_PGM_RSRC1 (3 = keep f32 denormals, LLVM's gfx942 default).
    pub float_denorm_mode_32: u8,
    /// The processor whose instructions and numerics the snippet uses (default gfx942).
    pub target: Target,
}

impl WaveState {
    /// All registers zero, EXEC all ones, 512 unified VGPRs split at `accum_offset`.
    pub fn new(accum_offset: u32) -> WaveState {
        let mut sgpr = [0u32; 128];
        sgpr[126] = u32::MAX;
        sgpr[127] = u32::MAX;
        WaveState { sgpr, vgpr: vec![[0; 64]; 512], accum_offset, scc: false, private_bytes: 0, float_denorm_mode_32: 3, target: Target::Gfx942 }
    }
    /// EXEC as a 64-bit mask.
    pub fn exec(&self) -> u64 {
        u64::from(self.sgpr[126]) | u64::from(self.sgpr[127]) << 32
    }
    /// Sets EXEC.
    pub fn set_exec(&mut self, m: u64) {
        self.sgpr[126] = m as u32;
        self.sgpr[127] = (m >> 32) as u32;
    }
    /// VCC as a 64-bit mask.
    pub fn vcc(&self) -> u64 {
        u64::from(self.sgpr[106]) | u64::from(self.sgpr[107]) << 32
    }
}

/// Runs raw instruction words of `state.target` (little-endian dwords, as the hardware reads
/// them) as one wave starting from `state`, until an `s_endpgm` (one is appended). LDS is `lds`; memory is
/// `mem` with memcheck on. A unit-testing and debugging aid: instruction semantics are exactly
/// those [`launch`] uses. Returns the counters.
pub fn run_snippet(words: &[u32], state: &mut WaveState, lds: &mut [u8], mem: &DeviceMemory) -> Result<LaunchReport, LaunchError> {
    let mut code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    code.extend_from_slice(&0xBF81_0000u32.to_le_bytes());
    let name = "snippet".to_string();
    let mut kd = [0u8; 64];
    // RSRC1: 512 VGPRs (granule 63), RSRC3: accum_offset.
    kd[48..52].copy_from_slice(&63u32.to_le_bytes());
    kd[44..48].copy_from_slice(&((state.accum_offset / 4).saturating_sub(1) & 0x3f).to_le_bytes());
    let mut descriptor =
        crate::loader::KernelDescriptor::parse(&name, &kd).map_err(|e| LaunchError::Fault { kernel: name.clone(), pc: 0, msg: e.to_string() })?;
    descriptor.private_segment_fixed_size = state.private_bytes;
    let meta = crate::loader::KernelMeta {
        args: Vec::new(),
        kernarg_segment_size: 0,
        kernarg_segment_align: 8,
        group_segment_fixed_size: lds.len() as u32,
        private_segment_fixed_size: state.private_bytes,
        max_flat_workgroup_size: 64,
        wavefront_size: 64,
        sgpr_count: 102,
        vgpr_count: 512,
        agpr_count: 0,
        sgpr_spill_count: 0,
        vgpr_spill_count: 0,
    };
    let kernel = Kernel { name: name.clone(), meta, descriptor, descriptor_address: 0, entry: 0, code_size: code.len() as u64 };
    let mut pcs = Vec::new();
    let mut insts = Vec::new();
    let mut off = 0usize;
    while off + 4 <= code.len() {
        let r = crate::decode::decode_one_for(state.target, &code[off..], off as u64, &name);
        pcs.push(off as u64);
        off += r.as_ref().map_or(4, |i| usize::from(i.len));
        insts.push(r);
    }
    let index = |pc: u64| pcs.binary_search(&pc).map_or(u32::MAX, |i| i as u32);
    let targets = insts
        .iter()
        .zip(&pcs)
        .map(|(r, &pc)| match r {
            Ok(i) if i.enc == crate::decode::Enc::Sopp => index(i.branch_target(pc)),
            _ => u32::MAX,
        })
        .collect();
    let aux = insts.iter().map(|r| r.as_ref().map_or(0, wave::precompute)).collect();
    let initial_mode = (u32::from(state.float_denorm_mode_32) << 4) | 3 << 6 | 3 << 8;
    let program = Arc::new(Compiled { kernel, pcs, insts, targets, aux, ocp: state.target.fp8_ocp(), target: state.target, initial_mode });
    let plan = checks::Plan::new(&program, &Checks::default());
    let setup = wave::Setup {
        plan: &plan,
        program: program.clone(),
        mem,
        memcheck: true,
        max_wave_instructions: Checks::DEFAULT_MAX_WAVE_INSTRUCTIONS,
        kernarg_ptr: 0,
        dispatch_ptr: 0,
        queue_ptr: 0,
        lds_bytes: lds.len() as u32,
        kernarg: &[],
        block: [64, 1, 1],
        grid: [1, 1, 1],
        trace: false,
        skip_mfma_math: false,
    };
    let mut w = wave::Wave {
        s: state.sgpr,
        v: state.vgpr.clone(),
        scc: state.scc,
        pc: 0,
        done: false,
        id: 0,
        private: vec![0u8; state.private_bytes as usize * 64],
        private_size: state.private_bytes,
        cached: None,
        gpr_idx_on: false,
        vskip: false,
        mode: setup.program.initial_mode,
        executed: 0,
        trace: trace::WaveTrace::default(),
    };
    let c = wave::run_single(&setup, &mut w, lds)?;
    state.sgpr = w.s;
    state.vgpr = w.v;
    state.scc = w.scc;
    let mut r = LaunchReport { workgroups: 1, waves: 1, barriers: c.barriers, by_class: c.by_class, ..Default::default() };
    r.instructions = r.by_class.iter().sum();
    let mut counters = c.counters;
    counters.global_footprint_bytes = c.lines.len() as u64 * checks::LINE_BYTES;
    r.steady = plan.finish(&program, &c.counts, &mut counters);
    r.counters = counters;
    r.kernel = program.kernel.name.clone();
    r.grid = [1, 1, 1];
    r.block = [64, 1, 1];
    Ok(r)
}
