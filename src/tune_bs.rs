//! `fp8gemm tune --bs`: the bs tuned table (`host/tuned/gfx942_bs.csv`, read by
//! `fp8gemm::config::bs_table`) from the emulator's timing model. Every figure in it is
//! **modelled**, not measured.
//!
//! For each dense problem, B pre-shuffled: the rules' own choice (nothing forced, the tuned
//! table ignored: `bs_table::without_table`, so a re-run keeps the rows it should) and every
//! candidate config, each launched through the public API with its tile / split count /
//! stream-K schedule forced and the timing model on (the scope `fp8gemm compare` uses: every
//! XCD for grids of at most 4 workgroups per CU, XCD 0's share above). A row is written where
//! the fastest candidate beats the rules' choice by `bs_table::TABLE_MIN_GAIN`; the row keeps
//! every candidate's modelled µs for review.
//!
//! Candidates: every bs tile unsplit (32, 48, 64, 80, 96, 128 rows × 128, and 32 × 64); split-K
//! of the 32-, 64- and 128-row tiles into 2 … 16 (each split at least one K block, at most two
//! rounds of workgroups) where the 32-row tiles are fewer than two per CU, and of the 32 × 64
//! tile where its tiles are fewer than two per CU; stream-K of the 32-, 48- and
//! 64-row tiles with `g` = 1 … slots whole waves of workgroups and a data-parallel head of 0
//! or of the whole waves that leave a tail. A forcing the library rejects for the problem (an
//! invalid schedule) is skipped and listed as `n/a`.

use std::fmt::Write as _;
use std::path::PathBuf;

use amdgpu_emu::hip::{self as emu, TimingMode};
use amdgpu_emu::timing::{Machine, Scope, SimOptions};
use fp8gemm::codeobj::Arch;
use fp8gemm::config::bs_table::{self, BsForcing, TABLE_MIN_GAIN};
use fp8gemm::config::{self, GemmDesc};
use fp8gemm::{Context, Stream, WeightLayout};
use fp8gemm_device::streamk::StreamKSchedule;

use crate::operands::{Operands, Problem};

/// Which problems `tune --bs` covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BsSet {
    /// DeepSeek-V3's dense shapes (M ∈ {64, 128, 4096} × six (N, K)), modelled on MI300X.
    Deepseek,
    /// The shapes of the peers' `measured_mi325x.csv`, modelled on MI325X.
    Peers,
    /// Both.
    All,
}

/// The candidate forcings of a dense `m × n × k` problem on `cus` CUs (module docs).
pub fn candidates(m: u32, n: u32, k: u32, cus: u32) -> Vec<BsForcing> {
    let nkb = k / 128;
    let tiles = |bm: u32| m.div_ceil(bm) * n.div_ceil(128);
    let mut v = Vec::new();
    for bm in [32, 48, 64, 80, 96, 128] {
        v.push(BsForcing { tile: (bm, 128), splits: 1, stream_k: None });
    }
    if tiles(32) < 2 * cus {
        for (bm, slots) in [(32, 3), (64, 2), (128, 1)] {
            for s in [2u32, 3, 4, 6, 8, 12, 16] {
                if s <= nkb && s <= config::MAX_SPLITS && tiles(bm) * s <= 2 * cus * slots && tiles(bm) <= fp8gemm_device::tile::SPLITK_MAX_TILES {
                    v.push(BsForcing { tile: (bm, 128), splits: s, stream_k: None });
                }
            }
        }
    }
    // 32 and 64 rows: the bs stream-K kernels (a forced 64-row tile runs the pipelined one
    // below 8 tiles per CU, `config::bs_kernel`); 48 rows: the pipelined one (two per CU).
    for (bm, slots) in [(32u32, 3u32), (48, 2), (64, 2)] {
        let t = tiles(bm);
        let mut dps = vec![0, config::streamk_default_dp(t, cus * slots)];
        dps.dedup();
        for mult in 1..=slots {
            for &dp in &dps {
                let g = cus * mult;
                if StreamKSchedule::new(t, nkb, dp, g).is_ok() {
                    v.push(BsForcing { tile: (bm, 128), splits: 1, stream_k: Some((g, Some(dp))) });
                }
            }
        }
    }
    // The narrow 32 × 64 tile (four workgroups per CU): unsplit, and split where its tiles are
    // fewer than two per CU.
    let tiles64 = m.div_ceil(32) * n.div_ceil(64);
    v.push(BsForcing { tile: (32, 64), splits: 1, stream_k: None });
    if tiles64 < 2 * cus {
        for s in [2u32, 3, 4, 6, 8, 12, 16] {
            if s <= nkb && s <= config::MAX_SPLITS && tiles64 * s <= 2 * cus * 4 && tiles64 <= fp8gemm_device::tile::SPLITK_MAX_TILES {
                v.push(BsForcing { tile: (32, 64), splits: s, stream_k: None });
            }
        }
    }
    v
}

