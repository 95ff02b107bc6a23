//! Machine descriptions for the timing model: every number the model uses, with its source.

use crate::loader::Target;

/// A gfx942 or gfx950 device as the timing model sees it. Machines are data: the CU count, clock
/// and bandwidths are fields, and [`Machine::MI300X`], [`Machine::MI325X`], [`Machine::MI308X`]
/// (gfx942) and [`Machine::MI355X`] (gfx950) are instances. What differs between the two
/// instruction sets in timing (MFMA pass counts) is a property of the instruction and comes from
/// it ([`crate::exec::counters::mfma_passes_of`]), not from the machine.
///
/// All cycle figures are shader-clock cycles at [`Machine::clock_hz`]. Every figure is either
/// published (the source is named on the field; `hardware.md` is the project's table of
/// published measurements, `../shared/reference/hardware.md`, main source the SC'25 artifact
/// "Characterization of AMD Instinct MI300X and MI325X") or marked *fitted*: chosen by the
/// calibration against measured times of AMD's asm kernels (`fp8gemm calibrate`, see the
/// module docs of [`crate::timing`]), inside the published range where one exists.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// Name, as printed and as accepted by [`Machine::by_name`].
    pub name: &'static str,
    /// The processor (instruction set) of its code objects: a peer kernel timed on this machine
    /// is its build for this target (AMD: MI300X/MI325X/MI308X are gfx942, MI350X/MI355X gfx950;
    /// LLVM `AMDGPUUsage.rst` processor table).
    pub target: Target,
    /// XCDs (accelerator complex dies); workgroups are dispatched round-robin over them
    /// (MI300X: 8; AMD CDNA3 white paper; `shared/reference/gfx942.md`; MI308X 4, MI355X 8: see
    /// those machines).
    pub xcds: u32,
    /// CUs per XCD (MI300X/MI325X: 38 → 304; MI308X: 20 → 80; MI355X: 32 → 256).
    pub cus_per_xcd: u32,
    /// SIMDs per CU (4, CDNA3 ISA guide ch. 1).
    pub simds_per_cu: u32,
    /// Wave slots per SIMD (8 on gfx942, `shared/reference/gfx942.md` occupancy rule).
    pub max_waves_per_simd: u32,
    /// Unified VGPR file per SIMD lane, in registers (512).
    pub vgprs_per_simd: u32,
    /// SGPRs per SIMD (800).
    pub sgprs_per_simd: u32,
    /// LDS bytes per CU (gfx942: 64 KiB; gfx950: 160 KiB; `shared/reference/hardware.md`
    /// "Parts").
    pub lds_per_cu: u32,
    /// Dense FP8 matrix FLOPs per cycle per CU at the fastest FP8 MFMA of the instruction set
    /// (gfx942: 4096, `v_mfma_f32_16x16x32_fp8_fp8`; gfx950: 8192, `v_mfma_f32_16x16x128_f8f6f4`
    /// with FP8 operands; `shared/reference/hardware.md` "Matrix cores", AMD matrix instruction
    /// calculator). Only [`Machine::peak_fp8_flops`] uses it: the simulator charges each MFMA
    /// its own passes.
    pub fp8_flops_per_clk_cu: u32,
    /// Shader clock under a sustained GEMM load, Hz: the clock measured while real GEMMs run
    /// at the 8-bit MFMA rate at the part's power cap (hardware.md "Clock": MI300X 1434 MHz at
    /// 750 W, MI325X 1801 MHz at 1000 W; peak 2100 MHz).
    pub clock_hz: f64,
    /// A SIMD is offered an issue slot every this many cycles, and issues at most one
    /// instruction per wave and per category (vector, scalar, vector memory, LDS, scalar
    /// memory, program control) in a slot (GCN/CDNA sequencer, AMD "Graphics Core Next
    /// Architecture" white paper, "Compute Unit"): 4.
    pub issue_interval: u32,
    /// Cycles a wave64 VALU instruction occupies the SIMD's vector port (16 lanes per cycle): 4.
    pub valu_cycles: u32,
    /// Cycles of a quarter-rate transcendental VALU op (v_exp, v_log, v_rcp, v_rsq, v_sqrt,
    /// v_sin, v_cos): 16 (CDNA3 ISA guide, VALU rates).
    pub trans_cycles: u32,
    /// Cycles after an MFMA's last pass before a dependent non-MFMA instruction (a VALU, a
    /// store) can read its result: 12. LLVM `GCNHazardRecognizer` (gfx940): an N-pass XDL
    /// write read by a VALU needs N + 3 wait states; a wait state is one issue opportunity of
    /// the wave ([`Machine::issue_interval`] cycles) and a pass 4 cycles, so the result is
    /// readable 4·N + 3·4 cycles after issue.
    pub mfma_result_latency: u32,
    /// Cycles after an MFMA's last pass before the next MFMA of an accumulation chain (SrcC
    /// exactly the previous result) can issue: *fitted* within [0, `mfma_result_latency`]: 10
    /// (the joint fit over three families on two chips, `fp8gemm calibrate --fit`; 0: the result
    /// is forwarded back to back, `mfma_result_latency`: no forwarding). Issue is slotted
    /// ([`Machine::issue_interval`]), so for a 4-pass MFMA 10 and 12 both mean the 7th slot
    /// after issue (passes + 3, as a VALU reading the result), 6 and 8 the 6th. LLVM asks no
    /// software wait states for an exactly matching SrcC (the hardware interlocks it) and does
    /// not say when the interlock releases. AMD's kernels measured on MI325X put it well above
    /// 0: a chain of four dependent MFMAs added per wave and K step costs ~112 cycles at
    /// 1.8 GHz, not 4 × 16 (`measured_mi325x.csv`, tiles 32…128 × 128 at N = 2048).
    pub mfma_chain_latency: u32,
    /// Issue slots beyond an MFMA's passes before a packed-F32 VALU (`v_pk_{fma,mul,add}_f32`,
    /// `v_pk_mov_b32`) or a DOT may issue on the SIMD after it: 2 (one more after an XDL with
    /// an A source of 16 bytes or more). LLVM PR #233721 (`getPackedVALUIssueCycle`), rules
    /// fitted to ATT thread traces of MI308X (gfx942) and MI350X (gfx950) for every MFMA family,
    /// which also give the other VALU's hold after an XDL: `1 + (widest A/B source bytes) / 16`
    /// slots (one slot for the 8-byte sources of the FP8/INT8 16x16x32 MFMAs).
    pub mfma_pk_f32_slots: u32,
    /// Cycles from an LDS instruction leaving the LDS pipe to its data being usable (lgkmcnt):
    /// *fitted*, prior 64 (CDNA3 ISA guide gives no figure; origami models LDS via MI latency).
    pub lds_latency: u32,
    /// Scalar memory (constant cache hit) latency, cycles: 40 ("The MALL is Open", SC'25:
    /// sL1 hit ≈ 20 ns on MI300X, ~41 cycles at the ~2.05 GHz of the measurement).
    pub smem_latency: u32,
    /// Bytes per cycle a CU's texture addresser / vector L1 moves (64 B/clk/CU, CDNA3 white
    /// paper "vector L1: 64 B/clk"; hardware.md: L1-resident ~39 TB/s on MI300X, 61 B/clk/CU).
    /// Every L1 access is for one cache line (rocprofiler-compute, "Vector L1 cache"): an
    /// instruction takes a cycle per line it touches, or the bytes it moves in the line at this
    /// rate if more, and a wave64 instruction at least one issue interval.
    pub ta_bytes_per_clk: f64,
    /// Vector L1 size per CU (32 KiB, `shared/reference/gfx942.md`).
    pub l1_bytes: u32,
    /// Vector L1 hit latency (load to use), cycles: 115 (hardware.md "Latency": pointer chase
    /// 114–118 cycles on MI300X and MI325X).
    pub l1_latency: u32,
    /// L2 size per XCD (4 MiB, 16-way, 128-byte lines: CDNA3 white paper).
    pub l2_bytes: u32,
    /// L2 associativity (16).
    pub l2_ways: u32,
    /// L2 hit latency beyond the L1, cycles: 93 (hardware.md: L2 pointer chase 206–211
    /// cycles in all, the L1's 115 included).
    pub l2_latency: u32,
    /// L2 bandwidth per XCD, bytes per cycle: 1200. hardware.md: ~19.5 TB/s L2-resident
    /// aggregate on MI300X and MI325X, 2.44 TB/s per XCD, i.e. 1160–1350 B/clk for a clock
    /// between 2.1 and 1.8 GHz (the peak of 16 channels × 128 B/clk = 2048 is not reached by
    /// the streaming measurement).
    pub l2_bytes_per_clk: f64,
    /// Bandwidth of one XCD's link to the Infinity Fabric / MALL, bytes per second (fabric
    /// clock domain, independent of the shader clock): 650 GB/s, an eighth of the 5.0–5.3 TB/s
    /// MALL-resident aggregate (hardware.md "Bandwidth").
    pub fabric_bytes_per_s: f64,
    /// Infinity Cache (MALL) capacity (256 MiB).
    pub mall_bytes: u64,
    /// MALL hit latency beyond the L2, nanoseconds (memory-side clock domain): 100 ns.
    /// hardware.md: a MALL hit is 390–450 cycles (190–220 ns) load to use, the L2's 208
    /// cycles (~101 ns at 2.05 GHz) included, leaving 89–119 ns.
    pub mall_latency_ns: f64,
    /// MALL peak bandwidth, bytes per second (17.2 TB/s, AMD CDNA3 white paper).
    pub mall_bytes_per_s: f64,
    /// HBM latency beyond the MALL, nanoseconds: 210 ns. hardware.md: HBM pointer chase
    /// 839–870 cycles (~410–424 ns), of which a MALL hit is 190–220 ns: 190–234 ns.
    pub hbm_latency_ns: f64,
    /// HBM peak bandwidth, bytes per second (MI300X 5.3 TB/s, MI325X 6.0 TB/s: AMD specs).
    pub hbm_bytes_per_s: f64,
    /// Fraction of HBM peak a streaming read achieves: the stream-read figure over the
    /// specification (hardware.md: MI300X 4.14 / 5.3 TB/s = 0.78, MI325X 5.09 / 6.0 = 0.85).
    pub hbm_efficiency: f64,
    /// Cycles from the last wave's arrival at `s_barrier` to the release: *fitted*, prior 16.
    pub barrier_latency: u32,
    /// Cycles between two workgroup dispatches of one XCD's dispatcher: *fitted*, prior 8.
    pub wg_dispatch_cycles: u32,
    /// Cycles from dispatching a workgroup to its waves' first issue (register and LDS
    /// allocation, SGPR/VGPR initialisation): *fitted*, prior 300.
    pub wave_launch_cycles: u32,
    /// Fixed launch overhead added to every kernel's modelled time, seconds: *fitted* within
    /// [0, 4 µs] (4 µs is an empty kernel's hipEvent-timed cost, hardware.md "Launch", an upper
    /// bound of the profiler's device time AMD's tables use): 3.25 µs (the joint fit over the
    /// MI325X BpreShuffle and i8gemm rows and 31 MI355X rows, `fp8gemm calibrate --fit`).
    pub launch_overhead_s: f64,
}

