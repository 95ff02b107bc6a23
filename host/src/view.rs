//! Typed views over device memory: what the GEMM entry points take.
//!
//! A view is a device address range plus a shape; it borrows the memory (lifetime `'a`) but
//! does not own it. Build one
//! * safely from a [`DeviceBuffer`](crate::DeviceBuffer) or a sub-range of it
//!   ([`DeviceBuffer::slice`](crate::DeviceBuffer::slice)), or from the owned operand types
//!   ([`DeviceActivations`](crate::DeviceActivations) & co. convert with `From`), or
//! * `unsafe`ly from a raw device pointer that an inference engine owns (the previous layer's
//!   output), e.g. [`DeviceSlice::from_raw`].
//!
//! Either way the operand views check the same things the owned types guarantee: every
//! element the kernels may touch for the given shape and row stride lies inside the view's
//! range, with all shape arithmetic checked for overflow; errors are typed [`Error::Shape`]s
//! naming the argument.
//!
//! Layouts (row-major): A `m × k` FP8 with row stride `lda ≥ k` bytes and SFA `m × ⌈k/128⌉` f32
//! (contiguous); B `n × k` FP8 and SFB `⌈n/128⌉ × ⌈k/128⌉` f32 (contiguous; grouped: `G` of each,
//! back to back; or B pre-shuffled, see [`crate::layout`]); D `m × n` bf16 with row stride
//! `ldd ≥ n` elements. The dense kernel reads the strides; the m-grouped kernels need contiguous
//! A and D (`lda == k`, `ldd == n`).

use std::marker::PhantomData;

use bytemuck::Pod;
use fp8gemm_device::args::GlobalPtr;
use half::bf16;

use crate::error::{Error, Result};
use crate::fp8::Fp8Format;
use crate::layout::WeightLayout;
use crate::quant::blocks;
use crate::runtime::{Stream, byte_len};

/// A read-only view of `len` elements of `T` in device memory.
pub struct DeviceSlice<'a, T> {
    addr: u64,
    len: usize,
    owner: Option<u64>,
    _t: PhantomData<&'a [T]>,
}

impl<T> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceSlice<'_, T> {}

impl<T> std::fmt::Debug for DeviceSlice<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceSlice<{}>[{}] @ {:#x}", std::any::type_name::<T>(), self.len, self.addr)
    }
}

/// A writable view of `len` elements of `T` in device memory (exclusive, like `&mut [T]`).
pub struct DeviceSliceMut<'a, T> {
    addr: u64,
    len: usize,
    owner: Option<u64>,
    _t: PhantomData<&'a mut [T]>,
}

impl<T> std::fmt::Debug for DeviceSliceMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceSliceMut<{}>[{}] @ {:#x}", std::any::type_name::<T>(), self.len, self.addr)
    }
}

fn check_raw<T>(arg: &'static str, addr: u64, len: usize) -> Result<()> {
    let bytes = byte_len::<T>(arg, len)?;
    if len > 0 && addr == 0 {
        return Err(Error::Shape { arg, expected: "a non-null device pointer".into(), actual: "null".into() });
    }
    if !addr.is_multiple_of(align_of::<T>() as u64) {
        return Err(Error::Shape { arg, expected: format!("a device pointer aligned to {} bytes", align_of::<T>()), actual: format!("{addr:#x}") });
    }
    if addr.checked_add(bytes as u64).is_none() {
        return Err(Error::Shape { arg, expected: "a range inside the 64-bit address space".into(), actual: format!("{addr:#x} + {bytes} bytes") });
    }
    Ok(())
}

impl<'a, T: Pod> DeviceSlice<'a, T> {
    pub(crate) fn from_parts(addr: u64, len: usize, owner: Option<u64>) -> Self {
        DeviceSlice { addr, len, owner, _t: PhantomData }
    }

