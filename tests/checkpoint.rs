//! DeepSeek-V3/R1 FP8 checkpoint loading (`fp8gemm::checkpoint`): write → load → device →
//! download round trips (FN → FNUZ with doubled scales must dequantize to *identical* values),
//! sharded indexes, every error class, and malformed files (nothing panics).

mod common;

use std::path::{Path, PathBuf};

use fp8gemm::checkpoint::{
    Checkpoint, DeviceMoeWeights, INDEX_FILE, MlpF32, MoeLayerF32, SINGLE_FILE, expert_prefix, shared_expert_prefix, write_deepseek_moe, write_fp8_linears,
};
use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz, Fp8Format};
use fp8gemm::quant::{GroupedQuantizedWeights, QuantizedWeights};
use fp8gemm::{Context, DeviceGroupedWeights, Error, Stream};
use proptest::prelude::*;
use rand::{Rng, SeedableRng, rngs::StdRng};
use safetensors::Dtype;
use safetensors::tensor::TensorView;

fn randn(count: usize, scale: f32, rng: &mut StdRng) -> Vec<f32> {
    common::randn_bf16(count, rng).into_iter().map(|v| v * scale).collect()
}

fn mlp(h: usize, i: usize, rng: &mut StdRng) -> MlpF32 {
    MlpF32 { hidden: h, intermediate: i, gate: randn(i * h, 0.05, rng), up: randn(i * h, 0.05, rng), down: randn(h * i, 0.05, rng) }
}

fn moe(experts: usize, h: usize, i: usize, shared: Option<usize>, seed: u64) -> MoeLayerF32 {
    let mut rng = StdRng::seed_from_u64(seed);
    MoeLayerF32 { experts: (0..experts).map(|_| mlp(h, i, &mut rng)).collect(), shared: shared.map(|is| mlp(h, is, &mut rng)) }
}

/// What the checkpoint holds for one linear: the E4M3FN quantization of its f32 weights.
fn fn_quant(w: &[f32], n: usize, k: usize) -> QuantizedWeights<E4M3Fn> {
    QuantizedWeights::<E4M3Fn>::quantize(w, n, k).unwrap()
}

/// Expected fused gate ‖ up `[2·I, H]` dequantized, and down, from the FN checkpoint values.
fn expected_mlp(m: &MlpF32) -> (Vec<f32>, Vec<f32>) {
    let (h, i) = (m.hidden, m.intermediate);
    let mut gu = fn_quant(&m.gate, i, h).dequantize();
    gu.extend(fn_quant(&m.up, i, h).dequantize());
    (gu, fn_quant(&m.down, h, i).dequantize())
}

/// The same value: bit-identical, except that −0 may come back as +0 (E4M3FNUZ has no −0;
/// the two are the same number, and a GEMM cannot tell them apart).
fn same(g: f32, w: f32) -> bool {
    g.to_bits() == w.to_bits() || (g == 0.0 && w == 0.0)
}

/// Element-wise identity of two f32 slices ([`same`]), naming the first mismatch.
fn assert_identical(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (idx, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(same(*g, *w), "{what}[{idx}]: got {g:e}, want {w:e}");
    }
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

#[test]
fn round_trip_through_the_device_is_exact() {
    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let (e, h, i, is) = (3, 256, 128, 256);
    let layer = moe(e, h, i, Some(is), 1);
    let dir = tmp();
    let files = write_deepseek_moe(dir.path(), 5, &layer, 1).unwrap();
    assert_eq!(files, vec![dir.path().join(SINGLE_FILE)]);

    let ckpt = Checkpoint::open(dir.path()).unwrap();
    assert_eq!(ckpt.num_experts(5), e);
    assert_eq!(ckpt.num_experts(4), 0);
    let w = DeviceMoeWeights::<E4M3Fnuz>::load(&ctx, &ckpt, 5).unwrap();
    assert_eq!((w.hidden, w.intermediate), (h, i));
    assert_eq!((w.gate_up.groups(), w.gate_up.n(), w.gate_up.k()), (e, 2 * i, h));
    assert_eq!((w.down.groups(), w.down.n(), w.down.k()), (e, h, i));

    let gu = w.gate_up.download(&stream).unwrap();
    let down = w.down.download(&stream).unwrap();
    let (gu_deq, down_deq) = (gu.dequantize(), down.dequantize());
    for (x, m) in layer.experts.iter().enumerate() {
        let (want_gu, want_down) = expected_mlp(m);
        assert_identical(&format!("expert {x} gate_up"), &gu_deq[x * 2 * i * h..][..2 * i * h], &want_gu);
        assert_identical(&format!("expert {x} down"), &down_deq[x * h * i..][..h * i], &want_down);
        // Bits: kept except −0 → +0; scales doubled, gate block rows then up block rows.
        let (gate_q, up_q) = (fn_quant(&m.gate, i, h), fn_quant(&m.up, i, h));
        let got_bits = &gu.data[x * 2 * i * h..][..2 * i * h];
        for (idx, (g, f)) in got_bits.iter().zip(gate_q.data.iter().chain(&up_q.data)).enumerate() {
            let want = if f.to_bits() == 0x80 { 0x00 } else { f.to_bits() };
            assert_eq!(g.to_bits(), want, "expert {x} gate_up byte {idx}");
        }
        let per = 2 * (i / 128) * (h / 128);
        let want_scales: Vec<f32> = gate_q.scales.iter().chain(&up_q.scales).map(|s| 2.0 * s).collect();
        assert_eq!(&gu.scales[x * per..][..per], &want_scales[..], "expert {x} gate_up scales");
    }
    // The checkpoints of random weights do contain −0 bytes, so the 0x80 rule was exercised.
    assert!(layer.experts.iter().any(|m| fn_quant(&m.gate, i, h).data.iter().any(|v| v.to_bits() == 0x80)));

    let shared = w.shared.as_ref().expect("the layer has a shared expert");
    let (want_gu, want_down) = expected_mlp(layer.shared.as_ref().unwrap());
    assert_eq!((shared.gate_up.n(), shared.gate_up.k(), shared.down.n(), shared.down.k()), (2 * is, h, h, is));
    assert_identical("shared gate_up", &shared.gate_up.download(&stream).unwrap().dequantize(), &want_gu);
    assert_identical("shared down", &shared.down.download(&stream).unwrap().dequantize(), &want_down);
}

#[test]
fn e4m3fn_target_keeps_bytes_and_scales() {
    let layer = moe(2, 128, 256, None, 2);
    let dir = tmp();
    write_deepseek_moe(dir.path(), 0, &layer, 1).unwrap();
    let w = Checkpoint::open(dir.path().join(SINGLE_FILE)).unwrap().moe_layer::<E4M3Fn>(0).unwrap();
    assert!(w.shared.is_none());
    let m = &layer.experts[1];
    let down = fn_quant(&m.down, 128, 256);
    let per = 128 * 256;
    let got: Vec<u8> = w.down.data[per..].iter().map(|v| v.to_bits()).collect();
    assert_eq!(got, down.data.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    assert_eq!(&w.down.scales[2..], &down.scales[..]);
    // And FNUZ dequantizes to the same values.
    let fnuz = Checkpoint::open(dir.path()).unwrap().moe_layer::<E4M3Fnuz>(0).unwrap();
    assert_identical("fn vs fnuz gate_up", &fnuz.gate_up.dequantize(), &w.gate_up.dequantize());
    assert_identical("fn vs fnuz down", &fnuz.down.dequantize(), &w.down.dequantize());
}

#[test]
fn sharded_index_loads_like_a_single_file() {
    let layer = moe(5, 256, 128, Some(128), 3);
    let (single, sharded) = (tmp(), tmp());
    write_deepseek_moe(single.path(), 2, &layer, 1).unwrap();
    let files = write_deepseek_moe(sharded.path(), 2, &layer, 4).unwrap();
    assert_eq!(files.len(), 5);
    assert_eq!(files[4], sharded.path().join(INDEX_FILE));
    assert!(!sharded.path().join(SINGLE_FILE).exists());

    // Some weight and its scale_inv landed in different shards.
    let index: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&files[4]).unwrap()).unwrap();
    let map = index["weight_map"].as_object().unwrap();
    assert_eq!(map.len(), (5 + 1) * 3 * 2);
    assert!(map.iter().filter(|(k, _)| k.ends_with(".weight")).any(|(k, v)| map[&format!("{k}_scale_inv")] != *v), "expected a linear split across two shards");

    for path in [sharded.path().to_path_buf(), files[4].clone()] {
        let ckpt = Checkpoint::open(&path).unwrap();
        assert_eq!(ckpt.files().len(), 4);
        let a = ckpt.moe_layer::<E4M3Fnuz>(2).unwrap();
        let b = Checkpoint::open(single.path()).unwrap().moe_layer::<E4M3Fnuz>(2).unwrap();
        assert_identical("gate_up", &a.gate_up.dequantize(), &b.gate_up.dequantize());
        assert_identical("down", &a.down.dequantize(), &b.down.dequantize());
        let (sa, sb) = (a.shared.unwrap(), b.shared.unwrap());
        assert_identical("shared gate_up", &sa.gate_up.dequantize(), &sb.gate_up.dequantize());
        assert_identical("shared down", &sa.down.dequantize(), &sb.down.dequantize());
    }
}

