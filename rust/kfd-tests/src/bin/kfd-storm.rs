// SPDX-License-Identifier: GPL-2.0
//! kfd-storm: process storms against /dev/kfd, run inside the test VM.
//!
//!   kfd-storm [--seed S] [--lifecycles N] [--parallel P] [--time SECS] [--strict] [--verbose]
//!             [--no-svm] [--svm PCT] [--no-queues]
//!
//! `--svm PCT`: the share of lifecycles with an SVM range (default 20).
//!
//! Defaults: a random seed (printed first), 200 lifecycles, 4 at a time,
//! at most 600 s.
//!
//! N child processes (P at a time) each open /dev/kfd, do the work a ROCm
//! process does (apertures, ACQUIRE_VM with a render node, alloc, map,
//! CPU-map GTT memory through the render node, events), sometimes from two
//! threads, sometimes leaving a forked grandchild that holds the files
//! after the opener is gone, and then end one of four ways:
//!
//! - clean: unmap, free, destroy, close, exit 0;
//! - abandon: `_exit(0)` with everything live (teardown does the work);
//! - killed at a step: the parent SIGKILLs it after it reported step k;
//! - killed after a delay: the parent SIGKILLs it t µs after the fork,
//!   wherever it is (often inside an ioctl).
//!
//! One in five children also creates an SVM range (on a GPU with
//! HSA_CAP_SVMAPI_SUPPORTED; skipped otherwise) of 1-8 MiB: XNACK on when
//! the process may have it (else SET_ATTR ACCESS), GPU touch through the
//! virtual GPU's access ioctl (retry faults), PREFETCH_LOC to VRAM, a CPU
//! touch back; half of them leave a thread migrating the whole range to
//! VRAM, GPU-reading it and migrating it back, so that kills land
//! mid-fault and mid-migration.  One in five creates user queues (AQL, and
//! SDMA when the GPU has engines) with packets in flight, a thread still
//! submitting when the kill comes; clean ones first check a round trip
//! (AQL signal, SDMA fence) and end by destroying busy queues.  Half the
//! AQL queues on GFX9/GFX10 GPUs start with a KERNEL_DISPATCH of a shader
//! that never ends (`s_branch -1`), so kills, exits and DESTROY_QUEUE meet
//! a running shader on the virtual GPU's interpreter.  SVM data
//! read by the GPU or the CPU must be what the CPU wrote.
//!
//! Along the way a child checks that every object it CPU-maps reads as
//! zero (earlier children filled theirs with 0x5a: cross-process leaks),
//! and sometimes races a grandchild with its own /dev/kfd to ACQUIRE_VM
//! the same render-node file (at most one may win).
//!
//! A lifecycle passes when every ioctl of the child answered success or a
//! clear errno (fuzz.rs), the isolation checks held (a forked child and the
//! grandchild get EBADF on the opener's fd), and the child ended the way
//! it was meant to (exit 0, or SIGKILL for the kill fates).  After the
//! storm: /dev/kfd opens and answers, every GPU's available memory and
//! vram_used are back to the values before the storm, no kernel report
//! appeared on /dev/kmsg.  The guest runner then checks that `rmmod rkfd`
//! succeeds and that kmemleak finds nothing.
//!
//! The closing line counts test cases: the lifecycles (one case, however
//! many), /dev/kfd answering after the storm, the memory accounting, the
//! per-process sysfs directories and the kernel log; the number of
//! lifecycles and of failures stands beside it:
//! `storm: 5 passed, 0 failed (200 lifecycles, 0 failures)`.
//!
//! The seed fixes every choice (fates, steps, delays, work); the timing of
//! kills is the machine's, so a storm is reproducible in what it tries,
//! not in where exactly a kill lands.

use kfd_tests::fuzz;
use kfd_tests::ops;

use fuzz::Rng;
use kfd_tests::harness::Harness;
use kfd_tests::kfd::{ioctl_fd, Kfd};
use kfd_tests::ops::{topology_gpus, TopoGpu};
use kfd_tests::queue::QueueMem;
use kfd_tests::svm::svm_set_attr;
use kfd_uapi as uapi;
use std::collections::HashMap;
use std::time::{Duration, Instant};

const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

/// Driver bugs this harness found that are reported but not yet fixed: each
/// occurrence is printed as "storm: KNOWN BUG <name>: ..." and counted apart
/// from the failures (unless --strict).  A run in which a known bug had its
/// chance and did not show says so: then remove it from this list.
///
/// None at the moment.  Fixed: vm-share (ACQUIRE_VM of one render-node
/// file inherited by a forked child succeeded in both processes; the
/// virtual amdgpu now refuses a VM a KFD process already holds, as amdgpu's
/// `amdgpu_amdkfd_gpuvm_acquire_process_vm` does): the storm checks it as an
/// ordinary failure.
const KNOWN_BUGS: &[&str] = &[];

/// Child exit code: only known bugs were seen.
const EXIT_KNOWN: i32 = 5;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    Clean,
    Abandon,
    KillAtStep(u32),
    KillAfter(Duration),
}

/// What a child does, drawn from its seed.
#[derive(Clone, Debug)]
struct Plan {
    seed: u64,
    fate: Fate,
    two_opens: bool,
    thread: bool,
    grandchild: bool,
    use_parent_fd: bool,
    /// A grandchild with its own /dev/kfd races us to ACQUIRE_VM the same
    /// render-node file.
    vm_race: bool,
    objects: u32,
    events: u32,
    linger_ms: u64,
    /// SVM range of this many MiB (0: none; only on an SVM-capable GPU):
    /// SET_ATTR, GPU touch (retry faults with XNACK on), PREFETCH_LOC to
    /// VRAM and back.
    svm_mib: usize,
    /// A thread migrating and GPU-touching the whole SVM range in a loop
    /// (a kill lands mid-fault or mid-migration).
    svm_big: bool,
    /// User queues: AQL, plus SDMA when the GPU has engines, with packets
    /// in flight (a thread keeps submitting).
    queues: bool,
}

/// What the parent found out about the GPUs, for the children.
#[derive(Clone, Debug, Default)]
struct Caps {
    /// gpu_id of a GPU with HSA_CAP_SVMAPI_SUPPORTED.
    svm_gpu: Option<u32>,
    topo: Vec<TopoGpu>,
}

// ---------------------------------------------------------------------------
// The child.

struct Child {
    rng: Rng,
    plan: Plan,
    progress: i32,
    step: u32,
    errors: Vec<String>,
    /// Known bugs seen (see KNOWN_BUGS).
    known: Vec<String>,
    kfd: i32,
    kfd2: Option<i32>,
}