    /// A view of `len` elements at device address `ptr`, memory the caller owns (e.g. an
    /// engine's own allocation). Checks that `ptr` is non-null (unless `len == 0`), aligned for
    /// `T`, and that the range does not wrap.
    ///
    /// # Safety
    /// `[ptr, ptr + len·size_of::<T>())` is device memory of the device the view is used with
    /// (allocated through the same backend), live and not written by anything else for `'a` and
    /// until all work submitted with the view has completed.
    pub unsafe fn from_raw(ptr: u64, len: usize) -> Result<Self> {
        check_raw::<T>("ptr", ptr, len)?;
        Ok(Self::from_parts(ptr, len, None))
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The device address.
    pub fn device_ptr(&self) -> GlobalPtr<T> {
        GlobalPtr::new(self.addr)
    }
    /// The context id of the buffer the view was made from (`None`: raw memory).
    pub(crate) fn owner(&self) -> Option<u64> {
        self.owner
    }
    /// Elements `start..start + len` of this view.
    pub fn sub(&self, start: usize, len: usize) -> Result<Self> {
        match start.checked_add(len) {
            Some(end) if end <= self.len => Ok(Self::from_parts(self.addr + (start * size_of::<T>()) as u64, len, self.owner)),
            _ => Err(Error::Shape { arg: "range", expected: format!("a range inside 0..{}", self.len), actual: format!("{start} + {len}") }),
        }
    }

    /// Copies the view into `out` (exactly [`Self::len`] elements): queued on `stream`, then
    /// waits for the stream. Fails with [`Error::Capturing`] on a capturing stream.
    pub fn copy_to_host(&self, stream: &Stream, out: &mut [T]) -> Result<()> {
        check_count("out", self.len, out.len())?;
        stream.context().check_owner("self", self.owner)?;
        stream.forbid_capture("copy to the host")?;
        if self.len > 0 {
            let ctx = stream.context();
            let _g = ctx.enter()?;
            // SAFETY: the view covers `len` elements of live device memory; `out` is writable for
            // them and stays borrowed until the stream synchronization below completes the copy.
            unsafe { ctx.api().dtoh_async(out.as_mut_ptr().cast(), self.addr, size_of_val(out), stream.handle()) }
                .map_err(|c| ctx.err("hipMemcpyDtoHAsync", c))?;
        }
        stream.synchronize()
    }
}

fn check_count(arg: &'static str, expected: usize, actual: usize) -> Result<()> {
    if expected != actual {
        return Err(Error::Shape { arg, expected: format!("{expected} elements"), actual: format!("{actual} elements") });
    }
    Ok(())
}

impl<'a, T: Pod> DeviceSliceMut<'a, T> {
    pub(crate) fn from_parts(addr: u64, len: usize, owner: Option<u64>) -> Self {
        DeviceSliceMut { addr, len, owner, _t: PhantomData }
    }

    /// A writable view of `len` elements at device address `ptr` (checks as
    /// [`DeviceSlice::from_raw`]).
    ///
    /// # Safety
    /// As [`DeviceSlice::from_raw`], and nothing else reads or writes the range for `'a` and
    /// until all work submitted with the view has completed.
    pub unsafe fn from_raw(ptr: u64, len: usize) -> Result<Self> {
        check_raw::<T>("ptr", ptr, len)?;
        Ok(Self::from_parts(ptr, len, None))
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The device address.
    pub fn device_ptr(&self) -> GlobalPtr<T> {
        GlobalPtr::new(self.addr)
    }
    /// A read-only view of the same range.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice::from_parts(self.addr, self.len, self.owner)
    }
    /// Reborrows the view (to pass it to an entry point and keep using it afterwards).
    pub fn reborrow(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut::from_parts(self.addr, self.len, self.owner)
    }
    /// Elements `start..start + len` of this view, writable (borrows the view mutably).
    pub fn sub_mut(&mut self, start: usize, len: usize) -> Result<DeviceSliceMut<'_, T>> {
        match start.checked_add(len) {
            Some(end) if end <= self.len => Ok(DeviceSliceMut::from_parts(self.addr + (start * size_of::<T>()) as u64, len, self.owner)),
            _ => Err(Error::Shape { arg: "range", expected: format!("a range inside 0..{}", self.len), actual: format!("{start} + {len}") }),
        }
    }
    pub(crate) fn owner(&self) -> Option<u64> {
        self.owner
    }

    /// Overwrites the view with `data` (exactly [`Self::len`] elements), in order on `stream`;
    /// `data` is read (staged) before this returns, so it may be reused at once. Not on a
    /// capturing stream ([`Error::Capturing`]).
    pub fn copy_from_host(&mut self, stream: &Stream, data: &[T]) -> Result<()> {
        check_count("data", self.len, data.len())?;
        stream.context().check_owner("self", self.owner)?;
        stream.forbid_capture("copy from borrowed host memory")?;
        if self.len == 0 {
            return Ok(());
        }
        let ctx = stream.context();
        let _g = ctx.enter()?;
        // SAFETY: the view covers `len` elements of live device memory; `data` is readable for
        // them now and HIP (and the emulator) reads pageable host memory before returning.
        unsafe { ctx.api().htod_async(self.addr, data.as_ptr().cast(), size_of_val(data), stream.handle()) }.map_err(|c| ctx.err("hipMemcpyHtoDAsync", c))
    }

