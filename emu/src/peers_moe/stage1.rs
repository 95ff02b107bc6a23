//! MoE stage 1 (`fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1_<TM>x<TN>…`): launch contract,
//! output layout and the reference check.
//!
//! **Contract** (peers README, family 2): 368-byte kernarg ([`Stage1Args`]); grid
//! (⌈I/TN⌉, max_num_m_blocks, 1), block 256; a workgroup with `blockIdx.y·TM ≥ num_valid_ids[0]`
//! exits. For sorted row r with token t = id & 0xffffff < T, slot s = id >> 24 and expert
//! e = sorted_expert_ids[r / TM], and columns j of its TN slice:
//! `h[t,s,j] = silu(g)·u`, `g = Σ_kb XQ[kb][t]·GQ[e][j/128][kb]·Σ_{k∈kb} X[t,k]·W1[e,j,k]`,
//! `u` the same with row I + j. The output buffer is FP8 `[T + ⌈4T/128⌉][topk][I]`: byte
//! `t·Os + s·I + j` holds `fp8(h · 240/amax)` and the f32 at byte `T·Os + 4·(t·topk·I/128 +
//! s·I/128 + j/128)` holds the block's scale, where amax = max(|h| over the 128-column block,
//! f32 0x358637bd).
//!
//! **Arithmetic** (read from the disassembly of 16x128_4tg_pf2): per 128-K block four
//! `v_mfma_f32_16x16x32_fp8_fp8` into a zeroed accumulator, then `v_fma_f32(dot, XQ·GQ, acc)`;
//! silu as `g · rcp(1 + exp2(−g·log2 e))` (`v_exp_f32`, `v_rcp_f32`), times u; amax with
//! `v_max3_f32` across the waves through LDS; `inv = 240 · rcp(amax)`, values `v_cvt_pk_fp8_f32(h ·
//! inv)` (round to nearest even, no clamp), stored scale `rcp(inv)`.
//!
//! **Reference and bound** ([`check`]): g and u are computed exactly in f64 (every 128-long FP8
//! dot product is exact; the block sums round at 2^-53). The kernel's f32 sums differ by at most
//! `(48 + D/128)·2^-24·Σ|terms|` (the bound the GEMM peers' tests use: 32-product MFMA lane
//! sums, 4 MFMAs and one scaled FMA per block); the silu/mul/rcp/exp steps add at most
//! `(8 + |g|)·2^-23` relative. Propagating these gives, per element, an interval for the
//! kernel's pre-conversion value `z ≈ h·240/amax`; the FP8 code must lie between the
//! round-to-nearest-even codes of the interval's ends. Where no rounding boundary falls inside
//! the interval (almost everywhere) that pins the code bit-exactly; FP8 ties and near-ties are
//! the only places where the contract cannot decide, and there either neighbour is accepted.
//! The scale must be within `(Δamax + amax·2^-21)/240` of `amax/240`.

use crate::peers::PeerError;
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

use super::{
    AMAX_FLOOR_BITS, CheckReport, FP8_MAX, MoeError, MoeFamily, MoeKernel, MoeLaunch, MoePadding, MoeProblem, MoeSorting, PtrSlot, U32Slot, Uploader, bytes_of,
    fp8_round, launch_config, moe_sorting, ptr, shuffle_experts, u32s, within,
};
use crate::memory::DeviceMemory;
use crate::numerics::{F8Kind, f8_to_f32, f32_to_f8_rne};

