// SPDX-License-Identifier: GPL-2.0 OR MIT
//! MQD field logic against values derived by hand from the upstream
//! managers and the generated register fields.

use super::*;

fn dev(gfx: GfxVersion) -> MqdDevice {
    MqdDevice { gfx, cwsr_enabled: true, profiler_active: false, pcie_atomics: false, sdma_phase_quantum: SDMA_PHASE_QUANTUM_DEFAULT }
}

fn aql_queue() -> QueueProps {
    QueueProps {
        format: QueueFormat::Aql,
        queue_address: 0x7f00_1234_5600,
        queue_size: 4096,
        read_ptr: 0x7f00_0000_1000,
        write_ptr: 0x7f00_0000_2008,
        doorbell_off: 0x10,
        eop_ring_buffer_address: 0x7f00_0009_0000,
        eop_ring_buffer_size: 4096,
        ctx_save_restore_area_address: 0x7f00_0100_0000,
        ctx_save_restore_area_size: 0x20_0000,
        ctl_stack_size: 0x3000,
        priority: 7,
        ..QueueProps::default()
    }
}

#[test]
fn v9_aql_queue_fields() {
    let d = dev(GfxVersion::GFX90A);
    let mut mqd = ComputeMqd::zeroed(d.gfx).unwrap();
    init_compute_mqd(&mut mqd, &d, 0x1_2345_6000, &aql_queue());
    let ComputeMqd::V9(m) = mqd else { panic!("gfx90a is not v9") };
    assert_eq!(m.header, 0xC031_0800);
    assert_eq!(m.compute_pipelinestat_enable, 1);
    assert_eq!(m.compute_static_thread_mgmt_se0, u32::MAX);
    assert_eq!(v9_se4_7(&m), [u32::MAX; 4]);
    // QUEUE_SIZE log2(1024 dwords) - 1 = 9, RPTR_BLOCK_SIZE 5 << 8,
    // QUEUE_FULL_EN bit 14, WPP_CLAMP_EN bit 16, SLOT_BASED_WPTR 2 << 25,
    // NO_UPDATE_RPTR bit 27, UNORD_DISPATCH bit 28 (gc_9_0_sh_mask.h).
    assert_eq!(m.cp_hqd_pq_control, 0x1C01_4509);
    // DOORBELL_OFFSET 0x10 << 2 | DOORBELL_BIF_DROP bit 1.
    assert_eq!(m.cp_hqd_pq_doorbell_control, 0x42);
    // PRELOAD_REQ | 0x53 << 8 | QSWITCH_MODE bit 30 (CWSR).
    assert_eq!(m.cp_hqd_persistent_state, 0x4000_5301);
    assert_eq!(m.cp_hqd_quantum, 0x111);
    assert_eq!(m.cp_hqd_ib_control, 0x00B0_0000);
    assert_eq!(m.cp_mqd_control, 0x100);
    assert_eq!((m.cp_mqd_base_addr_lo, m.cp_mqd_base_addr_hi), (0x2345_6000, 1));
    assert_eq!((m.cp_hqd_pq_base_lo, m.cp_hqd_pq_base_hi), (0x0012_3456, 0x7f));
    assert_eq!((m.cp_hqd_pq_rptr_report_addr_lo, m.cp_hqd_pq_rptr_report_addr_hi), (0x1000, 0x7f00));
    assert_eq!((m.cp_hqd_pq_wptr_poll_addr_lo, m.cp_hqd_pq_wptr_poll_addr_hi), (0x2008, 0x7f00));
    // 4 KiB EOP ring = 512 qwords: 2^(9+1) dwords.
    assert_eq!(m.cp_hqd_eop_control, 9);
    assert_eq!(m.cp_hqd_eop_base_addr_lo, 0x0009_0000 >> 8 | 0x7f00 << 24);
    assert_eq!(m.cp_hqd_aql_control, 1);
    assert_eq!(m.cp_hqd_ctx_save_base_addr_lo, 0x0100_0000);
    assert_eq!(m.cp_hqd_ctx_save_size, 0x20_0000);
    assert_eq!((m.cp_hqd_cntl_stack_size, m.cp_hqd_cntl_stack_offset, m.cp_hqd_wg_state_offset), (0x3000, 0x3000, 0x3000));
    assert_eq!(m.cp_hqd_hq_status0, 1 << 14);
    assert_eq!(m.cp_hqd_pipe_priority, 1);
    assert_eq!(m.cp_hqd_vmid, 0);
}

