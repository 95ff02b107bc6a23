//! DeepGEMM's other dense layouts: [`fp8_gemm_nn`], [`fp8_gemm_tn`], [`fp8_gemm_tt`] (FP8 × FP8
//! → BF16 with the block scales of [`crate::fp8_gemm_nt`]).
//!
//! # Layouts
//!
//! DeepGEMM (`csrc/apis/gemm.hpp`: `fp8_fp4_gemm_{nn,tn,tt}` call `fp8_fp4_gemm_nt` on
//! transposed views) names a layout by A then B: `n` = A is `m × k` (K-major), `t` = A is given
//! as `k × m` (M-major); for B, `t` = `n × k` (K-major), `n` = given as `k × n` (N-major). The
//! product is D = A·B (`m × n`, BF16, row stride `ldd`) in every layout:
//!
//! | entry point | A | B |
//! |---|---|---|
//! | [`crate::fp8_gemm_nt`] | [`ActivationsView`] `m × k` | [`WeightsView`] `n × k` |
//! | [`fp8_gemm_nn`] | [`ActivationsView`] `m × k` | [`MnMajorWeightsView`] `k × n` |
//! | [`fp8_gemm_tn`] | [`MnMajorActivationsView`] `k × m` | [`MnMajorWeightsView`] `k × n` |
//! | [`fp8_gemm_tt`] | [`MnMajorActivationsView`] `k × m` | [`WeightsView`] `n × k` (logical layout) |
//!
//! **Scales** do not change with the data's major: SFA is `m × ⌈k/128⌉` f32 (one per row and
//! 128-wide K block) and SFB `⌈n/128⌉ × ⌈k/128⌉` (one per 128 × 128 block), row-major, exactly as
//! for NT. That is what DeepGEMM's tests build (`tests/generators.py`,
//! `cast_fp8_fp4_with_major`: the operand is quantized as `[mn, k]` and only the FP8 data is
//! made MN-major, `x_fp8[0].T.contiguous().T`, the scale tensor kept; DeepGEMM's `tn`/`tt`/`nn`
//! functions take it as the transposed view of the same memory). [`MnMajorActivations`] and
//! [`MnMajorWeights`] are the host-side operands: [`QuantizedActivations`] /
//! [`QuantizedWeights`] with the data transposed.
//!
//! Requirements beyond NT's (`k` a positive multiple of 128, `n % 4 == 0`): an MN-major A needs
//! `m % 8 == 0` and a K-row stride `lda ≥ m` with `lda % 8 == 0`; an MN-major B `n % 8 == 0`
//! ([`MN_ALIGN`]: each copy work-item loads 8 consecutive columns of a K row).
//!
//! # Kernels
//!
//! Loader variants of the dense NT kernels ([`fp8gemm_device::dense_layouts`]): one main loop,
//! the operand majors a type parameter of its copy stage. One kernel per layout for now,
//! described by [`DenseLayoutKernel`] (problem dense, A major, B major, tile, schedule, stages)
//! registered in [`crate::registry`] and chosen by the selector ([`crate::select::plan_with_majors`]).

use std::marker::PhantomData;

use fp8gemm_device::args::{DenseGemmArgs, GlobalPtr};
pub use fp8gemm_device::dense_layouts::{DENSE_LAYOUT_KERNELS, DenseLayoutKernel, MN_ALIGN, Major, Schedule};

use crate::checks::{check_format, check_len, check_scales, check_tensor_bytes, shape_product};
use crate::config::GemmDesc;
use crate::error::{Error, Result};
use crate::fp8::Fp8Format;
use crate::gemm::GemmRun;
use crate::layout::WeightLayout;
use crate::quant::{BLOCK, QuantizedActivations, QuantizedWeights};
use crate::registry::Spec;
use crate::runtime::{Context, DeviceBuffer, Stream};
use crate::view::{ActivationsView, DeviceSlice, IntoOutput, WeightsView, need, strided_extent};

/// `out[c·rows + r] = x[r·cols + c]` (row-major `rows × cols` → `cols × rows`).
fn transpose<T: Copy + Default>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = vec![T::default(); x.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = x[r * cols + c];
        }
    }
    out
}

