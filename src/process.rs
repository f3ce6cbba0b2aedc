// SPDX-License-Identifier: GPL-2.0

//! KFD processes: the driver's per-process context.
//!
//! C: `struct kfd_process` and `struct kfd_process_device` (pdd),
//! `kfd_process.c`.  One process exists per `mm`: every open of `/dev/kfd`
//! by the same address space shares it, and it is torn down when the last
//! such file is released, giving back every GPU VM, memory object and event.
//! Only the thread group that created it may use it (upstream's
//! `lead_thread` rule, checked by the ioctl dispatcher).
//!
//! Lock order: see the crate root (`src/rkfd_main.rs`).  `Process::inner`
//! is upstream's `p->mutex`; the mm's `mmap_lock` may be taken under it
//! (pinning user pages, as upstream takes it under `p->mutex`), so the
//! `/dev/kfd` mmap handler, which runs under `mmap_lock`, never takes
//! `inner`: it uses `Process::mmap`.
//!
//! PASIDs: the GPU driver owns them, one per VM (amdgpu allocates it when
//! the render node is opened; upstream 7.3, which has no KFD PASID of its
//! own).  `ACQUIRE_VM` learns the VM's PASID from kfd2kgd `acquire_vm` and
//! keeps it as the pdd's ([`ProcessDevice::pasid`], upstream `pdd->pasid`
//! set in `kfd_process_device_init_vm`), so one process has a different
//! PASID on each GPU.  The GPU driver tags the VM's interrupts with it,
//! MAP_PROCESS and MES ADD_QUEUE carry it, and [`find_by_pasid`] maps an
//! interrupt's (device, PASID) back to the process (upstream
//! `kfd_lookup_process_by_pasid`).  It is 0 again once the process gave
//! the VM back, before the driver can free it for reuse.
//!
//! SVM (`crate::svm`) takes `mmap_lock` and then its list lock; it never
//! takes `inner` with its locks held (it copies what it needs first).

use crate::kabi::log::kfd_warn;
use kernel::{
    current,
    mm::Mm,
    new_mutex,
    prelude::*,
    sync::{aref::ARef, atomic::Relaxed, Arc, Mutex},
    task::{Pid, Task}, //
};

use crate::{
    debugfs::ProcDir,
    device::{self, Device},
    event::Events,
    kabi::{
        devcgroup,
        kgd::{DrmFile, EvictionFence, KgdVm, MmId},
        mm::{MmNotifier, MmRelease},
        sysfs::Dir,
    },
    memory::MemoryObjects,
    packet_manager::hws_format::qpd::ShMem,
    procfs::{self, PddPasid, ProcCounters, ProcSysfs},
    svm::Svms,
};

/// What `/dev/kfd` mmap needs of one device of a process (upstream reads
/// the pdd without `p->mutex` in `kfd_mmap`).
pub(crate) struct MmapTarget {
    /// The device's gpu_id.
    pub(crate) gpu_id: u32,
    /// The device.
    pub(crate) dev: Arc<Device>,
    /// Its VM, once `ACQUIRE_VM` bound one.
    pub(crate) vm: Option<Arc<KgdVm>>,
}

/// Per-process data of one device (C: `struct kfd_process_device`, pdd).
pub(crate) struct ProcessDevice {
    /// The device.
    pub(crate) dev: Arc<Device>,
    /// The GPU VM, once `ACQUIRE_VM` bound one (upstream `drm_priv`).
    /// Shared only with `Process::mmap`; released when the last goes.
    pub(crate) vm: Option<Arc<KgdVm>>,
    /// Memory objects allocated on this device, by IDR handle.
    pub(crate) mem: MemoryObjects,
    /// `SET_SCRATCH_BACKING_VA` (upstream `qpd.sh_hidden_private_base`).
    pub(crate) scratch_backing_va: u64,
    /// `SET_TRAP_HANDLER`: trap base and trap memory addresses.
    pub(crate) trap_handler: (u64, u64),
    /// `SET_MEMORY_POLICY`: default and alternate policy, aperture base/size.
    pub(crate) memory_policy: (u32, u32, u64, u64),
    /// The SH_MEM settings of the process on this device (C:
    /// `qpd->sh_mem_*`): set by SET_MEMORY_POLICY, completed when a queue
    /// is created ([`Self::qpd`]).
    pub(crate) sh_mem: ShMem,
    /// What `proc/<pid>/` shows for this device (VRAM usage, ...).
    pub(crate) counters: Arc<ProcCounters>,
    /// Evictions of the process's queues on this device in force (C:
    /// `pdd->qpd.evicted`, a count: host-tested in `amdgpu-hw`'s dqm
    /// model; `crate::queue::evict_process`).
    pub(crate) eviction: crate::packet_manager::hws_format::dqm::Evictions,
    /// When the current eviction began (`raw_ns`; C:
    /// `pdd->last_evict_timestamp`).
    pub(crate) evicted_since_ns: u64,
    /// The VM's eviction fence from the GPU driver (C: `p->ef`, one per VM
    /// here: each GPU driver call makes its own), replaced at each restore
    /// (`crate::eviction`).
    pub(crate) ef: Option<EvictionFence>,
}

