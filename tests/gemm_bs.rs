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

/// The bs tiles, `(block_m, block_n)` (48, 80 and 96 rows: the pipelined kernels only; 32 × 64:
/// the narrow decode tile, one B fragment per wave).
const BS_TILES: [(u32, u32); 7] = [(32, 128), (48, 128), (64, 128), (80, 128), (96, 128), (128, 128), (32, 64)];
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
    let stream = Stream::new(&ctx).unwrap();
    // m: 1 row, tails of every tile height; n: multiples of 4 that are not of 16 (a padded last
    // fragment) or of 128 (a partial last tile); k: 3, 5 and 9 blocks (odd, and 9 spans three
    // 4-block scale windows with a partial last one).
    for (m, n, k) in [(1usize, 132usize, 384usize), (33, 196, 640), (130, 260, 1152), (200, 2112, 256)] {
        let c = case(m, n, k, (m * 7 + n + k) as u64);
        let (logical, r) = forced(None, Some(1), || run_with_layout(&ctx, &stream, &c, WeightLayout::Logical));
        assert!(r.config.unwrap().kernel.starts_with("fp8_gemm_nt_bm"));
        for tile in BS_TILES {
            let what = format!("{m}x{n}x{k} bs tile {}x{}", tile.0, tile.1);
            let (got, r) = forced(Some(tile), None, || run_with_layout(&ctx, &stream, &c, WeightLayout::Preshuffled));
            let cfg = r.config.unwrap();
            assert_eq!((cfg.block_m, cfg.block_n, cfg.splits), (tile.0, tile.1, 1), "{what}");
            // The 64-row tile below 8 tiles per CU and the 48/80/96/128-row tiles: the
            // pipelined one-workgroup-per-CU kernels.
            let want = match tile {
                (48 | 64 | 80 | 96 | 128, _) | (32, 64) => format!("fp8_gemm_nt_bs_pipe_bm{}_bn{}", tile.0, tile.1),
                _ => format!("fp8_gemm_nt_bs_bm{}_bn128", tile.0),
            };
            assert_eq!(cfg.kernel, want, "{what}");
            assert_eq!(cfg.grid, (m as u32).div_ceil(tile.0) * (n as u32).div_ceil(tile.1), "{what}");
            assert!(r.workspace_limit.is_none());
            assert_accurate(&what, &c, &got);
            assert_same_bits(&what, &got, &logical);
        }
        // The 32 × 64 tile's two data-parallel kernels, pinned: one barrier per block (the
        // rule's for more than three tiles per CU) and per two blocks (the default above).
        for (blocks, want) in [(1, "fp8_gemm_nt_bs_pipe_b1_bm32_bn64"), (2, "fp8_gemm_nt_bs_pipe_bm32_bn64")] {
            let what = format!("{m}x{n}x{k} bs tile 32x64, {blocks} blocks per barrier");
            config::force_bs_narrow_barrier(Some(blocks));
            let (got, r) = forced(Some((32, 64)), None, || run_with_layout(&ctx, &stream, &c, WeightLayout::Preshuffled));
            config::force_bs_narrow_barrier(None);
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
        let stream = Stream::new(&ctx).unwrap();
        let (n, k) = (4 * n4, 128 * kb);
        let c = case(m, n, k, seed);
        let (logical, _) = forced(None, Some(1), || run_with_layout(&ctx, &stream, &c, WeightLayout::Logical));
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
    let arch = fp8gemm::codeobj::Arch::Gfx942;
    // Every unsplit choice is a bs kernel with the dense grid of its tile, or a pipelined bs
    // stream-K kernel with its tile's LDS and a grid of head + g over all of its tiles.
    for (m, n, k) in [(1216u32, 2048u32, 7168u32), (4096, 7168, 2048), (4096, 2048, 7168), (1408, 2048, 7168), (640, 2048, 7168)] {
        let cfg = get_bs_config(&GemmDesc::dense(m, n, k, arch)).unwrap();
        let tiles = m.div_ceil(cfg.block_m) * n.div_ceil(128);
        assert_eq!((cfg.block_n, cfg.splits), (128, 1), "{m}x{n}x{k}");
        if let Some(sk) = cfg.stream_k {
            let tile = fp8gemm_device::streamk::STREAMK_BS_PIPE_TILES.iter().find(|t| t.name == cfg.kernel).unwrap_or_else(|| panic!("{m}x{n}x{k}: {cfg}"));
            assert_eq!((cfg.block_m, cfg.lds_bytes, sk.tiles, cfg.grid), (tile.block_m, tile.lds_bytes(), tiles, sk.dp_tiles + sk.sk_wgs), "{m}x{n}x{k}");
            assert!(sk.schedule().is_some(), "{m}x{n}x{k}: {cfg}");
            continue;
        }
        assert!(cfg.kernel.starts_with("fp8_gemm_nt_bs_"), "{m}x{n}x{k}: {}", cfg.kernel);
        assert_eq!(cfg.grid, tiles, "{m}x{n}x{k}");
        let tile = fp8gemm_device::tile::DENSE_BS_TILES.iter().chain(&fp8gemm_device::tile::DENSE_BS_PIPE_TILES).find(|t| t.name == cfg.kernel).unwrap();
        assert_eq!((cfg.block_m, cfg.lds_bytes), (tile.block_m, tile.lds_bytes()));
    }
    // Between 0.7 and 1 128-row tiles per CU (one round of 64-row tiles at two per CU): the
    // 64-row tile, whole tiles on the pipelined stream-K kernel, modelled MI325X µs:
    // 1856×2048×7168 68.21 (the 64-row data-parallel pipelined kernel 68.05, the 128-row
    // pipelined one 70.12), 1920×2048×7168 68.21 (128 rows 70.12), 2048×2048×7168 68.24
    // (67.99; 70.03).
    for m in [1856u32, 1920, 2048] {
        let cfg = get_bs_config(&GemmDesc::dense(m, 2048, 7168, arch)).unwrap();
        assert_eq!((cfg.kernel, cfg.block_m, cfg.splits), ("fp8_gemm_nt_streamk_bs_pipe_bm64_bn128", 64, 1), "{m}x2048x7168");
        assert_eq!(cfg.stream_k.map(|s| (s.dp_tiles, s.sk_wgs)), Some((0, m.div_ceil(64) * 16)), "{m}x2048x7168");
        assert_eq!((cfg.grid, cfg.lds_bytes), (m.div_ceil(64) * 16, fp8gemm_device::tile::bs_pipe_lds_bytes(64)), "{m}x2048x7168");
    }
    // Below one 64-row tile per CU but at least one 32-row tile per CU: the 64-row tile, whole
    // tiles on the pipelined stream-K kernel (modelled 1024×2048×7168 MI325X: 39.4 µs; the
    // pipelined data-parallel kernel 40.5; the 32-row tile 50.3, its best stream-K schedule
    // 48.6).
    let c = get_bs_config(&GemmDesc::dense(1024, 2048, 7168, arch)).unwrap();
    assert_eq!((c.block_m, c.splits, c.kernel, c.grid), (64, 1, "fp8_gemm_nt_streamk_bs_pipe_bm64_bn128", 256));
    assert_eq!(c.stream_k.map(|s| (s.dp_tiles, s.sk_wgs)), Some((0, 256)));
    // The other pipelined tiles where their one round beats the 32-row tile (modelled MI325X,
    // µs, 32 rows → pipelined): 48 rows 2048×768×7168 50.3 → 36.1, 640×2048×7168 50.8 → 36.1;
    // 80 rows 1408×2048×7168 67.8 → 51.4; 96 rows 1664×2048×7168 68.2 → 59.9, 4096×768×7168
    // 68.0 → 59.4. (Several rounds: the pipelined 64-row stream-K kernel, two per CU, below.)
    for (m, n, bm) in [(2048u32, 768u32, 48u32), (640, 2048, 48)] {
        let c = get_bs_config(&GemmDesc::dense(m, n, 7168, arch)).unwrap();
        assert_eq!(
            (c.block_m, c.splits, c.kernel.to_string(), c.grid),
            (bm, 1, format!("fp8_gemm_nt_bs_pipe_bm{bm}_bn128"), m.div_ceil(bm) * n.div_ceil(128)),
            "{m}x{n}x7168"
        );
        assert_eq!(c.lds_bytes, fp8gemm_device::tile::bs_pipe_lds_bytes(bm));
    }
    // One round of 80- and 96-row tiles: a head of one wave of 64-row tiles on the pipelined
    // stream-K kernel and a tail split in aligned pieces is faster (modelled MI325X, µs):
    // 1408×2048×7168 51.3 → 49.9 (304 + 192: 48 tiles × 4), 1664×2048×7168 59.8 → 56.3
    // (304 + 224: 112 × 2), 4096×768×7168 59.4 → 56.2 (304 + 160: 80 × 2).
    for (m, n, dp, g) in [(1408u32, 2048u32, 304u32, 192u32), (1664, 2048, 304, 224), (4096, 768, 304, 160)] {
        let c = get_bs_config(&GemmDesc::dense(m, n, 7168, arch)).unwrap();
        assert_eq!((c.kernel, c.grid), ("fp8_gemm_nt_streamk_bs_pipe_bm64_bn128", dp + g), "{m}x{n}x7168");
        assert_eq!(c.stream_k.map(|s| (s.dp_tiles, s.sk_wgs)), Some((dp, g)), "{m}x{n}x7168");
    }
    // Several rounds: the pipelined 64-row stream-K kernel (two per CU) with a head of whole
    // waves and a short aligned tail (modelled MI325X, µs, pipelined 48-row data-parallel →
    // stream-K): 4096×2048×7168 146.8 → 119.9 (912 + 224: 112 tail tiles in 2 pieces),
    // 8192×2048×7168 262.8 → 227.7 (1824 + 224 whole), 14336×768×7168 174.9 → 152.0 (1216 + 256).
    for (m, n, dp, g) in [(4096u32, 2048u32, 912u32, 224u32), (8192, 2048, 1824, 224), (14336, 768, 1216, 256)] {
        let c = get_bs_config(&GemmDesc::dense(m, n, 7168, arch)).unwrap();
        assert_eq!((c.kernel, c.block_m, c.grid), ("fp8_gemm_nt_streamk_bs_pipe_bm64_bn128", 64, dp + g), "{m}x{n}x7168");
        assert_eq!(c.stream_k.map(|s| (s.tiles, s.dp_tiles, s.sk_wgs)), Some((m.div_ceil(64) * n.div_ceil(128), dp, g)), "{m}x{n}x7168");
    }
    // Short K (4 blocks): at 128×32768×512 the rules' choice, the 64-row pipelined kernel at
    // two per CU, is also the fastest candidate of `fp8gemm tune --bs` (11.48 µs modelled
    // MI300X), so the bs tuned table has no row for it (before the LDS-staged epilogue it had
    // one for the 128-row pipelined kernel, 16.4 µs against 16.09).
    let c = get_bs_config(&GemmDesc::dense(128, 32768, 512, arch)).unwrap();
    assert_eq!((c.block_m, c.kernel), (64, "fp8_gemm_nt_bs_pipe_bm64_bn128"));
    // 256×7168×2048: 448 tiles of 32 rows, 224 of 64 (modelled MI300X: 19.90 µs with the
    // 32-row tile, 18.01 with the pipelined 64-row kernel).
    let c = get_bs_config(&GemmDesc::dense(256, 7168, 2048, arch)).unwrap();
    assert_eq!((c.block_m, c.splits, c.kernel), (64, 1, "fp8_gemm_nt_bs_pipe_bm64_bn128"));
    // 64×7168×16384: the narrow split rule's 32 × 64 split 2 (34.10 µs modelled MI300X; the
    // forced sweep's best, 32 × 128 split 2 at 34.00, is within 2 %: no table row; it was
    // tabled at 34.34 against 35.20 before the split-K kernels counted arrivals per wave).
    let c = get_bs_config(&GemmDesc::dense(64, 7168, 16384, arch)).unwrap();
    assert_eq!((c.block_m, c.block_n, c.splits, c.kernel), (32, 64, 2, "fp8_gemm_nt_splitk_bs_bm32_bn64"));
    // Small M, tabled (host/tuned/gfx942_bs.csv, the forced sweep's best, modelled MI300X): the
    // narrow 32 × 64 split-K kernel, 66 tiles × 4 splits, 9.65 µs against the rules' 10.41.
    let c = get_bs_config(&GemmDesc::dense(64, 2112, 7168, arch)).unwrap();
    assert_eq!((c.block_m, c.block_n, c.splits, c.kernel), (32, 64, 4, "fp8_gemm_nt_splitk_bs_bm32_bn64"));
    assert_eq!(c.grid, 2 * 33 * 4);
    // The rules alone: the narrow split rule (`config::bs_narrow_split_rule`: 66 tiles, the
    // largest count of {2, 3, 4, 6, 8} within two workgroups per CU: 8 splits, 10.75 µs).
    let c = config::bs_table::without_table(|| get_bs_config(&GemmDesc::dense(64, 2112, 7168, arch))).unwrap();
    assert_eq!((c.block_m, c.block_n, c.splits, c.kernel), (32, 64, 8, "fp8_gemm_nt_splitk_bs_bm32_bn64"));
    assert_eq!(c.grid, 2 * 33 * 8);
    assert_eq!(config::bs_narrow_split_rule(64, 2112, 56, 304), Some(8));
    // More than 64 rows, fewer than 32 K blocks, or 32 × 64 tiles beyond one CU each split in
    // two: not the narrow split rule's.
    assert_eq!(config::bs_narrow_split_rule(128, 2112, 56, 304), None);
    assert_eq!(config::bs_narrow_split_rule(64, 2112, 16, 304), None);
    assert_eq!(config::bs_narrow_split_rule(64, 24576, 56, 304), None);
    // Fewer CUs, fewer splits (80 CUs: 66 tiles × 2).
    assert_eq!(config::bs_narrow_split_rule(64, 2112, 56, 80), Some(2));
    // Short K with 0.6–4 narrow tiles per CU: the 32 × 64 data-parallel kernel
    // (`config::bs_narrow_rule`; modelled MI300X µs, the choice before → now: 64×7168×2048
    // 9.83 → 8.70, 16×24576×1536 14.11 → 12.92, 128×7168×2048 11.38 (the 48-row pipelined
    // kernel, tabled then) → 10.91, 64×32768×512 9.18 → 8.66).
    for (m, n, k) in [(64u32, 7168u32, 2048u32), (16, 24576, 1536), (128, 7168, 2048), (64, 32768, 512)] {
        let c = get_bs_config(&GemmDesc::dense(m, n, k, arch)).unwrap();
        let want = if (m, n) == (64, 32768) { "fp8_gemm_nt_bs_pipe_b1_bm32_bn64" } else { "fp8_gemm_nt_bs_pipe_bm32_bn64" };
        assert_eq!((c.block_m, c.block_n, c.splits, c.kernel), (32, 64, 1, want), "{m}x{n}x{k}");
        assert_eq!(c.grid, m.div_ceil(32) * n.div_ceil(64), "{m}x{n}x{k}");
        assert!(config::bs_narrow_rule(m, n, k / 128, 304).is_some(), "{m}x{n}x{k}");
    }
    // The narrow data-parallel kernel: one barrier per two blocks (18 KiB of LDS, three
    // workgroups per CU) while its tiles fit one round at three per CU, else one per block (10
    // KiB, four per CU): 64×32768×512 is 1024 tiles on 304 CUs (8.66 µs modelled against 9.22).
    let narrow = |m: u32, n: u32, cus: u32| config::bs_narrow_kernel(m, n, cus, 64 * 1024).name;
    assert_eq!(narrow(64, 7168, 304), "fp8_gemm_nt_bs_pipe_bm32_bn64");
    assert_eq!(narrow(64, 29184, 304), "fp8_gemm_nt_bs_pipe_bm32_bn64");
    assert_eq!(narrow(64, 29248, 304), "fp8_gemm_nt_bs_pipe_b1_bm32_bn64");
    assert_eq!(narrow(64, 7680, 80), "fp8_gemm_nt_bs_pipe_bm32_bn64");
    assert_eq!(narrow(64, 7744, 80), "fp8_gemm_nt_bs_pipe_b1_bm32_bn64");
    let c = get_bs_config(&GemmDesc::dense(64, 32768, 512, arch)).unwrap();
    assert_eq!((c.kernel, c.lds_bytes), ("fp8_gemm_nt_bs_pipe_b1_bm32_bn64", 10 * 1024));
    let c = get_bs_config(&GemmDesc::dense(64, 7168, 2048, arch)).unwrap();
    assert_eq!((c.kernel, c.lds_bytes), ("fp8_gemm_nt_bs_pipe_bm32_bn64", 18 * 1024));
    // A forced count other than 1 or 2: a typed error.
    config::force_bs_narrow_barrier(Some(3));
    let e = forced(Some((32, 64)), None, || get_bs_config(&GemmDesc::dense(64, 7168, 2048, arch))).unwrap_err();
    config::force_bs_narrow_barrier(None);
    assert!(matches!(e, config::ConfigError::ForcedTile { .. }) && e.to_string().contains("3 blocks per barrier"), "{e}");
    // Above 2 narrow tiles per CU with more than 64 rows, or long K: not the narrow rule's
    // (128×16384×1024, 3.4 per CU: 9.86 µs on the 64-row pipelined kernel, 11.59 narrow).
    assert!(config::bs_narrow_rule(128, 16384, 8, 304).is_none());
    assert!(config::bs_narrow_rule(64, 7168, 128, 304).is_none());
    // The other DeepSeek-V3 decode points of the estimate's docs (config::get_bs_config_for_workspace):
    // (m, n, k) → (splits, kernel).
    for (m, n, k, splits) in [
        // The rules' choice, also the forced sweep's best (`fp8gemm tune --bs`: 11.81 µs
        // modelled MI300X; tabled at 8 splits before the split-K kernels ran the pipelined loop).
        (128u32, 2112u32, 7168u32, 4u32),
        (256, 2112, 7168, 4),
        (16, 256, 1024, 4),
    ] {
        let c = get_bs_config(&GemmDesc::dense(m, n, k, arch)).unwrap();
        let kernel = if splits > 1 { "fp8_gemm_nt_splitk_bs_bm32_bn128" } else { "fp8_gemm_nt_bs_bm32_bn128" };
        assert_eq!((c.block_m, c.splits, c.kernel), (32, splits, kernel), "{m}x{n}x{k}");
        assert_eq!(c.grid, m.div_ceil(32) * n.div_ceil(128) * splits, "{m}x{n}x{k}");
    }
    // Without the workspace for it (the rules alone, 128 × 2112 × 7168, no narrow split above
    // 64 rows): the largest split count that fits, reported.
    let desc = GemmDesc::dense(128, 2112, 7168, arch);
    let need = |s: u32| fp8gemm_device::tile::splitk_workspace_floats(68, s, 32, 128);
    let (c, lim) = config::bs_table::without_table(|| config::get_bs_config_for_workspace(&desc, need(3))).unwrap();
    assert_eq!(c.splits, 3);
    let lim = lim.expect("a workspace limit");
    assert_eq!((lim.preferred.splits, lim.needed, lim.available), (4, need(4), need(3)));
    // The narrow split rule's config without its workspace: the rules' choice among what fits,
    // the narrow config reported as preferred.
    let desc = GemmDesc::dense(64, 2112, 7168, arch);
    let need8 = fp8gemm_device::tile::splitk_workspace_floats(66, 8, 32, 64);
    let (c, lim) = config::bs_table::without_table(|| config::get_bs_config_for_workspace(&desc, need8 - 1)).unwrap();
    let lim = lim.expect("a workspace limit");
    assert_eq!((lim.preferred.kernel, lim.preferred.splits, lim.needed), ("fp8_gemm_nt_splitk_bs_bm32_bn64", 8, need8));
    assert!(c.workspace_floats() < need8, "{c}");
    // A tabled config whose workspace does not fit: the rules' choice among what fits, the
    // row's config reported as preferred.
    let need64 = fp8gemm_device::tile::splitk_workspace_floats(66, 4, 32, 64);
    let (c, lim) = config::get_bs_config_for_workspace(&desc, need64 - 1).unwrap();
    let lim = lim.expect("a workspace limit");
    assert_eq!((lim.preferred.kernel, lim.preferred.splits, lim.needed, lim.available), ("fp8_gemm_nt_splitk_bs_bm32_bn64", 4, need64, need64 - 1));
    assert!(c.workspace_floats() < need64 && c.kernel == "fp8_gemm_nt_splitk_bs_bm32_bn128", "{c}");
    let (c, lim) = config::get_bs_config_for_workspace(&desc, 0).unwrap();
    assert_eq!((c.splits, c.kernel), (1, "fp8_gemm_nt_bs_bm32_bn128"));
    assert!(lim.is_some());
    // Large M: no split; from 8 64-row tiles per CU the pipelined 64-row data-parallel kernel,
    // two per CU (MI300X 4096×7168×2048: 145.53 µs; the two-phase 64-row kernel 175.57, the
    // pipelined 48-row one 168.1, the pipelined 64-row stream-K kernel 3040 + 544 144.77 — not
    // estimated the better by its margin).
    let c = get_bs_config(&GemmDesc::dense(4096, 7168, 2048, arch)).unwrap();
    assert_eq!((c.block_m, c.splits, c.kernel, c.stream_k), (64, 1, "fp8_gemm_nt_bs_pipe_bm64_bn128", None));
    // B beyond the L2 (7168×16384 = 112 MiB): the 64-row tile, on its pipelined kernel (two
    // per CU: 850.4 µs; the two-phase 64-row kernel 1034.0, the 48-row one 1127.2).
    let c = get_bs_config(&GemmDesc::dense(4096, 7168, 16384, arch)).unwrap();
    assert_eq!((c.block_m, c.splits, c.kernel), (64, 1, "fp8_gemm_nt_bs_pipe_bm64_bn128"));
    // MI300X 4096×4096×7168: 285.9 µs pipelined 48-row, 228.0 pipelined 64-row stream-K
    // 1824 + 224 (whole tiles after three waves of two per CU).
    let c = get_bs_config(&GemmDesc::dense(4096, 4096, 7168, arch)).unwrap();
    assert_eq!((c.block_m, c.kernel, c.stream_k.map(|s| (s.dp_tiles, s.sk_wgs))), (64, "fp8_gemm_nt_streamk_bs_pipe_bm64_bn128", Some((1824, 224))));
    // Forcing: any bs tile, any split count up to min(k/128, MAX_SPLITS); a dense-only tile or
    // too many splits is a typed error naming what is allowed.
    let f = |t, s| forced(t, s, || get_bs_config(&GemmDesc::dense(256, 256, 256, arch)));
    assert_eq!(f(Some((64, 128)), None).unwrap().block_m, 64);
    let e = f(Some((64, 64)), None).unwrap_err();
    assert!(e.to_string().contains("64x64") && e.to_string().contains("32x128, 64x128, 128x128"), "{e}");
    let c = f(Some((128, 128)), Some(2)).unwrap();
    assert_eq!((c.kernel, c.splits, c.grid), ("fp8_gemm_nt_splitk_bs_bm128_bn128", 2, 2 * 2 * 2));
    // The 32 × 64 split-K kernel counts arrivals per wave (four counters per tile): at most
    // SPLITK_WAVES_MAX_TILES = 1024 tiles (64 × 32768: 1024; 64 × 32832: 1026).
    let narrow = |n: u32| forced(Some((32, 64)), Some(2), || get_bs_config(&GemmDesc::dense(64, n, 1024, arch)));
    assert_eq!(narrow(32768).unwrap().grid, 2 * 1024);
    let e = narrow(32832).unwrap_err();
    assert!(matches!(e, config::ConfigError::ForcedSplit { .. }) && e.to_string().contains("more than 1024 output tiles of 32×64"), "{e}");
    // So do the 32- and 64-row split-K kernels of 128 columns (32 × 131072: 1024 tiles of
    // 32 × 128; 32 × 131200: 1025), unlike the 128-row one (per workgroup, up to 4096 tiles).
    let wide = |t: (u32, u32), n: u32| forced(Some(t), Some(2), || get_bs_config(&GemmDesc::dense(32, n, 1024, arch)));
    assert_eq!(wide((32, 128), 131072).unwrap().grid, 2 * 1024);
    let e = wide((32, 128), 131200).unwrap_err();
    assert!(e.to_string().contains("more than 1024 output tiles of 32×128"), "{e}");
    assert_eq!(wide((128, 128), 131200).unwrap().kernel, "fp8_gemm_nt_splitk_bs_bm128_bn128");
    // The pipelined-only tiles: forced, that kernel unsplit; with a split count, a typed error.
    for bm in [48u32, 80, 96] {
        let c = f(Some((bm, 128)), None).unwrap();
        assert_eq!((c.kernel.to_string(), c.splits, c.grid), (format!("fp8_gemm_nt_bs_pipe_bm{bm}_bn128"), 1, 256u32.div_ceil(bm) * 2));
        let e = f(Some((bm, 128)), Some(2)).unwrap_err();
        assert!(e.to_string().contains(&format!("{bm}x128")) && e.to_string().contains("no split-K kernel"), "{e}");
    }
    let e = f(None, Some(3)).unwrap_err();
    assert!(e.to_string().contains("at most 2"), "{e}");
    assert_eq!(f(None, Some(1)).unwrap().splits, 1);
    // The narrow tile: the same split bound, and no stream-K kernel.
    let e = f(Some((32, 64)), Some(3)).unwrap_err();
    assert!(e.to_string().contains("at most 2"), "{e}");
    assert_eq!(f(Some((32, 64)), Some(2)).unwrap().kernel, "fp8_gemm_nt_splitk_bs_bm32_bn64");
    config::force_stream_k(Some((4, None)));
    let e = f(Some((32, 64)), None);
    config::force_stream_k(None);
    let e = e.unwrap_err();
    assert!(e.to_string().contains("no stream-K kernel for the pre-shuffled 32x64 tile"), "{e}");
}

#[test]
fn every_bs_split_config_matches_both_references_and_the_unsplit_bs_kernel() {
    let ctx = checked_context();
    let stream = Stream::new(&ctx).unwrap();
    for (m, n, k) in [(1usize, 132usize, 384usize), (65, 196, 640), (130, 260, 1152)] {
        let c = case(m, n, k, (m * 5 + n + k) as u64);
        let nkb = (k / 128) as u32;
        for tile in BS_DENSE_SPLIT_TILES {
            let (unsplit, r) = forced(Some(tile), Some(1), || run_with_layout(&ctx, &stream, &c, WeightLayout::Preshuffled));
            assert_eq!(r.config.unwrap().splits, 1);
            for splits in [2, 3, nkb] {
                let what = format!("{m}x{n}x{k} bs tile {}x{} split {splits}", tile.0, tile.1);
                let (got, r) = forced(Some(tile), Some(splits), || run_with_layout(&ctx, &stream, &c, WeightLayout::Preshuffled));
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
    let need = config::get_bs_config(&config::GemmDesc::dense(16, 256, 1024, ctx.arch())).unwrap().workspace_floats();
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
    let stream = Stream::new(&ctx).unwrap();
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
    let e = forced(None, Some(3), || fp8_gemm_nt(&stream, &a, &b, &mut d)).unwrap_err();
    assert!(e.to_string().contains("at most 2"), "{e}");
    // A forced dense-only tile.
    let e = forced(Some((64, 64)), None, || fp8_gemm_nt(&stream, &a, &b, &mut d)).unwrap_err();
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
    let stream = Stream::new(&ctx).unwrap();
    let c = case(129, 256, 512, 11);
    let (logical, _) = forced(None, Some(1), || run_with_layout(&ctx, &stream, &c, WeightLayout::Logical));
    let a = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let b = DeviceWeights::upload(&ctx, &c.qb).unwrap().to_preshuffled(&stream).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(c.m * c.n).unwrap();
    let r = forced(Some((128, 128)), None, || fp8_gemm_nt(&stream, &a, &b, &mut d)).unwrap();
    assert_eq!(r.config.unwrap().kernel, "fp8_gemm_nt_bs_pipe_bm128_bn128");
    assert_same_bits("to_preshuffled", &d.download(&stream).unwrap(), &logical);
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
    let stream = Stream::new(&ctx).unwrap();
    for (m, n, k) in [(1usize, 132usize, 128usize), (127, 260, 256), (129, 196, 384), (300, 388, 512), (200, 132, 640), (129, 256, 1024)] {
        let c = case(m, n, k, (3 * m + n + 7 * k) as u64);
        let (logical, _) = forced(None, Some(1), || run_with_layout(&ctx, &stream, &c, WeightLayout::Logical));
        let what = format!("{m}x{n}x{k} bs 128x128 pipelined");
        let (got, r) = forced(Some((128, 128)), None, || run_with_layout(&ctx, &stream, &c, WeightLayout::Preshuffled));
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
    let stream = Stream::new(&ctx).unwrap();
    // K = 640 (5 blocks: the 64-row tile on the pipelined loop) and K = 128 (1 block: the
    // 64-row tile on the two-phase loop, below GROUPED_BS_PIPE_MIN_BLOCKS).
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
        let run = |b: &DeviceGroupedWeights<fp8gemm::fp8::E4M3Fnuz>| {
            let mut cd = ctx.upload(&pattern).unwrap();
            let rc = m_grouped_fp8_gemm_nt_contiguous(&stream, &a, b, &mut cd, &idx).unwrap();
            let mut md = ctx.upload(&pattern).unwrap();
            let rm = m_grouped_fp8_gemm_nt_masked(&stream, &a, b, &mut md, &masked, 64).unwrap();
            ((cd.download(&stream).unwrap(), rc), (md.download(&stream).unwrap(), rm))
        };
        let ((want_c, _), (want_m, _)) = run(&DeviceGroupedWeights::upload(&ctx, &gw).unwrap());
        let pre = DeviceGroupedWeights::upload_preshuffled(&ctx, &gw).unwrap();
        for tile in BS_SPLIT_TILES {
            let what = format!("bs tile {}x{}, k = {k}", tile.0, tile.1);
            let ((got_c, rc), (got_m, rm)) = forced(Some(tile), None, || run(&pre));
            // The 64-row tile runs on the pipelined loop from GROUPED_BS_PIPE_MIN_BLOCKS K blocks on,
            // the others on the two-phase loop.
            let pipe = if tile.0 == 64 && k / 128 >= fp8gemm::config::GROUPED_BS_PIPE_MIN_BLOCKS as usize { "_pipe" } else { "" };
            assert_eq!(rc.config.unwrap().kernel, format!("m_grouped_fp8_gemm_nt_contiguous_bs{pipe}_bm{}_bn128", tile.0), "{what}");
            assert_eq!(rm.config.unwrap().kernel, format!("m_grouped_fp8_gemm_nt_masked_bs{pipe}_bm{}_bn128", tile.0), "{what}");
            assert_same_bits(&format!("{what} contiguous"), &got_c, &want_c);
            assert_same_bits(&format!("{what} masked"), &got_m, &want_m);
        }
        // Padding rows and masked-out rows kept the pattern.
        assert_eq!(want_c[100 * n], bf16::from_f32(1234.5));
        assert_eq!(want_m[64 * n], bf16::from_f32(1234.5));
        // A forced split count: no split-K for the grouped layouts.
        let e = forced(None, Some(2), || m_grouped_fp8_gemm_nt_contiguous(&stream, &a, &pre, &mut ctx.upload(&pattern).unwrap(), &idx)).unwrap_err();
        assert!(e.to_string().contains("no split-K kernel"), "{e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// The bs choice over random small-M shapes: the tile of `config::bs_tile_rule` (the
    /// 32-row tile wherever fewer tiles than CUs could split), a split count within
    /// `1 ..= min(k/128, MAX_SPLITS)`, split below one tile per CU or, above, only while all
    /// `tiles · splits` workgroups fit in one wave (3 per CU); stream-K only above one tile per
    /// CU (a two-loop bs stream-K tile with a head of at least one tile, or a pipelined one with
    /// an aligned tail); the split-K twin exactly when
    /// split, grid = tiles · splits (stream-K: head + g); with less workspace the choice fits it
    /// and a different choice is reported with the unlimited one as preferred.
    #[test]
    fn bs_split_rule_bounds(m in 1u32..=512, n in 1u32..=64, k in 1u32..=128, avail_frac in 0.0f64..1.0) {
        let (n, k) = (n * 128, k * 128);
        let arch = fp8gemm::codeobj::Arch::Gfx942;
        let desc = config::GemmDesc::dense(m, n, k, arch);
        let c = config::get_bs_config(&desc).unwrap();
        if c.block_n == 64 {
            // The narrow 32 × 64 tile: unsplit by `config::bs_narrow_rule`, split only from a
            // tuned row (host/tuned/gfx942_bs.csv).
            let t64 = m.div_ceil(32) * n.div_ceil(64);
            prop_assert_eq!(c.block_m, 32);
            if c.splits == 1 {
                prop_assert!(config::bs_narrow_rule(m, n, k / 128, 304).is_some(), "{}", c);
                prop_assert_eq!((c.kernel, c.grid, c.stream_k), ("fp8_gemm_nt_bs_pipe_bm32_bn64", t64, None));
            } else {
                // The narrow split rule's count (or a tuned row's), within two per CU.
                let rule = config::bs_narrow_split_rule(m, n, k / 128, 304);
                prop_assert!(rule == Some(c.splits) || t64 * c.splits <= 608, "{} (rule {:?})", c, rule);
                prop_assert_eq!((c.kernel, c.grid), ("fp8_gemm_nt_splitk_bs_bm32_bn64", t64 * c.splits));
            }
            let available = (c.workspace_floats() as f64 * avail_frac) as u64;
            let (l, lim) = config::get_bs_config_for_workspace(&desc, available).unwrap();
            prop_assert!(l.workspace_floats() == 0 || l.workspace_floats() <= available, "{}", l);
            match lim {
                Some(lim) => prop_assert_eq!((lim.preferred, lim.needed, lim.available), (c, c.workspace_floats(), available)),
                None => prop_assert_eq!(l, c),
            }
            return Ok(());
        }
        prop_assert!(config::bs_narrow_rule(m, n, k / 128, 304).is_none(), "{}", c);
        prop_assert!(config::bs_narrow_split_rule(m, n, k / 128, 304).is_none(), "{}", c);
        let tiles = m.div_ceil(c.block_m) * n.div_ceil(128);
        let (tiles32, tiles64) = (u64::from(m.div_ceil(32) * n.div_ceil(128)), u64::from(m.div_ceil(64) * n.div_ceil(128)));
        let i = config::bs_tile_rule(tiles32, tiles64, 304);
        prop_assert!(c.splits >= 1 && c.splits <= (k / 128).min(config::MAX_SPLITS), "{} splits", c.splits);
        if let Some(sk) = c.stream_k {
            prop_assert!(tiles32 >= 304, "stream-K below one tile per CU: {}", c);
            prop_assert_eq!((c.splits, sk.tiles, c.grid), (1, tiles, sk.dp_tiles + sk.sk_wgs));
            prop_assert!(sk.schedule().is_some(), "{}", c);
            if c.kernel.contains("_pipe_") {
                // The pipelined stream-K kernels (48 / 64 rows): aligned tails (g = T·c,
                // c ∈ {1, 2, 4}) within one wave of two per CU, heads of whole waves or none.
                prop_assert!(c.block_m == 48 || c.block_m == 64);
                let want = format!("fp8_gemm_nt_streamk_bs_pipe_bm{}_bn128", c.block_m);
                prop_assert_eq!(c.kernel, want.as_str());
                let t = tiles - sk.dp_tiles;
                prop_assert!(sk.sk_wgs % t == 0 && [1, 2, 4].contains(&(sk.sk_wgs / t)) && sk.sk_wgs <= 608, "{}", c);
                prop_assert!(sk.dp_tiles % 304 == 0, "{}", c);
            } else {
                prop_assert!(c.block_m == 32 || c.block_m == 64);
                let want = format!("fp8_gemm_nt_streamk_bs_bm{}_bn128", c.block_m);
                prop_assert_eq!(c.kernel, want.as_str());
                prop_assert!(sk.dp_tiles > 0, "{}", c);
            }
        } else {
            // Unsplit from one tile per CU on: the pipelined tile where bs_pipe_rule takes one,
            // else the rule's tile; split-K only on the 32-row tile.
            let pipe = if c.splits == 1 && [tiles32, tiles64][i] >= 304 { config::bs_pipe_rule(m, n, k / 128, 304, i) } else { None };
            let bm = match pipe {
                _ if c.splits > 1 => 32,
                Some(p) => fp8gemm_device::tile::DENSE_BS_PIPE_TILES[p].block_m,
                None => [32, 64][i],
            };
            prop_assert_eq!(c.block_m, bm);
            prop_assert!(c.splits == 1 || tiles < 304 || tiles * c.splits <= 3 * 304, "{} tiles split {}", tiles, c.splits);
            let want = match pipe {
                _ if c.splits > 1 => format!("fp8_gemm_nt_splitk_bs_bm{bm}_bn128"),
                Some(p) => fp8gemm_device::tile::DENSE_BS_PIPE_TILES[p].name.to_string(),
                // The rule's tile's data-parallel kernel (the 64-row tile: pipelined).
                None => config::bs_kernel(i).name.to_string(),
            };
            prop_assert_eq!(c.kernel, want.as_str());
            prop_assert_eq!(c.grid, tiles * c.splits);
        }
        let available = (c.workspace_floats() as f64 * avail_frac) as u64;
        let (l, lim) = config::get_bs_config_for_workspace(&desc, available).unwrap();
        prop_assert!(l.splits <= c.splits || c.stream_k.is_some());
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
    let stream = Stream::new(&ctx).unwrap();
    let (m, n, k) = (256, 512, 512);
    let c = case(m, n, k, 5);
    for tile in BS_TILES {
        let what = format!("bs tile {}x{}", tile.0, tile.1);
        let (got, r) = forced(Some(tile), Some(1), || run_with_layout(&ctx, &stream, &c, WeightLayout::Preshuffled));
        assert_accurate(&what, &c, &got);
        let (requests, bytes) = store_requests();
        assert_eq!(bytes, (m * n * 2) as u64, "{what} ({})", r.config.unwrap().kernel);
        assert_eq!(requests * 128, bytes, "{what} ({}): {requests} store line requests for {bytes} bytes", r.config.unwrap().kernel);
    }
    for tile in [(64, 64), (64, 128), (128, 128)] {
        let what = format!("logical tile {}x{}", tile.0, tile.1);
        let (got, r) = forced(Some(tile), Some(1), || run_with_layout(&ctx, &stream, &c, WeightLayout::Logical));
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
        let (got, r) = forced(Some(tile), Some(3), || run_with_layout(&ctx, &stream, &c, WeightLayout::Preshuffled));
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
