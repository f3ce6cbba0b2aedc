// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The AQL packet processor against an in-memory GPU.

mod common;

use common::{Rec, TestGpu, PAGE};
use gpu_engines::aql::*;
use gpu_engines::mem::*;
use gpu_engines::pm4;

const RING: u64 = 0x10_0000;
const RPTR: u64 = 0x20_0000;
const WPTR: u64 = 0x20_0008;
const SIGNALS: u64 = 0x30_0000;
const EVENTS: u64 = 0x40_0000;

/// A queue of `slots` packets with its pointers and 8 signals mapped.
fn setup(slots: u64) -> (TestGpu, Rec, AqlQueue) {
    let mut g = TestGpu::new();
    g.map(RING, slots * PACKET_SIZE, true);
    // INVALID headers everywhere, as ROCr initialises the ring.
    for i in 0..slots {
        g.poke(RING + i * PACKET_SIZE, &TYPE_INVALID.to_le_bytes());
    }
    g.map(RPTR, PAGE, true);
    g.map(SIGNALS, PAGE, true);
    g.map(EVENTS, PAGE, true);
    let q = AqlQueue::new(RING, slots * PACKET_SIZE, RPTR, WPTR).unwrap();
    (g, Rec::default(), q)
}

fn signal(i: u64) -> u64 {
    SIGNALS + i * 64
}

/// Makes signal `i` an interrupt signal (mailbox + event id) of `value`.
fn interrupt_signal(g: &mut TestGpu, i: u64, value: i64, event: u32) {
    g.poke64(signal(i), 1); // AMD_SIGNAL_KIND_USER
    g.poke64(signal(i) + SIGNAL_VALUE, value as u64);
    g.poke64(signal(i) + SIGNAL_MAILBOX, EVENTS + 8 * u64::from(event));
    g.poke32(signal(i) + SIGNAL_EVENT_ID, event);
    g.poke64(EVENTS + 8 * u64::from(event), u64::MAX);
}

fn plain_signal(g: &mut TestGpu, i: u64, value: i64) {
    g.poke64(signal(i), 1);
    g.poke64(signal(i) + SIGNAL_VALUE, value as u64);
    g.poke64(signal(i) + SIGNAL_MAILBOX, 0);
}

fn value(g: &mut TestGpu, i: u64) -> i64 {
    g.peek64(signal(i) + SIGNAL_VALUE) as i64
}

/// Writes packet `index` (body first, header last) and bumps the write index.
fn submit(g: &mut TestGpu, slots: u64, index: u64, header: u16, body: &[u64; 7]) {
    let p = RING + (index % slots) * PACKET_SIZE;
    for (i, w) in body.iter().enumerate() {
        g.poke64(p + 8 + 8 * i as u64, *w);
    }
    g.poke(p + 2, &[0; 6]);
    g.poke(p, &header.to_le_bytes());
    g.poke64(WPTR, index + 1);
}

fn barrier(ty: u16, deps: &[u64], completion: u64) -> (u16, [u64; 7]) {
    let mut body = [0u64; 7];
    body[..deps.len()].copy_from_slice(deps);
    body[6] = completion;
    (ty | HEADER_BARRIER | (2 << HEADER_ACQUIRE_SHIFT) | (2 << HEADER_RELEASE_SHIFT), body)
}

#[test]
fn barrier_and_completes_and_interrupts() {
    let (mut g, mut ev, mut q) = setup(16);
    interrupt_signal(&mut g, 0, 1, 42);
    plain_signal(&mut g, 1, 0);
    let (h, b) = barrier(TYPE_BARRIER_AND, &[signal(1)], signal(0));
    submit(&mut g, 16, 0, h, &b);
    let r = q.run(&mut g, &mut ev, 64);
    assert_eq!(r, Run { packets: 1, stop: Stop::Idle });
    assert_eq!(value(&mut g, 0), 0);
    assert_eq!(g.peek64(EVENTS + 8 * 42), 42);
    assert_eq!(ev.irqs, vec![42]);
    assert_eq!(g.peek64(RPTR), 1);
    assert_eq!(q.rptr(), 1);
    // The slot is INVALID again.
    assert_eq!(g.peek(RING, 2), TYPE_INVALID.to_le_bytes());
    // Nothing more to do.
    assert_eq!(q.run(&mut g, &mut ev, 64), Run { packets: 0, stop: Stop::Idle });
}

