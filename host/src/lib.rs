//! fp8gemm
