// SPDX-License-Identifier: GPL-2.0
//! kfd-race's SVM and queue races (included by kfd-race.rs).
//!
//! SVM races run on the first GPU with `HSA_CAP_SVMAPI_SUPPORTED`, with
//! XNACK on when the process may have it (every GPU supports it), else
//! off with the range given `ACCESS` (the GPU then touches only what is
//! mapped; an unmapped touch is a fatal fault, `EFAULT`).  Memory carries a
//! per-page pattern (never zero): whatever the GPU reads of a page is
//! either the pattern or zero (a fresh page the CPU has not filled yet);
//! anything else is another page's or a forked child's data.

use super::*;
use kfd_tests::queue::QueueMem;
use kfd_tests::svm::{svm_gpu, Ctx as SvmCtx, PAGE};

const SVM_BASE: usize = 0x3100_0000_0000;
const SVM_PAGES: usize = 2048; // 8 MiB

/// The pattern byte of page `i` of the SVM region (never 0).
fn pat(i: usize) -> u8 {
    (i as u8).wrapping_mul(7) | 0x81
}

fn page_of(va: usize) -> usize {
    (va - SVM_BASE) / PAGE
}

/// Maps `[va, va+len)` afresh and fills it with the pattern.
fn remap_fill(va: usize, len: usize) -> bool {
    if !mmap_fixed(va, len, libc::PROT_READ | libc::PROT_WRITE) {
        return false;
    }
    for p in (va..va + len).step_by(PAGE) {
        // SAFETY: the fresh RW mapping above.
        unsafe { std::ptr::write_bytes(p as *mut u8, pat(page_of(p)), PAGE) };
    }
    true
}

/// The bytes the pattern gives `[va, va+len)`.
fn pattern(va: usize, len: usize) -> Vec<u8> {
    (va..va + len).map(|a| pat(page_of(a))).collect()
}

/// First byte of `buf` (read at `va`) that is neither zero nor the pattern.
fn foreign(buf: &[u8], va: usize, exact: bool) -> Option<String> {
    buf.iter().enumerate().find_map(|(i, &b)| {
        let want = pat(page_of(va + i));
        (b != want && (exact || b != 0)).then(|| format!("byte at {:#x} is {b:#04x}, want {want:#04x}{}", va + i, if exact { "" } else { " or 0" }))
    })
}

/// An SVM process: XNACK on if it may be, else ACCESS on the region.
fn svm_open() -> Result<(SvmCtx, bool), String> {
    let gpu = svm_gpu().ok_or("no SVM-capable GPU")?;
    let c = SvmCtx::new(&gpu)?;
    let on = match c.set_xnack(true) {
        Ok(m) => m == 1,
        Err(libc::EPERM) => false,
        Err(e) => return Err(format!("SET_XNACK_MODE(1): {}", errno_name(e))),
    };
    Ok((c, on))
}

impl Ctx {
    /// Records `r` unless it is success or one of `allowed`.
    fn allow<T>(&self, r: Result<T, i32>, allowed: &[i32], what: &str) -> bool {
        match r {
            Ok(_) => {
                self.ok.fetch_add(1, Relaxed);
                true
            }
            Err(e) if allowed.contains(&e) => {
                self.clear.fetch_add(1, Relaxed);
                false
            }
            Err(e) => {
                self.problem(format!("{what}: {} (allowed here: {:?})", fuzz::errno_str(e), allowed.iter().map(|&e| fuzz::errno_str(e)).collect::<Vec<_>>()));
                false
            }
        }
    }
}