#[test]
fn barrier_and_waits_for_every_dependency() {
    let (mut g, mut ev, mut q) = setup(16);
    plain_signal(&mut g, 0, 5);
    plain_signal(&mut g, 1, 0);
    plain_signal(&mut g, 2, 1);
    let (h, b) = barrier(TYPE_BARRIER_AND, &[signal(1), 0, signal(2)], signal(0));
    submit(&mut g, 16, 0, h, &b);
    assert_eq!(q.run(&mut g, &mut ev, 64).stop, Stop::Blocked);
    assert_eq!(value(&mut g, 0), 5);
    assert_eq!(g.peek64(RPTR), 0);
    g.poke64(signal(2) + SIGNAL_VALUE, 0);
    assert_eq!(q.run(&mut g, &mut ev, 64), Run { packets: 1, stop: Stop::Idle });
    assert_eq!(value(&mut g, 0), 4);
    // No mailbox: no interrupt.
    assert!(ev.irqs.is_empty());
}

#[test]
fn barrier_or_needs_one_dependency_or_none() {
    let (mut g, mut ev, mut q) = setup(16);
    plain_signal(&mut g, 0, 2);
    plain_signal(&mut g, 1, 1);
    plain_signal(&mut g, 2, 1);
    let (h, b) = barrier(TYPE_BARRIER_OR, &[signal(1), signal(2)], signal(0));
    submit(&mut g, 16, 0, h, &b);
    assert_eq!(q.run(&mut g, &mut ev, 64).stop, Stop::Blocked);
    g.poke64(signal(2) + SIGNAL_VALUE, 0);
    assert_eq!(q.run(&mut g, &mut ev, 64).packets, 1);
    assert_eq!(value(&mut g, 0), 1);
    let (h, b) = barrier(TYPE_BARRIER_OR, &[], signal(0));
    submit(&mut g, 16, 1, h, &b);
    assert_eq!(q.run(&mut g, &mut ev, 64).packets, 1);
    assert_eq!(value(&mut g, 0), 0);
}

#[test]
fn invalid_header_means_not_written_yet() {
    let (mut g, mut ev, mut q) = setup(16);
    plain_signal(&mut g, 0, 1);
    // The producer reserved the slot but has not written the header.
    g.poke64(WPTR, 1);
    assert_eq!(q.run(&mut g, &mut ev, 64), Run { packets: 0, stop: Stop::Idle });
    let (h, b) = barrier(TYPE_BARRIER_AND, &[], signal(0));
    submit(&mut g, 16, 0, h, &b);
    assert_eq!(q.run(&mut g, &mut ev, 64).packets, 1);
    assert_eq!(value(&mut g, 0), 0);
}

#[test]
fn write_index_bounds_the_work() {
    let (mut g, mut ev, mut q) = setup(16);
    plain_signal(&mut g, 0, 3);
    let (h, b) = barrier(TYPE_BARRIER_AND, &[], signal(0));
    submit(&mut g, 16, 0, h, &b);
    submit(&mut g, 16, 1, h, &b);
    // A valid header beyond the write index is not executed.
    g.poke64(WPTR, 1);
    assert_eq!(q.run(&mut g, &mut ev, 64).packets, 1);
    assert_eq!(value(&mut g, 0), 2);
    g.poke64(WPTR, 2);
    assert_eq!(q.run(&mut g, &mut ev, 64).packets, 1);
    assert_eq!(value(&mut g, 0), 1);
}

#[test]
fn dispatches_stop_the_queue_unsupported() {
    for ty in [TYPE_KERNEL_DISPATCH, TYPE_AGENT_DISPATCH] {
        let (mut g, mut ev, mut q) = setup(16);
        plain_signal(&mut g, 0, 1);
        let (_, b) = barrier(ty, &[], signal(0));
        submit(&mut g, 16, 0, ty | HEADER_BARRIER, &b);
        let r = q.run(&mut g, &mut ev, 64);
        assert_eq!(r, Run { packets: 0, stop: Stop::Error(QUEUE_ERROR_UNSUPPORTED) });
        // Not completed: the signal keeps its value, the read index stays.
        assert_eq!(value(&mut g, 0), 1);
        assert_eq!(g.peek64(RPTR), 0);
    }
}