impl Machine {
    /// MI300X (gfx942): 304 CUs, HBM3 5.3 TB/s.
    pub const MI300X: Machine = Machine {
        name: "mi300x",
        target: Target::Gfx942,
        xcds: 8,
        cus_per_xcd: 38,
        simds_per_cu: 4,
        max_waves_per_simd: 8,
        vgprs_per_simd: 512,
        sgprs_per_simd: 800,
        lds_per_cu: 65536,
        fp8_flops_per_clk_cu: 4096,
        clock_hz: 1.434e9,
        issue_interval: 4,
        valu_cycles: 4,
        trans_cycles: 16,
        mfma_result_latency: 12,
        mfma_chain_latency: 10,
        mfma_pk_f32_slots: 2,
        lds_latency: 64,
        smem_latency: 40,
        ta_bytes_per_clk: 64.0,
        l1_bytes: 32 * 1024,
        l1_latency: 115,
        l2_bytes: 4 * 1024 * 1024,
        l2_ways: 16,
        l2_latency: 93,
        l2_bytes_per_clk: 1200.0,
        fabric_bytes_per_s: 650e9,
        mall_bytes: 256 * 1024 * 1024,
        mall_latency_ns: 100.0,
        mall_bytes_per_s: 17.2e12,
        hbm_latency_ns: 210.0,
        hbm_bytes_per_s: 5.3e12,
        hbm_efficiency: 0.78,
        barrier_latency: 16,
        wg_dispatch_cycles: 8,
        wave_launch_cycles: 300,
        launch_overhead_s: 3.25e-6,
    };

