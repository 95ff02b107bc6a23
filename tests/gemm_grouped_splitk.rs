//! Split-K for the m-grouped masked layout (`m_grouped_fp8_gemm_nt_masked_splitk_bs_*`, B
//! pre-shuffled) end to end on the emulator, every checking mode on: both CPU references over
//! the rows each group defines (calc_diff and element-wise bounds), every row past a group's
//! clamped count untouched bit for bit (0 rows, fewer than `expected_m`, more, up to and past the
//! capacity, negative), deterministic reruns, graph replay with different `masked_m`, the
//! workspace rules (too small: reported fallback, forced split: typed error; an explicit
//! workspace: used, or a typed error when too small) and the forced split counts the problem
//! cannot use.

mod common;
use common::{Overrides, assert_elementwise, checked_context, forced, overrides, randn_bf16};
use fp8gemm::config::{self, GemmDesc};
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::layout::WeightLayout;
use fp8gemm::quant::{GroupedQuantizedWeights, QuantizedActivations};
use fp8gemm::workspace::DEFAULT_STREAM_WORKSPACE_FLOATS;
use fp8gemm::{
    CaptureMode, Context, DeviceActivations, DeviceGroupedWeights, Error, GemmRun, Stream, Workspace, m_grouped_fp8_gemm_nt_masked,
    m_grouped_fp8_gemm_nt_masked_with_workspace, reference,
};
use half::bf16;
use rand::{SeedableRng, rngs::StdRng};

/// The largest finite bf16: a row holding it after the launch was not written.
const SENTINEL: u16 = 0x7f7f;

/// `groups` groups of `m_max` rows over `[groups, n, k]` weights.
struct Case {
    groups: usize,
    m_max: usize,
    n: usize,
    k: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    qa: QuantizedActivations<E4M3Fnuz>,
    qb: GroupedQuantizedWeights<E4M3Fnuz>,
}

fn case(groups: usize, m_max: usize, n: usize, k: usize, seed: u64) -> Case {
    let mut rng = StdRng::seed_from_u64(seed);
    let a = randn_bf16(groups * m_max * k, &mut rng);
    let b = randn_bf16(groups * n * k, &mut rng);
    let qa = QuantizedActivations::quantize(&a, groups * m_max, k).unwrap();
    let qb = GroupedQuantizedWeights::quantize(&b, groups, n, k).unwrap();
    Case { groups, m_max, n, k, a, b, qa, qb }
}

/// The case's operands on the device (B pre-shuffled: the bs kernels).
struct Operands {
    a: DeviceActivations<E4M3Fnuz>,
    b: DeviceGroupedWeights<E4M3Fnuz>,
}

fn upload(ctx: &Context, c: &Case) -> Operands {
    Operands { a: DeviceActivations::upload(ctx, &c.qa).unwrap(), b: DeviceGroupedWeights::upload_preshuffled(ctx, &c.qb).unwrap() }
}

fn sentinel(c: &Case) -> Vec<bf16> {
    vec![bf16::from_bits(SENTINEL); c.groups * c.m_max * c.n]
}

/// A forced `(tile, split count)` (`None`: the configuration's choice).
type Force = (Option<(u32, u32)>, Option<u32>);

/// Runs the masked GEMM on `stream` into a sentinel-filled D with `(tile, splits)` forced.
fn run(ctx: &Context, stream: &mut Stream, c: &Case, ops: &Operands, masked_m: &[i32], expected_m: usize, (tile, splits): Force) -> (Vec<bf16>, GemmRun) {
    let dm = ctx.upload(masked_m).unwrap();
    let mut dd = ctx.upload(&sentinel(c)).unwrap();
    let r = forced(stream, tile, splits, |stream| m_grouped_fp8_gemm_nt_masked(stream, &ops.a, &ops.b, &mut dd, &dm, expected_m))
        .unwrap_or_else(|e| panic!("masked_m {masked_m:?}, tile {tile:?}, splits {splits:?}: {e}"));
    (dd.download(stream).unwrap(), r)
}

