// SPDX-License-Identifier: GPL-2.0
//! kfd-smi-tests: every SMI event kind, driven by a real action and read
//! from an SMI file (`AMDKFD_IOC_SMI_EVENTS`), with its fields checked
//! against the action (upstream formats, `KFD_EVENT_FMT_*` of
//! include/uapi/linux/kfd_ioctl.h):
//!
//! - VMFAULT: a GPU access (the virtual GPU's test ioctl) outside any VMA;
//! - THERMAL_THROTTLE: the virtual GPU's hwmon knob `vgpu_throttle`;
//! - GPU_PRE_RESET / GPU_POST_RESET: debugfs `hang_hws` + DESTROY_QUEUE;
//! - PAGE_FAULT_START / _END and MIGRATE_START / _END (trigger PAGEFAULT_GPU):
//!   an XNACK-on GPU read and write of cold memory;
//! - MIGRATE_START / _END (PREFETCH, PAGEFAULT_CPU): PREFETCH_LOC to VRAM,
//!   a CPU touch, PREFETCH_LOC back;
//! - UNMAP_FROM_GPU: MADV_DONTNEED (MMU_NOTIFY), a migration
//!   (MMU_NOTIFY_MIGRATE), SET_ATTR NO_ACCESS and munmap (UNMAP_FROM_CPU);
//! - QUEUE_EVICTION / _RESTORE: an XNACK-off invalidation and its restore;
//! - a client without CAP_SYS_ADMIN sees its own SVM events and none of
//!   another process's; a root client sees both.
//!
//! Needs root, a gfx90a (SVM, XNACK) GPU and debugfs.  Prints
//! `kfd-smi-tests: N passed, N failed`.

use kfd_tests::harness::{ensure, ensure_eq, Check, Harness};
use kfd_tests::kfd::{errno_name, Kfd};
use kfd_tests::ops::{bind, close, drop_sys_admin, recv_u64, send_u64, socketpair, topology_gpus, TopoGpu};
use kfd_tests::queue::QueueMem;
use kfd_tests::smi::{bit, SmiFile};
use kfd_tests::svm::{ensure_debugfs, svm_gpu, Anon, Ctx, Gpu, PAGE};
use kfd_uapi as uapi;
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;
/// `KFD_IOCTL_SVM_LOCATION_UNDEFINED`, as SMI prints it.
const UNDEFINED: u32 = 0xffff_ffff;

fn err(what: &str) -> impl Fn(i32) -> String + '_ {
    move |e| format!("{what}: {}", errno_name(e))
}

fn getpid() -> i32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

// ---------------------------------------------------------------------------
// The SMI client.

/// Reads `smi` until `done` holds for the events so far, up to `secs`.
fn until(smi: &SmiFile, secs: u64, done: impl Fn(&[Ev]) -> bool) -> Vec<Ev> {
    let t = Instant::now();
    let mut all = Vec::new();
    loop {
        all.extend(parse(&smi.drain(100)));
        if done(&all) || t.elapsed() > Duration::from_secs(secs) {
            return all;
        }
    }
}

/// One event line: its id and the fields after it.
#[derive(Clone, Debug)]
struct Ev {
    id: u32,
    rest: String,
}

fn parse(text: &str) -> Vec<Ev> {
    text.lines()
        .filter_map(|l| {
            let (id, rest) = l.split_once(' ')?;
            Some(Ev { id: u32::from_str_radix(id, 16).ok()?, rest: rest.to_string() })
        })
        .collect()
}

fn hex(s: &str) -> Result<u64, String> {
    u64::from_str_radix(s, 16).map_err(|e| format!("{s:?}: {e}"))
}

/// The common head of the SVM events: `"%lld -%d "`: (ns, pid, the rest).
fn svm_head(ev: &Ev) -> Result<(i64, i32, Vec<&str>), String> {
    let f: Vec<&str> = ev.rest.split(' ').collect();
    ensure(f.len() >= 3, format!("too few fields: {ev:?}"))?;
    let ns = f[0].parse::<i64>().map_err(|e| format!("ns in {ev:?}: {e}"))?;
    let pid = f[1].strip_prefix('-').and_then(|p| p.parse::<i32>().ok()).ok_or(format!("pid in {ev:?}"))?;
    Ok((ns, pid, f[2..].to_vec()))
}

