//! Pure index and tile math of the dense FP8 GEMM kernels ([`crate::dense`]), shared by the device
//! code and the host (launch configuration, tests). Nothing here touches memory.
//!
//! # Tiling
//!
//! A workgroup of [`THREADS`] work-items (4 waves) computes one `BM × BN` tile of `D`; the waves are
//! arranged `WAVES_M × WAVES_N = 2 × 2`, each owning a `(BM/2) × (BN/2)` sub-tile made of 16×16
//! MFMA fragments. K is walked in whole 128-wide scale blocks ([`SCALE_BLOCK_K`]): the dense and
//! m-grouped kernels hold one block of the A tile (`BM` rows) followed by one block of the B tile
//! (`BN` rows) in LDS, each row 128 FP8 values = 128 B = eight 16-byte chunks
//! ([`lds_bytes`]`(BM, BN)` = `(BM + BN) · 128` bytes; the next block is prefetched into
//! registers, [`DenseTile::prefetch_depth`] blocks ahead). (The K-grouped kernels of
//! [`crate::kgrouped`] stage [`STAGE_K`]-wide halves of a block in [`LDS_STAGES`] stages of the
//! same total size, with their own layout.)
//!
//! # LDS layout (designed for zero bank conflicts)
//!
//! Logical chunk `c` of row `r` sits at physical chunk `(c + rot(r)) mod 8` of the row, with
//! `rot(r) = (r & 3) + (r & 2)` ∈ {0, 1, 4, 5} ([`block_swizzle`]). A row spans all 32 banks
//! once (8 chunks × 4 banks), so what matters is which physical chunks a group of lanes touches:
//!
//! * **Writes** (`ds_write_b128`, serviced in phases of 8 consecutive lanes): work-item `t` stores
//!   chunk `t & 7` of row `t >> 3` (+ 32 rows per pass), so a phase is one whole row; the rotation
//!   is a permutation of its chunks: all 32 banks once. Conflict-free.
//! * **Reads** (`ds_read_b128`, conflict-free iff no two lanes of a group {0-3,20-23}
//!   {4-7,16-19} {8-11,28-31} {12-15,24-27} (and the same +32) hit the same bank): lane `l` of a
//!   fragment read takes row `l & 15` (plus a multiple of 16) and logical chunk
//!   `2·(l >> 4) + read` ([`frag_chunk`], `read` ∈ {0, 1}). In group {0-3,20-23} lanes 0-3 read
//!   rows 0-3 at chunk `c` → physical `c + {0,1,4,5}`, lanes 20-23 rows 4-7 at chunk `c + 2` →
//!   `c + 2 + {0,1,4,5}` = `c + {2,3,6,7}`: all 8 physical chunks, distinct. Rows 4-7 repeat the
//!   rotations of rows 0-3 and rows 8-15 those of rows 0-7, so every group works out the same
//!   way. (Any set `{0,1,4,5} + k` works.) The host test `block_lds_layout_is_bank_conflict_free`
//!   checks every group of every fragment read and every write phase against this rule.
//! * **gfx950** services a `ds_read_b128` in 4 phases of 16 lanes over 64 banks (256 bytes),
//!   lane groups {0-3, 12-15, 20-23, 24-27} {4-11, 16-19, 28-31} (and the same + 32; see
//!   `amdgpu_emu::exec::counters`): a phase reads rows 0-3 and 12-15 at chunk `c` with rows
//!   4-11 at chunk `c + 2` (or the reverse), and two rows of the same parity share the 64
//!   banks. gfx942's rotation gives rows 0 and 12 (2 and 14, …) the same rotation: every phase
//!   2-way conflicted, 8 cycles per read instead of 4. On gfx950 the rotation is
//!   `4·b1 + (b0 ⊕ b3)` of the row's bits ([`swizzle_rot`]): a permutation of {0, 1, 4, 5}
//!   over each quad of rows (the gfx942 rule above still holds) and over each set of
//!   same-parity rows a phase reads at one chunk ({0, 2, 12, 14}, {4, 6, 8, 10} and the odd
//!   ones), so conflict-free under both rules (the same host test checks both layouts);
//!   writes stay one whole row per phase.
//!
//! # K permutation inside a fragment
//!
//! One `ds_read_b128` gives a lane 16 consecutive K values of its row: bytes 0-7 feed MFMA k-step
//! `2·read` and bytes 8-15 k-step `2·read + 1` of the block. For MFMA k-step `s ∈ 0..4` lane
//! group `g = l >> 4` therefore supplies K offsets `32·g + 8·s … +7` instead of the textbook
//! `8·g + 32·s`. Both operands use the same permutation and the sum over a 128-K block is
//! order-independent, so the result is the same dot product (block by block, so the per-block
//! promotion is unchanged).
//!
//! # Grid order
//!
//! The grid is 1-D with one workgroup per tile. The hardware hands workgroup `p` to XCD `p mod 8`;
//! [`xcd_remap`] turns `p` into a logical tile id such that each XCD receives a contiguous range of
//! ids (so neighbouring tiles share one XCD's L2), and [`tile_coords`] walks ids in panels of
//! [`PANEL_M`] M tiles, M fastest inside a panel (before: M fastest over the whole grid, so the
//! workgroups running together on one XCD shared one or two B column tiles but streamed all of A
//! once per N column).

use core::num::NonZeroU32;

/// Work-items per workgroup of every dense kernel (4 waves of 64).
pub const THREADS: u32 = 256;
/// Lanes per wave on gfx942 / gfx950.
pub const WAVE: u32 = 64;
/// K width of a scale block (1×128 activation scales, 128×128 weight scales).
pub const SCALE_BLOCK_K: u32 = 128;
/// N height of a weight-scale block.
pub const SCALE_BLOCK_N: u32 = 128;
/// K elements (= bytes, FP8) staged in LDS per pipeline stage of the K-grouped kernels: half a
/// scale block.
pub const STAGE_K: u32 = 64;
/// Number of LDS stages of the K-grouped kernels (double buffering).
pub const LDS_STAGES: u32 = 2;
/// XCDs of an MI300X (gfx942) that workgroups are dealt to round-robin.
pub const NUM_XCDS: u32 = 8;
/// The kernels' buffer offsets are 32-bit and out-of-range lanes are parked at this offset: every
/// tensor (A, B, SFA, SFB, D) must be smaller than this many bytes, and so must
/// `(m + 128) · k` and `(n + 128) · k` (the rows a tail tile addresses beyond the tensor).
pub const MAX_TENSOR_BYTES: u64 = 1 << 31;
/// Exponent offset of the FP32 promotion: the accumulators hold `D · 2^-PROMOTION_EXP`. Each
/// 128-K block adds `partial · (SFA · (SFB · 2^-60))`, and the epilogue multiplies by `2^60`
/// before rounding to bf16. Power-of-two scalings are exact, so results are bit-identical to the
/// unscaled computation wherever that one stays finite and normal; but the scale product
/// `SFA · SFB` may now reach `2^188` before it overflows (was `2^128`: inputs of ±4.5e21 on both
/// sides made it `inf`, and `0 · inf = NaN`), while its normal range still covers the recipe's
/// smallest scales (`1e-4 / 448 ≈ 2^-22.1`, products `≥ 2^-44.2`). See [`MIN_SCALE`].
pub const PROMOTION_EXP: i32 = 60;
/// `2^-PROMOTION_EXP`.
pub const PROMOTION_DOWN: f32 = f32::from_bits(((127 - PROMOTION_EXP) as u32) << 23);
/// `2^PROMOTION_EXP`.
pub const PROMOTION_UP: f32 = f32::from_bits(((127 + PROMOTION_EXP) as u32) << 23);
/// The supported scale magnitudes of every GEMM kernel: each SFA and SFB entry is 0 or has
/// `MIN_SCALE ≤ |s| < MAX_SCALE` (`2^-24 ≤ |s| < 2^94`). Then every scale product `SFA · SFB`
/// is 0 or in `[2^-48, 2^188)`, so `SFA · SFB · 2^-60` is a finite normal `f32` and the kernels
/// compute `Σ partial · SFA · SFB` without an intermediate overflow or underflow (a term
/// overflows only where the exact term does). The host rejects host-side scales outside this
/// range with a typed error; DeepGEMM's recipes produce scales in `[2^-22.1, 2^94)` for any input
/// with `amax < 2^94 · FP8_MAX` (≈ 4.7e30 for E4M3FNUZ, 8.7e30 for E4M3FN).
pub const MIN_SCALE: f32 = f32::from_bits((127 - 24) << 23);
/// Exclusive upper bound of the supported scale magnitudes (`2^94`), see [`MIN_SCALE`].
pub const MAX_SCALE: f32 = f32::from_bits((127 + 94) << 23);