impl Child {
    /// Records an occurrence of a bug: known ones apart from the others.
    fn bug(&mut self, name: &str, what: String) {
        if KNOWN_BUGS.contains(&name) {
            self.known.push(format!("{name}: {what}"));
        } else {
            self.errors.push(what);
        }
    }

    fn report(&mut self) {
        self.step += 1;
        let b = [0u8; 1];
        // SAFETY: writing one byte to our pipe.
        unsafe { libc::write(self.progress, b.as_ptr().cast(), 1) };
    }

    fn check(&mut self, r: Result<i32, i32>, what: &str) -> bool {
        let wait = what.starts_with("WAIT_EVENTS");
        match r {
            Ok(_) => true,
            Err(e) if fuzz::is_clear_errno_for(if wait { 0x0c } else { 0 }, e) => false,
            Err(e) => {
                self.errors.push(format!("step {}: {what}: unexpected errno {} ({e})", self.step, fuzz::errno_str(e)));
                false
            }
        }
    }

    fn ioctl<T>(&mut self, cmd: u32, args: &mut T, what: &str) -> bool {
        let fd = match self.kfd2 {
            Some(f) if self.rng.chance(1, 3) => f,
            _ => self.kfd,
        };
        let r = ioctl_fd(fd, cmd, args as *mut T as usize);
        self.check(r, what)
    }

