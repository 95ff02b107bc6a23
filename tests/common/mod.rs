//! Helpers shared by the GEMM integration tests.
#![allow(dead_code)] // each test binary uses its own subset

pub use fp8gemm::config::Overrides;
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::layout::WeightLayout;
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::{CaptureMode, Context, DeviceActivations, DeviceBuffer, DeviceWeights, GemmRun, Stream, fp8_gemm_nt, reference};
use half::bf16;
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::StandardNormal;

/// Timing-model options for the timing tests: `scope`, MFMA math skipped or not, default checks.
#[cfg(feature = "emu")]
pub fn timing_opts(scope: amdgpu_emu::timing::Scope, skip: bool) -> amdgpu_emu::timing::SimOptions {
    amdgpu_emu::timing::SimOptions { scope, skip_mfma_math: skip, checks: amdgpu_emu::exec::Checks::default(), top: 5, trace_workgroup: None }
}

/// A context whose launches run with every emulator check on.
pub fn checked_context() -> Context {
    #[cfg(feature = "emu")]
    amdgpu_emu::hip::set_launch_checks(amdgpu_emu::exec::Checks::all());
    Context::new().unwrap()
}

/// `count` standard-normal values rounded to BF16 (as DeepGEMM's tests draw them).
pub fn randn_bf16(count: usize, rng: &mut StdRng) -> Vec<f32> {
    (0..count).map(|_| bf16::from_f32(rng.sample::<f32, _>(StandardNormal)).to_f32()).collect()
}

/// One dense problem of DeepGEMM's test recipe: BF16-rounded normal A (`m × k`) and B (`n × k`),
/// and their 1×128 / 128×128 quantizations.
pub struct Case {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub qa: QuantizedActivations<E4M3Fnuz>,
    pub qb: QuantizedWeights<E4M3Fnuz>,
}

/// The [`Case`] of shape `m × n × k` drawn from `seed`.
pub fn case(m: usize, n: usize, k: usize, seed: u64) -> Case {
    let mut rng = StdRng::seed_from_u64(seed);
    let a = randn_bf16(m * k, &mut rng);
    let b = randn_bf16(n * k, &mut rng);
    let qa = QuantizedActivations::quantize(&a, m, k).unwrap();
    let qb = QuantizedWeights::quantize(&b, n, k).unwrap();
    Case { m, n, k, a, b, qa, qb }
}

impl Case {
    /// The dequantized CPU reference ([`reference::fp8_gemm_nt`] of the quantized operands).
    pub fn want_dequantized(&self) -> Vec<bf16> {
        let mut w = vec![bf16::ZERO; self.m * self.n];
        reference::fp8_gemm_nt(&self.qa, &self.qb, &mut w).unwrap();
        w
    }
    /// The unquantized FP32 CPU reference of the BF16-rounded operands.
    pub fn want_unquantized(&self) -> Vec<f32> {
        let mut w = vec![0f32; self.m * self.n];
        reference::gemm_nt_f32(&self.a, &self.b, self.m, self.n, self.k, &mut w).unwrap();
        w
    }
}

/// The overrides that force `tile` and `splits` (`None`: the selector chooses), nothing else.
pub fn overrides(tile: Option<(u32, u32)>, splits: Option<u32>) -> Overrides {
    let mut o = Overrides::NONE;
    o.tile = tile;
    o.split = splits;
    o
}

/// Runs `f` on `stream` with `o` as its selector overrides, then gives the stream its own back.
pub fn with_overrides<T>(stream: &mut Stream, o: Overrides, f: impl FnOnce(&Stream) -> T) -> T {
    let own = stream.overrides();
    stream.set_overrides(o);
    let r = f(stream);
    stream.set_overrides(own);
    r
}

/// [`with_overrides`] forcing `(tile, splits)`: the stream's overrides with those two replaced.
pub fn forced<T>(stream: &mut Stream, tile: Option<(u32, u32)>, splits: Option<u32>, f: impl FnOnce(&Stream) -> T) -> T {
    let mut o = stream.overrides();
    o.tile = tile;
    o.split = splits;
    with_overrides(stream, o, f)
}

