// SPDX-License-Identifier: GPL-2.0
//! Queue benchmark through the raw KFD ioctls (`make bench-queues` runs it
//! in the test VM after the ROCr one): what ROCr cannot drive (PM4 queues)
//! and what the packet engines cost.  Prints figures only; asserts nothing
//! about time (a wait that never ends, 60 s, is reported as a hang):
//!
//!  1. PM4 `WRITE_DATA` packets/s, one queue and four queues at once, from
//!     the doorbells to the last packet done (the packets written before),
//!     and with the producer's writing counted;
//!  2. the issue #16 round: four PM4 queues, each 1024 `WRITE_DATA` and a
//!     `RELEASE_MEM` with an interrupt, created, run and destroyed: rounds/s
//!     and what 1024 rounds take; the same with four SDMA queues, each 1024
//!     `FENCE` packets and a `TRAP`;
//!  3. queue create + destroy per second (PM4 and SDMA);
//!  4. events/s with one interrupt per packet (`RELEASE_MEM` raising a
//!     signal event each);
//!  5. doorbell-to-first-packet latency after the engine idled 0, 1, 10,
//!     100, 1500 ms (past the engines' 1 s of short polls; a `WRITE_DATA`
//!     packet, the doorbell, spin on its data),
//!     against a user thread that polls memory every 20 us in the same
//!     guest (what any sleeping poller achieves there);
//!  6. SDMA copy GB/s GTT -> VRAM, one queue and four queues at once.
//!
//! After each section, with the virtual GPU's modules, how many doorbell
//! pages its idle engine workers armed and how many doorbell writes
//! trapped (`doorbell_counters`).
//!
//! Usage: kfd-queue-bench [GPU_INDEX [SECTION...]] (default: the first GPU,
//! every section; sections: latency pm4 events create round sdma).

use kfd_tests::kfd::errno_name;
use kfd_tests::ops::{alloc, map, topology_gpus, GTT, VRAM};
use kfd_tests::queue::QueueProps;
use kfd_tests::svm::{gpus, Ctx};
use kfd_uapi as uapi;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
const BASE: u64 = 1 << 40;
/// The control object: rings, pointers, fences, write targets.
const CTRL: u64 = 8 * MIB;
const PM4_RING_BYTES: u64 = 256 << 10;
const SDMA_RING_BYTES: u64 = 64 << 10;
const QUEUES: usize = 4;
/// SDMA copy buffers, per queue.
const COPY_BYTES: u64 = 8 * MIB;
const HANG: Duration = Duration::from_secs(60);

const PM4_WRITE_DATA: u32 = 0x37;
const PM4_RELEASE_MEM: u32 = 0x49;
const TYPE_DOORBELL: u64 = 0x3 << 62;
const GPU_ID_SHIFT: u32 = 46;
const DOORBELL_SLICE: usize = 8192;

fn packet3(op: u32, count: u32) -> u32 {
    (3 << 30) | ((count & 0x3fff) << 16) | ((op & 0xff) << 8)
}

fn pm4_ring(i: usize) -> u64 {
    i as u64 * PM4_RING_BYTES
}
fn sdma_ring(i: usize) -> u64 {
    MIB + i as u64 * SDMA_RING_BYTES
}
/// Pointers of queue slot `i` (PM4 0..4, SDMA 4..8): rptr, then wptr.
fn ptrs(i: usize) -> u64 {
    2 * MIB + i as u64 * 64
}
fn fence(i: usize) -> u64 {
    2 * MIB + 4096 + i as u64 * 64
}
const TARGET: u64 = 3 * MIB;
/// The signal page's GPU address.
const SIGNAL_PAGE: u64 = BASE + 48 * MIB;

struct Bench {
    ctx: Ctx,
    props: QueueProps,
    cpu: usize,
    doorbells: usize,
    /// The signal page's handle until the first CREATE_EVENT registers it.
    signal_page: std::cell::Cell<u64>,
}

/// One live queue.
struct Q {
    id: u32,
    doorbell: u64,
    /// Queue slot (rings and pointers).
    slot: usize,
    sdma: bool,
    /// Write pointer: dwords (PM4) or bytes (SDMA), monotonic.
    wptr: u64,
}

fn die(what: &str) -> impl Fn(i32) -> String + '_ {
    move |e| format!("{what}: {}", errno_name(e))
}

