// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The AQL packet processor: compute queues of type `KFD_IOC_QUEUE_TYPE_COMPUTE_AQL`.
//!
//! The ring is an array of 64-byte packets; the producer (ROCr) reserves a
//! slot by bumping the write index (`amd_queue_t.write_dispatch_id`, at
//! `wptr_va`), fills the packet, writes its 16-bit header last with a
//! release store, and rings the doorbell.  The processor serves slot
//! `read_index % slots`: a header whose type is INVALID means "not written
//! yet", so it stops and waits, as the CP does.  After a packet completes
//! it sets the header back to INVALID (so that a slot is never executed
//! twice when the ring wraps) and publishes the read index
//! (`amd_queue_t.read_dispatch_id`, at `rptr_va`).
//!
//! Header (HSA `hsa_packet_header_t`): type in bits 0-7, barrier bit 8,
//! acquire fence scope bits 9-10, release fence scope bits 11-12.  Packets
//! run to completion one at a time, in order, so the barrier bit is always
//! honoured; fences are no-ops (the virtual GPU has no caches), but the
//! reserved scope value 3 is malformed.
//!
//! Packets: BARRIER_AND / BARRIER_OR (up to five dependency signals, the
//! null handle ignored: AND waits for all to be 0, OR for any, an OR with
//! no signal is satisfied), the AMD vendor packets BARRIER_VALUE (one
//! signal compared under a mask) and PM4_IB (an indirect buffer executed by
//! the PM4 processor); KERNEL_DISPATCH runs on the [`Shaders`] the caller
//! passes to [`AqlQueue::run_with`] (the virtual GPU's interpreter; with
//! [`AqlQueue::run`], none: the queue stops with `QUEUE_ERROR_UNSUPPORTED`),
//! which may take several runs (time slices) to finish one; AGENT_DISPATCH
//! cannot run (no agent-dispatch firmware): `QUEUE_ERROR_UNSUPPORTED`;
//! anything else is `QUEUE_ERROR_INVALID_PACKET`.
//!
//! Completion signal (`amd_signal_t`, ROCr's `amd_hsa_signal.h`): the
//! value at offset 8 is decremented atomically; if `event_mailbox_ptr`
//! (offset 16) is not 0, `event_id` (offset 24) is written there and an
//! interrupt carrying `event_id` is raised: that is how the CP wakes
//! `hsa_signal_wait` on ROCr's interrupt signals.  On a queue whose
//! `amd_queue_t.queue_properties` has ENABLE_PROFILING (ROCr's
//! `hsa_amd_profiling_set_profiler_enabled`: HIP events' timing), the
//! signal's `start_ts` and `end_ts` (offsets 32, 40) get the GPU clock when
//! the packet was first looked at and when it completed, before the
//! decrement, as the CP writes them.  The queue is taken to be ROCr's
//! `amd_queue_t` only if the write index sits where that 64-byte aligned
//! structure has it (offset 56).
//!
//! Queue errors: when a run stops the queue with [`Stop::Error`] (not a VM
//! fault: that is reported as a VM fault, which ROCr handles on its own),
//! the processor does what the CP firmware does for ROCr's `amd_queue_t`:
//! it stores an error code ([`inactive_code`], or the one the shader
//! engine gives, [`Shaders::take_inactive_code`]) in the value of
//! `amd_queue_t.queue_inactive_signal` (offset 0xc0) and raises the
//! signal's event as for a completion signal (mailbox, interrupt).  ROCr's
//! `AqlQueue::DynamicScratchHandler` waits on that signal (value != 0),
//! turns the code into an `hsa_status_t` and calls the queue's error
//! callback (HIP aborts the program).  The queue stays stopped: the codes
//! written are never "insufficient scratch" (bit 0), after which ROCr
//! would grow scratch and expect the queue to resume.

use super::mem::{
    fault, Events, GpuMemory, Run, Stop, QUEUE_ERROR_INVALID_PACKET, QUEUE_ERROR_UNSUPPORTED,
    QUEUE_ERROR_VM_FAULT,
};
use super::pm4::IbState;

/// Bytes per AQL packet.
pub const PACKET_SIZE: u64 = 64;

