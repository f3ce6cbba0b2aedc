// SPDX-License-Identifier: GPL-2.0

//! The virtual GPU's queue front end: reads the MQDs rkfd hands over
//! (`hqd_load`, `hqd_sdma_load`) as a CP or SDMA engine would, into the
//! engines' queue descriptions, saves a queue's read pointer back into its
//! MQD at unload (`hqd_destroy`), and keeps the hardware queue slots: the
//! HQDs of the MEC's pipes and the SDMA engines' RLC queues.
//!
//! C: amdgpu's `amdgpu_amdkfd_gfx_v9.c` / `_gfx_v10_3.c` / `_gfx_v11.c`
//! (`hqd_load`, `hqd_sdma_load`, `hqd_destroy`, `hqd_sdma_destroy`,
//! `hqd_is_occupied`, `hqd_sdma_is_occupied`), which write the HQD
//! registers from the MQD; the MQD layouts and their decoding are the host
//! crate `rust/amdgpu-hw`'s `mqd.rs` (host-tested), compiled in here
//! through `kernel_mqd.rs`.
//!
//! An MQD no CP would load (wrong size or header, no ring, no pointer
//! addresses, an unknown pipe priority, a doorbell whose BAR index is
//! outside the VM's slice (`Vm::doorbell_byte_offset`), a slot out of
//! range) is refused with `EINVAL`, never trusted.

use kernel::{prelude::*, sync::Arc};

use crate::{
    engine::{Engines, Hqd, QueueDesc},
    profile::{GfxVersion, Profile},
    uapi,
    vm::Vm,
};

/// MQD layouts and decoders, `rust/amdgpu-hw/src/mqd.rs`, with the
/// generated layouts it names (`rust/amdgpu-hw/src/kernel_mqd.rs`).
#[path = "../rust/amdgpu-hw/src/kernel_mqd.rs"]
mod mqd_format;
pub(crate) use mqd_format::mqd as hw;

/// For `mqd_format`, which names the generations `super::gfx`.
use crate::profile::gfx;

/// Pipes of the MEC rkfd loads queues into (`num_pipe_per_mec`), as a
/// real MEC has.
pub(crate) const PIPES: u32 = 4;
/// HQDs per pipe (`num_queue_per_pipe`).  A real MEC has 8; without the
/// HWS (issue #13: runlists not yet) every queue needs its own HQD, and
/// rkfd allows 127 queues per process and GPU, so the virtual MEC has
/// 4 x 128.
pub(crate) const QUEUES_PER_PIPE: u32 = 128;

/// Dwords of one AQL packet: the unit of `cp_hqd_pq_rptr` for AQL queues.
const AQL_PACKET_DWORDS: u64 = 16;

/// The engines' scheduling priority (0-15, the stride weight's) for a
/// CP pipe priority (`KFD_PIPE_PRIORITY_CS_LOW`, `_MEDIUM`, `_HIGH`), the
/// only priority an MQD carries (`set_priority`): each level doubles the
/// share, as queue priorities 3, 7 and 15 would.
fn sched_priority(pipe_priority: u32) -> u32 {
    match pipe_priority {
        0 => 3,
        1 => 7,
        _ => 15,
    }
}

/// The MQD layout of `gfx`.
fn gen(gfx: GfxVersion) -> Result<hw::MqdGen> {
    hw::MqdGen::of(gfx).ok_or(EINVAL)
}

/// What the engines need of a compute MQD (`hqd_load`) of a queue of
/// `vm`, whose doorbell (a BAR index) must be in `vm`'s slice; `wptr`, the
/// write pointer rkfd passes, must be the MQD's poll address (or 0).
pub(crate) fn compute_desc(p: &Profile, vm: &Vm, mqd: &[u8], wptr: u64) -> Result<QueueDesc> {
    let c = hw::decode_compute(gen(p.gfx)?, mqd).map_err(|_| EINVAL)?;
    if wptr != 0 && wptr != c.wptr_poll {
        return Err(EINVAL);
    }
    Ok(QueueDesc {
        ty: if c.aql { uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL } else { uapi::KFD_IOC_QUEUE_TYPE_COMPUTE },
        doorbell_offset: vm.doorbell_byte_offset(c.doorbell_off)?,
        priority: sched_priority(c.pipe_priority),
        // Inactive queues are not loaded: a loaded one gets its full share.
        percentage: 100,
        sdma_engine: 0,
        ring_base: c.ring_base,
        ring_size: c.ring_size,
        rptr_va: c.rptr_report,
        wptr_va: c.wptr_poll,
        rptr: if c.aql { u64::from(c.pq_rptr) / AQL_PACKET_DWORDS } else { u64::from(c.pq_rptr) },
    })
}

