//! AMD's int8 GEMM code objects (`I8gemm_bf16_perTokenI8_BpreShuffle_<TM>x<TN>`, "I8gemm
//! peers") on the emulator: launch contract, operand layouts, the bit-exact reference and the
//! measured MI325X times.
//!
//! The code objects live outside the repository, in the peers directory ([`crate::peers`],
//! `FP8GEMM_PEERS_DIR`): `i8gemm/*.co` as they were when the MI325X rows were measured and
//! `i8gemm/current/*.co`, the later revisions ([`I8Revision`]). That directory's `README.md`
//! ("Family 1") is the contract this module follows:
//!
//! * Nine tiles ([`I8_TILES`]): TM ∈ {16, 32, 48, 64, 80, 96, 128, 160} with TN = 128, and
//!   112×256. Block 256, grid (N/TN · ks, ⌈M/TM⌉, 1); workgroup x = n_tile · ks + split.
//! * Kernarg ([`I8GemmArgs`], 208 B of 16-byte slots): C, A, B, SA, SB, BIAS pointers, then M, N,
//!   K, lda (bytes), ldb (= K), ldc (bytes = 2·N), ks. 112×256's metadata asks for 256 B (three
//!   more pointer slots it never loads): the block is zero-extended to the metadata's size.
//! * Operands: A int8 `[M, K]` row-major with pitch `lda` ≥ K bytes (the measured rows use
//!   lda = K + 128); B int8 `[N, K]` pre-shuffled exactly like the FP8 peers
//!   ([`crate::peers::preshuffle_b`]); SA f32 `[M]`, SB f32 `[N]`, BIAS f32 `[N]`.
//! * Output C bf16 `[M, N]`: `C[m,n] = bf16_trunc(fma(f32(acc)·SB[n], SA[m], bias[n]))` with
//!   `acc = Σ_k A[m,k]·B[n,k]` exact in i32 (`v_mfma_i32_16x16x32_i8`), `f32(acc)` rounded to
//!   nearest even (`v_cvt_f32_i32`), the product rounded once (`v_pk_mul_f32`), the fused
//!   multiply-add rounded once (`v_fma_f32` / `v_pk_fma_f32`) and the upper half kept
//!   (`v_perm_b32` selector 0x07060302: truncation). That is the order of the TN = 128 tiles;
//!   **112×256 multiplies by the scales the other way round**, `fma(f32(acc)·SA[m], SB[n],
//!   bias[n])` ([`ScaleOrder`]): its `v_pk_mul_f32` takes the SA values (`buffer_load_dword v116`
//!   from the kernarg-0x30 resource) and its `v_pk_fma_f32` the SB and bias values broadcast per
//!   row with `v_mov_b32_dpp … row_newbcast` (from v130 / v131, loaded through the 0x40 / 0x50
//!   resources). The two orders round differently in about one element in 10^5 after
//!   truncation. [`reference`] computes exactly what each tile does.
//! * Split-K (ks > 1, every tile but 112×256): split s covers K range
//!   `[s·c, min((s+1)·c, K))` with `c = ⌈⌈K/ks⌉/128⌉·128` ([`split_ranges`]); each split stores
//!   its own truncated partial with `global_atomic_pk_add_bf16` onto a zeroed C; bias is added
//!   by split 0 only. The bf16 atomic add is modelled by the emulator as the f32 sum of the two
//!   bf16 values rounded to nearest even, so with ks ≥ 3 the result depends on the (unspecified)
//!   order of the splits' atomics: [`I8Reference::split_candidates`] gives every order's value.
//! * Rows ≥ M of the last tile: the kernels bound A, SA and C with buffer num_records, so loads
//!   return 0 and stores are dropped; allocations of exactly M rows (`M · lda` bytes of A) stay
//!   in bounds under memcheck.
//!
//! Use: [`peers_dir`](crate::peers::peers_dir) → [`load_i8_peer`] → [`I8Problem::generate`] →
//! [`prepare_i8`] → [`crate::exec::launch`] → [`I8Launch::read_c_bits`] against [`reference`].
//! [`i8_measured_rows`] parses `measured_i8gemm_mi325x.csv` by its header.

use std::ops::Range;
use std::path::{Path, PathBuf};

use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

use crate::exec::LaunchConfig;
use crate::loader::{CodeObject, Kernel};
use crate::memory::DeviceMemory;
use crate::peers::{BLOCK_THREADS, K_BLOCK, PEER_LDS_BYTES, PeerError, PtrSlot, SplitMix64, U32Slot, preshuffle_b};