#[test]
fn v10_and_v11_drop_wpp_clamp_and_differ_in_preload() {
    let q = aql_queue();
    let d10 = dev(GfxVersion::GFX1030);
    let mut mqd = ComputeMqd::zeroed(d10.gfx).unwrap();
    init_compute_mqd(&mut mqd, &d10, 0, &q);
    let ComputeMqd::V10(m) = mqd else { panic!("gfx1030 is not v10") };
    // As GFX9 without WPP_CLAMP_EN, and SLOT_BASED_WPTR moved to 2 << 18
    // (gc_10_1_0_sh_mask.h).
    assert_eq!(m.cp_hqd_pq_control, 0x1808_4509);
    assert_eq!(m.cp_hqd_persistent_state & 0x3ff01, 0x5301);
    assert_eq!(m.cp_hqd_hq_scheduler0, 1 << 14);
    assert_eq!(m.cp_hqd_ib_control, 3 << 20);

    let d11 = MqdDevice { pcie_atomics: true, ..dev(GfxVersion::GFX1100) };
    let mut mqd = ComputeMqd::zeroed(d11.gfx).unwrap();
    init_compute_mqd(&mut mqd, &d11, 0, &QueueProps { is_dbg_wa: true, ..q });
    let ComputeMqd::V11(m) = mqd else { panic!("gfx1100 is not v11") };
    assert_eq!(m.cp_hqd_persistent_state & 0x3ff01, 0x5501);
    assert_eq!(m.cp_hqd_hq_status0, 1 << 14 | 1 << 29);
    assert_eq!(m.compute_static_thread_mgmt_se7, 0xffff);
}

#[test]
fn hiq_is_privileged_and_kernel_owned() {
    let d = dev(GfxVersion::GFX90A);
    let mut mqd = ComputeMqd::zeroed(d.gfx).unwrap();
    init_hiq_mqd(&mut mqd, &d, 0, &QueueProps { format: QueueFormat::Pm4, queue_size: 4096, ..QueueProps::default() });
    let ComputeMqd::V9(m) = mqd else { panic!() };
    // PRIV_STATE bit 30, KMD_QUEUE bit 31, no AQL bits.
    assert_eq!(m.cp_hqd_pq_control, 0xD000_0509);
    assert_eq!(m.cp_hqd_aql_control, 0);
}

#[test]
fn cu_mask_spreads_over_engines() {
    // 4 SEs, 1 SH, 8 CUs each: bit i of the mask goes to SE i % 4, CU i / 4.
    let mut topo = CuTopology { num_se: 4, num_sh_per_se: 1, cu_active: 32, ..CuTopology::default() };
    for se in 0..4 {
        topo.cu_per_sh[se][0] = 8;
    }
    let se = symmetrically_map_cu_mask(GfxVersion::GFX90A, &topo, &[0b1_0001], 32);
    assert_eq!(se[..4], [0b11, 0, 0, 0]);
    // GFX10+: CU pairs; mask bits 0-1 enable SE0's WGP 0 (CUs 0 and 1).
    let se = symmetrically_map_cu_mask(GfxVersion::GFX1030, &topo, &[0b11], 32);
    assert_eq!(se[..4], [0b11, 0, 0, 0]);

    let d = dev(GfxVersion::GFX90A);
    let mut mqd = ComputeMqd::zeroed(d.gfx).unwrap();
    init_compute_mqd(&mut mqd, &d, 0, &aql_queue());
    let info = MqdUpdate { cu_mask: Some((&[0xffff_ffff], 32, &topo)), update_flag: update_flag::IS_GWS };
    update_compute_mqd(&mut mqd, &d, &aql_queue(), Some(&info));
    let ComputeMqd::V9(m) = mqd else { panic!() };
    assert_eq!(m.compute_static_thread_mgmt_se3, 0xff);
    assert_eq!(v9_se4_7(&m), [0; 4]);
    assert_ne!(m.compute_resource_limits & gc9::COMPUTE_RESOURCE_LIMITS__FORCE_SIMD_DIST_MASK, 0);
}

