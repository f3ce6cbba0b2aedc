// SPDX-License-Identifier: GPL-2.0

//! User-mode queues: CREATE_QUEUE, DESTROY_QUEUE, UPDATE_QUEUE,
//! SET_CU_MASK, ALLOC_QUEUE_GWS, GET_QUEUE_WAVE_STATE, per-process
//! `queues/<qid>/` sysfs, and hang recovery.
//!
//! C: the queue ioctls of `kfd_chardev.c`, `kfd_process_queue_manager.c`
//! (pqm), `kfd_device_queue_manager.c` (dqm), `kfd_queue.c`.  The rules
//! (validation in upstream's order, queue ids, doorbells, SDMA slots) are
//! pure logic in `rust/kfd-logic/src/queue_rules.rs`, host-tested; this file
//! applies them to processes and devices and hands validated queues to the
//! GPU driver: with `sched_policy` 0 (the default, as upstream) or 1, on a
//! device with a hardware scheduler, through runlists on the HIQ
//! (`crate::hws`, upstream's `*_cpsch`): the MQD then lives in GTT and the
//! queue is in the device's runlist list rather than an HQD slot; on a
//! gfx11 device one by one to the MES (`crate::mes`); with 2, or on a
//! device whose driver offers neither, each one directly (`hqd_load` /
//! `hqd_destroy`, upstream's `*_nocpsch`).
//!
//! Differences from upstream, all forced by ROCm 5.2.3 or the device
//! interface:
//!
//! - buffers (`kfd_queue_acquire_buffers`): upstream wants each queue
//!   address to *start* a GPU mapping of exactly the expected size.  ROCm
//!   5.2.3 predates that rule and keeps the read/write pointers inside its
//!   larger `amd_queue_t` object, so rkfd requires each buffer to lie
//!   *inside* one memory object mapped on the queue's GPU; the object then
//!   cannot be unmapped from that GPU while the queue exists (`-EBUSY`,
//!   upstream's `queue_refcount`).  The CWSR area is checked for
//!   `ctx_save_restore_size` bytes (topology publishes no
//!   `debug_memory_size`).
//! - GWS: the virtual GPU has no global wave sync (`dev->gws == NULL`), so
//!   ALLOC_QUEUE_GWS answers `-ENODEV` for an existing queue, as upstream.
//! - GET_QUEUE_WAVE_STATE: a virtual GPU runs no waves, so a compute queue's
//!   saved state is always empty; upstream's rule that the queue be
//!   inactive (`-EINVAL` otherwise) is kept.
//!
//! Lock order: see the crate root (`src/rkfd_main.rs`; `DeviceQueues::hws`
//! is 3a, taken under a queue's `hw`).  A process's
//! queues live under `Process::inner` (upstream `p->pqm` under `p->mutex`);
//! every kfd2kgd `hqd_*` call is made under it and may wait for the GPU
//! driver's engine threads.  [`DeviceQueues::state`] (upstream `dqm_lock`)
//! is never held across a kfd2kgd call; [`QueueShared::error`] and the
//! ring fields are atomics, so the interrupt path and debugfs read them
//! without `inner`.
//!
//! The interrupt path (`crate::interrupt`, called from engine threads)
//! takes only `PROCESSES`/the pasid lookup, [`DeviceQueues::state`] and the
//! events lock, never `inner`, so a thread holding `inner` while it waits
//! for an engine (`hqd_destroy` preempting) cannot deadlock with it.  Hang
//! recovery signals other processes and therefore runs after `inner` is
//! dropped ([`recover`]).

use core::fmt::Write;

use kernel::{
    prelude::*,
    str::CString,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex,
    },
    uaccess::UserSlice,
};

use crate::{
    device::Device,
    kabi::{
        self,
        kgd::{GttMem, KgdVm},
        log::{kfd_err, kfd_info},
        sysfs::{Dir, Parent, Show, ShowBuffer},
    },
    memory::{self, QueueBufferRef},
    mqd::{self, Mqd},
    process::{Process, ProcessInner},
    uapi,
};

#[path = "../rust/kfd-logic/src/queue_rules.rs"]
#[allow(dead_code, unreachable_pub, missing_docs)]
pub(crate) mod rules;

use rules::{Errno, Properties, QueueType};

/// Maps a rule's errno to the kernel's.
fn errno(e: Errno) -> Error {
    match e {
        Errno::Inval => EINVAL,
        Errno::Fault => EFAULT,
        Errno::NotSupp => ENOTSUPP,
        Errno::NoSpc => ENOSPC,
        Errno::NoMem => ENOMEM,
        Errno::Busy => EBUSY,
    }
}

/// Why a device was last reset (sysfs `last_reset`).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum ResetReason {
    /// The scheduler did not answer a preemption (`hqd_destroy` -ETIME).
    HwsHang = 1,
}

/// Per-device queue state (C: `struct device_queue_manager`).
pub(crate) struct DeviceQueues {
    /// SDMA queues and the loaded queues (upstream `dqm_lock`).  Lock
    /// order: a leaf, taken under `Process::inner` and by the interrupt
    /// path; never held across a kfd2kgd call.
    state: Pin<KBox<Mutex<DqmState>>>,
    /// The hardware scheduler's state under `sched_policy` 0 and 1
    /// (`crate::hws`, upstream's cpsch `dqm_lock`); `None`: queues go
    /// through `hqd_load`.  Set at device init, taken at device exit.  Lock
    /// order: taken under `Process::inner` and a queue's
    /// [`QueueShared::hw`], or with no rkfd lock held (device init/exit,
    /// [`recover`]); [`DeviceQueues::state`] may be taken inside it, never
    /// a queue's `hw`; the HIQ's kfd2kgd calls are made under it; never
    /// taken by the interrupt path.  Its preemptions wait for the engines
    /// to leave the queues, never for a GPU retry fault to be served (the
    /// fault takes `Process::inner`: crate root, 3a).
    hws: Pin<KBox<Mutex<Option<crate::hws::HwsState>>>>,
    /// The MES path's state under `sched_policy` 0 and 1 on a GPU
    /// scheduled by MES (`crate::mes`); `None`: not that path.  Set at
    /// device init, taken at device exit.  Lock order: as `hws` (a device
    /// has one or the other); the MES kfd2kgd calls are made under it.
    mes: Pin<KBox<Mutex<Option<crate::mes::MesState>>>>,
    /// Hangs detected and recovered (rkfd extension, sysfs `hang_count`).
    hang_count: Atomic<u32>,
    /// [`ResetReason`] of the last reset.
    last_reset: Atomic<u32>,
}

/// What [`DeviceQueues::state`] protects.
struct DqmState {
    sdma: rules::SdmaQueues,
    /// Compute HQD slots (C: `allocated_queues`, no-HWS mode).
    hqds: rules::HqdSlots,
    /// Every queue loaded on the device (debugfs, interrupts).
    queues: KVec<Arc<QueueShared>>,
    /// `/sys/class/kfd/kfd/hws_<gpu_id>/` once the device is published.
    sysfs: Option<Arc<Dir>>,
}

impl DeviceQueues {
    /// Empty state for a new device with the GPU driver's HQDs `info`.
    pub(crate) fn new(info: &kabi::kgd::GpuInfo) -> Result<Self> {
        // Without the HQDs the GPU driver keeps (its own compute rings).
        let hqds = rules::HqdSlots::with_reserved(info.num_pipe_per_mec, info.num_queue_per_pipe, rules::reserved_hqds(info.reserved_hqds));
        let state = KBox::pin_init(
            kernel::new_mutex!(DqmState { sdma: Default::default(), hqds, queues: KVec::new(), sysfs: None }, "DeviceQueues::state"),
            GFP_KERNEL,
        )?;
        let hws = KBox::pin_init(kernel::new_mutex!(None, "DeviceQueues::hws"), GFP_KERNEL)?;
        let mes = KBox::pin_init(kernel::new_mutex!(None, "DeviceQueues::mes"), GFP_KERNEL)?;
        Ok(DeviceQueues { state, hws, mes, hang_count: Atomic::new(0), last_reset: Atomic::new(0) })
    }

    /// Whether the device's queues go through the HWS.
    fn uses_hws(&self) -> bool {
        self.hws.lock().is_some()
    }

    /// Whether queues go to the MES (`crate::mes`).
    fn uses_mes(&self) -> bool {
        self.mes.lock().is_some()
    }

}

/// `hws_<gpu_id>/` files: `hang_count`, `last_reset`.
struct HwsFiles(Arc<Device>);

impl Show for HwsFiles {
    fn show(&self, file: usize, out: &mut ShowBuffer<'_>) -> Result {
        let q = &self.0.queues;
        match file {
            0 => out.emit(fmt!("{}\n", q.hang_count.load(Relaxed))),
            _ => out.emit(fmt!(
                "{}\n",
                match q.last_reset.load(Relaxed) {
                    1 => "hws_hang",
                    _ => "none",
                }
            )),
        }
    }
}

/// The device is published: creates `hws_<gpu_id>/` (rkfd extension).
pub(crate) fn device_init(dev: &Arc<Device>) {
    let files = Arc::new(HwsFiles(dev.clone()), GFP_KERNEL);
    let name = CString::try_from_fmt(fmt!("hws_{}", dev.gpu_id()));
    let dir = match (files, name) {
        (Ok(f), Ok(n)) => Dir::new(Parent::KfdDevice, &n, &[c"hang_count", c"last_reset"], f),
        _ => Err(ENOMEM),
    };
    match dir {
        Ok(d) => dev.queues.state.lock().sysfs = Some(d),
        Err(e) => kfd_err!("creating hws_{} failed: {:?}\n", dev.gpu_id(), e),
    }
}

