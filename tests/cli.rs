//! The `fp8gemm` binary: each subcommand's output and its errors.

use std::process::Command;

fn fp8gemm(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fp8gemm")).args(args).output().expect("run fp8gemm");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn info_lists_every_kernel_of_both_architectures() {
    let (ok, out, err) = fp8gemm(&["info"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("arch"), "{out}");
    for arch in ["gfx942", "gfx950"] {
        for kernel in [
            "add_one_f32",
            "fp8_gemm_nt_bm64_bn64",
            "fp8_gemm_nt_bm128_bn128",
            "m_grouped_fp8_gemm_nt_masked_bm64_bn64",
            "k_grouped_fp8_gemm_tn_contiguous_bm128_bn128",
        ] {
            let row = out.lines().find(|l| l.starts_with(arch) && l.split_whitespace().nth(1) == Some(kernel));
            let row = row.unwrap_or_else(|| panic!("no {arch} {kernel} row in\n{out}"));
            // vspill, sspill and scratch columns are 0; the launch bound column is 256.
            let cols: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(&cols[5..8], &["0", "0", "0"], "{row}");
            assert_eq!(cols[9], "256", "{row}");
        }
    }
    let (ok, _, err) = fp8gemm(&["info", "--arch", "gfx90a"]);
    assert!(!ok);
    assert!(err.contains("unknown architecture `gfx90a`; expected one of gfx942, gfx950"), "{err}");
}

#[test]
fn gemm_demo_meets_both_accuracy_goals() {
    let (ok, out, err) = fp8gemm(&["gemm", "--m", "65", "--n", "192", "--k", "256", "--seed", "4"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("vs the dequantized reference") && out.contains("vs the unquantized reference"), "{out}");
    assert!(out.contains("modelled MI300X throughput lower bound (not measured, not the timing model"), "{out}");
    assert!(out.contains("`fp8gemm profile`"), "{out}");
}

#[test]
fn grouped_demo_runs_both_layouts() {
    for layout in ["contiguous", "masked"] {
        let (ok, out, err) = fp8gemm(&["grouped", "--layout", layout, "--groups", "3", "--m", "40", "--n", "128", "--k", "256"]);
        assert!(ok, "{layout}: {out}\n{err}");
        assert!(out.contains("calc_diff"), "{out}");
    }
}

/// `FP8GEMM_PRESHUFFLED=1`: the grouped demo and `profile` put B in the pre-shuffled layout,
/// which runs the m-grouped bs kernels (the demo still checks both references).
#[test]
fn grouped_demo_and_profile_run_the_bs_kernels_on_preshuffled_weights() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_fp8gemm")).args(args).env("FP8GEMM_PRESHUFFLED", "1").output().expect("run fp8gemm");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for layout in ["contiguous", "masked"] {
        let (ok, out, err) = run(&["grouped", "--layout", layout, "--groups", "3", "--m", "40", "--n", "128", "--k", "256"]);
        assert!(ok, "{layout}: {out}\n{err}");
        // (The masked decode shape runs the narrow pipelined tile, `..._masked_bs_pipe_bm32_bn64`.)
        assert!(out.contains("calc_diff") && out.contains(&format!("m_grouped_fp8_gemm_nt_{layout}_bs_")), "{layout}: {out}");
    }
    let (ok, out, err) = run(&["profile", "--layout", "masked", "--groups", "2", "--m", "64", "--n", "256", "--k", "256", "--scope", "xcd"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("m_grouped_fp8_gemm_nt_masked_bs_"), "{out}");
}

#[test]
fn kgrouped_demo_meets_both_accuracy_goals_and_prints_counters() {
    let (ok, out, err) = fp8gemm(&["kgrouped", "--groups", "3", "--m", "72", "--n", "136", "--k", "256", "--seed", "2"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("vs the dequantized reference") && out.contains("vs the unquantized reference"), "{out}");
    assert!(out.contains("bank-conflict cycles") && out.contains("modelled MI300X throughput lower bound"), "{out}");
    let out = Command::new(env!("CARGO_BIN_EXE_fp8gemm"))
        .args(["kgrouped", "--groups", "1", "--m", "64", "--n", "64", "--k", "128", "--uniform"])
        .env("FP8GEMM_PRINT_CONFIGS", "1")
        .output()
        .expect("run fp8gemm");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("fp8gemm config: k_grouped_fp8_gemm_tn_contiguous_bm64_bn64 on gfx942"), "{err}");
    let (ok, _, err) = fp8gemm(&["kgrouped", "--groups", "2", "--m", "12", "--n", "64", "--k", "128", "--uniform"]);
    assert!(!ok);
    assert!(err.contains("argument `m`: expected a multiple of 8, got 12"), "{err}");
    let (ok, _, err) = fp8gemm(&["kgrouped", "--groups", "2", "--m", "64", "--n", "64", "--k", "100", "--uniform"]);
    assert!(!ok);
    assert!(err.contains("ks[0] = 100"), "{err}");
    // The timing model through `profile --kgrouped` (XCD scope keeps it quick).
    let (ok, out, err) = fp8gemm(&["profile", "--kgrouped", "--groups", "2", "--m", "128", "--n", "128", "--k", "256", "--scope", "xcd"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("(timing model, not measured)") && out.contains("k_grouped_fp8_gemm_tn_contiguous"), "{out}");
}

#[test]
fn disasm_prints_llvm_syntax_and_names_unknown_kernels() {
    let (ok, out, err) = fp8gemm(&["disasm", "add_one_f32"]);
    assert!(ok, "{err}");
    assert!(out.contains("s_load_dword") && out.contains("s_endpgm"), "{out}");
    let (ok, _, err) = fp8gemm(&["disasm", "nope"]);
    assert!(!ok);
    assert!(err.contains("no kernel `nope` in the gfx942 code object"), "{err}");
}

#[test]
fn bench_labels_emulator_time() {
    let (ok, out, err) = fp8gemm(&["bench", "--m", "64", "--n", "128", "--k", "128", "--iters", "2"]);
    assert!(ok, "{err}");
    assert!(out.contains("emulator wall time on this CPU, NOT a GPU figure"), "{out}");
}

#[test]
fn gemm_rejects_unsupported_shapes_with_the_argument_named() {
    let (ok, _, err) = fp8gemm(&["gemm", "--m", "4", "--n", "128", "--k", "100"]);
    assert!(!ok);
    assert!(err.contains("argument `k`: expected a positive multiple of 128, got 100"), "{err}");
}

/// Huge sizes are one error line and a nonzero exit, never an allocation abort or a panic
/// (`--m 4294967296`, `--m usize::MAX`, `--groups` huge), for every subcommand that allocates.
#[test]
fn huge_sizes_are_one_error_line() {
    let max = usize::MAX.to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["gemm", "--m", "4294967296", "--n", "128", "--k", "128"], "argument `--m`"),
        (vec!["gemm", "--m", &max, "--n", "128", "--k", "128"], "argument `--m`"),
        (vec!["gemm", "--m", "128", "--n", &max, "--k", "128"], "argument `--n`"),
        (vec!["gemm", "--m", "128", "--n", "128", "--k", &max], "argument `--m`"),
        (vec!["bench", "--m", "4294967296", "--n", "128", "--k", "128"], "argument `--m`"),
        (vec!["profile", "--m", "4294967296", "--n", "128", "--k", "128"], "argument `--m`"),
        (vec!["grouped", "--layout", "masked", "--groups", "4294967296", "--m", "8", "--n", "128", "--k", "128"], "argument `--groups`"),
        (vec!["grouped", "--layout", "contiguous", "--groups", &max, "--m", "8", "--n", "128", "--k", "128"], "argument `--groups`"),
        (vec!["grouped", "--layout", "contiguous", "--groups", "2", "--m", &max, "--n", "128", "--k", "128"], "argument `--m`"),
    ];
    for (args, want) in cases {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fp8gemm")).args(&args).output().expect("run fp8gemm");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: exit status {:?}, stderr {err}", out.status);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(err.contains("2^31 bytes"), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one error line, got {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn profile_prints_the_timing_models_report_for_dense_and_grouped() {
    let (ok, out, err) = fp8gemm(&["profile", "--m", "200", "--n", "256", "--k", "512", "--machine", "mi325x"]);
    assert!(ok, "{out}\n{err}");
    for want in [
        "modelled on mi325x (timing model, not measured)",
        "modelled time",
        "modelled busy: MFMA",
        "modelled stalls",
        "top stalled instructions",
        "TFLOPS modelled",
    ] {
        assert!(out.contains(want), "missing `{want}` in\n{out}");
    }
    let (ok, out, err) = fp8gemm(&["profile", "--layout", "masked", "--groups", "2", "--m", "64", "--n", "256", "--k", "256", "--scope", "xcd"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("m_grouped_fp8_gemm_nt_masked") && out.contains("simulated on one XCD"), "{out}");
    let (ok, _, err) = fp8gemm(&["profile", "--m", "64", "--n", "128", "--k", "128", "--machine", "mi999"]);
    assert!(!ok);
    assert!(err.contains("--machine \"mi999\": unknown machine; expected one of mi300x, mi325x"), "{err}");
}

#[test]
fn compare_tabulates_modelled_against_measured_and_writes_csv_and_plot() {
    // A peers directory with a two-row measured table (small shapes keep the test quick).
    let dir = std::env::temp_dir().join(format!("fp8gemm-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("measured_mi325x.csv"),
        "kernel,M,N,K,us,tflops,source\n_ZN5aiter42fp8gemm_bf16_blockscale_BpreShuffle_32x128E,128,256,256,4.0,4.19,test\n_ZN5aiter42fp8gemm_bf16_blockscale_BpreShuffle_64x128E,256,256,256,5.0,6.71,test\n",
    )
    .unwrap();
    let (csv, svg) = (dir.join("rows.csv"), dir.join("plot.svg"));
    let (ok, out, err) =
        fp8gemm(&["compare", "--set", "peers", "--peers", dir.to_str().unwrap(), "--csv", csv.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("dense 128x256x256") && out.contains("BpreShuffle_32x128 measured"), "{out}");
    assert!(out.contains("peers: 2 shapes, geomean of our modelled TFLOPS / AMD's measured TFLOPS"), "{out}");
    let table = std::fs::read_to_string(&csv).unwrap();
    assert!(table.lines().any(|l| l == "set,machine,problem,config,our_us,our_tflops,other,other_us,other_tflops,ratio,schedule"), "{table}");
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("peers,mi325x,")).collect();
    assert_eq!(rows.len(), 2, "{table}");
    // The schedule column is last: empty, `pipe`, `split S` or `sk DP+SK` (optionally after `pipe`).
    for row in &rows {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f.len(), 11, "{row}");
        let words: Vec<&str> = f[10].split(' ').filter(|w| !w.is_empty() && *w != "pipe").collect();
        let ok = match words.as_slice() {
            [] => true,
            ["split", s] => s.parse::<u32>().is_ok_and(|s| s > 1),
            ["sk", dp_sk] => dp_sk.split_once('+').is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok_and(|b| b > 0)),
            _ => false,
        };
        assert!(ok, "schedule column `{}` of {row}", f[10]);
        // The printed table shows the same tile and schedule.
        let shown = if f[10].is_empty() { f[3].to_string() } else { format!("{} {}", f[3], f[10]) };
        assert!(out.lines().any(|l| l.contains(f[2]) && l.contains(&format!(" {shown} "))), "`{shown}` not printed for {}:\n{out}", f[2]);
    }
    // Each row's ratio is our TFLOPS over the measured one (columns: …, our_tflops, other, other_us, other_tflops, ratio).
    for row in rows {
        let f: Vec<&str> = row.split(',').collect();
        let (ours, theirs, ratio): (f64, f64, f64) = (f[5].parse().unwrap(), f[8].parse().unwrap(), f[9].parse().unwrap());
        assert!(ours > 0.0 && (ratio - ours / theirs).abs() < 2e-3 * ratio.max(1.0), "{row}");
    }
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg") && plot.contains("MODELLED") && plot.contains("AMD asm, measured MI325X 256x256"), "{plot}");
    // A directory without the measured table is an error naming the file.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (ok, _, err) = fp8gemm(&["compare", "--set", "peers", "--peers", empty.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("measured_mi325x.csv"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `fp8gemm validate` on the emulator: every selected kernel of the small set (dense, contiguous
/// and masked m-grouped), both layouts, a CSV with the documented columns (the "measured" column
/// labelled as the emulator's timing model), and a wrong result reported (here: a correctness
/// threshold no result can meet) with a non-zero exit naming the kernel.
#[test]
fn validate_writes_the_csv_and_reports_wrong_results() {
    let dir = std::env::temp_dir().join(format!("fp8gemm-validate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (csv, svg) = (dir.join("v.csv"), dir.join("v.svg"));
    let (ok, out, err) = fp8gemm(&["validate", "--set", "small", "--csv", csv.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("NOT a measurement"), "{out}");
    let table = std::fs::read_to_string(&csv).unwrap();
    let mut lines = table.lines();
    assert_eq!(
        lines.next(),
        Some(
            "backend,measured_source,problem,kernel,layout,groups,m,n,k,overrides,kept,measured_us,measured_min_us,measured_max_us,modelled_us,modelled_over_measured,calc_diff,max_abs_err,correct"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 12, "6 problems × 2 layouts:\n{table}");
    for r in &rows {
        assert_eq!(r.len(), 19, "{r:?}");
        assert_eq!((r[0], r[1]), ("emulator", "emulator timing model"));
        let prefix = match r[2] {
            "dense" => "fp8_gemm_nt_",
            "contiguous" => "m_grouped_fp8_gemm_nt_contiguous_",
            "masked" => "m_grouped_fp8_gemm_nt_masked_",
            other => panic!("problem kind {other}"),
        };
        assert!(r[3].starts_with(prefix), "{r:?}");
        let (measured, modelled, diff): (f64, f64, f64) = (r[11].parse().unwrap(), r[14].parse().unwrap(), r[16].parse().unwrap());
        assert!(measured > 0.0 && modelled > 0.0, "{r:?}");
        // On the emulator both columns are the same model of the same launch.
        assert!((measured - modelled).abs() <= 0.02 * modelled, "{r:?}");
        assert!(diff < 1e-5, "{r:?}");
        assert_eq!(r[18], "true");
    }
    for kind in ["dense", "contiguous", "masked"] {
        for layout in ["logical", "pre-shuffled"] {
            assert!(rows.iter().any(|r| r[2] == kind && r[4] == layout), "no {kind} {layout} row:\n{table}");
        }
    }
    assert!(std::fs::read_to_string(&svg).unwrap().contains("MODELLED"));
    // An impossible threshold: every result is reported wrong, with its kernel, and the run fails.
    let (ok, out, err) = fp8gemm(&["validate", "--shapes", "64x256x512", "--layout", "logical", "--max-diff", "0", "--csv", csv.to_str().unwrap()]);
    assert!(!ok, "{out}");
    assert!(err.contains("1 of 1 results are wrong against the CPU reference") && err.contains("fp8_gemm_nt_"), "{err}");
    assert!(std::fs::read_to_string(&csv).unwrap().lines().nth(1).unwrap().ends_with(",false"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tune_retimes_padded_contiguous_samples_and_keeps_their_routed_rows() {
    // One contiguous split-K sample twice: every row routed, and 20 of each 32-row group routed
    // (the rest padding, stores skipped). Retimed, the padded one keeps its tenth column and
    // costs less; a stored count that is not the same in every group is refused, naming it.
    let dir = std::env::temp_dir().join(format!("fp8gemm-cli-padded-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (input, output) = (dir.join("in.csv"), dir.join("out.csv"));
    let kernel = "m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm32_bn128";
    std::fs::write(&input, format!("# test\n{kernel},128,1024,256,1,0,0,1e-5,4\n{kernel},128,1024,256,1,0,0,1e-5,4,80\n")).expect("write samples");
    let args = |out: &str| {
        vec![
            "tune",
            "--machine",
            "mi325x",
            "--from-samples",
            input.to_str().unwrap(),
            "--retime",
            "--samples-out",
            output.to_str().unwrap(),
            "--only",
            kernel,
            "--out",
            out,
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let model = dir.join("cost.csv");
    let a = args(model.to_str().unwrap());
    let (ok, out, err) = fp8gemm(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "{out}\n{err}");
    let text = std::fs::read_to_string(&output).expect("retimed samples");
    let rows: Vec<Vec<&str>> = text.lines().filter(|l| !l.starts_with('#')).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert_eq!((rows[0].len(), rows[1].len(), rows[1][9]), (9, 10, "80"), "{text}");
    let secs = |r: &Vec<&str>| r[7].parse::<f64>().expect("seconds");
    assert!(secs(&rows[1]) < secs(&rows[0]), "the padded launch stores fewer rows: {text}");
    // The model file carries the store figure as the last field of each kernel row.
    let cost = std::fs::read_to_string(&model).expect("cost model");
    assert!(cost.contains("fixed_cycles[slots],store_cycles"), "{cost}");
    std::fs::write(&input, format!("# test\n{kernel},128,1024,256,1,0,0,1e-5,4,81\n")).expect("write samples");
    let (ok, _, err) = fp8gemm(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!ok);
    assert!(err.contains("81 stored rows are not fewer than the 128 rows, the same in each of 4 groups"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tune_judges_the_shipped_model_on_sample_files_without_fitting() {
    // Two dense samples judged by the shipped cost model: the residuals file holds each with
    // its modelled time (the file's), the estimate and the signed error between them; no cost
    // model is written (`--shipped` refuses `--out`).
    let dir = std::env::temp_dir().join(format!("fp8gemm-cli-shipped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (input, res) = (dir.join("in.csv"), dir.join("res.csv"));
    std::fs::write(
        &input,
        "# test\nfp8_gemm_nt_splitk_bs_bm64_bn128,100,2304,16384,6,0,0,2.129e-5\nfp8_gemm_nt_bs_pipe_bm64_bn128,512,7168,2048,1,0,0,3.0e-5\n",
    )
    .expect("write samples");
    let (i, r) = (input.to_str().unwrap(), res.to_str().unwrap());
    let (ok, out, err) = fp8gemm(&["tune", "--machine", "mi325x", "--from-samples", i, "--shipped", "--residuals", r]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("the shipped cost model of gfx942 judged on these samples"), "{out}");
    assert!(!out.contains("machine,mi325x"), "no cost model is printed: {out}");
    let text = std::fs::read_to_string(&res).expect("residuals");
    let rows: Vec<Vec<&str>> = text.lines().filter(|l| !l.starts_with('#') && !l.starts_with("kernel,")).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{text}");
    for (row, modelled) in rows.iter().zip([21.29, 30.0]) {
        assert_eq!(row.len(), 19, "{text}");
        assert_eq!(row[10], "judged", "{text}");
        let (m, e, err) = (row[11].parse::<f64>().unwrap(), row[12].parse::<f64>().unwrap(), row[13].parse::<f64>().unwrap());
        assert!((m - modelled).abs() < 1e-9, "{text}");
        assert!(e.is_finite() && e > 0.0, "{text}");
        assert!((err - (e / m - 1.0)).abs() < 1e-3, "{text}");
        // The estimate is the launch overhead, the larger of its compute and memory terms and
        // the reduction tail (µs, 3 decimals each).
        let (compute, memory, tail) = (row[15].parse::<f64>().unwrap(), row[17].parse::<f64>().unwrap(), row[18].parse::<f64>().unwrap());
        assert!(compute > 0.0 && memory > 0.0 && tail >= 0.0, "{text}");
        let launch = e - compute.max(memory) - tail;
        assert!(launch > 0.0 && launch < 10.0, "launch overhead {launch} µs: {text}");
    }
    assert_eq!(rows[0][4], "6", "{text}");
    let (ok, _, err) = fp8gemm(&["tune", "--from-samples", i, "--shipped", "--out", r]);
    assert!(!ok && err.contains("--out"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tune_measures_the_finisher_chain_of_a_split_launch() {
    // One dense split-K kernel at split 2 on one round of the device: a row with the launch's
    // modelled time and a positive chain (cycles from a tile's other piece to its last).
    let (ok, out, err) = fp8gemm(&["tune", "--machine", "mi325x", "--chains", "2", "--only", "fp8_gemm_nt_splitk_bs_bm32_bn64"]);
    assert!(ok, "{out}\n{err}");
    let row: Vec<&str> = out.lines().find(|l| l.starts_with("fp8_gemm_nt_splitk_bs_bm32_bn64")).expect("a row").split_whitespace().collect();
    assert_eq!(row.len(), 8, "{out}");
    assert_eq!(row[1], "2", "{out}");
    let (us, med, max) = (row[4].parse::<f64>().unwrap(), row[5].parse::<u64>().unwrap(), row[6].parse::<u64>().unwrap());
    assert!(us > 0.0 && med > 0 && max >= med, "{out}");
    // The finisher's extra work (its duration less its tile's other piece's): positive, and at
    // most the chain's maximum (the pieces start together on one round).
    let extra = row[7].parse::<u64>().unwrap();
    assert!(extra > 0 && extra <= max, "{out}");
    // No split-K kernel matches: a named error, not an empty table.
    let (ok, _, err) = fp8gemm(&["tune", "--chains", "--only", "fp8_gemm_nt_bs_pipe_bm64_bn128"]);
    assert!(!ok && err.contains("no dense or contiguous split-K kernel"), "{err}");
}