impl Bench {
    fn new(index: usize) -> Result<Bench, String> {
        let gpu = gpus().into_iter().nth(index).ok_or("no such GPU")?;
        let topo = topology_gpus().into_iter().find(|t| t.gpu_id == gpu.gpu_id).ok_or("GPU not in the topology")?;
        let props = QueueProps::of(&topo);
        let ctx = Ctx::new(&gpu)?;
        let (kfd, id) = (ctx.kfd.fd, gpu.gpu_id);
        let obj = |va: u64, size: u64, flags: u32| -> Result<u64, String> {
            let (h, off) = alloc(kfd, id, va, size, flags, 0).map_err(die("ALLOC"))?;
            map(kfd, h, id, true).map_err(die("MAP"))?;
            Ok(off)
        };
        let off = obj(BASE, CTRL, GTT)?;
        // SAFETY: mapping the object through its render node.
        let cpu = unsafe {
            libc::mmap(std::ptr::null_mut(), CTRL as usize, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, ctx.render, off as i64)
        };
        if cpu == libc::MAP_FAILED {
            return Err(format!("mmap control object: {}", std::io::Error::last_os_error()));
        }
        obj(BASE + 16 * MIB, 4096, VRAM)?;
        obj(BASE + 32 * MIB, (u64::from(props.cwsr_size) + 0xfff & !0xfff).max(4096), VRAM)?;
        // The signal page (events' slots), mapped: RELEASE_MEM writes a slot
        // before its interrupt, as ROCr's event mailboxes do.
        let (signal_page, _) = alloc(kfd, id, SIGNAL_PAGE, 4096 * 8, GTT, 0).map_err(die("ALLOC signal page"))?;
        map(kfd, signal_page, id, true).map_err(die("MAP signal page"))?;
        for i in 0..QUEUES as u64 {
            obj(BASE + 64 * MIB + i * COPY_BYTES, COPY_BYTES, GTT)?;
            obj(BASE + 256 * MIB + i * COPY_BYTES, COPY_BYTES, VRAM)?;
        }
        let dboff = TYPE_DOORBELL | (u64::from(id) << GPU_ID_SHIFT);
        // SAFETY: a shared mapping of our doorbell slice.
        let db = unsafe {
            libc::mmap(std::ptr::null_mut(), DOORBELL_SLICE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, kfd, dboff as i64)
        };
        if db == libc::MAP_FAILED {
            return Err(format!("mmap doorbells: {}", std::io::Error::last_os_error()));
        }
        println!("bench: GPU {} (gpu_id {}), {} SDMA engines", gpu.name, gpu.gpu_id, props.sdma_engines);
        Ok(Bench { ctx, props, cpu: cpu as usize, doorbells: db as usize, signal_page: std::cell::Cell::new(signal_page) })
    }

    fn at<T>(&self, off: u64) -> *mut T {
        (self.cpu + off as usize) as *mut T
    }

    fn r32(&self, off: u64) -> u32 {
        // SAFETY: inside the control mapping.
        unsafe { self.at::<u32>(off).read_volatile() }
    }

    fn w32(&self, off: u64, v: u32) {
        // SAFETY: inside the control mapping.
        unsafe { self.at::<u32>(off).write_volatile(v) }
    }

    fn w64(&self, off: u64, v: u64) {
        // SAFETY: inside the control mapping.
        unsafe { self.at::<u64>(off).write_volatile(v) }
    }

    fn create(&self, slot: usize, sdma: bool) -> Result<Q, String> {
        let p = ptrs(if sdma { QUEUES + slot } else { slot });
        self.w64(p, 0);
        self.w64(p + 8, 0);
        // Its fence starts at 0: waits are for values counted from 1.
        self.w32(fence(if sdma { QUEUES + slot } else { slot }), 0);
        // The ring is not cleared: the engines read only what the write
        // pointer publishes, and clearing 256 KiB per queue is the
        // benchmark's cost, not the driver's.
        let (ring, size) = if sdma { (sdma_ring(slot), SDMA_RING_BYTES) } else { (pm4_ring(slot), PM4_RING_BYTES) };
        let mut a = uapi::kfd_ioctl_create_queue_args {
            ring_base_address: BASE + ring,
            write_pointer_address: BASE + p + 8,
            read_pointer_address: BASE + p,
            ring_size: size as u32,
            gpu_id: self.ctx.gpu.gpu_id,
            queue_type: if sdma { uapi::KFD_IOC_QUEUE_TYPE_SDMA } else { uapi::KFD_IOC_QUEUE_TYPE_COMPUTE },
            queue_percentage: 100,
            queue_priority: 7,
            ..Default::default()
        };
        if !sdma {
            a.eop_buffer_address = BASE + 16 * MIB;
            a.eop_buffer_size = 4096;
            a.ctx_save_restore_address = BASE + 32 * MIB;
            a.ctx_save_restore_size = self.props.cwsr_size;
            a.ctl_stack_size = self.props.ctl_stack_size;
        }
        self.ctx.kfd.ioctl(uapi::AMDKFD_IOC_CREATE_QUEUE, &mut a).map_err(die("CREATE_QUEUE"))?;
        Ok(Q { id: a.queue_id, doorbell: a.doorbell_offset, slot, sdma, wptr: 0 })
    }