    /// MI325X (gfx942): the MI300X's compute die with HBM3E at 6.0 TB/s and a 1000 W power
    /// cap, hence a higher clock under load.
    pub const MI325X: Machine = Machine { name: "mi325x", clock_hz: 1.801e9, hbm_bytes_per_s: 6.0e12, hbm_efficiency: 0.85, ..Machine::MI300X };

    /// MI308X (gfx942): the MI300X's CDNA3 XCDs cut down to 80 CUs, sold in China.
    ///
    /// Sourced figures:
    /// * 4 XCDs × 20 CUs: in CPX mode (one compute partition per XCD, ROCm/rccl PR #1555
    ///   "viewing each XCD as a disparate element") an MI308X partition has 20 CUs
    ///   (ROCm/rocMLIR PR #2197, "MI308 CPX mode has 20 CU only"), so its 80 CUs are 4 XCDs of 20;
    /// * 64 KiB LDS per CU (`shared/reference/hardware.md` "Parts"), gfx942.
    ///
    /// Not found in public sources, derived from MI300X: the peak engine clock (2.1 GHz assumed,
    /// same CDNA3 XCD die); the L2 (4 MiB per XCD, same die); the MALL (256 MB) and its
    /// bandwidth (same I/O dies); HBM bandwidth 5.3 TB/s (the part carries the MI300X's 192 GB
    /// of HBM3, e.g. the MI308X deployment reports citing "192 GB HBM per card", so the same eight
    /// stacks are assumed). Every parameter fitted on MI325X is *as MI325X (fitted there)*: the
    /// fit has no MI308X rows.
    pub const MI308X: Machine = Machine { name: "mi308x", xcds: 4, cus_per_xcd: 20, hbm_bytes_per_s: 5.3e12, ..Machine::MI325X };

