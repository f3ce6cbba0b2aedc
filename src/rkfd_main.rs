// SPDX-License-Identifier: GPL-2.0

//! rkfd: AMD's amdkfd compute driver (`/dev/kfd`) in Rust.
//!
//! The crate root is a table of contents; each subsystem lives in its own
//! module.  Only [`kabi`] touches raw `bindings::` or the C shim.
//!
//! # Lock order
//!
//! Every lock of rkfd, outermost first: a lock may be taken while holding
//! one above it, never while holding one below it.  Each lock field also
//! says where it sits; the modules explain why.  The GPU driver's locks
//! (the virtual GPU's are listed in `vgpu/amdgpu_main.rs`) come inside the
//! rkfd locks a kfd2kgd call is made under.
//!
//!  0. [`power::DevicePower`]`::state` (rkfd; upstream's suspend and
//!     reset paths hold `kfd_processes_mutex` and `dqm_lock` instead): one
//!     device's suspend/resume, reset and scheduler-halt transition, taken
//!     only by the `kgd2kfd_*` power entry points, with no rkfd lock held.
//!     The transition runs under it: 1 (`kfd_locked`, the process
//!     snapshot), each process's 2 with 3, 3a, 3b, 10, 13 and 14 inside
//!     (`queue::evict_process` / `restore_process`), and 3a / 3b alone
//!     (the scheduler's stop, start, halt); kfd2kgd calls made there wait
//!     for the GPU driver's engines.  Never taken by the interrupt path,
//!     a retry fault or an ioctl, so nothing waits for it while holding a
//!     lock below.  The GPU driver must not call a power entry point from
//!     a context a kfd2kgd call waits for (an engine thread).
//!  1. [`static@process::PROCESSES`] (upstream `kfd_processes_mutex`), the
//!     process table.  Taken with no other rkfd lock held.  Opening
//!     `/dev/kfd` ([`process::Process::open_current`]) creates the process
//!     under it: [`static@device::DEVICES`],
//!     the mm's `mmap_lock` for writing (registering the mm notifier and
//!     preparing the interval tree), sysfs and debugfs directories
//!     (`debugfs::ROOT`) and the new process's leaf locks (12); a failed
//!     open drops the new process, whose teardown takes 2 and the SVM
//!     locks, under it.  Elsewhere it is held only to find
//!     (`find_by_pasid`, `find_by_svms`, `snapshot`), count or remove an
//!     entry, or to change `kfd_locked` and a device's
//!     `check_and_lock_kfd` lock (`crate::power`), which the open reads
//!     under it.
//!  2. `Process::inner` (upstream `p->mutex`): one process at a time
//!     (hang recovery takes other processes' only after dropping its own).
//!     kfd2kgd calls are made under it; they may sleep and wait for the GPU
//!     driver's engines (`hqd_destroy` preempts), never call back into rkfd.
//!     The mm's `mmap_lock` may be taken under it (the GPU driver pins user
//!     pages for USERPTR objects, as upstream under `p->mutex`; copies to
//!     and from user memory), so nothing that holds `mmap_lock` takes it:
//!     the `/dev/kfd` mmap handler uses `Process::mmap` (12), and SVM copies
//!     what it needs from `inner` before taking its locks.
//!     [`svm::Svms::list`] is taken directly under it (SET_XNACK_MODE moves
//!     the reservation, ACQUIRE_VM adds a VM).  The interrupt path never
//!     takes it; the retry-fault entry (`kgd2kfd_svm_fault`) takes it
//!     briefly, with no other lock held, before the SVM locks.  The SVM
//!     restore worker (`Svms::run_worker`, XNACK off) takes it with no
//!     other lock held, before 4 and after dropping 4–6, to evict and
//!     restore the process's queues (`queue::evict_process`: 3, 3a or 3b
//!     inside it).  So do the eviction works of [`eviction`] (the shim's
//!     delayed works, from a GPU driver's eviction fence) and
//!     `kgd2kfd_quiesce_mm` / `kgd2kfd_resume_mm` (after 1, to find the
//!     process by mm); `kgd2kfd_queue_restore_rescheduled` takes it (after
//!     1) only to send an SMI event per device (14 inside it), and
//!     `kgd2kfd_signal_userptr_fault` (after 1, to find the process by
//!     pid) to evict its queues on every device (3, 3a or 3b inside it)
//!     and set its MEMORY events (13 inside it).  The eviction
//!     fences are signalled under it (the GPU driver's fence lock, then
//!     15, inside it).  A process's teardown
//!     cancels and waits for its eviction works with no lock held.
//!  3. [`queue::QueueShared::hw`] (rkfd): a queue's MQD and load state,
//!     taken under 2 by the queue's owner and by debugfs `mqds` / `hqds`
//!     with no other lock held, never by the interrupt path; the kfd2kgd
//!     `hqd_*` calls on the queue are made under it (`hqd_destroy` waits
//!     for the engine for one quantum at most).
//! 3a. [`queue::DeviceQueues`]`::hws` (upstream `dqm_lock` of the cpsch
//!     path, `sched_policy` 0 and 1): a device's HWS state (`crate::hws`:
//!     the HIQ, the runlist IB, the list of queues runlists are built
//!     from).  Taken under 2 and 3 (a queue's create, update, destroy) or
//!     with no rkfd lock held (device init and exit, hang recovery, debugfs
//!     `rls`, which reads the runlist IB under it); 10 may
//!     be taken inside it, a queue's 3 never (the runlist is built from
//!     copies, so one process's thread never waits for another's queue
//!     lock under it).  The HIQ's kfd2kgd calls are made under it:
//!     `ring_kernel_doorbell` (the virtual GPU's CP maps and unmaps queues
//!     on its engines before it returns, waiting for them as `hqd_destroy`
//!     does), `hiq_mqd_load`, `alloc_gtt_mem` / `free_gtt_mem`; a
//!     preemption fence is polled under it for up to 9 s.  Never taken by
//!     the interrupt path.  A GPU retry fault (`kgd2kfd_svm_fault`) takes 2
//!     on an engine thread, so no preemption made under 2 (`hqd_destroy`,
//!     or the runlist's UNMAP_QUEUES under 3a, which preempts every
//!     process's queues) may wait for a retry fault to be served: as on
//!     upstream's hardware, where the CP context-switches the faulting wave
//!     and finishes the preemption while `svm_range_restore_pages` waits
//!     for `p->mutex`, the virtual GPU's engines leave the queue (release
//!     `Hqd::state`, a helper its slot) before they raise the fault, and a
//!     queue preempted meanwhile resumes at the faulting packet from the
//!     read pointer saved in its MQD (`vgpu/amdgpu_main.rs`, 2 and 2b).
//!     `kfd-svm-hmm-tests retry_faults_vs_queue_preemption` checks it
//!     (an engine that keeps `Hqd::state` across the fault deadlocks
//!     there: a lockdep splat, then a hung CREATE_QUEUE or UPDATE_QUEUE).
//! 3b. [`queue::DeviceQueues`]`::mes` (upstream `dqm_lock` and
//!     `amdgpu_mes_lock` of the MES path, `sched_policy` 0 and 1 on a
//!     GFX11+ GPU): a device's MES state (`crate::mes`: the queues added
//!     to the firmware, their process and gang contexts).  A device has
//!     3a or 3b, never both; taken like 3a (under 2 and 3, or with no rkfd
//!     lock held), 10 never under it; the MES kfd2kgd calls and
//!     `alloc_gtt_mem` / `free_gtt_mem` are made under it (the virtual
//!     GPU's MES preempts on its engines before `mes_remove_hw_queue`
//!     returns).  Never taken by the interrupt path.
//!  4. [`svm::Svms::flush`] (upstream `flush_work` of `deferred_list_work`):
//!     held across the deferred `munmap`/restore work, SET_ATTR and one
//!     process's part of `kgd2kfd_svm_evict_vram` (which takes 4, 5 and 6
//!     for each process in turn after 1's snapshot, as SET_ATTR's
//!     prefetch does); taken with no other rkfd lock held (never under 2).
//!  5. the mm's `mmap_lock` (kernel): read for faults, prefetch, GET_ATTR
//!     and the debugfs dump; write where SVM ranges are created or
//!     reshaped (registering an interval notifier needs it), then
//!     downgraded.
//!  6. [`svm::Svms::list`] (upstream `svms->lock`), the process SVM lock:
//!     inside 5 or 2, never around either.  Migration (`migrate_vma_*`) and
//!     `hmm_range_fault` run under it, and it allocates with `GFP_KERNEL`,
//!     so the invalidate callback never takes it.
//!  7. MMU-notifier invalidation (lockdep's
//!     `__mmu_notifier_invalidate_range_start_map`): callbacks run under 6
//!     (migration, COW faults), under `mmap_lock` for writing (`munmap`,
//!     `mprotect`, `fork`) and from reclaim.
//!  8. a range's notifier lock (C: `rkfd_svm_range.lock` in
//!     `shim/rkfd_hmm.c`, upstream `prange->lock`, taken as
//!     `svm_range_lock` does, inside `memalloc_noreclaim_save()`): the
//!     invalidate callback, and `mmu_interval_read_retry` + kfd2kgd
//!     `svm_map` / `svm_unmap`.
//!  9. [`svm::Svms::vms`] (rkfd): the VMs the callback unmaps from; taken
//!     under 8 (the callback), under 6, under 2 (ACQUIRE_VM) or alone.
//!     kfd2kgd `svm_unmap` is called under it, so the GPU driver's
//!     page-table lock (vgpu `Vm::inner`, and its leaf `vram::Pool::inner`;
//!     the bridge's per-VM `svm_lock`, which only trylocks amdgpu's root
//!     PD reservation: `bridge/README.md`, "SVM locking") comes inside 8
//!     and 9.
//! 10. [`queue::DeviceQueues::state`] (upstream `dqm_lock`): a leaf, taken
//!     under 2 and by the interrupt path; never held across a kfd2kgd call.
//! 11. [`topology::Topology::inner`] (upstream `topology_lock`): taken with
//!     no other rkfd lock held (device init and exit, module init); sysfs
//!     directories are created and removed under it, so kernfs' locks come
//!     inside; its files' `show` takes no lock.
//! 12. leaves, nothing taken under them but their contents' allocations:
//!     `Process::mmap` (under 2 or under `mmap_lock`: the `/dev/kfd` mmap
//!     handler), `Process::mm_notifier`, `Process::sysfs`,
//!     `Process::debugfs`, `Process::evict` (held only to store or take what they hold, which
//!     is dropped after the lock: unregistering the notifier waits for its
//!     `release`, which tears the process down; removing files waits for
//!     their readers), [`static@device::DEVICES`] and `debugfs::ROOT`
//!     (debugfs directories are created under it).
//! 13. [`event::Events::inner`] (spinlock; upstream `p->event_mutex`): a
//!     leaf, taken under 2 and by the interrupt path; only the condition
//!     variable's wait-queue lock nests inside.
//! 14. [`static@smi::CLIENTS`], then one `smi::Client::fifo` (spinlocks;
//!     upstream `dev->smi_lock`, `client->lock`), innermost: SMI events
//!     are emitted under any lock above, including 8 and 9 (MMU-notifier
//!     callbacks, under `memalloc_noreclaim_save()`: the event functions
//!     allocate nothing), in `dev_pagemap_ops.migrate_to_ram` and under
//!     the virtual GPU's `Core::throttle` (`kgd2kfd_smi_event_throttle`).
//! 15. `rkfd_evict_lock` (C spinlock, `shim/rkfd_evict.c`): the eviction
//!     registrations, a leaf taken with interrupts off by
//!     `kgd2kfd_schedule_evict_and_restore_process` inside a GPU driver's
//!     fence lock (`->enable_signaling`, atomic context) and when a process
//!     registers or unregisters; only `schedule_delayed_work` is called
//!     under it.
//!
//! Rules that go with the order:
//!
//! - Spinlocks (13, 14) are never taken in hard-IRQ context (they do not
//!   disable interrupts); nothing sleeps under them.
//! - Reclaim: 7–9 and the GPU driver's page-table lock are reached from
//!   invalidation, which reclaim can trigger, so nothing holding them
//!   allocates with direct reclaim (8 is taken inside
//!   `memalloc_noreclaim_save()`, [`svm::Svms::vms`] is never grown under
//!   itself, the virtual GPU allocates page tables inside `NoReclaim`),
//!   and nothing under them waits for an invalidation or preempts the
//!   GPU's queues (XNACK off, the callback marks the process evicted
//!   instead; the restore worker preempts them outside every SVM lock).  An interval notifier is removed (which waits for its
//!   callbacks) never with 8 or 9 held and never from a callback: `munmap`
//!   only flags the process in the callback, and the deferred work (under
//!   4–6) removes the range.
//! - `dev_pagemap_ops.migrate_to_ram` (a CPU fault on a device page) takes
//!   no rkfd lock but 14; `dev_pagemap_ops.folio_free` takes only the GPU
//!   driver's VRAM-pool spinlock.  So a GPU fault handler holding 5 and 6
//!   may fault a page of another GPU back to system memory through
//!   `hmm_range_fault`.
//! - The interrupt path (`kgd2kfd_interrupt`, any non-atomic context,
//!   typically the GPU driver's engine thread) takes only 1 (the PASID
//!   lookup: the device's PASID of each process, which the GPU driver
//!   owns, is an atomic of the process's per-device counters), 10, 13 and 14, never 2: a thread holding 2 while it waits for
//!   an engine cannot deadlock with that engine's interrupts.
//! - `kgd2kfd_vmfault_fast_path` (hard IRQ, under RCU) takes no lock: it
//!   reads and sets bits of the device's `interrupt::FaultFilter`, which
//!   `ProcessDevice::set_pasid` (under 2) binds and unbinds atomically.
//!   `kgd2kfd_clear_mappings` takes no rkfd lock (the kernel's
//!   `i_mmap_rwsem` and page-table locks of `/dev/kfd`'s address_space).
//! - The GPU driver calls `kgd2kfd_interrupt` and `kgd2kfd_svm_fault` with
//!   none of its locks held that a kfd2kgd call takes; a kfd2kgd call made
//!   under 2, 3, 3a, 6, 8 or 9 never calls back into rkfd (the HIQ's
//!   QUERY_STATUS could raise an interrupt in `ring_kernel_doorbell`, but
//!   rkfd asks only for fence writes, and a PASID-0 entry takes no lock).
//! - debugfs and sysfs files are removed (which waits for running readers)
//!   only with no lock held that their `show` takes: debugfs `mqds`,
//!   `hqds` take 1, [`static@device::DEVICES`], 3 and 10, `rls`
//!   [`static@device::DEVICES`] and 3a;
//!   `svm_ranges` takes 5 and 6; `mem_limit` takes
//!   [`static@device::DEVICES`].