/// FP8 activations on the host, **M-major**: `data` is `k × m` (A transposed, M contiguous),
/// `scales` `m × ⌈k/128⌉` as for [`QuantizedActivations`] (1 × 128 along K).
#[derive(Clone, Debug)]
pub struct MnMajorActivations<F> {
    /// FP8 values, `k × m` row-major: `A[i, kk]` at `kk·m + i`.
    pub data: Vec<F>,
    /// Scales, `m × ⌈k/128⌉` row-major (as NT's SFA).
    pub scales: Vec<f32>,
    /// Rows of A (columns of `data`).
    pub m: usize,
    /// Reduction length (rows of `data`).
    pub k: usize,
}

impl<F: Fp8Format> MnMajorActivations<F> {
    /// The same activations with the data transposed (DeepGEMM's `x_fp8[0].T.contiguous().T`).
    pub fn from_k_major(a: &QuantizedActivations<F>) -> Result<Self> {
        let shape = format!("m = {}, k = {}", a.m, a.k);
        check_len("a", "data", a.data.len(), shape_product("a", &[a.m, a.k], "m · k")?, &shape)?;
        check_len("a", "scales", a.scales.len(), shape_product("a", &[a.m, a.k.div_ceil(BLOCK)], "m · ⌈k/128⌉")?, &shape)?;
        Ok(MnMajorActivations { data: transpose(&a.data, a.m, a.k), scales: a.scales.clone(), m: a.m, k: a.k })
    }
    /// The K-major form (what [`crate::fp8_gemm_nt`] and the CPU references take).
    pub fn to_k_major(&self) -> Result<QuantizedActivations<F>> {
        let shape = format!("m = {}, k = {}", self.m, self.k);
        check_len("a", "data", self.data.len(), shape_product("a", &[self.m, self.k], "m · k")?, &shape)?;
        Ok(QuantizedActivations::from_parts(transpose(&self.data, self.k, self.m), self.scales.clone(), self.m, self.k)?)
    }
}

/// FP8 weights on the host, **N-major**: `data` is `k × n` (B transposed, N contiguous),
/// `scales` `⌈n/128⌉ × ⌈k/128⌉` as for [`QuantizedWeights`] (128 × 128 blocks).
#[derive(Clone, Debug)]
pub struct MnMajorWeights<F> {
    /// FP8 values, `k × n` row-major: `B[j, kk]` at `kk·n + j`.
    pub data: Vec<F>,
    /// Scales, `⌈n/128⌉ × ⌈k/128⌉` row-major (as NT's SFB).
    pub scales: Vec<f32>,
    /// Rows of B (columns of `data`, of D).
    pub n: usize,
    /// Reduction length (rows of `data`).
    pub k: usize,
}

impl<F: Fp8Format> MnMajorWeights<F> {
    /// The same weights with the data transposed.
    pub fn from_k_major(b: &QuantizedWeights<F>) -> Result<Self> {
        let shape = format!("n = {}, k = {}", b.n, b.k);
        check_len("b", "data", b.data.len(), shape_product("b", &[b.n, b.k], "n · k")?, &shape)?;
        check_len("b", "scales", b.scales.len(), shape_product("b", &[b.n.div_ceil(BLOCK), b.k.div_ceil(BLOCK)], "⌈n/128⌉ · ⌈k/128⌉")?, &shape)?;
        Ok(MnMajorWeights { data: transpose(&b.data, b.n, b.k), scales: b.scales.clone(), n: b.n, k: b.k })
    }
    /// The K-major form.
    pub fn to_k_major(&self) -> Result<QuantizedWeights<F>> {
        let shape = format!("n = {}, k = {}", self.n, self.k);
        check_len("b", "data", self.data.len(), shape_product("b", &[self.n, self.k], "n · k")?, &shape)?;
        Ok(QuantizedWeights::from_parts(transpose(&self.data, self.k, self.n), self.scales.clone(), self.n, self.k)?)
    }
}

