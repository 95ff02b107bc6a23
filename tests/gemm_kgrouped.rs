//! `fp8gemm::k_grouped_fp8_gemm_tn_contiguous` end to end — public API → rocm-rs → HIP C ABI →
//! gfx942 emulator with every check on (memcheck, MFMA hazards, LDS races, late arrival,
//! uninitialized LDS) — against the CPU references: calc_diff, a per-element error bound derived
//! from f32 accumulation, C accumulation (in place and from a separate C), empty and uneven
//! groups, M/N tails; and every class of rejected input.

mod common;
use common::*;
use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz};
use fp8gemm::kgrouped::{KGroupedMnMajor, kgrouped_config, reference_f32, reference_fp8, upload_ks};
use fp8gemm::reference::calc_diff;
use fp8gemm::{Context, DeviceKGroupedOperand, Error, k_grouped_fp8_gemm_tn_contiguous};
use proptest::prelude::*;
use rand::{SeedableRng, rngs::StdRng};

/// One problem: unquantized and quantized operands and a C.
struct Case {
    m: usize,
    n: usize,
    ks: Vec<usize>,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    qa: KGroupedMnMajor<E4M3Fnuz>,
    qb: KGroupedMnMajor<E4M3Fnuz>,
}

fn case(m: usize, n: usize, ks: &[usize], c_scale: f32, seed: u64) -> Case {
    let mut rng = StdRng::seed_from_u64(seed);
    let total: usize = ks.iter().sum();
    let a = randn_bf16(total * m, &mut rng);
    let b = randn_bf16(total * n, &mut rng);
    let c: Vec<f32> = randn_bf16(ks.len() * m * n, &mut rng).iter().map(|v| v * c_scale).collect();
    let qa = KGroupedMnMajor::quantize(&a, m, ks).unwrap();
    let qb = KGroupedMnMajor::quantize(&b, n, ks).unwrap();
    Case { m, n, ks: ks.to_vec(), a, b, c, qa, qb }
}

/// `|C| + Σ |sfa·a|·|sfb·b|` per element: the magnitude every f32 rounding error scales with.
fn abs_sum(c: &Case) -> Vec<f32> {
    let abs = |q: &KGroupedMnMajor<E4M3Fnuz>| {
        let mut q = q.clone();
        for v in &mut q.data {
            // Clearing the sign bit of a non-NaN E4M3FNUZ value gives its magnitude.
            *v = E4M3Fnuz::from_bits(v.to_bits() & 0x7f);
        }
        q
    };
    let mut s: Vec<f32> = c.c.iter().map(|v| v.abs()).collect();
    reference_fp8(&abs(&c.qa), &abs(&c.qb), &mut s).unwrap();
    s
}

/// Checks `got` against the dequantized reference `want` element by element: the kernel sums
/// ≤ 128 exact products per block in f32, promotes each block with one f32 FMA and adds C once;
/// the reference rounds an f64 sum once. So `|got − want| ≤ (128 + blocks + 3)·2⁻²⁴·S` with `S`
/// from [`abs_sum`].
fn assert_elementwise(c: &Case, got: &[f32], want: &[f32], what: &str) {
    let s = abs_sum(c);
    let (m, n) = (c.m, c.n);
    for g in 0..c.ks.len() {
        let gamma = (128 + c.ks[g] / 128 + 3) as f32 * f32::EPSILON / 2.0;
        for i in 0..m * n {
            let e = g * m * n + i;
            let bound = gamma * s[e];
            assert!((got[e] - want[e]).abs() <= bound, "{what}: D[{g}][{}][{}] = {} vs reference {} (bound {bound:e})", i / n, i % n, got[e], want[e]);
        }
    }
}

