//! LLVM-syntax printer for decoded gfx942 instructions: the text `llvm-objdump -d --mcpu=gfx942`
//! prints before its `//` comment (mnemonic and operands; branch operands as the raw signed
//! word offset, as LLVM prints them).

use std::fmt::Write;

use crate::decode::{AGPR0, DecodeError, Enc, Field, Inst, LITERAL, Op, Program, RegClass, VGPR0, flag, sreg};
use crate::loader::{CodeObject, Kernel};

/// Disassembles every instruction of `kernel`; the first undecodable word is an error.
pub fn disassemble(co: &CodeObject, kernel: &Kernel) -> Result<Vec<(u64, String)>, DecodeError> {
    let prog = Program::decode(co, kernel)?;
    let mut out = Vec::with_capacity(prog.insts.len());
    for (pc, r) in prog.insts {
        let inst = r?;
        out.push((pc, format_inst(&inst)));
    }
    Ok(out)
}

/// Prints an operand code of `width` dwords (see [`crate::decode`] for the code space).
pub fn operand(code: u16, width: u8, lit: u32) -> String {
    let w = u16::from(width.max(1));
    let range = |p: &str, n: u16| if w == 1 { format!("{p}{n}") } else { format!("{p}[{n}:{}]", n + w - 1) };
    let pair = |base: u16, name: &str| -> String {
        if w == 2 && code == base {
            name.to_string()
        } else if code == base {
            format!("{name}_lo")
        } else {
            format!("{name}_hi")
        }
    };
    match code {
        // Multi-dword SGPR operands are aligned (pairs to 2, wider to 4), as LLVM decodes them.
        0..=101 if w == 2 => range("s", code & !1),
        0..=101 if w > 2 => range("s", code & !3),
        0..=101 => range("s", code),
        102..=103 => pair(102, "flat_scratch"),
        104..=105 => pair(104, "xnack_mask"),
        106..=107 => pair(106, "vcc"),
        108..=123 => range("ttmp", code - 108),
        124 => "m0".into(),
        126..=127 => pair(126, "exec"),
        128..=192 => format!("{}", code - 128),
        193..=208 => format!("-{}", code - 192),
        235 => "src_shared_base".into(),
        236 => "src_shared_limit".into(),
        237 => "src_private_base".into(),
        238 => "src_private_limit".into(),
        239 => "src_pops_exiting_wave_id".into(),
        240 => "0.5".into(),
        241 => "-0.5".into(),
        242 => "1.0".into(),
        243 => "-1.0".into(),
        244 => "2.0".into(),
        245 => "-2.0".into(),
        246 => "4.0".into(),
        247 => "-4.0".into(),
        248 => "0.15915494".into(),
        251 => "src_vccz".into(),
        252 => "src_execz".into(),
        253 => "src_scc".into(),
        254 => "src_lds_direct".into(),
        LITERAL => format!("{lit:#x}"),
        VGPR0..=511 => range("v", code - VGPR0),
        AGPR0..=767 => range("a", code - AGPR0),
        _ => format!("<bad operand {code}>"),
    }
}

fn src_index(f: Field) -> Option<usize> {
    match f {
        Field::Src0 => Some(0),
        Field::Src1 => Some(1),
        Field::Src2 => Some(2),
        _ => None,
    }
}

fn bitlist(v: u8, n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| ((v >> i) & 1).to_string()).collect();
    format!("[{}]", items.join(","))
}

fn hwreg(simm: u16) -> String {
    let id = simm & 0x3f;
    let off = (simm >> 6) & 0x1f;
    let size = ((simm >> 11) & 0x1f) + 1;
    let name = match id {
        1 => Some("HW_REG_MODE"),
        2 => Some("HW_REG_STATUS"),
        3 => Some("HW_REG_TRAPSTS"),
        4 => Some("HW_REG_HW_ID"),
        5 => Some("HW_REG_GPR_ALLOC"),
        6 => Some("HW_REG_LDS_ALLOC"),
        7 => Some("HW_REG_IB_STS"),
        15 => Some("HW_REG_SH_MEM_BASES"),
        20 => Some("HW_REG_XCC_ID"),
        _ => None,
    };
    let id_s = name.map_or(id.to_string(), str::to_string);
    if off == 0 && size == 32 { format!("hwreg({id_s})") } else { format!("hwreg({id_s}, {off}, {size})") }
}

