// SPDX-License-Identifier: GPL-2.0 OR MIT
//! IH entries: encode/decode round trips, and entries derived by hand from
//! the `soc15_int.h` macros and the `kfd_int_process_v*.c` payload fields.

use super::*;

fn entry(dw: [u32; 8]) -> IhEntry {
    IhEntry::decode(&dw)
}

#[test]
fn round_trip() {
    // A small LCG over every field's range.
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 16) as u32
    };
    for _ in 0..1000 {
        let e = IhEntry {
            client_id: next() as u8,
            source_id: next() as u8,
            ring_id: next() as u8,
            vmid: next() as u8 & 0xf,
            vmid_src: next() & 1 != 0,
            timestamp: u64::from(next()) | u64::from(next() & 0xffff) << 32,
            timestamp_src: next() & 1 != 0,
            pasid: next() as u16,
            node_id: next() as u8,
            context_id: [next(), next(), next(), next()],
        };
        assert_eq!(IhEntry::decode(&e.encode()), e);
        assert_eq!(IhEntry::from_le_bytes(&e.to_le_bytes()), e);
    }
}

#[test]
fn end_of_pipe_byte_exact() {
    // dw0 = client GRBM_CP 0x14 | source CP_END_OF_PIPE 181 (0xb5) << 8 |
    // ring 0 << 16 | vmid 8 << 24; dw3 = pasid 0x8001; dw4 = context id.
    let e = IhEntry {
        client_id: 0x14,
        source_id: 181,
        vmid: 8,
        pasid: 0x8001,
        context_id: [0x42, 0, 0, 0],
        ..IhEntry::default()
    };
    assert_eq!(e.encode(), [0x0800_b514, 0, 0, 0x8001, 0x42, 0, 0, 0]);
    assert_eq!(e.to_le_bytes()[..4], [0x14, 0xb5, 0x00, 0x08]);
    for gfx in [GfxVersion::GFX90A, GfxVersion::GFX1030, GfxVersion::GFX1100] {
        assert_eq!(
            decode_kfd(gfx, &e),
            Some(KfdInterrupt::Signal { source: SignalSource::EndOfPipe, context_id: 0x42, valid_bits: 32 })
        );
    }
}

#[test]
fn timestamp_byte_exact() {
    // timestamp = dw1 | (dw2 & 0xffff) << 32, timestamp_src = dw2 bit 31.
    let e = entry([0, 0x89ab_cdef, 0x8000_4567, 0x0003_0000, 0, 0, 0, 0]);
    assert_eq!((e.timestamp, e.timestamp_src, e.node_id), (0x4567_89ab_cdef, true, 3));
}

#[test]
fn vm_fault_v9_byte_exact() {
    // dw0 = client VMC 18 (0x12) | source 0 | ring_id 0x28 (prot_valid bit 3,
    // prot_write bit 5) << 16 | vmid 9 << 24.  src_data[0] = page 31:0,
    // src_data[1] = RETRY 0x80 | WRITE 0x20 | page 35:32 = 3.
    let e = entry([0x0928_0012, 0, 0, 0x8001, 0x0001_2345, 0xa3, 0, 0]);
    let f = VmFault {
        vmid: 9,
        client_id: 0x12,
        page_addr: 0x3_0001_2345,
        prot_valid: true,
        prot_read: false,
        prot_write: true,
        retry: true,
        write: true,
        exec: false,
    };
    assert_eq!(decode_kfd(GfxVersion::GFX90A, &e), Some(KfdInterrupt::VmFault(f)));
    assert_eq!(f.address(), 0x3000_1234_5000);
    // UTCL2 poison (source 1) is not a fault.
    let p = entry([0x0928_0112, 0, 0, 0x8001, 0, 0, 0, 0]);
    assert_eq!(decode_kfd(GfxVersion::GFX90A, &p), Some(KfdInterrupt::Poison));
}

#[test]
fn vm_fault_v11_from_gfx_client() {
    // GC 11: SOC21 GFX client 0x0a with UTCL2_1_0__SRCID__FAULT (0) is a
    // fault; the same client with CP_END_OF_PIPE a signal.
    let e = entry([0x0110_000a, 0, 0, 0x8001, 0x10, 0x10, 0, 0]);
    let Some(KfdInterrupt::VmFault(f)) = decode_kfd(GfxVersion::GFX1100, &e) else { panic!("not a fault") };
    assert_eq!((f.vmid, f.prot_read, f.exec, f.page_addr), (1, true, true, 0x10));
    let eop = entry([0x0100_b50a, 0, 0, 0x8001, 7, 0, 0, 0]);
    assert!(matches!(decode_kfd(GfxVersion::GFX1100, &eop), Some(KfdInterrupt::Signal { context_id: 7, .. })));
}

