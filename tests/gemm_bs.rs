//! Dense GEMMs with **pre-shuffled** weights (the bs kernels, `fp8_gemm_nt_bs_*`,
//! `fp8gemm_device::mainloop_bs`) end to end on the emulator, every checking mode on: every bs
//! tile against both CPU references (calc_diff and element-wise bounds) and bit for bit against
//! the logical-layout kernels, tail shapes (m not a multiple of the tile height, n a multiple of
//! 4 but not of 16, K block counts that are odd and not multiples of the 4-block scale window),
//! the tile choice, and the rejected inputs.

mod common;
use common::*;
use fp8gemm::config;
use fp8gemm::layout::WeightLayout;
use fp8gemm::{DeviceActivations, DeviceWeights, Error, Stream, fp8_gemm_nt};
use half::bf16;
use proptest::prelude::*;

/// The bs tiles, `(block_m, block_n)`: every tile of a registered dense data-parallel kernel
/// on pre-shuffled weights (32 to 128 rows; 32 × 64: the narrow decode tile, one B fragment
/// per wave), from the registry so that a new row is tested without touching this list.
fn bs_tiles() -> Vec<(u32, u32)> {
    use fp8gemm::registry::{self, Major, Problem, ScheduleKind};
    let mut v: Vec<(u32, u32)> = registry::KERNELS
        .iter()
        .filter(|e| {
            e.problem == Problem::Dense
                && e.weights == WeightLayout::Preshuffled
                && e.schedule == ScheduleKind::DataParallel
                && e.majors == (Major::K, Major::K)
        })
        .map(|e| (e.block_m, e.block_n))
        .collect();
    v.sort_unstable();
    v.dedup();
    assert!(v.len() >= 8, "the registry lists {} bs tiles: {v:?}", v.len());
    v
}
/// The bs tiles that also have split-K and m-grouped kernels.
const BS_SPLIT_TILES: [(u32, u32); 3] = [(32, 128), (64, 128), (128, 128)];
/// The bs tiles with a dense split-K kernel.
const BS_DENSE_SPLIT_TILES: [(u32, u32); 4] = [(32, 128), (64, 128), (128, 128), (32, 64)];

/// The bs kernels run the dense loop's MFMAs in the same order on the same bytes and promote
/// the same way, so their result is the logical-layout (unsplit) kernels' bit for bit.
fn assert_same_bits(what: &str, got: &[bf16], want: &[bf16]) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what}: D[{i}] = {g}, the logical-layout kernel gave {w}");
    }
}