fn waitcnt(simm: u16) -> String {
    let vm = (simm & 0xf) | ((simm >> 10) & 0x30);
    let exp = (simm >> 4) & 7;
    let lgkm = (simm >> 8) & 0xf;
    let mut parts = Vec::new();
    if vm != 63 {
        parts.push(format!("vmcnt({vm})"));
    }
    if exp != 7 {
        parts.push(format!("expcnt({exp})"));
    }
    if lgkm != 15 {
        parts.push(format!("lgkmcnt({lgkm})"));
    }
    if parts.is_empty() {
        parts = vec![format!("vmcnt({vm})"), format!("expcnt({exp})"), format!("lgkmcnt({lgkm})")];
    }
    parts.join(" ")
}

/// Formats one instruction as llvm-objdump prints it (without the trailing comment).
pub fn format_inst(inst: &Inst) -> String {
    let info = inst.info;
    let mut s = String::from(inst.name());
    let mut ops: Vec<String> = Vec::new();
    match inst.enc {
        Enc::Sopp => {
            match inst.op {
                Op::s_waitcnt => ops.push(waitcnt(inst.imm as u16)),
                Op::s_endpgm if inst.imm == 0 => {}
                Op::s_set_gpr_idx_mode => ops.push(gpr_idx(inst.imm as u8)),
                _ if crate::decode::is_branch(inst.op) => ops.push((inst.imm as u16).to_string()),
                _ if info.has(Field::Literal) => ops.push((inst.imm as u16).to_string()),
                _ => {}
            }
            return finish(s, ops);
        }
        Enc::Sopk => {
            let k = inst.imm as u16;
            match inst.op {
                Op::s_getreg_b32 => ops.extend([operand(inst.dst, 1, 0), hwreg(k)]),
                Op::s_setreg_b32 => ops.extend([hwreg(k), operand(inst.dst, 1, 0)]),
                // LLVM prints a literal equal to an inline float constant by its value.
                Op::s_setreg_imm32_b32 => ops.extend([hwreg(k), float_literal(inst.lit)]),
                Op::s_call_b64 | Op::s_cbranch_i_fork => ops.extend([operand(inst.dst, 2, 0), (k as i16).to_string()]),
                _ => ops.extend([operand(inst.dst, info.width(Field::Dst), 0), format!("{k:#x}")]),
            }
            return finish(s, ops);
        }
        _ => {}
    }
    if inst.op == Op::s_set_gpr_idx_on {
        let mode = if inst.src[1] > 15 { format!("{:#x}", inst.src[1]) } else { gpr_idx(inst.src[1] as u8) };
        return finish(s, vec![operand(inst.src[0], 1, 0), mode]);
    }
    if matches!(inst.op, Op::s_atc_probe | Op::s_atc_probe_buffer) {
        // The first operand is the sdata field as a plain number.
        let mut ops = vec![inst.dst.to_string(), operand(inst.src[0], info.width(Field::Base), 0)];
        if inst.has_flag(flag::SMEM_IMM) {
            ops.push(format!("{:#x}", inst.imm));
        } else {
            ops.push(operand(inst.sdst, 1, 0));
        }
        return finish(s, ops);
    }
    if matches!(inst.op, Op::v_readlane_b32 | Op::v_writelane_b32) {
        ops.extend([operand(inst.dst, 1, 0), operand(inst.src[0], 1, 0), operand(inst.src[1], 1, 0)]);
        return finish(s, ops);
    }
    if inst.has_flag(flag::SDWA) {
        return format_sdwa(inst);
    }
    if inst.has_flag(flag::DPP) {
        return format_dpp(inst);
    }
    let flat = matches!(inst.enc, Enc::Flat | Enc::Global | Enc::Scratch);
    let saddr_on = inst.src[2] != 0x7f;
    let mut seen_addr = false;
    // FLAT / GLOBAL atomics with SC0 (glc) return the old value: LLVM prints that destination
    // first (`flat_atomic_add v2, v[2:3], v4 sc0 sc1`); its width is the data's (half of it for
    // cmpswap, whose data holds the compare value too). The slot table lists no Dst for them.
    if flat && info.name.contains("_atomic_") && inst.has_flag(flag::SC0) {
        let data = info.width(Field::Data).max(1);
        let width = if info.name.contains("cmpswap") { (data / 2).max(1) } else { data };
        ops.push(operand(inst.dst, width, 0));
    }
    for slot in info.slots {
        let text = match slot.field {
            Field::Vcc => "vcc".to_string(),
            Field::Literal if inst.enc == Enc::Smem => continue,
            Field::Literal => format!("{:#x}", inst.lit),
            Field::Text(t) => t.to_string(),
            Field::Off | Field::Addr | Field::Saddr if flat => {
                let is_addr = slot.field == Field::Addr || (slot.field == Field::Off && inst.enc == Enc::Scratch && !seen_addr);
                if is_addr {
                    seen_addr = true;
                    match inst.enc {
                        Enc::Scratch if !inst.has_flag(flag::SVE) => "off".into(),
                        Enc::Scratch => operand(inst.src[0], 1, 0),
                        Enc::Global if saddr_on => operand(inst.src[0], 1, 0),
                        _ => operand(inst.src[0], 2, 0),
                    }
                } else if !saddr_on {
                    "off".into()
                } else {
                    operand(inst.src[2], if inst.enc == Enc::Scratch { 1 } else { 2 }, 0)
                }
            }
            // MUBUF loads to LDS have no VGPR data operand.
            Field::Data if inst.enc == Enc::Mubuf && inst.has_flag(flag::LDS) => continue,
            Field::Addr if inst.enc == Enc::Mubuf => {
                let n = u8::from(inst.has_flag(flag::OFFEN)) + u8::from(inst.has_flag(flag::IDXEN));
                if n == 0 { "off".into() } else { operand(inst.src[0], n, 0) }
            }
            f => {
                let code = inst.field_code(f).unwrap_or(0);
                // gfx950 f8f6f4 MFMA sources are as wide as cbsz / blgp's format needs.
                let width = match f {
                    Field::Src0 if crate::decode::is_f8f6f4(inst.op) => crate::decode::F8f6f4Format::regs_of_field(inst.abs),
                    Field::Src1 if crate::decode::is_f8f6f4(inst.op) => crate::decode::F8f6f4Format::regs_of_field(inst.neg),
                    _ => slot.width,
                };
                let mut t = operand(code, width, inst.lit);
                if let (Enc::Vop3, Some(i)) = (inst.enc, src_index(f)) {
                    if inst.abs >> i & 1 != 0 && info.mods >> i & 1 != 0 {
                        t = format!("|{t}|");
                    }
                    if inst.neg >> i & 1 != 0 && info.mods >> (i + 3) & 1 != 0 {
                        t = format!("-{t}");
                    }
                }
                if let (Enc::Vop3p, Some(i)) = (inst.enc, src_index(f))
                    && matches!(inst.op, Op::v_fma_mix_f32 | Op::v_fma_mixlo_f16 | Op::v_fma_mixhi_f16)
                {
                    if inst.abs >> i & 1 != 0 {
                        t = format!("|{t}|");
                    }
                    if inst.neg >> i & 1 != 0 {
                        t = format!("-{t}");
                    }
                }
                t
            }
        };
        ops.push(text);
    }
    let mut s2 = String::new();
    match inst.enc {
        Enc::Smem if !info.has(Field::Base) => {}
        Enc::Smem => {
            // Offset operand.
            if inst.has_flag(flag::SMEM_IMM) && !inst.has_flag(flag::SMEM_SOE) {
                ops.push(format!("{:#x}", inst.imm));
            } else if inst.has_flag(flag::SMEM_SOE) && !inst.has_flag(flag::SMEM_IMM) {
                ops.push(operand(inst.sdst, 1, 0));
            } else if inst.has_flag(flag::SMEM_SOE) {
                ops.push(operand(inst.sdst, 1, 0));
                let _ = write!(s2, " offset:{:#x}", inst.imm);
            }
            if inst.has_flag(flag::SC0) {
                s2.push_str(" glc");
            }
        }
        Enc::Vop3 => {
            let nsrc = info.slots.iter().filter(|sl| src_index(sl.field).is_some()).count();
            if matches!(inst.op, Op::v_bitop3_b16 | Op::v_bitop3_b32) {
                // gfx950 v_bitop3: the 8-bit truth table is spread over the neg (bits 2:0),
                // abs (5:3) and omod (7:6) fields (LLVM `VOP3Instructions.td`, VOP3_BITOP3).
                let t = u32::from(inst.neg) | u32::from(inst.abs) << 3 | u32::from(inst.omod) << 6;
                if t != 0 {
                    let _ = if t < 10 { write!(s2, " bitop3:{t}") } else { write!(s2, " bitop3:{t:#x}") };
                }
                if inst.opsel != 0 && info.opsel {
                    let _ = write!(s2, " op_sel:{}", bitlist(opsel_print(inst.opsel, nsrc), nsrc + 1));
                }
                let mut s = finish(s, ops);
                s.push_str(&s2);
                return s;
            }
            if matches!(inst.op, Op::v_permlane16_swap_b32 | Op::v_permlane32_swap_b32) {
                // gfx950 permlane swaps: op_sel bit 0 is `fi`, bit 1 `bound_ctrl` (LLVM
                // `VOP3Instructions.td`, VOP3_PERMLANE_SWAP).
                if inst.opsel & 2 != 0 {
                    s2.push_str(" bound_ctrl:1");
                }
                if inst.opsel & 1 != 0 {
                    s2.push_str(" fi:1");
                }
                let mut s = finish(s, ops);
                s.push_str(&s2);
                return s;
            }
            if inst.opsel != 0 && info.opsel {
                // v_cvt_sr_* and gfx950's v_cvt_scalef32_pk_fp4_{f16,bf16}: the tied old value
                // counts as src2, so op_sel has 4 entries.
                let sr = matches!(inst.op, Op::v_cvt_sr_fp8_f32 | Op::v_cvt_sr_bf8_f32 | Op::v_cvt_scalef32_pk_fp4_f16 | Op::v_cvt_scalef32_pk_fp4_bf16);
                let n = if sr { 3 } else { nsrc };
                let _ = write!(s2, " op_sel:{}", bitlist(opsel_print(inst.opsel, n), n + 1));
            }
            if inst.has_flag(flag::CLAMP) {
                s2.push_str(" clamp");
            }
            match inst.omod {
                1 => s2.push_str(" mul:2"),
                2 => s2.push_str(" mul:4"),
                3 => s2.push_str(" div:2"),
                _ => {}
            }
        }
        Enc::Vop3p => {
            let nsrc = info.slots.iter().filter(|sl| src_index(sl.field).is_some()).count();
            if crate::decode::is_mai(inst.op) {
                if inst.has_flag(flag::MFMA_SCALE) {
                    // v_mfma_scale_*: the scale operands follow C; the prefix's op_sel /
                    // op_sel_hi, 3 entries each of which LLVM uses (and prints) the first two;
                    // op_sel_hi is always printed.
                    for (code, _) in inst.mfma_scale_srcs() {
                        ops.push(operand(code, 1, 0));
                    }
                    if inst.offset1 & 3 != 0 {
                        let _ = write!(s2, " op_sel:{}", bitlist(inst.offset1 & 3, 3));
                    }
                    let _ = write!(s2, " op_sel_hi:{}", bitlist(inst.opsel_hi & 3, 3));
                }
                if inst.abs != 0 {
                    let _ = write!(s2, " cbsz:{}", inst.abs);
                }
                if inst.opsel != 0 {
                    let _ = write!(s2, " abid:{}", inst.opsel);
                }
                if inst.neg != 0 {
                    let _ = write!(s2, " blgp:{}", inst.neg);
                }
            } else if !matches!(inst.op, Op::v_accvgpr_read_b32 | Op::v_accvgpr_write_b32) {
                let mix = matches!(inst.op, Op::v_fma_mix_f32 | Op::v_fma_mixlo_f16 | Op::v_fma_mixhi_f16);
                let int8 = matches!(inst.op, Op::v_dot4_i32_i8 | Op::v_dot4_u32_u8 | Op::v_dot8_i32_i4 | Op::v_dot8_u32_u4);
                let mask = ((1u16 << nsrc) - 1) as u8;
                if inst.opsel & mask != 0 {
                    let _ = write!(s2, " op_sel:{}", bitlist(inst.opsel, nsrc));
                }
                let hi = inst.opsel_hi & mask;
                if (mix && hi != 0) || (!mix && !int8 && hi != mask) {
                    let _ = write!(s2, " op_sel_hi:{}", bitlist(hi, nsrc));
                }
                if !mix {
                    if inst.neg & mask != 0 {
                        let _ = write!(s2, " neg_lo:{}", bitlist(inst.neg, nsrc));
                    }
                    if inst.abs & mask != 0 {
                        let _ = write!(s2, " neg_hi:{}", bitlist(inst.abs, nsrc));
                    }
                }
                if inst.has_flag(flag::CLAMP) {
                    s2.push_str(" clamp");
                }
            }
        }
        Enc::Ds if inst.op == Op::ds_swizzle_b32 => {
            if inst.imm != 0 {
                let _ = write!(s2, " offset:{}", swizzle(inst.imm as u16));
            }
            if inst.has_flag(flag::GDS) {
                s2.push_str(" gds");
            }
        }
        Enc::Ds => {
            let two = info.slots.iter().any(|_| true) && ds_two(inst);
            if two {
                if inst.imm != 0 {
                    let _ = write!(s2, " offset0:{}", inst.imm);
                }
                if inst.offset1 != 0 {
                    let _ = write!(s2, " offset1:{}", inst.offset1);
                }
            } else if inst.imm != 0 {
                let _ = write!(s2, " offset:{}", inst.imm);
            }
            if inst.has_flag(flag::GDS) {
                s2.push_str(" gds");
            }
        }
        Enc::Flat | Enc::Global | Enc::Scratch => {
            if inst.imm != 0 {
                let _ = write!(s2, " offset:{}", inst.imm);
            }
            cpol(inst, &mut s2);
        }
        Enc::Mubuf => {
            if inst.has_flag(flag::OFFEN) {
                s2.push_str(" offen");
            }
            if inst.has_flag(flag::IDXEN) {
                s2.push_str(" idxen");
            }
            if inst.imm != 0 {
                let _ = write!(s2, " offset:{}", inst.imm);
            }
            cpol(inst, &mut s2);
            if inst.has_flag(flag::LDS) {
                s2.push_str(" lds");
            }
        }
        _ => {}
    }
    s = finish(s, ops);
    s.push_str(&s2);
    s
}

