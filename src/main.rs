//! `fp8gemm`: inspect the embedded GPU kernels and run the GEMMs (on the bundled gfx942 emulator
//! by default, on a real GPU with `--features rocm`).

use std::process::ExitCode;

mod compare;
mod env;
mod eval;
mod fit;
mod fnv;
mod gemm;
mod grouped;
mod kgrouped;
mod operands;
mod profile;
mod time_cache;
mod tune_cost;
mod validate;

use clap::{Parser, Subcommand};
use fp8gemm::codeobj::{self, Arch};

#[derive(Parser)]
#[command(name = "fp8gemm", version, about = "DeepGEMM-style FP8 GEMMs for AMD Instinct GPUs, kernels written in Rust")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The hardware validation kit: every dense and m-grouped kernel the library selects (with `--all-tiles`,
    /// every tile forced) at a set of shapes on the present backend, each result checked
    /// against the CPU reference, each launch timed as AMD's tuner times kernels (warm-up,
    /// operands rotated through copies so caches are cold, events around each launch, outliers
    /// dropped), written to one CSV (and SVG) of measured vs modelled time. On the emulator the
    /// "measured" column is the timing model, labelled so. Exits non-zero if any result is wrong.
    Validate {
        /// Shape set.
        #[arg(long, value_enum, default_value = "small")]
        set: validate::ValidateSet,
        /// Explicit shapes instead of a set: `MxNxK[,MxNxK…]`.
        #[arg(long)]
        shapes: Option<String>,
        /// Directory with `measured_mi325x.csv` for `--set peers` (default `$FP8GEMM_PEERS_DIR`).
        #[arg(long)]
        peers: Option<std::path::PathBuf>,
        /// Weight layouts.
        #[arg(long, value_enum, default_value = "both")]
        layout: validate::LayoutArg,
        /// Also force every registered tile (not only the selector's choice).
        #[arg(long)]
        all_tiles: bool,
        /// Untimed launches before timing.
        #[arg(long, default_value_t = 10)]
        warmup: u32,
        /// Timed launches per kernel and shape (hardware).
        #[arg(long, default_value_t = 101)]
        iters: u32,
        /// Timing-model machine of the modelled column.
        #[arg(long, default_value = "mi300x")]
        machine: String,
        /// Largest calc_diff against the dequantized CPU reference that counts as correct.
        #[arg(long, default_value_t = 1e-5)]
        max_diff: f64,
        /// Where to write the CSV.
        #[arg(long, default_value = "validate.csv")]
        csv: std::path::PathBuf,
        /// Where to write the SVG plot (measured vs modelled).
        #[arg(long)]
        plot: Option<std::path::PathBuf>,
        /// Seed of the random operands.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Print the resource table (registers, spills, scratch, LDS, launch bound, occupancy) of
    /// every embedded kernel.
    Info {
        /// Only this architecture (gfx942, gfx950).
        #[arg(long)]
        arch: Option<String>,
    },
    /// Run one dense FP8 GEMM on random data (DeepGEMM's test recipe: normal BF16 inputs,
    /// 1×128 / 128×128 quantization) and compare it with the CPU references.
    Gemm {
        /// Rows of A and D.
        #[arg(long)]
        m: usize,
        /// Rows of B, columns of D.
        #[arg(long)]
        n: usize,
        /// Reduction length.
        #[arg(long)]
        k: usize,
        /// Random seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Run one m-grouped FP8 GEMM (DeepGEMM's MoE entry points) on random data and compare it
    /// with the CPU references over the rows it defines.
    Grouped {
        /// `contiguous` (stacked rows, m_indices) or `masked` (G × m_max rows, masked_m).
        #[arg(long, value_enum)]
        layout: grouped::Layout,
        /// Number of groups (experts).
        #[arg(long)]
        groups: usize,
        /// Rows per group: the centre of the uneven contiguous sizes (each padded to 128), or
        /// the masked layout's expected_m (m_max = ⌈1.3·M⌉).
        #[arg(long)]
        m: usize,
        /// Rows of each group's B, columns of D.
        #[arg(long)]
        n: usize,
        /// Reduction length.
        #[arg(long)]
        k: usize,
        /// Random seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Run one K-grouped FP8 GEMM (DeepGEMM's `k_grouped_fp8_gemm_tn_contiguous`, the MoE weight
    /// gradient, accumulating into C in place) on random data and compare it with the CPU
    /// references.
    Kgrouped {
        /// Number of groups (experts).
        #[arg(long)]
        groups: usize,
        /// Columns of A, rows of every D[g] (a multiple of 8).
        #[arg(long)]
        m: usize,
        /// Columns of B and of every D[g] (a multiple of 8).
        #[arg(long)]
        n: usize,
        /// Tokens per group: the centre of the uneven group sizes (×0.7 … ×1.3, rounded up to
        /// multiples of 128).
        #[arg(long)]
        k: usize,
        /// Every group exactly `k` tokens (a multiple of 128) instead of uneven sizes.
        #[arg(long)]
        uniform: bool,
        /// Random seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Time repeated dense FP8 GEMM launches (real GPU time with `--features rocm`; on the
    /// emulator this measures the emulator, and says so).
    Bench {
        /// Rows of A and D.
        #[arg(long)]
        m: usize,
        /// Rows of B, columns of D.
        #[arg(long)]
        n: usize,
        /// Reduction length.
        #[arg(long)]
        k: usize,
        /// Timed launches (after one warm-up launch).
        #[arg(long, default_value_t = 10)]
        iters: u32,
    },
    /// Model the time of one dense, m-grouped or K-grouped GEMM on an MI300X/MI325X with the emulator's
    /// cycle-level timing model (every figure printed is modelled, not measured): time,
    /// TFLOPS, HBM traffic, pipe busy %, stall breakdown and the most stalled instructions.
    /// m-grouped: `--layout contiguous|masked --groups G` (`--m` = rows per group).
    /// Environment: `FP8GEMM_PRESHUFFLED=1` puts B in the pre-shuffled layout (dense and
    /// m-grouped: the bs kernels); `FP8GEMM_FORCE_TILE=BMxBN` forces a tile;
    /// `FP8GEMM_PRINT_CONFIGS=1` prints the chosen config.
    Profile {
        /// Rows of A and D (grouped: rows per group, as for `grouped`).
        #[arg(long)]
        m: usize,
        /// Rows of B, columns of D.
        #[arg(long)]
        n: usize,
        /// Reduction length.
        #[arg(long)]
        k: usize,
        /// An m-grouped layout instead of the dense GEMM.
        #[arg(long, value_enum)]
        layout: Option<grouped::Layout>,
        /// Groups (with --layout or --kgrouped).
        #[arg(long, default_value_t = 1)]
        groups: usize,
        /// The K-grouped GEMM (`k_grouped_fp8_gemm_tn_contiguous`) instead: `--groups` groups of
        /// exactly `--k` tokens each, `D[g] = C[g] + A_gᵀ·B_g` with A `[G·k, m]`, B `[G·k, n]`.
        #[arg(long, conflicts_with = "layout")]
        kgrouped: bool,
        /// Machine: mi300x, mi325x, or `env` for $AMDGPU_EMU_MACHINE.
        #[arg(long, default_value = "mi300x")]
        machine: String,
        /// Simulate all XCDs (`full`) or XCD 0's share (`xcd`, 8× cheaper).
        #[arg(long, value_enum, default_value = "full")]
        scope: profile::ScopeArg,
        /// Compute MFMA results in the functional run (slower; the timing is the same for our
        /// kernels, whose control flow does not depend on them).
        #[arg(long)]
        full_math: bool,
        /// Print the issue cycle of every instruction of this workgroup's first wave (a
        /// simulated workgroup: with `--scope xcd`, a multiple of 8), to find the instructions
        /// that keep the MFMA pipe idle.
        #[arg(long)]
        trace_workgroup: Option<u64>,
        /// Random seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Validate the timing model against measured hardware times: run AMD's asm kernels (the
    /// peers directory) at every row of its `measured_*.csv` files on the emulator, each on the
    /// machine of the chip its file names (`measured_mi325x.csv` → mi325x, `measured_mi355x.csv`
    /// → mi355x with the gfx950 builds), and print modelled vs measured per row, then per kernel
    /// family and chip the median and worst |error| and the median signed error. With `--moe`,
    /// also model AMD's MoE kernels at every configuration of `shapes_fmoe_*.csv` (no times:
    /// predictions only).
    Calibrate {
        /// The peers directory (default: $FP8GEMM_PEERS_DIR).
        #[arg(long)]
        peers: Option<std::path::PathBuf>,
        /// Time every given row on this machine instead of its file's chip (mi300x, mi325x,
        /// mi308x, mi355x, env).
        #[arg(long)]
        machine: Option<String>,
        /// Only these measurement files (names in the peers directory or paths, comma-separated);
        /// every `measured_*.csv` of the peers directory when omitted.
        #[arg(long, value_delimiter = ',')]
        files: Vec<String>,
        /// Simulate all XCDs (`full`) or XCD 0's share (`xcd`, 8× cheaper).
        #[arg(long, value_enum, default_value = "full")]
        scope: profile::ScopeArg,
        /// Only these rows (0-based data rows, comma-separated): `N` selects row N of every
        /// file, `FILE:N` row N of that file (e.g. `measured_mi355x.csv:3`); all rows when
        /// omitted.
        #[arg(long, value_delimiter = ',')]
        rows: Vec<String>,
        /// Print each row's full timing report.
        #[arg(long)]
        verbose: bool,
        /// Also write every row run to this CSV (file, kernel, M, N, K, measured and modelled
        /// µs, signed error, machine, scope, family, note; shape-only rows have no measured µs),
        /// for joining with other measurements.
        #[arg(long)]
        csv: Option<std::path::PathBuf>,
        /// Fit the machine's *fitted* parameters jointly over every measured row `--files` and
        /// `--rows` select (each on its chip's machine), each traced once and replayed over a
        /// grid inside the parameters' ranges; prints per-family/chip errors and
        /// leave-one-(N,K)-out cross-validation.
        #[arg(long)]
        fit: bool,
        /// With `--fit`: the replayed grid, `FIELD=LO:HI:STEP` per machine field (repeatable;
        /// the cartesian product is replayed); the fitted parameters' own grid when omitted.
        /// `AMDGPU_EMU_MACHINE_OVERRIDES` applies to every row's machine under the grid.
        #[arg(long)]
        grid: Vec<String>,
        /// With `--fit`: leave out rows with M above this (their launches are the slowest to
        /// trace).
        #[arg(long)]
        max_m: Option<u32>,
        /// Also model the MoE kernels at the configurations of `shapes_fmoe_stage1.csv` and
        /// `shapes_fmoe_1stage.csv` (predictions: no measured times).
        #[arg(long)]
        moe: bool,
        /// Only the MoE configurations, no given rows (implies --moe).
        #[arg(long)]
        moe_only: bool,
        /// Only these MoE rows (0-based over stage 1's file then the 1-stage file).
        #[arg(long, value_delimiter = ',')]
        moe_rows: Vec<usize>,
        /// Divide each MoE configuration's tokens, dimensions and experts by this (1 = as AMD
        /// timed it); a scaled row is labelled SCALED in the output and the CSV.
        #[arg(long, default_value_t = 1)]
        moe_div: u32,
        /// Machine of the MoE predictions (AMD timed them on a 304-CU gfx942: MI325X).
        #[arg(long, default_value = "mi325x")]
        moe_machine: String,
        /// Compute MFMA results (slower; the default skips them, which leaves every peer's
        /// modelled timing unchanged: `emu/tests/peers_timing.rs`).
        #[arg(long)]
        full_math: bool,
    },
    /// Write the selector's cost model (`host/tuned/<arch>.<machine>.cost.csv`) from the timing
    /// model: every registered dense kernel (and every plain m-grouped contiguous split-K kernel, on
    /// random grouped problems) timed on `--samples` random shapes on `--machine`
    /// (a gfx950 machine runs the gfx950 code object on an emulated gfx950 device), coefficients
    /// fitted (`fp8gemm::select`); all figures modelled, not measured.
    Tune(TuneCli),
    /// Judge the kernel selector on shapes it was never tuned on (public model configurations,
    /// M from 1 to 32768): the chosen plan's modelled time against every candidate's, the
    /// regret, and a cliff check at M + 16. Every time is modelled by the timing model.
    Eval {
        /// Timing-model machine.
        #[arg(long, default_value = "mi325x")]
        machine: String,
        /// Weight layout of the problems.
        #[arg(long, value_enum, default_value = "preshuffled")]
        layout: validate::LayoutArg,
        /// Time each kernel's best-estimated schedule only if its estimate is within this factor
        /// of the plan's.
        #[arg(long, default_value_t = 3.0)]
        prune: f64,
        /// Skip shapes with more 64x128 tile-blocks than this (simulation time).
        #[arg(long, default_value_t = 150_000)]
        max_blocks: u64,
        /// Only these (N, K) pairs (indices into the evaluation set, comma-separated).
        #[arg(long, value_delimiter = ',')]
        pairs: Vec<usize>,
        /// Only these M values (comma-separated) instead of the set's.
        #[arg(long, value_delimiter = ',')]
        ms: Vec<u32>,
        /// Write the rows to this CSV.
        #[arg(long)]
        csv: Option<std::path::PathBuf>,
        /// Write an SVG plot of modelled TFLOPS vs M.
        #[arg(long)]
        plot: Option<std::path::PathBuf>,
        /// Skip the M + 16 cliff check.
        #[arg(long)]
        no_cliff: bool,
        /// Explicit shapes instead of the set: `MxNxK[,MxNxK…]` (not the evaluation set: for
        /// looking into one choice).
        #[arg(long, value_delimiter = ',')]
        shapes: Vec<String>,
        /// Print every timed candidate's estimate and modelled time.
        #[arg(long)]
        verbose: bool,
        /// Only print every candidate's estimate, ranked (nothing is timed).
        #[arg(long)]
        estimates: bool,
        /// The m-grouped evaluation set (masked and contiguous at MoE expert shapes) instead
        /// of the dense one.
        #[arg(long)]
        grouped: bool,
        /// With --grouped: draw the masked groups' row counts as DeepGEMM's tests do
        /// (`expected_m · U[0.7, 1.3)`, independent) from these seeds (comma-separated, or a
        /// range `A-B`), instead of the even low-discrepancy spread: every candidate is timed
        /// on each draw and judged by its mean time; only the masked layouts are then evaluated.
        #[arg(long, value_parser = parse_seeds)]
        masked_seed: Option<Seeds>,
        /// With --grouped: only the shapes with these group counts (comma-separated).
        #[arg(long, value_delimiter = ',')]
        groups: Vec<u32>,
        /// Keep modelled times in this file between runs: a plan timed before on the same
        /// problem, machine, code object, emulator and launch code is not simulated again
        /// (the cost model that chose it does not matter). Lines of other builds are ignored.
        #[arg(long)]
        time_cache: Option<std::path::PathBuf>,
        /// With --time-cache: first read the timed candidates of these `eval --verbose` logs
        /// (dense, same machine) into the cache, as times of this build — only for logs printed
        /// by a build whose kernels, emulator and launch code are this one's.
        #[arg(long, value_delimiter = ',', requires = "time_cache")]
        import_verbose: Vec<std::path::PathBuf>,
    },
    /// Our kernels (as the library chooses them), *modelled* by the timing model, beside other
    /// implementations' numbers: AMD's asm kernels measured on MI325X (`peers`), AITER's CK
    /// numbers for DeepSeek-V3's dense shapes on MI300X (`deepseek`), and DeepGEMM's m-grouped
    /// benchmark shapes (`grouped`). Prints a table with ratios and the goals; writes
    /// a CSV and an SVG plot of TFLOPS vs M on request.
    Compare {
        /// Which comparison.
        #[arg(long, value_enum, default_value = "all")]
        set: compare::Set,
        /// The peers directory holding `measured_mi325x.csv` (default: $FP8GEMM_PEERS_DIR).
        #[arg(long)]
        peers: Option<std::path::PathBuf>,
        /// Simulation scope: `auto` simulates grids of ≤ 4 workgroups per CU on all XCDs and
        /// larger ones on XCD 0's share.
        #[arg(long, value_enum, default_value = "auto")]
        scope: compare::CompareScope,
        /// Skip dense shapes with more rows than this (a quicker look).
        #[arg(long)]
        max_m: Option<usize>,
        /// Also write the rows to this CSV file.
        #[arg(long)]
        csv: Option<std::path::PathBuf>,
        /// Also write an SVG plot of TFLOPS vs M (dense rows) to this file.
        #[arg(long)]
        plot: Option<std::path::PathBuf>,
    },
    /// Disassemble embedded kernels with the emulator's decoder (LLVM syntax).
    Disasm {
        /// Kernel symbol; all kernels when omitted.
        kernel: Option<String>,
        /// Architecture of the code object to read.
        #[arg(long, default_value = "gfx942")]
        arch: String,
    },
}

/// The options of `fp8gemm tune` ([`Command::Tune`]).
#[derive(clap::Args)]
struct TuneCli {
    /// Machine: mi300x, mi325x, mi308x, mi355x (the shipped files: mi325x for gfx942, mi355x
    /// for gfx950).
    #[arg(long, default_value = "mi325x")]
    machine: String,
    /// Write the cost model here (e.g. host/tuned/gfx942.mi325x.cost.csv); print it when
    /// omitted.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Accepted for older scripts: `tune` writes the cost model (the per-tile table it once
    /// wrote without this flag is retired; no choice read it).
    #[arg(long)]
    cost: bool,
    /// With `--cost`: random shapes per kernel.
    #[arg(long, default_value_t = 16)]
    samples: usize,
    /// With `--cost`: redraw shapes with more tiles × K blocks than this (simulation time).
    #[arg(long, default_value_t = 40_000)]
    max_blocks: u64,
    /// With `--cost`: also write every timed sample here (refit later with --from-samples).
    #[arg(long)]
    samples_out: Option<std::path::PathBuf>,
    /// With `--cost`: fit from these sample files (comma-separated) instead of timing.
    #[arg(long, value_delimiter = ',')]
    from_samples: Option<Vec<std::path::PathBuf>>,
    /// With `--from-samples`: time every sample's launch again (same kernel, shape and
    /// schedule) on the current timing model and code objects, instead of reusing the
    /// files' times: regenerates the cost model on the same shapes after a kernel or model
    /// change (`--samples-out` gets the new times).
    #[arg(long, requires = "from_samples")]
    retime: bool,
    /// With `--cost`: the contiguous split-K kernels' draws end each group in padding rows
    /// (marked −1, their stores skipped, as the MoE layer's) wherever the routed rows are
    /// not a whole number of tiles; the sample rows record the routed rows (`stored`).
    #[arg(long)]
    padded: bool,
    /// With `--cost`: seed of the shape draws (another seed, another sample).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// With `--cost`: the range of K blocks (K / 128) the draws take, log-uniform: `LO,HI`.
    #[arg(long, value_delimiter = ',', default_values_t = [2, 64])]
    k_blocks: Vec<u32>,
    /// With `--cost`: judge the fit out of sample: `k=V` fits on the samples with K below V
    /// and reports (and writes) the fit with its error on those with K ≥ V, `n=V` the same
    /// by N, `m=V` by M (the split is by shape family, decided before fitting).
    #[arg(long)]
    judge: Option<String>,
    /// With `--from-samples`: judge the shipped cost model on the samples instead of fitting
    /// one (nothing is written but the report and `--residuals`).
    #[arg(long, requires = "from_samples", conflicts_with_all = ["judge", "out"])]
    shipped: bool,
    /// Instead of fitting: launch every dense split-K kernel (`--only` filters them) on one
    /// round of the device at split counts 2 … 12 and print each launch's finisher chain as
    /// the timing model runs it (cycles from the end of a tile's other pieces to the end of
    /// its last), the figure the cost model's reduction tail stands for.
    /// (`--chains` alone: splits 2, 3, 4, 6, 8, 12; or the comma-separated counts given.)
    #[arg(long, num_args = 0.., value_delimiter = ',', conflicts_with_all = ["from_samples", "out", "judge", "shipped"])]
    chains: Option<Vec<u32>>,
    /// With `--cost`: the split-K kernels' finisher chains as `tune --chains` printed them
    /// (this machine's section of FILE): each listed kernel's reduction tail becomes the line
    /// through its measured chains (`chain_fixed + tail · splits` cycles), taken off its split
    /// samples' times instead of being fitted.
    #[arg(long, conflicts_with_all = ["chains", "shipped"])]
    chain_lines: Option<std::path::PathBuf>,
    /// With `--chains`: row tiles per launch (1: every piece streams its own B; 2 or more:
    /// the row tiles share each B tile through the L2).
    #[arg(long, default_value_t = 1, requires = "chains", value_parser = clap::value_parser!(u32).range(1..=64))]
    chain_rows: u32,
    /// Write every sample's modelled time, estimate and signed error here (CSV): the fitted
    /// model's (the judged side's too with `--judge`), or the shipped one's with `--shipped`.
    #[arg(long)]
    residuals: Option<std::path::PathBuf>,
    /// With `--cost`: only kernels whose symbol contains one of these (comma-separated; new
    /// registry rows, or kernels whose samples changed), sampled or read from the sample
    /// files, fitted at the shipped model's bandwidth and merged into it.
    #[arg(long)]
    only: Option<String>,
    /// With `--cost`: leave out the kernels whose symbol contains one of these (comma-separated),
    /// sampled or read from the sample files: they keep no coefficients of their own and are
    /// estimated with their stand-ins (gfx942's full refit leaves out the masked kernels,
    /// `--skip masked_bm,masked_bs`, whose own coefficients chose worse than the dense stand-ins).
    #[arg(long)]
    skip: Option<String>,
    /// With `--only`: fit those kernels one HBM rate and memory fill of their own (a grid, the
    /// least mean |log error| over their samples) instead of the shipped model's figures; the
    /// other kernels keep the machine's. For a family used only in launches of its own shape
    /// (the MoE layer's contiguous split-K kernels).
    #[arg(long, requires = "only")]
    own_memory: bool,
}

impl TuneCli {
    /// The tuner's arguments, `--k-blocks`, `--judge` and `--chains` checked.
    fn into_cost_args(self) -> Result<tune_cost::CostArgs, String> {
        let k_blocks = match self.k_blocks[..] {
            [lo, hi] if 1 <= lo && lo <= hi => (lo, hi),
            _ => return Err(format!("--k-blocks: expected LO,HI with 1 ≤ LO ≤ HI, got {:?}", self.k_blocks)),
        };
        let judge = self.judge.map(|j| tune_cost::Judge::parse(&j)).transpose()?;
        Ok(tune_cost::CostArgs {
            machine: self.machine,
            samples: self.samples,
            max_blocks: self.max_blocks,
            out: self.out,
            samples_out: self.samples_out,
            from_samples: self.from_samples,
            retime: self.retime,
            padded: self.padded,
            only: self.only,
            skip: self.skip,
            own_memory: self.own_memory,
            seed: self.seed,
            k_blocks,
            judge,
            shipped: self.shipped,
            residuals: self.residuals,
            chains: self.chains,
            chain_lines: self.chain_lines,
            chain_rows: self.chain_rows,
        })
    }
}

fn parse_arch(name: &str) -> Result<Arch, String> {
    Arch::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Arch::ALL.iter().map(|a| a.name()).collect();
        format!("unknown architecture `{name}`; expected one of {}", known.join(", "))
    })
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Info { arch } => {
            let archs = match arch {
                Some(a) => vec![parse_arch(&a)?],
                None => Arch::ALL.to_vec(),
            };
            let mut rows = Vec::new();
            for a in archs {
                rows.extend(codeobj::inspect(a.code_object()).map_err(|e| format!("{a}: {e}"))?);
            }
            print!("{}", codeobj::format_table(&rows));
            Ok(())
        }
        Command::Gemm { m, n, k, seed } => {
            check_dense_sizes(m, n, k)?;
            gemm::run_dense(m, n, k, seed)
        }
        Command::Grouped { layout, groups, m, n, k, seed } => {
            check_grouped_sizes(groups, m, n, k)?;
            grouped::run_grouped(layout, groups, m, n, k, seed)
        }
        Command::Kgrouped { groups, m, n, k, uniform, seed } => {
            check_kgrouped_sizes(groups, m, n, k)?;
            kgrouped::run_kgrouped(groups, m, n, k, uniform, seed)
        }
        Command::Bench { m, n, k, iters } => {
            check_dense_sizes(m, n, k)?;
            gemm::bench_dense(m, n, k, iters)
        }
        Command::Tune(t) => tune_cost::run(t.into_cost_args()?),
        Command::Eval {
            machine,
            layout,
            prune,
            max_blocks,
            pairs,
            ms,
            csv,
            plot,
            no_cliff,
            shapes,
            verbose,
            estimates,
            grouped,
            masked_seed,
            groups,
            time_cache,
            import_verbose,
        } => {
            let shapes = shapes
                .iter()
                .map(|s| {
                    let d: Vec<u32> = s.split('x').filter_map(|x| x.parse().ok()).collect();
                    match d[..] {
                        [m, n, k] => Ok((m, n, k)),
                        _ => Err(format!("--shapes: `{s}` is not MxNxK")),
                    }
                })
                .collect::<Result<Vec<_>, String>>()?;
            let layout = match layout {
                validate::LayoutArg::Logical => fp8gemm::WeightLayout::Logical,
                validate::LayoutArg::Preshuffled => fp8gemm::WeightLayout::Preshuffled,
                validate::LayoutArg::Both => return Err("eval: --layout logical or preshuffled".into()),
            };
            if grouped {
                let seeds = masked_seed.map(|s| s.0).unwrap_or_default();
                if !import_verbose.is_empty() {
                    return Err("eval --grouped: --import-verbose reads dense logs only".into());
                }
                return eval::run_grouped(&machine, layout, csv.as_deref(), verbose, estimates, &seeds, &groups, time_cache.as_deref());
            }
            eval::run(eval::EvalArgs {
                machine,
                layout,
                prune,
                max_blocks,
                pairs,
                ms,
                csv,
                plot,
                no_cliff,
                shapes,
                verbose,
                estimates,
                time_cache,
                import_verbose,
            })
        }
        Command::Compare { set, peers, scope, max_m, csv, plot } => compare::run(set, peers, scope, max_m, csv, plot),
        Command::Calibrate { peers, machine, files, scope, rows, verbose, csv, moe, moe_only, moe_rows, moe_div, moe_machine, full_math, fit, max_m, grid } => {
            if fit {
                if machine.is_some() || moe || moe_only || full_math {
                    return Err(
                        "--fit fits every row on its own chip's machine, with MFMA math skipped; --machine, --moe, --moe-only and --full-math do not apply"
                            .into(),
                    );
                }
                return profile::fit(peers, &files, scope, &rows, max_m, csv.as_deref(), &grid);
            }
            profile::calibrate(profile::CalibrateArgs {
                peers,
                machine,
                files,
                scope,
                rows,
                verbose,
                csv,
                moe: moe || moe_only,
                moe_only,
                moe_rows,
                moe_div,
                moe_machine,
                full_math,
            })
        }
        Command::Profile { m, n, k, layout, groups, kgrouped, machine, scope, full_math, trace_workgroup, seed } => {
            match layout {
                None if kgrouped => check_kgrouped_sizes(groups, m, n, k)?,
                None => check_dense_sizes(m, n, k)?,
                Some(_) => check_grouped_sizes(groups, m, n, k)?,
            }
            profile::enable(&machine, scope, full_math, trace_workgroup)?;
            match layout {
                None if kgrouped => kgrouped::run_kgrouped(groups, m, n, k, true, seed),
                None => gemm::run_dense(m, n, k, seed),
                Some(l) => grouped::run_grouped(l, groups, m, n, k, seed),
            }
        }
        Command::Validate { set, shapes, peers, layout, all_tiles, warmup, iters, machine, max_diff, csv, plot, seed } => {
            validate::run(validate::Options { set, shapes, peers, layout, all_tiles, warmup, iters, machine, max_diff, csv, plot, seed })
        }
        Command::Disasm { kernel, arch } => {
            let a = parse_arch(&arch)?;
            let co = amdgpu_emu::loader::CodeObject::parse(a.code_object()).map_err(|e| format!("{a}: {e}"))?;
            let kernels: Vec<_> = match &kernel {
                Some(name) => vec![co.kernel(name).ok_or_else(|| {
                    let names: Vec<&str> = co.kernels().iter().map(|k| k.name.as_str()).collect();
                    format!("no kernel `{name}` in the {a} code object; kernels: {}", names.join(", "))
                })?],
                None => co.kernels().iter().collect(),
            };
            for k in kernels {
                println!("{}:", k.name);
                for (pc, text) in amdgpu_emu::disasm::disassemble(&co, k).map_err(|e| format!("{}: {e}", k.name))? {
                    println!("  {pc:#010x}  {text}");
                }
                println!();
            }
            Ok(())
        }
    }
}

/// The largest tensor the kernels address (`fp8gemm_device::tile::MAX_TENSOR_BYTES`, 32-bit
/// buffer offsets). The demos check every tensor they would build against it *before* allocating
/// anything, so a huge size is one error line rather than an allocation abort.
const MAX_TENSOR_BYTES: u64 = fp8gemm_device::tile::MAX_TENSOR_BYTES;

/// Rejects a tensor of `dims` elements of `elem_bytes` bytes that overflows or exceeds
/// [`MAX_TENSOR_BYTES`]; `arg` names the command-line argument to blame.
fn check_tensor(arg: &str, what: &str, dims: &[(&str, usize)], elem_bytes: u64) -> Result<(), String> {
    let bytes = dims.iter().try_fold(elem_bytes, |acc, &(_, d)| u64::try_from(d).ok().and_then(|d| acc.checked_mul(d)));
    match bytes {
        Some(b) if b < MAX_TENSOR_BYTES => Ok(()),
        _ => {
            let shape: Vec<String> = dims.iter().map(|(name, d)| format!("{name} = {d}")).collect();
            Err(format!(
                "argument `--{arg}`: {what} ({}) needs {} bytes; the kernels address fewer than 2^31 bytes per tensor",
                shape.join(", "),
                bytes.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string())
            ))
        }
    }
}

