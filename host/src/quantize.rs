//! Quantization on the device: DeepGEMM's FP8 recipes as GPU kernels (`fp8gemm_device::quant`),
//! bit-identical to the CPU recipes of [`crate::quant`], writing straight into the operand types
//! the GEMM entry points take.
//!
//! | entry point | input (device) | output | CPU twin |
//! |---|---|---|---|
//! | [`quantize_activations`] | `[m, k]` bf16/f16/f32 | [`DeviceActivations`] `m × k`, 1×128 scales | [`QuantizedActivations::quantize`] |
//! | [`quantize_activations_masked`] | `[G, m_max, k]` + `masked_m[G]` | `G·m_max × k`, first `masked_m[g]` rows of each group | the same, per valid row |
//! | [`silu_mul_quantize_activations`] | `[m, 2·i]` (`gate ‖ up`) | `m × i` | [`QuantizedActivations::quantize_silu_mul`] |
//! | [`silu_mul_quantize_activations_masked`] | `[G, m_max, 2·i]` + `masked_m[G]` | `G·m_max × i` | the same, per valid row |
//! | [`quantize_weights`] | `[n, k]` bf16/f16/f32 | [`DeviceWeights`] `n × k`, 128×128 scales | [`QuantizedWeights::quantize`] |
//!
//! The contiguous MoE layout is the dense one over `m_sum` rows: use [`quantize_activations`].
//! Output shapes come from the output operand: `&mut` [`DeviceActivations`] / [`DeviceWeights`]
//! (allocate them with [`DeviceActivations::alloc`] / [`DeviceWeights::alloc`]) or an
//! [`ActivationsViewMut`] / [`WeightsViewMut`] over memory the engine owns; the input must hold
//! exactly the matching number of values.
//!
//! **Requirements** (typed [`Error`]s before launch): the FP8 format of the output is the one
//! the device decodes (E4M3FNUZ on gfx942, E4M3FN on gfx950), every buffer belongs to the
//! stream's context (raw-pointer views of inputs belong to any),
//! `k` (the output's columns) is a multiple of 8 (so the last 1×128 group may be partial, as the
//! CPU recipe allows), and the flattened `G · rows · ⌈k/128⌉` group count fits the 1-D grid.
//!
//! **Masked layout**: `masked_m` stays on the device; each count is clamped to `0..=m_max`
//! there (negative → no row, larger than `m_max` → all rows), exactly as the masked GEMM does.
//! Rows at or past a group's count are neither read nor written (they keep what the output
//! held, and the masked GEMM never reads them).
//!
//! **Non-finite input** cannot be reported by a kernel without a host round trip, so the
//! kernels define the result instead: a scaling group with a NaN or ±∞ (for the fused kernels:
//! a NaN or ±∞ `silu(gate)·up`) gets scale NaN and all of its values become the format's NaN
//! (`0x80` E4M3FNUZ, `0x7F` E4M3FN); other groups are unaffected. The CPU function with the same
//! definition is [`QuantizedActivations::quantize_nan_groups`] /
//! [`QuantizedWeights::quantize_nan_groups`]; the CPU recipes themselves reject such input with
//! a typed error. All-zero groups get the scale `1e-4 / FP8_MAX` and zeros.
//!
//! **Scale range**: the GEMM kernels compute exactly for scales `0 ∪ [2^-24, 2^94)`
//! ([`fp8gemm_device::tile::MIN_SCALE`]); the recipe stays inside it unless a group's `amax`
//! reaches `2^94 · FP8_MAX` (≈ 4.7e30 E4M3FNUZ, 8.7e30 E4M3FN). The device cannot report such a
//! group without a host round trip: its scale is written as computed, and a GEMM that combines
//! it with a large scale on the other side may produce ±∞/NaN in the affected rows.
//!
//! Every entry point takes the [`Stream`] to run on and its inputs as views (a `&DeviceBuffer`,
//! a sub-range, or a raw device pointer the engine owns, see [`crate::view`]); the launch is
//! queued on the stream — asynchronous, no allocation, no host copy, no synchronization — so it
//! can be captured into a graph with the GEMMs it feeds.