/// `got` against both references: every row below group g's clamped count element-wise and by
/// calc_diff, every other row still the sentinel bit for bit.
fn check(c: &Case, masked_m: &[i32], got: &[bf16], what: &str) {
    let (n, k, m_max) = (c.n, c.k, c.m_max);
    let clamped: Vec<i32> = masked_m.iter().map(|&v| v.clamp(0, m_max as i32)).collect();
    let mut want_q = sentinel(c);
    reference::m_grouped_fp8_gemm_nt_masked(&c.qa, &c.qb, &clamped, &mut want_q).unwrap();
    let (mut g_rows, mut q_rows, mut f_rows) = (Vec::new(), Vec::new(), Vec::new());
    let mut exact = vec![0f32; n];
    for i in 0..c.groups * m_max {
        let (g, r) = (i / m_max, i % m_max);
        let row = &got[i * n..(i + 1) * n];
        if r >= clamped[g] as usize {
            let bad = row.iter().position(|x| x.to_bits() != SENTINEL);
            assert!(bad.is_none(), "{what}: row {r} of group {g} (count {}) was written", masked_m[g]);
            continue;
        }
        g_rows.extend_from_slice(row);
        q_rows.extend_from_slice(&want_q[i * n..(i + 1) * n]);
        reference::gemm_nt_f32(&c.a[i * k..(i + 1) * k], &c.b[g * n * k..(g + 1) * n * k], 1, n, k, &mut exact).unwrap();
        f_rows.extend_from_slice(&exact);
    }
    assert_eq!(g_rows.len() / n, clamped.iter().map(|&v| v as usize).sum::<usize>(), "{what}");
    if g_rows.is_empty() {
        return;
    }
    let dq = reference::calc_diff(&g_rows, &q_rows).unwrap();
    let df = reference::calc_diff(&g_rows, &f_rows).unwrap();
    assert!(dq < 1e-5, "{what}: calc_diff vs dequantized {dq:e}");
    assert!(df < 1e-3, "{what}: calc_diff vs unquantized {df:e}");
    assert_elementwise(what, &g_rows, &q_rows);
}

#[test]
fn masked_split_k_matches_both_references_for_every_tile_and_any_count() {
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    // 5 groups of capacity 80, expected 24 rows: none, fewer than expected, the capacity, a count
    // past the capacity (clamped to 80), a negative one; n = 256 (2 column tiles), 6 K blocks.
    let c = case(5, 80, 256, 768, 1);
    let ops = upload(&ctx, &c);
    let masked_m = [0, 17, 80, i32::MAX, -3];
    for (tile, splits) in [((32, 128), 2), ((32, 128), 6), ((64, 128), 3), ((64, 128), 4)] {
        let what = format!("tile {}x{}, {splits} splits", tile.0, tile.1);
        let (got, r) = run(&ctx, &mut stream, &c, &ops, &masked_m, 24, (Some(tile), Some(splits)));
        let cfg = r.config.unwrap();
        assert_eq!(cfg.kernel, format!("m_grouped_fp8_gemm_nt_masked_splitk_bs_bm{}_bn128", tile.0), "{what}");
        assert_eq!((cfg.splits, cfg.grid), (splits, 5 * 80u32.div_ceil(tile.0) * 2 * splits), "{what}");
        check(&c, &masked_m, &got, &what);
    }
}