#[test]
fn sdma_ring_fields() {
    let q = QueueProps { sdma_engine_id: 1, sdma_queue_id: 2, ..aql_queue() };
    for gfx in [GfxVersion::GFX90A, GfxVersion::GFX1030, GfxVersion::GFX1100] {
        let d = dev(gfx);
        let mut mqd = SdmaMqd::zeroed(gfx).unwrap();
        init_sdma_mqd(&mut mqd, &d, &q);
        // RB_SIZE log2(1024) << 1, RPTR_WRITEBACK_ENABLE bit 12,
        // RPTR_WRITEBACK_TIMER 6 << 16; GFX11 adds F32_WPTR_POLL_ENABLE.
        match mqd {
            SdmaMqd::V9(m) => {
                assert_eq!(m.sdmax_rlcx_rb_cntl, 0x0006_1014);
                assert_eq!(m.sdmax_rlcx_ib_cntl, 0x100);
                assert_eq!((m.sdma_engine_id, m.sdma_queue_id, m.sdmax_rlcx_dummy_reg), (1, 2, 0xf));
            }
            SdmaMqd::V10(m) => assert_eq!(m.sdmax_rlcx_rb_cntl, 0x0006_1014),
            SdmaMqd::V11(m) => {
                assert_eq!(m.sdmax_rlcx_rb_cntl & 0x0006_1014, 0x0006_1014);
                assert_ne!(m.sdmax_rlcx_rb_cntl, 0x0006_1014);
                assert_eq!(m.sdmax_rlcx_rb_wptr_poll_addr_lo, 0x2008);
                assert_eq!(m.sdmax_rlcx_sched_cntl >> gc11::SDMA0_QUEUE0_SCHEDULE_CNTL__CONTEXT_QUANTUM__SHIFT, 32);
            }
        }
    }
}

