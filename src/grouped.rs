//! The `grouped` demo: DeepGEMM's m-grouped test recipe end to end through the public API.
//!
//! * contiguous: `G` experts with uneven row counts drawn around `M` (×0.7 … ×1.3, as DeepGEMM's
//!   tests do), each padded to the 128-row alignment; `m_indices` checked and uploaded with
//!   `upload_m_indices`.
//! * masked: `G` groups of capacity `m_max = ⌈1.3·M⌉`, `masked_m[g]` drawn around `M` the same way,
//!   `expected_m = M`.
//!
//! Both are compared with the CPU references over the rows the GEMM defines (padding and
//! masked-out rows of D are left untouched by the kernels and excluded).

use std::time::Instant;

use clap::ValueEnum;
use fp8gemm::codeobj::Arch;
use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz, Fp8Format};
use fp8gemm::grouped::upload_m_indices;
use fp8gemm::quant::{GroupedQuantizedWeights, QuantizedActivations};
use fp8gemm::reference::{self, contiguous_m_indices};
use fp8gemm::{Context, DeviceActivations, DeviceGroupedWeights, GemmRun, WeightLayout, m_alignment_for_contiguous_layout};
use half::bf16;
use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::gemm::randn_bf16;

/// Which m-grouped entry point the demo runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Layout {
    /// `m_grouped_fp8_gemm_nt_contiguous` (MoE prefill).
    Contiguous,
    /// `m_grouped_fp8_gemm_nt_masked` (MoE decode).
    Masked,
}

/// Runs one m-grouped GEMM with `groups` groups of about `m` rows.
pub fn run_grouped(layout: Layout, groups: usize, m: usize, n: usize, k: usize, seed: u64) -> Result<(), String> {
    let ctx = Context::new().map_err(|e| e.to_string())?;
    match ctx.arch() {
        Arch::Gfx942 => grouped_with::<E4M3Fnuz>(&ctx, layout, groups, m, n, k, seed),
        Arch::Gfx950 => grouped_with::<E4M3Fn>(&ctx, layout, groups, m, n, k, seed),
        other => Err(format!("no demo for {other}")),
    }
}

/// `m` scaled by a factor drawn uniformly from [0.7, 1.3).
fn around(m: usize, rng: &mut StdRng) -> usize {
    (m as f64 * rng.random_range(0.7..1.3)) as usize
}

