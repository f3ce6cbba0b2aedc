// SPDX-License-Identifier: GPL-2.0
//! kfd-power-tests: what amdgpu does to the KFD at a suspend, a resume and
//! a GPU reset (issue #15's device interface: `kgd2kfd_suspend` & co.),
//! driven through the virtual GPU's hwmon knob `vgpu_power`, which calls
//! rkfd's entry points in amdgpu's order:
//!
//! - suspend / resume with a live process and busy AQL + SDMA queues: the
//!   queues leave the GPU (debugfs `hqds`, `rls`, no progress,
//!   `compute_active` 0), SMI QUEUE_EVICTION with trigger SUSPEND, a new
//!   process cannot open `/dev/kfd` (EINVAL), a queue created meanwhile
//!   waits; after the resume every packet ran exactly once (the AQL
//!   signal ends at 0, the SDMA fences land), QUEUE_RESTORE;
//! - stop_sched / start_sched (upstream halt/unhalt) on a scheduled GPU;
//! - odd orders: resume without suspend, post_reset without pre_reset,
//!   a second pre_reset, the KFD lock with a process on the GPU, unknown
//!   words: clear errnos, and the KFD usable after each; teardown ends a
//!   process using the GPU with SIGBUS;
//! - reset: SMI GPU_PRE_RESET ("virtual GPU reset") / GPU_POST_RESET, the
//!   process's HW_EXCEPTION event with whole-GPU-reset data, its queues
//!   left off the GPU (upstream keeps them evicted; rung through a new
//!   doorbell mapping, the old one being gone), a new process runs;
//! - clear_mappings: the reset first zaps every process's doorbell and
//!   MMIO remap mmaps of the GPU (`kgd2kfd_clear_mappings`, amdgpu's
//!   `amdgpu_amdkfd_clear_kfd_mapping`): a process touching its old
//!   mapping dies of SIGBUS, a new mapping made after the reset works;
//! - ecc_reset: `sram_ecc` (`kgd2kfd_set_sram_ecc_flag`) then a reset: the
//!   HW_EXCEPTION event says cause ECC, the MEMORY event carries SRAM_ECC
//!   data; the next reset is a GPU_HANG one again (post_reset cleared it).
//!
//! Needs root and debugfs.  Prints `kfd-power-tests: N passed, N failed`.

use kfd_tests::debugfs::{ring_on_hqd, section};
use kfd_tests::harness::{ensure, ensure_eq, Check, Harness};
use kfd_tests::kfd::{errno_name, Kfd};
use kfd_tests::ops::{bind, close, topology_gpus, TopoGpu};
use kfd_tests::queue::QueueMem;
use kfd_tests::smi::{bit, SmiFile};
use kfd_uapi as uapi;
use std::time::{Duration, Instant};

fn err(what: &str) -> impl Fn(i32) -> String + '_ {
    move |e| format!("{what}: {}", errno_name(e))
}

fn getpid() -> i32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

/// The `vgpu_power` knob of `gpu`.
fn knob(gpu: &TopoGpu) -> Result<String, String> {
    let base = format!("/sys/class/drm/renderD{}/device/hwmon", gpu.render_minor);
    let d = std::fs::read_dir(&base).map_err(|e| format!("{base}: {e}"))?;
    d.flatten().next().map(|e| format!("{}/vgpu_power", e.path().display())).ok_or(format!("no hwmon under {base}"))
}

/// Writes `op` to the knob: `Ok` or the errno.
fn power(knob: &str, op: &str) -> Result<(), i32> {
    std::fs::write(knob, format!("{op}\n")).map_err(|e| e.raw_os_error().unwrap_or(0))
}

fn power_ok(knob: &str, op: &str) -> Check {
    power(knob, op).map_err(|e| format!("vgpu_power {op}: {}", errno_name(e)))
}

fn power_errno(knob: &str, op: &str, want: i32) -> Check {
    match power(knob, op) {
        Err(e) if e == want => Ok(()),
        other => Err(format!("vgpu_power {op}: {:?}, want {}", other.map_err(errno_name), errno_name(want))),
    }
}

