//! Builds a Rust device crate into AMDGPU code objects, one per architecture.
//!
//! rustc can compile Rust for `amdgcn-amd-amdhsa`, but it cannot set a kernel's launch bound,
//! it forbids AccVGPRs (`"amdgpu-agpr-alloc"="0"`), it passes a kernel's struct argument through
//! a pointer, and LLVM 22 emits code object v6 by default. This builder therefore:
//!
//! 1. runs an isolated `cargo rustc` on the device crate for `amdgcn-amd-amdhsa`
//!    (`-Zbuild-std=core`, `-Ctarget-cpu=<arch>`, the workspace's `amdgpu` profile with fat LTO,
//!    its own target directory per architecture) and takes the post-LTO LLVM IR;
//! 2. rewrites that IR ([`process_ir`]): each kernel gets the launch bound recorded by
//!    `#[amdgpu_kernel]` as `"amdgpu-flat-work-group-size"="N,N"` (and `"amdgpu-waves-per-eu"`),
//!    loses `"amdgpu-agpr-alloc"="0"`, and its argument struct becomes a by-value kernarg
//!    (`ptr addrspace(4) byref([S x i8])`), so the struct's bytes are the kernarg segment;
//! 3. links optional LLVM IR shims (`llvm-link`) for intrinsics rustc cannot declare;
//! 4. compiles with the toolchain's own `llc -O3 --amdhsa-code-object-version=5
//!    -structurizecfg-skip-uniform-regions` and links with `rust-lld -flavor gnu -shared`.
//!
//! **Uniform regions are not structurized** (`-structurizecfg-skip-uniform-regions`). By default
//! LLVM's AMDGPU pipeline structurizes every region, uniform ones too: a loop with a uniform
//! exit after each unrolled step (the pipelined bs loops' `break`s on the K-block count) gets
//! "flow" blocks that route every exit through the loop header's predecessor. The wait-count
//! pass then merges the exit paths' pending loads into the header's state and waits there for
//! loads issued one step earlier (`s_waitcnt vmcnt(0)` before the first MFMA of every 4-block
//! window, where `vmcnt(9)` suffices). Skipping uniform regions leaves those exits as plain
//! scalar branches out of the loop. Modelled (timing model, MI325X, `--scope xcd`), µs before →
//! after: 640×2048×7168 (48-row pipelined) 35.63 → 33.01, 4096×2048×7168 (64-row pipelined
//! stream-K) 120.58 → 117.45; registers of the pipelined kernels within ±12.
//! The option is off by default in LLVM 22 because it once caused functional issues in HIP
//! programs (<https://reviews.llvm.org/D77228>); upstream is re-enabling it after fixes
//! (<https://github.com/llvm/llvm-project/pull/206739>). Every kernel here runs against the CPU
//! reference on the emulator in `cargo test`, which is what makes the option safe to use.
//!
//! Only the pinned toolchain with its `rust-src` and `llvm-tools` components is needed: no ROCm,
//! no system LLVM.
#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Target triple of every code object.
pub const TARGET: &str = "amdgcn-amd-amdhsa";
/// Prefix of the marker statics written by `#[amdgpu_kernel]`.
pub const MARKER_PREFIX: &str = "__AMDGPU_KERNEL_ATTRS__";

/// Everything that can go wrong while building device code, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A rustup component of the pinned toolchain is not installed.
    #[error(
        "the toolchain component `{component}` is missing ({missing} not found); install it with: rustup component add {component} --toolchain {toolchain}"
    )]
    MissingComponent {
        /// Component name (`rust-src`, `llvm-tools`).
        component: &'static str,
        /// The file that was looked for.
        missing: PathBuf,
        /// The toolchain in use.
        toolchain: String,
    },
    /// A tool could not be started.
    #[error("could not run `{tool}`: {source}")]
    Spawn {
        /// The tool.
        tool: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The device crate failed to compile; the compiler's messages were passed through to stderr.
    #[error("the device crate failed to compile for {arch} ({status}); the compiler's messages are above")]
    DeviceCompile {
        /// GPU architecture.
        arch: String,
        /// Exit status of cargo.
        status: std::process::ExitStatus,
    },
    /// An LLVM tool failed.
    #[error("`{tool}` failed for {arch} ({status}):\n{stderr}")]
    Tool {
        /// The tool.
        tool: String,
        /// GPU architecture.
        arch: String,
        /// Exit status.
        status: std::process::ExitStatus,
        /// What it printed on stderr.
        stderr: String,
    },
    /// Cargo did not report the expected artifact.
    #[error("cargo produced no LLVM IR for the device crate at {expected}")]
    NoArtifact {
        /// Where the IR was expected.
        expected: PathBuf,
    },
    /// The device IR does not have the shape the builder relies on.
    #[error("device IR: {0}")]
    Ir(String),
    /// File I/O.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError + '_ {
    move |source| BuildError::Io { path: path.to_path_buf(), source }
}

