// SPDX-License-Identifier: GPL-2.0

//! The HWS half of the device queue manager (`sched_policy` 0 and 1): the
//! device's queues reach the GPU as runlists on the HIQ instead of
//! `hqd_load`.
//!
//! C: `kfd_device_queue_manager.c`'s cpsch path: `initialize_cpsch`,
//! `start_cpsch` / `stop_cpsch`, `create_queue_cpsch`,
//! `destroy_queue_cpsch`, `update_queue` (cpsch branch),
//! `execute_queues_cpsch`, `map_queues_cpsch`, `unmap_queues_cpsch`,
//! `set_sched_resources`; `pqm_create_queue`'s policy-1 check.  The order
//! of operations and the state (`active_runlist`, `is_hws_hang`, the
//! counts) are the host crate's `dqm.rs` ([`Cpsch`], host-tested against
//! the firmware model); this file gives it the HIQ ([`KernelQueue`]) and
//! the runlist ([`PacketManager`]) and keeps the list of queues the
//! runlist is built from.
//!
//! Every change goes as upstream's `execute_queues_cpsch`: UNMAP_QUEUES of
//! the dynamic queues and a QUERY_STATUS fence (preemption: the CP saves
//! each queue's state into its MQD, in GTT), the change, then RUN_LIST of
//! what is active.  A fence that does not come within the
//! `queue_preemption_timeout_ms` module parameter (upstream amdgpu's,
//! default 9000 ms) is a hung HWS: the call answers `-ETIME`,
//! the caller resets the GPU (`crate::queue::recover`, which calls
//! [`reset`] to load the HIQ and send SET_RESOURCES again), and until then
//! every call answers `-EIO`.
//!
//! Over-subscription: policy 1 refuses a compute queue beyond the HWS's
//! VMIDs and slots with `-EPERM`, as upstream ([`Refusal`]); policy 0
//! refuses nothing and, as upstream, sends a runlist with every process
//! and queue, chained to itself when it has more processes than
//! `max_proc_per_quantum` (the KFD VMIDs, or fewer with the module's
//! `hws_max_conc_proc`) or more compute queues than the HWS's slots
//! (`crate::packet_manager`), and the firmware's quantum rotates it.
//!
//! MAP_PROCESS carries what upstream's `pm_map_process_v9` /
//! `_aldebaran` put in: the PASID (`pdd->pasid`: the one the GPU driver
//! gave the process's VM on this device, `ProcessDevice::pasid`), the
//! VM's page table base (kfd2kgd
//! `get_process_page_dir`, upstream's
//! `amdgpu_amdkfd_gpuvm_get_process_page_dir`), from which the CP
//! programs the VMID's page table, and the process's `sh_mem_config` /
//! `sh_mem_bases` (`crate::process::Qpd`, computed by the host crate's
//! `qpd.rs` as `update_qpd_v9` / `set_cache_memory_policy_v*`), read when
//! the queue is created (the first running queue's, per process; upstream
//! reads the qpd at each runlist, so a SET_MEMORY_POLICY while the
//! process has queues reaches the HWS with its next runlist there, with
//! its next queue here).
//!
//! What rkfd does not do (yet): no trap handler (`tba_addr` /
//! `tma_addr` 0) and no GDS/GWS/OAC in MAP_PROCESS.
//!
//! Eviction (`crate::queue::evict_process`, upstream
//! `evict_process_queues_cpsch` / `restore_process_queues_cpsch`): the
//! process's entries become inactive and one [`execute`] (UNMAP_QUEUES,
//! fence, RUN_LIST without them) takes them off the HWS; the restore
//! makes the active ones active again with one more.
//!
//! Lock order: [`DeviceQueues::hws`](crate::queue::DeviceQueues) (upstream
//! `dqm_lock` of the cpsch path) is taken under `Process::inner` and a
//! queue's `QueueShared::hw`, or alone (device init/exit, reset, debugfs `rls`); the
//! kfd2kgd calls of the HIQ (`ring_kernel_doorbell`, `hiq_mqd_load`,
//! `alloc_gtt_mem`/`free_gtt_mem`) are made under it.  The virtual GPU
//! maps and unmaps queues inside `ring_kernel_doorbell`, a real CP after
//! it returns: nothing here relies on either (preemption waits for the
//! QUERY_STATUS fence, SET_RESOURCES and RUN_LIST are not waited for, as
//! upstream).  It takes
//! `DeviceQueues::state` inside, never a queue's `hw` lock (the runlist is
//! built from [`RlEntry`] copies), and the interrupt path never takes it.
//! A preemption under it never waits for a GPU retry fault to be served
//! (the fault takes `Process::inner`, which the preempting thread may
//! hold): the GPU driver releases a faulting queue before it raises the
//! fault, as upstream's CP context-switches the wave (crate root, 3a).

