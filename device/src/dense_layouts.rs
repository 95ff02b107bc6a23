//! Dense FP8 GEMMs of DeepGEMM's other operand layouts — `fp8_gemm_nn`, `fp8_gemm_tn`,
//! `fp8_gemm_tt` — as **loader variants** of the NT kernels ([`crate::dense`]): the same main
//! loop (`dense::imp::tile_gemm_majors`), LDS layout, MFMAs, promotion and bf16 epilogue, with
//! each operand's global → LDS copy chosen by its [`Major`].
//!
//! # Layouts (DeepGEMM's definitions)
//!
//! DeepGEMM (`csrc/apis/gemm.hpp`, `fp8_fp4_gemm_{nn,tn,tt}`) implements every layout as
//! `fp8_gemm_nt` on transposed views: the first letter is A's layout (`n`: `A[m, k]`, K-major;
//! `t`: A given as `[k, m]`, M-major), the second B's (`t`: `B[n, k]`, K-major; `n`: B given as
//! `[k, n]`, N-major), and D = A·B in each case:
//!
//! | layout | A in memory | B in memory | A major | B major |
//! |---|---|---|---|---|
//! | NT | `m × k` | `n × k` | K | K |
//! | NN | `m × k` | `k × n` | K | MN |
//! | TN | `k × m` | `k × n` | MN | MN |
//! | TT | `k × m` | `n × k` | MN | K |
//!
//! The scales keep their K granularity whatever the data's major: DeepGEMM's tests
//! (`tests/generators.py`, `cast_fp8_fp4_with_major`) quantize `[mn, k]` as for NT and make the
//! MN-major operand with `x_fp8[0].T.contiguous().T`, the scale tensor unchanged (the `tn`/`tt`/`nn`
//! aliases receive it transposed as a view). So SFA is `m × ⌈k/128⌉` (1 × 128 per row and
//! K block) and SFB `⌈n/128⌉ × ⌈k/128⌉` (128 × 128) in every layout, stored exactly as for NT,
//! and the kernels read them with the NT code.
//!
//! Arguments: [`DenseGemmArgs`] with, for an MN-major A, `a` = `k × m` bytes whose K rows are
//! `lda ≥ m` bytes apart (`m % 8 == 0`, `lda % 8 == 0`), and for an MN-major B, `b` = `k × n`
//! bytes contiguous (`n % 8 == 0`). A K-major operand is as for NT.
//!
//! # The MN-major copy
//!
//! `dense::imp::MnMajorCopy`: per 128-K block an operand tile of `W` = 64 or 128 columns is `128 × W`
//! bytes; work-item `u` of the copy owns 16 K rows × 8 columns (16 `buffer_load_dwordx2`,
//! consecutive work-items on consecutive 8-byte pieces of one K row: 16 lanes per 128-byte line
//! at `W = 128`), transposes them in registers (the K-grouped kernels' 8 × 8 byte transpose,
//! twice) and writes 8 columns' 16 K bytes with `ds_write_b128` into the rows and chunk the
//! K-major copy would have written. An MN-major A uses work-items `0..BM`, an MN-major B the
//! next `BN` (or `0..BN` when A is K-major); the other waves skip the copy of that operand.
//! Columns past `m` (`n`) are parked (read 0): their rows (columns) of D are not stored.
//!
//! # Kernels (`bm64_bn128`, data-parallel, one LDS stage, prefetch depth 1)
//!
//! Measured on the gfx942 code object (LLVM 22.1.4, `.vgpr_count` / `.sgpr_count` of the
//! kernel metadata):
//!
//! | kernel | A major | B major | VGPR | AGPR | SGPR | spills | scratch | LDS | waves/SIMD (regs) | WGs/CU (LDS) |
//! |---|---|---|---|---|---|---|---|---|---|---|
//! | `fp8_gemm_nt_bm64_bn128` (for comparison) | K | K | 138 | 0 | 42 | 0 | 0 | 24 KiB | 3 | 2 |
//! | `fp8_gemm_nn_bm64_bn128` | K | MN | 176 | 0 | 63 | 0 | 0 | 24 KiB | 2 | 2 |
//! | `fp8_gemm_tn_bm64_bn128` | MN | MN | 210 | 0 | 80 | 0 | 0 | 24 KiB | 2 | 2 |
//! | `fp8_gemm_tt_bm64_bn128` | MN | K | 190 | 0 | 67 | 0 | 0 | 24 KiB | 2 | 2 |
//!
//! The MN-major copy holds a 16 × 8-byte unit (32 VGPRs) between its loads and its LDS writes
//! where the K-major copy holds 4 or 2 16-byte chunks; at 2 waves per SIMD the kernels still run
//! the 2 workgroups per CU that the tile's LDS allows, as NT's does. (A first version indexed the
//! unit's registers in `for` loops and LLVM kept them in scratch, 176–264 bytes; the copy now
//! uses straight-line code, `unroll!`.)

