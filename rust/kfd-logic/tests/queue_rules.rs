// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Host tests of the queue rules against upstream amdkfd's behaviour.

use kfd_logic::gfx::GfxVersion;
use kfd_logic::queue_rules::*;

const LIMIT: u64 = (1 << 47) - 4096;

fn aql() -> CreateArgs {
    CreateArgs {
        ring_base: 0x7f00_0000_0000,
        wptr: 0x7f00_1000_0000,
        rptr: 0x7f00_1000_0008,
        ring_size: 4096,
        queue_type: IOC_QUEUE_TYPE_COMPUTE_AQL,
        percentage: 100,
        priority: 7,
        eop_address: 0x7f00_2000_0000,
        eop_size: 4096,
        ctx_save_address: 0x7f00_3000_0000,
        ctx_save_size: 0x255000,
        ctl_stack_size: 0x1000,
        ..Default::default()
    }
}

fn gfx90a() -> DeviceLimits {
    DeviceLimits {
        gfx: GfxVersion::GFX90A,
        cwsr_size: 0x255000,
        ctl_stack_size: 0x1000,
        num_sdma_engines: 2,
        num_sdma_xgmi_engines: 3,
        num_sdma_queues_per_engine: 8,
    }
}

#[test]
fn percentage_and_priority_limits() {
    let mut a = aql();
    a.percentage = 101;
    assert_eq!(properties_from_user(&a, LIMIT), Err(Errno::Inval));
    // Bits 8-15 are pm4_target_xcc, not percentage.
    a.percentage = 0x0364;
    let p = properties_from_user(&a, LIMIT).unwrap();
    assert_eq!((p.percentage, p.pm4_target_xcc), (100, 3));
    a.priority = 16;
    assert_eq!(properties_from_user(&a, LIMIT), Err(Errno::Inval));
    a.priority = 15;
    assert!(properties_from_user(&a, LIMIT).is_ok());
}

#[test]
fn ring_size_power_of_two_or_zero_clamped() {
    let mut a = aql();
    a.ring_size = 3000;
    assert_eq!(properties_from_user(&a, LIMIT), Err(Errno::Inval));
    a.ring_size = 0;
    assert_eq!(properties_from_user(&a, LIMIT).unwrap().ring_size, 1024);
    a.ring_size = 256;
    assert_eq!(properties_from_user(&a, LIMIT).unwrap().ring_size, 1024);
    a.ring_size = 1 << 20;
    assert_eq!(properties_from_user(&a, LIMIT).unwrap().ring_size, 1 << 20);
}

#[test]
fn addresses_must_be_user_addresses() {
    for f in [
        |a: &mut CreateArgs| a.ring_base = 0xffff_8000_0000_0000,
        |a: &mut CreateArgs| a.rptr = 0xffff_8000_0000_0000,
        |a: &mut CreateArgs| a.wptr = u64::MAX - 1,
        |a: &mut CreateArgs| a.eop_address = LIMIT,
        |a: &mut CreateArgs| a.ctx_save_address = LIMIT - 2,
    ] {
        let mut a = aql();
        f(&mut a);
        assert_eq!(properties_from_user(&a, LIMIT), Err(Errno::Fault));
    }
    // NULL ring, EOP and save area pass this step (checked later).
    let mut a = aql();
    a.ring_base = 0;
    a.eop_address = 0;
    a.ctx_save_address = 0;
    assert!(properties_from_user(&a, LIMIT).is_ok());
}

#[test]
fn checks_run_in_upstream_order() {
    // Percentage is checked before the pointers, the type last.
    let mut a = aql();
    a.percentage = 200;
    a.rptr = u64::MAX;
    a.queue_type = 9;
    assert_eq!(properties_from_user(&a, LIMIT), Err(Errno::Inval));
    a.percentage = 0;
    assert_eq!(properties_from_user(&a, LIMIT), Err(Errno::Fault));
    a.rptr = 0x1000;
    assert_eq!(properties_from_user(&a, LIMIT), Err(Errno::NotSupp));
}

