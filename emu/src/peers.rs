//! Running AMD's production FP8 GEMM code objects ("peer kernels") on the emulator.
//!
//! The peers are AMD's hand-written assembly FP8 block-scale GEMMs from the AITER library, kept
//! outside the repository in a directory named by [`PEERS_DIR_ENV`] (CI points it at
//! `../shared/peers` beside the checkout). That directory's `README.md` is the launch contract
//! this module follows exactly; in short:
//!
//! * six **BpreShuffle** kernels `fp8gemm_bf16_blockscale_BpreShuffle_{TM}x128.co`
//!   (TM ∈ {32, 48, 64, 80, 96, 128}): 256-byte kernarg of 16-byte slots ([`BpreShuffleArgs`]),
//!   grid (N/128 · ks, ⌈M/TM⌉, 1), block 256, bf16 output C = Σ_kb SA·SB·dot + bias;
//! * one **flatmm** kernel `flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32.co`: 112-byte kernarg
//!   ([`FlatmmArgs`]), grid (N/256, ⌈M/128⌉, 1), block 256, fp16 output D.
//!
//! Both take A `[M,K]` E4M3FNUZ row-major, B pre-shuffled from the logical `[N,K]` layout (the two
//! contracts' formulas give the same byte order, see [`preshuffle_b`]), SA f32 column-major
//! `[K/128][M]`; SB f32 `[N/128][K/128]` for BpreShuffle and `[K/128][N/128]` for flatmm.
//!
//! Use: [`peers_dir`] → [`load_peers`] → [`PeerProblem::generate`] → [`prepare`] →
//! [`crate::exec::launch`] → [`PeerLaunch::read_c`] → [`calc_diff`] against [`reference_f64`].
//! [`measured_rows`] parses the measured MI325X times (`measured_mi325x.csv`).
//!
//! **Rows past M** (last M tile, M % TM ≠ 0), decided from the buffer resources the kernels
//! build (see `emu/src/exec/buffer.rs` for the range rule, `emu/tests/peers.rs` for the tests):
//! * BpreShuffle: **in bounds.** Each workgroup sets its A and C buffer resources' num_records to
//!   (rows of its tile below M) · row bytes (e.g. 0x800 = 8 rows · 256 B for the last tile of
//!   M = 200, TM = 32, N = 128, K = 256), so rows past M fail the raw-buffer range check: their
//!   loads return 0 and their stores (`buffer_store_dwordx2` at pc 0x39d8 of the 32x128 kernel)
//!   are dropped. Memcheck findings past M seen with an earlier emulator came from its wrong
//!   range rule (`index < num_records && offset + size ≤ stride`), not from the kernels.
//! * flatmm: **reads SA past its end.** Its SA resource keeps num_records = the whole SA size
//!   (K/128 · M · 4 bytes) while its base advances one column (M · 4 bytes) per K block, so in
//!   the last K block the rows m ≥ M of the last tile pass the range check and read up to
//!   (TM − M % TM) · 4 bytes past the SA allocation (`buffer_load_dword v236, v24, s[24:27], 0
//!   offen offset:256` at pc 0x25f8 among others). The values only feed rows that are never
//!   stored, but on hardware the read is outside the allocation: a real out-of-bounds read
//!   that memcheck finds. A and D stay in bounds.
//!
//! [`Padding::WholeTiles`] pads A, SA and C to whole M tiles (conformance runs);
//! [`Padding::Exact`] allocates exactly M rows, which is what memcheck judges.

use std::path::{Path, PathBuf};

use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

use crate::exec::LaunchConfig;
use crate::loader::{CodeObject, Kernel, LoadError};
use crate::memory::{DeviceMemory, MemError};
use crate::numerics::{F8Kind, f8_to_f32};

/// Environment variable naming the directory that holds the peer code objects.
pub const PEERS_DIR_ENV: &str = "FP8GEMM_PEERS_DIR";
/// File name of the measured MI325X times inside the peers directory.
pub const MEASURED_CSV: &str = "measured_mi325x.csv";
/// Number of data rows of the [`MEASURED_CSV`] the project was given (AMD's 47 MI325X rows);
/// [`measured_rows`] reads whatever rows a file of that format holds.
pub const MEASURED_ROWS: usize = 47;
/// K elements per scale block (both scale operands are per 128 K).
pub const K_BLOCK: u32 = 128;
/// Work-items per workgroup of every peer kernel.
pub const BLOCK_THREADS: u32 = 256;
/// LDS bytes every peer kernel uses (the whole 64 KiB of a gfx942 workgroup).
pub const PEER_LDS_BYTES: u32 = 65536;
/// File name of the flatmm peer.
pub const FLATMM_FILE: &str = "flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32.co";
/// M tiles of the six BpreShuffle peers.
pub const BPRESHUFFLE_TILES: [u32; 6] = [32, 48, 64, 80, 96, 128];

