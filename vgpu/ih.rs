// SPDX-License-Identifier: GPL-2.0

//! The interrupt-handler ring entries the virtual GPU writes for rkfd
//! (`kgd2kfd_interrupt`): what each engine raised ([`crate::engine::IhEntry`])
//! as the 32-byte SOC15 entry its family's hardware writes, made by the host
//! crate `rust/amdgpu-hw`'s encoder (`ih::encode_kfd`, compiled in here as
//! [`hw`]).
//!
//! What each engine event becomes (`include/rkfd/kgd_kfd_interface.h`):
//!
//! - a signal (AQL completion signal with an event mailbox, RELEASE_MEM
//!   interrupt): the CP's end-of-pipe interrupt with the event id; from an
//!   SDMA queue, its engine's SDMA trap;
//! - a queue stop: `QUEUE_ERROR_INVALID_PACKET` and `_UNSUPPORTED` are the
//!   CP's bad-opcode interrupt with `EC_QUEUE_PACKET_RESERVED` /
//!   `EC_QUEUE_PACKET_UNSUPPORTED`, `_VM_FAULT` the trap handler's SQ debug
//!   trap with `EC_QUEUE_WAVE_MEMORY_VIOLATION`, each naming the queue by its
//!   doorbell index (real hardware raises no per-queue interrupt for a fault
//!   of the CP or of an SDMA engine: amdkfd learns of those from the VM fault
//!   alone);
//! - a VM fault: a GFX-hub (UTCL2) fault without the retry bit.
//!
//! The virtual GPU has no VMIDs and no IH timestamps: those fields are 0.

use crate::{engine, profile::GfxVersion};

/// SOC15 IH entries and the KFD payloads, `rust/amdgpu-hw/src/ih.rs`, with
/// the generated constants it names (`rust/amdgpu-hw/src/kernel_ih.rs`).
#[path = "../rust/amdgpu-hw/src/kernel_ih.rs"]
mod ih_format;
pub(crate) use ih_format::ih as hw;

use crate::profile::gfx;

/// Dwords of a ring entry.
pub(crate) const ENTRY_DWORDS: usize = hw::IH_ENTRY_DWORDS;

/// The KFD exception code a queue stop is reported with.
fn exception_of(code: u32) -> u32 {
    match code {
        engine::QUEUE_ERROR_UNSUPPORTED => hw::ec::QUEUE_PACKET_UNSUPPORTED,
        engine::QUEUE_ERROR_VM_FAULT => hw::ec::QUEUE_WAVE_MEMORY_VIOLATION,
        _ => hw::ec::QUEUE_PACKET_RESERVED,
    }
}

/// What engine event `e` is, as an interrupt for amdkfd.
fn raise_of(e: &engine::IhEntry) -> hw::Raise {
    match e.source {
        engine::IH_QUEUE_ERROR => hw::Raise::QueueException { doorbell_id: e.doorbell_id, ecode: exception_of(e.data) },
        engine::IH_VM_FAULT => hw::Raise::VmFault {
            vmid: 0,
            addr: e.addr,
            write: e.data & engine::VM_FAULT_WRITE != 0,
            exec: false,
            retry: false,
        },
        _ => match e.sdma_engine {
            Some(engine) => hw::Raise::SdmaTrap { engine, event_id: e.context_id },
            None => hw::Raise::EndOfPipe { event_id: e.context_id },
        },
    }
}

/// The ring entry a `gfx` GPU writes for engine event `e` (dwords in CPU
/// order).
pub(crate) fn ring_entry(gfx: GfxVersion, e: &engine::IhEntry) -> [u32; ENTRY_DWORDS] {
    hw::encode_kfd(gfx, e.pasid as u16, raise_of(e)).encode()
}

/// The ring entry of a fatal (no-retry) fault at `addr` in the VM with
/// `pasid` (`kgd2kfd_svm_fault` said it cannot be resolved).
pub(crate) fn fatal_fault(gfx: GfxVersion, pasid: u32, addr: u64, write: bool) -> [u32; ENTRY_DWORDS] {
    let raise = hw::Raise::VmFault { vmid: 0, addr, write, exec: false, retry: false };
    hw::encode_kfd(gfx, pasid as u16, raise).encode()
}

#[kernel::prelude::kunit_tests(amdgpu_vgpu_ih)]
mod tests {
    use super::*;
    use crate::engine::IhEntry;
    use hw::{KfdInterrupt, SignalSource};

    const FAMILIES: [GfxVersion; 4] = [GfxVersion::GFX90A, GfxVersion::GFX1030, GfxVersion::GFX1100, GfxVersion::GFX1103];

    /// What rkfd makes of the entry vgpu writes for `e` (its decoder).
    fn decoded(gfx: GfxVersion, e: &IhEntry) -> Option<KfdInterrupt> {
        let raw = ring_entry(gfx, e);
        let d = hw::IhEntry::decode(&raw);
        assert_eq!(u32::from(d.pasid), e.pasid);
        hw::decode_kfd(gfx, &d)
    }

    #[test]
    fn engine_events_decode_as_rkfd_decodes_them() {
        for gfx in FAMILIES {
            let eop = IhEntry { source: engine::IH_SIGNAL, pasid: 0x8001, context_id: 42, ..Default::default() };
            assert_eq!(
                decoded(gfx, &eop),
                Some(KfdInterrupt::Signal { source: SignalSource::EndOfPipe, context_id: 42, valid_bits: 32 })
            );
            let trap = IhEntry { sdma_engine: Some(1), ..eop };
            assert_eq!(
                decoded(gfx, &trap),
                Some(KfdInterrupt::Signal { source: SignalSource::SdmaTrap, context_id: 42, valid_bits: 28 })
            );
            for (code, ecode) in [
                (engine::QUEUE_ERROR_INVALID_PACKET, hw::ec::QUEUE_PACKET_RESERVED),
                (engine::QUEUE_ERROR_UNSUPPORTED, hw::ec::QUEUE_PACKET_UNSUPPORTED),
                (engine::QUEUE_ERROR_VM_FAULT, hw::ec::QUEUE_WAVE_MEMORY_VIOLATION),
            ] {
                let stop = IhEntry {
                    source: engine::IH_QUEUE_ERROR,
                    pasid: 7,
                    context_id: 3,
                    data: code,
                    doorbell_id: 0x1e0,
                    ..Default::default()
                };
                let d = decoded(gfx, &stop).expect("decoded");
                assert_eq!(d.queue_exception(), Some((0x1e0, ecode)));
            }
            let fault = IhEntry {
                source: engine::IH_VM_FAULT,
                pasid: 9,
                data: engine::VM_FAULT_NO_RETRY | engine::VM_FAULT_WRITE,
                addr: 0x90_0008,
                ..Default::default()
            };
            let Some(KfdInterrupt::VmFault(f)) = decoded(gfx, &fault) else { panic!("not a fault") };
            assert_eq!((f.address(), f.write, f.exec, f.retry), (0x90_0000, true, false, false));
            let ff = hw::IhEntry::decode(&fatal_fault(gfx, 9, 0x90_0008, true));
            assert_eq!(hw::decode_kfd(gfx, &ff), Some(KfdInterrupt::VmFault(f)));
        }
    }
}
