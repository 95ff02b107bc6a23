//! `fp8gemm tune`: writes the config table (`host/tuned/gfx942.csv`) from the emulator's timing
//! model. Every figure in it is **modelled** (MI300X by default), not measured.
//!
//! * `cost` rows: for each tile, the modelled cycles per 128-K block of a CU running 1 or
//!   `slots` workgroups of it at once (two launches of one full round of workgroups on every
//!   CU, K = 1024 and K = 3072; the difference over the 16 extra blocks);
//! * `best` rows: for DeepSeek-V3's dense shapes and the MoE shapes of DeepGEMM's benchmarks,
//!   every tile's modelled time and the fastest one (no split);
//! * `split` rows: for the dense shapes whose tiles cannot fill every workgroup slot of the
//!   device, every split-K tile with split counts 2 … 32 (up to `k/128`, and up to two rounds
//!   of workgroups), and the fastest;
//! * `streamk` rows: for the dense shapes, every stream-K schedule the config model weighs
//!   (`config::streamk_schedules`: each tile, a data-parallel head of whole waves, `CUs · s`
//!   stream-K workgroups), and the fastest; the config choice takes the fastest of `best`,
//!   `split` and `streamk` that fits the launch's workspace.

use std::fmt::Write as _;
use std::sync::Arc;

use amdgpu_emu::hip::{self as emu, TimingMode};
use amdgpu_emu::timing::{Machine, TimingReport};
use fp8gemm::config::{self, GemmKind, Overrides};

use crate::operands;
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::{Context, Stream};

/// One problem of the table: kind, groups, m (dense M, contiguous m_sum, masked m_max), n, k,
/// expected_m.
#[derive(Clone, Copy, Debug)]
struct Problem {
    kind: GemmKind,
    groups: usize,
    m: usize,
    n: usize,
    k: usize,
    expected_m: usize,
}

fn problems() -> Vec<Problem> {
    let nk = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)];
    let mut v = Vec::new();
    for m in [64, 128, 4096] {
        for (n, k) in nk {
            v.push(Problem { kind: GemmKind::Dense, groups: 1, m, n, k, expected_m: m });
        }
    }
    for (n, k) in [(4096, 7168), (7168, 2048)] {
        for (g, rows) in [(4, 8192), (8, 4096)] {
            v.push(Problem { kind: GemmKind::MGroupedContiguous, groups: g, m: g * rows, n, k, expected_m: rows });
        }
        for (g, rows) in [(1, 1024), (2, 512), (4, 256)] {
            v.push(Problem { kind: GemmKind::MGroupedMasked, groups: g, m: rows, n, k, expected_m: rows });
        }
    }
    v
}

/// Runs `p` once per tile through the library with the timing model on, operands allocated
/// once (zeros: their values do not steer the kernels; see [`operands`]).
fn time_tiles(ctx: &Context, p: Problem, mode: &TimingMode, tiles: &[(u32, u32)]) -> Result<Vec<Arc<TimingReport>>, String> {
    let configs: Vec<((u32, u32), u32)> = tiles.iter().map(|&t| (t, 1)).collect();
    time_configs(ctx, p, mode, &configs)
}

/// As [`time_tiles`] for `(tile, splits)` configurations (split-K when `splits > 1`).
fn time_configs(ctx: &Context, p: Problem, mode: &TimingMode, configs: &[((u32, u32), u32)]) -> Result<Vec<Arc<TimingReport>>, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let shape = match p.kind {
        GemmKind::Dense => operands::Problem::Dense { m: p.m, n: p.n, k: p.k },
        GemmKind::MGroupedContiguous => operands::Problem::Contiguous { groups: p.groups, rows: p.expected_m, n: p.n, k: p.k },
        // Every group full: masked_m = m_max = expected_m (as `problems` builds them).
        GemmKind::MGroupedMasked => {
            assert_eq!(p.m, p.expected_m, "masked problems are timed with every group full");
            operands::Problem::Masked { groups: p.groups, rows: p.m, n: p.n, k: p.k }
        }
    };
    let rows = shape.rows();
    let mut ops = operands::Operands::new(ctx, shape).map_err(|x| e(&x))?;
    // Each timed launch is followed by a synchronization: queued launches run (and are timed)
    // when their stream is synchronized.
    let mut stream = fp8gemm::Stream::new(ctx).map_err(|x| e(&x))?;
    // A workspace for the largest split-K configuration timed (the stream's default may be
    // smaller than what a slow candidate needs).
    let need = configs
        .iter()
        .filter(|(_, s)| *s > 1)
        .map(|&((bm, bn), s)| {
            let tiles = (rows as u32).div_ceil(bm) * (p.n as u32).div_ceil(bn);
            fp8gemm_device::tile::splitk_workspace_floats(tiles, s, bm, bn) as usize
        })
        .max()
        .unwrap_or(0);
    if need > fp8gemm::workspace::DEFAULT_STREAM_WORKSPACE_FLOATS {
        stream.set_workspace(Some(fp8gemm::Workspace::new(ctx, need).map_err(|x| e(&x))?)).map_err(|x| e(&x))?;
    }
    configs.iter().map(|&(t, splits)| timed(mode, &mut stream, t, splits, &mut |s| ops.launch(s).map(|_| ()).map_err(|x| e(&x)))).collect()
}

