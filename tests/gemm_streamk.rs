//! Stream-K dense GEMMs (`fp8_gemm_nt_streamk_*`, data-parallel head + stream-K tail) end to
//! end on the emulator, every checking mode on: every tile × several schedules `(g, dp)` on tail
//! shapes against both CPU references (calc_diff and element-wise bounds) and against the
//! data-parallel kernel, determinism, graph replay, two streams, the workspace rules (explicit
//! too small: typed error; the stream's too small: reported fallback) and the re-armed counters.

mod common;
use common::*;
use fp8gemm::config::{self, GemmDesc, StreamK};
use fp8gemm::view::OutputViewMut;
use fp8gemm::{Context, DeviceActivations, DeviceWeights, Error, Stream, Workspace, fp8_gemm_nt, fp8_gemm_nt_with_workspace, workspace_floats};
use fp8gemm_device::streamk::StreamKSchedule;
use fp8gemm_device::tile::SPLITK_COUNTER_FLOATS;
use half::bf16;

/// The overrides forcing `tile` and the stream-K schedule `sk` (or, with `sk = None`, the
/// data-parallel kernel: split 1).
fn sk_overrides(tile: Option<(u32, u32)>, sk: Option<(u32, Option<u32>)>) -> Overrides {
    let mut o = overrides(tile, if sk.is_none() { Some(1) } else { None });
    o.stream_k = sk;
    o
}

/// Runs `f` on `stream` with [`sk_overrides`] as its overrides.
fn forced<T>(stream: &mut Stream, tile: Option<(u32, u32)>, sk: Option<(u32, Option<u32>)>, f: impl FnOnce(&Stream) -> T) -> T {
    with_overrides(stream, sk_overrides(tile, sk), f)
}

#[test]
fn every_tile_and_schedule_matches_both_references_and_the_data_parallel_kernel() {
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    // Tails: m not a multiple of any tile height, n % 64 != 0, block counts that do not divide.
    for (m, n, k) in [(1usize, 132usize, 384usize), (130, 196, 640), (65, 260, 1024)] {
        let c = case(m, n, k, (m * 7 + n + k) as u64);
        let nkb = (k / 128) as u32;
        for tile in config::tiles(config::GemmKind::Dense) {
            let (dp_ref, r) = forced(&mut stream, Some(tile), None, |stream| run_on(&ctx, stream, &c));
            assert!(r.config.unwrap().stream_k.is_none());
            let tiles = (m as u32).div_ceil(tile.0) * (n as u32).div_ceil(tile.1);
            for (g, dp) in stream_k_test_schedules(tiles, nkb) {
                let what = format!("{m}x{n}x{k} tile {}x{} stream-K g {g} dp {dp}", tile.0, tile.1);
                let (got, r) = forced(&mut stream, Some(tile), Some((g, Some(dp))), |stream| run_on(&ctx, stream, &c));
                let cfg = r.config.unwrap();
                let sk = cfg.stream_k.unwrap_or_else(|| panic!("{what}: {cfg}"));
                assert_eq!(sk, StreamK { tiles, nkb, dp_tiles: dp, sk_wgs: g }, "{what}");
                assert!(cfg.kernel.starts_with("fp8_gemm_nt_streamk_"), "{what}: {}", cfg.kernel);
                assert_eq!((cfg.block_m, cfg.block_n, cfg.grid), (tile.0, tile.1, dp + g), "{what}");
                assert_stream_k_result(&what, &c, &got, &dp_ref, all_whole(&sk.schedule().unwrap()));
            }
        }
    }
    stream.synchronize().unwrap();
}

#[test]
fn the_default_head_and_strided_operands() {
    // `FP8GEMM_FORCE_STREAMK=G` without DP takes the whole waves that leave a tail; A and D
    // with row strides.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let (m, n, k, lda, ldd) = (200usize, 320usize, 768usize, 768 + 128, 320 + 12);
    let c = case(m, n, k, 77);
    let mut bytes = vec![0x7fu8; m * lda];
    let bits = fp8gemm::fp8::as_bits(&c.qa.data);
    for i in 0..m {
        bytes[i * lda..i * lda + k].copy_from_slice(&bits[i * k..(i + 1) * k]);
    }
    let a_data = ctx.upload(&bytes).unwrap();
    let a_scales = ctx.upload(&c.qa.scales).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    for tile in config::tiles(config::GemmKind::Dense) {
        let av = fp8gemm::ActivationsView::<fp8gemm::fp8::E4M3Fnuz>::with_row_stride(a_data.as_slice(), a_scales.as_slice(), m, k, lda).unwrap();
        let fill = bf16::from_f32(-7.25);
        let mut dd = ctx.upload(&vec![fill; m * ldd]).unwrap();
        let r = forced(&mut stream, Some(tile), Some((30, None)), |stream| {
            fp8_gemm_nt(stream, av, &db, OutputViewMut::with_row_stride(dd.as_slice_mut(), m, n, ldd).unwrap())
        })
        .unwrap();
        let sk = r.config.unwrap().stream_k.unwrap();
        // Fewer tiles than one wave of the device: no head.
        assert_eq!((sk.dp_tiles, sk.sk_wgs), (0, 30));
        let all = dd.download(&stream).unwrap();
        let got: Vec<bf16> = (0..m).flat_map(|i| all[i * ldd..i * ldd + n].to_vec()).collect();
        assert_accurate(&format!("strided, tile {}x{}", tile.0, tile.1), &c, &got);
        for i in 0..m {
            assert!(all[i * ldd + n..(i + 1) * ldd].iter().all(|v| v.to_bits() == fill.to_bits()), "row {i}: padding columns written");
        }
    }
    assert_eq!(config::streamk_default_dp(1000, 608), 608);
    assert_eq!(config::streamk_default_dp(1216, 608), 608);
    assert_eq!(config::streamk_default_dp(1217, 608), 1216);
    assert_eq!(config::streamk_default_dp(100, 608), 0);
}