/// `"@%lx(%lx)"` (or `"@%lx(%x)"`): two hex numbers.
fn at(s: &str) -> Result<(u64, u64), String> {
    let inner = s.strip_prefix('@').and_then(|s| s.strip_suffix(')')).ok_or(format!("not @a(b): {s:?}"))?;
    let (a, b) = inner.split_once('(').ok_or(format!("not @a(b): {s:?}"))?;
    Ok((hex(a)?, hex(b)?))
}

/// A page fault event: (ns, pid, page, gpu_id, R/W or M/U).
fn page_fault(ev: &Ev) -> Result<(i64, i32, u64, u32, String), String> {
    let (ns, pid, f) = svm_head(ev)?;
    ensure_eq(f.len(), 2, "page fault fields")?;
    let (page, node) = at(f[0])?;
    Ok((ns, pid, page, node as u32, f[1].to_string()))
}

/// A migration: start page, pages, from, to, and the trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mig {
    ns: i64,
    pid: i32,
    start: u64,
    size: u64,
    from: u32,
    to: u32,
    trigger: i32,
    /// START: (prefetch_loc, preferred_loc); END: (error code, 0).
    extra: (i64, i64),
}

fn migration(ev: &Ev) -> Result<Mig, String> {
    let (ns, pid, f) = svm_head(ev)?;
    ensure_eq(f.len(), 4, &format!("migration fields of {ev:?}"))?;
    let (start, size) = at(f[0])?;
    let (from, to) = f[1].split_once("->").ok_or(format!("from->to in {ev:?}"))?;
    let (from, to) = (hex(from)? as u32, hex(to)? as u32);
    let (trigger, extra) = if ev.id == uapi::KFD_SMI_EVENT_MIGRATE_START {
        let (p, q) = f[2].split_once(':').ok_or(format!("locs in {ev:?}"))?;
        (f[3].parse().map_err(|_| format!("trigger in {ev:?}"))?, (hex(p)? as i64, hex(q)? as i64))
    } else {
        let t = f[2].parse().map_err(|_| format!("trigger in {ev:?}"))?;
        (t, (f[3].parse().map_err(|_| format!("error in {ev:?}"))?, 0))
    };
    Ok(Mig { ns, pid, start, size, from, to, trigger, extra })
}

/// The MIGRATE_START/END pairs of `evs`, in order.
fn migrations(evs: &[Ev]) -> Result<Vec<(Mig, Mig)>, String> {
    let mut out = Vec::new();
    let mut open: Vec<Mig> = Vec::new();
    for e in evs {
        if e.id == uapi::KFD_SMI_EVENT_MIGRATE_START {
            open.push(migration(e)?);
        } else if e.id == uapi::KFD_SMI_EVENT_MIGRATE_END {
            let end = migration(e)?;
            let i = open
                .iter()
                .position(|s| (s.start, s.size, s.from, s.to, s.trigger) == (end.start, end.size, end.from, end.to, end.trigger))
                .ok_or(format!("MIGRATE_END without a START: {e:?}"))?;
            let start = open.remove(i);
            ensure(end.ns >= start.ns, format!("END before START: {start:?} {end:?}"))?;
            out.push((start, end));
        }
    }
    ensure(open.is_empty(), format!("MIGRATE_START without an END: {open:?}"))?;
    Ok(out)
}

/// An unmap: (pid, start page, pages, gpu_id, trigger).
fn unmap(ev: &Ev) -> Result<(i32, u64, u64, u32, i32), String> {
    let (_, pid, f) = svm_head(ev)?;
    ensure_eq(f.len(), 3, "unmap fields")?;
    let (start, size) = at(f[0])?;
    Ok((pid, start, size, hex(f[1])? as u32, f[2].parse().map_err(|_| format!("trigger in {ev:?}"))?))
}

fn of(evs: &[Ev], id: u32) -> Vec<Ev> {
    evs.iter().filter(|e| e.id == id).cloned().collect()
}

fn pfn(addr: usize) -> u64 {
    (addr / PAGE) as u64
}

