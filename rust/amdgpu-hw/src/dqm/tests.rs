// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The scheduler logic driving the HWS model through the HIQ ring, as rkfd
//! and the virtual GPU will: queues created, evicted, restored, a hang.

use super::*;
use crate::hws::{Cp, Hws};
use crate::kernel_queue::{next_packet, KernelRing};
use crate::pm4::{
    build_runlist_ib, parse, Engine, MapProcess, MapQueues, PmFormat, RunList, RunlistLimits, RunlistProcess,
};
extern crate std;
use std::collections::{BTreeMap, BTreeSet};
use std::vec::Vec;

const FENCE: u64 = 0xf000;
const IB: u64 = 0x10_0000;

#[derive(Default)]
struct Gpu {
    mem: BTreeMap<u64, u32>,
    fence: u64,
    mapped: BTreeSet<u32>,
}

impl Cp for Gpu {
    fn read(&mut self, addr: u64, out: &mut [u32]) -> bool {
        out.iter_mut().enumerate().all(|(i, o)| self.mem.get(&(addr + 4 * i as u64)).map(|d| *o = *d).is_some())
    }
    fn write_u64(&mut self, addr: u64, value: u64) -> bool {
        if addr == FENCE {
            self.fence = value;
        }
        addr == FENCE
    }
    fn interrupt(&mut self, _: u32) {}
    // The driver-side tests do not check the page table base (the HWS
    // model's tests do): every process's VM is taken.
    fn map_process(&mut self, _: &MapProcess) -> bool {
        true
    }
    fn map(&mut self, _: &MapProcess, q: &MapQueues) -> bool {
        self.mapped.insert(q.doorbell_off)
    }
    fn unmap(&mut self, _: &MapProcess, q: &MapQueues, _: bool) {
        self.mapped.remove(&q.doorbell_off);
    }
}

/// A process as the driver keeps it: PASID, queues with an active flag,
/// and its eviction count.
struct Proc {
    pasid: u32,
    queues: Vec<(MapQueues, bool)>,
    evicted: Evictions,
}

/// The driver's HIQ, with the GPU's CP reading the ring on each doorbell.
struct Driver {
    ring: [u32; 512],
    kq: KernelRing,
    rptr: u64,
    gpu: Gpu,
    hws: Hws<8, 64>,
    procs: Vec<Proc>,
    hangs: u32,
    ib_live: bool,
}

impl Driver {
    fn new() -> Driver {
        Driver {
            ring: [0; 512],
            kq: KernelRing::new(2048).unwrap(),
            rptr: 0,
            gpu: Gpu::default(),
            hws: Hws::new(PmFormat::V9),
            procs: Vec::new(),
            hangs: 0,
            ib_live: false,
        }
    }

    /// The doorbell: the CP takes every packet up to the write pointer.
    fn doorbell(&mut self, wptr: u64) {
        while let Some(p) = next_packet(&self.ring, self.rptr, wptr) {
            match p {
                Ok((at, len)) => {
                    self.rptr += len as u64;
                    let packet = parse(&self.ring[at..at + len], PmFormat::V9).next().unwrap();
                    self.hws.hiq_packet(&mut self.gpu, packet);
                }
                Err(e) => {
                    self.hws.hiq_packet::<_>(&mut self.gpu, Err(e));
                    // A hung CP stops reading.
                    return;
                }
            }
        }
    }

    fn active(&self) -> u32 {
        self.procs.iter().map(|p| p.queues.iter().filter(|q| q.1).count() as u32).sum()
    }
}

