//! The tuned table of the **bs kernels** (B pre-shuffled): `host/tuned/gfx942_bs.csv`, written by
//! `fp8gemm tune --bs` from the timing model (every figure in it is modelled, not measured).
//!
//! A row names a dense problem and the config that was fastest among every candidate the tuner
//! timed, as the **forcing** that reproduces it (tile, split count, stream-K schedule: the same
//! values `FP8GEMM_FORCE_TILE`, `FP8GEMM_FORCE_SPLIT` and `FP8GEMM_FORCE_STREAMK` take). The
//! bs choice ([`super::get_bs_config_for_workspace`]) replays that forcing for a problem with a
//! row (so a row always resolves to a kernel the forced paths can launch, and a row the current
//! kernels cannot honour is an error, [`super::ConfigError::Tuned`], never a silent fallback),
//! and uses its rules for every other problem. The tuner writes a row only where the best
//! candidate is faster than the rules' own choice by [`TABLE_MIN_GAIN`]; the candidates and
//! their modelled times are kept on the row for review.
//!
//! Format (one record per line, `#` comments):
//! `bs,kind,groups,m,n,k,expected_m,cus,tile,splits,stream_k,modelled_us,rule_us,all candidates`
//! with `tile` = `BMxBN`, `splits` ≥ 1 (1: no split-K), `stream_k` = `G/DP` or `-`, `cus` the
//! CU count the row was modelled for (a device with another count uses the rules).

use super::{ConfigError, ForcedStreamK, GemmDesc, GemmKind, Record, parse_kind};
use std::cell::Cell;
use std::sync::OnceLock;

thread_local! {
    /// Whether this thread's bs choices ignore the tuned table ([`without_table`]).
    static IGNORED: Cell<bool> = const { Cell::new(false) };
}

/// `body` with the tuned table ignored by this thread's bs choices (the rules decide for every
/// problem, as for a problem without a row); the previous state is restored afterwards, also
/// when `body` panics. `fp8gemm tune --bs` times "the rules' choice" this way: through the
/// public API with the table applied, a re-run of the tuner against a table with rows would
/// compare each tabled shape's candidates with its own row, find no gain and drop the row.
pub fn without_table<T>(body: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IGNORED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(IGNORED.with(|c| c.replace(true)));
    body()
}

/// Whether this thread's bs choices currently ignore the tuned table ([`without_table`]).
pub fn ignored() -> bool {
    IGNORED.with(Cell::get)
}

/// The least relative gain of a tabled config over the rules' choice for which the tuner writes
/// a row: the timing model moves by about ±2 % when only the code layout changes
/// (`super::STREAMK_MIN_GAIN`), so a smaller gain is noise.
pub const TABLE_MIN_GAIN: f64 = 0.02;

const TUNED_GFX942_BS: &str = include_str!("../../tuned/gfx942_bs.csv");

/// The forcing of one config: tile, split count, stream-K schedule (what the forced paths of
/// the bs choice take).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsForcing {
    /// Forced tile `(block_m, block_n)`.
    pub tile: (u32, u32),
    /// Forced split count (1: unsplit).
    pub splits: u32,
    /// Forced stream-K schedule `(g, Some(dp))`, if any.
    pub stream_k: Option<ForcedStreamK>,
}

impl std::fmt::Display for BsForcing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.tile.0, self.tile.1)?;
        if self.splits > 1 {
            write!(f, " split {}", self.splits)?;
        }
        match self.stream_k {
            Some((g, Some(dp))) => write!(f, " stream-K {g}/{dp}"),
            Some((g, None)) => write!(f, " stream-K {g}"),
            None => Ok(()),
        }
    }
}

