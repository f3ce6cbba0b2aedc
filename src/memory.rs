// SPDX-License-Identifier: GPL-2.0

//! Memory objects: `ALLOC_MEMORY_OF_GPU`, `FREE_MEMORY_OF_GPU`,
//! `MAP_MEMORY_TO_GPU`, `UNMAP_MEMORY_FROM_GPU`, and graphics interop:
//! `GET_DMABUF_INFO`, `IMPORT_DMABUF`.
//!
//! C: the memory ioctls of `kfd_chardev.c` and the pdd's `alloc_idr`.  The
//! GPU driver owns the backing store and the GPU page tables; rkfd owns the
//! handles user space sees (`gpu_id << 32 | idr`, upstream `MAKE_HANDLE`),
//! which GPUs each object is mapped on, and the VRAM accounting.
//!
//! Locking: every function here runs under `Process::inner`.

use crate::kabi::log::kfd_err;
use kernel::{
    prelude::*,
    rbtree::{RBTree, RBTreeNodeReservation},
    uaccess::{UserPtr, UserSlice},
    sync::atomic::{Atomic, Relaxed}, //
};

use crate::{
    chardev::mmap_offset,
    kabi::kgd::{KernelMapping, KgdMem, MemAlloc},
    process::ProcessInner,
    procfs::ProcCounters,
    uapi,
};

/// One memory object of a process on a device (C: `struct kgd_mem`).
pub(crate) struct MemObject {
    /// The GPU driver's object; `None` only transiently while freeing.
    mem: Option<KgdMem>,
    /// GPU virtual address (`va_addr` of the allocation).
    va: u64,
    /// Size in bytes.
    size: u64,
    /// `KFD_IOC_ALLOC_MEM_FLAGS_*`.
    flags: u32,
    /// gpu_ids of the devices whose VM maps it.
    mapped_on: KVec<u32>,
    /// One gpu_id per queue buffer of that device inside this object
    /// (upstream `bo_va->queue_refcount`): it cannot be unmapped from that
    /// GPU while the queue exists (`-EBUSY`).
    queue_users: KVec<u32>,
    /// Made by `IMPORT_DMABUF`: not counted in the process's usage, as
    /// upstream (`free_memory_of_gpu` reports size 0 for imports).
    imported: bool,
}

/// The memory objects of one pdd, by IDR handle (lowest free id first, as
/// upstream's `idr_alloc(.., 0, 0, ..)`).
pub(crate) struct MemoryObjects {
    objects: RBTree<u32, MemObject>,
}

impl MemoryObjects {
    /// An empty table.
    pub(crate) fn new() -> Self {
        MemoryObjects { objects: RBTree::new() }
    }

    /// The lowest id not in use.
    fn free_id(&self) -> Result<u32> {
        let mut want = 0u32;
        for &k in self.objects.keys() {
            if k != want {
                break;
            }
            want = want.checked_add(1).ok_or(ENOSPC)?;
        }
        // IDR handles are positive ints.
        if want > i32::MAX as u32 {
            return Err(ENOSPC);
        }
        Ok(want)
    }
}

/// `gpu_id << 32 | idr` (upstream `MAKE_HANDLE`).
pub(crate) fn make_handle(gpu_id: u32, idr: u32) -> u64 {
    (u64::from(gpu_id) << 32) | u64::from(idr)
}

/// Splits a handle into (gpu_id, idr) (upstream `GET_GPU_ID`, `GET_IDR_HANDLE`).
pub(crate) fn split_handle(handle: u64) -> (u32, u32) {
    ((handle >> 32) as u32, handle as u32)
}

/// Exactly one memory domain must be requested.
fn check_flags(flags: u32) -> Result {
    let domains = flags
        & (uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM
            | uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT
            | uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
            | uapi::KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
            | uapi::KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP);
    if domains.count_ones() != 1 {
        return Err(EINVAL);
    }
    Ok(())
}

