//! `fp8gemm::m_grouped_fp8_gemm_nt_{contiguous,masked}` end to end — public API → HIP API of the
//! emulator backend → gfx942 emulator with every check on (memcheck: any access outside an allocation fails
//! the launch; MFMA hazards, LDS races, late-arriving loads, uninitialized LDS reads) —
//! against the CPU references, with D pre-filled with a sentinel that every row the kernels must
//! not write has to keep bit for bit — for weights in both layouts (logical: the LDS-staged
//! kernels; pre-shuffled: the "bs" kernels) —; and every class of rejected input.

mod common;
use common::*;
use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz};
use fp8gemm::grouped::{upload_m_indices, validate_m_indices};
use fp8gemm::quant::{GroupedQuantizedWeights, QuantizedActivations};
use fp8gemm::reference::{self, contiguous_m_indices};
use fp8gemm::{
    Context, DeviceActivations, DeviceBuffer, DeviceGroupedWeights, Error, Overrides, Stream, WeightLayout, m_alignment_for_contiguous_layout,
    m_grouped_fp8_gemm_nt_contiguous, m_grouped_fp8_gemm_nt_contiguous_aligned, m_grouped_fp8_gemm_nt_contiguous_gathered, m_grouped_fp8_gemm_nt_masked,
};
use half::bf16;
use rand::{Rng, SeedableRng, rngs::StdRng};

/// The largest finite bf16: no GEMM of these inputs comes near it, so a row holding it after the
/// launch was not written.
const SENTINEL: u16 = 0x7f7f;

/// Operands of one grouped problem: `rows × k` activations and `[G, n, k]` weights, unquantized
/// and quantized as DeepGEMM's tests do.
struct Case {
    rows: usize,
    groups: usize,
    n: usize,
    k: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    qa: QuantizedActivations<E4M3Fnuz>,
    qb: GroupedQuantizedWeights<E4M3Fnuz>,
}

fn case(rows: usize, groups: usize, n: usize, k: usize, seed: u64) -> Case {
    let mut rng = StdRng::seed_from_u64(seed);
    let a = randn_bf16(rows * k, &mut rng);
    let b = randn_bf16(groups * n * k, &mut rng);
    let qa = QuantizedActivations::quantize(&a, rows, k).unwrap();
    let qb = GroupedQuantizedWeights::quantize(&b, groups, n, k).unwrap();
    Case { rows, groups, n, k, a, b, qa, qb }
}

/// Both weight layouts: every correctness test runs each.
const LAYOUTS: [WeightLayout; 2] = [WeightLayout::Logical, WeightLayout::Preshuffled];

/// The case's weights on the device in `layout`.
fn upload_b(ctx: &Context, c: &Case, layout: WeightLayout) -> DeviceGroupedWeights<E4M3Fnuz> {
    let b = DeviceGroupedWeights::upload_with_layout(ctx, &c.qb, layout).unwrap();
    assert_eq!(b.layout(), layout);
    b
}

/// The kernel family `layout` must run: the bs kernels (`…_bs_…`) exactly for pre-shuffled B.
fn assert_kernel_family(kernel: Option<&str>, layout: WeightLayout, what: &str) {
    if let Some(name) = kernel {
        assert_eq!(name.contains("_bs_"), layout == WeightLayout::Preshuffled, "{what}: {name} for {layout} weights");
    }
}

/// What one launch produced, compared with both references over the rows it had to compute.
struct Outcome {
    diff_dequantized: f64,
    diff_unquantized: f64,
    /// Rows that had to be computed.
    computed: usize,
    kernel: Option<&'static str>,
    /// D after the launch (every row, written or not).
    d: Vec<bf16>,
}

impl Outcome {
    fn assert_accurate(&self, what: &str) {
        assert!(self.diff_dequantized < 1e-5, "{what}: calc_diff vs dequantized reference {:e}", self.diff_dequantized);
        assert!(self.diff_unquantized < 1e-3, "{what}: calc_diff vs unquantized reference {:e}", self.diff_unquantized);
    }
}

/// Compares the device result `got` with the references on the rows `row_group[i] = Some(g)`
/// and checks that every other row still holds the sentinel.
fn compare(c: &Case, got: &[bf16], want_q: &[bf16], row_group: &[Option<usize>], what: &str) -> (f64, f64, usize) {
    let (n, k) = (c.n, c.k);
    let (mut g_rows, mut q_rows, mut f_rows) = (Vec::new(), Vec::new(), Vec::new());
    let mut exact = vec![0f32; n];
    for (i, group) in row_group.iter().enumerate() {
        let row = &got[i * n..(i + 1) * n];
        match *group {
            None => {
                let bad = row.iter().position(|x| x.to_bits() != SENTINEL);
                assert!(bad.is_none(), "{what}: row {i} must not be written, D[{i},{}] = {}", bad.unwrap_or(0), row[bad.unwrap_or(0)]);
            }
            Some(g) => {
                g_rows.extend_from_slice(row);
                q_rows.extend_from_slice(&want_q[i * n..(i + 1) * n]);
                reference::gemm_nt_f32(&c.a[i * k..(i + 1) * k], &c.b[g * n * k..(g + 1) * n * k], 1, n, k, &mut exact).unwrap();
                f_rows.extend_from_slice(&exact);
            }
        }
    }
    let computed = g_rows.len() / n.max(1);
    (reference::calc_diff(&g_rows, &q_rows).unwrap(), reference::calc_diff(&g_rows, &f_rows).unwrap(), computed)
}

fn sentinel_d(ctx: &Context, len: usize) -> DeviceBuffer<bf16> {
    ctx.upload(&vec![bf16::from_bits(SENTINEL); len]).unwrap()
}

