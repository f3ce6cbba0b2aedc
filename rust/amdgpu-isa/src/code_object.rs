// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Code objects: the 64-byte kernel descriptor (LLVM AMDGPUUsage, "Kernel
//! Descriptor", code object v3+) and a minimal ELF64 reader that finds
//! symbols and maps virtual addresses to file bytes.

/// The fields of a kernel descriptor the dispatcher uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDescriptor {
    pub group_segment_fixed_size: u32,
    pub private_segment_fixed_size: u32,
    pub kernarg_size: u32,
    /// Byte offset of the kernel's first instruction from the descriptor.
    pub kernel_code_entry_byte_offset: i64,
    pub compute_pgm_rsrc3: u32,
    pub compute_pgm_rsrc1: u32,
    pub compute_pgm_rsrc2: u32,
    pub kernel_code_properties: u16,
}

/// Size of a kernel descriptor in bytes.
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

/// Size of a legacy `amd_kernel_code_t` in bytes (the kernel's code
/// follows it in ROCr's blit kernels).
pub const AMD_KERNEL_CODE_SIZE: usize = 256;

/// Whether `b` starts like an `amd_kernel_code_t`: version major 1
/// (offset 0) and machine kind 1, AMDGPU (offset 8). A v3+ descriptor has
/// its group segment size and kernarg size there; one with exactly 1 byte
/// of each does not exist in practice (kernarg sizes are multiples of 4).
pub fn is_amd_kernel_code(b: &[u8]) -> bool {
    u32_at(b, 0) == Some(1) && u16_at(b, 8) == Some(1)
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

impl KernelDescriptor {
    /// Parses the 64 descriptor bytes.
    pub fn parse(b: &[u8]) -> Option<Self> {
        if b.len() < KERNEL_DESCRIPTOR_SIZE {
            return None;
        }
        Some(KernelDescriptor {
            group_segment_fixed_size: u32_at(b, 0)?,
            private_segment_fixed_size: u32_at(b, 4)?,
            kernarg_size: u32_at(b, 8)?,
            kernel_code_entry_byte_offset: u64_at(b, 16)? as i64,
            compute_pgm_rsrc3: u32_at(b, 44)?,
            compute_pgm_rsrc1: u32_at(b, 48)?,
            compute_pgm_rsrc2: u32_at(b, 52)?,
            kernel_code_properties: u16_at(b, 56)?,
        })
    }

    /// Parses a legacy `amd_kernel_code_t` (256 bytes, version 1.x,
    /// machine kind AMDGPU: code object v2, and the blit kernels ROCr
    /// assembles itself, e.g. `kCodeCopyAligned`) into the descriptor
    /// fields it shares with a v3+ kernel descriptor: the entry offset,
    /// COMPUTE_PGM_RSRC1/2 and the low seven code properties sit at the same
    /// offsets (16, 48, 52, 56); the segment sizes move (60 private, 64
    /// group, 72 kernarg). `None` if `b` is not one, or if it enables the
    /// grid workgroup count SGPRs (code properties bits 7-9), which v3+
    /// descriptors (and [`super::dispatch`]) do not have.
    pub fn parse_amd_kernel_code(b: &[u8]) -> Option<Self> {
        if b.len() < AMD_KERNEL_CODE_SIZE || !is_amd_kernel_code(b) {
            return None;
        }
        let properties = u32_at(b, 56)?;
        if properties & (7 << 7) != 0 {
            return None;
        }
        // wavefront_size (log2) at offset 103: 5 is wave32.
        let wave32 = if b[103] == 5 { 1 << 10 } else { 0 };
        Some(KernelDescriptor {
            group_segment_fixed_size: u32_at(b, 64)?,
            private_segment_fixed_size: u32_at(b, 60)?,
            kernarg_size: u64_at(b, 72)?.min(u32::MAX as u64) as u32,
            kernel_code_entry_byte_offset: u64_at(b, 16)? as i64,
            compute_pgm_rsrc3: 0,
            compute_pgm_rsrc1: u32_at(b, 48)?,
            compute_pgm_rsrc2: u32_at(b, 52)?,
            kernel_code_properties: (properties & 0x7f) as u16 | wave32,
        })
    }

    /// Parses the kernel object an AQL dispatch packet points at:
    /// [`KernelDescriptor::parse_amd_kernel_code`] if `b` starts like an
    /// `amd_kernel_code_t`, else [`KernelDescriptor::parse`] (only its first
    /// [`KERNEL_DESCRIPTOR_SIZE`] bytes are read then).
    pub fn parse_kernel_object(b: &[u8]) -> Option<Self> {
        if is_amd_kernel_code(b) {
            Self::parse_amd_kernel_code(b)
        } else {
            Self::parse(b)
        }
    }

    // compute_pgm_rsrc1 fields.
    /// FLOAT_ROUND_MODE_32/16_64 and FLOAT_DENORM_MODE_32/16_64, bits
    /// [19:12], which land in MODE[7:0] at wave launch.
    pub fn initial_mode(&self) -> u32 {
        let round_and_denorm = (self.compute_pgm_rsrc1 >> 12) & 0xff;
        let dx10_clamp = (self.compute_pgm_rsrc1 >> 21) & 1;
        let ieee = (self.compute_pgm_rsrc1 >> 23) & 1;
        round_and_denorm | dx10_clamp << 8 | ieee << 9
    }

    // compute_pgm_rsrc2 fields.
    /// ENABLE_PRIVATE_SEGMENT (the private segment wave offset system SGPR).
    pub fn enable_private_segment(&self) -> bool {
        self.compute_pgm_rsrc2 & 1 != 0
    }
    /// USER_SGPR_COUNT.
    pub fn user_sgpr_count(&self) -> u32 {
        (self.compute_pgm_rsrc2 >> 1) & 31
    }
    /// ENABLE_SGPR_WORKGROUP_ID_X/Y/Z.
    pub fn enable_workgroup_id(&self, dim: u32) -> bool {
        self.compute_pgm_rsrc2 >> (7 + dim) & 1 != 0
    }
    /// ENABLE_SGPR_WORKGROUP_INFO.
    pub fn enable_workgroup_info(&self) -> bool {
        self.compute_pgm_rsrc2 >> 10 & 1 != 0
    }
    /// ENABLE_VGPR_WORKITEM_ID: 0 X, 1 X and Y, 2 X, Y and Z.
    pub fn workitem_id_dims(&self) -> u32 {
        (self.compute_pgm_rsrc2 >> 11) & 3
    }

    // kernel_code_properties bits.
    pub fn enable_private_segment_buffer(&self) -> bool {
        self.kernel_code_properties & 1 != 0
    }
    pub fn enable_dispatch_ptr(&self) -> bool {
        self.kernel_code_properties & 2 != 0
    }
    pub fn enable_queue_ptr(&self) -> bool {
        self.kernel_code_properties & 4 != 0
    }
    pub fn enable_kernarg_segment_ptr(&self) -> bool {
        self.kernel_code_properties & 8 != 0
    }
    pub fn enable_dispatch_id(&self) -> bool {
        self.kernel_code_properties & 16 != 0
    }
    pub fn enable_flat_scratch_init(&self) -> bool {
        self.kernel_code_properties & 32 != 0
    }
    pub fn enable_private_segment_size(&self) -> bool {
        self.kernel_code_properties & 64 != 0
    }
    pub fn wavefront_size32(&self) -> bool {
        self.kernel_code_properties & (1 << 10) != 0
    }
}

/// A loadable segment of an ELF file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    pub file_offset: u64,
    pub file_size: u64,
    pub mem_size: u64,
}

