//! DeepGEMM's two MoE entry points: m-grouped FP8 GEMMs over `G` experts' weights `B[G, n, k]`.
//!
//! * [`m_grouped_fp8_gemm_nt_contiguous`] (prefill/training): the rows of all experts stacked in
//!   one `A[m_sum, k]`, each expert's rows contiguous and padded to
//!   [`m_alignment_for_contiguous_layout`] rows; `m_indices[m_sum]` (on the device) names each
//!   row's expert, −1 for padding. [`m_grouped_fp8_gemm_nt_contiguous_aligned`] takes groups
//!   padded to 32 or 64 rows instead (the MoE layer's layout: each active expert padded only
//!   to the tile height), and cuts problems whose A or D would pass 2 GiB into row chunks.
//! * [`m_grouped_fp8_gemm_nt_masked`] (decode, CUDA-graph friendly): `A[G, m_max, k]`, of which
//!   only the first `masked_m[g]` rows of each group are valid; `masked_m[G]` lives on the device
//!   and is never read by the host; `expected_m` is a host-side hint for the kernel choice.
//!
//! Both compute `D[i, j] = bf16(Σ_kb SFA[i,kb] · SFB[g][⌊j/128⌋,kb] · Σ_{k∈kb} A[i,k] · B[g][j,k])`
//! for the rows they cover, with the dense kernels' main loop (same accuracy) — or, for weights
//! in the pre-shuffled [layout](crate::layout), with the "bs" main loop
//! ([`fp8gemm_device::mainloop_bs`]: B straight from global memory into registers; the kernels
//! `m_grouped_fp8_gemm_nt_{contiguous,masked}_bs_*`, chosen by
//! `crate::config::get_grouped_bs_config`). The layout travels with the weights' view.
//!
//! Device layouts (row-major, no padding): `A` and SFA as [`ActivationsView`] (`m = m_sum`, or
//! `m = G · m_max` with group `g`'s rows at `g·m_max ..`), `B` `[G, n, k]` FP8 and SFB
//! `[G, ⌈n/128⌉, ⌈k/128⌉]` f32 ([`GroupedWeightsView`], or the owned [`DeviceGroupedWeights`]),
//! `D` `[m_sum, n]` or `[G, m_max, n]` bf16.
//!
//! # Which rows of D are written
//!
//! * Contiguous: exactly the rows whose `m_indices` entry is a valid group (`0..G`), when the
//!   layout is valid (see [`validate_m_indices`]). The −1 padding rows at the end of a group's
//!   last aligned block (DeepGEMM's "mixed" blocks) are computed by the kernel with that group's
//!   weights but **not stored**: like all-padding blocks (which do no work at all), they keep
//!   whatever D held. This matches `crate::reference::m_grouped_fp8_gemm_nt_contiguous`.
//! * Masked: rows `0..min(masked_m[g], m_max)` of each group; the rest keep what D held.
//!
//! # Validation: what is checked where
//!
//! Everything the host knows is checked before launch (typed [`Error`]s): formats, buffer
//! owners, group counts and `k` of A/B/D, lengths of `m_indices` (`m_sum`) and `masked_m` (`G`),
//! `m_sum` a multiple of the alignment, the kernels' `n`/`k` rules and 31-bit tensor extents.
//!
//! The *contents* of `m_indices` and `masked_m` live on the device; reading them back would cost
//! a synchronizing copy, so the entry points do not. Instead:
//! * [`upload_m_indices`] is the cheap place to validate `m_indices` — it checks the host slice
//!   ([`validate_m_indices`]) while uploading it anyway. Indices produced on the device (by a
//!   routing kernel) are not checked.
//! * The kernels never read or write out of bounds for any contents. Contiguous: a `BM`-row
//!   block takes the group of its first row; a group outside `0..G` skips the block (no loads, no stores);
//!   a row is stored only when its own entry equals its block's group, and the weight resources
//!   cover only that group's slice. Masked: `masked_m[g]` is clamped to `0..=m_max` on the
//!   device (negative → 0 rows, more than `m_max` → `m_max` rows).
//! * With invalid contiguous contents the result is defined but not a GEMM of the intended
//!   rows. The kernel's blocks are `BM` rows (the chosen kernel's `block_m`, 32, 64 or 128, reported
//!   in [`GemmRun::config`]): a block whose first row's index is outside `0..G` (e.g. −1) is
//!   skipped whole, and rows naming a different group than their block's first row are left
//!   untouched.

use std::marker::PhantomData;

use fp8gemm_device::KernelSpec;
use fp8gemm_device::args::{GlobalPtr, MGroupedContiguousArgs, MGroupedContiguousSplitKArgs, MGroupedMaskedArgs, MGroupedMaskedSplitKArgs};
#[cfg(feature = "moe")]
use fp8gemm_device::args::{MGroupedContiguousScatterArgs, MGroupedContiguousSiluArgs, MoeScatterArgs, MoeSiluArgs};
use fp8gemm_device::tile;

use crate::checks::{check_count, check_format, check_nk, check_tensor_bytes, shape_product};
use crate::config::{self, GemmDesc};
use crate::error::{Error, Result};
use crate::fp8::Fp8Format;
use crate::gemm::{GemmRun, WorkspaceSource};
use crate::layout::{PRESHUFFLE_ROWS, WeightLayout};
use crate::quant::{GroupedQuantizedWeights, QuantizedWeights, blocks};
use crate::runtime::{Context, DeviceBuffer, Stream};
use crate::view::{ActivationsView, DeviceSlice, GroupedWeightsView, IntoOutput, OutputViewMut};
use crate::workspace::Workspace;

/// Row alignment of every group in the contiguous layout (DeepGEMM's
/// `get_m_alignment_for_contiguous_layout()`): 128, a multiple of every contiguous kernel's
/// tile height (32, 64 or 128), so a tile never spans two aligned blocks.
pub fn m_alignment_for_contiguous_layout() -> usize {
    tile::M_ALIGNMENT_CONTIGUOUS as usize
}

/// `G` experts' FP8 weights on the device: `[G, n, k]` values with `[G, ⌈n/128⌉, ⌈k/128⌉]`
/// block scales, in a [`WeightLayout`] (each group logical, or pre-shuffled: group `g` at byte
/// `g · ⌈n/16⌉·16·k`, see [`crate::layout`]). Filled whole ([`Self::upload`],
/// [`Self::upload_preshuffled`]) or expert by expert ([`Self::alloc`] /
/// [`Self::alloc_preshuffled`], then [`Self::upload_group`] per group: host staging of one
/// expert). [`Self::download`] returns the logical layout either way.
pub struct DeviceGroupedWeights<F> {
    data: DeviceBuffer<u8>,
    scales: DeviceBuffer<f32>,
    groups: usize,
    n: usize,
    k: usize,
    layout: WeightLayout,
    _f: PhantomData<F>,
}

/// Host bytes staged per copy when [`DeviceGroupedWeights::upload_group`] shuffles a group into
/// the pre-shuffled layout (whole 16-row stripes, at least one): bounds the extra host memory
/// of a streaming load independently of the expert's size.
const PRESHUFFLE_STAGING_BYTES: usize = 4 << 20;

impl<F: Fp8Format> DeviceGroupedWeights<F> {
    /// Copies grouped quantized weights to the device after checking that their lengths match
    /// their shape (`G·n·k` values, `G·⌈n/128⌉·⌈k/128⌉` scales); synchronous (setup time). The
    /// whole `[G, n, k]` tensor must be on the host: to load expert by expert with one expert's
    /// host staging, [`Self::alloc`] and [`Self::upload_group`] each group instead.
    pub fn upload(ctx: &Context, b: &GroupedQuantizedWeights<F>) -> Result<Self> {
        Self::upload_with_layout(ctx, b, WeightLayout::Logical)
    }
    /// [`Self::upload`] into the pre-shuffled layout (each group shuffled on the host as
    /// [`crate::layout::preshuffle_weights`] does; `k` must be a multiple of 128,
    /// [`Error::Shape`] argument `k`).
    pub fn upload_preshuffled(ctx: &Context, b: &GroupedQuantizedWeights<F>) -> Result<Self> {
        Self::upload_with_layout(ctx, b, WeightLayout::Preshuffled)
    }
    /// [`Self::upload`] or [`Self::upload_preshuffled`], by `layout`.
    pub fn upload_with_layout(ctx: &Context, b: &GroupedQuantizedWeights<F>, layout: WeightLayout) -> Result<Self> {
        let values = b.groups.checked_mul(b.n).and_then(|x| x.checked_mul(b.k));
        if values != Some(b.data.len()) {
            return Err(Error::Shape {
                arg: "b.data",
                expected: format!("G · n · k = {} · {} · {} values", b.groups, b.n, b.k),
                actual: format!("{} values", b.data.len()),
            });
        }
        let scales = b.groups.checked_mul(blocks(b.n)).and_then(|x| x.checked_mul(blocks(b.k)));
        if scales != Some(b.scales.len()) {
            return Err(Error::Shape {
                arg: "b.scales",
                expected: format!("G · ⌈n/128⌉ · ⌈k/128⌉ = {} · {} · {} scales", b.groups, blocks(b.n), blocks(b.k)),
                actual: format!("{} scales", b.scales.len()),
            });
        }
        crate::checks::check_scales("b.scales", &b.scales)?;
        let mut w = Self::alloc_with_layout(ctx, b.groups, b.n, b.k, layout)?;
        let (per_v, per_s) = (shape_product("b", &[b.n, b.k], "n · k")?, shape_product("b", &[blocks(b.n), blocks(b.k)], "⌈n/128⌉ · ⌈k/128⌉")?);
        let stream = Stream::null(ctx);
        for g in 0..b.groups {
            // In range: the lengths were checked above to be exactly `G` groups of each.
            w.write_group(&stream, g, &b.data[g * per_v..(g + 1) * per_v], &b.scales[g * per_s..(g + 1) * per_s])?;
        }
        stream.synchronize()?;
        Ok(w)
    }

