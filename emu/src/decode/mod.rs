//! Decoder for the GFX9 / CDNA3 (gfx942) and CDNA4 (gfx950) instruction encodings LLVM emits:
//! SOP1/SOP2/SOPC/SOPK/SOPP, SMEM, VOP1/VOP2/VOPC/VOP3(a/b)/VOP3P (incl. MAI), DS,
//! FLAT/GLOBAL/SCRATCH and MUBUF, with literal and inline constants (AMD "CDNA3 Instruction Set
//! Architecture", chapter 13 "Microcode Formats"; CDNA4 keeps the formats and adds opcodes).
//!
//! Mnemonics and operand layouts come from the private `tables` module, generated from LLVM's
//! own disassembler (`emu/tests/data/gen_tables.py`) for `--mcpu=gfx942` and, as an overlay of
//! the opcodes that differ, `--mcpu=gfx950`: [`decode_one_for`] takes the
//! [`Target`] (a code object's, from its ELF `e_flags`); [`decode_one`] decodes gfx942.
//! gfx950's block-scaled MFMAs (`v_mfma_scale_*`, a `v_mfma_ld_scale_b32` prefix fused with the
//! MFMA that follows) decode as one 16-byte [`Inst`] flagged [`flag::MFMA_SCALE`]. A decoded [`Inst`] keeps every operand as a
//! unified 10-bit *operand code* so the executor never re-parses bits:
//! `0..=255` scalar source encoding (SGPRs, VCC, EXEC, M0, inline constants, 255 = literal),
//! `256..=511` VGPR `v(code-256)`, `512..=767` AccVGPR `a(code-512)`.

mod tables;

pub use tables::Op;

use crate::loader::{CodeObject, Kernel, Target};
pub use crate::numerics::mfma::F8f6f4Format;

/// Operand code of the first VGPR.
pub const VGPR0: u16 = 256;
/// Operand code of the first AccVGPR.
pub const AGPR0: u16 = 512;
/// Scalar source code of a literal constant.
pub const LITERAL: u16 = 255;
/// Scalar register numbers with special meaning on gfx9.
pub mod sreg {
    /// VCC_LO (VCC is the pair 106:107).
    pub const VCC: u16 = 106;
    /// M0.
    pub const M0: u16 = 124;
    /// EXEC_LO (EXEC is the pair 126:127).
    pub const EXEC: u16 = 126;
    /// FLAT_SCRATCH_LO.
    pub const FLAT_SCRATCH: u16 = 102;
}

/// Instruction encoding (microcode format).
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Enc {
    Sop2,
    Sopk,
    Sop1,
    Sopc,
    Sopp,
    Smem,
    Vop2,
    Vop1,
    Vopc,
    Vop3,
    Vop3p,
    Ds,
    Flat,
    Global,
    Scratch,
    Mubuf,
}

/// Which instruction field an operand slot comes from.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Dst,
    Src0,
    Src1,
    Src2,
    Sdst,
    Base,
    Addr,
    Data0,
    Data1,
    Data,
    Saddr,
    Rsrc,
    Soffset,
    /// The fixed text `vcc`.
    Vcc,
    /// The fixed text `off`.
    Off,
    /// The literal constant (fmamk/fmaak) or an immediate.
    Literal,
    /// Operation-specific text printed by the disassembler itself.
    Text(&'static str),
    /// A field the table generator could not attribute.
    Unknown,
}

/// Register class of an operand slot as LLVM prints it.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegClass {
    V,
    A,
    S,
    K,
}

/// One printed operand of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Source field.
    pub field: Field,
    /// Register class.
    pub class: RegClass,
    /// Width in dwords.
    pub width: u8,
}

/// Static description of one (encoding, opcode).
#[derive(Debug)]
pub struct OpInfo {
    /// The operation.
    pub op: Op,
    /// Mnemonic as printed (with `_e32`/`_e64` where LLVM prints it).
    pub name: &'static str,
    /// Operands in printed order.
    pub slots: &'static [Slot],
    /// VOP3 form accepts `op_sel` (LLVM prints it; other VOP3 ops ignore those bits).
    pub opsel: bool,
    /// VOP3 sources that accept modifiers: bit i = abs on src i, bit 3 + i = neg on src i.
    pub mods: u8,
}

impl OpInfo {
    /// Width in dwords of the operand taken from `field` (1 if the operation has no such slot).
    pub fn width(&self, field: Field) -> u8 {
        self.slots.iter().find(|s| s.field == field).map_or(1, |s| s.width.max(1))
    }
    /// Whether the operation has an operand from `field`.
    pub fn has(&self, field: Field) -> bool {
        self.slots.iter().any(|s| s.field == field)
    }
}

