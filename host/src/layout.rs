//! Weight layouts on the device: the **logical** row-major B that every public contract, the
//! host-side quantized types and the CPU reference speak of, and the **pre-shuffled** B layout
//! prepared once, when weights are uploaded, so that a kernel can read each lane's MFMA operand
//! straight from global memory and B skips LDS (issue 12, part 3).
//!
//! # The pre-shuffled layout
//!
//! Defined once, in `fp8gemm_device::tile` ([`shuffled_b_offset`](fp8gemm_device::tile::shuffled_b_offset),
//! [`shuffled_b_index`](fp8gemm_device::tile::shuffled_b_index),
//! [`shuffled_b_bytes`](fp8gemm_device::tile::shuffled_b_bytes)), shared by the device kernels
//! and this module. An `n × k` weight (`k` a multiple of 128) is stored as `⌈n/16⌉ × (k/128)`
//! units of 2048 bytes (16 rows × one 128-wide K block), fragment-major; inside a unit, the 16
//! bytes lane `l` of a wave loads for fragment read `r` sit at `1024·r + 16·l`. Rows past `n`, up
//! to the next multiple of 16, are zero: the buffer holds `⌈n/16⌉·16·k` bytes. Each 16-row
//! stripe of B (`16·k` bytes) occupies the same byte range in both layouts; the shuffle only
//! permutes 16-byte chunks inside a stripe.
//!
//! The scales are the same in both layouts: SFB is `⌈n/128⌉ × ⌈k/128⌉` f32, row-major.
//!
//! Grouped weights (`[G, n, k]`) are `G` such buffers back to back: group `g` starts at byte
//! `g · ⌈n/16⌉·16·k`.
//!
//! # Who reads what
//!
//! * The CPU reference (`crate::reference`), the host-side [`QuantizedWeights`] /
//!   [`GroupedQuantizedWeights`], checkpoint files and `download()` of the owned device weights
//!   are always **logical**.
//! * The device quantization kernel ([`crate::quantize_weights`]) writes logical weights;
//!   [`preshuffle_weights_on_device`] converts them on the device (byte-identical to
//!   [`preshuffle_weights`]).
//! * The GEMM entry points take the layout from the view ([`WeightsView::layout`],
//!   [`GroupedWeightsView::layout`]). A layout an entry point has no kernel for is a typed
//!   [`Error::Layout`], checked before anything is launched; it is never misread. The dense
//!   entry points ([`crate::fp8_gemm_nt`]) and the m-grouped ones
//!   ([`crate::m_grouped_fp8_gemm_nt_contiguous`], [`crate::m_grouped_fp8_gemm_nt_masked`], and
//!   so [`crate::MoeLayer`]) run pre-shuffled weights on their bs kernels
//!   (`fp8gemm_device::mainloop_bs`). The K-grouped GEMM ([`crate::k_grouped_fp8_gemm_tn_contiguous`]) takes
//!   MN-major [`DeviceKGroupedOperand`](crate::DeviceKGroupedOperand)s, not `n × k` weights, so
//!   no weights view can reach it.
//!
//! # Making pre-shuffled weights
//!
//! * From the host: [`DeviceWeights::upload_preshuffled`](crate::DeviceWeights::upload_preshuffled),
//!   [`DeviceGroupedWeights::upload_preshuffled`](crate::DeviceGroupedWeights::upload_preshuffled),
//!   or expert by expert with
//!   [`DeviceGroupedWeights::alloc_preshuffled`](crate::DeviceGroupedWeights::alloc_preshuffled) +
//!   [`upload_group`](crate::DeviceGroupedWeights::upload_group) (the shuffle is done on the
//!   host in bounded chunks); checkpoints with
//!   `DeviceMoeWeights::load_with_layout` (feature `checkpoint`).
//! * On the device: [`preshuffle_weights_on_device`], or
//!   [`DeviceWeights::to_preshuffled`](crate::DeviceWeights::to_preshuffled) /
//!   [`DeviceGroupedWeights::to_preshuffled`](crate::DeviceGroupedWeights::to_preshuffled).
//! * Memory an engine owns: [`WeightsView::new_preshuffled`] /
//!   [`GroupedWeightsView::new_preshuffled`] (the caller vouches for the contents).

