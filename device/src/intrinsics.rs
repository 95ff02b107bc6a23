//! The one place that declares LLVM amdgcn intrinsics. Everything here is a thin, documented
//! wrapper; kernels call these wrappers, never `llvm.*` names directly.
#![allow(improper_ctypes)]

pub use core::arch::amdgpu::{s_barrier, workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};

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

unsafe extern "unadjusted" {
    #[link_name = "llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8"]
    fn mfma_f32_16x16x32_fp8_fp8_raw(a: i64, b: i64, c: F32x4, cbsz: i32, abid: i32, blgp: i32) -> F32x4;
}

/// `v_mfma_f32_16x16x32_fp8_fp8`: D = A·B + C for a 16×16×32 FP8 tile; each lane supplies 8 FP8
/// values of A and of B (layout in `shared/reference/gfx942.md`).
#[inline(always)]
pub fn mfma_f32_16x16x32_fp8_fp8(a: u64, b: u64, c: F32x4) -> F32x4 {
    // SAFETY: a pure register operation; the intrinsic exists on gfx942/gfx950 (the only targets
    // this crate is built for) and FP8 MFMAs ignore cbsz/abid/blgp, which must be 0.
    unsafe { mfma_f32_16x16x32_fp8_fp8_raw(a as i64, b as i64, c, 0, 0, 0) }
}
