//! The operands of one GEMM problem on the device, all zero, and its launch through the public
//! API: what `fp8gemm compare` and `fp8gemm tune` time with the timing model (operand values do
//! not steer the kernels, so zeros allocated on the device serve; nothing is quantized on the
//! host).

use fp8gemm::codeobj::Arch;
use fp8gemm::fp8::{E4M3Fn, E4M3Fnuz, Fp8Format};
use fp8gemm::grouped::upload_m_indices;
use fp8gemm::{Context, DeviceActivations, DeviceBuffer, DeviceGroupedWeights, DeviceWeights, GemmRun, Result, Stream, WeightLayout};
use half::bf16;

/// One GEMM problem: dense `m × n × k`, or m-grouped with `groups` groups of `rows` rows each
/// (contiguous: rows stacked, group `g` on rows `g·rows ..`; masked: every `masked_m` = `rows`,
/// `m_max` = `rows`).
#[derive(Clone, Copy, Debug)]
pub enum Problem {
    /// `fp8_gemm_nt`.
    Dense { m: usize, n: usize, k: usize },
    /// `m_grouped_fp8_gemm_nt_contiguous`.
    Contiguous { groups: usize, rows: usize, n: usize, k: usize },
    /// `m_grouped_fp8_gemm_nt_masked`.
    Masked { groups: usize, rows: usize, n: usize, k: usize },
    /// `m_grouped_fp8_gemm_nt_masked` as a decode step sees it: `groups` groups of capacity
    /// `m_max` = [`masked_capacity`]`(expected)`, `expected_m` = `expected`, and counts spread
    /// around it: [`masked_count`] without a seed, [`random_masked_counts`] from `seed`.
    MaskedSpread { groups: usize, expected: usize, n: usize, k: usize, seed: Option<u64> },
    /// `m_grouped_fp8_gemm_nt_contiguous` with each group's last rows padding (`m_indices`
    /// −1), as a routed layout pads each group to whole 128-row blocks: group `g` pads
    /// [`padding_rows`] of its `rows`.
    ContiguousPadded { groups: usize, rows: usize, n: usize, k: usize },
}

/// The capacity `m_max` of a [`Problem::MaskedSpread`] group expected to hold `expected` rows:
/// `⌈1.3 · expected⌉` (at least 1).
pub fn masked_capacity(expected: usize) -> usize {
    (expected * 13).div_ceil(10).max(1)
}

/// The problem description of a [`Problem::MaskedSpread`] layout: `groups` groups of `n × k`
/// weights, `expected_m` = `expected`, `m_max` its [`masked_capacity`].
pub fn masked_spread_desc(groups: u32, expected: u32, n: u32, k: u32, arch: Arch) -> fp8gemm::config::GemmDesc {
    let m_max = u32::try_from(masked_capacity(expected as usize)).unwrap_or(u32::MAX);
    fp8gemm::config::GemmDesc::m_grouped_masked(m_max, n, k, groups, expected, arch)
}

/// The row count of group `g` of a [`Problem::MaskedSpread`] layout: `expected` scaled by
/// `0.7 + 0.6 · frac(0.618… · (g + 1))` (a low-discrepancy spread over 0.7 … 1.3, mean 1),
/// rounded, at most the capacity.
pub fn masked_count(g: usize, expected: usize) -> usize {
    let u = (0.618_033_988_749_895 * (g + 1) as f64).fract();
    ((expected as f64 * (0.7 + 0.6 * u)).round() as usize).min(masked_capacity(expected))
}

/// The row counts of a [`Problem::MaskedSpread`] layout drawn as DeepGEMM's masked tests draw
/// them: each group's `expected · U[0.7, 1.3)` rounded down, independently (seeded), at most the
/// capacity. Unlike [`masked_count`]'s even spread, neighbouring groups (which share an XCD's
/// run of the grid) can both run long.
pub fn random_masked_counts(groups: usize, expected: usize, seed: u64) -> Vec<usize> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..groups).map(|_| ((expected as f64 * rng.random_range(0.7..1.3)) as usize).min(masked_capacity(expected))).collect()
}

