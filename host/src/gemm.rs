//! The GEMM entry points: FP8 × FP8 → BF16 with DeepGEMM's block scales.
//!
//! Every entry point takes the [`Stream`] to run on and [views](crate::view) of its operands
//! (the owned [`DeviceActivations`] / [`DeviceWeights`] convert to views with `&`), checks
//! everything the host knows — matching K, output shape, row strides, FP8 format versus the
//! device's architecture, the kernels' alignment limits, buffer ownership — and returns a typed
//! [`Error`] before anything is launched. The launch itself is asynchronous and stream-ordered:
//! nothing in it allocates, frees, copies to or from the host or synchronizes, so it can be
//! captured into a graph ([`Stream::begin_capture`]).
//!
//! Device layouts (row-major; see [`crate::view`]):
//! * A: `m × k` FP8 with row stride `lda ≥ k`, SFA: `m × ⌈k/128⌉` f32 (one scale per row and
//!   128-wide K block);
//! * B: `n × k` FP8, SFB: `⌈n/128⌉ × ⌈k/128⌉` f32 (one scale per 128 × 128 block); B's
//!   [layout](crate::layout) travels with its view: logical weights run the dense / m-grouped
//!   kernels, pre-shuffled ones the bs kernels ([`fp8gemm_device::mainloop_bs`]);
//! * D: `m × n` BF16 with row stride `ldd ≥ n`.

use std::marker::PhantomData;
use std::num::NonZeroU32;

use fp8gemm_device::args::{DenseGemmArgs, DenseSplitKArgs, GlobalPtr};
use fp8gemm_device::streamk::DenseStreamKArgs;
use fp8gemm_device::tile;

use crate::checks::{check_format, check_len, check_scales, check_tensor_bytes, shape_product};
use crate::codeobj::Arch;
use crate::config::{self, GemmConfig, GemmDesc};
use crate::error::{Error, Result};
use crate::fp8::{E4M3Fn, E4M3Fnuz, Fp8Format};
use crate::layout::WeightLayout;
use crate::quant::{QuantizedActivations, QuantizedWeights};
use crate::registry::{Problem, ScheduleKind, Spec};
use crate::runtime::{Context, DeviceBuffer, Stream};
use crate::select::{self, Plan};
use crate::view::{ActivationsView, IntoOutput, WeightsView};
use crate::workspace::Workspace;

/// The FP8 format an architecture's FP8 MFMA decodes (`fp8` operands).
pub fn fp8_format_name(arch: Arch) -> &'static str {
    match arch {
        Arch::Gfx942 => E4M3Fnuz::NAME,
        Arch::Gfx950 => E4M3Fn::NAME,
    }
}

/// FP8 activations on the device: `m × k` values with 1×128 scales.
pub struct DeviceActivations<F> {
    data: DeviceBuffer<u8>,
    scales: DeviceBuffer<f32>,
    m: usize,
    k: usize,
    _f: PhantomData<F>,
}