#[test]
fn every_bs_tile_matches_both_references_and_the_logical_kernels() {
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    // m: 1 row, tails of every tile height; n: multiples of 4 that are not of 16 (a padded last
    // fragment) or of 128 (a partial last tile); k: 3, 5 and 9 blocks (odd, and 9 spans three
    // 4-block scale windows with a partial last one).
    for (m, n, k) in [(1usize, 132usize, 384usize), (33, 196, 640), (130, 260, 1152), (200, 2112, 256)] {
        let c = case(m, n, k, (m * 7 + n + k) as u64);
        let (logical, r) = forced(&mut stream, None, Some(1), |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Logical));
        assert!(r.config.unwrap().kernel.starts_with("fp8_gemm_nt_bm"));
        for tile in bs_tiles() {
            let what = format!("{m}x{n}x{k} bs tile {}x{}", tile.0, tile.1);
            let (got, r) = forced(&mut stream, Some(tile), None, |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Preshuffled));
            let cfg = r.config.unwrap();
            assert_eq!((cfg.block_m, cfg.block_n, cfg.splits), (tile.0, tile.1, 1), "{what}");
            // A forced tile runs one of its registered data-parallel bs kernels (the 64-row,
            // 96-row, 128-row and 32 × 64 tiles have several loop variants; the cost model
            // picks).
            let row = fp8gemm::registry::by_name(cfg.kernel).unwrap_or_else(|| panic!("{what}: {cfg}"));
            assert_eq!(
                (row.weights, row.schedule, row.block_m, row.block_n),
                (WeightLayout::Preshuffled, fp8gemm::registry::ScheduleKind::DataParallel, tile.0, tile.1),
                "{what}: {cfg}"
            );
            assert_eq!(cfg.grid, (m as u32).div_ceil(tile.0) * (n as u32).div_ceil(tile.1), "{what}");
            assert!(r.workspace_limit.is_none());
            assert_accurate(&what, &c, &got);
            assert_same_bits(&what, &got, &logical);
        }
        // The 32 × 64 tile's two data-parallel kernels, pinned: one barrier per block (the
        // rule's for more than three tiles per CU) and per two blocks (the default above).
        for (blocks, want) in [(1, "fp8_gemm_nt_bs_pipe_b1_bm32_bn64"), (2, "fp8_gemm_nt_bs_pipe_bm32_bn64")] {
            let what = format!("{m}x{n}x{k} bs tile 32x64, {blocks} blocks per barrier");
            let pinned = overrides(Some((32, 64)), None).with_bs_narrow_barrier(blocks);
            let (got, r) = with_overrides(&mut stream, pinned, |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Preshuffled));
            let cfg = r.config.unwrap();
            assert_eq!((cfg.kernel, cfg.splits, cfg.lds_bytes), (want, 1, fp8gemm_device::tile::bs_narrow_lds_bytes(2 * blocks)), "{what}");
            assert_accurate(&what, &c, &got);
            assert_same_bits(&what, &got, &logical);
        }
    }
    stream.synchronize().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]
    /// Any valid shape, the config chosen for pre-shuffled weights: a bs kernel (split-K for
    /// few tiles), accurate, and bit-identical to the logical-layout kernels when unsplit.
    #[test]
    fn random_shapes_on_the_chosen_bs_tile(m in 1usize..300, n4 in 1usize..80, kb in 1usize..7, seed in any::<u64>()) {
        let ctx = checked_context();
        let mut stream = Stream::new(&ctx).unwrap();
        let (n, k) = (4 * n4, 128 * kb);
        let c = case(m, n, k, seed);
        let (logical, _) = forced(&mut stream, None, Some(1), |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Logical));
        let (got, r) = run_with_layout(&ctx, &stream, &c, WeightLayout::Preshuffled);
        let cfg = r.config.unwrap();
        let want = if cfg.splits > 1 { "fp8_gemm_nt_splitk_bs_" } else { "fp8_gemm_nt_bs_" };
        prop_assert!(cfg.kernel.starts_with(want), "{} (split {})", cfg.kernel, cfg.splits);
        let what = format!("{m}x{n}x{k} {} split {}", cfg.kernel, cfg.splits);
        assert_accurate(&what, &c, &got);
        if cfg.splits == 1 {
            assert_same_bits(&what, &got, &logical);
        }
    }
}

