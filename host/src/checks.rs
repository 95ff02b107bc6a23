//! Argument checks shared by every operation module (dense GEMMs and their other layouts, the
//! m- and k-grouped GEMMs, the MoE layer, quantization, weight layouts, checkpoints), in one
//! place: buffer lengths against shapes ([`check_len`], with lengths from shapes by checked
//! arithmetic, [`shape_product`]), scale ranges ([`check_scales`]), the FP8 format a device
//! decodes ([`check_format`]), the kernels' 32-bit buffer offsets ([`check_tensor_bytes`]), the
//! kernels' N and K ([`check_nk`]), and the operands of a dense launch ([`dense_operands`]).
//! Each failure is a typed [`Error`] naming the argument and what was expected; nothing here
//! panics.

use fp8gemm_device::tile;

use crate::error::{Error, Result};
use crate::fp8::Fp8Format;
use crate::gemm::fp8_format_name;
use crate::runtime::Context;
use crate::view::{IntoOutput, OutputViewMut};

/// Checks that a host operand's buffers have the lengths its shape implies (the fields of the
/// quantized structs are public, so they can disagree).
pub(crate) fn check_len(arg: &'static str, what: &str, len: usize, expected: usize, shape: &str) -> Result<()> {
    if len != expected {
        return Err(Error::Shape { arg, expected: format!("{what} of {expected} elements for {shape}"), actual: format!("{len} elements") });
    }
    Ok(())
}

/// Checks that a device operand holds the count of elements its role implies: `what` describes
/// the expected count (e.g. ``m_sum = 256 (rows of a)``), [`Error::Shape`] naming `arg` otherwise.
pub(crate) fn check_count(arg: &'static str, what: &str, expected: usize, actual: usize) -> Result<()> {
    if expected != actual {
        return Err(Error::Shape { arg, expected: format!("{what} = {expected} elements"), actual: format!("{actual} elements") });
    }
    Ok(())
}

/// Rejects scales outside the GEMM kernels' supported range ([`tile::scale_supported`]).
pub(crate) fn check_scales(arg: &'static str, scales: &[f32]) -> Result<()> {
    match scales.iter().position(|&s| !tile::scale_supported(s)) {
        None => Ok(()),
        Some(index) => Err(Error::ScaleRange { arg, index, value: scales[index] }),
    }
}

/// `a · b` for a length derived from a shape, or a typed error naming `arg` and the shape.
pub(crate) fn shape_product(arg: &'static str, dims: &[usize], what: &str) -> Result<usize> {
    dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or_else(|| Error::Shape {
        arg,
        expected: format!("{what} that fits in usize"),
        actual: format!("{} (overflows)", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(" · ")),
    })
}

/// Checks that `F` is the FP8 format `ctx`'s architecture decodes ([`fp8_format_name`]):
/// [`Error::Format`] naming `arg` otherwise.
pub(crate) fn check_format<F: Fp8Format>(ctx: &Context, arg: &'static str) -> Result<()> {
    let expected = fp8_format_name(ctx.arch());
    if F::NAME != expected {
        return Err(Error::Format { arg, arch: ctx.arch(), expected, actual: F::NAME });
    }
    Ok(())
}

/// Checks that a tensor of `bytes` bytes is addressable with the kernels' 32-bit buffer offsets
/// (below [`tile::MAX_TENSOR_BYTES`]): [`Error::Shape`] naming `arg` otherwise.
pub(crate) fn check_tensor_bytes(arg: &'static str, bytes: u64) -> Result<()> {
    if bytes >= tile::MAX_TENSOR_BYTES {
        return Err(Error::Shape {
            arg,
            expected: format!("fewer than {} bytes (32-bit buffer offsets)", tile::MAX_TENSOR_BYTES),
            actual: format!("{bytes} bytes"),
        });
    }
    Ok(())
}

/// Checks the K and N limits of the FP8 kernels.
pub(crate) fn check_nk(n: usize, k: usize) -> Result<()> {
    if k == 0 || !k.is_multiple_of(tile::K_ALIGN as usize) {
        return Err(Error::Shape { arg: "k", expected: format!("a positive multiple of {}", tile::K_ALIGN), actual: k.to_string() });
    }
    if !n.is_multiple_of(tile::N_ALIGN as usize) {
        return Err(Error::Shape { arg: "n", expected: format!("a multiple of {}", tile::N_ALIGN), actual: n.to_string() });
    }
    if n > u32::MAX as usize || k > u32::MAX as usize {
        return Err(Error::Unsupported(format!("n = {n}, k = {k}: dimensions must fit in 32 bits")));
    }
    Ok(())
}

/// Checks the operands of an `m × n × k` dense GEMM on `ctx`: every buffer in `owners` (name,
/// owner) belongs to `ctx`, B's K (`b_k`) is `k`, `d` is an `m × n` output of `ctx`, `n` and `k`
/// are ones the kernels accept, `m` fits in 32 bits. Returns the output view, or `None` for an
/// empty problem (`m` or `n` zero: nothing to launch).
pub(crate) fn dense_operands<'a>(
    ctx: &Context,
    owners: &[(&'static str, Option<u64>)],
    (m, n, k): (usize, usize, usize),
    b_k: usize,
    d: impl IntoOutput<'a>,
) -> Result<Option<OutputViewMut<'a>>> {
    for &(arg, owner) in owners {
        ctx.check_owner(arg, owner)?;
    }
    if b_k != k {
        return Err(Error::Shape { arg: "b", expected: format!("k = {k} columns (as a)"), actual: format!("{b_k} columns") });
    }
    let d = d.into_output(m, n)?;
    ctx.check_owner("d", d.data.owner())?;
    if m == 0 || n == 0 {
        return Ok(None);
    }
    check_nk(n, k)?;
    if m > u32::MAX as usize {
        return Err(Error::Unsupported(format!("m = {m}: dimensions must fit in 32 bits")));
    }
    Ok(Some(d))
}