use fp8gemm_device::args::{GlobalPtr, PreshuffleArgs};
use fp8gemm_device::layout as dl;
use fp8gemm_device::tile;
use rayon::prelude::*;

use crate::checks::check_format;
use crate::error::{Error, Result};
use crate::fp8::Fp8Format;
#[allow(unused_imports)] // doc links
use crate::quant::GroupedQuantizedWeights;
use crate::quant::QuantizedWeights;
use crate::runtime::Stream;
#[allow(unused_imports)] // doc links
use crate::view::GroupedWeightsView;
use crate::view::{WeightsView, WeightsViewMut};

/// How the FP8 values of weights `B` (`n × k`) are arranged in device memory. The scales
/// (`⌈n/128⌉ × ⌈k/128⌉` f32, row-major) are the same in both layouts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WeightLayout {
    /// Row-major `n × k` bytes, the public contract: what the host-side quantized types, the CPU
    /// reference, checkpoints and the device quantization kernel use, and what every GEMM
    /// kernel reads through LDS.
    #[default]
    Logical,
    /// The pre-shuffled layout of `fp8gemm_device::tile::shuffled_b_offset` (see the
    /// [module docs](self)): `⌈n/16⌉·16·k` bytes, rows padded to 16 with zeros, `k` a multiple
    /// of 128. Read by the kernels that load B straight into registers; an entry point without
    /// such a kernel rejects it ([`Error::Layout`]).
    Preshuffled,
}

impl std::fmt::Display for WeightLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WeightLayout::Logical => "logical",
            WeightLayout::Preshuffled => "pre-shuffled",
        })
    }
}

impl WeightLayout {
    /// Bytes of the FP8 values of one `n × k` weight in this layout: `n·k` (logical) or
    /// `⌈n/16⌉·16·k` (pre-shuffled; `k` must be a multiple of 128). Errors: overflow
    /// ([`Error::Shape`], argument `n`), `k` not a multiple of 128 for the pre-shuffled layout
    /// ([`Error::Shape`], argument `k`).
    pub fn data_bytes(self, n: usize, k: usize) -> Result<usize> {
        match self {
            WeightLayout::Logical => crate::checks::shape_product("n", &[n, k], "n · k"),
            WeightLayout::Preshuffled => preshuffled_bytes(n, k),
        }
    }
}

/// The K block of the pre-shuffled layout: `k` must be a multiple of it.
pub const PRESHUFFLE_K_ALIGN: usize = tile::SCALE_BLOCK_K as usize;
/// Rows of one fragment of the pre-shuffled layout: `n` is padded to a multiple of it.
pub const PRESHUFFLE_ROWS: usize = 16;

/// Checks that `k` suits the pre-shuffled layout (a multiple of 128), naming `arg`.
pub(crate) fn check_preshuffle_k(arg: &'static str, k: usize) -> Result<()> {
    if !k.is_multiple_of(PRESHUFFLE_K_ALIGN) {
        return Err(Error::Shape { arg, expected: format!("a multiple of {PRESHUFFLE_K_ALIGN} (the pre-shuffled layout's K block)"), actual: k.to_string() });
    }
    Ok(())
}

/// Bytes of an `n × k` weight in the pre-shuffled layout, `⌈n/16⌉·16·k`
/// (`fp8gemm_device::tile::shuffled_b_bytes`, overflow-checked). Errors: `k` not a multiple of
/// 128 ([`Error::Shape`], argument `k`); a size that overflows `usize` (argument `n`).
pub fn preshuffled_bytes(n: usize, k: usize) -> Result<usize> {
    check_preshuffle_k("k", k)?;
    // ⌈n/16⌉·16 itself overflows for n within 15 of usize::MAX: checked like the product.
    let bytes = crate::checks::shape_product("n", &[n.div_ceil(PRESHUFFLE_ROWS), PRESHUFFLE_ROWS, k], "⌈n/16⌉·16 · k")?;
    debug_assert_eq!(bytes as u64, tile::shuffled_b_bytes(n as u64, k as u64));
    Ok(bytes)
}

