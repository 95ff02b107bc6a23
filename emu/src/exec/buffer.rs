//! MUBUF addressing and range checking on gfx9 / CDNA3: one rule for the executor (`wave.rs`
//! `mubuf`) and the line recorder (`checks.rs` `global_lines`).
//!
//! Buffer resource (V#, four SGPRs), gfx9 layout: base `[47:0]`, stride `[61:48]`,
//! cache_swizzle bit 62 (a cache hint, no effect on addresses), swizzle_enable bit 63,
//! num_records = dword 2; in dword 3: data_format `[18:15]`, element_size `[20:19]`,
//! index_stride `[22:21]`, add_tid_enable bit 23 (LLVM `SIDefines.h` `RSRC_*` constants;
//! LLVM `SIInstrInfo::getScratchRsrcWords23`: "If TID_ENABLE is set, DATA_FORMAT specifies
//! stride bits [14:17]").
//!
//! Address (CDNA3 ISA guide, "Buffer addressing"; the same in the Vega ISA guide):
//! * `index = (idxen ? vgpr_index : 0) + (add_tid_enable ? lane : 0)`
//! * `offset = (offen ? vgpr_offset : 0) + inst_offset`
//! * linear (swizzle_enable = 0): `address = base + sgpr_offset + offset + stride · index`.
//!
//! Range checking (CDNA3 / Vega ISA guide, "Range checking"; the buffer type is chosen by the
//! instruction's `idxen` and the V#'s add_tid / swizzle bits, not by the stride alone):
//! * **raw** (`idxen = 0`, add_tid = 0, swizzle = 0): out of range when the byte
//!   `offset` (VGPR offset + instruction offset, *not* the SGPR offset) reaches `num_records`
//!   (bytes). The stride does not enter, so a V# with stride ≠ 0 used without `idxen` (as AMD's
//!   BpreShuffle kernels do: stride 4, num_records 0x8000_0000, `offen`) is a raw buffer.
//!   Dword x2/x3/x4 accesses are checked per dword component (the guide: "Load/store-DWORD-x{2,3,4}
//!   range-check per component"), byte/short accesses as a whole.
//! * **structured** (`idxen = 1` or add_tid = 1): out of range when `index ≥ num_records`
//!   (num_records counts records of `stride` bytes), whole access in or out. With stride 0 the
//!   guide's table has no row; this model applies the index check (the index selects nothing).
//! * out-of-range loads return 0, out-of-range stores are dropped.
//!
//! Corroboration: LLVM `IntrinsicsAMDGPU.td` (raw vs struct buffer intrinsics): "A struct
//! intrinsic with constant 0 index is different to the corresponding raw intrinsic on gfx9+
//! because the behavior of bound checking and swizzling changes depending on whether idxen is set
//! in the instruction", with `offset` "included in bounds checking" and `soffset` "excluded from
//! bounds checking"; Mesa radeonsi `si_set_vb_descriptor` sets num_records in units of stride
//! for structured (idxen) vertex fetches on every gfx level except GFX8 (whose check is in bytes).
//!
//! Swizzled buffers (swizzle_enable = 1) are not modelled: [`BufferError::Swizzle`] (the executor
//! reports it as an unimplemented instruction), never a silently wrong address.

/// The fields of a V# this model uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rsrc {
    /// Base address (48 bits).
    pub base: u64,
    /// Stride in bytes (14 bits; 18 with add_tid_enable, see the module docs).
    pub stride: u64,
    /// num_records: bytes (raw) or records (structured).
    pub num_records: u64,
    /// swizzle_enable.
    pub swizzle: bool,
    /// add_tid_enable.
    pub add_tid: bool,
}

/// Why a buffer access cannot be modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BufferError {
    /// swizzle_enable is set in the V#.
    Swizzle,
}

/// One lane's access: its address and how many leading bytes of it are in range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LaneAccess {
    /// Device address of the first byte.
    pub addr: u64,
    /// Leading bytes in range (0 = fully out of range, `n` = fully in range).
    pub in_range: u64,
}

impl Rsrc {
    /// Decodes the four V# dwords.
    pub fn new(d: [u32; 4]) -> Rsrc {
        let add_tid = d[3] >> 23 & 1 != 0;
        let stride_lo = u64::from(d[1] >> 16 & 0x3fff);
        let stride = if add_tid { stride_lo | u64::from(d[3] >> 15 & 0xf) << 14 } else { stride_lo };
        Rsrc { base: u64::from(d[0]) | u64::from(d[1] & 0xffff) << 32, stride, num_records: u64::from(d[2]), swizzle: d[1] >> 31 != 0, add_tid }
    }

    /// Whether this resource can be modelled.
    pub fn check(&self) -> Result<(), BufferError> {
        if self.swizzle { Err(BufferError::Swizzle) } else { Ok(()) }
    }

