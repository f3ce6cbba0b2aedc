// SPDX-License-Identifier: GPL-2.0
//! SVM benchmark (not a test: it prints figures, asserts nothing timed),
//! side by side with the kernel's own HMM test driver (`test_hmm`, the
//! dmirror device, `modprobe test_hmm` first):
//!
//!  (a) pages/s of the first GPU touch of cold memory: our retry-fault path
//!      (the virtual GPU's GPU-access interface: walk, fault, hmm_range_fault
//!      over the 2 MiB window, map, read) vs `HMM_DMIRROR_READ` on a fresh
//!      mirror (dmirror faults 32 pages at a time);
//!  (b) GB/s of PREFETCH_LOC to VRAM and back vs `HMM_DMIRROR_MIGRATE_TO_DEV`
//!      / `_TO_SYS` over 2 MiB .. MAX MiB (upstream hmm-tests'
//!      `benchmark_thp_migration` shape).  Note: dmirror's MIGRATE_TO_DEV
//!      also copies the migrated data back to user space for verification,
//!      which our prefetch does not.
//!
//! Usage: kfd-svm-hmm-bench [MAX_MIB] (default 256); RKFD_BENCH_ONLY_B=1
//! skips (a).  Both sides use the same
//! process, freshly mapped and CPU-populated memory for each sample; the
//! best of 3 samples is printed.

use kfd_tests::svm::{svm_gpu, Anon, Ctx, PAGE};
use std::ffi::CString;
use std::time::Instant;

const MIB: usize = 1 << 20;

/// `struct hmm_dmirror_cmd` (lib/test_hmm_uapi.h).
#[repr(C)]
#[derive(Default)]
struct DmirrorCmd {
    addr: u64,
    ptr: u64,
    npages: u64,
    cpages: u64,
    faults: u64,
}

const fn iowr_h(nr: u32) -> u32 {
    (3u32 << 30) | ((std::mem::size_of::<DmirrorCmd>() as u32) << 16) | ((b'H' as u32) << 8) | nr
}
const HMM_DMIRROR_READ: u32 = iowr_h(0x00);
const HMM_DMIRROR_MIGRATE_TO_DEV: u32 = iowr_h(0x02);
const HMM_DMIRROR_MIGRATE_TO_SYS: u32 = iowr_h(0x03);

/// A dmirror file (each open is a fresh mirror with an empty page table).
struct Dmirror(i32);

impl Dmirror {
    fn open() -> Option<Dmirror> {
        let p = CString::new("/dev/hmm_dmirror0").unwrap();
        // SAFETY: valid C string.
        let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        (fd >= 0).then_some(Dmirror(fd))
    }

    fn cmd(&self, req: u32, addr: usize, npages: usize, buf: &mut [u8]) -> Result<DmirrorCmd, i32> {
        let mut c = DmirrorCmd { addr: addr as u64, ptr: buf.as_mut_ptr() as u64, npages: npages as u64, ..Default::default() };
        kfd_tests::kfd::ioctl_fd(self.0, req, &mut c as *mut DmirrorCmd as usize)?;
        Ok(c)
    }
}

impl Drop for Dmirror {
    fn drop(&mut self) {
        // SAFETY: our fd.
        unsafe { libc::close(self.0) };
    }
}

fn secs(f: impl FnOnce() -> Result<(), String>) -> Result<f64, String> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64())
}

fn best(n: usize, mut f: impl FnMut() -> Result<f64, String>) -> Result<f64, String> {
    let mut b = f64::INFINITY;
    for _ in 0..n {
        b = b.min(f()?);
    }
    Ok(b)
}

