// SPDX-License-Identifier: GPL-2.0

//! The `AMDKFD_IOC_SVM` ioctl (`kfd_ioctl_svm` in `kfd_chardev.c`,
//! `svm_range_set_attr`, `svm_range_get_attr`, `svm_range_is_valid`) and
//! the SVM check of `ALLOC_MEMORY_OF_GPU`.
//!
//! SET_ATTR, as upstream: pending `munmap` work first, then under
//! `mmap_lock` for writing and [`Svms::list`](super::Svms): the VMA and
//! memory-object checks, the XNACK-off reservation, the range update
//! (creating and splitting ranges, each with its own notifier), then,
//! with the lock downgraded to read, the machinery (`migrate`:
//! NO_ACCESS unmaps, PREFETCH_LOC migrates, XNACK off maps).  GET_ATTR
//! reads the ranges under `mmap_lock` (read) and the list lock.  What is
//! needed from `Process::inner` is copied out first ([`Snapshot`]): it is
//! never taken under the SVM locks (a GPU driver may take the mmap lock
//! under `inner`, for user pointers).  With XNACK off every page the
//! ranges cover is reserved against the GPU driver's system-memory limit
//! as user-pointer memory (upstream `svm_range_new(.., update_mem_usage)`;
//! debugfs `kfd/mem_limit` shows it).

use kernel::prelude::*;

use super::{
    err,
    logic::{
        self,
        attr::{self, Attr, Gpus, LOCATION_SYSMEM, LOCATION_UNDEFINED, MAX_GPU_INSTANCE},
        ranges::Span,
    },
    migrate::GpuOfProcess,
    range::Reshape,
    device_supports_svm,
};
use crate::{
    kabi::hmm::MmRead,
    process::{Process, ProcessInner},
    uapi,
};

const _: () = assert!(attr::ARGS_HEADER_SIZE as usize == core::mem::size_of::<uapi::kfd_ioctl_svm_args>());
const _: () = assert!(attr::ATTR_SIZE as usize == core::mem::size_of::<uapi::kfd_ioctl_svm_attribute>());

/// The SVM part of `ALLOC_MEMORY_OF_GPU` (upstream `kfd_ioctl_alloc_memory_of_gpu`
/// under `CONFIG_HSA_AMD_SVM`): a GPU VA (unless VRAM without VA) or a user
/// pointer that overlaps an SVM range is `-EADDRINUSE`.  Takes the SVM
/// list lock alone; the caller takes `Process::inner` after.
pub(crate) fn check_alloc(process: &Process, args: &uapi::kfd_ioctl_alloc_memory_of_gpu_args) -> Result {
    let list = process.svms.list.lock();
    let vram_without_va = args.va_addr == 0 && args.flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM != 0;
    if !vram_without_va && list.overlaps_bytes(args.va_addr, args.size) {
        return Err(EADDRINUSE);
    }
    if args.flags & uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 && list.overlaps_bytes(args.mmap_offset, args.size) {
        return Err(EADDRINUSE);
    }
    Ok(())
}

/// What the ioctl needs from `Process::inner`, copied out so the lock is
/// not held with the SVM locks.
struct Snapshot {
    ids: [u32; MAX_GPU_INSTANCE],
    n: usize,
    supported: u64,
    xnack_enabled: bool,
    /// Some GPU VM is bound (upstream: `p->kgd_process_info` exists).
    has_vm: bool,
    /// The interval overlaps a memory object mapped on a GPU.
    overlaps_mem: bool,
    /// The process's devices, for migration (SET_ATTR only).
    gpus: KVec<GpuOfProcess>,
}