#[test]
fn types_map_as_upstream() {
    assert_eq!(queue_type(0), Ok((QueueType::Compute, false)));
    assert_eq!(queue_type(2), Ok((QueueType::Compute, true)));
    assert_eq!(queue_type(1), Ok((QueueType::Sdma, false)));
    assert_eq!(queue_type(3), Ok((QueueType::SdmaXgmi, false)));
    assert_eq!(queue_type(4), Ok((QueueType::SdmaByEngId, false)));
    assert_eq!(queue_type(5), Err(Errno::NotSupp));
    // Metadata ring only for AQL.
    let mut a = aql();
    a.metadata_ring_size = 4096;
    assert_eq!(properties_from_user(&a, LIMIT).unwrap().metadata_ring_size, 4096);
    a.queue_type = IOC_QUEUE_TYPE_COMPUTE;
    assert_eq!(properties_from_user(&a, LIMIT).unwrap().metadata_ring_size, 0);
    a.metadata_ring_size = 3;
    assert_eq!(properties_from_user(&a, LIMIT), Err(Errno::Inval));
}

#[test]
fn buffers_of_compute_and_sdma_queues() {
    let d = gfx90a();
    let p = properties_from_user(&aql(), LIMIT).unwrap();
    let mut out = [None; 5];
    required_buffers(&p, &d, &mut out).unwrap();
    assert!(out.iter().all(|b| b.is_some()));
    assert_eq!(out[2].unwrap().size, 4096);
    assert_eq!(out[4].unwrap().size, 0x255000);

    let mut a = aql();
    a.ctl_stack_size = 0x2000;
    let p = properties_from_user(&a, LIMIT).unwrap();
    assert_eq!(required_buffers(&p, &d, &mut out), Err(Errno::Inval));
    let mut a = aql();
    a.ctx_save_size = 0x254000;
    let p = properties_from_user(&a, LIMIT).unwrap();
    assert_eq!(required_buffers(&p, &d, &mut out), Err(Errno::Inval));
    let mut a = aql();
    a.eop_size = 2048;
    let p = properties_from_user(&a, LIMIT).unwrap();
    assert_eq!(required_buffers(&p, &d, &mut out), Err(Errno::Inval));

    // SDMA: only pointers and ring; sizes of CWSR fields are ignored.
    let mut a = aql();
    a.queue_type = IOC_QUEUE_TYPE_SDMA;
    a.ctl_stack_size = 77;
    let p = properties_from_user(&a, LIMIT).unwrap();
    required_buffers(&p, &d, &mut out).unwrap();
    assert_eq!(out.iter().filter(|b| b.is_some()).count(), 3);
}

#[test]
fn inside_checks_bounds_without_overflow() {
    assert!(inside(0x1000, 0x1000, 0x1000, 0x1000));
    assert!(inside(0x1800, 8, 0x1000, 0x1000));
    assert!(!inside(0x1ffc, 8, 0x1000, 0x1000));
    assert!(!inside(0xfff, 8, 0x1000, 0x1000));
    assert!(!inside(u64::MAX - 4, 8, 0, u64::MAX));
}

#[test]
fn queue_ids_lowest_free_up_to_1024() {
    let mut s = QueueSlots::default();
    assert_eq!(s.alloc(), Ok(0));
    assert_eq!(s.alloc(), Ok(1));
    s.free(0);
    assert_eq!(s.alloc(), Ok(0));
    for i in 2..1024 {
        assert_eq!(s.alloc(), Ok(i));
    }
    assert_eq!(s.alloc(), Err(Errno::NoMem));
}

#[test]
fn cp_doorbells_skip_non_cp_ranges() {
    let d = gfx90a();
    let mut db = Doorbells::new(&d);
    let mut got = Vec::new();
    while let Ok(id) = db.alloc_cp() {
        got.push(id);
    }
    // 1024 minus the reserved 0x100..=0x18f and its mirror.
    assert_eq!(got.len(), 1024 - 2 * 0x90);
    assert!(got.iter().all(|&i| !(0x100..=0x18f).contains(&i) && !(0x300..=0x38f).contains(&i)));
    assert_eq!(got[0], 0);
    assert_eq!(got[0x100], 0x190);
    db.free_cp(5);
    assert_eq!(db.alloc_cp(), Ok(5));
    // Navi10 layout reserves one more (VPE).
    let mut n = d;
    n.gfx = GfxVersion::GFX1030;
    let db = Doorbells::new(&n);
    assert!(db.is_used(0x190) && db.is_used(0x390) && !db.is_used(0x191));
}

#[test]
fn doorbell_offsets_as_upstream() {
    let d = gfx90a();
    assert_eq!(sdma_doorbell(&d, 0, 0), 0x100);
    assert_eq!(sdma_doorbell(&d, 0, 1), 0x100 + 512);
    assert_eq!(sdma_doorbell(&d, 1, 2), 0x10a + 1);
    assert_eq!(doorbell_mmap_offset(0x1234, 3), (3u64 << 62) | (0x1234u64 << 46) | 24);
    // gpu_id is hashed to 16 bits.
    assert_eq!(mmap_gpu_id(0x1_0001), 1u64 << 46);
}

