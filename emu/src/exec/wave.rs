//! Wave state and instruction semantics (CDNA3 ISA reference guide, chapters 4–12 and the
//! per-opcode descriptions in chapter 12 "Instructions").

// Errors end the launch (cold path); keeping `LaunchError` unboxed keeps the API plain.
#![allow(clippy::result_large_err)]
// Lane loops index several parallel per-lane arrays by the lane number.
#![allow(clippy::needless_range_loop)]

use std::cell::Cell;
use std::sync::Arc;

use super::buffer::Rsrc;
use super::{Compiled, LaunchError, PRIVATE_APERTURE, SHARED_APERTURE};
use crate::decode::{AGPR0, Enc, Inst, LITERAL, Op, VGPR0, dpp, flag, sdwa, sreg};
use crate::disasm::format_inst;
use crate::memory::{Allocation, DeviceMemory};
use crate::numerics::{self, F8Kind};

/// Instruction classes counted in a [`super::LaunchReport`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Scalar ALU (SOP*).
    Salu = 0,
    /// Branches and program control (SOPP).
    Branch,
    /// Scalar memory.
    Smem,
    /// Vector ALU (VOP1/2/C/3/3P except MAI).
    Valu,
    /// Matrix (MFMA).
    Mfma,
    /// LDS (DS).
    Lds,
    /// Vector memory (FLAT/GLOBAL/SCRATCH/MUBUF).
    Vmem,
}

impl Class {
    /// Number of classes.
    pub const COUNT: usize = 7;
    fn of(inst: &Inst) -> Class {
        match inst.enc {
            Enc::Sop1 | Enc::Sop2 | Enc::Sopc | Enc::Sopk => Class::Salu,
            Enc::Sopp => Class::Branch,
            Enc::Smem => Class::Smem,
            Enc::Ds => Class::Lds,
            Enc::Flat | Enc::Global | Enc::Scratch | Enc::Mubuf => Class::Vmem,
            Enc::Vop3p if crate::decode::is_mai(inst.op) => Class::Mfma,
            _ => Class::Valu,
        }
    }
}

pub(super) struct Setup<'a> {
    /// Checking modes and per-instruction facts for the probe (`checks.rs`).
    pub plan: &'a super::checks::Plan,
    pub program: Arc<Compiled>,
    pub mem: &'a DeviceMemory,
    pub memcheck: bool,
    /// Per-wave instruction budget (watchdog).
    pub max_wave_instructions: u64,
    pub kernarg_ptr: u64,
    pub dispatch_ptr: u64,
    pub queue_ptr: u64,
    pub lds_bytes: u32,
    /// The kernarg bytes (for preloaded kernel arguments).
    pub kernarg: &'a [u8],
    pub block: [u32; 3],
    pub grid: [u32; 3],
    /// Record every wave's executed instruction stream for the timing model
    /// ([`super::trace::WaveTrace`]).
    pub trace: bool,
    /// Do not compute MFMA results (destinations keep their old values): a speed option for
    /// timing runs whose output is not used. Valid only for kernels whose control flow and
    /// addresses do not depend on MFMA results (checked per kernel by the timing tests).
    pub skip_mfma_math: bool,
}

#[derive(Default)]
pub(super) struct WgCounters {
    pub by_class: [u64; Class::COUNT],
    pub waves: u64,
    pub barriers: u64,
    /// The probe's counters (LDS bank model, memory bytes) and executions per instruction.
    pub counters: super::counters::Counters,
    pub counts: Vec<u64>,
    /// Global memory lines touched (distinct), for the footprint counter.
    pub lines: super::checks::LineSet,
    /// Per-wave instruction traces (empty unless [`Setup::trace`]).
    pub traces: Vec<super::trace::WaveTrace>,
}

/// Compare spec for v_cmp*: bits 0..3 condition, 4..7 type, bit 8 cmpx.
const T_F16: u32 = 0;
const T_F32: u32 = 1;
const T_F64: u32 = 2;
const T_I16: u32 = 3;
const T_U16: u32 = 4;
const T_I32: u32 = 5;
const T_U32: u32 = 6;
const T_I64: u32 = 7;
const T_U64: u32 = 8;
const T_CLASS: u32 = 15;

pub(super) fn precompute(inst: &Inst) -> u32 {
    let n = inst.op.name();
    let (rest, x) = if let Some(r) = n.strip_prefix("v_cmpx_") {
        (r, 1u32)
    } else if let Some(r) = n.strip_prefix("v_cmp_") {
        (r, 0)
    } else {
        return 0;
    };
    let (cond, ty) = rest.split_once('_').unwrap_or(("", ""));
    let t = match ty {
        "f16" => T_F16,
        "f32" => T_F32,
        "f64" => T_F64,
        "i16" => T_I16,
        "u16" => T_U16,
        "i32" => T_I32,
        "u32" => T_U32,
        "i64" => T_I64,
        "u64" => T_U64,
        _ => return 0,
    };
    let (c, t) = match cond {
        "f" => (0, t),
        "lt" => (1, t),
        "eq" => (2, t),
        "le" => (3, t),
        "gt" => (4, t),
        "lg" | "ne" => (5, t),
        "ge" => (6, t),
        "o" => (7, t),
        "u" => (8, t),
        "nge" => (9, t),
        "nlg" => (10, t),
        "ngt" => (11, t),
        "nle" => (12, t),
        "neq" => (13, t),
        "nlt" => (14, t),
        "tru" | "t" => (15, t),
        "class" => (
            0,
            T_CLASS
                | if t == T_F64 {
                    0x10
                } else if t == T_F16 {
                    0x20
                } else {
                    0
                },
        ),
        _ => return 0,
    };
    0x8000_0000 | c | t << 4 | x << 12
}

type Lanes = [u32; 64];

/// One wave's architectural state.
pub(super) struct Wave {
    pub s: [u32; 128],
    pub v: Vec<Lanes>,
    pub scc: bool,
    pub pc: usize,
    pub done: bool,
    pub id: u32,
    /// Per-lane private memory (scratch), `private_size` bytes per lane.
    pub private: Vec<u8>,
    pub private_size: u32,
    pub cached: Option<Arc<Allocation>>,
    /// VGPR index mode (s_set_gpr_idx_on): M0[7:0] offsets the VGPR operands M0[15:12] selects.
    pub gpr_idx_on: bool,
    /// VSKIP mode (`s_setvskip`): while set, the wave issues no vector instruction (VOP*, MFMA,
    /// DS, MUBUF, FLAT/GLOBAL/SCRATCH); see [`vskipped`].
    pub vskip: bool,
    /// Instructions this wave has executed (for the watchdog).
    pub executed: u64,
    /// HW_REG_MODE (round and denorm modes, DX10_CLAMP, IEEE; s_getreg / s_setreg).
    pub mode: u32,
    /// The executed instruction stream, when the launch is traced.
    pub trace: super::trace::WaveTrace,
}

/// The s_waitcnt counter a memory result is tracked by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Counter {
    /// Vector memory (vmcnt).
    Vm,
    /// LDS, scalar memory and messages (lgkmcnt).
    Lgkm,
}

enum Flow {
    Next,
    Jump(u32),
    Barrier,
    End,
}

pub(super) fn run_workgroup(st: &Setup<'_>, wg: [u32; 3]) -> Result<WgCounters, LaunchError> {
    let prog = &*st.program;
    let d = &prog.kernel.descriptor;
    let threads = st.block[0] * st.block[1] * st.block[2];
    let n_waves = threads.div_ceil(64);
    let n_vgpr = (d.vgprs as usize).clamp(8, 512);
    let mut lds = vec![0u8; st.lds_bytes as usize];
    let mut waves: Vec<Wave> = Vec::with_capacity(n_waves as usize);
    for w in 0..n_waves {
        let mut wave = Wave {
            s: [0; 128],
            v: vec![[0u32; 64]; n_vgpr],
            scc: false,
            pc: 0,
            done: false,
            id: w,
            private: vec![0u8; (d.private_segment_fixed_size as usize) * 64],
            private_size: d.private_segment_fixed_size,
            cached: None,
            gpr_idx_on: false,
            vskip: false,
            mode: prog.initial_mode,
            executed: 0,
            trace: super::trace::WaveTrace::default(),
        };
        let first = w * 64;
        let active = (threads - first).min(64);
        let exec: u64 = if active == 64 { u64::MAX } else { (1u64 << active) - 1 };
        wave.s[126] = exec as u32;
        wave.s[127] = (exec >> 32) as u32;
        // User SGPRs in AMDGPUUsage order.
        let mut i = 0usize;
        let u = d.user_sgprs;
        let put64 = |s: &mut [u32; 128], i: &mut usize, v: u64| {
            s[*i] = v as u32;
            s[*i + 1] = (v >> 32) as u32;
            *i += 2;
        };
        if u.private_segment_buffer {
            i += 4;
        }
        if u.dispatch_ptr {
            put64(&mut wave.s, &mut i, st.dispatch_ptr);
        }
        if u.queue_ptr {
            put64(&mut wave.s, &mut i, st.queue_ptr);
        }
        if u.kernarg_segment_ptr {
            put64(&mut wave.s, &mut i, st.kernarg_ptr);
        }
        if u.dispatch_id {
            put64(&mut wave.s, &mut i, 0);
        }
        if u.flat_scratch_init {
            put64(&mut wave.s, &mut i, 0);
        }
        if u.private_segment_size {
            wave.s[i] = d.private_segment_fixed_size;
            i += 1;
        }
        // Preloaded kernel arguments (gfx940+): `count` dwords from dword `offset` of the
        // kernarg segment follow the enabled user SGPRs (AMDGPUUsage "Preloaded Kernel
        // Arguments").
        let count = usize::from(d.kernarg_preload & 0x7f);
        let first_dword = usize::from(d.kernarg_preload >> 7);
        for q in 0..count {
            let o = (first_dword + q) * 4;
            if let Some(bytes) = st.kernarg.get(o..o + 4) {
                wave.s[(i + q) & 127] = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            }
        }
        let mut i = d.user_sgpr_count as usize;
        for k in 0..3 {
            if d.workgroup_id[k] {
                wave.s[i] = wg[k];
                i += 1;
            }
        }
        if d.workgroup_info {
            wave.s[i] = 0;
            i += 1;
        }
        if d.private_segment {
            wave.s[i] = 0;
        }
        for l in 0..active {
            let t = first + l;
            let x = t % st.block[0];
            let y = (t / st.block[0]) % st.block[1];
            let z = t / (st.block[0] * st.block[1]);
            wave.v[0][l as usize] = if d.workitem_id_vgprs == 0 { x } else { x | y << 10 | z << 20 };
        }
        waves.push(wave);
    }
    if prog.initial_mode & 0xf != 0 {
        return Err(LaunchError::Fault {
            kernel: prog.kernel.name.clone(),
            pc: prog.kernel.entry,
            msg: format!("FLOAT_ROUND_MODE {:#x}: rounding modes other than round-to-nearest-even are not modelled", prog.initial_mode & 0xf),
        });
    }
    let mut ctr = WgCounters { waves: u64::from(n_waves), ..Default::default() };
    let mut probe = super::checks::Probe::new(st.plan, prog, wg, n_waves, st.lds_bytes);
    probe.tracing = st.trace;
    let _ = st.grid;
    // Waves issue round-robin, ISSUE_QUANTUM instructions each, until every wave has reached
    // the barrier or ended; then the barrier releases them all together. On hardware the waves
    // of a workgroup run concurrently on the CU's SIMDs and leave a barrier together, so an
    // instruction a few slots after a barrier in one wave precedes one many slots later in
    // another. Running each wave to its barrier in turn would instead let wave 0 finish a whole
    // barrier interval before wave 1 starts it, an order no hardware schedule produces. Kernels
    // free of LDS races between barriers (racecheck) give the same result under any order; a
    // kernel that relies on this issue order (AMD's I8gemm 112x256 epilogue overwrites an LDS
    // exchange buffer some 20 instructions after the barrier that publishes it, while the other
    // waves read it right after that barrier) gets the hardware's result.
    let mut at_barrier = vec![false; waves.len()];
    loop {
        loop {
            let mut issued = false;
            for (w, parked) in waves.iter_mut().zip(at_barrier.iter_mut()) {
                if w.done || *parked {
                    continue;
                }
                issued = true;
                match run_wave(st, w, &mut lds, wg, &mut ctr, &mut probe, ISSUE_QUANTUM)? {
                    Flow::End => w.done = true,
                    Flow::Barrier => *parked = true,
                    Flow::Next | Flow::Jump(_) => {}
                }
            }
            if !issued {
                break;
            }
        }
        if waves.iter().all(|w| w.done) {
            break;
        }
        at_barrier.iter_mut().for_each(|b| *b = false);
        ctr.barriers += 1;
        probe.barrier();
    }
    ctr.counters = probe.counters;
    ctr.counts = probe.counts;
    ctr.lines = probe.lines;
    if st.trace {
        ctr.traces = waves.into_iter().map(|w| w.trace).collect();
    }
    Ok(ctr)
}

fn run_wave(
    st: &Setup<'_>,
    w: &mut Wave,
    lds: &mut [u8],
    wg: [u32; 3],
    ctr: &mut WgCounters,
    probe: &mut super::checks::Probe<'_>,
    quantum: u64,
) -> Result<Flow, LaunchError> {
    let prog = &*st.program;
    for _ in 0..quantum {
        let idx = w.pc;
        let Some(r) = prog.insts.get(idx) else {
            return Err(LaunchError::Fault {
                kernel: prog.kernel.name.clone(),
                pc: prog.pcs.last().copied().unwrap_or(prog.kernel.entry),
                msg: "execution ran past the end of the kernel's code".into(),
            });
        };
        let inst = match r {
            Ok(i) => i,
            Err(e) => return Err(LaunchError::Decode(e.clone())),
        };
        let skipped = vskipped(w, inst);
        if !skipped {
            ctr.by_class[Class::of(inst) as usize] += 1;
        }
        w.executed += 1;
        if w.executed > st.max_wave_instructions {
            return Err(LaunchError::Watchdog {
                kernel: prog.kernel.name.clone(),
                pc: prog.pcs.get(idx).copied().unwrap_or_default(),
                workgroup: wg,
                wave: w.id,
                limit: st.max_wave_instructions,
            });
        }
        if skipped {
            // Not issued: no operand is read, no register, memory or waitcnt counter changes,
            // so neither the checks nor the timing trace see it.
            w.pc = idx + 1;
            continue;
        }
        probe.before(w, inst, idx)?;
        if st.trace {
            probe.record(&mut w.trace, idx);
        }
        let mut cx = Cx { st, lds, wg, idx, bytes: [Cell::new(0), Cell::new(0)] };
        let flow = cx.step(w, inst)?;
        probe.mem_bytes(inst, cx.bytes[0].get(), cx.bytes[1].get());
        match flow {
            Flow::Next => w.pc = idx + 1,
            Flow::Jump(t) => {
                if t == u32::MAX {
                    return Err(cx.fault("branch target is not an instruction of this kernel".into()));
                }
                w.pc = t as usize;
            }
            Flow::Barrier => {
                w.pc = idx + 1;
                return Ok(Flow::Barrier);
            }
            Flow::End => return Ok(Flow::End),
        }
    }
    Ok(Flow::Next)
}

/// Whether VSKIP mode suppresses `inst`. CDNA3 ISA reference guide, §12.4 "SOPC Instructions",
/// S_SETVSKIP (opcode 16): "When VSKIP is enabled, no VOP*/M*BUF/MIMG/DS/FLAT instructions are
/// issued. Note that VSKIPped memory instructions do not manipulate the waitcnt counters"
/// (wording as in the CDNA3/CDNA4 guides' instruction chapter). Scalar ALU, scalar memory and
/// program control (SOPP) still execute, so `s_setvskip 0, 0` can end the mode.
#[inline]
fn vskipped(w: &Wave, inst: &Inst) -> bool {
    w.vskip && !matches!(inst.enc, Enc::Sop1 | Enc::Sop2 | Enc::Sopc | Enc::Sopk | Enc::Sopp | Enc::Smem)
}
/// Instructions a wave issues before the next wave of its workgroup gets its turn
/// ([`run_workgroup`]'s round-robin).
const ISSUE_QUANTUM: u64 = 1;

struct Cx<'a, 'b> {
    st: &'a Setup<'b>,
    lds: &'a mut [u8],
    wg: [u32; 3],
    idx: usize,
    /// Bytes this instruction read / wrote through `global_read` / `global_write` (counters).
    bytes: [Cell<u64>; 2],
}

#[inline]
fn f(x: u32) -> f32 {
    f32::from_bits(x)
}
#[inline]
fn b(x: f32) -> u32 {
    x.to_bits()
}
#[inline]
fn fd(x: u64) -> f64 {
    f64::from_bits(x)
}

fn f16_to_f32(h: u16) -> f32 {
    let s = u32::from(h >> 15) << 31;
    let e = u32::from((h >> 10) & 0x1f);
    let m = u32::from(h & 0x3ff);
    let bits = if e == 0 {
        if m == 0 {
            s
        } else {
            // subnormal: value m * 2^-24
            return f32::from_bits(s) + (if s != 0 { -1.0 } else { 1.0 }) * (m as f32) * 2f32.powi(-24);
        }
    } else if e == 31 {
        s | 0x7f80_0000 | (m << 13) | if m != 0 { 0x40_0000 } else { 0 }
    } else {
        s | ((e + 112) << 23) | (m << 13)
    };
    f32::from_bits(bits)
}

/// f32 → f16 with round to nearest even (IEEE), overflow to infinity.
fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let s = ((bits >> 16) & 0x8000) as u16;
    let e = ((bits >> 23) & 0xff) as i32;
    let m = bits & 0x7f_ffff;
    if e == 255 {
        return s | 0x7c00 | if m != 0 { 0x200 | (m >> 13) as u16 } else { 0 };
    }
    let e16 = e - 127 + 15;
    if e16 >= 31 {
        return s | 0x7c00;
    }
    if e16 <= 0 {
        if e16 < -10 {
            return s;
        }
        let mant = m | 0x80_0000;
        let shift = (14 - e16) as u32;
        let half = 1u32 << (shift - 1);
        let rem = mant & ((1 << shift) - 1);
        let mut r = mant >> shift;
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return s | r as u16;
    }
    let mut r = ((e16 as u32) << 10) | (m >> 13);
    let rem = m & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    s | r as u16
}

fn inline_f64(code: u16) -> Option<f64> {
    Some(match code {
        240 => 0.5,
        241 => -0.5,
        242 => 1.0,
        243 => -1.0,
        244 => 2.0,
        245 => -2.0,
        246 => 4.0,
        247 => -4.0,
        248 => 0.159_154_943_091_895_34,
        _ => return None,
    })
}

impl Cx<'_, '_> {
    fn kernel(&self) -> String {
        self.st.program.kernel.name.clone()
    }
    fn pc(&self) -> u64 {
        self.st.program.pcs[self.idx]
    }
    fn fault(&self, msg: String) -> LaunchError {
        LaunchError::Fault { kernel: self.kernel(), pc: self.pc(), msg }
    }
    fn unimpl(&self, inst: &Inst) -> LaunchError {
        LaunchError::Unimplemented {
            kernel: self.kernel(),
            pc: self.pc(),
            text: format_inst(inst),
            bytes: inst.words[..usize::from(inst.len / 4)].iter().map(|w| format!("{w:08X}")).collect::<Vec<_>>().join(" "),
        }
    }
    #[allow(clippy::too_many_arguments)]
    fn memerr(&self, inst: &Inst, w: &Wave, lane: u32, space: &'static str, addr: u64, len: u64, detail: String) -> LaunchError {
        LaunchError::Memory { kernel: self.kernel(), pc: self.pc(), text: format_inst(inst), workgroup: self.wg, wave: w.id, lane, space, addr, len, detail }
    }

