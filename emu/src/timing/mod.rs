//! A cycle-level timing model of a gfx942 or gfx950 device (MI300X, MI325X, MI308X, MI355X:
//! [`Machine`]), driven by the instruction stream the emulator executes. Every figure it produces is **modelled**, not measured.
//!
//! # How it works
//! 1. The executor runs the launch's workgroups functionally (the same code object, the same
//!    semantics as [`crate::exec::launch`]) and records each wave's executed instructions with
//!    the dynamic facts the static instruction cannot give: LDS bank-model cycles and the
//!    128-byte global lines each vector memory instruction touched
//!    ([`crate::exec::trace::WaveTrace`]). Traces are produced in batches, in dispatch order,
//!    so memory stays bounded.
//! 2. A discrete-event simulator replays them on a model of the device:
//!    * **dispatch**: workgroup `i` goes to XCD `i mod xcds` ([`Machine::xcds`]: 8 on MI300X,
//!      MI325X and MI355X, 4 on MI308X); each XCD's dispatcher places its
//!      workgroups in order on the next CU (round-robin) with a free slot; slots per CU follow
//!      from VGPR/AGPR/SGPR/LDS use (the occupancy rule of `shared/reference/gfx942.md`); a
//!      dispatch costs [`Machine::wg_dispatch_cycles`] of the XCD's dispatcher and
//!      [`Machine::wave_launch_cycles`] before the first issue;
//!    * **issue**: each SIMD gets an issue slot every [`Machine::issue_interval`] cycles (its
//!      phase is its index); in a slot it issues at most one instruction per category (vector =
//!      VALU or MFMA, scalar, vector memory, LDS, scalar memory, program control), each from a
//!      different wave, waves taken by `s_setprio` priority and then age; a wave issues at most
//!      once per slot;
//!    * **pipes**: a VALU holds the SIMD's vector port [`Machine::valu_cycles`] (transcendentals
//!      [`Machine::trans_cycles`]); an MFMA holds the matrix pipe `4 · passes` cycles, the
//!      passes being the instruction's own ([`crate::exec::counters::mfma_passes_of`]: 16
//!      cycles for FP8 16x16x32, 32 for 32x32x16 on both instruction sets; gfx950's `f8f6f4`
//!      32/64 with FP8 operands, half with FP6/FP4);
//!    * **MFMA / VALU co-issue**: after an MFMA issues, the SIMD issues another VALU only
//!      `1 + (widest A/B source bytes) / 16` issue slots later (one slot for the 8-byte sources
//!      of the FP8/INT8 16x16x32 MFMAs, so three 4-cycle VALU ops co-issue under one 16-cycle
//!      MFMA), and a packed-F32 VALU (`v_pk_{fma,mul,add}_f32`, `v_pk_mov_b32`) or a DOT only
//!      `passes + 2` slots later, one more after an XDL with a 16-byte A source; SGEMM/DGEMM
//!      hold every VALU `passes + 2` slots (LLVM PR #233721, rules fitted to ATT thread traces
//!      of MI308X and MI350X; [`Machine::mfma_pk_f32_slots`]);
//!    * **MFMA dependencies**: results of an MFMA are readable by other instructions
//!      `4 · passes + mfma_result_latency` cycles after issue, and by the next MFMA of an
//!      accumulation chain (SrcC exactly the result) `4 · passes + mfma_chain_latency` cycles
//!      after issue: dependent MFMAs do not issue back to back (the mechanism the measured AMD
//!      kernels demand once the clock is the measured one, see [`Machine::mfma_chain_latency`]);
//!    * **wait counters**: vector memory operations retire in order on vmcnt, LDS and scalar
//!      loads on lgkmcnt; `s_waitcnt` blocks until the count holds (CDNA3 ISA guide
//!      "Data dependency resolution"); `s_nop n` holds the wave `n + 1` cycles, `s_sleep n`
//!      64·n; `s_barrier` releases [`Machine::barrier_latency`] after the last live wave of the
//!      workgroup arrives;
//!    * **LDS**: one pipe per CU, each DS instruction occupying it for its bank-model cycles
//!      (the emulator's bank model, conflicts included), data usable after
//!      [`Machine::lds_latency`];
//!    * **memory**: a vector memory instruction occupies the CU's texture addresser / L1 one
//!      cycle per 128-byte line it touches, or the bytes it moves in that line at
//!      [`Machine::ta_bytes_per_clk`] if more (a wave64's lanes spread over its lines: a
//!      coalesced dword load takes 4 cycles, a store scattering 8 bytes a lane over 64 rows 64
//!      cycles, not the 128 of 64 whole lines), at least one issue interval; each line
//!      looks up the CU's 32 KiB L1 (LRU), the XCD's 4 MiB 16-way L2 (LRU), the device's
//!      256 MiB MALL (first touch, FIFO), then HBM; the L2 (per XCD), the XCD's fabric link,
//!      the MALL and HBM are bandwidth servers (bytes per cycle, with a capacity calendar so a
//!      request is served in order of arrival rather than of issue, `timing/server.rs`), each
//!      level adds its latency; stores are acknowledged by the L2 and charge the servers the
//!      bytes they write (a load fills whole lines; the write-back L2 merges partial lines, so
//!      only the data written reaches the fabric, the MALL and HBM). Cache sets are indexed by the
//!      line number's low bits XOR a multiplicative mix of its high bits; AMD documents the L2
//!      as 4 MiB, 16-way, 16 channels of 256 KiB (CDNA3 white paper, as quoted in Fluid
//!      Numerics' "Working with the MI300A System") but not its set/channel hash, so the index
//!      is a neutral choice: it must not invent conflicts. (An XOR fold of fixed bit fields did:
//!      the K blocks of B columns 2 MiB apart fell on overlapping bands of sets, and long-K
//!      launches lost a third of their L2 lines to conflicts, their modelled time moving 33 %
//!      with where the buffers landed; `cache.rs` tests the pattern.) The L2's 16 channels are
//!      one aggregate server (a hash spreads a stream's lines evenly over them). Moving a
//!      launch's buffers by 4 KiB, 1 MiB or 32 MiB moved its modelled time by ≤ 0.5 %
//!      (`tests/timing_model.rs` asserts < 2 %);
//!    * **launch**: a fixed [`Machine::launch_overhead_s`] is added to the simulated time.
//! 3. The report ([`TimingReport`]) gives the modelled time, TFLOPS, HBM traffic and GB/s,
//!    per-pipe busy fractions, the wave stall breakdown by reason and the most stalled
//!    instructions with their disassembly.
//!
//! # Scope and speed
//! [`Scope::Full`] simulates every workgroup on all XCDs. [`Scope::OneXcd`] simulates only
//! XCD 0's workgroups (`i mod xcds = 0`) with the MALL and HBM scaled to one XCD's share: the
//! XCDs are symmetric under round-robin dispatch, so this is `xcds` times cheaper; its error against the full
//! simulation is measured by the tests (`tests/timing_model.rs`: ≤ 1.5 % on the shapes there,
//! split-K included). One known bias: XCD 0 alone cannot hit in the MALL on lines another
//! XCD brought in, so the one-XCD scope reports up to 8× the full scope's HBM bytes for
//! operands all XCDs share (4096×2112×7168: 282 vs 63 MB); its time moves only when HBM
//! bandwidth binds, which it does not on the calibration rows checked (the figures are in
//! `docs/perf/timing_mechanisms.md`). Functional execution dominates
//! the cost; [`SimOptions::skip_mfma_math`] skips computing MFMA results (the output is then
//! garbage), valid for kernels whose control flow and addresses do not depend on MFMA results
//! — the tests check that the traces are identical with and without it for every kernel family
//! we time.
//!
//! # Determinism
//! The model is deterministic for a given launch and buffer placement. The functional run of a
//! batch executes its workgroups in parallel, which is harmless unless workgroups communicate
//! through global memory: with global atomics (split-K's tile counter decides which workgroup
//! reduces), the workgroups are run one at a time in dispatch order, so the last-dispatched
//! workgroup of a tile is the one that reduces, on every run (about half the functional speed
//! on two cores, for those launches only). Under [`Scope::OneXcd`] such a launch still runs
//! every workgroup functionally (all XCDs, in the device's dispatch order) and replays XCD 0's,
//! so XCD 0 does its share of the reductions even when a tile's splits straddle XCDs.
//!
//! # Parameters
//! See [`Machine`]: every field names its source or says *fitted*. Published figures
//! (clocks under load, latencies, bandwidths: `../shared/reference/hardware.md`; the MFMA
//! co-issue and hazard rules from LLVM) are used as published; the few fitted ones (the MFMA
//! chain latency, the launch overhead, LDS and barrier latencies, dispatch costs) stay inside
//! stated ranges and were set by one joint fit ([`fit`], `fp8gemm calibrate --fit`) over the
//! measured rows of AMD's FP8 BpreShuffle and int8 kernels on MI325X and the BpreShuffle
//! kernels on MI355X: one parameter set for every kernel family, shape and chip. MI300X and
//! MI308X take those fitted values (no rows of theirs were fitted) and their own published
//! figures. The fit's tables, the mechanisms tried and what each changed are in
//! `docs/perf/` (`calibrate_fit_joint.txt`, `timing_mechanisms.md`).
//!
//! The throughput bound [`bound::estimate`] is kept as a clearly named lower bound next to the
//! emulator's counters; this model is the project's performance model.

