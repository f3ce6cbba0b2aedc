// SPDX-License-Identifier: GPL-2.0

//! Per-process sysfs: `/sys/class/kfd/kfd/proc/<pid>/`.
//!
//! C: `kfd_procfs_*` in `kfd_process.c`.  Layout as upstream: `pasid`
//! (always "0", as upstream 7.3 since its PASIDs became per-VM; debugfs
//! `pasid_<gpu_id>` has them), then per device `vram_<gpu_id>` and
//! `sdma_<gpu_id>`, the directories `stats_<gpu_id>/` (`evicted_ms`),
//! `counters_<gpu_id>/` (SVM: `faults`, `page_in`, `page_out`) and `queues/`.  Values
//! are atomics in [`ProcCounters`], shared by the driver code that updates
//! them and the files that show them, so showing a file takes no lock and a
//! directory can be removed while any rkfd lock is held.

use kernel::{
    prelude::*,
    str::CString,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    }, //
};

use crate::kabi::{
    hmm::{PageOwner, PageOwnerOps},
    sysfs::{Dir, Parent, Show, ShowBuffer},
};

/// What the per-process files of one device show.  Device pages hold a
/// reference on the counters of the process that migrated them
/// ([`PageOwner`]).
#[repr(C)]
pub(crate) struct ProcCounters {
    /// For the HMM shim's upcalls (first field: [`PageOwner`]'s contract).
    page_owner: PageOwnerOps,
    /// The device.
    pub(crate) gpu_id: u32,
    /// Bytes of VRAM allocated through `ALLOC_MEMORY_OF_GPU`.
    pub(crate) vram: Atomic<u64>,
    /// SDMA activity (µs/100); no SDMA engine runs yet.
    pub(crate) sdma: Atomic<u64>,
    /// Bytes of GTT memory objects (rkfd extension, `mem_info`).
    pub(crate) gtt: Atomic<u64>,
    /// Bytes of user-pointer memory objects (rkfd extension, `mem_info`).
    pub(crate) userptr: Atomic<u64>,
    /// Bytes of SVM ranges resident on this GPU (rkfd extension, `mem_info`).
    pub(crate) svm: Atomic<u64>,
    /// Nanoseconds the process's queues on this device spent evicted
    /// (upstream `pdd->evict_duration_counter`, in jiffies there): added
    /// by `crate::queue::restore_process` when the last eviction ends;
    /// `stats_<gpu_id>/evicted_ms` shows it in milliseconds.
    pub(crate) evicted_ns: Atomic<u64>,
    /// The pdd's PASID: the one the GPU driver gave the VM `ACQUIRE_VM`
    /// bound, 0 before and after teardown (upstream `pdd->pasid`; debugfs
    /// `pasid_<gpu_id>`).  The only copy (`ProcessDevice::pasid` reads it),
    /// so readers that do not take `Process::inner` see it too: debugfs
    /// and the interrupt path's lookup (`crate::process::find_by_pasid`).
    pub(crate) pasid: Atomic<u32>,
    /// GPU retry faults handled (`counters_<id>/faults`).
    pub(crate) faults: Atomic<u64>,
    /// Pages migrated to this GPU's VRAM (`counters_<id>/page_in`).
    pub(crate) page_in: Atomic<u64>,
    /// Pages migrated from this GPU's VRAM to system memory
    /// (`counters_<id>/page_out`).
    pub(crate) page_out: Atomic<u64>,
    /// The process, for SMI events of its device pages (a CPU fault
    /// migrating them back names the process through these counters).
    pub(crate) owner: crate::smi::Owner,
}

