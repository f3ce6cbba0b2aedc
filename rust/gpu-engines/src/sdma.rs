// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The SDMA engine: SDMA queues (`KFD_IOC_QUEUE_TYPE_SDMA*`).
//!
//! Packets as amdgpu's `vega10_sdma_pkt_open.h` (SDMA 4.x, gfx9),
//! `navi10_sdma_pkt_open.h` (5.x, gfx10.3) and `sdma_v6_0_0_pkt_open.h`
//! (6.0, gfx11) define them and ROCr's `BlitSdma` emits them: header dword
//! `op | sub_op << 8 | extra << 16`.  The packets ROCr and KFDTest use have
//! the same layout on all three versions:
//!
//! | op | packet | dwords |
//! |----|--------|--------|
//! | 0  | NOP (`count` extra dwords in header bits 16-29) | 1 + count |
//! | 1/0 | COPY_LINEAR: count-1 bytes, parameter, src, dst | 7 |
//! | 2/0 | WRITE_LINEAR: dst, count-1 dwords, data | 4 + count + 1 |
//! | 5  | FENCE: addr, 32-bit data | 4 |
//! | 6  | TRAP: interrupt with `int_ctx` (bits 0-27) | 2 |
//! | 8  | POLL_REGMEM: `hdp_flush` (bit 26), `func` (28-30), `mem_poll` (31); addr, value, mask, interval | 6 |
//! | 10 | ATOMIC: `operation` (bits 25-31, 47 = ADD64); addr, src, cmp, loop | 8 |
//! | 11 | CONST_FILL: `fillsize` (bits 30-31); dst, data, count-1 bytes | 5 |
//! | 13 | TIMESTAMP: SET (0, ignored), GET (1) / GET_GLOBAL (2): addr | 3 |
//! | 17 | GCR_REQ (5.x/6.0 cache control: a no-op here) | 5 |
//!
//! Counts are "value + 1" (ROCr's `SizeToCountOffset` is -1 on SDMA 4+);
//! the count fields are read 30 bits wide (22 on SDMA 4, whose upper bits
//! are reserved and 0).  HDP flushes pass at once, both amdgpu's
//! (POLL_REGMEM with `hdp_flush`) and ROCr's on SDMA 4 (a register
//! POLL_REGMEM with `func` 0, "always": dwords {8, 0, 0x8000_0000, 0, 0, 0}),
//! since the virtual GPU has no HDP.  Register polls that compare (`func`
//! 1-6), SRBM writes, indirect buffers, semaphores,
//! conditional execution, PTE/PDE updates and other atomics are rejected as
//! unsupported; unknown ops as invalid.
//!
//! Pointers (SDMA 4+, ROCr's `HwIndexMonotonic`): the producer publishes a
//! 64-bit byte count at `wptr_va`; the engine publishes its 64-bit byte
//! count at `rptr_va`.  Only the difference modulo the ring size matters,
//! so packets may wrap around the ring's end.

use super::mem::{
    compare, fault, Events, Fetch, GpuMemory, Run, Src, Stop, QUEUE_ERROR_INVALID_PACKET,
    QUEUE_ERROR_UNSUPPORTED,
};

/// `SDMA_OP_NOP`.
pub const OP_NOP: u32 = 0;
/// `SDMA_OP_COPY`.
pub const OP_COPY: u32 = 1;
/// `SDMA_OP_WRITE`.
pub const OP_WRITE: u32 = 2;
/// `SDMA_OP_INDIRECT`.
pub const OP_INDIRECT: u32 = 4;
/// `SDMA_OP_FENCE`.
pub const OP_FENCE: u32 = 5;
/// `SDMA_OP_TRAP`.
pub const OP_TRAP: u32 = 6;
/// `SDMA_OP_SEM`.
pub const OP_SEM: u32 = 7;
/// `SDMA_OP_POLL_REGMEM`.
pub const OP_POLL_REGMEM: u32 = 8;
/// `SDMA_OP_COND_EXE`.
pub const OP_COND_EXE: u32 = 9;
/// `SDMA_OP_ATOMIC`.
pub const OP_ATOMIC: u32 = 10;
/// `SDMA_OP_CONST_FILL`.
pub const OP_CONST_FILL: u32 = 11;
/// `SDMA_OP_PTEPDE`.
pub const OP_PTEPDE: u32 = 12;
/// `SDMA_OP_TIMESTAMP`.
pub const OP_TIMESTAMP: u32 = 13;
/// `SDMA_OP_SRBM_WRITE`.
pub const OP_SRBM_WRITE: u32 = 14;
/// `SDMA_OP_PRE_EXE`.
pub const OP_PRE_EXE: u32 = 15;
/// `SDMA_OP_DUMMY_TRAP`.
pub const OP_DUMMY_TRAP: u32 = 16;
/// `SDMA_OP_GCR_REQ` (SDMA 5+).
pub const OP_GCR_REQ: u32 = 17;