    fn run(&mut self, gpus: &fuzz::Gpus, caps: &Caps, parent_kfd: i32) -> i32 {
        use uapi::*;
        let k = match Kfd::open() {
            Ok(k) => k,
            Err(e) => {
                eprintln!("storm: child seed {:#x}: open /dev/kfd: {e}", self.plan.seed);
                return 3;
            }
        };
        self.kfd = k.fd;
        std::mem::forget(k);
        if self.plan.two_opens {
            self.kfd2 = Kfd::open().ok().map(|k| {
                let fd = k.fd;
                std::mem::forget(k);
                fd
            });
        }
        self.report();
        let mut v = kfd_ioctl_get_version_args::default();
        self.ioctl(AMDKFD_IOC_GET_VERSION, &mut v, "GET_VERSION");
        let ids = fuzz::aperture_gpu_ids_fd(self.kfd);
        self.report();

        if self.plan.use_parent_fd && parent_kfd >= 0 {
            // The parent's file, inherited: not ours to use.
            match fuzz::get_version(parent_kfd) {
                Err(libc::EBADF) => {}
                other => self.errors.push(format!("GET_VERSION on the parent's inherited fd: {other:?}, want EBADF")),
            }
        }

        // Memory on every GPU we can bind.
        let mut renders = Vec::new();
        let mut objs: Vec<(u64, u32, bool)> = Vec::new();
        let mut maps: Vec<(usize, usize)> = Vec::new();
        let mut va = 0x10_0000_0000u64 + (self.rng.below(256) << 32);
        let want: Vec<u32> = if ids.is_empty() { gpus.ids.clone() } else { ids };
        let mut first_bound = None;
        let mut bound_fds: Vec<(u32, i32)> = Vec::new();
        for &gpu in &want {
            let mut bound = false;
            for path in &gpus.render_nodes {
                let Ok(fd) = ops::open_rw(path) else { continue };
                renders.push(fd);
                let r = if self.plan.vm_race { self.acquire_racing(fd, gpu) } else { fuzz::acquire_vm(self.kfd, fd, gpu) };
                if self.check(r, "ACQUIRE_VM") {
                    bound = true;
                    break;
                }
            }
            self.report();
            if !bound {
                continue;
            }
            first_bound.get_or_insert(gpu);
            let rfd = *renders.last().unwrap();
            bound_fds.push((gpu, rfd));
            for _ in 0..self.plan.objects {
                let vram = self.rng.chance(1, 2);
                let pages = *self.rng.pick(&[1u64, 1, 2, 4, 16, 64]);
                let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
                    va_addr: va,
                    size: pages * 4096,
                    gpu_id: gpu,
                    flags: KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
                        | if vram { KFD_IOC_ALLOC_MEM_FLAGS_VRAM } else { KFD_IOC_ALLOC_MEM_FLAGS_GTT },
                    ..Default::default()
                };
                va += 1 << 24;
                if !self.ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a, "ALLOC_MEMORY_OF_GPU") {
                    self.report();
                    continue;
                }
                let mut mapped = false;
                if self.rng.chance(3, 4) {
                    let ids = [gpu];
                    let mut m = kfd_ioctl_map_memory_to_gpu_args {
                        handle: a.handle,
                        device_ids_array_ptr: ids.as_ptr() as u64,
                        n_devices: 1,
                        n_success: 0,
                    };
                    mapped = self.ioctl(AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut m, "MAP_MEMORY_TO_GPU");
                }
                if !vram && a.mmap_offset != 0 && self.rng.chance(1, 2) {
                    let len = (pages * 4096) as usize;
                    // SAFETY: mapping the object through its render node.
                    let p = unsafe {
                        libc::mmap(
                            std::ptr::null_mut(),
                            len,
                            libc::PROT_READ | libc::PROT_WRITE,
                            libc::MAP_SHARED,
                            rfd,
                            a.mmap_offset as libc::off_t,
                        )
                    };
                    if p != libc::MAP_FAILED {
                        // New memory reads as zero: nothing of what earlier
                        // processes wrote (0x5a, below) may show through.
                        // SAFETY: p is a fresh RW mapping of len bytes.
                        let bytes = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) };
                        if let Some(at) = bytes.iter().position(|&b| b != 0) {
                            self.errors.push(format!(
                                "new {len}-byte GTT object {:#x} reads {:#04x} at byte {at} (another object's contents leak)",
                                a.handle, bytes[at]
                            ));
                        }
                        bytes[..len.min(8192)].fill(0x5a);
                        maps.push((p as usize, len));
                    }
                }
                objs.push((a.handle, gpu, mapped));
                self.report();
            }
        }

        // Events, with a signal page when a GPU is bound (else only
        // non-signal events can be created).
        let mut events = Vec::new();
        let mut page = 0u64;
        if self.plan.events > 0 {
            if let Some(gpu) = first_bound {
                let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
                    va_addr: va,
                    size: fuzz::SIGNAL_PAGE_SIZE,
                    gpu_id: gpu,
                    flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
                    ..Default::default()
                };
                va += 1 << 24;
                if self.ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a, "ALLOC (signal page)") {
                    page = a.handle;
                }
            }
        }
        for _ in 0..self.plan.events {
            let mut e = kfd_ioctl_create_event_args {
                event_page_offset: std::mem::take(&mut page),
                event_type: if self.rng.chance(4, 5) { KFD_IOC_EVENT_SIGNAL } else { KFD_IOC_EVENT_NODECHANGE },
                auto_reset: self.rng.below(2) as u32,
                ..Default::default()
            };
            if self.ioctl(AMDKFD_IOC_CREATE_EVENT, &mut e, "CREATE_EVENT") {
                events.push(e.event_id);
                let mut s = kfd_ioctl_set_event_args { event_id: e.event_id, pad: 0 };
                self.ioctl(AMDKFD_IOC_SET_EVENT, &mut s, "SET_EVENT");
                let data = [kfd_event_data { event_id: e.event_id, ..Default::default() }];
                let mut w = kfd_ioctl_wait_events_args {
                    events_ptr: data.as_ptr() as u64,
                    num_events: 1,
                    wait_for_all: 0,
                    timeout: self.rng.below(3) as u32,
                    wait_result: 0,
                };
                self.ioctl(AMDKFD_IOC_WAIT_EVENTS, &mut w, "WAIT_EVENTS");
            }
            self.report();
        }

        // SVM (XNACK is set before any queue exists: EBUSY after).
        let svm = match (caps.svm_gpu, self.plan.svm_mib) {
            (Some(g), mib) if mib > 0 => bound_fds.iter().find(|b| b.0 == g).map(|&(g, fd)| (g, fd, mib)),
            _ => None,
        };
        let svm_state = svm.and_then(|(g, fd, mib)| self.svm_phase(g, fd, mib));
        // Queues with work in flight.
        let queue_state = match (self.plan.queues, bound_fds.first()) {
            (true, Some(&(g, fd))) => caps.topo.iter().find(|t| t.gpu_id == g).and_then(|t| self.queue_phase(t, fd)),
            _ => None,
        };

        // A grandchild that keeps the files after we are gone.
        if self.plan.grandchild {
            let kfd = self.kfd;
            let delay = self.rng.below(20_000);
            // SAFETY: the grandchild only sleeps, issues one ioctl and exits.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                std::thread::sleep(Duration::from_micros(delay));
                let code = match fuzz::get_version(kfd) {
                    Err(libc::EBADF) => 0,
                    _ => 4,
                };
                // SAFETY: leave without running destructors.
                unsafe { libc::_exit(code) };
            }
            self.report();
        }

        // A second thread working on the same process while we go on.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let worker = if self.plan.thread {
            let (kfd, stop2, gpu) = (self.kfd, stop.clone(), want.first().copied().unwrap_or(0));
            let mut trng = self.rng.fork();
            Some(std::thread::spawn(move || thread_work(kfd, gpu, &stop2, &mut trng)))
        } else {
            None
        };

        // Linger: more alloc/map/unmap/free cycles so a kill lands mid-work.
        let until = Instant::now() + Duration::from_millis(self.plan.linger_ms);
        while Instant::now() < until {
            let gpu = want.first().copied().unwrap_or(0);
            let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
                va_addr: va,
                size: 4096,
                gpu_id: gpu,
                flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
                ..Default::default()
            };
            va += 1 << 20;
            if self.ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a, "ALLOC (linger)") {
                let ids = [gpu];
                let mut m = kfd_ioctl_map_memory_to_gpu_args {
                    handle: a.handle,
                    device_ids_array_ptr: ids.as_ptr() as u64,
                    n_devices: 1,
                    n_success: 0,
                };
                if self.ioctl(AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut m, "MAP (linger)") {
                    m.n_success = 0;
                    self.ioctl(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &mut m, "UNMAP (linger)");
                }
                let mut f = kfd_ioctl_free_memory_of_gpu_args { handle: a.handle };
                self.ioctl(AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut f, "FREE (linger)");
            } else {
                let mut v = kfd_ioctl_get_version_args::default();
                self.ioctl(AMDKFD_IOC_GET_VERSION, &mut v, "GET_VERSION (linger)");
            }
            self.report();
        }

        let errors_code = |c: &Child| match (c.errors.is_empty(), c.known.is_empty()) {
            (false, _) => 2,
            (true, false) => EXIT_KNOWN,
            (true, true) => 0,
        };
        if self.plan.fate == Fate::Abandon {
            self.print_errors();
            // Everything stays live: the worker thread, mappings, objects.
            return errors_code(self);
        }

        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(w) = worker {
            match w.join() {
                Ok(errs) => self.errors.extend(errs),
                Err(_) => self.errors.push("worker thread panicked".into()),
            }
        }
        if let Some(q) = queue_state {
            self.queue_teardown(q);
        }
        if let Some(sv) = svm_state {
            self.svm_teardown(sv);
        }
        // Clean exit, in a random order of object kinds.
        for &(p, len) in &maps {
            // SAFETY: unmapping our own mapping.
            unsafe { libc::munmap(p as *mut libc::c_void, len) };
        }
        if self.rng.chance(1, 2) {
            for id in events.clone() {
                let mut d = kfd_ioctl_destroy_event_args { event_id: id, pad: 0 };
                self.ioctl(AMDKFD_IOC_DESTROY_EVENT, &mut d, "DESTROY_EVENT");
            }
        }
        for (h, gpu, mapped) in objs.clone() {
            if mapped {
                let ids = [gpu];
                let mut m = kfd_ioctl_unmap_memory_from_gpu_args {
                    handle: h,
                    device_ids_array_ptr: ids.as_ptr() as u64,
                    n_devices: 1,
                    n_success: 0,
                };
                self.ioctl(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &mut m, "UNMAP_MEMORY_FROM_GPU");
            }
            if self.rng.chance(7, 8) {
                let mut f = kfd_ioctl_free_memory_of_gpu_args { handle: h };
                self.ioctl(AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut f, "FREE_MEMORY_OF_GPU");
            }
        }
        self.report();
        // The fd still works at the end.
        if let Err(e) = fuzz::get_version(self.kfd) {
            self.errors.push(format!("GET_VERSION at the end: {}", fuzz::errno_str(e)));
        }
        // Close in a random order: kfd before or after the render nodes.
        if self.rng.chance(1, 2) {
            fuzz::close(self.kfd);
            renders.iter().for_each(|&fd| fuzz::close(fd));
        } else {
            renders.iter().for_each(|&fd| fuzz::close(fd));
            fuzz::close(self.kfd);
        }
        if let Some(f) = self.kfd2 {
            fuzz::close(f);
        }
        self.print_errors();
        errors_code(self)
    }

    /// ACQUIRE_VM of `drm_fd` while a forked grandchild, with its own
    /// /dev/kfd, acquires the same render-node file (upstream's "fix
    /// use-after-free race in VM acquire").  A VM belongs to one process:
    /// at most one of the two may succeed.
    fn acquire_racing(&mut self, drm_fd: i32, gpu: u32) -> Result<i32, i32> {
        let mut go = [0i32; 2];
        let mut res = [0i32; 2];
        // SAFETY: plain pipes.
        if unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) } != 0
            || unsafe { libc::pipe2(res.as_mut_ptr(), libc::O_CLOEXEC) } != 0
        {
            return fuzz::acquire_vm(self.kfd, drm_fd, gpu);
        }
        // SAFETY: the grandchild opens /dev/kfd, waits for the start byte,
        // issues one ioctl, reports and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // Only the child may hold the write end: EOF when it dies.
            fuzz::close(go[1]);
            fuzz::close(res[0]);
            let code = match Kfd::open() {
                Ok(k) => {
                    if !wait_readable(go[0], 5000) {
                        // SAFETY: leave without destructors.
                        unsafe { libc::_exit(0) };
                    }
                    let mut b = [0u8; 1];
                    // SAFETY: reading our pipe (a byte, or EOF if the child died).
                    unsafe { libc::read(go[0], b.as_mut_ptr().cast(), 1) };
                    let r = fuzz::acquire_vm(k.fd, drm_fd, gpu);
                    let byte = [match r {
                        Ok(_) => 1u8,
                        Err(e) if fuzz::is_clear_errno(e) => 0,
                        Err(_) => 2,
                    }];
                    // SAFETY: writing our result.
                    unsafe { libc::write(res[1], byte.as_ptr().cast(), 1) };
                    0
                }
                Err(_) => 3,
            };
            // SAFETY: leave without destructors.
            unsafe { libc::_exit(code) };
        }
        fuzz::close(go[0]);
        fuzz::close(res[1]);
        let b = [0u8; 1];
        // SAFETY: start the race.
        unsafe { libc::write(go[1], b.as_ptr().cast(), 1) };
        let mine = fuzz::acquire_vm(self.kfd, drm_fd, gpu);
        let mut theirs = [9u8; 1];
        let n = if wait_readable(res[0], 5000) {
            // SAFETY: reading the grandchild's result (or EOF if it died).
            unsafe { libc::read(res[0], theirs.as_mut_ptr().cast(), 1) }
        } else {
            0
        };
        fuzz::close(go[1]);
        fuzz::close(res[0]);
        if n == 1 && theirs[0] == 1 && mine.is_ok() {
            self.bug("vm-share", format!("ACQUIRE_VM of one render-node file (fd {drm_fd}, gpu {gpu}) succeeded in two processes"));
        }
        if n == 1 && theirs[0] == 2 {
            self.errors.push("racing ACQUIRE_VM in the grandchild: unexpected errno".into());
        }
        self.report();
        mine
    }

    fn print_errors(&self) {
        for e in self.errors.iter().take(5) {
            eprintln!("storm: child seed {:#x}: {e}", self.plan.seed);
        }
        for k in self.known.iter().take(1) {
            eprintln!("storm: KNOWN BUG {k} (child seed {:#x})", self.plan.seed);
        }
    }
}