/// What the scheduler programs for a process's VMID on one device (C: the
/// `qcm_process_device` fields MAP_PROCESS and `add_queue_mes` read:
/// `page_table_base`, `sh_mem_*`).  No trap handler (`tba_addr` /
/// `tma_addr` 0: rkfd installs none), no GDS/GWS/OAC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Qpd {
    /// `qpd->page_table_base`: the VM's page directory as the GPU driver
    /// reports it (kfd2kgd `get_process_page_dir`).
    pub(crate) page_table_base: u64,
    /// `qpd->sh_mem_config`, `sh_mem_bases`, `sh_mem_ape1_*`.
    pub(crate) sh_mem: ShMem,
}

/// GPU virtual address apertures of a GFX9+ device
/// (upstream `kfd_init_apertures_v9`).
pub(crate) struct Apertures {
    pub(crate) lds_base: u64,
    pub(crate) lds_limit: u64,
    pub(crate) scratch_base: u64,
    pub(crate) scratch_limit: u64,
    pub(crate) gpuvm_base: u64,
    pub(crate) gpuvm_limit: u64,
}

impl Apertures {
    /// The apertures every GFX9+ process sees: LDS at 1 << 48, scratch at
    /// 2 << 48 (4 GiB each), GPU VM from 64 KiB (`AMDGPU_VA_RESERVED_BOTTOM`)
    /// to the 47-bit VA limit.
    pub(crate) const V9: Apertures = Apertures {
        lds_base: 1 << 48,
        lds_limit: (1 << 48) | 0xffff_ffff,
        scratch_base: 2 << 48,
        scratch_limit: (2 << 48) | 0xffff_ffff,
        gpuvm_base: 1 << 16,
        gpuvm_limit: (1 << 47) - 1,
    };
}

impl ProcessDevice {
    /// The VM's PASID, which the GPU driver allocated and owns (upstream
    /// `pdd->pasid`): 0 until `ACQUIRE_VM` and after teardown.  What
    /// MAP_PROCESS and MES ADD_QUEUE carry and the device's interrupts
    /// name the process by.  Kept in `counters.pasid` only, which readers
    /// that do not take `Process::inner` use too (the interrupt path,
    /// debugfs).
    pub(crate) fn pasid(&self) -> u32 {
        self.counters.pasid.load(Relaxed)
    }

    /// Sets [`Self::pasid`] (`ACQUIRE_VM`, teardown; under `Process::inner`),
    /// and binds it in the device's VM fault fast path (the old one
    /// unbound).
    pub(crate) fn set_pasid(&mut self, pasid: u32) {
        let old = self.counters.pasid.xchg(pasid, Relaxed);
        if old != 0 && old != pasid {
            self.dev.faults.unbind(old);
        }
        if pasid != 0 {
            self.dev.faults.bind(pasid);
        }
    }

    /// The per-device data of a new process.
    pub(crate) fn new(dev: Arc<Device>) -> Result<Self> {
        let counters = ProcCounters::new(dev.gpu_id())?;
        Ok(ProcessDevice {
            dev,
            vm: None,
            mem: MemoryObjects::new(),
            scratch_backing_va: 0,
            trap_handler: (0, 0),
            memory_policy: (0, 0, 0, 0),
            sh_mem: ShMem::default(),
            counters,
            eviction: Default::default(),
            evicted_since_ns: 0,
            ef: None,
        })
    }

