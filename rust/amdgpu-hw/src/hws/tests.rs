// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The HWS model against runlists built by `pm4::build_runlist_ib`.

use super::*;
use crate::kernel_queue::{next_packet, KernelRing, NOP_PACKET};
use crate::pm4::{
    build_runlist_ib, over_subscription, preemption, RunlistLimits, RunlistProcess, FENCE_COMPLETED, FENCE_INIT,
};
extern crate std;
use std::collections::{BTreeMap, BTreeSet};
use std::vec::Vec;

/// A GPU: memory by dword address, HQDs by doorbell, a log of unmaps.
#[derive(Default)]
struct Gpu {
    mem: BTreeMap<u64, u32>,
    fences: BTreeMap<u64, u64>,
    interrupts: Vec<u32>,
    mapped: BTreeSet<u32>,
    ever_mapped: BTreeSet<u32>,
    unmaps: Vec<(u32, bool)>,
    refuse: Option<u32>,
    /// The page table base of each PASID's VM (a PASID not here: its VM
    /// is `pasid << 12 | 1`, see [`process`]).
    vms: BTreeMap<u32, u64>,
    /// The MAP_PROCESS packets taken.
    processes_taken: Vec<(u32, u64)>,
}

impl Gpu {
    fn put(&mut self, addr: u64, dwords: &[u32]) {
        for (i, d) in dwords.iter().enumerate() {
            self.mem.insert(addr + 4 * i as u64, *d);
        }
    }
}

impl Cp for Gpu {
    fn read(&mut self, addr: u64, out: &mut [u32]) -> bool {
        for (i, o) in out.iter_mut().enumerate() {
            match self.mem.get(&(addr + 4 * i as u64)) {
                Some(d) => *o = *d,
                None => return false,
            }
        }
        true
    }
    fn write_u64(&mut self, addr: u64, value: u64) -> bool {
        self.fences.insert(addr, value);
        addr != 0
    }
    fn interrupt(&mut self, context_id: u32) {
        self.interrupts.push(context_id);
    }
    fn map_process(&mut self, p: &MapProcess) -> bool {
        self.processes_taken.push((p.pasid, p.page_table_base));
        let vm = self.vms.get(&p.pasid).copied().unwrap_or(page_dir(p.pasid));
        p.page_table_base == vm
    }
    fn map(&mut self, _p: &MapProcess, q: &MapQueues) -> bool {
        if self.refuse == Some(q.doorbell_off) {
            return false;
        }
        assert!(self.mapped.insert(q.doorbell_off), "queue {} mapped twice", q.doorbell_off);
        self.ever_mapped.insert(q.doorbell_off);
        true
    }
    fn unmap(&mut self, _p: &MapProcess, q: &MapQueues, reset: bool) {
        assert!(self.mapped.remove(&q.doorbell_off), "queue {} unmapped but not mapped", q.doorbell_off);
        self.unmaps.push((q.doorbell_off, reset));
    }
}

fn queue(doorbell: u32, engine: Engine) -> MapQueues {
    MapQueues { engine, is_static: false, is_gws: false, doorbell_off: doorbell, mqd_addr: 0x10_0000 + u64::from(doorbell) * 0x1000, wptr_addr: 0 }
}

/// The page table base of the VM of `pasid` in these tests.
fn page_dir(pasid: u32) -> u64 {
    u64::from(pasid) << 12 | 1
}

fn process(pasid: u32, queues: &[MapQueues]) -> RunlistProcess<'_> {
    RunlistProcess {
        map: MapProcess {
            pasid,
            process_quantum: 10,
            page_table_base: page_dir(pasid),
            num_queues: queues.len() as u32,
            ..MapProcess::default()
        },
        xnack_enabled: false,
        queues,
    }
}

const IB: u64 = 0x4000;
const FENCE: u64 = 0x9000;

