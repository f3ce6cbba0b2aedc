// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The SDMA engine against an in-memory GPU, with packets laid out as
//! ROCr's BlitSdma builds them for SDMA 4+ (counts minus one).

mod common;

use common::{Rec, TestGpu, PAGE};
use gpu_engines::mem::*;
use gpu_engines::sdma::*;

const RING: u64 = 0x10_0000;
const RPTR: u64 = 0x20_0000;
const WPTR: u64 = 0x20_0008;
const SRC: u64 = 0x30_0000;
const DST: u64 = 0x40_0000;
const SIG: u64 = 0x50_0000;

fn setup(ring: u64) -> (TestGpu, Rec, SdmaQueue) {
    let mut g = TestGpu::new();
    g.map(RING, ring, true);
    g.map(RPTR, PAGE, true);
    g.map(SRC, 4 * PAGE, true);
    g.map(DST, 4 * PAGE, true);
    g.map(SIG, PAGE, true);
    (g, Rec::default(), SdmaQueue::new(RING, ring, RPTR, WPTR).unwrap())
}

/// Appends at byte write pointer `*w` (wrapping) and publishes it.
fn push(g: &mut TestGpu, ring: u64, w: &mut u64, dws: &[u32]) {
    for d in dws {
        g.poke32(RING + *w % ring, *d);
        *w += 4;
    }
    g.poke64(WPTR, *w);
}

fn lo(a: u64) -> u32 {
    a as u32
}
fn hi(a: u64) -> u32 {
    (a >> 32) as u32
}
fn copy(dst: u64, src: u64, n: u32) -> [u32; 7] {
    [header(OP_COPY, SUBOP_LINEAR), n - 1, 0, lo(src), hi(src), lo(dst), hi(dst)]
}
fn fence(a: u64, v: u32) -> [u32; 4] {
    [header(OP_FENCE, 0), lo(a), hi(a), v]
}
fn poll_mem(a: u64, func: u32, value: u32, mask: u32) -> [u32; 6] {
    [header(OP_POLL_REGMEM, 0) | (func << 28) | (1 << 31), lo(a), hi(a), value, mask, 10 | (0xfff << 16)]
}
fn atomic_add64(a: u64, v: u64) -> [u32; 8] {
    [header(OP_ATOMIC, 0) | (ATOMIC_ADD64 << 25), lo(a), hi(a), lo(v), hi(v), 0, 0, 0]
}

#[test]
fn rocr_copy_sequence() {
    // What BlitSdma::SubmitLinearCopyCommand emits: polls on a dependency
    // signal's two halves, the copy, the completion decrement, a fence.
    let (mut g, mut ev, mut q) = setup(4096);
    let data: Vec<u8> = (0..3 * PAGE + 123).map(|i| (i * 7 + 3) as u8).collect();
    g.poke(SRC + 5, &data);
    g.poke64(SIG + 8, 0); // dependency signal value, satisfied
    g.poke64(SIG + 64 + 8, 1); // completion signal
    let mut w = 0;
    push(&mut g, 4096, &mut w, &poll_mem(SIG + 12, 3, 0, 0xffff_ffff));
    push(&mut g, 4096, &mut w, &poll_mem(SIG + 8, 3, 0, 0xffff_ffff));
    push(&mut g, 4096, &mut w, &copy(DST + 1, SRC + 5, data.len() as u32));
    push(&mut g, 4096, &mut w, &atomic_add64(SIG + 64 + 8, u64::MAX));
    push(&mut g, 4096, &mut w, &fence(SIG + 128, 2015));
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 5, stop: Stop::Idle });
    assert_eq!(g.peek(DST + 1, data.len()), data);
    assert_eq!(g.peek64(SIG + 64 + 8), 0);
    assert_eq!(g.peek32(SIG + 128), 2015);
    assert_eq!(g.peek64(RPTR), w);
    assert_eq!(q.bytes_moved(), data.len() as u64);
}

/// ROCr's `hdp_flush_cmd` (sdma_registers.h): a POLL_REGMEM register poll
/// of register 0 with func 0 ("always"), which SDMA 4 firmware runs as an
/// HDP flush.
const ROCR_HDP_FLUSH: [u32; 6] = [0x8, 0x0, 0x8000_0000, 0x0, 0x0, 0x0];

