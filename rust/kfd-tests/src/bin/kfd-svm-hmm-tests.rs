// SPDX-License-Identifier: GPL-2.0
//! Guest tests of SVM on HMM: retry faults through the virtual GPU's
//! GPU-access test interface, migration to device-private VRAM and back,
//! mmu-notifier invalidation (munmap, fork + COW, mprotect), XNACK off,
//! VRAM exhaustion, a process killed mid-migration, and concurrency.  Run
//! inside the test VM with rkfd and amdgpu (profile gfx90a) loaded; an
//! optional argument filters tests by name.

use kfd_tests::harness::{ensure, ensure_eq, Check, Harness};
use kfd_tests::kfd::errno_name;
use kfd_tests::svm::{gpus, svm_gpu, Anon, Ctx, Gpu, CAP_SVMAPI, PAGE};
use kfd_uapi as uapi;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

const MIB: usize = 1 << 20;

fn err(what: &str) -> impl Fn(i32) -> String + '_ {
    move |e| format!("{what}: {}", errno_name(e))
}

/// A context with XNACK on.
fn ctx_xnack(gpu: &Gpu) -> Result<Ctx, String> {
    let ctx = Ctx::new(gpu)?;
    ensure_eq(ctx.set_xnack(true).map_err(err("SET_XNACK_MODE(1)"))?, 1, "xnack mode")?;
    Ok(ctx)
}

/// Checks that `buf` holds the pattern `Anon::fill(seed)` wrote.
fn check_pattern(buf: &[u8], seed: u8, what: &str) -> Check {
    for (i, chunk) in buf.chunks(PAGE).enumerate() {
        let want = seed.wrapping_add(i as u8);
        if let Some(off) = chunk.iter().position(|&b| b != want) {
            return Err(format!("{what}: page {i} byte {off}: {:#x}, want {want:#x}", chunk[off]));
        }
    }
    Ok(())
}

fn capability(gpu: &Gpu) -> Check {
    ensure(gpu.capability & CAP_SVMAPI != 0, "gfx90a advertises HSA_CAP_SVMAPI_SUPPORTED")?;
    for g in gpus() {
        // Only GPUs with per-process XNACK (gfx90a, 9.0.10, here) get the bit.
        let want = g.gfx_target_version == 90010;
        if (g.capability & CAP_SVMAPI != 0) != want {
            return Err(format!("{} (gpu_id {}, gfx {}): SVM bit {}", g.name, g.gpu_id, g.gfx_target_version, !want));
        }
    }
    Ok(())
}

fn first_touch_maps(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mem = Anon::new(4 * MIB)?;
    mem.fill(7);
    let (f0, _, _) = ctx.counters()?;
    let mut buf = vec![0u8; mem.len];
    let faults = ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read"))?;
    check_pattern(&buf, 7, "GPU read")?;
    ensure(faults >= 1, "the first touch raised retry faults")?;
    // 2 MiB windows: 4 MiB take at most a few faults, not one per page.
    ensure(faults <= 4, format!("{faults} faults for two 2 MiB windows"))?;
    let (f1, _, _) = ctx.counters()?;
    ensure(f1 >= f0 + u64::from(faults), format!("counters faults {f0} -> {f1}"))?;
    // Mapped now: no more faults.
    let again = ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read 2"))?;
    ensure_eq(again, 0, "faults on the second read")?;
    // A GPU write is seen by the CPU.
    let pat = vec![0x5au8; 3 * PAGE];
    ctx.gpu_write(mem.addr + 5 * PAGE + 100, &pat).map_err(err("GPU write"))?;
    let s = mem.slice();
    ensure(s[5 * PAGE + 100..8 * PAGE + 100].iter().all(|&b| b == 0x5a), "CPU sees the GPU write")?;
    ensure_eq(s[5 * PAGE + 99], 7u8.wrapping_add(5), "byte before the write")?;
    // A CPU write after the GPU mapped the page: the GPU sees it.
    s[10 * PAGE] = 0xee;
    let mut one = [0u8; 1];
    ctx.gpu_read(mem.addr + 10 * PAGE, &mut one).map_err(err("GPU read 3"))?;
    ensure_eq(one[0], 0xee, "GPU sees the CPU write")
}

