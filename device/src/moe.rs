//! MoE routing kernels: route (`topk_ids` → contiguous or masked layout), gather + quantize
//! the hidden states into that layout, and unpermute the expert outputs back to token order.
//!
//! # Route (`moe_route_count`, `moe_route_offsets_*`, `moe_route_scatter_*`; [`MoeRouteArgs`])
//! A **stable counting sort** of the `P = T·k` pairs `(t, j)` (flattened `p = t·k + j`) by
//! expert, so the rows of an expert are in increasing `p` order whatever the scheduling (no
//! atomics anywhere: the results are deterministic). Three launches, the pairs cut into chunks
//! of 256 (one per work-item):
//! 1. count (one workgroup per chunk, all CUs): the chunk's keys go to LDS; each work-item
//!    counts, over the 256, the pairs of its own expert before it (its `local_rank`) and in
//!    total; the last of an expert's pairs in the chunk writes the total into the chunk's LDS
//!    histogram, which is stored as the chunk's row of `chunk_counts` (`E + 1` columns, the last
//!    one counting invalid ids);
//! 2. offsets (one workgroup): per column, the exclusive prefix over chunks (in place; a
//!    work-item takes two columns at once and issues the loads of 32 chunks of both before it
//!    waits, [`OFFSETS_BATCH`]) and the total; then a workgroup scan (each wave through
//!    `ds_bpermute`, the waves' totals through LDS) over the experts' sizes
//!    (contiguous `⌈count/align⌉·align`, `align` = [`MoeRouteArgs::align`]: 128 for DeepGEMM's
//!    layout, or the grouped GEMM tile's height so that each non-empty expert is padded only
//!    to whole tiles; masked `m_max`) gives `offsets[e]`, the rows used, the
//!    dropped pairs (masked: `Σ max(count − m_max, 0)`) and `status`; `masked_m = min(count,
//!    m_max)`;
//! 3. scatter (one workgroup per chunk of pairs and per 256 rows): a pair's rank is its chunk's
//!    prefix plus its `local_rank`, its row `offsets[e] + rank` (masked: only when
//!    `rank < m_max`, otherwise the pair is dropped); writes `slots[p]` and `row_src[row] = t`.
//!    Every row not written that way gets `row_src` −1 (padding inside a used block:
//!    zero-filled by the gather, read by the grouped GEMM) or −2 (nothing reads it), and
//!    (contiguous) `m_indices` (binary search of `offsets` staged in LDS).
//!
//! With one chunk of pairs (`T·k ≤ 256`) steps 1 and 2 run in one workgroup
//! (`moe_route_count_offsets_*`), and where the layout also has at most [`SINGLE_ROUTE_ROWS`]
//! rows (decode) the whole route does (`moe_route_single_*`: the histogram, the offsets and
//! each pair's rank stay in LDS and registers): one launch instead of three.
//!
//! # Gather (`moe_gather_quantize_bf16`; [`MoeGatherArgs`])
//! The activation quantization kernel's work mapping and code ([`crate::quant`]: 16 lanes per
//! 1×128 group, the same load, maximum, scale and conversion functions), with the input row
//! taken from `row_src`: bit-identical to the CPU recipe on the gathered rows.
//!
//! # Activation (`moe_silu_mul_quantize_bf16`; [`MoeGatherArgs`])
//! The contiguous layout's `FP8(silu(gate)·up)` pass (where the gate·up GEMM does not run it
//! as its epilogue): the gather's mapping and code with row `r`'s own `[gate | up]` row as
//! input, only where `row_src[r]` is a token — a padding row (−1), whose gate·up row is zero,
//! is written as the recipe's all-zero row without a read or any arithmetic, so the pass costs
//! the routed rows, not the experts' padded blocks. The chunks are rotated within every run of
//! eight (the dispatch's XCD round-robin would otherwise hand each XCD the same position of
//! every expert block). (Tried: a grid of one round of the device, each workgroup taking two
//! chunks — 12.7 → 13.8 µs at 257 experts and 1024 tokens, modelled: the second chunk's loads
//! wait behind the first's arithmetic.)
//!
//! # Unpermute (`moe_unpermute_bf16`; [`MoeUnpermuteArgs`])
//! One work-item per 8 columns of one token: `acc = 0; for j in 0..k { acc = acc + w·y }` in
//! f32 (separate multiply and add, in `j` order; the loads of 8 experts at a time are issued
//! together, [`UNPERMUTE_BATCH`], or of all of them for a top-k of 9 to 16), then `acc + shared`, then one round to
//! nearest even to bf16 ([`f32_to_bf16_bits`]). The host's CPU twin computes the same bits.

use crate::amdgpu_kernel;
use crate::args::{MoeGatherArgs, MoeRouteArgs, MoeUnpermuteArgs};