#[test]
fn rocr_gfx9_copy_sequence() {
    // What ROCr 5.2's BlitSdma::SubmitCommand emits for
    // hsa_amd_memory_async_copy on gfx9 (SDMA 4, not on xGMI, so
    // hdp_flush_support_): a poll on a pending dependency signal's low half,
    // the HDP flush, the copies (split at kMaxSingleCopySize), the
    // completion decrement, then for an interrupt signal a fence to the
    // event mailbox and a trap with the event id.
    let (mut g, mut ev, mut q) = setup(4096);
    let data: Vec<u8> = (0..2 * PAGE + 44).map(|i| (i * 13 + 1) as u8).collect();
    g.poke(SRC, &data);
    g.poke64(SIG + 8, 0); // dependency signal, already 0
    g.poke64(SIG + 64 + 8, 1); // completion signal
    let mailbox = SIG + 256;
    let mut w = 0;
    push(&mut g, 4096, &mut w, &poll_mem(SIG + 8, 3, 0, 0xffff_ffff));
    push(&mut g, 4096, &mut w, &ROCR_HDP_FLUSH);
    push(&mut g, 4096, &mut w, &copy(DST, SRC, PAGE as u32));
    push(&mut g, 4096, &mut w, &copy(DST + PAGE, SRC + PAGE, data.len() as u32 - PAGE as u32));
    push(&mut g, 4096, &mut w, &atomic_add64(SIG + 64 + 8, u64::MAX));
    push(&mut g, 4096, &mut w, &fence(mailbox, 77));
    push(&mut g, 4096, &mut w, &[header(OP_TRAP, 0), 77]);
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 7, stop: Stop::Idle });
    assert_eq!(g.peek(DST, data.len()), data);
    assert_eq!(g.peek64(SIG + 64 + 8), 0);
    assert_eq!(g.peek32(mailbox), 77);
    assert_eq!(ev.irqs, vec![77]);
    assert_eq!(g.peek64(RPTR), w);
    assert_eq!(q.bytes_moved(), data.len() as u64);

    // The HDP flush is a barrier-free no-op: it passes whether or not the
    // (nonexistent) register would match, and does not touch memory.
    let before = g.peek(SIG, PAGE as usize);
    push(&mut g, 4096, &mut w, &ROCR_HDP_FLUSH);
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 1, stop: Stop::Idle });
    assert_eq!(g.peek(SIG, PAGE as usize), before);
    assert_eq!(g.peek64(RPTR), w);
}

#[test]
fn fill_write_trap_timestamp_nop_gcr_hdp() {
    let (mut g, mut ev, mut q) = setup(4096);
    let mut w = 0;
    // Dword fill of 4 KiB + 8.
    push(&mut g, 4096, &mut w, &[header(OP_CONST_FILL, 0) | (2 << 30), lo(DST), hi(DST), 0xdead_beef, 4096 + 8 - 1]);
    // Byte fill of 3 bytes.
    push(&mut g, 4096, &mut w, &[header(OP_CONST_FILL, 0), lo(DST + 2 * PAGE), 0, 0x5a, 2]);
    // Write linear of 3 dwords.
    push(&mut g, 4096, &mut w, &[header(OP_WRITE, 0), lo(SRC), hi(SRC), 2, 10, 20, 30]);
    push(&mut g, 4096, &mut w, &[header(OP_TRAP, 0), 0xf000_0000 | 1234]);
    push(&mut g, 4096, &mut w, &[header(OP_TIMESTAMP, SUBOP_TIMESTAMP_GET_GLOBAL), lo(SIG), hi(SIG)]);
    push(&mut g, 4096, &mut w, &[header(OP_TIMESTAMP, SUBOP_TIMESTAMP_SET), 0, 0]);
    push(&mut g, 4096, &mut w, &[header(OP_NOP, 0) | (2 << 16), 0xffff_ffff, 0xffff_ffff, 0]);
    push(&mut g, 4096, &mut w, &[header(OP_GCR_REQ, 1), 0, 0, 0, 0]);
    // amdgpu's HDP flush: a register poll with hdp_flush.
    push(&mut g, 4096, &mut w, &[header(OP_POLL_REGMEM, 0) | (1 << 26) | (3 << 28), 0, 0, 0, 0, 0]);
    let r = q.run(&mut g, &mut ev, 100);
    assert_eq!(r, Run { packets: 10, stop: Stop::Idle });
    assert!(g.peek(DST, 4104).chunks(4).all(|c| c == 0xdead_beefu32.to_le_bytes()));
    assert_eq!(g.peek32(DST + 4104), 0);
    assert_eq!(g.peek(DST + 2 * PAGE, 4), [0x5a, 0x5a, 0x5a, 0]);
    assert_eq!((g.peek32(SRC), g.peek32(SRC + 4), g.peek32(SRC + 8)), (10, 20, 30));
    assert_eq!(ev.irqs, vec![1234]);
    assert_eq!(g.peek64(SIG), 1);
    assert_eq!(g.peek64(RPTR), w);
}