#[test]
fn both_masked_grid_orders_give_the_same_bits() {
    // The masked grid order is a launch argument (`Remap::Xcd`: each XCD a contiguous run of
    // the tile order; `Remap::Columns`: each group's N columns round-robin over the XCDs). The
    // same tiles run in another order, each computed the same way: bit-identical D, both
    // references met, rows past the counts untouched. 3 groups × 8 columns (24 columns: the
    // round-robin deals them all) and 5 groups × 2 columns (10: 8 dealt, 2 in the identity
    // order), plain and split-K.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let xcds = fp8gemm_device::tile::NUM_XCDS;
    for (c, masked_m, forced_tiles) in [
        (case(3, 80, 1024, 512, 7), vec![80, 3, 41], [((64, 128), None), ((32, 128), Some(2))]),
        (case(5, 80, 256, 768, 8), vec![0, 17, 80, i32::MAX, -3], [((64, 128), None), ((64, 128), Some(3))]),
    ] {
        let ops = upload(&ctx, &c);
        for (tile, splits) in forced_tiles {
            let mut got = Vec::new();
            for remap in [config::Remap::Xcd { xcds }, config::Remap::Columns { xcds }] {
                let what = format!("{} groups, tile {tile:?}, splits {splits:?}, {remap:?}", c.groups);
                let mut o = stream.overrides().with_tile(tile.0, tile.1).with_remap(remap);
                o.split = splits;
                let dm = ctx.upload(&masked_m).unwrap();
                let mut dd = ctx.upload(&sentinel(&c)).unwrap();
                let r = common::with_overrides(&mut stream, o, |stream| m_grouped_fp8_gemm_nt_masked(stream, &ops.a, &ops.b, &mut dd, &dm, 24))
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let cfg = r.config.unwrap();
                assert_eq!((cfg.remap, cfg.splits), (remap, splits.unwrap_or(1)), "{what}");
                let d = dd.download(&stream).unwrap();
                check(&c, &masked_m, &d, &what);
                got.push(d);
            }
            let diff = got[0].iter().zip(&got[1]).position(|(x, y)| x.to_bits() != y.to_bits());
            assert!(diff.is_none(), "{} groups, tile {tile:?}, splits {splits:?}: the orders differ at element {diff:?}", c.groups);
        }
    }
}

#[test]
fn the_model_splits_decode_shapes_and_the_result_is_accurate() {
    // 2 groups × 64 expected rows over n = 512, k = 4096 (32 blocks): 8 working tiles of 32 rows
    // on 304 CUs, so the model splits; counts above and below the expected one.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(2, 96, 512, 4096, 2);
    let ops = upload(&ctx, &c);
    let masked_m = [90, 5];
    let (got, r) = run(&ctx, &mut stream, &c, &ops, &masked_m, 64, (None, None));
    let cfg = r.config.unwrap();
    assert!(cfg.splits > 1 && cfg.kernel.contains("masked_splitk_bs"), "{cfg}");
    assert!(r.workspace_limit.is_none());
    check(&c, &masked_m, &got, &format!("model choice {cfg}"));
}

#[test]
fn masked_split_k_is_deterministic_and_leaves_the_counters_armed() {
    // Bit-identical reruns on one stream's workspace, with a launch in between whose tiles all
    // return early (every count 0: no counter touched) and one with other counts: a counter
    // left set would hand the reduction to the wrong workgroup of the next launch.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(3, 64, 128, 1024, 3);
    let ops = upload(&ctx, &c);
    let masked_m = [64, 33, 1];
    let (first, _) = run(&ctx, &mut stream, &c, &ops, &masked_m, 16, (Some((32, 128)), Some(8)));
    check(&c, &masked_m, &first, "first run");
    let (none, _) = run(&ctx, &mut stream, &c, &ops, &[0, 0, 0], 16, (Some((32, 128)), Some(8)));
    check(&c, &[0, 0, 0], &none, "all masked");
    #[cfg(feature = "emu")]
    {
        let r = fp8gemm::runtime::last_emulator_report().unwrap();
        assert_eq!(r.count(amdgpu_emu::exec::Class::Mfma), 0, "masked-out split tiles must do no MFMA work");
    }
    let (other, _) = run(&ctx, &mut stream, &c, &ops, &[7, 64, 0], 16, (Some((32, 128)), Some(5)));
    check(&c, &[7, 64, 0], &other, "other counts, 5 splits");
    let (again, _) = run(&ctx, &mut stream, &c, &ops, &masked_m, 16, (Some((32, 128)), Some(8)));
    let same = first.iter().zip(&again).all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(same, "split-K reruns differ");
}

