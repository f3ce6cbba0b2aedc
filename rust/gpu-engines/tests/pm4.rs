// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The PM4 processor against an in-memory GPU.

mod common;

use common::{Rec, TestGpu, PAGE};
use gpu_engines::mem::*;
use gpu_engines::pm4::*;

const RING: u64 = 0x10_0000;
const RPTR: u64 = 0x20_0000;
const WPTR: u64 = 0x20_0008;
const DATA: u64 = 0x30_0000;
const IB: u64 = 0x40_0000;

fn setup(ring_bytes: u64) -> (TestGpu, Rec, Pm4Queue) {
    let mut g = TestGpu::new();
    g.map(RING, ring_bytes, true);
    g.map(RPTR, PAGE, true);
    g.map(DATA, PAGE, true);
    g.map(IB, PAGE, true);
    let q = Pm4Queue::new(RING, ring_bytes, RPTR, WPTR).unwrap();
    (g, Rec::default(), q)
}

/// Appends `dws` at write pointer `*w` (dwords, wrapping) and publishes it.
fn push(g: &mut TestGpu, ring_bytes: u64, w: &mut u64, dws: &[u32]) {
    for d in dws {
        g.poke32(RING + (*w * 4) % ring_bytes, *d);
        *w += 1;
    }
    g.poke64(WPTR, *w);
}

fn write_data(addr: u64, data: &[u32]) -> Vec<u32> {
    let mut v = vec![
        packet3(OP_WRITE_DATA, 2 + data.len() as u32),
        5 << 8,
        addr as u32,
        (addr >> 32) as u32,
    ];
    v.extend_from_slice(data);
    v
}

fn release_mem(data_sel: u32, int_sel: u32, addr: u64, data: u64, ctx: u32) -> Vec<u32> {
    vec![
        packet3(OP_RELEASE_MEM, 6),
        0x14 | (5 << 8), // CACHE_FLUSH_AND_INV_TS_EVENT, index 5
        (data_sel << 29) | (int_sel << 24),
        addr as u32,
        (addr >> 32) as u32,
        data as u32,
        (data >> 32) as u32,
        ctx,
    ]
}

#[test]
fn nops_write_data_and_rptr() {
    let (mut g, mut ev, mut q) = setup(256);
    let mut w = 0;
    push(&mut g, 256, &mut w, &[PACKET2, packet3(OP_NOP, 0x3fff), packet3(OP_NOP, 2), 0, 0, 0]);
    push(&mut g, 256, &mut w, &write_data(DATA, &[1, 2, 3]));
    // ADDR_INCR = 1: every dword to the same address.
    push(&mut g, 256, &mut w, &[packet3(OP_WRITE_DATA, 4), (5 << 8) | (1 << 16), (DATA + 64) as u32, 0, 7, 8]);
    let r = q.run(&mut g, &mut ev, 100);
    assert_eq!(r, Run { packets: 5, stop: Stop::Idle });
    assert_eq!((g.peek32(DATA), g.peek32(DATA + 4), g.peek32(DATA + 8)), (1, 2, 3));
    assert_eq!((g.peek32(DATA + 64), g.peek32(DATA + 68)), (8, 0));
    assert_eq!(u64::from(g.peek32(RPTR)), w);
    assert_eq!(q.rptr(), w);
}

#[test]
fn release_mem_writes_and_interrupts() {
    let (mut g, mut ev, mut q) = setup(256);
    let mut w = 0;
    push(&mut g, 256, &mut w, &release_mem(1, 2, DATA, 0x1_2345_6789, 77));
    push(&mut g, 256, &mut w, &release_mem(2, 0, DATA + 8, 0x1_2345_6789, 0));
    push(&mut g, 256, &mut w, &release_mem(3, 0, DATA + 16, 0, 0));
    push(&mut g, 256, &mut w, &release_mem(0, 1, 0, 0, 78));
    assert_eq!(q.run(&mut g, &mut ev, 100).packets, 4);
    assert_eq!(g.peek64(DATA), 0x2345_6789);
    assert_eq!(g.peek64(DATA + 8), 0x1_2345_6789);
    assert_eq!(g.peek64(DATA + 16), 1); // the clock's first tick
    assert_eq!(ev.irqs, vec![77, 78]);
    // Misaligned 64-bit destination, reserved data_sel, short packet.
    for bad in [
        release_mem(2, 0, DATA + 4, 0, 0),
        release_mem(6, 0, DATA, 0, 0),
        vec![packet3(OP_RELEASE_MEM, 3), 0, 0, 0, 0],
    ] {
        let (mut g, mut ev, mut q) = setup(256);
        let mut w = 0;
        push(&mut g, 256, &mut w, &bad);
        assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Error(QUEUE_ERROR_INVALID_PACKET));
        assert_eq!(g.peek32(RPTR), 0);
    }
}

