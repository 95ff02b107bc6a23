//! Routing and AITER's `moe_sorting` contract (families 2 and 3 of the peers README, "Routing and
//! sorting contract").
//!
//! * [`Routing::random`]: per token, `score = randn(E)` rounded to bf16, the top-k scores in
//!   descending order (slot = selection order; ties go to the lower expert id), weights = softmax
//!   over the chosen scores (renormalised). Each token's expert set is thereby a uniformly random
//!   top-k subset, as the contract prescribes (PyTorch's exact sets are not reproducible).
//! * [`moe_sorting`]: experts in increasing order, each expert's (token, slot) pairs in increasing
//!   token order as `(slot << 24) | token`, padded with `(topk << 24) | T` (weight 0) to a whole
//!   number of `block_m` blocks; one `sorted_expert_ids` entry per block; `num_valid_ids =
//!   [Σ padded counts, T]`; buffers sized `max_num_tokens_padded = T·topk + E·block_m − topk`
//!   and `max_num_m_blocks = ⌈max_num_tokens_padded / block_m⌉`, and the token ids extended with
//!   `T` to `max_num_m_blocks · block_m` entries as AMD's tuner does.
//!
//! What AITER leaves uninitialised (`torch.empty`) is given defined values here, documented on
//! [`MoeSorting`]: the kernels never use them (a workgroup whose block starts at or past
//! `num_valid_ids[0]` exits), and the conformance tests would see it if they did.

use super::{MoeError, Normal};
use crate::peers::PeerError;

/// Expert choices of every token.
#[derive(Clone, Debug, PartialEq)]
pub struct Routing {
    /// Tokens T.
    pub tokens: u32,
    /// Experts E.
    pub num_experts: u32,
    /// Experts per token.
    pub topk: u32,
    /// `[T][topk]` expert ids, slot order (descending score).
    pub experts: Vec<u32>,
    /// `[T][topk]` routing weights (softmax over the chosen scores; each row sums to ≈ 1).
    pub weights: Vec<f32>,
}

impl Routing {
    /// Random routing as the contract draws it (see the module docs); deterministic in `seed`.
    /// Requires `1 ≤ topk ≤ experts` (checked by the launch builders; here `topk` is clamped).
    pub fn random(tokens: u32, experts: u32, topk: u32, seed: u64) -> Routing {
        let (t, e) = (tokens as usize, experts as usize);
        let k = (topk as usize).min(e);
        let mut ids = Vec::with_capacity(t * k);
        let mut wts = Vec::with_capacity(t * k);
        let mut score = vec![0f32; e];
        let mut order: Vec<usize> = Vec::with_capacity(e);
        for tok in 0..t {
            let mut g = Normal::new(seed ^ (tok as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93));
            for pair in score.chunks_mut(2) {
                let (a, b) = g.pair();
                pair[0] = half::bf16::from_f64(a).to_f32();
                if let Some(y) = pair.get_mut(1) {
                    *y = half::bf16::from_f64(b).to_f32();
                }
            }
            order.clear();
            order.extend(0..e);
            // Stable: equal scores keep increasing expert order.
            order.sort_by(|&x, &y| score[y].total_cmp(&score[x]));
            let chosen = &order[..k];
            let m = score[chosen[0]];
            let ex: Vec<f64> = chosen.iter().map(|&c| (f64::from(score[c]) - f64::from(m)).exp()).collect();
            let sum: f64 = ex.iter().sum();
            for (&c, &x) in chosen.iter().zip(&ex) {
                ids.push(c as u32);
                wts.push((x / sum) as f32);
            }
        }
        Routing { tokens, num_experts: experts, topk: k as u32, experts: ids, weights: wts }
    }

    /// Tokens routed to each expert (`c_e`).
    pub fn counts(&self) -> Vec<u32> {
        let mut c = vec![0u32; self.num_experts as usize];
        for &e in &self.experts {
            if let Some(x) = c.get_mut(e as usize) {
                *x += 1;
            }
        }
        c
    }
}