#[test]
fn a_captured_masked_split_k_gemm_replays_with_new_counts() {
    // masked_m is read when the graph runs: each replay computes the counts current then, and
    // the counters re-arm after every replay.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(2, 64, 256, 1024, 4);
    let ops = upload(&ctx, &c);
    let mut dm = ctx.upload(&[64i32, 10]).unwrap();
    let mut dd = ctx.upload(&sentinel(&c)).unwrap();
    // Thread-local capture (a global one would fail the other tests of this binary, see
    // common::captured_launch_replays_twice).
    stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
    let r = forced(&mut stream, Some((32, 128)), Some(4), |stream| m_grouped_fp8_gemm_nt_masked(stream, &ops.a, &ops.b, &mut dd, &dm, 32)).unwrap();
    let exec = stream.end_capture().unwrap().instantiate().unwrap();
    assert_eq!(r.config.unwrap().splits, 4);
    for counts in [[64i32, 10], [3, 64], [0, 40], [64, 10]] {
        dm.copy_from_host(&stream, &counts).unwrap();
        dd.copy_from_host(&stream, &sentinel(&c)).unwrap();
        // SAFETY: every buffer of the captured launch (operands, D, masked_m, the stream's
        // workspace) is alive and used by nothing else.
        unsafe { exec.launch(&stream) }.unwrap();
        check(&c, &counts, &dd.download(&stream).unwrap(), &format!("replay with {counts:?}"));
    }
}

#[test]
fn split_counts_the_problem_cannot_use_are_typed_errors() {
    let ctx = Context::new().unwrap();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(2, 32, 128, 384, 5);
    let ops = upload(&ctx, &c);
    let dm = ctx.upload(&[32i32, 32]).unwrap();
    let mut dd = ctx.upload(&sentinel(&c)).unwrap();
    let mut launch = |tile, splits| forced(&mut stream, tile, Some(splits), |stream| m_grouped_fp8_gemm_nt_masked(stream, &ops.a, &ops.b, &mut dd, &dm, 32));
    // k = 384 has 3 blocks: 4 splits would leave one empty (rejected, not clamped).
    let e = launch(Some((32, 128)), 4).unwrap_err();
    assert!(matches!(&e, Error::Unsupported(s) if s.contains("at most 3")), "{e}");
    // The 128-row tile has no split kernel.
    let e = launch(Some((128, 128)), 2).unwrap_err();
    assert!(matches!(&e, Error::Unsupported(s) if s.contains("no masked split-K kernel")), "{e}");
    // 0 splits.
    let e = launch(None, 0).unwrap_err();
    assert!(matches!(&e, Error::Unsupported(s) if s.contains("at least 1")), "{e}");
    // Contiguous stays unsplit: a forced split is rejected by the config.
    let e = config::get_grouped_bs_config(&GemmDesc::m_grouped_contiguous(256, 128, 384, 2, ctx.arch()), &Overrides::NONE.with_split(2)).unwrap_err();
    assert!(matches!(&e, config::ConfigError::ForcedSplit { expected, .. } if expected.contains("no split-K kernel")), "{e}");
}

#[test]
fn a_stream_workspace_too_small_falls_back_and_a_forced_split_errors() {
    // 17 K blocks over two one-tile groups: the cost model splits them (checked below).
    let ctx = checked_context();
    let c = case(2, 32, 256, 2176, 6);
    let ops = upload(&ctx, &c);
    let masked_m = [32, 20];
    let preferred = config::get_grouped_bs_config(&GemmDesc::m_grouped_masked(32, 256, 2176, 2, 32, ctx.arch()), &Overrides::NONE).unwrap();
    assert!(preferred.splits > 1, "{preferred}");
    for ws in [Some(Workspace::new(&ctx, 100).unwrap()), None] {
        let mut stream = Stream::new(&ctx).unwrap();
        let had = ws.as_ref().map_or(0, |w| w.len() as u64);
        stream.set_workspace(ws).unwrap();
        let (got, r) = run(&ctx, &mut stream, &c, &ops, &masked_m, 32, (None, None));
        let cfg = r.config.unwrap();
        assert_eq!(cfg.splits, 1, "{cfg}");
        let limit = r.workspace_limit.expect("the fallback is reported");
        assert_eq!((limit.preferred, limit.needed, limit.available), (preferred, preferred.workspace_floats(), had));
        check(&c, &masked_m, &got, "fallback");
    }
    let mut stream = Stream::new(&ctx).unwrap();
    stream.set_workspace(None).unwrap();
    let dm = ctx.upload(&masked_m).unwrap();
    let mut dd = ctx.upload(&sentinel(&c)).unwrap();
    let e = forced(&mut stream, None, Some(4), |stream| m_grouped_fp8_gemm_nt_masked(stream, &ops.a, &ops.b, &mut dd, &dm, 32)).unwrap_err();
    assert!(matches!(e, Error::Workspace { available: 0, .. }), "{e}");
}

