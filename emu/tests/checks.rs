//! The checking modes find the bugs planted in `tests/data/checks.hsaco` (built from
//! `tests/data/checks.ll`) and stay silent on the corrected twins; the LDS bank-conflict and
//! memory-byte counters match hand-computed values.
// The launch error is returned as is (cold path), as the executor does.
#![allow(clippy::result_large_err)]

use std::path::Path;

use amdgpu_emu::exec::counters::{DsShape, Kind, lds_cost};
use amdgpu_emu::exec::{Checks, LaunchConfig, LaunchError, LaunchReport, launch};
use amdgpu_emu::loader::{CodeObject, Kernel};
use amdgpu_emu::memory::DeviceMemory;

fn fixture() -> CodeObject {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/checks.hsaco");
    CodeObject::parse(&std::fs::read(p).expect("fixture")).expect("parse")
}

/// Explicit args at their metadata offsets; hidden block count / group size from the launch.
fn kernarg(k: &Kernel, explicit: &[&[u8]], grid: [u32; 3], block: [u32; 3]) -> Vec<u8> {
    let mut ka = vec![0u8; k.meta.kernarg_segment_size as usize];
    let mut i = 0;
    for a in &k.meta.args {
        let o = a.offset as usize;
        let dim = |s: &str| (s.as_bytes()[s.len() - 1] - b'x') as usize;
        match a.value_kind.as_str() {
            v if v.starts_with("hidden_block_count_") => ka[o..o + 4].copy_from_slice(&grid[dim(v)].to_le_bytes()),
            v if v.starts_with("hidden_group_size_") => ka[o..o + 2].copy_from_slice(&(block[dim(v)] as u16).to_le_bytes()),
            v if v.starts_with("hidden_") => {}
            _ => {
                ka[o..o + explicit[i].len()].copy_from_slice(explicit[i]);
                i += 1;
            }
        }
    }
    assert_eq!(i, explicit.len());
    ka
}

fn run(name: &str, args: &[&[u8]], block: u32, mem: &DeviceMemory, checks: &Checks) -> Result<LaunchReport, LaunchError> {
    // The inline-assembly LDS kernels (lgkm_*) use 512 bytes of dynamic LDS.
    let dynamic = if name.starts_with("lgkm_") { 512 } else { 0 };
    let co = fixture();
    let k = co.kernel(name).unwrap_or_else(|| panic!("kernel {name}"));
    let grid = [1, 1, 1];
    let cfg = LaunchConfig { grid, block: [block, 1, 1], dynamic_lds_bytes: dynamic, kernarg: kernarg(k, args, grid, [block, 1, 1]) };
    launch(&co, k, &cfg, mem, checks)
}

