//! The MoE routing kernels and `MoeLayer` (host/src/moe.rs, device/src/moe.rs) on the emulator
//! with every checking mode on: route (contiguous and masked) against the CPU index math
//! (`route_reference`) over random T, k, E (experts with zero tokens, all tokens on one expert,
//! duplicate ids in one token's top-k, invalid ids, masked overflow), the gather + quantize bit
//! for bit against the CPU recipe, the unpermute bit for bit against its CPU formula, the whole
//! layer against the CPU f32 reference (`moe_reference`, calc_diff < 1e-3 and element bounds) and
//! the device-matched reference (tight bounds), contiguous and masked, with and without a shared
//! expert, graph capture/replay, and the typed errors.

mod common;

use common::{checked_context, randn_bf16, random_ids};
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::moe::{
    MoeReferenceWeights, ReferenceActivations, RouteBuffers, contiguous_rows_bound, contiguous_rows_bound_aligned, expected_layout, moe_gather_quantize,
    moe_route_contiguous, moe_route_contiguous_aligned, moe_route_masked, moe_silu_mul_quantize, moe_unpermute, route_reference, route_reference_aligned,
    route_work_len,
};
use fp8gemm::quant::{GroupedQuantizedWeights, QuantizedActivations, QuantizedWeights};
use fp8gemm::{
    ActivationsViewMut, CaptureMode, Context, DeviceGroupedWeights, DeviceWeights, Error, MoeLayer, MoeLayout, MoeOptions, MoeScratch, MoeStage, Stream,
    WeightLayout, moe_reference, reference,
};
use fp8gemm_device::moe::f32_to_bf16_bits;
use half::bf16;
use proptest::prelude::*;
use rand::{Rng, SeedableRng, rngs::StdRng};

type F = E4M3Fnuz;

struct Routed {
    slots: Vec<i32>,
    row_src: Vec<i32>,
    m_indices: Vec<i32>,
    masked_m: Vec<i32>,
    status: Vec<i32>,
}

/// Runs a routing kernel; the output buffers start filled with a sentinel, so rows the kernel
/// must leave alone would show up.
/// Contiguous routing uses `align` rows per expert block (128: through `moe_route_contiguous`
/// and DeepGEMM's bound `contiguous_rows_bound`; otherwise the tight bound).
fn route_on_device(ctx: &Context, ids: &[i32], k: usize, experts: usize, masked: Option<usize>, align: usize) -> Routed {
    let stream = Stream::new(ctx).unwrap();
    let tokens = ids.len() / k;
    let rows = match masked {
        Some(m) => experts * m,
        None if align == 128 => contiguous_rows_bound(tokens, k, experts).unwrap(),
        None => contiguous_rows_bound_aligned(tokens, k, experts, align).unwrap(),
    };
    let d_ids = ctx.upload(ids).unwrap();
    let mut slots = ctx.upload(&vec![7777i32; ids.len()]).unwrap();
    let mut row_src = ctx.upload(&vec![7777i32; rows]).unwrap();
    let mut m_indices = ctx.upload(&vec![7777i32; rows]).unwrap();
    let mut masked_m = ctx.upload(&vec![7777i32; experts]).unwrap();
    let mut status = ctx.upload(&[7777i32; 4]).unwrap();
    let mut work = ctx.upload(&vec![-99i32; route_work_len(tokens, k, experts).unwrap()]).unwrap();
    let index = if masked.is_some() { masked_m.as_slice_mut() } else { m_indices.as_slice_mut() };
    let out = RouteBuffers { slots: slots.as_slice_mut(), row_src: row_src.as_slice_mut(), index, status: status.as_slice_mut(), work: work.as_slice_mut() };
    match masked {
        None if align == 128 => moe_route_contiguous(&stream, d_ids.as_slice(), k, experts, out).unwrap(),
        None => moe_route_contiguous_aligned(&stream, d_ids.as_slice(), k, experts, align, out).unwrap(),
        Some(m) => moe_route_masked(&stream, d_ids.as_slice(), k, experts, m, out).unwrap(),
    }
    Routed {
        slots: slots.download(&stream).unwrap(),
        row_src: row_src.download(&stream).unwrap(),
        m_indices: m_indices.download(&stream).unwrap(),
        masked_m: masked_m.download(&stream).unwrap(),
        status: status.download(&stream).unwrap(),
    }
}

/// Device routing == CPU index math, element by element; returns the reference.
fn check_route(ctx: &Context, ids: &[i32], k: usize, experts: usize, masked: Option<usize>) -> fp8gemm::moe::RouteReference {
    check_route_aligned(ctx, ids, k, experts, masked, 128)
}

/// [`check_route`] with the contiguous layout's experts padded to `align` rows.
fn check_route_aligned(ctx: &Context, ids: &[i32], k: usize, experts: usize, masked: Option<usize>, align: usize) -> fp8gemm::moe::RouteReference {
    let got = route_on_device(ctx, ids, k, experts, masked, align);
    let rows = got.row_src.len();
    let want = if align == 128 { route_reference(ids, k, experts, rows, masked) } else { route_reference_aligned(ids, k, experts, rows, masked, align) };
    let what = format!("T={} k={k} E={experts} masked={masked:?} align={align}", ids.len() / k);
    for (p, (g, w)) in got.slots.iter().zip(&want.slots).enumerate() {
        assert_eq!(g, w, "{what}: slots[{p}] (id {})", ids[p]);
    }
    for (r, (g, w)) in got.row_src.iter().zip(&want.row_src).enumerate() {
        assert_eq!(g, w, "{what}: row_src[{r}]");
    }
    match masked {
        None => {
            for (r, (g, w)) in got.m_indices.iter().zip(&want.m_indices).enumerate() {
                assert_eq!(g, w, "{what}: m_indices[{r}]");
            }
            assert!(got.masked_m.iter().all(|&v| v == 7777), "{what}: masked_m written by the contiguous route");
            if align == 128 {
                fp8gemm::grouped::validate_m_indices(&got.m_indices, experts).unwrap();
            }
            // Every block of `align` rows names one expert (or none): what the aligned GEMM needs.
            for (b, block) in got.m_indices.chunks(align).enumerate() {
                let first = block[0];
                assert!(block.iter().all(|&e| e == first || e == -1), "{what}: block {b} of {align} rows mixes experts: {block:?}");
                assert!(first >= 0 || block.iter().all(|&e| e == -1), "{what}: block {b} starts with padding");
            }
            assert!(want.used_rows <= rows, "{what}: used rows within the bound");
        }
        Some(_) => {
            assert_eq!(got.masked_m, want.masked_m, "{what}: masked_m");
            assert!(got.m_indices.iter().all(|&v| v == 7777), "{what}: m_indices written by the masked route");
        }
    }
    assert_eq!(got.status, vec![want.invalid_ids as i32, want.dropped as i32, want.used_rows as i32, 0], "{what}: status");
    want
}

#[test]
fn bf16_rounding_is_half_s() {
    let mut rng = StdRng::seed_from_u64(1);
    let specials = [
        0.0f32,
        -0.0,
        1.0,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(1),
        3.0e38,
        f32::from_bits(0x3f80_8000),
        f32::from_bits(0x3f81_8000),
        f32::from_bits(0x7f7f_ffff),
    ];
    let randoms = (0..100_000).map(|_| f32::from_bits(rng.random::<u32>()));
    for x in specials.into_iter().chain(randoms) {
        assert_eq!(f32_to_bf16_bits(x), bf16::from_f32(x).to_bits(), "{x:e} ({:#010x})", x.to_bits());
    }
}

#[test]
fn route_edge_cases() {
    let ctx = checked_context();
    // No tokens: every layout routes nothing, with its status written (the tight contiguous
    // bound has no rows at all: its scatter still runs one workgroup).
    for align in [1, 32, 128] {
        let r = check_route_aligned(&ctx, &[], 4, 8, None, align);
        assert_eq!(r.used_rows, 0, "align {align}");
    }
    assert_eq!(check_route(&ctx, &[], 4, 8, Some(16)).masked_m, vec![0; 8]);
    // Experts with zero tokens; all tokens on one expert (more than one aligned block).
    let ids: Vec<i32> = (0..300).map(|_| 3).collect();
    let r = check_route(&ctx, &ids, 1, 8, None);
    assert_eq!(r.used_rows, 384);
    assert_eq!(&r.slots[..3], &[0, 1, 2]);
    let r = check_route(&ctx, &ids, 2, 8, Some(100));
    assert_eq!((r.dropped, r.masked_m[3]), (200, 100), "300 pairs for expert 3, capacity 100: the first 100 pairs kept");
    assert_eq!(r.slots[..4], [300, 301, 302, 303]);
    assert_eq!(r.slots[99], 399);
    assert!(r.slots[100..].iter().all(|&s| s == -1));
    // Duplicate experts inside one token's top-k: two slots, in j order.
    let ids = vec![2, 2, 0, 1, 2, 2];
    let r = check_route(&ctx, &ids, 3, 4, None);
    assert_eq!(r.slots, vec![256, 257, 0, 128, 258, 259]);
    let r = check_route(&ctx, &ids, 3, 4, Some(8));
    assert_eq!(r.slots, vec![16, 17, 0, 8, 18, 19]);
    // −1 is skipped silently, other ids outside 0..E are skipped and counted.
    let ids = vec![-1, 0, 5, -7, 4, 1];
    let r = check_route(&ctx, &ids, 2, 5, None);
    assert_eq!((r.invalid_ids, r.slots.clone()), (2, vec![-1, 0, -1, -1, 256, 128]));
    // No tokens at all, and one expert.
    check_route(&ctx, &[], 4, 16, None);
    check_route(&ctx, &[], 4, 16, Some(4));
    check_route(&ctx, &[0; 40], 8, 1, Some(3));
    // The most experts the kernel supports, and more pairs than one chunk of 256.
    let mut rng = StdRng::seed_from_u64(5);
    let ids = random_ids(130, 8, 1024, &mut rng, false, 0.0);
    check_route(&ctx, &ids, 8, 1024, None);
    check_route(&ctx, &ids, 8, 1024, Some(2));
    // More chunks than one batch of the offsets step (43 chunks: a full batch of 32 and a
    // partial one), 300 experts (a work-item's second column exists for some columns only).
    let ids = random_ids(1200, 9, 300, &mut rng, true, 0.05);
    check_route_aligned(&ctx, &ids, 9, 300, None, 32);
    check_route(&ctx, &ids, 9, 300, Some(40));
    // Padding to the tile height: 300 pairs of one expert in 32-row blocks (10 blocks), the
    // duplicates case at 16 and 1 row (no padding at all).
    let ids: Vec<i32> = (0..300).map(|_| 3).collect();
    let r = check_route_aligned(&ctx, &ids, 1, 8, None, 32);
    assert_eq!(r.used_rows, 320);
    let ids = vec![2, 2, 0, 1, 2, 2];
    assert_eq!(check_route_aligned(&ctx, &ids, 3, 4, None, 16).slots, vec![32, 33, 0, 16, 34, 35]);
    assert_eq!(check_route_aligned(&ctx, &ids, 3, 4, None, 1).slots, vec![2, 3, 0, 1, 4, 5]);
    // 257 experts, top-9, one token: 9 blocks of 32 rows, a bound of 9 + 9·31 rows (the
    // 128-row layout's bound is 32,768).
    let ids: Vec<i32> = vec![0, 17, 33, 64, 100, 128, 200, 255, 256];
    let r = check_route_aligned(&ctx, &ids, 9, 257, None, 32);
    assert_eq!((r.used_rows, r.row_src.len()), (9 * 32, 288));
    assert_eq!(r.slots, (0..9).map(|j| 32 * j).collect::<Vec<i32>>());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// Random T, k, E, duplicates and invalid ids: both layouts equal the CPU index math.
    #[test]
    fn route_matches_index_math(tokens in 0usize..300, k in 1usize..9, experts in 1usize..40, dups in any::<bool>(),
                                special in prop::sample::select(vec![0.0, 0.05, 0.5]), m_max in 1usize..64, seed in any::<u64>(),
                                align in prop::sample::select(vec![1usize, 16, 32, 64, 100])) {
        let ctx = Context::new().unwrap();
        let mut rng = StdRng::seed_from_u64(seed);
        let ids = random_ids(tokens, k, experts, &mut rng, dups, special);
        check_route(&ctx, &ids, k, experts, None);
        check_route_aligned(&ctx, &ids, k, experts, None, align);
        check_route(&ctx, &ids, k, experts, Some(m_max));
    }
}