/// SET_RESOURCES with `slots` HQDs, then a runlist of `procs` through the
/// HIQ ring as the driver writes it.
fn start(gpu: &mut Gpu, hws: &mut Hws<8, 64>, procs: &[RunlistProcess<'_>], slots: u32, max_proc: u32, format: PmFormat) -> u32 {
    let res = SetResources { vmid_mask: 0xff00, queue_mask: (1u64 << slots) - 1, ..SetResources::default() };
    let limits = RunlistLimits { max_proc_per_quantum: max_proc, cp_queues: slots, xnack_chain: false, ext_eng: false, format };
    let mut ib = [0u32; 512];
    let built = build_runlist_ib(&mut ib, IB, procs, &limits).unwrap();
    gpu.put(IB, &ib[..built.dwords]);
    let rl = RunList { ib_base: IB, ib_size: built.dwords as u32, chain: false, process_cnt: procs.len().min(max_proc as usize) as u32 };
    hws.hiq_packet::<()>(gpu, Ok(Packet::SetResources(res)));
    hws.hiq_packet::<()>(gpu, Ok(Packet::RunList(rl)));
    built.over_subscription
}

fn query(gpu: &mut Gpu, hws: &mut Hws<8, 64>) -> Option<u64> {
    gpu.fences.insert(FENCE, FENCE_INIT);
    hws.hiq_packet::<()>(gpu, Ok(Packet::QueryStatus(QueryStatus::fence(FENCE, FENCE_COMPLETED))));
    gpu.fences.get(&FENCE).copied().filter(|&v| v != FENCE_INIT)
}

#[test]
fn a_runlist_maps_every_queue_and_the_fence_answers() {
    for format in [PmFormat::V9, PmFormat::Aldebaran] {
        let (mut gpu, mut hws) = (Gpu::default(), Hws::<8, 64>::new(format));
        let qa = [queue(2, Engine::Compute), queue(0x100, Engine::Sdma(0))];
        let qb = [queue(4, Engine::Compute)];
        assert_eq!(start(&mut gpu, &mut hws, &[process(1, &qa), process(2, &qb)], 8, 8, format), 0);
        assert_eq!(gpu.mapped, BTreeSet::from([2, 0x100, 4]));
        assert_eq!(hws.processes().iter().map(|p| p.pasid).collect::<Vec<_>>(), [1, 2]);
        assert!(!hws.over_subscribed());
        assert_eq!(query(&mut gpu, &mut hws), Some(FENCE_COMPLETED));
        assert!(gpu.interrupts.is_empty());
    }
}

#[test]
fn unmap_by_pasid_preempts_that_process_only() {
    let (mut gpu, mut hws) = (Gpu::default(), Hws::<8, 64>::new(PmFormat::V9));
    let qa = [queue(2, Engine::Compute), queue(0x100, Engine::Sdma(0))];
    let qb = [queue(4, Engine::Compute)];
    start(&mut gpu, &mut hws, &[process(1, &qa), process(2, &qb)], 8, 8, PmFormat::V9);
    // The driver's preemption sequence through the HIQ ring.
    let mut kq = KernelRing::new(2048).unwrap();
    let mut ring = [0u32; 512];
    let seq = preemption(&UnmapQueues::new(UnmapFilter::Pasid(1), false, false), FENCE);
    let at = kq.acquire(&mut ring, 0, seq.len() as u32).unwrap();
    ring[at..at + seq.len()].copy_from_slice(&seq);
    let w = kq.submit();
    gpu.fences.insert(FENCE, FENCE_INIT);
    let mut r = 0;
    while let Some(p) = next_packet(&ring, r, w) {
        let (at, len) = p.unwrap();
        hws.hiq_packet(&mut gpu, parse(&ring[at..at + len], PmFormat::V9).next().unwrap());
        r += len as u64;
    }
    assert_eq!(gpu.fences[&FENCE], FENCE_COMPLETED);
    assert_eq!(gpu.unmaps, [(2, false), (0x100, false)]);
    assert_eq!(gpu.mapped, BTreeSet::from([4]));
    assert_eq!(hws.processes().iter().map(|p| p.pasid).collect::<Vec<_>>(), [2]);
}

#[test]
fn unmap_all_with_reset_and_dynamic_keeps_static() {
    let (mut gpu, mut hws) = (Gpu::default(), Hws::<8, 64>::new(PmFormat::V9));
    let qa = [MapQueues { is_static: true, ..queue(2, Engine::Compute) }, queue(6, Engine::Compute)];
    start(&mut gpu, &mut hws, &[process(1, &qa)], 8, 8, PmFormat::V9);
    hws.hiq_packet::<()>(&mut gpu, Ok(Packet::UnmapQueues(UnmapQueues::new(UnmapFilter::DynamicQueues, false, false))));
    assert_eq!(gpu.mapped, BTreeSet::from([2]));
    hws.hiq_packet::<()>(&mut gpu, Ok(Packet::UnmapQueues(UnmapQueues::new(UnmapFilter::AllQueues, true, false))));
    assert_eq!(gpu.unmaps, [(6, false), (2, true)]);
    assert!(gpu.mapped.is_empty() && hws.processes().is_empty());
    let f = UnmapFilter::Doorbells { num: 1, offsets: [4, 0, 0, 0] };
    start(&mut gpu, &mut hws, &[process(1, &[queue(4, Engine::Compute), queue(8, Engine::Compute)])], 8, 8, PmFormat::V9);
    hws.hiq_packet::<()>(&mut gpu, Ok(Packet::UnmapQueues(UnmapQueues::new(f, false, false))));
    assert_eq!(gpu.mapped, BTreeSet::from([8]));
}

#[test]
fn over_subscribed_processes_all_make_progress() {
    let (mut gpu, mut hws) = (Gpu::default(), Hws::<8, 64>::new(PmFormat::V9));
    let q: Vec<[MapQueues; 1]> = (0..5).map(|i| [queue(2 * i, Engine::Compute)]).collect();
    let procs: Vec<_> = q.iter().enumerate().map(|(i, q)| process(i as u32 + 1, q)).collect();
    let over = start(&mut gpu, &mut hws, &procs, 8, 2, PmFormat::V9);
    assert_eq!(over, over_subscription::PROCESS_COUNT);
    assert!(hws.over_subscribed());
    // Two processes at a time (process_cnt), rotated by the quantum.
    assert_eq!(gpu.mapped.len(), 2);
    for _ in 0..3 {
        hws.tick(&mut gpu);
        assert!(gpu.mapped.len() <= 2 && !gpu.mapped.is_empty());
    }
    assert_eq!(gpu.ever_mapped, (0..5).map(|i| 2 * i).collect());
    // Preempted, not reset.
    assert!(gpu.unmaps.iter().all(|&(_, reset)| !reset));
    assert_eq!(query(&mut gpu, &mut hws), Some(FENCE_COMPLETED));
}

#[test]
fn over_subscribed_queues_of_one_process_all_make_progress() {
    let (mut gpu, mut hws) = (Gpu::default(), Hws::<8, 64>::new(PmFormat::V9));
    let q: Vec<_> = (0..7).map(|i| queue(2 * i, Engine::Compute)).chain([queue(0x100, Engine::Sdma(1))]).collect();
    let over = start(&mut gpu, &mut hws, &[process(1, &q)], 3, 8, PmFormat::V9);
    assert_eq!(over, over_subscription::COMPUTE_QUEUE_COUNT);
    // Three compute HQDs; the SDMA queue takes none.
    assert_eq!(gpu.mapped.len(), 4);
    for _ in 0..3 {
        hws.tick(&mut gpu);
        assert_eq!(gpu.mapped.iter().filter(|&&d| d < 0x100).count(), 3);
    }
    assert_eq!(gpu.ever_mapped.len(), 8);
}

/// Heap tables, as the virtual GPU gives the model.
struct VecTable<T>(Vec<T>);

impl<T> Table<T> for VecTable<T> {
    fn all(&self) -> &[T] {
        &self.0
    }
    fn all_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

#[test]
fn guest_sized_over_subscription_on_heap_tables() {
    // The guest test's shape: 9 processes of 4 compute queues over 32
    // slots and 8 VMIDs, in tables larger than any array test's.
    let mut gpu = Gpu::default();
    let mut hws = HwsOn::with_tables(
        PmFormat::Aldebaran,
        VecTable(std::vec![MapProcess::default(); 512]),
        VecTable(std::vec![Some(Entry { process: 7, queue: queue(1, Engine::Compute), resident: true }); 4096]),
    );
    let q: Vec<Vec<MapQueues>> = (0..9).map(|p| (0..4).map(|i| queue(2 * (4 * p + i), Engine::Compute)).collect()).collect();
    let procs: Vec<_> = q.iter().enumerate().map(|(i, q)| process(i as u32 + 1, q)).collect();
    let res = SetResources { vmid_mask: 0xff00, queue_mask: 0xffff_ffff, ..SetResources::default() };
    let limits = RunlistLimits { max_proc_per_quantum: 8, cp_queues: 32, xnack_chain: false, ext_eng: false, format: PmFormat::Aldebaran };
    let mut ib = [0u32; 1024];
    let built = build_runlist_ib(&mut ib, IB, &procs, &limits).unwrap();
    assert_eq!(built.over_subscription, over_subscription::PROCESS_COUNT | over_subscription::COMPUTE_QUEUE_COUNT);
    gpu.put(IB, &ib[..built.dwords]);
    hws.hiq_packet::<()>(&mut gpu, Ok(Packet::SetResources(res)));
    let rl = RunList { ib_base: IB, ib_size: built.dwords as u32, chain: false, process_cnt: 8 };
    hws.hiq_packet::<()>(&mut gpu, Ok(Packet::RunList(rl)));
    assert_eq!(hws.hang(), None);
    assert_eq!(hws.processes().len(), 9);
    assert_eq!(hws.queues().count(), 36);
    // The first window: 8 processes, their 32 queues; the ninth waits.
    assert_eq!(gpu.mapped.len(), 32);
    hws.tick(&mut gpu);
    assert!(gpu.mapped.len() <= 32 && !gpu.mapped.is_empty());
    assert_eq!(gpu.ever_mapped.len(), 36, "every queue resident within one quantum");
    // A reset clears the (heap) tables in place.
    hws.reset(&mut gpu);
    assert!(gpu.mapped.is_empty());
    assert_eq!(hws.queues().count(), 0);
    assert!(hws.resources().is_none());
}

#[test]
fn without_the_chain_queues_past_the_slots_starve() {
    // The same runlist with its closing RUN_LIST dropped: the firmware maps
    // what fits and never rotates, so some queues never run.
    let (mut gpu, mut hws) = (Gpu::default(), Hws::<16, 64>::new(PmFormat::V9));
    let q: Vec<Vec<MapQueues>> = (0..9).map(|p| (0..4).map(|i| queue(2 * (4 * p + i), Engine::Compute)).collect()).collect();
    let procs: Vec<_> = q.iter().enumerate().map(|(i, q)| process(i as u32 + 1, q)).collect();
    let res = SetResources { vmid_mask: 0xff00, queue_mask: 0xffff_ffff, ..SetResources::default() };
    let limits = RunlistLimits { max_proc_per_quantum: 8, cp_queues: 32, xnack_chain: false, ext_eng: false, format: PmFormat::V9 };
    let mut ib = [0u32; 1024];
    let built = build_runlist_ib(&mut ib, IB, &procs, &limits).unwrap();
    let unchained = built.dwords - crate::pm4::RUNLIST_DWORDS;
    gpu.put(IB, &ib[..unchained]);
    hws.hiq_packet::<()>(&mut gpu, Ok(Packet::SetResources(res)));
    hws.hiq_packet::<()>(&mut gpu, Ok(Packet::RunList(RunList { ib_base: IB, ib_size: unchained as u32, chain: false, process_cnt: 8 })));
    assert!(!hws.over_subscribed());
    for _ in 0..4 {
        hws.tick(&mut gpu);
    }
    assert_eq!(gpu.ever_mapped.len(), 32);
}

#[test]
fn bad_packets_hang_it_until_reset() {
    let (mut gpu, mut hws) = (Gpu::default(), Hws::<8, 64>::new(PmFormat::V9));
    let qa = [queue(2, Engine::Compute)];
    start(&mut gpu, &mut hws, &[process(1, &qa)], 8, 8, PmFormat::V9);
    // pm_debugfs_hang_hws: 0x55 bytes on the HIQ.
    let ring = [0x5555_5555u32; 16];
    hws.hiq_packet::<_>(&mut gpu, next_packet(&ring, 0, 7).unwrap().map(|_| Packet::Other(0, &[])));
    assert_eq!(hws.hang(), Some(Hang::BadPacket));
    assert!(gpu.mapped.is_empty());
    // The preemption fence is never written: the driver times out.
    assert_eq!(query(&mut gpu, &mut hws), None);
    hws.reset(&mut gpu);
    assert_eq!(hws.hang(), None);
    assert_eq!(query(&mut gpu, &mut hws), Some(FENCE_COMPLETED));
    start(&mut gpu, &mut hws, &[process(1, &qa)], 8, 8, PmFormat::V9);
    assert_eq!(gpu.mapped, BTreeSet::from([2]));
    // A NOP filler is not something the HWS ever sees (the ring reader
    // steps over it), but an unknown opcode hangs it too.
    hws.hiq_packet::<()>(&mut gpu, Ok(Packet::Other(0x10, &[NOP_PACKET])));
    assert_eq!(hws.hang(), Some(Hang::BadPacket));
}

#[test]
fn map_process_page_table_base_must_be_its_pasids_vm() {
    for format in [PmFormat::V9, PmFormat::Aldebaran] {
        // Every MAP_PROCESS reaches the CP with the page table base the
        // driver put in.
        let (mut gpu, mut hws) = (Gpu::default(), Hws::<8, 64>::new(format));
        let (qa, qb) = ([queue(2, Engine::Compute)], [queue(4, Engine::Compute)]);
        start(&mut gpu, &mut hws, &[process(1, &qa), process(2, &qb)], 8, 8, format);
        assert_eq!(hws.hang(), None);
        assert_eq!(gpu.processes_taken, [(1, page_dir(1)), (2, page_dir(2))]);
        assert_eq!(gpu.mapped, BTreeSet::from([2, 4]));

        // Process 2's page table base names process 1's VM, or no VM:
        // a bad packet, the firmware hangs with nothing mapped and
        // answers no fence.
        for wrong in [page_dir(1), 0x7777_0001, 0] {
            let (mut gpu, mut hws) = (Gpu::default(), Hws::<8, 64>::new(format));
            gpu.vms.insert(2, page_dir(2));
            let mut b = process(2, &qb);
            b.map.page_table_base = wrong;
            start(&mut gpu, &mut hws, &[process(1, &qa), b], 8, 8, format);
            assert_eq!(hws.hang(), Some(Hang::BadPacket), "{wrong:#x}");
            assert!(gpu.ever_mapped.is_empty());
            assert_eq!(query(&mut gpu, &mut hws), None);
        }
    }
}

#[test]
fn runlist_errors_hang_it() {
    let qa = [queue(2, Engine::Compute)];
    // No SET_RESOURCES first.
    let (mut gpu, mut hws) = (Gpu::default(), Hws::<8, 64>::new(PmFormat::V9));
    hws.hiq_packet::<()>(&mut gpu, Ok(Packet::RunList(RunList { ib_base: IB, ib_size: 4, chain: false, process_cnt: 1 })));
    assert_eq!(hws.hang(), Some(Hang::NoResources));
    // An IB that is not there.
    let (mut gpu, mut hws) = (Gpu::default(), Hws::<8, 64>::new(PmFormat::V9));
    start(&mut gpu, &mut hws, &[process(1, &qa)], 8, 8, PmFormat::V9);
    hws.hiq_packet::<()>(&mut gpu, Ok(Packet::RunList(RunList { ib_base: 0xdead_0000, ib_size: 23, chain: false, process_cnt: 1 })));
    assert_eq!(hws.hang(), Some(Hang::BadIb));
    // Two IBs chaining to each other.
    let (mut gpu, mut hws) = (Gpu::default(), Hws::<8, 64>::new(PmFormat::V9));
    start(&mut gpu, &mut hws, &[], 8, 8, PmFormat::V9);
    gpu.put(0x8000, &RunList { ib_base: 0x9000, ib_size: 4, chain: true, process_cnt: 1 }.encode());
    gpu.put(0x9000, &RunList { ib_base: 0x8000, ib_size: 4, chain: true, process_cnt: 1 }.encode());
    hws.hiq_packet::<()>(&mut gpu, Ok(Packet::RunList(RunList { ib_base: 0x8000, ib_size: 4, chain: false, process_cnt: 1 })));
    assert_eq!(hws.hang(), Some(Hang::BadIb));
    // More queues than its tables hold.
    let many: Vec<_> = (0..9).map(|i| queue(2 * i, Engine::Compute)).collect();
    let (mut gpu, mut small) = (Gpu::default(), Hws::<8, 64>::new(PmFormat::V9));
    let mut tiny = Hws::<8, 8>::new(PmFormat::V9);
    start(&mut gpu, &mut small, &[process(1, &many)], 8, 8, PmFormat::V9);
    assert_eq!(small.hang(), None);
    let rl = RunList { ib_base: IB, ib_size: (crate::pm4::MAP_PROCESS_DWORDS + 9 * crate::pm4::MAP_QUEUES_DWORDS) as u32 + crate::pm4::RUNLIST_DWORDS as u32, chain: false, process_cnt: 1 };
    tiny.hiq_packet::<()>(&mut gpu, Ok(Packet::SetResources(SetResources { queue_mask: 0xff, ..SetResources::default() })));
    tiny.hiq_packet::<()>(&mut gpu, Ok(Packet::RunList(rl)));
    assert_eq!(tiny.hang(), Some(Hang::Overflow));
    // An MQD the CP refuses.
    let (mut gpu, mut hws) = (Gpu { refuse: Some(2), ..Gpu::default() }, Hws::<8, 64>::new(PmFormat::V9));
    start(&mut gpu, &mut hws, &[process(1, &qa)], 8, 8, PmFormat::V9);
    assert_eq!(hws.hang(), Some(Hang::BadMqd));
}