    /// MI355X (gfx950, CDNA4): 256 CUs in 8 XCDs of 32, 160 KiB LDS per CU, 4 MiB L2 per XCD,
    /// 256 MB MALL, HBM3E at 8.0 TB/s (`shared/reference/hardware.md` "Parts"; the MALL's 256 MB
    /// also per the CDNA4 white paper as quoted in nod-ai/amd-shark-ai PR #2005). Peak engine
    /// clock 2.4 GHz (AMD specifications; hardware.md: 5.0 PF FP8 at 256 CUs and 2.4 GHz). No
    /// clock under load has been published: [`Machine::clock_hz`] is the peak, the top of its
    /// range, which is where AMD's gfx950 block-scale kernels (the CDNA3 MFMA at half CDNA4's
    /// rate, far below the power cap) measured on MI355X put it (`fp8gemm calibrate --files
    /// measured_mi355x.csv`). Kernels at the full CDNA4 rate will draw more power, and may
    /// run slower. The other fitted parameters are the joint fit's, shared with MI325X (its rows
    /// and 31 MI355X rows fitted together). [`Machine::hbm_efficiency`] is the published
    /// streaming figure instead: 5.8 of 8.0 TB/s (tile-lang/tilelang PR #2248, hardware.md) =
    /// 0.725. MFMA rates are the instructions' own (CDNA3 `16x16x32_fp8` 4 passes, `f8f6f4` 8 or
    /// 16 with FP8 operands: [`crate::exec::counters::mfma_passes_of`]). Not found for CDNA4, as
    /// MI300X: the MALL bandwidth and the L1 (32 KiB; "CDNA4 keeps L1 mostly unchanged",
    /// nod-ai/amd-shark-ai PR #2005 from the CDNA4 white paper).
    ///
    /// The XCD's fabric link ([`Machine::fabric_bytes_per_s`]) is 900 GB/s: AMD's Hot Chips 2025
    /// CDNA4 talk gives Infinity Fabric 4 "2 TB/s more bandwidth than IF 3" (two I/O dies
    /// instead of four, wider die-to-die links), i.e. the MI300X's 5.0–5.3 TB/s MALL-resident
    /// aggregate + 2 TB/s over 8 XCDs = 875–913 GB/s. A measured row bounds it from below: AMD's
    /// `BpreShuffle_80x128` at 1024×2176×4096 (21.61 µs on MI355X, `measured_mi355x.csv`)
    /// gives every XCD tiles of all 17 B columns and all A rows, so each link carries at least
    /// the 13.1 MB of A and B in 18.4 µs (the launch overhead taken off): ≥ 714 GB/s, above the
    /// MI325X figure of 650.
    pub const MI355X: Machine = Machine {
        name: "mi355x",
        target: Target::Gfx950,
        xcds: 8,
        cus_per_xcd: 32,
        lds_per_cu: 160 * 1024,
        fp8_flops_per_clk_cu: 8192,
        hbm_bytes_per_s: 8.0e12,
        hbm_efficiency: 5.8 / 8.0,
        clock_hz: 2.4e9,
        fabric_bytes_per_s: 900e9,
        ..Machine::MI325X
    };