/// What the engines need of an SDMA MQD (`hqd_sdma_load`), and its
/// (engine, queue).  GFX9/10 SDMA MQDs carry no write-pointer address:
/// `wptr` gives it (upstream's `hqd_sdma_load(.., wptr, ..)`); GFX11's
/// carries one, which `wptr` must match if given.  The doorbell as for
/// [`compute_desc`].
pub(crate) fn sdma_desc(p: &Profile, vm: &Vm, mqd: &[u8], wptr: u64) -> Result<(QueueDesc, u32, u32)> {
    let s = hw::decode_sdma(gen(p.gfx)?, mqd).map_err(|_| EINVAL)?;
    let wptr_va = match (s.wptr_poll, wptr) {
        (0, 0) => return Err(EINVAL),
        (0, w) => w,
        (poll, w) if w == 0 || w == poll => poll,
        _ => return Err(EINVAL),
    };
    let desc = QueueDesc {
        ty: uapi::KFD_IOC_QUEUE_TYPE_SDMA,
        doorbell_offset: vm.doorbell_byte_offset(s.doorbell_off)?,
        // An SDMA MQD has no priority.
        priority: sched_priority(1),
        percentage: 100,
        sdma_engine: s.engine,
        ring_base: s.ring_base,
        ring_size: s.ring_size,
        rptr_va: s.rptr_report,
        wptr_va,
        rptr: s.rb_rptr,
    };
    Ok((desc, s.engine, s.queue))
}

/// The (engine, queue) an SDMA MQD names.
pub(crate) fn sdma_slot_of(p: &Profile, mqd: &[u8]) -> Result<(u32, u32)> {
    let s = hw::decode_sdma(gen(p.gfx)?, mqd).map_err(|_| EINVAL)?;
    Ok((s.engine, s.queue))
}

/// Bytes of `p`'s compute MQD (the generation's struct).
pub(crate) fn compute_mqd_size(p: &Profile) -> Result<usize> {
    Ok(hw::ComputeMqd::zeroed(p.gfx).ok_or(EINVAL)?.as_bytes().len())
}

/// Bytes of `p`'s SDMA MQD.
pub(crate) fn sdma_mqd_size(p: &Profile) -> Result<usize> {
    Ok(hw::SdmaMqd::zeroed(p.gfx).ok_or(EINVAL)?.as_bytes().len())
}

/// What the CP takes of the HIQ's MQD (`hiq_mqd_load`).
pub(crate) struct HiqRing {
    /// Ring GPU address (GART).
    pub(crate) ring_base: u64,
    /// Ring bytes.
    pub(crate) ring_size: u64,
    /// Where the read pointer is reported.
    pub(crate) rptr_report: u64,
    /// The read pointer to start at (dwords).
    pub(crate) pq_rptr: u32,
}

/// Reads the HIQ's compute MQD (the checks of `compute_desc`).
pub(crate) fn hiq_ring(p: &Profile, mqd: &[u8]) -> Result<HiqRing> {
    let c = hw::decode_compute(gen(p.gfx)?, mqd).map_err(|_| EINVAL)?;
    if c.aql {
        return Err(EINVAL);
    }
    Ok(HiqRing { ring_base: c.ring_base, ring_size: c.ring_size, rptr_report: c.rptr_report, pq_rptr: c.pq_rptr })
}

/// Saves a compute queue's read pointer (in [`QueueDesc::rptr`]'s unit)
/// into its MQD's `cp_hqd_pq_rptr`, in dwords, as the CP does at dequeue
/// (the register is 32 bits: an AQL queue past 2^28 packets resumes at
/// the truncated value).
pub(crate) fn save_compute(p: &Profile, mqd: &mut [u8], desc: &QueueDesc, rptr: u64) -> Result {
    let dwords = if desc.ty == uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL { rptr.wrapping_mul(AQL_PACKET_DWORDS) } else { rptr };
    hw::save_compute_rptr(gen(p.gfx)?, mqd, dwords as u32).map_err(|_| EINVAL)
}

