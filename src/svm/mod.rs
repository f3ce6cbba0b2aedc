// SPDX-License-Identifier: GPL-2.0

//! Shared virtual memory (SVM): one range tree per process, each range
//! carrying its attributes, its MMU interval notifier and (read from the
//! page tables) its location; the `AMDKFD_IOC_SVM` ioctl, GPU retry
//! faults and migration between system memory and VRAM.
//!
//! C: `kfd_svm.c` (`struct svm_range_list` = [`Svms`], `struct svm_range`
//! = [`range::SvmRange`]) and `kfd_migrate.c`.  The files follow upstream's
//! split:
//!
//! - [`attr`]: the ioctl (`kfd_ioctl_svm`, `svm_range_set_attr`,
//!   `svm_range_get_attr`) and the `ALLOC_MEMORY_OF_GPU` overlap check;
//! - [`range`]: the range type, the tree and its storage, the XNACK-off
//!   system-memory reservation, notifier (re)registration, GPU mapping
//!   (`svm_range_validate_and_map`);
//! - [`fault`]: GPU retry faults (`svm_range_restore_pages`), the entry
//!   point `kgd2kfd_svm_fault` calls;
//! - [`migrate`]: migration with its trigger (`svm_migrate_to_vram`,
//!   `svm_migrate_vram_to_ram`) and what SET_ATTR does after the ranges
//!   are updated (prefetch, mapping with XNACK off);
//! - [`notifier`]: the invalidate callback (`svm_range_cpu_invalidate_pagetables`),
//!   unmapping from GPUs, the deferred `munmap` work
//!   (`svm_range_deferred_list_work`) and the XNACK-off restore
//!   (`svm_range_restore_work`);
//! - [`dump`]: debugfs `proc/<pid>/svm_ranges`, one line per range.
//!
//! The pure parts (range algebra, attribute rules, argument checks, how
//! many ranges an operation reshapes, the fault window, location summing)
//! are in `rust/kfd-logic/src/svm/`, host-tested; included here as
//! [`logic`].
//!
//! # Locking
//!
//! Lock order: see the crate root (`src/rkfd_main.rs`); each lock field of
//! [`Svms`] says where it sits.  `Process::inner` is never taken under an
//! SVM lock: a GPU driver may take `mmap_lock` under it (user pointers), so
//! SVM copies what it needs from it before taking its own locks.

use kernel::{
    mm::{Mm, MmWithUser},
    new_mutex,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{Acquire, Atomic, Relaxed},
        Arc, Mutex,
    },
};

use crate::{
    device::Device,
    kabi::{
        hmm::{self, MmRead, VmId},
        kgd::KgdVm,
    },
};

/// A process's GPU VM as SVM uses it: mapped into by faults and prefetches,
/// unmapped from by the invalidate callback (which cannot take the process
/// lock that owns the VM).  Holds a reference on the VM, so the VM lives
/// while any copy does.
#[derive(Clone)]
pub(crate) struct VmRef {
    dev: Arc<Device>,
    vm: Arc<KgdVm>,
}

impl VmRef {
    /// `vm`, a VM of `dev`.
    fn new(dev: &Arc<Device>, vm: &Arc<KgdVm>) -> Self {
        VmRef { dev: dev.clone(), vm: vm.clone() }
    }

    /// The device.
    pub(crate) fn dev(&self) -> &Arc<Device> {
        &self.dev
    }

    /// The VM.
    pub(crate) fn kgd_vm(&self) -> &KgdVm {
        &self.vm
    }

    /// Its identity.
    pub(crate) fn id(&self) -> VmId {
        self.vm.id()
    }

    /// kfd2kgd `svm_unmap` of `[start, end)`.
    pub(crate) fn unmap(&self, start: u64, end: u64) {
        self.vm.svm_unmap(start, end);
    }
}

/// The pure logic, shared with the host crate `kfd-logic`.
#[path = "../../rust/kfd-logic/src/svm/mod.rs"]
#[allow(
    unreachable_pub,
    dead_code,
    reason = "a directory shared with a host crate: `pub` items, accessors for its tests"
)]
pub(crate) mod logic;