use crate::amdgpu_kernel;
use crate::args::DenseGemmArgs;

/// How an operand of a dense GEMM is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Major {
    /// Rows of K contiguous values (`A[m, k]`, `B[n, k]`): NT's operands.
    K,
    /// K rows of M (or N) contiguous values (`A` given as `[k, m]`, `B` as `[k, n]`).
    Mn,
}

/// Which MN-major operand extents the kernels accept: multiples of this (each copy work-item
/// loads 8 consecutive columns of a K row).
pub const MN_ALIGN: u32 = 8;

/// The unit `(m8, k16)` of work-item `u` (`0 .. width`) of an MN-major copy of `width` columns
/// (64 or 128): columns `8·m8 .. +8`, K rows `16·k16 .. +16` of the 128-K block. `m8` is the low
/// part of `u`, so consecutive work-items read consecutive 8-byte pieces of one K row.
#[inline(always)]
pub const fn mn_copy_unit(u: u32, width: u32) -> (u32, u32) {
    let w8 = width / 8;
    (u % w8, (u / w8) & 7)
}

/// The column rotation of unit `m8`: its transposed output `j` holds column `j ⊕ mn_unit_xor(m8)`.
#[inline(always)]
pub const fn mn_unit_xor(m8: u32) -> u32 {
    m8 & 3
}

/// LDS byte offset (inside the operand's region) where transposed output `j` of unit `(m8, k16)`
/// goes: 16-byte chunk `k16` of the LDS row of column `8·m8 + (j ⊕ mn_unit_xor(m8))`, where the
/// K-major copy puts the same bytes ([`crate::tile::block_swizzle`]).
#[inline(always)]
pub const fn mn_unit_lds_offset(m8: u32, k16: u32, j: u32) -> u32 {
    crate::tile::block_swizzle(8 * m8 + (j ^ mn_unit_xor(m8)), k16)
}

/// The work-item schedule of a dense kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// One workgroup per output tile, the whole K per workgroup.
    DataParallel,
}

/// One kernel of the other dense layouts, described by what a kernel registry needs: the
/// problem (dense), both operand majors, the tile, the schedule and the LDS stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DenseLayoutKernel {
    /// Exported kernel symbol.
    pub name: &'static str,
    /// A's major.
    pub a: Major,
    /// B's major.
    pub b: Major,
    /// Rows of D per workgroup.
    pub block_m: u32,
    /// Columns of D per workgroup.
    pub block_n: u32,
    /// Work schedule.
    pub schedule: Schedule,
    /// LDS stages of the main loop (one 128-K block each).
    pub stages: u32,
}

impl DenseLayoutKernel {
    /// The tile as the dense kernels' [`crate::tile::DenseTile`] (LDS bytes, grid, prefetch depth).
    pub const fn tile(&self) -> crate::tile::DenseTile {
        crate::tile::DenseTile { name: self.name, block_m: self.block_m, block_n: self.block_n }
    }
    /// Dynamic LDS of a launch (the launch's `sharedMemBytes`).
    pub const fn lds_bytes(&self) -> u32 {
        self.tile().lds_bytes()
    }
    /// Workgroups of the 1-D grid for an `m × n` output.
    pub const fn grid(&self, m: u32, n: u32) -> u32 {
        self.tile().grid(m, n)
    }
}

const fn kernel(name: &'static str, a: Major, b: Major) -> DenseLayoutKernel {
    DenseLayoutKernel { name, a, b, block_m: 64, block_n: 128, schedule: Schedule::DataParallel, stages: 1 }
}

