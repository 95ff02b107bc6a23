//! AMDGPU code objects: the ELF container, the `amdhsa.kernels` metadata note and the 64-byte
//! kernel descriptors (`<kernel>.kd`), as described in LLVM's AMDGPUUsage ("Code Object V5
//! Metadata", "Kernel Descriptor").

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use object::read::elf::{ElfFile64, FileHeader, SectionHeader};
use object::{Object, ObjectSection, ObjectSymbol};
use rmpv::Value;

/// `e_machine` of AMDGPU code objects.
const EM_AMDGPU: u16 = 224;
/// `EF_AMDGPU_MACH` mask and the values this emulator knows.
const EF_AMDGPU_MACH: u32 = 0xff;
const EF_AMDGPU_MACH_GFX942: u32 = 0x04c;
const EF_AMDGPU_MACH_GFX950: u32 = 0x04f;
/// Note type of the msgpack metadata note (`NT_AMDGPU_METADATA`, owner "AMDGPU").
const NT_AMDGPU_METADATA: u32 = 32;

/// Why a code object could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The bytes are not a 64-bit little-endian ELF file.
    #[error("code object is not a valid ELF64 file: {0}")]
    Elf(String),
    /// The ELF file is for another machine.
    #[error("code object e_machine is {found}, expected EM_AMDGPU ({EM_AMDGPU})")]
    NotAmdgpu {
        /// The `e_machine` found.
        found: u16,
    },
    /// The code object targets a GPU this emulator does not model.
    #[error("code object targets {found}, expected amdgcn-amd-amdhsa--gfx942 (or gfx950)")]
    WrongArch {
        /// Description of the target found (e_flags mach or target string).
        found: String,
    },
    /// The metadata note is missing or malformed.
    #[error("code object metadata: {0}")]
    Metadata(String),
    /// A kernel descriptor is missing or malformed.
    #[error("kernel `{kernel}`: {msg}")]
    Descriptor {
        /// The kernel name.
        kernel: String,
        /// What is wrong.
        msg: String,
    },
}

/// One explicit or hidden kernel argument from `.args`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgMeta {
    /// `.name`, if present.
    pub name: Option<String>,
    /// `.offset` in the kernarg segment.
    pub offset: u32,
    /// `.size` in bytes.
    pub size: u32,
    /// `.value_kind` (`by_value`, `global_buffer`, `hidden_block_count_x`, ...).
    pub value_kind: String,
}

