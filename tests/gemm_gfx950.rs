//! The gfx950 (MI350X/MI355X) code object end to end on an emulated gfx950 device: OCP E4M3FN
//! operands (DeepSeek's checkpoint format, no conversion), the pre-shuffled bs kernels whose
//! main loops issue the CDNA4 `v_mfma_f32_16x16x128_f8f6f4` (one per 128-deep block and output,
//! `fp8gemm_device::intrinsics::mfma_f32_16x16x128_fp8`), against both CPU references (calc_diff
//! and element bounds) with every emulator check on, and the instruction mix of the shipped
//! main loops. Every test of this binary runs on the gfx950 device (the emulated device is
//! process-wide, so gfx950 tests live in their own test binary).

mod common;

use amdgpu_emu::decode::{Inst, Op, Program};
use amdgpu_emu::loader::{CodeObject, Target};
use common::{assert_elementwise, randn_bf16};
use fp8gemm::fp8::E4M3Fn;
use fp8gemm::layout::WeightLayout;
use fp8gemm::quant::{GroupedQuantizedWeights, QuantizedActivations, QuantizedWeights};
use fp8gemm::{Context, DeviceActivations, DeviceGroupedWeights, DeviceWeights, Overrides, Stream, fp8_gemm_nt, m_grouped_fp8_gemm_nt_contiguous, reference};
use half::bf16;
use rand::SeedableRng;
use rand::rngs::StdRng;

/// A context on the emulated gfx950 device with every launch check on.
fn gfx950_context() -> Context {
    amdgpu_emu::hip::set_device_arch(Target::Gfx950);
    amdgpu_emu::hip::set_launch_checks(amdgpu_emu::exec::Checks::all());
    let ctx = Context::new().expect("the emulated gfx950 device opens");
    assert_eq!(ctx.arch(), fp8gemm::codeobj::Arch::Gfx950, "the context runs the gfx950 code object");
    ctx
}

struct Case {
    m: usize,
    n: usize,
    k: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    qa: QuantizedActivations<E4M3Fn>,
    qb: QuantizedWeights<E4M3Fn>,
}

/// DeepGEMM's test recipe in E4M3FN: BF16-rounded normal operands, 1×128 / 128×128 scales.
fn case(m: usize, n: usize, k: usize, seed: u64) -> Case {
    let mut rng = StdRng::seed_from_u64(seed);
    let (a, b) = (randn_bf16(m * k, &mut rng), randn_bf16(n * k, &mut rng));
    let qa = QuantizedActivations::quantize(&a, m, k).unwrap();
    let qb = QuantizedWeights::quantize(&b, n, k).unwrap();
    Case { m, n, k, a, b, qa, qb }
}

/// calc_diff < 1e-5 against the dequantized reference and < 1e-3 against the unquantized one,
/// and every element finite and within one bf16 ulp plus `1e-5 ×` the RMS of the dequantized
/// reference (the CDNA4 MFMA sums a 128-deep block in another order than four 32-deep ones).
fn assert_accurate(what: &str, c: &Case, got: &[bf16]) {
    let mut want = vec![bf16::ZERO; c.m * c.n];
    reference::fp8_gemm_nt(&c.qa, &c.qb, &mut want).unwrap();
    let mut want_f = vec![0f32; c.m * c.n];
    reference::gemm_nt_f32(&c.a, &c.b, c.m, c.n, c.k, &mut want_f).unwrap();
    let dq = reference::calc_diff(got, &want).unwrap();
    let df = reference::calc_diff(got, &want_f).unwrap();
    assert!(dq < 1e-5, "{what}: calc_diff vs dequantized {dq:e}");
    assert!(df < 1e-3, "{what}: calc_diff vs unquantized {df:e}");
    assert_elementwise(what, got, &want);
}

#[test]
fn bs_tiles_on_gfx950_match_both_references() {
    let ctx = gfx950_context();
    let mut stream = Stream::new(&ctx).unwrap();
    // Tails of every tile height, n a multiple of 4 but not of 16 or 128, and K block counts
    // that are odd and not multiples of the 4-block scale window.
    for (m, n, k) in [(1usize, 132usize, 384usize), (33, 196, 640), (130, 260, 1152)] {
        let c = case(m, n, k, (m * 7 + n + k) as u64);
        let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
        let db = DeviceWeights::upload_with_layout(&ctx, &c.qb, WeightLayout::Preshuffled).unwrap();
        for tile in [(32u32, 128u32), (48, 128), (64, 128), (80, 128), (96, 128), (128, 128)] {
            let what = format!("gfx950 {m}x{n}x{k} bs tile {}x{}", tile.0, tile.1);
            stream.set_overrides(Overrides::NONE.with_tile(tile.0, tile.1).with_split(1));
            let mut dd = ctx.upload(&vec![bf16::from_f32(1234.5); m * n]).unwrap();
            let run = fp8_gemm_nt(&stream, &da, &db, &mut dd).unwrap_or_else(|e| panic!("{what}: {e}"));
            let cfg = run.config.unwrap();
            assert_eq!((cfg.block_m, cfg.block_n, cfg.splits), (tile.0, tile.1, 1), "{what}: {cfg}");
            assert!(cfg.kernel.starts_with("fp8_gemm_nt_bs"), "{what}: {cfg}");
            assert_accurate(&what, &c, &dd.download(&stream).unwrap());
        }
    }
}