use kernel::{
    prelude::*,
    sync::{atomic::Relaxed, Arc},
    time::{delay::fsleep, Delta},
};

use crate::{
    device::Device,
    kabi::{
        self,
        log::{kfd_err, kfd_info, kfd_warn},
    },
    kernel_queue::KernelQueue,
    packet_manager::{
        hws_format::{
            dqm::{self, Cpsch, HwsTables, Refusal, SchedPolicy},
            pm4::{self, MapProcess, MapQueues, RunlistProcess, SetResources, UnmapFilter},
        },
        PacketManager,
    },
    process::Qpd,
    queue::QueueShared,
};

/// `compute_vmid_bitmap` amdgpu gives amdkfd (VMIDs 8-15; the device
/// interface does not report it, every SOC15 amdgpu uses it).
pub(crate) const COMPUTE_VMID_BITMAP: u32 = 0xff00;
/// MAP_PROCESS's `process_quantum` (C: `pm_map_process_v9` sets 10).
const PROCESS_QUANTUM: u32 = 10;

/// The `sched_policy` module parameter, validated.  `None`: out of range
/// (module init refuses to load).
pub(crate) fn param_policy() -> Option<SchedPolicy> {
    SchedPolicy::from_param(kabi::sched_policy())
}

/// How long a preemption fence may take (C: `queue_preemption_timeout_ms`),
/// from the module parameter.
fn preemption_timeout_ms() -> u32 {
    pm4::queue_preemption_timeout_ms(kabi::queue_preemption_timeout_ms())
}

/// One queue of the runlist (C: a `struct queue` on a `qpd->queues_list`).
pub(crate) struct RlEntry {
    /// The queue (identity, and its error state: a stopped queue is left
    /// out of the runlist).
    pub(crate) queue: Arc<QueueShared>,
    /// Its process's PASID on this device (MAP_PROCESS; the GPU
    /// driver's, `ProcessDevice::pasid`).
    pub(crate) pasid: u32,
    /// Its process's XNACK mode (C: `qpd->pqm->process->xnack_enabled`;
    /// fixed while the process has queues: SET_XNACK_MODE is `-EBUSY`).
    pub(crate) xnack: bool,
    /// Its process's page table base and SH_MEM settings on the device
    /// when the queue was created (MAP_PROCESS takes the first queue's).
    pub(crate) qpd: Qpd,
    /// Its MAP_QUEUES.
    pub(crate) map: MapQueues,
    /// `q->properties.is_active`.
    pub(crate) active: bool,
}

impl RlEntry {
    /// A compute (not SDMA) queue.
    pub(crate) fn is_compute(&self) -> bool {
        self.map.engine == pm4::Engine::Compute
    }

    fn runs(&self) -> bool {
        self.active && self.queue.error.load(Relaxed) == 0
    }
}

/// One device's HWS state (C: the cpsch fields of `struct
/// device_queue_manager` and `dqm->packet_mgr`).
pub(crate) struct HwsState {
    policy: SchedPolicy,
    kq: KernelQueue,
    pm: PacketManager,
    cpsch: Cpsch,
    res: SetResources,
    tables: HwsTables,
    entries: KVec<RlEntry>,
}

/// The HIQ and runlist of one round of [`Cpsch`] calls.
struct Hiq<'a> {
    dev: &'a Device,
    kq: &'a mut KernelQueue,
    pm: &'a mut PacketManager,
    entries: &'a [RlEntry],
}

