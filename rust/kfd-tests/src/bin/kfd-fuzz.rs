// SPDX-License-Identifier: GPL-2.0
//! kfd-fuzz: a seeded, bounded ioctl fuzzer for /dev/kfd, run inside the
//! test VM.
//!
//!   kfd-fuzz [--seed S] [--calls N] [--time SECS] [--trace] [--trace-from I]
//!            [--only NR[,NR...]] [--kmsg-every N] [--watchdog SECS] [--quiet]
//!
//! Defaults: a random seed (printed first), 100000 calls, at most 600 s,
//! kernel log checked every 256 calls, 60 s watchdog per call.
//!
//! Every call is one ioctl, made in one of three ways:
//!
//! - raw: any command number (the 40 known ones, 0, unknown ones), any
//!   direction, type byte and size field (0 … 0x3fff), random bytes;
//! - structured: a real argument struct with fields drawn from valid and
//!   hostile values: live, freed and mutated handles and event ids, other
//!   and bogus gpu_ids, huge counts (num_events, n_devices, nattr,
//!   num_of_nodes …), and embedded pointers that are good, misaligned,
//!   NULL, unmapped, kernel, non-canonical, read-only, PROT_NONE or
//!   straddling into an unmapped page;
//! - chains of valid calls (acquire VM with a render node → alloc → map →
//!   free while mapped → unmap → free → use after free; events create →
//!   set → wait → reset → destroy → use after destroy; CPU-map an object
//!   through the render node → free → new objects read zero and the old
//!   mapping keeps its contents; dma-buf export →
//!   info → import; apertures count → fill; SVM set → get; close and
//!   reopen /dev/kfd with everything live).
//!
//! A call passes when it succeeds or fails with a clear errno (the
//! whitelist in fuzz.rs) and the fd still answers GET_VERSION afterwards.
//! Kernel reports (WARN, BUG, lockdep, KFENCE, …) seen on /dev/kmsg while
//! running are failures too, reported with the range of calls they
//! appeared in.  The closing line counts two test cases (the calls, the
//! kernel log) with the number of calls and failures beside it:
//! `fuzz: 2 passed, 0 failed (100000 calls, 0 failures)`.  Same seed and same driver ⇒ same call sequence: rerun with
//! `--seed S --calls I+1 --trace-from I-50` to see the calls before a
//! failure at index I.
//!
//! Pointers handed to the kernel only ever point into the fuzz zone
//! (fuzz.rs), never at the fuzzer's own state.  WAIT_EVENTS always gets a
//! timeout of 0..10 ms.

use kfd_tests::fuzz;
use kfd_tests::ops;

use fuzz::{PtrKind, Rng, ARG, SUB};
use kfd_tests::harness::{print_closing_line, Harness};
use kfd_tests::kfd::{ioctl_fd, Kfd};
use kfd_uapi as uapi;
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Mirror of the call counter for the watchdog thread.
static CALLS: AtomicU64 = AtomicU64::new(0);
/// The test case of the calls, for the watchdog's closing line.
const CASE_CALLS: &str = "seeded ioctl calls answer success or a clear errno, /dev/kfd stays usable, chain checks hold";

/// Ends the run if one call does not return within `secs` (a deadlock or a
/// wait that ignores its timeout): prints the seed, the call and the kernel
/// stacks of our threads, and the closing line.
fn watchdog(seed: u64, secs: u64) {
    std::thread::spawn(move || {
        let mut last = u64::MAX;
        let mut since = Instant::now();
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let now = CALLS.load(Relaxed);
            if now != last {
                last = now;
                since = Instant::now();
                continue;
            }
            if since.elapsed() >= Duration::from_secs(secs) {
                let idx = now.saturating_sub(1);
                println!("fuzz: FAIL seed={seed:#x} call={idx}: no return for {secs} s (hung ioctl?)");
                println!("fuzz:   rerun: kfd-fuzz --seed {seed:#x} --calls {} --trace-from {}", idx + 1, idx.saturating_sub(50));
                print!("{}", fuzz::kernel_stacks(std::process::id() as i32));
                println!("not ok 1 - {CASE_CALLS}: call {idx} did not return");
                print_closing_line("fuzz", 0, 1, &[format!("{now} calls, call {idx} hung")]);
                fuzz::flush();
                // SAFETY: ending the process; the stuck thread cannot be joined.
                unsafe { libc::_exit(1) };
            }
        }
    });
}

const K: u32 = uapi::AMDKFD_IOCTL_BASE;
const NR_WAIT_EVENTS: u32 = 0x0c;
const MAX_LIVE_OBJECTS: usize = 48;
const MAX_POOL: usize = 64;
const MAX_FAILURE_DETAILS: u64 = 25;

fn bytes_of<T>(t: &T) -> Vec<u8> {
    // SAFETY: plain-old-data UAPI structs, read as bytes.
    unsafe { std::slice::from_raw_parts(t as *const T as *const u8, size_of::<T>()) }.to_vec()
}

fn read_u32(b: &[u8], off: usize) -> u32 {
    let mut w = [0u8; 4];
    for (i, x) in w.iter_mut().enumerate() {
        *x = b.get(off + i).copied().unwrap_or(0);
    }
    u32::from_ne_bytes(w)
}

fn read_u64(b: &[u8], off: usize) -> u64 {
    let mut w = [0u8; 8];
    for (i, x) in w.iter_mut().enumerate() {
        *x = b.get(off + i).copied().unwrap_or(0);
    }
    u64::from_ne_bytes(w)
}

fn name_of(nr: u32) -> &'static str {
    match uapi::ioctl_by_nr(nr) {
        Some(d) => d.name.trim_start_matches("AMDKFD_IOC_"),
        None => "unknown",
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
}

/// One call as issued, for traces and failure reports.
struct Call {
    mode: &'static str,
    fd: i32,
    cmd: u32,
    kind: PtrKind,
    arg: u64,
    /// The bytes placed at `arg` (what the kernel reads), if any.
    content: Vec<u8>,
}

impl Call {
    fn nr(&self) -> u32 {
        uapi::ioc_nr(self.cmd)
    }

    fn describe(&self) -> String {
        format!(
            "{} {} nr={:#04x} cmd={:#010x} (dir {} size {}) arg={:?}@{:#x}",
            self.mode,
            name_of(self.nr()),
            self.nr(),
            self.cmd,
            uapi::ioc_dir(self.cmd),
            uapi::ioc_size(self.cmd),
            self.kind,
            self.arg
        )
    }
}

#[derive(Default, Clone)]
struct Stat {
    calls: u64,
    ok: u64,
    errnos: Vec<(i32, u64)>,
}

struct Fuzzer {
    rng: Rng,
    seed: u64,
    max_calls: u64,
    deadline: Option<Instant>,
    only: Option<Vec<u32>>,
    trace_from: Option<u64>,
    quiet: bool,
    kmsg_every: u64,

    kfd: i32,
    kfd2: Option<i32>,
    gpus: Vec<u32>,
    render_paths: Vec<String>,
    renders: Vec<i32>,
    /// gpu_id → index into `renders` that ACQUIRE_VM accepted.
    pairing: Vec<(u32, usize)>,
    handles: Vec<u64>,
    freed_handles: Vec<u64>,
    events: Vec<u32>,
    freed_events: Vec<u32>,
    queues: Vec<u32>,
    /// Queue memory (ring, pointers, EOP, save area, mapped) per gpu_id of
    /// the current process, for chain_queue.
    qmem: Vec<(u32, kfd_tests::queue::QueueMem)>,
    dmabufs: Vec<i32>,
    /// Handle of the registered event signal page, if any.
    signal_page: Option<u64>,
    next_va: u64,

    calls: u64,
    /// Calls that passed (a chain check that fails takes its call back).
    passed: u64,
    /// Failures: calls, chain checks and kernel reports.
    failed: u64,
    /// Of `failed`, the kernel reports.
    kmsg_failed: u64,
    stats: Vec<Stat>,
    kmsg: fuzz::KmsgWatch,
    kmsg_from: u64,
    keep_fds: Vec<i32>,
    reopens: u64,
    stopped_by_time: bool,
}

impl Fuzzer {
    fn budget(&self) -> bool {
        self.calls < self.max_calls && !self.stopped_by_time
    }

    fn allowed(&self, nr: u32) -> bool {
        self.only.as_ref().is_none_or(|o| o.contains(&nr))
    }

    // -- bookkeeping ------------------------------------------------------

    fn fail(&mut self, idx: u64, why: String) {
        self.failed += 1;
        if self.failed <= MAX_FAILURE_DETAILS {
            println!("fuzz: FAIL seed={:#x} call={idx}: {why}", self.seed);
            println!(
                "fuzz:   rerun: kfd-fuzz --seed {:#x} --calls {} --trace-from {}",
                self.seed,
                idx + 1,
                idx.saturating_sub(50)
            );
        } else if self.failed == MAX_FAILURE_DETAILS + 1 {
            println!("fuzz: (further failures counted, not shown)");
        }
        fuzz::flush();
    }

    fn check_kmsg(&mut self) {
        let bad = self.kmsg.bad_lines();
        if !bad.is_empty() {
            let (a, b) = (self.kmsg_from, self.calls.saturating_sub(1));
            let idx = b;
            let first = bad[0].clone();
            self.kmsg_failed += 1;
            self.fail(
                idx,
                format!("kernel report during calls {a}..={b} ({} line(s)), first: {first}", bad.len()),
            );
            for l in bad.iter().skip(1).take(5) {
                println!("fuzz:   kmsg: {l}");
            }
        }
        self.kmsg_from = self.calls;
    }

