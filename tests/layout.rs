//! The pre-shuffled weight layout (`fp8gemm::layout`, issue 12 part 3) through the public API on
//! the emulator (all checking modes on): the host shuffle against the layout's definition
//! (`tile::shuffled_b_index`), upload → download round trips (dense, grouped, expert by expert
//! in any order), the device pre-shuffle kernel byte for byte against the host shuffle, the
//! checkpoint loader in the pre-shuffled layout, the m-grouped entry points and `MoeLayer` on
//! pre-shuffled experts, and every error path (lengths, `k`, layouts an operation cannot take).

mod common;

use amdgpu_emu::exec::{self, Checks, LaunchConfig};
use amdgpu_emu::loader::CodeObject;
use amdgpu_emu::memory::DeviceMemory;
use fp8gemm_device::args::{GlobalPtr, PreshuffleArgs};

use fp8gemm::checkpoint::{Checkpoint, DeviceMlpWeights, DeviceMoeWeights, MlpF32, MoeLayerF32, write_deepseek_moe};
use fp8gemm::fp8::{E4M3Fnuz, Fp8Format};
use fp8gemm::layout::{self, WeightLayout, preshuffle_bytes, preshuffled_bytes, unshuffle_bytes};
use fp8gemm::quant::{GroupedQuantizedWeights, QuantizedActivations, QuantizedWeights};
use fp8gemm::{
    DeviceActivations, DeviceBuffer, DeviceGroupedWeights, DeviceSlice, DeviceSliceMut, DeviceWeights, Error, GroupedWeightsView, MoeLayer, MoeOptions, Stream,
    WeightsView, WeightsViewMut, fp8_gemm_nt, m_grouped_fp8_gemm_nt_contiguous, m_grouped_fp8_gemm_nt_masked, preshuffle_weights, preshuffle_weights_on_device,
    quantize_weights, unshuffle_weights,
};
use fp8gemm_device::tile::{shuffled_b_bytes, shuffled_b_index};
use half::bf16;
use proptest::prelude::*;
use rand::{Rng, SeedableRng, rngs::StdRng};

fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.random()).collect()
}

/// Quantized weights with random FP8 bytes (every byte pattern, NaN included: the layout moves
/// bytes and must not care) and in-range scales.
fn random_weights(n: usize, k: usize, seed: u64) -> QuantizedWeights<E4M3Fnuz> {
    let data = random_bytes(n * k, seed).into_iter().map(E4M3Fnuz::from_bits).collect();
    let scales = (0..n.div_ceil(128) * k.div_ceil(128)).map(|i| 0.5 + i as f32 / 64.0).collect();
    QuantizedWeights::from_parts(data, scales, n, k).unwrap()
}

fn random_grouped(groups: usize, n: usize, k: usize, seed: u64) -> GroupedQuantizedWeights<E4M3Fnuz> {
    let data = random_bytes(groups * n * k, seed).into_iter().map(E4M3Fnuz::from_bits).collect();
    let scales = (0..groups * n.div_ceil(128) * k.div_ceil(128)).map(|i| 0.25 + i as f32 / 32.0).collect();
    GroupedQuantizedWeights::from_parts(data, scales, groups, n, k).unwrap()
}

fn bits<F: Fp8Format>(v: &[F]) -> Vec<u8> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Element-wise equality of two weights (bytes and scales by bit pattern), naming the first
/// mismatch.
fn assert_same_weights(what: &str, got: &QuantizedWeights<E4M3Fnuz>, want: &QuantizedWeights<E4M3Fnuz>) {
    assert_eq!((got.n, got.k), (want.n, want.k), "{what}: shape");
    assert_same_bytes(&format!("{what} data"), &bits(&got.data), &bits(&want.data));
    assert_same_scales(what, &got.scales, &want.scales);
}

fn assert_same_bytes(what: &str, got: &[u8], want: &[u8]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g != w) {
        panic!("{what}[{i}]: got {:#04x}, want {:#04x}", got[i], want[i]);
    }
}

fn assert_same_scales(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what} scales: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what} scales[{i}]: got {g:e}, want {w:e}");
    }
}

/// The device bytes behind a view.
fn device_bytes(stream: &Stream, s: DeviceSlice<'_, u8>) -> Vec<u8> {
    let mut out = vec![0u8; s.len()];
    s.copy_to_host(stream, &mut out).unwrap();
    out
}

fn shape_arg(e: &Error) -> &'static str {
    match e {
        Error::Shape { arg, .. } => arg,
        other => panic!("expected a shape error, got {other:?}"),
    }
}

fn expect_layout(e: Error, want_arg: &str, expected: WeightLayout, actual: WeightLayout) {
    match &e {
        Error::Layout { arg, expected: x, actual: a, .. } => {
            assert_eq!((*arg, *x, *a), (want_arg, expected, actual), "{e}");
            let msg = e.to_string();
            assert!(msg.contains(want_arg) && msg.contains(&expected.to_string()) && msg.contains(&actual.to_string()), "{msg}");
        }
        other => panic!("expected a layout error naming `{want_arg}`, got {other:?}"),
    }
}

