// SPDX-License-Identifier: GPL-2.0

//! The MEC firmware's hardware scheduler (HWS) on the virtual GPU: the HIQ
//! rkfd loads with `hiq_mqd_load`, whose packets (rung with
//! `ring_kernel_doorbell`) feed the host-tested scheduler model
//! `rust/amdgpu-hw/src/hws.rs`; this file is its [`hws::Cp`]: runlist IBs
//! and fences in the GART ([`crate::gart`]), queues mapped by reading
//! their MQDs there and loading them on the engines as `hqd_load` does
//! (the VM found by the page table base of their MAP_PROCESS, as a CP
//! programs the VMID's page table from it; a MAP_PROCESS whose page table
//! base names no KFD process's VM, or not its PASID's, is a bad packet:
//! the firmware hangs; a queue's doorbell, in its MQD and its MAP_QUEUES
//! alike, is a dword index in the GPU's doorbell BAR, resolved in that
//! VM's slice: one outside it, or a MAP_QUEUES naming another doorbell
//! than its MQD, is an MQD the CP cannot load, and it hangs too), unmapped
//! with their read pointer saved into the MQD, QUERY_STATUS answered with
//! the fence write and an end-of-pipe interrupt.
//!
//! C: no counterpart (firmware); amdgpu's `hiq_mqd_load`
//! (`amdgpu_amdkfd_gfx_v9.c` `kgd_gfx_v9_hiq_mqd_load`) and the kernel
//! doorbell write of `kfd_kernel_queue.c`.
//!
//! The packets are taken synchronously, in the doorbell write: the HIQ has
//! been read (and every fence written) when `ring_kernel_doorbell`
//! returns, so a driver's fence wait sees the answer at once unless the
//! scheduler is hung.

use core::ptr::NonNull;

use kernel::{
    pr_warn_once,
    prelude::*,
    sync::Arc,
    time::Delta,
};

use crate::{
    engine::{self, Hqd, QueueDesc},
    gpu::Kgd,
    kabi, mqd,
};

/// `rust/amdgpu-hw`'s HWS files (`kernel_hws.rs`).
#[path = "../rust/amdgpu-hw/src/kernel_hws.rs"]
mod hws_format;
use hws_format::{hws, kernel_queue, pm4};
/// amdgpu's page table base encoding, for [`crate::gpu::Core::alloc_page_dir`].
pub(crate) use hws_format::qpd::pd_addr_vram;

/// For `hws_format`, which names the generations `super::gfx`.
use crate::profile::gfx;

/// Processes the scheduler's tables hold (MAP_PROCESS entries of one
/// runlist, chained or not): upstream's `KFD_MAX_NUM_OF_PROCESSES`.  A
/// runlist with more hangs the firmware, as a full table would.
const MAX_PROCESSES: usize = 512;
/// Queues (MAP_QUEUES entries) of one runlist: upstream's default
/// `max_num_of_queues_per_device`, which rkfd enforces per device.
const MAX_QUEUES: usize = hws_format::dqm::MAX_NUM_OF_QUEUES_PER_DEVICE as usize;

/// The firmware's quantum: how long a window of an over-subscribed
/// runlist runs before the next one is mapped.  Upstream's MAP_PROCESS
/// asks for `process_quantum` 10 (rkfd's too), read here as milliseconds.
const QUANTUM_MS: i64 = 10;
/// How often the quantum timer looks again while the runlist is not
/// over-subscribed (a RUN_LIST that over-subscribes starts rotating at
/// most this late).
const IDLE_POLL_MS: i64 = 50;
/// How often it looks while no HIQ is loaded (rkfd under `sched_policy` 2:
/// no runlist will come; loading the HIQ and creating enough queues to
/// over-subscribe takes longer than this).
const NO_HIQ_POLL_MS: i64 = 1000;

/// What the firmware's scheduler is doing, for its quantum timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Quantum {
    /// No HIQ: the driver does not use the HWS.
    NoHiq,
    /// A runlist that needs no rotation, or none, or hung.
    Idle,
    /// An over-subscribed runlist: rotate every quantum.
    Rotating,
}

/// One of the scheduler's tables, on the heap (a device's whole runlist:
/// too large for the kernel stack the model would be built on).
struct HeapTable<T>(KVec<T>);