#[test]
fn wait_reg_mem_polls_memory() {
    let (mut g, mut ev, mut q) = setup(256);
    let mut w = 0;
    // Wait until (DATA & 0xff) == 0x12 (function 3, memory space).
    push(&mut g, 256, &mut w, &[packet3(OP_WAIT_REG_MEM, 5), 3 | (1 << 4), DATA as u32, 0, 0x12, 0xff, 10]);
    push(&mut g, 256, &mut w, &write_data(DATA + 4, &[9]));
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 0, stop: Stop::Blocked });
    assert_eq!(g.peek32(DATA + 4), 0);
    g.poke32(DATA, 0x3412);
    assert_eq!(q.run(&mut g, &mut ev, 100).packets, 2);
    assert_eq!(g.peek32(DATA + 4), 9);
    // Register space, write-wait-write, reserved function.
    for ctl in [3, 3 | (1 << 4) | (1 << 6), 7 | (1 << 4)] {
        let (mut g, mut ev, mut q) = setup(256);
        let mut w = 0;
        push(&mut g, 256, &mut w, &[packet3(OP_WAIT_REG_MEM, 5), ctl, DATA as u32, 0, 0, 0, 10]);
        let want = if ctl & 7 == 7 { QUEUE_ERROR_INVALID_PACKET } else { QUEUE_ERROR_UNSUPPORTED };
        assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Error(want), "ctl {ctl:#x}");
    }
}

#[test]
fn indirect_buffers_run_and_chain() {
    let (mut g, mut ev, mut q) = setup(256);
    let ib2 = IB + 0x100;
    let mut first = write_data(DATA, &[0x11]);
    // Chain to the second IB.
    first.extend_from_slice(&[packet3(OP_INDIRECT_BUFFER, 2), ib2 as u32, 0, 6 | (1 << 20) | (1 << 23)]);
    g.poke_dwords(IB, &first);
    let mut second = write_data(DATA + 4, &[0x22]);
    second.push(PACKET2);
    g.poke_dwords(ib2, &second);
    let mut w = 0;
    push(&mut g, 256, &mut w, &[packet3(OP_INDIRECT_BUFFER, 2), IB as u32, 0, first.len() as u32 | (1 << 23)]);
    push(&mut g, 256, &mut w, &write_data(DATA + 8, &[0x33]));
    let r = q.run(&mut g, &mut ev, 100);
    assert_eq!(r.stop, Stop::Idle);
    assert_eq!((g.peek32(DATA), g.peek32(DATA + 4), g.peek32(DATA + 8)), (0x11, 0x22, 0x33));
    assert_eq!(u64::from(g.peek32(RPTR)), w);
    // An IB blocked on WAIT_REG_MEM resumes where it stopped.
    let (mut g, mut ev, mut q) = setup(256);
    let mut ib = vec![packet3(OP_WAIT_REG_MEM, 5), 3 | (1 << 4), DATA as u32, 0, 1, 1, 4];
    ib.extend(write_data(DATA + 4, &[5]));
    g.poke_dwords(IB, &ib);
    let mut w = 0;
    push(&mut g, 256, &mut w, &[packet3(OP_INDIRECT_BUFFER, 2), IB as u32, 0, ib.len() as u32]);
    assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Blocked);
    assert_eq!(g.peek32(RPTR), 0);
    g.poke32(DATA, 1);
    assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Idle);
    assert_eq!(g.peek32(DATA + 4), 5);
    assert_eq!(g.peek32(RPTR), 4);
    // A packet running past the IB's end, an IB2, a misaligned IB.
    for (ib, size, want) in [
        (write_data(DATA, &[1, 2]), 4u32, QUEUE_ERROR_INVALID_PACKET),
        (vec![packet3(OP_INDIRECT_BUFFER, 2), IB as u32, 0, 4], 4, QUEUE_ERROR_UNSUPPORTED),
    ] {
        let (mut g, mut ev, mut q) = setup(256);
        g.poke_dwords(IB, &ib);
        let mut w = 0;
        push(&mut g, 256, &mut w, &[packet3(OP_INDIRECT_BUFFER, 2), IB as u32, 0, size]);
        assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Error(want));
    }
    let (mut g, mut ev, mut q) = setup(256);
    let mut w = 0;
    push(&mut g, 256, &mut w, &[packet3(OP_INDIRECT_BUFFER, 2), IB as u32 + 2, 0, 4]);
    assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Error(QUEUE_ERROR_INVALID_PACKET));
}

