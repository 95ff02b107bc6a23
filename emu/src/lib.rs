//! `amdgpu-emu`: a gfx942 (CDNA3, MI300X) and gfx950 (CDNA4, MI355X) emulator that executes
//! AMDGPU code objects on the CPU. The target comes from each code object's ELF `e_flags`
//! ([`loader::Target`]); gfx950 adds the CDNA4 instructions an FP8 GEMM uses (f8f6f4 and
//! block-scaled MFMAs, transposing LDS reads, wider LDS DMA, scaled FP8 conversions), 160 KiB of
//! LDS and OCP FP8 numerics.
//!
//! Layers (bottom up):
//! * [`memory`]: device allocations with bounds checking (memcheck);
//! * [`loader`]: ELF code object, `amdhsa.kernels` metadata and kernel descriptors;
//! * [`decode`] / [`disasm`]: the GFX9/CDNA3/CDNA4 instruction decoder and its LLVM-syntax
//!   printer;
//! * [`numerics`]: FP8/BF8 (FNUZ and OCP) conversions and MFMA arithmetic, bit-exact;
//! * [`exec`]: wave64 executor, workgroups with barriers and LDS, launches, checking modes
//!   (memcheck, mfma-hazard, racecheck, late-arrival, uninit-lds) and per-launch counters;
//! * [`peers`]: AMD's production FP8 GEMM code objects (read from a directory outside the repo):
//!   their launch contracts, operand layouts, an f64 reference and the measured MI325X times;
//! * [`peers_moe`]: AMD's FP8 block-scale MoE code objects (stage 1 and 1-stage fused): the
//!   routing/sorting contract, launch builders per configuration and element-wise references;
//! * [`peers_i8`]: the same for AMD's int8 GEMM code objects (bit-exact reference);
//! * [`peers_gfx950`]: the gfx950 builds of the FP8 peers (OCP E4M3FN operands);
//! * [`timing`]: the cycle-level timing model of MI300X / MI325X (the project's performance
//!   model; every figure *modelled*), its calibration against measured times, and the
//!   throughput lower bound [`timing::bound`];
//! * [`hip`]: the HIP runtime API (`hipMalloc`, `hipModuleLaunchKernel`, …) with HIP's C
//!   signatures, callable from Rust; with feature `hip-abi` they are also exported unmangled
//!   (`#[no_mangle]`), so a binary whose HIP bindings (e.g. `rocm-rs`) link no `libamdhip64`
//!   runs on the emulator (the device is a gfx942 MI300X, or a gfx950 MI355X with
//!   `AMDGPU_EMU_ARCH=gfx950` / [`hip::set_device_arch`]). Without it the crate exports no HIP
//!   symbol. Its launches run every checking mode unless the environment variable `AMDGPU_EMU_CHECKS`
//!   selects others (e.g. `AMDGPU_EMU_CHECKS=memcheck`; syntax of `exec::Checks::parse`).
#![warn(missing_docs)]

pub mod decode;
pub mod disasm;
pub mod exec;
pub mod hip;
pub mod loader;
pub mod memory;
pub mod numerics;
pub mod peers;
pub mod peers_gfx950;
pub mod peers_i8;
pub mod peers_moe;
pub mod timing;