impl<T> hws::Table<T> for HeapTable<T> {
    fn all(&self) -> &[T] {
        &self.0
    }
    fn all_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

/// The scheduler model with this GPU's tables.
type Scheduler = hws::HwsOn<HeapTable<pm4::MapProcess>, HeapTable<Option<hws::Entry>>>;

/// The HIQ as `hiq_mqd_load` described it.
struct Hiq {
    /// GART address of the ring.
    ring: u64,
    /// Ring size, dwords.
    dwords: usize,
    /// Where the CP reports its read pointer (GART).
    rptr_report: u64,
    /// Kernel doorbell (dwords).
    doorbell_off: u32,
    /// Dwords read since load (64-bit read pointer).
    rptr: u64,
    /// The HQD `hiq_mqd_load` named and the MQD it loaded (`hqd_dump`).
    pipe: u32,
    queue: u32,
    mqd: KVec<u8>,
}

/// A queue the scheduler has on an engine.
struct Mapped {
    mqd_addr: u64,
    sdma: bool,
    hqd: Arc<Hqd>,
}

/// The CP's scheduler state (`Kgd::cp`).
pub(crate) struct CpState {
    hiq: Option<Hiq>,
    hws: Scheduler,
    mapped: KVec<Mapped>,
}

impl CpState {
    /// No HIQ, no resources, nothing mapped.
    pub(crate) fn new(gfx: crate::profile::GfxVersion) -> Result<CpState> {
        let procs = HeapTable(KVec::from_elem(pm4::MapProcess::default(), MAX_PROCESSES, GFP_KERNEL)?);
        let queues = HeapTable(KVec::from_elem(None, MAX_QUEUES, GFP_KERNEL)?);
        Ok(CpState { hiq: None, hws: Scheduler::with_tables(pm4::PmFormat::of(gfx), procs, queues), mapped: KVec::new() })
    }
}

/// The scheduler's view of the GPU for one batch of packets: `Kgd`, the
/// mapped queues, and the interrupts to deliver once `Kgd::cp` is released.
struct Gpu<'a> {
    kgd: &'a Kgd,
    mapped: &'a mut KVec<Mapped>,
    irqs: KVec<u32>,
    /// Queues were loaded without waking the engines (`try_map`).
    loaded: bool,
}

impl<'a> Gpu<'a> {
    fn new(kgd: &'a Kgd, mapped: &'a mut KVec<Mapped>) -> Gpu<'a> {
        Gpu { kgd, mapped, irqs: KVec::new(), loaded: false }
    }

    /// Ends a batch of packets: wakes the engines once if queues were
    /// mapped (a runlist maps up to all of a device's queues: one wake per
    /// queue had each worker look at all its queues again for each), and
    /// returns the interrupts to deliver.
    fn finish(self) -> KVec<u32> {
        if self.loaded {
            self.kgd.engine().wake_all();
        }
        self.irqs
    }

    fn try_map(&mut self, process: &pm4::MapProcess, queue: &pm4::MapQueues) -> Result {
        let core = self.kgd.core();
        let p = core.profile();
        // The VMID's page table is the one the page table base names
        // (checked against the PASID when the MAP_PROCESS was taken; the
        // VM may have gone since, when an over-subscribed runlist rotates).
        let vm = core.vm_of_page_dir(process.page_table_base).ok_or(EINVAL)?;
        if vm.pasid() != process.pasid {
            return Err(EINVAL);
        }
        let sdma = matches!(queue.engine, pm4::Engine::Sdma(_));
        let bytes = self.kgd.gart().read_bytes(queue.mqd_addr, if sdma { mqd::sdma_mqd_size(p)? } else { mqd::compute_mqd_size(p)? })?;
        let desc: QueueDesc = if sdma {
            mqd::sdma_desc(p, &vm, &bytes, queue.wptr_addr)?.0
        } else {
            mqd::compute_desc(p, &vm, &bytes, queue.wptr_addr)?
        };
        // MAP_QUEUES names the queue's doorbell by its BAR index too: it
        // must be the MQD's, in the process's slice (the scheduler
        // unmaps by it; a CP given another would hang).
        if vm.doorbell_byte_offset(queue.doorbell_off)? != desc.doorbell_offset {
            return Err(EINVAL);
        }
        // Woken once the whole batch of packets is taken (`Gpu::finish`).
        let hqd = self.kgd.engine().load_quiet(vm, &desc)?;
        self.loaded = true;
        if let Err(e) = self.mapped.push(Mapped { mqd_addr: queue.mqd_addr, sdma, hqd: hqd.clone() }, GFP_KERNEL) {
            // Not recorded: take it off again.
            let _ = self.kgd.engine().destroy(hqd);
            return Err(e.into());
        }
        Ok(())
    }
}