// ---------------------------------------------------------------- host shuffle (no device)

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every logical byte lands where `shuffled_b_index` says, padding rows are zero, the length
    /// is `shuffled_b_bytes`, and unshuffling gives the input back.
    #[test]
    fn shuffle_places_every_byte_and_inverts(n in 0usize..80, kb in 1usize..5, seed in any::<u64>()) {
        let k = 128 * kb;
        let logical = random_bytes(n * k, seed);
        let shuffled = preshuffle_bytes(&logical, n, k).unwrap();
        prop_assert_eq!(shuffled.len() as u64, shuffled_b_bytes(n as u64, k as u64));
        prop_assert_eq!(shuffled.len(), preshuffled_bytes(n, k).unwrap());
        let mut hit = vec![false; shuffled.len()];
        for row in 0..n {
            for col in 0..k {
                let at = shuffled_b_index(row as u64, col as u64, kb as u64) as usize;
                prop_assert_eq!(shuffled[at], logical[row * k + col], "B[{}, {}] at {}", row, col, at);
                prop_assert!(!hit[at], "byte {} written twice", at);
                hit[at] = true;
            }
        }
        // Every byte not holding a logical element is a padding row's, and zero.
        for (at, h) in hit.iter().enumerate() {
            if !h {
                prop_assert_eq!(shuffled[at], 0, "padding byte {}", at);
            }
        }
        prop_assert_eq!(hit.iter().filter(|h| !**h).count(), (n.div_ceil(16) * 16 - n) * k);
        prop_assert_eq!(unshuffle_bytes(&shuffled, n, k).unwrap(), logical);
    }

    /// The other direction: any valid pre-shuffled buffer (padding zero) unshuffles and shuffles
    /// back to itself; and the typed wrappers round-trip QuantizedWeights.
    #[test]
    fn unshuffle_then_shuffle_is_identity(n in 1usize..70, kb in 1usize..4, seed in any::<u64>()) {
        let k = 128 * kb;
        let mut shuffled = random_bytes(preshuffled_bytes(n, k).unwrap(), seed);
        for row in n..n.div_ceil(16) * 16 {
            for col in 0..k {
                shuffled[shuffled_b_index(row as u64, col as u64, kb as u64) as usize] = 0;
            }
        }
        let logical = unshuffle_bytes(&shuffled, n, k).unwrap();
        prop_assert_eq!(preshuffle_bytes(&logical, n, k).unwrap(), shuffled.clone());
        let w = random_weights(n, k, seed ^ 1);
        let s = preshuffle_weights(&w).unwrap();
        let back: QuantizedWeights<E4M3Fnuz> = unshuffle_weights(&s, w.scales.clone(), n, k).unwrap();
        prop_assert_eq!(bits(&back.data), bits(&w.data));
        prop_assert_eq!(back.scales, w.scales);
    }

    /// The views accept exactly the lengths the layout needs and name what they expected.
    #[test]
    fn preshuffled_view_lengths(n in 0usize..300, kb in 1usize..4, short in 1usize..40) {
        let ctx = common::checked_context();
        let k = 128 * kb;
        let bytes = preshuffled_bytes(n, k).unwrap();
        let sf = n.div_ceil(128) * kb;
        let data = ctx.alloc_zeroed::<u8>(bytes + 64).unwrap();
        let scales = ctx.alloc_zeroed::<f32>(sf).unwrap();
        let v = WeightsView::<E4M3Fnuz>::new_preshuffled(data.slice(..bytes).unwrap(), scales.as_slice(), n, k).unwrap();
        prop_assert_eq!(v.layout(), WeightLayout::Preshuffled);
        prop_assert_eq!((v.n(), v.k(), v.data().len()), (n, k, bytes));
        if bytes >= short {
            let e = WeightsView::<E4M3Fnuz>::new_preshuffled(data.slice(..bytes - short).unwrap(), scales.as_slice(), n, k).unwrap_err();
            prop_assert_eq!(shape_arg(&e), "b");
            prop_assert!(e.to_string().contains(&format!("at least {bytes} ")), "{}", e);
            prop_assert!(e.to_string().contains("pre-shuffled"), "{}", e);
        }
        if n % 16 != 0 {
            // A logical-length buffer is too short for the padded layout.
            let e = WeightsView::<E4M3Fnuz>::new_preshuffled(data.slice(..n * k).unwrap(), scales.as_slice(), n, k).unwrap_err();
            prop_assert_eq!(shape_arg(&e), "b");
        }
        let g = 1 + short % 3;
        let gdata = ctx.alloc_zeroed::<u8>(g * bytes).unwrap();
        let gscales = ctx.alloc_zeroed::<f32>(g * sf).unwrap();
        let gv = GroupedWeightsView::<E4M3Fnuz>::new_preshuffled(gdata.as_slice(), gscales.as_slice(), g, n, k).unwrap();
        prop_assert_eq!((gv.layout(), gv.groups()), (WeightLayout::Preshuffled, g));
        if g * bytes > 0 {
            let e = GroupedWeightsView::<E4M3Fnuz>::new_preshuffled(gdata.slice(..g * bytes - 1).unwrap(), gscales.as_slice(), g, n, k).unwrap_err();
            prop_assert!(e.to_string().contains(&format!("at least {} ", g * bytes)), "{}", e);
        }
    }
}

