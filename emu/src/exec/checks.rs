//! Checking modes and the per-instruction probe that also gathers the launch's counters.
//!
//! The executor calls [`Probe::before`] for every wave-instruction before executing it (with the
//! wave's registers as the instruction will read them) and [`Probe::barrier`] when a workgroup
//! barrier releases. The probe
//! * counts executions per instruction (kinds, MFMA passes and the hottest loop derive from
//!   these in [`Plan::finish`]) and LDS bank-conflict cycles ([`super::counters`]);
//! * **mfma-hazard**: reports a dependent access of an MFMA's result, or an overwrite of its
//!   sources, issued before the wait states gfx940/gfx942 require (tables below);
//! * **racecheck**: reports two different waves of a workgroup touching the same LDS byte
//!   between barriers with at least one of them writing;
//! * **late-arrival**: models results of vector memory loads (vmcnt) and LDS/scalar loads
//!   (lgkmcnt) as landing only when an `s_waitcnt` covers them, and reports any read (or
//!   overwrite) of a destination register of a load that has not been waited for;
//! * **uninit-lds**: reports a read of LDS bytes never written in this workgroup.
//!
//! A finding fails the launch with [`LaunchError::Check`] naming the kernel, pc(s), workgroup,
//! wave, lane and address.
//!
//! # MFMA wait states (gfx940/gfx942)
//! From LLVM `llvm/lib/Target/AMDGPU/GCNHazardRecognizer.cpp` (`checkMAIHazards90A`,
//! `checkMAIVALUHazards` with `hasGFX940Insts()`), for an XDL MFMA of `N` passes (4 cycles each;
//! 16x16x32 FP8 = 4, 32x32x16 FP8 = 8, see [`super::counters::mfma_passes`]); *wait states* are
//! issued instructions in between, `s_nop k` counting `k + 1`:
//! * VALU, VMEM, FLAT or DS instruction reading a register the MFMA writes: `N + 3`
//!   (`GFX940_XDL_N_PassWriteVgprVALUMemExpReadWaitStates`; 4 passes → 7, 8 passes → 11);
//! * VALU/memory instruction writing a register the MFMA writes (WAW): `N + 3`
//!   (`GFX940_XDL_N_PassWriteVgprVALUWawWaitStates`);
//! * VALU/memory instruction overwriting a register the MFMA reads as SrcC (WAR): 2 passes → 1,
//!   4 → 3, 8 → 7, 16 → 15 (`SMFMA*ReadVgprVALUWarWaitStates`, `GFX940_XDL4PassReadVgprVALUWarWaitStates`);
//! * MFMA reading the result as SrcA/SrcB: `N + 3` (`GFX940_XDL_N_PassWritesVGPROverlappedSrcABWaitStates`);
//! * MFMA reading it as SrcC: 0 when SrcC is exactly the same register range (back-to-back
//!   accumulation; 2 for a 2-pass producer), else `N + 1` when the ranges only overlap
//!   (`GFX940_XDL_N_PassWritesVGPROverlappedSMFMASrcCWaitStates`);
//! * MFMA reading a VGPR a (non-MFMA) VALU instruction wrote: 2 (`LegacyVALUNotDotWritesVGPRWaitStates`).
//!
//! Every MFMA is treated as XDL (the FP64 DGEMM special cases and the VALU-writes-EXEC rule are
//! not modelled).
//!
//! On gfx950 the read-after-write rule is `N + 4` for `N > 2` (LLVM adds one wait state with
//! `hasGFX950Insts()`; the other rules keep their gfx940 values here), and an f8f6f4 MFMA's `N`
//! depends on its operand formats ([`super::counters::mfma_passes_of`]: 8 / 16 passes with an
//! FP8 or BF8 operand, half that when both are FP6/BF6/FP4 — what the pinned llc's s_nop
//! padding for gfx950 shows: 12 wait states after a 16x16x128 FP8 MFMA, 8 after an FP4 one).
//!
//! # Wait counters
//! gfx9 `s_waitcnt` simm16: vmcnt = bits 3:0 | bits 15:14 << 4, lgkmcnt = bits 11:8. VMEM loads,
//! stores and atomics (MUBUF, GLOBAL, SCRATCH, FLAT) count on vmcnt and return in order: vmcnt(n)
//! retires all but the newest `n`. DS instructions and SMEM count on lgkmcnt; DS returns in order,
//! SMEM out of order, so (conservatively) lgkmcnt(n) retires the oldest DS entries that cannot be
//! among the `n` still outstanding and retires SMEM entries only at lgkmcnt(0). Writing a register
//! with a pending load is a finding unless the writer is a later load on the same in-order
//! counter. FLAT is modelled as VMEM only; `s_memtime`/`s_sendmsg` are not tracked (they can
//! only make the model retire loads earlier than the hardware, never report a false finding).
//!
//! # Operands
//! Registers read and written come from the decoder's operand slots (destination slots are
//! written, all others read); implicit operands (VCC, EXEC, M0) are not tracked, and the VGPR
//! index mode (`s_set_gpr_idx_on`) remapping is not applied to the checked operands.
//!
//! # LDS shadow
//! racecheck and uninit-lds keep, per LDS byte of the workgroup, the last writer (wave,
//! instruction, barrier interval) and the last reader(s). The executor runs each wave of a
//! workgroup up to its next `s_barrier` in turn, so within one barrier interval every pair of
//! accesses by different waves is unordered on the hardware. LDS atomics count as a read and a
//! write; LDS reached through FLAT addresses is not shadowed.

