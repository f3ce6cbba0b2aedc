// SPDX-License-Identifier: GPL-2.0

//! The virtual GPU's hardware queues (HQDs) and the software engines that
//! serve them: per GPU, one worker per online CPU ([`Engines`]), each a
//! scheduler thread (`vgpu-engine/<gpu>.<worker>`, an [`Engine`]) with its
//! own queues; a new queue goes to the worker with the fewest.
//!
//! rkfd loads a queue with `hqd_load` / `hqd_sdma_load` after validating
//! CREATE_QUEUE (`crate::mqd` reads its MQD into a [`QueueDesc`]); the
//! engine then executes its packets through the queue's VM page table: AQL
//! (`aql`), PM4 (`pm4`) and SDMA (`sdma`) processors from
//! `rust/gpu-engines` (pure logic, host-tested), over [`VmMem`].  Results
//! come back to rkfd as interrupts (`kgd2kfd_interrupt`): the engine records
//! what it raised ([`IhEntry`]: signals (completion signals with an event
//! mailbox, RELEASE_MEM interrupts, SDMA traps: the event id), queue errors
//! (the queue and `KGD_QUEUE_ERROR_*`), VM faults (the address)) and
//! `crate::ih` writes each as the SOC15 ring entry the GPU's family
//! writes.
//!
//! Doorbells: user space writes them to plain memory (the VM's doorbell
//! pages), which raises no interrupt by itself.  A queue that ran out of
//! packets is run again when its doorbell changes (a blocked one every
//! round; every queue's write pointer is read every [`FULL_POLL_MS`] for
//! producers that do not ring).  Right after work a worker spins on the
//! doorbells (`sched::SPIN_NS`: a producer's next packet costs no fault),
//! then polls them (`sched::poll`: every few microseconds) until it has
//! been idle for the module's `doorbell_arm_us` (`kabi::doorbell_arm_ns`,
//! 5 ms by default).  Only then does it arm its VMs' doorbell traps, as
//! `fb_deferred_io` traps framebuffer writes (`Vm::arm_doorbells`,
//! `kabi::DoorbellWatch`, whose shim comment has the details): every user
//! PTE of the doorbell pages is write-protected through the rmap of the
//! mapping they were mmapped from (TLB flushed), so the next write faults,
//! and the fault (`page_mkwrite`) wakes the workers with a queue whose
//! doorbell is on the written page ([`Bell`], `Engine::ring`) and lets the
//! write proceed; the page stays writable until armed again (one fault per
//! idle period).  Arming only after a long idle period keeps its cost (an
//! rmap walk and a TLB flush, an IPI to the producer's CPU, then the
//! fault) off bursty work, whose short idle periods polling serves (queue
//! create/run/destroy rounds); a long idle period, where a sleeping poller
//! answers late, gets the trap.  After arming the worker reads the
//! doorbells once more (a write that landed before the protection), then
//! sleeps until a trap, a kick (`hqd_load`, `gpu_reset`) or its safety
//! poll every [`FULL_POLL_MS`].  A page that trapped less than
//! [`DOORBELL_HOLDOFF_NS`] ago is not armed again (a busy queue on another
//! worker sharing it would fault on every write), nor are doorbells mapped
//! more ways than a watch tracks: then the worker keeps polling
//! (`sched::poll`: every few microseconds for a second, then every
//! millisecond) and tries to arm at each poll; so it does while a queue is
//! blocked (it waits for memory, not a doorbell).  With no queue (or hung)
//! it sleeps until kicked.
//! Service between a worker's busy queues follows the stride scheduler
//! (`sched`): priority and percentage.
//!
//! Upstream: the MEC firmware (HWS) maps queues, the CP executes them
//! (`amdgpu/gfx_v9_0.c`, `kfd_device_queue_manager.c`); SDMA engines
//! likewise.  Kernel dispatches run on the shader interpreter
//! (`shader`, `rust/amdgpu-isa`) on the queue's worker, in time slices.
//!
//! Page faults: an access the page table does not allow stops the queue
//! with a VM fault (a no-retry UTCL2 fault, then the queue error), unless
//! rkfd resolves it as a retry fault (`Vm::svm_fault`: XNACK on, an SVM
//! address), in which case the packet is executed again on the next turn.
//! User-pointer pages are not reachable yet (no mm reference): they fault.

// Lock order: see the crate root (`vgpu/amdgpu_main.rs`).  Preemption is
// taking `Hqd::state`, which the engine holds for one quantum while it runs
// the queue.  Interrupts are delivered, and retry faults raised, with no
// lock of ours held: rkfd's handlers may take its process locks, under
// which rkfd calls hqd_destroy, which waits for `Hqd::state`.

use kernel::{
    new_condvar,
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc,
        CondVar,
        Mutex, //
    },
    time::{
        delay::fsleep,
        msecs_to_jiffies,
        Delta,
        Instant,
        Monotonic, //
    },
};

use crate::{
    gpu::Core,
    kabi::{
        self,
        PageMap, //
    },
    uapi,
    vm::{
        GpuPages,
        Vm, //
    },
};

#[path = "../rust/gpu-engines/src/aql.rs"]
#[allow(dead_code, unreachable_pub)]
mod aql;
#[path = "../rust/gpu-engines/src/mem.rs"]
#[allow(dead_code, unreachable_pub)]
mod mem;
#[path = "../rust/gpu-engines/src/pm4.rs"]
#[allow(dead_code, unreachable_pub)]
mod pm4;
#[path = "../rust/gpu-engines/src/sched.rs"]
#[allow(dead_code, unreachable_pub)]
mod sched;
#[path = "../rust/gpu-engines/src/sdma.rs"]
#[allow(dead_code, unreachable_pub)]
mod sdma;
#[path = "shader.rs"]
mod shader;

use mem::{
    Events,
    Fault,
    GpuMemory,
    Stop, //
};

pub(crate) use mem::{
    QUEUE_ERROR_INVALID_PACKET,
    QUEUE_ERROR_RESET,
    QUEUE_ERROR_UNSUPPORTED,
    QUEUE_ERROR_VM_FAULT, //
};

/// [`IhEntry::source`]: a signal (end of pipe, SDMA trap).
pub(crate) const IH_SIGNAL: u32 = 1;
/// [`IhEntry::source`]: a queue stopped.
pub(crate) const IH_QUEUE_ERROR: u32 = 2;
/// [`IhEntry::source`]: a VM fault.
pub(crate) const IH_VM_FAULT: u32 = 3;
/// [`IhEntry::data`] of a VM fault: a write.
pub(crate) const VM_FAULT_WRITE: u32 = 1;
/// [`IhEntry::data`] of a VM fault: fatal (the engine raises no retry faults
/// as interrupts: those go to `kgd2kfd_svm_fault`).
pub(crate) const VM_FAULT_NO_RETRY: u32 = 4;

/// Packets a queue is served per turn (one quantum): bounds how long
/// preemption waits (`hqd_destroy`) and the scheduler's granularity, and
/// spreads a turn's fixed costs (locks, interrupt delivery) over packets.
const QUANTUM: u32 = 64;
/// Turns per round before the thread looks at stop and hang requests again.
const ROUND_TURNS: u32 = 256;
/// How often an idle queue's write pointer is read although its doorbell
/// did not change (producers that publish a write pointer without ringing
/// the doorbell, as the KUnit tests below), ms.
const FULL_POLL_MS: u64 = 2;
/// How long after a trapped doorbell write its page is left writable
/// before a worker may arm it again, ns: a queue rung this often is busy,
/// and re-protecting its page each time would make every write of its
/// producer fault (a worker whose doorbells share the page with it polls
/// meanwhile, as before doorbells trapped).
const DOORBELL_HOLDOFF_NS: u64 = 1_000_000;
/// The most workers (threads) one GPU's engine has.
const MAX_WORKERS: u32 = 8;
/// Runs a queue may fault again at a page rkfd resolved, with nothing done
/// in between, before the fault is fatal (a racing invalidation can unmap
/// a page between the fault and the retry, but not this often).
const MAX_RESOLVED_RETRIES: u32 = 1000;
/// The most queues one GPU serves.
const MAX_HQDS: usize = 1024;

/// An interrupt an engine raised, before `crate::ih` writes it as a ring
/// entry.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct IhEntry {
    /// `IH_*`.
    pub(crate) source: u32,
    /// The VM's pasid.
    pub(crate) pasid: u32,
    /// Event id (signals) or the queue's doorbell index (queue errors).
    pub(crate) context_id: u32,
    /// `KGD_QUEUE_ERROR_*` or `VM_FAULT_*` bits.
    pub(crate) data: u32,
    /// The faulting address.
    pub(crate) addr: u64,
    /// Queue errors: the queue's doorbell index (how the hardware names it).
    pub(crate) doorbell_id: u32,
    /// Signals of an SDMA queue: its engine (an SDMA trap, not an EOP).
    pub(crate) sdma_engine: Option<u32>,
}

/// A queue as the engines serve it: what `hqd_load` / `hqd_sdma_load`
/// read out of its MQD (`crate::mqd`).
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct QueueDesc {
    /// `KFD_IOC_QUEUE_TYPE_*`: COMPUTE_AQL, COMPUTE (PM4) or SDMA.
    pub(crate) ty: u32,
    /// Byte offset of the doorbell in the VM's doorbell slice.
    pub(crate) doorbell_offset: u32,
    /// 0..15.
    pub(crate) priority: u32,
    /// 0..100.
    pub(crate) percentage: u32,
    /// SDMA engine index (one software SDMA engine serves them all; the
    /// index picks the IH client of its traps).
    pub(crate) sdma_engine: u32,
    /// Ring address.
    pub(crate) ring_base: u64,
    /// Ring bytes.
    pub(crate) ring_size: u64,
    /// Where the engine publishes the read pointer.
    pub(crate) rptr_va: u64,
    /// Where user space publishes the write pointer.
    pub(crate) wptr_va: u64,
    /// The read pointer the queue starts at (AQL: packets, PM4: dwords,
    /// SDMA: bytes): what the MQD saved at the last unload, 0 when new.
    pub(crate) rptr: u64,
}

impl QueueDesc {
    /// The doorbell's index in the VM's doorbell slice (64-bit doorbells),
    /// which the hardware's queue interrupts carry.
    pub(crate) fn doorbell_id(&self) -> u32 {
        self.doorbell_offset / 8
    }

    /// The SDMA engine serving the queue, if it is an SDMA queue.
    pub(crate) fn sdma_engine(&self) -> Option<u32> {
        match self.ty {
            uapi::KFD_IOC_QUEUE_TYPE_SDMA
            | uapi::KFD_IOC_QUEUE_TYPE_SDMA_XGMI
            | uapi::KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID => Some(self.sdma_engine),
            _ => None,
        }
    }
}

/// What [`Engine::state`] reports: the live registers of `hqd_dump`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HqdState {
    /// Read pointer: AQL packets, PM4 and SDMA bytes.
    pub(crate) rptr: u64,
    /// Write pointer, same units (read from memory now; 0 if unreadable).
    pub(crate) wptr: u64,
    /// The queue's doorbell as user space last wrote it (0 if the offset
    /// is outside the VM's doorbell slice).
    pub(crate) doorbell: u64,
    /// Packets completed since load.
    pub(crate) packets: u64,
    /// The scheduler serves it.
    pub(crate) active: bool,
    /// 0 or `KGD_QUEUE_ERROR_*`.
    pub(crate) error: u32,
}

/// A queue's packet processor.
enum Proc {
    Aql(aql::AqlQueue),
    Pm4(pm4::Pm4Queue),
    Sdma(sdma::SdmaQueue),
}