/// Why a peer kernel could not be found, loaded, prepared or checked.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The environment variable naming the peers directory is not set.
    #[error("environment variable {var} is not set: it must name the directory holding AMD's peer code objects (e.g. ../shared/peers beside the checkout)")]
    EnvUnset {
        /// The variable ([`PEERS_DIR_ENV`]).
        var: &'static str,
    },
    /// The peers directory does not exist or is not a directory.
    #[error("peers directory {path} (from {source_of}) does not exist or is not a directory")]
    DirMissing {
        /// The path.
        path: PathBuf,
        /// Where the path came from (the environment variable or "argument").
        source_of: String,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A code object did not parse.
    #[error("cannot load code object {path}: {source}")]
    Load {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: LoadError,
    },
    /// A code object does not contain the expected kernel symbol.
    #[error("code object {path} has no kernel `{symbol}`")]
    MissingSymbol {
        /// The file.
        path: PathBuf,
        /// The expected symbol.
        symbol: String,
    },
    /// The measured-times CSV is malformed.
    #[error("{path} line {line}: {msg}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// A problem dimension or launch parameter violates the kernel's contract.
    #[error("peer `{kernel}`: argument {arg} = {value}, expected {expected}")]
    Shape {
        /// Kernel symbol.
        kernel: String,
        /// Argument name (`m`, `n`, `k`, `ks`, ...).
        arg: &'static str,
        /// Value given.
        value: u64,
        /// What the contract requires.
        expected: String,
    },
    /// An operand slice has the wrong length.
    #[error("operand {arg} has {got} elements, expected {expected}")]
    Length {
        /// Operand name.
        arg: &'static str,
        /// Elements given.
        got: usize,
        /// Elements expected.
        expected: usize,
    },
    /// The kernel's metadata disagrees with the contract this module implements.
    #[error("peer `{kernel}`: {what}")]
    Contract {
        /// Kernel symbol.
        kernel: String,
        /// The disagreement.
        what: String,
    },
    /// Device memory could not be allocated or accessed.
    #[error("device memory: {0}")]
    Mem(#[from] MemError),
}

/// The two launch contracts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeerFamily {
    /// `fp8gemm_bf16_blockscale_BpreShuffle_{tm}x128`: bf16 output, M tile `tm`, N tile 128.
    BpreShuffle {
        /// M tile.
        tm: u32,
    },
    /// `flatmm_uk_gfx9_f16f8_128x256x128`: fp16 output, M tile 128, N tile 256.
    Flatmm,
}

/// Element type of a peer's output matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// bfloat16 (BpreShuffle).
    Bf16,
    /// IEEE half (flatmm).
    F16,
}

impl PeerFamily {
    /// M tile (rows of C per workgroup).
    pub fn tile_m(self) -> u32 {
        match self {
            PeerFamily::BpreShuffle { tm } => tm,
            PeerFamily::Flatmm => 128,
        }
    }
    /// N tile (columns of C per workgroup); N must be a multiple of it.
    pub fn tile_n(self) -> u32 {
        match self {
            PeerFamily::BpreShuffle { .. } => 128,
            PeerFamily::Flatmm => 256,
        }
    }
    /// The output element type.
    pub fn output(self) -> OutputFormat {
        match self {
            PeerFamily::BpreShuffle { .. } => OutputFormat::Bf16,
            PeerFamily::Flatmm => OutputFormat::F16,
        }
    }
    /// The code object's file name inside the peers directory.
    pub fn file_name(self) -> String {
        match self {
            PeerFamily::BpreShuffle { tm } => format!("fp8gemm_bf16_blockscale_BpreShuffle_{tm}x128.co"),
            PeerFamily::Flatmm => FLATMM_FILE.to_string(),
        }
    }
    /// The kernel symbol (Itanium-mangled `aiter::…` for BpreShuffle, plain for flatmm).
    pub fn symbol(self) -> String {
        match self {
            PeerFamily::BpreShuffle { tm } => {
                let name = format!("fp8gemm_bf16_blockscale_BpreShuffle_{tm}x128");
                format!("_ZN5aiter{}{name}E", name.len())
            }
            PeerFamily::Flatmm => "flatmm_uk_gfx9_f16f8_128x256x128_1x4x1_16x16x32".to_string(),
        }
    }
    /// All seven peers, BpreShuffle by increasing tile, then flatmm.
    pub fn all() -> Vec<PeerFamily> {
        BPRESHUFFLE_TILES.iter().map(|&tm| PeerFamily::BpreShuffle { tm }).chain([PeerFamily::Flatmm]).collect()
    }
}

/// One loaded peer code object.
#[derive(Clone, Debug)]
pub struct PeerKernel {
    /// Which contract it follows.
    pub family: PeerFamily,
    /// The file it came from.
    pub path: PathBuf,
    /// The kernel symbol.
    pub symbol: String,
    /// The parsed code object.
    pub code_object: CodeObject,
    /// The kernel `symbol` of `code_object`, found by [`load_peer`].
    entry: Kernel,
}

impl PeerKernel {
    /// The kernel inside [`PeerKernel::code_object`] ([`load_peer`] checked that it exists).
    pub fn kernel(&self) -> &Kernel {
        &self.entry
    }
}

/// The peers directory from [`PEERS_DIR_ENV`]; an unset variable or a missing directory is an
/// error naming the variable and the path (callers must fail, never skip).
pub fn peers_dir() -> Result<PathBuf, PeerError> {
    let v = std::env::var_os(PEERS_DIR_ENV).ok_or(PeerError::EnvUnset { var: PEERS_DIR_ENV })?;
    let path = PathBuf::from(v);
    if !path.is_dir() {
        return Err(PeerError::DirMissing { path, source_of: format!("environment variable {PEERS_DIR_ENV}") });
    }
    Ok(path)
}

fn check_dir(dir: &Path) -> Result<(), PeerError> {
    if dir.is_dir() { Ok(()) } else { Err(PeerError::DirMissing { path: dir.to_path_buf(), source_of: "argument".into() }) }
}

