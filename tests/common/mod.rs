//! Helpers shared by the GEMM integration tests.
#![allow(dead_code)] // each test binary uses its own subset

use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::Context;
use half::bf16;
use rand::{rngs::StdRng, Rng, SeedableRng};
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

/// One dense problem of DeepGEMM's test recipe: BF16-rounded normal A (`m × k`) and B (`n × k`),
/// and their 1×128 / 128×128 quantizations.
pub struct Case {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub qa: QuantizedActivations<E4M3Fnuz>,
    pub qb: QuantizedWeights<E4M3Fnuz>,
}

/// The [`Case`] of shape `m × n × k` drawn from `seed`.
pub fn case(m: usize, n: usize, k: usize, seed: u64) -> Case {
    let mut rng = StdRng::seed_from_u64(seed);
    let a = randn_bf16(m * k, &mut rng);
    let b = randn_bf16(n * k, &mut rng);
    let qa = QuantizedActivations::quantize(&a, m, k).unwrap();
    let qb = QuantizedWeights::quantize(&b, n, k).unwrap();
    Case { m, n, k, a, b, qa, qb }
}
