//! 1-stage fused MoE (`fmoe_bf16_blockscaleFp8_g1u1_{vs|novs}_silu_1tg[_ps|_psx]_<TM>x<TN>`):
//! launch contract and the reference check.
//!
//! **Contract** (peers README, family 3): 448-byte kernarg ([`FusedArgs`]), block 256. Each
//! workgroup takes (a block of TM sorted rows, a TN-slice of I): gate·up over D, silu·up,
//! re-quantisation to FP8, the down projection of its I-slice for all D outputs, the routing
//! weight, and `global_atomic_pk_add_bf16` into O `[T][D]` bf16, which the caller zeroes (and
//! AMD's time includes that fill). Grid: [`Schedule::Grid`] (⌈I/TN⌉, max_num_m_blocks, 1);
//! persistent kernels (tg_num_perCU = 1) get (CUs, 1, 1) with `total_tgs = ⌊CUs/ps_deno⌋·ps_deno`,
//! `ps_deno = ⌈I/TN⌉` in the kernarg. `vs` kernels wrap each output atomic in `s_setvskip` so
//! padding rows (token id T) issue nothing.
//!
//! **Arithmetic** (disassembly of vs_silu_1tg_32x128 and the tiles' shared prologue): gate/up
//! as in stage 1 ([`super::stage1`]); the intermediate is re-quantised per (row, 128 columns of
//! I) exactly like stage 1's output (amax with floor 0x358637bd, `inv = 240·rcp(amax)`,
//! `v_cvt_pk_fp8_f32`, scale `rcp(inv)`); the down GEMM is FP8 MFMA per 128-column block of I
//! scaled by (intermediate scale · w2 block scale), times the row's routing weight; each f32
//! contribution is converted to bf16 by adding 0x7fff + 1 and keeping the upper half (round to
//! nearest, ties away from zero in magnitude; NaN kept by `v_cmp_u_f32`), then added atomically.
//!
//! **Reference and bound** ([`check`]): the FP8 intermediate is bracketed per element exactly as
//! in stage 1 (an interval of at most two neighbouring codes, a single code away from
//! rounding boundaries); the reference uses the round-to-nearest-even code of the exact value and
//! bounds the effect of the other admissible code, of the scale's uncertainty and of the down
//! GEMM's f32 accumulation. Each output then receives n = (routed slots of the token) · ⌈I/TN⌉
//! contributions in an order the hardware does not fix, so exact bits are not specified: each
//! conversion to bf16 errs by at most 2^-8 of its value and each atomic addition (the first onto
//! zero is exact) by at most 2^-8 of the running sum, which is at most the sum of the k largest
//! contribution magnitudes after k additions. The element-wise bound is the sum of these terms.

use crate::peers::PeerError;
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

use super::stage1::{decode_table, gate_up, quant_block};
use super::within;
use super::{
    CheckReport, FP8_MAX, MoeError, MoeFamily, MoeKernel, MoeLaunch, MoePadding, MoeProblem, MoeSorting, PtrSlot, Schedule, U32Slot, Uploader, bytes_of,
    launch_config, moe_sorting, ptr, shuffle_experts, u32s,
};
use crate::memory::DeviceMemory;

/// The 448-byte 1-stage kernarg (every field in a 16-byte slot; README table, launcher
/// `asm_fmoe.cu` lines 11-69).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct FusedArgs {
    /// 0x00 O: bf16 `[T][D]`, zeroed.
    pub out: PtrSlot,
    /// 0x10 X: activations FP8 `[T][D]`.
    pub x: PtrSlot,
    /// 0x20 GU: w1 FP8 `[E][2I][D]`, shuffled per expert.
    pub gu: PtrSlot,
    /// 0x30 XC: num_valid_ids (int32[2]; the metadata calls it U).
    pub xc: PtrSlot,
    /// 0x40 D: w2 FP8 `[E][D][I]`, shuffled per expert (N = D, K = I).
    pub down: PtrSlot,
    /// 0x50 XQ: activation scales transposed `[D/128][T]`.
    pub xq: PtrSlot,
    /// 0x60 GUQ: w1 scales `[E][2I/128][D/128]`.
    pub guq: PtrSlot,
    /// 0x70 DQ: w2 scales `[E][D/128][I/128]`.
    pub dq: PtrSlot,
    /// 0x80 SMQ: unused (0).
    pub smq: PtrSlot,
    /// 0x90 STP: sorted_token_ids.
    pub stp: PtrSlot,
    /// 0xA0 SW: sorted_weights.
    pub sw: PtrSlot,
    /// 0xB0 SEP: sorted_expert_ids.
    pub sep: PtrSlot,
    /// 0xC0 dim = D.
    pub dim: U32Slot,
    /// 0xD0 inter_dim = I.
    pub inter_dim: U32Slot,
    /// 0xE0 token_cnt = T (persistent kernels read num_valid_ids[1] instead).
    pub token_cnt: U32Slot,
    /// 0xF0 eprt_cnt = E.
    pub eprt_cnt: U32Slot,
    /// 0x100 Xs = D.
    pub xs: U32Slot,
    /// 0x110 GUs = D.
    pub gus: U32Slot,
    /// 0x120 Ds = I.
    pub ds: U32Slot,
    /// 0x130 Os = 2·D.
    pub os: U32Slot,
    /// 0x140 eGUs = 2·I·D.
    pub egus: U32Slot,
    /// 0x150 eDs = I·D.
    pub eds: U32Slot,
    /// 0x160 eGUQs = (2I/128)(D/128)·4.
    pub eguqs: U32Slot,
    /// 0x170 eDQs = (D/128)(I/128)·4.
    pub edqs: U32Slot,
    /// 0x180 eSMQs = I·4.
    pub esmqs: U32Slot,
    /// 0x190 topk.
    pub topk: U32Slot,
    /// 0x1A0 total_tgs (persistent kernels).
    pub total_tgs: U32Slot,
    /// 0x1B0 ps_deno = ⌈I/TN⌉.
    pub ps_deno: U32Slot,
}

