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
