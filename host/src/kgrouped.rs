//! DeepGEMM's K-grouped MoE weight-gradient GEMM, [`k_grouped_fp8_gemm_tn_contiguous`]:
//! for every expert `g`, `D[g] = C[g] + A_gᵀ · B_g` in f32, with the tokens of all experts
//! concatenated along K.
//!
//! # Layouts ("TN", both operands MN-major, as DeepGEMM's `per_channel_cast_to_fp8` makes them)
//!
//! * `A`: `[total_k, m]` FP8 row-major (token `t`, column `i` at `t·m + i`), group `g` is rows
//!   `k_off(g) .. k_off(g) + ks[g]` with `k_off(g) = Σ_{h<g} ks[h]`; SFA: `[total_k/128, m]` f32,
//!   one scale per 128-token block and column. [`KGroupedMnMajor`] on the host,
//!   [`DeviceKGroupedOperand`] on the device.
//! * `B`: `[total_k, n]` FP8 and SFB `[total_k/128, n]` f32, the same way. B here is an
//!   activation-gradient-like MN-major operand, not `n × k` weights: it has no
//!   [pre-shuffled layout](crate::layout), and no weights view converts to its type.
//! * `C`, `D`: `[G, m, n]` f32 row-major. `C = None` accumulates into `D` in place (`C` aliases
//!   `D`); otherwise `C` is a separate buffer and `D = C + …` (C is only read).
//! * `ks`: `G` group sizes (`i32`, each a multiple of 128, zero allowed) **on the device**: the
//!   kernel reads them, the host never does (no synchronizing copy); the caller passes their
//!   host-side total `total_k`, which must equal the operands' row count.
//!
//! # Validation: what is checked where
//!
//! Before launch (typed [`Error`]s naming the argument): formats, buffer owners, `total_k`
//! against both operands (`Shape` on `total_k`), `total_k % 128`, `ks.len() = G` against the
//! sizes of `C` and `D`, `m % 8`, `n % 8`, 31-bit tensor extents and the grid size.
//! [`upload_ks`] is the cheap place to check the sizes themselves (non-negative multiples of 128)
//! and it returns their total. Sizes produced on the device are not checked: the kernel clamps
//! them so no access leaves the tensors (see [`fp8gemm_device::args::KGroupedArgs`]); sizes that
//! are not multiples of 128 or do not sum to `total_k` give a defined but meaningless result.
//!
//! # Accuracy
//!
//! Per 128-token block the kernel accumulates exact FP8 products in f32 (MFMA), then adds
//! `partial · (sfa · sfb)` (f32 FMA) to an f32 accumulator; the epilogue adds `C` once. The CPU
//! reference (`crate::reference::k_grouped_fp8_gemm_nt_contiguous`, fed by
//! [`KGroupedMnMajor::to_k_major`]) sums the scaled partials in f64, so the two differ only by
//! f32 rounding of the promotion and of the `C` addition.