/// Most experts the routing kernel supports (its LDS holds three words per expert).
pub const MAX_EXPERTS: u32 = 1024;
/// Largest contiguous row alignment ([`MoeRouteArgs::align`]; also what 0 means): DeepGEMM's 128.
pub const MAX_ALIGN: u32 = 128;
/// Work-items of the routing workgroup (pairs per chunk).
pub const ROUTE_THREADS: u32 = 256;
/// Work-items per unpermute workgroup (8 columns each).
pub const UNPERMUTE_THREADS: u32 = 256;
/// Columns per unpermute work-item.
pub const UNPERMUTE_COLS: u32 = 8;
/// Experts whose rows an unpermute work-item loads before adding them (in `j` order).
pub const UNPERMUTE_BATCH: u32 = 8;
/// `row_src` value of a padding row the gather fills with the all-zero row.
pub const ROW_PADDING: i32 = -1;
/// `row_src` value of a row nothing reads (left untouched).
pub const ROW_UNUSED: i32 = -2;

/// Pairs per routing chunk (work-items of every routing workgroup).
pub const ROUTE_CHUNK: u32 = ROUTE_THREADS;

/// Most layout rows the one-workgroup route (the kernels `moe_route_single_contiguous` and
/// `moe_route_single_masked`) fills (four per work-item); larger layouts take the scatter's
/// grid.
pub const SINGLE_ROUTE_ROWS: u32 = 4 * ROUTE_THREADS;

/// Dynamic LDS bytes of the one-workgroup route for `experts` experts: [`route_lds_bytes`]
/// plus the offsets (`E + 1` words).
pub const fn route_single_lds_bytes(experts: u32) -> u32 {
    ((3 * ROUTE_THREADS + 2 * (experts + 1)) * 4).div_ceil(16) * 16
}

/// Chunks per batch of the offsets step's column prefixes: each work-item issues the loads of
/// this many chunks (of its two columns) before it waits.
pub const OFFSETS_BATCH: u32 = 32;

/// Dynamic LDS bytes of the routing kernels for `experts` experts (16-byte multiple): count
/// `256 + E + 1` words, offsets `E + 1 + 2·256`, count + offsets `256 + E + 1 + 2·256`, scatter
/// `E + 1` (the `2·256` words reserved for the expert scan, of which it uses 8: its four waves'
/// two totals).
pub const fn route_lds_bytes(experts: u32) -> u32 {
    ((3 * ROUTE_THREADS + experts + 1) * 4).div_ceil(16) * 16
}

