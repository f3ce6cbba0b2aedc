// SPDX-License-Identifier: GPL-2.0

//! Shared virtual memory (SVM): the per-process range set and the
//! `AMDKFD_IOC_SVM` ioctl.
//!
//! C: `kfd_svm.c` (`svm_range_list_init/fini`, `svm_range_set_attr`,
//! `svm_range_get_attr`, `svm_range_is_valid`, `svm_range_check_vm`) and
//! `kfd_ioctl_svm` in `kfd_chardev.c`.  The range algebra, the attribute
//! rules and the argument checks are pure logic shared with the host crate
//! (`rust/kfd-logic/src/svm/`, property-tested there); this module adds the
//! locks, the VMA walk, the memory-object overlap check and the ioctl glue.
//!
//! # What works and what does not (yet)
//!
//! `SET_ATTR` records attributes: it creates, splits and updates ranges
//! exactly as upstream, and `GET_ATTR` reports them.  The machinery under it
//! is [`crate::svm_hmm`] (device-private VRAM, one `mmu_interval_notifier`
//! per range, `hmm_range_fault`, migration, retry faults): after the
//! attributes are recorded, `SET_ATTR` hands PREFETCH_LOC (migrate now),
//! PREFERRED_LOC (where faults migrate to) and, with XNACK off, ACCESS (map
//! now) to it.  The two keep their own range sets: this one the attributes,
//! `svm_hmm` the notifiers and GPU mappings (its ranges are created by
//! faults, prefetches and these calls, and by SET_ATTR itself so that every
//! attribute range has a notifier).  A CPU `munmap` reaches `svm_hmm`'s
//! deferred worker, which removes the unmapped VA from both sets
//! ([`SvmState::prune_unmapped`] for this one); SET_ATTR and GET_ATTR run
//! pending work first, as upstream flushes its deferred list.  With XNACK
//! off every page the ranges cover is reserved against the GPU driver's
//! system-memory limit as user-pointer memory (upstream
//! `svm_range_new(.., update_mem_usage)`; debugfs `kfd/mem_limit` shows
//! it): SET_ATTR reserves its new pages (`ENOMEM` over the limit, nothing
//! recorded), `munmap` and process exit give them back, SET_XNACK_MODE
//! moves the whole reservation ([`SvmState::switch_xnack`]).
//!
//! # Locking
//!
//! [`Process::svm`] (upstream `svms->lock`) protects the range set.  It is
//! taken inside `Process::inner` or inside the mmap lock (read), never the
//! other way round, and nothing is taken inside it: `SET_ATTR` holds the
//! mmap read lock across the VMA check and the range update, as upstream
//! holds `mmap_lock` around `svms->lock`.  `SET_ATTR` and `GET_ATTR` never
//! hold `Process::inner` and the mmap lock together (a GPU driver may take
//! the mmap lock under `inner`, for user pointers).  An MMU-notifier
//! callback that can run in reclaim must not take [`Process::svm`] (the set
//! allocates under it; upstream defers such work to a worker).

use kernel::{mm::MmapReadGuard, prelude::*, sync::Arc};

use crate::{
    device::Device,
    kabi,
    process::{Process, ProcessInner},
    uapi,
};

/// The pure logic, shared with the host crate `kfd-logic`.
#[path = "../../rust/kfd-logic/src/svm/mod.rs"]
#[allow(
    unreachable_pub,
    dead_code,
    reason = "a directory shared with a host crate: `pub` items, accessors for its tests"
)]
pub(crate) mod logic;

pub(crate) mod dump;
mod store;

use logic::{
    attr::{self, Attr, Gpus, MAX_GPU_INSTANCE},
    ranges::{max_range_pages, Params, RangeSet, Span},
    SvmError,
};
use store::RbStore;

const _: () = assert!(attr::PAGE_SHIFT as usize == kernel::page::PAGE_SHIFT);
const _: () = assert!(attr::ARGS_HEADER_SIZE as usize == core::mem::size_of::<uapi::kfd_ioctl_svm_args>());
const _: () = assert!(attr::ATTR_SIZE as usize == core::mem::size_of::<uapi::kfd_ioctl_svm_attribute>());

/// The per-range state of the machinery (HMM interval notifier, GPU
/// mapping, VRAM).  None yet: attributes only.
pub(crate) type RangePayload = ();

/// The range set of a process.
pub(crate) type Ranges = RangeSet<RangePayload, RbStore<RangePayload>>;