    fn destroy(&self, q: Q) -> Result<(), String> {
        let mut d = uapi::kfd_ioctl_destroy_queue_args { queue_id: q.id, pad: 0 };
        self.ctx.kfd.ioctl(uapi::AMDKFD_IOC_DESTROY_QUEUE, &mut d).map_err(die("DESTROY_QUEUE")).map(|_| ())
    }

    /// Appends `words` to `q`'s ring (not yet published).
    fn put(&self, q: &mut Q, words: &[u32]) {
        let (ring, size) = if q.sdma { (sdma_ring(q.slot), SDMA_RING_BYTES) } else { (pm4_ring(q.slot), PM4_RING_BYTES) };
        let unit = if q.sdma { 4 } else { 1 };
        for &w in words {
            let byte = (q.wptr * 4 / unit) % size;
            self.w32(ring + byte, w);
            q.wptr += unit;
        }
    }

    /// Publishes the write pointer and rings the doorbell.
    fn kick(&self, q: &Q) {
        let p = ptrs(if q.sdma { QUEUES + q.slot } else { q.slot });
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        self.w64(p + 8, q.wptr);
        let off = (q.doorbell & ((1 << GPU_ID_SHIFT) - 1)) as usize;
        if off + 8 <= DOORBELL_SLICE {
            // SAFETY: inside our doorbell mapping.
            unsafe { ((self.doorbells + off) as *mut u64).write_volatile(q.wptr) };
        }
    }

    fn write_data(&self, q: &mut Q, target: u64, v: u32) {
        let a = BASE + target;
        self.put(q, &[packet3(PM4_WRITE_DATA, 3), 5 << 8, a as u32, (a >> 32) as u32, v]);
    }

    /// RELEASE_MEM writing `v` to `target`, with an interrupt carrying
    /// `ctx` if it is not 0.
    fn release_mem(&self, q: &mut Q, target: u64, v: u32, ctx: u32) {
        let a = BASE + target;
        let int_sel = if ctx != 0 { 2 } else { 0 };
        self.put(q, &[packet3(PM4_RELEASE_MEM, 6), 0, (1 << 29) | (int_sel << 24), a as u32, (a >> 32) as u32, v, 0, ctx]);
    }

    /// Waits (spinning) until the u32 at `off` is `v`.
    fn wait(&self, off: u64, v: u32, what: &str) -> Result<(), String> {
        let t = Instant::now();
        let mut n = 0u32;
        while self.r32(off) != v {
            n = n.wrapping_add(1);
            if n % 1024 == 0 {
                if t.elapsed() > HANG {
                    return Err(format!("{what}: {:#x} after {} s, want {v:#x}", self.r32(off), HANG.as_secs()));
                }
                std::thread::yield_now();
            }
        }
        Ok(())
    }

    fn signal_event(&self) -> Result<u32, String> {
        let mut e = uapi::kfd_ioctl_create_event_args {
            event_page_offset: self.signal_page.take(),
            event_type: uapi::KFD_IOC_EVENT_SIGNAL,
            auto_reset: 1,
            ..Default::default()
        };
        self.ctx.kfd.ioctl(uapi::AMDKFD_IOC_CREATE_EVENT, &mut e).map_err(die("CREATE_EVENT"))?;
        Ok(e.event_id)
    }
}

fn rate(n: f64, t: Duration) -> f64 {
    n / t.as_secs_f64().max(1e-9)
}

