// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The HWS half of the device queue manager: when the driver sends a
//! runlist, how it preempts (UNMAP_QUEUES + QUERY_STATUS fence), what a
//! fence timeout does, and the policy choices of `sched_policy`.
//!
//! C: `kfd_device_queue_manager.c`'s `start_cpsch` / `stop_cpsch`,
//! `map_queues_cpsch`, `unmap_queues_cpsch`, `execute_queues_cpsch`,
//! `kfd_hws_hang` and the `qpd->evicted` counting of
//! `evict_process_queues_cpsch` / `restore_process_queues_cpsch`;
//! `kfd_module.c`'s `sched_policy` check; `pqm_create_queue`'s
//! no-over-subscription refusal (`kfd_process_queue_manager.c`).  The
//! driver supplies the HIQ and the runlist through [`Hiq`]; this file
//! holds the state (`active_runlist`, `is_hws_hang`, the counts) and the
//! order of operations.

use super::pm4::{preemption, SetResources, UnmapFilter, UnmapQueues, FENCE_COMPLETED, FENCE_INIT};

/// C: `enum kfd_sched_policy` (module parameter `sched_policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedPolicy {
    /// `KFD_SCHED_POLICY_HWS` (0, the default): runlists on the HIQ,
    /// over-subscription allowed (chained runlists).
    Hws,
    /// `KFD_SCHED_POLICY_HWS_NO_OVERSUBSCRIPTION` (1): runlists, but a
    /// compute queue that would over-subscribe is refused.
    HwsNoOversubscription,
    /// `KFD_SCHED_POLICY_NO_HWS` (2): the driver loads MQDs into HQDs
    /// itself (`hqd_load`).
    NoHws,
}

impl SchedPolicy {
    /// The policy of a `sched_policy` value; `None` outside 0..=2 (C:
    /// `kfd_init` refuses to load).
    pub const fn from_param(v: i32) -> Option<SchedPolicy> {
        match v {
            0 => Some(SchedPolicy::Hws),
            1 => Some(SchedPolicy::HwsNoOversubscription),
            2 => Some(SchedPolicy::NoHws),
            _ => None,
        }
    }

    /// The runlist path (`sched_policy != KFD_SCHED_POLICY_NO_HWS`).
    pub const fn uses_hws(self) -> bool {
        !matches!(self, SchedPolicy::NoHws)
    }

    /// C: `pqm_create_queue`: a new compute queue is refused (`-EPERM`)
    /// under policy 1 when the processes already fill the KFD VMIDs or the
    /// active queues the HQD slots.
    pub const fn refuses_compute_queue(self, processes: u32, vmids: u32, active_queues: u32, cp_queues: u32) -> bool {
        matches!(self, SchedPolicy::HwsNoOversubscription) && (processes >= vmids || active_queues >= cp_queues)
    }
}

/// The HWS's limits as rkfd's runlist respects them: the KFD VMIDs (the
/// processes one runlist maps at once, `max_proc_per_quantum`) and the
/// HQD slots of SET_RESOURCES' `queue_mask` (`get_cp_queues_num`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwsTables {
    /// `vmid_num_kfd`.
    pub vmids: u32,
    /// `get_cp_queues_num(dqm)`.
    pub cp_queues: u32,
}

impl HwsTables {
    /// The limits of `res` (its `vmid_mask` and `queue_mask` bits).
    pub fn of(res: &SetResources) -> HwsTables {
        HwsTables { vmids: res.vmid_mask.count_ones(), cp_queues: res.queue_mask.count_ones() }
    }

    /// The limits of the driver's shared resources, as upstream reads them
    /// whatever the scheduler (HWS or MES): `vmid_num_kfd` is the
    /// `compute_vmid_bitmap`'s bits, `get_cp_queues_num` the
    /// `cp_queue_bitmap`'s.  The same as [`HwsTables::of`] the
    /// SET_RESOURCES made from them, on a GPU that has no HWS to send it to.
    pub fn of_shared(shared: &super::pm4::SharedResources) -> HwsTables {
        HwsTables { vmids: shared.compute_vmid_bitmap.count_ones(), cp_queues: shared.cp_queue_bitmap.count_ones() }
    }
}