    /// What MAP_PROCESS and MES ADD_QUEUE carry for a new queue: the page
    /// table base (`amdgpu_amdkfd_gpuvm_get_process_page_dir`) and the
    /// SH_MEM settings, which the process's first queue on the device
    /// (`first`, C: `register_process`) completes with `update_qpd` (the
    /// XNACK mode `xnack` in `sh_mem_config` on GFX9).  `-ENODEV` before
    /// `ACQUIRE_VM`.
    pub(crate) fn qpd(&mut self, xnack: bool, first: bool) -> Result<Qpd> {
        let page_table_base = self.dev.kgd.process_page_dir(self.bound_vm()?);
        if first {
            let gfx = self.dev.gfx;
            let a = &Apertures::V9;
            self.sh_mem.update_qpd(gfx, gfx.noretry_default(), xnack, a.lds_base, a.scratch_base);
        }
        Ok(Qpd { page_table_base, sh_mem: self.sh_mem })
    }

    /// The GPU VM, or `-ENODEV` before `ACQUIRE_VM` (upstream
    /// `kfd_bind_process_to_device`).
    pub(crate) fn bound_vm(&self) -> Result<&KgdVm> {
        self.vm.as_deref().ok_or(ENODEV)
    }
}

/// The mutable state of a process (upstream fields under `p->mutex`).
pub(crate) struct ProcessInner {
    /// One entry per device that existed when the process was created.
    pub(crate) pdds: KVec<ProcessDevice>,
    /// XNACK (GPU retry faults) enabled for this process.
    pub(crate) xnack_enabled: bool,
    /// User-mode queues (upstream `p->pqm`), see `crate::queue`.
    pub(crate) queues: crate::queue::ProcessQueues,
}

impl ProcessInner {
    /// KUnit: the state of a process using `pdds`.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn for_tests(pdds: KVec<ProcessDevice>) -> Self {
        ProcessInner { pdds, xnack_enabled: false, queues: crate::queue::ProcessQueues::new() }
    }

    /// The pdd of `gpu_id` (upstream `kfd_process_device_data_by_id`).
    pub(crate) fn pdd(&mut self, gpu_id: u32) -> Result<&mut ProcessDevice> {
        self.pdds.iter_mut().find(|p| p.dev.gpu_id() == gpu_id).ok_or(EINVAL)
    }

    /// The PASID of the process's VM on `gpu_id` (C: `pdd->pasid`), 0 for
    /// a device not bound (or not the process's).
    pub(crate) fn pasid_of(&self, gpu_id: u32) -> u32 {
        self.pdds.iter().find(|p| p.dev.gpu_id() == gpu_id).map_or(0, |p| p.pasid())
    }

    /// Index of the pdd of `gpu_id`.
    pub(crate) fn pdd_index(&self, gpu_id: u32) -> Result<usize> {
        self.pdds.iter().position(|p| p.dev.gpu_id() == gpu_id).ok_or(EINVAL)
    }
}