impl ProcCounters {
    /// Zeroed counters of device `gpu_id`, for the current process (its
    /// opener creates it).
    pub(crate) fn new(gpu_id: u32) -> Result<Arc<Self>> {
        Ok(Arc::new(
            ProcCounters {
                page_owner: PageOwnerOps::of::<Self>(),
                gpu_id,
                vram: Atomic::new(0),
                sdma: Atomic::new(0),
                gtt: Atomic::new(0),
                userptr: Atomic::new(0),
                svm: Atomic::new(0),
                evicted_ns: Atomic::new(0),
                pasid: Atomic::new(0),
                faults: Atomic::new(0),
                page_in: Atomic::new(0),
                page_out: Atomic::new(0),
                owner: crate::smi::Owner::current(),
            },
            GFP_KERNEL,
        )?)
    }
}

// SAFETY: `#[repr(C)]`, and its first field is `PageOwnerOps::of::<Self>()`
// (`ProcCounters::new` is the only constructor).
unsafe impl PageOwner for ProcCounters {
    fn device_bytes_added(&self, bytes: u64) {
        self.svm.fetch_add(bytes, Relaxed);
    }

    fn device_bytes_freed(&self, bytes: u64) {
        self.svm.fetch_sub(bytes, Relaxed);
    }

    fn paged_in(&self, pages: u64) {
        self.page_in.fetch_add(pages, Relaxed);
    }

    fn paged_out(&self, pages: u64) {
        self.page_out.fetch_add(pages, Relaxed);
    }

    fn cpu_migrated(&self, start: u64, end: u64, t0_ns: u64, ret: i64) {
        // Takes only the SMI locks (leaves).
        crate::smi::migration_cpu_fault(&self.owner, self.gpu_id, start, end, t0_ns as i64, ret);
    }
}

/// Files of `proc/<pid>/`: `pasid`, `mem_info` (rkfd extension), then
/// `vram_<id>`, `sdma_<id>` per device.
struct PidFiles {
    devices: KVec<Arc<ProcCounters>>,
}

/// Index of the first per-device file.
const FIRST_DEVICE_FILE: usize = 2;

impl PidFiles {
    /// `mem_info`: the process's memory across all GPUs, in KiB, one
    /// `name value` line each (for leak hunts by diffing sysfs).
    fn mem_info(&self, out: &mut ShowBuffer<'_>) -> Result {
        let sum = |f: fn(&ProcCounters) -> u64| self.devices.iter().map(|d| f(d)).sum::<u64>() >> 10;
        out.emit(fmt!("vram_used {}\n", sum(|d| d.vram.load(Relaxed))))?;
        out.emit(fmt!("gtt_allocated {}\n", sum(|d| d.gtt.load(Relaxed))))?;
        out.emit(fmt!("userptr_allocated {}\n", sum(|d| d.userptr.load(Relaxed))))?;
        out.emit(fmt!("svm_allocated {}\n", sum(|d| d.svm.load(Relaxed))))
    }
}

impl Show for PidFiles {
    fn show(&self, file: usize, out: &mut ShowBuffer<'_>) -> Result {
        match file {
            // Upstream 7.3 prints 0: its PASIDs are per VM (debugfs
            // `pasid_<gpu_id>` shows them).
            0 => return out.emit(fmt!("{}\n", 0)),
            1 => return self.mem_info(out),
            _ => {}
        }
        let i = file - FIRST_DEVICE_FILE;
        let dev = self.devices.get(i / 2).ok_or(EINVAL)?;
        let value = if i % 2 == 0 {
            dev.vram.load(Relaxed)
        } else {
            dev.sdma.load(Relaxed)
        };
        out.emit(fmt!("{}\n", value))
    }
}

/// Files of `stats_<id>/`: `evicted_ms` (upstream `kfd_procfs_stats_show`:
/// `jiffies_to_msecs` of the eviction time; rkfd counts nanoseconds, so
/// evictions shorter than a jiffy add up).
struct StatsFiles(Arc<ProcCounters>);

impl Show for StatsFiles {
    fn show(&self, _file: usize, out: &mut ShowBuffer<'_>) -> Result {
        out.emit(fmt!("{}\n", self.0.evicted_ns.load(Relaxed) / 1_000_000))
    }
}