#[test]
fn host_shuffle_errors_name_the_argument() {
    // k not a multiple of 128.
    for k in [8usize, 100, 200] {
        assert_eq!(shape_arg(&preshuffle_bytes(&vec![0; 16 * k], 16, k).unwrap_err()), "k");
        assert_eq!(shape_arg(&unshuffle_bytes(&vec![0; 16 * k], 16, k).unwrap_err()), "k");
        assert_eq!(shape_arg(&preshuffled_bytes(16, k).unwrap_err()), "k");
        assert_eq!(shape_arg(&preshuffle_weights(&random_weights(16, k, 1)).unwrap_err()), "k");
        assert_eq!(shape_arg(&WeightLayout::Preshuffled.data_bytes(16, k).unwrap_err()), "k");
    }
    assert_eq!(WeightLayout::Logical.data_bytes(3, 8).unwrap(), 24);
    assert_eq!(WeightLayout::Preshuffled.data_bytes(3, 128).unwrap(), 16 * 128);
    // Wrong lengths.
    let e = preshuffle_bytes(&[0; 100], 1, 128).unwrap_err();
    assert_eq!(shape_arg(&e), "logical");
    assert!(e.to_string().contains("128 bytes"), "{e}");
    let e = unshuffle_bytes(&[0; 128], 1, 128).unwrap_err();
    assert_eq!(shape_arg(&e), "shuffled");
    assert!(e.to_string().contains("2048 bytes"), "{e}");
    let mut w = random_weights(20, 256, 2);
    w.data.pop();
    assert_eq!(shape_arg(&preshuffle_weights(&w).unwrap_err()), "w.data");
    let e = unshuffle_weights::<E4M3Fnuz>(&vec![0; 32 * 256], vec![1.0; 3], 20, 256).unwrap_err();
    assert_eq!(shape_arg(&e), "scales");
    // Overflow is an error, not a wrap.
    assert_eq!(shape_arg(&preshuffled_bytes(usize::MAX / 64, 1 << 20).unwrap_err()), "n");
    // Regression: padding n to whole 16-row fragments overflows by itself near usize::MAX
    // (⌈n/16⌉·16 wrapped to 0, so these returned Ok(0)).
    for n in [usize::MAX, usize::MAX - 1, usize::MAX - 14] {
        assert_eq!(shape_arg(&preshuffled_bytes(n, 128).unwrap_err()), "n", "n = {n}");
        assert_eq!(shape_arg(&WeightLayout::Preshuffled.data_bytes(n, 128).unwrap_err()), "n", "n = {n}");
        assert_eq!(shape_arg(&preshuffle_bytes(&[], n, 128).unwrap_err()), "n", "n = {n}");
        assert_eq!(shape_arg(&unshuffle_bytes(&[], n, 128).unwrap_err()), "n", "n = {n}");
    }
    // The largest n whose padding fits is no error by itself (an empty K gives 0 bytes); a small
    // n is exact.
    assert_eq!(preshuffled_bytes(17, 128).unwrap(), 32 * 128);
    assert_eq!(WeightLayout::Preshuffled.data_bytes(usize::MAX - 15, 0).unwrap(), 0);
    assert_eq!(shape_arg(&WeightLayout::Logical.data_bytes(usize::MAX, 2).unwrap_err()), "n");
    // Display of the layouts (used in error messages).
    assert_eq!(WeightLayout::default(), WeightLayout::Logical);
    assert_eq!((WeightLayout::Logical.to_string(), WeightLayout::Preshuffled.to_string()), ("logical".into(), "pre-shuffled".into()));
}

#[test]
fn preshuffled_views_check_k_and_scales() {
    let ctx = common::checked_context();
    let data = ctx.alloc_zeroed::<u8>(1 << 18).unwrap();
    let scales = ctx.alloc_zeroed::<f32>(64).unwrap();
    // k = 192: fine for a logical view, not for a pre-shuffled one.
    WeightsView::<E4M3Fnuz>::new(data.as_slice(), scales.as_slice(), 32, 192).unwrap();
    let e = WeightsView::<E4M3Fnuz>::new_preshuffled(data.as_slice(), scales.as_slice(), 32, 192).unwrap_err();
    assert_eq!(shape_arg(&e), "k");
    assert!(e.to_string().contains("multiple of 128"), "{e}");
    let e = GroupedWeightsView::<E4M3Fnuz>::new_preshuffled(data.as_slice(), scales.as_slice(), 2, 32, 192).unwrap_err();
    assert_eq!(shape_arg(&e), "k");
    // Scales: the same grid as the logical layout.
    let e = WeightsView::<E4M3Fnuz>::new_preshuffled(data.as_slice(), scales.slice(..2).unwrap(), 200, 256).unwrap_err();
    assert!(e.to_string().contains("scales of at least 4"), "{e}");
    let e = GroupedWeightsView::<E4M3Fnuz>::new_preshuffled(data.as_slice(), scales.slice(..7).unwrap(), 2, 200, 256).unwrap_err();
    assert!(e.to_string().contains("scales of at least 8"), "{e}");
    // The writable view: same rules.
    let mut wdata = ctx.alloc_zeroed::<u8>(48 * 256).unwrap();
    let mut wscales = ctx.alloc_zeroed::<f32>(2).unwrap();
    let v = WeightsViewMut::<E4M3Fnuz>::new_preshuffled(wdata.as_slice_mut(), wscales.as_slice_mut(), 33, 256).unwrap();
    assert_eq!(v.layout(), WeightLayout::Preshuffled);
    assert_eq!(v.as_view().layout(), WeightLayout::Preshuffled);
    let e = WeightsViewMut::<E4M3Fnuz>::new_preshuffled(wdata.slice_mut(..40 * 256).unwrap(), wscales.as_slice_mut(), 33, 256).unwrap_err();
    assert_eq!(shape_arg(&e), "out");
    let e = WeightsViewMut::<E4M3Fnuz>::new_preshuffled(wdata.as_slice_mut(), wscales.as_slice_mut(), 33, 64).unwrap_err();
    assert_eq!(shape_arg(&e), "k");
    // The logical constructors still build logical views.
    assert_eq!(WeightsView::<E4M3Fnuz>::new(data.as_slice(), scales.as_slice(), 32, 256).unwrap().layout(), WeightLayout::Logical);
}

// ---------------------------------------------------------------- owned weights on the device

#[test]
fn dense_upload_preshuffled_round_trips() {
    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    for (i, &(n, k)) in [(1usize, 128usize), (16, 128), (37, 384), (128, 256), (200, 640)].iter().enumerate() {
        let w = random_weights(n, k, 10 + i as u64);
        let d = DeviceWeights::upload_preshuffled(&ctx, &w).unwrap();
        assert_eq!((d.layout(), d.view().layout(), d.n(), d.k()), (WeightLayout::Preshuffled, WeightLayout::Preshuffled, n, k));
        // The device holds exactly the host shuffle (padding zero) and the same scales …
        assert_same_bytes(&format!("{n}×{k} device bytes"), &device_bytes(&stream, d.view().data()), &preshuffle_weights(&w).unwrap());
        let mut sf = vec![0f32; w.scales.len()];
        d.view().scales().copy_to_host(&stream, &mut sf).unwrap();
        assert_same_scales("device", &sf, &w.scales);
        // … and downloads as the logical weights.
        assert_same_weights(&format!("{n}×{k}"), &d.download(&stream).unwrap(), &w);
        // The logical upload is unchanged.
        let l = DeviceWeights::upload(&ctx, &w).unwrap();
        assert_eq!(l.layout(), WeightLayout::Logical);
        assert_same_bytes("logical device bytes", &device_bytes(&stream, l.view().data()), &bits(&w.data));
        assert_same_weights("logical", &l.download(&stream).unwrap(), &w);
    }
    // alloc_preshuffled: zeroed, padded, downloads as zeros.
    let z = DeviceWeights::<E4M3Fnuz>::alloc_preshuffled(&ctx, 20, 256).unwrap();
    assert_eq!(z.view().data().len(), 32 * 256);
    let zd = z.download(&stream).unwrap();
    assert!(bits(&zd.data).iter().all(|&b| b == 0) && zd.data.len() == 20 * 256);
}