/// A KFD process.
#[pin_data(PinnedDrop)]
pub(crate) struct Process {
    /// The group leader of the thread group that created it.
    lead_thread: ARef<Task>,
    /// The address space it belongs to (a `mmgrab` reference: identity only).
    mm: ARef<Mm>,
    /// Thread group id of the creator, for messages and sysfs.
    pid: Pid,
    /// Everything that changes (upstream `p->mutex`).  Lock order: after
    /// [`static@PROCESSES`], before the mm's `mmap_lock` and the SVM list lock;
    /// kfd2kgd calls are made under it.  A GPU retry fault takes it on the
    /// GPU driver's engine thread with no other lock held, so nothing done
    /// under it waits for a retry fault to be served (preemptions wait only
    /// for the engines to leave the queues: crate root, 3a).
    #[pin]
    pub(crate) inner: Mutex<ProcessInner>,
    /// The notifier that reports the end of `mm`.  A leaf, held only to
    /// store or take the notifier: its callback takes `inner` (and the
    /// SVM locks), and unregistering waits for the callback, so the
    /// notifier is dropped with neither this nor `inner` held.
    #[pin]
    mm_notifier: Mutex<Option<MmNotifier>>,
    /// `proc/<pid>/` in sysfs (its files take no lock).  A leaf.
    #[pin]
    sysfs: Mutex<Option<ProcSysfs>>,
    /// `kfd/proc/<pid>/` in debugfs (its files take no lock unless they
    /// say so: `svm_ranges` takes `mmap_lock` and the SVM list lock).  A
    /// leaf, held only to store or take the directory, which is dropped
    /// outside it.  Other subsystems add files with [`ProcDir::add`].
    #[pin]
    pub(crate) debugfs: Mutex<Option<ProcDir>>,
    /// The devices for `/dev/kfd` mmap.  A leaf, taken under `inner` or
    /// under `mmap_lock` (the mmap handler; see the crate root's lock order).
    #[pin]
    pub(crate) mmap: Mutex<KVec<MmapTarget>>,
    /// The eviction works' registration (`crate::eviction`): set once the
    /// process is pinned, taken (which cancels and waits for the works) at
    /// teardown and first thing in `drop`.  A leaf, held only to store or
    /// take it; the registration is dropped outside every lock.
    #[pin]
    evict: Mutex<Option<crate::eviction::Registration<Process>>>,
    /// Every pdd's counters, in `inner.pdds`' order, fixed at creation:
    /// the pdds' PASIDs (`ProcCounters::pasid`) readable without `inner`,
    /// by which [`find_by_pasid`] finds the process under [`PROCESSES`].
    pdd_counters: KVec<Arc<ProcCounters>>,
    /// Events and the signal page (C: `p->event_*`, `p->signal_*`).  Its
    /// lock is a leaf, taken inside `inner`.
    #[pin]
    pub(crate) events: Events,
    /// Shared virtual memory (C: `p->svms`): the range tree, notifiers,
    /// GPU mappings, migration; see [`crate::svm`] (its locks are in the
    /// crate root's lock order).  Shared with the debugfs `svm_ranges` file and the
    /// notifiers (an `Arc`, so they need no reference to the process).
    pub(crate) svms: Arc<Svms>,
}

#[pinned_drop]
impl PinnedDrop for Process {
    /// A process dropped with its notifier still registered (an open that
    /// failed after registering it, e.g. `prepare_mm` interrupted by
    /// SIGKILL): unregister before any field goes.  Unregistering runs the
    /// notifier's `release` (teardown) if the mm is alive, which uses
    /// `inner`, `events`, `svms`...; left to the fields' drop order, `inner`
    /// was freed first (use-after-free found by kfd-storm).
    fn drop(self: Pin<&mut Self>) {
        // The eviction works use the process: cancel them before it goes.
        let evict = self.evict.lock().take();
        drop(evict);
        let notifier = self.mm_notifier.lock().take();
        drop(notifier);
    }
}

// SAFETY: A process keeps the notifier registered for it only in
// `mm_notifier`, and drops it in `release_file` (while the caller's `Arc`
// keeps the process alive) or, first thing, in its `PinnedDrop` above, so
// the notifier never outlives the process nor anything `mm_released` uses.
unsafe impl MmRelease for Process {
    fn mm_released(&self) {
        Process::mm_released(self);
    }
}

/// An entry of the process table.
struct ProcessEntry {
    process: Arc<Process>,
    /// Open `/dev/kfd` files that refer to it.
    files: usize,
}

/// All KFD processes, one per `mm` (upstream `kfd_processes_table`).
pub(crate) struct ProcessTable {
    entries: KVec<ProcessEntry>,
    /// `/sys/class/kfd/kfd/proc` (set while the module is live).
    sysfs_root: Option<Arc<Dir>>,
    /// Suspends and resets under way (upstream `kfd_locked`, changed under
    /// `kfd_processes_mutex`): no process is created while it is not 0.
    /// `crate::power` counts each device's share once.
    kfd_locked: u32,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised in module init (`init_module_state`) before
    // `/dev/kfd` is registered.
    pub(crate) unsafe(uninit) static PROCESSES: Mutex<ProcessTable> = ProcessTable {
        entries: KVec::new(),
        sysfs_root: None,
        kfd_locked: 0,
    };
}

