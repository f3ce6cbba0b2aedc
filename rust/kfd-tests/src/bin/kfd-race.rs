// SPDX-License-Identifier: GPL-2.0
//! kfd-race: threads racing each other over the same KFD objects, run
//! inside the test VM.
//!
//!   kfd-race [--seed S] [--rounds N] [--ops N] [--only NAME]
//!
//! Defaults: a random seed (printed first), 4 rounds per race, 300
//! operations per thread per round.  `make soak` passes 10x.
//!
//! Every round of every race runs in a fresh forked process (a fresh KFD
//! process: several races end it), bounded by a timeout: a round that hangs
//! is killed and fails.  A round passes when every ioctl answered success
//! or a clear errno (fuzz.rs's list), nothing crashed, the process ended
//! the way the race meant, and afterwards the GPU memory it used is given
//! back (available memory of every GPU is what it was).  The kernel side
//! (no WARN, oops, lockdep or KFENCE report, no leak at rmmod) is checked by
//! the guest runner's dmesg and kmemleak scan.
//!
//! Adding a race is one function and one line in [`RACES`]: a race that
//! needs a feature the GPUs may not have (SVM: a GPU with
//! HSA_CAP_SVMAPI_SUPPORTED; queues: CREATE_QUEUE served) names it in
//! `needs`, and is skipped (and said so) without it.  The SVM and queue
//! races are in race_svmq.rs: munmap (whole, middle) / mprotect / fork vs
//! SET_ATTR / PREFETCH_LOC vs GPU touch (GPU reads must show the CPU's
//! data, never another page's or a forked child's); migration to VRAM and
//! back vs GPU and CPU touch (exact data); DESTROY_QUEUE vs packets, write
//! pointers and doorbells vs UPDATE_QUEUE; process exit and SIGKILL with
//! busy queues; SET_XNACK_MODE vs CREATE_QUEUE (never set while a queue
//! exists).  Each allows only the errnos the ABI gives for its
//! interleaving, and ends with a clean round trip (SVM: a fresh range
//! through VRAM and back exactly; queues: AQL packets complete their
//! signal, an SDMA fence lands).
//!
//! The seed fixes the choices (delays, sizes, which thread does what);
//! the interleaving is the machine's.

use kfd_tests::fuzz;
#[path = "../race_svmq.rs"]
mod svmq;

use fuzz::Rng;
use kfd_tests::harness::{ensure, Check, Harness};
use kfd_tests::kfd::{errno_name, ioctl_fd, Kfd};
use kfd_tests::ops::*;
use kfd_uapi as uapi;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Seconds a round may take before it is killed as hung.
const ROUND_SECS: u32 = 120;

/// What a race needs from the module.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Needs {
    Nothing,
    /// `AMDKFD_IOC_SVM` implemented and a GPU with HSA_CAP_SVMAPI_SUPPORTED.
    Svm,
    /// Queues served: a valid CREATE_QUEUE succeeds on every GPU.
    Queues,
}

/// What a race function gets.
struct Ctx {
    gpus: Vec<TopoGpu>,
    ops: usize,
    /// Unclear errnos and other problems seen by any thread.
    problems: Mutex<Vec<String>>,
    /// Calls that succeeded and that failed with a clear errno: a round
    /// with no successful call raced nothing and fails.
    ok: AtomicUsize,
    clear: AtomicUsize,
    /// Race-specific count printed with the round (e.g. CPU mappings made).
    extra: AtomicUsize,
}

impl Ctx {
    fn problem(&self, what: String) {
        let mut p = self.problems.lock().unwrap();
        if p.len() < 8 {
            p.push(what);
        }
    }

    /// Records `r` unless it is success or a clear errno of `nr`.
    fn check(&self, r: Result<i32, i32>, nr: u32, what: &str) -> bool {
        match r {
            Ok(_) => {
                self.ok.fetch_add(1, Relaxed);
                true
            }
            Err(e) if fuzz::is_clear_errno_for(nr, e) => {
                self.clear.fetch_add(1, Relaxed);
                false
            }
            Err(e) => {
                self.problem(format!("{what}: unclear errno {}", fuzz::errno_str(e)));
                false
            }
        }
    }
}

struct Race {
    name: &'static str,
    needs: Needs,
    /// What `Ctx::extra` counts, for the round's note line.
    extra: &'static str,
    run: fn(&Ctx, &mut Rng) -> Check,
}

