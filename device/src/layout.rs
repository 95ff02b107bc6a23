//! The weight pre-shuffle kernel: logical row-major B (`n × k` FP8 per group) → the
//! pre-shuffled B layout of [`crate::tile::shuffled_b_offset`] that the kernels reading B
//! straight into registers use (issue 12 part 3). The host's CPU conversion
//! (`fp8gemm::layout::preshuffle_bytes`) and this kernel both follow [`preshuffle_chunk`], so they
//! agree byte for byte (tested).
//!
//! # Work mapping
//! One work-item per 16-byte chunk of the output: chunk `c` of a group is lane `c mod 64` of
//! fragment read `(c / 64) mod 2` of unit `c / 128` (unit = `frag · nkb + kb`). It loads the 16
//! logical bytes that chunk holds (row `16·frag + (lane mod 16)`, columns
//! `128·kb + 16·frag_chunk(lane / 16, read) ..+16`), or zeros for a padding row, and stores them
//! at [`crate::tile::shuffled_b_offset`]`(frag, kb, nkb, read, lane)` = `16·c`: the stores of a
//! wave are 1 KiB contiguous, the loads sixteen 16-byte pieces of 4 rows each. The grid is
//! `⌈chunks / 256⌉ × G`: `blockIdx.y` is the group.

use crate::amdgpu_kernel;
use crate::args::PreshuffleArgs;
use crate::tile::{SCALE_BLOCK_K, frag_chunk, shuffled_b_offset};

/// Work-items per workgroup.
pub const PRESHUFFLE_THREADS: u32 = 256;
/// Most groups one launch converts (the grid's y extent).
pub const MAX_GROUPS: u32 = 65_535;

/// Output chunk `c` (16 bytes) of a pre-shuffled `n × k` weight with `nkb = k / 128` K blocks:
/// `(row, col, dst)` — the logical row and first column of the 16 bytes it holds, and its byte
/// offset in the pre-shuffled buffer (always `16·c`; computed through
/// [`shuffled_b_offset`] so the kernel and the layout's definition cannot drift). `row ≥ n`
/// means a padding row (zeros). `nkb` must be positive.
#[inline(always)]
pub const fn preshuffle_chunk(c: u32, nkb: u32) -> (u32, u32, u32) {
    let (unit, within) = (c >> 7, c & 127);
    let (read, lane) = (within >> 6, within & 63);
    let (frag, kb) = (unit / nkb, unit % nkb);
    let row = 16 * frag + (lane & 15);
    let col = kb * SCALE_BLOCK_K + 16 * frag_chunk(lane >> 4, read);
    (row, col, shuffled_b_offset(frag, kb, nkb, read, lane))
}

#[cfg(target_arch = "amdgpu")]
mod imp {
    use super::{PRESHUFFLE_THREADS, preshuffle_chunk};
    use crate::args::PreshuffleArgs;
    use crate::intrinsics::*;
    use crate::tile::SCALE_BLOCK_K;

    #[inline(always)]
    pub(super) fn preshuffle(args: PreshuffleArgs) {
        let (n, k) = (args.n, args.k);
        let nkb = k / SCALE_BLOCK_K;
        // ⌈n/16⌉ · k / 16 chunks per group (< 2^27: the host keeps a group below 2^31 bytes).
        let chunks = n.div_ceil(16) * nkb * 128;
        let c = workgroup_id_x() * PRESHUFFLE_THREADS + workitem_id_x();
        if nkb == 0 || c >= chunks {
            return;
        }
        let g = workgroup_id_y() as u64;
        let (row, col, dst) = preshuffle_chunk(c, nkb);
        let v = if row < n {
            let p = (args.src.addr() + g * (n as u64 * k as u64) + row as u64 * k as u64 + col as u64) as usize as *const U32x4;
            // SAFETY: group g < G, row < n and col + 16 ≤ k: 16 bytes inside the host-checked
            // `G × n × k` source; 16-byte aligned (aligned base, k % 128 == 0, col % 16 == 0).
            unsafe { *p }
        } else {
            U32x4([0; 4])
        };
        let q = (args.dst.addr() + g * (chunks as u64 * 16) + dst as u64) as usize as *mut U32x4;
        // SAFETY: dst = 16·c < 16·chunks: 16 bytes inside group g of the host-checked
        // `G × ⌈n/16⌉·16·k` output, 16-byte aligned.
        unsafe { *q = v };
    }
}

/// Logical `G × n × k` FP8 weights → the pre-shuffled layout (see the module docs).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn preshuffle_b(args: PreshuffleArgs) {
    imp::preshuffle(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile::shuffled_b_index;

    #[test]
    fn chunks_cover_the_layout_in_order() {
        for (n, k) in [(16u32, 128u32), (40, 384), (1, 256), (33, 128)] {
            let nkb = k / 128;
            let chunks = n.div_ceil(16) * nkb * 128;
            for c in 0..chunks {
                let (row, col, dst) = preshuffle_chunk(c, nkb);
                assert_eq!(dst, 16 * c);
                assert!(row < n.div_ceil(16) * 16 && col + 16 <= k);
                assert_eq!(shuffled_b_index(row as u64, col as u64, nkb as u64), dst as u64, "n={n} k={k} c={c}");
            }
        }
    }
}
