//! Per-launch performance counters: wave-instructions by [`Kind`], LDS bank conflicts, global
//! memory bytes, MFMA passes and the steady-state (hottest loop) MFMA share.
//!
//! # LDS bank model (gfx942)
//! LDS has 32 banks of 4 bytes: the bank of byte address `a` is `(a / 4) mod 32`. A DS
//! instruction's active lanes are serviced in *phases*; each phase takes one cycle plus one extra
//! cycle for every additional distinct dword address that falls in an already used bank, i.e. a
//! phase costs `max over banks of (distinct dword addresses in that bank)` cycles (at least 1).
//! Lanes reading the same dword are broadcast (counted once); so are lanes writing the same dword.
//! Phases (which lanes are serviced together):
//! * `ds_read_b128`: 8 phases of 8 lanes (128 B per cycle) with the lane groups
//!   {0-3, 20-23} {4-7, 16-19} {8-11, 28-31} {12-15, 24-27} and the same groups + 32
//!   (composable_kernel `lds_bank_conflicts.rst`, see `shared/reference/gfx942.md`);
//! * `ds_write_b128` (and the 96-bit forms): 8 phases of 8 consecutive lanes (128 B per cycle);
//! * every other width: 64 B per cycle, i.e. `64 / bytes-per-lane` consecutive lanes per phase
//!   (b8/b16/b32: 16 lanes, b64 and `read2/write2_b32`: 8 lanes, `read2/write2_b64`: 4 lanes).
//!
//! # gfx950 (CDNA4)
//! The LDS has 64 banks of 4 bytes (160 KiB: CDNA4 ISA guide §2.2.1, 64 banks × 640 entries,
//! as cited in ROCm/llvm-project PR #4099; llvm/llvm-project PR #220632 "gfx950 doubled the
//! bank count to 64"), and 64- and 128-bit reads use them: `ds_read_b128` in 4 phases of 16
//! lanes with the lane groups {0-3, 12-15, 20-23, 24-27} {32-35, 44-47, 52-55, 56-59}
//! {4-11, 16-19, 28-31} {36-43, 48-51, 60-63}, `ds_read_b64` (and the `_tr` 64-bit reads, assumed
//! alike) in 2 phases of 32 consecutive lanes (measured on MI350X: nod-ai/amd-shark-ai
//! `docs/empirical-lds/cdna4info.md`; AMD's rocRoller LDS bank model doubles the lanes per clock
//! of exactly these two reads on gfx950, `shared/rocroller/lib/source/LDSBankModel.cpp`). Every
//! other access — writes, `ds_read_b96`, 32-bit and narrower reads, `read2` — keeps the gfx942
//! phases and 32 banks (rocRoller; a measurement that puts `ds_read_b32` in one 64-lane phase
//! disagrees, and the model follows AMD's own).
//!
//! Phases without an active lane cost nothing. [`Counters::lds_cycles`] is the sum of the phase
//! costs; [`Counters::lds_conflict_cycles`] is the part above one cycle per phase. LDS atomics
//! count as 4-byte accesses; `ds_swizzle`/`ds_permute`/`ds_bpermute` do not access LDS banks
//! and cost nothing here. FLAT accesses that resolve to LDS are not modelled.

use crate::decode::{Enc, Inst, Op};

/// Fine-grained instruction kinds counted per launch ([`Counters::kinds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Scalar ALU (SOP1/SOP2/SOPC/SOPK).
    Salu = 0,
    /// Vector ALU (VOP1/2/C/3/3P, including `v_accvgpr_read/write`), not MFMA.
    Valu,
    /// Matrix multiply-accumulate (`v_mfma_*`, `v_smfmac_*`).
    Mfma,
    /// LDS reads (`ds_read*`) and the lane permutes (`ds_swizzle`, `ds_*permute`).
    DsRead,
    /// LDS writes (`ds_write*`) and LDS atomics.
    DsWrite,
    /// Vector memory loads (FLAT/GLOBAL/SCRATCH/MUBUF `*_load_*`).
    VmemLoad,
    /// Vector memory stores and atomics.
    VmemStore,
    /// Scalar memory.
    Smem,
    /// Branches (`s_branch`, `s_cbranch_*`).
    Branch,
    /// `s_waitcnt`.
    Waitcnt,
    /// `s_nop` and every other program-control instruction (`s_barrier`, `s_endpgm`, ...).
    NopOther,
}