    /// Copies `src` (same length) into the view, on `stream` (capture-safe, no host involvement).
    pub fn copy_from_device(&mut self, stream: &Stream, src: DeviceSlice<'_, T>) -> Result<()> {
        check_count("src", self.len, src.len)?;
        stream.context().check_owner("self", self.owner)?;
        stream.context().check_owner("src", src.owner)?;
        if self.len == 0 {
            return Ok(());
        }
        let ctx = stream.context();
        let _g = ctx.enter()?;
        // SAFETY: both views cover `len` live elements; the borrows keep them alive for the call,
        // their constructors' contracts until the copy has run.
        unsafe { ctx.api().dtod_async(self.addr, src.addr, self.len * size_of::<T>(), stream.handle()) }.map_err(|c| ctx.err("hipMemcpyDtoDAsync", c))
    }

    /// Sets every byte of the view to zero, on `stream` (capture-safe).
    pub fn zero(&mut self, stream: &Stream) -> Result<()> {
        stream.context().check_owner("self", self.owner)?;
        if self.len == 0 {
            return Ok(());
        }
        let ctx = stream.context();
        let _g = ctx.enter()?;
        // SAFETY: the view covers `len` live elements.
        unsafe { ctx.api().memset_async(self.addr, 0, self.len * size_of::<T>(), stream.handle()) }.map_err(|c| ctx.err("hipMemsetAsync", c))
    }
}

impl<'a, T: Pod> From<&'a crate::DeviceBuffer<T>> for DeviceSlice<'a, T> {
    fn from(b: &'a crate::DeviceBuffer<T>) -> Self {
        b.as_slice()
    }
}

impl<'a, T: Pod> From<&'a mut crate::DeviceBuffer<T>> for DeviceSliceMut<'a, T> {
    fn from(b: &'a mut crate::DeviceBuffer<T>) -> Self {
        b.as_slice_mut()
    }
}

/// `a · b` for shapes, or a typed error naming `arg`.
fn mul(arg: &'static str, what: &str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).ok_or_else(|| Error::Shape { arg, expected: format!("{what} to fit in usize"), actual: format!("{a} · {b} overflows") })
}

/// `required ≤ have` for a view's slice, or a typed error naming `arg`.
pub(crate) fn need(arg: &'static str, what: &str, required: usize, have: usize, shape: &str) -> Result<()> {
    if have < required {
        return Err(Error::Shape { arg, expected: format!("{what} of at least {required} elements for {shape}"), actual: format!("{have} elements") });
    }
    Ok(())
}

/// Elements a row-major `rows × cols` matrix with row stride `ld` spans: `(rows − 1)·ld + cols`
/// (0 for no rows).
pub(crate) fn strided_extent(arg: &'static str, rows: usize, cols: usize, ld: usize) -> Result<usize> {
    if ld < cols {
        return Err(Error::Shape { arg, expected: format!("a row stride of at least {cols} (the row length)"), actual: ld.to_string() });
    }
    if rows == 0 {
        return Ok(0);
    }
    mul(arg, "rows · stride", rows - 1, ld)?.checked_add(cols).ok_or_else(|| Error::Shape {
        arg,
        expected: "an extent that fits in usize".into(),
        actual: format!("{rows} rows of stride {ld}"),
    })
}

/// FP8 activations `A` (`m × k`, row stride `lda` bytes) with their 1×128 scales
/// (`m × ⌈k/128⌉` f32), in format `F`.
///
/// The constructors check extents, not values: the scales live on the device, so the range
/// check that [`DeviceActivations::upload`](crate::DeviceActivations::upload) applies on the host
/// ([`Error::ScaleRange`]: 0 or `2^-24 ≤ |s| < 2^94`) cannot be made here without a host round
/// trip. Scales outside that range (the quantization kernels stay inside it for any input below
/// ≈ 4.7e30) may make the affected rows of the GEMM ±∞/NaN.
pub struct ActivationsView<'a, F> {
    pub(crate) data: DeviceSlice<'a, u8>,
    pub(crate) scales: DeviceSlice<'a, f32>,
    pub(crate) m: usize,
    pub(crate) k: usize,
    pub(crate) lda: usize,
    _f: PhantomData<F>,
}