use std::collections::VecDeque;

use super::buffer::Rsrc;
use super::counters::{Counters, DsShape, Kind, SteadyState, lds_cost, mfma_flops, mfma_passes_of, steady_state};
use super::wave::Wave;
use super::{Compiled, LaunchError};
use crate::decode::{AGPR0, Enc, Field, Inst, Op, RegClass, VGPR0, flag};
use crate::disasm::{format_inst, operand};

/// A register range as operand codes: SGPR `s[n]` = n, VGPR `v[n]` = 256 + n, AccVGPR
/// `a[n]` = 512 + n; `(first code, dwords)`.
pub(crate) type Range = (u16, u8);

const REG_CODES: usize = 768;
/// The longest wait-state requirement (32x32 XDL result read: 8 + 3; 16 passes: 19).
const MAX_WAIT_STATES: u64 = 19;

/// Static facts about one instruction of a kernel, computed once per launch.
#[derive(Clone, Debug, Default)]
pub(crate) struct InstInfo {
    pub(crate) kind: Option<Kind>,
    /// MFMA passes (0 if not an MFMA).
    pub(crate) passes: u8,
    pub(crate) ds: Option<DsShape>,
    pub(crate) reads: Vec<Range>,
    pub(crate) writes: Vec<Range>,
    /// MFMA source operand ranges (A, B, C) as registers (empty entries for constants).
    pub(crate) mfma_src: [Option<Range>; 3],
    pub(crate) mem: Mem,
    /// `s_nop` wait states (simm16[3:0] + 1); 1 for everything else.
    pub(crate) wait_states: u8,
    /// s_waitcnt (vmcnt, lgkmcnt).
    pub(crate) waitcnt: Option<(u32, u32)>,
    /// Bytes per lane of a vector memory instruction (0 if none or unknown).
    pub(crate) vmem_bytes: u8,
}

/// Bytes per lane of a FLAT/GLOBAL/SCRATCH/MUBUF instruction from its mnemonic.
fn vmem_bytes(name: &str) -> u8 {
    let tail = name.trim_end_matches("_d16_hi").trim_end_matches("_d16");
    if tail.contains("atomic") {
        return if tail.ends_with("_x2") { 8 } else { 4 };
    }
    match tail.rsplit('_').next().unwrap_or("") {
        "ubyte" | "sbyte" | "byte" => 1,
        "short" | "ushort" | "sshort" => 2,
        "dword" => 4,
        "dwordx2" => 8,
        "dwordx3" => 12,
        "dwordx4" => 16,
        _ => 0,
    }
}

/// Global memory is tracked in lines of this many bytes for the distinct-footprint counter.
pub(super) const LINE_BYTES: u64 = 128;

/// The distinct global lines a workgroup (or a launch) touched: a hash set with constant-time
/// insertion, so recording costs the same per instruction whatever the footprint (a sorted vector
/// re-sorted as it grew made a workgroup streaming 10^5+ lines quadratic).
#[derive(Debug, Default)]
pub(super) struct LineSet {
    set: rustc_hash::FxHashSet<u64>,
}

impl LineSet {
    /// Records one line.
    #[inline]
    pub fn insert(&mut self, line: u64) {
        self.set.insert(line);
    }
    /// Distinct lines recorded.
    pub fn len(&self) -> usize {
        self.set.len()
    }
    /// Adds every line of `other` (moves the larger set, iterates the smaller).
    pub fn union(&mut self, mut other: LineSet) {
        if other.set.len() > self.set.len() {
            std::mem::swap(&mut self.set, &mut other.set);
        }
        self.set.extend(other.set);
    }
}

/// Which wait counter (if any) an instruction's memory access is tracked by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Mem {
    /// No memory access.
    #[default]
    None,
    /// Vector memory (vmcnt).
    Vm,
    /// LDS (lgkmcnt).
    Lds,
    /// Scalar memory loads (lgkmcnt).
    Smem,
}

/// Which checking modes run, and the per-instruction facts they need; built once per launch.
pub(crate) struct Plan {
    pub hazard: bool,
    /// gfx950 wait-state rules (one more wait state after an XDL MFMA of more than 2 passes).
    pub gfx950: bool,
    pub race: bool,
    pub late: bool,
    pub uninit: bool,
    pub(crate) info: Vec<InstInfo>,
}