impl<F: Fp8Format> DeviceActivations<F> {
    /// Copies quantized activations to the device. `a.data` must hold `m·k` values and
    /// `a.scales` `m·⌈k/128⌉` scales, each 0 or of magnitude in `[2^-24, 2^94)` (the range the
    /// kernels compute exactly, [`tile::MIN_SCALE`]; DeepGEMM's recipe stays inside it for inputs
    /// below ≈ 4.7e30).
    pub fn upload(ctx: &Context, a: &QuantizedActivations<F>) -> Result<Self> {
        let shape = format!("m = {}, k = {}", a.m, a.k);
        check_len("a", "data", a.data.len(), shape_product("a", &[a.m, a.k], "m · k")?, &shape)?;
        check_len("a", "scales", a.scales.len(), shape_product("a", &[a.m, a.k.div_ceil(128)], "m · ⌈k/128⌉")?, &shape)?;
        check_scales("a.scales", &a.scales)?;
        Ok(DeviceActivations { data: ctx.upload(crate::fp8::as_bits(&a.data))?, scales: ctx.upload(&a.scales)?, m: a.m, k: a.k, _f: PhantomData })
    }
    /// Allocates zeroed activations of `m × k` values and `m × ⌈k/128⌉` scales on the device, to
    /// be filled there (e.g. by [`crate::quantize::quantize_activations`]).
    pub fn alloc(ctx: &Context, m: usize, k: usize) -> Result<Self> {
        let values = shape_product("m", &[m, k], "m · k")?;
        let scales = shape_product("m", &[m, k.div_ceil(128)], "m · ⌈k/128⌉")?;
        Ok(DeviceActivations { data: ctx.alloc_zeroed(values)?, scales: ctx.alloc_zeroed(scales)?, m, k, _f: PhantomData })
    }
    /// Copies the values and scales back to the host as [`QuantizedActivations`], in order on
    /// `stream` (then waits for it).
    pub fn download(&self, stream: &Stream) -> Result<QuantizedActivations<F>> {
        let data = self.data.download(stream)?.into_iter().map(F::from_bits).collect();
        let scales = self.scales.download(stream)?;
        QuantizedActivations::from_parts(data, scales, self.m, self.k).map_err(|e| Error::Unsupported(format!("downloaded activations: {e}")))
    }
    /// Rows.
    pub fn m(&self) -> usize {
        self.m
    }
    /// Columns (the reduction length).
    pub fn k(&self) -> usize {
        self.k
    }
    /// A view of the activations (what the entry points take).
    pub fn view(&self) -> ActivationsView<'_, F> {
        ActivationsView::new(self.data.as_slice(), self.scales.as_slice(), self.m, self.k).expect("an upload's buffers have exactly the lengths of its shape")
    }
}

impl<'a, F: Fp8Format> From<&'a DeviceActivations<F>> for ActivationsView<'a, F> {
    fn from(a: &'a DeviceActivations<F>) -> Self {
        a.view()
    }
}

impl<'a, F: Fp8Format> From<&'a mut DeviceActivations<F>> for crate::view::ActivationsViewMut<'a, F> {
    fn from(a: &'a mut DeviceActivations<F>) -> Self {
        let (m, k) = (a.m, a.k);
        crate::view::ActivationsViewMut::new(a.data.as_slice_mut(), a.scales.as_slice_mut(), m, k)
            .expect("the owned buffers have exactly the lengths of their shape")
    }
}

/// FP8 weights on the device: `n × k` values with 128×128 block scales, in a [`WeightLayout`]:
/// logical (row-major: [`Self::upload`], [`Self::alloc`]) or pre-shuffled for the kernels that
/// read B straight into registers ([`Self::upload_preshuffled`], [`Self::alloc_preshuffled`],
/// [`Self::to_preshuffled`]; see [`crate::layout`]). [`Self::download`] returns the logical
/// layout either way.
pub struct DeviceWeights<F> {
    data: DeviceBuffer<u8>,
    scales: DeviceBuffer<f32>,
    n: usize,
    k: usize,
    layout: WeightLayout,
    _f: PhantomData<F>,
}