/// The padding rows of group `g` of a [`Problem::ContiguousPadded`] layout of `rows` rows per
/// group: `(53·g + 17) mod 128` (spread over 0 … 127 like the padding of counts that are
/// uniform modulo 128), at most `rows − 1`, so every group keeps a row in use.
pub fn padding_rows(g: usize, rows: usize) -> usize {
    ((53 * g + 17) % 128).min(rows.saturating_sub(1))
}

impl Problem {
    /// `(n, k)`.
    pub fn nk(&self) -> (usize, usize) {
        match *self {
            Problem::Dense { n, k, .. }
            | Problem::Contiguous { n, k, .. }
            | Problem::Masked { n, k, .. }
            | Problem::ContiguousPadded { n, k, .. }
            | Problem::MaskedSpread { n, k, .. } => (n, k),
        }
    }
    /// Rows of A and D (all groups).
    pub fn rows(&self) -> usize {
        match *self {
            Problem::Dense { m, .. } => m,
            Problem::Contiguous { groups, rows, .. } | Problem::Masked { groups, rows, .. } | Problem::ContiguousPadded { groups, rows, .. } => groups * rows,
            Problem::MaskedSpread { groups, expected, .. } => groups * masked_capacity(expected),
        }
    }
}

/// B of a problem and what the grouped layouts add.
enum Weights<F: Fp8Format> {
    Dense(DeviceWeights<F>),
    Contiguous(DeviceGroupedWeights<F>, DeviceBuffer<i32>),
    Masked(DeviceGroupedWeights<F>, DeviceBuffer<i32>, usize),
}

/// The operands in one FP8 format.
struct Typed<F: Fp8Format> {
    a: DeviceActivations<F>,
    b: Weights<F>,
    d: DeviceBuffer<bf16>,
}

/// Zero operands of a [`Problem`], allocated once and launched any number of times, in the FP8
/// format of the context's architecture (E4M3FNUZ on gfx942, E4M3FN on gfx950).
pub struct Operands(Box<dyn Launch>);

/// The launches of [`Typed`] operands, whatever their format.
trait Launch {
    fn launch(&mut self, stream: &Stream) -> Result<GemmRun>;
    fn launch_plan(&mut self, stream: &Stream, plan: &fp8gemm::select::Plan) -> Result<GemmRun>;
}

impl<F: Fp8Format> Typed<F> {
    fn new(ctx: &Context, p: Problem, layout: WeightLayout) -> Result<Typed<F>> {
        let ((n, k), rows) = (p.nk(), p.rows());
        let b = match p {
            Problem::Dense { .. } => Weights::Dense(DeviceWeights::alloc_with_layout(ctx, n, k, layout)?),
            Problem::Contiguous { groups, rows: r, .. } => {
                let idx: Vec<i32> = (0..rows).map(|i| (i / r) as i32).collect();
                Weights::Contiguous(DeviceGroupedWeights::alloc_with_layout(ctx, groups, n, k, layout)?, upload_m_indices(ctx, &idx, groups)?)
            }
            Problem::ContiguousPadded { groups, rows: r, .. } => {
                let idx: Vec<i32> = (0..rows).map(|i| if i % r >= r - padding_rows(i / r, r) { -1 } else { (i / r) as i32 }).collect();
                Weights::Contiguous(DeviceGroupedWeights::alloc_with_layout(ctx, groups, n, k, layout)?, upload_m_indices(ctx, &idx, groups)?)
            }
            Problem::MaskedSpread { groups, expected, seed, .. } => {
                let counts: Vec<i32> = match seed {
                    None => (0..groups).map(|g| masked_count(g, expected) as i32).collect(),
                    Some(s) => random_masked_counts(groups, expected, s).into_iter().map(|c| c as i32).collect(),
                };
                Weights::Masked(DeviceGroupedWeights::alloc_with_layout(ctx, groups, n, k, layout)?, ctx.upload(&counts)?, expected)
            }
            Problem::Masked { groups, rows: r, .. } => {
                Weights::Masked(DeviceGroupedWeights::alloc_with_layout(ctx, groups, n, k, layout)?, ctx.upload(&vec![r as i32; groups])?, r)
            }
        };
        Ok(Typed { a: DeviceActivations::alloc(ctx, rows, k)?, b, d: ctx.alloc_zeroed(rows * n)? })
    }
}