    // ---------- operand access ----------
    #[inline]
    fn exec(w: &Wave) -> u64 {
        u64::from(w.s[126]) | u64::from(w.s[127]) << 32
    }
    #[inline]
    fn set_exec(w: &mut Wave, v: u64) {
        w.s[126] = v as u32;
        w.s[127] = (v >> 32) as u32;
    }
    #[inline]
    fn vcc(w: &Wave) -> u64 {
        u64::from(w.s[106]) | u64::from(w.s[107]) << 32
    }
    fn sread(&self, w: &Wave, inst: &Inst, code: u16) -> u32 {
        match code {
            0..=127 => w.s[code as usize],
            128..=192 => u32::from(code - 128),
            193..=208 => (-(i32::from(code) - 192)) as u32,
            235 => (SHARED_APERTURE >> 32) as u32,
            236 => ((SHARED_APERTURE >> 32) as u32) | 0xffff,
            237 => (PRIVATE_APERTURE >> 32) as u32,
            238 => ((PRIVATE_APERTURE >> 32) as u32) | 0xffff,
            240..=248 => b(inline_f64(code).unwrap_or(0.0) as f32),
            251 => u32::from(Self::vcc(w) == 0),
            252 => u32::from(Self::exec(w) == 0),
            253 => u32::from(w.scc),
            LITERAL => inst.lit,
            _ => 0,
        }
    }
    /// 64-bit scalar operand; `float64` selects f64 inline constants.
    fn sread64(&self, w: &Wave, inst: &Inst, code: u16, float64: bool) -> u64 {
        match code {
            0..=127 => u64::from(w.s[code as usize]) | u64::from(w.s[(code as usize + 1) & 127]) << 32,
            128..=208 => i64::from(self.sread(w, inst, code) as i32) as u64,
            // As a 64-bit operand an aperture register is the full base / limit address.
            235..=238 => u64::from(self.sread(w, inst, code)) << 32,
            240..=248 if float64 => inline_f64(code).unwrap_or(0.0).to_bits(),
            // A 32-bit literal for a 64-bit float operand supplies the high half.
            LITERAL if float64 => u64::from(inst.lit) << 32,
            _ => u64::from(self.sread(w, inst, code)),
        }
    }
    fn swrite(w: &mut Wave, code: u16, v: u32) {
        if (code as usize) < 128 {
            w.s[code as usize] = v;
        }
    }
    fn swrite64(w: &mut Wave, code: u16, v: u64) {
        Self::swrite(w, code, v as u32);
        Self::swrite(w, code + 1, (v >> 32) as u32);
    }
    #[inline]
    fn vidx(&self, w: &Wave, code: u16) -> Result<usize, LaunchError> {
        let i = if code >= AGPR0 { self.st.program.kernel.descriptor.accum_offset as usize + usize::from(code - AGPR0) } else { usize::from(code - VGPR0) };
        if i >= w.v.len() {
            return Err(self.fault(format!(
                "register {} (unified index {i}) is outside the {} VGPRs the kernel descriptor allocates",
                crate::disasm::operand(code, 1, 0),
                w.v.len()
            )));
        }
        Ok(i)
    }
    /// 32-bit vector operand, per lane.
    #[inline]
    fn vread(&self, w: &Wave, inst: &Inst, code: u16) -> Result<Lanes, LaunchError> {
        if code >= VGPR0 { Ok(w.v[self.vidx(w, code)?]) } else { Ok([self.sread(w, inst, code); 64]) }
    }
    /// Vector operand of a 16-bit float instruction: inline float constants are f16 values.
    fn vread16(&self, w: &Wave, inst: &Inst, code: u16) -> Result<Lanes, LaunchError> {
        match code {
            240..=248 => Ok([u32::from(f32_to_f16(inline_f64(code).unwrap_or(0.0) as f32)); 64]),
            _ => self.vread(w, inst, code),
        }
    }
    /// Source `i` of a 16-bit operation: [`Self::vread16`], with an SDWA instruction's source
    /// select applied (`src0_sel:WORD_1` reads the high half into the low one).
    fn vsrc16(&self, w: &Wave, inst: &Inst, i: usize) -> Result<Lanes, LaunchError> {
        let mut v = self.vread16(w, inst, inst.src[i])?;
        if inst.has_flag(flag::SDWA) && inst.enc != Enc::Vop3 {
            let (sel, sx) =
                if i == 0 { (sdwa::src0_sel(inst.sdwa), sdwa::src0_sext(inst.sdwa)) } else { (sdwa::src1_sel(inst.sdwa), sdwa::src1_sext(inst.sdwa)) };
            for x in v.iter_mut() {
                *x = sdwa::select(*x, sel, sx);
            }
        }
        Ok(v)
    }
    fn vread64(&self, w: &Wave, inst: &Inst, code: u16, float64: bool) -> Result<[u64; 64], LaunchError> {
        if code >= VGPR0 {
            let lo = w.v[self.vidx(w, code)?];
            let hi = w.v[self.vidx(w, code + 1)?];
            Ok(std::array::from_fn(|l| u64::from(lo[l]) | u64::from(hi[l]) << 32))
        } else {
            Ok([self.sread64(w, inst, code, float64); 64])
        }
    }
    #[inline]
    fn vwrite(&self, w: &mut Wave, code: u16, vals: &Lanes, mask: u64) -> Result<(), LaunchError> {
        if code < VGPR0 {
            return Err(self.fault(format!("vector write to non-VGPR operand {code}")));
        }
        let i = self.vidx(w, code)?;
        let r = &mut w.v[i];
        if mask == u64::MAX {
            *r = *vals;
        } else {
            let mut m = mask;
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                r[l] = vals[l];
            }
        }
        Ok(())
    }
    fn vwrite64(&self, w: &mut Wave, code: u16, vals: &[u64; 64], mask: u64) -> Result<(), LaunchError> {
        let lo: Lanes = std::array::from_fn(|l| vals[l] as u32);
        let hi: Lanes = std::array::from_fn(|l| (vals[l] >> 32) as u32);
        self.vwrite(w, code, &lo, mask)?;
        self.vwrite(w, code + 1, &hi, mask)
    }

    /// Source `i`; for a DPP instruction's src0, the lane-permuted value (invalid or inactive
    /// source lanes read 0; the write mask of [`Self::dpp_exec`] drops them unless bound_ctrl).
    fn vsrc_dpp(&self, w: &Wave, inst: &Inst, i: usize) -> Result<Lanes, LaunchError> {
        let v = self.vread(w, inst, inst.src[i])?;
        if i != 0 || !inst.has_flag(flag::DPP) {
            return Ok(v);
        }
        let ctrl = dpp::ctrl(inst.sdwa);
        let exec = Self::exec(w);
        Ok(std::array::from_fn(|l| match dpp::source_lane(ctrl, l) {
            Some(s) if exec >> s & 1 != 0 => v[s],
            _ => 0,
        }))
    }
    /// EXEC restricted to the lanes a DPP instruction writes: row_mask and bank_mask select
    /// lanes; a lane whose source is out of range or inactive is written only with bound_ctrl
    /// (CDNA3 ISA, "DPP" format description).
    fn dpp_exec(inst: &Inst, exec: u64) -> u64 {
        let d = inst.sdwa;
        let (ctrl, rows, banks, bound) = (dpp::ctrl(d), dpp::row_mask(d), dpp::bank_mask(d), dpp::bound_ctrl(d));
        let mut m = 0u64;
        for l in 0..64 {
            let valid = dpp::source_lane(ctrl, l).is_some_and(|s| exec >> s & 1 != 0);
            if rows >> (l / 16) & 1 != 0 && banks >> ((l >> 2) & 3) & 1 != 0 && (valid || bound) {
                m |= 1 << l;
            }
        }
        exec & m
    }

    /// Delivers a load result to its destination VGPR. Every memory load lands through here:
    /// results currently arrive immediately (s_waitcnt is then a no-op); a late-arrival mode can
    /// queue `(counter, dst, values, mask)` here and apply them at the s_waitcnt that covers
    /// them.
    fn land(&self, w: &mut Wave, _counter: Counter, dst: u16, vals: &Lanes, mask: u64) -> Result<(), LaunchError> {
        self.vwrite(w, dst, vals, mask)
    }

    /// Float source with VOP3/SDWA abs/neg modifiers applied to f32 bits.
    fn fsrc(&self, w: &Wave, inst: &Inst, i: usize) -> Result<Lanes, LaunchError> {
        let mut v = self.vsrc_dpp(w, inst, i)?;
        if inst.has_flag(flag::SDWA) && inst.enc != Enc::Vop3 {
            let (sel, sx) =
                if i == 0 { (sdwa::src0_sel(inst.sdwa), sdwa::src0_sext(inst.sdwa)) } else { (sdwa::src1_sel(inst.sdwa), sdwa::src1_sext(inst.sdwa)) };
            for x in v.iter_mut() {
                *x = sdwa::select(*x, sel, sx);
            }
        }
        // FLOAT_DENORM_MODE_32 flush-source modes: denormal inputs read as ±0 (not for moves).
        // FLOAT_DENORM_MODE_32 (MODE bits 5:4) 0 and 2 flush denormal inputs.
        let d32 = (w.mode >> 4) & 3;
        if (d32 == 0 || d32 == 2) && inst.op != Op::v_cndmask_b32 {
            for x in v.iter_mut() {
                if *x & 0x7f80_0000 == 0 {
                    *x &= 0x8000_0000;
                }
            }
        }
        // VOP3 modifier bits count only on sources that accept them (as LLVM decodes them);
        // SDWA/DPP modifiers come from their own dword.
        let accepts = |bit: u8| inst.enc != Enc::Vop3 || inst.info.mods >> bit & 1 != 0;
        let abs = inst.abs >> i & 1 != 0 && inst.enc != Enc::Vop3p && accepts(i as u8);
        let neg = inst.neg >> i & 1 != 0 && inst.enc != Enc::Vop3p && accepts(i as u8 + 3);
        if abs || neg {
            for x in v.iter_mut() {
                if abs {
                    *x &= 0x7fff_ffff;
                }
                if neg {
                    *x ^= 0x8000_0000;
                }
            }
        }
        Ok(v)
    }
    /// Integer source (SDWA selects applied, no float modifiers).
    fn isrc(&self, w: &Wave, inst: &Inst, i: usize) -> Result<Lanes, LaunchError> {
        let mut v = self.vsrc_dpp(w, inst, i)?;
        if inst.has_flag(flag::SDWA) {
            let (sel, sx) =
                if i == 0 { (sdwa::src0_sel(inst.sdwa), sdwa::src0_sext(inst.sdwa)) } else { (sdwa::src1_sel(inst.sdwa), sdwa::src1_sext(inst.sdwa)) };
            for x in v.iter_mut() {
                *x = sdwa::select(*x, sel, sx);
            }
        }
        Ok(v)
    }
    fn f64src(&self, w: &Wave, inst: &Inst, i: usize) -> Result<[u64; 64], LaunchError> {
        let mut v = self.vread64(w, inst, inst.src[i], true)?;
        let abs = inst.abs >> i & 1 != 0;
        let neg = inst.neg >> i & 1 != 0;
        if inst.enc == Enc::Vop3 && (abs || neg) {
            for x in v.iter_mut() {
                if abs {
                    *x &= !(1u64 << 63);
                }
                if neg {
                    *x ^= 1u64 << 63;
                }
            }
        }
        Ok(v)
    }
    /// Applies clamp / omod to f32 results and writes them (SDWA dst_sel handled).
    fn fdst(&self, w: &mut Wave, inst: &Inst, mut r: Lanes, mask: u64) -> Result<(), LaunchError> {
        // FLOAT_DENORM_MODE_32 0 and 1 flush denormal results.
        let d32 = (w.mode >> 4) & 3;
        if d32 == 0 || d32 == 1 {
            for x in r.iter_mut() {
                if *x & 0x7f80_0000 == 0 {
                    *x &= 0x8000_0000;
                }
            }
        }
        if inst.omod != 0 || inst.has_flag(flag::CLAMP) {
            for x in r.iter_mut() {
                let mut v = f(*x);
                v = match inst.omod {
                    1 => v * 2.0,
                    2 => v * 4.0,
                    3 => v * 0.5,
                    _ => v,
                };
                if inst.has_flag(flag::CLAMP) {
                    v = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
                }
                *x = b(v);
            }
        }
        self.idst(w, inst, r, mask)
    }
    fn idst(&self, w: &mut Wave, inst: &Inst, mut r: Lanes, mask: u64) -> Result<(), LaunchError> {
        if inst.has_flag(flag::SDWA) && inst.enc != Enc::Vopc {
            let sel = sdwa::dst_sel(inst.sdwa);
            // 6 = DWORD; 7 is reserved and treated as DWORD.
            if sel < 6 {
                let old = self.vread(w, inst, inst.dst)?;
                let unused = sdwa::dst_unused(inst.sdwa);
                let (shift, bits) = if sel < 4 { (sel * 8, 8) } else { ((sel - 4) * 16, 16) };
                let fmask = ((1u64 << bits) - 1) as u32;
                for l in 0..64 {
                    let v = (r[l] & fmask) << shift;
                    r[l] = match unused {
                        2 => (old[l] & !(fmask << shift)) | v,
                        1 => {
                            let top = shift + bits;
                            let sign = (v >> (top - 1)) & 1;
                            if sign != 0 && top < 32 { v | (u32::MAX << top) } else { v }
                        }
                        _ => v,
                    };
                }
            }
        }
        if inst.dst < VGPR0 {
            return Err(self.fault("vector result to a scalar destination".into()));
        }
        self.vwrite(w, inst.dst, &r, mask)
    }
}

macro_rules! lanes {
    ($mask:expr, |$l:ident| $body:expr) => {{
        let mut m: u64 = $mask;
        while m != 0 {
            let $l = m.trailing_zeros() as usize;
            m &= m - 1;
            $body;
        }
    }};
}

/// Float compare by the v_cmp condition code; the `n*` conditions are true for unordered inputs,
/// hence the negated comparisons.
#[allow(clippy::neg_cmp_op_on_partial_ord, clippy::nonminimal_bool, clippy::double_comparisons)]
fn cmp_f(c: u32, a: f64, b: f64) -> bool {
    let un = a.is_nan() || b.is_nan();
    match c {
        0 => false,
        1 => a < b,
        2 => a == b,
        3 => a <= b,
        4 => a > b,
        5 => a < b || a > b,
        6 => a >= b,
        7 => !un,
        8 => un,
        9 => !(a >= b),
        10 => !(a < b || a > b),
        11 => !(a > b),
        12 => !(a <= b),
        13 => !(a == b),
        14 => !(a < b),
        _ => true,
    }
}
fn cmp_i(c: u32, a: i128, b: i128) -> bool {
    match c {
        0 => false,
        1 => a < b,
        2 => a == b,
        3 => a <= b,
        4 => a > b,
        5 => a != b,
        6 => a >= b,
        _ => true,
    }
}
fn class_bits(x: f64, is_snan: bool) -> u32 {
    // v_cmp_class mask bits: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denorm, 5 -0, 6 +0, 7 +denorm,
    // 8 +normal, 9 +inf.
    if x.is_nan() {
        return if is_snan { 1 } else { 2 };
    }
    let neg = x.is_sign_negative();
    let k = if x.is_infinite() {
        if neg { 2 } else { 9 }
    } else if x == 0.0 {
        if neg { 5 } else { 6 }
    } else if x.is_subnormal() {
        if neg { 4 } else { 7 }
    } else if neg {
        3
    } else {
        8
    };
    1 << k
}

fn bfe(v: u32, off: u32, width: u32, signed: bool) -> u32 {
    let off = off & 31;
    let width = width & 31;
    if width == 0 {
        return 0;
    }
    if off + width < 32 {
        let x = (v << (32 - off - width)) as i32;
        if signed { (x >> (32 - width)) as u32 } else { (x as u32) >> (32 - width) }
    } else if signed {
        ((v as i32) >> off) as u32
    } else {
        v >> off
    }
}

fn f32_min(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() {
        a
    } else if a == b {
        if a.is_sign_negative() { a } else { b }
    } else {
        a.min(b)
    }
}
fn f32_max(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() {
        a
    } else if a == b {
        if a.is_sign_negative() { b } else { a }
    } else {
        a.max(b)
    }
}
fn f32_med3(a: f32, b: f32, c: f32) -> f32 {
    if a.is_nan() || b.is_nan() || c.is_nan() {
        return f32_min(f32_min(a, b), c);
    }
    let mx = f32_max(f32_max(a, b), c);
    if mx == a {
        f32_max(b, c)
    } else if mx == b {
        f32_max(a, c)
    } else {
        f32_max(a, b)
    }
}

/// The FP8 encodings of `fp8` and `bf8`: FNUZ on gfx942, OCP on gfx950 (same opcodes).
fn f8kind(fp8: bool, ocp: bool) -> F8Kind {
    match (fp8, ocp) {
        (true, false) => F8Kind::Fp8Fnuz,
        (false, false) => F8Kind::Bf8Fnuz,
        (true, true) => F8Kind::Fp8Ocp,
        (false, true) => F8Kind::Bf8Ocp,
    }
}

fn f8kinds(op: Op, ocp: bool) -> (F8Kind, F8Kind) {
    let n = op.name();
    let tail = &n[n.len() - 7..];
    (f8kind(&tail[..3] == "fp8", ocp), f8kind(&tail[4..] == "fp8", ocp))
}

macro_rules! map1 {
    ($a:expr, |$x:ident| $e:expr) => {{
        let a = &$a;
        let mut r = [0u32; 64];
        for l in 0..64 {
            let $x = a[l];
            r[l] = $e;
        }
        r
    }};
}
macro_rules! map2 {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $e:expr) => {{
        let (a, bb) = (&$a, &$b);
        let mut r = [0u32; 64];
        for l in 0..64 {
            let $x = a[l];
            let $y = bb[l];
            r[l] = $e;
        }
        r
    }};
}
/// The 8-bit truth table of a gfx950 `v_bitop3_*` (neg = bits 2:0, abs = 5:3, omod = 7:6;
/// LLVM `VOP3Instructions.td`, VOP3_BITOP3).
fn bitop3_table(inst: &Inst) -> u8 {
    (inst.neg & 7) | (inst.abs & 7) << 3 | (inst.omod & 3) << 6
}

/// Bitwise three-input function by truth table: bit `i` of the result is bit
/// `x[i]·4 + y[i]·2 + z[i]` of `table`.
fn bitop3(table: u8, x: u32, y: u32, z: u32) -> u32 {
    (0..8).filter(|m| table >> m & 1 != 0).fold(0u32, |r, m| {
        let pick = |v: u32, bit: u32| if m >> bit & 1 != 0 { v } else { !v };
        r | (pick(x, 2) & pick(y, 1) & pick(z, 0))
    })
}

macro_rules! map3 {
    ($a:expr, $b:expr, $c:expr, |$x:ident, $y:ident, $z:ident| $e:expr) => {{
        let (a, bb, cc) = (&$a, &$b, &$c);
        let mut r = [0u32; 64];
        for l in 0..64 {
            let $x = a[l];
            let $y = bb[l];
            let $z = cc[l];
            r[l] = $e;
        }
        r
    }};
}

impl Cx<'_, '_> {
    fn step(&mut self, w: &mut Wave, inst: &Inst) -> Result<Flow, LaunchError> {
        if w.gpr_idx_on && matches!(inst.enc, Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3 | Enc::Vop3p) {
            // VGPR index mode (CDNA3 ISA "VGPR indexing"): enabled operands of VALU
            // instructions address VGPR (n + M0[7:0]).
            let m0 = w.s[sreg::M0 as usize];
            let (idx, mode) = ((m0 & 0xff) as u16, (m0 >> 12) & 0xf);
            let mut i2 = *inst;
            for k in 0..3 {
                if mode >> k & 1 != 0 && (VGPR0..AGPR0).contains(&i2.src[k]) {
                    i2.src[k] += idx;
                }
            }
            if mode & 8 != 0 && (VGPR0..AGPR0).contains(&i2.dst) {
                i2.dst += idx;
            }
            return self.dispatch(w, &i2);
        }
        self.dispatch(w, inst)
    }