/// `fp8_gemm_nn_bm64_bn128`: A K-major, B MN-major.
pub const NN_BM64_BN128: DenseLayoutKernel = kernel("fp8_gemm_nn_bm64_bn128", Major::K, Major::Mn);
/// `fp8_gemm_tn_bm64_bn128`: both operands MN-major.
pub const TN_BM64_BN128: DenseLayoutKernel = kernel("fp8_gemm_tn_bm64_bn128", Major::Mn, Major::Mn);
/// `fp8_gemm_tt_bm64_bn128`: A MN-major, B K-major.
pub const TT_BM64_BN128: DenseLayoutKernel = kernel("fp8_gemm_tt_bm64_bn128", Major::Mn, Major::K);

/// Every kernel of this module.
pub const DENSE_LAYOUT_KERNELS: [DenseLayoutKernel; 3] = [NN_BM64_BN128, TN_BM64_BN128, TT_BM64_BN128];

/// `D = A · B`, A `m × k` (K-major), B `k × n` (N-major), 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_nn_bm64_bn128(args: DenseGemmArgs) {
    use crate::dense::imp::{KMajor, MnMajor, gemm_majors};
    gemm_majors::<2, 4, { crate::tile::BM64_BN128.prefetch_depth() }, KMajor, MnMajor>(args)
}

/// `D = Aᵀ · B`, A `k × m` (M-major), B `k × n` (N-major), 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_tn_bm64_bn128(args: DenseGemmArgs) {
    use crate::dense::imp::{MnMajor, gemm_majors};
    gemm_majors::<2, 4, { crate::tile::BM64_BN128.prefetch_depth() }, MnMajor, MnMajor>(args)
}

/// `D = Aᵀ · Bᵀ`, A `k × m` (M-major), B `n × k` (K-major), 64 × 128 tiles.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn fp8_gemm_tt_bm64_bn128(args: DenseGemmArgs) {
    use crate::dense::imp::{KMajor, MnMajor, gemm_majors};
    gemm_majors::<2, 4, { crate::tile::BM64_BN128.prefetch_depth() }, MnMajor, KMajor>(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile::THREADS;

    #[test]
    fn specs_match_the_table() {
        let specs = [FP8_GEMM_NN_BM64_BN128, FP8_GEMM_TN_BM64_BN128, FP8_GEMM_TT_BM64_BN128];
        for (spec, k) in specs.iter().zip(DENSE_LAYOUT_KERNELS) {
            assert_eq!(spec.name, k.name);
            assert_eq!(spec.workgroup_size, THREADS);
            // Every MN-major copy fits the workgroup: A's on 0..BM, B's after it.
            let mn_threads = if k.a == Major::Mn { k.block_m } else { 0 } + if k.b == Major::Mn { k.block_n } else { 0 };
            assert!(mn_threads <= THREADS, "{}", k.name);
        }
        assert_eq!(NN_BM64_BN128.lds_bytes(), 24 * 1024);
        assert_eq!(TN_BM64_BN128.grid(65, 136), 2 * 2);
    }

    #[test]
    fn mn_copy_writes_every_lds_byte_of_the_operand_once_where_the_k_major_copy_does() {
        use crate::tile::{SCALE_BLOCK_K, block_swizzle};
        for width in [64u32, 128] {
            let mut count = [0u8; 128 * 128];
            for u in 0..width {
                let (m8, k16) = mn_copy_unit(u, width);
                assert!(m8 < width / 8 && k16 < 8, "width {width} u {u}");
                for j in 0..8 {
                    let off = mn_unit_lds_offset(m8, k16, j);
                    // Column 8·m8 + (j ⊕ xor), K bytes 16·k16 .. +16: the K-major copy's chunk.
                    let col = 8 * m8 + (j ^ mn_unit_xor(m8));
                    assert_eq!(off, block_swizzle(col, k16));
                    for b in &mut count[off as usize..off as usize + 16] {
                        *b += 1;
                    }
                }
            }
            let used = (width * SCALE_BLOCK_K) as usize;
            assert!(count[..used].iter().all(|&c| c == 1), "width {width}");
            assert!(count[used..].iter().all(|&c| c == 0), "width {width}");
        }
    }
}