#[test]
fn sq_debug_trap_v9_byte_exact() {
    // ctx0: ENCODING INST (1) << 26, PRIV bit 13, data 11:0 = 0xc05, i.e.
    // doorbell 5 (data 9:0) and trap code 3 (data 18:10).
    let e = entry([0x0800_ef14, 0, 0, 0x8001, 0x0400_2c05, 0, 0, 0]);
    assert_eq!(
        decode_kfd(GfxVersion::GFX90A, &e),
        Some(KfdInterrupt::SqDebugTrap { doorbell_id: 5, trap_code: 3, signal: (0xc05, 24) })
    );
    // The 24-bit data takes ctx0 31:28 as bits 15:12 and ctx1 7:0 as 23:16.
    let e = entry([0x0800_ef14, 0, 0, 0x8001, 0xa000_0001, 0x5c, 0, 0]);
    assert_eq!(
        decode_kfd(GfxVersion::GFX90A, &e),
        Some(KfdInterrupt::SqOther { encoding: SqEncoding::Auto, signal: (0x5c_a001, 24) })
    );
}

#[test]
fn sq_error_v10_and_v11() {
    // v10: ENCODING in ctx1 7:6 (ERROR = 2 -> 0x80), ERR_TYPE in ctx0 22:19
    // (MEMVIOL = 2 -> 0x10_0000); 23 signalled bits; no poison check.
    let e = entry([0x0800_ef14, 0, 0, 0x8001, 0x0010_0000, 0x80, 0, 0]);
    assert_eq!(
        decode_kfd(GfxVersion::GFX1030, &e),
        Some(KfdInterrupt::SqError { err_type: 2, poison: false, signal: (0x10_0000, 23) })
    );
    // v11: TYPE in ctx0 24:21; EDC_FED (3) is poison.
    let e = entry([0x0800_ef14, 0, 0, 0x8001, 3 << 21, 0x80, 0, 0]);
    assert_eq!(
        decode_kfd(GfxVersion::GFX1100, &e),
        Some(KfdInterrupt::SqError { err_type: 3, poison: true, signal: (3 << 21, 24) })
    );
}

#[test]
fn sdma_trap_by_generation() {
    // GFX9/10: client SDMA0 (8), source SDMA_TRAP 224 (0xe0).
    let e = entry([0x0000_e008, 0, 0, 0x8001, 0xf123_4567, 0, 0, 0]);
    let trap = KfdInterrupt::Signal { source: SignalSource::SdmaTrap, context_id: 0x123_4567, valid_bits: 28 };
    assert_eq!(decode_kfd(GfxVersion::GFX90A, &e), Some(trap));
    assert_eq!(decode_kfd(GfxVersion::GFX1030, &e), Some(trap));
    // GFX11: SDMA reports through GRBM_CP (0x14) with SOC21_INTSRC_SDMA_TRAP 49 (0x31).
    assert_eq!(decode_kfd(GfxVersion::GFX1100, &e), None);
    let e = entry([0x0000_3114, 0, 0, 0x8001, 0xf123_4567, 0, 0, 0]);
    assert_eq!(decode_kfd(GfxVersion::GFX1100, &e), Some(trap));
    assert_eq!(IhGen::of(GfxVersion::GFX942), IhGen::V9);
}

// The entries the virtual GPU raises (`vgpu/ih.rs`: `encode_kfd` with the
// engines' parameters), decoded as rkfd decodes them (`decode_kfd`, then
// `queue_exception`), family by family.

const FAMILIES: [GfxVersion; 4] = [GfxVersion::GFX90A, GfxVersion::GFX1030, GfxVersion::GFX1100, GfxVersion::GFX1103];

