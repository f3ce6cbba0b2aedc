// SPDX-License-Identifier: GPL-2.0

//! GPU interrupts: interrupt-handler ring entries turned into KFD events.
//!
//! C: `kfd_interrupt.c`, `kfd_int_process_v9.c` / `_v10.c` / `_v11.c`
//! (`event_interrupt_wq_v9` / `_v10` / `_v11`), `kfd_events.c`.  The GPU
//! driver passes rkfd each 32-byte SOC15 ring entry as its GPU wrote it
//! (`kgd2kfd_interrupt`); the host crate `rust/amdgpu-hw`'s `ih` (compiled
//! in here as [`ih`]) decodes it as the decoder of the device's family does
//! (chosen by its [`GfxVersion`](crate::gfx::GfxVersion)):
//!
//! - CP end-of-pipe, SDMA traps and SQ messages nobody else takes: the
//!   process's signal events (C: `kfd_signal_event_interrupt(pasid,
//!   context_id, valid_bits)`);
//! - a CP bad opcode of a packet class, or an SQ debug trap naming one
//!   exception (C: `kfd_set_dbg_ev_from_interrupt`): the queue with that
//!   doorbell index is marked stopped (debugfs `hqds`, `rls`) with the
//!   `KGD_QUEUE_ERROR_*` of the exception
//!   (`rules::queue_error_of_exception`), and the process's HW_EXCEPTION
//!   events are set (C: `kfd_signal_hw_exception_event`; upstream routes
//!   these to the debugger or the runtime when one is enabled, which ROCm
//!   5.2.3 never does);
//! - a UTCL2/VMC page fault: a dmesg report in amdgpu's words, an SMI
//!   `VMFAULT` event (C: `kfd_smi_event_update_vmfault`) and the process's
//!   MEMORY events with the fault (C: `kfd_signal_vm_fault_event`);
//! - RAS poison (SDMA ECC, UTCL2 poison, SQ EDC errors): ignored with a
//!   debug line (rkfd has no RAS), as is every entry amdkfd ignores.
//!
//! The VM fault fast path (`kgd2kfd_vmfault_fast_path`, [`FaultFilter`]):
//! a GPU driver asks, in atomic context, before it queues a VM fault that
//! its retry-fault handling could not resolve, whether rkfd wants it; as
//! upstream, only a process's first such fault is delivered (C:
//! `p->gpu_page_fault`), and faults of no process are dropped.
//!
//! Context and locks: entries may come from the GPU driver's engine
//! threads, in any non-atomic context, including while another thread
//! holds `Process::inner` and waits for that engine (`hqd_destroy`).  So
//! this path never takes `Process::inner`: only the pasid lookup (the
//! process table; the PASID is the one the GPU driver gave the process's
//! VM on that device, `ProcessDevice::pasid`), the device's queue lock
//! (`queue::DeviceQueues`, a leaf) and the process's events lock (a leaf).
//! See `docs/design.md`.

use kernel::{
    prelude::*,
    sync::{
        atomic::{Atomic, Full, Relaxed},
        Arc,
    },
};

use crate::{
    device::Device,
    event::{vm_fault_data, VmFault},
    kabi::{
        kgd::IhRingEntry,
        log::{kfd_err, kfd_info},
    },
    process::Process,
    queue::{self, rules},
};

/// SOC15 IH entries and the KFD payloads, `rust/amdgpu-hw/src/ih.rs`, with
/// the generated constants it names (`rust/amdgpu-hw/src/kernel_ih.rs`).
#[path = "../rust/amdgpu-hw/src/kernel_ih.rs"]
mod ih_format;
use ih_format::ih;

use crate::gfx;

/// The process whose GPU VM on `dev` has `pasid` (C:
/// `kfd_lookup_process_by_pasid`): the PASID the GPU driver gave that VM,
/// different on each GPU; `None` for a process that has exited or gave
/// the VM back (its late entries are dropped).
fn find_by_pasid(dev: &Device, pasid: u32) -> Option<Arc<Process>> {
    crate::process::find_by_pasid(dev.gpu_id(), pasid)
}

/// PASIDs a GPU driver gives VMs: amdgpu's are 16 bits
/// (`AMDGPU_PASID_BITS`... `amdgpu_pasid_alloc(16)`), as the IH entry's
/// PASID field is.
const PASIDS: usize = 1 << 16;
/// Words of one PASID bitmap.
const PASID_WORDS: usize = PASIDS / 64;