use fp8gemm_device::KernelSpec;
use fp8gemm_device::args::{GlobalPtr, QuantActArgs, QuantWeightArgs};
use fp8gemm_device::quant as dq;
use half::bf16;

use crate::checks::{check_format, shape_product};
use crate::error::{Error, Result};
use crate::fp8::Fp8Format;
#[allow(unused_imports)] // doc links
use crate::gemm::{DeviceActivations, DeviceWeights};
#[allow(unused_imports)] // doc links
use crate::quant::{QuantizedActivations, QuantizedWeights};
use crate::runtime::Stream;
use crate::view::{ActivationsViewMut, DeviceSlice, WeightsViewMut};

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
    impl Sealed for f32 {}
}

/// Element types the quantization kernels read: `bf16`, `f16` and `f32` (each converted to
/// `f32` exactly, then quantized by the same recipe).
pub trait QuantInput: bytemuck::Pod + sealed::Sealed {
    /// The kernels' input code (`fp8gemm_device::quant::IN_*`).
    #[doc(hidden)]
    const KERNEL_INPUT: u8;
}
impl QuantInput for bf16 {
    const KERNEL_INPUT: u8 = dq::IN_BF16;
}
impl QuantInput for half::f16 {
    const KERNEL_INPUT: u8 = dq::IN_F16;
}
impl QuantInput for f32 {
    const KERNEL_INPUT: u8 = dq::IN_F32;
}

fn shape_err(arg: &'static str, expected: String, actual: String) -> Error {
    Error::Shape { arg, expected, actual }
}

fn to_u32(arg: &'static str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| shape_err(arg, "a value below 2^32".into(), v.to_string()))
}

fn check_k(k: usize) -> Result<()> {
    if !k.is_multiple_of(dq::K_ALIGN as usize) {
        return Err(shape_err("k", format!("a multiple of {} (the output operand's columns)", dq::K_ALIGN), k.to_string()));
    }
    Ok(())
}