/// Subdirectory of the peers directory holding the I8gemm objects as measured.
pub const I8_DIR: &str = "i8gemm";
/// Subdirectory holding the later revisions.
pub const I8_CURRENT_DIR: &str = "i8gemm/current";
/// File name of the measured MI325X I8gemm times inside the peers directory.
pub const I8_MEASURED_CSV: &str = "measured_i8gemm_mi325x.csv";
/// The nine (TM, TN) tiles, by increasing TM with 112×256 last.
pub const I8_TILES: [I8Tile; 9] = [
    I8Tile { tm: 16, tn: 128 },
    I8Tile { tm: 32, tn: 128 },
    I8Tile { tm: 48, tn: 128 },
    I8Tile { tm: 64, tn: 128 },
    I8Tile { tm: 80, tn: 128 },
    I8Tile { tm: 96, tn: 128 },
    I8Tile { tm: 128, tn: 128 },
    I8Tile { tm: 160, tn: 128 },
    I8Tile { tm: 112, tn: 256 },
];

/// Which build of the I8gemm objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum I8Revision {
    /// `i8gemm/`: the objects the MI325X rows were measured with.
    Measured,
    /// `i8gemm/current/`: the later revisions (64-bit C base, K-tail guards, ks > 1 fix).
    Current,
}

impl I8Revision {
    /// Both revisions.
    pub const ALL: [I8Revision; 2] = [I8Revision::Measured, I8Revision::Current];
    /// The subdirectory of the peers directory.
    pub fn subdir(self) -> &'static str {
        match self {
            I8Revision::Measured => I8_DIR,
            I8Revision::Current => I8_CURRENT_DIR,
        }
    }
}

/// One I8gemm tile: TM rows × TN columns of C per workgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct I8Tile {
    /// M tile.
    pub tm: u32,
    /// N tile (N must be a multiple of it).
    pub tn: u32,
}

impl I8Tile {
    /// `I8gemm_bf16_perTokenI8_BpreShuffle_<TM>x<TN>`.
    pub fn name(self) -> String {
        format!("I8gemm_bf16_perTokenI8_BpreShuffle_{}x{}", self.tm, self.tn)
    }
    /// The code object's file name.
    pub fn file_name(self) -> String {
        format!("{}.co", self.name())
    }
    /// The kernel symbol, Itanium-mangled `aiter::<name>`.
    pub fn symbol(self) -> String {
        let name = self.name();
        format!("_ZN5aiter{}{name}E", name.len())
    }
    /// Whether the kernel reads ks (split-K); 112×256 does not.
    pub fn supports_split_k(self) -> bool {
        self.tn != 256
    }
    /// The tile whose [`I8Tile::symbol`] is `symbol`.
    pub fn from_symbol(symbol: &str) -> Option<I8Tile> {
        I8_TILES.into_iter().find(|t| t.symbol() == symbol)
    }
}

/// One loaded I8gemm code object.
#[derive(Clone, Debug)]
pub struct I8PeerKernel {
    /// The tile.
    pub tile: I8Tile,
    /// Which build.
    pub revision: I8Revision,
    /// The file it came from.
    pub path: PathBuf,
    /// The kernel symbol.
    pub symbol: String,
    /// The parsed code object.
    pub code_object: CodeObject,
    entry: Kernel,
}

impl I8PeerKernel {
    /// The kernel inside [`I8PeerKernel::code_object`].
    pub fn kernel(&self) -> &Kernel {
        &self.entry
    }
}

/// Loads the `tile` kernel of `revision` from the peers directory `dir`.
pub fn load_i8_peer(dir: &Path, tile: I8Tile, revision: I8Revision) -> Result<I8PeerKernel, PeerError> {
    let symbol = tile.symbol();
    let (path, code_object, entry) = crate::peers::load_code_object(dir, &Path::new(revision.subdir()).join(tile.file_name()), &symbol)?;
    Ok(I8PeerKernel { tile, revision, path, symbol, code_object, entry })
}

/// Loads all nine kernels of `revision`.
pub fn load_i8_peers(dir: &Path, revision: I8Revision) -> Result<Vec<I8PeerKernel>, PeerError> {
    I8_TILES.into_iter().map(|t| load_i8_peer(dir, t, revision)).collect()
}

/// An int8 GEMM problem in logical layouts ([`prepare_i8`] applies the pre-shuffle and pitch).
#[derive(Clone, Debug)]
pub struct I8Problem {
    /// Rows of A and C.
    pub m: u32,
    /// Rows of B, columns of C.
    pub n: u32,
    /// Inner dimension.
    pub k: u32,
    /// Row pitch of A on the device, in bytes (≥ k; the measured rows use k + 128).
    pub lda: u32,
    /// A, `m × k` row-major (logical, pitch k).
    pub a: Vec<i8>,
    /// B, `n × k` row-major (logical; [`prepare_i8`] pre-shuffles it).
    pub b: Vec<i8>,
    /// Per-token scales, `m` values.
    pub sa: Vec<f32>,
    /// Per-channel scales, `n` values.
    pub sb: Vec<f32>,
    /// Bias, `n` values.
    pub bias: Vec<f32>,
    /// Split-K factor ≥ 1.
    pub ks: u32,
}