impl Kind {
    /// Number of kinds.
    pub const COUNT: usize = 11;
    /// All kinds in index order.
    pub const ALL: [Kind; Kind::COUNT] = [
        Kind::Salu,
        Kind::Valu,
        Kind::Mfma,
        Kind::DsRead,
        Kind::DsWrite,
        Kind::VmemLoad,
        Kind::VmemStore,
        Kind::Smem,
        Kind::Branch,
        Kind::Waitcnt,
        Kind::NopOther,
    ];

    /// Short label used by the `Display` of [`super::LaunchReport`].
    pub fn label(self) -> &'static str {
        match self {
            Kind::Salu => "SALU",
            Kind::Valu => "VALU",
            Kind::Mfma => "MFMA",
            Kind::DsRead => "DS read",
            Kind::DsWrite => "DS write",
            Kind::VmemLoad => "VMEM load",
            Kind::VmemStore => "VMEM store",
            Kind::Smem => "SMEM",
            Kind::Branch => "branch",
            Kind::Waitcnt => "waitcnt",
            Kind::NopOther => "nop/other",
        }
    }

    /// The kind of a decoded instruction.
    pub fn of(inst: &Inst) -> Kind {
        let name = inst.op.name();
        match inst.enc {
            Enc::Sop1 | Enc::Sop2 | Enc::Sopc | Enc::Sopk => Kind::Salu,
            Enc::Sopp => match inst.op {
                Op::s_waitcnt => Kind::Waitcnt,
                Op::s_branch
                | Op::s_cbranch_scc0
                | Op::s_cbranch_scc1
                | Op::s_cbranch_vccz
                | Op::s_cbranch_vccnz
                | Op::s_cbranch_execz
                | Op::s_cbranch_execnz => Kind::Branch,
                _ => Kind::NopOther,
            },
            Enc::Smem => Kind::Smem,
            Enc::Ds => {
                if name.starts_with("ds_read") || name.contains("permute") || name.starts_with("ds_swizzle") {
                    Kind::DsRead
                } else {
                    Kind::DsWrite
                }
            }
            Enc::Flat | Enc::Global | Enc::Scratch | Enc::Mubuf => {
                if name.contains("_load_") {
                    Kind::VmemLoad
                } else {
                    Kind::VmemStore
                }
            }
            Enc::Vop3p if crate::decode::is_mai(inst.op) => Kind::Mfma,
            _ => Kind::Valu,
        }
    }
}

/// Passes (4 cycles each) of an MFMA on gfx942, or `None` for a non-MFMA operation. FP8/BF8
/// 16x16x32 = 4 passes, 32x32x16 = 8 passes (AMD matrix instruction calculator, CDNA3); the
/// f16/bf16/f32 shapes follow from the CDNA3 peak rates per CU and clock (FP16/BF16 half the FP8
/// rate, FP32 matrix 256 FLOP/clk/CU). gfx950's `v_mfma_f32_{16x16x128,32x32x64}_f8f6f4` run at
/// 8192 FLOP/clk/CU with FP8/BF8 operands: 8 and 16 passes (32 and 64 cycles; project
/// `hardware.md`, not LLVM's scheduling model, which lists half). With FP6/FP4 operands they
/// take half that; the count here is by operation only, so those are counted at the FP8 rate.
pub fn mfma_passes(op: Op) -> Option<u32> {
    mfma_passes_name(op.name())
}

fn mfma_passes_name(n: &str) -> Option<u32> {
    if !(n.starts_with("v_mfma") || n.starts_with("v_smfmac")) {
        return None;
    }
    let (_, flops) = mfma_shape(n)?;
    // FLOP per cycle per SIMD by element type.
    let rate = if n.ends_with("_f8f6f4") {
        2048
    } else if n.contains("fp8") || n.contains("bf8") || n.contains("i8") {
        1024
    } else if n.contains("f16") || n.contains("bf16") {
        512
    } else if n.contains("xf32") {
        256
    } else {
        64
    };
    Some(((flops / rate) / 4).max(1) as u32)
}