    /// Overwrites group (expert) `g` with one expert's weights `w` (`n × k` values, `⌈n/128⌉ ×
    /// ⌈k/128⌉` scales, the shape of every group; always the logical layout — weights in the
    /// pre-shuffled layout are shuffled on the host on the way, in bounded chunks), in order on
    /// `stream`. `w` is read (staged)
    /// before this returns, so it may be dropped or reused at once: a layer loads expert by
    /// expert with one expert on the host (`crate::checkpoint::DeviceMoeWeights::load`). Work
    /// on other streams that reads the weights must be ordered after `stream` (an
    /// [`crate::Event`], or `stream.synchronize()`). Not on a capturing stream
    /// ([`Error::Capturing`]).
    ///
    /// Errors (nothing is written): `g ≥ G` ([`Error::Shape`], argument `g`); `w`'s shape not
    /// `n × k` or its buffers' lengths not those of its shape ([`Error::Shape`], argument `w`,
    /// naming `g`); a scale outside the kernels' range ([`Error::ScaleRange`], argument
    /// `w.scales`, index within the group's scales); `stream` of another context
    /// ([`Error::ForeignBuffer`]).
    pub fn upload_group(&mut self, stream: &Stream, g: usize, w: &QuantizedWeights<F>) -> Result<()> {
        if g >= self.groups {
            return Err(Error::Shape { arg: "g", expected: format!("a group index in 0..{} (the weights' group count)", self.groups), actual: g.to_string() });
        }
        if (w.n, w.k) != (self.n, self.k) {
            return Err(Error::Shape {
                arg: "w",
                expected: format!("group {g} of n × k = {} × {} (the shape of every group)", self.n, self.k),
                actual: format!("{} × {}", w.n, w.k),
            });
        }
        let (per_v, per_s) = (shape_product("w", &[self.n, self.k], "n · k")?, shape_product("w", &[blocks(self.n), blocks(self.k)], "⌈n/128⌉ · ⌈k/128⌉")?);
        let shape = format!("group {g}, n = {}, k = {}", self.n, self.k);
        crate::checks::check_len("w", "data", w.data.len(), per_v, &shape)?;
        crate::checks::check_len("w", "scales", w.scales.len(), per_s, &shape)?;
        crate::checks::check_scales("w.scales", &w.scales)?;
        self.write_group(stream, g, &w.data, &w.scales)
    }

    /// Device bytes and scales per group: `n · k` (logical) or `⌈n/16⌉·16·k` (pre-shuffled), and
    /// `⌈n/128⌉ · ⌈k/128⌉` ([`Self::alloc_with_layout`] checked the `G`-fold products; checked
    /// again here so no length is ever computed unchecked).
    fn per_group(&self) -> Result<(usize, usize)> {
        let bytes = self.layout.data_bytes(self.n, self.k)?;
        Ok((bytes, shape_product("w", &[blocks(self.n), blocks(self.k)], "⌈n/128⌉ · ⌈k/128⌉")?))
    }

    /// THE place where host values and scales of group `g` enter the device buffers (every
    /// upload path goes through it, so a change of the device layout has one place to go).
    /// `data` is the group's logical `n × k` values; in the pre-shuffled layout they are
    /// shuffled here, whole 16-row stripes at a time through a staging buffer of at most
    /// [`PRESHUFFLE_STAGING_BYTES`] (or one stripe), so the host never holds a second copy of
    /// the group. The callers checked `g < G` and the lengths; the sub-ranges are
    /// bounds-checked again.
    fn write_group(&mut self, stream: &Stream, g: usize, data: &[F], scales: &[f32]) -> Result<()> {
        let (per_v, per_s) = self.per_group()?;
        let mut dst = self.data.slice_mut(g * per_v..(g + 1) * per_v)?;
        match self.layout {
            WeightLayout::Logical => dst.copy_from_host(stream, crate::fp8::as_bits(data))?,
            WeightLayout::Preshuffled => {
                let (n, k) = (self.n, self.k);
                let stripe = PRESHUFFLE_ROWS * k;
                let frags = n.div_ceil(PRESHUFFLE_ROWS);
                if stripe > 0 && frags > 0 {
                    let per_copy = (PRESHUFFLE_STAGING_BYTES / stripe).clamp(1, frags);
                    let mut staging = vec![0u8; per_copy * stripe];
                    let logical = crate::fp8::as_bits(data);
                    let mut f0 = 0;
                    while f0 < frags {
                        let f1 = (f0 + per_copy).min(frags);
                        let buf = &mut staging[..(f1 - f0) * stripe];
                        crate::layout::shuffle_stripes(logical, n, k, f0..f1, buf);
                        dst.sub_mut(f0 * stripe, (f1 - f0) * stripe)?.copy_from_host(stream, buf)?;
                        f0 = f1;
                    }
                }
            }
        }
        self.scales.slice_mut(g * per_s..(g + 1) * per_s)?.copy_from_host(stream, scales)
    }
    /// Allocates zeroed weights of `G` experts (`G · n · k` values, `G · ⌈n/128⌉ · ⌈k/128⌉`
    /// scales) on the device, to be filled there (or used as all-zero operands, e.g. to model a
    /// launch's time, whose values do not steer the kernels).
    pub fn alloc(ctx: &Context, groups: usize, n: usize, k: usize) -> Result<Self> {
        Self::alloc_with_layout(ctx, groups, n, k, WeightLayout::Logical)
    }
    /// Allocates zeroed pre-shuffled weights of `G` experts (`G · ⌈n/16⌉·16·k` bytes, `k` a
    /// multiple of 128: [`Error::Shape`], argument `k`; `G · ⌈n/128⌉ · ⌈k/128⌉` scales), to be
    /// filled with [`Self::upload_group`].
    pub fn alloc_preshuffled(ctx: &Context, groups: usize, n: usize, k: usize) -> Result<Self> {
        Self::alloc_with_layout(ctx, groups, n, k, WeightLayout::Preshuffled)
    }
    /// [`Self::alloc`] or [`Self::alloc_preshuffled`], by `layout`.
    pub fn alloc_with_layout(ctx: &Context, groups: usize, n: usize, k: usize, layout: WeightLayout) -> Result<Self> {
        let per = layout.data_bytes(n, k)?;
        let values = shape_product("groups", &[groups, per], "G · (bytes per group)")?;
        let scales = shape_product("groups", &[groups, blocks(n), blocks(k)], "G · ⌈n/128⌉ · ⌈k/128⌉")?;
        Ok(DeviceGroupedWeights { data: ctx.alloc_zeroed(values)?, scales: ctx.alloc_zeroed(scales)?, groups, n, k, layout, _f: PhantomData })
    }
    /// These weights in the pre-shuffled layout, converted on the device (one launch over all
    /// groups, byte-identical to the host shuffle, then a copy of the scales; queued on
    /// `stream`; the new buffers are allocated first, so not on a capturing stream). Requires
    /// logical weights ([`Error::Layout`], argument `self`) with `k` a multiple of 128.
    pub fn to_preshuffled(&self, stream: &Stream) -> Result<Self> {
        if self.layout != WeightLayout::Logical {
            return Err(Error::Layout { arg: "self", expected: WeightLayout::Logical, actual: self.layout, reason: "to_preshuffled converts logical weights" });
        }
        stream.forbid_capture("allocating pre-shuffled weights")?;
        let ctx = stream.context();
        crate::checks::check_format::<F>(ctx, "self")?;
        ctx.check_owner("self", self.data.as_slice().owner())?;
        let mut out = Self::alloc_preshuffled(ctx, self.groups, self.n, self.k)?;
        crate::layout::launch_preshuffle(stream, &self.data.as_slice(), &mut out.data.as_slice_mut(), self.groups, self.n, self.k, (self.n, self.k))?;
        out.scales.as_slice_mut().copy_from_device(stream, self.scales.as_slice())?;
        Ok(out)
    }
    /// Copies the values and scales back to the host as [`GroupedQuantizedWeights`] in the
    /// **logical** layout (pre-shuffled groups are unshuffled on the host), in order on
    /// `stream` (then waits for it).
    pub fn download(&self, stream: &Stream) -> Result<GroupedQuantizedWeights<F>> {
        let bytes = self.data.download(stream)?;
        let scales = self.scales.download(stream)?;
        let data = match self.layout {
            WeightLayout::Logical => bytes,
            WeightLayout::Preshuffled => {
                let (per_v, _) = self.per_group()?;
                let mut logical = Vec::with_capacity(shape_product("self", &[self.groups, self.n, self.k], "G · n · k")?);
                for g in 0..self.groups {
                    logical.extend(crate::layout::unshuffle_bytes(&bytes[g * per_v..(g + 1) * per_v], self.n, self.k)?);
                }
                logical
            }
        };
        GroupedQuantizedWeights::from_parts(data.into_iter().map(F::from_bits).collect(), scales, self.groups, self.n, self.k)
            .map_err(|e| Error::Unsupported(format!("downloaded grouped weights: {e}")))
    }
    /// Number of groups (experts) `G`.
    pub fn groups(&self) -> usize {
        self.groups
    }
    /// Rows per group (output columns).
    pub fn n(&self) -> usize {
        self.n
    }
    /// Columns (the reduction length).
    pub fn k(&self) -> usize {
        self.k
    }
    /// How the values are arranged on the device.
    pub fn layout(&self) -> WeightLayout {
        self.layout
    }
    /// A view of the weights (what the entry points take), carrying their layout.
    pub fn view(&self) -> GroupedWeightsView<'_, F> {
        GroupedWeightsView::with_layout(self.data.as_slice(), self.scales.as_slice(), self.groups, self.n, self.k, self.layout)
            .expect("an upload's buffers have exactly the lengths of its shape")
    }
}