/// K ranges of the `ks` splits of `k`: split s covers `[s·c, min((s+1)·c, k))` with
/// `c = ⌈⌈k/ks⌉/128⌉·128` (the kernels' own arithmetic). Ranges past `k` are empty.
pub fn split_ranges(k: u32, ks: u32) -> Vec<Range<u32>> {
    let ks = ks.max(1);
    let c = k.div_ceil(ks).div_ceil(K_BLOCK) * K_BLOCK;
    (0..ks).map(|s| (s * c).min(k)..((s + 1) * c).min(k)).collect()
}

impl I8Problem {
    /// Deterministic random operands: int8 values uniform in [−127, 127] (the range of
    /// per-token quantisation), positive scales in [2^-8, 2^-6), zero bias, lda = k, ks = 1.
    /// Dimensions are validated by [`prepare_i8`].
    pub fn generate(m: u32, n: u32, k: u32, seed: u64) -> I8Problem {
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let fill = |len: usize, seed: u64| -> Vec<i8> {
            let mut v = vec![0i8; len];
            v.par_chunks_mut(1 << 16).enumerate().for_each(|(c, chunk)| {
                let mut g = SplitMix64::new(seed ^ (c as u64).wrapping_mul(0xA076_1D64_78BD_642F));
                for x in chunk {
                    *x = (((g.next_u64() >> 32) % 255) as i32 - 127) as i8;
                }
            });
            v
        };
        let scales = |len: usize, seed: u64| -> Vec<f32> {
            let mut g = SplitMix64::new(seed);
            (0..len).map(|_| (1.0 + (g.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2f32.powi(-8 + (g.next_u64() % 2) as i32)).collect()
        };
        I8Problem {
            m,
            n,
            k,
            lda: k,
            a: fill(mu * ku, seed.wrapping_mul(3).wrapping_add(1)),
            b: fill(nu * ku, seed.wrapping_mul(3).wrapping_add(2)),
            sa: scales(mu, seed.wrapping_mul(5).wrapping_add(3)),
            sb: scales(nu, seed.wrapping_mul(5).wrapping_add(4)),
            bias: vec![0.0; nu],
            ks: 1,
        }
    }

    /// Checks the dimensions and operand lengths against `tile`'s contract.
    pub fn validate(&self, tile: I8Tile) -> Result<(), PeerError> {
        let shape = |arg: &'static str, value: u64, expected: String| PeerError::Shape { kernel: tile.symbol(), arg, value, expected };
        if self.m == 0 || self.m > i32::MAX as u32 {
            return Err(shape("m", self.m.into(), format!("1..={}", i32::MAX)));
        }
        if self.n == 0 || !self.n.is_multiple_of(tile.tn) || self.n > i32::MAX as u32 / 2 {
            return Err(shape("n", self.n.into(), format!("a positive multiple of {} (2·n must fit i32)", tile.tn)));
        }
        if self.k == 0 || !self.k.is_multiple_of(K_BLOCK) || self.k > i32::MAX as u32 {
            return Err(shape("k", self.k.into(), format!("a positive multiple of {K_BLOCK}")));
        }
        if self.lda < self.k || self.lda > i32::MAX as u32 {
            return Err(shape("lda", self.lda.into(), format!("at least k = {} bytes", self.k)));
        }
        if self.ks == 0 || (self.ks > 1 && !tile.supports_split_k()) {
            return Err(shape("ks", self.ks.into(), if tile.supports_split_k() { "at least 1".into() } else { "1 (this tile has no split-K)".into() }));
        }
        if split_ranges(self.k, self.ks).iter().any(|r| r.is_empty()) {
            return Err(shape("ks", self.ks.into(), format!("small enough that each of the splits of k = {} is non-empty", self.k)));
        }
        if (self.n / tile.tn).checked_mul(self.ks).is_none() {
            return Err(shape("ks", self.ks.into(), "small enough that n/TN · ks fits the grid".into()));
        }
        let (m, n, k) = (self.m as usize, self.n as usize, self.k as usize);
        let mk = m.checked_mul(k).ok_or_else(|| shape("m", self.m.into(), "m·k addressable".into()))?;
        let nk = n.checked_mul(k).ok_or_else(|| shape("n", self.n.into(), "n·k addressable".into()))?;
        if (m as u64).checked_mul(u64::from(self.lda)).is_none_or(|b| b > u64::from(u32::MAX)) {
            return Err(shape("lda", self.lda.into(), "m·lda < 2^32 (buffer num_records is 32-bit)".into()));
        }
        for (arg, got, expected) in
            [("a", self.a.len(), mk), ("b", self.b.len(), nk), ("sa", self.sa.len(), m), ("sb", self.sb.len(), n), ("bias", self.bias.len(), n)]
        {
            if got != expected {
                return Err(PeerError::Length { arg, got, expected });
            }
        }
        Ok(())
    }
}

/// The 208-byte I8gemm kernarg (contract offsets 0x00…0xC0, 16-byte slots).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct I8GemmArgs {
    /// 0x00: C (bf16 out).
    pub c: PtrSlot,
    /// 0x10: A.
    pub a: PtrSlot,
    /// 0x20: pre-shuffled B.
    pub b: PtrSlot,
    /// 0x30: SA (f32 `[M]`).
    pub sa: PtrSlot,
    /// 0x40: SB (f32 `[N]`).
    pub sb: PtrSlot,
    /// 0x50: bias (f32 `[N]`).
    pub bias: PtrSlot,
    /// 0x60: M.
    pub m: U32Slot,
    /// 0x70: N.
    pub n: U32Slot,
    /// 0x80: K.
    pub k: U32Slot,
    /// 0x90: lda in bytes.
    pub lda: U32Slot,
    /// 0xA0: ldb (= K).
    pub ldb: U32Slot,
    /// 0xB0: ldc in bytes (= 2·N).
    pub ldc: U32Slot,
    /// 0xC0: split-K factor.
    pub ks: U32Slot,
}

/// Operands uploaded and the launch prepared by [`prepare_i8`].
#[derive(Clone, Debug)]
pub struct I8Launch {
    /// Grid, block, LDS and kernarg.
    pub config: LaunchConfig,
    /// Device address of C (`m × n` bf16, zero-filled before the launch).
    pub c: u64,
    /// Device address of A (`m · lda` bytes).
    pub a: u64,
    /// M.
    pub m: u32,
    /// N.
    pub n: u32,
    /// Every allocation made, for [`I8Launch::free`].
    pub allocations: Vec<u64>,
}

impl I8Launch {
    /// Reads C as bf16 bit patterns (`m × n`, row-major).
    pub fn read_c_bits(&self, mem: &DeviceMemory) -> Result<Vec<u16>, PeerError> {
        let mut raw = vec![0u8; self.m as usize * self.n as usize * 2];
        mem.read(self.c, &mut raw)?;
        Ok(raw.chunks_exact(2).map(|h| u16::from_le_bytes([h[0], h[1]])).collect())
    }
    /// Frees every allocation [`prepare_i8`] made.
    pub fn free(&self, mem: &DeviceMemory) -> Result<(), PeerError> {
        for &p in &self.allocations {
            mem.free(p)?;
        }
        Ok(())
    }
}

/// Validates `problem`, uploads the operands with exact sizes (A `m · lda` bytes with the pitch
/// padding zeroed, B pre-shuffled, SA/SB/bias, C `m × n` bf16 zero-filled — the memset a split-K
/// launch needs), and returns the launch.
pub fn prepare_i8(mem: &DeviceMemory, kernel: &I8PeerKernel, problem: &I8Problem) -> Result<I8Launch, PeerError> {
    problem.validate(kernel.tile)?;
    let mut allocations = Vec::new();
    let r = prepare_into(mem, kernel, problem, &mut allocations);
    if r.is_err() {
        // Best effort: the first error is the one reported.
        for &p in &allocations {
            let _ = mem.free(p);
        }
    }
    r
}

fn prepare_into(mem: &DeviceMemory, kernel: &I8PeerKernel, p: &I8Problem, allocations: &mut Vec<u64>) -> Result<I8Launch, PeerError> {
    let tile = kernel.tile;
    let (m, n, k, lda) = (p.m as usize, p.n as usize, p.k as usize, p.lda as usize);
    let mut upload = |bytes: &[u8]| -> Result<u64, PeerError> {
        let ptr = mem.alloc(bytes.len() as u64)?;
        allocations.push(ptr);
        mem.write(ptr, bytes)?;
        Ok(ptr)
    };
    let a_bytes: &[u8] = bytemuck::cast_slice(&p.a);
    let mut a = vec![0u8; m * lda];
    for (dst, src) in a.chunks_exact_mut(lda).zip(a_bytes.chunks_exact(k)) {
        dst[..k].copy_from_slice(src);
    }
    let pa = upload(&a)?;
    let pb = upload(&preshuffle_b(bytemuck::cast_slice(&p.b), n, k)?)?;
    let psa = upload(bytemuck::cast_slice(&p.sa))?;
    let psb = upload(bytemuck::cast_slice(&p.sb))?;
    let pbias = upload(bytemuck::cast_slice(&p.bias))?;
    let pc = upload(&vec![0u8; m * n * 2])?;
    let slot = |ptr: u64| PtrSlot { ptr, pad: 0 };
    let val = |value: u32| U32Slot { value, pad: [0; 3] };
    let args = I8GemmArgs {
        c: slot(pc),
        a: slot(pa),
        b: slot(pb),
        sa: slot(psa),
        sb: slot(psb),
        bias: slot(pbias),
        m: val(p.m),
        n: val(p.n),
        k: val(p.k),
        lda: val(p.lda),
        ldb: val(p.k),
        ldc: val(2 * p.n),
        ks: val(p.ks),
    };
    let mut kernarg = bytemuck::bytes_of(&args).to_vec();
    let kern = kernel.kernel();
    let want = kern.meta.kernarg_segment_size as usize;
    // 112x256 declares 256 bytes (three unused pointer slots); the others 208.
    if want != kernarg.len() && want != 256 {
        return Err(PeerError::Contract {
            kernel: kernel.symbol.clone(),
            what: format!("metadata kernarg_segment_size is {want}, the contract's argument block is {} (or 256) bytes", kernarg.len()),
        });
    }
    kernarg.resize(want, 0);
    let fixed = kern.descriptor.group_segment_fixed_size.max(kern.meta.group_segment_fixed_size);
    let grid = [p.n / tile.tn * p.ks, p.m.div_ceil(tile.tm), 1];
    Ok(I8Launch {
        config: LaunchConfig { grid, block: [BLOCK_THREADS, 1, 1], dynamic_lds_bytes: PEER_LDS_BYTES.saturating_sub(fixed), kernarg },
        c: pc,
        a: pa,
        m: p.m,
        n: p.n,
        allocations: allocations.clone(),
    })
}

/// bf16 truncation of `x` (the upper 16 bits, as `v_perm_b32` with selector 0x07060302 keeps).
#[inline]
pub fn bf16_trunc_bits(x: f32) -> u16 {
    (x.to_bits() >> 16) as u16
}

/// Which scale an I8gemm epilogue multiplies the converted accumulator by first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleOrder {
    /// `fma(f32(acc)·SB[n], SA[m], bias[n])` (the TN = 128 tiles).
    SbThenSa,
    /// `fma(f32(acc)·SA[m], SB[n], bias[n])` (112×256).
    SaThenSb,
}