/// After a race: a fresh mapping of the whole region round-trips through
/// VRAM and the GPU exactly.
fn svm_round_trip(c: &SvmCtx) -> Check {
    let len = SVM_PAGES * PAGE;
    // SAFETY: our region.
    unsafe { libc::munmap(SVM_BASE as *mut _, len) };
    ensure(remap_fill(SVM_BASE, len), "remap of the region")?;
    let g = c.gpu.gpu_id;
    c.svm_set(SVM_BASE, len, &[(uapi::KFD_IOCTL_SVM_ATTR_ACCESS, g), (uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, g)])
        .map_err(|e| format!("round trip: SET_ATTR ACCESS+PREFETCH_LOC: {}", errno_name(e)))?;
    let mut buf = vec![0u8; len];
    c.gpu_read(SVM_BASE, &mut buf).map_err(|e| format!("round trip: GPU read: {}", errno_name(e)))?;
    if let Some(w) = foreign(&buf, SVM_BASE, true) {
        return Err(format!("round trip: GPU read: {w}"));
    }
    let mark = [0x3cu8; 64];
    c.gpu_write(SVM_BASE + 5 * PAGE, &mark).map_err(|e| format!("round trip: GPU write: {}", errno_name(e)))?;
    c.prefetch(SVM_BASE, len, 0).map_err(|e| format!("round trip: PREFETCH_LOC 0: {}", errno_name(e)))?;
    // SAFETY: our mapping.
    let s = unsafe { std::slice::from_raw_parts(SVM_BASE as *const u8, len) };
    ensure(s[5 * PAGE..5 * PAGE + 64] == mark, "round trip: the CPU does not see the GPU write")?;
    if let Some(w) = foreign(&s[6 * PAGE..], SVM_BASE + 6 * PAGE, true) {
        return Err(format!("round trip: CPU read after migration back: {w}"));
    }
    // SAFETY: our region.
    unsafe { libc::munmap(SVM_BASE as *mut _, len) };
    Ok(())
}

/// Operations per thread of an SVM race: a third of `--ops` (each one
/// migrates or faults up to 2 MiB, slow under TCG).
fn svm_ops(ctx: &Ctx) -> usize {
    (ctx.ops / 3).max(10)
}

/// A random page-aligned subrange of the region: `(va, len)`.
fn subrange(r: &mut Rng, max_pages: u64) -> (usize, usize) {
    let n = r.range(1, max_pages) as usize;
    let first = r.below((SVM_PAGES - n) as u64 + 1) as usize;
    (SVM_BASE + first * PAGE, n * PAGE)
}