impl<'a, F: Fp8Format> From<&'a DeviceGroupedWeights<F>> for GroupedWeightsView<'a, F> {
    fn from(b: &'a DeviceGroupedWeights<F>) -> Self {
        b.view()
    }
}

/// Checks a contiguous-layout `m_indices` on the host: its length is a multiple of
/// [`m_alignment_for_contiguous_layout`], every entry is in `−1..groups`, and every aligned block
/// is one group's rows followed by −1 padding (possibly all padding, possibly no padding) — the
/// layout DeepGEMM builds and the one under which the kernels write exactly the rows with
/// non-negative indices.
pub fn validate_m_indices(m_indices: &[i32], groups: usize) -> Result<()> {
    let align = m_alignment_for_contiguous_layout();
    if !m_indices.len().is_multiple_of(align) {
        return Err(Error::Shape {
            arg: "m_indices",
            expected: format!("a length that is a multiple of {align} (the contiguous layout's alignment)"),
            actual: format!("{} entries", m_indices.len()),
        });
    }
    for (b, block) in m_indices.chunks(align).enumerate() {
        let first = block[0];
        for (off, &v) in block.iter().enumerate() {
            let i = b * align + off;
            if v < -1 || (v >= 0 && v as usize >= groups) {
                return Err(Error::Shape {
                    arg: "m_indices",
                    expected: format!("group indices in -1..{groups} (-1: padding)"),
                    actual: format!("m_indices[{i}] = {v}"),
                });
            }
            let prev = if off == 0 { first } else { block[off - 1] };
            if v != -1 && (v != first || prev == -1) {
                return Err(Error::Shape {
                    arg: "m_indices",
                    expected: format!("each {align}-row block to hold one group's rows followed by -1 padding (block at row {}, group {first})", b * align),
                    actual: format!("m_indices[{i}] = {v} after m_indices[{}] = {prev}", i.saturating_sub(1)),
                });
            }
        }
    }
    Ok(())
}

/// Validates a contiguous-layout `m_indices` ([`validate_m_indices`]) and copies it to the device:
/// the cheap place to check indices that come from the host.
pub fn upload_m_indices(ctx: &Context, m_indices: &[i32], groups: usize) -> Result<DeviceBuffer<i32>> {
    validate_m_indices(m_indices, groups)?;
    ctx.upload(m_indices)
}

/// The configuration and kernel of an m-grouped launch (`kind`: "contiguous" or "masked") for
/// weights in `layout` under `overrides`: the tuned/estimated choice and `logical`'s kernel for
/// logical weights, the grouped bs choice and `bs`'s kernel for pre-shuffled ones. Both entry
/// points choose this way.
fn grouped_config<A>(
    desc: &GemmDesc,
    overrides: &config::Overrides,
    layout: WeightLayout,
    kind: &str,
    logical: fn(&config::GemmConfig) -> Option<KernelSpec<A>>,
    bs: fn(&config::GemmConfig) -> Option<KernelSpec<A>>,
) -> Result<(config::GemmConfig, KernelSpec<A>)> {
    let unsupported = |e: config::ConfigError| Error::Unsupported(e.to_string());
    let (cfg, spec) = match layout {
        WeightLayout::Logical => {
            let cfg = config::get_best_config(desc, overrides).map_err(unsupported)?;
            (cfg, logical(&cfg))
        }
        WeightLayout::Preshuffled => {
            let cfg = config::get_grouped_bs_config(desc, overrides).map_err(unsupported)?;
            (cfg, bs(&cfg))
        }
    };
    let spec = spec.ok_or_else(|| Error::Unsupported(format!("configuration {cfg} has no m-grouped {kind} kernel for {layout} weights")))?;
    Ok((cfg, spec))
}

/// The checks both entry points share: format, owners, `k`, contiguous A and D.
fn check_common<F: Fp8Format>(
    stream: &Stream,
    a: &ActivationsView<'_, F>,
    b: &GroupedWeightsView<'_, F>,
    d: &OutputViewMut<'_>,
    index_arg: &'static str,
    index: &DeviceSlice<'_, i32>,
) -> Result<()> {
    let ctx = stream.context();
    check_format::<F>(ctx, "a")?;
    ctx.check_owner("a", a.data.owner())?;
    ctx.check_owner("a", a.scales.owner())?;
    ctx.check_owner("b", b.data.owner())?;
    ctx.check_owner("b", b.scales.owner())?;
    ctx.check_owner("d", d.data.owner())?;
    ctx.check_owner(index_arg, index.owner())?;
    if b.k != a.k {
        return Err(Error::Shape { arg: "b", expected: format!("k = {} columns (as a)", a.k), actual: format!("{} columns", b.k) });
    }
    if a.lda != a.k {
        return Err(Error::Shape { arg: "lda", expected: format!("k = {} (the m-grouped kernels read contiguous rows)", a.k), actual: a.lda.to_string() });
    }
    if d.ldd != d.n {
        return Err(Error::Shape { arg: "ldd", expected: format!("n = {} (the m-grouped kernels write contiguous rows)", d.n), actual: d.ldd.to_string() });
    }
    Ok(())
}

/// Device bytes of one group of B in `layout` (`n · k`, or `⌈n/16⌉·16·k` pre-shuffled), saturating.
fn b_group_bytes(layout: WeightLayout, n: u64, k: u64) -> u64 {
    match layout {
        WeightLayout::Logical => n.saturating_mul(k),
        WeightLayout::Preshuffled => n.div_ceil(PRESHUFFLE_ROWS as u64).saturating_mul(PRESHUFFLE_ROWS as u64).saturating_mul(k),
    }
}

/// M-grouped contiguous `D = A · B[m_indices]ᵀ` with block scales (DeepGEMM's
/// `m_grouped_fp8_gemm_nt_contiguous`): row `i` of `d` becomes row `i` of `A · B[m_indices[i]]ᵀ`.
///
/// `a` is `[m_sum, k]` with `m_sum` a multiple of [`m_alignment_for_contiguous_layout`], `b` is
/// `[G, n, k]`, `d` holds `m_sum · n` elements, `m_indices` holds `m_sum` group indices (−1:
/// padding), constant per aligned block as described in the [module docs](self), which also say
/// which rows of `d` are written and what is validated where (build `m_indices` with
/// [`upload_m_indices`] to have it checked). Requirements as [`crate::fp8_gemm_nt`]: `k` a
/// positive multiple of 128, `n` a multiple of 4, the device's FP8 format, contiguous rows of A
/// and D (`lda = k`, `ldd = n`). `b` may be in either [layout](crate::layout): pre-shuffled
/// weights run the bs kernels (B straight from global memory into the MFMA operands,
/// [`fp8gemm_device::grouped`]; 32-, 64- or 128-row tiles, chosen by the generated cost
/// model, [`crate::select::plan_grouped`]), logical ones the LDS-staged kernels; the result
/// is the same, bit for bit. With `G = 0` every row must be padding and nothing is launched.
/// The launch is queued on `stream`: asynchronous and capture-safe, as [`crate::fp8_gemm_nt`]'s.
pub fn m_grouped_fp8_gemm_nt_contiguous<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<ActivationsView<'a, F>>,
    b: impl Into<GroupedWeightsView<'a, F>>,
    d: impl IntoOutput<'a>,
    m_indices: impl Into<DeviceSlice<'a, i32>>,
) -> Result<GemmRun> {
    contiguous(stream, a.into(), b.into(), d, m_indices.into(), m_alignment_for_contiguous_layout())
}

/// Row alignments [`m_grouped_fp8_gemm_nt_contiguous_aligned`] accepts: the heights of the
/// contiguous kernels' tiles (32 only with pre-shuffled weights, whose bs kernels have a 32-row
/// tile) and DeepGEMM's 128.
pub const CONTIGUOUS_ALIGNMENTS: [usize; 3] = [32, 64, 128];

/// [`m_grouped_fp8_gemm_nt_contiguous`] for a layout whose groups are padded to `align` rows
/// (one of [`CONTIGUOUS_ALIGNMENTS`]) instead of 128: `m_sum` a multiple of `align`, and
/// `m_indices` constant over every aligned block of `align` rows (a non-empty group starts at
/// a multiple of `align`). The MoE layer's routing produces this layout with `align` = the
/// tile height of the kernel that will run it, so a group of `c` rows costs `⌈c/align⌉` tiles
/// instead of `⌈c/128⌉·128/BM`.
///
/// The kernel's tile is `align` rows high when `align` is 32 or 64 (the selector's choice with
/// its height set to `align`: the layout was padded for that tile; logical weights have no
/// 32-row kernel, so `align = 32` needs pre-shuffled ones: [`Error::Unsupported`]), and the
/// selector's choice for 128.
/// Everything else (rows written, validation, capture safety) is as
/// [`m_grouped_fp8_gemm_nt_contiguous`]'s, which is this function with `align = 128`.
///
/// **Large problems**: a launch addresses A and D with 32-bit buffer offsets, so when either
/// would reach 2 GiB the rows are cut into chunks (multiples of 128 rows, each below the limit),
/// one launch each with the same kernel, in order on `stream`; every block lies inside one
/// chunk because chunk boundaries are multiples of `align`. The result is the same as one
/// launch's; [`GemmRun::config`] describes the first chunk's launch.
pub fn m_grouped_fp8_gemm_nt_contiguous_aligned<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<ActivationsView<'a, F>>,
    b: impl Into<GroupedWeightsView<'a, F>>,
    d: impl IntoOutput<'a>,
    m_indices: impl Into<DeviceSlice<'a, i32>>,
    align: usize,
) -> Result<GemmRun> {
    contiguous(stream, a.into(), b.into(), d, m_indices.into(), align)
}