    /// A few writes, reads and polls with odd lengths and pointers on a new
    /// SMI event file, checked against upstream's answers: a write shorter
    /// than 8 bytes is EFAULT, one of 8+ bytes from a good buffer returns 8
    /// (else EFAULT); a read returns at most min(len, 8192) bytes, or
    /// EAGAIN / EFAULT; poll answers at once.
    fn poke_smi(&mut self, fd: i32) {
        const LENS: [usize; 11] = [0, 1, 7, 8, 9, 16, 64, 4096, 8192, 8193, 1 << 20];
        // The periodic fd sweep (every 256 calls, inside `exec`) may already
        // have closed it.
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap_or_default();
        if link.as_os_str() != "anon_inode:kfd_smi_ev" {
            return;
        }
        let idx = self.calls;
        for _ in 0..self.rng.range(1, 6) {
            let kind = fuzz::pick_kind(&mut self.rng, 6);
            let len = *self.rng.pick(&LENS);
            let mut content = vec![0u8; len.min(64)];
            self.rng.fill(&mut content);
            if self.rng.chance(1, 2) {
                content.iter_mut().take(8).for_each(|b| *b = 0xff);
            }
            let ptr = fuzz::place(&mut self.rng, kind, fuzz::SUB[2], &content) as usize;
            let op = self.rng.below(3);
            // SAFETY: the kernel checks every pointer; buffers are in the
            // fuzzer's own scratch regions or deliberately bad.
            let (r, e) = unsafe {
                let r = match op {
                    0 => libc::write(fd, ptr as *const libc::c_void, len),
                    1 => libc::read(fd, ptr as *mut libc::c_void, len),
                    _ => {
                        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
                        libc::poll(&mut p, 1, 0) as isize
                    }
                };
                (r, std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
            };
            let good_write = kind == fuzz::PtrKind::Good && len >= 8 && len <= 64;
            let bad = match op {
                0 if len < 8 => !(r < 0 && e == libc::EFAULT),
                0 if good_write => r != 8,
                0 => !(r == 8 || (r < 0 && e == libc::EFAULT)),
                1 if r >= 0 => len == 0 || r == 0 || r as usize > len.min(8192),
                1 => !(e == libc::EAGAIN || e == libc::EFAULT),
                _ => !(0..=1).contains(&r),
            };
            if bad {
                let what = ["write", "read", "poll"][op as usize];
                self.fail(idx, format!("SMI fd {what}({kind:?}, len {len}): {r} ({})", fuzz::errno_str(e)));
            }
        }
    }

    fn known_fds(&self) -> Vec<i32> {
        let mut v = self.keep_fds.clone();
        v.push(self.kfd);
        v.extend(self.kfd2);
        v.extend(self.renders.iter().copied());
        v.extend(self.dmabufs.iter().copied());
        v
    }

    fn periodic(&mut self) {
        let n = self.calls;
        if n % self.kmsg_every == 0 {
            self.check_kmsg();
        }
        if n % 256 == 0 {
            let keep = self.known_fds();
            fuzz::sweep_fds(&keep);
            if let Some(d) = self.deadline {
                if Instant::now() >= d {
                    self.stopped_by_time = true;
                }
            }
        }
        if n % 8192 == 0 {
            // Debug level: in dmesg.log, not on the (slow, shared) console.
            self.kmsg.mark(&format!("<7>kfd-fuzz: seed={:#x} at call {n}\n", self.seed));
            if !self.quiet {
                println!("# fuzz: {n} calls, {} failed", self.failed);
                fuzz::flush();
            }
        }
    }

    /// Issues one ioctl and judges it.
    fn exec(&mut self, c: &Call) -> Result<i32, i32> {
        let idx = self.calls;
        self.calls += 1;
        if self.trace_from.is_some_and(|t| idx >= t) {
            println!("# call {idx}: fd={} {} bytes[{}]={}", c.fd, c.describe(), c.content.len(), hex(&c.content[..c.content.len().min(64)]));
            fuzz::flush();
        }
        CALLS.store(self.calls, Relaxed);
        let r = ioctl_fd(c.fd, c.cmd, c.arg as usize);
        let nr = c.nr() as usize;
        let st = &mut self.stats[nr];
        st.calls += 1;
        let mut ok = true;
        match r {
            Ok(_) => st.ok += 1,
            Err(e) => {
                match st.errnos.iter_mut().find(|(x, _)| *x == e) {
                    Some(p) => p.1 += 1,
                    None => st.errnos.push((e, 1)),
                }
                if !fuzz::is_clear_errno_for(c.nr(), e) {
                    ok = false;
                    let head = hex(&c.content[..c.content.len().min(64)]);
                    self.fail(idx, format!("{}: unexpected errno {} ({e})\n  bytes: {head}", c.describe(), fuzz::errno_str(e)));
                }
            }
        }
        if self.trace_from.is_some_and(|t| idx >= t) {
            println!("#   -> {}", match r {
                Ok(v) => format!("ok {v}"),
                Err(e) => fuzz::errno_str(e),
            });
        }
        // The fd must stay usable whatever happened.
        match fuzz::get_version(self.kfd) {
            Ok((1, _)) => {
                if ok {
                    self.passed += 1;
                }
            }
            other => {
                let why = match other {
                    Ok((a, b)) => format!("version {a}.{b}"),
                    Err(e) => fuzz::errno_str(e),
                };
                self.fail(idx, format!("/dev/kfd unusable after {}: GET_VERSION {why}", c.describe()));
                self.reopen(false);
            }
        }
        self.periodic();
        r
    }

    // -- value generators --------------------------------------------------

    fn gpu_id(&mut self) -> u32 {
        let n = self.gpus.len() as u64;
        match self.rng.below(10) {
            0..=4 if n > 0 => self.gpus[self.rng.below(n) as usize],
            5 if n > 0 => {
                let g = self.gpus[self.rng.below(n) as usize];
                *self.rng.pick(&[g ^ 1, g.wrapping_add(1), g.wrapping_sub(1), g << 1, !g])
            }
            6 => 0,
            7 if !self.freed_handles.is_empty() => {
                let h = *self.rng.pick(&self.freed_handles);
                (h >> 32) as u32
            }
            _ => fuzz::interesting_u32(&mut self.rng),
        }
    }

    fn other_gpu(&mut self, not: u32) -> u32 {
        let others: Vec<u32> = self.gpus.iter().copied().filter(|&g| g != not).collect();
        if !others.is_empty() && self.rng.chance(1, 2) {
            *self.rng.pick(&others)
        } else {
            not ^ 0x8000
        }
    }

    fn handle(&mut self) -> u64 {
        match self.rng.below(10) {
            0..=3 if !self.handles.is_empty() => *self.rng.pick(&self.handles),
            4 | 5 if !self.freed_handles.is_empty() => *self.rng.pick(&self.freed_handles),
            6 if !self.handles.is_empty() => {
                let h = *self.rng.pick(&self.handles);
                let g = self.other_gpu((h >> 32) as u32);
                (u64::from(g) << 32) | (h & 0xffff_ffff)
            }
            7 if !self.handles.is_empty() => {
                let h = *self.rng.pick(&self.handles);
                let idr = *self.rng.pick(&[1u64, 2, 0xffff_ffff, 0x8000_0000]);
                (h & !0xffff_ffff) | ((h + idr) & 0xffff_ffff)
            }
            8 => {
                let g = self.gpu_id();
                (u64::from(g) << 32) | self.rng.below(8)
            }
            _ => fuzz::interesting_u64(&mut self.rng),
        }
    }

    fn event_id(&mut self) -> u32 {
        match self.rng.below(10) {
            0..=4 if !self.events.is_empty() => *self.rng.pick(&self.events),
            5 | 6 if !self.freed_events.is_empty() => *self.rng.pick(&self.freed_events),
            7 => self.rng.below(8) as u32,
            _ => fuzz::interesting_u32(&mut self.rng),
        }
    }

    fn queue_id(&mut self) -> u32 {
        if !self.queues.is_empty() && self.rng.chance(1, 2) {
            *self.rng.pick(&self.queues)
        } else if self.rng.chance(1, 2) {
            self.rng.below(8) as u32
        } else {
            fuzz::interesting_u32(&mut self.rng)
        }
    }

    /// A file descriptor number for drm_fd / dmabuf_fd / dbg_fd fields.
    fn some_fd(&mut self) -> u32 {
        match self.rng.below(10) {
            0..=3 if !self.renders.is_empty() => *self.rng.pick(&self.renders) as u32,
            4 => self.kfd as u32,
            5 if !self.dmabufs.is_empty() => *self.rng.pick(&self.dmabufs) as u32,
            6 => u32::MAX,
            7 => self.rng.below(3) as u32,
            8 => 1000 + self.rng.below(24) as u32,
            _ => fuzz::interesting_u32(&mut self.rng),
        }
    }

    /// A GPU virtual address.
    fn va(&mut self, size: u64) -> u64 {
        match self.rng.below(10) {
            0..=5 => {
                let v = self.next_va;
                self.next_va += (size.min(1 << 30) + 0xffff) & !0xffff;
                self.next_va += 0x1_0000;
                if self.next_va > 0x7000_0000_0000 {
                    self.next_va = 0x1_0000_0000;
                }
                v
            }
            6 => 0,
            7 => self.next_va.wrapping_sub(0x1_0000), // overlaps the last one
            8 => (self.rng.below(1 << 35) << 12) + 0x1_0000,
            _ => fuzz::interesting_u64(&mut self.rng),
        }
    }

    fn mem_size(&mut self) -> u64 {
        match self.rng.below(12) {
            0..=5 => fuzz::PAGE as u64 * *self.rng.pick(&[1u64, 1, 2, 3, 4, 16, 64]),
            6 => 2 << 20,
            7 => 0,
            8 => *self.rng.pick(&[1u64, 8, 4095, 4097, 0x1001]),
            9 => *self.rng.pick(&[1u64 << 40, 1 << 47, u64::MAX & !0xfff, 1 << 63, u64::MAX]),
            _ => fuzz::interesting_u64(&mut self.rng) & !0xfff,
        }
    }

    fn alloc_flags(&mut self) -> u32 {
        use uapi::*;
        let domain = match self.rng.below(12) {
            0..=3 => KFD_IOC_ALLOC_MEM_FLAGS_GTT,
            4..=6 => KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
            7 => KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
            8 => KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL,
            9 => KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP,
            10 => 0,
            _ => self.rng.u32() & 0x1f,
        };
        let attrs = [
            KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE,
            KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC,
            KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE,
            KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM,
            KFD_IOC_ALLOC_MEM_FLAGS_COHERENT,
            KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED,
            KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT,
            KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS,
        ];
        let mut f = domain;
        for a in attrs {
            if self.rng.chance(1, 4) {
                f |= a;
            }
        }
        if self.rng.chance(1, 20) {
            f |= self.rng.u32();
        }
        f
    }

    /// A pointer field: a buffer of `content` in sub-region `sub`, placed
    /// good most of the time.
    fn sub_ptr(&mut self, sub: usize, content: &[u8]) -> u64 {
        let kind = fuzz::pick_kind(&mut self.rng, 50);
        fuzz::place(&mut self.rng, kind, SUB[sub], content)
    }

    /// A pointer to an output buffer of `len` bytes.
    fn out_ptr(&mut self, sub: usize, len: usize) -> u64 {
        let len = len.clamp(1, fuzz::REGION);
        let junk = vec![0xa5u8; len];
        self.sub_ptr(sub, &junk)
    }

    /// gpu_ids for a device_ids array.
    fn gpu_array(&mut self, n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n * 4);
        for _ in 0..n {
            let g = self.gpu_id();
            v.extend_from_slice(&g.to_ne_bytes());
        }
        v
    }

    // -- calls -------------------------------------------------------------