impl hws::Cp for Gpu<'_> {
    fn read(&mut self, addr: u64, out: &mut [u32]) -> bool {
        self.kgd.gart().read_dwords(addr, out).is_ok()
    }

    fn write_u64(&mut self, addr: u64, value: u64) -> bool {
        self.kgd.gart().write_dwords(addr, &[value as u32, (value >> 32) as u32]).is_ok()
    }

    fn interrupt(&mut self, context_id: u32) {
        if self.irqs.push(context_id, GFP_KERNEL).is_err() {
            pr_warn_once!("vgpu cp: interrupt lost (no memory)\n");
        }
    }

    fn map_process(&mut self, process: &pm4::MapProcess) -> bool {
        // A CP programs the VMID's page table from the page table base:
        // it must name a KFD process's VM, the one of the packet's PASID.
        let core = self.kgd.core();
        match (core.vm_of_page_dir(process.page_table_base), core.vm_of_pasid(process.pasid)) {
            (Some(by_pd), Some(by_pasid)) => Arc::ptr_eq(&by_pd, &by_pasid),
            _ => false,
        }
    }

    fn map(&mut self, process: &pm4::MapProcess, queue: &pm4::MapQueues) -> bool {
        self.try_map(process, queue).is_ok()
    }

    fn unmap(&mut self, _process: &pm4::MapProcess, queue: &pm4::MapQueues, reset: bool) {
        let Some(i) = self.mapped.iter().position(|m| m.mqd_addr == queue.mqd_addr) else {
            return;
        };
        let Ok(m) = self.mapped.remove(i) else {
            return;
        };
        // Preempted: the engine leaves the queue (hung engines answer ETIME,
        // the queue is off all the same).
        let _ = self.kgd.engine().destroy(m.hqd.clone());
        if reset {
            return;
        }
        let p = self.kgd.core().profile();
        let (rptr, _) = m.hqd.saved_rptr();
        let len = if m.sdma { mqd::sdma_mqd_size(p) } else { mqd::compute_mqd_size(p) };
        let Ok(len) = len else { return };
        let Ok(mut bytes) = self.kgd.gart().read_bytes(m.mqd_addr, len) else { return };
        let saved = if m.sdma { mqd::save_sdma(p, &mut bytes, rptr) } else { mqd::save_compute(p, &mut bytes, m.hqd.desc(), rptr) };
        if saved.is_ok() {
            let _ = self.kgd.gart().write_bytes(m.mqd_addr, &bytes);
        }
    }
}

impl Kgd {
    /// `hiq_mqd_load`: the HIQ is the ring the compute MQD describes (GART
    /// addresses); its read pointer starts at the MQD's.
    pub(crate) fn cp_hiq_load(&self, m: &[u8], pipe: u32, queue: u32, doorbell_off: u32) -> Result {
        let c = mqd::hiq_ring(self.core().profile(), m)?;
        let dwords = usize::try_from(c.ring_size / 4)?;
        if dwords == 0 || dwords > 1 << 16 {
            return Err(EINVAL);
        }
        let mut mqd = KVec::with_capacity(m.len(), GFP_KERNEL)?;
        mqd.extend_from_slice(m, GFP_KERNEL)?;
        let mut st = self.cp().lock();
        // The ring must be GART memory the CP can read whole.
        let mut probe = [0u32; 1];
        self.gart().read_dwords(c.ring_base + c.ring_size - 4, &mut probe)?;
        st.hiq = Some(Hiq { ring: c.ring_base, dwords, rptr_report: c.rptr_report, doorbell_off, rptr: u64::from(c.pq_rptr), pipe, queue, mqd });
        Ok(())
    }

    /// `hqd_dump` of the HIQ's HQD, if (`pipe`, `queue`) is where
    /// `hiq_mqd_load` put it: its MQD's register image, active, with the
    /// CP's read pointer (dwords) as read and write pointer (the CP takes
    /// the packets before `ring_kernel_doorbell` returns).
    pub(crate) fn cp_hiq_dump(&self, pipe: u32, queue: u32, out: &mut [[u32; 2]]) -> Option<Result<usize>> {
        let st = self.cp().lock();
        let hiq = st.hiq.as_ref().filter(|h| h.pipe == pipe && h.queue == queue)?;
        Some(mqd::hiq_dump(self.core().profile(), &hiq.mqd, hiq.rptr, out))
    }

    /// The `nth` compute (or SDMA, `sdma`) queue the scheduler has on the
    /// engines, in the order it mapped them: its MQD's GART address and
    /// the queue; `None` past the last, and `Err(())` if the scheduler has
    /// no queue at all (`hqd_dump`: the GPU's firmware is then the MES).
    /// Looks under the lock: no copy of the list for each of the HQDs a
    /// debugfs read dumps.
    pub(crate) fn cp_mapped_nth(&self, sdma: bool, nth: usize) -> core::result::Result<Option<(u64, Arc<Hqd>)>, ()> {
        let st = self.cp().lock();
        if st.mapped.is_empty() {
            return Err(());
        }
        Ok(st.mapped.iter().filter(|m| m.sdma == sdma).nth(nth).map(|m| (m.mqd_addr, m.hqd.clone())))
    }

