//! Bit-exact numerics of the gfx942 (CDNA3) and gfx950 (CDNA4) instructions that an FP8 GEMM uses: FP8/BF8
//! conversions ([`fp8`]) and MFMA matrix arithmetic ([`mfma`]).
//!
//! Everything here is a pure function of register contents, so the executor can call it per lane
//! (conversions) or per wave (MFMA). Where public sources do not pin the hardware behaviour down,
//! the choice made is stated in the item's documentation under **Model**.
//!
//! Sources used (no code was copied from any of them):
//! * AMD matrix instruction calculator (`ROCm/amd_matrix_instruction_calculator`, `-a cdna3`) and
//!   the project's `gfx942.md` digest of it: MFMA lane layouts.
//! * LLVM `IntrinsicsAMDGPU.td` / `VOP3Instructions.td` (gfx940 FP8 instructions: `op_sel` use,
//!   `vdst` tied to the old value) and `AMDGPUUsage.rst`.
//! * AMD's FNUZ format definitions (HIP "FP8 numbers" docs, composable_kernel `float8.hpp` table),
//!   and the OCP 8-bit floating point specification (OFP8 rev 1.0) for E4M3FN/E5M2.
//! * composable_kernel `include/ck/utility/f8_utils.hpp`: AMD's host reference of the FP8
//!   conversion (used to check device results), source of the stochastic rounding model.
//! * ROCm/rocm-systems issue #9556 (RCCL, 2026): `v_cvt_pk_fp8_f32` on gfx942 rounds without
//!   saturating; the reported exhaustive counts of overflowing fp8/bf8 sums are reproduced by this
//!   module's tests.
//! * AMD ROCm blog "Matrix Core Programming on AMD CDNA3 and CDNA4 architecture" (2025) and LLVM
//!   `test/MC/AMDGPU/mai-gfx950.s`: gfx950 f8f6f4 MFMA operand layouts and formats.
//! * gem5 pull request #2478 (MI300X MFMA precision): MI300X MFMA results match a fused
//!   multiply-add accumulation, not separate multiply and add.

pub mod fp8;
pub mod mfma;

pub use fp8::{
    F8Kind, cvt_f32_f8, cvt_pk_f8_f32, cvt_pk_f32_f8, cvt_scalef32_pk_f8_f32, cvt_scalef32_pk_f32_f8, cvt_sr_f8_f32, f8_to_f32, f32_to_f8_rne, f32_to_f8_sr,
    scalef32_exponent,
};
pub use mfma::{
    F8f6f4Format, MfmaOp, mfma_f32_16x16x4_f32, mfma_f32_16x16x16_bf16, mfma_f32_16x16x16_f16, mfma_f32_16x16x32_f8, mfma_f32_16x16x128_f8f6f4,
    mfma_f32_32x32x2_f32, mfma_f32_32x32x8_bf16, mfma_f32_32x32x8_f16, mfma_f32_32x32x16_f8, mfma_f32_32x32x64_f8f6f4, mfma_i32_16x16x32_i8,
    mfma_i32_32x32x16_i8, mfma_scale_f32_16x16x128_f8f6f4, mfma_scale_f32_32x32x64_f8f6f4,
};