/// A checkpoint's layer runs: written → loaded → `into_layer` → forward in both layouts, equal
/// to the CPU reference of the checkpoint's weights with activations quantized where the device
/// quantizes them (the layer's own accuracy against f32 is tests/moe.rs's subject).
#[test]
fn checkpoint_layer_runs_in_both_layouts() {
    use fp8gemm::moe::{MoeReferenceWeights, ReferenceActivations};
    use fp8gemm::{MoeLayout, MoeOptions, MoeScratch, moe_reference, reference};
    use half::bf16;

    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let (e, h, i, is, top_k, t) = (4, 256, 128, 128, 2, 5);
    let dir = tmp();
    write_deepseek_moe(dir.path(), 1, &moe(e, h, i, Some(is), 7), 3).unwrap();
    let ckpt = Checkpoint::open(dir.path()).unwrap();
    let host = ckpt.moe_layer::<E4M3Fnuz>(1).unwrap();
    let layer = DeviceMoeWeights::upload(&ctx, &host).unwrap().into_layer(&ctx, MoeOptions { top_k, masked_max_tokens: 0 }).unwrap();
    assert_eq!((layer.experts(), layer.hidden(), layer.intermediate(), layer.shared_intermediate()), (e, h, i, Some(is)));

    let mut rng = StdRng::seed_from_u64(8);
    let x: Vec<f32> = common::randn_bf16(t * h, &mut rng);
    let ids: Vec<i32> = vec![0, 3, 1, 3, 2, 0, 3, 1, 0, 2];
    let w: Vec<f32> = (0..t * top_k).map(|_| rng.random_range(0.1f32..1.0)).collect();
    let (gu, dn) = (host.gate_up.dequantize(), host.down.dequantize());
    let sh = host.shared.as_ref().unwrap();
    let (sgu, sdn) = (sh.gate_up.dequantize(), sh.down.dequantize());
    let rw = MoeReferenceWeights { experts: e, hidden: h, intermediate: i, gate_up: &gu, down: &dn, shared: Some((is, &sgu, &sdn)) };
    let want = moe_reference::<E4M3Fnuz>(&rw, &x, &ids, &w, top_k, ReferenceActivations::DeviceMatched).unwrap();

    let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
    let (dx, dids, dw) = (ctx.upload(&xb).unwrap(), ctx.upload(&ids).unwrap(), ctx.upload(&w).unwrap());
    let mut scratch = MoeScratch::new(&layer, t, t).unwrap();
    for layout in [MoeLayout::Contiguous, MoeLayout::Masked] {
        let mut out = ctx.alloc_zeroed::<bf16>(t * h).unwrap();
        layer.forward_with(&stream, &dx, &dids, &dw, &mut out, &mut scratch, layout, &mut |_| Ok(())).unwrap();
        let got = out.download(&stream).unwrap();
        let diff = reference::calc_diff(&got, &want).unwrap();
        assert!(diff < 2e-5, "{layout:?}: calc_diff {diff:e} vs the device-matched reference");
        assert!(got.iter().any(|v| v.to_f32() != 0.0), "{layout:?}: output all zero");
    }
}

// ---- streaming (expert-by-expert) loading ----------------------------------------------------