fn check_input_len<X>(x: &DeviceSlice<'_, X>, expected: usize, what: String) -> Result<()>
where
    X: QuantInput,
{
    if x.len() != expected {
        return Err(shape_err("x", format!("{what} = {expected} elements"), format!("{} elements", x.len())));
    }
    Ok(())
}

/// The shared body of the four activation entry points.
fn launch_act<F: Fp8Format, X: QuantInput>(
    stream: &Stream,
    x: DeviceSlice<'_, X>,
    masked_m: Option<DeviceSlice<'_, i32>>,
    silu: bool,
    out: ActivationsViewMut<'_, F>,
) -> Result<()> {
    let x = &x;
    let ctx = stream.context();
    check_format::<F>(ctx, "out")?;
    ctx.check_owner("x", x.owner())?;
    let (m, k) = (out.m(), out.k());
    ctx.check_owner("out", out.data.owner())?;
    ctx.check_owner("out", out.scales.owner())?;
    let width = if silu { shape_product("k", &[2, k], "2 · k")? } else { k };
    let (groups, rows) = match masked_m {
        None => (1, m),
        Some(mm) => {
            ctx.check_owner("masked_m", mm.owner())?;
            let g = mm.len();
            if g == 0 {
                if m != 0 {
                    return Err(shape_err("out", "0 rows (masked_m is empty: G = 0)".into(), format!("{m} rows")));
                }
                return check_input_len(x, 0, "G · m_max · k with G = 0".into());
            }
            if !m.is_multiple_of(g) {
                return Err(shape_err("out", format!("G · m_max rows with G = {g} (masked_m's length)"), format!("{m} rows")));
            }
            (g, m / g)
        }
    };
    let what = if silu { format!("rows · 2k = {m} · {width}") } else { format!("rows · k = {m} · {k}") };
    check_input_len(x, shape_product("x", &[m, width], "rows · width")?, what)?;
    check_k(k)?;
    if m == 0 || k == 0 {
        return Ok(());
    }
    let (rows32, k32, g32) = (to_u32("m", rows)?, to_u32("k", k)?, to_u32("masked_m", groups)?);
    let units = (groups as u64) * (rows as u64) * (k.div_ceil(128) as u64);
    if units > u64::from(u32::MAX - dq::ACT_GROUPS_PER_WG) {
        return Err(Error::Unsupported(format!("{units} 1×128 groups: at most {} per launch", u32::MAX - dq::ACT_GROUPS_PER_WG)));
    }
    let grid = (units as u32).div_ceil(dq::ACT_GROUPS_PER_WG);
    let spec: KernelSpec<QuantActArgs> = match (X::KERNEL_INPUT, masked_m.is_some(), silu) {
        (dq::IN_BF16, false, false) => dq::QUANTIZE_ACT_BF16,
        (dq::IN_BF16, true, false) => dq::QUANTIZE_ACT_MASKED_BF16,
        (dq::IN_BF16, false, true) => dq::QUANTIZE_ACT_SILU_MUL_BF16,
        (dq::IN_BF16, true, true) => dq::QUANTIZE_ACT_SILU_MUL_MASKED_BF16,
        (dq::IN_F16, false, false) => dq::QUANTIZE_ACT_F16,
        (dq::IN_F16, true, false) => dq::QUANTIZE_ACT_MASKED_F16,
        (dq::IN_F16, false, true) => dq::QUANTIZE_ACT_SILU_MUL_F16,
        (dq::IN_F16, true, true) => dq::QUANTIZE_ACT_SILU_MUL_MASKED_F16,
        (_, false, false) => dq::QUANTIZE_ACT_F32,
        (_, true, false) => dq::QUANTIZE_ACT_MASKED_F32,
        (_, false, true) => dq::QUANTIZE_ACT_SILU_MUL_F32,
        (_, true, true) => dq::QUANTIZE_ACT_SILU_MUL_MASKED_F32,
    };
    let args = QuantActArgs {
        x: GlobalPtr::new(x.device_ptr().addr()),
        q: out.data.device_ptr(),
        sf: out.scales.device_ptr(),
        masked_m: masked_m.map_or(GlobalPtr::new(0), |mm| mm.device_ptr()),
        rows: rows32,
        k: k32,
        groups: g32,
        fp8_max: F::MAX,
    };
    // SAFETY: every pointer addresses memory the views / the output operand keep alive (owners
    // checked; raw input views by their constructor's contract) of at least the length the
    // kernel contract requires: x `G·rows × k` (or `× 2k`) elements, q
    // `G·rows × k` bytes and sf `G·rows × ⌈k/128⌉` f32 (the output operand's own lengths, fixed
    // by its constructor), masked_m `G` i32; k % 8 == 0; hipMalloc'd buffers are 256-byte
    // aligned; the output is borrowed mutably for the call and x/masked_m are only read.
    unsafe { stream.launch(spec, [grid, 1, 1], 0, &args) }
}

/// Quantizes `[m, k]` activations on the device into `out` (`m × k`, 1×128 scales) with
/// DeepGEMM's per-token recipe, bit-identical to [`QuantizedActivations::quantize`] (see the
/// [module docs](self) for requirements and non-finite input). Also the contiguous MoE layout
/// (`m = m_sum`).
pub fn quantize_activations<'a, F: Fp8Format, X: QuantInput>(
    stream: &Stream,
    x: impl Into<DeviceSlice<'a, X>>,
    out: impl Into<ActivationsViewMut<'a, F>>,
) -> Result<()> {
    launch_act(stream, x.into(), None, false, out.into())
}

/// Quantizes the masked layout: `x` is `[G, m_max, k]` with `G = masked_m.len()` and
/// `out.m() = G · m_max`; only the first `clamp(masked_m[g], 0, m_max)` rows of each group are
/// read and written (`masked_m` is read on the device).
pub fn quantize_activations_masked<'a, F: Fp8Format, X: QuantInput>(
    stream: &Stream,
    x: impl Into<DeviceSlice<'a, X>>,
    masked_m: impl Into<DeviceSlice<'a, i32>>,
    out: impl Into<ActivationsViewMut<'a, F>>,
) -> Result<()> {
    launch_act(stream, x.into(), Some(masked_m.into()), false, out.into())
}