/// One row of the bs table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BsRow {
    /// The problem's kind (dense only so far).
    pub kind: GemmKind,
    /// Groups of the problem.
    pub groups: u32,
    /// Rows (dense M).
    pub m: u32,
    /// Columns.
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Expected rows per group (dense: `m`).
    pub expected_m: u32,
    /// CU count the row was modelled for.
    pub cus: u32,
    /// The forcing that reproduces the config.
    pub forcing: BsForcing,
    /// Its modelled time, µs.
    pub us: f64,
    /// The modelled time of the rules' own choice, µs.
    pub rule_us: f64,
}

/// Parses the table text (the record format of the module docs).
pub fn parse(text: &str) -> Result<Vec<BsRow>, String> {
    let mut rows = Vec::new();
    for r in Record::all(text, "bs table") {
        let (f, bad, u, x) = (&r.fields, |w: &str| r.bad(w), |j| r.u(j), |j| r.x(j));
        if f[0] != "bs" {
            return Err(bad("unknown record type (expected bs)"));
        }
        let kind = f.get(1).and_then(|k| parse_kind(k)).ok_or_else(|| bad("unknown kind"))?;
        let tile = f
            .get(8)
            .and_then(|t| t.split_once('x'))
            .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
            .ok_or_else(|| bad("field 8 is not a tile BMxBN"))?;
        let splits = u(9)?;
        if splits == 0 {
            return Err(bad("field 9 (splits) must be at least 1"));
        }
        let stream_k = match f.get(10).copied() {
            Some("-") => None,
            Some(s) => {
                let (g, dp) = s.split_once('/').ok_or_else(|| bad("field 10 is not G/DP or -"))?;
                let g = g.parse::<u32>().ok().filter(|&g| g > 0).ok_or_else(|| bad("field 10: G is not a positive integer"))?;
                let dp = dp.parse::<u32>().map_err(|_| bad("field 10: DP is not an unsigned integer"))?;
                Some((g, Some(dp)))
            }
            None => return Err(bad("missing field 10 (stream-K)")),
        };
        if stream_k.is_some() && splits > 1 {
            return Err(bad("a row cannot both split K and run stream-K"));
        }
        rows.push(BsRow {
            kind,
            groups: u(2)?,
            m: u(3)?,
            n: u(4)?,
            k: u(5)?,
            expected_m: u(6)?,
            cus: u(7)?,
            forcing: BsForcing { tile, splits, stream_k },
            us: x(11)?,
            rule_us: x(12)?,
        });
    }
    Ok(rows)
}

/// The embedded gfx942 bs table (parsed once).
pub fn table() -> Result<&'static [BsRow], ConfigError> {
    static T: OnceLock<Result<Vec<BsRow>, String>> = OnceLock::new();
    T.get_or_init(|| parse(TUNED_GFX942_BS)).as_deref().map_err(|e| ConfigError::Tuned(e.clone()))
}

