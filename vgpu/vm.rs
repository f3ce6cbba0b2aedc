// SPDX-License-Identifier: GPL-2.0

//! GPU virtual address spaces: one per open DRM file, as amdgpu creates one
//! per file in `amdgpu_driver_open_kms`.
//!
//! rkfd binds a process to the VM of the render-node file it passes to
//! `ACQUIRE_VM`, allocates memory objects in it, maps them into the VM's
//! page table and has them CPU-mapped through that same file.
//!
//! C: `struct amdgpu_vm` (`amdgpu_vm.c`), the KFD side in
//! `amdgpu_amdkfd_gpuvm.c`.

// Lock order: see the crate root (`vgpu/amdgpu_main.rs`).
//
// SVM pages live in the same page table as memory objects; `svm_map` and
// `svm_unmap` never touch a page a memory object is mapped at.
//
// SVM: rkfd's mmu_interval_notifier callbacks call `svm_unmap`, so
// `Vm::inner` is taken inside mmu-notifier invalidation: nothing may allocate
// memory with direct reclaim while holding it (`map` and `svm_map` allocate
// page tables inside `kabi::NoReclaim`), and nothing may wait for an
// invalidation under it.  Objects leaving the VM are dropped after
// `Vm::inner` is released, because dropping one takes `vram::Pool::inner`
// and `Core::offsets`.  A later user-pointer implementation must not take
// mmap_lock under `Vm::inner` (the render node's mmap takes it under
// mmap_lock).

use core::cell::Cell;

use kernel::{
    new_mutex,
    page::Page,
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNode, //
    },
    sync::{
        atomic::{Acquire, Atomic, Full, Release},
        Arc,
        Mutex, //
    },
};

use kernel::page::PAGE_SIZE;

use crate::{
    gpu::Core,
    kabi::{self, DoorbellWatch, SharedPages},
    mem::{
        AllocRequest,
        Mem, //
    },
    pagetable::{
        self as pt,
        PageTable,
        Pte, //
    },
};

/// A GPU virtual address space.
#[pin_data]
pub(crate) struct Vm {
    /// The GPU.
    core: Arc<Core>,
    /// Whether a KFD process has acquired this VM.  As amdgpu (its
    /// `avm->process_info`), one VM serves one KFD process: a render-node
    /// file inherited by a forked child cannot be acquired by it too.
    acquired: Atomic<bool>,
    /// Its PASID, allocated with the VM (as `amdgpu_driver_open_kms` does
    /// for each open DRM file) from the driver-wide table and freed when
    /// the VM goes: what `acquire_vm` tells rkfd and the engines put in
    /// the interrupt entries they raise (dword 3 of the IH ring entry).
    pasid: kabi::Pasid,
    /// Where `doorbells` sit in the GPU's doorbell BAR while a KFD process
    /// has the VM: the BAR dword index of its first doorbell (a slice of
    /// [`Core::alloc_doorbell_slice`], taken at `acquire`, given back at
    /// `release`); 0 while not acquired (slice 0 is never a process's).
    /// The CP and the MES resolve an MQD's or request's doorbell by it.
    doorbell_index: Atomic<u32>,
    /// The process's doorbells on this GPU (`doorbell_process_size`
    /// bytes, zeroed at creation), mapped through `/dev/kfd`: one 64-bit
    /// doorbell per queue at the byte offset rkfd gives the queue
    /// (the doorbell offset of a queue's MQD).  The engines read them here.
    doorbells: Arc<SharedPages>,
    /// Traps the first user write to `doorbells` after an engine worker
    /// armed it (the worker then sleeps until the trap or its safety
    /// poll): the doorbell pages' only user mappings are made by it.
    doorbell_watch: DoorbellWatch,
    /// The handle rkfd holds on this VM (what `acquire_vm` returned), which
    /// retry faults name the VM by; 0 while not acquired.
    kfd_handle: Atomic<usize>,
    /// Its page table base as amdgpu encodes a root page directory
    /// ([`Core::alloc_page_dir`]): what `get_process_page_dir` answers and
    /// the CP finds the VM by.
    page_dir: u64,
    /// The objects and the page table.  Lock order: inside `mmap_lock`,
    /// `Hqd::state` and rkfd's SVM locks (so inside invalidation: no
    /// allocation with direct reclaim under it); `vram::Pool::inner` inside.
    #[pin]
    inner: Mutex<VmInner>,
    /// The KFD eviction fences while a KFD process has the VM (C: the
    /// eviction fence of amdgpu's `amdgpu_amdkfd_process_info`): set by
    /// `acquire_vm`, replaced fence by `restore_process_bos`, dropped by
    /// `release_vm`.  A leaf (the shim's `vgpu_evict_lock` inside).
    #[pin]
    evict: Mutex<Option<kabi::EvictFence>>,
}

/// The mutable state of a [`Vm`].
///
/// # Invariants
///
/// The page table maps the pages of the objects in `mappings`, each at its
/// own virtual address, and otherwise only SVM pages (`svm_map`).
struct VmInner {
    /// The objects allocated in this VM, by mmap page offset.
    objects: RBTree<u64, Arc<Mem>>,
    /// The objects mapped into this VM's page table, by address: objects of
    /// this VM or of another VM of any GPU of this driver (multi-GPU
    /// mappings, which rkfd makes for `MAP_MEMORY_TO_GPU` with several GPUs).
    mappings: RBTree<usize, Arc<Mem>>,
    /// The GPU page table.
    pt: PageTable,
}

/// The key of `mem` in [`VmInner::mappings`].
fn mapping_key(mem: &Mem) -> usize {
    core::ptr::from_ref(mem) as usize
}

/// The errno for a page-table error: a conflicting mapping is `EINVAL`, as
/// in `amdgpu_vm_bo_map`.
fn pt_errno(e: pt::Error) -> Error {
    match e {
        pt::Error::NoMemory => ENOMEM,
        pt::Error::Invalid | pt::Error::OutOfRange | pt::Error::Busy | pt::Error::BadFrame => {
            EINVAL
        }
    }
}

impl Vm {
    /// Marks the VM acquired by a KFD process and places its doorbell
    /// slice in the BAR; `EINVAL` if one already has it, `ENOSPC` if the
    /// BAR has no free slice.
    pub(crate) fn acquire(&self) -> Result {
        self.acquired.cmpxchg(false, true, Full).map(|_| ()).map_err(|_| EINVAL)?;
        match self.core.alloc_doorbell_slice() {
            Ok(index) => {
                self.doorbell_index.store(index, Release);
                Ok(())
            }
            Err(e) => {
                self.acquired.store(false, Release);
                Err(e)
            }
        }
    }

