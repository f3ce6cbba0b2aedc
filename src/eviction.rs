// SPDX-License-Identifier: GPL-2.0

//! Process eviction: what the GPU driver asks when it must move a
//! process's memory (upstream `kfd_process.c`: `evict_process_worker`,
//! `restore_process_worker`, `restore_process_helper`,
//! `signal_eviction_fence`; `kfd_device.c`: `kgd2kfd_quiesce_mm`,
//! `kgd2kfd_resume_mm`, `kgd2kfd_schedule_evict_and_restore_process`).
//!
//! Two ways in:
//!
//! - `kgd2kfd_quiesce_mm` / `kgd2kfd_resume_mm` ([`quiesce_mm`],
//!   [`resume_mm`]): the GPU driver stops and restarts the queues of an
//!   mm's process itself (amdgpu's userptr invalidation, trigger
//!   `USERPTR`), nested like every eviction
//!   (`crate::queue::evict_process`).
//! - Eviction fences (`kgd_kfd_interface.h`, "Process eviction"): each VM
//!   rkfd acquires comes with an eviction fence of the GPU driver (kept in
//!   the pdd, `ProcessDevice::ef`) made with the process's context id
//!   ([`CONTEXT_ID_PRIMARY`]: one process per mm).  When the driver
//!   enables signalling of one (a TTM eviction), the shim's
//!   `kgd2kfd_schedule_evict_and_restore_process` (atomic context,
//!   `shim/rkfd_evict.c`) schedules the eviction work of the process's
//!   [`Registration`], which calls [`Process::evict`] (here, via
//!   `kabi::evict::Evict`): the queues stop on every GPU (SMI
//!   `QUEUE_EVICTION`, trigger `TTM`), then every fence of the process is
//!   signalled (the memory may move).  `PROCESS_RESTORE_TIME_MS` later the
//!   restore work calls [`Process::restore`]: each VM's memory is restored
//!   by kfd2kgd `restore_process_bos`, whose new fence replaces the old
//!   one, then the queues run again (SMI `QUEUE_RESTORE`); a failed
//!   memory restore is retried after `PROCESS_BACK_OFF_TIME_MS`.  The
//!   process's teardown drops the registration first (which cancels and
//!   waits for both works), then signals and puts its fences.
//!
//! Locks: the works run with no lock held and take `Process::inner` (2)
//! like the SVM restore worker; fences are signalled under 2 (the GPU
//! driver's fence lock, then the shim's leaf `rkfd_evict_lock` from the
//! fence callback, come inside it).  `Process::evict` (12, a leaf) holds
//! the registration; it is dropped outside every lock.

use kernel::prelude::*;

use crate::{
    kabi::{
        evict::{Evict, CONTEXT_ID_PRIMARY},
        kgd::MmId,
        log::{kfd_err, kfd_warn},
    },
    process::{self, Process},
    smi,
};

pub(crate) use crate::kabi::evict::Registration;

/// The context id rkfd gives every process's eviction fences (upstream
/// `p->context_id` of a primary process).
pub(crate) const CONTEXT_ID: u16 = CONTEXT_ID_PRIMARY;

/// C: `kgd2kfd_quiesce_mm`: evicts the queues of `mm`'s process for
/// `trigger`; `ESRCH` if `mm` has none.
pub(crate) fn quiesce_mm(mm: MmId, trigger: u32) -> Result {
    let p = process::find_by_mm(mm).ok_or(ESRCH)?;
    crate::queue::evict_process(&p, p.svms.owner(), trigger)
}

/// C: `kgd2kfd_resume_mm`: ends one [`quiesce_mm`].
pub(crate) fn resume_mm(mm: MmId) -> Result {
    let p = process::find_by_mm(mm).ok_or(ESRCH)?;
    crate::queue::restore_process(&p, p.svms.owner())
}

/// C: `kfd_smi_event_queue_restore_rescheduled`: SMI `QUEUE_RESTORE` with
/// the rescheduled flag on every GPU of `mm`'s process; nothing without one.
pub(crate) fn queue_restore_rescheduled(mm: MmId) {
    let Some(p) = process::find_by_mm(mm) else { return };
    let inner = p.inner.lock();
    smi::queue_restore_rescheduled(p.svms.owner(), inner.pdds.iter().map(|pdd| pdd.dev.gpu_id()));
}

impl Evict for Process {
    /// C: `evict_process_worker`'s `kfd_process_evict_queues(p,
    /// KFD_QUEUE_EVICTION_TRIGGER_TTM)` and `signal_eviction_fence`.
    /// rkfd's eviction counts even when a preemption failed (the queue is
    /// off the scheduler then too, `crate::queue::evict_process`), so the
    /// fences are signalled in any case; a process without a bound VM has
    /// no fence (upstream: `p->ef` NULL counts as signalled).
    fn evict(&self) -> Result<bool> {
        if let Err(e) = crate::queue::evict_process(self, self.svms.owner(), smi::QUEUE_EVICTION_TRIGGER_TTM) {
            kfd_err!("Failed to evict queues of process pid {}: {:?}\n", self.pid(), e);
        }
        let inner = self.inner.lock();
        let mut already = true;
        for ef in inner.pdds.iter().filter_map(|p| p.ef.as_ref()) {
            already &= ef.signal();
        }
        Ok(already)
    }

    fn restore_queues(&self) {
        if let Err(e) = crate::queue::restore_process(self, self.svms.owner()) {
            kfd_err!("Failed to restore queues of process pid {}: {:?}\n", self.pid(), e);
        }
    }

    /// C: `restore_process_helper`: each VM's memory first (a failure
    /// leaves the queues evicted and is retried), then the queues.
    fn restore(&self) -> Result {
        {
            let mut inner = self.inner.lock();
            for pdd in inner.pdds.iter_mut() {
                let Some(vm) = pdd.vm.as_ref() else { continue };
                match pdd.dev.kgd.restore_process_bos(vm) {
                    Ok(Some(ef)) => pdd.ef = Some(ef),
                    Ok(None) => {}
                    Err(e) => {
                        kfd_warn!(
                            "Failed to restore BOs of process pid {}, retry after {} ms: {:?}\n",
                            self.pid(),
                            crate::kabi::kgd::PROCESS_BACK_OFF_TIME_MS,
                            e
                        );
                        return Err(e);
                    }
                }
            }
        }
        self.restore_queues();
        Ok(())
    }
}