fn opsel_print(opsel: u8, nsrc: usize) -> u8 {
    // VOP3 op_sel bit 3 is the destination; LLVM prints [src0, src1, (src2,) dst].
    let srcs = opsel & ((1 << nsrc) - 1);
    srcs | ((opsel >> 3) & 1) << nsrc
}

fn ds_two(inst: &Inst) -> bool {
    let n = inst.info.name;
    n.contains("read2") || n.contains("write2") || n.contains("wrxchg2")
}

fn cpol(inst: &Inst, s: &mut String) {
    if inst.has_flag(flag::SC0) {
        s.push_str(" sc0");
    }
    if inst.has_flag(flag::SC1) {
        s.push_str(" sc1");
    }
    if inst.has_flag(flag::NT) {
        s.push_str(" nt");
    }
}

fn finish(mut s: String, ops: Vec<String>) -> String {
    if !ops.is_empty() {
        s.push(' ');
        s.push_str(&ops.join(", "));
    }
    s
}

#[allow(dead_code)]
fn _unused(_: RegClass, _: u16) -> u16 {
    sreg::VCC
}

const SEL: [&str; 8] = ["BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD", "?"];
const UNUSED: [&str; 4] = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE", "?"];

fn format_sdwa(inst: &Inst) -> String {
    use crate::decode::sdwa;
    let info = inst.info;
    let base = info.name.strip_suffix("_e32").unwrap_or(info.name);
    let mut ops = Vec::new();
    for slot in info.slots {
        let t = match slot.field {
            Field::Vcc => "vcc".to_string(),
            Field::Dst if inst.enc == Enc::Vopc => operand(inst.dst, 2, 0),
            f => {
                let mut t = operand(inst.field_code(f).unwrap_or(0), slot.width, inst.lit);
                if let Some(i) = src_index(f) {
                    if inst.abs >> i & 1 != 0 {
                        t = format!("|{t}|");
                    }
                    if inst.neg >> i & 1 != 0 {
                        t = format!("-{t}");
                    }
                    let sext = if i == 0 { sdwa::src0_sext(inst.sdwa) } else { sdwa::src1_sext(inst.sdwa) };
                    if sext {
                        t = format!("sext({t})");
                    }
                }
                t
            }
        };
        ops.push(t);
    }
    if inst.enc == Enc::Vopc && !info.slots.iter().any(|s| s.field == Field::Vcc) {
        ops.insert(0, operand(inst.dst, 2, 0));
    } else if inst.enc == Enc::Vopc && inst.dst != sreg::VCC {
        ops[0] = operand(inst.dst, 2, 0);
    }
    let mut s = finish(format!("{base}_sdwa"), ops);
    if inst.has_flag(flag::CLAMP) {
        s.push_str(" clamp");
    }
    match inst.omod {
        1 => s.push_str(" mul:2"),
        2 => s.push_str(" mul:4"),
        3 => s.push_str(" div:2"),
        _ => {}
    }
    let w = inst.sdwa;
    let cvt8 = matches!(inst.op, Op::v_cvt_f32_fp8 | Op::v_cvt_f32_bf8 | Op::v_cvt_pk_f32_fp8 | Op::v_cvt_pk_f32_bf8);
    if !cvt8 && inst.enc != Enc::Vopc {
        let _ = write!(s, " dst_sel:{} dst_unused:{}", SEL[sdwa::dst_sel(w) as usize], UNUSED[sdwa::dst_unused(w) as usize]);
    }
    let _ = write!(s, " src0_sel:{}", SEL[sdwa::src0_sel(w) as usize]);
    if inst.enc != Enc::Vop1 {
        let _ = write!(s, " src1_sel:{}", SEL[sdwa::src1_sel(w) as usize]);
    }
    s
}