impl dqm::Hiq for Hiq<'_> {
    type Error = Error;

    fn submit(&mut self, packets: &[u32]) -> Result {
        self.kq.submit(self.dev, packets)
    }

    fn set_fence(&mut self, value: u64) {
        self.kq.set_fence(value);
    }

    /// C: `amdkfd_fence_wait_timeout`.
    fn wait_fence(&mut self, value: u64) -> bool {
        let deadline = kabi::time::raw_ns() + u64::from(preemption_timeout_ms()) * 1_000_000;
        loop {
            if self.kq.fence() == value {
                return true;
            }
            if kabi::time::raw_ns() > deadline {
                return false;
            }
            fsleep(Delta::from_millis(1));
        }
    }

    fn send_runlist(&mut self) -> Result {
        // MAP_PROCESS per process with running queues, in the order their
        // first queue appears, then its MAP_QUEUES.
        let mut groups: KVec<(u32, bool, Qpd, KVec<MapQueues>)> = KVec::new();
        for e in self.entries.iter().filter(|e| e.runs()) {
            match groups.iter_mut().find(|(p, _, _, _)| *p == e.pasid) {
                Some((_, _, _, qs)) => qs.push(e.map, GFP_KERNEL)?,
                None => {
                    let mut qs = KVec::new();
                    qs.push(e.map, GFP_KERNEL)?;
                    groups.push((e.pasid, e.xnack, e.qpd, qs), GFP_KERNEL)?;
                }
            }
        }
        let mut procs = KVec::with_capacity(groups.len(), GFP_KERNEL)?;
        for (pasid, xnack_enabled, qpd, qs) in groups.iter() {
            // C: pm_map_process_v9 / _aldebaran; tba/tma 0 (no trap
            // handler), no GDS/GWS/OAC.
            let map = MapProcess {
                pasid: *pasid,
                process_quantum: PROCESS_QUANTUM,
                page_table_base: qpd.page_table_base,
                sh_mem_config: qpd.sh_mem.config,
                sh_mem_bases: qpd.sh_mem.bases,
                num_queues: qs.len() as u32,
                ..Default::default()
            };
            procs.push(RunlistProcess { map, xnack_enabled: *xnack_enabled, queues: qs }, GFP_KERNEL)?;
        }
        self.pm.send_runlist(self.dev, self.kq, &procs)
    }

    fn release_ib(&mut self) {
        // The IB is kept for the next runlist; debugfs `rls` stops
        // showing it.
        self.pm.release();
    }

    fn hws_hang(&mut self) {
        kfd_err!(
            "HWS hang on gpu {}: the preemption fence did not come in {} ms; the GPU will be reset\n",
            self.dev.gpu_id(),
            preemption_timeout_ms()
        );
    }

    fn io_error(&self) -> Error {
        EIO
    }

    fn timeout_error(&self) -> Error {
        ETIME
    }
}

impl HwsState {
    /// The counts `map_queues_cpsch` looks at.
    fn count(&mut self) {
        let mut pasids: KVec<u32> = KVec::new();
        let mut active = 0;
        for e in self.entries.iter().filter(|e| e.runs()) {
            active += 1;
            // Not counted if it cannot be recorded: only the RUN_LIST's
            // process_cnt and the "anything to map" test read it.
            let _ = pasids.push(e.pasid, GFP_KERNEL);
        }
        self.cpsch.active_queue_count = active;
        self.cpsch.processes_count = dqm::process_count(&mut pasids);
    }

    fn unmap(&mut self, dev: &Device) -> Result {
        let HwsState { kq, pm, cpsch, entries, .. } = self;
        cpsch.unmap(&mut Hiq { dev, kq, pm, entries }, UnmapFilter::DynamicQueues, false)
    }

    fn map(&mut self, dev: &Device) -> Result {
        self.count();
        let HwsState { kq, pm, cpsch, entries, .. } = self;
        cpsch.map(&mut Hiq { dev, kq, pm, entries })
    }

    fn start(&mut self, dev: &Device) -> Result {
        self.count();
        let HwsState { kq, pm, cpsch, entries, res, .. } = self;
        cpsch.start(&mut Hiq { dev, kq, pm, entries }, res)
    }
}

/// C: `initialize_cpsch` + `start_cpsch` at device init: the HIQ, the
/// runlist IB and SET_RESOURCES.  `None`: no HWS on this device (policy 2,
/// or the device cannot: no GTT/HIQ calls, or starting failed), so its
/// queues go through `hqd_load`.  Not called for an MES GPU (`crate::mes`).
pub(crate) fn start(dev: &Device) -> Option<HwsState> {
    let policy = param_policy()?;
    if !policy.uses_hws() {
        return None;
    }
    if !dev.kgd.has_hws() {
        kfd_info!("gpu_id {}: the GPU driver offers no HWS; sched_policy 2 (no HWS) on this device\n", dev.gpu_id());
        return None;
    }
    match try_start(dev, policy) {
        Ok(s) => {
            kfd_info!("gpu_id {}: hardware scheduler (sched_policy {}): {} processes, {} queues per runlist\n", dev.gpu_id(), kabi::sched_policy(), s.tables.vmids, s.tables.cp_queues);
            Some(s)
        }
        Err(e) => {
            kfd_err!("gpu_id {}: starting the HWS failed ({:?}); sched_policy 2 (no HWS) on this device\n", dev.gpu_id(), e);
            None
        }
    }
}