// Launch errors end the run (cold path); `LaunchError` stays unboxed as in `exec`.
#![allow(clippy::result_large_err)]

pub mod bound;
mod cache;
pub mod calibrate;
pub mod fit;
mod machine;
mod server;
mod sim;

use std::collections::{HashMap, VecDeque};
use std::fmt;

pub use machine::Machine;

use crate::disasm::format_inst;
use crate::exec::{self, Checks, LaunchConfig, LaunchError};
use crate::loader::{CodeObject, Kernel};
use crate::memory::DeviceMemory;

/// Why a wave did not issue when its issue cadence allowed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    /// `s_waitcnt` waiting for vector memory (vmcnt).
    Vmcnt = 0,
    /// `s_waitcnt` waiting for LDS / scalar memory (lgkmcnt).
    Lgkmcnt,
    /// Waiting at `s_barrier` for the other waves of the workgroup.
    Barrier,
    /// Reading (or overwriting) the result of an MFMA still in the matrix pipe.
    MfmaDependency,
    /// The SIMD's matrix pipe is busy with an earlier MFMA.
    MfmaPipe,
    /// The SIMD's vector port is busy (VALU cadence).
    VectorPort,
    /// Another wave took the slot's category (issue arbitration).
    IssueSlot,
    /// `s_nop` / `s_sleep`.
    Nop,
    /// From dispatch to the first issue (wave launch).
    Dispatch,
}

