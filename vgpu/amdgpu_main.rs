// SPDX-License-Identifier: GPL-2.0

//! amdgpu: a virtual AMD GPU for rkfd.
//!
//! Plays the part the real amdgpu driver plays on a ROCm host, for GPUs
//! that do not exist: for each of `num_gpus` GPUs of one `profile` it
//! creates a parent device named like a PCI function (`0000:c1:00.0`), a
//! DRM render node, amdgpu's sysfs files and a hwmon, and registers the GPU
//! with rkfd through the C-ABI device interface
//! (`include/rkfd/kgd_kfd_interface.h`), implementing `kfd2kgd`: VMs bound to
//! render-node files, VRAM/GTT/user-pointer memory objects, a software GPU
//! page table, kernel mappings and a clock counter.
//!
//! Named `amdgpu` because ROCm user space looks for a module of that name
//! (`lsmod | grep amdgpu`, `/sys/module/amdgpu/initstate`).
//!
//! Parameters: `profile=gfx90a|gfx1030|gfx1100|gfx1103` (default gfx90a,
//! read only, in `/sys/module/amdgpu/parameters/profile`), `num_gpus=1..4`,
//! `vram_mb=` (0: the profile's default).  Built by the top-level `make`
//! after rkfd; `scripts/vm-run --gpu PROFILE -- CMD` loads both.
//!
//! Tests: KUnit suites `amdgpu_vgpu_*` run when the module loads (the
//! render-node suite maps memory objects into the test thread's own mm);
//! `cargo test -p gpu-pagetable` tests the page table on the host;
//! `rust/kfd-tests/src/bin/vgpu-render.rs` tests from user space.
//!
//! Module map: [`profile`] (what the GPU is), [`gpu`] (one GPU's state and
//! life cycle), [`vram`] (device memory), [`sysmem`] (GTT and user-pointer
//! limits), [`mem`] (memory objects), [`vm`] (GPU address spaces),
//! [`pagetable`] (their page tables), [`engine`] (the queues and the
//! software engines that run them, with the shader interpreter in
//! `engine::shader`), [`isa`] (the gfx90a ISA, `rust/amdgpu-isa`),
//! [`kfd2kgd`] (what rkfd asks of the GPU), [`uapi`] (the ioctl
//! structures), [`kabi`] (the only code that touches C: shim, rkfd's
//! interface, callbacks).
//!
//! # Lock order
//!
//! Every lock of this driver, outermost first: a lock may be taken while
//! holding one above it, never while holding one below it.  Each lock
//! field also says where it sits.  rkfd's own order is in its crate root
//! (`src/rkfd_main.rs`).
//!
//! -2. `Core::power` (`gpu`): the hwmon knob `vgpu_power`'s transition
//!     (suspend, resume, reset).  Taken with no other lock of this driver
//!     held and held across rkfd's `kgd2kfd_suspend` / `_resume` /
//!     `_pre_reset` / `_post_reset` (whose kfd2kgd calls take -1, 0, 1, 2
//!     and the leaves) and the engines' reset between the last two (-1,
//!     2), and `kgd2kfd_clear_mappings` before `_pre_reset` (the kernel's
//!     `i_mmap_rwsem` and page-table locks only), and
//!     `kgd2kfd_svm_evict_vram` (rkfd's SVM locks and a process's
//!     `mmap_lock`, under which its kfd2kgd `svm_copy` and the pages
//!     freed by the migration take the VRAM pool's leaf, 9); `Gpu::drop` takes it to clear the target before rkfd removes
//!     the device.  rkfd never calls into this driver's knob.
//! -1. `Kgd::cp` (`gpu`, `cp`): the CP's scheduler and its HIQ.  Taken by
//!     the kfd2kgd `hiq_mqd_load`, `ring_kernel_doorbell`, `hws_hang` and
//!     `gpu_reset` with no other lock of this driver held; the queues it
//!     maps and unmaps take 1 and 2 under it, the GART 10, the PASID table
//!     11.  Its end-of-query interrupts are delivered after it is released.
//!     An UNMAP_QUEUES under it waits for 2 only (one quantum), never for
//!     a retry fault to be served (see 2).
//! -1. `Kgd::mes` (`gpu`, `mes`), beside `Kgd::cp` (never nested with it):
//!     the MES firmware's queues.  Taken by the kfd2kgd `mes_*` calls and
//!     `gpu_reset` with no other lock of this driver held; the queues it
//!     adds and removes take 1 and 2 under it, the GART 10, the PASID
//!     table 11.
//!  0. `Kgd::hqds` (`gpu`, `mqd`): the hardware queue slots.  Taken by the
//!     kfd2kgd `hqd_*` calls with no other lock of this driver held; only
//!     `hqd_load` / `hqd_sdma_load` take another lock under it (1, to give
//!     the queue to a worker); the others take the queue out or clone it
//!     and release it before they wait for the engine.
//!  0. `Pool::engines` (`engine/shader`), beside `Kgd::hqds` (never
//!     nested with it): the workers to kick when a dispatch is offered
//!     to helpers; taken with no other lock held, each worker's 1 in
//!     turn under it.
//!  0. `Bell::workers` (`engine`): the workers a trapped doorbell write
//!     wakes.  Taken in the write fault (the mm's `mmap_lock` or VMA lock
//!     and the doorbell page's lock held, no lock of this driver), each
//!     worker's 1 in turn under it.  Arming the trap (the shim's
//!     `vgpu_db_watch::lock`, then the doorbell page's lock, then the
//!     mapping's `i_mmap_rwsem` and page-table locks) is done by a worker
//!     with no lock of this driver held.
//!  1. `Engine::inner` (`engine`): a worker's queue list, scheduler clock,
//!     hang and stop flags (with its condition variable `Engine::wake`).
//!     Never held together with 2 (each path releases one before it takes
//!     the other), nor while a queue runs or an interrupt is delivered;
//!     workers' locks are never nested (`Engines` takes them in turn).
//!     Only its own lists are allocated under it.
//!  2. `Hqd::state` (`engine`): one queue's engine state.  The engine
//!     thread holds it while it runs the queue for one quantum;
//!     `hqd_destroy`, `hqd_dump` and `gpu_reset` take it
//!     with no other lock of this driver held (rkfd calls the first two
//!     under its `Process::inner` or a queue's `QueueShared::hw`) to wait
//!     for the engine to leave the queue: that is preemption,
//!     bounded by one quantum.  Released before the engine raises a retry
//!     fault (rkfd takes its `Process::inner` in the handler and preempts
//!     under it, directly or through the CP: holding 2 across the fault
//!     deadlocks them), as the real CP context-switches a faulting wave.
//!     Nothing allocates with direct reclaim under it (a workgroup's
//!     storage is allocated with no lock held, interrupt entries are
//!     reserved before the run): reclaim may preempt queues.
//!  2b. `Pool::slots` (`engine/shader`): one worker's helper state (a
//!     workgroup of another worker's dispatch), held while it runs one
//!     time slice of it; cancelling a dispatch (`hqd_destroy`, a replaced
//!     ring, `gpu_reset`) takes each in turn to wait for the slices in
//!     progress, with no lock of this driver held (helpers never take 1
//!     or 2).  Released before a helper raises a retry fault in rkfd.
//!     Under it: 3, and the leaves `Pool::grids` (the dispatches offered to
//!     helpers; also taken under 2) and `Grid::error`.
//!  3. `Vm::inner` (`vm`; upstream the VM's page tables): the objects,
//!     mappings and page table.  Taken under the mm's `mmap_lock` (render
//!     node mmap), under 2 (an engine's run of accesses, `Vm::gpu_pages`,
//!     released every `ACCESS_CHUNK` bytes; `hqd_dump` reads the write
//!     pointer) and by rkfd's `svm_map` / `svm_unmap` under its SVM locks,
//!     inside MMU-notifier invalidation.  So nothing allocates with direct
//!     reclaim under it (page tables are allocated inside
//!     `kabi::NoReclaim`), nothing under it waits for an invalidation or an
//!     engine, and `mmap_lock` is never taken under it (a later user-pointer
//!     implementation must keep it so).  Objects leaving the VM are dropped
//!     after it is released: dropping one takes 6 and 9.  `Mem::pte` takes
//!     no lock.
//!  4. `Core::throttle` (`gpu`): held across rkfd's
//!     `kgd2kfd_smi_event_throttle`, which takes only rkfd's SMI spinlocks
//!     (its innermost locks); no lock of this driver is taken under it.
//!     It keeps a report and the device's removal apart.
//!  5. `Mem::kmap` (`mem`): a leaf; the kernel mapping is made under it
//!     (rkfd's `map_gtt_to_kernel`, under `Process::inner`).
//!  6. `Core::offsets` (`gpu`): a leaf; it may allocate to grow.  So is
//!     `Core::doorbell_slices` (`gpu`, taken at `acquire_vm` and
//!     `release_vm` only).
//!  7. `Engine::irq` (`engine`): a leaf, read before each delivery and
//!     released before rkfd is called.
//!  8. `Engine::thread` (`engine`): a leaf, taken by `EngineHandle` only to
//!     store or take the thread, which is stopped after it is released.
//!  9. `vram::Pool::inner` (`vram`, a spinlock): innermost.  SVM frames are
//!     freed from `dev_pagemap_ops.folio_free` (`svm_free_vram`) in any
//!     context, under the mm's locks and rkfd's SVM locks; taken under 3
//!     (an SVM frame's page) and by `svm_copy`, which copies page by page
//!     under it.
//! 10. `Gart::state` (`gart`): a leaf; the kernel objects' table, taken
//!     only to add, remove or look up an object (the pages are read and
//!     written after it is released, through the object's own reference).
//! 11. `Core::pasid_vms` (`gpu`): a leaf; the VMs KFD processes acquired,
//!     found by PASID (the CP and the MES look them up by page table base
//!     too).  The PASIDs themselves come from the shim's driver-wide
//!     XArray (`kabi::Pasid`, its own spinlock, taken with no lock of
//!     this driver held: a VM's creation and last drop).  A VM's last
//!     reference is dropped after it is released.
//! 12. `Vm::evict` (`vm`), then `vgpu_evict_lock` (C mutex,
//!     `evict_shim.c`): a VM's KFD eviction fences; taken by `acquire_vm`,
//!     `restore_process_bos` and `release_vm` (under rkfd's
//!     `Process::inner`) and by the debugfs files `amdgpu_vgpu/*`, which
//!     drop it before they call into rkfd.  An eviction fence's own lock is
//!     a leaf here; rkfd takes a leaf spinlock inside it
//!     (`->enable_signaling` calls
//!     `kgd2kfd_schedule_evict_and_restore_process`).
//!
//! Calls into rkfd (`kgd2kfd_interrupt`, `kgd2kfd_svm_fault`,
//! `kgd2kfd_quiesce_mm` / `kgd2kfd_resume_mm` /
//! `kgd2kfd_queue_restore_rescheduled` / `kgd2kfd_signal_userptr_fault`
//! from debugfs, `kgd2kfd_set_sram_ecc_flag` and `kgd2kfd_clear_mappings`
//! from `vgpu_power`) are made with
//! no lock of this driver held: rkfd's handlers take its process and SVM
//! locks, under which it makes kfd2kgd calls that take 2 and 3.  So an
//! engine drops 3 and 2 before a retry fault (`Vm::svm_fault`) and
//! delivers the interrupts of a run after it.  No kfd2kgd call calls back
//! into rkfd.