/// Runs the contiguous GEMM with `m_indices` (uploaded unvalidated, as a routing kernel would
/// leave it) and returns the comparison; `row_group` is derived from `m_indices` under the
/// documented kernel rule (a row is written iff its index is a valid group equal to its 64-row
/// block's first index — for a valid layout: iff its index is ≥ 0).
fn run_contiguous(ctx: &Context, c: &Case, m_indices: &[i32], layout: WeightLayout, what: &str) -> Outcome {
    run_contiguous_with(ctx, Overrides::NONE, c, m_indices, layout, what)
}

/// [`run_contiguous`] on a stream with the selector overrides `o`.
fn run_contiguous_with(ctx: &Context, o: Overrides, c: &Case, m_indices: &[i32], layout: WeightLayout, what: &str) -> Outcome {
    assert_eq!(m_indices.len(), c.rows);
    let what = &format!("{what} [{layout}]");
    let da = DeviceActivations::upload(ctx, &c.qa).unwrap();
    let db = upload_b(ctx, c, layout);
    let di = ctx.upload(m_indices).unwrap();
    let mut dd = sentinel_d(ctx, c.rows * c.n);
    let mut st = stream(ctx);
    st.set_overrides(o);
    let run = m_grouped_fp8_gemm_nt_contiguous(&st, &da, &db, &mut dd, &di).unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = dd.download(&st).unwrap();
    let mut want_q = vec![bf16::from_bits(SENTINEL); c.rows * c.n];
    reference::m_grouped_fp8_gemm_nt_contiguous(&c.qa, &c.qb, m_indices, &mut want_q).unwrap();
    let row_group: Vec<Option<usize>> = m_indices.iter().map(|&v| usize::try_from(v).ok()).collect();
    let (dq, df, computed) = compare(c, &got, &want_q, &row_group, what);
    assert_kernel_family(run.config.map(|c| c.kernel), layout, what);
    Outcome { diff_dequantized: dq, diff_unquantized: df, computed, kernel: run.config.map(|c| c.kernel), d: got }
}

/// Contiguous case from per-group row counts (padded to the alignment by `contiguous_m_indices`),
/// with `extra_pad_blocks` all-padding 128-row blocks inserted before group `i` for each `i`.
fn contiguous_case(group_rows: &[usize], pad_before: &[usize], n: usize, k: usize, seed: u64) -> (Case, Vec<i32>) {
    let align = m_alignment_for_contiguous_layout();
    let mut m_indices = Vec::new();
    for (g, &rows) in group_rows.iter().enumerate() {
        for _ in pad_before.iter().filter(|&&p| p == g) {
            m_indices.extend(std::iter::repeat_n(-1, align));
        }
        let block = contiguous_m_indices(&[rows], align);
        m_indices.extend(block.iter().map(|&v| if v == 0 { g as i32 } else { v }));
    }
    for _ in pad_before.iter().filter(|&&p| p >= group_rows.len()) {
        m_indices.extend(std::iter::repeat_n(-1, align));
    }
    validate_m_indices(&m_indices, group_rows.len()).unwrap();
    (case(m_indices.len(), group_rows.len(), n, k, seed), m_indices)
}

fn stream(ctx: &Context) -> Stream {
    Stream::new(ctx).unwrap()
}

#[test]
fn contiguous_matches_both_references() {
    let ctx = checked_context();
    let mut rng = StdRng::seed_from_u64(42);
    let eight: Vec<usize> = (0..8).map(|i| if i == 3 { 0 } else { rng.random_range(1..100) }).collect();
    let thirty_two: Vec<usize> = (0..32).map(|_| rng.random_range(0..24)).collect();
    let cases: Vec<(Vec<usize>, Vec<usize>, usize, usize)> = vec![
        (vec![200], vec![], 128, 256),
        // A single-row group, then a group spanning a full block plus one row.
        (vec![1, 129], vec![], 192, 128),
        // An empty group; a group of 64 rows (its second 64-row half-block is all padding).
        (vec![0, 70, 300, 64], vec![], 64, 384),
        (eight, vec![0, 5, 8], 128, 128),
        (thirty_two, vec![], 64, 128),
    ];
    for (i, (rows, pad, n, k)) in cases.into_iter().enumerate() {
        let (c, m_indices) = contiguous_case(&rows, &pad, n, k, 100 + i as u64);
        for layout in LAYOUTS {
            let what = format!("contiguous G={} rows={rows:?} pad_before={pad:?} n={n} k={k} [{layout}]", c.groups);
            let out = run_contiguous(&ctx, &c, &m_indices, layout, &what);
            assert_eq!(out.computed, rows.iter().sum::<usize>(), "{what}");
            out.assert_accurate(&what);
            eprintln!("{what}: {} ({:.2e} / {:.2e})", out.kernel.unwrap(), out.diff_dequantized, out.diff_unquantized);
        }
    }
}

#[test]
fn contiguous_medium_case() {
    let ctx = checked_context();
    let (c, m_indices) = contiguous_case(&[300, 517, 0, 190, 33], &[2], 512, 1024, 7);
    for layout in LAYOUTS {
        let out = run_contiguous(&ctx, &c, &m_indices, layout, "contiguous medium");
        assert_eq!(out.computed, 300 + 517 + 190 + 33);
        out.assert_accurate(&format!("contiguous medium [{layout}]"));
    }
}

#[test]
fn contiguous_padding_rows_and_blocks_are_not_written() {
    // Group 0: 3 rows then 125 padding rows in the same block ("mixed" block, DeepGEMM's test
    // layout), an all-padding block, group 1: 64 rows (its second 64-row half is all padding).
    // compare() checks every padding row still holds the sentinel bit for bit.
    let ctx = checked_context();
    let (c, m_indices) = contiguous_case(&[3, 64], &[1, 2], 128, 128, 3);
    assert_eq!(m_indices.len(), 4 * 128);
    let all_padding = case(256, 2, 64, 128, 4);
    for layout in LAYOUTS {
        let out = run_contiguous(&ctx, &c, &m_indices, layout, "padding");
        assert_eq!(out.computed, 67);
        out.assert_accurate(&format!("padding [{layout}]"));
        // All padding: nothing computed, nothing written, and no MFMA issued.
        let out = run_contiguous(&ctx, &all_padding, &[-1; 256], layout, "all padding");
        assert_eq!(out.computed, 0);
        #[cfg(feature = "emu")]
        {
            let r = fp8gemm::runtime::last_emulator_report().unwrap();
            assert_eq!(r.count(amdgpu_emu::exec::Class::Mfma), 0, "{layout}: padding blocks must do no MFMA work");
        }
    }
}

