//! `fp8gemm::{fp8_gemm_nn, fp8_gemm_tn, fp8_gemm_tt}` end to end on the emulator (every check on):
//! DeepGEMM's accuracy goals against both CPU references, element bounds, bit-identity with the
//! NT kernel of the same tile (the layouts differ only in how a block reaches LDS), strided
//! M-major A, and every class of rejected input.

mod common;
use common::*;
use fp8gemm::dense_layouts::reference as layout_ref;
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::layout::WeightLayout;
use fp8gemm::{
    Context, DeviceActivations, DeviceMnMajorActivations, DeviceMnMajorWeights, DeviceWeights, Error, MnMajorActivations, MnMajorActivationsView,
    MnMajorWeights, MnMajorWeightsView, Stream, fp8_gemm_nn, fp8_gemm_tn, fp8_gemm_tt,
};
use half::bf16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    Nn,
    Tn,
    Tt,
}

const LAYOUTS: [Layout; 3] = [Layout::Nn, Layout::Tn, Layout::Tt];

/// Runs `layout` on the case (operands uploaded in its majors, D pre-filled with a pattern so an
/// unwritten element cannot pass) and returns D; checks that the layout's kernel ran.
fn run_layout(ctx: &Context, s: &Stream, c: &Case, layout: Layout) -> Vec<bf16> {
    let ta = MnMajorActivations::from_k_major(&c.qa).unwrap();
    let tb = MnMajorWeights::from_k_major(&c.qb).unwrap();
    let mut dd = ctx.upload(&vec![bf16::from_f32(1234.5); c.m * c.n]).unwrap();
    let what = format!("{layout:?} {}x{}x{}", c.m, c.n, c.k);
    let r = match layout {
        Layout::Nn => fp8_gemm_nn(s, &DeviceActivations::upload(ctx, &c.qa).unwrap(), &DeviceMnMajorWeights::upload(ctx, &tb).unwrap(), &mut dd),
        Layout::Tn => fp8_gemm_tn(s, &DeviceMnMajorActivations::upload(ctx, &ta).unwrap(), &DeviceMnMajorWeights::upload(ctx, &tb).unwrap(), &mut dd),
        Layout::Tt => fp8_gemm_tt(s, &DeviceMnMajorActivations::upload(ctx, &ta).unwrap(), &DeviceWeights::upload(ctx, &c.qb).unwrap(), &mut dd),
    }
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    let name = format!("fp8_gemm_{}_bm64_bn128", format!("{layout:?}").to_lowercase());
    assert_eq!(r.config.expect("a launch").kernel, name, "{what}");
    dd.download(s).unwrap()
}

/// The layout's own CPU reference (on the MN-major host operands) equals the NT reference of the
/// same quantized values.
fn layout_reference(c: &Case, layout: Layout) -> Vec<bf16> {
    let ta = MnMajorActivations::from_k_major(&c.qa).unwrap();
    let tb = MnMajorWeights::from_k_major(&c.qb).unwrap();
    let mut w = vec![bf16::ZERO; c.m * c.n];
    match layout {
        Layout::Nn => layout_ref::fp8_gemm_nn(&c.qa, &tb, &mut w),
        Layout::Tn => layout_ref::fp8_gemm_tn(&ta, &tb, &mut w),
        Layout::Tt => layout_ref::fp8_gemm_tt(&ta, &c.qb, &mut w),
    }
    .unwrap();
    w
}

/// Shapes for every layout: M and N multiples of 8 (the MN-major extents), several of them not
/// multiples of 16, tails in both tile directions, 1 to 8 K blocks.
const SHAPES: [(usize, usize, usize); 6] = [(8, 8, 128), (72, 136, 384), (136, 264, 256), (200, 392, 512), (64, 128, 1024), (24, 520, 128)];

#[test]
fn every_layout_meets_both_references_and_matches_the_nt_kernel_bit_for_bit() {
    let ctx = checked_context();
    let mut s = Stream::new(&ctx).unwrap();
    for (i, &(m, n, k)) in SHAPES.iter().enumerate() {
        let c = case(m, n, k, 1000 + i as u64);
        // The NT kernel of the same tile (64 × 128, no split): the same LDS contents, the same
        // arithmetic in the same order.
        let (nt, run) = forced(&mut s, Some((64, 128)), Some(1), |s| run_on(&ctx, s, &c));
        assert_eq!(run.config.unwrap().kernel, "fp8_gemm_nt_bm64_bn128");
        let want = c.want_dequantized();
        for layout in LAYOUTS {
            let what = format!("{layout:?} {m}x{n}x{k}");
            assert_eq!(layout_reference(&c, layout), want, "{what}: layout reference vs NT reference");
            let got = run_layout(&ctx, &s, &c, layout);
            assert_accurate(&what, &c, &got);
            let first_diff = got.iter().zip(&nt).position(|(g, w)| g.to_bits() != w.to_bits());
            assert_eq!(first_diff, None, "{what}: differs from fp8_gemm_nt_bm64_bn128");
        }
    }
}

