//! M-grouped bs kernels on the pipelined bs loop (`m_grouped_fp8_gemm_nt_{contiguous,masked}_bs_pipe_bm*_bn128`).
//!
//! The same per-tile jobs as the grouped bs kernels of [`crate::grouped`] (group lookup, skipped
//! blocks, the contiguous per-row store predicate, the masked clamp, B's resource over the
//! group's pre-shuffled slice: `crate::grouped`'s `contiguous_with` / `masked_with`), run on the
//! pipelined loop of [`crate::mainloop_bs`] ("Pipelined loop", B two blocks ahead, two workgroups
//! per CU since the loop's one-exit shape), which computes the bs loop's result bit for bit.
//!
//! Tiles: [`CONTIGUOUS_BS_PIPE_TILES`] (64 rows only: a contiguous tile must divide
//! [`crate::tile::M_ALIGNMENT_CONTIGUOUS`] = 128 so that no tile spans two groups, which rules
//! out 48, 80 and 96), [`MASKED_BS_PIPE_TILES`] (32 × 64, 64 and 80 rows). The host chooses
//! among them and the two-phase kernels with its generated cost model
//! (`fp8gemm::select::plan_grouped`; `FP8GEMM_FORCE_TILE` forces a tile, and
//! `Overrides::bs_pipelined` the 64-row tile's loop).
//!
//! **Masked 32 × 64** (`m_grouped_fp8_gemm_nt_masked_bs_pipe_bm32_bn64`): the dense narrow
//! tile's loop (`mainloop_bs`, "Narrow tiles": one B fragment per wave, four A stages, one
//! barrier per two K blocks) over the masked job. Twice the workgroups of the 32 × 128 tile,
//! each streaming half its B bytes per block: the decode launches that left CUs idle or split
//! K to fill them. Modelled MI300X µs (`FP8GEMM_PRESHUFFLED=1 fp8gemm profile --layout masked`),
//! the previous choice → the narrow tile: 1×16 over 7168×2048 11.03 (32 × 128 split 4) → 8.08;
//! 2×32 over 7168×2048 16.42 (split 4) → 11.60; 2×64 over 7168×2048 17.05 (split 2) → 14.26;
//! 2×16 over 4096×7168 21.11 (split 3) → 18.24; 4×32 over 4096×7168 34.42 → 32.48 (MI300X,
//! modelled, when a hand rule chose it).
//!
//! Resources (`fp8gemm info`, gfx942 and gfx950 alike; VGPR = unified count; checked by
//! `grouped_bs_pipe_kernels_meet_the_resource_goals` in `tests/dense_kernel.rs`): 0 spills,
//! 0 scratch, all LDS dynamic, 2 waves per SIMD (two workgroups per CU; before the loop's
//! one-exit shape 300–312 and 364 registers, one).
//!
//! | kernel | VGPR | AGPR | SGPR | waves/SIMD |
//! |---|---|---|---|---|
//! | `m_grouped_fp8_gemm_nt_masked_bs_pipe_bm32_bn64` | 117 | 0 | 40 | 4 (LDS: 3 per CU) |
//! | `m_grouped_fp8_gemm_nt_contiguous_bs_pipe_bm64_bn128` | 226 | 0 | 38 | 2 |
//! | `m_grouped_fp8_gemm_nt_masked_bs_pipe_bm64_bn128` | 219 | 0 | 41 | 2 |
//! | `m_grouped_fp8_gemm_nt_masked_bs_pipe_bm80_bn128` | 257 | 1 | 42 | 1 (was 256 and 2: grown since, unnoticed; only forced) |
//!
//! `FP8GEMM_PRESHUFFLED=1 fp8gemm compare --set grouped` (timing model, MI300X, TFLOPS,
//! *modelled*), before (the two-per-CU 64 × 128 bs kernel on every row) and after (the
//! pipelined one where K ≥ 40 blocks):
//!
//! | problem | before | after |
//! |---|---|---|
//! | contiguous 4×8192 over 4096×7168 | 890.5 | **925.0** |
//! | contiguous 8×4096 over 4096×7168 | 890.6 | **925.0** |
//! | masked 1×1024 over 4096×7168 | 672.9 | **761.2** |
//! | masked 2×512 over 4096×7168 | 673.4 | **761.1** |
//! | masked 4×256 over 4096×7168 | 673.9 | **761.1** |
//! | contiguous 4×8192 over 7168×2048 | 723.5 | 724.2 (unchanged kernel) |
//! | contiguous 8×4096 over 7168×2048 | 725.1 | 723.0 (unchanged kernel) |
//! | masked 1×1024 over 7168×2048 | 598.9 | 598.9 (unchanged kernel) |
//! | masked 2×512 over 7168×2048 | 602.3 | 602.3 (unchanged kernel) |
//! | masked 4×256 over 7168×2048 | 600.9 | 600.9 (unchanged kernel) |
//!
//! Issue 12's contiguous goal (≥ 900) is met at (4096, 7168), not at (7168, 2048) (16 K
//! blocks: the pipelined loop at one workgroup per CU was slower there, 656 vs 727 modelled).
//! With the pipelined kernels at two per CU it runs from 2 K blocks on: contiguous over
//! (7168, 2048) 721 → 865 TFLOPS, masked 569–601 → 703–749, contiguous over (4096, 7168)
//! 1127, masked 1041 (MI300X, modelled).