/// Runs the GEMM with C from a separate buffer and then in place; returns the kernel used.
fn run_case(ctx: &Context, c: &Case, what: &str) -> Option<&'static str> {
    let da = DeviceKGroupedOperand::upload(ctx, &c.qa).unwrap();
    let db = DeviceKGroupedOperand::upload(ctx, &c.qb).unwrap();
    let (dks, total) = upload_ks(ctx, &c.ks).unwrap();
    let mut want = c.c.clone();
    reference_fp8(&c.qa, &c.qb, &mut want).unwrap();
    let mut want_f = c.c.clone();
    reference_f32(&c.a, &c.b, c.m, c.n, &c.ks, &mut want_f).unwrap();

    // Separate C: D is pre-filled with garbage that must be overwritten everywhere, C unchanged.
    let dc = ctx.upload(&c.c).unwrap();
    let mut dd = ctx.upload(&vec![f32::MAX; c.c.len()]).unwrap();
    let run = k_grouped_fp8_gemm_tn_contiguous(&stream(ctx), &da, &db, &mut dd, &dks, total, Some(dc.as_slice())).unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = dd.download(&stream(ctx)).unwrap();
    assert_eq!(dc.download(&stream(ctx)).unwrap(), c.c, "{what}: C must not be written");
    assert_elementwise(c, &got, &want, what);
    let dq = calc_diff(&got, &want).unwrap();
    let df = calc_diff(&got, &want_f).unwrap();
    assert!(dq < 1e-5, "{what}: calc_diff vs dequantized {dq:e}");
    assert!(df < 1e-3, "{what}: calc_diff vs unquantized {df:e}");
    // Empty groups: D[g] = C[g] bit for bit.
    let mn = c.m * c.n;
    for (g, &k) in c.ks.iter().enumerate() {
        if k == 0 {
            let bad = (0..mn).find(|&i| got[g * mn + i].to_bits() != c.c[g * mn + i].to_bits());
            assert!(bad.is_none(), "{what}: empty group {g}: D differs from C at {bad:?}");
        }
    }

    // In place (C is D): same result bit for bit.
    let mut dd = ctx.upload(&c.c).unwrap();
    k_grouped_fp8_gemm_tn_contiguous(&stream(ctx), &da, &db, &mut dd, &dks, total, None).unwrap();
    let got_in_place = dd.download(&stream(ctx)).unwrap();
    let same = got.iter().zip(&got_in_place).all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(same, "{what}: in-place result differs from the separate-C result");
    run.config.map(|cfg| cfg.kernel)
}

fn stream(ctx: &Context) -> fp8gemm::Stream {
    fp8gemm::Stream::new(ctx).unwrap()
}

#[test]
fn one_group_square() {
    let ctx = checked_context();
    let k = run_case(&ctx, &case(128, 128, &[512], 32.0, 1), "G=1 128x128");
    assert_eq!(k, Some("k_grouped_fp8_gemm_tn_contiguous_bm64_bn64"));
}

#[test]
fn four_uneven_groups_with_an_empty_one_and_tails() {
    let ctx = checked_context();
    // 192 = 1.5 tiles of 128 (and 3 of 64): an M tail for the 128-wide tile.
    run_case(&ctx, &case(192, 2048, &[128, 0, 384, 256], 32.0, 2), "G=4 192x2048");
    run_case(&ctx, &case(2048, 192, &[256, 128, 0, 128], 32.0, 3), "G=4 2048x192");
}

#[test]
fn sixteen_groups_mixed_sizes() {
    let ctx = checked_context();
    let ks = [128, 0, 256, 128, 0, 0, 384, 128, 128, 256, 0, 128, 512, 128, 0, 128];
    run_case(&ctx, &case(128, 192, &ks, 32.0, 4), "G=16 128x192");
}

#[test]
fn large_m_and_n_in_the_grid() {
    let ctx = checked_context();
    // 7168 columns of A with 128 of B, and 2048 × 2048 (the 128 × 128 kernel).
    run_case(&ctx, &case(7168, 128, &[128, 256], 32.0, 5), "G=2 7168x128");
    let k = run_case(&ctx, &case(2048, 2048, &[128, 0, 256, 128], 32.0, 6), "G=4 2048x2048");
    assert_eq!(k, Some("k_grouped_fp8_gemm_tn_contiguous_bm128_bn128"));
}

#[test]
fn non_tile_multiple_m_and_n_tails() {
    let ctx = checked_context();
    // m, n multiples of 8 only: partial 8-column pieces of the last tile, both kernels.
    run_case(&ctx, &case(72, 200, &[256, 128], 32.0, 7), "G=2 72x200");
    run_case(&ctx, &case(1032, 1288, &[128], 1.0, 8), "G=1 1032x1288");
    // Tail rows and columns over several 128-token blocks: their scale offsets must be parked
    // (the buffer range check ignores soffset; found by memcheck through the proptest below).
    run_case(&ctx, &case(8, 88, &[384], 1.0, 18), "G=1 8x88");
    run_case(&ctx, &case(136, 8, &[256, 384], 1.0, 19), "G=2 136x8");
}

