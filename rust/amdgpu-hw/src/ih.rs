// SPDX-License-Identifier: GPL-2.0 OR MIT
//! SOC15 interrupt-handler ring entries: the 32 bytes a GPU writes per
//! interrupt, and what amdkfd makes of them.
//!
//! C: the `SOC15_*_FROM_IH_ENTRY` macros of `soc15_int.h` and
//! `amdgpu_ih_decode_iv_helper` (`amdgpu_ih.c`) for the entry; the
//! `event_interrupt_wq_v9` / `_v10` / `_v11` of `kfd_int_process_v9.c`,
//! `_v10.c`, `_v11.c` for the payloads (CP end-of-pipe, SQ interrupt
//! messages, CP bad opcode, SDMA trap and ECC, VM faults), with
//! `gmc_v9_0_process_interrupt`'s retry/write/exec bits
//! (`AMDGPU_GMC9_FAULT_SOURCE_DATA_*`).  Source, client and field ids are
//! the generated constants; the generation is picked by
//! [`IhGen::of`], from [`GfxVersion::arch`].
//!
//! The other direction, what a GPU writes for each of them, is
//! [`encode_kfd`] (a [`Raise`] per interrupt; the virtual GPU's engines use
//! it): the client and source ids each family's engines report with
//! (`gfx_v9_0.c` / `gfx_v10_0.c` / `gfx_v11_0.c` for the CP and SQ,
//! `sdma_v4_0.c` / `sdma_v5_2.c` / `sdma_v6_0.c` for SDMA traps,
//! `gmc_v9_0.c` / `gmc_v10_0.c` / `gmc_v11_0.c` for GFX-hub faults).
//!
//! Not modelled: the ISR-side filters (KFD VMID range, `context_id == 0`
//! CP firmware workaround, the GC 9.4.3 node bitmap), PASID patching for
//! non-HWS GFX9, and the `KFD_IRQ_IS_FENCE` process-drain interrupt.

// `super::`, not `crate::` or `kfd_logic::`: the kernel modules compile
// this file into a module of theirs that provides `gfx` and `generated`
// next to it (rkfd's `src/interrupt.rs`, the virtual GPU's `vgpu/ih.rs`).
use super::gfx::{GfxArch, GfxVersion};

use super::generated::amdgpu_gmc::{
    AMDGPU_GMC9_FAULT_SOURCE_DATA_EXE, AMDGPU_GMC9_FAULT_SOURCE_DATA_RETRY, AMDGPU_GMC9_FAULT_SOURCE_DATA_WRITE,
};
use super::generated::kfd_int_process_v10 as v10;
use super::generated::kfd_int_process_v11 as v11;
use super::generated::kfd_int_process_v9 as v9;
use super::generated::soc15_int::*;

/// Dwords of one SOC15 IH ring entry.
pub const IH_ENTRY_DWORDS: usize = 8;

/// One IH ring entry, decoded as `amdgpu_ih_decode_iv_helper` does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IhEntry {
    /// dw0 7:0 (`SOC15_CLIENT_ID_FROM_IH_ENTRY`).
    pub client_id: u8,
    /// dw0 15:8 (`SOC15_SOURCE_ID_FROM_IH_ENTRY`).
    pub source_id: u8,
    /// dw0 23:16 (`SOC15_RING_ID_FROM_IH_ENTRY`).
    pub ring_id: u8,
    /// dw0 27:24 (`SOC15_VMID_FROM_IH_ENTRY`).
    pub vmid: u8,
    /// dw0 31 (`SOC15_VMID_TYPE_FROM_IH_ENTRY`): the VMID is an MMHUB one.
    pub vmid_src: bool,
    /// dw1, dw2 15:0: a 48-bit timestamp.
    pub timestamp: u64,
    /// dw2 31.
    pub timestamp_src: bool,
    /// dw3 15:0 (`SOC15_PASID_FROM_IH_ENTRY`).
    pub pasid: u16,
    /// dw3 23:16 (`SOC15_NODEID_FROM_IH_ENTRY`).
    pub node_id: u8,
    /// dw4..dw7 (`SOC15_CONTEXT_ID0..3_FROM_IH_ENTRY`, `src_data`).
    pub context_id: [u32; 4],
}