/// Small pages only: a huge page split would add its own invalidation of
/// the whole 2 MiB to the ones a test expects.
fn small_pages(len: usize) -> Result<Anon, String> {
    let mem = Anon::new(len)?;
    // SAFETY: our own mapping.
    ensure_eq(unsafe { libc::madvise(mem.addr as *mut libc::c_void, len, libc::MADV_NOHUGEPAGE) }, 0, "MADV_NOHUGEPAGE")?;
    Ok(mem)
}

/// A context with XNACK on or off.
fn ctx(gpu: &Gpu, xnack: bool) -> Result<Ctx, String> {
    let ctx = Ctx::new(gpu)?;
    ensure_eq(ctx.set_xnack(xnack).map_err(err("SET_XNACK_MODE"))?, i32::from(xnack), "xnack mode")?;
    Ok(ctx)
}

// ---------------------------------------------------------------------------
// The events.

fn vm_fault(gpu: &Gpu) -> Check {
    let ctx = ctx(gpu, true)?;
    let smi = SmiFile::open(&ctx.kfd, gpu.gpu_id, bit(uapi::KFD_SMI_EVENT_VMFAULT))?;
    let mut b = [0u8; 8];
    // Page 1 is in no VMA: a fatal fault, reported as an interrupt.
    match ctx.gpu_read(0x1000, &mut b) {
        Err(libc::EFAULT) => {}
        other => return Err(format!("GPU read of page 1: {other:?}, want EFAULT")),
    }
    let evs = until(&smi, 5, |e| !e.is_empty());
    let comm = std::fs::read_to_string("/proc/self/comm").map_err(|e| e.to_string())?;
    let want = format!("{:x}:{}", getpid(), comm.trim_end());
    ensure_eq(evs.len(), 1, &format!("VMFAULT events: {evs:?}"))?;
    ensure_eq(evs[0].rest.as_str(), want.as_str(), "VMFAULT pid:comm")
}

/// The hwmon directory of `gpu`'s render node.
fn hwmon_dir(gpu: &Gpu) -> Result<String, String> {
    let base = format!("/sys/class/drm/renderD{}/device/hwmon", gpu.render_minor);
    let d = std::fs::read_dir(&base).map_err(|e| format!("{base}: {e}"))?;
    for e in d.flatten() {
        return Ok(e.path().to_string_lossy().to_string());
    }
    Err(format!("no hwmon under {base}"))
}

fn thermal_throttle(gpu: &Gpu) -> Check {
    let ctx = Ctx::new(gpu)?;
    let smi = SmiFile::open(&ctx.kfd, gpu.gpu_id, bit(uapi::KFD_SMI_EVENT_THERMAL_THROTTLE))?;
    let knob = format!("{}/vgpu_throttle", hwmon_dir(gpu)?);
    std::fs::write(&knob, "x\n").err().ok_or("vgpu_throttle accepted \"x\"")?;
    std::fs::write(&knob, "0x5\n").map_err(|e| format!("{knob}: {e}"))?;
    std::fs::write(&knob, "12\n").map_err(|e| format!("{knob}: {e}"))?;
    let evs = until(&smi, 5, |e| e.len() >= 2);
    ensure_eq(evs.len(), 2, &format!("THERMAL_THROTTLE events: {evs:?}"))?;
    let mut counts = Vec::new();
    for (ev, mask) in evs.iter().zip([0x5u64, 12]) {
        // "%llx:%llx": the bitmask and the throttling-interrupt count.
        let (m, c) = ev.rest.split_once(':').ok_or(format!("{ev:?}"))?;
        ensure_eq(hex(m)?, mask, "throttle bitmask")?;
        counts.push(hex(c)?);
    }
    ensure_eq(counts[1], counts[0] + 1, "throttle counter counts each interrupt")
}