fn run() -> Result<(), String> {
    let max_mib: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(256);
    let gpu = svm_gpu().ok_or("no SVM-capable GPU")?;
    let dm = Dmirror::open();
    if dm.is_none() {
        println!("# /dev/hmm_dmirror0 missing (modprobe test_hmm): dmirror columns skipped");
    }
    println!("# GPU {} gpu_id {}; best of 3 samples", gpu.name, gpu.gpu_id);

    // RKFD_BENCH_ONLY_B=1: (b) alone (for profiling the migration path).
    if std::env::var_os("RKFD_BENCH_ONLY_B").is_none() {
        // (a) First GPU touch of cold (CPU-populated, GPU-unmapped) memory.
        let size = 64 * MIB;
        let npages = size / PAGE;
        let mut buf = vec![0u8; size];
        let ours = best(3, || {
            let ctx = Ctx::new(&gpu)?;
            ctx.set_xnack(true).map_err(|e| format!("xnack: {e}"))?;
            let mem = Anon::new(size)?;
            mem.fill(1);
            secs(|| ctx.gpu_read(mem.addr, &mut buf).map(|_| ()).map_err(|e| format!("GPU read: {e}")))
        })?;
        // The default range attributes with XNACK on give the GPU ACCESS, so
        // (as upstream svm_range_best_restore_location) a first touch migrates
        // the window to VRAM; that figure is printed for information.  The
        // figure compared with dmirror (which maps in place) prefers system
        // memory (PREFERRED_LOC 0, set before the timed touch): fault + map.
        let migrating = npages as f64 / ours;
        println!("# (a) first touch migrating to VRAM (default attributes, upstream rule): {migrating:.0} pages/s");
        let ours = best(3, || {
            let ctx = Ctx::new(&gpu)?;
            ctx.set_xnack(true).map_err(|e| format!("xnack: {e}"))?;
            let mem = Anon::new(size)?;
            mem.fill(1);
            ctx.prefer(mem.addr, size, 0).map_err(|e| format!("PREFERRED_LOC 0: {e}"))?;
            secs(|| ctx.gpu_read(mem.addr, &mut buf).map(|_| ()).map_err(|e| format!("GPU read: {e}")))
        })?;
        let ours_pps = npages as f64 / ours;
        print!("(a) first touch, {} MiB, in place (PREFERRED_LOC system): rkfd retry faults {:.0} pages/s", size / MIB, ours_pps);
        if dm.is_some() {
            let theirs = best(3, || {
                let d = Dmirror::open().ok_or("dmirror")?;
                let mem = Anon::new(size)?;
                mem.fill(1);
                secs(|| d.cmd(HMM_DMIRROR_READ, mem.addr, npages, &mut buf).map(|_| ()).map_err(|e| format!("dmirror read: {e}")))
            })?;
            let theirs_pps = npages as f64 / theirs;
            println!(", dmirror READ {:.0} pages/s, ratio {:.2}x", theirs_pps, ours_pps / theirs_pps);
        } else {
            println!();
        }
    }

    // (b) Migration throughput.
    println!("(b) size_MiB  to_vram_GBps  to_sys_GBps  dmirror_to_dev_GBps  dmirror_to_sys_GBps  ratio_to  ratio_back");
    let mut mib = 2;
    while mib <= max_mib {
        let size = mib * MIB;
        let npages = size / PAGE;
        let gb = size as f64 / 1e9;
        let ctx = Ctx::new(&gpu)?;
        ctx.set_xnack(true).map_err(|e| format!("xnack: {e}"))?;
        let (mut to, mut back) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            let mem = Anon::new(size)?;
            mem.fill(2);
            to = to.min(secs(|| ctx.prefetch(mem.addr, size, gpu.gpu_id).map_err(|e| format!("prefetch: {e}")))?);
            back = back.min(secs(|| ctx.prefetch(mem.addr, size, 0).map_err(|e| format!("prefetch 0: {e}")))?);
        }
        let (ours_to, ours_back) = (gb / to, gb / back);
        print!("    {mib:8}  {ours_to:12.3}  {ours_back:11.3}");
        if dm.is_some() {
            let mut out = vec![0u8; size];
            let (mut dto, mut dback) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..3 {
                let d = Dmirror::open().ok_or("dmirror")?;
                let mem = Anon::new(size)?;
                mem.fill(2);
                dto = dto.min(secs(|| d.cmd(HMM_DMIRROR_MIGRATE_TO_DEV, mem.addr, npages, &mut out).map(|_| ()).map_err(|e| format!("to dev: {e}")))?);
                dback = dback.min(secs(|| d.cmd(HMM_DMIRROR_MIGRATE_TO_SYS, mem.addr, npages, &mut out).map(|_| ()).map_err(|e| format!("to sys: {e}")))?);
            }
            let (dt, db) = (gb / dto, gb / dback);
            println!("  {dt:19.3}  {db:19.3}  {:8.2}  {:10.2}", ours_to / dt, ours_back / db);
        } else {
            println!();
        }
        mib *= 2;
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("kfd-svm-hmm-bench: {e}");
        std::process::exit(1);
    }
}