/// Rows of one contiguous launch: the largest multiple of 128 whose A (`rows · k` bytes) and
/// D (`rows · n` bf16), with the selector's 128-row slack, stay below the 32-bit buffer limit.
fn contiguous_chunk_rows(n: u64, k: u64) -> u64 {
    let widest = k.max(2 * n).max(1);
    ((tile::MAX_TENSOR_BYTES - 1) / widest).saturating_sub(128) / 128 * 128
}

/// The tile height for a layout of `pairs` rows over `active` non-empty groups padded to that
/// height, `n × k` per group, weights in `layout` (the stream's overrides applied), at most
/// `max_align` and one of [`CONTIGUOUS_ALIGNMENTS`]: the alignment the MoE layer routes its rows
/// to when its fused path (which compares its own launches' estimates) does not run: the
/// selector's choice for the rows such a layout holds on average (`pairs` plus half a 32-row
/// tile per active group) as one group — the selector's own padding model assumes 128-row
/// groups, whose all-padding tiles this layout does not have.
#[cfg(feature = "moe")]
pub(crate) fn contiguous_tile_rows(stream: &Stream, layout: WeightLayout, pairs: usize, active: usize, n: usize, k: usize, max_align: usize) -> Result<usize> {
    let overrides = stream.overrides();
    let ctx = stream.context();
    let chunk = contiguous_chunk_rows(n as u64, k as u64) as usize;
    let m = pairs.saturating_add(active.saturating_mul(16));
    let m_sel = m.clamp(1, chunk.max(128)).next_multiple_of(128);
    let as_u32 = |v: usize, what: &str| u32::try_from(v).map_err(|_| Error::Unsupported(format!("{what} = {v}: dimensions must fit in 32 bits")));
    let desc = GemmDesc::m_grouped_contiguous(as_u32(m_sel, "m")?, as_u32(n, "n")?, as_u32(k, "k")?, 1, ctx.arch()).with_cus(ctx.compute_units());
    let unsupported = |e: config::ConfigError| Error::Unsupported(e.to_string());
    let bm = match layout {
        WeightLayout::Logical => config::get_best_config(&desc, &overrides).map_err(unsupported)?.block_m,
        WeightLayout::Preshuffled => config::get_grouped_bs_config(&desc, &overrides).map_err(unsupported)?.block_m,
    } as usize;
    let floor = if layout == WeightLayout::Logical { 64 } else { 32 };
    Ok(bm.clamp(floor, max_align.max(floor)))
}

fn contiguous<'a, F: Fp8Format>(
    stream: &Stream,
    a: ActivationsView<'a, F>,
    b: GroupedWeightsView<'a, F>,
    d: impl IntoOutput<'a>,
    m_indices: DeviceSlice<'a, i32>,
    align: usize,
) -> Result<GemmRun> {
    let (m_sum, n, k, groups) = (a.m, b.n, a.k, b.groups);
    let mut d = d.into_output(m_sum, n)?;
    check_common(stream, &a, &b, &d, "m_indices", &m_indices)?;
    // The stream's selector overrides, passed to the choice.
    let overrides = stream.overrides();
    let ctx = stream.context();
    check_count("m_indices", &format!("m_sum = {m_sum} (rows of a)"), m_sum, m_indices.len())?;
    if !CONTIGUOUS_ALIGNMENTS.contains(&align) {
        return Err(Error::Shape { arg: "align", expected: format!("one of {CONTIGUOUS_ALIGNMENTS:?} rows"), actual: align.to_string() });
    }
    if !m_sum.is_multiple_of(align) {
        return Err(Error::Shape {
            arg: "a",
            expected: format!("m_sum a multiple of {align} rows (each group padded to the alignment)"),
            actual: format!("{m_sum} rows"),
        });
    }
    if m_sum == 0 || n == 0 || groups == 0 {
        return Ok(GemmRun { config: None, workspace_limit: None });
    }
    check_nk(n, k)?;
    let too_big = |what: &str| Error::Unsupported(format!("{what}: dimensions must fit in 32 bits"));
    u32::try_from(m_sum).map_err(|_| too_big(&format!("m_sum = {m_sum}")))?;
    let g32 = u32::try_from(groups).map_err(|_| too_big(&format!("groups = {groups}")))?;
    let (n64, k64) = (n as u64, k as u64);
    check_tensor_bytes("b", (n64 + 128).saturating_mul(k64))?;
    // One group of B below 2 GiB (the kernels address each group from its own 64-bit base).
    check_tensor_bytes("b", b_group_bytes(b.layout, n64, k64))?;
    let mut chunk = contiguous_chunk_rows(n64, k64) as usize;
    if let Some(forced) = overrides.contiguous_chunk_rows {
        if forced == 0 || !forced.is_multiple_of(128) {
            return Err(Error::Shape { arg: "overrides", expected: "contiguous_chunk_rows a positive multiple of 128".into(), actual: forced.to_string() });
        }
        chunk = chunk.min(forced as usize);
    }
    if chunk == 0 {
        return Err(Error::Shape { arg: "b", expected: "128 rows of A and D below 2 GiB each".into(), actual: format!("n = {n}, k = {k}") });
    }

    // One choice for every chunk: the selector's for a chunk's rows (m rounded up to the
    // selector's 128), its tile height set to `align` when that is below 128 (the layout was
    // padded for tiles of that height) and cut to it when taller.
    let m_sel = m_sum.min(chunk).next_multiple_of(128) as u32;
    let desc = GemmDesc::m_grouped_contiguous(m_sel, n as u32, k as u32, g32, ctx.arch()).with_cus(ctx.compute_units());
    let (mut cfg, mut spec) = grouped_config(&desc, &overrides, b.layout, "contiguous", config::contiguous_kernel_spec, config::contiguous_bs_kernel_spec)?;
    if cfg.block_m != align as u32 && (align < 128 || !(align as u32).is_multiple_of(cfg.block_m)) {
        // The stream's overrides with the tile height set to the alignment.
        let forced = overrides.with_tile(align as u32, cfg.block_n);
        (cfg, spec) = grouped_config(&desc, &forced, b.layout, "contiguous", config::contiguous_kernel_spec, config::contiguous_bs_kernel_spec)
            .map_err(|e| Error::Unsupported(format!("no m-grouped contiguous kernel with a {align}-row tile for {} weights ({e})", b.layout)))?;
    }
    let tile = tile::DenseTile { name: "", block_m: cfg.block_m, block_n: cfg.block_n };
    let kb = k.div_ceil(128);
    let mut first = None;
    let mut r0 = 0;
    while r0 < m_sum {
        let rows = chunk.min(m_sum - r0);
        // Chunks are multiples of 128 rows (the last one the rest, a multiple of `align`).
        let a_c = ActivationsView::<F>::new(a.data.sub(r0 * k, rows * k)?, a.scales.sub(r0 * kb, rows * kb)?, rows, k)?;
        let d_c = d.data.sub_mut(r0 * n, rows * n)?;
        let idx = m_indices.sub(r0, rows)?;
        let (m64, m32) = (rows as u64, rows as u32);
        check_tensor_bytes("a", (m64 + 128).saturating_mul(k64))?;
        check_tensor_bytes("d", m64.saturating_mul(n64).saturating_mul(2))?;
        let launch = config::GemmConfig { grid: tile.grid(m32, n as u32), ..cfg };
        let args = MGroupedContiguousArgs {
            a: a_c.data.device_ptr(),
            b: b.data.device_ptr(),
            sfa: a_c.scales.device_ptr(),
            sfb: b.scales.device_ptr(),
            d: GlobalPtr::new(d_c.device_ptr().addr()),
            m_indices: idx.device_ptr(),
            m_sum: m32,
            n: n as u32,
            k: k as u32,
            groups: g32,
        };
        // SAFETY: every pointer in `args` addresses memory the views borrow with at least the
        // extent the kernel's contract requires: A rows·k bytes and SFA rows·⌈k/128⌉ floats (the
        // chunk's sub-views of A, checked by their constructor), B G·n·k bytes (logical) or
        // G·⌈n/16⌉·16·k (pre-shuffled, the layout that chose the bs kernel) and SFB
        // G·⌈n/128⌉·⌈k/128⌉ floats (checked by the view constructors for its layout), D rows·n
        // bf16 and m_indices rows i32 (sub-views of the checked full ones), every tensor below
        // 2 GiB (checked above); the kernel bounds every access by these extents whatever
        // m_indices holds. `d` is borrowed mutably.
        unsafe { stream.launch(spec, [launch.grid, 1, 1], launch.lds_bytes, &args)? };
        first.get_or_insert(launch);
        r0 += rows;
    }
    Ok(GemmRun { config: first, workspace_limit: None })
}

/// [`m_grouped_fp8_gemm_nt_contiguous_aligned`] with A **gathered**: row `i` of the problem is
/// row `row_src[i]` of `a` (so `a` holds each token once, quantized once, and the GEMM's A loads
/// do the gather an MoE layer would otherwise do with a pass over every routed row), and
/// `row_src[i]` outside `0..a.m` (the −1 padding of an expert's last block, or −2 past the rows
/// in use) reads zeros. `row_src` and `m_indices` hold `m_sum` entries, `d` `m_sum · n`
/// elements; `m_sum` a multiple of `align`, which must be 32 or 64 (the height of the kernel's
/// tile). Weights must be pre-shuffled ([`Error::Unsupported`] otherwise): the kernels are the
/// bs loop's (`m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm{32,64}_bn128`).
///
/// `active` is a bound on the non-empty groups (used only to choose the launch). Few working
/// tiles (decode) split K over several workgroups per tile
/// ([`crate::select::plan_contiguous_splitk`], the stream's workspace, the dense split-K rules
/// of [`crate::workspace`]: deterministic, capture-safe; a forced split, [`crate::Overrides::split`],
/// that the workspace cannot hold is an [`Error::Workspace`]). Rows written are those of
/// [`m_grouped_fp8_gemm_nt_contiguous`]: a row whose own `m_indices` entry differs from its
/// block's group is left untouched. Row chunks keep D below the 2 GiB of 32-bit offsets;
/// `a` itself must be below it.
#[allow(clippy::too_many_arguments)]
pub fn m_grouped_fp8_gemm_nt_contiguous_gathered<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<ActivationsView<'a, F>>,
    row_src: impl Into<DeviceSlice<'a, i32>>,
    b: impl Into<GroupedWeightsView<'a, F>>,
    d: impl IntoOutput<'a>,
    m_indices: impl Into<DeviceSlice<'a, i32>>,
    align: usize,
    active: usize,
) -> Result<GemmRun> {
    contiguous_splitk(stream, a.into(), Some(row_src.into()), b.into(), d, m_indices.into(), None, align, active, None, None)
}

