//! MoE routing kernels: route (`topk_ids` → contiguous or masked layout), gather + quantize
//! the hidden states into that layout, and unpermute the expert outputs back to token order.
//!
//! # Route (`moe_route_contiguous`, `moe_route_masked`; [`MoeRouteArgs`])
//! One workgroup of 256 work-items; a **stable counting sort** of the `P = T·k` pairs
//! `(t, j)` (flattened `p = t·k + j`) by expert, so the rows of an expert are in increasing
//! `p` order whatever the scheduling (no atomics anywhere, results are deterministic):
//! 1. histogram: the pairs are taken 256 at a time (one per work-item) into LDS; each
//!    work-item counts, over the 256, the pairs of its own expert before it (`before`) and in
//!    total; the last of an expert's pairs in the chunk adds the total to the expert's count;
//! 2. offsets (one work-item, `E` steps): contiguous `off[e] = Σ_{e'<e} ⌈count[e']/128⌉·128`,
//!    masked `off[e] = e · m_max` and `masked_m[e] = min(count[e], m_max)`;
//! 3. scatter: the same chunk walk; a pair's rank is its expert's running cursor plus
//!    `before`, its row `off[e] + rank` (masked: only when `rank < m_max`, otherwise the pair is
//!    dropped and counted); writes `slots[p]` and `row_src[row] = t`;
//! 4. fill: every row not written by the scatter gets `row_src` −1 (padding inside a used
//!    block: zero-filled by the gather, read by the grouped GEMM) or −2 (nothing reads it), and
//!    (contiguous) `m_indices` (binary search of `off`).
//!
//! Ids outside `0..E` are skipped (`slots[p] = −1`); those other than −1 (the "no expert"
//! marker) are counted in `status[0]`. Duplicate experts in one token's top-k are two pairs like
//! any other: two rows, both summed by the unpermute.
//!
//! # Gather (`moe_gather_quantize_bf16`; [`MoeGatherArgs`])
//! The activation quantization kernel's work mapping and code ([`crate::quant`]: 16 lanes per
//! 1×128 group, the same load, maximum, scale and conversion functions), with the input row
//! taken from `row_src`: bit-identical to the CPU recipe on the gathered rows.
//!
//! # Unpermute (`moe_unpermute_bf16`; [`MoeUnpermuteArgs`])
//! One work-item per 8 columns of one token: `acc = 0; for j in 0..k { acc = acc + w·y }` in
//! f32 (separate multiply and add, in `j` order), then `acc + shared`, then one round to
//! nearest even to bf16 ([`f32_to_bf16_bits`]). The host's CPU twin computes the same bits.

use crate::amdgpu_kernel;
use crate::args::{MoeGatherArgs, MoeRouteArgs, MoeUnpermuteArgs};

/// Most experts the routing kernel supports (its LDS holds three words per expert).
pub const MAX_EXPERTS: u32 = 1024;
/// Work-items of the routing workgroup (pairs per chunk).
pub const ROUTE_THREADS: u32 = 256;
/// Work-items per unpermute workgroup (8 columns each).
pub const UNPERMUTE_THREADS: u32 = 256;
/// Columns per unpermute work-item.
pub const UNPERMUTE_COLS: u32 = 8;
/// `row_src` value of a padding row the gather fills with the all-zero row.
pub const ROW_PADDING: i32 = -1;
/// `row_src` value of a row nothing reads (left untouched).
pub const ROW_UNUSED: i32 = -2;

/// LDS word offsets of the routing kernel: chunk keys, per-thread invalid and dropped counts,
/// then `count[E]`, `cursor[E]`, `off[E + 1]`.
#[cfg_attr(not(target_arch = "amdgpu"), allow(dead_code))]
const LDS_CHUNK: u32 = 0;
#[cfg_attr(not(target_arch = "amdgpu"), allow(dead_code))]
const LDS_INVALID: u32 = ROUTE_THREADS;
#[cfg_attr(not(target_arch = "amdgpu"), allow(dead_code))]
const LDS_DROPPED: u32 = 2 * ROUTE_THREADS;
const LDS_COUNT: u32 = 3 * ROUTE_THREADS;

/// Dynamic LDS bytes of the routing kernel for `experts` experts (16-byte multiple).
pub const fn route_lds_bytes(experts: u32) -> u32 {
    ((LDS_COUNT + 3 * experts + 1) * 4).div_ceil(16) * 16
}

/// `f32` → bf16 bits, round to nearest even, NaN kept NaN (quiet): the same bits as
/// `half::bf16::from_f32`.
#[inline(always)]
pub fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if b & 0x7fff_ffff > 0x7f80_0000 {
        return ((b >> 16) | 0x40) as u16;
    }
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