/// The device is about to be published: starts its hardware scheduler
/// under `sched_policy` 0 and 1 (C: `start_cpsch` from
/// `kgd2kfd_device_init`), before any process can create a queue on it.
pub(crate) fn hws_start(dev: &Device) {
    if dev.gfx.uses_mes() {
        // No HWS on an MES GPU: MES or, failing that, no scheduler.
        if let Some(s) = crate::mes::start(dev) {
            *dev.queues.mes.lock() = Some(s);
        }
        return;
    }
    if let Some(s) = crate::hws::start(dev) {
        *dev.queues.hws.lock() = Some(s);
    }
}

/// The device goes away: stops the HWS (freeing its GTT objects) and drops
/// the sysfs directory (its files hold the device).  No queue can exist:
/// every queue belongs to a bound VM, which holds the GPU driver's module.
pub(crate) fn device_exit(dev: &Device) {
    let hws = dev.queues.hws.lock().take();
    if let Some(s) = hws {
        crate::hws::stop(dev, s);
    }
    // No queue is left: the MES state holds no context.
    drop(dev.queues.mes.lock().take());
    let dir = dev.queues.state.lock().sysfs.take();
    drop(dir);
}

/// Where a queue runs: its hardware queue slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HwSlot {
    /// HQD (`pipe`, `queue`) of the MEC (C: `q->pipe`, `q->queue`).
    Compute(rules::HqdSlot),
    /// RLC queue `queue` of SDMA engine `engine` (named by the MQD).
    Sdma { engine: u32, queue: u32 },
    /// A compute queue under the HWS or MES: the firmware picks its HQD
    /// when it maps the runlist (adds the queue).
    Runlist,
}

/// A queue's MQD and whether the GPU driver holds it.
struct HwState {
    mqd: Mqd,
    /// Loaded into its slot (`hqd_load` succeeded, no `hqd_destroy` yet),
    /// or, under the HWS or MES, in the device's runlist (MES) list.
    loaded: bool,
    /// Under the HWS or MES: the MQD as the firmware reads it (GTT, at the
    /// address MAP_QUEUES or `mes_add_hw_queue` names).  It is the authoritative copy while the
    /// queue is listed: the CP saves the queue's state there when it
    /// preempts it, and `mqd` is refreshed from it before each change.
    gtt: Option<GttMem>,
}

/// What rkfd's paths share about one queue: the process's queue, the
/// device's list (debugfs, interrupts) and the queue's sysfs files.
#[pin_data]
pub(crate) struct QueueShared {
    pub(crate) qid: u32,
    pub(crate) gpu_id: u32,
    /// The owning process (identity only; the queue dies before it).
    process_key: usize,
    /// Thread group id of the owner (debugfs).
    pid: i32,
    /// Internal type after SDMA assignment.
    queue_type: QueueType,
    aql: bool,
    /// The doorbell's index in the process's doorbell slice (C:
    /// `q->doorbell_id`): CREATE_QUEUE's `doorbell_offset`, how interrupts
    /// name the queue.
    doorbell_id: u32,
    /// The doorbell's dword index in the GPU's doorbell BAR (C:
    /// `q->properties.doorbell_off`, `kfd_get_doorbell_dw_offset_in_bar`):
    /// how the MQD, MAP_QUEUES and the MES name it.
    doorbell_off: u32,
    /// Current ring (UPDATE_QUEUE changes them).
    ring_base: Atomic<u64>,
    ring_size: Atomic<u64>,
    priority: Atomic<u32>,
    percentage: Atomic<u32>,
    /// 0, or the `KGD_QUEUE_ERROR_*` that stopped the queue.
    pub(crate) error: Atomic<u32>,
    /// Its hardware slot.
    slot: HwSlot,
    /// The MQD.  Lock order: taken under `Process::inner` by the queue's
    /// owner and alone by debugfs `mqds` / `hqds`; kfd2kgd `hqd_*` calls
    /// on the queue are made under it (they wait for the engine for one
    /// quantum at most); never by the interrupt path.
    #[pin]
    hw: Mutex<HwState>,
}

impl QueueShared {
    /// Whether the queue belongs to `process`.
    pub(crate) fn belongs_to(&self, process: &Process) -> bool {
        self.process_key == process as *const Process as usize
    }
}

impl Show for QueueShared {
    /// `size`, `type`, `gpuid`, without trailing newline (upstream
    /// `kfd_procfs_queue_show`).
    fn show(&self, file: usize, out: &mut ShowBuffer<'_>) -> Result {
        match file {
            0 => out.emit(fmt!("{}", self.ring_size.load(Relaxed))),
            1 => out.emit(fmt!("{}", self.queue_type as u32)),
            _ => out.emit(fmt!("{}", self.gpu_id)),
        }
    }
}

/// One queue of a process (C: `struct process_queue_node` + `struct queue`).
struct Queue {
    shared: Arc<QueueShared>,
    dev: Arc<Device>,
    props: Properties,
    sdma: Option<rules::SdmaSlot>,
    /// The ring the MQD describes: the last non-NULL one (a NULL ring
    /// only makes the queue inactive).
    mqd_ring: (u64, u64),
    /// Memory objects holding its buffers.
    buffers: KVec<QueueBufferRef>,
    /// `proc/<pid>/queues/<qid>/`.
    sysfs: Option<Arc<Dir>>,
}

/// The queues of a process (C: `struct process_queue_manager` and the
/// per-pdd doorbell bitmaps).  Lives in `ProcessInner`.
pub(crate) struct ProcessQueues {
    slots: rules::QueueSlots,
    queues: KVec<Queue>,
    /// Doorbell slots per device (gpu_id, bitmap, the BAR index of the
    /// slice's first doorbell), made on first use (C:
    /// `kfd_alloc_process_doorbells`, `pdd->qpd.proc_doorbells`; the GPU
    /// driver says where the VM's slice is: kfd2kgd
    /// `get_process_doorbell_index`, `None` from a driver that does not,
    /// which serves no user queues).
    doorbells: KVec<(u32, rules::Doorbells, Option<u32>)>,
}

impl ProcessQueues {
    /// No queues.
    pub(crate) fn new() -> Self {
        ProcessQueues { slots: Default::default(), queues: KVec::new(), doorbells: KVec::new() }
    }

    /// Whether the process has any queue.
    pub(crate) fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }
}

/// Whether the process has queues (SET_XNACK_MODE refuses to change
/// modes then, `-EBUSY`).  Takes `inner`: callers that hold it use
/// [`has_queues_locked`].
#[allow(dead_code, reason = "for callers that do not hold Process::inner")]
pub(crate) fn has_queues(process: &Process) -> bool {
    has_queues_locked(&process.inner.lock())
}

/// [`has_queues`] for a caller holding `Process::inner`.
pub(crate) fn has_queues_locked(inner: &ProcessInner) -> bool {
    !inner.queues.is_empty()
}

/// What the device advertises, for the rules.
fn limits(dev: &Device) -> rules::DeviceLimits {
    let i = &dev.info;
    rules::DeviceLimits {
        gfx: dev.gfx,
        cwsr_size: i.cwsr_size,
        ctl_stack_size: i.ctl_stack_size,
        num_sdma_engines: i.num_sdma_engines,
        num_sdma_xgmi_engines: i.num_sdma_xgmi_engines,
        num_sdma_queues_per_engine: i.num_sdma_queues_per_engine,
    }
}

/// C: `load_mqd`: the GPU driver loads the queue's MQD into its slot.
fn load_hw(dev: &Device, vm: &KgdVm, slot: HwSlot, hw: &mut HwState, wptr: u64) -> Result {
    match slot {
        HwSlot::Compute(s) => dev.kgd.hqd_load(vm, hw.mqd.as_bytes_mut(), s.pipe, s.queue, wptr)?,
        HwSlot::Sdma { .. } => dev.kgd.hqd_sdma_load(vm, hw.mqd.as_bytes_mut(), wptr)?,
        HwSlot::Runlist => return Err(EINVAL),
    }
    hw.loaded = true;
    Ok(())
}

/// C: `destroy_mqd`: preempts a loaded queue (the GPU driver saves its
/// state into the MQD) and frees its slot; nothing if not loaded.  The
/// queue is unloaded whatever the result; `ETIME`: the scheduler hung.
fn unload_hw(dev: &Device, slot: HwSlot, hw: &mut HwState) -> Result {
    if !hw.loaded {
        return Ok(());
    }
    hw.loaded = false;
    match slot {
        HwSlot::Compute(s) => dev.kgd.hqd_destroy(hw.mqd.as_bytes_mut(), s.pipe, s.queue),
        HwSlot::Sdma { .. } => dev.kgd.hqd_sdma_destroy(hw.mqd.as_bytes_mut()),
        HwSlot::Runlist => Err(EINVAL),
    }
}

/// C: `destroy_queue_cpsch`: takes a listed queue out of the runlist
/// (preempting the runlist and sending it again without it).  The queue
/// leaves the list whatever the result; `ETIME`: the HWS hung.
fn hws_remove(dev: &Device, shared: &Arc<QueueShared>, hw: &mut HwState) -> Result {
    if !hw.loaded {
        return Ok(());
    }
    hw.loaded = false;
    if let Some(s) = Option::as_mut(&mut *dev.queues.mes.lock()) {
        return crate::mes::remove(dev, s, shared);
    }
    let mut guard = dev.queues.hws.lock();
    let s = Option::as_mut(&mut *guard).ok_or(EINVAL)?;
    let ((), ret) = crate::hws::execute(dev, s, |entries, _| entries.retain(|e| !Arc::ptr_eq(&e.queue, shared)));
    ret
}