/// A shader engine that needs `slices` runs per dispatch, and records them.
struct SlicedShaders {
    slices: u32,
    left: u32,
    calls: Vec<(u64, u64)>,
}

impl Shaders for SlicedShaders {
    fn dispatch<M: GpuMemory, E: Events>(&mut self, _: &mut M, _: &mut E, pkt: u64, id: u64) -> Result<(), Stop> {
        self.calls.push((pkt, id));
        if self.left == 0 {
            self.left = self.slices;
        }
        self.left -= 1;
        if self.left == 0 {
            Ok(())
        } else {
            Err(Stop::Budget)
        }
    }
}

#[test]
fn kernel_dispatches_run_on_the_shaders_in_slices() {
    let (mut g, mut ev, mut q) = setup(16);
    interrupt_signal(&mut g, 0, 2, 7);
    let mut sh = SlicedShaders { slices: 3, left: 0, calls: Vec::new() };
    for i in 0..2 {
        let (_, b) = barrier(TYPE_KERNEL_DISPATCH, &[], signal(0));
        submit(&mut g, 16, i, TYPE_KERNEL_DISPATCH | HEADER_BARRIER, &b);
    }
    // Each slice ends the run with Budget, the packet not completed yet.
    for n in 0..2 {
        let r = q.run_with(&mut g, &mut ev, 64, &mut sh);
        assert_eq!(r, Run { packets: 0, stop: Stop::Budget });
        assert_eq!(value(&mut g, 0), 2);
        assert_eq!(sh.calls.len(), n + 1);
    }
    let r = q.run_with(&mut g, &mut ev, 64, &mut sh);
    // The first completes in its third slice; the second starts and uses one slice.
    assert_eq!(r, Run { packets: 1, stop: Stop::Budget });
    assert_eq!(value(&mut g, 0), 1);
    assert_eq!(ev.irqs, vec![7]);
    while q.run_with(&mut g, &mut ev, 64, &mut sh).stop != Stop::Idle {}
    assert_eq!(value(&mut g, 0), 0);
    assert_eq!(g.peek64(RPTR), 2);
    let first = RING;
    let second = RING + PACKET_SIZE;
    assert_eq!(sh.calls, vec![(first, 0), (first, 0), (first, 0), (second, 1), (second, 1), (second, 1)]);
}

#[test]
fn a_completion_fault_after_a_dispatch_does_not_run_it_again() {
    let (mut g, mut ev, mut q) = setup(16);
    let mut sh = SlicedShaders { slices: 1, left: 0, calls: Vec::new() };
    let unmapped = 0x90_0000;
    let (_, b) = barrier(TYPE_KERNEL_DISPATCH, &[], unmapped);
    submit(&mut g, 16, 0, TYPE_KERNEL_DISPATCH, &b);
    let r = q.run_with(&mut g, &mut ev, 64, &mut sh);
    assert!(matches!(r, Run { packets: 0, stop: Stop::Fault(f) } if f.va == unmapped + SIGNAL_VALUE), "{r:?}");
    // The fault is resolved: the signal is mapped now.
    g.map(unmapped, PAGE, true);
    g.poke64(unmapped + SIGNAL_VALUE, 1);
    let r = q.run_with(&mut g, &mut ev, 64, &mut sh);
    assert_eq!(r, Run { packets: 1, stop: Stop::Idle });
    assert_eq!(sh.calls.len(), 1);
    assert_eq!(g.peek64(unmapped + SIGNAL_VALUE), 0);
}