impl Proc {
    /// A processor for `d`; `EINVAL` for a type or ring it cannot serve.
    fn new(d: &QueueDesc) -> Result<Self> {
        let (b, s, r, w) = (d.ring_base, d.ring_size, d.rptr_va, d.wptr_va);
        Ok(match d.ty {
            uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL => Proc::Aql(aql::AqlQueue::new(b, s, r, w).ok_or(EINVAL)?),
            uapi::KFD_IOC_QUEUE_TYPE_COMPUTE => Proc::Pm4(pm4::Pm4Queue::new(b, s, r, w).ok_or(EINVAL)?),
            uapi::KFD_IOC_QUEUE_TYPE_SDMA
            | uapi::KFD_IOC_QUEUE_TYPE_SDMA_XGMI
            | uapi::KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID => {
                Proc::Sdma(sdma::SdmaQueue::new(b, s, r, w).ok_or(EINVAL)?)
            }
            _ => return Err(EINVAL),
        })
    }

    /// Bytes (PM4, SDMA) or packets (AQL) per unit of the pointers.
    fn unit(&self) -> u64 {
        match self {
            Proc::Aql(_) | Proc::Sdma(_) => 1,
            Proc::Pm4(_) => 4,
        }
    }

    fn rptr(&self) -> u64 {
        match self {
            Proc::Aql(q) => q.rptr(),
            Proc::Pm4(q) => q.rptr() * 4,
            Proc::Sdma(q) => q.rptr(),
        }
    }

    /// The read pointer in the processor's own unit (AQL packets, PM4
    /// dwords, SDMA bytes), as [`QueueDesc::rptr`] takes it.
    fn raw_rptr(&self) -> u64 {
        match self {
            Proc::Aql(q) => q.rptr(),
            Proc::Pm4(q) => q.rptr(),
            Proc::Sdma(q) => q.rptr(),
        }
    }

    fn set_rptr(&mut self, rptr: u64) {
        match self {
            Proc::Aql(q) => q.set_rptr(rptr),
            Proc::Pm4(q) => q.set_rptr(rptr),
            Proc::Sdma(q) => q.set_rptr(rptr),
        }
    }
}

/// One loaded queue (upstream: an HQD the HWS mapped from an MQD).  Holds
/// its VM: the VM cannot go away while the queue exists.
#[pin_data]
pub(crate) struct Hqd {
    /// The address space its packets use.
    vm: Arc<Vm>,
    /// What rkfd asked for.
    desc: QueueDesc,
    /// The worker ([`Engine`]) serving it.
    worker: usize,
    /// The engine state.  Lock order: never held together with
    /// `Engine::inner`; `Vm::inner` comes inside it.  Held by the engine for
    /// one quantum; taking it is preemption.  Released before the engine
    /// raises a retry fault (rkfd's handler takes `Process::inner`, under
    /// which rkfd preempts: `hqd_destroy`, or the CP's UNMAP_QUEUES).
    #[pin]
    state: Mutex<HqdInner>,
}

/// The mutable state of an [`Hqd`].
struct HqdInner {
    /// The packet processor.
    proc: Proc,
    /// The ring `proc` serves: `(base, size)`.
    ring: (u64, u64),
    /// 0 or the `KGD_QUEUE_ERROR_*` that stopped it.
    error: u32,
    /// Packets completed since load.
    packets: u64,
    /// Destroyed: the engine must not touch it again.
    removed: bool,
    /// The page of the last retry fault rkfd resolved, and how many times
    /// in a row the queue faulted there again without completing a packet.
    retry: (u64, u32),
    /// Kernel dispatches (AQL queues).
    shader: shader::Shader,
}

impl Hqd {
    /// What its MQD said.
    pub(crate) fn desc(&self) -> &QueueDesc {
        &self.desc
    }

    /// Its read pointer in [`QueueDesc::rptr`]'s units (what an unload
    /// saves in the MQD); the ring currently served.
    pub(crate) fn saved_rptr(&self) -> (u64, u64) {
        let st = self.state.lock();
        (st.proc.raw_rptr(), st.ring.0)
    }

    /// The doorbell as user space last wrote it (0 if outside the slice).
    fn doorbell(&self) -> u64 {
        usize::try_from(self.desc.doorbell_offset)
            .ok()
            .and_then(|o| self.vm.doorbell(o))
            .unwrap_or(0)
    }
}

/// Whether a loaded queue is worth running now.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Wait {
    /// It may have work.
    Runnable,
    /// It was out of packets when its doorbell read this: it has work
    /// again once the doorbell changes (or its write pointer moved
    /// without one: the periodic full poll).
    Idle(u64),
    /// Its next packet waits for memory to change (a dependency signal,
    /// WAIT_REG_MEM, POLL_REGMEM, a retry fault): polled every round.
    Blocked,
}

/// Which waiting queues a round looks at again ([`Engine::serve_round`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Wake {
    /// Runnable and blocked queues, and idle ones whose doorbell changed.
    Doorbells,
    /// Every queue (the write pointers are read).
    All,
}

/// A loaded queue's place in the scheduler.
struct Slot {
    /// The queue.
    hqd: Arc<Hqd>,
    /// Its weight and virtual time.
    entry: sched::Entry,
    /// Whether it has work.
    wait: Wait,
}

/// The engine's shared state.
struct EngineInner {
    /// The loaded queues.
    queues: KVec<Slot>,
    /// The scheduler's virtual time.
    clock: sched::Clock,
    /// `hws_hang`: the scheduler neither serves nor answers preemption.
    hung: bool,
    /// Bumped by every kick (load, update, reset, hang), so that a kick
    /// during a round is not slept through.
    kicks: u64,
    /// The thread must return.
    stop: bool,
}

/// Where interrupts go.
enum IrqTarget {
    /// Nowhere (not registered with rkfd, or being removed).
    None,
    /// rkfd's `kgd2kfd_interrupt`.
    Kfd(kabi::KfdIrq),
    /// Recorded, for the KUnit tests.
    #[cfg(CONFIG_KUNIT = "y")]
    Record(KVec<IhEntry>),
}

/// Counters for the benchmarks and debugfs.
struct Stats {
    /// Packets completed on all queues.
    packets: Atomic<u64>,
    /// Times the thread slept.
    sleeps: Atomic<u64>,
    /// Trapped doorbell writes that woke it.
    rings: Atomic<u64>,
}

/// One worker of a GPU's engines: a scheduler thread serving its share of
/// the GPU's queues ([`Engines`] spreads them).
#[pin_data]
pub(crate) struct Engine {
    /// The GPU (its clock).
    core: Arc<Core>,
    /// Which worker of the GPU.
    index: usize,
    /// Queues and scheduler state.  Lock order: outermost, never held with
    /// a queue's `Hqd::state` nor while a queue runs.
    #[pin]
    inner: Mutex<EngineInner>,
    /// Kicks the thread out of its sleep.
    #[pin]
    wake: CondVar,
    /// Where interrupts go.  A leaf: released before rkfd is called.
    #[pin]
    irq: Mutex<IrqTarget>,
    /// Counters.
    stats: Stats,
    /// The GPU's dispatches other workers may help with, and this
    /// worker's helper ([`shader::Pool`]).
    pool: Arc<shader::Pool>,
    /// The scheduler thread while it runs (taken only by
    /// [`EngineHandle`], never by the thread).  A leaf.
    #[pin]
    thread: Mutex<Option<kabi::Thread>>,
}

/// The interrupts raised while a queue runs, delivered after it stops.
struct RunEvents<'a> {
    /// Collected entries.
    out: &'a mut KVec<IhEntry>,
    /// The queue's pasid.
    pasid: u32,
    /// The queue's SDMA engine, if it is an SDMA queue.
    sdma_engine: Option<u32>,
    /// The GPU (clock).
    core: &'a Core,
}

impl RunEvents<'_> {
    fn push(&mut self, e: IhEntry) {
        // Pushed with the VM's page-table lock possibly held (`VmMem`),
        // which mmu-notifier invalidation also takes: no direct reclaim
        // here.  `run_queue` reserved room for a quantum beforehand, so
        // this does not allocate; if it must and cannot, the interrupt is
        // lost, as an overflowing IH ring loses it; waiters still see the
        // signal's memory.
        if self.out.push(e, GFP_NOWAIT).is_err() {
            kernel::pr_warn_once!("vgpu engine: interrupt lost (no memory)\n");
        }
    }
}

impl Events for RunEvents<'_> {
    fn signal(&mut self, context_id: u32) {
        let pasid = self.pasid;
        let sdma_engine = self.sdma_engine;
        self.push(IhEntry {
            source: IH_SIGNAL,
            pasid,
            context_id,
            sdma_engine,
            ..Default::default()
        });
    }

    fn clock(&mut self) -> u64 {
        self.core.clock_counter()
    }
}

/// Bytes accessed per hold of `Vm::inner` (a small access counts at least
/// a cache line, so that a run of small accesses releases it too).
const ACCESS_CHUNK: usize = 64 * 1024;
/// `PAGE_SIZE` as a GPU address quantity.
const PAGE: u64 = PAGE_SIZE as u64;

/// A queue's VM as its engine sees it.  Holds the VM's mappings (its
/// lock) across accesses, for at most [`ACCESS_CHUNK`] bytes at a time;
/// released when dropped (the end of a run).
pub(crate) struct VmMem<'a> {
    /// The VM.
    vm: &'a Vm,
    /// The mappings, while held.
    held: Option<GpuPages<'a>>,
    /// Bytes accessed since they were taken.
    traffic: usize,
}

impl<'a> VmMem<'a> {
    /// Engine accesses through `vm`.
    pub(crate) fn new(vm: &'a Vm) -> Self {
        VmMem {
            vm,
            held: None,
            traffic: 0,
        }
    }

    /// The mappings, for an access of `bytes` more bytes: released and
    /// taken again every [`ACCESS_CHUNK`] bytes, so that map and unmap
    /// calls wait for one chunk at most.
    fn pages(&mut self, bytes: usize) -> &GpuPages<'a> {
        let bytes = bytes.max(64);
        self.traffic += bytes;
        if self.traffic > ACCESS_CHUNK {
            self.held = None;
            self.traffic = bytes;
        }
        let vm = self.vm;
        self.held.get_or_insert_with(|| vm.gpu_pages())
    }

    /// Runs `f(page map, offset in page, bytes, done)` over `[va, va +
    /// len)` page by page.
    fn each_page(
        &mut self,
        va: u64,
        len: usize,
        write: bool,
        mut f: impl FnMut(&PageMap<'_>, usize, usize, usize),
    ) -> core::result::Result<(), Fault> {
        let mut done = 0usize;
        while done < len {
            let a = va.wrapping_add(done as u64);
            let off = (a % PAGE) as usize;
            let n = (PAGE_SIZE - off).min(len - done);
            let fault = Fault { va: a, write };
            let pages = self.pages(n);
            let page = pages.get(a).ok_or(fault)?;
            if write && !page.writable() {
                return Err(fault);
            }
            let map = PageMap::of(&page).ok_or(fault)?;
            f(&map, off, n, done);
            done += n;
        }
        Ok(())
    }
}