/// IOCTL: ALLOC_MEMORY_OF_GPU.
pub(crate) fn alloc(inner: &mut ProcessInner, args: &mut uapi::kfd_ioctl_alloc_memory_of_gpu_args) -> Result {
    let flags = args.flags;
    if args.size == 0 || args.size & (kernel::page::PAGE_SIZE as u64 - 1) != 0 {
        return Err(EINVAL);
    }
    check_flags(flags)?;
    let pdd = inner.pdd(args.gpu_id)?;
    let vram = flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0;
    if vram && flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC != 0 && pdd.dev.info.vram_is_public == 0 {
        // Host-visible VRAM on a small BAR, as upstream.
        return Err(EINVAL);
    }
    let vm = pdd.bound_vm()?;
    // Upstream: DOORBELL must be the whole slice, MMIO_REMAP one page
    // (`-EINVAL`); their mmap offsets are `/dev/kfd` ones.
    let kfd_offset = if flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL != 0 {
        if args.size != u64::from(pdd.dev.info.doorbell_process_size) {
            return Err(EINVAL);
        }
        Some(mmap_offset::doorbell(args.gpu_id))
    } else if flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP != 0 {
        if args.size != kernel::page::PAGE_SIZE as u64 {
            return Err(EINVAL);
        }
        Some(mmap_offset::mmio(args.gpu_id))
    } else {
        None
    };
    let id = pdd.mem.free_id()?;
    // Allocate the table node first: after the driver allocated, nothing may fail.
    let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
    let mut mapped_on = KVec::new();
    mapped_on.reserve(1, GFP_KERNEL)?;
    let request = MemAlloc {
        va: args.va_addr,
        size: args.size,
        user_addr: if flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 { args.mmap_offset } else { 0 },
        flags,
        pad: 0,
    };
    let (mem, offset) = pdd.dev.kgd.alloc_memory(vm, &request)?;
    let obj = MemObject {
        mem: Some(mem),
        va: args.va_addr,
        size: args.size,
        flags,
        mapped_on,
        queue_users: KVec::new(),
        imported: false,
    };
    // `id` is free, so nothing is replaced.
    pdd.mem.objects.insert(node.into_node(id, obj));
    if let Some((counter, size)) = accounted(&pdd.counters, flags, args.size) {
        counter.fetch_add(size, Relaxed);
    }
    args.handle = make_handle(args.gpu_id, id);
    // DOORBELL: upstream returns the SG BO's render-node offset, which
    // libhsakmt ignores (it maps the doorbells at CREATE_QUEUE's
    // `doorbell_offset`); the `/dev/kfd` offset that really maps them is
    // the honest answer.  MMIO_REMAP: as upstream.
    args.mmap_offset = kfd_offset.unwrap_or(offset);
    Ok(())
}

/// The sysfs counter an object of `flags` and `size` counts against, and how
/// much: VRAM (AQL queue memory counts half, as upstream), GTT or USERPTR.
fn accounted(c: &ProcCounters, flags: u32, size: u64) -> Option<(&Atomic<u64>, u64)> {
    if flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0 {
        let aql = flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM != 0;
        Some((&c.vram, if aql { size >> 1 } else { size }))
    } else if flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT != 0 {
        Some((&c.gtt, size))
    } else if flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 {
        Some((&c.userptr, size))
    } else {
        None
    }
}

/// IOCTL: FREE_MEMORY_OF_GPU.  An object still mapped on a GPU is `-EBUSY`
/// (as amdgpu); the signal page cannot be freed (`-EPERM`).
pub(crate) fn free(inner: &mut ProcessInner, handle: u64, signal_page_handle: Option<u64>) -> Result {
    if signal_page_handle == Some(handle) {
        return Err(EPERM);
    }
    let (gpu_id, id) = split_handle(handle);
    let pdd = inner.pdd(gpu_id)?;
    let obj = pdd.mem.objects.get(&id).ok_or(EINVAL)?;
    if !obj.mapped_on.is_empty() {
        return Err(EBUSY);
    }
    pdd.bound_vm()?;
    let mut obj = pdd.mem.objects.remove(&id).ok_or(EINVAL)?;
    if let (Some(mem), Some(vm)) = (obj.mem.take(), pdd.vm.as_ref()) {
        pdd.dev.kgd.free_memory(vm, mem);
    }
    if let Some((counter, size)) = accounted(&pdd.counters, obj.flags, obj.size).filter(|_| !obj.imported) {
        counter.fetch_sub(size, Relaxed);
    }
    Ok(())
}

