//! Split-K dense GEMMs (`fp8_gemm_nt_splitk_*`) end to end on the emulator, every checking mode
//! on: every split tile against both CPU references (calc_diff and element-wise bounds) and
//! against the unsplit kernels, tail shapes, determinism, the workspace rules (explicit and
//! stream-owned, too small, two streams at once) and graph replay (the arrival counters re-arm);
//! and the prologue's division by the launch's split and tile-row counts (`tile::FastDiv`).

mod common;
use common::*;
use fp8gemm::config::{self, GemmDesc};
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::view::OutputViewMut;
use fp8gemm::workspace::DEFAULT_STREAM_WORKSPACE_FLOATS;
use fp8gemm::{Context, DeviceActivations, DeviceWeights, Error, Stream, Workspace, fp8_gemm_nt, fp8_gemm_nt_with_workspace, workspace_floats};
use fp8gemm_device::tile::{FastDiv, split_range, split_range_div};
use half::bf16;
use proptest::prelude::*;
use std::num::NonZeroU32;

#[test]
fn every_split_config_matches_both_references_and_the_unsplit_kernel() {
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    // Tails: m not a multiple of any tile height, n % 64 != 0, and odd block counts per split.
    for (m, n, k) in [(1usize, 132usize, 384usize), (65, 196, 640), (130, 260, 512)] {
        let c = case(m, n, k, (m * 7 + n + k) as u64);
        let nkb = (k / 128) as u32;
        let (unsplit, r1) = forced(&mut stream, None, Some(1), |stream| run_on(&ctx, stream, &c));
        assert_eq!(r1.config.unwrap().splits, 1);
        for tile in config::tiles(config::GemmKind::Dense) {
            for splits in [2, 3, nkb] {
                let what = format!("{m}x{n}x{k} tile {}x{} split {splits}", tile.0, tile.1);
                let (got, r) = forced(&mut stream, Some(tile), Some(splits), |stream| run_on(&ctx, stream, &c));
                let cfg = r.config.unwrap();
                assert_eq!((cfg.block_m, cfg.block_n, cfg.splits), (tile.0, tile.1, splits), "{what}");
                assert!(cfg.kernel.starts_with("fp8_gemm_nt_splitk_"), "{what}: {}", cfg.kernel);
                assert_eq!(cfg.grid, (m as u32).div_ceil(tile.0) * (n as u32).div_ceil(tile.1) * splits, "{what}");
                assert_accurate(&what, &c, &got);
                // Same result as the unsplit kernel up to the summation order.
                assert_elementwise(&format!("{what} vs unsplit"), &got, &unsplit);
            }
        }
    }
    stream.synchronize().unwrap();
}

#[test]
fn split_results_are_deterministic() {
    // The last workgroup to arrive sums the partials in split order, whichever it is.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(64, 128, 1024, 3);
    let (first, _) = forced(&mut stream, Some((64, 64)), Some(8), |stream| run_on(&ctx, stream, &c));
    for _ in 0..3 {
        let (again, _) = forced(&mut stream, Some((64, 64)), Some(8), |stream| run_on(&ctx, stream, &c));
        assert!(first.iter().zip(&again).all(|(x, y)| x.to_bits() == y.to_bits()), "split-K result changed between runs");
    }
    assert_accurate("64x128x1024 split 8", &c, &first);
}