/// Gather + quantize against the CPU recipe on the gathered rows; rows the route marks unused
/// keep their old bytes.
fn check_gather(ctx: &Context, tokens: usize, k: usize, experts: usize, h: usize, masked: Option<usize>, seed: u64) {
    let stream = Stream::new(ctx).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let ids = random_ids(tokens, k, experts, &mut rng, true, 0.05);
    let x = randn_bf16(tokens * h, &mut rng);
    let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
    let rows = match masked {
        Some(m) => experts * m,
        None => contiguous_rows_bound(tokens, k, experts).unwrap(),
    };
    let route = route_reference(&ids, k, experts, rows, masked);
    let kb = h.div_ceil(128);
    let mut q = ctx.upload(&vec![0x55u8; rows * h]).unwrap();
    let mut sf = ctx.upload(&vec![-3.0f32; rows * kb]).unwrap();
    let d_x = ctx.upload(&xb).unwrap();
    let d_src = ctx.upload(&route.row_src).unwrap();
    let out = ActivationsViewMut::<F>::new(q.as_slice_mut(), sf.as_slice_mut(), rows, h).unwrap();
    moe_gather_quantize(&stream, d_x.as_slice(), d_src.as_slice(), out).unwrap();
    let (q, sf) = (q.download(&stream).unwrap(), sf.download(&stream).unwrap());
    let what = format!("T={tokens} k={k} E={experts} H={h} masked={masked:?}");
    assert_quantized_rows(
        &q,
        &sf,
        &route.row_src,
        h,
        &what,
        |src| src == -2,
        |_, src| QuantizedActivations::<F>::quantize(&xb[src as usize * h..][..h], 1, h).unwrap(),
    );
}

/// Checks `rows × k` FP8 rows `q` and their 1×128 scales `sf`, each row by its `row_src`
/// entry: `untouched(src)` rows keep the sentinel bytes (0x55, scale −3.0), padding rows (−1)
/// are the recipe's all-zero row, every other row `r` is `want(r, src)` bit for bit.
fn assert_quantized_rows(
    q: &[u8],
    sf: &[f32],
    row_src: &[i32],
    k: usize,
    what: &str,
    untouched: impl Fn(i32) -> bool,
    want: impl Fn(usize, i32) -> QuantizedActivations<F>,
) {
    let kb = k.div_ceil(128);
    let zero = QuantizedActivations::<F>::quantize(&vec![0f32; k], 1, k).unwrap();
    for (r, &src) in row_src.iter().enumerate() {
        let (gq, gs) = (&q[r * k..(r + 1) * k], &sf[r * kb..(r + 1) * kb]);
        let what = format!("{what}: row {r} (src {src})");
        if untouched(src) {
            assert!(gq.iter().all(|&b| b == 0x55) && gs.iter().all(|&s| s == -3.0), "{what}: written");
            continue;
        }
        let want = if src >= 0 { want(r, src) } else { zero.clone() };
        let want_q: Vec<u8> = want.data.iter().map(|v| v.to_bits()).collect();
        assert_eq!(gq, &want_q[..], "{what}: values");
        assert_eq!(gs.iter().map(|s| s.to_bits()).collect::<Vec<_>>(), want.scales.iter().map(|s| s.to_bits()).collect::<Vec<_>>(), "{what}: scales");
    }
}

#[test]
fn gather_quantize_is_the_cpu_recipe() {
    let ctx = checked_context();
    check_gather(&ctx, 37, 4, 6, 256, None, 1);
    check_gather(&ctx, 37, 4, 6, 256, Some(30), 2);
    // A partial last 1×128 group (k % 128 != 0), one token.
    check_gather(&ctx, 1, 8, 16, 136, None, 3);
    check_gather(&ctx, 5, 2, 3, 8, Some(2), 4);
}

/// The unpermute's formula on the CPU: f32, j order, shared last, one bf16 rounding.
/// The contiguous layout's activation pass (`moe_silu_mul_quantize`) against the CPU recipe:
/// a routed row (`row_src` a token) is `FP8(silu(gate)·up)` of its own gate·up row, a padding
/// row (−1) the recipe's all-zero row, and every other row (−2, or a token id out of range)
/// keeps its old bytes.
fn check_silu_pass(ctx: &Context, rows: usize, k: usize, tokens: usize, seed: u64) {
    let stream = Stream::new(ctx).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let row_src: Vec<i32> = (0..rows)
        .map(|_| match rng.random_range(0..20) {
            0..=10 => rng.random_range(0..tokens as i32),
            11..=16 => -1,
            17 | 18 => -2,
            _ => tokens as i32 + rng.random_range(0..3),
        })
        .collect();
    // Padding rows' gate·up rows are zero (their A rows are); routed rows random.
    let mut x = randn_bf16(rows * 2 * k, &mut rng);
    for (r, &src) in row_src.iter().enumerate() {
        if src == -1 {
            x[r * 2 * k..(r + 1) * 2 * k].fill(0.0);
        }
    }
    let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
    let kb = k.div_ceil(128);
    let mut q = ctx.upload(&vec![0x55u8; rows * k]).unwrap();
    let mut sf = ctx.upload(&vec![-3.0f32; rows * kb]).unwrap();
    let (d_x, d_src) = (ctx.upload(&xb).unwrap(), ctx.upload(&row_src).unwrap());
    let out = ActivationsViewMut::<F>::new(q.as_slice_mut(), sf.as_slice_mut(), rows, k).unwrap();
    moe_silu_mul_quantize(&stream, d_x.as_slice(), d_src.as_slice(), tokens, out).unwrap();
    let (q, sf) = (q.download(&stream).unwrap(), sf.download(&stream).unwrap());
    assert_quantized_rows(
        &q,
        &sf,
        &row_src,
        k,
        &format!("rows {rows} k {k}"),
        |src| src == -2 || src >= tokens as i32,
        |r, _| QuantizedActivations::<F>::quantize_silu_mul(&xb[r * 2 * k..][..2 * k], 1, k).unwrap(),
    );
}

#[test]
fn silu_pass_quantizes_the_routed_rows_and_zeroes_the_padding() {
    let ctx = checked_context();
    check_silu_pass(&ctx, 300, 256, 40, 1);
    // A partial last 1×128 group, and a grid not a multiple of 8 workgroups.
    check_silu_pass(&ctx, 77, 136, 9, 2);
    // A grid larger than one round of the device (304 CUs × 8 workgroups).
    check_silu_pass(&ctx, 40_000, 128, 1000, 3);
}

fn unpermute_cpu(y: &[bf16], slots: &[i32], w: &[f32], shared: Option<&[bf16]>, tokens: usize, h: usize) -> Vec<u16> {
    let k = slots.len() / tokens.max(1);
    let rows = y.len() / h;
    let mut out = Vec::with_capacity(tokens * h);
    for t in 0..tokens {
        for c in 0..h {
            let mut acc = 0f32;
            for j in 0..k {
                let s = slots[t * k + j];
                if s >= 0 && (s as usize) < rows {
                    acc += w[t * k + j] * y[s as usize * h + c].to_f32();
                }
            }
            if let Some(sh) = shared {
                acc += sh[t * h + c].to_f32();
            }
            out.push(bf16::from_f32(acc).to_bits());
        }
    }
    out
}