impl Stall {
    /// Number of reasons.
    pub const COUNT: usize = 9;
    /// All reasons in index order.
    pub const ALL: [Stall; Stall::COUNT] = [
        Stall::Vmcnt,
        Stall::Lgkmcnt,
        Stall::Barrier,
        Stall::MfmaDependency,
        Stall::MfmaPipe,
        Stall::VectorPort,
        Stall::IssueSlot,
        Stall::Nop,
        Stall::Dispatch,
    ];

    /// Short label.
    pub fn label(self) -> &'static str {
        match self {
            Stall::Vmcnt => "vmcnt wait",
            Stall::Lgkmcnt => "lgkmcnt wait",
            Stall::Barrier => "barrier",
            Stall::MfmaDependency => "MFMA dependency",
            Stall::MfmaPipe => "MFMA pipe busy",
            Stall::VectorPort => "vector port busy",
            Stall::IssueSlot => "issue arbitration",
            Stall::Nop => "s_nop/s_sleep",
            Stall::Dispatch => "wave launch",
        }
    }
}

/// Which part of the launch is simulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every workgroup on every XCD.
    Full,
    /// XCD 0's workgroups only (every `xcds`-th), shared MALL/HBM scaled to one XCD's share.
    /// Only they run functionally, unless the kernel has global atomics (then every workgroup
    /// runs, in dispatch order): the other workgroups' stores do not happen. For timing one
    /// launch whose results nothing reads; a sequence of launches that read each other's
    /// results (the MoE layer: the route's rows steer the GEMMs) needs [`Scope::Full`].
    OneXcd,
}

/// Options of a timing run.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// What to simulate.
    pub scope: Scope,
    /// Skip computing MFMA results (timing only; the launch's output is not valid).
    pub skip_mfma_math: bool,
    /// Checking modes for the functional run (memcheck at least is recommended).
    pub checks: Checks,
    /// How many stalled instructions to list.
    pub top: usize,
    /// Record the issue cycle of every instruction of this workgroup's first wave
    /// ([`TimingReport::trace`]); it must be a simulated workgroup (with [`Scope::OneXcd`], a
    /// multiple of the XCD count), else the trace stays empty.
    pub trace_workgroup: Option<u64>,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions { scope: Scope::Full, skip_mfma_math: false, checks: Checks::default(), top: 8, trace_workgroup: None }
    }
}

