fn main() { eprintln!("fp8gemm: CLI under construction"); }