/// The 368-byte stage-1 kernarg (every field in a 16-byte slot; README table, launcher
/// `asm_moe_2stage.cu` lines 10-58).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct Stage1Args {
    /// 0x00 O: output buffer (FP8 values, then scales).
    pub out: PtrSlot,
    /// 0x10 X: activations FP8 `[T][D]`.
    pub x: PtrSlot,
    /// 0x20 G: w1 FP8 `[E][2I][D]`, pre-shuffled per expert.
    pub g: PtrSlot,
    /// 0x30 XC: num_valid_ids (int32[2]).
    pub xc: PtrSlot,
    /// 0x40 XQ: activation scales, transposed `[D/128][T]`.
    pub xq: PtrSlot,
    /// 0x50 GQ: w1 scales `[E][2I/128][D/128]`.
    pub gq: PtrSlot,
    /// 0x60 SMQ: not set by AITER's launcher; never dereferenced (0 here).
    pub smq: PtrSlot,
    /// 0x70 STP: sorted_token_ids.
    pub stp: PtrSlot,
    /// 0x80 SEP: sorted_expert_ids.
    pub sep: PtrSlot,
    /// 0x90 dim = D.
    pub dim: U32Slot,
    /// 0xA0 hidden_dim = I.
    pub hidden_dim: U32Slot,
    /// 0xB0 token_cnt = T.
    pub token_cnt: U32Slot,
    /// 0xC0 eprt_cnt = E.
    pub eprt_cnt: U32Slot,
    /// 0xD0 Xs = X row pitch in bytes (D).
    pub xs: U32Slot,
    /// 0xE0 GUs = bytes per w1 row (D).
    pub gus: U32Slot,
    /// 0xF0 Os = topk·I.
    pub os: U32Slot,
    /// 0x100 eGUs = 2·I·D.
    pub egus: U32Slot,
    /// 0x110 eGUQs = (2I/128)·(D/128)·4.
    pub eguqs: U32Slot,
    /// 0x120 eSMQs = I·4.
    pub esmqs: U32Slot,
    /// 0x130 topk.
    pub topk: U32Slot,
    /// 0x140 splitk (0: FP8 output; the contract's rows all use 0).
    pub splitk: U32Slot,
    /// 0x150 activation (0 = silu).
    pub activation: U32Slot,
    /// 0x160 SW: sorted_weights (not read; 0).
    pub sw: PtrSlot,
}

/// Bytes of the stage-1 output buffer: FP8 `[T + ⌈4T/128⌉][topk][I]`.
pub fn out_bytes(tokens: u32, topk: u32, inter_dim: u32) -> Option<u64> {
    (u64::from(tokens) + (4 * u64::from(tokens)).div_ceil(128)).checked_mul(u64::from(topk))?.checked_mul(u64::from(inter_dim))
}

/// Sorts `problem`'s routing, uploads every operand into `mem` in the contract's layouts (w1
/// shuffled per expert, XQ transposed, output zeroed; allocation sizes per `padding`) and returns
/// the launch.
pub fn prepare(mem: &DeviceMemory, kernel: &MoeKernel, problem: &MoeProblem, padding: MoePadding) -> Result<MoeLaunch, MoeError> {
    if kernel.spec.family != MoeFamily::Stage1 {
        return Err(MoeError::from(PeerError::Contract { kernel: kernel.spec.name.into(), what: "not a stage-1 kernel".into() }));
    }
    problem.validate(&kernel.spec)?;
    let sorting = moe_sorting(&problem.routing, kernel.spec.tm)?;
    let mut up = Uploader::new(mem, padding);
    match prepare_into(&mut up, kernel, problem, &sorting) {
        Ok((config, out, out_len)) => Ok(MoeLaunch { config, sorting, out, out_bytes: out_len, memset_bytes: 0, allocations: up.allocations }),
        Err(e) => {
            up.abandon();
            Err(e)
        }
    }
}