/// Length in i32 of the routing kernels' work memory for `pairs = T·k` pairs: `local_rank`
/// (`pairs`), `chunk_counts` (`⌈pairs/256⌉ · (E + 1)`), `offsets` (`E + 1`), `counts` (`E`).
pub const fn route_work_len(pairs: usize, experts: usize) -> usize {
    pairs + pairs.div_ceil(ROUTE_CHUNK as usize) * (experts + 1) + 2 * experts + 1
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
pub(crate) mod imp {
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

    /// Pairs of the current LDS chunk (words `0..n`, `n ≤ 256` valid) with key `key` before
    /// work-item `tid`, and in total. The loads are issued 8 at a time (one wait per 8) and only
    /// the 32-key batches holding valid pairs are read.
    #[inline(always)]
    fn scan(key: u32, tid: u32, n: u32) -> (u32, u32) {
        let (mut before, mut total) = (0u32, 0u32);
        let mut qb = 0;
        while qb * 32 < n && qb < ROUTE_THREADS / 32 {
            let mut v = [U32x4([0; 4]); 8];
            for (u, vu) in v.iter_mut().enumerate() {
                // SAFETY: words 0..256 are the chunk, inside the LDS allocation, written before
                // the barrier that precedes every call.
                *vu = unsafe { lds_read_b128((qb * 8 + u as u32) * 16) };
            }
            for (u, vu) in v.iter().enumerate() {
                for (i, &w) in vu.to_array().iter().enumerate() {
                    let idx = (qb * 8 + u as u32) * 4 + i as u32;
                    let eq = (w == key) as u32;
                    total += eq;
                    before += eq & (idx < tid) as u32;
                }
            }
            qb += 1;
        }
        (before, total)
    }

    /// Whether the arguments are usable at all (the host checks them; this keeps garbage from
    /// dividing by zero or indexing past the LDS layout).
    #[inline(always)]
    fn usable<const MASKED: bool>(a: &MoeRouteArgs) -> bool {
        a.experts != 0 && a.experts <= MAX_EXPERTS && a.top_k != 0 && (!MASKED || a.m_max != 0) && a.align <= MAX_ALIGN
    }

    /// Counts (see the module docs, step 1).
    #[inline(always)]
    pub fn count(a: MoeRouteArgs) {
        if !usable::<false>(&a) {
            return;
        }
        let (tid, c, e_n) = (workitem_id_x(), workgroup_id_x(), a.experts);
        let hist = ROUTE_THREADS;
        count_chunk(&a, c, hist);
        let mut e = tid;
        while e <= e_n {
            // SAFETY: c < ⌈pairs/256⌉ (the grid), e ≤ E: inside chunk_counts; LDS as in
            // count_chunk, complete after its last barrier.
            unsafe { *a.chunk_counts.as_mut_ptr().add((c * (e_n + 1) + e) as usize) = ld(hist + e) as i32 };
            e += ROUTE_THREADS;
        }
    }

    /// Chunk `c`'s keys into LDS words `0..256`, every pair's `local_rank`, and the chunk's
    /// histogram into LDS words `hist ..= hist + E` (column E: invalid ids), complete and visible
    /// to the whole workgroup on return. Returns this work-item's pair's key (`u32::MAX` for
    /// none or −1, E for an invalid id) and its rank among the chunk's pairs of that key.
    #[inline(always)]
    fn count_chunk(a: &MoeRouteArgs, c: u32, hist: u32) -> (u32, u32) {
        let tid = workitem_id_x();
        let e_n = a.experts;
        let pairs = a.tokens.saturating_mul(a.top_k);
        let mut e = tid;
        while e <= e_n {
            // SAFETY: hist + e ≤ 256 + E, inside route_lds_bytes(E); each e by one work-item.
            unsafe { st(hist + e, 0) };
            e += ROUTE_THREADS;
        }
        let p = c * ROUTE_CHUNK + tid;
        let key = if p < pairs {
            // SAFETY: p < tokens · top_k, the length of topk_ids.
            let id = unsafe { *a.topk_ids.as_ptr().add(p as usize) };
            if id >= 0 && (id as u32) < e_n {
                id as u32
            } else if id == -1 {
                u32::MAX
            } else {
                e_n // invalid: counted in column E
            }
        } else {
            u32::MAX
        };
        // SAFETY: word tid of the chunk, this work-item's own.
        unsafe { st(tid, key) };
        lds_barrier();
        let mut rank = 0;
        if key != u32::MAX {
            // Keys past the chunk's valid pairs are u32::MAX: scanning them would change nothing.
            let (before, total) = scan(key, tid, pairs - c * ROUTE_CHUNK);
            if before + 1 == total {
                // SAFETY: key ≤ E; only the last pair of this key in the chunk writes.
                unsafe { st(hist + key, total) };
            }
            // SAFETY: p < pairs (key != MAX), the length of local_rank.
            unsafe { *a.local_rank.as_mut_ptr().add(p as usize) = before as i32 };
            rank = before;
        }
        lds_barrier();
        (key, rank)
    }

    /// Offsets and status (module docs, step 2).
    #[inline(always)]
    pub fn offsets<const MASKED: bool>(a: MoeRouteArgs) {
        if !usable::<MASKED>(&a) {
            return;
        }
        let tid = workitem_id_x();
        let e_n = a.experts;
        let pairs = a.tokens.saturating_mul(a.top_k);
        let chunks = pairs.div_ceil(ROUTE_CHUNK);
        let (tot, scan) = (0u32, e_n + 1);
        let cc = a.chunk_counts.addr();
        // Work-item `tid` owns columns `tid + 256·i`, two at a time (`e0` and `e1 = e0 + 256`),
        // so up to 511 experts take one pass. Per batch of `OFFSETS_BATCH` chunks all the loads
        // of both columns are issued before the first store: a batch costs one load round trip
        // and one store round trip (stores count in `vmcnt` too, so the next batch's first wait
        // covers them). Buffer (not flat) accesses: a flat access may address the LDS, so every
        // wait for one waits for all of them (`lgkmcnt(0)`), which made each store a round trip.
        let cols = e_n + 1;
        let mut e0 = tid;
        while e0 < cols {
            let e1 = e0 + ROUTE_THREADS;
            let two = e1 < cols;
            let (mut run0, mut run1) = (0u32, 0u32);
            let mut c = 0u32;
            while c < chunks {
                let n = (chunks - c).min(OFFSETS_BATCH);
                // The batch's rows `c .. c + n` of chunk_counts (at most 32 · 1025 i32).
                let rsrc = BufferResource::new(cc + u64::from(c) * u64::from(cols) * 4, n * cols * 4);
                // Branch-free: offsets past the batch's rows (u ≥ n), or of a missing second
                // column, are out of the resource's range, so their loads read 0 and their
                // stores are dropped (a branch per access cost the wait counter its precision:
                // it waited for the stores).
                let off = |u: u32, e: u32, valid: bool| if valid { (u * cols + e) * 4 } else { u32::MAX & !3 };
                let mut v0 = [0u32; OFFSETS_BATCH as usize];
                let mut v1 = [0u32; OFFSETS_BATCH as usize];
                for u in 0..OFFSETS_BATCH as usize {
                    // SAFETY: the resource covers rows c .. c + n ≤ chunks of chunk_counts (E + 1
                    // i32 columns each), readable for the launch; e0 ≤ E; out-of-range offsets
                    // read 0.
                    unsafe {
                        v0[u] = buffer_load_i32(rsrc, off(u as u32, e0, true), 0) as u32;
                        v1[u] = buffer_load_i32(rsrc, off(u as u32, e1, two), 0) as u32;
                    }
                }
                for u in 0..OFFSETS_BATCH as usize {
                    // SAFETY: as above; each (chunk, column) is written by one work-item only,
                    // after its own load of it; out-of-range stores are dropped.
                    unsafe {
                        buffer_store_i32(run0 as i32, rsrc, off(u as u32, e0, true), 0);
                        buffer_store_i32(run1 as i32, rsrc, off(u as u32, e1, two), 0);
                    }
                    run0 = run0.wrapping_add(v0[u]);
                    run1 = run1.wrapping_add(v1[u]);
                }
                c += OFFSETS_BATCH;
            }
            // SAFETY: tot + e0, tot + e1 ≤ E: inside the LDS layout; each column by one
            // work-item.
            unsafe {
                st(tot + e0, run0);
                if two {
                    st(tot + e1, run1);
                }
            }
            e0 += 2 * ROUTE_THREADS;
        }
        lds_barrier();
        finish_offsets::<MASKED>(&a, tot, scan, None);
    }

    /// Steps 1 and 2 in one workgroup when all pairs fit one chunk (decode): the histogram stays
    /// in LDS, the chunk's prefix (all zero) is written for the scatter.
    #[inline(always)]
    pub fn count_offsets<const MASKED: bool>(a: MoeRouteArgs) {
        if !usable::<MASKED>(&a) {
            return;
        }
        let (tid, e_n) = (workitem_id_x(), a.experts);
        let hist = ROUTE_THREADS;
        count_chunk(&a, 0, hist);
        let mut e = tid;
        while e <= e_n {
            // SAFETY: chunk 0, e ≤ E: inside chunk_counts (one chunk when this kernel is used).
            unsafe { *a.chunk_counts.as_mut_ptr().add(e as usize) = 0 };
            e += ROUTE_THREADS;
        }
        let scan = hist + e_n + 1;
        finish_offsets::<MASKED>(&a, hist, scan, None);
    }

    /// Inclusive sums over work-items `0 ..= tid` of the workgroup of `a` (saturating) and `b`
    /// (wrapping), in registers: each wave scans its 64 lanes through `ds_bpermute` (six steps,
    /// no barrier), then every lane adds the totals of the waves before its own, passed
    /// through LDS words `totals .. totals + 8` (one barrier; every work-item must call it).
    /// Exact: unsigned saturating and wrapping additions give the same sums in any order.
    #[inline(always)]
    fn workgroup_scan(a: u32, b: u32, totals: u32) -> (u32, u32) {
        let tid = workitem_id_x();
        let (lane, wave) = (tid & 63, tid >> 6);
        let (mut x, mut y) = (a, b);
        let mut d = 1;
        while d < 64 {
            let src = (lane.wrapping_sub(d) & 63) * 4;
            let (px, py) = (ds_bpermute(src, x), ds_bpermute(src, y));
            if lane >= d {
                x = x.saturating_add(px);
                y = y.wrapping_add(py);
            }
            d *= 2;
        }
        if lane == 63 {
            // SAFETY: words totals + wave and totals + 4 + wave (wave < 4) lie inside the
            // caller's 256-word scan region; each is written by one work-item.
            unsafe {
                st(totals + wave, x);
                st(totals + 4 + wave, y);
            }
        }
        lds_barrier();
        for w in 0..wave {
            // SAFETY: written by the waves before this one, before the barrier.
            unsafe {
                x = x.saturating_add(ld(totals + w));
                y = y.wrapping_add(ld(totals + 4 + w));
            }
        }
        (x, y)
    }

    /// Step 2 from the per-expert totals in LDS words `tot ..= tot + E` (visible to the whole
    /// workgroup): offsets, counts, `masked_m`, status; the scan's wave totals in LDS words
    /// `scan .. scan + 8` (inside [`route_lds_bytes`]). With `lds_offsets = Some(b)` the offsets
    /// (and the rows used, at `b + E`) also go to LDS words `b ..= b + E`, visible to the
    /// workgroup after its next barrier.
    #[inline(always)]
    fn finish_offsets<const MASKED: bool>(a: &MoeRouteArgs, tot: u32, scan: u32, lds_offsets: Option<u32>) {
        let tid = workitem_id_x();
        let e_n = a.experts;
        // This work-item's experts: lo .. hi (at most 4).
        let per = e_n.div_ceil(ROUTE_THREADS);
        // Work-items owning experts: 0 .. owners (the rest add 0 to the scan).
        let owners = e_n.div_ceil(per);
        let lo = (tid * per).min(e_n);
        let hi = (lo + per).min(e_n);
        let align = if a.align == 0 { MAX_ALIGN } else { a.align };
        let size_of = |cnt: u32| if MASKED { a.m_max } else { cnt.div_ceil(align).saturating_mul(align) };
        let (mut local, mut drop) = (0u32, 0u32);
        for e in lo..hi {
            // SAFETY: e < E, written before the barrier.
            let cnt = unsafe { ld(tot + e) };
            local = local.saturating_add(size_of(cnt));
            if MASKED {
                drop += cnt.saturating_sub(a.m_max);
            }
        }
        let (incl, drop_incl) = workgroup_scan(local, drop, scan);
        let mut run = incl - local;
        for e in lo..hi {
            // SAFETY: e < E: LDS totals, and offsets/counts/masked_m hold E (+1) i32.
            unsafe {
                let cnt = ld(tot + e);
                *a.offsets.as_mut_ptr().add(e as usize) = run as i32;
                if let Some(b) = lds_offsets {
                    // b + e ≤ b + E: inside the caller's LDS layout; each e by one work-item.
                    st(b + e, run);
                }
                *a.counts.as_mut_ptr().add(e as usize) = cnt as i32;
                if MASKED {
                    *a.masked_m.as_mut_ptr().add(e as usize) = cnt.min(a.m_max) as i32;
                }
                run = run.saturating_add(size_of(cnt));
            }
        }
        if tid == owners - 1 {
            // The last owner's inclusive sums are the totals.
            // SAFETY: offsets holds E + 1 i32, status 4; LDS words as above.
            unsafe {
                *a.offsets.as_mut_ptr().add(e_n as usize) = incl.min(i32::MAX as u32) as i32;
                if let Some(b) = lds_offsets {
                    st(b + e_n, incl);
                }
                let s = a.status.as_mut_ptr();
                *s = ld(tot + e_n) as i32;
                *s.add(1) = drop_incl as i32;
                *s.add(2) = incl.min(a.rows) as i32;
                *s.add(3) = 0;
            }
        }
    }

    /// Scatter and fill (module docs, step 3).
    #[inline(always)]
    pub fn scatter<const MASKED: bool>(a: MoeRouteArgs) {
        if !usable::<MASKED>(&a) {
            return;
        }
        let tid = workitem_id_x();
        let e_n = a.experts;
        let g = workgroup_id_x();
        let pairs = a.tokens.saturating_mul(a.top_k);
        let p = g * ROUTE_CHUNK + tid;
        if p < pairs {
            // SAFETY: p < tokens · top_k: inside topk_ids.
            let id = unsafe { *a.topk_ids.as_ptr().add(p as usize) };
            place_pair::<MASKED>(
                &a,
                p,
                id,
                // SAFETY: chunk p/256 < ⌈pairs/256⌉, e < E: inside chunk_counts; local_rank
                // written by the count kernel for every valid pair.
                |e| unsafe {
                    (*a.chunk_counts.as_ptr().add(((p / ROUTE_CHUNK) * (e_n + 1) + e) as usize) as u32)
                        .wrapping_add(*a.local_rank.as_ptr().add(p as usize) as u32)
                },
                // SAFETY: e < E: inside offsets.
                |e| unsafe { *a.offsets.as_ptr().add(e as usize) } as u32,
            );
        }
        // Fill: rows g·256 + tid.
        if !MASKED {
            // Stage offsets[0..=E] in LDS for the binary search (every work-item takes part in
            // the barrier).
            let mut e = tid;
            while e <= e_n {
                // SAFETY: e ≤ E: inside offsets and the LDS layout; each e by one work-item.
                unsafe { st(e, *a.offsets.as_ptr().add(e as usize) as u32) };
                e += ROUTE_THREADS;
            }
            lds_barrier();
        }
        // SAFETY: e < E indexes counts (written by the offsets step).
        fill_row::<MASKED>(&a, g * ROUTE_THREADS + tid, 0, |e| unsafe { *a.counts.as_ptr().add(e as usize) } as u32);
    }

    /// Places pair `p` (expert id `id` from `topk_ids`) in the layout (module docs, step 3):
    /// `rank(e)` is its rank among expert `e`'s pairs, `offset(e)` the contiguous layout's
    /// first row of expert `e`; writes `slots[p]` and, where the pair lands, `row_src[slot]`.
    #[inline(always)]
    fn place_pair<const MASKED: bool>(a: &MoeRouteArgs, p: u32, id: i32, rank: impl FnOnce(u32) -> u32, offset: impl FnOnce(u32) -> u32) {
        let mut slot = -1i32;
        if id >= 0 && (id as u32) < a.experts {
            let e = id as u32;
            let rank = rank(e);
            if MASKED {
                if rank < a.m_max {
                    slot = (e * a.m_max + rank) as i32;
                }
            } else {
                let row = offset(e);
                if row.saturating_add(rank) < a.rows {
                    slot = (row + rank) as i32;
                }
            }
        }
        // SAFETY: p < pairs (the caller's check): inside slots; slot < rows (masked: e < E,
        // rank < m_max, rows = E·m_max; contiguous: checked above), the length of row_src.
        unsafe {
            *a.slots.as_mut_ptr().add(p as usize) = slot;
            if slot >= 0 {
                *a.row_src.as_mut_ptr().add(slot as usize) = (p / a.top_k) as i32;
            }
        }
    }

    /// Row `r`'s `row_src` (and `m_indices`, contiguous) where no pair lands in it (module
    /// docs, step 3); nothing for `r ≥ rows`. Contiguous: LDS words `offs ..= offs + E` hold
    /// `offsets[0..=E]` (the last: the rows used), visible to this work-item; `count(e)` is
    /// expert `e`'s pairs.
    #[inline(always)]
    fn fill_row<const MASKED: bool>(a: &MoeRouteArgs, r: u32, offs: u32, count: impl Fn(u32) -> u32) {
        let e_n = a.experts;
        if r >= a.rows {
            return;
        }
        // SAFETY (whole block): r < rows, the length of row_src and m_indices; LDS words
        // offs ..= offs + E as the caller guarantees.
        unsafe {
            if MASKED {
                let (e, i) = (r / a.m_max, r % a.m_max);
                if e >= e_n || i >= count(e).min(a.m_max) {
                    *a.row_src.as_mut_ptr().add(r as usize) = ROW_UNUSED;
                }
            } else if r >= ld(offs + e_n) {
                *a.m_indices.as_mut_ptr().add(r as usize) = -1;
                *a.row_src.as_mut_ptr().add(r as usize) = ROW_UNUSED;
            } else {
                // The last expert with offsets[e] ≤ r (non-decreasing, offsets[0] = 0 ≤ r).
                let (mut lo, mut hi) = (0u32, e_n - 1);
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    if ld(offs + mid) <= r { lo = mid } else { hi = mid - 1 }
                }
                if r - ld(offs + lo) < count(lo) {
                    *a.m_indices.as_mut_ptr().add(r as usize) = lo as i32;
                } else {
                    *a.m_indices.as_mut_ptr().add(r as usize) = -1;
                    *a.row_src.as_mut_ptr().add(r as usize) = ROW_PADDING;
                }
            }
        }
    }

    /// The whole route in one workgroup when the pairs fit one chunk and the layout's rows
    /// [`SINGLE_ROUTE_ROWS`] (decode): count, offsets and scatter with the histogram, the
    /// offsets and the ranks kept in LDS and registers (module docs, "Route").
    #[inline(always)]
    pub fn single<const MASKED: bool>(a: MoeRouteArgs) {
        if !usable::<MASKED>(&a) {
            return;
        }
        let (tid, e_n) = (workitem_id_x(), a.experts);
        let hist = ROUTE_THREADS;
        let (key, rank) = count_chunk(&a, 0, hist);
        let scan = hist + e_n + 1;
        let offs = scan + 2 * ROUTE_THREADS;
        finish_offsets::<MASKED>(&a, hist, scan, Some(offs));
        lds_barrier();
        let pairs = a.tokens.saturating_mul(a.top_k);
        if tid < pairs {
            // The key is the id where it is an expert (E and u32::MAX place nothing).
            let id = if key < e_n { key as i32 } else { -1 };
            // SAFETY: e ≤ E: LDS offsets, complete after the barrier above.
            place_pair::<MASKED>(&a, tid, id, |_| rank, |e| unsafe { ld(offs + e) });
        }
        let mut r = tid;
        while r < a.rows.min(SINGLE_ROUTE_ROWS) {
            // SAFETY: e ≤ E: the LDS histogram, complete since count_chunk's last barrier.
            fill_row::<MASKED>(&a, r, offs, |e| unsafe { ld(hist + e) });
            r += ROUTE_THREADS;
        }
    }

    #[inline(always)]
    pub fn gather(a: MoeGatherArgs) {
        rows_quantize::<false>(a)
    }

    /// `silu(gate)·up` of the routed rows of a contiguous layout's gate·up output, quantized
    /// ([`crate::moe`] "Activation"): the gather's mapping with the row itself as input.
    #[inline(always)]
    pub fn silu(a: MoeGatherArgs) {
        rows_quantize::<true>(a)
    }

    /// The body of [`gather`] (`SILU = false`: row `r` reads token `row_src[r]` of `x`) and
    /// [`silu`] (`SILU = true`: a routed row `r` reads `x`'s own row `r`, `[gate | up]` of
    /// `2·k` values). Padding rows (`row_src` −1) are written as the recipe's all-zero row
    /// without a read; other rows whose `row_src` is outside `0..tokens` are left untouched.
    #[inline(always)]
    fn rows_quantize<const SILU: bool>(a: MoeGatherArgs) {
        let kb = a.k.div_ceil(GROUP);
        if kb == 0 || a.rows == 0 {
            return;
        }
        let units = a.rows.saturating_mul(kb);
        let chunks = units.div_ceil(crate::quant::ACT_GROUPS_PER_WG);
        // The activation's work is on the routed rows, which start every expert block: with a
        // block of 8 chunks (64 rows at k = 256) the round-robin dispatch would give each XCD
        // the same position in every block, the first XCDs all the routed rows. Rotating the
        // chunks of every run of 8 by the run's index gives each XCD every position.
        let c = workgroup_id_x();
        let chunk = if SILU && c < (chunks & !7) { (c & !7) | ((c + (c >> 3)) & 7) } else { c };
        rows_chunk::<SILU>(&a, kb, units, chunk);
    }

    /// One chunk (16 groups of 1×128) of [`rows_quantize`].
    #[inline(always)]
    fn rows_chunk<const SILU: bool>(a: &MoeGatherArgs, kb: u32, units: u32, chunk: u32) {
        let tid = workitem_id_x();
        let k = a.k;
        let unit = chunk * crate::quant::ACT_GROUPS_PER_WG + (tid >> 4);
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
            let k64 = k as u64;
            if SILU {
                let base = row as u64 * 2 * k64 + col as u64;
                // SAFETY: row < rows and col + 8 ≤ k (k % 8 == 0): both 8-element runs lie
                // inside the rows × 2k bf16 input, 16-byte aligned.
                let (g, u) = unsafe { (load8::<{ crate::quant::IN_BF16 }>(a.x.addr(), base), load8::<{ crate::quant::IN_BF16 }>(a.x.addr(), base + k64)) };
                v = crate::quant::silu_mul8(&g, &u);
            } else {
                // SAFETY: src < tokens, col + 8 ≤ k (k % 8 == 0): inside the tokens × k bf16
                // input, 16-byte aligned.
                v = unsafe { load8::<{ crate::quant::IN_BF16 }>(a.x.addr(), src as u64 * k64 + col as u64) };
            }
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

    /// `out[t, col .. col + 8] = bf16(Σ_j w[t,j] · y[slot(t,j), col ..] + shared[t, col ..])`
    /// (valid slots only, `j` in order, separate multiply and add in f32, one final
    /// round-to-nearest-even): the unpermute's arithmetic, shared by the unpermute kernel and the
    /// grouped GEMM's scatter epilogue, so both give the same bits. `load(row)` loads the 8
    /// bf16 values (16 bytes) of y's `row` at `col`; `shared` is 0 for none; `rows` the rows of y.
    ///
    /// `B` experts at a time: all their slots and weights are loaded, then all
    /// their rows of y, then added in j order. Every load is unconditional (an index past the
    /// token's experts reads its last pair, an invalid slot reads row 0) and only the adds are
    /// selected, so the loads of a batch are in flight together instead of one memory round
    /// trip per expert behind a branch.
    ///
    /// # Safety
    /// `slots` and `weights` hold at least `(t + 1)·top_k` elements (`top_k ≥ 1`); `load` may be
    /// called with any row below `rows` (only when `rows ≥ 1`); `shared` (if not 0) and `out`
    /// hold `(t + 1)·hidden` bf16 with `col + 8 ≤ hidden`, 16-byte aligned.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) unsafe fn weighted_rows_to<const B: usize>(
        slots: *const i32,
        weights: *const f32,
        t: u32,
        top_k: u32,
        rows: u32,
        load: impl Fn(u64) -> U32x4,
        shared: u64,
        out: u64,
        hidden: u64,
        col: u32,
    ) {
        let h = hidden;
        let mut acc = [0f32; 8];
        let base = t * top_k;
        let last = base + top_k - 1;
        // With no rows of y no slot is valid (and row 0 does not exist): nothing to add.
        let mut j0 = if rows == 0 { top_k } else { 0 };
        while j0 < top_k {
            let nb = (top_k - j0).min(B as u32);
            // Slots and weights in two arrays of scalars (an array of pairs was kept in scratch
            // memory at B = 16).
            let mut sl = [-1i32; B];
            let mut wt = [0f32; B];
            for q in 0..B {
                let p = (base + j0 + q as u32).min(last) as usize;
                // SAFETY: p ≤ last < (t + 1)·top_k, inside slots and weights (caller).
                unsafe {
                    sl[q] = *slots.add(p);
                    wt[q] = *weights.add(p);
                }
            }
            // The rows' raw bf16 bits (4 registers a row), widened only where they are added.
            let mut ys = [U32x4([0; 4]); B];
            let mut ok = [false; B];
            for q in 0..B {
                let s = sl[q];
                ok[q] = (q as u32) < nb && s >= 0 && (s as u32) < rows;
                ys[q] = load(if ok[q] { s as u64 } else { 0 });
            }
            for q in 0..B {
                let w = wt[q];
                let y = bf16x8(ys[q]);
                for i in 0..8 {
                    let sum = acc[i] + w * y[i];
                    acc[i] = if ok[q] { sum } else { acc[i] };
                }
            }
            j0 += nb;
        }
        let at = t as u64 * h + col as u64;
        if shared != 0 {
            // SAFETY: inside the (t + 1) × hidden bf16 shared output, aligned (caller).
            let s = unsafe { load8::<{ crate::quant::IN_BF16 }>(shared, at) };
            for i in 0..8 {
                acc[i] = acc[i] + s[i];
            }
        }
        let mut w = [0u32; 4];
        for i in 0..4 {
            w[i] = f32_to_bf16_bits(acc[2 * i]) as u32 | (f32_to_bf16_bits(acc[2 * i + 1]) as u32) << 16;
        }
        // SAFETY: 16 bytes inside the (t + 1) × hidden bf16 output, 16-byte aligned (caller).
        unsafe { *((out + at * 2) as usize as *mut U32x4) = U32x4(w) };
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
        let y = a.y.addr();
        let (slots, weights) = (a.slots.as_ptr(), a.weights.as_ptr());
        // SAFETY: `load` is called with rows below a.rows only (weighted_rows_to's contract):
        // inside y (rows × hidden bf16), 16-byte aligned.
        let load = |row: u64| unsafe { *((y + (row * h + col as u64) * 2) as usize as *const U32x4) };
        // Top-k up to 16 (GLM's 9, Qwen3's and DeepSeek's 8 …) in one batch of loads: one
        // memory round trip per work-item, not two (a second batch of 8 for the ninth expert).
        // SAFETY: t < tokens; slots and weights hold tokens · top_k (top_k ≥ 1, host-checked),
        // y rows × hidden, shared (if any) and out tokens × hidden bf16, all 16-byte aligned;
        // col + 8 ≤ hidden. Every row `load` gets is below rows.
        unsafe {
            if a.top_k > UNPERMUTE_BATCH && a.top_k <= 2 * UNPERMUTE_BATCH {
                weighted_rows_to::<{ 2 * UNPERMUTE_BATCH as usize }>(slots, weights, t, a.top_k, a.rows, load, a.shared.addr(), a.out.addr(), h, col)
            } else {
                weighted_rows_to::<{ UNPERMUTE_BATCH as usize }>(slots, weights, t, a.top_k, a.rows, load, a.shared.addr(), a.out.addr(), h, col)
            }
        }
    }
}

