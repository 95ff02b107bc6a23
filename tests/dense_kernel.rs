//! The dense FP8 GEMM kernels (`fp8_gemm_nt_bm*_bn*`, device/src/dense.rs) run on the gfx942
//! emulator against a straightforward CPU computation written here from the definition
//! `D[i,j] = bf16(Σ_kb SFA[i,kb]·SFB[j/128,kb]·Σ_{k∈kb} A[i,k]·B[j,k])`, with E4M3FNUZ decoded
//! from its bit layout (bias 8, 0x80 = NaN). Shapes cover M tails (1, 7, 127, 200), N not a
//! multiple of the 128-wide tile (192) and several scale blocks along K. The m-grouped kernels
//! (`m_grouped_fp8_gemm_nt_{contiguous,masked}_bm*_bn*`, device/src/grouped.rs) are launched the
//! same way at the end of the file: values per group, rows that must stay untouched, exact MFMA
//! counts (skipped blocks do no work) and the main loop they share with the dense kernels.

use amdgpu_emu::exec::{self, Checks, LaunchConfig};
use amdgpu_emu::loader::CodeObject;
use amdgpu_emu::memory::DeviceMemory;
use fp8gemm_device::args::{DenseGemmArgs, GlobalPtr};
use fp8gemm_device::tile::{DENSE_TILES, DenseTile, THREADS};

/// E4M3FNUZ → f32 from the bit layout: sign 7, exponent 6:3 (bias 8), mantissa 2:0; exponent 0 is
/// subnormal (m/8 · 2^-7); 0x80 is NaN; there is no −0 and no infinity.
fn e4m3fnuz(b: u8) -> f32 {
    if b == 0x80 {
        return f32::NAN;
    }
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = i32::from((b >> 3) & 0xf);
    let m = f32::from(b & 7);
    let mag = if e == 0 { m / 8.0 * 2f32.powi(1 - 8) } else { (1.0 + m / 8.0) * 2f32.powi(e - 8) };
    sign * mag
}

#[test]
fn fnuz_decode_by_hand() {
    assert_eq!(e4m3fnuz(0x00), 0.0);
    assert_eq!(e4m3fnuz(0x40), 1.0); // exponent 8 = bias
    assert_eq!(e4m3fnuz(0x7f), 240.0); // max: 1.875 · 2^7
    assert_eq!(e4m3fnuz(0xc0), -1.0);
    assert_eq!(e4m3fnuz(0x01), 2f32.powi(-10)); // smallest subnormal: 1/8 · 2^-7
    assert!(e4m3fnuz(0x80).is_nan());
}

/// SplitMix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A random FP8 byte of moderate magnitude (|x| ≤ 4), never the NaN pattern.
    fn fp8(&mut self) -> u8 {
        loop {
            let b = self.next() as u8;
            let e = (b >> 3) & 0xf;
            if b != 0x80 && e <= 10 {
                return b;
            }
        }
    }
    /// A positive scale in [2^-6, 2^-2).
    fn scale(&mut self) -> f32 {
        let u = (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        2f32.powi(-6 + (self.next() % 4) as i32) * (1.0 + u)
    }
}

fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}

/// `1 − 2Σxy / Σ(x² + y²)` in f64 (0 when both are all zero).
fn calc_diff(x: &[f32], y: &[f32]) -> f64 {
    let (mut xy, mut sq) = (0.0f64, 0.0f64);
    for (&a, &b) in x.iter().zip(y) {
        xy += f64::from(a) * f64::from(b);
        sq += f64::from(a) * f64::from(a) + f64::from(b) * f64::from(b);
    }
    if sq == 0.0 { 0.0 } else { 1.0 - 2.0 * xy / sq }
}

struct Problem {
    m: usize,
    n: usize,
    k: usize,
    a: Vec<u8>,
    b: Vec<u8>,
    sfa: Vec<f32>,
    sfb: Vec<f32>,
}

impl Problem {
    fn random(m: usize, n: usize, k: usize, seed: u64) -> Problem {
        let mut r = Rng(seed);
        let nkb = k.div_ceil(128);
        Problem {
            m,
            n,
            k,
            a: (0..m * k).map(|_| r.fp8()).collect(),
            b: (0..n * k).map(|_| r.fp8()).collect(),
            sfa: (0..m * nkb).map(|_| r.scale()).collect(),
            sfb: (0..n.div_ceil(128) * nkb).map(|_| r.scale()).collect(),
        }
    }

    /// The definition, in f64, then rounded to f32 (the kernel's output is bf16 of an f32).
    fn reference(&self) -> Vec<f32> {
        let nkb = self.k.div_ceil(128);
        let a: Vec<f32> = self.a.iter().map(|&x| e4m3fnuz(x)).collect();
        let b: Vec<f32> = self.b.iter().map(|&x| e4m3fnuz(x)).collect();
        let mut d = vec![0f32; self.m * self.n];
        for i in 0..self.m {
            for j in 0..self.n {
                let mut acc = 0f64;
                for kb in 0..nkb {
                    let mut part = 0f64;
                    for kk in kb * 128..((kb + 1) * 128).min(self.k) {
                        part += f64::from(a[i * self.k + kk]) * f64::from(b[j * self.k + kk]);
                    }
                    acc += part * f64::from(self.sfa[i * nkb + kb]) * f64::from(self.sfb[(j / 128) * nkb + kb]);
                }
                d[i * self.n + j] = acc as f32;
            }
        }
        d
    }
}

/// Bytes after D that the kernel must leave alone.
const GUARD: usize = 4096;
/// What D and its guard are filled with before the launch (a bf16 NaN pattern).
const POISON: u8 = 0xff;

fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Runs `tile`'s kernel on `p`; returns D, whether the guard after D stayed untouched, and the
/// emulator's counters.
fn run(co: &CodeObject, tile: DenseTile, p: &Problem) -> (Vec<f32>, bool, exec::LaunchReport) {
    run_with_grid(co, tile, p, tile.grid(p.m as u32, p.n as u32))
}

/// [`run`] with an explicit number of workgroups. Every emulator check is on (memcheck, MFMA
/// hazards, LDS races, late-arriving loads, uninitialized LDS reads).
fn run_with_grid(co: &CodeObject, tile: DenseTile, p: &Problem, grid: u32) -> (Vec<f32>, bool, exec::LaunchReport) {
    let kernel = co.kernel(tile.name).unwrap_or_else(|| panic!("{} is not in the gfx942 code object", tile.name));
    let mem = DeviceMemory::new();
    let put = |bytes: &[u8]| {
        let addr = mem.alloc(bytes.len() as u64).expect("alloc");
        mem.write(addr, bytes).expect("write");
        addr
    };
    let a = put(&p.a);
    let b = put(&p.b);
    let sfa = put(&to_bytes(&p.sfa));
    let sfb = put(&to_bytes(&p.sfb));
    let d_len = p.m * p.n * 2;
    let d = put(&vec![POISON; d_len + GUARD]);
    let args = DenseGemmArgs {
        a: GlobalPtr::new(a),
        b: GlobalPtr::new(b),
        sfa: GlobalPtr::new(sfa),
        sfb: GlobalPtr::new(sfb),
        d: GlobalPtr::new(d),
        m: p.m as u32,
        n: p.n as u32,
        k: p.k as u32,
        lda: p.k as u32,
        ldd: p.n as u32,
        reserved: 0,
    };
    let cfg = LaunchConfig { grid: [grid, 1, 1], block: [THREADS, 1, 1], dynamic_lds_bytes: tile.lds_bytes(), kernarg: args.as_bytes().to_vec() };
    let report = exec::launch(co, kernel, &cfg, &mem, &Checks::all()).unwrap_or_else(|e| panic!("{} m={} n={} k={}: {e}", tile.name, p.m, p.n, p.k));
    let mut out = vec![0u8; d_len + GUARD];
    mem.read(d, &mut out).expect("read D");
    let dv = out[..d_len].chunks_exact(2).map(|c| bf16_to_f32(u16::from_le_bytes([c[0], c[1]]))).collect();
    (dv, out[d_len..].iter().all(|&x| x == POISON), report)
}

