//! The embedded GPU code objects and their per-kernel resource table.
//!
//! The code objects are the prebuilt ones checked in under `host/kernels/`, or, with the
//! `build-kernels` feature, the device crate compiled from source by `build.rs` (see
//! `amdgpu-builder`); this module embeds whichever the build chose. [`inspect`] reads a code object's ELF, `amdhsa.kernels` metadata
//! and kernel descriptors (through `amdgpu_emu::loader`, the same parser the emulator runs) and
//! reports what each kernel costs: registers, spills, scratch, LDS, launch bound and occupancy.

use std::fmt;

use amdgpu_emu::loader::{CodeObject, Kernel};

/// The gfx942 (MI300X, FP8 = E4M3FNUZ/E5M2FNUZ) code object.
pub static GFX942: &[u8] = include_bytes!(concat!(env!("FP8GEMM_KERNELS_DIR"), "/gfx942.hsaco"));
/// The gfx950 (MI350, FP8 = OCP E4M3FN/E5M2) code object.
pub static GFX950: &[u8] = include_bytes!(concat!(env!("FP8GEMM_KERNELS_DIR"), "/gfx950.hsaco"));

const GFX942_DECLARED: &str = include_str!(concat!(env!("FP8GEMM_KERNELS_DIR"), "/gfx942.kernels"));
const GFX950_DECLARED: &str = include_str!(concat!(env!("FP8GEMM_KERNELS_DIR"), "/gfx950.kernels"));

/// A GPU architecture with an embedded code object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Arch {
    /// CDNA3, MI300X/MI300A/MI325X.
    Gfx942,
    /// CDNA4, MI350/MI355X.
    Gfx950,
}

impl Arch {
    /// Every architecture with an embedded code object.
    pub const ALL: [Arch; 2] = [Arch::Gfx942, Arch::Gfx950];

    /// The LLVM processor name (`gfx942`).
    pub fn name(self) -> &'static str {
        match self {
            Arch::Gfx942 => "gfx942",
            Arch::Gfx950 => "gfx950",
        }
    }

    /// Parses an LLVM processor name, ignoring target features (`gfx942:sramecc+:xnack-`).
    pub fn from_name(name: &str) -> Option<Arch> {
        match name.split(':').next()? {
            "gfx942" => Some(Arch::Gfx942),
            "gfx950" => Some(Arch::Gfx950),
            _ => None,
        }
    }

    /// The embedded code object for this architecture.
    pub fn code_object(self) -> &'static [u8] {
        match self {
            Arch::Gfx942 => GFX942,
            Arch::Gfx950 => GFX950,
        }
    }

    /// What `#[amdgpu_kernel]` declared for each kernel of this architecture's code object.
    pub fn declared_kernels(self) -> Vec<DeclaredKernel> {
        let text = match self {
            Arch::Gfx942 => GFX942_DECLARED,
            Arch::Gfx950 => GFX950_DECLARED,
        };
        text.lines().filter_map(DeclaredKernel::parse).collect()
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel's attributes as declared in device source with `#[amdgpu_kernel]`, recorded by the
/// builder at build time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredKernel {
    /// Kernel symbol.
    pub name: String,
    /// Declared exact workgroup size.
    pub workgroup_size: u32,
    /// Declared minimum waves per SIMD (0 = none).
    pub waves_per_eu: u32,
    /// Whether AccVGPRs were allowed.
    pub agprs: bool,
    /// Size of the argument struct (= explicit kernarg bytes).
    pub kernarg_size: u32,
}

impl DeclaredKernel {
    fn parse(line: &str) -> Option<DeclaredKernel> {
        let mut f = line.split_whitespace();
        Some(DeclaredKernel {
            name: f.next()?.to_string(),
            workgroup_size: f.next()?.parse().ok()?,
            waves_per_eu: f.next()?.parse().ok()?,
            agprs: f.next()? == "1",
            kernarg_size: f.next()?.parse().ok()?,
        })
    }
}

/// Errors reading a code object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodeObjectError {
    /// The ELF, metadata or a descriptor is malformed (the loader says where).
    #[error("code object: {0}")]
    Load(#[from] amdgpu_emu::loader::LoadError),
}

/// What one kernel costs, from its metadata and descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelResources {
    /// Kernel symbol.
    pub name: String,
    /// Architecture of the code object.
    pub arch: String,
    /// Code object version (5 expected).
    pub code_object_version: u32,
    /// Architectural VGPRs + AccVGPRs as allocated (`.vgpr_count`, unified file on gfx90a+).
    pub vgpr: u32,
    /// AccVGPRs (`.agpr_count`).
    pub agpr: u32,
    /// SGPRs (`.sgpr_count`, including VCC and other reserved ones).
    pub sgpr: u32,
    /// VGPRs spilled to scratch.
    pub vgpr_spills: u32,
    /// SGPRs spilled.
    pub sgpr_spills: u32,
    /// Private (scratch) bytes per work-item.
    pub scratch: u32,
    /// Static LDS bytes (`.group_segment_fixed_size`; dynamic LDS is added at launch).
    pub lds: u32,
    /// `.max_flat_workgroup_size`.
    pub max_workgroup_size: u32,
    /// `.kernarg_segment_size`.
    pub kernarg_size: u32,
    /// Waves per SIMD the register usage allows (LDS not counted).
    pub occupancy: u32,
}