fn prepare_into(up: &mut Uploader<'_>, kernel: &MoeKernel, p: &MoeProblem, sorting: &MoeSorting) -> Result<(crate::exec::LaunchConfig, u64, u64), MoeError> {
    let c = &p.config;
    let (t, d, i, e) = (c.tokens as usize, c.model_dim as usize, c.inter_dim as usize, c.experts as usize);
    let db = d / 128;
    let px = up.upload_tail(&p.x, t * d, 128)?;
    let pg = up.upload_tail(&shuffle_experts(&p.w1, e, 2 * i, d)?, e * 2 * i * d, 16 * 128)?;
    let pxc = up.upload(bytes_of(&sorting.num_valid_ids), 8)?;
    let mut xq = vec![0f32; db * t];
    for tok in 0..t {
        for b in 0..db {
            xq[b * t + tok] = p.x_scale[tok * db + b];
        }
    }
    let pxq = up.upload_tail(bytes_of(&xq), xq.len() * 4, t * 4)?;
    let pgq = up.upload_tail(bytes_of(&p.w1_scale), p.w1_scale.len() * 4, 4)?;
    let pstp = up.upload(bytes_of(&sorting.sorted_token_ids), sorting.sorted_token_ids.len() * 4)?;
    let psep = up.upload(bytes_of(&sorting.sorted_expert_ids), sorting.sorted_expert_ids.len() * 4)?;
    let out_len = out_bytes(c.tokens, c.topk, c.inter_dim).ok_or(MoeError::Overflow { what: "stage-1 output" })?;
    let pout = up.upload(&[], usize::try_from(out_len).map_err(|_| MoeError::Overflow { what: "stage-1 output" })?)?;
    let args = Stage1Args {
        out: ptr(pout),
        x: ptr(px),
        g: ptr(pg),
        xc: ptr(pxc),
        xq: ptr(pxq),
        gq: ptr(pgq),
        smq: ptr(0),
        stp: ptr(pstp),
        sep: ptr(psep),
        dim: u32s(c.model_dim),
        hidden_dim: u32s(c.inter_dim),
        token_cnt: u32s(c.tokens),
        eprt_cnt: u32s(c.experts),
        xs: u32s(c.model_dim),
        gus: u32s(c.model_dim),
        os: u32s(c.topk * c.inter_dim),
        egus: u32s(2 * c.inter_dim * c.model_dim),
        eguqs: u32s((2 * c.inter_dim / 128) * (c.model_dim / 128) * 4),
        esmqs: u32s(c.inter_dim * 4),
        topk: u32s(c.topk),
        splitk: u32s(0),
        activation: u32s(0),
        sw: ptr(0),
    };
    let grid = [c.inter_dim.div_ceil(kernel.spec.tn), sorting.max_num_m_blocks, 1];
    Ok((launch_config(kernel, bytemuck::bytes_of(&args).to_vec(), grid)?, pout, out_len))
}

/// The stage-1 result read back from the output buffer.
#[derive(Clone, Debug)]
pub struct Stage1Output {
    /// FP8 codes `[T][topk][I]`.
    pub q: Vec<u8>,
    /// Scales `[T][topk][I/128]`.
    pub scale: Vec<f32>,
}

/// Reads the FP8 part and the appended scales of `launch`'s output.
pub fn read_output(mem: &DeviceMemory, launch: &MoeLaunch, problem: &MoeProblem) -> Result<Stage1Output, MoeError> {
    let c = &problem.config;
    let n = c.tokens as usize * c.topk as usize * c.inter_dim as usize;
    let mut q = vec![0u8; n];
    mem.read(launch.out, &mut q)?;
    let mut raw = vec![0u8; n / 32];
    mem.read(launch.out + n as u64, &mut raw)?;
    let scale = raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    Ok(Stage1Output { q, scale })
}

/// Exact gate and up values of one (token, expert) pair with their f32 error bounds.
pub(crate) struct GateUp {
    /// `silu(g)·u` (f64).
    pub h: Vec<f64>,
    /// Bound on |kernel's f32 h − h|.
    pub err: Vec<f64>,
}

