//! Stream-K over the **bs** loops (pre-shuffled B, `fp8_gemm_nt_streamk_bs_bm{32,64}_bn128` and
//! on the pipelined loop `fp8_gemm_nt_streamk_bs_pipe_bm{48,64}_bn128`, `fp8gemm_device::streamk`
//! generic over `mainloop_bs`'s loops) end to end on the emulator, every checking mode on: every
//! bs stream-K kernel × several schedules `(g, dp)` on tail shapes
//! against both CPU references (calc_diff and element-wise bounds) and against the bs
//! data-parallel kernel (bit-identical where no tile is split), determinism and re-armed
//! counters, the workspace rules (explicit too small: typed error; the stream's too small:
//! reported fallback; forced and too small: typed error), graph replay, and the impossible
//! forced schedules (typed errors).

mod common;
use common::*;
use fp8gemm::config::{self, GemmDesc, StreamK};
use fp8gemm::layout::WeightLayout;
use fp8gemm::{CaptureMode, DeviceActivations, DeviceWeights, Error, Stream, Workspace, fp8_gemm_nt, fp8_gemm_nt_with_workspace};
use fp8gemm_device::streamk::StreamKSchedule;
use fp8gemm_device::tile::SPLITK_COUNTER_FLOATS;
use half::bf16;

/// Every bs stream-K kernel: `(tile, the loop a forced 64-row tile runs` (`Overrides::bs_pipelined`),
/// kernel)`.
const SK_BS_KERNELS: [((u32, u32), Option<bool>, &str); 4] = [
    ((32, 128), None, "fp8_gemm_nt_streamk_bs_bm32_bn128"),
    ((64, 128), Some(false), "fp8_gemm_nt_streamk_bs_bm64_bn128"),
    ((48, 128), None, "fp8_gemm_nt_streamk_bs_pipe_bm48_bn128"),
    ((64, 128), Some(true), "fp8_gemm_nt_streamk_bs_pipe_bm64_bn128"),
];

/// The overrides forcing `tile`, the loop of a forced 64-row tile (`pipelined`,
/// [`Overrides::bs_pipelined`]) and the stream-K schedule `sk` (or, with `sk = None`, the
/// data-parallel bs kernel: split 1).
fn sk_overrides(tile: Option<(u32, u32)>, pipelined: Option<bool>, sk: Option<(u32, Option<u32>)>) -> Overrides {
    let mut o = overrides(tile, if sk.is_none() { Some(1) } else { None });
    o.stream_k = sk;
    o.bs_pipelined = pipelined;
    o
}

/// Runs `f` on `stream` with `tile` and the stream-K schedule `sk` forced ([`sk_overrides`]).
fn forced_sk<T>(stream: &mut Stream, tile: Option<(u32, u32)>, sk: Option<(u32, Option<u32>)>, f: impl FnOnce(&Stream) -> T) -> T {
    with_overrides(stream, sk_overrides(tile, None, sk), f)
}

/// [`forced_sk`] with the loop of a forced 64-row tile pinned ([`Overrides::bs_pipelined`]).
fn forced_sk_loop<T>(
    stream: &mut Stream,
    tile: Option<(u32, u32)>,
    pipelined: Option<bool>,
    sk: Option<(u32, Option<u32>)>,
    f: impl FnOnce(&Stream) -> T,
) -> T {
    with_overrides(stream, sk_overrides(tile, pipelined, sk), f)
}

/// The case run with pre-shuffled weights ([`run_with_layout`]).
fn run_bs(ctx: &fp8gemm::Context, stream: &Stream, c: &Case) -> (Vec<bf16>, fp8gemm::GemmRun) {
    run_with_layout(ctx, stream, c, WeightLayout::Preshuffled)
}