/// When one simulated workgroup ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkgroupSpan {
    /// Linear workgroup id.
    pub workgroup: u64,
    /// CU it ran on (index over the simulated XCDs).
    pub cu: u32,
    /// Cycle its waves were launched.
    pub start: u64,
    /// Cycle its last wave ended (its memory traffic landed).
    pub end: u64,
}

/// One issued instruction of the traced wave ([`SimOptions::trace_workgroup`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEntry {
    /// Issue cycle.
    pub cycle: u64,
    /// Address of the instruction.
    pub pc: u64,
    /// Disassembly.
    pub text: String,
}

/// One of the most stalled instructions.
#[derive(Clone, Debug, PartialEq)]
pub struct StallSite {
    /// Address of the instruction.
    pub pc: u64,
    /// Its disassembly.
    pub text: String,
    /// Wave-cycles it waited before issuing, summed over all its executions.
    pub cycles: u64,
    /// The main reason.
    pub reason: Stall,
}

/// Busy fractions of the device's pipes and links over the modelled run (0..=1).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Busy {
    /// Matrix pipes (all SIMDs).
    pub mfma: f64,
    /// Vector ports, VALU only (all SIMDs).
    pub valu: f64,
    /// LDS pipes (all CUs).
    pub lds: f64,
    /// Texture addressers / vector L1 (all CUs).
    pub vmem: f64,
    /// L2 bandwidth (all XCDs).
    pub l2: f64,
    /// HBM bandwidth (of the efficiency-derated peak).
    pub hbm: f64,
    /// CUs with at least one resident workgroup.
    pub cus: f64,
}

/// The modelled timing of one launch. Every figure is **modelled**.
#[derive(Clone, Debug)]
pub struct TimingReport {
    /// Machine name.
    pub machine: String,
    /// Kernel name.
    pub kernel: String,
    /// Grid (workgroups per dimension).
    pub grid: [u32; 3],
    /// Scope simulated.
    pub scope: Scope,
    /// Workgroups in the grid.
    pub workgroups: u64,
    /// Workgroups simulated.
    pub simulated_workgroups: u64,
    /// Workgroups one CU holds at once.
    pub workgroups_per_cu: u32,
    /// Simulated cycles (first dispatch to last wave end).
    pub cycles: u64,
    /// Modelled kernel time in seconds (cycles at the machine's clock + launch overhead).
    pub seconds: f64,
    /// Matrix FLOPs of the whole launch (from the MFMAs executed, scaled to the grid).
    pub flops: f64,
    /// HBM bytes moved (whole launch).
    pub hbm_bytes: f64,
    /// Bytes the L2s served to the CUs (whole launch; L1 misses and stores).
    pub l2_bytes: f64,
    /// Bytes the XCDs' fabric links moved (whole launch; L2 misses and write-backs).
    pub fabric_bytes: f64,
    /// Bytes each simulated XCD's fabric link moved (one entry under [`Scope::OneXcd`]).
    pub fabric_by_xcd: Vec<f64>,
    /// Busy fractions.
    pub busy: Busy,
    /// Wave-cycles lost per [`Stall`] reason.
    pub stalls: [u64; Stall::COUNT],
    /// Wave-instructions issued (simulated part).
    pub issued: u64,
    /// The most stalled instructions.
    pub top: Vec<StallSite>,
    /// Every simulated workgroup's launch and end, in order of ending.
    pub spans: Vec<WorkgroupSpan>,
    /// The traced wave's instructions ([`SimOptions::trace_workgroup`]), in issue order.
    pub trace: Vec<TraceEntry>,
}

impl TimingReport {
    /// Modelled TFLOPS (matrix FLOPs / modelled time).
    pub fn tflops(&self) -> f64 {
        self.flops / self.seconds / 1e12
    }
    /// Modelled HBM bandwidth achieved, GB/s.
    pub fn hbm_gbps(&self) -> f64 {
        self.hbm_bytes / self.seconds / 1e9
    }
}