/// g, u and h for token `t` through expert `e` (columns 0..I) with the error bounds of the
/// module docs. `dec` decodes FP8.
pub(crate) fn gate_up(p: &MoeProblem, dec: &[f64; 256], t: usize, e: usize) -> GateUp {
    let c = &p.config;
    let (d, i) = (c.model_dim as usize, c.inter_dim as usize);
    let db = d / 128;
    let x: Vec<f64> = p.x[t * d..(t + 1) * d].iter().map(|&b| dec[b as usize]).collect();
    let eps = (48.0 + db as f64) * 2f64.powi(-24);
    let row = |r: usize| -> (f64, f64) {
        let w = &p.w1[(e * 2 * i + r) * d..(e * 2 * i + r + 1) * d];
        let (mut v, mut m) = (0f64, 0f64);
        for b in 0..db {
            let (mut dot, mut mag) = (0f64, 0f64);
            for k in b * 128..b * 128 + 128 {
                let pr = x[k] * dec[w[k] as usize];
                dot += pr;
                mag += pr.abs();
            }
            let s = f64::from(p.x_scale[t * db + b]) * f64::from(p.w1_scale[(e * 2 * i / 128 + r / 128) * db + b]);
            v += s * dot;
            m += s * mag;
        }
        (v, eps * m)
    };
    let mut h = vec![0f64; i];
    let mut err = vec![0f64; i];
    for j in 0..i {
        let (g, eg) = row(j);
        let (u, eu) = row(i + j);
        let sg = g / (1.0 + (-g).exp());
        h[j] = sg * u;
        err[j] = (1.1 * eg * u.abs() + sg.abs() * eu + 1.1 * eg * eu + (8.0 + g.abs()) * 2f64.powi(-23) * h[j].abs()) * 1.01;
    }
    GateUp { h, err }
}

/// FP8 decode table (E4M3FNUZ) as f64.
pub(crate) fn decode_table() -> [f64; 256] {
    std::array::from_fn(|b| f64::from(f8_to_f32(b as u8, F8Kind::Fp8Fnuz)))
}

/// The kernel's re-quantisation of one 128-column block, as intervals: for every element the
/// lowest and highest FP8 value the kernel may produce, the reference code (RNE of the exact
/// quotient), and the reference amax with its bound.
pub(crate) struct QuantBlock {
    /// `max(floor, max|h|)` over the block.
    pub amax: f64,
    /// Bound on |kernel amax − amax|.
    pub amax_err: f64,
    /// Per element: (lowest FP8 value, highest FP8 value, reference FP8 code).
    pub q: Vec<(f64, f64, u8)>,
}

pub(crate) fn quant_block(h: &[f64], err: &[f64]) -> QuantBlock {
    let floor = f64::from(f32::from_bits(AMAX_FLOOR_BITS));
    let amax = h.iter().fold(floor, |m, x| m.max(x.abs()));
    let ea = err.iter().fold(0f64, |m, &x| m.max(x));
    let fmax = f64::from(FP8_MAX);
    let q = h
        .iter()
        .zip(err)
        .map(|(&x, &ex)| {
            let z = x * fmax / amax;
            let code = f32_to_f8_rne(z as f32, F8Kind::Fp8Fnuz, true);
            if amax <= 2.0 * ea {
                // Degenerate block (amax within its own error): any value is possible.
                return (-fmax, fmax, code);
            }
            let ez = (fmax / amax * (ex + x.abs() * ea / (amax - ea)) + z.abs() * 2f64.powi(-21)) * 1.01;
            (fp8_round(z - ez), fp8_round(z + ez), code)
        })
        .collect();
    QuantBlock { amax, amax_err: ea, q }
}