    /// `ring_kernel_doorbell`: takes the HIQ's packets up to `wptr`.
    pub(crate) fn cp_doorbell(&self, doorbell_off: u32, wptr: u64) {
        let irqs = {
            let mut guard = self.cp().lock();
            let st = &mut *guard;
            let Some(hiq) = st.hiq.as_mut() else { return };
            if hiq.doorbell_off != doorbell_off {
                return;
            }
            let Ok(mut ring) = KVec::from_elem(0u32, hiq.dwords, GFP_KERNEL) else { return };
            if self.gart().read_dwords(hiq.ring, &mut ring).is_err() {
                return;
            }
            let mut gpu = Gpu::new(self, &mut st.mapped);
            while let Some(next) = kernel_queue::next_packet(&ring, hiq.rptr, wptr) {
                match next {
                    Ok((at, len)) => {
                        hiq.rptr += len as u64;
                        let packet = &ring[at..at + len];
                        // NOP fillers (the one-dword wrap filler, or a NOP
                        // packet) are skipped, as the CP does.
                        if len == 1 || (packet[0] >> 8) & 0xff == NOP_OPCODE {
                            continue;
                        }
                        let parsed = pm4::parse(packet, pm4::PmFormat::of(self.core().profile().gfx)).next();
                        match parsed {
                            Some(p) => st.hws.hiq_packet(&mut gpu, p),
                            None => st.hws.hiq_packet::<()>(&mut gpu, Err(())),
                        }
                    }
                    Err(_) => {
                        // A bad packet hangs the firmware; it reads no further.
                        st.hws.hiq_packet::<()>(&mut gpu, Err(()));
                        hiq.rptr = wptr;
                    }
                }
            }
            let _ = self.gart().write_dwords(hiq.rptr_report, &[(hiq.rptr % hiq.dwords as u64) as u32]);
            gpu.finish()
        };
        self.cp_interrupts(&irqs);
    }

    /// The quantum expired ([`QuantumTimer`], the KUnit tests): an
    /// over-subscribed runlist rotates.  Returns what the firmware is
    /// doing now.
    pub(crate) fn cp_tick(&self) -> Quantum {
        let (irqs, now) = {
            let mut guard = self.cp().lock();
            let st = &mut *guard;
            let mut gpu = Gpu::new(self, &mut st.mapped);
            st.hws.tick(&mut gpu);
            let now = if st.hiq.is_none() {
                Quantum::NoHiq
            } else if st.hws.over_subscribed() && st.hws.hang().is_none() {
                Quantum::Rotating
            } else {
                Quantum::Idle
            };
            (gpu.finish(), now)
        };
        self.cp_interrupts(&irqs);
        now
    }

    /// `gpu_reset`: the firmware starts over (no resources, no runlist,
    /// no HIQ until rkfd loads it again); queues are dropped without
    /// saving.
    pub(crate) fn cp_reset(&self) {
        let mut guard = self.cp().lock();
        let st = &mut *guard;
        let mut gpu = Gpu::new(self, &mut st.mapped);
        st.hws.reset(&mut gpu);
        st.hiq = None;
        for m in core::mem::take(gpu.mapped).into_iter() {
            let _ = self.engine().destroy(m.hqd);
        }
        // Nothing is mapped after a reset; no interrupt either.
        let _ = gpu.finish();
    }

    /// `hws_hang` of the HWS path: the firmware stops answering.
    pub(crate) fn cp_hang(&self) {
        let mut guard = self.cp().lock();
        let st = &mut *guard;
        // A packet no firmware takes: the scheduler hangs as on a bad one.
        let mut gpu = Gpu::new(self, &mut st.mapped);
        st.hws.hiq_packet::<()>(&mut gpu, Err(()));
        let _ = gpu.finish();
    }

    /// Whether the HWS hung (debugfs, tests).
    #[allow(dead_code)] // Used by the KUnit tests only, for now.
    pub(crate) fn cp_hung(&self) -> bool {
        self.cp().lock().hws.hang().is_some()
    }

    /// Delivers end-of-query interrupts (no lock of ours held): the
    /// HIQ's interrupts carry no PASID (VMID 0).
    fn cp_interrupts(&self, irqs: &[u32]) {
        let Some(kfd) = self.core().kfd() else { return };
        for &context_id in irqs {
            let e = engine::IhEntry { source: engine::IH_SIGNAL, pasid: 0, context_id, ..Default::default() };
            kfd.interrupt(&crate::ih::ring_entry(self.core().profile().gfx, &e));
        }
    }
}

/// The firmware's quantum timer (`vgpu-cp/<gpu>.0`): every [`QUANTUM_MS`]
/// an over-subscribed runlist maps its next window ([`Kgd::cp_tick`]), so
/// every process and queue of it makes progress.
///
/// # Invariants
///
/// `kgd` points to a boxed [`Kgd`] that is neither moved nor dropped
/// before the thread running this timer is stopped (`crate::gpu::Gpu`
/// owns both and stops the thread first).
pub(crate) struct QuantumTimer {
    kgd: NonNull<Kgd>,
}

// SAFETY: Only `&Kgd` is used through the pointer, and `Kgd` is `Sync`
// (its state is behind locks); the pointer itself may move between threads.
unsafe impl Send for QuantumTimer {}
// SAFETY: As above: `&QuantumTimer` gives only `&Kgd`.
unsafe impl Sync for QuantumTimer {}

impl QuantumTimer {
    /// The timer of `kgd`.
    ///
    /// # Safety
    ///
    /// `kgd` must not move or be dropped until the thread this timer is
    /// given to ([`kabi::Thread::start`]) has been stopped.
    pub(crate) unsafe fn new(kgd: &Kgd) -> QuantumTimer {
        // INVARIANT: The caller keeps `kgd` in place until the thread stops.
        QuantumTimer { kgd: NonNull::from(kgd) }
    }
}

