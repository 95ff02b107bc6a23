//! The embedded GPU code objects and their per-kernel resource table.
//!
//! `build.rs` compiles the device crate once per architecture (see `amdgpu-builder`) and this
//! module embeds the results. [`inspect`] reads a code object's ELF, `amdhsa.kernels` metadata
//! and kernel descriptors (through `amdgpu_emu::loader`, the same parser the emulator runs) and
//! reports what each kernel costs: registers, spills, scratch, LDS, launch bound and occupancy.

use std::fmt;


/// The gfx942 (MI300X, FP8 = E4M3FNUZ/E5M2FNUZ) code object.
pub static GFX942: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/gfx942.hsaco"));
/// The gfx950 (MI350, FP8 = OCP E4M3FN/E5M2) code object.
pub static GFX950: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/gfx950.hsaco"));

const GFX942_DECLARED: &str = include_str!(concat!(env!("OUT_DIR"), "/gfx942.kernels"));
const GFX950_DECLARED: &str = include_str!(concat!(env!("OUT_DIR"), "/gfx950.kernels"));

/// A GPU architecture with an embedded code object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