impl fmt::Display for TimingReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "modelled on {} (timing model, not measured): `{}` grid {:?}, {} workgroups ({} per CU at once){}",
            self.machine,
            self.kernel,
            self.grid,
            self.workgroups,
            self.workgroups_per_cu,
            if self.scope == Scope::OneXcd { format!(", {} simulated on one XCD", self.simulated_workgroups) } else { String::new() }
        )?;
        writeln!(
            f,
            "  modelled time {:.2} µs, {:.1} TFLOPS, HBM {:.1} MB at {:.0} GB/s",
            self.seconds * 1e6,
            self.tflops(),
            self.hbm_bytes / 1e6,
            self.hbm_gbps()
        )?;
        writeln!(
            f,
            "  L2 served {:.1} MB ({:.2} MB per workgroup), fabric links moved {:.1} MB",
            self.l2_bytes / 1e6,
            self.l2_bytes / 1e6 / self.workgroups.max(1) as f64,
            self.fabric_bytes / 1e6
        )?;
        let b = &self.busy;
        writeln!(
            f,
            "  modelled busy: MFMA {:.0} %, VALU {:.0} %, LDS {:.0} %, VMEM/L1 {:.0} %, L2 {:.0} %, HBM {:.0} %, CUs occupied {:.0} %",
            b.mfma * 100.0,
            b.valu * 100.0,
            b.lds * 100.0,
            b.vmem * 100.0,
            b.l2 * 100.0,
            b.hbm * 100.0,
            b.cus * 100.0
        )?;
        let total: u64 = self.stalls.iter().sum();
        write!(f, "  modelled stalls ({} wave-cycles over {} issued instructions):", total, self.issued)?;
        let mut order: Vec<usize> = (0..Stall::COUNT).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.stalls[i]));
        for i in order.into_iter().filter(|&i| self.stalls[i] > 0) {
            write!(f, " {} {:.1} %,", Stall::ALL[i].label(), self.stalls[i] as f64 * 100.0 / total.max(1) as f64)?;
        }
        writeln!(f)?;
        if !self.top.is_empty() {
            writeln!(f, "  top stalled instructions (wave-cycles waited before issue):")?;
            for s in &self.top {
                writeln!(f, "    {:#8x}  {:>12}  {:<18} {}", s.pc, s.cycles, s.reason.label(), s.text)?;
            }
        }
        if let Some(last) = self.spans.iter().max_by_key(|s| s.end) {
            let mut d: Vec<u64> = self.spans.iter().map(|s| s.end - s.start).collect();
            d.sort_unstable();
            let median = d[d.len() / 2];
            writeln!(
                f,
                "  workgroup durations (cycles): min {}, median {}, max {}; the last ends at {} (workgroup {}, CU {}, launched at {})",
                d[0],
                median,
                d[d.len() - 1],
                last.end,
                last.workgroup,
                last.cu,
                last.start
            )?;
            // Per XCD (workgroup `i` runs on XCD `i mod XCDs`): median duration and fabric bytes.
            if self.fabric_by_xcd.len() > 1 {
                let x = self.fabric_by_xcd.len() as u64;
                write!(f, "  per XCD (median workgroup cycles, fabric MB):")?;
                for (i, fb) in self.fabric_by_xcd.iter().enumerate() {
                    let mut di: Vec<u64> = self.spans.iter().filter(|s| s.workgroup % x == i as u64).map(|s| s.end - s.start).collect();
                    di.sort_unstable();
                    write!(f, " {i}: {} {:.1}", di.get(di.len() / 2).copied().unwrap_or(0), fb / 1e6)?;
                }
                writeln!(f)?;
            }
            // Stragglers (a workgroup 10 % over the median): which ones, where.
            let mut slow: Vec<_> = self.spans.iter().filter(|s| (s.end - s.start) * 10 > median * 11).collect();
            if !slow.is_empty() {
                slow.sort_unstable_by_key(|s| std::cmp::Reverse(s.end - s.start));
                write!(f, "  {} workgroups over 1.1 × the median; the slowest (workgroup@CU: cycles):", slow.len())?;
                for s in slow.iter().take(6) {
                    write!(f, " {}@{}: {}", s.workgroup, s.cu, s.end - s.start)?;
                }
                writeln!(f)?;
            }
        }
        if !self.trace.is_empty() {
            writeln!(f, "  issue trace of the traced workgroup's first wave (cycle, cycles since the previous issue, pc, instruction):")?;
            let mut prev = self.trace[0].cycle;
            for e in &self.trace {
                writeln!(f, "    {:>8} {:>+6}  {:#8x}  {}", e.cycle, e.cycle - prev, e.pc, e.text)?;
                prev = e.cycle;
            }
        }
        Ok(())
    }
}