fn grouped_with<F: Fp8Format>(ctx: &Context, layout: Layout, groups: usize, m: usize, n: usize, k: usize, seed: u64) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    if groups == 0 {
        return Err("--groups must be at least 1".into());
    }
    let mut rng = StdRng::seed_from_u64(seed);
    // Row layout: the group of every row of A / D (None: padding or masked out).
    let (rows, row_group, sizes): (usize, Vec<Option<usize>>, Vec<usize>) = match layout {
        Layout::Contiguous => {
            let sizes: Vec<usize> = (0..groups).map(|_| around(m, &mut rng)).collect();
            let idx = contiguous_m_indices(&sizes, m_alignment_for_contiguous_layout());
            (idx.len(), idx.iter().map(|&g| usize::try_from(g).ok()).collect(), sizes)
        }
        Layout::Masked => {
            let m_max = (m as f64 * 1.3).ceil() as usize;
            let sizes: Vec<usize> = (0..groups).map(|_| around(m, &mut rng).min(m_max)).collect();
            let row_group = (0..groups * m_max).map(|i| (i % m_max < sizes[i / m_max]).then_some(i / m_max)).collect();
            (groups * m_max, row_group, sizes)
        }
    };
    let a = randn_bf16(rows * k, &mut rng);
    let b = randn_bf16(groups * n * k, &mut rng);
    let qa = QuantizedActivations::<F>::quantize(&a, rows, k).map_err(|x| e(&x))?;
    let qb = GroupedQuantizedWeights::<F>::quantize(&b, groups, n, k).map_err(|x| e(&x))?;
    let da = DeviceActivations::upload(ctx, &qa).map_err(|x| e(&x))?;
    // `FP8GEMM_PRESHUFFLED=1`: the weights in the pre-shuffled layout (the bs kernels).
    let b_layout = if crate::env::get().preshuffled { WeightLayout::Preshuffled } else { WeightLayout::Logical };
    let db = DeviceGroupedWeights::upload_with_layout(ctx, &qb, b_layout).map_err(|x| e(&x))?;
    let mut dd = ctx.alloc_zeroed::<bf16>(rows * n).map_err(|x| e(&x))?;

    let idx: Vec<i32> = row_group.iter().map(|g| g.map_or(-1, |g| g as i32)).collect();
    let masked: Vec<i32> = sizes.iter().map(|&s| s as i32).collect();
    let stream = crate::env::stream(ctx).map_err(|x| e(&x))?;
    let t0 = Instant::now();
    crate::profile::begin();
    let (name, run): (&str, GemmRun) = match layout {
        Layout::Contiguous => {
            let di = upload_m_indices(ctx, &idx, groups).map_err(|x| e(&x))?;
            let run = fp8gemm::m_grouped_fp8_gemm_nt_contiguous(&stream, &da, &db, &mut dd, &di).map_err(|x| e(&x))?;
            ("m_grouped_fp8_gemm_nt_contiguous", run)
        }
        Layout::Masked => {
            let dm = ctx.upload(&masked).map_err(|x| e(&x))?;
            let run = fp8gemm::m_grouped_fp8_gemm_nt_masked(&stream, &da, &db, &mut dd, &dm, m).map_err(|x| e(&x))?;
            ("m_grouped_fp8_gemm_nt_masked", run)
        }
    };
    // The launch runs here (the emulator's streams are lazy queues): profile::end reads its timing.
    stream.synchronize().map_err(|x| e(&x))?;
    if crate::profile::end(m, n, k, groups)? {
        println!("  {name}: sizes {sizes:?}");
        if let Some(c) = &run.config {
            println!("  config {c}");
        }
        return Ok(());
    }
    let d = dd.download(&stream).map_err(|x| e(&x))?;
    let wall = t0.elapsed();

    let mut want_q = vec![bf16::ZERO; rows * n];
    match layout {
        Layout::Contiguous => reference::m_grouped_fp8_gemm_nt_contiguous(&qa, &qb, &idx, &mut want_q),
        Layout::Masked => reference::m_grouped_fp8_gemm_nt_masked(&qa, &qb, &masked, &mut want_q),
    }
    .map_err(|x| e(&x))?;

    // Compare over the defined rows only.
    let (mut got, mut q, mut f) = (Vec::new(), Vec::new(), Vec::new());
    let mut exact = vec![0f32; n];
    for (i, g) in row_group.iter().enumerate() {
        let Some(g) = *g else { continue };
        got.extend_from_slice(&d[i * n..(i + 1) * n]);
        q.extend_from_slice(&want_q[i * n..(i + 1) * n]);
        reference::gemm_nt_f32(&a[i * k..(i + 1) * k], &b[g * n * k..(g + 1) * n * k], 1, n, k, &mut exact).map_err(|x| e(&x))?;
        f.extend_from_slice(&exact);
    }
    let valid = got.len() / n.max(1);
    let diff_q = reference::calc_diff(&got, &q).map_err(|x| e(&x))?;
    let diff_f = reference::calc_diff(&got, &f).map_err(|x| e(&x))?;

    println!("{name}  G={groups} m≈{m} n={n} k={k} seed={seed}  on {} ({}, FP8 {})", ctx.device_name(), ctx.arch(), F::NAME);
    match layout {
        Layout::Contiguous => println!("rows         {sizes:?} → m_sum {rows} (each padded to {})", m_alignment_for_contiguous_layout()),
        Layout::Masked => println!("masked_m     {sizes:?} of m_max {} (expected_m {m})", rows / groups),
    }
    match &run.config {
        Some(c) => println!("config       {c}"),
        None => println!("config       (empty problem: nothing launched)"),
    }
    println!("calc_diff    {diff_q:.3e} vs the dequantized reference over {valid} rows (goal < 1e-5)");
    println!("calc_diff    {diff_f:.3e} vs the unquantized reference (goal < 1e-3)");
    crate::gemm::report_emulator(wall, valid, n, k);
    if diff_q >= 1e-5 || diff_f >= 1e-3 {
        return Err(format!("accuracy goal missed: {diff_q:.3e} / {diff_f:.3e}"));
    }
    Ok(())
}