const RACES: &[Race] = &[
    Race { name: "userptr: munmap/mprotect vs ALLOC/MAP/UNMAP/FREE", needs: Needs::Nothing, extra: "userptr allocations", run: userptr_vs_munmap },
    Race { name: "render mmap: CPU mapping vs UNMAP/FREE of the object", needs: Needs::Nothing, extra: "CPU mappings", run: render_mmap_vs_free },
    Race { name: "memory: two threads on the same handles", needs: Needs::Nothing, extra: "-", run: same_handles },
    Race { name: "events: WAIT vs SET vs DESTROY/CREATE", needs: Needs::Nothing, extra: "waits", run: events_wait_set_destroy },
    Race { name: "smi: event files opened/read/closed vs events of exiting processes", needs: Needs::Nothing, extra: "event bytes read", run: smi_vs_events },
    Race { name: "ACQUIRE_VM vs process exit", needs: Needs::Nothing, extra: "-", run: acquire_vm_vs_exit },
    Race { name: "close(/dev/kfd) while other threads are in ioctls", needs: Needs::Nothing, extra: "-", run: close_vs_ioctls },
    Race { name: "fork() during ioctls", needs: Needs::Nothing, extra: "forks", run: fork_during_ioctls },
    Race { name: "exit_group with threads mid-ioctl", needs: Needs::Nothing, extra: "-", run: exit_group_mid_ioctl },
    Race { name: "svm: munmap/mprotect/fork vs SET_ATTR/PREFETCH_LOC vs GPU touch", needs: Needs::Svm, extra: "GPU reads checked", run: svmq::svm_mm_vs_attr_vs_touch },
    Race { name: "svm: PREFETCH_LOC VRAM<->system vs GPU and CPU touch", needs: Needs::Svm, extra: "GPU reads checked", run: svmq::svm_migrate_vs_touch },
    Race { name: "queues: DESTROY_QUEUE vs doorbell/wptr vs UPDATE_QUEUE", needs: Needs::Queues, extra: "packets submitted", run: svmq::queue_destroy_vs_doorbell_vs_update },
    Race { name: "queues: process exit with queues busy and threads in UPDATE/DESTROY", needs: Needs::Queues, extra: "-", run: svmq::queue_process_exit },
    Race { name: "queues: SET_XNACK_MODE vs CREATE_QUEUE", needs: Needs::Queues, extra: "SET_XNACK_MODE calls", run: svmq::xnack_vs_create_queue },
];

const ALLOC: u32 = 0x16;
const FREE: u32 = 0x17;
const MAP: u32 = 0x18;
const UNMAP: u32 = 0x19;
const WAIT: u32 = 0x0c;

/// Opens /dev/kfd and binds every GPU; the render fds stay open.
fn open_bound(ctx: &Ctx) -> Result<(Kfd, Vec<i32>), String> {
    let k = Kfd::open().map_err(|e| format!("open /dev/kfd: {e}"))?;
    let mut fds = Vec::new();
    for g in &ctx.gpus {
        fds.push(bind(&k, g)?);
    }
    Ok((k, fds))
}

/// Anonymous memory at a fixed place (replacing what is there).
fn mmap_fixed(addr: usize, len: usize, prot: i32) -> bool {
    // SAFETY: MAP_FIXED over our own test region.
    let p = unsafe {
        libc::mmap(addr as *mut _, len, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED, -1, 0)
    };
    p != libc::MAP_FAILED
}

/// The user-space region races use for USERPTR (below the GPU VAs used).
const UPTR: usize = 0x3000_0000_0000;
const UPTR_LEN: usize = 1 << 20;

