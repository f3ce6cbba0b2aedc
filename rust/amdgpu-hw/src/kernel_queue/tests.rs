// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The HIQ ring: the driver's acquire/submit against the CP's reader.

use super::*;
use crate::pm4::{parse, Packet, PmFormat, QueryStatus, UnmapFilter, UnmapQueues, QUERY_STATUS_DWORDS};

#[test]
fn nop_packet_is_upstreams() {
    // type 3 (bits 31:30), count 0x3fff and bit 30 again (PM4_COUNT_ZERO =
    // 0x7fff << 16), opcode IT_NOP 0x10.
    assert_eq!(NOP_PACKET, 0xFFFF_1000);
    assert_eq!(KernelRing::new(1000), None);
    assert_eq!(KernelRing::new(8), None);
}

#[test]
fn fills_up_to_one_free_dword() {
    let mut kq = KernelRing::new(64).unwrap(); // 16 dwords
    let mut ring = [0u32; 16];
    assert_eq!(kq.acquire(&mut ring, 0, 7), Ok(0));
    assert_eq!(kq.acquire(&mut ring, 0, 7), Ok(7));
    // 14 pending: (rptr + 16 - 1 - wptr) % 16 = 1 dword is left, and it
    // does not reach the end (14 + 1 < 16); after it the ring is full.
    assert_eq!(kq.acquire(&mut ring, 0, 1), Ok(14));
    assert_eq!(kq.acquire(&mut ring, 0, 1), Err(NoSpace));
    assert_eq!(kq.submit(), 15);
}

#[test]
fn wraps_with_nops_and_the_cp_reads_across() {
    let mut kq = KernelRing::new(64).unwrap();
    let mut ring = [0u32; 16];
    let q = QueryStatus::fence(0x1000, 100).encode();
    // Two 7-dword packets, the CP consumes the first.
    for _ in 0..2 {
        let at = kq.acquire(&mut ring, 0, QUERY_STATUS_DWORDS as u32).unwrap();
        ring[at..at + QUERY_STATUS_DWORDS].copy_from_slice(&q);
    }
    let w = kq.submit();
    let mut rptr = 0u64;
    let (at, len) = next_packet(&ring, rptr, w).unwrap().unwrap();
    assert_eq!((at, len), (0, QUERY_STATUS_DWORDS));
    rptr += len as u64;
    // A third does not fit before the end (14 + 7 >= 16), so it must go to
    // 0, which needs dwords < rptr: with rptr 7 it does not fit yet; once
    // the CP has read the second packet (rptr 14), two NOPs pad the ring.
    assert_eq!(kq.acquire(&mut ring, rptr as u32, 7), Err(NoSpace));
    let (_, len) = next_packet(&ring, rptr, w).unwrap().unwrap();
    rptr += len as u64;
    assert_eq!(rptr, 14);
    let u = UnmapQueues::new(UnmapFilter::AllQueues, false, false).encode();
    let at = kq.acquire(&mut ring, rptr as u32, u.len() as u32).unwrap();
    assert_eq!(at, 0);
    assert_eq!(&ring[14..], &[NOP_PACKET, NOP_PACKET]);
    ring[at..at + u.len()].copy_from_slice(&u);
    let w = kq.submit();
    assert_eq!(w, 14 + 2 + u.len() as u64);
    // The CP steps over the NOPs one dword each and reads the packet at 0.
    let mut seen = [0usize; 3];
    for s in &mut seen {
        let (at, len) = next_packet(&ring, rptr, w).unwrap().unwrap();
        *s = at;
        rptr += len as u64;
    }
    assert_eq!(seen, [14, 15, 0]);
    let (_, n) = next_packet(&ring, rptr - u.len() as u64, w).unwrap().unwrap();
    assert_eq!(parse(&ring[..n], PmFormat::V9).next(), Some(Ok(Packet::UnmapQueues(UnmapQueues::new(UnmapFilter::AllQueues, false, false)))));
    assert_eq!(next_packet(&ring, rptr, w), None);
}

#[test]
fn rollback_forgets_the_pending_packet() {
    let mut kq = KernelRing::new(64).unwrap();
    let mut ring = [0u32; 16];
    kq.acquire(&mut ring, 0, 5).unwrap();
    kq.submit();
    assert_eq!(kq.acquire(&mut ring, 0, 4), Ok(5));
    kq.rollback();
    assert_eq!(kq.acquire(&mut ring, 0, 4), Ok(5));
    assert_eq!(kq.submit(), 9);
}

#[test]
fn the_cp_rejects_what_hang_hws_writes() {
    // pm_debugfs_hang_hws: a QUERY_STATUS-sized buffer of 0x55 bytes.
    let ring = [0x5555_5555u32; 16];
    assert_eq!(next_packet(&ring, 0, 7), Some(Err(RingError::NotType3)));
    // A header whose count runs past the write pointer or the ring's end.
    let mut ring = [0u32; 16];
    ring[0] = QueryStatus::fence(0, 0).encode()[0];
    assert_eq!(next_packet(&ring, 0, 3), Some(Err(RingError::Overrun)));
    ring[12] = ring[0];
    assert_eq!(next_packet(&ring, 12, 19), Some(Err(RingError::Overrun)));
}
