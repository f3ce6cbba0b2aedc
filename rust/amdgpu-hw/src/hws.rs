// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The CP's hardware scheduler (HWS) as the virtual GPU plays it: what the
//! MEC firmware does with the packets amdkfd writes to the HIQ.
//!
//! No upstream C counterpart (it is firmware); the behaviour follows what
//! amdkfd relies on (`kfd_device_queue_manager.c`, `kfd_packet_manager*.c`):
//!
//! - SET_RESOURCES gives the HQD slots (`queue_mask`) and VMIDs; nothing
//!   is scheduled before it.
//! - RUN_LIST replaces the runlist: the IB (at a GPU address, read through
//!   [`Cp::read`]) holds one MAP_PROCESS per process followed by its
//!   MAP_QUEUES; a RUN_LIST at its end chaining to the IB itself marks it
//!   over-subscribed (`pm_create_runlist_ib`), a chain elsewhere continues
//!   there.
//! - Scheduling: without over-subscription every listed queue is mapped
//!   ([`Cp::map`], the CP loading the MQD into an HQD).  Over-subscribed,
//!   a window of at most `process_cnt` processes whose compute queues fit
//!   the slots is mapped, and [`Hws::tick`] (the quantum) preempts it
//!   ([`Cp::unmap`], saving the state into the MQDs) and maps the next, so
//!   every process makes progress.
//! - UNMAP_QUEUES preempts (or resets) the selected queues and drops them
//!   from the runlist until the next RUN_LIST: by PASID, all, all
//!   non-static, or by doorbell.
//! - QUERY_STATUS runs after everything before it is done: it writes the
//!   fence and/or raises the interrupt its command asks for.
//! - A packet the firmware cannot take (not type 3, truncated, reserved
//!   fields, an unknown opcode, an IB it cannot read or that overflows its
//!   tables, a MAP_PROCESS whose page table base is not its PASID's VM,
//!   an MQD it cannot load) hangs it: from then on it answers
//!   nothing, so the driver's preemption fence times out and it resets the
//!   GPU ([`Hws::reset`]) — upstream's `hang_hws` path.

use super::pm4::{
    parse, Engine, MapProcess, MapQueues, Packet, PmFormat, QueryStatus, RunList, SetResources, UnmapAction,
    UnmapFilter, UnmapQueues, MAP_PROCESS_MAX_DWORDS,
};

/// What the HWS does to the rest of the GPU.
pub trait Cp {
    /// Reads `out.len()` dwords at GPU address `addr` (the runlist IB, in
    /// the GART); false if it cannot.
    fn read(&mut self, addr: u64, out: &mut [u32]) -> bool;
    /// Writes a 64-bit value at GPU address `addr` (a fence); false if it
    /// cannot.
    fn write_u64(&mut self, addr: u64, value: u64) -> bool;
    /// Raises the end-of-query interrupt with `context_id`.
    fn interrupt(&mut self, context_id: u32);
    /// Takes a MAP_PROCESS into the tables: a CP programs the VMID's page
    /// table from `process.page_table_base`, so it must name a VM, the one
    /// `process.pasid` is the PASID of; false if it does not (the packet
    /// is bad: the firmware hangs).
    fn map_process(&mut self, process: &MapProcess) -> bool;
    /// Loads `queue` of `process` into an HQD from its MQD; false if the
    /// MQD cannot be loaded.
    fn map(&mut self, process: &MapProcess, queue: &MapQueues) -> bool;
    /// Takes `queue` off its HQD: preempted, its state saved into its MQD
    /// so a later [`Cp::map`] resumes it, or reset (dropped).
    fn unmap(&mut self, process: &MapProcess, queue: &MapQueues, reset: bool);
}

/// Why the HWS hung (kept for the debugfs/hqds view and the tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hang {
    /// A HIQ or IB packet it could not parse, or a reserved opcode.
    BadPacket,
    /// An IB it could not read, or a chain loop.
    BadIb,
    /// More processes or queues than its tables hold.
    Overflow,
    /// A RUN_LIST before SET_RESOURCES.
    NoResources,
    /// An MQD [`Cp::map`] refused.
    BadMqd,
}

/// How many chained IBs one RUN_LIST may follow before the firmware gives
/// up (a chain loop through other IBs).
const MAX_CHAIN: usize = 16;

/// One queue of the runlist (an entry of the scheduler's queue table).
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Index of its process in `procs`.
    process: usize,
    queue: MapQueues,
    resident: bool,
}

/// Where the scheduler keeps a table: a fixed array (the host tests), or
/// a slice on the heap (the virtual GPU, whose tables hold a whole
/// device's runlist and would not fit a kernel stack).  The length is the
/// table's capacity: a runlist with more entries hangs the firmware.
pub trait Table<T> {
    /// The entries.
    fn all(&self) -> &[T];
    /// The entries, writable.
    fn all_mut(&mut self) -> &mut [T];
}

