//! Argument checks shared by the entry points: what every dense launch (`fp8_gemm_nt` and the
//! NN / TN / TT layouts) checks before it chooses a kernel, in one place. Each failure is a
//! typed [`Error`] naming the argument and what was expected.

use crate::error::{Error, Result};
use crate::runtime::Context;
use crate::view::{IntoOutput, OutputViewMut};

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
    crate::gemm::check_nk(n, k)?;
    if m > u32::MAX as usize {
        return Err(Error::Unsupported(format!("m = {m}: dimensions must fit in 32 bits")));
    }
    Ok(Some(d))
}