/// Passes of the MFMA `inst` (4 cycles each), or `None` for a non-MFMA: [`mfma_passes_named`] of
/// its mnemonic and, for the gfx950 `f8f6f4` MFMAs, its operand formats (CBSZ, BLGP).
pub fn mfma_passes_of(inst: &crate::decode::Inst) -> Option<u32> {
    // The decoder keeps a MAI instruction's CBSZ in `abs` and BLGP in `neg`.
    mfma_passes_named(inst.op.name(), inst.abs, inst.neg)
}

/// Passes (4 cycles each) of an MFMA by mnemonic, on gfx942 and gfx950, or `None` for a
/// non-MFMA mnemonic. Every MFMA both instruction sets share keeps its CDNA3 rate on gfx950
/// ([`mfma_passes`]; `shared/reference/hardware.md` "Matrix cores": the CDNA3 `16x16x32_fp8`
/// still 4 passes). The gfx950 `v_mfma_*_f8f6f4` MFMAs run at 8192 FP8 FLOP per cycle per CU
/// with FP8/BF8 operands: `16x16x128` 32 cycles (8 passes), `32x32x64` 64 cycles (16 passes);
/// with FP6/FP4 operands in half that (hardware.md). Their operand formats are the
/// instruction's CBSZ (A) and BLGP (B) fields: 0 FP8, 1 BF8, 2 FP6, 3 BF6, 4 FP4 (CDNA4 ISA
/// guide, `V_MFMA_*_F8F6F4`). A mix of an 8-bit and a narrower operand is charged the 8-bit
/// rate (the hardware.md figures cover only the uniform cases; the wider operand is assumed to
/// set the pace).
pub fn mfma_passes_named(name: &str, cbsz: u8, blgp: u8) -> Option<u32> {
    if !name.contains("f8f6f4") {
        return mfma_passes_name(name);
    }
    let (_, flops) = mfma_shape(name)?;
    let eight_bit = |f: u8| f <= 1;
    // FLOP per cycle per SIMD: 2048 (8192 per CU) with an 8-bit operand, twice that narrower.
    let rate = if eight_bit(cbsz) || eight_bit(blgp) { 2048 } else { 4096 };
    Some(((flops / rate) / 4).max(1) as u32)
}

/// (M, FLOPs of one wave-instruction) from an MFMA mnemonic like `v_mfma_f32_16x16x32_fp8_fp8`.
fn mfma_shape(n: &str) -> Option<(u64, u64)> {
    let dims = n.split('_').find(|p| p.matches('x').count() == 2 && p.starts_with(|c: char| c.is_ascii_digit()))?;
    let mut it = dims.split('x').map(|d| d.chars().take_while(char::is_ascii_digit).collect::<String>().parse::<u64>());
    let (m, nn, k) = (it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?);
    // Block counts (e.g. 4x4x4_16b) are not distinguished; the dense shapes used here have 1.
    let blocks = if n.contains("_16b") {
        16
    } else if n.contains("_4b") {
        4
    } else if n.contains("_2b") {
        2
    } else {
        1
    };
    Some((m, 2 * m * nn * k * blocks))
}

/// FLOPs of one wave-instruction of an MFMA (`2·M·N·K` per block), 0 for other operations.
pub fn mfma_flops(op: Op) -> u64 {
    let n = op.name();
    if !(n.starts_with("v_mfma") || n.starts_with("v_smfmac")) {
        return 0;
    }
    mfma_shape(n).map_or(0, |(_, f)| f)
}

/// How a DS instruction touches LDS: `bytes` per access, the byte offsets of its (one or two)
/// accesses relative to the lane address, and whether it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DsShape {
    /// Bytes per access.
    pub bytes: u32,
    /// Offsets (added to the lane's address VGPR) of the accesses; `count` of them are valid.
    pub offsets: [u32; 2],
    /// Accesses per lane (1, or 2 for `read2`/`write2`).
    pub count: u8,
    /// Reads LDS.
    pub reads: bool,
    /// Writes LDS.
    pub writes: bool,
}

