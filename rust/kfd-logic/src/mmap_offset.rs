// SPDX-License-Identifier: GPL-2.0 OR MIT
//! `/dev/kfd` mmap offsets (upstream `kfd_priv.h`, `KFD_MMAP_*`).
//!
//! The offset user space passes to `mmap()` (the kernel sees it as
//! `vm_pgoff << PAGE_SHIFT`) carries:
//!
//! - bits 63:62, the type: DOORBELL 3, EVENTS 2, RESERVED_MEM 1, MMIO 0;
//! - bits 61:46, the gpu_id (`KFD_GPU_ID_HASH_WIDTH` = 16 bits);
//! - bits 45:0, unused by the mappings upstream still serves (doorbell
//!   offsets from `CREATE_QUEUE` put the queue's doorbell there; the
//!   mapping is always the whole slice).
//!
//! Pure logic, `core` only: included by `src/chardev.rs` with `#[path]`.

/// `KFD_MMAP_TYPE_SHIFT`.
pub const TYPE_SHIFT: u32 = 62;
/// `KFD_MMAP_TYPE_MASK`.
pub const TYPE_MASK: u64 = 0x3 << TYPE_SHIFT;
/// `KFD_MMAP_TYPE_DOORBELL`.
pub const TYPE_DOORBELL: u64 = 0x3 << TYPE_SHIFT;
/// `KFD_MMAP_TYPE_EVENTS`.
pub const TYPE_EVENTS: u64 = 0x2 << TYPE_SHIFT;
/// `KFD_MMAP_TYPE_RESERVED_MEM`.
pub const TYPE_RESERVED_MEM: u64 = 0x1 << TYPE_SHIFT;
/// `KFD_MMAP_TYPE_MMIO`.
pub const TYPE_MMIO: u64 = 0;
/// `KFD_GPU_ID_HASH_WIDTH`.
pub const GPU_ID_WIDTH: u32 = 16;
/// `KFD_MMAP_GPU_ID_SHIFT`.
pub const GPU_ID_SHIFT: u32 = 46;
/// `KFD_MMAP_GPU_ID_MASK`.
pub const GPU_ID_MASK: u64 = ((1 << GPU_ID_WIDTH) - 1) << GPU_ID_SHIFT;

/// What an offset asks to map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The process's doorbell slice of a GPU.
    Doorbell,
    /// The event page (no longer supported upstream: user space allocates it).
    Events,
    /// Reserved memory (no longer supported upstream).
    ReservedMem,
    /// The GPU's MMIO remap (HDP flush) page.
    Mmio,
}

/// `KFD_MMAP_GPU_ID(gpu_id)`: the gpu_id bits of an offset (truncated to
/// the 16-bit hash width, as upstream).
pub const fn gpu_id_bits(gpu_id: u32) -> u64 {
    ((gpu_id as u64) << GPU_ID_SHIFT) & GPU_ID_MASK
}

/// The offset that maps `gpu_id`'s doorbells.
pub const fn doorbell(gpu_id: u32) -> u64 {
    TYPE_DOORBELL | gpu_id_bits(gpu_id)
}

/// The offset that maps `gpu_id`'s MMIO remap page.
pub const fn mmio(gpu_id: u32) -> u64 {
    TYPE_MMIO | gpu_id_bits(gpu_id)
}

/// Bytes of the offset range one (type, gpu_id) owns: every offset
/// [`decode`] maps to it, bits 45:0 being ignored.  rkfd's
/// `kgd2kfd_clear_mappings` zaps this whole range of `doorbell(gpu_id)`
/// and `mmio(gpu_id)` (upstream `amdgpu_amdkfd_clear_kfd_mapping` zaps
/// only the slice's or the page's length, which misses a mapping made at
/// a nonzero low offset, which `kfd_mmap` accepts too).
pub const GPU_RANGE_LEN: u64 = 1 << GPU_ID_SHIFT;

/// Splits an offset into its type and gpu_id (`KFD_MMAP_GET_GPU_ID`).
pub const fn decode(offset: u64) -> (Kind, u32) {
    let gpu_id = ((offset & GPU_ID_MASK) >> GPU_ID_SHIFT) as u32;
    let kind = match offset & TYPE_MASK {
        TYPE_DOORBELL => Kind::Doorbell,
        TYPE_EVENTS => Kind::Events,
        TYPE_RESERVED_MEM => Kind::ReservedMem,
        _ => Kind::Mmio,
    };
    (kind, gpu_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_values() {
        // As kfd_priv.h spells them.
        assert_eq!(TYPE_DOORBELL, 0xc000_0000_0000_0000);
        assert_eq!(TYPE_EVENTS, 0x8000_0000_0000_0000);
        assert_eq!(TYPE_RESERVED_MEM, 0x4000_0000_0000_0000);
        assert_eq!(GPU_ID_MASK, 0x3fff_c000_0000_0000);
    }

    #[test]
    fn round_trip() {
        for id in [0u32, 1, 0x1234, 0xffff] {
            assert_eq!(decode(doorbell(id)), (Kind::Doorbell, id));
            assert_eq!(decode(mmio(id)), (Kind::Mmio, id));
            assert_eq!(decode(TYPE_EVENTS | gpu_id_bits(id)), (Kind::Events, id));
            assert_eq!(decode(TYPE_RESERVED_MEM | gpu_id_bits(id) | 0x1000), (Kind::ReservedMem, id));
            // Low bits (a queue's doorbell within the slice) do not matter.
            assert_eq!(decode(doorbell(id) | 0x1008), (Kind::Doorbell, id));
        }
        // Bits above the hash width are cut off, as upstream.
        assert_eq!(decode(doorbell(0x1_0005)), (Kind::Doorbell, 5));
        assert_eq!(decode(0), (Kind::Mmio, 0));
    }

    #[test]
    fn gpu_range_is_exactly_what_decodes_to_the_gpu() {
        for id in [1u32, 0x1234, 0xfffe] {
            for (start, kind) in [(doorbell(id), Kind::Doorbell), (mmio(id), Kind::Mmio)] {
                assert_eq!(decode(start), (kind, id));
                assert_eq!(decode(start + GPU_RANGE_LEN - 1), (kind, id));
                // The next offset is the next gpu_id's, and the one before
                // the previous one's: the range touches no other GPU.
                assert_eq!(decode(start + GPU_RANGE_LEN), (kind, id + 1));
                assert_eq!(decode(start - 1), (kind, id - 1));
            }
        }
        // One page of the mapping (offset as vm_pgoff << 12) never leaves it.
        assert_eq!(GPU_RANGE_LEN % 4096, 0);
    }
}