#[test]
fn strided_output_and_the_model_choice_of_split() {
    // The model splits a decode-sized problem with long K on its own (no forcing), and the
    // reduction honours D's row stride.
    let ctx = checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let (m, n, k) = (48usize, 256usize, 2048usize);
    let cfg = config::get_best_config(&GemmDesc::dense(m as u32, n as u32, k as u32, ctx.arch()), &Overrides::NONE).unwrap();
    assert!(cfg.splits > 1, "the model should split 4 tiles of 16 K blocks on 304 CUs: {cfg}");
    assert_eq!(workspace_floats(m, n, k, &Overrides::NONE) as u64, cfg.workspace_floats());
    let c = case(m, n, k, 11);
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    let ldd = n + 12;
    let fill = bf16::from_f32(-7.25);
    let mut dd = ctx.upload(&vec![fill; m * ldd]).unwrap();
    let r = fp8_gemm_nt(&stream, &da, &db, OutputViewMut::with_row_stride(dd.as_slice_mut(), m, n, ldd).unwrap()).unwrap();
    assert_eq!(r.config, Some(cfg));
    assert!(r.workspace_limit.is_none());
    let all = dd.download(&stream).unwrap();
    let got: Vec<bf16> = (0..m).flat_map(|i| all[i * ldd..i * ldd + n].to_vec()).collect();
    assert_accurate("48x256x2048 strided D", &c, &got);
    for i in 0..m {
        assert!(all[i * ldd + n..(i + 1) * ldd].iter().all(|v| v.to_bits() == fill.to_bits()), "row {i}: padding columns written");
    }
}

#[test]
fn strided_activations_with_every_split_tile() {
    // A's rows `lda > k` bytes apart: each split starts its rows at byte kb0·128 of the row.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let (m, n, k, lda) = (70usize, 192usize, 768usize, 768 + 256);
    let c = case(m, n, k, 41);
    let mut bytes = vec![0x7fu8; m * lda]; // padding bytes: FP8 NaN-ish garbage that must not be read
    let bits = fp8gemm::fp8::as_bits(&c.qa.data);
    for i in 0..m {
        bytes[i * lda..i * lda + k].copy_from_slice(&bits[i * k..(i + 1) * k]);
    }
    let a_data = ctx.upload(&bytes).unwrap();
    let a_scales = ctx.upload(&c.qa.scales).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    for tile in config::tiles(config::GemmKind::Dense) {
        let av = fp8gemm::ActivationsView::<E4M3Fnuz>::with_row_stride(a_data.as_slice(), a_scales.as_slice(), m, k, lda).unwrap();
        let mut dd = ctx.upload(&vec![bf16::from_f32(1234.5); m * n]).unwrap();
        let r = forced(&mut stream, Some(tile), Some(4), |stream| fp8_gemm_nt(stream, av, &db, &mut dd)).unwrap();
        assert_eq!(r.config.unwrap().splits, 4);
        assert_accurate(&format!("lda {lda}, tile {}x{}", tile.0, tile.1), &c, &dd.download(&stream).unwrap());
    }
}

#[test]
fn split_counts_the_problem_cannot_use_are_rejected() {
    let ctx = Context::new().unwrap();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(8, 128, 384, 1);
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(8 * 128).unwrap();
    // k = 384 has 3 blocks: 4 splits would leave one empty (rejected, not clamped).
    let e = forced(&mut stream, None, Some(4), |stream| fp8_gemm_nt(stream, &da, &db, &mut d)).unwrap_err();
    assert!(matches!(&e, Error::Unsupported(s) if s.contains("at most 3")), "{e}");
    let e = config::get_best_config(&GemmDesc::dense(8, 128, 384, ctx.arch()), &Overrides::NONE);
    assert!(e.is_ok());
    let e = config::get_best_config(&GemmDesc::dense(8, 128, 384, ctx.arch()), &Overrides::NONE.with_split(0)).unwrap_err();
    assert!(matches!(e, config::ConfigError::ForcedSplit { .. }), "{e}");
    // The m-grouped layouts have no split-K kernels.
    let e = config::get_best_config(&GemmDesc::m_grouped_masked(64, 128, 384, 2, 8, ctx.arch()), &Overrides::NONE.with_split(2)).unwrap_err();
    assert!(matches!(&e, config::ConfigError::ForcedSplit { expected, .. } if expected.contains("masked")), "{e}");
}