/// The output of [`moe_sorting`], in the buffers the kernels read.
#[derive(Clone, Debug, PartialEq)]
pub struct MoeSorting {
    /// Rows per block.
    pub block_m: u32,
    /// `T·topk + E·block_m − topk`.
    pub max_num_tokens_padded: u32,
    /// `⌈max_num_tokens_padded / block_m⌉` (the grid's y extent).
    pub max_num_m_blocks: u32,
    /// `max_num_m_blocks · block_m` entries: `(slot << 24) | token` for routed rows,
    /// `(topk << 24) | T` for padding rows, then — where AITER leaves memory uninitialised
    /// (from `num_valid_ids[0]` to `max_num_tokens_padded`) and where the tuner appends — `T`.
    pub sorted_token_ids: Vec<u32>,
    /// Same length: the routing weight of each row, 0 for padding and everything past
    /// `num_valid_ids[0]`.
    pub sorted_weights: Vec<f32>,
    /// `max_num_m_blocks` entries: the expert of each used block, then 0 (uninitialised in AITER).
    pub sorted_expert_ids: Vec<u32>,
    /// `[Σ_e ⌈c_e/block_m⌉·block_m, T]`.
    pub num_valid_ids: [u32; 2],
}

impl MoeSorting {
    /// Blocks holding routed rows (`num_valid_ids[0] / block_m`).
    pub fn used_blocks(&self) -> u32 {
        self.num_valid_ids[0] / self.block_m
    }
    /// Splits a sorted id into (token, slot).
    #[inline]
    pub fn split(id: u32) -> (u32, u32) {
        (id & 0x00ff_ffff, id >> 24)
    }
}