impl Hiq for Driver {
    type Error = &'static str;
    fn submit(&mut self, packets: &[u32]) -> Result<(), &'static str> {
        let rptr = (self.rptr % 512) as u32;
        let at = self.kq.acquire(&mut self.ring, rptr, packets.len() as u32).map_err(|_| "ENOMEM")?;
        self.ring[at..at + packets.len()].copy_from_slice(packets);
        let w = self.kq.submit();
        self.doorbell(w);
        Ok(())
    }
    fn set_fence(&mut self, value: u64) {
        self.gpu.fence = value;
    }
    fn wait_fence(&mut self, value: u64) -> bool {
        self.gpu.fence == value
    }
    fn send_runlist(&mut self) -> Result<(), &'static str> {
        assert!(!self.ib_live, "runlist IB allocated twice (pm->allocated)");
        let procs: Vec<(u32, Vec<MapQueues>)> = self
            .procs
            .iter()
            .map(|p| (p.pasid, p.queues.iter().filter(|q| q.1).map(|q| q.0).collect()))
            .collect();
        let rl: Vec<RunlistProcess<'_>> = procs
            .iter()
            .map(|(pasid, q)| RunlistProcess {
                map: MapProcess { pasid: *pasid, process_quantum: 10, num_queues: q.len() as u32, ..MapProcess::default() },
                xnack_enabled: false,
                queues: q,
            })
            .collect();
        let limits = RunlistLimits { max_proc_per_quantum: 2, cp_queues: 4, xnack_chain: false, ext_eng: false, format: PmFormat::V9 };
        let mut ib = [0u32; 1024];
        let built = build_runlist_ib(&mut ib, IB, &rl, &limits).map_err(|_| "ENOMEM")?;
        for (i, d) in ib[..built.dwords].iter().enumerate() {
            self.gpu.mem.insert(IB + 4 * i as u64, *d);
        }
        self.ib_live = true;
        let run = RunList { ib_base: IB, ib_size: built.dwords as u32, chain: false, process_cnt: rl.len().min(2) as u32 };
        self.submit(&run.encode())
    }
    fn release_ib(&mut self) {
        self.ib_live = false;
    }
    fn hws_hang(&mut self) {
        self.hangs += 1;
    }
    fn io_error(&self) -> &'static str {
        "EIO"
    }
    fn timeout_error(&self) -> &'static str {
        "ETIME"
    }
}

fn q(doorbell: u32) -> (MapQueues, bool) {
    (MapQueues { engine: Engine::Compute, is_static: false, is_gws: false, doorbell_off: doorbell, mqd_addr: 0x1000 * u64::from(doorbell), wptr_addr: 0 }, true)
}

fn res() -> SetResources {
    SetResources { vmid_mask: 0xff00, queue_mask: 0xf, gws_mask: u64::MAX, unmap_latency: 40, ..SetResources::default() }
}

/// create_queue_cpsch: add the queue, count it, execute.
fn create(d: &mut Driver, c: &mut Cpsch, proc_index: usize, doorbell: u32) -> Result<(), &'static str> {
    d.procs[proc_index].queues.push(q(doorbell));
    c.active_queue_count = d.active();
    c.execute(d, UnmapFilter::DynamicQueues)
}

#[test]
fn policies_as_upstream() {
    assert_eq!(SchedPolicy::from_param(0), Some(SchedPolicy::Hws));
    assert_eq!(SchedPolicy::from_param(1), Some(SchedPolicy::HwsNoOversubscription));
    assert_eq!(SchedPolicy::from_param(2), Some(SchedPolicy::NoHws));
    assert_eq!(SchedPolicy::from_param(3), None);
    assert_eq!(SchedPolicy::from_param(-1), None);
    assert!(SchedPolicy::Hws.uses_hws() && !SchedPolicy::NoHws.uses_hws());
    // Policy 1 refuses a compute queue once the VMIDs or HQD slots are full.
    assert!(SchedPolicy::HwsNoOversubscription.refuses_compute_queue(8, 8, 0, 24));
    assert!(SchedPolicy::HwsNoOversubscription.refuses_compute_queue(1, 8, 24, 24));
    assert!(!SchedPolicy::HwsNoOversubscription.refuses_compute_queue(1, 8, 23, 24));
    assert!(!SchedPolicy::Hws.refuses_compute_queue(100, 8, 100, 24));
}