impl kabi::ThreadMain for QuantumTimer {
    fn main(&self) {
        while !kabi::should_stop() {
            // SAFETY: By the type invariant `kgd` is live while the thread runs.
            let kgd = unsafe { self.kgd.as_ref() };
            let ms = match kgd.cp_tick() {
                Quantum::Rotating => QUANTUM_MS,
                Quantum::Idle => IDLE_POLL_MS,
                Quantum::NoHiq => NO_HIQ_POLL_MS,
            };
            // Not fsleep: unloading the module stops this thread and
            // must not wait out the sleep (a second with no HIQ).
            kabi::sleep_unless_stopped(Delta::from_millis(ms));
        }
    }
}

/// `IT_NOP`.
const NOP_OPCODE: u32 = 0x10;

#[kernel::prelude::kunit_tests(amdgpu_vgpu_cp)]
mod tests {
    use super::*;
    use crate::{mqd::hw, profile::PROFILES, sysmem::SystemMemory};
    use kernel_queue::KernelRing;
    use pm4::{MapProcess, MapQueues, QueryStatus, RunList, SetResources, FENCE_COMPLETED, FENCE_INIT};

    const RING_BYTES: u32 = 2048;

    /// A GPU (not registered with rkfd) with a HIQ loaded: the ring, its
    /// MQD and a page for the fence and the pointers, all in the GART.
    struct Rig {
        kgd: KBox<Kgd>,
        ring: Arc<crate::gart::GttObj>,
        misc: Arc<crate::gart::GttObj>,
        kq: KernelRing,
        shadow: KVec<u32>,
    }

    impl Rig {
        fn new(index: u32) -> Result<Rig> {
            let p = &PROFILES[0];
            let kgd = Kgd::new(p, index, 16 * 4096, &SystemMemory::new()?)?;
            let ring = kgd.gart().alloc(u64::from(RING_BYTES))?;
            let misc = kgd.gart().alloc(4096)?;
            let rig = Rig { kgd, ring, misc, kq: KernelRing::new(RING_BYTES).ok_or(EINVAL)?, shadow: KVec::from_elem(0u32, RING_BYTES as usize / 4, GFP_KERNEL)? };
            rig.load()?;
            Ok(rig)
        }

        fn fence_addr(&self) -> u64 {
            self.misc.addr()
        }

        fn load(&self) -> Result {
            let p = self.kgd.core().profile();
            let q = hw::QueueProps {
                format: hw::QueueFormat::Pm4,
                queue_address: self.ring.addr(),
                queue_size: u64::from(RING_BYTES),
                read_ptr: self.misc.addr() + 64,
                write_ptr: self.misc.addr() + 128,
                doorbell_off: 0,
                ..Default::default()
            };
            let dev = hw::MqdDevice { gfx: p.gfx, cwsr_enabled: false, profiler_active: false, pcie_atomics: false, sdma_phase_quantum: hw::SDMA_PHASE_QUANTUM_DEFAULT };
            let mut m = hw::ComputeMqd::zeroed(p.gfx).ok_or(EINVAL)?;
            hw::init_hiq_mqd(&mut m, &dev, 0, &q);
            self.kgd.cp_hiq_load(m.as_bytes(), 4, 0, 0)
        }

        /// Writes `packets` to the HIQ as rkfd's kernel queue does and
        /// rings the doorbell.
        fn submit(&mut self, packets: &[u32]) -> Result {
            let rptr = self.read(self.misc.addr() + 64)?;
            let at = self.kq.acquire(&mut self.shadow, rptr, packets.len() as u32).map_err(|_| ENOSPC)?;
            self.shadow[at..at + packets.len()].copy_from_slice(packets);
            self.kgd.gart().write_dwords(self.ring.addr(), &self.shadow)?;
            let w = self.kq.submit();
            self.kgd.cp_doorbell(0, w);
            Ok(())
        }

        fn read(&self, addr: u64) -> Result<u32> {
            let mut d = [0u32];
            self.kgd.gart().read_dwords(addr, &mut d)?;
            Ok(d[0])
        }

        /// The preemption fence round trip: set, QUERY_STATUS, read back.
        fn fence(&mut self) -> Result<bool> {
            let f = self.fence_addr();
            self.kgd.gart().write_dwords(f, &[FENCE_INIT as u32, 0])?;
            self.submit(&QueryStatus::fence(f, FENCE_COMPLETED).encode())?;
            Ok(self.read(f)? == FENCE_COMPLETED as u32)
        }
    }

    fn resources() -> SetResources {
        SetResources { vmid_mask: 0xff00, queue_mask: 0xff, ..Default::default() }
    }