#![crate_name = "rkfd"]

use crate::kabi::log::{kfd_err, kfd_info};
use kernel::{prelude::*, sync::Arc};

mod chardev;
mod debugfs;
mod device;
mod event;
mod eviction;
/// GPU generations, shared with the host crate `kfd-logic` (and the virtual
/// GPU); at the crate root because `queue::rules` names it `crate::gfx`.
#[path = "../rust/kfd-logic/src/gfx.rs"]
#[expect(
    unreachable_pub,
    dead_code,
    reason = "a file shared with a host crate and the virtual GPU: `pub` items, some used only there"
)]
mod gfx;
mod hws;
mod mes;
mod interrupt;
mod ioctl;
mod kabi;
mod kernel_queue;
mod memory;
mod mqd;
mod packet_manager;
mod power;
mod process;
mod procfs;
mod queue;
mod smi;
mod svm;
mod topology;
mod uapi;

module! {
    type: Rkfd,
    name: "rkfd",
    authors: ["The rkfd authors"],
    description: "AMD GPU compute driver (amdkfd) in Rust",
    license: "GPL",
}

/// The loaded module: owns the `/dev/kfd` registration.
struct Rkfd {
    /// The KFD topology in sysfs, under the kfd device: declared before
    /// `_chardev` so it is dropped first.
    _topology: Arc<topology::Topology>,
    /// `/dev/kfd`, class `kfd`: unregistered on drop.
    _chardev: kabi::Chardev,
    /// The SVM workqueue: drained and destroyed after the above.
    _svm_wq: kabi::hmm::SvmWq,
    /// The `kgd2kfd_*` exports call rkfd while this exists (withdrawn last;
    /// no GPU driver is loaded then: they link against the exports).
    _kgd2kfd: kabi::kgd::Kgd2KfdRegistration,
}

