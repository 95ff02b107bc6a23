//! fp8gemm: DeepGEMM-style FP8 GEMMs for AMD Instinct GPUs, kernels written in Rust.
#![warn(missing_docs)]

pub mod codeobj;
pub mod config;
pub mod fp8;
pub mod quant;
pub mod reference;