/// The row of `desc` in `rows`, if any: same kind, shape, groups, `expected_m` and CU count.
pub fn lookup<'a>(rows: &'a [BsRow], desc: &GemmDesc) -> Option<&'a BsRow> {
    rows.iter().find(|r| (r.kind, r.groups, r.m, r.n, r.k, r.expected_m, r.cus) == (desc.kind, desc.groups, desc.m, desc.n, desc.k, desc.expected_m, desc.cus))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rows_and_rejects_malformed_ones() {
        let text = "# comment\nbs,dense,1,64,2112,7168,64,304,32x128,3,-,12.84,14.14,all\n\
                    bs,dense,1,1664,768,7168,1664,304,48x128,1,304/0,30.1,35.3,all\n";
        let rows = parse(text).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].forcing, BsForcing { tile: (32, 128), splits: 3, stream_k: None });
        assert_eq!((rows[0].m, rows[0].n, rows[0].k, rows[0].cus), (64, 2112, 7168, 304));
        assert_eq!(rows[0].us, 12.84);
        assert_eq!(rows[1].forcing, BsForcing { tile: (48, 128), splits: 1, stream_k: Some((304, Some(0))) });
        assert_eq!(rows[1].forcing.to_string(), "48x128 stream-K 304/0");
        for (bad, what) in [
            ("best,dense,1,64,2112,7168,64,304,32x128,3,-,12.84,14.14,x", "unknown record type"),
            ("bs,sparse,1,64,2112,7168,64,304,32x128,3,-,12.84,14.14,x", "unknown kind"),
            ("bs,dense,1,64,2112,7168,64,304,32-128,3,-,12.84,14.14,x", "not a tile"),
            ("bs,dense,1,64,2112,7168,64,304,32x128,0,-,12.84,14.14,x", "at least 1"),
            ("bs,dense,1,64,2112,7168,64,304,32x128,2,304/0,12.84,14.14,x", "both split"),
            ("bs,dense,1,64,2112,7168,64,304,32x128,1,0/0,12.84,14.14,x", "G is not"),
            ("bs,dense,1,64,2112,7168,64,304,32x128,1,-,-1,14.14,x", "field 11"),
            ("bs,dense,1,64,2112,7168,64,304,32x128,1", "missing field 10"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(what) && e.contains("line 1"), "{bad}: {e}");
        }
    }

    fn row(m: u32, n: u32, k: u32, cus: u32, forcing: BsForcing) -> BsRow {
        BsRow { kind: GemmKind::Dense, groups: 1, m, n, k, expected_m: m, cus, forcing, us: 10.0, rule_us: 12.0 }
    }

    fn dense(m: u32, n: u32, k: u32) -> GemmDesc {
        GemmDesc::dense(m, n, k, crate::codeobj::Arch::Gfx942)
    }

    #[test]
    fn a_row_is_replayed_through_the_forced_paths() {
        use super::super::get_bs_config_with_table;
        let split3 = BsForcing { tile: (32, 128), splits: 3, stream_k: None };
        let rows = [row(64, 2112, 7168, 304, split3)];
        let (c, limited) = get_bs_config_with_table(&dense(64, 2112, 7168), u64::MAX, &rows).unwrap();
        assert_eq!((c.kernel, c.splits, c.block_m, c.block_n), ("fp8_gemm_nt_splitk_bs_bm32_bn128", 3, 32, 128));
        assert!(limited.is_none());
        // Another shape, or the same shape on a device with another CU count: the rules.
        let (rule, _) = get_bs_config_with_table(&dense(64, 2112, 7168), u64::MAX, &[]).unwrap();
        let (other, _) = get_bs_config_with_table(&dense(64, 2112, 7168).with_cus(80), u64::MAX, &rows).unwrap();
        let (rule80, _) = get_bs_config_with_table(&dense(64, 2112, 7168).with_cus(80), u64::MAX, &[]).unwrap();
        assert_eq!(other, rule80);
        assert_ne!(rule, c, "the test row must differ from the rules' choice to show it is used");
        // A stream-K row.
        let sk = BsForcing { tile: (32, 128), splits: 1, stream_k: Some((608, Some(0))) };
        let (c, _) = get_bs_config_with_table(&dense(1664, 768, 7168), u64::MAX, &[row(1664, 768, 7168, 304, sk)]).unwrap();
        assert_eq!(c.kernel, "fp8_gemm_nt_streamk_bs_bm32_bn128");
        assert_eq!(c.stream_k.map(|s| (s.sk_wgs, s.dp_tiles, s.tiles)), Some((608, 0, 52 * 6)));
        // A pipelined-only tile.
        let p48 = BsForcing { tile: (48, 128), splits: 1, stream_k: None };
        let (c, _) = get_bs_config_with_table(&dense(1664, 768, 7168), u64::MAX, &[row(1664, 768, 7168, 304, p48)]).unwrap();
        assert_eq!(c.kernel, "fp8_gemm_nt_bs_pipe_bm48_bn128");
    }

    #[test]
    fn a_row_that_needs_more_workspace_falls_back_to_the_rules_and_says_so() {
        use super::super::get_bs_config_with_table;
        let split3 = BsForcing { tile: (32, 128), splits: 3, stream_k: None };
        let rows = [row(64, 2112, 7168, 304, split3)];
        let (c, limited) = get_bs_config_with_table(&dense(64, 2112, 7168), 0, &rows).unwrap();
        assert_eq!((c.splits, c.stream_k, c.workspace_floats()), (1, None, 0));
        let l = limited.expect("the tabled config is reported as preferred");
        assert_eq!((l.preferred.kernel, l.preferred.splits, l.available), ("fp8_gemm_nt_splitk_bs_bm32_bn128", 3, 0));
        assert_eq!(l.needed, l.preferred.workspace_floats());
        assert!(l.needed > 0);
    }

    #[test]
    fn a_row_the_kernels_cannot_honour_is_an_error() {
        use super::super::get_bs_config_with_table;
        for bad in [
            BsForcing { tile: (16, 128), splits: 1, stream_k: None },
            BsForcing { tile: (48, 128), splits: 2, stream_k: None },
            BsForcing { tile: (32, 128), splits: 1, stream_k: Some((1, Some(0))) },
        ] {
            let e = get_bs_config_with_table(&dense(64, 2112, 7168), u64::MAX, &[row(64, 2112, 7168, 304, bad)]).unwrap_err();
            assert!(matches!(&e, ConfigError::Tuned(t) if t.contains("does not resolve") && t.contains("64x2112x7168")), "{bad}: {e}");
        }
    }

    #[test]
    fn forcing_overrides_the_table() {
        use super::super::{force_tile, get_bs_config_with_table};
        let split3 = BsForcing { tile: (32, 128), splits: 3, stream_k: None };
        force_tile(Some((64, 128)));
        let r = get_bs_config_with_table(&dense(64, 2112, 7168), u64::MAX, &[row(64, 2112, 7168, 304, split3)]);
        force_tile(None);
        let (c, _) = r.unwrap();
        assert_eq!((c.block_m, c.splits), (64, 1));
    }

    #[test]
    fn without_table_gives_the_rules_choice_and_restores_the_table() {
        use super::super::{get_bs_config, get_bs_config_with_table};
        use crate::codeobj::Arch;
        // 64×2112×7168 on 304 CUs has a row (32x64 split 4); the rules alone choose otherwise.
        let desc = GemmDesc::dense(64, 2112, 7168, Arch::Gfx942).with_cus(304);
        let row = lookup(table().unwrap(), &desc).expect("the embedded table has a row for 64x2112x7168 on 304 CUs");
        let tabled = get_bs_config(&desc).unwrap();
        assert_eq!((tabled.block_m, tabled.splits), (row.forcing.tile.0, row.forcing.splits));
        let rules = get_bs_config_with_table(&desc, u64::MAX, &[]).unwrap().0;
        assert_ne!(rules, tabled, "the row must differ from the rules' choice for this test to mean anything");
        assert!(!ignored());
        let untabled = without_table(|| {
            assert!(ignored());
            get_bs_config(&desc).unwrap()
        });
        assert_eq!(untabled, rules);
        assert!(!ignored());
        assert_eq!(get_bs_config(&desc).unwrap(), tabled);
        // Restored after a panic inside, too.
        let caught = std::panic::catch_unwind(|| without_table(|| panic!("inside")));
        assert!(caught.is_err());
        assert!(!ignored());
    }

    #[test]
    fn embedded_table_parses_with_dense_rows_only() {
        let rows = table().unwrap();
        assert!(rows.iter().all(|r| r.kind == GemmKind::Dense && r.groups == 1 && r.expected_m == r.m), "{rows:?}");
        assert!(rows.iter().all(|r| r.us <= r.rule_us * (1.0 - TABLE_MIN_GAIN) + 1e-9), "a row must beat the rules by TABLE_MIN_GAIN: {rows:?}");
    }
}