/// C: `kgd2kfd_device_init`'s `max_proc_per_quantum`: the processes one
/// runlist maps at once, `hws_max_conc_proc` (the module parameter; < 0:
/// unset) bounded by the KFD VMIDs.
pub const fn max_proc_per_quantum(hws_max_conc_proc: i32, vmid_num_kfd: u32) -> u32 {
    if hws_max_conc_proc >= 0 && (hws_max_conc_proc as u32) < vmid_num_kfd {
        hws_max_conc_proc as u32
    } else {
        vmid_num_kfd
    }
}

/// Upstream's default `max_num_of_queues_per_device`
/// (`KFD_MAX_NUM_OF_QUEUES_PER_DEVICE_DEFAULT`): the queues of all
/// processes one device takes; `create_queue_cpsch` refuses the next with
/// `-EPERM`.  It is also what one runlist maps at most.
pub const MAX_NUM_OF_QUEUES_PER_DEVICE: u32 = 4096;

/// Why a queue may not join the runlist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Policy 1: the queue would over-subscribe the HWS (upstream
    /// `pqm_create_queue`'s `-EPERM`).  Policy 0 refuses no queue for
    /// over-subscription: a runlist past the HWS's processes or slots is
    /// chained and marked over-subscribed ([`super::pm4::build_runlist_ib`]).
    Oversubscription,
    /// The device already has [`MAX_NUM_OF_QUEUES_PER_DEVICE`] queues
    /// (upstream `create_queue_cpsch`'s `-EPERM`), under every HWS policy.
    DeviceQueueLimit,
}

/// Whether the device takes one more queue when it has `device_queues`
/// (C: `create_queue_cpsch`'s `dqm->total_queue_count >=
/// max_num_of_queues_per_device`).
pub const fn admit_on_device(device_queues: u32) -> Result<(), Refusal> {
    if device_queues >= MAX_NUM_OF_QUEUES_PER_DEVICE {
        return Err(Refusal::DeviceQueueLimit);
    }
    Ok(())
}

/// Whether a new queue may join the runlist (C: the policy-1 check of
/// `pqm_create_queue`).  `processes`: processes with queues on the
/// device, the new queue's included (upstream registers it first);
/// `active_queues`: the runlist's active queues; `compute`: a
/// compute (not SDMA) queue.
pub const fn admit(policy: SchedPolicy, tables: HwsTables, compute: bool, processes: u32, active_queues: u32) -> Result<(), Refusal> {
    if compute && policy.refuses_compute_queue(processes, tables.vmids, active_queues, tables.cp_queues) {
        return Err(Refusal::Oversubscription);
    }
    Ok(())
}

/// How many different processes `pasids` (one per queue, in any order)
/// name, in O(n log n) (C keeps `dqm->processes_count` as processes
/// register; rkfd counts its queue list, up to
/// [`MAX_NUM_OF_QUEUES_PER_DEVICE`] entries, at each change).  Sorts
/// `pasids` in place.
pub fn process_count<T: Ord>(pasids: &mut [T]) -> u32 {
    pasids.sort_unstable();
    let distinct = pasids.windows(2).filter(|w| w[0] != w[1]).count() + usize::from(!pasids.is_empty());
    u32::try_from(distinct).unwrap_or(u32::MAX)
}

/// [`process_count`] with the process `new` counted too (once, whether
/// or not it already has queues): what [`admit`] takes, as upstream
/// registers the new queue's process first.
pub fn process_count_with<T: Ord>(pasids: &mut [T], new: &T) -> u32 {
    let n = process_count(pasids);
    n + u32::from(pasids.binary_search(new).is_err())
}

/// The HQD slots the HWS gets for a MEC of `pipes` pipes with
/// `queues_per_pipe` HQDs each: the first MEC's first 8 queues of each
/// pipe (SET_RESOURCES' `queue_mask` names 8 queues a pipe:
/// `amdgpu_queue_mask_bit_to_set_resource_bit`) that the GPU driver does
/// not keep (`reserved`: bit `pipe * queues_per_pipe + queue` of the first
/// 128 slots, the device interface's `reserved_hqds`; upstream leaves
/// them out of `kgd2kfd_shared_resources.cp_queue_bitmap`), as
/// [`super::pm4::SharedResources`] with `compute_vmid_bitmap`.
pub fn hws_shared_resources(compute_vmid_bitmap: u32, pipes: u32, queues_per_pipe: u32, reserved: u128) -> super::pm4::SharedResources {
    let qpp = queues_per_pipe.min(8);
    let pipes = pipes.min(if qpp == 0 { 0 } else { 128 / qpp });
    let mut cp_queue_bitmap = 0u128;
    for pipe in 0..pipes {
        for queue in 0..qpp {
            // `pipe * queues_per_pipe + queue` in u64: no overflow path.
            let slot = u64::from(pipe) * u64::from(queues_per_pipe) + u64::from(queue);
            if slot >= 128 || reserved >> slot & 1 == 0 {
                cp_queue_bitmap |= 1u128 << (pipe * qpp + queue);
            }
        }
    }
    super::pm4::SharedResources { compute_vmid_bitmap, cp_queue_bitmap, num_queue_per_pipe: qpp, num_pipe_per_mec: pipes }
}