fn gpu_reset() -> Check {
    ensure_debugfs()?;
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let gpu: TopoGpu = topology_gpus().into_iter().next().ok_or("no GPU")?;
    let render = bind(&k, &gpu)?;
    let smi = SmiFile::open(&k, gpu.gpu_id, bit(uapi::KFD_SMI_EVENT_GPU_PRE_RESET) | bit(uapi::KFD_SMI_EVENT_GPU_POST_RESET))?;
    let q = QueueMem::new(k.fd, render, &gpu, 1 << 39)?;
    let mut seqs = Vec::new();
    for round in 0..2 {
        let (qid, _) = q.create(false).map_err(err("CREATE_QUEUE"))?;
        std::fs::write("/sys/kernel/debug/kfd/hang_hws", format!("{}\n", gpu.gpu_id)).map_err(|e| format!("hang_hws: {e}"))?;
        // Detected at the preemption: the GPU is reset (queue recovery).
        match q.destroy(qid) {
            Err(libc::ETIME) => {}
            other => return Err(format!("DESTROY_QUEUE on a hung scheduler: {other:?}, want ETIME")),
        }
        let evs = until(&smi, 5, |e| e.len() >= 2);
        ensure_eq(evs.len(), 2, &format!("round {round}: reset events {evs:?}"))?;
        ensure_eq((evs[0].id, evs[1].id), (uapi::KFD_SMI_EVENT_GPU_PRE_RESET, uapi::KFD_SMI_EVENT_GPU_POST_RESET), "pre, then post")?;
        // "%x %s": the reset sequence number and the cause (none after).
        let (seq, cause) = evs[0].rest.split_once(' ').ok_or(format!("{:?}", evs[0]))?;
        ensure_eq(cause, "HWS hang", "pre-reset cause")?;
        ensure_eq(evs[1].rest.clone(), format!("{seq} "), "post-reset line")?;
        seqs.push(hex(seq)?);
    }
    q.release();
    close(render);
    ensure_eq(seqs[1], seqs[0] + 1, "reset sequence number counts resets")
}

fn page_faults(gpu: &Gpu) -> Check {
    let ctx = ctx(gpu, true)?;
    let mask = [
        uapi::KFD_SMI_EVENT_PAGE_FAULT_START,
        uapi::KFD_SMI_EVENT_PAGE_FAULT_END,
        uapi::KFD_SMI_EVENT_MIGRATE_START,
        uapi::KFD_SMI_EVENT_MIGRATE_END,
    ]
    .iter()
    .fold(0, |m, &e| m | bit(e));
    let smi = SmiFile::open(&ctx.kfd, gpu.gpu_id, mask)?;
    let mem = Anon::new(4 * MIB)?;
    mem.fill(3);
    let me = getpid();
    // A read of page 5 of cold memory, then a write in the other 2 MiB.
    let mut b = [0u8; 16];
    let faults = ctx.gpu_read(mem.addr + 5 * PAGE, &mut b).map_err(err("GPU read"))?;
    ensure(faults >= 1, "the read raised a retry fault")?;
    let w = mem.addr + 3 * MIB + 7 * PAGE;
    ctx.gpu_write(w, &[1u8; 16]).map_err(err("GPU write"))?;
    let evs = parse(&smi.drain(1000));
    let starts = of(&evs, uapi::KFD_SMI_EVENT_PAGE_FAULT_START);
    let ends = of(&evs, uapi::KFD_SMI_EVENT_PAGE_FAULT_END);
    ensure(!starts.is_empty() && starts.len() == ends.len(), format!("fault starts/ends: {evs:?}"))?;
    let (ns0, pid, page, node, rw) = page_fault(&starts[0])?;
    ensure_eq((pid, page, node, rw.as_str()), (me, pfn(mem.addr + 5 * PAGE), gpu.gpu_id, "R"), "first PAGE_FAULT_START")?;
    let (ns1, pid, page, node, mu) = page_fault(&ends[0])?;
    // XNACK on, default attributes: the first touch migrates to VRAM.
    ensure_eq((pid, page, node, mu.as_str()), (me, pfn(mem.addr + 5 * PAGE), gpu.gpu_id, "M"), "first PAGE_FAULT_END")?;
    ensure(ns1 >= ns0, "END after START")?;
    let (_, _, page, _, rw) = page_fault(starts.last().unwrap())?;
    ensure_eq((page, rw.as_str()), (pfn(w), "W"), "the write's PAGE_FAULT_START")?;
    // Each fault migrated its 2 MiB window to this GPU, trigger PAGEFAULT_GPU.
    let migs = migrations(&evs)?;
    ensure(!migs.is_empty(), format!("no migration in {evs:?}"))?;
    for (s, e) in &migs {
        ensure_eq((s.pid, s.from, s.to, s.trigger), (me, 0, gpu.gpu_id, 1), &format!("fault migration {s:?}"))?;
        ensure_eq(s.extra, (i64::from(UNDEFINED), i64::from(UNDEFINED)), "prefetch:preferred locations")?;
        ensure_eq(e.extra.0, 0, "migration error code")?;
        ensure(s.size >= 1 && s.size <= 512, format!("window size {s:?}"))?;
    }
    let covers = |p: u64| migs.iter().any(|(s, _)| s.start <= p && p < s.start + s.size);
    ensure(covers(pfn(mem.addr + 5 * PAGE)) && covers(pfn(w)), format!("migrations miss the faulting pages: {migs:?}"))
}