fn check(co: &CodeObject, tile: DenseTile, m: usize, n: usize, k: usize) {
    let p = Problem::random(m, n, k, (m * 1_000_003 + n * 1009 + k) as u64);
    let want = p.reference();
    let (got, guard_ok, _) = run(co, tile, &p);
    let what = format!("{} m={m} n={n} k={k}", tile.name);
    assert!(guard_ok, "{what}: wrote past the end of D");
    let scale = want.iter().fold(0f32, |s, x| s.max(x.abs()));
    for i in 0..m {
        for j in 0..n {
            let (g, w) = (got[i * n + j], want[i * n + j]);
            // bf16 keeps 8 significant bits: RNE error ≤ 2^-9 relative; allow for the f32
            // accumulation order on top of that.
            let tol = w.abs() * 2f32.powi(-8) + scale * 1e-5;
            assert!((g - w).abs() <= tol, "{what}: D[{i},{j}] = {g}, expected {w}");
        }
    }
    let diff = calc_diff(&got, &want);
    assert!(diff < 1e-5, "{what}: calc_diff {diff}");
}

fn code_object() -> CodeObject {
    CodeObject::parse(fp8gemm::codeobj::GFX942).expect("the embedded gfx942 code object parses")
}

#[test]
fn dense_kernels_match_the_definition_with_m_tails() {
    let co = code_object();
    for tile in DENSE_TILES {
        for m in [1, 7, 64, 127, 200] {
            for n in [128, 192] {
                for k in [128, 384] {
                    check(&co, tile, m, n, k);
                }
            }
        }
    }
}

#[test]
fn dense_kernels_handle_n_not_a_multiple_of_16() {
    // n % 4 == 0 is all the kernels need: a lane stores 4 consecutive columns.
    let co = code_object();
    for tile in DENSE_TILES {
        check(&co, tile, 33, 100, 256);
    }
}

#[test]
fn dense_kernels_long_k() {
    // 16 scale blocks: many trips through the pipeline and 4 loads of 4 blocks' scales each;
    // 5 and 7 blocks: the last scale load covers blocks past the end of K (the next row's scales,
    // out of range on the last row), which the kernel must not use.
    let co = code_object();
    for tile in DENSE_TILES {
        check(&co, tile, 70, 256, 2048);
        check(&co, tile, 70, 192, 640);
        check(&co, tile, 129, 128, 896);
    }
}

#[test]
fn dense_kernels_issue_exactly_the_mfmas_the_tile_needs() {
    // Each wave owns (BM/2)·(BN/2) outputs as 16×16 fragments and runs 4 MFMAs (K = 32 each) per
    // fragment per 128-K block: waves · nkb · 4 · (BM/32)·(BN/32) MFMAs, nothing redundant.
    let co = code_object();
    let (m, n, k) = (256, 256, 1024);
    let p = Problem::random(m, n, k, 7);
    let want = p.reference();
    for tile in DENSE_TILES {
        let (got, guard_ok, r) = run(&co, tile, &p);
        assert!(guard_ok);
        assert!(calc_diff(&got, &want) < 1e-5);
        let waves = u64::from(tile.grid(m as u32, n as u32)) * u64::from(THREADS / 64);
        assert_eq!(r.waves, waves);
        let per_wave_per_block = 4 * u64::from(tile.block_m / 32) * u64::from(tile.block_n / 32);
        let mfma = r.count(exec::Class::Mfma);
        assert_eq!(mfma, waves * (k as u64 / 128) * per_wave_per_block, "{}", tile.name);
        eprintln!(
            "{}: {} instructions per wave, MFMA {:.1}% (whole kernel, m=n={m}, k={k}); VALU {} LDS {} VMEM {} SALU {} branch/wait {} SMEM {} per wave",
            tile.name,
            r.instructions / waves,
            100.0 * mfma as f64 / r.instructions as f64,
            r.count(exec::Class::Valu) / waves,
            r.count(exec::Class::Lds) / waves,
            r.count(exec::Class::Vmem) / waves,
            r.count(exec::Class::Salu) / waves,
            r.count(exec::Class::Branch) / waves,
            r.count(exec::Class::Smem) / waves,
        );
    }
}

/// Decoded instructions with their pcs.
type Decoded = Vec<(u64, amdgpu_emu::decode::Inst)>;

/// A kernel's decoded instructions with their pcs, and its backward branches as
/// `(target, branch pc)` spans.
fn decode_with_loops(co: &CodeObject, name: &str) -> (Decoded, Vec<(u64, u64)>) {
    use amdgpu_emu::decode::{Op, Program};
    let kernel = co.kernel(name).expect("kernel exists");
    let prog = Program::decode(co, kernel).expect("decodes");
    let insts: Decoded = prog.insts.into_iter().map(|(pc, r)| (pc, r.expect("every instruction decodes"))).collect();
    let is_branch = |op: Op| matches!(op, Op::s_branch | Op::s_cbranch_scc0 | Op::s_cbranch_scc1 | Op::s_cbranch_vccz | Op::s_cbranch_vccnz);
    let back: Vec<(u64, u64)> =
        insts.iter().filter(|(pc, i)| is_branch(i.op) && i.branch_target(*pc) <= *pc).map(|(pc, i)| (i.branch_target(*pc), *pc)).collect();
    assert!(!back.is_empty(), "{name}: no loop");
    (insts, back)
}

/// Steady-state main loop of a kernel: the instructions from the earliest backward-branch
/// target to the last backward branch (the `kb` loop including its prefetch/store tail).
fn main_loop(co: &CodeObject, name: &str) -> Vec<amdgpu_emu::decode::Inst> {
    let (insts, back) = decode_with_loops(co, name);
    loop_span(insts, &back)
}

/// The instructions from the earliest target of `back` to its last branch.
fn loop_span(insts: Decoded, back: &[(u64, u64)]) -> Vec<amdgpu_emu::decode::Inst> {
    let start = back.iter().map(|b| b.0).min().unwrap();
    let end = back.iter().map(|b| b.1).max().unwrap();
    insts.into_iter().filter(|(pc, _)| (start..=end).contains(pc)).map(|(_, i)| i).collect()
}

/// [`main_loop`] without backward branches that are followed by `s_endpgm`: LLVM may lay a
/// cold block of the prologue (e.g. the tile coordinates' remainder cases) after the main loop
/// and jump from it back into the prologue, right before the program's end; that branch is no
/// loop, and its range would take in the prologue's barrier and loads.
fn main_loop_without_tail_jumps(co: &CodeObject, name: &str) -> Vec<amdgpu_emu::decode::Inst> {
    let (insts, back) = decode_with_loops(co, name);
    let next_is_end = |src: u64| {
        let i = insts.iter().position(|(pc, _)| *pc == src);
        i.and_then(|i| insts.get(i + 1)).is_some_and(|(_, n)| n.op == amdgpu_emu::decode::Op::s_endpgm)
    };
    let back: Vec<(u64, u64)> = back.into_iter().filter(|b| !next_is_end(b.1)).collect();
    assert!(!back.is_empty(), "{name}: no loop besides jumps before the end");
    loop_span(insts, &back)
}

/// The stream-K kernels' main-loop copies keep the data-parallel loop's MFMAs: all 16x16x32
/// FP8, a multiple of one 4-block trip of 8·FM per block, at least two copies decoded.
fn assert_streamk_loops_are_whole_trips(co: &CodeObject, name: &str, block_m: u32, what: &str) {
    let body = main_loop(co, name);
    let mfma: Vec<_> = body.iter().filter(|i| amdgpu_emu::decode::is_mai(i.op)).collect();
    let per_trip = 4 * 8 * (block_m / 16);
    assert!(mfma.iter().all(|i| i.op.name() == "v_mfma_f32_16x16x32_fp8_fp8"), "{what}");
    assert!(mfma.len() as u32 >= 2 * per_trip && (mfma.len() as u32).is_multiple_of(per_trip), "{what}: {} MFMAs, trip {per_trip}", mfma.len());
}

/// The waves per SIMD `regs` unified vector registers allow (512 per SIMD lane, allocated in
/// granules of 8, at most 8 waves).
fn waves_per_simd(regs: u32) -> u32 {
    (512 / (regs.div_ceil(8) * 8)).min(8)
}

