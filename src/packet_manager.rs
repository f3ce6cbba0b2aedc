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
//! The runlist IB is a GTT object allocated at start for a runlist of
//! `max_proc_per_quantum` processes and the HWS's compute slots, and
//! replaced by a larger one when a runlist does not fit (upstream
//! allocates one per runlist, `pm_allocate_runlist_ib`); a new runlist is
//! written over it, or the IB replaced, only after the previous one was
//! preempted (`Cpsch::unmap` before `Cpsch::map`).  An over-subscribed
//! runlist (more processes than `max_proc_per_quantum`, more compute
//! queues than the slots: `pm_calc_rlib_size`) holds every process and
//! queue and ends with a RUN_LIST chained to itself, and the first one
//! after a runlist that was not logs upstream's warning once.
//!
//! Lock order: lives in `crate::hws::HwsState`, under
//! `DeviceQueues::hws`.

use kernel::prelude::*;

use crate::{
    device::Device,
    kabi::{kgd::GttMem, log::kfd_warn},
    kernel_queue::KernelQueue,
};

/// `rust/amdgpu-hw`'s driver-side HWS files (`kernel_dqm.rs`): `pm4`,
/// `kernel_queue`, `dqm`.
#[path = "../rust/amdgpu-hw/src/kernel_dqm.rs"]
pub(crate) mod hws_format;
use hws_format::pm4::{
    self, build_runlist_ib, over_subscription, PmFormat, RunList, RunlistError, RunlistLimits, RunlistProcess, SetResources,
};

/// For `hws_format`, which names the generations `super::gfx`.
use crate::gfx;

/// C: `struct packet_manager`.
pub(crate) struct PacketManager {
    /// The runlist IB (`pm->ib_buffer_obj`).
    ib: GttMem,
    /// What `pm_calc_rlib_size` checks, and the MAP_PROCESS layout.
    pub(crate) limits: RunlistLimits,
    /// The last runlist was over-subscribed (`pm->is_over_subscription`).
    over_subscribed: bool,
    /// Dwords of the runlist on the HWS (`pm->ib_size_bytes / 4` while
    /// `pm->allocated`); `None` once it was preempted ([`Self::release`]).
    active_dwords: Option<usize>,
}

impl PacketManager {
    /// C: `pm_init`: the packet set of the device and an IB for a runlist
    /// of `limits.max_proc_per_quantum` processes and `max_queues` queues.
    pub(crate) fn new(dev: &Device, limits: RunlistLimits, max_queues: u32) -> Result<Self> {
        let dwords = limits.max_proc_per_quantum as usize * limits.format.map_process_dwords()
            + max_queues as usize * pm4::MAP_QUEUES_DWORDS
            + pm4::RUNLIST_DWORDS;
        Ok(PacketManager { ib: Self::alloc_ib(dev, dwords)?, limits, over_subscribed: false, active_dwords: None })
    }

    /// A GTT object for an IB of `dwords`.
    fn alloc_ib(dev: &Device, dwords: usize) -> Result<GttMem> {
        let bytes = dwords.checked_mul(4).ok_or(ENOMEM)?.next_multiple_of(4096);
        dev.kgd.alloc_gtt_mem(bytes)
    }

    /// The runlist limits of `dev` under the HWS resources `res`, with
    /// `max_proc_per_quantum` from the module's `hws_max_conc_proc` (C:
    /// `kgd2kfd_device_init`).
    pub(crate) fn limits_of(dev: &Device, res: &SetResources) -> RunlistLimits {
        let vmids = res.vmid_mask.count_ones();
        RunlistLimits {
            max_proc_per_quantum: hws_format::dqm::max_proc_per_quantum(crate::kabi::hws_max_conc_proc(), vmids),
            cp_queues: res.queue_mask.count_ones(),
            xnack_chain: false,
            ext_eng: dev.gfx.hws_sdma_ext_eng(),
            format: PmFormat::of(dev.gfx),
        }
    }

    /// C: `pm_send_runlist`: builds the IB from `processes`
    /// (`pm_create_runlist_ib`, into a larger IB if it does not fit) and
    /// sends a RUN_LIST pointing at it.  Called only with no runlist on
    /// the HWS (the IB may be replaced).
    pub(crate) fn send_runlist(&mut self, dev: &Device, kq: &mut KernelQueue, processes: &[RunlistProcess<'_>]) -> Result {
        let addr = self.ib.gpu_addr();
        let rl = match build_runlist_ib(self.ib.dwords_mut(), addr, processes, &self.limits) {
            Ok(rl) => rl,
            Err(RunlistError::NoSpace { needed }) => {
                // The old IB is not on the HWS: the caller preempted it.
                self.ib = Self::alloc_ib(dev, needed)?;
                let addr = self.ib.gpu_addr();
                build_runlist_ib(self.ib.dwords_mut(), addr, processes, &self.limits).map_err(|_| ENOMEM)?
            }
        };
        let over = rl.over_subscription;
        if over != 0 && !self.over_subscribed {
            // C: the dev_warn of pm_create_runlist_ib.
            let why = |bit: u32, text: &'static str| if over & bit != 0 { text } else { "" };
            kfd_warn!(
                "gpu_id {}: Runlist is getting oversubscribed due to{}{}{}{}. Expect reduced ROCm performance.\n",
                dev.gpu_id(),
                why(over_subscription::PROCESS_COUNT, " too many processes"),
                why(over_subscription::COMPUTE_QUEUE_COUNT, " too many queues"),
                why(over_subscription::GWS_QUEUE_COUNT, " multiple processes using cooperative launch"),
                why(over_subscription::XNACK_CONFLICT, " xnack on/off processes mixed on gfx9")
            );
        }
        self.over_subscribed = over != 0;
        let packet = RunList {
            ib_base: self.ib.gpu_addr(),
            ib_size: u32::try_from(rl.dwords)?,
            chain: false,
            process_cnt: (processes.len() as u32).min(self.limits.max_proc_per_quantum),
        };
        kq.submit(dev, &packet.encode())?;
        self.active_dwords = Some(rl.dwords);
        Ok(())
    }

    /// C: `pm_release_ib`: the runlist was preempted (or the GPU reset);
    /// the IB stays allocated for the next one.
    pub(crate) fn release(&mut self) {
        self.active_dwords = None;
    }

    /// C: `pm_debugfs_runlist`: the runlist on the HWS as `seq_hex_dump(m,
    /// "  ", DUMP_PREFIX_OFFSET, 32, 4, ib, ib_size_bytes, false)` prints
    /// it, or "  No active runlist".
    pub(crate) fn debugfs_runlist(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        let Some(dwords) = self.active_dwords else {
            return writeln!(out, "  No active runlist");
        };
        for row in (0..dwords).step_by(8) {
            write!(out, "  {:08x}:", row * 4)?;
            for i in row..dwords.min(row + 8) {
                write!(out, " {:08x}", self.ib.read_volatile(i).unwrap_or(0))?;
            }
            writeln!(out)?;
        }
        Ok(())
    }
}
