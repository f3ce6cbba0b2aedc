// SPDX-License-Identifier: GPL-2.0

//! The MES half of the device queue manager (`sched_policy` 0 and 1 on a
//! GFX11+ GPU whose driver offers the MES calls): each queue is handed to
//! the MES firmware on its own (`mes_add_hw_queue` / `mes_remove_hw_queue`)
//! instead of going into an HQD (`hqd_load`) or a runlist (`crate::hws`).
//!
//! C: `kfd_device_queue_manager.c`'s MES path: `add_queue_mes`,
//! `remove_queue_mes`, and the `enable_mes` branches of
//! `create_queue_cpsch`, `destroy_queue_cpsch` and `update_queue` (an
//! update removes the queue, rewrites its MQD and adds it again if it is
//! active); `kfd_process_queue_manager.c`'s process and gang context
//! objects (`AMDGPU_MES_PROC_CTX_SIZE` per process and GPU,
//! `AMDGPU_MES_GANG_CTX_SIZE` per queue, in GTT).  What goes into a
//! request is the host crate's `mes.rs` (`rust/kfd-logic`), host-tested.
//!
//! A request the firmware does not answer (`-ETIME`) is a hang, as
//! upstream's `kfd_hws_hang`: the caller resets the GPU
//! (`crate::queue::recover`), which calls [`reset`]: the reset dropped
//! every queue, so none is removed again.
//!
//! As upstream, a request carries the PASID of the process's VM on the
//! device (`pdd->pasid`: the GPU driver's, from kfd2kgd `acquire_vm`;
//! `ProcessDevice::pasid`), its VM's page
//! table base (kfd2kgd `get_process_page_dir`, upstream's
//! `amdgpu_amdkfd_gpuvm_get_process_page_dir`), by which the firmware
//! programs the VMID, and its `sh_mem_config` (`sh_mem_config_data`;
//! `crate::process::Qpd`, read when the queue is created).
//!
//! Differences from upstream: the process context is freed with the
//! process's last queue on the GPU (upstream: with the process-device);
//! no trap handler (`tba`/`tma` 0), no debugger
//! (`skip_process_ctx_clear` 0).  Eviction
//! (`crate::queue::evict_process`, [`evict`] / [`restore`]) removes each
//! active queue of the process and adds it back, as upstream's MES
//! branches of `evict_process_queues_cpsch` / `restore_process_queues_cpsch`.
//! Not wired yet: `mes_suspend_all` / `mes_resume_all` (upstream 7.3's
//! amdkfd no longer calls `amdgpu_mes_suspend` / `_resume` either).
//! Policy 1 refuses an over-subscribing compute queue as under the HWS
//! ([`admit`]).
//!
//! Lock order: [`DeviceQueues::mes`](crate::queue::DeviceQueues) (upstream
//! `dqm_lock` plus `amdgpu_mes_lock`) is taken under `Process::inner` and
//! a queue's `QueueShared::hw`, or alone (device init/exit, reset), as
//! `DeviceQueues::hws` (3a of the crate's order); the MES kfd2kgd calls
//! and `alloc_gtt_mem`/`free_gtt_mem` are made under it; it takes no
//! other rkfd lock and the interrupt path never takes it.

use kernel::{
    prelude::*,
    sync::{atomic::Relaxed, Arc},
};

use crate::{
    device::Device,
    kabi::{
        kgd::{GttMem, MesAddQueueInput, MesRemoveQueueInput},
        log::{kfd_err, kfd_info, kfd_warn},
    },
    process::Qpd,
    packet_manager::hws_format::dqm::{self, HwsTables, SchedPolicy},
    queue::QueueShared,
};

/// The pure request logic, shared with the host crate `kfd-logic`.
#[path = "../rust/kfd-logic/src/mes.rs"]
#[allow(dead_code, unreachable_pub, missing_docs)]
pub(crate) mod logic;

pub(crate) use logic::MesQueue;

/// Queues a device takes (upstream's default
/// `max_num_of_queues_per_device`, as under the HWS).
const MAX_QUEUES_PER_DEVICE: usize = 4096;