#[cfg(target_arch = "amdgpu")]
mod imp {
    use super::*;
    use crate::intrinsics::*;
    use crate::quant::imp::{abs_bits_max, convert8, load8, scale_of};
    use crate::quant::{ELEMS_PER_LANE, GROUP};

    #[inline(always)]
    fn lds() -> *mut u32 {
        dynamic_lds().cast::<u32>()
    }
    /// # Safety
    /// `i` is inside the launch's dynamic LDS ([`route_lds_bytes`]).
    #[inline(always)]
    unsafe fn ld(i: u32) -> u32 {
        // SAFETY: the caller guarantees the word lies inside the LDS allocation.
        unsafe { *lds().add(i as usize) }
    }
    /// # Safety
    /// As [`ld`], and no other work-item accesses word `i` until the next barrier.
    #[inline(always)]
    unsafe fn st(i: u32, v: u32) {
        // SAFETY: as above.
        unsafe { *lds().add(i as usize) = v }
    }

    /// Pairs of the current LDS chunk with key `key` before work-item `tid`, and in total.
    #[inline(always)]
    fn scan(key: u32, tid: u32) -> (u32, u32) {
        let (mut before, mut total) = (0u32, 0u32);
        for q in 0..ROUTE_THREADS / 4 {
            // SAFETY: words 0..256 are the chunk, inside the LDS allocation, written before the
            // barrier that precedes every call.
            let v = unsafe { lds_read_b128((LDS_CHUNK + 4 * q) * 4) }.to_array();
            for (i, &w) in v.iter().enumerate() {
                let eq = (w == key) as u32;
                total += eq;
                before += eq & ((4 * q + i as u32) < tid) as u32;
            }
        }
        (before, total)
    }

    /// The key of pair `p`: its expert, or `u32::MAX` when skipped; and whether it is invalid
    /// (outside `0..E` and not −1).
    #[inline(always)]
    fn key_of(a: &MoeRouteArgs, p: u32, pairs: u32) -> (u32, bool) {
        if p >= pairs {
            return (u32::MAX, false);
        }
        // SAFETY: p < tokens · top_k, the length of topk_ids (host contract).
        let id = unsafe { *a.topk_ids.as_ptr().add(p as usize) };
        if id >= 0 && (id as u32) < a.experts { (id as u32, false) } else { (u32::MAX, id != -1) }
    }

