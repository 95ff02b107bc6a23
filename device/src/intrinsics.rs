//! The one place that declares LLVM amdgcn intrinsics. Everything here is a thin, documented
//! wrapper; kernels call these wrappers, never `llvm.*` names directly.
#![allow(improper_ctypes)]

pub use core::arch::amdgpu::{readfirstlane_u32, s_barrier, workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};

/// `v_perm_b32`: byte `i` of the result is byte `sel[i]` of `src0:src1` (`0..=3` → `src1`,
/// `4..=7` → `src0`; CDNA3 ISA, V_PERM_B32). A pure register operation.
#[inline(always)]
pub fn perm_b32(src0: u32, src1: u32, sel: u32) -> u32 {
    // SAFETY: `llvm.amdgcn.perm` has no memory effects and is defined for every input on gfx9.
    unsafe { core::arch::amdgpu::perm(src0, src1, sel) }
}

/// Four f32 lanes of an MFMA 16x16 accumulator (one lane's share of a 16×16 D tile).
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct F32x4(pub [f32; 4]);

impl F32x4 {
    /// All zeros.
    #[inline(always)]
    pub const fn zero() -> Self {
        F32x4([0.0; 4])
    }
    /// The four values (a transmute: indexing a SIMD type's field does not compile on this target).
    #[inline(always)]
    pub fn to_array(self) -> [f32; 4] {
        // SAFETY: F32x4 is repr(simd) over [f32; 4]: same size, same element order.
        unsafe { core::mem::transmute::<F32x4, [f32; 4]>(self) }
    }
}

impl F32x4 {
    /// `self · s + acc` element-wise with one rounding (`llvm.fma.v4f32`, two `v_pk_fma_f32`).
    #[inline(always)]
    pub fn fma_splat(self, s: f32, acc: F32x4) -> F32x4 {
        // SAFETY: simd_fma on three values of the same repr(simd) f32 vector type is defined for
        // every input (IEEE fused multiply-add per element).
        unsafe { core::intrinsics::simd::simd_fma(self, F32x4([s; 4]), acc) }
    }

    /// [`Self::fma_splat`] with the splat written out (`[s, s, s, s]`): the same operation
    /// element for element. The repeat expression `[s; 4]` becomes a 4-trip store loop in
    /// rustc's IR, before which LLVM's IndVarSimplify sinks the code preceding it; in a
    /// pipelined loop that gathers every promotion of a block into one lump
    /// ([`crate::mainloop_bs`]). Written out, the promotions stay where the source puts them,
    /// at some register cost (the 48-row pipelined kernel keeps `fma_splat`: 250 → 260
    /// registers would cost its second workgroup per CU).
    #[inline(always)]
    pub fn fma_splat_in_place(self, s: f32, acc: F32x4) -> F32x4 {
        // SAFETY: as in fma_splat.
        unsafe { core::intrinsics::simd::simd_fma(self, F32x4([s, s, s, s]), acc) }
    }
}

/// Four u32 lanes: 16 bytes moved by one `buffer_load_dwordx4` / `ds_read_b128` /
/// `ds_write_b128`. Its 16-byte alignment lets LLVM use the 128-bit LDS instructions.
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct U32x4(pub [u32; 4]);

impl U32x4 {
    /// The four words.
    #[inline(always)]
    pub fn to_array(self) -> [u32; 4] {
        // SAFETY: U32x4 is repr(simd) over [u32; 4]: same size, same element order.
        unsafe { core::mem::transmute::<U32x4, [u32; 4]>(self) }
    }
    /// The 16 bytes as two u64 (byte order preserved).
    #[inline(always)]
    pub fn to_u64x2(self) -> [u64; 2] {
        // SAFETY: 16 bytes of plain integers reinterpreted as 16 bytes of plain integers.
        unsafe { core::mem::transmute::<U32x4, [u64; 2]>(self) }
    }
    /// Two u64 as 16 bytes (byte order preserved; the inverse of [`Self::to_u64x2`]).
    #[inline(always)]
    pub fn from_u64x2(v: [u64; 2]) -> U32x4 {
        // SAFETY: 16 bytes of plain integers reinterpreted as 16 bytes of plain integers.
        unsafe { core::mem::transmute::<[u64; 2], U32x4>(v) }
    }
}

/// Two u32 lanes (the data of a `buffer_store_dwordx2`).
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct U32x2(pub [u32; 2]);

impl U32x2 {
    /// The 8 bytes as one u64 (little-endian: lane 0 in bits 31:0).
    #[inline(always)]
    pub fn to_u64(self) -> u64 {
        // SAFETY: 8 bytes of plain integers reinterpreted as 8 bytes of plain integers.
        unsafe { core::mem::transmute::<U32x2, u64>(self) }
    }
}