#[test]
fn contiguous_garbage_indices_stay_in_bounds() {
    // Indices uploaded without validation: out-of-range groups, −1 in front of a group's rows,
    // two groups in one block. Memcheck proves no access leaves the buffers; the documented rule
    // decides which rows are written: a BM-row block (BM = the chosen kernel's block_m) takes its
    // first row's group and is skipped if that is outside 0..G; a row is written iff its own
    // index equals its block's group.
    let ctx = checked_context();
    let groups = 3;
    let c = case(512, groups, 64, 128, 5);
    let mut m_indices = vec![0i32; 512];
    m_indices[..64].fill(7); // group 7 ≥ G
    m_indices[64..128].fill(i32::MIN);
    m_indices[128] = -1; // −1 in front of group 1's rows
    m_indices[129..192].fill(1);
    m_indices[192..256].fill(2); // group 2 ...
    m_indices[200] = 1; // ... one row of another group
    m_indices[201] = 99; // ... and one out of range
    m_indices[256..320].fill(1);
    m_indices[320..384].fill(-1);
    m_indices[384..512].fill(i32::MAX);
    assert!(validate_m_indices(&m_indices, groups).is_err());
    for layout in LAYOUTS {
        garbage_indices_case(&ctx, &c, &m_indices, layout);
    }
}

fn garbage_indices_case(ctx: &Context, c: &Case, m_indices: &[i32], layout: WeightLayout) {
    let groups = c.groups;
    let da = DeviceActivations::upload(ctx, &c.qa).unwrap();
    let db = upload_b(ctx, c, layout);
    let di = ctx.upload(m_indices).unwrap();
    let mut dd = sentinel_d(ctx, 512 * 64);
    let run = m_grouped_fp8_gemm_nt_contiguous(&stream(ctx), &da, &db, &mut dd, &di).unwrap();
    assert_kernel_family(run.config.map(|c| c.kernel), layout, "garbage indices");
    let bm = run.config.unwrap().block_m as usize;
    let got = dd.download(&stream(ctx)).unwrap();
    let row_group: Vec<Option<usize>> = (0..512)
        .map(|i| {
            let g = m_indices[i - i % bm];
            (g >= 0 && (g as usize) < groups && m_indices[i] == g).then_some(g as usize)
        })
        .collect();
    // Hand count for 64-row tiles: block 3 (rows 192..256) minus rows 200, 201, and block 4.
    if bm == 64 {
        assert_eq!(row_group.iter().flatten().count(), 62 + 64);
    }
    // The reference over the rows that are written (the others are −1 for the reference).
    let ref_indices: Vec<i32> = row_group.iter().map(|g| g.map_or(-1, |g| g as i32)).collect();
    let mut want_q = vec![bf16::from_bits(SENTINEL); 512 * 64];
    reference::m_grouped_fp8_gemm_nt_contiguous(&c.qa, &c.qb, &ref_indices, &mut want_q).unwrap();
    let (dq, df, computed) = compare(c, &got, &want_q, &row_group, &format!("garbage indices [{layout}]"));
    assert!(computed > 0);
    assert!(dq < 1e-5 && df < 1e-3, "{layout}: {dq:e} {df:e}");
}

/// Runs the masked GEMM; `masked_m` goes to the device as given, the references use the counts
/// clamped to `0..=m_max` (the documented kernel behaviour).
fn run_masked(ctx: &Context, c: &Case, masked_m: &[i32], expected_m: usize, layout: WeightLayout, what: &str) -> Outcome {
    run_masked_with(ctx, Overrides::NONE, c, masked_m, expected_m, layout, what)
}

/// [`run_masked`] on a stream with the selector overrides `o`.
fn run_masked_with(ctx: &Context, o: Overrides, c: &Case, masked_m: &[i32], expected_m: usize, layout: WeightLayout, what: &str) -> Outcome {
    let m_max = c.rows / c.groups;
    let what = &format!("{what} [{layout}]");
    let da = DeviceActivations::upload(ctx, &c.qa).unwrap();
    let db = upload_b(ctx, c, layout);
    let dm = ctx.upload(masked_m).unwrap();
    let mut dd = sentinel_d(ctx, c.rows * c.n);
    let mut st = stream(ctx);
    st.set_overrides(o);
    let run = m_grouped_fp8_gemm_nt_masked(&st, &da, &db, &mut dd, &dm, expected_m).unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = dd.download(&st).unwrap();
    let clamped: Vec<i32> = masked_m.iter().map(|&v| v.clamp(0, m_max as i32)).collect();
    let mut want_q = vec![bf16::from_bits(SENTINEL); c.rows * c.n];
    reference::m_grouped_fp8_gemm_nt_masked(&c.qa, &c.qb, &clamped, &mut want_q).unwrap();
    let row_group: Vec<Option<usize>> = (0..c.rows).map(|i| (i / m_max, i % m_max)).map(|(g, r)| (r < clamped[g] as usize).then_some(g)).collect();
    let (dq, df, computed) = compare(c, &got, &want_q, &row_group, what);
    assert_kernel_family(run.config.map(|c| c.kernel), layout, what);
    Outcome { diff_dequantized: dq, diff_unquantized: df, computed, kernel: run.config.map(|c| c.kernel), d: got }
}