impl I8Tile {
    /// The order of the scale multiplications in this tile's epilogue (from the disassembly, see
    /// the module docs).
    pub fn scale_order(self) -> ScaleOrder {
        if self.tn == 256 { ScaleOrder::SaThenSb } else { ScaleOrder::SbThenSa }
    }
}

/// The epilogue of one output element in f32: `v_cvt_f32_i32` (round to nearest even, as
/// Rust's `as f32`), one rounded product by the first scale, then one fused multiply-add by the
/// second scale plus the bias.
#[inline]
pub fn epilogue(acc: i32, sa: f32, sb: f32, bias: f32, order: ScaleOrder) -> f32 {
    match order {
        ScaleOrder::SbThenSa => (acc as f32 * sb).mul_add(sa, bias),
        ScaleOrder::SaThenSb => (acc as f32 * sa).mul_add(sb, bias),
    }
}

/// The exact result of an I8gemm launch: for each split, the bf16 partial it stores.
#[derive(Clone, Debug)]
pub struct I8Reference {
    /// `partials[s][m·n + j]`: split s's `bf16_trunc(epilogue(acc_s, SA[m], SB[j], bias_s[j], order))`
    /// with `bias_s` = bias for s = 0 and 0 otherwise. With ks = 1 this is C.
    pub partials: Vec<Vec<u16>>,
}