/// Runs the GEMM on `stream` with B in `layout` into a D pre-filled with a pattern (so an
/// unwritten element cannot pass) and returns D and the run.
pub fn run_with_layout(ctx: &Context, stream: &Stream, c: &Case, layout: WeightLayout) -> (Vec<bf16>, GemmRun) {
    let da = DeviceActivations::upload(ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload_with_layout(ctx, &c.qb, layout).unwrap();
    assert_eq!(db.view().layout(), layout);
    let mut dd = ctx.upload(&vec![bf16::from_f32(1234.5); c.m * c.n]).unwrap();
    let r = fp8_gemm_nt(stream, &da, &db, &mut dd).unwrap_or_else(|e| panic!("{}x{}x{} {layout}: {e}", c.m, c.n, c.k));
    (dd.download(stream).unwrap(), r)
}

/// [`run_with_layout`] with B in the logical layout ([`DeviceWeights::upload`]).
pub fn run_on(ctx: &Context, stream: &Stream, c: &Case) -> (Vec<bf16>, GemmRun) {
    run_with_layout(ctx, stream, c, WeightLayout::Logical)
}

/// calc_diff < 1e-5 against the dequantized reference and < 1e-3 against the unquantized one,
/// and every element within bf16 rounding (plus the FP32 summation order) of the dequantized
/// reference ([`assert_elementwise`]).
pub fn assert_accurate(what: &str, c: &Case, got: &[bf16]) {
    let want_q = c.want_dequantized();
    let dq = reference::calc_diff(got, &want_q).unwrap();
    let df = reference::calc_diff(got, &c.want_unquantized()).unwrap();
    assert!(dq < 1e-5, "{what}: calc_diff vs dequantized {dq:e}");
    assert!(df < 1e-3, "{what}: calc_diff vs unquantized {df:e}");
    assert_elementwise(what, got, &want_q);
}

/// Every element of `got` finite and within one bf16 ulp (2^-7 relative) of `want` plus
/// `1e-5 ×` want's RMS: two bf16 roundings of nearly the same f32 differ by at most one bf16
/// ulp, and a split, stream-K pieces or the reference's own order change the f32 summation
/// order (a few f32 ulps of the sum).
pub fn assert_elementwise(what: &str, got: &[bf16], want: &[bf16]) {
    let rms = (want.iter().map(|w| f64::from(w.to_f32()).powi(2)).sum::<f64>() / want.len().max(1) as f64).sqrt() as f32;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (g.to_f32(), w.to_f32());
        let tol = w.abs() * 2f32.powi(-7) + rms * 1e-5;
        assert!(g.is_finite() && (g - w).abs() <= tol, "{what}: D[{i}] = {g}, expected {w} (± {tol})");
    }
}

/// The operands and output of one launch on a stream.
pub type Launch<'a> = (&'a Stream, &'a DeviceActivations<E4M3Fnuz>, &'a DeviceWeights<E4M3Fnuz>, &'a mut DeviceBuffer<bf16>);