#[test]
fn dense_upload_errors() {
    let ctx = common::checked_context();
    let e = DeviceWeights::upload_preshuffled(&ctx, &random_weights(16, 192, 1)).err().unwrap();
    assert_eq!(shape_arg(&e), "k");
    let e = DeviceWeights::<E4M3Fnuz>::alloc_preshuffled(&ctx, 16, 100).err().unwrap();
    assert_eq!(shape_arg(&e), "k");
    let mut w = random_weights(16, 128, 1);
    w.scales.push(1.0);
    assert_eq!(shape_arg(&DeviceWeights::upload_preshuffled(&ctx, &w).err().unwrap()), "b");
    let mut w = random_weights(16, 128, 1);
    w.scales[0] = 1e-30;
    assert!(matches!(DeviceWeights::upload_preshuffled(&ctx, &w).err().unwrap(), Error::ScaleRange { arg: "b.scales", index: 0, .. }));
}

#[test]
fn grouped_upload_preshuffled_round_trips_and_upload_group_in_any_order() {
    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    for (i, &(g, n, k)) in [(1usize, 16usize, 128usize), (3, 37, 256), (4, 130, 384)].iter().enumerate() {
        let w = random_grouped(g, n, k, 40 + i as u64);
        let whole = DeviceGroupedWeights::upload_preshuffled(&ctx, &w).unwrap();
        assert_eq!((whole.layout(), whole.view().layout()), (WeightLayout::Preshuffled, WeightLayout::Preshuffled));
        let per = preshuffled_bytes(n, k).unwrap();
        let mut want = Vec::new();
        for gi in 0..g {
            want.extend(preshuffle_bytes(&bits(&w.data[gi * n * k..(gi + 1) * n * k]), n, k).unwrap());
        }
        assert_eq!(want.len(), g * per);
        assert_same_bytes("whole upload device bytes", &device_bytes(&stream, whole.view().data()), &want);
        let back = whole.download(&stream).unwrap();
        assert_same_bytes("whole upload download", &bits(&back.data), &bits(&w.data));
        assert_same_scales("whole upload", &back.scales, &w.scales);

        // Expert by expert, in a scrambled order (and group 0 written twice, first with junk).
        let mut streamed = DeviceGroupedWeights::<E4M3Fnuz>::alloc_preshuffled(&ctx, g, n, k).unwrap();
        let sf = n.div_ceil(128) * k.div_ceil(128);
        let group =
            |gi: usize| QuantizedWeights::from_parts(w.data[gi * n * k..(gi + 1) * n * k].to_vec(), w.scales[gi * sf..(gi + 1) * sf].to_vec(), n, k).unwrap();
        streamed.upload_group(&stream, 0, &random_weights(n, k, 999)).unwrap();
        let mut order: Vec<usize> = (0..g).collect();
        order.reverse();
        order.rotate_left(g / 2);
        for gi in order {
            streamed.upload_group(&stream, gi, &group(gi)).unwrap();
        }
        stream.synchronize().unwrap();
        assert_same_bytes("upload_group device bytes", &device_bytes(&stream, streamed.view().data()), &want);
        let back = streamed.download(&stream).unwrap();
        assert_same_bytes("upload_group download", &bits(&back.data), &bits(&w.data));
        assert_same_scales("upload_group", &back.scales, &w.scales);
    }
}

/// A group larger than the 4 MiB staging chunk of `upload_group`: several copies per group, the
/// last one partial.
#[test]
fn upload_group_stages_large_groups_in_chunks() {
    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let (g, n, k) = (2usize, 1032usize, 4096usize); // 65 stripes of 64 KiB: 64 + 1 per group
    let w = random_grouped(g, n, k, 77);
    let sf = n.div_ceil(128) * k.div_ceil(128);
    let mut d = DeviceGroupedWeights::<E4M3Fnuz>::alloc_preshuffled(&ctx, g, n, k).unwrap();
    for gi in [1, 0] {
        let q = QuantizedWeights::from_parts(w.data[gi * n * k..(gi + 1) * n * k].to_vec(), w.scales[gi * sf..(gi + 1) * sf].to_vec(), n, k).unwrap();
        d.upload_group(&stream, gi, &q).unwrap();
    }
    let mut want = Vec::new();
    for gi in 0..g {
        want.extend(preshuffle_bytes(&bits(&w.data[gi * n * k..(gi + 1) * n * k]), n, k).unwrap());
    }
    assert_same_bytes("chunked upload_group", &device_bytes(&stream, d.view().data()), &want);
    assert_same_bytes("chunked download", &bits(&d.download(&stream).unwrap().data), &bits(&w.data));
}