impl<F: Fp8Format> DeviceWeights<F> {
    /// Copies quantized weights to the device. `b.data` must hold `n·k` values and `b.scales`
    /// `⌈n/128⌉·⌈k/128⌉` scales, each 0 or of magnitude in `[2^-24, 2^94)` ([`tile::MIN_SCALE`]).
    pub fn upload(ctx: &Context, b: &QuantizedWeights<F>) -> Result<Self> {
        Self::upload_with_layout(ctx, b, WeightLayout::Logical)
    }
    /// Copies quantized weights (logical, as [`Self::upload`] checks them) to the device in the
    /// pre-shuffled layout ([`crate::layout::preshuffle_weights`], done on the host; rows padded
    /// to 16 with zeros). Additionally `b.k` must be a multiple of 128 ([`Error::Shape`],
    /// argument `k`).
    pub fn upload_preshuffled(ctx: &Context, b: &QuantizedWeights<F>) -> Result<Self> {
        Self::upload_with_layout(ctx, b, WeightLayout::Preshuffled)
    }
    /// [`Self::upload`] or [`Self::upload_preshuffled`], by `layout`.
    pub fn upload_with_layout(ctx: &Context, b: &QuantizedWeights<F>, layout: WeightLayout) -> Result<Self> {
        let shape = format!("n = {}, k = {}", b.n, b.k);
        check_len("b", "data", b.data.len(), shape_product("b", &[b.n, b.k], "n · k")?, &shape)?;
        let nkb = [b.n.div_ceil(128), b.k.div_ceil(128)];
        check_len("b", "scales", b.scales.len(), shape_product("b", &nkb, "⌈n/128⌉ · ⌈k/128⌉")?, &shape)?;
        check_scales("b.scales", &b.scales)?;
        let data = match layout {
            WeightLayout::Logical => ctx.upload(crate::fp8::as_bits(&b.data))?,
            WeightLayout::Preshuffled => ctx.upload(&crate::layout::preshuffle_weights(b)?)?,
        };
        Ok(DeviceWeights { data, scales: ctx.upload(&b.scales)?, n: b.n, k: b.k, layout, _f: PhantomData })
    }
    /// Allocates zeroed weights of `n × k` values and `⌈n/128⌉ × ⌈k/128⌉` scales on the device,
    /// to be filled there (e.g. by [`crate::quantize::quantize_weights`]).
    pub fn alloc(ctx: &Context, n: usize, k: usize) -> Result<Self> {
        Self::alloc_with_layout(ctx, n, k, WeightLayout::Logical)
    }
    /// Allocates zeroed pre-shuffled weights (`⌈n/16⌉·16·k` bytes, `k` a multiple of 128:
    /// [`Error::Shape`], argument `k`) and `⌈n/128⌉ × ⌈k/128⌉` scales on the device, to be filled
    /// there (e.g. by [`crate::layout::preshuffle_weights_on_device`]).
    pub fn alloc_preshuffled(ctx: &Context, n: usize, k: usize) -> Result<Self> {
        Self::alloc_with_layout(ctx, n, k, WeightLayout::Preshuffled)
    }
    /// [`Self::alloc`] or [`Self::alloc_preshuffled`], by `layout`.
    pub fn alloc_with_layout(ctx: &Context, n: usize, k: usize, layout: WeightLayout) -> Result<Self> {
        let values = layout.data_bytes(n, k)?;
        let scales = shape_product("n", &[n.div_ceil(128), k.div_ceil(128)], "⌈n/128⌉ · ⌈k/128⌉")?;
        Ok(DeviceWeights { data: ctx.alloc_zeroed(values)?, scales: ctx.alloc_zeroed(scales)?, n, k, layout, _f: PhantomData })
    }
    /// These weights in the pre-shuffled layout, converted on the device
    /// ([`crate::layout::preshuffle_weights_on_device`], queued on `stream`; the new buffers are
    /// allocated first, so not on a capturing stream). Requires logical weights
    /// ([`Error::Layout`], argument `self`) with `k` a multiple of 128.
    pub fn to_preshuffled(&self, stream: &Stream) -> Result<Self> {
        if self.layout != WeightLayout::Logical {
            return Err(Error::Layout { arg: "self", expected: WeightLayout::Logical, actual: self.layout, reason: "to_preshuffled converts logical weights" });
        }
        stream.forbid_capture("allocating pre-shuffled weights")?;
        let mut out = Self::alloc_preshuffled(stream.context(), self.n, self.k)?;
        crate::layout::preshuffle_weights_on_device(stream, self, &mut out)?;
        Ok(out)
    }
    /// Copies the values and scales back to the host as [`QuantizedWeights`] in the **logical**
    /// layout (pre-shuffled weights are unshuffled on the host), in order on `stream` (then
    /// waits for it).
    pub fn download(&self, stream: &Stream) -> Result<QuantizedWeights<F>> {
        let bytes = self.data.download(stream)?;
        let scales = self.scales.download(stream)?;
        match self.layout {
            WeightLayout::Logical => QuantizedWeights::from_parts(bytes.into_iter().map(F::from_bits).collect(), scales, self.n, self.k)
                .map_err(|e| Error::Unsupported(format!("downloaded weights: {e}"))),
            WeightLayout::Preshuffled => crate::layout::unshuffle_weights(&bytes, scales, self.n, self.k),
        }
    }
    /// Rows (output columns).
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
    pub fn view(&self) -> WeightsView<'_, F> {
        WeightsView::with_layout(self.data.as_slice(), self.scales.as_slice(), self.n, self.k, self.layout)
            .expect("an upload's buffers have exactly the lengths of its shape")
    }
}