    fn dispatch(&mut self, w: &mut Wave, inst: &Inst) -> Result<Flow, LaunchError> {
        match inst.enc {
            Enc::Sopp => self.sopp(w, inst),
            Enc::Sop1 | Enc::Sop2 | Enc::Sopc | Enc::Sopk => self.salu(w, inst),
            Enc::Smem => self.smem(w, inst),
            Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3 => self.valu(w, inst),
            Enc::Vop3p => self.vop3p(w, inst),
            Enc::Ds => self.ds(w, inst),
            Enc::Flat | Enc::Global | Enc::Scratch => self.flat(w, inst),
            Enc::Mubuf => self.mubuf(w, inst),
        }
    }

    fn sopp(&mut self, w: &mut Wave, inst: &Inst) -> Result<Flow, LaunchError> {
        let t = self.st.program.targets[self.idx];
        let jump_if = |c: bool| if c { Flow::Jump(t) } else { Flow::Next };
        Ok(match inst.op {
            Op::s_nop | Op::s_waitcnt | Op::s_setprio | Op::s_sleep | Op::s_icache_inv | Op::s_incperflevel | Op::s_decperflevel | Op::s_ttracedata => {
                Flow::Next
            }
            Op::s_endpgm => Flow::End,
            Op::s_set_gpr_idx_off => {
                w.gpr_idx_on = false;
                Flow::Next
            }
            Op::s_set_gpr_idx_mode => {
                let m0 = &mut w.s[sreg::M0 as usize];
                *m0 = (*m0 & !0xf000) | ((inst.imm as u32 & 0xf) << 12);
                Flow::Next
            }
            Op::s_barrier => Flow::Barrier,
            Op::s_branch => Flow::Jump(t),
            Op::s_cbranch_scc0 => jump_if(!w.scc),
            Op::s_cbranch_scc1 => jump_if(w.scc),
            Op::s_cbranch_vccz => jump_if(Self::vcc(w) == 0),
            Op::s_cbranch_vccnz => jump_if(Self::vcc(w) != 0),
            Op::s_cbranch_execz => jump_if(Self::exec(w) == 0),
            Op::s_cbranch_execnz => jump_if(Self::exec(w) != 0),
            Op::s_trap => {
                return Err(LaunchError::Trap { kernel: self.kernel(), pc: self.pc(), code: inst.imm as u16, workgroup: self.wg, wave: w.id });
            }
            _ => return Err(self.unimpl(inst)),
        })
    }

    fn salu(&mut self, w: &mut Wave, inst: &Inst) -> Result<Flow, LaunchError> {
        let s0 = self.sread(w, inst, inst.src[0]);
        let s1 = self.sread(w, inst, inst.src[1]);
        let d = inst.dst;
        let s64 = |c: &Self, w: &Wave, i: usize| c.sread64(w, inst, inst.src[i], false);
        macro_rules! w32 {
            ($v:expr) => {{
                let v: u32 = $v;
                Self::swrite(w, d, v);
            }};
        }
        macro_rules! w32s {
            ($v:expr) => {{
                let v: u32 = $v;
                w.scc = v != 0;
                Self::swrite(w, d, v);
            }};
        }
        macro_rules! w64s {
            ($v:expr) => {{
                let v: u64 = $v;
                w.scc = v != 0;
                Self::swrite64(w, d, v);
            }};
        }
        let simm = inst.imm;
        let dv = w.s[(d as usize) & 127];
        match inst.op {
            Op::s_add_u32 => {
                let r = u64::from(s0) + u64::from(s1);
                w.scc = r >> 32 != 0;
                w32!(r as u32)
            }
            Op::s_sub_u32 => {
                w.scc = s1 > s0;
                w32!(s0.wrapping_sub(s1))
            }
            Op::s_add_i32 => {
                let (r, o) = (s0 as i32).overflowing_add(s1 as i32);
                w.scc = o;
                w32!(r as u32)
            }
            Op::s_sub_i32 => {
                let (r, o) = (s0 as i32).overflowing_sub(s1 as i32);
                w.scc = o;
                w32!(r as u32)
            }
            Op::s_addc_u32 => {
                let r = u64::from(s0) + u64::from(s1) + u64::from(w.scc);
                w.scc = r >> 32 != 0;
                w32!(r as u32)
            }
            Op::s_subb_u32 => {
                let r = u64::from(s0).wrapping_sub(u64::from(s1)).wrapping_sub(u64::from(w.scc));
                w.scc = u64::from(s1) + u64::from(w.scc) > u64::from(s0);
                w32!(r as u32)
            }
            Op::s_min_i32 => {
                w.scc = (s0 as i32) < (s1 as i32);
                w32!(if w.scc { s0 } else { s1 })
            }
            Op::s_min_u32 => {
                w.scc = s0 < s1;
                w32!(if w.scc { s0 } else { s1 })
            }
            Op::s_max_i32 => {
                w.scc = (s0 as i32) > (s1 as i32);
                w32!(if w.scc { s0 } else { s1 })
            }
            Op::s_max_u32 => {
                w.scc = s0 > s1;
                w32!(if w.scc { s0 } else { s1 })
            }
            Op::s_cselect_b32 => w32!(if w.scc { s0 } else { s1 }),
            Op::s_cselect_b64 => {
                let v = if w.scc { s64(self, w, 0) } else { s64(self, w, 1) };
                Self::swrite64(w, d, v)
            }
            Op::s_and_b32 => w32s!(s0 & s1),
            Op::s_or_b32 => w32s!(s0 | s1),
            Op::s_xor_b32 => w32s!(s0 ^ s1),
            Op::s_andn2_b32 => w32s!(s0 & !s1),
            Op::s_orn2_b32 => w32s!(s0 | !s1),
            Op::s_nand_b32 => w32s!(!(s0 & s1)),
            Op::s_nor_b32 => w32s!(!(s0 | s1)),
            Op::s_xnor_b32 => w32s!(!(s0 ^ s1)),
            Op::s_and_b64 => w64s!(s64(self, w, 0) & s64(self, w, 1)),
            Op::s_or_b64 => w64s!(s64(self, w, 0) | s64(self, w, 1)),
            Op::s_xor_b64 => w64s!(s64(self, w, 0) ^ s64(self, w, 1)),
            Op::s_andn2_b64 => w64s!(s64(self, w, 0) & !s64(self, w, 1)),
            Op::s_orn2_b64 => w64s!(s64(self, w, 0) | !s64(self, w, 1)),
            Op::s_nand_b64 => w64s!(!(s64(self, w, 0) & s64(self, w, 1))),
            Op::s_nor_b64 => w64s!(!(s64(self, w, 0) | s64(self, w, 1))),
            Op::s_xnor_b64 => w64s!(!(s64(self, w, 0) ^ s64(self, w, 1))),
            Op::s_lshl_b32 => w32s!(s0 << (s1 & 31)),
            Op::s_lshr_b32 => w32s!(s0 >> (s1 & 31)),
            Op::s_ashr_i32 => w32s!(((s0 as i32) >> (s1 & 31)) as u32),
            Op::s_lshl_b64 => w64s!(s64(self, w, 0) << (s1 & 63)),
            Op::s_lshr_b64 => w64s!(s64(self, w, 0) >> (s1 & 63)),
            Op::s_ashr_i64 => w64s!(((s64(self, w, 0) as i64) >> (s1 & 63)) as u64),
            Op::s_bfm_b32 => w32!(((1u32 << (s0 & 31)).wrapping_sub(1)) << (s1 & 31)),
            Op::s_bfm_b64 => Self::swrite64(w, d, ((1u64 << (s0 & 63)).wrapping_sub(1)) << (s1 & 63)),
            Op::s_mul_i32 => w32!((s0 as i32).wrapping_mul(s1 as i32) as u32),
            Op::s_mul_hi_u32 => w32!(((u64::from(s0) * u64::from(s1)) >> 32) as u32),
            Op::s_mul_hi_i32 => w32!(((i64::from(s0 as i32) * i64::from(s1 as i32)) >> 32) as u32),
            Op::s_bfe_u32 => w32s!(bfe(s0, s1 & 31, (s1 >> 16) & 0x7f, false)),
            Op::s_bfe_i32 => w32s!(bfe(s0, s1 & 31, (s1 >> 16) & 0x7f, true)),
            Op::s_bfe_u64 | Op::s_bfe_i64 => {
                let v = s64(self, w, 0);
                let off = s1 & 63;
                let width = ((s1 >> 16) & 0x7f).min(64);
                let r = if width == 0 {
                    0
                } else {
                    let x = v >> off;
                    let x = if width >= 64 { x } else { x & ((1u64 << width) - 1) };
                    if inst.op == Op::s_bfe_i64 && width < 64 && (x >> (width - 1)) & 1 != 0 { x | (u64::MAX << width) } else { x }
                };
                w64s!(r)
            }
            Op::s_lshl1_add_u32 | Op::s_lshl2_add_u32 | Op::s_lshl3_add_u32 | Op::s_lshl4_add_u32 => {
                let n = match inst.op {
                    Op::s_lshl1_add_u32 => 1,
                    Op::s_lshl2_add_u32 => 2,
                    Op::s_lshl3_add_u32 => 3,
                    _ => 4,
                };
                let r = (u64::from(s0) << n) + u64::from(s1);
                w.scc = r >> 32 != 0;
                w32!(r as u32)
            }
            Op::s_absdiff_i32 => w32s!((s0 as i32).wrapping_sub(s1 as i32).unsigned_abs()),
            Op::s_pack_ll_b32_b16 => w32!((s0 & 0xffff) | (s1 << 16)),
            Op::s_pack_lh_b32_b16 => w32!((s0 & 0xffff) | (s1 & 0xffff_0000)),
            Op::s_pack_hh_b32_b16 => w32!((s0 >> 16) | (s1 & 0xffff_0000)),
            // SOPK
            Op::s_movk_i32 => w32!(simm as u32),
            Op::s_cmovk_i32 => {
                if w.scc {
                    w32!(simm as u32)
                }
            }
            Op::s_addk_i32 => {
                let (r, o) = (dv as i32).overflowing_add(simm);
                w.scc = o;
                w32!(r as u32)
            }
            Op::s_mulk_i32 => w32!((dv as i32).wrapping_mul(simm) as u32),
            Op::s_getreg_b32 | Op::s_setreg_b32 | Op::s_setreg_imm32_b32 => {
                let k = simm as u16 as u32;
                let (id, off, size) = (k & 0x3f, (k >> 6) & 0x1f, ((k >> 11) & 0x1f) + 1);
                let mask = if size >= 32 { u32::MAX } else { (1u32 << size) - 1 };
                if inst.op == Op::s_getreg_b32 {
                    // MODE; HW_ID (wave id in bits 3:0); XCC_ID and others read as 0 here.
                    let reg = match id {
                        1 => w.mode,
                        4 => w.id & 0xf,
                        _ => 0,
                    };
                    w32!((reg >> off) & mask)
                } else {
                    if id != 1 {
                        return Err(self.unimpl(inst));
                    }
                    let v = if inst.op == Op::s_setreg_imm32_b32 { inst.lit } else { dv };
                    w.mode = (w.mode & !(mask << off)) | ((v & mask) << off);
                    if w.mode & 0xf != 0 {
                        return Err(
                            self.fault(format!("MODE.FP_ROUND = {:#x}: rounding modes other than round-to-nearest-even are not modelled", w.mode & 0xf))
                        );
                    }
                }
            }
            Op::s_cmpk_eq_i32 => w.scc = dv as i32 == simm,
            Op::s_cmpk_lg_i32 => w.scc = dv as i32 != simm,
            Op::s_cmpk_gt_i32 => w.scc = dv as i32 > simm,
            Op::s_cmpk_ge_i32 => w.scc = dv as i32 >= simm,
            Op::s_cmpk_lt_i32 => w.scc = (dv as i32) < simm,
            Op::s_cmpk_le_i32 => w.scc = dv as i32 <= simm,
            Op::s_cmpk_eq_u32 => w.scc = dv == simm as u16 as u32,
            Op::s_cmpk_lg_u32 => w.scc = dv != simm as u16 as u32,
            Op::s_cmpk_gt_u32 => w.scc = dv > simm as u16 as u32,
            Op::s_cmpk_ge_u32 => w.scc = dv >= simm as u16 as u32,
            Op::s_cmpk_lt_u32 => w.scc = dv < simm as u16 as u32,
            Op::s_cmpk_le_u32 => w.scc = dv <= simm as u16 as u32,
            // SOP1
            Op::s_mov_b32 => w32!(s0),
            Op::s_mov_b64 => {
                let v = s64(self, w, 0);
                Self::swrite64(w, d, v)
            }
            Op::s_cmov_b32 => {
                if w.scc {
                    w32!(s0)
                }
            }
            Op::s_cmov_b64 => {
                if w.scc {
                    let v = s64(self, w, 0);
                    Self::swrite64(w, d, v)
                }
            }
            Op::s_not_b32 => w32s!(!s0),
            Op::s_not_b64 => w64s!(!s64(self, w, 0)),
            Op::s_brev_b32 => w32!(s0.reverse_bits()),
            Op::s_brev_b64 => Self::swrite64(w, d, s64(self, w, 0).reverse_bits()),
            Op::s_bcnt1_i32_b32 => w32s!(s0.count_ones()),
            Op::s_bcnt1_i32_b64 => w32s!(s64(self, w, 0).count_ones()),
            Op::s_bcnt0_i32_b32 => w32s!(s0.count_zeros()),
            Op::s_bcnt0_i32_b64 => w32s!(s64(self, w, 0).count_zeros()),
            Op::s_ff1_i32_b32 => w32!(if s0 == 0 { u32::MAX } else { s0.trailing_zeros() }),
            Op::s_ff1_i32_b64 => {
                let v = s64(self, w, 0);
                w32!(if v == 0 { u32::MAX } else { v.trailing_zeros() })
            }
            Op::s_ff0_i32_b32 => w32!(if s0 == u32::MAX { u32::MAX } else { (!s0).trailing_zeros() }),
            Op::s_flbit_i32_b32 => w32!(if s0 == 0 { u32::MAX } else { s0.leading_zeros() }),
            Op::s_flbit_i32_b64 => {
                let v = s64(self, w, 0);
                w32!(if v == 0 { u32::MAX } else { v.leading_zeros() })
            }
            Op::s_flbit_i32 => {
                let v = if (s0 as i32) < 0 { !s0 } else { s0 };
                w32!(if v == 0 { u32::MAX } else { v.leading_zeros() })
            }
            Op::s_sext_i32_i8 => w32!(s0 as u8 as i8 as i32 as u32),
            Op::s_sext_i32_i16 => w32!(s0 as u16 as i16 as i32 as u32),
            Op::s_set_gpr_idx_on => {
                let m0 = &mut w.s[sreg::M0 as usize];
                *m0 = (*m0 & !0xf0ff) | (s0 & 0xff) | ((u32::from(inst.src[1]) & 0xf) << 12);
                w.gpr_idx_on = true;
            }
            Op::s_set_gpr_idx_idx => {
                let m0 = &mut w.s[sreg::M0 as usize];
                *m0 = (*m0 & !0xff) | (s0 & 0xff);
            }
            Op::s_bitset0_b64 | Op::s_bitset1_b64 => {
                let old = u64::from(w.s[(d as usize) & 127]) | u64::from(w.s[(d as usize + 1) & 127]) << 32;
                let bit = 1u64 << (s0 & 63);
                Self::swrite64(w, d, if inst.op == Op::s_bitset1_b64 { old | bit } else { old & !bit });
            }
            Op::s_bitset0_b32 => w32!(dv & !(1 << (s0 & 31))),
            Op::s_bitset1_b32 => w32!(dv | (1 << (s0 & 31))),
            Op::s_abs_i32 => w32s!((s0 as i32).unsigned_abs()),
            Op::s_getpc_b64 => Self::swrite64(w, d, self.pc() + u64::from(inst.len)),
            Op::s_setpc_b64 | Op::s_swappc_b64 => {
                let target = s64(self, w, 0);
                if inst.op == Op::s_swappc_b64 {
                    Self::swrite64(w, d, self.pc() + u64::from(inst.len));
                }
                let idx =
                    self.st.program.pcs.binary_search(&target).map_err(|_| self.fault(format!("jump to {target:#x}, not an instruction of this kernel")))?;
                return Ok(Flow::Jump(idx as u32));
            }
            Op::s_and_saveexec_b64
            | Op::s_or_saveexec_b64
            | Op::s_xor_saveexec_b64
            | Op::s_andn2_saveexec_b64
            | Op::s_orn2_saveexec_b64
            | Op::s_nand_saveexec_b64
            | Op::s_nor_saveexec_b64
            | Op::s_xnor_saveexec_b64
            | Op::s_andn1_saveexec_b64
            | Op::s_orn1_saveexec_b64
            | Op::s_andn1_wrexec_b64
            | Op::s_andn2_wrexec_b64 => {
                let s = s64(self, w, 0);
                let e = Self::exec(w);
                let n = match inst.op {
                    Op::s_and_saveexec_b64 => s & e,
                    Op::s_or_saveexec_b64 => s | e,
                    Op::s_xor_saveexec_b64 => s ^ e,
                    Op::s_andn2_saveexec_b64 | Op::s_andn2_wrexec_b64 => s & !e,
                    Op::s_orn2_saveexec_b64 => s | !e,
                    Op::s_nand_saveexec_b64 => !(s & e),
                    Op::s_nor_saveexec_b64 => !(s | e),
                    Op::s_xnor_saveexec_b64 => !(s ^ e),
                    Op::s_andn1_saveexec_b64 | Op::s_andn1_wrexec_b64 => !s & e,
                    _ => !s | e,
                };
                let wrexec = matches!(inst.op, Op::s_andn1_wrexec_b64 | Op::s_andn2_wrexec_b64);
                Self::swrite64(w, d, if wrexec { n } else { e });
                Self::set_exec(w, n);
                w.scc = n != 0;
            }
            // SOPC
            Op::s_cmp_eq_i32 | Op::s_cmp_eq_u32 => w.scc = s0 == s1,
            Op::s_cmp_lg_i32 | Op::s_cmp_lg_u32 => w.scc = s0 != s1,
            Op::s_cmp_gt_i32 => w.scc = (s0 as i32) > (s1 as i32),
            Op::s_cmp_ge_i32 => w.scc = (s0 as i32) >= (s1 as i32),
            Op::s_cmp_lt_i32 => w.scc = (s0 as i32) < (s1 as i32),
            Op::s_cmp_le_i32 => w.scc = (s0 as i32) <= (s1 as i32),
            Op::s_cmp_gt_u32 => w.scc = s0 > s1,
            Op::s_cmp_ge_u32 => w.scc = s0 >= s1,
            Op::s_cmp_lt_u32 => w.scc = s0 < s1,
            Op::s_cmp_le_u32 => w.scc = s0 <= s1,
            Op::s_cmp_eq_u64 => w.scc = s64(self, w, 0) == s64(self, w, 1),
            Op::s_cmp_lg_u64 => w.scc = s64(self, w, 0) != s64(self, w, 1),
            Op::s_bitcmp0_b32 => w.scc = (s0 >> (s1 & 31)) & 1 == 0,
            Op::s_bitcmp1_b32 => w.scc = (s0 >> (s1 & 31)) & 1 == 1,
            Op::s_bitcmp0_b64 => w.scc = (s64(self, w, 0) >> (s1 & 63)) & 1 == 0,
            Op::s_bitcmp1_b64 => w.scc = (s64(self, w, 0) >> (s1 & 63)) & 1 == 1,
            // CDNA3 ISA §12.4, S_SETVSKIP: `VSKIP = S0.u32[S1.u32[4:0]]`; SCC is not written.
            Op::s_setvskip => w.vskip = (s0 >> (s1 & 31)) & 1 == 1,
            _ => return Err(self.unimpl(inst)),
        }
        Ok(Flow::Next)
    }