#[test]
fn poll_blocks_until_memory_matches() {
    let (mut g, mut ev, mut q) = setup(256);
    let mut w = 0;
    g.poke32(SIG, 5);
    push(&mut g, 256, &mut w, &poll_mem(SIG, 6, 7, 0xff)); // > 7
    push(&mut g, 256, &mut w, &fence(SIG + 4, 1));
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 0, stop: Stop::Blocked });
    assert_eq!(g.peek64(RPTR), 0);
    g.poke32(SIG, 0x108);
    assert_eq!(q.run(&mut g, &mut ev, 100).packets, 2);
    assert_eq!(g.peek32(SIG + 4), 1);
}

#[test]
fn ring_wraps_and_partial_packets_wait() {
    let ring = 64;
    let (mut g, mut ev, mut q) = setup(ring);
    let mut w = 0;
    for i in 0..40u32 {
        // 7-dword copies and 4-dword fences straddle the 16-dword ring's end.
        g.poke32(SRC, i);
        push(&mut g, ring, &mut w, &copy(DST, SRC, 4));
        push(&mut g, ring, &mut w, &fence(SIG, i));
        assert_eq!(q.run(&mut g, &mut ev, 100).packets, 2);
        assert_eq!((g.peek32(DST), g.peek32(SIG)), (i, i));
    }
    assert_eq!(g.peek64(RPTR), w);
    // Half a copy: wait.
    let c = copy(DST, SRC, 4);
    push(&mut g, ring, &mut w, &c[..3]);
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 0, stop: Stop::Idle });
    push(&mut g, ring, &mut w, &c[3..]);
    assert_eq!(q.run(&mut g, &mut ev, 100).packets, 1);
    // Write linear whose count is not written yet, then is.
    let wl = [header(OP_WRITE, 0), lo(SRC), hi(SRC), 0, 77];
    push(&mut g, ring, &mut w, &wl[..2]);
    assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Idle);
    push(&mut g, ring, &mut w, &wl[2..]);
    assert_eq!(q.run(&mut g, &mut ev, 100).packets, 1);
    assert_eq!(g.peek32(SRC), 77);
}

#[test]
fn rejections() {
    let cases: [(Vec<u32>, u32); 12] = [
        (vec![3], QUEUE_ERROR_INVALID_PACKET),
        (vec![0xff], QUEUE_ERROR_INVALID_PACKET),
        (vec![header(OP_INDIRECT, 0), 0, 0, 0, 0, 0], QUEUE_ERROR_UNSUPPORTED),
        (vec![header(OP_SRBM_WRITE, 0), 0, 0], QUEUE_ERROR_UNSUPPORTED),
        (vec![header(OP_PTEPDE, 0), 0, 0], QUEUE_ERROR_UNSUPPORTED),
        (vec![header(OP_COPY, 4), 0, 0, 0, 0, 0, 0], QUEUE_ERROR_UNSUPPORTED), // sub-window
        (vec![header(OP_ATOMIC, 0) | (40 << 25), lo(SIG), 0, 0, 0, 0, 0, 0], QUEUE_ERROR_UNSUPPORTED),
        (vec![header(OP_POLL_REGMEM, 0) | (3 << 28), 0x1234, 0, 0, 0, 0], QUEUE_ERROR_UNSUPPORTED), // register compare
        (vec![header(OP_POLL_REGMEM, 0) | (7 << 28), 0, 0x8000_0000, 0, 0, 0], QUEUE_ERROR_INVALID_PACKET), // reserved func
        (atomic_add64(SIG + 4, 1).to_vec(), QUEUE_ERROR_INVALID_PACKET), // misaligned
        (fence(SIG + 2, 1).to_vec(), QUEUE_ERROR_INVALID_PACKET),
        (vec![header(OP_TIMESTAMP, 5), 0, 0], QUEUE_ERROR_INVALID_PACKET),
    ];
    for (pkt, want) in cases {
        let (mut g, mut ev, mut q) = setup(256);
        let mut w = 0;
        push(&mut g, 256, &mut w, &pkt);
        assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 0, stop: Stop::Error(want) }, "{pkt:x?}");
        assert_eq!(g.peek64(RPTR), 0);
    }
    assert!(SdmaQueue::new(RING, 48, RPTR, WPTR).is_none());
    assert!(SdmaQueue::new(RING + 1, 256, RPTR, WPTR).is_none());
}