/// IOCTL: GET_DMABUF_INFO (upstream `kfd_ioctl_get_dmabuf_info`): asks the
/// GPU driver of `dev`, the first GPU the process may use (upstream: the
/// first the device cgroup allows), about dma-buf `args.dmabuf_fd`.
/// `gpu_id` is the GPU the buffer belongs to, which need not be `dev`
/// (`-EINVAL` if rkfd does not know it).  The metadata is copied out if it
/// fits in `metadata_size` bytes (else `-EINVAL` with the size needed);
/// a kernel buffer of at most a page is used, as no driver keeps more.
pub(crate) fn get_dmabuf_info(
    dev: &crate::device::Device,
    args: &mut uapi::kfd_ioctl_get_dmabuf_info_args,
) -> Result {
    let len = (args.metadata_size as usize).min(kernel::page::PAGE_SIZE);
    let mut metadata = KVec::from_elem(0u8, len, GFP_KERNEL)?;
    let fd = i32::try_from(args.dmabuf_fd).map_err(|_| EBADF)?;
    let info = dev.kgd.get_dmabuf_info(fd, &mut metadata)?;
    let owner = crate::device::by_kfd_handle(info.owner)?.ok_or(EINVAL)?;
    args.size = info.size;
    args.gpu_id = owner.gpu_id();
    args.flags = info.flags;
    args.metadata_size = info.metadata_size;
    if args.metadata_ptr != 0 {
        let n = (info.metadata_size as usize).min(len);
        let bytes = metadata.get(..n).ok_or(EINVAL)?;
        UserSlice::new(UserPtr::from_addr(args.metadata_ptr as usize), n).writer().write_slice(bytes)?;
    }
    Ok(())
}

/// IOCTL: IMPORT_DMABUF (upstream `kfd_ioctl_import_dmabuf`): a memory
/// object of the process on `gpu_id` at `va_addr` over the memory of
/// dma-buf `dmabuf_fd`, used and freed like `ALLOC_MEMORY_OF_GPU`'s.
/// `-EINVAL` for an unknown GPU, `-ENODEV` before `ACQUIRE_VM`, the GPU
/// driver's errno for the buffer.
pub(crate) fn import_dmabuf(inner: &mut ProcessInner, args: &mut uapi::kfd_ioctl_import_dmabuf_args) -> Result {
    let pdd = inner.pdd(args.gpu_id)?;
    let vm = pdd.bound_vm()?;
    let fd = i32::try_from(args.dmabuf_fd).map_err(|_| EBADF)?;
    let id = pdd.mem.free_id()?;
    // Allocate the table node first: after the import, nothing may fail.
    let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
    let mut mapped_on = KVec::new();
    mapped_on.reserve(1, GFP_KERNEL)?;
    let imported = pdd.dev.kgd.import_dmabuf(vm, fd, args.va_addr)?;
    let obj = MemObject {
        mem: Some(imported.mem),
        va: args.va_addr,
        size: imported.size,
        flags: imported.flags,
        mapped_on,
        queue_users: KVec::new(),
        imported: true,
    };
    // `id` is free, so nothing is replaced.
    pdd.mem.objects.insert(node.into_node(id, obj));
    args.handle = make_handle(args.gpu_id, id);
    Ok(())
}

/// Which way [`map_or_unmap`] goes.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Direction {
    Map,
    Unmap,
}