    /// Gives the VM back (`release_vm`), and its doorbell slice; its
    /// eviction fence is signalled and dropped.
    pub(crate) fn release(&self) {
        let evict = self.evict.lock().take();
        drop(evict);
        let index = self.doorbell_index.xchg(0, Full);
        if index != 0 {
            self.core.free_doorbell_slice(index);
        }
        self.acquired.store(false, Release);
    }

    /// The BAR dword index of the first doorbell of the VM's slice
    /// (`get_process_doorbell_index`); 0 while not acquired.
    pub(crate) fn doorbell_index(&self) -> u32 {
        self.doorbell_index.load(Acquire)
    }

    /// Byte offset in the VM's doorbell slice of the 64-bit doorbell at BAR
    /// dword index `bar_index` (an MQD's DOORBELL_OFFSET, a MAP_QUEUES' or
    /// MES request's `doorbell_offset`), as the CP routes a doorbell write
    /// to the queue: `EINVAL` for an index outside this VM's slice (another
    /// process's doorbell, a slice-relative index, the kernel doorbells),
    /// between two doorbells, or a VM without a slice.
    pub(crate) fn doorbell_byte_offset(&self, bar_index: u32) -> Result<u32> {
        let first = self.doorbell_index();
        if first == 0 {
            return Err(EINVAL);
        }
        let dwords = bar_index.checked_sub(first).ok_or(EINVAL)?;
        let bytes = dwords.checked_mul(4).ok_or(EINVAL)?;
        let slice = self.core.profile().doorbell_process_size();
        if bytes % 8 != 0 || bytes.checked_add(8).is_none_or(|end| end > slice) {
            return Err(EINVAL);
        }
        Ok(bytes)
    }

    /// `acquire_vm`'s eviction fences (upstream
    /// `amdgpu_amdkfd_gpuvm_acquire_process_vm`'s `ef`): the current
    /// process's, with rkfd's `context_id`; a reference on the first.
    pub(crate) fn init_eviction_fence(&self, context_id: u16) -> Result<kabi::FenceRef> {
        let (ev, f) = kabi::EvictFence::new(context_id)?;
        *self.evict.lock() = Some(ev);
        Ok(f)
    }

    /// `restore_process_bos` (upstream
    /// `amdgpu_amdkfd_gpuvm_restore_process_bos`): the virtual GPU's
    /// memory never moves, so only the eviction fence is renewed.
    pub(crate) fn restore_eviction_fence(&self) -> Result<Option<kabi::FenceRef>> {
        match self.evict.lock().as_ref() {
            Some(ev) => ev.restore().map(Some),
            None => Ok(None),
        }
    }

    /// The VM's PASID (upstream `vm->pasid`), never 0.
    pub(crate) fn pasid(&self) -> u32 {
        self.pasid.get()
    }

    /// An empty VM on `core`.
    pub(crate) fn new(core: Arc<Core>) -> Result<Arc<Self>> {
        let pt = PageTable::new().map_err(pt_errno)?;
        let doorbell_bytes = core.profile().doorbell_process_size() as usize;
        let doorbells = Arc::new(SharedPages::new(doorbell_bytes.div_ceil(PAGE_SIZE))?, GFP_KERNEL)?;
        let doorbell_watch = DoorbellWatch::new(&doorbells, core.bell().clone())?;
        let page_dir = core.alloc_page_dir()?;
        let pasid = kabi::Pasid::alloc()?;
        Arc::pin_init(
            try_pin_init!(Vm {
                page_dir,
                core,
                doorbells,
                doorbell_watch,
                acquired: Atomic::new(false),
                pasid,
                doorbell_index: Atomic::new(0),
                kfd_handle: Atomic::new(0),
                // INVARIANT: Nothing is mapped.
                inner <- new_mutex!(
                    VmInner { objects: RBTree::new(), mappings: RBTree::new(), pt },
                    "Vm::inner"
                ),
                evict <- new_mutex!(None, "Vm::evict"),
            }),
            GFP_KERNEL,
        )
    }

    /// The page table base (`get_process_page_dir`).
    pub(crate) fn page_dir(&self) -> u64 {
        self.page_dir
    }

    /// The GPU.
    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// The process's doorbell pages on this GPU.
    pub(crate) fn doorbell_pages(&self) -> &Arc<SharedPages> {
        &self.doorbells
    }

    /// Maps the doorbell pages into a `/dev/kfd` VMA (`mmap_doorbells`),
    /// through the watch that makes a write after idle wake the engines.
    pub(crate) fn mmap_doorbells(&self, vma: &kabi::MmapVma<'_>) -> Result {
        self.doorbell_watch.mmap(vma)
    }

    /// Which doorbell watch is this VM's ([`kabi::DoorbellTarget::rung`]).
    pub(crate) fn doorbell_watch_id(&self) -> usize {
        self.doorbell_watch.id()
    }

    /// Arms the doorbell trap ([`DoorbellWatch::arm`]): `Ok` if a user
    /// write to the doorbells now wakes the engines.
    pub(crate) fn arm_doorbells(&self, holdoff_ns: u64) -> Result {
        self.doorbell_watch.arm(holdoff_ns)
    }

    /// The 64-bit doorbell at byte `offset` of the doorbell slice (what
    /// user space last wrote there); `None` if unaligned or out of range.
    pub(crate) fn doorbell(&self, offset: usize) -> Option<u64> {
        self.doorbells.read_u64(offset)
    }

    /// Allocates a memory object in this VM (`alloc_memory_of_gpu`).
    pub(crate) fn alloc(&self, req: &AllocRequest) -> Result<Arc<Mem>> {
        let mem = Mem::new(&self.core, req, &self.doorbells)?;
        let node = RBTreeNode::new(mem.mmap_pgoff(), mem.clone(), GFP_KERNEL)?;
        // Offsets are unique on the GPU, so nothing is replaced.
        let old = self.inner.lock().objects.insert(node);
        drop(old);
        Ok(mem)
    }

    /// Makes an object of this VM at GPU VA `va` over the memory of the GEM
    /// object `target` (`import_dmabuf`, upstream `import_obj_create`); freed
    /// like any other ([`Vm::free`]).
    pub(crate) fn import(&self, target: Arc<Mem>, va: u64) -> Result<Arc<Mem>> {
        let mem = Mem::import(&self.core, target, va)?;
        let node = RBTreeNode::new(mem.mmap_pgoff(), mem.clone(), GFP_KERNEL)?;
        // Offsets are unique on the GPU, so nothing is replaced.
        let old = self.inner.lock().objects.insert(node);
        drop(old);
        Ok(mem)
    }