/// Reads the code object `dir/relative` and finds `symbol` in it: the loader every peer family
/// shares (`dir` must exist; every failure names the file).
pub(crate) fn load_code_object(dir: &Path, relative: &Path, symbol: &str) -> Result<(PathBuf, CodeObject, Kernel), PeerError> {
    check_dir(dir)?;
    let path = dir.join(relative);
    let bytes = std::fs::read(&path).map_err(|source| PeerError::Io { path: path.clone(), source })?;
    let code_object = CodeObject::parse(&bytes).map_err(|source| PeerError::Load { path: path.clone(), source })?;
    let Some(entry) = code_object.kernel(symbol).cloned() else {
        return Err(PeerError::MissingSymbol { path, symbol: symbol.to_string() });
    };
    Ok((path, code_object, entry))
}

/// Loads one peer from `dir`.
pub fn load_peer(dir: &Path, family: PeerFamily) -> Result<PeerKernel, PeerError> {
    let symbol = family.symbol();
    let (path, code_object, entry) = load_code_object(dir, Path::new(&family.file_name()), &symbol)?;
    Ok(PeerKernel { family, path, symbol, code_object, entry })
}

/// Loads all seven peers from `dir` (any missing or unparsable file is an error).
pub fn load_peers(dir: &Path) -> Result<Vec<PeerKernel>, PeerError> {
    PeerFamily::all().into_iter().map(|f| load_peer(dir, f)).collect()
}

/// One row of [`MEASURED_CSV`]: a kernel time measured on an MI325X.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredRow {
    /// Kernel symbol (as in [`PeerFamily::symbol`]).
    pub kernel: String,
    /// M.
    pub m: u32,
    /// N.
    pub n: u32,
    /// K.
    pub k: u32,
    /// Measured kernel time in microseconds.
    pub us: f64,
    /// 2·M·N·K / time, in TFLOPS, as the file gives it.
    pub tflops: f64,
}

impl MeasuredRow {
    /// The peer family of [`MeasuredRow::kernel`], if it is one of the seven.
    pub fn family(&self) -> Option<PeerFamily> {
        PeerFamily::all().into_iter().find(|f| f.symbol() == self.kernel)
    }
}

/// Parses `dir/measured_mi325x.csv` (header `kernel,M,N,K,us,tflops,source`): every row it
/// holds (at least one), each naming a known peer.
pub fn measured_rows(dir: &Path) -> Result<Vec<MeasuredRow>, PeerError> {
    check_dir(dir)?;
    let path = dir.join(MEASURED_CSV);
    let text = std::fs::read_to_string(&path).map_err(|source| PeerError::Io { path: path.clone(), source })?;
    let err = |line: usize, msg: String| PeerError::Csv { path: path.clone(), line, msg };
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, h)| h).unwrap_or("");
    if !header.starts_with("kernel,M,N,K,us,tflops") {
        return Err(err(1, format!("header `{header}`, expected `kernel,M,N,K,us,tflops,...`")));
    }
    let mut rows = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 6 {
            return Err(err(i + 1, format!("{} fields, expected at least 6", f.len())));
        }
        let int = |j: usize, name: &str| f[j].trim().parse::<u32>().map_err(|e| err(i + 1, format!("{name} `{}`: {e}", f[j])));
        let flt = |j: usize, name: &str| f[j].trim().parse::<f64>().map_err(|e| err(i + 1, format!("{name} `{}`: {e}", f[j])));
        let row =
            MeasuredRow { kernel: f[0].trim().to_string(), m: int(1, "M")?, n: int(2, "N")?, k: int(3, "K")?, us: flt(4, "us")?, tflops: flt(5, "tflops")? };
        if row.family().is_none() {
            return Err(err(i + 1, format!("kernel `{}` is not one of the peers", row.kernel)));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(err(text.lines().count(), "no data rows".into()));
    }
    Ok(rows)
}