impl U32x4 {
    /// The 16 bytes as four f32 (bit patterns preserved).
    #[inline(always)]
    pub fn to_f32x4(self) -> F32x4 {
        // SAFETY: both are 16-byte repr(simd) vectors of 4-byte plain values.
        unsafe { core::mem::transmute::<U32x4, F32x4>(self) }
    }
}

impl F32x4 {
    /// The four values' bit patterns (for stores).
    #[inline(always)]
    pub fn to_bits(self) -> U32x4 {
        // SAFETY: both are 16-byte repr(simd) vectors of 4-byte plain values.
        unsafe { core::mem::transmute::<F32x4, U32x4>(self) }
    }
    /// `self · s + acc` element-wise with one rounding per element (`llvm.fma.v4f32`).
    #[inline(always)]
    pub fn fma(self, s: F32x4, acc: F32x4) -> F32x4 {
        // SAFETY: simd_fma on three values of the same repr(simd) f32 vector type is defined for
        // every input.
        unsafe { core::intrinsics::simd::simd_fma(self, s, acc) }
    }
    /// `self · s` element-wise (two `v_pk_mul_f32`).
    #[inline(always)]
    pub fn mul_splat(self, s: f32) -> F32x4 {
        // SAFETY: simd_mul of two values of the same repr(simd) f32 vector type.
        unsafe { core::intrinsics::simd::simd_mul(self, F32x4([s; 4])) }
    }
    /// `self + o` element-wise.
    #[inline(always)]
    pub fn add(self, o: F32x4) -> F32x4 {
        // SAFETY: simd_add of two values of the same repr(simd) f32 vector type.
        unsafe { core::intrinsics::simd::simd_add(self, o) }
    }
}

/// Four i32 lanes: the raw LLVM type of a buffer resource.
#[repr(simd)]
#[derive(Clone, Copy)]
struct I32x4([i32; 4]);

/// A buffer resource descriptor (V#, 128 bits) over `[base, base + num_bytes)`: raw (stride 0)
/// accesses whose `voffset` is `≥ num_bytes` read 0 and drop writes. Must be wave-uniform (it
/// lives in SGPRs); build it from kernel arguments.
#[derive(Clone, Copy)]
pub struct BufferResource(I32x4);

/// dword3 of a raw buffer resource on gfx9 (CDNA): 32-bit data format, no swizzle.
const BUFFER_RSRC_DWORD3: i32 = 0x0002_0000;

impl BufferResource {
    /// A resource over `num_bytes` bytes at device address `base` (stride 0, so bits 48-63 of
    /// dword1 are zero; a canonical device address fits in 48 bits).
    #[inline(always)]
    pub fn new(base: u64, num_bytes: u32) -> Self {
        BufferResource(I32x4([base as u32 as i32, ((base >> 32) as u32 & 0xffff) as i32, num_bytes as i32, BUFFER_RSRC_DWORD3]))
    }
}

/// Encodings of `s_waitcnt` on gfx9 (vmcnt bits 3:0 + 15:14, expcnt 6:4, lgkmcnt 11:8).
pub mod waitcnt {
    /// Wait until all LDS / scalar-memory operations of the wave are done; others unbounded.
    pub const LGKMCNT0: i32 = 0xC07F;
    /// Wait until all vector-memory operations of the wave are done; others unbounded.
    pub const VMCNT0: i32 = 0x0F70;
}

/// `sched_group_barrier` masks (LLVM `AMDGPU::SchedGroupMask`).
pub mod sched {
    /// VALU instructions.
    pub const VALU: u32 = 0x2;
    /// MFMA / WMMA instructions.
    pub const MFMA: u32 = 0x8;
    /// Vector memory reads.
    pub const VMEM_READ: u32 = 0x20;
    /// LDS reads.
    pub const DS_READ: u32 = 0x100;
    /// LDS writes.
    pub const DS_WRITE: u32 = 0x200;
}
pub use core::arch::amdgpu::sched_group_barrier;

/// `sched_barrier(0)`: the instruction scheduler may move nothing across this point (emits no
/// instruction). Used to keep a pipeline stage's memory traffic where it hides latency.
#[inline(always)]
pub fn sched_fence() {
    // SAFETY: a pure scheduling hint with no runtime effect.
    unsafe { core::arch::amdgpu::sched_barrier::<0>() }
}

/// Eight i32 lanes: the register operand of a gfx950 `f8f6f4` MFMA (32 FP8 values per lane).
#[cfg(fp8gemm_gfx950)]
#[repr(simd)]
#[derive(Clone, Copy)]
struct I32x8([i32; 8]);

