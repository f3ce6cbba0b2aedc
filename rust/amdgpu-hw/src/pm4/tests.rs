// SPDX-License-Identifier: GPL-2.0 OR MIT
//! HWS packets: byte-exact headers, and runlists built, parsed and compared.

use super::*;
extern crate std;
use std::vec::Vec;

fn process(pasid: u32, xnack: bool, queues: &[MapQueues]) -> RunlistProcess<'_> {
    RunlistProcess {
        map: MapProcess {
            pasid,
            process_quantum: 10,
            page_table_base: 0x1_0000_0000 + u64::from(pasid) * 0x1000,
            sh_mem_bases: 0x0002_0001,
            sh_mem_config: 0x0001_9c00,
            tba_addr: 0x7fff_0000_0000,
            tma_addr: 0x7fff_0000_1000,
            gds_size: 0x123,
            num_queues: queues.len() as u32,
            ..MapProcess::default()
        },
        xnack_enabled: xnack,
        queues,
    }
}

fn queue(doorbell: u32, engine: Engine) -> MapQueues {
    MapQueues {
        engine,
        is_static: false,
        is_gws: false,
        doorbell_off: doorbell,
        mqd_addr: 0x80_0000_0000 + u64::from(doorbell) * 0x1000,
        wptr_addr: 0x7f00_0000_0000 + u64::from(doorbell) * 8,
    }
}

const LIMITS: RunlistLimits =
    RunlistLimits { max_proc_per_quantum: 8, cp_queues: 24, xnack_chain: true, ext_eng: false, format: PmFormat::V9 };
const V9: PmFormat = PmFormat::V9;

#[test]
fn headers_are_byte_exact() {
    // PACKET3: type 3 in bits 31:30, count = dwords - 2 in 29:16, opcode in
    // 15:8 (PM4_MES_TYPE_3_HEADER).  MAP_QUEUES is 7 dwords, opcode 0xA2;
    // MAP_PROCESS 16 dwords (header, bitfields2, 2 page-table, 2 sh_mem,
    // 4 tba/tma, reserved6, 2 gds, bitfields14, 2 completion), 0xA1;
    // RUN_LIST 4 dwords, 0xA5; SET_RESOURCES 8 dwords, 0xA0.
    assert_eq!(type3_header(IT_MAP_QUEUES, MAP_QUEUES_DWORDS), 0xC005_A200);
    assert_eq!(type3_header(IT_MAP_PROCESS, MAP_PROCESS_DWORDS), 0xC00E_A100);
    assert_eq!(type3_header(IT_RUN_LIST, RUNLIST_DWORDS), 0xC002_A500);
    assert_eq!(type3_header(IT_SET_RESOURCES, SET_RESOURCES_DWORDS), 0xC006_A000);
}

#[test]
fn map_queues_fields_by_hand() {
    let q = MapQueues { engine: Engine::Sdma(1), ..queue(0x40, Engine::Compute) };
    let p = q.encode(false);
    // bitfields2: engine_sel = sdma1 (3) in bits 28:26, num_queues 1 in
    // 31:29, queue_sel 1 (HWS slots) in 5:4.
    assert_eq!(p[1], 1 << 29 | 3 << 26 | 1 << 4);
    // bitfields3: doorbell_offset in bits 27:2.
    assert_eq!(p[2], 0x40 << 2);
    assert_eq!(&p[3..], &[0x4_0000, 0x80, 0x200, 0x7f00]);
    // SDMA IP 5.2+: extended_engine_sel (bits 3:2) names engines 8..15.
    let p = MapQueues { engine: Engine::Sdma(9), ..q }.encode(true);
    assert_eq!(p[1], 1 << 29 | 1 << 26 | 2 << 2 | 1 << 4);
}

#[test]
fn runlist_round_trips() {
    let qa = [queue(2, Engine::Compute), queue(4, Engine::Sdma(0))];
    let qb = [MapQueues { is_static: true, is_gws: true, ..queue(6, Engine::Compute) }];
    let procs = [process(0x8001, false, &qa), process(0x8002, false, &qb)];
    let mut ib = [0xdead_beef; 128];
    let built = build_runlist_ib(&mut ib, 0x1000, &procs, &LIMITS).unwrap();
    assert_eq!(built, RunlistIb { dwords: 2 * MAP_PROCESS_DWORDS + 3 * MAP_QUEUES_DWORDS, over_subscription: 0 });

    let mut got = parse(&ib[..built.dwords], V9);
    for p in &procs {
        assert_eq!(got.next(), Some(Ok(Packet::MapProcess(p.map))));
        for q in p.queues {
            assert_eq!(got.next(), Some(Ok(Packet::MapQueues(*q))));
        }
    }
    assert_eq!(got.next(), None);
}