fn no_access_unmaps(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mem = Anon::new(2 * MIB)?;
    mem.fill(5);
    let mut buf = vec![0u8; 8 * PAGE];
    ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read"))?;
    ensure_eq(ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read 2"))?, 0, "faults while mapped")?;
    ctx.svm_set(mem.addr, mem.len, &[(uapi::KFD_IOCTL_SVM_ATTR_NO_ACCESS, gpu.gpu_id)])
        .map_err(err("SET_ATTR NO_ACCESS"))?;
    // Unmapped from the GPU, and its retry fault is refused: the GPU is in
    // neither access bitmap (upstream svm_range_best_restore_location -1,
    // -EACCES: fatal).
    match ctx.gpu_read(mem.addr, &mut buf) {
        Ok(faults) => return Err(format!("GPU read after NO_ACCESS succeeded ({faults} faults)")),
        Err(e) if e == libc::EFAULT => {}
        Err(e) => return Err(format!("GPU read after NO_ACCESS: {}", errno_name(e))),
    }
    // (A fatal fault leaves the VM faulted, as upstream, so regaining
    // access is not checked through the same VM here; KUnit
    // `fault_attrs_follow_the_range` covers ACCESS_IN_PLACE.)
    Ok(())
}

/// The fault window is the range's GRANULARITY (log2 pages): 4 MiB read
/// at granularity 4 (64 KiB) takes one fault per window, at least 64;
/// granularity 10 (4 MiB) at most two (alignment).
fn granularity_sets_fault_window(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mut buf = vec![0u8; 4 * MIB];
    for (gran, check) in [(4u32, &(|f: u32| f >= 64) as &dyn Fn(u32) -> bool), (10, &|f| (1..=2).contains(&f))] {
        let mem = Anon::new(4 * MIB)?;
        mem.fill(gran as u8);
        ctx.svm_set(mem.addr, mem.len, &[(uapi::KFD_IOCTL_SVM_ATTR_GRANULARITY, gran)])
            .map_err(err("SET_ATTR GRANULARITY"))?;
        let faults = ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read"))?;
        check_pattern(&buf, gran as u8, "GPU read")?;
        println!("# granularity {gran}: {faults} faults for 4 MiB");
        ensure(check(faults), format!("granularity {gran}: {faults} faults for 4 MiB"))?;
    }
    Ok(())
}

fn untouched_memory_reads_zero(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mem = Anon::new(2 * MIB)?;
    let mut buf = vec![1u8; 64 * PAGE];
    ctx.gpu_read(mem.addr + 100 * PAGE, &mut buf).map_err(err("GPU read"))?;
    ensure(buf.iter().all(|&b| b == 0), "never-touched memory reads zero")?;
    ctx.gpu_write(mem.addr + 300 * PAGE, &[9u8; 16]).map_err(err("GPU write"))?;
    ensure_eq(mem.slice()[300 * PAGE + 15], 9, "CPU sees a GPU write to a fresh page")
}

fn prefetch_to_vram_then_cpu_reads(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mem = Anon::new(4 * MIB)?;
    mem.fill(31);
    let npages = (mem.len / PAGE) as u64;
    let (_, in0, out0) = ctx.counters()?;
    ctx.prefetch(mem.addr, mem.len, gpu.gpu_id).map_err(err("PREFETCH_LOC gpu"))?;
    let (_, in1, _) = ctx.counters()?;
    ensure_eq(in1 - in0, npages, "page_in after prefetch to VRAM")?;
    let kib = ctx.svm_allocated_kib()?;
    ensure(kib >= (mem.len / 1024) as u64, format!("svm_allocated {kib} KiB"))?;
    // The GPU reads its VRAM.
    let mut buf = vec![0u8; mem.len];
    ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read"))?;
    check_pattern(&buf, 31, "GPU read of VRAM")?;
    // The CPU touches device pages: migrate_to_ram brings them back.
    check_pattern(mem.slice(), 31, "CPU read after prefetch")?;
    let (_, _, out1) = ctx.counters()?;
    ensure_eq(out1 - out0, npages, "page_out after CPU touch")?;
    ensure_eq(ctx.svm_allocated_kib()?, 0, "svm_allocated after everything came back")?;
    Ok(())
}

fn prefetch_round_trip_keeps_gpu_writes(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mem = Anon::new(2 * MIB)?;
    mem.fill(3);
    ctx.prefetch(mem.addr, mem.len, gpu.gpu_id).map_err(err("PREFETCH_LOC gpu"))?;
    ctx.gpu_write(mem.addr + 7 * PAGE, &[0xab; 100]).map_err(err("GPU write to VRAM"))?;
    let (_, _, out0) = ctx.counters()?;
    ctx.prefetch(mem.addr, mem.len, 0).map_err(err("PREFETCH_LOC 0"))?;
    let (_, _, out1) = ctx.counters()?;
    ensure_eq(out1 - out0, (mem.len / PAGE) as u64, "page_out after prefetch to system")?;
    let s = mem.slice();
    ensure(s[7 * PAGE..7 * PAGE + 100].iter().all(|&b| b == 0xab), "GPU write survived the round trip")?;
    ensure_eq(s[8 * PAGE], 3u8.wrapping_add(8), "other data survived")?;
    ensure_eq(ctx.svm_allocated_kib()?, 0, "svm_allocated")
}

fn preferred_location_migrates_on_fault(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mem = Anon::new(2 * MIB)?;
    mem.fill(9);
    ctx.prefer(mem.addr, mem.len, gpu.gpu_id).map_err(err("PREFERRED_LOC"))?;
    let (_, in0, _) = ctx.counters()?;
    let mut buf = vec![0u8; 4 * PAGE];
    ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read"))?;
    check_pattern(&buf, 9, "GPU read")?;
    let (_, in1, _) = ctx.counters()?;
    ensure_eq(in1 - in0, (mem.len / PAGE) as u64, "the faulting window moved to VRAM")?;
    check_pattern(mem.slice(), 9, "CPU read")
}

fn munmap_middle_of_range(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mem = Anon::new(6 * MIB)?;
    mem.fill(50);
    ctx.prefetch(mem.addr, mem.len, 0).map_err(err("PREFETCH_LOC 0 (creates the range)"))?;
    let mut buf = vec![0u8; mem.len];
    ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read"))?;
    // SAFETY: the middle 2 MiB of our mapping.
    let r = unsafe { libc::munmap((mem.addr + 2 * MIB) as *mut libc::c_void, 2 * MIB) };
    ensure_eq(r, 0, "munmap")?;
    let mut one = vec![0u8; PAGE];
    match ctx.gpu_read(mem.addr + 3 * MIB, &mut one) {
        Err(e) if e == libc::EFAULT => {}
        other => return Err(format!("GPU read of the hole: {other:?}, want EFAULT")),
    }
    let mut head = vec![0u8; 2 * MIB];
    ctx.gpu_read(mem.addr, &mut head).map_err(err("GPU read of the head"))?;
    check_pattern(&head, 50, "head")?;
    let mut tail = vec![0u8; 2 * MIB];
    ctx.gpu_read(mem.addr + 4 * MIB, &mut tail).map_err(err("GPU read of the tail"))?;
    check_pattern(&tail, 50u8.wrapping_add(((4 * MIB) / PAGE) as u8), "tail")?;
    // The remaining parts still prefetch (the split ranges work).
    ctx.prefetch(mem.addr + 4 * MIB, 2 * MIB, gpu.gpu_id).map_err(err("prefetch of the tail"))?;
    check_pattern(&mem.slice()[4 * MIB..], 50u8.wrapping_add(((4 * MIB) / PAGE) as u8), "tail after migration")?;
    // Unmap the rest here so that `mem` drops nothing twice.
    // SAFETY: our mapping's remaining parts.
    unsafe {
        libc::munmap(mem.addr as *mut libc::c_void, 2 * MIB);
        libc::munmap((mem.addr + 4 * MIB) as *mut libc::c_void, 2 * MIB);
    }
    std::mem::forget(mem);
    Ok(())
}

fn fork_cow(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mem = Anon::new(2 * MIB)?;
    mem.fill(70);
    let mut buf = vec![0u8; mem.len];
    ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read"))?;
    // SAFETY: fork; the child only writes its copy and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let s = mem.slice();
        s[0] = 0x11;
        s[PAGE] = 0x11;
        // SAFETY: leave without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    ensure(pid > 0, "fork")?;
    // The parent writes after fork: copy-on-write gives it new pages; the
    // GPU must see them, not the pages the child now shares.
    let s = mem.slice();
    s[2 * PAGE] = 0x22;
    let mut st = 0;
    // SAFETY: our child.
    unsafe { libc::waitpid(pid, &mut st, 0) };
    ensure(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0, "child exited cleanly")?;
    let mut pages = vec![0u8; 3 * PAGE];
    ctx.gpu_read(mem.addr, &mut pages).map_err(err("GPU read after fork"))?;
    ensure_eq(pages[0], 70, "child's write is not the parent's")?;
    ensure_eq(pages[PAGE], 71, "child's write is not the parent's (page 1)")?;
    ensure_eq(pages[2 * PAGE], 0x22, "GPU sees the parent's post-fork write")?;
    // And a GPU write lands in the parent's page.
    ctx.gpu_write(mem.addr + 3 * PAGE, &[0x33]).map_err(err("GPU write after fork"))?;
    ensure_eq(s[3 * PAGE], 0x33, "CPU sees the GPU write after fork")
}

fn mprotect_read_only(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mem = Anon::new(2 * MIB)?;
    mem.fill(90);
    ctx.gpu_write(mem.addr, &[1u8; 8]).map_err(err("GPU write"))?;
    // SAFETY: our mapping.
    let r = unsafe { libc::mprotect(mem.addr as *mut libc::c_void, mem.len, libc::PROT_READ) };
    ensure_eq(r, 0, "mprotect")?;
    match ctx.gpu_write(mem.addr + PAGE, &[2u8; 8]) {
        Err(e) if e == libc::EFAULT => {}
        other => return Err(format!("GPU write to read-only memory: {other:?}, want EFAULT")),
    }
    let mut b = [0u8; 8];
    ctx.gpu_read(mem.addr, &mut b).map_err(err("GPU read of read-only memory"))?;
    ensure_eq(b, [1u8; 8], "read-only data")?;
    ensure_eq(mem.slice()[PAGE], 91, "the refused write changed nothing")?;
    // SAFETY: our mapping.
    unsafe { libc::mprotect(mem.addr as *mut libc::c_void, mem.len, libc::PROT_READ | libc::PROT_WRITE) };
    ctx.gpu_write(mem.addr + PAGE, &[2u8; 8]).map_err(err("GPU write after mprotect RW"))?;
    ensure_eq(mem.slice()[PAGE], 2, "write after restoring access")
}

fn xnack_off_fault_is_fatal(gpu: &Gpu) -> Check {
    let ctx = Ctx::new(gpu)?;
    ensure_eq(ctx.set_xnack(false).map_err(err("SET_XNACK_MODE(0)"))?, 0, "xnack mode")?;
    let mem = Anon::new(2 * MIB)?;
    mem.fill(1);
    let mut b = [0u8; 8];
    match ctx.gpu_read(mem.addr, &mut b) {
        Err(e) if e == libc::EFAULT => Ok(()),
        other => Err(format!("GPU read with XNACK off: {other:?}, want EFAULT")),
    }?;
    // Prefetched (mapped by nobody): still a fault, reported, not an oops.
    match ctx.gpu_read(0x1000, &mut b) {
        Err(e) if e == libc::EFAULT => Ok(()),
        other => Err(format!("GPU read of page 1: {other:?}, want EFAULT")),
    }
}

fn xnack_off_access_maps_and_restores(gpu: &Gpu) -> Check {
    let ctx = Ctx::new(gpu)?;
    ensure_eq(ctx.set_xnack(false).map_err(err("SET_XNACK_MODE(0)"))?, 0, "xnack mode")?;
    let mem = Anon::new(2 * MIB)?;
    mem.fill(40);
    ctx.svm_set(mem.addr, mem.len, &[(uapi::KFD_IOCTL_SVM_ATTR_ACCESS, gpu.gpu_id)])
        .map_err(err("SET_ATTR ACCESS"))?;
    let mut buf = vec![0u8; mem.len];
    let faults = ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read of a mapped range"))?;
    ensure_eq(faults, 0, "faults with XNACK off after SET_ATTR ACCESS")?;
    check_pattern(&buf, 40, "GPU read")?;
    // Invalidate one page (zap it), then write it from the CPU: the
    // restore worker remaps the range; until then the GPU would fault.
    let page3 = mem.addr + 3 * PAGE;
    // SAFETY: one page of our mapping.
    ensure_eq(unsafe { libc::madvise(page3 as *mut libc::c_void, PAGE, libc::MADV_DONTNEED) }, 0, "madvise")?;
    mem.slice()[3 * PAGE] = 0x77;
    let mut one = [0u8; 1];
    for _ in 0..200 {
        if ctx.gpu_read(page3, &mut one).is_ok() {
            return ensure_eq(one[0], 0x77, "GPU sees the CPU's new page after the restore");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Err("the restore worker never remapped the range".into())
}

fn no_vma_is_fatal(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mut b = [0u8; 8];
    for va in [0x1000usize, 0x7000_0000_0000] {
        match ctx.gpu_read(va, &mut b) {
            Err(e) if e == libc::EFAULT => {}
            other => return Err(format!("GPU read at {va:#x}: {other:?}, want EFAULT")),
        }
    }
    Ok(())
}

fn bad_prefetch_arguments(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mem = Anon::new(2 * MIB)?;
    let e = |r: Result<(), i32>| r.err().unwrap_or(0);
    ensure_eq(e(ctx.prefetch(mem.addr + 1, PAGE, 0)), libc::EINVAL, "unaligned start")?;
    ensure_eq(e(ctx.prefetch(mem.addr, 0, 0)), libc::EINVAL, "empty range")?;
    ensure_eq(e(ctx.prefetch(mem.addr, PAGE, 0xdead)), libc::EINVAL, "unknown gpu_id")?;
    ensure_eq(e(ctx.prefetch(0x1000, PAGE, 0)), libc::EFAULT, "no VMA")?;
    Ok(())
}

fn vram_exhaustion_stays_in_system(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    // Take most of the VRAM with a memory object: the same budget.
    let mut avail = uapi::kfd_ioctl_get_available_memory_args { available: 0, gpu_id: gpu.gpu_id, pad: 0 };
    ctx.kfd.ioctl(uapi::AMDKFD_IOC_AVAILABLE_MEMORY, &mut avail).map_err(err("AVAILABLE_MEMORY"))?;
    let hog = avail.available.saturating_sub(MIB as u64);
    let mut alloc = uapi::kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: 0x1_0000_0000,
        size: hog,
        handle: 0,
        mmap_offset: 0,
        gpu_id: gpu.gpu_id,
        flags: uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
    };
    ctx.kfd.ioctl(uapi::AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut alloc).map_err(err("ALLOC VRAM hog"))?;
    let mem = Anon::new(4 * MIB)?;
    mem.fill(120);
    let (_, in0, _) = ctx.counters()?;
    // Does not fail: what does not fit stays in system memory.
    ctx.prefetch(mem.addr, mem.len, gpu.gpu_id).map_err(err("prefetch beyond VRAM"))?;
    let (_, in1, _) = ctx.counters()?;
    ensure(in1 - in0 < (mem.len / PAGE) as u64, format!("only part moved ({} pages)", in1 - in0))?;
    let mut buf = vec![0u8; mem.len];
    ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read"))?;
    check_pattern(&buf, 120, "GPU read with VRAM full")?;
    check_pattern(mem.slice(), 120, "CPU read with VRAM full")?;
    let mut free = uapi::kfd_ioctl_free_memory_of_gpu_args { handle: alloc.handle };
    ctx.kfd.ioctl(uapi::AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut free).map_err(err("FREE"))?;
    // With VRAM back, the prefetch moves everything.
    ctx.prefetch(mem.addr, mem.len, gpu.gpu_id).map_err(err("prefetch after free"))?;
    check_pattern(mem.slice(), 120, "CPU read after the second prefetch")
}

fn killed_mid_migration(gpu: &Gpu) -> Check {
    // A child migrates back and forth; SIGKILL lands somewhere in it.  The
    // kernel must tear everything down (rmmod at the end of the run checks
    // that no device page or reference is left).
    for delay_ms in [5u64, 40, 150] {
        // SAFETY: fork; the child only uses its own copies and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY (both): _exit ends the forked child without running
            // the parent's atexit handlers or flushing its buffers.
            let Ok(ctx) = ctx_xnack(gpu) else { unsafe { libc::_exit(2) } };
            let Ok(mem) = Anon::new(16 * MIB) else { unsafe { libc::_exit(3) } };
            mem.fill(1);
            loop {
                let _ = ctx.prefetch(mem.addr, mem.len, gpu.gpu_id);
                let mut b = vec![0u8; 64 * PAGE];
                let _ = ctx.gpu_read(mem.addr, &mut b);
                let _ = ctx.prefetch(mem.addr, mem.len, 0);
            }
        }
        ensure(pid > 0, "fork")?;
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        // SAFETY: our child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let mut st = 0;
        // SAFETY: our child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        ensure(libc::WIFSIGNALED(st), format!("child ended by the signal (status {st:#x})"))?;
    }
    Ok(())
}

fn concurrent_prefetch_munmap_touch(gpu: &Gpu) -> Check {
    let ctx = Arc::new(ctx_xnack(gpu)?);
    let stop = Arc::new(AtomicBool::new(false));
    // Each thread publishes its iteration count; the storm ends once 3 s
    // passed and every thread did at least 2 rounds (no timing assertion:
    // a thread that makes no progress for 300 s is a hang).
    let done: Arc<[AtomicU32; 3]> = Arc::new([AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)]);
    let region = 8 * MIB;
    // A fixed address the munmap thread keeps replacing.
    let base = Anon::new(region)?;
    let addr = base.addr;
    std::mem::forget(base);
    let mut threads = Vec::new();
    {
        let (ctx, stop, done) = (ctx.clone(), stop.clone(), done.clone());
        let gpu_id = gpu.gpu_id;
        threads.push(std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let _ = ctx.prefetch(addr, region, gpu_id);
                let _ = ctx.prefetch(addr, region, 0);
                n += 1;
                done[0].store(n, Ordering::Relaxed);
            }
            n
        }));
    }
    {
        let (ctx, stop, done) = (ctx.clone(), stop.clone(), done.clone());
        threads.push(std::thread::spawn(move || {
            let mut n = 0u32;
            let mut b = vec![0u8; 16 * PAGE];
            while !stop.load(Ordering::Relaxed) {
                for off in (0..region).step_by(MIB) {
                    let _ = ctx.gpu_read(addr + off, &mut b);
                    let _ = ctx.gpu_write(addr + off + 8 * PAGE, &b[..PAGE]);
                }
                n += 1;
                done[1].store(n, Ordering::Relaxed);
            }
            n
        }));
    }
    {
        let (stop, done) = (stop.clone(), done.clone());
        threads.push(std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let mid = addr + 2 * MIB;
                // SAFETY: our region; remapped at the same place right after.
                unsafe {
                    libc::munmap(mid as *mut libc::c_void, 2 * MIB);
                    libc::mmap(
                        mid as *mut libc::c_void,
                        2 * MIB,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                        -1,
                        0,
                    );
                    // Touch it from the CPU too.
                    std::ptr::write_volatile(mid as *mut u8, n as u8);
                }
                n += 1;
                done[2].store(n, Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            n
        }));
    }
    let t0 = std::time::Instant::now();
    let mut last = [0u32; 3];
    let mut last_change = std::time::Instant::now();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let now: Vec<u32> = done.iter().map(|d| d.load(Ordering::Relaxed)).collect();
        if now[..] != last[..] {
            last.copy_from_slice(&now);
            last_change = std::time::Instant::now();
        }
        if t0.elapsed().as_secs() >= 3 && now.iter().all(|&c| c >= 2) {
            break;
        }
        if last_change.elapsed().as_secs() >= 300 {
            stop.store(true, Ordering::Relaxed);
            return Err(format!("no thread made progress for 300 s (counts {now:?}): hung"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let counts: Vec<u32> = threads.into_iter().map(|t| t.join().unwrap_or(0)).collect();
    println!("# concurrent iterations: prefetch {}, touch {}, munmap {}", counts[0], counts[1], counts[2]);
    // Still consistent afterwards: a fresh pattern round-trips.
    // SAFETY: `addr` is this test's own anonymous mapping of `region` bytes,
    // still mapped (the munmap thread only unmaps and remaps inside it and
    // has stopped), and no other reference to it is alive.
    let s = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, region) };
    for (i, c) in s.chunks_mut(PAGE).enumerate() {
        c.fill(i as u8);
    }
    ctx.prefetch(addr, region, gpu.gpu_id).map_err(err("final prefetch"))?;
    let mut buf = vec![0u8; region];
    ctx.gpu_read(addr, &mut buf).map_err(err("final GPU read"))?;
    check_pattern(&buf, 0, "GPU after the storm")?;
    check_pattern(s, 0, "CPU after the storm")?;
    // SAFETY: our region.
    unsafe { libc::munmap(addr as *mut libc::c_void, region) };
    ensure(counts.iter().all(|&c| c >= 2), format!("every thread ran twice ({counts:?})"))
}