impl GpuMemory for VmMem<'_> {
    fn read(&mut self, va: u64, buf: &mut [u8]) -> core::result::Result<(), Fault> {
        let len = buf.len();
        self.each_page(va, len, false, |map, off, n, done| {
            map.read(off, &mut buf[done..done + n])
        })
    }

    fn write(&mut self, va: u64, data: &[u8]) -> core::result::Result<(), Fault> {
        self.each_page(va, data.len(), true, |map, off, n, done| {
            map.write(off, &data[done..done + n])
        })
    }

    fn release(&mut self) {
        self.held = None;
        self.traffic = 0;
    }

    fn probe(&mut self, va: u64, len: usize, write: bool) -> core::result::Result<(), Fault> {
        self.each_page(va, len, write, |_, _, _, _| {})
    }

    fn atomic_add_u64(&mut self, va: u64, v: u64) -> core::result::Result<u64, Fault> {
        let fault = Fault { va, write: true };
        let pages = self.pages(8);
        let page = pages.get(va).filter(|p| p.writable()).ok_or(fault)?;
        let map = PageMap::of(&page).ok_or(fault)?;
        map.atomic_add_u64((va % PAGE) as usize, v).ok_or(fault)
    }

    fn copy(&mut self, dst: u64, src: u64, len: u64) -> core::result::Result<(), Fault> {
        let mut done = 0u64;
        while done < len {
            let (s, d) = (src.wrapping_add(done), dst.wrapping_add(done));
            let (so, dof) = (s % PAGE, d % PAGE);
            let n = (PAGE - so).min(PAGE - dof).min(len - done);
            let rf = Fault { va: s, write: false };
            let wf = Fault { va: d, write: true };
            let pages = self.pages(n as usize);
            let sp = pages.get(s).ok_or(rf)?;
            let dp = pages.get(d).ok_or(wf)?;
            if !dp.writable() {
                return Err(wf);
            }
            // Unmapped in reverse order: `dm` drops first.
            let sm = PageMap::of(&sp).ok_or(rf)?;
            let dm = PageMap::of(&dp).ok_or(wf)?;
            dm.copy_from(dof as usize, &sm, so as usize, n as usize);
            drop(dm);
            drop(sm);
            done += n;
        }
        Ok(())
    }

    fn fill(&mut self, dst: u64, pattern: u32, len: u64) -> core::result::Result<(), Fault> {
        let len = usize::try_from(len).map_err(|_| Fault { va: dst, write: true })?;
        self.each_page(dst, len, true, |map, off, n, done| {
            map.fill(off, pattern, done % 4, n)
        })
    }
}


impl Engine {
    /// Worker `index` of `core`'s engines, with no thread yet
    /// ([`EngineHandle`] starts it), helping with dispatches of `pool`.
    fn new(core: &Arc<Core>, index: usize, pool: Arc<shader::Pool>) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Engine {
                core: core.clone(),
                index,
                inner <- new_mutex!(
                    EngineInner {
                        queues: KVec::new(),
                        clock: sched::Clock::default(),
                        hung: false,
                        kicks: 0,
                        stop: false,
                    },
                    "Engine::inner"
                ),
                wake <- new_condvar!("Engine::wake"),
                irq <- new_mutex!(IrqTarget::None, "Engine::irq"),
                stats: Stats {
                    packets: Atomic::new(0),
                    sleeps: Atomic::new(0),
                    rings: Atomic::new(0),
                },
                pool,
                thread <- new_mutex!(None, "Engine::thread"),
            }),
            GFP_KERNEL,
        )
    }

    /// Wakes the thread (with `inner` held by the caller's guard).
    fn kick(&self, g: &mut EngineInner) {
        g.kicks = g.kicks.wrapping_add(1);
        self.wake.notify_all();
    }

    /// A trapped doorbell write ([`Bell`]) at byte `offset` of the
    /// doorbell pages of watch `watch`: wakes the thread if a queue of its
    /// has its doorbell on that page (the write left the page writable, so
    /// it no longer traps for any of them).
    fn ring(&self, watch: usize, offset: usize) {
        let page = offset / PAGE_SIZE;
        let mut g = self.inner.lock();
        let mine = g.queues.iter().any(|s| {
            s.hqd.vm.doorbell_watch_id() == watch && s.hqd.desc.doorbell_offset as usize / PAGE_SIZE == page
        });
        if mine {
            self.stats.rings.fetch_add(1, Relaxed);
            self.kick(&mut g);
        }
    }

    /// Arms the doorbell traps of the VMs of `queues` (the thread is about
    /// to sleep): whether a write to any of their doorbells now wakes it.
    /// Called with no lock held (the trap's fault takes `Bell::workers` and
    /// `Engine::inner` with the doorbell page locked; arming locks it).
    fn arm_doorbells(&self, vms: &[Arc<Vm>]) -> bool {
        let mut all = true;
        for vm in vms {
            all &= vm.arm_doorbells(DOORBELL_HOLDOFF_NS).is_ok();
        }
        all
    }

    /// `hqd_load`: the scheduler starts serving a queue on `vm` (a VM of
    /// this GPU).  `EINVAL` for a type or ring the engines cannot serve,
    /// `ENOSPC` past [`MAX_HQDS`].
    pub(crate) fn load(&self, vm: Arc<Vm>, desc: &QueueDesc) -> Result<Arc<Hqd>> {
        self.load_then(vm, desc, true)
    }

    /// [`Self::load`], waking the thread only if `kick` (a batch of loads,
    /// a runlist's, wakes it once at the end: [`Self::wake_up`]).
    fn load_then(&self, vm: Arc<Vm>, desc: &QueueDesc, kick: bool) -> Result<Arc<Hqd>> {
        if !Arc::ptr_eq(vm.core(), &self.core) {
            return Err(EINVAL);
        }
        let mut proc = Proc::new(desc)?;
        proc.set_rptr(desc.rptr);
        // Profiles whose ISA the interpreter does not know keep their
        // dispatches unsupported.
        let shader = shader::Shader::new(
            desc.wptr_va,
            shader::interpreter_isa(self.core.profile().gfx),
            vm.clone(),
            self.pool.clone(),
            self.index,
        );
        let hqd = Arc::pin_init(
            try_pin_init!(Hqd {
                vm,
                desc: *desc,
                worker: self.index,
                state <- new_mutex!(
                    HqdInner {
                        proc,
                        ring: (desc.ring_base, desc.ring_size),
                        error: 0,
                        packets: 0,
                        removed: false,
                        retry: (0, 0),
                        shader,
                    },
                    "Hqd::state"
                ),
            }),
            GFP_KERNEL,
        )?;
        let mut g = self.inner.lock();
        if g.queues.len() >= MAX_HQDS {
            return Err(ENOSPC);
        }
        let mut entry = sched::Entry::new(desc.priority, desc.percentage);
        g.clock.wake(&mut entry);
        g.queues.push(
            Slot {
                hqd: hqd.clone(),
                entry,
                wait: Wait::Runnable,
            },
            GFP_KERNEL,
        )?;
        if kick {
            self.kick(&mut g);
        }
        Ok(hqd)
    }

    /// Wakes the thread as a load does: its queues are looked at again
    /// (after [`Self::load_then`] without a kick).
    fn wake_up(&self) {
        let mut g = self.inner.lock();
        self.kick(&mut g);
    }

    /// `hqd_destroy`: preempts the queue (waits until the engine has left
    /// it) and frees it.  `ETIME` if the scheduler is hung: the queue is
    /// removed and freed all the same, and the engine never touches it again.
    pub(crate) fn destroy(&self, hqd: Arc<Hqd>) -> Result {
        let (slot, hung) = {
            let mut g = self.inner.lock();
            let slot = match g.queues.iter().position(|s| Arc::ptr_eq(&s.hqd, &hqd)) {
                Some(i) => g.queues.remove(i).ok(),
                None => None,
            };
            (slot, g.hung)
        };
        // Preemption: the engine holds the state for one quantum at most.
        let grid = {
            let mut st = hqd.state.lock();
            st.removed = true;
            st.shader.cancel()
        };
        drop(slot);
        if let Some(g) = grid {
            // Other workers running its dispatch's workgroups: each is
            // stopped at the end of its slice.
            self.pool.wait_helpers();
            drop(g);
        }
        if hung {
            Err(ETIME)
        } else {
            Ok(())
        }
    }

    /// The queue's state now (`hqd_dump`).
    pub(crate) fn state(&self, hqd: &Hqd) -> HqdState {
        let served = {
            let g = self.inner.lock();
            !g.hung
                && g
                    .queues
                    .iter()
                    .any(|s| core::ptr::eq(&*s.hqd, hqd) && s.entry.weight > 0)
        };
        let st = hqd.state.lock();
        let wptr = VmMem::new(&hqd.vm).read_u64(hqd.desc.wptr_va).unwrap_or(0);
        HqdState {
            rptr: st.proc.rptr(),
            wptr: wptr.wrapping_mul(st.proc.unit()),
            doorbell: hqd.doorbell(),
            packets: st.packets,
            active: served && st.error == 0 && !st.removed,
            error: st.error,
        }
    }

    /// `hws_hang`: the scheduler stops serving queues and answering
    /// preemption (hqd_destroy returns `ETIME`) until [`Engine::reset`].
    pub(crate) fn hang(&self) {
        let mut g = self.inner.lock();
        g.hung = true;
        self.kick(&mut g);
    }

    /// `gpu_reset`: every loaded queue stops with `KGD_QUEUE_ERROR_RESET`
    /// (rkfd, which asked for the reset, notifies the processes: no IH
    /// entries are raised, as upstream's reset path raises none), and the
    /// scheduler answers again.
    pub(crate) fn reset(&self) -> Result {
        let mut all = KVec::new();
        {
            let g = self.inner.lock();
            all.reserve(g.queues.len(), GFP_KERNEL)?;
            for s in g.queues.iter() {
                all.push(s.hqd.clone(), GFP_KERNEL)?;
            }
        }
        let mut stopped = false;
        for hqd in all.iter() {
            let grid = {
                let mut st = hqd.state.lock();
                if st.error == 0 {
                    st.error = QUEUE_ERROR_RESET;
                }
                st.shader.cancel()
            };
            stopped |= grid.is_some();
            drop(grid);
        }
        if stopped {
            self.pool.wait_helpers();
        }
        let mut g = self.inner.lock();
        g.hung = false;
        self.kick(&mut g);
        Ok(())
    }

    /// Packets completed on all queues since the GPU came up.
    pub(crate) fn packets(&self) -> u64 {
        self.stats.packets.load(Relaxed)
    }

    /// Times the thread went to sleep.
    pub(crate) fn sleeps(&self) -> u64 {
        self.stats.sleeps.load(Relaxed)
    }

    /// Runs `hqd` for one quantum: `(packets, stop)`; interrupts to `irqs`.
    fn run_queue(&self, hqd: &Hqd, irqs: &mut KVec<IhEntry>) -> (u32, Stop) {
        // Room for a quantum's interrupts, allocated before any lock is
        // taken (see `RunEvents::push`).
        let _ = irqs.reserve(QUANTUM as usize + 4, GFP_KERNEL);
        let mut st = hqd.state.lock();
        if st.removed || st.error != 0 {
            return (0, Stop::Idle);
        }
        if let Some(need) = st.shader.take_need() {
            // A dispatch waits for its workgroup storage: allocated with
            // no lock held (reclaim may preempt queues, which waits for
            // `Hqd::state`), then the queue runs on.
            drop(st);
            let buffers = shader::Buffers::new(need);
            st = hqd.state.lock();
            if st.removed || st.error != 0 {
                return (0, Stop::Idle);
            }
            match buffers {
                Ok(b) => st.shader.install(b),
                Err(_) => {
                    pr_warn!("vgpu shader: no memory for a workgroup ({:?})\n", need);
                    st.error = QUEUE_ERROR_UNSUPPORTED;
                    // ROCr learns of it as of the engine's own queue
                    // errors: an invalid allocation (not "insufficient
                    // scratch": the queue does not resume).
                    if let Proc::Aql(q) = &st.proc {
                        let mut ev = RunEvents {
                            out: &mut *irqs,
                            pasid: hqd.vm.pasid(),
                            sdma_engine: hqd.desc.sdma_engine(),
                            core: &self.core,
                        };
                        q.signal_inactive(&mut VmMem::new(&hqd.vm), &mut ev, aql::INACTIVE_INVALID_ALLOCATION);
                    }
                    let _ = irqs.push(
                        IhEntry {
                            source: IH_QUEUE_ERROR,
                            pasid: hqd.vm.pasid(),
                            context_id: hqd.desc.doorbell_id(),
                            data: QUEUE_ERROR_UNSUPPORTED,
                            doorbell_id: hqd.desc.doorbell_id(),
                            ..Default::default()
                        },
                        GFP_NOWAIT,
                    );
                    return (0, Stop::Error(QUEUE_ERROR_UNSUPPORTED));
                }
            }
        }
        let mut m = VmMem::new(&hqd.vm);
        let mut ev = RunEvents {
            out: irqs,
            pasid: hqd.vm.pasid(),
            sdma_engine: hqd.desc.sdma_engine(),
            core: &self.core,
        };
        let inner = &mut *st;
        let run = match &mut inner.proc {
            Proc::Aql(q) => q.run_with(&mut m, &mut ev, QUANTUM, &mut inner.shader),
            Proc::Pm4(q) => q.run(&mut m, &mut ev, QUANTUM),
            Proc::Sdma(q) => q.run(&mut m, &mut ev, QUANTUM),
        };
        st.packets += u64::from(run.packets);
        let queue_error = |ev: &mut RunEvents<'_>, code| {
            ev.push(IhEntry {
                source: IH_QUEUE_ERROR,
                pasid: ev.pasid,
                context_id: hqd.desc.doorbell_id(),
                data: code,
                doorbell_id: hqd.desc.doorbell_id(),
                ..Default::default()
            })
        };
        let stop = match run.stop {
            Stop::Error(code) => {
                st.error = code;
                if let Some(f) = st.shader.take_fault() {
                    // A shader's fault (no retry: see `shader`).
                    ev.push(IhEntry {
                        source: IH_VM_FAULT,
                        pasid: ev.pasid,
                        context_id: 0,
                        data: VM_FAULT_NO_RETRY | if f.write { VM_FAULT_WRITE } else { 0 },
                        addr: f.va,
                        ..Default::default()
                    });
                }
                queue_error(&mut ev, code);
                run.stop
            }
            Stop::Fault(f) => {
                // XNACK: rkfd resolves retry faults (SVM), with no lock of
                // ours held (its handler maps through `Vm::inner` and may
                // wait for the mmap lock); the queue runs again next turn.
                // `m` holds `Vm::inner` between accesses: release it first.
                drop(m);
                drop(st);
                let resolved = match hqd.vm.svm_fault(f.va, f.write, false) {
                    Ok(()) => true,
                    Err(e) if e == EAGAIN => return (run.packets, Stop::Blocked),
                    Err(_) => false,
                };
                let mut st = hqd.state.lock();
                if st.removed || st.error != 0 {
                    return (run.packets, Stop::Idle);
                }
                if resolved {
                    // A fault rkfd says it resolved but that comes back at
                    // the same page, with no packet done in between, for
                    // [`MAX_RESOLVED_RETRIES`] runs: the page is mapped
                    // where the engine cannot reach it.  A VM fault, not a
                    // queue that stalls for ever.
                    let page = f.va & !(PAGE - 1);
                    st.retry = match st.retry {
                        (p, n) if p == page && run.packets == 0 => (p, n.saturating_add(1)),
                        _ => (page, 1),
                    };
                    if st.retry.1 <= MAX_RESOLVED_RETRIES {
                        return (run.packets, Stop::Blocked);
                    }
                }
                st.error = QUEUE_ERROR_VM_FAULT;
                // A shader's dispatch ends here: its helpers stop (the
                // queue's destruction waits for them).
                st.shader.stop_helpers();
                ev.push(IhEntry {
                    source: IH_VM_FAULT,
                    pasid: ev.pasid,
                    context_id: 0,
                    data: VM_FAULT_NO_RETRY | if f.write { VM_FAULT_WRITE } else { 0 },
                    addr: f.va,
                    ..Default::default()
                });
                queue_error(&mut ev, QUEUE_ERROR_VM_FAULT);
                run.stop
            }
            s => s,
        };
        (run.packets, stop)
    }

    /// Delivers and forgets `irqs`, with no lock of ours held.  The target
    /// is looked up once per batch (a quantum's interrupts), not per entry.
    fn deliver(&self, irqs: &mut KVec<IhEntry>) {
        if irqs.is_empty() {
            return;
        }
        let kfd = match &mut *self.irq.lock() {
            IrqTarget::None => None,
            IrqTarget::Kfd(k) => Some(*k),
            #[cfg(CONFIG_KUNIT = "y")]
            IrqTarget::Record(v) => {
                for e in irqs.iter() {
                    let _ = v.push(*e, GFP_KERNEL);
                }
                None
            }
        };
        if let Some(k) = kfd {
            let gfx = self.core.profile().gfx;
            for e in irqs.iter() {
                k.interrupt(&crate::ih::ring_entry(gfx, e));
            }
        }
        irqs.clear();
    }

    /// One round: serves runnable queues by the scheduler until all are
    /// idle or blocked, or `turns` turns; every queue is looked at.
    /// Whether any packet ran.
    fn serve(&self, irqs: &mut KVec<IhEntry>, turns: u32) -> bool {
        self.serve_round(irqs, turns, Wake::All)
    }

    /// One round over the queues `wake` selects: serves them by the
    /// scheduler until all are idle or blocked, or `turns` turns.
    /// Whether any packet ran.
    fn serve_round(&self, irqs: &mut KVec<IhEntry>, turns: u32, wake: Wake) -> bool {
        static NOT_RUNNABLE: sched::Entry = sched::Entry { weight: 0, pass: 0 };
        {
            let mut g = self.inner.lock();
            let g = &mut *g;
            let mut any = false;
            for s in g.queues.iter_mut() {
                let again = match s.wait {
                    Wait::Runnable => {
                        any = true;
                        continue;
                    }
                    Wait::Blocked => true,
                    Wait::Idle(seen) => wake == Wake::All || s.hqd.doorbell() != seen,
                };
                if again {
                    s.wait = Wait::Runnable;
                    g.clock.wake(&mut s.entry);
                    any = true;
                }
            }
            if !any {
                // Nothing rang: the idle poll ends here, with one hold of
                // the lock.
                return false;
            }
        }
        let mut progress = false;
        for _ in 0..turns {
            let (hqd, doorbell) = {
                let g = self.inner.lock();
                if g.hung || g.stop {
                    return progress;
                }
                let runnable = g
                    .queues
                    .iter()
                    .map(|s| if s.wait == Wait::Runnable { &s.entry } else { &NOT_RUNNABLE });
                match g.clock.pick(runnable) {
                    Some(i) => {
                        let hqd = g.queues[i].hqd.clone();
                        // Read before the run: a doorbell rung during it
                        // makes the queue runnable again.
                        let doorbell = hqd.doorbell();
                        (hqd, doorbell)
                    }
                    None => return progress,
                }
            };
            let (packets, stop) = self.run_queue(&hqd, irqs);
            self.deliver(irqs);
            // A dispatch it started may want the other workers.
            self.pool.kick_others(self.index);
            self.stats.packets.fetch_add(u64::from(packets), Relaxed);
            // A dispatch's time slice is progress too (it completes no packet).
            progress |= packets > 0 || stop == Stop::Budget;
            let mut g = self.inner.lock();
            let g = &mut *g;
            if let Some(s) = g.queues.iter_mut().find(|s| Arc::ptr_eq(&s.hqd, &hqd)) {
                g.clock.charge(&mut s.entry, packets);
                s.wait = match stop {
                    Stop::Budget => Wait::Runnable,
                    Stop::Blocked | Stop::Fault(_) => Wait::Blocked,
                    Stop::Idle | Stop::Error(_) => Wait::Idle(doorbell),
                };
            }
        }
        progress
    }
}