/// An SVM range of a child, and the thread working on it.
struct SvmState {
    addr: usize,
    len: usize,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<String>>>,
}

/// A child's queues, their memory and the thread feeding them.
struct QueueState {
    q: &'static QueueMem,
    live: Vec<(u32, bool)>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The pattern byte of page `i` of a child's SVM range (never 0).
fn svm_pat(seed: u64, i: usize) -> u8 {
    (seed as u8).wrapping_add((i as u8).wrapping_mul(13)) | 1
}

/// First page of `buf` (page `first` of the range on) not holding the pattern.
fn svm_mismatch(seed: u64, buf: &[u8], first: usize) -> Option<String> {
    buf.chunks(4096).enumerate().find_map(|(i, c)| {
        let want = svm_pat(seed, first + i);
        c.iter().position(|&b| b != want).map(|o| format!("page {} byte {o}: {:#04x}, want {want:#04x}", first + i, c[o]))
    })
}

/// GPU read through the access ioctl.  With XNACK off a migration leaves
/// the GPU mapping to the restore worker (upstream `svm_range_set_attr`:
/// "restore_work will update mappings of GPUs"; the queues are quiesced
/// meanwhile, the access ioctl is not): an EFAULT is retried until the
/// worker remapped (bounded: 10 s without a mapping is a failure).
fn gpu_read(rfd: i32, addr: usize, buf: &mut [u8], xnack: bool) -> Result<i32, i32> {
    let mut tries = 0;
    loop {
        match kfd_tests::svm::gpu_access(rfd, addr, buf.as_mut_ptr() as usize, buf.len(), false) {
            Err(libc::EFAULT) if !xnack && tries < 500 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            r => return r.map(|f| f as i32),
        }
    }
}

/// One pass of the SVM thread: the whole range to VRAM, read by the GPU
/// (retry faults when XNACK is on and pages moved back), back to system.
fn svm_pass(kfd: i32, rfd: i32, gpu: u32, addr: usize, len: usize, seed: u64, xnack: bool) -> Vec<String> {
    let mut errors = Vec::new();
    if let Err(e) = svm_set_attr(kfd, addr, len, &[(uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, gpu)]) {
        errors.push(format!("SVM thread: PREFETCH_LOC gpu: {}", fuzz::errno_str(e)));
    }
    let mut buf = vec![0u8; len];
    match gpu_read(rfd, addr, &mut buf, xnack) {
        Ok(_) => {
            if let Some(w) = svm_mismatch(seed, &buf, 0) {
                errors.push(format!("SVM thread: GPU read after migration: {w}"));
            }
        }
        Err(e) => errors.push(format!("SVM thread: GPU read of {len} bytes: {}", fuzz::errno_str(e))),
    }
    if let Err(e) = svm_set_attr(kfd, addr, len, &[(uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, 0)]) {
        errors.push(format!("SVM thread: PREFETCH_LOC system: {}", fuzz::errno_str(e)));
    }
    errors
}

impl Child {
    fn svm_err(&mut self, r: Result<i32, i32>, what: &str) -> bool {
        match r {
            Ok(_) => true,
            Err(e) => {
                self.errors.push(format!("step {}: {what}: {}", self.step, fuzz::errno_str(e)));
                false
            }
        }
    }