fn check_bytes(arg: &'static str, what: &str, len: usize, expected: usize, shape: &str) -> Result<()> {
    if len != expected {
        return Err(Error::Shape { arg, expected: format!("{what} of {expected} bytes for {shape}"), actual: format!("{len} bytes") });
    }
    Ok(())
}

/// Shuffles the 16-row stripes `frags` of the logical `n × k` weight `logical` into `out`
/// (`frags.len() · 16 · k` bytes: those stripes' units, in the pre-shuffled order); rows past
/// `n` become zero. The caller checked the lengths and `k % 128 == 0`.
pub(crate) fn shuffle_stripes(logical: &[u8], n: usize, k: usize, frags: std::ops::Range<usize>, out: &mut [u8]) {
    let stripe = PRESHUFFLE_ROWS * k;
    debug_assert_eq!(out.len(), frags.len() * stripe);
    if stripe == 0 {
        return;
    }
    let nkb = (k / PRESHUFFLE_K_ALIGN) as u64;
    out.par_chunks_mut(stripe).zip(frags).for_each(|(dst, f)| {
        let base = tile::shuffled_b_index(f as u64 * 16, 0, nkb);
        for r in 0..PRESHUFFLE_ROWS {
            let row = f * PRESHUFFLE_ROWS + r;
            for col in (0..k).step_by(16) {
                let at = (tile::shuffled_b_index(row as u64, col as u64, nkb) - base) as usize;
                let chunk = &mut dst[at..at + 16];
                if row < n {
                    chunk.copy_from_slice(&logical[row * k + col..row * k + col + 16]);
                } else {
                    chunk.fill(0);
                }
            }
        }
    });
}

/// The inverse of [`shuffle_stripes`] over a whole weight: the logical `n × k` bytes of the
/// pre-shuffled `shuffled` (padding rows ignored). The caller checked the lengths.
fn unshuffle_into(shuffled: &[u8], n: usize, k: usize, logical: &mut [u8]) {
    let stripe = PRESHUFFLE_ROWS * k;
    if stripe == 0 {
        return;
    }
    let nkb = (k / PRESHUFFLE_K_ALIGN) as u64;
    logical.par_chunks_mut(stripe).enumerate().for_each(|(f, dst)| {
        let base = tile::shuffled_b_index(f as u64 * 16, 0, nkb) as usize;
        let src = &shuffled[base..base + stripe];
        for r in 0..dst.len() / k {
            let row = f * PRESHUFFLE_ROWS + r;
            for col in (0..k).step_by(16) {
                let at = tile::shuffled_b_index(row as u64, col as u64, nkb) as usize - base;
                dst[r * k + col..r * k + col + 16].copy_from_slice(&src[at..at + 16]);
            }
        }
    });
    debug_assert!(n * k == logical.len());
}

/// The pre-shuffled bytes (`⌈n/16⌉·16·k`) of a logical row-major `n × k` FP8 weight given as
/// bytes. Errors ([`Error::Shape`]): `k` not a multiple of 128 (argument `k`), `logical` not
/// `n·k` bytes (argument `logical`).
pub fn preshuffle_bytes(logical: &[u8], n: usize, k: usize) -> Result<Vec<u8>> {
    let bytes = preshuffled_bytes(n, k)?;
    check_bytes("logical", "a logical weight", logical.len(), crate::checks::shape_product("n", &[n, k], "n · k")?, &format!("n = {n}, k = {k}"))?;
    let mut out = vec![0u8; bytes];
    shuffle_stripes(logical, n, k, 0..n.div_ceil(PRESHUFFLE_ROWS), &mut out);
    Ok(out)
}

/// The logical row-major `n × k` bytes of a pre-shuffled weight (the inverse of
/// [`preshuffle_bytes`]; the padding rows are not read). Errors ([`Error::Shape`]): `k` not a
/// multiple of 128 (argument `k`), `shuffled` not `⌈n/16⌉·16·k` bytes (argument `shuffled`).
pub fn unshuffle_bytes(shuffled: &[u8], n: usize, k: usize) -> Result<Vec<u8>> {
    let bytes = preshuffled_bytes(n, k)?;
    check_bytes("shuffled", "a pre-shuffled weight (⌈n/16⌉·16·k)", shuffled.len(), bytes, &format!("n = {n}, k = {k}"))?;
    let mut out = vec![0u8; crate::checks::shape_product("n", &[n, k], "n · k")?];
    unshuffle_into(shuffled, n, k, &mut out);
    Ok(out)
}