/// Route (CPU) → random expert outputs → device unpermute, bit for bit against
/// [`unpermute_cpu`], with and without a shared term; one slot is made garbage (out of range).
fn check_unpermute(ctx: &Context, tokens: usize, k: usize, experts: usize, h: usize, masked: Option<usize>, seed: u64) {
    let stream = Stream::new(ctx).unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let ids = random_ids(tokens, k, experts, &mut rng, true, 0.1);
    let rows = match masked {
        Some(m) => experts * m,
        None => contiguous_rows_bound(tokens, k, experts).unwrap(),
    };
    let route = route_reference(&ids, k, experts, rows, masked);
    let mut slots = route.slots.clone();
    slots[0] = rows as i32 + 5; // skipped, not read
    let y: Vec<bf16> = randn_bf16(rows * h, &mut rng).into_iter().map(bf16::from_f32).collect();
    let w: Vec<f32> = (0..tokens * k).map(|_| rng.random_range(0.0..1.0)).collect();
    let sh: Vec<bf16> = randn_bf16(tokens * h, &mut rng).into_iter().map(bf16::from_f32).collect();
    let (d_y, d_slots, d_w, d_sh) = (ctx.upload(&y).unwrap(), ctx.upload(&slots).unwrap(), ctx.upload(&w).unwrap(), ctx.upload(&sh).unwrap());
    for with_shared in [false, true] {
        let mut out = ctx.upload(&vec![bf16::from_f32(9.0); tokens * h]).unwrap();
        let shared = with_shared.then(|| d_sh.as_slice());
        moe_unpermute(&stream, d_y.as_slice(), d_slots.as_slice(), d_w.as_slice(), shared, out.as_slice_mut(), h).unwrap();
        let got: Vec<u16> = out.download(&stream).unwrap().iter().map(|v| v.to_bits()).collect();
        let want = unpermute_cpu(&y, &slots, &w, with_shared.then_some(&sh[..]), tokens, h);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "T={tokens} k={k} E={experts} H={h} masked={masked:?} shared={with_shared}: out[{}, {}]", i / h, i % h);
        }
    }
}

#[test]
fn unpermute_is_its_cpu_formula() {
    let ctx = checked_context();
    check_unpermute(&ctx, 45, 6, 8, 264, None, 11);
    check_unpermute(&ctx, 3, 8, 16, 128, Some(2), 12);
    check_unpermute(&ctx, 1, 1, 1, 8, None, 13);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    /// Gather + quantize and unpermute over random T, k, E, H and both layouts.
    #[test]
    fn gather_and_unpermute_random_shapes(tokens in 1usize..60, k in 1usize..9, experts in 1usize..24, h8 in 1usize..40,
                                          masked in prop::option::of(1usize..20), seed in any::<u64>()) {
        let ctx = Context::new().unwrap();
        check_gather(&ctx, tokens, k, experts, 8 * h8, masked, seed);
        check_unpermute(&ctx, tokens, k, experts, 8 * h8, masked, seed);
    }
}

#[test]
fn no_tokens_is_a_no_op() {
    let ctx = checked_context();
    let l = random_layer(&ctx, 4, 128, 128, None, MoeOptions { top_k: 2, masked_max_tokens: 0 }, 81);
    let mut scratch = MoeScratch::new(&l.layer, 4, 0).unwrap();
    let stream = Stream::new(&ctx).unwrap();
    let (x, ids, w) = (ctx.alloc_zeroed::<bf16>(0).unwrap(), ctx.alloc_zeroed::<i32>(0).unwrap(), ctx.alloc_zeroed::<f32>(0).unwrap());
    let mut out = ctx.alloc_zeroed::<bf16>(0).unwrap();
    let run = l.layer.forward(&stream, &x, &ids, &w, &mut out, &mut scratch).unwrap();
    assert_eq!((run.tokens, run.layout), (0, MoeLayout::Contiguous));
    assert_eq!(l.layer.layout_for(1), MoeLayout::Contiguous, "masked_max_tokens = 0: always contiguous");
}

/// A random layer: weights quantized per 128×128 block, uploaded; also their dequantized f32.
struct Layer {
    ctx: Context,
    layer: MoeLayer<F>,
    gate_up: Vec<f32>,
    down: Vec<f32>,
    shared: Option<(usize, Vec<f32>, Vec<f32>)>,
}

fn random_layer(ctx: &Context, experts: usize, h: usize, i: usize, shared_i: Option<usize>, options: MoeOptions, seed: u64) -> Layer {
    random_layer_in(ctx, experts, h, i, shared_i, options, seed, WeightLayout::Logical)
}

/// [`random_layer`] with every weight (routed and shared experts) uploaded in `layout`.
#[allow(clippy::too_many_arguments)]
fn random_layer_in(ctx: &Context, experts: usize, h: usize, i: usize, shared_i: Option<usize>, options: MoeOptions, seed: u64, layout: WeightLayout) -> Layer {
    let mut rng = StdRng::seed_from_u64(seed);
    let scale = |v: Vec<f32>, s: f32| v.into_iter().map(|x| x * s).collect::<Vec<_>>();
    let gu = GroupedQuantizedWeights::<F>::quantize(&scale(randn_bf16(experts * 2 * i * h, &mut rng), 0.06), experts, 2 * i, h).unwrap();
    let dn = GroupedQuantizedWeights::<F>::quantize(&scale(randn_bf16(experts * h * i, &mut rng), 0.06), experts, h, i).unwrap();
    let shared = shared_i.map(|is| {
        let a = QuantizedWeights::<F>::quantize(&scale(randn_bf16(2 * is * h, &mut rng), 0.06), 2 * is, h).unwrap();
        let b = QuantizedWeights::<F>::quantize(&scale(randn_bf16(h * is, &mut rng), 0.06), h, is).unwrap();
        (is, a, b)
    });
    let layer = MoeLayer::new(
        ctx,
        DeviceGroupedWeights::upload_with_layout(ctx, &gu, layout).unwrap(),
        DeviceGroupedWeights::upload_with_layout(ctx, &dn, layout).unwrap(),
        shared
            .as_ref()
            .map(|(_, a, b)| (DeviceWeights::upload_with_layout(ctx, a, layout).unwrap(), DeviceWeights::upload_with_layout(ctx, b, layout).unwrap())),
        options,
    )
    .unwrap();
    Layer { ctx: ctx.clone(), layer, gate_up: gu.dequantize(), down: dn.dequantize(), shared: shared.map(|(is, a, b)| (is, a.dequantize(), b.dequantize())) }
}

impl Layer {
    fn reference(&self, x: &[f32], ids: &[i32], w: &[f32], mode: ReferenceActivations) -> Vec<f32> {
        let l = &self.layer;
        let weights = MoeReferenceWeights {
            experts: l.experts(),
            hidden: l.hidden(),
            intermediate: l.intermediate(),
            gate_up: &self.gate_up,
            down: &self.down,
            shared: self.shared.as_ref().map(|(is, a, b)| (*is, &a[..], &b[..])),
        };
        moe_reference::<F>(&weights, x, ids, w, l.options().top_k, mode).unwrap()
    }
}

/// Random routing inputs: hidden `[T, H]` (bf16 values), ids, softmax-like weights.
fn inputs(tokens: usize, h: usize, k: usize, experts: usize, dups: bool, rng: &mut StdRng) -> (Vec<f32>, Vec<i32>, Vec<f32>) {
    let x = randn_bf16(tokens * h, rng);
    let ids = random_ids(tokens, k, experts, rng, dups, 0.0);
    let w: Vec<f32> = (0..tokens * k).map(|_| rng.random_range(0.05f32..0.4)).collect();
    (x, ids, w)
}

/// Runs the layer once and checks it against both references; returns the device output.
fn check_layer(l: &Layer, scratch: &mut MoeScratch<F>, layout: MoeLayout, x: &[f32], ids: &[i32], w: &[f32], what: &str) -> Vec<f32> {
    let h = l.layer.hidden();
    let c = &l.ctx;
    let stream = Stream::new(c).unwrap();
    let tokens = x.len() / h;
    let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
    let (d_x, d_ids, d_w) = (c.upload(&xb).unwrap(), c.upload(ids).unwrap(), c.upload(w).unwrap());
    let mut out = c.upload(&vec![bf16::from_f32(123.0); tokens * h]).unwrap();
    let mut stages = Vec::new();
    let run = l
        .layer
        .forward_with(&stream, &d_x, &d_ids, &d_w, &mut out, scratch, layout, &mut |s| {
            stages.push(s);
            Ok(())
        })
        .unwrap();
    assert_eq!(run.layout, layout);
    let got: Vec<f32> = out.download(&stream).unwrap().iter().map(|v| v.to_f32()).collect();
    // Route: count, offsets, scatter; count and offsets fused when the pairs fit one chunk,
    // the whole route in one launch when the layout also has at most SINGLE_ROUTE_ROWS rows.
    let route_launches = match (ids.len() <= 256, run.rows <= fp8gemm_device::moe::SINGLE_ROUTE_ROWS as usize) {
        (true, true) => 1,
        (true, false) => 2,
        (false, _) => 3,
    };
    let mut want_stages = vec![MoeStage::Route; route_launches];
    // Pre-shuffled gate·up weights in the contiguous layout with 32/64-row blocks: the gate·up
    // GEMM gathers the quantized tokens and does silu·mul in its launch; with pre-shuffled down
    // weights too, the down GEMM's scatter epilogue does the unpermute, so the shared expert
    // runs before it.
    let gathered = layout == MoeLayout::Contiguous && l.layer.gate_up().layout() == WeightLayout::Preshuffled && (run.align == 32 || run.align == 64);
    assert_eq!(run.gathered, gathered, "{what}");
    assert!(!run.fused_activation || gathered, "{what}");
    assert!(!run.fused_unpermute || (gathered && l.layer.down().layout() == WeightLayout::Preshuffled), "{what}");
    assert!(!run.quantized_in_gemm || run.fused_activation, "{what}");
    if !run.quantized_in_gemm {
        want_stages.push(MoeStage::GatherQuantize);
    }
    want_stages.push(MoeStage::GateUpGemm);
    if !run.fused_activation {
        want_stages.push(MoeStage::SiluMulQuantize);
    }
    if run.fused_unpermute {
        if l.shared.is_some() {
            want_stages.extend([MoeStage::SharedExpert; 4]);
        }
        want_stages.push(MoeStage::DownGemm);
    } else {
        want_stages.push(MoeStage::DownGemm);
        if l.shared.is_some() {
            want_stages.extend([MoeStage::SharedExpert; 4]);
        }
        want_stages.push(MoeStage::Unpermute);
    }
    assert_eq!(stages, want_stages, "{what}");
    let status = scratch.status(&stream).unwrap();
    assert_eq!((status.invalid_ids, status.dropped), (0, 0), "{what}");
    assert_matches_references(l, &got, x, ids, w, what);
    got
}