#[test]
fn grouped_upload_errors() {
    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    assert_eq!(shape_arg(&DeviceGroupedWeights::upload_preshuffled(&ctx, &random_grouped(2, 16, 192, 1)).err().unwrap()), "k");
    assert_eq!(shape_arg(&DeviceGroupedWeights::<E4M3Fnuz>::alloc_preshuffled(&ctx, 2, 16, 64).err().unwrap()), "k");
    let mut d = DeviceGroupedWeights::<E4M3Fnuz>::alloc_preshuffled(&ctx, 2, 20, 128).unwrap();
    assert_eq!(shape_arg(&d.upload_group(&stream, 2, &random_weights(20, 128, 1)).unwrap_err()), "g");
    assert_eq!(shape_arg(&d.upload_group(&stream, 0, &random_weights(16, 128, 1)).unwrap_err()), "w");
    let mut bad = random_weights(20, 128, 1);
    bad.data.pop();
    assert_eq!(shape_arg(&d.upload_group(&stream, 0, &bad).unwrap_err()), "w");
    // Nothing was written by the failed calls.
    assert!(bits(&d.download(&stream).unwrap().data).iter().all(|&b| b == 0));
}

// ---------------------------------------------------------------- device pre-shuffle kernel

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10))]

    /// Weights quantized on the device, pre-shuffled on the device, equal the CPU shuffle of the
    /// CPU quantization byte for byte (and the destination's old contents, including the padding
    /// rows, are all overwritten).
    #[test]
    fn device_preshuffle_equals_host_preshuffle(n in 1usize..300, kb in 1usize..5, seed in any::<u64>()) {
        let ctx = common::checked_context();
        let stream = Stream::new(&ctx).unwrap();
        let k = 128 * kb;
        let mut rng = StdRng::seed_from_u64(seed);
        let x = common::randn_bf16(n * k, &mut rng);
        let want = QuantizedWeights::<E4M3Fnuz>::quantize(&x, n, k).unwrap();
        let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
        let mut q = DeviceWeights::<E4M3Fnuz>::alloc(&ctx, n, k).unwrap();
        quantize_weights(&stream, &ctx.upload(&xb).unwrap(), &mut q).unwrap();
        // A destination full of junk, through the public views.
        let bytes = preshuffled_bytes(n, k).unwrap();
        let mut data = ctx.upload(&vec![0xA5u8; bytes]).unwrap();
        let mut scales = ctx.upload(&vec![f32::NAN; n.div_ceil(128) * kb]).unwrap();
        let dst = WeightsViewMut::<E4M3Fnuz>::new_preshuffled(data.as_slice_mut(), scales.as_slice_mut(), n, k).unwrap();
        preshuffle_weights_on_device(&stream, &q, dst).unwrap();
        stream.synchronize().unwrap();
        let got = device_bytes(&stream, data.as_slice());
        assert_same_bytes(&format!("device pre-shuffle {n}×{k}"), &got, &preshuffle_weights(&want).unwrap());
        let sf = scales.download(&stream).unwrap();
        assert_same_scales("device pre-shuffle", &sf, &want.scales);
        // The owned conversion does the same.
        let p = q.to_preshuffled(&stream).unwrap();
        prop_assert_eq!(p.layout(), WeightLayout::Preshuffled);
        assert_same_bytes("to_preshuffled", &device_bytes(&stream, p.view().data()), &got);
        assert_same_weights("to_preshuffled download", &p.download(&stream).unwrap(), &want);
    }
}

#[test]
fn device_preshuffle_of_grouped_weights() {
    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let (g, n, k) = (3usize, 52usize, 384usize);
    let w = random_grouped(g, n, k, 5);
    let logical = DeviceGroupedWeights::upload(&ctx, &w).unwrap();
    let p = logical.to_preshuffled(&stream).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(p.layout(), WeightLayout::Preshuffled);
    let host = DeviceGroupedWeights::upload_preshuffled(&ctx, &w).unwrap();
    assert_same_bytes("grouped device pre-shuffle", &device_bytes(&stream, p.view().data()), &device_bytes(&stream, host.view().data()));
    let back = p.download(&stream).unwrap();
    assert_same_bytes("grouped download", &bits(&back.data), &bits(&w.data));
    assert_same_scales("grouped", &back.scales, &w.scales);
    // Converting again is a layout error; k % 128 ≠ 0 cannot be pre-shuffled.
    expect_layout(p.to_preshuffled(&stream).err().unwrap(), "self", WeightLayout::Logical, WeightLayout::Preshuffled);
    let odd = DeviceGroupedWeights::upload(&ctx, &random_grouped(2, 16, 192, 1)).unwrap();
    assert_eq!(shape_arg(&odd.to_preshuffled(&stream).err().unwrap()), "k");
}

#[test]
fn device_preshuffle_errors() {
    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let w = random_weights(40, 256, 3);
    let logical = DeviceWeights::upload(&ctx, &w).unwrap();
    let mut shuffled = DeviceWeights::<E4M3Fnuz>::alloc_preshuffled(&ctx, 40, 256).unwrap();
    let mut other_logical = DeviceWeights::<E4M3Fnuz>::alloc(&ctx, 40, 256).unwrap();
    // Source must be logical, destination pre-shuffled.
    let pre_src = DeviceWeights::upload_preshuffled(&ctx, &w).unwrap();
    expect_layout(preshuffle_weights_on_device(&stream, &pre_src, &mut shuffled).unwrap_err(), "src", WeightLayout::Logical, WeightLayout::Preshuffled);
    expect_layout(preshuffle_weights_on_device(&stream, &logical, &mut other_logical).unwrap_err(), "dst", WeightLayout::Preshuffled, WeightLayout::Logical);
    expect_layout(pre_src.to_preshuffled(&stream).err().unwrap(), "self", WeightLayout::Logical, WeightLayout::Preshuffled);
    // Shapes must match.
    let mut small = DeviceWeights::<E4M3Fnuz>::alloc_preshuffled(&ctx, 32, 256).unwrap();
    assert_eq!(shape_arg(&preshuffle_weights_on_device(&stream, &logical, &mut small).unwrap_err()), "dst");
    // k not a multiple of 128 (a logical source may have any k).
    let odd = DeviceWeights::upload(&ctx, &random_weights(16, 192, 1)).unwrap();
    assert_eq!(shape_arg(&odd.to_preshuffled(&stream).err().unwrap()), "k");
    // A misaligned destination (a raw view 8 bytes into a buffer).
    let mut big = ctx.alloc_zeroed::<u8>(48 * 256 + 16).unwrap();
    let mut sc = ctx.alloc_zeroed::<f32>(2).unwrap();
    let addr = big.as_slice_mut().device_ptr().addr() + 8;
    // SAFETY: the range lies inside `big`, which outlives the view and is used by nothing else.
    let raw = unsafe { DeviceSliceMut::<u8>::from_raw(addr, 48 * 256) }.unwrap();
    let dst = WeightsViewMut::<E4M3Fnuz>::new_preshuffled(raw, sc.as_slice_mut(), 40, 256).unwrap();
    let e = preshuffle_weights_on_device(&stream, &logical, dst).unwrap_err();
    assert_eq!(shape_arg(&e), "dst");
    assert!(e.to_string().contains("16-byte aligned"), "{e}");
    // quantize_weights writes logical weights only.
    let x = ctx.upload(&vec![bf16::from_f32(1.0); 40 * 256]).unwrap();
    expect_layout(quantize_weights(&stream, &x, &mut shuffled).unwrap_err(), "out", WeightLayout::Logical, WeightLayout::Preshuffled);
    // Nothing above launched anything that failed.
    stream.synchronize().unwrap();
    let _ = big.as_slice();
}

