// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The PM4 processor: compute queues of type `KFD_IOC_QUEUE_TYPE_COMPUTE`
//! (and the indirect buffers AQL vendor packets point to).
//!
//! PM4 type-3 packets as `drivers/gpu/drm/amd/amdgpu/soc15d.h` (gfx9) and
//! `nvd.h` (gfx10/11) define them: header `3 << 30 | count << 16 | op << 8`,
//! followed by `count + 1` dwords.  Executed: NOP (also the 1-dword
//! `count == 0x3fff` form and type-2 filler), WRITE_DATA to memory,
//! RELEASE_MEM (end-of-pipe data write: 32/64-bit data or a clock, and the
//! interrupt carrying `int_ctxid`), EVENT_WRITE (non-EOP events: nothing to
//! do on a GPU without pipelines), ACQUIRE_MEM (cache actions: no-ops,
//! memory is coherent), WAIT_REG_MEM on memory, INDIRECT_BUFFER (one
//! level, chaining allowed).  SOC15 has no EVENT_WRITE_EOP packet (0x47 is
//! pre-gfx9); RELEASE_MEM is its end-of-pipe event.  Everything else is
//! rejected: register writes and dispatches as unsupported (no registers,
//! no ISA), type-0/1 packets and reserved fields as invalid.
//!
//! Pointers (gfx9+ user queues, as KFDTest's PM4Queue uses them): the
//! write pointer is a 64-bit count of dwords the producer publishes at
//! `wptr_va` (monotonic or ring-relative: only its value modulo the ring
//! matters); the engine publishes its read pointer at `rptr_va` as a
//! 32-bit dword offset in the ring, as CP_HQD_PQ_RPTR_REPORT_ADDR does.

use super::mem::{
    compare, fault, Events, Fetch, GpuMemory, Run, Src, Stop, FETCH_DWORDS,
    QUEUE_ERROR_INVALID_PACKET, QUEUE_ERROR_UNSUPPORTED,
};

/// `PACKET3_NOP`.
pub const OP_NOP: u32 = 0x10;
/// `PACKET3_WRITE_DATA`.
pub const OP_WRITE_DATA: u32 = 0x37;
/// `PACKET3_WAIT_REG_MEM`.
pub const OP_WAIT_REG_MEM: u32 = 0x3c;
/// `PACKET3_INDIRECT_BUFFER`.
pub const OP_INDIRECT_BUFFER: u32 = 0x3f;
/// `PACKET3_EVENT_WRITE`.
pub const OP_EVENT_WRITE: u32 = 0x46;
/// `PACKET3_RELEASE_MEM`.
pub const OP_RELEASE_MEM: u32 = 0x49;
/// `PACKET3_ACQUIRE_MEM`.
pub const OP_ACQUIRE_MEM: u32 = 0x58;
/// `CP_PACKET2`: a one-dword filler.
pub const PACKET2: u32 = 0x8000_0000;

/// A type-3 header (`PACKET3(op, count)`).
pub const fn packet3(op: u32, count: u32) -> u32 {
    (3 << 30) | ((count & 0x3fff) << 16) | ((op & 0xff) << 8)
}

/// The most dwords one indirect buffer may have (the 20-bit IB_SIZE).
const IB_SIZE_MASK: u32 = 0xf_ffff;

/// An indirect buffer being executed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ib {
    /// Its first dword's address.
    base: u64,
    /// Its size in dwords.
    size: u64,
    /// The next dword to execute.
    pos: u64,
}

/// What executing one packet did.
enum Step {
    /// Done; it was this many dwords long.
    Done(u64),
    /// An INDIRECT_BUFFER: execute this IB (`chain`: it replaces the
    /// current IB) once the packet's `len` dwords are consumed.
    Call { ib: Ib, len: u64, chain: bool },
    /// Not complete in the source yet (fewer than its length available).
    Partial,
}