/// The pre-shuffled bytes of quantized weights `w` (what
/// [`DeviceWeights::upload_preshuffled`](crate::DeviceWeights::upload_preshuffled) puts on the
/// device; the scales stay as they are). Errors ([`Error::Shape`]): `w.k` not a multiple of 128
/// (argument `k`), `w.data` not `n·k` values (argument `w.data`).
pub fn preshuffle_weights<F: Fp8Format>(w: &QuantizedWeights<F>) -> Result<Vec<u8>> {
    check_preshuffle_k("k", w.k)?;
    let expected = crate::checks::shape_product("w.data", &[w.n, w.k], "n · k")?;
    if w.data.len() != expected {
        return Err(Error::Shape { arg: "w.data", expected: format!("n · k = {} · {} values", w.n, w.k), actual: format!("{} values", w.data.len()) });
    }
    preshuffle_bytes(crate::fp8::as_bits(&w.data), w.n, w.k)
}

/// Quantized weights in the logical layout from pre-shuffled bytes and their scales (the
/// inverse of [`preshuffle_weights`]). Errors ([`Error::Shape`]): `k` not a multiple of 128,
/// `shuffled` not `⌈n/16⌉·16·k` bytes, `scales` not `⌈n/128⌉·⌈k/128⌉` values.
pub fn unshuffle_weights<F: Fp8Format>(shuffled: &[u8], scales: Vec<f32>, n: usize, k: usize) -> Result<QuantizedWeights<F>> {
    let logical = unshuffle_bytes(shuffled, n, k)?;
    let expected = crate::checks::shape_product("scales", &[n.div_ceil(128), k.div_ceil(128)], "⌈n/128⌉ · ⌈k/128⌉")?;
    if scales.len() != expected {
        return Err(Error::Shape {
            arg: "scales", expected: format!("⌈n/128⌉ · ⌈k/128⌉ = {expected} values"), actual: format!("{} values", scales.len())
        });
    }
    QuantizedWeights::from_parts(logical.into_iter().map(F::from_bits).collect(), scales, n, k).map_err(Error::from)
}

/// Converts logical weights on the device into the pre-shuffled layout: `dst`'s values become
/// the pre-shuffled arrangement of `src`'s (byte-identical to [`preshuffle_weights`], padding
/// rows zero) and its scales a copy of `src`'s. Both are queued on `stream` (a kernel and a
/// device-to-device copy): asynchronous, no allocation, capture-safe. Use it after
/// [`crate::quantize_weights`] (which writes logical weights) to prepare weights quantized on
/// the device for the pre-shuffled kernels.
///
/// Errors (typed, nothing is queued): `src` not [`WeightLayout::Logical`] or `dst` not
/// [`WeightLayout::Preshuffled`] ([`Error::Layout`]); shapes that differ ([`Error::Shape`],
/// argument `dst`); `k` not a multiple of 128 (argument `k`); value buffers not 16-byte aligned
/// (arguments `src` / `dst`); a pre-shuffled weight of 2³¹ bytes or more (the kernel's 32-bit
/// offsets); the format not the device's ([`Error::Format`]); buffers of another context
/// ([`Error::ForeignBuffer`]).
pub fn preshuffle_weights_on_device<'a, F: Fp8Format>(
    stream: &Stream,
    src: impl Into<WeightsView<'a, F>>,
    dst: impl Into<WeightsViewMut<'a, F>>,
) -> Result<()> {
    let (src, mut dst) = (src.into(), dst.into());
    let ctx = stream.context();
    check_format::<F>(ctx, "dst")?;
    ctx.check_owner("src", src.data.owner())?;
    ctx.check_owner("src", src.scales.owner())?;
    ctx.check_owner("dst", dst.data.owner())?;
    ctx.check_owner("dst", dst.scales.owner())?;
    if src.layout() != WeightLayout::Logical {
        return Err(Error::Layout {
            arg: "src",
            expected: WeightLayout::Logical,
            actual: src.layout(),
            reason: "preshuffle_weights_on_device converts logical weights",
        });
    }
    if dst.layout() != WeightLayout::Preshuffled {
        return Err(Error::Layout {
            arg: "dst",
            expected: WeightLayout::Preshuffled,
            actual: dst.layout(),
            reason: "preshuffle_weights_on_device writes pre-shuffled weights",
        });
    }
    let dst_shape = (dst.n(), dst.k());
    launch_preshuffle(stream, &src.data, &mut dst.data, 1, src.n(), src.k(), dst_shape)?;
    let sf = src.scales.sub(0, crate::quant::blocks(src.n()) * crate::quant::blocks(src.k()))?;
    let mut dsf = dst.scales.reborrow();
    let mut dsf = crate::view::DeviceSliceMut::sub_mut(&mut dsf, 0, sf.len())?;
    dsf.copy_from_device(stream, sf)
}