fn migrations_prefetch_and_cpu_fault(gpu: &Gpu) -> Check {
    let ctx = ctx(gpu, true)?;
    let smi = SmiFile::open(&ctx.kfd, gpu.gpu_id, bit(uapi::KFD_SMI_EVENT_MIGRATE_START) | bit(uapi::KFD_SMI_EVENT_MIGRATE_END))?;
    let mem = Anon::new(2 * MIB)?;
    mem.fill(9);
    let me = getpid();
    let (first, pages) = (pfn(mem.addr), (mem.len / PAGE) as u64);
    // PREFETCH_LOC to VRAM: one migration of the range, 0 -> gpu.
    ctx.prefetch(mem.addr, mem.len, gpu.gpu_id).map_err(err("PREFETCH_LOC gpu"))?;
    let migs = migrations(&parse(&smi.drain(1000)))?;
    ensure_eq(migs.len(), 1, &format!("prefetch migrations {migs:?}"))?;
    let (s, e) = migs[0];
    ensure_eq(
        (s.pid, s.start, s.size, s.from, s.to, s.trigger, s.extra),
        (me, first, pages, 0, gpu.gpu_id, 0, (i64::from(gpu.gpu_id), i64::from(UNDEFINED))),
        "prefetch MIGRATE_START",
    )?;
    ensure_eq((e.pid, e.trigger, e.extra.0), (me, 0, 0), "prefetch MIGRATE_END")?;
    // A CPU read of page 100: the CPU fault brings (part of) it back.
    // SAFETY: inside our mapping.
    let v = unsafe { std::ptr::read_volatile((mem.addr + 100 * PAGE) as *const u8) };
    ensure_eq(v, 9u8.wrapping_add(100), "CPU read after the prefetch")?;
    let migs = migrations(&parse(&smi.drain(1000)))?;
    ensure(!migs.is_empty(), "no migration for the CPU fault")?;
    for (s, e) in &migs {
        ensure_eq((s.pid, s.from, s.to, s.trigger, e.extra.0), (me, gpu.gpu_id, 0, 2, 0), &format!("CPU-fault migration {s:?}"))?;
        ensure(s.start >= first && s.start + s.size <= first + pages, format!("outside the range: {s:?}"))?;
    }
    ensure(migs.iter().any(|(s, _)| s.start <= first + 100 && first + 100 < s.start + s.size), format!("page 100 not covered: {migs:?}"))?;
    let back: u64 = migs.iter().map(|(s, _)| s.size).sum();
    // PREFETCH_LOC back to system memory: the rest, gpu -> 0, trigger PREFETCH.
    ctx.prefetch(mem.addr, mem.len, 0).map_err(err("PREFETCH_LOC 0"))?;
    let migs = migrations(&parse(&smi.drain(1000)))?;
    if back < pages {
        ensure_eq(migs.len(), 1, &format!("prefetch-back migrations {migs:?}"))?;
        let (s, _) = migs[0];
        ensure_eq(
            (s.start, s.size, s.from, s.to, s.trigger, s.extra),
            (first, pages, gpu.gpu_id, 0, 0, (0, i64::from(UNDEFINED))),
            "prefetch-back MIGRATE_START",
        )?;
    }
    // Nothing left in VRAM: a second prefetch back moves nothing, sends nothing.
    ctx.prefetch(mem.addr, mem.len, 0).map_err(err("PREFETCH_LOC 0 again"))?;
    let rest = smi.drain(300);
    ensure(rest.is_empty(), format!("events for a migration that moved nothing: {rest:?}"))
}