impl<F> Clone for ActivationsView<'_, F> {
    fn clone(&self) -> Self {
        ActivationsView { data: self.data, scales: self.scales, m: self.m, k: self.k, lda: self.lda, _f: PhantomData }
    }
}

impl<'a, F: Fp8Format> ActivationsView<'a, F> {
    /// Contiguous activations (`lda = k`): `data` must hold at least `m·k` bytes and `scales`
    /// at least `m·⌈k/128⌉` floats.
    pub fn new(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, m: usize, k: usize) -> Result<Self> {
        Self::with_row_stride(data, scales, m, k, k)
    }

    /// Activations whose rows are `lda ≥ k` bytes apart (e.g. the first `k` columns of a wider
    /// matrix): `data` must hold at least `(m − 1)·lda + k` bytes.
    pub fn with_row_stride(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, m: usize, k: usize, lda: usize) -> Result<Self> {
        let shape = format!("m = {m}, k = {k}, lda = {lda}");
        need("a", "data", strided_extent("lda", m, k, lda)?, data.len(), &shape)?;
        need("a", "scales", mul("a", "m · ⌈k/128⌉", m, blocks(k))?, scales.len(), &shape)?;
        Ok(ActivationsView { data, scales, m, k, lda, _f: PhantomData })
    }

    /// Rows.
    pub fn m(&self) -> usize {
        self.m
    }
    /// Columns (the reduction length).
    pub fn k(&self) -> usize {
        self.k
    }
    /// Row stride in bytes.
    pub fn lda(&self) -> usize {
        self.lda
    }
}

/// FP8 weights `B` (`n × k`) with their 128×128 block scales (`⌈n/128⌉ × ⌈k/128⌉` f32), in
/// format `F` and a [`WeightLayout`]: row-major (logical, [`Self::new`]) or pre-shuffled
/// ([`Self::new_preshuffled`], see [`crate::layout`]). The scales are the same in both layouts.
pub struct WeightsView<'a, F> {
    pub(crate) data: DeviceSlice<'a, u8>,
    pub(crate) scales: DeviceSlice<'a, f32>,
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) layout: WeightLayout,
    _f: PhantomData<F>,
}

impl<F> Clone for WeightsView<'_, F> {
    fn clone(&self) -> Self {
        WeightsView { data: self.data, scales: self.scales, n: self.n, k: self.k, layout: self.layout, _f: PhantomData }
    }
}

/// The checks of a weights view's buffers for one `n × k` weight per group (`groups` groups
/// back to back), in `layout`; errors name `arg`.
fn check_weights(arg: &'static str, data: usize, scales: usize, groups: Option<usize>, n: usize, k: usize, layout: WeightLayout) -> Result<()> {
    let g = groups.unwrap_or(1);
    let shape = match groups {
        None => format!("n = {n}, k = {k}"),
        Some(g) => format!("G = {g}, n = {n}, k = {k}"),
    };
    let gp = if groups.is_some() { "G · " } else { "" };
    match layout {
        WeightLayout::Logical => {
            let per = mul(arg, "n · k", n, k)?;
            need(arg, "data", mul(arg, &format!("{gp}n · k"), g, per)?, data, &shape)?;
        }
        WeightLayout::Preshuffled => {
            crate::layout::check_preshuffle_k("k", k)?;
            let per = crate::layout::preshuffled_bytes(n, k)?;
            let what = format!("pre-shuffled data ({gp}⌈n/16⌉·16·k bytes)");
            need(arg, &what, mul(arg, &format!("{gp}⌈n/16⌉·16·k"), g, per)?, data, &shape)?;
        }
    }
    let sf = mul(arg, &format!("{gp}⌈n/128⌉ · ⌈k/128⌉"), mul(arg, &format!("{gp}⌈n/128⌉"), g, blocks(n))?, blocks(k))?;
    need(arg, "scales", sf, scales, &shape)
}