    /// The live allocation holding `[addr, addr + len)` — the wave's cached one when it fits —
    /// or `None` for an out-of-bounds access with memcheck off (loads then read 0, stores are
    /// dropped); with memcheck on that access is the launch error.
    fn resolve<'w>(&self, w: &'w mut Wave, inst: &Inst, lane: u32, space: &'static str, addr: u64, len: u64) -> Result<Option<&'w Allocation>, LaunchError> {
        if !w.cached.as_ref().is_some_and(|a| a.contains(addr, len)) {
            match self.st.mem.find(addr, len) {
                Ok(a) => w.cached = Some(a),
                Err(e) if self.st.memcheck => return Err(self.memerr(inst, w, lane, space, addr, len, e.to_string())),
                Err(_) => return Ok(None),
            }
        }
        Ok(w.cached.as_deref())
    }

    fn global_read(&self, w: &mut Wave, inst: &Inst, lane: u32, space: &'static str, addr: u64, out: &mut [u8]) -> Result<(), LaunchError> {
        let len = out.len() as u64;
        self.bytes[0].set(self.bytes[0].get() + len);
        match self.resolve(w, inst, lane, space, addr, len)? {
            Some(a) => a.read(addr, out),
            None => out.fill(0),
        }
        Ok(())
    }
    fn global_write(&self, w: &mut Wave, inst: &Inst, lane: u32, space: &'static str, addr: u64, data: &[u8]) -> Result<(), LaunchError> {
        let len = data.len() as u64;
        self.bytes[1].set(self.bytes[1].get() + len);
        if let Some(a) = self.resolve(w, inst, lane, space, addr, len)? {
            a.write(addr, data);
        }
        Ok(())
    }

    fn smem(&mut self, w: &mut Wave, inst: &Inst) -> Result<Flow, LaunchError> {
        let n = match inst.op {
            Op::s_load_dword | Op::s_buffer_load_dword => 1,
            Op::s_load_dwordx2 | Op::s_buffer_load_dwordx2 => 2,
            Op::s_load_dwordx4 | Op::s_buffer_load_dwordx4 => 4,
            Op::s_load_dwordx8 | Op::s_buffer_load_dwordx8 => 8,
            Op::s_load_dwordx16 | Op::s_buffer_load_dwordx16 => 16,
            Op::s_dcache_inv | Op::s_dcache_wb | Op::s_dcache_inv_vol | Op::s_dcache_wb_vol => return Ok(Flow::Next),
            Op::s_memtime | Op::s_memrealtime => {
                let t = self.idx as u64;
                Self::swrite64(w, inst.dst, t);
                return Ok(Flow::Next);
            }
            _ => return Err(self.unimpl(inst)),
        };
        let mut off = if inst.has_flag(flag::SMEM_IMM) { i64::from(inst.imm) } else { 0 };
        if inst.has_flag(flag::SMEM_SOE) {
            off += i64::from(self.sread(w, inst, inst.sdst));
        }
        let base = inst.src[0] as usize;
        let mut buf = [0u8; 64];
        let bytes = &mut buf[..n * 4];
        let buffer = matches!(
            inst.op,
            Op::s_buffer_load_dword | Op::s_buffer_load_dwordx2 | Op::s_buffer_load_dwordx4 | Op::s_buffer_load_dwordx8 | Op::s_buffer_load_dwordx16
        );
        if buffer {
            let vbase = (u64::from(w.s[base & 127]) | u64::from(w.s[(base + 1) & 127] & 0xffff) << 32) as i64;
            let num = u64::from(w.s[(base + 2) & 127]);
            for k in 0..n {
                let o = (off as u64 & !3) + 4 * k as u64;
                if o + 4 <= num {
                    let mut x = [0u8; 4];
                    self.global_read(w, inst, 64, "scalar buffer", (vbase as u64).wrapping_add(o), &mut x)?;
                    bytes[k * 4..k * 4 + 4].copy_from_slice(&x);
                }
            }
        } else {
            let addr = ((u64::from(w.s[base & 127]) | u64::from(w.s[(base + 1) & 127]) << 32).wrapping_add_signed(off)) & !3;
            self.global_read(w, inst, 64, "scalar", addr, bytes)?;
        }
        for k in 0..n {
            let v = u32::from_le_bytes(bytes[k * 4..k * 4 + 4].try_into().expect("4 bytes"));
            Self::swrite(w, inst.dst + k as u16, v);
        }
        Ok(Flow::Next)
    }
}