/// An anonymous mapping of `len` bytes (a multiple of 2 MiB) aligned to
/// 2 MiB and advised huge: transparent huge pages back it once touched.
fn huge_anon(len: usize) -> Result<Anon, String> {
    let raw = Anon::new(len + 2 * MIB)?;
    let start = (raw.addr + 2 * MIB - 1) & !(2 * MIB - 1);
    // SAFETY: trimming our own mapping to the aligned part.
    unsafe {
        if start > raw.addr {
            libc::munmap(raw.addr as *mut libc::c_void, start - raw.addr);
        }
        let end = raw.addr + raw.len;
        if end > start + len {
            libc::munmap((start + len) as *mut libc::c_void, end - start - len);
        }
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    std::mem::forget(raw);
    Ok(Anon { addr: start, len })
}

/// A counter of /proc/vmstat.
fn vmstat(name: &str) -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/vmstat").map_err(|e| format!("/proc/vmstat: {e}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.trim().parse().ok()))
        .ok_or(format!("/proc/vmstat has no {name}"))
}

/// Transparent-huge-page bytes backing `[addr, addr + len)` (smaps).
fn anon_huge_bytes(addr: usize) -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/self/smaps").map_err(|e| format!("smaps: {e}"))?;
    let mut inside = false;
    for line in text.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                    inside = (a..b).contains(&addr);
                    continue;
                }
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix("AnonHugePages:") {
                let kib: u64 = v.trim().trim_end_matches("kB").trim().parse().map_err(|_| "AnonHugePages")?;
                return Ok(kib * 1024);
            }
        }
    }
    Err(format!("no VMA at {addr:#x} in smaps"))
}