    /// SET_ATTR, GPU touch, PREFETCH_LOC to VRAM, CPU touch (back to
    /// system), and optionally a thread doing it all over the whole range.
    fn svm_phase(&mut self, gpu: u32, rfd: i32, mib: usize) -> Option<SvmState> {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        let len = mib << 20;
        let seed = self.plan.seed;
        // SAFETY: a fresh anonymous mapping.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        if p == libc::MAP_FAILED {
            self.errors.push(format!("mmap {len} for SVM failed"));
            return None;
        }
        let addr = p as usize;
        // SAFETY: our fresh mapping.
        let mem = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) };
        for (i, c) in mem.chunks_mut(4096).enumerate() {
            c.fill(svm_pat(seed, i));
        }
        let mut x = uapi::kfd_ioctl_set_xnack_mode_args { xnack_enabled: 1 };
        let xnack = match ioctl_fd(self.kfd, uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut x as *mut _ as usize) {
            Ok(_) => true,
            // A GPU of the process without per-process XNACK.
            Err(libc::EPERM) => false,
            Err(e) => {
                self.errors.push(format!("SET_XNACK_MODE(1): {}", fuzz::errno_str(e)));
                false
            }
        };
        self.report();
        let mut attrs = vec![(uapi::KFD_IOCTL_SVM_ATTR_GRANULARITY, self.rng.below(10) as u32)];
        if !xnack || self.rng.chance(1, 2) {
            // XNACK off: mapped now, or the GPU may not touch it.
            attrs.push((uapi::KFD_IOCTL_SVM_ATTR_ACCESS, gpu));
        }
        let r = svm_set_attr(self.kfd, addr, len, &attrs);
        if !self.svm_err(r, "SVM SET_ATTR") {
            return None;
        }
        self.report();
        let n = len.min(256 << 10);
        let mut buf = vec![0u8; n];
        let r = gpu_read(rfd, addr, &mut buf, xnack);
        if self.svm_err(r, "GPU touch") {
            if let Some(w) = svm_mismatch(seed, &buf, 0) {
                self.errors.push(format!("GPU touch of SVM memory: {w}"));
            }
        }
        self.report();
        let r = svm_set_attr(self.kfd, addr, len, &[(uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, gpu)]);
        self.svm_err(r, "PREFETCH_LOC to VRAM");
        self.report();
        let r = gpu_read(rfd, addr, &mut buf, xnack);
        if self.svm_err(r, "GPU read of VRAM") {
            if let Some(w) = svm_mismatch(seed, &buf, 0) {
                self.errors.push(format!("GPU read after PREFETCH_LOC: {w}"));
            }
        }
        // The CPU touches every 8th page: back to system memory.
        for i in (0..len / 4096).step_by(8) {
            let want = svm_pat(seed, i);
            if mem[i * 4096] != want {
                self.errors.push(format!("CPU read after migration: page {i}: {:#04x}, want {want:#04x}", mem[i * 4096]));
                break;
            }
        }
        self.report();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let thread = self.plan.svm_big.then(|| {
            let (kfd, stop, forever) = (self.kfd, stop.clone(), self.plan.fate != Fate::Clean);
            std::thread::spawn(move || {
                let mut errors = Vec::new();
                // Clean lifecycles do one pass; the others go on
                // until killed (or abandoned).
                for i in 0.. {
                    if errors.len() > 3 || (!forever && i == 1) || stop.load(Relaxed) {
                        break;
                    }
                    errors.extend(svm_pass(kfd, rfd, gpu, addr, len, seed, xnack));
                }
                errors
            })
        });
        Some(SvmState { addr, len, stop, thread })
    }

    fn svm_teardown(&mut self, sv: SvmState) {
        sv.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = sv.thread {
            match t.join() {
                Ok(errs) => self.errors.extend(errs),
                Err(_) => self.errors.push("SVM thread panicked".into()),
            }
        }
        // SAFETY: our mapping, no thread uses it any more.
        let mem = unsafe { std::slice::from_raw_parts(sv.addr as *const u8, sv.len) };
        if let Some(w) = svm_mismatch(self.plan.seed, mem, 0) {
            self.errors.push(format!("SVM memory at the end: {w}"));
        }
        if self.rng.chance(1, 2) {
            // SAFETY: our mapping.
            unsafe { libc::munmap(sv.addr as *mut _, sv.len) };
        }
        self.report();
    }

    /// Queue memory, an optional clean round trip, then an AQL and maybe an
    /// SDMA queue with packets in flight (a thread keeps submitting).
    fn queue_phase(&mut self, t: &TopoGpu, rfd: i32) -> Option<QueueState> {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        let q = match QueueMem::new(self.kfd, rfd, t, 1 << 41) {
            Ok(q) => &*Box::leak(Box::new(q)),
            Err(e) => {
                self.errors.push(format!("step {}: queue memory: {e}", self.step));
                return None;
            }
        };
        self.report();
        if self.plan.fate == Fate::Clean && self.rng.chance(1, 2) {
            if let Err(e) = q.round_trip(4, 30) {
                self.errors.push(format!("queue round trip: {e}"));
            }
            self.report();
        }
        let mut live = Vec::new();
        q.set_signal(1 << 40);
        for sdma in [false, true] {
            if sdma && (q.props.sdma_engines == 0 || self.rng.chance(1, 3)) {
                continue;
            }
            // Half the AQL queues (on GPUs whose ISA the virtual GPU's
            // interpreter runs) start with a shader that never ends: the
            // kill, exit or DESTROY_QUEUE that ends the lifecycle meets it.
            let shader = !sdma && q.props.runs_shaders && self.rng.chance(1, 2);
            match q.create(sdma) {
                Ok((id, db)) => {
                    for i in 0..4 {
                        if sdma {
                            q.sdma_submit(i, i as u32, db)
                        } else if shader && i == 0 {
                            q.aql_dispatch_forever(i, db)
                        } else {
                            q.aql_submit(i, db)
                        }
                    }
                    live.push((id, sdma, db));
                }
                Err(e) => self.errors.push(format!("step {}: CREATE_QUEUE (sdma {sdma}): {}", self.step, fuzz::errno_str(e))),
            }
            self.report();
        }
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let thread = (self.plan.fate != Fate::Clean || self.rng.chance(1, 2)).then(|| {
            let (stop, live) = (stop.clone(), live.clone());
            std::thread::spawn(move || {
                let mut i = 4u64;
                while !stop.load(Relaxed) {
                    for &(_, sdma, db) in &live {
                        if sdma {
                            q.sdma_submit(i, i as u32, db)
                        } else {
                            q.aql_submit(i, db)
                        }
                    }
                    i += 1;
                    if i % 64 == 0 {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
            })
        });
        Some(QueueState { q, live: live.iter().map(|&(id, s, _)| (id, s)).collect(), stop, thread })
    }

    fn queue_teardown(&mut self, qs: QueueState) {
        qs.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = qs.thread {
            let _ = t.join();
        }
        // DESTROY_QUEUE with packets in flight: it must succeed.
        for (id, sdma) in qs.live {
            if let Err(e) = qs.q.destroy(id) {
                self.errors.push(format!("DESTROY_QUEUE {id} (sdma {sdma}): {}", fuzz::errno_str(e)));
            }
        }
        self.report();
    }
}

/// Waits up to `ms` for `fd` to be readable (data or EOF).
fn wait_readable(fd: i32, ms: i32) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: polling one fd of ours.
    unsafe { libc::poll(&mut p, 1, ms) > 0 }
}

