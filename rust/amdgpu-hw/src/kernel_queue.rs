// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The HIQ ring: how the driver writes packets into a kernel queue and how
//! the CP reads them back.
//!
//! C: `kq_initialize`'s NOP packet, `kq_acquire_packet_buffer`,
//! `kq_submit_packet` and `kq_rollback_packet` (`kfd_kernel_queue.c`) with
//! 8-byte doorbells (SOC15: the write pointer is a 64-bit dword count, the
//! ring offset is it modulo the ring size).  The reader is the CP's side:
//! packets never straddle the end of the ring (the driver pads with NOPs
//! and starts again at 0), and the padding NOP's count field is all ones
//! (`PM4_COUNT_ZERO`), which the CP takes as a one-dword packet.

use super::generated::kfd_pm4_opcodes::{IT_NOP, PM4_TYPE_3};

/// C: `KFD_KERNEL_QUEUE_SIZE`: the HIQ's ring, bytes.
pub const KERNEL_QUEUE_SIZE: u32 = 2048;

/// C: `PM4_COUNT_ZERO`: bits 30:16 set (the count field all ones).
const PM4_COUNT_ZERO: u32 = ((1 << 15) - 1) << 16;

/// C: `kq->nop_packet`: a type-3 NOP whose count field is all ones, the
/// one-dword filler before a wrap.
pub const NOP_PACKET: u32 = PM4_TYPE_3 << 30 | IT_NOP << 8 | PM4_COUNT_ZERO;

/// Why a packet did not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoSpace;

/// The driver's side of a kernel queue's ring (C: `struct kernel_queue`'s
/// `pending_wptr` / `pending_wptr64` and the submitted `*wptr64_kernel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelRing {
    size_dwords: u32,
    pending_wptr: u32,
    pending_wptr64: u64,
    submitted_wptr64: u64,
}

impl KernelRing {
    /// An empty ring of `size_bytes` (a power of two, at least 16 bytes;
    /// `None` otherwise).
    pub fn new(size_bytes: u32) -> Option<KernelRing> {
        if size_bytes < 16 || !size_bytes.is_power_of_two() {
            return None;
        }
        Some(KernelRing { size_dwords: size_bytes / 4, pending_wptr: 0, pending_wptr64: 0, submitted_wptr64: 0 })
    }

    /// Ring size, dwords.
    pub fn size_dwords(&self) -> u32 {
        self.size_dwords
    }

    /// The write pointer last submitted (dwords since the start, 64-bit).
    pub fn wptr64(&self) -> u64 {
        self.submitted_wptr64
    }

    /// C: `kq_acquire_packet_buffer`: room for `dwords` at the returned
    /// ring index, given the CP's read pointer `rptr` (ring offset,
    /// dwords).  When the packet would reach the end of the ring, the rest
    /// of the ring is filled with [`NOP_PACKET`] in `ring` and the packet
    /// starts at 0.  One dword always stays free (full is `rptr == wptr +
    /// 1`).  `ring` must be `size_dwords` long.
    pub fn acquire(&mut self, ring: &mut [u32], rptr: u32, dwords: u32) -> Result<usize, NoSpace> {
        let size = self.size_dwords;
        let rptr = rptr % size;
        let mut wptr = self.pending_wptr;
        let mut wptr64 = self.pending_wptr64;
        let available = (rptr + size - 1 - wptr) % size;
        if dwords > available {
            return Err(NoSpace);
        }
        if wptr + dwords >= size {
            if dwords >= rptr {
                return Err(NoSpace);
            }
            while wptr > 0 {
                ring[wptr as usize] = NOP_PACKET;
                wptr = (wptr + 1) % size;
                wptr64 += 1;
            }
        }
        self.pending_wptr = wptr + dwords;
        self.pending_wptr64 = wptr64 + u64::from(dwords);
        Ok(wptr as usize)
    }

    /// C: `kq_submit_packet`: the write pointer to store and ring the
    /// doorbell with (after the packet is in memory).
    pub fn submit(&mut self) -> u64 {
        self.submitted_wptr64 = self.pending_wptr64;
        self.submitted_wptr64
    }

    /// C: `kq_rollback_packet`: forget what was acquired since the last
    /// submit.
    pub fn rollback(&mut self) {
        self.pending_wptr64 = self.submitted_wptr64;
        self.pending_wptr = (self.submitted_wptr64 % u64::from(self.size_dwords)) as u32;
    }
}

/// Why the CP could not take the next packet off a ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// The dword at the read pointer is not a type-3 header.
    NotType3,
    /// The packet runs past the end of the ring or past the write pointer.
    Overrun,
}

/// The CP's side: the next packet between `rptr64` and `wptr64` (64-bit
/// dword counts) of `ring`, as `(ring offset, dwords)`: a [`NOP_PACKET`]
/// filler is one dword; `None` when the ring is empty.  The caller advances
/// its read pointer by the dwords and reports it (the MQD's rptr report
/// address).
pub fn next_packet(ring: &[u32], rptr64: u64, wptr64: u64) -> Option<Result<(usize, usize), RingError>> {
    if rptr64 >= wptr64 || ring.is_empty() {
        return None;
    }
    let size = ring.len() as u64;
    let at = (rptr64 % size) as usize;
    let header = ring[at];
    if header == NOP_PACKET {
        return Some(Ok((at, 1)));
    }
    if header >> 30 != PM4_TYPE_3 {
        return Some(Err(RingError::NotType3));
    }
    let len = ((header >> 16) & 0x3fff) as usize + 2;
    if at + len > ring.len() || rptr64 + len as u64 > wptr64 {
        return Some(Err(RingError::Overrun));
    }
    Some(Ok((at, len)))
}

#[cfg(test)]
mod tests;