/// Transparent huge pages migrate as huge device pages (one 2 MiB folio
/// each, no PMD split) and stay correct through everything that splits
/// them: a partial munmap, a partial mprotect, fork, a CPU touch, and the
/// way back.
fn huge_device_pages(gpu: &Gpu) -> Check {
    let ctx = ctx_xnack(gpu)?;
    let mem = huge_anon(8 * MIB)?;
    mem.fill(110);
    ensure_eq(anon_huge_bytes(mem.addr)?, (8 * MIB) as u64, "THP backs the aligned, advised mapping")?;
    let (_, in0, _) = ctx.counters()?;
    let splits = vmstat("thp_split_pmd")?;
    ctx.prefetch(mem.addr, mem.len, gpu.gpu_id).map_err(err("PREFETCH_LOC to VRAM"))?;
    ensure_eq(vmstat("thp_split_pmd")? - splits, 0, "PMD splits while migrating 4 THPs to VRAM")?;
    let (_, in1, _) = ctx.counters()?;
    ensure_eq(in1 - in0, (8 * MIB / PAGE) as u64, "page_in after the prefetch")?;
    let mut buf = vec![0u8; mem.len];
    ctx.gpu_read(mem.addr, &mut buf).map_err(err("GPU read of VRAM"))?;
    check_pattern(&buf, 110, "GPU read of huge device pages")?;
    let base = |i: usize| 110u8.wrapping_add((i * MIB / PAGE) as u8);
    // 1: one page unmapped inside the second huge page splits it.
    let splits = vmstat("thp_split_pmd")?;
    // SAFETY: a page of our mapping.
    ensure_eq(unsafe { libc::munmap((mem.addr + 2 * MIB + 5 * PAGE) as *mut libc::c_void, PAGE) }, 0, "munmap")?;
    ensure(vmstat("thp_split_pmd")? > splits, "the munmap split the huge device page")?;
    let s = mem.slice();
    check_pattern(&s[2 * MIB..2 * MIB + 5 * PAGE], base(2), "CPU read before the hole")?;
    check_pattern(&s[2 * MIB + 6 * PAGE..4 * MIB], base(2).wrapping_add(6), "CPU read after the hole")?;
    // 2: one page read-only inside the third: a GPU write there fails,
    // next to it works, and the CPU reads the rest back.
    // SAFETY: a page of our mapping.
    let r = unsafe { libc::mprotect((mem.addr + 4 * MIB + PAGE) as *mut libc::c_void, PAGE, libc::PROT_READ) };
    ensure_eq(r, 0, "mprotect")?;
    match ctx.gpu_write(mem.addr + 4 * MIB + PAGE, &[9]) {
        Err(e) if e == libc::EFAULT || e == libc::EPERM => {}
        other => return Err(format!("GPU write to the read-only page: {other:?}, want EFAULT")),
    }
    ctx.gpu_write(mem.addr + 4 * MIB + 2 * PAGE, &[0x44]).map_err(err("GPU write next to it"))?;
    ensure_eq(s[4 * MIB + 2 * PAGE], 0x44, "CPU sees the GPU write")?;
    check_pattern(&s[4 * MIB + 3 * PAGE..6 * MIB], base(4).wrapping_add(3), "CPU read of the third")?;
    // 3: fork while the fourth is in VRAM: the child reads it.
    // SAFETY: fork; the child only reads and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let ok = mem.slice()[6 * MIB..].chunks(PAGE).enumerate().all(|(i, c)| c.iter().all(|&b| b == base(6).wrapping_add(i as u8)));
        // SAFETY: leave without running the parent's destructors.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    ensure(pid > 0, "fork")?;
    let mut st = 0;
    // SAFETY: our child.
    unsafe { libc::waitpid(pid, &mut st, 0) };
    ensure(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0, "the child read the huge device page")?;
    let mut last = vec![0u8; 2 * MIB];
    ctx.gpu_read(mem.addr + 6 * MIB, &mut last).map_err(err("GPU read after fork"))?;
    check_pattern(&last, base(6), "GPU read of the fourth after fork")?;
    // 4: the first comes back by a CPU touch (a whole huge page), then
    // everything left goes back by prefetch.
    check_pattern(&s[..2 * MIB], 110, "CPU read of the first")?;
    ctx.prefetch(mem.addr + 6 * MIB, 2 * MIB, 0).map_err(err("PREFETCH_LOC 0"))?;
    check_pattern(&s[6 * MIB..], base(6), "CPU read of the fourth after the way back")?;
    Ok(())
}