/// Shapes only some layouts take: a K-major A of any `m` (NN), a K-major B with `n % 8 == 4`
/// (TT).
#[test]
fn k_major_sides_keep_nt_shape_rules() {
    let ctx = checked_context();
    let s = Stream::new(&ctx).unwrap();
    for (layout, (m, n, k)) in
        [(Layout::Nn, (1, 8, 128)), (Layout::Nn, (37, 200, 256)), (Layout::Nn, (130, 136, 384)), (Layout::Tt, (40, 132, 256)), (Layout::Tt, (8, 4, 128))]
    {
        let c = case(m, n, k, (m * 7 + n) as u64);
        let got = run_layout(&ctx, &s, &c, layout);
        assert_accurate(&format!("{layout:?} {m}x{n}x{k}"), &c, &got);
    }
}

/// An M-major A whose K rows are `lda > m` bytes apart (the first `m` columns of a wider
/// matrix): the padding columns hold NaN bytes, which must not reach D.
#[test]
fn strided_m_major_a() {
    let ctx = checked_context();
    let s = Stream::new(&ctx).unwrap();
    let (m, n, k, lda) = (40, 136, 256, 56);
    let c = case(m, n, k, 77);
    let ta = MnMajorActivations::from_k_major(&c.qa).unwrap();
    let bits = fp8gemm::fp8::as_bits(&ta.data);
    let mut wide = vec![0x80u8; (k - 1) * lda + m]; // 0x80: E4M3FNUZ NaN
    for kk in 0..k {
        wide[kk * lda..kk * lda + m].copy_from_slice(&bits[kk * m..(kk + 1) * m]);
    }
    let (data, scales) = (ctx.upload(&wide).unwrap(), ctx.upload(&ta.scales).unwrap());
    let a = MnMajorActivationsView::<E4M3Fnuz>::with_row_stride(data.as_slice(), scales.as_slice(), m, k, lda).unwrap();
    let tb = DeviceMnMajorWeights::upload(&ctx, &MnMajorWeights::from_k_major(&c.qb).unwrap()).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    for layout in [Layout::Tn, Layout::Tt] {
        let mut dd = ctx.upload(&vec![bf16::from_f32(1234.5); m * n]).unwrap();
        match layout {
            Layout::Tn => fp8_gemm_tn(&s, a.clone(), &tb, &mut dd),
            _ => fp8_gemm_tt(&s, a.clone(), &db, &mut dd),
        }
        .unwrap();
        assert_accurate(&format!("{layout:?} lda {lda}"), &c, &dd.download(&s).unwrap());
    }
}

fn shape_err(e: Error) -> (&'static str, String) {
    match e {
        Error::Shape { arg, expected, .. } => (arg, expected),
        other => panic!("expected a shape error, got {other}"),
    }
}