/// Per-process SVM state (C: `struct svm_range_list`), under [`Process::svm`].
pub(crate) struct SvmState {
    /// The ranges.
    pub(crate) ranges: Ranges,
    /// The device whose GPU driver keeps the system-memory limit (any: the
    /// accounts are the driver's, module-wide, as amdgpu's
    /// `amdgpu_amdkfd_reserve_mem_limit(NULL, ..)`); `None` after
    /// [`SvmState::clear`] or if no driver accounts.
    account: Option<Arc<Device>>,
    /// XNACK is off: ranges are reserved against the system-memory limit
    /// (upstream `svm_range_new(.., update_mem_usage)` when
    /// `!p->xnack_enabled`).  Mirrors `ProcessInner::xnack_enabled`,
    /// switched with it under this lock ([`SvmState::switch_xnack`]).
    accounting: bool,
    /// Bytes reserved: every page the ranges cover while `accounting`, 0
    /// otherwise.
    reserved: u64,
}

/// The attributes a retry fault uses ([`SvmState::fault_attrs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FaultAttrs {
    /// The range's attributes.
    pub(crate) attrs: attr::Attrs,
    /// The range (pages): the fault window stays inside it, as upstream
    /// clips it to `prange`.
    pub(crate) span: Span,
}

impl FaultAttrs {
    /// log2 of the fault window in pages.
    pub(crate) fn granularity(&self) -> u8 {
        self.attrs.granularity
    }

    /// Where a fault of process device `gpu_idx` (gpu_id `gpu_id`)
    /// restores the range (upstream `svm_range_best_restore_location`, see
    /// [`attr::best_restore_location`]): system memory (0), a gpu_id, or
    /// `None`: no access, the fault is fatal (`-EACCES`).  Virtual GPUs
    /// share no XGMI hive: only a GPU itself reaches its VRAM.
    /// `no_vram`: the GPU has no device-private VRAM (upstream's
    /// `apu_prefer_gtt` analogue); `actual_loc()`: where the window's pages
    /// are.
    pub(crate) fn best_location(
        &self,
        gpu_idx: usize,
        gpu_id: u32,
        no_vram: bool,
        actual_loc: impl FnOnce() -> u32,
    ) -> Option<u32> {
        attr::best_restore_location(&self.attrs, gpu_idx, gpu_id, no_vram, |a, b| a == b, actual_loc)
    }
}

/// Whether a GPU takes part in SVM (upstream `KFD_IS_SVM_API_SUPPORTED`:
/// device-private VRAM registered, or an APU).
///
/// As upstream: its VRAM is registered as device-private memory
/// (`crate::svm_hmm`), or it is an APU (no VRAM).  The topology capability
/// is a separate, stricter decision (`Device::svm_supported`).
pub(crate) fn device_supports_svm(dev: &Device) -> bool {
    dev.svm.is_some() || dev.info.vram_size == 0
}