    fn pick_fd(&mut self) -> i32 {
        match self.kfd2 {
            Some(f) if self.rng.chance(1, 8) => f,
            _ => self.kfd,
        }
    }

    /// The command of `nr` as user space builds it, sometimes with another
    /// size in the size field.
    fn struct_cmd(&mut self, nr: u32, size: usize) -> u32 {
        let d = uapi::ioctl_by_nr(nr).map(|d| d.cmd).unwrap_or(uapi::ioc(3, K, nr, size as u32));
        let dir = uapi::ioc_dir(d);
        let size = size.min(uapi::IOC_SIZEMASK as usize) as u32;
        let size = match self.rng.below(20) {
            0 => 0,
            1 => self.rng.below(u64::from(size)) as u32,
            2 => size + 1 + self.rng.below(64) as u32,
            3 => uapi::IOC_SIZEMASK,
            _ => size,
        };
        uapi::ioc(dir, K, nr, size)
    }

    /// Places `content` as the argument of `cmd` and issues it.
    fn issue(&mut self, mode: &'static str, cmd: u32, mut content: Vec<u8>, good_weight: u32) -> (Result<i32, i32>, Call) {
        let kind = fuzz::pick_kind(&mut self.rng, good_weight);
        let size = uapi::ioc_size(cmd) as usize;
        if content.len() < size {
            // What lies past our struct: zeroes or junk.
            let junk = self.rng.chance(1, 2);
            let extra = size - content.len();
            let mut tail = if junk { fuzz::raw_bytes(&mut self.rng, extra) } else { vec![0u8; extra] };
            content.append(&mut tail);
        }
        content.truncate(size.max(1).min(content.len()));
        if uapi::ioc_nr(cmd) == NR_WAIT_EVENTS && content.len() >= 20 {
            // Never an infinite (or long) wait.
            let t = self.rng.below(11) as u32;
            content[16..20].copy_from_slice(&t.to_ne_bytes());
        }
        let arg = if size == 0 && self.rng.chance(1, 2) {
            fuzz::place(&mut self.rng, PtrKind::Null, ARG, &[])
        } else {
            fuzz::place(&mut self.rng, kind, ARG, &content)
        };
        let fd = self.pick_fd();
        let c = Call { mode, fd, cmd, kind, arg, content };
        let r = self.exec(&c);
        if r.is_ok() {
            self.absorb(&c);
        }
        (r, c)
    }

    /// Learns from a successful call what the driver created or destroyed.
    fn absorb(&mut self, c: &Call) {
        let size = uapi::ioc_size(c.cmd) as usize;
        let readable = matches!(c.kind, PtrKind::Good | PtrKind::Misaligned | PtrKind::NearEnd | PtrKind::Straddle);
        let out = |off: usize, len: usize| -> Option<Vec<u8>> {
            (readable && off + len <= size).then(|| fuzz::peek(c.arg as usize + off, len))
        };
        let input = |off: usize| -> u64 { read_u64(&c.content, off) };
        match c.nr() {
            0x02 => {
                if let Some(b) = out(offset_of!(uapi::kfd_ioctl_create_queue_args, queue_id), 4) {
                    push_bounded(&mut self.queues, read_u32(&b, 0));
                }
            }
            0x03 => {
                let q = input(0) as u32;
                self.queues.retain(|&x| x != q);
            }
            0x08 => {
                if let Some(b) = out(offset_of!(uapi::kfd_ioctl_create_event_args, event_id), 4) {
                    push_bounded(&mut self.events, read_u32(&b, 0));
                }
            }
            0x09 => {
                let e = input(0) as u32;
                if let Some(i) = self.events.iter().position(|&x| x == e) {
                    self.events.swap_remove(i);
                    push_bounded(&mut self.freed_events, e);
                }
            }
            0x16 | 0x1d => {
                let off = if c.nr() == 0x16 {
                    offset_of!(uapi::kfd_ioctl_alloc_memory_of_gpu_args, handle)
                } else {
                    offset_of!(uapi::kfd_ioctl_import_dmabuf_args, handle)
                };
                if let Some(b) = out(off, 8) {
                    let h = read_u64(&b, 0);
                    self.freed_handles.retain(|&x| x != h);
                    push_bounded(&mut self.handles, h);
                }
            }
            0x17 => {
                let h = if size >= 8 { input(0) } else { input(0) & ((1u64 << (8 * size)) - 1) };
                if let Some(i) = self.handles.iter().position(|&x| x == h) {
                    self.handles.swap_remove(i);
                    push_bounded(&mut self.freed_handles, h);
                }
            }
            0x1f => {
                if let Some(b) = out(offset_of!(uapi::kfd_ioctl_smi_events_args, anon_fd), 4) {
                    let fd = read_u32(&b, 0) as i32;
                    if !self.known_fds().contains(&fd) && fd > 2 {
                        self.poke_smi(fd);
                        fuzz::close(fd);
                    }
                }
            }
            0x24 => {
                if let Some(b) = out(offset_of!(uapi::kfd_ioctl_export_dmabuf_args, dmabuf_fd), 4) {
                    let fd = read_u32(&b, 0) as i32;
                    if fd > 2 && !self.known_fds().contains(&fd) {
                        self.dmabufs.push(fd);
                        if self.dmabufs.len() > 8 {
                            fuzz::close(self.dmabufs.remove(0));
                        }
                    }
                }
            }
            0x27 => {
                // This fd now has a fresh (secondary) context: all is stale.
                self.forget_all();
            }
            _ => {}
        }
    }

    fn forget_all(&mut self) {
        self.signal_page = None;
        let hs = std::mem::take(&mut self.handles);
        for h in hs {
            push_bounded(&mut self.freed_handles, h);
        }
        let es = std::mem::take(&mut self.events);
        for e in es {
            push_bounded(&mut self.freed_events, e);
        }
        self.queues.clear();
        // The old process's queue memory: only the CPU mappings are ours.
        for (_, q) in std::mem::take(&mut self.qmem) {
            q.forget();
        }
    }

    /// One raw call.
    fn raw(&mut self) {
        let nr = match self.rng.weighted(&[80, 8, 12]) {
            0 => self.rng.range(1, 40) as u32,
            1 => *self.rng.pick(&[0u32, 0x29, 0x2a, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0xff]),
            _ => self.rng.below(256) as u32,
        };
        if !self.allowed(nr) {
            return;
        }
        let table = uapi::ioctl_by_nr(nr).map(|d| d.cmd);
        let ksize = table.map_or(8, uapi::ioc_size) as u64;
        let dir = match table {
            Some(c) if self.rng.chance(7, 10) => uapi::ioc_dir(c),
            _ => self.rng.below(4) as u32,
        };
        let ty = if self.rng.chance(19, 20) { K } else { self.rng.below(256) as u32 };
        let size = match self.rng.weighted(&[30, 15, 10, 15, 10, 20]) {
            0 => ksize,
            1 => self.rng.below(ksize + 1),
            2 => 0,
            3 => ksize + self.rng.range(1, 256),
            4 => u64::from(uapi::IOC_SIZEMASK),
            _ => self.rng.below(u64::from(uapi::IOC_SIZEMASK) + 1),
        } as u32;
        let cmd = uapi::ioc(dir, ty, nr, size);
        let content = fuzz::raw_bytes(&mut self.rng, size as usize);
        let _ = self.issue("raw", cmd, content, 40);
    }

