//! `eval --time-cache FILE`: modelled launch times kept between runs.
//!
//! The timing model is deterministic: a plan launched on a problem on a machine takes the same
//! modelled time every run, whatever the cost model that chose it. Judging a change to the
//! cost model re-times the same candidates over and over (the evaluation's M 7 … 100 rows take
//! about 40 minutes on two cores); with a cache only the plans the new model reaches for the
//! first time are simulated.
//!
//! Each line is `fingerprint,seconds,key`: `key` names the machine, the problem (`GemmDesc`'s
//! `Debug`), the plan (`Plan::label`, which names kernel and schedule) and the masked draw's
//! seed; `fingerprint` hashes what makes the time what it is — the embedded code object of the
//! problem's architecture, the machine's parameters (`Machine`'s `Debug`, after any overrides)
//! and the sources of the emulator and of the launch code (`FP8GEMM_LAUNCH_SOURCE_HASH`, from
//! `build.rs`, which lists what it leaves out: the cost model, which picks the plan, and code no
//! `eval` launch reaches). A plan is named by its label: a change to how a label's plan is
//! built (its grid, its arguments) must change the label or a hashed source. Lines with another fingerprint are ignored (kept in the file, never used):
//! a rebuilt kernel or a changed timing model starts afresh. The cache is appended to as plans
//! are timed, one write per line, so an interrupted run keeps what it measured and runs side by
//! side may share one file (each reads it when it starts). Every time in it is **modelled**.
//!
//! `--import-verbose LOG` reads the candidate lines of an `eval --verbose` log (a dense run on
//! the same machine: the plan line and the timed candidates printed under it, before the
//! shape's row) into the cache under the current fingerprint. The log does not say which build
//! printed it: importing one is the caller's statement that kernels, emulator and launch code
//! are the same as this binary's (e.g. `git log LOG_COMMIT..HEAD -- emu/src host/src
//! host/kernels` shows nothing that changes a launch).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use amdgpu_emu::timing::Machine;
use fp8gemm::codeobj::Arch;
use fp8gemm::config::GemmDesc;
use fp8gemm::select::Plan;

use crate::fnv::{self, fnv1a};

/// The fingerprint of times modelled on `machine` for problems of `arch` (module docs).
pub fn fingerprint(machine: &Machine, arch: Arch) -> String {
    let mut h = fnv1a(fnv::OFFSET, arch.code_object());
    h = fnv1a(h, format!("{machine:?}").as_bytes());
    h = fnv1a(h, env!("FP8GEMM_LAUNCH_SOURCE_HASH").as_bytes());
    format!("{h:016x}")
}

/// The cache (module docs). Without a path it caches nothing and times every plan.
pub struct TimeCache {
    file: Option<(PathBuf, File)>,
    fingerprint: String,
    machine: String,
    times: HashMap<String, f64>,
    /// Plans answered from the cache / simulated, this run.
    pub hits: usize,
    /// See [`TimeCache::hits`].
    pub misses: usize,
}

impl TimeCache {
    /// Opens (creating if needed) the cache at `path` for times modelled on `machine` with
    /// `arch`'s code object; `None` caches nothing.
    pub fn open(path: Option<&Path>, machine: &Machine, arch: Arch) -> Result<Self, String> {
        let fingerprint = fingerprint(machine, arch);
        let mut times = HashMap::new();
        let file = match path {
            None => None,
            Some(p) => {
                if p.exists() {
                    let f = File::open(p).map_err(|e| format!("--time-cache {}: {e}", p.display()))?;
                    for (i, line) in BufReader::new(f).lines().enumerate() {
                        let line = line.map_err(|e| format!("--time-cache {}: line {}: {e}", p.display(), i + 1))?;
                        if line.starts_with('#') || line.trim().is_empty() {
                            continue;
                        }
                        let mut parts = line.splitn(3, ',');
                        let (Some(fp), Some(s), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
                            return Err(format!("--time-cache {}: line {} is not `fingerprint,seconds,key`", p.display(), i + 1));
                        };
                        if fp != fingerprint {
                            continue;
                        }
                        let s: f64 = s.parse().map_err(|_| format!("--time-cache {}: line {}: `{s}` is not a number of seconds", p.display(), i + 1))?;
                        times.insert(key.to_string(), s);
                    }
                }
                let new = !p.exists();
                let mut f = OpenOptions::new().create(true).append(true).open(p).map_err(|e| format!("--time-cache {}: {e}", p.display()))?;
                if new {
                    writeln!(f, "# fp8gemm eval --time-cache: fingerprint,seconds MODELLED by the timing model,key (machine|problem|plan|masked seed)")
                        .map_err(|e| format!("--time-cache {}: {e}", p.display()))?;
                }
                Some((p.to_path_buf(), f))
            }
        };
        Ok(TimeCache { file, fingerprint, machine: machine.name.to_string(), times, hits: 0, misses: 0 })
    }