/// Executes the packet at dword `pos` of `src`, of which `avail` dwords
/// are valid.
fn exec<M: GpuMemory, E: Events>(
    m: &mut M,
    ev: &mut E,
    f: &mut Fetch,
    src: Src,
    pos: u64,
    avail: u64,
) -> Result<Step, Stop> {
    let limit = pos.wrapping_add(avail);
    let mut dw = |m: &mut M, i: u64| f.dword(m, src, pos.wrapping_add(i), limit);
    let h = dw(m, 0)?;
    match h >> 30 {
        2 => return Ok(Step::Done(1)),
        3 => {}
        _ => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
    }
    let count = (h >> 16) & 0x3fff;
    let op = (h >> 8) & 0xff;
    if op == OP_NOP && count == 0x3fff {
        return Ok(Step::Done(1));
    }
    let len = u64::from(count) + 2;
    if len > avail {
        return Ok(Step::Partial);
    }
    let need = |n: u32| {
        if count + 1 < n {
            Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET))
        } else {
            Ok(())
        }
    };
    let addr = |lo: u32, hi: u32| (u64::from(hi) << 32) | u64::from(lo & !3);
    match op {
        OP_NOP | OP_EVENT_WRITE | OP_ACQUIRE_MEM => {}
        OP_WRITE_DATA => {
            need(3)?;
            let ctl = dw(m, 1)?;
            let dst_sel = (ctl >> 8) & 0xf;
            if dst_sel != 5 && dst_sel != 2 {
                // Registers, GDS, ...: a virtual GPU has none.
                return Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED));
            }
            let no_incr = ctl & (1 << 16) != 0;
            let mut a = addr(dw(m, 2)?, dw(m, 3)?);
            if no_incr {
                for i in 4..len {
                    let v = dw(m, i)?;
                    fault(m.write_u32(a, v))?;
                }
            } else {
                // The data in writes of up to a fetch's worth.
                let mut i = 4;
                while i < len {
                    let k = (len - i).min(FETCH_DWORDS as u64) as usize;
                    let mut b = [0u8; FETCH_DWORDS * 4];
                    for (j, c) in b[..k * 4].chunks_exact_mut(4).enumerate() {
                        c.copy_from_slice(&dw(m, i + j as u64)?.to_le_bytes());
                    }
                    fault(m.write(a, &b[..k * 4]))?;
                    a = a.wrapping_add(4 * k as u64);
                    i += k as u64;
                }
            }
        }
        OP_WAIT_REG_MEM => {
            need(6)?;
            let ctl = dw(m, 1)?;
            let func = ctl & 7;
            let mem_space = (ctl >> 4) & 3;
            let operation = (ctl >> 6) & 3;
            if mem_space != 1 || operation != 0 {
                return Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED));
            }
            let a = addr(dw(m, 2)?, dw(m, 3)?);
            let (reference, mask) = (dw(m, 4)?, dw(m, 5)?);
            let v = fault(m.read_u32(a))?;
            match compare(func, v, mask, reference) {
                None => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
                Some(false) => return Err(Stop::Blocked),
                Some(true) => {}
            }
        }
        OP_INDIRECT_BUFFER => {
            need(3)?;
            let lo = dw(m, 1)?;
            if lo & 3 != 0 {
                return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
            }
            let base = addr(lo, dw(m, 2)?);
            let ctl = dw(m, 3)?;
            let ib = Ib {
                base,
                size: u64::from(ctl & IB_SIZE_MASK),
                pos: 0,
            };
            return Ok(Step::Call {
                ib,
                len,
                chain: ctl & (1 << 20) != 0,
            });
        }
        OP_RELEASE_MEM => {
            need(7)?;
            let sel = dw(m, 2)?;
            let data_sel = (sel >> 29) & 7;
            let int_sel = (sel >> 24) & 7;
            let a = (u64::from(dw(m, 4)?) << 32) | u64::from(dw(m, 3)?);
            let data = (u64::from(dw(m, 6)?) << 32) | u64::from(dw(m, 5)?);
            match data_sel {
                0 => {}
                1 => {
                    if a & 3 != 0 {
                        return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
                    }
                    fault(m.write_u32(a, data as u32))?;
                }
                2..=4 => {
                    if a & 7 != 0 {
                        return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
                    }
                    let v = if data_sel == 2 { data } else { ev.clock() };
                    fault(m.write_u64(a, v))?;
                }
                _ => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
            }
            if int_sel != 0 {
                let ctx = dw(m, 7)?;
                ev.signal(ctx);
            }
        }
        _ => return Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED)),
    }
    Ok(Step::Done(len))
}

/// The state of a PM4 stream with at most one indirect buffer active.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct IbState {
    /// The indirect buffer being executed and the length of the packet
    /// that called it.
    ib: Option<(Ib, u64)>,
}