/// `SDMA_SUBOP_COPY_LINEAR` / `SDMA_SUBOP_WRITE_LINEAR`.
pub const SUBOP_LINEAR: u32 = 0;
/// `SDMA_SUBOP_TIMESTAMP_SET`.
pub const SUBOP_TIMESTAMP_SET: u32 = 0;
/// `SDMA_SUBOP_TIMESTAMP_GET`.
pub const SUBOP_TIMESTAMP_GET: u32 = 1;
/// `SDMA_SUBOP_TIMESTAMP_GET_GLOBAL`.
pub const SUBOP_TIMESTAMP_GET_GLOBAL: u32 = 2;
/// ROCr's `SDMA_ATOMIC_ADD64`.
pub const ATOMIC_ADD64: u32 = 47;

/// The count fields' width.
const COUNT_MASK: u32 = 0x3fff_ffff;

/// The most bytes one run copies or fills: a longer COPY_LINEAR or
/// CONST_FILL (up to 1 GiB) is executed in slices across runs, so that
/// the scheduler can switch queues and preempt between slices, as SDMA
/// firmware preempts within long transfers.
pub const RUN_BYTES: u64 = 4 << 20;

/// A header dword.
pub const fn header(op: u32, sub_op: u32) -> u32 {
    op | (sub_op << 8)
}

/// An SDMA queue's engine state.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SdmaQueue {
    /// Ring base address.
    base: u64,
    /// Ring size in bytes (a power of two).
    size: u64,
    /// Where the producer publishes the write pointer (u64, bytes).
    wptr_va: u64,
    /// Where the engine publishes the read pointer (u64, bytes).
    rptr_va: u64,
    /// Bytes consumed since load.
    rptr: u64,
    /// Bytes copied or filled since load (statistics).
    bytes: u64,
    /// Bytes of the COPY_LINEAR / CONST_FILL at the read pointer done by
    /// earlier runs.
    partial: u64,
}

/// What executing one packet did.
enum Step {
    /// Done; it was this many dwords long.
    Done(u64),
    /// Not completely in the ring yet.
    Partial,
}

impl SdmaQueue {
    /// A queue over a ring of `size` bytes (a power of two, at least 64)
    /// at `base` (dword aligned); `None` otherwise.
    pub fn new(base: u64, size: u64, rptr_va: u64, wptr_va: u64) -> Option<Self> {
        if !size.is_power_of_two() || size < 64 || base & 3 != 0 {
            return None;
        }
        Some(SdmaQueue {
            base,
            size,
            wptr_va,
            rptr_va,
            rptr: 0,
            bytes: 0,
            partial: 0,
        })
    }

    /// Bytes consumed since load.
    pub fn rptr(&self) -> u64 {
        self.rptr
    }

    /// Starts the queue at read pointer `rptr` (bytes), where an unload
    /// left it (the MQD's saved read pointer).
    pub fn set_rptr(&mut self, rptr: u64) {
        self.rptr = rptr;
    }

    /// Bytes copied or filled since load.
    pub fn bytes_moved(&self) -> u64 {
        self.bytes
    }