/// Runs `kernel` functionally on the emulator (tracing every wave) and models its time on
/// `machine`. The launch's memory effects happen as with [`exec::launch`] (unless
/// [`SimOptions::skip_mfma_math`], which leaves MFMA destinations unwritten, or
/// [`Scope::OneXcd`], under which only the simulated workgroups run when the kernel has no
/// global atomics). Traces are
/// produced and replayed in batches, so memory stays bounded; [`record`] and [`replay`] split
/// the two halves for replaying one launch on many machines.
pub fn simulate(
    co: &CodeObject,
    kernel: &Kernel,
    cfg: &LaunchConfig,
    mem: &DeviceMemory,
    machine: &Machine,
    opts: &SimOptions,
) -> Result<TimingReport, LaunchError> {
    let prep = exec::prepare(co, kernel, cfg, mem, &opts.checks)?;
    let launch = Launch::of(&prep, kernel, cfg, machine.xcds, opts.scope);
    let mut ready: HashMap<u64, Vec<exec::trace::WaveTrace>> = HashMap::new();
    let mut next = 0usize;
    let mut counts = vec![0u64; prep.program.insts.len()];
    let batch = (machine.cus() as usize * sim::workgroups_per_cu(machine, &launch.resources) as usize).clamp(64, 4096);
    let mut provider = |id: u64| -> Result<Vec<exec::trace::WaveTrace>, LaunchError> {
        while !ready.contains_key(&id) && next < launch.order.len() {
            // Trace the next batch in dispatch order (dispatch follows it, so `id` is in this
            // batch or, when other XCDs' workgroups only run functionally, a later one).
            let end = (next + batch).min(launch.order.len());
            launch.trace_batch(&prep, &launch.order[next..end], opts.skip_mfma_math, &mut counts, &mut |wg, t| {
                ready.insert(wg, t);
            })?;
            next = end;
        }
        Ok(ready.remove(&id).unwrap_or_default())
    };
    let statics = launch.statics(machine);
    let mut s = sim::Sim::new(machine, &statics, &launch.resources, launch.queues(), launch.share());
    s.trace_workgroup = opts.trace_workgroup;
    s.run(&mut provider)?;
    Ok(launch.report(&s.stats, &counts, machine, opts))
}

/// A launch traced once by [`record`], to be timed on any number of machines by [`replay`]
/// (a calibration fits machine parameters by replaying the same traces). It holds every
/// simulated workgroup's trace, so it is as large as the launch's executed instruction
/// stream.
pub struct Recording {
    launch: Launch,
    traces: HashMap<u64, Vec<exec::trace::WaveTrace>>,
    counts: Vec<u64>,
}

impl Recording {
    /// Instructions recorded, over all simulated waves (a measure of its size).
    pub fn instructions(&self) -> usize {
        self.traces.values().flatten().map(|t| t.recs.len()).sum()
    }
}

/// Why a [`Recording`] cannot be replayed on a machine.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReplayError {
    /// The machine's XCD count differs from the one the workgroups were assigned by.
    #[error("recorded with workgroups dispatched over {recorded} XCDs, machine {machine} has {xcds}")]
    Xcds {
        /// XCDs at recording.
        recorded: u32,
        /// The machine's name.
        machine: String,
        /// The machine's XCDs.
        xcds: u32,
    },
    /// The replay asks for another scope than the recording traced.
    #[error("recorded with scope {recorded:?}, replay asks for {asked:?}")]
    Scope {
        /// Scope at recording.
        recorded: Scope,
        /// Scope asked.
        asked: Scope,
    },
}

/// Runs `kernel` functionally once, tracing the workgroups that `opts.scope` simulates on a
/// machine of `machine.xcds` XCDs, and keeps the traces for [`replay`].
pub fn record(
    co: &CodeObject,
    kernel: &Kernel,
    cfg: &LaunchConfig,
    mem: &DeviceMemory,
    machine: &Machine,
    opts: &SimOptions,
) -> Result<Recording, LaunchError> {
    let prep = exec::prepare(co, kernel, cfg, mem, &opts.checks)?;
    let launch = Launch::of(&prep, kernel, cfg, machine.xcds, opts.scope);
    let mut traces = HashMap::new();
    let mut counts = vec![0u64; prep.program.insts.len()];
    for ids in launch.order.chunks(1024) {
        launch.trace_batch(&prep, ids, opts.skip_mfma_math, &mut counts, &mut |wg, t| {
            traces.insert(wg, t);
        })?;
    }
    Ok(Recording { launch, traces, counts })
}