impl I8Reference {
    /// C for ks = 1, or for ks = 2 (the one bf16 atomic sum `0 + p0 + p1`, order-free).
    pub fn c_bits(&self) -> Option<Vec<u16>> {
        match self.partials.len() {
            1 => Some(self.partials[0].clone()),
            2 => Some(self.partials[0].iter().zip(&self.partials[1]).map(|(&x, &y)| bf16_add(bf16_add(0, x), y)).collect()),
            _ => None,
        }
    }
    /// Every value element `i` of C can take when the splits' atomics arrive in any order onto a
    /// zero-filled C (sorted, deduplicated).
    pub fn split_candidates(&self, i: usize) -> Vec<u16> {
        let vals: Vec<u16> = self.partials.iter().map(|p| p[i]).collect();
        let mut out = Vec::new();
        permute(&mut vals.clone(), 0, &mut |order| out.push(order.iter().fold(0u16, |acc, &x| bf16_add(acc, x))));
        out.sort_unstable();
        out.dedup();
        out
    }
}

fn permute(v: &mut [u16], at: usize, f: &mut impl FnMut(&[u16])) {
    if at == v.len() {
        f(v);
        return;
    }
    for i in at..v.len() {
        v.swap(at, i);
        permute(v, at + 1, f);
        v.swap(at, i);
    }
}