#[test]
fn masked_matches_both_references() {
    let ctx = checked_context();
    let mut rng = StdRng::seed_from_u64(9);
    let eight: Vec<i32> = (0..8).map(|_| rng.random_range(0..=96)).collect();
    let thirty_two: Vec<i32> = (0..32).map(|_| rng.random_range(0..=16)).collect();
    // (groups, m_max, masked_m, expected_m, n, k)
    let cases: Vec<(usize, usize, Vec<i32>, usize, usize, usize)> = vec![
        (1, 64, vec![64], 64, 128, 256),
        (2, 100, vec![0, 1], 50, 192, 128),
        // expected_m far above the real counts (and above m_max).
        (4, 130, vec![130, 0, 77, 1], 5000, 64, 384),
        // expected_m far below.
        (8, 96, eight, 1, 128, 128),
        (32, 16, thirty_two, 16, 64, 128),
    ];
    for (i, (groups, m_max, masked_m, expected_m, n, k)) in cases.into_iter().enumerate() {
        let c = case(groups * m_max, groups, n, k, 200 + i as u64);
        for layout in LAYOUTS {
            let what = format!("masked G={groups} m_max={m_max} masked_m={masked_m:?} expected_m={expected_m} n={n} k={k} [{layout}]");
            let out = run_masked(&ctx, &c, &masked_m, expected_m, layout, &what);
            assert_eq!(out.computed, masked_m.iter().map(|&v| v as usize).sum::<usize>(), "{what}");
            out.assert_accurate(&what);
            eprintln!("{what}: {} ({:.2e} / {:.2e})", out.kernel.unwrap(), out.diff_dequantized, out.diff_unquantized);
        }
    }
}

#[test]
fn masked_medium_case() {
    let ctx = checked_context();
    let c = case(4 * 256, 4, 512, 1024, 8);
    for layout in LAYOUTS {
        let out = run_masked(&ctx, &c, &[256, 17, 0, 200], 128, layout, "masked medium");
        assert_eq!(out.computed, 473);
        out.assert_accurate(&format!("masked medium [{layout}]"));
    }
}

#[test]
fn masked_rows_are_not_written_and_counts_are_clamped_on_the_device() {
    // D is exactly G · m_max · n: memcheck fails the launch on any store past a group's slice.
    // Counts past m_max compute m_max rows, negative counts none; compare() checks every row past
    // the clamped count still holds the sentinel.
    let ctx = checked_context();
    let m_max = 70;
    let c = case(6 * m_max, 6, 64, 128, 11);
    let masked_m = [m_max as i32 + 50, i32::MAX, -5, m_max as i32, 3, i32::MIN];
    for layout in LAYOUTS {
        let out = run_masked(&ctx, &c, &masked_m, 1, layout, "clamped counts");
        assert_eq!(out.computed, 3 * m_max + 3);
        out.assert_accurate(&format!("clamped counts [{layout}]"));
        // All counts 0: nothing written, no MFMA.
        let out = run_masked(&ctx, &c, &[0; 6], 70, layout, "all masked");
        assert_eq!(out.computed, 0);
        #[cfg(feature = "emu")]
        {
            let r = fp8gemm::runtime::last_emulator_report().unwrap();
            assert_eq!(r.count(amdgpu_emu::exec::Class::Mfma), 0, "{layout}: masked-out tiles must do no MFMA work");
        }
    }
}

/// Element-wise: the pipelined bs kernels run the logical kernels' MFMAs in the same order and
/// promote the same way, so every element of D (computed rows and untouched ones) is the
/// logical kernels' bit for bit.
fn assert_same_bits(what: &str, got: &[bf16], want: &[bf16]) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what}: D[{i}] = {g}, the logical-layout kernel gave {w}");
    }
}

#[test]
fn pipelined_bs_kernels_match_both_references_and_the_logical_kernels() {
    // `fp8gemm_device::grouped_pipe`: the 64-row tile (forced 64x128 with
    // `Overrides::bs_pipelined` pinned to the pipelined loop) and the masked 80-row tile (forced 80x128) and narrow 32 × 64 tile (forced 32x64: one barrier per two K
    // blocks, here over an odd block count). K = 3 blocks (not a multiple of the 4-block scale window),
    // n a multiple of 4 past 128 (a column tail), row tails inside the tiles, −1 padding rows and
    // an all-padding block (contiguous), zero, clamped and negative counts (masked).
    let ctx = checked_context();
    let k = 128 * 3;
    let n = 132;
    let (c, m_indices) = contiguous_case(&[1, 129, 0, 70], &[2], n, k, 31);
    let want = run_contiguous(&ctx, &c, &m_indices, WeightLayout::Logical, "contiguous pipelined (reference run)");
    let pipelined = overrides(Some((64, 128)), None).with_bs_pipelined(true);
    let out = run_contiguous_with(&ctx, pipelined, &c, &m_indices, WeightLayout::Preshuffled, "contiguous pipelined");
    assert_eq!(out.kernel, Some("m_grouped_fp8_gemm_nt_contiguous_bs_pipe_bm64_bn128"));
    assert_eq!(out.computed, 200);
    out.assert_accurate("contiguous pipelined 64");
    assert_same_bits("contiguous pipelined 64", &out.d, &want.d);

    let m_max = 100;
    let c = case(5 * m_max, 5, n, k, 32);
    let masked_m = [100, 0, 77, i32::MAX, -3];
    let want = run_masked(&ctx, &c, &masked_m, 64, WeightLayout::Logical, "masked pipelined (reference run)");
    for (bm, bn) in [(32u32, 64u32), (64, 128), (80, 128)] {
        let what = format!("masked pipelined {bm}x{bn}");
        let out = run_masked_with(&ctx, overrides(Some((bm, bn)), None).with_bs_pipelined(true), &c, &masked_m, 64, WeightLayout::Preshuffled, &what);
        assert_eq!(out.kernel.unwrap(), format!("m_grouped_fp8_gemm_nt_masked_bs_pipe_bm{bm}_bn{bn}"), "{what}");
        assert_eq!(out.computed, 100 + 77 + 100, "{what}");
        out.assert_accurate(&what);
        assert_same_bits(&what, &out.d, &want.d);
    }
}