/// Runs dense `p` once per stream-K schedule `(tile, sk_wgs, dp_tiles)` with the timing model on
/// (the stream's workspace sized for the largest).
fn time_streamk(ctx: &Context, p: Problem, mode: &TimingMode, configs: &[config::StreamKSchedule3]) -> Result<Vec<Arc<TimingReport>>, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut ops = operands::Operands::new(ctx, operands::Problem::Dense { m: p.m, n: p.n, k: p.k }).map_err(|x| e(&x))?;
    let mut stream = fp8gemm::Stream::new(ctx).map_err(|x| e(&x))?;
    let nkb = (p.k / 128) as u32;
    let need = configs
        .iter()
        .filter_map(|&((bm, bn), g, dp)| {
            let tiles = (p.m as u32).div_ceil(bm) * (p.n as u32).div_ceil(bn);
            fp8gemm_device::streamk::StreamKSchedule::new(tiles, nkb, dp, g).ok().map(|s| s.workspace_floats(bm, bn) as usize)
        })
        .max()
        .unwrap_or(0);
    if need > fp8gemm::workspace::DEFAULT_STREAM_WORKSPACE_FLOATS {
        stream.set_workspace(Some(fp8gemm::Workspace::new(ctx, need).map_err(|x| e(&x))?)).map_err(|x| e(&x))?;
    }
    configs.iter().map(|&(t, g, dp)| timed_with(mode, &mut stream, t, None, Some((g, dp)), &mut |s| ops.launch(s).map(|_| ()).map_err(|x| e(&x)))).collect()
}

/// One K-grouped GEMM (G = 1, `k` tokens) of tile `tile`, modelled.
fn time_kgrouped(ctx: &Context, m: usize, n: usize, k: usize, mode: &TimingMode, tile: (u32, u32)) -> Result<Arc<TimingReport>, String> {
    use fp8gemm::kgrouped::{DeviceKGroupedOperand, KGroupedMnMajor, k_grouped_fp8_gemm_tn_contiguous, upload_ks};
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let qa = KGroupedMnMajor::<E4M3Fnuz>::quantize(&vec![0f32; k * m], m, &[k]).map_err(|x| e(&x))?;
    let qb = KGroupedMnMajor::<E4M3Fnuz>::quantize(&vec![0f32; k * n], n, &[k]).map_err(|x| e(&x))?;
    let da = DeviceKGroupedOperand::upload(ctx, &qa).map_err(|x| e(&x))?;
    let db = DeviceKGroupedOperand::upload(ctx, &qb).map_err(|x| e(&x))?;
    let (dks, total) = upload_ks(ctx, &[k]).map_err(|x| e(&x))?;
    let mut d = ctx.alloc_zeroed::<f32>(m * n).map_err(|x| e(&x))?;
    let mut stream = fp8gemm::Stream::new(ctx).map_err(|x| e(&x))?;
    // The queued launch runs (timed) when the stream is synchronized.
    timed(mode, &mut stream, tile, 1, &mut |s| {
        k_grouped_fp8_gemm_tn_contiguous(s, &da, &db, &mut d, &dks, total, None).and_then(|_| s.synchronize()).map_err(|x| e(&x))
    })
}

/// Runs `launch` on `stream` (it must synchronize the stream) with `tile` and `splits` forced
/// through the stream's overrides and the timing model on, and returns the launch's modelled
/// timing.
fn timed(
    mode: &TimingMode,
    stream: &mut Stream,
    tile: (u32, u32),
    splits: u32,
    launch: &mut dyn FnMut(&Stream) -> Result<(), String>,
) -> Result<Arc<TimingReport>, String> {
    timed_with(mode, stream, tile, Some(splits), None, launch)
}

/// As [`timed`] with a split count or a stream-K schedule `(sk_wgs, dp_tiles)` forced.
fn timed_with(
    mode: &TimingMode,
    stream: &mut Stream,
    tile: (u32, u32),
    splits: Option<u32>,
    stream_k: Option<(u32, u32)>,
    launch: &mut dyn FnMut(&Stream) -> Result<(), String>,
) -> Result<Arc<TimingReport>, String> {
    let mut forced = Overrides::NONE.with_tile(tile.0, tile.1);
    forced.split = splits;
    forced.stream_k = stream_k.map(|(g, dp)| (g, Some(dp)));
    stream.set_overrides(forced);
    emu::set_timing(Some(mode.clone()));
    let r = launch(stream);
    emu::set_timing(None);
    stream.set_overrides(Overrides::NONE);
    r?;
    emu::last_launch_timing().ok_or_else(|| "the timed launch left no report".to_string())
}