/// A process's context on the device (C: `pdd->proc_ctx_bo`).
struct ProcCtx {
    pasid: u32,
    ctx: GttMem,
    /// Its queues on the device; the context goes with the last.
    queues: u32,
}

/// One queue the MES path knows (C: a `struct queue` with its
/// `gang_ctx_bo`).
struct Entry {
    queue: Arc<QueueShared>,
    pasid: u32,
    /// Its process's page table base and SH_MEM settings when the queue
    /// was created.
    qpd: Qpd,
    /// The gang context the firmware keeps (`gang_context_addr` is this
    /// object's); freed as the entry drops, once the queue is removed.
    _gang_ctx: GttMem,
    /// What the requests are built from.
    q: MesQueue,
    /// Added to the firmware (an inactive or stopped queue is not, nor
    /// any after a reset).
    added: bool,
    /// Active and not evicted as rkfd last asked (create, update,
    /// evict, restore): what [`start_all`] adds again after a halt.
    want: bool,
}

/// One device's MES state (C: the MES fields of `struct
/// device_queue_manager` and the queues' contexts).
pub(crate) struct MesState {
    procs: KVec<ProcCtx>,
    entries: KVec<Entry>,
    /// `sched_policy` (0 or 1).
    policy: SchedPolicy,
    /// What policy 1 counts against: `vmid_num_kfd` and
    /// `get_cp_queues_num`, from the shared resources as under the HWS.
    tables: HwsTables,
    /// Scheduling halted or stopped ([`stop_all`], `crate::power`): no
    /// queue is added to the firmware until [`start_all`].
    halted: bool,
}

/// C: `initialize_cpsch`/`start_cpsch` with `enable_mes`: `Some` under
/// `sched_policy` 0/1 on a GPU scheduled by MES whose driver offers the
/// MES calls; otherwise `None` (queues go through `hqd_load`), with one
/// dmesg line on an MES GPU.
pub(crate) fn start(dev: &Device) -> Option<MesState> {
    let policy = crate::hws::param_policy()?;
    if !policy.uses_hws() || !dev.gfx.uses_mes() {
        return None;
    }
    if !dev.kgd.has_mes() {
        kfd_info!("gpu_id {}: {} is scheduled by MES and the GPU driver offers no MES calls; sched_policy 2 (no HWS) on this device\n", dev.gpu_id(), dev.gfx);
        return None;
    }
    kfd_info!("gpu_id {}: {} queues are scheduled by MES (sched_policy {})\n", dev.gpu_id(), dev.gfx, crate::kabi::sched_policy());
    // get_cp_queues_num: the queues of amdgpu's cp_queue_bitmap, without
    // the HQDs the GPU driver keeps.
    let reserved = crate::queue::rules::reserved_hqds(dev.info.reserved_hqds);
    let shared = dqm::hws_shared_resources(crate::hws::COMPUTE_VMID_BITMAP, dev.info.num_pipe_per_mec, dev.info.num_queue_per_pipe, reserved);
    Some(MesState { procs: KVec::new(), entries: KVec::new(), policy, tables: HwsTables::of_shared(&shared), halted: false })
}

/// C: `create_queue_cpsch`'s `max_num_of_queues_per_device` check:
/// `-EPERM` and upstream's line.
fn admit_on_device(s: &MesState) -> Result {
    if s.entries.len() >= MAX_QUEUES_PER_DEVICE {
        kfd_warn!("Can't create new usermode queue because {} queues were already created\n", s.entries.len());
        return Err(EPERM);
    }
    Ok(())
}

/// Whether another queue of the process `pasid` fits the device (C:
/// `create_queue_cpsch`'s `max_num_of_queues_per_device` check: `-EPERM`
/// and upstream's line), and under policy 1 a compute queue the KFD VMIDs
/// and the HQD slots (C: `pqm_create_queue`'s over-subscription check,
/// which upstream makes whatever the scheduler: `-EPERM` once the
/// device's processes, the new queue's counted, reach `vmid_num_kfd` or
/// its active queues `get_cp_queues_num`; the rule is `dqm::admit`, as
/// under the HWS).  The active queues are those on the firmware.
pub(crate) fn admit(s: &MesState, pasid: u32, compute: bool) -> Result {
    admit_on_device(s)?;
    let mut pasids = KVec::with_capacity(s.entries.len(), GFP_KERNEL)?;
    let mut active = 0u32;
    for e in s.entries.iter() {
        pasids.push(e.pasid, GFP_KERNEL)?;
        active += u32::from(e.added);
    }
    let processes = dqm::process_count_with(&mut pasids, &pasid);
    dqm::admit(s.policy, s.tables, compute, processes, active).map_err(|_| EPERM)
}