#[test]
#[ignore = "large: 7168 × 7168, 2048 × 7168 with 16 groups, 7168 × 2048 (about 5 minutes on a loaded 2-core machine)"]
fn big_grid_combinations() {
    let ctx = checked_context();
    run_case(&ctx, &case(7168, 7168, &[128], 32.0, 9), "G=1 7168x7168");
    run_case(&ctx, &case(2048, 7168, &[128, 0, 256, 128, 0, 128, 128, 0, 128, 0, 0, 128, 256, 0, 128, 0], 32.0, 10), "G=16 2048x7168");
    run_case(&ctx, &case(7168, 2048, &[1024, 512, 0, 768], 32.0, 11), "G=4 7168x2048");
}

/// Running twice in place from C = 0 gives exactly twice the product (the kernel is
/// deterministic and 2·x is exact in f32), element by element.
#[test]
fn accumulating_twice_doubles_exactly() {
    let ctx = checked_context();
    for (m, n, ks) in [(128usize, 128usize, vec![256usize]), (192, 320, vec![128, 0, 256]), (2048, 256, vec![384, 128])] {
        let c = case(m, n, &ks, 0.0, 12);
        let da = DeviceKGroupedOperand::upload(&ctx, &c.qa).unwrap();
        let db = DeviceKGroupedOperand::upload(&ctx, &c.qb).unwrap();
        let (dks, total) = upload_ks(&ctx, &ks).unwrap();
        let mut dd = ctx.alloc_zeroed::<f32>(ks.len() * m * n).unwrap();
        k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &da, &db, &mut dd, &dks, total, None).unwrap();
        let once = dd.download(&stream(&ctx)).unwrap();
        k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &da, &db, &mut dd, &dks, total, None).unwrap();
        let twice = dd.download(&stream(&ctx)).unwrap();
        let mut want = vec![0f32; once.len()];
        reference_fp8(&c.qa, &c.qb, &mut want).unwrap();
        assert_elementwise(&c, &once, &want, "first run");
        assert!(once.iter().any(|&v| v != 0.0));
        for (i, (&x, &y)) in once.iter().zip(&twice).enumerate() {
            assert_eq!(y.to_bits(), (2.0 * x).to_bits(), "{m}x{n}: element {i}: {y} after two runs, {x} after one");
        }
    }
}

/// The sizes live on the device and are never trusted: garbage sizes (negative, past the total,
/// not multiples of 128) must not make the kernel leave its tensors (memcheck is on).
#[test]
fn garbage_sizes_on_the_device_stay_in_bounds() {
    let ctx = checked_context();
    let c = case(64, 64, &[256, 128], 1.0, 13);
    let da = DeviceKGroupedOperand::upload(&ctx, &c.qa).unwrap();
    let db = DeviceKGroupedOperand::upload(&ctx, &c.qb).unwrap();
    for bad in [[-128, 100000], [i32::MAX, i32::MAX], [200, 72], [384, 128], [-1, -1]] {
        let dks = ctx.upload(&bad).unwrap();
        let mut dd = ctx.upload(&c.c).unwrap();
        k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &da, &db, &mut dd, &dks, 384, None).unwrap_or_else(|e| panic!("{bad:?}: {e}"));
        let d = dd.download(&stream(&ctx)).unwrap();
        assert!(d.iter().all(|v| v.is_finite()), "{bad:?}");
    }
    // [-1, -1]: both groups empty → D = C exactly.
    let dks = ctx.upload(&[-1i32, -1]).unwrap();
    let mut dd = ctx.upload(&c.c).unwrap();
    k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &da, &db, &mut dd, &dks, 384, None).unwrap();
    assert_eq!(dd.download(&stream(&ctx)).unwrap(), c.c);
}