/// Instruction flag bits ([`Inst::flags`]).
pub mod flag {
    /// GLC / SC0.
    pub const SC0: u16 = 1;
    /// SLC / NT.
    pub const NT: u16 = 2;
    /// SC1 (gfx940).
    pub const SC1: u16 = 4;
    /// MUBUF offen.
    pub const OFFEN: u16 = 8;
    /// MUBUF idxen.
    pub const IDXEN: u16 = 16;
    /// LDS bit (MUBUF / FLAT load to LDS).
    pub const LDS: u16 = 32;
    /// DS gds.
    pub const GDS: u16 = 64;
    /// VOP3 / VOP3P clamp.
    pub const CLAMP: u16 = 128;
    /// SMEM immediate offset present.
    pub const SMEM_IMM: u16 = 256;
    /// SMEM SGPR offset present.
    pub const SMEM_SOE: u16 = 512;
    /// Scratch: VGPR address present (SVE).
    pub const SVE: u16 = 1024;
    /// MAI: destination and C in AccVGPRs.
    pub const ACC_CD: u16 = 2048;
    /// SDWA form of a VOP1/VOP2/VOPC instruction ([`super::Inst::sdwa`] holds the SDWA dword).
    pub const SDWA: u16 = 4096;
    /// DPP form of a VOP1/VOP2/VOPC instruction ([`super::Inst::sdwa`] holds the DPP dword).
    pub const DPP: u16 = 8192;
    /// gfx950 block-scaled f8f6f4 MFMA (`v_mfma_scale_f32_*_f8f6f4`: a `v_mfma_ld_scale_b32`
    /// prefix fused with the MFMA, 16 bytes).
    pub const MFMA_SCALE: u16 = 16384;
}

/// A decoded instruction.
#[derive(Clone, Copy, Debug)]
pub struct Inst {
    /// Operation.
    pub op: Op,
    /// Table row (mnemonic, operand slots).
    pub info: &'static OpInfo,
    /// Encoding.
    pub enc: Enc,
    /// Length in bytes (4, 8, 12, or 16 for a block-scaled MFMA).
    pub len: u8,
    /// Raw words (unused words are 0).
    pub words: [u32; 4],
    /// Destination operand code (VGPR/AGPR/SGPR per encoding; see module docs).
    pub dst: u16,
    /// Second (scalar) destination: VOP3b carry-out, v_cmp VOP3 destination, SMEM soffset.
    pub sdst: u16,
    /// Source operand codes: src0..2 (VOP), addr/data0/data1 (DS), addr/data/saddr (FLAT),
    /// vaddr/vdata/srsrc (MUBUF, `sdst` = soffset), ssrc0/ssrc1 (SOP), sbase (SMEM).
    pub src: [u16; 3],
    /// Literal constant (valid when an operand code is [`LITERAL`] or for fmamk/fmaak).
    pub lit: u32,
    /// Signed immediate: SOPP/SOPK simm16, SMEM/FLAT/MUBUF offset, DS offset0 (or 16-bit offset);
    /// for a block-scaled MFMA ([`flag::MFMA_SCALE`]) the scale operands' codes, A's in bits
    /// 15:0 and B's in bits 31:16 ([`Inst::mfma_scale_srcs`]).
    pub imm: i32,
    /// DS offset1; for a block-scaled MFMA its prefix's op_sel bits (bit `i` = `op_sel[i]`).
    pub offset1: u8,
    /// VOP3 abs bits (src0 = bit 0) / VOP3P neg_hi bits / MAI cbsz.
    pub abs: u8,
    /// VOP3 / VOP3P neg (neg_lo) bits / MAI blgp.
    pub neg: u8,
    /// VOP3 op_sel (bit 3 = destination) / VOP3P op_sel / MAI abid.
    pub opsel: u8,
    /// VOP3P op_sel_hi bits (for a block-scaled MFMA, its prefix's).
    pub opsel_hi: u8,
    /// VOP3 output modifier (0 none, 1 ×2, 2 ×4, 3 ÷2).
    pub omod: u8,
    /// [`flag`] bits.
    pub flags: u16,
    /// The SDWA dword (when [`flag::SDWA`] is set: src0_sel, src1_sel, dst_sel, dst_unused, ...)
    /// or the DPP dword (when [`flag::DPP`] is set: dpp_ctrl, bound_ctrl, row/bank masks).
    pub sdwa: u32,
}

/// DPP control fields (CDNA3 ISA, "DPP" microcode format).
pub mod dpp {
    /// dpp_ctrl (bits 16:8).
    pub fn ctrl(w: u32) -> u32 {
        (w >> 8) & 0x1ff
    }
    /// bound_ctrl (bit 19): invalid source lanes read 0 instead of disabling the write.
    pub fn bound_ctrl(w: u32) -> bool {
        (w >> 19) & 1 != 0
    }
    /// bank_mask (bits 27:24): banks (lane bits 3:2) that are written.
    pub fn bank_mask(w: u32) -> u32 {
        (w >> 24) & 0xf
    }
    /// row_mask (bits 31:28): rows of 16 lanes that are written.
    pub fn row_mask(w: u32) -> u32 {
        (w >> 28) & 0xf
    }
    /// The lane lane `l` reads under `ctrl`, or `None` when the source is out of range.
    pub fn source_lane(ctrl: u32, l: usize) -> Option<usize> {
        let row = l & !15;
        let r = l & 15;
        let n = (ctrl & 15) as usize;
        match ctrl {
            0..=0xff => Some((l & !3) | ((ctrl >> (2 * (l & 3))) & 3) as usize),
            0x101..=0x10f => (r + n < 16).then_some(l + n),
            0x111..=0x11f => (r >= n).then(|| l - n),
            0x121..=0x12f => Some(row | ((r + 16 - n) & 15)),
            0x130 => (l < 63).then_some(l + 1),
            0x134 => Some((l + 1) & 63),
            0x138 => (l > 0).then(|| l - 1),
            0x13c => Some((l + 63) & 63),
            0x140 => Some(row | (15 - r)),
            0x141 => Some((l & !7) | (7 - (l & 7))),
            0x142 => (l >= 16).then(|| row - 1),
            0x143 => (l >= 32).then_some(31),
            // row_newbcast:n (gfx90a+, dpp_ctrl 0x150 + n): every lane of a row reads lane n of
            // its row (LLVM `AMDGPUModifierSyntax.rst`, GFX90A DPP: "Broadcast a thread within
            // a row to the whole row"; `SIDefines.h` DppCtrl::ROW_NEWBCAST_FIRST = 0x150).
            0x150..=0x15f => Some(row | n),
            _ => None,
        }
    }
}