/// Times a [`Recording`] on `machine` (the same result [`simulate`] gives for the launch).
pub fn replay(rec: &Recording, machine: &Machine, opts: &SimOptions) -> Result<TimingReport, ReplayError> {
    let l = &rec.launch;
    if machine.xcds != l.xcds {
        return Err(ReplayError::Xcds { recorded: l.xcds, machine: machine.name.to_string(), xcds: machine.xcds });
    }
    if opts.scope != l.scope {
        return Err(ReplayError::Scope { recorded: l.scope, asked: opts.scope });
    }
    let statics = l.statics(machine);
    let mut s = sim::Sim::new(machine, &statics, &l.resources, l.queues(), l.share());
    s.trace_workgroup = opts.trace_workgroup;
    s.run(&mut |id| Ok::<_, std::convert::Infallible>(rec.traces.get(&id).cloned().unwrap_or_default())).unwrap_or_else(|e| match e {});
    Ok(l.report(&s.stats, &rec.counts, machine, opts))
}

/// The machine-independent facts of one launch the simulator needs.
struct Launch {
    program: std::sync::Arc<exec::Compiled>,
    info: Vec<crate::exec::checks::InstInfo>,
    resources: bound::Resources,
    kernel: String,
    grid: [u32; 3],
    workgroups: u64,
    xcds: u32,
    scope: Scope,
    /// Global atomics couple workgroups: trace them one at a time in dispatch order.
    sequential: bool,
    /// The order workgroups are traced in.
    order: Vec<u64>,
}

impl Launch {
    fn of(prep: &exec::Prepared<'_>, kernel: &Kernel, cfg: &LaunchConfig, xcds: u32, scope: Scope) -> Launch {
        let program = prep.program.clone();
        // Global (buffer/flat/global) atomics couple workgroups: see `order` below.
        let sequential = program
            .insts
            .iter()
            .zip(&prep.plan.info)
            .any(|(r, info)| info.mem == crate::exec::checks::Mem::Vm && r.as_ref().is_ok_and(|i| i.op.name().contains("atomic")));
        let n = prep.workgroups();
        let mut l = Launch {
            program,
            info: prep.plan.info.clone(),
            resources: bound::Resources::of(kernel, cfg.block, cfg.dynamic_lds_bytes),
            kernel: kernel.name.clone(),
            grid: cfg.grid,
            workgroups: n,
            xcds,
            scope,
            sequential,
            order: Vec::new(),
        };
        l.order = if sequential && scope == Scope::OneXcd {
            // Coupled workgroups (split-K's tile counter decides which one reduces) must all
            // run functionally, or a tile whose splits straddle XCDs would never be reduced on
            // XCD 0: run the whole grid in the device's dispatch order (round-robin over the
            // XCDs) and keep XCD 0's traces.
            (0..n).collect()
        } else {
            // Dispatch order across XCDs: interleaved by position in each queue.
            let queues = l.queues();
            let mut v = Vec::with_capacity(n as usize);
            let longest = queues.iter().map(VecDeque::len).max().unwrap_or(0);
            for p in 0..longest {
                for q in &queues {
                    if let Some(&id) = q.get(p) {
                        v.push(id);
                    }
                }
            }
            v
        };
        l
    }

    /// The workgroups dispatched to each simulated XCD, in order.
    fn queues(&self) -> Vec<VecDeque<u64>> {
        let (n, x) = (self.workgroups, u64::from(self.xcds));
        match self.scope {
            Scope::Full => (0..x).map(|i| (i..n).step_by(x as usize).collect()).collect(),
            Scope::OneXcd => vec![(0..n).step_by(x as usize).collect()],
        }
    }

    /// The simulated share of the device's shared MALL and HBM.
    fn share(&self) -> f64 {
        match self.scope {
            Scope::Full => 1.0,
            Scope::OneXcd => 1.0 / f64::from(self.xcds),
        }
    }

    fn simulated(&self, id: u64) -> bool {
        self.scope == Scope::Full || id.is_multiple_of(u64::from(self.xcds))
    }

    fn statics(&self, machine: &Machine) -> Vec<sim::Static> {
        self.program.insts.iter().zip(&self.info).map(|(r, info)| sim::Static::of(r.as_ref().ok(), info, machine)).collect()
    }