/// The goals every GEMM kernel meets (no spills, no scratch, all LDS dynamic, launch bound
/// 256); returns its vector registers and the waves per SIMD they allow. On gfx90a+ the
/// metadata's `.vgpr_count` is already the unified total (architectural VGPRs rounded to 4,
/// plus AGPRs: LLVM's `NumVGPRsForWavesPerEU`; LLVM's own metadata test gives a kernel of 9
/// VGPRs and 32 AGPRs `.agpr_count: 32`, `.vgpr_count: 44` on gfx90a), so AGPRs are not added
/// again.
fn common_resource_goals(what: &str, m: &amdgpu_emu::loader::KernelMeta) -> (u32, u32) {
    assert_eq!((m.vgpr_spill_count, m.sgpr_spill_count), (0, 0), "{what}: spills");
    assert_eq!(m.private_segment_fixed_size, 0, "{what}: scratch");
    assert_eq!(m.group_segment_fixed_size, 0, "{what}: all LDS is dynamic");
    assert_eq!(m.max_flat_workgroup_size, THREADS, "{what}");
    assert!(m.vgpr_count >= m.agpr_count, "{what}: vgpr_count {} below agpr_count {}", m.vgpr_count, m.agpr_count);
    (m.vgpr_count, waves_per_simd(m.vgpr_count))
}

/// The resource goals of the kernels that run the dense main loop plus a partial store and a
/// reduction (split-K, stream-K), on both architectures: [`common_resource_goals`] and at least
/// as many waves per SIMD as their LDS lets a CU hold workgroups (so registers never lower the
/// occupancy). `check_loop` gets each gfx942 kernel's main-loop MFMAs (decoded only on gfx942:
/// the gfx950 object may use gfx950-only VALU encodings such as v_bitop3_b32 outside the loop)
/// and the MFMAs of one trip (prefetch_depth() blocks: the
/// loop is unrolled by the prefetch depth).
fn reduction_kernels_meet_the_resource_goals(tiles: &[DenseTile], check_loop: impl Fn(&str, &[&amdgpu_emu::decode::Inst], u32)) {
    for (arch, bytes) in [("gfx942", fp8gemm::codeobj::GFX942), ("gfx950", fp8gemm::codeobj::GFX950)] {
        let co = CodeObject::parse(bytes).expect("code object parses");
        for tile in tiles {
            let k = co.kernel(tile.name).unwrap_or_else(|| panic!("{arch}: {} missing", tile.name));
            let what = format!("{arch} {}", tile.name);
            let (regs, waves) = common_resource_goals(&what, &k.meta);
            let wgs_by_lds = 64 * 1024 / tile.lds_bytes();
            assert!(waves >= wgs_by_lds, "{what}: {regs} registers → {waves} waves/SIMD < {wgs_by_lds} workgroups by LDS");
            if arch == "gfx942" {
                let body = main_loop(&co, tile.name);
                let mfma: Vec<_> = body.iter().filter(|i| amdgpu_emu::decode::is_mai(i.op)).collect();
                let per_trip = 4 * (tile.block_m / 32) * (tile.block_n / 32) * tile.prefetch_depth();
                check_loop(&what, &mfma, per_trip);
            }
        }
    }
}

#[test]
fn splitk_kernels_meet_the_resource_goals() {
    // The split-K kernels (the dense main loop plus the partial store and the reduction): the
    // goals above, and the main loop's MFMA count per block unchanged.
    reduction_kernels_meet_the_resource_goals(&fp8gemm_device::tile::DENSE_SPLITK_TILES, |what, mfma, per_trip| {
        assert_eq!(mfma.len() as u32, per_trip, "{what}: MFMAs per main-loop iteration");
    });
}

#[test]
fn streamk_kernels_meet_the_resource_goals() {
    // The stream-K kernels (the dense main loop run for one or two pieces, the partial store and
    // the reduction): the goals above, and each main-loop copy's MFMA count per block unchanged.
    reduction_kernels_meet_the_resource_goals(&fp8gemm_device::streamk::STREAMK_TILES, |what, mfma, per_trip| {
        // Two pieces: two copies of the main loop; `main_loop` spans from the first back-edge
        // target to the last back edge, so it holds both (and what lies between them), i.e. at
        // least twice the MFMAs of one trip, all 16x16x32 FP8.
        assert!(mfma.iter().all(|i| i.op.name() == "v_mfma_f32_16x16x32_fp8_fp8"), "{what}");
        assert!(mfma.len() as u32 >= 2 * per_trip && (mfma.len() as u32).is_multiple_of(per_trip), "{what}: {} MFMAs, trip {per_trip}", mfma.len());
    });
}

#[test]
fn dense_kernels_meet_the_resource_goals() {
    // Issue 6 goals that can be read from the artifact: no spills, no scratch, launch bound 256,
    // at least 2 waves per SIMD from the register count, 16x16x32 FP8 MFMAs in the main loop.
    for (arch, bytes) in [("gfx942", fp8gemm::codeobj::GFX942), ("gfx950", fp8gemm::codeobj::GFX950)] {
        let co = CodeObject::parse(bytes).expect("code object parses");
        for tile in DENSE_TILES {
            let k = co.kernel(tile.name).unwrap_or_else(|| panic!("{arch}: {} missing", tile.name));
            let (m, what) = (&k.meta, format!("{arch} {}", tile.name));
            let (regs, waves) = common_resource_goals(&what, m);
            assert!(waves >= 2, "{what}: {regs} registers → {waves} waves/SIMD");
            let body = main_loop(&co, tile.name);
            let mfma: Vec<_> = body.iter().filter(|i| amdgpu_emu::decode::is_mai(i.op)).collect();
            // gfx942: four 16x16x32 FP8 MFMAs per 128-deep block and 16×16 output; gfx950: one
            // CDNA4 16x16x128 (`intrinsics::mfma_f32_16x16x128_fp8`).
            let (mnemonic, per_output) = if arch == "gfx950" { ("v_mfma_f32_16x16x128_f8f6f4", 1) } else { ("v_mfma_f32_16x16x32_fp8_fp8", 4) };
            assert!(mfma.iter().all(|i| i.op.name() == mnemonic), "{what}");
            // The loop runs prefetch_depth() blocks per trip (unrolled so the register sets of
            // the operand prefetch never move).
            let per_block = per_output * (tile.block_m / 32) * (tile.block_n / 32);
            assert_eq!(mfma.len() as u32, per_block * tile.prefetch_depth(), "{what}: MFMAs per main-loop iteration");
            // LDS banks repeat every 128 bytes: the bank-conflict analysis of tile.rs (done on the
            // lane-dependent swizzled address) holds for the binary if every immediate offset
            // the loop adds is a multiple of 128.
            for i in body.iter().filter(|i| matches!(i.op.name(), "ds_read_b128" | "ds_write_b128")) {
                assert_eq!(i.imm % 128, 0, "{what}: {} offset {}", i.op.name(), i.imm);
            }
            let share = mfma.len() as f64 / body.len() as f64;
            eprintln!(
                "{what}: vgpr {} agpr {} sgpr {} → {waves} waves/SIMD, LDS {} B; main loop {} instructions, {} MFMA ({:.1}%)",
                m.vgpr_count,
                m.agpr_count,
                m.sgpr_count,
                tile.lds_bytes(),
                body.len(),
                mfma.len(),
                100.0 * share
            );
        }
    }
}

#[test]
fn surplus_workgroups_do_nothing() {
    // 200 × 192 with 64 × 64 tiles is 4 × 3 = 12 tiles; 21 workgroups must give the same D.
    let co = code_object();
    let p = Problem::random(200, 192, 256, 11);
    let (base, ok_base, _) = run(&co, fp8gemm_device::tile::BM64_BN64, &p);
    let (more, ok_more, r) = run_with_grid(&co, fp8gemm_device::tile::BM64_BN64, &p, 21);
    assert!(ok_base && ok_more);
    assert_eq!(r.workgroups, 21);
    assert_eq!(base.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), more.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    assert!(calc_diff(&more, &p.reference()) < 1e-5);
    // The 9 surplus workgroups issue no MFMA: 12 tiles · 4 waves · 2 blocks · 16.
    assert_eq!(r.count(exec::Class::Mfma), 12 * 4 * 2 * 16);
}

// ---- m-grouped kernels (device/src/grouped.rs), launched directly ------------------------------

use fp8gemm_device::args::{MGroupedContiguousArgs, MGroupedMaskedArgs};
use fp8gemm_device::tile::{BsTile, CONTIGUOUS_BS_TILES, CONTIGUOUS_TILES, DENSE_BS_TILES, DENSE_TILES as DENSE, MASKED_BS_TILES, MASKED_TILES};