impl<'a, F: Fp8Format> From<&'a DeviceWeights<F>> for WeightsView<'a, F> {
    fn from(b: &'a DeviceWeights<F>) -> Self {
        b.view()
    }
}

impl<'a, F: Fp8Format> From<&'a mut DeviceWeights<F>> for crate::view::WeightsViewMut<'a, F> {
    fn from(b: &'a mut DeviceWeights<F>) -> Self {
        let (n, k, layout) = (b.n, b.k, b.layout);
        crate::view::WeightsViewMut::with_layout(b.data.as_slice_mut(), b.scales.as_slice_mut(), n, k, layout)
            .expect("the owned buffers have exactly the lengths of their shape")
    }
}

/// What a GEMM call did: the configuration it chose (`None` when the problem was empty and
/// nothing was launched).
#[derive(Clone, Debug)]
pub struct GemmRun {
    /// The chosen configuration.
    pub config: Option<GemmConfig>,
    /// Set when the model preferred a split-K configuration the stream's workspace could not
    /// hold, and `config` is the best one that fits instead (see [`crate::workspace`]).
    pub workspace_limit: Option<config::WorkspaceLimit>,
}

/// Dense `D = A · Bᵀ` with block scales (DeepGEMM's `fp8_gemm_nt`), queued on `stream`:
/// `D[i,j] = bf16(Σ_kb SFA[i,kb] · SFB[⌊j/128⌋,kb] · Σ_{k∈kb} A[i,k] · B[j,k])`.
///
/// `a` is an [`ActivationsView`] (or `&DeviceActivations`), `b` a [`WeightsView`] (or
/// `&DeviceWeights`), `d` an [`OutputViewMut`](crate::view::OutputViewMut) of `m × n`, or a
/// buffer / slice of exactly `m · n` elements. Requirements: `k` a positive multiple of 128, `n`
/// a multiple of 4 (DeepGEMM requires 64), any `m`; A's row stride a multiple of 16 bytes and
/// D's a multiple of 4 elements; the FP8 format must be the one the device decodes (E4M3FNUZ on
/// gfx942, E4M3FN on gfx950 — see [`crate::quant`] for converting checkpoints); every operand
/// must belong to the stream's context (views from raw pointers belong to any).
///
/// `b` may be in either [layout](crate::layout): logical weights run the dense kernels
/// ([`fp8gemm_device::dense`], with split-K for small problems), **pre-shuffled** weights
/// ([`DeviceWeights::upload_preshuffled`], [`DeviceWeights::to_preshuffled`]) run the bs kernels
/// ([`fp8gemm_device::mainloop_bs`]: B straight from global memory into the MFMA operands; with
/// split-K or stream-K over the same loop where `config::get_bs_config_for_workspace` prefers
/// them). Same result either way (up to the FP32 summation order when K is split).
///
/// The launch is asynchronous and capture-safe: the result is in `d` once `stream` has reached
/// it (synchronize the stream, or order another stream after it with an
/// [`Event`](crate::Event)). Errors of the kernel itself (on the emulator: its checking modes)
/// are reported by the stream's next synchronization.
///
/// A launch that splits K (small `m · n`, long `k`; see [`crate::workspace`]) uses the stream's
/// workspace ([`Stream::workspace`]); if the configuration the model prefers needs more than
/// it holds, the best configuration that fits runs instead and [`GemmRun::workspace_limit`]
/// says so. [`fp8_gemm_nt_with_workspace`] takes the workspace explicitly.
pub fn fp8_gemm_nt<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<ActivationsView<'a, F>>,
    b: impl Into<WeightsView<'a, F>>,
    d: impl IntoOutput<'a>,
) -> Result<GemmRun> {
    dense(stream, a.into(), b.into(), d, WorkspaceSource::Stream, None)
}

/// [`fp8_gemm_nt`] with an explicit workspace: the configuration is the one the model prefers
/// (`crate::config::get_best_config`), and a `workspace` smaller than its need
/// ([`crate::workspace_floats`]) is an [`Error::Workspace`] (nothing is launched). The
/// workspace must belong to the stream's context, and no other launch may use it until this
/// one has completed (launches on one stream are ordered; across streams, order them with an
/// [`Event`](crate::Event)).
pub fn fp8_gemm_nt_with_workspace<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<ActivationsView<'a, F>>,
    b: impl Into<WeightsView<'a, F>>,
    d: impl IntoOutput<'a>,
    workspace: &mut Workspace,
) -> Result<GemmRun> {
    dense(stream, a.into(), b.into(), d, WorkspaceSource::Explicit(workspace), None)
}