impl DsShape {
    /// The LDS footprint of `inst`, or `None` for DS operations that do not access LDS memory
    /// (swizzle, permutes) or that this model does not know.
    pub fn of(inst: &Inst) -> Option<DsShape> {
        let n = inst.op.name().strip_prefix("ds_")?;
        let off = inst.imm as u32 & 0xffff;
        if n.starts_with("read2") || n.starts_with("write2") {
            let wide = n.ends_with("_b64");
            let bytes = if wide { 8 } else { 4 };
            let stride = bytes * if n.contains("st64") { 64 } else { 1 };
            let o0 = (inst.imm as u32 & 0xff) * stride;
            let o1 = u32::from(inst.offset1) * stride;
            let reads = n.starts_with("read2");
            return Some(DsShape { bytes, offsets: [o0, o1], count: 2, reads, writes: !reads });
        }
        let one = |bytes: u32, reads: bool, writes: bool| Some(DsShape { bytes, offsets: [off, 0], count: 1, reads, writes });
        if let Some(t) = n.strip_prefix("read_") {
            let bytes = match t.trim_end_matches("_d16_hi").trim_end_matches("_d16") {
                // gfx950 transposing reads: each lane's address covers 8 (12) bytes.
                "b64_tr_b4" | "b64_tr_b8" | "b64_tr_b16" => 8,
                "b96_tr_b6" => 12,
                "u8" | "i8" => 1,
                "u16" | "i16" => 2,
                "b32" => 4,
                "b64" => 8,
                "b96" => 12,
                "b128" => 16,
                _ => return None,
            };
            return one(bytes, true, false);
        }
        if let Some(t) = n.strip_prefix("write_") {
            let bytes = match t.trim_end_matches("_d16_hi") {
                "b8" => 1,
                "b16" => 2,
                "b32" => 4,
                "b64" => 8,
                "b96" => 12,
                "b128" => 16,
                _ => return None,
            };
            return one(bytes, false, true);
        }
        if n.contains("permute") || n.starts_with("swizzle") || n.starts_with("nop") {
            return None;
        }
        // 32-bit atomics (with or without return): read-modify-write of 4 bytes.
        if n.ends_with("_b32") || n.ends_with("_u32") || n.ends_with("_i32") || n.ends_with("_f32") {
            return one(4, true, true);
        }
        None
    }
}

/// Bank-conflict cost of one DS instruction: `(cycles, conflict_cycles)` for the active lanes of
/// `exec` whose lane addresses (address VGPR) are `addr`, under the model in the module docs.
///
/// `gfx950` selects the CDNA4 phases and banks of 64- and 128-bit reads (module docs).
pub fn lds_cost(shape: &DsShape, addr: &[u32; 64], exec: u64, gfx950: bool) -> (u64, u64) {
    if gfx950 && shape.reads && !shape.writes && shape.count == 1 && matches!(shape.bytes, 8 | 16) {
        return lds_cost_cdna4_read(shape, addr, exec);
    }
    let per_lane = shape.bytes * u32::from(shape.count);
    let b128 = shape.bytes >= 12 && shape.count == 1;
    let lanes_per_phase: usize = if b128 { 8 } else { (64 / per_lane.max(1)).clamp(1, 64) as usize };
    let read128 = b128 && shape.reads && !shape.writes && shape.bytes == 16;
    let mut cycles = 0u64;
    let mut conflicts = 0u64;
    let phases = 64usize.div_ceil(lanes_per_phase);
    // Fast path: one naturally aligned 4/8/16-byte access per lane covers `bytes / 4` whole banks
    // of bank group `(addr / bytes) mod (128 / bytes)`; distinct units in one group conflict on
    // all their banks and units in different groups share none, so counting distinct units per
    // group equals counting distinct dwords per bank.
    let unit = shape.bytes;
    if shape.count == 1 && matches!(unit, 4 | 8 | 16) {
        let off = shape.offsets[0];
        let mut aligned = true;
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            aligned &= addr[l].wrapping_add(off).is_multiple_of(unit);
        }
        if aligned {
            let groups = 128 / unit;
            let mut units = [0u32; 16];
            for p in 0..phases {
                let mut n = 0usize;
                for j in 0..lanes_per_phase {
                    let l = if read128 { READ128_GROUPS[p % 4][j] + 32 * (p / 4) } else { p * lanes_per_phase + j };
                    if l < 64 && exec >> l & 1 != 0 && n < units.len() {
                        units[n] = addr[l].wrapping_add(off) / unit;
                        n += 1;
                    }
                }
                if n == 0 {
                    continue;
                }
                let worst = u64::from(worst_bank(&mut units[..n], groups));
                cycles += worst;
                conflicts += worst - 1;
            }
            return (cycles, conflicts);
        }
    }
    // Per phase at most 8 lanes x 4 dwords, 16 lanes x 1 dword or 8 x 2 (read2): 32 dwords.
    for p in 0..phases {
        let lanes = (0..lanes_per_phase).map(|j| if read128 { READ128_GROUPS[p % 4][j] + 32 * (p / 4) } else { p * lanes_per_phase + j });
        if let Some(worst) = phase_cost(shape, addr, exec, lanes, 32) {
            cycles += worst;
            conflicts += worst - 1;
        }
    }
    (cycles, conflicts)
}

