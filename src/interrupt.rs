// SPDX-License-Identifier: GPL-2.0

//! GPU interrupts: decoded interrupt-handler ring entries
//! (`struct kgd_ih_entry`) turned into KFD events.
//!
//! C: `kfd_interrupt.c`, `kfd_int_process_v9.c` / `kfd_int_process_v11.c`
//! (`event_interrupt_wq_v9`), `kfd_events.c`.  The GPU driver decodes its
//! ring itself and passes rkfd one entry per interrupt
//! (`kgd2kfd_interrupt`):
//!
//! - `KGD_IH_SIGNAL` (EOP, RELEASE_MEM, SDMA trap): the process's signal
//!   events (C: `kfd_signal_event_interrupt(pasid, context_id, 32, true)`);
//! - `KGD_IH_QUEUE_ERROR`: the queue is marked stopped (debugfs `hqds`,
//!   `rls`) and the process's HW_EXCEPTION events are set (C:
//!   `kfd_signal_hw_exception_event`; upstream routes CP bad-opcode errors
//!   to the debugger or the runtime when one is enabled, which ROCm 5.2.3
//!   never does);
//! - `KGD_IH_VM_FAULT`: a dmesg report in amdgpu's words, an SMI `VMFAULT`
//!   event (C: `kfd_smi_event_update_vmfault`) and the process's MEMORY
//!   events with the fault (C: `kfd_signal_vm_fault_event`).
//!
//! Context and locks: entries may come from the GPU driver's engine
//! threads, in any non-atomic context, including while another thread
//! holds `Process::inner` and waits for that engine (`hqd_destroy`).  So
//! this path never takes `Process::inner`: only the pasid lookup (the
//! process table), the device's queue lock (`queue::DeviceQueues`, a leaf)
//! and the process's events lock (a leaf).  See `docs/design.md`.

use kernel::sync::Arc;

use crate::{
    device::Device,
    event::{vm_fault_data, VmFault},
    kabi::{
        kgd::IhEntry,
        log::{kfd_err, kfd_info},
    },
    process::Process,
    queue::{self, rules},
};

/// The process whose GPU VM has `pasid` (C: `kfd_lookup_process_by_pasid`);
/// `None` for a process that has exited (its late entries are dropped).
fn find_by_pasid(_dev: &Device, pasid: u32) -> Option<Arc<Process>> {
    crate::process::find_by_pasid(pasid)
}

/// `kgd2kfd_interrupt`: one decoded entry from `dev`.
pub(crate) fn handle(dev: &Device, entry: &IhEntry) {
    let Some(irq) = rules::decode_interrupt(entry.source, entry.pasid, entry.context_id, entry.data, entry.addr) else {
        return;
    };
    match irq {
        rules::Interrupt::Signal { pasid, event_id } => {
            if let Some(p) = find_by_pasid(dev, pasid) {
                p.events.signal_from_interrupt(event_id, rules::SIGNAL_VALID_ID_BITS, true);
            }
        }
        rules::Interrupt::QueueError { pasid, queue_id, reason } => {
            let Some(p) = find_by_pasid(dev, pasid) else { return };
            if !queue::mark_error(dev, &p, queue_id, reason) {
                // A queue destroyed before its interrupt was handled.
                return;
            }
            if p.events.signal_hw_exception() == 0 {
                kfd_info!("Process pid {} got unhandled exception (queue {} error {})\n", p.pid(), queue_id, reason);
            }
        }
        rules::Interrupt::VmFault { pasid, addr, write, exec, no_retry } => {
            let p = find_by_pasid(dev, pasid);
            // amdgpu's report (gmc_v9_0_process_interrupt).
            kfd_err!(
                "[gfxhub] {} page fault (src_id:0 ring:0 vmid:0 pasid:{}, for process pid {})\n",
                if no_retry { "no-retry" } else { "retry" },
                pasid,
                p.as_ref().map_or(-1, |p| p.pid())
            );
            kfd_err!(
                "  in page starting at address 0x{:016x} from client {} ({} access)\n",
                addr & !0xfff,
                dev.gpu_id(),
                if exec {
                    "execute"
                } else if write {
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
                prot_write: write,
                prot_exec: exec,
            };
            let data = vm_fault_data(dev.gpu_id(), Some(&fault));
            p.events.signal_memory_exception(&data);
        }
    }
}