impl Snapshot {
    /// Copies what the ioctl needs; `bytes` is the interval `[start, end)`
    /// for the memory-object check (`None`: it overflowed, which is
    /// reported later in upstream's order); `with_gpus`: the devices too.
    fn take(inner: &ProcessInner, bytes: Option<(u64, u64)>, with_gpus: bool) -> Result<Self> {
        let mut s = Snapshot {
            ids: [0; MAX_GPU_INSTANCE],
            n: 0,
            supported: 0,
            xnack_enabled: inner.xnack_enabled,
            has_vm: false,
            overlaps_mem: bytes.is_some_and(|(start, end)| crate::memory::mapped_va_overlaps(inner, start, end)),
            gpus: KVec::new(),
        };
        for (i, pdd) in inner.pdds.iter().take(MAX_GPU_INSTANCE).enumerate() {
            s.ids[i] = pdd.dev.gpu_id();
            if device_supports_svm(&pdd.dev) {
                s.supported |= 1 << i;
            }
            s.has_vm |= pdd.vm.is_some();
            s.n = i + 1;
            if with_gpus {
                s.gpus.push(GpuOfProcess { dev: pdd.dev.clone(), counters: pdd.counters.clone() }, GFP_KERNEL)?;
            }
        }
        Ok(s)
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

/// The attributes of one call: up to [`AttrList::INLINE`] in place (ROCr
/// passes one to four), more on the heap.
struct AttrList {
    inline: [Attr; AttrList::INLINE],
    heap: KVec<Attr>,
    n: usize,
}

impl AttrList {
    const INLINE: usize = 16;

    fn as_slice(&self) -> &[Attr] {
        if self.n <= Self::INLINE {
            &self.inline[..self.n]
        } else {
            &self.heap
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Attr] {
        if self.n <= Self::INLINE {
            &mut self.inline[..self.n]
        } else {
            &mut self.heap
        }
    }
}

/// Reads the `nattr` attributes that follow the header.
fn read_attrs(buf: &[u8], nattr: u32) -> Result<AttrList> {
    let n = nattr as usize;
    let bytes = buf.get(attr::ARGS_HEADER_SIZE as usize..).ok_or(EINVAL)?;
    let bytes = bytes.get(..n.checked_mul(8).ok_or(EINVAL)?).ok_or(EINVAL)?;
    let mut list = AttrList { inline: [Attr::default(); AttrList::INLINE], heap: KVec::new(), n };
    if n > AttrList::INLINE {
        list.heap = KVec::from_elem(Attr::default(), n, GFP_KERNEL)?;
    }
    for (c, a) in bytes.chunks_exact(8).zip(list.as_mut_slice()) {
        let ty = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
        let value = u32::from_ne_bytes([c[4], c[5], c[6], c[7]]);
        *a = Attr::new(ty, value);
    }
    Ok(list)
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
        attr::OP_SET_ATTR => set_attr(process, req, attrs.as_slice()),
        attr::OP_GET_ATTR => {
            let r = get_attr(process, req, attrs.as_mut_slice());
            // The answers go back even on failure, as upstream's in-place
            // update of the copied-back buffer.
            write_attrs(buf, attrs.as_slice());
            r
        }
        _ => Err(EINVAL),
    }
}

/// `svm_range_is_valid` after the overflow check: every page in VMAs
/// without `VM_IO|VM_PFNMAP|VM_MIXEDMAP` (`-EFAULT`), no GPU-mapped memory
/// object in the way (`-EADDRINUSE`).
fn check_vmas(guard: &MmRead<'_>, start: u64, end: u64, snap: &Snapshot) -> Result {
    if !guard.all_usable(start, end) {
        return Err(EFAULT);
    }
    if snap.overlaps_mem {
        return Err(EADDRINUSE);
    }
    Ok(())
}

/// `svm_range_set_attr`.
fn set_attr(process: &Process, req: attr::PageRequest, attrs: &[Attr]) -> Result {
    let svms = &process.svms;
    let bytes = attr::check_range_overflow(&req);
    // The devices are needed (and their references taken) only to prefetch
    // to a GPU.
    let to_gpu = attrs.iter().any(|a| {
        a.ty == uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC && a.value != LOCATION_UNDEFINED && a.value != LOCATION_SYSMEM
    });
    let snap = Snapshot::take(&process.inner.lock(), bytes.ok(), to_gpu)?;
    attr::check_set_attrs(attrs, &snap.gpus()).map_err(err)?;
    if !snap.has_vm {
        return Err(EINVAL);
    }
    let (start, end) = bytes.map_err(err)?;
    // Upstream `svm_range_list_lock_and_flush_work`: no worker runs, the
    // pending `munmap` work is done here, under `mmap_lock` for writing
    // (new notifiers need it), which is then downgraded for the migration.
    let _flush = svms.flush.lock();
    let mm = svms.mm_user().ok_or(ESRCH)?;
    let mut guard = MmRead::new_write(&mm);
    let mut list = svms.list.lock();
    if list.dead {
        return Err(ESRCH);
    }
    svms.process_unmaps(&guard, &mut list)?;
    check_vmas(&guard, start, end, &snap)?;
    let span = Span::new(req.start, req.last());
    let gpus = snap.gpus();
    // Every notifier the update needs, before anything changes.
    let reshape = Reshape::new(svms, list.tree.set_attr_reshaped(span, attrs, &gpus, snap.xnack_enabled))?;
    // XNACK off: the pages that get new ranges are reserved against the
    // system-memory limit first; over it, `ENOMEM` and nothing is recorded
    // (upstream `svm_range_add` -> `svm_range_new` fails).
    let new_bytes = (span.npages() - list.tree.covered_pages(span)) << attr::PAGE_SHIFT;
    list.reserve(new_bytes)?;
    let r = list.tree.set_attr(span, attrs, &gpus, snap.xnack_enabled);
    list.tree.store_mut().trim();
    if r.is_err() {
        list.unreserve(new_bytes);
    }
    r.map_err(err)?;
    reshape.finish(&guard, &mut list.tree, span.start.saturating_sub(1), span.last.saturating_add(1));
    guard.downgrade();
    svms.apply_attrs(&guard, &mut list, start, end, attrs, &snap.gpus, snap.xnack_enabled)
}

/// `svm_range_get_attr`.
fn get_attr(process: &Process, req: attr::PageRequest, attrs: &mut [Attr]) -> Result {
    // Upstream `flush_work(&p->svms.deferred_list_work)`.
    process.svms.run_pending();
    let (start, end) = attr::check_range_overflow(&req).map_err(err)?;
    let snap = Snapshot::take(&process.inner.lock(), Some((start, end)), false)?;
    let mm = process.svms.mm_user().ok_or(ESRCH)?;
    let guard = MmRead::new(&mm);
    check_vmas(&guard, start, end, &snap)?;
    let span = Span::new(req.start, req.last());
    let list = process.svms.list.lock();
    logic::get_attr(&list.tree, span, attrs, &snap.gpus(), snap.xnack_enabled).map_err(err)
}

#[kunit_tests(rkfd_svm)]
mod tests {
    use super::*;
    use logic::{attr::*, SvmError};

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
        assert_eq!(attrs.as_slice(), &[Attr::new(ATTR_ACCESS, 0x2222), Attr::new(ATTR_GRANULARITY, 3)]);
        assert_eq!(read_attrs(&buf, 3).err(), Some(EINVAL));
        write_attrs(&mut buf, &[Attr::new(ATTR_NO_ACCESS, 7)]);
        assert_eq!(read_attrs(&buf, 1)?.as_slice()[0], Attr::new(ATTR_NO_ACCESS, 7));
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