#[test]
fn every_bs_tile_and_schedule_matches_both_references_and_the_data_parallel_kernel() {
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    // Tails: m not a multiple of either tile height (and 1 row), n a multiple of 4 but not of 16
    // or 128, block counts that are odd or not multiples of the 4-block scale window.
    for (m, n, k) in [(1usize, 132usize, 384usize), (130, 196, 640), (65, 260, 1152)] {
        let c = case(m, n, k, (m * 7 + n + k) as u64);
        let nkb = (k / 128) as u32;
        for (tile, pipelined, kernel) in SK_BS_KERNELS {
            // The data-parallel kernel of the same tile and loop (the 48-row tile: pipelined).
            let (dp_ref, r) = forced_sk_loop(&mut stream, Some(tile), pipelined, None, |stream| run_bs(&ctx, stream, &c));
            let cfg = r.config.unwrap();
            assert!(cfg.stream_k.is_none() && cfg.kernel.starts_with("fp8_gemm_nt_bs_"), "{cfg}");
            assert_eq!(cfg.kernel.contains("_pipe_"), kernel.contains("_pipe_"), "{cfg}");
            let tiles = (m as u32).div_ceil(tile.0) * (n as u32).div_ceil(tile.1);
            for (g, dp) in stream_k_test_schedules(tiles, nkb) {
                let what = format!("{m}x{n}x{k} {kernel} stream-K g {g} dp {dp}");
                let (got, r) = forced_sk_loop(&mut stream, Some(tile), pipelined, Some((g, Some(dp))), |stream| run_bs(&ctx, stream, &c));
                let cfg = r.config.unwrap();
                let sk = cfg.stream_k.unwrap_or_else(|| panic!("{what}: {cfg}"));
                assert_eq!(sk, StreamK { tiles, nkb, dp_tiles: dp, sk_wgs: g }, "{what}");
                assert_eq!(cfg.kernel, kernel, "{what}");
                assert_eq!((cfg.block_m, cfg.block_n, cfg.grid), (tile.0, tile.1, dp + g), "{what}");
                assert_eq!(cfg.workspace_floats(), sk.schedule().unwrap().workspace_floats(tile.0, tile.1), "{what}");
                assert_stream_k_result(&what, &c, &got, &dp_ref, all_whole(&sk.schedule().unwrap()));
            }
        }
    }
    stream.synchronize().unwrap();
}

#[test]
fn bs_stream_k_results_are_deterministic_and_the_counters_re_armed() {
    // The last contributor to arrive sums the pieces in K order, whichever it is; every launch
    // leaves the counter region at 0.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(96, 256, 1280, 3);
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload_preshuffled(&ctx, &c.qb).unwrap();
    let mut ws = Workspace::new(&ctx, 1 << 20).unwrap();
    for (tile, pipelined, kernel) in SK_BS_KERNELS {
        let mut results = Vec::new();
        for _ in 0..3 {
            let mut dd = ctx.upload(&vec![bf16::from_f32(5.5); 96 * 256]).unwrap();
            let r =
                forced_sk_loop(&mut stream, Some(tile), pipelined, Some((7, Some(1))), |stream| fp8_gemm_nt_with_workspace(stream, &da, &db, &mut dd, &mut ws))
                    .unwrap();
            let cfg = r.config.unwrap();
            assert!(cfg.stream_k.is_some() && cfg.kernel == kernel, "{cfg}");
            results.push(dd.download(&stream).unwrap());
            let all = ws.as_slice_mut();
            let mut everything = vec![0f32; all.len()];
            all.as_slice().copy_to_host(&stream, &mut everything).unwrap();
            let counters = &everything[..SPLITK_COUNTER_FLOATS as usize];
            assert!(counters.iter().all(|v| v.to_bits() == 0), "counters left armed: {:?}", counters.iter().position(|v| v.to_bits() != 0));
            // The partial slots were used (the schedule splits tiles).
            assert!(everything[SPLITK_COUNTER_FLOATS as usize..].iter().any(|v| *v != 0.0));
        }
        let what = format!("96x256x1280 {kernel} stream-K 7/1");
        assert!(results.iter().all(|r| r.iter().zip(&results[0]).all(|(x, y)| x.to_bits() == y.to_bits())), "{what}: result changed between runs");
        assert_accurate(&what, &c, &results[0]);
    }
}

#[test]
fn explicit_workspace_too_small_is_a_typed_error() {
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let (m, n, k) = (130usize, 196usize, 640usize);
    let c = case(m, n, k, 5);
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload_preshuffled(&ctx, &c.qb).unwrap();
    forced_sk(&mut stream, Some((32, 128)), Some((9, Some(4))), |stream| {
        // 5 × 2 = 10 tiles of 32 × 128, 4 data-parallel: 6 tail tiles over 9 workgroups → 14
        // slots of 32 × 128 f32.
        let need = StreamKSchedule::new(10, 5, 4, 9).unwrap().workspace_floats(32, 128);
        assert_eq!(need, SPLITK_COUNTER_FLOATS + 14 * 32 * 128);
        let desc = GemmDesc::dense(m as u32, n as u32, k as u32, ctx.arch()).with_cus(ctx.compute_units());
        assert_eq!(config::get_bs_config(&desc, &stream.overrides()).unwrap().workspace_floats(), need);
        assert_eq!(fp8gemm::workspace_floats_preshuffled(m, n, k, &stream.overrides()) as u64, need);
        let fill = bf16::from_f32(3.0);
        let mut dd = ctx.upload(&vec![fill; m * n]).unwrap();
        let mut small = Workspace::new(&ctx, need as usize - 1).unwrap();
        let e = fp8_gemm_nt_with_workspace(stream, &da, &db, &mut dd, &mut small).unwrap_err();
        assert!(matches!(e, Error::Workspace { arg: "workspace", needed, available } if needed == need && available == need - 1), "{e}");
        assert!(dd.download(stream).unwrap().iter().all(|v| v.to_bits() == fill.to_bits()), "nothing may be launched");
        let mut exact = Workspace::new(&ctx, need as usize).unwrap();
        let r = fp8_gemm_nt_with_workspace(stream, &da, &db, &mut dd, &mut exact).unwrap();
        assert_eq!(r.config.unwrap().kernel, "fp8_gemm_nt_streamk_bs_bm32_bn128");
        assert_accurate("explicit workspace", &c, &dd.download(stream).unwrap());
    });
}

