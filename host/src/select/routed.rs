//! The B bytes of a contiguous launch's busiest XCD when the groups' sizes are drawn.
//!
//! A contiguous split-K launch deals its logical tile ids to the XCDs in contiguous runs
//! ([`tile::xcd_remap`]) over the panel order of [`tile::tile_coords`]; an XCD reads a group's
//! B column (its `N` tile over the K range its pieces cover) once over its fabric link however
//! many of its row tiles share it (its L2 serves the rest). With every group the same number of
//! row tiles the runs hold the same number of distinct groups; with the MoE layer's routed
//! sizes they do not — at 257 experts and ~36 routed rows each, 32-row tiles give an expert one
//! row tile or two as the routing draws, and the run holding the most one-tile experts reads
//! the most distinct B (timing model, `docs/perf/moe.md`, session 24: 130 MB of fabric on one
//! XCD against 108–117 on the others, which ends the launch 15 % later). [`RoutedTiles`] draws
//! the groups' sizes as uniform routing gives them and counts, per draw, the busiest XCD's
//! distinct B columns exactly; the planner takes the mean over the draws.

use fp8gemm_device::tile;

/// How the rows of a contiguous layout fall to its groups, where the host knows how they are
/// drawn: `tokens` tokens, each routed to `top_k` distinct of `experts` groups uniformly (the
/// MoE layer's expected routing, as [`crate::moe::expected_layout`] assumes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Routing {
    /// Tokens routed.
    pub tokens: u32,
    /// Groups each token is routed to.
    pub top_k: u32,
    /// Groups (experts).
    pub experts: u32,
}

/// Draws [`RoutedTiles::draw`] takes (a fixed seed: the estimate is deterministic).
pub const ROUTED_DRAWS: usize = 16;

/// [`ROUTED_DRAWS`] draws of a routed layout's row tiles: in each, the ordinal among the
/// non-empty groups of every row tile, in layout order (each group's rows padded to whole
/// tiles).
#[derive(Clone, Debug, PartialEq)]
pub struct RoutedTiles {
    draws: Vec<Vec<u32>>,
}

/// SplitMix64: a fixed, portable sequence of 64-bit values.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A draw of Binomial(`n`, `p`): by inversion of its cdf where the mean is small (exact), else
/// the normal approximation rounded and clamped to `0 ..= n` (the mean is then ≥ 30).
fn binomial(rng: &mut SplitMix, n: u32, p: f64) -> u32 {
    if p >= 1.0 {
        return n;
    }
    if p <= 0.0 || n == 0 {
        return 0;
    }
    let mean = f64::from(n) * p;
    if mean < 30.0 {
        let u = rng.unit();
        let ratio = p / (1.0 - p);
        let mut pmf = (f64::from(n) * (1.0 - p).ln()).exp();
        let (mut c, mut cdf) = (0u32, pmf);
        while u > cdf && c < n {
            pmf *= f64::from(n - c) / f64::from(c + 1) * ratio;
            c += 1;
            cdf += pmf;
        }
        return c;
    }
    // Box–Muller.
    let (u1, u2) = (1.0 - rng.unit(), rng.unit());
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    (mean + z * (mean * (1.0 - p)).sqrt()).round().clamp(0.0, f64::from(n)) as u32
}

impl RoutedTiles {
    /// [`ROUTED_DRAWS`] draws of the layout `r` gives tiles of `bm` rows: each group's count
    /// Binomial(`tokens`, `top_k / experts`) (the marginal of uniform routing to distinct
    /// groups), its rows padded to `⌈count / bm⌉` tiles, empty groups left out.
    pub fn draw(r: Routing, bm: u32) -> RoutedTiles {
        let p = if r.experts == 0 { 0.0 } else { (f64::from(r.top_k) / f64::from(r.experts)).min(1.0) };
        let mut rng = SplitMix(0x005E_ED0F_2026_u64);
        let bm = bm.max(1);
        let draws = (0..ROUTED_DRAWS)
            .map(|_| {
                let mut tiles = Vec::new();
                let mut ordinal = 0u32;
                for _ in 0..r.experts {
                    let c = binomial(&mut rng, r.tokens, p);
                    if c > 0 {
                        tiles.extend(std::iter::repeat_n(ordinal, c.div_ceil(bm) as usize));
                        ordinal += 1;
                    }
                }
                tiles
            })
            .collect();
        RoutedTiles { draws }
    }