/// Queues the pre-shuffle kernel over `groups` groups of `n × k` logical weights in `src`
/// (group stride `n·k`) into `dst` (group stride `⌈n/16⌉·16·k`), after checking everything the
/// kernel's contract needs. `dst_shape` is the destination's `(n, k)`.
pub(crate) fn launch_preshuffle(
    stream: &Stream,
    src: &crate::view::DeviceSlice<'_, u8>,
    dst: &mut crate::view::DeviceSliceMut<'_, u8>,
    groups: usize,
    n: usize,
    k: usize,
    dst_shape: (usize, usize),
) -> Result<()> {
    if dst_shape != (n, k) {
        return Err(Error::Shape { arg: "dst", expected: format!("n × k = {n} × {k} (as src)"), actual: format!("{} × {}", dst_shape.0, dst_shape.1) });
    }
    let per_dst = preshuffled_bytes(n, k)?;
    let per_src = crate::checks::shape_product("src", &[n, k], "n · k")?;
    let need_src = crate::checks::shape_product("src", &[groups, per_src], "G · n · k")?;
    let need_dst = crate::checks::shape_product("dst", &[groups, per_dst], "G · ⌈n/16⌉·16 · k")?;
    if src.len() < need_src {
        return Err(Error::Shape { arg: "src", expected: format!("at least {need_src} bytes"), actual: format!("{} bytes", src.len()) });
    }
    if dst.len() < need_dst {
        return Err(Error::Shape { arg: "dst", expected: format!("at least {need_dst} bytes"), actual: format!("{} bytes", dst.len()) });
    }
    for (arg, addr) in [("src", src.device_ptr().addr()), ("dst", dst.device_ptr().addr())] {
        if !addr.is_multiple_of(16) {
            return Err(Error::Shape { arg, expected: "values at a 16-byte aligned device address".into(), actual: format!("{addr:#x}") });
        }
    }
    if per_dst == 0 || groups == 0 {
        return Ok(());
    }
    crate::checks::check_tensor_bytes("dst", per_dst as u64)?;
    let chunks = per_dst / 16; // < 2^27: per_dst < 2^31
    let grid_x = (chunks as u32).div_ceil(dl::PRESHUFFLE_THREADS);
    let grid_y = u32::try_from(groups)
        .ok()
        .filter(|&g| g <= dl::MAX_GROUPS)
        .ok_or_else(|| Error::Unsupported(format!("{groups} groups: at most {} per pre-shuffle launch", dl::MAX_GROUPS)))?;
    let args = PreshuffleArgs { src: GlobalPtr::new(src.device_ptr().addr()), dst: dst.device_ptr(), n: n as u32, k: k as u32 };
    // SAFETY: `src` holds at least G·n·k bytes and `dst` G·⌈n/16⌉·16·k bytes (checked above),
    // both 16-byte aligned, kept alive by their views (owned buffers free only after a device
    // synchronization; raw views by their constructors' contracts); k % 128 == 0 and every
    // group's pre-shuffled bytes < 2^31, so the kernel's 32-bit offsets do not wrap; it writes
    // exactly chunk indices < ⌈n/16⌉·k/16 of group blockIdx.y < G and reads rows < n. `dst` is
    // borrowed mutably, `src` only read.
    unsafe { stream.launch(dl::PRESHUFFLE_B, [grid_x, grid_y, 1], 0, &args) }
}