#[test]
fn exception_codes_are_kfd_ioctl_h() {
    use kfd_uapi as u;
    assert_eq!(ec::QUEUE_WAVE_MEMORY_VIOLATION, u::EC_QUEUE_WAVE_MEMORY_VIOLATION);
    assert_eq!(ec::QUEUE_PACKET_DISPATCH_DIM_INVALID, u::EC_QUEUE_PACKET_DISPATCH_DIM_INVALID);
    assert_eq!(ec::QUEUE_PACKET_RESERVED, u::EC_QUEUE_PACKET_RESERVED);
    assert_eq!(ec::QUEUE_PACKET_UNSUPPORTED, u::EC_QUEUE_PACKET_UNSUPPORTED);
    assert_eq!(ec::QUEUE_PACKET_VENDOR_UNSUPPORTED, u::EC_QUEUE_PACKET_VENDOR_UNSUPPORTED);
    // The packet codes are KFD_EC_MASK_PACKET.
    let packet = (1..=32).filter(|&c| ec::is_packet(c)).fold(0, |m, c| m | ec::mask(c));
    assert_eq!(packet, u::KFD_EC_MASK_PACKET);
    assert_eq!((ec::mask(0), ec::mask(33)), (0, 0));
}

#[test]
fn end_of_pipe_per_family() {
    for gfx in FAMILIES {
        for id in [0, 1, 5, 4095, 0xffff_ffff] {
            let e = encode_kfd(gfx, 0x8001, Raise::EndOfPipe { event_id: id });
            // GRBM_CP (20) on SOC15 and SOC21 alike, source 181.
            assert_eq!((e.client_id, e.source_id, e.pasid), (20, 181, 0x8001), "{gfx:?}");
            assert_eq!(
                decode_kfd(gfx, &IhEntry::decode(&e.encode())),
                Some(KfdInterrupt::Signal { source: SignalSource::EndOfPipe, context_id: id, valid_bits: 32 })
            );
        }
    }
}

#[test]
fn sdma_trap_per_family_and_engine() {
    for gfx in FAMILIES {
        for engine in 0..8 {
            let e = encode_kfd(gfx, 7, Raise::SdmaTrap { engine, event_id: 0x1234 });
            let want = match IhGen::of(gfx) {
                // sdma_v6_0.c: SOC21_IH_CLIENTID_GFX, GFX_11_0_0__SRCID__SDMA_TRAP (49).
                IhGen::V11 => (10, 49),
                // sdma_v5_2_seq_to_irq_id: SDMA0, SDMA1, SDMA2 (1), SDMA3_Sienna_Cichlid (5).
                IhGen::V10 if engine < 4 => ([8, 9, 1, 5][engine as usize], 224),
                // sdma_v4_0_seq_to_irq_id.
                _ => ([8, 9, 1, 4, 5, 17, 19, 24][engine as usize], 224),
            };
            assert_eq!((e.client_id, e.source_id), want, "{gfx:?} engine {engine}");
            if IhGen::of(gfx) == IhGen::V10 && engine >= 4 {
                // Navi 2x has four SDMA engines; the others' ids overlap.
                continue;
            }
            assert_eq!(
                decode_kfd(gfx, &e),
                Some(KfdInterrupt::Signal { source: SignalSource::SdmaTrap, context_id: 0x1234, valid_bits: 28 }),
                "{gfx:?} engine {engine}"
            );
        }
    }
}

#[test]
fn packet_errors_are_cp_bad_opcode() {
    for gfx in FAMILIES {
        for code in [ec::QUEUE_PACKET_RESERVED, ec::QUEUE_PACKET_UNSUPPORTED] {
            for doorbell_id in [0, 3, 0x200, 0x3ff] {
                let e = encode_kfd(gfx, 0x8001, Raise::QueueException { doorbell_id, ecode: code });
                // GRBM_CP, SOC15_INTSRC_CP_BAD_OPCODE; ctx0 = ecode << 10 | doorbell.
                assert_eq!((e.client_id, e.source_id), (20, 183));
                assert_eq!(e.context_id, [code << 10 | doorbell_id, 0, 0, 0]);
                let d = decode_kfd(gfx, &e).expect("decoded");
                assert_eq!(d, KfdInterrupt::CpBadOpcode { doorbell_id, ecode: code }, "{gfx:?}");
                assert_eq!(d.queue_exception(), Some((doorbell_id, code)));
            }
        }
    }
}

