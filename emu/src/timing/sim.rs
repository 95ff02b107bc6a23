//! The discrete-event core of the timing model: dispatch, per-SIMD issue, pipes, wait counters,
//! barriers and the memory hierarchy, replaying the traces the executor records.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::cache::{Fifo, Lookup, SetAssoc};
use super::server::Server;
use super::{Machine, Stall};
use crate::decode::{Inst, Op};
use crate::exec::checks::{InstInfo, Mem, Range};
use crate::exec::counters::Kind;
use crate::exec::trace::WaveTrace;

const NEVER: u64 = u64::MAX;
/// Register codes tracked for MFMA results: SGPRs 0..256, VGPRs 256..512, AGPRs 512..768.
const REG_CODES: usize = 768;

/// Issue category: a SIMD issues at most one instruction of each per slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cat {
    Vector = 0,
    Scalar,
    Vmem,
    Lds,
    Smem,
    Ctrl,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Special {
    None,
    Waitcnt { vm: u32, lgkm: u32 },
    Nop(u32),
    Sleep(u32),
    Barrier,
    End,
    Setprio(u8),
}

/// Static timing facts of one instruction.
#[derive(Clone, Debug)]
pub(crate) struct Static {
    cat: Cat,
    /// Vector port cycles (VALU) or matrix pipe cycles (MFMA).
    cycles: u32,
    mfma: bool,
    store: bool,
    /// A packed-F32 VALU (`v_pk_{fma,mul,add}_f32`, `v_pk_mov_b32`) or a DOT: held after an
    /// MFMA for [`Static::pk_hold`] issue slots, not [`Static::valu_hold`].
    pk_f32: bool,
    /// MFMA: issue slots from its issue before another VALU may issue on the SIMD.
    valu_hold: u32,
    /// MFMA: issue slots from its issue before a packed-F32 VALU or DOT may issue on the SIMD.
    pk_hold: u32,
    /// Bytes one lane moves (vector memory).
    lane_bytes: u32,
    special: Special,
    reads: Vec<Range>,
    writes: Vec<Range>,
    mfma_src_c: Option<Range>,
}

impl Static {
    pub(crate) fn of(inst: Option<&Inst>, info: &InstInfo, m: &Machine) -> Static {
        let kind = info.kind.unwrap_or(Kind::NopOther);
        let name = inst.map_or("", |i| i.op.name());
        let op = inst.map(|i| i.op);
        let special = match op {
            _ if info.waitcnt.is_some() => {
                let (vm, lgkm) = info.waitcnt.unwrap_or((63, 15));
                Special::Waitcnt { vm, lgkm }
            }
            Some(Op::s_nop) => Special::Nop(u32::from(info.wait_states)),
            Some(Op::s_sleep) => Special::Sleep(inst.map_or(0, |i| i.imm as u32 & 0x7f)),
            Some(Op::s_barrier) => Special::Barrier,
            Some(Op::s_endpgm) => Special::End,
            Some(Op::s_setprio) => Special::Setprio(inst.map_or(0, |i| i.imm as u8 & 3)),
            _ => Special::None,
        };
        let cat = match kind {
            Kind::Valu | Kind::Mfma => Cat::Vector,
            Kind::Salu => Cat::Scalar,
            Kind::DsRead | Kind::DsWrite => Cat::Lds,
            Kind::VmemLoad | Kind::VmemStore => Cat::Vmem,
            Kind::Smem => Cat::Smem,
            Kind::Branch | Kind::Waitcnt | Kind::NopOther => Cat::Ctrl,
        };
        let trans = ["v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_"].iter().any(|p| name.starts_with(p));
        let cycles = match kind {
            Kind::Mfma => u32::from(info.passes) * 4,
            Kind::Valu if trans => m.trans_cycles,
            Kind::Valu => m.valu_cycles,
            _ => 0,
        };
        let (valu_hold, pk_hold) = if kind == Kind::Mfma { mfma_valu_holds(name, info, m) } else { (0, 0) };
        let pk_f32 = kind == Kind::Valu && (PK_F32.iter().any(|p| name.starts_with(p)) || name.starts_with("v_dot"));
        Static {
            cat,
            cycles,
            mfma: kind == Kind::Mfma,
            pk_f32,
            valu_hold,
            pk_hold,
            lane_bytes: u32::from(info.vmem_bytes),
            store: kind == Kind::VmemStore || (info.mem == Mem::Vm && name.contains("atomic")),
            special,
            reads: info.reads.iter().copied().filter(|r| r.0 < REG_CODES as u16).collect(),
            writes: info.writes.iter().copied().filter(|r| r.0 < REG_CODES as u16).collect(),
            mfma_src_c: info.mfma_src[2],
        }
    }
}

/// Packed-F32 VALU mnemonics (LLVM PR #233721: they issue after an XDL like a DOT).
const PK_F32: [&str; 4] = ["v_pk_fma_f32", "v_pk_mul_f32", "v_pk_add_f32", "v_pk_mov_b32"];