/// `HSA_PACKET_TYPE_VENDOR_SPECIFIC`.
pub const TYPE_VENDOR_SPECIFIC: u16 = 0;
/// `HSA_PACKET_TYPE_INVALID`.
pub const TYPE_INVALID: u16 = 1;
/// `HSA_PACKET_TYPE_KERNEL_DISPATCH`.
pub const TYPE_KERNEL_DISPATCH: u16 = 2;
/// `HSA_PACKET_TYPE_BARRIER_AND`.
pub const TYPE_BARRIER_AND: u16 = 3;
/// `HSA_PACKET_TYPE_AGENT_DISPATCH`.
pub const TYPE_AGENT_DISPATCH: u16 = 4;
/// `HSA_PACKET_TYPE_BARRIER_OR`.
pub const TYPE_BARRIER_OR: u16 = 5;

/// `HSA_PACKET_HEADER_BARRIER`.
pub const HEADER_BARRIER: u16 = 1 << 8;
/// `HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE` shift.
pub const HEADER_ACQUIRE_SHIFT: u16 = 9;
/// `HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE` shift.
pub const HEADER_RELEASE_SHIFT: u16 = 11;

/// `AMD_AQL_FORMAT_PM4_IB` (`hsa_ext_amd_aql_pm4_ib`).
pub const AMD_FORMAT_PM4_IB: u8 = 1;
/// `HSA_AMD_PACKET_TYPE_BARRIER_VALUE`.
pub const AMD_FORMAT_BARRIER_VALUE: u8 = 2;

/// `amd_signal_t.value`.
pub const SIGNAL_VALUE: u64 = 8;
/// `amd_signal_t.event_mailbox_ptr`.
pub const SIGNAL_MAILBOX: u64 = 16;
/// `amd_signal_t.event_id`.
pub const SIGNAL_EVENT_ID: u64 = 24;

/// `amd_signal_t.start_ts`.
pub const SIGNAL_START_TS: u64 = 32;
/// `amd_signal_t.end_ts`.
pub const SIGNAL_END_TS: u64 = 40;
/// Offset of `write_dispatch_id` in `amd_queue_t` (64-byte aligned).
pub const AMD_QUEUE_WRITE_DISPATCH_ID: u64 = 56;
/// Offset of `queue_properties` in `amd_queue_t`.
pub const AMD_QUEUE_PROPERTIES: u64 = 0xb4;
/// `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING`.
pub const AMD_QUEUE_PROPERTIES_ENABLE_PROFILING: u32 = 1 << 3;

/// Offset of `queue_inactive_signal` in `amd_queue_t`.
pub const AMD_QUEUE_INACTIVE_SIGNAL: u64 = 0xc0;

/// `queue_inactive_signal` codes (the CP firmware's, as ROCr's
/// `AqlQueue::DynamicScratchHandler` decodes them): invalid dimensions
/// (`HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS`).
pub const INACTIVE_INVALID_DIM: u64 = 2;
/// Invalid group (or scratch) memory: `HSA_STATUS_ERROR_INVALID_ALLOCATION`.
pub const INACTIVE_INVALID_ALLOCATION: u64 = 4;
/// Invalid (or null) code: `HSA_STATUS_ERROR_INVALID_CODE_OBJECT`.
pub const INACTIVE_INVALID_CODE: u64 = 8;
/// Invalid packet format: `HSA_STATUS_ERROR_INVALID_PACKET_FORMAT`.
pub const INACTIVE_INVALID_PACKET: u64 = 32;
/// Workgroup too large: `HSA_STATUS_ERROR_INVALID_ARGUMENT`.
pub const INACTIVE_GROUP_TOO_LARGE: u64 = 64;
/// Out of VGPRs: `HSA_STATUS_ERROR_INVALID_ISA`.
pub const INACTIVE_INVALID_ISA: u64 = 128;
/// Memory violation: `HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION`.
pub const INACTIVE_MEMORY_VIOLATION: u64 = 0x2000_0000;
/// Illegal instruction: `HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION`.
pub const INACTIVE_ILLEGAL_INSTRUCTION: u64 = 0x4000_0000;
/// Debug trap (`s_trap`): `HSA_STATUS_ERROR_EXCEPTION`.
pub const INACTIVE_DEBUG_TRAP: u64 = 0x8000_0000;

/// The `queue_inactive_signal` code for a queue stopped with
/// `QUEUE_ERROR_*` `code` by the processor itself; `None` for a VM fault
/// (reported as such) and codes that are not the processor's.
pub fn inactive_code(code: u32) -> Option<u64> {
    match code {
        QUEUE_ERROR_INVALID_PACKET | QUEUE_ERROR_UNSUPPORTED => Some(INACTIVE_INVALID_PACKET),
        _ => None,
    }
}