/// IOCTL: MAP_MEMORY_TO_GPU / UNMAP_MEMORY_FROM_GPU for the devices in
/// `gpu_ids[n_success..]`; `n_success` advances with each device done, so
/// user space can restart after an error.
pub(crate) fn map_or_unmap(
    inner: &mut ProcessInner,
    handle: u64,
    gpu_ids: &[u32],
    n_success: &mut u32,
    dir: Direction,
) -> Result {
    let (gpu_id, id) = split_handle(handle);
    let owner = inner.pdd_index(gpu_id)?;
    if dir == Direction::Map {
        inner.pdds[owner].bound_vm()?;
    }
    if inner.pdds[owner].mem.objects.get(&id).is_none() {
        // Upstream answers -ENOMEM for an unknown handle here.
        return Err(ENOMEM);
    }
    let start = *n_success as usize;
    for (i, &peer_id) in gpu_ids.iter().enumerate().skip(start) {
        let peer = inner.pdd_index(peer_id)?;
        let mapped = {
            let pdds = &inner.pdds;
            let obj = pdds[owner].mem.objects.get(&id).ok_or(EINVAL)?;
            let mem = obj.mem.as_ref().ok_or(EINVAL)?;
            let peer_pdd = &pdds[peer];
            let vm = peer_pdd.bound_vm()?;
            if !peer_pdd.dev.kgd.same_driver(&pdds[owner].dev.kgd) {
                return Err(EINVAL);
            }
            let is_mapped = obj.mapped_on.iter().any(|&g| g == peer_id);
            match (dir, is_mapped) {
                (Direction::Map, true) => true,
                (Direction::Map, false) => {
                    peer_pdd.dev.kgd.map_memory(vm, mem)?;
                    true
                }
                (Direction::Unmap, false) => return Err(EINVAL),
                (Direction::Unmap, true) if obj.queue_users.contains(&peer_id) => return Err(EBUSY),
                (Direction::Unmap, true) => {
                    peer_pdd.dev.kgd.unmap_memory(vm, mem)?;
                    false
                }
            }
        };
        let obj = inner.pdds[owner].mem.objects.get_mut(&id).ok_or(EINVAL)?;
        let was = obj.mapped_on.iter().position(|&g| g == peer_id);
        match (mapped, was) {
            (true, None) => {
                if let Err(e) = obj.mapped_on.push(peer_id, GFP_KERNEL) {
                    // Keep the books right: undo the mapping we cannot record.
                    let pdds = &inner.pdds;
                    if let (Some(o), Ok(vm)) = (pdds[owner].mem.objects.get(&id), pdds[peer].bound_vm()) {
                        if let Some(mem) = o.mem.as_ref() {
                            let _ = pdds[peer].dev.kgd.unmap_memory(vm, mem);
                        }
                    }
                    return Err(e.into());
                }
            }
            (false, Some(pos)) => {
                let _ = obj.mapped_on.remove(pos);
            }
            _ => {}
        }
        *n_success = (i + 1) as u32;
    }
    Ok(())
}

/// A queue buffer's reference on the memory object holding it (C: the
/// `*_bo` fields of `struct queue_properties`).
pub(crate) struct QueueBufferRef {
    /// Handle of the object.
    handle: u64,
    /// The queue's device.
    gpu_id: u32,
}

/// Finds the memory object mapped on `gpu_id` that holds `[va, va + size)`
/// and counts a queue of that device as its user (C: `kfd_queue_buffer_get`;
/// see `crate::queue` for how the rule differs from upstream's).  `-EINVAL`
/// if there is none.
pub(crate) fn queue_buffer_get(inner: &mut ProcessInner, gpu_id: u32, va: u64, size: u64) -> Result<QueueBufferRef> {
    for pdd in inner.pdds.iter_mut() {
        let owner = pdd.dev.gpu_id();
        for (&id, obj) in pdd.mem.objects.iter_mut() {
            if obj.mapped_on.contains(&gpu_id) && kfd_logic_inside(va, size, obj.va, obj.size) {
                if obj.queue_users.push(gpu_id, GFP_KERNEL).is_err() {
                    return Err(ENOMEM);
                }
                return Ok(QueueBufferRef { handle: make_handle(owner, id), gpu_id });
            }
        }
    }
    Err(EINVAL)
}

/// Whether `[va, va + size)` lies inside `[obj_va, obj_va + obj_size)`.
fn kfd_logic_inside(va: u64, size: u64, obj_va: u64, obj_size: u64) -> bool {
    match (va.checked_add(size), obj_va.checked_add(obj_size)) {
        (Some(end), Some(obj_end)) => va >= obj_va && end <= obj_end,
        _ => false,
    }
}

/// Drops a reference taken by [`queue_buffer_get`] (C: `kfd_queue_unref_bo_va`).
pub(crate) fn queue_buffer_put(inner: &mut ProcessInner, r: QueueBufferRef) {
    let (owner, id) = split_handle(r.handle);
    if let Ok(pdd) = inner.pdd(owner) {
        if let Some(obj) = pdd.mem.objects.get_mut(&id) {
            if let Some(pos) = obj.queue_users.iter().position(|&g| g == r.gpu_id) {
                let _ = obj.queue_users.remove(pos);
            }
        }
    }
}