#[test]
fn sdma_queues_device_wide() {
    let d = gfx90a();
    let mut q = SdmaQueues::default();
    let a = q.alloc(&d, QueueType::Sdma, 0).unwrap();
    assert_eq!((a.sdma_id, a.engine, a.queue), (0, 0, 0));
    let b = q.alloc(&d, QueueType::Sdma, 0).unwrap();
    assert_eq!((b.sdma_id, b.engine, b.queue), (1, 1, 0));
    let c = q.alloc(&d, QueueType::Sdma, 0).unwrap();
    assert_eq!((c.engine, c.queue), (0, 1));
    let x = q.alloc(&d, QueueType::SdmaXgmi, 0).unwrap();
    assert_eq!((x.queue_type, x.engine, x.queue), (QueueType::SdmaXgmi, 2, 0));
    // By engine id: engine 1 (PCIe), then engine 4 (third XGMI engine).
    let e = q.alloc(&d, QueueType::SdmaByEngId, 1).unwrap();
    assert_eq!((e.queue_type, e.engine, e.sdma_id), (QueueType::Sdma, 1, 3));
    let e = q.alloc(&d, QueueType::SdmaByEngId, 4).unwrap();
    assert_eq!((e.queue_type, e.engine, e.queue), (QueueType::SdmaXgmi, 4, 0));
    assert_eq!(q.alloc(&d, QueueType::SdmaByEngId, 5), Err(Errno::Inval));
    // Exhaust PCIe SDMA: 16 queues.
    let mut n = q.in_use();
    while q.alloc(&d, QueueType::Sdma, 0).is_ok() {
        n += 1;
    }
    assert_eq!(n - 2, 16);
    assert_eq!(q.alloc(&d, QueueType::Sdma, 0), Err(Errno::NoMem));
    q.free(&b);
    assert_eq!(q.alloc(&d, QueueType::Sdma, 0).unwrap().sdma_id, 1);
    // A device without XGMI engines has no XGMI queues.
    let mut none = d;
    none.num_sdma_xgmi_engines = 0;
    assert_eq!(SdmaQueues::default().alloc(&none, QueueType::SdmaXgmi, 0), Err(Errno::NoMem));
}

#[test]
fn limits_per_process() {
    assert_eq!(gfx90a().max_queues_per_process(), 127);
    let mut d = gfx90a();
    d.gfx = GfxVersion::GFX942;
    assert_eq!(d.max_queues_per_process(), 255);
    assert_eq!(gfx90a().max_sdma_engine_id(), Some(4));
    d.num_sdma_engines = 0;
    d.num_sdma_xgmi_engines = 0;
    assert_eq!(d.max_sdma_engine_id(), None);
}

#[test]
fn cu_mask_rules() {
    assert_eq!(cu_mask_words(0), Err(Errno::Inval));
    assert_eq!(cu_mask_words(33), Err(Errno::Inval));
    assert_eq!(cu_mask_words(64), Ok((64, 2)));
    assert_eq!(cu_mask_words(4096), Ok((1024, 32)));
    assert!(cu_mask_pairs_ok(GfxVersion::GFX90A, 32, &[0b0101]));
    assert!(!cu_mask_pairs_ok(GfxVersion::GFX1030, 32, &[0b0101]));
    assert!(cu_mask_pairs_ok(GfxVersion::GFX1030, 32, &[0b1111]));
}

#[test]
fn update_checks() {
    assert_eq!(check_update(0, 0, 100, 15, LIMIT), Ok(1024));
    assert_eq!(check_update(0, 100, 100, 15, LIMIT), Err(Errno::Inval));
    assert_eq!(check_update(0, 4096, 101, 15, LIMIT), Err(Errno::Inval));
    assert_eq!(check_update(u64::MAX, 4096, 1, 1, LIMIT), Err(Errno::Fault));
}

