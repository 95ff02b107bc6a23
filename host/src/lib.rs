//! fp8gemm: DeepGEMM-style FP8 GEMMs for AMD Instinct GPUs, kernels written in Rust.
//!
//! The library is GPU-resident: operands are [views](view) of device memory (the library's
//! [`DeviceBuffer`]s, sub-ranges of them, or raw device pointers an inference engine owns, with
//! row strides for A and D), every entry point takes the [`Stream`] to run on, launches are
//! asynchronous and stream-ordered, [`Event`]s order streams, and the launch paths allocate,
//! free, copy to the host and synchronize nothing — so a sequence of them can be captured into a
//! [`Graph`] and replayed.
//!
//! ```
//! use fp8gemm::fp8::E4M3Fnuz;
//! use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
//! use fp8gemm::{fp8_gemm_nt, ActivationsView, CaptureMode, Context, DeviceWeights, Event, Stream};
//! use half::bf16;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = Context::new()?; // device 0 of the default backend (here: the bundled emulator)
//! let (m, n, k) = (64, 128, 256);
//! let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0).collect();
//! let b: Vec<f32> = (0..n * k).map(|i| ((i * 5 % 11) as f32 - 5.0) / 8.0).collect();
//! let qa = QuantizedActivations::<E4M3Fnuz>::quantize(&a, m, k)?; // 1×128 scales
//! let qb = QuantizedWeights::<E4M3Fnuz>::quantize(&b, n, k)?; // 128×128 scales
//!
//! // Setup (allocates and copies synchronously): weights, and the engine's activation buffers.
//! let weights = DeviceWeights::upload(&ctx, &qb)?;
//! let a_data = ctx.upload(fp8gemm::fp8::as_bits(&qa.data))?;
//! let a_scales = ctx.upload(&qa.scales)?;
//! let mut d = ctx.alloc_zeroed::<bf16>(m * n)?;
//!
//! // The forward pass: a view of the activations, the GEMM on the engine's stream.
//! let compute = Stream::new(&ctx)?;
//! let a_view = ActivationsView::<E4M3Fnuz>::new(a_data.as_slice(), a_scales.as_slice(), m, k)?;
//! fp8_gemm_nt(&compute, a_view.clone(), &weights, &mut d)?; // validated, then queued
//!
//! // Another stream consumes the result after an event, without a host synchronization.
//! let copy = Stream::new(&ctx)?;
//! let done = Event::new(&ctx)?;
//! done.record(&compute)?;
//! copy.wait(&done)?;
//! let mut d_copy = ctx.alloc_zeroed::<bf16>(m * n)?;
//! d_copy.as_slice_mut().copy_from_device(&copy, d.as_slice())?;
//! let got = d_copy.download(&copy)?; // the host round trip, on purpose
//!
//! let mut want = vec![bf16::ZERO; m * n];
//! fp8gemm::reference::fp8_gemm_nt(&qa, &qb, &mut want)?;
//! assert!(fp8gemm::reference::calc_diff(&got, &want)? < 1e-5);
//!
//! // Capture the launch once, replay it (e.g. after writing new activations into `a_data`).
//! compute.begin_capture(CaptureMode::ThreadLocal)?;
//! fp8_gemm_nt(&compute, a_view, &weights, &mut d)?;
//! let graph = compute.end_capture()?.instantiate()?;
//! // SAFETY: every buffer the captured launch uses is still alive.
//! unsafe { graph.launch(&compute)? };
//! compute.synchronize()?;
//! # Ok(())
//! # }
//! ```
//!
//! Modules:
//! * [`runtime`]: a [`Context`] per device (the embedded code object for its architecture,
//!   loaded once; the [`Backend`] is the bundled emulator or `libamdhip64`), [`Stream`],
//!   [`Event`], [`Graph`], typed [`DeviceBuffer`]s;
//! * [`view`]: typed views of device memory, what the entry points take;
//! * [`dense_layouts`]: DeepGEMM's other dense layouts (NN, TN, TT: MN-major operands);
//! * [`layout`]: the weight layouts ([`WeightLayout`]: logical, or pre-shuffled for the kernels
//!   that read B straight into registers) and the conversions between them;
//! * [`workspace`]: the FP32 scratch of the split-K and stream-K kernels (each stream's, kept as
//!   the GEMM layer's per-stream state, or the caller's);
//! * [`fp8`], [`quant`]: FP8 formats and DeepGEMM's quantization recipes (1×128 activation
//!   scales, 128×128 weight scales);
//! * [`quantize`]: the same recipes as GPU kernels, writing the GEMMs' operands on the device;
//! * `reference`: CPU reference GEMMs and DeepGEMM's `calc_diff`;
//! * [`moe`]: the MoE expert layer ([`MoeLayer`]) and its routing kernels;
//! * `config`: `GemmDesc → GemmConfig` per architecture;
//! * [`codeobj`]: the embedded code objects and their resource table;
//! * `checkpoint`: DeepSeek-V3/R1 FP8 checkpoints (safetensors) into MoE / MLP weights.
#![warn(missing_docs)]