/// `m_grouped_fp8_gemm_nt_contiguous_gathered`: the token rows gathered inside the GEMM's A
/// loads. Layout: groups of 5, 0, 40, 33 and 1 rows, each row a random token (repeats allowed),
/// padded to the alignment with `row_src` −1 / `m_indices` −1, then an unused block (`row_src`
/// −2, `m_indices` −1); at 64 rows on both bs loops (forced). Unsplit (forced split 1) it is bit
/// for bit the aligned GEMM over the
/// explicitly gathered activations (zero rows for padding); split-K (forced 3 of the 6 K
/// blocks, and the selector's own choice) matches both references; padding rows keep the
/// sentinel; bad inputs are typed errors.
#[test]
fn contiguous_gathered_matches_the_explicit_gather_and_both_references() {
    let ctx = checked_context();
    let (n, k, tokens) = (256, 768, 24);
    let tok = case(tokens, 5, n, k, 41);
    let mut rng = StdRng::seed_from_u64(42);
    let group_rows = [5usize, 0, 40, 33, 1];
    for align in [32usize, 64] {
        let (mut m_indices, mut row_src) = (Vec::new(), Vec::new());
        for (g, &r) in group_rows.iter().enumerate() {
            for _ in 0..r {
                m_indices.push(g as i32);
                row_src.push(rng.random_range(0..tokens as i32));
            }
            let padded = r.div_ceil(align) * align;
            m_indices.resize(m_indices.len() + padded - r, -1);
            row_src.resize(row_src.len() + padded - r, -1);
        }
        m_indices.resize(m_indices.len() + align, -1);
        row_src.resize(row_src.len() + align, -2);
        let m_sum = m_indices.len();
        // The explicit gather: token rows, zeros (scale 0) for padding.
        let kb = k / 128;
        let (mut data, mut scales) = (Vec::new(), Vec::new());
        let mut a_f32 = Vec::new();
        for &src in &row_src {
            if src >= 0 {
                let t = src as usize;
                data.extend_from_slice(&tok.qa.data[t * k..(t + 1) * k]);
                scales.extend_from_slice(&tok.qa.scales[t * kb..(t + 1) * kb]);
                a_f32.extend_from_slice(&tok.a[t * k..(t + 1) * k]);
            } else {
                data.extend(std::iter::repeat_n(E4M3Fnuz::from_bits(0), k));
                scales.extend(std::iter::repeat_n(0.0, kb));
                a_f32.extend(std::iter::repeat_n(0.0, k));
            }
        }
        let gathered = Case {
            rows: m_sum,
            groups: tok.groups,
            n,
            k,
            a: a_f32,
            b: tok.b.clone(),
            qa: QuantizedActivations::from_parts(data, scales, m_sum, k).unwrap(),
            qb: tok.qb.clone(),
        };
        let db = upload_b(&ctx, &tok, WeightLayout::Preshuffled);
        let (da_tok, da_full) = (DeviceActivations::upload(&ctx, &tok.qa).unwrap(), DeviceActivations::upload(&ctx, &gathered.qa).unwrap());
        let (di, ds) = (ctx.upload(&m_indices).unwrap(), ctx.upload(&row_src).unwrap());
        let st = stream(&ctx);
        let mut want = sentinel_d(&ctx, m_sum * n);
        m_grouped_fp8_gemm_nt_contiguous_aligned(&st, &da_full, &db, &mut want, &di, align).unwrap();
        let want = want.download(&st).unwrap();
        let mut want_q = vec![bf16::from_bits(SENTINEL); m_sum * n];
        reference::m_grouped_fp8_gemm_nt_contiguous(&gathered.qa, &gathered.qb, &m_indices, &mut want_q).unwrap();
        let row_group: Vec<Option<usize>> = m_indices.iter().map(|&v| usize::try_from(v).ok()).collect();
        let pipes: &[Option<bool>] = if align == 64 { &[None, Some(false), Some(true)] } else { &[None] };
        for (split, pipe) in [Some(1u32), Some(3), None].into_iter().flat_map(|s| pipes.iter().map(move |&p| (s, p))) {
            let what = format!("gathered, align {align}, split {split:?}, pipelined {pipe:?}");
            let mut st = stream(&ctx);
            let mut o = Overrides::NONE;
            if let Some(s) = split {
                o = o.with_split(s);
            }
            if let Some(p) = pipe {
                o = o.with_bs_pipelined(p);
            }
            st.set_overrides(o);
            let mut dd = sentinel_d(&ctx, m_sum * n);
            let run = m_grouped_fp8_gemm_nt_contiguous_gathered(&st, &da_tok, &ds, &db, &mut dd, &di, align, group_rows.len())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let cfg = run.config.expect("a launch");
            // The two-phase or (64 rows) the pipelined bs loop: the model's choice, or forced.
            let two_phase = format!("m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm{align}_bn128");
            let pipelined = "m_grouped_fp8_gemm_nt_contiguous_splitk_bs_pipe_bm64_bn128";
            match pipe {
                None => assert!(cfg.kernel == two_phase || (align == 64 && cfg.kernel == pipelined), "{what}: {}", cfg.kernel),
                Some(false) => assert_eq!(cfg.kernel, two_phase, "{what}"),
                Some(true) => assert_eq!(cfg.kernel, pipelined, "{what}"),
            }
            if let Some(s) = split {
                assert_eq!(cfg.splits, s, "{what}");
            }
            let got = dd.download(&st).unwrap();
            let (dq, df, computed) = compare(&gathered, &got, &want_q, &row_group, &what);
            assert_eq!(computed, group_rows.iter().sum::<usize>(), "{what}");
            Outcome { diff_dequantized: dq, diff_unquantized: df, computed, kernel: None, d: Vec::new() }.assert_accurate(&what);
            if cfg.splits == 1 {
                assert_same_bits(&what, &got, &want);
            }
            // Cut into 128-row launches: the same bits.
            st.set_overrides(o.with_contiguous_chunk_rows(128));
            let mut dc = sentinel_d(&ctx, m_sum * n);
            m_grouped_fp8_gemm_nt_contiguous_gathered(&st, &da_tok, &ds, &db, &mut dc, &di, align, group_rows.len()).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_same_bits(&format!("{what}, 128-row chunks"), &dc.download(&st).unwrap(), &got);
            // Every element within a few bf16 ulps of the unsplit kernel's.
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let (g, w) = (g.to_f32(), w.to_f32());
                assert!((g - w).abs() <= 0.02 * w.abs().max(1.0), "{what}: D[{i}] = {g}, unsplit {w}");
            }
        }
        // Typed errors: logical weights, an alignment without a gathered kernel, row_src of the
        // wrong length.
        let dl = upload_b(&ctx, &tok, WeightLayout::Logical);
        let mut dd = ctx.alloc_zeroed::<bf16>(m_sum * n).unwrap();
        let e = m_grouped_fp8_gemm_nt_contiguous_gathered(&st, &da_tok, &ds, &dl, &mut dd, &di, align, 5).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)) && e.to_string().contains("pre-shuffled"), "{e}");
        let e = m_grouped_fp8_gemm_nt_contiguous_gathered(&st, &da_tok, &ds, &db, &mut dd, &di, 128, 5).unwrap_err();
        assert!(matches!(e, Error::Shape { arg: "align", .. }), "{e}");
        let short = ctx.upload(&row_src[..m_sum - 1]).unwrap();
        let e = m_grouped_fp8_gemm_nt_contiguous_gathered(&st, &da_tok, &short, &db, &mut dd, &di, align, 5).unwrap_err();
        assert!(matches!(e, Error::Shape { arg: "row_src", .. }), "{e}");
    }
}