/// Saves an SDMA queue's read pointer (bytes) into its MQD.
pub(crate) fn save_sdma(p: &Profile, mqd: &mut [u8], rptr: u64) -> Result {
    hw::save_sdma_rptr(gen(p.gfx)?, mqd, rptr).map_err(|_| EINVAL)
}

/// What a hardware queue slot holds: the queue on the engines and the
/// MQD it was loaded from (the HQD's registers are that MQD's image,
/// `hqd_dump`).
pub(crate) struct Slot {
    pub(crate) hqd: Arc<Hqd>,
    pub(crate) mqd: KVec<u8>,
}

impl Slot {
    /// A copy of an MQD (rkfd's is read during the load call only).
    pub(crate) fn copy(mqd: &[u8]) -> Result<KVec<u8>> {
        let mut copy = KVec::with_capacity(mqd.len(), GFP_KERNEL)?;
        copy.extend_from_slice(mqd, GFP_KERNEL)?;
        Ok(copy)
    }
}

/// A GPU's hardware queue slots: what each HQD and RLC queue holds.
pub(crate) struct Slots {
    /// HQD (pipe, queue) at `pipe * QUEUES_PER_PIPE + queue`.
    compute: KVec<Option<Slot>>,
    /// RLC queue (engine, queue) at `engine * sdma_queues + queue`.
    sdma: KVec<Option<Slot>>,
    sdma_queues: u32,
}

impl Slots {
    /// Every slot of `p` empty.
    pub(crate) fn new(p: &Profile) -> Result<Self> {
        let engines = p.num_sdma_engines + p.num_sdma_xgmi_engines;
        let mut s = Slots { compute: KVec::new(), sdma: KVec::new(), sdma_queues: p.num_sdma_queues_per_engine };
        for _ in 0..PIPES * QUEUES_PER_PIPE {
            s.compute.push(None, GFP_KERNEL)?;
        }
        for _ in 0..engines * p.num_sdma_queues_per_engine {
            s.sdma.push(None, GFP_KERNEL)?;
        }
        Ok(s)
    }

    /// HQD (`pipe`, `queue`); `EINVAL` out of range.
    pub(crate) fn compute(&mut self, pipe: u32, queue: u32) -> Result<&mut Option<Slot>> {
        if pipe >= PIPES || queue >= QUEUES_PER_PIPE {
            return Err(EINVAL);
        }
        self.compute.get_mut((pipe * QUEUES_PER_PIPE + queue) as usize).ok_or(EINVAL)
    }

    /// RLC queue `queue` of SDMA `engine`; `EINVAL` out of range.
    pub(crate) fn sdma(&mut self, engine: u32, queue: u32) -> Result<&mut Option<Slot>> {
        if queue >= self.sdma_queues {
            return Err(EINVAL);
        }
        let i = engine.checked_mul(self.sdma_queues).and_then(|b| b.checked_add(queue)).ok_or(EINVAL)?;
        self.sdma.get_mut(i as usize).ok_or(EINVAL)
    }
}

/// The register set of `p`'s GPU (`hqd_dump`).
fn hqd_regs(p: &Profile) -> Result<hw::HqdRegs> {
    hw::HqdRegs::of(p.gfx).ok_or(EINVAL)
}

/// `hqd_dump` of a compute HQD (C: `kgd_gfx_v9_hqd_dump`, `hqd_dump_v10_3`,
/// `hqd_dump_v11`): `loaded` is the queue it holds and the MQD it was
/// loaded from, `None` for an empty HQD (all registers 0).  The registers
/// are the MQD's image with what the engine has now over it: the read
/// pointer (as the CP saves it at dequeue), the write pointer (dwords)
/// and `CP_HQD_ACTIVE`.
pub(crate) fn compute_dump(p: &Profile, loaded: Option<(&Hqd, &[u8])>, engine: &Engines, out: &mut [[u32; 2]]) -> Result<usize> {
    let regs = hqd_regs(p)?;
    let Some((hqd, m)) = loaded else {
        return hw::compute_hqd_dump(regs, None, Default::default(), out).map_err(|_| ENOSPC);
    };
    if out.len() < regs.compute_regs() {
        return Err(ENOSPC);
    }
    // Read pointer as `save_compute` stores it (AQL packets or PM4
    // dwords, to dwords), write pointer as the engine reads it (AQL
    // packets, PM4 bytes).
    let (rptr, _) = hqd.saved_rptr();
    let st = engine.state(hqd);
    let aql = hqd.desc().ty == uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
    let rptr_dwords = if aql { rptr.wrapping_mul(AQL_PACKET_DWORDS) } else { rptr } as u32;
    let wptr_dwords = if aql { st.wptr.wrapping_mul(AQL_PACKET_DWORDS) } else { st.wptr / 4 };
    let live = hw::ComputeLive { active: st.active, rptr_dwords, wptr_dwords };
    hw::compute_hqd_dump(regs, Some(m), live, out).map_err(|_| EINVAL)
}