/// One more suspend or reset locks the KFD (C: `++kfd_locked` in
/// `kgd2kfd_suspend_process`); true for the first, whose caller evicts
/// every process.  Takes [`PROCESSES`].
pub(crate) fn kfd_lock() -> bool {
    let mut table = PROCESSES.lock();
    table.kfd_locked = table.kfd_locked.saturating_add(1);
    table.kfd_locked == 1
}

/// One suspend or reset ends (C: `--kfd_locked`); true for the last.
/// Never below 0 (upstream WARNs there): `crate::power` pairs the calls.
pub(crate) fn kfd_unlock() -> bool {
    let mut table = PROCESSES.lock();
    if table.kfd_locked == 0 {
        return false;
    }
    table.kfd_locked -= 1;
    table.kfd_locked == 0
}

/// C: `kgd2kfd_check_and_lock_kfd`'s lock of one device: `-EBUSY` if the
/// KFD or the device is locked already, else the device is locked (no
/// process is created until [`unlock_device`]) and `users` is asked,
/// outside [`PROCESSES`], whether a process uses it; if so the lock is
/// undone and `-EBUSY` returned.
pub(crate) fn lock_device(dev_lock: &kernel::sync::atomic::Atomic<u32>, users: impl FnOnce() -> bool) -> Result {
    use kernel::sync::atomic::Relaxed;
    {
        let table = PROCESSES.lock();
        if table.kfd_locked > 0 || dev_lock.load(Relaxed) > 0 {
            return Err(EBUSY);
        }
        dev_lock.store(1, Relaxed);
    }
    // No process can be created from here on; one that exists shows.
    if users() {
        let _table = PROCESSES.lock();
        dev_lock.store(0, Relaxed);
        return Err(EBUSY);
    }
    Ok(())
}

/// C: `kgd2kfd_unlock_kfd(kfd)`: undoes [`lock_device`] (nothing if the
/// device is not locked).
pub(crate) fn unlock_device(dev_lock: &kernel::sync::atomic::Atomic<u32>) {
    let _table = PROCESSES.lock();
    dev_lock.store(0, kernel::sync::atomic::Relaxed);
}

/// A snapshot of all processes (for device-wide notifications such as a
/// reset; C: walking `kfd_processes_table`).  Takes [`PROCESSES`] only.
pub(crate) fn snapshot() -> Result<KVec<Arc<Process>>> {
    let table = PROCESSES.lock();
    let mut out = KVec::with_capacity(table.entries.len(), GFP_KERNEL)?;
    for e in table.entries.iter() {
        out.push(e.process.clone(), GFP_KERNEL)?;
    }
    Ok(out)
}

/// Initialises the module-global process table.  Called once from module init.
pub(crate) fn init_module_state() {
    // SAFETY: Called exactly once, from module init, before any other use.
    unsafe { PROCESSES.init() };
}

/// The process whose VM on device `gpu_id` has PASID `pasid` (upstream
/// `kfd_lookup_process_by_pasid`, which looks for a pdd with that PASID:
/// amdgpu's PASIDs are unique across its devices; rkfd also asks that the
/// pdd be of the device the interrupt came from, so a PASID of another GPU
/// finds nothing), for interrupt handling and the SVM retry-fault entry
/// (`crate::svm::fault`).  A process stays findable until its last
/// `/dev/kfd` file is released or its VM is given back (teardown clears
/// the pdds' PASIDs).  Takes [`PROCESSES`] only.
pub(crate) fn find_by_pasid(gpu_id: u32, pasid: u32) -> Option<Arc<Process>> {
    if pasid == 0 {
        return None;
    }
    let table = PROCESSES.lock();
    table
        .entries
        .iter()
        .find(|e| e.process.pdd_counters.iter().any(|c| c.gpu_id == gpu_id && c.pasid.load(Relaxed) == pasid))
        .map(|e| e.process.clone())
}