const _: () = assert!(PROMOTION_DOWN == 1.0 / (1u64 << 60) as f32);

/// Whether a scale is in the kernels' supported range (see [`MIN_SCALE`]): 0, or
/// `2^-24 ≤ |s| < 2^94` (NaN and ±∞ are not).
#[inline]
pub fn scale_supported(s: f32) -> bool {
    let a = f32::from_bits(s.to_bits() & 0x7fff_ffff);
    a == 0.0 || (MIN_SCALE..MAX_SCALE).contains(&a)
}

/// The kernels' requirements on the shape: `k % K_ALIGN == 0` …
pub const K_ALIGN: u32 = 128;
/// … and `n % N_ALIGN == 0` (each lane stores 4 consecutive bf16 of a row; any `m ≥ 1` works).
pub const N_ALIGN: u32 = 4;

/// One dense tile configuration, as compiled into a kernel of [`crate::dense`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DenseTile {
    /// Exported kernel symbol.
    pub name: &'static str,
    /// Rows of D per workgroup.
    pub block_m: u32,
    /// Columns of D per workgroup.
    pub block_n: u32,
}

impl DenseTile {
    /// K consumed per main-loop iteration (one scale block).
    pub const fn block_k(&self) -> u32 {
        SCALE_BLOCK_K
    }
    /// Dynamic LDS the kernel needs (the launch's `sharedMemBytes`).
    pub const fn lds_bytes(&self) -> u32 {
        lds_bytes(self.block_m, self.block_n)
    }
    /// How many 128-K blocks ahead the main loop loads operands (`tile_gemm`'s `DEPTH`): 2 for
    /// the 64 × 64 tile (two register sets, the loop unrolled by 2, so a load has two blocks of
    /// math to land; measured with the timing model to win at small M), 1 for the larger tiles
    /// (their second register set would cost occupancy: 128 × 128 needs 276 VGPRs → 1 wave per
    /// SIMD, and 64 × 128 measured slower). The main loop handles `prefetch_depth()` blocks per
    /// trip.
    pub const fn prefetch_depth(&self) -> u32 {
        if self.block_m * self.block_n <= 64 * 64 { 2 } else { 1 }
    }
    /// Workgroups of the 1-D grid for an `m × n` output.
    pub const fn grid(&self, m: u32, n: u32) -> u32 {
        m.div_ceil(self.block_m) * n.div_ceil(self.block_n)
    }
}

/// LDS bytes of a `bm × bn` tile: `(bm + bn)` rows of one 128-K block (dense and m-grouped
/// kernels), the same as [`LDS_STAGES`] stages of `(bm + bn)` rows × [`STAGE_K`] bytes (K-grouped).
pub const fn lds_bytes(bm: u32, bn: u32) -> u32 {
    LDS_STAGES * (bm + bn) * STAGE_K
}

/// Byte offset of the stage `stage` inside the dynamic LDS of a `bm × bn` tile.
pub const fn stage_offset(bm: u32, bn: u32, stage: u32) -> u32 {
    stage * (bm + bn) * STAGE_K
}

/// `fp8_gemm_nt_bm64_bn64`: small M, or when more workgroups are needed to fill 304 CUs.
pub const BM64_BN64: DenseTile = DenseTile { name: "fp8_gemm_nt_bm64_bn64", block_m: 64, block_n: 64 };
/// `fp8_gemm_nt_bm64_bn128`: small/medium M.
pub const BM64_BN128: DenseTile = DenseTile { name: "fp8_gemm_nt_bm64_bn128", block_m: 64, block_n: 128 };
/// `fp8_gemm_nt_bm128_bn128`: large M (best operand reuse).
pub const BM128_BN128: DenseTile = DenseTile { name: "fp8_gemm_nt_bm128_bn128", block_m: 128, block_n: 128 };
/// Every dense tile configuration compiled into the device code object.
pub const DENSE_TILES: [DenseTile; 3] = [BM64_BN64, BM64_BN128, BM128_BN128];

/// The dense split-K kernels ([`crate::dense`], `fp8_gemm_nt_splitk_*`), same tiles as
/// [`DENSE_TILES`].
pub const DENSE_SPLITK_TILES: [DenseTile; 3] = [
    DenseTile { name: "fp8_gemm_nt_splitk_bm64_bn64", block_m: 64, block_n: 64 },
    DenseTile { name: "fp8_gemm_nt_splitk_bm64_bn128", block_m: 64, block_n: 128 },
    DenseTile { name: "fp8_gemm_nt_splitk_bm128_bn128", block_m: 128, block_n: 128 },
];

/// One tile of the "bs" kernels ([`crate::mainloop_bs`]: B pre-shuffled straight to registers,
/// A in two LDS stages, 1 × 4 waves).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsTile {
    /// Exported kernel symbol.
    pub name: &'static str,
    /// Rows of D per workgroup (`16·FM`).
    pub block_m: u32,
    /// Columns of D per workgroup (`64·NF`: 4 waves × `NF` fragments of 16 columns; 128
    /// everywhere but the 32 × 64 decode kernels).
    pub block_n: u32,
    /// LDS stages of A, one 128-K block each: 2 (one barrier per block) everywhere but the
    /// 32 × 64 kernels with one barrier per two blocks, which have 4.
    pub lds_stages: u32,
}

impl BsTile {
    /// Dynamic LDS the kernel needs: two stages of `block_m` rows of one 128-K block of A,
    /// then two regions of the SFA of one 4-block window (`block_m` rows × 4 blocks × f32).
    /// The pipelined loop's layout ([`bs_pipe_lds_bytes`]) for every height but 128: the
    /// 48/80/96-row kernels pad their stages to whole 32-row copy passes, and its SFA regions
    /// have 4·⌈FM/4⌉ slots, which at 32 rows (the split-K kernel runs that loop) is 1 KiB
    /// more than the phase loop's 32-row kernels use (harmless: their occupancy is set by
    /// registers); at 64 rows both layouts are the same size.
    pub const fn lds_bytes(&self) -> u32 {
        if self.lds_stages != LDS_STAGES {
            return bs_pipe_lds_bytes_staged(self.block_m, self.lds_stages);
        }
        if self.block_m != 128 {
            return bs_pipe_lds_bytes(self.block_m);
        }
        LDS_STAGES * self.block_m * SCALE_BLOCK_K + 2 * self.block_m * 4 * 4
    }
    /// Workgroups of the 1-D grid for an `m × n` output.
    pub const fn grid(&self, m: u32, n: u32) -> u32 {
        m.div_ceil(self.block_m) * n.div_ceil(self.block_n)
    }
}