    /// Traces the workgroups `ids` and hands each simulated one's traces to `keep`, adding its
    /// executions per instruction to `counts`.
    fn trace_batch(
        &self,
        prep: &exec::Prepared<'_>,
        ids: &[u64],
        skip_mfma_math: bool,
        counts: &mut [u64],
        keep: &mut dyn FnMut(u64, Vec<exec::trace::WaveTrace>),
    ) -> Result<(), LaunchError> {
        // With global atomics one workgroup's path can depend on another's (split-K: the last
        // of a tile to bump its counter reduces). Run those workgroups one at a time in
        // dispatch order so the traces, and the modelled time, are the same on every run.
        let runs = if self.sequential {
            let mut v = Vec::with_capacity(ids.len());
            for id in ids {
                v.extend(prep.run_traced(std::slice::from_ref(id), skip_mfma_math)?);
            }
            v
        } else {
            prep.run_traced(ids, skip_mfma_math)?
        };
        for (wg, run) in ids.iter().zip(runs).filter(|(wg, _)| self.simulated(**wg)) {
            for (c, x) in counts.iter_mut().zip(&run.counts) {
                *c += x;
            }
            keep(*wg, run.traces);
        }
        Ok(())
    }

    fn report(&self, st: &sim::Stats, counts: &[u64], machine: &Machine, opts: &SimOptions) -> TimingReport {
        let program = &self.program;
        let mut mfma_flops = 0u64;
        for (i, &c) in counts.iter().enumerate() {
            if c != 0
                && let Ok(inst) = &program.insts[i]
            {
                mfma_flops += c * crate::exec::counters::mfma_flops(inst.op);
            }
        }
        let n = self.workgroups;
        let share = self.share();
        let scale = n as f64 / st.simulated_workgroups.max(1) as f64;
        let cycles = st.end;
        let seconds = cycles as f64 / machine.clock_hz + machine.launch_overhead_s;
        let sim_cus = f64::from(machine.cus_per_xcd) * if opts.scope == Scope::Full { f64::from(machine.xcds) } else { 1.0 };
        let simds = sim_cus * f64::from(machine.simds_per_cu);
        let t = cycles.max(1) as f64;
        let l2_bw = machine.l2_bytes_per_clk * sim_cus / f64::from(machine.cus_per_xcd);
        let busy = Busy {
            mfma: st.mfma_cycles as f64 / (simds * t),
            valu: st.valu_cycles as f64 / (simds * t),
            lds: st.lds_cycles as f64 / (sim_cus * t),
            vmem: st.ta_cycles / (sim_cus * t),
            l2: st.l2_bytes / (l2_bw * t),
            hbm: st.hbm_bytes / (machine.hbm_bytes_per_s * machine.hbm_efficiency / machine.clock_hz * share * t),
            cus: st.cu_busy as f64 / (sim_cus * t),
        };
        let mut sites: Vec<(usize, u64, Stall)> = st
            .stall_by_inst
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let (k, _) = r.iter().enumerate().max_by_key(|(_, v)| **v).unwrap_or((0, &0));
                (i, r.iter().sum::<u64>(), Stall::ALL[k])
            })
            .filter(|x| x.1 > 0)
            .collect();
        sites.sort_by_key(|x| std::cmp::Reverse(x.1));
        let top = sites
            .into_iter()
            .take(opts.top)
            .map(|(i, cycles, reason)| StallSite {
                pc: program.pcs[i],
                text: program.insts[i].as_ref().map_or_else(|_| "?".into(), format_inst),
                cycles,
                reason,
            })
            .collect();
        TimingReport {
            machine: machine.name.to_string(),
            kernel: self.kernel.clone(),
            grid: self.grid,
            scope: opts.scope,
            workgroups: n,
            simulated_workgroups: st.simulated_workgroups,
            workgroups_per_cu: sim::workgroups_per_cu(machine, &self.resources),
            cycles,
            seconds,
            flops: mfma_flops as f64 * scale,
            hbm_bytes: st.hbm_bytes * scale,
            l2_bytes: st.l2_bytes * scale,
            fabric_bytes: st.fabric_by_xcd.iter().sum::<f64>() * scale,
            fabric_by_xcd: st.fabric_by_xcd.clone(),
            busy,
            stalls: st.stalls,
            issued: st.issued,
            top,
            spans: st.spans.iter().map(|&(workgroup, cu, start, end)| WorkgroupSpan { workgroup, cu, start, end }).collect(),
            trace: st
                .trace
                .iter()
                .map(|&(cycle, i)| TraceEntry { cycle, pc: program.pcs[i], text: program.insts[i].as_ref().map_or_else(|_| "?".into(), format_inst) })
                .collect(),
        }
    }
}
