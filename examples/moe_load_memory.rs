//! Host memory of loading one MoE layer from a DeepSeek-format FP8 checkpoint, two ways:
//!
//! * `whole`: [`Checkpoint::moe_layer`] stages the whole converted layer on the host, then
//!   [`DeviceMoeWeights::upload`] copies it (host memory O(layer));
//! * `stream`: [`DeviceMoeWeights::load`] reads, converts and uploads one expert at a time
//!   (host memory O(one expert));
//! * `stream-preshuffled`: the same into the pre-shuffled layout
//!   ([`DeviceMoeWeights::load_with_layout`]; each expert shuffled on the host in ≤ 4 MiB
//!   chunks as it is copied).
//!
//! ```text
//! cargo build --release --example moe_load_memory
//! target/release/examples/moe_load_memory write /tmp/moe 32 1024 512   # experts hidden intermediate
//! /usr/bin/time -v target/release/examples/moe_load_memory load /tmp/moe whole
//! /usr/bin/time -v target/release/examples/moe_load_memory load /tmp/moe stream
//! /usr/bin/time -v target/release/examples/moe_load_memory load /tmp/moe stream-preshuffled
//! ```
//!
//! `load` prints the growth of the process's peak RSS (`VmHWM`) across the load and the device
//! bytes. On the bundled emulator the "device" memory is this process's heap, so the host
//! staging is the peak growth minus the device bytes; the checkpoint's memory-mapped pages
//! that were read are counted too (`RssFile`: file-backed, reclaimable page cache).
//! (Linux only: reads `/proc/self/status`.)

use std::path::Path;
use std::time::Instant;

use fp8gemm::checkpoint::{Checkpoint, DeviceMoeWeights, MlpF32, MoeLayerF32, write_deepseek_moe};
use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::{Context, WeightLayout};
use rand::{Rng, SeedableRng, rngs::StdRng};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const LAYER: usize = 0;

/// A field of `/proc/self/status` in kB.
fn status_kb(field: &str) -> Res<u64> {
    let text = std::fs::read_to_string("/proc/self/status")?;
    let line = text.lines().find(|l| l.starts_with(field)).ok_or_else(|| format!("/proc/self/status has no {field}"))?;
    let value = line.split_whitespace().nth(1).ok_or_else(|| format!("malformed {line}"))?;
    Ok(value.parse()?)
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn write(dir: &Path, experts: usize, h: usize, i: usize) -> Res<()> {
    let mut rng = StdRng::seed_from_u64(3);
    let mut randn = |count: usize| -> Vec<f32> { (0..count).map(|_| rng.random_range(-0.05f32..0.05)).collect() };
    let mut mlp = |inter: usize| MlpF32 { hidden: h, intermediate: inter, gate: randn(inter * h), up: randn(inter * h), down: randn(h * inter) };
    let layer = MoeLayerF32 { experts: (0..experts).map(|_| mlp(i)).collect(), shared: Some(mlp(i)) };
    let files = write_deepseek_moe(dir, LAYER, &layer, 2)?;
    let bytes: u64 = files.iter().map(|f| f.metadata().map(|m| m.len()).unwrap_or(0)).sum();
    println!("wrote {experts} experts + 1 shared, H = {h}, I = {i}: {} files, {:.1} MB", files.len(), bytes as f64 / 1e6);
    Ok(())
}

fn load(dir: &Path, how: &str) -> Res<()> {
    let ctx = Context::new()?;
    let ckpt = Checkpoint::open(dir)?;
    let before = status_kb("VmHWM:")?;
    let started = Instant::now();
    let w = match how {
        "whole" => DeviceMoeWeights::upload(&ctx, &ckpt.moe_layer::<E4M3Fnuz>(LAYER)?)?,
        "stream" => DeviceMoeWeights::<E4M3Fnuz>::load(&ctx, &ckpt, LAYER)?,
        "stream-preshuffled" => DeviceMoeWeights::<E4M3Fnuz>::load_with_layout(&ctx, &ckpt, LAYER, WeightLayout::Preshuffled)?,
        other => return Err(format!("expected `whole`, `stream` or `stream-preshuffled`, got `{other}`").into()),
    };
    let seconds = started.elapsed().as_secs_f64();
    let peak = status_kb("VmHWM:")?;
    let (g, n1, k1, n2, k2) = (w.gate_up.groups(), w.gate_up.n(), w.gate_up.k(), w.down.n(), w.down.k());
    // FP8 values (1 byte) + f32 scales, routed and shared.
    let layout = w.gate_up.layout();
    let grouped = |n: usize, k: usize| g * (layout.data_bytes(n, k).unwrap_or(n * k) + 4 * n.div_ceil(128) * k.div_ceil(128));
    let shared = w.shared.as_ref().map_or(0, |s| {
        let one = |n: usize, k: usize| layout.data_bytes(n, k).unwrap_or(n * k) + 4 * n.div_ceil(128) * k.div_ceil(128);
        one(s.gate_up.n(), s.gate_up.k()) + one(s.down.n(), s.down.k())
    });
    let device = (grouped(n1, k1) + grouped(n2, k2) + shared) as f64 / (1024.0 * 1024.0);
    let per_expert = (grouped(n1, k1) + grouped(n2, k2)) as f64 / g as f64 / (1024.0 * 1024.0);
    println!(
        "{how}: {g} experts ({per_expert:.2} MiB each), device {device:.1} MiB; peak RSS +{:.1} MiB across the load \
         (+{:.1} MiB beyond the device bytes); now RssAnon {:.1} MiB, RssFile {:.1} MiB; {seconds:.2} s",
        mb(peak - before),
        mb(peak - before) - device,
        mb(status_kb("RssAnon:")?),
        mb(status_kb("RssFile:")?),
    );
    Ok(())
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: moe_load_memory write DIR [EXPERTS HIDDEN INTERMEDIATE] | load DIR whole|stream";
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["write", dir] => write(Path::new(dir), 16, 1024, 512),
        ["write", dir, e, h, i] => write(Path::new(dir), e.parse()?, h.parse()?, i.parse()?),
        ["load", dir, how] => load(Path::new(dir), how),
        _ => Err(usage.into()),
    }
}