#[test]
fn everything_else_is_rejected() {
    let cases = [
        (0x0000_1234, QUEUE_ERROR_INVALID_PACKET), // type 0: register write
        (0x4000_0000, QUEUE_ERROR_INVALID_PACKET), // type 1
        (packet3(0x76, 1), QUEUE_ERROR_UNSUPPORTED), // SET_SH_REG
        (packet3(0x15, 3), QUEUE_ERROR_UNSUPPORTED), // DISPATCH_DIRECT
        (packet3(0xee, 0), QUEUE_ERROR_UNSUPPORTED),
    ];
    for (h, want) in cases {
        let (mut g, mut ev, mut q) = setup(256);
        let mut w = 0;
        push(&mut g, 256, &mut w, &[h, 0, 0, 0, 0]);
        assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 0, stop: Stop::Error(want) }, "{h:#x}");
        assert_eq!(g.peek32(RPTR), 0);
    }
    // WRITE_DATA to a register.
    let (mut g, mut ev, mut q) = setup(256);
    let mut w = 0;
    push(&mut g, 256, &mut w, &[packet3(OP_WRITE_DATA, 3), 0, 0x1234, 0, 1]);
    assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Error(QUEUE_ERROR_UNSUPPORTED));
}

#[test]
fn partial_packets_wait_and_the_ring_wraps() {
    let ring = 64; // 16 dwords
    let (mut g, mut ev, mut q) = setup(ring);
    let mut w = 0;
    // The header alone: wait for the rest.
    let p = write_data(DATA, &[0xaa, 0xbb]);
    push(&mut g, ring, &mut w, &p[..1]);
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 0, stop: Stop::Idle });
    push(&mut g, ring, &mut w, &p[1..]);
    assert_eq!(q.run(&mut g, &mut ev, 100).packets, 1);
    // Packets straddling the end of the ring, many times round.
    for i in 0..20u32 {
        push(&mut g, ring, &mut w, &write_data(DATA + 8, &[i, i + 1, i + 2]));
        assert_eq!(q.run(&mut g, &mut ev, 100).packets, 1);
        assert_eq!(g.peek32(DATA + 16), i + 2);
    }
    assert_eq!(u64::from(g.peek32(RPTR)), w % 16);
    // Budget.
    for _ in 0..3 {
        push(&mut g, ring, &mut w, &[PACKET2]);
    }
    assert_eq!(q.run(&mut g, &mut ev, 2), Run { packets: 2, stop: Stop::Budget });
    assert_eq!(q.run(&mut g, &mut ev, 2), Run { packets: 1, stop: Stop::Idle });
}

#[test]
fn faults_leave_the_packet_in_place() {
    let (mut g, mut ev, mut q) = setup(256);
    let mut w = 0;
    push(&mut g, 256, &mut w, &write_data(0x90_0000, &[1]));
    assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Fault(Fault { va: 0x90_0000, write: true }));
    assert_eq!(g.peek32(RPTR), 0);
    g.map(0x90_0000, PAGE, true);
    assert_eq!(q.run(&mut g, &mut ev, 100).packets, 1);
    assert_eq!(g.peek32(0x90_0000), 1);
    assert!(Pm4Queue::new(RING, 100, RPTR, WPTR).is_none());
    assert!(Pm4Queue::new(RING + 2, 256, RPTR, WPTR).is_none());
}