/// Sorts `problem`'s routing, uploads the operands in the contract's layouts (w1 and w2
/// shuffled per expert, XQ transposed, O zeroed) and returns the launch. `cus` sizes the
/// persistent kernels' grid ([`super::TIMED_CUS`] as AMD timed them); the XCD swizzle of `psx`
/// needs `total_tgs` to be a multiple of 8. Allocation sizes follow `padding`.
pub fn prepare(mem: &DeviceMemory, kernel: &MoeKernel, problem: &MoeProblem, cus: u32, padding: MoePadding) -> Result<MoeLaunch, MoeError> {
    if kernel.spec.family != MoeFamily::OneStage {
        return Err(MoeError::from(PeerError::Contract { kernel: kernel.spec.name.into(), what: "not a 1-stage kernel".into() }));
    }
    problem.validate(&kernel.spec)?;
    let c = &problem.config;
    let ps_deno = c.inter_dim.div_ceil(kernel.spec.tn);
    let total_tgs = cus / ps_deno * ps_deno;
    if kernel.spec.schedule != Schedule::Grid && total_tgs == 0 {
        return Err(MoeError::from(PeerError::Shape {
            kernel: kernel.spec.name.into(),
            arg: "cus",
            value: cus.into(),
            expected: format!("at least ps_deno = {ps_deno}"),
        }));
    }
    if kernel.spec.schedule == Schedule::PersistentXcd && !total_tgs.is_multiple_of(8) {
        return Err(MoeError::from(PeerError::Shape {
            kernel: kernel.spec.name.into(),
            arg: "cus",
            value: cus.into(),
            expected: "⌊cus/ps_deno⌋·ps_deno a multiple of 8 (XCD swizzle)".into(),
        }));
    }
    let sorting = moe_sorting(&problem.routing, kernel.spec.tm)?;
    let mut up = Uploader::new(mem, padding);
    match prepare_into(&mut up, kernel, problem, &sorting, cus, total_tgs, ps_deno) {
        Ok((config, out, len)) => Ok(MoeLaunch { config, sorting, out, out_bytes: len, memset_bytes: len, allocations: up.allocations }),
        Err(e) => {
            up.abandon();
            Err(e)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn prepare_into(
    up: &mut Uploader<'_>,
    kernel: &MoeKernel,
    p: &MoeProblem,
    sorting: &MoeSorting,
    cus: u32,
    total_tgs: u32,
    ps_deno: u32,
) -> Result<(crate::exec::LaunchConfig, u64, u64), MoeError> {
    let c = &p.config;
    let (t, d, i, e) = (c.tokens as usize, c.model_dim as usize, c.inter_dim as usize, c.experts as usize);
    let db = d / 128;
    let px = up.upload_tail(&p.x, t * d, 128)?;
    let pgu = up.upload_tail(&shuffle_experts(&p.w1, e, 2 * i, d)?, e * 2 * i * d, 16 * 128)?;
    let pxc = up.upload(bytes_of(&sorting.num_valid_ids), 8)?;
    // The down loop walks D in chunks of rows and prefetches the chunk after the last one.
    let pd = up.upload_tail(&shuffle_experts(&p.w2, e, d, i)?, e * d * i, 64 * i)?;
    let mut xq = vec![0f32; db * t];
    for tok in 0..t {
        for b in 0..db {
            xq[b * t + tok] = p.x_scale[tok * db + b];
        }
    }
    let pxq = up.upload_tail(bytes_of(&xq), xq.len() * 4, t * 4)?;
    let pguq = up.upload_tail(bytes_of(&p.w1_scale), p.w1_scale.len() * 4, 4)?;
    // DQ is prefetched for the D chunk after the last one too: whole rows of I/128 scales.
    let pdq = up.upload_tail(bytes_of(&p.w2_scale), p.w2_scale.len() * 4, 2 * (i / 128) * 4)?;
    let pstp = up.upload(bytes_of(&sorting.sorted_token_ids), sorting.sorted_token_ids.len() * 4)?;
    let psw = up.upload(bytes_of(&sorting.sorted_weights), sorting.sorted_weights.len() * 4)?;
    let psep = up.upload(bytes_of(&sorting.sorted_expert_ids), sorting.sorted_expert_ids.len() * 4)?;
    let out_len = t * d * 2;
    let pout = up.upload(&[], out_len)?;
    let args = FusedArgs {
        out: ptr(pout),
        x: ptr(px),
        gu: ptr(pgu),
        xc: ptr(pxc),
        down: ptr(pd),
        xq: ptr(pxq),
        guq: ptr(pguq),
        dq: ptr(pdq),
        smq: ptr(0),
        stp: ptr(pstp),
        sw: ptr(psw),
        sep: ptr(psep),
        dim: u32s(c.model_dim),
        inter_dim: u32s(c.inter_dim),
        token_cnt: u32s(c.tokens),
        eprt_cnt: u32s(c.experts),
        xs: u32s(c.model_dim),
        gus: u32s(c.model_dim),
        ds: u32s(c.inter_dim),
        os: u32s(2 * c.model_dim),
        egus: u32s(2 * c.inter_dim * c.model_dim),
        eds: u32s(c.inter_dim * c.model_dim),
        eguqs: u32s((2 * c.inter_dim / 128) * (c.model_dim / 128) * 4),
        edqs: u32s((c.model_dim / 128) * (c.inter_dim / 128) * 4),
        esmqs: u32s(c.inter_dim * 4),
        topk: u32s(c.topk),
        total_tgs: u32s(total_tgs),
        ps_deno: u32s(ps_deno),
    };
    let grid = match kernel.spec.schedule {
        Schedule::Grid => [ps_deno, sorting.max_num_m_blocks, 1],
        Schedule::Persistent | Schedule::PersistentXcd => [cus, 1, 1],
    };
    Ok((launch_config(kernel, bytemuck::bytes_of(&args).to_vec(), grid)?, pout, out_len as u64))
}

/// Reads O (`[T][D]` bf16) as f32 (exact widening).
pub fn read_output(mem: &DeviceMemory, launch: &MoeLaunch, problem: &MoeProblem) -> Result<Vec<f32>, MoeError> {
    let n = problem.config.tokens as usize * problem.config.model_dim as usize;
    let mut raw = vec![0u8; n * 2];
    mem.read(launch.out, &mut raw)?;
    Ok(raw.chunks_exact(2).map(|h| half::bf16::from_bits(u16::from_le_bytes([h[0], h[1]])).to_f32()).collect())
}

/// One token's contributions to its output row: per contribution (reference value per d,
/// variation bound per d).
struct Contribution {
    value: Vec<f64>,
    var: Vec<f64>,
}

/// Checks O against the reference for every `sample`-th token (1 = all), element-wise within the
/// bound of the module docs. `exact` counts elements equal to the reference sum rounded to
/// nearest-even bf16 (a statistic: the bits depend on the atomic order).
pub fn check(problem: &MoeProblem, sorting: &MoeSorting, tn: u32, out: &[f32], sample: usize) -> CheckReport {
    let c = &problem.config;
    let (t_n, d, i) = (c.tokens as usize, c.model_dim as usize, c.inter_dim as usize);
    let (db, ib) = (d / 128, i / 128);
    let tn = (tn as usize).max(128);
    let dec = decode_table();
    let valid = sorting.num_valid_ids[0] as usize;
    let bm = sorting.block_m as usize;
    // (slot, expert, weight) per token from the sorted rows (what the kernel consumes).
    let mut per_token: Vec<Vec<(usize, usize, f64)>> = vec![Vec::new(); t_n];
    for r in 0..valid {
        let (t, s) = MoeSorting::split(sorting.sorted_token_ids[r]);
        if (t as usize) < t_n {
            per_token[t as usize].push((s as usize, sorting.sorted_expert_ids[r / bm] as usize, f64::from(sorting.sorted_weights[r])));
        }
    }
    let u = 2f64.powi(-8);
    let eps_down = |nkb: usize| (48.0 + nkb as f64) * 2f64.powi(-24);
    let toks: Vec<usize> = (0..t_n).step_by(sample.max(1)).collect();
    let parts: Vec<(CheckReport, f64, f64)> = toks
        .par_iter()
        .map(|&t| {
            let mut contribs: Vec<Contribution> = Vec::new();
            for &(_s, e, w) in &per_token[t] {
                let gu = gate_up(problem, &dec, t, e);
                // Per 128-block of I: reference codes (as values), code variation, scale, scale error.
                let blocks: Vec<_> = (0..ib).map(|b| quant_block(&gu.h[b * 128..b * 128 + 128], &gu.err[b * 128..b * 128 + 128])).collect();
                for slice in 0..i.div_ceil(tn) {
                    let kbs = slice * tn / 128..((slice + 1) * tn / 128).min(ib);
                    let nkb = kbs.len();
                    let mut value = vec![0f64; d];
                    let mut var = vec![0f64; d];
                    for (n, (val, vr)) in value.iter_mut().zip(var.iter_mut()).enumerate() {
                        let wrow = &problem.w2[(e * d + n) * i..(e * d + n + 1) * i];
                        let (mut acc, mut dq_var, mut mag) = (0f64, 0f64, 0f64);
                        for kb in kbs.clone() {
                            let qb = &blocks[kb];
                            let sref = qb.amax / f64::from(FP8_MAX);
                            let es = (qb.amax_err + qb.amax * 2f64.powi(-21)) / f64::from(FP8_MAX) * 1.01;
                            let dqs = f64::from(problem.w2_scale[(e * db + n / 128) * ib + kb]);
                            let (mut dot, mut dvar, mut dmag) = (0f64, 0f64, 0f64);
                            for (kk, &(lo, hi, code)) in qb.q.iter().enumerate() {
                                let wv = dec[wrow[kb * 128 + kk] as usize];
                                let qv = dec[code as usize];
                                dot += qv * wv;
                                dvar += (hi - qv).max(qv - lo) * wv.abs();
                                dmag += lo.abs().max(hi.abs()) * wv.abs();
                            }
                            acc += sref * dqs * dot;
                            dq_var += dqs * (sref * dvar + es * dmag);
                            mag += (sref + es) * dqs * dmag;
                        }
                        *val = w * acc;
                        *vr = w * (dq_var + eps_down(nkb) * mag) + 2.0 * 2f64.powi(-24) * (w * acc).abs();
                    }
                    contribs.push(Contribution { value, var });
                }
            }
            let mut rep = CheckReport::default();
            let (mut xy, mut sq) = (0f64, 0f64);
            let mut mags: Vec<f64> = Vec::with_capacity(contribs.len());
            for n in 0..d {
                let want: f64 = contribs.iter().map(|c| c.value[n]).sum();
                mags.clear();
                let mut bound = 0f64;
                for c in &contribs {
                    let m = c.value[n].abs() + c.var[n];
                    bound += c.var[n] + u * m;
                    mags.push(m * (1.0 + u));
                }
                mags.sort_by(|a, b| b.total_cmp(a));
                let mut run = 0f64;
                for (k, m) in mags.iter().enumerate() {
                    run += m;
                    if k >= 1 {
                        bound += u * run;
                    }
                }
                bound = bound * 1.01 + 1e-30;
                let got = f64::from(out[t * d + n]);
                rep.elements += 1;
                if out[t * d + n] == half::bf16::from_f64(want).to_f32() {
                    rep.exact += 1;
                }
                if !within(got - want, bound) {
                    rep.violation(|| format!("O[t {t}][d {n}] = {got:e}, reference {want:e} ± {bound:e} ({} contributions)", contribs.len()));
                }
                xy += got * want;
                sq += got * got + want * want;
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
        assert_eq!(std::mem::size_of::<FusedArgs>(), 448);
        assert_eq!(std::mem::offset_of!(FusedArgs, down), 0x40);
        assert_eq!(std::mem::offset_of!(FusedArgs, sep), 0xB0);
        assert_eq!(std::mem::offset_of!(FusedArgs, dim), 0xC0);
        assert_eq!(std::mem::offset_of!(FusedArgs, os), 0x130);
        assert_eq!(std::mem::offset_of!(FusedArgs, topk), 0x190);
        assert_eq!(std::mem::offset_of!(FusedArgs, ps_deno), 0x1B0);
    }
}