/// Launch attributes of one kernel, as recorded by `#[amdgpu_kernel]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelAttrs {
    /// Kernel symbol.
    pub name: String,
    /// Exact workgroup size.
    pub workgroup_size: u32,
    /// Minimum waves per SIMD (0: not requested).
    pub waves_per_eu: u32,
    /// Whether the register allocator may use AccVGPRs.
    pub agprs: bool,
    /// Size in bytes of the kernel's argument struct (0: no argument).
    pub kernarg_size: u32,
}

/// One built code object.
#[derive(Clone, Debug)]
pub struct CodeObject {
    /// GPU architecture (`gfx942`, ...).
    pub arch: String,
    /// The code object (ELF) file.
    pub path: PathBuf,
    /// The processed LLVM IR it was compiled from (launch bounds applied).
    pub ir_path: PathBuf,
    /// The post-LTO IR exactly as rustc emitted it (kept for inspection and tests).
    pub raw_ir_path: PathBuf,
    /// Every kernel found.
    pub kernels: Vec<KernelAttrs>,
}

/// Result of [`KernelBuilder::build`].
#[derive(Clone, Debug)]
pub struct BuildOutput {
    /// One code object per requested architecture, in request order.
    pub code_objects: Vec<CodeObject>,
    /// Files and directories whose change must trigger a rebuild.
    pub rerun_if_changed: Vec<PathBuf>,
    /// Environment variables read by the builder.
    pub rerun_if_env_changed: Vec<&'static str>,
}

/// Builder for the device crate's code objects (see the crate docs).
#[derive(Clone, Debug)]
#[must_use]
pub struct KernelBuilder {
    crate_path: PathBuf,
    archs: Vec<String>,
    profile: String,
    target_dir: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    shims: Vec<PathBuf>,
    launch_bounds: bool,
    extra_watch: Vec<PathBuf>,
}