impl<'a, F: Fp8Format> WeightsView<'a, F> {
    /// Logical (row-major) weights: `data` must hold at least `n·k` bytes and `scales` at least
    /// `⌈n/128⌉·⌈k/128⌉` floats.
    pub fn new(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, n: usize, k: usize) -> Result<Self> {
        Self::with_layout(data, scales, n, k, WeightLayout::Logical)
    }
    /// Pre-shuffled weights ([`crate::layout`]): `k` must be a multiple of 128 ([`Error::Shape`],
    /// argument `k`), `data` must hold at least `⌈n/16⌉·16·k` bytes
    /// (`fp8gemm_device::tile::shuffled_b_bytes`) with the padding rows zero, and `scales` at
    /// least `⌈n/128⌉·⌈k/128⌉` floats (the same scales as the logical layout). The contents are
    /// the caller's promise (e.g. [`crate::layout::preshuffle_bytes`] of the logical values).
    pub fn new_preshuffled(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, n: usize, k: usize) -> Result<Self> {
        Self::with_layout(data, scales, n, k, WeightLayout::Preshuffled)
    }
    /// [`Self::new`] or [`Self::new_preshuffled`], by `layout`.
    pub fn with_layout(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, n: usize, k: usize, layout: WeightLayout) -> Result<Self> {
        check_weights("b", data.len(), scales.len(), None, n, k, layout)?;
        Ok(WeightsView { data, scales, n, k, layout, _f: PhantomData })
    }
    /// Rows (output columns).
    pub fn n(&self) -> usize {
        self.n
    }
    /// Columns (the reduction length).
    pub fn k(&self) -> usize {
        self.k
    }
    /// How the values are arranged.
    pub fn layout(&self) -> WeightLayout {
        self.layout
    }
    /// The FP8 values' bytes (in [`Self::layout`]).
    pub fn data(&self) -> DeviceSlice<'a, u8> {
        self.data
    }
    /// The block scales.
    pub fn scales(&self) -> DeviceSlice<'a, f32> {
        self.scales
    }
}

/// `G` experts' FP8 weights (`[G, n, k]`) with `[G, ⌈n/128⌉, ⌈k/128⌉]` scales, in a
/// [`WeightLayout`]: each group row-major (logical, [`Self::new`]) or pre-shuffled
/// ([`Self::new_preshuffled`]: group `g`'s values at byte `g · ⌈n/16⌉·16·k`, see
/// [`crate::layout`]). The scales are the same in both layouts.
pub struct GroupedWeightsView<'a, F> {
    pub(crate) data: DeviceSlice<'a, u8>,
    pub(crate) scales: DeviceSlice<'a, f32>,
    pub(crate) groups: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) layout: WeightLayout,
    _f: PhantomData<F>,
}

impl<F> Clone for GroupedWeightsView<'_, F> {
    fn clone(&self) -> Self {
        GroupedWeightsView { data: self.data, scales: self.scales, groups: self.groups, n: self.n, k: self.k, layout: self.layout, _f: PhantomData }
    }
}

impl<'a, F: Fp8Format> GroupedWeightsView<'a, F> {
    /// Logical weights: `data` must hold at least `G·n·k` bytes and `scales`
    /// `G·⌈n/128⌉·⌈k/128⌉` floats.
    pub fn new(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, groups: usize, n: usize, k: usize) -> Result<Self> {
        Self::with_layout(data, scales, groups, n, k, WeightLayout::Logical)
    }
    /// Pre-shuffled weights ([`crate::layout`]): `k` must be a multiple of 128 ([`Error::Shape`],
    /// argument `k`), `data` must hold at least `G·⌈n/16⌉·16·k` bytes (each group's padding
    /// rows zero), `scales` `G·⌈n/128⌉·⌈k/128⌉` floats.
    pub fn new_preshuffled(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, groups: usize, n: usize, k: usize) -> Result<Self> {
        Self::with_layout(data, scales, groups, n, k, WeightLayout::Preshuffled)
    }
    /// [`Self::new`] or [`Self::new_preshuffled`], by `layout`.
    pub fn with_layout(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, groups: usize, n: usize, k: usize, layout: WeightLayout) -> Result<Self> {
        check_weights("b", data.len(), scales.len(), Some(groups), n, k, layout)?;
        Ok(GroupedWeightsView { data, scales, groups, n, k, layout, _f: PhantomData })
    }
    /// Number of groups `G`.
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
    /// How the values are arranged.
    pub fn layout(&self) -> WeightLayout {
        self.layout
    }
    /// The FP8 values' bytes (in [`Self::layout`]).
    pub fn data(&self) -> DeviceSlice<'a, u8> {
        self.data
    }
    /// The block scales.
    pub fn scales(&self) -> DeviceSlice<'a, f32> {
        self.scales
    }
}

