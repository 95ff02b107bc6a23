//! fp8gemm: DeepGEMM-style FP8 GEMMs for AMD Instinct GPUs, kernels written in Rust.
//!
//! * [`runtime`]: a [`Context`] per device (the embedded code object for its architecture,
//!   loaded once) and typed [`DeviceBuffer`]s;
//! * [`fp8`], [`quant`]: FP8 formats and DeepGEMM's quantization recipes (1×128 activation
//!   scales, 128×128 weight scales);
//! * [`reference`](mod@reference): CPU reference GEMMs and DeepGEMM's `calc_diff`;
//! * [`config`]: `GemmDesc → GemmConfig` per architecture;
//! * [`codeobj`]: the embedded code objects and their resource table.
#![warn(missing_docs)]

pub mod backend;
pub mod codeobj;
pub mod config;
pub mod error;
pub mod fp8;
pub mod gemm;
pub mod grouped;
pub mod quant;
pub mod reference;
pub mod runtime;
pub mod view;

pub use error::{Error, Result};
pub use gemm::{fp8_gemm_nt, DeviceActivations, DeviceWeights, GemmRun};
pub use grouped::{
    m_alignment_for_contiguous_layout, m_grouped_fp8_gemm_nt_contiguous, m_grouped_fp8_gemm_nt_masked, DeviceGroupedWeights,
};
pub use runtime::{Backend, CaptureMode, Context, DeviceBuffer, Event, Graph, GraphExec, Stream};
pub use view::{ActivationsView, DeviceSlice, DeviceSliceMut, GroupedWeightsView, IntoOutput, OutputViewMut, WeightsView};