pub(super) fn svm_mm_vs_attr_vs_touch(ctx: &Ctx, rng: &mut Rng) -> Check {
    let (c, xnack) = svm_open()?;
    let len = SVM_PAGES * PAGE;
    let g = c.gpu.gpu_id;
    ensure(remap_fill(SVM_BASE, len), "mmap of the SVM region")?;
    if !xnack {
        c.svm_set(SVM_BASE, len, &[(uapi::KFD_IOCTL_SVM_ATTR_ACCESS, g)]).map_err(|e| format!("SET_ATTR ACCESS: {}", errno_name(e)))?;
    }
    println!("# svm race: gpu {g}, xnack {}", if xnack { "on" } else { "off" });
    let done = AtomicUsize::new(0);
    let (mut r1, mut r2, mut r3) = (rng.fork(), rng.fork(), rng.fork());
    let c = &c;
    let ops = svm_ops(ctx);
    std::thread::scope(|s| {
        // Attributes and prefetches: EFAULT when the range lost its VMA to
        // a racing munmap, EAGAIN when an invalidation raced the mapping.
        s.spawn(|| {
            for _ in 0..ops {
                let (va, n) = subrange(&mut r1, 512);
                let attr = match r1.below(8) {
                    0 => (uapi::KFD_IOCTL_SVM_ATTR_ACCESS, g),
                    1 => (uapi::KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, g),
                    2 => (uapi::KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, *r1.pick(&[g, 0, uapi::KFD_IOCTL_SVM_LOCATION_UNDEFINED])),
                    3 => (uapi::KFD_IOCTL_SVM_ATTR_GRANULARITY, r1.below(10) as u32),
                    4 => (uapi::KFD_IOCTL_SVM_ATTR_SET_FLAGS, uapi::KFD_IOCTL_SVM_FLAG_COHERENT),
                    5 | 6 => (uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, g),
                    _ => (uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0),
                };
                let r = c.svm_set(va, n, &[attr]);
                ctx.allow(r, &[libc::EFAULT, libc::EAGAIN], &format!("SVM SET_ATTR {attr:?}"));
            }
            done.fetch_add(1, Release);
        });
        // GPU touches: EFAULT for holes, read-only pages (writes), and
        // with XNACK off for what is not mapped.
        s.spawn(|| {
            for _ in 0..ops {
                let (va, n) = subrange(&mut r2, 64);
                let off = r2.below(PAGE as u64) as usize;
                let n = n - off.min(n - 1);
                if r2.chance(2, 3) {
                    let mut buf = vec![0u8; n];
                    if ctx.allow(c.gpu_read(va + off, &mut buf), &[libc::EFAULT], "GPU read") {
                        ctx.extra.fetch_add(1, Relaxed);
                        if let Some(w) = foreign(&buf, va + off, false) {
                            ctx.problem(format!("GPU read: {w}"));
                        }
                    }
                } else {
                    let buf = pattern(va + off, n);
                    ctx.allow(c.gpu_write(va + off, &buf), &[libc::EFAULT], "GPU write");
                }
            }
            done.fetch_add(1, Release);
        });
        // The CPU side: munmap (whole or middle) and map again, mprotect,
        // fork with a child scribbling on its copy.
        s.spawn(|| {
            let mut forks = 0;
            while done.load(Acquire) < 2 {
                let (va, n) = subrange(&mut r3, 1024);
                match r3.below(6) {
                    0 => {
                        // SAFETY: our region, mapped again at once.
                        unsafe { libc::munmap(SVM_BASE as *mut _, len) };
                        std::thread::sleep(Duration::from_micros(r3.below(500)));
                        if !remap_fill(SVM_BASE, len) {
                            ctx.problem("remap of the whole region failed".into());
                        }
                    }
                    1 | 2 => {
                        // SAFETY: as above.
                        unsafe { libc::munmap(va as *mut _, n) };
                        std::thread::sleep(Duration::from_micros(r3.below(500)));
                        if !remap_fill(va, n) {
                            ctx.problem("remap of a middle part failed".into());
                        }
                    }
                    3 => {
                        // SAFETY: our region; made writable again below.
                        unsafe { libc::mprotect(va as *mut _, n, libc::PROT_READ) };
                        std::thread::sleep(Duration::from_micros(r3.below(500)));
                        // SAFETY: as above.
                        unsafe { libc::mprotect(va as *mut _, n, libc::PROT_READ | libc::PROT_WRITE) };
                    }
                    4 if forks < 8 => {
                        forks += 1;
                        let scribble = r3.below(SVM_PAGES as u64) as usize;
                        // SAFETY: the child writes its own copy and leaves.
                        let pid = unsafe { libc::fork() };
                        if pid == 0 {
                            // SAFETY: the child's copy of our region.
                            unsafe {
                                libc::mprotect(SVM_BASE as *mut _, len, libc::PROT_READ | libc::PROT_WRITE);
                                for p in scribble..(scribble + 64).min(SVM_PAGES) {
                                    std::ptr::write_bytes((SVM_BASE + p * PAGE) as *mut u8, 0xee, 64);
                                }
                                libc::_exit(0);
                            }
                        }
                        // The parent writes after the fork (copy-on-write
                        // moves its pages: the GPU must follow).
                        // SAFETY: our region; the page may be read-only or
                        // gone only if this thread made it so, which it did not.
                        unsafe {
                            let p = SVM_BASE + scribble * PAGE;
                            std::ptr::write_bytes(p as *mut u8, pat(scribble), PAGE);
                        }
                        if pid > 0 {
                            let mut st = 0;
                            // SAFETY: our child.
                            unsafe { libc::waitpid(pid, &mut st, 0) };
                        }
                    }
                    _ => std::thread::sleep(Duration::from_micros(r3.below(300))),
                }
            }
        });
    });
    svm_round_trip(c)
}

