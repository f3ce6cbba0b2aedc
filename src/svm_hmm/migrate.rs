// SPDX-License-Identifier: GPL-2.0

//! Migration on request: PREFETCH_LOC (upstream `svm_range_trigger_migration`
//! → `svm_migrate_to_vram` / `svm_migrate_vram_to_ram`).  The mechanism is
//! in `kabi::hmm::SvmDev` (migrate_vma_setup/pages/finalize with the GPU
//! driver's copy engine); the CPU-touch direction is the shim's
//! `migrate_to_ram`.

use kernel::{prelude::*, sync::Arc};

use super::Svm;
use crate::{
    device::Device,
    kabi::log::kfd_info,
    procfs::ProcCounters,
};

/// Where PREFETCH_LOC sends a range.
pub(crate) enum Target<'a> {
    /// System memory (location 0).
    System,
    /// A GPU's VRAM, accounted to the process's counters of that GPU.
    Gpu(&'a Arc<Device>, &'a Arc<ProcCounters>),
}

impl Svm {
    /// PREFETCH_LOC of `[start, end)`: migrates its pages to `target` and
    /// returns how many moved.  Ranges are created for parts without one;
    /// `EFAULT` if part of it is not mapped by a usable VMA.  VRAM
    /// exhaustion is not an error: what does not fit stays in system
    /// memory (logged), as upstream falls back to system memory.
    pub(crate) fn prefetch(self: &Arc<Self>, start: u64, end: u64, target: Target<'_>) -> Result<u64> {
        self.run_pending();
        let mm = self.mm.mmget_not_zero().ok_or(ESRCH)?;
        let (guard, _ranges) = self.lock_covered(&mm, start, end)?;
        match target {
            Target::Gpu(dev, counters) => {
                let sdev = dev.svm.as_ref().ok_or(EINVAL)?;
                match sdev.migrate_to_vram(&guard, start, end, counters) {
                    Ok(n) => Ok(n),
                    Err(e) if e == ENOMEM || e == ENOSPC => {
                        kfd_info!(
                            "GPU {}: VRAM full, prefetch of {:#x}..{:#x} left (part of) it in system memory\n",
                            dev.gpu_id(),
                            start,
                            end
                        );
                        Ok(0)
                    }
                    Err(e) => Err(e),
                }
            }
            Target::System => {
                let mut moved = 0;
                for dev in self.devices().iter() {
                    if let Some(sdev) = dev.svm.as_ref() {
                        moved += sdev.migrate_to_ram(&guard, start, end)?;
                    }
                }
                Ok(moved)
            }
        }
    }
}

/// `AMDKFD_IOC_SVM` until the range bookkeeping's handler lands: SET_ATTR
/// with PREFERRED_LOC and PREFETCH_LOC only (upstream semantics for those:
/// a GPU's `gpu_id`, 0 for system memory; page-aligned non-empty range);
/// any other attribute or GET_ATTR: `EOPNOTSUPP`.  The real handler calls
/// [`Svm::set_preferred`] and [`Svm::prefetch`] the same way.
pub(crate) fn svm_ioctl_interim(process: &crate::process::Process, buf: &mut [u8]) -> Result {
    use crate::uapi;
    const HDR: usize = 24;
    let word = |o: usize| -> Result<u64> {
        let b = buf.get(o..o + 8).ok_or(EINVAL)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_ne_bytes(a))
    };
    let (start, size) = (word(0)?, word(8)?);
    let opn = word(16)?;
    let (op, nattr) = ((opn & 0xffff_ffff) as u32, (opn >> 32) as u32);
    let page = super::PAGE;
    if op != uapi::KFD_IOCTL_SVM_OP_SET_ATTR {
        return Err(EOPNOTSUPP);
    }
    let end = start.checked_add(size).ok_or(EINVAL)?;
    if size == 0 || start % page != 0 || size % page != 0 {
        return Err(EINVAL);
    }
    let mut attrs = KVec::new();
    for i in 0..nattr as usize {
        let a = word(HDR + 8 * i)?;
        attrs.push(((a & 0xffff_ffff) as u32, (a >> 32) as u32), GFP_KERNEL)?;
    }
    for &(ty, _) in attrs.iter() {
        if ty != uapi::KFD_IOCTL_SVM_ATTR_PREFERRED_LOC && ty != uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC {
            return Err(EOPNOTSUPP);
        }
    }
    for &(ty, value) in attrs.iter() {
        let gpu = if value == super::LOCATION_SYSMEM || value == super::LOCATION_UNDEFINED {
            None
        } else {
            let mut inner = process.inner.lock();
            let pdd = inner.pdd(value)?;
            if pdd.dev.svm.is_none() {
                return Err(EINVAL);
            }
            Some((pdd.dev.clone(), pdd.counters.clone()))
        };
        if ty == uapi::KFD_IOCTL_SVM_ATTR_PREFERRED_LOC {
            process.hmm.set_preferred(start, end, value)?;
        } else {
            let target = match gpu.as_ref() {
                Some((d, c)) => Target::Gpu(d, c),
                None if value == super::LOCATION_SYSMEM => Target::System,
                None => return Err(EINVAL),
            };
            process.hmm.prefetch(start, end, target)?;
        }
    }
    Ok(())
}