/// SDWA operand selects (CDNA3 ISA, "SDWA" microcode format).
pub mod sdwa {
    /// dst_sel (bits 10:8).
    pub fn dst_sel(w: u32) -> u32 {
        (w >> 8) & 7
    }
    /// dst_unused (bits 12:11): 0 pad with zeros, 1 sign-extend, 2 preserve.
    pub fn dst_unused(w: u32) -> u32 {
        (w >> 11) & 3
    }
    /// src0_sel (bits 18:16).
    pub fn src0_sel(w: u32) -> u32 {
        (w >> 16) & 7
    }
    /// src0_sext (bit 19).
    pub fn src0_sext(w: u32) -> bool {
        (w >> 19) & 1 != 0
    }
    /// src1_sel (bits 26:24).
    pub fn src1_sel(w: u32) -> u32 {
        (w >> 24) & 7
    }
    /// src1_sext (bit 27).
    pub fn src1_sext(w: u32) -> bool {
        (w >> 27) & 1 != 0
    }
    /// Applies a select to a 32-bit value: BYTE_0..3 (0..3), WORD_0/1 (4, 5), DWORD (6).
    #[inline]
    pub fn select(v: u32, sel: u32, sext: bool) -> u32 {
        let (shift, bits) = match sel {
            0..=3 => (sel * 8, 8),
            4 | 5 => ((sel - 4) * 16, 16),
            _ => return v,
        };
        let x = (v >> shift) & ((1u32 << bits) - 1);
        if sext { (((x << (32 - bits)) as i32) >> (32 - bits)) as u32 } else { x }
    }
}

impl Inst {
    /// The raw operand code an encoding field holds (register or constant code; `None` for a
    /// field this instruction's encoding does not have). MUBUF keeps its operands in other
    /// slots than the other memory encodings.
    pub fn field_code(&self, f: Field) -> Option<u16> {
        Some(match (self.enc, f) {
            (_, Field::Dst) => self.dst,
            (_, Field::Sdst) => self.sdst,
            (Enc::Mubuf, Field::Soffset) => self.sdst,
            (Enc::Mubuf, Field::Addr) => self.src[0],
            (Enc::Mubuf, Field::Data) => self.dst,
            (Enc::Mubuf, Field::Rsrc) => self.src[2],
            (_, Field::Src0 | Field::Base | Field::Addr) => self.src[0],
            (_, Field::Src1 | Field::Data0 | Field::Data) => self.src[1],
            (_, Field::Src2 | Field::Data1 | Field::Saddr) => self.src[2],
            _ => return None,
        })
    }

    /// Mnemonic as LLVM prints it.
    pub fn name(&self) -> &'static str {
        if self.has_flag(flag::MFMA_SCALE) {
            match self.op {
                Op::v_mfma_f32_16x16x128_f8f6f4 => "v_mfma_scale_f32_16x16x128_f8f6f4",
                _ => "v_mfma_scale_f32_32x32x64_f8f6f4",
            }
        } else {
            self.info.name
        }
    }
    /// A block-scaled MFMA's scale operands: `(code, byte)` of A's and of B's scale (operand code
    /// as for sources; byte = which byte of the 32-bit value holds the E8M0 scale:
    /// `op_sel[i] | op_sel_hi[i] << 1` of the prefix, as LLVM encodes the intrinsic's `opsel_a` /
    /// `opsel_b`).
    pub fn mfma_scale_srcs(&self) -> [(u16, u8); 2] {
        let codes = [(self.imm as u32 & 0xffff) as u16, (self.imm as u32 >> 16) as u16];
        std::array::from_fn(|i| (codes[i], (self.offset1 >> i & 1) | (self.opsel_hi >> i & 1) << 1))
    }
    /// Whether a [`flag`] bit is set.
    #[inline]
    pub fn has_flag(&self, f: u16) -> bool {
        self.flags & f != 0
    }
    /// Branch target for SOPP branches: `pc + 4 + simm16 * 4`.
    pub fn branch_target(&self, pc: u64) -> u64 {
        pc.wrapping_add(4).wrapping_add_signed(i64::from(self.imm as i16) * 4)
    }
}

/// Why bytes could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The opcode is not an instruction of the target (or not one this decoder knows).
    #[error("kernel `{kernel}` pc {pc:#x}: unknown {enc} opcode {opcode} (bytes {bytes})")]
    UnknownOpcode {
        /// Kernel name.
        kernel: String,
        /// Address.
        pc: u64,
        /// Encoding name.
        enc: String,
        /// Opcode value.
        opcode: u16,
        /// The instruction bytes in hex.
        bytes: String,
    },
    /// A form this decoder does not implement (DPP, SDWA, MTBUF, ...).
    #[error("kernel `{kernel}` pc {pc:#x}: unsupported {what} (instruction `{mnemonic}`, bytes {bytes})")]
    Unsupported {
        /// Kernel name.
        kernel: String,
        /// Address.
        pc: u64,
        /// What is unsupported.
        what: String,
        /// Mnemonic (or "?").
        mnemonic: String,
        /// Bytes in hex.
        bytes: String,
    },
    /// The code ends in the middle of an instruction.
    #[error("kernel `{kernel}` pc {pc:#x}: truncated instruction")]
    Truncated {
        /// Kernel name.
        kernel: String,
        /// Address.
        pc: u64,
    },
    /// The kernel's code could not be found in the code object.
    #[error("kernel `{kernel}`: code at {entry:#x} is not in the code object")]
    NoCode {
        /// Kernel name.
        kernel: String,
        /// Entry address.
        entry: u64,
    },
}