// ---- rejected inputs: one test per class -------------------------------------------------

fn device_operands(ctx: &Context, rows: usize, groups: usize, n: usize, k: usize) -> (DeviceActivations<E4M3Fnuz>, DeviceGroupedWeights<E4M3Fnuz>) {
    let c = case(rows, groups, n, k, 1);
    (DeviceActivations::upload(ctx, &c.qa).unwrap(), DeviceGroupedWeights::upload(ctx, &c.qb).unwrap())
}

fn contiguous_err(ctx: &Context, a: &DeviceActivations<E4M3Fnuz>, b: &DeviceGroupedWeights<E4M3Fnuz>, d_len: usize, idx: &[i32]) -> Error {
    let mut d = ctx.alloc_zeroed::<bf16>(d_len).unwrap();
    let di = ctx.upload(idx).unwrap();
    m_grouped_fp8_gemm_nt_contiguous(&stream(ctx), a, b, &mut d, &di).unwrap_err()
}

#[test]
fn rejects_m_indices_of_the_wrong_length() {
    let ctx = checked_context();
    let (a, b) = device_operands(&ctx, 128, 2, 64, 128);
    let e = contiguous_err(&ctx, &a, &b, 128 * 64, &[0; 127]);
    assert!(matches!(e, Error::Shape { arg: "m_indices", .. }), "{e}");
    assert!(e.to_string().contains("m_sum = 128"), "{e}");
}

/// Groups padded to 32 or 64 rows (`m_grouped_fp8_gemm_nt_contiguous_aligned`, the MoE layer's
/// layout): both references on the group rows, padding rows untouched, the kernel's tile height
/// at most the alignment; the same bits when the launch is cut into 128-row chunks.
#[test]
fn contiguous_aligned_layouts_match_both_references_and_chunk_alike() {
    let ctx = checked_context();
    let (n, k) = (256, 384);
    let rows = [5usize, 0, 40, 33, 1, 64, 70];
    for (align, layout) in [(32usize, WeightLayout::Preshuffled), (64, WeightLayout::Logical), (64, WeightLayout::Preshuffled)] {
        let m_indices: Vec<i32> = rows
            .iter()
            .enumerate()
            .flat_map(|(g, &r)| {
                let mut v = vec![g as i32; r];
                v.resize(r.div_ceil(align) * align, -1);
                v
            })
            .collect();
        let what = format!("align {align} [{layout}]");
        let c = case(m_indices.len(), rows.len(), n, k, 7 + align as u64);
        let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
        let db = upload_b(&ctx, &c, layout);
        let di = ctx.upload(&m_indices).unwrap();
        let mut outs = Vec::new();
        for chunk in [None, Some(128u32)] {
            let mut st = stream(&ctx);
            if let Some(r) = chunk {
                st.set_overrides(Overrides::NONE.with_contiguous_chunk_rows(r));
            }
            let mut dd = sentinel_d(&ctx, c.rows * n);
            let run = m_grouped_fp8_gemm_nt_contiguous_aligned(&st, &da, &db, &mut dd, &di, align).unwrap_or_else(|e| panic!("{what}: {e}"));
            let cfg = run.config.expect("a launch");
            assert_eq!(cfg.block_m as usize, align, "{what}: tile {}x{} for {align}-row groups", cfg.block_m, cfg.block_n);
            assert_kernel_family(Some(cfg.kernel), layout, &what);
            outs.push(dd.download(&st).unwrap());
        }
        let mut want_q = vec![bf16::from_bits(SENTINEL); c.rows * n];
        reference::m_grouped_fp8_gemm_nt_contiguous(&c.qa, &c.qb, &m_indices, &mut want_q).unwrap();
        let row_group: Vec<Option<usize>> = m_indices.iter().map(|&v| usize::try_from(v).ok()).collect();
        let (dq, df, computed) = compare(&c, &outs[0], &want_q, &row_group, &what);
        assert_eq!(computed, rows.iter().sum::<usize>(), "{what}");
        Outcome { diff_dequantized: dq, diff_unquantized: df, computed, kernel: None, d: Vec::new() }.assert_accurate(&what);
        assert_same_bits(&format!("{what}: 128-row chunks"), &outs[1], &outs[0]);
    }
    // Alignments the kernels cannot serve are typed errors.
    let (a, b) = device_operands(&ctx, 96, 2, 64, 128);
    let mut d = ctx.alloc_zeroed::<bf16>(96 * 64).unwrap();
    let di = ctx.upload(&[0i32; 96]).unwrap();
    let e = m_grouped_fp8_gemm_nt_contiguous_aligned(&stream(&ctx), &a, &b, &mut d, &di, 48).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "align", .. }), "{e}");
    let e = m_grouped_fp8_gemm_nt_contiguous_aligned(&stream(&ctx), &a, &b, &mut d, &di, 64).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "a", .. }) && e.to_string().contains("multiple of 64"), "{e}");
    let e = m_grouped_fp8_gemm_nt_contiguous_aligned(&stream(&ctx), &a, &b, &mut d, &di, 32).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)) && e.to_string().contains("32-row tile"), "logical weights have no 32-row kernel: {e}");
    let mut st = stream(&ctx);
    st.set_overrides(Overrides::NONE.with_contiguous_chunk_rows(100));
    let e = m_grouped_fp8_gemm_nt_contiguous_aligned(&st, &a, &b, &mut d, &di, 32).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "overrides", .. }), "{e}");
}