#[test]
fn malformed_packets_are_invalid() {
    let cases: [(u16, u64); 6] = [
        (7, 0),                                  // no such type
        (0xff, 0),                               // no such type
        (TYPE_BARRIER_AND | (3 << HEADER_ACQUIRE_SHIFT), 0), // reserved scope
        (TYPE_BARRIER_AND | (3 << HEADER_RELEASE_SHIFT), 0),
        (TYPE_BARRIER_AND, 4), // misaligned completion signal
        (TYPE_VENDOR_SPECIFIC, 0), // vendor packet of format 0
    ];
    for (header, misalign) in cases {
        let (mut g, mut ev, mut q) = setup(16);
        plain_signal(&mut g, 0, 1);
        let (_, b) = barrier(TYPE_BARRIER_AND, &[], signal(0) + misalign);
        submit(&mut g, 16, 0, header, &b);
        let r = q.run(&mut g, &mut ev, 64);
        assert_eq!(r.stop, Stop::Error(QUEUE_ERROR_INVALID_PACKET), "header {header:#x}");
        assert_eq!(value(&mut g, 0), 1);
    }
    // A misaligned dependency signal.
    let (mut g, mut ev, mut q) = setup(16);
    let (h, b) = barrier(TYPE_BARRIER_AND, &[signal(1) + 1], 0);
    submit(&mut g, 16, 0, h, &b);
    assert_eq!(q.run(&mut g, &mut ev, 64).stop, Stop::Error(QUEUE_ERROR_INVALID_PACKET));
}

#[test]
fn ring_wraps() {
    let (mut g, mut ev, mut q) = setup(4);
    plain_signal(&mut g, 0, 10);
    let (h, b) = barrier(TYPE_BARRIER_AND, &[], signal(0));
    let mut next = 0;
    for round in 0..5 {
        // Two packets per round through a 4-slot ring.
        for _ in 0..2 {
            submit(&mut g, 4, next, h, &b);
            next += 1;
        }
        assert_eq!(q.run(&mut g, &mut ev, 64).packets, 2, "round {round}");
    }
    assert_eq!(value(&mut g, 0), 0);
    assert_eq!(g.peek64(RPTR), 10);
}

#[test]
fn budget_limits_a_run() {
    let (mut g, mut ev, mut q) = setup(16);
    plain_signal(&mut g, 0, 5);
    let (h, b) = barrier(TYPE_BARRIER_AND, &[], signal(0));
    for i in 0..5 {
        submit(&mut g, 16, i, h, &b);
    }
    assert_eq!(q.run(&mut g, &mut ev, 3), Run { packets: 3, stop: Stop::Budget });
    assert_eq!(q.run(&mut g, &mut ev, 3), Run { packets: 2, stop: Stop::Idle });
    assert_eq!(value(&mut g, 0), 0);
}

#[test]
fn faults_stop_at_the_packet_and_resume_without_repeating() {
    let (mut g, mut ev, mut q) = setup(16);
    // The completion signal's page is not mapped.
    let far = 0x50_0000;
    let (h, b) = barrier(TYPE_BARRIER_AND, &[], far);
    submit(&mut g, 16, 0, h, &b);
    let r = q.run(&mut g, &mut ev, 64);
    assert_eq!(r.stop, Stop::Fault(Fault { va: far + SIGNAL_VALUE, write: false }));
    assert_eq!(g.peek64(RPTR), 0);
    // Mapped, with a mailbox on an unmapped page: decremented, then a fault.
    g.map(far, PAGE, true);
    g.poke64(far + SIGNAL_VALUE, 1);
    g.poke64(far + SIGNAL_MAILBOX, 0x60_0000);
    g.poke32(far + SIGNAL_EVENT_ID, 7);
    let r = q.run(&mut g, &mut ev, 64);
    assert_eq!(r.stop, Stop::Fault(Fault { va: 0x60_0000, write: true }));
    assert_eq!(g.peek64(far + SIGNAL_VALUE), 0);
    // Resolved: the rest runs, the decrement is not repeated.
    g.map(0x60_0000, PAGE, true);
    assert_eq!(q.run(&mut g, &mut ev, 64).packets, 1);
    assert_eq!(g.peek64(far + SIGNAL_VALUE), 0);
    assert_eq!(g.peek64(0x60_0000), 7);
    assert_eq!(ev.irqs, vec![7]);
    // A read-only ring: the header cannot be invalidated.
    let (mut g, mut ev, mut q) = setup(16);
    let (h, b) = barrier(TYPE_BARRIER_AND, &[], 0);
    submit(&mut g, 16, 0, h, &b);
    g.map(RING, PAGE, false);
    assert_eq!(q.run(&mut g, &mut ev, 64).stop, Stop::Fault(Fault { va: RING, write: true }));
    // An unmapped write index.
    let mut q = AqlQueue::new(RING, 16 * PACKET_SIZE, RPTR, 0x70_0000).unwrap();
    assert_eq!(q.run(&mut g, &mut ev, 64).stop, Stop::Fault(Fault { va: 0x70_0000, write: false }));
}