/// C: `create_queue_cpsch`: lists a new queue and, if it is active, maps
/// it with the next runlist.  On failure it is not listed; `ETIME`: the
/// HWS hung.
fn hws_add(dev: &Device, entry: crate::hws::RlEntry, hw: &mut HwState) -> Result {
    let mut guard = dev.queues.hws.lock();
    let s = Option::as_mut(&mut *guard).ok_or(EINVAL)?;
    // Again under the lock that adds it: another process may have filled
    // the runlist since CREATE_QUEUE's early check.
    crate::hws::admit(s, entry.pasid, entry.is_compute())?;
    let queue = entry.queue.clone();
    let (pushed, ret) = crate::hws::execute(dev, s, |entries, _| entries.push(entry, GFP_KERNEL));
    if let Err(e) = pushed {
        return ret.and(Err(e.into()));
    }
    if let Err(e) = ret {
        // Not mapped: unlist it (nothing to preempt if the HWS hung; else
        // the runlist without it goes out again).
        let ((), again) = crate::hws::execute(dev, s, |entries, _| entries.retain(|x| !Arc::ptr_eq(&x.queue, &queue)));
        return Err(if e == ETIME { e } else { again.err().filter(|a| *a == ETIME).unwrap_or(e) });
    }
    hw.loaded = true;
    Ok(())
}

/// C: `update_queue` under the HWS: preempts the runlist, rewrites the
/// queue's MQD (from the state the CP saved into its GTT copy) and sends
/// the runlist again, with the queue if it is active.  Results as
/// [`reload`]'s.
fn hws_update(
    q: &Queue,
    hw: &mut HwState,
    new: &Properties,
    mqd_ring: (u64, u64),
    cu_mask: Option<(&[u32], u32)>,
    active: bool,
) -> Result<Result> {
    let shared = &q.shared;
    if let Some(s) = Option::as_mut(&mut *q.dev.queues.mes.lock()) {
        let (changed, ret) = crate::mes::update(&q.dev, s, shared, (active, new.priority, new.ring_size), |removed| {
            removed && rewrite_gtt_mqd(q, hw, new, mqd_ring, cu_mask)
        });
        return match ret {
            // The removal failed: nothing changed.
            Err(e) if changed != Some(true) => Err(e),
            r => Ok(r),
        };
    }
    let mut guard = q.dev.queues.hws.lock();
    let s = Option::as_mut(&mut *guard).ok_or(EINVAL)?;
    let (changed, ret) = crate::hws::execute(&q.dev, s, |entries, preempted| {
        if !preempted || !rewrite_gtt_mqd(q, hw, new, mqd_ring, cu_mask) {
            return false;
        }
        if let Some(e) = entries.iter_mut().find(|e| Arc::ptr_eq(&e.queue, shared)) {
            e.active = active;
        }
        true
    });
    match ret {
        // The preemption failed: nothing changed.
        Err(e) if !changed => Err(e),
        r => Ok(r),
    }
}

/// Rewrites a preempted queue's MQD in GTT for `new` from the state the
/// CP saved there (and keeps the copy in `hw.mqd`); false if it could not.
fn rewrite_gtt_mqd(q: &Queue, hw: &mut HwState, new: &Properties, mqd_ring: (u64, u64), cu_mask: Option<(&[u32], u32)>) -> bool {
    let HwState { mqd, gtt, .. } = hw;
    let Some(gtt) = gtt.as_mut() else { return false };
    if gtt.read_bytes(mqd.as_bytes_mut()).is_err() {
        return false;
    }
    mqd.update(&q.dev, new, q.shared.doorbell_off, q.sdma.as_ref(), mqd_ring != q.mqd_ring, cu_mask);
    gtt.write_bytes(mqd.as_bytes()).is_ok()
}

/// C: `update_queue` without the HWS: unloads the queue, rewrites its MQD
/// for `new` (and the CU mask, if given), and loads it again if it is
/// active and not stopped.  `Err`: unloading failed and the MQD is left as
/// it was (`ETIME` adds the device to `hung`); `Ok(Err)`: the MQD
/// describes `new` but loading it failed, and the queue stays unloaded.
fn reload(
    q: &Queue,
    vm: &KgdVm,
    new: &Properties,
    mqd_ring: (u64, u64),
    cu_mask: Option<(&[u32], u32)>,
    pasid: u32,
    hung: &mut Hung,
) -> Result<Result> {
    let mut hw = q.shared.hw.lock();
    if hw.gtt.is_some() {
        let mut m = *new;
        (m.ring_base, m.ring_size) = mqd_ring;
        let active = new.is_active();
        let r = hws_update(q, &mut hw, &m, mqd_ring, cu_mask, active);
        if let Err(e) = r {
            note_unload_error(&q.dev, pasid, q.shared.qid, e, hung);
        }
        return r;
    }
    if let Err(e) = unload_hw(&q.dev, q.shared.slot, &mut hw) {
        note_unload_error(&q.dev, pasid, q.shared.qid, e, hung);
        return Err(e);
    }
    let mut m = *new;
    (m.ring_base, m.ring_size) = mqd_ring;
    hw.mqd.update(&q.dev, &m, q.shared.doorbell_off, q.sdma.as_ref(), mqd_ring != q.mqd_ring, cu_mask);
    if new.is_active() && q.shared.error.load(Relaxed) == 0 {
        return Ok(load_hw(&q.dev, vm, q.shared.slot, &mut hw, new.wptr));
    }
    Ok(Ok(()))
}

/// Which of the device queue manager's paths a device's queues take.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sched {
    /// `sched_policy` 2 or no HWS: `hqd_load` / `hqd_destroy` per queue.
    NoCpsch,
    /// The HWS's runlists (`crate::hws`).
    Hws,
    /// The MES (`crate::mes`).
    Mes,
}

fn sched_of(dev: &Device) -> Sched {
    if dev.queues.uses_mes() {
        Sched::Mes
    } else if dev.queues.uses_hws() {
        Sched::Hws
    } else {
        Sched::NoCpsch
    }
}

/// Evicts the queues of a process on every device it uses (C:
/// `kfd_process_evict_queues`: an SMI `QUEUE_EVICTION` per device with a
/// bound VM, then the dqm's `evict_process_queues` on each).  Evictions
/// nest (`dqm::Evictions`, upstream `qpd->evicted`): only the first
/// stops the queues, and every call must be paired with a
/// [`restore_process`], whatever it returned (the count goes up even if
/// a preemption failed: the queues are out of the scheduler then too).
/// The first error is returned; a hung scheduler's GPU is reset
/// ([`recover`]) before this returns.  Takes `Process::inner`: call with
/// no rkfd lock held.
pub(crate) fn evict_process(process: &Process, owner: &crate::smi::Owner, trigger: u32) -> Result {
    each_device(process, |inner, i, hung| {
        if inner.pdds[i].vm.is_some() {
            crate::smi::queue_eviction(owner, core::iter::once(inner.pdds[i].dev.gpu_id()), trigger);
        }
        evict_device(inner, i, hung)
    })
}

/// Ends one eviction of the process's queues on every device it uses (C:
/// `kfd_process_restore_queues`: an SMI `QUEUE_RESTORE` per device with a
/// bound VM, then the dqm's `restore_process_queues`); the queues run
/// again where it was the last.  As
/// [`evict_process`] for errors and locks.
pub(crate) fn restore_process(process: &Process, owner: &crate::smi::Owner) -> Result {
    each_device(process, |inner, i, hung| {
        if inner.pdds[i].vm.is_some() {
            crate::smi::queue_restore(owner, core::iter::once(inner.pdds[i].dev.gpu_id()));
        }
        restore_device(inner, i, hung)
    })
}

/// C: `kfd_evict_process_device` on each pdd of `process` in turn (the
/// dqm's `evict_process_queues` alone: no SMI event, unlike
/// [`evict_process`]), calling `then(gpu_id)` after each under
/// `Process::inner` (locks 13 and 14 may be taken there).  One more
/// eviction per device, as upstream's, which nothing here ends: the
/// queues stay off the GPU until the process restores them otherwise or
/// exits.  Errors and hung schedulers as [`evict_process`].
pub(crate) fn evict_process_devices(process: &Process, mut then: impl FnMut(u32)) -> Result {
    each_device(process, |inner, i, hung| {
        let r = evict_device(inner, i, hung);
        then(inner.pdds[i].dev.gpu_id());
        r
    })
}

/// Runs `f` on each pdd of `process` under `Process::inner`, then resets
/// the GPUs whose scheduler hung ([`recover`]); the first error.
fn each_device(process: &Process, mut f: impl FnMut(&mut ProcessInner, usize, &mut Hung) -> Result) -> Result {
    let mut hung = KVec::new();
    let ret = {
        let mut inner = process.inner.lock();
        let mut ret = Ok(());
        for i in 0..inner.pdds.len() {
            let r = f(&mut inner, i, &mut hung);
            ret = ret.and(r);
        }
        ret
    };
    recover(hung);
    ret
}

/// Marks the process's queues on GPU `gpu_id` evicted or not; the number
/// of them that are active when not evicted (upstream's count of queues
/// an eviction stops and a restore starts).
fn mark_evicted(queues: &mut KVec<Queue>, gpu_id: u32, evicted: bool) -> usize {
    let mut active = 0;
    for q in queues.iter_mut().filter(|q| q.shared.gpu_id == gpu_id) {
        q.props.is_evicted = false;
        if q.props.is_active() {
            active += 1;
        }
        q.props.is_evicted = evicted;
    }
    active
}