//!
//! # Modelled time of DeepGEMM's wgrad benchmark shapes (**modelled, not measured**)
//!
//! No MI300X is available. `fp8gemm profile --kgrouped --groups G --m M --n N --k K --scope xcd`
//! runs the kernel through the emulator's cycle-level timing model (`amdgpu_emu::timing`, MI300X
//! parameters, XCD 0's share of the workgroups with shared bandwidth scaled), every group exactly
//! `K` tokens, C accumulated in place; the 128 × 128 kernel is chosen in every case:
//!
//! | G | M × N | K per group | modelled time | modelled TFLOPS | busy: MFMA / LDS / VMEM-L1 / HBM | top stalls |
//! |---|---|---|---|---|---|---|
//! | 4 | 2048 × 7168 | 4096 |   746 µs | 645 | 40 / 40 / 45 / 16 % | vmcnt 35 %, lgkmcnt 26 %, MFMA busy 24 % |
//! | 8 | 2048 × 7168 | 4096 |  1498 µs | 642 | 40 / 40 / 45 / 16 % | vmcnt 37 %, lgkmcnt 25 %, MFMA busy 23 % |
//! | 4 | 2048 × 7168 | 8192 |  1271 µs | 757 | 47 / 47 / 41 / 17 % | lgkmcnt 31 %, MFMA busy 29 %, vmcnt 21 % |
//! | 4 | 7168 × 4096 | 4096 |  1641 µs | 586 | 36 / 36 / 41 / 29 % | vmcnt 44 %, lgkmcnt 21 %, MFMA busy 21 % |
//! | 8 | 7168 × 4096 | 4096 |  3421 µs | 562 | 35 / 35 / 39 / 26 % | vmcnt 49 %, lgkmcnt 20 %, MFMA busy 19 % |
//! | 4 | 7168 × 4096 | 8192 |  2796 µs | 688 | 43 / 43 / 37 / 68 % | vmcnt 32 %, MFMA busy 26 %, lgkmcnt 25 % |
//!
//! (For scale, the same model puts the dense `fp8_gemm_nt` at 2048 × 7168 × 4096 at 349 TFLOPS.)
//! The f32 C/D traffic (`G·M·N·4` bytes read and written) is what makes 7168 × 4096 slower per
//! FLOP than 2048 × 7168; at K = 8192 the model also reports 8.0 GB of HBM traffic for 0.84 GB
//! of distinct data (operand strips re-fetched past the caches: the tile order inside a group,
//! M fastest, is the dense kernels' and was not tuned for this GEMM). Accuracy at these shapes was checked at 512 tokens per group (the full
//! functional emulation with the CPU references takes minutes per 512 tokens): `fp8gemm kgrouped
//! --uniform` with G = 4, 2048 × 7168 and G = 8, 7168 × 4096: calc_diff 9.1e-15 / 1.5e-14 vs the
//! dequantized and 2.2e-4 vs the unquantized reference, 0 LDS bank-conflict cycles.

use std::marker::PhantomData;

use fp8gemm_device::args::{GlobalPtr, KGroupedArgs};
use fp8gemm_device::kgrouped::{KGROUPED_TILES, MN_ALIGN};
use fp8gemm_device::tile::{self, DenseTile};

use crate::checks::{check_format, check_tensor_bytes};
use crate::codeobj::Arch;
use crate::config::{GemmConfig, Overrides, Remap};
use crate::error::{Error, Result};
use crate::fp8::Fp8Format;
use crate::gemm::GemmRun;
use crate::quant::{BLOCK, KGroupedOperand};
use crate::runtime::{Context, DeviceBuffer, Stream};
use crate::view::{DeviceSlice, DeviceSliceMut};

/// Alignment of every group's size along K (DeepGEMM's `get_mk_alignment_for_contiguous_layout()`
/// for this GEMM): one scale block.
pub const K_ALIGNMENT: usize = BLOCK;

fn check_ks(ks: &[usize]) -> Result<usize> {
    let mut total = 0usize;
    for (g, &k) in ks.iter().enumerate() {
        if !k.is_multiple_of(K_ALIGNMENT) {
            return Err(Error::Shape {
                arg: "ks",
                expected: format!("group sizes that are multiples of {K_ALIGNMENT} (zero allowed)"),
                actual: format!("ks[{g}] = {k}"),
            });
        }
        total = total.checked_add(k).ok_or_else(|| Error::Unsupported(format!("the sum of {} group sizes overflows", ks.len())))?;
    }
    Ok(total)
}

/// One FP8 operand of the K-grouped GEMM on the host, MN-major: `data` is `[total_k, cols]`
/// row-major, `scales` `[total_k/128, cols]` (one per 128-token block and column), groups of
/// `ks[g]` rows back to back.
#[derive(Clone, Debug)]
pub struct KGroupedMnMajor<F> {
    /// FP8 values, `[total_k, cols]`.
    pub data: Vec<F>,
    /// Scales, `[total_k/128, cols]`.
    pub scales: Vec<f32>,
    /// Columns (`m` for A, `n` for B).
    pub cols: usize,
    /// Rows (tokens) of every group, multiples of 128.
    pub ks: Vec<usize>,
}

