// SPDX-License-Identifier: GPL-2.0 OR MIT
//! HWS packets: byte-exact headers, and runlists built, parsed and compared.

use super::*;

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

const LIMITS: RunlistLimits = RunlistLimits { max_proc_per_quantum: 8, cp_queues: 24, xnack_chain: true, ext_eng: false };

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

    let mut got = parse(&ib[..built.dwords]);
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
    let last = parse(&ib[..built.dwords]).last().unwrap().unwrap();
    let chain = RunList { ib_base: 0xabc_0000, ib_size: built.dwords as u32, chain: true, process_cnt: 2 };
    assert_eq!(last, Packet::RunList(chain));
    assert_eq!(build_runlist_ib(&mut ib[..10], 0, &procs, &limits), Err(RunlistError::NoSpace));
}

#[test]
fn xnack_modes_are_grouped() {
    let q = [queue(2, Engine::Compute)];
    let procs = [process(1, true, &q), process(2, false, &q), process(3, true, &q)];
    let mut ib = [0; 128];
    let built = build_runlist_ib(&mut ib, 0, &procs, &LIMITS).unwrap();
    assert_eq!(built.over_subscription, over_subscription::XNACK_CONFLICT);
    let pasids: [u32; 3] = {
        let mut it = parse(&ib[..built.dwords]).filter_map(|p| match p {
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
    let mut got = parse(&ib);
    assert_eq!(got.next(), Some(Ok(Packet::SetResources(r))));
    assert_eq!(got.next(), Some(Ok(Packet::RunList(rl))));
    assert_eq!(got.next(), None);
}

#[test]
fn parser_rejects_garbage() {
    assert_eq!(parse(&[0x1234]).next(), Some(Err(ParseError::NotType3(0))));
    assert_eq!(parse(&[type3_header(IT_MAP_QUEUES, 7), 0]).next(), Some(Err(ParseError::Truncated(0))));
    assert_eq!(parse(&[type3_header(IT_MAP_QUEUES, 3), 0, 0]).next(), Some(Err(ParseError::TooShort(0))));
    let nop = [type3_header(0x10, 3), 0, 0];
    assert_eq!(parse(&nop).next(), Some(Ok(Packet::Other(0x10, &nop))));
}