/// A GEMM problem in logical layouts (the pre-shuffle and the scale layouts are applied by
/// [`prepare`]).
#[derive(Clone, Debug)]
pub struct PeerProblem {
    /// Rows of A and C.
    pub m: u32,
    /// Rows of B, columns of C.
    pub n: u32,
    /// Inner dimension.
    pub k: u32,
    /// A, `m × k` E4M3FNUZ bytes, row-major.
    pub a: Vec<u8>,
    /// B, `n × k` E4M3FNUZ bytes, row-major (logical; [`prepare`] pre-shuffles it).
    pub b: Vec<u8>,
    /// A scales, `m × k/128`, row-major: `sa[m·(k/128) + kb]`.
    pub sa: Vec<f32>,
    /// B scales, `n/128 × k/128`, row-major: `sb[nb·(k/128) + kb]`.
    pub sb: Vec<f32>,
    /// Bias per output column (`n` values; BpreShuffle only, must be all zero for flatmm).
    pub bias: Vec<f32>,
    /// Split-K factor (BpreShuffle; 1 = no split).
    pub ks: u32,
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, fast, deterministic generator for test data.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A random finite E4M3FNUZ encoding with magnitude in [2^-4, 2^3·1.875] (exponent field 4..=11),
/// random sign and mantissa: never the NaN encoding 0x80, never zero.
#[inline]
fn fp8_from_bits(r: u8) -> u8 {
    (r & 0x87) | ((4 + ((r >> 3) & 7)) << 3)
}

fn fill_fp8(out: &mut [u8], seed: u64) {
    // Chunks of 64 KiB each get their own stream, so generation runs in parallel and stays
    // deterministic.
    out.par_chunks_mut(1 << 16).enumerate().for_each(|(c, chunk)| {
        let mut g = SplitMix64::new(seed ^ (c as u64).wrapping_mul(0xA076_1D64_78BD_642F));
        for w in chunk.chunks_mut(8) {
            let r = g.next_u64().to_le_bytes();
            for (o, &x) in w.iter_mut().zip(&r) {
                *o = fp8_from_bits(x);
            }
        }
    });
}

fn fill_scales(n: usize, seed: u64) -> Vec<f32> {
    let mut g = SplitMix64::new(seed);
    // Scales in [2^-7, 2^-5): positive, like per-block absmax/240 scales.
    (0..n).map(|_| (1.0 + (g.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2f32.powi(-7 + (g.next_u64() % 2) as i32)).collect()
}

impl PeerProblem {
    /// Deterministic random operands for an `m × n × k` problem: FP8 values of magnitude
    /// 2^-4…15, scales in [2^-7, 2^-5), zero bias, ks = 1. Cheap (parallel, a few ns per byte) so
    /// calibration shapes up to 32768×2048×7168 can be generated; dimensions are validated by
    /// [`prepare`], not here.
    pub fn generate(m: u32, n: u32, k: u32, seed: u64) -> PeerProblem {
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let kb = ku.div_ceil(K_BLOCK as usize);
        let mut a = vec![0u8; mu * ku];
        let mut b = vec![0u8; nu * ku];
        fill_fp8(&mut a, seed.wrapping_mul(3).wrapping_add(1));
        fill_fp8(&mut b, seed.wrapping_mul(3).wrapping_add(2));
        let sa = fill_scales(mu * kb, seed.wrapping_mul(5).wrapping_add(3));
        let sb = fill_scales(nu.div_ceil(128) * kb, seed.wrapping_mul(5).wrapping_add(4));
        PeerProblem { m, n, k, a, b, sa, sb, bias: vec![0.0; nu], ks: 1 }
    }

    fn validate(&self, kernel: &PeerKernel) -> Result<(), PeerError> {
        let f = kernel.family;
        let shape = |arg: &'static str, value: u64, expected: String| PeerError::Shape { kernel: kernel.symbol.clone(), arg, value, expected };
        if self.m == 0 {
            return Err(shape("m", 0, "at least 1".into()));
        }
        if self.n == 0 || !self.n.is_multiple_of(f.tile_n()) {
            return Err(shape("n", self.n.into(), format!("a positive multiple of {}", f.tile_n())));
        }
        if self.k == 0 || !self.k.is_multiple_of(K_BLOCK) {
            return Err(shape("k", self.k.into(), format!("a positive multiple of {K_BLOCK}")));
        }
        let kb = self.k / K_BLOCK;
        for (arg, v) in [("m", self.m), ("n", self.n), ("k", self.k)] {
            if v > i32::MAX as u32 {
                return Err(shape(arg, v.into(), format!("at most {} (the kernels take i32 sizes)", i32::MAX)));
            }
        }
        if (self.n / f.tile_n()).checked_mul(self.ks).is_none() {
            return Err(shape("ks", self.ks.into(), "small enough that n / 128 · ks fits the grid".into()));
        }
        match f {
            PeerFamily::BpreShuffle { .. } => {
                if self.ks == 0 || !kb.is_multiple_of(self.ks) {
                    return Err(shape("ks", self.ks.into(), format!("a divisor of k/128 = {kb}")));
                }
            }
            PeerFamily::Flatmm => {
                if self.ks != 1 {
                    return Err(shape("ks", self.ks.into(), "1 (flatmm has no split-K)".into()));
                }
                if self.bias.iter().any(|&x| x != 0.0) {
                    return Err(shape("bias", 1, "all zeros (flatmm has no bias)".into()));
                }
            }
        }
        let (m, n, k) = (self.m as usize, self.n as usize, self.k as usize);
        let kb = kb as usize;
        for (arg, got, expected) in [
            ("a", self.a.len(), m * k),
            ("b", self.b.len(), n * k),
            ("sa", self.sa.len(), m * kb),
            ("sb", self.sb.len(), n / 128 * kb),
            ("bias", self.bias.len(), n),
        ] {
            if got != expected {
                return Err(PeerError::Length { arg, got, expected });
            }
        }
        Ok(())
    }
}

/// Byte offset of logical B element (n, k) in the pre-shuffled layout of a `· × k_dim` matrix:
/// `((n/16)·(K/32) + k/32)·512 + ((k%32)/16)·256 + (n%16)·16 + k%16` (BpreShuffle contract).
/// flatmm's `view(N/16,16,K/64,4,16).permute(0,2,3,1,4)` is the same order: both are
/// `(n/16)·16K + (k/16)·256 + (n%16)·16 + k%16`.
#[inline]
pub fn preshuffle_offset(n: usize, k: usize, k_dim: usize) -> usize {
    (n / 16) * 16 * k_dim + (k / 16) * 256 + (n % 16) * 16 + k % 16
}

/// Pre-shuffles logical row-major B (`n × k` bytes) into the peers' layout; `n` must be a
/// multiple of 16 and `k` of 32, and `b` exactly `n · k` bytes.
pub fn preshuffle_b(b: &[u8], n: usize, k: usize) -> Result<Vec<u8>, PeerError> {
    let shape = |arg: &'static str, value: usize, expected: &str| PeerError::Shape {
        kernel: "preshuffle_b".into(),
        arg,
        value: value as u64,
        expected: expected.into(),
    };
    if !n.is_multiple_of(16) {
        return Err(shape("n", n, "a multiple of 16"));
    }
    if !k.is_multiple_of(32) {
        return Err(shape("k", k, "a multiple of 32"));
    }
    if b.len() != n * k {
        return Err(PeerError::Length { arg: "b", got: b.len(), expected: n * k });
    }
    let mut out = vec![0u8; n * k];
    // Each 16-byte run of a row (k%16 = 0..16) stays contiguous.
    for row in 0..n {
        for k16 in (0..k).step_by(16) {
            let dst = preshuffle_offset(row, k16, k);
            out[dst..dst + 16].copy_from_slice(&b[row * k + k16..row * k + k16 + 16]);
        }
    }
    Ok(out)
}

/// Size of the A, SA and C allocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    /// Exactly M rows (memcheck then reports the kernels' accesses past M).
    Exact,
    /// ⌈M/TM⌉·TM rows, zero-filled past M, so the last tile's accesses stay inside.
    WholeTiles,
}

/// The 256-byte kernarg of the BpreShuffle kernels: each pointer in a 16-byte slot, each u32 in a
/// 16-byte slot (the contract's offsets 0x00…0xF0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct BpreShuffleArgs {
    /// 0x00: C (bf16 out).
    pub c: PtrSlot,
    /// 0x10: A.
    pub a: PtrSlot,
    /// 0x20: pre-shuffled B.
    pub b: PtrSlot,
    /// 0x30: SA.
    pub sa: PtrSlot,
    /// 0x40: SB.
    pub sb: PtrSlot,
    /// 0x50: bias (f32 `[N]`).
    pub bias: PtrSlot,
    /// 0x60: M.
    pub m: U32Slot,
    /// 0x70: N.
    pub n: U32Slot,
    /// 0x80: K.
    pub k: U32Slot,
    /// 0x90: lda in bytes (= K).
    pub lda: U32Slot,
    /// 0xA0: ldb (= K).
    pub ldb: U32Slot,
    /// 0xB0: ldc in bytes (= 2·N).
    pub ldc: U32Slot,
    /// 0xC0: split-K factor ks ≥ 1.
    pub ks: U32Slot,
    /// 0xD0: scale_m (= M, the SA column stride).
    pub scale_m: U32Slot,
    /// 0xE0: scale_n (= ⌈N/128⌉).
    pub scale_n: U32Slot,
    /// 0xF0: scale_k (= ⌈K/128⌉).
    pub scale_k: U32Slot,
}