    /// SET_RESOURCES then QUERY_STATUS: the fence is written before the
    /// doorbell write returns and the read pointer is reported; the ring
    /// wraps (NOP filler) and keeps answering.
    #[test]
    fn hiq_answers_the_fence() -> Result {
        let mut rig = Rig::new(0x38)?;
        rig.submit(&resources().encode())?;
        for _ in 0..100 {
            assert!(rig.fence()?);
        }
        let w = rig.kq.wptr64();
        assert!(w > u64::from(RING_BYTES / 4));
        assert_eq!(u64::from(rig.read(rig.misc.addr() + 64)?), w % u64::from(RING_BYTES / 4));
        assert!(!rig.kgd.cp_hung());
        Ok(())
    }

    /// A bad packet (upstream's debugfs hang_hws writes 0x55 bytes) hangs
    /// the scheduler: no fence until a reset and a new HIQ; so does a
    /// runlist whose process has no VM (its MQD cannot be loaded).
    #[test]
    fn bad_packet_hangs_until_reset() -> Result {
        let mut rig = Rig::new(0x39)?;
        rig.submit(&resources().encode())?;
        assert!(rig.fence()?);
        rig.submit(&[0x5555_5555; 4])?;
        assert!(rig.kgd.cp_hung());
        assert!(!rig.fence()?);
        rig.kgd.cp_reset();
        // No HIQ after a reset: the doorbell reads nothing.
        assert!(!rig.fence()?);
        rig.kq = KernelRing::new(RING_BYTES).ok_or(EINVAL)?;
        rig.kgd.gart().write_dwords(rig.misc.addr() + 64, &[0])?;
        rig.load()?;
        assert!(!rig.kgd.cp_hung());
        rig.submit(&resources().encode())?;
        assert!(rig.fence()?);

        // A runlist naming PASID 0x4242, which no VM carries.
        let ib = rig.kgd.gart().alloc(4096)?;
        let fmt = pm4::PmFormat::of(rig.kgd.core().profile().gfx);
        let mut buf = KVec::from_elem(0u32, 64, GFP_KERNEL)?;
        let n = MapProcess { pasid: 0x4242, num_queues: 1, ..Default::default() }.write(fmt, &mut buf);
        let q = MapQueues { engine: pm4::Engine::Compute, is_static: false, is_gws: false, doorbell_off: 4, mqd_addr: rig.misc.addr() + 1024, wptr_addr: 0x1000 };
        let mq = q.encode(false);
        buf[n..n + mq.len()].copy_from_slice(&mq);
        rig.kgd.gart().write_dwords(ib.addr(), &buf[..n + mq.len()])?;
        rig.submit(&RunList { ib_base: ib.addr(), ib_size: (n + mq.len()) as u32, chain: false, process_cnt: 1 }.encode())?;
        assert!(rig.kgd.cp_hung());
        assert!(!rig.fence()?);
        rig.kgd.gart().free(&ib);
        Ok(())
    }

    /// A compute MQD in the GART for a PM4 queue of a VM (ring and
    /// pointers at VAs nothing maps: the test looks only at what the CP
    /// loads and saves), its doorbell (MQD and MAP_QUEUES) at BAR dword
    /// `first + 2 * k`: doorbell `k` of the slice at BAR index `first`.
    fn compute_mqd(rig: &Rig, first: u32, k: u32) -> Result<(Arc<crate::gart::GttObj>, MapQueues)> {
        let p = rig.kgd.core().profile();
        let obj = rig.kgd.gart().alloc(4096)?;
        let base = 0x7f00_0000_0000 + u64::from(k) * 0x10_0000;
        let q = hw::QueueProps {
            format: hw::QueueFormat::Pm4,
            queue_address: base,
            queue_size: 4096,
            read_ptr: base + 0x8000,
            write_ptr: base + 0x8008,
            doorbell_off: first + 2 * k,
            ..Default::default()
        };
        let dev = hw::MqdDevice { gfx: p.gfx, cwsr_enabled: false, profiler_active: false, pcie_atomics: false, sdma_phase_quantum: hw::SDMA_PHASE_QUANTUM_DEFAULT };
        let mut m = hw::ComputeMqd::zeroed(p.gfx).ok_or(EINVAL)?;
        hw::init_compute_mqd(&mut m, &dev, obj.addr(), &q);
        let mut dw = KVec::new();
        for c in m.as_bytes().chunks_exact(4) {
            dw.push(u32::from_le_bytes([c[0], c[1], c[2], c[3]]), GFP_KERNEL)?;
        }
        rig.kgd.gart().write_dwords(obj.addr(), &dw)?;
        let mq = MapQueues { engine: pm4::Engine::Compute, is_static: false, is_gws: false, doorbell_off: first + 2 * k, mqd_addr: obj.addr(), wptr_addr: q.write_ptr };
        Ok((obj, mq))
    }

    fn mapped(rig: &Rig) -> KVec<u64> {
        let mut v = KVec::new();
        for m in rig.kgd.cp().lock().mapped.iter() {
            let _ = v.push(m.mqd_addr, GFP_KERNEL);
        }
        v
    }