impl<F: Fp8Format> KGroupedMnMajor<F> {
    /// Quantizes a row-major `[Σ ks, cols]` matrix (DeepGEMM's `per_channel_cast_to_fp8`: one
    /// scale per 128 consecutive rows of a column), with exactly the arithmetic of
    /// [`KGroupedOperand::quantize`] (the same values, transposed). Every `ks[g]` must be a
    /// multiple of 128.
    pub fn quantize<X: Copy + Into<f32> + Sync>(x: &[X], cols: usize, ks: &[usize]) -> Result<Self> {
        let total = check_ks(ks)?;
        let len = total.checked_mul(cols).ok_or_else(|| Error::Unsupported(format!("{total} × {cols} elements overflow")))?;
        if x.len() != len {
            return Err(Error::Shape { arg: "x", expected: format!("Σ ks · cols = {total} · {cols} elements"), actual: format!("{} elements", x.len()) });
        }
        // Per group, [k_g, cols] → [cols, k_g]: the per-token recipe along K.
        let mut t = vec![0f32; len];
        let mut off = 0;
        for &k in ks {
            let xs: Vec<f32> = x[off * cols..(off + k) * cols].iter().map(|&v| v.into()).collect();
            transpose(&xs, k, cols, &mut t[off * cols..(off + k) * cols]);
            off += k;
        }
        Self::from_k_major(&KGroupedOperand::quantize(&t, cols, ks)?)
    }

    /// The same operand from the K-major layout of [`KGroupedOperand`] (every `ks[g]` a multiple
    /// of 128, lengths matching the shape).
    pub fn from_k_major(op: &KGroupedOperand<F>) -> Result<Self> {
        let total = check_ks(&op.ks)?;
        let cols = op.rows;
        check_host_len("op.data", op.data.len(), total, cols)?;
        check_host_len("op.scales", op.scales.len(), total / BLOCK, cols)?;
        let mut data = vec![F::default(); op.data.len()];
        let mut scales = vec![0f32; op.scales.len()];
        for g in 0..op.ks.len() {
            let (k, (off, soff)) = (op.ks[g], op.offsets(g));
            // Group g is [cols, k] at off (K-major); its MN-major rows start at token off / cols.
            transpose(&op.data[off..off + cols * k], cols, k, &mut data[off..off + cols * k]);
            let kb = k / BLOCK;
            transpose(&op.scales[soff..soff + cols * kb], cols, kb, &mut scales[soff..soff + cols * kb]);
        }
        Ok(KGroupedMnMajor { data, scales, cols, ks: op.ks.clone() })
    }

    /// The K-major form ([`KGroupedOperand`]), what the CPU reference takes.
    pub fn to_k_major(&self) -> Result<KGroupedOperand<F>> {
        let total = self.check()?;
        let cols = self.cols;
        let mut data = vec![F::default(); self.data.len()];
        let mut scales = vec![0f32; self.scales.len()];
        let mut off = 0;
        for &k in &self.ks {
            let (d, s) = (off * cols, off / BLOCK * cols);
            transpose(&self.data[d..d + k * cols], k, cols, &mut data[d..d + k * cols]);
            let kb = k / BLOCK;
            transpose(&self.scales[s..s + kb * cols], kb, cols, &mut scales[s..s + kb * cols]);
            off += k;
        }
        debug_assert_eq!(off, total);
        Ok(KGroupedOperand { data, scales, rows: cols, ks: self.ks.clone() })
    }

    /// Total rows `Σ ks`.
    pub fn total_k(&self) -> usize {
        self.ks.iter().sum()
    }

    /// The dequantized `[total_k, cols]` matrix.
    pub fn dequantize(&self) -> Vec<f32> {
        let cols = self.cols.max(1);
        self.data.iter().enumerate().map(|(i, q)| q.to_f32() * self.scales[(i / cols / BLOCK) * cols + i % cols]).collect()
    }

    /// Checks the lengths against the shape; returns `Σ ks`.
    fn check(&self) -> Result<usize> {
        let total = check_ks(&self.ks)?;
        check_host_len("data", self.data.len(), total, self.cols)?;
        check_host_len("scales", self.scales.len(), total / BLOCK, self.cols)?;
        Ok(total)
    }
}