fn check_dense_sizes(m: usize, n: usize, k: usize) -> Result<(), String> {
    check_tensor("m", "A (m × k FP8)", &[("m", m), ("k", k)], 1)?;
    check_tensor("n", "B (n × k FP8)", &[("n", n), ("k", k)], 1)?;
    check_tensor("m", "D (m × n bf16)", &[("m", m), ("n", n)], 2)
}

fn check_grouped_sizes(groups: usize, m: usize, n: usize, k: usize) -> Result<(), String> {
    check_tensor("groups", "B (groups × n × k FP8)", &[("groups", groups), ("n", n), ("k", k)], 1)?;
    // Rows of A in either layout: at most ⌈1.3·m⌉ per group, plus up to 127 padding rows.
    let per_group = m.checked_mul(13).map(|x| x.div_ceil(10)).and_then(|x| x.checked_add(128)).unwrap_or(usize::MAX);
    check_tensor("m", "A (groups × ⌈1.3·m + 128⌉ rows × k FP8)", &[("groups", groups), ("rows per group", per_group), ("k", k)], 1)?;
    check_tensor("m", "D (groups × ⌈1.3·m + 128⌉ rows × n bf16)", &[("groups", groups), ("rows per group", per_group), ("n", n)], 2)
}

fn check_kgrouped_sizes(groups: usize, m: usize, n: usize, k: usize) -> Result<(), String> {
    // Tokens: at most ⌈1.3·k⌉ rounded up to 128 per group.
    let per_group = k.checked_mul(13).map(|x| x.div_ceil(10).div_ceil(128) * 128).unwrap_or(usize::MAX);
    check_tensor("k", "A (groups × ⌈1.3·k⌉ tokens × m FP8)", &[("groups", groups), ("tokens per group", per_group), ("m", m)], 1)?;
    check_tensor("k", "B (groups × ⌈1.3·k⌉ tokens × n FP8)", &[("groups", groups), ("tokens per group", per_group), ("n", n)], 1)?;
    check_tensor("m", "D[g] (m × n f32)", &[("m", m), ("n", n)], 4)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match env::init().and_then(|()| run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fp8gemm: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The seeds of `eval --grouped --masked-seed`.
#[derive(Clone, Debug)]
struct Seeds(Vec<u64>);

/// Parses `S`, `S1,S2,…` or `A-B` (inclusive) into seeds.
fn parse_seeds(s: &str) -> Result<Seeds, String> {
    let bad = || format!("expected a seed, seeds separated by commas, or a range A-B with A ≤ B, got `{s}`");
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.trim().parse::<u64>().map_err(|_| bad())?, b.trim().parse::<u64>().map_err(|_| bad())?);
                if a > b || b - a >= 1000 {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse::<u64>().map_err(|_| bad())?),
        }
    }
    if out.is_empty() {
        return Err(bad());
    }
    Ok(Seeds(out))
}