/// The process whose SVM state is `svms` (upstream `container_of(svms,
/// struct kfd_process, svms)`), while it is in the process table.
pub(crate) fn find_by_svms(svms: &Arc<Svms>) -> Option<Arc<Process>> {
    let table = PROCESSES.lock();
    table.entries.iter().find(|e| Arc::ptr_eq(&e.process.svms, svms)).map(|e| e.process.clone())
}

/// The process of the address space `mm` (upstream
/// `kfd_lookup_process_by_mm`), for `kgd2kfd_quiesce_mm` / `_resume_mm`.
pub(crate) fn find_by_mm(mm: MmId) -> Option<Arc<Process>> {
    let table = PROCESSES.lock();
    table.entries.iter().find(|e| MmId::of(&e.process.mm) == mm).map(|e| e.process.clone())
}

/// The process whose creating thread group has id `tgid` in the initial
/// PID namespace (upstream `kfd_lookup_process_by_pid`, which compares
/// the lead thread), for `kgd2kfd_signal_userptr_fault`.  Takes
/// [`PROCESSES`] only.
pub(crate) fn find_by_pid(tgid: Pid) -> Option<Arc<Process>> {
    let table = PROCESSES.lock();
    table.entries.iter().find(|e| e.process.pid == tgid).map(|e| e.process.clone())
}

/// Frees the process table's storage at module exit (statics are never
/// dropped).  No process can exist then: open files pin the module.
pub(crate) fn exit_module_state() {
    let (old, root) = {
        let mut table = PROCESSES.lock();
        (core::mem::replace(&mut table.entries, KVec::new()), table.sysfs_root.take())
    };
    drop(old);
    drop(root);
}

/// Creates `/sys/class/kfd/kfd/proc`.  Called from module init, after the
/// kfd device exists.
pub(crate) fn create_sysfs_root() -> Result {
    let root = procfs::create_root()?;
    PROCESSES.lock().sysfs_root = Some(root);
    Ok(())
}