#[test]
fn bs_config_choice() {
    use config::{GemmDesc, get_bs_config};
    use fp8gemm::registry::{self, ScheduleKind};
    let arch = fp8gemm::codeobj::Arch::Gfx942;
    // Every choice is a registered bs kernel whose grid, LDS and schedule agree with its row
    // (the generated selector, `fp8gemm::select`; which kernel wins is judged by `fp8gemm eval`
    // against the timing model, not asserted here).
    for (m, n, k) in [
        (1u32, 7168u32, 2048u32),
        (16, 24576, 1536),
        (64, 2112, 7168),
        (64, 7168, 16384),
        (128, 32768, 512),
        (256, 7168, 2048),
        (640, 2048, 7168),
        (1024, 2048, 7168),
        (1408, 2048, 7168),
        (4096, 7168, 2048),
        (4096, 4096, 7168),
        (8192, 2048, 7168),
    ] {
        let cfg = get_bs_config(&GemmDesc::dense(m, n, k, arch), &Overrides::NONE).unwrap();
        let row = registry::by_name(cfg.kernel).unwrap_or_else(|| panic!("{m}x{n}x{k}: {cfg} is not registered"));
        assert_eq!(row.weights, fp8gemm::WeightLayout::Preshuffled, "{m}x{n}x{k}: {cfg}");
        assert_eq!((cfg.block_m, cfg.block_n, cfg.lds_bytes), (row.block_m, row.block_n, row.lds_bytes), "{m}x{n}x{k}");
        let tiles = m.div_ceil(cfg.block_m) * n.div_ceil(cfg.block_n);
        match row.schedule {
            ScheduleKind::DataParallel => assert_eq!((cfg.grid, cfg.splits, cfg.stream_k), (tiles, 1, None), "{m}x{n}x{k}"),
            ScheduleKind::SplitK => {
                assert!(cfg.splits >= 2 && cfg.splits <= (k / 128).min(32), "{m}x{n}x{k}: {cfg}");
                assert_eq!(cfg.grid, tiles * cfg.splits, "{m}x{n}x{k}");
            }
            ScheduleKind::StreamK => {
                let sk = cfg.stream_k.unwrap_or_else(|| panic!("{m}x{n}x{k}: {cfg}"));
                assert_eq!((sk.tiles, cfg.grid), (tiles, sk.dp_tiles + sk.sk_wgs), "{m}x{n}x{k}");
                assert!(sk.schedule().is_some(), "{m}x{n}x{k}: {cfg}");
            }
        }
    }
    // Without workspace: only plans that need none, and the preferred one reported if it needed some.
    let desc = GemmDesc::dense(64, 2112, 7168, arch);
    let (preferred, _) = config::get_bs_config_for_workspace(&desc, &Overrides::NONE, u64::MAX).unwrap();
    let (c, lim) = config::get_bs_config_for_workspace(&desc, &Overrides::NONE, 0).unwrap();
    assert_eq!(c.workspace_floats(), 0, "{c}");
    assert_eq!(lim.is_some(), preferred.workspace_floats() > 0, "{preferred}");
    if let Some(l) = lim {
        assert_eq!((l.preferred, l.needed, l.available), (preferred, preferred.workspace_floats(), 0));
    }
    // Forcing: any bs tile, any split count up to min(k/128, 32) on a tile with a split-K kernel;
    // a logical-only tile, a split on a tile without a split-K kernel, or too many splits is a
    // typed error naming what is allowed.
    let f = |t, s| get_bs_config(&GemmDesc::dense(256, 256, 256, arch), &overrides(t, s));
    assert_eq!(f(Some((64, 128)), None).unwrap().block_m, 64);
    let e = f(Some((64, 64)), None).unwrap_err();
    assert!(matches!(e, config::ConfigError::ForcedTile { .. }) && e.to_string().contains("64x64") && e.to_string().contains("32x128"), "{e}");
    let c = f(Some((128, 128)), Some(2)).unwrap();
    assert_eq!((c.kernel, c.splits, c.grid), ("fp8_gemm_nt_splitk_bs_bm128_bn128", 2, 2 * 2 * 2));
    // The 32 × 64 split-K kernel counts arrivals per wave (four counters per tile): at most
    // SPLITK_WAVES_MAX_TILES = 1024 tiles (64 × 32768: 1024; 64 × 32832: 1026).
    let narrow = |n: u32| get_bs_config(&GemmDesc::dense(64, n, 1024, arch), &overrides(Some((32, 64)), Some(2)));
    assert_eq!(narrow(32768).unwrap().grid, 2 * 1024);
    assert!(matches!(narrow(32832).unwrap_err(), config::ConfigError::ForcedSplit { .. }));
    // The pipelined-only tiles: forced, that kernel unsplit; with a split count, a typed error.
    for bm in [48u32, 80, 96] {
        let c = f(Some((bm, 128)), None).unwrap();
        assert_eq!((c.kernel.to_string(), c.splits, c.grid), (format!("fp8_gemm_nt_bs_pipe_bm{bm}_bn128"), 1, 256u32.div_ceil(bm) * 2));
        assert!(matches!(f(Some((bm, 128)), Some(2)).unwrap_err(), config::ConfigError::ForcedSplit { .. }));
    }
    let e = f(None, Some(3)).unwrap_err();
    assert!(e.to_string().contains("at most 2"), "{e}");
    assert_eq!(f(None, Some(1)).unwrap().splits, 1);
    // The narrow tile has no stream-K kernel.
    let e = get_bs_config(&GemmDesc::dense(256, 256, 256, arch), &overrides(Some((32, 64)), None).with_stream_k(304, None));
    assert!(matches!(e.unwrap_err(), config::ConfigError::ForcedStreamK { .. }));
    // The narrow data-parallel kernel's barrier variant, forced: 1 or 2 blocks per barrier.
    let c = get_bs_config(&GemmDesc::dense(64, 7168, 2048, arch), &overrides(Some((32, 64)), None).with_bs_narrow_barrier(1));
    assert_eq!(c.unwrap().kernel, "fp8_gemm_nt_bs_pipe_b1_bm32_bn64");
}