#[test]
fn row_group_kernels_on_gfx950_match_both_references() {
    // fp8_gemm_nt_bs_pipe_rg2_bm{96,128}_bn128 (512 work-items, two row groups sharing B, the
    // gfx950 LDS rotation and row-major scale regions), pinned by name, with M tails in either
    // row group and K block counts around the 4-block scale window.
    let ctx = gfx950_context();
    let mut stream = Stream::new(&ctx).unwrap();
    for (m, n, k) in [(1usize, 132usize, 384usize), (97, 196, 640), (129, 260, 1152)] {
        let c = case(m, n, k, (m * 11 + n + k) as u64);
        let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
        let db = DeviceWeights::upload_with_layout(&ctx, &c.qb, WeightLayout::Preshuffled).unwrap();
        for name in ["fp8_gemm_nt_bs_pipe_rg2_bm96_bn128", "fp8_gemm_nt_bs_pipe_rg2_bm128_bn128"] {
            let what = format!("gfx950 {m}x{n}x{k} {name}");
            stream.set_overrides(Overrides::NONE.with_kernel(name).unwrap().with_split(1));
            let mut dd = ctx.upload(&vec![bf16::from_f32(1234.5); m * n]).unwrap();
            let run = fp8_gemm_nt(&stream, &da, &db, &mut dd).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(run.config.unwrap().kernel, name, "{what}");
            assert_accurate(&what, &c, &dd.download(&stream).unwrap());
        }
    }
}

#[test]
fn logical_tiles_on_gfx950_match_both_references() {
    // The logical-layout dense loop (`fp8gemm_device::dense`), every tile, split-K too.
    let ctx = gfx950_context();
    let mut stream = Stream::new(&ctx).unwrap();
    for (m, n, k) in [(33usize, 196usize, 640usize), (130, 260, 1152)] {
        let c = case(m, n, k, (m * 5 + n + k) as u64);
        let da = DeviceActivations::upload(&ctx, &c.qa).unwrap();
        let db = DeviceWeights::upload(&ctx, &c.qb).unwrap();
        for (tile, split) in [((64u32, 64u32), 1u32), ((64, 128), 1), ((128, 128), 1), ((64, 64), 3)] {
            let what = format!("gfx950 {m}x{n}x{k} logical tile {}x{} split {split}", tile.0, tile.1);
            stream.set_overrides(Overrides::NONE.with_tile(tile.0, tile.1).with_split(split));
            let mut dd = ctx.upload(&vec![bf16::from_f32(1234.5); m * n]).unwrap();
            let run = fp8_gemm_nt(&stream, &da, &db, &mut dd).unwrap_or_else(|e| panic!("{what}: {e}"));
            let cfg = run.config.unwrap();
            assert_eq!((cfg.block_m, cfg.block_n, cfg.splits), (tile.0, tile.1, split), "{what}: {cfg}");
            assert!(!cfg.kernel.contains("_bs_"), "{what}: {cfg}");
            assert_accurate(&what, &c, &dd.download(&stream).unwrap());
        }
    }
}

