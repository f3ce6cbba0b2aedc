// SPDX-License-Identifier: GPL-2.0

//! The packet manager: runlists for the HWS, written to the HIQ
//! ([`KernelQueue`]); SET_RESOURCES and the preemption packets are sent by
//! the host crate's `Cpsch` through `crate::hws`.
//!
//! C: `kfd_packet_manager.c` (`pm_init`,
//! `pm_create_runlist_ib`, `pm_send_runlist`, `pm_release_ib`) and
//! `kfd_packet_manager_v9.c`.  The packet formats, the runlist IB layout
//! and its over-subscription rules are the host crate's `pm4.rs`
//! (`rust/amdgpu-hw`, layouts generated from `kfd_pm4_headers_ai.h`,
//! host-tested); this file owns the IB's memory and sends.
//!
//! The runlist IB is one GTT object allocated at start for the largest
//! runlist the HWS takes (upstream allocates one per runlist,
//! `pm_allocate_runlist_ib`); a new runlist is written over it only after
//! the previous one was preempted (`Cpsch::unmap` before `Cpsch::map`).
//!
//! Lock order: lives in `crate::hws::HwsState`, under
//! `DeviceQueues::hws`.

use kernel::prelude::*;

use crate::{device::Device, kabi::kgd::GttMem, kernel_queue::KernelQueue};

/// `rust/amdgpu-hw`'s driver-side HWS files (`kernel_dqm.rs`): `pm4`,
/// `kernel_queue`, `dqm`.
#[path = "../rust/amdgpu-hw/src/kernel_dqm.rs"]
pub(crate) mod hws_format;
use hws_format::pm4::{self, build_runlist_ib, PmFormat, RunList, RunlistLimits, RunlistProcess, SetResources};

/// For `hws_format`, which names the generations `super::gfx`.
use crate::gfx;

/// C: `struct packet_manager`.
pub(crate) struct PacketManager {
    /// The runlist IB (`pm->ib_buffer_obj`).
    ib: GttMem,
    /// What `pm_calc_rlib_size` checks, and the MAP_PROCESS layout.
    pub(crate) limits: RunlistLimits,
}

impl PacketManager {
    /// C: `pm_init`: the packet set of the device and an IB for a runlist
    /// of `limits.max_proc_per_quantum` processes and `max_queues` queues.
    pub(crate) fn new(dev: &Device, limits: RunlistLimits, max_queues: u32) -> Result<Self> {
        let dwords = limits.max_proc_per_quantum as usize * limits.format.map_process_dwords()
            + max_queues as usize * pm4::MAP_QUEUES_DWORDS
            + pm4::RUNLIST_DWORDS;
        let bytes = (dwords * 4).next_multiple_of(4096);
        Ok(PacketManager { ib: dev.kgd.alloc_gtt_mem(bytes)?, limits })
    }

    /// The runlist limits of `dev` under the HWS resources `res`.
    pub(crate) fn limits_of(dev: &Device, res: &SetResources) -> RunlistLimits {
        RunlistLimits {
            max_proc_per_quantum: res.vmid_mask.count_ones(),
            cp_queues: res.queue_mask.count_ones(),
            xnack_chain: false,
            ext_eng: dev.gfx.hws_sdma_ext_eng(),
            format: PmFormat::of(dev.gfx),
        }
    }

    /// C: `pm_send_runlist`: builds the IB from `processes`
    /// (`pm_create_runlist_ib`) and sends a RUN_LIST pointing at it.
    /// `ENOMEM` if it does not fit the IB (the caller keeps runlists within
    /// the limits it was made for).
    pub(crate) fn send_runlist(&mut self, dev: &Device, kq: &mut KernelQueue, processes: &[RunlistProcess<'_>]) -> Result {
        let ib_addr = self.ib.gpu_addr();
        let rl = build_runlist_ib(self.ib.dwords_mut(), ib_addr, processes, &self.limits).map_err(|_| ENOMEM)?;
        if rl.over_subscription != 0 {
            // Upstream logs this at debug level too ("Over subscribed runlist").
            kernel::pr_debug!("rkfd: over-subscribed runlist (0x{:x})\n", rl.over_subscription);
        }
        let packet = RunList {
            ib_base: ib_addr,
            ib_size: u32::try_from(rl.dwords)?,
            chain: false,
            process_cnt: (processes.len() as u32).min(self.limits.max_proc_per_quantum),
        };
        kq.submit(dev, &packet.encode())
    }
}