/// `global_atomic_pk_add_bf16` on one half as the emulator models it: the f32 sum of the two
/// bf16 values rounded to bf16, nearest even.
#[inline]
pub fn bf16_add(a: u16, b: u16) -> u16 {
    half::bf16::from_f32(half::bf16::from_bits(a).to_f32() + half::bf16::from_bits(b).to_f32()).to_bits()
}

/// The bit-exact result of `p` on `tile` ([`I8Reference`]), rows `rows` only (`0..m` for all of
/// C): exact i32 dot products per split, then [`epilogue`] in the tile's [`ScaleOrder`] and
/// truncation. Parallel over rows; O(|rows|·N·K).
pub fn reference_rows(p: &I8Problem, tile: I8Tile, rows: Range<u32>) -> Result<I8Reference, PeerError> {
    let order = tile.scale_order();
    let (n, k) = (p.n as usize, p.k as usize);
    for (arg, got, expected) in
        [("a", p.a.len(), p.m as usize * k), ("b", p.b.len(), n * k), ("sa", p.sa.len(), p.m as usize), ("sb", p.sb.len(), n), ("bias", p.bias.len(), n)]
    {
        if got != expected {
            return Err(PeerError::Length { arg, got, expected });
        }
    }
    if rows.end > p.m || rows.start > rows.end {
        return Err(PeerError::Length { arg: "rows", got: rows.end as usize, expected: p.m as usize });
    }
    let splits = split_ranges(p.k, p.ks);
    let nrows = (rows.end - rows.start) as usize;
    let mut partials = vec![vec![0u16; nrows * n]; splits.len()];
    for (s, (range, out)) in splits.iter().zip(&mut partials).enumerate() {
        let (lo, hi) = (range.start as usize, range.end as usize);
        out.par_chunks_mut(n.max(1)).enumerate().for_each(|(r, row)| {
            let mi = rows.start as usize + r;
            let a = &p.a[mi * k + lo..mi * k + hi];
            for (j, o) in row.iter_mut().enumerate() {
                let b = &p.b[j * k + lo..j * k + hi];
                let acc = a.iter().zip(b).fold(0i32, |s, (&x, &y)| s.wrapping_add(i32::from(x) * i32::from(y)));
                let bias = if s == 0 { p.bias[j] } else { 0.0 };
                *o = bf16_trunc_bits(epilogue(acc, p.sa[mi], p.sb[j], bias, order));
            }
        });
    }
    Ok(I8Reference { partials })
}

/// [`reference_rows`] over all of C.
pub fn reference(p: &I8Problem, tile: I8Tile) -> Result<I8Reference, PeerError> {
    reference_rows(p, tile, 0..p.m)
}

/// One row of [`I8_MEASURED_CSV`]: an I8gemm kernel time measured on an MI325X.
#[derive(Clone, Debug, PartialEq)]
pub struct I8MeasuredRow {
    /// Kernel symbol.
    pub kernel: String,
    /// The tile of [`I8MeasuredRow::kernel`].
    pub tile: I8Tile,
    /// M.
    pub m: u32,
    /// N.
    pub n: u32,
    /// K.
    pub k: u32,
    /// Measured time in microseconds.
    pub us: f64,
    /// 2·M·N·K / time in TFLOPS, as the file gives it.
    pub tflops: f64,
    /// Split-K factor.
    pub split_k: u32,
    /// A's row pitch in bytes.
    pub lda_bytes: u32,
    /// Folder of the code objects measured (relative to the peers directory, e.g. `i8gemm/`).
    pub code_objects: String,
}

/// Parses `dir/measured_i8gemm_mi325x.csv`: columns are found by header name (`kernel`, `M`,
/// `N`, `K`, `us`, `tflops`, `splitK`, `lda_bytes`, `code_objects`; others are ignored), every
/// non-empty line is a row, each row's kernel must be one of [`I8_TILES`]. At least one row.
pub fn i8_measured_rows(dir: &Path) -> Result<Vec<I8MeasuredRow>, PeerError> {
    if !dir.is_dir() {
        return Err(PeerError::DirMissing { path: dir.to_path_buf(), source_of: "argument".into() });
    }
    let path = dir.join(I8_MEASURED_CSV);
    let text = std::fs::read_to_string(&path).map_err(|source| PeerError::Io { path: path.clone(), source })?;
    parse_i8_measured(&text, &path)
}