#[test]
fn a_stream_workspace_too_small_falls_back_and_says_so() {
    // A problem whose preferred bs plan needs workspace (split-K or stream-K: the cost model's
    // call); a launch whose stream has too little runs the best plan that fits, reported.
    // (Checked on the choice for a given workspace, `config::get_bs_config_for_workspace`,
    // without emulating the large launch; the entry point's fallback is the same code for
    // every kind.)
    let ctx = checked_context();
    let (desc, preferred) = [(2816u32, 7168u32, 7168u32), (8192, 2048, 7168), (64, 2112, 7168), (16, 4096, 7168), (48, 256, 2048)]
        .into_iter()
        .map(|(m, n, k)| GemmDesc::dense(m, n, k, ctx.arch()).with_cus(ctx.compute_units()))
        .map(|d| (d, config::get_bs_config(&d, &Overrides::NONE).unwrap()))
        .find(|(_, c)| c.workspace_floats() > 1000)
        .expect("some problem whose preferred bs plan needs workspace");
    // The pre-shuffled need, not the logical one.
    assert_eq!(fp8gemm::workspace_floats_preshuffled(desc.m as usize, desc.n as usize, desc.k as usize, &Overrides::NONE) as u64, preferred.workspace_floats());
    let (fit, limit) = config::get_bs_config_for_workspace(&desc, &Overrides::NONE, 1000).unwrap();
    assert!(fit.workspace_floats() <= 1000 && fit.kernel.contains("_bs_"), "{fit}");
    let limit = limit.expect("the fallback is reported");
    assert_eq!((limit.preferred, limit.needed, limit.available), (preferred, preferred.workspace_floats(), 1000));
    // A forced stream-K that does not fit the stream's workspace is an error, not a fallback.
    let (m, n, k) = (130usize, 196usize, 640usize);
    let c = case(m, n, k, 6);
    let mut stream = Stream::new(&ctx).unwrap();
    stream.set_workspace(None).unwrap();
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload_preshuffled(&ctx, &c.qb).unwrap();
    let fill = bf16::from_f32(2.5);
    let mut d = ctx.upload(&vec![fill; m * n]).unwrap();
    let e = forced_sk(&mut stream, None, Some((16, None)), |stream| fp8_gemm_nt(stream, &da, &db, &mut d)).unwrap_err();
    assert!(matches!(e, Error::Workspace { available: 0, .. }), "{e}");
    assert!(d.download(&stream).unwrap().iter().all(|v| v.to_bits() == fill.to_bits()), "nothing may be launched");
    // With a workspace of exactly the need it runs.
    let desc = GemmDesc::dense(m as u32, n as u32, k as u32, ctx.arch()).with_cus(ctx.compute_units());
    let need = config::get_bs_config(&desc, &sk_overrides(None, None, Some((16, None)))).unwrap().workspace_floats();
    stream.set_workspace(Some(Workspace::new(&ctx, need as usize).unwrap())).unwrap();
    let (got, r) = forced_sk(&mut stream, None, Some((16, None)), |stream| run_bs(&ctx, stream, &c));
    let cfg = r.config.unwrap();
    assert_eq!((cfg.workspace_floats(), cfg.stream_k.map(|s| s.sk_wgs)), (need, Some(16)));
    assert_accurate("exact workspace", &c, &got);
}