/// A read-only view of an ELF64 little-endian file.
pub struct Elf<'a> {
    bytes: &'a [u8],
}

const PT_LOAD: u32 = 1;
const SHT_SYMTAB: u32 = 2;

impl<'a> Elf<'a> {
    /// Checks the identification: ELF64, little-endian, machine EM_AMDGPU (224).
    pub fn parse(bytes: &'a [u8]) -> Option<Self> {
        if bytes.get(0..4)? != b"\x7fELF" || *bytes.get(4)? != 2 || *bytes.get(5)? != 1 || u16_at(bytes, 18)? != 224 {
            return None;
        }
        Some(Elf { bytes })
    }

    /// The i-th PT_LOAD segment.
    pub fn load_segment(&self, index: usize) -> Option<Segment> {
        let phoff = u64_at(self.bytes, 32)? as usize;
        let phentsize = u16_at(self.bytes, 54)? as usize;
        let phnum = u16_at(self.bytes, 56)? as usize;
        (0..phnum)
            .filter_map(|i| {
                let p = phoff + i * phentsize;
                (u32_at(self.bytes, p)? == PT_LOAD).then(|| -> Option<Segment> {
                    Some(Segment {
                        file_offset: u64_at(self.bytes, p + 8)?,
                        vaddr: u64_at(self.bytes, p + 16)?,
                        file_size: u64_at(self.bytes, p + 32)?,
                        mem_size: u64_at(self.bytes, p + 40)?,
                    })
                })?
            })
            .nth(index)
    }

    /// The file bytes of a segment.
    pub fn segment_bytes(&self, segment: &Segment) -> Option<&'a [u8]> {
        self.bytes.get(segment.file_offset as usize..(segment.file_offset + segment.file_size) as usize)
    }

    /// The value (virtual address) of the symbol named `name` in `.symtab`.
    pub fn symbol(&self, name: &str) -> Option<u64> {
        let shoff = u64_at(self.bytes, 40)? as usize;
        let shentsize = u16_at(self.bytes, 58)? as usize;
        let shnum = u16_at(self.bytes, 60)? as usize;
        for i in 0..shnum {
            let sh = shoff + i * shentsize;
            if u32_at(self.bytes, sh + 4)? != SHT_SYMTAB {
                continue;
            }
            let offset = u64_at(self.bytes, sh + 24)? as usize;
            let size = u64_at(self.bytes, sh + 32)? as usize;
            let link = u32_at(self.bytes, sh + 40)? as usize;
            let entsize = u64_at(self.bytes, sh + 56)? as usize;
            let strtab = shoff + link * shentsize;
            let str_offset = u64_at(self.bytes, strtab + 24)? as usize;
            for s in (offset..offset + size).step_by(entsize.max(1)) {
                let name_offset = str_offset + u32_at(self.bytes, s)? as usize;
                let tail = self.bytes.get(name_offset..)?;
                let end = tail.iter().position(|&c| c == 0)?;
                if &tail[..end] == name.as_bytes() {
                    return u64_at(self.bytes, s + 8);
                }
            }
        }
        None
    }

    /// The file bytes at virtual address `vaddr`, through the PT_LOAD segments.
    pub fn bytes_at(&self, vaddr: u64, len: usize) -> Option<&'a [u8]> {
        let mut i = 0;
        while let Some(seg) = self.load_segment(i) {
            if vaddr >= seg.vaddr && vaddr + len as u64 <= seg.vaddr + seg.file_size {
                let o = (seg.file_offset + vaddr - seg.vaddr) as usize;
                return self.bytes.get(o..o + len);
            }
            i += 1;
        }
        None
    }
}