/// C: `evict_process_queues_nocpsch` / `_cpsch` (with its MES branch) for
/// pdd `idx`: the first eviction marks each queue of the process on the
/// device evicted (inactive) and takes the active ones off the GPU:
/// without the HWS each is preempted with `hqd_destroy` /
/// `hqd_sdma_destroy` (its state saved in its MQD); under the HWS the
/// runlist is preempted once and sent again without them (one
/// `execute_queues_cpsch`); under MES each is removed (`remove_queue_mes`).
/// A failed preemption is logged and returned, `ETIME` puts the device
/// into `hung`; the queues count as evicted either way.  Unlike upstream's
/// cpsch path, a process with no active queue on the device leaves the
/// runlist alone (nothing in it changes).
fn evict_device(inner: &mut ProcessInner, idx: usize, hung: &mut Hung) -> Result {
    let ProcessInner { pdds, queues, .. } = inner;
    let pdd = &mut pdds[idx];
    let pasid = pdd.pasid();
    if !pdd.eviction.evict() {
        // Evicted already: nothing to stop.
        return Ok(());
    }
    pdd.evicted_since_ns = kabi::time::raw_ns();
    let dev = pdd.dev.clone();
    let gpu_id = dev.gpu_id();
    if mark_evicted(&mut queues.queues, gpu_id, true) == 0 {
        return Ok(());
    }
    let mut ret = Ok(());
    let mut note = |q: &Queue, r: Result| note_evict_error(&dev, pasid, q.shared.qid, "evict", r, hung, &mut ret);
    let mine = queues.queues.iter().filter(move |q| q.shared.gpu_id == gpu_id);
    match sched_of(&dev) {
        Sched::NoCpsch => {
            for q in mine {
                // Only a loaded queue is preempted (`unload_hw` does
                // nothing for the others).
                let r = unload_hw(&dev, q.shared.slot, &mut q.shared.hw.lock());
                note(q, r);
            }
        }
        Sched::Mes => {
            let mut guard = dev.queues.mes.lock();
            if let Some(s) = Option::as_mut(&mut *guard) {
                for q in mine {
                    let r = crate::mes::evict(&dev, s, &q.shared);
                    note(q, r);
                }
            }
        }
        Sched::Hws => {
            let mut guard = dev.queues.hws.lock();
            if let Some(s) = Option::as_mut(&mut *guard) {
                let ((), r) = crate::hws::execute(&dev, s, |entries, _| {
                    for e in entries.iter_mut().filter(|e| e.pasid == pasid) {
                        e.active = false;
                    }
                });
                if let Some(q) = queues.queues.iter().find(|q| q.shared.gpu_id == gpu_id) {
                    note(q, r);
                }
            }
        }
    }
    ret
}

/// C: `restore_process_queues_nocpsch` / `_cpsch` (with its MES branch)
/// for pdd `idx`: one eviction ends; the last clears each queue's evicted
/// mark and puts the queues that are active (and not stopped by an
/// error) back: `hqd_load` / `hqd_sdma_load` of the MQD their preemption
/// saved, one runlist with them, or `add_queue_mes` each.  The eviction's
/// time is added to `stats_<gpu_id>/evicted_ms`.  Errors as
/// [`evict_device`]'s; a queue that could not be put back stays off the
/// GPU (its next update or destruction goes on from there).
fn restore_device(inner: &mut ProcessInner, idx: usize, hung: &mut Hung) -> Result {
    let ProcessInner { pdds, queues, .. } = inner;
    let pdd = &mut pdds[idx];
    let pasid = pdd.pasid();
    if !pdd.eviction.restore() {
        // Another eviction is in force, or none was (nothing to do).
        return Ok(());
    }
    let spent = kabi::time::raw_ns().saturating_sub(pdd.evicted_since_ns);
    pdd.counters.evicted_ns.fetch_add(spent, Relaxed);
    let dev = pdd.dev.clone();
    let gpu_id = dev.gpu_id();
    let active = mark_evicted(&mut queues.queues, gpu_id, false);
    if active == 0 {
        return Ok(());
    }
    let mut ret = Ok(());
    let mut note = |q: &Queue, r: Result| note_evict_error(&dev, pasid, q.shared.qid, "restore", r, hung, &mut ret);
    let all: &KVec<Queue> = &queues.queues;
    let mine = move || all.iter().filter(move |q| q.shared.gpu_id == gpu_id && q.props.is_active());
    match sched_of(&dev) {
        Sched::NoCpsch => {
            let vm = pdd.bound_vm()?;
            for q in mine() {
                if q.shared.error.load(Relaxed) != 0 {
                    continue;
                }
                let mut hw = q.shared.hw.lock();
                if hw.loaded {
                    continue;
                }
                let r = load_hw(&dev, vm, q.shared.slot, &mut hw, q.props.wptr);
                drop(hw);
                note(q, r);
            }
        }
        Sched::Mes => {
            let mut guard = dev.queues.mes.lock();
            if let Some(s) = Option::as_mut(&mut *guard) {
                for q in mine() {
                    let r = crate::mes::restore(&dev, s, &q.shared);
                    note(q, r);
                }
            }
        }
        Sched::Hws => {
            // The runlist is built from copies: which of the process's
            // queues are active, gathered before the HWS lock.
            let mut on = KVec::with_capacity(active, GFP_KERNEL)?;
            for q in mine() {
                on.push(q.shared.clone(), GFP_KERNEL)?;
            }
            let mut guard = dev.queues.hws.lock();
            if let Some(s) = Option::as_mut(&mut *guard) {
                let ((), r) = crate::hws::execute(&dev, s, |entries, _| {
                    for e in entries.iter_mut().filter(|e| e.pasid == pasid) {
                        e.active = on.iter().any(|a| Arc::ptr_eq(a, &e.queue));
                    }
                });
                if let Some(q) = mine().next() {
                    note(q, r);
                }
            }
        }
    }
    ret
}

/// A failed eviction or restore of queue `qid` (`what`), logged as
/// upstream's `Failed to evict queue %d`; `ETIME` puts the device into
/// `hung`; the first error is kept in `ret`.
fn note_evict_error(dev: &Arc<Device>, pasid: u32, qid: u32, what: &str, r: Result, hung: &mut Hung, ret: &mut Result) {
    let Err(e) = r else { return };
    kfd_err!("Pasid 0x{:x}: Failed to {} queue {}, ret {}\n", pasid, what, qid, e.to_errno());
    if e == ETIME && !hung.iter().any(|d| Arc::ptr_eq(d, dev)) {
        let _ = hung.push(dev.clone(), GFP_KERNEL);
    }
    if ret.is_ok() {
        *ret = Err(e);
    }
}

/// Logs a failed unload as upstream's `pqm_destroy_queue` does; a hung
/// scheduler's device goes to `hung`.
fn note_unload_error(dev: &Arc<Device>, pasid: u32, qid: u32, e: Error, hung: &mut Hung) {
    kfd_err!("Pasid 0x{:x} destroy queue {} failed, ret {}\n", pasid, qid, e.to_errno());
    if e == ETIME && !hung.iter().any(|d| Arc::ptr_eq(d, dev)) {
        let _ = hung.push(dev.clone(), GFP_KERNEL);
    }
}

/// Undo list of a CREATE_QUEUE that failed half-way.
struct Acquired {
    buffers: KVec<QueueBufferRef>,
    qid: Option<u32>,
    sdma: Option<rules::SdmaSlot>,
    hqd: Option<rules::HqdSlot>,
    cp_doorbell: Option<u32>,
}

impl Acquired {
    fn release(self, inner: &mut ProcessInner, dev: &Device) {
        for b in self.buffers {
            memory::queue_buffer_put(inner, b);
        }
        if let Some(qid) = self.qid {
            inner.queues.slots.free(qid);
        }
        if let Some(s) = self.sdma {
            dev.queues.state.lock().sdma.free(&s);
        }
        if let Some(h) = self.hqd {
            dev.queues.state.lock().hqds.free(h);
        }
        if let Some(id) = self.cp_doorbell {
            if let Some((_, db, _)) = inner.queues.doorbells.iter_mut().find(|(g, _, _)| *g == dev.gpu_id()) {
                db.free_cp(id);
            }
        }
    }
}

/// IOCTL: CREATE_QUEUE (C: `kfd_ioctl_create_queue`).
pub(crate) fn create(process: &Process, args: &mut uapi::kfd_ioctl_create_queue_args) -> Result {
    let user = rules::CreateArgs {
        ring_base: args.ring_base_address,
        wptr: args.write_pointer_address,
        rptr: args.read_pointer_address,
        ring_size: args.ring_size,
        queue_type: args.queue_type,
        percentage: args.queue_percentage,
        priority: args.queue_priority,
        eop_address: args.eop_buffer_address,
        eop_size: args.eop_buffer_size,
        ctx_save_address: args.ctx_save_restore_address,
        ctx_save_size: args.ctx_save_restore_size,
        ctl_stack_size: args.ctl_stack_size,
        sdma_engine_id: args.sdma_engine_id,
        metadata_ring_size: args.metadata_ring_size,
    };
    let mut props = rules::properties_from_user(&user, kabi::mm::user_addr_limit()).map_err(errno)?;
    if args.ring_size < rules::MIN_QUEUE_RING_SIZE {
        // Upstream writes the clamped size back into the arguments.
        args.ring_size = rules::MIN_QUEUE_RING_SIZE;
    }

    let mut inner = process.inner.lock();
    let gpu_id = args.gpu_id;
    let idx = inner.pdd_index(gpu_id)?;
    let dev = inner.pdds[idx].dev.clone();
    inner.pdds[idx].bound_vm().map_err(|_| ESRCH)?;
    let lim = limits(&dev);
    if props.queue_type == QueueType::SdmaByEngId {
        match lim.max_sdma_engine_id() {
            Some(max) if props.sdma_engine_id <= max => {}
            _ => return Err(EINVAL),
        }
    }
    // kfd_alloc_process_doorbells: the bitmap, and where the VM's slice
    // is in the doorbell BAR (kfd_get_process_doorbells).
    if !inner.queues.doorbells.iter().any(|(g, _, _)| *g == gpu_id) {
        let first = dev.kgd.process_doorbell_index(inner.pdds[idx].bound_vm()?);
        inner.queues.doorbells.push((gpu_id, rules::Doorbells::new(&lim), first), GFP_KERNEL)?;
    }

    let mut acq = Acquired { buffers: KVec::new(), qid: None, sdma: None, hqd: None, cp_doorbell: None };
    let mut hung = KVec::new();
    let ret = match load(process, &mut inner, &dev, &mut props, &lim, &mut acq, &mut hung) {
        Ok((qid, doorbell_id)) => {
            args.queue_id = qid;
            args.doorbell_offset = rules::doorbell_mmap_offset(gpu_id, doorbell_id);
            Ok(())
        }
        Err(e) => {
            acq.release(&mut inner, &dev);
            Err(e)
        }
    };
    drop(inner);
    recover(hung);
    ret
}