/// The MoE layer's gate·up launch with its activation epilogue alone, for the tuner's samples
/// (`internals`): the gathered GEMM of [`m_grouped_fp8_gemm_nt_contiguous_gathered`] (tile
/// height `align`, 32 or 64) writing `act = FP8(silu(gate)·up)` and `act_sf` from its tiles
/// (`n = 2·inter`; `counters` at least `(m_sum/align)·inter/128` zeros, left zero): the
/// `m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_*` kernels, planned as the layer plans them
/// ([`crate::select::plan_contiguous_splitk`], their variant). With `a_bf16` (the bf16 token
/// rows, `a.m × a.k`; `align` 32) the kernel quantizes its A loads itself and `a` gives only the
/// shape. Rows are the gathered path's (a −1 `m_indices` row skipped).
#[cfg(all(feature = "moe", feature = "internals"))]
#[allow(clippy::too_many_arguments)]
pub fn m_grouped_fp8_gemm_nt_contiguous_gathered_silu<'a, F: Fp8Format>(
    stream: &Stream,
    a: ActivationsView<'a, F>,
    a_bf16: Option<DeviceSlice<'a, half::bf16>>,
    row_src: DeviceSlice<'a, i32>,
    b: GroupedWeightsView<'a, F>,
    d: impl IntoOutput<'a>,
    m_indices: DeviceSlice<'a, i32>,
    (act, act_sf, counters): (crate::view::DeviceSliceMut<'_, u8>, crate::view::DeviceSliceMut<'_, f32>, crate::view::DeviceSliceMut<'_, u32>),
    align: usize,
    active: usize,
) -> Result<GemmRun> {
    let silu = Silu { act, act_sf, counters, fp8_max: F::MAX, a_bf16 };
    contiguous_splitk(stream, a, Some(row_src), b, d, m_indices, None, align, active, Some(MoeEpilogue::Silu(silu)), None)
}

/// The MoE scatter epilogue of [`contiguous_splitk`] (device contract: `MoeScatterArgs`):
/// `out[t] = bf16(Σ_j weights[t,j] · d[slots[t,j]] + shared[t])`, computed in the GEMM's launch
/// from the rows it stores.
#[cfg(feature = "moe")]
pub(crate) struct Scatter<'a> {
    /// Output, `tokens × n` bf16.
    pub out: crate::view::DeviceSliceMut<'a, half::bf16>,
    /// Token of every row of the problem (`m_sum` i32, the route's `row_src`).
    pub row_token: DeviceSlice<'a, i32>,
    /// Row of every `(t, j)`, `tokens · top_k` i32.
    pub slots: DeviceSlice<'a, i32>,
    /// Router weights, `tokens · top_k` f32.
    pub weights: DeviceSlice<'a, f32>,
    /// The shared expert's output, `tokens × n` bf16.
    pub shared: Option<DeviceSlice<'a, half::bf16>>,
    /// Arrival counters, at least `tokens · ⌈n/128⌉` u32, all 0 (left 0).
    pub counters: crate::view::DeviceSliceMut<'a, u32>,
}
/// The MoE activation epilogue of [`contiguous_splitk`] (device contract: `MoeSiluArgs`): with
/// `n = 2·inter`, `act = FP8(silu(d[:, ..inter])·d[:, inter..])` and its 1×128 scales, computed in
/// the GEMM's launch (the bits of [`crate::quantize::silu_mul_quantize_activations`] on `d`).
#[cfg(feature = "moe")]
pub(crate) struct Silu<'a> {
    /// FP8 `act`, `m_sum × inter`.
    pub act: crate::view::DeviceSliceMut<'a, u8>,
    /// Its scales, `m_sum × inter/128`.
    pub act_sf: crate::view::DeviceSliceMut<'a, f32>,
    /// Pair counters, at least `(m_sum/align) × inter/128` u32, all 0 (left 0).
    pub counters: crate::view::DeviceSliceMut<'a, u32>,
    /// Largest finite value of the FP8 format.
    pub fp8_max: f32,
    /// The bf16 token rows (`a.m × k`) for the kernel that quantizes its A loads itself
    /// ([`crate::registry::Spec::ContiguousSiluQa`]); then `a` gives only the shape and
    /// nothing of its data or scales is read.
    pub a_bf16: Option<DeviceSlice<'a, half::bf16>>,
}