/// Issue slots after an MFMA's issue before the SIMD issues (another wave's or its own) VALU,
/// and before it issues a packed-F32 VALU or a DOT (LLVM PR #233721, rules fitted to ATT
/// thread traces of MI308X and MI350X for every MFMA family): an XDL holds VALU off until
/// slot `1 + (widest A/B source, bytes) / 16` and packed F32 / DOT until `passes + 2`, one
/// more for an XDL with an A source of 16 bytes or more; SGEMM (`*_f32` sources) and DGEMM
/// (`f64`) hold every VALU until `passes + 2`. [`Machine::mfma_pk_f32_slots`] is the `+ 2`.
fn mfma_valu_holds(name: &str, info: &InstInfo, m: &Machine) -> (u32, u32) {
    let passes = u32::from(info.passes);
    let bytes = |r: Option<Range>| r.map_or(0, |r| u32::from(r.1) * 4);
    let (a, b) = (bytes(info.mfma_src[0]), bytes(info.mfma_src[1]));
    let non_xdl = name.contains("f64") || name.ends_with("_f32") || name.ends_with("xf32");
    if non_xdl {
        let hold = passes + m.mfma_pk_f32_slots;
        return (hold, hold);
    }
    (1 + a.max(b) / 16, passes + m.mfma_pk_f32_slots + u32::from(a >= 16))
}

struct WaveSim {
    trace: WaveTrace,
    pos: usize,
    line_pos: usize,
    /// Earliest issue time of the next instruction from its own constraints.
    ready: u64,
    /// Why `ready` is later than the cadence allows.
    ready_reason: Stall,
    /// Earliest time allowed by the issue cadence (previous issue + interval).
    base: u64,
    /// Last structural reason the wave could not issue in a slot.
    block_reason: Stall,
    prio: u8,
    age: u64,
    done: bool,
    at_barrier: bool,
    vm: VecDeque<u64>,
    lgkm: VecDeque<u64>,
    reg_ready: Vec<u64>,
    simd: usize,
    wg: usize,
}

struct WgSim {
    waves: Vec<usize>,
    alive: u32,
    arrived: u32,
    cu: usize,
    /// Workgroup id (linear) and the cycle its waves were launched.
    id: u64,
    start: u64,
}

struct Simd {
    waves: Vec<usize>,
    vec_free: u64,
    /// Earliest issue of a packed-F32 VALU or DOT (held by an earlier MFMA).
    pk_free: u64,
    mfma_free: u64,
    /// Time of the pending event in the heap (NEVER if none).
    next: u64,
}

struct Cu {
    xcd: usize,
    resident: u32,
    ta_free: f64,
    lds_free: u64,
    l1: SetAssoc,
    rr: usize,
    /// Cycles with at least one resident workgroup.
    busy_since: u64,
    busy: u64,
}

/// Accumulated statistics of a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    pub end: u64,
    pub issued: u64,
    pub stalls: [u64; Stall::COUNT],
    pub stall_by_inst: Vec<[u64; Stall::COUNT]>,
    pub mfma_cycles: u64,
    pub valu_cycles: u64,
    pub lds_cycles: u64,
    pub ta_cycles: f64,
    pub l2_bytes: f64,
    /// Fabric bytes per simulated XCD.
    pub fabric_by_xcd: Vec<f64>,
    pub hbm_bytes: f64,
    pub cu_busy: u64,
    pub simulated_workgroups: u64,
    /// Every simulated workgroup: (id, CU, launch cycle, end cycle), in order of ending.
    pub spans: Vec<(u64, u32, u64, u64)>,
    /// (issue cycle, instruction index) of every instruction of the traced workgroup's first
    /// wave ([`Sim::trace_workgroup`]).
    pub trace: Vec<(u64, usize)>,
}

/// The simulator over one launch (or one XCD's share of it).
pub(crate) struct Sim<'a> {
    m: &'a Machine,
    st: &'a [Static],
    simds: Vec<Simd>,
    cus: Vec<Cu>,
    waves: Vec<WaveSim>,
    free_waves: Vec<usize>,
    wgs: Vec<WgSim>,
    free_wgs: Vec<usize>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    queues: Vec<VecDeque<u64>>,
    dispatch_free: Vec<u64>,
    l2: Vec<SetAssoc>,
    mall: Fifo,
    /// Bandwidth servers: L2 and fabric link per XCD, the shared MALL and HBM (the shared
    /// ones scaled to the simulated share).
    l2_bw: Vec<Server>,
    fab: Vec<Server>,
    mall_bw: Server,
    hbm: Server,
    /// MALL and HBM latencies in cycles.
    mall_lat: f64,
    hbm_lat: f64,
    slots_per_cu: u32,
    age: u64,
    /// The workgroup whose first wave's issue cycles go to [`Stats::trace`].
    pub(crate) trace_workgroup: Option<u64>,
    pub(crate) stats: Stats,
}

/// Occupancy: workgroups one CU holds at once (the rule of [`super::bound::occupancy`]).
pub(crate) fn workgroups_per_cu(m: &Machine, r: &crate::timing::bound::Resources) -> u32 {
    super::bound::occupancy(r, m).workgroups_per_cu
}