/// Checks `out` against the reference for every `sample`-th routed (token, slot) pair (1 = all):
/// each FP8 code within its interval, each scale within its bound (see the module docs).
/// `exact` counts codes equal to the round-to-nearest-even code of the exact quotient.
pub fn check(problem: &MoeProblem, sorting: &MoeSorting, out: &Stage1Output, sample: usize) -> CheckReport {
    let c = &problem.config;
    let (t_n, i, k) = (c.tokens as usize, c.inter_dim as usize, c.topk as usize);
    let ib = i / 128;
    let dec = decode_table();
    let valid = sorting.num_valid_ids[0] as usize;
    let bm = sorting.block_m as usize;
    let rows: Vec<(usize, usize, usize)> = (0..valid)
        .filter_map(|r| {
            let (t, s) = MoeSorting::split(sorting.sorted_token_ids[r]);
            ((t as usize) < t_n).then(|| (t as usize, s as usize, sorting.sorted_expert_ids[r / bm] as usize))
        })
        .enumerate()
        .filter(|(n, _)| n % sample.max(1) == 0)
        .map(|(_, x)| x)
        .collect();
    let parts: Vec<(CheckReport, f64, f64)> = rows
        .par_iter()
        .map(|&(t, s, e)| {
            let mut rep = CheckReport::default();
            let (mut xy, mut sq) = (0f64, 0f64);
            let gu = gate_up(problem, &dec, t, e);
            for b in 0..ib {
                let qb = quant_block(&gu.h[b * 128..b * 128 + 128], &gu.err[b * 128..b * 128 + 128]);
                let scale = out.scale[(t * k + s) * ib + b];
                let want = qb.amax / f64::from(FP8_MAX);
                let bound = (qb.amax_err + qb.amax * 2f64.powi(-21)) / f64::from(FP8_MAX) * 1.01;
                if !within(f64::from(scale) - want, bound) {
                    rep.violation(|| format!("scale[t {t}][s {s}][block {b}] = {scale:e}, reference amax/240 = {want:e} ± {bound:e}"));
                }
                for (jj, &(lo, hi, code)) in qb.q.iter().enumerate() {
                    let j = b * 128 + jj;
                    let got = out.q[(t * k + s) * i + j];
                    let v = dec[got as usize];
                    rep.elements += 1;
                    if got == code {
                        rep.exact += 1;
                    }
                    if !(v >= lo && v <= hi) {
                        rep.violation(|| {
                            format!("q[t {t}][s {s}][j {j}] = {got:#04x} ({v}), allowed [{lo}, {hi}], reference code {code:#04x}, h = {:e}", gu.h[j])
                        });
                    }
                    let deq = v * f64::from(scale);
                    xy += deq * gu.h[j];
                    sq += deq * deq + gu.h[j] * gu.h[j];
                }
            }
            (rep, xy, sq)
        })
        .collect();
    CheckReport::merge(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernarg_layout_matches_the_contract() {
        assert_eq!(std::mem::size_of::<Stage1Args>(), 368);
        assert_eq!(std::mem::offset_of!(Stage1Args, sep), 0x80);
        assert_eq!(std::mem::offset_of!(Stage1Args, dim), 0x90);
        assert_eq!(std::mem::offset_of!(Stage1Args, os), 0xF0);
        assert_eq!(std::mem::offset_of!(Stage1Args, topk), 0x130);
        assert_eq!(std::mem::offset_of!(Stage1Args, activation), 0x150);
        assert_eq!(std::mem::offset_of!(Stage1Args, sw), 0x160);
    }

    #[test]
    fn quant_intervals_pin_codes_away_from_ties() {
        // amax block: one element at amax gives 240 exactly; tiny errors keep single codes.
        let mut h = vec![0.01f64; 128];
        h[3] = -0.5;
        h[7] = 0.3;
        let err = vec![1e-12; 128];
        let qb = quant_block(&h, &err);
        assert_eq!(qb.amax, 0.5);
        assert_eq!(qb.q[3].0, -240.0);
        assert_eq!(qb.q[3].1, -240.0);
        assert_eq!(qb.q[7].0, qb.q[7].1);
        assert_eq!(qb.q[7].0, fp8_round(0.3 * 480.0));
        // A value exactly on a tie (z = 4.25 → codes 4.0 and 4.5 tie-break to even 4.0; the
        // kernel's rounding error could go either way) accepts both neighbours.
        let mut h = vec![0f64; 128];
        h[0] = 240.0;
        h[1] = 4.25;
        let qb = quant_block(&h, &[1e-9; 128]);
        assert_eq!((qb.q[1].0, qb.q[1].1), (4.0, 4.5));
    }
}