/// [`fp8_gemm_nt`] with the launch given instead of chosen: `plan` is one of
/// [`crate::select::candidates`] for this problem (a tuner or an evaluation times every
/// candidate this way). Its workspace comes from `workspace`, or the stream's when `None`;
/// a shortfall is an [`Error::Workspace`]. A plan of another problem, weight layout or shape is
/// an [`Error::Unsupported`] naming it.
pub fn fp8_gemm_nt_with_plan<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<ActivationsView<'a, F>>,
    b: impl Into<WeightsView<'a, F>>,
    d: impl IntoOutput<'a>,
    plan: &Plan,
    workspace: Option<&mut Workspace>,
) -> Result<GemmRun> {
    let ws = match workspace {
        Some(w) => WorkspaceSource::Explicit(w),
        None => WorkspaceSource::Stream,
    };
    dense(stream, a.into(), b.into(), d, ws, Some(plan))
}

/// Where a launch's split-K / stream-K workspace comes from (dense and m-grouped masked).
pub(crate) enum WorkspaceSource<'w> {
    /// The stream's (a shortfall falls back to a config that fits, reported; a forced split
    /// that does not fit is an error).
    Stream,
    /// The caller's (a shortfall is an error).
    Explicit(&'w mut Workspace),
}

impl WorkspaceSource<'_> {
    /// The workspace of a launch on `stream` and its config: `choose(available)` gets the
    /// stream workspace's length (clamped to what the kernels' 32-bit byte offsets address),
    /// or no limit for the caller's workspace (whose owner must be the stream's context).
    /// Returns the workspace's device address, the config and its workspace limit, after
    /// checking that the config's need fits (else [`Error::Workspace`] naming the source).
    pub(crate) fn resolve(
        self,
        stream: &Stream,
        choose: impl Fn(u64) -> Result<(GemmConfig, Option<config::WorkspaceLimit>)>,
    ) -> Result<(u64, GemmConfig, Option<config::WorkspaceLimit>)> {
        self.resolve_with(stream, choose, GemmConfig::workspace_floats)
    }

    /// [`Self::resolve`] for any launch description `T` whose workspace need `need` gives.
    pub(crate) fn resolve_with<T>(
        self,
        stream: &Stream,
        choose: impl Fn(u64) -> Result<(T, Option<config::WorkspaceLimit>)>,
        need: impl Fn(&T) -> u64,
    ) -> Result<(u64, T, Option<config::WorkspaceLimit>)> {
        // The kernels address the workspace with 32-bit byte offsets.
        let addressable = tile::MAX_TENSOR_BYTES / 4 - 1;
        let (ptr, len, arg, (cfg, limit)) = match self {
            WorkspaceSource::Stream => {
                let (ptr, len) = stream.workspace().map_or((0, 0), |w| (w.device_ptr().addr(), w.len() as u64));
                (ptr, len, "the stream's workspace", choose(len.min(addressable))?)
            }
            WorkspaceSource::Explicit(w) => {
                stream.context().check_owner("workspace", w.owner())?;
                (w.device_ptr().addr(), w.len() as u64, "workspace", (choose(u64::MAX)?.0, None))
            }
        };
        let needed = need(&cfg);
        if needed > len.min(addressable) {
            return Err(Error::Workspace { arg, needed, available: len });
        }
        Ok((ptr, cfg, limit))
    }
}