#[test]
fn stream_k_results_are_deterministic_and_the_counters_re_armed() {
    // The last contributor to arrive sums the pieces in K order, whichever it is; every launch
    // leaves the counter region at 0.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(96, 192, 1280, 3);
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    let mut ws = Workspace::new(&ctx, 1 << 20).unwrap();
    let mut results = Vec::new();
    for _ in 0..3 {
        let mut dd = ctx.upload(&vec![bf16::from_f32(5.5); 96 * 192]).unwrap();
        let r = forced(&mut stream, Some((64, 64)), Some((7, Some(2))), |stream| fp8_gemm_nt_with_workspace(stream, &da, &db, &mut dd, &mut ws)).unwrap();
        assert!(r.config.unwrap().stream_k.is_some());
        results.push(dd.download(&stream).unwrap());
        let mut counters = vec![1f32; SPLITK_COUNTER_FLOATS as usize];
        let all = ws.as_slice_mut();
        let mut everything = vec![0f32; all.len()];
        all.as_slice().copy_to_host(&stream, &mut everything).unwrap();
        counters.copy_from_slice(&everything[..SPLITK_COUNTER_FLOATS as usize]);
        assert!(counters.iter().all(|v| v.to_bits() == 0), "counters left armed: {:?}", counters.iter().position(|v| v.to_bits() != 0));
        // The partial slots were used (the schedule splits tiles).
        assert!(everything[SPLITK_COUNTER_FLOATS as usize..].iter().any(|v| *v != 0.0));
    }
    assert!(results.iter().all(|r| r.iter().zip(&results[0]).all(|(x, y)| x.to_bits() == y.to_bits())), "stream-K result changed between runs");
    assert_accurate("96x192x1280 stream-K 7/2", &c, &results[0]);
}

#[test]
fn explicit_workspace_too_small_is_a_typed_error() {
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let (m, n, k) = (130usize, 196usize, 640usize);
    let c = case(m, n, k, 5);
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    forced(&mut stream, Some((64, 64)), Some((9, Some(4))), |stream| {
        let need = workspace_floats(m, n, k, &stream.overrides());
        // 12 tiles, 4 data-parallel: 8 tail tiles over 9 workgroups → 16 slots.
        let sched = StreamKSchedule::new(12, 5, 4, 9).unwrap();
        assert_eq!(need as u64, sched.workspace_floats(64, 64));
        assert_eq!(need as u64, SPLITK_COUNTER_FLOATS + 16 * 64 * 64);
        let fill = bf16::from_f32(3.0);
        let mut dd = ctx.upload(&vec![fill; m * n]).unwrap();
        let mut small = Workspace::new(&ctx, need - 1).unwrap();
        let e = fp8_gemm_nt_with_workspace(stream, &da, &db, &mut dd, &mut small).unwrap_err();
        assert!(matches!(e, Error::Workspace { arg: "workspace", needed, available } if needed == need as u64 && available == need as u64 - 1), "{e}");
        assert!(dd.download(stream).unwrap().iter().all(|v| v.to_bits() == fill.to_bits()), "nothing may be launched");
        let mut exact = Workspace::new(&ctx, need).unwrap();
        let r = fp8_gemm_nt_with_workspace(stream, &da, &db, &mut dd, &mut exact).unwrap();
        assert!(r.config.unwrap().stream_k.is_some());
        assert_accurate("explicit workspace", &c, &dd.download(stream).unwrap());
    });
}

