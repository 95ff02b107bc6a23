//! A throughput **lower bound** of a launch, from its counters ([`LaunchReport`]), the kernel's
//! [`Resources`] and the grid, on a [`Machine`] of the timing model. It is not the performance
//! model (that is [`crate::timing::simulate`]): it ignores latency, issue rules, waits,
//! barriers, caches and launch cost, and is kept as a clearly named bound (what no schedule can
//! beat) next to the counters. Nothing here is measured; every printed number says so.
//!
//! # Bound
//! 1. **Occupancy.** Waves per SIMD = min(8, 512 / roundup(VGPRs + AGPRs, 8), 800 /
//!    roundup(SGPRs, 16)); workgroups per CU = min(⌊4 · waves per SIMD / waves per workgroup⌋,
//!    ⌊LDS per CU / LDS per workgroup⌋), at least 1 (LDS per CU is the machine's
//!    [`Machine::lds_per_cu`]: 64 KiB on MI300X; an MI355X machine has 160 KiB,
//!    [`crate::exec::MAX_LDS_BYTES_GFX950`]). [`Resources`] do not depend on the target.
//! 2. **Wave quantization.** Workgroups are spread evenly over the CUs; the busiest CU runs
//!    `⌈W / 304⌉` of the `W` workgroups, each costing the launch average. The SIMDs busy on that
//!    CU are min(4, resident workgroups · waves per workgroup).
//! 3. **Pipes per CU** (cycles of the busiest CU; they overlap, so the CU time is their max):
//!    * MFMA: passes × 4 cycles ([`crate::exec::counters::mfma_passes`]: FP8 16x16x32 = 4
//!      passes = 16 cycles, 32x32x16 = 8 passes = 32 cycles; gfx950 f8f6f4 16x16x128 = 8,
//!      32x32x64 = 16 passes) divided over the busy SIMDs;
//!    * VALU: 4 cycles per wave64 VALU instruction (16 lanes per cycle) over the busy SIMDs;
//!    * LDS: the bank-model cycles of [`crate::exec::counters`] (one phase of up to 128 B per
//!      cycle plus the bank-conflict cycles), one LDS per CU.
//!    * VMEM: the global bytes the CU's vector memory instructions moved at
//!      [`Machine::ta_bytes_per_clk`].
//! 4. **HBM** (whole device): the launch's distinct global footprint (distinct 128-byte lines
//!    touched, [`crate::exec::counters::Counters::global_footprint_bytes`]) / 5.3 TB/s, i.e. the
//!    caches are assumed to catch all reuse (tiles re-read by several workgroups come from L2 /
//!    Infinity Cache). A report without a footprint charges all moved bytes instead.
//! 5. Time = max(busiest CU's slowest pipe / clock, HBM time); TFLOPS = matrix FLOPs issued /
//!    time. `bound_by` names the pipe that set the time. Latencies, instruction issue limits,
//!    barriers and launch overhead are ignored, so the time is a lower bound of what the model
//!    describes (optimistic).

use std::fmt;

use super::Machine;
use crate::exec::LaunchReport;
use crate::exec::counters::Kind;
use crate::loader::Kernel;

/// A kernel's resource use, which sets occupancy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    /// Architectural VGPRs per work-item (allocated).
    pub vgprs: u32,
    /// AccVGPRs per work-item (allocated).
    pub agprs: u32,
    /// SGPRs per wave (allocated).
    pub sgprs: u32,
    /// LDS bytes per workgroup (static + dynamic).
    pub lds_bytes: u32,
    /// Work-items per workgroup.
    pub workgroup_size: u32,
}

impl Resources {
    /// The resources of `kernel` launched with `block` and `dynamic_lds` bytes of dynamic LDS,
    /// from its kernel descriptor (unified VGPR count split at `accum_offset`).
    pub fn of(kernel: &Kernel, block: [u32; 3], dynamic_lds: u32) -> Resources {
        let d = &kernel.descriptor;
        let total = d.vgprs;
        let (vgprs, agprs) = if d.accum_offset > 0 && d.accum_offset < total { (d.accum_offset, total - d.accum_offset) } else { (total, 0) };
        let fixed = d.group_segment_fixed_size.max(kernel.meta.group_segment_fixed_size);
        Resources { vgprs, agprs, sgprs: d.sgprs, lds_bytes: fixed.saturating_add(dynamic_lds), workgroup_size: block.iter().product() }
    }
}

