//! A transformer MLP block entirely on the device, as an inference engine would run it:
//!
//! ```text
//! x (bf16, device) ─ quantize ─ fp8_gemm_nt(W_gate_up) ─ silu(gate)·up + quantize ─ fp8_gemm_nt(W_down) ─ y (bf16, device)
//! ```
//!
//! The four launches go to a stream the caller created, are captured once into a graph and
//! replayed for new inputs; between input upload and output download nothing crosses to the
//! host (the emulator counts host copies and synchronizations per stream: the replays show
//! zero). The weights are bf16, quantized on the device once (128×128 blocks) as an engine
//! loading a bf16 checkpoint would; from then on the model's weights *are* those FP8 weights.
//!
//! Each replay is checked against CPU f32 references of the same block:
//! * the model: f32 activations and the FP8 weights dequantized — what the pipeline approximates
//!   by quantizing the two activations per token (DeepGEMM's goal `calc_diff < 1e-3`, asserted);
//! * also printed: everything unquantized (bf16 weights), where the weight quantization adds
//!   to it — two stacked FP8 GEMMs, each about 7e-4 on its own (`fp8gemm gemm`), land near 2e-3.
//!
//! Run: `cargo run --release --example mlp_block` (on the bundled gfx942 emulator).

use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::{CaptureMode, Context, DeviceActivations, DeviceWeights, Stream};
use fp8gemm::{fp8_gemm_nt, quantize_activations, quantize_weights, reference, silu_mul_quantize_activations};
use half::bf16;
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::StandardNormal;

/// Tokens, hidden size, intermediate size.
const T: usize = 96;
const H: usize = 512;
const I: usize = 384;

fn randn_bf16(count: usize, scale: f32, rng: &mut StdRng) -> Vec<bf16> {
    (0..count).map(|_| bf16::from_f32(scale * rng.sample::<f32, _>(StandardNormal))).collect()
}

fn f32s(x: &[bf16]) -> Vec<f32> {
    x.iter().map(|v| v.to_f32()).collect()
}

/// The block in f32: y = (silu(x·W_gᵀ) ⊙ x·W_uᵀ) · W_dᵀ.
fn reference_block(x: &[f32], w_gate_up: &[f32], w_down: &[f32]) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let mut h = vec![0f32; T * 2 * I];
    reference::gemm_nt_f32(x, w_gate_up, T, 2 * I, H, &mut h)?;
    let act = fp8gemm::quant::silu_mul_rows(&h, T, I)?;
    let mut y = vec![0f32; T * H];
    reference::gemm_nt_f32(&act, w_down, T, H, I, &mut y)?;
    Ok(y)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = Context::new()?;
    let stream = Stream::new(&ctx)?; // the engine's stream
    let mut rng = StdRng::seed_from_u64(7);

    // Weights: bf16 in device memory, quantized on the device once (setup, may synchronize).
    let w_gate_up = randn_bf16(2 * I * H, 0.05, &mut rng); // [2·I, H]: gate rows, then up rows
    let w_down = randn_bf16(H * I, 0.05, &mut rng); // [H, I]
    let w_gate_up_dev = ctx.upload(&w_gate_up)?;
    let w_down_dev = ctx.upload(&w_down)?;
    let mut w1 = DeviceWeights::<E4M3Fnuz>::alloc(&ctx, 2 * I, H)?;
    let mut w2 = DeviceWeights::<E4M3Fnuz>::alloc(&ctx, H, I)?;
    quantize_weights(&stream, &w_gate_up_dev, &mut w1)?;
    quantize_weights(&stream, &w_down_dev, &mut w2)?;
    // The model's weights from now on (for the CPU reference): the FP8 weights, dequantized.
    let (w1_model, w2_model) = (w1.download(&stream)?.dequantize(), w2.download(&stream)?.dequantize());

    // Activation buffers the engine owns for this layer.
    let mut x = ctx.alloc_zeroed::<bf16>(T * H)?;
    let mut xq = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, T, H)?;
    let mut h = ctx.alloc_zeroed::<bf16>(T * 2 * I)?;
    let mut hq = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, T, I)?;
    let mut y = ctx.alloc_zeroed::<bf16>(T * H)?;
    stream.synchronize()?;

    // Capture the forward pass of the block once.
    stream.begin_capture(CaptureMode::ThreadLocal)?;
    quantize_activations(&stream, &x, &mut xq)?;
    fp8_gemm_nt(&stream, &xq, &w1, &mut h)?;
    silu_mul_quantize_activations(&stream, &h, &mut hq)?;
    fp8_gemm_nt(&stream, &hq, &w2, &mut y)?;
    let graph = stream.end_capture()?.instantiate()?;

    println!("MLP block T={T} H={H} I={I} on {} ({}), captured into a graph of 4 launches", ctx.device_name(), ctx.arch());
    let mut worst: f64 = 0.0;
    for step in 0..3 {
        let xs = randn_bf16(T * H, 1.0, &mut rng);
        x.copy_from_host(&stream, &xs)?; // the engine's previous layer would write x on the device
        let before = amdgpu_emu::hip::stream_stats(stream.as_raw().cast()).ok_or("no stream statistics")?;
        // SAFETY: every buffer the captured launches use (x, xq, h, hq, y and the weights) is
        // alive and keeps its size until the replay completes (synchronized below).
        unsafe { graph.launch(&stream)? };
        let after = amdgpu_emu::hip::stream_stats(stream.as_raw().cast()).ok_or("no stream statistics")?;
        let (launches, copies, syncs) =
            (after.launches - before.launches, after.host_copies() - before.host_copies(), after.synchronizations - before.synchronizations);
        if (launches, copies, syncs) != (4, 0, 0) {
            return Err(format!("replay {step}: {launches} launches, {copies} host copies, {syncs} synchronizations; expected 4, 0, 0").into());
        }
        let got = y.download(&stream)?;
        let diff = reference::calc_diff(&got, &reference_block(&f32s(&xs), &w1_model, &w2_model)?)?;
        let diff_bf16 = reference::calc_diff(&got, &reference_block(&f32s(&xs), &f32s(&w_gate_up), &f32s(&w_down))?)?;
        worst = worst.max(diff);
        println!(
            "replay {step}: 4 launches, 0 host copies, 0 synchronizations in the forward pass; calc_diff {diff:.3e} vs the f32 model (goal < 1e-3), {diff_bf16:.3e} vs the unquantized bf16 weights"
        );
    }
    if worst >= 1e-3 {
        return Err(format!("accuracy goal missed: calc_diff {worst:.3e}").into());
    }
    println!("ok: worst calc_diff {worst:.3e}");
    Ok(())
}
