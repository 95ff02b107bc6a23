//! Helpers shared by the emulator tests that run the code objects the `fp8gemm` crate embeds
//! (a dev-dependency of this crate, so building the tests builds the code objects).
#![allow(dead_code)] // each test binary uses its own subset

use amdgpu_emu::exec::LaunchConfig;
use amdgpu_emu::loader::CodeObject;
use amdgpu_emu::memory::DeviceMemory;

/// The code object `fp8gemm` embeds for `arch` ("gfx942" or "gfx950"): built by `fp8gemm`'s
/// build script as part of compiling this test (a dev-dependency), so it is always present.
/// Panics with a message naming what is missing if the bytes do not parse or lack the dense
/// GEMM kernels.
pub fn shipped_arch(arch: &str) -> CodeObject {
    let a = fp8gemm::codeobj::Arch::from_name(arch).unwrap_or_else(|| panic!("fp8gemm embeds no code object for `{arch}` (it has gfx942 and gfx950)"));
    let co = CodeObject::parse(a.code_object()).unwrap_or_else(|e| panic!("the {arch} code object embedded in fp8gemm does not load: {e}"));
    assert!(co.kernel("fp8_gemm_nt_bm64_bn64").is_some(), "the {arch} code object embedded in fp8gemm has no kernel fp8_gemm_nt_bm64_bn64");
    co
}

/// The gfx942 code object (see [`shipped_arch`]).
pub fn shipped() -> CodeObject {
    shipped_arch("gfx942")
}

/// Uploads the operands of a dense `fp8_gemm_nt_bm{bm}_bn{bn}` launch into `mem` and returns the
/// launch configuration (kernarg = `DenseGemmArgs` bytes, 1-D grid, the tile's dynamic LDS) and
/// the address of D (`m·n` bf16).
#[allow(clippy::too_many_arguments)] // the shape, tile and four operands are separate inputs
pub fn dense_launch(
    co: &CodeObject,
    mem: &DeviceMemory,
    name: &str,
    (bm, bn): (u32, u32),
    (m, n, k): (u32, u32, u32),
    a: &[u8],
    b: &[u8],
    sfa: &[f32],
    sfb: &[f32],
) -> (LaunchConfig, u64) {
    let kern = co.kernel(name).unwrap_or_else(|| panic!("no kernel {name}"));
    let up = |bytes: &[u8]| {
        let p = mem.alloc(bytes.len() as u64).unwrap();
        mem.write(p, bytes).unwrap();
        p
    };
    let f32b = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (pa, pb, psa, psb) = (up(a), up(b), up(&f32b(sfa)), up(&f32b(sfb)));
    let pd = mem.alloc(u64::from(m * n) * 2).unwrap();
    let mut args = Vec::new();
    for p in [pa, pb, psa, psb, pd] {
        args.extend_from_slice(&p.to_le_bytes());
    }
    // m, n, k, lda = k, ldd = n, reserved
    for v in [m, n, k, k, n, 0] {
        args.extend_from_slice(&v.to_le_bytes());
    }
    assert_eq!(args.len(), kern.meta.kernarg_segment_size as usize);
    let grid = m.div_ceil(bm) * n.div_ceil(bn);
    (LaunchConfig { grid: [grid, 1, 1], block: [256, 1, 1], dynamic_lds_bytes: 2 * (bm + bn) * 64, kernarg: args }, pd)
}

/// Assertions on `hipError_t` results, naming the codes.
pub mod hip_result {
    use std::ffi::CStr;

    use amdgpu_emu::hip::{hipError_t, hipGetErrorName, hipSuccess};

    /// The name of a HIP error code (`hipErrorInvalidValue`, ...).
    pub fn name(code: hipError_t) -> String {
        // SAFETY: hipGetErrorName returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(hipGetErrorName(code)) }.to_string_lossy().into_owned()
    }

    /// Asserts `hipSuccess`.
    #[track_caller]
    pub fn ok(code: hipError_t) {
        assert_eq!(code, hipSuccess, "expected hipSuccess, got {} ({code})", name(code));
    }

    /// Asserts the error `expected`.
    #[track_caller]
    pub fn err(code: hipError_t, expected: hipError_t) {
        assert_eq!(code, expected, "expected {} ({expected}), got {} ({code})", name(expected), name(code));
    }
}