    #[inline(always)]
    pub fn route<const MASKED: bool>(a: MoeRouteArgs) {
        let tid = workitem_id_x();
        let e_n = a.experts;
        if e_n == 0 || e_n > MAX_EXPERTS || a.top_k == 0 || (MASKED && a.m_max == 0) {
            return;
        }
        let pairs = a.tokens.saturating_mul(a.top_k);
        let (cnt, cur, off) = (LDS_COUNT, LDS_COUNT + e_n, LDS_COUNT + 2 * e_n);
        let mut e = tid;
        while e < e_n {
            // SAFETY: cnt + e, cur + e < LDS_COUNT + 3E (route_lds_bytes); each e by one thread.
            unsafe {
                st(cnt + e, 0);
                st(cur + e, 0);
            }
            e += ROUTE_THREADS;
        }
        let (mut invalid, mut dropped) = (0u32, 0u32);
        lds_barrier();
        let chunks = pairs.div_ceil(ROUTE_THREADS);

        // 1. Histogram.
        for c in 0..chunks {
            let p = c * ROUTE_THREADS + tid;
            let (key, bad) = key_of(&a, p, pairs);
            invalid += bad as u32;
            // SAFETY: word tid of the chunk, this work-item's own.
            unsafe { st(LDS_CHUNK + tid, key) };
            lds_barrier();
            if key != u32::MAX {
                let (before, total) = scan(key, tid);
                if before + 1 == total {
                    // SAFETY: key < E; only the last pair of this expert in the chunk writes.
                    unsafe { st(cnt + key, ld(cnt + key) + total) };
                }
            }
            lds_barrier();
        }

        // 2. Offsets.
        if tid == 0 {
            let mut run = 0u32;
            for e in 0..e_n {
                // SAFETY: e < E: inside count/off; only work-item 0 touches them here.
                unsafe {
                    st(off + e, run);
                    let c = ld(cnt + e);
                    if MASKED {
                        // SAFETY: masked_m holds E i32 (host contract).
                        *a.masked_m.as_mut_ptr().add(e as usize) = c.min(a.m_max) as i32;
                        run = run.saturating_add(a.m_max);
                    } else {
                        run = run.saturating_add(c.div_ceil(128) * 128);
                    }
                }
            }
            // SAFETY: off + E is the last word of the LDS layout.
            unsafe { st(off + e_n, run) };
        }
        lds_barrier();

        // 3. Scatter.
        for c in 0..chunks {
            let p = c * ROUTE_THREADS + tid;
            let (key, _) = key_of(&a, p, pairs);
            // SAFETY: this work-item's own chunk word.
            unsafe { st(LDS_CHUNK + tid, key) };
            lds_barrier();
            let (mut before, mut total, mut base, mut first) = (0, 0, 0, 0);
            if key != u32::MAX {
                (before, total) = scan(key, tid);
                // SAFETY: key < E; cursor and offsets are only read between these barriers.
                unsafe {
                    base = ld(cur + key);
                    first = ld(off + key);
                }
            }
            lds_barrier();
            if p < pairs {
                let mut slot = -1i32;
                if key != u32::MAX {
                    let rank = base + before;
                    if MASKED {
                        if rank < a.m_max {
                            slot = (key * a.m_max + rank) as i32;
                        } else {
                            dropped += 1;
                        }
                    } else if first.saturating_add(rank) < a.rows {
                        slot = (first + rank) as i32;
                    }
                    if before + 1 == total {
                        // SAFETY: key < E; the only writer of this cursor in this chunk.
                        unsafe { st(cur + key, base + total) };
                    }
                }
                // SAFETY: p < tokens·top_k (slots' length); slot < rows (masked: key < E and
                // rank < m_max, rows = E·m_max; contiguous: checked above) for row_src.
                unsafe {
                    *a.slots.as_mut_ptr().add(p as usize) = slot;
                    if slot >= 0 {
                        *a.row_src.as_mut_ptr().add(slot as usize) = (p / a.top_k) as i32;
                    }
                }
            }
            lds_barrier();
        }

        // Status.
        // SAFETY: this work-item's own words.
        unsafe {
            st(LDS_INVALID + tid, invalid);
            st(LDS_DROPPED + tid, dropped);
        }
        lds_barrier();
        // SAFETY: off + E written in step 2, read-only from here on.
        let used = unsafe { ld(off + e_n) };
        if tid == 0 {
            let (mut inv, mut drp) = (0u32, 0u32);
            for i in 0..ROUTE_THREADS {
                // SAFETY: words of the per-thread arrays, written before the barrier.
                unsafe {
                    inv += ld(LDS_INVALID + i);
                    drp += ld(LDS_DROPPED + i);
                }
            }
            // SAFETY: status holds 4 i32 (host contract).
            unsafe {
                let s = a.status.as_mut_ptr();
                *s = inv as i32;
                *s.add(1) = drp as i32;
                *s.add(2) = used.min(a.rows) as i32;
                *s.add(3) = 0;
            }
        }

        // 4. Fill the rows the scatter did not write.
        let mut r = tid;
        while r < a.rows {
            // SAFETY (whole block): r < rows, the length of row_src and m_indices; the LDS words
            // read are count/off entries below E + 1, read-only since step 2.
            unsafe {
                if MASKED {
                    let (e, i) = (r / a.m_max, r % a.m_max);
                    if e >= e_n || i >= ld(cnt + e).min(a.m_max) {
                        *a.row_src.as_mut_ptr().add(r as usize) = ROW_UNUSED;
                    }
                } else if r >= used {
                    *a.m_indices.as_mut_ptr().add(r as usize) = -1;
                    *a.row_src.as_mut_ptr().add(r as usize) = ROW_UNUSED;
                } else {
                    // The last expert with off[e] ≤ r (off is non-decreasing, off[0] = 0 ≤ r).
                    let (mut lo, mut hi) = (0u32, e_n - 1);
                    while lo < hi {
                        let mid = (lo + hi).div_ceil(2);
                        if ld(off + mid) <= r { lo = mid } else { hi = mid - 1 }
                    }
                    if r - ld(off + lo) < ld(cnt + lo) {
                        *a.m_indices.as_mut_ptr().add(r as usize) = lo as i32;
                    } else {
                        *a.m_indices.as_mut_ptr().add(r as usize) = -1;
                        *a.row_src.as_mut_ptr().add(r as usize) = ROW_PADDING;
                    }
                }
            }
            r += ROUTE_THREADS;
        }
    }