/// `hqd_dump` of the HIQ's HQD: the image of its MQD, active, with the
/// CP's read pointer `rptr` (dwords) as read and write pointer.
pub(crate) fn hiq_dump(p: &Profile, m: &[u8], rptr: u64, out: &mut [[u32; 2]]) -> Result<usize> {
    let regs = hqd_regs(p)?;
    if out.len() < regs.compute_regs() {
        return Err(ENOSPC);
    }
    let live = hw::ComputeLive { active: true, rptr_dwords: rptr as u32, wptr_dwords: rptr };
    hw::compute_hqd_dump(regs, Some(m), live, out).map_err(|_| EINVAL)
}

/// `hqd_sdma_dump` of RLC queue `queue` of SDMA `engine_id` (C:
/// `kgd_arcturus_hqd_sdma_dump`, `hqd_sdma_dump_v10_3`,
/// `hqd_sdma_dump_v11`), as [`compute_dump`]: the MQD's registers with the
/// engine's read and write pointers (bytes).
pub(crate) fn sdma_dump(
    p: &Profile,
    engine_id: u32,
    queue: u32,
    loaded: Option<(&Hqd, &[u8])>,
    engine: &Engines,
    out: &mut [[u32; 2]],
) -> Result<usize> {
    let regs = hqd_regs(p)?;
    if out.len() < regs.sdma_regs() {
        return Err(ENOSPC);
    }
    let (m, live) = match loaded {
        Some((hqd, m)) => {
            let st = engine.state(hqd);
            (Some(m), hw::SdmaLive { rptr: hqd.saved_rptr().0, wptr: st.wptr })
        }
        None => (None, Default::default()),
    };
    hw::sdma_hqd_dump(regs, engine_id, queue, m, live, out).map_err(|_| EINVAL)
}

#[kernel::prelude::kunit_tests(amdgpu_vgpu_mqd)]
mod tests {
    use super::*;
    use crate::profile::PROFILES;

    fn queue() -> hw::QueueProps {
        hw::QueueProps {
            format: hw::QueueFormat::Aql,
            queue_address: 0x7f00_0010_0000,
            queue_size: 4096,
            read_ptr: 0x7f00_0020_0008,
            write_ptr: 0x7f00_0020_0000,
            doorbell_off: 6,
            priority: 15,
            sdma_engine_id: 1,
            sdma_queue_id: 2,
            ..Default::default()
        }
    }

    fn dev(p: &Profile) -> hw::MqdDevice {
        hw::MqdDevice {
            gfx: p.gfx,
            cwsr_enabled: false,
            profiler_active: false,
            pcie_atomics: false,
            sdma_phase_quantum: hw::SDMA_PHASE_QUANTUM_DEFAULT,
        }
    }