/// Checks a layer's output `got` for the tokens `x` (routed by `ids`, `w`) against both CPU
/// references: calc_diff (< 1e-3 vs f32, < 2e-5 vs device-matched) and element bounds.
fn assert_matches_references(l: &Layer, got: &[f32], x: &[f32], ids: &[i32], w: &[f32], what: &str) {
    let h = l.layer.hidden();
    let f32_ref = l.reference(x, ids, w, ReferenceActivations::F32);
    let matched = l.reference(x, ids, w, ReferenceActivations::DeviceMatched);
    let diff = reference::calc_diff(got, &f32_ref).unwrap();
    let diff_matched = reference::calc_diff(got, &matched).unwrap();
    assert!(diff < 1e-3, "{what}: calc_diff {diff:e} vs the f32 reference (goal < 1e-3)");
    assert!(diff_matched < 2e-5, "{what}: calc_diff {diff_matched:e} vs the device-matched reference");
    // Element bounds. Against the matched reference: about two bf16 ulps, except where the f32
    // summation order of a GEMM (device: per-128-K blocks; CPU: `gemm` on dequantized values)
    // flipped the rounding of an intermediate onto the other side of an FP8 (or bf16) boundary,
    // which moves that token's downstream values by up to an FP8 ulp of one activation — rare
    // (≤ 1 in 10⁴ elements) and bounded (observed ≤ 0.031 rms at T = 1000). Against f32: the
    // error of quantizing two activations per token to FP8 (3 mantissa bits), whose tail reaches
    // ≈ 0.27 rms on these shapes (calc_diff ≈ 9.2e-4, just inside the goal).
    let rms = (f32_ref.iter().map(|v| (v * v) as f64).sum::<f64>() / f32_ref.len().max(1) as f64).sqrt() as f32;
    let (mut worst_m, mut worst_f, mut loose) = (0f32, 0f32, 0usize);
    for (idx, ((&g, &m), &f)) in got.iter().zip(&matched).zip(&f32_ref).enumerate() {
        let (t, c) = (idx / h, idx % h);
        worst_m = worst_m.max((g - m).abs() / rms);
        worst_f = worst_f.max((g - f).abs() / rms);
        loose += ((g - m).abs() > 0.01 * m.abs() + 0.01 * rms) as usize;
        assert!((g - m).abs() <= 0.1 * rms, "{what}: out[{t}, {c}] = {g} vs matched {m} (rms {rms})");
        assert!((g - f).abs() <= 0.1 * f.abs() + 0.4 * rms, "{what}: out[{t}, {c}] = {g} vs f32 {f} (rms {rms})");
    }
    eprintln!(
        "{what}: worst |got - matched| {worst_m:.4} rms ({loose} elements past 0.01·|m| + 0.01 rms), worst |got - f32| {worst_f:.4} rms; calc_diff {diff:.3e} vs f32, {diff_matched:.3e} vs device-matched"
    );
    assert!(loose <= got.len() / 10_000, "{what}: {loose} of {} elements differ from the matched reference by more than 0.01·|m| + 0.01 rms", got.len());
}

#[test]
fn layer_contiguous_and_masked_match_the_reference() {
    let ctx = checked_context();
    let (e, h, i, k) = (8, 256, 128, 4);
    let l = random_layer(&ctx, e, h, i, None, MoeOptions { top_k: k, masked_max_tokens: 4 }, 21);
    let mut scratch = MoeScratch::new(&l.layer, 80, 8).unwrap();
    let mut rng = StdRng::seed_from_u64(22);
    // Prefill-sized (320 pairs: the three-launch route), duplicates in some tokens' top-k.
    let (x, ids, w) = inputs(80, h, k, e, true, &mut rng);
    check_layer(&l, &mut scratch, MoeLayout::Contiguous, &x, &ids, &w, "contiguous T=80");
    // 160 pairs: the fused route.
    let (x, ids, w) = inputs(40, h, k, e, true, &mut rng);
    check_layer(&l, &mut scratch, MoeLayout::Contiguous, &x, &ids, &w, "contiguous T=40");
    // Decode-sized, masked (and the same tokens contiguous: same result up to rounding).
    let (x, ids, w) = inputs(3, h, k, e, false, &mut rng);
    let a = check_layer(&l, &mut scratch, MoeLayout::Masked, &x, &ids, &w, "masked T=3");
    let b = check_layer(&l, &mut scratch, MoeLayout::Contiguous, &x, &ids, &w, "contiguous T=3");
    assert_eq!(a, b, "both layouts compute the same GEMM rows");
    assert_eq!(l.layer.layout_for(3), MoeLayout::Masked);
    assert_eq!(l.layer.layout_for(5), MoeLayout::Contiguous);
}

/// The layer on pre-shuffled weights (the m-grouped and dense bs kernels) over the cases of
/// `layer_contiguous_and_masked_match_the_reference` and `layer_with_shared_expert` (same
/// layers, same inputs): both references, and bit for bit the logical layer's output (the bs
/// kernels compute the same rows with the same per-block promotion order).
#[test]
fn layer_on_preshuffled_weights_matches_the_reference_and_the_logical_layer() {
    let ctx = checked_context();
    // (experts, top_k, shared I, masked_max_tokens, layer seed, input seed, [(tokens, dups, layout)])
    type Case = (usize, usize, Option<usize>, usize, u64, u64, Vec<(usize, bool, MoeLayout)>);
    let cases: [Case; 2] = [
        (8, 4, None, 4, 21, 22, vec![(80, true, MoeLayout::Contiguous), (40, true, MoeLayout::Contiguous), (3, false, MoeLayout::Masked)]),
        (16, 2, Some(256), 2, 31, 32, vec![(20, false, MoeLayout::Contiguous), (2, false, MoeLayout::Masked)]),
    ];
    let (h, i) = (256, 128);
    for (e, k, shared, masked_max, layer_seed, input_seed, runs) in cases {
        let opts = MoeOptions { top_k: k, masked_max_tokens: masked_max };
        let pre = random_layer_in(&ctx, e, h, i, shared, opts, layer_seed, WeightLayout::Preshuffled);
        let logical = random_layer_in(&ctx, e, h, i, shared, opts, layer_seed, WeightLayout::Logical);
        let mut scratch = MoeScratch::new(&pre.layer, 80, 8).unwrap();
        let mut rng = StdRng::seed_from_u64(input_seed);
        for (tokens, dups, layout) in runs {
            let (x, ids, w) = inputs(tokens, h, k, e, dups, &mut rng);
            let what = format!("pre-shuffled weights E={e} shared {shared:?}, {layout:?} T={tokens}");
            let got = check_layer(&pre, &mut scratch, layout, &x, &ids, &w, &what);
            let want = check_layer(&logical, &mut scratch, layout, &x, &ids, &w, &format!("logical weights E={e}, {layout:?} T={tokens}"));
            let bad = got.iter().zip(&want).position(|(a, b)| a.to_bits() != b.to_bits());
            assert!(bad.is_none(), "{what}: out[{}] = {} vs the logical layer's {}", bad.unwrap_or(0), got[bad.unwrap_or(0)], want[bad.unwrap_or(0)]);
        }
    }
}

#[test]
fn layer_with_shared_expert() {
    let ctx = checked_context();
    let (e, h, i, k) = (16, 256, 128, 2);
    let l = random_layer(&ctx, e, h, i, Some(256), MoeOptions { top_k: k, masked_max_tokens: 2 }, 31);
    let mut scratch = MoeScratch::new(&l.layer, 20, 4).unwrap();
    let mut rng = StdRng::seed_from_u64(32);
    let (x, ids, w) = inputs(20, h, k, e, false, &mut rng);
    check_layer(&l, &mut scratch, MoeLayout::Contiguous, &x, &ids, &w, "shared, contiguous T=20");
    let (x, ids, w) = inputs(2, h, k, e, false, &mut rng);
    check_layer(&l, &mut scratch, MoeLayout::Masked, &x, &ids, &w, "shared, masked T=2");
}