/// What the driver gives the scheduler logic.
pub trait Hiq {
    /// The driver's error type.
    type Error;
    /// Writes `packets` to the HIQ and rings its doorbell
    /// (`kq_acquire_packet_buffer` + `kq_submit_packet`).
    fn submit(&mut self, packets: &[u32]) -> Result<(), Self::Error>;
    /// Sets the preemption fence (`*dqm->fence_addr = v`).
    fn set_fence(&mut self, value: u64);
    /// Waits for the fence to become `value` (`amdkfd_fence_wait_timeout`
    /// with `queue_preemption_timeout_ms`); false on timeout.
    fn wait_fence(&mut self, value: u64) -> bool;
    /// Builds the runlist IB from the active queues and sends its RUN_LIST
    /// (`pm_send_runlist`).
    fn send_runlist(&mut self) -> Result<(), Self::Error>;
    /// Frees the runlist IB (`pm_release_ib`).
    fn release_ib(&mut self);
    /// The HWS hung (`kfd_hws_hang`): schedule a GPU reset.
    fn hws_hang(&mut self);
    /// The error for "the scheduler is hung or resetting" (`-EIO`).
    fn io_error(&self) -> Self::Error;
    /// The error for a preemption that timed out (`-ETIME`).
    fn timeout_error(&self) -> Self::Error;
}

/// The HWS state of one device's queue manager (C: the `sched_running`,
/// `sched_halt`, `active_runlist`, `is_hws_hang` and count fields of
/// `struct device_queue_manager`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpsch {
    sched_running: bool,
    sched_halt: bool,
    active_runlist: bool,
    is_hws_hang: bool,
    /// `active_queue_count`: queues in the next runlist.
    pub active_queue_count: u32,
    /// `processes_count`: processes registered with the device.
    pub processes_count: u32,
    /// `pm_use_ext_eng` for UNMAP_QUEUES.
    pub ext_eng: bool,
    /// The preemption fence's GPU address.
    pub fence_addr: u64,
}

impl Cpsch {
    /// A stopped scheduler.
    pub fn new(fence_addr: u64, ext_eng: bool) -> Cpsch {
        Cpsch { fence_addr, ext_eng, ..Cpsch::default() }
    }

    /// A runlist is on the HWS.
    pub fn active_runlist(&self) -> bool {
        self.active_runlist
    }

    /// The HWS is considered hung until [`Cpsch::reset_done`].
    pub fn is_hws_hang(&self) -> bool {
        self.is_hws_hang
    }

    /// C: `start_cpsch`: SET_RESOURCES (`set_sched_resources`), then the
    /// scheduler runs and the current queues are mapped.
    pub fn start<H: Hiq>(&mut self, hiq: &mut H, res: &SetResources) -> Result<(), H::Error> {
        hiq.submit(&res.encode())?;
        self.sched_running = true;
        self.is_hws_hang = false;
        self.execute(hiq, UnmapFilter::DynamicQueues)
    }

    /// The scheduler runs (started, not stopped; it may be halted).
    pub fn is_running(&self) -> bool {
        self.sched_running
    }

    /// Scheduling is halted ([`Cpsch::halt`]).
    pub fn is_halted(&self) -> bool {
        self.sched_halt
    }

    /// C: `halt_cpsch` (`kgd2kfd_stop_sched`): unmap everything (unless
    /// hung) and send no runlist until [`Cpsch::unhalt`].  Nothing if the
    /// scheduler is stopped or already halted (upstream WARNs on the
    /// latter).
    pub fn halt<H: Hiq>(&mut self, hiq: &mut H) -> Result<(), H::Error> {
        if !self.sched_running || self.sched_halt {
            return Ok(());
        }
        let r = if self.is_hws_hang { Ok(()) } else { self.unmap(hiq, UnmapFilter::AllQueues, false) };
        self.sched_halt = true;
        r
    }