    /// One structured call of ioctl `nr`.
    fn structured(&mut self, nr: u32) {
        use uapi::*;
        let content: Vec<u8> = match nr {
            0x01 => bytes_of(&kfd_ioctl_get_version_args::default()),
            0x02 => {
                let ring = self.sub_ptr(0, &[0u8; 64]);
                let a = kfd_ioctl_create_queue_args {
                    ring_base_address: if self.rng.chance(1, 2) { ring } else { self.va(4096) },
                    write_pointer_address: self.sub_ptr(1, &[0u8; 8]),
                    read_pointer_address: self.sub_ptr(2, &[0u8; 8]),
                    doorbell_offset: fuzz::interesting_u64(&mut self.rng),
                    ring_size: *self.rng.pick(&[0u32, 4, 1023, 1024, 4096, 0x1_0000, 0x8000_0000, 0xffff_ffff]),
                    gpu_id: self.gpu_id(),
                    queue_type: if self.rng.chance(3, 4) { self.rng.below(6) as u32 } else { self.rng.u32() },
                    queue_percentage: *self.rng.pick(&[0u32, 1, 50, 100, 101, 0x164, 0xffff_ffff]),
                    queue_priority: *self.rng.pick(&[0u32, 7, 15, 16, 0xffff_ffff]),
                    queue_id: 0,
                    eop_buffer_address: self.va(4096),
                    eop_buffer_size: fuzz::interesting_u64(&mut self.rng),
                    ctx_save_restore_address: self.va(4096),
                    ctx_save_restore_size: fuzz::interesting_u32(&mut self.rng),
                    ctl_stack_size: fuzz::interesting_u32(&mut self.rng),
                    sdma_engine_id: self.rng.below(20) as u32,
                    metadata_ring_size: fuzz::interesting_u32(&mut self.rng),
                };
                bytes_of(&a)
            }
            0x03 => bytes_of(&kfd_ioctl_destroy_queue_args { queue_id: self.queue_id(), pad: 0 }),
            0x04 => {
                let a = kfd_ioctl_set_memory_policy_args {
                    alternate_aperture_base: fuzz::interesting_u64(&mut self.rng),
                    alternate_aperture_size: fuzz::interesting_u64(&mut self.rng),
                    gpu_id: self.gpu_id(),
                    default_policy: *self.rng.pick(&[0u32, 1, 2, 0xffff_ffff]),
                    alternate_policy: *self.rng.pick(&[0u32, 1, 2, 0xffff_ffff]),
                    misc_process_flag: *self.rng.pick(&[0u32, 1, 2, 0xffff_ffff]),
                };
                bytes_of(&a)
            }
            0x05 => {
                let a = kfd_ioctl_get_clock_counters_args { gpu_id: self.gpu_id(), ..Default::default() };
                bytes_of(&a)
            }
            0x06 => {
                let mut a = kfd_ioctl_get_process_apertures_args::default();
                a.num_of_nodes = fuzz::interesting_u32(&mut self.rng);
                bytes_of(&a)
            }
            0x07 => {
                let a = kfd_ioctl_update_queue_args {
                    ring_base_address: self.va(4096),
                    queue_id: self.queue_id(),
                    ring_size: *self.rng.pick(&[0u32, 1023, 1024, 4096, 0xffff_ffff]),
                    queue_percentage: *self.rng.pick(&[0u32, 100, 101, 0xff64, 0xffff_ffff]),
                    queue_priority: *self.rng.pick(&[0u32, 15, 16, 0xffff_ffff]),
                };
                bytes_of(&a)
            }
            0x08 => {
                let page = if self.rng.chance(3, 4) { 0 } else { self.handle() };
                let a = kfd_ioctl_create_event_args {
                    event_page_offset: page,
                    event_trigger_data: fuzz::interesting_u32(&mut self.rng),
                    event_type: if self.rng.chance(3, 4) { self.rng.below(10) as u32 } else { self.rng.u32() },
                    auto_reset: *self.rng.pick(&[0u32, 1, 2, 0xffff_ffff]),
                    node_id: if self.rng.chance(1, 2) { self.rng.below(4) as u32 } else { self.rng.u32() },
                    event_id: 0,
                    event_slot_index: 0,
                };
                bytes_of(&a)
            }
            0x09..=0x0b => bytes_of(&kfd_ioctl_set_event_args { event_id: self.event_id(), pad: 0 }),
            0x0c => {
                let n = fuzz::count(&mut self.rng, 8);
                let real = (n as usize).min(64);
                let mut ev = Vec::with_capacity(real * size_of::<kfd_event_data>());
                for _ in 0..real {
                    let mut d = kfd_event_data { event_id: self.event_id(), ..Default::default() };
                    d.kfd_event_data_ext = if self.rng.chance(1, 4) { fuzz::interesting_u64(&mut self.rng) } else { 0 };
                    ev.extend_from_slice(&bytes_of(&d));
                }
                let a = kfd_ioctl_wait_events_args {
                    events_ptr: self.sub_ptr(0, &ev),
                    num_events: n,
                    wait_for_all: *self.rng.pick(&[0u32, 1, 2, 0xffff_ffff]),
                    timeout: 0,
                    wait_result: 0,
                };
                bytes_of(&a)
            }
            0x0d | 0x0e => bytes_of(&kfd_ioctl_dbg_register_args { gpu_id: self.gpu_id(), pad: 0 }),
            0x0f | 0x10 => {
                let n = fuzz::count(&mut self.rng, 256);
                let buf = fuzz::raw_bytes(&mut self.rng, (n as usize).min(4096));
                let a = kfd_ioctl_dbg_address_watch_args {
                    content_ptr: self.sub_ptr(0, &buf),
                    gpu_id: self.gpu_id(),
                    buf_size_in_bytes: n,
                };
                bytes_of(&a)
            }
            0x11 => bytes_of(&kfd_ioctl_set_scratch_backing_va_args { va_addr: self.va(4096), gpu_id: self.gpu_id(), pad: 0 }),
            0x12 => {
                let (n1, n2) = (fuzz::count(&mut self.rng, 64), fuzz::count(&mut self.rng, 64));
                let a = kfd_ioctl_get_tile_config_args {
                    tile_config_ptr: self.out_ptr(0, n1 as usize * 4),
                    macro_tile_config_ptr: self.out_ptr(1, n2 as usize * 4),
                    num_tile_configs: n1,
                    num_macro_tile_configs: n2,
                    gpu_id: self.gpu_id(),
                    ..Default::default()
                };
                bytes_of(&a)
            }
            0x13 => {
                let a = kfd_ioctl_set_trap_handler_args {
                    tba_addr: self.va(4096),
                    tma_addr: self.va(4096),
                    gpu_id: self.gpu_id(),
                    pad: 0,
                };
                bytes_of(&a)
            }
            0x14 => {
                let n = match self.rng.below(4) {
                    0 => 0,
                    1 => self.gpus.len() as u32,
                    2 => self.gpus.len() as u32 + 1,
                    _ => fuzz::count(&mut self.rng, 8),
                };
                let len = (n as usize).min(256) * size_of::<kfd_process_device_apertures>();
                let a = kfd_ioctl_get_process_apertures_new_args {
                    kfd_process_device_apertures_ptr: self.out_ptr(0, len),
                    num_of_nodes: n,
                    pad: 0,
                };
                bytes_of(&a)
            }
            0x15 => bytes_of(&kfd_ioctl_acquire_vm_args { drm_fd: self.some_fd(), gpu_id: self.gpu_id() }),
            0x16 => {
                let flags = self.alloc_flags();
                let size = self.mem_size();
                let user = if flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR != 0 && self.rng.chance(3, 4) {
                    let pages = (fuzz::USERMEM_SIZE / fuzz::PAGE) as u64;
                    fuzz::USERMEM as u64 + self.rng.below(pages) * fuzz::PAGE as u64
                } else {
                    let k = fuzz::pick_kind(&mut self.rng, 5);
                    fuzz::place_addr_only(&mut self.rng, k)
                };
                let a = kfd_ioctl_alloc_memory_of_gpu_args {
                    va_addr: self.va(size),
                    size,
                    handle: 0,
                    mmap_offset: user,
                    gpu_id: self.gpu_id(),
                    flags,
                };
                bytes_of(&a)
            }
            0x17 => bytes_of(&kfd_ioctl_free_memory_of_gpu_args { handle: self.handle() }),
            0x18 | 0x19 => {
                let n = fuzz::count(&mut self.rng, 3);
                let real = (n as usize).min(1024);
                let ids = self.gpu_array(real);
                let a = kfd_ioctl_map_memory_to_gpu_args {
                    handle: self.handle(),
                    device_ids_array_ptr: self.sub_ptr(0, &ids),
                    n_devices: n,
                    n_success: match self.rng.below(6) {
                        0 => n,
                        1 => n.wrapping_add(1),
                        2 => fuzz::interesting_u32(&mut self.rng),
                        _ => 0,
                    },
                };
                bytes_of(&a)
            }
            0x1a => {
                let n = *self.rng.pick(&[0u32, 1, 31, 32, 64, 1024, 1056, 2048, 0x8000_0000, 0xffff_ffe0]);
                let mask = fuzz::raw_bytes(&mut self.rng, (n as usize / 8).min(1024));
                let a = kfd_ioctl_set_cu_mask_args { queue_id: self.queue_id(), num_cu_mask: n, cu_mask_ptr: self.sub_ptr(0, &mask) };
                bytes_of(&a)
            }
            0x1b => {
                let a = kfd_ioctl_get_queue_wave_state_args {
                    ctl_stack_address: self.out_ptr(0, 4096),
                    queue_id: self.queue_id(),
                    ..Default::default()
                };
                bytes_of(&a)
            }
            0x1c => {
                let n = fuzz::count(&mut self.rng, 64);
                let a = kfd_ioctl_get_dmabuf_info_args {
                    metadata_ptr: self.out_ptr(0, n as usize),
                    metadata_size: n,
                    dmabuf_fd: self.some_fd(),
                    ..Default::default()
                };
                bytes_of(&a)
            }
            0x1d => {
                let a = kfd_ioctl_import_dmabuf_args {
                    va_addr: self.va(1 << 16),
                    handle: 0,
                    gpu_id: self.gpu_id(),
                    dmabuf_fd: self.some_fd(),
                };
                bytes_of(&a)
            }
            0x1e => {
                let a = kfd_ioctl_alloc_queue_gws_args {
                    queue_id: self.queue_id(),
                    num_gws: fuzz::interesting_u32(&mut self.rng),
                    first_gws: fuzz::interesting_u32(&mut self.rng),
                    pad: 0,
                };
                bytes_of(&a)
            }
            0x1f => bytes_of(&kfd_ioctl_smi_events_args { gpuid: self.gpu_id(), anon_fd: 0 }),
            0x20 => return self.svm_call(),
            0x21 => bytes_of(&kfd_ioctl_set_xnack_mode_args { xnack_enabled: *self.rng.pick(&[-1i32, 0, 1, 2, i32::MIN, i32::MAX]) }),
            0x22 => {
                let (nd, nb) = (fuzz::count(&mut self.rng, 4), fuzz::count(&mut self.rng, 4));
                let psize = u64::from(fuzz::count(&mut self.rng, 256));
                let a = kfd_ioctl_criu_args {
                    devices: self.out_ptr(0, (nd as usize).min(256) * size_of::<kfd_criu_device_bucket>()),
                    bos: self.out_ptr(1, (nb as usize).min(256) * size_of::<kfd_criu_bo_bucket>()),
                    priv_data: self.out_ptr(2, psize as usize),
                    priv_data_size: if self.rng.chance(1, 4) { fuzz::interesting_u64(&mut self.rng) } else { psize },
                    num_devices: nd,
                    num_bos: nb,
                    num_objects: fuzz::count(&mut self.rng, 4),
                    pid: self.some_pid(),
                    op: if self.rng.chance(4, 5) { self.rng.below(6) as u32 } else { self.rng.u32() },
                };
                bytes_of(&a)
            }
            0x23 => bytes_of(&kfd_ioctl_get_available_memory_args { gpu_id: self.gpu_id(), ..Default::default() }),
            0x24 => {
                let flags = *self.rng.pick(&[0u32, libc::O_CLOEXEC as u32, (libc::O_RDWR | libc::O_CLOEXEC) as u32, 0xffff_ffff]);
                bytes_of(&kfd_ioctl_export_dmabuf_args { handle: self.handle(), flags, dmabuf_fd: 0 })
            }
            0x25 => {
                let a = kfd_ioctl_runtime_enable_args {
                    r_debug: self.out_ptr(0, 64),
                    mode_mask: if self.rng.chance(3, 4) { self.rng.below(4) as u32 } else { self.rng.u32() },
                    capabilities_mask: fuzz::interesting_u32(&mut self.rng),
                };
                bytes_of(&a)
            }
            0x26 => self.dbg_trap_args(),
            0x27 => Vec::new(),
            0x28 => {
                let mut a = kfd_ioctl_profiler_args { op: *self.rng.pick(&[0u32, 1, 2, 3, 4, 0xffff_ffff]), ..Default::default() };
                a.__bindgen_anon_1.pmc = kfd_ioctl_pmc_settings {
                    gpu_id: self.gpu_id(),
                    lock: *self.rng.pick(&[0u32, 1, 2, 0xffff_ffff]),
                    perfcount_enable: *self.rng.pick(&[0u32, 1, 0xffff_ffff]),
                };
                bytes_of(&a)
            }
            _ => fuzz::raw_bytes(&mut self.rng, 16),
        };
        let size = uapi::ioctl_by_nr(nr).map_or(content.len(), |d| uapi::ioc_size(d.cmd) as usize);
        let cmd = self.struct_cmd(nr, size);
        let _ = self.issue("struct", cmd, content, 80);
    }

    fn some_pid(&mut self) -> u32 {
        match self.rng.below(6) {
            0..=2 => std::process::id(),
            3 => 0,
            4 => 1,
            _ => fuzz::interesting_u32(&mut self.rng),
        }
    }