/// 257 experts, top-9 (the routing of a GLM-5.1-class layer; hidden and width small enough for
/// the emulator): the contiguous layout pads each active expert only to the GEMMs' tile height
/// (a bound of `T·k + min(E, T·k)·(align − 1)` rows, not `E·127` more), on logical and on
/// pre-shuffled weights, against both references; the result does not depend on the alignment
/// (the same rows as DeepGEMM's 128-row layout, bit for bit) nor on the GEMMs' row chunks, and
/// repeated runs are bit-identical.
#[test]
fn layer_at_257_experts_top9_pads_active_experts_to_the_tile() {
    let ctx = checked_context();
    let (e, h, i, k) = (257, 256, 128, 9);
    let opts = MoeOptions { top_k: k, masked_max_tokens: 0 };
    for (layout, seed) in [(WeightLayout::Logical, 81u64), (WeightLayout::Preshuffled, 82)] {
        let mut l = random_layer_in(&ctx, e, h, i, None, opts, seed, layout);
        let mut scratch = MoeScratch::new(&l.layer, 40, 0).unwrap();
        // The scratch is sized by the routed rows: 360 pairs + 257 · 63 rows, not 360 + 257 · 127.
        assert_eq!(scratch.rows(), contiguous_rows_bound_aligned(40, k, e, 64).unwrap());
        let mut rng = StdRng::seed_from_u64(seed + 100);
        for t in [2usize, 40] {
            let (x, ids, w) = inputs(t, h, k, e, false, &mut rng);
            let what = format!("E=257 k=9 {layout:?} T={t}");
            let got = if t >= 40 {
                check_layer(&l, &mut scratch, MoeLayout::Contiguous, &x, &ids, &w, &what)
            } else {
                // A few tokens: the f32 bar (a statistic of the FP8 activation error, ≈ 9.2e-4 on
                // large samples) scatters past 1e-3 on 512 outputs, so only the device-matched
                // reference is asserted here, element by element.
                let (got, status) = forward_once(&l, &mut scratch, &x, &ids, &w);
                assert_eq!(status, Default::default());
                let matched = l.reference(&x, &ids, &w, ReferenceActivations::DeviceMatched);
                let diff = reference::calc_diff(&got, &matched).unwrap();
                assert!(diff < 2e-5, "{what}: calc_diff {diff:e} vs the device-matched reference");
                let rms = (matched.iter().map(|v| (v * v) as f64).sum::<f64>() / matched.len() as f64).sqrt() as f32;
                for (idx, (&g, &m)) in got.iter().zip(&matched).enumerate() {
                    assert!((g - m).abs() <= 0.02 * m.abs() + 0.02 * rms, "{what}: out[{}, {}] = {g} vs matched {m} (rms {rms})", idx / h, idx % h);
                }
                got
            };
            // The layout's rows: the tight bound at the chosen alignment.
            let stream = Stream::new(&ctx).unwrap();
            let align = l.layer.contiguous_align(&stream, t).unwrap();
            assert!(align == 64 || (align == 32 && layout == WeightLayout::Preshuffled), "{what}: alignment {align}");
            let (again, status) = forward_once(&l, &mut scratch, &x, &ids, &w);
            assert_eq!(status, Default::default());
            let bad = got.iter().zip(&again).position(|(a, b)| a.to_bits() != b.to_bits());
            assert!(bad.is_none(), "{what}: a repeated run differs at out[{bad:?}]");
            // Every GEMM cut into launches of 128 rows: the same bits.
            let chunked = forward_with_overrides(&l, &mut scratch, &x, &ids, &w, fp8gemm::Overrides::NONE.with_contiguous_chunk_rows(128));
            let bad = got.iter().zip(&chunked).position(|(a, b)| a.to_bits() != b.to_bits());
            assert!(bad.is_none(), "{what}: 128-row GEMM chunks differ at out[{bad:?}]");
        }
        // DeepGEMM's 128-row layout (pinned): the same rows, so the same bits.
        let (x, ids, w) = inputs(12, h, k, e, false, &mut rng);
        let (tight, _) = forward_once(&l, &mut scratch, &x, &ids, &w);
        l.layer.set_contiguous_align(Some(128)).unwrap();
        let err = l
            .layer
            .forward(
                &Stream::new(&ctx).unwrap(),
                &ctx.upload(&vec![bf16::ZERO; 40 * h]).unwrap(),
                &ctx.upload(&vec![0i32; 40 * k]).unwrap(),
                &ctx.upload(&vec![0f32; 40 * k]).unwrap(),
                &mut ctx.alloc_zeroed::<bf16>(40 * h).unwrap(),
                &mut scratch,
            )
            .unwrap_err();
        assert_eq!(shape_arg(err), "scratch", "a scratch made for 64-row padding is too small for 128 at T = 40");
        let mut scratch128 = MoeScratch::new(&l.layer, 12, 0).unwrap();
        assert_eq!(scratch128.rows(), contiguous_rows_bound_aligned(12, k, e, 128).unwrap());
        let (wide, _) = forward_once(&l, &mut scratch128, &x, &ids, &w);
        let bad = tight.iter().zip(&wide).position(|(a, b)| a.to_bits() != b.to_bits());
        assert!(bad.is_none(), "{layout:?}: the 128-row layout differs at out[{bad:?}]");
        assert_eq!(shape_arg(l.layer.set_contiguous_align(Some(48)).unwrap_err()), "align");
        if layout == WeightLayout::Logical {
            assert_eq!(shape_arg(l.layer.set_contiguous_align(Some(32)).unwrap_err()), "align");
        }
    }
}

/// `forward` on a stream with selector overrides; returns the output.
fn forward_with_overrides(l: &Layer, scratch: &mut MoeScratch<F>, x: &[f32], ids: &[i32], w: &[f32], o: fp8gemm::Overrides) -> Vec<f32> {
    let c = &l.ctx;
    let mut stream = Stream::new(c).unwrap();
    stream.set_overrides(o);
    let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
    let (d_x, d_ids, d_w) = (c.upload(&xb).unwrap(), c.upload(ids).unwrap(), c.upload(w).unwrap());
    let mut out = c.alloc_zeroed::<bf16>(x.len()).unwrap();
    l.layer.forward(&stream, &d_x, &d_ids, &d_w, &mut out, scratch).unwrap();
    out.download(&stream).unwrap().iter().map(|v| v.to_f32()).collect()
}

/// Runs `forward` with fresh buffers for these inputs, returns the output and the status.
fn forward_once(l: &Layer, scratch: &mut MoeScratch<F>, x: &[f32], ids: &[i32], w: &[f32]) -> (Vec<f32>, fp8gemm::MoeStatus) {
    let c = &l.ctx;
    let stream = Stream::new(c).unwrap();
    let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
    let (d_x, d_ids, d_w) = (c.upload(&xb).unwrap(), c.upload(ids).unwrap(), c.upload(w).unwrap());
    let mut out = c.alloc_zeroed::<bf16>(x.len()).unwrap();
    l.layer.forward(&stream, &d_x, &d_ids, &d_w, &mut out, scratch).unwrap();
    let got = out.download(&stream).unwrap().iter().map(|v| v.to_f32()).collect();
    (got, scratch.status(&stream).unwrap())
}

#[test]
fn masked_overflow_is_dropped_deterministically_and_reported() {
    let ctx = checked_context();
    let (e, h, i, k) = (4, 128, 128, 2);
    let l = random_layer(&ctx, e, h, i, None, MoeOptions { top_k: k, masked_max_tokens: 8 }, 41);
    let mut scratch = MoeScratch::new(&l.layer, 8, 3).unwrap();
    let mut rng = StdRng::seed_from_u64(42);
    let (x, _, w) = inputs(6, h, k, e, false, &mut rng);
    // Every token picks expert 0 first (6 pairs for 3 rows) and expert 1..3 second.
    let ids: Vec<i32> = (0..6).flat_map(|t: i32| [0, 1 + t % 3]).collect();
    let (got, status) = forward_once(&l, &mut scratch, &x, &ids, &w);
    assert_eq!((status.dropped, status.invalid_ids), (3, 0));
    // The dropped pairs are the last three of expert 0 (tokens 3, 4, 5): the result is the
    // layer without them.
    let mut kept = ids.clone();
    for t in 3..6 {
        kept[t * k] = -1;
    }
    let want = l.reference(&x, &kept, &w, ReferenceActivations::DeviceMatched);
    assert!(reference::calc_diff(&got, &want).unwrap() < 1e-6);
    for (idx, (g, m)) in got.iter().zip(&want).enumerate() {
        assert!((g - m).abs() <= 0.01 * m.abs() + 1e-3, "out[{}, {}] = {g} vs {m}", idx / h, idx % h);
    }
    // The same run again: the same bits (deterministic), the status overwritten, not summed.
    let (again, status) = forward_once(&l, &mut scratch, &x, &ids, &w);
    assert_eq!(again, got);
    assert_eq!(status.dropped, 3);
}

#[test]
fn invalid_ids_are_skipped_and_counted() {
    let ctx = checked_context();
    let (e, h, i, k) = (4, 128, 128, 3);
    // Pre-shuffled weights run the down GEMM's scatter epilogue (a token without a valid
    // expert is written by its fallback: 0 here, no shared expert).
    for (layout, shared) in [(WeightLayout::Logical, None), (WeightLayout::Preshuffled, None), (WeightLayout::Preshuffled, Some(128))] {
        let what = format!("{layout:?}, shared {shared:?}");
        let l = random_layer_in(&ctx, e, h, i, shared, MoeOptions { top_k: k, masked_max_tokens: 0 }, 51, layout);
        let mut scratch = MoeScratch::new(&l.layer, 5, 0).unwrap();
        let mut rng = StdRng::seed_from_u64(52);
        let (x, mut ids, w) = inputs(5, h, k, e, false, &mut rng);
        ids[1] = -1; // "no expert": skipped, not counted
        ids[4] = 4; // == E
        ids[8] = -9;
        // Token 3 has no expert at all.
        ids[9..12].fill(-1);
        let (got, status) = forward_once(&l, &mut scratch, &x, &ids, &w);
        assert_eq!((status.invalid_ids, status.dropped), (2, 0), "{what}");
        let want = l.reference(&x, &ids, &w, ReferenceActivations::DeviceMatched);
        assert!(reference::calc_diff(&got, &want).unwrap() < 1e-6, "{what}");
        assert!(reference::calc_diff(&got, &l.reference(&x, &ids, &w, ReferenceActivations::F32)).unwrap() < 1e-3, "{what}");
        for (c, (&g, &m)) in got[3 * h..4 * h].iter().zip(&want[3 * h..4 * h]).enumerate() {
            assert_eq!(g.to_bits(), m.to_bits(), "{what}: out[3, {c}] of the token without experts = {g}, reference {m}");
        }
        // Repeated: the same bits (the scatter counters were re-armed).
        let (again, _) = forward_once(&l, &mut scratch, &x, &ids, &w);
        let bad = got.iter().zip(&again).position(|(a, b)| a.to_bits() != b.to_bits());
        assert!(bad.is_none(), "{what}: a repeated run differs at out[{bad:?}]");
    }
}