fn hex_words(w: &[u32]) -> String {
    w.iter().map(|x| format!("{x:08X}")).collect::<Vec<_>>().join(" ")
}

#[inline]
fn bits(w: u32, lo: u32, n: u32) -> u32 {
    (w >> lo) & ((1u32 << n) - 1)
}

fn sext(v: u32, n: u32) -> i32 {
    ((v << (32 - n)) as i32) >> (32 - n)
}

/// The table row of `(enc, op)` on `target`: gfx950 rows that differ from gfx942 take
/// precedence; gfx942 opcodes gfx950 dropped (the xf32 MFMAs) are unknown there.
fn table_lookup(target: Target, enc: Enc, op: u16) -> Option<&'static OpInfo> {
    match target {
        Target::Gfx942 => tables::lookup(enc, op),
        Target::Gfx950 => tables::lookup_gfx950(enc, op).or_else(|| if tables::removed_on_gfx950(enc, op) { None } else { tables::lookup(enc, op) }),
    }
}

/// VOP3P opcode of gfx950's `v_mfma_ld_scale_b32`, the prefix of the block-scaled MFMAs
/// (LLVM `VOP3PInstructions.td`, `V_MFMA_LD_SCALE_B32` 0x2c; `test/MC/AMDGPU/mai-gfx950.s`).
const VOP3P_MFMA_LD_SCALE: u32 = 0x2c;

/// Decodes the gfx942 instruction at the start of `code` (address `pc`, in kernel `kernel` for
/// errors); [`decode_one_for`] with [`Target::Gfx942`].
pub fn decode_one(code: &[u8], pc: u64, kernel: &str) -> Result<Inst, DecodeError> {
    decode_one_for(Target::Gfx942, code, pc, kernel)
}

