//! Scratch memory of the split-K and stream-K GEMMs.
//!
//! # Split-K
//!
//! When a dense problem has too few output tiles to fill the device (decode: `m` = 64 or 128
//! against 304 CUs) but a long K, the model (`crate::config`) may split each tile's K blocks
//! over `s` workgroups (`fp8_gemm_nt_splitk_*`, [`fp8gemm_device::dense`]). Each workgroup
//! writes its FP32 partial tile to a **workspace**, counts itself in on the tile's arrival
//! counter (an atomic add, the only atomic: no float atomics, no bf16 atomics of partial
//! sums), and the last one to arrive sums the `s` partials **in split order** 0, 1, …, s−1 —
//! a fixed order whatever the arrival order, so results are deterministic — converts to bf16
//! with D's row stride and sets the counter back to 0. One launch, no memset: the workspace is
//! reusable by the next launch and inside captured graphs.
//!
//! The m-grouped **masked** GEMM with pre-shuffled weights splits K the same way for decode-sized
//! launches ([`crate::m_grouped_fp8_gemm_nt_masked`], split count from `expected_m`), with the
//! stream's workspace under the same rules (reported fallback, forced split too large: an
//! error); its need covers every tile of the grid (`G · ⌈m_max/BM⌉ · ⌈n/128⌉`), since any group
//! may hold up to `m_max` rows.
//!
//! Splitting changes the FP32 summation order of the K blocks (partial sums per split, then
//! their sum), so a split result is not bit-identical to the unsplit one; both are within the
//! kernels' accuracy (calc_diff < 1e-5 against the dequantized reference; `tests/gemm_splitk.rs`).
//!
//! # Stream-K
//!
//! Where the last wave of whole tiles would leave most of the device idle, the model may run a
//! dense problem **stream-K** instead (`fp8_gemm_nt_streamk_*`, [`fp8gemm_device::streamk`]):
//! whole waves of tiles data-parallel, then `g` workgroups sharing the remaining tiles' K
//! blocks evenly. A workgroup's range covers parts of at most two tiles; a part of a tile is
//! an FP32 partial in the workspace, reduced in K order by the last of the tile's contributors
//! to arrive, with the same counters, the same protocol and the same rules as split-K. Its
//! need is the counter region plus `g + T − 1` partial tiles (`T` the stream-K tiles), which
//! for large problems can exceed the stream's default: then the best configuration that fits
//! runs, reported as for split-K.
//!
//! # Layout
//!
//! For a config of `T` output tiles of `BM × BN` and `s` splits
//! (`crate::config::GemmConfig::workspace_floats`, [`fp8gemm_device::tile::splitk_workspace_floats`]):
//! a fixed region of [`SPLITK_MAX_TILES`](fp8gemm_device::tile::SPLITK_MAX_TILES) u32 arrival
//! counters (16 KiB, the same for every launch), then `T · s` partial tiles of `BM · BN` f32
//! (`T ≤ SPLITK_MAX_TILES`: larger problems never split). The counters must be 0 when a launch
//! starts; [`Workspace::new`] allocates zeroed memory, every launch leaves them 0, and no
//! launch writes partial sums into the counter region, so consecutive launches of any sizes
//! share one workspace without clearing it (a launch that faults midway can leave counters
//! set: allocate a new workspace after a launch error).
//!
//! # Where the workspace comes from (the decision)
//!
//! * **The stream's**: [`Stream::new`](crate::Stream::new) allocates a workspace of
//!   [`DEFAULT_STREAM_WORKSPACE_FLOATS`] (32 MiB, enough for every DeepSeek-V3 decode shape the
//!   model splits); [`Stream::set_workspace`](crate::Stream::set_workspace) replaces it (or
//!   gives one to a wrapped or null stream, which have none). Launches on one stream run in
//!   order, so they share it safely; two streams have two workspaces, so split-K GEMMs on two
//!   streams at once do not race. [`crate::fp8_gemm_nt`] uses it. If the model's preferred
//!   config needs more than the stream's workspace holds, the best config that fits runs
//!   instead (no split always fits) — a documented, **reported** choice: the returned
//!   [`GemmRun::workspace_limit`](crate::GemmRun) names the preferred config and both sizes,
//!   and `config::set_print_configs` (the `internals` feature) prints it. A split forced through the stream's
//!   [`Overrides`] that does not fit is an error instead.
//! * **The caller's**: [`crate::fp8_gemm_nt_with_workspace`] takes a `&mut Workspace`; a
//!   workspace smaller than [`workspace_floats`] of the problem is an
//!   [`Error::Workspace`](crate::Error::Workspace), never a silent fallback. Pre-shuffled
//!   weights run the bs kernels, whose need is [`workspace_floats_preshuffled`] (their split-K
//!   and stream-K choice differs from the logical kernels').
//!
//! A captured graph replays the workspace address it captured: keep that workspace (the
//! stream, or the explicit one) alive while the graph is replayed, and do not replay it
//! concurrently with other launches using the same workspace.

use crate::codeobj::Arch;
use crate::config::{self, GemmDesc, Overrides};
use crate::error::Result;
use crate::runtime::{Context, DeviceBuffer, Stream};
use crate::view::DeviceSliceMut;
use fp8gemm_device::args::GlobalPtr;

/// FP32 elements of the workspace [`Stream::new`](crate::Stream::new) allocates: 8 Mi
/// (32 MiB). The largest need among DeepSeek-V3's dense shapes at `m ≤ 128` is below it
/// (`tests/gemm_splitk.rs` checks).
pub const DEFAULT_STREAM_WORKSPACE_FLOATS: usize = 8 << 20;