#[test]
fn faults_report_the_address_and_direction() {
    let (mut g, mut ev, mut q) = setup(256);
    let mut w = 0;
    let far = 0x70_0000;
    g.map(far, PAGE, false);
    push(&mut g, 256, &mut w, &copy(far + PAGE - 8, SRC, 16));
    assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Fault(Fault { va: far + PAGE - 8, write: true }));
    g.map(far, PAGE, true);
    // Now the second page of the destination is missing.
    assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Fault(Fault { va: far + PAGE, write: true }));
    g.map(far + PAGE, PAGE, true);
    assert_eq!(q.run(&mut g, &mut ev, 100).packets, 1);
    push(&mut g, 256, &mut w, &copy(DST, 0x99_0000, 4));
    assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Fault(Fault { va: 0x99_0000, write: false }));
    assert_eq!(g.peek64(RPTR), 28);
}

#[test]
fn long_transfers_run_in_slices() {
    let (mut g, mut ev, mut q) = setup(256);
    let len = 2 * RUN_BYTES + 4096 + 8;
    let (src, dst) = (0x1000_0000u64, 0x2000_0000u64);
    g.map(src, len, true);
    g.map(dst, len, true);
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    g.poke(src, &data);
    let mut w = 0;
    push(&mut g, 256, &mut w, &copy(dst, src, len as u32));
    push(&mut g, 256, &mut w, &[header(OP_CONST_FILL, 0) | (2 << 30), lo(dst), hi(dst), 0x0102_0304, (RUN_BYTES + 8 - 1) as u32]);
    // Slice 1 and 2 of the copy: no packet completes, the rptr stays.
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 0, stop: Stop::Budget });
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 0, stop: Stop::Budget });
    assert_eq!(g.peek64(RPTR), 0);
    assert_eq!(q.bytes_moved(), 2 * RUN_BYTES);
    // A fault in the last slice: resumed from where the slice started.
    g.unmap(dst + len - 8, 8);
    assert_eq!(q.run(&mut g, &mut ev, 100).stop, Stop::Fault(Fault { va: dst + len - 8, write: true }));
    g.map(dst + len - 8, 8, true);
    // The copy's end, then the first slice of the fill.
    let r = q.run(&mut g, &mut ev, 100);
    assert_eq!(r, Run { packets: 1, stop: Stop::Budget });
    assert_eq!(g.peek(dst, len as usize)[RUN_BYTES as usize + 8..], data[RUN_BYTES as usize + 8..]);
    assert_eq!(q.run(&mut g, &mut ev, 100), Run { packets: 1, stop: Stop::Idle });
    assert!(g.peek(dst, RUN_BYTES as usize + 8).chunks(4).all(|c| c == [4, 3, 2, 1]));
    assert_eq!(g.peek64(RPTR), w);
}

/// One read of the write pointer per batch of packets and one write of
/// the read pointer per run, not one each per packet; packet dwords are
/// fetched FETCH_DWORDS at a time.
#[test]
fn pointers_are_read_and_published_once_per_run() {
    let ring = 4 * PAGE;
    let (mut g, mut ev, mut q) = setup(ring);
    let mut w = 0;
    for i in 0..100u32 {
        push(&mut g, ring, &mut w, &fence(SIG + 4 * u64::from(i % 64), i));
    }
    let before = g.accesses;
    assert_eq!(q.run(&mut g, &mut ev, 1000), Run { packets: 100, stop: Stop::Idle });
    for i in 36..100u32 {
        assert_eq!(g.peek32(SIG + 4 * u64::from(i % 64)), i);
    }
    // Each FENCE: one write; its 4 dwords come in fetches of 64 (400
    // dwords from the ring's start: 7 fetches).
    let fetches = (100 * 4 + FETCH_DWORDS as u64 - 1) / FETCH_DWORDS as u64;
    let pointers = (g.accesses - before).checked_sub(100 + fetches).expect("fewer accesses than writes and fetches");
    assert!(pointers <= 3, "{pointers} pointer accesses for 100 packets");
    assert_eq!(g.peek64(RPTR), w);
}