    /// Removes an object from this VM, and from its page table if it is
    /// mapped there (`free_memory_of_gpu`).  Its memory is released when
    /// the last reference goes: other VMs it is still mapped into, CPU
    /// mappings.  `EINVAL` if it is not an object of this VM; the caller's
    /// reference is dropped either way.
    pub(crate) fn free(&self, mem: Arc<Mem>) -> Result {
        let removed = {
            let mut guard = self.inner.lock();
            let inner = &mut *guard;
            let key = mem.mmap_pgoff();
            if !inner
                .objects
                .get(&key)
                .is_some_and(|m| Arc::ptr_eq(m, &mem))
            {
                return Err(EINVAL);
            }
            let object = inner.objects.remove(&key);
            let mapping = inner.mappings.remove(&mapping_key(&mem));
            if mapping.is_some() {
                // INVARIANT: The object's pages leave the page table with it.
                // This cannot fail: `Mem::new` checked the range.
                let _ = inner.pt.unmap(mem.va(), mem.npages());
            }
            (object, mapping)
        };
        // Dropped here, outside `inner` (see the comment at the top).
        drop(removed);
        Ok(())
    }

    /// Maps a memory object into this VM's page table
    /// (`map_memory_to_gpu`).  The object may belong to any VM of any GPU
    /// of this driver.  Mapping a mapped object again does nothing, as in
    /// amdgpu; `EINVAL` if its range overlaps another mapping.
    pub(crate) fn map(&self, mem: &Arc<Mem>) -> Result {
        let node = RBTreeNode::new(mapping_key(mem), mem.clone(), GFP_KERNEL)?;
        let local = mem.is_on(&self.core);
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        if inner.mappings.get(&mapping_key(mem)).is_some() {
            return Ok(());
        }
        {
            // Page tables are allocated under `inner`, which invalidations take.
            let _noreclaim = kabi::NoReclaim::new();
            inner
                .pt
                .map(mem.va(), mem.npages(), |i| mem.pte(i, local))
                .map_err(pt_errno)?;
        }
        // INVARIANT: Its pages were just mapped.
        inner.mappings.insert(node);
        Ok(())
    }

    /// Removes a memory object from this VM's page table
    /// (`unmap_memory_from_gpu`).  `EINVAL` if it is not mapped here.
    pub(crate) fn unmap(&self, mem: &Mem) -> Result {
        let removed = {
            let mut guard = self.inner.lock();
            let inner = &mut *guard;
            let removed = inner.mappings.remove(&mapping_key(mem)).ok_or(EINVAL)?;
            // INVARIANT: Its pages leave with it.  This cannot fail: the
            // range was mapped, so it is valid.
            let _ = inner.pt.unmap(mem.va(), mem.npages());
            removed
        };
        // The last reference may go here, outside `inner`.
        drop(removed);
        Ok(())
    }

    /// The object a CPU mapping of `npages` pages at render-node page
    /// offset `pgoff` maps.  The offset must be the start of an object of
    /// this VM, as GEM's `drm_vma_offset_exact_lookup_locked` requires.
    pub(crate) fn mmap_lookup(&self, pgoff: u64, npages: u64) -> Result<Arc<Mem>> {
        let inner = self.inner.lock();
        let mem = inner.objects.get(&pgoff).ok_or(EINVAL)?;
        mem.check_cpu_map(npages)?;
        Ok(mem.clone())
    }

    /// What the GPU would access at `va`.
    pub(crate) fn translate(&self, va: u64) -> Option<Pte> {
        self.inner.lock().pt.lookup(va)
    }

    /// The number of valid PTEs.
    pub(crate) fn mapped_pages(&self) -> u64 {
        self.inner.lock().pt.mapped_pages()
    }

    /// A view of what the GPU's engines reach through this VM.  While it
    /// exists no mapping can change (it holds `Vm::inner`), so every page
    /// it returns stays allocated: the mapped objects hold them.  For the
    /// engines (`crate::engine`), which hold it for a bounded run of
    /// accesses and never wait for anything while holding it.
    pub(crate) fn gpu_pages(&self) -> GpuPages<'_> {
        GpuPages {
            inner: self.inner.lock(),
            core: &self.core,
            tlb: Cell::new([None; TLB_ENTRIES]),
            next: Cell::new(0),
        }
    }
}

/// Translations a [`GpuPages`] remembers.
const TLB_ENTRIES: usize = 4;

/// One remembered translation: the page at GPU address `page` is the
/// kernel's direct mapping `addr`.
#[derive(Copy, Clone)]
struct TlbEntry {
    /// The GPU page address.
    page: u64,
    /// Where the kernel maps it.
    addr: kabi::Direct,
    /// The GPU may write it.
    writable: bool,
}

/// The GPU's view of a [`Vm`] while its mappings are held stable
/// ([`Vm::gpu_pages`]).
///
/// It remembers the last few translations (a TLB that lives as long as
/// the lock is held, so no mapping can change under it): an engine
/// touches the same few pages (ring, pointers, targets) packet after
/// packet.
pub(crate) struct GpuPages<'a> {
    /// The locked VM state.
    inner: kernel::sync::MutexGuard<'a, VmInner>,
    /// The VM's GPU.
    core: &'a Core,
    /// Translations of system and VRAM pages to the kernel's direct map.
    tlb: Cell<[Option<TlbEntry>; TLB_ENTRIES]>,
    /// The entry to replace next.
    next: Cell<usize>,
}