#[test]
fn memory_violations_are_sq_debug_traps() {
    let mv = ec::QUEUE_WAVE_MEMORY_VIOLATION;
    for gfx in FAMILIES {
        for doorbell_id in [0, 3, 0x200, 0x3ff] {
            let e = encode_kfd(gfx, 0x8001, Raise::QueueException { doorbell_id, ecode: mv });
            assert_eq!(e.source_id, 239, "SOC15_INTSRC_SQ_INTERRUPT_MSG");
            // SE0SH (SOC15) and GFX (SOC21) are both client 10.
            assert_eq!(e.client_id, 10);
            let d = decode_kfd(gfx, &e).expect("decoded");
            let KfdInterrupt::SqDebugTrap { doorbell_id: db, trap_code, .. } = d else { panic!("{gfx:?}: {d:?}") };
            assert_eq!((db, trap_code), (doorbell_id, ec::mask(mv)), "{gfx:?}");
            assert_eq!(d.queue_exception(), Some((doorbell_id, mv)));
        }
    }
    // Byte exact on GFX9: data = doorbell 5 | mask 0x10 << 10 = 0x4005, so
    // ctx0 = 0x005 | PRIV 0x2000 | INST 1 << 26 | data 15:12 (4) << 28.
    let e = encode_kfd(GfxVersion::GFX90A, 1, Raise::QueueException { doorbell_id: 5, ecode: mv });
    assert_eq!(e.context_id, [0x4400_2005, 0, 0, 0]);
    // GFX10.3: PRIV is ctx0 bit 24, ENCODING ctx1 7:6.
    let e = encode_kfd(GfxVersion::GFX1030, 1, Raise::QueueException { doorbell_id: 5, ecode: mv });
    assert_eq!(e.context_id, [0x0100_4005, 0x40, 0, 0]);
    // GFX11: PRIV is ctx0 bit 26.
    let e = encode_kfd(GfxVersion::GFX1103, 1, Raise::QueueException { doorbell_id: 5, ecode: mv });
    assert_eq!(e.context_id, [0x0400_4005, 0x40, 0, 0]);
}

#[test]
fn vm_faults_per_family() {
    for gfx in FAMILIES {
        for (addr, write, exec, retry) in
            [(0x90_0000u64, true, false, false), (0x7fff_ffff_f123, false, true, true), (0x1000, false, false, false)]
        {
            let e = encode_kfd(gfx, 0x8001, Raise::VmFault { vmid: 8, addr, write, exec, retry });
            // gmc_v9_0.c / gmc_v10_0.c: UTCL2 (27); gmc_v11_0.c: SOC21 GFX (10); source 0.
            let client = if IhGen::of(gfx) == IhGen::V11 { 10 } else { 27 };
            assert_eq!((e.client_id, e.source_id, e.vmid, e.pasid), (client, 0, 8, 0x8001));
            let Some(KfdInterrupt::VmFault(f)) = decode_kfd(gfx, &IhEntry::from_le_bytes(&e.to_le_bytes())) else {
                panic!("{gfx:?}: not a fault")
            };
            assert_eq!((f.address(), f.write, f.exec, f.retry), (addr & !0xfff, write, exec, retry), "{gfx:?}");
            assert_eq!((f.vmid, f.prot_valid, f.prot_read, f.prot_write), (8, false, false, false));
        }
    }
}

#[test]
fn other_interrupts_are_no_queue_exception() {
    let sig = KfdInterrupt::Signal { source: SignalSource::EndOfPipe, context_id: 1, valid_bits: 32 };
    assert_eq!(sig.queue_exception(), None);
    // A CP bad opcode of a wave class is not acted on (KFD_DBG_EC_TYPE_IS_PACKET).
    assert_eq!(KfdInterrupt::CpBadOpcode { doorbell_id: 1, ecode: 5 }.queue_exception(), None);
    // A trap code of several exceptions, or none, names no one exception.
    let trap = |trap_code| KfdInterrupt::SqDebugTrap { doorbell_id: 1, trap_code, signal: (0, 24) };
    assert_eq!(trap(0x30).queue_exception(), None);
    assert_eq!(trap(0).queue_exception(), None);
    assert_eq!(trap(0x2).queue_exception(), Some((1, 2)));
}

#[test]
fn garbage_never_panics() {
    // Whatever a ring holds, decoding returns (upstream ignores what it
    // does not know); `queue_exception` too.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u32
    };
    for gfx in FAMILIES {
        for i in 0..20_000u32 {
            let mut dw = [0u32; 8];
            for d in dw.iter_mut() {
                *d = next();
            }
            // Half of them with a source and client amdkfd looks at.
            if i % 2 == 0 {
                let src = [181u32, 183, 239, 224, 220, 49, 62, 0, 1][(i as usize / 2) % 9];
                dw[0] = (dw[0] & !0xffff) | src << 8 | (next() % 32);
            }
            if let Some(d) = decode_kfd(gfx, &IhEntry::decode(&dw)) {
                let _ = d.queue_exception();
            }
        }
    }
}