impl IhEntry {
    /// Decodes the entry's dwords (already CPU-endian).
    pub fn decode(dw: &[u32; IH_ENTRY_DWORDS]) -> IhEntry {
        IhEntry {
            client_id: dw[0] as u8,
            source_id: (dw[0] >> 8) as u8,
            ring_id: (dw[0] >> 16) as u8,
            vmid: (dw[0] >> 24) as u8 & 0xf,
            vmid_src: dw[0] >> 31 != 0,
            timestamp: u64::from(dw[1]) | u64::from(dw[2] & 0xffff) << 32,
            timestamp_src: dw[2] >> 31 != 0,
            pasid: dw[3] as u16,
            node_id: (dw[3] >> 16) as u8,
            context_id: [dw[4], dw[5], dw[6], dw[7]],
        }
    }

    /// The entry's dwords, as a GPU writes them (the inverse of
    /// [`IhEntry::decode`]; bits no field covers are 0).
    pub fn encode(&self) -> [u32; IH_ENTRY_DWORDS] {
        [
            u32::from(self.client_id)
                | u32::from(self.source_id) << 8
                | u32::from(self.ring_id) << 16
                | u32::from(self.vmid & 0xf) << 24
                | u32::from(self.vmid_src) << 31,
            self.timestamp as u32,
            (self.timestamp >> 32) as u32 & 0xffff | u32::from(self.timestamp_src) << 31,
            u32::from(self.pasid) | u32::from(self.node_id) << 16,
            self.context_id[0],
            self.context_id[1],
            self.context_id[2],
            self.context_id[3],
        ]
    }

    /// Decodes 32 little-endian bytes of an IH ring.
    pub fn from_le_bytes(b: &[u8; 4 * IH_ENTRY_DWORDS]) -> IhEntry {
        let mut dw = [0u32; IH_ENTRY_DWORDS];
        for (d, c) in dw.iter_mut().zip(b.chunks_exact(4)) {
            *d = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        IhEntry::decode(&dw)
    }

    /// The 32 little-endian bytes a GPU writes into its IH ring.
    pub fn to_le_bytes(&self) -> [u8; 4 * IH_ENTRY_DWORDS] {
        let mut b = [0u8; 4 * IH_ENTRY_DWORDS];
        for (c, d) in b.chunks_exact_mut(4).zip(self.encode()) {
            c.copy_from_slice(&d.to_le_bytes());
        }
        b
    }
}

/// Which `kfd_int_process_v*.c` decodes a generation's interrupts
/// (C: `kfd_device_info_set_event_interrupt_class`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IhGen {
    /// `event_interrupt_class_v9` and `_v9_4_3` (same work-queue decoder).
    V9,
    /// `event_interrupt_class_v10`.
    V10,
    /// `event_interrupt_class_v11`: GC 11 and 12.0.
    V11,
}

impl IhGen {
    /// The decoder `gfx` uses.
    pub const fn of(gfx: GfxVersion) -> IhGen {
        match gfx.arch() {
            GfxArch::Gfx9 | GfxArch::Gfx9_4_3 | GfxArch::Gfx9_5 => IhGen::V9,
            GfxArch::Gfx10_1 | GfxArch::Gfx10_3 => IhGen::V10,
            GfxArch::Gfx11 | GfxArch::Gfx12 => IhGen::V11,
        }
    }
}

/// Where an event signal came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalSource {
    /// `SOC15_INTSRC_CP_END_OF_PIPE`: a RELEASE_MEM with an interrupt.
    EndOfPipe,
    /// `SOC15_INTSRC_SQ_INTERRUPT_MSG`: `s_sendmsg` or an SQ auto/error message.
    SqMessage,
    /// The SDMA trap.
    SdmaTrap,
}

/// The encoding of an SQ interrupt word (C: `SQ_INTERRUPT_WORD_ENCODING_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqEncoding {
    /// Generated by the SQG.
    Auto,
    /// `s_sendmsg` from a shader.
    Inst,
    /// A hardware error (illegal instruction, memory violation, EDC).
    Error,
    /// A value upstream does not name.
    Unknown(u32),
}

/// A GPU VM fault (C: `struct kfd_vm_fault_info` plus the GMC9 fault bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmFault {
    /// `vmid`.
    pub vmid: u8,
    /// `mc_id`: the IH client.
    pub client_id: u8,
    /// `page_addr`: the faulting page number (src_data[0], src_data[1] 3:0).
    pub page_addr: u64,
    /// `prot_valid`: ring_id bit 3.
    pub prot_valid: bool,
    /// `prot_read`: ring_id bit 4.
    pub prot_read: bool,
    /// `prot_write`: ring_id bit 5.
    pub prot_write: bool,
    /// `AMDGPU_GMC9_FAULT_SOURCE_DATA_RETRY`: a retry (XNACK) fault.
    pub retry: bool,
    /// `AMDGPU_GMC9_FAULT_SOURCE_DATA_WRITE`.
    pub write: bool,
    /// `AMDGPU_GMC9_FAULT_SOURCE_DATA_EXE`.
    pub exec: bool,
}