// ---------------------------------------------------------------- entry points and the MoE layer

/// The m-grouped entry points run pre-shuffled weights (their bs kernels) and give exactly
/// what the same weights give in the logical layout (their full correctness suites over both
/// layouts are in `tests/gemm_grouped.rs`; the dense entry points': `tests/gemm_bs.rs`).
#[test]
fn grouped_entry_points_run_preshuffled_weights_as_the_logical_ones() {
    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let k = 256usize;
    // m-grouped: 2 groups of n = 72 (a padded last 16-row fragment), both layouts, D
    // pre-filled with a sentinel (rows the GEMM does not define keep it).
    let (groups, gn) = (2, 72usize);
    let w = random_grouped(groups, gn, k, 2);
    let pre = DeviceGroupedWeights::upload_preshuffled(&ctx, &w).unwrap();
    let logical = DeviceGroupedWeights::upload(&ctx, &w).unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    let x: Vec<f32> = common::randn_bf16(256 * k, &mut rng);
    let ga = DeviceActivations::upload(&ctx, &QuantizedActivations::<E4M3Fnuz>::quantize(&x, 256, k).unwrap()).unwrap();
    let mut idx = vec![0i32; 256];
    idx[100..128].fill(-1);
    idx[128..200].fill(1);
    idx[200..].fill(-1);
    let idx = fp8gemm::grouped::upload_m_indices(&ctx, &idx, groups).unwrap();
    let masked = ctx.upload(&[128i32, 37]).unwrap();
    type Launch<'x> = &'x dyn Fn(&DeviceGroupedWeights<E4M3Fnuz>, &mut DeviceBuffer<bf16>) -> fp8gemm::Result<fp8gemm::GemmRun>;
    let run_both = |f: Launch<'_>, what: &str| {
        let mut outs = Vec::new();
        for wts in [&pre, &logical] {
            let mut gd = ctx.upload(&vec![bf16::from_bits(0x7f7f); 256 * gn]).unwrap();
            let run = f(wts, &mut gd).unwrap_or_else(|e| panic!("{what} [{}]: {e}", wts.layout()));
            let kernel = run.config.expect("launched").kernel;
            assert_eq!(kernel.contains("_bs_"), wts.layout() == WeightLayout::Preshuffled, "{what}: {kernel}");
            outs.push(gd.download(&stream).unwrap());
        }
        assert_same_bytes(what, &bits16(&outs[0]), &bits16(&outs[1]));
        let written = outs[0].iter().filter(|v| v.to_bits() != 0x7f7f).count();
        assert!(written > 0 && written < outs[0].len(), "{what}: {written} elements written");
    };
    run_both(&|wts, gd| m_grouped_fp8_gemm_nt_contiguous(&stream, &ga, wts, gd, &idx), "contiguous");
    run_both(&|wts, gd| m_grouped_fp8_gemm_nt_masked(&stream, &ga, wts, gd, &masked, 64), "masked");
    // A pre-shuffled view over engine memory runs too.
    let gview = GroupedWeightsView::<E4M3Fnuz>::new_preshuffled(pre.view().data(), pre.view().scales(), groups, gn, k).unwrap();
    let mut gd = ctx.upload(&vec![bf16::from_bits(0x7f7f); 256 * gn]).unwrap();
    let run = m_grouped_fp8_gemm_nt_masked(&stream, &ga, gview, &mut gd, &masked, 64).unwrap();
    assert!(run.config.expect("launched").kernel.contains("_bs_"));
    stream.synchronize().unwrap();
}