/// M-major FP8 activations in device memory: `k` rows of `m` values, `lda ≥ m` bytes apart, and
/// their `m × ⌈k/128⌉` f32 scales. What [`fp8_gemm_tn`] and [`fp8_gemm_tt`] take as A.
pub struct MnMajorActivationsView<'a, F> {
    data: DeviceSlice<'a, u8>,
    scales: DeviceSlice<'a, f32>,
    m: usize,
    k: usize,
    lda: usize,
    _f: PhantomData<F>,
}

impl<F> Clone for MnMajorActivationsView<'_, F> {
    fn clone(&self) -> Self {
        MnMajorActivationsView { data: self.data, scales: self.scales, m: self.m, k: self.k, lda: self.lda, _f: PhantomData }
    }
}

impl<'a, F: Fp8Format> MnMajorActivationsView<'a, F> {
    /// Contiguous M-major activations (`lda = m`): `data` must hold at least `k·m` bytes,
    /// `scales` at least `m·⌈k/128⌉` floats.
    pub fn new(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, m: usize, k: usize) -> Result<Self> {
        Self::with_row_stride(data, scales, m, k, m)
    }
    /// M-major activations whose K rows are `lda ≥ m` bytes apart: `data` must hold at least
    /// `(k − 1)·lda + m` bytes.
    pub fn with_row_stride(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, m: usize, k: usize, lda: usize) -> Result<Self> {
        let shape = format!("m = {m}, k = {k}, lda = {lda}");
        need("a", "data", strided_extent("lda", k, m, lda)?, data.len(), &shape)?;
        need("a", "scales", shape_product("a", &[m, k.div_ceil(BLOCK)], "m · ⌈k/128⌉")?, scales.len(), &shape)?;
        Ok(MnMajorActivationsView { data, scales, m, k, lda, _f: PhantomData })
    }
    /// Rows of A.
    pub fn m(&self) -> usize {
        self.m
    }
    /// Reduction length.
    pub fn k(&self) -> usize {
        self.k
    }
    /// Byte stride of the K rows.
    pub fn lda(&self) -> usize {
        self.lda
    }
}

/// N-major FP8 weights in device memory: `k` rows of `n` values (contiguous) and their
/// `⌈n/128⌉ × ⌈k/128⌉` f32 scales. What [`fp8_gemm_nn`] and [`fp8_gemm_tn`] take as B.
pub struct MnMajorWeightsView<'a, F> {
    data: DeviceSlice<'a, u8>,
    scales: DeviceSlice<'a, f32>,
    n: usize,
    k: usize,
    _f: PhantomData<F>,
}

impl<F> Clone for MnMajorWeightsView<'_, F> {
    fn clone(&self) -> Self {
        MnMajorWeightsView { data: self.data, scales: self.scales, n: self.n, k: self.k, _f: PhantomData }
    }
}

impl<'a, F: Fp8Format> MnMajorWeightsView<'a, F> {
    /// `data` must hold at least `k·n` bytes, `scales` at least `⌈n/128⌉·⌈k/128⌉` floats.
    pub fn new(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, n: usize, k: usize) -> Result<Self> {
        let shape = format!("n = {n}, k = {k}");
        need("b", "data", shape_product("b", &[k, n], "k · n")?, data.len(), &shape)?;
        need("b", "scales", shape_product("b", &[n.div_ceil(BLOCK), k.div_ceil(BLOCK)], "⌈n/128⌉ · ⌈k/128⌉")?, scales.len(), &shape)?;
        Ok(MnMajorWeightsView { data, scales, n, k, _f: PhantomData })
    }
    /// Rows of B (columns of D).
    pub fn n(&self) -> usize {
        self.n
    }
    /// Reduction length.
    pub fn k(&self) -> usize {
        self.k
    }
}

/// [`MnMajorActivations`] on the device.
pub struct DeviceMnMajorActivations<F> {
    data: DeviceBuffer<u8>,
    scales: DeviceBuffer<f32>,
    m: usize,
    k: usize,
    _f: PhantomData<F>,
}