/// A device pointer in a 16-byte kernarg slot.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct PtrSlot {
    /// The pointer.
    pub ptr: u64,
    /// Padding.
    pub pad: u64,
}

/// A u32 in a 16-byte kernarg slot.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct U32Slot {
    /// The value.
    pub value: u32,
    /// Padding.
    pub pad: [u32; 3],
}

impl PtrSlot {
    fn new(ptr: u64) -> Self {
        PtrSlot { ptr, pad: 0 }
    }
}
impl U32Slot {
    fn new(value: u32) -> Self {
        U32Slot { value, pad: [0; 3] }
    }
}

/// The 112-byte kernarg of the flatmm kernel: eleven pointers, then six i32 (names after the
/// host code `asm_flatmm_a8w8_blockscale.cu`; the kernel reads a, b, sa, sb, d_f16, K, N, M).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct FlatmmArgs {
    /// 0: A.
    pub a: u64,
    /// 8: pre-shuffled B.
    pub b: u64,
    /// 16: unused by the kernel (0).
    pub c: u64,
    /// 24: SA (`[K/128][M]`).
    pub sa: u64,
    /// 32: SB (`[K/128][N/128]`).
    pub sb: u64,
    /// 40: unused by the kernel (0).
    pub d: u64,
    /// 48: D (fp16 out).
    pub d_f16: u64,
    /// 56..88: debug pointers, unused (0).
    pub dbg: [u64; 4],
    /// 88: K.
    pub k: i32,
    /// 92: N.
    pub n: i32,
    /// 96: M.
    pub m: i32,
    /// 100..112: unused (0).
    pub rest: [i32; 3],
}

/// Operands uploaded and the launch prepared by [`prepare`].
#[derive(Clone, Debug)]
pub struct PeerLaunch {
    /// Grid, block, LDS and kernarg for [`crate::exec::launch`] (or `hipModuleLaunchKernel`).
    pub config: LaunchConfig,
    /// Device address of C (row-major, row stride `n` elements).
    pub c: u64,
    /// Device address of A.
    pub a: u64,
    /// Device address of the pre-shuffled B.
    pub b: u64,
    /// Device address of SA (`[K/128][M]`) and its allocation size in bytes.
    pub sa: (u64, u64),
    /// Device address of SB.
    pub sb: u64,
    /// Rows allocated for C (M, or M rounded up to whole tiles).
    pub c_rows: u32,
    /// M.
    pub m: u32,
    /// N.
    pub n: u32,
    /// Output element type.
    pub output: OutputFormat,
    /// Every allocation made (A, B, SA, SB, bias, C), for [`PeerLaunch::free`].
    pub allocations: Vec<u64>,
}