fn compute_active(knob: &str) -> Result<String, String> {
    std::fs::read_to_string(knob).map(|s| s.trim().to_string()).map_err(|e| format!("{knob}: {e}"))
}

/// Whether a new process (a forked child) may open `/dev/kfd`: its errno
/// (0: it could).
fn child_open_errno() -> Result<i32, String> {
    // SAFETY: the child only opens a file and exits.
    match unsafe { libc::fork() } {
        -1 => Err("fork".into()),
        0 => {
            let code = match Kfd::open() {
                Ok(_) => 0,
                Err(e) => e.raw_os_error().unwrap_or(255),
            };
            // SAFETY: leaving the child without running the parent's atexit.
            unsafe { libc::_exit(code) }
        }
        pid => wait_child(pid),
    }
}

/// A new process (a forked child) runs a round trip on `gpu`'s queues.
fn child_round_trip(gpu: &TopoGpu) -> Check {
    // SAFETY: the child uses its own /dev/kfd and exits.
    match unsafe { libc::fork() } {
        -1 => Err("fork".into()),
        0 => {
            let r = (|| -> Check {
                let k = Kfd::open().map_err(|e| e.to_string())?;
                let render = bind(&k, gpu)?;
                let q = QueueMem::new(k.fd, render, gpu, 1 << 39)?;
                q.round_trip(8, 20)?;
                q.release();
                close(render);
                Ok(())
            })();
            if let Err(e) = &r {
                eprintln!("# child: {e}");
            }
            // SAFETY: as above.
            unsafe { libc::_exit(i32::from(r.is_err())) }
        }
        pid => ensure_eq(wait_child(pid)?, 0, "the new process's round trip (exit code)"),
    }
}

fn wait_child(pid: i32) -> Result<i32, String> {
    let mut status = 0;
    // SAFETY: our child.
    if unsafe { libc::waitpid(pid, &mut status, 0) } != pid || !libc::WIFEXITED(status) {
        return Err(format!("child {pid}: status {status:#x}"));
    }
    Ok(libc::WEXITSTATUS(status))
}

