//! The library's error type: every failure names what was wrong and what was expected.

use crate::codeobj::Arch;

/// Everything the fp8gemm API can report. New variants may be added in minor releases.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// A kernel fault poisoned the device (HIP's sticky error: a memory fault, memcheck violation,
    /// trap, illegal instruction, checker finding or watchdog timeout while a kernel ran). The
    /// call that observes it fails with this error, and so does every later call of the same
    /// [`Context`](crate::Context): the device has to be reset (HIP's `hipDeviceReset`, which
    /// invalidates everything on it) before it can be used again.
    #[error("device fault: HIP {call} failed with {name} (code {code}); the device is unusable until it is reset: {finding}")]
    DeviceFault {
        /// The HIP call that reported the fault first on this context.
        call: &'static str,
        /// The sticky `hipError_t` (`hipErrorIllegalAddress`, `hipErrorLaunchFailure`, ...).
        code: u32,
        /// The error's name.
        name: String,
        /// What faulted: on the emulator the finding (kernel, check, pc, workgroup, wave, lane,
        /// address); on ROCm, HIP's description of the code.
        finding: String,
    },
    /// No HIP device is present (`hipErrorNoDevice`, or a device count of 0).
    #[error("no HIP device found")]
    NoDevice,
    /// The HIP runtime is older than the one the `rocm` backend's bindings need.
    #[error("the HIP runtime is version {found}; fp8gemm's `rocm` backend needs HIP {required} or newer (ROCm 6.3+)")]
    HipVersion {
        /// The version `hipRuntimeGetVersion` reported (`major.minor.patch`).
        found: String,
        /// The oldest supported version.
        required: String,
    },
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
    /// Weights in a layout the operation cannot take (see [`crate::layout`]): e.g. pre-shuffled
    /// weights given to an entry point that has no kernel reading them yet. Checked before
    /// anything is launched; weights are never read in the wrong layout.
    #[error("argument `{arg}`: expected weights in the {expected} layout, got the {actual} layout ({reason})")]
    Layout {
        /// Argument name.
        arg: &'static str,
        /// The layout the operation takes.
        expected: crate::layout::WeightLayout,
        /// The layout of the argument.
        actual: crate::layout::WeightLayout,
        /// Why (which operation, what it reads).
        reason: &'static str,
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
    /// A checkpoint file could not be opened, memory-mapped or read.
    #[error("checkpoint file `{}`: {source}", .path.display())]
    CheckpointIo {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A checkpoint file is not a valid safetensors file, or its shard index
    /// (`model.safetensors.index.json`) is malformed.
    #[error("checkpoint file `{}`: {detail}", .path.display())]
    CheckpointParse {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// A tensor the loader needs is not in the checkpoint.
    #[error("tensor `{tensor}` is missing from checkpoint `{}`", .path.display())]
    MissingTensor {
        /// The tensor's name.
        tensor: String,
        /// The checkpoint (its directory, index or file; the shard when the index names one that lacks it).
        path: std::path::PathBuf,
    },
    /// A checkpoint tensor has the wrong element type.
    #[error("tensor `{tensor}`: expected dtype {expected}, got {actual}")]
    TensorDtype {
        /// The tensor's name.
        tensor: String,
        /// The dtype the loader requires (`F8_E4M3`, `F32`).
        expected: &'static str,
        /// The dtype in the file.
        actual: String,
    },
    /// A checkpoint tensor has the wrong shape (rank, or a dimension that disagrees with the
    /// layer's other tensors).
    #[error("tensor `{tensor}`: expected shape {expected}, got {actual:?}")]
    TensorShape {
        /// The tensor's name.
        tensor: String,
        /// The shape the loader requires, with the reason.
        expected: String,
        /// The shape in the file.
        actual: Vec<usize>,
    },
    /// A `weight_scale_inv` tensor whose grid is not `[⌈N/128⌉, ⌈K/128⌉]` for its `[N, K]` weight.
    #[error("tensor `{tensor}`: expected a [{}, {}] scale grid (⌈N/128⌉ × ⌈K/128⌉ for the [{}, {}] weight), got {actual:?}", .expected[0], .expected[1], .weight[0], .weight[1])]
    ScaleGrid {
        /// The scale tensor's name.
        tensor: String,
        /// `[⌈N/128⌉, ⌈K/128⌉]`.
        expected: [usize; 2],
        /// The weight's `[N, K]`.
        weight: [usize; 2],
        /// The scale tensor's shape in the file.
        actual: Vec<usize>,
    },
    /// An FP8 weight holds an E4M3FN NaN byte (`0x7F`/`0xFF`): the checkpoint is corrupt.
    #[error("tensor `{tensor}`: element [{}, {}] is the E4M3FN NaN byte {bits:#04x}, expected a finite FP8 value", .index[0], .index[1])]
    Fp8Nan {
        /// The weight tensor's name.
        tensor: String,
        /// `[row, column]` of the element.
        index: [usize; 2],
        /// The byte.
        bits: u8,
    },
    /// A checkpoint block scale that, converted for the device's FP8 format, falls outside the
    /// GEMM kernels' supported range (0 or a finite magnitude in `[2^-24, 2^94)`).
    #[error("tensor `{tensor}`: scale [{}, {}] = {value:e} is {converted:e} for {format}, expected 0 or a magnitude in [2^-24, 2^94) (the GEMM kernels' supported scale range)", .index[0], .index[1])]
    CheckpointScale {
        /// The scale tensor's name.
        tensor: String,
        /// `[block row, block column]` of the scale.
        index: [usize; 2],
        /// The value in the file.
        value: f32,
        /// The value after conversion to `format` (doubled for E4M3FNUZ).
        converted: f32,
        /// The device FP8 format the weights were converted to.
        format: &'static str,
    },
    /// A problem size the kernels do not support.
    #[error("unsupported problem: {0}")]
    Unsupported(String),
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