#[test]
fn every_bs_split_config_matches_both_references_and_the_unsplit_bs_kernel() {
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    for (m, n, k) in [(1usize, 132usize, 384usize), (65, 196, 640), (130, 260, 1152)] {
        let c = case(m, n, k, (m * 5 + n + k) as u64);
        let nkb = (k / 128) as u32;
        for tile in BS_DENSE_SPLIT_TILES {
            let (unsplit, r) = forced(&mut stream, Some(tile), Some(1), |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Preshuffled));
            assert_eq!(r.config.unwrap().splits, 1);
            for splits in [2, 3, nkb] {
                let what = format!("{m}x{n}x{k} bs tile {}x{} split {splits}", tile.0, tile.1);
                let (got, r) = forced(&mut stream, Some(tile), Some(splits), |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Preshuffled));
                let cfg = r.config.unwrap();
                assert_eq!(cfg.kernel, format!("fp8_gemm_nt_splitk_bs_bm{}_bn{}", tile.0, tile.1), "{what}");
                assert_eq!((cfg.splits, cfg.grid), (splits, (m as u32).div_ceil(tile.0) * (n as u32).div_ceil(tile.1) * splits), "{what}");
                assert_accurate(&what, &c, &got);
                // The unsplit bs result up to the summation order.
                assert_elementwise(&format!("{what} vs unsplit"), &got, &unsplit);
            }
        }
    }
    stream.synchronize().unwrap();
}

#[test]
fn bs_split_k_workspace_rules() {
    let ctx = checked_context();
    let c = case(16, 256, 1024, 6);
    let a = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let b = DeviceWeights::upload_preshuffled(&ctx, &c.qb).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(c.m * c.n).unwrap();
    // An explicit workspace smaller than the chosen split needs: a typed error, nothing run.
    let stream = Stream::new(&ctx).unwrap();
    let mut small = fp8gemm::Workspace::new(&ctx, 16).unwrap();
    let e = fp8gemm::fp8_gemm_nt_with_workspace(&stream, &a, &b, &mut d, &mut small).unwrap_err();
    assert!(matches!(e, Error::Workspace { arg: "workspace", .. }), "{e}");
    // Enough: runs split, accurate.
    let need = config::get_bs_config(&config::GemmDesc::dense(16, 256, 1024, ctx.arch()), &Overrides::NONE).unwrap().workspace_floats();
    assert!(need > 0);
    let mut ws = fp8gemm::Workspace::new(&ctx, need as usize).unwrap();
    let r = fp8gemm::fp8_gemm_nt_with_workspace(&stream, &a, &b, &mut d, &mut ws).unwrap();
    assert!(r.config.unwrap().splits > 1);
    assert_accurate("explicit workspace", &c, &d.download(&stream).unwrap());
    // A wrapped stream without a workspace: no split, reported.
    // SAFETY: `stream` is a live stream of `ctx` and outlives `bare` (dropped at the end of the
    // test after `bare`, whose work is synchronized by the download below).
    let bare = unsafe { Stream::from_raw(&ctx, stream.as_raw()) };
    let mut d2 = ctx.alloc_zeroed::<bf16>(c.m * c.n).unwrap();
    let r = fp8_gemm_nt(&bare, &a, &b, &mut d2).unwrap();
    assert_eq!(r.config.unwrap().splits, 1);
    assert!(r.workspace_limit.is_some());
    assert_accurate("no workspace", &c, &d2.download(&stream).unwrap());
}

#[test]
fn preshuffled_launch_errors_name_the_argument() {
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(8, 128, 256, 4);
    let a = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let b = DeviceWeights::upload_preshuffled(&ctx, &c.qb).unwrap();
    // K of A and B disagree.
    let c2 = case(8, 128, 128, 5);
    let b2 = DeviceWeights::upload_preshuffled(&ctx, &c2.qb).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(8 * 128).unwrap();
    let e = fp8_gemm_nt(&stream, &a, &b2, &mut d).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "b", .. }), "{e}");
    // Output of the wrong size.
    let mut short = ctx.alloc_zeroed::<bf16>(8 * 128 - 1).unwrap();
    let e = fp8_gemm_nt(&stream, &a, &b, &mut short).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "d", .. }), "{e}");
    // A forced split count beyond k/128.
    let e = forced(&mut stream, None, Some(3), |stream| fp8_gemm_nt(stream, &a, &b, &mut d)).unwrap_err();
    assert!(e.to_string().contains("k/128 = 2"), "{e}");
    // A forced dense-only tile.
    let e = forced(&mut stream, Some((64, 64)), None, |stream| fp8_gemm_nt(stream, &a, &b, &mut d)).unwrap_err();
    assert!(e.to_string().contains("pre-shuffled"), "{e}");
    // Nothing was launched: D untouched.
    assert!(d.download(&stream).unwrap().iter().all(|v| v.to_bits() == 0));
    // An empty problem launches nothing.
    let a0 = DeviceActivations::<fp8gemm::fp8::E4M3Fnuz>::alloc(&ctx, 0, 256).unwrap();
    let mut d0 = ctx.alloc_zeroed::<bf16>(0).unwrap();
    assert!(fp8_gemm_nt(&stream, &a0, &b, &mut d0).unwrap().config.is_none());
}