#[cfg(fp8gemm_gfx950)]
unsafe extern "unadjusted" {
    // With constant zero scales and op_sel, LLVM selects the unscaled
    // `v_mfma_f32_16x16x128_f8f6f4` (checked with the pinned `llc -mcpu=gfx950`).
    #[link_name = "llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v8i32.v8i32"]
    fn mfma_scale_f32_16x16x128_f8f6f4_raw(a: I32x8, b: I32x8, c: F32x4, cbsz: i32, blgp: i32, opsel_a: i32, scale_a: i32, opsel_b: i32, scale_b: i32)
    -> F32x4;
}

unsafe extern "unadjusted" {
    #[link_name = "llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8"]
    fn mfma_f32_16x16x32_fp8_fp8_raw(a: i64, b: i64, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
    #[link_name = "llvm.amdgcn.raw.buffer.load.v4i32"]
    fn raw_buffer_load_v4i32(rsrc: I32x4, voffset: i32, soffset: i32, aux: i32) -> U32x4;
    #[link_name = "llvm.amdgcn.raw.buffer.load.f32"]
    fn raw_buffer_load_f32_raw(rsrc: I32x4, voffset: i32, soffset: i32, aux: i32) -> f32;
    #[link_name = "llvm.amdgcn.raw.buffer.load.v2i32"]
    fn raw_buffer_load_v2i32(rsrc: I32x4, voffset: i32, soffset: i32, aux: i32) -> U32x2;
    #[link_name = "llvm.amdgcn.raw.buffer.store.v4i32"]
    fn raw_buffer_store_v4i32(data: U32x4, rsrc: I32x4, voffset: i32, soffset: i32, aux: i32);
    #[link_name = "llvm.amdgcn.raw.buffer.store.v2i32"]
    fn raw_buffer_store_v2i32(data: U32x2, rsrc: I32x4, voffset: i32, soffset: i32, aux: i32);
    #[link_name = "llvm.amdgcn.s.buffer.load.f32"]
    fn s_buffer_load_f32_raw(rsrc: I32x4, offset: i32, aux: i32) -> f32;
    #[link_name = "llvm.amdgcn.s.buffer.load.i32"]
    fn s_buffer_load_i32_raw(rsrc: I32x4, offset: i32, aux: i32) -> i32;
    #[link_name = "llvm.amdgcn.raw.buffer.load.i32"]
    fn raw_buffer_load_i32(rsrc: I32x4, voffset: i32, soffset: i32, aux: i32) -> i32;
    #[link_name = "llvm.amdgcn.raw.buffer.store.i32"]
    fn raw_buffer_store_i32(data: i32, rsrc: I32x4, voffset: i32, soffset: i32, aux: i32);
    #[link_name = "llvm.amdgcn.ds.bpermute"]
    fn ds_bpermute_raw(index: i32, src: i32) -> i32;
    #[link_name = "llvm.amdgcn.s.waitcnt"]
    fn s_waitcnt_raw(imm: i32);
    #[link_name = "llvm.amdgcn.s.setprio"]
    fn s_setprio_raw(prio: i16);
    #[link_name = "llvm.amdgcn.cvt.pk.fp8.f32"]
    fn cvt_pk_fp8_f32_raw(a: f32, b: f32, old: i32, word_sel: bool) -> i32;
}

/// `v_cvt_pk_fp8_f32`: converts `a` and `b` to the target's FP8 (E4M3FNUZ on gfx942, E4M3FN on
/// gfx950), round to nearest even, and writes them as bytes 0, 1 (`HI = false`) or 2, 3
/// (`HI = true`) of `old`, keeping its other two bytes. The instruction does **not** saturate: a
/// finite value that rounds above the format's maximum becomes NaN (clamp before converting).
#[inline(always)]
pub fn cvt_pk_fp8_f32<const HI: bool>(a: f32, b: f32, old: u32) -> u32 {
    // SAFETY: a pure register operation on gfx942/gfx950 (the only targets of this crate);
    // word_sel is a compile-time constant as the intrinsic requires.
    unsafe { cvt_pk_fp8_f32_raw(a, b, old as i32, HI) as u32 }
}

/// The largest of `v` over the 16 lanes of this lane's DPP row (lanes `16·r .. 16·r + 16`),
/// in every lane of the row: four `row_ror` DPP steps (8, 4, 2, 1). Every lane of the wave must
/// be active (a rotate from an inactive lane would read 0, which is harmless for the unsigned
/// maximum but documented here so callers keep the wave converged).
#[inline(always)]
pub fn row16_umax(v: u32) -> u32 {
    use core::arch::amdgpu::update_dpp;
    // SAFETY: DPP row rotates are defined for every lane of a full row; the controls are the
    // row_ror encodings 0x120 + n of the GFX9 DPP format, all rows and banks enabled.
    unsafe {
        let v = v.max(update_dpp::<0x128, 0xf, 0xf, false>(0, v));
        let v = v.max(update_dpp::<0x124, 0xf, 0xf, false>(0, v));
        let v = v.max(update_dpp::<0x122, 0xf, 0xf, false>(0, v));
        v.max(update_dpp::<0x121, 0xf, 0xf, false>(0, v))
    }
}

/// The 8 bf16 values packed in `v` (element `2i` in the low half of word `i`) as f32, exactly.
#[inline(always)]
pub fn bf16x8(v: U32x4) -> [f32; 8] {
    let w = v.to_array();
    let mut out = [0f32; 8];
    for i in 0..4 {
        out[2 * i] = f32::from_bits(w[i] << 16);
        out[2 * i + 1] = f32::from_bits(w[i] & 0xffff_0000);
    }
    out
}

/// The largest of `v` over the 8 lanes of this lane's half-row (lanes `8·h .. 8·h + 8`), in
/// every lane of it: DPP `quad_perm:[1,0,3,2]`, `quad_perm:[2,3,0,1]`, then `row_half_mirror`
/// (lane `i` of a half-row reads lane `7 − i`, so each quad meets the other's maximum). Every
/// lane of the wave must be active.
#[inline(always)]
pub fn row8_umax(v: u32) -> u32 {
    use core::arch::amdgpu::update_dpp;
    // SAFETY: quad permutes and the half-row mirror are defined for every lane; controls are the
    // GFX9 DPP encodings (quad_perm 0x00–0xff, row_half_mirror 0x141), all rows and banks on.
    unsafe {
        let v = v.max(update_dpp::<0xb1, 0xf, 0xf, false>(0, v));
        let v = v.max(update_dpp::<0x4e, 0xf, 0xf, false>(0, v));
        v.max(update_dpp::<0x141, 0xf, 0xf, false>(0, v))
    }
}

/// The value of `v` in lane `LANE` of the wave (`v_readlane_b32`), wave-uniform.
#[inline(always)]
pub fn readlane<const LANE: u32>(v: u32) -> u32 {
    const { assert!(LANE < 64) };
    // SAFETY: LANE is a compile-time constant below 64 (asserted above), so it is uniform.
    unsafe { core::arch::amdgpu::readlane_u32(v, LANE) }
}

/// The value of `v` in lane `lane & 63` of the wave (`v_readlane_b32` with an SGPR lane
/// select), wave-uniform. `lane` must be wave-uniform (it is read from the first active lane).
#[inline(always)]
pub fn readlane_dyn(v: u32, lane: u32) -> u32 {
    let lane = readfirstlane_u32(lane) & 63;
    // SAFETY: `lane` is wave-uniform (readfirstlane) and below 64.
    unsafe { core::arch::amdgpu::readlane_u32(v, lane) }
}

/// `ds_bpermute_b32`: lane `l` receives `v` of lane `(src_byte >> 2) & 63`, where `src_byte` is
/// lane `l`'s own argument (a byte address: 4 · source lane). Uses the LDS crossbar, not LDS
/// memory (no allocation, no bank access); ordered by lgkmcnt like an LDS read.
#[inline(always)]
pub fn ds_bpermute(src_byte: u32, v: u32) -> u32 {
    // SAFETY: a register-to-register lane permute; every index selects some lane of the wave.
    unsafe { ds_bpermute_raw(src_byte as i32, v as i32) as u32 }
}

/// `buffer_load_dwordx4 … offen`: 16 bytes at `voffset + soffset` of `rsrc`; 0 when `voffset`
/// is out of range (≥ the resource's size).
///
/// # Safety
/// `rsrc` must be wave-uniform and describe memory that is readable for the whole kernel (every
/// in-range byte is dereferenceable); `voffset + soffset` must be 4-byte aligned.
#[inline(always)]
pub unsafe fn buffer_load_b128(rsrc: BufferResource, voffset: u32, soffset: u32) -> U32x4 {
    // SAFETY: the caller guarantees the resource; the hardware range-checks voffset.
    unsafe { raw_buffer_load_v4i32(rsrc.0, voffset as i32, soffset as i32, 0) }
}

/// `buffer_load_dwordx2 … offen`: 8 bytes at `voffset + soffset` of `rsrc`; 0 when `voffset` is
/// out of range.
///
/// # Safety
/// As [`buffer_load_b128`].
#[inline(always)]
pub unsafe fn buffer_load_b64(rsrc: BufferResource, voffset: u32, soffset: u32) -> U32x2 {
    // SAFETY: see buffer_load_b128.
    unsafe { raw_buffer_load_v2i32(rsrc.0, voffset as i32, soffset as i32, 0) }
}

/// `buffer_store_dwordx4 … offen`: 16 bytes at `voffset + soffset`; dropped when `voffset` is
/// out of range.
///
/// # Safety
/// As [`buffer_store_b64`].
#[inline(always)]
pub unsafe fn buffer_store_b128(data: U32x4, rsrc: BufferResource, voffset: u32, soffset: u32) {
    // SAFETY: the caller guarantees the resource; the hardware range-checks voffset.
    unsafe { raw_buffer_store_v4i32(data, rsrc.0, voffset as i32, soffset as i32, 0) }
}

/// `buffer_load_dword … offen` of one f32; 0.0 when `voffset` is out of range.
///
/// # Safety
/// As [`buffer_load_b128`].
#[inline(always)]
pub unsafe fn buffer_load_f32(rsrc: BufferResource, voffset: u32, soffset: u32) -> f32 {
    // SAFETY: see buffer_load_b128.
    unsafe { raw_buffer_load_f32_raw(rsrc.0, voffset as i32, soffset as i32, 0) }
}

/// `buffer_load_dword … offen` of one i32; 0 when `voffset` is out of range.
///
/// # Safety
/// As [`buffer_load_b128`].
#[inline(always)]
pub unsafe fn buffer_load_i32(rsrc: BufferResource, voffset: u32, soffset: u32) -> i32 {
    // SAFETY: see buffer_load_b128.
    unsafe { raw_buffer_load_i32(rsrc.0, voffset as i32, soffset as i32, 0) }
}

/// `buffer_store_dword … offen` of one i32; dropped when `voffset` is out of range.
///
/// # Safety
/// As [`buffer_store_b64`].
#[inline(always)]
pub unsafe fn buffer_store_i32(data: i32, rsrc: BufferResource, voffset: u32, soffset: u32) {
    // SAFETY: the caller guarantees the resource; the hardware range-checks voffset.
    unsafe { raw_buffer_store_i32(data, rsrc.0, voffset as i32, soffset as i32, 0) }
}

/// `buffer_store_dwordx2 … offen`: 8 bytes at `voffset + soffset`; dropped when `voffset` is
/// out of range.
///
/// # Safety
/// `rsrc` must be wave-uniform and describe memory this kernel may write (no other reader or
/// writer during the launch); offsets 4-byte aligned.
#[inline(always)]
pub unsafe fn buffer_store_b64(data: U32x2, rsrc: BufferResource, voffset: u32, soffset: u32) {
    // SAFETY: the caller guarantees the resource; the hardware range-checks voffset.
    unsafe { raw_buffer_store_v2i32(data, rsrc.0, voffset as i32, soffset as i32, 0) }
}

/// The `aux` (cache policy) operand of the buffer intrinsics for a **device-scope** access on
/// gfx940+: SC1 set, SC0 clear (LLVM `CPol::SC1` = 16). LLVM AMDGPUUsage, "Memory Model
/// GFX942": monotonic agent-scope atomic loads and stores are `buffer/global/flat_load sc1=1`
/// and `…_store sc1=1`, i.e. a plain access with this scope, coherent across the device's XCDs
/// (their L2s are not coherent with each other for ordinary accesses).
const CPOL_SC1: i32 = 16;

/// `buffer_store_dwordx2 … offen sc1`: as [`buffer_store_b64`] at device scope (once completed,
/// visible to device-scope loads on every XCD; the MoE scatter epilogue's rows of y).
///
/// # Safety
/// As [`buffer_store_b64`].
#[inline(always)]
pub unsafe fn buffer_store_b64_device(data: U32x2, rsrc: BufferResource, voffset: u32, soffset: u32) {
    // SAFETY: the caller guarantees the resource; the hardware range-checks voffset.
    unsafe { raw_buffer_store_v2i32(data, rsrc.0, voffset as i32, soffset as i32, CPOL_SC1) }
}

/// `buffer_store_dwordx4 … offen sc1`: as [`buffer_store_b128`] at device scope, so once the
/// store has completed (`s_waitcnt vmcnt(0)`) a device-scope load by any workgroup on any XCD
/// sees it (split-K partials, [`crate::dense`]).
///
/// # Safety
/// As [`buffer_store_b64`].
#[inline(always)]
pub unsafe fn buffer_store_b128_device(data: U32x4, rsrc: BufferResource, voffset: u32, soffset: u32) {
    // SAFETY: the caller guarantees the resource; the hardware range-checks voffset.
    unsafe { raw_buffer_store_v4i32(data, rsrc.0, voffset as i32, soffset as i32, CPOL_SC1) }
}

/// `buffer_load_dwordx4 … offen sc1`: as [`buffer_load_b128`] at device scope (misses any
/// stale copy in this CU's L1 / this XCD's L2; pairs with [`buffer_store_b128_device`]).
///
/// # Safety
/// As [`buffer_load_b128`].
#[inline(always)]
pub unsafe fn buffer_load_b128_device(rsrc: BufferResource, voffset: u32, soffset: u32) -> U32x4 {
    // SAFETY: see buffer_load_b128.
    unsafe { raw_buffer_load_v4i32(rsrc.0, voffset as i32, soffset as i32, CPOL_SC1) }
}

/// `flat_atomic_add … sc0 sc1` with return: adds `v` to the u32 at device address `addr` and
/// returns the previous value (a relaxed, system-scope read-modify-write; ordering against
/// other memory accesses is the caller's, see [`release_barrier`]).
///
/// # Safety
/// `addr` must be a 4-byte aligned device address of memory this kernel may read and write,
/// accessed by other work-items only atomically during the launch.
#[inline(always)]
pub unsafe fn atomic_add_u32(addr: u64, v: u32) -> u32 {
    // SAFETY: the caller guarantees a valid, aligned, atomically accessed u32.
    unsafe { core::sync::atomic::AtomicU32::from_ptr(addr as usize as *mut u32) }.fetch_add(v, core::sync::atomic::Ordering::Relaxed)
}

/// An atomic store of `v` to the u32 at device address `addr` (relaxed, system scope).
///
/// # Safety
/// As [`atomic_add_u32`].
#[inline(always)]
pub unsafe fn atomic_store_u32(addr: u64, v: u32) {
    // SAFETY: the caller guarantees a valid, aligned, atomically accessed u32.
    unsafe { core::sync::atomic::AtomicU32::from_ptr(addr as usize as *mut u32) }.store(v, core::sync::atomic::Ordering::Relaxed)
}

/// Workgroup barrier after global stores: every wave waits until its vector memory operations
/// have completed (`s_waitcnt vmcnt(0)`: a store with device scope is then visible to the whole
/// device), then `s_barrier`. Compiler fences keep LLVM from moving memory accesses across it.
/// After it, one work-item's atomic publishes the workgroup's stores (the release half of the
/// split-K hand-off in [`crate::dense`]).
#[inline(always)]
pub fn release_barrier() {
    use core::sync::atomic::{Ordering, compiler_fence};
    compiler_fence(Ordering::SeqCst);
    s_waitcnt::<{ waitcnt::VMCNT0 }>();
    s_barrier();
    compiler_fence(Ordering::SeqCst);
}

/// Release of this wave's global stores: it waits until its vector memory operations have
/// completed (`s_waitcnt vmcnt(0)`: a store with device scope is then visible to the whole
/// device); compiler fences keep LLVM from moving memory accesses across it. After it, one of
/// the wave's lanes publishes the stores with an atomic ([`crate::dense`], the per-wave split-K
/// protocol).
#[inline(always)]
pub fn release_wave() {
    use core::sync::atomic::{Ordering, compiler_fence};
    compiler_fence(Ordering::SeqCst);
    s_waitcnt::<{ waitcnt::VMCNT0 }>();
    compiler_fence(Ordering::SeqCst);
}

/// A raw-buffer `voffset` for a 16-byte access that reads 0 without touching memory: at or past
/// `num_records` of every buffer resource below `0xFFFF_FFF0` bytes (the range check covers
/// voffset + instruction offset, not soffset). For a larger buffer it lies inside it.
pub const BUFFER_PAST_END: u32 = 0xFFFF_FFF0;

/// `s_buffer_load_dword`: a wave-uniform f32 through the scalar cache (0.0 out of range).
///
/// # Safety
/// `rsrc` and `offset` must be wave-uniform, `offset` 4-byte aligned, and the memory must not be
/// written during the launch (the scalar cache is not coherent with vector writes).
#[inline(always)]
pub unsafe fn s_buffer_load_f32(rsrc: BufferResource, offset: u32) -> f32 {
    // SAFETY: the caller guarantees uniformity and read-only memory.
    unsafe { s_buffer_load_f32_raw(rsrc.0, offset as i32, 0) }
}

/// `s_buffer_load_dword`: a wave-uniform i32 through the scalar cache (0 out of range). The
/// result lives in an SGPR, so it can steer wave-uniform control flow and address arithmetic.
///
/// # Safety
/// As [`s_buffer_load_f32`].
#[inline(always)]
pub unsafe fn s_buffer_load_i32(rsrc: BufferResource, offset: u32) -> i32 {
    // SAFETY: the caller guarantees uniformity and read-only memory.
    unsafe { s_buffer_load_i32_raw(rsrc.0, offset as i32, 0) }
}

/// `s_waitcnt imm` (see [`waitcnt`] for encodings).
#[inline(always)]
pub fn s_waitcnt<const IMM: i32>() {
    // SAFETY: waiting for counters has no memory effect besides ordering.
    unsafe { s_waitcnt_raw(IMM) }
}

/// `s_setprio`: raise (or lower) this wave's issue priority, 0..=3.
#[inline(always)]
pub fn s_setprio<const PRIO: i16>() {
    // SAFETY: only changes arbitration priority between waves.
    unsafe { s_setprio_raw(PRIO) }
}

/// Workgroup barrier for LDS producer/consumer hand-off: waits for this wave's LDS operations
/// (`s_waitcnt lgkmcnt(0)`), then `s_barrier`. Compiler fences on both sides keep LLVM from
/// moving memory accesses across it (the barrier intrinsic itself is not a memory operation and
/// gfx942's back-off barrier does not wait for outstanding LDS writes).
#[inline(always)]
pub fn lds_barrier() {
    use core::sync::atomic::{Ordering, compiler_fence};
    compiler_fence(Ordering::SeqCst);
    s_waitcnt::<{ waitcnt::LGKMCNT0 }>();
    s_barrier();
    compiler_fence(Ordering::SeqCst);
}

/// Base of the launch's dynamic LDS (`sharedMemBytes` bytes), as 16-byte units.
#[inline(always)]
pub fn dynamic_lds() -> *mut U32x4 {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<U32x4>()
}

/// `ds_read_b128` of the 16 bytes at byte offset `byte_off` of the dynamic LDS.
///
/// # Safety
/// `byte_off + 16 ≤ sharedMemBytes` of the launch, 16-byte aligned, and the bytes were written
/// (and made visible with [`lds_barrier`]) before.
#[inline(always)]
pub unsafe fn lds_read_b128(byte_off: u32) -> U32x4 {
    // SAFETY: the caller guarantees the offset lies inside the launch's LDS allocation.
    unsafe { *dynamic_lds().byte_add(byte_off as usize) }
}

/// `ds_read_b64` of the 8 bytes at byte offset `byte_off` of the dynamic LDS.
///
/// # Safety
/// `byte_off + 8 ≤ sharedMemBytes` of the launch, 8-byte aligned, and the bytes were written
/// (and made visible with [`lds_barrier`]) before.
#[inline(always)]
pub unsafe fn lds_read_b64(byte_off: u32) -> U32x2 {
    // SAFETY: the caller guarantees the offset lies inside the launch's LDS allocation and is
    // 8-byte aligned (the base is 16-byte aligned); read as one u64 so the access is one
    // 8-byte-aligned `ds_read_b64`, then 8 bytes of plain integers reinterpreted as 8 bytes of
    // plain integers.
    unsafe { core::mem::transmute::<u64, U32x2>(*dynamic_lds().byte_add(byte_off as usize).cast::<u64>()) }
}

/// `ds_read_b32` of the 4 bytes at byte offset `byte_off` of the dynamic LDS.
///
/// # Safety
/// `byte_off + 4 ≤ sharedMemBytes` of the launch, 4-byte aligned, and the bytes were written
/// (and made visible with [`lds_barrier`]) before.
#[inline(always)]
pub unsafe fn lds_read_b32(byte_off: u32) -> u32 {
    // SAFETY: the caller guarantees the offset lies inside the launch's LDS allocation and is
    // 4-byte aligned (the base is 16-byte aligned).
    unsafe { *dynamic_lds().byte_add(byte_off as usize).cast::<u32>() }
}

/// `ds_write_b32` of `v` at byte offset `byte_off` of the dynamic LDS.
///
/// # Safety
/// `byte_off + 4 ≤ sharedMemBytes`, 4-byte aligned, and no other work-item accesses these bytes
/// until the next [`lds_barrier`].
#[inline(always)]
pub unsafe fn lds_write_b32(byte_off: u32, v: u32) {
    // SAFETY: the caller guarantees the offset lies inside the launch's LDS allocation and is
    // 4-byte aligned (the base is 16-byte aligned).
    unsafe { *dynamic_lds().byte_add(byte_off as usize).cast::<u32>() = v }
}

/// `ds_write_b64` of `v` at byte offset `byte_off` of the dynamic LDS.
///
/// # Safety
/// `byte_off + 8 ≤ sharedMemBytes`, 8-byte aligned, and no other work-item accesses these bytes
/// until the next [`lds_barrier`].
#[inline(always)]
pub unsafe fn lds_write_b64(byte_off: u32, v: u64) {
    // SAFETY: the caller guarantees the offset lies inside the launch's LDS allocation and is
    // 8-byte aligned (the base is 16-byte aligned).
    unsafe { *dynamic_lds().byte_add(byte_off as usize).cast::<u64>() = v }
}

/// `ds_write_b128` of `v` at byte offset `byte_off` of the dynamic LDS.
///
/// # Safety
/// `byte_off + 16 ≤ sharedMemBytes`, 16-byte aligned, and no other work-item accesses these
/// bytes until the next [`lds_barrier`].
#[inline(always)]
pub unsafe fn lds_write_b128(byte_off: u32, v: U32x4) {
    // SAFETY: the caller guarantees the offset lies inside the launch's LDS allocation.
    unsafe { *dynamic_lds().byte_add(byte_off as usize) = v }
}

/// One 128-deep FP8 block of a 16×16 output, `D = Σ_c A_c·B_c + C` over the four 32-deep
/// chunks `c` whose operands `a[c]` / `b[c]` are laid out as [`mfma_f32_16x16x32_fp8_fp8`]
/// takes them (lane `16·g + i` holds 8 values of row / column `i`).
///
/// On gfx950 (built with `--cfg fp8gemm_gfx950`) this is one CDNA4
/// `v_mfma_f32_16x16x128_f8f6f4` with FP8 (E4M3FN) operands — 8 passes instead of four
/// 4-pass MFMAs, twice the rate: lane `l` passes its four chunks concatenated as the
/// instruction's 32 bytes for A and for B, so whatever logical-K order the instruction assigns
/// to a lane's bytes (CDNA4 ISA guide, "Dense matrix layouts" of the `f8f6f4` MFMAs), the same
/// permutation applies to A and B and the dot product over the block is unchanged. Elsewhere
/// it is the four chained 16x16x32 MFMAs (`C` into the first).
#[inline(always)]
pub fn mfma_f32_16x16x128_fp8(a: [u64; 4], b: [u64; 4], c: F32x4) -> F32x4 {
    #[cfg(fp8gemm_gfx950)]
    {
        // SAFETY: `[u64; 4]` and `I32x8` are 32 bytes of plain integers with the same byte
        // order; the intrinsic is a pure register operation that exists on gfx950 (the only
        // target built with this cfg); cbsz = blgp = 0 selects FP8 (E4M3) for both operands;
        // zero op_sel and scales select the unscaled instruction.
        unsafe {
            let (a, b) = (core::mem::transmute::<[u64; 4], I32x8>(a), core::mem::transmute::<[u64; 4], I32x8>(b));
            mfma_scale_f32_16x16x128_f8f6f4_raw(a, b, c, 0, 0, 0, 0, 0, 0)
        }
    }
    #[cfg(not(fp8gemm_gfx950))]
    {
        let mut d = c;
        for i in 0..4 {
            d = mfma_f32_16x16x32_fp8_fp8(a[i], b[i], d);
        }
        d
    }
}

/// [`mfma_f32_16x16x128_fp8`] (C = 0) on one 128-deep block as the main loops hold it: two
/// fragment reads `r` of two 8-byte k-steps each, for B (`b[r]`) and for A (`a[r]`).
#[inline(always)]
pub fn mfma_k128(b: [[u64; 2]; 2], a: [[u64; 2]; 2]) -> F32x4 {
    mfma_f32_16x16x128_fp8([b[0][0], b[0][1], b[1][0], b[1][1]], [a[0][0], a[0][1], a[1][0], a[1][1]], F32x4::zero())
}

/// [`mfma_k128`] with B as the bs loops hold it: two 16-byte fragment reads.
#[inline(always)]
pub fn mfma_k128_frags(b: [U32x4; 2], a: [[u64; 2]; 2]) -> F32x4 {
    mfma_k128([b[0].to_u64x2(), b[1].to_u64x2()], a)
}

/// Whether this build has the CDNA4 FP8 MFMA (`--cfg fp8gemm_gfx950`): main loops then issue
/// one [`mfma_f32_16x16x128_fp8`] per 128-deep block and output instead of four 16x16x32s.
pub const K128_MFMA: bool = cfg!(fp8gemm_gfx950);

/// `v_mfma_f32_16x16x32_fp8_fp8`: D = A·B + C for a 16×16×32 FP8 tile; each lane supplies 8 FP8
/// values of A and of B (layout in `shared/reference/gfx942.md`).
#[inline(always)]
pub fn mfma_f32_16x16x32_fp8_fp8(a: u64, b: u64, c: F32x4) -> F32x4 {
    // SAFETY: a pure register operation; the intrinsic exists on gfx942/gfx950 (the only targets
    // this crate is built for) and FP8 MFMAs ignore cbsz/abid/blgp, which must be 0.
    unsafe { mfma_f32_16x16x32_fp8_fp8_raw(a as i64, b as i64, c, 0, 0, 0) }
}