#[test]
fn barrier_value_packet() {
    let (mut g, mut ev, mut q) = setup(16);
    plain_signal(&mut g, 0, 1);
    plain_signal(&mut g, 1, 0x15);
    let p = RING;
    // AMD vendor header: format BARRIER_VALUE in byte 2.
    g.poke64(p + 8, signal(1));
    g.poke64(p + 16, 0x5); // value
    g.poke64(p + 24, 0xf); // mask
    g.poke32(p + 32, 0); // EQ
    g.poke64(p + 56, signal(0));
    g.poke32(p, u32::from(TYPE_VENDOR_SPECIFIC) | (u32::from(AMD_FORMAT_BARRIER_VALUE) << 16));
    g.poke64(WPTR, 1);
    assert_eq!(q.run(&mut g, &mut ev, 64).packets, 1);
    assert_eq!(value(&mut g, 0), 0);
    // NE now fails (0x15 & 0xf == 5) and blocks.
    plain_signal(&mut g, 0, 1);
    let p = RING + PACKET_SIZE;
    g.poke64(p + 8, signal(1));
    g.poke64(p + 16, 0x5);
    g.poke64(p + 24, 0xf);
    g.poke32(p + 32, 1);
    g.poke64(p + 56, signal(0));
    g.poke32(p, u32::from(AMD_FORMAT_BARRIER_VALUE) << 16);
    g.poke64(WPTR, 2);
    assert_eq!(q.run(&mut g, &mut ev, 64).stop, Stop::Blocked);
    g.poke64(signal(1) + SIGNAL_VALUE, 0x16);
    assert_eq!(q.run(&mut g, &mut ev, 64).packets, 1);
    // A reserved condition.
    let p = RING + 2 * PACKET_SIZE;
    g.poke32(p + 32, 9);
    g.poke32(p, u32::from(AMD_FORMAT_BARRIER_VALUE) << 16);
    g.poke64(WPTR, 3);
    assert_eq!(q.run(&mut g, &mut ev, 64).stop, Stop::Error(QUEUE_ERROR_INVALID_PACKET));
}

#[test]
fn pm4_ib_vendor_packet() {
    let (mut g, mut ev, mut q) = setup(16);
    let ib = 0x80_0000;
    let out = 0x81_0000;
    g.map(ib, PAGE, false);
    g.map(out, PAGE, true);
    plain_signal(&mut g, 0, 1);
    g.poke_dwords(
        ib,
        &[pm4::packet3(pm4::OP_WRITE_DATA, 3), 5 << 8, out as u32, 0, 0xabcd],
    );
    let p = RING;
    g.poke_dwords(
        p + 4,
        &[pm4::packet3(pm4::OP_INDIRECT_BUFFER, 2), ib as u32, 0, 5 | (1 << 23)],
    );
    g.poke64(p + 56, signal(0));
    g.poke32(p, u32::from(AMD_FORMAT_PM4_IB) << 16);
    g.poke64(WPTR, 1);
    assert_eq!(q.run(&mut g, &mut ev, 64).packets, 1);
    assert_eq!(g.peek32(out), 0xabcd);
    assert_eq!(value(&mut g, 0), 0);
    // The jump command must be an INDIRECT_BUFFER.
    let p = RING + PACKET_SIZE;
    g.poke32(p + 4, pm4::packet3(pm4::OP_NOP, 2));
    g.poke32(p, u32::from(AMD_FORMAT_PM4_IB) << 16);
    g.poke64(WPTR, 2);
    assert_eq!(q.run(&mut g, &mut ev, 64).stop, Stop::Error(QUEUE_ERROR_INVALID_PACKET));
}