fn unmap_from_gpu(gpu: &Gpu) -> Check {
    let ctx = ctx(gpu, true)?;
    let smi = SmiFile::open(&ctx.kfd, gpu.gpu_id, bit(uapi::KFD_SMI_EVENT_UNMAP_FROM_GPU))?;
    let me = getpid();
    let mem = small_pages(2 * MIB)?;
    mem.fill(4);
    // In place (PREFERRED_LOC system memory): the GPU maps system pages.
    ctx.prefer(mem.addr, mem.len, 0).map_err(err("PREFERRED_LOC 0"))?;
    let mut buf = vec![0u8; mem.len];
    ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read"))?;
    let _ = smi.drain(100);
    let (first, all) = (pfn(mem.addr), (mem.len / PAGE) as u64);
    // The events of one step: those with `trigger` cover `[start,
    // start + pages)` exactly (the first) or part of it, or, when the
    // step spans several SVM ranges, tile it in order (one event per
    // range, as upstream's per-prange `svm_range_unmap_from_gpus`: here a
    // PREFETCH_LOC of part of the range split it); with `split`, the
    // kernel's own invalidation of the 2 MiB around a VMA split (munmap of
    // part of a VMA: `vma_adjust_trans_huge` → `__split_huge_pmd`
    // invalidates the PMD's range, MMU_NOTIFY_CLEAR, huge or not) may come
    // too, as trigger MMU_NOTIFY inside the mapping.
    let check = |what: &str, start: usize, pages: u64, trigger: i32, split: bool| -> Check {
        let evs = parse(&smi.drain(1000));
        let mut mine = Vec::new();
        for e in &evs {
            let (pid, s, n, node, t) = unmap(e)?;
            ensure_eq((pid, node), (me, gpu.gpu_id), &format!("{what}: {e:?}"))?;
            if t == trigger {
                ensure(s >= pfn(start) && s + n <= pfn(start) + pages, format!("{what}: {e:?} outside {:#x}+{pages}", pfn(start)))?;
                mine.push((s, n));
            } else {
                ensure(split && t == 0 && s >= first && s + n <= first + all, format!("{what}: unexpected {e:?} in {evs:?}"))?;
            }
        }
        ensure(!mine.is_empty(), format!("{what}: no UNMAP_FROM_GPU with trigger {trigger}: {evs:?}"))?;
        if mine[0] == (pfn(start), pages) {
            return Ok(());
        }
        let mut at = pfn(start);
        for &(s, n) in &mine {
            ensure_eq(s, at, &format!("{what}: unmaps {mine:x?} do not tile {:#x}+{pages} in order", pfn(start)))?;
            at = s + n;
        }
        ensure_eq(at, pfn(start) + pages, &format!("{what}: unmaps {mine:x?} end"))
    };
    // MADV_DONTNEED of pages 3..5: the CPU mapping changes (MMU_NOTIFY).
    // SAFETY: two pages of our mapping.
    ensure_eq(unsafe { libc::madvise((mem.addr + 3 * PAGE) as *mut libc::c_void, 2 * PAGE, libc::MADV_DONTNEED) }, 0, "madvise")?;
    check("MADV_DONTNEED", mem.addr + 3 * PAGE, 2, 0, false)?;
    // A migration moves the pages (MMU_NOTIFY_MIGRATE).
    ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read 2"))?;
    let _ = smi.drain(100);
    ctx.prefetch(mem.addr, 16 * PAGE, gpu.gpu_id).map_err(err("PREFETCH_LOC"))?;
    let evs = parse(&smi.drain(1000));
    ensure(
        evs.iter().any(|e| unmap(e).is_ok_and(|(pid, s, _, node, t)| (pid, s, node, t) == (me, pfn(mem.addr), gpu.gpu_id, 1))),
        format!("no MMU_NOTIFY_MIGRATE unmap at the range start: {evs:?}"),
    )?;
    // SET_ATTR NO_ACCESS (UNMAP_FROM_CPU): the whole range.
    ctx.svm_set(mem.addr, mem.len, &[(uapi::KFD_IOCTL_SVM_ATTR_NO_ACCESS, gpu.gpu_id)]).map_err(err("NO_ACCESS"))?;
    check("NO_ACCESS", mem.addr, all, 2, false)?;
    // munmap of the last 4 pages (UNMAP_FROM_CPU).
    let tail = mem.addr + mem.len - 4 * PAGE;
    // SAFETY: the last pages of our mapping (Anon's drop unmaps the rest,
    // and munmap of an unmapped part is harmless).
    ensure_eq(unsafe { libc::munmap(tail as *mut libc::c_void, 4 * PAGE) }, 0, "munmap")?;
    check("munmap", tail, 4, 2, true)
}

