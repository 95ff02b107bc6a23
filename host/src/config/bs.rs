//! The dense bs entry of the selector (B pre-shuffled straight to registers,
//! [`fp8gemm_device::mainloop_bs`]): [`get_bs_config_for_workspace`] is the generated selector
//! ([`crate::select::plan`]) on pre-shuffled weights.

use super::*;

/// Chooses the bs kernel (B pre-shuffled straight to registers, [`fp8gemm_device::mainloop_bs`])
/// of a dense problem under `overrides`, as [`get_bs_config_for_workspace`] with unlimited
/// workspace.
pub fn get_bs_config(desc: &GemmDesc, overrides: &Overrides) -> Result<GemmConfig, ConfigError> {
    get_bs_config_for_workspace(desc, overrides, u64::MAX).map(|(c, _)| c)
}

/// Chooses the bs kernel of a dense problem when the launch has `available` FP32 elements of
/// workspace: the generated selector ([`crate::select::plan`]) over the registered kernels that
/// read pre-shuffled weights, with the caller's `overrides` (the launching stream's,
/// [`crate::Stream::overrides`]). A plan the model prefers whose workspace does not fit is
/// reported as the [`WorkspaceLimit`].
pub fn get_bs_config_for_workspace(desc: &GemmDesc, overrides: &Overrides, available: u64) -> Result<(GemmConfig, Option<WorkspaceLimit>), ConfigError> {
    validate(desc)?;
    if desc.kind != GemmKind::Dense {
        return Err(ConfigError::NoKernel { kind: desc.kind, arch: desc.arch });
    }
    let (plan, limit) = crate::select::plan(desc, crate::layout::WeightLayout::Preshuffled, overrides, available)?;
    Ok((plan.config(desc.arch), limit))
}