fn userptr_vs_munmap(ctx: &Ctx, rng: &mut Rng) -> Check {
    let (k, _fds) = open_bound(ctx)?;
    ensure(mmap_fixed(UPTR, UPTR_LEN, libc::PROT_READ | libc::PROT_WRITE), "mmap of the userptr region")?;
    let gpu = ctx.gpus[rng.below(ctx.gpus.len() as u64) as usize].gpu_id;
    let stop = AtomicBool::new(false);
    let mut r1 = rng.fork();
    let mut r2 = rng.fork();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut live: Vec<u64> = Vec::new();
            for i in 0..ctx.ops {
                let off = (r1.below((UPTR_LEN / 4096 - 16) as u64) as usize) * 4096;
                let size = 4096 * r1.range(1, 16);
                let va = (1u64 << 32) + (i as u64 % 64) * (1 << 24);
                let r = alloc(k.fd, gpu, va, size, USERPTR, (UPTR + off) as u64);
                if ctx.check(r.map(|_| 0), ALLOC, "ALLOC userptr") {
                    live.push(r.unwrap().0);
                    ctx.extra.fetch_add(1, Relaxed);
                }
                if let Some(&h) = live.last() {
                    if r1.chance(2, 3) {
                        ctx.check(map(k.fd, h, gpu, true).map(|n| n as i32), MAP, "MAP userptr");
                    }
                    if r1.chance(1, 2) {
                        ctx.check(map(k.fd, h, gpu, false).map(|n| n as i32), UNMAP, "UNMAP userptr");
                    }
                }
                if live.len() > 8 || r1.chance(1, 3) {
                    if !live.is_empty() {
                        let h = live.remove(r1.below(live.len() as u64) as usize);
                        ctx.check(free(k.fd, h), FREE, "FREE userptr");
                    }
                }
            }
            for h in live {
                ctx.check(free(k.fd, h), FREE, "FREE userptr (end)");
            }
            stop.store(true, Release);
        });
        s.spawn(|| {
            while !stop.load(Acquire) {
                let off = (r2.below((UPTR_LEN / 4096 - 32) as u64) as usize) * 4096;
                let len = 4096 * r2.range(1, 32) as usize;
                // SAFETY: our own test region.
                unsafe {
                    match r2.below(3) {
                        0 => {
                            libc::munmap((UPTR + off) as *mut _, len);
                        }
                        1 => {
                            libc::mprotect((UPTR + off) as *mut _, len, libc::PROT_READ);
                        }
                        _ => {
                            mmap_fixed(UPTR + off, len, libc::PROT_READ | libc::PROT_WRITE);
                        }
                    }
                }
                std::thread::yield_now();
            }
        });
    });
    Ok(())
}

fn render_mmap_vs_free(ctx: &Ctx, rng: &mut Rng) -> Check {
    let (k, fds) = open_bound(ctx)?;
    let gi = rng.below(ctx.gpus.len() as u64) as usize;
    let (gpu, rfd) = (ctx.gpus[gi].gpu_id, fds[gi]);
    const SIZE: u64 = 1 << 16;
    // The current object's mmap offset (0: none) and handle.
    let offset = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let mut r1 = rng.fork();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..ctx.ops {
                let va = (1u64 << 33) + (i as u64 % 32) * (1 << 24);
                let r = alloc(k.fd, gpu, va, SIZE, GTT, 0);
                if !ctx.check(r.map(|_| 0), ALLOC, "ALLOC") {
                    continue;
                }
                let (h, off) = r.unwrap();
                offset.store(off, Release);
                ctx.check(map(k.fd, h, gpu, true).map(|n| n as i32), MAP, "MAP");
                for _ in 0..r1.below(50) {
                    std::thread::yield_now();
                }
                if r1.chance(1, 2) {
                    ctx.check(map(k.fd, h, gpu, false).map(|n| n as i32), UNMAP, "UNMAP");
                }
                // Freed while the other thread may have it CPU-mapped.
                ctx.check(free(k.fd, h), FREE, "FREE");
            }
            stop.store(true, Release);
        });
        s.spawn(|| {
            while !stop.load(Acquire) {
                let off = offset.load(Acquire);
                if off == 0 {
                    std::thread::yield_now();
                    continue;
                }
                // SAFETY: mapping the render node at an offset the kernel
                // checks; the mapping is ours until munmap.
                let p = unsafe {
                    libc::mmap(std::ptr::null_mut(), SIZE as usize, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, rfd, off as i64)
                };
                if p == libc::MAP_FAILED {
                    let e = errno();
                    if e != libc::EINVAL && e != libc::EACCES && e != libc::ENOENT {
                        ctx.problem(format!("render mmap: {}", errno_name(e)));
                    }
                    continue;
                }
                ctx.extra.fetch_add(1, Relaxed);
                // The pages must stay valid while mapped, freed or not.
                // SAFETY: inside our live mapping.
                unsafe {
                    let b = p.cast::<u8>();
                    for page in 0..(SIZE as usize / 4096) {
                        b.add(page * 4096).write_volatile(0x5a);
                        let _ = b.add(page * 4096 + 8).read_volatile();
                    }
                    libc::munmap(p, SIZE as usize);
                }
            }
        });
    });
    drop(k);
    Ok(())
}