    /// Prints how many plans the cache answered and how many were simulated (nothing without
    /// a file).
    pub fn print_use(&self) {
        if self.file.is_some() {
            println!("time cache: {} plans answered from it, {} simulated", self.hits, self.misses);
        }
    }

    fn key(&self, desc: &GemmDesc, label: &str, seed: Option<u64>) -> String {
        format!("{}|{desc:?}|{label}|{seed:?}", self.machine)
    }

    /// Stores a modelled time (and appends it to the file).
    fn insert(&mut self, key: String, seconds: f64) -> Result<(), String> {
        if let Some((p, f)) = &mut self.file {
            // One write per line: runs sharing the file append whole lines (O_APPEND).
            let line = format!("{},{seconds:e},{key}\n", self.fingerprint);
            f.write_all(line.as_bytes()).map_err(|e| format!("--time-cache {}: {e}", p.display()))?;
        }
        self.times.insert(key, seconds);
        Ok(())
    }

    /// The modelled seconds of `plan` on `desc` (masked counts from `seed`): from the cache,
    /// or `time()` stored in it.
    pub fn time(&mut self, desc: &GemmDesc, plan: &Plan, seed: Option<u64>, time: impl FnOnce() -> Result<f64, String>) -> Result<f64, String> {
        if self.file.is_none() {
            return time();
        }
        let key = self.key(desc, &plan.label(), seed);
        if let Some(&s) = self.times.get(&key) {
            self.hits += 1;
            return Ok(s);
        }
        let s = time()?;
        self.misses += 1;
        self.insert(key, s)?;
        Ok(s)
    }