/// One phase of a DS instruction over `lanes` (the active ones of `exec`): the largest number
/// of distinct dwords in one of `banks` banks, or `None` if no lane of the phase is active.
fn phase_cost(shape: &DsShape, addr: &[u32; 64], exec: u64, lanes: impl Iterator<Item = usize>, banks: u32) -> Option<u64> {
    // At most 16 lanes × 4 dwords or 32 × 2 (gfx950), 8 × 4 (gfx942) per phase.
    let mut dwords = [0u32; 64];
    let mut n = 0usize;
    for l in lanes {
        if l >= 64 || exec >> l & 1 == 0 {
            continue;
        }
        for a in 0..usize::from(shape.count) {
            let base = addr[l].wrapping_add(shape.offsets[a]);
            let (first, last) = (base / 4, base.wrapping_add(shape.bytes - 1) / 4);
            let mut d = first;
            loop {
                if n < dwords.len() {
                    dwords[n] = d;
                    n += 1;
                }
                if d == last {
                    break;
                }
                d = d.wrapping_add(1);
            }
        }
    }
    (n > 0).then(|| u64::from(worst_bank(&mut dwords[..n], banks)))
}

/// The lane groups a gfx950 `ds_read_b128` services together (module docs).
const CDNA4_READ128_GROUPS: [[usize; 16]; 4] = [
    [0, 1, 2, 3, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25, 26, 27],
    [32, 33, 34, 35, 44, 45, 46, 47, 52, 53, 54, 55, 56, 57, 58, 59],
    [4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 28, 29, 30, 31],
    [36, 37, 38, 39, 40, 41, 42, 43, 48, 49, 50, 51, 60, 61, 62, 63],
];

/// [`lds_cost`] of a gfx950 `ds_read_b64` / `ds_read_b128` (64 banks; module docs).
fn lds_cost_cdna4_read(shape: &DsShape, addr: &[u32; 64], exec: u64) -> (u64, u64) {
    let b128 = shape.bytes == 16;
    let (phases, per_phase) = if b128 { (4, 16) } else { (2, 32) };
    let (mut cycles, mut conflicts) = (0u64, 0u64);
    for p in 0..phases {
        let lanes = (0..per_phase).map(|j| if b128 { CDNA4_READ128_GROUPS[p][j] } else { p * per_phase + j });
        if let Some(worst) = phase_cost(shape, addr, exec, lanes, 64) {
            cycles += worst;
            conflicts += worst - 1;
        }
    }
    (cycles, conflicts)
}

/// The largest number of distinct values falling into one bank (`value mod banks`, banks ≤ 64).
/// Fast path: track up to two distinct values per bank; a third distinct value in a bank falls
/// back to sorting.
fn worst_bank(dwords: &mut [u32], nbanks: u32) -> u32 {
    let mut banks = [(0u32, 0u32, 0u8); 64];
    let mut worst = 1u8;
    for &d in dwords.iter() {
        let b = &mut banks[(d % nbanks) as usize];
        match b.2 {
            0 => *b = (d, 0, 1),
            1 if b.0 != d => {
                *b = (b.0, d, 2);
                worst = 2;
            }
            2 if b.0 != d && b.1 != d => return worst_bank_sorted(dwords, nbanks),
            _ => {}
        }
    }
    u32::from(worst)
}