/// The pointers cost one read of the write pointer per batch of packets
/// and one write of the read pointer per run, not one each per packet;
/// packets are fetched FETCH_DWORDS at a time, not dword by dword.
#[test]
fn pointers_are_read_and_published_once_per_run() {
    let ring = 8 * PAGE;
    let (mut g, mut ev, mut q) = setup(ring);
    let mut w = 0;
    for i in 0..100 {
        push(&mut g, ring, &mut w, &write_data(DATA + 4 * (i % 64), &[i as u32]));
    }
    let before = g.accesses;
    let r = q.run(&mut g, &mut ev, 1000);
    assert_eq!(r, Run { packets: 100, stop: Stop::Idle });
    for i in 36..100 {
        assert_eq!(g.peek32(DATA + 4 * (i % 64)), i as u32);
    }
    // Each WRITE_DATA: 1 write; its 5 dwords come in fetches of 64 (500
    // dwords from the ring's start: 8 fetches).
    let fetches = (100 * 5 + FETCH_DWORDS as u64 - 1) / FETCH_DWORDS as u64;
    let pointers = (g.accesses - before).checked_sub(100 + fetches).expect("fewer accesses than writes and fetches");
    assert!(pointers <= 3, "{pointers} pointer accesses for 100 packets");
    assert_eq!(u64::from(g.peek32(RPTR)), w);
    // A budget stop publishes what was done too.
    push(&mut g, ring, &mut w, &write_data(DATA, &[1]));
    push(&mut g, ring, &mut w, &write_data(DATA, &[2]));
    assert_eq!(q.run(&mut g, &mut ev, 1), Run { packets: 1, stop: Stop::Budget });
    assert_eq!(u64::from(g.peek32(RPTR)), w - 5);
}

/// Fetching ahead never reads past the published dwords, the ring's end or
/// a page: a packet straddling a page whose next page faults runs once the
/// page is mapped, with the data it had; multi-dword payloads longer than
/// a fetch land whole.
#[test]
fn fetches_stay_within_published_dwords_and_pages() {
    // The ring's second page unmapped: the packets on the first run.
    let ring = 2 * PAGE;
    let (mut g, mut ev, mut q) = setup(ring);
    g.unmap(RING + PAGE, PAGE);
    let mut w = 0;
    // 1022 dwords of NOP filler, then a WRITE_DATA straddling the pages.
    let fill = packet3(OP_NOP, 1020);
    let mut nop = vec![fill];
    nop.extend(std::iter::repeat(0).take(1021));
    for (i, d) in nop.iter().enumerate() {
        g.poke32(RING + 4 * i as u64, *d);
    }
    w += nop.len() as u64;
    g.poke64(WPTR, w);
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 1, stop: Stop::Idle });
    g.map(RING + PAGE, PAGE, true);
    push(&mut g, ring, &mut w, &write_data(DATA, &[7, 8, 9]));
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 1, stop: Stop::Idle });
    assert_eq!((g.peek32(DATA), g.peek32(DATA + 8)), (7, 9));
    // A packet whose dwords are published in two steps, the second after
    // the engine fetched the first (stale dwords beyond the write pointer
    // are never used).
    let p = write_data(DATA + 16, &[0x11, 0x22]);
    g.poke32(RING + (w * 4) % ring + 16, 0xdead); // garbage where dword 4 goes
    let start = w;
    push(&mut g, ring, &mut w, &p[..4]);
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 0, stop: Stop::Idle });
    w = start;
    push(&mut g, ring, &mut w, &p);
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 1, stop: Stop::Idle });
    assert_eq!((g.peek32(DATA + 16), g.peek32(DATA + 20)), (0x11, 0x22));
    // A payload of 200 dwords (several fetches), wrapping the ring.
    let data: Vec<u32> = (0..200).map(|i| 0x1000 + i).collect();
    push(&mut g, ring, &mut w, &write_data(DATA + 64, &data));
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 1, stop: Stop::Idle });
    for i in 0..200u64 {
        assert_eq!(g.peek32(DATA + 64 + 4 * i), 0x1000 + i as u32);
    }
    assert_eq!(u64::from(g.peek32(RPTR)), w % (ring / 4));
}