/// The part of CREATE_QUEUE after the device is known; on error the caller
/// releases what `acq` holds.
fn load(
    process: &Process,
    inner: &mut ProcessInner,
    dev: &Arc<Device>,
    props: &mut Properties,
    lim: &rules::DeviceLimits,
    acq: &mut Acquired,
    hung: &mut Hung,
) -> Result<(u32, u32)> {
    let gpu_id = dev.gpu_id();
    // The PASID of the process's VM on this device (C: `pdd->pasid`),
    // which MAP_PROCESS and MES ADD_QUEUE carry.
    let pasid = inner.pasid_of(gpu_id);
    // C: `create_queue_*`: a queue created while its process is evicted
    // is evicted (inactive) until the restore.
    props.is_evicted = inner.pdds.iter().any(|p| p.dev.gpu_id() == gpu_id && p.eviction.is_evicted());
    // kfd_queue_acquire_buffers
    let mut wanted = [None; 5];
    rules::required_buffers(props, lim, &mut wanted).map_err(errno)?;
    acq.buffers.reserve(wanted.len(), GFP_KERNEL)?;
    for b in wanted.iter().flatten() {
        let r = memory::queue_buffer_get(inner, gpu_id, b.va, b.size)?;
        acq.buffers.push(r, GFP_KERNEL)?;
    }

    // pqm_create_queue
    let on_dev = inner.queues.queues.iter().filter(|q| q.shared.gpu_id == gpu_id).count();
    if on_dev >= lim.max_queues_per_process() as usize {
        return Err(ENOSPC);
    }
    // Under the HWS or the MES: the device's queue limit and policy 1's
    // over-subscription check (`crate::hws::admit`, `crate::mes::admit`).
    let hws = dev.queues.uses_hws();
    let mes = dev.queues.uses_mes();
    if mes {
        if let Some(s) = Option::as_ref(&*dev.queues.mes.lock()) {
            crate::mes::admit(s, pasid, !props.queue_type.is_sdma())?;
        }
    }
    if hws {
        let guard = dev.queues.hws.lock();
        if let Some(s) = Option::as_ref(&*guard) {
            crate::hws::admit(s, pasid, !props.queue_type.is_sdma())?;
        }
    }
    let qid = inner.queues.slots.alloc().map_err(errno)?;
    acq.qid = Some(qid);
    inner.queues.queues.reserve(1, GFP_KERNEL)?;

    // allocate_sdma_queue / allocate_doorbell
    let doorbell_id = if props.queue_type.is_sdma() {
        let slot = dev.queues.state.lock().sdma.alloc(lim, props.queue_type, props.sdma_engine_id);
        let slot = slot.map_err(|e| {
            if e == Errno::NoMem {
                kfd_info!("No more SDMA queue to allocate on gpu {}\n", gpu_id);
            }
            errno(e)
        })?;
        acq.sdma = Some(slot);
        props.queue_type = slot.queue_type;
        props.sdma_engine_id = slot.engine;
        rules::sdma_doorbell(lim, slot.engine, slot.queue)
    } else {
        let db = inner.queues.doorbells.iter_mut().find(|(g, _, _)| *g == gpu_id).ok_or(EINVAL)?;
        let id = db.1.alloc_cp().map_err(errno)?;
        acq.cp_doorbell = Some(id);
        id
    };
    // allocate_doorbell: q->properties.doorbell_off, the BAR index (a GPU
    // driver that does not place the slice serves no user queues, as one
    // without hqd_load: EOPNOTSUPP).
    let first_db_index = inner.queues.doorbells.iter().find(|(g, _, _)| *g == gpu_id).ok_or(EINVAL)?.2.ok_or(EOPNOTSUPP)?;
    let doorbell_off = dev.gfx.doorbell_dw_offset_in_bar(first_db_index, doorbell_id).ok_or(EINVAL)?;
    // allocate_hqd (no HWS: every compute queue has an HQD)
    let slot = match acq.sdma {
        Some(s) => HwSlot::Sdma { engine: s.engine, queue: s.queue },
        None if hws || mes => HwSlot::Runlist,
        None => {
            let h = dev.queues.state.lock().hqds.alloc().map_err(errno)?;
            acq.hqd = Some(h);
            HwSlot::Compute(h)
        }
    };
    // allocate_mqd + init_mqd: under the HWS (MES) the MQD lives in GTT,
    // where MAP_QUEUES (mes_add_hw_queue) points the firmware.
    let mut gtt = if hws || mes { Some(dev.kgd.alloc_gtt_mem(MQD_GTT_BYTES)?) } else { None };
    let mqd = Mqd::new(dev, props, doorbell_off, acq.sdma.as_ref(), gtt.as_ref().map_or(0, |g| g.gpu_addr()))?;
    if let Some(g) = gtt.as_mut() {
        g.write_bytes(mqd.as_bytes())?;
    }

    let p = *props;
    let shared = Arc::pin_init(
        try_pin_init!(QueueShared {
            qid,
            gpu_id,
            process_key: process as *const Process as usize,
            pid: process.pid(),
            queue_type: p.queue_type,
            aql: p.aql,
            doorbell_id,
            doorbell_off,
            ring_base: Atomic::new(p.ring_base),
            ring_size: Atomic::new(p.ring_size),
            priority: Atomic::new(p.priority),
            percentage: Atomic::new(p.percentage),
            error: Atomic::new(0),
            slot,
            hw <- kernel::new_mutex!(HwState { mqd, loaded: false, gtt }, "QueueShared::hw"),
        }),
        GFP_KERNEL,
    )?;
    {
        let mut dqm = dev.queues.state.lock();
        dqm.queues.push(shared.clone(), GFP_KERNEL)?;
    }
    // The page table base and SH_MEM settings the scheduler gets
    // (MAP_PROCESS, MES ADD_QUEUE); register_process (update_qpd) with the
    // process's first queue on the device.
    let xnack = inner.xnack_enabled;
    let first = !inner.queues.queues.iter().any(|q| q.dev.gpu_id() == gpu_id);
    let qpd = inner.pdd(gpu_id)?.qpd(xnack, first)?;
    let vm = inner.pdds.iter().find(|p| p.dev.gpu_id() == gpu_id).ok_or(EINVAL)?.bound_vm()?;
    // Each path holds the queue's `hw` lock for its own call only, so it
    // is released before a failure unlists the queue.
    let cpsch = hws || mes;
    let r = if hws {
        // create_queue_cpsch: listed, and mapped with the next runlist if active.
        let mut hw = shared.hw.lock();
        let mqd_addr = hw.gtt.as_ref().map_or(0, |g| g.gpu_addr());
        let entry = crate::hws::RlEntry {
            queue: shared.clone(),
            pasid,
            xnack: inner.xnack_enabled,
            qpd,
            map: crate::hws::map_queues(acq.sdma.map(|s| s.engine), doorbell_off, mqd_addr, p.wptr),
            active: p.is_active(),
        };
        hws_add(dev, entry, &mut hw)
    } else if mes {
        // create_queue_cpsch with MES: known, and added if active.
        let mut hw = shared.hw.lock();
        let mqd_addr = hw.gtt.as_ref().map_or(0, |g| g.gpu_addr());
        let q = crate::mes::queue_of(p.queue_type as u32, p.aql, p.priority, p.ring_size, p.wptr, doorbell_off, mqd_addr);
        let r = match Option::as_mut(&mut *dev.queues.mes.lock()) {
            Some(s) => crate::mes::add(dev, s, shared.clone(), pasid, qpd, q, p.is_active()),
            None => Err(EINVAL),
        };
        hw.loaded = r.is_ok();
        r
    } else if p.is_active() {
        // create_queue_nocpsch: only an active queue is loaded.
        load_hw(dev, vm, slot, &mut shared.hw.lock(), p.wptr)
    } else {
        Ok(())
    };
    if let Err(e) = r {
        unlist(dev, &shared);
        if cpsch || e != EOPNOTSUPP {
            kfd_err!("process pid {} DQM create queue type {} failed. ret {:?}\n", process.pid(), props.queue_type as u32, e);
        }
        // The HWS or the MES hung: the caller resets the GPU.
        if cpsch && e == ETIME {
            let _ = hung.push(dev.clone(), GFP_KERNEL);
        }
        return Err(e);
    }

    let sysfs = process.queues_sysfs_dir().and_then(|parent| {
        let name = CString::try_from_fmt(fmt!("{}", qid)).ok()?;
        Dir::new(Parent::Dir(&parent), &name, &[c"size", c"type", c"gpuid"], shared.clone())
            .inspect_err(|e| kfd_err!("Creating queue sysfs failed: {:?}\n", e))
            .ok()
    });
    let buffers = core::mem::replace(&mut acq.buffers, KVec::new());
    // Capacity was reserved above: this cannot fail.
    let _ = inner.queues.queues.push(
        Queue {
            shared,
            dev: dev.clone(),
            props: *props,
            sdma: acq.sdma.take(),
            mqd_ring: (p.ring_base, p.ring_size),
            buffers,
            sysfs,
        },
        GFP_KERNEL,
    );
    acq.qid = None;
    acq.hqd = None;
    acq.cp_doorbell = None;
    Ok((qid, doorbell_id))
}