#![crate_name = "amdgpu"]

use kernel::prelude::*;

mod cp;
mod mes;
mod engine;
mod gart;
mod gpu;
mod ih;
mod isa;
mod kabi;
mod kfd2kgd;
mod mem;
mod mqd;
mod profile;
mod sysmem;
mod vm;
mod vram;

#[path = "../rust/gpu-pagetable/src/table.rs"]
#[allow(dead_code, unreachable_pub)]
mod pagetable;

#[path = "../rust/kfd-uapi/src/abi.rs"]
#[allow(
    dead_code,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    unreachable_pub,
    clippy::all
)]
mod uapi;

module! {
    type: Amdgpu,
    name: "amdgpu",
    authors: ["The rkfd authors"],
    description: "Virtual AMD GPU for rkfd (amdkfd in Rust)",
    license: "GPL",
    params: {
        num_gpus: u32 {
            default: 1,
            description: "Number of virtual GPUs (1-4)",
        },
        vram_mb: u32 {
            default: 0,
            description: "VRAM per GPU in MiB (0: the profile's default; at most 65536)",
        },
    },
}

/// The most virtual GPUs.
const MAX_GPUS: u32 = 4;
/// The most VRAM per GPU, MiB.
const MAX_VRAM_MB: u32 = 65536;