impl GpuPages<'_> {
    /// What the GPU reaches at `va`; `None`: unmapped.
    pub(crate) fn get(&self, va: u64) -> Option<GpuPage<'_>> {
        let page_va = va & !(PAGE - 1);
        let tlb = self.tlb.get();
        if let Some(e) = tlb.iter().flatten().find(|e| e.page == page_va) {
            // SAFETY: Translated by `translate` under the same hold of
            // `inner`, which keeps the page allocated while `self` is
            // borrowed (as argued there).
            return Some(unsafe { GpuPage::new(GpuTarget::Direct(e.addr), e.writable) });
        }
        let page = self.translate(va)?;
        let pfn = match *page.target() {
            GpuTarget::Pfn(pfn) => Some(pfn),
            GpuTarget::Page(p) => Some(kabi::page_pfn(p)),
            GpuTarget::User(_) | GpuTarget::Direct(_) => None,
        };
        let Some(addr) = pfn.and_then(kabi::Direct::of_pfn) else {
            return Some(page);
        };
        let mut tlb = tlb;
        let slot = self.next.get() % TLB_ENTRIES;
        tlb[slot] = Some(TlbEntry {
            page: page_va,
            addr,
            writable: page.writable(),
        });
        self.tlb.set(tlb);
        self.next.set(slot + 1);
        // SAFETY: The same page as `page`, which stays allocated for as long
        // (its own contract).
        Some(unsafe { GpuPage::new(GpuTarget::Direct(addr), page.writable()) })
    }

    /// [`GpuPages::get`] through the page table.
    fn translate(&self, va: u64) -> Option<GpuPage<'_>> {
        let pte = self.inner.pt.lookup(va)?;
        let writable = pte.writable();
        let target = match pte.aperture() {
            pt::Aperture::System => GpuTarget::Pfn(pte.frame()),
            pt::Aperture::UserVa => GpuTarget::User(pte.frame() << kernel::page::PAGE_SHIFT),
            pt::Aperture::Vram => {
                // An SVM frame (a page rkfd migrated to VRAM, mapped by
                // `svm_map`): its backing page, by frame number.  It stays
                // allocated while `self` holds `Vm::inner`: SVM frames are
                // freed only after the invalidation that unmaps them here
                // (`svm_unmap`, which takes `Vm::inner`), as for the SVM
                // system pages of `Aperture::System`.
                if let Ok(pfn) = self.core.vram().svm_with_page(pte.frame(), kabi::page_pfn) {
                    // SAFETY: The frame stays allocated while `self` is
                    // borrowed (it holds `inner`), as argued above.
                    return Some(unsafe { GpuPage::new(GpuTarget::Pfn(pfn), writable) });
                }
                // Otherwise the frame's host page: the local VRAM object
                // mapped here.
                let page = kernel::page::PAGE_SIZE as u64;
                let core = self.core;
                GpuTarget::Page(self.inner.mappings.values().find_map(|m| {
                    let off = va.checked_sub(m.va())?;
                    if off >= m.npages() * page || !m.is_on(core) {
                        return None;
                    }
                    let index = (off / page) % (m.size() / page).max(1);
                    m.page_at(m.mmap_pgoff() + index)
                })?)
            }
        };
        // SAFETY: The page stays allocated while `self` is borrowed: the
        // VM's mappings (and the objects they hold) cannot change while
        // `inner` is locked, and a VRAM page is one of those objects'.
        Some(unsafe { GpuPage::new(target, writable) })
    }
}

/// What an engine reaches through one PTE ([`GpuPages::get`]); defined in
/// `kabi`, whose local mappings ([`kabi::PageMap`]) rely on its invariant.
pub(crate) use crate::kabi::{
    GpuPage,
    GpuTarget, //
};

/// SVM: pages rkfd maps from `hmm_range_fault` results and migrated VRAM
/// (`svm_map` / `svm_unmap`), and the GPU-access test interface that walks
/// the page table and raises retry faults.
impl Vm {
    /// Records rkfd's handle on this VM (`acquire_vm`); 0 clears it.
    pub(crate) fn set_kfd_handle(&self, handle: usize) {
        self.kfd_handle.store(handle, Release);
    }

    /// rkfd's handle on this VM, if acquired.
    pub(crate) fn kfd_handle(&self) -> Option<usize> {
        match self.kfd_handle.load(kernel::sync::atomic::Acquire) {
            0 => None,
            h => Some(h),
        }
    }

    /// `svm_map`: maps page `i` at `va + i * PAGE` as `ptes[i]`
    /// (`KGD_SVM_PTE_*` encoding), replacing earlier SVM PTEs there.  Pages
    /// a memory object is mapped at are left alone: a range rkfd created for
    /// a fault may share a 2 MiB window with a memory object's VA (upstream
    /// clips such ranges with `svm_range_check_vm`).
    pub(crate) fn svm_map(&self, va: u64, ptes: &[u64]) -> Result {
        let n = ptes.len() as u64;
        if n == 0 {
            return Ok(());
        }
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        let objects = objects_in(inner, va, n);
        let _noreclaim = kabi::NoReclaim::new();
        let mut i = 0u64;
        while i < n {
            let at = va + i * PAGE;
            let object = objects && object_at(inner, at);
            let valid = !object && svm_pte_valid(ptes[i as usize]);
            // A run of pages of one kind.
            let mut j = i + 1;
            while j < n {
                let o = objects && object_at(inner, va + j * PAGE);
                if o != object || (!o && svm_pte_valid(ptes[j as usize]) != valid) {
                    break;
                }
                j += 1;
            }
            if !object {
                inner.pt.unmap(at, j - i).map_err(pt_errno)?;
                if valid {
                    let base = i as usize;
                    if let Err(e) = inner.pt.map(at, j - i, |k| svm_pte(ptes[base + k as usize])) {
                        return Err(pt_errno(e));
                    }
                }
            }
            i = j;
        }
        Ok(())
    }

    /// `svm_unmap`: removes the SVM pages of `npages` pages at `va` from the
    /// page table (memory objects' pages stay).
    pub(crate) fn svm_unmap(&self, va: u64, npages: u64) {
        if npages == 0 {
            return;
        }
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        if !objects_in(inner, va, npages) {
            let _ = inner.pt.unmap(va, npages);
            return;
        }
        for i in 0..npages {
            let at = va + i * PAGE;
            if !object_at(inner, at) {
                let _ = inner.pt.unmap(at, 1);
            }
        }
    }

    /// One GPU access of `buf.len()` bytes at `va` within one page:
    /// `Ok(false)` if the page is not mapped (or not writable for a write):
    /// a retry fault.  Copies under `inner`, so an invalidation cannot free
    /// the page under the access (the HMM rule).
    pub(crate) fn access_page(&self, va: u64, buf: &mut [u8], write: bool) -> Result<bool> {
        let inner = self.inner.lock();
        self.access_page_locked(&inner, va, buf, write)
    }

    /// [`Vm::access_page`] over the pages of `[va, va + buf.len())` in
    /// order, under one hold of `inner`: returns the bytes accessed before
    /// the first page that needs a retry fault (all of `buf` if none).
    pub(crate) fn access_run(&self, va: u64, buf: &mut [u8], write: bool) -> Result<usize> {
        let inner = self.inner.lock();
        let mut done = 0;
        while done < buf.len() {
            let at = va + done as u64;
            let len = ((PAGE - at % PAGE) as usize).min(buf.len() - done);
            if !self.access_page_locked(&inner, at, &mut buf[done..done + len], write)? {
                break;
            }
            done += len;
        }
        Ok(done)
    }