/// Offset of `completion_signal` in every packet.
const COMPLETION: u64 = 56;
/// Offset of `dep_signal[0]` in barrier packets.
const DEP_SIGNALS: u64 = 8;

/// Executes kernel dispatch packets: the shader engine.
pub trait Shaders {
    /// Runs (more of) the KERNEL_DISPATCH packet at `pkt`, the
    /// `dispatch_id`-th packet of the queue: `Ok(())` once every workgroup
    /// ended; `Err(Stop::Budget)` when its time slice is spent (it is
    /// called again with the same packet on the next run, and goes on
    /// where it stopped); `Err(Stop::Error(_))` or `Err(Stop::Fault(_))`
    /// ends the queue as for any packet.
    fn dispatch<M: GpuMemory, E: Events>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        pkt: u64,
        dispatch_id: u64,
    ) -> Result<(), Stop>;

    /// The `queue_inactive_signal` code (`INACTIVE_*`) for the
    /// `Stop::Error` the last [`Shaders::dispatch`] returned, if the engine
    /// knows a more precise one than [`inactive_code`]; `None` also for a
    /// shader's VM fault (reported as a VM fault).  Taken: asked once per
    /// error.
    fn take_inactive_code(&mut self) -> Option<u64> {
        None
    }
}

/// No shader engine: kernel dispatches are `QUEUE_ERROR_UNSUPPORTED`.
pub struct NoShaders;

impl Shaders for NoShaders {
    fn dispatch<M: GpuMemory, E: Events>(&mut self, _: &mut M, _: &mut E, _: u64, _: u64) -> Result<(), Stop> {
        Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED))
    }
}

/// How far the current packet got: steps that must not be repeated when
/// it is executed again after a fault.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
enum Stage {
    /// Nothing done yet (or only idempotent steps).
    #[default]
    Start,
    /// The packet's own work is done (a kernel dispatch ran): only its
    /// completion is left.
    Executed,
    /// The completion signal was decremented.
    Decremented,
}

/// An AQL queue's engine state.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AqlQueue {
    /// Ring base address.
    base: u64,
    /// Packets in the ring (a power of two).
    slots: u64,
    /// `write_dispatch_id`.
    wptr_va: u64,
    /// `read_dispatch_id`.
    rptr_va: u64,
    /// Packets consumed since load (the read index).
    rptr: u64,
    /// Progress of the current packet.
    stage: Stage,
    /// A PM4_IB packet's indirect buffer.
    ib: IbState,
    /// The GPU clock when the current packet was first looked at (its
    /// profiling `start_ts`).
    start_ts: Option<u64>,
    /// The run's error (if any) came from [`Shaders::dispatch`].
    dispatching: bool,
}

/// The fields of an `amd_signal_t` the processor uses.
fn signal_value<M: GpuMemory>(m: &mut M, handle: u64) -> Result<i64, Stop> {
    if handle & 7 != 0 {
        return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
    }
    Ok(fault(m.read_u64(handle.wrapping_add(SIGNAL_VALUE)))? as i64)
}

impl AqlQueue {
    /// A queue over a ring of `size` bytes (a power of two, at least one
    /// packet) at `base` (64-byte aligned); `None` otherwise.
    pub fn new(base: u64, size: u64, rptr_va: u64, wptr_va: u64) -> Option<Self> {
        if !size.is_power_of_two() || size < PACKET_SIZE || !base.is_multiple_of(PACKET_SIZE) {
            return None;
        }
        Some(AqlQueue {
            base,
            slots: size / PACKET_SIZE,
            wptr_va,
            rptr_va,
            rptr: 0,
            stage: Stage::Start,
            ib: IbState::default(),
            start_ts: None,
            dispatching: false,
        })
    }

    /// The read index.
    pub fn rptr(&self) -> u64 {
        self.rptr
    }

    /// Starts the queue at read pointer `rptr` (packets), where an unload
    /// left it (the MQD's saved read pointer).
    pub fn set_rptr(&mut self, rptr: u64) {
        self.rptr = rptr;
    }

    /// Runs the queue for at most `budget` packets, with no shader engine.
    pub fn run<M: GpuMemory, E: Events>(&mut self, m: &mut M, ev: &mut E, budget: u32) -> Run {
        self.run_with(m, ev, budget, &mut NoShaders)
    }