    fn dbg_trap_args(&mut self) -> Vec<u8> {
        use uapi::*;
        let op = if self.rng.chance(9, 10) { self.rng.below(16) as u32 } else { self.rng.u32() };
        let mut a = kfd_ioctl_dbg_trap_args { pid: self.some_pid(), op, ..Default::default() };
        let n = fuzz::count(&mut self.rng, 8);
        let m = fuzz::interesting_u64(&mut self.rng);
        let u = &mut a.__bindgen_anon_1;
        match op {
            0 => {
                u.enable = kfd_ioctl_dbg_trap_enable_args {
                    exception_mask: m,
                    rinfo_ptr: self.out_ptr(0, 64),
                    rinfo_size: *self.rng.pick(&[0u32, 8, 16, 17, 4096, 0xffff_ffff]),
                    dbg_fd: self.some_fd(),
                }
            }
            6 => {
                let ids = fuzz::raw_bytes(&mut self.rng, (n as usize).min(1024) * 4);
                u.suspend_queues = kfd_ioctl_dbg_trap_suspend_queues_args {
                    exception_mask: m,
                    queue_array_ptr: self.sub_ptr(0, &ids),
                    num_queues: n,
                    grace_period: self.rng.below(100) as u32,
                }
            }
            7 => {
                let ids = fuzz::raw_bytes(&mut self.rng, (n as usize).min(1024) * 4);
                u.resume_queues = kfd_ioctl_dbg_trap_resume_queues_args { queue_array_ptr: self.sub_ptr(0, &ids), num_queues: n, pad: 0 }
            }
            8 => {
                u.set_node_address_watch = kfd_ioctl_dbg_trap_set_node_address_watch_args {
                    address: fuzz::interesting_u64(&mut self.rng),
                    mode: self.rng.below(5) as u32,
                    mask: fuzz::interesting_u32(&mut self.rng),
                    gpu_id: self.gpu_id(),
                    id: *self.rng.pick(&[0u32, 3, 4, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff]),
                }
            }
            9 => {
                u.clear_node_address_watch = kfd_ioctl_dbg_trap_clear_node_address_watch_args {
                    gpu_id: self.gpu_id(),
                    id: *self.rng.pick(&[0u32, 3, 4, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff]),
                }
            }
            12 => {
                u.query_exception_info = kfd_ioctl_dbg_trap_query_exception_info_args {
                    info_ptr: self.out_ptr(0, (n as usize).min(4096)),
                    info_size: n,
                    source_id: self.gpu_id(),
                    exception_code: self.rng.below(64) as u32,
                    clear_exception: self.rng.below(2) as u32,
                }
            }
            13 => {
                u.queue_snapshot = kfd_ioctl_dbg_trap_queue_snapshot_args {
                    exception_mask: m,
                    snapshot_buf_ptr: self.out_ptr(0, (n as usize).min(256) * 64),
                    num_queues: n,
                    entry_size: *self.rng.pick(&[0u32, 32, 64, 65, 0xffff_ffff]),
                }
            }
            14 => {
                u.device_snapshot = kfd_ioctl_dbg_trap_device_snapshot_args {
                    exception_mask: m,
                    snapshot_buf_ptr: self.out_ptr(0, (n as usize).min(256) * 128),
                    num_devices: n,
                    entry_size: *self.rng.pick(&[0u32, 64, 128, 129, 0xffff_ffff]),
                }
            }
            _ => {
                u.send_runtime_event = kfd_ioctl_dbg_trap_send_runtime_event_args {
                    exception_mask: m,
                    gpu_id: self.gpu_id(),
                    queue_id: self.queue_id(),
                }
            }
        }
        bytes_of(&a)
    }

    /// AMDKFD_IOC_SVM: header plus `nattr` attributes inline, the size field
    /// grown to match (or not).
    fn svm_call(&mut self) {
        use uapi::*;
        let nattr = match self.rng.below(8) {
            0 => 0,
            1 => fuzz::interesting_u32(&mut self.rng),
            _ => self.rng.range(1, 8) as u32,
        };
        let real = (nattr as usize).min(2040);
        let start = match self.rng.below(7) {
            0..=2 => fuzz::USERMEM as u64 + self.rng.below(256) * fuzz::PAGE as u64,
            3 => fuzz::interesting_u64(&mut self.rng),
            // Unaligned start inside our memory.
            4 => fuzz::USERMEM as u64 + self.rng.below(256) * fuzz::PAGE as u64 + self.rng.range(1, fuzz::PAGE as u64 - 1),
            _ => {
                let k = fuzz::pick_kind(&mut self.rng, 2);
                fuzz::place_addr_only(&mut self.rng, k)
            }
        };
        let size = match self.rng.below(6) {
            0..=2 => self.rng.range(1, 64) * fuzz::PAGE as u64,
            // Unaligned size.
            3 => self.rng.range(1, 64) * fuzz::PAGE as u64 + self.rng.range(1, fuzz::PAGE as u64 - 1),
            _ => fuzz::interesting_u64(&mut self.rng),
        };
        let mut content = Vec::new();
        content.extend_from_slice(&start.to_ne_bytes());
        content.extend_from_slice(&size.to_ne_bytes());
        let op = if self.rng.chance(9, 10) { self.rng.below(2) as u32 } else { self.rng.u32() };
        content.extend_from_slice(&op.to_ne_bytes());
        content.extend_from_slice(&nattr.to_ne_bytes());
        for _ in 0..real.min(64) {
            let ty = if self.rng.chance(9, 10) { self.rng.below(9) as u32 } else { self.rng.u32() };
            let value = match ty {
                0 | 1 | 2 | 3 | 4 => {
                    if self.rng.chance(1, 3) {
                        *self.rng.pick(&[KFD_IOCTL_SVM_LOCATION_SYSMEM, KFD_IOCTL_SVM_LOCATION_UNDEFINED])
                    } else {
                        self.gpu_id()
                    }
                }
                7 => *self.rng.pick(&[0u32, 9, 0x1b, 0x1c, 0xff, 0xffff_ffff]),
                _ => fuzz::interesting_u32(&mut self.rng),
            };
            content.extend_from_slice(&ty.to_ne_bytes());
            content.extend_from_slice(&value.to_ne_bytes());
        }
        let size_field = match self.rng.below(6) {
            0 => 24 + 8 * self.rng.below(64) as u32,
            1 => uapi::IOC_SIZEMASK,
            _ => (24 + 8 * real.min(64) as u32).min(uapi::IOC_SIZEMASK),
        };
        let cmd = uapi::ioc(uapi::IOC_READ | uapi::IOC_WRITE, K, 0x20, size_field);
        let _ = self.issue("struct", cmd, content, 80);
    }

    // -- chains ------------------------------------------------------------

    /// A typed call with a good pointer; returns the result and the bytes
    /// the kernel wrote back.
    fn call_good<T: Copy>(&mut self, mode: &'static str, cmd: u32, args: &T) -> (Result<i32, i32>, T) {
        let content = bytes_of(args);
        fuzz::poke(ARG, &content);
        let fd = self.pick_fd();
        let c = Call { mode, fd, cmd, kind: PtrKind::Good, arg: ARG as u64, content };
        let r = self.exec(&c);
        if r.is_ok() {
            self.absorb(&c);
        }
        let back = fuzz::peek(ARG, size_of::<T>());
        // SAFETY: T is a plain-old-data UAPI struct of exactly these bytes.
        let out = unsafe { std::ptr::read_unaligned(back.as_ptr() as *const T) };
        (r, out)
    }

    /// A semantic check of a chain: a failure with the driver's answer.
    fn expect(&mut self, cond: bool, what: String) {
        if !cond {
            let idx = self.calls.saturating_sub(1);
            self.fail(idx, format!("chain: {what}"));
            self.passed = self.passed.saturating_sub(1);
        }
    }

    /// Binds `gpu` to its render node; returns whether the VM is acquired.
    fn acquire(&mut self, gpu: u32) -> bool {
        if let Some(&(_, i)) = self.pairing.iter().find(|(g, _)| *g == gpu) {
            let fd = self.renders[i];
            let (r, _) = self.call_good("chain", uapi::AMDKFD_IOC_ACQUIRE_VM, &uapi::kfd_ioctl_acquire_vm_args { drm_fd: fd as u32, gpu_id: gpu });
            return r.is_ok();
        }
        for i in 0..self.renders.len() {
            if !self.budget() {
                return false;
            }
            let fd = self.renders[i];
            let (r, _) = self.call_good("chain", uapi::AMDKFD_IOC_ACQUIRE_VM, &uapi::kfd_ioctl_acquire_vm_args { drm_fd: fd as u32, gpu_id: gpu });
            if r.is_ok() {
                self.pairing.push((gpu, i));
                return true;
            }
        }
        false
    }

    fn map_call(&mut self, map: bool, handle: u64, ids: &[u32]) -> Result<i32, i32> {
        let mut b = Vec::new();
        for id in ids {
            b.extend_from_slice(&id.to_ne_bytes());
        }
        fuzz::poke(SUB[0], &b);
        let a = uapi::kfd_ioctl_map_memory_to_gpu_args {
            handle,
            device_ids_array_ptr: SUB[0] as u64,
            n_devices: ids.len() as u32,
            n_success: 0,
        };
        let cmd = if map { uapi::AMDKFD_IOC_MAP_MEMORY_TO_GPU } else { uapi::AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU };
        self.call_good("chain", cmd, &a).0
    }

    fn free_call(&mut self, handle: u64) -> Result<i32, i32> {
        self.call_good("chain", uapi::AMDKFD_IOC_FREE_MEMORY_OF_GPU, &uapi::kfd_ioctl_free_memory_of_gpu_args { handle }).0
    }