impl<'a> Sim<'a> {
    /// A simulator of `xcds_simulated` XCDs (all of the machine's, or one for the sampled
    /// scope) whose queues hold `ids[x]` (the workgroups dispatched to XCD x, in order).
    pub(crate) fn new(m: &'a Machine, st: &'a [Static], r: &crate::timing::bound::Resources, queues: Vec<VecDeque<u64>>, share: f64) -> Sim<'a> {
        let xcds = queues.len();
        let ncu = xcds * m.cus_per_xcd as usize;
        let clock = m.clock_hz;
        Sim {
            m,
            st,
            simds: (0..ncu * m.simds_per_cu as usize).map(|_| Simd { waves: Vec::new(), vec_free: 0, pk_free: 0, mfma_free: 0, next: NEVER }).collect(),
            cus: (0..ncu)
                .map(|c| Cu {
                    xcd: c / m.cus_per_xcd as usize,
                    resident: 0,
                    ta_free: 0.0,
                    lds_free: 0,
                    l1: SetAssoc::new(u64::from(m.l1_bytes), 16),
                    rr: 0,
                    busy_since: 0,
                    busy: 0,
                })
                .collect(),
            waves: Vec::new(),
            free_waves: Vec::new(),
            wgs: Vec::new(),
            free_wgs: Vec::new(),
            heap: BinaryHeap::new(),
            dispatch_free: vec![0; xcds],
            queues,
            l2: (0..xcds).map(|_| SetAssoc::new(u64::from(m.l2_bytes), m.l2_ways)).collect(),
            mall: Fifo::new((m.mall_bytes as f64 * share) as u64),
            l2_bw: (0..xcds).map(|_| Server::new(m.l2_bytes_per_clk)).collect(),
            fab: (0..xcds).map(|_| Server::new(m.fabric_bytes_per_s / clock)).collect(),
            mall_bw: Server::new(m.mall_bytes_per_s / clock * share),
            hbm: Server::new(m.hbm_bytes_per_s * m.hbm_efficiency / clock * share),
            mall_lat: m.mall_latency_ns * 1e-9 * clock,
            hbm_lat: m.hbm_latency_ns * 1e-9 * clock,
            slots_per_cu: workgroups_per_cu(m, r),
            age: 0,
            trace_workgroup: None,
            stats: Stats { stall_by_inst: vec![[0; Stall::COUNT]; st.len()], fabric_by_xcd: vec![0.0; xcds], ..Default::default() },
        }
    }

    fn slot(&self, simd: usize, t: u64) -> u64 {
        let iv = u64::from(self.m.issue_interval);
        let phase = simd as u64 % iv;
        let r = t % iv;
        if r <= phase { t - r + phase } else { t - r + iv + phase }
    }

    fn schedule(&mut self, simd: usize, t: u64) {
        let t = self.slot(simd, t);
        if t < self.simds[simd].next {
            self.simds[simd].next = t;
            self.heap.push(Reverse((t, simd as u32)));
        }
    }

    /// Runs to completion, pulling workgroup traces from `traces` when dispatching.
    pub(crate) fn run<E>(&mut self, traces: &mut dyn FnMut(u64) -> Result<Vec<WaveTrace>, E>) -> Result<(), E> {
        for x in 0..self.queues.len() {
            self.dispatch(x, 0, traces)?;
        }
        while let Some(Reverse((t, s))) = self.heap.pop() {
            let s = s as usize;
            if self.simds[s].next != t {
                continue;
            }
            self.simds[s].next = NEVER;
            self.slot_at(s, t, traces)?;
        }
        for c in &self.cus {
            self.stats.cu_busy += c.busy;
        }
        Ok(())
    }

    fn dispatch<E>(&mut self, xcd: usize, now: u64, traces: &mut dyn FnMut(u64) -> Result<Vec<WaveTrace>, E>) -> Result<(), E> {
        let per = self.m.cus_per_xcd as usize;
        while !self.queues[xcd].is_empty() {
            // The next CU of this XCD with a free slot, round-robin.
            let first = xcd * per;
            let start = self.cus[first].rr;
            let Some(off) = (0..per).map(|i| (start + i) % per).find(|&i| self.cus[first + i].resident < self.slots_per_cu) else { break };
            let cu = first + off;
            self.cus[first].rr = (off + 1) % per;
            let Some(id) = self.queues[xcd].pop_front() else { break };
            let td = now.max(self.dispatch_free[xcd]);
            self.dispatch_free[xcd] = td + u64::from(self.m.wg_dispatch_cycles);
            let start_t = td + u64::from(self.m.wave_launch_cycles);
            let wtraces = traces(id)?;
            self.start_wg(cu, start_t, wtraces, id);
        }
        Ok(())
    }

    fn start_wg(&mut self, cu: usize, t: u64, traces: Vec<WaveTrace>, id: u64) {
        self.stats.simulated_workgroups += 1;
        let c = &mut self.cus[cu];
        if c.resident == 0 {
            c.busy_since = t;
        }
        c.resident += 1;
        let wg = self.free_wgs.pop().unwrap_or_else(|| {
            self.wgs.push(WgSim { waves: Vec::new(), alive: 0, arrived: 0, cu: 0, id: 0, start: 0 });
            self.wgs.len() - 1
        });
        let simds = self.m.simds_per_cu as usize;
        let rot = (self.stats.simulated_workgroups as usize) % simds;
        let mut ids = Vec::with_capacity(traces.len());
        let n = traces.len();
        for (w, trace) in traces.into_iter().enumerate() {
            let simd = cu * simds + (w + rot) % simds;
            let idx = self.free_waves.pop().unwrap_or_else(|| {
                self.waves.push(WaveSim {
                    trace: WaveTrace::default(),
                    pos: 0,
                    line_pos: 0,
                    ready: 0,
                    ready_reason: Stall::Dispatch,
                    base: 0,
                    block_reason: Stall::IssueSlot,
                    prio: 0,
                    age: 0,
                    done: false,
                    at_barrier: false,
                    vm: VecDeque::new(),
                    lgkm: VecDeque::new(),
                    reg_ready: vec![0; REG_CODES],
                    simd: 0,
                    wg: 0,
                });
                self.waves.len() - 1
            });
            self.age += 1;
            let wv = &mut self.waves[idx];
            wv.trace = trace;
            wv.pos = 0;
            wv.line_pos = 0;
            wv.ready = t;
            wv.base = t;
            wv.ready_reason = Stall::Dispatch;
            wv.block_reason = Stall::IssueSlot;
            wv.prio = 0;
            wv.age = self.age;
            wv.done = wv.trace.recs.is_empty();
            wv.at_barrier = false;
            wv.vm.clear();
            wv.lgkm.clear();
            wv.reg_ready.iter_mut().for_each(|r| *r = 0);
            wv.simd = simd;
            wv.wg = wg;
            ids.push(idx);
            if !self.waves[idx].done {
                self.simds[simd].waves.push(idx);
            }
        }
        let alive = ids.iter().filter(|&&i| !self.waves[i].done).count() as u32;
        self.wgs[wg] = WgSim { waves: ids, alive, arrived: 0, cu, id, start: t };
        let _ = n;
        if alive == 0 {
            self.finish_wg(wg, t);
            return;
        }
        for i in 0..self.wgs[wg].waves.len() {
            let w = self.wgs[wg].waves[i];
            if !self.waves[w].done {
                self.refresh_ready(w);
                let (s, r) = (self.waves[w].simd, self.waves[w].ready);
                self.schedule(s, r);
            }
        }
    }

    fn finish_wg(&mut self, wg: usize, t: u64) {
        let cu = self.wgs[wg].cu;
        self.stats.spans.push((self.wgs[wg].id, cu as u32, self.wgs[wg].start, t));
        for &w in &self.wgs[wg].waves {
            self.free_waves.push(w);
        }
        self.wgs[wg].waves.clear();
        self.free_wgs.push(wg);
        let c = &mut self.cus[cu];
        c.resident -= 1;
        if c.resident == 0 {
            c.busy += t.saturating_sub(c.busy_since);
        }
        self.stats.end = self.stats.end.max(t);
    }

    /// Computes the wave's `ready` for its next instruction from the waits it implies.
    fn refresh_ready(&mut self, w: usize) {
        let wv = &mut self.waves[w];
        let Some(rec) = wv.trace.recs.get(wv.pos) else { return };
        let s = &self.st[rec.idx as usize];
        let mut ready = wv.base;
        let mut reason = Stall::IssueSlot;
        if let Special::Waitcnt { vm, lgkm } = s.special {
            for (q, n, why) in [(&mut wv.vm, vm, Stall::Vmcnt), (&mut wv.lgkm, lgkm, Stall::Lgkmcnt)] {
                if let Some(t) = wait_until(q, n as usize)
                    && t > ready
                {
                    ready = t;
                    reason = why;
                }
            }
        }
        // Dependencies on MFMA results still in flight (reads and overwrites). An MFMA whose
        // SrcC is exactly an earlier MFMA's result (an accumulation chain) waits
        // [`Machine::mfma_chain_latency`] after that MFMA's last pass instead of
        // [`Machine::mfma_result_latency`].
        let early = u64::from(self.m.mfma_result_latency.saturating_sub(self.m.mfma_chain_latency));
        for r in s.reads.iter().chain(&s.writes) {
            let chain = s.mfma && Some(*r) == s.mfma_src_c;
            for c in r.0..r.0 + u16::from(r.1) {
                let t = wv.reg_ready[c as usize];
                let t = if chain { t.saturating_sub(early) } else { t };
                if t > ready {
                    ready = t;
                    reason = Stall::MfmaDependency;
                }
            }
        }
        wv.ready = ready;
        wv.ready_reason = reason;
    }

    fn slot_at<E>(&mut self, simd: usize, t: u64, traces: &mut dyn FnMut(u64) -> Result<Vec<WaveTrace>, E>) -> Result<(), E> {
        let mut used = [false; 6];
        let mut order: Vec<usize> = self.simds[simd].waves.clone();
        if order.iter().any(|&w| self.waves[w].prio != 0) {
            order.sort_by_key(|&w| (Reverse(self.waves[w].prio), self.waves[w].age));
        }
        let mut next = NEVER;
        let mut ended = false;
        for w in order {
            if self.waves[w].done {
                continue;
            }
            if self.waves[w].at_barrier {
                continue;
            }
            let wv = &self.waves[w];
            if wv.ready > t {
                next = next.min(wv.ready);
                continue;
            }
            let rec = wv.trace.recs[wv.pos];
            let s = &self.st[rec.idx as usize];
            let cat = s.cat as usize;
            let sd = &self.simds[simd];
            let blocked = if used[cat] {
                Some((t + 1, Stall::IssueSlot))
            } else if s.mfma && sd.mfma_free > t {
                Some((sd.mfma_free, Stall::MfmaPipe))
            } else if s.cat == Cat::Vector && sd.vec_free > t {
                Some((sd.vec_free, Stall::VectorPort))
            } else if s.pk_f32 && sd.pk_free > t {
                Some((sd.pk_free, Stall::VectorPort))
            } else {
                None
            };
            if let Some((when, why)) = blocked {
                self.waves[w].block_reason = why;
                next = next.min(when);
                continue;
            }
            used[cat] = true;
            if let Some(id) = self.trace_workgroup {
                let g = &self.wgs[self.waves[w].wg];
                if g.id == id && g.waves.first() == Some(&w) {
                    self.stats.trace.push((t, rec.idx as usize));
                }
            }
            if self.issue(w, t, rec.idx as usize, rec.aux, traces)? {
                ended = true;
            }
            let wv = &self.waves[w];
            if !wv.done && !wv.at_barrier {
                next = next.min(wv.ready);
            }
        }
        let _ = ended;
        if next != NEVER {
            let n = next.max(t + 1);
            self.schedule(simd, n);
        }
        Ok(())
    }

    /// Issues wave `w`'s next instruction at `t`. Returns whether the wave ended.
    fn issue<E>(&mut self, w: usize, t: u64, idx: usize, aux: u32, traces: &mut dyn FnMut(u64) -> Result<Vec<WaveTrace>, E>) -> Result<bool, E> {
        let m = self.m;
        let s = &self.st[idx];
        let simd = self.waves[w].simd;
        let cu = simd / m.simds_per_cu as usize;
        // Stall accounting: the delay past the cadence, split between the wave's own wait and
        // the structural conflicts that followed it.
        {
            let wv = &self.waves[w];
            let own = wv.ready.saturating_sub(wv.base);
            let structural = t.saturating_sub(wv.ready.max(wv.base));
            let (r1, r2) = (wv.ready_reason as usize, wv.block_reason as usize);
            self.stats.stalls[r1] += own;
            self.stats.stalls[r2] += structural;
            self.stats.stall_by_inst[idx][r1] += own;
            self.stats.stall_by_inst[idx][r2] += structural;
            self.stats.issued += 1;
        }
        let mut next_base = t + u64::from(m.issue_interval);
        let mut next_reason = None;
        match s.cat {
            Cat::Vector if s.mfma => {
                let sd = &mut self.simds[simd];
                let iv = u64::from(m.issue_interval);
                sd.vec_free = sd.vec_free.max(t + iv * u64::from(s.valu_hold.max(1)));
                sd.pk_free = sd.pk_free.max(t + iv * u64::from(s.pk_hold));
                sd.mfma_free = t + u64::from(s.cycles);
                self.stats.mfma_cycles += u64::from(s.cycles);
                let done = t + u64::from(s.cycles) + u64::from(m.mfma_result_latency);
                let wv = &mut self.waves[w];
                for r in &s.writes {
                    for c in r.0..r.0 + u16::from(r.1) {
                        wv.reg_ready[c as usize] = done;
                    }
                }
            }
            Cat::Vector => {
                self.simds[simd].vec_free = t + u64::from(s.cycles);
                self.stats.valu_cycles += u64::from(s.cycles);
                // A VALU overwrite retires any pending MFMA result in those registers.
                let wv = &mut self.waves[w];
                for r in &s.writes {
                    for c in r.0..r.0 + u16::from(r.1) {
                        wv.reg_ready[c as usize] = 0;
                    }
                }
            }
            Cat::Smem => {
                let done = t + u64::from(m.smem_latency);
                push_mono(&mut self.waves[w].lgkm, done);
            }
            Cat::Lds => {
                let c = &mut self.cus[cu];
                let start = t.max(c.lds_free);
                let cyc = u64::from(aux.max(1));
                c.lds_free = start + cyc;
                self.stats.lds_cycles += cyc;
                push_mono(&mut self.waves[w].lgkm, start + cyc + u64::from(m.lds_latency));
            }
            Cat::Vmem => {
                let n = aux as usize;
                let lp = self.waves[w].line_pos;
                self.waves[w].line_pos += n;
                // Bytes a lane moves spread over the lines the instruction touches (at most a
                // line each); unknown widths count whole lines.
                let line_bytes = if n > 0 && s.lane_bytes > 0 { (64.0 * f64::from(s.lane_bytes) / n as f64).clamp(4.0, 128.0) } else { 128.0 };
                // The vector L1 handles one cache line per cycle (every access is for one line:
                // rocprofiler-compute, "Vector L1 cache") and moves `ta_bytes_per_clk` of data.
                let per_line = (line_bytes / m.ta_bytes_per_clk).max(1.0);
                let c = &mut self.cus[cu];
                let start = (t as f64).max(c.ta_free);
                let occ = (n as f64 * per_line).max(f64::from(m.issue_interval));
                c.ta_free = start + occ;
                self.stats.ta_cycles += occ;
                let xcd = self.cus[cu].xcd;
                let mut done = start + occ + f64::from(m.l1_latency);
                // A store moves only the bytes its lanes write: the L2 (write-back) merges the
                // partial lines, so the fabric, MALL and HBM see the data written. A load fills
                // whole lines.
                let bytes = if s.store { line_bytes } else { 128.0 };
                for k in 0..n {
                    let line = self.waves[w].trace.lines[lp + k];
                    let d = self.line(cu, xcd, line, start + k as f64 * per_line, s.store, bytes);
                    done = done.max(d);
                }
                push_mono(&mut self.waves[w].vm, done.ceil() as u64);
            }
            Cat::Scalar | Cat::Ctrl => {}
        }
        match s.special {
            Special::Nop(n) => next_base = next_base.max(t + u64::from(n)),
            Special::Sleep(n) => {
                next_base = next_base.max(t + 64 * u64::from(n.max(1)));
                next_reason = Some(Stall::Nop);
            }
            Special::Setprio(p) => self.waves[w].prio = p,
            _ => {}
        }
        let wv = &mut self.waves[w];
        wv.pos += 1;
        wv.base = next_base;
        wv.block_reason = Stall::IssueSlot;
        let wg = wv.wg;
        match s.special {
            Special::End => {
                wv.done = true;
                self.end_wave(w, t, traces)?;
                return Ok(true);
            }
            Special::Barrier => {
                wv.at_barrier = true;
                self.wgs[wg].arrived += 1;
                self.try_release(wg, t);
                return Ok(false);
            }
            _ => {}
        }
        if self.waves[w].pos >= self.waves[w].trace.recs.len() {
            // A trace that stops without s_endpgm (cannot happen for a completed launch).
            self.waves[w].done = true;
            self.end_wave(w, t, traces)?;
            return Ok(true);
        }
        self.refresh_ready(w);
        if let Some(r) = next_reason {
            let wv = &mut self.waves[w];
            if wv.ready <= wv.base {
                wv.ready_reason = r;
            }
        }
        Ok(false)
    }

    fn try_release(&mut self, wg: usize, t: u64) {
        let g = &self.wgs[wg];
        if g.arrived == 0 || g.arrived < g.alive {
            return;
        }
        let release = t + u64::from(self.m.barrier_latency);
        self.wgs[wg].arrived = 0;
        for i in 0..self.wgs[wg].waves.len() {
            let w = self.wgs[wg].waves[i];
            let wv = &mut self.waves[w];
            if wv.done || !wv.at_barrier {
                continue;
            }
            wv.at_barrier = false;
            // The wait at the barrier is charged to the instruction after it.
            let arrived_base = wv.base;
            wv.base = release.max(arrived_base);
            self.refresh_ready(w);
            let wv = &mut self.waves[w];
            let barrier_wait = release.saturating_sub(arrived_base);
            self.stats.stalls[Stall::Barrier as usize] += barrier_wait;
            if let Some(rec) = wv.trace.recs.get(wv.pos.saturating_sub(1)) {
                self.stats.stall_by_inst[rec.idx as usize][Stall::Barrier as usize] += barrier_wait;
            }
            let (s, r) = (wv.simd, wv.ready);
            self.schedule(s, r);
        }
    }

    fn end_wave<E>(&mut self, w: usize, t: u64, traces: &mut dyn FnMut(u64) -> Result<Vec<WaveTrace>, E>) -> Result<(), E> {
        let simd = self.waves[w].simd;
        self.simds[simd].waves.retain(|&x| x != w);
        let wg = self.waves[w].wg;
        // The wave's memory traffic must land before its slot frees (stores acknowledged).
        let drain = self.waves[w].vm.back().copied().unwrap_or(t).max(t);
        self.wgs[wg].alive -= 1;
        self.stats.end = self.stats.end.max(drain);
        if self.wgs[wg].alive == 0 {
            let cu = self.wgs[wg].cu;
            let xcd = self.cus[cu].xcd;
            self.finish_wg(wg, drain);
            self.dispatch(xcd, drain, traces)?;
        } else {
            self.try_release(wg, t);
        }
        Ok(())
    }

    /// One 128-byte line through L1 → L2 → fabric → MALL → HBM; returns when it arrives. A
    /// store charges the bandwidth servers `bytes` (a load always a whole line) and bypasses
    /// the L1. A load that hits an L1 line whose fill is still in flight (another wave of the
    /// CU missed on it moments ago) waits for that fill, as the L2 does.
    fn line(&mut self, cu: usize, xcd: usize, line: u64, t: f64, store: bool, bytes: f64) -> f64 {
        let lat_l1 = f64::from(self.m.l1_latency);
        if store {
            return self.line_beyond_l1(xcd, line, t, true, bytes);
        }
        match self.cus[cu].l1.lookup(line) {
            Lookup::Hit(ready) => (t + lat_l1).max(ready),
            Lookup::Miss(way) => {
                let arrive = self.line_beyond_l1(xcd, line, t, false, bytes);
                self.cus[cu].l1.filled(way, arrive);
                arrive
            }
        }
    }

    /// [`Self::line`] past a missed (or bypassed) L1: L2 → fabric → MALL → HBM.
    fn line_beyond_l1(&mut self, xcd: usize, line: u64, t: f64, store: bool, bytes: f64) -> f64 {
        let m = self.m;
        let lat_l1 = f64::from(m.l1_latency);
        let s = self.l2_bw[xcd].serve(t, bytes);
        self.stats.l2_bytes += bytes;
        let lat_l2 = lat_l1 + f64::from(m.l2_latency);
        let way = match self.l2[xcd].lookup(line) {
            // A hit on a line whose fill is still in flight waits for that fill.
            Lookup::Hit(ready) => return (s + lat_l2).max(ready),
            Lookup::Miss(way) => way,
        };
        let f = self.fab[xcd].serve(s, bytes);
        self.stats.fabric_by_xcd[xcd] += bytes;
        let ms = self.mall_bw.serve(f, bytes);
        let lat_mall = lat_l2 + self.mall_lat;
        if store {
            // Write-back: the line's bytes reach HBM eventually; charge the bandwidth now, the
            // store is acknowledged by the L2 (and its data is there for later reads).
            // The MALL keeps the line from here on, present at once.
            if self.mall.ready(line).is_none() {
                self.mall.insert(line, 0.0);
            }
            self.hbm.serve(ms, bytes);
            self.stats.hbm_bytes += bytes;
            self.l2[xcd].filled(way, s + lat_l2);
            return s + lat_l2;
        }
        let arrive = match self.mall.ready(line) {
            // A MALL hit on a line another XCD's miss is still fetching waits for that fetch.
            Some(ready) => (ms + lat_mall).max(ready),
            None => {
                let h = self.hbm.serve(ms, 128.0);
                self.stats.hbm_bytes += 128.0;
                let t = h + lat_mall + self.hbm_lat;
                self.mall.insert(line, t);
                t
            }
        };
        self.l2[xcd].filled(way, arrive);
        arrive
    }
}