impl kabi::ThreadMain for Engine {
    fn main(&self) {
        let mut irqs = KVec::new();
        let mut seen = 0u64;
        let mut busy = Instant::<Monotonic>::now();
        let mut full = busy;
        let mut wake = Wake::All;
        // Idle time before the doorbells are trapped rather than polled.
        let arm_ns = kabi::doorbell_arm_ns().max(sched::SPIN_NS);
        loop {
            if kabi::should_stop() || self.inner.lock().stop {
                return;
            }
            if full.elapsed().as_millis() >= FULL_POLL_MS as i64 {
                full = Instant::<Monotonic>::now();
                wake = Wake::All;
            }
            let served = self.serve_round(&mut irqs, ROUND_TURNS, wake);
            // Then a slice of another worker's dispatch, if one wants help.
            let hung = self.inner.lock().hung;
            let helped = !hung && self.pool.help(self.index);
            if served || helped {
                busy = Instant::<Monotonic>::now();
                wake = Wake::Doorbells;
                continue;
            }
            wake = Wake::Doorbells;
            let mut g = self.inner.lock();
            if g.stop {
                return;
            }
            if g.kicks != seen {
                // A queue was loaded or changed: its packets are likely
                // to follow, so poll as after work.
                seen = g.kicks;
                busy = Instant::<Monotonic>::now();
                wake = Wake::All;
                continue;
            }
            if g.hung || g.queues.is_empty() {
                self.stats.sleeps.fetch_add(1, Relaxed);
                // Nothing to watch: sleep until kicked.
                // A kthread has no signals to interrupt this.
                let _ = self.wake.wait_interruptible(&mut g);
                continue;
            }
            let idle_ns = u64::try_from(busy.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let poll = sched::poll(idle_ns);
            // A blocked queue (WAIT_REG_MEM, a retry fault) waits for
            // memory, not a doorbell: polled as before.
            if idle_ns >= arm_ns && !g.queues.iter().any(|s| s.wait == Wait::Blocked) {
                // Idle long enough: trap the doorbells rather than poll
                // them.  Their VMs (no allocation failure can leave one out).
                let mut vms: KVec<Arc<Vm>> = KVec::new();
                let complete = vms.reserve(g.queues.len(), GFP_KERNEL).is_ok();
                for s in g.queues.iter() {
                    if complete && !vms.iter().any(|v| Arc::ptr_eq(v, &s.hqd.vm)) {
                        let _ = vms.push_within_capacity(s.hqd.vm.clone());
                    }
                }
                drop(g);
                if complete && self.arm_doorbells(&vms) {
                    drop(vms);
                    // Read the doorbells again: a write before a page was
                    // write-protected is seen here, any later one traps
                    // and kicks (`kicks` moves past `seen`).
                    if self.serve_round(&mut irqs, ROUND_TURNS, Wake::Doorbells) {
                        busy = Instant::<Monotonic>::now();
                        continue;
                    }
                    let mut g = self.inner.lock();
                    if g.stop {
                        return;
                    }
                    if g.kicks == seen {
                        self.stats.sleeps.fetch_add(1, Relaxed);
                        // Until a doorbell traps, a queue changes, or the
                        // safety poll of write pointers (`FULL_POLL_MS`).
                        let _ = self.wake.wait_interruptible_timeout(&mut g, msecs_to_jiffies(FULL_POLL_MS as u32));
                    }
                    continue;
                }
                drop(vms);
                g = self.inner.lock();
                if g.stop {
                    return;
                }
                if g.kicks != seen {
                    continue;
                }
            }
            match poll {
                sched::Poll::Spin => {
                    drop(g);
                    kabi::cond_resched();
                }
                sched::Poll::SleepUs(us) => {
                    drop(g);
                    self.stats.sleeps.fetch_add(1, Relaxed);
                    fsleep(Delta::from_micros(i64::from(us)));
                }
                sched::Poll::WaitMs(ms) => {
                    self.stats.sleeps.fetch_add(1, Relaxed);
                    let _ = self.wake.wait_interruptible_timeout(&mut g, msecs_to_jiffies(ms));
                }
            }
        }
    }
}

/// Where a GPU's doorbell traps go ([`kabi::DoorbellTarget`], held by
/// every VM's doorbell watch and so by the VMAs that map the doorbells):
/// the workers while the engines run, none after.
#[pin_data]
pub(crate) struct Bell {
    /// The workers.  Lock order: taken in a trapped doorbell write's fault
    /// (mmap_lock or the VMA lock, then the doorbell page's lock held),
    /// with no lock of this driver held; `Engine::inner` (1) of each
    /// worker in turn under it.  Never taken under a lock of this driver.
    #[pin]
    workers: Mutex<KVec<Arc<Engine>>>,
}

impl Bell {
    /// A bell with no workers yet.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Bell {
                workers <- new_mutex!(KVec::new(), "Bell::workers"),
            }),
            GFP_KERNEL,
        )
    }
}