/// What the MoE layer fuses into a contiguous split-K launch.
#[cfg(feature = "moe")]
pub(crate) enum MoeEpilogue<'a> {
    /// The down GEMM's unpermute.
    Scatter(Scatter<'a>),
    /// The gate·up GEMM's activation.
    Silu(Silu<'a>),
}
#[cfg(not(feature = "moe"))]
pub(crate) enum MoeEpilogue {}

/// The launches of [`m_grouped_fp8_gemm_nt_contiguous_gathered`], or with `row_src = None` of
/// the same kernels over an A of `m_sum` rows (the MoE layer's down GEMM: split-K at decode).
/// `rows_used`, one i32 on the device (the MoE route's "rows used": a multiple of `align`,
/// the rows after it all padding), spreads the grid over the tiles of the rows in use
/// (device contract: `MGroupedContiguousSplitKArgs::valid_rows`); `None`: every row.
/// `expected` = `(rows, stored, routing)`: the layout's rows the launch is expected to work on,
/// the routed rows among them (the MoE layer's [`crate::moe::expected_layout`] and `T·k`) and
/// how the routing draws the groups' sizes ([`crate::select::Routing`]), which the plan is made
/// for; `None`: all `m_sum` rows, every one stored, every group alike.
#[allow(clippy::too_many_arguments)]
pub(crate) fn contiguous_splitk<'a, F: Fp8Format>(
    stream: &Stream,
    a: ActivationsView<'a, F>,
    row_src: Option<DeviceSlice<'a, i32>>,
    b: GroupedWeightsView<'a, F>,
    d: impl IntoOutput<'a>,
    m_indices: DeviceSlice<'a, i32>,
    rows_used: Option<DeviceSlice<'a, i32>>,
    align: usize,
    active: usize,
    #[cfg(feature = "moe")] mut epi: Option<MoeEpilogue<'_>>,
    #[cfg(not(feature = "moe"))] epi: Option<MoeEpilogue>,
    expected: Option<(usize, usize, Option<crate::select::Routing>)>,
) -> Result<GemmRun> {
    let (m_sum, n, k, groups) = (m_indices.len(), b.n, a.k, b.groups);
    let mut d = d.into_output(m_sum, n)?;
    check_common(stream, &a, &b, &d, "m_indices", &m_indices)?;
    if let Some(u) = &rows_used {
        if u.len() != 1 {
            return Err(Error::Shape { arg: "rows_used", expected: "1 i32".into(), actual: format!("{} i32", u.len()) });
        }
        stream.context().check_owner("rows_used", u.owner())?;
    }
    #[cfg(feature = "moe")]
    let variant = match &epi {
        None => crate::select::ContiguousVariant::Plain,
        Some(MoeEpilogue::Scatter(_)) => crate::select::ContiguousVariant::Scatter,
        Some(MoeEpilogue::Silu(Silu { a_bf16: None, .. })) => crate::select::ContiguousVariant::Silu,
        Some(MoeEpilogue::Silu(Silu { a_bf16: Some(_), .. })) => crate::select::ContiguousVariant::SiluQa,
    };
    #[cfg(not(feature = "moe"))]
    let variant = crate::select::ContiguousVariant::Plain;
    #[cfg(feature = "moe")]
    if let Some(MoeEpilogue::Silu(si)) = &epi {
        let ctx = stream.context();
        for (arg, owner) in [("act", si.act.owner()), ("act_sf", si.act_sf.owner()), ("counters", si.counters.owner())] {
            ctx.check_owner(arg, owner)?;
        }
        if !n.is_multiple_of(256) {
            return Err(Error::Shape {
                arg: "b",
                expected: "n = 2·inter with inter a multiple of 128 (the activation epilogue)".into(),
                actual: n.to_string(),
            });
        }
        let inter = n / 2;
        if let Some(x) = &si.a_bf16 {
            ctx.check_owner("a_bf16", x.owner())?;
            check_count("a_bf16", &format!("a.m · k = {} · {k}", a.m), a.m * k, x.len())?;
            if row_src.is_none() {
                return Err(Error::Shape { arg: "row_src", expected: "a row map (the bf16 A is read gathered)".into(), actual: "none".into() });
            }
        }
        check_count("act", &format!("m_sum · inter = {m_sum} · {inter}"), m_sum * inter, si.act.len())?;
        check_count("act_sf", &format!("m_sum · inter/128 = {m_sum} · {}", inter / 128), m_sum * (inter / 128), si.act_sf.len())?;
        let need = (m_sum / align.max(1)) * (inter / 128);
        if si.counters.len() < need {
            return Err(Error::Shape {
                arg: "counters",
                expected: format!("at least (m_sum/align)·inter/128 = {need} elements"),
                actual: format!("{} elements", si.counters.len()),
            });
        }
    }
    #[cfg(feature = "moe")]
    let scatter_dims = match &epi {
        Some(MoeEpilogue::Silu(_)) | None => None,
        Some(MoeEpilogue::Scatter(sc)) => {
            let ctx = stream.context();
            for (arg, owner) in [
                ("out", sc.out.owner()),
                ("row_token", sc.row_token.owner()),
                ("slots", sc.slots.owner()),
                ("weights", sc.weights.owner()),
                ("counters", sc.counters.owner()),
            ] {
                ctx.check_owner(arg, owner)?;
            }
            if !n.is_multiple_of(8) {
                return Err(Error::Shape { arg: "b", expected: "n a multiple of 8 (the scatter epilogue's 8-column pieces)".into(), actual: n.to_string() });
            }
            if !sc.out.len().is_multiple_of(n.max(1)) {
                return Err(Error::Shape { arg: "out", expected: format!("T · n elements with n = {n}"), actual: format!("{} elements", sc.out.len()) });
            }
            let tokens = sc.out.len() / n.max(1);
            check_count("weights", &format!("slots' length {}", sc.slots.len()), sc.slots.len(), sc.weights.len())?;
            if tokens == 0 || sc.slots.len() % tokens != 0 || sc.slots.is_empty() {
                return Err(Error::Shape {
                    arg: "slots",
                    expected: format!("T · top_k elements with T = {tokens}, top_k ≥ 1"),
                    actual: format!("{} elements", sc.slots.len()),
                });
            }
            check_count("row_token", &format!("m_sum = {m_sum}"), m_sum, sc.row_token.len())?;
            if let Some(sh) = &sc.shared {
                ctx.check_owner("shared", sh.owner())?;
                check_count("shared", &format!("T · n = {tokens} · {n}"), tokens * n, sh.len())?;
            }
            let need = tokens.checked_mul(n.div_ceil(128)).ok_or_else(|| Error::Unsupported("scatter counters: size overflows".into()))?;
            if sc.counters.len() < need {
                return Err(Error::Shape {
                    arg: "counters",
                    expected: format!("at least T · ⌈n/128⌉ = {need} elements"),
                    actual: format!("{} elements", sc.counters.len()),
                });
            }
            Some((tokens, sc.slots.len() / tokens))
        }
    };
    #[cfg(not(feature = "moe"))]
    let _ = &epi;
    match &row_src {
        Some(src) => {
            stream.context().check_owner("row_src", src.owner())?;
            check_count("row_src", &format!("m_sum = {m_sum} (entries of m_indices)"), m_sum, src.len())?;
        }
        None => check_count("a", &format!("m_sum = {m_sum} rows (entries of m_indices)"), m_sum, a.m)?,
    }
    if b.layout != WeightLayout::Preshuffled {
        return Err(Error::Unsupported("the gathered m-grouped GEMM runs the bs kernels: b must be pre-shuffled (WeightLayout::Preshuffled)".into()));
    }
    if align != 32 && align != 64 {
        return Err(Error::Shape { arg: "align", expected: "32 or 64 rows (the gathered kernels' tile heights)".into(), actual: align.to_string() });
    }
    if !m_sum.is_multiple_of(align) {
        return Err(Error::Shape { arg: "m_indices", expected: format!("m_sum a multiple of {align} rows"), actual: format!("{m_sum} rows") });
    }
    if m_sum == 0 || n == 0 || groups == 0 {
        return Ok(GemmRun { config: None, workspace_limit: None });
    }
    check_nk(n, k)?;
    let too_big = |what: String| Error::Unsupported(format!("{what}: dimensions must fit in 32 bits"));
    let a_rows = u32::try_from(a.m).map_err(|_| too_big(format!("a.m = {}", a.m)))?;
    u32::try_from(m_sum).map_err(|_| too_big(format!("m_sum = {m_sum}")))?;
    let g32 = u32::try_from(groups).map_err(|_| too_big(format!("groups = {groups}")))?;
    #[cfg(feature = "moe")]
    let m32_total = m_sum as u32;
    let (n64, k64) = (n as u64, k as u64);
    if row_src.is_some() {
        check_tensor_bytes("a", (a.m as u64 + 128).saturating_mul(k64))?;
    }
    check_tensor_bytes("b", (n64 + 128).saturating_mul(k64))?;
    // One group of B below 2 GiB (the kernels address each group from its own 64-bit base).
    check_tensor_bytes("b", b_group_bytes(b.layout, n64, k64))?;
    // Chunks of whole aligned blocks keep D (and, not gathered, A) below 2 GiB.
    let widest = if row_src.is_some() { 2 * n64 } else { (2 * n64).max(k64) };
    let chunk = ((tile::MAX_TENSOR_BYTES - 1) / widest.max(1)).saturating_sub(128) / 128 * 128;
    if chunk == 0 {
        return Err(Error::Shape { arg: "b", expected: "128 rows of D below 2 GiB".into(), actual: format!("n = {n}") });
    }
    let overrides = stream.overrides();
    // A forced chunk (Overrides::contiguous_chunk_rows, as for the aligned GEMM): smaller
    // launches, the same result.
    let chunk = match overrides.contiguous_chunk_rows {
        Some(forced) if forced == 0 || !forced.is_multiple_of(128) => {
            return Err(Error::Shape { arg: "overrides", expected: "contiguous_chunk_rows a positive multiple of 128".into(), actual: forced.to_string() });
        }
        Some(forced) => chunk.min(u64::from(forced)),
        None => chunk,
    };
    let chunk = chunk as usize;
    let ctx = stream.context();
    let active32 = u32::try_from(active.clamp(1, groups)).unwrap_or(u32::MAX);
    let mut first = None;
    // One plan for every chunk, made for the whole problem (a chunk's workspace need is at most
    // the whole's): chunking never changes the split count, so never the result's bits.
    let (plan_rows, stored, routing) = expected.map_or((m_sum, m_sum, None), |(r, s, routing)| (r.min(m_sum), s.min(m_sum), routing));
    // The launch's unique A and output bytes (the estimate's HBM term): a gathered A reads each
    // token row once (bf16 where the kernel quantizes it itself); the epilogues write FP8
    // activations and their scales, or the token rows (with the shared expert's read).
    #[cfg(feature = "moe")]
    let scatter = scatter_dims.map(|(tokens, _)| (tokens as f64, matches!(&epi, Some(MoeEpilogue::Scatter(Scatter { shared: Some(_), .. })))));
    #[cfg(not(feature = "moe"))]
    let scatter: Option<(f64, bool)> = None;
    let gathered = row_src.is_some().then_some(a.m as f64);
    let bytes_of = |rows: usize| Some(crate::select::ContiguousBytes::of(variant, rows as f64, stored as f64, n as f64, k as f64, gathered, scatter));
    let choose = |available: u64| -> Result<(crate::select::Plan, Option<config::WorkspaceLimit>)> {
        let plan_over = |avail: u64, rows: usize, forced: Option<u32>, pipelined: Option<bool>| {
            crate::select::plan_contiguous_splitk(
                align as u32,
                &crate::select::ContiguousQuery {
                    rows: rows as u32,
                    n: n as u32,
                    k: k as u32,
                    active: active32,
                    arch: ctx.arch(),
                    cus: ctx.compute_units(),
                    available: avail,
                    forced,
                    variant,
                    pipelined,
                    bytes: bytes_of(rows),
                    // The draws describe the expected rows' layout, not the whole bound's.
                    routing: routing.filter(|_| rows == plan_rows),
                },
            )
            .map_err(|e| Error::Unsupported(e.to_string()))
        };
        // Chosen over the expected rows, launched (grid and workspace) over all `m_sum`: the
        // expected plan's split and loop, pinned, over the whole layout, where its workspace
        // fits `avail`; else the plan over the whole layout.
        let plan = |avail: u64| -> Result<crate::select::Plan> {
            let whole = plan_over(avail, m_sum, overrides.split, overrides.bs_pipelined)?;
            if expected.is_none() || overrides.split.is_some() {
                return Ok(whole);
            }
            let Ok(e) = plan_over(avail, plan_rows, None, overrides.bs_pipelined) else { return Ok(whole) };
            match plan_over(avail, m_sum, Some(e.splits), Some(e.kernel.pipelined())) {
                Ok(p) if p.workspace_floats(ctx.arch()) <= avail => Ok(crate::select::Plan { estimate_s: e.estimate_s, ..p }),
                _ => Ok(whole),
            }
        };
        let best = plan(u64::MAX)?;
        let need = best.workspace_floats(ctx.arch());
        if need <= available || overrides.split.is_some() {
            return Ok((best, None));
        }
        let fitted = plan(available)?;
        Ok((fitted, Some(config::WorkspaceLimit { preferred: best.config(ctx.arch()), needed: need, available })))
    };
    let (ws_ptr, plan, workspace_limit) = WorkspaceSource::Stream.resolve_with(stream, choose, |p: &crate::select::Plan| p.workspace_floats(ctx.arch()))?;
    let mut r0 = 0;
    while r0 < m_sum {
        let rows = chunk.min(m_sum - r0);
        let d_c = d.data.sub_mut(r0 * n, rows * n)?;
        let idx = m_indices.sub(r0, rows)?;
        // Gathered: the whole A, the chunk's row map; otherwise the chunk's rows of A.
        let (a_c, src) = match &row_src {
            Some(src) => (a.data.device_ptr(), Some(src.sub(r0, rows)?)),
            None => (a.data.sub(r0 * k, rows * k)?.device_ptr(), None),
        };
        let sfa_c = match &row_src {
            Some(_) => a.scales.device_ptr(),
            None => a.scales.sub(r0 * (k / 128), rows * (k / 128))?.device_ptr(),
        };
        let a_rows = if row_src.is_some() { a_rows } else { rows as u32 };
        let m32 = rows as u32;
        check_tensor_bytes("d", (rows as u64).saturating_mul(n64).saturating_mul(2))?;
        if row_src.is_none() {
            check_tensor_bytes("a", (rows as u64 + 128).saturating_mul(k64))?;
        }
        let args = MGroupedContiguousSplitKArgs {
            a: a_c,
            b: b.data.device_ptr(),
            sfa: sfa_c,
            sfb: b.scales.device_ptr(),
            d: GlobalPtr::new(d_c.device_ptr().addr()),
            m_indices: idx.device_ptr(),
            row_src: src.map_or(GlobalPtr::new(0), |s| s.device_ptr()),
            ws: GlobalPtr::new(ws_ptr),
            valid_rows: rows_used.as_ref().map_or(GlobalPtr::new(0), |u| u.device_ptr()),
            m_sum: m32,
            n: n as u32,
            k: k as u32,
            groups: g32,
            splits: plan.splits,
            a_rows,
            valid_base: r0 as u32,
            reserved: 0,
        };
        let grid = u32::try_from(plan.kernel.tiles(m32, n as u32) * u64::from(plan.splits))
            .map_err(|_| Error::Unsupported("grid of 2^32 workgroups or more".into()))?;
        let cfg = config::GemmConfig { grid, ..plan.config(ctx.arch()) };
        // SAFETY: every pointer in `args` addresses memory the views borrow with at least the
        // extent the kernel's contract requires: A a_rows·k bytes and SFA a_rows·⌈k/128⌉ floats
        // (the checked activations view, or its sub-view of the chunk's rows when not
        // gathered, a_rows = rows), B G·⌈n/16⌉·16·k pre-shuffled bytes and SFB
        // G·⌈n/128⌉·⌈k/128⌉ floats (the view's constructor for that layout), D rows·n bf16,
        // m_indices and row_src rows i32 (sub-views of the checked full ones), every tensor
        // below 2 GiB (checked above); the kernel bounds every A access by a_rows whatever
        // row_src holds, and every B access by the group's slice whatever m_indices holds.
        // Split-K: `ws_ptr` addresses at least the plan's workspace need (checked by
        // resolve_with), whose counters are 0 (zeroed at allocation, re-armed by every
        // completed split launch), used by this stream's launches in order only. `d` is
        // borrowed mutably.
        match plan.kernel.spec {
            crate::registry::Spec::ContiguousSplitK(spec) if variant == crate::select::ContiguousVariant::Plain => unsafe {
                stream.launch(spec, [grid, 1, 1], cfg.lds_bytes, &args)?
            },
            #[cfg(feature = "moe")]
            crate::registry::Spec::ContiguousSilu(spec) | crate::registry::Spec::ContiguousSiluQa(spec) => {
                let Some(MoeEpilogue::Silu(si)) = epi.as_mut() else {
                    return Err(Error::Unsupported(format!("{} needs an activation target", plan.kernel.name())));
                };
                let inter = n / 2;
                let blocks0 = r0 / align;
                // The quantizing kernel reads the bf16 rows (and no scales).
                let gemm = match &si.a_bf16 {
                    Some(x) => MGroupedContiguousSplitKArgs { a: GlobalPtr::new(x.device_ptr().addr()), ..args },
                    None => args,
                };
                let sargs = MGroupedContiguousSiluArgs {
                    gemm,
                    silu: MoeSiluArgs {
                        act: GlobalPtr::new(si.act.sub_mut(r0 * inter, rows * inter)?.device_ptr().addr()),
                        act_sf: GlobalPtr::new(si.act_sf.sub_mut(r0 * (inter / 128), rows * (inter / 128))?.device_ptr().addr()),
                        counters: GlobalPtr::new(si.counters.sub_mut(blocks0 * (inter / 128), (rows / align) * (inter / 128))?.device_ptr().addr()),
                        inter: inter as u32,
                        fp8_max: si.fp8_max,
                    },
                };
                // SAFETY: the GEMM's operands as above (with a_bf16: its a.m·k bf16 rows, checked,
                // in place of A and SFA); the epilogue's: act rows·inter bytes,
                // act_sf rows·inter/128 f32 and counters (rows/align)·inter/128 u32 of this
                // chunk (sub-views of the checked ones), the counters 0 (the caller's contract;
                // every completed launch re-arms them), n = 2·inter with inter % 128 == 0
                // (checked above); the kernel reads back only the d rows of this launch.
                unsafe { stream.launch(spec, [grid, 1, 1], cfg.lds_bytes, &sargs)? }
            }
            #[cfg(feature = "moe")]
            crate::registry::Spec::ContiguousScatter(spec) => {
                let (Some(MoeEpilogue::Scatter(sc)), Some((tokens, top_k))) = (epi.as_mut(), scatter_dims) else {
                    return Err(Error::Unsupported(format!("{} needs a scatter target", plan.kernel.name())));
                };
                let too_big = |what: &str, v: usize| Error::Unsupported(format!("{what} = {v}: must fit in 32 bits"));
                let sargs = MGroupedContiguousScatterArgs {
                    gemm: args,
                    scatter: MoeScatterArgs {
                        out: GlobalPtr::new(sc.out.device_ptr().addr()),
                        y: GlobalPtr::new(d.data.device_ptr().addr()),
                        row_token: sc.row_token.sub(r0, rows)?.device_ptr(),
                        slots: sc.slots.device_ptr(),
                        weights: sc.weights.device_ptr(),
                        shared: GlobalPtr::new(sc.shared.as_ref().map_or(0, |s| s.device_ptr().addr())),
                        counters: GlobalPtr::new(sc.counters.device_ptr().addr()),
                        tokens: u32::try_from(tokens).map_err(|_| too_big("tokens", tokens))?,
                        top_k: u32::try_from(top_k).map_err(|_| too_big("top_k", top_k))?,
                        y_rows: m32_total,
                        row0: r0 as u32,
                    },
                };
                // SAFETY: the GEMM's operands as above; the scatter's: out and shared (if any)
                // T·n bf16, slots and weights T·top_k, row_token the chunk's rows (sub-view of
                // the checked m_sum), counters ≥ T·⌈n/128⌉ u32 that are 0 (the caller's
                // contract; every completed launch re-arms them), y the whole D (m_sum·n bf16,
                // of which this launch writes its chunk and reads rows other launches or
                // workgroups stored before counting them in), n % 8 == 0 (all checked above);
                // the kernel skips slots outside 0..m_sum. `out` and `counters` are borrowed
                // mutably.
                unsafe { stream.launch(spec, [grid, 1, 1], cfg.lds_bytes, &sargs)? }
            }
            _ => return Err(Error::Unsupported(format!("{} is not a contiguous split-K kernel", plan.kernel.name()))),
        };
        first.get_or_insert(cfg);
        r0 += rows;
    }
    Ok(GemmRun { config: first, workspace_limit })
}