#[test]
fn queues_come_and_go_through_runlists() {
    let mut d = Driver::new();
    let mut c = Cpsch::new(FENCE, false);
    d.procs.push(Proc { pasid: 1, queues: Vec::new(), evicted: Evictions::default() });
    c.processes_count = 1;
    c.start(&mut d, &res()).unwrap();
    // Nothing to run yet: no runlist.
    assert!(!c.active_runlist());
    create(&mut d, &mut c, 0, 2).unwrap();
    assert!(c.active_runlist());
    assert_eq!(d.gpu.mapped, BTreeSet::from([2]));
    create(&mut d, &mut c, 0, 4).unwrap();
    assert_eq!(d.gpu.mapped, BTreeSet::from([2, 4]));
    // destroy_queue_cpsch: drop it, execute.
    d.procs[0].queues.retain(|q| q.0.doorbell_off != 2);
    c.active_queue_count = d.active();
    c.execute(&mut d, UnmapFilter::DynamicQueues).unwrap();
    assert_eq!(d.gpu.mapped, BTreeSet::from([4]));
    // update_queue making it inactive: no runlist at all.
    d.procs[0].queues[0].1 = false;
    c.active_queue_count = d.active();
    c.execute(&mut d, UnmapFilter::DynamicQueues).unwrap();
    assert!(!c.active_runlist() && d.gpu.mapped.is_empty());
    c.stop(&mut d);
}

#[test]
fn eviction_is_counted_and_restores_the_queues() {
    let mut d = Driver::new();
    let mut c = Cpsch::new(FENCE, false);
    for pasid in [1, 2] {
        d.procs.push(Proc { pasid, queues: Vec::new(), evicted: Evictions::default() });
    }
    c.processes_count = 2;
    c.start(&mut d, &res()).unwrap();
    create(&mut d, &mut c, 0, 2).unwrap();
    create(&mut d, &mut c, 1, 6).unwrap();
    // Two evictions of process 1 (e.g. a userptr invalidation during an
    // SVM one), one restore, then the last.
    assert!(d.procs[0].evicted.evict());
    for q in &mut d.procs[0].queues {
        q.1 = false;
    }
    c.active_queue_count = d.active();
    c.execute(&mut d, UnmapFilter::DynamicQueues).unwrap();
    assert_eq!(d.gpu.mapped, BTreeSet::from([6]));
    assert!(!d.procs[0].evicted.evict());
    assert!(!d.procs[0].evicted.restore());
    assert!(d.procs[0].evicted.is_evicted());
    assert!(d.procs[0].evicted.restore());
    for q in &mut d.procs[0].queues {
        q.1 = true;
    }
    c.active_queue_count = d.active();
    c.execute(&mut d, UnmapFilter::DynamicQueues).unwrap();
    assert_eq!(d.gpu.mapped, BTreeSet::from([2, 6]));
    assert!(!d.procs[0].evicted.restore(), "restore without eviction does nothing");
}

#[test]
fn oversubscribed_runlist_from_the_driver() {
    let mut d = Driver::new();
    let mut c = Cpsch::new(FENCE, false);
    for pasid in 1..=3 {
        d.procs.push(Proc { pasid, queues: Vec::new(), evicted: Evictions::default() });
    }
    c.processes_count = 3;
    c.start(&mut d, &res()).unwrap();
    for (i, db) in [(0, 2), (1, 4), (2, 6)] {
        create(&mut d, &mut c, i, db).unwrap();
    }
    assert!(d.hws.over_subscribed());
    let mut seen = d.gpu.mapped.clone();
    for _ in 0..3 {
        d.hws.tick(&mut d.gpu);
        seen.extend(d.gpu.mapped.iter().copied());
    }
    assert_eq!(seen, BTreeSet::from([2, 4, 6]));
    // Preemption still answers while over-subscribed.
    c.execute(&mut d, UnmapFilter::Pasid(2)).unwrap();
}