    /// Runs the queue for at most `budget` packets.
    pub fn run<M: GpuMemory, E: Events>(&mut self, m: &mut M, ev: &mut E, budget: u32) -> Run {
        let mut packets = 0;
        let mut room = RUN_BYTES;
        let start = self.rptr;
        // Bytes known to be in the ring past the read pointer, and whether
        // that was read from the write pointer since the last packet.
        let (mut avail, mut fresh) = (0u64, false);
        // Packet dwords, read a batch at a time.
        let mut f = Fetch::default();
        let mut stop = loop {
            if avail == 0 {
                let wptr = match m.read_u64(self.wptr_va) {
                    Ok(w) => w,
                    Err(f) => break Stop::Fault(f),
                };
                avail = wptr.wrapping_sub(self.rptr) & (self.size - 1) & !3;
                fresh = true;
            }
            if avail == 0 {
                break Stop::Idle;
            }
            if packets == budget {
                break Stop::Budget;
            }
            match self.exec(m, ev, &mut f, avail / 4, &mut room) {
                Ok(Step::Done(n)) => {
                    packets += 1;
                    self.rptr = self.rptr.wrapping_add(n * 4);
                    avail = avail.saturating_sub(n * 4);
                    fresh = false;
                }
                Ok(Step::Partial) if !fresh => avail = 0,
                Ok(Step::Partial) => break Stop::Idle,
                Err(s) => break s,
            }
        };
        // The read pointer is published once, when the run ends.
        if self.rptr != start {
            if let Err(f) = m.write_u64(self.rptr_va, self.rptr) {
                stop = Stop::Fault(f);
            }
        }
        Run { packets, stop }
    }

    /// The part of a `count`-byte transfer to do now: `(offset, bytes)`;
    /// `Budget` if the run has no room left.
    fn slice(&self, count: u64, room: &u64) -> Result<(u64, u64), Stop> {
        if *room == 0 {
            return Err(Stop::Budget);
        }
        let start = self.partial.min(count);
        Ok((start, (count - start).min(*room)))
    }

    /// Accounts `n` bytes of a `count`-byte transfer done: `Budget` if it
    /// is not finished (the packet stays at the read pointer).
    fn sliced(&mut self, count: u64, n: u64, room: &mut u64) -> Result<(), Stop> {
        self.bytes += n;
        *room -= n;
        self.partial += n;
        if self.partial < count {
            return Err(Stop::Budget);
        }
        self.partial = 0;
        Ok(())
    }