/// Asserts two device weight sets hold the same bytes and scale bits, naming the first mismatch.
fn assert_same_bits<F: Fp8Format>(what: &str, got: (&[F], &[f32]), want: (&[F], &[f32])) {
    assert_eq!(got.0.len(), want.0.len(), "{what}: value count");
    for (idx, (g, w)) in got.0.iter().zip(want.0).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what}: byte {idx}");
    }
    assert_eq!(got.1.len(), want.1.len(), "{what}: scale count");
    for (idx, (g, w)) in got.1.iter().zip(want.1).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what}: scale {idx}");
    }
}

/// The streaming loader (`DeviceMoeWeights::load`, one expert at a time through
/// `upload_group`) puts exactly the bytes on the device that the whole-layer host path
/// (`moe_layer` + `upload`) does: routed experts and shared expert, from a sharded checkpoint.
#[test]
fn streaming_loader_equals_the_whole_layer_upload() {
    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let (e, h, i, is) = (5, 384, 256, 128);
    let dir = tmp();
    write_deepseek_moe(dir.path(), 4, &moe(e, h, i, Some(is), 21), 3).unwrap();
    let ckpt = Checkpoint::open(dir.path()).unwrap();
    let host = ckpt.moe_layer::<E4M3Fnuz>(4).unwrap();
    let whole = DeviceMoeWeights::upload(&ctx, &host).unwrap();
    let streamed = DeviceMoeWeights::<E4M3Fnuz>::load(&ctx, &ckpt, 4).unwrap();
    assert_eq!((streamed.hidden, streamed.intermediate), (h, i));
    assert_eq!((streamed.gate_up.groups(), streamed.gate_up.n(), streamed.gate_up.k()), (e, 2 * i, h));
    assert_eq!((streamed.down.groups(), streamed.down.n(), streamed.down.k()), (e, h, i));
    for (what, a, b) in [("gate_up", &streamed.gate_up, &whole.gate_up), ("down", &streamed.down, &whole.down)] {
        let (a, b) = (a.download(&stream).unwrap(), b.download(&stream).unwrap());
        assert_same_bits(what, (&a.data, &a.scales), (&b.data, &b.scales));
    }
    // And both equal the host-side weights, so neither upload lost anything.
    let gu = streamed.gate_up.download(&stream).unwrap();
    assert_same_bits("gate_up vs host", (&gu.data, &gu.scales), (&host.gate_up.data, &host.gate_up.scales));
    let dn = streamed.down.download(&stream).unwrap();
    assert_same_bits("down vs host", (&dn.data, &dn.scales), (&host.down.data, &host.down.scales));
    let (ss, sw) = (streamed.shared.as_ref().expect("shared expert"), whole.shared.as_ref().unwrap());
    for (what, a, b) in [("shared gate_up", &ss.gate_up, &sw.gate_up), ("shared down", &ss.down, &sw.down)] {
        let (a, b) = (a.download(&stream).unwrap(), b.download(&stream).unwrap());
        assert_eq!((a.n, a.k), (b.n, b.k), "{what}: shape");
        assert_same_bits(what, (&a.data, &a.scales), (&b.data, &b.scales));
    }
    // The streaming load released its experts' mapped pages; reading them again (after a second
    // streaming load of the same `Checkpoint`) sees the same file contents.
    let again = DeviceMoeWeights::<E4M3Fnuz>::load(&ctx, &ckpt, 4).unwrap().gate_up.download(&stream).unwrap();
    assert_same_bits("second streaming load", (&again.data, &again.scales), (&host.gate_up.data, &host.gate_up.scales));
    let reread = ckpt.moe_layer::<E4M3Fnuz>(4).unwrap();
    assert_same_bits("re-read down", (&reread.down.data, &reread.down.scales), (&host.down.data, &host.down.scales));
    // Without a shared expert, none is loaded.
    let dir2 = tmp();
    write_deepseek_moe(dir2.path(), 0, &moe(2, 128, 128, None, 22), 1).unwrap();
    let w = DeviceMoeWeights::<E4M3Fnuz>::load(&ctx, &Checkpoint::open(dir2.path()).unwrap(), 0).unwrap();
    assert!(w.shared.is_none());
}

/// A NaN byte in one expert (not the first) fails the streaming load with the error naming that
/// expert's tensor and the element, and an expert whose shape differs from expert 0's likewise.
#[test]
fn streaming_loader_names_the_bad_expert() {
    let ctx = common::checked_context();
    let name = format!("{}.up_proj", expert_prefix(0, 2));
    let mut tensors = two_experts();
    tensors.extend(raw_expert(2));
    let mut w = raw_weight(&name, 128, 256, 0x38);
    w.bytes[3 * 256 + 255] = 0x7F;
    let dir = tmp();
    let path = dir.path().join("x.safetensors");
    write_raw(&path, &replace(tensors, w));
    let err = DeviceMoeWeights::<E4M3Fnuz>::load(&ctx, &Checkpoint::open(&path).unwrap(), 0).err().expect("a NaN error");
    assert!(matches!(&err, Error::Fp8Nan { tensor, index: [3, 255], bits: 0x7F } if *tensor == format!("{name}.weight")), "{err}");
    assert!(err.to_string().contains("experts.2.up_proj"), "{err}");

    // Expert 1's down_proj [256, 256] instead of [H, I] = [256, 128].
    let dname = format!("{}.down_proj", expert_prefix(0, 1));
    let mut tensors = replace(two_experts(), raw_weight(&dname, 256, 256, 0x38));
    tensors = replace(tensors, raw_scales(&dname, 2, 2, 0.01));
    write_raw(&path, &tensors);
    let err = DeviceMoeWeights::<E4M3Fnuz>::load(&ctx, &Checkpoint::open(&path).unwrap(), 0).err().expect("a shape error");
    assert!(matches!(&err, Error::TensorShape { tensor, actual, .. } if *tensor == format!("{dname}.weight") && *actual == vec![256, 256]), "{err}");
}

/// `n × k` weights of group `g` with values and scales that differ per group (scales in range).
fn group_weights(g: usize, n: usize, k: usize, seed: u64) -> QuantizedWeights<E4M3Fnuz> {
    let mut rng = StdRng::seed_from_u64(seed ^ (g as u64).wrapping_mul(0x9E37_79B9));
    let x: Vec<f32> = (0..n * k).map(|_| rng.random_range(-2.0f32..2.0) * (g + 1) as f32).collect();
    QuantizedWeights::<E4M3Fnuz>::quantize(&x, n, k).unwrap()
}