/// PM4 WRITE_DATA packets/s over `nq` queues at once: from the doorbells
/// to the last packet done (the engines' rate), and with the producer's
/// writing of the packets counted too.
fn pm4_throughput(b: &Bench, nq: usize) -> Result<(), String> {
    const BURST: u32 = 12_000; // 60000 dwords of a 65536-dword ring
    const BURSTS: u32 = 4;
    let mut qs = Vec::new();
    for i in 0..nq {
        qs.push(b.create(i, false)?);
    }
    let t = Instant::now();
    let mut engine = Duration::ZERO;
    for burst in 1..=BURSTS {
        for q in qs.iter_mut() {
            let slot = q.slot as u64;
            for k in 0..BURST - 1 {
                b.write_data(q, TARGET + slot * 64 * 1024 + u64::from(k % 4096) * 4, k);
            }
            b.write_data(q, fence(q.slot), burst);
        }
        let e = Instant::now();
        for q in qs.iter() {
            b.kick(q);
        }
        for q in qs.iter() {
            b.wait(fence(q.slot), burst, "PM4 burst")?;
        }
        engine += e.elapsed();
    }
    let el = t.elapsed();
    let n = f64::from(BURST * BURSTS) * nq as f64;
    println!(
        "bench: PM4 WRITE_DATA, {nq} queue{} at once: {:.0} packets/s doorbell to done ({} packets in {:.1} ms); \
         {:.0} packets/s with the producer's writing",
        if nq > 1 { "s" } else { "" },
        rate(n, engine),
        n,
        engine.as_secs_f64() * 1e3,
        rate(n, el),
    );
    for q in qs {
        b.destroy(q)?;
    }
    Ok(())
}

/// The issue #16 round: 4 PM4 queues x (1024 WRITE_DATA + RELEASE_MEM
/// with an interrupt), created, run, destroyed; or (`sdma`) 4 SDMA queues
/// x (1024 FENCE + a TRAP).
fn issue_rounds(b: &Bench, sdma: bool) -> Result<(), String> {
    let ev = b.signal_event()?;
    let slot = SIGNAL_PAGE - BASE + 8 * u64::from(ev);
    let t = Instant::now();
    let mut rounds = 0u32;
    while rounds < 64 && (rounds < 2 || t.elapsed() < Duration::from_secs(10)) {
        rounds += 1;
        let mut qs = Vec::new();
        for i in 0..QUEUES {
            let mut q = b.create(i, sdma)?;
            let fence_slot = if sdma { QUEUES + i } else { i };
            for k in 0..1023u32 {
                let target = TARGET + i as u64 * 4096 + u64::from(k % 1024) * 4;
                if sdma {
                    let a = BASE + target;
                    b.put(&mut q, &[5, a as u32, (a >> 32) as u32, k]);
                } else {
                    b.write_data(&mut q, target, k);
                }
            }
            // The last one signals the event's slot, so that the
            // interrupt names a signalled event (as ROCr's mailboxes do).
            if sdma {
                let (s, f) = (BASE + slot, BASE + fence(fence_slot));
                b.put(&mut q, &[5, s as u32, (s >> 32) as u32, rounds]);
                b.put(&mut q, &[5, f as u32, (f >> 32) as u32, rounds]);
                b.put(&mut q, &[6, ev]);
            } else {
                b.write_data(&mut q, slot, rounds);
                b.release_mem(&mut q, fence(fence_slot), rounds, ev);
            }
            b.kick(&q);
            qs.push(q);
        }
        for (i, q) in qs.iter().enumerate() {
            b.wait(fence(if sdma { QUEUES + i } else { q.slot }), rounds, "issue round")?;
        }
        for q in qs {
            b.destroy(q)?;
        }
    }
    let el = t.elapsed();
    let per = el.as_secs_f64() / f64::from(rounds);
    println!(
        "bench: issue round ({}, create/run/destroy): \
         {:.1} rounds/s, {:.1} ms per round; 1024 rounds would take {:.1} s",
        if sdma { "4 SDMA queues x 1024 FENCE + TRAP" } else { "4 PM4 queues x 1024 WRITE_DATA + RELEASE_MEM interrupt" },
        1.0 / per,
        per * 1e3,
        per * 1024.0
    );
    Ok(())
}