    /// Every built-in machine.
    pub const ALL: [&'static Machine; 4] = [&Machine::MI300X, &Machine::MI325X, &Machine::MI308X, &Machine::MI355X];

    /// Environment variable that selects the machine of the emulator's timing runs
    /// (`mi300x`, `mi325x`, `mi308x`, `mi355x`).
    pub const ENV: &'static str = "AMDGPU_EMU_MACHINE";

    /// The built-in machine called `name` (case-insensitive).
    pub fn by_name(name: &str) -> Option<&'static Machine> {
        Machine::ALL.into_iter().find(|m| m.name.eq_ignore_ascii_case(name.trim()))
    }

    /// The machine named by [`Machine::ENV`], or MI300X when it is unset. An unknown name is
    /// an error naming the variable and the accepted values.
    pub fn from_env() -> Result<&'static Machine, String> {
        match std::env::var(Machine::ENV) {
            Err(_) => Ok(&Machine::MI300X),
            Ok(v) => Machine::by_name(&v).ok_or_else(|| {
                let names: Vec<&str> = Machine::ALL.iter().map(|m| m.name).collect();
                format!("{}={v:?}: unknown machine; expected one of {}", Machine::ENV, names.join(", "))
            }),
        }
    }

    /// Environment variable with `field=value` overrides applied by [`Machine::with_overrides`]
    /// in the CLI (for calibration experiments), e.g. `clock_hz=1.9e9,l2_bytes_per_clk=700`.
    pub const OVERRIDES_ENV: &'static str = "AMDGPU_EMU_MACHINE_OVERRIDES";

    /// This machine with `field=value` pairs (comma-separated) applied to its numeric fields.
    /// An unknown field or a value that does not parse is an error naming it.
    pub fn with_overrides(&self, spec: &str) -> Result<Machine, String> {
        let mut m = self.clone();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| format!("override `{item}`: expected field=value"))?;
            let v: f64 = v.trim().parse().map_err(|e| format!("override `{item}`: {e}"))?;
            let u = || -> Result<u32, String> {
                if v >= 0.0 && v <= f64::from(u32::MAX) && v.fract() == 0.0 { Ok(v as u32) } else { Err(format!("override `{item}`: expected a whole number")) }
            };
            match k.trim() {
                "clock_hz" => m.clock_hz = v,
                "issue_interval" => m.issue_interval = u()?.max(1),
                "valu_cycles" => m.valu_cycles = u()?,
                "trans_cycles" => m.trans_cycles = u()?,
                "mfma_result_latency" => m.mfma_result_latency = u()?,
                "mfma_chain_latency" => m.mfma_chain_latency = u()?,
                "mfma_pk_f32_slots" => m.mfma_pk_f32_slots = u()?,

                "lds_latency" => m.lds_latency = u()?,
                "smem_latency" => m.smem_latency = u()?,
                "ta_bytes_per_clk" => m.ta_bytes_per_clk = v,
                "l1_latency" => m.l1_latency = u()?,
                "l2_latency" => m.l2_latency = u()?,
                "l2_bytes" => m.l2_bytes = u()?,
                "l2_ways" => m.l2_ways = u()?.max(1),
                "l2_bytes_per_clk" => m.l2_bytes_per_clk = v,
                "fabric_bytes_per_s" => m.fabric_bytes_per_s = v,
                "mall_latency_ns" => m.mall_latency_ns = v,
                "mall_bytes_per_s" => m.mall_bytes_per_s = v,
                "hbm_latency_ns" => m.hbm_latency_ns = v,
                "hbm_bytes_per_s" => m.hbm_bytes_per_s = v,
                "hbm_efficiency" => m.hbm_efficiency = v,
                "barrier_latency" => m.barrier_latency = u()?,
                "wg_dispatch_cycles" => m.wg_dispatch_cycles = u()?,
                "wave_launch_cycles" => m.wave_launch_cycles = u()?,
                "launch_overhead_s" => m.launch_overhead_s = v,
                other => return Err(format!("override `{item}`: unknown machine field `{other}`")),
            }
        }
        Ok(m)
    }

    /// Compute units.
    pub fn cus(&self) -> u32 {
        self.xcds * self.cus_per_xcd
    }

    /// Peak dense FP8 MFMA rate of the whole device at [`Machine::clock_hz`], FLOP/s
    /// ([`Machine::fp8_flops_per_clk_cu`] per CU).
    pub fn peak_fp8_flops(&self) -> f64 {
        f64::from(self.cus()) * f64::from(self.fp8_flops_per_clk_cu) * self.clock_hz
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machines_by_name_and_their_sourced_fields() {
        for m in Machine::ALL {
            assert_eq!(Machine::by_name(m.name), Some(m));
            assert_eq!(Machine::by_name(&m.name.to_uppercase()), Some(m));
        }
        assert_eq!(Machine::by_name("mi999x"), None);
        let m = Machine::by_name(" MI308X ").unwrap();
        assert_eq!((m.target, m.xcds, m.cus_per_xcd, m.cus(), m.lds_per_cu), (Target::Gfx942, 4, 20, 80, 65536));
        assert_eq!((m.hbm_bytes_per_s, m.fp8_flops_per_clk_cu), (5.3e12, 4096));
        let m = Machine::by_name("mi355x").unwrap();
        assert_eq!((m.target, m.xcds, m.cus_per_xcd, m.cus(), m.lds_per_cu), (Target::Gfx950, 8, 32, 256, 160 * 1024));
        assert_eq!((m.hbm_bytes_per_s, m.hbm_efficiency, m.fp8_flops_per_clk_cu), (8.0e12, 0.725, 8192));
        assert_eq!((m.l2_bytes, m.mall_bytes), (4 << 20, 256 << 20));
        // 5.0 PF FP8 at 2.4 GHz (hardware.md): 256 CUs × 8192 FLOP/clk.
        assert!((Machine { clock_hz: 2.4e9, ..m.clone() }.peak_fp8_flops() - 5.033e15).abs() < 1e12);
        assert_eq!(Machine::MI300X.peak_fp8_flops(), 304.0 * 4096.0 * Machine::MI300X.clock_hz);
        // The MI325X is the MI300X with HBM3E; both gfx942, 304 CUs.
        assert_eq!((Machine::MI325X.target, Machine::MI325X.cus(), Machine::MI325X.hbm_bytes_per_s), (Target::Gfx942, 304, 6.0e12));
    }

    #[test]
    fn fitted_parameters_of_the_new_machines_are_mi325x_s() {
        assert_eq!(Machine::MI308X.clock_hz, Machine::MI325X.clock_hz);
        assert_eq!(Machine::MI355X.clock_hz, 2.4e9, "the MI355X runs at its peak clock (no clock under load is published)");
        let f = |m: &Machine| (m.lds_latency, m.smem_latency, m.l1_latency, m.l2_latency, m.l2_bytes_per_clk, m.mall_latency_ns, m.hbm_latency_ns);
        let g = |m: &Machine| (m.barrier_latency, m.wg_dispatch_cycles, m.wave_launch_cycles, m.launch_overhead_s);
        for m in [&Machine::MI308X, &Machine::MI355X] {
            assert_eq!(f(m), f(&Machine::MI325X), "{}", m.name);
            assert_eq!(g(m), g(&Machine::MI325X), "{}", m.name);
        }
        assert_eq!(Machine::MI308X.hbm_efficiency, Machine::MI325X.hbm_efficiency);
        assert_eq!(Machine::MI308X.fabric_bytes_per_s, Machine::MI325X.fabric_bytes_per_s);
        // MI355X: Infinity Fabric 4, 2 TB/s over IF 3's MALL-resident aggregate (Hot Chips 2025).
        assert_eq!(Machine::MI355X.fabric_bytes_per_s, 900e9);
    }
}