/// The pipe that bounds a modelled launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Matrix cores.
    Mfma,
    /// Vector ALU issue.
    Valu,
    /// LDS bandwidth (including bank conflicts).
    Lds,
    /// Vector memory bytes per CU.
    Vmem,
    /// HBM bandwidth.
    Hbm,
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Bound::Mfma => "MFMA",
            Bound::Valu => "VALU",
            Bound::Lds => "LDS",
            Bound::Vmem => "VMEM",
            Bound::Hbm => "HBM",
        })
    }
}

/// Occupancy of a kernel under the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occupancy {
    /// Waves per SIMD the registers allow.
    pub waves_per_simd: u32,
    /// Workgroups resident per CU.
    pub workgroups_per_cu: u32,
    /// Waves per workgroup.
    pub waves_per_workgroup: u32,
}

/// A modelled launch time (MI300X model, never a measurement).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Modelled time in seconds.
    pub seconds: f64,
    /// Matrix FLOPs issued / modelled time, in TFLOPS.
    pub tflops: f64,
    /// The pipe that set the time.
    pub bound_by: Bound,
    /// Modelled seconds of each pipe: MFMA, VALU, LDS, VMEM (busiest CU) and HBM (device).
    pub mfma_seconds: f64,
    /// VALU pipe seconds.
    pub valu_seconds: f64,
    /// LDS pipe seconds.
    pub lds_seconds: f64,
    /// VMEM pipe seconds (busiest CU).
    pub vmem_seconds: f64,
    /// HBM seconds.
    pub hbm_seconds: f64,
    /// Occupancy.
    pub occupancy: Occupancy,
    /// Workgroups on the busiest CU.
    pub workgroups_per_busiest_cu: u64,
    /// Matrix FLOPs issued.
    pub flops: u64,
}

/// Occupancy of `res` on `m`.
pub fn occupancy(res: &Resources, m: &Machine) -> Occupancy {
    let regs = (res.vgprs + res.agprs).max(1).next_multiple_of(8);
    let sgprs = res.sgprs.max(1).next_multiple_of(16);
    let waves_per_simd = m.max_waves_per_simd.min(m.vgprs_per_simd / regs).min(m.sgprs_per_simd / sgprs).max(1);
    let waves_per_workgroup = res.workgroup_size.max(1).div_ceil(64);
    let by_waves = (m.simds_per_cu * waves_per_simd) / waves_per_workgroup;
    let by_lds = m.lds_per_cu.checked_div(res.lds_bytes).unwrap_or(u32::MAX);
    Occupancy { waves_per_simd, workgroups_per_cu: by_waves.min(by_lds).max(1), waves_per_workgroup }
}

/// Models `report` (counters of a launch of a kernel with resources `res` over `grid`) on
/// MI300X. See the module docs for the model.
pub fn estimate(report: &LaunchReport, res: &Resources, grid: [u32; 3]) -> Estimate {
    estimate_on(report, res, grid, &Machine::MI300X)
}