impl MesState {
    fn proc_ctx_addr(&self, pasid: u32) -> Option<u64> {
        self.procs.iter().find(|p| p.pasid == pasid).map(|p| p.ctx.gpu_addr())
    }

    /// The process's context, made with its first queue (C:
    /// `pqm_create_queue`'s `proc_ctx_bo`), and one more queue on it.
    fn get_proc(&mut self, dev: &Device, pasid: u32) -> Result {
        if let Some(p) = self.procs.iter_mut().find(|p| p.pasid == pasid) {
            p.queues += 1;
            return Ok(());
        }
        self.procs.reserve(1, GFP_KERNEL)?;
        let ctx = dev.kgd.alloc_gtt_mem(logic::PROC_CTX_SIZE)?;
        self.procs.push(ProcCtx { pasid, ctx, queues: 1 }, GFP_KERNEL)?;
        Ok(())
    }

    fn put_proc(&mut self, pasid: u32) {
        if let Some(i) = self.procs.iter().position(|p| p.pasid == pasid) {
            self.procs[i].queues -= 1;
            if self.procs[i].queues == 0 {
                // The GTT object is freed as it drops.
                let _ = self.procs.remove(i);
            }
        }
    }
}

/// C: `add_queue_mes`: the request for entry `e`, to the firmware.
fn add_hw(dev: &Device, proc_ctx: u64, e: &mut Entry) -> Result {
    // No trap handler: tba/tma 0.
    let p = logic::MesProcess {
        pasid: e.pasid,
        page_table_base: e.qpd.page_table_base,
        sh_mem_config: e.qpd.sh_mem.config,
        context_addr: proc_ctx,
        ..Default::default()
    };
    let Some(i) = logic::add_queue_input(&p, &e.q, dev.gfx.has_cwsr_workaround()) else {
        kfd_err!("Queue type not supported with MES, queue:{}\n", e.q.kfd_type);
        return Err(EINVAL);
    };
    let input = MesAddQueueInput {
        process_id: i.process_id,
        page_table_base_addr: i.page_table_base_addr,
        process_va_start: i.process_va_start,
        process_va_end: i.process_va_end,
        process_quantum: i.process_quantum,
        process_context_addr: i.process_context_addr,
        gang_quantum: i.gang_quantum,
        gang_context_addr: i.gang_context_addr,
        inprocess_gang_priority: i.inprocess_gang_priority,
        gang_global_priority_level: i.gang_global_priority_level,
        doorbell_offset: i.doorbell_offset,
        mqd_addr: i.mqd_addr,
        wptr_addr: i.wptr_addr,
        wptr_mc_addr: i.wptr_mc_addr,
        queue_type: i.queue_type,
        paging: i.paging,
        gws_base: i.gws_base,
        gws_size: i.gws_size,
        tba_addr: i.tba_addr,
        tma_addr: i.tma_addr,
        trap_en: i.trap_en,
        skip_process_ctx_clear: i.skip_process_ctx_clear,
        is_kfd_process: i.is_kfd_process,
        is_aql_queue: i.is_aql_queue,
        queue_size: i.queue_size,
        exclusively_scheduled: i.exclusively_scheduled,
        sh_mem_config_data: i.sh_mem_config_data,
    };
    if let Err(err) = dev.kgd.mes_add_hw_queue(&input) {
        kfd_err!("failed to add hardware queue to MES, doorbell=0x{:x}\n", i.doorbell_offset);
        if err == ETIME {
            kfd_err!("MES might be in unrecoverable state, issue a GPU reset\n");
        }
        return Err(err);
    }
    e.added = true;
    Ok(())
}