/// M-grouped masked `D[g] = A[g] · B[g]ᵀ` for the first `masked_m[g]` rows of every group, with
/// block scales (DeepGEMM's `m_grouped_fp8_gemm_nt_masked`).
///
/// `a` is `[G, m_max, k]` (activations of `m = G · m_max` rows), `b` is `[G, n, k]`,
/// `d` holds `G · m_max · n` elements, `masked_m` holds `G` row counts that stay on the device:
/// the kernel clamps each to `0..=m_max` (so a count past `m_max` computes `m_max` rows and a
/// negative one none) and leaves rows at or past it untouched. `expected_m` is the typical
/// count, used only to choose the kernel (any value is accepted; it is clamped to `1..=m_max`).
/// Other requirements as [`m_grouped_fp8_gemm_nt_contiguous`]. The launch is queued on `stream`
/// (asynchronous, capture-safe); `masked_m` is read when it runs, so a graph replays with the
/// counts current at each replay.
///
/// Pre-shuffled weights with few working tiles (decode: small `expected_m`, long `k`) may run
/// **split-K** (`m_grouped_fp8_gemm_nt_masked_splitk_bs_*`, [`fp8gemm_device::grouped`]; split
/// count from `expected_m` by the generated cost model, [`crate::select::plan_grouped`],
/// `FP8GEMM_FORCE_SPLIT` forces it) with the stream's workspace, under the dense split-K rules
/// of [`crate::workspace`]: deterministic, capture-safe, correct for any `masked_m`; if the
/// preferred split does not fit the stream's workspace the best one that fits runs and
/// [`GemmRun::workspace_limit`] says so; a forced split that does not fit is an
/// [`Error::Workspace`]. A split result is within the kernels' accuracy but not bit-identical to
/// the unsplit (logical-B) kernels' result.
/// [`m_grouped_fp8_gemm_nt_masked_with_workspace`] takes the workspace explicitly.
pub fn m_grouped_fp8_gemm_nt_masked<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<ActivationsView<'a, F>>,
    b: impl Into<GroupedWeightsView<'a, F>>,
    d: impl IntoOutput<'a>,
    masked_m: impl Into<DeviceSlice<'a, i32>>,
    expected_m: usize,
) -> Result<GemmRun> {
    masked(stream, a.into(), b.into(), d, masked_m.into(), expected_m, WorkspaceSource::Stream)
}

/// [`m_grouped_fp8_gemm_nt_masked`] with an explicit split-K workspace, as
/// [`crate::fp8_gemm_nt_with_workspace`] is to [`crate::fp8_gemm_nt`]: the configuration is the
/// one the model prefers ([`crate::select::plan_grouped`] with no
/// workspace limit; `FP8GEMM_FORCE_SPLIT` forces the split), and a `workspace` smaller than
/// its need (`crate::config::GemmConfig::workspace_floats`) is an [`Error::Workspace`] naming
/// `workspace` (nothing is launched). Only pre-shuffled weights ever split K, so logical ones
/// run as [`m_grouped_fp8_gemm_nt_masked`] does and leave the workspace unused. The workspace
/// must belong to the stream's context, and no other launch may use it until this one has
/// completed (launches on one stream are ordered; across streams, order them with an
/// [`Event`](crate::Event)).
pub fn m_grouped_fp8_gemm_nt_masked_with_workspace<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<ActivationsView<'a, F>>,
    b: impl Into<GroupedWeightsView<'a, F>>,
    d: impl IntoOutput<'a>,
    masked_m: impl Into<DeviceSlice<'a, i32>>,
    expected_m: usize,
    workspace: &mut Workspace,
) -> Result<GemmRun> {
    masked(stream, a.into(), b.into(), d, masked_m.into(), expected_m, WorkspaceSource::Explicit(workspace))
}