impl IbState {
    /// Runs the active IB (if any) until it ends, blocks or the budget is
    /// spent.  `Ok(Some(len))`: the IB finished; the caller consumes the
    /// calling packet's `len` dwords.  `Ok(None)`: no IB active.
    fn run_ib<M: GpuMemory, E: Events>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        f: &mut Fetch,
        budget: &mut u32,
        packets: &mut u32,
    ) -> Result<Option<u64>, Stop> {
        while let Some((ib, call_len)) = self.ib.as_mut() {
            if ib.pos >= ib.size {
                let len = *call_len;
                self.ib = None;
                return Ok(Some(len));
            }
            if *budget == 0 {
                return Err(Stop::Budget);
            }
            let src = Src::Ib { base: ib.base };
            match exec(m, ev, f, src, ib.pos, ib.size - ib.pos)? {
                Step::Done(n) => ib.pos += n,
                // A packet running past the IB's end.
                Step::Partial => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
                Step::Call { ib: new, chain, .. } => {
                    if !chain {
                        // IB2 is not emulated: compute queues use one level.
                        return Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED));
                    }
                    ib.base = new.base;
                    ib.size = new.size;
                    ib.pos = 0;
                }
            }
            *budget -= 1;
            *packets += 1;
        }
        Ok(None)
    }

    /// Runs an indirect buffer of `size` dwords at `base` to its end (the
    /// PM4 IB of an AQL vendor packet): `Ok(())` when it is done; a
    /// blocked or faulting IB is resumed where it stopped on the next call
    /// with the same arguments.
    pub fn run_once<M: GpuMemory, E: Events>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        base: u64,
        size: u64,
    ) -> Result<(), Stop> {
        if self.ib.is_none() {
            self.ib = Some((Ib { base, size, pos: 0 }, 0));
        }
        let mut budget = u32::MAX;
        let mut packets = 0;
        self.run_ib(m, ev, &mut Fetch::default(), &mut budget, &mut packets).map(|_| ())
    }

    /// Whether an IB is being executed.
    pub fn active(&self) -> bool {
        self.ib.is_some()
    }
}

/// A PM4 queue's engine state.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Pm4Queue {
    /// Ring base address.
    base: u64,
    /// Ring size in dwords (a power of two).
    dwords: u64,
    /// Where the producer publishes the write pointer (u64, dwords).
    wptr_va: u64,
    /// Where the engine publishes the read pointer (u32, dword offset).
    rptr_va: u64,
    /// Dwords consumed since load.
    rptr: u64,
    /// The indirect buffer being executed.
    ib: IbState,
}

impl Pm4Queue {
    /// A queue over a ring of `size` bytes (a power of two, at least 16)
    /// at `base` (dword aligned); `None` otherwise.
    pub fn new(base: u64, size: u64, rptr_va: u64, wptr_va: u64) -> Option<Self> {
        if !size.is_power_of_two() || size < 16 || base & 3 != 0 {
            return None;
        }
        Some(Pm4Queue {
            base,
            dwords: size / 4,
            wptr_va,
            rptr_va,
            rptr: 0,
            ib: IbState::default(),
        })
    }

    /// Dwords consumed since load.
    pub fn rptr(&self) -> u64 {
        self.rptr
    }

    /// Starts the queue at read pointer `rptr` (dwords), where an unload
    /// left it (the MQD's saved read pointer).
    pub fn set_rptr(&mut self, rptr: u64) {
        self.rptr = rptr;
    }

    /// Runs the queue for at most `budget` packets.  The read pointer is
    /// published once, when the run ends (however it ends).
    pub fn run<M: GpuMemory, E: Events>(&mut self, m: &mut M, ev: &mut E, budget: u32) -> Run {
        let mut packets = 0;
        let start = self.rptr;
        let mut stop = match self.run_inner(m, ev, budget, &mut packets) {
            Ok(()) => Stop::Idle,
            Err(s) => s,
        };
        if self.rptr != start {
            let off = (self.rptr & (self.dwords - 1)) as u32;
            if let Err(f) = m.write_u32(self.rptr_va, off) {
                stop = Stop::Fault(f);
            }
        }
        Run { packets, stop }
    }

    fn run_inner<M: GpuMemory, E: Events>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        mut budget: u32,
        packets: &mut u32,
    ) -> Result<(), Stop> {
        let mask = self.dwords - 1;
        let src = Src::Ring {
            base: self.base,
            mask,
        };
        // Dwords known to be in the ring past the read pointer, and whether
        // that was read from the write pointer since the last packet.
        let (mut avail, mut fresh) = (0u64, false);
        let mut f = Fetch::default();
        loop {
            if let Some(len) = self.ib.run_ib(m, ev, &mut f, &mut budget, packets)? {
                self.rptr = self.rptr.wrapping_add(len);
                avail = avail.saturating_sub(len);
            }
            if avail == 0 {
                let wptr = fault(m.read_u64(self.wptr_va))?;
                avail = wptr.wrapping_sub(self.rptr) & mask;
                fresh = true;
            }
            if avail == 0 {
                return Ok(());
            }
            if budget == 0 {
                return Err(Stop::Budget);
            }
            match exec(m, ev, &mut f, src, self.rptr, avail)? {
                Step::Done(n) => {
                    budget -= 1;
                    *packets += 1;
                    self.rptr = self.rptr.wrapping_add(n);
                    avail = avail.saturating_sub(n);
                    fresh = false;
                }
                Step::Partial if !fresh => avail = 0,
                Step::Partial => return Ok(()),
                Step::Call { ib, len, .. } => {
                    // The IB runs on the next iteration; the packet counts
                    // when it is done.
                    self.ib.ib = Some((ib, len));
                }
            }
        }
    }

}