impl<F: Fp8Format> Launch for Typed<F> {
    fn launch(&mut self, stream: &Stream) -> Result<GemmRun> {
        let (a, d) = (&self.a, &mut self.d);
        let run = match &self.b {
            Weights::Dense(b) => fp8gemm::fp8_gemm_nt(stream, a, b, d)?,
            Weights::Contiguous(b, idx) => fp8gemm::m_grouped_fp8_gemm_nt_contiguous(stream, a, b, d, idx)?,
            Weights::Masked(b, masked, expected_m) => fp8gemm::m_grouped_fp8_gemm_nt_masked(stream, a, b, d, masked, *expected_m)?,
        };
        stream.synchronize()?;
        Ok(run)
    }

    fn launch_plan(&mut self, stream: &Stream, plan: &fp8gemm::select::Plan) -> Result<GemmRun> {
        let Weights::Dense(b) = &self.b else {
            return Err(fp8gemm::Error::Unsupported("a plan is launched on dense operands only".into()));
        };
        let run = fp8gemm::fp8_gemm_nt_with_plan(stream, &self.a, b, &mut self.d, plan, None)?;
        stream.synchronize()?;
        Ok(run)
    }
}

impl Operands {
    /// Allocates the operands of `p` on `ctx` (contiguous: `m_indices` of `rows` rows per group).
    /// With `FP8GEMM_PRESHUFFLED=1` the weights (dense and grouped) are allocated in the
    /// pre-shuffled layout, so the entry points run their bs kernels.
    pub fn new(ctx: &Context, p: Problem) -> Result<Operands> {
        let layout = if crate::env::get().preshuffled { WeightLayout::Preshuffled } else { WeightLayout::Logical };
        Self::with_layout(ctx, p, layout)
    }

    /// As [`Self::new`] with the weights in `layout`.
    pub fn with_layout(ctx: &Context, p: Problem, layout: WeightLayout) -> Result<Operands> {
        Ok(Operands(match ctx.arch() {
            Arch::Gfx942 => Box::new(Typed::<E4M3Fnuz>::new(ctx, p, layout)?),
            Arch::Gfx950 => Box::new(Typed::<E4M3Fn>::new(ctx, p, layout)?),
            other => return Err(fp8gemm::Error::Unsupported(format!("operands for {other:?}: expected gfx942 or gfx950"))),
        }))
    }

    /// Queues the GEMM on `stream` and synchronizes it (launches are queued per stream and run
    /// — and are timed — when it is synchronized).
    pub fn launch(&mut self, stream: &Stream) -> Result<GemmRun> {
        self.0.launch(stream)
    }

    /// Queues the dense GEMM with `plan` given (not chosen) on `stream` and synchronizes it.
    pub fn launch_plan(&mut self, stream: &Stream, plan: &fp8gemm::select::Plan) -> Result<GemmRun> {
        self.0.launch_plan(stream, plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_counts_stay_within_the_capacity_and_average_the_expected_count() {
        for expected in [1usize, 4, 17, 64, 100, 256, 1024] {
            let cap = masked_capacity(expected);
            assert_eq!(cap, (expected * 13).div_ceil(10), "capacity of {expected}");
            let counts: Vec<usize> = (0..512).map(|g| masked_count(g, expected)).collect();
            for (g, &c) in counts.iter().enumerate() {
                assert!(c <= cap, "group {g} of expected {expected}: {c} > {cap}");
                assert!(c as f64 >= 0.7 * expected as f64 - 0.5, "group {g} of expected {expected}: {c}");
            }
            let mean = counts.iter().sum::<usize>() as f64 / counts.len() as f64;
            assert!((mean - expected as f64).abs() <= 0.02 * expected as f64 + 0.5, "expected {expected}: mean {mean}");
        }
        assert_eq!(masked_capacity(0), 1);
    }

    #[test]
    fn padded_groups_keep_a_row_and_spread_their_padding() {
        for rows in [1usize, 2, 128, 256, 1024] {
            for g in 0..300 {
                let p = padding_rows(g, rows);
                assert!(p < rows && p <= 127, "group {g} of {rows} rows pads {p}");
            }
        }
        // Over whole 128-row blocks the padding covers 0 … 127 evenly (53 is prime to 128).
        let mut seen = [false; 128];
        (0..128).for_each(|g| seen[padding_rows(g, 1024)] = true);
        assert!(seen.iter().all(|&s| s));
    }
}
