// SPDX-License-Identifier: GPL-2.0

//! Memory objects ("BOs") that rkfd allocates with `alloc_memory_of_gpu`.
//!
//! An object has a domain, a GPU virtual address range, pages behind it
//! (VRAM frames, system pages, or a user address range) and a render-node
//! mmap offset.  It is reference counted: the VM that owns it, rkfd's handle
//! and every CPU mapping of it each hold a reference, so its pages stay
//! valid while any of them exists, as a GEM object's do.
//!
//! C: `struct kgd_mem` (`amdgpu_amdkfd_gpuvm.c`), `struct amdgpu_bo`.

// Lock order: see the crate root (`vgpu/amdgpu_main.rs`).

use kernel::{
    new_mutex,
    page::{
        Page,
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};

use crate::{
    gpu::{
        Core,
        OffsetSlot,
        OFFSET_SLOT_SHIFT, //
    },
    kabi,
    pagetable::{
        self as pt,
        Aperture,
        Pte, //
    },
    kabi::SharedPages,
    sysmem::Reservation,
    uapi,
    vram, //
};

/// `ALLOC_MEMORY_OF_GPU` as the GPU driver sees it.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct AllocRequest {
    /// GPU virtual address, page aligned.
    pub(crate) va: u64,
    /// Bytes, page aligned, non-zero.
    pub(crate) size: u64,
    /// `USERPTR`: the CPU address of the memory, page aligned.
    pub(crate) user_addr: u64,
    /// `KFD_IOC_ALLOC_MEM_FLAGS_*`.
    pub(crate) flags: u32,
}

/// Where an object's memory is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Domain {
    /// Device memory.
    Vram,
    /// System memory the driver allocates (GTT).
    Gtt,
    /// System memory of a user process, by address.
    Userptr,
    /// The VM's doorbell pages (`DOORBELL`).
    Doorbell,
    /// The GPU's MMIO remap page (`MMIO_REMAP`).
    MmioRemap,
}

impl Domain {
    /// The domain selected by the `KFD_IOC_ALLOC_MEM_FLAGS_*` of a request.
    ///
    /// `DOORBELL` and `MMIO_REMAP` objects put the VM's doorbell pages and
    /// the GPU's MMIO remap page into the GPU VA space (amdgpu makes them
    /// SG BOs over the doorbell BAR and the remap page); the CPU maps the
    /// same pages through `/dev/kfd`.
    pub(crate) fn from_flags(flags: u32) -> Result<Self> {
        const DOMAINS: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM
            | uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT
            | uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
            | uapi::KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
            | uapi::KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP;
        match flags & DOMAINS {
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM => Ok(Domain::Vram),
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT => Ok(Domain::Gtt),
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR => Ok(Domain::Userptr),
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL => Ok(Domain::Doorbell),
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP => Ok(Domain::MmioRemap),
            _ => Err(EINVAL),
        }
    }
}

/// The memory behind an object.
enum Backing {
    /// VRAM frames (and their host pages).
    Vram(vram::Allocation),
    /// Zeroed system pages, accounted to the GPU's GTT.
    Gtt {
        /// One per page of the object.
        pages: KVVec<Page>,
        /// The accounting, released with the pages.
        _account: Reservation,
    },
    /// A user address range of the allocating process, its pages pinned
    /// for the object's lifetime and accounted as upstream accounts them.
    User {
        /// The pages (unpinned on drop, before the accounting goes).
        pinned: kabi::PinnedPages,
        /// The accounting.
        _account: Reservation,
    },
    /// Pages owned elsewhere (doorbells, MMIO remap); not accounted, as
    /// upstream does not account them.
    Shared(Arc<SharedPages>),
    /// The memory of another object: a GEM object's, imported from its
    /// dma-buf (`IMPORT_DMABUF`), of this GPU or another one of this
    /// driver.  Holding the reference keeps the memory after the GEM
    /// handles and the dma-buf are gone (upstream: the `kgd_mem`'s
    /// reference on the `amdgpu_bo`).  Not accounted again, as upstream.
    Imported(Arc<Mem>),
}