    /// The mean over the draws of the busiest XCD's distinct B columns of a grid of the draw's
    /// row tiles × `n_tiles` columns, each tile cut into `splits` pieces on neighbouring ids
    /// (split fastest, as the contiguous split-K kernels order them): per XCD, its run of ids
    /// ([`tile::xcd_remap`]) covers a range of tiles in the [`tile::tile_coords`] order, and
    /// each distinct (group, column) among them counts once, times the share of K its pieces
    /// cover (all of it unless split tiles are cut by the run). In units of one B column over
    /// the whole K.
    pub fn busiest_b_columns(&self, n_tiles: u64, splits: u64) -> f64 {
        let s = splits.max(1);
        let xcds = u64::from(tile::NUM_XCDS);
        let mut sum = 0.0;
        for grp in &self.draws {
            let grid = grp.len() as u64 * n_tiles * s;
            if grid == 0 {
                continue;
            }
            let (q, r) = (grid / xcds, grid % xcds);
            let mut worst = 0.0f64;
            for x in 0..xcds.min(grid) {
                let count = q + u64::from(x < r);
                if count == 0 {
                    continue;
                }
                let start = x * q + x.min(r);
                let (t0, t1) = (start / s, (start + count - 1) / s);
                let share = (count as f64 / s as f64 / (t1 - t0 + 1) as f64).min(1.0);
                worst = worst.max(distinct_columns(grp, n_tiles, t0, t1) as f64 * share);
            }
            sum += worst;
        }
        sum / self.draws.len().max(1) as f64
    }
}

