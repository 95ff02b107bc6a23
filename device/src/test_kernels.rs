//! Small kernels that exercise the toolchain, the emulator and the HIP path; not part of the
//! public GEMM API.

use crate::amdgpu_kernel;
use crate::args::{AddOneArgs, RegisterPressureArgs};

/// `out[i] = inp[i] + 1.0` over a 1-D grid of 256-wide workgroups.
#[amdgpu_kernel(workgroup_size = 256)]
pub fn add_one_f32(args: AddOneArgs) {
    use crate::intrinsics::*;
    let i = workgroup_id_x() * 256 + workitem_id_x();
    if i < args.n {
        let i = i as usize;
        // SAFETY: i < n and the host passes buffers of n floats (checked by its launch wrapper).
        unsafe { *args.out.as_mut_ptr().add(i) = *args.inp.as_ptr().add(i) + 1.0 };
    }
}

/// Keeps 48 MFMA accumulators (192 VGPRs) live across a loop: compiled for 1024 work-items it
/// cannot fit without spilling; with its real bound of 256 it must not spill.
///
/// `agprs = false`: with AccVGPRs allowed, LLVM 22 puts the accumulators in AGPRs and then spills
/// 72 registers copying them back for the stores (measured: 512 registers, 284 B scratch); kept
/// in arch VGPRs it needs 250 and no scratch.
#[amdgpu_kernel(workgroup_size = 256, agprs = false)]
pub fn register_pressure(args: RegisterPressureArgs) {
    use crate::intrinsics::*;
    let lane = workitem_id_x() as usize;
    let mut acc = [F32x4::zero(); 48];
    let mut it = 0;
    while it < args.iters as usize {
        let base = (it * 256 + lane) * 2;
        // SAFETY: the host allocates iters * 512 u64 for a and b.
        let (a0, b0, a1, b1) =
            unsafe { (*args.a.as_ptr().add(base), *args.b.as_ptr().add(base), *args.a.as_ptr().add(base + 1), *args.b.as_ptr().add(base + 1)) };
        let mut j = 0;
        while j < 48 {
            let a = if j % 2 == 0 { a0 } else { a1 };
            let b = if j % 3 == 0 { b0 } else { b1 ^ (j as u64) };
            acc[j] = mfma_f32_16x16x32_fp8_fp8(a, b, acc[j]);
            j += 1;
        }
        it += 1;
    }
    let mut j = 0;
    while j < 48 {
        let v = acc[j].to_array();
        let mut r = 0;
        while r < 4 {
            // SAFETY: the host allocates 256 * 48 * 4 floats for out.
            unsafe { *args.out.as_mut_ptr().add((j * 4 + r) * 256 + lane) = v[r] };
            r += 1;
        }
        j += 1;
    }
}