impl<F: Fp8Format> DeviceMnMajorActivations<F> {
    /// Copies M-major activations to the device after checking their lengths and scales (0 or
    /// of magnitude in `[2^-24, 2^94)`, as [`crate::DeviceActivations::upload`]).
    pub fn upload(ctx: &Context, a: &MnMajorActivations<F>) -> Result<Self> {
        let shape = format!("m = {}, k = {}", a.m, a.k);
        check_len("a", "data", a.data.len(), shape_product("a", &[a.k, a.m], "k · m")?, &shape)?;
        check_len("a", "scales", a.scales.len(), shape_product("a", &[a.m, a.k.div_ceil(BLOCK)], "m · ⌈k/128⌉")?, &shape)?;
        check_scales("a.scales", &a.scales)?;
        Ok(DeviceMnMajorActivations { data: ctx.upload(crate::fp8::as_bits(&a.data))?, scales: ctx.upload(&a.scales)?, m: a.m, k: a.k, _f: PhantomData })
    }
    /// A view of the whole operand.
    pub fn view(&self) -> MnMajorActivationsView<'_, F> {
        MnMajorActivationsView::new(self.data.as_slice(), self.scales.as_slice(), self.m, self.k)
            .expect("an upload's buffers have exactly the lengths of its shape")
    }
}

impl<'a, F: Fp8Format> From<&'a DeviceMnMajorActivations<F>> for MnMajorActivationsView<'a, F> {
    fn from(a: &'a DeviceMnMajorActivations<F>) -> Self {
        a.view()
    }
}

/// [`MnMajorWeights`] on the device.
pub struct DeviceMnMajorWeights<F> {
    data: DeviceBuffer<u8>,
    scales: DeviceBuffer<f32>,
    n: usize,
    k: usize,
    _f: PhantomData<F>,
}

impl<F: Fp8Format> DeviceMnMajorWeights<F> {
    /// Copies N-major weights to the device after checking their lengths and scales.
    pub fn upload(ctx: &Context, b: &MnMajorWeights<F>) -> Result<Self> {
        let shape = format!("n = {}, k = {}", b.n, b.k);
        check_len("b", "data", b.data.len(), shape_product("b", &[b.k, b.n], "k · n")?, &shape)?;
        check_len("b", "scales", b.scales.len(), shape_product("b", &[b.n.div_ceil(BLOCK), b.k.div_ceil(BLOCK)], "⌈n/128⌉ · ⌈k/128⌉")?, &shape)?;
        check_scales("b.scales", &b.scales)?;
        Ok(DeviceMnMajorWeights { data: ctx.upload(crate::fp8::as_bits(&b.data))?, scales: ctx.upload(&b.scales)?, n: b.n, k: b.k, _f: PhantomData })
    }
    /// A view of the whole operand.
    pub fn view(&self) -> MnMajorWeightsView<'_, F> {
        MnMajorWeightsView::new(self.data.as_slice(), self.scales.as_slice(), self.n, self.k)
            .expect("an upload's buffers have exactly the lengths of its shape")
    }
}

impl<'a, F: Fp8Format> From<&'a DeviceMnMajorWeights<F>> for MnMajorWeightsView<'a, F> {
    fn from(b: &'a DeviceMnMajorWeights<F>) -> Self {
        b.view()
    }
}

/// One operand as the launch sees it.
struct Operand<'a> {
    data: DeviceSlice<'a, u8>,
    scales: DeviceSlice<'a, f32>,
    /// Rows (`m` for A, `n` for B).
    rows: usize,
    k: usize,
    /// Byte stride: of the rows (K-major) or of the K rows (MN-major).
    ld: usize,
    major: Major,
}

impl<'a, F: Fp8Format> From<ActivationsView<'a, F>> for Operand<'a> {
    fn from(a: ActivationsView<'a, F>) -> Self {
        Operand { data: a.data, scales: a.scales, rows: a.m, k: a.k, ld: a.lda, major: Major::K }
    }
}

impl<'a, F: Fp8Format> From<MnMajorActivationsView<'a, F>> for Operand<'a> {
    fn from(a: MnMajorActivationsView<'a, F>) -> Self {
        Operand { data: a.data, scales: a.scales, rows: a.m, k: a.k, ld: a.lda, major: Major::Mn }
    }
}