impl VmFault {
    /// The faulting byte address (`page_addr << 12`).
    pub const fn address(&self) -> u64 {
        self.page_addr << 12
    }
}

/// What `event_interrupt_wq_v*` does with an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KfdInterrupt {
    /// `kfd_signal_event_interrupt(pasid, context_id, valid_bits)`.
    Signal {
        /// Where from.
        source: SignalSource,
        /// The event id part of the context id.
        context_id: u32,
        /// How many low bits of `context_id` are valid (32, 28, 24 or 23).
        valid_bits: u32,
    },
    /// An SQ `s_sendmsg` with PRIV set: a debugger trap for queue
    /// `doorbell_id` (`kfd_set_dbg_ev_from_interrupt`); upstream signals
    /// `signal` too if no debugger takes it.
    SqDebugTrap {
        /// The queue's doorbell id.
        doorbell_id: u32,
        /// The trap code.
        trap_code: u32,
        /// The signal otherwise sent: (context id, valid bits).
        signal: (u32, u32),
    },
    /// An SQ error word; `poison` errors (EDC) unmap the process's queues.
    SqError {
        /// `SQ_INTERRUPT_ERROR_TYPE_*`.
        err_type: u32,
        /// Upstream treats it as RAS poison (GFX9, GFX11: not an illegal
        /// instruction or memory violation).
        poison: bool,
        /// The signal sent otherwise: (context id, valid bits).
        signal: (u32, u32),
    },
    /// Another SQ word (auto or instruction without PRIV): a signal.
    SqOther {
        /// The encoding.
        encoding: SqEncoding,
        /// (context id, valid bits) signalled.
        signal: (u32, u32),
    },
    /// `SOC15_INTSRC_CP_BAD_OPCODE`: the CP rejected a packet of queue
    /// `doorbell_id` with exception code `ecode` (a debug event when it is
    /// a packet error class).
    CpBadOpcode {
        /// The queue's doorbell id.
        doorbell_id: u32,
        /// `KFD_DEBUG_CP_BAD_OP_ECODE`.
        ecode: u32,
    },
    /// SDMA ECC or UTCL2 poison: the process's queues are unmapped.
    Poison,
    /// A VM fault.
    VmFault(VmFault),
}

impl KfdInterrupt {
    /// The queue exception this interrupt reports, as
    /// `kfd_set_dbg_ev_from_interrupt` receives it: (doorbell id, KFD
    /// exception code) for a CP bad opcode of a packet class (C:
    /// `KFD_DBG_EC_TYPE_IS_PACKET`) and for an SQ debug trap whose trap code
    /// is one exception's mask; `None` otherwise.
    pub fn queue_exception(&self) -> Option<(u32, u32)> {
        match *self {
            KfdInterrupt::CpBadOpcode { doorbell_id, ecode } if ec::is_packet(ecode) => Some((doorbell_id, ecode)),
            KfdInterrupt::SqDebugTrap { doorbell_id, trap_code, .. } if trap_code.is_power_of_two() => {
                Some((doorbell_id, trap_code.trailing_zeros() + 1))
            }
            _ => None,
        }
    }
}

/// `REG_GET_FIELD` with a generated mask and shift.
const fn field(v: u32, mask: u32, shift: u32) -> u32 {
    (v & mask) >> shift
}

fn sq_encoding(e: u32) -> SqEncoding {
    // The three decoders' enums are generated alike; v9's names them.
    match e {
        v9::SQ_INTERRUPT_WORD_ENCODING_AUTO => SqEncoding::Auto,
        v9::SQ_INTERRUPT_WORD_ENCODING_INST => SqEncoding::Inst,
        v9::SQ_INTERRUPT_WORD_ENCODING_ERROR => SqEncoding::Error,
        e => SqEncoding::Unknown(e),
    }
}

fn is_poison_error(err_type: u32) -> bool {
    err_type != v9::SQ_INTERRUPT_ERROR_TYPE_ILLEGAL_INST && err_type != v9::SQ_INTERRUPT_ERROR_TYPE_MEMVIOL
}