/// Every GEMM entry point takes the layout from the view: the same weights pre-shuffled (on
/// the host or on the device) give the logical layout's result bit for bit (the bs kernels run
/// the logical kernels' MFMA order and promotion; the dense calls force no split-K, which
/// would change the summation order).
#[test]
fn entry_points_run_preshuffled_weights_like_logical_ones() {
    let ctx = common::checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    let (m, n, k) = (64usize, 196usize, 384usize);
    let x: Vec<f32> = (0..m * k).map(|i| ((i * 37 % 17) as f32 - 8.0) / 4.0).collect();
    let a = DeviceActivations::upload(&ctx, &QuantizedActivations::<E4M3Fnuz>::quantize(&x, m, k).unwrap()).unwrap();
    let w = random_weights(n, k, 1);
    // The dense calls on a stream that never splits K.
    stream.set_overrides(fp8gemm::Overrides::NONE.with_split(1));
    let dense = |b: &DeviceWeights<E4M3Fnuz>| {
        let mut d = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
        fp8_gemm_nt(&stream, &a, b, &mut d).unwrap();
        d.download(&stream).unwrap()
    };
    let want = dense(&DeviceWeights::upload(&ctx, &w).unwrap());
    let host = DeviceWeights::upload_preshuffled(&ctx, &w).unwrap();
    let dev = DeviceWeights::upload(&ctx, &w).unwrap().to_preshuffled(&stream).unwrap();
    for (what, b) in [("host-shuffled", &host), ("device-shuffled", &dev)] {
        let got = dense(b);
        assert!(got.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()), "fp8_gemm_nt, {what} weights");
    }

    // The grouped calls with the selector's own choices.
    stream.set_overrides(fp8gemm::Overrides::NONE);
    let groups = 2;
    let gw = random_grouped(groups, n, k, 2);
    let ga = DeviceActivations::upload(&ctx, &QuantizedActivations::<E4M3Fnuz>::quantize(&vec![0.5f32; 256 * k], 256, k).unwrap()).unwrap();
    let idx: Vec<i32> = (0..256)
        .map(|i| {
            if i < 100 {
                0
            } else if i < 128 {
                -1
            } else {
                1
            }
        })
        .collect();
    let idx = fp8gemm::grouped::upload_m_indices(&ctx, &idx, groups).unwrap();
    let masked = ctx.upload(&[64i32, 100]).unwrap();
    let run = |b: &DeviceGroupedWeights<E4M3Fnuz>| {
        let mut gd = ctx.alloc_zeroed::<bf16>(256 * n).unwrap();
        m_grouped_fp8_gemm_nt_contiguous(&stream, &ga, b, &mut gd, &idx).unwrap();
        let mut md = ctx.alloc_zeroed::<bf16>(256 * n).unwrap();
        m_grouped_fp8_gemm_nt_masked(&stream, &ga, b, &mut md, &masked, 64).unwrap();
        (gd.download(&stream).unwrap(), md.download(&stream).unwrap())
    };
    let (want_c, want_m) = run(&DeviceGroupedWeights::upload(&ctx, &gw).unwrap());
    let (got_c, got_m) = run(&DeviceGroupedWeights::upload_preshuffled(&ctx, &gw).unwrap());
    assert!(got_c.iter().zip(&want_c).all(|(x, y)| x.to_bits() == y.to_bits()), "contiguous");
    assert!(got_m.iter().zip(&want_m).all(|(x, y)| x.to_bits() == y.to_bits()), "masked");
    assert!(want_c.iter().any(|v| v.to_f32() != 0.0) && want_m.iter().any(|v| v.to_f32() != 0.0));
}