fn check_host_len(arg: &'static str, len: usize, rows: usize, cols: usize) -> Result<()> {
    if rows.checked_mul(cols) != Some(len) {
        return Err(Error::Shape { arg, expected: format!("{rows} · {cols} elements"), actual: format!("{len} elements") });
    }
    Ok(())
}

/// `out[c·rows + r] = x[r·cols + c]` (row-major `rows × cols` → `cols × rows`).
fn transpose<T: Copy>(x: &[T], rows: usize, cols: usize, out: &mut [T]) {
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = x[r * cols + c];
        }
    }
}

/// A K-grouped operand on the device: `[total_k, cols]` FP8 values with `[total_k/128, cols]`
/// scales (the group sizes are not part of it: they live in a separate device buffer, see
/// [`upload_ks`]).
pub struct DeviceKGroupedOperand<F> {
    data: DeviceBuffer<u8>,
    scales: DeviceBuffer<f32>,
    cols: usize,
    total_k: usize,
    _f: PhantomData<F>,
}

impl<F: Fp8Format> DeviceKGroupedOperand<F> {
    /// Copies an operand to the device after checking its lengths and group sizes.
    pub fn upload(ctx: &Context, op: &KGroupedMnMajor<F>) -> Result<Self> {
        let total_k = op.check()?;
        Ok(DeviceKGroupedOperand { data: ctx.upload(crate::fp8::as_bits(&op.data))?, scales: ctx.upload(&op.scales)?, cols: op.cols, total_k, _f: PhantomData })
    }
    /// Columns (`m` for A, `n` for B).
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Rows (tokens of all groups).
    pub fn total_k(&self) -> usize {
        self.total_k
    }
}

impl<F: Fp8Format> DeviceKGroupedOperand<F> {
    /// A view of the whole operand (what [`k_grouped_fp8_gemm_tn_contiguous`] takes).
    pub fn view(&self) -> KGroupedOperandView<'_, F> {
        KGroupedOperandView { data: self.data.as_slice(), scales: self.scales.as_slice(), cols: self.cols, total_k: self.total_k, _f: PhantomData }
    }
}

impl<'a, F: Fp8Format> From<&'a DeviceKGroupedOperand<F>> for KGroupedOperandView<'a, F> {
    fn from(op: &'a DeviceKGroupedOperand<F>) -> Self {
        op.view()
    }
}

/// A K-grouped operand in device memory, MN-major: `[total_k, cols]` FP8 (tokens outermost,
/// `cols` = `m` for A, `n` for B) and `[total_k / 128, cols]` f32 scales, both contiguous. Built
/// from a [`DeviceKGroupedOperand`] or from [`DeviceSlice`]s of memory an engine owns.
pub struct KGroupedOperandView<'a, F> {
    data: DeviceSlice<'a, u8>,
    scales: DeviceSlice<'a, f32>,
    cols: usize,
    total_k: usize,
    _f: PhantomData<F>,
}

impl<F> Clone for KGroupedOperandView<'_, F> {
    fn clone(&self) -> Self {
        KGroupedOperandView { data: self.data, scales: self.scales, cols: self.cols, total_k: self.total_k, _f: PhantomData }
    }
}

impl<F: Fp8Format> std::fmt::Debug for KGroupedOperandView<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KGroupedOperandView<{}>[{} x {}]", F::NAME, self.total_k, self.cols)
    }
}