/// The BF16 output `D` (`m × n`, row stride `ldd ≥ n` elements).
pub struct OutputViewMut<'a> {
    pub(crate) data: DeviceSliceMut<'a, bf16>,
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) ldd: usize,
}

impl<'a> OutputViewMut<'a> {
    /// A contiguous output: `data` must hold at least `m·n` elements.
    pub fn new(data: DeviceSliceMut<'a, bf16>, m: usize, n: usize) -> Result<Self> {
        Self::with_row_stride(data, m, n, n)
    }
    /// An output whose rows are `ldd ≥ n` elements apart: `data` must hold at least
    /// `(m − 1)·ldd + n` elements.
    pub fn with_row_stride(data: DeviceSliceMut<'a, bf16>, m: usize, n: usize, ldd: usize) -> Result<Self> {
        need("d", "data", strided_extent("ldd", m, n, ldd)?, data.len(), &format!("m = {m}, n = {n}, ldd = {ldd}"))?;
        Ok(OutputViewMut { data, m, n, ldd })
    }
    /// Rows.
    pub fn m(&self) -> usize {
        self.m
    }
    /// Columns.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Row stride in elements.
    pub fn ldd(&self) -> usize {
        self.ldd
    }
}

/// What the entry points accept as `d`: a ready [`OutputViewMut`] (its shape must match the
/// problem's) or a plain buffer / slice of exactly `m·n` elements.
pub trait IntoOutput<'a> {
    /// The output view for an `m × n` problem, or a typed error naming `d`.
    fn into_output(self, m: usize, n: usize) -> Result<OutputViewMut<'a>>;
}

impl<'a> IntoOutput<'a> for OutputViewMut<'a> {
    fn into_output(self, m: usize, n: usize) -> Result<OutputViewMut<'a>> {
        if (self.m, self.n) != (m, n) {
            return Err(Error::Shape { arg: "d", expected: format!("an {m} × {n} output"), actual: format!("{} × {}", self.m, self.n) });
        }
        Ok(self)
    }
}

impl<'a> IntoOutput<'a> for DeviceSliceMut<'a, bf16> {
    fn into_output(self, m: usize, n: usize) -> Result<OutputViewMut<'a>> {
        let len = mul("d", "m · n", m, n)?;
        if self.len() != len {
            return Err(Error::Shape { arg: "d", expected: format!("m · n = {m} · {n} = {len} elements"), actual: format!("{} elements", self.len()) });
        }
        OutputViewMut::new(self, m, n)
    }
}

impl<'a> IntoOutput<'a> for &'a mut crate::DeviceBuffer<bf16> {
    fn into_output(self, m: usize, n: usize) -> Result<OutputViewMut<'a>> {
        self.as_slice_mut().into_output(m, n)
    }
}

impl<F: Fp8Format> std::fmt::Debug for ActivationsView<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ActivationsView<{}>[m = {}, k = {}, lda = {}] {:?} {:?}", F::NAME, self.m, self.k, self.lda, self.data, self.scales)
    }
}

impl<F: Fp8Format> std::fmt::Debug for WeightsView<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WeightsView<{}>[n = {}, k = {}, {}] {:?} {:?}", F::NAME, self.n, self.k, self.layout, self.data, self.scales)
    }
}

impl<F: Fp8Format> std::fmt::Debug for GroupedWeightsView<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GroupedWeightsView<{}>[G = {}, n = {}, k = {}, {}] {:?} {:?}", F::NAME, self.groups, self.n, self.k, self.layout, self.data, self.scales)
    }
}

impl std::fmt::Debug for OutputViewMut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OutputViewMut[m = {}, n = {}, ldd = {}] {:?}", self.m, self.n, self.ldd, self.data)
    }
}

/// Writable FP8 activations (`m × k`, contiguous) with their 1×128 scales (`m × ⌈k/128⌉` f32):
/// the output of the activation quantization kernels. Built from
/// `&mut` [`DeviceActivations`](crate::DeviceActivations), or from writable slices (sub-ranges,
/// or raw pointers into memory an engine owns).
pub struct ActivationsViewMut<'a, F> {
    pub(crate) data: DeviceSliceMut<'a, u8>,
    pub(crate) scales: DeviceSliceMut<'a, f32>,
    pub(crate) m: usize,
    pub(crate) k: usize,
    _f: PhantomData<F>,
}