fn try_start(dev: &Device, policy: SchedPolicy) -> Result<HwsState> {
    let reserved = crate::queue::rules::reserved_hqds(dev.info.reserved_hqds);
    let shared = dqm::hws_shared_resources(COMPUTE_VMID_BITMAP, dev.info.num_pipe_per_mec, dev.info.num_queue_per_pipe, reserved);
    let res = SetResources::for_scheduler(&shared, false, preemption_timeout_ms()).map_err(|_| EINVAL)?;
    let tables = HwsTables::of(&res);
    let kq = KernelQueue::new(dev)?;
    let pm = PacketManager::new(dev, PacketManager::limits_of(dev, &res), tables.cp_queues)?;
    let mut s = HwsState {
        policy,
        kq,
        pm,
        cpsch: Cpsch::new(0, dev.gfx.hws_sdma_ext_eng()),
        res,
        tables,
        entries: KVec::new(),
    };
    s.cpsch.fence_addr = s.kq.fence_addr();
    s.start(dev)?;
    Ok(s)
}

/// C: `stop_cpsch` + `uninitialize` at device exit: unmaps everything; the
/// GTT objects are freed as `s` is dropped.  No queue exists then.
pub(crate) fn stop(dev: &Device, mut s: HwsState) {
    let HwsState { kq, pm, cpsch, entries, .. } = &mut s;
    cpsch.stop(&mut Hiq { dev, kq, pm, entries });
}

/// After a GPU reset (`crate::queue::recover`): the HWS starts over, the
/// HIQ is loaded again and SET_RESOURCES sent; queues the reset stopped
/// stay out of the runlist.
pub(crate) fn reset(dev: &Device, s: &mut HwsState) {
    s.cpsch.reset_done();
    s.pm.release();
    let ret = s.kq.load(dev).and_then(|()| s.start(dev));
    if let Err(e) = ret {
        kfd_err!("gpu_id {}: restarting the HWS after the reset failed: {:?}\n", dev.gpu_id(), e);
    }
}

/// C: `stop_cpsch` at a suspend (`kgd2kfd_suspend`, `crate::power`):
/// unmaps everything (unless hung) and stops; the list and the HIQ's
/// objects are kept for [`resume`].  Nothing if stopped already.
pub(crate) fn suspend(dev: &Device, s: &mut HwsState) {
    if !s.cpsch.is_running() {
        return;
    }
    let HwsState { kq, pm, cpsch, entries, .. } = s;
    cpsch.stop(&mut Hiq { dev, kq, pm, entries });
}

/// C: `start_cpsch` at a resume (`kgd2kfd_resume`, `kgd2kfd_post_reset`):
/// the HIQ is loaded again (the GPU may have lost it), SET_RESOURCES sent
/// and the runlist of what is active (unless halted).  Nothing if it runs.
pub(crate) fn resume(dev: &Device, s: &mut HwsState) -> Result {
    if s.cpsch.is_running() {
        return Ok(());
    }
    s.cpsch.reset_done();
    s.pm.release();
    s.kq.load(dev)?;
    s.start(dev)
}

/// C: `halt_cpsch` (`kgd2kfd_stop_sched`): the runlist is preempted and
/// none is sent until [`unhalt`]; `ETIME`: the HWS hung.
pub(crate) fn halt(dev: &Device, s: &mut HwsState) -> Result {
    let HwsState { kq, pm, cpsch, entries, .. } = s;
    cpsch.halt(&mut Hiq { dev, kq, pm, entries })
}

/// C: `unhalt_cpsch` (`kgd2kfd_start_sched`): the runlist of what is
/// active goes out again.
pub(crate) fn unhalt(dev: &Device, s: &mut HwsState) -> Result {
    s.count();
    let HwsState { kq, pm, cpsch, entries, .. } = s;
    cpsch.unhalt(&mut Hiq { dev, kq, pm, entries })
}