#[test]
fn a_stream_workspace_too_small_falls_back_and_says_so() {
    // A launch whose stream has too little workspace for the preferred plan runs the best
    // plan that fits, reported. (The choice for a
    // given workspace is the entry point's — `config::get_config_for_workspace` — checked here
    // without emulating the large launch; the fallback through the entry point is the same code
    // as split-K's, `gemm_splitk.rs`.)
    let ctx = checked_context();
    // A problem whose preferred plan needs workspace (split-K or stream-K; which one is the
    // cost model's call).
    let (desc, preferred) = [(8192u32, 2048u32, 7168u32), (64, 2112, 7168), (16, 4096, 7168), (48, 256, 2048)]
        .into_iter()
        .map(|(m, n, k)| GemmDesc::dense(m, n, k, ctx.arch()).with_cus(ctx.compute_units()))
        .map(|d| (d, config::get_best_config(&d, &Overrides::NONE).unwrap()))
        .find(|(_, c)| c.workspace_floats() > 1000)
        .expect("some problem whose preferred plan needs workspace");
    let (fit, limit) = config::get_config_for_workspace(&desc, &Overrides::NONE, 1000).unwrap();
    assert!(fit.workspace_floats() <= 1000, "{fit}");
    let limit = limit.expect("the fallback is reported");
    assert_eq!((limit.preferred, limit.needed, limit.available), (preferred, preferred.workspace_floats(), 1000));
    assert!(limit.to_string().contains("workspace holds"), "{limit}");
    // A forced stream-K that does not fit the stream's workspace is an error, not a fallback.
    let (m, n, k) = (130usize, 196usize, 640usize);
    let c = case(m, n, k, 6);
    let mut stream = Stream::new(&ctx).unwrap();
    stream.set_workspace(None).unwrap();
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    let fill = bf16::from_f32(2.5);
    let mut d = ctx.upload(&vec![fill; m * n]).unwrap();
    let e = forced(&mut stream, None, Some((16, None)), |stream| fp8_gemm_nt(stream, &da, &db, &mut d)).unwrap_err();
    assert!(matches!(e, Error::Workspace { available: 0, .. }), "{e}");
    assert!(d.download(&stream).unwrap().iter().all(|v| v.to_bits() == fill.to_bits()), "nothing may be launched");
    // With a workspace of exactly the need it runs.
    let need = workspace_floats(m, n, k, &sk_overrides(None, Some((16, None))));
    stream.set_workspace(Some(Workspace::new(&ctx, need).unwrap())).unwrap();
    let (got, r) = forced(&mut stream, None, Some((16, None)), |stream| run_on(&ctx, stream, &c));
    assert_eq!(r.config.unwrap().workspace_floats(), need as u64);
    assert_accurate("exact workspace", &c, &got);
}

#[test]
fn two_streams_run_stream_k_gemms_at_once() {
    // Each stream owns its workspace: concurrent stream-K launches share no counter or slot.
    two_streams_at_once(sk_overrides(Some((64, 64)), Some((5, None))), |(s, a, b, d), rows| {
        for _ in 0..3 {
            let r = fp8_gemm_nt(s, a, b, &mut *d).unwrap();
            assert!(r.config.unwrap().stream_k.is_some(), "{rows} rows");
        }
    });
}

#[test]
fn a_captured_stream_k_gemm_replays_twice() {
    // The counters must be back at 0 after every launch, or the second replay's last
    // contributor would never see all arrivals and D would keep the fill pattern.
    captured_launch_replays_twice(64, 192, sk_overrides(Some((64, 64)), Some((5, Some(1)))), |(s, a, b, d)| {
        let r = fp8_gemm_nt(s, a, b, d).unwrap();
        assert_eq!(r.config.unwrap().stream_k.map(|s| (s.dp_tiles, s.sk_wgs)), Some((1, 5)));
    });
}

#[test]
fn impossible_forced_schedules_are_typed_errors() {
    let arch = fp8gemm::codeobj::Arch::Gfx942;
    let e = |m, n, k, sk: (u32, Option<u32>)| config::get_best_config(&GemmDesc::dense(m, n, k, arch), &sk_overrides(Some((64, 64)), Some(sk))).unwrap_err();
    // 2 tiles × 3 blocks: at most 6 workgroups; a head must leave a tail.
    let x = e(64, 128, 384, (7, Some(0)));
    assert!(matches!(&x, config::ConfigError::ForcedStreamK { expected, .. } if expected.contains("2 ..= 6 workgroups")), "{x}");
    let x = e(64, 128, 384, (1, Some(2)));
    assert!(matches!(&x, config::ConfigError::ForcedStreamK { expected, .. } if expected.contains("below the tile count")), "{x}");
    // No split-K at the same time, no masked stream-K.
    let sk4 = Overrides::NONE.with_stream_k(4, None);
    let x = config::get_best_config(&GemmDesc::dense(64, 128, 384, arch), &sk4.with_split(2)).unwrap_err();
    let y = config::get_best_config(&GemmDesc::m_grouped_masked(64, 128, 384, 2, 8, arch), &sk4).unwrap_err();
    assert!(matches!(&x, config::ConfigError::ForcedStreamK { expected, .. } if expected.contains("split")), "{x}");
    assert!(matches!(&y, config::ConfigError::ForcedStreamK { expected, .. } if expected.contains("masked")), "{y}");
    // Through the entry point: a typed error, nothing launched.
    let ctx = Context::new().unwrap();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(64, 128, 384, 1);
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(64 * 128).unwrap();
    let x = forced(&mut stream, Some((64, 64)), Some((7, Some(0))), |stream| fp8_gemm_nt(stream, &da, &db, &mut d)).unwrap_err();
    assert!(x.to_string().contains("forced stream-K `7/0`"), "{x}");
}
