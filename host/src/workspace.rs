//! Scratch memory for kernels that need it.
//!
//! Split-K GEMM kernels (planned: K-parallel decomposition for small `m·n` and long `k`) write
//! FP32 partial sums to a scratch buffer and reduce them in a second pass. Allocating that buffer
//! inside a launch would break the launch path's guarantees (no allocation, capture-safe), so it
//! is allocated up front and passed in: a [`Workspace`] owned by the caller, sized with
//! [`workspace_floats`] for the largest problem it will serve.
//!
//! No kernel shipped in this version uses a workspace: [`workspace_floats`] is 0 for every
//! problem, and the entry points take none yet. The type and the query are stable so that
//! engines can allocate once now and keep working when split-K kernels arrive.

use crate::error::Result;
use crate::runtime::{Context, DeviceBuffer};
use crate::view::DeviceSliceMut;

/// FP32 elements of scratch a dense `m × n × k` GEMM needs with the kernel the library would
/// choose for it. Currently always 0 (no shipped kernel splits K).
pub fn workspace_floats(m: usize, n: usize, k: usize) -> usize {
    let _ = (m, n, k);
    0
}

/// A caller-owned FP32 scratch buffer on one device (see the [module docs](self)).
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
    /// A workspace large enough for every problem in `shapes` (`(m, n, k)` triples).
    pub fn for_problems(ctx: &Context, shapes: &[(usize, usize, usize)]) -> Result<Workspace> {
        let floats = shapes.iter().map(|&(m, n, k)| workspace_floats(m, n, k)).max().unwrap_or(0);
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
    /// Whether it can serve an `m × n × k` GEMM.
    pub fn fits(&self, m: usize, n: usize, k: usize) -> bool {
        workspace_floats(m, n, k) <= self.len()
    }
    /// The scratch memory, as a view.
    pub fn as_slice_mut(&mut self) -> DeviceSliceMut<'_, f32> {
        self.buf.as_slice_mut()
    }
}