#[test]
fn rejected_inputs_are_typed_errors() {
    let ctx = checked_context();
    let c = case(64, 72, &[128, 256], 1.0, 14);
    let da = DeviceKGroupedOperand::upload(&ctx, &c.qa).unwrap();
    let db = DeviceKGroupedOperand::upload(&ctx, &c.qb).unwrap();
    let (dks, total) = upload_ks(&ctx, &c.ks).unwrap();
    assert_eq!(total, 384);
    let mut dd = ctx.alloc_zeroed::<f32>(2 * 64 * 72).unwrap();
    let shape_arg = |e: Error| match e {
        Error::Shape { arg, .. } => arg,
        other => panic!("expected a Shape error, got {other}"),
    };
    // Group sizes that are not multiples of 128, on the host.
    let e = upload_ks(&ctx, &[128, 100]).unwrap_err();
    assert!(e.to_string().contains("ks[1] = 100"), "{e}");
    assert!(KGroupedMnMajor::<E4M3Fnuz>::quantize(&[0f32; 8 * 130], 8, &[130]).is_err());
    // Host total that does not match the operands.
    let e = k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &da, &db, &mut dd, &dks, 256, None).unwrap_err();
    assert!(e.to_string().contains("total_k") && e.to_string().contains("384"), "{e}");
    // Operands of different totals.
    let other = case(64, 72, &[128], 1.0, 15);
    let db2 = DeviceKGroupedOperand::upload(&ctx, &other.qb).unwrap();
    assert_eq!(shape_arg(k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &da, &db2, &mut dd, &dks, 384, None).unwrap_err()), "total_k");
    // D and C sizes.
    let mut small = ctx.alloc_zeroed::<f32>(64 * 72).unwrap();
    assert_eq!(shape_arg(k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &da, &db, &mut small, &dks, 384, None).unwrap_err()), "d");
    let cbad = ctx.alloc_zeroed::<f32>(3 * 64 * 72).unwrap();
    assert_eq!(shape_arg(k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &da, &db, &mut dd, &dks, 384, Some(cbad.as_slice())).unwrap_err()), "c");
    // ks of another length than D's groups.
    let (dks3, _) = upload_ks(&ctx, &[128, 256, 0]).unwrap();
    assert_eq!(shape_arg(k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &da, &db, &mut dd, &dks3, 384, None).unwrap_err()), "d");
    // m and n must be multiples of 8.
    let odd = case(12, 72, &[128], 1.0, 16);
    let da12 = DeviceKGroupedOperand::upload(&ctx, &odd.qa).unwrap();
    let db12 = DeviceKGroupedOperand::upload(&ctx, &odd.qb).unwrap();
    let (dks1, t1) = upload_ks(&ctx, &[128]).unwrap();
    let mut d12 = ctx.alloc_zeroed::<f32>(12 * 72).unwrap();
    let e = k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &da12, &db12, &mut d12, &dks1, t1, None).unwrap_err();
    assert!(matches!(&e, Error::Shape { arg: "m", .. }) && e.to_string().contains("multiple of 8"), "{e}");
    let e = k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &db12, &da12, &mut d12, &dks1, t1, None).unwrap_err();
    assert!(matches!(e, Error::Shape { arg: "n", .. }), "{e}");
    // The wrong FP8 format for the device.
    let fa = KGroupedMnMajor::<E4M3Fn>::quantize(&c.a, 64, &c.ks).unwrap();
    let fb = KGroupedMnMajor::<E4M3Fn>::quantize(&c.b, 72, &c.ks).unwrap();
    let (fa, fb) = (DeviceKGroupedOperand::upload(&ctx, &fa).unwrap(), DeviceKGroupedOperand::upload(&ctx, &fb).unwrap());
    let e = k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &fa, &fb, &mut dd, &dks, 384, None).unwrap_err();
    assert!(matches!(e, Error::Format { arg: "a", expected: "e4m3fnuz", .. }), "{e}");
    // Buffers of another context.
    let ctx2 = Context::new().unwrap();
    let mut foreign = ctx2.alloc_zeroed::<f32>(2 * 64 * 72).unwrap();
    let e = k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &da, &db, &mut foreign, &dks, 384, None).unwrap_err();
    assert!(matches!(e, Error::ForeignBuffer { arg: "d" }), "{e}");
    // Host operands whose lengths disagree with their shape.
    let mut broken = c.qa.clone();
    broken.scales.pop();
    assert!(DeviceKGroupedOperand::upload(&ctx, &broken).is_err());
    // No groups: nothing launched.
    let (dks0, t0) = upload_ks(&ctx, &[]).unwrap();
    let e0 = case(64, 72, &[], 1.0, 17);
    let (a0, b0) = (DeviceKGroupedOperand::upload(&ctx, &e0.qa).unwrap(), DeviceKGroupedOperand::upload(&ctx, &e0.qb).unwrap());
    let mut d0 = ctx.alloc_zeroed::<f32>(0).unwrap();
    assert!(k_grouped_fp8_gemm_tn_contiguous(&stream(&ctx), &a0, &b0, &mut d0, &dks0, t0, None).unwrap().config.is_none());
}