    fn access_page_locked(&self, inner: &VmInner, va: u64, buf: &mut [u8], write: bool) -> Result<bool> {
        let offset = (va % PAGE) as usize;
        if buf.is_empty() || offset + buf.len() > PAGE as usize {
            return Err(EINVAL);
        }
        let Some(pte) = inner.pt.lookup(va) else {
            return Ok(false);
        };
        if write && !pte.writable() {
            return Ok(false);
        }
        let mut rw = |page: &Page| -> Result {
            // SAFETY: `buf` is valid for `buf.len()` bytes; the range lies in
            // the page (checked above).
            unsafe {
                if write {
                    page.write_raw(buf.as_ptr(), offset, buf.len())
                } else {
                    page.read_raw(buf.as_mut_ptr(), offset, buf.len())
                }
            }
        };
        match pte.aperture() {
            pt::Aperture::Vram => {
                if let Ok(r) = self.core.vram().svm_with_page(pte.frame(), &mut rw) {
                    return r.map(|()| true);
                }
                // A memory object's VRAM: find the object mapped at `va`.
                let page_va = va - offset as u64;
                for mem in inner.mappings.values() {
                    let end = mem.va() + mem.npages() * PAGE;
                    if (mem.va()..end).contains(&page_va) {
                        let index = (page_va - mem.va()) / PAGE % (mem.size() / PAGE);
                        let page = mem.page_at(mem.mmap_pgoff() + index).ok_or(EFAULT)?;
                        return rw(page).map(|()| true);
                    }
                }
                Err(EFAULT)
            }
            pt::Aperture::System => {
                kabi::pfn_rw(pte.frame(), offset, buf, write)?;
                Ok(true)
            }
            // User pointers are resolved by the engines (not yet).
            pt::Aperture::UserVa => Err(EFAULT),
        }
    }
}

/// The most bytes one `AMDGPU_VGPU_ACCESS` call moves.
const MAX_ACCESS: u64 = 1 << 30;
/// Retry faults one page may raise before the access gives up (`EFAULT`):
/// a racing invalidation can unmap a page between the fault and the retry.
const MAX_RETRIES: u32 = 64;
/// "Retry later" answers one page may get, 1 ms apart, before the access
/// gives up (`EFAULT`).
const MAX_WAITS: u32 = 5000;

impl Vm {
    /// The GPU-access test interface: the GPU reads (or writes) `size` bytes
    /// at `va` into (from) the user buffer at `buf`, page by page; a page
    /// without a valid PTE raises a retry fault through rkfd and the access
    /// is retried, as an XNACK-enabled GPU does.  `faults` counts the retry
    /// faults.  User memory is copied outside the page-table lock (a user
    /// page fault may invalidate SVM mappings, which takes that lock), in
    /// steps of up to [`BOUNCE`] bytes; on an error, what the GPU read in
    /// the failing step is not copied out.
    pub(crate) fn gpu_access(
        &self,
        va: u64,
        size: u64,
        buf: u64,
        write: bool,
        faults: &mut u32,
    ) -> Result {
        use kernel::uaccess::UserSlice;
        if size == 0 || size > MAX_ACCESS || va.checked_add(size).is_none_or(|e| e > pt::VA_END) {
            return Err(EINVAL);
        }
        let user = UserSlice::new(kernel::uaccess::UserPtr::from_addr(buf as usize), size as usize);
        let (mut reader, mut writer) = user.reader_writer();
        // Up to BOUNCE bytes move between the user buffer and the bounce
        // buffer at a time; the GPU side goes page by page.
        let mut bounce = KVVec::from_elem(0u8, (BOUNCE.min(size + PAGE)) as usize, GFP_KERNEL)?;
        let mut at = va;
        let end = va + size;
        while at < end {
            // A chunk ends at a BOUNCE boundary of the GPU address.
            let chunk_end = ((at / BOUNCE + 1) * BOUNCE).min(end);
            let chunk = &mut bounce[..(chunk_end - at) as usize];
            if write {
                reader.read_slice(chunk)?;
            }
            let mut done = 0usize;
            while done < chunk.len() {
                // The mapped pages in one go; then the first unmapped
                // one page by page, through retry faults.
                done += self.access_run(at + done as u64, &mut chunk[done..], write)?;
                if done == chunk.len() {
                    break;
                }
                let page_va = at + done as u64;
                let len = ((PAGE - page_va % PAGE) as usize).min(chunk.len() - done);
                let part = &mut chunk[done..done + len];
                let (mut tries, mut waits) = (0, 0);
                while !self.access_page(page_va, part, write)? {
                    tries += 1;
                    if tries > MAX_RETRIES {
                        return Err(EFAULT);
                    }
                    *faults = faults.saturating_add(1);
                    match self.svm_fault(page_va, write, true) {
                        Ok(()) => {}
                        // Retry later (a racing invalidation, or rkfd
                        // quiesced the process until its restore worker
                        // remaps): wait as a stalled queue would.
                        Err(e) if e == EAGAIN && waits < MAX_WAITS => {
                            if kernel::current!().signal_pending() {
                                return Err(EINTR);
                            }
                            waits += 1;
                            tries -= 1;
                            kernel::time::delay::fsleep(kernel::time::Delta::from_millis(1));
                        }
                        Err(e) if e == EAGAIN => return Err(EFAULT),
                        Err(e) => return Err(e),
                    }
                }
                done += len;
            }
            if !write {
                writer.write_slice(chunk)?;
            }
            at = chunk_end;
        }
        Ok(())
    }
}

/// Bytes one step of the GPU-access interface moves to or from user memory.
const BOUNCE: u64 = 256 * 1024;

/// The bytes of one page.
const PAGE: u64 = kernel::page::PAGE_SIZE as u64;

/// Whether a memory object is mapped anywhere in `[va, va + n pages)`.
fn objects_in(inner: &VmInner, va: u64, n: u64) -> bool {
    let end = va + n * PAGE;
    inner.mappings.values().any(|m| m.va() < end && va < m.va() + m.npages() * PAGE)
}

/// Whether a memory object is mapped at page `va`.
fn object_at(inner: &VmInner, va: u64) -> bool {
    inner.mappings.values().any(|m| (m.va()..m.va() + m.npages() * PAGE).contains(&va))
}

/// Whether an `svm_map` entry maps its page.
fn svm_pte_valid(pte: u64) -> bool {
    pte & kabi::SVM_PTE_VALID != 0
}

/// The page-table entry for an `svm_map` entry.  SVM pages are executable
/// (upstream maps them so unless the range is `GPU_EXEC`-cleared).
fn svm_pte(pte: u64) -> core::result::Result<Pte, pt::Error> {
    let aperture = if pte & kabi::SVM_PTE_VRAM != 0 {
        pt::Aperture::Vram
    } else {
        pt::Aperture::System
    };
    Pte::new(aperture, pte & kabi::SVM_PTE_FRAME_MASK, pte & kabi::SVM_PTE_WRITE != 0, true)
}