/// CREATE_QUEUE + DESTROY_QUEUE per second.
fn create_destroy(b: &Bench, sdma: bool) -> Result<(), String> {
    let t = Instant::now();
    let mut n = 0u32;
    while n < 2000 && (n < 10 || t.elapsed() < Duration::from_secs(2)) {
        let q = b.create(0, sdma)?;
        b.destroy(q)?;
        n += 1;
    }
    println!(
        "bench: {} queue create+destroy: {:.0}/s ({n} in {:.1} ms)",
        if sdma { "SDMA" } else { "PM4" },
        rate(f64::from(n), t.elapsed()),
        t.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

/// Packets with one interrupt each: RELEASE_MEM with the event's id.
fn events(b: &Bench) -> Result<(), String> {
    const N: u32 = 4000;
    let ev = b.signal_event()?;
    let mut q = b.create(0, false)?;
    let t = Instant::now();
    for k in 1..=N {
        // The event's slot in the signal page, then the interrupt.
        b.release_mem(&mut q, SIGNAL_PAGE - BASE + 8 * u64::from(ev), k, ev);
    }
    b.write_data(&mut q, fence(0), 1);
    b.kick(&q);
    b.wait(fence(0), 1, "interrupt packets")?;
    let el = t.elapsed();
    // The event was set (auto-reset: once for all of them).
    let data = [uapi::kfd_event_data { event_id: ev, ..Default::default() }];
    let mut w = uapi::kfd_ioctl_wait_events_args {
        events_ptr: data.as_ptr() as u64,
        num_events: 1,
        wait_for_all: 0,
        timeout: 1000,
        wait_result: 0,
    };
    b.ctx.kfd.ioctl(uapi::AMDKFD_IOC_WAIT_EVENTS, &mut w).map_err(die("WAIT_EVENTS"))?;
    println!(
        "bench: RELEASE_MEM with an interrupt per packet: {:.0} events/s ({N} in {:.1} ms; event {})",
        rate(f64::from(N), el),
        el.as_secs_f64() * 1e3,
        if w.wait_result == uapi::KFD_IOC_WAIT_RESULT_COMPLETE { "set" } else { "NOT set" }
    );
    b.destroy(q)
}

/// The same ping-pong without the GPU, the baseline of [`latency`]: a user
/// thread that polls a word every 20 us (the engines' short poll,
/// `sched::SHORT_US`) copies it to another; the time from the write to the
/// copy after `idle_ms` of idling is what any memory poller that sleeps
/// between polls achieves in this guest (vCPU wake-ups, the host's
/// scheduling of the vCPU threads).
fn poller_baseline(idle_ms: u64, n: usize) -> Vec<f64> {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
    use std::sync::Arc;
    let (req, ack, stop) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)), Arc::new(AtomicBool::new(false)));
    let t = {
        let (req, ack, stop) = (req.clone(), ack.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                let v = req.load(SeqCst);
                if v != ack.load(SeqCst) {
                    ack.store(v, SeqCst);
                } else {
                    std::thread::sleep(Duration::from_micros(20));
                }
            }
        })
    };
    let mut lat = Vec::new();
    for seq in 1..=n as u32 {
        std::thread::sleep(Duration::from_millis(idle_ms));
        let t0 = Instant::now();
        req.store(seq, SeqCst);
        let mut k = 0u32;
        while ack.load(SeqCst) != seq && t0.elapsed() < HANG {
            k = k.wrapping_add(1);
            if k % 1024 == 0 {
                std::thread::yield_now();
            }
        }
        lat.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    stop.store(true, SeqCst);
    let _ = t.join();
    lat.sort_by(|x, y| x.total_cmp(y));
    lat
}

/// Doorbell to first packet: one WRITE_DATA after the engine idled.
fn latency(b: &Bench) -> Result<(), String> {
    let mut q = b.create(0, false)?;
    let mut seq = 0u32;
    for idle_ms in [0u64, 1, 10, 100, 1500] {
        let n = match idle_ms {
            1000.. => 6,
            100.. => 10,
            _ => 30,
        };
        let mut lat = Vec::new();
        for _ in 0..n {
            std::thread::sleep(Duration::from_millis(idle_ms));
            seq += 1;
            b.write_data(&mut q, fence(0), seq);
            let t = Instant::now();
            b.kick(&q);
            b.wait(fence(0), seq, "latency")?;
            lat.push(t.elapsed().as_secs_f64() * 1e6);
        }
        lat.sort_by(|x, y| x.total_cmp(y));
        let base = poller_baseline(idle_ms, n);
        println!(
            "bench: doorbell-to-first-packet after {idle_ms} ms idle: median {:.0} us, min {:.0} us, max {:.0} us ({n} samples); \
             a user thread polling every 20 us: median {:.0} us, min {:.0} us (engine/poller {:.2})",
            lat[lat.len() / 2],
            lat[0],
            lat[lat.len() - 1],
            base[base.len() / 2],
            base[0],
            lat[lat.len() / 2] / base[base.len() / 2].max(1e-3)
        );
    }
    b.destroy(q)
}