fn worst_bank_sorted(dwords: &mut [u32], nbanks: u32) -> u32 {
    dwords.sort_unstable();
    let mut per_bank = [0u32; 64];
    let mut prev = None;
    for &d in dwords.iter() {
        if prev != Some(d) {
            per_bank[(d % nbanks) as usize] += 1;
            prev = Some(d);
        }
    }
    per_bank.iter().copied().max().unwrap_or(1).max(1)
}

/// The lane groups a `ds_read_b128` services together (lanes 0-31; the same + 32 for 32-63).
const READ128_GROUPS: [[usize; 8]; 4] =
    [[0, 1, 2, 3, 20, 21, 22, 23], [4, 5, 6, 7, 16, 17, 18, 19], [8, 9, 10, 11, 28, 29, 30, 31], [12, 13, 14, 15, 24, 25, 26, 27]];

/// Counters of one launch (summed over all workgroups and waves).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Wave-instructions by [`Kind`] (index = `Kind as usize`).
    pub kinds: [u64; Kind::COUNT],
    /// LDS cycles under the bank model of the module docs (phases plus conflict cycles).
    pub lds_cycles: u64,
    /// LDS bank-conflict cycles (the part of [`Counters::lds_cycles`] above one per phase).
    pub lds_conflict_cycles: u64,
    /// Bytes read from global memory by vector memory instructions (loads and atomics; lanes a
    /// buffer range check drops are not counted).
    pub global_read_bytes: u64,
    /// Bytes written to global memory by vector memory instructions (stores and atomics).
    pub global_write_bytes: u64,
    /// Line requests of vector memory loads (and atomics): per instruction, the runs of
    /// consecutive active lanes that fall in one 128-byte line — what the timing model charges
    /// the texture path and the L2 for ([`crate::timing`], "memory"). A fully coalesced
    /// instruction makes `bytes / 128` of them.
    pub global_load_requests: u64,
    /// Line requests of vector memory stores, as [`Counters::global_load_requests`].
    pub global_store_requests: u64,
    /// Bytes read by scalar memory loads (kernarg and constants).
    pub scalar_read_bytes: u64,
    /// Distinct global memory footprint of the vector memory instructions: distinct 128-byte
    /// lines touched × 128 (what a cache holding all reuse would fetch from DRAM once).
    pub global_footprint_bytes: u64,
    /// MFMA passes issued (4 cycles each on the issuing SIMD; see [`mfma_passes`]).
    pub mfma_passes: u64,
    /// Matrix FLOPs issued (`2·M·N·K` per MFMA wave-instruction).
    pub mfma_flops: u64,
}

impl Counters {
    /// Wave-instructions of one kind.
    pub fn count(&self, k: Kind) -> u64 {
        self.kinds[k as usize]
    }
    /// Adds `o` into `self`.
    pub fn merge(&mut self, o: &Counters) {
        for (a, b) in self.kinds.iter_mut().zip(o.kinds.iter()) {
            *a += b;
        }
        self.lds_cycles += o.lds_cycles;
        self.lds_conflict_cycles += o.lds_conflict_cycles;
        self.global_read_bytes += o.global_read_bytes;
        self.global_write_bytes += o.global_write_bytes;
        self.global_load_requests += o.global_load_requests;
        self.global_store_requests += o.global_store_requests;
        self.scalar_read_bytes += o.scalar_read_bytes;
        self.mfma_passes += o.mfma_passes;
        self.mfma_flops += o.mfma_flops;
    }
}

/// The steady state of a launch: the hottest loop, i.e. the backward branch whose target
/// instruction was executed most often (summed over all waves; ties go to the shorter loop), and
/// the instruction mix inside its body `[start_pc, end_pc]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SteadyState {
    /// Address of the loop head (the backward branch's target).
    pub start_pc: u64,
    /// Address of the backward branch.
    pub end_pc: u64,
    /// Executions of the loop head (iterations summed over all waves).
    pub iterations: u64,
    /// Wave-instructions executed inside the loop body.
    pub instructions: u64,
    /// MFMA wave-instructions executed inside the loop body.
    pub mfma: u64,
}