/// A memory object.
///
/// An AQL queue object (`AQL_QUEUE_MEM`) has half the pages it spans in the
/// GPU VA: amdgpu allocates half of the requested size and maps that twice,
/// back to back, so that a ring wrapping around its end continues at its
/// start (the "AQL queue wraparound" workaround of
/// `amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu`).  The CPU maps only the pages.
///
/// # Invariants
///
/// `0 < pages <= npages`, `va + npages * PAGE_SIZE <= pagetable::VA_END`,
/// and the backing has `pages` pages (unless it is `User`).
#[pin_data]
pub(crate) struct Mem {
    /// A kernel mapping of a GTT object: dropped before `backing` (field
    /// order).  A leaf.
    #[pin]
    kmap: Mutex<Option<kabi::KernelMap>>,
    /// The pages.
    backing: Backing,
    /// The render-node mmap offset slot.
    slot: OffsetSlot,
    /// The domain.
    domain: Domain,
    /// GPU virtual address.
    va: u64,
    /// Size in pages of the GPU VA range.
    npages: u64,
    /// Pages of memory: `npages`, or half of it (rounded up) for AQL queues.
    pages: u64,
    /// `USERPTR`: the user address.
    user_addr: u64,
    /// The GPU may write it.
    writable: bool,
    /// The GPU may execute it.
    executable: bool,
}

impl Mem {
    /// Allocates an object for `req` on `core`.
    pub(crate) fn new(
        core: &Arc<Core>,
        req: &AllocRequest,
        doorbells: &Arc<SharedPages>,
    ) -> Result<Arc<Self>> {
        let domain = Domain::from_flags(req.flags)?;
        let page = PAGE_SIZE as u64;
        if req.size == 0 || req.size % page != 0 || req.va % page != 0 {
            return Err(EINVAL);
        }
        if req.size >= 1 << OFFSET_SLOT_SHIFT {
            return Err(EINVAL);
        }
        match req.va.checked_add(req.size) {
            Some(end) if end <= pt::VA_END => {}
            _ => return Err(EINVAL),
        }
        if domain == Domain::Userptr && (req.user_addr == 0 || req.user_addr % page != 0) {
            return Err(EINVAL);
        }
        let npages = req.size / page;
        let pages = if req.flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM != 0 {
            npages.div_ceil(2)
        } else {
            npages
        };
        let count = usize::try_from(pages).map_err(|_| EINVAL)?;
        let bytes = pages * page;
        let backing = match domain {
            Domain::Vram => Backing::Vram(core.vram().alloc(count)?),
            Domain::Gtt => {
                let account = core.sysmem().reserve(bytes, true)?;
                let mut pages = KVVec::with_capacity(count, GFP_KERNEL)?;
                for _ in 0..count {
                    pages.push(
                        Page::alloc_page(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN)?,
                        GFP_KERNEL,
                    )?;
                }
                Backing::Gtt {
                    pages,
                    _account: account,
                }
            }
            Domain::Userptr => {
                // Accounted first: the limit also bounds what may be pinned.
                let account = core.sysmem().reserve(bytes, false)?;
                Backing::User {
                    pinned: kabi::PinnedPages::pin(req.user_addr, count)?,
                    _account: account,
                }
            }
            Domain::Doorbell | Domain::MmioRemap => {
                let shared = if domain == Domain::Doorbell {
                    doorbells
                } else {
                    core.mmio_remap()
                };
                // The whole slice / page, as rkfd checks (upstream:
                // `kfd_doorbell_process_slice`, `PAGE_SIZE`).
                if bytes != shared.len() as u64 || pages != npages {
                    return Err(EINVAL);
                }
                Backing::Shared(shared.clone())
            }
        };
        let slot = core.alloc_offset()?;
        Arc::pin_init(
            // INVARIANT: Checked above; the backing has `count` pages.
            try_pin_init!(Mem {
                kmap <- new_mutex!(None, "Mem::kmap"),
                backing,
                slot,
                domain,
                va: req.va,
                npages,
                pages,
                user_addr: req.user_addr,
                writable: req.flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE != 0,
                executable: req.flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE != 0,
            }),
            GFP_KERNEL,
        )
    }

    /// A GEM object (`DRM_IOCTL_AMDGPU_GEM_CREATE`) of `size` bytes (page
    /// aligned) in VRAM or GTT on `core`: in no VM (GPU VA 0, never mapped
    /// itself), with a render-node mmap offset of its own.
    pub(crate) fn new_gem(core: &Arc<Core>, size: u64, vram: bool) -> Result<Arc<Self>> {
        let domain = if vram {
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM
        } else {
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT
        };
        let req = AllocRequest {
            va: 0,
            size,
            user_addr: 0,
            flags: domain | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        };
        // GEM objects own no doorbells.
        Self::new(core, &req, core.mmio_remap())
    }

