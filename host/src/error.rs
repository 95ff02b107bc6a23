//! The library's error type: every failure names what was wrong and what was expected.

use crate::codeobj::Arch;

/// Everything the fp8gemm API can report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A HIP runtime call failed. `detail` carries the emulator's full fault report (kernel, pc,
    /// lane, address) when the failing call was a kernel launch on the emulator.
    #[error("HIP {call} failed: {name} (code {code}){}", .detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    Hip {
        /// The HIP operation.
        call: &'static str,
        /// The `hipError_t` value.
        code: u32,
        /// The error's name (`hipErrorInvalidValue`, ...).
        name: String,
        /// Further detail (the emulator's launch report), if any.
        detail: Option<String>,
    },
    /// No HIP device is present.
    #[error("no HIP device found")]
    NoDevice,
    /// The device's architecture has no embedded code object.
    #[error("unsupported GPU architecture `{found}`; fp8gemm ships code objects for gfx942 and gfx950")]
    UnsupportedArch {
        /// The device's `gcnArchName`.
        found: String,
    },
    /// The embedded code object lacks a kernel the API needs (a build problem).
    #[error("kernel `{kernel}` is missing from the embedded {arch} code object")]
    MissingKernel {
        /// Kernel symbol.
        kernel: &'static str,
        /// Architecture.
        arch: Arch,
    },
    /// An argument's shape or length is wrong.
    #[error("argument `{arg}`: expected {expected}, got {actual}")]
    Shape {
        /// Argument name.
        arg: &'static str,
        /// What was expected (e.g. "a multiple of 128", "[4096, 56] scales").
        expected: String,
        /// What was passed.
        actual: String,
    },
    /// An argument's FP8 format does not match the device's architecture.
    #[error("argument `{arg}`: {arch} reads FP8 as {expected}, but the tensor holds {actual}")]
    Format {
        /// Argument name.
        arg: &'static str,
        /// Device architecture.
        arch: Arch,
        /// The format the architecture's MFMA decodes.
        expected: &'static str,
        /// The tensor's format.
        actual: &'static str,
    },
    /// A buffer belongs to another context.
    #[error("argument `{arg}` was allocated by another fp8gemm context")]
    ForeignBuffer {
        /// Argument name.
        arg: &'static str,
    },
    /// The operation cannot run on a stream that is capturing (it would copy from or to host
    /// memory the graph cannot keep, or synchronize).
    #[error("{op} is not possible on a capturing stream")]
    Capturing {
        /// What was attempted.
        op: &'static str,
    },
    /// No HIP backend was compiled in (enable the `emu` or `rocm` feature).
    #[error("no HIP backend: build fp8gemm with feature `emu` (the bundled emulator) or `rocm` (libamdhip64)")]
    NoBackend,
    /// The requested backend was not compiled in.
    #[error("the {backend} backend is not compiled in (enable its crate feature)")]
    BackendNotBuilt {
        /// The backend asked for.
        backend: crate::backend::Backend,
    },
    /// Host-side quantization rejected its input.
    #[error(transparent)]
    Quant(#[from] crate::quant::QuantError),
    /// A block scale outside the range the GEMM kernels compute exactly
    /// (`fp8gemm_device::tile::MIN_SCALE`: 0 or `2^-24 ≤ |s| < 2^94`, finite).
    #[error("argument `{arg}`: scale [{index}] = {value:e}, expected 0 or a magnitude in [2^-24, 2^94) (the GEMM kernels' supported scale range)")]
    ScaleRange {
        /// Argument name.
        arg: &'static str,
        /// Flat index of the scale.
        index: usize,
        /// The value.
        value: f32,
    },
    /// The workspace of a launch that splits K is too small for its configuration (see
    /// [`crate::workspace`]).
    #[error("argument `{arg}`: expected a workspace of at least {needed} f32 for this GEMM's configuration, got {available}")]
    Workspace {
        /// Which workspace (`workspace`, or the stream's).
        arg: &'static str,
        /// FP32 elements the configuration needs.
        needed: u64,
        /// FP32 elements available.
        available: u64,
    },
    /// A problem size the kernels do not support.
    #[error("unsupported problem: {0}")]
    Unsupported(String),
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