impl kabi::DoorbellTarget for Bell {
    fn rung(&self, watch: usize, offset: usize) {
        for w in self.workers.lock().iter() {
            w.ring(watch, offset);
        }
    }
}

/// One GPU's engines: a worker per online CPU (at most [`MAX_WORKERS`]),
/// each a scheduler thread with its own queues; a new queue goes to the
/// worker with the fewest.
pub(crate) struct Engines {
    /// The workers.
    workers: KVec<Arc<Engine>>,
    /// Their dispatches' workgroups, shared.
    pool: Arc<shader::Pool>,
}

impl Engines {
    /// The worker serving `hqd`.
    fn of(&self, hqd: &Hqd) -> &Engine {
        // `hqd.worker` is the index of the worker that loaded it.
        &self.workers[hqd.worker]
    }

    /// `hqd_load` on the least loaded worker.
    pub(crate) fn load(&self, vm: Arc<Vm>, desc: &QueueDesc) -> Result<Arc<Hqd>> {
        self.least_busy()?.load(vm, desc)
    }

    /// The worker with the fewest queues ([`sched::spread`]).
    fn least_busy(&self) -> Result<&Engine> {
        let w = sched::spread(self.workers.iter().map(|w| w.inner.lock().queues.len())).ok_or(ENODEV)?;
        Ok(&self.workers[w])
    }

    /// [`Self::load`] as one of a batch (the queues of a runlist the
    /// CP's scheduler maps in one go): the worker is not woken until
    /// [`Self::wake_all`], so it looks at its queues once for the batch
    /// rather than once per queue loaded.
    pub(crate) fn load_quiet(&self, vm: Arc<Vm>, desc: &QueueDesc) -> Result<Arc<Hqd>> {
        self.least_busy()?.load_then(vm, desc, false)
    }

    /// Wakes every worker as a load does (ends a batch of
    /// [`Self::load_quiet`]).
    pub(crate) fn wake_all(&self) {
        for w in self.workers.iter() {
            w.wake_up();
        }
    }

    /// `hqd_destroy` ([`Engine::destroy`]).
    pub(crate) fn destroy(&self, hqd: Arc<Hqd>) -> Result {
        let w = hqd.worker;
        self.workers[w].destroy(hqd)
    }

    /// The queue's state now ([`Engine::state`]).
    pub(crate) fn state(&self, hqd: &Hqd) -> HqdState {
        self.of(hqd).state(hqd)
    }

    /// `hws_hang` on every worker ([`Engine::hang`]).
    pub(crate) fn hang(&self) {
        for w in self.workers.iter() {
            w.hang();
        }
    }

    /// `gpu_reset` on every worker ([`Engine::reset`]).
    pub(crate) fn reset(&self) -> Result {
        for w in self.workers.iter() {
            w.reset()?;
        }
        Ok(())
    }

    /// Times the workers went to sleep.
    pub(crate) fn sleeps(&self) -> u64 {
        self.workers.iter().map(|w| w.sleeps()).sum()
    }
}

/// A GPU's engines with their threads; stops the threads on drop.
pub(crate) struct EngineHandle {
    /// The workers.
    engines: Engines,
}

impl EngineHandle {
    /// The engines of `core`: a worker per online CPU, threads started.
    pub(crate) fn start(core: &Arc<Core>) -> Result<Self> {
        let n = kabi::online_cpus().clamp(1, MAX_WORKERS);
        let pool = shader::Pool::new(n as usize)?;
        let mut h = EngineHandle {
            engines: Engines {
                workers: KVec::with_capacity(n as usize, GFP_KERNEL)?,
                pool: pool.clone(),
            },
        };
        for i in 0..n {
            let engine = Engine::new(core, i as usize, pool.clone())?;
            // Dropping `h` on an error stops the threads started so far.
            h.engines.workers.push(engine.clone(), GFP_KERNEL)?;
            let thread = kabi::Thread::start(engine.clone(), c"engine", core.index(), i)?;
            *engine.thread.lock() = Some(thread);
        }
        let mut all = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        for w in h.engines.workers.iter() {
            all.push(w.clone(), GFP_KERNEL)?;
        }
        pool.set_engines(all);
        let mut rung = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        for w in h.engines.workers.iter() {
            rung.push(w.clone(), GFP_KERNEL)?;
        }
        *core.bell().workers.lock() = rung;
        Ok(h)
    }

    /// The engines.
    pub(crate) fn engine(&self) -> &Engines {
        &self.engines
    }

    /// Sends interrupts to rkfd from now on.
    pub(crate) fn set_kfd(&self, kfd: kabi::KfdIrq) {
        for w in self.engines.workers.iter() {
            *w.irq.lock() = IrqTarget::Kfd(kfd);
        }
    }

    /// Records interrupts instead (KUnit).
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn record_irqs(&self) {
        for w in self.engines.workers.iter() {
            *w.irq.lock() = IrqTarget::Record(KVec::new());
        }
    }

    /// The interrupts recorded so far (KUnit), taken, worker by worker.
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn take_irqs(&self) -> KVec<IhEntry> {
        let mut all = KVec::new();
        for w in self.engines.workers.iter() {
            if let IrqTarget::Record(v) = &mut *w.irq.lock() {
                for e in core::mem::take(v).iter() {
                    let _ = all.push(*e, GFP_KERNEL);
                }
            }
        }
        all
    }

    /// Stops the threads and the interrupts: after this, nothing is sent
    /// to rkfd.  Idempotent.
    pub(crate) fn shutdown(&self) {
        // Doorbell traps wake no worker from now on (and the bell, which
        // VMAs may keep, no longer keeps the workers).
        if let Some(w) = self.engines.workers.first() {
            let old = core::mem::take(&mut *w.core.bell().workers.lock());
            drop(old);
        }
        for w in self.engines.workers.iter() {
            let mut g = w.inner.lock();
            g.stop = true;
            w.kick(&mut g);
        }
        for w in self.engines.workers.iter() {
            // Waits for the thread to return.
            let thread = w.thread.lock().take();
            drop(thread);
            *w.irq.lock() = IrqTarget::None;
        }
        // The helpers' workgroups, and the workers the pool refers to.
        self.engines.pool.clear();
    }
}

impl Drop for EngineHandle {
    fn drop(&mut self) {
        self.shutdown();
        // Queues rkfd did not destroy (it destroys them all before the
        // device goes): dropped here, after the threads.
        for w in self.engines.workers.iter() {
            let left = core::mem::take(&mut w.inner.lock().queues);
            if !left.is_empty() {
                pr_warn!("vgpu engine: {} queues still loaded at removal\n", left.len());
            }
            drop(left);
        }
    }
}

#[kunit_tests(amdgpu_vgpu_engine)]
mod tests {
    use super::*;
    use crate::{
        mem::{
            AllocRequest,
            Mem, //
        },
        profile::PROFILES,
        sysmem::SystemMemory, //
    };

    // KUnit's `assert!` ends a failing test's thread at once, without
    // running destructors: an `EngineHandle` would never stop its threads,
    // which then run this module's code after `rmmod` unloaded it (an
    // oops).  These fail the test by returning an error instead, so
    // everything the test owns is dropped first.

    /// `assert!` that returns `Err(EINVAL)`.
    macro_rules! check {
        ($cond:expr $(,)?) => {
            if !$cond {
                pr_err!("{}:{}: check failed: {}\n", file!(), line!(), stringify!($cond));
                return Err(EINVAL);
            }
        };
    }

    /// `assert_eq!` that returns `Err(EINVAL)`.
    macro_rules! check_eq {
        ($left:expr, $right:expr $(,)?) => {
            match (&$left, &$right) {
                (l, r) => {
                    if *l != *r {
                        pr_err!(
                            "{}:{}: check failed: {} == {}: {:?} != {:?}\n",
                            file!(),
                            line!(),
                            stringify!($left),
                            stringify!($right),
                            l,
                            r
                        );
                        return Err(EINVAL);
                    }
                }
            }
        };
    }
    const GTT: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    const VRAM: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;

    // An AQL queue's layout in one 4-page GTT object.
    const RING: u64 = 0x10_0000;
    const RPTR: u64 = RING + PAGE;
    const WPTR: u64 = RPTR + 8;
    const SIGS: u64 = RING + 2 * PAGE;
    const EVENTS: u64 = RING + 3 * PAGE;

    /// A GPU (not registered with rkfd) and a VM on it.
    fn gpu(index: u32) -> Result<(Arc<Core>, Arc<Vm>)> {
        let core = Core::new(&PROFILES[0], index, 64 << 20, &SystemMemory::new()?)?;
        let vm = Vm::new(core.clone())?;
        Ok((core, vm))
    }

    /// A mapped object of `pages` pages at `va`.
    fn map(vm: &Vm, va: u64, pages: u64, flags: u32) -> Result<Arc<Mem>> {
        let m = vm.alloc(&AllocRequest {
            va,
            size: pages * PAGE,
            user_addr: 0,
            flags,
        })?;
        vm.map(&m)?;
        Ok(m)
    }

    fn w16(vm: &Vm, va: u64, v: u16) -> Result {
        VmMem::new(vm).write_u16(va, v).map_err(|_| EFAULT)
    }
    fn w32(vm: &Vm, va: u64, v: u32) -> Result {
        VmMem::new(vm).write_u32(va, v).map_err(|_| EFAULT)
    }
    fn w64(vm: &Vm, va: u64, v: u64) -> Result {
        VmMem::new(vm).write_u64(va, v).map_err(|_| EFAULT)
    }
    fn r32(vm: &Vm, va: u64) -> u32 {
        VmMem::new(vm).read_u32(va).unwrap_or(0xdead)
    }
    fn r64(vm: &Vm, va: u64) -> u64 {
        VmMem::new(vm).read_u64(va).unwrap_or(0xdead)
    }

    /// Waits up to 20 s for `f` (a bound for a broken engine, not a timing
    /// assertion).
    fn wait_for(mut f: impl FnMut() -> bool) -> bool {
        for _ in 0..20_000 {
            if f() {
                return true;
            }
            fsleep(Delta::from_micros(1000));
        }
        f()
    }