    /// Reads an `eval --verbose` log of dense shapes (module docs) into the cache; `desc_of`
    /// gives the problem of a row's `M N K`. Returns the number of times imported.
    pub fn import_verbose(&mut self, log: &Path, desc_of: impl Fn(u32, u32, u32) -> GemmDesc) -> Result<usize, String> {
        if self.file.is_none() {
            return Err("--import-verbose needs --time-cache".into());
        }
        let text = std::fs::read_to_string(log).map_err(|e| format!("--import-verbose {}: {e}", log.display()))?;
        let mut pending: Vec<(String, f64)> = Vec::new();
        let mut imported = 0;
        for (i, line) in text.lines().enumerate() {
            let at = || format!("--import-verbose {}: line {}", log.display(), i + 1);
            let t = line.trim_start();
            if let Some(pos) = t.find(" estimate ").filter(|_| line.starts_with("    ")) {
                // `plan LABEL estimate … µs, modelled T µs` or `LABEL estimate …, modelled T µs`.
                let label = t[..pos].trim().trim_start_matches("plan ").trim().to_string();
                let Some(m) = t.split("modelled").nth(1) else { return Err(format!("{}: no modelled time", at())) };
                let us: f64 = m.trim().trim_end_matches("µs").trim().parse().map_err(|_| format!("{}: `{m}` is not a time", at()))?;
                pending.push((label, us * 1e-6));
                continue;
            }
            // A shape's row: `M N K source …`; its candidates were the lines just above.
            let mut w = t.split_whitespace();
            let dims: Vec<u32> = w.by_ref().take(3).filter_map(|x| x.parse().ok()).collect();
            if let [m, n, k] = dims[..] {
                if !pending.is_empty() {
                    let desc = desc_of(m, n, k);
                    for (label, s) in pending.drain(..) {
                        let key = self.key(&desc, &label, None);
                        if !self.times.contains_key(&key) {
                            self.insert(key, s)?;
                            imported += 1;
                        }
                    }
                }
            } else {
                pending.clear();
            }
        }
        Ok(imported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fp8gemm::WeightLayout;
    use fp8gemm::config::Overrides;

    fn plan_of(desc: &GemmDesc) -> Plan {
        fp8gemm::select::plan(desc, WeightLayout::Preshuffled, &Overrides::NONE, u64::MAX).expect("a plan").0
    }

    #[test]
    fn a_plan_is_timed_once_kept_across_runs_and_never_reused_by_another_build() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("times.csv");
        let machine = Machine::MI325X;
        let desc = GemmDesc::dense(100, 2304, 16384, Arch::Gfx942);
        let plan = plan_of(&desc);
        let mut cache = TimeCache::open(Some(&path), &machine, Arch::Gfx942).expect("opens");
        let mut calls = 0;
        let mut time = |s: f64| {
            calls += 1;
            move || Ok::<f64, String>(s)
        };
        assert_eq!(cache.time(&desc, &plan, None, time(21.29e-6)).unwrap(), 21.29e-6);
        // The same plan again: from the cache (the closure's time is not taken).
        assert_eq!(cache.time(&desc, &plan, None, || Err("simulated again".into())).unwrap(), 21.29e-6);
        // Another masked draw or another problem is another key.
        assert_eq!(cache.time(&desc, &plan, Some(3), time(1.0)).unwrap(), 1.0);
        let other = GemmDesc::dense(116, 2304, 16384, Arch::Gfx942);
        assert_eq!(cache.time(&other, &plan, None, time(2.0)).unwrap(), 2.0);
        assert_eq!((calls, cache.hits, cache.misses), (3, 1, 3));
        drop(cache);

        // A second run reads what the first appended.
        let mut again = TimeCache::open(Some(&path), &machine, Arch::Gfx942).unwrap();
        assert_eq!(again.time(&desc, &plan, None, || Err("not cached".into())).unwrap(), 21.29e-6);
        assert_eq!(again.time(&desc, &plan, Some(3), || Err("not cached".into())).unwrap(), 1.0);
        drop(again);

        // Another machine (its parameters are in the fingerprint) finds nothing.
        let mut other_machine = TimeCache::open(Some(&path), &Machine::MI300X, Arch::Gfx942).unwrap();
        assert_eq!(other_machine.time(&desc, &plan, None, || Ok(5.0)).unwrap(), 5.0);
        assert_ne!(fingerprint(&Machine::MI325X, Arch::Gfx942), fingerprint(&Machine::MI300X, Arch::Gfx942));
        assert_ne!(fingerprint(&Machine::MI325X, Arch::Gfx942), fingerprint(&Machine::MI325X, Arch::Gfx950));

        // Without a file nothing is kept.
        let mut none = TimeCache::open(None, &machine, Arch::Gfx942).unwrap();
        assert_eq!(none.time(&desc, &plan, None, || Ok(7.0)).unwrap(), 7.0);
        assert_eq!(none.time(&desc, &plan, None, || Ok(8.0)).unwrap(), 8.0);

        // A line that is not `fingerprint,seconds,key` is an error naming the file and line.
        std::fs::write(&path, "# header\nnot a line\n").unwrap();
        let err = TimeCache::open(Some(&path), &machine, Arch::Gfx942).err().expect("a bad line");
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn a_verbose_log_imports_the_candidates_printed_above_each_shape() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (path, log) = (dir.path().join("times.csv"), dir.path().join("eval.txt"));
        std::fs::write(
            &log,
            "fp8gemm eval on mi325x (pre-shuffled weights): …\n\
             \x20    M      N      K source                       plan                         plan µs best                         best µs  regret  timed      M+16\n\
             \x20   plan bs 64x128 pipe split 6           estimate     18.36 µs, modelled     21.29 µs\n\
             \x20        bs 32x128 pipe split 4           estimate     18.98 µs, modelled     19.33 µs\n\
             \x20  100   2304  16384 Llama-3.1-405B qkv TP8       bs 64x128 pipe split 6         21.29 bs 32x128 pipe split 4         19.33   10.2%  15/62     1.023   [1588 s]\n\
             summary (modelled): 1 shapes\n",
        )
        .unwrap();
        let machine = Machine::MI325X;
        let mut cache = TimeCache::open(Some(&path), &machine, Arch::Gfx942).unwrap();
        let desc_of = |m, n, k| GemmDesc::dense(m, n, k, Arch::Gfx942);
        assert_eq!(cache.import_verbose(&log, desc_of).unwrap(), 2);
        // Imported once: a second import adds nothing.
        assert_eq!(cache.import_verbose(&log, desc_of).unwrap(), 0);
        let desc = desc_of(100, 2304, 16384);
        let times: Vec<(String, f64)> = cache.times.iter().map(|(k, &v)| (k.clone(), v)).collect();
        assert_eq!(times.len(), 2);
        for (label, us) in [("bs 64x128 pipe split 6", 21.29), ("bs 32x128 pipe split 4", 19.33)] {
            let key = cache.key(&desc, label, None);
            assert!((cache.times[&key] - us * 1e-6).abs() < 1e-12, "{key}: {:?}", cache.times.get(&key));
        }
        // Without a file there is nowhere to import to.
        let mut none = TimeCache::open(None, &machine, Arch::Gfx942).unwrap();
        assert!(none.import_verbose(&log, desc_of).is_err());
    }
}