fn bits16(v: &[bf16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect()
}

/// `MoeLayer::new` takes weights in either layout, each independently (routed experts and
/// shared expert); the layer's forward pass on them is checked in `tests/moe.rs`.
#[test]
fn moe_layer_takes_preshuffled_weights() {
    let ctx = common::checked_context();
    let (e, h, i) = (2usize, 128usize, 128usize);
    let opts = MoeOptions { top_k: 1, masked_max_tokens: 0 };
    let gu = || random_grouped(e, 2 * i, h, 1);
    let dn = || random_grouped(e, h, i, 2);
    let shared = |layout| {
        let s = (random_weights(2 * 128, h, 3), random_weights(h, 128, 4));
        (DeviceWeights::upload_with_layout(&ctx, &s.0, layout).unwrap(), DeviceWeights::upload_with_layout(&ctx, &s.1, layout).unwrap())
    };
    let up = |w: &GroupedQuantizedWeights<E4M3Fnuz>, l| DeviceGroupedWeights::upload_with_layout(&ctx, w, l).unwrap();
    for gl in [WeightLayout::Logical, WeightLayout::Preshuffled] {
        for dl in [WeightLayout::Logical, WeightLayout::Preshuffled] {
            for sl in [None, Some(WeightLayout::Logical), Some(WeightLayout::Preshuffled)] {
                MoeLayer::new(&ctx, up(&gu(), gl), up(&dn(), dl), sl.map(shared), opts)
                    .unwrap_or_else(|err| panic!("gate_up {gl}, down {dl}, shared {sl:?}: {err}"));
            }
        }
    }
}

// ---------------------------------------------------------------- checkpoint loaders

fn mlp(h: usize, i: usize, rng: &mut StdRng) -> MlpF32 {
    MlpF32 { hidden: h, intermediate: i, gate: common::randn_bf16(i * h, rng), up: common::randn_bf16(i * h, rng), down: common::randn_bf16(h * i, rng) }
}

/// The streaming loader in the pre-shuffled layout: the device holds the host shuffle of each
/// expert, and everything downloads to exactly what the logical loader gives.
#[test]
fn checkpoint_loader_preshuffled_equals_logical() {
    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let (e, h, i, is) = (3usize, 256usize, 128usize, 128usize);
    let mut rng = StdRng::seed_from_u64(8);
    let layer = MoeLayerF32 { experts: (0..e).map(|_| mlp(h, i, &mut rng)).collect(), shared: Some(mlp(h, is, &mut rng)) };
    let dir = tempfile::tempdir().expect("a temporary directory");
    write_deepseek_moe(dir.path(), 2, &layer, 2).unwrap();
    let ckpt = Checkpoint::open(dir.path()).unwrap();
    let logical = DeviceMoeWeights::<E4M3Fnuz>::load(&ctx, &ckpt, 2).unwrap();
    let pre = DeviceMoeWeights::<E4M3Fnuz>::load_with_layout(&ctx, &ckpt, 2, WeightLayout::Preshuffled).unwrap();
    assert_eq!((pre.gate_up.layout(), pre.down.layout()), (WeightLayout::Preshuffled, WeightLayout::Preshuffled));
    for (what, a, b) in [("gate_up", &pre.gate_up, &logical.gate_up), ("down", &pre.down, &logical.down)] {
        let (pa, lb) = (a.download(&stream).unwrap(), b.download(&stream).unwrap());
        assert_same_bytes(what, &bits(&pa.data), &bits(&lb.data));
        assert_same_scales(what, &pa.scales, &lb.scales);
        // The device bytes are each expert's host shuffle.
        let per = a.n() * a.k();
        let mut want = Vec::new();
        for g in 0..a.groups() {
            want.extend(preshuffle_bytes(&bits(&lb.data[g * per..(g + 1) * per]), a.n(), a.k()).unwrap());
        }
        assert_same_bytes(&format!("{what} device bytes"), &device_bytes(&stream, a.view().data()), &want);
    }
    let (ps, ls) = (pre.shared.as_ref().expect("shared expert"), logical.shared.as_ref().unwrap());
    for (what, a, b) in [("shared gate_up", &ps.gate_up, &ls.gate_up), ("shared down", &ps.down, &ls.down)] {
        assert_eq!(a.layout(), WeightLayout::Preshuffled, "{what}");
        assert_same_weights(what, &a.download(&stream).unwrap(), &b.download(&stream).unwrap());
    }
    // The whole-layer upload in the pre-shuffled layout gives the same device bytes.
    let host = ckpt.moe_layer::<E4M3Fnuz>(2).unwrap();
    let whole = DeviceMoeWeights::upload_with_layout(&ctx, &host, WeightLayout::Preshuffled).unwrap();
    assert_same_bytes("whole vs streamed", &device_bytes(&stream, whole.gate_up.view().data()), &device_bytes(&stream, pre.gate_up.view().data()));
    let mlp_dev = DeviceMlpWeights::upload_with_layout(&ctx, host.shared.as_ref().unwrap(), WeightLayout::Preshuffled).unwrap();
    assert_eq!(mlp_dev.gate_up.layout(), WeightLayout::Preshuffled);
    // Such a layer makes a MoeLayer (both layouts run).
    pre.into_layer(&ctx, MoeOptions { top_k: 2, masked_max_tokens: 0 }).unwrap();
}

#[test]
fn layout_module_doc_names_the_kernel_contract() {
    // The device layout constants the host relies on.
    assert_eq!(layout::PRESHUFFLE_K_ALIGN, 128);
    assert_eq!(layout::PRESHUFFLE_ROWS, 16);
    assert_eq!(fp8gemm_device::layout::PRESHUFFLE_B.workgroup_size, fp8gemm_device::layout::PRESHUFFLE_THREADS);
}

/// The pre-shuffle kernel meets the resource goals of every kernel (no spills, no scratch, no
/// LDS, the launch bound the host uses, 8 waves per SIMD by registers) on both architectures.
#[test]
fn preshuffle_kernel_meets_the_resource_goals() {
    let spec = fp8gemm_device::layout::PRESHUFFLE_B;
    for (arch, bytes) in [("gfx942", fp8gemm::codeobj::GFX942), ("gfx950", fp8gemm::codeobj::GFX950)] {
        let co = CodeObject::parse(bytes).expect("code object parses");
        let k = co.kernel(spec.name).unwrap_or_else(|| panic!("{arch}: {} missing", spec.name));
        let m = &k.meta;
        let what = format!("{arch} {}", spec.name);
        assert_eq!((m.vgpr_spill_count, m.sgpr_spill_count), (0, 0), "{what}: spills");
        assert_eq!(m.private_segment_fixed_size, 0, "{what}: scratch");
        assert_eq!(m.group_segment_fixed_size, 0, "{what}: LDS");
        assert_eq!(m.max_flat_workgroup_size, spec.workgroup_size, "{what}: launch bound");
        let regs = m.vgpr_count.div_ceil(8) * 8 + m.agpr_count;
        assert!(regs <= 64, "{what}: {regs} registers (8 waves/SIMD need ≤ 64)");
        eprintln!("{what}: vgpr {} agpr {} sgpr {}", m.vgpr_count, m.agpr_count, m.sgpr_count);
    }
}

/// The gfx950 code object's pre-shuffle kernel (run through the emulator's own launch API, all
/// checks on) gives the host shuffle too, over several groups (grid y) with a padded last
/// fragment.
#[test]
fn gfx950_preshuffle_matches_the_host_shuffle() {
    let co = CodeObject::parse(fp8gemm::codeobj::GFX950).expect("the embedded gfx950 code object parses");
    let spec = fp8gemm_device::layout::PRESHUFFLE_B;
    let kernel = co.kernel(spec.name).expect("preshuffle_b in gfx950");
    let (g, n, k) = (3usize, 37usize, 384usize);
    let src = random_bytes(g * n * k, 950);
    let per = preshuffled_bytes(n, k).unwrap();
    let mem = DeviceMemory::new();
    let put = |bytes: &[u8]| {
        let addr = mem.alloc(bytes.len() as u64).expect("alloc");
        mem.write(addr, bytes).expect("write");
        addr
    };
    let (s, d) = (put(&src), put(&vec![0x5Au8; g * per]));
    let args = PreshuffleArgs { src: GlobalPtr::new(s), dst: GlobalPtr::new(d), n: n as u32, k: k as u32 };
    let grid_x = ((per / 16) as u32).div_ceil(fp8gemm_device::layout::PRESHUFFLE_THREADS);
    let cfg = LaunchConfig { grid: [grid_x, g as u32, 1], block: [spec.workgroup_size, 1, 1], dynamic_lds_bytes: 0, kernarg: args.as_bytes().to_vec() };
    exec::launch(&co, kernel, &cfg, &mem, &Checks::all()).unwrap_or_else(|e| panic!("gfx950 preshuffle_b: {e}"));
    let mut got = vec![0u8; g * per];
    mem.read(d, &mut got).expect("read");
    for gi in 0..g {
        let want = preshuffle_bytes(&src[gi * n * k..(gi + 1) * n * k], n, k).unwrap();
        assert_same_bytes(&format!("gfx950 group {gi}"), &got[gi * per..(gi + 1) * per], &want);
    }
}
