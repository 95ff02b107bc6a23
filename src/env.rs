//! The CLI's environment variables, read in this one place at start-up. The library reads none;
//! these map onto its explicit hooks (the selector's [`Overrides`] and its diagnostic printing).
//!
//! | variable | effect |
//! |---|---|
//! | `FP8GEMM_FORCE_TILE=BMxBN` | [`Overrides::tile`] |
//! | `FP8GEMM_FORCE_SPLIT=S` | [`Overrides::split`] |
//! | `FP8GEMM_FORCE_STREAMK=G` or `G/DP` | [`Overrides::stream_k`] |
//! | `FP8GEMM_PRINT_CONFIGS=1` / `2` | [`config::set_print_configs`] |

use fp8gemm::config::{self, Overrides};

fn parse<T>(name: &str, expected: &str, f: impl FnOnce(&str) -> Option<T>) -> Result<Option<T>, String> {
    match std::env::var(name) {
        Ok(v) => f(v.trim()).map(Some).ok_or_else(|| format!("{name}={v:?}: expected {expected}")),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(e) => Err(format!("{name}: {e}")),
    }
}

/// The overrides the environment asks for.
pub fn overrides() -> Result<Overrides, String> {
    let mut o = Overrides::NONE;
    let tile = parse("FP8GEMM_FORCE_TILE", "BMxBN, e.g. 64x128", |v| {
        let (a, b) = v.split_once('x')?;
        Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
    })?;
    if let Some((bm, bn)) = tile {
        o = o.with_tile(bm, bn);
    }
    if let Some(s) = parse("FP8GEMM_FORCE_SPLIT", "a positive integer", |v| v.parse::<u32>().ok().filter(|&s| s >= 1))? {
        o = o.with_split(s);
    }
    let sk = parse("FP8GEMM_FORCE_STREAMK", "G or G/DP (stream-K workgroups ≥ 1, data-parallel tiles)", |v| {
        let (g, dp) = match v.split_once('/') {
            Some((g, dp)) => (g.trim().parse::<u32>().ok()?, Some(dp.trim().parse::<u32>().ok()?)),
            None => (v.parse::<u32>().ok()?, None),
        };
        (g >= 1).then_some((g, dp))
    })?;
    if let Some((g, dp)) = sk {
        o = o.with_stream_k(g, dp);
    }
    Ok(o)
}

/// Applies the environment to this process's main thread: the overrides as the thread's
/// defaults, the print level.
pub fn apply() -> Result<(), String> {
    config::set_thread_overrides(overrides()?);
    let level = parse("FP8GEMM_PRINT_CONFIGS", "0, 1 or 2", |v| v.parse::<u8>().ok().filter(|&l| l <= 2))?;
    config::set_print_configs(level.unwrap_or(0));
    Ok(())
}