#[test]
fn device_preshuffled_weights_give_the_same_result() {
    // Weights converted on the device (DeviceWeights::to_preshuffled) run the bs kernels and
    // give the logical kernels' result; D is exactly m·n elements (the emulator's memcheck
    // fails the launch on any store past it: rows past m of the last 128-row tile).
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let c = case(129, 256, 512, 11);
    let (logical, _) = forced(&mut stream, None, Some(1), |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Logical));
    let a = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let b = DeviceWeights::upload(&ctx, &c.qb).unwrap().to_preshuffled(&stream).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(c.m * c.n).unwrap();
    let r = forced(&mut stream, Some((128, 128)), None, |stream| fp8_gemm_nt(stream, &a, &b, &mut d)).unwrap();
    assert_eq!(r.config.unwrap().kernel, "fp8_gemm_nt_bs_pipe_bm128_bn128");
    assert_same_bits("to_preshuffled", &d.download(&stream).unwrap(), &logical);
}

#[test]
fn the_row_group_kernels_match_on_tails_and_windows() {
    // fp8_gemm_nt_bs_pipe_rg2_bm{96,128}_bn128 (fp8gemm_device::mainloop_bs, "Row groups"):
    // 512 work-items, two row groups of the pipelined loop sharing B, the bf16 epilogue staging
    // the whole tile. Pinned by name (Overrides::kernel): M tails inside the first group, in
    // the second and past several tiles; N tails; block counts below, at and past a 4-block
    // window; both CPU references and bit for bit the logical-layout kernels, every check on.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    for (m, n, k) in [(1usize, 132usize, 128usize), (47, 260, 384), (97, 196, 640), (129, 388, 1152), (300, 132, 512)] {
        let c = case(m, n, k, (5 * m + n + 3 * k) as u64);
        let (logical, _) = forced(&mut stream, None, Some(1), |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Logical));
        for (name, bm) in [("fp8_gemm_nt_bs_pipe_rg2_bm96_bn128", 96u32), ("fp8_gemm_nt_bs_pipe_rg2_bm128_bn128", 128)] {
            let what = format!("{m}x{n}x{k} {name}");
            let pinned = overrides(None, Some(1)).with_kernel(name).unwrap();
            let (got, r) = with_overrides(&mut stream, pinned, |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Preshuffled));
            let cfg = r.config.unwrap();
            assert_eq!((cfg.kernel, cfg.block_m, cfg.splits), (name, bm, 1), "{what}");
            assert_eq!(cfg.grid, (m as u32).div_ceil(bm) * (n as u32).div_ceil(128), "{what}");
            assert_eq!(cfg.lds_bytes, 2 * fp8gemm_device::tile::bs_pipe_lds_bytes(bm / 2), "{what}");
            assert_accurate(&what, &c, &got);
            assert_same_bits(&what, &got, &logical);
        }
    }
    // A name no kernel has is a typed error naming it.
    let e = overrides(None, None).with_kernel("fp8_gemm_nt_bs_pipe_bm9_bn128").unwrap_err();
    assert!(matches!(e, config::ConfigError::ForcedKernel { .. }) && e.to_string().contains("fp8_gemm_nt_bs_pipe_bm9_bn128"), "{e}");
    stream.synchronize().unwrap();
}