/// Files of `counters_<id>/`: `faults`, `page_in`, `page_out` (upstream
/// `kfd_procfs_add_sysfs_counters`, SVM).
struct CounterFiles(Arc<ProcCounters>);

impl Show for CounterFiles {
    fn show(&self, file: usize, out: &mut ShowBuffer<'_>) -> Result {
        let c = &self.0;
        let value = match file {
            0 => c.faults.load(Relaxed),
            1 => c.page_in.load(Relaxed),
            _ => c.page_out.load(Relaxed),
        };
        out.emit(fmt!("{}\n", value))
    }
}

/// The `proc/` directory under the kfd device.
pub(crate) fn create_root() -> Result<Arc<Dir>> {
    Dir::new_empty(Parent::KfdDevice, c"proc")
}

/// A process's sysfs directory; removed when dropped.
pub(crate) struct ProcSysfs {
    /// Children hold their parent, so dropping this removes the whole tree.
    _dirs: KVec<Arc<Dir>>,
    /// `queues/`: `crate::queue` adds `<qid>/` directories.
    pub(crate) queues: Arc<Dir>,
}

impl ProcSysfs {
    /// Creates `proc/<pid>/` for a process using `devices`.
    pub(crate) fn new(root: &Arc<Dir>, pid: i32, devices: &[Arc<ProcCounters>]) -> Result<Self> {
        let mut names = KVec::new();
        names.push(CString::try_from_fmt(fmt!("pasid"))?, GFP_KERNEL)?;
        names.push(CString::try_from_fmt(fmt!("mem_info"))?, GFP_KERNEL)?;
        for d in devices {
            names.push(CString::try_from_fmt(fmt!("vram_{}", d.gpu_id))?, GFP_KERNEL)?;
            names.push(CString::try_from_fmt(fmt!("sdma_{}", d.gpu_id))?, GFP_KERNEL)?;
        }
        let mut refs = KVec::new();
        for n in names.iter() {
            refs.push(&**n, GFP_KERNEL)?;
        }
        let mut counters = KVec::new();
        for d in devices {
            counters.push(d.clone(), GFP_KERNEL)?;
        }
        let files = Arc::new(PidFiles { devices: counters }, GFP_KERNEL)?;
        let pid_name = CString::try_from_fmt(fmt!("{}", pid))?;
        let pid_dir = Dir::new(Parent::Dir(root), &pid_name, &refs, files)?;

        let mut dirs = KVec::new();
        for d in devices {
            let name = CString::try_from_fmt(fmt!("stats_{}", d.gpu_id))?;
            let stats = Arc::new(StatsFiles(d.clone()), GFP_KERNEL)?;
            dirs.push(Dir::new(Parent::Dir(&pid_dir), &name, &[c"evicted_ms"], stats)?, GFP_KERNEL)?;
            let name = CString::try_from_fmt(fmt!("counters_{}", d.gpu_id))?;
            let counters = Arc::new(CounterFiles(d.clone()), GFP_KERNEL)?;
            dirs.push(
                Dir::new(Parent::Dir(&pid_dir), &name, &[c"faults", c"page_in", c"page_out"], counters)?,
                GFP_KERNEL,
            )?;
        }
        let queues = Dir::new_empty(Parent::Dir(&pid_dir), c"queues")?;
        dirs.push(queues.clone(), GFP_KERNEL)?;
        dirs.push(pid_dir, GFP_KERNEL)?;
        Ok(ProcSysfs { _dirs: dirs, queues })
    }
}

/// debugfs `kfd/proc/<pid>/pasid_<gpu_id>`: the pdd's PASID (upstream
/// `kfd_debugfs_pasid_read`: `"%u\n"`).
pub(crate) struct PddPasid(pub(crate) Arc<ProcCounters>);

impl crate::debugfs::Show for PddPasid {
    fn show(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        writeln!(f, "{}", self.0.pasid.load(Relaxed))
    }
}