#[test]
fn rejects_bad_arguments_naming_them() {
    let ctx = Context::new().unwrap();
    let s = Stream::new(&ctx).unwrap();
    let c = case(72, 132, 256, 5);
    let ta = DeviceMnMajorActivations::upload(&ctx, &MnMajorActivations::from_k_major(&c.qa).unwrap()).unwrap();
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    let mut d = ctx.alloc_zeroed::<bf16>(72 * 132).unwrap();

    // N-major B of n = 132: not a multiple of 8.
    let tb = DeviceMnMajorWeights::upload(&ctx, &MnMajorWeights::from_k_major(&c.qb).unwrap()).unwrap();
    let (arg, expected) = shape_err(fp8_gemm_nn(&s, &da, &tb, &mut d).unwrap_err());
    assert_eq!(arg, "n");
    assert!(expected.contains("multiple of 8"), "{expected}");

    // M-major A of m = 36.
    let c36 = case(36, 128, 256, 6);
    let ta36 = DeviceMnMajorActivations::upload(&ctx, &MnMajorActivations::from_k_major(&c36.qa).unwrap()).unwrap();
    let db36 = DeviceWeights::upload(&ctx, &c36.qb).unwrap();
    let mut d36 = ctx.alloc_zeroed::<bf16>(36 * 128).unwrap();
    let (arg, expected) = shape_err(fp8_gemm_tt(&s, &ta36, &db36, &mut d36).unwrap_err());
    assert_eq!(arg, "m");
    assert!(expected.contains("multiple of 8"), "{expected}");

    // K-row stride of A not a multiple of 8.
    let wide = ctx.alloc_zeroed::<u8>(255 * 76 + 72).unwrap();
    let sc = ctx.alloc_zeroed::<f32>(72 * 2).unwrap();
    let a76 = MnMajorActivationsView::<E4M3Fnuz>::with_row_stride(wide.as_slice(), sc.as_slice(), 72, 256, 76).unwrap();
    let (arg, _) = shape_err(fp8_gemm_tt(&s, a76, &db, &mut d).unwrap_err());
    assert_eq!(arg, "lda");

    // K mismatch between A and B.
    let c384 = case(72, 136, 384, 7);
    let tb384 = DeviceMnMajorWeights::upload(&ctx, &MnMajorWeights::from_k_major(&c384.qb).unwrap()).unwrap();
    let mut d136 = ctx.alloc_zeroed::<bf16>(72 * 136).unwrap();
    let (arg, expected) = shape_err(fp8_gemm_tn(&s, &ta, &tb384, &mut d136).unwrap_err());
    assert_eq!(arg, "b");
    assert!(expected.contains("k = 256"), "{expected}");

    // Output of the wrong size.
    let mut small = ctx.alloc_zeroed::<bf16>(72 * 132 - 4).unwrap();
    let (arg, _) = shape_err(fp8_gemm_tt(&s, &ta, &db, &mut small).unwrap_err());
    assert_eq!(arg, "d");

    // Views shorter than their shape.
    let short = ctx.alloc_zeroed::<u8>(256 * 72 - 1).unwrap();
    let (arg, _) = shape_err(MnMajorActivationsView::<E4M3Fnuz>::new(short.as_slice(), sc.as_slice(), 72, 256).err().unwrap());
    assert_eq!(arg, "a");
    let (arg, _) = shape_err(MnMajorWeightsView::<E4M3Fnuz>::new(short.as_slice(), sc.as_slice(), 72, 256).err().unwrap());
    assert_eq!(arg, "b");
    let (arg, _) = shape_err(MnMajorActivationsView::<E4M3Fnuz>::with_row_stride(wide.as_slice(), sc.as_slice(), 72, 256, 64).err().unwrap());
    assert_eq!(arg, "lda");

    // K not a multiple of 128.
    let kdata = ctx.alloc_zeroed::<u8>(72 * 200).unwrap();
    let ksc = ctx.alloc_zeroed::<f32>(72 * 2).unwrap();
    let a200 = MnMajorActivationsView::<E4M3Fnuz>::new(kdata.as_slice(), ksc.as_slice(), 72, 200).unwrap();
    let bdata = ctx.alloc_zeroed::<u8>(136 * 200).unwrap();
    let bsc = ctx.alloc_zeroed::<f32>(2 * 2).unwrap();
    let b200 = MnMajorWeightsView::<E4M3Fnuz>::new(bdata.as_slice(), bsc.as_slice(), 136, 200).unwrap();
    let (arg, _) = shape_err(fp8_gemm_tn(&s, a200, b200, &mut d136).unwrap_err());
    assert_eq!(arg, "k");

    // Pre-shuffled weights for TT.
    let pre = DeviceWeights::upload_preshuffled(&ctx, &c.qb).unwrap();
    match fp8_gemm_tt(&s, &ta, &pre, &mut d).unwrap_err() {
        Error::Layout { arg, expected, actual, .. } => {
            assert_eq!((arg, expected, actual), ("b", WeightLayout::Logical, WeightLayout::Preshuffled));
        }
        other => panic!("expected a layout error, got {other}"),
    }

    // Scales outside the supported range at upload.
    let mut bad = MnMajorActivations::from_k_major(&c.qa).unwrap();
    bad.scales[3] = f32::INFINITY;
    match DeviceMnMajorActivations::upload(&ctx, &bad).err().unwrap() {
        Error::ScaleRange { arg, index, .. } => assert_eq!((arg, index), ("a.scales", 3)),
        other => panic!("expected a scale-range error, got {other}"),
    }

    // Empty problems launch nothing.
    let empty_a = MnMajorActivationsView::<E4M3Fnuz>::new(kdata.as_slice(), ksc.as_slice(), 0, 256).unwrap();
    let mut d0 = ctx.alloc_zeroed::<bf16>(0).unwrap();
    assert!(fp8_gemm_tt(&s, empty_a, &db, &mut d0).unwrap().config.is_none());
}