/// Where one generation's SQ interrupt word keeps what upstream acts on:
/// (mask, shift) pairs of the generated `kfd_int_process_v*.c` defines.
struct SqLayout {
    /// ENCODING: in context_id1 (GFX10+) or context_id0 (GFX9).
    encoding_in_ctx1: bool,
    encoding: (u32, u32),
    /// The PRIV bit of context_id0.
    priv_mask: u32,
    /// Debugger doorbell id and trap code, from the SQ data (GFX9's
    /// 24-bit data; context_id0 later).
    doorbell_mask: u32,
    trap_code: (u32, u32),
    /// The error type of an error word.
    err_type: (u32, u32),
    /// GFX9 builds a 24-bit data word from two context ids.
    v9_data: bool,
    /// EDC errors are RAS poison (GFX9, GFX11; GFX10 only logs).
    poison_checked: bool,
    /// Bits of the data signalled as the event id.
    signal_bits: u32,
}

const SQ_V9: SqLayout = SqLayout {
    encoding_in_ctx1: false,
    encoding: (v9::SQ_INTERRUPT_WORD_WAVE_CTXID__ENCODING_MASK, v9::SQ_INTERRUPT_WORD_WAVE_CTXID__ENCODING__SHIFT),
    priv_mask: v9::SQ_INTERRUPT_WORD_WAVE_CTXID__PRIV_MASK,
    doorbell_mask: v9::KFD_INT_DATA_DEBUG_DOORBELL_MASK,
    trap_code: (v9::KFD_INT_DATA_DEBUG_TRAP_CODE_MASK, v9::KFD_INT_DATA_DEBUG_TRAP_CODE_SHIFT),
    err_type: (v9::KFD_SQ_INT_DATA__ERR_TYPE_MASK, v9::KFD_SQ_INT_DATA__ERR_TYPE__SHIFT),
    v9_data: true,
    poison_checked: true,
    signal_bits: 24,
};

const SQ_V10: SqLayout = SqLayout {
    encoding_in_ctx1: true,
    encoding: (v10::SQ_INTERRUPT_WORD_WAVE_CTXID1__ENCODING_MASK, v10::SQ_INTERRUPT_WORD_WAVE_CTXID1__ENCODING__SHIFT),
    priv_mask: v10::SQ_INTERRUPT_WORD_WAVE_CTXID0__PRIV_MASK,
    doorbell_mask: v10::KFD_CONTEXT_ID0_DEBUG_DOORBELL_MASK,
    trap_code: (v10::KFD_CONTEXT_ID0_DEBUG_TRAP_CODE_MASK, v10::KFD_CONTEXT_ID0_DEBUG_TRAP_CODE_SHIFT),
    err_type: (v10::KFD_CTXID0__ERR_TYPE_MASK, v10::KFD_CTXID0__ERR_TYPE__SHIFT),
    v9_data: false,
    poison_checked: false,
    signal_bits: 23,
};

const SQ_V11: SqLayout = SqLayout {
    encoding_in_ctx1: true,
    encoding: (v11::SQ_INTERRUPT_WORD_WAVE_CTXID1__ENCODING_MASK, v11::SQ_INTERRUPT_WORD_WAVE_CTXID1__ENCODING__SHIFT),
    priv_mask: v11::SQ_INTERRUPT_WORD_WAVE_CTXID0__PRIV_MASK,
    doorbell_mask: v11::KFD_CTXID0_DOORBELL_ID_MASK,
    trap_code: (v11::KFD_CTXID0_TRAP_CODE_MASK, v11::KFD_CTXID0_TRAP_CODE_SHIFT),
    err_type: (v11::SQ_INTERRUPT_WORD_ERROR_CTXID0__TYPE_MASK, v11::SQ_INTERRUPT_WORD_ERROR_CTXID0__TYPE__SHIFT),
    v9_data: false,
    poison_checked: true,
    signal_bits: 24,
};

impl SqLayout {
    /// The SOC15_INTSRC_SQ_INTERRUPT_MSG branch of `event_interrupt_wq_v*`.
    fn decode(&self, ctx0: u32, ctx1: u32) -> KfdInterrupt {
        let data = if self.v9_data { v9_sq_int_data(ctx0, ctx1) } else { ctx0 };
        let signal = (data & ((1u64 << self.signal_bits) - 1) as u32, self.signal_bits);
        let word = if self.encoding_in_ctx1 { ctx1 } else { ctx0 };
        match sq_encoding(field(word, self.encoding.0, self.encoding.1)) {
            SqEncoding::Inst if ctx0 & self.priv_mask != 0 => KfdInterrupt::SqDebugTrap {
                doorbell_id: data & self.doorbell_mask,
                trap_code: field(data, self.trap_code.0, self.trap_code.1),
                signal,
            },
            SqEncoding::Error => {
                let err_type = field(data, self.err_type.0, self.err_type.1);
                KfdInterrupt::SqError { err_type, poison: self.poison_checked && is_poison_error(err_type), signal }
            }
            encoding => KfdInterrupt::SqOther { encoding, signal },
        }
    }
}