impl<'a, F: Fp8Format> From<MnMajorWeightsView<'a, F>> for Operand<'a> {
    fn from(b: MnMajorWeightsView<'a, F>) -> Self {
        Operand { data: b.data, scales: b.scales, rows: b.n, k: b.k, ld: b.n, major: Major::Mn }
    }
}

/// A K-major B for TT: the logical layout only (the pre-shuffled one is read by the NT bs
/// kernels alone).
fn k_major_weights<'a, F: Fp8Format>(b: WeightsView<'a, F>) -> Result<Operand<'a>> {
    if b.layout != WeightLayout::Logical {
        return Err(Error::Layout {
            arg: "b",
            expected: WeightLayout::Logical,
            actual: b.layout,
            reason: "fp8_gemm_tt reads B through the dense kernels' LDS copy",
        });
    }
    Ok(Operand { data: b.data, scales: b.scales, rows: b.n, k: b.k, ld: b.k, major: Major::K })
}

/// Dense `D = A · B` with A `m × k` (K-major) and B given as `k × n` (N-major): DeepGEMM's
/// `fp8_gemm_nn`, `D[i,j] = bf16(Σ_kb SFA[i,kb] · SFB[⌊j/128⌋,kb] · Σ_{kk∈kb} A[i,kk] · B[kk,j])`
/// (layouts and requirements in the [module docs](self): additionally `n % 8 == 0`). Queued on
/// `stream` like [`crate::fp8_gemm_nt`] (asynchronous, capture-safe; no workspace).
pub fn fp8_gemm_nn<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<ActivationsView<'a, F>>,
    b: impl Into<MnMajorWeightsView<'a, F>>,
    d: impl IntoOutput<'a>,
) -> Result<GemmRun> {
    launch::<F>(stream, a.into().into(), b.into().into(), d)
}

/// Dense `D = A · B` with A given as `k × m` (M-major) and B as `k × n` (N-major): DeepGEMM's
/// `fp8_gemm_tn`, `D[i,j] = bf16(Σ_kb SFA[i,kb] · SFB[⌊j/128⌋,kb] · Σ_{kk∈kb} A[kk,i] · B[kk,j])`
/// (additionally `m % 8 == 0`, `n % 8 == 0`, `lda % 8 == 0`).
pub fn fp8_gemm_tn<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<MnMajorActivationsView<'a, F>>,
    b: impl Into<MnMajorWeightsView<'a, F>>,
    d: impl IntoOutput<'a>,
) -> Result<GemmRun> {
    launch::<F>(stream, a.into().into(), b.into().into(), d)
}

/// Dense `D = A · B` with A given as `k × m` (M-major) and B `n × k` (K-major, logical layout):
/// DeepGEMM's `fp8_gemm_tt`, `D[i,j] = bf16(Σ_kb SFA[i,kb] · SFB[⌊j/128⌋,kb] · Σ_{kk∈kb} A[kk,i] ·
/// B[j,kk])` (additionally `m % 8 == 0`, `lda % 8 == 0`; pre-shuffled B is an [`Error::Layout`]).
pub fn fp8_gemm_tt<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<MnMajorActivationsView<'a, F>>,
    b: impl Into<WeightsView<'a, F>>,
    d: impl IntoOutput<'a>,
) -> Result<GemmRun> {
    launch::<F>(stream, a.into().into(), k_major_weights(b.into())?, d)
}