/// Waves per SIMD allowed by register usage on gfx90a/gfx942/gfx950: one 512-entry unified
/// VGPR file per SIMD lane, allocated in granules of 8 (`min(8, 512 / roundup(vgpr, 8))`), and
/// 800 SGPRs per SIMD in granules of 16 (source: shared/reference/gfx942.md; LLVM
/// AMDGPUBaseInfo's GFX9 SGPR limits).
pub fn occupancy(vgpr: u32, sgpr: u32) -> u32 {
    let v = vgpr.max(1).div_ceil(8) * 8;
    let s = sgpr.max(1).div_ceil(16) * 16;
    (512 / v).min(800 / s).min(8)
}

/// Workgroups of `workgroup_size` that fit on one CU at `waves_per_simd`, given `lds` bytes each
/// (64 KiB LDS per CU, 4 SIMDs).
pub fn workgroups_per_cu(workgroup_size: u32, waves_per_simd: u32, lds: u32) -> u32 {
    let waves_per_wg = workgroup_size.div_ceil(64).max(1);
    let by_waves = (4 * waves_per_simd) / waves_per_wg;
    let by_lds = 65536u32.checked_div(lds).unwrap_or(u32::MAX);
    by_waves.min(by_lds)
}

/// Reads the resource table of every kernel in a code object.
pub fn inspect(bytes: &[u8]) -> Result<Vec<KernelResources>, CodeObjectError> {
    let co = CodeObject::parse(bytes)?;
    Ok(co.kernels().iter().map(|k| resources(&co, k)).collect())
}

fn resources(co: &CodeObject, k: &Kernel) -> KernelResources {
    let m = &k.meta;
    KernelResources {
        name: k.name.clone(),
        arch: co.arch().to_string(),
        code_object_version: co.code_object_version(),
        vgpr: m.vgpr_count,
        agpr: m.agpr_count,
        sgpr: m.sgpr_count,
        vgpr_spills: m.vgpr_spill_count,
        sgpr_spills: m.sgpr_spill_count,
        scratch: m.private_segment_fixed_size,
        lds: m.group_segment_fixed_size,
        max_workgroup_size: m.max_flat_workgroup_size,
        kernarg_size: m.kernarg_segment_size,
        occupancy: occupancy(m.vgpr_count, m.sgpr_count),
    }
}