fn masked<'a, F: Fp8Format>(
    stream: &Stream,
    a: ActivationsView<'a, F>,
    b: GroupedWeightsView<'a, F>,
    d: impl IntoOutput<'a>,
    masked_m: DeviceSlice<'a, i32>,
    expected_m: usize,
    ws: WorkspaceSource<'_>,
) -> Result<GemmRun> {
    let (rows, n, k, groups) = (a.m, b.n, a.k, b.groups);
    let d = d.into_output(rows, n)?;
    check_common(stream, &a, &b, &d, "masked_m", &masked_m)?;
    // The stream's selector overrides, passed to the choice.
    let overrides = stream.overrides();
    let ctx = stream.context();
    check_count("masked_m", &format!("G = {groups} (groups of b)"), groups, masked_m.len())?;
    if groups == 0 {
        check_count("a", "G · m_max rows with G = 0", 0, rows)?;
        return Ok(GemmRun { config: None, workspace_limit: None });
    }
    if !rows.is_multiple_of(groups) {
        return Err(Error::Shape { arg: "a", expected: format!("G · m_max rows with G = {groups} (groups of b)"), actual: format!("{rows} rows") });
    }
    let m_max = rows / groups;
    if m_max == 0 || n == 0 {
        return Ok(GemmRun { config: None, workspace_limit: None });
    }
    check_nk(n, k)?;
    let too_big = |what: &str| Error::Unsupported(format!("{what}: dimensions must fit in 32 bits"));
    let m32 = u32::try_from(m_max).map_err(|_| too_big(&format!("m_max = {m_max}")))?;
    let g32 = u32::try_from(groups).map_err(|_| too_big(&format!("groups = {groups}")))?;
    let (r64, n64, k64) = (rows as u64, n as u64, k as u64);
    check_tensor_bytes("a", r64.saturating_mul(k64))?;
    check_tensor_bytes("a", (m32 as u64 + 128).saturating_mul(k64))?;
    check_tensor_bytes("b", (n64 + 128).saturating_mul(k64))?;
    // One group of B below 2 GiB (the kernels address each group from its own 64-bit base).
    check_tensor_bytes("b", b_group_bytes(b.layout, n64, k64))?;
    check_tensor_bytes("d", r64.saturating_mul(n64).saturating_mul(2))?;

    let expected = u32::try_from(expected_m).unwrap_or(u32::MAX);
    let desc = GemmDesc::m_grouped_masked(m32, n as u32, k as u32, g32, expected, ctx.arch()).with_cus(ctx.compute_units());
    if b.layout == WeightLayout::Preshuffled {
        // The bs kernels: maybe split-K (masked only), with the stream's workspace or the
        // caller's (checked to hold the config's need, which is 0 unsplit).
        let choose = |available: u64| config::get_grouped_bs_config_for_workspace(&desc, &overrides, available).map_err(|e| Error::Unsupported(e.to_string()));
        let (ws_ptr, cfg, workspace_limit) = ws.resolve(stream, choose)?;
        if cfg.splits > 1 {
            let spec = config::masked_splitk_bs_kernel_spec(&cfg)
                .ok_or_else(|| Error::Unsupported(format!("configuration {cfg} has no m-grouped masked split-K kernel")))?;
            let args = MGroupedMaskedSplitKArgs {
                a: a.data.device_ptr(),
                b: b.data.device_ptr(),
                sfa: a.scales.device_ptr(),
                sfb: b.scales.device_ptr(),
                d: GlobalPtr::new(d.data.device_ptr().addr()),
                masked_m: masked_m.device_ptr(),
                ws: GlobalPtr::new(ws_ptr),
                m_max: m32,
                n: n as u32,
                k: k as u32,
                groups: g32,
                splits: cfg.splits,
                order: cfg.remap.masked_order(),
            };
            // SAFETY: the operands as for the unsplit launch below; plus the workspace: `ws_ptr`
            // addresses at least the config's need = tile::splitk_workspace_floats(…) f32 (checked by WorkspaceSource::resolve,
            // below 2^31 bytes) that the source keeps live — the stream owns its workspace and
            // runs its launches in order; an explicit one is borrowed mutably for the call and,
            // by the function's contract, not used by another launch until this one completes.
            // Its counters (the fixed region at its start, where no partial sum is ever written)
            // are 0 when the workspace is allocated (zeroed), and every completed split-K launch
            // re-arms them.
            unsafe { stream.launch(spec, [cfg.grid, 1, 1], cfg.lds_bytes, &args)? };
            return Ok(GemmRun { config: Some(cfg), workspace_limit });
        }
        let spec = config::masked_bs_kernel_spec(&cfg)
            .ok_or_else(|| Error::Unsupported(format!("configuration {cfg} has no m-grouped masked kernel for {} weights", b.layout)))?;
        launch_masked(stream, spec, &cfg, &a, &b, &d, &masked_m, m32, g32)?;
        return Ok(GemmRun { config: Some(cfg), workspace_limit });
    }
    let (cfg, spec) = grouped_config(&desc, &overrides, b.layout, "masked", config::masked_kernel_spec, config::masked_bs_kernel_spec)?;
    launch_masked(stream, spec, &cfg, &a, &b, &d, &masked_m, m32, g32)?;
    Ok(GemmRun { config: Some(cfg), workspace_limit: None })
}

/// Launches an unsplit masked kernel on operands [`m_grouped_fp8_gemm_nt_masked`] checked.
#[allow(clippy::too_many_arguments)]
fn launch_masked<F: Fp8Format>(
    stream: &Stream,
    spec: KernelSpec<MGroupedMaskedArgs>,
    cfg: &config::GemmConfig,
    a: &ActivationsView<'_, F>,
    b: &GroupedWeightsView<'_, F>,
    d: &OutputViewMut<'_>,
    masked_m: &DeviceSlice<'_, i32>,
    m32: u32,
    g32: u32,
) -> Result<()> {
    let args = MGroupedMaskedArgs {
        a: a.data.device_ptr(),
        b: b.data.device_ptr(),
        sfa: a.scales.device_ptr(),
        sfb: b.scales.device_ptr(),
        d: GlobalPtr::new(d.data.device_ptr().addr()),
        masked_m: masked_m.device_ptr(),
        m_max: m32,
        n: b.n as u32,
        k: a.k as u32,
        groups: g32,
        order: cfg.remap.masked_order(),
        reserved: 0,
    };
    // SAFETY: every pointer in `args` addresses memory the views borrow with at least the extent
    // the kernel's contract requires: A G·m_max·k bytes and SFA G·m_max·⌈k/128⌉ floats, B (in
    // the layout whose kernel was chosen) and SFB for G groups (checked by the view
    // constructors for that layout, contiguous rows checked by the caller), D
    // G·m_max·n bf16 and masked_m G i32 (checked by the caller); the kernel clamps every masked_m
    // entry to 0..=m_max, so its accesses stay inside these extents. The caller borrows `d`
    // mutably.
    unsafe { stream.launch(spec, [cfg.grid, 1, 1], cfg.lds_bytes, &args)? };
    Ok(())
}

// The test compares with the CPU reference's alignment constant.
#[cfg(all(test, feature = "reference"))]
mod tests {
    use super::*;
    use crate::reference::contiguous_m_indices;

    #[test]
    fn alignment_is_a_multiple_of_every_contiguous_tile() {
        assert_eq!(m_alignment_for_contiguous_layout(), crate::reference::M_ALIGNMENT_CONTIGUOUS);
        for t in tile::CONTIGUOUS_TILES {
            assert_eq!(m_alignment_for_contiguous_layout() % t.block_m as usize, 0, "{}", t.name);
        }
        for t in tile::CONTIGUOUS_BS_TILES {
            assert_eq!(m_alignment_for_contiguous_layout() % t.block_m as usize, 0, "{}", t.name);
        }
    }

    #[test]
    fn m_indices_validation() {
        let ok = contiguous_m_indices(&[5, 0, 300, 128, 1], 128);
        assert_eq!(ok.len(), 128 + 384 + 128 + 128);
        validate_m_indices(&ok, 5).unwrap();
        // An extra all-padding block anywhere is fine.
        let mut pad = vec![-1; 128];
        pad.extend_from_slice(&ok);
        validate_m_indices(&pad, 5).unwrap();
        let err = |v: &[i32], g| validate_m_indices(v, g).unwrap_err().to_string();
        // Group out of range (5 groups, index 4 used → needs at least 5).
        assert!(err(&ok, 4).contains("m_indices[640] = 4"), "{}", err(&ok, 4));
        let mut bad = ok.clone();
        bad[3] = -2;
        assert!(err(&bad, 5).contains("m_indices[3] = -2"));
        // Two groups in one block.
        let mut bad = ok.clone();
        bad[7] = 2;
        assert!(err(&bad, 5).contains("m_indices[7] = 2 after m_indices[6] = -1"), "{}", err(&bad, 5));
        // A group row after padding inside one block.
        let mut bad = vec![-1; 128];
        bad[127] = 0;
        assert!(err(&bad, 1).contains("m_indices[127] = 0 after m_indices[126] = -1"));
        // Length not a multiple of the alignment.
        assert!(err(&ok[..100], 5).contains("multiple of 128"));
    }
}