#[test]
fn over_subscription_chains_the_runlist() {
    let q = [queue(2, Engine::Compute)];
    let procs = [process(1, false, &q), process(2, false, &q), process(3, false, &q)];
    let limits = RunlistLimits { max_proc_per_quantum: 2, ..LIMITS };
    let mut ib = [0; 128];
    let built = build_runlist_ib(&mut ib, 0xabc_0000, &procs, &limits).unwrap();
    assert_eq!(built.over_subscription, over_subscription::PROCESS_COUNT);
    let last = parse(&ib[..built.dwords], V9).last().unwrap().unwrap();
    let chain = RunList { ib_base: 0xabc_0000, ib_size: built.dwords as u32, chain: true, process_cnt: 2 };
    assert_eq!(last, Packet::RunList(chain));
    assert_eq!(build_runlist_ib(&mut ib[..10], 0, &procs, &limits), Err(RunlistError::NoSpace { needed: built.dwords }));
}

/// Builds the runlist of `procs` under `limits` and returns it with its IB.
fn build(procs: &[RunlistProcess<'_>], limits: &RunlistLimits) -> (RunlistIb, Vec<u32>) {
    let mut ib = std::vec![0xdead_beef; 4096];
    let built = build_runlist_ib(&mut ib, 0x12_3456_7000, procs, limits).unwrap();
    ib.truncate(built.dwords);
    (built, ib)
}

#[test]
fn over_subscription_at_the_boundaries() {
    let limits = RunlistLimits { max_proc_per_quantum: 3, cp_queues: 4, xnack_chain: false, ..LIMITS };
    let one = [queue(2, Engine::Compute)];
    let two = [queue(2, Engine::Compute), queue(4, Engine::Compute)];
    let sdma = [queue(2, Engine::Compute), queue(4, Engine::Sdma(0)), queue(6, Engine::Sdma(1))];
    let mp = MAP_PROCESS_DWORDS;
    let mq = MAP_QUEUES_DWORDS;
    // As many processes as max_proc_per_quantum and compute queues as
    // slots: not over-subscribed, no RUN_LIST at the end.
    let procs = [process(1, false, &two), process(2, false, &one), process(3, false, &one)];
    let (b, ib) = build(&procs, &limits);
    assert_eq!(b, RunlistIb { dwords: 3 * mp + 4 * mq, over_subscription: 0 });
    assert!(!parse(&ib, V9).any(|p| matches!(p, Ok(Packet::RunList(_)))));
    // One process more: PROCESS_COUNT, and the IB grows by the RUN_LIST.
    let procs4 = [process(1, false, &one), process(2, false, &one), process(3, false, &one), process(4, false, &one)];
    let (b, _) = build(&procs4, &limits);
    assert_eq!(b, RunlistIb { dwords: 4 * mp + 4 * mq + RUNLIST_DWORDS, over_subscription: over_subscription::PROCESS_COUNT });
    // One compute queue more than the slots: COMPUTE_QUEUE_COUNT.
    let procs = [process(1, false, &two), process(2, false, &two), process(3, false, &one)];
    let (b, _) = build(&procs, &limits);
    assert_eq!(b, RunlistIb { dwords: 3 * mp + 5 * mq + RUNLIST_DWORDS, over_subscription: over_subscription::COMPUTE_QUEUE_COUNT });
    // SDMA queues do not take compute slots.
    let procs = [process(1, false, &sdma), process(2, false, &one), process(3, false, &one)];
    assert_eq!(build(&procs, &limits).0.over_subscription, 0);
    // Both at once.
    let procs = [process(1, false, &two), process(2, false, &two), process(3, false, &one), process(4, false, &one)];
    let both = over_subscription::PROCESS_COUNT | over_subscription::COMPUTE_QUEUE_COUNT;
    assert_eq!(build(&procs, &limits).0.over_subscription, both);
    // Two GWS queues: GWS_QUEUE_COUNT; one is not.
    let gws = [MapQueues { is_gws: true, ..queue(2, Engine::Compute) }];
    assert_eq!(build(&[process(1, false, &gws)], &limits).0.over_subscription, 0);
    let procs = [process(1, false, &gws), process(2, false, &gws)];
    assert_eq!(build(&procs, &limits).0.over_subscription, over_subscription::GWS_QUEUE_COUNT);
    // max_proc_per_quantum 0 or 1 both allow one process (upstream counts
    // it as 1 unless larger); a second chains.
    for max in [0, 1] {
        let l = RunlistLimits { max_proc_per_quantum: max, ..limits };
        assert_eq!(build(&procs4[..1], &l).0.over_subscription, 0);
        assert_eq!(build(&procs4[..2], &l).0.over_subscription, over_subscription::PROCESS_COUNT);
    }
    // XNACK modes mixed chain only where the GPU needs it.
    let mixed = [process(1, true, &one), process(2, false, &one)];
    assert_eq!(build(&mixed, &limits).0.over_subscription, 0);
    let l = RunlistLimits { xnack_chain: true, ..limits };
    assert_eq!(build(&mixed, &l).0.over_subscription, over_subscription::XNACK_CONFLICT);
}

#[test]
fn chain_packet_fields_by_hand() {
    // C: pm_runlist_v9 with chain: the IB's own address and size, chain
    // and chained_runlist_idle_disable set, valid, process_cnt =
    // min(processes, max_proc_per_quantum).
    let limits = RunlistLimits { max_proc_per_quantum: 3, cp_queues: 4, xnack_chain: false, ..LIMITS };
    let one = [queue(2, Engine::Compute)];
    let procs: Vec<_> = (1..=5).map(|p| process(p, false, &one)).collect();
    let (b, ib) = build(&procs, &limits);
    assert_eq!(b.dwords, 5 * (MAP_PROCESS_DWORDS + MAP_QUEUES_DWORDS) + RUNLIST_DWORDS);
    let rl = &ib[b.dwords - RUNLIST_DWORDS..];
    // RUN_LIST: type 3, count 2, opcode 0xA5.
    assert_eq!(rl[0], 0xC002_A500);
    // ib_base_lo in bits 31:2 (dword aligned), then the high half.
    assert_eq!(rl[1], 0x3456_7000);
    assert_eq!(rl[2], 0x12);
    // ib_size 20 bits, chain bit 20, offload_polling 21 (0),
    // chained_runlist_idle_disable 22, valid 23, process_cnt 27:24.
    assert_eq!(rl[3], b.dwords as u32 | 1 << 20 | 1 << 22 | 1 << 23 | 3 << 24);
    // Fewer processes than max_proc_per_quantum but too many queues:
    // process_cnt is the process count.
    let four = [queue(2, Engine::Compute), queue(4, Engine::Compute), queue(6, Engine::Compute), queue(8, Engine::Compute)];
    let procs = [process(1, false, &four), process(2, false, &one)];
    let (b, ib) = build(&procs, &limits);
    assert_eq!(ib[b.dwords - 1] >> 24 & 0xf, 2);
    assert_eq!(ib[b.dwords - 1] & 0xf_ffff, b.dwords as u32);
}

#[test]
fn xnack_modes_are_grouped() {
    let q = [queue(2, Engine::Compute)];
    let procs = [process(1, true, &q), process(2, false, &q), process(3, true, &q)];
    let mut ib = [0; 128];
    let built = build_runlist_ib(&mut ib, 0, &procs, &LIMITS).unwrap();
    assert_eq!(built.over_subscription, over_subscription::XNACK_CONFLICT);
    let pasids: [u32; 3] = {
        let mut it = parse(&ib[..built.dwords], V9).filter_map(|p| match p {
            Ok(Packet::MapProcess(m)) => Some(m.pasid),
            _ => None,
        });
        [it.next().unwrap(), it.next().unwrap(), it.next().unwrap()]
    };
    assert_eq!(pasids, [1, 3, 2]);
}

#[test]
fn set_resources_and_runlist_round_trip() {
    let r = SetResources {
        vmid_mask: 0xff00,
        unmap_latency: 4,
        queue_mask: 0x0000_00ff_ffff_fff0,
        gws_mask: u64::MAX,
        oac_mask: 0xffff,
        gds_heap_base: 0,
        gds_heap_size: 0x3ff,
        xnack_retry_disable_check: true,
    };
    let rl = RunList { ib_base: 0x1_0000_1000, ib_size: 80, chain: false, process_cnt: 3 };
    let mut ib = [0; SET_RESOURCES_DWORDS + RUNLIST_DWORDS];
    ib[..SET_RESOURCES_DWORDS].copy_from_slice(&r.encode());
    ib[SET_RESOURCES_DWORDS..].copy_from_slice(&rl.encode());
    let mut got = parse(&ib, V9);
    assert_eq!(got.next(), Some(Ok(Packet::SetResources(r))));
    assert_eq!(got.next(), Some(Ok(Packet::RunList(rl))));
    assert_eq!(got.next(), None);
}

#[test]
fn parser_rejects_garbage() {
    assert_eq!(parse(&[0x1234], V9).next(), Some(Err(ParseError::NotType3(0))));
    assert_eq!(parse(&[type3_header(IT_MAP_QUEUES, 7), 0], V9).next(), Some(Err(ParseError::Truncated(0))));
    assert_eq!(parse(&[type3_header(IT_MAP_QUEUES, 3), 0, 0], V9).next(), Some(Err(ParseError::TooShort(0))));
    let nop = [type3_header(0x10, 3), 0, 0];
    assert_eq!(parse(&nop, V9).next(), Some(Ok(Packet::Other(0x10, &nop))));
}

#[test]
fn more_headers_are_byte_exact() {
    // UNMAP_QUEUES 6 dwords, opcode 0xA3; QUERY_STATUS 7, 0xA4; RELEASE_MEM
    // 8, 0x49; the Aldebaran MAP_PROCESS 21 (the GFX9 one plus
    // spi_gdbg_per_vmid_cntl and four tcp_watch_cntl), 0xA1.
    assert_eq!(UnmapQueues::new(UnmapFilter::AllQueues, false, false).encode()[0], 0xC004_A300);
    assert_eq!(QueryStatus::fence(0, 0).encode()[0], 0xC005_A400);
    assert_eq!(ReleaseMem::end_of_pipe(0).encode()[0], 0xC006_4900);
    assert_eq!(MAP_PROCESS_ALDEBARAN_DWORDS, 21);
    assert_eq!(MapProcess::default().encode_aldebaran()[0], 0xC013_A100);
}

#[test]
fn unmap_queues_fields_by_hand() {
    // bitfields2: action in 1:0, extended_engine_sel 3:2, queue_sel 5:4,
    // engine_sel 28:26 (compute = 0), num_queues 31:29.
    let p = UnmapQueues::new(UnmapFilter::Pasid(0x8003), false, false).encode();
    assert_eq!(&p[1..], &[1 << 4, 0x8003, 0, 0, 0]);
    let p = UnmapQueues::new(UnmapFilter::AllQueues, true, true).encode();
    assert_eq!(&p[1..], &[1 | 1 << 2 | 2 << 4, 0, 0, 0, 0]);
    let p = UnmapQueues::new(UnmapFilter::DynamicQueues, false, false).encode();
    assert_eq!(p[1], 3 << 4);
    // By doorbell: offsets in bits 27:2 of ordinals 3..6.
    let f = UnmapFilter::Doorbells { num: 2, offsets: [0x10, 0x12, 0, 0] };
    let p = UnmapQueues::new(f, false, false).encode();
    assert_eq!(&p[1..], &[2 << 29, 0x10 << 2, 0x12 << 2, 0, 0]);
}

#[test]
fn query_status_fields_by_hand() {
    // bitfields2: context_id 27:0, interrupt_sel 29:28 (completion 0),
    // command 31:30 (fence_only_after_write_ack 2); then addr lo/hi, data lo/hi.
    let q = QueryStatus::fence(0x1_2345_6780, FENCE_COMPLETED);
    assert_eq!(&q.encode()[1..], &[2 << 30, 0, 0x2345_6780, 1, 100, 0]);
    assert!(q.writes_fence() && !q.interrupts());
}

#[test]
fn release_mem_fields_by_hand() {
    // pm_release_mem_vi's choices: event_type CACHE_FLUSH_AND_INV_TS (0x14)
    // in 5:0, event_index end_of_pipe (5) in 11:8, tcl1/tc action in bits
    // 16/17; int_sel 2 in 26:24, data_sel 1 in 31:29; address_lo_32b in
    // 31:2 of ordinal 4.
    let r = ReleaseMem::end_of_pipe(0x7_0000_1234);
    assert_eq!(&r.encode()[1..], &[0x14 | 5 << 8 | 1 << 16 | 1 << 17, 2 << 24 | 1 << 29, 0x1234, 7, 0, 0, 0]);
}

#[test]
fn aldebaran_map_process_by_hand_and_round_trip() {
    let mut m = process(0x8001, true, &[]).map;
    m.spi_gdbg_per_vmid_cntl = 0x55;
    m.tcp_watch_cntl = [1, 2, 3, 4];
    m.num_gws = 2;
    m.num_queues = 3;
    let p = m.encode_aldebaran();
    // bitfields2: pasid 15:0, diq_enable 24, process_quantum 31:25.
    assert_eq!(p[1], 0x8001 | 10 << 25);
    // No TRAP_EN in sq_shader_tba_hi (pm_map_process_aldebaran); the GFX9
    // packet sets it (pm_map_process_v9).  tba 0x7fff_0000_0000 >> 8 =
    // 0x7f_ff00_0000, tma 0x7fff_0000_1000 >> 8 = 0x7f_ff00_0010.
    assert_eq!(&p[6..10], &[0xff00_0000, 0x7f, 0xff00_0010, 0x7f]);
    assert_eq!(m.encode()[7], 0x7f | 1 << SQ_SHADER_TBA_HI__TRAP_EN__SHIFT);
    // bitfields14 (ordinal 14): num_gws 6:0, sdma_enable 7, num_oac 11:8,
    // gds_size_hi 15:12, gds_size 21:16, num_queues 31:22; gds_size 0x123.
    assert_eq!(p[13], 2 | 1 << 7 | 4 << 12 | 0x23 << 16 | 3 << 22);
    assert_eq!(&p[14..19], &[0x55, 1, 2, 3, 4]);
    let Some(Ok(Packet::MapProcess(back))) = parse(&p, PmFormat::Aldebaran).next() else { panic!() };
    assert_eq!(back, m);
    // A GFX9 CP reading the Aldebaran packet takes it whole and decodes its
    // own layout: the packet is longer than its own, not truncated.
    assert!(matches!(parse(&p, V9).next(), Some(Ok(Packet::MapProcess(_)))));
    // The other way round it is too short.
    assert_eq!(parse(&m.encode(), PmFormat::Aldebaran).next(), Some(Err(ParseError::TooShort(0))));
}

#[test]
fn formats_follow_the_gc_version() {
    use kfd_logic::gfx::GfxVersion;
    let of = |v| PmFormat::of(GfxVersion::from_target_version(v).unwrap());
    assert_eq!(of(90010), PmFormat::Aldebaran); // gfx90a
    assert_eq!(of(90402), PmFormat::Aldebaran); // gfx942
    assert_eq!(of(90008), PmFormat::V9); // gfx908
    assert_eq!(of(100300), PmFormat::V9); // gfx1030
}

#[test]
fn aldebaran_runlist_round_trips() {
    let qa = [queue(2, Engine::Compute), queue(4, Engine::Sdma(1))];
    let procs = [process(7, true, &qa), process(9, true, &qa[..1])];
    let limits = RunlistLimits { format: PmFormat::Aldebaran, ..LIMITS };
    let mut ib = [0; 128];
    let built = build_runlist_ib(&mut ib, 0, &procs, &limits).unwrap();
    assert_eq!(built.dwords, 2 * MAP_PROCESS_ALDEBARAN_DWORDS + 3 * MAP_QUEUES_DWORDS);
    let got: Vec<_> = parse(&ib[..built.dwords], PmFormat::Aldebaran).map(Result::unwrap).collect();
    assert_eq!(
        got,
        [
            Packet::MapProcess(procs[0].map),
            Packet::MapQueues(qa[0]),
            Packet::MapQueues(qa[1]),
            Packet::MapProcess(procs[1].map),
            Packet::MapQueues(qa[0]),
        ]
    );
}

#[test]
fn over_subscription_by_queues_and_gws() {
    let many: Vec<_> = (0..5).map(|i| queue(2 * i, Engine::Compute)).collect();
    let sdma: Vec<_> = (0..8).map(|i| queue(0x100 + 2 * i, Engine::Sdma(i % 2))).collect();
    let limits = RunlistLimits { cp_queues: 4, ..LIMITS };
    let mut ib = [0; 256];
    // Five compute queues on four HQD slots: chained.
    let built = build_runlist_ib(&mut ib, 0x2000, &[process(1, false, &many)], &limits).unwrap();
    assert_eq!(built.over_subscription, over_subscription::COMPUTE_QUEUE_COUNT);
    // SDMA queues do not count against the compute slots.
    let built = build_runlist_ib(&mut ib, 0x2000, &[process(1, false, &sdma)], &limits).unwrap();
    assert_eq!(built.over_subscription, 0);
    // Two GWS queues.
    let g = [MapQueues { is_gws: true, ..queue(2, Engine::Compute) }];
    let built = build_runlist_ib(&mut ib, 0x2000, &[process(1, false, &g), process(2, false, &g)], &limits).unwrap();
    assert_eq!(built.over_subscription, over_subscription::GWS_QUEUE_COUNT);
    // Mixed XNACK modes chain only where the GMC says so.
    let q = [queue(2, Engine::Compute)];
    let mixed = [process(1, true, &q), process(2, false, &q)];
    let built = build_runlist_ib(&mut ib, 0, &mixed, &RunlistLimits { xnack_chain: false, ..limits }).unwrap();
    assert_eq!(built.over_subscription, 0);
    // No processes: an empty IB, nothing chained.
    assert_eq!(build_runlist_ib(&mut ib, 0, &[], &limits), Ok(RunlistIb { dwords: 0, over_subscription: 0 }));
}

#[test]
fn set_resources_from_shared_resources() {
    // 4 pipes of 8 queues: bit i of the first MEC is pipe i / 8, queue i % 8,
    // set-resource bit pipe * 8 + queue = i; the second MEC (bits 32+) is
    // never given to the HWS.
    let res = SharedResources {
        compute_vmid_bitmap: 0xff00,
        cp_queue_bitmap: 0xffff_fffe_u128 | 0xff << 32,
        num_queue_per_pipe: 8,
        num_pipe_per_mec: 4,
    };
    let r = SetResources::for_scheduler(&res, true, QUEUE_PREEMPTION_TIMEOUT_MS).unwrap();
    assert_eq!(r.queue_mask, 0xffff_fffe);
    assert_eq!(r.vmid_mask, 0xff00);
    // KFD_UNMAP_LATENCY_MS = (9000 - 900) / 2 = 4050 ms, in 100 ms.
    assert_eq!(r.unmap_latency, 40);
    assert_eq!((r.gws_mask, r.oac_mask, r.gds_heap_size), (u64::MAX, 0, 0));
    assert!(r.xnack_retry_disable_check);
    // 2 queues per pipe: bit 3 is pipe 1 queue 1, set-resource bit 9.
    let res = SharedResources { cp_queue_bitmap: 1 << 3, num_queue_per_pipe: 2, ..res };
    assert_eq!(SetResources::for_scheduler(&res, false, 9000).unwrap().queue_mask, 1 << 9);
    // 16 queues per pipe: queue 8 and up has no set-resource bit.
    let res = SharedResources { cp_queue_bitmap: 1 << 8, num_queue_per_pipe: 16, ..res };
    assert_eq!(SetResources::for_scheduler(&res, false, 9000), Err(SetResourcesError::QueueOutOfMask(8)));
    let res = SharedResources { num_pipe_per_mec: 0, ..res };
    assert_eq!(SetResources::for_scheduler(&res, false, 9000), Err(SetResourcesError::NoQueues));
}

#[test]
fn preemption_sequence_round_trips() {
    let unmap = UnmapQueues::new(UnmapFilter::Pasid(0x8005), false, false);
    let seq = preemption(&unmap, 0xf000_0000);
    let got: Vec<_> = parse(&seq, V9).map(Result::unwrap).collect();
    assert_eq!(got, [Packet::UnmapQueues(unmap), Packet::QueryStatus(QueryStatus::fence(0xf000_0000, FENCE_COMPLETED))]);
    for f in [
        UnmapFilter::AllQueues,
        UnmapFilter::DynamicQueues,
        UnmapFilter::Doorbells { num: 4, offsets: [1, 2, 3, 0x3ff_ffff] },
    ] {
        for (reset, ext) in [(false, false), (true, true)] {
            let u = UnmapQueues::new(f, reset, ext);
            assert_eq!(parse(&u.encode(), V9).next(), Some(Ok(Packet::UnmapQueues(u))));
        }
    }
    let r = ReleaseMem { data: 0x1_0000_0002, int_ctxid: 9, ..ReleaseMem::end_of_pipe(0x1234_5678) };
    assert_eq!(parse(&r.encode(), V9).next(), Some(Ok(Packet::ReleaseMem(r))));
}

#[test]
fn parser_rejects_reserved_and_short_packets() {
    // UNMAP_QUEUES action 3 is reserved.
    let mut u = UnmapQueues::new(UnmapFilter::AllQueues, false, false).encode();
    u[1] |= 3;
    assert_eq!(parse(&u, V9).next(), Some(Err(ParseError::Reserved(0))));
    let short = [type3_header(IT_QUERY_STATUS, 4), 0, 0, 0];
    assert_eq!(parse(&short, V9).next(), Some(Err(ParseError::TooShort(0))));
    let short = [type3_header(IT_UNMAP_QUEUES, 3), 0, 0];
    assert_eq!(parse(&short, V9).next(), Some(Err(ParseError::TooShort(0))));
    // After an error the parser stops only on framing errors; a short
    // packet is skipped by its header's count.
    let mut two = [0; 4 + QUERY_STATUS_DWORDS];
    two[..4].copy_from_slice(&short_query());
    two[4..].copy_from_slice(&QueryStatus::fence(8, 1).encode());
    let mut it = parse(&two, V9);
    assert_eq!(it.next(), Some(Err(ParseError::TooShort(0))));
    assert_eq!(it.position(), 4);
    assert_eq!(it.next(), Some(Ok(Packet::QueryStatus(QueryStatus::fence(8, 1)))));
}

fn short_query() -> [u32; 4] {
    [type3_header(IT_QUERY_STATUS, 4), 0, 0, 0]
}

#[test]
fn queue_preemption_timeout_param() {
    // Unset (-1), or nonsense: upstream's default; from 1 ms up: as given.
    for p in [-1, 0, i32::MIN] {
        assert_eq!(queue_preemption_timeout_ms(p), QUEUE_PREEMPTION_TIMEOUT_MS);
    }
    assert_eq!(queue_preemption_timeout_ms(1), 1);
    assert_eq!(queue_preemption_timeout_ms(1000), 1000);
    assert_eq!(queue_preemption_timeout_ms(i32::MAX), i32::MAX as u32);
    // SET_RESOURCES' unmap latency follows it: (1000 - 100) / 2 ms in 100 ms.
    assert_eq!(unmap_latency(queue_preemption_timeout_ms(1000)), 4);
}

#[test]
fn map_process_carries_the_qpd() {
    // What rkfd puts in for a gfx90a process with XNACK off after
    // SET_MEMORY_POLICY (qpd.rs: sh_mem_config 0x1018, sh_mem_bases
    // 0x0001_0002) and a root PD at VRAM 0x8_0040_0000 (| VALID).
    use crate::gfx::GfxVersion;
    use crate::qpd::{pd_addr_vram, ShMem};
    let mut s = ShMem::default();
    s.set_cache_memory_policy(GfxVersion::GFX90A, true, 0, 1 << 48, 2 << 48);
    s.update_qpd(GfxVersion::GFX90A, true, false, 1 << 48, 2 << 48);
    let m = MapProcess {
        pasid: 0x8001,
        process_quantum: 10,
        page_table_base: pd_addr_vram(0x8_0040_0000).unwrap(),
        sh_mem_config: s.config,
        sh_mem_bases: s.bases,
        num_queues: 1,
        ..MapProcess::default()
    };
    // pm4_mes_map_process(_aldebaran): ordinals 3-4 the page table base
    // (lo, hi), 5 sh_mem_bases, 6 sh_mem_config in both layouts.
    for (p, format) in [(&m.encode()[..], V9), (&m.encode_aldebaran()[..], PmFormat::Aldebaran)] {
        assert_eq!(&p[2..6], &[0x0040_0001, 0x8, 0x0001_0002, 0x1018], "{format:?}");
        let Some(Ok(Packet::MapProcess(back))) = parse(p, format).next() else { panic!() };
        assert_eq!(back, m);
    }
}