/// The README's Rust snippets, compiled and run as doctests (its example checks against the CPU
/// reference, so it needs the `reference` feature).
#[cfg(all(doctest, feature = "reference"))]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

pub mod backend;
#[cfg(feature = "checkpoint")]
pub mod checkpoint;
mod checks;
pub mod codeobj;
/// The kernel selector's internals (rules, cost estimates, tuned tables): public
/// only with the `internals` feature, for this workspace's CLI and tests, with no stability
/// promise. The stable surface is re-exported at the crate root ([`GemmConfig`], [`Overrides`],
/// [`Stream::set_overrides`]).
#[cfg(feature = "internals")]
pub mod config;
// Without `internals` its tuning hooks have no caller.
#[cfg(not(feature = "internals"))]
#[allow(dead_code)]
mod config;
pub mod dense_layouts;
pub mod error;
pub mod fp8;
pub mod gemm;
pub mod grouped;
pub mod kgrouped;
pub mod layout;
#[cfg(feature = "moe")]
pub mod moe;
pub mod quant;
pub mod quantize;
#[cfg(feature = "reference")]
pub mod reference;
pub mod registry;
pub mod runtime;
pub mod select;
pub mod view;
pub mod workspace;

#[cfg(feature = "checkpoint")]
pub use checkpoint::{Checkpoint, DeviceMlpWeights, DeviceMoeWeights, MlpWeights, MoeWeights};
pub use config::{ConfigError, ForcedStreamK, GemmConfig, Overrides, Remap, StreamK, WorkspaceLimit};
pub use dense_layouts::{
    DeviceMnMajorActivations, DeviceMnMajorWeights, Major, MnMajorActivations, MnMajorActivationsView, MnMajorWeights, MnMajorWeightsView, fp8_gemm_nn,
    fp8_gemm_tn, fp8_gemm_tt,
};
pub use error::{Error, Result};
pub use gemm::{DeviceActivations, DeviceWeights, GemmRun, fp8_gemm_nt, fp8_gemm_nt_with_plan, fp8_gemm_nt_with_workspace};
#[cfg(all(feature = "moe", feature = "internals"))]
pub use grouped::m_grouped_fp8_gemm_nt_contiguous_gathered_silu;
pub use grouped::{
    CONTIGUOUS_ALIGNMENTS, DeviceGroupedWeights, m_alignment_for_contiguous_layout, m_grouped_fp8_gemm_nt_contiguous, m_grouped_fp8_gemm_nt_contiguous_aligned,
    m_grouped_fp8_gemm_nt_contiguous_gathered, m_grouped_fp8_gemm_nt_masked, m_grouped_fp8_gemm_nt_masked_with_workspace,
};
pub use kgrouped::{DeviceKGroupedOperand, KGroupedMnMajor, KGroupedOperandView, k_grouped_fp8_gemm_tn_contiguous, upload_ks};
pub use layout::{WeightLayout, preshuffle_weights, preshuffle_weights_on_device, unshuffle_weights};
#[cfg(all(feature = "moe", feature = "reference"))]
pub use moe::moe_reference;
#[cfg(feature = "moe")]
pub use moe::{MoeEpilogues, MoeLayer, MoeLayout, MoeOptions, MoeRun, MoeScratch, MoeStage, MoeStatus, route_reference, route_reference_aligned};
pub use quantize::{quantize_activations, quantize_activations_masked, quantize_weights, silu_mul_quantize_activations, silu_mul_quantize_activations_masked};
pub use runtime::{Backend, CaptureMode, Context, DeviceBuffer, Event, Graph, GraphExec, Stream};
pub use view::{ActivationsView, ActivationsViewMut, DeviceSlice, DeviceSliceMut, GroupedWeightsView, IntoOutput, OutputViewMut, WeightsView, WeightsViewMut};
pub use workspace::{Workspace, workspace_floats, workspace_floats_preshuffled};

/// What the layers above the runtime give every stream [`Stream::new`] creates, run in order
/// (the runtime itself knows no operation, [`Stream`]): the GEMMs' default split-K workspace.
pub(crate) const STREAM_SETUP: &[fn(&mut Stream) -> Result<()>] = &[workspace::attach_default_workspace];