/// `groups` random weight sets `[n, k]` (values, scales) and one random activation set of `rows`.
struct GroupedProblem {
    act: Problem,
    weights: Vec<Problem>,
}

impl GroupedProblem {
    fn random(rows: usize, groups: usize, n: usize, k: usize, seed: u64) -> GroupedProblem {
        GroupedProblem { act: Problem::random(rows, n, k, seed), weights: (0..groups).map(|g| Problem::random(1, n, k, seed * 31 + 1 + g as u64)).collect() }
    }
    fn b(&self) -> Vec<u8> {
        self.weights.iter().flat_map(|w| w.b.iter().copied()).collect()
    }
    fn sfb(&self) -> Vec<f32> {
        self.weights.iter().flat_map(|w| w.sfb.iter().copied()).collect()
    }
    /// The stacked B in the pre-shuffled layout: each group shuffled on its own
    /// (`fp8gemm::layout::preshuffle_bytes`), group `g` at byte `g · ⌈n/16⌉·16·k`.
    fn b_preshuffled(&self) -> Vec<u8> {
        let (n, k) = (self.act.n, self.act.k);
        self.weights.iter().flat_map(|w| fp8gemm::layout::preshuffle_bytes(&w.b, n, k).expect("k is a multiple of 128")).collect()
    }
    /// Rows `first..first + count` of `A · B[g]ᵀ` by the definition.
    fn reference_rows(&self, g: usize, first: usize, count: usize) -> Vec<f32> {
        let (n, k) = (self.act.n, self.act.k);
        let nkb = k.div_ceil(128);
        Problem {
            m: count,
            n,
            k,
            a: self.act.a[first * k..(first + count) * k].to_vec(),
            b: self.weights[g].b.clone(),
            sfa: self.act.sfa[first * nkb..(first + count) * nkb].to_vec(),
            sfb: self.weights[g].sfb.clone(),
        }
        .reference()
    }
}