#[test]
fn bad_rings_are_refused() {
    assert!(AqlQueue::new(RING, 0, RPTR, WPTR).is_none());
    assert!(AqlQueue::new(RING, 96 * 64, RPTR, WPTR).is_none());
    assert!(AqlQueue::new(RING, 32, RPTR, WPTR).is_none());
    assert!(AqlQueue::new(RING + 8, 4096, RPTR, WPTR).is_none());
}

/// ROCr's amd_queue_t with ENABLE_PROFILING: completion signals get the
/// GPU clock as start_ts/end_ts (HIP event timing), not without it.
#[test]
fn profiling_queue_writes_signal_timestamps() {
    const QUEUE: u64 = 0x50_0000;
    let mut g = TestGpu::new();
    let slots = 16;
    g.map(RING, slots * PACKET_SIZE, true);
    for i in 0..slots {
        g.poke(RING + i * PACKET_SIZE, &TYPE_INVALID.to_le_bytes());
    }
    g.map(QUEUE, PAGE, true);
    g.map(SIGNALS, PAGE, true);
    let wptr = QUEUE + AMD_QUEUE_WRITE_DISPATCH_ID;
    let mut q = AqlQueue::new(RING, slots * PACKET_SIZE, QUEUE + 128, wptr).unwrap();
    let mut ev = Rec::default();
    let submit_at = |g: &mut TestGpu, index: u64, completion: u64| {
        let (h, b) = barrier(TYPE_BARRIER_AND, &[], completion);
        let p = RING + (index % slots) * PACKET_SIZE;
        for (i, w) in b.iter().enumerate() {
            g.poke64(p + 8 + 8 * i as u64, *w);
        }
        g.poke(p, &h.to_le_bytes());
        g.poke64(wptr, index + 1);
    };
    for i in 0..3 {
        plain_signal(&mut g, i, 1);
        g.poke64(signal(i) + SIGNAL_START_TS, 0xdead);
        g.poke64(signal(i) + SIGNAL_END_TS, 0xdead);
    }
    // Profiling off: the timestamps are left alone.
    submit_at(&mut g, 0, signal(0));
    assert_eq!(q.run(&mut g, &mut ev, 64).packets, 1);
    assert_eq!(value(&mut g, 0), 0);
    assert_eq!(g.peek64(signal(0) + SIGNAL_START_TS), 0xdead);
    assert_eq!(g.peek64(signal(0) + SIGNAL_END_TS), 0xdead);
    // On: start <= end, and a later packet's start is past an earlier end.
    g.poke32(QUEUE + AMD_QUEUE_PROPERTIES, AMD_QUEUE_PROPERTIES_ENABLE_PROFILING | 2);
    submit_at(&mut g, 1, signal(1));
    submit_at(&mut g, 2, signal(2));
    assert_eq!(q.run(&mut g, &mut ev, 64).packets, 2);
    let ts = |g: &mut TestGpu, i| (g.peek64(signal(i) + SIGNAL_START_TS), g.peek64(signal(i) + SIGNAL_END_TS));
    let (s1, e1) = ts(&mut g, 1);
    let (s2, e2) = ts(&mut g, 2);
    assert!(s1 != 0xdead && s1 < e1 && e1 < s2 && s2 < e2, "{s1} {e1} {s2} {e2}");
    assert_eq!((value(&mut g, 1), value(&mut g, 2)), (0, 0));
}

/// A shader engine whose dispatches all stop the queue with `code`,
/// giving `inactive` as the `queue_inactive_signal` code.
struct FailingShaders {
    code: u32,
    inactive: Option<u64>,
}

impl Shaders for FailingShaders {
    fn dispatch<M: GpuMemory, E: Events>(&mut self, _: &mut M, _: &mut E, _: u64, _: u64) -> Result<(), Stop> {
        Err(Stop::Error(self.code))
    }
    fn take_inactive_code(&mut self) -> Option<u64> {
        self.inactive.take()
    }
}

const QUEUE: u64 = 0x50_0000;
const INACTIVE: u64 = 0x60_0000;