pub(super) fn svm_migrate_vs_touch(ctx: &Ctx, rng: &mut Rng) -> Check {
    let (c, xnack) = svm_open()?;
    let len = 1024 * PAGE;
    let g = c.gpu.gpu_id;
    ensure(remap_fill(SVM_BASE, len), "mmap of the SVM region")?;
    c.svm_set(SVM_BASE, len, &[(uapi::KFD_IOCTL_SVM_ATTR_ACCESS, g)]).map_err(|e| format!("SET_ATTR ACCESS: {}", errno_name(e)))?;
    // With XNACK on every GPU access must succeed (retry faults); off, a
    // touch between an invalidation and the restore is a fatal fault.
    let gpu_errs: &[i32] = if xnack { &[] } else { &[libc::EFAULT] };
    let done = AtomicUsize::new(0);
    let (mut r1, mut r2, mut r3) = (rng.fork(), rng.fork(), rng.fork());
    let c = &c;
    let ops = svm_ops(ctx);
    let sub = |r: &mut Rng, max: u64| {
        let n = r.range(1, max) as usize;
        let first = r.below((1024 - n) as u64 + 1) as usize;
        (SVM_BASE + first * PAGE, n * PAGE)
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..ops / 2 {
                let (va, n) = sub(&mut r1, 512);
                let loc = if r1.chance(1, 2) { g } else { 0 };
                ctx.allow(c.prefetch(va, n, loc), &[libc::EAGAIN], "PREFETCH_LOC");
            }
            done.fetch_add(1, Release);
        });
        s.spawn(|| {
            for _ in 0..ops {
                let (va, n) = sub(&mut r2, 64);
                if r2.chance(3, 4) {
                    let mut buf = vec![0u8; n];
                    if ctx.allow(c.gpu_read(va, &mut buf), gpu_errs, "GPU read") {
                        ctx.extra.fetch_add(1, Relaxed);
                        if let Some(w) = foreign(&buf, va, true) {
                            ctx.problem(format!("GPU read of memory never unmapped: {w}"));
                        }
                    }
                } else {
                    ctx.allow(c.gpu_write(va, &pattern(va, n)), gpu_errs, "GPU write");
                }
            }
            done.fetch_add(1, Release);
        });
        // CPU reads (migrating pages back) and writes of the same pattern.
        s.spawn(|| {
            while done.load(Acquire) < 2 {
                let (va, n) = sub(&mut r3, 64);
                // SAFETY: our mapping, alive for the whole race.
                let s = unsafe { std::slice::from_raw_parts_mut(va as *mut u8, n) };
                if let Some(w) = foreign(s, va, true) {
                    ctx.problem(format!("CPU read: {w}"));
                }
                if r3.chance(1, 2) {
                    s.copy_from_slice(&pattern(va, n));
                }
            }
        });
    });
    svm_round_trip(c)
}

// ---------------------------------------------------------------------------
// Queues.

/// The GPU and its queue memory for a queue race (GPU picked by the seed).
fn queue_setup(ctx: &Ctx, rng: &mut Rng, va: u64) -> Result<(Kfd, Vec<i32>, QueueMem), String> {
    let (k, fds) = open_bound(ctx)?;
    let gi = rng.below(ctx.gpus.len() as u64) as usize;
    let q = QueueMem::new(k.fd, fds[gi], &ctx.gpus[gi], va)?;
    Ok((k, fds, q))
}

const NO_QUEUE: u64 = u64::MAX;