#[test]
fn a_captured_bs_stream_k_gemm_replays_twice() {
    // The counters must be back at 0 after every launch, or the second replay's last
    // contributor would never see all arrivals and D would keep the fill pattern.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let (m, n) = (64usize, 256usize);
    let c = case(m, n, 1024, 31);
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload_preshuffled(&ctx, &c.qb).unwrap();
    let mut dd = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
    // Thread-local: a global-mode capture forbids every thread's allocations.
    stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
    let r = forced_sk(&mut stream, Some((32, 128)), Some((5, Some(1))), |stream| fp8_gemm_nt(stream, &da, &db, &mut dd)).unwrap();
    let exec = stream.end_capture().unwrap().instantiate().unwrap();
    let cfg = r.config.unwrap();
    assert_eq!((cfg.kernel, cfg.stream_k.map(|s| (s.dp_tiles, s.sk_wgs))), ("fp8_gemm_nt_streamk_bs_bm32_bn128", Some((1, 5))));
    let fill = vec![bf16::from_f32(99.0); m * n];
    for replay in 0..2 {
        dd.copy_from_host(&stream, &fill).unwrap();
        // SAFETY: every buffer of the captured launch (operands, D, the stream's workspace) is
        // alive and used by nothing else.
        unsafe { exec.launch(&stream) }.unwrap();
        assert_accurate(&format!("replay {replay}"), &c, &dd.download(&stream).unwrap());
    }
}

#[test]
fn impossible_forced_bs_schedules_are_typed_errors() {
    let arch = fp8gemm::codeobj::Arch::Gfx942;
    let bs = |m, n, k, tile, sk: (u32, Option<u32>)| config::get_bs_config(&GemmDesc::dense(m, n, k, arch), &sk_overrides(tile, None, Some(sk)));
    // 2 tiles of 32 × 128 × 3 blocks: at most 6 workgroups; a head must leave a tail.
    let x = bs(64, 128, 384, Some((32, 128)), (7, Some(0))).unwrap_err();
    assert!(matches!(&x, config::ConfigError::ForcedStreamK { expected, .. } if expected.contains("2 ..= 6 workgroups")), "{x}");
    let x = bs(64, 128, 384, Some((32, 128)), (1, Some(2))).unwrap_err();
    assert!(matches!(&x, config::ConfigError::ForcedStreamK { expected, .. } if expected.contains("below the tile count")), "{x}");
    // No bs stream-K kernel for the 128-row tile.
    let x = bs(256, 128, 384, Some((128, 128)), (2, None)).unwrap_err();
    assert!(matches!(&x, config::ConfigError::ForcedStreamK { expected, .. } if expected.contains("128x128")), "{x}");
    // Nor for the pipelined 80- and 96-row tiles (the 48-row one has one).
    for bm in [80, 96] {
        let x = bs(256, 128, 1024, Some((bm, 128)), (2, None)).unwrap_err();
        assert!(
            matches!(&x, config::ConfigError::ForcedStreamK { expected, .. } if expected.contains(&format!("{bm}x128")) && expected.contains("48x128")),
            "{x}"
        );
    }
    // The pipelined 48-row stream-K kernel's own schedule limits: 1 tile × 3 blocks.
    let x = bs(48, 128, 384, Some((48, 128)), (4, Some(0))).unwrap_err();
    assert!(
        matches!(&x, config::ConfigError::ForcedStreamK { expected, .. } if expected.contains("48x128 pipelined") && expected.contains("1 ..= 3 workgroups")),
        "{x}"
    );
    // A tile no bs kernel has.
    let x = bs(256, 128, 384, Some((64, 64)), (2, None)).unwrap_err();
    assert!(matches!(&x, config::ConfigError::ForcedTile { .. }), "{x}");
    // No split-K at the same time.
    let x = config::get_bs_config(&GemmDesc::dense(64, 128, 384, arch), &Overrides::NONE.with_split(2).with_stream_k(4, None)).unwrap_err();
    assert!(matches!(&x, config::ConfigError::ForcedStreamK { expected, .. } if expected.contains("split")), "{x}");
    // Without a forced tile, every bs stream-K kernel is tried and every reason given: g = 7
    // with no head fits neither 32 × 128 (2 tiles, at most 6 iterations) nor 48 or 64 × 128 (1
    // tile, at most 3), on either loop.
    let x = bs(64, 128, 384, None, (7, Some(0))).unwrap_err();
    assert!(
        matches!(&x, config::ConfigError::ForcedStreamK { expected, .. } if ["32x128:", "64x128:", "48x128 pipelined:", "64x128 pipelined:"].iter().all(|t| expected.contains(t))),
        "{x}"
    );
    // Through the entry point: a typed error, nothing launched.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(64, 128, 384, 1);
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload_preshuffled(&ctx, &c.qb).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(64 * 128).unwrap();
    let x = forced_sk(&mut stream, Some((32, 128)), Some((7, Some(0))), |stream| fp8_gemm_nt(stream, &da, &db, &mut d)).unwrap_err();
    assert!(x.to_string().contains("forced stream-K `7/0`"), "{x}");
}
