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