/// `body` with this thread's config choices forced to `forcing` (None: nothing forced), the
/// forcing cleared after it.
fn forced<T>(forcing: Option<BsForcing>, body: impl FnOnce() -> T) -> T {
    if let Some(f) = forcing {
        config::force_tile(Some(f.tile));
        config::force_split(Some(f.splits));
        config::force_stream_k(f.stream_k);
    }
    let r = body();
    config::force_tile(None);
    config::force_split(None);
    config::force_stream_k(None);
    r
}

/// The modelled µs and config of one launch of `ops` with `forcing` (None: the rules' choice).
fn timed(ops: &mut Operands, stream: &Stream, mode: &TimingMode, forcing: Option<BsForcing>) -> Result<(f64, config::GemmConfig), String> {
    let run = forced(forcing, || {
        emu::set_timing(Some(mode.clone()));
        let run = ops.launch(stream);
        emu::set_timing(None);
        run
    });
    match run {
        Ok(run) => {
            let cfg = run.config.ok_or("nothing was launched")?;
            let t = emu::last_launch_timing().ok_or("the timed launch left no report")?;
            Ok((t.seconds * 1e6, cfg))
        }
        Err(e) => Err(format!("{}: {e}", forcing.map_or("the rules' choice".to_string(), |f| f.to_string()))),
    }
}

/// A dense problem `(m, n, k)` and the machine it is modelled on.
type MachineProblem = (Machine, (u32, u32, u32));

/// The problems of `set` with the machine each is modelled on.
fn problems(set: BsSet, peers: Option<PathBuf>, max_m: Option<usize>) -> Result<Vec<MachineProblem>, String> {
    let mut v = Vec::new();
    if matches!(set, BsSet::Deepseek | BsSet::All) {
        for m in [64, 128, 4096] {
            for (n, k) in crate::compare::DEEPSEEK_NK {
                v.push((Machine::MI300X, (m, n as u32, k as u32)));
            }
        }
    }
    if matches!(set, BsSet::Peers | BsSet::All) {
        let dir = match peers {
            Some(d) => d,
            None => amdgpu_emu::peers::peers_dir().map_err(|e| e.to_string())?,
        };
        for (_, m, n, k, _, _) in crate::compare::peers_rows(&dir)? {
            v.push((Machine::MI325X, (m as u32, n as u32, k as u32)));
        }
    }
    v.retain(|(_, (m, _, _))| max_m.is_none_or(|x| *m as usize <= x));
    Ok(v)
}