fn format_dpp(inst: &Inst) -> String {
    use crate::decode::dpp;
    let info = inst.info;
    let base = info.name.strip_suffix("_e32").unwrap_or(info.name);
    let mut ops = Vec::new();
    for slot in info.slots {
        let t = match slot.field {
            Field::Vcc => "vcc".to_string(),
            f => {
                let mut t = operand(inst.field_code(f).unwrap_or(0), slot.width, inst.lit);
                if let Some(i) = src_index(f) {
                    if inst.abs >> i & 1 != 0 {
                        t = format!("|{t}|");
                    }
                    if inst.neg >> i & 1 != 0 {
                        t = format!("-{t}");
                    }
                }
                t
            }
        };
        ops.push(t);
    }
    let mut s = finish(format!("{base}_dpp"), ops);
    let w = inst.sdwa;
    let c = dpp::ctrl(w);
    let ctrl = match c {
        0..=0xff => format!("quad_perm:[{},{},{},{}]", c & 3, (c >> 2) & 3, (c >> 4) & 3, (c >> 6) & 3),
        0x101..=0x10f => format!("row_shl:{}", c & 15),
        0x111..=0x11f => format!("row_shr:{}", c & 15),
        0x121..=0x12f => format!("row_ror:{}", c & 15),
        0x130 => "wave_shl:1".into(),
        0x134 => "wave_rol:1".into(),
        0x138 => "wave_shr:1".into(),
        0x13c => "wave_ror:1".into(),
        0x140 => "row_mirror".into(),
        0x141 => "row_half_mirror".into(),
        0x142 => "row_bcast:15".into(),
        0x143 => "row_bcast:31".into(),
        0x150..=0x15f => format!("row_newbcast:{}", c & 15),
        other => format!("<dpp_ctrl {other:#x}>"),
    };
    let _ = write!(s, " {ctrl} row_mask:{:#x} bank_mask:{:#x}", dpp::row_mask(w), dpp::bank_mask(w));
    if dpp::bound_ctrl(w) {
        s.push_str(" bound_ctrl:1");
    }
    s
}