impl PeerLaunch {
    /// Reads `rows` rows of C (rows ≤ [`PeerLaunch::c_rows`]) as f32.
    pub fn read_rows(&self, mem: &DeviceMemory, rows: u32) -> Result<Vec<f32>, PeerError> {
        if rows > self.c_rows {
            return Err(PeerError::Length { arg: "rows", got: rows as usize, expected: self.c_rows as usize });
        }
        let mut raw = vec![0u8; rows as usize * self.n as usize * 2];
        mem.read(self.c, &mut raw)?;
        Ok(raw
            .chunks_exact(2)
            .map(|h| {
                let bits = u16::from_le_bytes([h[0], h[1]]);
                match self.output {
                    OutputFormat::Bf16 => half::bf16::from_bits(bits).to_f32(),
                    OutputFormat::F16 => half::f16::from_bits(bits).to_f32(),
                }
            })
            .collect())
    }
    /// Reads C (`m × n`) as f32 (exact: bf16 and fp16 widen exactly).
    pub fn read_c(&self, mem: &DeviceMemory) -> Result<Vec<f32>, PeerError> {
        self.read_rows(mem, self.m)
    }
    /// Frees every allocation [`prepare`] made.
    pub fn free(&self, mem: &DeviceMemory) -> Result<(), PeerError> {
        for &p in &self.allocations {
            mem.free(p)?;
        }
        Ok(())
    }
}

fn f32_bytes(v: &[f32]) -> &[u8] {
    bytemuck::cast_slice(v)
}

/// Validates `problem` against `kernel`'s contract, uploads the operands into `mem` in the
/// layouts the contract requires (B pre-shuffled, SA column-major `[K/128][M]`, SB row-major for
/// BpreShuffle / K-major for flatmm, zeroed C) with A, SA and C sized per `padding`, and returns
/// the launch configuration and the address of C.
pub fn prepare(mem: &DeviceMemory, kernel: &PeerKernel, problem: &PeerProblem, padding: Padding) -> Result<PeerLaunch, PeerError> {
    problem.validate(kernel)?;
    let mut allocations = Vec::new();
    let r = prepare_into(mem, kernel, problem, padding, &mut allocations);
    if r.is_err() {
        // Best effort: the first error is the one reported.
        for &p in &allocations {
            let _ = mem.free(p);
        }
    }
    r
}

fn prepare_into(mem: &DeviceMemory, kernel: &PeerKernel, problem: &PeerProblem, padding: Padding, allocations: &mut Vec<u64>) -> Result<PeerLaunch, PeerError> {
    let f = kernel.family;
    let kern = kernel.kernel();
    let (m, n, k) = (problem.m as usize, problem.n as usize, problem.k as usize);
    let kb = k / K_BLOCK as usize;
    let nb = n / 128;
    let tm = f.tile_m() as usize;
    let rows = match padding {
        Padding::Exact => m,
        Padding::WholeTiles => m.div_ceil(tm) * tm,
    };
    let mut upload = |bytes: &[u8], size: usize| -> Result<u64, PeerError> {
        let p = mem.alloc(size.max(bytes.len()) as u64)?;
        allocations.push(p);
        mem.write(p, bytes)?;
        Ok(p)
    };
    let pa = upload(&problem.a, rows * k)?;
    let pb = upload(&preshuffle_b(&problem.b, n, k)?, n * k)?;
    // SA column-major [K/128][M]: element (m, kb) at kb·M + m. The last tile reads kb·M + m for
    // m < rows, so the padding is rows − M elements past the end.
    let mut sa = vec![0f32; kb * m];
    for r in 0..m {
        for b in 0..kb {
            sa[b * m + r] = problem.sa[r * kb + b];
        }
    }
    let psa = upload(f32_bytes(&sa), (kb * m + (rows - m)) * 4)?;
    let sb: Vec<f32> = match f {
        PeerFamily::BpreShuffle { .. } => problem.sb.clone(),
        PeerFamily::Flatmm => {
            let mut t = vec![0f32; kb * nb];
            for j in 0..nb {
                for b in 0..kb {
                    t[b * nb + j] = problem.sb[j * kb + b];
                }
            }
            t
        }
    };
    let psb = upload(f32_bytes(&sb), sb.len() * 4)?;
    let pc = upload(&[], rows * n * 2)?;
    let kernarg_size = kern.meta.kernarg_segment_size as usize;
    let contract = |what: String| PeerError::Contract { kernel: kernel.symbol.clone(), what };
    let sa_bytes = ((kb * m + (rows - m)) * 4) as u64;
    let (kernarg, grid) = match f {
        PeerFamily::BpreShuffle { .. } => {
            let pbias = upload(f32_bytes(&problem.bias), n * 4)?;
            let args = BpreShuffleArgs {
                c: PtrSlot::new(pc),
                a: PtrSlot::new(pa),
                b: PtrSlot::new(pb),
                sa: PtrSlot::new(psa),
                sb: PtrSlot::new(psb),
                bias: PtrSlot::new(pbias),
                m: U32Slot::new(problem.m),
                n: U32Slot::new(problem.n),
                k: U32Slot::new(problem.k),
                lda: U32Slot::new(problem.k),
                ldb: U32Slot::new(problem.k),
                ldc: U32Slot::new(2 * problem.n),
                ks: U32Slot::new(problem.ks),
                scale_m: U32Slot::new(problem.m),
                scale_n: U32Slot::new(problem.n.div_ceil(128)),
                scale_k: U32Slot::new(problem.k.div_ceil(K_BLOCK)),
            };
            (bytemuck::bytes_of(&args).to_vec(), [problem.n / 128 * problem.ks, problem.m.div_ceil(f.tile_m()), 1])
        }
        PeerFamily::Flatmm => {
            let args =
                FlatmmArgs { a: pa, b: pb, sa: psa, sb: psb, d_f16: pc, k: problem.k as i32, n: problem.n as i32, m: problem.m as i32, ..Default::default() };
            (bytemuck::bytes_of(&args).to_vec(), [problem.n / 256, problem.m.div_ceil(f.tile_m()), 1])
        }
    };
    if kernarg_size != kernarg.len() {
        return Err(contract(format!("metadata kernarg_segment_size is {kernarg_size}, the contract's argument block is {} bytes", kernarg.len())));
    }
    let fixed = kern.descriptor.group_segment_fixed_size.max(kern.meta.group_segment_fixed_size);
    let dynamic_lds_bytes = PEER_LDS_BYTES.saturating_sub(fixed);
    Ok(PeerLaunch {
        config: LaunchConfig { grid, block: [BLOCK_THREADS, 1, 1], dynamic_lds_bytes, kernarg },
        c: pc,
        a: pa,
        b: pb,
        sa: (psa, sa_bytes),
        sb: psb,
        c_rows: rows as u32,
        m: problem.m,
        n: problem.n,
        output: f.output(),
        allocations: allocations.clone(),
    })
}