fn same_handles(ctx: &Ctx, rng: &mut Rng) -> Check {
    let (k, _fds) = open_bound(ctx)?;
    let handles: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
    let gpus: Vec<u32> = ctx.gpus.iter().map(|g| g.gpu_id).collect();
    let mut rngs: Vec<Rng> = (0..3).map(|_| rng.fork()).collect();
    std::thread::scope(|s| {
        for (t, r) in rngs.iter_mut().enumerate() {
            let (handles, gpus, k) = (&handles, &gpus, &k);
            s.spawn(move || {
                for i in 0..ctx.ops {
                    let slot = &handles[r.below(8) as usize];
                    let gpu = *r.pick(gpus);
                    match r.below(4) {
                        0 => {
                            let va = (1u64 << 34) + ((t * ctx.ops + i) as u64 % 256) * (1 << 24);
                            let flags = if r.chance(1, 2) { GTT } else { VRAM };
                            let r = alloc(k.fd, gpu, va, 1 << 16, flags, 0);
                            if ctx.check(r.map(|_| 0), ALLOC, "ALLOC") {
                                let h = r.unwrap().0;
                                let old = slot.swap(h, AcqRel);
                                if old != 0 {
                                    ctx.check(free(k.fd, old), FREE, "FREE (replaced)");
                                }
                            }
                        }
                        1 => {
                            let h = slot.load(Acquire);
                            ctx.check(map(k.fd, h, gpu, true).map(|n| n as i32), MAP, "MAP");
                        }
                        2 => {
                            let h = slot.load(Acquire);
                            ctx.check(map(k.fd, h, gpu, false).map(|n| n as i32), UNMAP, "UNMAP");
                        }
                        _ => {
                            // Free whatever is there, possibly while another
                            // thread maps it (and possibly twice: EINVAL).
                            let h = slot.load(Acquire);
                            if ctx.check(free(k.fd, h), FREE, "FREE") {
                                let _ = slot.compare_exchange(h, 0, AcqRel, Acquire);
                            }
                        }
                    }
                }
            });
        }
    });
    for slot in &handles {
        let h = slot.load(Acquire);
        if h != 0 {
            ctx.check(free(k.fd, h), FREE, "FREE (end)");
        }
    }
    Ok(())
}

/// Allocates a signal page and creates one signal event on it; the page's
/// handle is returned so that the caller keeps it.
fn signal_page(kfd: i32, gpu: u32) -> Result<u64, String> {
    let (h, _) = alloc(kfd, gpu, 1 << 40, fuzz::SIGNAL_PAGE_SIZE, GTT, 0)
        .map_err(|e| format!("ALLOC signal page: {}", errno_name(e)))?;
    Ok(h)
}

fn create_event(kfd: i32, page: u64) -> Result<u32, i32> {
    let mut e = uapi::kfd_ioctl_create_event_args {
        event_page_offset: page,
        event_type: uapi::KFD_IOC_EVENT_SIGNAL,
        auto_reset: 1,
        ..Default::default()
    };
    ioctl_fd(kfd, uapi::AMDKFD_IOC_CREATE_EVENT, &mut e as *mut _ as usize)?;
    Ok(e.event_id)
}