#[test]
fn an_explicit_workspace_runs_the_split_and_a_too_small_one_is_a_typed_error() {
    let ctx = checked_context();
    let c = case(2, 32, 256, 2176, 7);
    let ops = upload(&ctx, &c);
    let masked_m = [32, 20];
    let dm = ctx.upload(&masked_m).unwrap();
    // The stream has no workspace: a split can only come from the explicit one.
    let mut stream = Stream::new(&ctx).unwrap();
    stream.set_workspace(None).unwrap();
    // The model's preferred split, with a workspace of exactly its need.
    let preferred = config::get_grouped_bs_config(&GemmDesc::m_grouped_masked(32, 256, 2176, 2, 32, ctx.arch()), &Overrides::NONE).unwrap();
    assert!(preferred.splits > 1, "{preferred}");
    let mut ws = Workspace::new(&ctx, preferred.workspace_floats() as usize).unwrap();
    let mut dd = ctx.upload(&sentinel(&c)).unwrap();
    let r = m_grouped_fp8_gemm_nt_masked_with_workspace(&stream, &ops.a, &ops.b, &mut dd, &dm, 32, &mut ws).unwrap();
    assert_eq!(r.config, Some(preferred));
    assert!(r.workspace_limit.is_none());
    check(&c, &masked_m, &dd.download(&stream).unwrap(), "explicit workspace, preferred split");
    // A forced split with a workspace of exactly its need.
    let forced_cfg = config::get_grouped_bs_config(&GemmDesc::m_grouped_masked(32, 256, 2176, 2, 32, ctx.arch()), &overrides(None, Some(4))).unwrap();
    assert_eq!(forced_cfg.splits, 4, "{forced_cfg}");
    let mut ws4 = Workspace::new(&ctx, forced_cfg.workspace_floats() as usize).unwrap();
    let mut dd = ctx.upload(&sentinel(&c)).unwrap();
    let r =
        forced(&mut stream, None, Some(4), |stream| m_grouped_fp8_gemm_nt_masked_with_workspace(stream, &ops.a, &ops.b, &mut dd, &dm, 32, &mut ws4)).unwrap();
    assert_eq!(r.config.unwrap().splits, 4);
    check(&c, &masked_m, &dd.download(&stream).unwrap(), "explicit workspace, forced split 4");
    // One float short of the forced split's need: the typed error naming `workspace`, nothing
    // launched (D keeps its sentinel bit for bit).
    let need = forced_cfg.workspace_floats();
    let mut small = Workspace::new(&ctx, need as usize - 1).unwrap();
    let mut dd = ctx.upload(&sentinel(&c)).unwrap();
    let e = forced(&mut stream, None, Some(4), |stream| m_grouped_fp8_gemm_nt_masked_with_workspace(stream, &ops.a, &ops.b, &mut dd, &dm, 32, &mut small))
        .unwrap_err();
    assert!(matches!(e, Error::Workspace { arg: "workspace", needed, available } if needed == need && available == need - 1), "{e}");
    let untouched = dd.download(&stream).unwrap();
    assert!(untouched.iter().all(|v| v.to_bits() == SENTINEL), "a rejected launch wrote D");
    // Unforced, an explicit workspace short of the preferred split's need is the same error (as
    // for dense `fp8_gemm_nt_with_workspace`: no silent fallback with a caller's workspace).
    let mut small = Workspace::new(&ctx, 100).unwrap();
    let e = m_grouped_fp8_gemm_nt_masked_with_workspace(&stream, &ops.a, &ops.b, &mut dd, &dm, 32, &mut small).unwrap_err();
    assert!(matches!(e, Error::Workspace { arg: "workspace", needed, available: 100 } if needed == preferred.workspace_floats()), "{e}");
    assert!(dd.download(&stream).unwrap().iter().all(|v| v.to_bits() == SENTINEL), "a rejected launch wrote D");
}