/// C: `KFD_CONTEXT_ID_GET_SQ_INT_DATA`: GFX9's 24-bit SQ data, from
/// context_id0 11:0 and 31:28 and context_id1 7:0.
const fn v9_sq_int_data(ctx0: u32, ctx1: u32) -> u32 {
    (ctx0 & 0xfff) | ((ctx0 >> 16) & 0xf000) | ((ctx1 << 16) & 0xff_0000)
}

fn vm_fault(e: &IhEntry) -> KfdInterrupt {
    let src1 = e.context_id[1];
    KfdInterrupt::VmFault(VmFault {
        vmid: e.vmid,
        client_id: e.client_id,
        page_addr: u64::from(e.context_id[0]) | u64::from(src1 & 0xf) << 32,
        prot_valid: e.ring_id & 0x08 != 0,
        prot_read: e.ring_id & 0x10 != 0,
        prot_write: e.ring_id & 0x20 != 0,
        retry: src1 & AMDGPU_GMC9_FAULT_SOURCE_DATA_RETRY != 0,
        write: src1 & AMDGPU_GMC9_FAULT_SOURCE_DATA_WRITE != 0,
        exec: src1 & AMDGPU_GMC9_FAULT_SOURCE_DATA_EXE != 0,
    })
}

const fn is_se_or_cp(c: u32) -> bool {
    matches!(
        c,
        SOC15_IH_CLIENTID_GRBM_CP
            | SOC15_IH_CLIENTID_SE0SH
            | SOC15_IH_CLIENTID_SE1SH
            | SOC15_IH_CLIENTID_SE2SH
            | SOC15_IH_CLIENTID_SE3SH
    )
}

const fn is_sdma(c: u32) -> bool {
    matches!(
        c,
        SOC15_IH_CLIENTID_SDMA0
            | SOC15_IH_CLIENTID_SDMA1
            | SOC15_IH_CLIENTID_SDMA2
            | SOC15_IH_CLIENTID_SDMA3
            | SOC15_IH_CLIENTID_SDMA4
            | SOC15_IH_CLIENTID_SDMA5
            | SOC15_IH_CLIENTID_SDMA6
            | SOC15_IH_CLIENTID_SDMA7
    )
}

const fn is_vmc(c: u32) -> bool {
    matches!(c, SOC15_IH_CLIENTID_VMC | SOC15_IH_CLIENTID_VMC1 | SOC15_IH_CLIENTID_UTCL2)
}

/// C: `event_interrupt_wq_v9` / `_v10` / `_v11` (chosen by `gfx`): what
/// amdkfd does with an entry, or `None` if it ignores it.
pub fn decode_kfd(gfx: GfxVersion, e: &IhEntry) -> Option<KfdInterrupt> {
    match IhGen::of(gfx) {
        IhGen::V9 => decode_v9(e),
        IhGen::V10 => decode_v10(gfx, e),
        IhGen::V11 => decode_v11(e),
    }
}

fn end_of_pipe(e: &IhEntry) -> KfdInterrupt {
    KfdInterrupt::Signal { source: SignalSource::EndOfPipe, context_id: e.context_id[0], valid_bits: 32 }
}

fn sdma_trap(e: &IhEntry) -> KfdInterrupt {
    KfdInterrupt::Signal { source: SignalSource::SdmaTrap, context_id: e.context_id[0] & 0xfff_ffff, valid_bits: 28 }
}

fn decode_v9(e: &IhEntry) -> Option<KfdInterrupt> {
    let (client, source) = (u32::from(e.client_id), u32::from(e.source_id));
    let [ctx0, ctx1, ..] = e.context_id;
    if is_se_or_cp(client) {
        match source {
            SOC15_INTSRC_CP_END_OF_PIPE => Some(end_of_pipe(e)),
            SOC15_INTSRC_SQ_INTERRUPT_MSG => Some(SQ_V9.decode(ctx0, ctx1)),
            SOC15_INTSRC_CP_BAD_OPCODE => Some(KfdInterrupt::CpBadOpcode {
                doorbell_id: ctx0 & v9::KFD_INT_DATA_DEBUG_DOORBELL_MASK,
                ecode: field(ctx0, v9::KFD_DEBUG_CP_BAD_OP_ECODE_MASK, v9::KFD_DEBUG_CP_BAD_OP_ECODE_SHIFT),
            }),
            _ => None,
        }
    } else if is_sdma(client) {
        match source {
            SOC15_INTSRC_SDMA_TRAP => Some(sdma_trap(e)),
            SOC15_INTSRC_SDMA_ECC => Some(KfdInterrupt::Poison),
            _ => None,
        }
    } else if is_vmc(client) {
        if source == SOC15_INTSRC_VMC_UTCL2_POISON {
            Some(KfdInterrupt::Poison)
        } else {
            Some(vm_fault(e))
        }
    } else {
        None
    }
}