    /// The access of `lane` for an `n`-byte operation: `vindex` / `voffset` are the lane's VGPR
    /// values (used only with `idxen` / `offen`), `inst_offset` the instruction's offset,
    /// `soffset` the SGPR offset, `dwords` whether the operation is a dword/x2/x3/x4 one (per
    /// component range check). Call [`Rsrc::check`] first.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn lane(&self, idxen: bool, offen: bool, vindex: u32, voffset: u32, inst_offset: u64, soffset: u32, lane: usize, n: u64, dwords: bool) -> LaneAccess {
        let index = if idxen { u64::from(vindex) } else { 0 } + if self.add_tid { lane as u64 } else { 0 };
        let offset = if offen { u64::from(voffset) } else { 0 } + inst_offset;
        let addr = self.base.wrapping_add(u64::from(soffset)).wrapping_add(offset).wrapping_add(self.stride * index);
        let in_range = if idxen || self.add_tid {
            if index < self.num_records { n } else { 0 }
        } else if dwords {
            // Whole dwords from the start while each lies below num_records.
            let room = self.num_records.saturating_sub(offset);
            (room / 4 * 4).min(n)
        } else if offset + n <= self.num_records {
            n
        } else {
            0
        };
        LaneAccess { addr, in_range }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(base: u64, stride: u32, num: u32, swizzle: bool, add_tid: bool, data_format: u32) -> [u32; 4] {
        [base as u32, (base >> 32) as u32 & 0xffff | (stride & 0x3fff) << 16 | u32::from(swizzle) << 31, num, data_format << 15 | u32::from(add_tid) << 23]
    }

    #[test]
    fn raw_buffer_checks_offset_bytes_not_soffset() {
        let r = Rsrc::new(v(0x1000, 0, 64, false, false, 0));
        assert_eq!(r.lane(false, true, 0, 60, 0, 0, 0, 4, true), LaneAccess { addr: 0x1000 + 60, in_range: 4 });
        assert_eq!(r.lane(false, true, 0, 61, 0, 0, 0, 4, true).in_range, 0);
        // The SGPR offset moves the address but is not range checked.
        assert_eq!(r.lane(false, true, 0, 0, 0, 1 << 20, 0, 4, true), LaneAccess { addr: 0x1000 + (1 << 20), in_range: 4 });
        // The instruction offset is.
        assert_eq!(r.lane(false, false, 0, 0, 64, 0, 0, 4, true).in_range, 0);
        // dwordx4 straddling the end: the two leading dwords are in range.
        assert_eq!(r.lane(false, true, 0, 56, 0, 0, 0, 16, true).in_range, 8);
        // A short straddling the end is out as a whole.
        assert_eq!(r.lane(false, true, 0, 63, 0, 0, 0, 2, false).in_range, 0);
    }

    #[test]
    fn stride_without_idxen_is_a_raw_buffer() {
        // AMD's BpreShuffle kernels: stride 4, num_records 0x8000_0000, offen only.
        let r = Rsrc::new(v(0x10_0000_0000, 4, 0x8000_0000, false, false, 0));
        let a = r.lane(false, true, 0, 0x1234_5670, 16, 8, 0, 16, true);
        assert_eq!(a, LaneAccess { addr: 0x10_0000_0000 + 8 + 0x1234_5670 + 16, in_range: 16 });
        // CK-style masking: offsets at or past 2^31 are out of range.
        assert_eq!(r.lane(false, true, 0, 0x8000_0000, 0, 0, 0, 4, true).in_range, 0);
    }

    #[test]
    fn structured_buffer_checks_index_only() {
        let r = Rsrc::new(v(0x2000, 12, 10, false, false, 0));
        assert_eq!(r.lane(true, true, 9, 100, 0, 0, 0, 4, true), LaneAccess { addr: 0x2000 + 9 * 12 + 100, in_range: 4 });
        assert_eq!(r.lane(true, true, 10, 0, 0, 0, 0, 4, true).in_range, 0);
        // idxen without offen: the VGPR is the index.
        assert_eq!(r.lane(true, false, 3, 0, 4, 0, 0, 4, true), LaneAccess { addr: 0x2000 + 36 + 4, in_range: 4 });
        // Structured checks are all or nothing.
        assert_eq!(r.lane(true, false, 10, 0, 0, 0, 0, 16, true).in_range, 0);
    }

    #[test]
    fn add_tid_adds_the_lane_and_extends_the_stride() {
        // stride = 4 | data_format << 14.
        let r = Rsrc::new(v(0x3000, 4, 40, false, true, 1));
        assert_eq!(r.stride, 4 + (1 << 14));
        assert_eq!(r.lane(false, false, 0, 0, 0, 0, 39, 4, true), LaneAccess { addr: 0x3000 + 39 * r.stride, in_range: 4 });
        assert_eq!(r.lane(false, false, 0, 0, 0, 0, 40, 4, true).in_range, 0);
        // With idxen the VGPR index and the lane add up.
        assert_eq!(r.lane(true, false, 5, 0, 0, 0, 35, 4, true).in_range, 0);
        assert_eq!(r.lane(true, false, 4, 0, 0, 0, 35, 4, true).in_range, 4);
    }

    #[test]
    fn swizzle_is_refused() {
        assert_eq!(Rsrc::new(v(0, 16, 1, true, false, 0)).check(), Err(BufferError::Swizzle));
        assert_eq!(Rsrc::new(v(0, 16, 1, false, false, 0)).check(), Ok(()));
        // cache_swizzle (bit 62) is a cache hint only.
        let mut d = v(0, 16, 1, false, false, 0);
        d[1] |= 1 << 30;
        assert_eq!(Rsrc::new(d).check(), Ok(()));
        assert_eq!(Rsrc::new(d).stride, 16);
    }
}