    /// C: `unhalt_cpsch` (`kgd2kfd_start_sched`): the runlist goes out
    /// again.  Nothing if not halted (or stopped).
    pub fn unhalt<H: Hiq>(&mut self, hiq: &mut H) -> Result<(), H::Error> {
        if !self.sched_running || !self.sched_halt {
            return Ok(());
        }
        self.sched_halt = false;
        self.execute(hiq, UnmapFilter::DynamicQueues)
    }

    /// C: `stop_cpsch`: unmap everything (unless hung), stop.
    pub fn stop<H: Hiq>(&mut self, hiq: &mut H) {
        if !self.is_hws_hang {
            // As upstream, a failure here is already reported as a hang.
            let _ = self.unmap(hiq, UnmapFilter::AllQueues, false);
        }
        self.sched_running = false;
    }

    /// C: `map_queues_cpsch`: send a runlist if none is active and there
    /// is something to run.
    pub fn map<H: Hiq>(&mut self, hiq: &mut H) -> Result<(), H::Error> {
        if !self.sched_running || self.sched_halt || self.active_runlist || self.active_queue_count == 0 || self.processes_count == 0 {
            return Ok(());
        }
        hiq.send_runlist()?;
        self.active_runlist = true;
        Ok(())
    }

    /// C: `unmap_queues_cpsch`: UNMAP_QUEUES and a QUERY_STATUS fence; a
    /// fence that does not come marks the HWS hung and schedules a reset
    /// (`-ETIME`); while hung every call fails with `-EIO`.
    pub fn unmap<H: Hiq>(&mut self, hiq: &mut H, filter: UnmapFilter, reset: bool) -> Result<(), H::Error> {
        if !self.sched_running || !self.active_runlist {
            return Ok(());
        }
        if self.is_hws_hang {
            return Err(hiq.io_error());
        }
        hiq.set_fence(FENCE_INIT);
        hiq.submit(&preemption(&UnmapQueues::new(filter, reset, self.ext_eng), self.fence_addr))?;
        if !hiq.wait_fence(FENCE_COMPLETED) {
            self.is_hws_hang = true;
            hiq.hws_hang();
            return Err(hiq.timeout_error());
        }
        hiq.release_ib();
        self.active_runlist = false;
        Ok(())
    }

    /// C: `execute_queues_cpsch`: preempt what `filter` selects, then send
    /// the runlist of what is active now.
    pub fn execute<H: Hiq>(&mut self, hiq: &mut H, filter: UnmapFilter) -> Result<(), H::Error> {
        if self.is_hws_hang {
            return Err(hiq.io_error());
        }
        self.unmap(hiq, filter, false)?;
        self.map(hiq)
    }

    /// After the GPU reset `kfd_hws_hang` scheduled: the HWS starts over
    /// (no runlist; the driver calls [`Cpsch::start`] again).
    pub fn reset_done(&mut self) {
        self.is_hws_hang = false;
        self.active_runlist = false;
        self.sched_running = false;
    }
}

/// C: `qpd->evicted`, the eviction reference count of one process on one
/// device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Evictions(u32);

impl Evictions {
    /// `evict_process_queues_cpsch`: true for the first eviction (the
    /// caller deactivates the process's queues and runs
    /// [`Cpsch::execute`]), false if already evicted.
    /// The count saturates (no overflow panic in the kernel): 2^32 - 1
    /// nested evictions are beyond any caller's pairing.
    pub fn evict(&mut self) -> bool {
        self.0 = self.0.saturating_add(1);
        self.0 == 1
    }

    /// `restore_process_queues_cpsch`: true for the last restore (the
    /// caller reactivates the queues and runs [`Cpsch::execute`]); false
    /// while evictions remain, or if not evicted at all (upstream WARNs;
    /// nothing to do).
    pub fn restore(&mut self) -> bool {
        match self.0 {
            0 => false,
            1 => {
                self.0 = 0;
                true
            }
            _ => {
                self.0 -= 1;
                false
            }
        }
    }

    /// The process's queues are evicted.
    pub fn is_evicted(&self) -> bool {
        self.0 > 0
    }
}

#[cfg(test)]
mod tests;