/// FP32 elements of workspace a dense `m × n × k` GEMM needs with the configuration the model
/// prefers for it under `overrides` (`crate::config::get_best_config` on gfx942, whose figures
/// gfx950 shares; pass the launching stream's overrides, [`crate::Stream::overrides`], so that a
/// forced tile, split or stream-K schedule counts, or [`Overrides::NONE`]). 0 when that
/// configuration does not split K, and for shapes the GEMM rejects.
pub fn workspace_floats(m: usize, n: usize, k: usize, overrides: &Overrides) -> usize {
    let (Ok(m), Ok(n), Ok(k)) = (u32::try_from(m), u32::try_from(n), u32::try_from(k)) else { return 0 };
    config::get_best_config(&GemmDesc::dense(m, n, k, Arch::Gfx942), overrides).map_or(0, |c| c.workspace_floats() as usize)
}

/// [`workspace_floats`] for **pre-shuffled** weights ([`crate::layout::WeightLayout::Preshuffled`]:
/// the bs kernels, whose split-K and stream-K choice is `crate::config::get_bs_config`'s and
/// whose need can differ from the logical layout's, e.g. 1280 × 2048 × 7168 runs bs stream-K).
/// 0 when that configuration neither splits K nor runs stream-K, and for rejected shapes.
pub fn workspace_floats_preshuffled(m: usize, n: usize, k: usize, overrides: &Overrides) -> usize {
    let (Ok(m), Ok(n), Ok(k)) = (u32::try_from(m), u32::try_from(n), u32::try_from(k)) else { return 0 };
    config::get_bs_config(&GemmDesc::dense(m, n, k, Arch::Gfx942), overrides).map_or(0, |c| c.workspace_floats() as usize)
}

/// The split-K workspace a stream owns: its attachment ([`Stream`] keeps it, this module alone
/// reads it).
struct StreamWorkspace(Workspace);

/// Gives a new stream the default workspace of [`DEFAULT_STREAM_WORKSPACE_FLOATS`] (a
/// `STREAM_SETUP` hook of the crate root, run by [`Stream::new`]).
pub(crate) fn attach_default_workspace(stream: &mut Stream) -> Result<()> {
    let w = Workspace::new(stream.context(), DEFAULT_STREAM_WORKSPACE_FLOATS)?;
    stream.replace_attachment(Some(StreamWorkspace(w)));
    Ok(())
}

/// The stream's split-K workspace (the GEMM layer's per-stream state, kept in the stream's
/// attachments: see [`Stream`]).
impl Stream {
    /// The split-K workspace of the GEMMs launched on this stream, if any: [`Stream::new`] gives
    /// one of [`DEFAULT_STREAM_WORKSPACE_FLOATS`]; wrapped and null streams have none until
    /// [`Stream::set_workspace`].
    pub fn workspace(&self) -> Option<&Workspace> {
        self.attachment::<StreamWorkspace>().map(|w| &w.0)
    }

    /// Replaces the stream's split-K workspace (`None`: no workspace, so nothing launched on
    /// the stream splits K) and returns the previous one. It must belong to the stream's
    /// context (a typed error otherwise) and must not be used by launches on other streams.
    pub fn set_workspace(&mut self, workspace: Option<Workspace>) -> Result<Option<Workspace>> {
        if let Some(w) = &workspace {
            self.context().check_owner("workspace", w.owner())?;
        }
        Ok(self.replace_attachment(workspace.map(StreamWorkspace)).map(|w| w.0))
    }
}

/// A device FP32 scratch buffer for split-K and stream-K launches (see the [module docs](self)).
#[derive(Debug)]
pub struct Workspace {
    buf: DeviceBuffer<f32>,
}

impl Workspace {
    /// Allocates `floats` zeroed FP32 elements on `ctx`'s device (synchronously: do it at setup,
    /// not inside a capture).
    pub fn new(ctx: &Context, floats: usize) -> Result<Workspace> {
        Ok(Workspace { buf: ctx.alloc_zeroed(floats)? })
    }
    /// A workspace large enough for every problem in `shapes` (`(m, n, k)` triples) under
    /// `overrides` ([`workspace_floats`]).
    pub fn for_problems(ctx: &Context, shapes: &[(usize, usize, usize)], overrides: &Overrides) -> Result<Workspace> {
        let floats = shapes.iter().map(|&(m, n, k)| workspace_floats(m, n, k, overrides)).max().unwrap_or(0);
        Self::new(ctx, floats)
    }
    /// Capacity in FP32 elements.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// Whether the workspace has no capacity.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// Whether it can serve an `m × n × k` GEMM under `overrides` ([`workspace_floats`]).
    pub fn fits(&self, m: usize, n: usize, k: usize, overrides: &Overrides) -> bool {
        workspace_floats(m, n, k, overrides) <= self.len()
    }
    /// The scratch memory, as a view.
    pub fn as_slice_mut(&mut self) -> DeviceSliceMut<'_, f32> {
        self.buf.as_slice_mut()
    }
    /// The device address (for kernel arguments).
    pub(crate) fn device_ptr(&self) -> GlobalPtr<f32> {
        self.buf.device_ptr()
    }
    /// The id of the owning context.
    pub(crate) fn owner(&self) -> Option<u64> {
        self.buf.owner()
    }
}