/// The split-K configurations `tune` times for `p`: dense problems only, every tile with
/// split counts from 2, 3, 4, 6, 8, 12, 16, 24, 32 that leave every split at least one K block
/// and launch at most two rounds of workgroups (more only adds reduction work).
fn split_configs(p: Problem, machine: &Machine) -> Vec<((u32, u32), u32)> {
    if p.kind != GemmKind::Dense {
        return Vec::new();
    }
    let cus = machine.cus();
    let nkb = (p.k / 128) as u32;
    let mut v = Vec::new();
    for (bm, bn) in config::tiles(GemmKind::Dense) {
        let slots = config::slots_per_cu(fp8gemm::codeobj::Arch::Gfx942, GemmKind::Dense, bm, bn).unwrap_or(1);
        let tiles = (p.m as u32).div_ceil(bm) * (p.n as u32).div_ceil(bn);
        for s in [2u32, 3, 4, 6, 8, 12, 16, 24, 32] {
            if s <= nkb && s <= config::MAX_SPLITS && tiles * s <= 2 * cus * slots {
                v.push(((bm, bn), s));
            }
        }
    }
    v
}

/// `fp8gemm tune`: prints the table and writes it to `out` if given.
pub fn run(machine: Machine, options: amdgpu_emu::timing::SimOptions, out: Option<std::path::PathBuf>, quick: bool) -> Result<(), String> {
    let ctx = Context::new().map_err(|e| e.to_string())?;
    let mode = TimingMode { machine: machine.clone(), options };
    let started = std::time::Instant::now();
    let mut csv = String::new();
    let _ = writeln!(csv, "# fp8gemm config table for gfx942, written by `fp8gemm tune --machine {}`.", machine.name);
    let _ = writeln!(csv, "# Every figure is MODELLED by the emulator's timing model (amdgpu_emu::timing), not measured.");
    let _ = writeln!(csv, "# cost,block_m,block_n,workgroups_per_cu,modelled_cycles_per_128k_block");
    let tiles = config::tiles(GemmKind::Dense);
    for &(bm, bn) in &tiles {
        let slots = config::slots_per_cu(fp8gemm::codeobj::Arch::Gfx942, GemmKind::Dense, bm, bn).ok_or("no such tile")?;
        let mut sharings = vec![1];
        if slots > 1 {
            sharings.push(slots);
        }
        for s in sharings {
            // One full round: 304·s workgroups, s on every CU.
            let (m, n) = (bm as usize * 8 * s as usize, bn as usize * machine.cus_per_xcd as usize);
            let mut cyc = Vec::new();
            for k in [1024, 3072] {
                let p = Problem { kind: GemmKind::Dense, groups: 1, m, n, k, expected_m: m };
                let r = time_tiles(&ctx, p, &mode, &[(bm, bn)])?;
                cyc.push(r[0].cycles as f64);
            }
            let per_kb = (cyc[1] - cyc[0]) / 16.0;
            let _ = writeln!(csv, "cost,{bm},{bn},{s},{per_kb:.1}");
            println!("cost {bm}x{bn}, {s} per CU: {per_kb:.1} modelled cycles per 128-K block ({:.0} s)", started.elapsed().as_secs_f64());
        }
    }
    let _ = writeln!(csv, "# kcost,block_m,block_n,workgroups_per_cu,modelled_cycles_per_128_token_block (K-grouped kernels)");
    for (bm, bn, slots) in [(64u32, 64u32, 4u32), (128, 128, 2)] {
        for s in [1, slots] {
            // One full round, G = 1: 304·s workgroups of the tile.
            let (m, n) = (bm as usize * 8 * s as usize, bn as usize * machine.cus_per_xcd as usize);
            let mut cyc = Vec::new();
            for k in [1024usize, 3072] {
                cyc.push(time_kgrouped(&ctx, m, n, k, &mode, (bm, bn))?.cycles as f64);
            }
            let per_kb = (cyc[1] - cyc[0]) / 16.0;
            let _ = writeln!(csv, "kcost,{bm},{bn},{s},{per_kb:.1}");
            println!("kcost {bm}x{bn}, {s} per CU: {per_kb:.1} modelled cycles per 128-token block ({:.0} s)", started.elapsed().as_secs_f64());
        }
    }
    let _ = writeln!(csv, "# best,kind,groups,m,n,k,expected_m,block_m,block_n,modelled_us,all tiles (modelled µs)");
    let _ = writeln!(csv, "# split,kind,groups,m,n,k,expected_m,block_m,block_n,splits,modelled_us,all split configs (tile/splits=modelled µs)");
    let _ =
        writeln!(csv, "# streamk,kind,groups,m,n,k,expected_m,block_m,block_n,sk_workgroups,dp_tiles,modelled_us,all stream-K configs (tile/g+dp=modelled µs)");
    for p in problems() {
        if quick && p.m * p.n * p.k * p.groups > 1 << 34 {
            continue;
        }
        let name = config::kind_name(p.kind);
        let reports = time_tiles(&ctx, p, &mode, &tiles)?;
        let mut best = 0;
        for (i, r) in reports.iter().enumerate() {
            if r.seconds < reports[best].seconds {
                best = i;
            }
        }
        let all: Vec<String> = tiles.iter().zip(&reports).map(|(t, r)| format!("{}x{}={:.2}", t.0, t.1, r.seconds * 1e6)).collect();
        let (bm, bn) = tiles[best];
        let us = reports[best].seconds * 1e6;
        let _ = writeln!(csv, "best,{name},{},{},{},{},{},{bm},{bn},{us:.2},{}", p.groups, p.m, p.n, p.k, p.expected_m, all.join(" "));
        let tflops = 2.0 * (p.groups.max(1) * p.expected_m * p.n * p.k) as f64 / (us * 1e-6) / 1e12;
        println!(
            "{name:<10} g={:<2} m={:<6} n={:<6} k={:<6}: {bm}x{bn} {us:>9.2} µs {tflops:>7.1} TFLOPS modelled   [{}] ({:.0} s)",
            p.groups,
            p.m,
            p.n,
            p.k,
            all.join(" "),
            started.elapsed().as_secs_f64()
        );
        if p.kind == GemmKind::Dense {
            let desc = config::GemmDesc::dense(p.m as u32, p.n as u32, p.k as u32, fp8gemm::codeobj::Arch::Gfx942).with_cus(machine.cus());
            let sks = config::streamk_schedules(&desc).map_err(|x| x.to_string())?;
            if !sks.is_empty() {
                let reports = time_streamk(&ctx, p, &mode, &sks)?;
                let mut best = 0;
                for (i, r) in reports.iter().enumerate() {
                    if r.seconds < reports[best].seconds {
                        best = i;
                    }
                }
                let all: Vec<String> = sks.iter().zip(&reports).map(|((t, g, dp), r)| format!("{}x{}/{g}+{dp}={:.2}", t.0, t.1, r.seconds * 1e6)).collect();
                let ((bm, bn), g, dp) = sks[best];
                let us_sk = reports[best].seconds * 1e6;
                let _ = writeln!(csv, "streamk,{name},{},{},{},{},{},{bm},{bn},{g},{dp},{us_sk:.2},{}", p.groups, p.m, p.n, p.k, p.expected_m, all.join(" "));
                println!(
                    "{name:<10} g={:<2} m={:<6} n={:<6} k={:<6}: {bm}x{bn} stream-K {dp}+{g} {us_sk:>9.2} µs modelled ({:.0} s)",
                    p.groups,
                    p.m,
                    p.n,
                    p.k,
                    started.elapsed().as_secs_f64()
                );
            }
        }
        let splits = split_configs(p, &machine);
        if splits.is_empty() {
            continue;
        }
        let reports = time_configs(&ctx, p, &mode, &splits)?;
        let mut best = 0;
        for (i, r) in reports.iter().enumerate() {
            if r.seconds < reports[best].seconds {
                best = i;
            }
        }
        let all: Vec<String> = splits.iter().zip(&reports).map(|((t, s), r)| format!("{}x{}/{s}={:.2}", t.0, t.1, r.seconds * 1e6)).collect();
        let ((bm, bn), sp) = splits[best];
        let us_split = reports[best].seconds * 1e6;
        let _ = writeln!(csv, "split,{name},{},{},{},{},{},{bm},{bn},{sp},{us_split:.2},{}", p.groups, p.m, p.n, p.k, p.expected_m, all.join(" "));
        let tflops = 2.0 * (p.groups.max(1) * p.expected_m * p.n * p.k) as f64 / (us_split * 1e-6) / 1e12;
        println!(
            "{name:<10} g={:<2} m={:<6} n={:<6} k={:<6}: {bm}x{bn} split {sp} {us_split:>9.2} µs {tflops:>7.1} TFLOPS modelled ({:.0} s)",
            p.groups,
            p.m,
            p.n,
            p.k,
            started.elapsed().as_secs_f64()
        );
    }
    if let Some(path) = out {
        std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    } else {
        print!("{csv}");
    }
    Ok(())
}