    #[inline(always)]
    pub fn gather(a: MoeGatherArgs) {
        let tid = workitem_id_x();
        let (k, rows) = (a.k, a.rows);
        let kb = k.div_ceil(GROUP);
        if kb == 0 || rows == 0 {
            return;
        }
        let units = rows.saturating_mul(kb);
        let unit = workgroup_id_x() * crate::quant::ACT_GROUPS_PER_WG + (tid >> 4);
        let j = tid & 15;
        let (row, kbi) = (unit / kb, unit % kb);
        let col = kbi * GROUP + j * ELEMS_PER_LANE;
        // SAFETY: row < rows (unit < units), the length of row_src.
        let src = if unit < units { unsafe { *a.row_src.as_ptr().add(row as usize) } } else { ROW_UNUSED };
        let load = src >= 0 && (src as u32) < a.tokens;
        // The same for all 16 lanes of a group (same row).
        let write = load || src == ROW_PADDING;
        let in_cols = col < k;
        let mut v = [0f32; 8];
        if load && in_cols {
            // SAFETY: src < tokens, col + 8 ≤ k (k % 8 == 0): inside the tokens × k bf16 input,
            // 16-byte aligned.
            v = unsafe { load8::<false>(a.x.addr(), src as u64 * k as u64 + col as u64) };
        }
        let amax_bits = row16_umax(if load && in_cols { abs_bits_max(&v) } else { 0 });
        let (sf, inv, bad) = scale_of(amax_bits, a.fp8_max);
        if write && in_cols {
            let data = convert8(&v, inv, a.fp8_max, bad);
            let p = (a.q.addr() + row as u64 * k as u64 + col as u64) as usize as *mut U32x2;
            // SAFETY: 8 bytes inside the rows × k output, 8-byte aligned.
            unsafe { *p = data };
            if j == 0 {
                // SAFETY: (row, kbi) indexes the rows × kb scale output.
                unsafe { *a.sf.as_mut_ptr().add((row as u64 * kb as u64 + kbi as u64) as usize) = sf };
            }
        }
    }

    #[inline(always)]
    pub fn unpermute(a: MoeUnpermuteArgs) {
        let h8 = a.hidden / UNPERMUTE_COLS;
        if h8 == 0 {
            return;
        }
        let units = a.tokens.saturating_mul(h8);
        let u = workgroup_id_x() * UNPERMUTE_THREADS + workitem_id_x();
        if u >= units {
            return;
        }
        let (t, col) = (u / h8, (u % h8) * UNPERMUTE_COLS);
        let h = a.hidden as u64;
        let mut acc = [0f32; 8];
        for j in 0..a.top_k {
            let p = (t * a.top_k + j) as usize;
            // SAFETY: p < tokens · top_k, the length of slots and weights.
            let (s, w) = unsafe { (*a.slots.as_ptr().add(p), *a.weights.as_ptr().add(p)) };
            if s >= 0 && (s as u32) < a.rows {
                // SAFETY: s < rows, col + 8 ≤ hidden: inside the rows × hidden bf16 y, aligned.
                let y = unsafe { load8::<false>(a.y.addr(), s as u64 * h + col as u64) };
                for i in 0..8 {
                    acc[i] = acc[i] + w * y[i];
                }
            }
        }
        let at = t as u64 * h + col as u64;
        if a.shared.addr() != 0 {
            // SAFETY: t < tokens: inside the tokens × hidden bf16 shared output, aligned.
            let s = unsafe { load8::<false>(a.shared.addr(), at) };
            for i in 0..8 {
                acc[i] = acc[i] + s[i];
            }
        }
        let mut w = [0u32; 4];
        for i in 0..4 {
            w[i] = f32_to_bf16_bits(acc[2 * i]) as u32 | (f32_to_bf16_bits(acc[2 * i + 1]) as u32) << 16;
        }
        // SAFETY: 16 bytes inside the tokens × hidden bf16 output, 16-byte aligned.
        unsafe { *((a.out.addr() + at * 2) as usize as *mut U32x4) = U32x4(w) };
    }
}

/// Routing into the contiguous layout (prefill).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_route_contiguous(args: MoeRouteArgs) {
    imp::route::<false>(args)
}
/// Routing into the masked layout (decode).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_route_masked(args: MoeRouteArgs) {
    imp::route::<true>(args)
}
/// Gather of bf16 hidden rows into the layout, quantized to FP8 with 1×128 scales.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_gather_quantize_bf16(args: MoeGatherArgs) {
    imp::gather(args)
}
/// Weighted sum of the expert outputs back into token order, bf16 out.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_unpermute_bf16(args: MoeUnpermuteArgs) {
    imp::unpermute(args)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn lds_layout_fits() {
        assert_eq!(route_lds_bytes(1) % 16, 0);
        assert!(route_lds_bytes(MAX_EXPERTS) <= 64 * 1024);
        assert!(route_lds_bytes(8) >= (3 * 256 + 3 * 8 + 1) * 4);
    }
}