impl KernelBuilder {
    /// A builder for the device crate at `crate_path` (the directory holding its Cargo.toml).
    pub fn new(crate_path: impl Into<PathBuf>) -> Self {
        KernelBuilder {
            crate_path: crate_path.into(),
            archs: Vec::new(),
            profile: "amdgpu".into(),
            target_dir: None,
            out_dir: None,
            shims: Vec::new(),
            launch_bounds: true,
            extra_watch: Vec::new(),
        }
    }
    /// Adds a GPU architecture (`gfx942`, `gfx950`); one code object each.
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.archs.push(arch.into());
        self
    }
    /// The cargo profile for the device build (default `amdgpu`: fat LTO, panic = abort).
    pub fn profile(mut self, profile: impl Into<String>) -> Self {
        self.profile = profile.into();
        self
    }
    /// Target directory of the inner cargo (default: `amdgpu` beside the outer target dir).
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }
    /// Where code objects are written (default: `$OUT_DIR`).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }
    /// Links an LLVM IR file into the device module (for intrinsics rustc cannot declare).
    pub fn shim(mut self, path: impl Into<PathBuf>) -> Self {
        self.shims.push(path.into());
        self
    }
    /// Whether to apply the recorded launch bounds (default true; false exists for tests that
    /// show what the bound buys).
    pub fn launch_bounds(mut self, on: bool) -> Self {
        self.launch_bounds = on;
        self
    }
    /// Another path whose change must rebuild the device code (e.g. the attribute macro crate).
    pub fn watch(mut self, path: impl Into<PathBuf>) -> Self {
        self.extra_watch.push(path.into());
        self
    }

    /// Builds every requested architecture.
    pub fn build(self) -> Result<BuildOutput, BuildError> {
        let tools = Tools::locate()?;
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => {
                PathBuf::from(std::env::var_os("OUT_DIR").ok_or_else(|| BuildError::Ir("OUT_DIR is not set: call out_dir() outside a build script".into()))?)
            }
        };
        let target_root = match &self.target_dir {
            Some(d) => d.clone(),
            None => default_target_dir(&out_dir),
        };
        std::fs::create_dir_all(&out_dir).map_err(io_err(&out_dir))?;
        let mut code_objects = Vec::new();
        let mut rerun = vec![self.crate_path.join("src"), self.crate_path.join("Cargo.toml")];
        rerun.extend(self.shims.iter().cloned());
        rerun.extend(self.extra_watch.iter().cloned());
        for arch in &self.archs {
            let raw_ir = self.compile_device(&tools, arch, &target_root.join(arch))?;
            let raw_ir_path = out_dir.join(format!("{arch}.raw.ll"));
            std::fs::write(&raw_ir_path, &raw_ir).map_err(io_err(&raw_ir_path))?;
            let processed = process_ir(&raw_ir, self.launch_bounds)?;
            let ir_path = out_dir.join(format!("{arch}.ll"));
            std::fs::write(&ir_path, &processed.ir).map_err(io_err(&ir_path))?;
            let path = out_dir.join(format!("{arch}.hsaco"));
            tools.compile_ir(&ir_path, &self.shims, arch, &path, &out_dir)?;
            code_objects.push(CodeObject { arch: arch.clone(), path, ir_path, raw_ir_path, kernels: processed.kernels });
        }
        Ok(BuildOutput { code_objects, rerun_if_changed: rerun, rerun_if_env_changed: vec!["RUSTC", "CARGO"] })
    }

    fn compile_device(&self, tools: &Tools, arch: &str, target_dir: &Path) -> Result<String, BuildError> {
        let manifest = self.crate_path.join("Cargo.toml");
        let mut cmd = Command::new(&tools.cargo);
        cmd.arg("rustc")
            .arg("--manifest-path")
            .arg(&manifest)
            .args(["--lib", "--crate-type", "cdylib", "--target", TARGET, "-Zbuild-std=core"])
            .arg("--profile")
            .arg(&self.profile)
            .arg("--target-dir")
            .arg(target_dir)
            .args(["--message-format=json-render-diagnostics", "--", "--emit=llvm-ir"]);
        // The inner cargo must not inherit the outer build's configuration.
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("CARGO_FEATURE_")
                || k.starts_with("CARGO_CFG_")
                || k.starts_with("CARGO_PKG_")
                || k.starts_with("CARGO_ENCODED_RUSTFLAGS")
                || k.starts_with("CARGO_BUILD_")
                || k.starts_with("CARGO_TARGET_")
                || k.starts_with("CARGO_PROFILE_")
                || matches!(
                    k.as_ref(),
                    "RUSTFLAGS"
                        | "RUSTC_WRAPPER"
                        | "RUSTC_WORKSPACE_WRAPPER"
                        | "TARGET"
                        | "HOST"
                        | "OUT_DIR"
                        | "PROFILE"
                        | "OPT_LEVEL"
                        | "DEBUG"
                        | "CARGO_MANIFEST_DIR"
                        | "CARGO_MANIFEST_PATH"
                        | "CARGO_PRIMARY_PACKAGE"
                        | "CARGO_CRATE_NAME"
                        | "RUSTDOC"
                        | "RUSTC_LINKER"
                )
            {
                cmd.env_remove(&key);
            }
        }
        // gfx950 builds also get `--cfg fp8gemm_gfx950`: the device crate's CDNA4 code paths
        // (`intrinsics::mfma_f32_16x16x128_fp8`).
        let flags = if arch == "gfx950" { format!("-Ctarget-cpu={arch}\x1f--cfg\x1ffp8gemm_gfx950") } else { format!("-Ctarget-cpu={arch}") };
        cmd.env("CARGO_ENCODED_RUSTFLAGS", flags);
        cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
        let out = cmd.output().map_err(|source| BuildError::Spawn { tool: tools.cargo.to_string_lossy().into(), source })?;
        if !out.status.success() {
            return Err(BuildError::DeviceCompile { arch: arch.into(), status: out.status });
        }
        let lib_name = crate_lib_name(&manifest)?;
        let ir = target_dir.join(TARGET).join(&self.profile).join("deps").join(format!("{lib_name}.ll"));
        std::fs::read_to_string(&ir).map_err(|_| BuildError::NoArtifact { expected: ir.clone() })
    }
}