/// The `amdhsa.kernels` metadata of one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMeta {
    /// `.args`.
    pub args: Vec<ArgMeta>,
    /// `.kernarg_segment_size`.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align`.
    pub kernarg_segment_align: u32,
    /// `.group_segment_fixed_size` (static LDS bytes).
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size` (scratch bytes per work-item).
    pub private_segment_fixed_size: u32,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: u32,
    /// `.wavefront_size`.
    pub wavefront_size: u32,
    /// `.sgpr_count`.
    pub sgpr_count: u32,
    /// `.vgpr_count`: on gfx90a and later the unified register count, arch VGPRs (rounded up to
    /// 4) plus AGPRs (LLVM AMDGPUUsage, code object metadata; e.g. 9 VGPRs + 32 AGPRs → 44).
    pub vgpr_count: u32,
    /// `.agpr_count`.
    pub agpr_count: u32,
    /// `.sgpr_spill_count`.
    pub sgpr_spill_count: u32,
    /// `.vgpr_spill_count`.
    pub vgpr_spill_count: u32,
}

/// The decoded 64-byte kernel descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelDescriptor {
    /// Static LDS bytes.
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_fixed_size: u32,
    /// Kernarg segment size in bytes.
    pub kernarg_size: u32,
    /// Byte offset of the first instruction from the descriptor's address.
    pub kernel_code_entry_byte_offset: i64,
    /// Raw COMPUTE_PGM_RSRC3.
    pub rsrc3: u32,
    /// Raw COMPUTE_PGM_RSRC1.
    pub rsrc1: u32,
    /// Raw COMPUTE_PGM_RSRC2.
    pub rsrc2: u32,
    /// Raw kernel_code_properties.
    pub kernel_code_properties: u16,
    /// Raw kernarg_preload field (count in bits 6:0, offset in bits 15:7).
    pub kernarg_preload: u16,
    /// VGPRs allocated per work-item (arch + acc, unified, in granules of 8).
    pub vgprs: u32,
    /// SGPRs allocated per wave (granules of 16 on gfx9: the encoded value counts 8s).
    pub sgprs: u32,
    /// First AccVGPR index in the unified register file ((RSRC3.accum_offset + 1) * 4).
    pub accum_offset: u32,
    /// User SGPR count (RSRC2.USER_SGPR_COUNT).
    pub user_sgpr_count: u32,
    /// Setup SGPRs requested in kernel_code_properties, in their fixed order.
    pub user_sgprs: UserSgprs,
    /// Workgroup id x/y/z SGPRs enabled (RSRC2 bits 7, 8, 9).
    pub workgroup_id: [bool; 3],
    /// Workgroup info SGPR enabled (RSRC2 bit 10).
    pub workgroup_info: bool,
    /// Private segment wave offset SGPR enabled (RSRC2 bit 0).
    pub private_segment: bool,
    /// Highest work-item id VGPR enabled: 0 = x only, 1 = x and y, 2 = x, y and z.
    pub workitem_id_vgprs: u32,
    /// FLOAT_ROUND_MODE_32 (RSRC1 13:12).
    pub float_round_mode_32: u8,
    /// FLOAT_ROUND_MODE_16_64 (RSRC1 15:14).
    pub float_round_mode_16_64: u8,
    /// FLOAT_DENORM_MODE_32 (RSRC1 17:16); 3 = keep input and output denormals.
    pub float_denorm_mode_32: u8,
    /// FLOAT_DENORM_MODE_16_64 (RSRC1 19:18).
    pub float_denorm_mode_16_64: u8,
    /// ENABLE_DX10_CLAMP (RSRC1 21).
    pub dx10_clamp: bool,
    /// ENABLE_IEEE_MODE (RSRC1 23).
    pub ieee_mode: bool,
    /// Wavefront size 32 requested (kernel_code_properties bit 10; never on gfx9).
    pub wave32: bool,
}

/// User SGPRs enabled by kernel_code_properties (AMDGPUUsage "Initial Kernel Execution State").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserSgprs {
    /// Private segment buffer V# (4 SGPRs).
    pub private_segment_buffer: bool,
    /// Dispatch packet pointer (2 SGPRs).
    pub dispatch_ptr: bool,
    /// Queue pointer (2 SGPRs).
    pub queue_ptr: bool,
    /// Kernarg segment pointer (2 SGPRs).
    pub kernarg_segment_ptr: bool,
    /// Dispatch id (2 SGPRs).
    pub dispatch_id: bool,
    /// Flat scratch init (2 SGPRs).
    pub flat_scratch_init: bool,
    /// Private segment size (1 SGPR).
    pub private_segment_size: bool,
}

impl KernelDescriptor {
    /// Decodes the 64 descriptor bytes.
    pub fn parse(kernel: &str, b: &[u8]) -> Result<KernelDescriptor, LoadError> {
        if b.len() < 64 {
            return Err(LoadError::Descriptor { kernel: kernel.into(), msg: format!("kernel descriptor is {} bytes, expected 64", b.len()) });
        }
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let rsrc3 = u32_at(44);
        let rsrc1 = u32_at(48);
        let rsrc2 = u32_at(52);
        let kcp = u16_at(56);
        let bit = |v: u32, n: u32| (v >> n) & 1 != 0;
        let kcp32 = u32::from(kcp);
        Ok(KernelDescriptor {
            group_segment_fixed_size: u32_at(0),
            private_segment_fixed_size: u32_at(4),
            kernarg_size: u32_at(8),
            kernel_code_entry_byte_offset: i64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
            rsrc3,
            rsrc1,
            rsrc2,
            kernel_code_properties: kcp,
            kernarg_preload: u16_at(58),
            // gfx90a+: VGPR granule is 8 (arch + acc unified).
            vgprs: ((rsrc1 & 0x3f) + 1) * 8,
            sgprs: (((rsrc1 >> 6) & 0xf) + 1) * 8,
            accum_offset: ((rsrc3 & 0x3f) + 1) * 4,
            user_sgpr_count: (rsrc2 >> 1) & 0x1f,
            user_sgprs: UserSgprs {
                private_segment_buffer: bit(kcp32, 0),
                dispatch_ptr: bit(kcp32, 1),
                queue_ptr: bit(kcp32, 2),
                kernarg_segment_ptr: bit(kcp32, 3),
                dispatch_id: bit(kcp32, 4),
                flat_scratch_init: bit(kcp32, 5),
                private_segment_size: bit(kcp32, 6),
            },
            workgroup_id: [bit(rsrc2, 7), bit(rsrc2, 8), bit(rsrc2, 9)],
            workgroup_info: bit(rsrc2, 10),
            private_segment: bit(rsrc2, 0),
            workitem_id_vgprs: (rsrc2 >> 11) & 3,
            float_round_mode_32: ((rsrc1 >> 12) & 3) as u8,
            float_round_mode_16_64: ((rsrc1 >> 14) & 3) as u8,
            float_denorm_mode_32: ((rsrc1 >> 16) & 3) as u8,
            float_denorm_mode_16_64: ((rsrc1 >> 18) & 3) as u8,
            dx10_clamp: bit(rsrc1, 21),
            ieee_mode: bit(rsrc1, 23),
            wave32: bit(kcp32, 10),
        })
    }
}

/// One kernel of a code object.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Kernel (function) name.
    pub name: String,
    /// Its `amdhsa.kernels` metadata.
    pub meta: KernelMeta,
    /// Its kernel descriptor.
    pub descriptor: KernelDescriptor,
    /// Virtual address of the descriptor (`<name>.kd`).
    pub descriptor_address: u64,
    /// Virtual address of the first instruction.
    pub entry: u64,
    /// Size of the kernel's code in bytes (the function symbol's size).
    pub code_size: u64,
}

/// The processor a code object is built for, from the machine byte of its ELF `e_flags`
/// (`EF_AMDGPU_MACH`, LLVM `AMDGPUUsage.rst` "AMDGPU ELF Header": gfx942 = 0x04c, gfx950 =
/// 0x04f). The executor models the device of the code object's target: the two differ (for
/// what this emulator covers) in the instruction set (gfx950 adds the CDNA4 opcodes, see
/// [`crate::decode`]), the LDS size ([`crate::exec::max_lds_bytes`]) and the 8-bit float
/// encodings, which [`Target::fp8_ocp`] gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// gfx942 (CDNA3: MI300X / MI325X).
    Gfx942,
    /// gfx950 (CDNA4: MI350X / MI355X).
    Gfx950,
}

impl Target {
    /// The target from an ELF header's `e_flags`, if it is one this emulator models.
    pub fn from_e_flags(e_flags: u32) -> Option<Target> {
        match e_flags & EF_AMDGPU_MACH {
            EF_AMDGPU_MACH_GFX942 => Some(Target::Gfx942),
            EF_AMDGPU_MACH_GFX950 => Some(Target::Gfx950),
            _ => None,
        }
    }
    /// The processor name (`gfx942`, `gfx950`).
    pub fn name(self) -> &'static str {
        match self {
            Target::Gfx942 => "gfx942",
            Target::Gfx950 => "gfx950",
        }
    }
    /// Whether `fp8` / `bf8` operands (FP8 MFMAs and conversions) are the OCP encodings E4M3FN /
    /// E5M2 (gfx950) rather than E4M3FNUZ / E5M2FNUZ (gfx942). CDNA3 ISA guide: the FP8/BF8
    /// formats of MI300 are the FNUZ variants; CDNA4 ISA guide: MI350 uses the OCP OFP8 formats.
    pub fn fp8_ocp(self) -> bool {
        self == Target::Gfx950
    }
}

/// A parsed AMDGPU code object.
#[derive(Clone, Debug)]
pub struct CodeObject {
    target: Target,
    code_object_version: u32,
    kernels: Vec<Kernel>,
    /// Allocated sections: virtual address → bytes.
    segments: BTreeMap<u64, Vec<u8>>,
    /// Kernels decoded for execution, by entry address (filled by the executor on first launch).
    pub(crate) decoded: DecodeCache,
}

/// Per-code-object cache of decoded kernels (type-erased so the loader does not depend on the
/// executor). Clones share the cache.
#[derive(Clone, Default)]
pub(crate) struct DecodeCache(Arc<Mutex<HashMap<u64, Arc<dyn Any + Send + Sync>>>>);

impl std::fmt::Debug for DecodeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map(|m| m.len()).unwrap_or(0);
        write!(f, "DecodeCache({n} kernels)")
    }
}

impl DecodeCache {
    /// The cached value for `key`, or `make()`'s (cached on success).
    pub(crate) fn get_or_try_insert<T: Any + Send + Sync, E>(&self, key: u64, make: impl FnOnce() -> Result<T, E>) -> Result<Arc<T>, E> {
        if let Some(v) = self.0.lock().unwrap_or_else(|p| p.into_inner()).get(&key)
            && let Ok(t) = v.clone().downcast::<T>()
        {
            return Ok(t);
        }
        let t = Arc::new(make()?);
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(key, t.clone());
        Ok(t)
    }
}

impl CodeObject {
    /// Parses an ELF code object (`.hsaco`).
    pub fn parse(data: &[u8]) -> Result<CodeObject, LoadError> {
        let elf = ElfFile64::<object::LittleEndian>::parse(data).map_err(|e| LoadError::Elf(e.to_string()))?;
        let endian = elf.endian();
        let hdr = elf.elf_header();
        let machine = hdr.e_machine(endian).0;
        if machine != EM_AMDGPU {
            return Err(LoadError::NotAmdgpu { found: machine });
        }
        let e_flags = hdr.e_flags(endian).0;
        let Some(processor) = Target::from_e_flags(e_flags) else {
            return Err(LoadError::WrongArch { found: format!("e_flags mach {:#x}", e_flags & EF_AMDGPU_MACH) });
        };
        let arch = processor.name();

        // Metadata note.
        let mut meta_value = None;
        for sh in elf.elf_section_table().iter() {
            let Ok(Some(mut notes)) = sh.notes(endian, data) else { continue };
            while let Ok(Some(note)) = notes.next() {
                if note.name() == b"AMDGPU" && note.n_type(endian).0 == NT_AMDGPU_METADATA {
                    let mut d = note.desc();
                    let v = rmpv::decode::read_value(&mut d).map_err(|e| LoadError::Metadata(format!("msgpack: {e}")))?;
                    meta_value = Some(v);
                }
            }
        }
        let meta = meta_value.ok_or_else(|| LoadError::Metadata("no NT_AMDGPU_METADATA note".into()))?;
        let target = map_get(&meta, "amdhsa.target").and_then(Value::as_str).unwrap_or("");
        let expected = format!("amdgcn-amd-amdhsa--{arch}");
        if !target.is_empty() && !target.starts_with(&expected) {
            return Err(LoadError::WrongArch { found: format!("amdhsa.target {target:?} (e_flags say {arch})") });
        }
        let version = map_get(&meta, "amdhsa.version").and_then(Value::as_array).and_then(|a| a.first()).and_then(Value::as_u64).unwrap_or(0);
        // amdhsa.version [1, 2] is code object v5, [1, 1] v4, [1, 3] v6.
        let minor = map_get(&meta, "amdhsa.version").and_then(Value::as_array).and_then(|a| a.get(1)).and_then(Value::as_u64).unwrap_or(0);
        let code_object_version = if version == 1 { (minor + 3) as u32 } else { 0 };

        // Allocated sections.
        let mut segments = BTreeMap::new();
        for s in elf.sections() {
            if (s.address() != 0 || s.name() == Ok(".text"))
                && let Ok(bytes) = s.data()
                && !bytes.is_empty()
            {
                segments.insert(s.address(), bytes.to_vec());
            }
        }
        let mut syms: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for s in elf.symbols().chain(elf.dynamic_symbols()) {
            if let Ok(n) = s.name() {
                syms.entry(n.to_string()).or_insert((s.address(), s.size()));
            }
        }

        let list = map_get(&meta, "amdhsa.kernels").and_then(Value::as_array).ok_or_else(|| LoadError::Metadata("amdhsa.kernels missing".into()))?;
        let mut kernels = Vec::new();
        for k in list {
            let name = map_get(k, ".name").and_then(Value::as_str).ok_or_else(|| LoadError::Metadata("kernel without .name".into()))?.to_string();
            let symbol = map_get(k, ".symbol").and_then(Value::as_str).map(str::to_string).unwrap_or(format!("{name}.kd"));
            let num = |key: &str| map_get(k, key).and_then(Value::as_u64).unwrap_or(0) as u32;
            let mut args = Vec::new();
            if let Some(a) = map_get(k, ".args").and_then(Value::as_array) {
                for arg in a {
                    args.push(ArgMeta {
                        name: map_get(arg, ".name").and_then(Value::as_str).map(str::to_string),
                        offset: map_get(arg, ".offset").and_then(Value::as_u64).unwrap_or(0) as u32,
                        size: map_get(arg, ".size").and_then(Value::as_u64).unwrap_or(0) as u32,
                        value_kind: map_get(arg, ".value_kind").and_then(Value::as_str).unwrap_or("").to_string(),
                    });
                }
            }
            let km = KernelMeta {
                args,
                kernarg_segment_size: num(".kernarg_segment_size"),
                kernarg_segment_align: num(".kernarg_segment_align"),
                group_segment_fixed_size: num(".group_segment_fixed_size"),
                private_segment_fixed_size: num(".private_segment_fixed_size"),
                max_flat_workgroup_size: num(".max_flat_workgroup_size"),
                wavefront_size: num(".wavefront_size"),
                sgpr_count: num(".sgpr_count"),
                vgpr_count: num(".vgpr_count"),
                agpr_count: num(".agpr_count"),
                sgpr_spill_count: num(".sgpr_spill_count"),
                vgpr_spill_count: num(".vgpr_spill_count"),
            };
            let &(kd_addr, _) =
                syms.get(&symbol).ok_or_else(|| LoadError::Descriptor { kernel: name.clone(), msg: format!("descriptor symbol `{symbol}` not found") })?;
            let kd_bytes = read_segments(&segments, kd_addr, 64)
                .ok_or_else(|| LoadError::Descriptor { kernel: name.clone(), msg: format!("descriptor at {kd_addr:#x} is not inside an allocated section") })?;
            let descriptor = KernelDescriptor::parse(&name, &kd_bytes)?;
            let entry = kd_addr.wrapping_add_signed(descriptor.kernel_code_entry_byte_offset);
            let code_size = syms.get(&name).map(|&(_, s)| s).unwrap_or(0);
            if read_segments(&segments, entry, 4).is_none() {
                return Err(LoadError::Descriptor { kernel: name, msg: format!("code entry {entry:#x} is not inside an allocated section") });
            }
            if descriptor.wave32 {
                return Err(LoadError::Descriptor { kernel: name, msg: "wave32 kernels are not supported".into() });
            }
            kernels.push(Kernel { name, meta: km, descriptor, descriptor_address: kd_addr, entry, code_size });
        }
        Ok(CodeObject { target: processor, code_object_version, kernels, segments, decoded: DecodeCache::default() })
    }

    /// Target processor name: `gfx942` or `gfx950` ([`CodeObject::target`]'s name).
    pub fn arch(&self) -> &str {
        self.target.name()
    }

    /// Target processor, from the ELF `e_flags` machine byte.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Code object version from `amdhsa.version` (5 for what this project ships).
    pub fn code_object_version(&self) -> u32 {
        self.code_object_version
    }

    /// All kernels.
    pub fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    /// The kernel called `name`.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// The loaded bytes from virtual address `addr` to the end of its section.
    pub fn code_from(&self, addr: u64) -> Option<&[u8]> {
        let (&base, bytes) = self.segments.range(..=addr).next_back()?;
        let off = usize::try_from(addr - base).ok()?;
        bytes.get(off..)
    }
}

fn read_segments(segments: &BTreeMap<u64, Vec<u8>>, addr: u64, len: usize) -> Option<Vec<u8>> {
    let (&base, bytes) = segments.range(..=addr).next_back()?;
    let off = usize::try_from(addr - base).ok()?;
    bytes.get(off..off.checked_add(len)?).map(<[u8]>::to_vec)
}

fn map_get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_map()?.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
}