/// The exact product `C[m][n] = Σ_kb SA(m,kb)·SB(n/128,kb)·Σ_{k∈kb} A[m][k]·B[n][k] + bias[n]`
/// in f64 (`m × n`, row-major). Each 128-long FP8 dot product is exact in f64 (products of two
/// E4M3 values have ≤ 8 significant bits; 128 of them fit in 53), so the only roundings are the
/// f64 scale multiplications and block sums. Parallel over rows; O(M·N·K). A and B are
/// E4M3FNUZ (gfx942); [`reference_f64_kind`] takes the encoding.
pub fn reference_f64(p: &PeerProblem) -> Result<Vec<f64>, PeerError> {
    reference_f64_kind(p, F8Kind::Fp8Fnuz)
}

/// [`reference_f64`] with A and B decoded as `kind` (E4M3FN for the gfx950 builds).
pub fn reference_f64_kind(p: &PeerProblem, kind: F8Kind) -> Result<Vec<f64>, PeerError> {
    let (m, n, k) = (p.m as usize, p.n as usize, p.k as usize);
    let kb = k.div_ceil(K_BLOCK as usize);
    for (arg, got, expected) in
        [("a", p.a.len(), m * k), ("b", p.b.len(), n * k), ("sa", p.sa.len(), m * kb), ("sb", p.sb.len(), n.div_ceil(128) * kb), ("bias", p.bias.len(), n)]
    {
        if got != expected {
            return Err(PeerError::Length { arg, got, expected });
        }
    }
    let dec = |x: u8| f64::from(f8_to_f32(x, kind));
    let bf: Vec<f64> = p.b.par_iter().map(|&x| dec(x)).collect();
    let mut out = vec![0f64; m * n];
    out.par_chunks_mut(n.max(1)).enumerate().for_each(|(r, row)| {
        let a: Vec<f64> = p.a[r * k..(r + 1) * k].iter().map(|&x| dec(x)).collect();
        for (col, o) in row.iter_mut().enumerate() {
            let brow = &bf[col * k..(col + 1) * k];
            let mut acc = 0f64;
            for b in 0..kb {
                let lo = b * K_BLOCK as usize;
                let hi = (lo + K_BLOCK as usize).min(k);
                let dot: f64 = a[lo..hi].iter().zip(&brow[lo..hi]).map(|(x, y)| x * y).sum();
                acc += f64::from(p.sa[r * kb + b]) * f64::from(p.sb[(col / 128) * kb + b]) * dot;
            }
            *o = acc + f64::from(p.bias[col]);
        }
    });
    Ok(out)
}