fn events_wait_set_destroy(ctx: &Ctx, rng: &mut Rng) -> Check {
    let (k, _fds) = open_bound(ctx)?;
    let page = signal_page(k.fd, ctx.gpus[0].gpu_id)?;
    let first = create_event(k.fd, page).map_err(|e| format!("CREATE_EVENT: {}", errno_name(e)))?;
    const WAITERS: usize = 2;
    let id = AtomicU32::new(first);
    let stop = AtomicBool::new(false);
    let started = AtomicUsize::new(0);
    let waits = AtomicUsize::new(0);
    let mut r1 = rng.fork();
    let mut r2 = rng.fork();
    std::thread::scope(|s| {
        for _ in 0..WAITERS {
            s.spawn(|| {
                started.fetch_add(1, Release);
                while !stop.load(Acquire) {
                    let r = wait_one_event(k.fd, id.load(Acquire), 20).map(|r| r as i32);
                    ctx.check(r, WAIT, "WAIT_EVENTS");
                    waits.fetch_add(1, Relaxed);
                    ctx.extra.fetch_add(1, Relaxed);
                }
            });
        }
        s.spawn(|| {
            while !stop.load(Acquire) {
                let mut a = uapi::kfd_ioctl_set_event_args { event_id: id.load(Acquire), pad: 0 };
                ctx.check(k.ioctl(uapi::AMDKFD_IOC_SET_EVENT, &mut a), 0x0a, "SET_EVENT");
                if r2.chance(1, 4) {
                    let mut a = uapi::kfd_ioctl_reset_event_args { event_id: id.load(Acquire), pad: 0 };
                    ctx.check(k.ioctl(uapi::AMDKFD_IOC_RESET_EVENT, &mut a), 0x0b, "RESET_EVENT");
                }
                std::thread::yield_now();
            }
        });
        s.spawn(|| {
            // On a loaded machine the waiters may not have run yet: churn
            // only once they are in their loops, and until one of their
            // waits returned (or 10 s passed: then the check below fails),
            // so the round races WAIT against DESTROY/CREATE.
            let deadline = Instant::now() + Duration::from_secs(10);
            while started.load(Acquire) < WAITERS && Instant::now() < deadline {
                std::thread::yield_now();
            }
            let mut done = 0;
            while done < ctx.ops / 4 || (waits.load(Relaxed) == 0 && Instant::now() < deadline) {
                done += 1;
                let old = id.load(Acquire);
                let mut d = uapi::kfd_ioctl_destroy_event_args { event_id: old, pad: 0 };
                ctx.check(k.ioctl(uapi::AMDKFD_IOC_DESTROY_EVENT, &mut d), 0x09, "DESTROY_EVENT");
                match create_event(k.fd, 0) {
                    Ok(new) => id.store(new, Release),
                    Err(e) => {
                        ctx.check(Err(e), 0x08, "CREATE_EVENT");
                    }
                }
                for _ in 0..r1.below(20) {
                    std::thread::yield_now();
                }
            }
            stop.store(true, Release);
        });
    });
    let mut d = uapi::kfd_ioctl_destroy_event_args { event_id: id.load(Acquire), pad: 0 };
    ctx.check(k.ioctl(uapi::AMDKFD_IOC_DESTROY_EVENT, &mut d), 0x09, "DESTROY_EVENT (end)");
    ensure(waits.load(Relaxed) > 0, "no wait completed")?;
    // The signal page is in use: FREE refuses it; teardown frees it.
    Ok(())
}

fn smi_vs_events(ctx: &Ctx, rng: &mut Rng) -> Check {
    let k = Kfd::open().map_err(|e| format!("open /dev/kfd: {e}"))?;
    let stop = AtomicBool::new(false);
    let gpus = &ctx.gpus;
    let mut r1 = rng.fork();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while !stop.load(Acquire) {
                    let g = &gpus[0];
                    let mut a = uapi::kfd_ioctl_smi_events_args { gpuid: g.gpu_id, anon_fd: 0 };
                    if !ctx.check(k.ioctl(uapi::AMDKFD_IOC_SMI_EVENTS, &mut a), 0x1f, "SMI_EVENTS") {
                        continue;
                    }
                    let fd = a.anon_fd as i32;
                    let mask = !0u64;
                    // SAFETY: our fd and buffers.
                    unsafe {
                        libc::write(fd, (&mask as *const u64).cast(), 8);
                        let mut buf = [0u8; 64];
                        for _ in 0..20 {
                            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                            if n > 0 {
                                ctx.extra.fetch_add(n as usize, Relaxed);
                            }
                            std::thread::yield_now();
                        }
                        libc::close(fd);
                    }
                }
            });
        }
        s.spawn(|| {
            for _ in 0..(ctx.ops / 30).max(3) {
                let gpus = gpus.clone();
                let delay = r1.below(2000);
                let _ = in_grandchild(move || {
                    let Ok(k) = Kfd::open() else { return };
                    for g in &gpus {
                        let _ = bind(&k, g);
                    }
                    std::thread::sleep(Duration::from_micros(delay));
                });
            }
            stop.store(true, Release);
        });
    });
    Ok(())
}