/// Uploads `groups` groups one by one (in the order `order`) into `alloc`ed weights and checks
/// the download equals both the host data and a whole [`DeviceGroupedWeights::upload`], byte
/// for byte.
fn check_per_group_upload(ctx: &Context, groups: usize, n: usize, k: usize, order: &[usize], seed: u64) {
    let stream = Stream::new(ctx).unwrap();
    let parts: Vec<_> = (0..groups).map(|g| group_weights(g, n, k, seed)).collect();
    let host = GroupedQuantizedWeights::from_groups(&parts).unwrap();
    let whole = DeviceGroupedWeights::upload(ctx, &host).unwrap();
    let mut per = DeviceGroupedWeights::<E4M3Fnuz>::alloc(ctx, groups, n, k).unwrap();
    for &g in order {
        per.upload_group(&stream, g, &parts[g]).unwrap();
    }
    let (a, b) = (per.download(&stream).unwrap(), whole.download(&stream).unwrap());
    assert_eq!((a.groups, a.n, a.k), (groups, n, k));
    assert_same_bits("per-group vs host", (&a.data, &a.scales), (&host.data, &host.scales));
    assert_same_bits("per-group vs whole upload", (&a.data, &a.scales), (&b.data, &b.scales));
}

#[test]
fn upload_group_round_trips_like_the_whole_upload() {
    let ctx = common::checked_context();
    // Forward and backward order, sizes that are and are not multiples of 128.
    check_per_group_upload(&ctx, 4, 256, 384, &[0, 1, 2, 3], 1);
    check_per_group_upload(&ctx, 3, 200, 130, &[2, 1, 0], 2);
    // A group written twice keeps the last write; the others are untouched.
    let stream = Stream::new(&ctx).unwrap();
    let mut w = DeviceGroupedWeights::<E4M3Fnuz>::alloc(&ctx, 3, 128, 256).unwrap();
    let (a, b) = (group_weights(1, 128, 256, 3), group_weights(1, 128, 256, 4));
    w.upload_group(&stream, 1, &a).unwrap();
    w.upload_group(&stream, 1, &b).unwrap();
    let got = w.download(&stream).unwrap();
    let per = 128 * 256;
    assert!(got.data[..per].iter().chain(&got.data[2 * per..]).all(|v| v.to_bits() == 0), "groups 0 and 2 stay zero");
    assert_same_bits("group 1", (&got.data[per..2 * per], &got.scales[2..4]), (&b.data, &b.scales));
    assert!(got.scales[..2].iter().chain(&got.scales[4..]).all(|&s| s == 0.0));
}

#[test]
fn upload_group_rejects_bad_arguments_and_writes_nothing() {
    let ctx = common::checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let (groups, n, k) = (3, 256, 128);
    let mut w = DeviceGroupedWeights::<E4M3Fnuz>::alloc(&ctx, groups, n, k).unwrap();
    let good = group_weights(0, n, k, 9);

    // g out of range.
    for g in [3, 4, usize::MAX] {
        let err = w.upload_group(&stream, g, &good).unwrap_err();
        assert!(matches!(&err, Error::Shape { arg: "g", expected, actual } if expected.contains("0..3") && *actual == g.to_string()), "{err}");
    }
    // Wrong shape (transposed), naming the group and the expected shape.
    let transposed = group_weights(0, k, n, 9);
    let err = w.upload_group(&stream, 1, &transposed).unwrap_err();
    assert!(
        matches!(&err, Error::Shape { arg: "w", expected, actual } if expected.contains("group 1") && expected.contains("256 × 128") && actual == "128 × 256"),
        "{err}"
    );
    // Buffers that disagree with the shape (the fields are public).
    let mut short = good.clone();
    short.data.pop();
    let err = w.upload_group(&stream, 2, &short).unwrap_err();
    assert!(matches!(&err, Error::Shape { arg: "w", expected, .. } if expected.contains("data") && expected.contains("group 2")), "{err}");
    let mut long = good.clone();
    long.scales.push(1.0);
    let err = w.upload_group(&stream, 0, &long).unwrap_err();
    assert!(matches!(&err, Error::Shape { arg: "w", expected, .. } if expected.contains("scales") && expected.contains("group 0")), "{err}");
    // A scale outside the kernels' range: NaN, infinity, too small, too large.
    for value in [f32::NAN, f32::INFINITY, 1e-30, f32::from_bits((127 + 95) << 23)] {
        let mut bad = good.clone();
        bad.scales[1] = value;
        let err = w.upload_group(&stream, 1, &bad).unwrap_err();
        assert!(matches!(&err, Error::ScaleRange { arg: "w.scales", index: 1, value: v } if v.to_bits() == value.to_bits()), "{err}");
    }
    // A stream of another context.
    let other = common::checked_context();
    let foreign = Stream::new(&other).unwrap();
    let err = w.upload_group(&foreign, 0, &good).unwrap_err();
    assert!(matches!(err, Error::ForeignBuffer { .. }), "{err}");

    // None of that wrote anything.
    let got = w.download(&stream).unwrap();
    assert!(got.data.iter().all(|v| v.to_bits() == 0), "a rejected upload wrote values");
    assert!(got.scales.iter().all(|&s| s == 0.0), "a rejected upload wrote scales");
}

// ---- error classes -------------------------------------------------------------------------