/// Two streams, each owning its workspace and both with the selector overrides `o`, run `launch`
/// at the same time on two problems (64×192×1024 and 40×128×1536), one thread per stream (the
/// emulator runs a stream's queue when it is synchronized, so both streams' launches execute at
/// once); both results must pass [`assert_accurate`]. `launch` gets the stream, the operands, D
/// and the problem's row count (for messages).
pub fn two_streams_at_once(o: Overrides, launch: impl Fn(Launch<'_>, usize) + Sync) {
    let ctx = checked_context();
    let (mut s1, mut s2) = (Stream::new(&ctx).unwrap(), Stream::new(&ctx).unwrap());
    s1.set_overrides(o);
    s2.set_overrides(o);
    let (c1, c2) = (case(64, 192, 1024, 21), case(40, 128, 1536, 22));
    let up = |c: &Case| (DeviceActivations::upload(&ctx, &c.qa).unwrap(), DeviceWeights::upload(&ctx, &c.qb).unwrap());
    let ((a1, b1), (a2, b2)) = (up(&c1), up(&c2));
    let mut d1 = ctx.alloc_zeroed::<bf16>(64 * 192).unwrap();
    let mut d2 = ctx.alloc_zeroed::<bf16>(40 * 128).unwrap();
    let launch = &launch;
    std::thread::scope(|sc| {
        for (s, a, b, d, rows) in [(&s1, &a1, &b1, &mut d1, 64usize), (&s2, &a2, &b2, &mut d2, 40)] {
            sc.spawn(move || {
                launch((s, a, b, d), rows);
                s.synchronize().unwrap();
            });
        }
    });
    assert_accurate("stream 1", &c1, &d1.download(&s1).unwrap());
    assert_accurate("stream 2", &c2, &d2.download(&s2).unwrap());
}

/// Captures `launch` (which checks the run it returns) of the `m × n × 1024` case drawn from
/// seed 31, on a stream with the selector overrides `o`, into a graph, then replays it twice into
/// a D refilled with a pattern each time; both replays must pass [`assert_accurate`] (so the
/// launch leaves whatever it needs, e.g. arrival counters, re-armed).
pub fn captured_launch_replays_twice(m: usize, n: usize, o: Overrides, launch: impl FnOnce(Launch<'_>)) {
    let ctx = checked_context();
    let mut stream = Stream::new(&ctx).unwrap();
    stream.set_overrides(o);
    let c = case(m, n, 1024, 31);
    let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
    let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
    let mut dd = ctx.alloc_zeroed::<bf16>(m * n).unwrap();
    // Thread-local, as an engine captures: a global-mode capture forbids allocations on every
    // thread of the process (HIP semantics, modelled by the emulator), so it would fail the other
    // tests of this binary running at the same time.
    stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
    launch((&stream, &da, &db, &mut dd));
    let exec = stream.end_capture().unwrap().instantiate().unwrap();
    let fill = vec![bf16::from_f32(99.0); m * n];
    for replay in 0..2 {
        dd.copy_from_host(&stream, &fill).unwrap();
        // SAFETY: every buffer of the captured launch (operands, D, the stream's workspace) is
        // alive and used by nothing else.
        unsafe { exec.launch(&stream) }.unwrap();
        assert_accurate(&format!("replay {replay}"), &c, &dd.download(&stream).unwrap());
    }
}

/// Whether every stream-K workgroup's range is whole tiles (then no tile is split and the
/// result must be bit-identical to the data-parallel kernel's).
pub fn all_whole(s: &fp8gemm_device::streamk::StreamKSchedule) -> bool {
    (0..s.sk_wgs).all(|w| {
        let (first, count) = s.range(w);
        first % s.nkb == 0 && count % s.nkb == 0
    })
}

/// The forced stream-K schedules `(g, dp)` the stream-K tests run for `tiles` tiles of `nkb`
/// blocks, each with tail tiles ≤ g ≤ the tail's K iterations: one workgroup per tile (whole
/// tiles only), one more (pieces across tile boundaries), a head of half the tiles with two
/// workgroups more than the tail, twice the tiles, and one K block per workgroup after all but
/// one tile.
pub fn stream_k_test_schedules(tiles: u32, nkb: u32) -> Vec<(u32, u32)> {
    let half = tiles / 2;
    let mut schedules = vec![
        (tiles, 0),
        ((tiles + 1).min(tiles * nkb), 0),
        ((tiles - half + 2).min((tiles - half) * nkb), half),
        ((2 * tiles).min(tiles * nkb), 0),
        (nkb, tiles - 1),
    ];
    schedules.dedup();
    schedules
}

/// A stream-K result `got` against both CPU references ([`assert_accurate`]) and the
/// data-parallel kernel's `dp_ref`: element-wise up to the summation order, and bit for bit
/// when `whole` (no tile split, [`all_whole`]).
pub fn assert_stream_k_result(what: &str, c: &Case, got: &[bf16], dp_ref: &[bf16], whole: bool) {
    assert_accurate(what, c, got);
    assert_elementwise(&format!("{what} vs data-parallel"), got, dp_ref);
    if whole {
        assert!(got.iter().zip(dp_ref).all(|(x, y)| x.to_bits() == y.to_bits()), "{what}: whole tiles only, must be bit-identical");
    }
}

/// Random top-k ids: each token's k experts drawn from `0..experts` (with repeats allowed when
/// `dups`), a fraction `special` of them replaced by −1 or an invalid id.
pub fn random_ids(tokens: usize, k: usize, experts: usize, rng: &mut StdRng, dups: bool, special: f64) -> Vec<i32> {
    let mut ids = Vec::with_capacity(tokens * k);
    for _ in 0..tokens {
        let mut row: Vec<i32> = Vec::with_capacity(k);
        while row.len() < k {
            let e = rng.random_range(0..experts) as i32;
            if dups || !row.contains(&e) || row.len() >= experts {
                row.push(e);
            }
        }
        for v in &mut row {
            if rng.random_bool(special) {
                *v = match rng.random_range(0..3) {
                    0 => -1,
                    1 => experts as i32 + rng.random_range(0..5),
                    _ => -2 - rng.random_range(0..100),
                };
            }
        }
        ids.extend(row);
    }
    ids
}
