// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Which queue the virtual scheduler serves next: stride scheduling over
//! the queues' priorities (0-15, `KFD_MAX_QUEUE_PRIORITY`) and percentages
//! (0-100, `KFD_MAX_QUEUE_PERCENTAGE`).
//!
//! Each runnable queue has a weight, `(priority + 1) * percentage`, and a
//! virtual time (`pass`) that advances by `STRIDE / weight` per packet it
//! is served; the scheduler serves the runnable queue with the smallest
//! pass.  Busy queues therefore get service in proportion to their
//! weights (a priority-15 queue twice what a priority-7 one gets at equal
//! percentage), and every queue with a non-zero weight is served within a
//! bounded time (no starvation).  A queue that becomes runnable again
//! starts at the current virtual time, so idling earns no credit.  A
//! percentage of 0 makes a queue inactive, as upstream (`is_active`
//! needs `queue_percent > 0`).
//!
//! Upstream the HWS firmware maps queue priorities to CP pipe priorities
//! (`pipe_priority_map`) and the percentage to the quantum; a virtual GPU
//! has one engine thread, so proportional share is the honest analogue.

/// The pass increment for a weight of 1 packet: large enough for every
/// weight (at most 1600) to give a distinct non-zero stride.
pub const STRIDE: u64 = 1 << 20;

/// The weight of a queue: 0 if it must not be served.
pub fn weight(priority: u32, percentage: u32) -> u64 {
    u64::from(priority.min(15) + 1) * u64::from(percentage.min(100))
}

/// A queue's scheduling state.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// [`weight`].
    pub weight: u64,
    /// Virtual time.
    pub pass: u64,
}

impl Entry {
    /// A queue of `priority` and `percentage`.
    pub fn new(priority: u32, percentage: u32) -> Self {
        Entry {
            weight: weight(priority, percentage),
            pass: 0,
        }
    }
}

/// The scheduler's virtual clock.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    /// The pass of the queue served last.
    now: u64,
}

impl Clock {
    /// Which of `entries` (runnable queues) to serve: the smallest pass
    /// among those with a non-zero weight; ties go to the first.
    pub fn pick<'a, I: IntoIterator<Item = &'a Entry>>(&self, entries: I) -> Option<usize> {
        let mut best: Option<(usize, u64)> = None;
        for (i, e) in entries.into_iter().enumerate() {
            if e.weight == 0 {
                continue;
            }
            if best.is_none_or(|(_, p)| e.pass < p) {
                best = Some((i, e.pass));
            }
        }
        best.map(|(i, _)| i)
    }

    /// Moves `e` to the current virtual time if it fell behind (a queue
    /// that was idle or blocked becomes runnable).
    pub fn wake(&self, e: &mut Entry) {
        e.pass = e.pass.max(self.now);
    }

    /// Charges `e` for `units` packets served (at least one: a turn that
    /// did nothing still costs, so that a blocked queue cannot monopolise
    /// the engine).
    pub fn charge(&mut self, e: &mut Entry, units: u32) {
        if e.weight == 0 {
            return;
        }
        self.now = self.now.max(e.pass);
        e.pass = e
            .pass
            .saturating_add(u64::from(units.max(1)) * (STRIDE / e.weight));
    }

    /// Changes `e`'s priority and percentage (UPDATE_QUEUE).
    pub fn update(&self, e: &mut Entry, priority: u32, percentage: u32) {
        e.weight = weight(priority, percentage);
        self.wake(e);
    }
}

/// How long an engine thread that found nothing to do waits before it
/// looks again ([`poll`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Look again at once (after yielding the CPU if someone else wants it).
    Spin,
    /// Sleep this many microseconds.
    SleepUs(u32),
    /// Sleep this many milliseconds, or until kicked.
    WaitMs(u32),
}

/// Busy-polling window after the last packet, ns: doorbells rung in a
/// burst (the next packet of a producer) are seen at once.
pub const SPIN_NS: u64 = 200_000;
/// Short-polling window after the last packet, ns.
pub const SHORT_NS: u64 = 1_000_000_000;
/// The short poll interval, µs: the doorbell-to-first-packet latency while
/// the GPU was busy within [`SHORT_NS`].
pub const SHORT_US: u32 = 20;
/// The poll interval of an idle GPU, ms.
pub const LONG_MS: u32 = 1;

/// The wait of an engine thread whose queues have been idle for `idle_ns`.
/// Doorbells are plain memory (no interrupt tells the engine about them),
/// so it polls: busily right after work, every [`SHORT_US`] for a while,
/// then every [`LONG_MS`].
pub fn poll(idle_ns: u64) -> Poll {
    if idle_ns < SPIN_NS {
        Poll::Spin
    } else if idle_ns < SHORT_NS {
        Poll::SleepUs(SHORT_US)
    } else {
        Poll::WaitMs(LONG_MS)
    }
}

/// Which worker a new queue goes to, given each worker's queue count: the
/// least loaded, the first of equals (queues spread over the workers).
/// `None` without workers.
pub fn spread<I: IntoIterator<Item = usize>>(loads: I) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, n) in loads.into_iter().enumerate() {
        if best.is_none_or(|(_, b)| n < b) {
            best = Some((i, n));
        }
    }
    best.map(|(i, _)| i)
}