/// Checks everything the host knows about one launch of a layout kernel, then queues it.
fn launch<'a, F: Fp8Format>(stream: &Stream, a: Operand<'a>, b: Operand<'a>, d: impl IntoOutput<'a>) -> Result<GemmRun> {
    let ctx = stream.context();
    check_format::<F>(ctx, "a")?;
    let (m, n, k) = (a.rows, b.rows, a.k);
    let owners = [("a", a.data.owner()), ("a", a.scales.owner()), ("b", b.data.owner()), ("b", b.scales.owner())];
    let Some(d) = crate::checks::dense_operands(ctx, &owners, (m, n, k), b.k, d)? else {
        return Ok(GemmRun { config: None, workspace_limit: None });
    };
    let align = MN_ALIGN as usize;
    match a.major {
        Major::K if !a.ld.is_multiple_of(16) => {
            return Err(Error::Shape { arg: "lda", expected: "a multiple of 16 bytes".into(), actual: a.ld.to_string() });
        }
        Major::Mn if !m.is_multiple_of(align) => {
            return Err(Error::Shape { arg: "m", expected: format!("a multiple of {align} (A is M-major)"), actual: m.to_string() });
        }
        Major::Mn if !a.ld.is_multiple_of(align) => {
            return Err(Error::Shape { arg: "lda", expected: format!("a multiple of {align} bytes (A is M-major)"), actual: a.ld.to_string() });
        }
        _ => {}
    }
    if b.major == Major::Mn && !n.is_multiple_of(align) {
        return Err(Error::Shape { arg: "n", expected: format!("a multiple of {align} (B is N-major)"), actual: n.to_string() });
    }
    if !d.ldd.is_multiple_of(4) {
        return Err(Error::Shape { arg: "ldd", expected: "a multiple of 4 elements".into(), actual: d.ldd.to_string() });
    }
    // 32-bit buffer offsets: a K-major operand's tail tile addresses up to 128 rows past its
    // end (range-checked reads), an MN-major one stays inside its K rows (columns parked).
    let (m64, k64) = (m as u64, k as u64);
    let extent = |op: &Operand<'_>| match op.major {
        Major::K => (op.rows as u64 + 128).saturating_mul(op.ld as u64),
        Major::Mn => k64.saturating_mul(op.ld as u64),
    };
    check_tensor_bytes("a", extent(&a))?;
    check_tensor_bytes("b", extent(&b))?;
    check_tensor_bytes("d", (m64 + 128).saturating_mul(d.ldd as u64).saturating_mul(2))?;

    if (a.major, b.major) == (Major::K, Major::K) {
        return Err(Error::Unsupported("the NT layout runs through fp8_gemm_nt".into()));
    }
    // The plan: the selector's over the registry's kernels of these operand majors.
    let desc = GemmDesc::dense(m as u32, n as u32, k as u32, ctx.arch()).with_cus(ctx.compute_units());
    let overrides = stream.overrides();
    let (plan, _) =
        crate::select::plan_with_majors(&desc, WeightLayout::Logical, (a.major, b.major), &overrides, 0).map_err(|e| Error::Unsupported(e.to_string()))?;
    let Spec::Dense(spec) = plan.kernel.spec else {
        return Err(Error::Unsupported(format!("plan {plan}: not a dense one-tile-per-workgroup kernel")));
    };
    let cfg = plan.config(ctx.arch());
    let args = DenseGemmArgs {
        a: a.data.device_ptr(),
        b: b.data.device_ptr(),
        sfa: a.scales.device_ptr(),
        sfb: b.scales.device_ptr(),
        d: GlobalPtr::new(d.data.device_ptr().addr()),
        m: m as u32,
        n: n as u32,
        k: k as u32,
        lda: a.ld as u32,
        ldd: d.ldd as u32,
        reserved: 0,
    };
    // SAFETY: every pointer in `args` addresses memory the views borrow (live for the call; the
    // buffers free only after synchronizing the device, raw views by their `unsafe` contract)
    // with at least the extent the kernel's contract (fp8gemm_device::dense_layouts) requires,
    // checked by the view constructors: a K-major A (m−1)·lda + k bytes, an M-major A
    // (k−1)·lda + m bytes (lda ≥ m, both multiples of 8, checked above), SFA m·⌈k/128⌉ floats,
    // B n·k bytes (either major; n % 8 == 0 for N-major, checked above), SFB ⌈n/128⌉·⌈k/128⌉
    // floats, D (m−1)·ldd + n bf16; every extent below 2^31 bytes (checked above); `d` is
    // borrowed mutably.
    unsafe { stream.launch(spec, [cfg.grid, 1, 1], cfg.lds_bytes, &args)? };
    Ok(GemmRun { config: Some(cfg), workspace_limit: None })
}

/// CPU references of these layouts: the NT references ([`crate::reference`]) on the K-major
/// forms of the operands (the scales are the same tensors in every layout).
#[cfg(feature = "reference")]
pub mod reference {
    use half::bf16;