/// `gpr_idx(SRC0,SRC1,SRC2,DST)` for the VGPR index mode bits.
fn gpr_idx(mode: u8) -> String {
    let names = ["SRC0", "SRC1", "SRC2", "DST"];
    let on: Vec<&str> = (0..4).filter(|i| mode >> i & 1 != 0).map(|i| names[i]).collect();
    format!("gpr_idx({})", on.join(","))
}

/// The ds_swizzle_b32 offset in LLVM's symbolic form (QUAD_PERM, SWAP, REVERSE, BROADCAST or
/// BITMASK_PERM).
fn swizzle(imm: u16) -> String {
    if imm & 0xff00 == 0x8000 {
        let sel: Vec<String> = (0..4).map(|i| ((imm >> (2 * i)) & 3).to_string()).collect();
        return format!("swizzle(QUAD_PERM,{})", sel.join(","));
    }
    if imm & 0x8000 != 0 {
        return imm.to_string();
    }
    let and = imm & 0x1f;
    let or = (imm >> 5) & 0x1f;
    let xor = (imm >> 10) & 0x1f;
    if and == 0x1f && or == 0 && xor.count_ones() == 1 {
        return format!("swizzle(SWAP,{xor})");
    }
    if and == 0x1f && or == 0 && xor > 0 && (xor + 1).is_power_of_two() {
        return format!("swizzle(REVERSE,{})", xor + 1);
    }
    let group = 0x1f - and + 1;
    if group > 1 && group.is_power_of_two() && or < group && xor == 0 {
        return format!("swizzle(BROADCAST,{group},{or})");
    }
    let p0 = or ^ xor;
    let p1 = ((0x1f & and) | or) ^ xor;
    let mut m = String::from("swizzle(BITMASK_PERM,\"");
    for bit in (0..5).rev() {
        let (a, b) = (p0 >> bit & 1 != 0, p1 >> bit & 1 != 0);
        m.push(match (a, b) {
            (true, true) => '1',
            (false, false) => '0',
            (false, true) => 'p',
            (true, false) => 'i',
        });
    }
    m.push_str("\")");
    m
}

/// A 32-bit immediate printed like an inline constant when it is one (0..=64, -16..=-1, the
/// inline floats, 1/(2π)), else in hex — how LLVM prints s_setreg_imm32_b32's value.
fn float_literal(v: u32) -> String {
    if v <= 64 {
        return v.to_string();
    }
    if (-16..=-1).contains(&(v as i32)) {
        return (v as i32).to_string();
    }
    if v == 0x3e22_f983 {
        return "0.15915494".into();
    }
    let names = [(0.5f32, "0.5"), (-0.5, "-0.5"), (1.0, "1.0"), (-1.0, "-1.0"), (2.0, "2.0"), (-2.0, "-2.0"), (4.0, "4.0"), (-4.0, "-4.0")];
    names.iter().find(|(f, _)| f.to_bits() == v).map_or(format!("{v:#x}"), |(_, n)| n.to_string())
}