/// Bytes of a queue's MQD object in GTT under the HWS (every generation's
/// compute and SDMA MQD is smaller than a page).
const MQD_GTT_BYTES: usize = 4096;

/// Removes a queue from its device's list.
fn unlist(dev: &Device, shared: &Arc<QueueShared>) {
    let mut dqm = dev.queues.state.lock();
    dqm.queues.retain(|q| !Arc::ptr_eq(q, shared));
}

/// Devices whose scheduler hung while queues were destroyed; recovered by
/// [`recover`] once `Process::inner` is dropped.
pub(crate) type Hung = KVec<Arc<Device>>;

/// Destroys queue `index` of the process: preempts it (`hqd_destroy`),
/// releases its slots and buffers.  A hung scheduler (`-ETIME`) is added to
/// `hung`; the queue is gone whatever the result, which is returned as
/// upstream's `pqm_destroy_queue` does.
fn destroy_at(inner: &mut ProcessInner, index: usize, hung: &mut Hung) -> Result {
    let q = inner.queues.queues.remove(index);
    let Ok(q) = q else { return Err(EINVAL) };
    let pasid = inner.pasid_of(q.shared.gpu_id);
    // Files first: no reader sees a half-destroyed queue.
    drop(q.sysfs);
    let ret = {
        let mut hw = q.shared.hw.lock();
        if hw.gtt.is_some() {
            let r = hws_remove(&q.dev, &q.shared, &mut hw);
            // Out of the runlist (or the HWS hung, which unmapped every
            // queue): the MQD's GTT object goes now, not when the last
            // reference to the queue does.
            drop(hw.gtt.take());
            r
        } else {
            unload_hw(&q.dev, q.shared.slot, &mut hw)
        }
    };
    if let Err(e) = ret {
        note_unload_error(&q.dev, pasid, q.shared.qid, e, hung);
    }
    unlist(&q.dev, &q.shared);
    if let HwSlot::Compute(h) = q.shared.slot {
        q.dev.queues.state.lock().hqds.free(h);
    }
    if let Some(s) = q.sdma {
        q.dev.queues.state.lock().sdma.free(&s);
    } else if let Some((_, db, _)) = inner.queues.doorbells.iter_mut().find(|(g, _, _)| *g == q.shared.gpu_id) {
        db.free_cp(q.shared.doorbell_id);
    }
    inner.queues.slots.free(q.shared.qid);
    for b in q.buffers {
        memory::queue_buffer_put(inner, b);
    }
    ret
}

/// IOCTL: DESTROY_QUEUE (C: `pqm_destroy_queue`): `-EINVAL` for an unknown
/// id; `-ETIME` if the scheduler hung (the queue is destroyed all the same
/// and the GPU reset before this returns).
pub(crate) fn destroy(process: &Process, args: &mut uapi::kfd_ioctl_destroy_queue_args) -> Result {
    let mut hung = KVec::new();
    let ret = {
        let mut inner = process.inner.lock();
        let index = inner.queues.queues.iter().position(|q| q.shared.qid == args.queue_id).ok_or(EINVAL)?;
        destroy_at(&mut inner, index, &mut hung)
    };
    recover(hung);
    ret
}

/// Destroys every queue of the process (teardown, before its VMs and memory
/// go; C: `kfd_process_dequeue_from_all_devices`).  Returns hung devices for
/// [`recover`], to be called after `inner` is dropped.
pub(crate) fn destroy_all(inner: &mut ProcessInner) -> Hung {
    let mut hung = KVec::new();
    while !inner.queues.queues.is_empty() {
        let last = inner.queues.queues.len() - 1;
        let _ = destroy_at(inner, last, &mut hung);
    }
    inner.queues.doorbells.clear();
    hung
}

/// IOCTL: UPDATE_QUEUE (C: `kfd_ioctl_update_queue`,
/// `pqm_update_queue_properties`): `-EFAULT` for an unknown id, as upstream.
pub(crate) fn update(process: &Process, args: &mut uapi::kfd_ioctl_update_queue_args) -> Result {
    let ring_size = rules::check_update(
        args.ring_base_address,
        args.ring_size,
        args.queue_percentage,
        args.queue_priority,
        kabi::mm::user_addr_limit(),
    )
    .map_err(errno)?;
    let percentage = args.queue_percentage & 0xff;
    let mut hung = KVec::new();
    let ret = update_locked(process, args, ring_size, percentage, &mut hung);
    recover(hung);
    ret
}

/// UPDATE_QUEUE under `Process::inner` (C: `pqm_update_queue_properties`
/// → the dqm's `update_queue`: unload, `update_mqd`, load if active).
fn update_locked(
    process: &Process,
    args: &uapi::kfd_ioctl_update_queue_args,
    ring_size: u64,
    percentage: u32,
    hung: &mut Hung,
) -> Result {
    let mut inner = process.inner.lock();
    let index = inner.queues.queues.iter().position(|q| q.shared.qid == args.queue_id).ok_or(EFAULT)?;
    let gpu_id = inner.queues.queues[index].shared.gpu_id;
    // A NULL ring disables the queue; a new ring must be mapped memory.
    let mut new_ref = None;
    if args.ring_base_address != 0 {
        let meta = inner.queues.queues[index].props.metadata_ring_size;
        let size = ring_size.checked_add(meta).ok_or(EFAULT)?;
        new_ref = Some(memory::queue_buffer_get(&mut inner, gpu_id, args.ring_base_address, size).map_err(|_| EFAULT)?);
    }
    let inn: &ProcessInner = &inner;
    let q = &inn.queues.queues[index];
    let mut new = q.props;
    new.ring_base = args.ring_base_address;
    new.ring_size = ring_size;
    new.priority = args.queue_priority;
    new.percentage = percentage;
    new.pm4_target_xcc = (args.queue_percentage >> 8) & 0xff;
    let mqd_ring = if args.ring_base_address != 0 { (args.ring_base_address, ring_size) } else { q.mqd_ring };
    let res = match inn.pdds.iter().find(|p| p.dev.gpu_id() == gpu_id).ok_or(EINVAL).and_then(|p| Ok((p.bound_vm()?, p.pasid()))) {
        Ok((vm, pasid)) => reload(q, vm, &new, mqd_ring, None, pasid, hung),
        Err(e) => Err(e),
    };
    // Unloading failed: nothing changed.
    let loaded = match res {
        Ok(r) => r,
        Err(e) => {
            if let Some(r) = new_ref {
                memory::queue_buffer_put(&mut inner, r);
            }
            return Err(e);
        }
    };
    // The MQD describes the new properties, whether or not the GPU driver
    // took it back.
    let q = &mut inner.queues.queues[index];
    q.props = new;
    q.mqd_ring = mqd_ring;
    q.shared.ring_base.store(args.ring_base_address, Relaxed);
    q.shared.ring_size.store(ring_size, Relaxed);
    q.shared.priority.store(args.queue_priority, Relaxed);
    q.shared.percentage.store(percentage, Relaxed);
    if let Some(r) = new_ref {
        // The ring buffer is the third reference (wptr, rptr, ring).
        let old = core::mem::replace(&mut q.buffers[2], r);
        memory::queue_buffer_put(&mut inner, old);
    }
    loaded
}

/// IOCTL: SET_CU_MASK (C: `kfd_ioctl_set_cu_mask`, `pqm_update_mqd`):
/// validated and copied as upstream, then written into the MQD's static
/// thread management masks (`update_cu_mask`) and the queue reloaded.
/// The virtual GPU does not partition CUs: it runs the queue on its
/// software engine either way.
pub(crate) fn set_cu_mask(process: &Process, args: &mut uapi::kfd_ioctl_set_cu_mask_args) -> Result {
    let (bits, words) = rules::cu_mask_words(args.num_cu_mask).map_err(errno)?;
    let mut mask = KVec::from_elem(0u32, words, GFP_KERNEL)?;
    UserSlice::new(UserPtr::from_addr(args.cu_mask_ptr as usize), words * 4)
        .reader()
        .read_slice(mask.as_mut_bytes())?;
    let mut hung = KVec::new();
    let ret = (|| {
        let inner = process.inner.lock();
        let q = inner.queues.queues.iter().find(|q| q.shared.qid == args.queue_id).ok_or(EFAULT)?;
        if !rules::cu_mask_pairs_ok(q.dev.gfx, bits, &mask) {
            return Err(EINVAL);
        }
        let pdd = inner.pdds.iter().find(|p| p.dev.gpu_id() == q.shared.gpu_id).ok_or(EINVAL)?;
        reload(q, pdd.bound_vm()?, &q.props, q.mqd_ring, Some((&mask, bits)), pdd.pasid(), &mut hung)?
    })();
    recover(hung);
    ret
}

/// IOCTL: ALLOC_QUEUE_GWS (C: `kfd_ioctl_alloc_queue_gws`): `-EINVAL` for
/// an unknown queue, `-ENODEV` because the device has no GWS.
pub(crate) fn alloc_gws(process: &Process, args: &mut uapi::kfd_ioctl_alloc_queue_gws_args) -> Result {
    let inner = process.inner.lock();
    inner.queues.queues.iter().find(|q| q.shared.qid == args.queue_id).ok_or(EINVAL)?;
    Err(ENODEV)
}