impl kernel::Module for Rkfd {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // C: kfd_init's check.
        if hws::param_policy().is_none() {
            kfd_err!("sched_policy has to be 0, 1 or 2\n");
            return Err(EINVAL);
        }
        device::init_module_state();
        process::init_module_state();
        let kgd2kfd = kabi::kgd::Kgd2KfdRegistration::new::<device::Kgd2KfdEntries>();
        let svm_wq = kabi::hmm::SvmWq::new()?;
        debugfs::init();
        smi::init_module_state();
        let chardev = kabi::Chardev::register::<chardev::KfdFile>()
            .inspect_err(|e| kfd_err!("failed to register /dev/kfd: {:?}\n", e))?;
        kfd_info!(
            "Initialized module, interface {}.{}, /dev/kfd major {}\n",
            uapi::KFD_IOCTL_MAJOR_VERSION,
            uapi::KFD_IOCTL_MINOR_VERSION,
            chardev.major()
        );
        let topology = topology::Topology::new()
            .inspect_err(|e| kfd_err!("failed to create the topology: {:?}\n", e))?;
        device::set_topology(topology.clone());
        process::create_sysfs_root()
            .inspect_err(|e| kfd_err!("failed to create the proc directory: {:?}\n", e))?;
        Ok(Rkfd {
            _topology: topology,
            _chardev: chardev,
            _svm_wq: svm_wq,
            _kgd2kfd: kgd2kfd,
        })
    }
}

impl Drop for Rkfd {
    fn drop(&mut self) {
        process::exit_module_state();
        debugfs::exit();
        smi::exit_module_state();
        device::exit_module_state();
        kfd_info!("Unloading module\n");
    }
}