#[test]
fn rejects_m_sum_not_a_multiple_of_the_alignment() {
    let ctx = checked_context();
    let (a, b) = device_operands(&ctx, 100, 2, 64, 128);
    let e = contiguous_err(&ctx, &a, &b, 100 * 64, &[0; 100]);
    assert!(matches!(e, Error::Shape { arg: "a", .. }), "{e}");
    assert!(e.to_string().contains("multiple of 128"), "{e}");
}

#[test]
fn rejects_m_indices_out_of_range_at_upload() {
    let ctx = checked_context();
    let mut idx = contiguous_m_indices(&[10, 20], 128);
    idx[5] = 2;
    let e = upload_m_indices(&ctx, &idx, 2).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "m_indices", .. }), "{e}");
    assert!(e.to_string().contains("m_indices[5] = 2") && e.to_string().contains("-1..2"), "{e}");
    idx[5] = -3;
    assert!(upload_m_indices(&ctx, &idx, 2).unwrap_err().to_string().contains("m_indices[5] = -3"));
}

#[test]
fn rejects_m_indices_that_are_not_block_constant_at_upload() {
    let ctx = checked_context();
    let mut idx = contiguous_m_indices(&[100, 20], 128);
    idx[64] = 1;
    let e = upload_m_indices(&ctx, &idx, 2).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "m_indices", .. }), "{e}");
    assert!(e.to_string().contains("one group's rows followed by -1 padding"), "{e}");
    // A valid layout uploads, and computes.
    let idx = contiguous_m_indices(&[100, 20], 128);
    assert_eq!(upload_m_indices(&ctx, &idx, 2).unwrap().download(&stream(&ctx)).unwrap(), idx);
}

#[test]
fn rejects_masked_m_of_the_wrong_length() {
    let ctx = checked_context();
    let (a, b) = device_operands(&ctx, 3 * 64, 3, 64, 128);
    let mut d = ctx.alloc_zeroed::<bf16>(3 * 64 * 64).unwrap();
    let dm = ctx.upload(&[1, 2]).unwrap();
    let e = m_grouped_fp8_gemm_nt_masked(&stream(&ctx), &a, &b, &mut d, &dm, 1).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "masked_m", .. }), "{e}");
    assert!(e.to_string().contains("G = 3"), "{e}");
}

#[test]
fn rejects_group_count_mismatch_between_a_and_b() {
    // Masked: 200 rows of A cannot be 3 groups of m_max rows.
    let ctx = checked_context();
    let (a, b) = device_operands(&ctx, 200, 3, 64, 128);
    let mut d = ctx.alloc_zeroed::<bf16>(200 * 64).unwrap();
    let dm = ctx.upload(&[1, 2, 3]).unwrap();
    let e = m_grouped_fp8_gemm_nt_masked(&stream(&ctx), &a, &b, &mut d, &dm, 1).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "a", .. }), "{e}");
    assert!(e.to_string().contains("G = 3"), "{e}");
}

#[test]
fn rejects_group_count_mismatch_with_d() {
    // Masked: D sized for 2 groups while B has 3.
    let ctx = checked_context();
    let (a, b) = device_operands(&ctx, 3 * 64, 3, 64, 128);
    let mut d = ctx.alloc_zeroed::<bf16>(2 * 64 * 64).unwrap();
    let dm = ctx.upload(&[1, 2, 3]).unwrap();
    let e = m_grouped_fp8_gemm_nt_masked(&stream(&ctx), &a, &b, &mut d, &dm, 1).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "d", .. }), "{e}");
    assert!(e.to_string().contains("12288 elements"), "{e}");
    // Contiguous: D not m_sum · n.
    let (a, b) = device_operands(&ctx, 128, 3, 64, 128);
    let e = contiguous_err(&ctx, &a, &b, 127 * 64, &[0; 128]);
    assert!(matches!(e, Error::Shape { arg: "d", .. }), "{e}");
}

#[test]
fn rejects_mismatched_k() {
    let ctx = checked_context();
    let (a, _) = device_operands(&ctx, 128, 2, 64, 256);
    let (_, b) = device_operands(&ctx, 128, 2, 64, 128);
    let e = contiguous_err(&ctx, &a, &b, 128 * 64, &[0; 128]);
    assert!(matches!(e, Error::Shape { arg: "b", .. }), "{e}");
    assert!(e.to_string().contains("k = 256"), "{e}");
}

#[test]
fn rejects_n_and_k_the_kernels_do_not_support() {
    let ctx = checked_context();
    let (a, b) = device_operands(&ctx, 128, 1, 66, 128);
    let e = contiguous_err(&ctx, &a, &b, 128 * 66, &[0; 128]);
    assert!(matches!(e, Error::Shape { arg: "n", .. }), "{e}");
    let (a, b) = device_operands(&ctx, 2 * 8, 2, 64, 200);
    let mut d = ctx.alloc_zeroed::<bf16>(2 * 8 * 64).unwrap();
    let dm = ctx.upload(&[8, 8]).unwrap();
    let e = m_grouped_fp8_gemm_nt_masked(&stream(&ctx), &a, &b, &mut d, &dm, 8).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "k", .. }), "{e}");
}

