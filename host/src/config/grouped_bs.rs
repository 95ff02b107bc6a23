//! The m-grouped bs choice (contiguous and masked, B pre-shuffled straight to registers,
//! [`fp8gemm_device::grouped`] and [`fp8gemm_device::grouped_pipe`] on
//! [`fp8gemm_device::mainloop_bs`]): [`get_grouped_bs_config_for_workspace`] is the generated
//! selector's grouped planner ([`crate::select::plan_grouped`]) on pre-shuffled weights, and the
//! kernel specs of its choices.

use super::*;

/// Chooses the m-grouped bs kernel of a contiguous or masked problem under `overrides`, as
/// [`get_grouped_bs_config_for_workspace`] with unlimited workspace.
pub fn get_grouped_bs_config(desc: &GemmDesc, overrides: &Overrides) -> Result<GemmConfig, ConfigError> {
    get_grouped_bs_config_for_workspace(desc, overrides, u64::MAX).map(|(c, _)| c)
}

/// Chooses the m-grouped bs kernel of a contiguous or masked problem when the launch has
/// `available` FP32 elements of workspace: [`crate::select::plan_grouped`] over the registered
/// kernels that read pre-shuffled weights — the 32-, 64- and 128-row tiles on the two-phase
/// loop, the 64-row tile on the pipelined loop, and for the masked layout the pipelined 80-row
/// and narrow 32 × 64 tiles and **split-K** (`m_grouped_fp8_gemm_nt_masked_splitk_bs_*`, 32 and
/// 64 rows; contiguous launches never split here) — ranked by the generated cost model with the
/// coefficients of the dense bs kernels of the same loops, over the working tiles the layout
/// implies (contiguous: without the expected all-padding tiles; masked: `expected_m` rows per
/// group). Masked split counts are chosen while the working tiles' pieces fit one round of the
/// device; a preferred split whose workspace (every tile of the grid: any group may hold
/// `m_max` rows) does not fit `available` is replaced by the best plan that fits and reported
/// as a [`WorkspaceLimit`].
///
/// Overrides: [`Overrides::tile`] forces the tile (unsplit unless a split is forced too; the
/// 64-row tile then runs on the loop the model prefers, [`Overrides::bs_pipelined`] pins it),
/// [`Overrides::split`] the split count (`≤ min(k/128, MAX_SPLITS)`, a 32- or 64-row masked
/// tile, never reduced for lack of workspace; other than 1 for contiguous is a
/// [`ConfigError::ForcedSplit`]); a forced stream-K schedule is a [`ConfigError::ForcedStreamK`].
pub fn get_grouped_bs_config_for_workspace(
    desc: &GemmDesc,
    overrides: &Overrides,
    available: u64,
) -> Result<(GemmConfig, Option<WorkspaceLimit>), ConfigError> {
    validate(desc)?;
    if desc.kind == GemmKind::Dense {
        return Err(ConfigError::NoKernel { kind: desc.kind, arch: desc.arch });
    }
    let (plan, limit) = crate::select::plan_grouped(desc, WeightLayout::Preshuffled, overrides, available)?;
    let config = plan.config(desc.arch);
    report_choice(desc, &config, &plan.label(), plan.estimate_s, limit.as_ref());
    Ok((config, limit))
}

/// The launch spec of an m-grouped contiguous bs config's kernel (B pre-shuffled).
pub fn contiguous_bs_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<MGroupedContiguousArgs>> {
    spec_named(
        [
            M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM32_BN128,
            M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM64_BN128,
            M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_BM128_BN128,
            M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_PIPE_BM64_BN128,
        ],
        config,
    )
}

/// The launch spec of an m-grouped masked bs config's kernel (B pre-shuffled).
pub fn masked_bs_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<MGroupedMaskedArgs>> {
    spec_named(
        [
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM32_BN128,
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM64_BN128,
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_BM128_BN128,
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM32_BN64,
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM64_BN128,
            M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM80_BN128,
        ],
        config,
    )
}

/// The launch spec of an m-grouped masked bs split-K config's kernel (B pre-shuffled).
pub fn masked_splitk_bs_kernel_spec(config: &GemmConfig) -> Option<KernelSpec<MGroupedMaskedSplitKArgs>> {
    spec_named([M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM32_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_SPLITK_BS_BM64_BN128], config)
}