impl<'a, F: Fp8Format> KGroupedOperandView<'a, F> {
    /// A view of `total_k × cols` FP8 bytes and their `total_k / 128 × cols` scales. `total_k`
    /// must be a multiple of 128 and the slices exactly that long (checked, overflow included).
    pub fn new(data: DeviceSlice<'a, u8>, scales: DeviceSlice<'a, f32>, cols: usize, total_k: usize) -> Result<Self> {
        if !total_k.is_multiple_of(K_ALIGNMENT) {
            return Err(Error::Shape { arg: "total_k", expected: format!("a multiple of {K_ALIGNMENT}"), actual: total_k.to_string() });
        }
        let want = |arg: &'static str, rows: usize, len: usize| -> Result<()> {
            match rows.checked_mul(cols) {
                Some(n) if n == len => Ok(()),
                Some(n) => Err(Error::Shape { arg, expected: format!("{rows} · {cols} = {n} elements"), actual: format!("{len} elements") }),
                None => Err(Error::Shape { arg, expected: format!("{rows} · {cols} elements (overflows)"), actual: format!("{len} elements") }),
            }
        };
        want("data", total_k, data.len())?;
        want("scales", total_k / K_ALIGNMENT, scales.len())?;
        Ok(KGroupedOperandView { data, scales, cols, total_k, _f: PhantomData })
    }
    /// Columns (`m` for A, `n` for B).
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Rows (tokens of all groups).
    pub fn total_k(&self) -> usize {
        self.total_k
    }
}

/// Checks group sizes on the host (each a non-negative multiple of 128 that fits in `i32`) and
/// copies them to the device; returns the buffer and the total to pass to
/// [`k_grouped_fp8_gemm_tn_contiguous`].
pub fn upload_ks(ctx: &Context, ks: &[usize]) -> Result<(DeviceBuffer<i32>, usize)> {
    let total = check_ks(ks)?;
    let ks32 = ks
        .iter()
        .enumerate()
        .map(|(g, &k)| i32::try_from(k).map_err(|_| Error::Shape { arg: "ks", expected: "sizes below 2^31".into(), actual: format!("ks[{g}] = {k}") }))
        .collect::<Result<Vec<_>>>()?;
    Ok((ctx.upload(&ks32)?, total))
}

/// Chooses the tile for a K-grouped problem under `overrides`: a forced tile
/// ([`Overrides::tile`]; the other fields do not apply to these kernels), else the registered
/// k-grouped kernel with the least estimate of the generated cost model
/// ([`crate::select::plan_kgrouped`]: the coefficients of the dense kernel of the same tile
/// stand in for the k-grouped main loop, with the average group size `total_k / G` as the K of
/// every tile, the real sizes being on the device), on the architecture's full CU count.
pub fn choose_tile(m: u32, n: u32, groups: u32, total_k: u64, arch: Arch, overrides: &Overrides) -> Result<DenseTile> {
    let cus = crate::config::GemmDesc::dense(1, 4, 128, arch).cus;
    let plan = crate::select::plan_kgrouped(m, n, groups, total_k, arch, cus, overrides).map_err(|e| Error::Unsupported(e.to_string()))?;
    KGROUPED_TILES
        .iter()
        .copied()
        .find(|t| (t.block_m, t.block_n) == (plan.kernel.block_m, plan.kernel.block_n))
        .ok_or_else(|| Error::Unsupported(format!("{}: not a k-grouped tile", plan.kernel.name())))
}

/// The launch configuration [`k_grouped_fp8_gemm_tn_contiguous`] uses for a problem under
/// `overrides` (the launching stream's, [`crate::Stream::overrides`]).
pub fn kgrouped_config(m: u32, n: u32, groups: u32, total_k: u64, arch: Arch, overrides: &Overrides) -> Result<GemmConfig> {
    let t = choose_tile(m, n, groups, total_k, arch, overrides)?;
    let grid = u64::from(groups) * u64::from(t.grid(m, n));
    let grid = u32::try_from(grid).map_err(|_| Error::Unsupported(format!("grid of {grid} workgroups does not fit in 32 bits")))?;
    let config = GemmConfig {
        block_m: t.block_m,
        block_n: t.block_n,
        block_k: t.block_k(),
        workgroup_size: tile::THREADS,
        lds_bytes: t.lds_bytes(),
        kernel: t.name,
        grid,
        splits: 1,
        remap: Remap::Xcd { xcds: tile::NUM_XCDS },
        arch,
        stream_k: None,
    };
    print_once(&config, m, n, groups, total_k);
    Ok(config)
}