/// Decodes the instruction of `target` at the start of `code` (address `pc`, in kernel `kernel`
/// for errors).
pub fn decode_one_for(target: Target, code: &[u8], pc: u64, kernel: &str) -> Result<Inst, DecodeError> {
    let word = |i: usize| -> Option<u32> { code.get(i * 4..i * 4 + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])) };
    let truncated = || DecodeError::Truncated { kernel: kernel.to_string(), pc };
    let w0 = word(0).ok_or_else(truncated)?;
    let unknown = |enc: Enc, opcode: u32, n: usize| DecodeError::UnknownOpcode {
        kernel: kernel.to_string(),
        pc,
        enc: format!("{enc:?}").to_uppercase(),
        opcode: opcode as u16,
        bytes: hex_words(&(0..n).filter_map(word).collect::<Vec<_>>()),
    };
    let lookup = |enc: Enc, opcode: u32, n: usize| table_lookup(target, enc, opcode as u16).ok_or_else(|| unknown(enc, opcode, n));
    let mk = |info: &'static OpInfo, enc: Enc| Inst {
        op: info.op,
        info,
        enc,
        len: 4,
        words: [w0, 0, 0, 0],
        dst: 0,
        sdst: 0,
        src: [0; 3],
        lit: 0,
        imm: 0,
        offset1: 0,
        abs: 0,
        neg: 0,
        opsel: 0,
        opsel_hi: 0,
        omod: 0,
        flags: 0,
        sdwa: 0,
    };
    // Reads the literal dword if any scalar source is 255.
    let take_literal = |inst: &mut Inst| -> Result<(), DecodeError> {
        let needs = inst.src.contains(&LITERAL) || matches!(inst.op, Op::v_fmamk_f32 | Op::v_fmaak_f32 | Op::v_madmk_f16 | Op::v_madak_f16);
        if needs {
            let l = word(usize::from(inst.len / 4)).ok_or_else(truncated)?;
            inst.words[usize::from(inst.len / 4)] = l;
            inst.lit = l;
            inst.len += 4;
        }
        Ok(())
    };
    let top9 = w0 >> 23;
    let top6 = w0 >> 26;
    let mut inst;
    if top9 == 0x17D {
        // SOP1
        let info = lookup(Enc::Sop1, bits(w0, 8, 8), 1)?;
        inst = mk(info, Enc::Sop1);
        inst.dst = bits(w0, 16, 7) as u16;
        inst.src[0] = bits(w0, 0, 8) as u16;
        take_literal(&mut inst)?;
    } else if top9 == 0x17E {
        let info = lookup(Enc::Sopc, bits(w0, 16, 7), 1)?;
        inst = mk(info, Enc::Sopc);
        inst.src[0] = bits(w0, 0, 8) as u16;
        inst.src[1] = bits(w0, 8, 8) as u16;
        take_literal(&mut inst)?;
    } else if top9 == 0x17F {
        let info = lookup(Enc::Sopp, bits(w0, 16, 7), 1)?;
        inst = mk(info, Enc::Sopp);
        inst.imm = i32::from(w0 as u16 as i16);
    } else if w0 >> 28 == 0xB {
        let info = lookup(Enc::Sopk, bits(w0, 23, 5), 1)?;
        inst = mk(info, Enc::Sopk);
        inst.dst = bits(w0, 16, 7) as u16;
        inst.imm = i32::from(w0 as u16 as i16);
        if info.op == Op::s_setreg_imm32_b32 {
            let l = word(1).ok_or_else(truncated)?;
            inst.words[1] = l;
            inst.lit = l;
            inst.len = 8;
        }
    } else if w0 >> 30 == 2 {
        let info = lookup(Enc::Sop2, bits(w0, 23, 7), 1)?;
        inst = mk(info, Enc::Sop2);
        inst.dst = bits(w0, 16, 7) as u16;
        inst.src[0] = bits(w0, 0, 8) as u16;
        inst.src[1] = bits(w0, 8, 8) as u16;
        take_literal(&mut inst)?;
    } else if top6 == 0x30 {
        let w1 = word(1).ok_or_else(truncated)?;
        let info = lookup(Enc::Smem, bits(w0, 18, 8), 2)?;
        inst = mk(info, Enc::Smem);
        inst.len = 8;
        inst.words[1] = w1;
        inst.dst = bits(w0, 6, 7) as u16;
        inst.src[0] = (bits(w0, 0, 6) * 2) as u16;
        let imm = bits(w0, 17, 1) != 0;
        let soe = bits(w0, 14, 1) != 0;
        if bits(w0, 16, 1) != 0 {
            inst.flags |= flag::SC0;
        }
        if bits(w0, 15, 1) != 0 {
            inst.flags |= flag::NT;
        }
        if imm {
            inst.flags |= flag::SMEM_IMM;
            inst.imm = sext(bits(w1, 0, 21), 21);
        }
        if soe {
            inst.flags |= flag::SMEM_SOE;
            inst.sdst = bits(w1, 25, 7) as u16;
        } else if !imm {
            inst.flags |= flag::SMEM_SOE;
            inst.sdst = bits(w1, 0, 8) as u16;
        }
    } else if w0 >> 31 == 0 {
        // VOP1 / VOPC / VOP2
        let src0 = bits(w0, 0, 9) as u16;
        let enc = match w0 >> 25 {
            0x3F => Enc::Vop1,
            0x3E => Enc::Vopc,
            _ => Enc::Vop2,
        };
        let opcode = match enc {
            Enc::Vop1 => bits(w0, 9, 8),
            Enc::Vopc => bits(w0, 17, 8),
            _ => bits(w0, 25, 6),
        };
        let info = lookup(enc, opcode, 1)?;
        if src0 == 0xF9 {
            let w1 = word(1).ok_or_else(truncated)?;
            inst = mk(info, enc);
            inst.len = 8;
            inst.words[1] = w1;
            inst.sdwa = w1;
            inst.flags |= flag::SDWA;
            // src0 is a VGPR unless the S0 bit (23) selects an SGPR/constant.
            let s0 = bits(w1, 0, 8) as u16;
            inst.src[0] = if bits(w1, 23, 1) != 0 { s0 } else { VGPR0 + s0 };
            inst.src[0] = fix_vsrc(info, Field::Src0, inst.src[0]);
            inst.abs = (bits(w1, 21, 1) | bits(w1, 29, 1) << 1) as u8;
            inst.neg = (bits(w1, 20, 1) | bits(w1, 28, 1) << 1) as u8;
            // VOPC's SDWA dword holds SD/SDST in bits 15:8, where VOP1/VOP2 hold OMOD (15:14)
            // and CLAMP (13): a compare has neither (CDNA3 ISA, "SDWA" microcode format).
            inst.omod = if enc == Enc::Vopc { 0 } else { bits(w1, 14, 2) as u8 };
            if bits(w1, 13, 1) != 0 && enc != Enc::Vopc {
                inst.flags |= flag::CLAMP;
            }
            match enc {
                Enc::Vop1 => inst.dst = reg_code(info, Field::Dst, bits(w0, 17, 8) as u16, false),
                Enc::Vopc => {
                    inst.src[1] = VGPR0 + bits(w0, 9, 8) as u16;
                    inst.dst = if bits(w1, 15, 1) != 0 { bits(w1, 8, 7) as u16 } else { sreg::VCC };
                }
                _ => {
                    inst.dst = VGPR0 + bits(w0, 17, 8) as u16;
                    let s1 = bits(w0, 9, 8) as u16;
                    inst.src[1] = if bits(w1, 31, 1) != 0 { s1 } else { VGPR0 + s1 };
                    inst.src[2] = sreg::VCC;
                    inst.sdst = sreg::VCC;
                }
            }
            return Ok(inst);
        }
        if src0 == 0xFA {
            let w1 = word(1).ok_or_else(truncated)?;
            inst = mk(info, enc);
            inst.len = 8;
            inst.words[1] = w1;
            inst.sdwa = w1;
            inst.flags |= flag::DPP;
            inst.src[0] = fix_vsrc(info, Field::Src0, VGPR0 + bits(w1, 0, 8) as u16);
            inst.abs = (bits(w1, 21, 1) | bits(w1, 23, 1) << 1) as u8;
            inst.neg = (bits(w1, 20, 1) | bits(w1, 22, 1) << 1) as u8;
            match enc {
                Enc::Vop1 => inst.dst = reg_code(info, Field::Dst, bits(w0, 17, 8) as u16, false),
                Enc::Vopc => {
                    inst.src[1] = VGPR0 + bits(w0, 9, 8) as u16;
                    inst.dst = sreg::VCC;
                }
                _ => {
                    inst.dst = VGPR0 + bits(w0, 17, 8) as u16;
                    inst.src[1] = VGPR0 + bits(w0, 9, 8) as u16;
                    inst.src[2] = sreg::VCC;
                    inst.sdst = sreg::VCC;
                }
            }
            return Ok(inst);
        }
        if src0 == 0xFA {
            return Err(DecodeError::Unsupported {
                kernel: kernel.to_string(),
                pc,
                what: if src0 == 0xF9 { "SDWA form" } else { "DPP form" }.to_string(),
                mnemonic: info.name.to_string(),
                bytes: hex_words(&(0..2).filter_map(word).collect::<Vec<_>>()),
            });
        }
        inst = mk(info, enc);
        inst.src[0] = src0;
        match enc {
            Enc::Vop1 => {
                let d = bits(w0, 17, 8) as u16;
                inst.dst = reg_code(info, Field::Dst, d, false);
                inst.src[0] = fix_vsrc(info, Field::Src0, src0);
            }
            Enc::Vopc => {
                inst.src[1] = VGPR0 + bits(w0, 9, 8) as u16;
                inst.dst = sreg::VCC;
            }
            _ => {
                inst.dst = VGPR0 + bits(w0, 17, 8) as u16;
                inst.src[1] = VGPR0 + bits(w0, 9, 8) as u16;
                // Implicit carry-in / mask operand of the VOP2 forms is VCC.
                inst.src[2] = sreg::VCC;
                inst.sdst = sreg::VCC;
            }
        }
        take_literal(&mut inst)?;
    } else if top6 == 0x34 {
        let w1 = word(1).ok_or_else(truncated)?;
        if top9 == 0x1A7 {
            // VOP3P (incl. MAI)
            if target == Target::Gfx950 && bits(w0, 16, 7) == VOP3P_MFMA_LD_SCALE {
                // The block-scaled MFMA: this prefix (scale operands in src0 / src1, their byte
                // selects in op_sel / op_sel_hi) and an f8f6f4 MFMA with op_sel bit 0 (w0 bit 11)
                // set are one `v_mfma_scale_f32_*_f8f6f4` of 16 bytes (LLVM VOP3PX2 encoding,
                // `test/MC/AMDGPU/mai-gfx950.s`). A bare prefix is not an instruction here.
                if let (Some(w2), Some(w3)) = (word(2), word(3))
                    && w2 >> 23 == 0x1A7
                    && bits(w2, 11, 1) != 0
                    && table_lookup(target, Enc::Vop3p, bits(w2, 16, 7) as u16).is_some_and(|i| is_f8f6f4(i.op))
                {
                    let mfma_bytes: Vec<u8> = [w2 & !(1 << 11), w3].iter().flat_map(|w| w.to_le_bytes()).collect();
                    let mut inst = decode_one_for(target, &mfma_bytes, pc, kernel)?;
                    let (sa, sb) = (bits(w1, 0, 9), bits(w1, 9, 9));
                    if sa == u32::from(LITERAL) || sb == u32::from(LITERAL) {
                        return Err(DecodeError::Unsupported {
                            kernel: kernel.to_string(),
                            pc,
                            what: "literal scale operand".into(),
                            mnemonic: inst.name().into(),
                            bytes: hex_words(&[w0, w1, w2, w3]),
                        });
                    }
                    inst.len = 16;
                    inst.words = [w0, w1, w2, w3];
                    inst.flags |= flag::MFMA_SCALE;
                    inst.imm = (sa | sb << 16) as i32;
                    inst.offset1 = bits(w0, 11, 3) as u8;
                    inst.opsel_hi = (bits(w1, 27, 2) | bits(w0, 14, 1) << 2) as u8;
                    return Ok(inst);
                }
            }
            let info = lookup(Enc::Vop3p, bits(w0, 16, 7), 2)?;
            inst = mk(info, Enc::Vop3p);
            inst.len = 8;
            inst.words[1] = w1;
            let mai = is_mai(info.op);
            let s = [bits(w1, 0, 9) as u16, bits(w1, 9, 9) as u16, bits(w1, 18, 9) as u16];
            if mai {
                let acc_cd = bits(w0, 15, 1) != 0;
                if acc_cd {
                    inst.flags |= flag::ACC_CD;
                }
                let acc_ab = bits(w1, 27, 2);
                inst.dst = (if acc_cd { AGPR0 } else { VGPR0 }) + bits(w0, 0, 8) as u16;
                inst.src[0] = if s[0] >= 256 && acc_ab & 1 != 0 { s[0] + 256 } else { s[0] };
                inst.src[1] = if s[1] >= 256 && acc_ab & 2 != 0 { s[1] + 256 } else { s[1] };
                // smfmac's src2 is the sparsity index, always a VGPR.
                let sparse = info.name.starts_with("v_smfmac");
                inst.src[2] = if s[2] >= 256 && acc_cd && !sparse { s[2] + 256 } else { s[2] };
                inst.abs = bits(w0, 8, 3) as u8; // cbsz
                inst.opsel = bits(w0, 11, 4) as u8; // abid
                inst.neg = bits(w1, 29, 3) as u8; // blgp
                if is_f8f6f4(info.op) && inst.opsel != 0 {
                    // Only the scale form (handled above) sets these bits; LLVM prints the bare
                    // word as data.
                    return Err(DecodeError::Unsupported {
                        kernel: kernel.to_string(),
                        pc,
                        what: "op_sel bits on an f8f6f4 MFMA without the v_mfma_ld_scale_b32 prefix".into(),
                        mnemonic: info.name.into(),
                        bytes: hex_words(&[w0, w1]),
                    });
                }
            } else {
                inst.dst = reg_code(info, Field::Dst, bits(w0, 0, 8) as u16, true);
                inst.src = [fix_vsrc(info, Field::Src0, s[0]), fix_vsrc(info, Field::Src1, s[1]), fix_vsrc(info, Field::Src2, s[2])];
                inst.abs = bits(w0, 8, 3) as u8; // neg_hi
                inst.opsel = bits(w0, 11, 3) as u8;
                inst.opsel_hi = (bits(w1, 27, 2) | bits(w0, 14, 1) << 2) as u8;
                inst.neg = bits(w1, 29, 3) as u8;
                if bits(w0, 15, 1) != 0 {
                    inst.flags |= flag::CLAMP;
                }
            }
        } else {
            let info = lookup(Enc::Vop3, bits(w0, 16, 10), 2)?;
            inst = mk(info, Enc::Vop3);
            inst.len = 8;
            inst.words[1] = w1;
            let vdst = bits(w0, 0, 8) as u16;
            inst.dst = match info.slots.iter().find(|s| s.field == Field::Dst).map(|s| s.class) {
                Some(RegClass::S) => vdst,
                Some(RegClass::A) => AGPR0 + vdst,
                _ => VGPR0 + vdst,
            };
            inst.src = [bits(w1, 0, 9) as u16, bits(w1, 9, 9) as u16, bits(w1, 18, 9) as u16];
            for (i, f) in [Field::Src0, Field::Src1, Field::Src2].into_iter().enumerate() {
                inst.src[i] = fix_vsrc(info, f, inst.src[i]);
            }
            inst.omod = bits(w1, 27, 2) as u8;
            inst.neg = bits(w1, 29, 3) as u8;
            if bits(w0, 15, 1) != 0 {
                inst.flags |= flag::CLAMP;
            }
            if info.has(Field::Sdst) {
                inst.sdst = bits(w0, 8, 7) as u16;
            } else {
                inst.abs = bits(w0, 8, 3) as u8;
                inst.opsel = bits(w0, 11, 4) as u8;
            }
            // VOP2-derived ops with implicit VCC carry/mask take it from src2 in VOP3.
            if matches!(info.op, Op::v_cmp_class_f32) {}
        }
        if inst.src.contains(&LITERAL) {
            return Err(DecodeError::Unsupported {
                kernel: kernel.to_string(),
                pc,
                what: "literal in a VOP3 instruction (gfx9 has none)".into(),
                mnemonic: inst.info.name.into(),
                bytes: hex_words(&inst.words[..2]),
            });
        }
    } else if top6 == 0x36 {
        let w1 = word(1).ok_or_else(truncated)?;
        let info = lookup(Enc::Ds, bits(w0, 17, 8), 2)?;
        inst = mk(info, Enc::Ds);
        inst.len = 8;
        inst.words[1] = w1;
        let acc = bits(w0, 25, 1) != 0;
        let base = if acc { AGPR0 } else { VGPR0 };
        let two = is_ds_two_offsets(info.name);
        if two {
            inst.imm = bits(w0, 0, 8) as i32;
            inst.offset1 = bits(w0, 8, 8) as u8;
        } else {
            inst.imm = bits(w0, 0, 16) as i32;
        }
        if bits(w0, 16, 1) != 0 {
            inst.flags |= flag::GDS;
        }
        inst.src = [VGPR0 + bits(w1, 0, 8) as u16, base + bits(w1, 8, 8) as u16, base + bits(w1, 16, 8) as u16];
        inst.dst = base + bits(w1, 24, 8) as u16;
    } else if top6 == 0x37 {
        let w1 = word(1).ok_or_else(truncated)?;
        let seg = bits(w0, 14, 2);
        let enc = match seg {
            0 => Enc::Flat,
            1 => Enc::Scratch,
            2 => Enc::Global,
            _ => return Err(unknown(Enc::Flat, bits(w0, 18, 7), 2)),
        };
        let info = lookup(enc, bits(w0, 18, 7), 2)?;
        inst = mk(info, enc);
        inst.len = 8;
        inst.words[1] = w1;
        inst.imm = if enc == Enc::Flat { bits(w0, 0, 12) as i32 } else { sext(bits(w0, 0, 13), 13) };
        if bits(w0, 13, 1) != 0 {
            inst.flags |= if enc == Enc::Scratch { flag::SVE } else { flag::LDS };
        }
        if bits(w0, 16, 1) != 0 {
            inst.flags |= flag::SC0;
        }
        if bits(w0, 17, 1) != 0 {
            inst.flags |= flag::NT;
        }
        if bits(w0, 25, 1) != 0 {
            inst.flags |= flag::SC1;
        }
        let acc = bits(w1, 23, 1) != 0;
        let base = if acc { AGPR0 } else { VGPR0 };
        inst.src = [VGPR0 + bits(w1, 0, 8) as u16, base + bits(w1, 8, 8) as u16, bits(w1, 16, 7) as u16];
        inst.dst = base + bits(w1, 24, 8) as u16;
    } else if top6 == 0x38 {
        let w1 = word(1).ok_or_else(truncated)?;
        let info = lookup(Enc::Mubuf, bits(w0, 18, 7), 2)?;
        inst = mk(info, Enc::Mubuf);
        inst.len = 8;
        inst.words[1] = w1;
        inst.imm = bits(w0, 0, 12) as i32;
        for (b, f) in [(12, flag::OFFEN), (13, flag::IDXEN), (14, flag::SC0), (15, flag::SC1), (16, flag::LDS), (17, flag::NT)] {
            if bits(w0, b, 1) != 0 {
                inst.flags |= f;
            }
        }
        let acc = bits(w1, 23, 1) != 0;
        let base = if acc { AGPR0 } else { VGPR0 };
        inst.src = [VGPR0 + bits(w1, 0, 8) as u16, base + bits(w1, 8, 8) as u16, (bits(w1, 16, 5) * 4) as u16];
        inst.dst = base + bits(w1, 8, 8) as u16;
        inst.sdst = bits(w1, 24, 8) as u16;
    } else {
        return Err(DecodeError::Unsupported {
            kernel: kernel.to_string(),
            pc,
            what: format!("encoding of word {w0:#010x} (MTBUF/MIMG/EXP/VINTRP are not implemented)"),
            mnemonic: "?".into(),
            bytes: hex_words(&[w0]),
        });
    }
    Ok(inst)
}