fn queue_evict_restore(gpu: &Gpu) -> Check {
    let ctx = ctx(gpu, false)?;
    let smi = SmiFile::open(&ctx.kfd, gpu.gpu_id, bit(uapi::KFD_SMI_EVENT_QUEUE_EVICTION) | bit(uapi::KFD_SMI_EVENT_QUEUE_RESTORE))?;
    let me = getpid();
    let mem = small_pages(2 * MIB)?;
    mem.fill(6);
    ctx.svm_set(mem.addr, mem.len, &[(uapi::KFD_IOCTL_SVM_ATTR_ACCESS, gpu.gpu_id)]).map_err(err("SET_ATTR ACCESS"))?;
    let mut buf = vec![0u8; 64];
    ensure_eq(ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read"))?, 0, "faults with XNACK off after ACCESS")?;
    let before = smi.drain(200);
    ensure(before.is_empty(), format!("events before any invalidation: {before:?}"))?;
    for round in 0..2 {
        // An invalidation of a mapped range quiesces the process; the
        // restore worker remaps and resumes it.
        // SAFETY: one page of our mapping.
        ensure_eq(unsafe { libc::madvise((mem.addr + 9 * PAGE) as *mut libc::c_void, PAGE, libc::MADV_DONTNEED) }, 0, "madvise")?;
        let evs = until(&smi, 10, |e| e.iter().any(|e| e.id == uapi::KFD_SMI_EVENT_QUEUE_RESTORE));
        ensure_eq(evs.len(), 2, &format!("round {round}: {evs:?}"))?;
        ensure_eq((evs[0].id, evs[1].id), (uapi::KFD_SMI_EVENT_QUEUE_EVICTION, uapi::KFD_SMI_EVENT_QUEUE_RESTORE), "eviction, then restore")?;
        let (ns0, pid, f) = svm_head(&evs[0])?;
        // "%lld -%d %x %d": node, trigger SVM (0).
        ensure_eq((pid, f.clone()), (me, vec![format!("{:x}", gpu.gpu_id).as_str(), "0"]), "QUEUE_EVICTION")?;
        let (ns1, pid, f) = svm_head(&evs[1])?;
        ensure_eq((pid, f.clone()), (me, vec![format!("{:x}", gpu.gpu_id).as_str(), "0"]), "QUEUE_RESTORE")?;
        ensure(ns1 >= ns0, "restore after eviction")?;
        // The GPU reads the range again without a fault.
        ensure_eq(ctx.gpu_read(mem.addr + 9 * PAGE, &mut buf).map_err(err("GPU read after restore"))?, 0, "faults after restore")?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Privilege.

/// A prefetch to VRAM and back of 1 MiB (MIGRATE events of the caller).
fn prefetch_round(ctx: &Ctx) -> Check {
    let mem = Anon::new(MIB)?;
    mem.fill(1);
    ctx.prefetch(mem.addr, mem.len, ctx.gpu.gpu_id).map_err(err("PREFETCH_LOC gpu"))?;
    ctx.prefetch(mem.addr, mem.len, 0).map_err(err("PREFETCH_LOC 0"))
}

fn pids_of(evs: &[Ev]) -> Vec<i32> {
    evs.iter().filter_map(|e| svm_head(e).ok().map(|(_, pid, _)| pid)).collect()
}

/// A client without CAP_SYS_ADMIN (in a child) sees its own SVM events and
/// none of its parent's; the parent's root client sees both processes.
fn unprivileged_sees_only_itself(gpu: &Gpu) -> Check {
    let mask = bit(uapi::KFD_SMI_EVENT_MIGRATE_START) | bit(uapi::KFD_SMI_EVENT_MIGRATE_END);
    let root_ctx = ctx(gpu, true)?;
    let root = SmiFile::open(&root_ctx.kfd, gpu.gpu_id, mask | bit(uapi::KFD_SMI_EVENT_ALL_PROCESS))?;
    let (a, b) = socketpair();
    let parent = getpid();
    let g = gpu.clone();
    // SAFETY: the child runs the closure and exits.
    let child = unsafe { libc::fork() };
    if child == 0 {
        close(a);
        let r = (|| -> Check {
            drop_sys_admin()?;
            let c = ctx(&g, true)?;
            let smi = SmiFile::open(&c.kfd, g.gpu_id, mask | bit(uapi::KFD_SMI_EVENT_ALL_PROCESS))?;
            send_u64(b, 1);
            recv_u64(b).ok_or("the parent did not say it migrated")?;
            prefetch_round(&c)?;
            let evs = parse(&smi.drain(1000));
            let pids = pids_of(&evs);
            ensure(pids.contains(&getpid()), format!("own migrations missing: {evs:?}"))?;
            ensure(!pids.contains(&parent), format!("saw the parent's migrations: {evs:?}"))?;
            ensure(pids.iter().all(|&p| p == getpid()), format!("saw another process: {evs:?}"))
        })();
        let msg = r.err().unwrap_or_default();
        // SAFETY: write our message and exit without destructors.
        unsafe {
            libc::write(b, msg.as_ptr().cast(), msg.len());
            libc::_exit(if msg.is_empty() { 0 } else { 1 });
        }
    }
    close(b);
    let ready = recv_u64(a);
    let mine = if ready.is_some() { prefetch_round(&root_ctx) } else { Err("the child did not start".into()) };
    send_u64(a, 1);
    let st = kfd_tests::ops::wait_child(child, 120);
    let mut buf = [0u8; 1024];
    // SAFETY: our buffer.
    let n = unsafe { libc::read(a, buf.as_mut_ptr().cast(), buf.len()) };
    close(a);
    mine?;
    match st {
        Some(s) if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0 => {}
        Some(_) => return Err(if n > 0 { String::from_utf8_lossy(&buf[..n as usize]).to_string() } else { "child failed".into() }),
        None => return Err("child hung".into()),
    }
    let pids = pids_of(&parse(&root.drain(500)));
    ensure(pids.contains(&parent), "root client: own migrations missing")?;
    ensure(pids.contains(&child), format!("root client: the child's ({child}) migrations missing: {pids:?}"))
}

fn main() {
    let mut h = Harness::new();
    let Some(gpu) = svm_gpu() else {
        h.run("an SVM-capable GPU exists", || Err("no GPU advertises HSA_CAP_SVMAPI_SUPPORTED".into()));
        std::process::exit(h.finish("kfd-smi-tests"));
    };
    let g = &gpu;
    h.run("vmfault: a GPU access outside any VMA", || vm_fault(g));
    h.run("thermal_throttle: the virtual GPU's hwmon knob", || thermal_throttle(g));
    h.run("gpu_reset: hang_hws + DESTROY_QUEUE, pre/post, sequence number", gpu_reset);
    h.run("page_fault: XNACK-on GPU read and write, with their migrations", || page_faults(g));
    h.run("migrate: prefetch to VRAM, CPU fault, prefetch back", || migrations_prefetch_and_cpu_fault(g));
    h.run("unmap_from_gpu: madvise, migration, NO_ACCESS, munmap", || unmap_from_gpu(g));
    h.run("queue_eviction/restore: XNACK-off invalidation", || queue_evict_restore(g));
    h.run("privilege: unprivileged client sees only its own process", || unprivileged_sees_only_itself(g));
    std::process::exit(h.finish("kfd-smi-tests"));
}