/// [`estimate`] on machine `m`.
pub fn estimate_on(report: &LaunchReport, res: &Resources, grid: [u32; 3], m: &Machine) -> Estimate {
    let occ = occupancy(res, m);
    let w = grid.iter().map(|&g| u64::from(g)).product::<u64>().max(1);
    let per_cu = w.div_ceil(u64::from(m.cus()));
    let resident = per_cu.min(u64::from(occ.workgroups_per_cu));
    let simds = (resident * u64::from(occ.waves_per_workgroup)).clamp(1, u64::from(m.simds_per_cu)) as f64;
    let c = &report.counters;
    let share = per_cu as f64 / w as f64;
    let mfma_cycles = c.mfma_passes as f64 * 4.0 * share / simds;
    let valu_cycles = c.count(Kind::Valu) as f64 * 4.0 * share / simds;
    let lds_cycles = c.lds_cycles as f64 * share;
    let moved = (c.global_read_bytes + c.global_write_bytes) as f64;
    let vmem_cycles = moved * share / m.ta_bytes_per_clk;
    let dram = if c.global_footprint_bytes > 0 { c.global_footprint_bytes as f64 } else { moved };
    let hbm_seconds = dram / m.hbm_bytes_per_s;
    let (mfma_seconds, valu_seconds, lds_seconds, vmem_seconds) =
        (mfma_cycles / m.clock_hz, valu_cycles / m.clock_hz, lds_cycles / m.clock_hz, vmem_cycles / m.clock_hz);
    let mut bound_by = Bound::Mfma;
    let mut seconds = mfma_seconds;
    for (t, b) in [(valu_seconds, Bound::Valu), (lds_seconds, Bound::Lds), (vmem_seconds, Bound::Vmem), (hbm_seconds, Bound::Hbm)] {
        if t > seconds {
            seconds = t;
            bound_by = b;
        }
    }
    let tflops = if seconds > 0.0 { c.mfma_flops as f64 / seconds / 1e12 } else { 0.0 };
    Estimate {
        seconds,
        tflops,
        bound_by,
        mfma_seconds,
        valu_seconds,
        lds_seconds,
        vmem_seconds,
        hbm_seconds,
        occupancy: occ,
        workgroups_per_busiest_cu: per_cu,
        flops: c.mfma_flops,
    }
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = |s: f64| s * 1e6;
        writeln!(
            f,
            "modelled MI300X throughput lower bound (not measured, not the timing model: no latency, no launch overhead): {:.2} us, {:.1} TFLOPS modelled, bound by {}",
            us(self.seconds),
            self.tflops,
            self.bound_by
        )?;
        writeln!(
            f,
            "  modelled pipes: MFMA {:.2} us, VALU {:.2} us, LDS {:.2} us, VMEM {:.2} us (busiest CU), HBM {:.2} us (device, distinct footprint)",
            us(self.mfma_seconds),
            us(self.valu_seconds),
            us(self.lds_seconds),
            us(self.vmem_seconds),
            us(self.hbm_seconds)
        )?;
        write!(
            f,
            "  modelled occupancy: {} waves/SIMD by registers, {} workgroups/CU of {} waves, {} workgroups on the busiest CU",
            self.occupancy.waves_per_simd, self.occupancy.workgroups_per_cu, self.occupancy.waves_per_workgroup, self.workgroups_per_busiest_cu
        )
    }
}

impl fmt::Display for LaunchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counters;
        writeln!(
            f,
            "launch of `{}`: grid {:?} x block {:?}: {} workgroups, {} waves, {} wave-instructions, {} barrier releases (emulator counts)",
            self.kernel, self.grid, self.block, self.workgroups, self.waves, self.instructions, self.barriers
        )?;
        let kinds: Vec<String> = Kind::ALL.iter().map(|&k| format!("{} {}", k.label(), c.count(k))).collect();
        writeln!(f, "  instructions: {}", kinds.join(", "))?;
        let mfma = c.count(Kind::Mfma);
        let per = |x: u64| if mfma == 0 { 0.0 } else { x as f64 / mfma as f64 };
        writeln!(
            f,
            "  LDS: {} cycles in the bank model, {} bank-conflict cycles ({:.3} per MFMA)",
            c.lds_cycles,
            c.lds_conflict_cycles,
            per(c.lds_conflict_cycles)
        )?;
        writeln!(
            f,
            "  global memory: {} bytes read, {} bytes written, distinct footprint {} bytes; scalar loads {} bytes",
            c.global_read_bytes, c.global_write_bytes, c.global_footprint_bytes, c.scalar_read_bytes
        )?;
        writeln!(
            f,
            "  line requests (per instruction, runs of neighbouring lanes in one 128-byte line): {} loads, {} stores; whole-line share {:.2} / {:.2}",
            c.global_load_requests,
            c.global_store_requests,
            c.global_read_bytes as f64 / 128.0 / c.global_load_requests.max(1) as f64,
            c.global_write_bytes as f64 / 128.0 / c.global_store_requests.max(1) as f64
        )?;
        write!(
            f,
            "  MFMA: {} wave-instructions, {} passes, {} FLOP issued; MFMA share of all issued {:.1}%",
            mfma,
            c.mfma_passes,
            c.mfma_flops,
            100.0 * mfma as f64 / self.instructions.max(1) as f64
        )?;
        if let Some(s) = &self.steady {
            write!(
                f,
                "\n  steady state (hottest loop pc {:#x}..={:#x}, {} iterations over all waves): MFMA {} of {} issued = {:.1}%",
                s.start_pc,
                s.end_pc,
                s.iterations,
                s.mfma,
                s.instructions,
                100.0 * s.mfma_share()
            )?;
        }
        Ok(())
    }
}