    /// A runlist of three processes (one queue each, their VMs found by
    /// page table base) maps every queue; chained to itself with process_cnt 1 it
    /// is over-subscribed and the tick rotates the window through all
    /// three; UNMAP_QUEUES by PASID + QUERY_STATUS takes a process off and
    /// writes the fence.
    #[test]
    fn runlist_maps_by_pasid_and_rotates_when_over_subscribed() -> Result {
        let mut rig = Rig::new(0x3a)?;
        rig.submit(&resources().encode())?;
        let core = rig.kgd.core().clone();
        let fmt = pm4::PmFormat::of(core.profile().gfx);
        let mut vms = KVec::new();
        let mut mqds = KVec::new();
        let ib = rig.kgd.gart().alloc(4096)?;
        let mut buf = KVec::from_elem(0u32, 512, GFP_KERNEL)?;
        let mut n = 0;
        for k in 0..3u32 {
            let vm = crate::vm::Vm::new(core.clone())?;
            vm.acquire()?;
            core.add_kfd_vm(&vm)?;
            let (pasid, page_table_base) = (vm.pasid(), vm.page_dir());
            let (obj, mq) = compute_mqd(&rig, vm.doorbell_index(), k + 1)?;
            vms.push(vm, GFP_KERNEL)?;
            n += MapProcess { pasid, page_table_base, num_queues: 1, ..Default::default() }.write(fmt, &mut buf[n..]);
            let e = mq.encode(false);
            buf[n..n + e.len()].copy_from_slice(&e);
            n += e.len();
            mqds.push(obj, GFP_KERNEL)?;
        }
        // Not over-subscribed: all three queues mapped.
        rig.kgd.gart().write_dwords(ib.addr(), &buf[..n])?;
        rig.submit(&RunList { ib_base: ib.addr(), ib_size: n as u32, chain: false, process_cnt: 3 }.encode())?;
        assert!(!rig.kgd.cp_hung());
        assert_eq!(mapped(&rig).len(), 3);
        // UNMAP_QUEUES of the second process, then the fence.
        let unmap = pm4::UnmapQueues::new(pm4::UnmapFilter::Pasid(vms[1].pasid()), false, false);
        let f = rig.fence_addr();
        rig.kgd.gart().write_dwords(f, &[FENCE_INIT as u32, 0])?;
        rig.submit(&pm4::preemption(&unmap, f))?;
        assert_eq!(rig.read(f)?, FENCE_COMPLETED as u32);
        assert_eq!(mapped(&rig).len(), 2);
        assert!(!mapped(&rig).contains(&mqds[1].addr()));

        // Over-subscribed: the IB chains to itself, one process at a time.
        let rl = RunList { ib_base: ib.addr(), ib_size: (n + pm4::RUNLIST_DWORDS) as u32, chain: true, process_cnt: 1 };
        let e = rl.encode();
        buf[n..n + e.len()].copy_from_slice(&e);
        rig.kgd.gart().write_dwords(ib.addr(), &buf[..n + e.len()])?;
        rig.submit(&rl.encode())?;
        assert!(!rig.kgd.cp_hung());
        let mut seen = [false; 3];
        for _ in 0..6 {
            let now = mapped(&rig);
            assert_eq!(now.len(), 1);
            for (k, m) in mqds.iter().enumerate() {
                if now[0] == m.addr() {
                    seen[k] = true;
                }
            }
            rig.kgd.cp_tick();
        }
        assert_eq!(seen, [true; 3]);
        rig.kgd.cp_reset();
        assert!(mapped(&rig).is_empty());
        for vm in vms.iter() {
            core.remove_kfd_vm(vm);
            vm.release();
        }
        rig.kgd.gart().free(&ib);
        for m in mqds.iter() {
            rig.kgd.gart().free(m);
        }
        Ok(())
    }