/// At `crate::config::set_print_configs` level 1 or more, prints each distinct
/// configuration once per process (as the other entry points' choice does).
fn print_once(config: &GemmConfig, m: u32, n: u32, groups: u32, total_k: u64) {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static SEEN: OnceLock<Mutex<HashSet<GemmConfig>>> = OnceLock::new();
    if !crate::config::printing_configs() {
        return;
    }
    // A poisoned lock only means another thread panicked while printing; the set is still valid.
    let first = SEEN.get_or_init(|| Mutex::new(HashSet::new())).lock().unwrap_or_else(|e| e.into_inner()).insert(*config);
    if first {
        eprintln!("fp8gemm config: {config} (first for k-grouped m={m} n={n} groups={groups} total_k={total_k})");
    }
}

/// K-grouped `D[g] = C[g] + A_gᵀ · B_g` with per-128-token scales on both operands (DeepGEMM's
/// `k_grouped_fp8_gemm_tn_contiguous`; layouts and validation in the [module docs](self)).
///
/// `a` is `[total_k, m]`, `b` `[total_k, n]` ([`KGroupedOperandView`]s, or the owned
/// [`DeviceKGroupedOperand`]s), `d` holds `G · m · n` f32, `ks` the `G` group sizes on the device
/// and `total_k` their host-side sum (must equal both operands' rows). `c = None` accumulates
/// into `d` in place; `Some(c)` reads `C` from a separate range of the same size. Requirements: `m % 8 == 0`, `n % 8 == 0`, `total_k % 128 == 0`, the device's FP8
/// format; every buffer belongs to the stream's context. With `G = 0`, `m = 0` or `n = 0`
/// nothing is launched. The launch is queued on `stream` (asynchronous, capture-safe, as
/// [`crate::fp8_gemm_nt`]'s).
pub fn k_grouped_fp8_gemm_tn_contiguous<'a, F: Fp8Format>(
    stream: &Stream,
    a: impl Into<KGroupedOperandView<'a, F>>,
    b: impl Into<KGroupedOperandView<'a, F>>,
    d: impl Into<DeviceSliceMut<'a, f32>>,
    ks: impl Into<DeviceSlice<'a, i32>>,
    total_k: usize,
    c: Option<DeviceSlice<'a, f32>>,
) -> Result<GemmRun> {
    let (a, b, d, ks) = (&a.into(), &b.into(), d.into(), ks.into());
    let ctx = stream.context();
    check_format::<F>(ctx, "a")?;
    for (arg, op) in [("a", a), ("b", b)] {
        ctx.check_owner(arg, op.data.owner())?;
        ctx.check_owner(arg, op.scales.owner())?;
    }
    ctx.check_owner("d", d.owner())?;
    ctx.check_owner("ks", ks.owner())?;
    if let Some(c) = &c {
        ctx.check_owner("c", c.owner())?;
    }
    for (arg, op) in [("a", a), ("b", b)] {
        if op.total_k != total_k {
            return Err(Error::Shape { arg: "total_k", expected: format!("the rows of `{arg}` ({})", op.total_k), actual: total_k.to_string() });
        }
    }
    if !total_k.is_multiple_of(K_ALIGNMENT) {
        return Err(Error::Shape { arg: "total_k", expected: format!("a multiple of {K_ALIGNMENT}"), actual: total_k.to_string() });
    }
    let (m, n, groups) = (a.cols, b.cols, ks.len());
    let out = groups.checked_mul(m).and_then(|x| x.checked_mul(n));
    let out = out.ok_or_else(|| Error::Unsupported(format!("G · m · n = {groups} · {m} · {n} overflows")))?;
    if d.len() != out {
        return Err(Error::Shape {
            arg: "d", expected: format!("G · m · n = {groups} · {m} · {n} = {out} elements"), actual: format!("{} elements", d.len())
        });
    }
    if let Some(c) = &c
        && c.len() != out
    {
        return Err(Error::Shape {
            arg: "c",
            expected: format!("G · m · n = {groups} · {m} · {n} = {out} elements (as d)"),
            actual: format!("{} elements", c.len()),
        });
    }
    for (arg, v) in [("m", m), ("n", n)] {
        if !v.is_multiple_of(MN_ALIGN as usize) {
            return Err(Error::Shape { arg, expected: format!("a multiple of {MN_ALIGN}"), actual: v.to_string() });
        }
    }
    if m == 0 || n == 0 || groups == 0 {
        return Ok(GemmRun { config: None, workspace_limit: None });
    }
    let too_big = |what: String| Error::Unsupported(format!("{what}: dimensions must fit in 32 bits"));
    let m32 = u32::try_from(m).map_err(|_| too_big(format!("m = {m}")))?;
    let n32 = u32::try_from(n).map_err(|_| too_big(format!("n = {n}")))?;
    let g32 = u32::try_from(groups).map_err(|_| too_big(format!("groups = {groups}")))?;
    let k32 = u32::try_from(total_k).map_err(|_| too_big(format!("total_k = {total_k}")))?;
    let (m64, n64, k64) = (m as u64, n as u64, total_k as u64);
    check_tensor_bytes("a", k64 * m64)?;
    check_tensor_bytes("b", k64 * n64)?;
    // C[g] and D[g] are addressed from a 64-bit group base with 32-bit offsets inside.
    check_tensor_bytes("d", m64 * n64 * 4)?;

    let cfg = kgrouped_config(m32, n32, g32, k64, ctx.arch(), &stream.overrides())?;
    let spec = match crate::registry::by_name(cfg.kernel).map(|e| e.spec) {
        Some(crate::registry::Spec::KGrouped(spec)) => spec,
        _ => return Err(Error::Unsupported(format!("configuration {cfg} has no K-grouped kernel"))),
    };
    let dptr = d.device_ptr().addr();
    let args = KGroupedArgs {
        a: a.data.device_ptr(),
        b: b.data.device_ptr(),
        sfa: a.scales.device_ptr(),
        sfb: b.scales.device_ptr(),
        c: GlobalPtr::new(c.map_or(dptr, |c| c.device_ptr().addr())),
        d: GlobalPtr::new(dptr),
        ks: ks.device_ptr(),
        m: m32,
        n: n32,
        total_k: k32,
        groups: g32,
    };
    // SAFETY: every pointer in `args` is a live allocation of this context with exactly the length
    // the kernel's contract requires: A total_k·m and B total_k·n bytes, SFA (total_k/128)·m and
    // SFB (total_k/128)·n floats (checked at upload, total_k checked above), C and D G·m·n floats
    // and ks G i32 (checked above); the kernel clamps the sizes in ks so that every access stays
    // inside these extents whatever they hold. `d` is borrowed mutably for the call; `c` is
    // either `d` itself (in place: every element is read and then written by one lane) or a
    // distinct allocation that is only read.
    unsafe { stream.launch(spec, [cfg.grid, 1, 1], cfg.lds_bytes, &args)? };
    Ok(GemmRun { config: Some(cfg), workspace_limit: None })
}