/// [`i8_measured_rows`] on the text of the file (`path` only names it in errors).
pub fn parse_i8_measured(text: &str, path: &Path) -> Result<Vec<I8MeasuredRow>, PeerError> {
    let err = |line: usize, msg: String| PeerError::Csv { path: path.to_path_buf(), line, msg };
    let mut lines = text.lines().enumerate();
    let header: Vec<&str> = lines.next().map(|(_, h)| h.split(',').map(str::trim).collect()).unwrap_or_default();
    let col = |name: &str| header.iter().position(|h| *h == name).ok_or_else(|| err(1, format!("no column `{name}` in header `{}`", header.join(","))));
    let (ck, cm, cn, ckk, cus, ctf, csk, clda, cco) =
        (col("kernel")?, col("M")?, col("N")?, col("K")?, col("us")?, col("tflops")?, col("splitK")?, col("lda_bytes")?, col("code_objects")?);
    let mut rows = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != header.len() {
            return Err(err(i + 1, format!("{} fields, the header has {}", f.len(), header.len())));
        }
        let int = |j: usize, name: &str| f[j].parse::<u32>().map_err(|e| err(i + 1, format!("{name} `{}`: {e}", f[j])));
        let flt = |j: usize, name: &str| f[j].parse::<f64>().map_err(|e| err(i + 1, format!("{name} `{}`: {e}", f[j])));
        let kernel = f[ck].to_string();
        let tile = I8Tile::from_symbol(&kernel).ok_or_else(|| err(i + 1, format!("kernel `{kernel}` is not an I8gemm peer")))?;
        rows.push(I8MeasuredRow {
            kernel,
            tile,
            m: int(cm, "M")?,
            n: int(cn, "N")?,
            k: int(ckk, "K")?,
            us: flt(cus, "us")?,
            tflops: flt(ctf, "tflops")?,
            split_k: int(csk, "splitK")?,
            lda_bytes: int(clda, "lda_bytes")?,
            code_objects: f[cco].to_string(),
        });
    }
    if rows.is_empty() {
        return Err(err(1, "no data rows".into()));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernarg_layout_matches_the_contract() {
        assert_eq!(std::mem::size_of::<I8GemmArgs>(), 208);
        assert_eq!(std::mem::offset_of!(I8GemmArgs, bias), 0x50);
        assert_eq!(std::mem::offset_of!(I8GemmArgs, m), 0x60);
        assert_eq!(std::mem::offset_of!(I8GemmArgs, lda), 0x90);
        assert_eq!(std::mem::offset_of!(I8GemmArgs, ks), 0xC0);
    }

    #[test]
    fn symbols_and_files() {
        let t = I8Tile { tm: 16, tn: 128 };
        assert_eq!(t.symbol(), "_ZN5aiter41I8gemm_bf16_perTokenI8_BpreShuffle_16x128E");
        assert_eq!(I8Tile { tm: 112, tn: 256 }.symbol(), "_ZN5aiter42I8gemm_bf16_perTokenI8_BpreShuffle_112x256E");
        assert_eq!(t.file_name(), "I8gemm_bf16_perTokenI8_BpreShuffle_16x128.co");
        for t in I8_TILES {
            assert_eq!(I8Tile::from_symbol(&t.symbol()), Some(t));
        }
        assert_eq!(I8Tile::from_symbol("_ZN5aiter41I8gemm_bf16_perTokenI8_BpreShuffle_17x128E"), None);
    }

    #[test]
    fn split_ranges_follow_the_kernel_arithmetic() {
        assert_eq!(split_ranges(512, 1), vec![0..512]);
        assert_eq!(split_ranges(512, 2), vec![0..256, 256..512]);
        // ⌈384/2⌉ = 192 → 256 per split: the second split is shorter.
        assert_eq!(split_ranges(384, 2), vec![0..256, 256..384]);
        assert_eq!(split_ranges(640, 3), vec![0..256, 256..512, 512..640]);
        // ⌈256/3⌉ = 86 → 128: the third split is empty (refused by validate).
        assert_eq!(split_ranges(256, 3), vec![0..128, 128..256, 256..256]);
    }

    #[test]
    fn epilogue_rounds_in_the_kernels_order() {
        // f32(2^24 + 1) rounds to 2^24 (nearest even).
        assert_eq!(epilogue((1 << 24) + 1, 1.0, 1.0, 0.0, ScaleOrder::SbThenSa), 16_777_216.0);
        // Truncation, not rounding: 1 + 2^-8 + 2^-9 keeps the upper half 0x3F80.
        assert_eq!(bf16_trunc_bits(1.0 + 2f32.powi(-8) + 2f32.powi(-9)), 0x3F80);
        assert_eq!(bf16_trunc_bits(-1.5), 0xBFC0);
        // One rounding for the FMA: x·sa + bias with x·sa not representable.
        let x = epilogue(3, 1.0 / 3.0, 1.0, 1.0, ScaleOrder::SbThenSa);
        assert_eq!(x, (3.0f32).mul_add(1.0 / 3.0, 1.0));
        // The two orders differ: (7·0.1)·0.3 and (7·0.3)·0.1 round differently in f32.
        let (a, b) = (epilogue(7, 0.3, 0.1, 0.0, ScaleOrder::SbThenSa), epilogue(7, 0.3, 0.1, 0.0, ScaleOrder::SaThenSb));
        assert_eq!(a, (7.0f32 * 0.1) * 0.3);
        assert_eq!(b, (7.0f32 * 0.3) * 0.1);
        assert_eq!(I8Tile { tm: 112, tn: 256 }.scale_order(), ScaleOrder::SaThenSb);
        assert_eq!(I8Tile { tm: 16, tn: 128 }.scale_order(), ScaleOrder::SbThenSa);
    }

    #[test]
    fn reference_is_exact_on_a_small_problem() {
        let mut p = I8Problem::generate(3, 128, 256, 5);
        p.bias = (0..128).map(|j| j as f32 / 8.0).collect();
        let t = I8Tile { tm: 16, tn: 128 };
        let r = reference(&p, t).unwrap();
        for mi in 0..3 {
            for j in 0..128 {
                let acc: i64 = (0..256).map(|kk| i64::from(p.a[mi * 256 + kk]) * i64::from(p.b[j * 256 + kk])).sum();
                let want = bf16_trunc_bits(((acc as i32) as f32 * p.sb[j]).mul_add(p.sa[mi], p.bias[j]));
                assert_eq!(r.partials[0][mi * 128 + j], want, "C[{mi}][{j}]");
            }
        }
        assert!(p.a.iter().all(|&x| x >= -127) && p.a.iter().any(|&x| x == 127 || x == -127));
        p.ks = 2;
        let r2 = reference(&p, t).unwrap();
        assert_eq!(r2.partials.len(), 2);
        assert_eq!(r2.split_candidates(5), vec![r2.c_bits().unwrap()[5]]);
    }

    #[test]
    fn csv_parser_reads_columns_by_name() {
        let text = "splitK,kernel,M,N,K,us,tflops,lda_bytes,code_objects,extra\n\
                    1,_ZN5aiter41I8gemm_bf16_perTokenI8_BpreShuffle_16x128E,64,1536,5120,16.7759,60.00,5248,i8gemm/,x\n";
        let rows = parse_i8_measured(text, Path::new("t.csv")).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].tile, I8Tile { tm: 16, tn: 128 });
        assert_eq!((rows[0].m, rows[0].n, rows[0].k, rows[0].split_k, rows[0].lda_bytes), (64, 1536, 5120, 1, 5248));
        let bad = "kernel,M,N,K,us,tflops,splitK,lda_bytes\n";
        assert!(matches!(parse_i8_measured(bad, Path::new("t.csv")), Err(PeerError::Csv { line: 1, .. })));
        let bad = "kernel,M,N,K,us,tflops,splitK,lda_bytes,code_objects\nfoo,1,2,3,4,5,1,3,x\n";
        assert!(matches!(parse_i8_measured(bad, Path::new("t.csv")), Err(PeerError::Csv { line: 2, .. })));
        let bad = "kernel,M,N,K,us,tflops,splitK,lda_bytes,code_objects\n";
        assert!(matches!(parse_i8_measured(bad, Path::new("t.csv")), Err(PeerError::Csv { .. })));
    }

    #[test]
    fn bad_problems_are_typed_errors() {
        let t = I8Tile { tm: 32, tn: 128 };
        let big = I8Tile { tm: 112, tn: 256 };
        assert!(matches!(I8Problem::generate(8, 100, 128, 1).validate(t), Err(PeerError::Shape { arg: "n", value: 100, .. })));
        assert!(matches!(I8Problem::generate(8, 128, 100, 1).validate(t), Err(PeerError::Shape { arg: "k", value: 100, .. })));
        assert!(matches!(I8Problem::generate(0, 128, 128, 1).validate(t), Err(PeerError::Shape { arg: "m", .. })));
        assert!(matches!(I8Problem::generate(8, 128, 128, 1).validate(big), Err(PeerError::Shape { arg: "n", value: 128, .. })));
        let mut q = I8Problem::generate(8, 256, 256, 1);
        q.ks = 2;
        assert!(q.validate(t).is_ok());
        assert!(matches!(q.validate(big), Err(PeerError::Shape { arg: "ks", value: 2, .. })));
        q.ks = 3;
        assert!(matches!(q.validate(t), Err(PeerError::Shape { arg: "ks", value: 3, .. })));
        let mut q = I8Problem::generate(8, 128, 256, 1);
        q.lda = 255;
        assert!(matches!(q.validate(t), Err(PeerError::Shape { arg: "lda", value: 255, .. })));
        let mut q = I8Problem::generate(8, 128, 256, 1);
        q.sb.pop();
        assert!(matches!(q.validate(t), Err(PeerError::Length { arg: "sb", .. })));
    }
}