fn in_file(code: u16) -> bool {
    code < 106 || (VGPR0..AGPR0 + 256).contains(&code)
}

impl InstInfo {
    fn of(inst: &Inst) -> InstInfo {
        let kind = Kind::of(inst);
        let mut info = InstInfo { kind: Some(kind), wait_states: 1, ..Default::default() };
        if inst.op == Op::s_nop {
            info.wait_states = (inst.imm as u32 & 0xf) as u8 + 1;
        }
        if inst.op == Op::s_waitcnt {
            let imm = inst.imm as u32;
            info.waitcnt = Some(((imm & 0xf) | ((imm >> 14) & 3) << 4, (imm >> 8) & 0xf));
        }
        info.passes = mfma_passes_of(inst).unwrap_or(0) as u8;
        if matches!(inst.enc, Enc::Flat | Enc::Global | Enc::Mubuf) {
            info.vmem_bytes = vmem_bytes(inst.op.name());
        }
        info.ds = if inst.enc == Enc::Ds { DsShape::of(inst) } else { None };
        info.mem = match inst.enc {
            Enc::Flat | Enc::Global | Enc::Scratch | Enc::Mubuf => Mem::Vm,
            Enc::Ds => Mem::Lds,
            Enc::Smem if inst.op.name().starts_with("s_load") || inst.op.name().starts_with("s_buffer_load") => Mem::Smem,
            _ => Mem::None,
        };
        for slot in inst.info.slots {
            if matches!(slot.class, RegClass::K) {
                continue;
            }
            let Some(code) = inst.field_code(slot.field) else { continue };
            let mut width = slot.width.max(1);
            match (inst.enc, slot.field) {
                // A global address with an SGPR base is one VGPR offset; scratch reads a VGPR
                // address only with SVE; MUBUF reads vaddr only with offen/idxen.
                (Enc::Global, Field::Addr) if inst.src[2] != 0x7f => width = 1,
                (Enc::Scratch, Field::Addr) if !inst.has_flag(flag::SVE) => continue,
                // A MUBUF load to LDS has no VGPR data operand (the vdata field is ignored;
                // CDNA3 ISA guide §9.1.9): it neither reads nor writes that register.
                (Enc::Mubuf, Field::Data | Field::Dst) if inst.has_flag(flag::LDS) => continue,
                (Enc::Mubuf, Field::Addr) => {
                    let n = u8::from(inst.has_flag(flag::OFFEN)) + u8::from(inst.has_flag(flag::IDXEN));
                    if n == 0 {
                        continue;
                    }
                    width = n;
                }
                // gfx950 f8f6f4 MFMA sources are as wide as their cbsz / blgp format (FP4 reads
                // 4 VGPRs, FP6 6, FP8 8).
                (Enc::Vop3p, Field::Src0) if crate::decode::is_f8f6f4(inst.op) => width = crate::decode::F8f6f4Format::regs_of_field(inst.abs),
                (Enc::Vop3p, Field::Src1) if crate::decode::is_f8f6f4(inst.op) => width = crate::decode::F8f6f4Format::regs_of_field(inst.neg),
                _ => {}
            }
            if !in_file(code) {
                continue;
            }
            let range = (code, width);
            if slot.field == Field::Dst || slot.field == Field::Sdst {
                info.writes.push(range);
            } else {
                info.reads.push(range);
                if kind == Kind::Mfma {
                    let i = match slot.field {
                        Field::Src0 => 0,
                        Field::Src1 => 1,
                        _ => 2,
                    };
                    info.mfma_src[i] = Some(range);
                }
            }
        }
        // A block-scaled MFMA also reads its two scale operands.
        if inst.has_flag(flag::MFMA_SCALE) {
            for (code, _) in inst.mfma_scale_srcs() {
                if in_file(code) {
                    info.reads.push((code, 1));
                }
            }
        }
        info
    }
}

impl Plan {
    pub fn new(prog: &Compiled, checks: &super::Checks) -> Plan {
        let info = prog.insts.iter().map(|r| r.as_ref().map_or_else(|_| InstInfo::default(), InstInfo::of)).collect();
        Plan {
            hazard: checks.mfma_hazard,
            gfx950: prog.target == crate::loader::Target::Gfx950,
            race: checks.racecheck,
            late: checks.late_arrival,
            uninit: checks.uninit_lds,
            info,
        }
    }

    fn any_wave_check(&self) -> bool {
        self.hazard || self.late
    }

    /// Totals from the merged per-instruction execution counts.
    pub fn finish(&self, prog: &Compiled, counts: &[u64], counters: &mut Counters) -> Option<SteadyState> {
        for (i, &c) in counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let Some(info) = self.info.get(i) else { continue };
            if let Some(k) = info.kind {
                counters.kinds[k as usize] += c;
            }
            counters.mfma_passes += c * u64::from(info.passes);
            if info.passes != 0
                && let Some(Ok(inst)) = prog.insts.get(i)
            {
                counters.mfma_flops += c * mfma_flops(inst.op);
            }
        }
        steady_state(&prog.pcs, &prog.insts, &prog.targets, counts)
    }
}