/// `s_waitcnt` on an in-order counter queue: when at most `n` operations are left outstanding
/// (the completion of the newest one that must retire), retiring those from the queue; `None`
/// if the count already holds.
fn wait_until(q: &mut VecDeque<u64>, n: usize) -> Option<u64> {
    let keep = q.len().checked_sub(n).filter(|&k| k > 0)?;
    let t = q[keep - 1];
    q.drain(..keep);
    Some(t)
}

/// Appends a completion time to an in-order counter queue (results retire in issue order, so
/// a later operation never retires before an earlier one).
fn push_mono(q: &mut VecDeque<u64>, t: u64) {
    let t = q.back().map_or(t, |&b| b.max(t));
    q.push_back(t);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::trace::TraceRec;
    use crate::timing::bound::Resources;

    /// A static instruction of category `cat` with no operands.
    fn plain(cat: Cat, cycles: u32, special: Special) -> Static {
        Static {
            cat,
            cycles,
            mfma: false,
            store: false,
            pk_f32: false,
            valu_hold: 0,
            pk_hold: 0,
            lane_bytes: 0,
            special,
            reads: Vec::new(),
            writes: Vec::new(),
            mfma_src_c: None,
        }
    }

    /// Issue cycles of one wave running `recs` over `st` on `m` (one workgroup of one wave),
    /// and the run's statistics.
    fn run_one(m: &Machine, st: &[Static], recs: &[(u32, u32)], lines: Vec<u64>) -> (Vec<u64>, Stats) {
        let r = Resources { vgprs: 8, agprs: 0, sgprs: 16, lds_bytes: 0, workgroup_size: 64 };
        let mut sim = Sim::new(m, st, &r, vec![VecDeque::from([0u64])], 1.0);
        sim.trace_workgroup = Some(0);
        let trace = WaveTrace { recs: recs.iter().map(|&(idx, aux)| TraceRec { idx, aux }).collect(), lines };
        sim.run(&mut |_| Ok::<_, ()>(vec![trace.clone()])).unwrap();
        (sim.stats.trace.iter().map(|&(t, _)| t).collect(), sim.stats)
    }

    #[test]
    fn holds_after_an_xdl_follow_its_sources_and_passes() {
        let m = &Machine::MI325X;
        // v_mfma_f32_16x16x32_fp8_fp8: 4 passes, 8-byte A and B.
        let info = InstInfo { passes: 4, mfma_src: [Some((512, 2)), Some((514, 2)), Some((256, 4))], ..Default::default() };
        assert_eq!(mfma_valu_holds("v_mfma_f32_16x16x32_fp8_fp8", &info, m), (1, 6));
        // v_mfma_f32_16x16x128_f8f6f4 with FP8 operands: 8 passes, 32-byte sources (XDL2x).
        let info = InstInfo { passes: 8, mfma_src: [Some((512, 8)), Some((520, 8)), Some((256, 4))], ..Default::default() };
        assert_eq!(mfma_valu_holds("v_mfma_f32_16x16x128_f8f6f4", &info, m), (3, 11));
        // DGEMM holds every VALU until passes + 2.
        let info = InstInfo { passes: 4, mfma_src: [Some((256, 2)), Some((258, 2)), Some((260, 8))], ..Default::default() };
        assert_eq!(mfma_valu_holds("v_mfma_f64_16x16x4_f64", &info, m), (6, 6));
    }

    #[test]
    fn a_packed_f32_valu_waits_for_the_mfma_passes_and_two_slots() {
        let m = Machine::MI325X;
        let mut mfma = plain(Cat::Vector, 16, Special::None);
        (mfma.mfma, mfma.valu_hold, mfma.pk_hold) = (true, 1, 6);
        let valu = plain(Cat::Vector, 4, Special::None);
        let mut pk = plain(Cat::Vector, 4, Special::None);
        pk.pk_f32 = true;
        let end = plain(Cat::Ctrl, 0, Special::End);
        let st = [mfma, valu, pk, end];
        // MFMA, VALU, packed F32: the VALU one slot after the MFMA, the packed op 6 slots after.
        let (t, _) = run_one(&m, &st, &[(0, 0), (1, 0), (2, 0), (3, 0)], Vec::new());
        assert_eq!((t[1] - t[0], t[2] - t[0]), (4, 24), "{t:?}");
        // MFMA then packed F32 directly: the same 24 cycles.
        let (t, _) = run_one(&m, &st, &[(0, 0), (2, 0), (3, 0)], Vec::new());
        assert_eq!(t[1] - t[0], 24, "{t:?}");
    }

    #[test]
    fn an_l1_hit_on_a_line_in_flight_waits_for_its_fill() {
        let m = Machine::MI325X;
        let end = plain(Cat::Ctrl, 0, Special::End);
        let st = [end];
        let r = Resources { vgprs: 8, agprs: 0, sgprs: 16, lds_bytes: 0, workgroup_size: 64 };
        let mut sim = Sim::new(&m, &st, &r, vec![VecDeque::from([0u64])], 1.0);
        let l1 = f64::from(m.l1_latency);
        // A cold line: L1 and L2 miss, from HBM.
        let first = sim.line(0, 0, 4242, 0.0, false, 128.0);
        assert!(first > l1 + f64::from(m.l2_latency), "{first}");
        // Another wave of the CU asks for it 10 cycles later: it waits for the same fill (not
        // an L1 hit 115 cycles on), and the L2 serves the line once.
        let second = sim.line(0, 0, 4242, 10.0, false, 128.0);
        assert_eq!(second, first);
        assert_eq!(sim.stats.l2_bytes, 128.0);
        // Once the line is there, a hit costs the L1 latency.
        let later = sim.line(0, 0, 4242, first + 1000.0, false, 128.0);
        assert_eq!(later, first + 1000.0 + l1);
        // Another CU's L1 does not have it (its request reaches the L2, whose fill it waits for).
        let other = sim.line(1, 0, 4242, 20.0, false, 128.0);
        assert!(other >= first, "{other} vs {first}");
        assert_eq!(sim.stats.l2_bytes, 256.0);
    }

    #[test]
    fn scattered_stores_charge_a_cycle_per_line_and_the_bytes_written() {
        // A wave64 store of 8 bytes a lane touching 64 distinct lines.
        let mut store = plain(Cat::Vmem, 0, Special::None);
        (store.store, store.lane_bytes) = (true, 8);
        let end = plain(Cat::Ctrl, 0, Special::End);
        let st = [store, end];
        let lines: Vec<u64> = (0..64).map(|i| 1000 + 64 * i).collect();
        let stats = run_one(&Machine::MI325X, &st, &[(0, 64), (1, 0)], lines.clone()).1;
        // One L1 cycle per line (not the 2 a whole 128-byte line takes at 64 B/clk); 8 bytes of
        // each line reach the L2 and, write-back, HBM.
        assert_eq!((stats.ta_cycles, stats.l2_bytes, stats.hbm_bytes), (64.0, 64.0 * 8.0, 64.0 * 8.0));
        // The same lanes loading: whole lines from the L2, one L1 cycle each.
        let mut load = st.clone();
        load[0].store = false;
        let stats = run_one(&Machine::MI325X, &load, &[(0, 64), (1, 0)], lines).1;
        assert_eq!((stats.ta_cycles, stats.l2_bytes), (64.0, 64.0 * 128.0));
    }
}