/// A queue whose pointers are ROCr's amd_queue_t's, with a
/// queue_inactive_signal of value 0 (event 9 if `event`) mapped.
fn setup_rocr_queue(slots: u64, event: bool) -> (TestGpu, Rec, AqlQueue) {
    let mut g = TestGpu::new();
    g.map(RING, slots * PACKET_SIZE, true);
    for i in 0..slots {
        g.poke(RING + i * PACKET_SIZE, &TYPE_INVALID.to_le_bytes());
    }
    g.map(QUEUE, PAGE, true);
    g.map(SIGNALS, PAGE, true);
    g.map(EVENTS, PAGE, true);
    g.map(INACTIVE, PAGE, true);
    g.poke64(QUEUE + AMD_QUEUE_INACTIVE_SIGNAL, INACTIVE);
    g.poke64(INACTIVE, 1);
    g.poke64(INACTIVE + SIGNAL_VALUE, 0);
    if event {
        g.poke64(INACTIVE + SIGNAL_MAILBOX, EVENTS + 8 * 9);
        g.poke32(INACTIVE + SIGNAL_EVENT_ID, 9);
        g.poke64(EVENTS + 8 * 9, u64::MAX);
    }
    let q = AqlQueue::new(RING, slots * PACKET_SIZE, QUEUE + 0x80, QUEUE + AMD_QUEUE_WRITE_DISPATCH_ID).unwrap();
    (g, Rec::default(), q)
}

fn submit_rocr(g: &mut TestGpu, slots: u64, index: u64, header: u16, body: &[u64; 7]) {
    let p = RING + (index % slots) * PACKET_SIZE;
    for (i, w) in body.iter().enumerate() {
        g.poke64(p + 8 + 8 * i as u64, *w);
    }
    g.poke(p + 2, &[0; 6]);
    g.poke(p, &header.to_le_bytes());
    g.poke64(QUEUE + AMD_QUEUE_WRITE_DISPATCH_ID, index + 1);
}

/// A shader error ends the queue as the CP does for ROCr: the shader's code
/// in queue_inactive_signal, the signal's event written and raised; the
/// packet is not completed and the queue stays stopped.
#[test]
fn shader_errors_signal_queue_inactive() {
    for (code, inactive) in [
        (QUEUE_ERROR_UNSUPPORTED, INACTIVE_DEBUG_TRAP),
        (QUEUE_ERROR_INVALID_PACKET, INACTIVE_ILLEGAL_INSTRUCTION),
        (QUEUE_ERROR_INVALID_PACKET, INACTIVE_MEMORY_VIOLATION),
        (QUEUE_ERROR_UNSUPPORTED, INACTIVE_INVALID_ALLOCATION),
    ] {
        let (mut g, mut ev, mut q) = setup_rocr_queue(16, true);
        plain_signal(&mut g, 0, 1);
        let (_, b) = barrier(TYPE_KERNEL_DISPATCH, &[], signal(0));
        submit_rocr(&mut g, 16, 0, TYPE_KERNEL_DISPATCH | HEADER_BARRIER, &b);
        let mut sh = FailingShaders { code, inactive: Some(inactive) };
        let r = q.run_with(&mut g, &mut ev, 64, &mut sh);
        assert_eq!(r, Run { packets: 0, stop: Stop::Error(code) });
        assert_eq!(g.peek64(INACTIVE + SIGNAL_VALUE), inactive);
        assert_eq!(g.peek64(EVENTS + 8 * 9), 9);
        assert_eq!(ev.irqs, vec![9]);
        assert_eq!(value(&mut g, 0), 1);
        assert_eq!(g.peek64(QUEUE + 0x80), 0);
    }
}