#[derive(Clone, Copy, Debug)]
struct MfmaRec {
    /// Wait-state clock at issue.
    t: u64,
    passes: u8,
    idx: u32,
    dst: Range,
    src_c: Option<Range>,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    idx: u32,
    dst: Option<Range>,
    smem: bool,
}

#[derive(Default)]
struct WaveProbe {
    /// Wait-state clock: wait states issued so far.
    t: u64,
    mfmas: VecDeque<MfmaRec>,
    /// Last VALU writes (clock, range, instruction) within 2 wait states.
    valu_writes: VecDeque<(u64, Range, u32)>,
    vm: VecDeque<Pending>,
    lgkm: VecDeque<Pending>,
    /// Pending loads per register code.
    pending: Vec<u8>,
}

/// Shadow state of one LDS byte for racecheck / uninit-lds.
#[derive(Clone, Copy, Default)]
struct Shadow {
    /// 1 + epoch of the last write (0 = never written).
    w_epoch: u32,
    w_idx: u32,
    w_wave: u16,
    /// 1 + epoch of the last read (0 = none).
    r_epoch: u32,
    r_idx: u32,
    r_wave: u16,
    /// More than one wave read in `r_epoch`.
    r_multi: bool,
}

/// One workgroup's probe: execution counts, LDS counters and the checking modes' state.
pub(super) struct Probe<'p> {
    plan: &'p Plan,
    prog: &'p Compiled,
    wg: [u32; 3],
    /// Executions per instruction index.
    pub counts: Vec<u64>,
    pub counters: Counters,
    /// Global memory lines (address / [`LINE_BYTES`]) touched by vector memory instructions.
    pub lines: LineSet,
    waves: Vec<WaveProbe>,
    shadow: Vec<Shadow>,
    epoch: u32,
    /// Record per-instruction timing facts ([`Probe::record`]).
    pub tracing: bool,
    /// Bank-model LDS cycles of the instruction [`Probe::before`] last saw (0 if not DS).
    last_lds_cycles: u32,
    /// Global lines of the instruction [`Probe::before`] last saw (only while tracing).
    cur_lines: Vec<u64>,
}

fn overlaps(a: Range, b: Range) -> bool {
    a.0 < b.0 + u16::from(b.1) && b.0 < a.0 + u16::from(a.1)
}

fn reg_name(r: Range) -> String {
    operand(r.0, r.1, 0)
}