#[test]
fn explicit_workspace_too_small_is_a_typed_error() {
    let ctx = checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let (m, n, k) = (48usize, 256usize, 2048usize);
    let need = workspace_floats(m, n, k, &Overrides::NONE);
    assert!(need > 0);
    let c = case(m, n, k, 5);
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    let fill = bf16::from_f32(3.0);
    let mut dd = ctx.upload(&vec![fill; m * n]).unwrap();
    let mut small = Workspace::new(&ctx, need - 1).unwrap();
    let e = fp8_gemm_nt_with_workspace(&stream, &da, &db, &mut dd, &mut small).unwrap_err();
    assert!(matches!(e, Error::Workspace { arg: "workspace", needed, available } if needed == need as u64 && available == need as u64 - 1), "{e}");
    assert!(e.to_string().contains(&format!("at least {need} f32")), "{e}");
    assert!(dd.download(&stream).unwrap().iter().all(|v| v.to_bits() == fill.to_bits()), "nothing may be launched");
    // Exactly the reported need is enough.
    let mut exact = Workspace::new(&ctx, need).unwrap();
    assert!(exact.fits(m, n, k, &Overrides::NONE) && !small.fits(m, n, k, &Overrides::NONE));
    let r = fp8_gemm_nt_with_workspace(&stream, &da, &db, &mut dd, &mut exact).unwrap();
    assert!(r.config.unwrap().splits > 1);
    assert_accurate("explicit workspace", &c, &dd.download(&stream).unwrap());
    // A workspace of another context is refused.
    let other = Context::new().unwrap();
    let mut foreign = Workspace::new(&other, need).unwrap();
    let e = fp8_gemm_nt_with_workspace(&stream, &da, &db, &mut dd, &mut foreign).unwrap_err();
    assert!(matches!(e, Error::ForeignBuffer { arg: "workspace" }), "{e}");
}

#[test]
fn a_stream_workspace_too_small_falls_back_and_says_so() {
    let ctx = checked_context();
    let (m, n, k) = (48usize, 256usize, 2048usize);
    let c = case(m, n, k, 6);
    let preferred = config::get_best_config(&GemmDesc::dense(m as u32, n as u32, k as u32, ctx.arch()), &Overrides::NONE).unwrap();
    for ws in [Some(Workspace::new(&ctx, 100).unwrap()), None] {
        let mut stream = Stream::new(&ctx).unwrap();
        let had = ws.as_ref().map_or(0, |w| w.len() as u64);
        stream.set_workspace(ws).unwrap();
        let (got, r) = run_on(&ctx, &stream, &c);
        let cfg = r.config.unwrap();
        assert!(cfg.workspace_floats() <= had, "{cfg}");
        let limit = r.workspace_limit.expect("the fallback is reported");
        assert_eq!((limit.preferred, limit.needed, limit.available), (preferred, preferred.workspace_floats(), had));
        assert!(limit.to_string().contains("workspace holds"), "{limit}");
        assert_accurate("fallback", &c, &got);
    }
    // A forced split that does not fit is an error, not a fallback.
    let mut stream = Stream::new(&ctx).unwrap();
    stream.set_workspace(None).unwrap();
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
    let e = forced(&mut stream, None, Some(4), |stream| fp8_gemm_nt(stream, &da, &db, &mut d)).unwrap_err();
    assert!(matches!(e, Error::Workspace { available: 0, .. }), "{e}");
}

#[test]
fn the_default_stream_workspace_covers_the_deepseek_decode_shapes() {
    let nk = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)];
    for m in [1, 16, 32, 64, 128] {
        for (n, k) in nk {
            let need = workspace_floats(m, n, k, &Overrides::NONE);
            eprintln!("{m}x{n}x{k}: {need} workspace floats");
            assert!(need <= DEFAULT_STREAM_WORKSPACE_FLOATS, "{m}x{n}x{k} needs {need} floats");
        }
    }
}

#[test]
fn two_streams_run_split_k_gemms_at_once() {
    // Each stream owns its workspace: concurrent split-K launches do not share counters or
    // partial slots.
    two_streams_at_once(overrides(Some((64, 64)), Some(4)), |(s, a, b, d), rows| {
        for _ in 0..3 {
            let r = fp8_gemm_nt(s, a, b, &mut *d).unwrap();
            assert_eq!(r.config.unwrap().splits, 4, "{rows} rows");
        }
    });
}