#[test]
fn the_128_row_pipelined_kernel_matches_on_tails_and_windows() {
    // fp8_gemm_nt_bs_pipe_bm128_bn128 (fp8gemm_device::mainloop_bs128): its loop runs whole
    // 4-block scale windows and then the last 0–3 blocks straight-line, so every remainder of
    // the block count (1, 2, 3, 4, 5, 8 blocks: no window, a window and none, two windows),
    // with M tails (1, 127, 129, 300 rows: partial and several row tiles) and N tails (a
    // multiple of 4 but not of 16, a partial last 128-column tile); both CPU references and bit
    // for bit the logical-layout kernels, every emulator check on.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    for (m, n, k) in [(1usize, 132usize, 128usize), (127, 260, 256), (129, 196, 384), (300, 388, 512), (200, 132, 640), (129, 256, 1024)] {
        let c = case(m, n, k, (3 * m + n + 7 * k) as u64);
        let (logical, _) = forced(&mut stream, None, Some(1), |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Logical));
        let what = format!("{m}x{n}x{k} bs 128x128 pipelined");
        // Pinned by name: the 128 × 128 tile has three data-parallel kernels (the two-phase
        // loop, this one, and the two-row-group kernel), which the cost model picks among.
        let pinned = overrides(Some((128, 128)), None).with_kernel("fp8_gemm_nt_bs_pipe_bm128_bn128").unwrap();
        let (got, r) = with_overrides(&mut stream, pinned, |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Preshuffled));
        let cfg = r.config.unwrap();
        assert_eq!((cfg.kernel, cfg.block_m, cfg.splits), ("fp8_gemm_nt_bs_pipe_bm128_bn128", 128, 1), "{what}");
        assert_eq!(cfg.grid, (m as u32).div_ceil(128) * (n as u32).div_ceil(128), "{what}");
        assert_eq!(cfg.lds_bytes, fp8gemm_device::tile::bs_pipe_lds_bytes(128), "{what}");
        assert_accurate(&what, &c, &got);
        assert_same_bits(&what, &got, &logical);
    }
    stream.synchronize().unwrap();
}