/// Runs `body` in a grandchild that the caller (the round's process) waits
/// for; the grandchild is expected to end by itself within the round.
fn in_grandchild(body: impl FnOnce()) -> Result<i32, String> {
    // SAFETY: the grandchild runs `body` then exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err("fork failed".into());
    }
    if pid == 0 {
        body();
        // SAFETY: exit without destructors.
        unsafe { libc::_exit(0) };
    }
    wait_child(pid, ROUND_SECS / 2).ok_or_else(|| "grandchild hung (killed)".to_string())
}

fn acquire_vm_vs_exit(ctx: &Ctx, rng: &mut Rng) -> Check {
    for _ in 0..4 {
        let delay = rng.below(3000);
        let gpus = ctx.gpus.clone();
        let status = in_grandchild(move || {
            let Ok(k) = Kfd::open() else { return };
            let kfd = k.fd;
            std::mem::forget(k);
            for g in gpus {
                std::thread::spawn(move || loop {
                    let Ok(fd) = open_rw(&g.render_path()) else { return };
                    let _ = acquire_vm(kfd, fd, g.gpu_id);
                    let _ = alloc(kfd, g.gpu_id, 1 << 35, 1 << 16, VRAM, 0);
                    close(fd);
                });
            }
            std::thread::sleep(Duration::from_micros(delay));
            // exit_group while the threads are inside ACQUIRE_VM/ALLOC.
        })?;
        ensure(libc::WIFEXITED(status), format!("grandchild status {status:#x}"))?;
        ctx.ok.fetch_add(1, Relaxed);
    }
    Ok(())
}

fn close_vs_ioctls(ctx: &Ctx, rng: &mut Rng) -> Check {
    let (k, fds) = open_bound(ctx)?;
    let kfd = k.fd;
    std::mem::forget(k); // closed by hand below, while in use
    let closed = &AtomicBool::new(false);
    let page = signal_page(kfd, ctx.gpus[0].gpu_id)?;
    let ev = create_event(kfd, page).map_err(|e| format!("CREATE_EVENT: {}", errno_name(e)))?;
    let delay = rng.below(5000);
    let gpu = ctx.gpus[0].gpu_id;
    std::thread::scope(|s| {
        s.spawn(|| {
            // A long wait the close must not break (the file stays alive
            // until the ioctl returns).
            let r = wait_one_event(kfd, ev, 200).map(|r| r as i32);
            if !matches!(r, Err(libc::EBADF)) {
                ctx.check(r, WAIT, "WAIT_EVENTS across close");
            }
        });
        for t in 0..2u64 {
            s.spawn(move || {
                let mut i = 0u64;
                while !closed.load(Acquire) {
                    let va = (1u64 << 36) + ((t * 1000 + i) % 512) * (1 << 24);
                    i += 1;
                    match alloc(kfd, gpu, va, 1 << 16, GTT, 0) {
                        Ok((h, _)) => {
                            ctx.ok.fetch_add(1, Relaxed);
                            let _ = map(kfd, h, gpu, true);
                            let _ = free(kfd, h);
                        }
                        Err(e) if e == libc::EBADF => break,
                        Err(e) => {
                            ctx.check(Err(e), ALLOC, "ALLOC");
                        }
                    }
                }
            });
        }
        s.spawn(|| {
            // Close only once an ALLOC has gone through, so that the close
            // lands among ioctls even when the scheduler starts the
            // allocating threads late (2 cores, two guests). Give up after
            // 2 s: a round where no ALLOC succeeds then fails below.
            let t0 = std::time::Instant::now();
            while ctx.ok.load(Relaxed) == 0 && t0.elapsed() < Duration::from_secs(2) {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_micros(delay));
            close(kfd);
            closed.store(true, Release);
        });
    });
    for fd in fds {
        close(fd);
    }
    // All files gone: a new open makes a new process that works.
    let k = Kfd::open().map_err(|e| format!("reopen: {e}"))?;
    let mut v = uapi::kfd_ioctl_get_version_args::default();
    k.ioctl(uapi::AMDKFD_IOC_GET_VERSION, &mut v).map_err(|e| format!("GET_VERSION after reopen: {}", errno_name(e)))?;
    let ids = aperture_ids(&k).map_err(|e| format!("apertures after reopen: {}", errno_name(e)))?;
    ensure(ids.len() == ctx.gpus.len(), format!("apertures after reopen: {ids:?}"))
}