fn words(mem: &DeviceMemory, p: u64, n: usize) -> Vec<u32> {
    let mut b = vec![0u8; n * 4];
    mem.read(p, &mut b).unwrap();
    b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn upload(mem: &DeviceMemory, w: &[u32]) -> u64 {
    let p = mem.alloc(w.len() as u64 * 4).unwrap();
    let b: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
    mem.write(p, &b).unwrap();
    p
}

/// The pc of the first instruction of `kernel` whose disassembly starts with `prefix`.
fn pc_of(kernel: &str, prefix: &str) -> u64 {
    let co = fixture();
    let k = co.kernel(kernel).unwrap();
    let prog = amdgpu_emu::decode::Program::decode(&co, k).unwrap();
    prog.insts
        .iter()
        .find(|(_, r)| r.as_ref().is_ok_and(|i| amdgpu_emu::disasm::format_inst(i).starts_with(prefix)))
        .map(|(pc, _)| *pc)
        .unwrap_or_else(|| panic!("no `{prefix}` in {kernel}"))
}

fn only(f: impl Fn(&mut Checks)) -> Checks {
    let mut c = Checks::default();
    f(&mut c);
    c
}

#[test]
fn mfma_result_read_too_early_is_reported_with_both_pcs() {
    let mem = DeviceMemory::new();
    let out = mem.alloc(256).unwrap();
    let e = run("mfma_hazard_short", &[&out.to_le_bytes()], 64, &mem, &only(|c| c.mfma_hazard = true)).unwrap_err();
    let mfma = pc_of("mfma_hazard_short", "v_mfma_f32_16x16x32_fp8_fp8");
    // s_nop 5 = 6 wait states between the MFMA and the read; a 4-pass XDL result needs 4 + 3.
    let read = mfma + 8 + 4;
    match &e {
        LaunchError::Check { check, pc, wave, detail, .. } => {
            assert_eq!(*check, "mfma-hazard");
            assert_eq!(*pc, read, "{e}");
            assert_eq!(*wave, 0);
            assert!(detail.contains(&format!("pc {mfma:#x}")) && detail.contains("after 6 wait state(s)") && detail.contains("requires 7"), "{e}");
        }
        other => panic!("expected an mfma-hazard finding, got {other}"),
    }
    assert!(e.to_string().contains("mfma_hazard_short") && e.is_check_finding());
    // Without the mode the same launch runs.
    run("mfma_hazard_short", &[&out.to_le_bytes()], 64, &mem, &Checks::default()).unwrap();
}

#[test]
fn mfma_result_read_after_enough_wait_states_is_clean() {
    let mem = DeviceMemory::new();
    let out = mem.alloc(256).unwrap();
    let r = run("mfma_hazard_ok", &[&out.to_le_bytes()], 64, &mem, &Checks::all()).unwrap();
    assert_eq!(r.counters.count(Kind::Mfma), 1);
    assert_eq!(r.counters.mfma_passes, 4);
    assert_eq!(r.counters.mfma_flops, 2 * 16 * 16 * 32);
    // Zero operands: the result is 0.
    assert_eq!(words(&mem, out, 64), vec![0; 64]);
}

#[test]
fn load_used_before_its_waitcnt_is_reported() {
    let mem = DeviceMemory::new();
    let inp = upload(&mem, &(0..64).map(|i| i * 3 + 1).collect::<Vec<u32>>());
    let out = mem.alloc(256).unwrap();
    let e = run("late_load_no_wait", &[&out.to_le_bytes(), &inp.to_le_bytes()], 64, &mem, &only(|c| c.late_arrival = true)).unwrap_err();
    let load = pc_of("late_load_no_wait", "global_load_dword");
    let use_ = pc_of("late_load_no_wait", "v_add_u32");
    match &e {
        LaunchError::Check { check, pc, detail, .. } => {
            assert_eq!(*check, "late-arrival");
            assert_eq!(*pc, use_);
            assert!(detail.contains(&format!("pc {load:#x}")) && detail.contains("vmcnt") && detail.contains("reads v1"), "{e}");
        }
        other => panic!("expected a late-arrival finding, got {other}"),
    }
    // The corrected kernel is clean under every mode and computes 2 * in[i].
    let r = run("late_load_waited", &[&out.to_le_bytes(), &inp.to_le_bytes()], 64, &mem, &Checks::all()).unwrap();
    assert_eq!(words(&mem, out, 64), (0..64).map(|i| 2 * (i * 3 + 1)).collect::<Vec<u32>>());
    // Global bytes: one dword loaded and one stored per lane.
    assert_eq!(r.counters.global_read_bytes, 64 * 4);
    assert_eq!(r.counters.global_write_bytes, 64 * 4);
}

#[test]
fn lds_race_between_waves_is_reported_with_both_waves() {
    let mem = DeviceMemory::new();
    let out = mem.alloc(512).unwrap();
    let e = run("lds_race", &[&out.to_le_bytes()], 128, &mem, &only(|c| c.racecheck = true)).unwrap_err();
    let write = pc_of("lds_race", "ds_write_b32");
    let read = pc_of("lds_race", "ds_read_b32");
    // The waves issue round-robin, one instruction each: wave 0 writes words 0..63, wave 1 words
    // 64..127, then wave 0 reads words 64..127: word 64 (lane 0, byte 0x100) was written by
    // wave 1 in the same barrier interval.
    match &e {
        LaunchError::Check { check, pc, wave, lane, addr, detail, .. } => {
            assert_eq!(*check, "racecheck");
            assert_eq!((*pc, *wave, *lane, *addr), (read, 0, Some(0), Some(0x100)), "{e}");
            assert!(detail.contains("wave 1") && detail.contains(&format!("pc {write:#x}")) && detail.contains("read-after-write"), "{e}");
        }
        other => panic!("expected a racecheck finding, got {other}"),
    }
    // With the barrier: clean under every mode, out[i] = (i + 64) % 128.
    run("lds_exchange", &[&out.to_le_bytes()], 128, &mem, &Checks::all()).unwrap();
    assert_eq!(words(&mem, out, 128), (0..128).map(|i| (i + 64) % 128).collect::<Vec<u32>>());
}

#[test]
fn read_of_never_written_lds_is_reported() {
    let mem = DeviceMemory::new();
    let out = mem.alloc(256).unwrap();
    let e = run("lds_uninit", &[&out.to_le_bytes()], 64, &mem, &only(|c| c.uninit_lds = true)).unwrap_err();
    let read = pc_of("lds_uninit", "ds_read_b32");
    match &e {
        LaunchError::Check { check, pc, lane, addr, .. } => {
            assert_eq!(*check, "uninit-lds");
            assert_eq!((*pc, *lane, *addr), (read, Some(0), Some(4)), "{e}");
        }
        other => panic!("expected an uninit-lds finding, got {other}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("lds_uninit") && msg.contains("lane 0") && msg.contains("LDS address 0x4"), "{msg}");
}

/// ds_read_b128 at lane·stride (mod 1024): hand-computed cycles per the bank model.
#[test]
fn read128_bank_conflicts_match_hand_computed_cycles() {
    let mem = DeviceMemory::new();
    let out = mem.alloc(256).unwrap();
    // The two ds_write2st64_b32 (words t and t + 64 / t + 128 and t + 192): 8 lanes per phase,
    // both dwords of a lane in the same bank → 2 cycles per phase, 8 phases each: 32 cycles,
    // 16 of them conflicts.
    let (wc, wk) = (32, 16);
    // stride 16: each lane group {0-3,20-23}... covers 32 distinct banks → 8 cycles.
    // stride 0: one address, broadcast → 8 cycles. stride 32: two dwords per bank per phase →
    // 16 cycles. stride 64: four per bank → 32 cycles.
    for (stride, cycles) in [(16u32, 8u64), (0, 8), (32, 16), (64, 32)] {
        let r = run("lds_read128_stride", &[&out.to_le_bytes(), &stride.to_le_bytes()], 64, &mem, &Checks::all()).unwrap();
        assert_eq!(r.counters.lds_cycles, wc + cycles, "stride {stride}");
        assert_eq!(r.counters.lds_conflict_cycles, wk + cycles - 8, "stride {stride}");
        assert_eq!(r.counters.count(Kind::DsRead), 1);
        assert_eq!(r.counters.count(Kind::DsWrite), 2);
        // out[t] = lds word (t·stride mod 1024)/4 + the word 3 after it; the words hold their index.
        let got = words(&mem, out, 64);
        for t in 0..64u32 {
            let w = ((t * stride) & 0x3f0) / 4;
            assert_eq!(got[t as usize], 2 * w + 3, "stride {stride} lane {t}");
        }
    }
}

fn lds_cost_942(shape: &DsShape, addr: &[u32; 64], exec: u64) -> (u64, u64) {
    lds_cost(shape, addr, exec, false)
}

fn shape(bytes: u32, count: u8, reads: bool) -> DsShape {
    DsShape { bytes, offsets: [0, 0], count, reads, writes: !reads }
}

#[test]
fn bank_model_unit_cases() {
    let all = u64::MAX;
    // b32, consecutive dwords: 4 phases of 16 lanes, conflict-free.
    let lin: [u32; 64] = std::array::from_fn(|l| 4 * l as u32);
    assert_eq!(lds_cost_942(&shape(4, 1, true), &lin, all), (4, 0));
    // b32 with a 128-byte stride: all 16 lanes of a phase in bank 0 → 16 cycles per phase.
    let col: [u32; 64] = std::array::from_fn(|l| 128 * l as u32);
    assert_eq!(lds_cost_942(&shape(4, 1, true), &col, all), (64, 60));
    // b32 broadcast: one address.
    assert_eq!(lds_cost_942(&shape(4, 1, true), &[64; 64], all), (4, 0));
    // ds_write_b128 with consecutive 16-byte slots: 8 phases of 8 lanes = 32 banks each.
    let v16: [u32; 64] = std::array::from_fn(|l| 16 * l as u32);
    assert_eq!(lds_cost_942(&shape(16, 1, false), &v16, all), (8, 0));
    // ds_write_b128 at a 64-byte stride: lanes 0..7 of a phase hit banks {0-3, 16-19} four times.
    let v64: [u32; 64] = std::array::from_fn(|l| 64 * l as u32);
    assert_eq!(lds_cost_942(&shape(16, 1, false), &v64, all), (32, 24));
    // ds_read_b128 with 16-byte slots in lane order is conflict-free (groups pair lanes 0-3
    // with 20-23: dwords 0-15 and 80-95).
    assert_eq!(lds_cost_942(&shape(16, 1, true), &v16, all), (8, 0));
    // Only lane 5 active: one phase of one lane.
    assert_eq!(lds_cost_942(&shape(16, 1, true), &v64, 1 << 5), (1, 0));
    // b64, 8 lanes per phase, consecutive: 16 dwords per phase, conflict-free.
    let v8: [u32; 64] = std::array::from_fn(|l| 8 * l as u32);
    assert_eq!(lds_cost_942(&shape(8, 1, true), &v8, all), (8, 0));
    // Nothing active: nothing.
    assert_eq!(lds_cost_942(&shape(4, 1, true), &lin, 0), (0, 0));
}

#[test]
fn bank_model_gfx950_reads() {
    let all = u64::MAX;
    let cdna4 = |bytes: u32, addr: &[u32; 64], exec: u64| lds_cost(&shape(bytes, 1, true), addr, exec, true);
    // ds_read_b128, 16-byte slots in lane order: 4 phases of 16 lanes over 64 banks, each
    // conflict-free (phase 0: lanes 0-3, 12-15, 20-23, 24-27 = dwords 0-15, 48-63, 80-111, banks
    // 0-15, 48-63, 16-47), half the gfx942 cycles.
    let v16: [u32; 64] = std::array::from_fn(|l| 16 * l as u32);
    assert_eq!(cdna4(16, &v16, all), (4, 0));
    assert_eq!(lds_cost_942(&shape(16, 1, true), &v16, all), (8, 0));
    // Lanes 0-3 and 4-7 are in different phases on gfx950: 8 lanes at a 256-byte stride
    // (all in banks 0-3) cost 4 in phase 0 (lanes 0-3) and 4 in phase 2 (lanes 4-7).
    let s256: [u32; 64] = std::array::from_fn(|l| 256 * l as u32);
    assert_eq!(cdna4(16, &s256, 0xff), (8, 6));
    // ds_read_b64 in lane order: 2 phases of 32 lanes, 64 dwords each, conflict-free.
    let v8: [u32; 64] = std::array::from_fn(|l| 8 * l as u32);
    assert_eq!(cdna4(8, &v8, all), (2, 0));
    // ds_read_b64 at a 256-byte stride: each phase's 32 lanes hit banks 0 and 1 with 32
    // distinct dwords each.
    assert_eq!(cdna4(8, &s256, all), (64, 62));
    // A 128-byte stride conflicts on gfx950's 64 banks half as much as a 256-byte one.
    let s128: [u32; 64] = std::array::from_fn(|l| 128 * l as u32);
    assert_eq!(cdna4(8, &s128, all), (32, 30));
    // Writes and 32-bit reads keep the gfx942 phases and 32 banks.
    assert_eq!(lds_cost(&shape(16, 1, false), &v16, all, true), lds_cost_942(&shape(16, 1, false), &v16, all));
    let lin: [u32; 64] = std::array::from_fn(|l| 4 * l as u32);
    assert_eq!(lds_cost(&shape(4, 1, true), &lin, all, true), (4, 0));
    assert_eq!(cdna4(16, &v16, 0), (0, 0));
}

#[test]
fn checks_parse_the_env_syntax() {
    assert_eq!(Checks::parse("all").unwrap(), Checks::all());
    assert_eq!(Checks::parse("default").unwrap(), Checks::default());
    let c = Checks::parse("memcheck, racecheck").unwrap();
    assert!(c.memcheck && c.racecheck && !c.mfma_hazard && !c.late_arrival && !c.uninit_lds);
    let e = Checks::parse("memcheck,bogus").unwrap_err();
    assert!(e.contains("bogus") && e.contains("late-arrival"), "{e}");
}

/// The finding's (check, pc, detail) or a panic naming what ran instead.
fn finding(name: &str, checks: &Checks) -> (&'static str, u64, String) {
    let mem = DeviceMemory::new();
    let out = mem.alloc(256).unwrap();
    match run(name, &[&out.to_le_bytes()], 64, &mem, checks) {
        Err(LaunchError::Check { check, pc, detail, .. }) => (check, pc, detail),
        other => panic!("{name}: expected a finding, got {other:?}"),
    }
}

#[test]
fn mfma_reading_an_mfma_result_as_src_a_too_early_is_reported() {
    let (check, pc, detail) = finding("mfma_srca_hazard", &only(|c| c.mfma_hazard = true));
    let first = pc_of("mfma_srca_hazard", "v_mfma_f32_16x16x32_fp8_fp8 v[0:3]");
    assert_eq!(check, "mfma-hazard");
    assert_eq!(pc, pc_of("mfma_srca_hazard", "v_mfma_f32_16x16x32_fp8_fp8 v[8:11]"));
    assert!(detail.contains("SrcA/B") && detail.contains(&format!("pc {first:#x}")) && detail.contains("after 6") && detail.contains("requires 7"), "{detail}");
}

#[test]
fn back_to_back_accumulation_is_clean() {
    let mem = DeviceMemory::new();
    let out = mem.alloc(256).unwrap();
    let r = run("mfma_chain_ok", &[&out.to_le_bytes()], 64, &mem, &Checks::all()).unwrap();
    assert_eq!(r.counters.count(Kind::Mfma), 2);
}

#[test]
fn overwriting_an_mfma_src_c_too_early_is_reported() {
    let (check, pc, detail) = finding("mfma_srcc_war", &only(|c| c.mfma_hazard = true));
    assert_eq!(check, "mfma-hazard");
    assert_eq!(pc, pc_of("mfma_srcc_war", "v_mov_b32_e32 v8, 1"));
    assert!(detail.contains("SrcC") && detail.contains("after 0") && detail.contains("requires 3"), "{detail}");
}

#[test]
fn lgkmcnt_retires_lds_reads_in_order() {
    let mem = DeviceMemory::new();
    let out = mem.alloc(256).unwrap();
    run("lgkm_partial_first", &[&out.to_le_bytes()], 64, &mem, &Checks::all()).unwrap();
    let (check, pc, detail) = finding("lgkm_partial_second", &only(|c| c.late_arrival = true));
    let second = pc_of("lgkm_partial_second", "ds_read_b32 v3");
    assert_eq!(check, "late-arrival");
    assert_eq!(pc, pc_of("lgkm_partial_second", "v_mov_b32_e32 v5, v3"));
    assert!(detail.contains(&format!("pc {second:#x}")) && detail.contains("lgkmcnt"), "{detail}");
}

/// Brute-force bank model: the lanes of each phase, their dwords, max distinct dwords per bank.
fn reference_cost(shape: &DsShape, addr: &[u32; 64], exec: u64) -> (u64, u64) {
    const G: [[usize; 8]; 4] = [[0, 1, 2, 3, 20, 21, 22, 23], [4, 5, 6, 7, 16, 17, 18, 19], [8, 9, 10, 11, 28, 29, 30, 31], [12, 13, 14, 15, 24, 25, 26, 27]];
    let b128 = shape.bytes >= 12 && shape.count == 1;
    let per = if b128 { 8 } else { (64 / (shape.bytes * u32::from(shape.count))) as usize };
    let groups: Vec<Vec<usize>> = if b128 && shape.reads && !shape.writes && shape.bytes == 16 {
        (0..8).map(|p| G[p % 4].iter().map(|&l| l + 32 * (p / 4)).collect()).collect()
    } else {
        (0..64 / per).map(|p| (p * per..p * per + per).collect()).collect()
    };
    let (mut cycles, mut conflicts) = (0, 0);
    for g in groups {
        let mut dw = std::collections::BTreeSet::new();
        for l in g.into_iter().filter(|&l| exec >> l & 1 != 0) {
            for a in 0..usize::from(shape.count) {
                let base = addr[l] + shape.offsets[a];
                for byte in base..base + shape.bytes {
                    dw.insert(byte / 4);
                }
            }
        }
        if dw.is_empty() {
            continue;
        }
        let worst = (0..32).map(|b| dw.iter().filter(|&&d| d % 32 == b).count()).max().unwrap() as u64;
        cycles += worst;
        conflicts += worst - 1;
    }
    (cycles, conflicts)
}

#[test]
fn bank_model_matches_brute_force_on_random_patterns() {
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as u32
    };
    for case in 0..3000 {
        let (bytes, count) = [(4, 1), (8, 1), (16, 1), (12, 1), (1, 1), (2, 1), (4, 2), (8, 2)][case % 8];
        let reads = case % 3 != 0;
        let offsets = if count == 2 { [0, bytes * (1 + next() % 64)] } else { [(next() % 4) * bytes, 0] };
        let shape = DsShape { bytes, offsets, count, reads, writes: !reads };
        // Aligned or not, sparse strides (bank conflicts) or random, some lanes off.
        let stride = [bytes, 2 * bytes, 64, 128, 0, 1 + next() % 300][next() as usize % 6];
        let jitter = next() % 2 == 0;
        let addr: [u32; 64] = std::array::from_fn(|l| (l as u32 * stride + if jitter { next() % 8 * bytes } else { 0 }) % 32768);
        let exec = if case % 5 == 0 { u64::from(next()) << 32 | u64::from(next()) } else { u64::MAX };
        assert_eq!(lds_cost_942(&shape, &addr, exec), reference_cost(&shape, &addr, exec), "case {case}: {shape:?} stride {stride}");
    }
}