/// Routing step 1: per-chunk expert histograms and ranks (both layouts).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_route_count(args: MoeRouteArgs) {
    imp::count(args)
}
/// Routing steps 1 and 2 in one workgroup when the pairs fit one chunk (≤ 256), contiguous.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_route_count_offsets_contiguous(args: MoeRouteArgs) {
    imp::count_offsets::<false>(args)
}
/// Routing steps 1 and 2 in one workgroup when the pairs fit one chunk (≤ 256), masked.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_route_count_offsets_masked(args: MoeRouteArgs) {
    imp::count_offsets::<true>(args)
}
/// The whole route in one workgroup (one chunk of pairs, at most [`SINGLE_ROUTE_ROWS`] rows),
/// contiguous layout.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_route_single_contiguous(args: MoeRouteArgs) {
    imp::single::<false>(args)
}
/// The whole route in one workgroup (one chunk of pairs, at most [`SINGLE_ROUTE_ROWS`] rows),
/// masked layout.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_route_single_masked(args: MoeRouteArgs) {
    imp::single::<true>(args)
}
/// Routing step 2, contiguous layout: expert offsets (128-row aligned) and status.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_route_offsets_contiguous(args: MoeRouteArgs) {
    imp::offsets::<false>(args)
}
/// Routing step 2, masked layout: `masked_m`, dropped pairs and status.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_route_offsets_masked(args: MoeRouteArgs) {
    imp::offsets::<true>(args)
}
/// Routing step 3, contiguous layout: slots, `row_src`, `m_indices`.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_route_scatter_contiguous(args: MoeRouteArgs) {
    imp::scatter::<false>(args)
}
/// Routing step 3, masked layout: slots, `row_src`.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_route_scatter_masked(args: MoeRouteArgs) {
    imp::scatter::<true>(args)
}
/// Gather of bf16 hidden rows into the layout, quantized to FP8 with 1×128 scales.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_gather_quantize_bf16(args: MoeGatherArgs) {
    imp::gather(args)
}
/// `silu(gate)·up` of a contiguous layout's routed rows, quantized (padding rows zero).
#[amdgpu_kernel(workgroup_size = 256)]
pub fn moe_silu_mul_quantize_bf16(args: MoeGatherArgs) {
    imp::silu(args)
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
        assert!(route_single_lds_bytes(MAX_EXPERTS) <= 64 * 1024);
        // Keys, histogram, two scan arrays and the offsets (E + 1 words each).
        assert!(route_single_lds_bytes(257) >= (3 * 256 + 2 * 258) * 4);
        assert!(route_lds_bytes(8) >= (3 * 256 + 8 + 1) * 4);
        assert_eq!(route_work_len(0, 4), 9);
        assert_eq!(route_work_len(257, 4), 257 + 2 * 5 + 9);
    }
}