    /// Runs the queue for at most `budget` packets; kernel dispatches on
    /// `shaders` (a dispatch that used up its time slice ends the run with
    /// [`Stop::Budget`]).
    pub fn run_with<M: GpuMemory, E: Events, S: Shaders>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        budget: u32,
        shaders: &mut S,
    ) -> Run {
        let mut packets = 0;
        // The write index as last read: read again only once the read
        // index caught up with it.
        let mut wptr = None;
        let stop = loop {
            if packets == budget {
                break Stop::Budget;
            }
            match self.step(m, ev, shaders, &mut wptr) {
                Ok(true) => packets += 1,
                Ok(false) => break Stop::Idle,
                Err(s) => break s,
            }
        };
        if let Stop::Error(code) = stop {
            let shader = if self.dispatching {
                shaders.take_inactive_code()
            } else {
                None
            };
            let inactive = match code {
                QUEUE_ERROR_VM_FAULT => None,
                _ => shader.or_else(|| inactive_code(code)),
            };
            if let Some(c) = inactive {
                self.signal_inactive(m, ev, c);
            }
        }
        self.dispatching = false;
        Run { packets, stop }
    }

    /// Reports a queue error to ROCr as the CP firmware does: `code`
    /// (`INACTIVE_*`) stored in `amd_queue_t.queue_inactive_signal`'s value
    /// and the signal's event raised (mailbox and interrupt, as for a
    /// completion signal).  Nothing if the queue is not ROCr's
    /// `amd_queue_t` (see [`AqlQueue::profiling`]), has no such signal, or
    /// the signal cannot be reached (best effort: the queue is stopped
    /// anyway, and the shell reports the queue error to the driver).
    /// Returns whether the signal's value was written.
    pub fn signal_inactive<M: GpuMemory, E: Events>(&self, m: &mut M, ev: &mut E, code: u64) -> bool {
        if self.wptr_va % 64 != AMD_QUEUE_WRITE_DISPATCH_ID {
            return false;
        }
        let queue = self.wptr_va - AMD_QUEUE_WRITE_DISPATCH_ID;
        let signal = match m.read_u64(queue + AMD_QUEUE_INACTIVE_SIGNAL) {
            Ok(s) if s != 0 && s & 7 == 0 => s,
            _ => return false,
        };
        if m.write_u64(signal.wrapping_add(SIGNAL_VALUE), code).is_err() {
            return false;
        }
        if let Ok(mailbox) = m.read_u64(signal.wrapping_add(SIGNAL_MAILBOX)) {
            if mailbox != 0 && mailbox & 7 == 0 {
                if let Ok(event_id) = m.read_u32(signal.wrapping_add(SIGNAL_EVENT_ID)) {
                    if m.write_u64(mailbox, u64::from(event_id)).is_ok() {
                        ev.signal(event_id);
                    }
                }
            }
        }
        true
    }

    /// Executes the packet at the read index: `Ok(false)` if there is
    /// none.  `known` is the write index as last read.
    fn step<M: GpuMemory, E: Events, S: Shaders>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        shaders: &mut S,
        known: &mut Option<u64>,
    ) -> Result<bool, Stop> {
        let wptr = match *known {
            Some(w) if w.wrapping_sub(self.rptr) as i64 > 0 => w,
            _ => {
                let w = fault(m.read_u64(self.wptr_va))?;
                *known = Some(w);
                w
            }
        };
        // The write index never runs behind the read index; a producer
        // that moves it back has nothing for us.
        if wptr.wrapping_sub(self.rptr) as i64 <= 0 {
            return Ok(false);
        }
        let pkt = self.base + (self.rptr & (self.slots - 1)) * PACKET_SIZE;
        let header = fault(m.read_u32(pkt))?;
        let ty = (header & 0xff) as u16;
        if ty == TYPE_INVALID {
            return Ok(false);
        }
        let start_ts = *self.start_ts.get_or_insert_with(|| ev.clock());
        let acquire = (header >> HEADER_ACQUIRE_SHIFT) & 3;
        let release = (header >> HEADER_RELEASE_SHIFT) & 3;
        if acquire == 3 || release == 3 {
            return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
        }
        if self.stage == Stage::Start {
            match ty {
                TYPE_BARRIER_AND | TYPE_BARRIER_OR => {
                    let mut any = false;
                    let mut all = true;
                    let mut none = true;
                    for i in 0..5 {
                        let s = fault(m.read_u64(pkt + DEP_SIGNALS + 8 * i))?;
                        if s == 0 {
                            continue;
                        }
                        none = false;
                        let done = signal_value(m, s)? == 0;
                        any |= done;
                        all &= done;
                    }
                    let ready = if ty == TYPE_BARRIER_AND { all } else { any || none };
                    if !ready {
                        return Err(Stop::Blocked);
                    }
                }
                TYPE_KERNEL_DISPATCH => {
                    self.dispatching = true;
                    shaders.dispatch(m, ev, pkt, self.rptr)?;
                    self.dispatching = false;
                    self.stage = Stage::Executed;
                }
                TYPE_AGENT_DISPATCH => {
                    return Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED));
                }
                TYPE_VENDOR_SPECIFIC => self.vendor(m, ev, pkt, header)?,
                _ => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
            }
        }
        let signal = fault(m.read_u64(pkt + COMPLETION))?;
        if signal != 0 {
            if signal & 7 != 0 {
                return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
            }
            if self.stage != Stage::Decremented {
                if self.profiling(m) {
                    fault(m.write_u64(signal + SIGNAL_START_TS, start_ts))?;
                    fault(m.write_u64(signal + SIGNAL_END_TS, ev.clock()))?;
                }
                fault(m.atomic_add_u64(signal + SIGNAL_VALUE, u64::MAX))?;
                self.stage = Stage::Decremented;
            }
            let mailbox = fault(m.read_u64(signal + SIGNAL_MAILBOX))?;
            if mailbox != 0 {
                let event_id = fault(m.read_u32(signal + SIGNAL_EVENT_ID))?;
                if mailbox & 7 != 0 {
                    return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
                }
                fault(m.write_u64(mailbox, u64::from(event_id)))?;
                ev.signal(event_id);
            }
        }
        // The slot is free again: INVALID, then the read index.
        fault(m.write_u16(pkt, TYPE_INVALID))?;
        self.stage = Stage::Start;
        self.start_ts = None;
        self.rptr = self.rptr.wrapping_add(1);
        fault(m.write_u64(self.rptr_va, self.rptr))?;
        Ok(true)
    }

    /// Whether the queue is ROCr's `amd_queue_t` (the write index at its
    /// offset in a 64-byte aligned structure) with profiling enabled.  Not
    /// readable: not profiling (the queue's own pointers are what faults).
    fn profiling<M: GpuMemory>(&self, m: &mut M) -> bool {
        if self.wptr_va % 64 != AMD_QUEUE_WRITE_DISPATCH_ID {
            return false;
        }
        let properties = self.wptr_va - AMD_QUEUE_WRITE_DISPATCH_ID + AMD_QUEUE_PROPERTIES;
        m.read_u32(properties).is_ok_and(|p| p & AMD_QUEUE_PROPERTIES_ENABLE_PROFILING != 0)
    }

    /// An AMD vendor-specific packet (format byte at offset 2).
    fn vendor<M: GpuMemory, E: Events>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        pkt: u64,
        header: u32,
    ) -> Result<(), Stop> {
        match (header >> 16) as u8 {
            AMD_FORMAT_BARRIER_VALUE => {
                let s = fault(m.read_u64(pkt + 8))?;
                let value = fault(m.read_u64(pkt + 16))? as i64;
                let mask = fault(m.read_u64(pkt + 24))? as i64;
                let cond = fault(m.read_u32(pkt + 32))?;
                let v = if s == 0 { 0 } else { signal_value(m, s)? } & mask;
                let ready = match cond {
                    0 => v == value,
                    1 => v != value,
                    2 => v < value,
                    3 => v >= value,
                    _ => return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
                };
                if !ready {
                    return Err(Stop::Blocked);
                }
                Ok(())
            }
            AMD_FORMAT_PM4_IB => {
                // ib_jump_cmd[4] at offset 4: an INDIRECT_BUFFER packet.
                let h = fault(m.read_u32(pkt + 4))?;
                if h != super::pm4::packet3(super::pm4::OP_INDIRECT_BUFFER, 2) {
                    return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
                }
                let lo = fault(m.read_u32(pkt + 8))?;
                let hi = fault(m.read_u32(pkt + 12))?;
                let ctl = fault(m.read_u32(pkt + 16))?;
                if lo & 3 != 0 {
                    return Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET));
                }
                let base = (u64::from(hi) << 32) | u64::from(lo);
                self.ib
                    .run_once(m, ev, base, u64::from(ctl & 0xf_ffff))
            }
            _ => Err(Stop::Error(QUEUE_ERROR_INVALID_PACKET)),
        }
    }
}