/// C: `remove_queue_mes`: the firmware lets go of entry `e` (its read
/// pointer saved in its MQD); nothing if it was not added.  `e` counts
/// as removed whatever the result.
fn remove_hw(dev: &Device, e: &mut Entry) -> Result {
    if !e.added {
        return Ok(());
    }
    e.added = false;
    let r = logic::remove_queue_input(&e.q);
    let input = MesRemoveQueueInput { doorbell_offset: r.doorbell_offset, gang_context_addr: r.gang_context_addr };
    dev.kgd.mes_remove_hw_queue(&input).inspect_err(|err| {
        kfd_err!("failed to remove hardware queue from MES, doorbell=0x{:x}\n", r.doorbell_offset);
        if *err == ETIME {
            kfd_err!("MES might be in unrecoverable state, issue a GPU reset\n");
        }
    })
}

fn runs(e: &Entry, active: bool) -> bool {
    active && e.queue.error.load(Relaxed) == 0
}

/// C: `create_queue_cpsch` with MES: the queue gets its gang context (and
/// its process a context, with its first queue) and, if `active`, is
/// added to the firmware.  `q.gang_context_addr` is filled here.  On
/// failure nothing is kept; `ETIME`: the firmware hung.
pub(crate) fn add(
    dev: &Device,
    s: &mut MesState,
    queue: Arc<QueueShared>,
    pasid: u32,
    qpd: Qpd,
    mut q: MesQueue,
    active: bool,
) -> Result {
    admit_on_device(s)?;
    s.entries.reserve(1, GFP_KERNEL)?;
    let gang_ctx = dev.kgd.alloc_gtt_mem(logic::GANG_CTX_SIZE)?;
    q.gang_context_addr = gang_ctx.gpu_addr();
    s.get_proc(dev, pasid)?;
    let mut e = Entry { queue, pasid, qpd, _gang_ctx: gang_ctx, q, added: false, want: active };
    let proc_ctx = s.proc_ctx_addr(pasid).unwrap_or(0);
    if runs(&e, active) && !s.halted {
        if let Err(err) = add_hw(dev, proc_ctx, &mut e) {
            s.put_proc(pasid);
            return Err(err);
        }
    }
    // Capacity was reserved above: this cannot fail.
    let _ = s.entries.push(e, GFP_KERNEL);
    Ok(())
}

/// C: `destroy_queue_cpsch` with MES: removed from the firmware if it was
/// added; its gang context goes, and its process's context with its last
/// queue.  The queue is forgotten whatever the result; `ETIME`: the
/// firmware hung.
pub(crate) fn remove(dev: &Device, s: &mut MesState, queue: &Arc<QueueShared>) -> Result {
    let Some(i) = s.entries.iter().position(|e| Arc::ptr_eq(&e.queue, queue)) else {
        return Err(EINVAL);
    };
    let ret = remove_hw(dev, &mut s.entries[i]);
    if let Ok(e) = s.entries.remove(i) {
        s.put_proc(e.pasid);
        // Its gang context is freed as `e` drops: the firmware no longer has it.
    }
    ret
}

/// C: `update_queue` with MES: removes the queue from the firmware if it
/// was added (its state saved into its MQD), runs `change` (told whether
/// the removal succeeded: the MQD may be rewritten only then), and adds
/// it again if it is `active`, with its new `priority` and `ring_size`.
/// Returns what `change` returned and the first error (`ETIME`: the
/// firmware hung).
pub(crate) fn update<R>(
    dev: &Device,
    s: &mut MesState,
    queue: &Arc<QueueShared>,
    (active, priority, ring_size): (bool, u32, u64),
    change: impl FnOnce(bool) -> R,
) -> (Option<R>, Result) {
    let Some(i) = s.entries.iter().position(|e| Arc::ptr_eq(&e.queue, queue)) else {
        return (None, Err(EINVAL));
    };
    let pre = remove_hw(dev, &mut s.entries[i]);
    let r = change(pre.is_ok());
    if pre.is_err() {
        return (Some(r), pre);
    }
    let proc_ctx = s.proc_ctx_addr(s.entries[i].pasid).unwrap_or(0);
    let halted = s.halted;
    let e = &mut s.entries[i];
    (e.q.priority, e.q.ring_size) = (priority, ring_size);
    e.want = active;
    if runs(e, active) && !halted {
        return (Some(r), add_hw(dev, proc_ctx, e));
    }
    (Some(r), Ok(()))
}

