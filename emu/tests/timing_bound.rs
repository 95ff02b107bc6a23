//! The throughput lower bound (`amdgpu_emu::timing::bound`) on hand-computed cases (all times
//! are *modelled*), at the machine's clock and bandwidths.

use amdgpu_emu::timing::Machine;
use amdgpu_emu::timing::bound::{Bound, Resources, estimate, occupancy};

const CLK: f64 = Machine::MI300X.clock_hz;
use amdgpu_emu::exec::LaunchReport;
use amdgpu_emu::exec::counters::Kind;

fn res(vgprs: u32, agprs: u32, sgprs: u32, lds: u32, wg: u32) -> Resources {
    Resources { vgprs, agprs, sgprs, lds_bytes: lds, workgroup_size: wg }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-30)
}

#[test]
fn occupancy_from_registers_lds_and_sgprs() {
    let m = Machine::MI300X;
    // 128 unified VGPRs → 4 waves/SIMD (gfx942.md); 4-wave workgroups → 4 per CU.
    let o = occupancy(&res(128, 0, 32, 0, 256), &m);
    assert_eq!((o.waves_per_simd, o.workgroups_per_cu, o.waves_per_workgroup), (4, 4, 4));
    // 84 arch + 84 acc = 168 → 3 waves/SIMD; 48 KiB of LDS → 1 workgroup per CU.
    let o = occupancy(&res(84, 84, 32, 48 * 1024, 256), &m);
    assert_eq!((o.waves_per_simd, o.workgroups_per_cu), (3, 1));
    // 512 → 1 wave/SIMD; 100 SGPRs → roundup 112 → 800/112 = 7 (not limiting).
    let o = occupancy(&res(256, 256, 100, 0, 64), &m);
    assert_eq!((o.waves_per_simd, o.workgroups_per_cu), (1, 4));
    // Few registers: capped at 8 waves/SIMD; 16 KiB LDS → 4 workgroups; 64-thread groups → 32 by waves.
    let o = occupancy(&res(16, 0, 16, 16 * 1024, 64), &m);
    assert_eq!((o.waves_per_simd, o.workgroups_per_cu), (8, 4));
}

/// 608 workgroups of 4 waves, each wave issuing 100 FP8 16x16x32 MFMAs (4 passes): the busiest
/// CU runs 2 workgroups = 8 waves on 4 SIMDs → 2 waves · 100 · 16 cycles = 3200 cycles per SIMD.
#[test]
fn mfma_bound_launch() {
    let mut r = LaunchReport::default();
    let waves = 608 * 4;
    r.counters.kinds[Kind::Mfma as usize] = 100 * waves;
    r.counters.mfma_passes = 4 * 100 * waves;
    r.counters.mfma_flops = 16384 * 100 * waves;
    r.counters.global_read_bytes = 1 << 20;
    r.counters.global_footprint_bytes = 1 << 20;
    let e = estimate(&r, &res(128, 0, 32, 0, 256), [608, 1, 1]);
    let t = 3200.0 / CLK;
    assert_eq!(e.bound_by, Bound::Mfma);
    assert!(close(e.seconds, t), "{e}");
    assert!(close(e.mfma_seconds, t));
    assert_eq!(e.workgroups_per_busiest_cu, 2);
    // TFLOPS: 608·4·100 MFMAs · 16384 FLOP over t.
    assert!(close(e.tflops, 16384.0 * 100.0 * waves as f64 / t / 1e12), "{}", e.tflops);
    // This is the machine's FP8 peak (4096 FLOP/clk/CU · 304 · 2.1 GHz) because every CU is full.
    assert!(close(e.tflops, 4096.0 * 304.0 * CLK / 1e12));
    let text = e.to_string();
    assert!(text.contains("modelled") && text.contains("not measured") && text.contains("bound by MFMA"), "{text}");
}

/// One workgroup of one wave: only one SIMD works, and one CU is busy.
#[test]
fn single_wave_uses_one_simd() {
    let mut r = LaunchReport::default();
    r.counters.mfma_passes = 8 * 10; // ten 32x32x16 MFMAs: 10 · 32 cycles
    r.counters.kinds[Kind::Valu as usize] = 50; // 50 · 4 cycles
    let e = estimate(&r, &res(64, 0, 16, 0, 64), [1, 1, 1]);
    assert!(close(e.mfma_seconds, 320.0 / CLK));
    assert!(close(e.valu_seconds, 200.0 / CLK));
    assert_eq!(e.bound_by, Bound::Mfma);
}

/// LDS: 1000 workgroups, 10 000 bank-model cycles in total (10 per workgroup); the busiest CU
/// runs ⌈1000/304⌉ = 4 workgroups → 40 cycles.
#[test]
fn lds_bound_launch_with_wave_quantization() {
    let mut r = LaunchReport::default();
    r.counters.lds_cycles = 10_000;
    r.counters.lds_conflict_cycles = 2_000;
    let e = estimate(&r, &res(64, 0, 16, 1024, 256), [1000, 1, 1]);
    assert_eq!(e.workgroups_per_busiest_cu, 4);
    assert!(close(e.lds_seconds, 40.0 / CLK), "{e}");
    assert_eq!(e.bound_by, Bound::Lds);
    assert_eq!(e.tflops, 0.0);
}

/// HBM: the distinct footprint over 5.3 TB/s; the moved bytes go through the VMEM pipe.
#[test]
fn hbm_bound_launch_charges_the_footprint() {
    let mut r = LaunchReport::default();
    r.counters.global_read_bytes = 8 << 20;
    r.counters.global_write_bytes = 8 << 20;
    r.counters.global_footprint_bytes = 16 << 20;
    let e = estimate(&r, &res(32, 0, 16, 0, 256), [304, 1, 1]);
    assert!(close(e.hbm_seconds, (16u64 << 20) as f64 / 5.3e12));
    // VMEM: each CU moves 16 MiB / 304 at 64 B/clk.
    assert!(close(e.vmem_seconds, (16u64 << 20) as f64 / 304.0 / 64.0 / CLK));
    assert_eq!(e.bound_by, Bound::Hbm);
    // Without a footprint, all moved bytes are charged.
    r.counters.global_footprint_bytes = 0;
    let e2 = estimate(&r, &res(32, 0, 16, 0, 256), [304, 1, 1]);
    assert!(close(e2.hbm_seconds, e.hbm_seconds));
}