    /// The CP takes a MAP_PROCESS only if its page table base names a KFD
    /// process's VM, the one of its PASID: not another process's VM, a VM
    /// no KFD process acquired, an address naming no VM, or 0.  A runlist whose
    /// MAP_PROCESS names another process's VM is a bad packet: the
    /// firmware hangs with nothing mapped and answers no fence.
    #[test]
    fn map_process_with_a_wrong_page_table_base_hangs_the_hws() -> Result {
        let mut rig = Rig::new(0x3b)?;
        rig.submit(&resources().encode())?;
        let core = rig.kgd.core().clone();
        let fmt = pm4::PmFormat::of(core.profile().gfx);
        let (a, b, c) = (crate::vm::Vm::new(core.clone())?, crate::vm::Vm::new(core.clone())?, crate::vm::Vm::new(core.clone())?);
        for vm in [&a, &b] {
            core.add_kfd_vm(vm)?;
        }
        // Distinct, amdgpu-encoded (VALID, 64-byte aligned) bases.
        assert!(a.page_dir() != b.page_dir() && b.page_dir() != c.page_dir() && a.page_dir() != c.page_dir());
        assert_eq!(a.page_dir() & 0x3f, 1);
        let of_a = |page_table_base| MapProcess { pasid: a.pasid(), page_table_base, num_queues: 1, ..Default::default() };
        {
            use hws::Cp;
            let mut guard = rig.kgd.cp().lock();
            let mut gpu = Gpu::new(&rig.kgd, &mut guard.mapped);
            assert!(gpu.map_process(&of_a(a.page_dir())));
            for wrong in [b.page_dir(), c.page_dir(), a.page_dir() + 0x1000_0000, a.page_dir() & !1, 0] {
                assert!(!gpu.map_process(&of_a(wrong)));
            }
        }
        let ib = rig.kgd.gart().alloc(4096)?;
        let (obj, mq) = compute_mqd(&rig, a.doorbell_index(), 1)?;
        let mut buf = KVec::from_elem(0u32, 128, GFP_KERNEL)?;
        let mut n = of_a(b.page_dir()).write(fmt, &mut buf[..]);
        let e = mq.encode(false);
        buf[n..n + e.len()].copy_from_slice(&e);
        n += e.len();
        rig.kgd.gart().write_dwords(ib.addr(), &buf[..n])?;
        rig.submit(&RunList { ib_base: ib.addr(), ib_size: n as u32, chain: false, process_cnt: 1 }.encode())?;
        assert!(rig.kgd.cp_hung());
        assert!(mapped(&rig).is_empty());
        assert!(!rig.fence()?);
        rig.kgd.cp_reset();
        for vm in [&a, &b] {
            core.remove_kfd_vm(vm);
        }
        rig.kgd.gart().free(&ib);
        rig.kgd.gart().free(&obj);
        Ok(())
    }

    /// The CP resolves a queue's doorbell by its BAR index in the slice of
    /// the process's VM: the slices of two acquired VMs differ (and are
    /// not slice 0, the kernel doorbells'), and an MQD or MAP_QUEUES whose
    /// doorbell is counted from the slice's start, lies in the other
    /// process's slice or past the slice, or a MAP_QUEUES naming another
    /// doorbell than its MQD, hangs the HWS with nothing mapped; the
    /// queue's own BAR index maps it.
    #[test]
    fn map_queues_resolves_doorbells_by_bar_index() -> Result {
        let probe = Rig::new(0x30)?;
        let core = probe.kgd.core().clone();
        let slice = core.profile().doorbell_process_size() / 4;
        drop(probe);
        // (MQD doorbell, MAP_QUEUES doorbell) relative to A's first BAR
        // dword, or absolute (B's), and whether the CP maps it.
        let cases: [(fn(u32, u32) -> (u32, u32), bool); 6] = [
            (|a, _| (a + 2, a + 2), true),
            (|_, _| (2, 2), false),
            (|_, b| (b + 2, b + 2), false),
            (|a, _| (a + 2, a + 4), false),
            (|a, _| (a + 2, 2), false),
            (|a, _| (a + 0x2000 / 4, a + 0x2000 / 4), false),
        ];
        for (k, (doorbells, maps)) in cases.iter().enumerate() {
            let mut rig = Rig::new(0x31 + k as u32)?;
            rig.submit(&resources().encode())?;
            let core = rig.kgd.core().clone();
            let fmt = pm4::PmFormat::of(core.profile().gfx);
            let (a, b) = (crate::vm::Vm::new(core.clone())?, crate::vm::Vm::new(core.clone())?);
            a.acquire()?;
            b.acquire()?;
            assert!(a.doorbell_index() >= slice && b.doorbell_index() >= slice);
            assert!(a.doorbell_index().abs_diff(b.doorbell_index()) >= slice);
            for vm in [&a, &b] {
                core.add_kfd_vm(vm)?;
            }
            let (in_mqd, in_packet) = doorbells(a.doorbell_index(), b.doorbell_index());
            let (obj, mut mq) = compute_mqd(&rig, in_mqd, 0)?;
            mq.doorbell_off = in_packet;
            let ib = rig.kgd.gart().alloc(4096)?;
            let mut buf = KVec::from_elem(0u32, 128, GFP_KERNEL)?;
            let mut n = MapProcess { pasid: a.pasid(), page_table_base: a.page_dir(), num_queues: 1, ..Default::default() }.write(fmt, &mut buf[..]);
            let e = mq.encode(false);
            buf[n..n + e.len()].copy_from_slice(&e);
            n += e.len();
            rig.kgd.gart().write_dwords(ib.addr(), &buf[..n])?;
            rig.submit(&RunList { ib_base: ib.addr(), ib_size: n as u32, chain: false, process_cnt: 1 }.encode())?;
            assert_eq!(rig.kgd.cp_hung(), !maps);
            assert_eq!(mapped(&rig).len(), usize::from(*maps));
            rig.kgd.cp_reset();
            for vm in [&a, &b] {
                core.remove_kfd_vm(vm);
                vm.release();
            }
            rig.kgd.gart().free(&ib);
            rig.kgd.gart().free(&obj);
        }
        Ok(())
    }
}
