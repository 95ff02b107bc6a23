//! The gfx950 builds of the BpreShuffle FP8 peers (`gfx950/*.co` in the peers directory).
//!
//! Per the peers directory's `README.md` these are the six
//! `fp8gemm_bf16_blockscale_BpreShuffle_<TM>x128` kernels of [`crate::peers`] with byte-identical
//! `.text` and kernel descriptors; only the ELF `e_flags` machine byte differs (0x4F, gfx950).
//! The launch contract is the gfx942 one ([`crate::peers::prepare`]); the difference is the FP8
//! encoding: on gfx950 `v_mfma_f32_16x16x32_fp8_fp8` reads OCP E4M3FN (AITER feeds these kernels
//! `float8_e4m3fn`), which the executor selects from the code object's target
//! ([`crate::loader::Target::fp8_ocp`]). The f64 reference is
//! [`crate::peers::reference_f64_kind`] with [`F8Kind::Fp8Ocp`].
//!
//! [`e4m3fn_to_fnuz`] maps an E4M3FN byte to the E4M3FNUZ byte of the same value, so a problem
//! can be run on both builds with the same values: the two outputs must then be bit-identical
//! (same instructions, same arithmetic), which checks the target selection without any tolerance.

use std::path::Path;

use crate::loader::Target;
use crate::numerics::{F8Kind, f8_to_f32};
use crate::peers::{PeerError, PeerFamily, PeerKernel, load_peer};

/// Subdirectory of the peers directory holding the gfx950 builds.
pub const GFX950_DIR: &str = "gfx950";

/// Loads the gfx950 build of BpreShuffle `tm`x128 from the peers directory `dir`, checking that
/// its `e_flags` select gfx950.
pub fn load_gfx950_peer(dir: &Path, tm: u32) -> Result<PeerKernel, PeerError> {
    if !dir.is_dir() {
        return Err(PeerError::DirMissing { path: dir.to_path_buf(), source_of: "argument".into() });
    }
    let p = load_peer(&dir.join(GFX950_DIR), PeerFamily::BpreShuffle { tm })?;
    if p.code_object.target() != Target::Gfx950 {
        return Err(PeerError::Contract { kernel: p.symbol.clone(), what: format!("{} targets {}, expected gfx950", p.path.display(), p.code_object.arch()) });
    }
    Ok(p)
}

/// The E4M3FNUZ byte whose value equals E4M3FN byte `b`'s, if there is one (not for NaN, ±448…
/// above FNUZ's 240, or −0/+0 sign distinctions FNUZ lacks: +0 and −0 both map to 0x00).
pub fn e4m3fn_to_fnuz(b: u8) -> Option<u8> {
    let v = f8_to_f32(b, F8Kind::Fp8Ocp);
    if v.is_nan() {
        return None;
    }
    if v == 0.0 {
        return Some(0);
    }
    (0..=255u8).find(|&c| c != 0x80 && f8_to_f32(c, F8Kind::Fp8Fnuz) == v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fn_to_fnuz_keeps_values() {
        // 1.0 is 0x38 in E4M3FN (bias 7) and 0x40 in E4M3FNUZ (bias 8).
        assert_eq!(e4m3fn_to_fnuz(0x38), Some(0x40));
        assert_eq!(e4m3fn_to_fnuz(0xB8), Some(0xC0));
        assert_eq!(e4m3fn_to_fnuz(0x7F), None, "NaN");
        assert_eq!(e4m3fn_to_fnuz(0x7E), None, "448 > 240");
        assert_eq!(e4m3fn_to_fnuz(0x80), Some(0x00), "-0");
        let mut mapped = 0;
        for b in 0..=255u8 {
            if let Some(c) = e4m3fn_to_fnuz(b) {
                assert_eq!(f8_to_f32(c, F8Kind::Fp8Fnuz), f8_to_f32(b, F8Kind::Fp8Ocp), "{b:#x} -> {c:#x}");
                mapped += 1;
            }
        }
        // Every finite E4M3FN value up to 240 (exponent fields 0..=14 and 15 with mantissa < 7
        // minus those above 240) has an FNUZ twin.
        assert!(mapped >= 240, "{mapped}");
    }
}