/// Per device, which PASIDs belong to a process's VM on it (`bound`) and
/// which of those had a VM fault through the fast path (`faulted`, C: the
/// process's `gpu_page_fault`), for `kgd2kfd_vmfault_fast_path`, which a
/// GPU driver calls in atomic context (hard IRQ, under RCU): plain atomic
/// bitmaps, no lock and no allocation, 16 KiB a device.  A pdd's PASID is
/// bound when `ACQUIRE_VM` gives it one and unbound at teardown
/// (`ProcessDevice::set_pasid`), both clearing its `faulted` bit, so a
/// PASID the GPU driver reuses starts afresh.
///
/// Upstream's flag is per process, found by a lookup that takes a
/// reference (`kfd_lookup_process_by_pasid`); rkfd's processes cannot be
/// found in atomic context, and its PASIDs are per device (each GPU's VM
/// has its own), so the flag here is per process and device: a process
/// faulting on two GPUs gets one fault delivered from each.
pub(crate) struct FaultFilter {
    bound: KVec<Atomic<u64>>,
    faulted: KVec<Atomic<u64>>,
}

impl FaultFilter {
    /// Empty bitmaps (device probe).
    pub(crate) fn new() -> Result<Self> {
        let words = || -> Result<KVec<Atomic<u64>>> {
            let mut v = KVec::with_capacity(PASID_WORDS, GFP_KERNEL)?;
            for _ in 0..PASID_WORDS {
                v.push(Atomic::new(0), GFP_KERNEL)?;
            }
            Ok(v)
        };
        Ok(FaultFilter { bound: words()?, faulted: words()? })
    }

    /// The word and bit of `pasid`; `None` past the 16-bit range.
    fn slot(pasid: u32) -> Option<(usize, u64)> {
        let p = pasid as usize;
        (p < PASIDS).then(|| (p / 64, 1u64 << (p % 64)))
    }

    /// Sets (`on`) or clears `pasid`'s bit in `words`; whether it was set.
    /// A compare-and-exchange loop: safe in any context.
    fn update(words: &[Atomic<u64>], pasid: u32, on: bool) -> bool {
        let Some((w, bit)) = Self::slot(pasid) else { return false };
        let word = &words[w];
        let mut old = word.load(Relaxed);
        loop {
            let new = if on { old | bit } else { old & !bit };
            if new == old {
                return old & bit != 0;
            }
            match word.cmpxchg(old, new, Full) {
                Ok(_) => return old & bit != 0,
                Err(cur) => old = cur,
            }
        }
    }

    /// `pasid` is a process's VM on this device now, with no fault seen.
    pub(crate) fn bind(&self, pasid: u32) {
        Self::update(&self.faulted, pasid, false);
        Self::update(&self.bound, pasid, true);
    }

    /// `pasid` is no process's VM on this device any more.
    pub(crate) fn unbind(&self, pasid: u32) {
        Self::update(&self.bound, pasid, false);
        Self::update(&self.faulted, pasid, false);
    }

    /// `kgd2kfd_vmfault_fast_path` (C: its body after the ring check):
    /// `true` to drop the fault (no process has `pasid` on this device, or
    /// its process already had a fault delivered here), `false` to deliver
    /// it (the first: marked, so the next is dropped).  A PASID past 16
    /// bits is delivered (the interrupt path decides).  Any context.
    pub(crate) fn fast_path(&self, pasid: u32) -> bool {
        let Some((w, bit)) = Self::slot(pasid) else { return false };
        if self.bound[w].load(Relaxed) & bit == 0 {
            return true;
        }
        // rkfd has no debugger (upstream delivers every fault while one
        // is attached: `p->debug_trap_enabled`).
        Self::update(&self.faulted, pasid, true)
    }
}

/// `kgd2kfd_interrupt`: one ring entry from `dev`.
pub(crate) fn handle(dev: &Device, raw: &IhRingEntry) {
    let entry = ih::IhEntry::decode(raw);
    let pasid = u32::from(entry.pasid);
    // No process: the ISRs drop these.
    if pasid == 0 {
        return;
    }
    let Some(irq) = ih::decode_kfd(dev.gfx, &entry) else {
        return;
    };
    if let Some((doorbell_id, ecode)) = irq.queue_exception() {
        queue_exception(dev, pasid, doorbell_id, ecode);
        return;
    }
    match irq {
        ih::KfdInterrupt::Signal { context_id, valid_bits, .. } => signal(dev, pasid, context_id, valid_bits),
        // Not the debugger's (rkfd has none): the signal upstream sends
        // when `kfd_set_dbg_ev_from_interrupt` does not take it.
        ih::KfdInterrupt::SqDebugTrap { signal: (id, bits), .. }
        | ih::KfdInterrupt::SqError { poison: false, signal: (id, bits), .. }
        | ih::KfdInterrupt::SqOther { signal: (id, bits), .. } => signal(dev, pasid, id, bits),
        ih::KfdInterrupt::SqError { poison: true, .. } | ih::KfdInterrupt::Poison => {
            // C: event_interrupt_poison_consumption_v9/_v11 (RAS).
            kernel::pr_debug!("rkfd: RAS poison interrupt for pasid {} ignored (no RAS)\n", pasid);
        }
        // A bad opcode of no packet class (no queue exception): ignored.
        ih::KfdInterrupt::CpBadOpcode { .. } => {}
        ih::KfdInterrupt::VmFault(f) => vm_fault(dev, pasid, &entry, &f),
    }
}