    /// Every profile reads back the queue rkfd's MQD describes, and
    /// refuses what no CP would load with `EINVAL`.
    #[test]
    fn mqds_of_every_profile_are_read_and_checked() -> Result {
        for (i, p) in PROFILES.iter().enumerate() {
            // The queue's VM, acquired: its doorbell slice is in the BAR,
            // and the MQD names doorbell 3 of it by its BAR index.
            let core = crate::gpu::Core::new(p, 0x20 + i as u32, 1 << 20, &crate::sysmem::SystemMemory::new()?)?;
            let vm = Vm::new(core.clone())?;
            vm.acquire()?;
            let other = Vm::new(core)?;
            other.acquire()?;
            let first = vm.doorbell_index();
            let q = hw::QueueProps { doorbell_off: first + 6, ..queue() };
            let mut c = hw::ComputeMqd::zeroed(p.gfx).ok_or(EINVAL)?;
            hw::init_compute_mqd(&mut c, &dev(p), 0, &q);
            let d = compute_desc(p, &vm, c.as_bytes(), q.write_ptr)?;
            assert_eq!(d.ty, uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
            assert_eq!((d.ring_base, d.ring_size, d.rptr_va, d.wptr_va), (q.queue_address, 4096, q.read_ptr, q.write_ptr));
            // Doorbell dword 6 of the slice is byte 24: doorbell index 3.
            assert_eq!((d.doorbell_offset, d.doorbell_id(), d.priority, d.rptr), (24, 3, 15, 0));
            // A write pointer other than the MQD's, a short MQD, a zeroed
            // one, a doorbell past the slice or between two doorbells,
            // counted from the slice's start (not the BAR's), in the
            // other process's slice, or in the kernel doorbells' slice 0.
            assert!(matches!(compute_desc(p, &vm, c.as_bytes(), q.write_ptr + 8), Err(e) if e == EINVAL));
            assert!(matches!(compute_desc(p, &vm, &c.as_bytes()[..100], 0), Err(e) if e == EINVAL));
            let zero = hw::ComputeMqd::zeroed(p.gfx).ok_or(EINVAL)?;
            assert!(matches!(compute_desc(p, &vm, zero.as_bytes(), 0), Err(e) if e == EINVAL));
            for off in [first + p.doorbell_process_size() / 4, first + 7, 6, other.doorbell_index() + 6, first - 2] {
                let mut bad = c;
                hw::update_compute_mqd(&mut bad, &dev(p), &hw::QueueProps { doorbell_off: off, ..q }, None);
                assert!(matches!(compute_desc(p, &vm, bad.as_bytes(), 0), Err(e) if e == EINVAL));
            }
            // The read pointer saved at unload comes back (AQL: packets).
            let mut bytes = c;
            save_compute(p, bytes.as_bytes_mut(), &d, 5)?;
            assert_eq!(compute_desc(p, &vm, bytes.as_bytes(), 0)?.rptr, 5);

            let mut s = hw::SdmaMqd::zeroed(p.gfx).ok_or(EINVAL)?;
            hw::init_sdma_mqd(&mut s, &dev(p), &q);
            let (d, engine, queue) = sdma_desc(p, &vm, s.as_bytes(), q.write_ptr)?;
            assert_eq!((engine, queue, d.sdma_engine(), d.wptr_va), (1, 2, Some(1), q.write_ptr));
            // GFX9/10 SDMA MQDs have no write-pointer address: it must be given.
            let given = sdma_desc(p, &vm, s.as_bytes(), 0);
            assert_eq!(given.is_ok(), p.gfx.arch() == gfx::GfxArch::Gfx11);
            save_sdma(p, s.as_bytes_mut(), 0x40)?;
            assert_eq!(sdma_desc(p, &vm, s.as_bytes(), q.write_ptr)?.0.rptr, 0x40);
            assert_eq!(sdma_slot_of(p, s.as_bytes())?, (1, 2));
            // The SDMA MQD's doorbell is resolved the same way.
            let mut bad = hw::SdmaMqd::zeroed(p.gfx).ok_or(EINVAL)?;
            hw::init_sdma_mqd(&mut bad, &dev(p), &hw::QueueProps { doorbell_off: 6, ..q });
            assert!(matches!(sdma_desc(p, &vm, bad.as_bytes(), q.write_ptr), Err(e) if e == EINVAL));
            // A VM no process has acquired has no slice: nothing resolves.
            other.release();
            assert!(matches!(compute_desc(p, &other, c.as_bytes(), 0), Err(e) if e == EINVAL));
            vm.release();
        }
        Ok(())
    }

    #[test]
    fn slots_are_bounded() -> Result {
        let p = &PROFILES[0];
        let mut s = Slots::new(p)?;
        assert!(s.compute(PIPES - 1, QUEUES_PER_PIPE - 1)?.is_none());
        assert!(matches!(s.compute(PIPES, 0), Err(e) if e == EINVAL));
        assert!(matches!(s.compute(0, QUEUES_PER_PIPE), Err(e) if e == EINVAL));
        let engines = p.num_sdma_engines + p.num_sdma_xgmi_engines;
        assert!(s.sdma(engines - 1, p.num_sdma_queues_per_engine - 1)?.is_none());
        assert!(matches!(s.sdma(engines, 0), Err(e) if e == EINVAL));
        assert!(matches!(s.sdma(0, p.num_sdma_queues_per_engine), Err(e) if e == EINVAL));
        assert!(matches!(s.sdma(u32::MAX, 0), Err(e) if e == EINVAL));
        Ok(())
    }
}