/// The forward pass, captured once per layout into a graph, replayed on new inputs written into
/// the same buffers: no host copy, no synchronization, no allocation inside; every replay equals
/// an uncaptured forward pass on the same inputs bit for bit.
#[test]
fn forward_captures_into_a_graph_and_replays() {
    let ctx = checked_context();
    let (e, h, i, k, t) = (8, 256, 128, 4, 12);
    let mut rng = StdRng::seed_from_u64(61);
    // The third case is the fused path (pre-shuffled weights: two GEMM launches with epilogues).
    let cases = [
        (MoeLayout::Contiguous, 0, false, WeightLayout::Logical),
        (MoeLayout::Masked, t, true, WeightLayout::Logical),
        (MoeLayout::Contiguous, 0, true, WeightLayout::Preshuffled),
    ];
    for (layout, masked_max, with_shared, weights) in cases {
        let l = random_layer_in(&ctx, e, h, i, with_shared.then_some(128), MoeOptions { top_k: k, masked_max_tokens: masked_max }, 62, weights);
        assert_eq!(l.layer.layout_for(t), layout);
        let mut scratch = MoeScratch::new(&l.layer, t, t).unwrap();
        let mut check_scratch = MoeScratch::new(&l.layer, t, t).unwrap();
        let stream = Stream::new(&ctx).unwrap();
        let mut d_x = ctx.alloc_zeroed::<bf16>(t * h).unwrap();
        let mut d_ids = ctx.alloc_zeroed::<i32>(t * k).unwrap();
        let mut d_w = ctx.alloc_zeroed::<f32>(t * k).unwrap();
        let mut out = ctx.alloc_zeroed::<bf16>(t * h).unwrap();
        stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
        let run = l.layer.forward(&stream, &d_x, &d_ids, &d_w, &mut out, &mut scratch).unwrap();
        let graph = stream.end_capture().unwrap().instantiate().unwrap();
        assert_eq!(run.layout, layout);
        assert_eq!(run.fused_unpermute, weights == WeightLayout::Preshuffled, "{layout:?} {weights:?}: {run:?}");
        // Route (48 pairs over at most 1024 rows): one launch; two GEMMs; then what the pass
        // did not fuse.
        assert!(run.rows <= fp8gemm_device::moe::SINGLE_ROUTE_ROWS as usize, "{run:?}");
        let unfused = [!run.quantized_in_gemm, !run.fused_activation, !run.fused_unpermute].iter().filter(|&&u| u).count();
        let launches = (1 + 2 + unfused + if with_shared { 4 } else { 0 }) as u64;
        for step in 0..2 {
            let (x, ids, w) = inputs(t, h, k, e, step == 1, &mut rng);
            let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
            d_x.copy_from_host(&stream, &xb).unwrap();
            d_ids.copy_from_host(&stream, &ids).unwrap();
            d_w.copy_from_host(&stream, &w).unwrap();
            let before = amdgpu_emu::hip::stream_stats(stream.as_raw().cast()).unwrap();
            // SAFETY: every buffer the captured launches use (inputs, out, scratch, weights) is
            // alive and unchanged in size until the replay completes (downloaded below).
            unsafe { graph.launch(&stream).unwrap() };
            let after = amdgpu_emu::hip::stream_stats(stream.as_raw().cast()).unwrap();
            assert_eq!(
                (after.launches - before.launches, after.host_copies() - before.host_copies(), after.synchronizations - before.synchronizations),
                (launches, 0, 0),
                "{layout:?} {weights:?} replay {step}: launches, host copies, synchronizations"
            );
            let got: Vec<f32> = out.download(&stream).unwrap().iter().map(|v| v.to_f32()).collect();
            let (want, status) = forward_once(&l, &mut check_scratch, &x, &ids, &w);
            assert_eq!(status, Default::default());
            assert_eq!(got, want, "{layout:?} replay {step}: the graph's output");
            // Accuracy is checked against the device-matched reference here; the f32 bar is the
            // layer tests' (on 12 tokens with a shared expert it is at the edge: the FP8
            // activation recipe alone measures ≈ 9.2e-4 on large samples, see host/src/moe.rs).
            let diff = reference::calc_diff(&got, &l.reference(&x, &ids, &w, ReferenceActivations::DeviceMatched)).unwrap();
            assert!(diff < 1e-6, "{layout:?} replay {step}: calc_diff {diff:e} vs the device-matched reference");
        }
    }
}

fn shape_arg(e: Error) -> &'static str {
    match e {
        Error::Shape { arg, .. } => arg,
        other => panic!("expected a shape error, got {other}"),
    }
}

#[test]
fn bad_arguments_are_typed_errors() {
    let ctx = checked_context();
    let stream = Stream::new(&ctx).unwrap();
    let (e, h, i, k) = (4, 128, 128, 2);
    let mut rng = StdRng::seed_from_u64(71);
    let gw = |groups, n, kk, rng: &mut StdRng| {
        DeviceGroupedWeights::<F>::upload(&ctx, &GroupedQuantizedWeights::quantize(&randn_bf16(groups * n * kk, rng), groups, n, kk).unwrap()).unwrap()
    };
    let opts = MoeOptions { top_k: k, masked_max_tokens: 0 };
    // Layer shapes.
    let err = MoeLayer::new(&ctx, gw(e, 2 * i, h, &mut rng), gw(e, h, 2 * i, &mut rng), None, opts).err().unwrap();
    assert_eq!(shape_arg(err), "down");
    let err = MoeLayer::new(&ctx, gw(e, 2 * i, h, &mut rng), gw(e + 1, h, i, &mut rng), None, opts).err().unwrap();
    assert_eq!(shape_arg(err), "down");
    let err = MoeLayer::new(&ctx, gw(e, 2 * 64, h, &mut rng), gw(e, h, 64, &mut rng), None, opts).err().unwrap();
    assert_eq!(shape_arg(err), "gate_up");
    let err = MoeLayer::new(&ctx, gw(e, 2 * i, h, &mut rng), gw(e, h, i, &mut rng), None, MoeOptions { top_k: 0, masked_max_tokens: 0 }).err().unwrap();
    assert_eq!(shape_arg(err), "options.top_k");
    let sw = |n, kk, rng: &mut StdRng| DeviceWeights::<F>::upload(&ctx, &QuantizedWeights::quantize(&randn_bf16(n * kk, rng), n, kk).unwrap()).unwrap();
    let err = MoeLayer::new(&ctx, gw(e, 2 * i, h, &mut rng), gw(e, h, i, &mut rng), Some((sw(256, h, &mut rng), sw(h, 256, &mut rng))), opts).err().unwrap();
    assert_eq!(shape_arg(err), "shared");

    // forward.
    let layer = MoeLayer::new(&ctx, gw(e, 2 * i, h, &mut rng), gw(e, h, i, &mut rng), None, opts).unwrap();
    let mut scratch = MoeScratch::new(&layer, 4, 0).unwrap();
    let x = ctx.alloc_zeroed::<bf16>(5 * h).unwrap();
    let ids = ctx.alloc_zeroed::<i32>(5 * k).unwrap();
    let w = ctx.alloc_zeroed::<f32>(5 * k).unwrap();
    let mut out = ctx.alloc_zeroed::<bf16>(5 * h).unwrap();
    let err = layer.forward(&stream, &x, &ids, &w, &mut out, &mut scratch).err().unwrap();
    assert!(err.to_string().contains("max_tokens = 4"), "{err}");
    assert_eq!(shape_arg(err), "hidden");
    let x4 = x.slice(..4 * h).unwrap();
    let err = layer.forward(&stream, x4, &ids, w.slice(..4 * k).unwrap(), out.slice_mut(..4 * h).unwrap(), &mut scratch).err().unwrap();
    assert_eq!(shape_arg(err), "topk_ids");
    let err = layer.forward(&stream, x4, ids.slice(..4 * k).unwrap(), &w, out.slice_mut(..4 * h).unwrap(), &mut scratch).err().unwrap();
    assert_eq!(shape_arg(err), "topk_weights");
    let err = layer.forward(&stream, x4, ids.slice(..4 * k).unwrap(), w.slice(..4 * k).unwrap(), &mut out, &mut scratch).err().unwrap();
    assert_eq!(shape_arg(err), "out");
    let err = layer
        .forward(&stream, x.slice(..h + 8).unwrap(), ids.slice(..k).unwrap(), w.slice(..k).unwrap(), out.slice_mut(..h + 8).unwrap(), &mut scratch)
        .err()
        .unwrap();
    assert_eq!(shape_arg(err), "hidden");
    let err = layer
        .forward_with(
            &stream,
            x4,
            ids.slice(..4 * k).unwrap(),
            w.slice(..4 * k).unwrap(),
            out.slice_mut(..4 * h).unwrap(),
            &mut scratch,
            MoeLayout::Masked,
            &mut |_| Ok(()),
        )
        .err()
        .unwrap();
    assert_eq!(shape_arg(err), "layout");
    let other = MoeLayer::new(&ctx, gw(e, 2 * i, h, &mut rng), gw(e, h, i, &mut rng), None, MoeOptions { top_k: 3, masked_max_tokens: 0 }).unwrap();
    let err = other.forward(&stream, x4, ids.slice(..4 * k).unwrap(), w.slice(..4 * k).unwrap(), out.slice_mut(..4 * h).unwrap(), &mut scratch).err().unwrap();
    assert_eq!(shape_arg(err), "scratch");
    // The observer's error stops the pass.
    let err = layer
        .forward_with(
            &stream,
            x4,
            ids.slice(..4 * k).unwrap(),
            w.slice(..4 * k).unwrap(),
            out.slice_mut(..4 * h).unwrap(),
            &mut scratch,
            MoeLayout::Contiguous,
            &mut |s| {
                if s == MoeStage::GateUpGemm { Err(Error::Unsupported("stop".into())) } else { Ok(()) }
            },
        )
        .err()
        .unwrap();
    assert!(matches!(err, Error::Unsupported(ref m) if m == "stop"));
    // A buffer of another context.
    let ctx2 = Context::new().unwrap();
    let foreign = ctx2.alloc_zeroed::<bf16>(4 * h).unwrap();
    let err =
        layer.forward(&stream, &foreign, ids.slice(..4 * k).unwrap(), w.slice(..4 * k).unwrap(), out.slice_mut(..4 * h).unwrap(), &mut scratch).err().unwrap();
    assert!(matches!(err, Error::ForeignBuffer { .. }), "{err}");

    // The routing kernels' own entry points.
    let b = |n| ctx.alloc_zeroed::<i32>(n).unwrap();
    let (mut slots, mut row_src, mut m_idx, mut st, mut mm, mut work) = (b(8), b(1024), b(1024), b(4), b(4), b(64));
    let ids8 = ctx.alloc_zeroed::<i32>(8).unwrap();
    let mut route = |experts, rows: usize, masked: Option<usize>, work_len: usize| {
        let index = if masked.is_some() { mm.as_slice_mut() } else { m_idx.slice_mut(..rows).unwrap() };
        let out = RouteBuffers {
            slots: slots.as_slice_mut(),
            row_src: row_src.slice_mut(..rows).unwrap(),
            index,
            status: st.as_slice_mut(),
            work: work.slice_mut(..work_len).unwrap(),
        };
        match masked {
            None => moe_route_contiguous(&stream, ids8.as_slice(), 2, experts, out),
            Some(m) => moe_route_masked(&stream, ids8.as_slice(), 2, experts, m, out),
        }
    };
    assert_eq!(shape_arg(route(0, 1024, None, 64).unwrap_err()), "experts");
    assert_eq!(shape_arg(route(1025, 1024, None, 64).unwrap_err()), "experts");
    assert_eq!(shape_arg(route(4, 512, None, 64).unwrap_err()), "row_src");
    assert_eq!(route_work_len(4, 2, 4), Some(8 + 5 + 9));
    assert_eq!(shape_arg(route(4, 640, None, 21).unwrap_err()), "work");
    route(4, 640, None, 22).unwrap(); // the bound: 8 + 4·127 → 640 rows
    assert_eq!(shape_arg(route(4, 16, Some(0), 64).unwrap_err()), "m_max");
    assert_eq!(shape_arg(route(4, 16, Some(8), 64).unwrap_err()), "row_src");
    assert_eq!(shape_arg(route(5, 20, Some(4), 64).unwrap_err()), "index");
    route(4, 32, Some(8), 64).unwrap();
    let out = RouteBuffers {
        slots: slots.as_slice_mut(),
        row_src: row_src.as_slice_mut(),
        index: m_idx.as_slice_mut(),
        status: st.as_slice_mut(),
        work: work.as_slice_mut(),
    };
    assert_eq!(shape_arg(moe_route_contiguous(&stream, ids8.as_slice(), 3, 4, out).unwrap_err()), "topk_ids");
    let out = RouteBuffers {
        slots: slots.as_slice_mut(),
        row_src: row_src.as_slice_mut(),
        index: m_idx.as_slice_mut(),
        status: st.slice_mut(..3).unwrap(),
        work: work.as_slice_mut(),
    };
    assert_eq!(shape_arg(moe_route_contiguous(&stream, ids8.as_slice(), 2, 4, out).unwrap_err()), "status");
    let y = ctx.alloc_zeroed::<bf16>(16 * 12).unwrap();
    let wts = ctx.alloc_zeroed::<f32>(8).unwrap();
    let mut o = ctx.alloc_zeroed::<bf16>(4 * 12).unwrap();
    let err = moe_unpermute(&stream, y.as_slice(), slots.as_slice(), wts.as_slice(), None, o.as_slice_mut(), 12).unwrap_err();
    assert_eq!(shape_arg(err), "hidden");
    let err = moe_unpermute(&stream, y.as_slice(), slots.as_slice(), wts.slice(..7).unwrap(), None, o.slice_mut(..4 * 8).unwrap(), 8).unwrap_err();
    assert_eq!(shape_arg(err), "weights");
    let mut q = ctx.alloc_zeroed::<u8>(4 * 128).unwrap();
    let mut sf = ctx.alloc_zeroed::<f32>(4).unwrap();
    let xg = ctx.alloc_zeroed::<bf16>(128).unwrap();
    let view = ActivationsViewMut::<F>::new(q.as_slice_mut(), sf.as_slice_mut(), 4, 128).unwrap();
    let err = moe_gather_quantize(&stream, xg.as_slice(), row_src.slice(..3).unwrap(), view).unwrap_err();
    assert_eq!(shape_arg(err), "row_src");
    // The activation pass: gate·up rows of 2k values, one row_src entry per row.
    let gu = ctx.alloc_zeroed::<bf16>(4 * 256).unwrap();
    let view = ActivationsViewMut::<F>::new(q.as_slice_mut(), sf.as_slice_mut(), 4, 128).unwrap();
    let err = moe_silu_mul_quantize(&stream, gu.slice(..4 * 255).unwrap(), row_src.slice(..4).unwrap(), 4, view).unwrap_err();
    assert_eq!(shape_arg(err), "gate_up");
    let view = ActivationsViewMut::<F>::new(q.as_slice_mut(), sf.as_slice_mut(), 4, 128).unwrap();
    let err = moe_silu_mul_quantize(&stream, gu.as_slice(), row_src.slice(..3).unwrap(), 4, view).unwrap_err();
    assert_eq!(shape_arg(err), "row_src");
}