#[test]
fn rejects_the_format_the_architecture_does_not_decode() {
    let ctx = checked_context();
    assert_eq!(ctx.arch(), fp8gemm::codeobj::Arch::Gfx942);
    let mut rng = StdRng::seed_from_u64(5);
    let x = randn_bf16(128 * 128, &mut rng);
    let qa = QuantizedActivations::<E4M3Fn>::quantize(&x, 128, 128).unwrap();
    let qb = GroupedQuantizedWeights::<E4M3Fn>::quantize(&x[..64 * 128], 1, 64, 128).unwrap();
    let a = DeviceActivations::upload(&ctx, &qa).unwrap();
    let b = DeviceGroupedWeights::upload(&ctx, &qb).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(128 * 64).unwrap();
    let di = ctx.upload(&[0; 128]).unwrap();
    let e = m_grouped_fp8_gemm_nt_contiguous(&stream(&ctx), &a, &b, &mut d, &di).unwrap_err();
    assert!(matches!(e, Error::Format { arg: "a", expected: "e4m3fnuz", actual: "e4m3fn", .. }), "{e}");
    let dm = ctx.upload(&[1]).unwrap();
    let e = m_grouped_fp8_gemm_nt_masked(&stream(&ctx), &a, &b, &mut d, &dm, 1).unwrap_err();
    assert!(matches!(e, Error::Format { .. }), "{e}");
}

#[test]
fn rejects_index_buffers_of_another_context() {
    let ctx = checked_context();
    let other = Context::new().unwrap();
    let (a, b) = device_operands(&ctx, 128, 2, 64, 128);
    let mut d = ctx.alloc_zeroed::<bf16>(128 * 64).unwrap();
    let di = other.upload(&[0; 128]).unwrap();
    let e = m_grouped_fp8_gemm_nt_contiguous(&stream(&ctx), &a, &b, &mut d, &di).unwrap_err();
    assert!(matches!(e, Error::ForeignBuffer { arg: "m_indices" }), "{e}");
    let (a, b) = device_operands(&ctx, 2 * 64, 2, 64, 128);
    let dm = other.upload(&[1, 1]).unwrap();
    let e = m_grouped_fp8_gemm_nt_masked(&stream(&ctx), &a, &b, &mut d, &dm, 1).unwrap_err();
    assert!(matches!(e, Error::ForeignBuffer { arg: "masked_m" }), "{e}");
}

#[test]
fn rejects_grouped_weights_whose_lengths_do_not_match_their_shape() {
    let ctx = checked_context();
    let c = case(8, 2, 64, 128, 2);
    let mut qb = c.qb.clone();
    qb.groups = 3;
    assert!(matches!(DeviceGroupedWeights::upload(&ctx, &qb), Err(Error::Shape { arg: "b.data", .. })));
    let mut qb = c.qb.clone();
    qb.scales.pop();
    assert!(matches!(DeviceGroupedWeights::upload(&ctx, &qb), Err(Error::Shape { arg: "b.scales", .. })));
}

#[test]
fn empty_problems_launch_nothing() {
    let ctx = checked_context();
    let (a, b) = device_operands(&ctx, 0, 2, 64, 128);
    let mut d = ctx.alloc_zeroed::<bf16>(0).unwrap();
    let di = ctx.upload::<i32>(&[]).unwrap();
    assert!(m_grouped_fp8_gemm_nt_contiguous(&stream(&ctx), &a, &b, &mut d, &di).unwrap().config.is_none());
    let dm = ctx.upload(&[0, 0]).unwrap();
    assert!(m_grouped_fp8_gemm_nt_masked(&stream(&ctx), &a, &b, &mut d, &dm, 1).unwrap().config.is_none());
}

mod random {
    use super::{LAYOUTS, case, checked_context, contiguous_case, run_contiguous, run_masked};
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    proptest! {
        #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]
        #[test]
        fn random_contiguous_layouts(rows in proptest::collection::vec(0usize..200, 1..6), n4 in 1usize..40, kb in 1usize..3, layout in 0usize..2, seed in any::<u64>()) {
            let ctx = checked_context();
            let (n, k) = (4 * n4, 128 * kb);
            let (c, m_indices) = contiguous_case(&rows, &[], n, k, seed);
            if c.rows > 0 {
                let out = run_contiguous(&ctx, &c, &m_indices, LAYOUTS[layout], "random contiguous");
                prop_assert_eq!(out.computed, rows.iter().sum::<usize>());
                out.assert_accurate(&format!("random contiguous rows={rows:?} n={n} k={k}"));
            }
        }

        #[test]
        fn random_masked_counts(groups in 1usize..6, m_max in 1usize..150, n4 in 1usize..40, kb in 1usize..3, expected_m in 0usize..300, layout in 0usize..2, seed in any::<u64>()) {
            let ctx = checked_context();
            let (n, k) = (4 * n4, 128 * kb);
            let mut rng = StdRng::seed_from_u64(seed);
            // Counts anywhere in −10..m_max + 10: the device clamps.
            let masked: Vec<i32> = (0..groups).map(|_| rng.random_range(-10..m_max as i32 + 10)).collect();
            let c = case(groups * m_max, groups, n, k, seed);
            let out = run_masked(&ctx, &c, &masked, expected_m, LAYOUTS[layout], "random masked");
            let want: usize = masked.iter().map(|&v| v.clamp(0, m_max as i32) as usize).sum();
            prop_assert_eq!(out.computed, want);
            out.assert_accurate(&format!("random masked G={groups} m_max={m_max} masked={masked:?} n={n} k={k}"));
        }
    }
}