/// SDMA COPY_LINEAR GTT -> VRAM over `nq` queues at once.
fn sdma_copy(b: &Bench, nq: usize) -> Result<(), String> {
    const ROUNDS: u32 = 4;
    let mut qs = Vec::new();
    for i in 0..nq {
        qs.push(b.create(i, true)?);
    }
    let t = Instant::now();
    for q in qs.iter_mut() {
        let i = q.slot as u64;
        let (src, dst) = (BASE + 64 * MIB + i * COPY_BYTES, BASE + 256 * MIB + i * COPY_BYTES);
        let f = BASE + fence(QUEUES + q.slot);
        for r in 1..=ROUNDS {
            let c = COPY_BYTES as u32 - 1;
            b.put(q, &[1, c, 0, src as u32, (src >> 32) as u32, dst as u32, (dst >> 32) as u32]);
            b.put(q, &[5, f as u32, (f >> 32) as u32, r]);
        }
        b.kick(q);
    }
    for q in qs.iter() {
        b.wait(fence(QUEUES + q.slot), ROUNDS, "SDMA copies")?;
    }
    let el = t.elapsed();
    let bytes = (COPY_BYTES * u64::from(ROUNDS)) as f64 * nq as f64;
    println!(
        "bench: SDMA copy GTT->VRAM, {nq} queue{} at once: {:.3} GB/s ({} MiB in {:.1} ms)",
        if nq > 1 { "s" } else { "" },
        bytes / el.as_secs_f64() / 1e9,
        bytes as u64 / MIB,
        el.as_secs_f64() * 1e3
    );
    for q in qs {
        b.destroy(q)?;
    }
    Ok(())
}

/// The virtual GPU's doorbell trap counters (read-only parameters of its
/// module "amdgpu"): doorbell pages write-protected by idle engine
/// workers, doorbell writes that trapped.  `None` for a module without
/// them.
fn doorbell_counters() -> Option<(u64, u64)> {
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/sys/module/amdgpu/parameters/{name}")).ok()?.trim().parse().ok()
    };
    Some((read("doorbell_arms")?, read("doorbell_traps")?))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let index = args.first().and_then(|a| a.parse().ok()).unwrap_or(0);
    // Section names after the GPU index select what runs (all by default).
    let only: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    // Runs a selected section, then prints what it cost in doorbell traps.
    let section = |s: &str, f: &mut dyn FnMut() -> Result<(), String>| -> Result<(), String> {
        if !(only.is_empty() || only.contains(&s)) {
            return Ok(());
        }
        let before = doorbell_counters();
        f()?;
        if let (Some((a0, t0)), Some((a1, t1))) = (before, doorbell_counters()) {
            println!("bench: {s}: doorbell pages armed {}, doorbell writes trapped {}", a1 - a0, t1 - t0);
        }
        Ok(())
    };
    let run = || -> Result<(), String> {
        let b = Bench::new(index)?;
        section("latency", &mut || latency(&b))?;
        section("pm4", &mut || {
            pm4_throughput(&b, 1)?;
            pm4_throughput(&b, QUEUES)
        })?;
        section("events", &mut || events(&b))?;
        section("create", &mut || {
            create_destroy(&b, false)?;
            if b.props.sdma_engines > 0 {
                create_destroy(&b, true)?;
            }
            Ok(())
        })?;
        section("round", &mut || {
            issue_rounds(&b, false)?;
            if b.props.sdma_engines > 0 {
                issue_rounds(&b, true)?;
            }
            Ok(())
        })?;
        if b.props.sdma_engines > 0 {
            section("sdma", &mut || {
                sdma_copy(&b, 1)?;
                sdma_copy(&b, QUEUES)
            })?;
        }
        Ok(())
    };
    if let Err(e) = run() {
        println!("bench: failed: {e}");
        std::process::exit(1);
    }
}