/// The example shape (16 experts, hidden 1024, intermediate 512, top-8) for
/// T ∈ {1, 7, 128, 1000}, both layouts where they apply, against both references. Long (the
/// emulator runs ≈ 40 GFLOP of MFMAs): `cargo test --release --test moe -- --ignored`.
#[test]
#[ignore]
fn example_shape_sweep() {
    let ctx = checked_context();
    let (e, h, i, k) = (16, 1024, 512, 8);
    let l = random_layer(&ctx, e, h, i, None, MoeOptions { top_k: k, masked_max_tokens: 7 }, 91);
    let mut scratch = MoeScratch::new(&l.layer, 1000, 7).unwrap();
    let mut rng = StdRng::seed_from_u64(92);
    for t in [1usize, 7, 128, 1000] {
        let (x, ids, w) = inputs(t, h, k, e, false, &mut rng);
        let started = std::time::Instant::now();
        check_layer(&l, &mut scratch, l.layer.layout_for(t), &x, &ids, &w, &format!("{:?} T={t}", l.layer.layout_for(t)));
        eprintln!("  T={t}: {:.1} s", started.elapsed().as_secs_f64());
    }
}

/// The fused path's kernels (pre-shuffled weights, contiguous layout): at 32- and 64-row
/// alignment, on the two-phase and the pipelined bs loop, the gate·up GEMM with its activation
/// epilogue (at 32 rows, over the bf16 tokens it quantizes itself) and the down GEMM with its
/// scatter epilogue each run (checked by name on the emulator's launch reports), match the
/// device-matched reference, and give the same bits as the logical layer's unfused launches;
/// with a shared expert too, and repeated runs are bit-identical.
#[test]
fn fused_kernels_all_run_and_agree_with_the_unfused_layer() {
    let ctx = checked_context();
    let (e, i, k) = (8, 256, 2);
    let opts = MoeOptions { top_k: k, masked_max_tokens: 0 };
    // H = 1152: 9 K blocks of the gate·up GEMM, so the quantizing loop's scales cross two
    // 4-block windows and end on an odd block.
    for (shared, h) in [(None, 256), (Some(128), 256), (None, 1152)] {
        let logical = random_layer_in(&ctx, e, h, i, shared, opts, 91, WeightLayout::Logical);
        let mut pre = random_layer_in(&ctx, e, h, i, shared, opts, 91, WeightLayout::Preshuffled);
        let mut rng = StdRng::seed_from_u64(92);
        let (x, ids, w) = inputs(6, h, k, e, true, &mut rng);
        let mut scratch_l = MoeScratch::new(&logical.layer, 6, 0).unwrap();
        let want = forward_with_overrides(&logical, &mut scratch_l, &x, &ids, &w, fp8gemm::Overrides::NONE);
        let matched = pre.reference(&x, &ids, &w, ReferenceActivations::DeviceMatched);
        let mut seen: Vec<String> = Vec::new();
        for (align, pipelined) in [(32, None), (64, Some(false)), (64, Some(true))] {
            let what = format!("H {h}, shared {shared:?}, align {align}, pipelined {pipelined:?}");
            pre.layer.set_contiguous_align(Some(align)).unwrap();
            let mut scratch = MoeScratch::new(&pre.layer, 6, 0).unwrap();
            let mut stream = Stream::new(&ctx).unwrap();
            if let Some(p) = pipelined {
                stream.set_overrides(fp8gemm::Overrides::NONE.with_bs_pipelined(p));
            }
            let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
            let (d_x, d_ids, d_w) = (ctx.upload(&xb).unwrap(), ctx.upload(&ids).unwrap(), ctx.upload(&w).unwrap());
            let mut out = ctx.alloc_zeroed::<bf16>(x.len()).unwrap();
            let mut kernels = Vec::new();
            let run = pre
                .layer
                .forward_with(&stream, &d_x, &d_ids, &d_w, &mut out, &mut scratch, MoeLayout::Contiguous, &mut |_| {
                    stream.synchronize()?;
                    kernels.push(amdgpu_emu::hip::last_launch_report().map(|r| r.kernel.clone()).unwrap_or_default());
                    Ok(())
                })
                .unwrap();
            assert!(run.gathered && run.fused_activation && run.fused_unpermute, "{what}: {run:?}");
            assert_eq!(run.quantized_in_gemm, align == 32, "{what}");
            let got: Vec<f32> = out.download(&stream).unwrap().iter().map(|v| v.to_f32()).collect();
            let diff = reference::calc_diff(&got, &matched).unwrap();
            assert!(diff < 2e-5, "{what}: calc_diff {diff:e} vs the device-matched reference");
            let bad = got.iter().zip(&want).position(|(a, b)| a.to_bits() != b.to_bits());
            assert!(bad.is_none(), "{what}: out[{bad:?}] differs from the logical layer's unfused result");
            let gemms: Vec<&String> = kernels.iter().filter(|n| n.contains("m_grouped")).collect();
            assert_eq!(gemms.len(), 2, "{what}: {kernels:?}");
            let pipe = pipelined == Some(true);
            let tile = |kind: &str| {
                let qa = if kind == "silu" && align == 32 { "_qa" } else { "" };
                format!("m_grouped_fp8_gemm_nt_contiguous_splitk_{kind}_bs{qa}{}_bm{align}_bn128", if pipe { "_pipe" } else { "" })
            };
            assert_eq!((gemms[0].as_str(), gemms[1].as_str()), (tile("silu").as_str(), tile("scatter").as_str()), "{what}");
            seen.extend(gemms.into_iter().cloned());
            let (again, _) = forward_once(&pre, &mut scratch, &x, &ids, &w);
            let bad = got.iter().zip(&again).position(|(a, b)| a.to_bits() != b.to_bits());
            assert!(bad.is_none(), "{what}: a repeated run differs at out[{bad:?}]");
            // Launches cut into 128-row chunks (the epilogues' counters and outputs offset per
            // chunk, the scatter reading rows of earlier chunks): the same bits.
            let mut o = fp8gemm::Overrides::NONE.with_contiguous_chunk_rows(128);
            if let Some(p) = pipelined {
                o = o.with_bs_pipelined(p);
            }
            let chunked = forward_with_overrides(&pre, &mut scratch, &x, &ids, &w, o);
            let bad = got.iter().zip(&chunked).position(|(a, b)| a.to_bits() != b.to_bits());
            assert!(bad.is_none(), "{what}: 128-row chunks differ at out[{bad:?}]");
            // Epilogues pinned off (the activation and unpermute launches of their own, the
            // activation over the routed rows only): the same bits.
            let o = pipelined.map_or(fp8gemm::Overrides::NONE, |p| fp8gemm::Overrides::NONE.with_bs_pipelined(p));
            pre.layer.set_epilogues(Some(fp8gemm::MoeEpilogues { activation: false, unpermute: false }));
            let separate = forward_with_overrides(&pre, &mut scratch, &x, &ids, &w, o);
            pre.layer.set_epilogues(None);
            let bad = got.iter().zip(&separate).position(|(a, b)| a.to_bits() != b.to_bits());
            assert!(bad.is_none(), "{what}: the separate launches differ at out[{bad:?}]");
        }
        pre.layer.set_contiguous_align(None).unwrap();
        assert_eq!(seen.len(), 6, "{seen:?}");
    }
}