pub(crate) mod attr;
pub(crate) mod dump;
pub(crate) mod fault;
pub(crate) mod migrate;
pub(crate) mod notifier;
pub(crate) mod range;

use logic::{attr::PAGE_SHIFT, SvmError};
use range::RangeList;

const _: () = assert!(PAGE_SHIFT as usize == kernel::page::PAGE_SHIFT);

/// The bytes of one page.
pub(crate) const PAGE: u64 = kernel::page::PAGE_SIZE as u64;

/// The most GPU VMs of one process (upstream `MAX_GPU_INSTANCE`); a range
/// records the GPUs it is mapped on as a bitmap over [`Svms::vms`] slots.
const MAX_VMS: usize = 64;
const _: () = assert!(MAX_VMS <= u64::BITS as usize);

/// A process's SVM (upstream `struct svm_range_list`, `p->svms`).
#[pin_data]
pub(crate) struct Svms {
    /// The address space (a `mmgrab` reference: identity, and `mmget`).
    mm: ARef<Mm>,
    /// Held across the deferred work ([`Svms::run_pending`]) and across
    /// SET_ATTR, so a caller waits for a worker already running (upstream
    /// `flush_work(&svms->deferred_list_work)`).  Lock order: outermost of
    /// the SVM locks, taken with no other lock held; the mm's `mmap_lock`
    /// inside.
    #[pin]
    flush: Mutex<()>,
    /// The ranges (upstream `svms->lock` over `svms->objects`): the process
    /// SVM lock.  Lock order: inside `mmap_lock` (read or write) and inside
    /// `Process::inner`, never around either; migration
    /// (`migrate_vma_*`) and `hmm_range_fault` run under it, so notifier
    /// invalidations, a range's notifier lock and [`Svms::vms`] come inside
    /// it.  It allocates under it (GFP_KERNEL), so the invalidate callback
    /// (which reclaim can run) never takes it.
    #[pin]
    list: Mutex<RangeList>,
    /// The GPU VMs the ranges may be mapped into; a slot's index is the bit
    /// of a range's `mapped_on`.  Only grown up to its capacity, cleared at
    /// teardown.  Lock order: inside a range's notifier lock (the callback
    /// unmaps from them) and inside [`Svms::list`]; the GPU driver's
    /// page-table lock comes inside it.
    /// Never grown under it (invalidation takes it, so nothing may allocate
    /// with reclaim while holding it).
    #[pin]
    vms: Mutex<KVec<VmRef>>,
    /// A `munmap` hit a range: the deferred work must run.
    unmap_pending: Atomic<bool>,
    /// XNACK off and a mapped range was invalidated: the restore must run.
    restore_pending: Atomic<bool>,
    /// XNACK off: invalidations that quiesced the queues, and how many of
    /// them the last finished restore covered.  The process is evicted
    /// (its queues quiesced) while they differ (upstream
    /// `svms->evicted_ranges`).
    evictions: Atomic<u64>,
    restored: Atomic<u64>,
    /// The process's XNACK mode, mirrored for the callbacks (switched with
    /// `ProcessInner::xnack_enabled`, see [`Svms::switch_xnack`]).
    xnack: Atomic<bool>,
    /// The process, as SMI events name it (taken when the opener of
    /// `/dev/kfd` creates the process: events are sent under SVM locks,
    /// where the process cannot be looked up).
    owner: crate::smi::Owner,
}

impl Svms {
    /// The process as SMI events name it.
    pub(crate) fn owner(&self) -> &crate::smi::Owner {
        &self.owner
    }
}

