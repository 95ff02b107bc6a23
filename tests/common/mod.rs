//! Helpers shared by the GEMM integration tests.
#![allow(dead_code)] // each test binary uses its own subset

use fp8gemm::Context;
use half::bf16;
use rand::{rngs::StdRng, Rng};
use rand_distr::StandardNormal;

/// A context whose launches run with every emulator check on.
pub fn checked_context() -> Context {
    #[cfg(feature = "emu")]
    amdgpu_emu::hip::set_launch_checks(amdgpu_emu::exec::Checks::all());
    Context::new().unwrap()
}

/// `count` standard-normal values rounded to BF16 (as DeepGEMM's tests draw them).
pub fn randn_bf16(count: usize, rng: &mut StdRng) -> Vec<f32> {
    (0..count).map(|_| bf16::from_f32(rng.sample::<f32, _>(StandardNormal)).to_f32()).collect()
}