/// Past one round of the device the layer runs its activation and unpermute as launches of
/// their own; pinned on (`MoeLayer::set_epilogues`) the gate·up and down launches run them as
/// epilogues over several rounds (every pair counter and token counter reused across rounds):
/// the same bits, and the launches the pin asks for.
#[test]
fn pinned_epilogues_past_one_round_give_the_same_bits() {
    let ctx = checked_context();
    let (e, h, i, k, t) = (8, 512, 256, 2, 3800);
    let opts = MoeOptions { top_k: k, masked_max_tokens: 0 };
    let mut l = random_layer_in(&ctx, e, h, i, Some(128), opts, 95, WeightLayout::Preshuffled);
    l.layer.set_contiguous_align(Some(32)).unwrap();
    let mut rng = StdRng::seed_from_u64(96);
    let (x, ids, w) = inputs(t, h, k, e, false, &mut rng);
    let mut scratch = MoeScratch::new(&l.layer, t, 0).unwrap();
    let mut runs = Vec::new();
    for pin in [None, Some(fp8gemm::MoeEpilogues { activation: true, unpermute: true })] {
        l.layer.set_epilogues(pin);
        let stream = Stream::new(&ctx).unwrap();
        let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
        let (d_x, d_ids, d_w) = (ctx.upload(&xb).unwrap(), ctx.upload(&ids).unwrap(), ctx.upload(&w).unwrap());
        let mut out = ctx.alloc_zeroed::<bf16>(x.len()).unwrap();
        let run = l.layer.forward(&stream, &d_x, &d_ids, &d_w, &mut out, &mut scratch).unwrap();
        let pinned = pin.is_some();
        assert!(run.gathered, "{pin:?}: {run:?}");
        assert_eq!((run.fused_activation, run.fused_unpermute), (pinned, pinned), "{pin:?}: {run:?}");
        // Past one round the tokens are quantized by a launch of their own either way.
        assert!(!run.quantized_in_gemm, "{pin:?}: {run:?}");
        runs.push(out.download(&stream).unwrap());
    }
    let bad = runs[0].iter().zip(&runs[1]).position(|(a, b)| a.to_bits() != b.to_bits());
    assert!(bad.is_none(), "the epilogues past one round differ from the separate launches at out[{bad:?}]");
    let got: Vec<f32> = runs[1].iter().map(|v| v.to_f32()).collect();
    let matched = l.reference(&x, &ids, &w, ReferenceActivations::DeviceMatched);
    let diff = reference::calc_diff(&got, &matched).unwrap();
    assert!(diff < 2e-5, "calc_diff {diff:e} vs the device-matched reference");
}

/// The layout the layer plans its launches for (`expected_layout`: uniform routing, every
/// non-empty expert padded to whole tiles) against the mean of 40 seeded uniform routings,
/// and its closed cases.
#[test]
fn expected_layout_is_the_mean_of_uniform_routings() {
    assert_eq!(expected_layout(0, 8, 64, 32), (0, 0));
    // Every token to every expert: T rows each, padded.
    assert_eq!(expected_layout(100, 4, 4, 32), (4, 4 * 128));
    for &(tokens, k, experts, align) in &[(1024, 9, 257, 32), (1024, 9, 257, 64), (64, 8, 256, 32), (4096, 8, 32, 64), (3, 8, 257, 32), (256, 8, 64, 32)] {
        let (active, rows) = expected_layout(tokens, k, experts, align);
        assert_eq!(rows % align, 0, "{tokens}x{k} over {experts}, align {align}: rows {rows}");
        let mut rng = StdRng::seed_from_u64(7);
        let (mut sum_active, mut sum_rows) = (0.0, 0.0);
        let draws = 40;
        for _ in 0..draws {
            let ids = random_ids(tokens, k, experts, &mut rng, false, 0.0);
            let mut count = vec![0usize; experts];
            for &e in &ids {
                count[e as usize] += 1;
            }
            sum_active += count.iter().filter(|&&c| c > 0).count() as f64;
            sum_rows += count.iter().map(|&c| c.div_ceil(align) * align).sum::<usize>() as f64;
        }
        let (ma, mr) = (sum_active / draws as f64, sum_rows / draws as f64);
        // Both rounded up by at most one expert / one tile.
        assert!((active as f64 - ma).abs() <= 0.02 * ma + 1.0, "{tokens}x{k} over {experts}: {active} active experts, routings' mean {ma}");
        assert!((rows as f64 - mr).abs() <= 0.02 * mr + align as f64, "{tokens}x{k} over {experts}, align {align}: {rows} rows, routings' mean {mr}");
    }
}

/// A layer of AMD's `shapes_fmoe_1stage.csv` at its full size (hidden 6144, pre-shuffled
/// weights, no shared expert, the contiguous layout at the alignment the layer chooses) on
/// random inputs: every output element finite, the status clean, and a sample of tokens (every
/// `T/192`-th and the last) against both CPU references, computed for those tokens alone (each
/// token's output depends on its own row only). Long: the emulator runs every MFMA.
fn full_size_layer_matches_the_reference(e: usize, k: usize, i: usize, t: usize, seed: u64) {
    let ctx = checked_context();
    let h = 6144;
    let what = format!("E={e} k={k} H={h} I={i} T={t}");
    let l = random_layer_in(&ctx, e, h, i, None, MoeOptions { top_k: k, masked_max_tokens: 0 }, seed, WeightLayout::Preshuffled);
    let mut scratch = MoeScratch::new(&l.layer, t, 0).unwrap();
    let mut rng = StdRng::seed_from_u64(seed + 1);
    let (x, ids, w) = inputs(t, h, k, e, false, &mut rng);
    let started = std::time::Instant::now();
    let (got, status) = forward_once(&l, &mut scratch, &x, &ids, &w);
    eprintln!("{what}: forward on the emulator took {:.0} s (wall time here, not a GPU figure)", started.elapsed().as_secs_f64());
    assert_eq!(status, Default::default(), "{what}");
    if let Some(p) = got.iter().position(|v| !v.is_finite()) {
        panic!("{what}: out[{}, {}] = {}", p / h, p % h, got[p]);
    }
    let mut sample: Vec<usize> = (0..t).step_by((t / 192).max(1)).collect();
    if sample.last() != Some(&(t - 1)) {
        sample.push(t - 1);
    }
    let pick = |v: &[f32], width: usize| -> Vec<f32> { sample.iter().flat_map(|&s| v[s * width..(s + 1) * width].iter().copied()).collect() };
    let sub_ids: Vec<i32> = sample.iter().flat_map(|&s| ids[s * k..(s + 1) * k].iter().copied()).collect();
    assert_matches_references(&l, &pick(&got, h), &pick(&x, h), &sub_ids, &pick(&w, k), &format!("{what}, {} sampled tokens", sample.len()));
}

/// `shapes_fmoe_1stage.csv`'s GLM-5.1-class row at 16384 tokens (257 experts, top-9, expert
/// width 256), the row whose padded layout once passed the 2 GiB of 32-bit buffer offsets.
/// Long: `cargo test --release --test moe -- --ignored full_size`.
#[test]
#[ignore]
fn full_size_257_experts_at_16384_tokens_matches_the_reference() {
    full_size_layer_matches_the_reference(257, 9, 256, 16384, 91);
}

/// `shapes_fmoe_1stage.csv`'s largest row (384 experts, top-8, width 256, 32768 tokens): the
/// down GEMM's rows (over 262,144) pass 2 GiB of bf16 output, so the layer runs its GEMMs in
/// row chunks. Long: `cargo test --release --test moe -- --ignored full_size`.
#[test]
#[ignore]
fn full_size_384_experts_at_32768_tokens_matches_the_reference() {
    full_size_layer_matches_the_reference(384, 8, 256, 32768, 92);
}

/// `shapes_fmoe_1stage.csv`'s 32-expert rows (top-8, width 2048) at 2048 tokens.
/// Long: `cargo test --release --test moe -- --ignored full_size`.
#[test]
#[ignore]
fn full_size_32_experts_at_2048_tokens_matches_the_reference() {
    full_size_layer_matches_the_reference(32, 8, 2048, 2048, 93);
}

/// A quick run of the full-size check (257 experts at 256 tokens) for timing the long ones.
#[test]
#[ignore]
fn full_size_257_experts_at_256_tokens_matches_the_reference() {
    full_size_layer_matches_the_reference(257, 9, 256, 256, 94);
}