impl<'p> Probe<'p> {
    pub fn new(plan: &'p Plan, prog: &'p Compiled, wg: [u32; 3], n_waves: u32, lds_bytes: u32) -> Probe<'p> {
        let waves =
            if plan.any_wave_check() { (0..n_waves).map(|_| WaveProbe { pending: vec![0; REG_CODES], ..Default::default() }).collect() } else { Vec::new() };
        let shadow = if plan.race || plan.uninit { vec![Shadow::default(); lds_bytes as usize] } else { Vec::new() };
        Probe {
            plan,
            prog,
            wg,
            counts: vec![0; prog.insts.len()],
            counters: Counters::default(),
            lines: LineSet::default(),
            waves,
            shadow,
            epoch: 0,
            tracing: false,
            last_lds_cycles: 0,
            cur_lines: Vec::new(),
        }
    }

    /// A workgroup barrier released: a new race epoch starts.
    pub fn barrier(&mut self) {
        self.epoch += 1;
    }

    #[allow(clippy::too_many_arguments)]
    fn finding(&self, check: &'static str, idx: usize, inst: &Inst, wave: u32, lane: Option<u32>, addr: Option<u64>, detail: String) -> LaunchError {
        LaunchError::Check {
            check,
            kernel: self.prog.kernel.name.clone(),
            pc: self.prog.pcs[idx],
            text: format_inst(inst),
            workgroup: self.wg,
            wave,
            lane,
            addr,
            detail,
        }
    }

    fn describe(&self, idx: u32) -> String {
        let i = idx as usize;
        let text = self.prog.insts.get(i).and_then(|r| r.as_ref().ok()).map_or_else(|| "?".to_string(), format_inst);
        format!("pc {:#x} (`{text}`)", self.prog.pcs.get(i).copied().unwrap_or(0))
    }

    /// Observes wave `w` about to execute instruction `idx`.
    #[inline]
    pub fn before(&mut self, w: &Wave, inst: &Inst, idx: usize) -> Result<(), LaunchError> {
        self.counts[idx] += 1;
        let info = &self.plan.info[idx];
        if self.tracing {
            self.last_lds_cycles = 0;
            self.cur_lines.clear();
        }
        if let Some(shape) = info.ds {
            let exec = u64::from(w.s[126]) | u64::from(w.s[127]) << 32;
            let a = inst.src[0];
            if exec != 0 && (VGPR0..AGPR0).contains(&a) && usize::from(a - VGPR0) < w.v.len() {
                let addr = &w.v[usize::from(a - VGPR0)];
                let (c, k) = lds_cost(&shape, addr, exec, self.plan.gfx950);
                self.last_lds_cycles = c.min(u64::from(u32::MAX)) as u32;
                self.counters.lds_cycles += c;
                self.counters.lds_conflict_cycles += k;
                if !self.shadow.is_empty() {
                    self.lds_access(w.id, inst, idx, &shape, addr, exec)?;
                }
            }
        }
        if info.vmem_bytes != 0 {
            let store = info.kind == Some(Kind::VmemStore);
            self.global_lines(w, inst, u64::from(info.vmem_bytes), store);
            let dma = (inst.enc == Enc::Mubuf && inst.has_flag(flag::LDS)) || (inst.enc == Enc::Global && inst.op.name().starts_with("global_load_lds_"));
            if dma && !self.shadow.is_empty() {
                self.lds_dma(w, inst, idx, u32::from(info.vmem_bytes))?;
            }
        }
        if !self.waves.is_empty() {
            self.wave_checks(w.id, inst, idx)?;
        }
        Ok(())
    }

    /// Records the global memory lines a FLAT/GLOBAL/MUBUF instruction's active lanes touch
    /// (addresses as the executor forms them; buffer lanes failing the range check and FLAT
    /// addresses in the LDS / private apertures are skipped), and counts its line requests
    /// (`store`: into [`Counters::global_store_requests`], else the load requests).
    fn global_lines(&mut self, w: &Wave, inst: &Inst, n: u64, store: bool) {
        let exec = u64::from(w.s[126]) | u64::from(w.s[127]) << 32;
        let v = |code: u16, l: usize| -> u64 {
            let i = usize::from(code.wrapping_sub(VGPR0));
            if (VGPR0..AGPR0).contains(&code) && i < w.v.len() { u64::from(w.v[i][l]) } else { 0 }
        };
        let sval = |code: u16| -> u64 {
            match code {
                0..=105 => u64::from(w.s[usize::from(code)]),
                128..=192 => u64::from(code - 128),
                _ => 0,
            }
        };
        let mut last = u64::MAX;
        let mut requests = 0;
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            let (addr, len) = match inst.enc {
                Enc::Global if inst.src[2] != 0x7f => ((sval(inst.src[2]) | sval(inst.src[2] + 1) << 32).wrapping_add(v(inst.src[0], l)), n),
                Enc::Global | Enc::Flat => (v(inst.src[0], l) | v(inst.src[0] + 1, l) << 32, n),
                _ => {
                    // The executor's rule (exec/buffer.rs); a swizzled V# fails the instruction
                    // in the executor, so nothing is recorded here.
                    let r = inst.src[2];
                    let rsrc = Rsrc::new([sval(r) as u32, sval(r + 1) as u32, sval(r + 2) as u32, sval(r + 3) as u32]);
                    if rsrc.check().is_err() {
                        return;
                    }
                    let idxen = inst.has_flag(flag::IDXEN);
                    let voff = if idxen { v(inst.src[0] + 1, l) } else { v(inst.src[0], l) };
                    let a = rsrc.lane(
                        idxen,
                        inst.has_flag(flag::OFFEN),
                        v(inst.src[0], l) as u32,
                        voff as u32,
                        inst.imm as u64,
                        sval(inst.sdst) as u32,
                        l,
                        n,
                        n >= 4,
                    );
                    // Only the in-range bytes are accessed.
                    if a.in_range == 0 {
                        continue;
                    }
                    (a.addr, a.in_range)
                }
            };
            let addr = if inst.enc == Enc::Mubuf { addr } else { addr.wrapping_add_signed(i64::from(inst.imm)) };
            if inst.enc == Enc::Flat && (addr >> 48) != 0 {
                continue;
            }
            for line in addr / LINE_BYTES..=(addr + len - 1) / LINE_BYTES {
                if line != last {
                    self.lines.insert(line);
                    if self.tracing {
                        self.cur_lines.push(line);
                    }
                    requests += 1;
                    last = line;
                }
            }
        }
        if store {
            self.counters.global_store_requests += requests;
        } else {
            self.counters.global_load_requests += requests;
        }
    }

    /// A load to LDS (MUBUF `lds`, GLOBAL `global_load_lds_*`) writes `bytes` (4; 12 or 16 on
    /// gfx950) per active lane at `M0 + inst_offset + bytes·lane` (CDNA3 ISA "LDS DMA"); the
    /// racecheck and uninit-lds shadow records them as LDS writes of this wave, in the current
    /// barrier epoch (the write lands before the `s_waitcnt vmcnt` that covers it, and other
    /// waves may only read it after a barrier).
    fn lds_dma(&mut self, w: &Wave, inst: &Inst, idx: usize, bytes: u32) -> Result<(), LaunchError> {
        let exec = u64::from(w.s[126]) | u64::from(w.s[127]) << 32;
        if exec == 0 || bytes == 0 {
            return Ok(());
        }
        let base = w.s[crate::decode::sreg::M0 as usize].wrapping_add(inst.imm as u32);
        let addr: [u32; 64] = std::array::from_fn(|l| base.wrapping_add(bytes * l as u32));
        let shape = DsShape { bytes, offsets: [0, 0], count: 1, reads: false, writes: true };
        self.lds_access(w.id, inst, idx, &shape, &addr, exec)
    }

    /// Appends the instruction [`Probe::before`] just observed to a wave's trace: its index and,
    /// for DS its bank-model cycles, for vector memory the global lines it touches.
    pub fn record(&mut self, t: &mut super::trace::WaveTrace, idx: usize) {
        let info = &self.plan.info[idx];
        let aux = if info.ds.is_some() {
            self.last_lds_cycles
        } else if info.mem == Mem::Vm {
            t.lines.extend_from_slice(&self.cur_lines);
            self.cur_lines.len() as u32
        } else {
            0
        };
        t.recs.push(super::trace::TraceRec { idx: idx as u32, aux });
    }

    /// Adds the global / scalar memory bytes one executed instruction moved.
    #[inline]
    pub fn mem_bytes(&mut self, inst: &Inst, read: u64, written: u64) {
        if inst.enc == Enc::Smem {
            self.counters.scalar_read_bytes += read;
        } else {
            self.counters.global_read_bytes += read;
            self.counters.global_write_bytes += written;
        }
    }

    fn lds_access(&mut self, wave: u32, inst: &Inst, idx: usize, shape: &DsShape, addr: &[u32; 64], exec: u64) -> Result<(), LaunchError> {
        let epoch = self.epoch + 1;
        let wv = wave as u16;
        let (race, uninit) = (self.plan.race, self.plan.uninit);
        let (reads, writes) = (shape.reads, shape.writes);
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros();
            m &= m - 1;
            for a in 0..usize::from(shape.count) {
                let lo = addr[l as usize].wrapping_add(shape.offsets[a]) as usize;
                // Bytes outside the LDS are memcheck's to report.
                let hi = (lo + shape.bytes as usize).min(self.shadow.len());
                if lo >= hi {
                    continue;
                }
                let mut bad: Option<(usize, Shadow)> = None;
                for (k, sh) in self.shadow[lo..hi].iter_mut().enumerate() {
                    let conflict = (reads && ((uninit && !writes && sh.w_epoch == 0) || (race && sh.w_epoch == epoch && sh.w_wave != wv)))
                        || (writes && race && ((sh.w_epoch == epoch && sh.w_wave != wv) || (sh.r_epoch == epoch && (sh.r_wave != wv || sh.r_multi))));
                    if conflict {
                        bad = Some((lo + k, *sh));
                        break;
                    }
                    if reads {
                        if sh.r_epoch != epoch {
                            sh.r_multi = false;
                            sh.r_wave = wv;
                        } else if sh.r_wave != wv {
                            sh.r_multi = true;
                        }
                        sh.r_epoch = epoch;
                        sh.r_idx = idx as u32;
                    }
                    if writes {
                        sh.w_epoch = epoch;
                        sh.w_wave = wv;
                        sh.w_idx = idx as u32;
                    }
                }
                if let Some((b, s)) = bad {
                    return Err(self.lds_finding(wave, inst, idx, shape, l, b as u64, s, epoch));
                }
            }
        }
        Ok(())
    }

    /// The finding for byte `b` whose shadow `s` conflicts with this access (cold path).
    #[allow(clippy::too_many_arguments)]
    #[cold]
    fn lds_finding(&self, wave: u32, inst: &Inst, idx: usize, shape: &DsShape, l: u32, b: u64, s: Shadow, epoch: u32) -> LaunchError {
        let wv = wave as u16;
        let (check, detail) = if shape.reads && self.plan.uninit && !shape.writes && s.w_epoch == 0 {
            ("uninit-lds", format!("reads LDS byte {b:#x}, which no wave of this workgroup has written"))
        } else if shape.reads && s.w_epoch == epoch && s.w_wave != wv {
            (
                "racecheck",
                format!(
                    "reads LDS byte {b:#x} that wave {} wrote at {} with no s_barrier in between (read-after-write race)",
                    s.w_wave,
                    self.describe(s.w_idx)
                ),
            )
        } else if s.w_epoch == epoch && s.w_wave != wv {
            (
                "racecheck",
                format!(
                    "writes LDS byte {b:#x} that wave {} also wrote at {} with no s_barrier in between (write-after-write race)",
                    s.w_wave,
                    self.describe(s.w_idx)
                ),
            )
        } else {
            let who = if s.r_wave != wv { format!("wave {}", s.r_wave) } else { "another wave".to_string() };
            ("racecheck", format!("writes LDS byte {b:#x} that {who} read at {} with no s_barrier in between (write-after-read race)", self.describe(s.r_idx)))
        };
        self.finding(check, idx, inst, wave, Some(l), Some(b), detail)
    }

    fn wave_checks(&mut self, wave: u32, inst: &Inst, idx: usize) -> Result<(), LaunchError> {
        let plan = self.plan;
        let info = &plan.info[idx];
        let Some(wp) = self.waves.get_mut(wave as usize) else { return Ok(()) };
        let kind = info.kind.unwrap_or(Kind::NopOther);
        let now = wp.t;
        // ---- mfma-hazard ----
        if plan.hazard {
            while wp.mfmas.front().is_some_and(|m| m.t + 1 + MAX_WAIT_STATES <= now) {
                wp.mfmas.pop_front();
            }
            while wp.valu_writes.front().is_some_and(|v| v.0 + 3 <= now) {
                wp.valu_writes.pop_front();
            }
            let consumer = matches!(kind, Kind::Valu | Kind::DsRead | Kind::DsWrite | Kind::VmemLoad | Kind::VmemStore);
            let mut problem: Option<(String, u32, u64, u64)> = None;
            if consumer && !wp.mfmas.is_empty() {
                'reads: for &r in &info.reads {
                    for m in wp.mfmas.iter().rev() {
                        if overlaps(r, m.dst) {
                            // gfx950: N + 4 for N > 2 (GCNHazardRecognizer
                            // `GFX940_XDL_N_PassWriteVgprVALUMemExpReadWaitStates` with
                            // `hasGFX950Insts()`; the pinned llc emits s_nop 7, not 6, between
                            // a 4-pass MFMA and a VALU read of its result for gfx950).
                            let need = u64::from(m.passes) + 3 + u64::from(plan.gfx950 && m.passes > 2);
                            let since = now - m.t - 1;
                            if since < need {
                                problem =
                                    Some((format!("reads {} which the {}-pass MFMA writes (read-after-write)", reg_name(r), m.passes), m.idx, since, need));
                            }
                            break 'reads;
                        }
                    }
                }
                if problem.is_none() {
                    'writes: for &r in &info.writes {
                        for m in wp.mfmas.iter().rev() {
                            let since = now - m.t - 1;
                            if overlaps(r, m.dst) {
                                let need = u64::from(m.passes) + 3;
                                if since < need {
                                    problem = Some((
                                        format!("overwrites {} which the {}-pass MFMA writes (write-after-write)", reg_name(r), m.passes),
                                        m.idx,
                                        since,
                                        need,
                                    ));
                                    break 'writes;
                                }
                            }
                            if let Some(c) = m.src_c
                                && overlaps(r, c)
                            {
                                let need = match m.passes {
                                    0..=2 => 1,
                                    3..=4 => 3,
                                    5..=8 => 7,
                                    _ => 15,
                                };
                                if since < need {
                                    problem = Some((
                                        format!("overwrites {} which the {}-pass MFMA reads as SrcC (write-after-read)", reg_name(r), m.passes),
                                        m.idx,
                                        since,
                                        need,
                                    ));
                                    break 'writes;
                                }
                            }
                        }
                    }
                }
            }
            if kind == Kind::Mfma {
                'src: for (s, src) in info.mfma_src.iter().enumerate() {
                    let Some(r) = *src else { continue };
                    for m in wp.mfmas.iter().rev() {
                        if overlaps(r, m.dst) {
                            let since = now - m.t - 1;
                            let need = if s < 2 {
                                u64::from(m.passes) + 3
                            } else if r == m.dst {
                                if m.passes <= 2 { 2 } else { 0 }
                            } else {
                                u64::from(m.passes) + 1
                            };
                            if since < need {
                                let what = if s < 2 { "SrcA/B" } else { "SrcC (partially overlapping)" };
                                problem = Some((
                                    format!("MFMA reads {} as {what}, which the earlier {}-pass MFMA writes", reg_name(r), m.passes),
                                    m.idx,
                                    since,
                                    need,
                                ));
                                break 'src;
                            }
                            break;
                        }
                    }
                    for &(t, v, vidx) in wp.valu_writes.iter().rev() {
                        if overlaps(r, v) && now - t - 1 < 2 {
                            problem = Some((format!("MFMA reads {} which a VALU instruction wrote", reg_name(r)), vidx, now - t - 1, 2));
                            break 'src;
                        }
                    }
                }
            }
            if let Some((what, other, since, need)) = problem {
                return Err(self.finding(
                    "mfma-hazard",
                    idx,
                    inst,
                    wave,
                    None,
                    None,
                    format!("{what} at {} after {since} wait state(s); gfx942 requires {need} (LLVM GCNHazardRecognizer, gfx940 rules)", self.describe(other)),
                ));
            }
            let wp = &mut self.waves[wave as usize];
            if kind == Kind::Mfma {
                if let Some(&dst) = info.writes.first() {
                    wp.mfmas.push_back(MfmaRec { t: now, passes: info.passes, idx: idx as u32, dst, src_c: info.mfma_src[2] });
                }
            } else if kind == Kind::Valu {
                for &r in &info.writes {
                    wp.valu_writes.push_back((now, r, idx as u32));
                }
            }
        }
        // ---- late-arrival ----
        if plan.late {
            let wp = &mut self.waves[wave as usize];
            let mut problem: Option<(String, u32, &'static str)> = None;
            let hit = |wp: &WaveProbe, r: Range| (r.0..r.0 + u16::from(r.1)).any(|c| wp.pending.get(usize::from(c)).is_some_and(|&n| n != 0));
            let owner = |wp: &WaveProbe, r: Range| -> Option<(u32, &'static str, bool)> {
                let f = |q: &VecDeque<Pending>| q.iter().rev().find(|p| p.dst.is_some_and(|d| overlaps(d, r))).map(|p| (p.idx, p.smem));
                f(&wp.vm).map(|(i, _)| (i, "vmcnt", false)).or_else(|| f(&wp.lgkm).map(|(i, s)| (i, "lgkmcnt", s)))
            };
            for &r in &info.reads {
                if hit(wp, r)
                    && let Some((i, counter, _)) = owner(wp, r)
                {
                    problem = Some((format!("reads {} before the load that writes it has been waited for", reg_name(r)), i, counter));
                    break;
                }
            }
            if problem.is_none() {
                for &r in &info.writes {
                    if hit(wp, r)
                        && let Some((i, counter, smem)) = owner(wp, r)
                    {
                        // A later load on the same in-order counter lands after it: fine.
                        let same_order = (info.mem == Mem::Vm && counter == "vmcnt") || (info.mem == Mem::Lds && counter == "lgkmcnt" && !smem);
                        if !same_order {
                            problem =
                                Some((format!("overwrites {} while a load into it is still in flight (the load would land later)", reg_name(r)), i, counter));
                            break;
                        }
                    }
                }
            }
            if let Some((what, other, counter)) = problem {
                return Err(self.finding(
                    "late-arrival",
                    idx,
                    inst,
                    wave,
                    None,
                    None,
                    format!("{what}: the load at {} lands only at an s_waitcnt covering it ({counter})", self.describe(other)),
                ));
            }
            let wp = &mut self.waves[wave as usize];
            if let Some((vm, lgkm)) = info.waitcnt {
                while wp.vm.len() > vm as usize {
                    if let Some(p) = wp.vm.pop_front() {
                        release(&mut wp.pending, p);
                    }
                }
                let lds = wp.lgkm.iter().filter(|p| !p.smem).count();
                if lgkm == 0 {
                    while let Some(p) = wp.lgkm.pop_front() {
                        release(&mut wp.pending, p);
                    }
                } else if lds > lgkm as usize {
                    let mut retire = lds - lgkm as usize;
                    let mut keep = VecDeque::with_capacity(wp.lgkm.len());
                    while let Some(p) = wp.lgkm.pop_front() {
                        if !p.smem && retire > 0 {
                            retire -= 1;
                            release(&mut wp.pending, p);
                        } else {
                            keep.push_back(p);
                        }
                    }
                    wp.lgkm = keep;
                }
            }
            if info.mem != Mem::None {
                // Loads: the destination is pending (stores count on the counter too).
                let dst = if matches!(kind, Kind::VmemLoad | Kind::DsRead | Kind::Smem)
                    || (kind == Kind::VmemStore && !info.writes.is_empty())
                    || (kind == Kind::DsWrite && !info.writes.is_empty())
                {
                    info.writes.first().copied()
                } else {
                    None
                };
                let p = Pending { idx: idx as u32, dst, smem: info.mem == Mem::Smem };
                if let Some(d) = dst {
                    for c in d.0..d.0 + u16::from(d.1) {
                        if let Some(n) = wp.pending.get_mut(usize::from(c)) {
                            *n = n.saturating_add(1);
                        }
                    }
                }
                match info.mem {
                    Mem::Vm => wp.vm.push_back(p),
                    _ => wp.lgkm.push_back(p),
                }
            }
        }
        let wp = &mut self.waves[wave as usize];
        wp.t += u64::from(info.wait_states);
        Ok(())
    }
}

fn release(pending: &mut [u8], p: Pending) {
    if let Some(d) = p.dst {
        for c in d.0..d.0 + u16::from(d.1) {
            if let Some(n) = pending.get_mut(usize::from(c)) {
                *n = n.saturating_sub(1);
            }
        }
    }
}