/// Unmaps and frees every memory object of the process (teardown).
pub(crate) fn release_all(inner: &mut ProcessInner) {
    for owner in 0..inner.pdds.len() {
        loop {
            let Some(&id) = inner.pdds[owner].mem.objects.keys().next() else {
                break;
            };
            let Some(mut obj) = inner.pdds[owner].mem.objects.remove(&id) else {
                break;
            };
            let Some(mem) = obj.mem.take() else {
                continue;
            };
            for &g in obj.mapped_on.iter() {
                if let Some(peer) = inner.pdds.iter().find(|p| p.dev.gpu_id() == g) {
                    if let Ok(vm) = peer.bound_vm() {
                        let _ = peer.dev.kgd.unmap_memory(vm, &mem);
                    }
                }
            }
            let pdd = &inner.pdds[owner];
            match pdd.bound_vm() {
                Ok(vm) => pdd.dev.kgd.free_memory(vm, mem),
                // Objects are only created in a bound VM, which is released
                // after this; keep the handle leak visible rather than silent.
                Err(_) => kfd_err!("memory object {} of gpu {} has no VM\n", id, pdd.dev.gpu_id()),
            }
        }
        let c = &inner.pdds[owner].counters;
        for counter in [&c.vram, &c.gtt, &c.userptr] {
            counter.store(0, Relaxed);
        }
    }
}

/// A kernel mapping of the GTT object `handle` (the event page).
pub(crate) fn map_to_kernel(inner: &mut ProcessInner, handle: u64) -> Result<KernelMapping> {
    let (gpu_id, id) = split_handle(handle);
    let pdd = inner.pdd(gpu_id)?;
    pdd.bound_vm()?;
    let obj = pdd.mem.objects.get(&id).ok_or(EINVAL)?;
    if obj.flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT == 0 {
        return Err(EINVAL);
    }
    pdd.dev.kgd.map_gtt_to_kernel(obj.mem.as_ref().ok_or(EINVAL)?)
}

/// Whether a memory object mapped on some GPU meets the bytes `[start, end)`
/// (upstream `svm_range_check_vm`: a KFD buffer in a GPU VM's VA tree; SVM
/// refuses such intervals with `-EADDRINUSE`).
pub(crate) fn mapped_va_overlaps(inner: &ProcessInner, start: u64, end: u64) -> bool {
    inner.pdds.iter().any(|pdd| {
        pdd.mem
            .objects
            .values()
            .any(|o| !o.mapped_on.is_empty() && o.va < end && start < o.va.saturating_add(o.size))
    })
}

#[kunit_tests(rkfd_memory)]
mod tests {
    use super::*;
    use crate::{
        device,
        kabi::kgd::fake::{self, FakeGpu},
        process::ProcessDevice,
    };
    use kernel::sync::{atomic::Relaxed, Arc};

    const PAGE: u64 = kernel::page::PAGE_SIZE as u64;
    const VRAM: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    const GTT: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT;
    const AQL: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM;

    /// A process with `n` devices of one fake driver, each bound to a VM
    /// if `bound`.
    fn setup(n: u32, bound: bool) -> Result<(Arc<FakeGpu>, ProcessInner)> {
        let gpu = FakeGpu::new()?;
        let mut pdds = KVec::new();
        for i in 0..n {
            let dev = device::probe(fake::device(&gpu), fake::info())?;
            dev.set_gpu_id_for_tests(0x100 + i);
            let mut pdd = ProcessDevice::new(dev)?;
            if bound {
                pdd.vm = Some(Arc::new(fake::vm(&pdd.dev.kgd)?, GFP_KERNEL)?);
            }
            pdds.push(pdd, GFP_KERNEL)?;
        }
        Ok((gpu, ProcessInner::for_tests(pdds)))
    }

