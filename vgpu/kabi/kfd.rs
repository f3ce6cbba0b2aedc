// SPDX-License-Identifier: GPL-2.0

//! The device interface with rkfd: registration through rkfd's exported
//! `kgd2kfd_*` functions, and the `kfd2kgd` callbacks rkfd makes, as a
//! trait ([`Kfd2Kgd`]) the GPU type implements and a `kfd2kgd_calls`
//! table of `extern "C"` trampolines per implementing type.
//!
//! C header: `include/rkfd/kgd_kfd_interface.h` (the contract); its bindgen
//! output is `rust/kgd-kfd/src/interface.rs`.
//!
//! Handles given to rkfd: the `kgd` is the implementing value itself; a VM,
//! a memory object and a queue are `Arc`s of the trait's types, each turned
//! into a foreign pointer that owns one reference until rkfd hands it back
//! (`release_vm`, `free_memory_of_gpu`, `hqd_destroy`).

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    bindings,
    ffi::{
        c_int,
        c_void, //
    },
    page::Page,
    prelude::*,
    sync::{Arc, ArcBorrow},
    types::ForeignOwnable, //
};

use super::to_result;

/// The device interface (bindgen output of `kgd_kfd_interface.h`): plain
/// structs and constants the layers above may use too.
#[path = "../../rust/kgd-kfd/src/interface.rs"]
pub(crate) mod kgd;

pub(crate) use kgd::{
    kgd_cache_info as CacheInfo, kgd_gpu_info as GpuInfo, kgd_mem_alloc as MemAlloc, kgd_mem_limits as MemLimits,
    kgd_mes_add_queue_input as MesAddQueueInput, kgd_mes_remove_queue_input as MesRemoveQueueInput,
};

/// `KGD_SVM_PTE_VALID`: an `svm_map` entry maps its page.
pub(crate) const SVM_PTE_VALID: u64 = kgd::KGD_SVM_PTE_VALID as u64;
/// `KGD_SVM_PTE_VRAM`: the frame is a VRAM page index.
pub(crate) const SVM_PTE_VRAM: u64 = kgd::KGD_SVM_PTE_VRAM;
/// `KGD_SVM_PTE_WRITE`: the GPU may write.
pub(crate) const SVM_PTE_WRITE: u64 = kgd::KGD_SVM_PTE_WRITE;
/// `KGD_SVM_PTE_FRAME_MASK`.
pub(crate) const SVM_PTE_FRAME_MASK: u64 = kgd::KGD_SVM_PTE_FRAME_MASK;

/// The `struct file *` of a file rkfd passes to `acquire_vm` (or a test
/// opened).
///
/// # Invariants
///
/// Someone holds a reference on `file` for `'a`.
pub(crate) struct DrmFileRef<'a> {
    file: NonNull<bindings::file>,
    _held: PhantomData<&'a ()>,
}

impl DrmFileRef<'_> {
    /// The file, for the shim (which checks it is one of its DRM files
    /// before looking inside).
    pub(super) fn as_ptr(&self) -> *mut bindings::file {
        self.file.as_ptr()
    }

    /// Wraps a file the caller holds a reference on for `'a`.
    ///
    /// # Safety
    ///
    /// `file` is referenced for the returned value's lifetime.
    pub(super) unsafe fn from_raw<'a>(file: NonNull<bindings::file>) -> DrmFileRef<'a> {
        // INVARIANT: The caller's contract.
        DrmFileRef { file, _held: PhantomData }
    }
}

/// A VM's KFD eviction fences (`vgpu/evict_shim.c`, upstream
/// `amdgpu_amdkfd_fence.c` and the eviction fence of
/// `amdgpu_amdkfd_process_info`): destroyed (its current fence signalled
/// and put) on drop, at `release_vm`.
///
/// # Invariants
///
/// `0` came from `vgpu_shim_evict_fence_create` and is destroyed once, in
/// `drop`.
pub(crate) struct EvictFence(NonNull<super::shim_ffi::vgpu_evict_fence>);

// SAFETY: The shim's functions on it take its own lock.
unsafe impl Send for EvictFence {}
// SAFETY: As for `Send`.
unsafe impl Sync for EvictFence {}

impl EvictFence {
    /// The current process's eviction fences with rkfd's `context_id`, and
    /// a reference on the first fence for rkfd (`acquire_vm`).
    pub(crate) fn new(context_id: u16) -> Result<(Self, FenceRef)> {
        let mut ef = core::ptr::null_mut();
        // SAFETY: `ef` is a valid out pointer; process context (`acquire_vm`).
        let raw = unsafe { super::shim_ffi::vgpu_shim_evict_fence_create(context_id, &mut ef) };
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // INVARIANT: created above.
        let this = EvictFence(raw);
        // INVARIANT: a reference the shim took for us.
        let f = NonNull::new(ef).map(FenceRef).ok_or(ENOMEM)?;
        Ok((this, f))
    }

    /// `restore_process_bos`: a new fence replaces the current one; a
    /// reference on it for rkfd.
    pub(crate) fn restore(&self) -> Result<FenceRef> {
        let mut ef = core::ptr::null_mut();
        // SAFETY: Live (invariant); `ef` is a valid out pointer.
        to_result(unsafe { super::shim_ffi::vgpu_shim_evict_fence_restore(self.0.as_ptr(), &mut ef) })?;
        // INVARIANT: a reference the shim took for us.
        NonNull::new(ef).map(FenceRef).ok_or(ENOMEM)
    }
}

impl Drop for EvictFence {
    fn drop(&mut self) {
        // SAFETY: Created by the shim, destroyed once (invariant).
        unsafe { super::shim_ffi::vgpu_shim_evict_fence_destroy(self.0.as_ptr()) };
    }
}

/// A reference on an eviction fence, on its way to rkfd.
///
/// # Invariants
///
/// Holds one reference on the fence `0`.
pub(crate) struct FenceRef(NonNull<kgd::dma_fence>);

impl FenceRef {
    /// Hands the reference over (to rkfd).
    fn into_raw(self) -> *mut kgd::dma_fence {
        let f = self.0.as_ptr();
        core::mem::forget(self);
        f
    }
}

impl Drop for FenceRef {
    fn drop(&mut self) {
        // SAFETY: The reference this value holds (invariant).
        unsafe { super::shim_ffi::vgpu_shim_fence_put(self.0.as_ptr()) };
    }
}

/// The debugfs files of `vgpu/evict_shim.c` (`amdgpu_vgpu/`), from
/// module init to exit: removed on drop (after every GPU is gone).
pub(crate) struct EvictDebugfs(());

impl EvictDebugfs {
    /// Creates them (module init, once).
    pub(crate) fn new() -> Self {
        // SAFETY: Called once from module init.
        unsafe { super::shim_ffi::vgpu_shim_evict_debugfs_init() };
        EvictDebugfs(())
    }
}

impl Drop for EvictDebugfs {
    fn drop(&mut self) {
        // SAFETY: Created in `new`, removed once.
        unsafe { super::shim_ffi::vgpu_shim_evict_debugfs_exit() };
    }
}

/// The VMA of an `mmap` of `/dev/kfd` in progress, which rkfd passes to
/// `mmap_doorbells` / `mmap_mmio_remap`.
///
/// # Invariants
///
/// `vma` is a `struct vm_area_struct` being set up by an `mmap` call that
/// lasts for `'a`, its mm's mmap_lock held for writing.
pub(crate) struct MmapVma<'a> {
    vma: NonNull<c_void>,
    _call: PhantomData<&'a ()>,
}