/// Our remaining children (and orphans we reap), from /proc.
fn children() -> Vec<i32> {
    let me = std::process::id();
    std::fs::read_to_string(format!("/proc/{me}/task/{me}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The second thread of a child: small alloc/free and version cycles on the
/// same fd until told to stop (or killed with the process).
fn thread_work(kfd: i32, gpu: u32, stop: &std::sync::atomic::AtomicBool, rng: &mut Rng) -> Vec<String> {
    use uapi::*;
    let mut errors = Vec::new();
    let mut va = 0x30_0000_0000u64 + (rng.below(256) << 28);
    let mut n = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) && n < 10_000 {
        n += 1;
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: va,
            size: 4096,
            gpu_id: gpu,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT,
            ..Default::default()
        };
        va += 1 << 20;
        let r = ioctl_fd(kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a as *mut _ as usize);
        match r {
            Ok(_) => {
                let mut f = kfd_ioctl_free_memory_of_gpu_args { handle: a.handle };
                if let Err(e) = ioctl_fd(kfd, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut f as *mut _ as usize) {
                    if !fuzz::is_clear_errno(e) {
                        errors.push(format!("thread FREE: unexpected errno {}", fuzz::errno_str(e)));
                    }
                }
            }
            Err(e) if !fuzz::is_clear_errno(e) => errors.push(format!("thread ALLOC: unexpected errno {}", fuzz::errno_str(e))),
            Err(_) => {}
        }
        if let Err(e) = fuzz::get_version(kfd) {
            errors.push(format!("thread GET_VERSION: {}", fuzz::errno_str(e)));
            break;
        }
    }
    errors
}

// ---------------------------------------------------------------------------
// The parent.

struct Running {
    index: u64,
    plan: Plan,
    progress: i32,
    steps: u32,
    started: Instant,
    killed: bool,
    killed_at: Option<Instant>,
}

fn plan_for(rng: &mut Rng, index: u64, seed: u64) -> Plan {
    let mut x = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let child_seed = fuzz::splitmix64(&mut x);
    let fate = match rng.weighted(&[30, 15, 30, 25]) {
        0 => Fate::Clean,
        1 => Fate::Abandon,
        2 => Fate::KillAtStep(rng.range(1, 24) as u32),
        _ => Fate::KillAfter(Duration::from_micros(rng.range(0, 40_000))),
    };
    let killing = matches!(fate, Fate::KillAtStep(_) | Fate::KillAfter(_));
    Plan {
        seed: child_seed,
        fate,
        two_opens: rng.chance(1, 4),
        thread: rng.chance(1, 3),
        grandchild: rng.chance(1, 6),
        use_parent_fd: rng.chance(1, 4),
        vm_race: rng.chance(1, 5),
        objects: rng.range(0, 8) as u32,
        events: rng.range(0, 4) as u32,
        linger_ms: if killing { rng.range(5, 60) } else { rng.range(0, 5) },
        svm_mib: if rng.chance(1, 5) { *rng.pick(&[1, 1, 2, 4, 8]) } else { 0 },
        svm_big: rng.chance(1, 2),
        queues: rng.chance(1, 5),
    }
}

/// VRAM accounting a leak would show: AVAILABLE_MEMORY per gpu_id, and the
/// amdgpu sysfs vram_used/gtt_used files.
fn memory_snapshot(k: &Kfd, gpus: &[u32]) -> Vec<(String, u64)> {
    let mut v = Vec::new();
    for &g in gpus {
        let mut a = uapi::kfd_ioctl_get_available_memory_args { gpu_id: g, ..Default::default() };
        if k.ioctl(uapi::AMDKFD_IOC_AVAILABLE_MEMORY, &mut a).is_ok() {
            v.push((format!("AVAILABLE_MEMORY gpu {g}"), a.available));
        }
    }
    if let Ok(rd) = std::fs::read_dir("/sys/class/drm") {
        let mut cards: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        cards.sort();
        for c in cards {
            for f in ["mem_info_vram_used", "mem_info_gtt_used"] {
                let p = c.join("device").join(f);
                if let Ok(s) = std::fs::read_to_string(&p) {
                    if let Ok(n) = s.trim().parse() {
                        v.push((p.display().to_string(), n));
                    }
                }
            }
        }
    }
    v.dedup();
    v
}

/// Per-process sysfs directories of kfd (upstream /sys/class/kfd/kfd/proc/<pid>).
fn kfd_proc_pids() -> Option<Vec<String>> {
    let rd = std::fs::read_dir("/sys/class/kfd/kfd/proc").ok()?;
    let mut v: Vec<String> = rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().to_string()).collect();
    v.sort();
    Some(v)
}

/// The failures (each printed as a FAIL line when it happens), counted so
/// that each test case knows how many were its own.
struct Tally {
    failed: u64,
    seed: u64,
}

impl Tally {
    fn fail(&mut self, what: String) {
        self.failed += 1;
        println!("storm: FAIL seed={:#x}: {what}", self.seed);
        fuzz::flush();
    }
}