use crate::amdgpu_kernel;
use crate::args::{MGroupedContiguousArgs, MGroupedMaskedArgs};
use crate::tile::BsTile;

/// The m-grouped contiguous kernels on the pipelined bs loop, smallest first.
pub const CONTIGUOUS_BS_PIPE_TILES: [BsTile; 1] =
    [BsTile { name: "m_grouped_fp8_gemm_nt_contiguous_bs_pipe_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 }];

/// The m-grouped masked kernels on the pipelined bs loop, smallest first.
pub const MASKED_BS_PIPE_TILES: [BsTile; 3] = [
    BsTile { name: "m_grouped_fp8_gemm_nt_masked_bs_pipe_bm32_bn64", block_m: 32, block_n: 64, lds_stages: 4 },
    BsTile { name: "m_grouped_fp8_gemm_nt_masked_bs_pipe_bm64_bn128", block_m: 64, block_n: 128, lds_stages: 2 },
    BsTile { name: "m_grouped_fp8_gemm_nt_masked_bs_pipe_bm80_bn128", block_m: 80, block_n: 128, lds_stages: 2 },
];

const _: () = {
    let mut i = 0;
    while i < CONTIGUOUS_BS_PIPE_TILES.len() {
        assert!(crate::tile::M_ALIGNMENT_CONTIGUOUS.is_multiple_of(CONTIGUOUS_BS_PIPE_TILES[i].block_m));
        i += 1;
    }
};

#[cfg(target_arch = "amdgpu")]
pub(crate) mod imp {
    use crate::dense::imp::{Epilogue, TileJob};
    use crate::grouped::imp::TileLoop;

    /// The pipelined bs loop (`FM` rows of 16 fragments, B two blocks ahead) as a grouped
    /// [`TileLoop`].
    pub(crate) struct Pipe<const FM: usize>;

    /// The narrow pipelined bs loop (32 × 64: one B fragment per wave, four A stages, one
    /// barrier per two K blocks: `mainloop_bs`, "Narrow tiles") as a grouped [`TileLoop`].
    pub(super) struct PipeNarrow;
    impl TileLoop for PipeNarrow {
        #[inline(always)]
        fn run<E: Epilogue>(job: &TileJob, keep_row: impl Fn(u32) -> bool, epi: &E) {
            crate::mainloop_bs::imp::tile_gemm_bs_pipe::<2, 1, 2, 2, _>(job, keep_row, epi);
        }
    }
    impl<const FM: usize> TileLoop for Pipe<FM> {
        #[inline(always)]
        fn run<E: Epilogue>(job: &TileJob, keep_row: impl Fn(u32) -> bool, epi: &E) {
            crate::mainloop_bs::imp::tile_gemm_bs_pipe::<FM, 2, 2, 1, _>(job, keep_row, epi);
        }
    }
}

/// Contiguous layout, pre-shuffled B, 64 × 128 tiles on the pipelined loop (two workgroups per CU).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_contiguous_bs_pipe_bm64_bn128(args: MGroupedContiguousArgs) {
    crate::grouped::imp::contiguous_with::<4, 2, true, imp::Pipe<4>>(args)
}

/// Masked layout, pre-shuffled B, 32 × 64 tiles on the narrow pipelined loop (MoE decode: twice
/// the workgroups of the 32 × 128 tile, each with half its texture-path bytes per block).
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_masked_bs_pipe_bm32_bn64(args: MGroupedMaskedArgs) {
    crate::grouped::imp::masked_with::<2, 1, true, imp::PipeNarrow>(args)
}

/// Masked layout, pre-shuffled B, 64 × 128 tiles on the pipelined loop.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_masked_bs_pipe_bm64_bn128(args: MGroupedMaskedArgs) {
    crate::grouped::imp::masked_with::<4, 2, true, imp::Pipe<4>>(args)
}

/// Masked layout, pre-shuffled B, 80 × 128 tiles on the pipelined loop.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn m_grouped_fp8_gemm_nt_masked_bs_pipe_bm80_bn128(args: MGroupedMaskedArgs) {
    crate::grouped::imp::masked_with::<5, 2, true, imp::Pipe<5>>(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile::THREADS;

    #[test]
    fn specs_match_the_tile_tables() {
        for (spec, tile) in [M_GROUPED_FP8_GEMM_NT_CONTIGUOUS_BS_PIPE_BM64_BN128].iter().zip(CONTIGUOUS_BS_PIPE_TILES) {
            assert_eq!(spec.name, tile.name);
            assert_eq!(spec.workgroup_size, THREADS);
        }
        let m =
            [M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM32_BN64, M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM64_BN128, M_GROUPED_FP8_GEMM_NT_MASKED_BS_PIPE_BM80_BN128];
        for (spec, tile) in m.iter().zip(MASKED_BS_PIPE_TILES) {
            assert_eq!(spec.name, tile.name);
            assert_eq!(spec.workgroup_size, THREADS);
        }
    }
}