impl SteadyState {
    /// MFMA share of the issued instructions inside the hottest loop (0 when empty).
    pub fn mfma_share(&self) -> f64 {
        if self.instructions == 0 { 0.0 } else { self.mfma as f64 / self.instructions as f64 }
    }
}

/// Finds the hottest loop from per-instruction execution counts (`counts[i]` = executions of
/// instruction `i`). `targets[i]` is the branch target index of instruction `i` (`u32::MAX` when
/// none); a branch is backward when its target is at or before it.
pub(crate) fn steady_state(pcs: &[u64], insts: &[Result<Inst, crate::decode::DecodeError>], targets: &[u32], counts: &[u64]) -> Option<SteadyState> {
    let mut best: Option<(u64, usize, usize)> = None;
    for (i, &t) in targets.iter().enumerate() {
        let t = t as usize;
        if t == u32::MAX as usize || t > i || counts.get(i).copied().unwrap_or(0) == 0 {
            continue;
        }
        if !matches!(insts.get(i), Some(Ok(inst)) if Kind::of(inst) == Kind::Branch) || t >= counts.len() {
            continue;
        }
        let heat = counts[t];
        let better = match best {
            None => true,
            Some((h, s, e)) => heat > h || (heat == h && i - t < e - s),
        };
        if better {
            best = Some((heat, t, i));
        }
    }
    let (iterations, s, e) = best?;
    let mut st = SteadyState { start_pc: pcs[s], end_pc: pcs[e], iterations, ..Default::default() };
    for i in s..=e {
        st.instructions += counts[i];
        if let Some(Ok(inst)) = insts.get(i)
            && Kind::of(inst) == Kind::Mfma
        {
            st.mfma += counts[i];
        }
    }
    Some(st)
}

#[cfg(test)]
mod mfma_pass_tests {
    use super::*;

    #[test]
    fn passes_of_cdna3_and_cdna4_mfmas() {
        // CDNA3 FP8/i8/bf16 rates (hardware.md "Matrix cores"), the same on gfx950.
        assert_eq!(mfma_passes(Op::v_mfma_f32_16x16x32_fp8_fp8), Some(4));
        assert_eq!(mfma_passes(Op::v_mfma_f32_32x32x16_fp8_fp8), Some(8));
        assert_eq!(mfma_passes(Op::v_mfma_i32_16x16x32_i8), Some(4));
        assert_eq!(mfma_passes(Op::v_mfma_f32_16x16x16_bf16), Some(4));
        assert_eq!(mfma_passes(Op::v_mfma_f32_32x32x8_bf16), Some(8));
        assert_eq!(mfma_passes(Op::s_nop), None);
        // CBSZ/BLGP are broadcast controls on CDNA3 MFMAs: no effect on the rate.
        assert_eq!(mfma_passes_named("v_mfma_f32_16x16x32_fp8_fp8", 4, 4), Some(4));
        // gfx950 f8f6f4 by mnemonic and operand formats (0 FP8, 1 BF8, 2 FP6, 3 BF6, 4 FP4).
        for (a, b) in [(0, 0), (1, 1), (0, 1), (0, 4), (2, 1)] {
            assert_eq!(mfma_passes_named("v_mfma_f32_16x16x128_f8f6f4", a, b), Some(8), "{a} {b}");
            assert_eq!(mfma_passes_named("v_mfma_f32_32x32x64_f8f6f4", a, b), Some(16), "{a} {b}");
        }
        for (a, b) in [(2, 2), (3, 4), (4, 4), (2, 3)] {
            assert_eq!(mfma_passes_named("v_mfma_f32_16x16x128_f8f6f4", a, b), Some(4), "{a} {b}");
            assert_eq!(mfma_passes_named("v_mfma_f32_32x32x64_f8f6f4", a, b), Some(8), "{a} {b}");
        }
        assert_eq!(mfma_passes_named("v_mfma_scale_f32_16x16x128_f8f6f4", 0, 0), Some(8));
        assert_eq!(mfma_passes_named("v_add_f32", 0, 0), None);
    }
}