    fn aql_desc(doorbell_id: u32, ring: u64, ring_size: u64, rptr: u64, wptr: u64) -> QueueDesc {
        QueueDesc {
            ty: uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            doorbell_offset: 8 * doorbell_id,
            priority: 7,
            percentage: 100,
            ring_base: ring,
            ring_size,
            rptr_va: rptr,
            wptr_va: wptr,
            ..Default::default()
        }
    }

    /// An AQL queue's memory with INVALID headers.
    fn aql_queue_memory(vm: &Vm) -> Result<Arc<Mem>> {
        let m = map(vm, RING, 4, GTT)?;
        for i in 0..PAGE / 64 {
            w16(vm, RING + 64 * i, aql::TYPE_INVALID)?;
        }
        Ok(m)
    }

    /// Signal `i` in SIGS: `value`, with an event mailbox if `event != 0`.
    fn signal(vm: &Vm, i: u64, value: u64, event: u32) -> Result<u64> {
        let s = SIGS + 64 * i;
        w64(vm, s, 1)?;
        w64(vm, s + aql::SIGNAL_VALUE, value)?;
        let mailbox = if event != 0 { EVENTS + 8 * u64::from(event) } else { 0 };
        w64(vm, s + aql::SIGNAL_MAILBOX, mailbox)?;
        w32(vm, s + aql::SIGNAL_EVENT_ID, event)?;
        Ok(s)
    }

    /// Writes packet `index` of a `slots`-slot ring at `ring` (header last)
    /// and publishes the write index.
    fn submit(vm: &Vm, ring: u64, slots: u64, wptr: u64, index: u64, ty: u16, completion: u64) -> Result {
        let p = ring + (index % slots) * 64;
        for i in 1..7 {
            w64(vm, p + 8 * i, 0)?;
        }
        w64(vm, p + 56, completion)?;
        w16(vm, p + 2, 0)?;
        w32(vm, p + 4, 0)?;
        w16(vm, p, ty | aql::HEADER_BARRIER | (2 << aql::HEADER_ACQUIRE_SHIFT) | (2 << aql::HEADER_RELEASE_SHIFT))?;
        w64(vm, wptr, index + 1)
    }

    fn collect(h: &EngineHandle, into: &mut KVec<IhEntry>) -> Result {
        for e in h.take_irqs().iter() {
            into.push(*e, GFP_KERNEL)?;
        }
        Ok(())
    }

    #[test]
    fn barrier_packet_signals_through_the_thread() -> Result {
        let (core, vm) = gpu(0x40)?;
        let h = EngineHandle::start(&core)?;
        h.record_irqs();
        let _mem = aql_queue_memory(&vm)?;
        let sig = signal(&vm, 0, 1, 5)?;
        // The VM's own PASID (allocated with it) tags its interrupts.
        let pasid = vm.pasid();
        check!(pasid != 0);
        let desc = QueueDesc {
            doorbell_offset: 8 * 3,
            ..aql_desc(3, RING, PAGE, RPTR, WPTR)
        };
        let hqd = h.engine().load(vm, &desc)?;
        check_eq!(hqd.desc().doorbell_id(), 3);
        // The queue holds the VM: the test's reference is gone.
        let vm = &hqd.vm;
        submit(vm, RING, 64, WPTR, 0, aql::TYPE_BARRIER_AND, sig)?;
        // The doorbell, as ROCr rings it (the packet's index).
        vm.doorbell_pages().write_u64(8 * 3, 0)?;
        check!(wait_for(|| r64(vm, sig + aql::SIGNAL_VALUE) == 0));
        let mut irqs = KVec::new();
        check!(wait_for(|| collect(&h, &mut irqs).is_ok() && !irqs.is_empty()));
        check_eq!(r64(vm, EVENTS + 8 * 5), 5);
        check_eq!(r64(vm, RPTR), 1);
        check_eq!(irqs.len(), 1);
        check_eq!(
            irqs[0],
            IhEntry {
                source: IH_SIGNAL,
                pasid,
                context_id: 5,
                ..Default::default()
            }
        );
        vm.doorbell_pages().write_u64(8 * 3, 0x77)?;
        let st = h.engine().state(&hqd);
        check_eq!((st.rptr, st.wptr, st.packets, st.active, st.error), (1, 1, 1, true, 0));
        check_eq!(st.doorbell, 0x77);

        // Wake-up latency: a packet published without a doorbell (kernel
        // writes do not trap) after the engine idled for a while: the
        // poll finds it before the worker arms its traps
        // (`doorbell_arm_us`), the safety poll of write pointers
        // (`FULL_POLL_MS`) after; printed, not asserted.  User doorbells:
        // kfd-queue-bench.
        for (n, idle_ms) in [(1u64, 0u32), (2, 5), (3, 50), (4, 500)] {
            fsleep(Delta::from_micros(i64::from(idle_ms) * 1000));
            w64(vm, sig + aql::SIGNAL_VALUE, 1)?;
            let t = Instant::<Monotonic>::now();
            submit(vm, RING, 64, WPTR, n, aql::TYPE_BARRIER_AND, sig)?;
            let mut polls = 0u32;
            while r64(vm, sig + aql::SIGNAL_VALUE) != 0 && polls < 2_000_000 {
                polls += 1;
                fsleep(Delta::from_micros(10));
            }
            pr_info!(
                "engine bench: doorbell-to-completion after {} ms idle: {} us\n",
                idle_ms,
                t.elapsed().as_nanos() / 1000
            );
        }
        pr_info!("engine bench: the engine thread slept {} times\n", h.engine().sleeps());
        h.engine().destroy(hqd)?;
        Ok(())
    }

    // A kernel in a 2-page GTT object: its v3 kernel descriptor at KOBJ,
    // kernarg (one pointer) at KOBJ + 128, code at KOBJ + 256, output at
    // KOBJ + PAGE.
    const KOBJ: u64 = 0x20_0000;
    const KERNARG: u64 = KOBJ + 128;
    const OUT: u64 = KOBJ + PAGE;
    /// For workgroups of 64: out[g] = g + 1 with g = workgroup_id.x * 64 +
    /// lid, each work-item its own word, so the result does not depend on
    /// the order in which workers run the workgroups (llvm-mc-15
    /// -mcpu=gfx90a): s_load_dwordx2 s[2:3], s[0:1], 0; s_lshl_b32 s5, s4,
    /// 6; v_add_u32 v2, s5, v0; v_lshlrev_b32 v1, 2, v2; v_add_u32 v3, 1,
    /// v2; s_waitcnt lgkmcnt(0); global_store_dword v1, v3, s[2:3];
    /// s_endpgm.
    const STORE_IDS: [u32; 11] = [
        0xc006_0080,
        0,
        0x8e05_8604,
        0x6804_0005,
        0x2402_0482,
        0x6806_0481,
        0xbf8c_c07f,
        0xdc70_8000,
        0x0002_0301,
        0xbf81_0000,
        0,
    ];
    /// s_branch -1: never ends.
    const FOREVER: [u32; 1] = [0xbf82_ffff];

    /// Writes the kernel: `code`, kernarg pointing at `out`.
    fn kernel(vm: &Vm, code: &[u32], out: u64) -> Result {
        for i in 0..16 {
            w32(vm, KOBJ + 4 * i, 0)?;
        }
        w64(vm, KOBJ + 16, 256)?; // kernel_code_entry_byte_offset
        w32(vm, KOBJ + 52, 4 << 1 | 1 << 7)?; // rsrc2: 4 user SGPRs, workgroup id x (s4)
        w16(vm, KOBJ + 56, 8)?; // kernarg segment pointer (s[0:1])
        for (i, w) in code.iter().enumerate() {
            w32(vm, KOBJ + 256 + 4 * i as u64, *w)?;
        }
        w64(vm, KERNARG, out)
    }

    /// Writes a one-dimensional KERNEL_DISPATCH of the kernel as packet `index`.
    fn dispatch(vm: &Vm, index: u64, grid: u32, wg: u16, completion: u64) -> Result {
        dispatch_patched(vm, index, grid, wg, completion, &[])
    }

    /// [`dispatch`] with the packet's 32-bit words at the byte offsets of
    /// `patch` replaced before the header is written.
    fn dispatch_patched(vm: &Vm, index: u64, grid: u32, wg: u16, completion: u64, patch: &[(u64, u32)]) -> Result {
        let p = RING + (index % 64) * 64;
        w16(vm, p + 2, 1)?;
        for (o, v) in [(4, wg), (6, 1), (8, 1), (10, 0)] {
            w16(vm, p + o, v)?;
        }
        for (o, v) in [(12, grid), (16, 1), (20, 1), (24, 0), (28, 0)] {
            w32(vm, p + o, v)?;
        }
        for (o, v) in [(32, KOBJ), (40, KERNARG), (48, 0), (56, completion)] {
            w64(vm, p + o, v)?;
        }
        for &(o, v) in patch {
            w32(vm, p + o, v)?;
        }
        let h = aql::TYPE_KERNEL_DISPATCH | aql::HEADER_BARRIER;
        w16(vm, p, h | (2 << aql::HEADER_ACQUIRE_SHIFT) | (2 << aql::HEADER_RELEASE_SHIFT))?;
        w64(vm, WPTR, index + 1)
    }

    #[test]
    fn kernel_dispatch_runs_on_the_interpreter() -> Result {
        let (core, vm) = gpu(0x44)?;
        let h = EngineHandle::start(&core)?;
        h.record_irqs();
        let _mem = aql_queue_memory(&vm)?;
        let _k = map(&vm, KOBJ, 2, GTT)?;
        kernel(&vm, &STORE_IDS, OUT)?;
        for i in 0..128u64 {
            w32(&vm, OUT + 4 * i, 0)?;
        }
        let sig = signal(&vm, 0, 1, 0)?;
        let hqd = h.engine().load(vm.clone(), &aql_desc(20, RING, PAGE, RPTR, WPTR))?;
        // 100 work-items in workgroups of 64: the second is partial (its
        // work-items 36..64 do not run).  The workgroups may run on
        // different workers, in either order.
        dispatch(&vm, 0, 100, 64, sig)?;
        check!(wait_for(|| r64(&vm, sig + aql::SIGNAL_VALUE) == 0));
        let st = h.engine().state(&hqd);
        check_eq!((st.error, st.packets, st.rptr), (0, 1, 1));
        for i in 0..128u32 {
            let want = if i < 100 { i + 1 } else { 0 };
            check_eq!(r32(&vm, OUT + 4 * u64::from(i)), want);
        }
        h.engine().destroy(hqd)?;
        Ok(())
    }

    #[test]
    fn a_shader_that_never_ends_does_not_hold_up_destroy() -> Result {
        let (core, vm) = gpu(0x45)?;
        let h = EngineHandle::start(&core)?;
        h.record_irqs();
        let _mem = aql_queue_memory(&vm)?;
        let _k = map(&vm, KOBJ, 2, GTT)?;
        kernel(&vm, &FOREVER, OUT)?;
        let sig = signal(&vm, 0, 1, 0)?;
        let hqd = h.engine().load(vm.clone(), &aql_desc(21, RING, PAGE, RPTR, WPTR))?;
        dispatch(&vm, 0, 64, 64, sig)?;
        fsleep(Delta::from_micros(200_000));
        let st = h.engine().state(&hqd);
        check_eq!((st.error, st.packets, st.active), (0, 0, true));
        let t = Instant::<Monotonic>::now();
        h.engine().destroy(hqd)?;
        let ms = t.elapsed().as_millis();
        pr_info!("engine: destroy of a queue running a shader that never ends took {} ms\n", ms);
        // One time slice (4096 instructions); seconds would be a bug even under TCG.
        check!(ms < 5000);
        check_eq!(r64(&vm, sig + aql::SIGNAL_VALUE), 1);
        Ok(())
    }