    /// An object at GPU VA `va` of a VM of `core` over the memory of
    /// `target` (a GEM object, any GPU of this driver), as
    /// `import_obj_create`: GPU-writable and executable, its own mmap
    /// offset.  `EINVAL` for a VA range that is not page aligned or does
    /// not fit, or a target that is not VRAM or GTT.
    pub(crate) fn import(core: &Arc<Core>, target: Arc<Mem>, va: u64) -> Result<Arc<Self>> {
        if !matches!(target.domain, Domain::Vram | Domain::Gtt) {
            return Err(EINVAL);
        }
        let page = PAGE_SIZE as u64;
        if va % page != 0 {
            return Err(EINVAL);
        }
        match va.checked_add(target.size()) {
            Some(end) if end <= pt::VA_END => {}
            _ => return Err(EINVAL),
        }
        let slot = core.alloc_offset()?;
        let (domain, pages) = (target.domain, target.pages);
        Arc::pin_init(
            // INVARIANT: `pages` is the target's, so `0 < pages = npages`;
            // the range was checked above.
            try_pin_init!(Mem {
                kmap <- new_mutex!(None, "Mem::kmap"),
                backing: Backing::Imported(target),
                slot,
                domain,
                va,
                npages: pages,
                pages,
                user_addr: 0,
                writable: true,
                executable: true,
            }),
            GFP_KERNEL,
        )
    }

    /// The GPU whose memory it is (an import: the target's).
    pub(crate) fn gpu(&self) -> &Arc<Core> {
        match &self.backing {
            Backing::Imported(target) => target.gpu(),
            _ => self.slot.core(),
        }
    }

    /// The GPU virtual address.
    pub(crate) fn va(&self) -> u64 {
        self.va
    }

    /// The size in pages of its GPU VA range.
    pub(crate) fn npages(&self) -> u64 {
        self.npages
    }

    /// The size in bytes of its memory (half the VA range for AQL queues).
    pub(crate) fn size(&self) -> u64 {
        self.pages << PAGE_SHIFT
    }

    /// The byte offset to `mmap()` the render node at.
    pub(crate) fn mmap_offset(&self) -> u64 {
        self.slot.offset()
    }

    /// The page offset (`vm_pgoff`) of the first page.
    pub(crate) fn mmap_pgoff(&self) -> u64 {
        self.slot.pgoff()
    }

    /// Whether the object is memory of the GPU `gpu`.
    pub(crate) fn is_on(&self, gpu: &Core) -> bool {
        match &self.backing {
            Backing::Imported(target) => target.is_on(gpu),
            _ => self.slot.is_on(gpu),
        }
    }

    /// The PTE for page `index` of the object in a page table of this GPU
    /// (`local`) or of another one.  Another GPU reaches this GPU's VRAM
    /// through the PCI BAR, i.e. as system memory: with VRAM backed by host
    /// pages, the host page behind the frame.  An AQL queue's second half
    /// maps its pages again.
    pub(crate) fn pte(&self, index: u64, local: bool) -> core::result::Result<Pte, pt::Error> {
        if index >= self.npages {
            return Err(pt::Error::OutOfRange);
        }
        // No division by zero to panic on (an object has pages; objtool
        // also wanted no fall-through into a panic path here).
        let index = index.checked_rem(self.pages).ok_or(pt::Error::OutOfRange)?;
        let i = usize::try_from(index).map_err(|_| pt::Error::OutOfRange)?;
        let (aperture, frame) = match &self.backing {
            Backing::Vram(alloc) if local => {
                (Aperture::Vram, alloc.frame(i).ok_or(pt::Error::OutOfRange)?)
            }
            Backing::Vram(alloc) => (
                Aperture::System,
                kabi::page_pfn(alloc.page(i).ok_or(pt::Error::OutOfRange)?),
            ),
            Backing::Gtt { pages, .. } => (
                Aperture::System,
                kabi::page_pfn(pages.get(i).ok_or(pt::Error::OutOfRange)?),
            ),
            // The pinned pages: the engines access the memory the CPU sees.
            Backing::User { pinned, .. } => (
                Aperture::System,
                pinned.pfn(i).ok_or(pt::Error::OutOfRange)?,
            ),
            Backing::Shared(shared) => (
                Aperture::System,
                kabi::page_pfn(shared.pages().get(i).ok_or(pt::Error::OutOfRange)?),
            ),
            // The target's frame (`local` is about the target's GPU, see
            // `is_on`), with this object's permissions.
            Backing::Imported(target) => {
                let pte = target.pte(index, local)?;
                (pte.aperture(), pte.frame())
            }
        };
        Pte::new(aperture, frame, self.writable, self.executable)
    }