/// Distinct (group, column) pairs among the tiles with logical ids `a ..= b` of a grid of
/// `grp.len()` row tiles (`grp`: each row tile's group, non-decreasing) × `n_tiles` columns in
/// the [`tile::tile_coords`] order: panels of [`tile::PANEL_M`] row tiles (the last takes the
/// remainder), M fastest inside a panel. A column's tiles in the range cover a contiguous run of
/// row tiles (from the first panel's start row, or the next panel, to the last panel's end row,
/// or the panel before), so its distinct groups are the ordinal difference of the run's ends
/// plus one; the columns fall into at most five classes of equal runs.
fn distinct_columns(grp: &[u32], n_tiles: u64, a: u64, b: u64) -> u64 {
    let tiles_m = grp.len() as i64;
    let (n, p) = (n_tiles as i64, i64::from(tile::PANEL_M));
    if tiles_m == 0 || n == 0 || a > b {
        return 0;
    }
    let last = if tiles_m >= p { tiles_m / p - 1 } else { 0 };
    let panel = |id: i64| (id / (p * n)).min(last);
    let rows = |pn: i64| if pn == last { tiles_m - pn * p } else { p };
    let (a, b) = (a as i64, (b as i64).min(tiles_m * n - 1));
    let (pa, pb) = (panel(a), panel(b));
    let (fa, fb) = (pa * p, pb * p);
    let (na, nb) = (rows(pa), rows(pb));
    let (ca, ra) = ((a - fa * n) / na, (a - fa * n) % na);
    let (cb, rb) = ((b - fb * n) / nb, (b - fb * n) % nb);
    let lo = |c: i64| {
        if c > ca {
            fa
        } else if c == ca {
            fa + ra
        } else {
            fa + na
        }
    };
    let hi = |c: i64| {
        if c < cb {
            fb + nb - 1
        } else if c == cb {
            fb + rb
        } else {
            fb - 1
        }
    };
    let (m1, m2) = (ca.min(cb), ca.max(cb));
    let classes: &[(i64, i64)] =
        if m1 == m2 { &[(0, m1), (m1, m1 + 1), (m1 + 1, n)] } else { &[(0, m1), (m1, m1 + 1), (m1 + 1, m2), (m2, m2 + 1), (m2 + 1, n)] };
    let mut total = 0u64;
    for &(c0, c1) in classes {
        if c1 <= c0 {
            continue;
        }
        let (l, h) = (lo(c0), hi(c0));
        if l <= h && l >= 0 && h < tiles_m {
            total += (c1 - c0) as u64 * u64::from(grp[h as usize] - grp[l as usize] + 1);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Every id in the range mapped through the kernels' own order, the pairs counted in a set.
    fn brute(grp: &[u32], n_tiles: u64, a: u64, b: u64) -> u64 {
        let tm = grp.len() as u32;
        let mut seen = HashSet::new();
        for id in a..=b {
            let (m, c) = tile::tile_coords(id as u32, tm, n_tiles as u32);
            if (c as u64) < n_tiles && m < tm {
                seen.insert((grp[m as usize], c));
            }
        }
        seen.len() as u64
    }

    #[test]
    fn distinct_columns_match_the_kernels_tile_order() {
        let mut rng = SplitMix(7);
        for case in 0..400 {
            // Groups of 1 … 4 row tiles, 1 … 40 row tiles in all, 1 … 9 columns.
            let mut grp = Vec::new();
            let target = 1 + (rng.next_u64() % 40) as usize;
            let mut g = 0;
            while grp.len() < target {
                let len = 1 + (rng.next_u64() % 4) as usize;
                grp.extend(std::iter::repeat_n(g, len));
                g += 1;
            }
            let n_tiles = 1 + rng.next_u64() % 9;
            let total = grp.len() as u64 * n_tiles;
            for _ in 0..20 {
                let a = rng.next_u64() % total;
                let b = a + rng.next_u64() % (total - a);
                assert_eq!(distinct_columns(&grp, n_tiles, a, b), brute(&grp, n_tiles, a, b), "case {case}: {grp:?} × {n_tiles}, ids {a} ..= {b}");
            }
            // The whole grid: every group in every column.
            assert_eq!(distinct_columns(&grp, n_tiles, 0, total - 1), u64::from(g) * n_tiles);
        }
    }

    #[test]
    fn binomial_draws_have_the_binomial_mean_and_spread() {
        // Small mean (inversion) and large mean (normal): the sample mean within 3 % of n·p
        // and the variance within 15 % of n·p·(1 − p) over 20 000 draws.
        for (n, p) in [(1024u32, 9.0 / 257.0), (16384, 9.0 / 257.0), (100, 0.05), (1, 0.5)] {
            let mut rng = SplitMix(11);
            let xs: Vec<f64> = (0..20_000).map(|_| f64::from(binomial(&mut rng, n, p))).collect();
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
            let (m, v) = (f64::from(n) * p, f64::from(n) * p * (1.0 - p));
            assert!((mean - m).abs() <= 0.03 * m, "n {n} p {p}: mean {mean} vs {m}");
            assert!((var - v).abs() <= 0.15 * v, "n {n} p {p}: variance {var} vs {v}");
            assert!(xs.iter().all(|&x| x >= 0.0 && x <= f64::from(n)));
        }
    }

    #[test]
    fn uneven_groups_load_one_xcd_with_more_distinct_b() {
        // Equal groups of one row tile: every XCD reads the same number of columns (a run of
        // `tiles/8` tiles, whole panels: its rows' groups × the columns).
        let even = RoutedTiles { draws: vec![(0..64).collect()] };
        assert_eq!(even.busiest_b_columns(4, 1), 32.0);
        // Groups of one or two row tiles (the 32-row layout at ~36 routed rows per expert): more
        // distinct groups on the XCD whose run holds the one-tile groups.
        let mut grp = Vec::new();
        for g in 0..48u32 {
            grp.extend(std::iter::repeat_n(g, if g < 16 { 1 } else { 2 }));
        }
        let uneven = RoutedTiles { draws: vec![grp] };
        // 80 row tiles × 4 columns, 40 ids per XCD: XCD 0's 10 row tiles hold 10 groups.
        assert_eq!(uneven.busiest_b_columns(4, 1), 40.0);
        // Drawn at 1024 tokens over 257 experts, top-9: 32-row tiles load the busiest XCD with
        // more distinct B than 64-row tiles do, per column of the grid.
        let r = Routing { tokens: 1024, top_k: 9, experts: 257 };
        let (t32, t64) = (RoutedTiles::draw(r, 32), RoutedTiles::draw(r, 64));
        let (b32, b64) = (t32.busiest_b_columns(4, 1), t64.busiest_b_columns(4, 1));
        assert!(b32 > 1.05 * b64, "{b32} vs {b64}");
        // Deterministic.
        assert_eq!(RoutedTiles::draw(r, 32), t32);
    }
}