    /// Executes the packet at the read pointer, of which `avail` dwords
    /// are in the ring.
    fn exec<M: GpuMemory, E: Events>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        f: &mut Fetch,
        avail: u64,
        room: &mut u64,
    ) -> Result<Step, Stop> {
        // The ring as dwords counted from the queue's start (the read
        // pointer is a multiple of 4 bytes).
        let src = Src::Ring {
            base: self.base,
            mask: self.size / 4 - 1,
        };
        let pos = self.rptr / 4;
        let limit = pos.wrapping_add(avail);
        let dw = |m: &mut M, f: &mut Fetch, i: u64| f.dword(m, src, pos.wrapping_add(i), limit);
        let h = dw(m, f, 0)?;
        let op = h & 0xff;
        let sub_op = (h >> 8) & 0xff;
        let len: u64 = match op {
            OP_NOP => 1 + u64::from((h >> 16) & 0x3fff),
            OP_COPY | OP_ATOMIC => {
                if op == OP_COPY && sub_op != SUBOP_LINEAR {
                    // Tiled, sub-window, broadcast copies: not emulated.
                    return Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED));
                }
                if op == OP_COPY { 7 } else { 8 }
            }
            OP_WRITE => {
                if sub_op != SUBOP_LINEAR {
                    return Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED));
                }
                if avail < 4 {
                    return Ok(Step::Partial);
                }
                let count = dw(m, f, 3)? & COUNT_MASK;
                4 + u64::from(count) + 1
            }
            OP_FENCE => 4,
            OP_TRAP => 2,
            OP_POLL_REGMEM => 6,
            OP_CONST_FILL => 5,
            OP_TIMESTAMP => 3,
            OP_GCR_REQ => 5,
            OP_INDIRECT | OP_SEM | OP_COND_EXE | OP_PTEPDE | OP_SRBM_WRITE | OP_PRE_EXE
            | OP_DUMMY_TRAP => return Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED)),
            _ => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
        };
        if len > avail {
            return Ok(Step::Partial);
        }
        let addr = |m: &mut M, f: &mut Fetch, i: u64| -> Result<u64, Stop> {
            Ok(u64::from(dw(m, f, i)?) | (u64::from(dw(m, f, i + 1)?) << 32))
        };
        match op {
            OP_NOP | OP_GCR_REQ => {}
            OP_COPY => {
                let count = u64::from(dw(m, f, 1)? & COUNT_MASK) + 1;
                let src = addr(m, f, 3)?;
                let dst = addr(m, f, 5)?;
                let (start, n) = self.slice(count, room)?;
                fault(m.copy(dst.wrapping_add(start), src.wrapping_add(start), n))?;
                self.sliced(count, n, room)?;
            }
            OP_WRITE => {
                let dst = addr(m, f, 1)?;
                if dst & 3 != 0 {
                    return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
                }
                for i in 4..len {
                    let v = dw(m, f, i)?;
                    fault(m.write_u32(dst + (i - 4) * 4, v))?;
                }
            }
            OP_FENCE => {
                let a = addr(m, f, 1)?;
                if a & 3 != 0 {
                    return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
                }
                let data = dw(m, f, 3)?;
                fault(m.write_u32(a, data))?;
            }
            OP_TRAP => {
                let ctx = dw(m, f, 1)? & 0x0fff_ffff;
                ev.signal(ctx);
            }
            OP_POLL_REGMEM => {
                let hdp_flush = h & (1 << 26) != 0;
                let func = (h >> 28) & 7;
                let mem_poll = h & (1 << 31) != 0;
                if hdp_flush {
                    // amdgpu's HDP flush (`sdma_v4_0_ring_emit_hdp_flush`):
                    // write the request register (dword 2), poll the done
                    // register (dword 1).  The virtual GPU has no HDP (no
                    // host-data-path cache in front of its memory), so
                    // there is nothing to flush and the poll is satisfied
                    // at once.
                } else if !mem_poll {
                    // A register poll.  The virtual GPU has no registers to
                    // read, but `func` 0 ("always") passes whatever the
                    // register holds, so it completes at once like on
                    // hardware.  That is ROCr's gfx9 HDP flush
                    // (`hdp_flush_cmd` in its sdma_registers.h, emitted
                    // before every copy on SDMA 4 when the GPU is not on
                    // xGMI): dwords {8, 0, 0x8000_0000, 0, 0, 0}, a
                    // register poll of register 0, func always, which SDMA 4
                    // firmware 0x1a5+ executes as an HDP flush -- nothing
                    // to flush here either.  Polls that compare a register
                    // cannot be emulated.
                    match func {
                        0 => {}
                        7 => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
                        _ => return Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED)),
                    }
                } else {
                    let a = addr(m, f, 1)?;
                    if a & 3 != 0 {
                        return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
                    }
                    let reference = dw(m, f, 3)?;
                    let mask = dw(m, f, 4)?;
                    let v = fault(m.read_u32(a))?;
                    match compare(func, v, mask, reference) {
                        None => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
                        Some(false) => return Err(Stop::Blocked),
                        Some(true) => {}
                    }
                }
            }
            OP_ATOMIC => {
                let operation = h >> 25;
                if operation != ATOMIC_ADD64 {
                    return Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED));
                }
                let a = addr(m, f, 1)?;
                if a & 7 != 0 {
                    return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
                }
                let src = addr(m, f, 3)?;
                fault(m.atomic_add_u64(a, src))?;
            }
            OP_CONST_FILL => {
                let fillsize = h >> 30;
                let dst = addr(m, f, 1)?;
                let data = dw(m, f, 3)?;
                let count = u64::from(dw(m, f, 4)? & COUNT_MASK) + 1;
                let pattern = match fillsize {
                    0 => u32::from_le_bytes([data as u8; 4]),
                    1 => (data & 0xffff) | (data << 16),
                    2 => data,
                    _ => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
                };
                if fillsize == 2 && (dst & 3 != 0 || count & 3 != 0) {
                    return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
                }
                let (start, n) = self.slice(count, room)?;
                // Slices are multiples of 4 bytes: the pattern stays in phase.
                fault(m.fill(dst.wrapping_add(start), pattern, n))?;
                self.sliced(count, n, room)?;
            }
            OP_TIMESTAMP => match sub_op {
                SUBOP_TIMESTAMP_SET => {}
                SUBOP_TIMESTAMP_GET | SUBOP_TIMESTAMP_GET_GLOBAL => {
                    let a = addr(m, f, 1)?;
                    if a & 7 != 0 {
                        return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
                    }
                    let t = ev.clock();
                    fault(m.write_u64(a, t))?;
                }
                _ => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
            },
            _ => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
        }
        Ok(Step::Done(len))
    }
}