impl<'a, F: Fp8Format> ActivationsViewMut<'a, F> {
    /// `data` must hold at least `m·k` bytes and `scales` at least `m·⌈k/128⌉` floats.
    pub fn new(data: DeviceSliceMut<'a, u8>, scales: DeviceSliceMut<'a, f32>, m: usize, k: usize) -> Result<Self> {
        let shape = format!("m = {m}, k = {k}");
        need("out", "data", mul("out", "m · k", m, k)?, data.len(), &shape)?;
        need("out", "scales", mul("out", "m · ⌈k/128⌉", m, blocks(k))?, scales.len(), &shape)?;
        Ok(ActivationsViewMut { data, scales, m, k, _f: PhantomData })
    }
    /// Rows.
    pub fn m(&self) -> usize {
        self.m
    }
    /// Columns.
    pub fn k(&self) -> usize {
        self.k
    }
    /// A read-only view of the same activations (e.g. for the GEMM that consumes them).
    pub fn as_view(&self) -> ActivationsView<'_, F> {
        ActivationsView { data: self.data.as_slice(), scales: self.scales.as_slice(), m: self.m, k: self.k, lda: self.k, _f: PhantomData }
    }
}

impl<F: Fp8Format> std::fmt::Debug for ActivationsViewMut<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ActivationsViewMut<{}>[m = {}, k = {}] {:?} {:?}", F::NAME, self.m, self.k, self.data, self.scales)
    }
}

/// Writable FP8 weights (`n × k`) with their 128×128 block scales, in a [`WeightLayout`]: the
/// output of the weight quantization kernel (logical) or of
/// [`crate::layout::preshuffle_weights_on_device`] (pre-shuffled).
pub struct WeightsViewMut<'a, F> {
    pub(crate) data: DeviceSliceMut<'a, u8>,
    pub(crate) scales: DeviceSliceMut<'a, f32>,
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) layout: WeightLayout,
    _f: PhantomData<F>,
}

impl<'a, F: Fp8Format> WeightsViewMut<'a, F> {
    /// Logical weights: `data` must hold at least `n·k` bytes and `scales` at least
    /// `⌈n/128⌉·⌈k/128⌉` floats.
    pub fn new(data: DeviceSliceMut<'a, u8>, scales: DeviceSliceMut<'a, f32>, n: usize, k: usize) -> Result<Self> {
        Self::with_layout(data, scales, n, k, WeightLayout::Logical)
    }
    /// Pre-shuffled weights: `k` a multiple of 128, `data` at least `⌈n/16⌉·16·k` bytes, `scales`
    /// at least `⌈n/128⌉·⌈k/128⌉` floats (as [`WeightsView::new_preshuffled`]).
    pub fn new_preshuffled(data: DeviceSliceMut<'a, u8>, scales: DeviceSliceMut<'a, f32>, n: usize, k: usize) -> Result<Self> {
        Self::with_layout(data, scales, n, k, WeightLayout::Preshuffled)
    }
    /// [`Self::new`] or [`Self::new_preshuffled`], by `layout`.
    pub fn with_layout(data: DeviceSliceMut<'a, u8>, scales: DeviceSliceMut<'a, f32>, n: usize, k: usize, layout: WeightLayout) -> Result<Self> {
        check_weights("out", data.len(), scales.len(), None, n, k, layout)?;
        Ok(WeightsViewMut { data, scales, n, k, layout, _f: PhantomData })
    }
    /// Rows.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Columns.
    pub fn k(&self) -> usize {
        self.k
    }
    /// How the values are arranged.
    pub fn layout(&self) -> WeightLayout {
        self.layout
    }
    /// A read-only view of the same weights (e.g. for the GEMM that consumes them).
    pub fn as_view(&self) -> WeightsView<'_, F> {
        WeightsView { data: self.data.as_slice(), scales: self.scales.as_slice(), n: self.n, k: self.k, layout: self.layout, _f: PhantomData }
    }
}

impl<F: Fp8Format> std::fmt::Debug for WeightsViewMut<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WeightsViewMut<{}>[n = {}, k = {}, {}] {:?} {:?}", F::NAME, self.n, self.k, self.layout, self.data, self.scales)
    }
}
