// SPDX-License-Identifier: GPL-2.0 OR MIT
//! What a wave sees of memory: the GPU virtual address space (through the
//! virtual GPU's page table), the workgroup's LDS and the wave's scratch.

/// A failed access of the GPU address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryFault {
    pub address: u64,
    pub write: bool,
}

/// The GPU virtual address space as the virtual GPU's page table maps it.
/// Accesses are at most 16 bytes and naturally aligned by the interpreter's
/// callers only as the program makes them; an implementation splits at page
/// boundaries itself.
pub trait GlobalMemory {
    fn read(&mut self, address: u64, bytes: &mut [u8]) -> Result<(), MemoryFault>;
    fn write(&mut self, address: u64, bytes: &[u8]) -> Result<(), MemoryFault>;
    /// Whether `len` bytes at `address` can be read (and written, if
    /// `write`) without a fault: the interpreter checks every lane of a
    /// FLAT/GLOBAL or SMEM instruction before the first access, so that a
    /// fault leaves the wave unchanged and the instruction can be retried.
    /// The default (no check) makes the accesses fault where they fault.
    fn probe(&mut self, address: u64, len: usize, write: bool) -> Result<(), MemoryFault> {
        let _ = (address, len, write);
        Ok(())
    }
    /// The shader clock `s_memtime` reads (HIP `clock64()`): a 64-bit
    /// counter that never goes backwards.
    fn shader_clock(&mut self) -> u64;
    /// The constant 100 MHz counter `s_memrealtime` reads (HIP
    /// `wall_clock64()`).
    fn real_time(&mut self) -> u64;
}

/// The apertures flat addresses are checked against (the values
/// `s_getreg`/`src_shared_base` report and ROCr programs into the queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Apertures {
    /// High 32 bits of the LDS (shared) aperture; a flat address whose high
    /// half equals this addresses LDS at its low half.
    pub shared_base_hi: u32,
    /// High 32 bits of the private (scratch) aperture.
    pub private_base_hi: u32,
}

/// Everything outside the wave a step may touch.
pub struct Environment<'a> {
    pub global: &'a mut dyn GlobalMemory,
    /// The workgroup's LDS (group segment).
    pub lds: &'a mut [u8],
    /// The wave's private segment, lane-major: lane L's byte `o` is
    /// `scratch[L * scratch_lane_bytes + o]`.
    pub scratch: &'a mut [u8],
    pub scratch_lane_bytes: u32,
    pub apertures: Apertures,
}

/// Dword 3 bit 23 of a buffer resource (V#): ADD_TID_ENABLE, the swizzled
/// per-lane layout of the private segment buffer.
pub const BUFFER_ADD_TID_ENABLE: u32 = 1 << 23;

/// The private segment buffer V# the dispatcher hands to kernels (user
/// SGPRs 0-3): MUBUF accesses through a resource with ADD_TID_ENABLE set go
/// to the wave's lane-major scratch (`Environment::scratch`), the per-lane
/// offset being `soffset / 64 + offset (+ vaddr)` — the inverse of the
/// hardware's swizzle with index stride 64 and element size 4, which is also
/// what flat addresses in the private aperture carry.
pub const PRIVATE_SEGMENT_BUFFER: [u32; 4] = [0, 0, u32::MAX, BUFFER_ADD_TID_ENABLE];