impl SvmState {
    /// The state of a new process with `devices` (upstream
    /// `svm_range_list_init`; `max_pages` is upstream's
    /// `svm_range_set_max_pages`, the minimum over the GPUs).
    /// A new process starts with XNACK off (`ProcessInner::xnack_enabled`),
    /// so its ranges are accounted.
    pub(crate) fn new<'a>(devices: impl Iterator<Item = &'a Arc<Device>>) -> Self {
        let mut max_pages = None::<u64>;
        let mut account = None;
        for d in devices {
            let m = max_range_pages(d.info.vram_size);
            max_pages = Some(max_pages.map_or(m, |x| x.min(m)));
            if account.is_none() && d.kgd.has_mem_limit() {
                account = Some(d.clone());
            }
        }
        let params = Params { max_pages: max_pages.unwrap_or(1 << 9), default_granularity: attr::DEFAULT_GRANULARITY };
        SvmState { ranges: RangeSet::new(RbStore::new(), params), account, accounting: true, reserved: 0 }
    }

    /// Drops every range and gives their reservation back (upstream
    /// `svm_range_list_fini` → `svm_range_free`).
    pub(crate) fn clear(&mut self) {
        self.ranges.clear(drop);
        self.ranges.store_mut().trim();
        self.unreserve(self.reserved);
        // The device may go once its processes are gone.
        self.account = None;
    }

    /// Reserves `bytes` of new ranges if XNACK is off (upstream
    /// `amdgpu_amdkfd_reserve_mem_limit(NULL, size, USERPTR)` in
    /// `svm_range_new`); `ENOMEM` over the limit, nothing reserved.
    fn reserve(&mut self, bytes: u64) -> Result {
        if !self.accounting || bytes == 0 {
            return Ok(());
        }
        if let Some(d) = self.account.as_ref() {
            d.kgd.reserve_userptr_limit(bytes)?;
            self.reserved += bytes;
        }
        Ok(())
    }

    /// Gives back the reservation of `bytes` of removed ranges (upstream
    /// `svm_range_free` with XNACK off).
    fn unreserve(&mut self, bytes: u64) {
        let bytes = bytes.min(self.reserved);
        if bytes == 0 {
            return;
        }
        if let Some(d) = self.account.as_ref() {
            d.kgd.unreserve_userptr_limit(bytes);
        }
        self.reserved -= bytes;
    }

    /// SET_XNACK_MODE is switching to `enable` (upstream
    /// `svm_range_switch_xnack_reserve_mem`): XNACK on gives the ranges'
    /// reservation back, XNACK off reserves every page they cover;
    /// `ENOMEM` over the limit, and then nothing changed (the caller keeps
    /// the old mode).
    pub(crate) fn switch_xnack(&mut self, enable: bool) -> Result {
        if enable {
            self.unreserve(self.reserved);
            self.accounting = false;
        } else if !self.accounting {
            self.accounting = true;
            let total = self.ranges.total_pages() << attr::PAGE_SHIFT;
            if let Err(e) = self.reserve(total) {
                self.accounting = false;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Bytes reserved against the system-memory limit.
    #[allow(dead_code)] // KUnit.
    pub(crate) fn reserved(&self) -> u64 {
        self.reserved
    }

    /// What a GPU retry fault at `page` (a page number) must honour
    /// (upstream `svm_range_restore_pages` and
    /// `svm_range_best_restore_location`); `None` if no range covers the
    /// page (see [`SvmState::create_unregistered`]).
    pub(crate) fn fault_attrs(&self, page: u64) -> Option<FaultAttrs> {
        let r = self.ranges.find(page)?;
        Some(FaultAttrs { attrs: r.attrs, span: r.span() })
    }

    /// A retry fault (XNACK on) at `page`, which no range covers, inside
    /// the VMA `vma` (pages): creates the range upstream's
    /// `svm_range_create_unregistered_range` creates and returns its span.
    /// The window is the process's default granularity around the page,
    /// clipped to the VMA and to the neighbouring ranges
    /// (`svm_range_get_range_boundaries`); the attributes are a new
    /// range's with XNACK on (`svm_range_new`: every SVM GPU in ACCESS,
    /// `svm_range_set_default_attributes`), and PREFERRED_LOC is system
    /// memory in the initial heap or stack (`is_heap_stack`).  `supported`
    /// is the process's SVM-capable devices by index.  Not accounted
    /// against the system-memory limit: XNACK is on.
    pub(crate) fn create_unregistered(
        &mut self,
        page: u64,
        vma: Span,
        heap_stack: bool,
        supported: attr::GpuMask,
    ) -> Result<Span> {
        let gran = self.ranges.params().default_granularity;
        let span = self.ranges.unregistered_bounds(page, vma, gran).map_err(err)?;
        let mut attrs = attr::Attrs::defaults(gran, true, supported);
        if heap_stack {
            attrs.preferred_loc = attr::LOCATION_SYSMEM;
        }
        // With XNACK on (the only way here) this reserves nothing, as
        // upstream's `svm_range_new(.., true)`.
        self.reserve(span.npages() << attr::PAGE_SHIFT)?;
        let r = self.ranges.insert_new(span, attrs).map(|_| span).map_err(err);
        self.ranges.store_mut().trim();
        if r.is_err() {
            self.unreserve(span.npages() << attr::PAGE_SHIFT);
        }
        r
    }

    /// Removes the parts of ranges that no VMA covers any more: a CPU
    /// `munmap` (upstream `svm_range_unmap_from_cpu`, run by the deferred
    /// worker, `crate::svm_hmm`).  Needs `mmap_lock` held.  Out of memory
    /// for the split leaves that hole's ranges (logged).
    pub(crate) fn prune_unmapped(&mut self, mm: &kabi::hmm::MmRead<'_>) {
        let shift = attr::PAGE_SHIFT;
        let mut holes = KVec::new();
        for r in self.ranges.iter() {
            let end = r.last.saturating_add(1).checked_shl(shift).unwrap_or(u64::MAX);
            mm.for_each_hole(r.start << shift, end, |s, e| {
                if holes.push(Span::new(s >> shift, (e >> shift) - 1), GFP_KERNEL).is_err() {
                    kabi::log::kfd_warn!("svm: ranges of unmapped {:#x}..{:#x} kept (no memory)\n", s, e);
                }
            });
        }
        let mut removed = 0u64;
        for h in holes {
            let r = self.ranges.remove(h, |r| removed += r.last - r.start + 1);
            if let Err(e) = r {
                kabi::log::kfd_warn!("svm: removing unmapped pages {:#x}..={:#x}: {:?}\n", h.start, h.last, err(e));
            }
        }
        self.ranges.store_mut().trim();
        self.unreserve(removed << shift);
    }

    /// Whether a range intersects the `size` bytes at `start` (upstream's
    /// `interval_tree_iter_first` over `[start >> PAGE_SHIFT, (start + size
    /// - 1) >> PAGE_SHIFT]`).
    pub(crate) fn overlaps_bytes(&self, start: u64, size: u64) -> bool {
        if size == 0 {
            return false;
        }
        let last = start.saturating_add(size - 1);
        self.ranges.overlaps(start >> attr::PAGE_SHIFT, last >> attr::PAGE_SHIFT)
    }
}

/// The SVM part of `ALLOC_MEMORY_OF_GPU` (upstream `kfd_ioctl_alloc_memory_of_gpu`
/// under `CONFIG_HSA_AMD_SVM`): a GPU VA (unless VRAM without VA) or a user
/// pointer that overlaps an SVM range is `-EADDRINUSE`.  Takes
/// [`Process::svm`] alone; the caller takes `Process::inner` after.
pub(crate) fn check_alloc(process: &Process, args: &uapi::kfd_ioctl_alloc_memory_of_gpu_args) -> Result {
    let svm = process.svm.lock();
    let vram_without_va = args.va_addr == 0 && args.flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0;
    if !vram_without_va && svm.overlaps_bytes(args.va_addr, args.size) {
        return Err(EADDRINUSE);
    }
    if args.flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 && svm.overlaps_bytes(args.mmap_offset, args.size) {
        return Err(EADDRINUSE);
    }
    Ok(())
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

/// What the ioctl needs from `Process::inner`, copied out so the lock is
/// not held with the mmap lock.
struct Snapshot {
    ids: [u32; MAX_GPU_INSTANCE],
    n: usize,
    supported: u64,
    xnack_enabled: bool,
    /// Some GPU VM is bound (upstream: `p->kgd_process_info` exists).
    has_vm: bool,
    /// The interval overlaps a memory object mapped on a GPU.
    overlaps_mem: bool,
}

impl Snapshot {
    /// Copies what the ioctl needs; `bytes` is the interval `[start, end)`
    /// for the memory-object check (`None`: it overflowed, which is
    /// reported later in upstream's order).
    fn take(inner: &ProcessInner, bytes: Option<(u64, u64)>) -> Self {
        let mut s = Snapshot {
            ids: [0; MAX_GPU_INSTANCE],
            n: 0,
            supported: 0,
            xnack_enabled: inner.xnack_enabled,
            has_vm: false,
            overlaps_mem: bytes.is_some_and(|(start, end)| crate::memory::mapped_va_overlaps(inner, start, end)),
        };
        for (i, pdd) in inner.pdds.iter().take(MAX_GPU_INSTANCE).enumerate() {
            s.ids[i] = pdd.dev.gpu_id();
            if device_supports_svm(&pdd.dev) {
                s.supported |= 1 << i;
            }
            s.has_vm |= pdd.vm.is_some();
            s.n = i + 1;
        }
        s
    }

    fn gpus(&self) -> Gpus<'_> {
        Gpus { ids: &self.ids[..self.n], supported: self.supported }
    }
}

/// `kfd_ioctl_svm_validate`: run by the dispatcher before the handler with
/// the caller's `_IOC_SIZE`.
pub(crate) fn validate_ioctl(buf: &[u8], user_size: usize) -> Result {
    let nattr = buf.get(20..24).ok_or(EINVAL)?;
    let nattr = u32::from_ne_bytes([nattr[0], nattr[1], nattr[2], nattr[3]]);
    attr::check_ioctl_size(user_size, nattr).map_err(err)
}

/// Reads the `nattr` attributes that follow the header.
fn read_attrs(buf: &[u8], nattr: u32) -> Result<KVec<Attr>> {
    let n = nattr as usize;
    let bytes = buf.get(attr::ARGS_HEADER_SIZE as usize..).ok_or(EINVAL)?;
    let bytes = bytes.get(..n.checked_mul(8).ok_or(EINVAL)?).ok_or(EINVAL)?;
    let mut attrs = KVec::with_capacity(n, GFP_KERNEL)?;
    for c in bytes.chunks_exact(8) {
        let ty = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
        let value = u32::from_ne_bytes([c[4], c[5], c[6], c[7]]);
        attrs.push(Attr::new(ty, value), GFP_KERNEL)?;
    }
    Ok(attrs)
}

/// Writes attributes back after the header.
fn write_attrs(buf: &mut [u8], attrs: &[Attr]) {
    let Some(bytes) = buf.get_mut(attr::ARGS_HEADER_SIZE as usize..) else { return };
    for (c, a) in bytes.chunks_exact_mut(8).zip(attrs) {
        c[..4].copy_from_slice(&a.ty.to_ne_bytes());
        c[4..].copy_from_slice(&a.value.to_ne_bytes());
    }
}

/// IOCTL: SVM (`kfd_ioctl_svm` + `svm_ioctl`).  The buffer holds the
/// caller's whole argument, `nattr` attributes included (checked by
/// [`validate_ioctl`]).
pub(crate) fn ioctl(process: &Process, buf: &mut [u8]) -> Result {
    let (start_addr, size, op, nattr) = {
        let args: &mut uapi::kfd_ioctl_svm_args = uapi::args_mut(buf)?;
        (args.start_addr, args.size, args.op, args.nattr)
    };
    let req = attr::check_request(start_addr, size).map_err(err)?;
    let mut attrs = read_attrs(buf, nattr)?;
    match op {
        attr::OP_SET_ATTR => set_attr(process, req, &attrs),
        attr::OP_GET_ATTR => {
            let r = get_attr(process, req, &mut attrs);
            // The answers go back even on failure, as upstream's in-place
            // update of the copied-back buffer.
            write_attrs(buf, &attrs);
            r
        }
        _ => Err(EINVAL),
    }
}

/// `svm_range_is_valid` after the overflow check: every page in VMAs
/// without `VM_IO|VM_PFNMAP|VM_MIXEDMAP` (`-EFAULT`), no GPU-mapped memory
/// object in the way (`-EADDRINUSE`).
fn check_vmas(mmap: &MmapReadGuard<'_>, start: u64, end: u64, snap: &Snapshot) -> Result {
    if !kabi::mm::plain_vmas(mmap, start, end) {
        return Err(EFAULT);
    }
    if snap.overlaps_mem {
        return Err(EADDRINUSE);
    }
    Ok(())
}

/// `svm_range_set_attr`, up to where the machinery takes over.
fn set_attr(process: &Process, req: attr::PageRequest, attrs: &[Attr]) -> Result {
    // Pending `munmap`s leave the range set first (upstream
    // `svm_range_list_lock_and_flush_work`).
    process.hmm.run_pending();
    let bytes = attr::check_range_overflow(&req);
    let snap = Snapshot::take(&process.inner.lock(), bytes.ok());
    attr::check_set_attrs(attrs, &snap.gpus()).map_err(err)?;
    if !snap.has_vm {
        return Err(EINVAL);
    }
    let (start, end) = bytes.map_err(err)?;
    // Notifiers over the whole request before the attributes exist, so a
    // `munmap` racing with this call either fails the VMA check below or
    // reaches the worker that removes the attributes again.
    if !snap.overlaps_mem {
        process.hmm.track(start, end)?;
    }
    let mm = kabi::mm::CurrentMm::get()?;
    let mmap = mm.read_lock();
    check_vmas(&mmap, start, end, &snap)?;
    {
        let mut svm = process.svm.lock();
        let span = Span::new(req.start, req.last());
        // XNACK off: the pages that get new ranges are reserved against
        // the system-memory limit first; over it, `ENOMEM` and nothing is
        // recorded (upstream `svm_range_add` → `svm_range_new` fails).
        let new_bytes = (span.npages() - svm.ranges.covered_pages(span)) << attr::PAGE_SHIFT;
        svm.reserve(new_bytes)?;
        let r = svm.ranges.set_attr(span, attrs, &snap.gpus(), snap.xnack_enabled);
        svm.ranges.store_mut().trim();
        if r.is_err() {
            svm.unreserve(new_bytes);
        }
        r.map(|_outcome| ()).map_err(err)?;
    }
    drop(mmap);
    // The machinery (migration, preferred location for faults), with none
    // of this module's locks held: it takes the mmap lock itself.
    let mut pairs = KVec::with_capacity(attrs.len(), GFP_KERNEL)?;
    for a in attrs {
        pairs.push((a.ty, a.value), GFP_KERNEL)?;
    }
    crate::svm_hmm::migrate::apply_attrs(process, start, end, &pairs)
}

/// `svm_range_get_attr`.
fn get_attr(process: &Process, req: attr::PageRequest, attrs: &mut [Attr]) -> Result {
    // Upstream `flush_work(&p->svms.deferred_list_work)`.
    process.hmm.run_pending();
    let (start, end) = attr::check_range_overflow(&req).map_err(err)?;
    let snap = Snapshot::take(&process.inner.lock(), Some((start, end)));
    {
        let mm = kabi::mm::CurrentMm::get()?;
        let mmap = mm.read_lock();
        check_vmas(&mmap, start, end, &snap)?;
    }
    let span = Span::new(req.start, req.last());
    let svm = process.svm.lock();
    logic::get_attr(&svm.ranges, span, attrs, &snap.gpus(), snap.xnack_enabled).map_err(err)
}

#[kunit_tests(rkfd_svm)]
mod tests {
    use super::*;
    use logic::attr::*;

    const IDS: [u32; 2] = [0x1111, 0x2222];

    fn gpus() -> Gpus<'static> {
        Gpus { ids: &IDS, supported: 0b11 }
    }

    fn new_ranges(max_pages: u64) -> Ranges {
        RangeSet::new(RbStore::new(), Params { max_pages, default_granularity: DEFAULT_GRANULARITY })
    }

    fn spans(r: &Ranges) -> KVec<(u64, u64)> {
        let mut v = KVec::new();
        for x in r.iter() {
            let _ = v.push((x.start, x.last), GFP_KERNEL);
        }
        v
    }

    #[test]
    fn rbtree_store_splits_and_removes() -> Result {
        let g = gpus();
        let mut r = new_ranges(16);
        r.set_attr(Span::new(5, 40), &[Attr::new(ATTR_ACCESS, 0x2222)], &g, false).map_err(err)?;
        assert_eq!(&spans(&r)[..], &[(5, 15), (16, 31), (32, 40)]);
        assert_eq!(r.store().spare(), 0);
        r.set_attr(Span::new(20, 25), &[Attr::new(ATTR_PREFERRED_LOC, 0x1111)], &g, false).map_err(err)?;
        assert_eq!(&spans(&r)[..], &[(5, 15), (16, 19), (20, 25), (26, 31), (32, 40)]);
        assert_eq!(r.find(22).map(|x| x.attrs.preferred_loc), Some(0x1111));
        assert_eq!(r.find(26).map(|x| x.attrs.preferred_loc), Some(LOCATION_UNDEFINED));
        assert_eq!(r.find(30).map(|x| x.attrs.access), Some(0b10));
        assert!(r.find(41).is_none() && r.find(4).is_none());
        let mut removed = 0;
        r.remove(Span::new(10, 21), |x| removed += x.last - x.start + 1).map_err(err)?;
        assert_eq!(removed, 12);
        assert_eq!(&spans(&r)[..], &[(5, 9), (22, 25), (26, 31), (32, 40)]);
        assert_eq!(r.store().spare(), 0);
        // Fault-path bounds: clipped by the neighbours (the RBTree's
        // predecessor and successor lookups), the VMA and the window.
        let vma = Span::new(0, 100);
        assert_eq!(r.unregistered_bounds(15, vma, 9), Ok(Span::new(10, 21)));
        assert_eq!(r.unregistered_bounds(50, vma, 9), Ok(Span::new(41, 100)));
        assert_eq!(r.unregistered_bounds(2, vma, 9), Ok(Span::new(0, 4)));
        assert_eq!(r.unregistered_bounds(50, vma, 3), Ok(Span::new(48, 55)));
        assert_eq!(r.unregistered_bounds(7, vma, 9), Err(SvmError::Inval));
        let a = r.new_range_attrs(&g, true);
        r.insert_new(Span::new(10, 21), a).map_err(err)?;
        assert_eq!(r.find(15).map(|x| (x.start, x.last, x.attrs.access)), Some((10, 21, 0b11)));
        assert!(r.insert_new(Span::new(21, 21), a).is_err());
        assert_eq!(r.store().spare(), 0);
        let mut n = 0;
        r.clear(|_| n += 1);
        assert_eq!((n, r.len()), (5, 0));
        Ok(())
    }

    #[test]
    fn rbtree_store_many_ranges_stay_ordered() -> Result {
        let g = gpus();
        let mut r = new_ranges(1 << 18);
        // Every other page: 1000 ranges, then one call over all of them.
        for i in 0..1000u64 {
            r.set_attr(Span::new(2 * i, 2 * i), &[Attr::new(ATTR_GRANULARITY, (i % 7) as u32)], &g, true)
                .map_err(err)?;
        }
        assert_eq!(r.len(), 1000);
        r.set_attr(Span::new(0, 1999), &[Attr::new(ATTR_SET_FLAGS, 0x10)], &g, true).map_err(err)?;
        assert_eq!(r.len(), 2000);
        let mut prev = None;
        for x in r.iter() {
            assert!(prev.map_or(true, |p| x.start == p + 1));
            assert!(x.attrs.flags & 0x10 != 0);
            prev = Some(x.last);
        }
        let mut q = [Attr::new(ATTR_GRANULARITY, 0)];
        logic::get_attr(&r, Span::new(0, 13), &mut q, &g, true).map_err(err)?;
        assert_eq!(q[0].value, 0);
        logic::get_attr(&r, Span::new(2, 11), &mut q, &g, true).map_err(err)?;
        // Pages 2..11: the set ones have 1..5, the others the default 9.
        assert_eq!(q[0].value, 1);
        Ok(())
    }

    #[test]
    fn ioctl_size_and_attr_parsing() -> Result {
        let mut buf = [0u8; 40];
        buf[20..24].copy_from_slice(&2u32.to_ne_bytes());
        assert_eq!(validate_ioctl(&buf, 40).err(), None);
        assert_eq!(validate_ioctl(&buf, 39).err(), Some(EINVAL));
        // nattr = u32::MAX cannot overflow the size computation.
        buf[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert_eq!(validate_ioctl(&buf, 16383).err(), Some(EINVAL));
        buf[24..28].copy_from_slice(&ATTR_ACCESS.to_ne_bytes());
        buf[28..32].copy_from_slice(&0x2222u32.to_ne_bytes());
        buf[32..36].copy_from_slice(&ATTR_GRANULARITY.to_ne_bytes());
        buf[36..40].copy_from_slice(&3u32.to_ne_bytes());
        let attrs = read_attrs(&buf, 2)?;
        assert_eq!(&attrs[..], &[Attr::new(ATTR_ACCESS, 0x2222), Attr::new(ATTR_GRANULARITY, 3)]);
        assert_eq!(read_attrs(&buf, 3).err(), Some(EINVAL));
        write_attrs(&mut buf, &[Attr::new(ATTR_NO_ACCESS, 7)]);
        assert_eq!(read_attrs(&buf, 1)?[0], Attr::new(ATTR_NO_ACCESS, 7));
        Ok(())
    }

    #[test]
    fn state_overlap_in_bytes() -> Result {
        let mut st = SvmState::new(core::iter::empty());
        // No GPU: upstream's smallest block, 2 MiB.
        assert_eq!(st.ranges.params().max_pages, 512);
        st.ranges.set_attr(Span::new(0x10, 0x1f), &[], &gpus(), false).map_err(err)?;
        assert!(st.overlaps_bytes(0x1f000, 1));
        assert!(st.overlaps_bytes(0xf000, 0x1001));
        assert!(!st.overlaps_bytes(0xf000, 0x1000));
        assert!(!st.overlaps_bytes(0x20000, 0x1000));
        assert!(!st.overlaps_bytes(0x10000, 0));
        // A size that runs past the address space saturates instead of wrapping.
        assert!(st.overlaps_bytes(0x1000, u64::MAX));
        st.clear();
        assert!(st.ranges.is_empty() && !st.overlaps_bytes(0, u64::MAX));
        Ok(())
    }

    #[test]
    fn fault_attrs_follow_the_range() -> Result {
        let mut st = SvmState::new(core::iter::empty());
        let g = gpus();
        // No range: none until the fault creates one.
        assert_eq!(st.fault_attrs(0x10), None);
        st.ranges
            .set_attr(
                Span::new(0x10, 0x1f),
                &[Attr::new(ATTR_GRANULARITY, 4), Attr::new(ATTR_PREFERRED_LOC, 0x2222), Attr::new(ATTR_ACCESS, 0x2222)],
                &g,
                true,
            )
            .map_err(err)?;
        st.ranges.set_attr(Span::new(0x18, 0x1f), &[Attr::new(ATTR_NO_ACCESS, 0x2222)], &g, true).map_err(err)?;
        // Where GPU `idx` (ids 0x1111, 0x2222) restores page `page`; the
        // pages are in system memory.
        let best = |st: &SvmState, page, idx: usize| -> Result<Option<u32>> {
            let id = IDS.get(idx).copied().unwrap_or(0);
            Ok(st.fault_attrs(page).ok_or(EINVAL)?.best_location(idx, id, false, || LOCATION_SYSMEM))
        };
        let a = st.fault_attrs(0x12).ok_or(EINVAL)?;
        assert_eq!((a.granularity(), a.attrs.preferred_loc), (4, 0x2222));
        assert_eq!(best(&st, 0x12, 1)?, Some(0x2222));
        // XNACK on: new ranges give every GPU access, so GPU 0 still has it
        // (preferred elsewhere, no XGMI: its own VRAM).
        assert_eq!(best(&st, 0x12, 0)?, Some(0x1111));
        // Preferred here but NO_ACCESS: PREFERRED_LOC wins, as upstream.
        assert_eq!(best(&st, 0x18, 1)?, Some(0x2222));
        st.ranges.set_attr(Span::new(0x18, 0x1f), &[Attr::new(ATTR_PREFERRED_LOC, LOCATION_UNDEFINED)], &g, true).map_err(err)?;
        assert_eq!(best(&st, 0x18, 1)?, None);
        st.ranges.set_attr(Span::new(0x18, 0x18), &[Attr::new(ATTR_ACCESS_IN_PLACE, 0x2222)], &g, true).map_err(err)?;
        assert_eq!((best(&st, 0x18, 1)?, best(&st, 0x19, 1)?), (Some(LOCATION_SYSMEM), None));
        assert_eq!(best(&st, 0x12, MAX_GPU_INSTANCE)?, None);
        st.clear();
        Ok(())
    }

    #[test]
    fn fault_creates_unregistered_range() -> Result {
        let mut st = SvmState::new(core::iter::empty());
        let g = gpus();
        st.ranges.set_attr(Span::new(0x300, 0x30f), &[Attr::new(ATTR_PREFERRED_LOC, 0x1111)], &g, true).map_err(err)?;
        // The 512-page window around 0x2f0, clipped by the VMA's start and
        // by the range after it.
        let vma = Span::new(0x250, 0x7ff);
        assert_eq!(st.create_unregistered(0x2f0, vma, false, 0b01)?, Span::new(0x250, 0x2ff));
        let r = st.ranges.find(0x2f0).ok_or(EINVAL)?;
        let want = Attrs::defaults(DEFAULT_GRANULARITY, true, 0b01);
        assert_eq!((r.start, r.last, r.attrs), (0x250, 0x2ff, want));
        // After the range: up to the window's end; heap or stack prefers
        // system memory.
        assert_eq!(st.create_unregistered(0x310, vma, true, 0b11)?, Span::new(0x310, 0x3ff));
        assert_eq!(st.fault_attrs(0x3ff).map(|a| a.attrs.preferred_loc), Some(LOCATION_SYSMEM));
        // Covered already, or outside the VMA: refused, nothing created.
        assert_eq!(st.create_unregistered(0x300, vma, false, 1).err(), Some(EINVAL));
        assert_eq!(st.create_unregistered(0x900, vma, false, 1).err(), Some(EINVAL));
        assert_eq!(st.ranges.len(), 3);
        st.clear();
        Ok(())
    }

    #[test]
    fn xnack_off_ranges_are_reserved() -> Result {
        use crate::{device, kabi::kgd::fake::{self, FakeGpu}};
        use kernel::sync::atomic::Relaxed;
        const P: u64 = kernel::page::PAGE_SIZE as u64;
        let gpu = FakeGpu::new()?;
        let dev = device::probe(fake::device(&gpu), fake::info())?;
        let devs = [dev];
        let mut st = SvmState::new(devs.iter());
        let g = gpus();
        let held = || gpu.reserved.load(Relaxed);
        // XNACK off (a new process): the pages of new ranges only.
        let set = |st: &mut SvmState, s: u64, l: u64| -> Result {
            let span = Span::new(s, l);
            let bytes = (span.npages() - st.ranges.covered_pages(span)) * P;
            st.reserve(bytes)?;
            st.ranges.set_attr(span, &[], &g, false).map_err(err)?;
            Ok(())
        };
        set(&mut st, 0x10, 0x1f)?;
        set(&mut st, 0x18, 0x27)?;
        assert_eq!((held(), st.reserved()), (0x18 * P, 0x18 * P));
        // Over the limit: ENOMEM, nothing reserved.
        gpu.limit.store(0x20 * P, Relaxed);
        assert_eq!(set(&mut st, 0x100, 0x10f).err(), Some(ENOMEM));
        assert_eq!((held(), st.ranges.covered_pages(Span::new(0x100, 0x10f))), (0x18 * P, 0));
        // XNACK on gives it back; off again needs room for all of it.
        st.switch_xnack(true)?;
        assert_eq!((held(), st.reserved()), (0, 0));
        set(&mut st, 0x100, 0x10f)?;
        assert_eq!(held(), 0);
        assert_eq!(st.switch_xnack(false).err(), Some(ENOMEM));
        assert_eq!((held(), st.reserved(), st.accounting), (0, 0, false));
        gpu.limit.store(u64::MAX, Relaxed);
        st.switch_xnack(false)?;
        assert_eq!(held(), 0x28 * P);
        st.clear();
        assert_eq!((held(), st.reserved()), (0, 0));
        Ok(())
    }

    #[test]
    fn errnos_map() {
        assert_eq!(err(SvmError::AddrInUse), EADDRINUSE);
        assert_eq!(err(SvmError::Overflow), EOVERFLOW);
        assert_eq!(err(SvmError::Fault).to_errno(), SvmError::Fault.to_errno());
        assert_eq!(err(SvmError::NoMem).to_errno(), SvmError::NoMem.to_errno());
    }
}