/// Register code for a destination field, by the class the table gives it.
fn reg_code(info: &OpInfo, field: Field, raw: u16, _vop3p: bool) -> u16 {
    match info.slots.iter().find(|s| s.field == field).map(|s| s.class) {
        Some(RegClass::S) => raw,
        Some(RegClass::A) => AGPR0 + raw,
        _ => VGPR0 + raw,
    }
}

/// A 9-bit VOP source: VGPR codes (256+) become AGPR codes when the table says AGPR
/// (v_accvgpr_read_b32, v_accvgpr_mov_b32).
fn fix_vsrc(info: &OpInfo, field: Field, raw: u16) -> u16 {
    if raw >= VGPR0 && info.slots.iter().any(|s| s.field == field && s.class == RegClass::A) { raw + 256 } else { raw }
}

/// Whether `op` is a SOPP branch whose 16-bit immediate is a pc-relative target (the jumps the
/// executor follows, plus the debugger-conditional forms, which it rejects as unimplemented).
pub fn is_branch(op: Op) -> bool {
    matches!(
        op,
        Op::s_branch
            | Op::s_cbranch_scc0
            | Op::s_cbranch_scc1
            | Op::s_cbranch_vccz
            | Op::s_cbranch_vccnz
            | Op::s_cbranch_execz
            | Op::s_cbranch_execnz
            | Op::s_cbranch_cdbgsys
            | Op::s_cbranch_cdbguser
            | Op::s_cbranch_cdbgsys_or_user
            | Op::s_cbranch_cdbgsys_and_user
    )
}