pub(super) fn queue_destroy_vs_doorbell_vs_update(ctx: &Ctx, rng: &mut Rng) -> Check {
    let (_k, _fds, q) = queue_setup(ctx, rng, 1 << 39)?;
    println!("# queue race on gpu {}", q.gpu);
    let sdma_ok = q.props.sdma_engines > 0;
    // The live queue: id in the low 32 bits, doorbell offset's slot and
    // kind (bit 63: SDMA) above; NO_QUEUE between DESTROY and CREATE.
    let cur = AtomicU64::new(NO_QUEUE);
    let dbs = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let (mut r1, mut r2, mut r3) = (rng.fork(), rng.fork(), rng.fork());
    let q = &q;
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..(ctx.ops / 10).max(5) {
                let sdma = sdma_ok && r1.chance(1, 2);
                match q.create(sdma) {
                    Ok((qid, db)) => {
                        ctx.ok.fetch_add(1, Relaxed);
                        dbs.store(db, Release);
                        cur.store(u64::from(qid) | (u64::from(sdma) << 63), Release);
                    }
                    Err(e) => {
                        ctx.problem(format!("CREATE_QUEUE: {}", fuzz::errno_str(e)));
                        continue;
                    }
                }
                std::thread::sleep(Duration::from_micros(r1.below(3000)));
                let v = cur.swap(NO_QUEUE, AcqRel);
                // Only this thread destroys: it must succeed, busy or not.
                ctx.allow(q.destroy(v as u32), &[], "DESTROY_QUEUE");
            }
            stop.store(true, Release);
        });
        // Work: packets, write pointers and doorbells, whether or not a
        // queue still (or already) serves them.
        s.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Acquire) {
                let db = dbs.load(Acquire);
                if cur.load(Acquire) >> 63 == 1 {
                    q.sdma_submit(i, i as u32, db);
                } else {
                    q.aql_submit(i, db);
                }
                i += 1;
                ctx.extra.fetch_add(1, Relaxed);
                if r2.chance(1, 8) {
                    std::thread::yield_now();
                }
            }
        });
        // UPDATE_QUEUE of whatever is live: EFAULT once it is gone (upstream
        // pqm_update_queue_properties: no such queue).
        s.spawn(|| {
            while !stop.load(Acquire) {
                let v = cur.load(Acquire);
                if v == NO_QUEUE {
                    std::thread::yield_now();
                    continue;
                }
                let r = q.update(v as u32, v >> 63 == 1, r3.below(101) as u32, r3.below(16) as u32);
                ctx.allow(r, &[libc::EFAULT], "UPDATE_QUEUE");
            }
        });
    });
    q.round_trip(16, 60).map_err(|e| format!("after the race: {e}"))
}

pub(super) fn queue_process_exit(ctx: &Ctx, rng: &mut Rng) -> Check {
    for round in 0..3u64 {
        let delay = rng.below(20_000);
        let kill = rng.chance(1, 2);
        let gi = rng.below(ctx.gpus.len() as u64) as usize;
        let gpus = ctx.gpus.clone();
        // SAFETY: the grandchild builds queues, works on them from threads
        // and exits (or is killed) mid-way.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // The grandchild leaves with `_exit` (no destructors of the
            // parent's state run twice): exit status 3 = set-up failed.
            let leave = |code: i32| -> ! {
                // SAFETY: `_exit` ends the process without unwinding.
                unsafe { libc::_exit(code) }
            };
            let Ok(k) = Kfd::open() else { leave(3) };
            let Ok(fd) = bind(&k, &gpus[gi]) else { leave(3) };
            let Ok(q) = QueueMem::new(k.fd, fd, &gpus[gi], 1 << 39) else { leave(3) };
            let q: &'static QueueMem = Box::leak(Box::new(q));
            std::mem::forget(k);
            let sdma = q.props.sdma_engines > 0;
            let mut live = Vec::new();
            for i in 0..4 {
                if let Ok((id, db)) = q.create(sdma && i % 2 == 1) {
                    live.push((id, db, sdma && i % 2 == 1));
                }
            }
            let live: &'static [(u32, u64, bool)] = Box::leak(live.into_boxed_slice());
            std::thread::spawn(move || {
                let mut i = 0u64;
                loop {
                    for &(_, db, s) in live {
                        if s { q.sdma_submit(i, i as u32, db) } else { q.aql_submit(i, db) }
                    }
                    i += 1;
                }
            });
            std::thread::spawn(move || loop {
                for &(id, _, s) in live {
                    let _ = q.update(id, s, (id * 37) % 101, id % 16);
                }
            });
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_micros(delay / 2));
                for &(id, _, _) in live.iter().rev().take(2) {
                    let _ = q.destroy(id);
                }
            });
            std::thread::sleep(Duration::from_micros(delay));
            // SAFETY: exit_group with everything live.
            unsafe { libc::_exit(0) };
        }
        ensure(pid > 0, "fork")?;
        if kill {
            std::thread::sleep(Duration::from_micros(delay / 2));
            // SAFETY: our grandchild.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let st = wait_child(pid, ROUND_SECS / 2).ok_or("grandchild hung (killed)")?;
        let ok = (libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0) || (kill && libc::WIFSIGNALED(st));
        ensure(ok, format!("grandchild {round}: status {st:#x} (exit 3: setup failed)"))?;
        ctx.ok.fetch_add(1, Relaxed);
        let dir = format!("/sys/class/kfd/kfd/proc/{pid}");
        for _ in 0..100 {
            if std::fs::metadata(&dir).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        ensure(std::fs::metadata(&dir).is_err(), format!("{dir} still there after the process ended"))?;
    }
    // The device still serves queues.
    let (_k, _fds, q) = queue_setup(ctx, rng, 1 << 39)?;
    q.round_trip(8, 60).map_err(|e| format!("after the exits: {e}"))
}