fn fork_during_ioctls(ctx: &Ctx, rng: &mut Rng) -> Check {
    let (k, _fds) = open_bound(ctx)?;
    let stop = AtomicBool::new(false);
    let gpu = ctx.gpus[0].gpu_id;
    let kfd = k.fd;
    let mut forks = 0;
    let mut result = Ok(());
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let stop = &stop;
            s.spawn(move || {
                let mut i = 0u64;
                while !stop.load(Acquire) {
                    let va = (1u64 << 37) + ((t * 1000 + i) % 512) * (1 << 24);
                    i += 1;
                    if let Ok((h, _)) = alloc(kfd, gpu, va, 1 << 16, if i % 2 == 0 { GTT } else { VRAM }, 0) {
                        ctx.check(map(kfd, h, gpu, true).map(|n| n as i32), MAP, "MAP");
                        ctx.check(map(kfd, h, gpu, false).map(|n| n as i32), UNMAP, "UNMAP");
                        ctx.check(free(kfd, h), FREE, "FREE");
                    }
                }
            });
        }
        for _ in 0..(ctx.ops / 30).max(4) {
            std::thread::sleep(Duration::from_micros(rng.below(2000)));
            let status = in_grandchild(|| {
                // The inherited fd is the parent's: EBADF.  An own open works.
                let mut v = uapi::kfd_ioctl_get_version_args::default();
                let inherited = ioctl_fd(kfd, uapi::AMDKFD_IOC_GET_VERSION, &mut v as *mut _ as usize);
                let own = Kfd::open().ok().map(|k| k.ioctl(uapi::AMDKFD_IOC_GET_VERSION, &mut v).is_ok());
                let code = match (inherited, own) {
                    (Err(libc::EBADF), Some(true)) => 0,
                    (Err(libc::EBADF), _) => 2,
                    _ => 3,
                };
                // SAFETY: exit with the verdict.
                unsafe { libc::_exit(code) };
            });
            forks += 1;
            ctx.extra.fetch_add(1, Relaxed);
            match status {
                Ok(st) if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0 => {}
                Ok(st) => {
                    result = Err(format!("forked child: status {st:#x} (2: own open failed, 3: inherited fd usable)"));
                    break;
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        stop.store(true, Release);
    });
    result?;
    ensure(forks > 0, "no fork")
}

fn exit_group_mid_ioctl(ctx: &Ctx, rng: &mut Rng) -> Check {
    for _ in 0..3 {
        let delay = rng.below(5000);
        let gpus = ctx.gpus.clone();
        let status = in_grandchild(move || {
            let Ok(k) = Kfd::open() else { return };
            let kfd = k.fd;
            std::mem::forget(k);
            let mut fds = Vec::new();
            for g in &gpus {
                if let Ok(fd) = open_rw(&g.render_path()) {
                    let _ = acquire_vm(kfd, fd, g.gpu_id);
                    fds.push(fd);
                }
            }
            let gpu = gpus[0].gpu_id;
            // One thread blocked in an infinite WAIT_EVENTS.
            if let Ok((page, _)) = alloc(kfd, gpu, 1 << 40, fuzz::SIGNAL_PAGE_SIZE, GTT, 0) {
                let mut e = uapi::kfd_ioctl_create_event_args {
                    event_page_offset: page,
                    event_type: uapi::KFD_IOC_EVENT_SIGNAL,
                    ..Default::default()
                };
                if ioctl_fd(kfd, uapi::AMDKFD_IOC_CREATE_EVENT, &mut e as *mut _ as usize).is_ok() {
                    let id = e.event_id;
                    std::thread::spawn(move || loop {
                        let _ = wait_one_event(kfd, id, 0xffff_ffff);
                    });
                }
            }
            for t in 0..2u64 {
                std::thread::spawn(move || {
                    let mut i = 0u64;
                    loop {
                        let va = (1u64 << 38) + ((t * 1000 + i) % 512) * (1 << 24);
                        i += 1;
                        if let Ok((h, _)) = alloc(kfd, gpu, va, 1 << 16, VRAM, 0) {
                            let _ = map(kfd, h, gpu, true);
                            if i % 3 != 0 {
                                let _ = free(kfd, h);
                            }
                        }
                    }
                });
            }
            std::thread::sleep(Duration::from_micros(delay));
        })?;
        ensure(libc::WIFEXITED(status), format!("grandchild status {status:#x}"))?;
        ctx.ok.fetch_add(1, Relaxed);
    }
    Ok(())
}