fn main() {
    let mut h = Harness::new();
    let Some(gpu) = svm_gpu() else {
        h.run("an SVM-capable GPU exists", || Err("no GPU advertises HSA_CAP_SVMAPI_SUPPORTED".into()));
        std::process::exit(h.finish("kfd-svm-hmm-tests"));
    };
    let g = &gpu;
    h.run("capability", || capability(g));
    h.run("first_touch_maps", || first_touch_maps(g));
    h.run("untouched_memory_reads_zero", || untouched_memory_reads_zero(g));
    h.run("granularity_sets_fault_window", || granularity_sets_fault_window(g));
    h.run("no_access_unmaps", || no_access_unmaps(g));
    h.run("prefetch_to_vram_then_cpu_reads", || prefetch_to_vram_then_cpu_reads(g));
    h.run("prefetch_round_trip_keeps_gpu_writes", || prefetch_round_trip_keeps_gpu_writes(g));
    h.run("preferred_location_migrates_on_fault", || preferred_location_migrates_on_fault(g));
    h.run("munmap_middle_of_range", || munmap_middle_of_range(g));
    h.run("fork_cow", || fork_cow(g));
    h.run("mprotect_read_only", || mprotect_read_only(g));
    h.run("xnack_off_fault_is_fatal", || xnack_off_fault_is_fatal(g));
    h.run("xnack_off_access_maps_and_restores", || xnack_off_access_maps_and_restores(g));
    h.run("no_vma_is_fatal", || no_vma_is_fatal(g));
    h.run("bad_prefetch_arguments", || bad_prefetch_arguments(g));
    h.run("vram_exhaustion_stays_in_system", || vram_exhaustion_stays_in_system(g));
    h.run("killed_mid_migration", || killed_mid_migration(g));
    h.run("concurrent_prefetch_munmap_touch", || concurrent_prefetch_munmap_touch(g));
    h.run("huge_device_pages", || huge_device_pages(g));
    std::process::exit(h.finish("kfd-svm-hmm-tests"));
}