/// Errors of the processor itself: invalid packet format; a VM fault
/// (in a shader: `QUEUE_ERROR_VM_FAULT`, or the processor's own access)
/// leaves the signal alone (ROCr handles the fault as a VM fault).
#[test]
fn processor_errors_signal_queue_inactive_but_vm_faults_do_not() {
    // An unknown packet type; an agent dispatch.
    for ty in [7u16, TYPE_AGENT_DISPATCH] {
        let (mut g, mut ev, mut q) = setup_rocr_queue(16, true);
        let (_, b) = barrier(ty, &[], 0);
        submit_rocr(&mut g, 16, 0, ty | HEADER_BARRIER, &b);
        let r = q.run(&mut g, &mut ev, 64);
        assert!(matches!(r.stop, Stop::Error(_)), "{r:?}");
        assert_eq!(g.peek64(INACTIVE + SIGNAL_VALUE), INACTIVE_INVALID_PACKET);
        assert_eq!(ev.irqs, vec![9]);
    }
    // A shader VM fault.
    let (mut g, mut ev, mut q) = setup_rocr_queue(16, true);
    let (_, b) = barrier(TYPE_KERNEL_DISPATCH, &[], 0);
    submit_rocr(&mut g, 16, 0, TYPE_KERNEL_DISPATCH | HEADER_BARRIER, &b);
    let mut sh = FailingShaders { code: QUEUE_ERROR_VM_FAULT, inactive: None };
    assert_eq!(q.run_with(&mut g, &mut ev, 64, &mut sh).stop, Stop::Error(QUEUE_ERROR_VM_FAULT));
    assert_eq!(g.peek64(INACTIVE + SIGNAL_VALUE), 0);
    assert!(ev.irqs.is_empty());
    // A fault of the processor: retried, not an error.
    let (mut g, mut ev, mut q) = setup_rocr_queue(16, true);
    let (_, b) = barrier(TYPE_BARRIER_AND, &[], 0x7000_0000);
    submit_rocr(&mut g, 16, 0, TYPE_BARRIER_AND | HEADER_BARRIER, &b);
    assert!(matches!(q.run(&mut g, &mut ev, 64).stop, Stop::Fault(_)));
    assert_eq!(g.peek64(INACTIVE + SIGNAL_VALUE), 0);
    assert!(ev.irqs.is_empty());
}

/// No event (a DefaultSignal: ROCr without interrupts): the value alone;
/// a queue that is not ROCr's amd_queue_t, or whose signal is null or
/// unmapped: nothing, and no panic.
#[test]
fn queue_inactive_signal_without_event_or_amd_queue() {
    let (mut g, mut ev, mut q) = setup_rocr_queue(16, false);
    let (_, b) = barrier(7, &[], 0);
    submit_rocr(&mut g, 16, 0, 7 | HEADER_BARRIER, &b);
    assert!(matches!(q.run(&mut g, &mut ev, 64).stop, Stop::Error(_)));
    assert_eq!(g.peek64(INACTIVE + SIGNAL_VALUE), INACTIVE_INVALID_PACKET);
    assert!(ev.irqs.is_empty());
    // Null and unmapped signals.
    for s in [0u64, 0x7000_0000, INACTIVE + 4] {
        let (mut g, mut ev, mut q) = setup_rocr_queue(16, true);
        g.poke64(QUEUE + AMD_QUEUE_INACTIVE_SIGNAL, s);
        let (_, b) = barrier(7, &[], 0);
        submit_rocr(&mut g, 16, 0, 7 | HEADER_BARRIER, &b);
        assert!(matches!(q.run(&mut g, &mut ev, 64).stop, Stop::Error(_)));
        assert_eq!(g.peek64(INACTIVE + SIGNAL_VALUE), 0);
        assert!(ev.irqs.is_empty());
        assert!(!q.signal_inactive(&mut g, &mut ev, INACTIVE_DEBUG_TRAP));
    }
    // Not an amd_queue_t (the write index elsewhere): nothing.
    let (mut g, mut ev, mut q) = setup(16);
    let (_, b) = barrier(7, &[], 0);
    submit(&mut g, 16, 0, 7 | HEADER_BARRIER, &b);
    assert!(matches!(q.run(&mut g, &mut ev, 64).stop, Stop::Error(_)));
    assert!(ev.irqs.is_empty());
    // The shell's own report (a refused workgroup allocation).
    let (mut g, mut ev, q) = setup_rocr_queue(16, true);
    assert!(q.signal_inactive(&mut g, &mut ev, INACTIVE_INVALID_ALLOCATION));
    assert_eq!(g.peek64(INACTIVE + SIGNAL_VALUE), INACTIVE_INVALID_ALLOCATION);
    assert_eq!(ev.irqs, vec![9]);
}