impl MmapVma<'_> {
    /// The VMA, for the shim.
    pub(super) fn as_ptr(&self) -> *mut c_void {
        self.vma.as_ptr()
    }
}

/// The system pages rkfd passes to `svm_copy` (`struct page *`, or null
/// for "clear"), allocated for the call (`'a`).
///
/// # Invariants
///
/// Every non-null entry is a page that stays allocated for `'a`.
pub(crate) struct CopyPages<'a> {
    pages: &'a [*mut c_void],
}

impl<'a> CopyPages<'a> {
    /// How many.
    pub(crate) fn len(&self) -> usize {
        self.pages.len()
    }

    /// The pages in order (`None`: null).
    pub(crate) fn iter(&self) -> impl Iterator<Item = Option<CopyPage<'a>>> + 'a {
        self.pages.iter().map(|&p| {
            // INVARIANT: From the `CopyPages` invariant.
            NonNull::new(p.cast::<bindings::page>()).map(|page| CopyPage { page, _call: PhantomData })
        })
    }
}

/// A system page rkfd passes to `svm_copy`, allocated for the call (`'a`).
///
/// # Invariants
///
/// `page` stays allocated for `'a`.
pub(crate) struct CopyPage<'a> {
    page: NonNull<bindings::page>,
    _call: PhantomData<&'a ()>,
}

impl CopyPage<'_> {
    /// Copies `src` (a page of ours) into this page.
    pub(crate) fn copy_from(&self, src: &Page) {
        // SAFETY: Both pages are allocated for the call (`src` by its
        // owner, this one by rkfd for `'a`).
        unsafe { super::mm::copy_page(self.page.as_ptr(), src.as_ptr()) };
    }

    /// Copies this page into `dst` (a page of ours).
    pub(crate) fn copy_to(&self, dst: &Page) {
        // SAFETY: As in `copy_from`.
        unsafe { super::mm::copy_page(dst.as_ptr(), self.page.as_ptr()) };
    }
}

/// Clears `dst` (an `svm_copy` to VRAM without a source page).
pub(crate) fn clear_page(dst: &Page) {
    // SAFETY: `dst` is allocated (a reference); a null source clears.
    unsafe { super::mm::copy_page(dst.as_ptr(), core::ptr::null_mut()) };
}