    fn args(gpu_id: u32, va: u64, size: u64, flags: u32) -> uapi::kfd_ioctl_alloc_memory_of_gpu_args {
        uapi::kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, gpu_id, flags, ..Default::default() }
    }

    /// Tears the process down as `Process::teardown` does and checks the
    /// fake driver got everything back.
    fn finish(gpu: Arc<FakeGpu>, mut inner: ProcessInner) {
        release_all(&mut inner);
        assert_eq!(gpu.live_maps.load(Relaxed), 0);
        assert_eq!(gpu.live_mems.load(Relaxed), 0);
        drop(inner);
        assert_eq!(gpu.live_vms.load(Relaxed), 0);
    }

    /// kfd2kgd `acquire_vm` reports the VM's PASID, which the GPU driver
    /// owns (upstream `pdd->pasid = avm->pasid`); a VM without one is
    /// given back and `EINVAL` (upstream "vm has no pasid associated").
    /// `pasid_of` answers the pdd's PASID by gpu_id, 0 for an unbound or
    /// unknown device.
    #[test]
    fn acquire_vm_takes_the_drivers_pasid() -> Result {
        let (gpu, mut inner) = setup(2, false)?;
        gpu.pasid.store(0, Relaxed);
        assert_eq!(fake::vm(&inner.pdds[0].dev.kgd).err(), Some(EINVAL));
        assert_eq!(gpu.live_vms.load(Relaxed), 0);
        gpu.pasid.store(0x8123, Relaxed);
        let vm = fake::vm(&inner.pdds[1].dev.kgd)?;
        assert_eq!(vm.pasid(), 0x8123);
        let id = inner.pdds[1].dev.gpu_id();
        assert_eq!(inner.pasid_of(id), 0);
        inner.pdds[1].set_pasid(vm.pasid());
        inner.pdds[1].vm = Some(Arc::new(vm, GFP_KERNEL)?);
        assert_eq!(inner.pasid_of(id), 0x8123);
        assert_eq!(inner.pasid_of(inner.pdds[0].dev.gpu_id()), 0);
        assert_eq!(inner.pasid_of(0xdead), 0);
        finish(gpu, inner);
        Ok(())
    }

    #[test]
    fn handles_are_gpu_id_and_lowest_free_id() -> Result {
        let (gpu, mut inner) = setup(1, true)?;
        let id = inner.pdds[0].dev.gpu_id();
        let mut a = args(id, 0x10000, PAGE, GTT);
        alloc(&mut inner, &mut a)?;
        let h0 = a.handle;
        assert_eq!(h0, (u64::from(id) << 32) | 0);
        a = args(id, 0x20000, PAGE, GTT);
        alloc(&mut inner, &mut a)?;
        assert_eq!(split_handle(a.handle), (id, 1));
        free(&mut inner, h0, None)?;
        a = args(id, 0x30000, PAGE, GTT);
        alloc(&mut inner, &mut a)?;
        assert_eq!(a.handle, h0);
        // Unknown ids and devices; the signal page.
        assert_eq!(free(&mut inner, make_handle(id, 7), None), Err(EINVAL));
        assert_eq!(free(&mut inner, make_handle(id + 1, 0), None), Err(EINVAL));
        assert_eq!(free(&mut inner, h0, Some(h0)), Err(EPERM));
        // Bad requests leave nothing behind.
        for bad in [
            args(id, 0x40000, 0, GTT),
            args(id, 0x40000, 100, GTT),
            args(id, 0x40000, PAGE, GTT | VRAM),
            args(id, 0x40000, PAGE, 0),
            args(id + 1, 0x40000, PAGE, GTT),
        ] {
            let mut b = bad;
            assert_eq!(alloc(&mut inner, &mut b), Err(EINVAL));
        }
        assert_eq!(gpu.live_mems.load(Relaxed), 2);
        finish(gpu, inner);
        Ok(())
    }

    #[test]
    fn map_restarts_after_n_success() -> Result {
        let (gpu, mut inner) = setup(2, true)?;
        let (g0, g1) = (inner.pdds[0].dev.gpu_id(), inner.pdds[1].dev.gpu_id());
        let mut a = args(g0, 0x10000, 4 * PAGE, VRAM);
        alloc(&mut inner, &mut a)?;
        let h = a.handle;
        let ids = [g0, g1];
        // The second device fails: one done, reported in n_success.
        gpu.fail_map_in.store(1, Relaxed);
        let mut n = 0;
        assert_eq!(map_or_unmap(&mut inner, h, &ids, &mut n, Direction::Map), Err(ENOMEM));
        assert_eq!((n, gpu.live_maps.load(Relaxed)), (1, 1));
        // Restarting from n_success maps only the rest.
        map_or_unmap(&mut inner, h, &ids, &mut n, Direction::Map)?;
        assert_eq!((n, gpu.live_maps.load(Relaxed)), (2, 2));
        // Mapping again is a no-op; freeing while mapped is EBUSY.
        let mut n = 0;
        map_or_unmap(&mut inner, h, &ids, &mut n, Direction::Map)?;
        assert_eq!(gpu.live_maps.load(Relaxed), 2);
        assert_eq!(free(&mut inner, h, None), Err(EBUSY));
        // Unmap from one device; the other keeps it busy.
        let mut n = 0;
        map_or_unmap(&mut inner, h, &ids[1..], &mut n, Direction::Unmap)?;
        assert_eq!(map_or_unmap(&mut inner, h, &ids[1..], &mut 0, Direction::Unmap), Err(EINVAL));
        assert_eq!(free(&mut inner, h, None), Err(EBUSY));
        // Unknown handle, unknown device.
        assert_eq!(map_or_unmap(&mut inner, h + 1, &ids, &mut 0, Direction::Map), Err(ENOMEM));
        assert_eq!(map_or_unmap(&mut inner, h, &[0x7777], &mut 0, Direction::Map), Err(EINVAL));
        map_or_unmap(&mut inner, h, &ids[..1], &mut 0, Direction::Unmap)?;
        free(&mut inner, h, None)?;
        // Teardown unmaps what is still mapped.
        let mut a = args(g1, 0x10000, PAGE, GTT);
        alloc(&mut inner, &mut a)?;
        map_or_unmap(&mut inner, a.handle, &ids, &mut 0, Direction::Map)?;
        assert_eq!(gpu.live_maps.load(Relaxed), 2);
        finish(gpu, inner);
        Ok(())
    }

    #[test]
    fn accounting_by_kind() -> Result {
        let (gpu, mut inner) = setup(1, true)?;
        let id = inner.pdds[0].dev.gpu_id();
        let c = inner.pdds[0].counters.clone();
        alloc(&mut inner, &mut args(id, 0x10000, 4 * PAGE, VRAM))?;
        // AQL queue memory counts half, as upstream.
        alloc(&mut inner, &mut args(id, 0x100000, 8 * PAGE, VRAM | AQL))?;
        assert_eq!(c.vram.load(Relaxed), 8 * PAGE);
        let mut g = args(id, 0x200000, 2 * PAGE, GTT);
        alloc(&mut inner, &mut g)?;
        let mut u = args(id, 0x300000, 3 * PAGE, uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR);
        u.mmap_offset = 0x7000_0000;
        alloc(&mut inner, &mut u)?;
        assert_eq!((c.gtt.load(Relaxed), c.userptr.load(Relaxed)), (2 * PAGE, 3 * PAGE));
        // Doorbells: the whole slice, a /dev/kfd offset, not accounted.
        const DB: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL;
        const MMIO: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP;
        assert_eq!(alloc(&mut inner, &mut args(id, 0x400000, PAGE, DB)), Err(EINVAL));
        let mut d = args(id, 0x400000, 8192, DB);
        alloc(&mut inner, &mut d)?;
        assert_eq!(d.mmap_offset, mmap_offset::doorbell(id));
        assert_eq!(alloc(&mut inner, &mut args(id, 0x500000, 2 * PAGE, MMIO)), Err(EINVAL));
        let mut m = args(id, 0x500000, PAGE, MMIO);
        alloc(&mut inner, &mut m)?;
        assert_eq!(m.mmap_offset, mmap_offset::mmio(id));
        assert_eq!(c.vram.load(Relaxed) + c.gtt.load(Relaxed) + c.userptr.load(Relaxed), 13 * PAGE);
        // Freeing gives back exactly what was counted.
        free(&mut inner, g.handle, None)?;
        free(&mut inner, d.handle, None)?;
        assert_eq!((c.gtt.load(Relaxed), c.userptr.load(Relaxed)), (0, 3 * PAGE));
        finish(gpu, inner);
        assert_eq!(c.vram.load(Relaxed) + c.gtt.load(Relaxed) + c.userptr.load(Relaxed), 0);
        Ok(())
    }

    #[test]
    fn nothing_before_acquire_vm() -> Result {
        let (gpu, mut inner) = setup(1, false)?;
        let id = inner.pdds[0].dev.gpu_id();
        assert_eq!(alloc(&mut inner, &mut args(id, 0x10000, PAGE, GTT)), Err(ENODEV));
        assert_eq!(map_or_unmap(&mut inner, make_handle(id, 0), &[id], &mut 0, Direction::Map), Err(ENODEV));
        assert_eq!(gpu.live_mems.load(Relaxed), 0);
        finish(gpu, inner);
        Ok(())
    }
}