#[test]
fn configs_cover_the_grid() {
    for arch in fp8gemm::codeobj::Arch::ALL {
        for (m, n, g) in [(128u32, 128u32, 1u32), (192, 2048, 4), (7168, 4096, 8), (2048, 7168, 4), (72, 200, 16)] {
            let c = kgrouped_config(m, n, g, u64::from(g) * 4096, arch, &fp8gemm::Overrides::NONE).unwrap();
            assert_eq!(c.grid, g * m.div_ceil(c.block_m) * n.div_ceil(c.block_n), "{c}");
            assert_eq!(c.lds_bytes, 2 * (c.block_m + c.block_n) * 64);
            assert!(c.kernel.starts_with("k_grouped_fp8_gemm_tn_contiguous_"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    /// Random shapes (m, n multiples of 8), group counts and sizes (multiples of 128, empty
    /// allowed), C scales: element-wise bound, calc_diff, in-place agreement.
    #[test]
    fn random_problems_match_the_reference(
        m8 in 1usize..40,
        n8 in 1usize..40,
        ks in prop::collection::vec(0usize..4, 1..6),
        c_scale in prop::sample::select(vec![0.0f32, 1.0, 32.0]),
        seed in any::<u64>(),
    ) {
        let ctx = checked_context();
        let ks: Vec<usize> = ks.iter().map(|k| k * 128).collect();
        let c = case(8 * m8, 8 * n8, &ks, c_scale, seed);
        run_case(&ctx, &c, &format!("m {} n {} ks {ks:?}", 8 * m8, 8 * n8));
    }
}

/// Both code objects hold both K-grouped kernels with no spills, no scratch, launch bound 256
/// and registers for at least 2 waves per SIMD.
#[test]
fn kernels_meet_the_resource_goals() {
    for arch in fp8gemm::codeobj::Arch::ALL {
        let rows = fp8gemm::codeobj::inspect(arch.code_object()).unwrap();
        for tile in fp8gemm_device::kgrouped::KGROUPED_TILES {
            let r = rows.iter().find(|r| r.name == tile.name).unwrap_or_else(|| panic!("{arch}: {} missing", tile.name));
            assert_eq!((r.vgpr_spills, r.sgpr_spills, r.scratch), (0, 0, 0), "{arch} {}", tile.name);
            assert_eq!(r.max_workgroup_size, 256, "{arch} {}", tile.name);
            assert_eq!(r.agpr, 0, "{arch} {}", tile.name);
            assert!(r.occupancy >= 2, "{arch} {}: {} waves/SIMD", tile.name, r.occupancy);
        }
    }
}

/// The transposing copy and the fragment reads are free of LDS bank conflicts in the emulator's
/// bank model (the same rule the host test `kgrouped_lds_is_bank_conflict_free` checks on paper),
/// for both kernels, and the MFMA count is exactly what the tiles need.
#[cfg(feature = "emu")]
#[test]
fn no_lds_bank_conflicts_and_exact_mfma_count() {
    let ctx = checked_context();
    for (m, n, ks, kernel) in [
        (128usize, 128usize, vec![256usize, 128], "k_grouped_fp8_gemm_tn_contiguous_bm64_bn64"),
        (1024, 1024, vec![256, 0, 128, 384], "k_grouped_fp8_gemm_tn_contiguous_bm128_bn128"),
    ] {
        let c = case(m, n, &ks, 1.0, 20);
        let da = DeviceKGroupedOperand::upload(&ctx, &c.qa).unwrap();
        let db = DeviceKGroupedOperand::upload(&ctx, &c.qb).unwrap();
        let (dks, total) = upload_ks(&ctx, &ks).unwrap();
        let mut dd = ctx.upload(&c.c).unwrap();
        // Each kernel on purpose (the tile choice itself is the timing model's, tested elsewhere).
        let tile = if kernel.ends_with("bm64_bn64") { (64, 64) } else { (128, 128) };
        let mut st = stream(&ctx);
        st.set_overrides(fp8gemm::Overrides::NONE.with_tile(tile.0, tile.1));
        let run = k_grouped_fp8_gemm_tn_contiguous(&st, &da, &db, &mut dd, &dks, total, None);
        // The queued launch runs (and leaves its report) when the stream is synchronized.
        st.synchronize().unwrap();
        assert_eq!(run.unwrap().config.unwrap().kernel, kernel);
        let r = fp8gemm::runtime::last_emulator_report().expect("an emulator report");
        assert_eq!(r.kernel, kernel);
        assert_eq!(r.counters.lds_conflict_cycles, 0, "{kernel}: {r}");
        // One 16x16x32 MFMA per 16×16 output fragment per 32 tokens, over every group.
        let mfma = (m / 16) * (n / 16) * total / 32;
        assert_eq!(r.by_class[amdgpu_emu::exec::Class::Mfma as usize], mfma as u64, "{kernel}");
    }
}