/// The `kfd2kgd` calls rkfd makes (upstream: amdgpu's `amdgpu_amdkfd_*`),
/// implemented by the GPU type whose address is the `kgd` handle.  Every
/// call may sleep unless it says otherwise; see `kgd_kfd_interface.h`.
pub(crate) trait Kfd2Kgd: Send + Sync + 'static {
    /// A GPU VM rkfd acquired (upstream: the pdd's `drm_priv`).
    type Vm: Send + Sync;
    /// A memory object (upstream: `struct kgd_mem`).
    type Mem: Send + Sync;
    /// A kernel object (upstream: `alloc_gtt_mem`'s `mem_obj`).
    type Gtt: Send + Sync;

    /// `acquire_vm`: the VM of one of this GPU's open render-node files
    /// (`EINVAL` for any other file) and a reference on its eviction fence
    /// (made with rkfd's `context_id`), if it has one.
    fn acquire_vm(&self, file: &DrmFileRef<'_>, context_id: u16) -> Result<(Arc<Self::Vm>, Option<FenceRef>)>;
    /// `restore_process_bos`: the VM's memory is valid again; its new
    /// eviction fence.
    fn restore_process_bos(vm: ArcBorrow<'_, Self::Vm>) -> Result<Option<FenceRef>>;
    /// The VM's PASID, which `acquire_vm` reports to rkfd (upstream
    /// `avm->pasid`): the driver allocated it with the VM and owns it.
    fn vm_pasid(vm: &Self::Vm) -> u32;
    /// Tells `vm` the handle rkfd now knows it by (retry faults name the
    /// VM by it), or 0 when rkfd released it.
    fn set_rkfd_vm_handle(vm: &Self::Vm, handle: usize);
    /// `release_vm`: rkfd's reference comes back.
    fn release_vm(vm: Arc<Self::Vm>);
    /// `alloc_memory_of_gpu`: the object and its render-node mmap offset.
    fn alloc_memory(vm: ArcBorrow<'_, Self::Vm>, alloc: &MemAlloc) -> Result<(Arc<Self::Mem>, u64)>;
    /// `free_memory_of_gpu`: rkfd's reference comes back.
    fn free_memory(vm: ArcBorrow<'_, Self::Vm>, mem: Arc<Self::Mem>);
    /// `map_memory_to_gpu`: `mem` may come from any VM of any of our GPUs.
    fn map_memory(vm: ArcBorrow<'_, Self::Vm>, mem: ArcBorrow<'_, Self::Mem>) -> Result;
    /// `unmap_memory_from_gpu`.
    fn unmap_memory(vm: ArcBorrow<'_, Self::Vm>, mem: ArcBorrow<'_, Self::Mem>) -> Result;
    /// `map_gtt_to_kernel`: a kernel mapping, valid until the object is
    /// freed, and the object's size.
    fn map_gtt_to_kernel(mem: ArcBorrow<'_, Self::Mem>) -> Result<(NonNull<c_void>, u64)>;
    /// `get_dmabuf_info`: what the GEM object behind dma-buf `fd` is.
    fn get_dmabuf_info(&self, fd: i32) -> Result<DmabufInfo>;
    /// `import_dmabuf`: an object of `vm` at GPU VA `va` over the memory of
    /// the GEM object behind dma-buf `fd`.
    fn import_dmabuf(vm: ArcBorrow<'_, Self::Vm>, fd: i32, va: u64) -> Result<Imported<Self::Mem>>;
    /// `available_vram`, bytes.
    fn available_vram(&self) -> u64;
    /// `get_gpu_clock_counter`.
    fn gpu_clock_counter(&self) -> u64;
    /// `get_process_page_dir`: the VM's page table base
    /// (`amdgpu_amdkfd_gpuvm_get_process_page_dir`).
    fn process_page_dir(vm: ArcBorrow<'_, Self::Vm>) -> u64;
    /// `get_process_doorbell_index`: the doorbell BAR dword index of the
    /// VM's doorbell slice's first doorbell
    /// (`amdgpu_doorbell_index_on_bar` of the slice, doorbell 0).
    fn process_doorbell_index(vm: ArcBorrow<'_, Self::Vm>) -> u32;
    /// `get_mem_limits`.
    fn mem_limits(&self) -> MemLimits;
    /// `reserve_mem_limit`: accounts `size` bytes of the `flags` domain
    /// without an object.
    fn reserve_mem_limit(&self, size: u64, flags: u32) -> Result;
    /// `unreserve_mem_limit`: gives back what `reserve_mem_limit` took.
    fn unreserve_mem_limit(&self, size: u64, flags: u32);
    /// `mmap_doorbells`: the VM's doorbell pages into a `/dev/kfd` VMA.
    fn mmap_doorbells(vm: ArcBorrow<'_, Self::Vm>, vma: &MmapVma<'_>) -> Result;
    /// `mmap_mmio_remap`: the GPU's MMIO remap page into a `/dev/kfd` VMA.
    fn mmap_mmio_remap(&self, vma: &MmapVma<'_>) -> Result;
    /// `hqd_load`: the compute MQD `mqd` (its bytes, valid for the call)
    /// goes into HQD (`pipe`, `queue`); the engine serves it on `vm`.
    fn hqd_load(&self, vm: ArcBorrow<'_, Self::Vm>, mqd: &mut [u8], pipe: u32, queue: u32, wptr: u64) -> Result;
    /// `hqd_sdma_load`: the SDMA MQD `mqd` goes into the RLC queue it names.
    fn hqd_sdma_load(&self, vm: ArcBorrow<'_, Self::Vm>, mqd: &mut [u8], wptr: u64) -> Result;
    /// `hqd_destroy`: preempts HQD (`pipe`, `queue`), frees it and saves
    /// the queue's state in `mqd`; `ETIME` if the scheduler is hung (freed
    /// all the same).
    fn hqd_destroy(&self, mqd: &mut [u8], pipe: u32, queue: u32) -> Result;
    /// `hqd_sdma_destroy`: as `hqd_destroy` for the RLC queue `mqd` names.
    fn hqd_sdma_destroy(&self, mqd: &mut [u8]) -> Result;
    /// `hqd_is_occupied`: HQD (`pipe`, `queue`) serves the ring at `ring`.
    fn hqd_is_occupied(&self, ring: u64, pipe: u32, queue: u32) -> bool;
    /// `hqd_sdma_is_occupied`: the RLC queue `mqd` names holds a queue.
    fn hqd_sdma_is_occupied(&self, mqd: &[u8]) -> bool;
    /// `hqd_dump` of HQD (`pipe`, `queue`): its registers as
    /// `(byte offset, value)` pairs into `dump`, how many returned;
    /// `EINVAL` for a slot the GPU does not have, `ENOSPC` if `dump` is
    /// too short.
    fn hqd_dump(&self, pipe: u32, queue: u32, dump: &mut [[u32; 2]]) -> Result<usize>;
    /// `hqd_sdma_dump` of RLC queue `queue` of SDMA `engine`, as `hqd_dump`.
    fn hqd_sdma_dump(&self, engine: u32, queue: u32, dump: &mut [[u32; 2]]) -> Result<usize>;
    /// `alloc_gtt_mem`: a kernel object of `size` zeroed bytes, its GART
    /// address and its kernel address (valid until `free_gtt_mem`).
    fn alloc_gtt_mem(&self, size: u64) -> Result<(Arc<Self::Gtt>, u64, NonNull<c_void>)>;
    /// `free_gtt_mem`: rkfd's reference comes back.
    fn free_gtt_mem(&self, gtt: Arc<Self::Gtt>);
    /// `hiq_mqd_load`: the HIQ's MQD into HQD (`pipe`, `queue`), its
    /// doorbell at kernel doorbell `doorbell_off`.
    fn hiq_mqd_load(&self, mqd: &mut [u8], pipe: u32, queue: u32, doorbell_off: u32) -> Result;
    /// `ring_kernel_doorbell`.
    fn ring_kernel_doorbell(&self, doorbell_off: u32, value: u64);
    /// `mes_add_hw_queue`.
    fn mes_add_hw_queue(&self, input: &MesAddQueueInput) -> Result;
    /// `mes_remove_hw_queue`.
    fn mes_remove_hw_queue(&self, input: &MesRemoveQueueInput) -> Result;
    /// `mes_suspend_all`.
    fn mes_suspend_all(&self) -> Result;
    /// `mes_resume_all`.
    fn mes_resume_all(&self) -> Result;
    /// `hws_hang`.
    fn hws_hang(&self) -> Result;
    /// `gpu_reset`.
    fn gpu_reset(&self) -> Result;
    /// `svm_alloc_vram`: fills `frames` with free VRAM page indices.
    fn svm_alloc_vram(&self, frames: &mut [u64]) -> Result;
    /// `svm_alloc_vram_block`: `1 << order` aligned pages; the first.
    fn svm_alloc_vram_block(&self, order: u32) -> Result<u64>;
    /// `svm_free_vram`: never sleeps.
    fn svm_free_vram(&self, frames: &[u64]);
    /// `svm_copy`: the copy engine, frame by frame; a missing source page
    /// of a copy to VRAM clears the frame.
    fn svm_copy(&self, frames: &[u64], pages: &CopyPages<'_>, to_vram: bool) -> Result;
    /// `svm_map`.
    fn svm_map(vm: ArcBorrow<'_, Self::Vm>, va: u64, ptes: &[u64]) -> Result;
    /// `svm_unmap`.
    fn svm_unmap(vm: ArcBorrow<'_, Self::Vm>, va: u64, npages: u64);
}

/// A GPU registered with rkfd; removed (`kgd2kfd_device_exit`) on drop.
///
/// # Invariants
///
/// `kfd` was returned by `kgd2kfd_probe` for a `T` (with `T`'s table) that
/// outlives this value, and `info` is what it was probed with.
pub(crate) struct KfdDevice {
    /// rkfd's device.
    kfd: NonNull<kgd::kfd_dev>,
    /// The properties rkfd was given; kept for as long as rkfd has the device.
    _info: KBox<GpuInfo>,
}

// SAFETY: rkfd's device handle may be used from any thread.
unsafe impl Send for KfdDevice {}
// SAFETY: `&KfdDevice` allows nothing.
unsafe impl Sync for KfdDevice {}

impl KfdDevice {
    /// Probes and initialises `kgd` in rkfd (`kgd2kfd_probe` +
    /// `kgd2kfd_device_init`) with the properties `info`.
    ///
    /// # Safety
    ///
    /// `kgd` does not move and is not dropped or changed until the returned
    /// value is dropped: rkfd calls back with its address until then.
    pub(crate) unsafe fn register<T: Kfd2Kgd>(kgd: &T, module: &'static ThisModule, info: GpuInfo) -> Result<Self> {
        let info = KBox::new(info, GFP_KERNEL)?;
        // SAFETY: `Kfd2KgdTable::<T>::CALLS` (a `static`, constant
        // promotion) and `info` outlive the device (kept in `Self`); the
        // `kgd` pointer stays valid as the caller promises, and the table's
        // trampolines expect a `T` behind it; `module` is this module, which
        // rkfd pins while processes use the GPU.
        let kfd = unsafe {
            kgd::kgd2kfd_probe(
                core::ptr::from_ref(kgd).cast_mut().cast(),
                module.as_ptr().cast(),
                &Kfd2KgdTable::<T>::CALLS,
                &*info,
            )
        };
        let kfd = NonNull::new(kfd).ok_or(ENODEV)?;
        // INVARIANT: Probed above.  From here on `drop` calls
        // `kgd2kfd_device_exit`, which upstream also calls after a failed
        // `kgd2kfd_device_init` (`amdgpu_amdkfd_device_fini_sw`).
        let dev = KfdDevice { kfd, _info: info };
        // SAFETY: `kfd` is live by the type invariant.
        to_result(unsafe { kgd::kgd2kfd_device_init(dev.kfd.as_ptr()) })?;
        Ok(dev)
    }

    /// The handle the engines raise interrupts and retry faults with.
    pub(crate) fn irq(&self) -> KfdIrq {
        KfdIrq { kfd: self.kfd }
    }
}

impl Drop for KfdDevice {
    fn drop(&mut self) {
        // No DRM file is open (they pin the module), so no retry fault is
        // in flight.
        // SAFETY: By the type invariant `kfd` is live; this is its last use.
        // After it returns rkfd makes no further call with the `kgd`.
        unsafe { kgd::kgd2kfd_device_exit(self.kfd.as_ptr()) };
    }
}

/// rkfd's `kgd2kfd_interrupt`, `kgd2kfd_svm_fault` and
/// `kgd2kfd_smi_event_throttle` for one device.
///
/// # Invariants
///
/// `kfd` is the device of a [`KfdDevice`]; its holders stop using it
/// before the device is removed (the engines are shut down and throttling
/// reports stopped before `KfdDevice` drops, see `gpu::Gpu`; retry faults
/// need a VM rkfd holds, and rkfd releases every VM before the device
/// goes).
#[derive(Copy, Clone)]
pub(crate) struct KfdIrq {
    /// rkfd's device.
    kfd: NonNull<kgd::kfd_dev>,
}

/// What `import_dmabuf` made.
pub(crate) struct Imported<M> {
    /// The new object.
    pub(crate) mem: Arc<M>,
    /// Bytes.
    pub(crate) size: u64,
    /// `KFD_IOC_ALLOC_MEM_FLAGS_*`.
    pub(crate) flags: u32,
    /// Its render-node mmap offset.
    pub(crate) mmap_offset: u64,
}

/// What `get_dmabuf_info` reports about a GEM object.
pub(crate) struct DmabufInfo {
    /// rkfd's device of the GPU the object belongs to.
    pub(crate) owner: KfdIrq,
    /// Bytes.
    pub(crate) size: u64,
    /// `KFD_IOC_ALLOC_MEM_FLAGS_VRAM` or `_GTT`, `| _PUBLIC`.
    pub(crate) flags: u32,
}

// SAFETY: `kgd2kfd_interrupt`, `kgd2kfd_svm_fault` and
// `kgd2kfd_smi_event_throttle` may be called from any non-atomic context.
unsafe impl Send for KfdIrq {}
// SAFETY: As above.
unsafe impl Sync for KfdIrq {}

impl KfdIrq {
    /// Passes an interrupt-handler ring entry (its dwords in CPU order) to
    /// rkfd (never with a lock of ours held).
    pub(crate) fn interrupt(&self, entry: &[u32; kgd::KGD_IH_RING_ENTRY_DWORDS as usize]) {
        // The ring is little-endian.
        let mut bytes = [0u8; 4 * kgd::KGD_IH_RING_ENTRY_DWORDS as usize];
        for (b, d) in bytes.chunks_exact_mut(4).zip(entry) {
            b.copy_from_slice(&d.to_le_bytes());
        }
        // SAFETY: By the type invariant the device is registered; `bytes`
        // holds one ring entry and is valid for reads during the call.
        unsafe { kgd::kgd2kfd_interrupt(self.kfd.as_ptr(), bytes.as_ptr().cast()) };
    }

    /// Raises a retry fault for a GPU access at `addr` in the VM rkfd knows
    /// as `vm` (its handle, [`Kfd2Kgd::set_rkfd_vm_handle`]) with `pasid`
    /// (`kgd2kfd_svm_fault`): `Ok` once rkfd mapped the page (retry the
    /// access), `EAGAIN` to retry later, `EFAULT` (or `ENOMEM`) for a fatal
    /// fault.  Must be called with no lock of this driver held.
    pub(crate) fn svm_fault(&self, vm: usize, pasid: u32, addr: u64, write: bool) -> Result {
        let flags = if write { kgd::KGD_VM_FAULT_WRITE } else { 0 };
        // SAFETY: By the type invariant the device is registered.  rkfd
        // only compares `vm` with the VM handles it holds (the interface
        // contract), so any value is sound.
        let ret = unsafe { kgd::kgd2kfd_svm_fault(self.kfd.as_ptr(), pasid, vm as *mut c_void, addr, flags) };
        to_result(ret)
    }

    /// Whether a fatal VM fault of `pasid` is dropped before it is raised:
    /// only while debugfs `amdgpu_vgpu/vmfault_fast_path` is set, rkfd's
    /// `kgd2kfd_vmfault_fast_path` (what amdgpu's gmc v9 handler asks for
    /// a fault of its soft ring: a process's first is delivered, later
    /// ones dropped).  Any context.
    pub(crate) fn vmfault_dropped(&self, pasid: u32) -> bool {
        // SAFETY: Reads a debugfs-backed flag; no precondition.
        if !unsafe { super::shim_ffi::vgpu_shim_vmfault_fast_path_on() } {
            return false;
        }
        // SAFETY: By the type invariant the device is registered.
        unsafe { kgd::kgd2kfd_vmfault_fast_path(self.kfd.as_ptr(), pasid) != 0 }
    }

    /// rkfd's `kgd2kfd_smi_event_throttle`: the GPU throttles for the
    /// reasons in `bitmask`; `counter` throttling interrupts so far.
    /// Process context, with no lock held that a kfd2kgd callback takes.
    pub(crate) fn throttle(&self, bitmask: u64, counter: u64) {
        // SAFETY: By the type invariant the device is registered.
        unsafe { kgd::kgd2kfd_smi_event_throttle(self.kfd.as_ptr(), bitmask, counter) };
    }

    /// rkfd's power-management and reset entry points (`kgd2kfd_suspend`
    /// & co., as amdgpu calls them through `amdgpu_amdkfd.c`).  Process
    /// context, with no lock of ours held: rkfd preempts the queues
    /// through kfd2kgd calls.
    pub(crate) fn power(&self, op: PowerOp) -> Result {
        let kfd = self.kfd.as_ptr();
        // SAFETY: By the type invariant the device is registered; the
        // cause is a NUL-terminated string valid for the call.
        unsafe {
            match op {
                PowerOp::Suspend => kgd::kgd2kfd_suspend(kfd, 1),
                PowerOp::Resume => return to_result(kgd::kgd2kfd_resume(kfd, 1)),
                PowerOp::SuspendProcess => kgd::kgd2kfd_suspend_process(kfd),
                PowerOp::ResumeProcess => return to_result(kgd::kgd2kfd_resume_process(kfd)),
                PowerOp::PreReset => return to_result(kgd::kgd2kfd_pre_reset(kfd, c"virtual GPU reset".as_ptr().cast())),
                PowerOp::PostReset => return to_result(kgd::kgd2kfd_post_reset(kfd)),
                PowerOp::StopSched => return to_result(kgd::kgd2kfd_stop_sched(kfd, 0)),
                PowerOp::StartSched => return to_result(kgd::kgd2kfd_start_sched(kfd, 0)),
                PowerOp::Lock => return to_result(kgd::kgd2kfd_check_and_lock_kfd(kfd)),
                PowerOp::Unlock => kgd::kgd2kfd_unlock_kfd(kfd),
                PowerOp::Teardown => kgd::kgd2kfd_teardown_processes(kfd),
                PowerOp::SramEcc => kgd::kgd2kfd_set_sram_ecc_flag(kfd),
                PowerOp::ClearMappings => kgd::kgd2kfd_clear_mappings(kfd),
                PowerOp::EvictVram => return to_result(kgd::kgd2kfd_svm_evict_vram(kfd)),
            }
        }
        Ok(())
    }

    /// rkfd's `kgd2kfd_compute_active` of the device (node 0).
    pub(crate) fn compute_active(&self) -> bool {
        // SAFETY: By the type invariant the device is registered.
        unsafe { kgd::kgd2kfd_compute_active(self.kfd.as_ptr(), 0) != 0 }
    }
}

/// One of rkfd's power-management and reset entry points
/// ([`KfdIrq::power`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum PowerOp {
    /// `kgd2kfd_suspend(kfd, true)`.
    Suspend,
    /// `kgd2kfd_resume(kfd, true)`.
    Resume,
    /// `kgd2kfd_suspend_process`.
    SuspendProcess,
    /// `kgd2kfd_resume_process`.
    ResumeProcess,
    /// `kgd2kfd_pre_reset`.
    PreReset,
    /// `kgd2kfd_post_reset`.
    PostReset,
    /// `kgd2kfd_stop_sched(kfd, 0)`.
    StopSched,
    /// `kgd2kfd_start_sched(kfd, 0)`.
    StartSched,
    /// `kgd2kfd_check_and_lock_kfd`.
    Lock,
    /// `kgd2kfd_unlock_kfd`.
    Unlock,
    /// `kgd2kfd_teardown_processes`.
    Teardown,
    /// `kgd2kfd_set_sram_ecc_flag` (amdgpu's RAS code, before the reset it
    /// asks for).
    SramEcc,
    /// `kgd2kfd_clear_mappings` (`amdgpu_amdkfd_clear_kfd_mapping`, at the
    /// start of a GPU recovery).
    ClearMappings,
    /// `kgd2kfd_svm_evict_vram` (what TTM's eviction of the KFD's SVM BOs
    /// does before a suspend: `amdgpu_device_evict_resources`).
    EvictVram,
}

/// Borrows the frame and page arrays of an SVM call.
///
/// # Safety
///
/// `ptr` is valid for reads of `n` elements (the interface contract).
unsafe fn svm_slice<'a, T>(ptr: *const T, n: u64) -> Result<&'a [T]> {
    let n = usize::try_from(n).map_err(|_| EINVAL)?;
    if n == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: The caller's contract.
    Ok(unsafe { core::slice::from_raw_parts(ptr, n) })
}

/// Converts a [`Result`] into a C `0 / -errno`.
fn errno(r: Result) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The `kfd2kgd_calls` trampolines of `T`.  Each is called only by rkfd
/// through `CALLS`, as `kgd_kfd_interface.h` allows: with the `kgd` of a
/// device registered with this table (a `T`, [`KfdDevice::register`]), VM,
/// memory and queue handles this driver gave out and has not had back, and
/// valid pointers; that is each one's `# Safety`.
struct Kfd2KgdTable<T>(PhantomData<T>);

impl<T: Kfd2Kgd> Kfd2KgdTable<T> {
    /// What rkfd calls.
    const CALLS: kgd::kfd2kgd_calls = kgd::kfd2kgd_calls {
        acquire_vm: Some(Self::acquire_vm),
        restore_process_bos: Some(Self::restore_process_bos),
        release_vm: Some(Self::release_vm),
        alloc_memory_of_gpu: Some(Self::alloc_memory_of_gpu),
        free_memory_of_gpu: Some(Self::free_memory_of_gpu),
        map_memory_to_gpu: Some(Self::map_memory_to_gpu),
        unmap_memory_from_gpu: Some(Self::unmap_memory_from_gpu),
        map_gtt_to_kernel: Some(Self::map_gtt_to_kernel),
        get_dmabuf_info: Some(Self::get_dmabuf_info),
        import_dmabuf: Some(Self::import_dmabuf),
        available_vram: Some(Self::available_vram),
        get_gpu_clock_counter: Some(Self::get_gpu_clock_counter),
        get_process_page_dir: Some(Self::get_process_page_dir),
        get_process_doorbell_index: Some(Self::get_process_doorbell_index),
        get_mem_limits: Some(Self::get_mem_limits),
        reserve_mem_limit: Some(Self::reserve_mem_limit),
        unreserve_mem_limit: Some(Self::unreserve_mem_limit),
        mmap_doorbells: Some(Self::mmap_doorbells),
        mmap_mmio_remap: Some(Self::mmap_mmio_remap),
        hqd_load: Some(Self::hqd_load),
        hqd_sdma_load: Some(Self::hqd_sdma_load),
        hqd_destroy: Some(Self::hqd_destroy),
        hqd_sdma_destroy: Some(Self::hqd_sdma_destroy),
        hqd_is_occupied: Some(Self::hqd_is_occupied),
        hqd_sdma_is_occupied: Some(Self::hqd_sdma_is_occupied),
        hqd_dump: Some(Self::hqd_dump),
        hqd_sdma_dump: Some(Self::hqd_sdma_dump),
        alloc_gtt_mem: Some(Self::alloc_gtt_mem),
        free_gtt_mem: Some(Self::free_gtt_mem),
        hiq_mqd_load: Some(Self::hiq_mqd_load),
        ring_kernel_doorbell: Some(Self::ring_kernel_doorbell),
        mes_add_hw_queue: Some(Self::mes_add_hw_queue),
        mes_remove_hw_queue: Some(Self::mes_remove_hw_queue),
        mes_suspend_all: Some(Self::mes_suspend_all),
        mes_resume_all: Some(Self::mes_resume_all),
        hws_hang: Some(Self::hws_hang),
        gpu_reset: Some(Self::gpu_reset),
        svm_alloc_vram: Some(Self::svm_alloc_vram),
        svm_alloc_vram_block: Some(Self::svm_alloc_vram_block),
        svm_free_vram: Some(Self::svm_free_vram),
        svm_copy: Some(Self::svm_copy),
        svm_map: Some(Self::svm_map),
        svm_unmap: Some(Self::svm_unmap),
    };

    /// Borrows the `T` behind rkfd's handle.
    ///
    /// # Safety
    ///
    /// `kgd` is the handle of a [`KfdDevice`] registered with this table
    /// (rkfd only calls between probe and device exit).
    unsafe fn kgd<'a>(kgd: *mut kgd::kgd_dev) -> &'a T {
        // SAFETY: `register` passed the address of a `T` that is neither
        // moved nor dropped while the device is registered.
        unsafe { &*kgd.cast::<T>().cast_const() }
    }

    /// Borrows a VM handle.
    ///
    /// # Safety
    ///
    /// `vm` came from `acquire_vm` and was not released yet.
    unsafe fn vm<'a>(vm: *mut c_void) -> ArcBorrow<'a, T::Vm> {
        // SAFETY: The handle owns a reference until `release_vm`.
        unsafe { <Arc<T::Vm> as ForeignOwnable>::borrow(vm) }
    }

    /// Borrows a memory handle.
    ///
    /// # Safety
    ///
    /// `mem` came from `alloc_memory_of_gpu` and was not freed yet.
    unsafe fn mem<'a>(mem: *mut c_void) -> ArcBorrow<'a, T::Mem> {
        // SAFETY: The handle owns a reference until `free_memory_of_gpu`.
        unsafe { <Arc<T::Mem> as ForeignOwnable>::borrow(mem) }
    }

    /// The bytes of an MQD rkfd passes (`EINVAL` for a null pointer).
    ///
    /// # Safety
    ///
    /// A non-null `mqd` is valid for reads and writes of `size` bytes for
    /// `'a` (the call), and nothing else accesses it meanwhile (the
    /// interface's contract: rkfd does not touch an MQD while it is in a
    /// call).
    unsafe fn mqd<'a>(mqd: *mut c_void, size: u32) -> Result<&'a mut [u8]> {
        if mqd.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: The caller's contract; `u8` has no alignment requirement
        // and every bit pattern is valid.
        Ok(unsafe { core::slice::from_raw_parts_mut(mqd.cast::<u8>(), size as usize) })
    }

    /// `acquire_vm`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `drm_file` is a `struct file *` rkfd holds a
    /// reference on (it got it with `fget`).
    unsafe extern "C" fn acquire_vm(
        kgd: *mut kgd::kgd_dev,
        drm_file: *mut c_void,
        context_id: u16,
        vm: *mut *mut c_void,
        pasid: *mut u32,
        ef: *mut *mut kgd::dma_fence,
    ) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        let Some(file) = NonNull::new(drm_file.cast::<bindings::file>()) else {
            return EINVAL.to_errno();
        };
        // SAFETY: rkfd holds a reference on the file for the call.
        let file = unsafe { DrmFileRef::from_raw(file) };
        match kgd.acquire_vm(&file, context_id) {
            Ok((found, fence)) => {
                let handle = found.clone().into_foreign();
                T::set_rkfd_vm_handle(&found, handle as usize);
                // SAFETY: `vm`, `pasid` and `ef` are valid for writes (the
                // contract).
                unsafe {
                    *vm = handle;
                    *pasid = T::vm_pasid(&found);
                    *ef = fence.map_or(core::ptr::null_mut(), FenceRef::into_raw);
                }
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// `restore_process_bos`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn restore_process_bos(
        _kgd: *mut kgd::kgd_dev,
        vm: *mut c_void,
        ef: *mut *mut kgd::dma_fence,
    ) -> c_int {
        // SAFETY: rkfd passes a VM it acquired.
        let vm = unsafe { Self::vm(vm) };
        match T::restore_process_bos(vm) {
            Ok(fence) => {
                if let Some(f) = fence {
                    // SAFETY: `ef` is valid for writes (the contract).
                    unsafe { *ef = f.into_raw() };
                }
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// `release_vm`: takes rkfd's reference back.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; rkfd releases each VM once.
    unsafe extern "C" fn release_vm(_kgd: *mut kgd::kgd_dev, vm: *mut c_void) {
        // SAFETY: `vm` came from `acquire_vm`; rkfd releases it once.
        let vm = unsafe { <Arc<T::Vm> as ForeignOwnable>::from_foreign(vm) };
        T::set_rkfd_vm_handle(&vm, 0);
        T::release_vm(vm);
    }

    /// `alloc_memory_of_gpu`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn alloc_memory_of_gpu(
        _kgd: *mut kgd::kgd_dev,
        vm: *mut c_void,
        alloc: *const MemAlloc,
        mem: *mut *mut c_void,
        mmap_offset: *mut u64,
    ) -> c_int {
        // SAFETY: rkfd passes a VM it acquired.
        let vm = unsafe { Self::vm(vm) };
        // SAFETY: `alloc` is valid for reads (the contract).
        let alloc = unsafe { &*alloc };
        match T::alloc_memory(vm, alloc) {
            Ok((m, offset)) => {
                // SAFETY: `mmap_offset` and `mem` are valid for writes (the contract).
                unsafe {
                    *mmap_offset = offset;
                    *mem = m.into_foreign();
                }
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// `free_memory_of_gpu`: takes rkfd's reference back.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; rkfd frees each object once.
    unsafe extern "C" fn free_memory_of_gpu(_kgd: *mut kgd::kgd_dev, vm: *mut c_void, mem: *mut c_void) {
        // SAFETY: rkfd passes a VM it acquired.
        let vm = unsafe { Self::vm(vm) };
        // SAFETY: `mem` came from `alloc_memory_of_gpu`; rkfd frees it once.
        let mem = unsafe { <Arc<T::Mem> as ForeignOwnable>::from_foreign(mem) };
        T::free_memory(vm, mem);
    }

    /// `map_memory_to_gpu`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn map_memory_to_gpu(_kgd: *mut kgd::kgd_dev, vm: *mut c_void, mem: *mut c_void) -> c_int {
        // SAFETY: Live handles from rkfd.
        let (vm, mem) = unsafe { (Self::vm(vm), Self::mem(mem)) };
        errno(T::map_memory(vm, mem))
    }

    /// `unmap_memory_from_gpu`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn unmap_memory_from_gpu(_kgd: *mut kgd::kgd_dev, vm: *mut c_void, mem: *mut c_void) -> c_int {
        // SAFETY: Live handles from rkfd.
        let (vm, mem) = unsafe { (Self::vm(vm), Self::mem(mem)) };
        errno(T::unmap_memory(vm, mem))
    }

    /// `map_gtt_to_kernel`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `size` is null or valid for a write.
    unsafe extern "C" fn map_gtt_to_kernel(_kgd: *mut kgd::kgd_dev, mem: *mut c_void, size: *mut u64) -> *mut c_void {
        // SAFETY: A live handle from rkfd.
        let mem = unsafe { Self::mem(mem) };
        match T::map_gtt_to_kernel(mem) {
            Ok((addr, bytes)) => {
                if !size.is_null() {
                    // SAFETY: `size` is valid for writes when not null (the contract).
                    unsafe { *size = bytes };
                }
                addr.as_ptr()
            }
            Err(_) => core::ptr::null_mut(),
        }
    }

    /// `get_dmabuf_info`.  This driver keeps no metadata with its GEM
    /// objects (no `GEM_METADATA` ioctl): its size is 0, so it always fits
    /// and nothing is copied.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]: the out pointers are valid for writes.
    #[expect(clippy::too_many_arguments, reason = "the C signature")]
    unsafe extern "C" fn get_dmabuf_info(
        kgd: *mut kgd::kgd_dev,
        fd: c_int,
        owner: *mut *mut kgd::kfd_dev,
        size: *mut u64,
        flags: *mut u32,
        _metadata: *mut c_void,
        _buffer_size: u32,
        metadata_size: *mut u32,
    ) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        match unsafe { Self::kgd(kgd) }.get_dmabuf_info(fd) {
            Ok(info) => {
                // SAFETY: Valid for writes (the contract).
                unsafe {
                    *owner = info.owner.kfd.as_ptr();
                    *size = info.size;
                    *flags = info.flags;
                    *metadata_size = 0;
                }
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// `import_dmabuf`: the new object with rkfd's reference in `*mem`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]: the out pointers are valid for writes.
    #[expect(clippy::too_many_arguments, reason = "the C signature")]
    unsafe extern "C" fn import_dmabuf(
        _kgd: *mut kgd::kgd_dev,
        vm: *mut c_void,
        fd: c_int,
        va: u64,
        mem: *mut *mut c_void,
        size: *mut u64,
        flags: *mut u32,
        mmap_offset: *mut u64,
    ) -> c_int {
        // SAFETY: rkfd passes a VM it acquired.
        let vm = unsafe { Self::vm(vm) };
        match T::import_dmabuf(vm, fd, va) {
            Ok(i) => {
                // SAFETY: Valid for writes (the contract).
                unsafe {
                    *size = i.size;
                    *flags = i.flags;
                    *mmap_offset = i.mmap_offset;
                    *mem = i.mem.into_foreign();
                }
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// `available_vram`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn available_vram(kgd: *mut kgd::kgd_dev) -> u64 {
        // SAFETY: rkfd calls with its registered handle.
        unsafe { Self::kgd(kgd) }.available_vram()
    }

    /// `get_gpu_clock_counter`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn get_gpu_clock_counter(kgd: *mut kgd::kgd_dev) -> u64 {
        // SAFETY: rkfd calls with its registered handle.
        unsafe { Self::kgd(kgd) }.gpu_clock_counter()
    }

    /// `get_process_page_dir`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn get_process_page_dir(_kgd: *mut kgd::kgd_dev, vm: *mut c_void) -> u64 {
        // SAFETY: rkfd passes a VM it acquired.
        T::process_page_dir(unsafe { Self::vm(vm) })
    }

    /// `get_process_doorbell_index`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn get_process_doorbell_index(_kgd: *mut kgd::kgd_dev, vm: *mut c_void) -> u32 {
        // SAFETY: rkfd passes a VM it acquired.
        T::process_doorbell_index(unsafe { Self::vm(vm) })
    }

    /// `get_mem_limits`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `out` is valid for a write.
    unsafe extern "C" fn get_mem_limits(kgd: *mut kgd::kgd_dev, out: *mut MemLimits) {
        // SAFETY: rkfd calls with its registered handle.
        let limits = unsafe { Self::kgd(kgd) }.mem_limits();
        // SAFETY: `out` is valid for writes (the contract).
        unsafe { out.write(limits) };
    }

    /// `reserve_mem_limit`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn reserve_mem_limit(kgd: *mut kgd::kgd_dev, size: u64, flags: u32) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        errno(unsafe { Self::kgd(kgd) }.reserve_mem_limit(size, flags))
    }

    /// `unreserve_mem_limit`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn unreserve_mem_limit(kgd: *mut kgd::kgd_dev, size: u64, flags: u32) {
        // SAFETY: rkfd calls with its registered handle.
        unsafe { Self::kgd(kgd) }.unreserve_mem_limit(size, flags);
    }

    /// Wraps the VMA of the `/dev/kfd` mmap in progress.
    ///
    /// # Safety
    ///
    /// `vma` is null or the VMA of the `mmap` call in progress, valid for
    /// `'a` (the contract of `mmap_doorbells`/`mmap_mmio_remap`).
    unsafe fn mmap_vma<'a>(vma: *mut c_void) -> Result<MmapVma<'a>> {
        let vma = NonNull::new(vma).ok_or(EINVAL)?;
        // INVARIANT: The caller's contract.
        Ok(MmapVma { vma, _call: PhantomData })
    }

    /// `mmap_doorbells`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `vma` is the VMA of an `mmap` in progress.
    unsafe extern "C" fn mmap_doorbells(_kgd: *mut kgd::kgd_dev, vm: *mut c_void, vma: *mut c_void) -> c_int {
        // SAFETY: rkfd passes a VM it acquired.
        let vm = unsafe { Self::vm(vm) };
        // SAFETY: The contract.
        errno(unsafe { Self::mmap_vma(vma) }.and_then(|vma| T::mmap_doorbells(vm, &vma)))
    }

    /// `mmap_mmio_remap`.
    ///
    /// # Safety
    ///
    /// As [`Self::mmap_doorbells`].
    unsafe extern "C" fn mmap_mmio_remap(kgd: *mut kgd::kgd_dev, vma: *mut c_void) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        // SAFETY: The contract.
        errno(unsafe { Self::mmap_vma(vma) }.and_then(|vma| kgd.mmap_mmio_remap(&vma)))
    }

    /// `hqd_load`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `mqd` as in [`Self::mqd`].
    unsafe extern "C" fn hqd_load(
        kgd: *mut kgd::kgd_dev,
        vm: *mut c_void,
        mqd: *mut c_void,
        mqd_size: u32,
        pipe: u32,
        queue: u32,
        wptr: u64,
    ) -> c_int {
        // SAFETY: rkfd calls with its registered handle and a VM it acquired.
        let (kgd, vm) = unsafe { (Self::kgd(kgd), Self::vm(vm)) };
        // SAFETY: The contract on `mqd`.
        errno(unsafe { Self::mqd(mqd, mqd_size) }.and_then(|m| kgd.hqd_load(vm, m, pipe, queue, wptr)))
    }

    /// `hqd_sdma_load`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `mqd` as in [`Self::mqd`].
    unsafe extern "C" fn hqd_sdma_load(
        kgd: *mut kgd::kgd_dev,
        vm: *mut c_void,
        mqd: *mut c_void,
        mqd_size: u32,
        wptr: u64,
    ) -> c_int {
        // SAFETY: rkfd calls with its registered handle and a VM it acquired.
        let (kgd, vm) = unsafe { (Self::kgd(kgd), Self::vm(vm)) };
        // SAFETY: The contract on `mqd`.
        errno(unsafe { Self::mqd(mqd, mqd_size) }.and_then(|m| kgd.hqd_sdma_load(vm, m, wptr)))
    }

    /// `hqd_destroy`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `mqd` as in [`Self::mqd`].
    unsafe extern "C" fn hqd_destroy(kgd: *mut kgd::kgd_dev, mqd: *mut c_void, mqd_size: u32, pipe: u32, queue: u32) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        // SAFETY: The contract on `mqd`.
        errno(unsafe { Self::mqd(mqd, mqd_size) }.and_then(|m| kgd.hqd_destroy(m, pipe, queue)))
    }

    /// `hqd_sdma_destroy`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `mqd` as in [`Self::mqd`].
    unsafe extern "C" fn hqd_sdma_destroy(kgd: *mut kgd::kgd_dev, mqd: *mut c_void, mqd_size: u32) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        // SAFETY: The contract on `mqd`.
        errno(unsafe { Self::mqd(mqd, mqd_size) }.and_then(|m| kgd.hqd_sdma_destroy(m)))
    }

    /// `hqd_is_occupied`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn hqd_is_occupied(kgd: *mut kgd::kgd_dev, ring: u64, pipe: u32, queue: u32) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        c_int::from(unsafe { Self::kgd(kgd) }.hqd_is_occupied(ring, pipe, queue))
    }

    /// `hqd_sdma_is_occupied`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `mqd` as in [`Self::mqd`].
    unsafe extern "C" fn hqd_sdma_is_occupied(kgd: *mut kgd::kgd_dev, mqd: *mut c_void, mqd_size: u32) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        // SAFETY: The contract on `mqd`.
        c_int::from(unsafe { Self::mqd(mqd, mqd_size) }.is_ok_and(|m| kgd.hqd_sdma_is_occupied(m)))
    }

    /// `hqd_dump`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `dump` is valid for writes of `max_regs`
    /// pairs and `n_regs` for a write.
    unsafe extern "C" fn hqd_dump(kgd: *mut kgd::kgd_dev, pipe: u32, queue: u32, dump: *mut [u32; 2], max_regs: u32, n_regs: *mut u32) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        // SAFETY: The contract on `dump` and `n_regs`.
        unsafe { Self::dump_into(dump, max_regs, n_regs, |d| kgd.hqd_dump(pipe, queue, d)) }
    }

    /// `hqd_sdma_dump`.
    ///
    /// # Safety
    ///
    /// As [`Self::hqd_dump`].
    unsafe extern "C" fn hqd_sdma_dump(kgd: *mut kgd::kgd_dev, engine: u32, queue: u32, dump: *mut [u32; 2], max_regs: u32, n_regs: *mut u32) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        // SAFETY: The contract on `dump` and `n_regs`.
        unsafe { Self::dump_into(dump, max_regs, n_regs, |d| kgd.hqd_sdma_dump(engine, queue, d)) }
    }

    /// Runs a register dump into rkfd's array.
    ///
    /// # Safety
    ///
    /// `dump` is valid for writes of `max_regs` pairs (or null), `n_regs`
    /// for a write (or null).
    unsafe fn dump_into(dump: *mut [u32; 2], max_regs: u32, n_regs: *mut u32, f: impl FnOnce(&mut [[u32; 2]]) -> Result<usize>) -> c_int {
        if dump.is_null() || n_regs.is_null() {
            return EINVAL.to_errno();
        }
        let Ok(max) = usize::try_from(max_regs) else { return EINVAL.to_errno() };
        // SAFETY: `dump` is valid for `max_regs` pairs (the contract), and
        // rkfd does not touch them during the call.
        let out = unsafe { core::slice::from_raw_parts_mut(dump, max) };
        match f(out) {
            Ok(n) => {
                // SAFETY: `n_regs` is valid for a write (the contract); `n`
                // is at most `max_regs`, a u32.
                unsafe { n_regs.write(n as u32) };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// `alloc_gtt_mem`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; the out pointers are valid for writes.
    unsafe extern "C" fn alloc_gtt_mem(
        kgd: *mut kgd::kgd_dev,
        size: u64,
        mem_obj: *mut *mut c_void,
        gpu_addr: *mut u64,
        cpu_ptr: *mut *mut c_void,
    ) -> c_int {
        if mem_obj.is_null() || gpu_addr.is_null() || cpu_ptr.is_null() {
            return EINVAL.to_errno();
        }
        // SAFETY: rkfd calls with its registered handle.
        match unsafe { Self::kgd(kgd) }.alloc_gtt_mem(size) {
            Ok((obj, addr, cpu)) => {
                // SAFETY: The out pointers are valid for writes (checked
                // non-null; the contract).
                unsafe {
                    *mem_obj = obj.into_foreign();
                    *gpu_addr = addr;
                    *cpu_ptr = cpu.as_ptr();
                }
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// `free_gtt_mem`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]: `mem_obj` came from `alloc_gtt_mem` and is
    /// freed once.
    unsafe extern "C" fn free_gtt_mem(kgd: *mut kgd::kgd_dev, mem_obj: *mut c_void) {
        if mem_obj.is_null() {
            return;
        }
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        // SAFETY: From `alloc_gtt_mem`'s `into_foreign`, given back once.
        let obj = unsafe { <Arc<T::Gtt> as ForeignOwnable>::from_foreign(mem_obj) };
        kgd.free_gtt_mem(obj);
    }

    /// `hiq_mqd_load`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `mqd` as in [`Self::mqd`].
    unsafe extern "C" fn hiq_mqd_load(
        kgd: *mut kgd::kgd_dev,
        mqd: *mut c_void,
        mqd_size: u32,
        pipe: u32,
        queue: u32,
        doorbell_off: u32,
    ) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        // SAFETY: The contract on `mqd`.
        errno(unsafe { Self::mqd(mqd, mqd_size) }.and_then(|m| kgd.hiq_mqd_load(m, pipe, queue, doorbell_off)))
    }

    /// `ring_kernel_doorbell`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn ring_kernel_doorbell(kgd: *mut kgd::kgd_dev, doorbell_off: u32, value: u64) {
        // SAFETY: rkfd calls with its registered handle.
        unsafe { Self::kgd(kgd) }.ring_kernel_doorbell(doorbell_off, value);
    }

    /// `mes_add_hw_queue`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `input` is null or valid for reads during the
    /// call (the interface's contract).
    unsafe extern "C" fn mes_add_hw_queue(kgd: *mut kgd::kgd_dev, input: *const MesAddQueueInput) -> c_int {
        // SAFETY: As the function's contract says.
        let Some(input) = (unsafe { input.as_ref() }) else { return EINVAL.to_errno() };
        // SAFETY: rkfd calls with its registered handle.
        errno(unsafe { Self::kgd(kgd) }.mes_add_hw_queue(input))
    }

    /// `mes_remove_hw_queue`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `input` is null or valid for reads during the
    /// call (the interface's contract).
    unsafe extern "C" fn mes_remove_hw_queue(kgd: *mut kgd::kgd_dev, input: *const MesRemoveQueueInput) -> c_int {
        // SAFETY: As the function's contract says.
        let Some(input) = (unsafe { input.as_ref() }) else { return EINVAL.to_errno() };
        // SAFETY: rkfd calls with its registered handle.
        errno(unsafe { Self::kgd(kgd) }.mes_remove_hw_queue(input))
    }

    /// `mes_suspend_all`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn mes_suspend_all(kgd: *mut kgd::kgd_dev) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        errno(unsafe { Self::kgd(kgd) }.mes_suspend_all())
    }

    /// `mes_resume_all`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn mes_resume_all(kgd: *mut kgd::kgd_dev) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        errno(unsafe { Self::kgd(kgd) }.mes_resume_all())
    }

    /// `hws_hang`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn hws_hang(kgd: *mut kgd::kgd_dev) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        errno(unsafe { Self::kgd(kgd) }.hws_hang())
    }

    /// `gpu_reset`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn gpu_reset(kgd: *mut kgd::kgd_dev) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        errno(unsafe { Self::kgd(kgd) }.gpu_reset())
    }

    /// `svm_alloc_vram`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `frames` is valid for `npages` writes.
    unsafe extern "C" fn svm_alloc_vram(kgd: *mut kgd::kgd_dev, npages: u64, frames: *mut u64) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        let Ok(n) = usize::try_from(npages) else {
            return ENOMEM.to_errno();
        };
        if n != 0 && frames.is_null() {
            return EINVAL.to_errno();
        }
        let out = if n == 0 {
            &mut []
        } else {
            // SAFETY: `frames` is valid for `npages` writes (the contract).
            unsafe { core::slice::from_raw_parts_mut(frames, n) }
        };
        errno(kgd.svm_alloc_vram(out))
    }

    /// `svm_alloc_vram_block`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `first` is valid for a write.
    unsafe extern "C" fn svm_alloc_vram_block(kgd: *mut kgd::kgd_dev, order: u32, first: *mut u64) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        if first.is_null() {
            return EINVAL.to_errno();
        }
        match kgd.svm_alloc_vram_block(order) {
            Ok(f) => {
                // SAFETY: `first` is valid for a write (the contract).
                unsafe { first.write(f) };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// `svm_free_vram`: never sleeps.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `frames` is valid for `npages` reads.
    unsafe extern "C" fn svm_free_vram(kgd: *mut kgd::kgd_dev, frames: *const u64, npages: u64) {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        // SAFETY: The contract.
        if let Ok(frames) = unsafe { svm_slice(frames, npages) } {
            kgd.svm_free_vram(frames);
        }
    }

    /// `svm_copy`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `frames` and `pages` are valid for `npages`
    /// reads; each page is a `struct page *` (or null for a clear) that
    /// stays allocated during the call.
    unsafe extern "C" fn svm_copy(
        kgd: *mut kgd::kgd_dev,
        frames: *const u64,
        pages: *const *mut c_void,
        npages: u64,
        direction: u32,
    ) -> c_int {
        // SAFETY: rkfd calls with its registered handle.
        let kgd = unsafe { Self::kgd(kgd) };
        // SAFETY: The contract.
        let (Ok(frames), Ok(pages)) = (unsafe { svm_slice(frames, npages) }, unsafe { svm_slice(pages, npages) }) else {
            return EINVAL.to_errno();
        };
        // INVARIANT: rkfd keeps each page allocated during the call.
        let pages = CopyPages { pages };
        errno(kgd.svm_copy(frames, &pages, direction == kgd::KGD_SVM_COPY_TO_VRAM))
    }

    /// `svm_map`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`]; `ptes` is valid for `npages` reads.
    unsafe extern "C" fn svm_map(_kgd: *mut kgd::kgd_dev, vm: *mut c_void, va: u64, npages: u64, ptes: *const u64) -> c_int {
        // SAFETY: rkfd passes a VM it acquired.
        let vm = unsafe { Self::vm(vm) };
        // SAFETY: The contract.
        errno(unsafe { svm_slice(ptes, npages) }.and_then(|p| T::svm_map(vm, va, p)))
    }

    /// `svm_unmap`.
    ///
    /// # Safety
    ///
    /// See [`Kfd2KgdTable`].
    unsafe extern "C" fn svm_unmap(_kgd: *mut kgd::kgd_dev, vm: *mut c_void, va: u64, npages: u64) {
        // SAFETY: rkfd passes a VM it acquired.
        T::svm_unmap(unsafe { Self::vm(vm) }, va, npages);
    }
}