/// The inner target directory: `<outer target dir>/amdgpu`, found by walking up from OUT_DIR to
/// the directory cargo tags with CACHEDIR.TAG; `OUT_DIR/amdgpu` if there is none.
fn default_target_dir(out_dir: &Path) -> PathBuf {
    out_dir.ancestors().find(|d| d.join("CACHEDIR.TAG").is_file()).map(|d| d.join("amdgpu")).unwrap_or_else(|| out_dir.join("amdgpu"))
}

/// Compiles an LLVM IR file (plus optional IR shims) for `arch` into a code object at `out`
/// with the pinned toolchain's `llc` and `rust-lld`, exactly as [`KernelBuilder::build`] does;
/// intermediate files go to `work_dir`. For tests and tools that post-process IR themselves.
pub fn compile_ir(ir: &Path, shims: &[PathBuf], arch: &str, out: &Path, work_dir: &Path) -> Result<(), BuildError> {
    std::fs::create_dir_all(work_dir).map_err(io_err(work_dir))?;
    Tools::locate()?.compile_ir(ir, shims, arch, out, work_dir)
}

/// The library name of the crate (package name with `-` → `_`).
fn crate_lib_name(manifest: &Path) -> Result<String, BuildError> {
    let text = std::fs::read_to_string(manifest).map_err(io_err(manifest))?;
    let mut in_package = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_package = t == "[package]";
        } else if in_package && let Some(rest) = t.strip_prefix("name") {
            let v = rest.trim_start().trim_start_matches('=').trim().trim_matches('"');
            return Ok(v.replace('-', "_"));
        }
    }
    Err(BuildError::Ir(format!("{}: no [package] name", manifest.display())))
}

/// The pinned toolchain's tools.
#[derive(Debug)]
struct Tools {
    cargo: PathBuf,
    llc: PathBuf,
    llvm_link: PathBuf,
    lld: PathBuf,
}