/// debugfs `hang_hws` (C: `pm_debugfs_hang_hws`): a QUERY_STATUS-sized
/// packet of 0x55 bytes on the HIQ, which no firmware takes: the HWS
/// hangs, and the next preemption misses its fence (`Cpsch`'s hang
/// handling then resets the GPU).  Unlike upstream's
/// `dqm_debugfs_hang_hws`, no runlist is executed here: the hang is found
/// at the next preemption the device needs.
pub(crate) fn debugfs_hang(dev: &Device, s: &mut HwsState) -> Result {
    let garbage = [0x5555_5555u32; pm4::QUERY_STATUS_DWORDS];
    s.kq.submit(dev, &garbage)?;
    kfd_info!(
        "gpu_id {}: submitting {:x} {:x} {:x} {:x} {:x} {:x} {:x} to HIQ to hang the HWS\n",
        dev.gpu_id(),
        garbage[0],
        garbage[1],
        garbage[2],
        garbage[3],
        garbage[4],
        garbage[5],
        garbage[6]
    );
    Ok(())
}

/// Whether a runlist is on the HWS (`kgd2kfd_compute_active`).
pub(crate) fn runlist_active(s: &HwsState) -> bool {
    s.cpsch.active_runlist()
}

/// debugfs `rls` of the device (C: `pm_debugfs_runlist`).
pub(crate) fn debugfs_runlist(s: &HwsState, out: &mut impl core::fmt::Write) -> core::fmt::Result {
    s.pm.debugfs_runlist(out)
}

/// Whether a new queue of the process `pasid` may join the runlist
/// (C: `pqm_create_queue`'s policy-1 check; policy 0 admits every queue:
/// see the module doc).
pub(crate) fn admit(s: &HwsState, pasid: u32, compute: bool) -> Result {
    let mut pasids = KVec::with_capacity(s.entries.len(), GFP_KERNEL)?;
    let mut active = 0;
    for e in s.entries.iter() {
        pasids.push(e.pasid, GFP_KERNEL)?;
        if e.runs() {
            active += 1;
        }
    }
    // C counts the device's processes (`dqm->processes_count`) after
    // registering the new queue's own (`register_process` comes first).
    let processes = dqm::process_count_with(&mut pasids, &pasid);
    let device_queues = u32::try_from(s.entries.len()).unwrap_or(u32::MAX);
    match dqm::admit_on_device(device_queues).and(dqm::admit(s.policy, s.tables, compute, processes, active)) {
        Ok(()) => Ok(()),
        Err(Refusal::DeviceQueueLimit) => {
            kfd_warn!("Can't create new usermode queue because {} queues were already created\n", device_queues);
            Err(EPERM)
        }
        Err(Refusal::Oversubscription) => Err(EPERM),
    }
}

/// C: `execute_queues_cpsch` around a change: preempts the runlist, runs
/// `change` on the queue list (told whether the preemption succeeded: the
/// MQDs may be rewritten only then), and sends the new runlist.  Returns
/// what `change` returned and the first error of the preemption or the
/// new runlist (`ETIME`: the HWS hung now, the caller resets the GPU;
/// `EIO`: it hung before).  `change` always runs: a destroyed queue leaves
/// the list even on a hung HWS, as upstream.
pub(crate) fn execute<R>(dev: &Device, s: &mut HwsState, change: impl FnOnce(&mut KVec<RlEntry>, bool) -> R) -> (R, Result) {
    let pre = s.unmap(dev);
    let r = change(&mut s.entries, pre.is_ok());
    if pre.is_err() {
        return (r, pre);
    }
    (r, s.map(dev))
}

/// The MAP_QUEUES of a queue whose MQD is at `mqd_addr` (C:
/// `pm_map_queues_v9`): its doorbell as `doorbell_off`, the dword index
/// in the GPU's doorbell BAR (`q->properties.doorbell_off`).
pub(crate) fn map_queues(sdma_engine: Option<u32>, doorbell_off: u32, mqd_addr: u64, wptr: u64) -> MapQueues {
    MapQueues {
        engine: match sdma_engine {
            Some(n) => pm4::Engine::Sdma(n),
            None => pm4::Engine::Compute,
        },
        is_static: false,
        is_gws: false,
        doorbell_off,
        mqd_addr,
        wptr_addr: wptr,
    }
}