/// The loaded module: its GPUs, removed when it unloads.
struct Amdgpu {
    /// The GPUs, in order.
    _gpus: KVec<gpu::Gpu>,
    /// `amdgpu_vgpu/` in debugfs (`vgpu/evict_shim.c`): dropped after the
    /// GPUs.
    _evict_debugfs: kabi::EvictDebugfs,
}

impl kernel::Module for Amdgpu {
    fn init(module: &'static ThisModule) -> Result<Self> {
        // `profile` is one name or a comma-separated list: GPU i gets
        // entry i % len, and a list of n names means at least n GPUs.
        let names = kabi::profile_param();
        let mut profiles = KVec::new();
        for name in names.to_bytes().split(|&b| b == b',') {
            let Some(profile) = profile::Profile::find(name) else {
                pr_err!(
                    "unknown profile {:?}; known: gfx90a, gfx1030, gfx1100, gfx1103\n",
                    names
                );
                return Err(EINVAL);
            };
            profiles.push(profile, GFP_KERNEL)?;
        }
        let count = module_parameters::num_gpus.value().max(profiles.len() as u32);
        if count == 0 || count > MAX_GPUS {
            pr_err!("num_gpus={} is not in 1..={}\n", count, MAX_GPUS);
            return Err(EINVAL);
        }
        let vram_mb = module_parameters::vram_mb.value();
        if vram_mb > MAX_VRAM_MB {
            pr_err!("vram_mb={} is more than {}\n", vram_mb, MAX_VRAM_MB);
            return Err(EINVAL);
        }
        let sysmem = sysmem::SystemMemory::new()?;
        let evict_debugfs = kabi::EvictDebugfs::new();
        // Every GPU's state and devices first, so that a failure leaves
        // nothing registered with rkfd, where processes could start using it.
        let mut kgds = KVec::with_capacity(count as usize, GFP_KERNEL)?;
        for index in 0..count {
            let profile = profiles[index as usize % profiles.len()];
            let mb = if vram_mb == 0 { profile.default_vram_mib } else { vram_mb };
            kgds.push(
                gpu::Kgd::new(profile, index, u64::from(mb) << 20, &sysmem)?,
                GFP_KERNEL,
            )?;
        }
        let mut gpus = KVec::with_capacity(kgds.len(), GFP_KERNEL)?;
        for kgd in kgds {
            // On failure the GPUs registered so far are removed as `gpus`
            // drops, and the rest as the iterator drops.
            gpus.push(gpu::Gpu::register(kgd, module)?, GFP_KERNEL)?;
        }
        Ok(Amdgpu { _gpus: gpus, _evict_debugfs: evict_debugfs })
    }
}