#[kunit_tests(amdgpu_vgpu_vm)]
mod tests {
    use super::*;
    use crate::{
        kabi::{
            self,
            testing::{read_frame, write_frame, UserMap},
        },
        pagetable::Aperture,
        profile::PROFILES,
        sysmem::SystemMemory,
        uapi, //
    };
    use kernel::page::PAGE_SIZE;

    const PAGE: u64 = PAGE_SIZE as u64;
    const VRAM: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    const GTT: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT | uapi::KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
    const USERPTR: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR;

    fn req(va: u64, pages: u64, flags: u32) -> AllocRequest {
        AllocRequest {
            va,
            size: pages * PAGE,
            user_addr: if flags & USERPTR != 0 {
                0x7f00_0000_0000
            } else {
                0
            },
            flags,
        }
    }

    fn vm_with_vram(pages: u64) -> Result<Arc<Vm>> {
        Vm::new(Core::new(
            &PROFILES[0],
            9,
            pages * PAGE,
            &SystemMemory::new()?,
        )?)
    }

    #[test]
    fn alloc_checks_requests() -> Result {
        let vm = vm_with_vram(16)?;
        let einval = |r: Result<Arc<Mem>>| matches!(r, Err(e) if e == EINVAL);
        assert!(einval(vm.alloc(&req(0x10000, 0, GTT))));
        assert!(einval(vm.alloc(&AllocRequest {
            size: 100,
            ..req(0x10000, 1, GTT)
        })));
        assert!(einval(vm.alloc(&req(0x10001, 1, GTT))));
        assert!(einval(vm.alloc(&req(pt::VA_END - PAGE, 2, GTT))));
        assert!(einval(vm.alloc(&req(0x10000, 1, 0))));
        assert!(einval(vm.alloc(&req(0x10000, 1, VRAM | GTT))));
        // Doorbells: the whole slice (2 pages) only; MMIO remap: one page.
        assert!(einval(vm.alloc(&req(
            0x10000,
            1,
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
        ))));
        assert!(einval(vm.alloc(&req(
            0x10000,
            2,
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP
        ))));
        assert!(einval(vm.alloc(&AllocRequest {
            user_addr: 0,
            ..req(0x10000, 1, USERPTR)
        })));
        assert!(einval(vm.alloc(&AllocRequest {
            user_addr: 0x1001,
            ..req(0x10000, 1, USERPTR)
        })));
        assert!(matches!(vm.alloc(&req(0x10000, 17, VRAM)), Err(e) if e == ENOMEM));
        // 512 GiB of user pointer: more than the system memory limit.
        assert!(matches!(vm.alloc(&req(0x10000, 1 << 27, USERPTR)), Err(e) if e == ENOMEM));
        Ok(())
    }

    #[test]
    fn vram_is_accounted_until_the_last_reference() -> Result {
        let vm = vm_with_vram(16)?;
        let core = vm.core().clone();
        let a = vm.alloc(&req(0x10000, 10, VRAM))?;
        assert_eq!(core.vram().used(), 10 * PAGE);
        assert!(matches!(vm.alloc(&req(0x100000, 7, VRAM)), Err(e) if e == ENOMEM));
        let b = vm.alloc(&req(0x100000, 6, VRAM))?;
        assert_eq!(core.vram().available(), 0);
        // A CPU mapping keeps the object alive after it is freed.
        let cpu = vm.mmap_lookup(a.mmap_pgoff(), 10)?;
        vm.free(a)?;
        assert_eq!(core.vram().used(), 16 * PAGE);
        drop(cpu);
        assert_eq!(core.vram().used(), 6 * PAGE);
        vm.free(b)?;
        assert_eq!(core.vram().used(), 0);
        Ok(())
    }

    #[test]
    fn map_fills_the_page_table() -> Result {
        let vm = vm_with_vram(16)?;
        let v = vm.alloc(&req(0x10000, 4, VRAM))?;
        let g = vm.alloc(&req(0x20_0000 - PAGE, 2, GTT))?;
        let user = UserMap::anon(3 * PAGE_SIZE, true)?;
        let u = vm.alloc(&AllocRequest {
            user_addr: user.addr(),
            ..req(0x40_0000, 3, USERPTR)
        })?;
        for m in [&v, &g, &u] {
            vm.map(m)?;
            // Mapping twice is a no-op.
            vm.map(m)?;
        }
        assert_eq!(vm.mapped_pages(), 9);
        let p = vm.translate(0x10000 + PAGE + 5).ok_or(EINVAL)?;
        assert!(p.aperture() == Aperture::Vram && p.writable() && !p.executable());
        assert!(p.frame() < 16);
        let p = vm.translate(0x20_0000).ok_or(EINVAL)?;
        assert!(p.aperture() == Aperture::System && !p.writable() && p.executable());
        // User pointers map the pinned pages themselves.
        let p = vm.translate(0x40_0000 + 2 * PAGE).ok_or(EINVAL)?;
        assert!(p.aperture() == Aperture::System);
        assert!(vm.translate(0x40_0000 + PAGE).is_some_and(|q| q.frame() != p.frame()));
        assert!(vm.translate(0x40_0000 + 3 * PAGE).is_none());
        // A second object over a mapped range cannot be mapped.
        let clash = vm.alloc(&req(0x10000 + 3 * PAGE, 2, GTT))?;
        assert!(matches!(vm.map(&clash), Err(e) if e == EINVAL));
        vm.unmap(&v)?;
        assert!(matches!(vm.unmap(&v), Err(e) if e == EINVAL));
        assert!(vm.translate(0x10000).is_none());
        vm.map(&clash)?;
        // Freeing a mapped object unmaps it.
        vm.free(clash)?;
        vm.free(g)?;
        assert_eq!(vm.mapped_pages(), 3);
        vm.free(u)?;
        assert_eq!(vm.mapped_pages(), 0);
        vm.free(v)?;
        Ok(())
    }