#[test]
fn m_grouped_contiguous_on_gfx950_matches_the_reference() {
    // Three experts of 70, 0 and 150 rows in DeepGEMM's 128-row layout, both weight layouts.
    let ctx = gfx950_context();
    let stream = Stream::new(&ctx).unwrap();
    let (groups, n, k) = (3usize, 256usize, 640usize);
    let m_indices = reference::contiguous_m_indices(&[70, 0, 150], 128);
    let rows = m_indices.len();
    let mut rng = StdRng::seed_from_u64(950);
    let (a, b) = (randn_bf16(rows * k, &mut rng), randn_bf16(groups * n * k, &mut rng));
    let qa = QuantizedActivations::<E4M3Fn>::quantize(&a, rows, k).unwrap();
    let qb = GroupedQuantizedWeights::<E4M3Fn>::quantize(&b, groups, n, k).unwrap();
    let mut want = vec![bf16::ZERO; rows * n];
    reference::m_grouped_fp8_gemm_nt_contiguous(&qa, &qb, &m_indices, &mut want).unwrap();
    let rms = (want.iter().map(|w| f64::from(w.to_f32()).powi(2)).sum::<f64>() / want.len() as f64).sqrt() as f32;
    let da = DeviceActivations::upload(&ctx, &qa).unwrap();
    let di = ctx.upload(&m_indices).unwrap();
    for layout in [WeightLayout::Logical, WeightLayout::Preshuffled] {
        let db = DeviceGroupedWeights::upload_with_layout(&ctx, &qb, layout).unwrap();
        let mut dd = ctx.upload(&vec![bf16::from_f32(1234.5); rows * n]).unwrap();
        let run = m_grouped_fp8_gemm_nt_contiguous(&stream, &da, &db, &mut dd, &di).unwrap_or_else(|e| panic!("{layout}: {e}"));
        let got = dd.download(&stream).unwrap();
        let what = format!("gfx950 contiguous [{layout}] {:?}", run.config.map(|c| c.kernel));
        let (mut gs, mut ws) = (Vec::new(), Vec::new());
        for (i, &g) in m_indices.iter().enumerate() {
            if g >= 0 {
                gs.extend_from_slice(&got[i * n..(i + 1) * n]);
                ws.extend_from_slice(&want[i * n..(i + 1) * n]);
            }
        }
        let dq = reference::calc_diff(&gs, &ws).unwrap();
        assert!(dq < 1e-5, "{what}: calc_diff vs dequantized {dq:e}");
        for (i, (g, w)) in gs.iter().zip(&ws).enumerate() {
            let (g, w) = (g.to_f32(), w.to_f32());
            let tol = w.abs() * 2f32.powi(-7) + rms * 1e-5;
            assert!(g.is_finite() && (g - w).abs() <= tol, "{what}: routed element {i} = {g}, expected {w} (± {tol})");
        }
    }
}

/// The kernel's main loop: the instructions from the earliest backward-branch target to the
/// last backward branch.
fn main_loop(co: &CodeObject, name: &str) -> Vec<Inst> {
    let kernel = co.kernel(name).unwrap_or_else(|| panic!("{name} missing from gfx950"));
    let program = Program::decode(co, kernel).unwrap_or_else(|e| panic!("{name}: {e}"));
    let insts: Vec<(u64, Inst)> = program.insts.into_iter().map(|(pc, r)| (pc, r.unwrap_or_else(|e| panic!("{name}: {e}")))).collect();
    let is_branch = |op: Op| matches!(op, Op::s_branch | Op::s_cbranch_scc0 | Op::s_cbranch_scc1 | Op::s_cbranch_vccz | Op::s_cbranch_vccnz);
    let back: Vec<(u64, u64)> =
        insts.iter().filter(|(pc, i)| is_branch(i.op) && i.branch_target(*pc) <= *pc).map(|(pc, i)| (i.branch_target(*pc), *pc)).collect();
    let (Some(start), Some(end)) = (back.iter().map(|b| b.0).min(), back.iter().map(|b| b.1).max()) else { panic!("{name}: no loop") };
    insts.into_iter().filter(|(pc, _)| (start..=end).contains(pc)).map(|(_, i)| i).collect()
}

#[test]
fn gfx950_main_loops_issue_only_the_cdna4_fp8_mfma() {
    // On gfx950 the main loops (bs, logical, k-grouped) issue v_mfma_f32_16x16x128_f8f6f4 (FP8 operands: cbsz = blgp
    // = 0), one per 128-deep block and 16×16 output: a quarter of gfx942's 16x16x32 count.
    let co = CodeObject::parse(fp8gemm::codeobj::GFX950).expect("the gfx950 code object parses");
    for name in [
        "fp8_gemm_nt_bs_bm32_bn128",
        "fp8_gemm_nt_bs_bm64_bn128",
        "fp8_gemm_nt_bs_pipe_bm64_bn128",
        "fp8_gemm_nt_bs_bm128_bn128",
        "fp8_gemm_nt_bm64_bn64",
        "fp8_gemm_nt_bm128_bn128",
        "k_grouped_fp8_gemm_tn_contiguous_bm64_bn64",
    ] {
        let body = main_loop(&co, name);
        let mfma: Vec<&Inst> = body.iter().filter(|i| amdgpu_emu::decode::is_mai(i.op)).collect();
        assert!(!mfma.is_empty(), "{name}: no MFMA in the main loop");
        for i in &mfma {
            assert_eq!(i.op.name(), "v_mfma_f32_16x16x128_f8f6f4", "{name}: {}", amdgpu_emu::disasm::format_inst(i));
            assert_eq!((i.abs, i.neg), (0, 0), "{name}: cbsz/blgp select FP8 for both operands");
        }
    }
}