fn decode_v10(gfx: GfxVersion, e: &IhEntry) -> Option<KfdInterrupt> {
    let (client, source) = (u32::from(e.client_id), u32::from(e.source_id));
    let [ctx0, ctx1, ..] = e.context_id;
    // Sienna Cichlid (GC 10.3.0, gfx1030) reports its SDMA3 on another client id.
    let sdma3_sc = client == SOC15_IH_CLIENTID_SDMA3_Sienna_Cichlid && gfx == GfxVersion::GFX1030;
    if is_se_or_cp(client) {
        match source {
            SOC15_INTSRC_CP_END_OF_PIPE => Some(end_of_pipe(e)),
            SOC15_INTSRC_SQ_INTERRUPT_MSG => Some(SQ_V10.decode(ctx0, ctx1)),
            SOC15_INTSRC_CP_BAD_OPCODE => Some(KfdInterrupt::CpBadOpcode {
                doorbell_id: ctx0 & v10::KFD_CONTEXT_ID0_DEBUG_DOORBELL_MASK,
                ecode: field(ctx0, v10::KFD_DEBUG_CP_BAD_OP_ECODE_MASK, v10::KFD_DEBUG_CP_BAD_OP_ECODE_SHIFT),
            }),
            _ => None,
        }
    } else if is_sdma(client) || sdma3_sc {
        (source == SOC15_INTSRC_SDMA_TRAP).then(|| sdma_trap(e))
    } else if is_vmc(client) {
        Some(vm_fault(e))
    } else {
        None
    }
}

fn decode_v11(e: &IhEntry) -> Option<KfdInterrupt> {
    let (client, source) = (u32::from(e.client_id), u32::from(e.source_id));
    let [ctx0, ctx1, ..] = e.context_id;
    if client == SOC21_IH_CLIENTID_VMC || (client == SOC21_IH_CLIENTID_GFX && source == UTCL2_1_0__SRCID__FAULT) {
        return Some(vm_fault(e));
    }
    if client != SOC21_IH_CLIENTID_GRBM_CP && client != SOC21_IH_CLIENTID_GFX {
        return None;
    }
    match source {
        SOC15_INTSRC_CP_END_OF_PIPE => Some(end_of_pipe(e)),
        SOC15_INTSRC_CP_BAD_OPCODE => Some(KfdInterrupt::CpBadOpcode {
            doorbell_id: ctx0 & v11::KFD_CTXID0_DOORBELL_ID_MASK,
            ecode: field(ctx0, v11::KFD_CTXID0_CP_BAD_OP_ECODE_MASK, v11::KFD_CTXID0_TRAP_CODE_SHIFT),
        }),
        SOC21_INTSRC_SDMA_TRAP => Some(sdma_trap(e)),
        SOC21_INTSRC_SDMA_ECC => Some(KfdInterrupt::Poison),
        SOC15_INTSRC_SQ_INTERRUPT_MSG => Some(SQ_V11.decode(ctx0, ctx1)),
        _ => None,
    }
}

/// The KFD exception codes (`enum kfd_dbg_trap_exception_code` of
/// `kfd_ioctl.h`; the host tests compare them with `kfd-uapi`) that stop a
/// queue: a CP bad-opcode interrupt carries a packet one
/// (`KFD_DBG_EC_TYPE_IS_PACKET`), an SQ debug trap a wave one as a mask
/// (`KFD_EC_MASK`).
pub mod ec {
    /// `EC_QUEUE_WAVE_MEMORY_VIOLATION`.
    pub const QUEUE_WAVE_MEMORY_VIOLATION: u32 = 5;
    /// `EC_QUEUE_PACKET_DISPATCH_DIM_INVALID`: the first packet code.
    pub const QUEUE_PACKET_DISPATCH_DIM_INVALID: u32 = 16;
    /// `EC_QUEUE_PACKET_RESERVED`: a reserved (invalid) packet type.
    pub const QUEUE_PACKET_RESERVED: u32 = 19;
    /// `EC_QUEUE_PACKET_UNSUPPORTED`.
    pub const QUEUE_PACKET_UNSUPPORTED: u32 = 20;
    /// `EC_QUEUE_PACKET_VENDOR_UNSUPPORTED`: the last packet code.
    pub const QUEUE_PACKET_VENDOR_UNSUPPORTED: u32 = 23;