/// Waits up to `secs` for `f`.
fn wait_for(secs: u64, f: impl Fn() -> bool) -> bool {
    let t = Instant::now() + Duration::from_secs(secs);
    while !f() {
        if Instant::now() > t {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    true
}

/// Whether queues go through a scheduler (HWS or MES): rkfd's
/// `sched_policy` is not 2.
fn scheduled() -> bool {
    std::fs::read_to_string("/sys/module/rkfd/parameters/sched_policy").map(|s| s.trim() != "2").unwrap_or(false)
}

fn is_mes(gpu: &TopoGpu) -> bool {
    let p = std::fs::read_to_string(format!("{}/properties", gpu.node_dir())).unwrap_or_default();
    p.lines().any(|l| l.strip_prefix("gfx_target_version ").is_some_and(|v| v.trim().parse::<u32>().unwrap_or(0) >= 110000))
}

/// suspend / resume with busy queues; on the first GPU also debugfs and
/// stop_sched / start_sched.
fn suspend_resume(gpu: &TopoGpu, debug: bool) -> Check {
    let knob = knob(gpu)?;
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let render = bind(&k, gpu)?;
    let smi = SmiFile::open(&k, gpu.gpu_id, bit(uapi::KFD_SMI_EVENT_QUEUE_EVICTION) | bit(uapi::KFD_SMI_EVENT_QUEUE_RESTORE))?;
    let q = QueueMem::new(k.fd, render, gpu, 1 << 39)?;
    let sdma = q.props.sdma_engines > 0;
    let (aq, adb) = q.create(false).map_err(err("CREATE_QUEUE AQL"))?;
    let sq = if sdma { Some(q.create(true).map_err(err("CREATE_QUEUE SDMA"))?) } else { None };
    let r = (|| -> Check {
        // Busy: 32 AQL packets and SDMA fences in flight when the suspend comes.
        q.set_signal(32);
        for i in 0..32 {
            q.aql_submit(i, adb);
        }
        if let Some((_, sdb)) = sq {
            for i in 0..8 {
                q.sdma_submit(i, 0x100 + i as u32, sdb);
            }
        }
        power_ok(&knob, "suspend")?;
        let evs = smi.lines(2000);
        let me = getpid();
        // "%lld -%d %x %d": time, pid, node, trigger (SUSPEND = 3).
        let want = format!("-{me} {:x} 3", gpu.gpu_id);
        ensure(
            evs.iter().any(|(id, rest)| *id == uapi::KFD_SMI_EVENT_QUEUE_EVICTION && rest.ends_with(&want)),
            format!("no QUEUE_EVICTION ...{want} after the suspend: {evs:?}"),
        )?;
        // Off the GPU: nothing moves.
        let s0 = q.signal();
        let f0 = q.fence();
        q.set_signal(s0 + 8);
        for i in 32..40 {
            q.aql_submit(i, adb);
        }
        if let Some((_, sdb)) = sq {
            q.sdma_submit(8, 0x5eed_0001, sdb);
        }
        std::thread::sleep(Duration::from_millis(300));
        ensure_eq((q.signal(), q.fence()), (s0 + 8, f0), "AQL signal and SDMA fence while suspended")?;
        ensure_eq(compute_active(&knob)?, "compute_active 0".to_string(), "vgpu_power while suspended")?;
        if debug {
            let hqds = std::fs::read_to_string("/sys/kernel/debug/kfd/hqds").map_err(|e| format!("hqds: {e}"))?;
            ensure_eq(ring_on_hqd(&hqds, gpu.gpu_id, q.va), Some(false), "hqds: an HQD holds the AQL ring while suspended")?;
            let rls = std::fs::read_to_string("/sys/kernel/debug/kfd/rls").map_err(|e| format!("rls: {e}"))?;
            let rls = section(&rls, gpu.gpu_id);
            ensure(rls.contains("No active runlist"), format!("rls while suspended: {rls}"))?;
        }
        // No new process; a queue of this one is created and waits.
        ensure_eq(child_open_errno()?, libc::EINVAL, "a new process's open of /dev/kfd while suspended")?;
        let q2 = QueueMem::new(k.fd, render, gpu, 1 << 40)?;
        let (aq2, adb2) = q2.create(false).map_err(err("CREATE_QUEUE while suspended"))?;
        q2.set_signal(4);
        for i in 0..4 {
            q2.aql_submit(i, adb2);
        }
        std::thread::sleep(Duration::from_millis(200));
        ensure_eq(q2.signal(), 4, "the new queue's signal while suspended")?;
        power_ok(&knob, "resume")?;
        let done = wait_for(20, || q.signal() == 0 && q2.signal() == 0 && (!sdma || q.fence() == 0x5eed_0001));
        ensure(done, format!("after the resume: signals {} and {}, fence {:#x}", q.signal(), q2.signal(), q.fence()))?;
        std::thread::sleep(Duration::from_millis(50));
        ensure_eq((q.signal(), q2.signal()), (0, 0), "every AQL packet ran once")?;
        let evs = smi.lines(2000);
        ensure(
            evs.iter().any(|(id, rest)| *id == uapi::KFD_SMI_EVENT_QUEUE_RESTORE && rest.contains(&format!("-{me} {:x}", gpu.gpu_id))),
            format!("no QUEUE_RESTORE after the resume: {evs:?}"),
        )?;
        ensure(child_open_errno()? == 0, "a new process cannot open /dev/kfd after the resume")?;
        if debug {
            let hqds = std::fs::read_to_string("/sys/kernel/debug/kfd/hqds").map_err(|e| format!("hqds: {e}"))?;
            ensure_eq(ring_on_hqd(&hqds, gpu.gpu_id, q.va), Some(true), "hqds: an HQD holds the AQL ring after the resume")?;
            ensure_eq(compute_active(&knob)?, "compute_active 1".to_string(), "vgpu_power after the resume")?;
        }
        if debug && scheduled() {
            // kgd2kfd_stop_sched: the runlist (MES queues) off, new work waits;
            // start_sched puts them back.
            power_ok(&knob, "stop_sched")?;
            power_ok(&knob, "stop_sched")?;
            q.set_signal(4);
            for i in 40..44 {
                q.aql_submit(i, adb);
            }
            std::thread::sleep(Duration::from_millis(300));
            ensure_eq(q.signal(), 4, "AQL signal while the scheduler is stopped")?;
            ensure_eq(compute_active(&knob)?, "compute_active 0".to_string(), "vgpu_power while stopped")?;
            power_ok(&knob, "start_sched")?;
            power_ok(&knob, "start_sched")?;
            ensure(wait_for(20, || q.signal() == 0), format!("AQL signal {} after start_sched", q.signal()))?;
        }
        q2.destroy(aq2).map_err(err("DESTROY_QUEUE 2"))?;
        q2.release();
        Ok(())
    })();
    if r.is_err() {
        // Whatever failed, leave the GPU running for the next tests.
        let _ = power(&knob, "start_sched");
        let _ = power(&knob, "resume");
    }
    let d1 = q.destroy(aq);
    let d2 = sq.map(|(s, _)| q.destroy(s));
    r?;
    d1.map_err(err("DESTROY_QUEUE AQL"))?;
    if let Some(d) = d2 {
        d.map_err(err("DESTROY_QUEUE SDMA"))?;
    }
    q.release();
    close(render);
    Ok(())
}

/// Odd orders give clear errnos; with no KFD process of ours.
fn odd_orders(gpu: &TopoGpu) -> Check {
    let knob = knob(gpu)?;
    power_errno(&knob, "sleep", libc::EINVAL)?;
    power_errno(&knob, "resume", libc::EINVAL)?;
    power_errno(&knob, "resume_process", libc::EINVAL)?;
    power_errno(&knob, "post_reset", libc::EINVAL)?;
    power_ok(&knob, "start_sched")?;
    power_ok(&knob, "unlock")?;
    // Suspend twice, resume once: the KFD is usable again; resume again: EINVAL.
    power_ok(&knob, "suspend")?;
    power_ok(&knob, "suspend")?;
    ensure_eq(child_open_errno()?, libc::EINVAL, "open while suspended")?;
    power_ok(&knob, "resume")?;
    power_errno(&knob, "resume", libc::EINVAL)?;
    ensure_eq(child_open_errno()?, 0, "open after suspend, suspend, resume")?;
    // Suspend of the processes alone, then a full resume.
    power_ok(&knob, "suspend_process")?;
    power_ok(&knob, "suspend_process")?;
    power_ok(&knob, "resume")?;
    ensure_eq(child_open_errno()?, 0, "open after suspend_process, resume")?;
    // A reset under way: a second pre_reset is EBUSY, no process opens.
    power_ok(&knob, "pre_reset")?;
    power_errno(&knob, "pre_reset", libc::EBUSY)?;
    ensure_eq(child_open_errno()?, libc::EINVAL, "open during a reset")?;
    power_ok(&knob, "post_reset")?;
    power_errno(&knob, "post_reset", libc::EINVAL)?;
    // A reset during a suspend: the resume still ends the suspend.
    power_ok(&knob, "suspend")?;
    power_ok(&knob, "reset")?;
    ensure_eq(child_open_errno()?, libc::EINVAL, "open after a reset during a suspend")?;
    power_ok(&knob, "resume")?;
    ensure_eq(child_open_errno()?, 0, "open after the resume")?;
    // The KFD lock (a partition switch): refused while a process uses the
    // GPU, then held until unlocked.
    {
        let k = Kfd::open().map_err(|e| e.to_string())?;
        power_errno(&knob, "lock", libc::EBUSY)?;
        drop(k);
    }
    // The process goes with its last file.
    ensure(wait_for(5, || power(&knob, "lock").is_ok()), "lock refused after the process closed /dev/kfd")?;
    power_errno(&knob, "lock", libc::EBUSY)?;
    ensure_eq(child_open_errno()?, libc::EINVAL, "open while the GPU is locked")?;
    power_ok(&knob, "unlock")?;
    ensure_eq(child_open_errno()?, 0, "open after unlock")?;
    // teardown_processes: a process using the GPU gets SIGBUS.
    ensure_eq(child_sigbus_on_teardown(&knob)?, libc::SIGBUS, "the signal that ended a KFD process at teardown")
}

/// A forked child opens `/dev/kfd` and waits; `teardown` is written:
/// the signal that ended the child (0 if it exited).
fn child_sigbus_on_teardown(knob: &str) -> Result<i32, String> {
    let mut fds = [0i32; 2];
    // SAFETY: two fds of ours.
    ensure_eq(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe")?;
    // SAFETY: the child opens a file, writes a byte and sleeps.
    match unsafe { libc::fork() } {
        -1 => Err("fork".into()),
        0 => {
            // Rust's runtime catches SIGBUS (its stack-overflow handler,
            // which swallows a SIGBUS that is not a fault the first time):
            // the default action, as a C program of ROCm has.
            // SAFETY: resets one signal's disposition in this child.
            unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
            let k = Kfd::open();
            let b = [u8::from(k.is_ok())];
            // SAFETY: our pipe and byte.
            unsafe { libc::write(fds[1], b.as_ptr().cast(), 1) };
            std::thread::sleep(Duration::from_secs(10));
            // SAFETY: as above.
            unsafe { libc::_exit(0) }
        }
        pid => {
            let mut b = [0u8];
            // SAFETY: our pipe and byte.
            let n = unsafe { libc::read(fds[0], b.as_mut_ptr().cast(), 1) };
            close(fds[0]);
            close(fds[1]);
            if n != 1 || b[0] != 1 {
                let _ = wait_child(pid);
                return Err("the child could not open /dev/kfd".into());
            }
            let r = power(knob, "teardown");
            let mut status = 0;
            // SAFETY: our child.
            if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
                return Err("waitpid".into());
            }
            r.map_err(|e| format!("vgpu_power teardown: {}", errno_name(e)))?;
            Ok(if libc::WIFSIGNALED(status) { libc::WTERMSIG(status) } else { 0 })
        }
    }
}

/// A GPU reset with a live process.
fn reset(gpu: &TopoGpu) -> Check {
    let knob = knob(gpu)?;
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let render = bind(&k, gpu)?;
    let smi = SmiFile::open(&k, gpu.gpu_id, bit(uapi::KFD_SMI_EVENT_GPU_PRE_RESET) | bit(uapi::KFD_SMI_EVENT_GPU_POST_RESET))?;
    let mut ev = uapi::kfd_ioctl_create_event_args { event_type: uapi::KFD_IOC_EVENT_HW_EXCEPTION, ..Default::default() };
    k.ioctl(uapi::AMDKFD_IOC_CREATE_EVENT, &mut ev).map_err(err("CREATE_EVENT HW_EXCEPTION"))?;
    let q = QueueMem::new(k.fd, render, gpu, 1 << 39)?;
    let mut q = q;
    let (aq, adb) = q.create(false).map_err(err("CREATE_QUEUE AQL"))?;
    let r = (|| -> Check {
        q.set_signal(1);
        q.aql_submit(0, adb);
        ensure(wait_for(20, || q.signal() == 0), "AQL packet before the reset")?;
        power_ok(&knob, "reset")?;
        let evs = smi.lines(2000);
        ensure_eq(evs.len(), 2, &format!("reset events {evs:?}"))?;
        ensure_eq((evs[0].0, evs[1].0), (uapi::KFD_SMI_EVENT_GPU_PRE_RESET, uapi::KFD_SMI_EVENT_GPU_POST_RESET), "pre, then post")?;
        // "%x %s": sequence number and cause.
        let (seq, cause) = evs[0].1.split_once(' ').ok_or(format!("{:?}", evs[0]))?;
        ensure_eq(cause, "virtual GPU reset", "pre-reset cause")?;
        ensure_eq(evs[1].1.clone(), format!("{seq} "), "post-reset line")?;
        // kfd_signal_reset_event.
        let hw = hw_exception(&k, ev.event_id, 0)?;
        ensure_eq(
            (hw.reset_type, hw.reset_cause, hw.memory_lost, hw.gpu_id),
            (uapi::KFD_HW_EXCEPTION_WHOLE_GPU_RESET, uapi::KFD_HW_EXCEPTION_GPU_HANG, 1, gpu.gpu_id),
            "hw_exception_data",
        )?;
        // Upstream keeps the process's queues evicted after a reset.  The
        // reset zapped the doorbell mapping (kgd2kfd_clear_mappings): ring
        // through a new one.
        q.remap_doorbells().map_err(err("mmap of the doorbells after the reset"))?;
        q.set_signal(1);
        q.aql_submit(1, adb);
        std::thread::sleep(Duration::from_millis(300));
        ensure_eq(q.signal(), 1, "the old process's queue after the reset")?;
        // A new process runs.
        child_round_trip(gpu)
    })();
    let d = q.destroy(aq);
    r?;
    d.map_err(err("DESTROY_QUEUE after the reset"))?;
    q.release();
    close(render);
    Ok(())
}

/// Which `/dev/kfd` mapping [`child_touch_after_reset`] touches.
#[derive(Clone, Copy, Debug)]
enum KfdMapping {
    Doorbells,
    Mmio,
}

/// Reads one u32 of a mapping.
fn peek(addr: usize) -> u32 {
    // SAFETY: an address inside one of the caller's live mappings; a
    // zapped one raises SIGBUS, which is what is being tested.
    unsafe { (addr as *const u32).read_volatile() }
}

/// Maps `len` bytes of `/dev/kfd` at offset `off`: the address, or the errno.
fn kfd_mmap(k: &Kfd, off: u64, len: usize) -> Result<usize, i32> {
    // SAFETY: a new shared mapping of /dev/kfd.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, k.fd, off as i64) };
    if p == libc::MAP_FAILED {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(p as usize)
    }
}

/// A forked child (a KFD process of its own: the mappings are
/// `VM_DONTCOPY`, a fork does not inherit them) maps `gpu`'s doorbell
/// slice and MMIO remap page and reads both; the parent resets the GPU;
/// the child maps both again and reads the new mappings (exit code 3 if
/// that fails), tells the parent, then reads the old mapping `which`:
/// the signal that ended it (0 if it exited; SIGBUS is upstream's, the
/// zapped VMA having no fault handler).
fn child_touch_after_reset(gpu: &TopoGpu, knob: &str, which: KfdMapping) -> Result<i32, String> {
    const TYPE_DOORBELL: u64 = 0x3 << 62;
    let gpu_bits = u64::from(gpu.gpu_id) << 46;
    let (mut up, mut down) = ([0i32; 2], [0i32; 2]);
    // SAFETY: fresh pipes.
    ensure_eq(unsafe { libc::pipe(up.as_mut_ptr()) } | unsafe { libc::pipe(down.as_mut_ptr()) }, 0, "pipe")?;
    // SAFETY: the child uses its own /dev/kfd and _exits.
    match unsafe { libc::fork() } {
        -1 => Err("fork".into()),
        0 => {
            // The default action, as a C program of ROCm has (Rust's
            // runtime catches SIGBUS: see child_sigbus_on_teardown).
            // SAFETY: resets one signal's disposition in this child.
            unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
            let say = |b: u8| {
                // SAFETY: our pipe and byte.
                unsafe { libc::write(up[1], [b].as_ptr().cast(), 1) };
            };
            let map_both = |k: &Kfd| -> Result<(usize, usize), i32> {
                let db = kfd_mmap(k, TYPE_DOORBELL | gpu_bits, 8192)?;
                let mmio = kfd_mmap(k, gpu_bits, 4096)?;
                peek(db);
                peek(mmio);
                Ok((db, mmio))
            };
            // SAFETY: leaving the child.
            let Ok(k) = Kfd::open() else { unsafe { libc::_exit(2) } };
            // SAFETY: as above.
            let Ok(_render) = bind(&k, gpu) else { unsafe { libc::_exit(2) } };
            // SAFETY: as above.
            let Ok((db, mmio)) = map_both(&k) else { unsafe { libc::_exit(2) } };
            say(1);
            let mut b = [0u8];
            // SAFETY: our pipe and byte: wait for the reset.
            unsafe { libc::read(down[0], b.as_mut_ptr().cast(), 1) };
            if map_both(&k).is_err() {
                // SAFETY: leaving the child.
                unsafe { libc::_exit(3) }
            }
            say(2);
            peek(match which {
                KfdMapping::Doorbells => db,
                KfdMapping::Mmio => mmio,
            });
            // SAFETY: leaving the child.
            unsafe { libc::_exit(0) }
        }
        pid => {
            let read = || {
                let mut b = [0u8];
                // SAFETY: our pipe and byte.
                let n = unsafe { libc::read(up[0], b.as_mut_ptr().cast(), 1) };
                if n == 1 { b[0] } else { 0 }
            };
            close(up[1]);
            close(down[0]);
            let ready = read();
            let r = if ready == 1 { power(knob, "reset") } else { Ok(()) };
            // SAFETY: our pipe and byte.
            unsafe { libc::write(down[1], [0u8].as_ptr().cast(), 1) };
            let remapped = read();
            close(up[0]);
            close(down[1]);
            let mut status = 0;
            // SAFETY: our child.
            if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
                return Err("waitpid".into());
            }
            let ended = if libc::WIFSIGNALED(status) { format!("signal {}", libc::WTERMSIG(status)) } else { format!("exit {}", libc::WEXITSTATUS(status)) };
            ensure_eq(ready, 1, &format!("the child mapped the doorbells and the MMIO page ({ended})"))?;
            r.map_err(|e| format!("vgpu_power reset: {}", errno_name(e)))?;
            ensure_eq(remapped, 2, &format!("the child mapped both again after the reset ({ended})"))?;
            Ok(if libc::WIFSIGNALED(status) { libc::WTERMSIG(status) } else { 0 })
        }
    }
}

/// `kgd2kfd_clear_mappings` at a reset: a process's old doorbell and MMIO
/// remap mappings are gone (SIGBUS), new ones work; this process (which
/// maps neither) and the next one are fine.
fn clear_mappings(gpu: &TopoGpu) -> Check {
    let knob = knob(gpu)?;
    for which in [KfdMapping::Doorbells, KfdMapping::Mmio] {
        ensure_eq(child_touch_after_reset(gpu, &knob, which)?, libc::SIGBUS, &format!("the signal of a read of the old {which:?} mapping after the reset"))?;
    }
    child_round_trip(gpu)
}

/// Waits (`timeout_ms`) for one event; its data, or `None` if it did not
/// come.
fn wait_event(k: &Kfd, event_id: u32, timeout_ms: u32) -> Result<Option<uapi::kfd_event_data>, String> {
    // SAFETY: plain data, all-zero is valid.
    let mut data: uapi::kfd_event_data = unsafe { std::mem::zeroed() };
    data.event_id = event_id;
    let mut w = uapi::kfd_ioctl_wait_events_args { events_ptr: &mut data as *mut _ as u64, num_events: 1, wait_for_all: 1, timeout: timeout_ms, wait_result: 0 };
    k.ioctl(uapi::AMDKFD_IOC_WAIT_EVENTS, &mut w).map_err(err("WAIT_EVENTS"))?;
    Ok((w.wait_result == uapi::KFD_IOC_WAIT_RESULT_COMPLETE).then_some(data))
}

/// The data of HW_EXCEPTION event `event_id`, which must come within
/// `timeout_ms` (upstream `kfd_signal_reset_event`).
fn hw_exception(k: &Kfd, event_id: u32, timeout_ms: u32) -> Result<uapi::kfd_hsa_hw_exception_data, String> {
    let d = wait_event(k, event_id, timeout_ms)?.ok_or("HW exception event not signalled")?;
    // SAFETY: the kernel filled the hw_exception_data member.
    Ok(unsafe { d.__bindgen_anon_1.hw_exception_data })
}

fn create_event(k: &Kfd, event_type: u32) -> Result<u32, String> {
    let mut ev = uapi::kfd_ioctl_create_event_args { event_type, ..Default::default() };
    k.ioctl(uapi::AMDKFD_IOC_CREATE_EVENT, &mut ev).map_err(err("CREATE_EVENT"))?;
    Ok(ev.event_id)
}

/// amdgpu's RAS path: `kgd2kfd_set_sram_ecc_flag`, then a reset.  The
/// reset says cause ECC and sets the MEMORY events with SRAM_ECC data
/// (upstream `kfd_signal_reset_event`); `post_reset` clears the flag, so
/// the next reset is a plain GPU_HANG one that leaves MEMORY events alone.
fn ecc_reset(gpu: &TopoGpu) -> Check {
    let knob = knob(gpu)?;
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let render = bind(&k, gpu)?;
    let r = (|| -> Check {
        let hw1 = create_event(&k, uapi::KFD_IOC_EVENT_HW_EXCEPTION)?;
        let mem1 = create_event(&k, uapi::KFD_IOC_EVENT_MEMORY)?;
        power_ok(&knob, "sram_ecc")?;
        power_ok(&knob, "reset")?;
        let hw = hw_exception(&k, hw1, 2000)?;
        ensure_eq(
            (hw.reset_type, hw.reset_cause, hw.memory_lost, hw.gpu_id),
            (uapi::KFD_HW_EXCEPTION_WHOLE_GPU_RESET, uapi::KFD_HW_EXCEPTION_ECC, 1, gpu.gpu_id),
            "hw_exception_data of the ECC reset",
        )?;
        let d = wait_event(&k, mem1, 2000)?.ok_or("MEMORY event after the ECC reset")?;
        // SAFETY: the kernel filled the memory_exception_data member.
        let m = unsafe { d.__bindgen_anon_1.memory_exception_data };
        ensure_eq((m.ErrorType, m.gpu_id, m.failure.imprecise), (uapi::KFD_MEM_ERR_SRAM_ECC, gpu.gpu_id, 1), "memory_exception_data")?;
        // The flag went with the reset.
        let hw2 = create_event(&k, uapi::KFD_IOC_EVENT_HW_EXCEPTION)?;
        let mem2 = create_event(&k, uapi::KFD_IOC_EVENT_MEMORY)?;
        power_ok(&knob, "reset")?;
        let hw = hw_exception(&k, hw2, 2000)?;
        ensure_eq(hw.reset_cause, uapi::KFD_HW_EXCEPTION_GPU_HANG, "reset_cause of the reset after post_reset")?;
        ensure(wait_event(&k, mem2, 0)?.is_none(), "a plain reset set a MEMORY event")
    })();
    close(render);
    r
}

fn main() {
    let mut h = Harness::new();
    let gpus = topology_gpus();
    if gpus.is_empty() || std::fs::metadata("/sys/kernel/debug/kfd").is_err() {
        h.run("a GPU and debugfs", || Err("no GPU or no debugfs".into()));
        std::process::exit(h.finish("kfd-power-tests"));
    }
    for (i, gpu) in gpus.iter().enumerate() {
        let mes = if is_mes(gpu) { " (MES)" } else { "" };
        h.run(&format!("suspend_resume: busy AQL+SDMA queues, gpu {}{mes}", gpu.gpu_id), || suspend_resume(gpu, i == 0));
    }
    h.run("odd_orders: errnos, KFD lock, teardown SIGBUS", || odd_orders(&gpus[0]));
    h.run("reset: SMI pre/post, HW_EXCEPTION, queues stay evicted, new process runs", || reset(&gpus[0]));
    h.run("clear_mappings: a reset zaps doorbell and MMIO mmaps (SIGBUS), new mmaps work", || clear_mappings(&gpus[0]));
    h.run("ecc_reset: sram_ecc then reset: cause ECC, MEMORY SRAM_ECC; cleared by post_reset", || ecc_reset(&gpus[0]));
    std::process::exit(h.finish("kfd-power-tests"));
}