    /// acquire VM → alloc → map → free while mapped → unmap → free → use
    /// after free.  Stops early at random, leaving objects to teardown.
    fn chain_memory(&mut self) {
        use uapi::*;
        let gpu = if self.gpus.is_empty() { self.gpu_id() } else { *self.rng.pick(&self.gpus.clone()) };
        if !self.acquire(gpu) || !self.budget() {
            // Without a GPU (or a VM) the rest still runs, and must fail cleanly.
            if self.gpus.is_empty() && self.budget() {
                let a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: self.va(4096), size: 4096, gpu_id: gpu, flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT, ..Default::default() };
                let (r, _) = self.call_good("chain", AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);
                self.expect(r.is_err(), format!("ALLOC on gpu_id {gpu:#x} without a GPU succeeded"));
            }
            return;
        }
        if self.handles.len() > MAX_LIVE_OBJECTS {
            let h = self.handles[0];
            let _ = self.map_call(false, h, &[(h >> 32) as u32]);
            let _ = self.free_call(h);
        }
        let domain = *self.rng.pick(&[
            KFD_IOC_ALLOC_MEM_FLAGS_GTT,
            KFD_IOC_ALLOC_MEM_FLAGS_GTT,
            KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
            KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
            KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
        ]);
        let pages = *self.rng.pick(&[1u64, 1, 2, 4, 16]);
        let size = pages * fuzz::PAGE as u64;
        let user = fuzz::USERMEM as u64 + self.rng.below(fuzz::USERMEM_SIZE as u64 / 4096 - pages) * 4096;
        let a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: self.va(size),
            size,
            handle: 0,
            mmap_offset: if domain == KFD_IOC_ALLOC_MEM_FLAGS_USERPTR { user } else { 0 },
            gpu_id: gpu,
            flags: domain | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        };
        let (r, out) = self.call_good("chain", AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);
        if r.is_err() || !self.budget() {
            return;
        }
        let h = out.handle;
        let mut ids = vec![gpu];
        if self.rng.chance(1, 4) {
            ids.push(if self.rng.chance(1, 2) { gpu } else { self.other_gpu(gpu) });
        }
        let mapped = self.map_call(true, h, &ids).is_ok();
        if !self.budget() {
            return;
        }
        if mapped {
            let r = self.free_call(h);
            self.expect(r.is_err(), format!("FREE of handle {h:#x} succeeded while it was mapped"));
            if r.is_ok() {
                return;
            }
        }
        if self.rng.chance(1, 5) || !self.budget() {
            return; // left mapped for the teardown
        }
        if mapped {
            let _ = self.map_call(false, h, &ids[..1]);
        }
        if self.rng.chance(1, 6) || !self.budget() {
            return;
        }
        let r = self.free_call(h);
        if r.is_err() || !self.budget() {
            return;
        }
        // Use after free: nothing was allocated since, so the handle is dead.
        match self.rng.below(3) {
            0 => {
                let r = self.free_call(h);
                self.expect(r.is_err(), format!("second FREE of handle {h:#x} succeeded"));
            }
            1 => {
                let r = self.map_call(true, h, &[gpu]);
                self.expect(r.is_err(), format!("MAP of freed handle {h:#x} succeeded"));
            }
            _ => {
                let e = kfd_ioctl_export_dmabuf_args { handle: h, flags: libc::O_CLOEXEC as u32, dmabuf_fd: 0 };
                let (r, out) = self.call_good("chain", AMDKFD_IOC_EXPORT_DMABUF, &e);
                self.expect(r.is_err(), format!("EXPORT_DMABUF of freed handle {h:#x} succeeded (fd {})", out.dmabuf_fd));
            }
        }
    }

    fn wait_call(&mut self, ids: &[u32], all: bool, timeout: u32) -> (Result<i32, i32>, u32) {
        let mut b = Vec::new();
        for &id in ids {
            b.extend_from_slice(&bytes_of(&uapi::kfd_event_data { event_id: id, ..Default::default() }));
        }
        fuzz::poke(SUB[1], &b);
        let a = uapi::kfd_ioctl_wait_events_args {
            events_ptr: SUB[1] as u64,
            num_events: ids.len() as u32,
            wait_for_all: all as u32,
            timeout: timeout.min(10),
            wait_result: 0,
        };
        let (r, out) = self.call_good("chain", uapi::AMDKFD_IOC_WAIT_EVENTS, &a);
        (r, out.wait_result)
    }

    fn event_call(&mut self, cmd: u32, id: u32) -> Result<i32, i32> {
        self.call_good("chain", cmd, &uapi::kfd_ioctl_set_event_args { event_id: id, pad: 0 }).0
    }

    /// The signal page for signal events: a GTT object of at least
    /// `SIGNAL_PAGE_SIZE` registered by the first CREATE_EVENT that names it
    /// (sometimes one too small first, which must be refused).  Returns the
    /// `event_page_offset` to pass: the handle, or 0 once registered.
    fn signal_page_offset(&mut self) -> u64 {
        use uapi::*;
        if self.signal_page.is_some() || self.gpus.is_empty() {
            return 0;
        }
        let gpu = *self.rng.pick(&self.gpus.clone());
        if !self.acquire(gpu) || !self.budget() {
            return 0;
        }
        let small = self.rng.chance(1, 4);
        let size = if small { fuzz::SIGNAL_PAGE_SIZE / 2 } else { fuzz::SIGNAL_PAGE_SIZE };
        let a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: self.va(size),
            size,
            gpu_id: gpu,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            ..Default::default()
        };
        let (r, out) = self.call_good("chain", AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);
        if r.is_err() || !self.budget() {
            return 0;
        }
        if small {
            let e = kfd_ioctl_create_event_args { event_page_offset: out.handle, event_type: KFD_IOC_EVENT_SIGNAL, ..Default::default() };
            let (r, _) = self.call_good("chain", AMDKFD_IOC_CREATE_EVENT, &e);
            self.expect(r.is_err(), format!("CREATE_EVENT registered a {size}-byte signal page (below {})", fuzz::SIGNAL_PAGE_SIZE));
            return 0;
        }
        out.handle
    }

    /// events create → set → wait → reset → wait → destroy → use after destroy.
    fn chain_events(&mut self) {
        use uapi::*;
        let auto = self.rng.chance(1, 2);
        let signal = self.rng.chance(4, 5);
        let page = if signal { self.signal_page_offset() } else { 0 };
        if !self.budget() {
            return;
        }
        let ty = if signal { KFD_IOC_EVENT_SIGNAL } else { *self.rng.pick(&[KFD_IOC_EVENT_NODECHANGE, KFD_IOC_EVENT_HW_EXCEPTION, KFD_IOC_EVENT_MEMORY]) };
        let a = kfd_ioctl_create_event_args { event_page_offset: page, event_type: ty, auto_reset: auto as u32, ..Default::default() };
        let (r, out) = self.call_good("chain", AMDKFD_IOC_CREATE_EVENT, &a);
        if r.is_ok() && page != 0 {
            self.signal_page = Some(page);
            if self.budget() && self.rng.chance(1, 2) {
                let r = self.free_call(page);
                self.expect(r == Err(libc::EPERM), format!("FREE of the registered signal page {page:#x}: {r:?}, want EPERM"));
            }
        }
        if r.is_err() || !self.budget() {
            return;
        }
        if !signal {
            let (r, res) = self.wait_call(&[out.event_id], false, 0);
            // Nothing signals a NODECHANGE event (no hot-plug).  HW_EXCEPTION
            // and MEMORY events are set by this process's queue errors and
            // VM faults (its garbage packets), which arrive by interrupt at
            // any time, also between CREATE_EVENT and this WAIT (seen once
            // in make check: HW_EXCEPTION, call 72664 of seed
            // 0xa79e58a5e6b142dd): either answer is right for them.
            if r.is_ok() && ty == KFD_IOC_EVENT_NODECHANGE {
                self.expect(res == KFD_IOC_WAIT_RESULT_TIMEOUT, format!("WAIT(0) on a fresh type-{ty} event gave wait_result {res}, want TIMEOUT"));
            } else if r.is_ok() {
                self.expect(
                    res == KFD_IOC_WAIT_RESULT_TIMEOUT || res == KFD_IOC_WAIT_RESULT_COMPLETE,
                    format!("WAIT(0) on a fresh type-{ty} event gave wait_result {res}, want TIMEOUT or COMPLETE"),
                );
            }
            if self.budget() {
                let r = self.event_call(AMDKFD_IOC_SET_EVENT, out.event_id);
                self.expect(r.is_err(), format!("SET_EVENT of a type-{ty} (non-signal) event succeeded"));
            }
            if self.budget() && self.rng.chance(3, 4) {
                let _ = self.event_call(AMDKFD_IOC_DESTROY_EVENT, out.event_id);
            }
            return;
        }
        let id = out.event_id;
        let set = self.event_call(AMDKFD_IOC_SET_EVENT, id).is_ok();
        if !self.budget() {
            return;
        }
        let (all, t) = (self.rng.chance(1, 2), self.rng.below(3) as u32);
        let (r, res) = self.wait_call(&[id], all, t);
        if set && r.is_ok() {
            self.expect(res == KFD_IOC_WAIT_RESULT_COMPLETE, format!("WAIT on set event {id} gave wait_result {res}, want COMPLETE"));
        }
        if !self.budget() {
            return;
        }
        let reset = self.event_call(AMDKFD_IOC_RESET_EVENT, id).is_ok();
        if !self.budget() {
            return;
        }
        let (r, res) = self.wait_call(&[id], false, 0);
        if reset && r.is_ok() {
            self.expect(res == KFD_IOC_WAIT_RESULT_TIMEOUT, format!("WAIT(0) on reset event {id} gave wait_result {res}, want TIMEOUT"));
        }
        if self.rng.chance(1, 4) || !self.budget() {
            return; // left for teardown
        }
        if self.event_call(AMDKFD_IOC_DESTROY_EVENT, id).is_err() || !self.budget() {
            return;
        }
        match self.rng.below(3) {
            0 => {
                let r = self.event_call(AMDKFD_IOC_SET_EVENT, id);
                self.expect(r.is_err(), format!("SET of destroyed event {id} succeeded"));
            }
            1 => {
                let (r, res) = self.wait_call(&[id], false, 0);
                self.expect(r.is_err(), format!("WAIT on destroyed event {id} succeeded (wait_result {res})"));
            }
            _ => {
                let r = self.event_call(AMDKFD_IOC_DESTROY_EVENT, id);
                self.expect(r.is_err(), format!("second DESTROY of event {id} succeeded"));
            }
        }
    }

    /// alloc GTT → export dma-buf → info → import at another address → free.
    fn chain_dmabuf(&mut self) {
        use uapi::*;
        let gpu = if self.gpus.is_empty() { self.gpu_id() } else { *self.rng.pick(&self.gpus.clone()) };
        if !self.acquire(gpu) || !self.budget() {
            return;
        }
        let a = kfd_ioctl_alloc_memory_of_gpu_args {
            va_addr: self.va(4096),
            size: 4096,
            gpu_id: gpu,
            flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
            ..Default::default()
        };
        let (r, out) = self.call_good("chain", AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);
        if r.is_err() || !self.budget() {
            return;
        }
        let h = out.handle;
        let e = kfd_ioctl_export_dmabuf_args { handle: h, flags: (libc::O_RDWR | libc::O_CLOEXEC) as u32, dmabuf_fd: 0 };
        let (r, out) = self.call_good("chain", AMDKFD_IOC_EXPORT_DMABUF, &e);
        if r.is_ok() && self.budget() {
            let fd = out.dmabuf_fd;
            let i = kfd_ioctl_get_dmabuf_info_args { metadata_ptr: SUB[2] as u64, metadata_size: 64, dmabuf_fd: fd, ..Default::default() };
            let _ = self.call_good("chain", AMDKFD_IOC_GET_DMABUF_INFO, &i);
            if self.budget() {
                let im = kfd_ioctl_import_dmabuf_args { va_addr: self.va(4096), handle: 0, gpu_id: gpu, dmabuf_fd: fd };
                let (r, out) = self.call_good("chain", AMDKFD_IOC_IMPORT_DMABUF, &im);
                if r.is_ok() && self.budget() {
                    let _ = self.free_call(out.handle);
                }
            }
        }
        if self.budget() {
            let _ = self.free_call(h);
        }
    }

    /// CPU mappings: alloc → mmap through the render node → write → free →
    /// new objects must read as zero (nothing of the old contents leaks) and
    /// the old mapping keeps its contents (its pages were not freed under
    /// it).
    fn chain_cpu_map(&mut self) {
        use uapi::*;
        if self.gpus.is_empty() {
            return;
        }
        let gpu = *self.rng.pick(&self.gpus.clone());
        if !self.acquire(gpu) || !self.budget() {
            return;
        }
        let Some(&(_, ri)) = self.pairing.iter().find(|(g, _)| *g == gpu) else { return };
        let rfd = self.renders[ri];
        let domain = if self.rng.chance(1, 2) { KFD_IOC_ALLOC_MEM_FLAGS_GTT } else { KFD_IOC_ALLOC_MEM_FLAGS_VRAM };
        let flags = domain | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
        let pages = *self.rng.pick(&[1u64, 2, 4, 16]);
        let size = pages * 4096;
        let alloc = |f: &mut Fuzzer| {
            let a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: f.va(size), size, gpu_id: gpu, flags, ..Default::default() };
            let (r, out) = f.call_good("chain", AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);
            r.ok().map(|_| (out.handle, out.mmap_offset))
        };
        let Some((h, off)) = alloc(self) else { return };
        let Ok(old) = fuzz::CpuMap::new(rfd, off, size as usize) else {
            let _ = self.free_call(h);
            return;
        };
        let idx = self.calls.saturating_sub(1);
        if let Some(at) = old.first_nonzero() {
            self.fail(idx, format!("chain: new {size}-byte object {h:#x} reads non-zero at byte {at} (old contents leak)"));
        }
        let tag = self.rng.next();
        old.fill(tag);
        if self.rng.chance(1, 2) && self.budget() {
            let _ = self.map_call(true, h, &[gpu]);
            let _ = self.map_call(false, h, &[gpu]);
        }
        if !self.budget() || self.free_call(h).is_err() {
            return;
        }
        // New objects, of the size the old one had: the likeliest reuse.
        let mut fresh = Vec::new();
        for _ in 0..self.rng.range(1, 3) {
            if !self.budget() {
                break;
            }
            let Some((h2, off2)) = alloc(self) else { break };
            let idx = self.calls.saturating_sub(1);
            if let Ok(m) = fuzz::CpuMap::new(rfd, off2, size as usize) {
                if let Some(at) = m.first_nonzero() {
                    self.fail(idx, format!("chain: object {h2:#x} allocated after freeing {h:#x} reads non-zero at byte {at} (old contents leak)"));
                }
                m.fill(!tag);
                fresh.push((h2, m));
            } else {
                fresh.push((h2, old_dummy()));
            }
        }
        if let Some(i) = old.check(tag) {
            let idx = self.calls.saturating_sub(1);
            self.fail(idx, format!("chain: CPU mapping of freed object {h:#x} changed at byte {} (pages freed under a live mapping?)", i * 8));
        }
        drop(old);
        for (h2, m) in fresh {
            drop(m);
            if self.budget() {
                let _ = self.free_call(h2);
            }
        }
    }

    /// apertures: count, then fill exactly, then a short buffer.
    fn chain_apertures(&mut self) {
        use uapi::*;
        let (r, out) = self.call_good("chain", AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &kfd_ioctl_get_process_apertures_new_args::default());
        if r.is_err() || !self.budget() {
            return;
        }
        let n = out.num_of_nodes;
        let want = n as usize;
        let room = want * size_of::<kfd_process_device_apertures>();
        // The array ends exactly at the end of a region: one record more faults.
        let ptr = (SUB[2] + fuzz::REGION - room) as u64;
        let a = kfd_ioctl_get_process_apertures_new_args { kfd_process_device_apertures_ptr: ptr, num_of_nodes: n, pad: 0 };
        let (r, out) = self.call_good("chain", AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &a);
        if r.is_ok() {
            self.expect(out.num_of_nodes <= n, format!("APERTURES_NEW filled {} records into room for {n}", out.num_of_nodes));
        }
    }

    /// Queues: valid queue memory (allocated and mapped once per GPU and
    /// process), CREATE_QUEUE of an AQL/SDMA/PM4 queue over it with at most
    /// one field mutated, packets (valid barriers, fences, or random bytes)
    /// written to the ring with the write pointer moved and the doorbell
    /// rung, then UPDATE_QUEUE / SET_CU_MASK / GET_QUEUE_WAVE_STATE /
    /// ALLOC_QUEUE_GWS / SET_XNACK_MODE on the live queue id, and DESTROY
    /// (twice, or never: teardown's).
    fn chain_queue(&mut self) {
        use uapi::*;
        if self.gpus.is_empty() {
            return;
        }
        let gpu = *self.rng.pick(&self.gpus);
        if !self.acquire(gpu) {
            return;
        }
        if !self.qmem.iter().any(|(g, _)| *g == gpu) {
            let Some(&(_, ri)) = self.pairing.iter().find(|(g, _)| *g == gpu) else { return };
            let Some(topo) = kfd_tests::ops::topology_gpus().into_iter().find(|t| t.gpu_id == gpu) else { return };
            let va = 0x7000_0000_0000u64 + (u64::from(gpu & 0xff) << 32);
            match kfd_tests::queue::QueueMem::new(self.kfd, self.renders[ri], &topo, va) {
                Ok(q) => self.qmem.push((gpu, q)),
                Err(_) => return,
            }
        }
        let qi = self.qmem.iter().position(|(g, _)| *g == gpu).unwrap();
        let sdma = self.qmem[qi].1.props.sdma_engines > 0 && self.rng.chance(1, 3);
        let mut a = if sdma { self.qmem[qi].1.sdma_args() } else { self.qmem[qi].1.aql_args() };
        if self.rng.chance(1, 6) {
            a.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE;
        }
        if self.rng.chance(1, 2) {
            let v32 = fuzz::interesting_u32(&mut self.rng);
            let d = *self.rng.pick(&[1u64, 4, 8, 4096, 1 << 20, u64::MAX]);
            match self.rng.below(13) {
                0 => a.ring_size = *self.rng.pick(&[0, 64, 128, 1 << 12, 1 << 16, 1 << 20, 3000, v32]),
                1 => a.queue_percentage = v32 % 0x200,
                2 => a.queue_priority = v32 % 32,
                3 => a.ring_base_address = a.ring_base_address.wrapping_add(d),
                4 => a.write_pointer_address = a.write_pointer_address.wrapping_add(d),
                5 => a.read_pointer_address = a.read_pointer_address.wrapping_add(d),
                6 => a.eop_buffer_size = u64::from(v32),
                7 => a.ctx_save_restore_size = v32,
                8 => a.ctl_stack_size = v32,
                9 => {
                    a.queue_type = KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID;
                    a.sdma_engine_id = self.rng.below(20) as u32;
                }
                10 => a.metadata_ring_size = v32,
                11 => a.queue_type = self.rng.below(8) as u32,
                _ => a.ctx_save_restore_address = a.ctx_save_restore_address.wrapping_add(d),
            }
        }
        self.qmem[qi].1.reset(sdma);
        let (r, out) = self.call_good("chain", AMDKFD_IOC_CREATE_QUEUE, &a);
        if r.is_err() {
            return;
        }
        let (qid, db) = (out.queue_id, out.doorbell_offset);
        // Work: valid packets or garbage, the engine must stop the queue
        // cleanly (queue error) on what it cannot run.
        let n = self.rng.range(1, 80);
        let garbage = self.rng.chance(1, 3);
        for i in 0..n {
            let q = &self.qmem[qi].1;
            if garbage {
                let words: [u32; 16] = std::array::from_fn(|_| fuzz::interesting_u32(&mut self.rng));
                q.raw_submit(sdma, i, &words, db);
            } else if sdma {
                q.sdma_submit(i, i as u32, db);
            } else {
                q.aql_submit(i, db);
            }
        }
        for _ in 0..self.rng.range(0, 6) {
            if !self.budget() {
                return;
            }
            match self.rng.below(5) {
                0 => {
                    let q = &self.qmem[qi].1;
                    let ring = if sdma { q.sdma_args().ring_base_address } else { q.va };
                    let u = kfd_ioctl_update_queue_args {
                        ring_base_address: if self.rng.chance(4, 5) { ring } else { self.va(4096) },
                        queue_id: qid,
                        ring_size: *self.rng.pick(&[kfd_tests::queue::RING as u32, 0, 1024, 1 << 20, 0xffff_ffff]),
                        queue_percentage: *self.rng.pick(&[0u32, 50, 100, 101]),
                        queue_priority: self.rng.below(17) as u32,
                    };
                    let _ = self.call_good("chain", AMDKFD_IOC_UPDATE_QUEUE, &u);
                }
                1 => {
                    let mask: Vec<u8> = (0..32).map(|_| self.rng.u32() as u8).collect();
                    let c = kfd_ioctl_set_cu_mask_args {
                        queue_id: qid,
                        num_cu_mask: *self.rng.pick(&[0u32, 1, 32, 64, 96, 128, 0xffff_ffff]),
                        cu_mask_ptr: self.sub_ptr(1, &mask),
                    };
                    let _ = self.call_good("chain", AMDKFD_IOC_SET_CU_MASK, &c);
                }
                2 => {
                    let w = kfd_ioctl_get_queue_wave_state_args {
                        ctl_stack_address: self.out_ptr(2, 4096),
                        queue_id: qid,
                        ..Default::default()
                    };
                    let _ = self.call_good("chain", AMDKFD_IOC_GET_QUEUE_WAVE_STATE, &w);
                }
                3 => {
                    let g = kfd_ioctl_alloc_queue_gws_args { queue_id: qid, num_gws: self.rng.below(3) as u32, ..Default::default() };
                    let _ = self.call_good("chain", AMDKFD_IOC_ALLOC_QUEUE_GWS, &g);
                }
                _ => {
                    let x = kfd_ioctl_set_xnack_mode_args { xnack_enabled: self.rng.below(3) as i32 - 1 };
                    let _ = self.call_good("chain", AMDKFD_IOC_SET_XNACK_MODE, &x);
                }
            }
        }
        for _ in 0..*self.rng.pick(&[0u32, 1, 1, 1, 2]) {
            if !self.budget() {
                return;
            }
            let d = kfd_ioctl_destroy_queue_args { queue_id: qid, pad: 0 };
            let _ = self.call_good("chain", AMDKFD_IOC_DESTROY_QUEUE, &d);
        }
    }

    /// SVM: set attributes on a range of our memory, then read them back.
    fn chain_svm(&mut self) {
        use uapi::*;
        let start = fuzz::USERMEM as u64 + self.rng.below(128) * 4096;
        let size = self.rng.range(1, 64) * 4096;
        let gpu = self.gpu_id();
        let attrs = [
            (KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, gpu),
            (KFD_IOCTL_SVM_ATTR_ACCESS, gpu),
            (KFD_IOCTL_SVM_ATTR_SET_FLAGS, KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT),
            (KFD_IOCTL_SVM_ATTR_GRANULARITY, 9),
        ];
        for op in [KFD_IOCTL_SVM_OP_SET_ATTR, KFD_IOCTL_SVM_OP_GET_ATTR] {
            if !self.budget() {
                return;
            }
            let mut b = Vec::new();
            b.extend_from_slice(&start.to_ne_bytes());
            b.extend_from_slice(&size.to_ne_bytes());
            b.extend_from_slice(&op.to_ne_bytes());
            b.extend_from_slice(&(attrs.len() as u32).to_ne_bytes());
            for (t, v) in attrs {
                b.extend_from_slice(&t.to_ne_bytes());
                b.extend_from_slice(&v.to_ne_bytes());
            }
            fuzz::poke(ARG, &b);
            let fd = self.pick_fd();
            let c = Call { mode: "chain", fd, cmd: amdkfd_ioc_svm(attrs.len() as u32), kind: PtrKind::Good, arg: ARG as u64, content: b };
            if self.exec(&c).is_err() {
                return;
            }
        }
    }

    /// Closes /dev/kfd with whatever is live and opens it again; `both`
    /// also drops the second fd so the process is torn down.
    fn reopen(&mut self, both: bool) {
        self.reopens += 1;
        fuzz::close(self.kfd);
        if both {
            if let Some(f) = self.kfd2.take() {
                fuzz::close(f);
            }
        }
        match Kfd::open() {
            Ok(k) => {
                self.kfd = k.fd;
                std::mem::forget(k);
            }
            Err(e) => {
                println!("fuzz: FATAL cannot reopen /dev/kfd: {e} (seed {:#x}, call {})", self.seed, self.calls);
                self.failed += 1;
                self.stopped_by_time = true;
                return;
            }
        }
        if self.kfd2.is_none() {
            // Fresh process: nothing of the old one is valid any more, and
            // the render-node files are replaced so a VM can be acquired again.
            self.forget_all();
            for fd in std::mem::take(&mut self.renders) {
                fuzz::close(fd);
            }
            let paths = self.render_paths.clone();
            self.renders = paths.iter().filter_map(|p| ops::open_rw(p).ok()).collect();
            self.pairing.retain(|&(_, i)| i < self.renders.len());
            for fd in std::mem::take(&mut self.dmabufs) {
                fuzz::close(fd);
            }
            if self.rng.chance(1, 3) {
                if let Ok(k) = Kfd::open() {
                    self.kfd2 = Some(k.fd);
                    std::mem::forget(k);
                }
            }
        }
    }

    fn chain(&mut self) {
        match self.rng.weighted(&[40, 25, 10, 8, 10, 2, 5, 6, 6]) {
            8 => self.chain_queue(),
            7 => self.chain_cpu_map(),
            0 => self.chain_memory(),
            1 => self.chain_events(),
            2 => self.chain_dmabuf(),
            3 => self.chain_apertures(),
            4 => self.chain_svm(),
            5 => {
                let both = self.rng.chance(3, 4);
                self.reopen(both);
            }
            _ => {
                // A burst of one structured ioctl: repeated state changes.
                let nr = self.rng.range(1, 40) as u32;
                for _ in 0..self.rng.range(2, 16) {
                    if !self.budget() || !self.allowed(nr) {
                        break;
                    }
                    self.structured(nr);
                }
            }
        }
    }

    fn step(&mut self) {
        match self.rng.weighted(&[30, 55, 15]) {
            0 => self.raw(),
            1 => {
                let nr = self.rng.range(1, 40) as u32;
                if self.allowed(nr) {
                    self.structured(nr);
                }
            }
            _ => {
                if self.only.is_none() {
                    self.chain();
                }
            }
        }
    }
}