/// Formats resource rows as an aligned text table.
pub fn format_table(rows: &[KernelResources]) -> String {
    let mut out = String::new();
    let w = rows.iter().map(|r| r.name.len()).max().unwrap_or(6).max(6);
    out.push_str(&format!(
        "{:<7} {:<w$} {:>5} {:>5} {:>5} {:>7} {:>7} {:>7} {:>6} {:>6} {:>7} {:>9}\n",
        "arch", "kernel", "vgpr", "agpr", "sgpr", "vspill", "sspill", "scratch", "lds", "maxwg", "kernarg", "waves/simd"
    ));
    for r in rows {
        out.push_str(&format!(
            "{:<7} {:<w$} {:>5} {:>5} {:>5} {:>7} {:>7} {:>7} {:>6} {:>6} {:>7} {:>9}\n",
            r.arch, r.name, r.vgpr, r.agpr, r.sgpr, r.vgpr_spills, r.sgpr_spills, r.scratch, r.lds, r.max_workgroup_size, r.kernarg_size, r.occupancy
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_matches_the_documented_table() {
        // gfx942.md: 128 → 4, 168 → 3, 256 → 2, 512 → 1.
        assert_eq!(occupancy(128, 32), 4);
        assert_eq!(occupancy(168, 32), 3);
        assert_eq!(occupancy(256, 32), 2);
        assert_eq!(occupancy(512, 32), 1);
        assert_eq!(occupancy(4, 14), 8);
        // SGPR-bound: 102 SGPRs round to 112 → 800/112 = 7.
        assert_eq!(occupancy(8, 102), 7);
    }

    #[test]
    fn workgroups_per_cu_counts_waves_and_lds() {
        assert_eq!(workgroups_per_cu(256, 2, 0), 2);
        assert_eq!(workgroups_per_cu(256, 8, 32768), 2);
        assert_eq!(workgroups_per_cu(64, 8, 0), 32);
    }

    #[test]
    fn arch_names_round_trip() {
        for a in Arch::ALL {
            assert_eq!(Arch::from_name(a.name()), Some(a));
        }
        assert_eq!(Arch::from_name("gfx942:sramecc+:xnack-"), Some(Arch::Gfx942));
        assert_eq!(Arch::from_name("gfx90a"), None);
    }
}

/// Checks on the code objects this build embedded: what `#[amdgpu_kernel]` declared is what the
/// compiled kernels carry, and nothing spills.
#[cfg(test)]
mod artifact_tests {
    use super::*;

    #[test]
    fn every_kernel_has_its_declared_bound_no_spills_no_scratch_and_v5() {
        for arch in Arch::ALL {
            let declared = arch.declared_kernels();
            let rows = inspect(arch.code_object()).unwrap();
            assert!(!declared.is_empty(), "{arch}: no kernels declared");
            assert_eq!(rows.len(), declared.len(), "{arch}: kernels in the code object vs declared");
            for d in &declared {
                let r = rows.iter().find(|r| r.name == d.name).unwrap_or_else(|| panic!("{arch}: {} missing", d.name));
                assert_eq!(r.arch, arch.name());
                assert_eq!(r.code_object_version, 5, "{arch} {}: code object version", r.name);
                assert_eq!(r.max_workgroup_size, d.workgroup_size, "{arch} {}: .max_flat_workgroup_size", r.name);
                assert_eq!(r.vgpr_spills, 0, "{arch} {}: VGPR spills", r.name);
                assert_eq!(r.sgpr_spills, 0, "{arch} {}: SGPR spills", r.name);
                assert_eq!(r.scratch, 0, "{arch} {}: private segment bytes", r.name);
                assert_eq!(r.kernarg_size, d.kernarg_size, "{arch} {}: kernarg = the argument struct", r.name);
                assert!(r.occupancy >= 1);
            }
        }
    }

    /// The IR-level checks need the build's intermediate files: only with `build-kernels`.
    #[cfg(feature = "build-kernels")]
    mod from_source {
        use super::*;
        use std::path::{Path, PathBuf};

        fn out_dir() -> PathBuf {
            PathBuf::from(env!("OUT_DIR"))
        }

        #[test]
        fn kernels_declared_with_agprs_are_compiled_with_accvgprs_allowed() {
            for arch in Arch::ALL {
                let ir = std::fs::read_to_string(out_dir().join(format!("{arch}.ll"))).unwrap();
                for d in arch.declared_kernels() {
                    let def = ir
                        .lines()
                        .find(|l| l.starts_with("define ") && l.contains(&format!("@{}(", d.name)))
                        .unwrap_or_else(|| panic!("{arch}: no definition of {}", d.name));
                    let group = def.rsplit(" #").next().and_then(|g| g.split_whitespace().next()).unwrap();
                    let attrs = ir.lines().find(|l| l.starts_with(&format!("attributes #{group} = "))).unwrap();
                    assert_eq!(!attrs.contains("\"amdgpu-agpr-alloc\"=\"0\""), d.agprs, "{arch} {}: AccVGPR permission must follow the declaration", d.name);
                    let bound = format!("\"amdgpu-flat-work-group-size\"=\"{0},{0}\"", d.workgroup_size);
                    assert!(attrs.contains(&bound), "{arch} {}: launch bound attribute", d.name);
                }
            }
        }

        fn compile_variant(arch: Arch, bounds: bool, dir: &Path) -> Vec<KernelResources> {
            let raw = std::fs::read_to_string(out_dir().join(format!("{arch}.raw.ll"))).unwrap();
            let processed = amdgpu_builder::process_ir(&raw, bounds).unwrap();
            let ir = dir.join(format!("{arch}-{bounds}.ll"));
            std::fs::write(&ir, processed.ir).unwrap();
            let out = dir.join(format!("{arch}-{bounds}.hsaco"));
            amdgpu_builder::compile_ir(&ir, &[], arch.name(), &out, dir).unwrap();
            inspect(&std::fs::read(&out).unwrap()).unwrap()
        }

        /// The register-heavy test kernel (48 live MFMA accumulators) fits without spilling only
        /// because the builder passes its launch bound to the compiler.
        #[test]
        fn the_launch_bound_is_what_avoids_spills() {
            let dir = std::env::temp_dir().join(format!("fp8gemm-bound-test-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let arch = Arch::Gfx942;
            let find = |rows: &[KernelResources]| rows.iter().find(|r| r.name == "register_pressure").cloned().unwrap();
            let with = find(&compile_variant(arch, true, &dir));
            let without = find(&compile_variant(arch, false, &dir));
            let _ = std::fs::remove_dir_all(&dir);
            assert_eq!(with.max_workgroup_size, 256);
            assert_eq!((with.vgpr_spills, with.scratch), (0, 0), "bounded: {with:?}");
            assert!(with.vgpr > 128, "bounded kernel uses more than the 1024-thread budget: {with:?}");
            assert_eq!(without.max_workgroup_size, 1024);
            assert!(without.vgpr <= 128, "unbounded budget is 128 VGPRs: {without:?}");
            assert!(without.vgpr_spills > 0 && without.scratch > 0, "unbounded kernel must spill: {without:?}");
        }
    }
}