/// IOCTL: GET_QUEUE_WAVE_STATE (C: `get_wave_state` of the DQM and the v9
/// MQD manager): `-EFAULT` for an unknown id, `-EINVAL` unless an inactive
/// compute queue; then an empty control stack (no waves were saved).
pub(crate) fn get_wave_state(process: &Process, args: &mut uapi::kfd_ioctl_get_queue_wave_state_args) -> Result {
    let inner = process.inner.lock();
    let q = inner.queues.queues.iter().find(|q| q.shared.qid == args.queue_id).ok_or(EFAULT)?;
    if q.props.queue_type != QueueType::Compute || q.props.is_active() || q.dev.info.cwsr_size == 0 {
        return Err(EINVAL);
    }
    let (header, ctl_used, save_used) = rules::idle_wave_state(q.props.ctl_stack_size);
    let mut bytes = [0u8; 16];
    for (i, v) in header.iter().enumerate() {
        bytes[i * 4..i * 4 + 4].copy_from_slice(&v.to_ne_bytes());
    }
    // `struct kfd_context_save_area_header.wave_state`: control stack
    // offset/size, wave state offset/size.
    UserSlice::new(UserPtr::from_addr(args.ctl_stack_address as usize), bytes.len())
        .writer()
        .write_slice(&bytes)?;
    args.ctl_stack_used_size = ctl_used;
    args.save_area_used_size = save_used;
    Ok(())
}

/// Recovers devices whose scheduler hung (C: the HWS-hang path of
/// `unmap_queues_cpsch` → `kfd_hws_hang` → amdgpu reset →
/// `kgd2kfd_pre_reset` / `kfd_signal_reset_event` / `kgd2kfd_post_reset`,
/// with SMI `GPU_PRE_RESET` / `GPU_POST_RESET` events): resets the GPU (every
/// queue on it stops with `KGD_QUEUE_ERROR_RESET`), counts the hang and
/// notifies every process using the device through its HW_EXCEPTION events
/// (whole-GPU reset, cause GPU_HANG, memory lost).  Call without any rkfd
/// lock held.
pub(crate) fn recover(hung: Hung) {
    for dev in hung {
        kfd_err!("GPU reset begin! gpu_id {} (HWS hang)\n", dev.gpu_id());
        crate::smi::gpu_reset(&dev, false, "HWS hang");
        if let Err(e) = dev.kgd.gpu_reset() {
            kfd_err!("GPU reset of gpu {} failed: {:?}\n", dev.gpu_id(), e);
        }
        dev.queues.hang_count.fetch_add(1, Relaxed);
        dev.queues.last_reset.store(ResetReason::HwsHang as u32, Relaxed);
        {
            // Queues still loaded were reset with the GPU.
            let dqm = dev.queues.state.lock();
            for q in dqm.queues.iter() {
                let _ = q.error.cmpxchg(0, rules::QUEUE_ERROR_RESET, Relaxed);
            }
        }
        if let Some(s) = Option::as_mut(&mut *dev.queues.hws.lock()) {
            // The reset dropped the HIQ and the runlist: start over.
            crate::hws::reset(&dev, s);
        }
        if let Some(s) = Option::as_mut(&mut *dev.queues.mes.lock()) {
            // The reset took every queue off the MES.
            crate::mes::reset(s);
        }
        signal_reset(&dev);
        // As kgd2kfd_post_reset after the reset amdgpu runs for a hang.
        dev.sram_ecc_flag.store(0, Relaxed);
        crate::smi::gpu_reset(&dev, true, "");
        kfd_info!("GPU reset succeeded, gpu_id {}\n", dev.gpu_id());
    }
}

/// C: `kfd_signal_reset_event` (an HWS hang here, `kgd2kfd_pre_reset` in
/// `crate::power`): every process with a pdd on the device gets its
/// HW_EXCEPTION events set; after an SRAM ECC error
/// (`kgd2kfd_set_sram_ecc_flag`) with the ECC cause, and its MEMORY events
/// set too (ErrorType `KFD_MEM_ERR_SRAM_ECC`, imprecise).
pub(crate) fn signal_reset(dev: &Device) {
    let Ok(all) = crate::process::snapshot() else { return };
    let ecc = dev.sram_ecc_flag.load(Relaxed) != 0;
    let hw = uapi::kfd_hsa_hw_exception_data {
        reset_type: uapi::KFD_HW_EXCEPTION_WHOLE_GPU_RESET,
        reset_cause: if ecc { uapi::KFD_HW_EXCEPTION_ECC } else { uapi::KFD_HW_EXCEPTION_GPU_HANG },
        memory_lost: 1,
        gpu_id: dev.gpu_id(),
    };
    let mut memory = uapi::kfd_hsa_memory_exception_data {
        ErrorType: uapi::KFD_MEM_ERR_SRAM_ECC,
        gpu_id: dev.gpu_id(),
        ..Default::default()
    };
    memory.failure.imprecise = 1;
    for p in all.iter() {
        if p.uses_device(dev.gpu_id()) {
            p.events.signal_reset(&hw, ecc.then_some(&memory));
        }
    }
}

/// C: `dqm->ops.stop` (`crate::power`: `kgd2kfd_suspend`,
/// `kgd2kfd_pre_reset`): under the HWS `stop_cpsch` (every queue unmapped,
/// no runlist sent until [`sched_start`]); under MES every queue removed
/// from the firmware (`remove_all_kfd_queues_mes`); without a scheduler
/// nothing, as `stop_nocpsch` (loaded queues stay: a suspend of the
/// processes has preempted them).  A hung scheduler is left to the reset
/// that follows.  Call with no rkfd lock held.
pub(crate) fn sched_stop(dev: &Device) {
    if let Some(s) = Option::as_mut(&mut *dev.queues.hws.lock()) {
        crate::hws::suspend(dev, s);
    }
    if let Some(s) = Option::as_mut(&mut *dev.queues.mes.lock()) {
        if let Err(e) = crate::mes::stop_all(dev, s) {
            kfd_err!("gpu_id {}: removing the queues from MES failed: {:?}\n", dev.gpu_id(), e);
        }
    }
}

/// C: `dqm->ops.start` (`kfd_resume`): under the HWS `start_cpsch` (the
/// HIQ loaded again, SET_RESOURCES, the runlist of the active queues
/// unless `halted`); under MES the queues rkfd wants running go back to
/// the firmware unless `halted`.  Call with no rkfd lock held.
pub(crate) fn sched_start(dev: &Device, halted: bool) -> Result {
    if let Some(s) = Option::as_mut(&mut *dev.queues.hws.lock()) {
        crate::hws::resume(dev, s)?;
    }
    if let Some(s) = Option::as_mut(&mut *dev.queues.mes.lock()) {
        if !halted {
            crate::mes::start_all(dev, s)?;
        }
    }
    Ok(())
}

/// C: `dqm->ops.halt` / `unhalt` (`halt_cpsch`, `unhalt_cpsch`): the
/// HWS's runlist or the MES's queues come off the GPU and stay off until
/// the unhalt; nothing without a scheduler.  A hung HWS resets the GPU
/// ([`recover`]).  Call with no rkfd lock held.
pub(crate) fn sched_halt(dev: &Device, halt: bool) -> Result {
    let r = match Option::as_mut(&mut *dev.queues.hws.lock()) {
        Some(s) if halt => crate::hws::halt(dev, s),
        Some(s) => crate::hws::unhalt(dev, s),
        None => Ok(()),
    };
    if r == Err(ETIME) {
        if let Ok(Some(d)) = crate::device::by_kfd_handle((dev as *const Device).cast()) {
            let mut hung = KVec::new();
            if hung.push(d, GFP_KERNEL).is_ok() {
                recover(hung);
            }
        }
        return r;
    }
    r?;
    if let Some(s) = Option::as_mut(&mut *dev.queues.mes.lock()) {
        return if halt { crate::mes::stop_all(dev, s) } else { crate::mes::start_all(dev, s) };
    }
    Ok(())
}

/// C: `kfd_compute_active`: user queues are on the GPU (a runlist on the
/// HWS, a queue on the MES, a loaded HQD without a scheduler).
pub(crate) fn compute_active(dev: &Device) -> bool {
    if let Some(s) = Option::as_ref(&*dev.queues.hws.lock()) {
        return crate::hws::runlist_active(s);
    }
    if let Some(s) = Option::as_ref(&*dev.queues.mes.lock()) {
        return crate::mes::any_added(s);
    }
    device_queues(dev).is_ok_and(|qs| qs.iter().any(|q| q.hw.lock().loaded))
}

/// debugfs `hang_hws` (C: `kfd_debugfs_hang_hws`): makes the device's
/// scheduler stop answering.  With the HWS (`sched_policy` 0 and 1) this
/// is upstream's HIQ packet of 0x55 ([`crate::hws::debugfs_hang`]), on any
/// GPU driver with a HIQ; the hang is detected at the next preemption (the
/// fence times out), which resets the GPU.  Without the HWS (policy 2,
/// where upstream refuses) it is the GPU driver's test hook `hws_hang`
/// (the virtual GPU's engines stop answering `hqd_destroy`, which then
/// says `-ETIME`; `-EOPNOTSUPP` from a driver without the hook).
/// `-EINVAL` for an unknown gpu_id and, as upstream, for a GPU scheduled
/// by MES (GFX11+).
pub(crate) fn hang_hws(gpu_id: u32) -> Result {
    let dev = crate::device::all()?.into_iter().find(|d| d.gpu_id() == gpu_id).ok_or(EINVAL)?;
    if dev.gfx.uses_mes() {
        kfd_err!("MES not support hang_hws\n");
        return Err(EINVAL);
    }
    kfd_info!("hang_hws: hanging the scheduler of gpu {}\n", gpu_id);
    if let Some(s) = Option::as_mut(&mut *dev.queues.hws.lock()) {
        return crate::hws::debugfs_hang(&dev, s);
    }
    dev.kgd.hws_hang()
}