/// A placeholder for an object we could not map.
fn old_dummy() -> fuzz::CpuMap {
    fuzz::CpuMap { addr: 0, len: 0 }
}

fn push_bounded<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
        if v.len() > MAX_POOL {
            v.remove(0);
        }
    }
}

fn main() {
    let args = fuzz::Args::from_env();
    if args.flag("-h") || args.flag("--help") {
        println!("usage: kfd-fuzz [--seed S] [--calls N] [--time SECS] [--trace] [--trace-from I] [--only NR,..] [--kmsg-every N] [--watchdog SECS] [--quiet]");
        return;
    }
    let seed = args.u64("--seed", fuzz::random_seed());
    let max_calls = args.u64("--calls", 100_000);
    let time = args.u64("--time", 600);
    let kmsg_every = args.u64("--kmsg-every", 256).max(1);
    let watchdog_secs = args.u64("--watchdog", 60);
    let trace_from = if args.flag("--trace") { Some(0) } else { args.value("--trace-from").and_then(fuzz::parse_u64) };
    let only = args.value("--only").map(|s| s.split(',').filter_map(fuzz::parse_u64).map(|x| x as u32).collect::<Vec<_>>());

    // The seed first, before anything can crash.
    println!("fuzz: seed={seed:#x} calls={max_calls} time={time}s");
    fuzz::flush();
    let mut kmsg = fuzz::KmsgWatch::open();
    kmsg.mark(&format!("<7>kfd-fuzz: seed={seed:#x} calls={max_calls} start\n"));

    if watchdog_secs > 0 {
        watchdog(seed, watchdog_secs);
    }
    let mut h = Harness::default();
    if let Err(e) = fuzz::map_zone() {
        h.record("the fuzz zone maps", Err(e));
        std::process::exit(h.finish("fuzz"));
    }
    let k = match Kfd::open() {
        Ok(k) => k,
        Err(e) => {
            h.record("/dev/kfd opens", Err(e.to_string()));
            std::process::exit(h.finish("fuzz"));
        }
    };
    let gpus = fuzz::discover_gpus(&k);
    println!("fuzz: gpus={:?} render_nodes={:?}", gpus.ids, gpus.render_nodes);
    let renders: Vec<i32> = gpus.render_nodes.iter().filter_map(|p| ops::open_rw(p).ok()).collect();
    let kfd = k.fd;
    std::mem::forget(k);

    let mut keep_fds = fuzz::open_fds();
    keep_fds.retain(|fd| *fd != kfd && !renders.contains(fd));
    let kmsg_fd = kmsg.fd();
    if !keep_fds.contains(&kmsg_fd) && kmsg_fd >= 0 {
        keep_fds.push(kmsg_fd);
    }

    let start = Instant::now();
    let mut f = Fuzzer {
        rng: Rng::new(seed),
        seed,
        max_calls,
        deadline: (time > 0).then(|| start + Duration::from_secs(time)),
        only,
        trace_from,
        quiet: args.flag("--quiet"),
        kmsg_every,
        kfd,
        kfd2: None,
        gpus: gpus.ids,
        render_paths: gpus.render_nodes,
        renders,
        pairing: Vec::new(),
        handles: Vec::new(),
        freed_handles: Vec::new(),
        events: Vec::new(),
        freed_events: Vec::new(),
        queues: Vec::new(),
        qmem: Vec::new(),
        dmabufs: Vec::new(),
        signal_page: None,
        next_va: 0x1_0000_0000,
        calls: 0,
        passed: 0,
        failed: 0,
        kmsg_failed: 0,
        stats: vec![Stat::default(); 256],
        kmsg,
        kmsg_from: 0,
        keep_fds,
        reopens: 0,
        stopped_by_time: false,
    };
    // The writer of /dev/kmsg is an fd too; keep everything open now.
    f.keep_fds = fuzz::open_fds();
    f.keep_fds.retain(|fd| *fd != f.kfd && !f.renders.contains(fd));

    while f.budget() {
        f.step();
    }
    f.check_kmsg();
    let secs = start.elapsed().as_secs_f64();

    if !f.quiet {
        println!("# per ioctl: calls, successes, errnos");
        for (nr, s) in f.stats.iter().enumerate() {
            if s.calls == 0 || (uapi::ioctl_by_nr(nr as u32).is_none() && s.ok == 0) {
                continue;
            }
            let mut e = s.errnos.clone();
            e.sort_by(|a, b| b.1.cmp(&a.1));
            let errs: Vec<String> = e.iter().take(5).map(|(x, n)| format!("{}={n}", fuzz::errno_str(*x))).collect();
            println!("#   {nr:#04x} {:<28} {:>6} calls {:>6} ok  {}", name_of(nr as u32), s.calls, s.ok, errs.join(" "));
        }
        let unknown: u64 = f.stats.iter().enumerate().filter(|(nr, _)| uapi::ioctl_by_nr(*nr as u32).is_none()).map(|(_, s)| s.calls).sum();
        println!("#   unknown numbers: {unknown} calls");
    }
    if f.stopped_by_time && f.calls < f.max_calls {
        println!("fuzz: time limit reached after {} of {} calls", f.calls, f.max_calls);
    }
    println!(
        "fuzz: seed={seed:#x} {} calls in {secs:.1} s ({:.0}/s), {} reopens, gpus {}",
        f.calls,
        f.calls as f64 / secs.max(1e-9),
        f.reopens,
        f.gpus.len()
    );
    f.kmsg.mark(&format!("<7>kfd-fuzz: seed={seed:#x} done after {} calls, {} failed\n", f.calls, f.failed));
    let call_failures = f.failed - f.kmsg_failed;
    h.record(
        CASE_CALLS,
        if call_failures > 0 {
            Err(format!("{call_failures} failures (the FAIL lines above)"))
        } else if f.passed == 0 {
            Err("no call passed".into())
        } else {
            Ok(())
        },
    );
    h.record(
        "no kernel report on /dev/kmsg during the calls",
        if f.kmsg_failed == 0 { Ok(()) } else { Err(format!("{} report(s) (the FAIL lines above)", f.kmsg_failed)) },
    );
    h.detail(format!("{} calls", f.calls));
    h.detail(format!("{} failures", f.failed));
    std::process::exit(h.finish("fuzz"));
}