    use super::{MnMajorActivations, MnMajorWeights};
    use crate::error::{Error, Result};
    use crate::fp8::Fp8Format;
    use crate::quant::{QuantizedActivations, QuantizedWeights};

    /// `fp8_gemm_nn`'s dequantized reference (bf16, nearest-even).
    pub fn fp8_gemm_nn<F: Fp8Format>(a: &QuantizedActivations<F>, b: &MnMajorWeights<F>, d: &mut [bf16]) -> Result<()> {
        nt(a, &b.to_k_major()?, d)
    }
    /// `fp8_gemm_tn`'s dequantized reference.
    pub fn fp8_gemm_tn<F: Fp8Format>(a: &MnMajorActivations<F>, b: &MnMajorWeights<F>, d: &mut [bf16]) -> Result<()> {
        nt(&a.to_k_major()?, &b.to_k_major()?, d)
    }
    /// `fp8_gemm_tt`'s dequantized reference.
    pub fn fp8_gemm_tt<F: Fp8Format>(a: &MnMajorActivations<F>, b: &QuantizedWeights<F>, d: &mut [bf16]) -> Result<()> {
        nt(&a.to_k_major()?, b, d)
    }
    fn nt<F: Fp8Format>(a: &QuantizedActivations<F>, b: &QuantizedWeights<F>, d: &mut [bf16]) -> Result<()> {
        crate::reference::fp8_gemm_nt(a, b, d).map_err(|e| Error::Shape { arg: "reference", expected: "matching operands".into(), actual: e.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fp8::E4M3Fnuz;

    #[test]
    fn every_layout_but_nt_has_a_registered_kernel_with_its_majors() {
        use crate::registry::{self, Problem, ScheduleKind};
        for (a, b) in [(Major::K, Major::Mn), (Major::Mn, Major::Mn), (Major::Mn, Major::K)] {
            let rows: Vec<_> = registry::candidates_with_majors(Problem::Dense, WeightLayout::Logical, (a, b)).collect();
            assert!(!rows.is_empty(), "{a:?} {b:?}");
            for e in rows {
                let k = DENSE_LAYOUT_KERNELS.iter().find(|k| k.name == e.name()).expect("a layout kernel");
                assert_eq!((k.a, k.b, k.schedule, k.stages), (a, b, Schedule::DataParallel, 1));
                assert_eq!((e.schedule, e.block_m, e.block_n, e.lds_bytes), (ScheduleKind::DataParallel, k.block_m, k.block_n, k.lds_bytes()));
            }
            let desc = GemmDesc::dense(72, 136, 256, crate::codeobj::Arch::Gfx942);
            let (p, _) = crate::select::plan_with_majors(&desc, WeightLayout::Logical, (a, b), &crate::config::Overrides::NONE, 0).unwrap();
            let c = p.config(crate::codeobj::Arch::Gfx942);
            assert_eq!((c.grid, c.lds_bytes, c.splits), (2 * 2, 24 * 1024, 1));
        }
    }

    #[test]
    fn mn_major_operands_round_trip() {
        let (m, k) = (24, 256);
        let x: Vec<f32> = (0..m * k).map(|i| ((i * 37) % 101) as f32 / 9.0 - 5.0).collect();
        let qa = QuantizedActivations::<E4M3Fnuz>::quantize(&x, m, k).unwrap();
        let t = MnMajorActivations::from_k_major(&qa).unwrap();
        // A[i, kk] at kk·m + i.
        assert_eq!(t.data[200 * m + 7].to_bits(), qa.data[7 * k + 200].to_bits());
        let back = t.to_k_major().unwrap();
        assert_eq!(crate::fp8::as_bits(&back.data), crate::fp8::as_bits(&qa.data));
        assert_eq!(back.scales, qa.scales);
        let qb = QuantizedWeights::<E4M3Fnuz>::quantize(&x, m, k).unwrap();
        let tb = MnMajorWeights::from_k_major(&qb).unwrap();
        assert_eq!(tb.data[130 * m + 5].to_bits(), qb.data[5 * k + 130].to_bits());
        assert_eq!(crate::fp8::as_bits(&tb.to_k_major().unwrap().data), crate::fp8::as_bits(&qb.data));
    }
}