/// `fp8gemm tune --bs`: times the candidates of every problem of `set`, prints them, and writes
/// the table to `out` if given.
pub fn run(set: BsSet, peers: Option<PathBuf>, out: Option<PathBuf>, max_m: Option<usize>) -> Result<(), String> {
    let e = |x: fp8gemm::Error| x.to_string();
    let ctx = Context::new().map_err(e)?;
    let started = std::time::Instant::now();
    let mut csv = String::new();
    let limit = match max_m {
        Some(x) => format!(" --max-m {x}` (problems with M > {x} not run: no rows for them)"),
        None => "`".to_string(),
    };
    let _ = writeln!(csv, "# fp8gemm bs config table (B pre-shuffled) for gfx942, written by `fp8gemm tune --bs --set {}{limit}.", set_name(set));
    let _ = writeln!(csv, "# Every figure is MODELLED by the emulator's timing model (amdgpu_emu::timing), not measured.");
    let _ = writeln!(csv, "# A row only where the fastest candidate beats the rules' choice by {:.0} %.", TABLE_MIN_GAIN * 100.0);
    let _ = writeln!(csv, "# bs,kind,groups,m,n,k,expected_m,cus,tile,splits,stream_k,modelled_us,rule_us,machine: all candidates (forcing=modelled µs)");
    let (mut rows, mut total) = (0, 0);
    for (machine, (m, n, k)) in problems(set, peers, max_m)? {
        total += 1;
        let cus = machine.cus();
        let desc = GemmDesc::dense(m, n, k, Arch::Gfx942).with_cus(cus);
        // The rules' own choice: the tuned table ignored (bs_table::without_table).
        let rule = bs_table::without_table(|| config::get_bs_config(&desc)).map_err(|x| x.to_string())?;
        let full = rule.grid <= 4 * cus;
        let mode =
            TimingMode { machine: machine.clone(), options: SimOptions { scope: if full { Scope::Full } else { Scope::OneXcd }, ..SimOptions::default() } };
        let cands = candidates(m, n, k, cus);
        let mut stream = Stream::new(&ctx).map_err(e)?;
        // A workspace for the largest candidate (the stream's default may be smaller).
        // Which forcings the library accepts for this problem (the others are listed as n/a).
        let mut need = rule.workspace_floats();
        let mut valid = Vec::new();
        for f in &cands {
            let c = forced(Some(*f), || config::get_bs_config(&desc));
            if let Ok(c) = &c {
                need = need.max(c.workspace_floats());
            }
            valid.push(c.is_ok());
        }
        if need > fp8gemm::workspace::DEFAULT_STREAM_WORKSPACE_FLOATS as u64 {
            stream.set_workspace(Some(fp8gemm::Workspace::new(&ctx, need as usize).map_err(e)?)).map_err(e)?;
        }
        let mut ops = Operands::with_layout(&ctx, Problem::Dense { m: m as usize, n: n as usize, k: k as usize }, WeightLayout::Preshuffled).map_err(e)?;
        let (rule_us, rule_cfg) = bs_table::without_table(|| timed(&mut ops, &stream, &mode, None))?;
        let mut best: Option<(f64, BsForcing)> = None;
        let mut all = Vec::new();
        for (f, ok) in cands.into_iter().zip(valid) {
            if !ok {
                all.push(format!("{}=n/a", label(&f)));
                continue;
            }
            let (us, _) = timed(&mut ops, &stream, &mode, Some(f))?;
            all.push(format!("{}={us:.2}", label(&f)));
            if best.is_none_or(|(b, _)| us < b) {
                best = Some((us, f));
            }
        }
        let (us, f) = best.ok_or("no candidate")?;
        let wins = us < rule_us * (1.0 - TABLE_MIN_GAIN);
        println!(
            "dense {m}x{n}x{k} ({}): rules {rule_us:.2} µs ({}{}), best {f} {us:.2} µs{} ({:.0} s)",
            machine.name,
            rule_cfg.kernel,
            if rule_cfg.splits > 1 { format!(" split {}", rule_cfg.splits) } else { String::new() },
            if wins { format!(", {:.1} % faster: row", (1.0 - us / rule_us) * 100.0) } else { String::new() },
            started.elapsed().as_secs_f64()
        );
        if wins {
            rows += 1;
            let sk = match f.stream_k {
                Some((g, dp)) => format!("{g}/{}", dp.unwrap_or(0)),
                None => "-".to_string(),
            };
            let _ = writeln!(
                csv,
                "bs,dense,1,{m},{n},{k},{m},{cus},{}x{},{},{sk},{us:.2},{rule_us:.2},{}: {}",
                f.tile.0,
                f.tile.1,
                f.splits,
                machine.name,
                all.join(" ")
            );
        }
    }
    println!("{rows} rows of {total} problems ({:.0} s)", started.elapsed().as_secs_f64());
    if let Some(path) = out {
        std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    } else {
        print!("{csv}");
    }
    Ok(())
}

/// `set` as the command line spells it.
fn set_name(set: BsSet) -> &'static str {
    match set {
        BsSet::Deepseek => "deepseek",
        BsSet::Peers => "peers",
        BsSet::All => "all",
    }
}

/// A forcing in one token (`32x128`, `32x128/s3`, `32x128/sk608+0`).
fn label(f: &BsForcing) -> String {
    let t = format!("{}x{}", f.tile.0, f.tile.1);
    match (f.splits, f.stream_k) {
        (_, Some((g, dp))) => format!("{t}/sk{g}+{}", dp.unwrap_or(0)),
        (1, None) => t,
        (s, None) => format!("{t}/s{s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_cover_tiles_splits_and_stream_k_where_they_apply() {
        // Decode: every tile, splits, and stream-K schedules.
        let c = candidates(64, 2112, 7168, 304);
        assert_eq!(c.iter().filter(|f| f.splits == 1 && f.stream_k.is_none()).count(), 7);
        assert!(c.contains(&BsForcing { tile: (32, 64), splits: 4, stream_k: None }));
        assert!(c.contains(&BsForcing { tile: (32, 128), splits: 8, stream_k: None }));
        assert!(c.iter().all(|f| f.splits <= config::MAX_SPLITS));
        // Large M: no split-K; stream-K schedules are valid ones.
        let c = candidates(4096, 7168, 2048, 304);
        assert!(c.iter().all(|f| f.splits == 1));
        for f in c.iter().filter_map(|f| f.stream_k.map(|s| (f.tile, s))) {
            let ((bm, _), (g, dp)) = f;
            let tiles = 4096u32.div_ceil(bm) * 56;
            assert!(StreamKSchedule::new(tiles, 16, dp.unwrap(), g).is_ok(), "{f:?}");
        }
        assert_eq!(label(&BsForcing { tile: (32, 128), splits: 3, stream_k: None }), "32x128/s3");
        assert_eq!(label(&BsForcing { tile: (64, 128), splits: 1, stream_k: Some((608, Some(0))) }), "64x128/sk608+0");
    }
}