fn dense<'a, F: Fp8Format>(
    stream: &Stream,
    a: ActivationsView<'a, F>,
    b: WeightsView<'a, F>,
    d: impl IntoOutput<'a>,
    ws: WorkspaceSource<'_>,
    forced: Option<&Plan>,
) -> Result<GemmRun> {
    // The stream's selector overrides, passed to the selector.
    let overrides = stream.overrides();
    let ctx = stream.context();
    check_format::<F>(ctx, "a")?;
    let preshuffled = b.layout == WeightLayout::Preshuffled;
    let (m, n, k) = (a.m, b.n, a.k);
    let owners = [("a", a.data.owner()), ("a", a.scales.owner()), ("b", b.data.owner()), ("b", b.scales.owner())];
    let Some(d) = crate::checks::dense_operands(ctx, &owners, (m, n, k), b.k, d)? else {
        return Ok(GemmRun { config: None, workspace_limit: None });
    };
    if !a.lda.is_multiple_of(16) {
        return Err(Error::Shape { arg: "lda", expected: "a multiple of 16 bytes".into(), actual: a.lda.to_string() });
    }
    if !d.ldd.is_multiple_of(4) {
        return Err(Error::Shape { arg: "ldd", expected: "a multiple of 4 elements".into(), actual: d.ldd.to_string() });
    }
    // The kernels address tiles past the last row through range-checked buffer loads: the
    // padded extents must stay within 32-bit offsets too.
    let (m64, n64, k64) = (m as u64, n as u64, k as u64);
    check_tensor_bytes("a", (m64 + 128).saturating_mul(a.lda as u64))?;
    check_tensor_bytes("b", (n64 + 128).saturating_mul(k64))?;
    check_tensor_bytes("d", (m64 + 128).saturating_mul(d.ldd as u64).saturating_mul(2))?;

    // The device's own CU count sizes a stream-K grid.
    let desc = GemmDesc::dense(m as u32, n as u32, k as u32, ctx.arch()).with_cus(ctx.compute_units());
    if preshuffled {
        // The view's constructor checked this already; the kernels read exactly this extent.
        let need = tile::shuffled_b_bytes(n64, k64);
        if (b.data.len() as u64) < need {
            return Err(Error::Shape {
                arg: "b",
                expected: format!("at least ⌈n/16⌉·16·k = {need} bytes of pre-shuffled data (n = {n}, k = {k})"),
                actual: format!("{} bytes", b.data.len()),
            });
        }
    }
    // The plan: the selector's over every registered kernel for B's layout, or the caller's.
    let arch = ctx.arch();
    if let Some(p) = forced {
        let (kern, nkb) = (p.kernel, k as u32 / tile::SCALE_BLOCK_K);
        let k = kern;
        if k.problem != Problem::Dense || k.weights != b.layout {
            return Err(Error::Unsupported(format!("plan {p}: a {} kernel on {} weights, not a dense one on {} weights", k.problem, k.weights, b.layout)));
        }
        let tiles = k.tiles(m as u32, n as u32);
        let expected_grid = match p.stream_k {
            Some(sk) => u64::from(sk.dp_tiles) + u64::from(sk.sk_wgs),
            None => tiles * u64::from(p.splits.max(1)),
        };
        let sk_ok = p.stream_k.is_none_or(|sk| u64::from(sk.tiles) == tiles && sk.nkb == nkb);
        let kind_ok = match k.schedule {
            ScheduleKind::DataParallel => p.splits == 1 && p.stream_k.is_none(),
            ScheduleKind::SplitK => p.splits > 1 && p.stream_k.is_none() && tiles <= u64::from(k.max_tiles),
            ScheduleKind::StreamK => p.stream_k.is_some(),
        };
        if u64::from(p.grid) != expected_grid || !sk_ok || !kind_ok {
            return Err(Error::Unsupported(format!("plan {p} (grid {}) does not fit the {m}x{n}x{k} problem", p.grid)));
        }
    }
    let choose = |available: u64| match forced {
        Some(p) => Ok((*p, None)),
        None => select::plan(&desc, b.layout, &overrides, available).map_err(|e| Error::Unsupported(e.to_string())),
    };
    let (ws_ptr, plan, workspace_limit) = ws.resolve_with(stream, choose, |p: &Plan| p.workspace_floats(arch))?;
    let cfg = plan.config(arch);
    if forced.is_none() {
        config::report_choice(&desc, &cfg, &plan.label(), plan.estimate_s, workspace_limit.as_ref());
    }
    let (a_ptr, b_ptr, sfa, sfb) = (a.data.device_ptr(), b.data.device_ptr(), a.scales.device_ptr(), b.scales.device_ptr());
    let d_ptr = GlobalPtr::new(d.data.device_ptr().addr());
    let (m, n, k, lda, ldd) = (m as u32, n as u32, k as u32, a.lda as u32, d.ldd as u32);
    match plan.kernel.spec {
        Spec::DenseStreamK(spec) => {
            let sk = plan.stream_k.ok_or_else(|| Error::Unsupported(format!("plan {plan}: a stream-K kernel without a schedule")))?;
            // The selector only makes valid schedules (a caller's plan is checked here).
            if sk.schedule().is_none() {
                return Err(Error::Unsupported(format!("plan {plan}: not a valid stream-K schedule")));
            }
            let args = DenseStreamKArgs {
                a: a_ptr,
                b: b_ptr,
                sfa,
                sfb,
                d: d_ptr,
                ws: GlobalPtr::new(ws_ptr),
                m,
                n,
                k,
                lda,
                ldd,
                dp_tiles: sk.dp_tiles,
                sk_wgs: sk.sk_wgs,
                reserved: 0,
            };
            // SAFETY: as for the split-K launch below: the operands as for the non-split launch (B
            // pre-shuffled, ⌈n/16⌉·16·k bytes checked above, for the bs stream-K kernels), and
            // `ws_ptr` addresses at least the plan's need = StreamKSchedule::workspace_floats(…) f32
            // (checked by WorkspaceSource::resolve_with, below 2^31 bytes) kept live by its source and used by no other launch
            // until this one completes; its counters (the fixed region at its start, where no
            // partial sum is ever written) are 0 at launch and re-armed by every completed launch.
            unsafe { stream.launch(spec, [plan.grid, 1, 1], cfg.lds_bytes, &args)? };
        }
        Spec::DenseSplitK(spec) => {
            let (Some(splits), Some(block_m)) = (NonZeroU32::new(plan.splits), NonZeroU32::new(cfg.block_m)) else {
                return Err(Error::Unsupported(format!("plan {plan}: split-K needs a split count and a tile height of at least 1")));
            };
            let args = DenseSplitKArgs::new(a_ptr, b_ptr, sfa, sfb, d_ptr, GlobalPtr::new(ws_ptr), m, n, k, lda, ldd, splits, block_m);
            // The split-K kernels' counter region bounds their tile count (the registry row's
            // `max_tiles`; the bs kernels on the pipelined loop count arrivals per wave).
            if u64::from(cfg.tiles()) > u64::from(plan.kernel.max_tiles) {
                return Err(Error::Unsupported(format!("plan {plan}: split-K launches of this kernel have at most {} output tiles", plan.kernel.max_tiles)));
            }
            // SAFETY: as for the non-split launch below, plus the workspace: `ws_ptr` addresses at
            // least the plan's need = tile::splitk_workspace_floats(…) f32 (checked by WorkspaceSource::resolve_with) that the source
            // keeps live — the stream owns its workspace; an explicit one is borrowed mutably for
            // the call and, by this function's contract, not used by another launch until this one
            // completes. Its counters are 0 at launch: they live in the fixed region at its start
            // (tile::SPLITK_COUNTER_FLOATS, no partial sum is ever written there), are 0 when the
            // workspace is allocated (zeroed), and every completed split-K launch re-arms them.
            unsafe { stream.launch(spec, [plan.grid, 1, 1], cfg.lds_bytes, &args)? };
        }
        Spec::Dense(spec) => {
            let args = DenseGemmArgs { a: a_ptr, b: b_ptr, sfa, sfb, d: d_ptr, m, n, k, lda, ldd, reserved: 0 };
            // SAFETY: every pointer in `args` addresses memory the views borrow (live for the call; the
            // buffers free only after synchronizing the device, raw views by their `unsafe` contract)
            // with at least the extent the kernel's contract requires for (m, n, k, lda, ldd): A
            // (m−1)·lda + k bytes, SFA m·⌈k/128⌉ floats, B n·k bytes (pre-shuffled, for the bs
            // kernels: ⌈n/16⌉·16·k, checked above), SFB ⌈n/128⌉·⌈k/128⌉ floats, D (m−1)·ldd + n bf16
            // (checked by the view constructors); `d` is borrowed mutably.
            unsafe { stream.launch(spec, [plan.grid, 1, 1], cfg.lds_bytes, &args)? };
        }
        _ => return Err(Error::Unsupported(format!("plan {plan}: not a dense kernel"))),
    }
    Ok(GemmRun { config: Some(cfg), workspace_limit })
}