/// A raw tensor for hand-made (malformed) checkpoints.
struct Raw {
    name: String,
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

fn raw_weight(name: &str, n: usize, k: usize, byte: u8) -> Raw {
    Raw { name: format!("{name}.weight"), dtype: Dtype::F8_E4M3, shape: vec![n, k], bytes: vec![byte; n * k] }
}

fn raw_scales(name: &str, rows: usize, cols: usize, value: f32) -> Raw {
    Raw {
        name: format!("{name}.weight_scale_inv"),
        dtype: Dtype::F32,
        shape: vec![rows, cols],
        bytes: std::iter::repeat_n(value.to_le_bytes(), rows * cols).flatten().collect(),
    }
}

/// A valid linear `[n, k]` (all values 1.0 in E4M3FN = 0x38, scales 0.01).
fn raw_linear(name: &str, n: usize, k: usize) -> Vec<Raw> {
    vec![raw_weight(name, n, k, 0x38), raw_scales(name, n.div_ceil(128), k.div_ceil(128), 0.01)]
}

/// A valid expert of layer 0 (`I = 128`, `H = 256`).
fn raw_expert(e: usize) -> Vec<Raw> {
    let p = expert_prefix(0, e);
    let mut v = raw_linear(&format!("{p}.gate_proj"), 128, 256);
    v.extend(raw_linear(&format!("{p}.up_proj"), 128, 256));
    v.extend(raw_linear(&format!("{p}.down_proj"), 256, 128));
    v
}

fn write_raw(path: &Path, tensors: &[Raw]) {
    let views = tensors.iter().map(|t| (t.name.clone(), TensorView::new(t.dtype, t.shape.clone(), &t.bytes).unwrap()));
    safetensors::serialize_to_file(views, None, path).unwrap();
}

/// Writes `tensors` as a single file and loads layer 0 as E4M3FNUZ, both ways: staged on the
/// host ([`Checkpoint::moe_layer`]) and streamed to the device expert by expert
/// ([`DeviceMoeWeights::load`]). The two must agree — both succeed, or both fail with the same
/// error (same variant, same message) — and the host path's result is returned.
fn load_raw(tensors: Vec<Raw>) -> Result<(), Error> {
    let dir = tmp();
    let path = dir.path().join("x.safetensors");
    write_raw(&path, &tensors);
    let ckpt = Checkpoint::open(&path)?;
    let host = ckpt.moe_layer::<E4M3Fnuz>(0).map(|_| ());
    let ctx = common::checked_context();
    let streamed = DeviceMoeWeights::<E4M3Fnuz>::load(&ctx, &ckpt, 0).map(|_| ());
    match (&host, &streamed) {
        (Ok(()), Ok(())) => {}
        (Err(a), Err(b)) => {
            assert_eq!(std::mem::discriminant(a), std::mem::discriminant(b), "host: {a}; streamed: {b}");
            assert_eq!(a.to_string(), b.to_string(), "the streaming loader reports the same error");
        }
        (a, b) => panic!("the loaders disagree: host {a:?}, streamed {b:?}"),
    }
    host
}

/// Replaces the tensor named `name` in a set of tensors.
fn replace(mut v: Vec<Raw>, t: Raw) -> Vec<Raw> {
    let slot = v.iter_mut().find(|x| x.name == t.name).expect("tensor to replace");
    *slot = t;
    v
}

fn two_experts() -> Vec<Raw> {
    let mut v = raw_expert(0);
    v.extend(raw_expert(1));
    v
}

#[test]
fn hand_made_valid_layer_loads() {
    load_raw(two_experts()).unwrap();
}

#[test]
fn missing_tensors_are_named() {
    let p1 = expert_prefix(0, 1);
    let up_w = format!("{p1}.up_proj.weight");
    let v: Vec<Raw> = two_experts().into_iter().filter(|t| t.name != up_w).collect();
    match load_raw(v).unwrap_err() {
        Error::MissingTensor { tensor, path } => {
            assert_eq!(tensor, up_w);
            assert!(path.ends_with("x.safetensors"), "{}", path.display());
        }
        e => panic!("unexpected {e}"),
    }
    // A missing scale.
    let s = format!("{p1}.down_proj.weight_scale_inv");
    let v: Vec<Raw> = two_experts().into_iter().filter(|t| t.name != s).collect();
    assert!(matches!(load_raw(v).unwrap_err(), Error::MissingTensor { tensor, .. } if tensor == s));
    // A gap in the expert ids: 0 and 2 present, 1 missing.
    let mut v = raw_expert(0);
    v.extend(raw_expert(2));
    let want = format!("{p1}.gate_proj.weight");
    assert!(matches!(load_raw(v).unwrap_err(), Error::MissingTensor { tensor, .. } if tensor == want));
    // A stray huge expert id (usize::MAX): reported as the first missing expert, nothing sized
    // from it.
    let mut v = two_experts();
    v.extend(raw_linear(&format!("{}.gate_proj", expert_prefix(0, usize::MAX)), 128, 256));
    let want = format!("{}.gate_proj.weight", expert_prefix(0, 2));
    assert!(matches!(load_raw(v).unwrap_err(), Error::MissingTensor { tensor, .. } if tensor == want));
    // No experts at all for the layer.
    let err = load_raw(raw_linear("model.layers.0.self_attn.q_proj", 128, 128)).unwrap_err();
    assert!(matches!(&err, Error::MissingTensor { tensor, .. } if tensor == "model.layers.0.mlp.experts.0.gate_proj.weight"), "{err}");
    // A shared expert with only some of its linears.
    let mut v = two_experts();
    v.extend(raw_linear(&format!("{}.gate_proj", shared_expert_prefix(0)), 128, 256));
    let want = format!("{}.up_proj.weight", shared_expert_prefix(0));
    assert!(matches!(load_raw(v).unwrap_err(), Error::MissingTensor { tensor, .. } if tensor == want));
}

#[test]
fn wrong_dtypes_are_named() {
    let name = format!("{}.gate_proj", expert_prefix(0, 1));
    let mut w = raw_weight(&name, 128, 256, 0x38);
    w.dtype = Dtype::U8;
    let err = load_raw(replace(two_experts(), w)).unwrap_err();
    assert!(matches!(&err, Error::TensorDtype { tensor, expected: "F8_E4M3", actual } if *tensor == format!("{name}.weight") && actual == "U8"), "{err}");
    assert!(err.to_string().contains("expected dtype F8_E4M3, got U8"), "{err}");
    // E5M2 weights are not DeepSeek's format either.
    let mut w = raw_weight(&name, 128, 256, 0x38);
    w.dtype = Dtype::F8_E5M2;
    assert!(matches!(load_raw(replace(two_experts(), w)).unwrap_err(), Error::TensorDtype { actual, .. } if actual == "F8_E5M2"));
    // BF16 scales (2 bytes each: 2 × 2 scales = 8 bytes).
    let s = Raw { name: format!("{name}.weight_scale_inv"), dtype: Dtype::BF16, shape: vec![1, 2], bytes: vec![0; 4] };
    let err = load_raw(replace(two_experts(), s)).unwrap_err();
    assert!(matches!(&err, Error::TensorDtype { expected: "F32", actual, .. } if actual == "BF16"), "{err}");
}

#[test]
fn wrong_shapes_are_named() {
    let p1 = expert_prefix(0, 1);
    // Rank 3.
    let w = Raw { name: format!("{p1}.down_proj.weight"), dtype: Dtype::F8_E4M3, shape: vec![2, 128, 128], bytes: vec![0x38; 2 * 128 * 128] };
    let err = load_raw(replace(two_experts(), w)).unwrap_err();
    assert!(matches!(&err, Error::TensorShape { actual, .. } if *actual == vec![2, 128, 128]), "{err}");
    // up_proj disagrees with gate_proj.
    let mut v: Vec<Raw> = two_experts().into_iter().filter(|t| !t.name.starts_with(&format!("{p1}.up_proj"))).collect();
    v.extend(raw_linear(&format!("{p1}.up_proj"), 256, 256));
    let err = load_raw(v).unwrap_err();
    assert!(matches!(&err, Error::TensorShape { tensor, actual, .. } if *tensor == format!("{p1}.up_proj.weight") && *actual == vec![256, 256]), "{err}");
    assert!(err.to_string().contains("[128, 256]"), "{err}");
    // Expert 1 with another intermediate size than expert 0.
    let mut v = raw_expert(0);
    v.extend(raw_linear(&format!("{p1}.gate_proj"), 256, 256));
    v.extend(raw_linear(&format!("{p1}.up_proj"), 256, 256));
    v.extend(raw_linear(&format!("{p1}.down_proj"), 256, 256));
    let err = load_raw(v).unwrap_err();
    assert!(matches!(&err, Error::TensorShape { tensor, .. } if *tensor == format!("{p1}.gate_proj.weight")), "{err}");
    // down_proj transposed.
    let mut v: Vec<Raw> = two_experts().into_iter().filter(|t| !t.name.starts_with(&format!("{p1}.down_proj"))).collect();
    v.extend(raw_linear(&format!("{p1}.down_proj"), 128, 256));
    assert!(matches!(load_raw(v).unwrap_err(), Error::TensorShape { tensor, .. } if tensor == format!("{p1}.down_proj.weight")));
}

#[test]
fn intermediate_not_a_multiple_of_128_cannot_be_fused() {
    let p = expert_prefix(0, 0);
    let mut v = raw_linear(&format!("{p}.gate_proj"), 192, 256);
    v.extend(raw_linear(&format!("{p}.up_proj"), 192, 256));
    v.extend(raw_linear(&format!("{p}.down_proj"), 256, 192));
    let err = load_raw(v).unwrap_err();
    assert!(matches!(&err, Error::TensorShape { tensor, actual, .. } if *tensor == format!("{p}.gate_proj.weight") && *actual == vec![192, 256]), "{err}");
    assert!(err.to_string().contains("multiple of 128"), "{err}");
}

#[test]
fn scale_grid_mismatch_is_named() {
    let name = format!("{}.up_proj", expert_prefix(0, 0));
    // [128, 256] needs a [1, 2] grid.
    for shape in [[2, 2], [1, 1], [2, 1]] {
        let s = raw_scales(&name, shape[0], shape[1], 0.01);
        let err = load_raw(replace(two_experts(), s)).unwrap_err();
        match &err {
            Error::ScaleGrid { tensor, expected, weight, actual } => {
                assert_eq!(tensor, &format!("{name}.weight_scale_inv"));
                assert_eq!((*expected, *weight, actual.clone()), ([1, 2], [128, 256], shape.to_vec()));
            }
            e => panic!("unexpected {e}"),
        }
    }
    // Rank 1 grid.
    let s = Raw { name: format!("{name}.weight_scale_inv"), dtype: Dtype::F32, shape: vec![2], bytes: vec![0; 8] };
    assert!(matches!(load_raw(replace(two_experts(), s)).unwrap_err(), Error::ScaleGrid { actual, .. } if actual == vec![2]));
}

#[test]
fn fn_nan_bytes_are_rejected_with_their_position() {
    let name = format!("{}.down_proj", expert_prefix(0, 1));
    for bits in [0x7Fu8, 0xFF] {
        let mut w = raw_weight(&name, 256, 128, 0x38);
        w.bytes[200 * 128 + 77] = bits;
        let err = load_raw(replace(two_experts(), w)).unwrap_err();
        assert!(matches!(&err, Error::Fp8Nan { tensor, index: [200, 77], bits: b } if *tensor == format!("{name}.weight") && *b == bits), "{err}");
    }
    // 0x80 (−0) and 0xFE (−448) are fine.
    let mut w = raw_weight(&name, 256, 128, 0x80);
    w.bytes[5] = 0xFE;
    load_raw(replace(two_experts(), w)).unwrap();
}

#[test]
fn scales_outside_the_kernels_range_are_rejected() {
    let name = format!("{}.gate_proj", expert_prefix(0, 1));
    let big = f32::from_bits((127 + 93) << 23); // 2^93: fine for E4M3FN, 2^94 after doubling
    for value in [f32::NAN, f32::INFINITY, f32::from_bits((127 + 95) << 23), f32::from_bits((127 - 30) << 23), big] {
        let mut s = raw_scales(&name, 1, 2, 0.01);
        s.bytes[4..8].copy_from_slice(&value.to_le_bytes());
        let err = load_raw(replace(two_experts(), s)).unwrap_err();
        match &err {
            Error::CheckpointScale { tensor, index, value: v, converted, format } => {
                assert_eq!(tensor, &format!("{name}.weight_scale_inv"));
                assert_eq!(*index, [0, 1]);
                assert_eq!(v.to_bits(), value.to_bits());
                assert_eq!(converted.to_bits(), (value * 2.0).to_bits());
                assert_eq!(*format, "e4m3fnuz");
            }
            e => panic!("{value:e}: unexpected {e}"),
        }
    }
    // 2^93 is within range for the E4M3FN target (no doubling); 0 is allowed.
    let dir = tmp();
    let path = dir.path().join("x.safetensors");
    let mut s = raw_scales(&name, 1, 2, 0.0);
    s.bytes[4..8].copy_from_slice(&big.to_le_bytes());
    write_raw(&path, &replace(two_experts(), s));
    let w = Checkpoint::open(&path).unwrap().moe_layer::<E4M3Fn>(0).unwrap();
    let per = 2 * 2; // [2·I/128, H/128] = [2, 2] per expert
    assert_eq!(&w.gate_up.scales[per..per + 2], &[0.0, big]);
}

#[test]
fn io_and_parse_errors_name_the_file() {
    let dir = tmp();
    // Nothing there.
    let missing = dir.path().join("nope");
    assert!(matches!(Checkpoint::open(&missing).unwrap_err(), Error::CheckpointIo { path, .. } if path == missing));
    // A directory without a checkpoint.
    let err = Checkpoint::open(dir.path()).unwrap_err();
    assert!(matches!(&err, Error::CheckpointIo { path, .. } if path == dir.path()), "{err}");
    assert!(err.to_string().contains(INDEX_FILE), "{err}");

    // Not safetensors: empty, garbage, truncated, a header length past the end.
    let valid = dir.path().join("valid.safetensors");
    write_raw(&valid, &raw_expert(0));
    let bytes = std::fs::read(&valid).unwrap();
    let mut huge_header = bytes.clone();
    huge_header[..8].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
    for (name, contents) in [
        ("empty", vec![]),
        ("garbage", b"this is not a safetensors file at all".to_vec()),
        ("truncated", bytes[..bytes.len() - 1].to_vec()),
        ("header", huge_header),
        ("json", [&16u64.to_le_bytes()[..], b"{not json at all"].concat()),
    ] {
        let path = dir.path().join(format!("{name}.safetensors"));
        std::fs::write(&path, contents).unwrap();
        let err = Checkpoint::open(&path).unwrap_err();
        assert!(matches!(&err, Error::CheckpointParse { path: p, .. } if *p == path), "{name}: {err}");
    }

    // Index problems.
    let index_err = |text: &str| {
        let sub = tempfile::tempdir_in(dir.path()).unwrap();
        std::fs::write(sub.path().join(INDEX_FILE), text).unwrap();
        Checkpoint::open(sub.path()).unwrap_err()
    };
    assert!(matches!(index_err("{"), Error::CheckpointParse { detail, .. } if detail.contains("invalid JSON")));
    assert!(matches!(index_err("{\"metadata\": {}}"), Error::CheckpointParse { detail, .. } if detail.contains("weight_map")));
    assert!(matches!(index_err("{\"weight_map\": {\"a\": 3}}"), Error::CheckpointParse { detail, .. } if detail.contains("weight_map[\"a\"]")));
    for escape in ["../x.safetensors", "/etc/passwd", ""] {
        let err = index_err(&format!("{{\"weight_map\": {{\"a.weight\": \"{escape}\"}}}}"));
        assert!(matches!(&err, Error::CheckpointParse { detail, .. } if detail.contains("relative")), "{escape}: {err}");
    }
}

#[test]
fn index_naming_a_missing_or_wrong_shard() {
    let dir = tmp();
    let layer = moe(2, 128, 128, None, 4);
    let files = write_deepseek_moe(dir.path(), 0, &layer, 2).unwrap();
    // Delete a shard: the error names it when a tensor in it is first needed.
    std::fs::remove_file(&files[1]).unwrap();
    let ckpt = Checkpoint::open(dir.path()).unwrap();
    let err = ckpt.moe_layer::<E4M3Fnuz>(0).unwrap_err();
    assert!(matches!(&err, Error::CheckpointIo { path, .. } if *path == files[1]), "{err}");

    // An index entry whose shard does not hold the tensor.
    let other = tmp();
    let files = write_deepseek_moe(other.path(), 0, &layer, 2).unwrap();
    let text = std::fs::read_to_string(&files[2]).unwrap();
    let mut index: serde_json::Value = serde_json::from_str(&text).unwrap();
    let name = format!("{}.gate_proj.weight", expert_prefix(0, 0));
    let shard = index["weight_map"][&name].as_str().unwrap().to_string();
    let wrong = if files[0].ends_with(&shard) { &files[1] } else { &files[0] };
    index["weight_map"][&name] = serde_json::Value::String(wrong.file_name().unwrap().to_str().unwrap().into());
    std::fs::write(&files[2], index.to_string()).unwrap();
    let err = Checkpoint::open(other.path()).unwrap().moe_layer::<E4M3Fnuz>(0).unwrap_err();
    assert!(matches!(&err, Error::MissingTensor { tensor, path } if *tensor == name && path == wrong), "{err}");
}

#[test]
fn device_format_must_match_the_architecture() {
    let ctx = common::checked_context();
    let dir = tmp();
    write_deepseek_moe(dir.path(), 0, &moe(1, 128, 128, None, 5), 1).unwrap();
    let ckpt = Checkpoint::open(dir.path()).unwrap();
    // The emulator is gfx942: E4M3FN weights are refused before anything is read.
    let err = DeviceMoeWeights::<E4M3Fn>::load(&ctx, &ckpt, 0).err().expect("a format error");
    assert!(matches!(err, Error::Format { expected: "e4m3fnuz", actual: "e4m3fn", .. }), "{err}");
}

#[test]
fn writer_rejects_bad_arguments() {
    let dir = tmp();
    let err = write_deepseek_moe(dir.path(), 0, &moe(1, 128, 128, None, 6), 0).unwrap_err();
    assert!(matches!(err, Error::Shape { arg: "shards", .. }), "{err}");
    let mut bad = moe(2, 128, 128, None, 6);
    bad.experts[1].up.pop();
    let err = write_deepseek_moe(dir.path(), 0, &bad, 1).unwrap_err();
    assert!(matches!(&err, Error::Shape { arg: "moe", expected, .. } if expected.contains("experts.1") && expected.contains("up")), "{err}");
    let mut nan = moe(1, 128, 128, None, 6);
    nan.experts[0].gate[3] = f32::NAN;
    assert!(matches!(write_deepseek_moe(dir.path(), 0, &nan, 1).unwrap_err(), Error::Quant(_)));
}

// ---- properties ----------------------------------------------------------------------------

fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![(1usize..4).prop_map(|b| 128 * b), 1usize..400]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Any group count and shape, groups uploaded in any order: the same bytes as the whole upload.
    #[test]
    fn upload_group_in_any_order((groups, n, k) in (1usize..5, 1usize..300, 1usize..300), seed in any::<u64>(), shuffle in any::<u64>()) {
        let ctx = common::checked_context();
        let mut order: Vec<usize> = (0..groups).collect();
        let mut rng = StdRng::seed_from_u64(shuffle);
        for j in (1..order.len()).rev() {
            order.swap(j, rng.random_range(0..=j));
        }
        check_per_group_upload(&ctx, groups, n, k, &order, seed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any `[N, K]` with any non-NaN bytes (±0 included) and any scales in range: the FNUZ load
    /// dequantizes to exactly the FN values, bytes kept except 0x80 → 0x00, scales doubled; the
    /// FN load is the file as written. With a NaN byte planted, the first NaN is reported.
    #[test]
    fn any_linear_round_trips((n, k) in (dim(), dim()), seed in any::<u64>(), nan_at in proptest::option::of(any::<prop::sample::Index>())) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut bytes: Vec<u8> = (0..n * k).map(|_| loop {
            let b: u8 = rng.random();
            if b & 0x7F != 0x7F { break b; }
        }).collect();
        // Plenty of ±0.
        for _ in 0..(n * k / 8) {
            let idx = rng.random_range(0..n * k);
            bytes[idx] = if rng.random() { 0x80 } else { 0x00 };
        }
        let grid = n.div_ceil(128) * k.div_ceil(128);
        let scales: Vec<f32> = (0..grid).map(|_| {
            if rng.random_range(0..8) == 0 { 0.0 } else { rng.random_range(-20.0f32..20.0).exp2() * if rng.random() { 1.0 } else { -1.0 } }
        }).collect();
        if let Some(at) = nan_at {
            let idx = at.index(n * k);
            bytes[idx] = if rng.random() { 0x7F } else { 0xFF };
        }
        let w = QuantizedWeights::<E4M3Fn>::from_parts(bytes.iter().map(|&b| E4M3Fn::from_bits(b)).collect(), scales.clone(), n, k).unwrap();
        let dir = tmp();
        let path = dir.path().join("linear.safetensors");
        write_fp8_linears(&path, &[("model.layers.7.self_attn.o_proj", &w)]).unwrap();
        let ckpt = Checkpoint::open(&path).unwrap();
        prop_assert!(ckpt.contains("model.layers.7.self_attn.o_proj.weight_scale_inv"));

        let fnuz = ckpt.linear::<E4M3Fnuz>("model.layers.7.self_attn.o_proj");
        let fnl = ckpt.linear::<E4M3Fn>("model.layers.7.self_attn.o_proj");
        if let Some(first) = bytes.iter().position(|&b| b & 0x7F == 0x7F) {
            for err in [fnuz.unwrap_err(), fnl.unwrap_err()] {
                let ok = matches!(err, Error::Fp8Nan { index, bits, .. } if index == [first / k, first % k] && bits == bytes[first]);
                prop_assert!(ok);
            }
            return Ok(());
        }
        let (fnuz, fnl) = (fnuz.unwrap(), fnl.unwrap());
        prop_assert_eq!((fnuz.n, fnuz.k, fnl.n, fnl.k), (n, k, n, k));
        let want = w.dequantize();
        for (idx, ((a, b), c)) in fnuz.dequantize().iter().zip(fnl.dequantize()).zip(&want).enumerate() {
            prop_assert!(same(*a, *c) && b.to_bits() == c.to_bits(), "[{}]: fnuz {:e}, fn {:e}, want {:e}", idx, a, b, c);
        }
        for (idx, (q, &b)) in fnuz.data.iter().zip(&bytes).enumerate() {
            prop_assert_eq!(q.to_bits(), if b == 0x80 { 0 } else { b }, "byte {}", idx);
            prop_assert!(!q.to_f32().is_nan());
        }
        prop_assert_eq!(fnl.data.iter().map(|q| q.to_bits()).collect::<Vec<_>>(), bytes);
        prop_assert_eq!(fnuz.scales, scales.iter().map(|s| 2.0 * s).collect::<Vec<_>>());
        prop_assert_eq!(fnl.scales, scales);
    }

    /// Corrupting bytes of a valid file anywhere (header or data) never panics: the load
    /// succeeds or returns a typed error.
    #[test]
    fn corrupted_files_never_panic(seed in any::<u64>(), flips in 1usize..6, in_header in any::<bool>()) {
        let dir = tmp();
        let path = dir.path().join("x.safetensors");
        write_raw(&path, &raw_expert(0));
        let mut bytes = std::fs::read(&path).unwrap();
        let header_end = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let mut rng = StdRng::seed_from_u64(seed);
        for _ in 0..flips {
            let idx = if in_header { rng.random_range(0..header_end) } else { rng.random_range(header_end..bytes.len()) };
            bytes[idx] = rng.random();
        }
        std::fs::write(&path, &bytes).unwrap();
        let result = Checkpoint::open(&path).and_then(|c| c.moe_layer::<E4M3Fnuz>(0).map(|_| ()));
        if let Err(e) = result {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}

#[test]
fn names_and_paths() {
    let dir = tmp();
    let w = QuantizedWeights::<E4M3Fn>::quantize(&[0.5f32; 4 * 8], 4, 8).unwrap();
    let path: PathBuf = dir.path().join("a.safetensors");
    write_fp8_linears(&path, &[("b", &w), ("a", &w)]).unwrap();
    let ckpt = Checkpoint::open(&path).unwrap();
    assert_eq!(ckpt.names(), vec!["a.weight", "a.weight_scale_inv", "b.weight", "b.weight_scale_inv"]);
    assert_eq!(ckpt.path(), path.as_path());
    assert_eq!(ckpt.files(), std::slice::from_ref(&path));
    let q = ckpt.linear::<E4M3Fnuz>("a").unwrap();
    assert_eq!(q.scales, vec![2.0 * w.scales[0]]);
    assert_eq!(q.data.iter().map(|v| v.to_f32() * q.scales[0]).collect::<Vec<_>>(), vec![w.dequantize()[0]; 32]);
    assert!(matches!(ckpt.linear::<E4M3Fnuz>("c").unwrap_err(), Error::MissingTensor { tensor, .. } if tensor == "c.weight"));
}