impl<T, const N: usize> Table<T> for [T; N] {
    fn all(&self) -> &[T] {
        self
    }
    fn all_mut(&mut self) -> &mut [T] {
        self
    }
}

/// The HWS with array tables of `P` processes and `Q` queues.
pub type Hws<const P: usize, const Q: usize> = HwsOn<[MapProcess; P], [Option<Entry>; Q]>;

/// The HWS: its runlist in the tables `PT` (processes) and `QT` (queues).
pub struct HwsOn<PT, QT> {
    format: PmFormat,
    resources: Option<SetResources>,
    procs: PT,
    nprocs: usize,
    queues: QT,
    /// The runlist chains to itself.
    over_subscribed: bool,
    /// `process_cnt` of the RUN_LIST.
    process_cnt: u32,
    /// First process of the resident window.
    cursor: usize,
    /// First queue entry [`Hws::schedule`] considers: rotated by
    /// [`Hws::tick`] so that a process with more compute queues than slots
    /// gets all of them served in turn.
    qcursor: usize,
    hang: Option<Hang>,
}

impl<const P: usize, const Q: usize> Hws<P, Q> {
    /// A HWS reading MAP_PROCESS in `format`, with no resources yet.
    pub fn new(format: PmFormat) -> Self {
        HwsOn::with_tables(format, [MapProcess::default(); P], [None; Q])
    }
}

impl<PT: Table<MapProcess>, QT: Table<Option<Entry>>> HwsOn<PT, QT> {
    /// A HWS reading MAP_PROCESS in `format` with the tables `procs` and
    /// `queues` (their contents are ignored), with no resources yet.
    pub fn with_tables(format: PmFormat, procs: PT, mut queues: QT) -> Self {
        queues.all_mut().fill(None);
        HwsOn {
            format,
            resources: None,
            procs,
            nprocs: 0,
            queues,
            over_subscribed: false,
            process_cnt: 0,
            cursor: 0,
            qcursor: 0,
            hang: None,
        }
    }

    /// Why it hung, if it did.
    pub fn hang(&self) -> Option<Hang> {
        self.hang
    }

    /// The resources of the last SET_RESOURCES.
    pub fn resources(&self) -> Option<&SetResources> {
        self.resources.as_ref()
    }

    /// The runlist is over-subscribed (chained to itself).
    pub fn over_subscribed(&self) -> bool {
        self.over_subscribed
    }

    /// Processes in the runlist.
    pub fn processes(&self) -> &[MapProcess] {
        &self.procs.all()[..self.nprocs]
    }