/// Adapts a formatter of this module to a debugfs file.
struct DebugText(fn(&mut kernel::fmt::Formatter<'_>) -> Result);

impl crate::debugfs::Show for DebugText {
    fn show(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        (self.0)(f).map_err(|_| kernel::fmt::Error)
    }
}

/// `kfd/hang_hws`: write a decimal gpu_id.
struct HangHws;

impl crate::debugfs::Show for HangHws {
    fn show(&self, _f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        Ok(())
    }
}

impl crate::debugfs::Store for HangHws {
    fn store(&self, input: &[u8]) -> Result {
        // Upstream copies at most 15 bytes and parses with kstrtoint.
        if input.len() > 15 {
            return Err(EINVAL);
        }
        let s = core::str::from_utf8(input).map_err(|_| EINVAL)?;
        let gpu_id = s.trim().parse::<u32>().map_err(|_| EINVAL)?;
        hang_hws(gpu_id)
    }
}

/// The queue files of `kfd/`: `mqds`, `hqds`, `rls`, `hang_hws`.
pub(crate) fn debugfs_files(root: &crate::debugfs::DebugDir, files: &mut KVec<crate::debugfs::DebugFile>) -> Result {
    files.push(root.file(c"mqds", Arc::new(DebugText(|f| debugfs_mqds(f)), GFP_KERNEL)?)?, GFP_KERNEL)?;
    files.push(root.file(c"hqds", Arc::new(DebugText(|f| debugfs_hqds(f)), GFP_KERNEL)?)?, GFP_KERNEL)?;
    files.push(root.file(c"rls", Arc::new(DebugText(|f| debugfs_rls(f)), GFP_KERNEL)?)?, GFP_KERNEL)?;
    files.push(root.file_rw(c"hang_hws", Arc::new(HangHws, GFP_KERNEL)?)?, GFP_KERNEL)?;
    Ok(())
}

/// Snapshot of a device's loaded queues (taken under the dqm lock, used
/// without it: asking the GPU driver for a queue's state may wait for its
/// engines, whose interrupts take the dqm lock).
fn device_queues(dev: &Device) -> Result<KVec<Arc<QueueShared>>> {
    let dqm = dev.queues.state.lock();
    let mut out = KVec::with_capacity(dqm.queues.len(), GFP_KERNEL)?;
    for q in dqm.queues.iter() {
        out.push(q.clone(), GFP_KERNEL)?;
    }
    Ok(out)
}

/// debugfs `mqds` (C: `kfd_debugfs_mqds_by_process` / `pqm_debugfs_mqds`
/// and the managers' `debugfs_show_mqd`): per process "Process <tgid> PASID
/// <pid>:" (upstream 7.3's format: its PASIDs are per device, so the line
/// shows the lead thread's pid where the process PASID was), then per queue "  Compute queue on device <gpu_id>" or
/// "  SDMA queue on device <gpu_id>" and the MQD's bytes as
/// `seq_hex_dump` prints them.
pub(crate) fn debugfs_mqds(out: &mut impl Write) -> Result {
    let devs = crate::device::all()?;
    for p in crate::process::snapshot()?.iter() {
        let _ = writeln!(out, "Process {} PASID {}:", p.pid(), p.pid());
        for dev in devs.iter() {
            for q in device_queues(dev)?.iter().filter(|q| q.belongs_to(p)) {
                let kind = if q.queue_type == QueueType::Compute { "Compute" } else { "SDMA" };
                let _ = writeln!(out, "  {} queue on device {:x}", kind, q.gpu_id);
                let hw = q.hw.lock();
                let _ = mqd::hex_dump(out, hw.mqd.as_bytes());
            }
        }
    }
    Ok(())
}

/// debugfs `hqds` (C: `kfd_debugfs_hqds_by_device` and
/// `dqm_debugfs_hqds`): per device "Node <n>, gpu_id <hex>:", then the HQD
/// registers as the GPU driver's `hqd_dump` / `hqd_sdma_dump` read them,
/// each dump printed as `seq_reg_dump` does: the HIQ's ("   Inst 0, HIQ on
/// MEC <m> Pipe <p> Queue <q>", if the driver dumps that slot), every HQD
/// of the MEC's pipes (" Inst 0,  CP Pipe <p>, Queue <q>": rkfd's CP queue
/// bitmap is all of `num_pipe_per_mec` x `num_queue_per_pipe`), then every
/// RLC queue of every SDMA engine ("  SDMA Engine <e>, RLC <q>"); an
/// engine the driver refuses (`EINVAL`) ends that engine's queues, as
/// upstream.  Whatever the scheduler (no HWS, HWS, MES), the slots are the
/// GPU's, occupied or not.  rkfd has one XCC per device and no stopped
/// scheduler state (upstream's " Device is stopped" while
/// `!dqm->sched_running`).  Takes no rkfd lock across the driver's calls.
pub(crate) fn debugfs_hqds(out: &mut impl Write) -> Result {
    let mut dump = [[0u32; 2]; kabi::kgd::HQD_DUMP_MAX_REGS];
    for (node, dev) in crate::device::all()?.into_iter().enumerate() {
        let _ = writeln!(out, "Node {}, gpu_id {:x}:", node + 1, dev.gpu_id());
        let i = &dev.info;
        let pipes = i.num_pipe_per_mec.max(1);
        let (hiq_pipe, hiq_queue) = (crate::kernel_queue::HIQ_PIPE, crate::kernel_queue::HIQ_QUEUE);
        if let Ok(n) = dev.kgd.hqd_dump(hiq_pipe, hiq_queue, &mut dump) {
            let _ = writeln!(out, "   Inst 0, HIQ on MEC {} Pipe {} Queue {}", hiq_pipe / pipes + 1, hiq_pipe % pipes, hiq_queue);
            let _ = mqd::reg_dump(out, &dump[..n]);
        }
        for pipe in 0..i.num_pipe_per_mec {
            for queue in 0..i.num_queue_per_pipe {
                let Ok(n) = dev.kgd.hqd_dump(pipe, queue, &mut dump) else { break };
                let _ = writeln!(out, " Inst 0,  CP Pipe {}, Queue {}", pipe, queue);
                let _ = mqd::reg_dump(out, &dump[..n]);
            }
        }
        let engines = i.num_sdma_engines.saturating_add(i.num_sdma_xgmi_engines);
        for engine in 0..engines {
            for queue in 0..i.num_sdma_queues_per_engine {
                let Ok(n) = dev.kgd.hqd_sdma_dump(engine, queue, &mut dump) else { break };
                let _ = writeln!(out, "  SDMA Engine {}, RLC {}", engine, queue);
                let _ = mqd::reg_dump(out, &dump[..n]);
            }
        }
    }
    Ok(())
}

/// debugfs `rls` (C: `kfd_debugfs_rls_by_device` and
/// `pm_debugfs_runlist`): per device "Node <n>, gpu_id <hex>:", then the
/// runlist IB on the HWS as `seq_hex_dump` prints it (`  <offset>: ` and 8
/// dwords a row), or "  No active runlist" (none on the HWS, or no HWS:
/// `sched_policy` 2, as upstream, whose packet manager then never
/// allocates one).  Takes the device's `hws` lock alone.
pub(crate) fn debugfs_rls(out: &mut impl Write) -> Result {
    for (node, dev) in crate::device::all()?.into_iter().enumerate() {
        let _ = writeln!(out, "Node {}, gpu_id {:x}:", node + 1, dev.gpu_id());
        let guard = dev.queues.hws.lock();
        let _ = match guard.as_ref() {
            Some(s) => crate::hws::debugfs_runlist(s, out),
            None => writeln!(out, "  No active runlist"),
        };
    }
    Ok(())
}

/// Marks the queue of `process` on `dev` whose doorbell index is
/// `doorbell_id` (how the hardware names a queue in its interrupts) as
/// stopped by `reason` (interrupt path: takes only the dqm lock).  Returns
/// its queue id, `None` if there is no such queue.
pub(crate) fn mark_error(dev: &Device, process: &Process, doorbell_id: u32, reason: u32) -> Option<u32> {
    let dqm = dev.queues.state.lock();
    let q = dqm.queues.iter().find(|q| q.doorbell_id == doorbell_id && q.belongs_to(process))?;
    q.error.store(reason, Relaxed);
    Some(q.qid)
}

#[kunit_tests(rkfd_queue)]
mod tests {
    use super::*;

    #[test]
    fn errnos_map_to_upstream_values() {
        assert_eq!(errno(Errno::Inval).to_errno(), -22);
        assert_eq!(errno(Errno::Fault).to_errno(), -14);
        assert_eq!(errno(Errno::NotSupp).to_errno(), -524);
        assert_eq!(errno(Errno::NoSpc).to_errno(), -28);
        assert_eq!(errno(Errno::NoMem).to_errno(), -12);
        assert_eq!(errno(Errno::Busy).to_errno(), -16);
    }

    #[test]
    fn user_limit_is_below_kernel_space() {
        let limit = kabi::mm::user_addr_limit();
        assert!(limit > (1 << 46) && limit <= (1 << 56));
        assert!(rules::access_ok(limit - 8, 8, limit));
        assert!(!rules::access_ok(limit - 4, 8, limit));
    }

    #[test]
    fn doorbell_offset_encodes_type_gpu_and_slot() {
        let off = rules::doorbell_mmap_offset(0xabcd, 0x190);
        assert_eq!(off >> 62, 3);
        assert_eq!((off >> 46) & 0xffff, 0xabcd);
        assert_eq!(off & ((1 << 46) - 1), 0x190 * 8);
    }
}
