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
        let (guard, ranges) = self.lock_covered(&mm, start, end)?;
        // For SMI events: the range's PREFERRED_LOC (at `start`).
        let preferred = ranges.containing(start).and_then(|k| ranges.tree.get(&k)).map_or(super::LOCATION_UNDEFINED, |r| r.preferred);
        match target {
            Target::Gpu(dev, counters) => {
                let sdev = dev.svm.as_ref().ok_or(EINVAL)?;
                let m = crate::smi::Migration::to_vram(dev.gpu_id(), start, end, (dev.gpu_id(), preferred), crate::smi::MIGRATE_TRIGGER_PREFETCH);
                match crate::smi::migration(&self.owner, m, || sdev.migrate_to_vram(&guard, start, end, counters)) {
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
                        let m = crate::smi::Migration::to_ram(dev.gpu_id(), start, end, (super::LOCATION_SYSMEM, preferred), crate::smi::MIGRATE_TRIGGER_PREFETCH);
                        moved += crate::smi::migration(&self.owner, m, || sdev.migrate_to_ram(&guard, start, end))?;
                    }
                }
                Ok(moved)
            }
        }
    }
}

/// The machinery's part of SET_ATTR (upstream `svm_range_set_attr` after
/// the range update: `svm_range_trigger_migration` and the preferred
/// location the fault handler uses), called by the range bookkeeping once
/// the attributes are recorded, with none of its locks held.  `attrs` are
/// `(type, value)` pairs already validated there.  PREFETCH_LOC or
/// PREFERRED_LOC naming a GPU without device-private VRAM records the
/// attribute only (nothing to migrate to).
pub(crate) fn apply_attrs(process: &crate::process::Process, start: u64, end: u64, attrs: &[(u32, u32)]) -> Result {
    use crate::uapi;
    let mut access = KVec::new();
    for &(ty, value) in attrs {
        if ty == uapi::KFD_IOCTL_SVM_ATTR_ACCESS || ty == uapi::KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE {
            access.push(value, GFP_KERNEL)?;
        }
        // A GPU losing access loses its mappings (upstream
        // `svm_range_unmap_from_gpus` from SET_ATTR).
        if ty == uapi::KFD_IOCTL_SVM_ATTR_NO_ACCESS {
            match process.hmm.unmap_gpu(value, start, end) {
                Ok(()) => {}
                // No VM or no SVM on that GPU: nothing mapped there.
                Err(e) if e == ENODEV || e == EINVAL => {}
                Err(e) => return Err(e),
            }
        }
        if ty != uapi::KFD_IOCTL_SVM_ATTR_PREFERRED_LOC && ty != uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC {
            continue;
        }
        let gpu = if value == super::LOCATION_SYSMEM || value == super::LOCATION_UNDEFINED {
            None
        } else {
            let mut inner = process.inner.lock();
            let pdd = inner.pdd(value)?;
            if pdd.dev.svm.is_none() {
                continue;
            }
            Some((pdd.dev.clone(), pdd.counters.clone()))
        };
        if ty == uapi::KFD_IOCTL_SVM_ATTR_PREFERRED_LOC {
            process.hmm.set_preferred(start, end, value)?;
        } else {
            let target = match gpu.as_ref() {
                Some((d, c)) => Target::Gpu(d, c),
                None if value == super::LOCATION_SYSMEM => Target::System,
                None => continue,
            };
            process.hmm.prefetch(start, end, target)?;
        }
    }
    // XNACK off: no retry faults, so the GPUs given access get the range
    // mapped now (upstream `svm_range_validate_and_map` from SET_ATTR); the
    // restore worker keeps the mappings valid after invalidations.
    if !access.is_empty() && !process.inner.lock().xnack_enabled {
        process.hmm.map_now(start, end, &access)?;
    }
    Ok(())
}

impl Svm {
    /// Maps `[start, end)` on GPUs `gpu_ids` now (faulting pages in;
    /// writable where the VMA allows).
    pub(crate) fn map_now(self: &Arc<Self>, start: u64, end: u64, gpu_ids: &[u32]) -> Result {
        self.run_pending();
        let mm = self.mm.mmget_not_zero().ok_or(ESRCH)?;
        let (guard, mut ranges) = self.lock_covered(&mm, start, end)?;
        for k in ranges.overlapping(start, end)? {
            let Some(r) = ranges.tree.get_mut(&k) else { continue };
            let (s, e) = (r.start().max(start), r.end().min(end));
            for &gpu in gpu_ids {
                match self.map_range_on(&guard, r, gpu, s, e, true) {
                    // A read-only VMA: map it read-only.
                    Err(err) if err == EPERM || err == EFAULT => self.map_range_on(&guard, r, gpu, s, e, false)?,
                    // A GPU of the process without a VM or SVM: nothing to map.
                    Err(err) if err == ENODEV || err == EOPNOTSUPP => {}
                    other => other?,
                }
            }
        }
        Ok(())
    }
}
