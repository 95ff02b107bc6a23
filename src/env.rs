//! The CLI's environment variables, read in this one place, once, at start-up ([`init`]). The
//! library reads none: these map onto its explicit arguments (the selector's [`Overrides`],
//! which the CLI sets on every stream it creates, [`stream`], and passes to the planning
//! functions it calls; the selector's diagnostic printing; the weight layout of the demos).
//!
//! | variable | effect |
//! |---|---|
//! | `FP8GEMM_FORCE_TILE=BMxBN` | [`Overrides::tile`] |
//! | `FP8GEMM_FORCE_SPLIT=S` | [`Overrides::split`] |
//! | `FP8GEMM_FORCE_STREAMK=G` or `G/DP` | [`Overrides::stream_k`] |
//! | `FP8GEMM_FORCE_ORDER=runs` or `columns` | [`Overrides::remap`] (a masked grid's order) |
//! | `FP8GEMM_FORCE_KERNEL=name` | [`Overrides::kernel`] |
//! | `FP8GEMM_PRINT_CONFIGS=1` / `2` | [`config::set_print_configs`] |
//! | `FP8GEMM_PRESHUFFLED=1` | the demos' and `compare`'s weights in the pre-shuffled layout ([`Env::preshuffled`]) |
//! | `AMDGPU_EMU_MACHINE_OVERRIDES=…` | parameters replaced in the timing model's machine ([`Env::machine_overrides`]) |
//!
//! (The emulator reads its own variables, e.g. the `env` machine of `--machine env` and
//! `FP8GEMM_PEERS_DIR`, in `amdgpu_emu`.)

use std::sync::OnceLock;

use amdgpu_emu::timing::Machine;
use fp8gemm::config::{self, Overrides};
use fp8gemm::{Context, Stream};

/// What the environment asks for (see the [module docs](self)).
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// The selector overrides of every stream the CLI creates.
    pub overrides: Overrides,
    /// The selector's print level (0, 1 or 2).
    pub print_configs: u8,
    /// `FP8GEMM_PRESHUFFLED=1`: weights in the pre-shuffled layout (the bs kernels; experiments).
    pub preshuffled: bool,
    /// The machine-parameter overrides of the timing model (`AMDGPU_EMU_MACHINE_OVERRIDES`), if
    /// set.
    pub machine_overrides: Option<String>,
}

static ENV: OnceLock<Env> = OnceLock::new();

/// The value of variable `name` parsed by `f` (`None` when unset; an error naming the variable
/// and `expected` when `f` rejects it or it is not Unicode).
fn parse<T>(name: &str, expected: &str, f: impl FnOnce(&str) -> Option<T>) -> Result<Option<T>, String> {
    match std::env::var(name) {
        Ok(v) => f(v.trim()).map(Some).ok_or_else(|| format!("{name}={v:?}: expected {expected}")),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(e) => Err(format!("{name}: {e}")),
    }
}

/// The selector overrides the environment asks for.
fn overrides() -> Result<Overrides, String> {
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
    let xcds = fp8gemm_device::tile::NUM_XCDS;
    let order = parse("FP8GEMM_FORCE_ORDER", "runs or columns", |v| match v {
        "runs" => Some(config::Remap::Xcd { xcds }),
        "columns" => Some(config::Remap::Columns { xcds }),
        _ => None,
    })?;
    if let Some(r) = order {
        o = o.with_remap(r);
    }
    if let Some(k) = parse("FP8GEMM_FORCE_KERNEL", "a registered kernel name", |v| Some(v.to_string()))? {
        o = o.with_kernel(&k).map_err(|e| format!("FP8GEMM_FORCE_KERNEL={k:?}: {e}"))?;
    }
    Ok(o)
}

/// Reads the environment (once per process) and applies the selector's print level.
pub fn init() -> Result<(), String> {
    let env = Env {
        overrides: overrides()?,
        print_configs: parse("FP8GEMM_PRINT_CONFIGS", "0, 1 or 2", |v| v.parse::<u8>().ok().filter(|&l| l <= 2))?.unwrap_or(0),
        preshuffled: std::env::var("FP8GEMM_PRESHUFFLED").is_ok_and(|v| v == "1"),
        machine_overrides: parse(Machine::OVERRIDES_ENV, "machine parameter overrides", |v| Some(v.to_string()))?,
    };
    config::set_print_configs(env.print_configs);
    // A second call keeps the first reading.
    let _ = ENV.set(env);
    Ok(())
}

/// The environment [`init`] read (nothing set, [`Env::default`], before it ran).
pub fn get() -> &'static Env {
    ENV.get_or_init(Env::default)
}

/// A new stream on `ctx` with the environment's selector overrides.
pub fn stream(ctx: &Context) -> fp8gemm::Result<Stream> {
    let mut stream = Stream::new(ctx)?;
    stream.set_overrides(get().overrides);
    Ok(stream)
}