    /// C: `KFD_DBG_EC_TYPE_IS_PACKET`.
    pub const fn is_packet(ec: u32) -> bool {
        ec >= QUEUE_PACKET_DISPATCH_DIM_INVALID && ec <= QUEUE_PACKET_VENDOR_UNSUPPORTED
    }

    /// C: `KFD_EC_MASK` (codes 1..=32; 0 for others).
    pub const fn mask(ec: u32) -> u32 {
        if ec >= 1 && ec <= 32 {
            1 << (ec - 1)
        } else {
            0
        }
    }
}

/// An interrupt a GPU raises for amdkfd, before it is an [`IhEntry`]
/// ([`encode_kfd`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raise {
    /// A RELEASE_MEM with an interrupt (or an AQL completion signal with
    /// an event mailbox): the CP's end-of-pipe interrupt with the event id.
    EndOfPipe {
        /// context_id0.
        event_id: u32,
    },
    /// An SDMA trap (`SDMA_PKT_TRAP`) of engine `engine` with the event id
    /// (28 bits).
    SdmaTrap {
        /// The SDMA instance.
        engine: u32,
        /// The trap's int_context.
        event_id: u32,
    },
    /// A queue stopped with KFD exception `ecode` ([`ec`]): a packet code
    /// is the CP's bad-opcode interrupt; any other is the SQ message the
    /// trap handler sends with PRIV set (a debug trap, whose trap code is
    /// the exception's mask).  `doorbell_id`: the queue's doorbell index
    /// in its process's doorbell slice (10 bits).
    QueueException {
        /// The queue's doorbell index.
        doorbell_id: u32,
        /// The KFD exception code.
        ecode: u32,
    },
    /// A GFX-hub (UTCL2) page fault at byte address `addr`.
    VmFault {
        /// The VMID.
        vmid: u8,
        /// The faulting address (bits 47:12 are reported).
        addr: u64,
        /// A write access.
        write: bool,
        /// An instruction fetch.
        exec: bool,
        /// A retry (XNACK) fault: the access is replayed once resolved.
        retry: bool,
    },
}

/// The SOC15 client of SDMA instance `engine` (C: `sdma_v4_0_seq_to_irq_id`,
/// `sdma_v5_2_seq_to_irq_id`); GFX11 reports every instance through the GFX
/// client.
fn sdma_client(gfx: GfxVersion, engine: u32) -> u32 {
    match (IhGen::of(gfx), engine) {
        (IhGen::V11, _) => SOC21_IH_CLIENTID_GFX,
        (IhGen::V10, 3) if gfx == GfxVersion::GFX1030 => SOC15_IH_CLIENTID_SDMA3_Sienna_Cichlid,
        (_, 1) => SOC15_IH_CLIENTID_SDMA1,
        (_, 2) => SOC15_IH_CLIENTID_SDMA2,
        (_, 3) => SOC15_IH_CLIENTID_SDMA3,
        (_, 4) => SOC15_IH_CLIENTID_SDMA4,
        (_, 5) => SOC15_IH_CLIENTID_SDMA5,
        (_, 6) => SOC15_IH_CLIENTID_SDMA6,
        (_, 7) => SOC15_IH_CLIENTID_SDMA7,
        _ => SOC15_IH_CLIENTID_SDMA0,
    }
}

impl SqLayout {
    /// The context ids of an SQ `s_sendmsg` with PRIV set (what the trap
    /// handler sends for a debug trap): the inverse of [`SqLayout::decode`]'s
    /// debug-trap branch, every other field 0.
    fn encode_debug_trap(&self, doorbell_id: u32, trap_code: u32) -> (u32, u32) {
        let data = (doorbell_id & self.doorbell_mask) | ((trap_code << self.trap_code.1) & self.trap_code.0);
        let (mut ctx0, mut ctx1) = if self.v9_data {
            // C: the inverse of `KFD_CONTEXT_ID_GET_SQ_INT_DATA`.
            ((data & 0xfff) | ((data & 0xf000) << 16), (data >> 16) & 0xff)
        } else {
            (data, 0)
        };
        ctx0 |= self.priv_mask;
        let inst = (v9::SQ_INTERRUPT_WORD_ENCODING_INST << self.encoding.1) & self.encoding.0;
        if self.encoding_in_ctx1 {
            ctx1 |= inst;
        } else {
            ctx0 |= inst;
        }
        (ctx0, ctx1)
    }
}