/// DeepGEMM's accuracy metric (`calc_diff` in DeepGEMM's `deep_gemm/testing/numeric.py`):
/// `1 − 2·Σxy / Σ(x² + y²)` in f64, 0 when both are all zero. The `fp8gemm` crate has the same
/// function (`fp8gemm::reference::calc_diff`); this copy exists because the emulator cannot
/// depend on the host crate.
pub fn calc_diff<X: Copy + Into<f64>, Y: Copy + Into<f64>>(x: &[X], y: &[Y]) -> Result<f64, PeerError> {
    if x.len() != y.len() {
        return Err(PeerError::Length { arg: "y", got: y.len(), expected: x.len() });
    }
    let (mut xy, mut sq) = (0f64, 0f64);
    for (&a, &b) in x.iter().zip(y) {
        let (a, b) = (a.into(), b.into());
        xy += a * b;
        sq += a * a + b * b;
    }
    Ok(if sq == 0.0 { 0.0 } else { 1.0 - 2.0 * xy / sq })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measured table of any length is read whole (others run the calibration on files of
    /// the same format with other rows); an empty one is an error naming the file.
    #[test]
    fn measured_tables_of_any_length_are_read() {
        let dir = std::env::temp_dir().join(format!("amdgpu-emu-measured-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let head = "kernel,M,N,K,us,tflops,source\n";
        let row = |tm: u32, m: u32| format!("_ZN5aiter42fp8gemm_bf16_blockscale_BpreShuffle_{tm}x128E,{m},768,7168,10.0,1.0,test\n");
        std::fs::write(dir.join(MEASURED_CSV), format!("{head}{}{}{}", row(32, 100), row(64, 2000), row(96, 3000))).unwrap();
        let rows = measured_rows(&dir).unwrap();
        assert_eq!(
            rows.iter().map(|r| (r.family(), r.m)).collect::<Vec<_>>(),
            [
                (Some(PeerFamily::BpreShuffle { tm: 32 }), 100),
                (Some(PeerFamily::BpreShuffle { tm: 64 }), 2000),
                (Some(PeerFamily::BpreShuffle { tm: 96 }), 3000)
            ]
        );
        std::fs::write(dir.join(MEASURED_CSV), head).unwrap();
        let e = measured_rows(&dir).unwrap_err().to_string();
        assert!(e.contains(MEASURED_CSV) && e.contains("no data rows"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn preshuffle_matches_both_contracts() {
        let (n, k) = (32usize, 256usize);
        for nn in 0..n {
            for kk in 0..k {
                let bpre = ((nn / 16) * (k / 32) + kk / 32) * 512 + ((kk % 32) / 16) * 256 + (nn % 16) * 16 + kk % 16;
                // flatmm: view(N/16, 16, K/64, 4, 16).permute(0, 2, 3, 1, 4), row-major strides.
                let (n1, n0, k2, k1, k0) = (nn / 16, nn % 16, kk / 64, (kk % 64) / 16, kk % 16);
                let flat = (((n1 * (k / 64) + k2) * 4 + k1) * 16 + n0) * 16 + k0;
                assert_eq!(preshuffle_offset(nn, kk, k), bpre, "({nn},{kk})");
                assert_eq!(bpre, flat, "({nn},{kk})");
            }
        }
        let b: Vec<u8> = (0..n * k).map(|i| (i * 7 % 251) as u8).collect();
        let s = preshuffle_b(&b, n, k).unwrap();
        assert!(matches!(preshuffle_b(&b, n, 48), Err(PeerError::Shape { arg: "k", .. })));
        assert!(matches!(preshuffle_b(&b[1..], n, k), Err(PeerError::Length { .. })));
        for nn in 0..n {
            for kk in 0..k {
                assert_eq!(s[preshuffle_offset(nn, kk, k)], b[nn * k + kk]);
            }
        }
    }

    #[test]
    fn kernarg_layouts_match_the_contract() {
        assert_eq!(std::mem::size_of::<BpreShuffleArgs>(), 256);
        assert_eq!(std::mem::offset_of!(BpreShuffleArgs, bias), 0x50);
        assert_eq!(std::mem::offset_of!(BpreShuffleArgs, m), 0x60);
        assert_eq!(std::mem::offset_of!(BpreShuffleArgs, scale_k), 0xF0);
        assert_eq!(std::mem::size_of::<FlatmmArgs>(), 112);
        assert_eq!(std::mem::offset_of!(FlatmmArgs, d_f16), 48);
        assert_eq!(std::mem::offset_of!(FlatmmArgs, k), 88);
        assert_eq!(std::mem::offset_of!(FlatmmArgs, m), 96);
    }

    #[test]
    fn symbols_follow_itanium_mangling() {
        assert_eq!(PeerFamily::BpreShuffle { tm: 48 }.symbol(), "_ZN5aiter42fp8gemm_bf16_blockscale_BpreShuffle_48x128E");
        assert_eq!(PeerFamily::BpreShuffle { tm: 128 }.symbol(), "_ZN5aiter43fp8gemm_bf16_blockscale_BpreShuffle_128x128E");
    }

    #[test]
    fn generated_fp8_is_finite_and_nonzero() {
        for r in 0..=255u8 {
            let x = f8_to_f32(fp8_from_bits(r), F8Kind::Fp8Fnuz);
            assert!(x.is_finite() && x != 0.0 && x.abs() >= 1.0 / 16.0 && x.abs() <= 15.0, "{r:#x} -> {x}");
        }
        let a = PeerProblem::generate(3, 128, 256, 7);
        let b = PeerProblem::generate(3, 128, 256, 7);
        assert_eq!(a.a, b.a);
        assert_eq!(a.sa, b.sa);
        assert_ne!(a.a, PeerProblem::generate(3, 128, 256, 8).a);
    }

    #[test]
    fn calc_diff_values() {
        assert_eq!(calc_diff(&[1.0f64, 2.0], &[1.0f64, 2.0]).unwrap(), 0.0);
        assert_eq!(calc_diff(&[0.0f64], &[0.0f64]).unwrap(), 0.0);
        assert!((calc_diff(&[1.0f64], &[-1.0f64]).unwrap() - 2.0).abs() < 1e-15);
        assert!(matches!(calc_diff(&[1.0f64], &[1.0f64, 2.0]), Err(PeerError::Length { .. })));
    }

    #[test]
    fn missing_dir_is_an_error() {
        let e = load_peers(Path::new("/nonexistent/peers")).unwrap_err();
        assert!(matches!(e, PeerError::DirMissing { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent/peers"));
        let e = measured_rows(Path::new("/nonexistent/peers")).unwrap_err();
        assert!(matches!(e, PeerError::DirMissing { .. }), "{e}");
    }
}