impl Cx<'_, '_> {
    fn valu(&mut self, w: &mut Wave, inst: &Inst) -> Result<Flow, LaunchError> {
        let exec = Self::exec(w);
        let exec = if inst.has_flag(flag::DPP) { Self::dpp_exec(inst, exec) } else { exec };
        let aux = self.st.program.aux[self.idx];
        if aux & 0x8000_0000 != 0 {
            return self.vcmp(w, inst, aux, exec);
        }
        let op = inst.op;
        let clamp = inst.has_flag(flag::CLAMP);
        // Carry-in / mask operand (VCC for e32, an SGPR pair in VOP3).
        let mask_in = || self.sread64(w, inst, inst.src[2], false);
        macro_rules! a {
            () => {
                self.isrc(w, inst, 0)?
            };
        }
        macro_rules! bb {
            () => {
                self.isrc(w, inst, 1)?
            };
        }
        macro_rules! c {
            () => {
                self.vread(w, inst, inst.src[2])?
            };
        }
        macro_rules! fa {
            () => {
                self.fsrc(w, inst, 0)?
            };
        }
        macro_rules! fb {
            () => {
                self.fsrc(w, inst, 1)?
            };
        }
        macro_rules! fc {
            () => {
                self.fsrc(w, inst, 2)?
            };
        }
        let r: Lanes = match op {
            Op::v_nop => return Ok(Flow::Next),
            Op::v_mov_b32 => a!(),
            Op::v_readfirstlane_b32 => {
                let v = self.vread(w, inst, inst.src[0])?;
                let l = if exec == 0 { 0 } else { exec.trailing_zeros() as usize };
                Self::swrite(w, inst.dst, v[l]);
                return Ok(Flow::Next);
            }
            Op::v_readlane_b32 => {
                let v = self.vread(w, inst, inst.src[0])?;
                let l = (self.sread(w, inst, inst.src[1]) & 63) as usize;
                Self::swrite(w, inst.dst, v[l]);
                return Ok(Flow::Next);
            }
            Op::v_writelane_b32 => {
                let v = self.sread(w, inst, inst.src[0]);
                let l = (self.sread(w, inst, inst.src[1]) & 63) as usize;
                let i = self.vidx(w, inst.dst)?;
                w.v[i][l] = v;
                return Ok(Flow::Next);
            }
            Op::v_cndmask_b32 => {
                let m = mask_in();
                let (x, y) = (fa!(), fb!());
                std::array::from_fn(|l| if m >> l & 1 != 0 { y[l] } else { x[l] })
            }
            Op::v_add_f32 => map2!(fa!(), fb!(), |x, y| b(f(x) + f(y))),
            Op::v_sub_f32 => map2!(fa!(), fb!(), |x, y| b(f(x) - f(y))),
            Op::v_subrev_f32 => map2!(fa!(), fb!(), |x, y| b(f(y) - f(x))),
            Op::v_mul_f32 => map2!(fa!(), fb!(), |x, y| b(f(x) * f(y))),
            Op::v_mul_legacy_f32 => map2!(fa!(), fb!(), |x, y| if f(x) == 0.0 || f(y) == 0.0 { 0 } else { b(f(x) * f(y)) }),
            Op::v_min_f32 => map2!(fa!(), fb!(), |x, y| b(f32_min(f(x), f(y)))),
            Op::v_max_f32 => map2!(fa!(), fb!(), |x, y| b(f32_max(f(x), f(y)))),
            Op::v_fmac_f32 => {
                let d = self.vread(w, inst, inst.dst)?;
                map3!(fa!(), fb!(), d, |x, y, z| b(f(x).mul_add(f(y), f(z))))
            }
            Op::v_fma_f32 => map3!(fa!(), fb!(), fc!(), |x, y, z| b(f(x).mul_add(f(y), f(z)))),
            Op::v_fmamk_f32 => {
                let k = inst.lit;
                map2!(fa!(), fb!(), |x, y| b(f(x).mul_add(f(k), f(y))))
            }
            Op::v_fmaak_f32 => {
                let k = inst.lit;
                map2!(fa!(), fb!(), |x, y| b(f(x).mul_add(f(y), f(k))))
            }
            Op::v_min3_f32 => map3!(fa!(), fb!(), fc!(), |x, y, z| b(f32_min(f32_min(f(x), f(y)), f(z)))),
            Op::v_max3_f32 => map3!(fa!(), fb!(), fc!(), |x, y, z| b(f32_max(f32_max(f(x), f(y)), f(z)))),
            Op::v_med3_f32 => map3!(fa!(), fb!(), fc!(), |x, y, z| b(f32_med3(f(x), f(y), f(z)))),
            Op::v_ldexp_f32 => map2!(fa!(), bb!(), |x, y| b(f(x) * 2f32.powi((y as i32).clamp(-300, 300)))),
            Op::v_mul_i32_i24 => map2!(a!(), bb!(), |x, y| ((x << 8) as i32 >> 8).wrapping_mul((y << 8) as i32 >> 8) as u32),
            Op::v_mul_hi_i32_i24 => map2!(a!(), bb!(), |x, y| ((i64::from((x << 8) as i32 >> 8) * i64::from((y << 8) as i32 >> 8)) >> 32) as u32),
            Op::v_mul_u32_u24 => map2!(a!(), bb!(), |x, y| (x & 0xff_ffff).wrapping_mul(y & 0xff_ffff)),
            Op::v_mul_hi_u32_u24 => map2!(a!(), bb!(), |x, y| ((u64::from(x & 0xff_ffff) * u64::from(y & 0xff_ffff)) >> 32) as u32),
            Op::v_mad_u32_u24 => map3!(a!(), bb!(), c!(), |x, y, z| (x & 0xff_ffff).wrapping_mul(y & 0xff_ffff).wrapping_add(z)),
            Op::v_mad_i32_i24 => map3!(a!(), bb!(), c!(), |x, y, z| ((x << 8) as i32 >> 8).wrapping_mul((y << 8) as i32 >> 8).wrapping_add(z as i32) as u32),
            Op::v_min_i32 => map2!(a!(), bb!(), |x, y| (x as i32).min(y as i32) as u32),
            Op::v_max_i32 => map2!(a!(), bb!(), |x, y| (x as i32).max(y as i32) as u32),
            Op::v_min_u32 => map2!(a!(), bb!(), |x, y| x.min(y)),
            Op::v_max_u32 => map2!(a!(), bb!(), |x, y| x.max(y)),
            Op::v_min3_i32 => map3!(a!(), bb!(), c!(), |x, y, z| (x as i32).min(y as i32).min(z as i32) as u32),
            Op::v_max3_i32 => map3!(a!(), bb!(), c!(), |x, y, z| (x as i32).max(y as i32).max(z as i32) as u32),
            Op::v_min3_u32 => map3!(a!(), bb!(), c!(), |x, y, z| x.min(y).min(z)),
            Op::v_max3_u32 => map3!(a!(), bb!(), c!(), |x, y, z| x.max(y).max(z)),
            Op::v_med3_i32 => map3!(a!(), bb!(), c!(), |x, y, z| {
                let (x, y, z) = (x as i32, y as i32, z as i32);
                x.max(y).min(x.min(y).max(z)) as u32
            }),
            Op::v_med3_u32 => map3!(a!(), bb!(), c!(), |x, y, z| x.max(y).min(x.min(y).max(z))),
            Op::v_lshrrev_b32 => map2!(a!(), bb!(), |x, y| y >> (x & 31)),
            Op::v_ashrrev_i32 => map2!(a!(), bb!(), |x, y| ((y as i32) >> (x & 31)) as u32),
            Op::v_lshlrev_b32 => map2!(a!(), bb!(), |x, y| y << (x & 31)),
            Op::v_and_b32 => map2!(a!(), bb!(), |x, y| x & y),
            Op::v_or_b32 => map2!(a!(), bb!(), |x, y| x | y),
            Op::v_xor_b32 => map2!(a!(), bb!(), |x, y| x ^ y),
            Op::v_xnor_b32 => map2!(a!(), bb!(), |x, y| !(x ^ y)),
            Op::v_not_b32 => map1!(a!(), |x| !x),
            Op::v_bfrev_b32 => map1!(a!(), |x| x.reverse_bits()),
            Op::v_ffbh_u32 => map1!(a!(), |x| if x == 0 { u32::MAX } else { x.leading_zeros() }),
            Op::v_ffbl_b32 => map1!(a!(), |x| if x == 0 { u32::MAX } else { x.trailing_zeros() }),
            Op::v_ffbh_i32 => map1!(a!(), |x| {
                let v = if (x as i32) < 0 { !x } else { x };
                if v == 0 { u32::MAX } else { v.leading_zeros() - 1 }
            }),
            Op::v_bcnt_u32_b32 => map2!(a!(), bb!(), |x, y| x.count_ones().wrapping_add(y)),
            Op::v_mbcnt_lo_u32_b32 => {
                let (x, y) = (a!(), bb!());
                std::array::from_fn(|l| (x[l] & ((1u64 << l.min(32)) - 1) as u32).count_ones().wrapping_add(y[l]))
            }
            Op::v_mbcnt_hi_u32_b32 => {
                let (x, y) = (a!(), bb!());
                std::array::from_fn(|l| {
                    let m = if l <= 32 { 0 } else { ((1u64 << (l - 32)) - 1) as u32 };
                    (x[l] & m).count_ones().wrapping_add(y[l])
                })
            }
            Op::v_bfe_u32 => map3!(a!(), bb!(), c!(), |x, y, z| bfe(x, y, z, false)),
            Op::v_bfe_i32 => map3!(a!(), bb!(), c!(), |x, y, z| bfe(x, y, z, true)),
            Op::v_bfi_b32 => map3!(a!(), bb!(), c!(), |x, y, z| (x & y) | (!x & z)),
            // gfx950 V_BITOP3_B32: bit i of D is the truth table's bit `S0[i]·4 + S1[i]·2 +
            // S2[i]` (CDNA4 ISA guide, V_BITOP3_B32; LLVM's BitOp3 constants: S0 = 0xf0, S1 =
            // 0xcc, S2 = 0xaa). The table sits in the neg (2:0), abs (5:3) and omod (7:6) fields.
            Op::v_bitop3_b32 => {
                let t = bitop3_table(inst);
                map3!(a!(), bb!(), c!(), |x, y, z| bitop3(t, x, y, z))
            }
            Op::v_bfm_b32 => map2!(a!(), bb!(), |x, y| ((1u32 << (x & 31)).wrapping_sub(1)) << (y & 31)),
            Op::v_alignbit_b32 => map3!(a!(), bb!(), c!(), |x, y, z| ((u64::from(x) << 32 | u64::from(y)) >> (z & 31)) as u32),
            Op::v_alignbyte_b32 => map3!(a!(), bb!(), c!(), |x, y, z| ((u64::from(x) << 32 | u64::from(y)) >> (8 * (z & 3))) as u32),
            Op::v_perm_b32 => map3!(a!(), bb!(), c!(), |x, y, z| {
                // Byte k of the result selects from {src0, src1} (bytes 7..4 = src0, 3..0 = src1)
                // per selector byte k of src2 (CDNA3 ISA, V_PERM_B32).
                let bytes = u64::from(x) << 32 | u64::from(y);
                let mut r = 0u32;
                for k in 0..4 {
                    let s = (z >> (8 * k)) & 0xff;
                    let v = match s {
                        0..=7 => ((bytes >> (8 * s)) & 0xff) as u32,
                        8 => {
                            if (bytes >> 15) & 1 != 0 {
                                0xff
                            } else {
                                0
                            }
                        }
                        9 => {
                            if (bytes >> 31) & 1 != 0 {
                                0xff
                            } else {
                                0
                            }
                        }
                        10 => {
                            if (bytes >> 47) & 1 != 0 {
                                0xff
                            } else {
                                0
                            }
                        }
                        11 => {
                            if (bytes >> 63) & 1 != 0 {
                                0xff
                            } else {
                                0
                            }
                        }
                        12 => 0,
                        _ => 0xff,
                    };
                    r |= v << (8 * k);
                }
                r
            }),
            Op::v_lshl_add_u32 => map3!(a!(), bb!(), c!(), |x, y, z| (x << (y & 31)).wrapping_add(z)),
            Op::v_add_lshl_u32 => map3!(a!(), bb!(), c!(), |x, y, z| x.wrapping_add(y) << (z & 31)),
            Op::v_add3_u32 => map3!(a!(), bb!(), c!(), |x, y, z| x.wrapping_add(y).wrapping_add(z)),
            Op::v_lshl_or_b32 => map3!(a!(), bb!(), c!(), |x, y, z| (x << (y & 31)) | z),
            Op::v_and_or_b32 => map3!(a!(), bb!(), c!(), |x, y, z| (x & y) | z),
            Op::v_or3_b32 => map3!(a!(), bb!(), c!(), |x, y, z| x | y | z),
            Op::v_xad_u32 => map3!(a!(), bb!(), c!(), |x, y, z| (x ^ y).wrapping_add(z)),
            Op::v_mul_lo_u32 => map2!(a!(), bb!(), |x, y| x.wrapping_mul(y)),
            Op::v_mul_hi_u32 => map2!(a!(), bb!(), |x, y| ((u64::from(x) * u64::from(y)) >> 32) as u32),
            Op::v_mul_hi_i32 => map2!(a!(), bb!(), |x, y| ((i64::from(x as i32) * i64::from(y as i32)) >> 32) as u32),
            // VOP3 clamp on integer add/sub saturates (unsigned for _u32, signed for _i32).
            Op::v_add_u32 if clamp => map2!(a!(), bb!(), |x, y| x.saturating_add(y)),
            Op::v_sub_u32 if clamp => map2!(a!(), bb!(), |x, y| x.saturating_sub(y)),
            Op::v_subrev_u32 if clamp => map2!(a!(), bb!(), |x, y| y.saturating_sub(x)),
            Op::v_add_i32 if clamp => map2!(a!(), bb!(), |x, y| (x as i32).saturating_add(y as i32) as u32),
            Op::v_sub_i32 if clamp => map2!(a!(), bb!(), |x, y| (x as i32).saturating_sub(y as i32) as u32),
            Op::v_add_u32 => map2!(a!(), bb!(), |x, y| x.wrapping_add(y)),
            Op::v_sub_u32 => map2!(a!(), bb!(), |x, y| x.wrapping_sub(y)),
            Op::v_subrev_u32 => map2!(a!(), bb!(), |x, y| y.wrapping_sub(x)),
            Op::v_add_i32 => map2!(a!(), bb!(), |x, y| x.wrapping_add(y)),
            Op::v_sub_i32 => map2!(a!(), bb!(), |x, y| x.wrapping_sub(y)),
            Op::v_add_co_u32 | Op::v_sub_co_u32 | Op::v_subrev_co_u32 | Op::v_addc_co_u32 | Op::v_subb_co_u32 | Op::v_subbrev_co_u32 => {
                // Carry/borrow out per lane to VCC (e32) or the SGPR pair sdst (VOP3b); inactive
                // lanes' bits are written as 0.
                let (mut x, mut y) = (a!(), bb!());
                let cin = if matches!(op, Op::v_addc_co_u32 | Op::v_subb_co_u32 | Op::v_subbrev_co_u32) { mask_in() } else { 0 };
                if matches!(op, Op::v_subrev_co_u32 | Op::v_subbrev_co_u32) {
                    std::mem::swap(&mut x, &mut y);
                }
                let mut r = [0u32; 64];
                let mut cout = 0u64;
                for l in 0..64 {
                    let ci = (cin >> l) & 1;
                    let (v, c) = if matches!(op, Op::v_add_co_u32 | Op::v_addc_co_u32) {
                        let s = u64::from(x[l]) + u64::from(y[l]) + ci;
                        (s as u32, s >> 32 != 0)
                    } else {
                        let s = u64::from(x[l]).wrapping_sub(u64::from(y[l])).wrapping_sub(ci);
                        (s as u32, u64::from(y[l]) + ci > u64::from(x[l]))
                    };
                    r[l] = v;
                    if c {
                        cout |= 1 << l;
                    }
                }
                self.idst(w, inst, r, exec)?;
                Self::swrite64(w, inst.sdst, cout & exec);
                return Ok(Flow::Next);
            }
            Op::v_mad_u64_u32 | Op::v_mad_i64_i32 => {
                let (x, y) = (a!(), bb!());
                let z = self.vread64(w, inst, inst.src[2], false)?;
                let mut r = [0u64; 64];
                let mut cout = 0u64;
                for l in 0..64 {
                    let (v, c) = if op == Op::v_mad_u64_u32 {
                        let p = u128::from(x[l]) * u128::from(y[l]) + u128::from(z[l]);
                        (p as u64, p >> 64 != 0)
                    } else {
                        let p = i128::from(x[l] as i32) * i128::from(y[l] as i32) + i128::from(z[l] as i64);
                        (p as u64, p > i128::from(i64::MAX) || p < i128::from(i64::MIN))
                    };
                    r[l] = v;
                    if c {
                        cout |= 1 << l;
                    }
                }
                self.vwrite64(w, inst.dst, &r, exec)?;
                Self::swrite64(w, inst.sdst, cout & exec);
                return Ok(Flow::Next);
            }
            Op::v_lshl_add_u64 => {
                let x = self.vread64(w, inst, inst.src[0], false)?;
                let y = self.vread(w, inst, inst.src[1])?;
                let z = self.vread64(w, inst, inst.src[2], false)?;
                let r: [u64; 64] = std::array::from_fn(|l| (x[l] << (y[l] & 7)).wrapping_add(z[l]));
                self.vwrite64(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_lshlrev_b64 | Op::v_lshrrev_b64 | Op::v_ashrrev_i64 => {
                let x = self.vread(w, inst, inst.src[0])?;
                let y = self.vread64(w, inst, inst.src[1], false)?;
                let r: [u64; 64] = std::array::from_fn(|l| {
                    let s = x[l] & 63;
                    match op {
                        Op::v_lshlrev_b64 => y[l] << s,
                        Op::v_lshrrev_b64 => y[l] >> s,
                        _ => ((y[l] as i64) >> s) as u64,
                    }
                });
                self.vwrite64(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_mov_b64 => {
                let x = self.vread64(w, inst, inst.src[0], false)?;
                self.vwrite64(w, inst.dst, &x, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_add_f64 | Op::v_mul_f64 | Op::v_min_f64 | Op::v_max_f64 | Op::v_fma_f64 | Op::v_ldexp_f64 | Op::v_fmac_f64 => {
                let x = self.f64src(w, inst, 0)?;
                let y = if op == Op::v_ldexp_f64 { [0; 64] } else { self.f64src(w, inst, 1)? };
                let yi = self.vread(w, inst, inst.src[1])?;
                let z = match op {
                    Op::v_fma_f64 => self.f64src(w, inst, 2)?,
                    Op::v_fmac_f64 => self.vread64(w, inst, inst.dst, true)?,
                    _ => [0; 64],
                };
                let r: [u64; 64] = std::array::from_fn(|l| {
                    let (p, q) = (fd(x[l]), fd(y[l]));
                    match op {
                        Op::v_add_f64 => p + q,
                        Op::v_mul_f64 => p * q,
                        Op::v_min_f64 => {
                            if p.is_nan() {
                                q
                            } else if q.is_nan() {
                                p
                            } else {
                                p.min(q)
                            }
                        }
                        Op::v_max_f64 => {
                            if p.is_nan() {
                                q
                            } else if q.is_nan() {
                                p
                            } else {
                                p.max(q)
                            }
                        }
                        Op::v_ldexp_f64 => p * 2f64.powi((yi[l] as i32).clamp(-2200, 2200)),
                        _ => p.mul_add(q, fd(z[l])),
                    }
                    .to_bits()
                });
                self.vwrite64(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_rcp_f64 | Op::v_rsq_f64 | Op::v_sqrt_f64 | Op::v_floor_f64 | Op::v_ceil_f64 | Op::v_trunc_f64 | Op::v_rndne_f64 | Op::v_fract_f64 => {
                // Transcendentals computed correctly rounded (hardware: about 1 ULP) — a model.
                let x = self.f64src(w, inst, 0)?;
                let r: [u64; 64] = std::array::from_fn(|l| {
                    let p = fd(x[l]);
                    match op {
                        Op::v_rcp_f64 => 1.0 / p,
                        Op::v_rsq_f64 => 1.0 / p.sqrt(),
                        Op::v_sqrt_f64 => p.sqrt(),
                        Op::v_floor_f64 => p.floor(),
                        Op::v_ceil_f64 => p.ceil(),
                        Op::v_trunc_f64 => p.trunc(),
                        Op::v_rndne_f64 => p.round_ties_even(),
                        _ => {
                            if p.is_infinite() {
                                f64::NAN
                            } else {
                                (p - p.floor()).min(f64::from_bits(0x3fef_ffff_ffff_ffff))
                            }
                        }
                    }
                    .to_bits()
                });
                self.vwrite64(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_div_scale_f64 => {
                // Same pass-through model as v_div_scale_f32 (no pre-scaling; VCC = 0).
                let x = self.f64src(w, inst, 0)?;
                self.vwrite64(w, inst.dst, &x, exec)?;
                Self::swrite64(w, inst.sdst, 0);
                return Ok(Flow::Next);
            }
            Op::v_div_fmas_f64 => {
                let m = self.sread64(w, inst, sreg::VCC, false);
                let (x, y, z) = (self.f64src(w, inst, 0)?, self.f64src(w, inst, 1)?, self.f64src(w, inst, 2)?);
                let r: [u64; 64] = std::array::from_fn(|l| {
                    let v = fd(x[l]).mul_add(fd(y[l]), fd(z[l]));
                    (if m >> l & 1 != 0 { v * 2f64.powi(64) } else { v }).to_bits()
                });
                self.vwrite64(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_div_fixup_f64 => {
                let (q, dd, nn) = (self.f64src(w, inst, 0)?, self.f64src(w, inst, 1)?, self.f64src(w, inst, 2)?);
                let r: [u64; 64] = std::array::from_fn(|l| {
                    let (q, d, n) = (fd(q[l]), fd(dd[l]), fd(nn[l]));
                    let neg = d.is_sign_negative() ^ n.is_sign_negative();
                    (if n.is_nan() {
                        n
                    } else if d.is_nan() {
                        d
                    } else if (d == 0.0 && n == 0.0) || (d.is_infinite() && n.is_infinite()) {
                        f64::NAN
                    } else if d == 0.0 || n.is_infinite() {
                        if neg { f64::NEG_INFINITY } else { f64::INFINITY }
                    } else if d.is_infinite() {
                        if neg { -0.0 } else { 0.0 }
                    } else {
                        q
                    })
                    .to_bits()
                });
                self.vwrite64(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_cvt_f16_u16 => map1!(a!(), |x| u32::from(f32_to_f16(f32::from(x as u16)))),
            Op::v_cvt_f16_i16 => map1!(a!(), |x| u32::from(f32_to_f16(f32::from(x as u16 as i16)))),
            Op::v_cvt_u16_f16 => map1!(self.vsrc16(w, inst, 0)?, |x| f16_to_f32(x as u16) as u16 as u32),
            Op::v_cvt_i16_f16 => map1!(self.vsrc16(w, inst, 0)?, |x| f16_to_f32(x as u16) as i16 as u16 as u32),
            Op::v_cvt_f32_i32 => map1!(a!(), |x| b(x as i32 as f32)),
            Op::v_cvt_f32_u32 => map1!(a!(), |x| b(x as f32)),
            // Float → int conversions saturate and map NaN to 0 (CDNA3 ISA V_CVT_I32_F32).
            Op::v_cvt_u32_f32 => map1!(fa!(), |x| f(x) as u32),
            Op::v_cvt_i32_f32 => map1!(fa!(), |x| f(x) as i32 as u32),
            Op::v_cvt_rpi_i32_f32 => map1!(fa!(), |x| (f(x) + 0.5).floor() as i32 as u32),
            Op::v_cvt_flr_i32_f32 => map1!(fa!(), |x| f(x).floor() as i32 as u32),
            Op::v_cvt_f32_ubyte0 => map1!(a!(), |x| b((x & 0xff) as f32)),
            Op::v_cvt_f32_ubyte1 => map1!(a!(), |x| b(((x >> 8) & 0xff) as f32)),
            Op::v_cvt_f32_ubyte2 => map1!(a!(), |x| b(((x >> 16) & 0xff) as f32)),
            Op::v_cvt_f32_ubyte3 => map1!(a!(), |x| b((x >> 24) as f32)),
            Op::v_cvt_f16_f32 => {
                let old = self.vread(w, inst, inst.dst)?;
                let x = fa!();
                // op_sel[3] writes the high half and keeps the low half; otherwise the low half is
                // written and the high half zeroed (gfx9 16-bit results).
                std::array::from_fn(|l| {
                    let h = u32::from(f32_to_f16(f(x[l])));
                    if inst.opsel & 8 != 0 { (old[l] & 0xffff) | h << 16 } else { h }
                })
            }
            Op::v_cvt_f32_f16 => {
                let hi = inst.opsel & 1 != 0;
                let x = self.vsrc16(w, inst, 0)?;
                let r = map1!(x, |v| {
                    let h = if hi { (v >> 16) as u16 } else { v as u16 };
                    let mut g = f16_to_f32(h);
                    if inst.abs & 1 != 0 {
                        g = g.abs();
                    }
                    if inst.neg & 1 != 0 {
                        g = -g;
                    }
                    b(g)
                });
                return self.fdst(w, inst, r, exec).map(|_| Flow::Next);
            }
            Op::v_cvt_pkrtz_f16_f32 => map2!(fa!(), fb!(), |x, y| u32::from(f32_to_f16_rtz(f(x))) | u32::from(f32_to_f16_rtz(f(y))) << 16),
            Op::v_cvt_pk_u16_u32 => map2!(a!(), bb!(), |x, y| x.min(0xffff) | y.min(0xffff) << 16),
            Op::v_cvt_pk_i16_i32 => {
                map2!(a!(), bb!(), |x, y| ((x as i32).clamp(-32768, 32767) as u32 & 0xffff) | ((y as i32).clamp(-32768, 32767) as u32) << 16)
            }
            Op::v_pack_b32_f16 => map2!(a!(), bb!(), |x, y| {
                let lo = if inst.opsel & 1 != 0 { x >> 16 } else { x & 0xffff };
                let hi = if inst.opsel & 2 != 0 { y >> 16 } else { y & 0xffff };
                lo | hi << 16
            }),
            Op::v_cvt_f64_f32 | Op::v_cvt_f64_i32 | Op::v_cvt_f64_u32 => {
                let x = if op == Op::v_cvt_f64_f32 { fa!() } else { a!() };
                let r: [u64; 64] = std::array::from_fn(|l| {
                    match op {
                        Op::v_cvt_f64_f32 => f64::from(f(x[l])),
                        Op::v_cvt_f64_i32 => f64::from(x[l] as i32),
                        _ => f64::from(x[l]),
                    }
                    .to_bits()
                });
                self.vwrite64(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_cvt_f32_f64 | Op::v_cvt_i32_f64 | Op::v_cvt_u32_f64 => {
                let x = self.f64src(w, inst, 0)?;
                std::array::from_fn(|l| match op {
                    Op::v_cvt_f32_f64 => b(fd(x[l]) as f32),
                    Op::v_cvt_i32_f64 => fd(x[l]) as i32 as u32,
                    _ => fd(x[l]) as u32,
                })
            }
            Op::v_fract_f32 => map1!(fa!(), |x| {
                let v = f(x);
                if v.is_infinite() { b(f32::NAN) } else { b((v - v.floor()).min(f32::from_bits(0x3f7f_ffff))) }
            }),
            Op::v_trunc_f32 => map1!(fa!(), |x| b(f(x).trunc())),
            Op::v_ceil_f32 => map1!(fa!(), |x| b(f(x).ceil())),
            Op::v_rndne_f32 => map1!(fa!(), |x| b(f(x).round_ties_even())),
            Op::v_floor_f32 => map1!(fa!(), |x| b(f(x).floor())),
            // Transcendentals: the hardware is accurate to about 1 ULP; the emulator computes the
            // correctly rounded value (a documented model difference).
            Op::v_exp_f32 => map1!(fa!(), |x| b(f(x).exp2())),
            Op::v_log_f32 => map1!(fa!(), |x| b(f(x).log2())),
            Op::v_rcp_f32 | Op::v_rcp_iflag_f32 => map1!(fa!(), |x| b(1.0 / f(x))),
            Op::v_rsq_f32 => map1!(fa!(), |x| b(1.0 / f(x).sqrt())),
            Op::v_sqrt_f32 => map1!(fa!(), |x| b(f(x).sqrt())),
            Op::v_sin_f32 => map1!(fa!(), |x| b((f(x) * std::f32::consts::TAU).sin())),
            Op::v_cos_f32 => map1!(fa!(), |x| b((f(x) * std::f32::consts::TAU).cos())),
            Op::v_frexp_mant_f32 => map1!(fa!(), |x| {
                let v = f(x);
                if v == 0.0 || !v.is_finite() {
                    x
                } else {
                    let e = frexp_exp(v);
                    b(v * 2f32.powi(-e))
                }
            }),
            Op::v_frexp_exp_i32_f32 => map1!(fa!(), |x| {
                let v = f(x);
                if v == 0.0 || !v.is_finite() { 0 } else { frexp_exp(v) as u32 }
            }),
            Op::v_div_scale_f32 => {
                // No operand needs pre-scaling in the ranges LLVM's f32 division expansion meets
                // in practice; results pass through and VCC reports "no scaling" (model).
                let x = fa!();
                self.fdst(w, inst, x, exec)?;
                Self::swrite64(w, inst.sdst, 0);
                return Ok(Flow::Next);
            }
            Op::v_div_fmas_f32 => {
                let m = self.sread64(w, inst, sreg::VCC, false);
                let (x, y, z) = (fa!(), fb!(), fc!());
                std::array::from_fn(|l| {
                    let r = f(x[l]).mul_add(f(y[l]), f(z[l]));
                    b(if m >> l & 1 != 0 { r * 2f32.powi(32) } else { r })
                })
            }
            Op::v_div_fixup_f32 => map3!(fa!(), fb!(), fc!(), |q, den, num| {
                // D = quotient estimate with the IEEE special cases of num / den.
                let (q, d, n) = (f(q), f(den), f(num));
                b(if n.is_nan() || d.is_nan() || (d == 0.0 && n == 0.0) || (d.is_infinite() && n.is_infinite()) {
                    if n.is_nan() {
                        n
                    } else if d.is_nan() {
                        d
                    } else {
                        f32::NAN
                    }
                } else if d == 0.0 || n.is_infinite() {
                    if (d.is_sign_negative()) ^ (n.is_sign_negative()) { f32::NEG_INFINITY } else { f32::INFINITY }
                } else if d.is_infinite() {
                    if (d.is_sign_negative()) ^ (n.is_sign_negative()) { -0.0 } else { 0.0 }
                } else {
                    q
                })
            }),
            Op::v_cvt_f32_fp8 | Op::v_cvt_f32_bf8 => {
                let kind = f8kind(op == Op::v_cvt_f32_fp8, self.st.program.ocp);
                let x = self.vread(w, inst, inst.src[0])?;
                let sel = if inst.has_flag(flag::SDWA) { sdwa::src0_sel(inst.sdwa) & 3 } else { u32::from(inst.opsel & 3) };
                let r = map1!(x, |v| b(numerics::cvt_f32_f8(v, sel, kind)));
                return self.fdst(w, inst, r, exec).map(|_| Flow::Next);
            }
            Op::v_cvt_pk_f32_fp8 | Op::v_cvt_pk_f32_bf8 => {
                let kind = f8kind(op == Op::v_cvt_pk_f32_fp8, self.st.program.ocp);
                let x = self.vread(w, inst, inst.src[0])?;
                let hi = if inst.has_flag(flag::SDWA) { sdwa::src0_sel(inst.sdwa) == 5 } else { inst.opsel & 1 != 0 };
                let r: [u64; 64] = std::array::from_fn(|l| {
                    let p = numerics::cvt_pk_f32_f8(x[l], hi, kind);
                    u64::from(b(p[0])) | u64::from(b(p[1])) << 32
                });
                self.vwrite64(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_cvt_pk_fp8_f32 | Op::v_cvt_pk_bf8_f32 => {
                let kind = f8kind(op == Op::v_cvt_pk_fp8_f32, self.st.program.ocp);
                let (x, y) = (fa!(), fb!());
                let old = self.vread(w, inst, inst.dst)?;
                let hi = inst.opsel & 8 != 0;
                let clamp = inst.has_flag(flag::CLAMP);
                let r: Lanes = std::array::from_fn(|l| numerics::cvt_pk_f8_f32(f(x[l]), f(y[l]), old[l], hi, clamp, kind));
                self.vwrite(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_cvt_scalef32_pk_fp8_f32 | Op::v_cvt_scalef32_pk_bf8_f32 => {
                // gfx950 only (OCP encodings); numerics::cvt_scalef32_pk_f8_f32.
                let kind = f8kind(op == Op::v_cvt_scalef32_pk_fp8_f32, true);
                let (x, y, sc) = (fa!(), fb!(), fc!());
                let old = self.vread(w, inst, inst.dst)?;
                let hi = inst.opsel & 8 != 0;
                let clamp = inst.has_flag(flag::CLAMP);
                let r: Lanes = std::array::from_fn(|l| numerics::cvt_scalef32_pk_f8_f32(f(x[l]), f(y[l]), f(sc[l]), old[l], hi, clamp, kind));
                self.vwrite(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_cvt_scalef32_pk_f32_fp8 | Op::v_cvt_scalef32_pk_f32_bf8 => {
                // gfx950 only; op_sel bit 0 selects the source's high word (LLVM
                // `int_amdgcn_cvt_scalef32_pk_f32_fp8` word_sel).
                let kind = f8kind(op == Op::v_cvt_scalef32_pk_f32_fp8, true);
                if inst.abs & 1 != 0 || inst.neg & 1 != 0 || inst.has_flag(flag::CLAMP) || inst.omod != 0 {
                    return Err(self.unimpl(inst));
                }
                let x = self.vread(w, inst, inst.src[0])?;
                let sc = self.fsrc(w, inst, 1)?;
                let hi = inst.opsel & 1 != 0;
                let r: [u64; 64] = std::array::from_fn(|l| {
                    let p = numerics::cvt_scalef32_pk_f32_f8(x[l], f(sc[l]), hi, kind);
                    u64::from(b(p[0])) | u64::from(b(p[1])) << 32
                });
                self.vwrite64(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_cvt_sr_fp8_f32 | Op::v_cvt_sr_bf8_f32 => {
                let kind = f8kind(op == Op::v_cvt_sr_fp8_f32, self.st.program.ocp);
                let (x, y) = (fa!(), bb!());
                let old = self.vread(w, inst, inst.dst)?;
                let sel = u32::from((inst.opsel >> 2) & 3);
                let clamp = inst.has_flag(flag::CLAMP);
                let r: Lanes = std::array::from_fn(|l| numerics::cvt_sr_f8_f32(f(x[l]), y[l], old[l], sel, clamp, kind));
                self.vwrite(w, inst.dst, &r, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_swap_b32 => {
                let x = self.vread(w, inst, inst.src[0])?;
                let y = self.vread(w, inst, inst.dst)?;
                self.vwrite(w, inst.dst, &x, exec)?;
                self.vwrite(w, inst.src[0], &y, exec)?;
                return Ok(Flow::Next);
            }
            Op::v_accvgpr_mov_b32 => self.vread(w, inst, inst.src[0])?,
            // 16-bit integer ops on the low half (upper half zeroed, gfx9 behaviour without op_sel).
            Op::v_add_u16 => map2!(a!(), bb!(), |x, y| (x as u16).wrapping_add(y as u16) as u32),
            Op::v_sub_u16 => map2!(a!(), bb!(), |x, y| (x as u16).wrapping_sub(y as u16) as u32),
            Op::v_subrev_u16 => map2!(a!(), bb!(), |x, y| (y as u16).wrapping_sub(x as u16) as u32),
            Op::v_mul_lo_u16 => map2!(a!(), bb!(), |x, y| (x as u16).wrapping_mul(y as u16) as u32),
            Op::v_lshlrev_b16 => map2!(a!(), bb!(), |x, y| ((y as u16) << (x & 15)) as u32),
            Op::v_lshrrev_b16 => map2!(a!(), bb!(), |x, y| ((y as u16) >> (x & 15)) as u32),
            Op::v_ashrrev_i16 => map2!(a!(), bb!(), |x, y| ((y as i16) >> (x & 15)) as u16 as u32),
            Op::v_max_u16 => map2!(a!(), bb!(), |x, y| (x as u16).max(y as u16) as u32),
            Op::v_min_u16 => map2!(a!(), bb!(), |x, y| (x as u16).min(y as u16) as u32),
            Op::v_max_i16 => map2!(a!(), bb!(), |x, y| (x as i16).max(y as i16) as u16 as u32),
            Op::v_min_i16 => map2!(a!(), bb!(), |x, y| (x as i16).min(y as i16) as u16 as u32),
            Op::v_add_f16 | Op::v_sub_f16 | Op::v_mul_f16 | Op::v_max_f16 | Op::v_min_f16 | Op::v_fma_f16 => {
                let h = |c: &Self, i: usize| -> Result<[f32; 64], LaunchError> {
                    let v = c.vsrc16(w, inst, i)?;
                    let hi = inst.enc == Enc::Vop3 && inst.opsel >> i & 1 != 0;
                    Ok(std::array::from_fn(|l| {
                        let mut g = f16_to_f32(if hi { (v[l] >> 16) as u16 } else { v[l] as u16 });
                        if inst.enc == Enc::Vop3 && inst.abs >> i & 1 != 0 {
                            g = g.abs();
                        }
                        if inst.enc == Enc::Vop3 && inst.neg >> i & 1 != 0 {
                            g = -g;
                        }
                        g
                    }))
                };
                let (x, y) = (h(self, 0)?, h(self, 1)?);
                let z = if op == Op::v_fma_f16 { h(self, 2)? } else { [0.0; 64] };
                let old = self.vread(w, inst, inst.dst)?;
                let dhi = inst.enc == Enc::Vop3 && inst.opsel & 8 != 0;
                std::array::from_fn(|l| {
                    // Single f16 operations: the f32 result of two f16 inputs rounds once to f16
                    // exactly as an f16 operation would (f32 has > 2*11+2 bits).
                    let r = match op {
                        Op::v_add_f16 => x[l] + y[l],
                        Op::v_sub_f16 => x[l] - y[l],
                        Op::v_mul_f16 => x[l] * y[l],
                        Op::v_max_f16 => f32_max(x[l], y[l]),
                        Op::v_min_f16 => f32_min(x[l], y[l]),
                        _ => (f64::from(x[l]) * f64::from(y[l]) + f64::from(z[l])) as f32,
                    };
                    let h = u32::from(f32_to_f16(r));
                    if dhi { (old[l] & 0xffff) | h << 16 } else { h }
                })
            }
            _ => return Err(self.unimpl(inst)),
        };
        let float_result = matches!(
            op,
            Op::v_add_f32
                | Op::v_sub_f32
                | Op::v_subrev_f32
                | Op::v_mul_f32
                | Op::v_min_f32
                | Op::v_max_f32
                | Op::v_fmac_f32
                | Op::v_fma_f32
                | Op::v_fmamk_f32
                | Op::v_fmaak_f32
                | Op::v_min3_f32
                | Op::v_max3_f32
                | Op::v_med3_f32
                | Op::v_ldexp_f32
                | Op::v_cvt_f32_i32
                | Op::v_cvt_f32_u32
                | Op::v_fract_f32
                | Op::v_trunc_f32
                | Op::v_ceil_f32
                | Op::v_rndne_f32
                | Op::v_floor_f32
                | Op::v_exp_f32
                | Op::v_log_f32
                | Op::v_rcp_f32
                | Op::v_rcp_iflag_f32
                | Op::v_rsq_f32
                | Op::v_sqrt_f32
                | Op::v_div_fmas_f32
                | Op::v_div_fixup_f32
                | Op::v_mul_legacy_f32
        );
        if float_result {
            self.fdst(w, inst, r, exec)?
        } else {
            self.idst(w, inst, r, exec)?
        }
        Ok(Flow::Next)
    }

    fn vcmp(&mut self, w: &mut Wave, inst: &Inst, aux: u32, exec: u64) -> Result<Flow, LaunchError> {
        let c = aux & 15;
        let t = (aux >> 4) & 0xff;
        // Inline float constants of 16-bit operands are f16 values.
        let (x, y) = if t == T_F16 { (self.vsrc16(w, inst, 0)?, self.vsrc16(w, inst, 1)?) } else { (self.isrc(w, inst, 0)?, self.isrc(w, inst, 1)?) };
        let mut bits = 0u64;
        let mods = |v: f64, i: usize| {
            let v = if inst.abs >> i & 1 != 0 { v.abs() } else { v };
            if inst.neg >> i & 1 != 0 { -v } else { v }
        };
        match t {
            T_F16 | T_F32 | T_I16 | T_U16 | T_I32 | T_U32 => {
                for l in 0..64 {
                    let r = match t {
                        T_F32 => cmp_f(c, mods(f64::from(f(x[l])), 0), mods(f64::from(f(y[l])), 1)),
                        T_F16 => {
                            let hx = if inst.opsel & 1 != 0 { x[l] >> 16 } else { x[l] };
                            let hy = if inst.opsel & 2 != 0 { y[l] >> 16 } else { y[l] };
                            cmp_f(c, mods(f64::from(f16_to_f32(hx as u16)), 0), mods(f64::from(f16_to_f32(hy as u16)), 1))
                        }
                        T_I16 => cmp_i(c, i128::from(x[l] as i16), i128::from(y[l] as i16)),
                        T_U16 => cmp_i(c, i128::from(x[l] as u16), i128::from(y[l] as u16)),
                        T_I32 => cmp_i(c, i128::from(x[l] as i32), i128::from(y[l] as i32)),
                        _ => cmp_i(c, i128::from(x[l]), i128::from(y[l])),
                    };
                    bits |= u64::from(r) << l;
                }
            }
            T_F64 | T_I64 | T_U64 => {
                let x = self.vread64(w, inst, inst.src[0], t == T_F64)?;
                let y = self.vread64(w, inst, inst.src[1], t == T_F64)?;
                for l in 0..64 {
                    let r = match t {
                        T_F64 => cmp_f(c, mods(fd(x[l]), 0), mods(fd(y[l]), 1)),
                        T_I64 => cmp_i(c, i128::from(x[l] as i64), i128::from(y[l] as i64)),
                        _ => cmp_i(c, i128::from(x[l]), i128::from(y[l])),
                    };
                    bits |= u64::from(r) << l;
                }
            }
            _ => {
                // v_cmp_class_{f16,f32,f64}: src1 is the class mask.
                let kind = t & 0xf0;
                let x64 = if kind == 0x10 { self.vread64(w, inst, inst.src[0], true)? } else { [0; 64] };
                for l in 0..64 {
                    let (v, snan) = match kind {
                        0x10 => (fd(x64[l]), fd(x64[l]).is_nan() && (x64[l] >> 51) & 1 == 0),
                        0x20 => {
                            let h = x[l] as u16;
                            (f64::from(f16_to_f32(h)), (h & 0x7c00) == 0x7c00 && h & 0x3ff != 0 && (h >> 9) & 1 == 0)
                        }
                        _ => (f64::from(f(x[l])), f(x[l]).is_nan() && (x[l] >> 22) & 1 == 0),
                    };
                    bits |= u64::from(class_bits(v, snan) & y[l] != 0) << l;
                }
            }
        }
        let bits = bits & exec;
        Self::swrite64(w, inst.dst, bits);
        if aux & 0x1000 != 0 {
            Self::set_exec(w, bits);
        }
        Ok(Flow::Next)
    }
}

fn frexp_exp(v: f32) -> i32 {
    let bits = v.to_bits();
    let e = ((bits >> 23) & 0xff) as i32;
    if e == 0 {
        let m = bits & 0x7f_ffff;
        -126 - (m.leading_zeros() as i32 - 9) + 1 - 1
    } else {
        e - 126
    }
}

fn f32_to_f16_rtz(x: f32) -> u16 {
    let r = f32_to_f16(x);
    // Round toward zero: step back when RNE rounded away from zero.
    let back = f16_to_f32(r);
    if x.is_finite() && back.is_finite() && back.abs() > x.abs() {
        r - 1
    } else if x.is_finite() && back.is_infinite() {
        (r & 0x8000) | 0x7bff
    } else {
        r
    }
}

impl Cx<'_, '_> {
    fn vop3p(&mut self, w: &mut Wave, inst: &Inst) -> Result<Flow, LaunchError> {
        let exec = Self::exec(w);
        let op = inst.op;
        match op {
            Op::v_accvgpr_read_b32 | Op::v_accvgpr_write_b32 => {
                let x = self.vread(w, inst, inst.src[0])?;
                self.vwrite(w, inst.dst, &x, exec)?;
            }
            Op::v_pk_mov_b32 => {
                let x = self.vread64(w, inst, inst.src[0], false)?;
                let y = self.vread64(w, inst, inst.src[1], false)?;
                let r: [u64; 64] = std::array::from_fn(|l| {
                    let lo = if inst.opsel & 1 != 0 { x[l] >> 32 } else { x[l] & 0xffff_ffff };
                    let hi = if inst.opsel & 2 != 0 { y[l] >> 32 } else { y[l] & 0xffff_ffff };
                    lo | hi << 32
                });
                self.vwrite64(w, inst.dst, &r, exec)?;
            }
            Op::v_pk_fma_f32 | Op::v_pk_mul_f32 | Op::v_pk_add_f32 => {
                let n = if op == Op::v_pk_fma_f32 { 3 } else { 2 };
                let mut s = [[0u64; 64]; 3];
                for (i, si) in s.iter_mut().enumerate().take(n) {
                    *si = self.vread64(w, inst, inst.src[i], false)?;
                }
                // Element e of source i: op_sel (e = 0) / op_sel_hi (e = 1) picks the dword;
                // neg_lo / neg_hi negate (VOP3P, CDNA3 ISA 7.x "packed math").
                let el = |i: usize, e: usize, l: usize| -> f32 {
                    let sel = if e == 0 { inst.opsel >> i & 1 } else { inst.opsel_hi >> i & 1 };
                    let v = f((s[i][l] >> (32 * u32::from(sel))) as u32);
                    let ng = if e == 0 { inst.neg >> i & 1 } else { inst.abs >> i & 1 };
                    if ng != 0 { -v } else { v }
                };
                let r: [u64; 64] = std::array::from_fn(|l| {
                    let mut out = 0u64;
                    for e in 0..2 {
                        let v = match op {
                            Op::v_pk_fma_f32 => el(0, e, l).mul_add(el(1, e, l), el(2, e, l)),
                            Op::v_pk_mul_f32 => el(0, e, l) * el(1, e, l),
                            _ => el(0, e, l) + el(1, e, l),
                        };
                        out |= u64::from(b(v)) << (32 * e);
                    }
                    out
                });
                self.vwrite64(w, inst.dst, &r, exec)?;
            }
            Op::v_fma_mix_f32 | Op::v_fma_mixlo_f16 | Op::v_fma_mixhi_f16 => {
                // Mixed precision FMA: source i is f32 when op_sel_hi[i] = 0, else the f16 half
                // op_sel[i] picks; neg_lo negates and neg_hi takes |x| (CDNA3 ISA V_FMA_MIX_F32).
                let mut v = [[0f32; 64]; 3];
                for (i, vi) in v.iter_mut().enumerate() {
                    let f16 = inst.opsel_hi >> i & 1 != 0;
                    let raw = if f16 { self.vread16(w, inst, inst.src[i])? } else { self.vread(w, inst, inst.src[i])? };
                    let hi = inst.opsel >> i & 1 != 0;
                    for l in 0..64 {
                        let mut x = if f16 { f16_to_f32((raw[l] >> if hi { 16 } else { 0 }) as u16) } else { f(raw[l]) };
                        if inst.abs >> i & 1 != 0 {
                            x = x.abs();
                        }
                        if inst.neg >> i & 1 != 0 {
                            x = -x;
                        }
                        vi[l] = x;
                    }
                }
                let clamp = inst.has_flag(flag::CLAMP);
                let old = self.vread(w, inst, inst.dst)?;
                let r: Lanes = std::array::from_fn(|l| {
                    let mut x = v[0][l].mul_add(v[1][l], v[2][l]);
                    if clamp {
                        x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
                    }
                    match op {
                        Op::v_fma_mix_f32 => b(x),
                        Op::v_fma_mixlo_f16 => (old[l] & 0xffff_0000) | u32::from(f32_to_f16(x)),
                        _ => (old[l] & 0xffff) | u32::from(f32_to_f16(x)) << 16,
                    }
                });
                self.vwrite(w, inst.dst, &r, exec)?;
            }
            _ if crate::decode::is_mai(op) => self.mfma(w, inst)?,
            _ if op.name().starts_with("v_pk_") => self.packed16(w, inst, exec)?,
            _ => return Err(self.unimpl(inst)),
        }
        Ok(Flow::Next)
    }

    /// Packed 16-bit VOP3P math: element e (0 = low, 1 = high) of source i is the half op_sel
    /// (e = 0) / op_sel_hi (e = 1) picks, negated by neg_lo / neg_hi for float ops.
    fn packed16(&mut self, w: &mut Wave, inst: &Inst, exec: u64) -> Result<(), LaunchError> {
        let op = inst.op;
        let nsrc = if matches!(op, Op::v_pk_fma_f16 | Op::v_pk_mad_i16 | Op::v_pk_mad_u16) { 3 } else { 2 };
        let mut s = [[0u32; 64]; 3];
        for (i, si) in s.iter_mut().enumerate().take(nsrc) {
            *si = self.vread16(w, inst, inst.src[i])?;
        }
        let half = |i: usize, e: usize, l: usize| -> u16 {
            let sel = if e == 0 { inst.opsel >> i & 1 } else { inst.opsel_hi >> i & 1 };
            (s[i][l] >> (16 * u32::from(sel))) as u16
        };
        let fh = |i: usize, e: usize, l: usize| -> f32 {
            let v = f16_to_f32(half(i, e, l));
            let ng = if e == 0 { inst.neg >> i & 1 } else { inst.abs >> i & 1 };
            if ng != 0 { -v } else { v }
        };
        let mut r = [0u32; 64];
        for l in 0..64 {
            let mut out = 0u32;
            for e in 0..2 {
                let (x, y) = (half(0, e, l), half(1, e, l));
                let v: u16 = match op {
                    Op::v_pk_add_f16 => f32_to_f16(fh(0, e, l) + fh(1, e, l)),
                    Op::v_pk_mul_f16 => f32_to_f16(fh(0, e, l) * fh(1, e, l)),
                    Op::v_pk_fma_f16 => f32_to_f16((f64::from(fh(0, e, l)) * f64::from(fh(1, e, l)) + f64::from(fh(2, e, l))) as f32),
                    Op::v_pk_max_f16 => f32_to_f16(f32_max(fh(0, e, l), fh(1, e, l))),
                    Op::v_pk_min_f16 => f32_to_f16(f32_min(fh(0, e, l), fh(1, e, l))),
                    Op::v_pk_add_u16 | Op::v_pk_add_i16 => x.wrapping_add(y),
                    Op::v_pk_sub_u16 | Op::v_pk_sub_i16 => x.wrapping_sub(y),
                    Op::v_pk_mul_lo_u16 => x.wrapping_mul(y),
                    Op::v_pk_lshlrev_b16 => y << (x & 15),
                    Op::v_pk_lshrrev_b16 => y >> (x & 15),
                    Op::v_pk_ashrrev_i16 => ((y as i16) >> (x & 15)) as u16,
                    Op::v_pk_max_u16 => x.max(y),
                    Op::v_pk_min_u16 => x.min(y),
                    Op::v_pk_max_i16 => (x as i16).max(y as i16) as u16,
                    Op::v_pk_min_i16 => (x as i16).min(y as i16) as u16,
                    Op::v_pk_mad_u16 => x.wrapping_mul(y).wrapping_add(half(2, e, l)),
                    Op::v_pk_mad_i16 => (x as i16).wrapping_mul(y as i16).wrapping_add(half(2, e, l) as i16) as u16,
                    _ => return Err(self.unimpl(inst)),
                };
                out |= u32::from(v) << (16 * e);
            }
            r[l] = out;
        }
        self.vwrite(w, inst.dst, &r, exec)
    }

    fn mfma(&mut self, w: &mut Wave, inst: &Inst) -> Result<(), LaunchError> {
        if self.st.skip_mfma_math {
            return Ok(());
        }
        // MFMA ignores EXEC (CDNA3 ISA 7.1: matrix instructions operate on all lanes).
        let op = inst.op;
        let name = op.name();
        let rows16 = name.contains("16x16");
        let nreg = if rows16 { 4 } else { 16 };
        let a = self.vread64(w, inst, inst.src[0], false)?;
        let bm = self.vread64(w, inst, inst.src[1], false)?;
        let mut craw = [[0u32; 16]; 64];
        for r in 0..nreg {
            let v = self.vread(w, inst, if inst.src[2] >= VGPR0 { inst.src[2] + r as u16 } else { inst.src[2] })?;
            for l in 0..64 {
                craw[l][r] = v[l];
            }
        }
        if crate::decode::is_f8f6f4(op) {
            return self.mfma_f8f6f4(w, inst, &craw);
        }
        if inst.abs != 0 || inst.opsel != 0 || inst.neg != 0 {
            return Err(self.unimpl(inst));
        }
        if matches!(op, Op::v_mfma_i32_16x16x32_i8 | Op::v_mfma_i32_32x32x16_i8) {
            // Integer MFMA: i32 accumulators, exact (CDNA3 ISA opcodes 87 / 86). The clamp bit
            // (saturation) is not modelled: a typed error, not a silent wrap.
            if inst.has_flag(flag::CLAMP) {
                return Err(self.unimpl(inst));
            }
            let out: Vec<[i32; 16]> = if rows16 {
                let c: [[i32; 4]; 64] = std::array::from_fn(|l| std::array::from_fn(|r| craw[l][r] as i32));
                numerics::mfma_i32_16x16x32_i8(&a, &bm, &c).iter().map(|x| std::array::from_fn(|r| if r < 4 { x[r] } else { 0 })).collect()
            } else {
                let c: [[i32; 16]; 64] = std::array::from_fn(|l| craw[l].map(|x| x as i32));
                numerics::mfma_i32_32x32x16_i8(&a, &bm, &c).to_vec()
            };
            for r in 0..nreg {
                let v: Lanes = std::array::from_fn(|l| out[l][r] as u32);
                self.vwrite(w, inst.dst + r as u16, &v, u64::MAX)?;
            }
            return Ok(());
        }
        let c16: [[f32; 16]; 64] = std::array::from_fn(|l| craw[l].map(f));
        let out: Vec<[f32; 16]> = if name.ends_with("fp8_fp8") || name.ends_with("fp8_bf8") || name.ends_with("bf8_fp8") || name.ends_with("bf8_bf8") {
            let (ka, kb) = f8kinds(op, self.st.program.ocp);
            if rows16 {
                let c: [[f32; 4]; 64] = std::array::from_fn(|l| [c16[l][0], c16[l][1], c16[l][2], c16[l][3]]);
                numerics::mfma_f32_16x16x32_f8(&a, &bm, &c, ka, kb).iter().map(pad16).collect()
            } else {
                numerics::mfma_f32_32x32x16_f8(&a, &bm, &c16, ka, kb).to_vec()
            }
        } else {
            let c4: [[f32; 4]; 64] = std::array::from_fn(|l| [c16[l][0], c16[l][1], c16[l][2], c16[l][3]]);
            match op {
                Op::v_mfma_f32_16x16x16_bf16 => numerics::mfma_f32_16x16x16_bf16(&a, &bm, &c4).iter().map(pad16).collect(),
                Op::v_mfma_f32_32x32x8_bf16 => numerics::mfma_f32_32x32x8_bf16(&a, &bm, &c16).to_vec(),
                Op::v_mfma_f32_16x16x16_f16 => numerics::mfma_f32_16x16x16_f16(&a, &bm, &c4).iter().map(pad16).collect(),
                Op::v_mfma_f32_32x32x8_f16 => numerics::mfma_f32_32x32x8_f16(&a, &bm, &c16).to_vec(),
                Op::v_mfma_f32_16x16x4_f32 | Op::v_mfma_f32_32x32x2_f32 => {
                    let af: [f32; 64] = std::array::from_fn(|l| f(a[l] as u32));
                    let bf: [f32; 64] = std::array::from_fn(|l| f(bm[l] as u32));
                    if rows16 {
                        numerics::mfma_f32_16x16x4_f32(&af, &bf, &c4).iter().map(pad16).collect()
                    } else {
                        numerics::mfma_f32_32x32x2_f32(&af, &bf, &c16).to_vec()
                    }
                }
                _ => return Err(self.unimpl(inst)),
            }
        };
        for r in 0..nreg {
            let v: Lanes = std::array::from_fn(|l| b(out[l][r]));
            self.vwrite(w, inst.dst + r as u16, &v, u64::MAX)?;
        }
        Ok(())
    }

    /// gfx950 `v_mfma_f32_{16x16x128,32x32x64}_f8f6f4`: A / B formats from `cbsz` / `blgp`
    /// ([`numerics::F8f6f4Format`]), each source as many VGPRs as its format needs; `craw` is C.
    fn mfma_f8f6f4(&mut self, w: &mut Wave, inst: &Inst, craw: &[[u32; 16]; 64]) -> Result<(), LaunchError> {
        let (Some(fa), Some(fb)) = (numerics::F8f6f4Format::from_field(inst.abs), numerics::F8f6f4Format::from_field(inst.neg)) else {
            return Err(
                self.fault(format!("{}: reserved operand format cbsz:{} blgp:{} (0..=4 are FP8, BF8, FP6, BF6, FP4)", inst.info.name, inst.abs, inst.neg))
            );
        };
        if inst.opsel != 0 || inst.src[0] < VGPR0 || inst.src[1] < VGPR0 {
            return Err(self.unimpl(inst));
        }
        // v_mfma_scale_*: E8M0 block scales of A and B, one byte per lane (op_sel-selected).
        // Model: only scales that are the same in every lane are executed (then every K block
        // of every row / column has that scale, whatever the lane ↔ block assignment is); the
        // product of each element pair is multiplied by 2^(sa − 127) · 2^(sb − 127), which
        // equals scaling each block's dot product before accumulation (the blog's "applied after
        // the normal dot product and prior to accumulation") unless a scaled value leaves the
        // f32 range. Per-lane-different scales are a typed error (their block assignment is not
        // modelled yet).
        let mut scale_exp = [0i32; 2];
        if inst.has_flag(flag::MFMA_SCALE) {
            for (k, (code, byte)) in inst.mfma_scale_srcs().into_iter().enumerate() {
                let v = self.vread(w, inst, code)?;
                let e = (v[0] >> (8 * byte)) & 0xff;
                if v.iter().any(|&x| (x >> (8 * byte)) & 0xff != e) {
                    let mut err = self.unimpl(inst);
                    if let LaunchError::Unimplemented { text, .. } = &mut err {
                        text.push_str(" (block scales that differ between lanes are not modelled)");
                    }
                    return Err(err);
                }
                // E8M0: 2^(e − 127); 0xFF is NaN (i32::MAX marks it).
                scale_exp[k] = if e == 0xff { i32::MAX } else { e as i32 - 127 };
            }
        }
        let mut ops = [[[0u32; 8]; 64]; 2];
        for (k, code) in [inst.src[0], inst.src[1]].into_iter().enumerate() {
            for r in 0..usize::from(numerics::F8f6f4Format::regs_of_field(if k == 0 { inst.abs } else { inst.neg })) {
                let v = self.vread(w, inst, code + r as u16)?;
                for l in 0..64 {
                    ops[k][l][r] = v[l];
                }
            }
        }
        let rows16 = inst.op == Op::v_mfma_f32_16x16x128_f8f6f4;
        let c16: [[f32; 16]; 64] = std::array::from_fn(|l| craw[l].map(f));
        let out: Vec<[f32; 16]> = if rows16 {
            let c: [[f32; 4]; 64] = std::array::from_fn(|l| [c16[l][0], c16[l][1], c16[l][2], c16[l][3]]);
            numerics::mfma_scale_f32_16x16x128_f8f6f4(&ops[0], &ops[1], &c, fa, fb, scale_exp).iter().map(pad16).collect()
        } else {
            numerics::mfma_scale_f32_32x32x64_f8f6f4(&ops[0], &ops[1], &c16, fa, fb, scale_exp).to_vec()
        };
        for r in 0..if rows16 { 4 } else { 16 } {
            let v: Lanes = std::array::from_fn(|l| b(out[l][r]));
            self.vwrite(w, inst.dst + r as u16, &v, u64::MAX)?;
        }
        Ok(())
    }

    fn lds_check(&self, w: &Wave, inst: &Inst, lane: usize, addr: u64, len: u64) -> Result<usize, LaunchError> {
        if addr.checked_add(len).is_none_or(|end| end > self.lds.len() as u64) {
            return Err(self.memerr(inst, w, lane as u32, "LDS", addr, len, format!("outside the launch's {} bytes of LDS", self.lds.len())));
        }
        Ok(addr as usize)
    }

    fn ds(&mut self, w: &mut Wave, inst: &Inst) -> Result<Flow, LaunchError> {
        let exec = Self::exec(w);
        let op = inst.op;
        let addr = self.vread(w, inst, inst.src[0])?;
        let off = inst.imm as u32;
        match op {
            Op::ds_read_b32 | Op::ds_read_b64 | Op::ds_read_b96 | Op::ds_read_b128 | Op::ds_read_u8 | Op::ds_read_i8 | Op::ds_read_u16 | Op::ds_read_i16 => {
                let n: usize = match op {
                    Op::ds_read_b64 => 8,
                    Op::ds_read_b96 => 12,
                    Op::ds_read_b128 => 16,
                    Op::ds_read_u8 | Op::ds_read_i8 => 1,
                    Op::ds_read_u16 | Op::ds_read_i16 => 2,
                    _ => 4,
                };
                let regs = n.div_ceil(4);
                let mut out = [[0u32; 64]; 4];
                lanes!(exec, |l| {
                    let a = u64::from(addr[l].wrapping_add(off));
                    let p = self.lds_check(w, inst, l, a, n as u64)?;
                    let mut buf = [0u8; 16];
                    buf[..n].copy_from_slice(&self.lds[p..p + n]);
                    for (k, o) in out.iter_mut().enumerate().take(regs) {
                        o[l] = u32::from_le_bytes(buf[k * 4..k * 4 + 4].try_into().expect("4"));
                    }
                    out[0][l] = match op {
                        Op::ds_read_i8 => buf[0] as i8 as i32 as u32,
                        Op::ds_read_i16 => u16::from_le_bytes([buf[0], buf[1]]) as i16 as i32 as u32,
                        _ => out[0][l],
                    };
                });
                for (k, o) in out.iter().enumerate().take(regs) {
                    self.land(w, Counter::Lgkm, inst.dst + k as u16, o, exec)?;
                }
            }
            Op::ds_read_b64_tr_b8 | Op::ds_read_b64_tr_b16 => {
                // gfx950 transposing LDS reads (decoded only for gfx950). Within each group of
                // 16 lanes, every lane addresses 8 bytes = E elements (E = 8 for b8, 4 for b16);
                // the group's loads form an E×16 tile whose row r is the loads of lanes
                // R·r .. R·r + R − 1 (R = 16 / E), and lane j receives column j: element r of
                // its result is element j mod E of the load of lane R·r + ⌊j / E⌋. For b8 that
                // is the two interleaved 8×8 byte transposes, for b16 the 4×16 tile of which
                // each lane gets a column (LLVM `IntrinsicsAMDGPU.td` `int_amdgcn_ds_read_tr{8,16}_b64`;
                // Modular's `ds_read_tr8_b64` / `ds_read_tr16_b64_row` documentation; AMD CDNA4
                // ISA, "DS_READ_B64_TR_B8/B16").
                // Model: lanes outside EXEC load nothing (their part of the tile reads as 0).
                let (ebits, e) = if op == Op::ds_read_b64_tr_b8 { (8usize, 8usize) } else { (16, 4) };
                let rows = 16 / e;
                let mut loads = [0u64; 64];
                lanes!(exec, |l| {
                    let a = u64::from(addr[l].wrapping_add(off));
                    let p = self.lds_check(w, inst, l, a, 8)?;
                    loads[l] = u64::from_le_bytes(self.lds[p..p + 8].try_into().expect("8"));
                });
                let mask = (1u64 << ebits) - 1;
                let mut out = [[0u32; 64]; 2];
                for l in 0..64 {
                    let (base, j) = (l & !15, l & 15);
                    let mut v = 0u64;
                    for r in 0..e {
                        let src = loads[base + rows * r + j / e];
                        v |= ((src >> (ebits * (j % e))) & mask) << (ebits * r);
                    }
                    out[0][l] = v as u32;
                    out[1][l] = (v >> 32) as u32;
                }
                for (k, o) in out.iter().enumerate() {
                    self.land(w, Counter::Lgkm, inst.dst + k as u16, o, exec)?;
                }
            }
            Op::ds_read_u8_d16 | Op::ds_read_u8_d16_hi | Op::ds_read_i8_d16 | Op::ds_read_i8_d16_hi | Op::ds_read_u16_d16 | Op::ds_read_u16_d16_hi => {
                let tail =
                    op.name().trim_start_matches("ds_").replace("read_u16", "load_short").replace("read_u8", "load_ubyte").replace("read_i8", "load_sbyte");
                let shape = MemShape::parse(&tail).ok_or_else(|| self.unimpl(inst))?;
                let old = self.vread(w, inst, inst.dst)?;
                let mut out = [[0u32; 64]; 4];
                lanes!(exec, |l| {
                    let a = u64::from(addr[l].wrapping_add(off));
                    let p = self.lds_check(w, inst, l, a, shape.n as u64)?;
                    let mut buf = [0u8; 16];
                    buf[..shape.n].copy_from_slice(&self.lds[p..p + shape.n]);
                    shape.load_result(&buf, old[l], &mut out, l);
                });
                self.land(w, Counter::Lgkm, inst.dst, &out[0], exec)?;
            }
            Op::ds_write_b8_d16_hi | Op::ds_write_b16_d16_hi => {
                let n = if op == Op::ds_write_b8_d16_hi { 1 } else { 2 };
                let data = self.vread(w, inst, inst.src[1])?;
                lanes!(exec, |l| {
                    let a = u64::from(addr[l].wrapping_add(off));
                    let p = self.lds_check(w, inst, l, a, n as u64)?;
                    let bytes = (data[l] >> 16).to_le_bytes();
                    self.lds[p..p + n].copy_from_slice(&bytes[..n]);
                });
            }
            Op::ds_write_b32 | Op::ds_write_b64 | Op::ds_write_b96 | Op::ds_write_b128 | Op::ds_write_b8 | Op::ds_write_b16 => {
                let n: usize = match op {
                    Op::ds_write_b64 => 8,
                    Op::ds_write_b96 => 12,
                    Op::ds_write_b128 => 16,
                    Op::ds_write_b8 => 1,
                    Op::ds_write_b16 => 2,
                    _ => 4,
                };
                let mut data = [[0u32; 64]; 4];
                for (k, d) in data.iter_mut().enumerate().take(n.div_ceil(4)) {
                    *d = self.vread(w, inst, inst.src[1] + k as u16)?;
                }
                lanes!(exec, |l| {
                    let a = u64::from(addr[l].wrapping_add(off));
                    let p = self.lds_check(w, inst, l, a, n as u64)?;
                    let mut buf = [0u8; 16];
                    for k in 0..4 {
                        buf[k * 4..k * 4 + 4].copy_from_slice(&data[k][l].to_le_bytes());
                    }
                    self.lds[p..p + n].copy_from_slice(&buf[..n]);
                });
            }
            Op::ds_read2_b32 | Op::ds_read2_b64 | Op::ds_read2st64_b32 | Op::ds_read2st64_b64 => {
                let n = if matches!(op, Op::ds_read2_b64 | Op::ds_read2st64_b64) { 8 } else { 4 };
                let stride = n as u32 * if matches!(op, Op::ds_read2st64_b32 | Op::ds_read2st64_b64) { 64 } else { 1 };
                let regs = n / 4;
                let mut out = [[0u32; 64]; 4];
                lanes!(exec, |l| {
                    for (e, o) in [inst.imm as u32, u32::from(inst.offset1)].into_iter().enumerate() {
                        let a = u64::from(addr[l].wrapping_add(o * stride));
                        let p = self.lds_check(w, inst, l, a, n as u64)?;
                        for k in 0..regs {
                            out[e * regs + k][l] = u32::from_le_bytes(self.lds[p + 4 * k..p + 4 * k + 4].try_into().expect("4"));
                        }
                    }
                });
                for (k, o) in out.iter().enumerate().take(2 * regs) {
                    self.land(w, Counter::Lgkm, inst.dst + k as u16, o, exec)?;
                }
            }
            Op::ds_write2_b32 | Op::ds_write2_b64 | Op::ds_write2st64_b32 | Op::ds_write2st64_b64 => {
                let n = if matches!(op, Op::ds_write2_b64 | Op::ds_write2st64_b64) { 8 } else { 4 };
                let stride = n as u32 * if matches!(op, Op::ds_write2st64_b32 | Op::ds_write2st64_b64) { 64 } else { 1 };
                let regs = n / 4;
                let mut d = [[[0u32; 64]; 2]; 2];
                for k in 0..regs {
                    d[0][k] = self.vread(w, inst, inst.src[1] + k as u16)?;
                    d[1][k] = self.vread(w, inst, inst.src[2] + k as u16)?;
                }
                lanes!(exec, |l| {
                    for (e, o) in [inst.imm as u32, u32::from(inst.offset1)].into_iter().enumerate() {
                        let a = u64::from(addr[l].wrapping_add(o * stride));
                        let p = self.lds_check(w, inst, l, a, n as u64)?;
                        for k in 0..regs {
                            self.lds[p + 4 * k..p + 4 * k + 4].copy_from_slice(&d[e][k][l].to_le_bytes());
                        }
                    }
                });
            }
            Op::ds_swizzle_b32 => {
                // The value comes from the ADDR VGPR; offset selects QUAD_PERM (bit 15) or
                // BITMASK_PERM within 32-lane halves (CDNA3 ISA DS_SWIZZLE_B32). Inactive
                // source lanes read 0.
                let imm = inst.imm as u32 & 0xffff;
                let mut out = [0u32; 64];
                lanes!(exec, |l| {
                    let src = if imm & 0x8000 != 0 {
                        (l & !3) | ((imm >> (2 * (l & 3))) & 3) as usize
                    } else {
                        let (and, or, xor) = (imm & 0x1f, (imm >> 5) & 0x1f, (imm >> 10) & 0x1f);
                        (l & 0x20) | ((((l as u32 & 0x1f) & and) | or) ^ xor) as usize
                    };
                    out[l] = if exec >> src & 1 != 0 { addr[src] } else { 0 };
                });
                self.vwrite(w, inst.dst, &out, exec)?;
            }
            Op::ds_bpermute_b32 | Op::ds_permute_b32 => {
                // Lane l reads (bpermute) / writes (permute) lane ((addr + offset) >> 2) & 63; a
                // bpermute from an inactive lane reads 0 on gfx9 (ISA 12.13 DS_BPERMUTE_B32).
                let data = self.vread(w, inst, inst.src[1])?;
                let mut out = [0u32; 64];
                if op == Op::ds_bpermute_b32 {
                    lanes!(exec, |l| {
                        let src = ((addr[l].wrapping_add(off) >> 2) & 63) as usize;
                        out[l] = if exec >> src & 1 != 0 { data[src] } else { 0 };
                    });
                } else {
                    lanes!(exec, |l| {
                        let dst = ((addr[l].wrapping_add(off) >> 2) & 63) as usize;
                        out[dst] = data[l];
                    });
                }
                self.vwrite(w, inst.dst, &out, exec)?;
            }
            _ => {
                // 32-bit LDS atomics, with and without return.
                let name = op.name();
                let rtn = name.contains("_rtn_");
                let base = name.trim_start_matches("ds_").replace("_rtn", "");
                let data = self.vread(w, inst, inst.src[1])?;
                let data2 = self.vread(w, inst, inst.src[2])?;
                let mut out = [0u32; 64];
                let known = matches!(
                    base.as_str(),
                    "add_u32"
                        | "sub_u32"
                        | "rsub_u32"
                        | "inc_u32"
                        | "dec_u32"
                        | "min_i32"
                        | "max_i32"
                        | "min_u32"
                        | "max_u32"
                        | "and_b32"
                        | "or_b32"
                        | "xor_b32"
                        | "wrxchg_b32"
                        | "cmpst_b32"
                        | "add_f32"
                        | "min_f32"
                        | "max_f32"
                );
                if !known {
                    return Err(self.unimpl(inst));
                }
                lanes!(exec, |l| {
                    let a = u64::from(addr[l].wrapping_add(off));
                    let p = self.lds_check(w, inst, l, a, 4)?;
                    let old = u32::from_le_bytes(self.lds[p..p + 4].try_into().expect("4"));
                    let (x, y) = (data[l], data2[l]);
                    let new = match base.as_str() {
                        "add_u32" => old.wrapping_add(x),
                        "sub_u32" => old.wrapping_sub(x),
                        "rsub_u32" => x.wrapping_sub(old),
                        "inc_u32" => {
                            if old >= x {
                                0
                            } else {
                                old + 1
                            }
                        }
                        "dec_u32" => {
                            if old == 0 || old > x {
                                x
                            } else {
                                old - 1
                            }
                        }
                        "min_i32" => (old as i32).min(x as i32) as u32,
                        "max_i32" => (old as i32).max(x as i32) as u32,
                        "min_u32" => old.min(x),
                        "max_u32" => old.max(x),
                        "and_b32" => old & x,
                        "or_b32" => old | x,
                        "xor_b32" => old ^ x,
                        "wrxchg_b32" => x,
                        "cmpst_b32" => {
                            if old == x {
                                y
                            } else {
                                old
                            }
                        }
                        "add_f32" => b(f(old) + f(x)),
                        "min_f32" => b(f32_min(f(old), f(x))),
                        _ => b(f32_max(f(old), f(x))),
                    };
                    self.lds[p..p + 4].copy_from_slice(&new.to_le_bytes());
                    out[l] = old;
                });
                if rtn {
                    self.vwrite(w, inst.dst, &out, exec)?;
                }
            }
        }
        Ok(Flow::Next)
    }

    /// One lane's flat/global/scratch access of `n` bytes at `addr` (`data` in for stores, out
    /// for loads). `scratch_off` is set for scratch-segment instructions.
    #[allow(clippy::too_many_arguments)]
    fn lane_access(&mut self, w: &mut Wave, inst: &Inst, l: usize, addr: u64, buf: &mut [u8], store: bool, scratch: bool) -> Result<(), LaunchError> {
        let n = buf.len() as u64;
        let (private, a) = if scratch {
            (true, addr)
        } else if (PRIVATE_APERTURE..PRIVATE_APERTURE + (1 << 32)).contains(&addr) {
            (true, addr - PRIVATE_APERTURE)
        } else if inst.enc == Enc::Flat && (SHARED_APERTURE..SHARED_APERTURE + (1 << 32)).contains(&addr) {
            let p = self.lds_check(w, inst, l, addr - SHARED_APERTURE, n)?;
            if store {
                self.lds[p..p + buf.len()].copy_from_slice(buf);
            } else {
                buf.copy_from_slice(&self.lds[p..p + buf.len()]);
            }
            return Ok(());
        } else {
            (false, addr)
        };
        if private {
            let size = u64::from(w.private_size);
            if a.checked_add(n).is_none_or(|end| end > size) {
                return Err(self.memerr(inst, w, l as u32, "scratch", a, n, format!("outside the {size} bytes of private memory per lane")));
            }
            let p = l * w.private_size as usize + a as usize;
            if store {
                w.private[p..p + buf.len()].copy_from_slice(buf);
            } else {
                buf.copy_from_slice(&w.private[p..p + buf.len()]);
            }
            return Ok(());
        }
        if store { self.global_write(w, inst, l as u32, "global", a, buf) } else { self.global_read(w, inst, l as u32, "global", a, buf) }
    }

    fn flat(&mut self, w: &mut Wave, inst: &Inst) -> Result<Flow, LaunchError> {
        let exec = Self::exec(w);
        let name = inst.op.name();
        let scratch = inst.enc == Enc::Scratch;
        // Per-lane address (CDNA3 ISA 10.x "Flat, Global and Scratch addressing").
        let saddr_on = inst.src[2] != 0x7f;
        let mut addrs: [u64; 64] = match inst.enc {
            Enc::Flat => self.vread64(w, inst, inst.src[0], false)?,
            Enc::Global if saddr_on => {
                let s = self.sread64(w, inst, inst.src[2], false);
                let v = self.vread(w, inst, inst.src[0])?;
                std::array::from_fn(|l| s.wrapping_add(u64::from(v[l])))
            }
            Enc::Global => self.vread64(w, inst, inst.src[0], false)?,
            _ => {
                let s = if saddr_on { u64::from(self.sread(w, inst, inst.src[2])) } else { 0 };
                let v = if inst.has_flag(flag::SVE) { self.vread(w, inst, inst.src[0])? } else { [0; 64] };
                std::array::from_fn(|l| (s.wrapping_add(u64::from(v[l]))) & 0xffff_ffff)
            }
        };
        for a in addrs.iter_mut() {
            *a = a.wrapping_add_signed(i64::from(inst.imm));
        }
        let op_tail = name.split_once('_').map_or("", |(_, t)| t);
        if op_tail.starts_with("atomic_") {
            return self.flat_atomic(w, inst, &addrs, op_tail, exec, scratch);
        }
        let lds_bytes = match op_tail {
            "load_lds_dword" => 4,
            // gfx950 only (the gfx942 decoder does not know these opcodes).
            "load_lds_dwordx3" => 12,
            "load_lds_dwordx4" => 16,
            _ => 0,
        };
        if lds_bytes != 0 && inst.enc == Enc::Global {
            // LDS address = M0 + inst_offset + TIDinWave * size (the offset applies to both
            // addresses; CDNA3 ISA 9.1.9 for the dword form, LLVM `IntrinsicsAMDGPU.td`
            // `int_amdgcn_global_load_lds`: data sizes 12 and 16 on gfx950 with the same
            // lane-contiguous LDS layout).
            let m0 = u64::from(w.s[sreg::M0 as usize]);
            lanes!(exec, |l| {
                let mut buf = [0u8; 16];
                self.lane_access(w, inst, l, addrs[l], &mut buf[..lds_bytes], false, false)?;
                let la = m0.wrapping_add_signed(i64::from(inst.imm)).wrapping_add((lds_bytes * l) as u64);
                let p = self.lds_check(w, inst, l, la, lds_bytes as u64)?;
                self.lds[p..p + lds_bytes].copy_from_slice(&buf[..lds_bytes]);
            });
            return Ok(Flow::Next);
        }
        let Some(shape) = MemShape::parse(op_tail) else { return Err(self.unimpl(inst)) };
        let n = shape.n;
        let regs = n.div_ceil(4);
        if shape.store {
            let mut d = [[0u32; 64]; 4];
            for (k, dk) in d.iter_mut().enumerate().take(regs) {
                *dk = self.vread(w, inst, inst.src[1] + k as u16)?;
            }
            lanes!(exec, |l| {
                let buf = shape.store_bytes(&d, l);
                let mut buf = buf;
                self.lane_access(w, inst, l, addrs[l], &mut buf[..n], true, scratch)?;
            });
        } else {
            let old = if shape.d16.is_some() { self.vread(w, inst, inst.dst)? } else { [0; 64] };
            let mut out = [[0u32; 64]; 4];
            lanes!(exec, |l| {
                let mut buf = [0u8; 16];
                self.lane_access(w, inst, l, addrs[l], &mut buf[..n], false, scratch)?;
                shape.load_result(&buf, old[l], &mut out, l);
            });
            for (k, o) in out.iter().enumerate().take(regs) {
                self.land(w, Counter::Vm, inst.dst + k as u16, o, exec)?;
            }
        }
        Ok(Flow::Next)
    }

    fn flat_atomic(&mut self, w: &mut Wave, inst: &Inst, addrs: &[u64; 64], kind: &str, exec: u64, scratch: bool) -> Result<Flow, LaunchError> {
        // Lanes are applied in lane order (one valid serialization of the wave's atomics); each
        // read-modify-write holds a lock striped by address so workgroups running on other host
        // threads cannot interleave with it.
        let wide = kind.ends_with("_x2");
        let base = kind.trim_end_matches("_x2");
        let n: usize = if wide { 8 } else { 4 };
        let regs = n / 4;
        let cmp = base == "atomic_cmpswap";
        let mut data = [[0u32; 64]; 4];
        for (k, d) in data.iter_mut().enumerate().take(if cmp { 2 * regs } else { regs }) {
            *d = self.vread(w, inst, inst.src[1] + k as u16)?;
        }
        let known = matches!(
            base,
            "atomic_add"
                | "atomic_sub"
                | "atomic_add_f32"
                | "atomic_pk_add_bf16"
                | "atomic_pk_add_f16"
                | "atomic_umax"
                | "atomic_umin"
                | "atomic_smax"
                | "atomic_smin"
                | "atomic_or"
                | "atomic_and"
                | "atomic_xor"
                | "atomic_swap"
                | "atomic_cmpswap"
                | "atomic_inc"
                | "atomic_dec"
        );
        if !known || (wide && matches!(base, "atomic_add_f32" | "atomic_pk_add_bf16" | "atomic_pk_add_f16")) {
            return Err(self.unimpl(inst));
        }
        let mut out = [[0u32; 64]; 2];
        lanes!(exec, |l| {
            let _guard = atomic_lock(addrs[l]);
            let mut buf = [0u8; 8];
            self.lane_access(w, inst, l, addrs[l], &mut buf[..n], false, scratch)?;
            let old = u64::from_le_bytes(buf);
            let lane = |k: usize| -> u64 { if wide { u64::from(data[2 * k][l]) | u64::from(data[2 * k + 1][l]) << 32 } else { u64::from(data[k][l]) } };
            let x = lane(0);
            let mask = if wide { u64::MAX } else { u64::from(u32::MAX) };
            let sx = |v: u64| if wide { v as i64 } else { i64::from(v as u32 as i32) };
            let new = match base {
                "atomic_add" => old.wrapping_add(x) & mask,
                "atomic_sub" => old.wrapping_sub(x) & mask,
                "atomic_add_f32" => u64::from(b(f(old as u32) + f(x as u32))),
                // Packed 16-bit float adds: each half widened exactly to f32, added, rounded to
                // nearest even (Model: the ISA guide names the operation only; RNE with
                // denormals kept is this emulator's choice).
                "atomic_pk_add_bf16" => u64::from(pk16(old as u32, x as u32, |h| half::bf16::from_bits(h).to_f32(), |v| half::bf16::from_f32(v).to_bits())),
                "atomic_pk_add_f16" => u64::from(pk16(old as u32, x as u32, |h| half::f16::from_bits(h).to_f32(), |v| half::f16::from_f32(v).to_bits())),
                "atomic_umax" => old.max(x),
                "atomic_umin" => old.min(x),
                "atomic_smax" => {
                    if sx(x) > sx(old) {
                        x
                    } else {
                        old
                    }
                }
                "atomic_smin" => {
                    if sx(x) < sx(old) {
                        x
                    } else {
                        old
                    }
                }
                "atomic_or" => old | x,
                "atomic_and" => old & x,
                "atomic_xor" => old ^ x,
                "atomic_swap" => x,
                "atomic_inc" => {
                    if old >= x {
                        0
                    } else {
                        old + 1
                    }
                }
                "atomic_dec" => {
                    if old == 0 || old > x {
                        x
                    } else {
                        old - 1
                    }
                }
                // data = {src, cmp}: store src if old == cmp.
                _ => {
                    if old == lane(1) {
                        x
                    } else {
                        old
                    }
                }
            };
            let mut nb = new.to_le_bytes();
            self.lane_access(w, inst, l, addrs[l], &mut nb[..n], true, scratch)?;
            out[0][l] = old as u32;
            out[1][l] = (old >> 32) as u32;
        });
        // SC0 (glc) returns the pre-operation value.
        if inst.has_flag(flag::SC0) {
            for (k, o) in out.iter().enumerate().take(regs) {
                self.land(w, Counter::Vm, inst.dst + k as u16, o, exec)?;
            }
        }
        Ok(Flow::Next)
    }

    fn mubuf(&mut self, w: &mut Wave, inst: &Inst) -> Result<Flow, LaunchError> {
        let exec = Self::exec(w);
        let name = inst.op.name();
        let tail = name.strip_prefix("buffer_").unwrap_or("");
        let Some(shape) = MemShape::parse(tail) else { return Err(self.unimpl(inst)) };
        let (n, store) = (shape.n, shape.store);
        // Loads to LDS: the dword form, and on gfx950 dwordx3 / dwordx4 (CDNA3 ISA 9.1.9 gives
        // the LDS address as LDSbase + M0 + inst_offset + TIDinWave * 4; LLVM
        // `IntrinsicsAMDGPU.td` `int_amdgcn_raw_ptr_buffer_load_lds` allows sizes 12 and 16 on
        // gfx950, lane-contiguous: TIDinWave * size). The byte/short forms are not modelled.
        let to_lds = inst.has_flag(flag::LDS);
        let wide_lds_ok = self.st.program.target == crate::loader::Target::Gfx950 && matches!(n, 12 | 16);
        if to_lds && (store || !(n == 4 || wide_lds_ok) || shape.d16.is_some()) {
            return Err(self.unimpl(inst));
        }
        // V# and the addressing / range-checking rule: exec/buffer.rs (shared with checks.rs).
        let r = inst.src[2] as usize;
        let rsrc = Rsrc::new([w.s[r & 127], w.s[(r + 1) & 127], w.s[(r + 2) & 127], w.s[(r + 3) & 127]]);
        if rsrc.check().is_err() {
            let mut e = self.unimpl(inst);
            if let LaunchError::Unimplemented { text, .. } = &mut e {
                text.push_str(" (swizzle_enable set in the buffer resource: swizzled addressing is not modelled)");
            }
            return Err(e);
        }
        let soff = self.sread(w, inst, inst.sdst);
        let v0 = self.vread(w, inst, inst.src[0])?;
        let v1 = self.vread(w, inst, inst.src[0] + 1).unwrap_or([0; 64]);
        let offen = inst.has_flag(flag::OFFEN);
        let idxen = inst.has_flag(flag::IDXEN);
        let dwords = n >= 4 && shape.d16.is_none();
        let regs = n.div_ceil(4);
        let mut d = [[0u32; 64]; 4];
        if store {
            for (k, dk) in d.iter_mut().enumerate().take(regs) {
                *dk = self.vread(w, inst, inst.dst + k as u16)?;
            }
        }
        let old = if shape.d16.is_some() && !store { self.vread(w, inst, inst.dst)? } else { [0; 64] };
        let mut out = [[0u32; 64]; 4];
        lanes!(exec, |l| {
            let voff = if idxen { v1[l] } else { v0[l] };
            let a = rsrc.lane(idxen, offen, v0[l], voff, inst.imm as u64, soff, l, n as u64, dwords);
            // Out-of-range bytes: loads read 0, stores drop them.
            let k = a.in_range as usize;
            if store {
                let buf = shape.store_bytes(&d, l);
                if k > 0 {
                    self.global_write(w, inst, l as u32, "buffer", a.addr, &buf[..k])?;
                }
            } else {
                let mut buf = [0u8; 16];
                if k > 0 {
                    self.global_read(w, inst, l as u32, "buffer", a.addr, &mut buf[..k])?;
                }
                if to_lds {
                    let la = u64::from(w.s[sreg::M0 as usize]) + inst.imm as u64 + (n * l) as u64;
                    let p = self.lds_check(w, inst, l, la, n as u64)?;
                    self.lds[p..p + n].copy_from_slice(&buf[..n]);
                } else {
                    shape.load_result(&buf, old[l], &mut out, l);
                }
            }
        });
        if !store && !to_lds {
            for (k, o) in out.iter().enumerate().take(regs) {
                self.land(w, Counter::Vm, inst.dst + k as u16, o, exec)?;
            }
        }
        Ok(Flow::Next)
    }
}

/// Size and kind of a FLAT/GLOBAL/SCRATCH/MUBUF load or store, parsed from the mnemonic tail
/// (`load_ushort`, `store_dwordx4`, `load_short_d16_hi`, ...).
#[derive(Clone, Copy, Debug)]
struct MemShape {
    n: usize,
    store: bool,
    signed: bool,
    /// D16 form: `Some(false)` writes/reads the low 16 bits, `Some(true)` the high 16 bits; the
    /// other half of the destination is preserved (gfx9 D16 loads preserve unused bits).
    d16: Option<bool>,
}

impl MemShape {
    fn parse(tail: &str) -> Option<MemShape> {
        let (t, d16) = if let Some(t) = tail.strip_suffix("_d16_hi") {
            (t, Some(true))
        } else if let Some(t) = tail.strip_suffix("_d16") {
            (t, Some(false))
        } else {
            (tail, None)
        };
        let (n, store, signed) = match t {
            "load_ubyte" => (1, false, false),
            "load_sbyte" => (1, false, true),
            "load_ushort" => (2, false, false),
            "load_sshort" => (2, false, true),
            "load_short" if d16.is_some() => (2, false, false),
            "load_dword" => (4, false, false),
            "load_dwordx2" => (8, false, false),
            "load_dwordx3" => (12, false, false),
            "load_dwordx4" => (16, false, false),
            "store_byte" => (1, true, false),
            "store_short" => (2, true, false),
            "store_dword" => (4, true, false),
            "store_dwordx2" => (8, true, false),
            "store_dwordx3" => (12, true, false),
            "store_dwordx4" => (16, true, false),
            _ => return None,
        };
        if d16.is_some() && n > 2 {
            return None;
        }
        Some(MemShape { n, store, signed, d16 })
    }

    /// The bytes lane `l` stores (`*_d16_hi` stores take the high half of the data VGPR).
    fn store_bytes(&self, d: &[[u32; 64]; 4], l: usize) -> [u8; 16] {
        let mut buf = [0u8; 16];
        for k in 0..4 {
            let v = if k == 0 && self.d16 == Some(true) { d[0][l] >> 16 } else { d[k][l] };
            buf[k * 4..k * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        buf
    }

    /// Writes lane `l`'s loaded value(s) into `out` (`old` = the destination's previous value,
    /// used by D16 forms).
    fn load_result(&self, buf: &[u8; 16], old: u32, out: &mut [[u32; 64]; 4], l: usize) {
        for k in 0..self.n.div_ceil(4) {
            out[k][l] = u32::from_le_bytes(buf[k * 4..k * 4 + 4].try_into().expect("4 bytes"));
        }
        let narrow = match (self.n, self.signed) {
            (1, true) => buf[0] as i8 as i32 as u32,
            (2, true) => i16::from_le_bytes([buf[0], buf[1]]) as i32 as u32,
            (1, false) => u32::from(buf[0]),
            (2, false) => u32::from(u16::from_le_bytes([buf[0], buf[1]])),
            _ => out[0][l],
        };
        out[0][l] = match self.d16 {
            Some(true) => (old & 0xffff) | (narrow & 0xffff) << 16,
            Some(false) => (old & 0xffff_0000) | (narrow & 0xffff),
            None => narrow,
        };
    }
}

fn pad16(x: &[f32; 4]) -> [f32; 16] {
    let mut r = [0f32; 16];
    r[..4].copy_from_slice(x);
    r
}

/// Runs one wave over `st.program` from instruction 0 until `s_endpgm` (barriers are passed
/// through: a single wave is its whole workgroup). Used by [`super::run_snippet`].
pub(super) fn run_single(st: &Setup<'_>, w: &mut Wave, lds: &mut [u8]) -> Result<WgCounters, LaunchError> {
    let mut ctr = WgCounters { waves: 1, ..Default::default() };
    let mut probe = super::checks::Probe::new(st.plan, &st.program, [0; 3], 1, lds.len() as u32);
    loop {
        match run_wave(st, w, lds, [0; 3], &mut ctr, &mut probe, u64::MAX)? {
            Flow::End => {
                ctr.counters = probe.counters;
                ctr.counts = probe.counts;
                ctr.lines = probe.lines;
                return Ok(ctr);
            }
            Flow::Barrier => {
                ctr.barriers += 1;
                probe.barrier();
            }
            Flow::Next | Flow::Jump(_) => {}
        }
    }
}

/// Adds two packed pairs of 16-bit floats half by half through f32.
fn pk16(a: u32, b: u32, wide: impl Fn(u16) -> f32, narrow: impl Fn(f32) -> u16) -> u32 {
    let lo = narrow(wide(a as u16) + wide(b as u16));
    let hi = narrow(wide((a >> 16) as u16) + wide((b >> 16) as u16));
    u32::from(lo) | u32::from(hi) << 16
}

/// Striped locks that make emulated global atomics atomic across host threads.
fn atomic_lock(addr: u64) -> std::sync::MutexGuard<'static, ()> {
    static LOCKS: [std::sync::Mutex<()>; 64] = [const { std::sync::Mutex::new(()) }; 64];
    LOCKS[((addr >> 3) & 63) as usize].lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod bitop3_tests {
    use super::{bitop3, bitop3_table};

    #[test]
    fn truth_tables_select_and_combine_the_three_sources() {
        let (x, y, z) = (0xDEAD_BEEFu32, 0x1234_5678u32, 0x0F0F_33CCu32);
        // LLVM's BitOp3 constants: S0 = 0xf0, S1 = 0xcc, S2 = 0xaa.
        assert_eq!(bitop3(0xf0, x, y, z), x);
        assert_eq!(bitop3(0xcc, x, y, z), y);
        assert_eq!(bitop3(0xaa, x, y, z), z);
        assert_eq!(bitop3(0x00, x, y, z), 0);
        assert_eq!(bitop3(0xff, x, y, z), u32::MAX);
        assert_eq!(bitop3(0x96, x, y, z), x ^ y ^ z);
        assert_eq!(bitop3(0xc8, x, y, z), y & (x | z));
        assert_eq!(bitop3(0xca, x, y, z), (x & y) | (!x & z), "v_bfi_b32's function");
    }

    #[test]
    fn the_table_is_read_from_neg_abs_and_omod() {
        // `v_bitop3_b32 v6, v6, s33, v8 bitop3:0xc8` as LLVM emitted it for gfx950.
        let bytes: Vec<u8> = [0xD234_0106u32, 0x1C20_4306].iter().flat_map(|w| w.to_le_bytes()).collect();
        let inst = crate::decode::decode_one_for(crate::loader::Target::Gfx950, &bytes, 0, "test").expect("decodes");
        assert_eq!(inst.op, crate::decode::Op::v_bitop3_b32);
        assert_eq!(bitop3_table(&inst), 0xc8);
    }
}