#[test]
fn generations_by_arch() {
    assert_eq!(MqdGen::of(GfxVersion::GFX942), Some(MqdGen::V9));
    assert_eq!(MqdGen::of(GfxVersion::GFX1103), Some(MqdGen::V11));
    assert_eq!(MqdGen::of(GfxVersion::from_target_version(120000).unwrap()), None);
    assert_eq!((0..16).map(pipe_priority).collect::<heapless_vec::V>().0, [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
}

/// A fixed array collected from an iterator (the crate is `no_std`).
mod heapless_vec {
    pub struct V(pub [u32; 16]);
    impl FromIterator<u32> for V {
        fn from_iter<I: IntoIterator<Item = u32>>(it: I) -> Self {
            let mut a = [0; 16];
            for (i, v) in it.into_iter().enumerate() {
                a[i] = v;
            }
            V(a)
        }
    }
}

/// Every generation: the fields `init_mqd` / `init_mqd_sdma` set come back
/// out of the MQD's bytes as the CP reads them.
#[test]
fn compute_mqd_round_trips_per_generation() {
    let q = QueueProps { doorbell_off: 0x2e, priority: 12, ..aql_queue() };
    for gfx in [GfxVersion::GFX90A, GfxVersion::GFX1030, GfxVersion::GFX1100] {
        let d = dev(gfx);
        let gen = MqdGen::of(gfx).unwrap();
        let mut mqd = ComputeMqd::zeroed(gfx).unwrap();
        init_compute_mqd(&mut mqd, &d, 0, &q);
        assert_eq!(mqd.as_bytes().len(), gen.compute_size());
        let c = decode_compute(gen, mqd.as_bytes()).unwrap();
        assert_eq!(
            c,
            ComputeQueue {
                aql: true,
                ring_base: q.queue_address,
                ring_size: 4096,
                rptr_report: q.read_ptr,
                wptr_poll: q.write_ptr,
                doorbell_off: 0x2e,
                pipe_priority: 2,
                quantum: 0x111,
                eop_base: q.eop_ring_buffer_address,
                eop_size: 4096,
                ctx_save_base: q.ctx_save_restore_area_address,
                ctx_save_size: q.ctx_save_restore_area_size,
                ctl_stack_size: q.ctl_stack_size,
                vmid: 0,
                pq_rptr: 0,
            },
            "{gfx:?}"
        );
        // A PM4 queue of another size, and the read pointer a CP saved.
        let pm4 = QueueProps { format: QueueFormat::Pm4, queue_size: 1 << 20, priority: 0, ..q };
        update_compute_mqd(&mut mqd, &d, &pm4, None);
        // update_mqd does not clear the AQL control init_mqd set: a new
        // MQD does.
        init_compute_mqd(&mut mqd, &d, 0, &pm4);
        save_compute_rptr(gen, mqd.as_bytes_mut(), 0x1234).unwrap();
        let c = decode_compute(gen, mqd.as_bytes()).unwrap();
        assert_eq!((c.aql, c.ring_size, c.pipe_priority, c.pq_rptr), (false, 1 << 20, 0, 0x1234), "{gfx:?}");
        mqd.set_pq_rptr(0);
        assert_eq!(decode_compute(gen, mqd.as_bytes()).unwrap().pq_rptr, 0);
    }
}

#[test]
fn sdma_mqd_round_trips_per_generation() {
    let q = QueueProps { sdma_engine_id: 1, sdma_queue_id: 5, doorbell_off: 0x1e0, queue_size: 1 << 16, ..aql_queue() };
    for gfx in [GfxVersion::GFX90A, GfxVersion::GFX1030, GfxVersion::GFX1100] {
        let gen = MqdGen::of(gfx).unwrap();
        let mut mqd = SdmaMqd::zeroed(gfx).unwrap();
        init_sdma_mqd(&mut mqd, &dev(gfx), &q);
        assert_eq!(mqd.as_bytes().len(), gen.sdma_size());
        let s = decode_sdma(gen, mqd.as_bytes()).unwrap();
        assert_eq!(
            s,
            SdmaQueue {
                ring_base: q.queue_address,
                ring_size: 1 << 16,
                rptr_report: q.read_ptr,
                // Only GFX11's MQD manager programs the poll address.
                wptr_poll: if gen == MqdGen::V11 { q.write_ptr } else { 0 },
                doorbell_off: 0x1e0,
                engine: 1,
                queue: 5,
                rb_rptr: 0,
            },
            "{gfx:?}"
        );
        save_sdma_rptr(gen, mqd.as_bytes_mut(), 0x1_0000_0040).unwrap();
        assert_eq!(decode_sdma(gen, mqd.as_bytes()).unwrap().rb_rptr, 0x1_0000_0040);
        mqd.set_rb_rptr(8);
        assert_eq!(decode_sdma(gen, mqd.as_bytes()).unwrap().rb_rptr, 8);
    }
}

#[test]
fn inconsistent_mqds_are_refused() {
    let d = dev(GfxVersion::GFX1030);
    let gen = MqdGen::V10;
    let mut mqd = ComputeMqd::zeroed(d.gfx).unwrap();
    init_compute_mqd(&mut mqd, &d, 0, &aql_queue());
    let good = mqd;
    // Every compute MQD is 512 dwords (so the size cannot tell the
    // generations apart), an SDMA MQD 128 (v10: 130): a short buffer, an SDMA MQD
    // as a compute one.
    assert_eq!([MqdGen::V9, MqdGen::V10, MqdGen::V11].map(MqdGen::compute_size), [2048; 3]);
    assert_eq!([MqdGen::V9, MqdGen::V10, MqdGen::V11].map(MqdGen::sdma_size), [512, 520, 512]);
    assert_eq!(decode_compute(gen, &good.as_bytes()[..64]), Err(MqdError::Size));
    assert_eq!(decode_sdma(gen, good.as_bytes()), Err(MqdError::Size));
    assert_eq!(save_compute_rptr(gen, &mut mqd.as_bytes_mut()[..512], 1), Err(MqdError::Size));
    // A zeroed MQD has no header.
    let zero = ComputeMqd::zeroed(d.gfx).unwrap();
    assert_eq!(decode_compute(gen, zero.as_bytes()), Err(MqdError::Header));
    let ComputeMqd::V10(m) = &mut mqd else { panic!() };
    m.cp_hqd_pipe_priority = 3;
    assert_eq!(decode_compute(gen, mqd.as_bytes()), Err(MqdError::Priority));
    mqd = good;
    let ComputeMqd::V10(m) = &mut mqd else { panic!() };
    m.cp_hqd_pq_control |= gc10::CP_HQD_PQ_CONTROL__QUEUE_SIZE_MASK;
    assert_eq!(decode_compute(gen, mqd.as_bytes()), Err(MqdError::Ring));
    mqd = good;
    let ComputeMqd::V10(m) = &mut mqd else { panic!() };
    (m.cp_hqd_pq_base_lo, m.cp_hqd_pq_base_hi) = (0, 0);
    assert_eq!(decode_compute(gen, mqd.as_bytes()), Err(MqdError::Ring));
    mqd = good;
    let ComputeMqd::V10(m) = &mut mqd else { panic!() };
    (m.cp_hqd_pq_wptr_poll_addr_lo, m.cp_hqd_pq_wptr_poll_addr_hi) = (0, 0);
    assert_eq!(decode_compute(gen, mqd.as_bytes()), Err(MqdError::Pointers));

    let mut s = SdmaMqd::zeroed(d.gfx).unwrap();
    assert_eq!(decode_sdma(gen, s.as_bytes()), Err(MqdError::Ring));
    init_sdma_mqd(&mut s, &d, &QueueProps { read_ptr: 0, ..aql_queue() });
    assert_eq!(decode_sdma(gen, s.as_bytes()), Err(MqdError::Pointers));
}

// hqd_dump / hqd_sdma_dump register images and seq_reg_dump.

extern crate std;
use std::{format, string::String, vec::Vec};

/// Upstream's `seq_reg_dump`, transcribed line by line from
/// `kfd_device_queue_manager.c` (C's `count` and `"%s    %08x: %08x"`,
/// and its unsigned wrap-around of `offset + 4`).
fn upstream_seq_reg_dump(dump: &[[u32; 2]]) -> String {
    let mut m = String::new();
    let mut count = 0;
    for i in 0..dump.len() {
        if count == 0 || dump[i - 1][0].wrapping_add(4) != dump[i][0] {
            m += &format!("{}    {:08x}: {:08x}", if i != 0 { "\n" } else { "" }, dump[i][0], dump[i][1]);
            count = 7;
        } else {
            m += &format!(" {:08x}", dump[i][1]);
            count -= 1;
        }
    }
    m + "\n"
}

fn reg_dump(dump: &[[u32; 2]]) -> String {
    let mut s = String::new();
    seq_reg_dump(&mut s, dump).unwrap();
    s
}

#[test]
fn seq_reg_dump_rows_of_eight_and_gaps() {
    assert_eq!(reg_dump(&[]), "\n");
    let one = [[0x48e4, 0xdead_beef]];
    assert_eq!(reg_dump(&one), "    000048e4: deadbeef\n");
    // 10 contiguous registers: a row of 8, then a row of 2 starting at
    // the ninth register's offset.
    let ten: Vec<[u32; 2]> = (0..10).map(|i| [0x100 + 4 * i, i]).collect();
    assert_eq!(
        reg_dump(&ten),
        "    00000100: 00000000 00000001 00000002 00000003 00000004 00000005 00000006 00000007\n    00000120: 00000008 00000009\n"
    );
    // A gap starts a new row.
    let gap = [[0x10, 1], [0x14, 2], [0x40, 3]];
    assert_eq!(reg_dump(&gap), "    00000010: 00000001 00000002\n    00000040: 00000003\n");
    assert_eq!(reg_dump(&gap), upstream_seq_reg_dump(&gap));
    assert_eq!(reg_dump(&ten), upstream_seq_reg_dump(&ten));
}

/// The hand-formatted rows against upstream's printf formats on dumps
/// with every hex digit in every position, long runs (rows of 8 and a
/// remainder) and gaps, from a fixed xorshift sequence.
#[test]
fn seq_reg_dump_matches_upstream_on_random_dumps() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..500 {
        let n = (next() % 70) as usize;
        let mut off = (next() as u32) & !3;
        let mut dump = Vec::new();
        for _ in 0..n {
            let v = next();
            dump.push([off, v as u32]);
            // Mostly contiguous, sometimes a gap (or a wrap past u32::MAX).
            off = off.wrapping_add(if v >> 60 == 0 { 4 * ((v >> 32) as u32 & 0xff) } else { 4 });
        }
        assert_eq!(reg_dump(&dump), upstream_seq_reg_dump(&dump));
    }
    for v in [0, u32::MAX, 0x0123_4567, 0x89ab_cdef, 0xdead_beef] {
        assert_eq!(reg_dump(&[[v & !3, v], [(v & !3).wrapping_add(4), !v]]), upstream_seq_reg_dump(&[[v & !3, v], [(v & !3).wrapping_add(4), !v]]));
    }
}

#[test]
fn seq_reg_dump_matches_upstream_on_every_dump() {
    for regs in [HqdRegs::Gfx9, HqdRegs::Gfx10_3, HqdRegs::Gfx11] {
        let mut out = [[0u32; 2]; HQD_DUMP_MAX_REGS];
        let n = compute_hqd_dump(regs, None, ComputeLive::default(), &mut out).unwrap();
        assert_eq!(reg_dump(&out[..n]), upstream_seq_reg_dump(&out[..n]));
        for (e, q) in [(0, 0), (1, 1), (0, 7)] {
            let n = sdma_hqd_dump(regs, e, q, None, SdmaLive::default(), &mut out).unwrap();
            assert_eq!(reg_dump(&out[..n]), upstream_seq_reg_dump(&out[..n]));
        }
    }
}

#[test]
fn hqd_dump_register_counts_are_upstreams() {
    // HQD_N_REGS of kgd_gfx_v9_hqd_dump, hqd_dump_v10_3, hqd_dump_v11: 56;
    // of kgd_arcturus_hqd_sdma_dump (19+6+7+10), hqd_sdma_dump_v10_3
    // (19+6+7+12), hqd_sdma_dump_v11 (7+11+1+12+12).
    for regs in [HqdRegs::Gfx9, HqdRegs::Gfx10_3, HqdRegs::Gfx11] {
        assert_eq!(regs.compute_regs(), 56, "{regs:?}");
    }
    assert_eq!(HqdRegs::Gfx9.sdma_regs(), 19 + 6 + 7 + 10);
    assert_eq!(HqdRegs::Gfx10_3.sdma_regs(), 19 + 6 + 7 + 12);
    assert_eq!(HqdRegs::Gfx11.sdma_regs(), 7 + 11 + 1 + 12 + 12);
    assert_eq!(HqdRegs::of(GfxVersion::GFX90A), Some(HqdRegs::Gfx9));
    assert_eq!(HqdRegs::of(GfxVersion::GFX1030), Some(HqdRegs::Gfx10_3));
    assert_eq!(HqdRegs::of(GfxVersion::GFX1100), Some(HqdRegs::Gfx11));
}

#[test]
fn compute_hqd_dump_is_the_mqds_register_image() {
    for gfx in [GfxVersion::GFX90A, GfxVersion::GFX1030, GfxVersion::GFX1100] {
        let regs = HqdRegs::of(gfx).unwrap();
        let mut mqd = ComputeMqd::zeroed(gfx).unwrap();
        init_compute_mqd(&mut mqd, &dev(gfx), 0x1_2345_6000, &aql_queue());
        let bytes = mqd.as_bytes();
        let live = ComputeLive { active: true, rptr_dwords: 0x40, wptr_dwords: 0x1_0000_0080 };
        let mut out = [[0u32; 2]; HQD_DUMP_MAX_REGS];
        let n = compute_hqd_dump(regs, Some(bytes), live, &mut out).unwrap();
        let (first, last) = regs.compute_range();
        assert_eq!(out[0][0], first << 2);
        assert_eq!(out[n - 1][0], last << 2);
        // CP_HQD_PQ_BASE (register 8 of the range, after MQD_BASE_ADDR,
        // _HI, ACTIVE, VMID, PERSISTENT_STATE, PIPE_PRIORITY,
        // QUEUE_PRIORITY, QUANTUM) is the ring >> 8.
        let ring = aql_queue().queue_address;
        assert_eq!(out[8][1], (ring >> 8) as u32, "{gfx:?}");
        assert_eq!(out[9][1], (ring >> 40) as u32, "{gfx:?}");
        // The live values: ACTIVE, PQ_RPTR (after PQ_BASE, _HI), and the
        // last two registers, PQ_WPTR_LO / _HI.
        assert_eq!(out[2][1], 1);
        assert_eq!(out[10][1], 0x40);
        // CP_HQD_PQ_DOORBELL_CONTROL is in the range, and its
        // DOORBELL_OFFSET is the MQD's doorbell (the queue's BAR index).
        let db = out[..n].iter().find(|r| r[0] == regs.doorbell_control() << 2).unwrap();
        assert_eq!(regs.doorbell_offset(db[1]), aql_queue().doorbell_off, "{gfx:?}");
        assert_eq!(decode_compute(regs.mqd_gen(), bytes).unwrap().doorbell_off, aql_queue().doorbell_off);
        assert_eq!(out[n - 2][1], 0x80);
        assert_eq!(out[n - 1][1], 1);
        // An empty HQD reads 0.
        let n = compute_hqd_dump(regs, None, live, &mut out).unwrap();
        assert!(out[..n].iter().all(|r| r[1] == 0));
        // Wrong MQD size, short buffer.
        assert_eq!(compute_hqd_dump(regs, Some(&bytes[4..]), live, &mut out), Err(MqdError::Size));
        assert_eq!(compute_hqd_dump(regs, None, live, &mut out[..10]), Err(MqdError::Size));
    }
}

#[test]
fn sdma_hqd_dump_is_the_mqds_register_image() {
    for gfx in [GfxVersion::GFX90A, GfxVersion::GFX1030, GfxVersion::GFX1100] {
        let regs = HqdRegs::of(gfx).unwrap();
        let q = QueueProps { format: QueueFormat::Pm4, queue_address: 0x7f00_4444_0000, queue_size: 4096, ..aql_queue() };
        let mut mqd = SdmaMqd::zeroed(gfx).unwrap();
        init_sdma_mqd(&mut mqd, &dev(gfx), &q);
        let bytes = mqd.as_bytes();
        let live = SdmaLive { rptr: 0x1_0000_0100, wptr: 0x200 };
        let mut out = [[0u32; 2]; HQD_DUMP_MAX_REGS];
        let n = sdma_hqd_dump(regs, 0, 0, Some(bytes), live, &mut out).unwrap();
        // RB_CNTL, RB_BASE (ring >> 8), RB_BASE_HI, RB_RPTR, _HI, RB_WPTR, _HI.
        assert_eq!(out[0][0], regs.sdma_ranges()[0].0 << 2);
        assert_eq!(out[1][1], (q.queue_address >> 8) as u32, "{gfx:?}");
        assert_eq!(out[3][1], 0x100);
        assert_eq!(out[4][1], 1);
        assert_eq!(out[5][1], 0x200);
        assert_eq!(out[6][1], 0);
        // The DOORBELL_OFFSET register is where the MQD's
        // sdmax_rlcx_doorbell_offset is (the MQD lists the registers in the
        // dump's order) and holds its value.
        let (at, want, reg) = match mqd {
            SdmaMqd::V9(m) => (core::mem::offset_of!(v9_sdma_mqd, sdmax_rlcx_doorbell_offset), m.sdmax_rlcx_doorbell_offset, sdma4_2_2_off::mmSDMA0_RLC0_DOORBELL_OFFSET),
            SdmaMqd::V10(m) => (core::mem::offset_of!(v10_sdma_mqd, sdmax_rlcx_doorbell_offset), m.sdmax_rlcx_doorbell_offset, gc10_3_off::mmSDMA0_RLC0_DOORBELL_OFFSET),
            SdmaMqd::V11(m) => (core::mem::offset_of!(v11_sdma_mqd, sdmax_rlcx_doorbell_offset), m.sdmax_rlcx_doorbell_offset, gc11_off::regSDMA0_QUEUE0_DOORBELL_OFFSET),
        };
        assert_ne!(want, 0);
        assert_eq!(out[at / 4], [reg << 2, want], "{gfx:?}");
        // The MIDCMD registers read 0.
        let (a, b) = *regs.sdma_ranges().last().unwrap();
        assert!(out[n - (b - a + 1) as usize..n].iter().all(|r| r[1] == 0));
        // Queue 1 of engine 1 is somewhere else (GC 9.4.2's engines share
        // in-segment offsets: only the queue moves it).
        let mut other = [[0u32; 2]; HQD_DUMP_MAX_REGS];
        sdma_hqd_dump(regs, 1, 1, None, live, &mut other).unwrap();
        assert_ne!(other[0][0], out[0][0]);
        assert_eq!(sdma_hqd_dump(regs, 9, 0, None, live, &mut other), Err(MqdError::Range));
    }
}