/// AITER's `moe_sorting` for `routing` with blocks of `block_m` rows (see the module docs).
pub fn moe_sorting(routing: &Routing, block_m: u32) -> Result<MoeSorting, MoeError> {
    let shape = |arg: &'static str, value: u64, expected: &str| {
        MoeError::from(PeerError::Shape { kernel: "moe_sorting".into(), arg, value, expected: expected.into() })
    };
    let (t, e, k) = (routing.tokens, routing.num_experts, routing.topk);
    if block_m == 0 {
        return Err(shape("block_m", 0, "at least 1"));
    }
    if t == 0 || t >= 1 << 24 {
        return Err(shape("tokens", t.into(), "1 ..= 2^24 − 1"));
    }
    if k == 0 || k > e || k > 255 {
        return Err(shape("topk", k.into(), "1 ..= min(experts, 255)"));
    }
    let tk = (t as usize).checked_mul(k as usize).ok_or(MoeError::Overflow { what: "tokens · topk" })?;
    if routing.experts.len() != tk || routing.weights.len() != tk {
        return Err(MoeError::from(PeerError::Length { arg: "routing", got: routing.experts.len().min(routing.weights.len()), expected: tk }));
    }
    let padded = u64::from(t) * u64::from(k) + u64::from(e) * u64::from(block_m) - u64::from(k);
    let max_num_tokens_padded = u32::try_from(padded).map_err(|_| MoeError::Overflow { what: "max_num_tokens_padded" })?;
    let max_num_m_blocks = max_num_tokens_padded.div_ceil(block_m);
    let total = (max_num_m_blocks as usize) * block_m as usize;
    // Pairs per expert in increasing token order.
    let mut per: Vec<Vec<(u32, u32, f32)>> = vec![Vec::new(); e as usize];
    for tok in 0..t as usize {
        for s in 0..k as usize {
            let ex = routing.experts[tok * k as usize + s];
            let list = per.get_mut(ex as usize).ok_or_else(|| shape("routing expert id", ex.into(), "< experts"))?;
            list.push((tok as u32, s as u32, routing.weights[tok * k as usize + s]));
        }
    }
    let pad_id = (k << 24) | t;
    let mut ids = Vec::with_capacity(total);
    let mut wts = Vec::with_capacity(total);
    let mut eids = Vec::with_capacity(max_num_m_blocks as usize);
    for (ex, list) in per.iter().enumerate() {
        if list.is_empty() {
            continue;
        }
        for &(tok, s, w) in list {
            ids.push((s << 24) | tok);
            wts.push(w);
        }
        let blocks = list.len().div_ceil(block_m as usize);
        ids.resize(ids.len() + blocks * block_m as usize - list.len(), pad_id);
        wts.resize(ids.len(), 0.0);
        eids.extend(std::iter::repeat_n(ex as u32, blocks));
    }
    let valid = ids.len() as u32;
    // Σ ⌈c_e/bm⌉·bm ≤ T·topk + (used experts)·(bm − 1) fits max_num_tokens_padded; checked anyway.
    if ids.len() > total || eids.len() > max_num_m_blocks as usize {
        return Err(MoeError::Overflow { what: "sorted rows exceed max_num_m_blocks · block_m" });
    }
    ids.resize(total, t);
    wts.resize(total, 0.0);
    eids.resize(max_num_m_blocks as usize, 0);
    Ok(MoeSorting {
        block_m,
        max_num_tokens_padded,
        max_num_m_blocks,
        sorted_token_ids: ids,
        sorted_weights: wts,
        sorted_expert_ids: eids,
        num_valid_ids: [valid, t],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorting_follows_the_contract() {
        // T = 3, E = 3, topk = 2: token 0 → (2, 0), token 1 → (0, 2), token 2 → (2, 1).
        let r = Routing { tokens: 3, num_experts: 3, topk: 2, experts: vec![2, 0, 0, 2, 2, 1], weights: vec![0.6, 0.4, 0.7, 0.3, 0.9, 0.1] };
        let s = moe_sorting(&r, 2).unwrap();
        assert_eq!(s.max_num_tokens_padded, 3 * 2 + 3 * 2 - 2);
        assert_eq!(s.max_num_m_blocks, 5);
        let pad = (2 << 24) | 3;
        // expert 0: (t0,s1), (t1,s0); expert 1: (t2,s1), pad; expert 2: (t0,s0), (t1,s1), (t2,s0), pad.
        assert_eq!(&s.sorted_token_ids[..8], &[1 << 24, 1, (1 << 24) | 2, pad, 0, (1 << 24) | 1, 2, pad]);
        assert_eq!(&s.sorted_token_ids[8..], &[3, 3]);
        assert_eq!(&s.sorted_weights[..8], &[0.4, 0.7, 0.1, 0.0, 0.6, 0.3, 0.9, 0.0]);
        assert_eq!(s.sorted_expert_ids, vec![0, 1, 2, 2, 0]);
        assert_eq!(s.num_valid_ids, [8, 3]);
        assert_eq!(s.used_blocks(), 4);
    }

    #[test]
    fn random_routing_is_a_topk_subset_with_softmax_weights() {
        let r = Routing::random(200, 33, 9, 1);
        assert_eq!(r, Routing::random(200, 33, 9, 1));
        for t in 0..200 {
            let ids = &r.experts[t * 9..t * 9 + 9];
            let mut u = ids.to_vec();
            u.sort();
            u.dedup();
            assert_eq!(u.len(), 9, "token {t}: distinct experts");
            let w = &r.weights[t * 9..t * 9 + 9];
            assert!((w.iter().map(|&x| f64::from(x)).sum::<f64>() - 1.0).abs() < 1e-5);
            assert!(w.windows(2).all(|p| p[0] >= p[1]), "slot order is descending score");
        }
        // Uniform subsets: every expert is used, counts near T·topk/E = 54.5.
        let c = r.counts();
        assert!(c.iter().all(|&x| (25..=90).contains(&x)), "{c:?}");
        let s = moe_sorting(&r, 64).unwrap();
        let valid = s.num_valid_ids[0] as usize;
        let routed = s.sorted_token_ids[..valid].iter().filter(|&&id| MoeSorting::split(id).0 < 200).count();
        assert_eq!(routed, 200 * 9);
    }

    #[test]
    fn contract_example_size() {
        // Stage 1, T = 16384, E = 33, topk = 9, block_m = 64 → 2337 blocks.
        let padded: u64 = 16384 * 9 + 33 * 64 - 9;
        assert_eq!(padded.div_ceil(64), 2337);
    }
}