#[test]
fn a_captured_split_k_gemm_replays_twice() {
    // The counters must be back at 0 after every launch, or the second replay's last
    // workgroup would never see `splits` arrivals and D would keep the fill pattern.
    captured_launch_replays_twice(64, 128, overrides(Some((64, 64)), Some(8)), |(s, a, b, d)| {
        let r = fp8_gemm_nt(s, a, b, d).unwrap();
        assert_eq!(r.config.unwrap().splits, 8);
    });
}

/// Split-K launches of different tile counts on one stream's workspace: the counters of a launch
/// with more tiles lie where an earlier launch with fewer tiles wrote partial sums (the counters
/// come first, the partials right after them), so they must be re-zeroed per launch. The MoE
/// layer's shared expert hits this at T = 128 then T = 1000 (H = 1024, I = 512).
#[test]
fn a_launch_with_more_tiles_after_one_with_fewer() {
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    for (m, n, k) in [(128usize, 1024usize, 1024usize), (128, 1024, 512), (1000, 1024, 1024), (1000, 1024, 512), (7, 1024, 1024)] {
        let c = case(m, n, k, (m + n + k) as u64);
        // Forced (64×64 tiles, 4 splits) so the scenario does not depend on whether the tuned
        // table happens to split these shapes: 32 tiles, then 256, then 16 on one workspace.
        let (got, r) = forced(&mut stream, Some((64, 64)), Some(4), |stream| run_on(&ctx, stream, &c));
        let cfg = r.config.unwrap();
        assert!(cfg.splits > 1, "{m}x{n}x{k}: expected a split-K launch, got {cfg}");
        assert_accurate(&format!("{m}x{n}x{k} ({cfg})"), &c, &got);
    }
}

#[test]
fn split_k_is_never_used_for_more_tiles_than_the_counter_region_holds() {
    use fp8gemm_device::tile::SPLITK_MAX_TILES;
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    // 8192 × 2112 on 64 × 64 tiles: 128 · 33 = 4224 tiles > SPLITK_MAX_TILES (4096).
    let (m, n, k) = (8192usize, 2112usize, 256usize);
    assert!((m / 64 * n.div_ceil(64)) as u32 > SPLITK_MAX_TILES);
    let a = DeviceActivations::<E4M3Fnuz>::alloc(&ctx, m, k).unwrap();
    let b = DeviceWeights::<E4M3Fnuz>::alloc(&ctx, n, k).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
    // Forced: a typed error naming the limit, nothing launched.
    let err = forced(&mut stream, Some((64, 64)), Some(2), |stream| fp8_gemm_nt(stream, &a, &b, &mut d)).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("forced split-K `2`") && msg.contains("is more than 4096 output tiles of 64×64"), "{msg}");
    // Unforced: the choice for such a problem never splits.
    let cfg = config::get_best_config(&config::GemmDesc::dense(m as u32, n as u32, k as u32, ctx.arch()), &Overrides::NONE).unwrap();
    assert_eq!(cfg.splits, 1, "{cfg}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// The split-K prologues' division by a launch-fixed divisor (`tile::FastDiv`, the split
    /// and tile-row counts) is exact for every dividend and divisor: small ones (what the
    /// kernels see) and the whole `u32` range; so are the K ranges it gives.
    #[test]
    fn fast_division_is_exact(n in any::<u32>(), d in 1u32.., small_n in 0u32..1 << 16, small_d in 1u32..600) {
        for (n, d) in [(n, d), (small_n, small_d), (n, small_d), (small_n, d)] {
            let f = FastDiv::new(NonZeroU32::new(d).unwrap());
            prop_assert_eq!(f.div_rem(n), (n / d, n % d), "{} / {}", n, d);
        }
        let nkb = small_n % 512 + 1;
        let splits = small_d.min(nkb);
        let f = FastDiv::new(NonZeroU32::new(splits).unwrap());
        for j in 0..splits {
            prop_assert_eq!(split_range_div(j, f, nkb), split_range(j, splits, nkb));
        }
    }
}