/// C: `kfd_signal_event_interrupt`.
fn signal(dev: &Device, pasid: u32, partial_id: u32, valid_bits: u32) {
    if let Some(p) = find_by_pasid(dev, pasid) {
        p.events.signal_from_interrupt(partial_id, valid_bits, true);
    }
}

/// A queue stopped with KFD exception `ecode` (C:
/// `kfd_set_dbg_ev_from_interrupt` with no debugger).
fn queue_exception(dev: &Device, pasid: u32, doorbell_id: u32, ecode: u32) {
    let Some(p) = find_by_pasid(dev, pasid) else { return };
    let reason = rules::queue_error_of_exception(ecode);
    let Some(queue_id) = queue::mark_error(dev, &p, doorbell_id, reason) else {
        // A queue destroyed before its interrupt was handled.
        return;
    };
    if p.events.signal_hw_exception() == 0 {
        kfd_info!("Process pid {} got unhandled exception (queue {} error {})\n", p.pid(), queue_id, reason);
    }
}

/// A GPU VM fault (C: the VMC/UTCL2 branch of `event_interrupt_wq_v9`).
fn vm_fault(dev: &Device, pasid: u32, entry: &ih::IhEntry, f: &ih::VmFault) {
    let p = find_by_pasid(dev, pasid);
    let addr = f.address();
    // amdgpu's report (gmc_v9_0_process_interrupt).
    kfd_err!(
        "[gfxhub] {} page fault (src_id:{} ring:{} vmid:{} pasid:{}, for process pid {})\n",
        if f.retry { "retry" } else { "no-retry" },
        entry.source_id,
        entry.ring_id,
        entry.vmid,
        pasid,
        p.as_ref().map_or(-1, |p| p.pid())
    );
    kfd_err!(
        "  in page starting at address 0x{:016x} from client {} ({} access)\n",
        addr,
        dev.gpu_id(),
        if f.exec {
            "execute"
        } else if f.write {
            "write"
        } else {
            "read"
        }
    );
    let Some(p) = p else { return };
    crate::smi::vm_fault(dev, &p);
    let fault = VmFault {
        page_addr: addr >> kernel::page::PAGE_SHIFT,
        prot_valid: false,
        prot_write: f.write,
        prot_exec: f.exec,
    };
    let data = vm_fault_data(dev.gpu_id(), Some(&fault));
    p.events.signal_memory_exception(&data);
}

#[kunit_tests(rkfd_interrupt)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_delivers_a_processs_first_fault_only() -> Result {
        let f = FaultFilter::new()?;
        // No process: dropped (upstream: no kfd_process for the PASID).
        assert!(f.fast_path(0x8001));
        f.bind(0x8001);
        f.bind(0x8002);
        // The first fault of each PASID is delivered, the next dropped.
        assert!(!f.fast_path(0x8001));
        assert!(f.fast_path(0x8001));
        assert!(f.fast_path(0x8001));
        assert!(!f.fast_path(0x8002));
        assert!(f.fast_path(0x8002));
        // Neighbouring bits of the same word are untouched.
        assert!(f.fast_path(0x8000));
        assert!(f.fast_path(0x8003));
        // Unbound (teardown), then reused by a new VM: a fresh first fault.
        f.unbind(0x8001);
        assert!(f.fast_path(0x8001));
        f.bind(0x8001);
        assert!(!f.fast_path(0x8001));
        assert!(f.fast_path(0x8001));
        // The word edges and the range's end.
        for pasid in [1u32, 63, 64, 0xffff] {
            f.bind(pasid);
            assert!(!f.fast_path(pasid));
            assert!(f.fast_path(pasid));
        }
        // Past 16 bits: nothing is known, delivered (the slow path decides).
        f.bind(0x1_0000);
        assert!(!f.fast_path(0x1_0000));
        assert!(!f.fast_path(0x1_0000));
        Ok(())
    }
}