/// The dense bs kernels (`fp8_gemm_nt_bs_bm*_bn128`, [`crate::mainloop_bs`]), smallest first.
pub const DENSE_BS_TILES: [BsTile; 3] = [
    BsTile { name: "fp8_gemm_nt_bs_bm32_bn128", block_m: 32, block_n: 128, lds_stages: 2 },
    BsTile { name: "fp8_gemm_nt_bs_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 },
    BsTile { name: "fp8_gemm_nt_bs_bm128_bn128", block_m: 128, block_n: 128, lds_stages: 2 },
];

/// The dense bs 64 × 128 kernel on the pipelined loop (`fp8_gemm_nt_bs_pipe_bm64_bn128`,
/// [`crate::mainloop_bs`], "Pipelined loop"): one workgroup per CU, the host's choice for the
/// 64-row tile below `BS_BM64_TILES_PER_CU` tiles per CU (`fp8gemm::config`); same tile, LDS
/// and result as [`DENSE_BS_TILES`]`[1]`.
pub const DENSE_BS_PIPE_BM64: BsTile = BsTile { name: "fp8_gemm_nt_bs_pipe_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 };

/// The dense bs 128 × 128 kernel on the 128-row pipelined loop
/// (`fp8_gemm_nt_bs_pipe_bm128_bn128`, [`crate::mainloop_bs128`]): one workgroup per CU, the
/// host's kernel for the 128-row bs tile (unsplit); same tile, LDS and result as
/// [`DENSE_BS_TILES`]`[2]`.
pub const DENSE_BS_PIPE_BM128: BsTile = BsTile { name: "fp8_gemm_nt_bs_pipe_bm128_bn128", block_m: 128, block_n: 128, lds_stages: 2 };

/// The dense bs kernels on the pipelined loop (one workgroup per CU), smallest first: 48, 64,
/// 80, 96 and 112 rows (`FM` = 3 … 7), then 128 rows ([`DENSE_BS_PIPE_BM128`]). Their LDS:
/// [`bs_pipe_lds_bytes`].
pub const DENSE_BS_PIPE_TILES: [BsTile; 6] = [
    BsTile { name: "fp8_gemm_nt_bs_pipe_bm48_bn128", block_m: 48, block_n: 128, lds_stages: 2 },
    DENSE_BS_PIPE_BM64,
    BsTile { name: "fp8_gemm_nt_bs_pipe_bm80_bn128", block_m: 80, block_n: 128, lds_stages: 2 },
    BsTile { name: "fp8_gemm_nt_bs_pipe_bm96_bn128", block_m: 96, block_n: 128, lds_stages: 2 },
    BsTile { name: "fp8_gemm_nt_bs_pipe_bm112_bn128", block_m: 112, block_n: 128, lds_stages: 2 },
    DENSE_BS_PIPE_BM128,
];

/// Dynamic LDS of a pipelined bs kernel of `block_m` rows: two A stages of `32·⌈FM/2⌉` rows
/// (`FM = block_m / 16`; the A copy moves 32 rows per pass) and two SFA window regions of
/// `4·⌈FM/4⌉` slots of 256 bytes. The same as [`BsTile::lds_bytes`] for 64 rows.
pub const fn bs_pipe_lds_bytes(block_m: u32) -> u32 {
    bs_pipe_lds_bytes_staged(block_m, LDS_STAGES)
}

/// [`bs_pipe_lds_bytes`] with `stages` A stages (4: the loops with one barrier per two blocks).
pub const fn bs_pipe_lds_bytes_staged(block_m: u32, stages: u32) -> u32 {
    let fm = block_m / 16;
    stages * 32 * fm.div_ceil(2) * SCALE_BLOCK_K + 2 * 256 * 4 * fm.div_ceil(4)
}
const _: () = {
    let mut i = 0;
    while i < DENSE_BS_PIPE_TILES.len() {
        assert!(DENSE_BS_PIPE_TILES[i].lds_bytes() == bs_pipe_lds_bytes(DENSE_BS_PIPE_TILES[i].block_m));
        i += 1;
    }
};

/// Dynamic LDS of a 32 × 64 bs kernel with `stages` A stages ([`crate::mainloop_bs`], "Narrow
/// tiles": 4 with one barrier per two blocks, 2 with one per block) of 32 rows of one 128-K
/// block, then two SFA window regions of 4 slots of 256 bytes.
pub const fn bs_narrow_lds_bytes(stages: u32) -> u32 {
    bs_pipe_lds_bytes_staged(32, stages)
}

/// The dense bs 32 × 64 kernel on the pipelined loop (`fp8_gemm_nt_bs_pipe_bm32_bn64`: one B
/// fragment per wave, [`crate::mainloop_bs`], "Narrow tiles"): decode shapes with enough
/// 32 × 64 tiles to fill the device unsplit.
pub const DENSE_BS_PIPE_BM32_BN64: BsTile = BsTile { name: "fp8_gemm_nt_bs_pipe_bm32_bn64", block_m: 32, block_n: 64, lds_stages: 4 };

/// The same 32 × 64 kernel with one barrier per block (`fp8_gemm_nt_bs_pipe_b1_bm32_bn64`: two A
/// stages, 10 KiB of LDS, so four workgroups per CU instead of three): for more than three
/// 32 × 64 tiles per CU.
pub const DENSE_BS_PIPE_B1_BM32_BN64: BsTile = BsTile { name: "fp8_gemm_nt_bs_pipe_b1_bm32_bn64", block_m: 32, block_n: 64, lds_stages: 2 };

/// The dense bs split-K 32 × 64 kernel (`fp8_gemm_nt_splitk_bs_bm32_bn64`, the pipelined loop
/// with one B fragment per wave): decode shapes with long K.
pub const DENSE_SPLITK_BS_BM32_BN64: BsTile = BsTile { name: "fp8_gemm_nt_splitk_bs_bm32_bn64", block_m: 32, block_n: 64, lds_stages: 4 };

/// The dense bs split-K kernels (`fp8_gemm_nt_splitk_bs_bm*_bn128`), same tiles as
/// [`DENSE_BS_TILES`].
pub const DENSE_SPLITK_BS_TILES: [BsTile; 3] = [
    BsTile { name: "fp8_gemm_nt_splitk_bs_bm32_bn128", block_m: 32, block_n: 128, lds_stages: 2 },
    BsTile { name: "fp8_gemm_nt_splitk_bs_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 },
    BsTile { name: "fp8_gemm_nt_splitk_bs_bm128_bn128", block_m: 128, block_n: 128, lds_stages: 2 },
];

/// The m-grouped contiguous bs kernels (pre-shuffled B, [`crate::grouped`]), same tiles as
/// [`DENSE_BS_TILES`] (each divides [`M_ALIGNMENT_CONTIGUOUS`]).
pub const CONTIGUOUS_BS_TILES: [BsTile; 3] = [
    BsTile { name: "m_grouped_fp8_gemm_nt_contiguous_bs_bm32_bn128", block_m: 32, block_n: 128, lds_stages: 2 },
    BsTile { name: "m_grouped_fp8_gemm_nt_contiguous_bs_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 },
    BsTile { name: "m_grouped_fp8_gemm_nt_contiguous_bs_bm128_bn128", block_m: 128, block_n: 128, lds_stages: 2 },
];

/// The m-grouped masked bs kernels (pre-shuffled B, [`crate::grouped`]).
pub const MASKED_BS_TILES: [BsTile; 3] = [
    BsTile { name: "m_grouped_fp8_gemm_nt_masked_bs_bm32_bn128", block_m: 32, block_n: 128, lds_stages: 2 },
    BsTile { name: "m_grouped_fp8_gemm_nt_masked_bs_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 },
    BsTile { name: "m_grouped_fp8_gemm_nt_masked_bs_bm128_bn128", block_m: 128, block_n: 128, lds_stages: 2 },
];

/// The m-grouped masked bs split-K kernels (`m_grouped_fp8_gemm_nt_masked_splitk_bs_bm*_bn128`,
/// [`crate::grouped`]), the 32- and 64-row tiles of [`MASKED_BS_TILES`].
pub const MASKED_SPLITK_BS_TILES: [BsTile; 2] = [
    BsTile { name: "m_grouped_fp8_gemm_nt_masked_splitk_bs_bm32_bn128", block_m: 32, block_n: 128, lds_stages: 2 },
    BsTile { name: "m_grouped_fp8_gemm_nt_masked_splitk_bs_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 },
];

/// The m-grouped contiguous bs split-K / gathered-A kernels
/// (`m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm*_bn128`, [`crate::grouped`]), the 32- and
/// 64-row tiles of [`CONTIGUOUS_BS_TILES`].
pub const CONTIGUOUS_SPLITK_BS_TILES: [BsTile; 2] = [
    BsTile { name: "m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm32_bn128", block_m: 32, block_n: 128, lds_stages: 2 },
    BsTile { name: "m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 },
];

/// The m-grouped contiguous bs split-K kernels with the MoE scatter epilogue
/// (`m_grouped_fp8_gemm_nt_contiguous_splitk_scatter_bs_bm*_bn128`, [`crate::grouped`]).
pub const CONTIGUOUS_SCATTER_BS_TILES: [BsTile; 2] = [
    BsTile { name: "m_grouped_fp8_gemm_nt_contiguous_splitk_scatter_bs_bm32_bn128", block_m: 32, block_n: 128, lds_stages: 2 },
    BsTile { name: "m_grouped_fp8_gemm_nt_contiguous_splitk_scatter_bs_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 },
];

/// The m-grouped contiguous bs split-K kernels with the MoE activation epilogue
/// (`m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_bm*_bn128`, [`crate::grouped`]).
pub const CONTIGUOUS_SILU_BS_TILES: [BsTile; 2] = [
    BsTile { name: "m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_bm32_bn128", block_m: 32, block_n: 128, lds_stages: 2 },
    BsTile { name: "m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 },
];

/// The silu kernel over bf16 token rows quantized in its A loads
/// (`m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_qa_bm32_bn128`): the LDS of the 32-row tile.
pub const CONTIGUOUS_SILU_QA_BS_TILE: BsTile =
    BsTile { name: "m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_qa_bm32_bn128", block_m: 32, block_n: 128, lds_stages: 2 };

/// Division of `u32`s by a divisor fixed for a launch, by one multiply-high and two shifts: the
/// "round-up" method of Granlund and Montgomery, *Division by Invariant Integers using
/// Multiplication* (PLDI 1994), figure 4.1, exact for every `n` and every divisor `d ≥ 1`. The
/// host computes it ([`FastDiv::new`]) and passes it in the kernel arguments; the device divides
/// with [`FastDiv::div_rem`] (seven scalar instructions with the remainder, against about 25 for
/// LLVM's expansion of a division by a runtime value, which goes through `v_rcp_f32` and a Newton
/// step). The split-K prologues divide two or three times, each on the path to their first load.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastDiv {
    /// The divisor `d`.
    pub d: u32,
    /// `⌊2^32·(2^l − d) / d⌋ + 1` with `l = ⌈log2 d⌉`.
    pub magic: u32,
    /// `min(l, 1)`.
    pub shift1: u32,
    /// `max(l − 1, 0)`.
    pub shift2: u32,
}

impl FastDiv {
    /// The multiplier and shifts for divisor `d`.
    pub const fn new(d: NonZeroU32) -> FastDiv {
        let d = d.get();
        // l = ⌈log2 d⌉ (0 for d = 1), 0..=32.
        let l = 32 - (d - 1).leading_zeros();
        // 2^(l−1) < d ≤ 2^l, so 0 ≤ 2^l − d < d and the quotient is below 2^32.
        let magic = ((((1u64 << l) - d as u64) << 32) / d as u64 + 1) as u32;
        FastDiv { d, magic, shift1: if l > 0 { 1 } else { 0 }, shift2: if l > 0 { l - 1 } else { 0 } }
    }

    /// `(n / d, n % d)`, for every `n`, when the struct is [`FastDiv::new`]`(d)`. (Of any other
    /// bits it returns some pair, with no undefined behaviour: callers that index with the
    /// results bound them first.)
    #[inline(always)]
    pub const fn div_rem(self, n: u32) -> (u32, u32) {
        let t1 = ((self.magic as u64 * n as u64) >> 32) as u32;
        // t1 ≤ n (magic < 2^32), and t1 + (n − t1)/2 < 2^32.
        let q = t1.wrapping_add(n.wrapping_sub(t1).wrapping_shr(self.shift1)).wrapping_shr(self.shift2);
        (q, n.wrapping_sub(q.wrapping_mul(self.d)))
    }
}

/// K blocks `kb0 .. kb0 + count` of split `j` of `splits` over `nkb` blocks: the blocks are
/// dealt as evenly as possible (the first `nkb mod splits` splits get one more), so every split
/// has at least one block when `splits ≤ nkb`.
#[inline(always)]
pub const fn split_range(j: u32, splits: u32, nkb: u32) -> (u32, u32) {
    split_range_qr(j, nkb / splits, nkb % splits)
}

/// [`split_range`] with the division done by a [`FastDiv`] of `splits` (the kernels).
#[inline(always)]
pub const fn split_range_div(j: u32, splits: FastDiv, nkb: u32) -> (u32, u32) {
    let (q, r) = splits.div_rem(nkb);
    split_range_qr(j, q, r)
}

/// [`split_range`] from `q = nkb / splits` and `r = nkb mod splits`.
#[inline(always)]
const fn split_range_qr(j: u32, q: u32, r: u32) -> (u32, u32) {
    let kb0 = j * q + if j < r { j } else { r };
    (kb0, q + if j < r { 1 } else { 0 })
}

/// Most output tiles a split-K launch may have: the size of the workspace's fixed counter region
/// ([`SPLITK_COUNTER_FLOATS`]). Split-K pays off only for launches of fewer tiles than the GPU
/// has CUs (a few hundred); the host never chooses, and rejects when forced, a split-K launch
/// of more tiles, and the kernels do no work for one.
pub const SPLITK_MAX_TILES: u32 = 4096;

/// Most output tiles of a split-K launch with one arrival counter per wave (the bs split-K
/// kernels on the pipelined loop, four counters per tile in the same counter region): a
/// quarter of [`SPLITK_MAX_TILES`].
pub const SPLITK_WAVES_MAX_TILES: u32 = SPLITK_MAX_TILES / 4;

/// Partial slots a split-K finisher reads per round trip through memory
/// (`dense::imp::sum_slots`: every load of a chunk is issued before the first add waits), for a
/// `block_m × block_n` tile, whose waves hold `block_m · block_n / 1024` 16×16 fragments each
/// (1 × 4 waves for the bs kernels, 2 × 2 for the others: the same count). With the per-wave
/// protocol (`per_wave`: the bs split-K kernels on the pipelined loop) up to 32 `dwordx4`
/// loads are in flight (128 VGPRs, free once the main loop is done): 8 slots for up to 4
/// fragments, 5 for 6, 4 for 8. The workgroup protocol reads 8 for the bs 32-row tile, whose
/// reduction is on the critical path of decode, 2 from 16 fragments on and 4 otherwise.
/// Each chunk is one round trip through memory at the end of the tile (`dense::imp`,
/// "Split-K").
pub const fn splitk_chunk(block_m: u32, block_n: u32, per_wave: bool, bs: bool) -> u32 {
    let frags = block_m * block_n / 1024;
    if per_wave {
        let c = 32 / if frags == 0 { 1 } else { frags };
        if c < 2 {
            2
        } else if c > 8 {
            8
        } else {
            c
        }
    } else if bs && frags <= 4 {
        8
    } else if frags >= 16 {
        2
    } else {
        4
    }
}

/// Most output tiles of a launch of the dense bs split-K kernel of `block_m` rows: the kernels
/// on the pipelined loop (32 and 64 rows, the 32 × 64 one too) count arrivals per wave
/// ([`SPLITK_WAVES_MAX_TILES`]), the 128-row one per workgroup ([`SPLITK_MAX_TILES`]).
pub const fn bs_splitk_max_tiles(block_m: u32) -> u32 {
    if bs_splitk_per_wave(block_m) { SPLITK_WAVES_MAX_TILES } else { SPLITK_MAX_TILES }
}

/// Whether the dense bs split-K kernel of `block_m` rows counts arrivals and reduces per wave
/// (the kernels on the pipelined loop: 32 and 64 rows) rather than per workgroup (128 rows).
pub const fn bs_splitk_per_wave(block_m: u32) -> bool {
    block_m != 128
}

/// Words at the start of every split-K workspace that hold the per-tile arrival counters (one
/// u32 per output tile, [`SPLITK_MAX_TILES`] of them = 16 KiB). The region is the same for
/// every launch, whatever its tile count: partial sums (which start after it) therefore never
/// overwrite a counter, so the counters that every launch leaves at 0 are 0 for the next launch
/// on the same workspace with no clearing in between (a layout whose counter region grew with
/// the tile count let an earlier launch's partials sit where a later, larger launch kept its
/// counters).
pub const SPLITK_COUNTER_FLOATS: u64 = SPLITK_MAX_TILES as u64;

/// f32 elements of workspace a split-K launch of `tiles` output tiles of `bm × bn` with
/// `splits` splits needs: the counter region, then one `bm × bn` FP32 partial tile per
/// (tile, split).
pub const fn splitk_workspace_floats(tiles: u32, splits: u32, bm: u32, bn: u32) -> u64 {
    SPLITK_COUNTER_FLOATS + tiles as u64 * splits as u64 * bm as u64 * bn as u64
}

/// Row alignment of every group in the m-grouped contiguous layout (DeepGEMM's
/// `get_m_alignment_for_contiguous_layout()`): a multiple of the height of every
/// [`CONTIGUOUS_TILES`] entry, so no tile ever spans two aligned blocks.
pub const M_ALIGNMENT_CONTIGUOUS: u32 = 128;

/// The m-grouped contiguous kernels ([`crate::grouped`]), same tiles as [`DENSE_TILES`].
pub const CONTIGUOUS_TILES: [DenseTile; 3] = [
    DenseTile { name: "m_grouped_fp8_gemm_nt_contiguous_bm64_bn64", block_m: 64, block_n: 64 },
    DenseTile { name: "m_grouped_fp8_gemm_nt_contiguous_bm64_bn128", block_m: 64, block_n: 128 },
    DenseTile { name: "m_grouped_fp8_gemm_nt_contiguous_bm128_bn128", block_m: 128, block_n: 128 },
];

/// The m-grouped masked kernels ([`crate::grouped`]), same tiles as [`DENSE_TILES`].
pub const MASKED_TILES: [DenseTile; 3] = [
    DenseTile { name: "m_grouped_fp8_gemm_nt_masked_bm64_bn64", block_m: 64, block_n: 64 },
    DenseTile { name: "m_grouped_fp8_gemm_nt_masked_bm64_bn128", block_m: 64, block_n: 128 },
    DenseTile { name: "m_grouped_fp8_gemm_nt_masked_bm128_bn128", block_m: 128, block_n: 128 },
];

const _: () = {
    let mut i = 0;
    while i < CONTIGUOUS_BS_TILES.len() {
        assert!(M_ALIGNMENT_CONTIGUOUS.is_multiple_of(CONTIGUOUS_BS_TILES[i].block_m));
        i += 1;
    }
};

const _: () = {
    let mut i = 0;
    while i < CONTIGUOUS_TILES.len() {
        assert!(M_ALIGNMENT_CONTIGUOUS.is_multiple_of(CONTIGUOUS_TILES[i].block_m));
        i += 1;
    }
};

/// Workgroups of the masked kernels' 1-D grid: `groups · ⌈m_max/BM⌉ · ⌈n/BN⌉` (saturating; the
/// host rejects problems whose grid does not fit in 32 bits).
pub const fn masked_grid(tile: &DenseTile, groups: u32, m_max: u32, n: u32) -> u32 {
    groups.saturating_mul(tile.grid(m_max, n))
}

/// Logical tile id of a masked grid → `(group, tile_m, tile_n)`: groups outermost, inside a
/// group M fastest (as [`tile_coords`]). `tiles_m` is `⌈m_max/BM⌉`, `per_group` is
/// `tiles_m · ⌈n/BN⌉`. Non-zero divisors: the kernel code has no division-by-zero panic path.
#[inline(always)]
pub const fn masked_tile_coords(id: u32, tiles_m: NonZeroU32, per_group: NonZeroU32) -> (u32, u32, u32) {
    let (tiles_m, per_group) = (tiles_m.get(), per_group.get());
    let local = id % per_group;
    (id / per_group, local % tiles_m, local / tiles_m)
}

/// LDS byte offset (inside the A or B region of the dense/m-grouped kernels' LDS) of logical
/// 16-byte chunk `chunk` (0..8) of row `row`: rows are one whole 128-K scale block
/// ([`SCALE_BLOCK_K`] bytes), chunk `c` sits at physical chunk `(c + rot(row)) mod 8` with
/// `rot(r) = (r & 3) + (r & 2)` ∈ {0, 1, 4, 5} on gfx942 ([`swizzle_rot`] on gfx950). See the
/// module docs for why these rotations are bank-conflict-free for the copy's writes and the
/// fragment reads.
#[inline(always)]
#[cfg(not(fp8gemm_gfx950))]
pub const fn block_swizzle(row: u32, chunk: u32) -> u32 {
    row * SCALE_BLOCK_K + 16 * ((chunk + (row & 3) + (row & 2)) & 7)
}

/// [`block_swizzle`] of the gfx950 build: [`block_swizzle_for`] with gfx950's rotation.
#[inline(always)]
#[cfg(fp8gemm_gfx950)]
pub const fn block_swizzle(row: u32, chunk: u32) -> u32 {
    block_swizzle_for(row, chunk, true)
}

/// [`block_swizzle`] of the gfx942 (`gfx950 = false`) or the gfx950 layout (module docs,
/// "LDS layout": the rotations differ in how they spread a fragment read's rows over banks).
#[inline(always)]
pub const fn block_swizzle_for(row: u32, chunk: u32, gfx950: bool) -> u32 {
    if gfx950 { row * SCALE_BLOCK_K + 16 * ((chunk + swizzle_rot(row, true)) & 7) } else { row * SCALE_BLOCK_K + 16 * ((chunk + (row & 3) + (row & 2)) & 7) }
}

/// The chunk rotation of row `row` ∈ {0, 1, 4, 5}: `(r & 3) + (r & 2)` (bits `4·b1 + b0`) on
/// gfx942, `4·b1 + (b0 ⊕ b3)` on gfx950 (module docs, "LDS layout").
#[inline(always)]
pub const fn swizzle_rot(row: u32, gfx950: bool) -> u32 {
    if gfx950 { 4 * ((row >> 1) & 1) + ((row ^ (row >> 3)) & 1) } else { (row & 3) + (row & 2) }
}

/// Logical 16-byte chunk (0..8) of a 128-K LDS row that lane group `group` (`lane >> 4`, 0..4)
/// reads for fragment read `read` (0..2) of a block: chunk `2·group + read`. Bytes 0..8 of it
/// feed MFMA k-step `2·read` and bytes 8..16 k-step `2·read + 1` (module docs, "K permutation").
#[inline(always)]
pub const fn frag_chunk(group: u32, read: u32) -> u32 {
    2 * group + read
}

/// Bytes of one unit of the **pre-shuffled B layout**: one 16-row MFMA fragment of B over one
/// 128-K scale block (16 × 128 FP8).
pub const SHUFFLED_UNIT: u32 = 2048;

/// The pre-shuffled B layout (issue 12 part 3: each lane reads its MFMA operand straight from
/// global memory, so B skips LDS). B (`n × k`, logical row-major) is stored as
/// `⌈n/16⌉ × (k/128)` units of [`SHUFFLED_UNIT`] bytes, fragment-major: unit `(frag, kb)` (rows
/// `16·frag ..+16`, K block `kb`) at byte `(frag · nkb + kb) · 2048`. Inside a unit, fragment
/// read `read` ∈ {0, 1} is KiB `read`, and lane `l`'s 16 bytes of it sit at `16·l`: row
/// `16·frag + (l & 15)`, logical K chunk [`frag_chunk`]`(l >> 4, read)` of the block (the same
/// bytes, in the same register order, that lane `l` reads from LDS in the logical path). So one
/// `buffer_load_dwordx4` of a wave reads 1 KiB contiguous = 8 whole 128-byte lines. Rows past `n`
/// (up to the next multiple of 16) are zero.
///
/// This function gives the byte offset of lane `lane`'s 16 bytes of read `read` of unit
/// `(frag, kb)` in a problem with `nkb` K blocks.
#[inline(always)]
pub const fn shuffled_b_offset(frag: u32, kb: u32, nkb: u32, read: u32, lane: u32) -> u32 {
    ((frag * nkb + kb) * 2 + read) * 1024 + 16 * lane
}

/// Byte offset in the pre-shuffled B layout ([`shuffled_b_offset`]) of logical element
/// `B[row, col]` of a problem with `nkb = k / 128` K blocks (the inverse map, for the host-side
/// conversion and tests). 64-bit: the buffer may exceed 4 GiB on the host side of the check.
#[inline]
pub const fn shuffled_b_index(row: u64, col: u64, nkb: u64) -> u64 {
    let (frag, r16) = (row / 16, row % 16);
    let (kb, kk) = (col / SCALE_BLOCK_K as u64, col % SCALE_BLOCK_K as u64);
    let (chunk, byte) = (kk / 16, kk % 16);
    // frag_chunk(g, read) = 2·g + read.
    let (group, read) = (chunk / 2, chunk % 2);
    let lane = 16 * group + r16;
    ((frag * nkb + kb) * 2 + read) * 1024 + 16 * lane + byte
}

/// Bytes of B (`n × k`) in the pre-shuffled layout: `⌈n/16⌉ · 16 · k` (rows padded to 16).
#[inline]
pub const fn shuffled_b_bytes(n: u64, k: u64) -> u64 {
    n.div_ceil(16) * 16 * k
}

/// XCD-aware remap of hardware workgroup id `pid` (0..grid) to a logical tile id (0..grid).
///
/// Workgroup `p` runs on XCD `p mod xcds` as its `(p / xcds)`-th workgroup. XCD `x` receives
/// `grid / xcds` workgroups, plus one if `x < grid mod xcds`; it is given the contiguous logical
/// range starting at `x·(grid / xcds) + min(x, grid mod xcds)`. A bijection for every `grid` and
/// every `xcds ≥ 1` (tested for all grids up to 4096 and 1..=8 XCDs).
#[inline(always)]
pub const fn xcd_remap(pid: u32, grid: u32, xcds: u32) -> u32 {
    let x = pid % xcds;
    let q = grid / xcds;
    let r = grid % xcds;
    let start = x * q + if x < r { x } else { r };
    start + pid / xcds
}

/// Hardware workgroup id `pid` → logical id of a masked grid (groups × N columns × `len` ids
/// per column: its row tiles, each split into its pieces, [`masked_tile_coords`]) whose
/// `chunks` columns are dealt round-robin over the XCDs, each column whole to one XCD: the
/// order [`crate::args::MASKED_ORDER_COLUMNS`] (the host's choice per launch; the other is
/// [`xcd_remap`]).
///
/// Workgroup `p` runs on XCD `p mod xcds` as its `(p / xcds)`-th workgroup; XCD `x` runs columns
/// `x, x + xcds, x + 2·xcds, …` in turn, each column's `len` ids on consecutive workgroups. So
/// every XCD holds the same share of every group's columns, and the working tiles (a column's
/// first `⌈count/BM⌉` row tiles, the counts on the device) spread evenly over the XCDs however
/// the counts differ between groups, where [`xcd_remap`]'s contiguous runs give each XCD whole
/// groups (with few groups, the XCD holding the largest count ran a second round). A column's
/// row tiles (which share its B tile) stay on one XCD. The last `chunks mod xcds` columns keep
/// the identity order. A bijection of `0 .. len·chunks` (tested); ids past it are returned as
/// they are.
#[inline(always)]
pub const fn masked_xcd_order(pid: u32, len: u32, chunks: u32, xcds: u32) -> u32 {
    if len == 0 || xcds == 0 {
        return pid;
    }
    let dealt = (chunks / xcds) * xcds;
    if pid / len >= dealt {
        return pid;
    }
    let (x, j) = (pid % xcds, pid / xcds);
    (x + xcds * (j / len)) * len + j % len
}

/// M tiles per panel of the grid order of [`tile_coords`] (timing model, `--scope xcd`: 4 beat
/// 2, 8 and 16 and the plain M-fastest order on 4096×7168×2048, 4096×2112×7168 and
/// 16384×2048×7168).
pub const PANEL_M: u32 = 4;

/// Logical tile id → `(tile_m, tile_n)` of a `tiles_m × tiles_n` grid, in panels of
/// [`PANEL_M`] M tiles: the panels are walked in M order, inside a panel the tiles go M fastest
/// over the panel's (up to `PANEL_M`) rows, then N. The workgroups an XCD runs at once (a
/// contiguous id range, [`xcd_remap`]) then cover about `4 × (76 / 4)` tiles instead of one or
/// two whole N columns: each A tile and each B tile they load is shared by several of them
/// through the XCD's L2, and the whole grid re-reads A `⌈tiles_n / …⌉` times less from the MALL
/// and HBM than a plain M-fastest order (which streamed all of A once per N column).
/// The last panel takes the `tiles_m mod PANEL_M` rows left over (a panel of 4 to 7 rows; the
/// whole grid when `tiles_m < PANEL_M`): a thin last panel of one row spans every N column, and
/// the XCDs whose id ranges fall in it each streamed several times the B columns of the others
/// over their fabric link (timing model, MI325X 333×7168×18432 on the 80 × 128 bs tile, 5 M
/// tiles: XCDs 6 and 7 read 25 and 35 B columns against 9 elsewhere and ran 234k cycles against
/// 144k).
/// A bijection of `0 .. tiles_m·tiles_n` (tested); ids past the grid give `tile_n ≥ tiles_n`.
#[inline(always)]
pub const fn tile_coords(id: u32, tiles_m: u32, tiles_n: u32) -> (u32, u32) {
    let per_panel = PANEL_M * tiles_n;
    if per_panel == 0 || tiles_m == 0 {
        return (0, tiles_n);
    }
    // Full panels of PANEL_M rows except the last, which also takes the remainder.
    let last = if tiles_m >= PANEL_M { tiles_m / PANEL_M - 1 } else { 0 };
    let panel = if id / per_panel < last { id / per_panel } else { last };
    let first_m = panel * PANEL_M;
    let rows = if panel == last { tiles_m - first_m } else { PANEL_M };
    let local = id - first_m * tiles_n;
    // `rows` is 1 ..= 2·PANEL_M − 1 = 7: shifts and divisions by constants instead of a second
    // division by a runtime value (about 20 scalar instructions in every workgroup's prologue).
    let (q, r) = match rows {
        4 => (local >> 2, local & 3),
        2 => (local >> 1, local & 1),
        1 => (local, 0),
        3 => (local / 3, local % 3),
        5 => (local / 5, local % 5),
        6 => (local / 6, local % 6),
        _ => (local / 7, local % 7),
    };
    (first_m + r, q)
}
const _: () = assert!(PANEL_M == 4, "tile_coords divides by the panel's rows with a match on 1 ..= 7");

/// `f32` → `bf16` bits, round to nearest even; NaN stays a (quiet) NaN, ±inf stays ±inf.
#[inline(always)]
pub const fn f32_to_bf16_rne(x: f32) -> u16 {
    // Branch-free: on the GPU `bfe + add3` for the rounding, `v_cmp_u_f32 + v_cndmask` for NaN.
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16;
    #[allow(clippy::eq_op)] // x != x is the NaN test
    let nan = x != x;
    (if nan { (bits >> 16) | 0x0040 } else { rounded }) as u16
}

/// Two `f32` → two `bf16` packed little-endian (`lo` in bits 15:0).
#[inline(always)]
pub const fn pack_bf16x2(lo: f32, hi: f32) -> u32 {
    f32_to_bf16_rne(lo) as u32 | ((f32_to_bf16_rne(hi) as u32) << 16)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn split_k_chunks_keep_the_loads_in_flight_within_the_budget() {
        // Per wave: at most 32 `dwordx4` loads in flight (chunk × fragments), from 2 to 8 slots.
        for (bm, bn) in [(32, 64), (32, 128), (48, 128), (64, 128), (128, 128)] {
            let frags = bm * bn / 1024;
            let c = splitk_chunk(bm, bn, true, true);
            assert!((2..=8).contains(&c) && (c * frags <= 32 || c == 2), "{bm}x{bn}: {c}");
        }
        assert_eq!(
            [splitk_chunk(32, 64, true, true), splitk_chunk(32, 128, true, true), splitk_chunk(48, 128, true, true), splitk_chunk(64, 128, true, true)],
            [8, 8, 5, 4]
        );
        // The workgroup protocol: 8 for small bs tiles, 2 from 16 fragments, else 4.
        assert_eq!([splitk_chunk(32, 128, false, true), splitk_chunk(64, 128, false, true), splitk_chunk(128, 128, false, true)], [8, 4, 2]);
        assert_eq!([splitk_chunk(64, 64, false, false), splitk_chunk(64, 128, false, false), splitk_chunk(128, 128, false, false)], [4, 4, 2]);
        assert!(bs_splitk_per_wave(32) && bs_splitk_per_wave(64) && !bs_splitk_per_wave(128));
    }

    #[test]
    fn shuffled_b_layout_is_a_bijection_matching_the_lane_reads() {
        // Every logical element of a padded 48 × 384 B maps to a distinct byte, and the byte
        // lane l reads (read r, unit (f, kb)) is the one shuffled_b_index gives for the row and
        // K chunk the LDS path feeds that lane.
        let (n, k) = (48u64, 384u64);
        let nkb = k / 128;
        let bytes = shuffled_b_bytes(n, k);
        assert_eq!(bytes, 48 * 384);
        let mut seen = vec![false; bytes as usize];
        for row in 0..n {
            for col in 0..k {
                let i = shuffled_b_index(row, col, nkb);
                assert!(i < bytes, "({row},{col}) -> {i} out of range");
                assert!(!seen[i as usize], "({row},{col}) -> {i} hit twice");
                seen[i as usize] = true;
            }
        }
        for f in 0..3u32 {
            for kb in 0..nkb as u32 {
                for read in 0..2 {
                    for lane in 0..64 {
                        let row = 16 * f as u64 + (lane & 15) as u64;
                        let col = kb as u64 * 128 + 16 * frag_chunk(lane >> 4, read) as u64;
                        let off = shuffled_b_offset(f, kb, nkb as u32, read, lane) as u64;
                        for byte in 0..16 {
                            assert_eq!(shuffled_b_index(row, col + byte, nkb), off + byte);
                        }
                    }
                }
            }
        }
        assert_eq!(shuffled_b_bytes(50, 256), 64 * 256);
    }

    /// With [`xcd_remap`] over 8 XCDs, every XCD's contiguous id range spans at most about
    /// twice the N columns of an even share (no thin last panel that puts one row's every
    /// column on one or two XCDs).
    #[test]
    fn each_xcd_reads_a_fair_share_of_b_columns() {
        for tm in 4..=40u32 {
            for tn in [8u32, 17, 56, 57, 112] {
                let grid = tm * tn;
                let mut cols = [[false; 112]; 8];
                for p in 0..grid {
                    let (_, j) = tile_coords(xcd_remap(p, grid, 8), tm, tn);
                    cols[(p % 8) as usize][j as usize] = true;
                }
                let per_xcd = grid.div_ceil(8);
                // A range of `per_xcd` ids inside panels of 4..=7 rows covers at most
                // ⌈per_xcd / 4⌉ + 2 columns (a partial column at each end and a panel edge).
                let bound = per_xcd.div_ceil(4) + 3;
                for (x, c) in cols.iter().enumerate() {
                    let n = c.iter().filter(|&&b| b).count() as u32;
                    assert!(n <= bound, "{tm}x{tn}: XCD {x} spans {n} columns, bound {bound}");
                }
            }
        }
    }

    #[test]
    fn xcd_remap_is_a_bijection_for_every_grid() {
        for xcds in 1..=8 {
            for grid in 1..=4096u32 {
                let mut seen = vec![false; grid as usize];
                for pid in 0..grid {
                    let id = xcd_remap(pid, grid, xcds);
                    assert!(id < grid, "grid {grid}: pid {pid} -> {id} out of range");
                    assert!(!seen[id as usize], "grid {grid}: id {id} hit twice");
                    seen[id as usize] = true;
                }
            }
        }
    }

    #[test]
    fn masked_xcd_order_is_a_bijection_dealing_whole_columns() {
        for xcds in [1u32, 4, 8] {
            for len in 1..=12u32 {
                for chunks in 1..=40u32 {
                    let grid = len * chunks;
                    let mut seen = vec![false; grid as usize];
                    for pid in 0..grid {
                        let id = masked_xcd_order(pid, len, chunks, xcds);
                        assert!(id < grid && !seen[id as usize], "len {len} chunks {chunks} xcds {xcds}: pid {pid} -> {id}");
                        seen[id as usize] = true;
                        // A column dealt round-robin sits whole on the XCD of its number.
                        let c = id / len;
                        if c < (chunks / xcds) * xcds {
                            assert_eq!(pid % xcds, c % xcds, "len {len} chunks {chunks}: pid {pid} -> column {c}");
                        }
                    }
                }
            }
        }
        // 4 groups × 32 columns of 6 row tiles over 8 XCDs: each XCD runs 4 columns of every
        // group.
        let mut per_xcd = [[0u32; 4]; 8];
        for pid in 0..4 * 32 * 6 {
            let id = masked_xcd_order(pid, 6, 4 * 32, 8);
            per_xcd[(pid % 8) as usize][(id / (32 * 6)) as usize] += 1;
        }
        assert!(per_xcd.iter().all(|x| x.iter().all(|&n| n == 4 * 6)), "{per_xcd:?}");
    }

    #[test]
    fn xcd_remap_gives_each_xcd_a_contiguous_range() {
        // grid 20 over 8 XCDs: XCDs 0-3 get 3 workgroups, 4-7 get 2.
        let grid = 20;
        let ids_of = |x: u32| -> Vec<u32> { (x..grid).step_by(8).map(|p| xcd_remap(p, grid, 8)).collect() };
        assert_eq!(ids_of(0), [0, 1, 2]);
        assert_eq!(ids_of(1), [3, 4, 5]);
        assert_eq!(ids_of(3), [9, 10, 11]);
        assert_eq!(ids_of(4), [12, 13]);
        assert_eq!(ids_of(7), [18, 19]);
        // Divisible grid: the formula of gfx942.md, (p % 8) * (G / 8) + p / 8.
        for p in 0..64 {
            assert_eq!(xcd_remap(p, 64, 8), (p % 8) * 8 + p / 8);
        }
    }

    #[test]
    fn tile_coords_cover_the_grid() {
        for tm in 1..=40u32 {
            for tn in 1..=12u32 {
                let mut seen = vec![false; (tm * tn) as usize];
                for id in 0..tm * tn {
                    let (i, j) = tile_coords(id, tm, tn);
                    assert!(i < tm && j < tn, "{tm}x{tn}: id {id} -> ({i}, {j})");
                    assert!(!seen[(j * tm + i) as usize], "{tm}x{tn}: ({i}, {j}) twice");
                    seen[(j * tm + i) as usize] = true;
                }
            }
        }
        // Panels of PANEL_M = 4 M tiles, M fastest inside: an 18 × 3 grid is rows 0..4 × 3
        // columns (ids 0..12), rows 4..8 (ids 12..24), …, rows 8..12 (ids 24..36), and a last
        // panel of the 6 rows 12..18 (ids 36..54).
        assert_eq!(PANEL_M, 4);
        assert_eq!(tile_coords(0, 18, 3), (0, 0));
        assert_eq!(tile_coords(3, 18, 3), (3, 0));
        assert_eq!(tile_coords(4, 18, 3), (0, 1));
        assert_eq!(tile_coords(12, 18, 3), (4, 0));
        assert_eq!(tile_coords(36, 18, 3), (12, 0));
        assert_eq!(tile_coords(41, 18, 3), (17, 0));
        assert_eq!(tile_coords(42, 18, 3), (12, 1));
        assert_eq!(tile_coords(53, 18, 3), (17, 2));
        // Fewer rows than a panel: one panel of them.
        assert_eq!(tile_coords(2, 3, 5), (2, 0));
        assert_eq!(tile_coords(3, 3, 5), (0, 1));
        // Past the grid: tile_n ≥ tiles_n.
        assert!(tile_coords(54, 18, 3).1 >= 3 && tile_coords(15, 3, 5).1 >= 5);
        assert_eq!(BM128_BN128.grid(200, 192), 2 * 2);
        assert_eq!(BM64_BN64.grid(1, 128), 2);
    }

    #[test]
    fn masked_tile_coords_cover_every_group() {
        // 3 groups, m_max 100 with 64-row tiles (2), n 192 with 64-column tiles (3): 18 tiles.
        let t = BM64_BN64;
        assert_eq!(masked_grid(&t, 3, 100, 192), 18);
        let nz = |x| NonZeroU32::new(x).unwrap();
        let mut seen = [false; 18];
        for id in 0..18 {
            let (g, tm, tn) = masked_tile_coords(id, nz(2), nz(6));
            assert!(g < 3 && tm < 2 && tn < 3);
            let flat = (g * 6 + tn * 2 + tm) as usize;
            assert!(!seen[flat]);
            seen[flat] = true;
        }
        assert_eq!(masked_tile_coords(7, nz(2), nz(6)), (1, 1, 0));
        assert_eq!(masked_grid(&t, u32::MAX, 1 << 20, 1 << 20), u32::MAX);
    }

    #[test]
    fn fast_division_is_exact() {
        let nz = |d| NonZeroU32::new(d).unwrap();
        #[rustfmt::skip]
        let ds = [1u32, 2, 3, 5, 6, 7, 31, 33, 63, 64, 65, 127, 1000, 4095, 4097, 65535, 65537, 0x7fff_ffff, 0x8000_0000, 0x8000_0001, 0xffff_fffe, 0xffff_ffff, 12345, 3 * 7 * 11 * 13 * 17 * 19];
        let ns = [0u32, 1, 2, 3, 62, 63, 64, 65, 4095, 4096, 65535, 65536, 0x00ff_ffff, 0x7fff_ffff, 0x8000_0000, 0xffff_fffe, 0xffff_ffff];
        for &d in ds.iter().chain(&[9, 10, 11, 12, 13, 14, 15, 16, 17, 100, 255, 256, 257]) {
            let f = FastDiv::new(nz(d));
            assert_eq!(f.d, d);
            for &n in ns.iter().chain(&[d.wrapping_sub(1), d, d.wrapping_add(1), d.wrapping_mul(2), d.wrapping_mul(3).wrapping_sub(1)]) {
                assert_eq!(f.div_rem(n), (n / d, n % d), "{n} / {d}");
            }
        }
        // Every divisor the kernels see in practice (splits, tile counts) against every id.
        for d in 1..=300u32 {
            let f = FastDiv::new(nz(d));
            for n in 0..5000u32 {
                assert_eq!(f.div_rem(n), (n / d, n % d), "{n} / {d}");
            }
            assert_eq!(split_range_div(d / 2, f, 7168 / 128), split_range(d / 2, d, 7168 / 128));
        }
    }

    #[test]
    fn split_ranges_partition_the_k_blocks() {
        for nkb in 1..=64u32 {
            for splits in 1..=nkb {
                let mut next = 0;
                for j in 0..splits {
                    let (kb0, count) = split_range(j, splits, nkb);
                    assert_eq!(kb0, next, "nkb {nkb} splits {splits} j {j}");
                    assert!(count >= 1 && count >= nkb / splits && count <= nkb.div_ceil(splits));
                    next = kb0 + count;
                }
                assert_eq!(next, nkb);
            }
        }
        assert_eq!(split_range(2, 4, 10), (6, 2));
        assert_eq!(SPLITK_COUNTER_FLOATS, 4096);
        assert_eq!(splitk_workspace_floats(33, 8, 64, 64), 4096 + 33 * 8 * 4096);
        // Partials start 256-byte aligned.
        assert_eq!(SPLITK_COUNTER_FLOATS * 4 % 256, 0);
    }

    #[test]
    fn lds_sizes() {
        assert_eq!(BM64_BN64.lds_bytes(), 16 * 1024);
        assert_eq!(BM64_BN128.lds_bytes(), 24 * 1024);
        assert_eq!(BM128_BN128.lds_bytes(), 32 * 1024);
        for t in DENSE_TILES {
            assert!(t.lds_bytes() <= 64 * 1024);
            // Two workgroups per CU fit in the 64 KiB LDS.
            assert!(2 * t.lds_bytes() <= 64 * 1024);
        }
    }

    /// Bank (0..32) of every 4-byte word a 16-byte access at `addr` touches.
    fn banks(addr: u32) -> [u32; 4] {
        let b = (addr / 4) % 32;
        [b, (b + 1) % 32, (b + 2) % 32, (b + 3) % 32]
    }

    #[test]
    fn block_lds_layout_is_bank_conflict_free() {
        for gfx950 in [false, true] {
            layout_is_bank_conflict_free(gfx950);
        }
        // The build's own layout is gfx942's on the host.
        assert_eq!(block_swizzle(13, 2), block_swizzle_for(13, 2, false));
    }

    fn layout_is_bank_conflict_free(gfx950: bool) {
        let block_swizzle = |row: u32, chunk: u32| block_swizzle_for(row, chunk, gfx950);
        // The dense/m-grouped layout: 128-byte rows, chunk c of row r at physical chunk
        // c + rot(r) mod 8.
        for row in 0..512 {
            let mut offs: Vec<u32> = (0..8).map(|c| block_swizzle(row, c)).collect();
            offs.sort();
            assert_eq!(offs, (0..8).map(|c| row * 128 + 16 * c).collect::<Vec<_>>());
        }
        // Every (row, K byte) of a 16-row fragment is read exactly once per block: lane group g,
        // read i, half j covers K bytes 16·frag_chunk(g, i) + 8·j.
        let mut seen = [[false; 128]; 16];
        for lane in 0..64 {
            for read in 0..2 {
                let c = frag_chunk(lane >> 4, read);
                assert!(c < 8);
                for b in 0..16 {
                    let slot = &mut seen[(lane & 15) as usize][(16 * c + b) as usize];
                    assert!(!*slot, "lane {lane} read {read} byte {b} read twice");
                    *slot = true;
                }
            }
        }
        assert!(seen.iter().all(|r| r.iter().all(|&x| x)));
        // ds_read_b128 lane groups (module docs).
        let groups: [[u32; 8]; 4] =
            [[0, 1, 2, 3, 20, 21, 22, 23], [4, 5, 6, 7, 16, 17, 18, 19], [8, 9, 10, 11, 28, 29, 30, 31], [12, 13, 14, 15, 24, 25, 26, 27]];
        for frag_row0 in (0..512).step_by(16) {
            for read in 0..2 {
                for half in [0, 32] {
                    for g in &groups {
                        let mut used = [false; 32];
                        for &l in g {
                            let lane = l + half;
                            let addr = block_swizzle(frag_row0 + (lane & 15), frag_chunk(lane >> 4, read));
                            for b in banks(addr) {
                                assert!(!used[b as usize], "read conflict: row0 {frag_row0} read {read} lane {lane} bank {b}");
                                used[b as usize] = true;
                            }
                        }
                    }
                }
            }
        }
        // gfx950 ds_read_b128: 4 phases of 16 lanes over 64 banks (module docs).
        if gfx950 {
            let groups: [[u32; 16]; 2] =
                [[0, 1, 2, 3, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25, 26, 27], [4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 28, 29, 30, 31]];
            for frag_row0 in (0..512).step_by(16) {
                for read in 0..2 {
                    for half in [0, 32] {
                        for g in &groups {
                            let mut used = [false; 64];
                            for &l in g {
                                let lane = l + half;
                                let addr = block_swizzle(frag_row0 + (lane & 15), frag_chunk(lane >> 4, read));
                                for d in 0..4 {
                                    let b = (addr / 4 + d) % 64;
                                    assert!(!used[b as usize], "gfx950 read conflict: row0 {frag_row0} read {read} lane {lane} bank {b}");
                                    used[b as usize] = true;
                                }
                            }
                        }
                    }
                }
            }
        }
        // ds_write_b128 phases of 8 lanes: work-item t writes chunk t & 7 of row t >> 3 (plus a
        // multiple of 32 rows per pass).
        for pass in 0..16 {
            for phase in 0..(THREADS / 8) {
                let mut used = [false; 32];
                for t in phase * 8..phase * 8 + 8 {
                    let addr = block_swizzle(pass * 32 + (t >> 3), t & 7);
                    for b in banks(addr) {
                        assert!(!used[b as usize], "write conflict: pass {pass} t {t} bank {b}");
                        used[b as usize] = true;
                    }
                }
            }
        }
    }

    #[test]
    fn bf16_round_to_nearest_even() {
        assert_eq!(f32_to_bf16_rne(1.0), 0x3f80);
        assert_eq!(f32_to_bf16_rne(-2.0), 0xc000);
        // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties to even (1.0).
        assert_eq!(f32_to_bf16_rne(f32::from_bits(0x3f80_8000)), 0x3f80);
        // 1 + 3·2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: ties to even (up).
        assert_eq!(f32_to_bf16_rne(f32::from_bits(0x3f81_8000)), 0x3f82);
        // Just above halfway rounds up.
        assert_eq!(f32_to_bf16_rne(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert_eq!(f32_to_bf16_rne(f32::INFINITY), 0x7f80);
        assert_eq!(f32_to_bf16_rne(f32::MAX), 0x7f80); // overflows to +inf under RNE
        assert!(f32_to_bf16_rne(f32::NAN) & 0x7fff > 0x7f80);
        assert_eq!(pack_bf16x2(1.0, -2.0), 0xc000_3f80);
    }
}