fn main() {
    let args = fuzz::Args::from_env();
    if args.flag("-h") || args.flag("--help") {
        println!("usage: kfd-storm [--seed S] [--lifecycles N] [--parallel P] [--time SECS] [--strict] [--verbose] [--no-svm] [--svm PCT] [--no-queues]");
        return;
    }
    let seed = args.u64("--seed", fuzz::random_seed());
    let lifecycles = args.u64("--lifecycles", 200);
    let parallel = args.u64("--parallel", 4).max(1) as usize;
    let time = args.u64("--time", 600);
    let verbose = args.flag("--verbose");
    let strict = args.flag("--strict");
    println!("storm: seed={seed:#x} lifecycles={lifecycles} parallel={parallel} time={time}s");
    fuzz::flush();
    let mut kmsg = fuzz::KmsgWatch::open();
    kmsg.mark(&format!("<7>kfd-storm: seed={seed:#x} lifecycles={lifecycles} start\n"));
    let mut t = Tally { failed: 0, seed };
    let mut h = Harness::default();

    // SAFETY: become the reaper of orphaned grandchildren.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };

    let k = match Kfd::open() {
        Ok(k) => k,
        Err(e) => {
            h.record("/dev/kfd opens", Err(e.to_string()));
            std::process::exit(h.finish("storm"));
        }
    };
    let gpus = fuzz::discover_gpus(&k);
    println!("storm: gpus={:?} render_nodes={:?}", gpus.ids, gpus.render_nodes);
    let caps = Caps {
        svm_gpu: kfd_tests::svm::svm_gpu().map(|g| g.gpu_id).filter(|_| !args.flag("--no-svm")),
        topo: topology_gpus(),
    };
    let no_queues = args.flag("--no-queues");
    let svm_pct = args.u64("--svm", 20).min(100);
    println!("storm: SVM {}", match caps.svm_gpu {
        Some(g) => format!("on gpu {g}"),
        None => "skipped (no GPU with HSA_CAP_SVMAPI_SUPPORTED, or --no-svm)".into(),
    });
    let before = memory_snapshot(&k, &gpus.ids);
    let procs_before = kfd_proc_pids();

    let mut rng = Rng::new(seed);
    let start = Instant::now();
    let deadline = (time > 0).then(|| start + Duration::from_secs(time));
    let mut running: HashMap<i32, Running> = HashMap::new();
    let mut next: u64 = 0;
    let mut done: u64 = 0;
    let mut fates = [0u64; 4];
    // Lifecycles with an SVM range (and a migrating thread), with queues.
    let (mut with_svm, mut with_svm_thread, mut with_queues) = (0u64, 0u64, 0u64);
    let mut killed_early = 0u64;
    // Lifecycles that showed only known bugs, and that could have shown them.
    let mut known_seen = 0u64;
    let mut known_chances = 0u64;
    // Lifecycles that ended as planned; kernel reports seen during the storm.
    let mut lifecycles_ok = 0u64;
    let mut kmsg_failed = 0u64;

    loop {
        let out_of_time = deadline.is_some_and(|d| Instant::now() >= d);
        // Start children up to the parallelism.
        while running.len() < parallel && next < lifecycles && !out_of_time {
            let mut plan = plan_for(&mut rng, next, seed);
            plan.queues &= !no_queues;
            // --svm PCT: the share of lifecycles with an SVM range (the
            // draw stays the same, so a seed keeps its other choices).
            if svm_pct != 20 {
                plan.svm_mib = if fuzz::splitmix64(&mut (plan.seed ^ 0x5u64)) % 100 < svm_pct { plan.svm_mib.max(1 + (plan.seed % 4) as usize) } else { 0 };
            }
            let mut fds = [0i32; 2];
            // SAFETY: a plain pipe for progress bytes.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
                t.fail(format!("pipe2: {}", std::io::Error::last_os_error()));
                break;
            }
            fuzz::flush();
            // SAFETY: the parent is single-threaded; the child runs plain code and exits.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                fuzz::close(fds[0]);
                let mut c = Child {
                    rng: Rng::new(plan.seed),
                    plan: plan.clone(),
                    progress: fds[1],
                    step: 0,
                    errors: Vec::new(),
                    known: Vec::new(),
                    kfd: -1,
                    kfd2: None,
                };
                let code = c.run(&gpus, &caps, k.fd);
                let _ = std::io::Write::flush(&mut std::io::stderr());
                // SAFETY: leave without running the parent's destructors.
                unsafe { libc::_exit(code) };
            }
            fuzz::close(fds[1]);
            if pid < 0 {
                t.fail(format!("fork: {}", std::io::Error::last_os_error()));
                fuzz::close(fds[0]);
                break;
            }
            if caps.svm_gpu.is_some() && plan.svm_mib > 0 {
                with_svm += 1;
                with_svm_thread += u64::from(plan.svm_big);
            }
            with_queues += u64::from(plan.queues);
            fates[match plan.fate {
                Fate::Clean => 0,
                Fate::Abandon => 1,
                Fate::KillAtStep(_) => 2,
                Fate::KillAfter(_) => 3,
            }] += 1;
            running.insert(pid, Running { index: next, plan, progress: fds[0], steps: 0, started: Instant::now(), killed: false, killed_at: None });
            next += 1;
        }
        if running.is_empty() {
            break;
        }

        // Progress and kills.
        let mut pfds: Vec<libc::pollfd> =
            running.values().map(|r| libc::pollfd { fd: r.progress, events: libc::POLLIN, revents: 0 }).collect();
        // SAFETY: polling our pipes for at most 1 ms.
        unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, 1) };
        for (pid, r) in running.iter_mut() {
            let mut buf = [0u8; 256];
            loop {
                // SAFETY: reading our nonblocking pipe.
                let n = unsafe { libc::read(r.progress, buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    break;
                }
                r.steps += n as u32;
            }
            let kill = !r.killed
                && match r.plan.fate {
                    Fate::KillAtStep(s) => r.steps >= s,
                    Fate::KillAfter(d) => r.started.elapsed() >= d,
                    _ => false,
                };
            let hung = r.started.elapsed() > CHILD_TIMEOUT && !r.killed;
            if kill || hung {
                // SAFETY: killing our own child.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
                r.killed = true;
                r.killed_at = Some(Instant::now());
                if hung {
                    println!("storm: lifecycle {} (child seed {:#x}) still running after {:?}: killed", r.index, r.plan.seed, CHILD_TIMEOUT);
                    print!("{}", fuzz::kernel_stacks(*pid));
                    r.plan.fate = Fate::Clean; // judged as a failure below
                    r.steps = u32::MAX;
                }
            }
        }

        // A child that SIGKILL cannot end is stuck in the kernel: give up on it.
        let stuck: Vec<i32> = running
            .iter()
            .filter(|(_, r)| r.killed_at.is_some_and(|t| t.elapsed() > Duration::from_secs(20)))
            .map(|(p, _)| *p)
            .collect();
        for pid in stuck {
            let r = running.remove(&pid).unwrap();
            print!("{}", fuzz::kernel_stacks(pid));
            t.fail(format!("lifecycle {} (child seed {:#x}): still alive 20 s after SIGKILL (stuck in the kernel)", r.index, r.plan.seed));
            fuzz::close(r.progress);
            done += 1;
        }

        // Reap.
        loop {
            let mut status = 0;
            // SAFETY: reaping any child (grandchildren too: we are the subreaper).
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            let Some(r) = running.remove(&pid) else {
                // An orphaned grandchild: exit 0 means it got EBADF.
                if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                    t.fail(format!("grandchild {pid} ended with status {status:#x} (exit 4 = the opener's fd was usable)"));
                }
                continue;
            };
            fuzz::close(r.progress);
            done += 1;
            let known_only = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == EXIT_KNOWN;
            if known_only {
                known_seen += 1;
            }
            if r.plan.vm_race {
                known_chances += 1;
            }
            let exited0 = libc::WIFEXITED(status) && (libc::WEXITSTATUS(status) == 0 || (known_only && !strict));
            let sigkilled = libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL;
            let ok = match r.plan.fate {
                Fate::Clean | Fate::Abandon => exited0 && r.steps != u32::MAX,
                _ => exited0 || (sigkilled && r.killed),
            };
            if matches!(r.plan.fate, Fate::KillAtStep(_) | Fate::KillAfter(_)) && exited0 {
                killed_early += 1;
            }
            if ok {
                lifecycles_ok += 1;
                if verbose {
                    println!("# lifecycle {} {:?} steps {} ok", r.index, r.plan.fate, r.steps);
                }
            } else {
                let how = if libc::WIFEXITED(status) {
                    format!("exit {}", libc::WEXITSTATUS(status))
                } else {
                    format!("signal {}", libc::WTERMSIG(status))
                };
                t.fail(format!(
                    "lifecycle {} (child seed {:#x}, {:?}, {} steps): {how} (2 = unclear errno or broken check, see above; 3 = open failed; 5 = known bug, --strict)",
                    r.index, r.plan.seed, r.plan, r.steps
                ));
            }
        }
        let bad = kmsg.bad_lines();
        if !bad.is_empty() {
            kmsg_failed += 1;
            t.fail(format!("kernel report after {done} lifecycles: {}", bad[0]));
            for l in bad.iter().skip(1).take(5) {
                println!("storm:   kmsg: {l}");
            }
        }
    }

    // Orphaned grandchildren still holding files.
    let wait_until = Instant::now() + Duration::from_secs(10);
    loop {
        let mut status = 0;
        // SAFETY: reaping whatever is left.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid < 0 {
            break;
        }
        if pid > 0 {
            if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                t.fail(format!("grandchild {pid} ended with status {status:#x}"));
            }
            continue;
        }
        if Instant::now() > wait_until {
            let left = children();
            t.fail(format!("processes {left:?} still running 10 s after the storm"));
            for pid in left {
                print!("{}", fuzz::kernel_stacks(pid));
                // SAFETY: ending what we started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let secs = start.elapsed().as_secs_f64();
    let lifecycle_failures = t.failed - kmsg_failed;
    h.record(
        "process lifecycles (clean, abandoned, killed) end as planned, every ioctl with success or a clear errno",
        if lifecycle_failures > 0 {
            Err(format!("{lifecycle_failures} failures (the FAIL lines above)"))
        } else if lifecycles_ok == 0 {
            Err("no lifecycle ran".into())
        } else {
            Ok(())
        },
    );

    // After the storm: the driver answers, and nothing stayed allocated.
    h.record(
        "/dev/kfd opens and answers GET_VERSION after the storm",
        match Kfd::open().map(|k2| fuzz::get_version(k2.fd)) {
            Ok(Ok((1, _))) => Ok(()),
            other => {
                t.fail(format!("fresh open + GET_VERSION after the storm: {other:?}"));
                Err(format!("{other:?}"))
            }
        },
    );
    let failed_before_memory = t.failed;
    let mut after = memory_snapshot(&k, &gpus.ids);
    let settle = Instant::now() + Duration::from_secs(3);
    while after != before && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(50));
        after = memory_snapshot(&k, &gpus.ids);
    }
    if after == before {
        if !before.is_empty() {
            println!("storm: memory accounting back to the start ({} counters)", before.len());
        }
    } else {
        for (b, a) in before.iter().zip(after.iter()) {
            if b != a {
                t.fail(format!("{}: {} before the storm, {} after", b.0, b.1, a.1));
            }
        }
        if before.len() != after.len() {
            t.fail(format!("memory counters changed: {before:?} -> {after:?}"));
        }
    }
    h.record(
        "available memory and vram_used back to the values before the storm",
        if t.failed == failed_before_memory { Ok(()) } else { Err(format!("{} counters differ", t.failed - failed_before_memory)) },
    );
    if let (Some(b), Some(a)) = (procs_before, kfd_proc_pids()) {
        h.record(
            "/sys/class/kfd/kfd/proc lists the same processes as before the storm",
            if a == b {
                Ok(())
            } else {
                t.fail(format!("/sys/class/kfd/kfd/proc: {b:?} before, {a:?} after"));
                Err(format!("{b:?} before, {a:?} after"))
            },
        );
    }
    let bad = kmsg.bad_lines();
    if !bad.is_empty() {
        kmsg_failed += 1;
        t.fail(format!("kernel report at the end of the storm: {}", bad[0]));
    }
    h.record(
        "no kernel report on /dev/kmsg during the storm",
        if kmsg_failed == 0 { Ok(()) } else { Err(format!("{kmsg_failed} report(s) (the FAIL lines above)")) },
    );
    drop(k);

    if done < lifecycles {
        println!("storm: time limit reached after {done} of {lifecycles} lifecycles");
    }
    if known_seen > 0 {
        println!(
            "storm: known bugs {KNOWN_BUGS:?} showed in {known_seen} of {known_chances} lifecycles that tried{}",
            if strict { " (failures: --strict)" } else { " (not counted as failures; --strict counts them)" }
        );
    } else if !KNOWN_BUGS.is_empty() && known_chances >= 10 {
        println!("storm: known bugs {KNOWN_BUGS:?} did not show in {known_chances} lifecycles that tried: fixed? remove them from KNOWN_BUGS");
    }
    println!(
        "storm: seed={seed:#x} {done} lifecycles in {secs:.1} s (clean {}, abandon {}, kill-at-step {}, kill-after-delay {}; {killed_early} finished before the kill), gpus {}",
        fates[0],
        fates[1],
        fates[2],
        fates[3],
        gpus.ids.len()
    );
    println!("storm: {with_svm} lifecycles with an SVM range ({with_svm_thread} with a migrating/faulting thread), {with_queues} with queues");
    kmsg.mark(&format!("<7>kfd-storm: seed={seed:#x} done after {done} lifecycles, {} failed\n", t.failed));
    h.detail(format!("{done} lifecycles"));
    h.detail(format!("{} failures", t.failed));
    std::process::exit(h.finish("storm"));
}