pub(super) fn xnack_vs_create_queue(ctx: &Ctx, rng: &mut Rng) -> Check {
    let (k, _fds, q) = queue_setup(ctx, rng, 1 << 39)?;
    // A queue exists for sure while `alive` is odd: it turns odd after
    // CREATE returned and even before DESTROY is called.
    let alive = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let bad = AtomicUsize::new(0);
    let (mut r1, mut r2) = (rng.fork(), rng.fork());
    let q = &q;
    let kfd = k.fd;
    let set = |v: i32| {
        let mut a = uapi::kfd_ioctl_set_xnack_mode_args { xnack_enabled: v };
        ioctl_fd(kfd, uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut a as *mut _ as usize).map(|_| a.xnack_enabled)
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..(ctx.ops / 10).max(5) {
                match q.create(false) {
                    Ok((qid, _)) => {
                        ctx.ok.fetch_add(1, Relaxed);
                        alive.fetch_add(1, AcqRel);
                        std::thread::sleep(Duration::from_micros(r1.below(2000)));
                        alive.fetch_add(1, AcqRel);
                        ctx.allow(q.destroy(qid), &[], "DESTROY_QUEUE");
                    }
                    // Created while XNACK changed: no errno is allowed
                    // (the mode is the process's, queues do not refuse it).
                    Err(e) => ctx.problem(format!("CREATE_QUEUE: {}", fuzz::errno_str(e))),
                }
                std::thread::sleep(Duration::from_micros(r1.below(500)));
            }
            stop.store(true, Release);
        });
        s.spawn(|| {
            while !stop.load(Acquire) {
                let want = r2.below(2) as i32;
                let before = alive.load(Acquire);
                let r = set(want);
                let after = alive.load(Acquire);
                // EBUSY: queues exist; EPERM: a GPU without per-process XNACK.
                if ctx.allow(r, &[libc::EBUSY, libc::EPERM], "SET_XNACK_MODE") && before == after && before % 2 == 1 {
                    bad.fetch_add(1, Relaxed);
                }
                ctx.extra.fetch_add(1, Relaxed);
            }
        });
    });
    ensure(bad.load(Relaxed) == 0, format!("SET_XNACK_MODE succeeded {} times while a queue surely existed", bad.load(Relaxed)))?;
    // No queue left: setting works (or EPERM), and the query agrees.
    let now = set(-1).map_err(|e| format!("query: {}", errno_name(e)))?;
    match set(1 - now) {
        Ok(_) => ensure(set(-1) == Ok(1 - now), "mode after a successful set")?,
        Err(libc::EPERM) if now == 0 => {}
        Err(e) => return Err(format!("SET_XNACK_MODE without queues: {}", errno_name(e))),
    }
    q.round_trip(8, 60).map_err(|e| format!("after the race: {e}"))
}