impl Tools {
    fn locate() -> Result<Tools, BuildError> {
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| OsString::from("rustc"));
        let cargo = PathBuf::from(std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo")));
        let run = |args: &[&str]| -> Result<String, BuildError> {
            let out = Command::new(&rustc).args(args).output().map_err(|source| BuildError::Spawn { tool: rustc.to_string_lossy().into(), source })?;
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        let sysroot = PathBuf::from(run(&["--print", "sysroot"])?);
        let toolchain = sysroot.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let host = run(&["-vV"])?.lines().find_map(|l| l.strip_prefix("host: ").map(str::to_string)).unwrap_or_else(|| "x86_64-unknown-linux-gnu".into());
        let core_src = sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml");
        if !core_src.is_file() {
            return Err(BuildError::MissingComponent { component: "rust-src", missing: core_src, toolchain });
        }
        let bin = sysroot.join("lib/rustlib").join(&host).join("bin");
        let tool = |name: &str| -> Result<PathBuf, BuildError> {
            let p = bin.join(name);
            if p.is_file() { Ok(p) } else { Err(BuildError::MissingComponent { component: "llvm-tools", missing: p, toolchain: toolchain.clone() }) }
        };
        Ok(Tools { cargo, llc: tool("llc")?, llvm_link: tool("llvm-link")?, lld: tool("rust-lld")? })
    }

    fn run(&self, tool: &Path, args: &[&std::ffi::OsStr], arch: &str) -> Result<(), BuildError> {
        let out = Command::new(tool).args(args).output().map_err(|source| BuildError::Spawn { tool: tool.display().to_string(), source })?;
        if !out.status.success() {
            return Err(BuildError::Tool {
                tool: tool.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
                arch: arch.into(),
                status: out.status,
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        Ok(())
    }

    /// IR (+ shims) → object (llc -O3, code object v5) → shared code object (rust-lld).
    fn compile_ir(&self, ir: &Path, shims: &[PathBuf], arch: &str, out: &Path, work: &Path) -> Result<(), BuildError> {
        let mut input = ir.to_path_buf();
        if !shims.is_empty() {
            let linked = work.join(format!("{arch}.linked.bc"));
            let mut args: Vec<&std::ffi::OsStr> = vec![ir.as_os_str()];
            args.extend(shims.iter().map(|s| s.as_os_str()));
            args.push("-o".as_ref());
            args.push(linked.as_os_str());
            self.run(&self.llvm_link, &args, arch)?;
            input = linked;
        }
        let obj = work.join(format!("{arch}.o"));
        let mcpu = format!("-mcpu={arch}");
        let llc_args: Vec<&std::ffi::OsStr> = vec![
            "-mtriple=amdgcn-amd-amdhsa".as_ref(),
            mcpu.as_ref(),
            "-O3".as_ref(),
            "-filetype=obj".as_ref(),
            "--amdhsa-code-object-version=5".as_ref(),
            // Uniform regions stay unstructurized (module docs).
            "-structurizecfg-skip-uniform-regions".as_ref(),
            input.as_os_str(),
            "-o".as_ref(),
            obj.as_os_str(),
        ];
        self.run(&self.llc, &llc_args, arch)?;
        let lld_args: Vec<&std::ffi::OsStr> = vec!["-flavor".as_ref(), "gnu".as_ref(), "-shared".as_ref(), obj.as_os_str(), "-o".as_ref(), out.as_os_str()];
        self.run(&self.lld, &lld_args, arch)
    }
}

/// Result of [`process_ir`].
#[derive(Clone, Debug)]
pub struct ProcessedIr {
    /// The rewritten module.
    pub ir: String,
    /// The kernels found, in definition order.
    pub kernels: Vec<KernelAttrs>,
}

/// Rewrites rustc's post-LTO device IR as described in the crate docs. With `launch_bounds`
/// false the kernels keep rustc's default bound (1024) but everything else is still done.
pub fn process_ir(ir: &str, launch_bounds: bool) -> Result<ProcessedIr, BuildError> {
    // 1. Markers.
    let mut markers: BTreeMap<String, (u32, u32, bool)> = BTreeMap::new();
    let mut lines: Vec<String> = Vec::new();
    for line in ir.lines() {
        if line.starts_with("module asm ") {
            continue; // rustc's embedded-bitcode section; meaningless for a code object
        }
        if let Some(rest) = line.strip_prefix(&format!("@{MARKER_PREFIX}")) {
            let (name, attrs) = parse_marker(rest)?;
            markers.insert(name, attrs);
            continue;
        }
        lines.push(line.to_string());
    }
    // Drop marker references from @llvm.used / @llvm.compiler.used.
    for line in lines.iter_mut() {
        if (line.starts_with("@llvm.used ") || line.starts_with("@llvm.compiler.used ")) && line.contains(MARKER_PREFIX) {
            *line = rewrite_used(line)?;
        }
    }
    lines.retain(|l| !l.is_empty());

    // 2. Attribute groups.
    let mut groups: BTreeMap<u32, String> = BTreeMap::new();
    for l in &lines {
        if let Some(rest) = l.strip_prefix("attributes #")
            && let Some((num, body)) = rest.split_once(" = { ")
        {
            let num: u32 = num.parse().map_err(|_| BuildError::Ir(format!("bad attribute group line: {l}")))?;
            groups.insert(num, body.trim_end_matches('}').trim_end().to_string());
        }
    }
    let mut next_group = groups.keys().next_back().map_or(0, |n| n + 1);
    let mut new_groups: Vec<String> = Vec::new();

    // 3. Kernels.
    let mut kernels = Vec::new();
    let mut out: Vec<String> = Vec::with_capacity(lines.len() + 16);
    let mut i = 0;
    while i < lines.len() {
        let line = &lines[i];
        if !line.starts_with("define ") || !line.contains(" amdgpu_kernel ") {
            out.push(line.clone());
            i += 1;
            continue;
        }
        let name = between(line, "@", "(").ok_or_else(|| BuildError::Ir(format!("cannot parse kernel: {line}")))?;
        let name = name.trim_matches('"').to_string();
        let (wg, waves, agprs) = markers.remove(&name).ok_or_else(|| {
            BuildError::Ir(format!("kernel `{name}` has no #[amdgpu_kernel(workgroup_size = N)] marker: declare kernels only with the attribute"))
        })?;
        let open = line.find('(').unwrap_or(0);
        let close = matching_paren(line, open).ok_or_else(|| BuildError::Ir(format!("cannot parse kernel: {line}")))?;
        let params = line[open + 1..close].trim();
        let mut new_line = line.clone();
        let mut prologue = None;
        let mut kernarg_size = 0;
        if !params.is_empty() {
            if params.contains(',') || !params.starts_with("ptr ") {
                return Err(BuildError::Ir(format!(
                    "kernel `{name}`: expected one argument struct passed indirectly by rustc, found `({params})`; \
                     kernels take one #[repr(C)] struct (which rustc passes by pointer) or nothing"
                )));
            }
            let size: u32 = between(params, "dereferenceable(", ")")
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| BuildError::Ir(format!("kernel `{name}`: argument has no dereferenceable(N): `{params}`")))?;
            let align: u32 = between(params, "align ", " ").and_then(|s| s.parse().ok()).unwrap_or(8);
            let pname = params.rsplit(' ').next().unwrap_or("%args").to_string();
            if !pname.starts_with('%') {
                return Err(BuildError::Ir(format!("kernel `{name}`: unnamed argument in `{params}`")));
            }
            let new_params = format!("ptr addrspace(4) noalias noundef readonly byref([{size} x i8]) align {align} {pname}.kernarg");
            new_line = format!("{}{}{}", &line[..open + 1], new_params, &line[close..]);
            prologue = Some(format!("  {pname} = addrspacecast ptr addrspace(4) {pname}.kernarg to ptr"));
            kernarg_size = size;
        }
        // Attribute group.
        let group_ref = new_line.rfind(" #").and_then(|p| new_line[p + 2..].split_whitespace().next().and_then(|n| n.parse::<u32>().ok()).map(|n| (p, n)));
        let (pos, gnum) = group_ref.ok_or_else(|| BuildError::Ir(format!("kernel `{name}` has no attribute group")))?;
        let body = groups.get(&gnum).ok_or_else(|| BuildError::Ir(format!("kernel `{name}`: attribute group #{gnum} missing")))?;
        let mut attrs: Vec<String> = split_attrs(body)
            .into_iter()
            .filter(|a| {
                !(agprs && a.starts_with("\"amdgpu-agpr-alloc\""))
                    && !a.starts_with("\"amdgpu-flat-work-group-size\"")
                    && !a.starts_with("\"amdgpu-waves-per-eu\"")
                    && !a.starts_with("\"uniform-work-group-size\"")
            })
            .collect();
        if launch_bounds {
            attrs.push(format!("\"amdgpu-flat-work-group-size\"=\"{wg},{wg}\""));
            if waves > 0 {
                attrs.push(format!("\"amdgpu-waves-per-eu\"=\"{waves}\""));
            }
        }
        // HIP grids are whole workgroups: every workgroup is full.
        attrs.push("\"uniform-work-group-size\"=\"true\"".into());
        new_groups.push(format!("attributes #{next_group} = {{ {} }}", attrs.join(" ")));
        let rest = &new_line[pos + 2..];
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        new_line = format!("{} #{next_group}{rest}", &new_line[..pos]);
        next_group += 1;
        out.push(new_line);
        i += 1;
        if let Some(p) = prologue {
            // Insert after the entry block's label, if it has one: either a bare
            // `label:` line or a `label:  ; preds = ...` line.
            if i < lines.len() && ((lines[i].ends_with(':') && !lines[i].starts_with(' ')) || (lines[i].contains(':') && lines[i].contains("; preds"))) {
                out.push(lines[i].clone());
                i += 1;
            }
            out.push(p);
        }
        kernels.push(KernelAttrs { name, workgroup_size: wg, waves_per_eu: waves, agprs, kernarg_size });
    }
    if let Some((name, _)) = markers.into_iter().next() {
        return Err(BuildError::Ir(format!("#[amdgpu_kernel] `{name}` has no kernel definition in the IR")));
    }
    out.extend(new_groups);
    let mut ir = String::with_capacity(ir.len());
    for l in out {
        let _ = writeln!(ir, "{l}");
    }
    Ok(ProcessedIr { ir, kernels })
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let a = s.find(start)? + start.len();
    let b = s[a..].find(end)? + a;
    Some(&s[a..b])
}

fn matching_paren(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits an attribute-group body on spaces outside quotes.
fn split_attrs(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut paren = 0i32;
    for c in body.chars() {
        match c {
            '"' => quoted = !quoted,
            '(' if !quoted => paren += 1,
            ')' if !quoted => paren -= 1,
            ' ' if !quoted && paren == 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `NAME = ... c"NAME;workgroup_size=N;waves_per_eu=W;agprs=A\00" ...` → (NAME, (N, W, A)).
fn parse_marker(rest: &str) -> Result<(String, (u32, u32, bool)), BuildError> {
    let text = between(rest, "c\"", "\\00\"").ok_or_else(|| BuildError::Ir(format!("unreadable kernel marker: {rest}")))?;
    let mut parts = text.split(';');
    let name = parts.next().unwrap_or_default().to_string();
    let (mut wg, mut waves, mut agprs) = (None, 0, true);
    for p in parts {
        match p.split_once('=') {
            Some(("workgroup_size", v)) => wg = v.parse().ok(),
            Some(("waves_per_eu", v)) => waves = v.parse().unwrap_or(0),
            Some(("agprs", v)) => agprs = v != "0",
            _ => return Err(BuildError::Ir(format!("unknown kernel marker field `{p}` in {text}"))),
        }
    }
    let wg = wg.ok_or_else(|| BuildError::Ir(format!("kernel marker without workgroup_size: {text}")))?;
    Ok((name, (wg, waves, agprs)))
}

/// Removes marker entries from an `@llvm.used`-style array; empty string when none remain.
fn rewrite_used(line: &str) -> Result<String, BuildError> {
    let open = line.find("] [").ok_or_else(|| BuildError::Ir(format!("unexpected @llvm.used form: {line}")))? + 2;
    let close = line.rfind(']').ok_or_else(|| BuildError::Ir(format!("unexpected @llvm.used form: {line}")))?;
    let inner = &line[open + 1..close];
    // Entries are `ptr X` separated by ", ptr ".
    let entries: Vec<&str> = inner.split(", ptr ").map(|e| e.trim_start_matches("ptr ")).collect();
    let kept: Vec<&str> = entries.into_iter().filter(|e| !e.contains(MARKER_PREFIX)).collect();
    if kept.is_empty() {
        return Ok(String::new());
    }
    let head = &line[..line.find(" global [").ok_or_else(|| BuildError::Ir(format!("unexpected @llvm.used form: {line}")))?];
    let tail = &line[close + 1..];
    let list: Vec<String> = kept.iter().map(|e| format!("ptr {e}")).collect();
    Ok(format!("{head} global [{} x ptr] [{}]{tail}", kept.len(), list.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"target triple = "amdgcn-amd-amdhsa"
module asm ".section .llvmbc"
@__AMDGPU_KERNEL_ATTRS__k = addrspace(1) constant [42 x i8] c"k;workgroup_size=128;waves_per_eu=2;agprs=1\00", align 1
@llvm.used = appending addrspace(1) global [1 x ptr] [ptr addrspacecast (ptr addrspace(1) @__AMDGPU_KERNEL_ATTRS__k to ptr)], section "llvm.metadata"

define amdgpu_kernel void @k(ptr dead_on_return noalias noundef readonly align 8 captures(none) dereferenceable(24) %args) unnamed_addr #0 {
start:
  %0 = addrspacecast ptr %args to ptr addrspace(1)
  ret void
}
attributes #0 = { nounwind "amdgpu-agpr-alloc"="0" "target-cpu"="gfx942" "uniform-work-group-size"="false" }
"#;

    #[test]
    fn rewrites_kernel_signature_bounds_and_markers() {
        let p = process_ir(SAMPLE, true).unwrap();
        assert_eq!(p.kernels, vec![KernelAttrs { name: "k".into(), workgroup_size: 128, waves_per_eu: 2, agprs: true, kernarg_size: 24 }]);
        assert!(!p.ir.contains(MARKER_PREFIX));
        assert!(!p.ir.contains("module asm"));
        assert!(!p.ir.contains("@llvm.used"));
        assert!(
            p.ir.contains("define amdgpu_kernel void @k(ptr addrspace(4) noalias noundef readonly byref([24 x i8]) align 8 %args.kernarg) unnamed_addr #1 {")
        );
        assert!(p.ir.contains("start:\n  %args = addrspacecast ptr addrspace(4) %args.kernarg to ptr\n"));
        let g1 = p.ir.lines().find(|l| l.starts_with("attributes #1")).unwrap();
        assert!(g1.contains("\"amdgpu-flat-work-group-size\"=\"128,128\""));
        assert!(g1.contains("\"amdgpu-waves-per-eu\"=\"2\""));
        assert!(!g1.contains("agpr-alloc"));
        assert!(g1.contains("\"uniform-work-group-size\"=\"true\""));
    }

    #[test]
    fn without_bounds_keeps_default() {
        let p = process_ir(SAMPLE, false).unwrap();
        assert!(!p.ir.contains("amdgpu-flat-work-group-size"));
    }

    #[test]
    fn kernel_without_marker_is_an_error() {
        let ir = SAMPLE.replace("@__AMDGPU_KERNEL_ATTRS__k", "@other");
        let err = process_ir(&ir, true).unwrap_err().to_string();
        assert!(err.contains("kernel `k` has no #[amdgpu_kernel"), "{err}");
    }

    #[test]
    fn direct_scalar_arguments_are_rejected() {
        let ir = SAMPLE.replace("ptr dead_on_return noalias noundef readonly align 8 captures(none) dereferenceable(24) %args", "i64 %a, i32 %b");
        let err = process_ir(&ir, true).unwrap_err().to_string();
        assert!(err.contains("expected one argument struct"), "{err}");
    }

    #[test]
    fn a_missing_component_says_which_rustup_line_to_run() {
        let e = BuildError::MissingComponent {
            component: "llvm-tools",
            missing: PathBuf::from("/sysroot/lib/rustlib/x86_64-unknown-linux-gnu/bin/llc"),
            toolchain: "nightly-2026-05-20-x86_64-unknown-linux-gnu".into(),
        };
        let msg = e.to_string();
        assert!(msg.contains("bin/llc not found"), "{msg}");
        assert!(msg.ends_with("rustup component add llvm-tools --toolchain nightly-2026-05-20-x86_64-unknown-linux-gnu"), "{msg}");
    }

    #[test]
    fn finds_the_library_name_of_the_device_crate() {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../device/Cargo.toml");
        assert_eq!(crate_lib_name(&manifest).unwrap(), "fp8gemm_device");
    }

    #[test]
    fn keeps_other_used_entries() {
        let line = "@llvm.used = appending addrspace(1) global [2 x ptr] [ptr @a, ptr addrspacecast (ptr addrspace(1) @__AMDGPU_KERNEL_ATTRS__k to ptr)], section \"llvm.metadata\"";
        assert_eq!(rewrite_used(line).unwrap(), "@llvm.used = appending addrspace(1) global [1 x ptr] [ptr @a], section \"llvm.metadata\"");
    }
}