    #[test]
    fn a_shader_fault_is_a_vm_fault_and_a_queue_error() -> Result {
        let (core, vm) = gpu(0x46)?;
        let h = EngineHandle::start(&core)?;
        h.record_irqs();
        let _mem = aql_queue_memory(&vm)?;
        let _k = map(&vm, KOBJ, 2, GTT)?;
        kernel(&vm, &STORE_IDS, 0x90_0000)?;
        let sig = signal(&vm, 0, 1, 0)?;
        let hqd = h.engine().load(vm.clone(), &aql_desc(22, RING, PAGE, RPTR, WPTR))?;
        dispatch(&vm, 0, 64, 64, sig)?;
        check!(wait_for(|| h.engine().state(&hqd).error != 0));
        check_eq!(h.engine().state(&hqd).error, QUEUE_ERROR_VM_FAULT);
        let mut irqs = KVec::new();
        check!(wait_for(|| collect(&h, &mut irqs).is_ok() && irqs.len() >= 2));
        check_eq!(
            irqs[0],
            IhEntry {
                source: IH_VM_FAULT,
                // The VM's own PASID, as on every entry of its queues.
                pasid: vm.pasid(),
                data: VM_FAULT_NO_RETRY | VM_FAULT_WRITE,
                addr: 0x90_0000,
                ..Default::default()
            }
        );
        check_eq!((irqs[1].source, irqs[1].context_id, irqs[1].data, irqs[1].pasid), (IH_QUEUE_ERROR, 22, QUEUE_ERROR_VM_FAULT, vm.pasid()));
        check_eq!(r64(&vm, sig + aql::SIGNAL_VALUE), 1);
        h.engine().destroy(hqd)?;
        Ok(())
    }

    #[test]
    fn queue_errors_and_vm_faults_are_reported() -> Result {
        let (core, vm) = gpu(0x41)?;
        let h = EngineHandle::start(&core)?;
        h.record_irqs();
        let _mem = aql_queue_memory(&vm)?;
        let sig = signal(&vm, 0, 1, 0)?;
        let cases = [
            // A dispatch of nothing (no dimensions, no kernel object): the
            // shader engine refuses it.
            (aql::TYPE_KERNEL_DISPATCH, sig, QUEUE_ERROR_INVALID_PACKET),
            (aql::TYPE_AGENT_DISPATCH, sig, QUEUE_ERROR_UNSUPPORTED),
            (7, sig, QUEUE_ERROR_INVALID_PACKET),
            (aql::TYPE_BARRIER_AND, 0x90_0000, QUEUE_ERROR_VM_FAULT),
        ];
        for (i, (ty, completion, want)) in cases.into_iter().enumerate() {
            let qid = 10 + i as u32;
            // Each queue gets a fresh ring.
            for s in 0..PAGE / 64 {
                w16(&vm, RING + 64 * s, aql::TYPE_INVALID)?;
            }
            w64(&vm, WPTR, 0)?;
            let hqd = h.engine().load(vm.clone(), &aql_desc(qid, RING, PAGE, RPTR, WPTR))?;
            submit(&vm, RING, 64, WPTR, 0, ty, completion)?;
            check!(wait_for(|| h.engine().state(&hqd).error != 0));
            let st = h.engine().state(&hqd);
            check_eq!((st.error, st.active, st.packets, st.rptr), (want, false, 0, 0));
            check_eq!(r64(&vm, sig + aql::SIGNAL_VALUE), 1);
            let mut irqs = KVec::new();
            let n = if want == QUEUE_ERROR_VM_FAULT { 2 } else { 1 };
            check!(wait_for(|| collect(&h, &mut irqs).is_ok() && irqs.len() >= n));
            if want == QUEUE_ERROR_VM_FAULT {
                check_eq!(
                    irqs[0],
                    IhEntry {
                        source: IH_VM_FAULT,
                        pasid: vm.pasid(),
                        data: VM_FAULT_NO_RETRY | VM_FAULT_WRITE,
                        addr: 0x90_0000 + aql::SIGNAL_VALUE,
                        ..Default::default()
                    }
                );
            }
            check_eq!(
                irqs[n - 1],
                IhEntry {
                    source: IH_QUEUE_ERROR,
                    // The hardware names the queue by its doorbell index.
                    context_id: qid,
                    doorbell_id: qid,
                    pasid: vm.pasid(),
                    data: want,
                    ..Default::default()
                }
            );
            h.engine().destroy(hqd)?;
        }
        // Types and rings the engines cannot serve.
        let bad = [
            QueueDesc { ty: 9, ..aql_desc(1, RING, PAGE, RPTR, WPTR) },
            aql_desc(1, RING, 3000, RPTR, WPTR),
            aql_desc(1, RING + 8, PAGE, RPTR, WPTR),
        ];
        for d in bad.iter() {
            check!(matches!(h.engine().load(vm.clone(), d), Err(e) if e == EINVAL));
        }
        // A VM of another GPU.
        let (_other, other_vm) = gpu(0x42)?;
        let d = aql_desc(1, RING, PAGE, RPTR, WPTR);
        check!(matches!(h.engine().load(other_vm, &d), Err(e) if e == EINVAL));
        Ok(())
    }

    /// Writes a three-dimensional KERNEL_DISPATCH of the kernel as packet
    /// 0 with the given sizes (a process may write any).
    fn dispatch_sized(vm: &Vm, wg: [u16; 3], grid: [u32; 3], private: u32, completion: u64) -> Result {
        let p = RING;
        w16(vm, p + 2, 3)?;
        for (o, v) in [(4, wg[0]), (6, wg[1]), (8, wg[2]), (10, 0)] {
            w16(vm, p + o, v)?;
        }
        for (o, v) in [(12, grid[0]), (16, grid[1]), (20, grid[2]), (24, private), (28, 0)] {
            w32(vm, p + o, v)?;
        }
        for (o, v) in [(32, KOBJ), (40, KERNARG), (48, 0), (56, completion)] {
            w64(vm, p + o, v)?;
        }
        let h = aql::TYPE_KERNEL_DISPATCH | aql::HEADER_BARRIER;
        w16(vm, p, h | (2 << aql::HEADER_ACQUIRE_SHIFT) | (2 << aql::HEADER_RELEASE_SHIFT))?;
        w64(vm, WPTR, 1)
    }

    /// Sizes at the ends of their fields are queue errors: 65535^3
    /// work-items per workgroup (overflows u32), u32::MAX bytes of scratch
    /// per work-item from the packet or the kernel descriptor (overflows
    /// when rounded up).  Each was a panic (a BUG(): the kernel checks
    /// Rust overflows) before the engine computed them in range.
    #[test]
    fn dispatch_sizes_at_their_limits_are_queue_errors() -> Result {
        let (core, vm) = gpu(0x47)?;
        let h = EngineHandle::start(&core)?;
        let _mem = aql_queue_memory(&vm)?;
        let _k = map(&vm, KOBJ, 2, GTT)?;
        let sig = signal(&vm, 0, 1, 0)?;
        let max = u16::MAX;
        let cases = [
            ([max, max, max], [u32::MAX; 3], 0, 0, QUEUE_ERROR_INVALID_PACKET),
            ([64, 1, 1], [64, 1, 1], u32::MAX, 0, QUEUE_ERROR_UNSUPPORTED),
            ([64, 1, 1], [64, 1, 1], 0, u32::MAX, QUEUE_ERROR_UNSUPPORTED),
        ];
        for (i, (wg, grid, private, kd_private, want)) in cases.into_iter().enumerate() {
            kernel(&vm, &STORE_IDS, OUT)?;
            w32(&vm, KOBJ + 4, kd_private)?; // private_segment_fixed_size
            for s in 0..PAGE / 64 {
                w16(&vm, RING + 64 * s, aql::TYPE_INVALID)?;
            }
            w64(&vm, WPTR, 0)?;
            let hqd = h.engine().load(vm.clone(), &aql_desc(30 + i as u32, RING, PAGE, RPTR, WPTR))?;
            dispatch_sized(&vm, wg, grid, private, sig)?;
            check!(wait_for(|| h.engine().state(&hqd).error != 0));
            let st = h.engine().state(&hqd);
            check_eq!((st.error, st.active, st.packets), (want, false, 0));
            check_eq!(r64(&vm, sig + aql::SIGNAL_VALUE), 1);
            h.engine().destroy(hqd)?;
        }
        Ok(())
    }

    #[test]
    fn sdma_and_pm4_queues_run() -> Result {
        let (core, vm) = gpu(0x43)?;
        let h = EngineHandle::start(&core)?;
        h.record_irqs();
        const SRING: u64 = 0x20_0000;
        const SRC: u64 = 0x30_0000;
        const VR: u64 = 0x40_0000;
        const DST: u64 = 0x50_0000;
        const LEN: u64 = 64 * 1024 + 100;
        let _ring = map(&vm, SRING, 2, GTT)?;
        let _src = map(&vm, SRC, 17, GTT)?;
        let _vram = map(&vm, VR, 17, VRAM)?;
        let _dst = map(&vm, DST, 17, GTT)?;
        let mut pattern = KVec::from_elem(0u8, LEN as usize, GFP_KERNEL)?;
        for (i, b) in pattern.iter_mut().enumerate() {
            *b = (i * 13 + i / 4096) as u8;
        }
        VmMem::new(&vm).write(SRC, &pattern).map_err(|_| EFAULT)?;
        let (rptr, wptr, fence) = (SRING + PAGE, SRING + PAGE + 8, SRING + PAGE + 64);
        let copy = |dst: u64, src: u64| {
            [
                sdma::header(sdma::OP_COPY, 0),
                (LEN - 1) as u32,
                0,
                src as u32,
                (src >> 32) as u32,
                dst as u32,
                (dst >> 32) as u32,
            ]
        };
        let mut packets = KVec::new();
        packets.extend_from_slice(&copy(VR, SRC), GFP_KERNEL)?;
        packets.extend_from_slice(&copy(DST + 3, VR), GFP_KERNEL)?;
        packets.extend_from_slice(&[sdma::header(sdma::OP_FENCE, 0), fence as u32, 0, 2015], GFP_KERNEL)?;
        packets.extend_from_slice(&[sdma::header(sdma::OP_TRAP, 0), 9], GFP_KERNEL)?;
        for (i, d) in packets.iter().enumerate() {
            w32(&vm, SRING + 4 * i as u64, *d)?;
        }
        let desc = QueueDesc {
            ty: uapi::KFD_IOC_QUEUE_TYPE_SDMA,
            doorbell_offset: 8,
            percentage: 100,
            ring_base: SRING,
            ring_size: PAGE,
            rptr_va: rptr,
            wptr_va: wptr,
            ..Default::default()
        };
        let sdma_q = h.engine().load(vm.clone(), &desc)?;
        w64(&vm, wptr, 4 * packets.len() as u64)?;
        check!(wait_for(|| r32(&vm, fence) == 2015));
        let mut out = KVec::from_elem(0u8, LEN as usize, GFP_KERNEL)?;
        VmMem::new(&vm).read(DST + 3, &mut out).map_err(|_| EFAULT)?;
        check!(out[..] == pattern[..]);
        let mut irqs = KVec::new();
        check!(wait_for(|| collect(&h, &mut irqs).is_ok() && !irqs.is_empty()));
        check_eq!((irqs[0].source, irqs[0].context_id), (IH_SIGNAL, 9));
        check!(wait_for(|| r64(&vm, rptr) == 4 * packets.len() as u64));
        h.engine().destroy(sdma_q)?;

        // PM4: WRITE_DATA, then RELEASE_MEM with an interrupt.
        let pm4 = [
            pm4::packet3(pm4::OP_WRITE_DATA, 3),
            5 << 8,
            (DST + 8) as u32,
            0,
            0x600d,
            pm4::packet3(pm4::OP_RELEASE_MEM, 6),
            0,
            (1 << 29) | (2 << 24),
            DST as u32,
            0,
            0xc0de,
            0,
            44,
        ];
        for (i, d) in pm4.iter().enumerate() {
            w32(&vm, SRING + 4 * i as u64, *d)?;
        }
        w64(&vm, wptr, pm4.len() as u64)?;
        let desc = QueueDesc {
            ty: uapi::KFD_IOC_QUEUE_TYPE_COMPUTE,
            ..desc
        };
        let pm4_q = h.engine().load(vm.clone(), &desc)?;
        check!(wait_for(|| r32(&vm, DST) == 0xc0de));
        check_eq!(r32(&vm, DST + 8), 0x600d);
        let mut irqs = KVec::new();
        check!(wait_for(|| collect(&h, &mut irqs).is_ok() && !irqs.is_empty()));
        check_eq!((irqs[0].source, irqs[0].context_id), (IH_SIGNAL, 44));
        let st = h.engine().state(&pm4_q);
        check_eq!((st.rptr, st.wptr, st.packets), (4 * pm4.len() as u64, 4 * pm4.len() as u64, 2));
        h.engine().destroy(pm4_q)?;
        Ok(())
    }