#[test]
fn a_hung_hws_times_out_once_then_eio_until_reset() {
    let mut d = Driver::new();
    let mut c = Cpsch::new(FENCE, false);
    d.procs.push(Proc { pasid: 1, queues: Vec::new(), evicted: Evictions::default() });
    c.processes_count = 1;
    c.start(&mut d, &res()).unwrap();
    create(&mut d, &mut c, 0, 2).unwrap();
    // hang_hws: 0x55 bytes on the HIQ (pm_debugfs_hang_hws).
    d.submit(&[0x5555_5555; 7]).unwrap();
    assert!(d.hws.hang().is_some());
    // The next preemption's fence never comes.
    assert_eq!(create(&mut d, &mut c, 0, 4), Err("ETIME"));
    assert!(c.is_hws_hang());
    assert_eq!(d.hangs, 1);
    assert_eq!(c.execute(&mut d, UnmapFilter::DynamicQueues), Err("EIO"));
    assert_eq!(d.hangs, 1);
    // The reset: the firmware and the ring start over, the queues are
    // mapped again.
    d.hws.reset(&mut d.gpu);
    d.kq = KernelRing::new(2048).unwrap();
    d.rptr = 0;
    d.ib_live = false;
    c.reset_done();
    c.start(&mut d, &res()).unwrap();
    assert_eq!(d.gpu.mapped, BTreeSet::from([2, 4]));
}

#[test]
fn admission_as_policy_1_and_none_under_policy_0() {
    let t = HwsTables { vmids: 8, cp_queues: 32 };
    // Room: every policy admits.
    for p in [SchedPolicy::Hws, SchedPolicy::HwsNoOversubscription] {
        assert_eq!(admit(p, t, true, 3, 10), Ok(()));
    }
    // Policy 1: a compute queue refused once the active queues fill the
    // slots or the processes the VMIDs (upstream -EPERM); SDMA is not.
    assert_eq!(admit(SchedPolicy::HwsNoOversubscription, t, true, 8, 9), Err(Refusal::Oversubscription));
    assert_eq!(admit(SchedPolicy::HwsNoOversubscription, t, true, 7, 9), Ok(()));
    assert_eq!(admit(SchedPolicy::HwsNoOversubscription, t, true, 2, 32), Err(Refusal::Oversubscription));
    assert_eq!(admit(SchedPolicy::HwsNoOversubscription, t, true, 2, 31), Ok(()));
    assert_eq!(admit(SchedPolicy::HwsNoOversubscription, t, false, 8, 32), Ok(()));
    // Policy 0: past the VMIDs and the slots too (the runlist is chained).
    assert_eq!(admit(SchedPolicy::Hws, t, true, 8, 32), Ok(()));
    assert_eq!(admit(SchedPolicy::Hws, t, true, 100, 1000), Ok(()));
}

#[test]
fn tables_of_shared_resources_are_the_set_resources_ones() {
    // A GPU scheduled by MES has no SET_RESOURCES; policy 1 counts the
    // same VMIDs and HQD slots from the shared resources (upstream's
    // vmid_num_kfd and get_cp_queues_num, whatever the scheduler).
    // With and without HQDs the GPU driver keeps (left out of both).
    for (pipes, qpp, reserved) in [(4, 8, 0), (4, 128, 0), (2, 8, 0), (4, 2, 0), (1, 1, 0), (4, 8, 0x101), (4, 128, 1 << 3)] {
        let shared = hws_shared_resources(0xff00, pipes, qpp, reserved);
        let res = crate::pm4::SetResources::for_scheduler(&shared, false, 9000).unwrap();
        assert_eq!(HwsTables::of_shared(&shared), HwsTables::of(&res), "{pipes} pipes x {qpp}, reserved {reserved:#x}");
    }
    // rkfd's virtual MEC (4 x 128 HQDs): 8 VMIDs, 4 x 8 slots.
    assert_eq!(HwsTables::of_shared(&hws_shared_resources(0xff00, 4, 128, 0)), HwsTables { vmids: 8, cp_queues: 32 });
    // amdgpu keeping two of the first MEC's 32: 30 slots.
    assert_eq!(HwsTables::of_shared(&hws_shared_resources(0xff00, 4, 8, 0x101)), HwsTables { vmids: 8, cp_queues: 30 });
}