#[test]
fn the_choice_for_the_decode_table_shapes() {
    // The shapes of the modelled table of fp8gemm_device::grouped: masked G × m over (4096, 7168)
    // and (7168, 2048) with expected_m = m and m_max = ⌈1.3·m⌉ (as `fp8gemm profile --layout
    // masked` runs them). The choice is the generated cost model's (`select::plan_grouped`):
    // every grouped candidate is estimated, the chosen one has the least estimate, splits only
    // on a masked split-K kernel, fits the stream's default workspace; contiguous never splits.
    // Want: (tile, splits) per shape; `FP8GEMM_PRESHUFFLED=1 fp8gemm profile --machine mi325x`
    // modelled the previous hand rules' choice and this one (the report of issue 28 lists both).
    // Regenerated with the cost model's L2 and fabric bounds: 7 of the 18 choices moved, the
    // moved ones 5 % faster in sum (modelled; the session-16 note on issue 28 has each).
    // Regenerated with the reduction tail (session 19), two moved (`fp8gemm profile`, whose
    // counts pass expected_m: 72 and 74): masked 1×64 over (7168, 2048) from 32×128 split 2 to
    // the 32×64 pipelined tile unsplit, 11.57 → 9.59 µs; masked 2×64 over (4096, 7168) from
    // 32×128 split 2 to 64×128 split 2 (one row tile per group at expected_m = 64), 21.85 →
    // 25.40 µs at those counts (modelled; the session-19 note on issue 28).
    // Session 20: the grouped features move over each XCD's fabric link only its share of A
    // (the grouped kernels' XCD remap gives each XCD a contiguous run of tiles, which share
    // their A rows across N; checked against the timing model's fabric bytes per XCD), which
    // lowers the stand-in estimates of the narrow tiles: 9 of the 18 choices moved, profiled
    // with forced tile and split (as above; old → new, µs, modelled): (4096, 7168) 1×64
    // 32×128 split 3 → 4 14.76 → 14.24, 2×64 64×128 split 2 → 32×128 split 2 25.40 → 21.85,
    // 4×32 32×128 → 32×64 30.73 → 28.50, 8×16 32×128 → 32×64 52.66 → 51.33, 2×128 64×128 →
    // split 2 28.11 → 34.68, 4×64 64×128 → 32×64 29.83 → 37.18; (7168, 2048) 1×64 32×64 →
    // 32×128 split 2 9.59 → 11.57, 2×64 64×128 → 32×64 12.45 → 13.19, 4×32 32×128 → 32×64
    // 18.02 → 17.33. In sum 221.6 → 229.9 µs (+3.8 %): the masked kernels still run on the
    // dense stand-in (the session-20 note on issue 28).
    // Session 21: the masked estimate follows the busiest XCD (`select::masked_busiest_xcd`:
    // the kernels' grid order, the counts drawn as DeepGEMM's tests draw them around
    // expected_m, the estimate averaged over the draws), so that a few groups whose counts
    // spill into one more row tile on one XCD cost a second round there: 10 of the 18 choices
    // moved, profiled as above (old → new, µs, modelled, the profile's one draw of counts):
    // (4096, 7168) 1×64 32×128 split 4 → 3 14.24 → 14.76, 2×64 32×128 split 2 → 64×128 split
    // 2 21.85 → 25.40, 2×128 64×128 split 2 → 3 34.68 → 26.68, 4×64 32×64 → 64×128 37.18 →
    // 29.83, 2×512 64×128 → 80×128 81.28 → 67.87; (7168, 2048) 1×64 32×128 split 2 → 32×64
    // 11.57 → 9.59, 2×64 32×64 → 64×128 13.19 → 12.45, 4×32 32×64 → 64×128 17.33 → 17.33,
    // 2×128 64×128 → 80×128 18.08 → 14.40, 4×64 64×128 → 32×128 18.90 → 19.61. In sum 268.3 →
    // 237.9 µs (−11.3 %).
    // Session 22: the masked grid order is a launch argument the planner chooses where the
    // groups are fewer than the XCDs (`select::offers_columns`): each group's N columns
    // round-robin over the XCDs (`Remap::Columns`, the third field: true) or contiguous runs. 7
    // of the 18 moved, profiled with tile, split and order forced (`FP8GEMM_FORCE_ORDER`), one
    // draw of counts (the profile's default) and the mean over 4–5 independent draws (`profile
    // --seed 1..5`; old → new, µs, modelled): (4096, 7168) 2×512 80×128 → 64×128 cols 67.91 →
    // 81.43, mean 67.84 → 56.96; 4×256 64×128 → cols 81.23 → 55.73, mean 68.66 → 59.47;
    // (7168, 2048) 2×64 64×128 → 32×64 cols 12.48 → 13.49, mean 12.45 → 12.20; 2×128 80×128 →
    // 64×128 cols 14.43 → 18.25, mean 16.33 → 18.14 (the 64-row tile's estimate, not the
    // order: 64×128 runs 18.11); 4×64 32×128 → cols 19.61 → 19.12, mean 19.03 → 18.89; 2×512
    // 64×128 → cols 36.11 → 36.25, mean 37.14 → 34.07; 4×256 64×128 → cols 36.21 → 36.11, mean
    // 37.61 → 35.52. In sum over the means 259.1 → 235.3 µs (−9.2 %).
    // Session 26 (cost file features version 2: split launches' fabric bytes counted exactly,
    // the dense split-K tails from measured chains, the masked split-K kernels on coefficients
    // of their own), two moved, profiled with tile, split and order forced, `profile --seed
    // 1..3` (µs, modelled): (4096, 7168) 2×64 64×128 split 2 → 32×64 cols 25.60 / 25.64 / 25.65
    // → 21.66 / 19.93 / 19.92; 2×128 64×128 split 3 → the same in the columns order 26.86 /
    // 25.81 / 25.77 → 27.04 / 26.48 / 26.77 (+2.3 %).
    let arch = fp8gemm::codeobj::Arch::Gfx942;
    let shapes = [(1u32, 64u32), (2, 64), (4, 32), (8, 16), (2, 128), (4, 64), (1, 1024), (2, 512), (4, 256)];
    let (big, cols) = (((64, 128), 1, false), ((64, 128), 1, true));
    // (tile, splits, columns: the masked grid in the columns order).
    type Choice = ((u32, u32), u32, bool);
    let wants: [((u32, u32), [Choice; 9]); 2] = [
        ((4096, 7168), [((32, 128), 3, false), ((32, 64), 1, true), ((32, 64), 1, false), ((32, 64), 1, false), ((64, 128), 3, true), big, big, cols, cols]),
        ((7168, 2048), [((32, 64), 1, false), ((32, 64), 1, true), big, ((32, 128), 1, false), cols, ((32, 128), 1, true), big, cols, cols]),
    ];
    let mut moved = Vec::new();
    for ((n, k), want) in wants {
        for ((g, m), (tile, splits, columns)) in shapes.into_iter().zip(want) {
            let m_max = (m * 13).div_ceil(10);
            let desc = GemmDesc::m_grouped_masked(m_max, n, k, g, m, arch);
            let cfg = config::get_grouped_bs_config(&desc, &Overrides::NONE).unwrap();
            eprintln!("masked {g}x{m} over ({n},{k}): {cfg}");
            let got = ((cfg.block_m, cfg.block_n), cfg.splits, matches!(cfg.remap, config::Remap::Columns { .. }));
            if got != (tile, splits, columns) {
                moved.push(format!("masked {g}x{m} over ({n},{k}): {got:?}, pinned {:?}", (tile, splits, columns)));
                continue;
            }
            assert_eq!(cfg.splits > 1, cfg.kernel.contains("splitk"), "{cfg}");
            assert!(cfg.workspace_floats() <= DEFAULT_STREAM_WORKSPACE_FLOATS as u64, "{cfg}");
            let (plan, _) = fp8gemm::select::plan_grouped(&desc, WeightLayout::Preshuffled, &Overrides::NONE, u64::MAX).unwrap();
            assert_eq!(plan.config(arch), cfg);
            assert!(plan.estimate_s.is_finite() && plan.estimate_s > 0.0, "{plan}");
            let cont = config::get_grouped_bs_config(&GemmDesc::m_grouped_contiguous(g * m.max(128), n, k, g, arch), &Overrides::NONE).unwrap();
            assert_eq!(cont.splits, 1, "{cont}");
        }
    }
    assert!(moved.is_empty(), "choices moved:\n{}", moved.join("\n"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// The masked choice over random decode-to-prefill shapes: a split count within
    /// `min(k/128, MAX_SPLITS)`, splits only on the 32/64-row masked split-K kernels with at most
    /// their tile limit and with the working tiles' pieces in one round of the device, grid =
    /// grid tiles · splits; no forced-split candidate has a smaller estimate than the choice;
    /// with less workspace the choice fits it and a smaller choice is reported with the
    /// unlimited one as preferred.
    #[test]
    fn masked_split_choice_bounds(
        groups in 1u32..=16, m_max in 1u32..=512, expected in 0u32..=600, n in 1u32..=64, k in 1u32..=128, avail_frac in 0.0f64..1.0,
    ) {
        use proptest::prelude::*;
        let (n, k) = (n * 128, k * 128);
        let arch = fp8gemm::codeobj::Arch::Gfx942;
        let desc = GemmDesc::m_grouped_masked(m_max, n, k, groups, expected, arch);
        let (p, _) = fp8gemm::select::plan_grouped(&desc, WeightLayout::Preshuffled, &Overrides::NONE, u64::MAX).unwrap();
        let c = config::get_grouped_bs_config(&desc, &Overrides::NONE).unwrap();
        prop_assert_eq!(p.config(arch), c);
        let unsplit = config::get_grouped_bs_config(&desc, &Overrides::NONE.with_split(1)).unwrap();
        prop_assert_eq!(unsplit.splits, 1);
        let tiles = groups * m_max.div_ceil(c.block_m) * n.div_ceil(c.block_n);
        prop_assert!(c.splits >= 1 && c.splits <= (k / 128).min(config::MAX_SPLITS), "{} splits", c.splits);
        if c.splits > 1 {
            prop_assert!(c.block_m <= 64 && tiles <= fp8gemm_device::tile::SPLITK_MAX_TILES);
            let rows = expected.clamp(1, m_max);
            let work = groups * rows.div_ceil(c.block_m) * n.div_ceil(c.block_n);
            let slots = p.kernel.slots_per_cu(arch).unwrap();
            prop_assert!(work * c.splits <= 304 * slots, "{} working tiles split {}", work, c.splits);
            let want = format!("m_grouped_fp8_gemm_nt_masked_splitk_bs_bm{}_bn128", c.block_m);
            prop_assert_eq!(c.kernel, want.as_str());
        }
        prop_assert_eq!(c.grid, tiles * c.splits);
        // Every unsplit tile is a candidate too: none has a smaller estimate than the choice.
        for t in [(32, 128), (64, 128), (128, 128), (32, 64), (80, 128)] {
            let (q, _) = fp8gemm::select::plan_grouped(&desc, WeightLayout::Preshuffled, &Overrides::NONE.with_tile(t.0, t.1), u64::MAX).unwrap();
            prop_assert!(q.estimate_s >= p.estimate_s, "{} beats {}", q, p);
        }
        let available = (c.workspace_floats() as f64 * avail_frac) as u64;
        let (l, lim) = config::get_grouped_bs_config_for_workspace(&desc, &Overrides::NONE, available).unwrap();
        prop_assert!(l.splits == 1 || l.workspace_floats() <= available);
        match lim {
            Some(lim) => {
                prop_assert!(l.workspace_floats() < c.workspace_floats());
                prop_assert_eq!((lim.preferred, lim.needed, lim.available), (c, c.workspace_floats(), available));
            }
            None => prop_assert_eq!(l, c),
        }
    }
}
