//! The dense bs entry of the selector (B pre-shuffled straight to registers,
//! [`fp8gemm_device::mainloop_bs`]): [`get_bs_config_for_workspace`] is the generated selector
//! ([`crate::select::plan`]) on pre-shuffled weights. What remains of the hand-fitted bs
//! estimates serves only the m-grouped masked split choice ([`bs_split_estimate`]).

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

/// Workgroups per CU of the bs kernels of [`tile::DENSE_BS_TILES`] (32 / 64 / 128 rows: 3 / 2 /
/// 1, set by their registers; `tests/dense_kernel.rs` checks the data-parallel, split-K and
/// stream-K twins keep them).
pub(super) const BS_SLOTS: [u32; 3] = [3, 2, 1];
/// Modelled time (µs, timing model on MI300X, `--scope full`, launch overhead excluded) per
/// 128-K block of one 32 × 128 bs workgroup when 1, 2 or 3 of them share a CU (the most that fit:
/// 3 waves per SIMD), [`bs_split_estimate`] (fitted).
const BS_SPLIT_BLOCK_US: [f64; 3] = [0.62, 1.07, 1.41];
/// Fixed modelled cost (µs) of the bs split-K hand-off (partial store, release, counter, the
/// reduced tile's store), per round of workgroups, [`bs_split_estimate`] (fitted).
const BS_SPLIT_FIXED_US: f64 = 1.90;
/// Modelled cost (µs) per split of the last arriver's reduction (one 16 KiB partial tile of
/// 32 × 128 FP32 each through its CU's texture path), [`bs_split_estimate`] (fitted).
const BS_SPLIT_PER_SPLIT_US: f64 = 0.45;

/// Estimated time (µs, excluding the launch overhead) of `tiles` bs 32 × 128 tiles over `nkb`
/// 128-K blocks in `splits` splits on `cus` CUs: `rounds · (⌈nkb / splits⌉ · block(sharing) +
/// fixed + per_split · splits)` (the last two only when split), where up to `slots` workgroups
/// share a CU. Its constants are hand-fitted (the m-grouped masked split choice,
/// [`get_grouped_bs_config_for_workspace`], still uses it until the grouped problems move to
/// the generated selector, [`crate::select`]).
pub(super) fn bs_split_estimate(tiles: u32, nkb: u32, splits: u32, cus: u32, slots: u32) -> f64 {
    let slots = u64::from(slots.clamp(1, 3));
    let (splits, cus) = (splits.max(1), u64::from(cus.max(1)));
    let wgs = u64::from(tiles) * u64::from(splits);
    let rounds = wgs.div_ceil(slots * cus) as f64;
    let sharing = wgs.div_ceil(cus).clamp(1, slots) as usize;
    let blocks = f64::from(nkb.div_ceil(splits));
    let extra = if splits > 1 { BS_SPLIT_FIXED_US + BS_SPLIT_PER_SPLIT_US * f64::from(splits) } else { 0.0 };
    rounds * (blocks * BS_SPLIT_BLOCK_US[sharing - 1] + extra)
}