    /// Checks that the CPU may map `npages` pages of the object through the
    /// render node.  Like amdgpu: `EPERM` for user pointers, `EINVAL` for a
    /// mapping larger than the object.
    pub(crate) fn check_cpu_map(&self, npages: u64) -> Result {
        if self.domain == Domain::Userptr {
            return Err(EPERM);
        }
        if npages == 0 || npages > self.pages {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// The page at render-node page offset `pgoff`, for a CPU page fault.
    pub(crate) fn page_at(&self, pgoff: u64) -> Option<&Page> {
        let index = pgoff.checked_sub(self.mmap_pgoff())?;
        if index >= self.pages {
            return None;
        }
        let index = usize::try_from(index).ok()?;
        match &self.backing {
            Backing::Vram(alloc) => alloc.page(index),
            Backing::Gtt { pages, .. } => pages.get(index),
            Backing::User { .. } => None,
            Backing::Shared(shared) => shared.pages().get(index),
            Backing::Imported(target) => target.cpu_page(index),
        }
    }

    /// The memory page `index` of the object the CPU reaches (VRAM, GTT);
    /// `None` for memory owned elsewhere (doorbells, MMIO remap) or pinned
    /// user pages, which the driver does not access for the CPU.
    fn cpu_page(&self, index: usize) -> Option<&Page> {
        match &self.backing {
            Backing::Vram(alloc) => alloc.page(index),
            Backing::Gtt { pages, .. } => pages.get(index),
            Backing::User { .. } | Backing::Shared(_) => None,
            Backing::Imported(target) => target.cpu_page(index),
        }
    }

    /// Runs `f(page, offset in page, buffer range)` over the pages holding
    /// `len` bytes at render-node byte offset `offset` (a VMA's `access`,
    /// as TTM's `ttm_bo_vm_access`): `EIO` if any byte is outside the
    /// object or not memory the driver reaches.
    fn for_cpu_bytes(
        &self,
        offset: u64,
        len: usize,
        mut f: impl FnMut(&Page, usize, core::ops::Range<usize>) -> Result,
    ) -> Result {
        let start = offset.checked_sub(self.mmap_offset()).ok_or(EIO)?;
        let end = start.checked_add(len as u64).ok_or(EIO)?;
        if len == 0 || end > self.size() {
            return Err(EIO);
        }
        let page = PAGE_SIZE as u64;
        let mut at = start;
        while at < end {
            let index = usize::try_from(at / page).map_err(|_| EIO)?;
            let in_page = (at % page) as usize;
            let n = (page - at % page).min(end - at) as usize;
            let done = (at - start) as usize;
            f(self.cpu_page(index).ok_or(EIO)?, in_page, done..done + n)?;
            at += n as u64;
        }
        Ok(())
    }

    /// Reads `buf.len()` bytes at render-node byte offset `offset` for a
    /// debugger (`ptrace`, `/proc/PID/mem`), whatever the CPU mapping's
    /// protection: `EIO` outside the object or for doorbells and the MMIO
    /// remap page (upstream's `amdgpu_ttm_access_memory` serves VRAM only,
    /// TTM system pages directly).
    pub(crate) fn cpu_read(&self, offset: u64, buf: &mut [u8]) -> Result {
        let len = buf.len();
        self.for_cpu_bytes(offset, len, |page, in_page, r| {
            let dst = buf.get_mut(r).ok_or(EIO)?;
            // SAFETY: `dst` is valid for writes of `dst.len()` bytes, and
            // `in_page + dst.len()` is within the page.
            unsafe { page.read_raw(dst.as_mut_ptr(), in_page, dst.len()) }
        })
    }

    /// Writes `buf` at render-node byte offset `offset`, as
    /// [`Mem::cpu_read`] reads.
    pub(crate) fn cpu_write(&self, offset: u64, buf: &[u8]) -> Result {
        self.for_cpu_bytes(offset, buf.len(), |page, in_page, r| {
            let src = buf.get(r).ok_or(EIO)?;
            // SAFETY: `src` is valid for reads of `src.len()` bytes, and
            // `in_page + src.len()` is within the page.
            unsafe { page.write_raw(src.as_ptr(), in_page, src.len()) }
        })
    }

    /// A kernel mapping of a GTT object (the event page), made on first
    /// use and kept until the object is released.  `EINVAL` for other
    /// domains, as `amdgpu_amdkfd_gpuvm_map_gtt_bo_to_kernel`.
    pub(crate) fn kernel_map(&self) -> Result<*mut c_void> {
        let Backing::Gtt { pages, .. } = &self.backing else {
            return Err(EINVAL);
        };
        let mut kmap = self.kmap.lock();
        if let Some(map) = kmap.as_ref() {
            return Ok(map.addr());
        }
        // SAFETY: `pages` are freed only after `kmap` is dropped (field
        // order of `Mem`), and never while the object exists.
        let map = unsafe { kabi::KernelMap::new(pages)? };
        let addr = map.addr();
        *kmap = Some(map);
        Ok(addr)
    }
}