impl Svms {
    /// The SVM state of a new process on `mm` with `devices` (upstream
    /// `svm_range_list_init`).  A new process starts with XNACK off.
    pub(crate) fn new<'a>(mm: &Mm, devices: impl Iterator<Item = &'a Arc<Device>>) -> Result<Arc<Self>> {
        let list = RangeList::new(devices);
        Arc::pin_init(
            try_pin_init!(Svms {
                mm: ARef::from(mm),
                flush <- new_mutex!((), "Svms::flush"),
                list <- new_mutex!(list, "Svms::list"),
                vms <- new_mutex!(KVec::with_capacity(MAX_VMS, GFP_KERNEL)?, "Svms::vms"),
                unmap_pending: Atomic::new(false),
                restore_pending: Atomic::new(false),
                evictions: Atomic::new(0),
                restored: Atomic::new(0),
                xnack: Atomic::new(false),
                owner: crate::smi::Owner::current(),
            }),
            GFP_KERNEL,
        )
    }

    /// SET_XNACK_MODE is switching to `enable`, with `Process::inner` held
    /// (upstream `svm_range_switch_xnack_reserve_mem`): the reservation
    /// moves; `ENOMEM` over the limit, and then nothing changed.
    pub(crate) fn switch_xnack(&self, enable: bool) -> Result {
        self.list.lock().switch_xnack(enable)?;
        self.xnack.store(enable, Relaxed);
        Ok(())
    }

    /// A VM the process acquired (`ACQUIRE_VM`): ranges may now be mapped
    /// into it.  `ESRCH` after teardown, `ENOSPC` past [`MAX_VMS`].
    pub(crate) fn add_vm(&self, dev: &Arc<Device>, vm: &Arc<KgdVm>) -> Result {
        if self.list.lock().dead {
            return Err(ESRCH);
        }
        self.vms.lock().push_within_capacity(VmRef::new(dev, vm)).map_err(|_| ENOSPC)?;
        Ok(())
    }

    /// Whether the VM a GPU driver names is one of ours.
    pub(crate) fn has_vm(&self, id: VmId) -> bool {
        self.vms.lock().iter().any(|v| v.id() == id)
    }

    /// A copy of the VM of GPU `gpu_id` and its slot.  Copies are used
    /// under [`Svms::list`] only, which teardown takes before clearing.
    fn vm_of(&self, gpu_id: u32) -> Result<(usize, VmRef)> {
        let vms = self.vms.lock();
        let (slot, vm) = vms.iter().enumerate().find(|(_, v)| v.dev().gpu_id() == gpu_id).ok_or(ENODEV)?;
        Ok((slot, vm.clone()))
    }

    /// The VM in slot `slot`.
    fn vm_in_slot(&self, slot: usize) -> Option<VmRef> {
        self.vms.lock().get(slot).cloned()
    }

    /// The gpu_id of each VM slot.
    fn slot_gpu_ids(&self) -> KVec<u32> {
        let mut out = KVec::with_capacity(MAX_VMS, GFP_KERNEL).unwrap_or_default();
        for v in self.vms.lock().iter() {
            // Only fails if the allocation above did (then: best effort).
            let _ = out.push_within_capacity(v.dev().gpu_id());
        }
        out
    }

    /// Whether a VM of a GPU other than `gpu_id` is acquired (so another
    /// VRAM may hold pages); no allocation.
    fn vms_on_other_devices(&self, gpu_id: u32) -> bool {
        self.vms.lock().iter().any(|v| v.dev().gpu_id() != gpu_id)
    }

    /// The devices of the acquired VMs.
    fn devices(&self) -> KVec<Arc<Device>> {
        // Allocated outside `vms` (see `Svms::vms`); the list only grows up
        // to its capacity, so `MAX_VMS` entries always fit.
        let mut out = KVec::with_capacity(MAX_VMS, GFP_KERNEL).unwrap_or_default();
        let vms = self.vms.lock();
        for v in vms.iter() {
            if !out.iter().any(|d: &Arc<Device>| Arc::ptr_eq(d, v.dev())) {
                // Only fails if the allocation above did (then: best effort).
                let _ = out.push_within_capacity(v.dev().clone());
            }
        }
        out
    }

    /// The mm with a user reference, unless it exited.
    fn mm_user(&self) -> Option<ARef<MmWithUser>> {
        self.mm.mmget_not_zero()
    }

    /// XNACK off: whether an invalidation quiesced the process and no
    /// restore has remapped since.
    pub(crate) fn evicted(&self) -> bool {
        self.evictions.load(Acquire) != self.restored.load(Acquire)
    }

    /// Gives everything back (upstream `svm_range_list_fini`): device pages
    /// return to system memory while the mm lives (else device teardown
    /// would wait for them), the ranges and their notifiers go, the
    /// reservation is given back, then the VM copies are dropped, so the
    /// process may release its VMs.  Idempotent.  Called without
    /// `Process::inner`.
    pub(crate) fn teardown(&self) {
        // Put asynchronously: teardown may run in the mm notifier's
        // `release`, inside its SRCU read section, and the last `mmput`
        // would run `exit_mmap`, which waits for that SRCU (a deadlock
        // kfd-storm hit: the file closed at exit while a worker held the
        // mm).
        let mm = self.mm_user().map(MmWithUser::into_mmput_async);
        let guard = mm.as_ref().map(|m| MmRead::new(m));
        let old = {
            let mut list = self.list.lock();
            list.dead = true;
            if let Some(g) = guard.as_ref() {
                // Once per group of ranges in one VMA, not once per range:
                // a process with 100k ranges held `mmap_lock` for minutes
                // here (hung tasks at `kfd-svm-bench` exit).
                let devs = self.devices();
                let mut run: Option<(u64, u64, u64)> = None;
                for r in list.tree.iter() {
                    let (start, end) = range::bytes(r);
                    if let Some((s, e, vma_end)) = run {
                        if start < vma_end {
                            run = Some((s, e.max(end), vma_end));
                            continue;
                        }
                        migrate_back(g, &devs, s, e);
                    }
                    let vma_end = g.vma_from(start).map_or(end, |(_, ve)| ve);
                    run = Some((start, end, vma_end));
                }
                if let Some((s, e, _)) = run {
                    migrate_back(g, &devs, s, e);
                }
            }
            list.take_all()
        };
        drop(guard);
        // Removing the notifiers waits for their callbacks (which take
        // `vms`), so before `vms` is cleared.
        drop(old);
        // The copies go outside the lock (the last device reference may
        // drop with them); the process is dead, so no VM is added again.
        let vms = core::mem::replace(&mut *self.vms.lock(), KVec::new());
        drop(vms);
        drop(mm);
    }

    /// Queues the deferred work (if the workqueue exists).
    fn kick(self: &Arc<Self>) {
        if let Some(wq) = hmm::wq() {
            let me = self.clone();
            // A failed spawn leaves the work to the next SVM operation.
            let _ = wq.try_spawn(GFP_ATOMIC, move || me.run_worker());
        }
    }
}