/// Launches `name` with `kernarg` over A/SFA of `p.act`, the stacked B/SFB, D (poisoned, plus a
/// guard) and an i32 index buffer, with every emulator check on (memcheck, MFMA hazards, LDS
/// races, late-arriving loads, uninitialized LDS reads); returns D as f32, whether every D byte
/// in `untouched_rows` and the guard kept the poison, and the counters.
#[allow(clippy::too_many_arguments)]
fn run_grouped(
    co: &CodeObject,
    (name, lds_bytes): (&str, u32),
    b_bytes: &[u8],
    p: &GroupedProblem,
    index: &[i32],
    grid: u32,
    kernarg: impl Fn(u64, u64, u64, u64, u64, u64) -> Vec<u8>,
    untouched_rows: &[bool],
) -> (Vec<f32>, bool, exec::LaunchReport) {
    let kernel = co.kernel(name).unwrap_or_else(|| panic!("{name} is not in the gfx942 code object"));
    let mem = DeviceMemory::new();
    let put = |bytes: &[u8]| {
        let addr = mem.alloc(bytes.len() as u64).expect("alloc");
        mem.write(addr, bytes).expect("write");
        addr
    };
    let (rows, n) = (p.act.m, p.act.n);
    let a = put(&p.act.a);
    let b = put(b_bytes);
    let sfa = put(&to_bytes(&p.act.sfa));
    let sfb = put(&to_bytes(&p.sfb()));
    let idx = put(&index.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
    let d_len = rows * n * 2;
    let d = put(&vec![POISON; d_len + GUARD]);
    let cfg = LaunchConfig { grid: [grid, 1, 1], block: [THREADS, 1, 1], dynamic_lds_bytes: lds_bytes, kernarg: kernarg(a, b, sfa, sfb, d, idx) };
    let report = exec::launch(co, kernel, &cfg, &mem, &Checks::all()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut out = vec![0u8; d_len + GUARD];
    mem.read(d, &mut out).expect("read D");
    let untouched = out[d_len..].iter().all(|&x| x == POISON)
        && (0..rows).filter(|&i| untouched_rows[i]).all(|i| out[i * n * 2..(i + 1) * n * 2].iter().all(|&x| x == POISON));
    let dv = out[..d_len].chunks_exact(2).map(|c| bf16_to_f32(u16::from_le_bytes([c[0], c[1]]))).collect();
    (dv, untouched, report)
}

/// Checks rows `first..first + want.len()/n` of `got` against `want` (bf16 tolerance).
fn check_rows(got: &[f32], want: &[f32], first: usize, n: usize, what: &str) {
    let got = &got[first * n..first * n + want.len()];
    let scale = want.iter().fold(0f32, |s, x| s.max(x.abs()));
    for (e, (&g, &w)) in got.iter().zip(want).enumerate() {
        let tol = w.abs() * 2f32.powi(-8) + scale * 1e-5;
        assert!((g - w).abs() <= tol, "{what}: D[{},{}] = {g}, expected {w}", first + e / n, e % n);
    }
    assert!(calc_diff(got, want) < 1e-5, "{what}");
}

#[test]
fn grouped_contiguous_kernels_match_the_definition_and_skip_padding() {
    // Group 0: 70 rows (+58 padding), an all-padding block, group 1 empty, group 2: 130 rows
    // (+126 padding): m_sum 512, every tile configuration.
    let co = code_object();
    let (n, k, groups) = (192, 256, 3);
    let mut idx = vec![-1i32; 512];
    idx[..70].fill(0);
    idx[256..386].fill(2);
    let p = GroupedProblem::random(512, groups, n, k, 21);
    let untouched: Vec<bool> = idx.iter().map(|&g| g < 0).collect();
    for tile in CONTIGUOUS_TILES {
        let grid = tile.grid(512, n as u32);
        let args = contiguous_args(512, n, k, groups);
        let (got, untouched_ok, r) = run_grouped(&co, (tile.name, tile.lds_bytes()), &p.b(), &p, &idx, grid, args, &untouched);
        assert!(untouched_ok, "{}: wrote a padding row or past D", tile.name);
        check_rows(&got, &p.reference_rows(0, 0, 70), 0, n, tile.name);
        check_rows(&got, &p.reference_rows(2, 256, 130), 256, n, tile.name);
        // MFMA work only in blocks whose first row names a group.
        let bm = tile.block_m as usize;
        let live_blocks = (0..512).step_by(bm).filter(|&r| idx[r] >= 0).count() as u64;
        let tiles_n = u64::from((n as u32).div_ceil(tile.block_n));
        let per_wave = 4 * u64::from(tile.block_m / 32) * u64::from(tile.block_n / 32) * (k as u64 / 128);
        assert_eq!(r.count(exec::Class::Mfma), live_blocks * tiles_n * 4 * per_wave, "{}", tile.name);
    }
}

#[test]
fn grouped_masked_kernels_match_the_definition_and_skip_masked_rows() {
    // 3 groups of capacity 150: counts 150 (full), 0, 65; every tile configuration.
    let co = code_object();
    let (n, k, groups, m_max) = (192, 256, 3, 150);
    let masked = [150i32, 0, 65];
    let p = GroupedProblem::random(groups * m_max, groups, n, k, 22);
    let untouched: Vec<bool> = (0..groups * m_max).map(|i| i % m_max >= masked[i / m_max] as usize).collect();
    for tile in MASKED_TILES {
        let grid = fp8gemm_device::tile::masked_grid(&tile, groups as u32, m_max as u32, n as u32);
        let args = masked_args(m_max, n, k, groups);
        let (got, untouched_ok, r) = run_grouped(&co, (tile.name, tile.lds_bytes()), &p.b(), &p, &masked, grid, args, &untouched);
        assert!(untouched_ok, "{}: wrote a masked-out row or past D", tile.name);
        check_rows(&got, &p.reference_rows(0, 0, 150), 0, n, tile.name);
        check_rows(&got, &p.reference_rows(2, 2 * m_max, 65), 2 * m_max, n, tile.name);
        let bm = tile.block_m as usize;
        let live_tiles_m: u64 = masked.iter().map(|&c| (c as usize).div_ceil(bm) as u64).sum();
        let tiles_n = u64::from((n as u32).div_ceil(tile.block_n));
        let per_wave = 4 * u64::from(tile.block_m / 32) * u64::from(tile.block_n / 32) * (k as u64 / 128);
        assert_eq!(r.count(exec::Class::Mfma), live_tiles_m * tiles_n * 4 * per_wave, "{}", tile.name);
    }
}

/// Instructions of a loop body by class: (total, MFMA, VALU, LDS read, LDS write, VMEM, waitcnt).
fn loop_mix(co: &CodeObject, name: &str) -> [usize; 7] {
    let body = main_loop(co, name);
    let count = |f: &dyn Fn(&str) -> bool| body.iter().filter(|i| f(i.op.name())).count();
    [
        body.len(),
        body.iter().filter(|i| amdgpu_emu::decode::is_mai(i.op)).count(),
        count(&|s| s.starts_with("v_") && !s.starts_with("v_mfma")),
        count(&|s| s.starts_with("ds_read")),
        count(&|s| s.starts_with("ds_write")),
        count(&|s| s.starts_with("buffer_")),
        count(&|s| s == "s_waitcnt"),
    ]
}

#[test]
fn grouped_kernels_share_the_dense_main_loop() {
    // The grouped kernels run the dense tile main loop (dense.rs `tile_gemm`): same MFMA, LDS and
    // global-load instructions per 128-K block as the dense kernel of the same tile, no spills,
    // no scratch, same waves per SIMD.
    let co = code_object();
    for (i, dense) in DENSE.iter().enumerate() {
        let want = loop_mix(&co, dense.name);
        eprintln!("{}: main loop [total, MFMA, VALU, ds_read, ds_write, buffer, waitcnt] = {want:?}", dense.name);
        let dm = &co.kernel(dense.name).unwrap().meta;
        for tile in [CONTIGUOUS_TILES[i], MASKED_TILES[i]] {
            let got = loop_mix(&co, tile.name);
            eprintln!("{}: main loop {got:?}", tile.name);
            assert_eq!((got[1], got[3], got[4], got[5]), (want[1], want[3], want[4], want[5]), "{}", tile.name);
            let m = &co.kernel(tile.name).unwrap().meta;
            assert_eq!((m.vgpr_spill_count, m.sgpr_spill_count, m.private_segment_fixed_size), (0, 0, 0), "{}", tile.name);
            assert_eq!(m.agpr_count, 0, "{}", tile.name);
            assert_eq!(waves_per_simd(m.vgpr_count), waves_per_simd(dm.vgpr_count), "{}: vgpr {} vs {}", tile.name, m.vgpr_count, dm.vgpr_count);
        }
    }
}

// ---- m-grouped bs kernels (B pre-shuffled straight to registers), launched directly ------------

fn contiguous_args(m_sum: u32, n: usize, k: usize, groups: usize) -> impl Fn(u64, u64, u64, u64, u64, u64) -> Vec<u8> {
    move |a, b, sfa, sfb, d, m_indices| {
        MGroupedContiguousArgs {
            a: GlobalPtr::new(a),
            b: GlobalPtr::new(b),
            sfa: GlobalPtr::new(sfa),
            sfb: GlobalPtr::new(sfb),
            d: GlobalPtr::new(d),
            m_indices: GlobalPtr::new(m_indices),
            m_sum,
            n: n as u32,
            k: k as u32,
            groups: groups as u32,
        }
        .as_bytes()
        .to_vec()
    }
}

fn masked_args(m_max: usize, n: usize, k: usize, groups: usize) -> impl Fn(u64, u64, u64, u64, u64, u64) -> Vec<u8> {
    move |a, b, sfa, sfb, d, masked_m| {
        MGroupedMaskedArgs {
            a: GlobalPtr::new(a),
            b: GlobalPtr::new(b),
            sfa: GlobalPtr::new(sfa),
            sfb: GlobalPtr::new(sfb),
            d: GlobalPtr::new(d),
            masked_m: GlobalPtr::new(masked_m),
            m_max: m_max as u32,
            n: n as u32,
            k: k as u32,
            groups: groups as u32,
            order: fp8gemm_device::args::MASKED_ORDER_RUNS,
            reserved: 0,
        }
        .as_bytes()
        .to_vec()
    }
}

/// MFMAs of one bs tile over `nkb` blocks: 4 waves × `block_m/16` A fragments × 2 B fragments
/// × 2 reads × 2 k-steps per block.
fn bs_tile_mfmas(t: &BsTile, nkb: u64) -> u64 {
    4 * u64::from(t.block_m / 16) * 8 * nkb
}

#[test]
fn grouped_contiguous_bs_kernels_match_the_definition_and_skip_padding() {
    // As the logical-B test: group 0 70 rows (+58 padding), an all-padding block, group 1
    // empty, group 2 130 rows; n = 200 (a last 16-row fragment padded, and a 128-column tile
    // past n), three K blocks (a 4-block scale window cut short).
    let co = code_object();
    let (n, k, groups) = (200, 384, 3);
    let mut idx = vec![-1i32; 512];
    idx[..70].fill(0);
    idx[256..386].fill(2);
    let p = GroupedProblem::random(512, groups, n, k, 23);
    let b = p.b_preshuffled();
    let untouched: Vec<bool> = idx.iter().map(|&g| g < 0).collect();
    for tile in CONTIGUOUS_BS_TILES {
        let grid = tile.grid(512, n as u32);
        let (got, untouched_ok, r) = run_grouped(&co, (tile.name, tile.lds_bytes()), &b, &p, &idx, grid, contiguous_args(512, n, k, groups), &untouched);
        assert!(untouched_ok, "{}: wrote a padding row or past D", tile.name);
        check_rows(&got, &p.reference_rows(0, 0, 70), 0, n, tile.name);
        check_rows(&got, &p.reference_rows(2, 256, 130), 256, n, tile.name);
        let bm = tile.block_m as usize;
        let live_blocks = (0..512).step_by(bm).filter(|&r| idx[r] >= 0).count() as u64;
        let tiles_n = u64::from((n as u32).div_ceil(tile.block_n));
        assert_eq!(r.count(exec::Class::Mfma), live_blocks * tiles_n * bs_tile_mfmas(&tile, 3), "{}", tile.name);
    }
}

#[test]
fn grouped_masked_bs_kernels_match_the_definition_and_skip_masked_rows() {
    // 3 groups of capacity 150: counts 150 (= m_max), 0, 65; n = 200, five K blocks.
    let co = code_object();
    let (n, k, groups, m_max) = (200, 640, 3, 150);
    let masked = [150i32, 0, 65];
    let p = GroupedProblem::random(groups * m_max, groups, n, k, 24);
    let b = p.b_preshuffled();
    let untouched: Vec<bool> = (0..groups * m_max).map(|i| i % m_max >= masked[i / m_max] as usize).collect();
    for tile in MASKED_BS_TILES {
        let grid = groups as u32 * tile.grid(m_max as u32, n as u32);
        let (got, untouched_ok, r) = run_grouped(&co, (tile.name, tile.lds_bytes()), &b, &p, &masked, grid, masked_args(m_max, n, k, groups), &untouched);
        assert!(untouched_ok, "{}: wrote a masked-out row or past D", tile.name);
        check_rows(&got, &p.reference_rows(0, 0, 150), 0, n, tile.name);
        check_rows(&got, &p.reference_rows(2, 2 * m_max, 65), 2 * m_max, n, tile.name);
        let bm = tile.block_m as usize;
        let live_tiles_m: u64 = masked.iter().map(|&c| (c as usize).div_ceil(bm) as u64).sum();
        let tiles_n = u64::from((n as u32).div_ceil(tile.block_n));
        assert_eq!(r.count(exec::Class::Mfma), live_tiles_m * tiles_n * bs_tile_mfmas(&tile, 5), "{}", tile.name);
    }
}

#[test]
fn grouped_bs_kernels_meet_the_resource_goals() {
    // No spills, no scratch, all LDS dynamic, the launch bound; the same waves per SIMD as the
    // dense bs kernel of the same height (unified VGPR + AGPR count, `fp8gemm info`'s vgpr
    // column), on both architectures.
    for (arch, bytes) in [("gfx942", fp8gemm::codeobj::GFX942), ("gfx950", fp8gemm::codeobj::GFX950)] {
        let co = CodeObject::parse(bytes).expect("code object parses");
        for tile in CONTIGUOUS_BS_TILES.iter().chain(&MASKED_BS_TILES) {
            let what = format!("{arch} {}", tile.name);
            let m = &co.kernel(tile.name).unwrap_or_else(|| panic!("{what} missing")).meta;
            common_resource_goals(&what, m);
            let dense = DENSE_BS_TILES.iter().find(|d| d.block_m == tile.block_m).expect("a dense bs tile of the same height");
            let dm = &co.kernel(dense.name).unwrap().meta;
            assert_eq!(waves_per_simd(m.vgpr_count), waves_per_simd(dm.vgpr_count), "{what}: vgpr {} vs {} ({})", m.vgpr_count, dm.vgpr_count, dense.name);
            eprintln!("{what}: vgpr {} (agpr {}) sgpr {}", m.vgpr_count, m.agpr_count, m.sgpr_count);
        }
    }
}

#[test]
fn grouped_bs_pipe_kernels_meet_the_resource_goals() {
    // `fp8gemm_device::grouped_pipe`: no spills, no scratch, all LDS dynamic, launch bound 256;
    // at least the waves per SIMD of the dense pipelined kernel of the same shape, two for the
    // 64-row tiles (two workgroups per CU, as the dense 64-row pipelined kernel), its LDS, and
    // one 4-block trip of 4·FM·FN 16x16x32 FP8 MFMAs per block in the loop.
    use fp8gemm_device::grouped_pipe::{CONTIGUOUS_BS_PIPE_TILES, MASKED_BS_PIPE_TILES};
    use fp8gemm_device::tile::DENSE_BS_PIPE_TILES;
    for (arch, bytes) in [("gfx942", fp8gemm::codeobj::GFX942), ("gfx950", fp8gemm::codeobj::GFX950)] {
        let co = CodeObject::parse(bytes).expect("code object parses");
        for tile in CONTIGUOUS_BS_PIPE_TILES.iter().chain(&MASKED_BS_PIPE_TILES) {
            let what = format!("{arch} {}", tile.name);
            let m = &co.kernel(tile.name).unwrap_or_else(|| panic!("{what} missing")).meta;
            let (regs, waves) = common_resource_goals(&what, m);
            let dense = DENSE_BS_PIPE_TILES
                .iter()
                .chain([&fp8gemm_device::tile::DENSE_BS_PIPE_BM32_BN64])
                .find(|d| (d.block_m, d.block_n) == (tile.block_m, tile.block_n))
                .expect("a dense pipelined tile of the same shape");
            let dm = &co.kernel(dense.name).unwrap().meta;
            assert!(waves >= waves_per_simd(dm.vgpr_count), "{what}: vgpr {regs} vs {} ({})", dm.vgpr_count, dense.name);
            if tile.block_m == 64 {
                assert_eq!(waves, 2, "{what}: {regs} registers");
            }
            assert_eq!(tile.lds_bytes(), dense.lds_bytes(), "{what}: LDS");
            if arch == "gfx942" {
                let body = main_loop(&co, tile.name);
                let mfma = body.iter().filter(|i| amdgpu_emu::decode::is_mai(i.op)).count() as u32;
                let fp8 = body.iter().filter(|i| i.op.name() == "v_mfma_f32_16x16x32_fp8_fp8").count() as u32;
                assert_eq!(mfma, fp8, "{what}");
                // 4 k-steps per block for each of the wave's (block_m/16) × (block_n/64) fragments.
                let per_block = 4 * (tile.block_m / 16) * (tile.block_n / 64);
                assert!(mfma >= 4 * per_block && mfma.is_multiple_of(per_block), "{what}: {mfma} MFMAs in the loop");
            }
            eprintln!("{what}: vgpr {} (agpr {}) sgpr {}", m.vgpr_count, m.agpr_count, m.sgpr_count);
        }
    }
}

#[test]
fn bs_kernels_meet_the_resource_goals() {
    // The pre-shuffled-B kernels (fp8gemm_device::mainloop_bs), their split-K and m-grouped twins: no
    // spills, no scratch, all LDS
    // dynamic, launch bound 256; the 32- and 64-row tiles keep at least as many waves per SIMD
    // as their LDS allows workgroups per CU (3 and 2; the 128-row tile runs 1 wave per SIMD, as
    // the peers' 128 × 128 kernel does); 16x16x32 FP8 MFMAs only, 4 blocks per main-loop trip
    // (8·FM MFMAs per block), 4 B loads per block per wave (1 KiB each), one barrier per block.
    for (arch, bytes) in [("gfx942", fp8gemm::codeobj::GFX942), ("gfx950", fp8gemm::codeobj::GFX950)] {
        let co = CodeObject::parse(bytes).expect("code object parses");
        use fp8gemm_device::tile::{CONTIGUOUS_BS_TILES, DENSE_BS_PIPE_TILES, DENSE_BS_TILES, DENSE_SPLITK_BS_TILES, MASKED_BS_TILES, MASKED_SPLITK_BS_TILES};
        let tiles = DENSE_BS_TILES
            .into_iter()
            .chain(DENSE_BS_PIPE_TILES)
            .chain(DENSE_SPLITK_BS_TILES)
            .chain(CONTIGUOUS_BS_TILES)
            .chain(MASKED_BS_TILES)
            .chain(MASKED_SPLITK_BS_TILES);
        for tile in tiles {
            let k = co.kernel(tile.name).unwrap_or_else(|| panic!("{arch}: {} missing", tile.name));
            let what = format!("{arch} {}", tile.name);
            // The unified VGPR + AGPR count alone sets the waves per SIMD.
            let (regs, waves) = common_resource_goals(&what, &k.meta);
            // The pipelined kernels: the 48- and 64-row ones two workgroups per CU (the loop's
            // one-exit shape, `mainloop_bs` "Loop shape"), the taller ones one.
            let want_waves = match tile.block_m {
                48 | 64 if tile.name.starts_with("fp8_gemm_nt_bs_pipe_") => 2,
                // The 32-row split-K kernel runs the pipelined loop with B two blocks ahead
                // (170 registers): two per CU, against three for the phase loop, which the
                // decode grids it serves (one workgroup per CU or fewer) do not use, and
                // modelled faster where they do (`fp8gemm_device::mainloop_bs`, "Split-K on
                // the pipelined loop").
                32 if tile.name == "fp8_gemm_nt_splitk_bs_bm32_bn128" => 2,
                _ if tile.name.starts_with("fp8_gemm_nt_bs_pipe_") => 1,
                32 => 3,
                64 => 2,
                _ => 1,
            };
            assert!(waves >= want_waves, "{what}: {regs} registers → {waves} waves/SIMD < {want_waves}");
            assert!(tile.lds_bytes() * want_waves <= 64 * 1024, "{what}: LDS");
            if arch == "gfx942" {
                let body = main_loop_without_tail_jumps(&co, tile.name);
                let count = |name: &str| body.iter().filter(|i| i.op.name() == name).count() as u32;
                let mfma = body.iter().filter(|i| amdgpu_emu::decode::is_mai(i.op)).count() as u32;
                assert_eq!(mfma, count("v_mfma_f32_16x16x32_fp8_fp8"), "{what}");
                let fm = tile.block_m / 16;
                assert_eq!(mfma, 4 * 8 * fm, "{what}: MFMAs per main-loop trip (4 blocks)");
                // One barrier per block. (The decoded range, earliest back-branch target to the
                // last back edge, may take in the prologue's barrier and loads where LLVM lays
                // the loop's exits out before it.)
                if !tile.name.starts_with("fp8_gemm_nt_bs_") {
                    // The decoded range of the split-K and grouped twins also takes in code
                    // around the loop (prologue, reduction); their MFMA count above is the loop's.
                    continue;
                }
                let barriers = count("s_barrier");
                assert!((4..=5).contains(&barriers), "{what}: {barriers} barriers per trip of 4 blocks");
                // B: 4 per block; A: FM/2 per block.
                let loads = count("buffer_load_dwordx4");
                assert!(loads >= 4 * (4 + fm / 2) && loads <= 4 * (4 + fm / 2) + 4 + 3 * fm / 2, "{what}: {loads} 16-byte loads per trip");
            }
        }
    }
}

#[test]
fn bs_narrow_kernels_meet_the_resource_goals() {
    // The 32 × 64 kernels (the pipelined loop with one B fragment per wave, data-parallel and
    // split-K): no spills, no scratch, all LDS dynamic, launch bound 256; registers for four
    // workgroups per CU; per 4-block trip 4 × 8 MFMAs (16x16x32 FP8: 2 A fragments × 1 B
    // fragment × 4 K steps per block). The kernels with one barrier per two blocks (the
    // data-parallel default and the split-K kernel): four A stages (18 KiB, three workgroups
    // per CU by LDS) and 2 barriers per trip in the data-parallel loop; the data-parallel
    // kernel with one barrier per block: two stages (10 KiB, four per CU) and 4 barriers per
    // trip; both data-parallel loops 2 B loads (1 KiB each) + 1 A load per block.
    use fp8gemm_device::tile::{DENSE_BS_PIPE_B1_BM32_BN64, DENSE_BS_PIPE_BM32_BN64, DENSE_SPLITK_BS_BM32_BN64, bs_narrow_lds_bytes, bs_pipe_lds_bytes};
    for (arch, bytes) in [("gfx942", fp8gemm::codeobj::GFX942), ("gfx950", fp8gemm::codeobj::GFX950)] {
        let co = CodeObject::parse(bytes).expect("code object parses");
        for tile in [DENSE_BS_PIPE_BM32_BN64, DENSE_BS_PIPE_B1_BM32_BN64, DENSE_SPLITK_BS_BM32_BN64] {
            let k = co.kernel(tile.name).unwrap_or_else(|| panic!("{arch}: {} missing", tile.name));
            let what = format!("{arch} {}", tile.name);
            let (regs, waves) = common_resource_goals(&what, &k.meta);
            assert!(waves >= 4, "{what}: {regs} registers → {waves} waves/SIMD < 4");
            assert_eq!((tile.block_m, tile.block_n), (32, 64), "{what}");
            let one_per_block = tile.name == DENSE_BS_PIPE_B1_BM32_BN64.name;
            let (stages, per_cu, barriers) = if one_per_block { (2, 4, 4..=5) } else { (4, 3, 2..=3) };
            assert_eq!(tile.lds_stages, stages, "{what}: A stages");
            assert_eq!(tile.lds_bytes(), bs_narrow_lds_bytes(stages), "{what}: LDS");
            assert_eq!(bs_narrow_lds_bytes(2), bs_pipe_lds_bytes(32), "the two-stage narrow LDS is the 32-row pipelined loop's");
            let by_lds = 64 * 1024 / tile.lds_bytes();
            assert!(if one_per_block { by_lds >= per_cu } else { by_lds == per_cu }, "{what}: {by_lds} workgroups per CU by LDS, expected {per_cu}");
            if arch == "gfx942" {
                let body = main_loop(&co, tile.name);
                let count = |name: &str| body.iter().filter(|i| i.op.name() == name).count() as u32;
                let mfma = body.iter().filter(|i| amdgpu_emu::decode::is_mai(i.op)).count() as u32;
                assert_eq!((mfma, count("v_mfma_f32_16x16x32_fp8_fp8")), (32, 32), "{what}: MFMAs per trip of 4 blocks");
                if tile.name != DENSE_SPLITK_BS_BM32_BN64.name {
                    let n = count("s_barrier");
                    assert!(barriers.contains(&n), "{what}: {n} barriers per trip of 4 blocks, expected {barriers:?}");
                    let loads = count("buffer_load_dwordx4");
                    assert!((12..=16).contains(&loads), "{what}: {loads} 16-byte loads per trip");
                }
            }
            eprintln!("{what}: vgpr {regs} (agpr {}) sgpr {}", k.meta.agpr_count, k.meta.sgpr_count);
        }
    }
}

#[test]
fn bs_pipe_streamk_kernels_meet_the_resource_goals() {
    // The stream-K kernels on the pipelined bs loop (`fp8gemm_device::streamk` over
    // `tile_gemm_bs_pipe`: five inlined copies of the loop, the partial store and the
    // reduction): no spills, no scratch, all LDS dynamic, launch bound 256, the pipelined tile's
    // LDS, and two workgroups per CU (the host's `BS_PIPE_SK_SLOTS`: the 48-row data-parallel
    // kernel's occupancy, and the 64-row one's); every main-loop copy's MFMAs unchanged (16x16x32 FP8, a
    // multiple of one 4-block trip of 8·FM per block, at least two copies decoded).
    for (arch, bytes) in [("gfx942", fp8gemm::codeobj::GFX942), ("gfx950", fp8gemm::codeobj::GFX950)] {
        let co = CodeObject::parse(bytes).expect("code object parses");
        for tile in fp8gemm_device::streamk::STREAMK_BS_PIPE_TILES {
            let k = co.kernel(tile.name).unwrap_or_else(|| panic!("{arch}: {} missing", tile.name));
            let what = format!("{arch} {}", tile.name);
            let (regs, waves) = common_resource_goals(&what, &k.meta);
            assert!(waves >= 2, "{what}: {regs} registers → {waves} waves/SIMD < 2");
            assert_eq!(tile.lds_bytes(), fp8gemm_device::tile::bs_pipe_lds_bytes(tile.block_m), "{what}: LDS");
            assert!(2 * tile.lds_bytes() <= 64 * 1024, "{what}: LDS for two workgroups per CU");
            if arch == "gfx942" {
                assert_streamk_loops_are_whole_trips(&co, tile.name, tile.block_m, &what);
            }
            eprintln!("{what}: vgpr {regs} (agpr {}) sgpr {}", k.meta.agpr_count, k.meta.sgpr_count);
        }
    }
}

#[test]
fn bs_streamk_kernels_meet_the_resource_goals() {
    // The bs stream-K kernels (`fp8gemm_device::streamk` over the bs loop: the head's whole
    // tile and per piece a whole and a partial copy of the loop, the partial store and the
    // reduction): no spills, no scratch, all LDS dynamic, launch bound 256, the waves per SIMD
    // of the data-parallel bs kernel of the same height (3 / 2: stream-K costs no occupancy),
    // and every main-loop copy's MFMAs unchanged (16x16x32 FP8, a multiple of one 4-block trip
    // of 8·FM per block, at least two copies in the decoded range).
    for (arch, bytes) in [("gfx942", fp8gemm::codeobj::GFX942), ("gfx950", fp8gemm::codeobj::GFX950)] {
        let co = CodeObject::parse(bytes).expect("code object parses");
        for tile in fp8gemm_device::streamk::STREAMK_BS_TILES {
            let k = co.kernel(tile.name).unwrap_or_else(|| panic!("{arch}: {} missing", tile.name));
            let what = format!("{arch} {}", tile.name);
            let (regs, waves) = common_resource_goals(&what, &k.meta);
            let dense = DENSE_BS_TILES.iter().find(|d| d.block_m == tile.block_m).expect("a dense bs tile of the same height");
            let dense_waves = waves_per_simd(co.kernel(dense.name).unwrap().meta.vgpr_count);
            assert!(waves >= dense_waves, "{what}: {regs} registers → {waves} waves/SIMD < {dense_waves} ({})", dense.name);
            assert_eq!(tile.lds_bytes(), dense.lds_bytes(), "{what}: LDS");
            if arch == "gfx942" {
                assert_streamk_loops_are_whole_trips(&co, tile.name, tile.block_m, &what);
            }
            eprintln!("{what}: vgpr {regs} (agpr {}) sgpr {}", k.meta.agpr_count, k.meta.sgpr_count);
        }
    }
}

#[test]
fn the_128_row_pipelined_bs_kernel_keeps_its_registers_and_its_issue_budget() {
    // fp8gemm_device::mainloop_bs128: 0 spills / 0 scratch (common goals), one wave per SIMD,
    // 36 KiB of LDS; its registers stay well below the 512 of the first attempts (340 with the
    // loop without exits; 488–512 with an exit after every step), and its main loop (one trip =
    // 4 blocks of 64 16x16x32 FP8 MFMAs) has none of the `v_accvgpr_write_b32` copies that
    // the accumulators cost in every block with exits (32 per block), at most one
    // `v_accvgpr_read_b32` per MFMA (the partial sums' promotion) and at most ~4 instructions
    // per MFMA in all (the issue budget: 3 others fit under one MFMA per wave).
    use fp8gemm_device::tile::DENSE_BS_PIPE_BM128;
    for (arch, bytes) in [("gfx942", fp8gemm::codeobj::GFX942), ("gfx950", fp8gemm::codeobj::GFX950)] {
        let co = CodeObject::parse(bytes).expect("code object parses");
        let what = format!("{arch} {}", DENSE_BS_PIPE_BM128.name);
        let k = co.kernel(DENSE_BS_PIPE_BM128.name).unwrap_or_else(|| panic!("{what} missing"));
        let (regs, waves) = common_resource_goals(&what, &k.meta);
        assert!(regs <= 384 && waves == 1, "{what}: {regs} registers ({} AGPRs), {waves} waves/SIMD", k.meta.agpr_count);
        assert_eq!(DENSE_BS_PIPE_BM128.lds_bytes(), fp8gemm_device::tile::bs_pipe_lds_bytes(128), "{what}");
        if arch == "gfx942" {
            let body = main_loop(&co, DENSE_BS_PIPE_BM128.name);
            let count = |name: &str| body.iter().filter(|i| i.op.name() == name).count();
            let mfma = body.iter().filter(|i| amdgpu_emu::decode::is_mai(i.op)).count();
            assert_eq!((mfma, count("v_mfma_f32_16x16x32_fp8_fp8")), (4 * 64, 4 * 64), "{what}: one trip = 4 blocks");
            assert_eq!(count("v_accvgpr_write_b32"), 0, "{what}: accumulator copies through AGPRs in the loop");
            assert!(count("v_accvgpr_read_b32") <= mfma, "{what}: {} AGPR reads", count("v_accvgpr_read_b32"));
            assert_eq!(count("s_barrier"), 4, "{what}: one barrier per block");
            assert!(body.len() <= 4 * mfma + 16, "{what}: {} instructions for {mfma} MFMAs", body.len());
            eprintln!("{what}: {regs} registers ({} AGPRs), {} loop instructions for {mfma} MFMAs", k.meta.agpr_count, body.len());
        }
    }
}

/// The pipelined bs loops keep their loads in flight across the loop's back-edge: no
/// `s_waitcnt vmcnt(0)` inside the loop of any data-parallel pipelined kernel. With LLVM's
/// default structurization of uniform regions the loop's uniform exits were routed through its
/// header and the wait-count pass drained every load there, once per 4-block window (the
/// builder's `-structurizecfg-skip-uniform-regions`, `amdgpu-builder` docs; modelled MI325X
/// 640×2048×7168 35.63 → 33.01 µs).
#[test]
fn bs_pipe_loops_never_drain_the_memory_counter() {
    use amdgpu_emu::decode::Op;
    let co = code_object();
    for tile in fp8gemm_device::tile::DENSE_BS_PIPE_TILES
        .into_iter()
        .chain([fp8gemm_device::tile::DENSE_BS_PIPE_BM32_BN64, fp8gemm_device::tile::DENSE_BS_PIPE_B1_BM32_BN64])
    {
        // The K loop: the backward branch whose span holds the most MFMAs (other backward
        // branches are the loop's exit paths jumping back to shared code).
        let (insts, back) = decode_with_loops(&co, tile.name);
        let span = |(lo, hi): (u64, u64)| insts.iter().filter(move |(pc, _)| (lo..=hi).contains(pc));
        let mfmas = |b: (u64, u64)| span(b).filter(|(_, i)| amdgpu_emu::decode::is_mai(i.op)).count();
        let k_loop = back.iter().copied().max_by_key(|&b| mfmas(b)).expect("at least one loop");
        assert!(mfmas(k_loop) > 0, "{}: the loop holds no MFMA", tile.name);
        let waits: Vec<(u64, u32)> = span(k_loop).filter(|(_, i)| i.op == Op::s_waitcnt).map(|(pc, i)| (*pc, i.imm as u32)).collect();
        // gfx9 `s_waitcnt` simm16: vmcnt = bits 3:0 | bits 15:14 << 4.
        let drains: Vec<String> = waits.iter().filter(|(_, imm)| (imm & 0xf) | ((imm >> 14) & 3) << 4 == 0).map(|(pc, _)| format!("{pc:#x}")).collect();
        assert!(drains.is_empty(), "{}: `s_waitcnt vmcnt(0)` in the K loop at {drains:?} (of {} waits)", tile.name, waits.len());
        assert!(!waits.is_empty(), "{}: a K loop without any wait (did the loop detection find it?)", tile.name);
    }
}

// ---- split-K kernels with divisors the host would never pass -------------------------------

/// A split-K launch whose `FastDiv` fields are not the launch's (the host always builds them
/// with `DenseSplitKArgs::new`) must stay in bounds: a tile-row divisor of the wrong count does
/// no work at all, and a corrupted multiplier gives wrong tiles and splits that the kernel
/// bounds before they address anything (every emulator check on, D's guard untouched).
#[test]
fn splitk_launches_with_foreign_divisors_stay_in_bounds() {
    use fp8gemm_device::args::DenseSplitKArgs;
    use fp8gemm_device::tile::{DENSE_SPLITK_TILES, FastDiv, SPLITK_COUNTER_FLOATS, splitk_workspace_floats};
    use std::num::NonZeroU32;
    let co = code_object();
    let tile = DENSE_SPLITK_TILES[0];
    let (m, n, k, splits) = (96usize, 136usize, 512usize, 3u32);
    let p = Problem::random(m, n, k, 77);
    let nz = |x: u32| NonZeroU32::new(x).unwrap();
    let tiles_m = (m as u32).div_ceil(tile.block_m);
    let tiles = tiles_m * (n as u32).div_ceil(tile.block_n);
    let mut corrupt = FastDiv::new(nz(splits));
    corrupt.magic ^= 0x5a5a_5a5a;
    corrupt.shift2 = 7;
    for (what, split_div, tiles_m_div) in [
        ("tile-row divisor of another count", FastDiv::new(nz(splits)), FastDiv::new(nz(tiles_m + 1))),
        ("corrupted split multiplier", corrupt, FastDiv::new(nz(tiles_m))),
    ] {
        let mem = DeviceMemory::new();
        let put = |bytes: &[u8]| {
            let addr = mem.alloc(bytes.len() as u64).expect("alloc");
            mem.write(addr, bytes).expect("write");
            addr
        };
        let (a, b, sfa, sfb) = (put(&p.a), put(&p.b), put(&to_bytes(&p.sfa)), put(&to_bytes(&p.sfb)));
        let d_len = m * n * 2;
        let d = put(&vec![POISON; d_len + GUARD]);
        let ws_floats = splitk_workspace_floats(tiles, splits, tile.block_m, tile.block_n) as usize;
        let ws = put(&vec![0u8; ws_floats * 4]);
        let mut args = DenseSplitKArgs::new(
            GlobalPtr::new(a),
            GlobalPtr::new(b),
            GlobalPtr::new(sfa),
            GlobalPtr::new(sfb),
            GlobalPtr::new(d),
            GlobalPtr::new(ws),
            m as u32,
            n as u32,
            k as u32,
            k as u32,
            n as u32,
            nz(splits),
            nz(tile.block_m),
        );
        (args.splits, args.tiles_m) = (split_div, tiles_m_div);
        let cfg = LaunchConfig { grid: [tiles * splits, 1, 1], block: [THREADS, 1, 1], dynamic_lds_bytes: tile.lds_bytes(), kernarg: args.as_bytes().to_vec() };
        let report = exec::launch(&co, co.kernel(tile.name).unwrap(), &cfg, &mem, &Checks::all()).unwrap_or_else(|e| panic!("{}, {what}: {e}", tile.name));
        let mut out = vec![0u8; d_len + GUARD];
        mem.read(d, &mut out).expect("read D");
        assert!(out[d_len..].iter().all(|&x| x == POISON), "{what}: wrote past the end of D");
        if what.starts_with("tile-row") {
            assert!(out[..d_len].iter().all(|&x| x == POISON), "{what}: D was written");
            let mut counters = vec![0u8; SPLITK_COUNTER_FLOATS as usize * 4];
            mem.read(ws, &mut counters).expect("read counters");
            assert!(counters.iter().all(|&x| x == 0), "{what}: a counter was touched");
            assert_eq!(report.count(exec::Class::Mfma), 0, "{what}");
        } else {
            // Ids 0, 1, 2 still map to tile 0's three splits (quotient 0 below 128): some work
            // is done, the rest of the grid is bounded out.
            assert!(report.count(exec::Class::Mfma) > 0, "{what}: no workgroup ran");
        }
    }
}