#[cfg(feature = "reference")]
/// The dequantized CPU reference in this module's layouts: `c[g] += A_gᵀ · B_g` with the block
/// scales (`crate::reference::k_grouped_fp8_gemm_nt_contiguous` on the K-major forms).
pub fn reference_fp8<F: Fp8Format>(a: &KGroupedMnMajor<F>, b: &KGroupedMnMajor<F>, c: &mut [f32]) -> Result<()> {
    crate::reference::k_grouped_fp8_gemm_nt_contiguous(&a.to_k_major()?, &b.to_k_major()?, c).map_err(|e| Error::Shape {
        arg: "reference",
        expected: "matching operands".into(),
        actual: e.to_string(),
    })
}

#[cfg(feature = "reference")]
/// The unquantized CPU reference: `c[g] += A_gᵀ · B_g` in f32 (DeepGEMM's
/// `c[i] + a[start:end].T @ b[start:end]`), `a` `[Σ ks, m]`, `b` `[Σ ks, n]`, `c` `[G, m, n]`.
pub fn reference_f32(a: &[f32], b: &[f32], m: usize, n: usize, ks: &[usize], c: &mut [f32]) -> Result<()> {
    let total: usize = ks.iter().sum();
    check_host_len("a", a.len(), total, m)?;
    check_host_len("b", b.len(), total, n)?;
    check_host_len("c", c.len(), ks.len() * m, n)?;
    let (mut off, mut prod) = (0, vec![0f32; m * n]);
    for (g, &k) in ks.iter().enumerate() {
        let (mut at, mut bt) = (vec![0f32; m * k], vec![0f32; n * k]);
        transpose(&a[off * m..(off + k) * m], k, m, &mut at);
        transpose(&b[off * n..(off + k) * n], k, n, &mut bt);
        crate::reference::gemm_nt_f32(&at, &bt, m, n, k, &mut prod).map_err(|e| Error::Shape {
            arg: "reference",
            expected: "matching operands".into(),
            actual: e.to_string(),
        })?;
        for (o, p) in c[g * m * n..(g + 1) * m * n].iter_mut().zip(&prod) {
            *o += p;
        }
        off += k;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fp8::E4M3Fnuz;

    #[test]
    fn layouts_round_trip_and_match_the_k_major_recipe() {
        let (cols, ks) = (24, [128usize, 0, 256]);
        let total: usize = ks.iter().sum();
        let x: Vec<f32> = (0..total * cols).map(|i| ((i * 7919) % 1000) as f32 / 37.0 - 13.0).collect();
        let q = KGroupedMnMajor::<E4M3Fnuz>::quantize(&x, cols, &ks).unwrap();
        assert_eq!((q.data.len(), q.scales.len()), (total * cols, total / 128 * cols));
        let km = q.to_k_major().unwrap();
        let back = KGroupedMnMajor::from_k_major(&km).unwrap();
        assert_eq!(crate::fp8::as_bits(&back.data), crate::fp8::as_bits(&q.data));
        assert_eq!(back.scales, q.scales);
        // Element (token t, column i) of group 2 (tokens 128..384) by hand: K-major [cols, 256].
        let (t, i) = (300, 5);
        let (off, soff) = km.offsets(2);
        let k_major = km.data[off + i * 256 + (t - 128)];
        assert_eq!(k_major.to_bits(), q.data[t * cols + i].to_bits());
        assert_eq!(km.scales[soff + i * 2 + (t - 128) / 128], q.scales[(t / 128) * cols + i]);
        // Dequantized values are within one FP8 step of the input.
        for (d, &v) in q.dequantize().iter().zip(&x) {
            assert!((d - v).abs() <= v.abs() / 8.0 + 1e-3, "{d} vs {v}");
        }
    }

    #[test]
    fn group_sizes_must_be_multiples_of_128() {
        let e = KGroupedMnMajor::<E4M3Fnuz>::quantize(&[0f32; 8 * 200], 8, &[72, 128]).unwrap_err();
        assert!(e.to_string().contains("ks[0] = 72"), "{e}");
        let e = KGroupedMnMajor::<E4M3Fnuz>::quantize(&[0f32; 8 * 200], 8, &[128, 128]).unwrap_err();
        assert!(e.to_string().contains("`x`") && e.to_string().contains("1600"), "{e}");
    }

    #[test]
    fn tile_choice() {
        // One 128 × 128 group: 64 × 64 tiles give 4 workgroups instead of 1.
        assert_eq!(choose_tile(128, 128, 1, 4096, Arch::Gfx942, &Overrides::NONE).unwrap().block_m, 64);
        // DeepGEMM's wgrad shapes: thousands of 128 × 128 tiles, the bigger tile's reuse wins.
        assert_eq!(choose_tile(7168, 4096, 8, 8 * 4096, Arch::Gfx942, &Overrides::NONE).unwrap().block_m, 128);
        assert_eq!(choose_tile(2048, 7168, 4, 4 * 8192, Arch::Gfx942, &Overrides::NONE).unwrap().block_m, 128);
        let c = kgrouped_config(192, 2048, 4, 512, Arch::Gfx942, &Overrides::NONE).unwrap();
        assert_eq!(c.grid, 4 * 192u32.div_ceil(c.block_m) * 2048u32.div_ceil(c.block_n));
    }
}