impl Process {
    /// Finds or creates the process of the current address space and counts
    /// one more open file for it (upstream `kfd_create_process`).
    pub(crate) fn open_current() -> Result<Arc<Self>> {
        let task = current!();
        let mm = task.mm().ok_or(EINVAL)?;
        let mut table = PROCESSES.lock();
        // A suspend, a reset or a partition switch is under way
        // (upstream `kfd_is_locked(NULL)`, before the lookup).
        if table.kfd_locked > 0 || device::all()?.iter().any(|d| d.power.is_locked() && devcgroup::check_render_node(d.info.drm_render_minor).is_ok()) {
            return Err(EINVAL);
        }
        if let Some(e) = table.entries.iter_mut().find(|e| core::ptr::eq(&*e.process.mm, &**mm)) {
            e.files += 1;
            return Ok(e.process.clone());
        }

        let mut pdds = KVec::new();
        let mut counters = KVec::new();
        let mut targets = KVec::new();
        // Only the GPUs the opener's device cgroup lets it use get a pdd
        // (upstream `kfd_init_apertures`): a denied GPU is unknown to every
        // ioctl of the process.  No usable GPU at all: `-EINVAL`, as
        // upstream's `kfd_gpu_node_num() <= 0` check in `kfd_create_process`.
        for dev in device::all()? {
            if devcgroup::check_render_node(dev.info.drm_render_minor).is_err() {
                continue;
            }
            targets.push(MmapTarget { gpu_id: dev.gpu_id(), dev: dev.clone(), vm: None }, GFP_KERNEL)?;
            let pdd = ProcessDevice::new(dev)?;
            counters.push(pdd.counters.clone(), GFP_KERNEL)?;
            pdds.push(pdd, GFP_KERNEL)?;
        }
        if pdds.is_empty() {
            return Err(EINVAL);
        }
        let svms = Svms::new(mm, pdds.iter().map(|p| &p.dev))?;
        let mut pdd_counters = KVec::with_capacity(counters.len(), GFP_KERNEL)?;
        for c in counters.iter() {
            pdd_counters.push(c.clone(), GFP_KERNEL)?;
        }
        let leader = task.group_leader();
        let process = Arc::pin_init(
            try_pin_init!(Process {
                lead_thread: leader.into(),
                mm: ARef::from(&**mm),
                pid: leader.pid(),
                inner <- new_mutex!(
                    ProcessInner { pdds, xnack_enabled: false, queues: crate::queue::ProcessQueues::new() },
                    "Process::inner"
                ),
                mm_notifier <- new_mutex!(None, "Process::mm_notifier"),
                sysfs <- new_mutex!(None, "Process::sysfs"),
                debugfs <- new_mutex!(None, "Process::debugfs"),
                mmap <- new_mutex!(targets, "Process::mmap"),
                evict <- new_mutex!(None, "Process::evict"),
                pdd_counters,
                events <- Events::new(),
                svms,
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: The process is pinned in its `Arc` and drops the
        // registration (waiting for its works) before any field goes
        // (teardown, `PinnedDrop`).
        let evict = unsafe { crate::eviction::Registration::new(mm, &*process) }?;
        *process.evict.lock() = Some(evict);
        let notifier = MmNotifier::register(mm, &process)?;
        *process.mm_notifier.lock() = Some(notifier);
        // SVM's interval notifiers need the mm's interval tree, set up once
        // here (it takes mmap_lock for writing).
        crate::kabi::hmm::prepare_mm(mm)?;
        // A missing sysfs directory (e.g. a recycled pid whose old process
        // still has a file open elsewhere) does not fail the open.
        if let Some(root) = table.sysfs_root.as_ref() {
            match ProcSysfs::new(root, process.pid, &counters) {
                Ok(sysfs) => *process.sysfs.lock() = Some(sysfs),
                Err(e) => kfd_warn!("Creating procfs pid directory failed: {:?}\n", e),
            }
        }
        match Self::create_debugfs(process.pid, &counters, &process) {
            Ok(dir) => *process.debugfs.lock() = Some(dir),
            Err(e) => kfd_warn!("Failed to create debugfs entry for the kfd_process, ret = {:?}\n", e),
        }
        table.entries.push(ProcessEntry { process: process.clone(), files: 1 }, GFP_KERNEL)?;
        Ok(process)
    }

    /// A file referring to `self` is released; the last one tears the
    /// process down (upstream `kfd_process_notifier_release` + wq release).
    pub(crate) fn release_file(self: Arc<Self>) {
        let last = {
            let mut table = PROCESSES.lock();
            match table.entries.iter().position(|e| Arc::ptr_eq(&e.process, &self)) {
                Some(i) => {
                    table.entries[i].files -= 1;
                    if table.entries[i].files == 0 {
                        let _ = table.entries.remove(i);
                        true
                    } else {
                        false
                    }
                }
                None => false,
            }
        };
        if last {
            // Unregistering runs `mm_released` if the mm is still alive.
            let notifier = self.mm_notifier.lock().take();
            drop(notifier);
            self.teardown();
            let sysfs = self.sysfs.lock().take();
            drop(sysfs);
            let debugfs = self.debugfs.lock().take();
            drop(debugfs);
        }
    }

    /// `kfd/proc/<pid>/` with `pasid_<gpu_id>` per device (upstream
    /// `kfd_debugfs_add_process`) and `svm_ranges` (rkfd: `crate::svm::dump`).
    fn create_debugfs(pid: Pid, counters: &[Arc<ProcCounters>], process: &Process) -> Result<ProcDir> {
        let mut dir = ProcDir::new(pid)?;
        for c in counters {
            let name = kernel::str::CString::try_from_fmt(fmt!("pasid_{}", c.gpu_id))?;
            dir.add(&name, Arc::new(PddPasid(c.clone()), GFP_KERNEL)?)?;
        }
        let dump = crate::svm::dump::SvmRanges::new(counters, process.svms.clone())?;
        dir.add(c"svm_ranges", Arc::new(dump, GFP_KERNEL)?)?;
        Ok(dir)
    }

    /// IOCTL: ACQUIRE_VM: binds the device `gpu_id` to the GPU VM of a
    /// render-node file of that GPU and takes the VM's PASID as the pdd's
    /// (upstream `kfd_process_device_init_vm`).  The same file again is a
    /// no-op, another one `-EBUSY`.
    pub(crate) fn acquire_vm(&self, gpu_id: u32, file: DrmFile) -> Result {
        let mut inner = self.inner.lock();
        let pdd = inner.pdd(gpu_id)?;
        if let Some(vm) = pdd.vm.as_ref() {
            return if pdd.dev.kgd.vm_file(vm).same_file(&file) { Ok(()) } else { Err(EBUSY) };
        }
        let (vm, ef) = pdd.dev.kgd.acquire_vm(file, crate::eviction::CONTEXT_ID)?;
        let vm = Arc::new(vm, GFP_KERNEL)?;
        self.svms.add_vm(&pdd.dev, &vm)?;
        let mut targets = self.mmap.lock();
        let target = targets.iter_mut().find(|t| t.gpu_id == gpu_id).ok_or(EINVAL)?;
        target.vm = Some(vm.clone());
        drop(targets);
        pdd.set_pasid(vm.pasid());
        pdd.vm = Some(vm);
        pdd.ef = ef;
        crate::smi::event_process(&pdd.dev, self, true);
        Ok(())
    }

    /// The device `gpu_id` of the process and its VM, for `/dev/kfd` mmap
    /// (takes only `Process::mmap`: the caller holds mmap_lock).
    pub(crate) fn mmap_target(&self, gpu_id: u32) -> Option<(Arc<Device>, Option<Arc<KgdVm>>)> {
        let targets = self.mmap.lock();
        let t = targets.iter().find(|t| t.gpu_id == gpu_id)?;
        Some((t.dev.clone(), t.vm.clone()))
    }

    /// The address space is going away (notifier `release`): the GPU state
    /// goes with it, even if a file outlives the mm.
    pub(crate) fn mm_released(&self) {
        self.teardown();
    }

    /// Gives back everything the process holds on every device: memory
    /// objects (unmapped first), then VMs.  Idempotent.
    fn teardown(&self) {
        // No eviction work runs after this (they take `inner`: no lock
        // held here).
        let evict = self.evict.lock().take();
        drop(evict);
        // SVM first, without `inner` (it needs none of it): its copies of
        // the VM handles go before the VMs are released below.
        self.svms.teardown();
        let mut inner = self.inner.lock();
        // Queues first: the engines stop touching process memory.
        let hung = crate::queue::destroy_all(&mut inner);
        // The signal page is a memory object freed below: stop using it first.
        self.events.teardown();
        crate::memory::release_all(&mut inner);
        // `/dev/kfd` mmap finds no device any more; a call in progress may
        // hold a VM a little longer (released with its last reference).
        let targets = core::mem::replace(&mut *self.mmap.lock(), KVec::new());
        drop(targets);
        for pdd in inner.pdds.iter_mut() {
            // The process is gone: its memory may move (C: the fence is
            // signalled when the VM's KFD state goes).
            if let Some(ef) = pdd.ef.take() {
                ef.signal();
            }
            if let Some(vm) = pdd.vm.take() {
                crate::smi::event_process(&pdd.dev, self, false);
                // Nothing finds the process by the PASID once the driver
                // may free it for another VM.
                pdd.set_pasid(0);
                drop(vm);
            }
        }
        inner.pdds.clear();
        drop(inner);
        // Recovery signals other processes: outside `inner`.
        crate::queue::recover(hung);
    }

    /// `proc/<pid>/queues/`, if the process has its sysfs directory.
    pub(crate) fn queues_sysfs_dir(&self) -> Option<Arc<Dir>> {
        self.sysfs.lock().as_ref().map(|s| s.queues.clone())
    }

    /// Whether the process has a context for `gpu_id` (C: a pdd exists).
    pub(crate) fn uses_device(&self, gpu_id: u32) -> bool {
        self.inner.lock().pdds.iter().any(|p| p.dev.gpu_id() == gpu_id)
    }

    /// Whether the calling thread belongs to the thread group that created
    /// the process (a forked child or a process that received the fd does not).
    pub(crate) fn is_caller_opener(&self) -> bool {
        *current!().group_leader() == *self.lead_thread
    }

    /// The group leader of the creating thread group (for SMI events).
    pub(crate) fn lead_thread(&self) -> &Task {
        &self.lead_thread
    }

    /// Thread group id of the creator.
    pub(crate) fn pid(&self) -> Pid {
        self.pid
    }
}