/// The fused MoE/MLP down-projection input: `x` is `[m, 2·i]` (gate = first `i` columns, up =
/// last `i`), `out` is `m × i`; computes [`crate::quant::silu_mul`] per element in `f32` and
/// quantizes the result per token, bit-identical to [`QuantizedActivations::quantize_silu_mul`].
pub fn silu_mul_quantize_activations<'a, F: Fp8Format, X: QuantInput>(
    stream: &Stream,
    x: impl Into<DeviceSlice<'a, X>>,
    out: impl Into<ActivationsViewMut<'a, F>>,
) -> Result<()> {
    launch_act(stream, x.into(), None, true, out.into())
}

/// [`silu_mul_quantize_activations`] in the masked layout: `x` is `[G, m_max, 2·i]`, `out` is
/// `G · m_max × i`, only the first `clamp(masked_m[g], 0, m_max)` rows of each group.
pub fn silu_mul_quantize_activations_masked<'a, F: Fp8Format, X: QuantInput>(
    stream: &Stream,
    x: impl Into<DeviceSlice<'a, X>>,
    masked_m: impl Into<DeviceSlice<'a, i32>>,
    out: impl Into<ActivationsViewMut<'a, F>>,
) -> Result<()> {
    launch_act(stream, x.into(), Some(masked_m.into()), true, out.into())
}

/// Quantizes `[n, k]` weights on the device into `out` (`n × k`, 128×128 block scales),
/// bit-identical to [`QuantizedWeights::quantize`] (non-finite blocks: see the
/// [module docs](self)). `out` must be in the logical [layout](crate::layout) ([`Error::Layout`]
/// otherwise); [`crate::layout::preshuffle_weights_on_device`] converts the result.
pub fn quantize_weights<'a, F: Fp8Format, X: QuantInput>(
    stream: &Stream,
    x: impl Into<DeviceSlice<'a, X>>,
    out: impl Into<WeightsViewMut<'a, F>>,
) -> Result<()> {
    let x = &x.into();
    let out = out.into();
    let ctx = stream.context();
    check_format::<F>(ctx, "out")?;
    ctx.check_owner("x", x.owner())?;
    if out.layout() != crate::layout::WeightLayout::Logical {
        return Err(Error::Layout {
            arg: "out",
            expected: crate::layout::WeightLayout::Logical,
            actual: out.layout(),
            reason: "quantize_weights writes logical weights; pre-shuffle them afterwards with layout::preshuffle_weights_on_device",
        });
    }
    let (n, k) = (out.n(), out.k());
    check_input_len(x, shape_product("x", &[n, k], "n · k")?, format!("n · k = {n} · {k}"))?;
    check_k(k)?;
    if n == 0 || k == 0 {
        return Ok(());
    }
    let (n32, k32) = (to_u32("n", n)?, to_u32("k", k)?);
    let blocks = (n.div_ceil(128) as u64) * (k.div_ceil(128) as u64);
    let grid = u32::try_from(blocks).map_err(|_| Error::Unsupported(format!("{blocks} 128×128 blocks: at most 2^32 − 1 per launch")))?;
    let spec = match X::KERNEL_INPUT {
        dq::IN_BF16 => dq::QUANTIZE_WEIGHT_BF16,
        dq::IN_F16 => dq::QUANTIZE_WEIGHT_F16,
        _ => dq::QUANTIZE_WEIGHT_F32,
    };
    ctx.check_owner("out", out.data.owner())?;
    ctx.check_owner("out", out.scales.owner())?;
    let args = QuantWeightArgs {
        x: GlobalPtr::new(x.device_ptr().addr()),
        q: out.data.device_ptr(),
        sf: out.scales.device_ptr(),
        n: n32,
        k: k32,
        fp8_max: F::MAX,
        reserved: 0,
    };
    // SAFETY: as in `launch_act`: x holds n·k elements, q n·k bytes, sf ⌈n/128⌉·⌈k/128⌉ f32,
    // all kept alive by their views / owners; k % 8 == 0; out is borrowed mutably.
    unsafe { stream.launch(spec, [grid, 1, 1], 0, &args) }
}