/// Whether the module implements what `needs` names.
fn available(needs: Needs) -> bool {
    let probe = |cmd: u32| -> bool {
        let Ok(k) = Kfd::open() else { return false };
        let mut buf = [0u8; 256];
        !matches!(k.ioctl_raw(cmd, buf.as_mut_ptr() as usize), Err(libc::EOPNOTSUPP))
    };
    match needs {
        Needs::Nothing => true,
        Needs::Svm => kfd_tests::svm::svm_gpu().is_some() && probe(uapi::AMDKFD_IOC_SVM),
        Needs::Queues => {
            probe(uapi::AMDKFD_IOC_CREATE_QUEUE)
                && in_child(ROUND_SECS, || {
                    let gpus = topology_gpus();
                    let k = Kfd::open().map_err(|e| e.to_string())?;
                    for (i, g) in gpus.iter().enumerate() {
                        let fd = bind(&k, g)?;
                        let q = kfd_tests::queue::QueueMem::new(k.fd, fd, g, (1 << 39) + ((i as u64) << 32))?;
                        ensure(kfd_tests::queue::queues_served(&q), "no queue")?;
                    }
                    Ok(())
                })
                .is_ok()
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let seed = opt("--seed").and_then(|s| fuzz::parse_u64(&s)).unwrap_or_else(fuzz::random_seed);
    let rounds: u64 = opt("--rounds").and_then(|s| s.parse().ok()).unwrap_or(4);
    let ops: usize = opt("--ops").and_then(|s| s.parse().ok()).unwrap_or(300);
    let only = opt("--only");
    println!("kfd-race: seed {seed:#x} rounds {rounds} ops {ops} (rerun: kfd-race --seed {seed:#x})");
    // The harness's own filter is argv[1]; ours are options.
    let mut h = Harness::default();
    let gpus = topology_gpus();
    h.run("topology lists a GPU", || ensure(!gpus.is_empty(), "no GPU node"));
    if gpus.is_empty() {
        std::process::exit(h.finish("kfd-race"));
    }
    let before = available_memory(&gpus);
    let mut rng = Rng::new(seed);
    for race in RACES {
        let mut race_rng = rng.fork();
        if only.as_deref().is_some_and(|o| !race.name.contains(o)) {
            continue;
        }
        if !available(race.needs) {
            println!("# skip: {} (needs {:?}: not available here)", race.name, race.needs);
            continue;
        }
        for round in 0..rounds {
            let mut r = race_rng.fork();
            let ctx = Ctx {
                gpus: gpus.clone(),
                ops,
                problems: Mutex::new(Vec::new()),
                ok: AtomicUsize::new(0),
                clear: AtomicUsize::new(0),
                extra: AtomicUsize::new(0),
            };
            h.run(&format!("{} (round {round})", race.name), || {
                let t0 = std::time::Instant::now();
                in_child(ROUND_SECS, || {
                    (race.run)(&ctx, &mut r)?;
                    let (ok, clear, extra) = (ctx.ok.load(Relaxed), ctx.clear.load(Relaxed), ctx.extra.load(Relaxed));
                    let extra = if race.extra == "-" { String::new() } else { format!(", {extra} {}", race.extra) };
                    println!("# {} round {round}: {ok} ok, {clear} clear errnos{extra} ({:.1} s)", race.name, t0.elapsed().as_secs_f64());
                    let p = ctx.problems.lock().unwrap();
                    ensure(p.is_empty(), p.join("; "))?;
                    ensure(ok > 0, "nothing succeeded: the round raced nothing")
                })
            });
        }
    }
    // Every round's process is gone: its memory must be back.
    h.run("memory given back after all races", || memory_given_back(&gpus, &before));
    h.detail(format!("{rounds} rounds of {ops} operations per race"));
    std::process::exit(h.finish("kfd-race"));
}