    #[test]
    fn objects_belong_to_their_vm() -> Result {
        let vm = vm_with_vram(16)?;
        let other = Vm::new(vm.core().clone())?;
        let m = vm.alloc(&req(0x10000, 1, GTT))?;
        assert!(matches!(other.mmap_lookup(m.mmap_pgoff(), 1), Err(e) if e == EINVAL));
        assert!(matches!(other.unmap(&m), Err(e) if e == EINVAL));
        assert!(matches!(other.free(m.clone()), Err(e) if e == EINVAL));
        // Still in its own VM.
        assert!(vm.mmap_lookup(m.mmap_pgoff(), 1).is_ok());
        assert!(matches!(vm.mmap_lookup(m.mmap_pgoff(), 2), Err(e) if e == EINVAL));
        assert!(matches!(vm.mmap_lookup(m.mmap_pgoff() + 1, 1), Err(e) if e == EINVAL));
        let user = UserMap::anon(PAGE_SIZE, true)?;
        let u = vm.alloc(&AllocRequest {
            user_addr: user.addr(),
            ..req(0x20000, 1, USERPTR)
        })?;
        assert!(matches!(vm.mmap_lookup(u.mmap_pgoff(), 1), Err(e) if e == EPERM));
        vm.free(u)?;
        vm.free(m)?;
        Ok(())
    }

    #[test]
    fn objects_map_into_other_gpus_vms() -> Result {
        let vm = vm_with_vram(16)?;
        let peer = vm_with_vram(16)?;
        let same_gpu = Vm::new(vm.core().clone())?;
        let v = vm.alloc(&req(0x10000, 2, VRAM))?;
        vm.map(&v)?;
        same_gpu.map(&v)?;
        peer.map(&v)?;
        // Local VRAM by frame, a peer's VRAM through the host page behind it.
        let local = vm.translate(0x10000).ok_or(EINVAL)?;
        assert!(local.aperture() == Aperture::Vram);
        assert!(same_gpu.translate(0x10000) == Some(local));
        let remote = peer.translate(0x10000).ok_or(EINVAL)?;
        assert!(remote.aperture() == Aperture::System && remote.writable());
        // Freed in its own VM while the peer still maps it: the VRAM stays
        // allocated until the peer unmaps it.
        let core = vm.core().clone();
        same_gpu.unmap(&v)?;
        vm.free(v.clone())?;
        let v_ref = v;
        assert_eq!(core.vram().used(), 2 * PAGE);
        peer.unmap(&v_ref)?;
        drop(v_ref);
        assert_eq!(core.vram().used(), 0);
        assert_eq!(
            peer.mapped_pages() + vm.mapped_pages() + same_gpu.mapped_pages(),
            0
        );
        Ok(())
    }

    /// `AQL_QUEUE_MEM`: libhsakmt asks for twice the queue's size; the
    /// memory is half of it, mapped twice in the GPU VA (amdgpu's AQL
    /// queue wraparound workaround) and once by the CPU.
    #[test]
    fn aql_queue_memory_is_half_mapped_twice() -> Result {
        const AQL: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM;
        let vm = vm_with_vram(16)?;
        let core = vm.core().clone();
        let q = vm.alloc(&req(0x10000, 8, VRAM | AQL))?;
        assert_eq!(core.vram().used(), 4 * PAGE);
        assert_eq!(q.size(), 4 * PAGE);
        vm.map(&q)?;
        assert_eq!(vm.mapped_pages(), 8);
        for i in 0..4 {
            let first = vm.translate(0x10000 + i * PAGE).ok_or(EINVAL)?;
            assert!(vm.translate(0x10000 + (i + 4) * PAGE) == Some(first));
        }
        let (p0, p1) = (vm.translate(0x10000), vm.translate(0x10000 + PAGE));
        assert!(p0.is_some() && p0 != p1);
        // The CPU maps the queue's pages, not its VA range.
        assert!(vm.mmap_lookup(q.mmap_pgoff(), 4).is_ok());
        assert!(matches!(vm.mmap_lookup(q.mmap_pgoff(), 5), Err(e) if e == EINVAL));
        assert!(q.page_at(q.mmap_pgoff() + 3).is_some());
        assert!(q.page_at(q.mmap_pgoff() + 4).is_none());
        // GTT queues likewise, and only their pages count against GTT.
        let g = vm.alloc(&req(0x100000, 2, GTT | AQL))?;
        assert_eq!(core.sysmem().gtt_used(), PAGE);
        vm.map(&g)?;
        assert!(vm.translate(0x100000).is_some());
        assert!(vm.translate(0x100000) == vm.translate(0x100000 + PAGE));
        vm.free(g)?;
        vm.free(q)?;
        assert_eq!((core.vram().used(), core.sysmem().gtt_used()), (0, 0));
        Ok(())
    }

    /// USERPTR pins the user's pages: all or nothing, `EFAULT` for a hole,
    /// an unmapped range or a read-only mapping, nothing left accounted.
    #[test]
    fn userptr_pins_all_or_nothing() -> Result {
        let vm = vm_with_vram(16)?;
        let sys = vm.core().sysmem().clone();
        let before = sys.used();
        let efault = |r: Result<Arc<Mem>>| matches!(r, Err(e) if e == EFAULT);
        let user = UserMap::anon(4 * PAGE_SIZE, true)?;
        let at = |addr: u64, pages: u64| AllocRequest {
            user_addr: addr,
            ..req(0x10000, pages, USERPTR | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)
        };
        // One page past the end, then a hole in the middle.
        assert!(efault(vm.alloc(&at(user.addr(), 5))));
        user.punch(2 * PAGE_SIZE, PAGE_SIZE)?;
        assert!(efault(vm.alloc(&at(user.addr(), 4))));
        assert!(efault(vm.alloc(&at(user.addr() + 2 * PAGE, 1))));
        // Nothing mapped at all (the low 64 KiB never are).
        assert!(efault(vm.alloc(&at(PAGE, 1))));
        // Read-only memory cannot be written by the GPU.
        let ro = UserMap::anon(PAGE_SIZE, false)?;
        assert!(efault(vm.alloc(&at(ro.addr(), 1))));
        assert_eq!(sys.used(), before);
        // The mapped part works, and is accounted until freed.
        let m = vm.alloc(&at(user.addr(), 2))?;
        assert_eq!(sys.used(), before + 2 * PAGE);
        vm.map(&m)?;
        // The GPU's page table reaches the very memory the CPU uses: what
        // the process writes, an engine following the PTE reads, and back.
        user.write(PAGE_SIZE + 8, b"cpu->gpu")?;
        let pte = vm.translate(0x10000 + PAGE).ok_or(EINVAL)?;
        assert!(pte.aperture() == Aperture::System && pte.writable());
        let mut buf = [0u8; 8];
        read_frame(pte.frame(), 8, &mut buf)?;
        assert!(&buf == b"cpu->gpu");
        write_frame(pte.frame(), 16, b"gpu->cpu")?;
        user.read(PAGE_SIZE + 16, &mut buf)?;
        assert!(&buf == b"gpu->cpu");
        vm.free(m)?;
        assert_eq!(sys.used(), before);
        Ok(())
    }