/// What `gfx`'s hardware writes into its IH ring for `raise` in the VM
/// with `pasid`: the entry [`decode_kfd`] makes `raise` of again.  Ring id,
/// VMID (but for faults), timestamp and node id are 0.
pub fn encode_kfd(gfx: GfxVersion, pasid: u16, raise: Raise) -> IhEntry {
    let gen = IhGen::of(gfx);
    // The CP (EOP, bad opcode) reports through GRBM_CP on every SOC15 part;
    // the SQ through its shader engine (SE0SH), which SOC21 calls GFX.
    let (cp, sq) = match gen {
        IhGen::V11 => (SOC21_IH_CLIENTID_GRBM_CP, SOC21_IH_CLIENTID_GFX),
        IhGen::V9 | IhGen::V10 => (SOC15_IH_CLIENTID_GRBM_CP, SOC15_IH_CLIENTID_SE0SH),
    };
    let (client, source, vmid, ctx0, ctx1) = match raise {
        Raise::EndOfPipe { event_id } => (cp, SOC15_INTSRC_CP_END_OF_PIPE, 0, event_id, 0),
        Raise::SdmaTrap { engine, event_id } => {
            let source = if gen == IhGen::V11 { SOC21_INTSRC_SDMA_TRAP } else { SOC15_INTSRC_SDMA_TRAP };
            (sdma_client(gfx, engine), source, 0, event_id & 0xfff_ffff, 0)
        }
        Raise::QueueException { doorbell_id, ecode } if ec::is_packet(ecode) => {
            // C: `KFD_DEBUG_CP_BAD_OP_ECODE` / `KFD_CTXID0_CP_BAD_OP_ECODE`:
            // the code above the doorbell id, at the trap code's shift on
            // every generation.
            let (doorbell_mask, shift) = match gen {
                IhGen::V9 => (v9::KFD_INT_DATA_DEBUG_DOORBELL_MASK, v9::KFD_DEBUG_CP_BAD_OP_ECODE_SHIFT),
                IhGen::V10 => (v10::KFD_CONTEXT_ID0_DEBUG_DOORBELL_MASK, v10::KFD_DEBUG_CP_BAD_OP_ECODE_SHIFT),
                IhGen::V11 => (v11::KFD_CTXID0_DOORBELL_ID_MASK, v11::KFD_CTXID0_TRAP_CODE_SHIFT),
            };
            (cp, SOC15_INTSRC_CP_BAD_OPCODE, 0, (doorbell_id & doorbell_mask) | ecode << shift, 0)
        }
        Raise::QueueException { doorbell_id, ecode } => {
            let layout = match gen {
                IhGen::V9 => &SQ_V9,
                IhGen::V10 => &SQ_V10,
                IhGen::V11 => &SQ_V11,
            };
            let (ctx0, ctx1) = layout.encode_debug_trap(doorbell_id, ec::mask(ecode));
            (sq, SOC15_INTSRC_SQ_INTERRUPT_MSG, 0, ctx0, ctx1)
        }
        Raise::VmFault { vmid, addr, write, exec, retry } => {
            // C: `gmc_v9_0_process_interrupt`: src_data[0] = address 43:12,
            // src_data[1] 3:0 = address 47:44, plus the fault bits.
            let (client, source) = match gen {
                IhGen::V11 => (SOC21_IH_CLIENTID_GFX, UTCL2_1_0__SRCID__FAULT),
                IhGen::V9 | IhGen::V10 => (SOC15_IH_CLIENTID_UTCL2, UTCL2_1_0__SRCID__FAULT),
            };
            let page = addr >> 12;
            let mut ctx1 = (page >> 32) as u32 & 0xf;
            if retry {
                ctx1 |= AMDGPU_GMC9_FAULT_SOURCE_DATA_RETRY;
            }
            if write {
                ctx1 |= AMDGPU_GMC9_FAULT_SOURCE_DATA_WRITE;
            }
            if exec {
                ctx1 |= AMDGPU_GMC9_FAULT_SOURCE_DATA_EXE;
            }
            (client, source, vmid & 0xf, page as u32, ctx1)
        }
    };
    IhEntry {
        client_id: client as u8,
        source_id: source as u8,
        vmid,
        pasid,
        context_id: [ctx0, ctx1, 0, 0],
        ..IhEntry::default()
    }
}

#[cfg(test)]
mod tests;