#[test]
fn max_proc_per_quantum_from_hws_max_conc_proc() {
    // Unset (-1, upstream's default): the KFD VMIDs.
    assert_eq!(max_proc_per_quantum(-1, 8), 8);
    assert_eq!(max_proc_per_quantum(i32::MIN, 8), 8);
    // Set: bounded by the VMIDs.
    assert_eq!(max_proc_per_quantum(0, 8), 0);
    assert_eq!(max_proc_per_quantum(2, 8), 2);
    assert_eq!(max_proc_per_quantum(8, 8), 8);
    assert_eq!(max_proc_per_quantum(9, 8), 8);
    assert_eq!(max_proc_per_quantum(i32::MAX, 8), 8);
}

#[test]
fn hws_slots_are_eight_queues_a_pipe() {
    // The virtual MEC: 4 pipes of 128 HQDs; the HWS gets 8 of each.
    let r = hws_shared_resources(0xff00, 4, 128, 0);
    let s = SetResources::for_scheduler(&r, false, 9000).unwrap();
    assert_eq!(s.queue_mask, 0xffff_ffff);
    assert_eq!(HwsTables::of(&s), HwsTables { vmids: 8, cp_queues: 32 });
    // A MEC with fewer queues a pipe keeps them all.
    let s = SetResources::for_scheduler(&hws_shared_resources(0xff00, 2, 4, 0), false, 9000).unwrap();
    assert_eq!(s.queue_mask, 0x0f0f);
    assert_eq!(SetResources::for_scheduler(&hws_shared_resources(0xff00, 0, 8, 0), false, 9000), Err(crate::pm4::SetResourcesError::NoQueues));
}

#[test]
fn hws_slots_leave_out_the_drivers_reserved_hqds() {
    // amdgpu's compute rings on a 4 x 8 MEC at pipes 0 and 1, queue 0:
    // SET_RESOURCES' queue mask leaves their bits out.
    let s = SetResources::for_scheduler(&hws_shared_resources(0xff00, 4, 8, 0x101), false, 9000).unwrap();
    assert_eq!(s.queue_mask, 0xffff_fefe);
    assert_eq!(HwsTables::of(&s), HwsTables { vmids: 8, cp_queues: 30 });
    // With 128 HQDs a pipe the reserved slot of pipe 0 queue 3 is bit 3,
    // pipe 1's slots (128 on) cannot be reserved.
    let s = SetResources::for_scheduler(&hws_shared_resources(0xff00, 4, 128, 1 << 3), false, 9000).unwrap();
    assert_eq!(s.queue_mask, 0xffff_fff7);
    // Every slot reserved: an empty queue mask, no runlist slot.
    let s = SetResources::for_scheduler(&hws_shared_resources(0xff00, 2, 4, u128::MAX), false, 9000).unwrap();
    assert_eq!(s.queue_mask, 0);
    assert_eq!(HwsTables::of(&s).cp_queues, 0);
}

#[test]
fn the_device_takes_4096_queues_then_refuses() {
    assert_eq!(admit_on_device(0), Ok(()));
    assert_eq!(admit_on_device(MAX_NUM_OF_QUEUES_PER_DEVICE - 1), Ok(()));
    assert_eq!(admit_on_device(4096), Err(Refusal::DeviceQueueLimit));
    assert_eq!(admit_on_device(u32::MAX), Err(Refusal::DeviceQueueLimit));
}

/// A pasid that counts the comparisons made on it.
#[derive(Clone, Copy, Debug)]
struct Counted<'a>(u32, &'a core::cell::Cell<usize>);

impl PartialEq for Counted<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.1.set(self.1.get() + 1);
        self.0 == o.0
    }
}
impl Eq for Counted<'_> {}
impl PartialOrd for Counted<'_> {
    fn partial_cmp(&self, o: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Counted<'_> {
    fn cmp(&self, o: &Self) -> core::cmp::Ordering {
        self.1.set(self.1.get() + 1);
        self.0.cmp(&o.0)
    }
}