    /// DOORBELL and MMIO_REMAP objects map the VM's doorbell pages and the
    /// GPU's remap page into the GPU VA; nothing is accounted.
    #[test]
    fn doorbell_and_mmio_objects() -> Result {
        let vm = vm_with_vram(16)?;
        let core = vm.core().clone();
        let slice = core.profile().doorbell_process_size() as u64 / PAGE;
        assert_eq!(vm.doorbell_pages().len() as u64, slice * PAGE);
        let d = vm.alloc(&req(0x10000, slice, uapi::KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL))?;
        let r = vm.alloc(&req(0x100000, 1, uapi::KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP))?;
        assert_eq!((core.sysmem().used(), core.vram().used()), (0, 0));
        vm.map(&d)?;
        vm.map(&r)?;
        let p0 = vm.translate(0x10000).ok_or(EINVAL)?;
        let p1 = vm.translate(0x10000 + PAGE).ok_or(EINVAL)?;
        assert!(p0.aperture() == Aperture::System && p0.frame() != p1.frame());
        assert!(vm.translate(0x100000).is_some());
        // Another VM of the same GPU has its own doorbells, the same MMIO page.
        let other = Vm::new(core.clone())?;
        let d2 = other.alloc(&req(0x10000, slice, uapi::KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL))?;
        let r2 = other.alloc(&req(0x100000, 1, uapi::KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP))?;
        other.map(&d2)?;
        other.map(&r2)?;
        assert!(other.translate(0x10000).is_some_and(|p| p.frame() != p0.frame()));
        assert!(other.translate(0x100000) == vm.translate(0x100000));
        // The 64-bit doorbell accessor.
        assert_eq!(vm.doorbell(8), Some(0));
        vm.doorbell_pages().write_u64(8, 0x1234)?;
        assert_eq!(vm.doorbell(8), Some(0x1234));
        assert_eq!(other.doorbell(8), Some(0));
        assert_eq!(vm.doorbell(4), None);
        assert_eq!(vm.doorbell((slice * PAGE) as usize), None);
        assert_eq!(vm.doorbell((slice * PAGE) as usize - 8), Some(0));
        for (v, m) in [(&vm, d), (&vm, r), (&other, d2), (&other, r2)] {
            v.free(m)?;
        }
        Ok(())
    }

    /// `svm_map` / `svm_unmap` and the GPU-access walk: VRAM frames of SVM,
    /// system pages by pfn, holes and read-only pages (retry faults).
    #[test]
    fn svm_pages_map_and_read_back() -> Result {
        let vm = vm_with_vram(16)?;
        let core = vm.core().clone();
        let mut frames = [0u64; 2];
        core.vram().svm_alloc(&mut frames)?;
        // SAFETY: The whole page, ours.
        core.vram().svm_with_page(frames[1], |p| unsafe { p.fill_zero_raw(0, PAGE_SIZE) })??;
        let pattern = [0x5au8; 16];
        // SAFETY: `pattern` is valid for 16 bytes; the page is ours.
        core.vram().svm_with_page(frames[1], |p| unsafe { p.write_raw(pattern.as_ptr(), 100, 16) })??;
        let sys = Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?;
        let va = 0x20_0000u64;
        let ptes = [
            kabi::SVM_PTE_VALID | kabi::SVM_PTE_VRAM | kabi::SVM_PTE_WRITE | frames[1],
            0,
            kabi::SVM_PTE_VALID | kabi::page_pfn(&sys),
        ];
        vm.svm_map(va, &ptes)?;
        assert_eq!(vm.mapped_pages(), 2);
        let mut buf = [0u8; 16];
        assert!(vm.access_page(va + 100, &mut buf, false)?);
        assert_eq!(buf, pattern);
        // A hole and a write to a read-only page are retry faults.
        assert!(!vm.access_page(va + PAGE, &mut buf, false)?);
        assert!(!vm.access_page(2 * PAGE + va, &mut buf, true)?);
        assert!(vm.access_page(2 * PAGE + va + 8, &mut buf[..4], false)?);
        assert_eq!(&buf[..4], &[0u8; 4]);
        // A run stops at the first page that needs a fault.
        let mut run = KVVec::from_elem(0u8, 3 * PAGE_SIZE, GFP_KERNEL)?;
        assert_eq!(vm.access_run(va + 100, &mut run[..PAGE_SIZE], false)?, PAGE_SIZE - 100);
        assert_eq!(&run[..16], &pattern);
        assert_eq!(vm.access_run(va, &mut run, false)?, PAGE_SIZE);
        assert_eq!(vm.access_run(va + 2 * PAGE, &mut run[..PAGE_SIZE], false)?, PAGE_SIZE);
        assert_eq!(vm.access_run(va + 2 * PAGE, &mut run[..8], true)?, 0);
        // Writes land in the VRAM page.
        assert!(vm.access_page(va + 200, &mut [7u8; 4], true)?);
        let mut back = [0u8; 4];
        // SAFETY: `back` is valid for 4 bytes.
        core.vram().svm_with_page(frames[1], |p| unsafe { p.read_raw(back.as_mut_ptr(), 200, 4) })??;
        assert_eq!(back, [7u8; 4]);
        // Mapping again replaces; unmapping removes.
        vm.svm_map(va, &ptes[..1])?;
        assert_eq!(vm.mapped_pages(), 2);
        vm.svm_unmap(va, 3);
        assert_eq!(vm.mapped_pages(), 0);
        // A memory object's pages inside the window are left alone.
        let obj = vm.alloc(&req(va + PAGE, 1, GTT))?;
        vm.map(&obj)?;
        let before = vm.translate(va + PAGE);
        vm.svm_map(va, &ptes)?;
        assert!(vm.translate(va + PAGE) == before && before.is_some());
        assert_eq!(vm.mapped_pages(), 3);
        vm.svm_unmap(va, 3);
        assert!(vm.translate(va + PAGE) == before);
        assert_eq!(vm.mapped_pages(), 1);
        vm.free(obj)?;
        assert!(!vm.access_page(va, &mut buf, false)?);
        core.vram().svm_free(&frames);
        assert_eq!(core.vram().used(), 0);
        Ok(())
    }

    #[test]
    fn kernel_map_of_gtt_only() -> Result {
        let vm = vm_with_vram(16)?;
        let g = vm.alloc(&req(0x10000, 8, GTT))?;
        let a = g.kernel_map()?;
        assert!(!a.is_null());
        assert_eq!(g.kernel_map()?, a);
        let v = vm.alloc(&req(0x100000, 1, VRAM))?;
        assert!(matches!(v.kernel_map(), Err(e) if e == EINVAL));
        vm.free(v)?;
        vm.free(g)?;
        Ok(())
    }
}