#[test]
fn grouped_bs_kernels_match_the_logical_grouped_kernels_on_every_tile() {
    // m-grouped contiguous (groups of 100 and 60 rows, padded to 128, one empty group) and
    // masked (counts 64, 100, 0, 7 of m_max 128): every bs tile gives the logical kernels'
    // result bit for bit, rows it must not write untouched (D pre-filled with a pattern).
    use fp8gemm::grouped::upload_m_indices;
    use fp8gemm::{DeviceGroupedWeights, m_grouped_fp8_gemm_nt_contiguous, m_grouped_fp8_gemm_nt_masked};
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    // K = 640 (5 blocks) and K = 128 (1 block), the 64-row tile on both of its loops.
    for k in [640usize, 128] {
        let (groups, n) = (4usize, 196usize);
        let c = case(512, n * groups, k, 21);
        // Group g's weights: rows g·n .. (g+1)·n of the case's B, quantized per group.
        let per_group: Vec<_> = (0..groups).map(|g| fp8gemm::quant::QuantizedWeights::quantize(&c.b[g * n * k..(g + 1) * n * k], n, k).unwrap()).collect();
        let gw = fp8gemm::quant::GroupedQuantizedWeights::from_groups(&per_group).unwrap();
        let a = DeviceActivations::upload(&ctx, &c.qa).unwrap();
        let idx: Vec<i32> = (0..512)
            .map(|i| match i {
                0..100 => 0,
                128..188 => 2,
                256..384 => 3,
                384..400 => 1,
                _ => -1,
            })
            .collect();
        let idx = upload_m_indices(&ctx, &idx, groups).unwrap();
        let masked = ctx.upload(&[64i32, 100, 0, 7]).unwrap();
        let pattern = vec![bf16::from_f32(1234.5); 512 * n];
        let run = |stream: &Stream, b: &DeviceGroupedWeights<fp8gemm::fp8::E4M3Fnuz>| {
            let mut cd = ctx.upload(&pattern).unwrap();
            let rc = m_grouped_fp8_gemm_nt_contiguous(stream, &a, b, &mut cd, &idx).unwrap();
            let mut md = ctx.upload(&pattern).unwrap();
            let rm = m_grouped_fp8_gemm_nt_masked(stream, &a, b, &mut md, &masked, 64).unwrap();
            ((cd.download(stream).unwrap(), rc), (md.download(stream).unwrap(), rm))
        };
        let ((want_c, _), (want_m, _)) = run(&stream, &DeviceGroupedWeights::upload(&ctx, &gw).unwrap());
        let pre = DeviceGroupedWeights::upload_preshuffled(&ctx, &gw).unwrap();
        // Every bs tile; the 64-row one on both of its loops (pinned with
        // Overrides::bs_pipelined: the two-phase kernel and the pipelined one).
        let variants = [((32, 128), None), ((64, 128), Some(false)), ((64, 128), Some(true)), ((128, 128), None)];
        assert_eq!(variants.map(|(t, _)| t).into_iter().filter(|t| !BS_SPLIT_TILES.contains(t)).count(), 0);
        for (tile, pipelined) in variants {
            let what = format!("bs tile {}x{} (pipelined {pipelined:?}), k = {k}", tile.0, tile.1);
            let mut o = overrides(Some(tile), None);
            o.bs_pipelined = pipelined;
            let ((got_c, rc), (got_m, rm)) = with_overrides(&mut stream, o, |stream| run(stream, &pre));
            let pipe = if pipelined == Some(true) { "_pipe" } else { "" };
            assert_eq!(rc.config.unwrap().kernel, format!("m_grouped_fp8_gemm_nt_contiguous_bs{pipe}_bm{}_bn128", tile.0), "{what}");
            assert_eq!(rm.config.unwrap().kernel, format!("m_grouped_fp8_gemm_nt_masked_bs{pipe}_bm{}_bn128", tile.0), "{what}");
            assert_same_bits(&format!("{what} contiguous"), &got_c, &want_c);
            assert_same_bits(&format!("{what} masked"), &got_m, &want_m);
        }
        // Padding rows and masked-out rows kept the pattern.
        assert_eq!(want_c[100 * n], bf16::from_f32(1234.5));
        assert_eq!(want_m[64 * n], bf16::from_f32(1234.5));
        // A forced split count: no split-K for the grouped layouts.
        let e = forced(&mut stream, None, Some(2), |stream| m_grouped_fp8_gemm_nt_contiguous(stream, &a, &pre, &mut ctx.upload(&pattern).unwrap(), &idx))
            .unwrap_err();
        assert!(e.to_string().contains("no split-K kernel"), "{e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// The bs choice over random shapes: a registered bs kernel whose grid is its schedule's
    /// (data-parallel: its tiles; split-K: tiles · splits with 2 ≤ splits ≤ min(k/128,
    /// MAX_SPLITS) and the pieces within one round of the device; stream-K: head + g over all
    /// tiles, a valid schedule), the smallest cost-model estimate among the candidates; with
    /// less workspace the choice fits it, and a different choice is reported with the unlimited
    /// one as preferred.
    #[test]
    fn bs_choice_bounds(m in 1u32..=4096, n in 1u32..=64, k in 1u32..=128, avail_frac in 0.0f64..1.0) {
        use fp8gemm::registry::ScheduleKind;
        let (n, k) = (n * 128, k * 128);
        let arch = fp8gemm::codeobj::Arch::Gfx942;
        let desc = config::GemmDesc::dense(m, n, k, arch);
        let c = config::get_bs_config(&desc, &Overrides::NONE).unwrap();
        let row = fp8gemm::registry::by_name(c.kernel).unwrap();
        prop_assert_eq!(row.weights, WeightLayout::Preshuffled);
        let tiles = m.div_ceil(c.block_m) * n.div_ceil(c.block_n);
        let slots = row.slots_per_cu(arch).unwrap();
        match row.schedule {
            ScheduleKind::DataParallel => prop_assert_eq!((c.grid, c.splits, c.stream_k), (tiles, 1, None)),
            ScheduleKind::SplitK => {
                prop_assert!(c.splits >= 2 && c.splits <= (k / 128).min(fp8gemm::select::MAX_SPLITS), "{}", c);
                prop_assert!(tiles * c.splits <= 304 * slots, "{}", c);
                prop_assert_eq!(c.grid, tiles * c.splits);
            }
            ScheduleKind::StreamK => {
                let sk = c.stream_k.unwrap();
                prop_assert_eq!((c.splits, sk.tiles, c.grid), (1, tiles, sk.dp_tiles + sk.sk_wgs));
                prop_assert!(sk.schedule().is_some(), "{}", c);
            }
        }
        let model = fp8gemm::select::CostModel::for_arch(arch).unwrap();
        let est = |cfg: &config::GemmConfig| {
            fp8gemm::select::candidates(&desc, WeightLayout::Preshuffled)
                .into_iter()
                .find(|p| p.config(arch) == *cfg)
                .map(|p| model.estimate(&p, &desc))
                .expect("the choice is a candidate")
        };
        let chosen = est(&c);
        for p in fp8gemm::select::candidates(&desc, WeightLayout::Preshuffled) {
            prop_assert!(model.estimate(&p, &desc) >= chosen, "{} beats the choice {}", p, c);
        }
        let available = (c.workspace_floats() as f64 * avail_frac) as u64;
        let (l, lim) = config::get_bs_config_for_workspace(&desc, &Overrides::NONE, available).unwrap();
        prop_assert!(l.workspace_floats() == 0 || l.workspace_floats() <= available, "{}", l);
        match lim {
            Some(lim) => {
                prop_assert!(l != c && c.workspace_floats() > available);
                prop_assert_eq!((lim.preferred, lim.needed, lim.available), (c, c.workspace_floats(), available));
            }
            None => prop_assert_eq!(l, c),
        }
    }
}

/// The emulator's store line requests of the last launch on this thread and the bytes it wrote.
fn store_requests() -> (u64, u64) {
    let r = amdgpu_emu::hip::last_launch_report().expect("the GEMM's launch report");
    (r.counters.global_store_requests, r.counters.global_write_bytes)
}

#[test]
fn bf16_epilogues_store_whole_lines() {
    // Every kernel stores D through the LDS-staged epilogue (device dense.rs `Bf16Store`): each
    // store instruction covers whole rows of the tile, consecutive lanes on consecutive bytes.
    // With n a multiple of 64 (rows of D start on 128-byte lines) every line request of a store
    // is a whole line; a store straight from the MFMA fragments made 16 requests per line.
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let (m, n, k) = (256, 512, 512);
    let c = case(m, n, k, 5);
    for tile in bs_tiles() {
        let what = format!("bs tile {}x{}", tile.0, tile.1);
        let (got, r) = forced(&mut stream, Some(tile), Some(1), |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Preshuffled));
        assert_accurate(&what, &c, &got);
        let (requests, bytes) = store_requests();
        assert_eq!(bytes, (m * n * 2) as u64, "{what} ({})", r.config.unwrap().kernel);
        assert_eq!(requests * 128, bytes, "{what} ({}): {requests} store line requests for {bytes} bytes", r.config.unwrap().kernel);
    }
    for tile in [(64, 64), (64, 128), (128, 128)] {
        let what = format!("logical tile {}x{}", tile.0, tile.1);
        let (got, r) = forced(&mut stream, Some(tile), Some(1), |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Logical));
        assert_accurate(&what, &c, &got);
        let (requests, bytes) = store_requests();
        assert_eq!(requests * 128, bytes, "{what} ({}): {requests} store line requests for {bytes} bytes", r.config.unwrap().kernel);
    }
    // Split-K: the partial slots (1 KiB contiguous per wave and fragment: whole lines). The
    // 128-row kernel (one arrival counter per tile) stores D through the same epilogue (whole
    // lines) and per tile one arrival atomic per split and one counter re-arm (4 bytes each, one
    // request each). The kernels on the pipelined loop count arrivals per wave
    // (`splitk_finish_waves`: per tile 4 atomics per split and 4 re-arms) and store D from the
    // reducing wave through a lane permute, no LDS staging: one request per row piece of the
    // wave's 16-column fragment (32 bytes, inside one line), 16 per instruction instead of 64
    // straight from the fragments.
    for tile in BS_SPLIT_TILES.into_iter().chain([(32, 64)]) {
        let what = format!("bs split-K 3, tile {}x{}", tile.0, tile.1);
        let (got, r) = forced(&mut stream, Some(tile), Some(3), |stream| run_with_layout(&ctx, stream, &c, WeightLayout::Preshuffled));
        assert_accurate(&what, &c, &got);
        let cfg = r.config.unwrap();
        assert_eq!(cfg.splits, 3, "{what}");
        let tiles = (m as u64).div_ceil(u64::from(tile.0)) * (n as u64).div_ceil(u64::from(tile.1));
        let (requests, bytes) = store_requests();
        let (d, slots) = ((m * n * 2) as u64, 3 * tiles * u64::from(tile.0 * tile.1) * 4);
        let per_wave = tile.0 != 128;
        let words = (3 + 1) * tiles * if per_wave { 4 } else { 1 };
        let want_requests = if per_wave { d / 32 + slots / 128 + words } else { (d + slots) / 128 + words };
        assert_eq!((bytes, requests), (d + slots + 4 * words, want_requests), "{what} ({}): {requests} store line requests for {bytes} bytes", cfg.kernel);
    }
    stream.synchronize().unwrap();
}