    /// The queues of the runlist and whether each is mapped now.
    pub fn queues(&self) -> impl Iterator<Item = (&MapProcess, &MapQueues, bool)> + '_ {
        self.queues.all().iter().flatten().map(|e| (&self.procs.all()[e.process], &e.queue, e.resident))
    }

    /// HQD slots for compute queues (`queue_mask`'s bits).
    fn slots(&self) -> u32 {
        self.resources.map_or(0, |r| r.queue_mask.count_ones())
    }

    fn hung(&mut self, cp: &mut impl Cp, why: Hang) {
        // Hung firmware stops serving: take everything off the HQDs as a
        // wedged MEC would stop fetching (the queues' memory is left alone).
        if self.hang.is_none() {
            self.unmap_where(cp, true, |_, _| true);
            self.hang = Some(why);
        }
    }

    /// Takes one packet off the HIQ (`Err` from the ring reader or the
    /// parser hangs the HWS).  Ignored once hung.
    pub fn hiq_packet<E>(&mut self, cp: &mut impl Cp, packet: Result<Packet<'_>, E>) {
        if self.hang.is_some() {
            return;
        }
        let Ok(packet) = packet else {
            return self.hung(cp, Hang::BadPacket);
        };
        match packet {
            Packet::SetResources(r) => self.resources = Some(r),
            Packet::RunList(rl) => self.run_list(cp, rl),
            Packet::MapProcess(m) => {
                if self.nprocs == self.procs.all().len() {
                    return self.hung(cp, Hang::Overflow);
                }
                self.procs.all_mut()[self.nprocs] = m;
                self.nprocs += 1;
                self.schedule(cp);
            }
            Packet::MapQueues(q) => {
                if self.add_queue(q).is_err() {
                    return self.hung(cp, Hang::Overflow);
                }
                self.schedule(cp);
            }
            Packet::UnmapQueues(u) => self.unmap_queues(cp, &u),
            Packet::QueryStatus(q) => self.query_status(cp, &q),
            // RELEASE_MEM on the HIQ: nothing amdkfd sends there.
            Packet::ReleaseMem(_) | Packet::Other(..) => self.hung(cp, Hang::BadPacket),
        }
    }

    /// A GPU reset (amdgpu's `gpu_reset` after `hang_hws`): every queue is
    /// dropped, the firmware starts over without resources or runlist.
    pub fn reset(&mut self, cp: &mut impl Cp) {
        if self.hang.is_none() {
            self.unmap_where(cp, true, |_, _| true);
        }
        // In place: the tables may be too large for a stack temporary.
        self.resources = None;
        self.nprocs = 0;
        self.queues.all_mut().fill(None);
        self.over_subscribed = false;
        self.process_cnt = 0;
        self.cursor = 0;
        self.qcursor = 0;
        self.hang = None;
    }

    /// The quantum expired: over-subscribed, preempt the resident window
    /// and map the next one.
    pub fn tick(&mut self, cp: &mut impl Cp) {
        if self.hang.is_some() || !self.over_subscribed || self.nprocs == 0 {
            return;
        }
        let window = self.window_len();
        // The queue entries after the last resident compute queue go first
        // next time.
        let resident_compute = |i: &usize| self.queues.all()[*i].is_some_and(|e| e.resident && e.queue.engine == Engine::Compute);
        let q = self.queues.all().len();
        if let Some(last) = (0..q).rev().map(|k| (self.qcursor + k) % q).find(resident_compute) {
            self.qcursor = (last + 1) % q;
        }
        self.unmap_where(cp, false, |_, _| true);
        self.cursor = (self.cursor + window) % self.nprocs;
        self.schedule(cp);
    }

    fn add_queue(&mut self, queue: MapQueues) -> Result<(), ()> {
        if self.nprocs == 0 {
            return Err(());
        }
        let slot = self.queues.all_mut().iter_mut().find(|e| e.is_none()).ok_or(())?;
        *slot = Some(Entry { process: self.nprocs - 1, queue, resident: false });
        Ok(())
    }

    fn run_list(&mut self, cp: &mut impl Cp, rl: RunList) {
        if self.resources.is_none() {
            return self.hung(cp, Hang::NoResources);
        }
        // The new runlist replaces the old one.
        self.unmap_where(cp, false, |_, _| true);
        self.nprocs = 0;
        self.queues.all_mut().fill(None);
        self.over_subscribed = false;
        self.cursor = 0;
        self.qcursor = 0;
        self.process_cnt = rl.process_cnt;
        let mut ib = rl;
        for _ in 0..MAX_CHAIN {
            match self.read_ib(cp, &ib) {
                Err(h) => return self.hung(cp, h),
                Ok(None) => return self.schedule(cp),
                Ok(Some(next)) if next.ib_base == ib.ib_base => {
                    self.over_subscribed = true;
                    self.process_cnt = next.process_cnt;
                    return self.schedule(cp);
                }
                Ok(Some(next)) => ib = next,
            }
        }
        self.hung(cp, Hang::BadIb)
    }

    /// Reads one IB into the tables; `Some` RUN_LIST if it chains on.
    fn read_ib(&mut self, cp: &mut impl Cp, rl: &RunList) -> Result<Option<RunList>, Hang> {
        let size = rl.ib_size as usize;
        let mut at = 0;
        let mut buf = [0u32; MAP_PROCESS_MAX_DWORDS];
        while at < size {
            let addr = rl.ib_base + at as u64 * 4;
            if !cp.read(addr, &mut buf[..1]) {
                return Err(Hang::BadIb);
            }
            let len = ((buf[0] >> 16) & 0x3fff) as usize + 2;
            if len > buf.len() || at + len > size {
                return Err(Hang::BadPacket);
            }
            if !cp.read(addr, &mut buf[..len]) {
                return Err(Hang::BadIb);
            }
            at += len;
            match parse(&buf[..len], self.format).next() {
                Some(Ok(Packet::MapProcess(m))) => {
                    if self.nprocs == self.procs.all().len() {
                        return Err(Hang::Overflow);
                    }
                    if !cp.map_process(&m) {
                        return Err(Hang::BadPacket);
                    }
                    self.procs.all_mut()[self.nprocs] = m;
                    self.nprocs += 1;
                }
                Some(Ok(Packet::MapQueues(q))) => self.add_queue(q).map_err(|()| Hang::Overflow)?,
                // A RUN_LIST ends the IB.
                Some(Ok(Packet::RunList(next))) if at == size => return Ok(Some(next)),
                _ => return Err(Hang::BadPacket),
            }
        }
        Ok(None)
    }

    /// Processes in the window starting at `cursor`: at least one, at most
    /// `process_cnt` (when over-subscribed), as many as have their compute
    /// queues fit the slots.
    fn window_len(&self) -> usize {
        if !self.over_subscribed {
            return self.nprocs;
        }
        let max = (self.process_cnt.max(1) as usize).min(self.nprocs);
        let slots = self.slots() as usize;
        let mut used = 0;
        let mut n = 0;
        while n < max {
            let p = (self.cursor + n) % self.nprocs;
            let compute = self.queues.all().iter().flatten().filter(|e| e.process == p && e.queue.engine == Engine::Compute).count();
            if n > 0 && used + compute > slots {
                break;
            }
            used += compute;
            n += 1;
        }
        n
    }

    fn in_window(&self, process: usize, window: usize) -> bool {
        (process + self.nprocs - self.cursor) % self.nprocs.max(1) < window
    }

    /// Maps every queue of the window that is not mapped yet (compute
    /// queues up to the slots).
    fn schedule(&mut self, cp: &mut impl Cp) {
        if self.nprocs == 0 {
            return;
        }
        self.cursor %= self.nprocs;
        let window = self.window_len();
        let slots = self.slots() as usize;
        let mut compute = self.queues.all().iter().flatten().filter(|e| e.resident && e.queue.engine == Engine::Compute).count();
        let q = self.queues.all().len();
        for k in 0..q {
            let i = (self.qcursor + k) % q;
            let Some(e) = self.queues.all()[i] else { continue };
            if e.resident || !self.in_window(e.process, window) {
                continue;
            }
            if e.queue.engine == Engine::Compute {
                if compute >= slots {
                    continue;
                }
                compute += 1;
            }
            if !cp.map(&self.procs.all()[e.process], &e.queue) {
                return self.hung(cp, Hang::BadMqd);
            }
            if let Some(e) = self.queues.all_mut()[i].as_mut() {
                e.resident = true;
            }
        }
    }

    /// Unmaps the resident queues `select` picks (they stay listed).
    fn unmap_where(&mut self, cp: &mut impl Cp, reset: bool, select: impl Fn(&MapProcess, &MapQueues) -> bool) {
        for i in 0..self.queues.all().len() {
            let Some(e) = self.queues.all()[i] else { continue };
            if e.resident && select(&self.procs.all()[e.process], &e.queue) {
                cp.unmap(&self.procs.all()[e.process], &e.queue, reset);
                if let Some(e) = self.queues.all_mut()[i].as_mut() {
                    e.resident = false;
                }
            }
        }
    }

    fn unmap_queues(&mut self, cp: &mut impl Cp, u: &UnmapQueues) {
        let reset = match u.action {
            UnmapAction::Preempt => false,
            UnmapAction::Reset => true,
            UnmapAction::DisableProcess => return self.hung(cp, Hang::BadPacket),
        };
        let filter = u.filter;
        let select = move |p: &MapProcess, q: &MapQueues| match filter {
            UnmapFilter::Pasid(pasid) => p.pasid == pasid,
            UnmapFilter::AllQueues => true,
            UnmapFilter::DynamicQueues => !q.is_static,
            UnmapFilter::Doorbells { num, offsets } => offsets[..num.min(4) as usize].contains(&q.doorbell_off),
        };
        self.unmap_where(cp, reset, select);
        // Drop them from the runlist, and processes left with no queues
        // when the filter names processes (PASID, all).
        for i in 0..self.queues.all().len() {
            if let Some(e) = self.queues.all()[i] {
                if select(&self.procs.all()[e.process], &e.queue) {
                    self.queues.all_mut()[i] = None;
                }
            }
        }
        if matches!(filter, UnmapFilter::Pasid(_) | UnmapFilter::AllQueues) {
            let mut kept = 0;
            for p in 0..self.nprocs {
                let drop = match filter {
                    UnmapFilter::Pasid(pasid) => self.procs.all()[p].pasid == pasid,
                    _ => true,
                };
                if drop {
                    continue;
                }
                let m = self.procs.all()[p];
                self.procs.all_mut()[kept] = m;
                for e in self.queues.all_mut().iter_mut().flatten() {
                    if e.process == p {
                        e.process = kept;
                    }
                }
                kept += 1;
            }
            self.nprocs = kept;
            if kept == 0 {
                self.over_subscribed = false;
            }
        }
        self.schedule(cp);
    }

    fn query_status(&mut self, cp: &mut impl Cp, q: &QueryStatus) {
        if q.writes_fence() && !cp.write_u64(q.addr, q.data) {
            return self.hung(cp, Hang::BadIb);
        }
        if q.interrupts() {
            cp.interrupt(q.context_id);
        }
    }
}

#[cfg(test)]
mod tests;