#[test]
fn queue_exceptions_map_to_queue_errors() {
    // EC_QUEUE_PACKET_RESERVED, _UNSUPPORTED, EC_QUEUE_WAVE_MEMORY_VIOLATION.
    assert_eq!(queue_error_of_exception(19), QUEUE_ERROR_INVALID_PACKET);
    assert_eq!(queue_error_of_exception(20), QUEUE_ERROR_UNSUPPORTED);
    assert_eq!(queue_error_of_exception(5), QUEUE_ERROR_VM_FAULT);
    // Other packet codes, and wave codes rkfd has no reason for.
    assert_eq!(queue_error_of_exception(16), QUEUE_ERROR_INVALID_PACKET);
    assert_eq!(queue_error_of_exception(4), QUEUE_ERROR_INVALID_PACKET);
}

#[test]
fn idle_wave_state_is_empty() {
    assert_eq!(idle_wave_state(0x1000), ([0x1000, 0, 0x1000, 0], 0, 0));
}

#[test]
fn hqd_slots_skip_the_drivers_reserved_slots() {
    // amdgpu's compute rings on pipes 0 and 1, queue 0 (bits 0 and 8 of
    // 4 pipes x 8): rkfd never gets them, the others round robin.
    let reserved = reserved_hqds([1 << 0 | 1 << 8, 0, 0, 0]);
    assert_eq!(reserved, 0x101);
    let mut h = HqdSlots::with_reserved(4, 8, reserved);
    let got: Vec<_> = (0..4).map(|_| h.alloc().unwrap()).map(|s| (s.pipe, s.queue)).collect();
    assert_eq!(got, [(0, 1), (1, 1), (2, 0), (3, 0)]);
    let mut n = 4;
    while h.alloc().is_ok() {
        n += 1;
    }
    assert_eq!(n, 30, "32 slots less the 2 reserved");
    // Freeing a reserved slot (never handed out) does not make it free.
    h.free(HqdSlot { pipe: 0, queue: 0 });
    assert_eq!(h.alloc(), Err(Errno::Busy));
    // The words: slot 32 * i + j is bit j of word i.
    assert_eq!(reserved_hqds([0, 1, 0, 0x8000_0000]), 1u128 << 32 | 1u128 << 127);
    // A reserved map names slots of the first 128 only; the rest stay free.
    let mut h = HqdSlots::with_reserved(2, 128, u128::MAX);
    assert_eq!(h.alloc(), Ok(HqdSlot { pipe: 1, queue: 0 }));
    assert_eq!(h.alloc(), Ok(HqdSlot { pipe: 1, queue: 1 }));
}

#[test]
fn hqd_slots_round_robin_over_pipes_then_busy() {
    let mut h = HqdSlots::new(4, 2);
    // allocate_hqd: one queue per pipe in turn, then the second queues.
    let got: Vec<_> = (0..8).map(|_| h.alloc().unwrap()).map(|s| (s.pipe, s.queue)).collect();
    assert_eq!(got, [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1), (2, 1), (3, 1)]);
    assert_eq!(h.alloc(), Err(Errno::Busy));
    assert_eq!(h.in_use(), 8);
    h.free(HqdSlot { pipe: 2, queue: 1 });
    // Out of range: ignored.
    h.free(HqdSlot { pipe: 9, queue: 0 });
    assert_eq!(h.alloc(), Ok(HqdSlot { pipe: 2, queue: 1 }));
    assert_eq!(h.alloc(), Err(Errno::Busy));
    // More slots than a 1024-bit map holds are capped; no pipes, none.
    assert_eq!(HqdSlots::new(4, 1000).queues_per_pipe(), 256);
    assert_eq!(HqdSlots::new(0, 8).alloc(), Err(Errno::Busy));
}

// Eviction (C: `q->properties.is_evicted`; the `qpd->evicted` count is
// amdgpu-hw's `dqm::Evictions`, tested there).

#[test]
fn an_evicted_queue_is_inactive_whatever_else_it_has() {
    let mut p = properties_from_user(&aql(), LIMIT).unwrap();
    assert!(!p.is_evicted, "a new queue of a running process is not evicted");
    assert!(p.is_active());
    p.is_evicted = true;
    assert!(!p.is_active(), "QUEUE_IS_ACTIVE needs !is_evicted");
    // UPDATE_QUEUE of an evicted queue starts from its properties: it
    // stays evicted, whatever ring and percentage it gets.
    let mut u = p;
    u.ring_base = 0x7f00_4000_0000;
    u.percentage = 50;
    assert!(u.is_evicted && !u.is_active());
    // Restored: active again only if it has a ring and a percentage.
    u.is_evicted = false;
    assert!(u.is_active());
    u.percentage = 0;
    assert!(!u.is_active());
}
