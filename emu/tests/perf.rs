//! Emulation speed: wave-instructions per second of a loop-heavy kernel on one core.

use std::path::Path;
use std::time::Instant;

use amdgpu_emu::exec::{launch, Checks, LaunchConfig};
use amdgpu_emu::loader::CodeObject;
use amdgpu_emu::memory::DeviceMemory;

#[test]
fn wave_instructions_per_second_one_core() {
    let co = CodeObject::parse(&std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/classes.hsaco")).unwrap()).unwrap();
    let k = co.kernel("loop_2d").unwrap();
    let mem = DeviceMemory::new();
    let inp = mem.alloc(4096).unwrap();
    let out = mem.alloc(64 * 64 * 4).unwrap();
    let mut ka = vec![0u8; k.meta.kernarg_segment_size as usize];
    ka[0..8].copy_from_slice(&out.to_le_bytes());
    ka[8..16].copy_from_slice(&inp.to_le_bytes());
    ka[16..20].copy_from_slice(&20_000i32.to_le_bytes());
    // One workgroup of 4 waves: runs on one thread.
    let cfg = LaunchConfig { grid: [1, 1, 1], block: [64, 4, 1], dynamic_lds_bytes: 0, kernarg: ka };
    let t = Instant::now();
    let r = launch(&co, k, &cfg, &mem, &Checks::default()).unwrap();
    let dt = t.elapsed().as_secs_f64();
    let rate = r.instructions as f64 / dt;
    println!("{} wave-instructions in {dt:.3} s = {:.1} M wave-instructions/s (one core)", r.instructions, rate / 1e6);
    assert!(r.instructions > 500_000);
}