/// C: `evict_process_queues_cpsch`'s MES branch for one queue
/// (`remove_queue_mes`): the firmware lets go of it (its state saved in
/// its MQD) if it had it.  It stays known (its contexts kept) for the
/// restore; `ETIME`: the firmware hung.
pub(crate) fn evict(dev: &Device, s: &mut MesState, queue: &Arc<QueueShared>) -> Result {
    match s.entries.iter_mut().find(|e| Arc::ptr_eq(&e.queue, queue)) {
        Some(e) => {
            e.want = false;
            remove_hw(dev, e)
        }
        None => Ok(()),
    }
}

/// C: `restore_process_queues_cpsch`'s MES branch for one active queue
/// (`add_queue_mes`): added to the firmware again, unless it is on it or
/// an error (a reset) stopped it; the firmware resumes it from its MQD.
pub(crate) fn restore(dev: &Device, s: &mut MesState, queue: &Arc<QueueShared>) -> Result {
    let Some(i) = s.entries.iter().position(|e| Arc::ptr_eq(&e.queue, queue)) else {
        return Ok(());
    };
    let proc_ctx = s.proc_ctx_addr(s.entries[i].pasid).unwrap_or(0);
    let halted = s.halted;
    let e = &mut s.entries[i];
    e.want = true;
    if e.added || !runs(e, true) || halted {
        return Ok(());
    }
    add_hw(dev, proc_ctx, e)
}

/// C: `remove_all_kfd_queues_mes` (`halt_cpsch`, `stop_cpsch` with MES):
/// the firmware lets go of every queue it has (their state saved in their
/// MQDs) and gets none until [`start_all`]; they stay known.  Every
/// queue is removed; the first error is returned (`ETIME`: the firmware
/// hung).
pub(crate) fn stop_all(dev: &Device, s: &mut MesState) -> Result {
    s.halted = true;
    let mut ret = Ok(());
    for e in s.entries.iter_mut() {
        let r = remove_hw(dev, e);
        ret = ret.and(r);
    }
    ret
}

/// C: `add_all_kfd_queues_mes` (`unhalt_cpsch` with MES): the queues rkfd
/// wants running (active, not evicted, not stopped by an error) go back
/// to the firmware, which resumes them from their MQDs.  The first error
/// is returned; a queue that could not be added stays off.
pub(crate) fn start_all(dev: &Device, s: &mut MesState) -> Result {
    s.halted = false;
    let mut ret = Ok(());
    for i in 0..s.entries.len() {
        let proc_ctx = s.proc_ctx_addr(s.entries[i].pasid).unwrap_or(0);
        let e = &mut s.entries[i];
        if e.added || !runs(e, e.want) {
            continue;
        }
        let r = add_hw(dev, proc_ctx, e);
        ret = ret.and(r);
    }
    ret
}

/// Whether the firmware has any of the device's queues.
pub(crate) fn any_added(s: &MesState) -> bool {
    s.entries.iter().any(|e| e.added)
}

/// After a GPU reset (`crate::queue::recover`): the reset took every
/// queue off the firmware; the stopped queues stay off until destroyed.
pub(crate) fn reset(s: &mut MesState) {
    for e in s.entries.iter_mut() {
        e.added = false;
    }
}

/// The MES request fields of a new queue that the queue itself gives.
/// `doorbell_off`: the queue's doorbell as its BAR index.
pub(crate) fn queue_of(kfd_type: u32, aql: bool, priority: u32, ring_size: u64, wptr: u64, doorbell_off: u32, mqd_addr: u64) -> MesQueue {
    MesQueue { kfd_type, aql, priority, ring_size, wptr, wptr_gart: 0, doorbell_off, mqd_addr, gang_context_addr: 0, gws: false }
}