    #[test]
    fn hang_and_reset() -> Result {
        let (core, vm) = gpu(0x44)?;
        let h = EngineHandle::start(&core)?;
        let _mem = aql_queue_memory(&vm)?;
        let sig = signal(&vm, 0, 1, 0)?;
        let d = aql_desc(1, RING, PAGE, RPTR, WPTR);
        let q1 = h.engine().load(vm.clone(), &d)?;
        h.engine().hang();
        // A hung scheduler does not answer preemption; the queue goes anyway.
        check!(matches!(h.engine().destroy(q1), Err(e) if e == ETIME));
        let q2 = h.engine().load(vm.clone(), &d)?;
        submit(&vm, RING, 64, WPTR, 0, aql::TYPE_BARRIER_AND, sig)?;
        fsleep(Delta::from_micros(20_000));
        // Not served while hung.
        check_eq!(r64(&vm, sig + aql::SIGNAL_VALUE), 1);
        check!(!h.engine().state(&q2).active);
        h.engine().reset()?;
        let st = h.engine().state(&q2);
        check_eq!((st.error, st.active, st.packets), (QUEUE_ERROR_RESET, false, 0));
        // The scheduler serves new queues again.
        let q3 = h.engine().load(vm.clone(), &d)?;
        check!(wait_for(|| r64(&vm, sig + aql::SIGNAL_VALUE) == 0));
        h.engine().destroy(q2)?;
        h.engine().destroy(q3)?;
        Ok(())
    }

    #[test]
    fn destroy_preempts_a_running_queue() -> Result {
        let (core, vm) = gpu(0x47)?;
        let h = EngineHandle::start(&core)?;
        const MB: u64 = 1 << 20;
        let (ring, src, dst) = (0x10_0000u64, 0x100_0000u64, 0x200_0000u64);
        let _r = map(&vm, ring, 2, GTT)?;
        let _s = map(&vm, src, MB / PAGE, GTT)?;
        let _d = map(&vm, dst, MB / PAGE, GTT)?;
        let (rptr, wptr) = (ring + PAGE, ring + PAGE + 8);
        // 64 copies of 1 MiB (far more than one quantum), then a poll
        // that never passes: the queue is busy, then blocked, never done.
        for i in 0..64u64 {
            let p = [sdma::header(sdma::OP_COPY, 0), (MB - 1) as u32, 0, src as u32, 0, dst as u32, 0];
            for (j, d) in p.iter().enumerate() {
                w32(&vm, ring + i * 28 + 4 * j as u64, *d)?;
            }
        }
        let poll = [
            sdma::header(sdma::OP_POLL_REGMEM, 0) | (3 << 28) | (1 << 31),
            (ring + PAGE + 64) as u32,
            0,
            1,
            u32::MAX,
            10,
        ];
        for (j, d) in poll.iter().enumerate() {
            w32(&vm, ring + 64 * 28 + 4 * j as u64, *d)?;
        }
        const END: u64 = 64 * 28 + 24;
        let desc = QueueDesc {
            ty: uapi::KFD_IOC_QUEUE_TYPE_SDMA,
            percentage: 100,
            ring_base: ring,
            ring_size: PAGE,
            rptr_va: rptr,
            wptr_va: wptr,
            ..Default::default()
        };
        let q = h.engine().load(vm.clone(), &desc)?;
        w64(&vm, wptr, END)?;
        check!(wait_for(|| r64(&vm, rptr) > 0));
        h.engine().destroy(q)?;
        let stopped_at = r64(&vm, rptr);
        check!(stopped_at < END);
        // After hqd_destroy the engine no longer touches the queue.
        fsleep(Delta::from_micros(20_000));
        check_eq!(r64(&vm, rptr), stopped_at);
        Ok(())
    }

    /// The engine without its thread: `serve` called directly, for exact
    /// scheduling shares and engine throughput.
    #[test]
    fn priority_shares_and_throughput() -> Result {
        let (core, vm) = gpu(0x45)?;
        let engine = Engine::new(&core, 0, shader::Pool::new(1)?)?;
        const SLOTS: u64 = 1024;
        let (hi_ring, lo_ring, ptrs) = (0x100_0000u64, 0x200_0000u64, 0x300_0000u64);
        let _a = map(&vm, hi_ring, SLOTS * 64 / PAGE, GTT)?;
        let _b = map(&vm, lo_ring, SLOTS * 64 / PAGE, GTT)?;
        let _p = map(&vm, ptrs, 1, GTT)?;
        for (ring, wptr) in [(hi_ring, ptrs + 8), (lo_ring, ptrs + 24)] {
            for i in 0..SLOTS {
                submit(&vm, ring, SLOTS, wptr, i, aql::TYPE_BARRIER_AND, 0)?;
            }
        }
        let hi = engine.load(
            vm.clone(),
            &QueueDesc {
                priority: 15,
                ..aql_desc(1, hi_ring, SLOTS * 64, ptrs, ptrs + 8)
            },
        )?;
        let lo = engine.load(vm.clone(), &aql_desc(2, lo_ring, SLOTS * 64, ptrs + 16, ptrs + 24))?;
        let mut irqs = KVec::new();
        let t = Instant::<Monotonic>::now();
        engine.serve(&mut irqs, 12);
        let (h1, l1) = (engine.state(&hi).packets, engine.state(&lo).packets);
        pr_info!(
            "engine bench: 12 turns, both queues busy: priority 15 got {} packets, priority 7 got {}\n",
            h1,
            l1
        );
        check_eq!(h1 + l1, 12 * u64::from(QUANTUM));
        check!(h1.abs_diff(2 * l1) <= 2 * u64::from(QUANTUM));
        // UPDATE_QUEUE to percentage 0: rkfd unloads the queue, which
        // saves its read pointer (AQL: packets done) in the MQD; the other
        // is served alone.  Loaded again, it resumes there: it does not
        // run its first packets twice (the packet count below).
        let (saved, ring) = lo.saved_rptr();
        check_eq!((saved, ring), (l1, lo_ring));
        engine.destroy(lo)?;
        engine.serve(&mut irqs, 4);
        check_eq!(engine.state(&hi).packets, h1 + 4 * u64::from(QUANTUM));
        let lo_desc = QueueDesc { rptr: saved, ..aql_desc(2, lo_ring, SLOTS * 64, ptrs + 16, ptrs + 24) };
        // A ring the engines cannot serve is refused.
        check!(matches!(engine.load(vm.clone(), &QueueDesc { ring_size: 1000, ..lo_desc }), Err(e) if e == EINVAL));
        let lo = engine.load(vm.clone(), &lo_desc)?;
        check!(engine.state(&lo).active);
        while engine.serve(&mut irqs, ROUND_TURNS) {}
        let ns = t.elapsed().as_nanos().max(1) as u64;
        check_eq!(engine.packets(), 2 * SLOTS);
        pr_info!(
            "engine bench: AQL barrier packets: {} packets/s ({} packets in {} us)\n",
            2 * SLOTS * 1_000_000_000 / ns,
            2 * SLOTS,
            ns / 1000
        );
        engine.destroy(hi)?;
        engine.destroy(lo)?;
        Ok(())
    }

    #[test]
    fn sdma_copy_bandwidth() -> Result {
        let (core, vm) = gpu(0x46)?;
        let engine = Engine::new(&core, 0, shader::Pool::new(1)?)?;
        const MB: u64 = 1 << 20;
        const LEN: u64 = 4 * MB;
        const ROUNDS: u64 = 8;
        let (ring, src, dst) = (0x10_0000u64, 0x100_0000u64, 0x200_0000u64);
        let _r = map(&vm, ring, 2, GTT)?;
        let _s = map(&vm, src, LEN / PAGE, GTT)?;
        let _d = map(&vm, dst, LEN / PAGE, VRAM)?;
        let desc = QueueDesc {
            ty: uapi::KFD_IOC_QUEUE_TYPE_SDMA,
            percentage: 100,
            ring_base: ring,
            ring_size: PAGE,
            rptr_va: ring + PAGE,
            wptr_va: ring + PAGE + 8,
            ..Default::default()
        };
        let q = engine.load(vm.clone(), &desc)?;
        for i in 0..ROUNDS {
            let p = [
                sdma::header(sdma::OP_COPY, 0),
                (LEN - 1) as u32,
                0,
                src as u32,
                0,
                dst as u32,
                0,
            ];
            for (j, d) in p.iter().enumerate() {
                w32(&vm, ring + (i * 28 + 4 * j as u64) % PAGE, *d)?;
            }
        }
        let mut irqs = KVec::new();
        w64(&vm, ring + PAGE + 8, ROUNDS * 28)?;
        let t = Instant::<Monotonic>::now();
        while engine.serve(&mut irqs, ROUND_TURNS) {}
        let sdma_ns = t.elapsed().as_nanos().max(1) as u64;
        check_eq!(engine.state(&q).packets, ROUNDS);
        // memcpy of the same size in the same kernel.
        let a = KVVec::from_elem(1u8, LEN as usize, GFP_KERNEL)?;
        let mut b = KVVec::from_elem(0u8, LEN as usize, GFP_KERNEL)?;
        let t = Instant::<Monotonic>::now();
        for _ in 0..ROUNDS {
            b.copy_from_slice(&a);
        }
        let cpu_ns = t.elapsed().as_nanos().max(1) as u64;
        check_eq!(b[LEN as usize - 1], 1);
        let mbps = |ns: u64| ROUNDS * LEN * 1000 / ns; // bytes/ns*1000 = MB/s
        pr_info!(
            "engine bench: SDMA linear copy GTT->VRAM {} MB/s, memcpy {} MB/s ({} x {} MiB)\n",
            mbps(sdma_ns),
            mbps(cpu_ns),
            ROUNDS,
            LEN / MB
        );
        engine.destroy(q)?;
        Ok(())
    }
}