/// Whether `op` is a matrix (MAI) instruction.
pub fn is_mai(op: Op) -> bool {
    let n = op.name();
    n.starts_with("v_mfma") || n.starts_with("v_smfmac")
}

/// Whether `op` is one of gfx950's `v_mfma_f32_{16x16x128,32x32x64}_f8f6f4`, whose `cbsz` /
/// `blgp` fields select the A / B operand formats ([`F8f6f4Format`]).
pub fn is_f8f6f4(op: Op) -> bool {
    matches!(op, Op::v_mfma_f32_16x16x128_f8f6f4 | Op::v_mfma_f32_32x32x64_f8f6f4)
}

fn is_ds_two_offsets(name: &str) -> bool {
    name.contains("read2") || name.contains("write2") || name.contains("wrxchg2")
}

/// A kernel's instructions, decoded once.
#[derive(Clone, Debug)]
pub struct Program {
    /// Kernel name.
    pub kernel: String,
    /// Address of the first instruction.
    pub entry: u64,
    /// `(pc, instruction or the error decoding it produced)` in address order.
    pub insts: Vec<(u64, Result<Inst, DecodeError>)>,
}

impl Program {
    /// Decodes every instruction of `kernel` by a linear sweep from its entry over the kernel
    /// symbol's size (or, without a size, to the end of the section), for the code object's
    /// target.
    pub fn decode(co: &CodeObject, kernel: &Kernel) -> Result<Program, DecodeError> {
        let code = co.code_from(kernel.entry).ok_or_else(|| DecodeError::NoCode { kernel: kernel.name.clone(), entry: kernel.entry })?;
        let size = if kernel.code_size > 0 { (kernel.code_size as usize).min(code.len()) } else { code.len() };
        let code = &code[..size];
        let mut insts = Vec::new();
        let mut off = 0usize;
        while off + 4 <= code.len() {
            let pc = kernel.entry + off as u64;
            match decode_one_for(co.target(), &code[off..], pc, &kernel.name) {
                Ok(i) => {
                    off += usize::from(i.len);
                    insts.push((pc, Ok(i)));
                }
                Err(e) => {
                    insts.push((pc, Err(e)));
                    off += 4;
                }
            }
        }
        Ok(Program { kernel: kernel.name.clone(), entry: kernel.entry, insts })
    }
}