/// Teardown: migrates the device pages of `[start, end)` on `devs` back
/// to system memory VMA by VMA (a hole is a `munmap` whose range removal
/// is pending: skipped; errors are ignored, the process is going).
fn migrate_back(guard: &MmRead<'_>, devs: &[Arc<Device>], start: u64, end: u64) {
    guard.for_each_vma_piece(start, end, |s, e| {
        for d in devs {
            if let Some(pagemap) = d.vram_pagemap.as_ref() {
                let _ = pagemap.migrate_to_ram(guard, s, e);
            }
        }
    });
}

/// Whether a GPU takes part in SVM (upstream `KFD_IS_SVM_API_SUPPORTED`:
/// its VRAM is registered as device-private memory, or it is an APU).  The
/// topology capability is a separate, stricter decision
/// (`Device::svm_supported`).
pub(crate) fn device_supports_svm(dev: &Device) -> bool {
    dev.vram_pagemap.is_some() || dev.info.vram_size == 0
}

/// Maps a logic error to the errno.
fn err(e: SvmError) -> Error {
    match e {
        SvmError::Inval => EINVAL,
        SvmError::Overflow => EOVERFLOW,
        SvmError::Fault => EFAULT,
        SvmError::AddrInUse => EADDRINUSE,
        SvmError::NoMem => ENOMEM,
    }
}