#[test]
fn process_counts_of_small_lists() {
    assert_eq!(process_count::<u32>(&mut []), 0);
    assert_eq!(process_count_with::<u32>(&mut [], &7), 1);
    assert_eq!(process_count(&mut [5, 3, 5, 5, 3]), 2);
    assert_eq!(process_count_with(&mut [5, 3, 5], &3), 2);
    assert_eq!(process_count_with(&mut [5, 3, 5], &4), 3);
}

/// At the device's 4096-queue limit, 512 processes (the firmware's most)
/// interleaved: the count is right and takes O(n log n) comparisons, not
/// the ~n * processes / 2 of a `contains` loop over the processes seen
/// (about a million here).
#[test]
fn process_count_at_the_queue_limit_is_n_log_n() {
    let n = MAX_NUM_OF_QUEUES_PER_DEVICE as usize;
    let cmps = core::cell::Cell::new(0);
    // Queue i belongs to process (i * 7) % 512 + 1: every process 8 times,
    // no two neighbours alike.
    let mut pasids: Vec<Counted<'_>> = (0..n).map(|i| Counted((i as u32 * 7) % 512 + 1, &cmps)).collect();
    let new = Counted(9999, &cmps);
    assert_eq!(process_count_with(&mut pasids, &new), 513);
    let made = cmps.get();
    let log2 = usize::BITS - n.leading_zeros();
    let bound = 4 * n * log2 as usize;
    assert!(made <= bound, "{made} comparisons for {n} queues (bound {bound})");
    // An existing process is not counted twice.
    let old = Counted(8, &cmps);
    assert_eq!(process_count_with(&mut pasids, &old), 512);
}

#[test]
fn eviction_count_saturates_instead_of_overflowing() {
    // The kernel builds with overflow checks: a panic there is a BUG().
    let mut e = Evictions(u32::MAX - 1);
    assert!(!e.evict());
    assert!(!e.evict(), "saturated, still evicted, no panic");
    assert!(e.is_evicted());
    assert!(!e.restore());
}

/// `kgd2kfd_stop_sched` / `start_sched` (`halt_cpsch` / `unhalt_cpsch`):
/// halting unmaps the runlist and keeps new queues off the HWS until the
/// unhalt maps them all; halting twice or unhalting a running scheduler
/// changes nothing; a stopped scheduler is neither.
#[test]
fn halt_unmaps_and_holds_the_runlist_until_unhalt() {
    let mut d = Driver::new();
    let mut c = Cpsch::new(FENCE, false);
    d.procs.push(Proc { pasid: 1, queues: Vec::new(), evicted: Evictions::default() });
    c.processes_count = 1;
    // Stopped: halting is nothing.
    c.halt(&mut d).unwrap();
    assert!(!c.is_halted() && !c.is_running());
    c.start(&mut d, &res()).unwrap();
    create(&mut d, &mut c, 0, 2).unwrap();
    assert_eq!(d.gpu.mapped, BTreeSet::from([2]));
    // Unhalting a running scheduler: nothing.
    c.unhalt(&mut d).unwrap();
    assert_eq!(d.gpu.mapped, BTreeSet::from([2]));
    c.halt(&mut d).unwrap();
    assert!(c.is_halted() && !c.active_runlist() && d.gpu.mapped.is_empty());
    c.halt(&mut d).unwrap();
    assert!(c.is_halted() && d.gpu.mapped.is_empty());
    // A queue created while halted waits.
    create(&mut d, &mut c, 0, 4).unwrap();
    assert!(!c.active_runlist() && d.gpu.mapped.is_empty());
    c.unhalt(&mut d).unwrap();
    assert!(!c.is_halted() && c.active_runlist());
    assert_eq!(d.gpu.mapped, BTreeSet::from([2, 4]));
    // Stopped while halted (a suspend), started again: still halted, as
    // upstream (`start_cpsch` leaves `sched_halt`), until the unhalt.
    c.halt(&mut d).unwrap();
    c.stop(&mut d);
    c.reset_done();
    c.start(&mut d, &res()).unwrap();
    assert!(c.is_halted() && c.is_running() && d.gpu.mapped.is_empty());
    c.unhalt(&mut d).unwrap();
    assert_eq!(d.gpu.mapped, BTreeSet::from([2, 4]));
}
