// SPDX-License-Identifier: GPL-2.0

//! The MES firmware on the virtual GPU's GFX11 profiles: the kfd2kgd
//! `mes_add_hw_queue` / `mes_remove_hw_queue` / `mes_suspend_all` /
//! `mes_resume_all` (upstream: amdgpu's `mes_v11_0.c`, which sends
//! `MESAPI__ADD_QUEUE` / `MESAPI__REMOVE_QUEUE` / `MESAPI__SUSPEND` /
//! `MESAPI__RESUME` to the firmware, and the firmware itself).  A queue
//! added is read from its MQD in the GART (as the HWS model reads the
//! MQDs MAP_QUEUES names, `crate::cp`) and loaded on the engines in the
//! VM its PASID names; removing or suspending it preempts it and saves
//! its read pointer into the MQD, so adding or resuming it goes on from
//! there.  Requests are answered synchronously.
//!
//! What the firmware refuses (`-EINVAL`): a profile not scheduled by MES,
//! a queue type other than compute and SDMA, an unknown PASID, process or
//! gang context or MQD addresses outside the GART, an MQD that does not
//! decode for the profile or does not match the request (AQL or PM4,
//! doorbell, write pointer), a doorbell of the process already added, and
//! removing a queue that was never added.

use kernel::{prelude::*, sync::Arc};

use crate::{
    engine::{Hqd, QueueDesc},
    gpu::Kgd,
    kabi::{MesAddQueueInput, MesRemoveQueueInput},
    mqd, uapi,
};

/// `KGD_MES_QUEUE_TYPE_COMPUTE`.
const QUEUE_TYPE_COMPUTE: u32 = crate::kabi::kgd::KGD_MES_QUEUE_TYPE_COMPUTE;
/// `KGD_MES_QUEUE_TYPE_SDMA`.
const QUEUE_TYPE_SDMA: u32 = crate::kabi::kgd::KGD_MES_QUEUE_TYPE_SDMA;

/// One queue the firmware was given.
struct Added {
    pasid: u32,
    doorbell_offset: u32,
    gang_context_addr: u64,
    mqd_addr: u64,
    wptr_addr: u64,
    sdma: bool,
    /// On the engines (`None` while suspended).
    hqd: Option<Arc<Hqd>>,
}

/// The firmware's queues (`Kgd::mes`).
pub(crate) struct MesState {
    queues: KVec<Added>,
    /// `mes_suspend_all` came and no `mes_resume_all` yet.
    suspended: bool,
}

impl MesState {
    /// No queue.
    pub(crate) fn new() -> MesState {
        MesState { queues: KVec::new(), suspended: false }
    }
}

impl Kgd {
    /// `len` bytes (a multiple of 4) at GART `addr`.
    fn mes_read(&self, addr: u64, len: usize) -> Result<KVec<u8>> {
        let mut dw = KVec::from_elem(0u32, len / 4, GFP_KERNEL)?;
        self.gart().read_dwords(addr, &mut dw)?;
        let mut out = KVec::with_capacity(len, GFP_KERNEL)?;
        for d in dw.iter() {
            out.extend_from_slice(&d.to_le_bytes(), GFP_KERNEL)?;
        }
        Ok(out)
    }

    fn mes_write(&self, addr: u64, bytes: &[u8]) -> Result {
        let mut dw = KVec::with_capacity(bytes.len() / 4, GFP_KERNEL)?;
        for c in bytes.chunks_exact(4) {
            dw.push(u32::from_le_bytes([c[0], c[1], c[2], c[3]]), GFP_KERNEL)?;
        }
        self.gart().write_dwords(addr, &dw)
    }

    fn mqd_size(&self, sdma: bool) -> Result<usize> {
        let p = self.core().profile();
        if sdma {
            mqd::sdma_mqd_size(p)
        } else {
            mqd::compute_mqd_size(p)
        }
    }

    /// What the engines need of a queue's MQD, read from the GART now.
    fn mes_desc(&self, q: &Added) -> Result<QueueDesc> {
        let p = self.core().profile();
        let bytes = self.mes_read(q.mqd_addr, self.mqd_size(q.sdma)?)?;
        if q.sdma {
            Ok(mqd::sdma_desc(p, &bytes, q.wptr_addr)?.0)
        } else {
            mqd::compute_desc(p, &bytes, q.wptr_addr)
        }
    }

    /// Loads `q` on the engines in its process's VM.
    fn mes_load(&self, q: &Added, desc: &QueueDesc) -> Result<Arc<Hqd>> {
        let vm = self.core().vm_of_pasid(q.pasid).ok_or(EINVAL)?;
        self.engine().load(vm, desc)
    }

    /// Preempts `q` (if it runs) and saves its read pointer into its MQD.
    /// `ETIME`: the engine did not let go (hung); it is off all the same.
    fn mes_preempt(&self, q: &mut Added) -> Result {
        let Some(hqd) = q.hqd.take() else { return Ok(()) };
        let ret = self.engine().destroy(hqd.clone());
        let p = self.core().profile();
        let (rptr, _) = hqd.saved_rptr();
        let mut bytes = self.mes_read(q.mqd_addr, self.mqd_size(q.sdma)?)?;
        if q.sdma {
            mqd::save_sdma(p, &mut bytes, rptr)?;
        } else {
            mqd::save_compute(p, &mut bytes, hqd.desc(), rptr)?;
        }
        self.mes_write(q.mqd_addr, &bytes)?;
        ret
    }

    /// kfd2kgd `mes_add_hw_queue` (MESAPI__ADD_QUEUE).
    pub(crate) fn mes_add(&self, i: &MesAddQueueInput) -> Result {
        if !self.core().profile().gfx.uses_mes() {
            return Err(EOPNOTSUPP);
        }
        let sdma = match i.queue_type {
            QUEUE_TYPE_COMPUTE => false,
            QUEUE_TYPE_SDMA => true,
            _ => return Err(EINVAL),
        };
        // The contexts are the firmware's: they must be GART memory.
        let mut probe = [0u32; 1];
        self.gart().read_dwords(i.process_context_addr, &mut probe)?;
        self.gart().read_dwords(i.gang_context_addr, &mut probe)?;
        let mut st = self.mes().lock();
        if st.queues.iter().any(|q| {
            (q.pasid == i.process_id && q.doorbell_offset == i.doorbell_offset) || q.gang_context_addr == i.gang_context_addr
        }) {
            return Err(EINVAL);
        }
        st.queues.reserve(1, GFP_KERNEL)?;
        let mut q = Added {
            pasid: i.process_id,
            doorbell_offset: i.doorbell_offset,
            gang_context_addr: i.gang_context_addr,
            mqd_addr: i.mqd_addr,
            wptr_addr: i.wptr_addr,
            sdma,
            hqd: None,
        };
        self.core().vm_of_pasid(q.pasid).ok_or(EINVAL)?;
        let desc = self.mes_desc(&q)?;
        let aql = desc.ty == uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
        if u64::from(desc.doorbell_offset) != u64::from(i.doorbell_offset) * 4 || (!sdma && aql != (i.is_aql_queue != 0)) {
            return Err(EINVAL);
        }
        if !st.suspended {
            q.hqd = Some(self.mes_load(&q, &desc)?);
        }
        // Capacity was reserved above: this cannot fail.
        let _ = st.queues.push(q, GFP_KERNEL);
        Ok(())
    }

    /// kfd2kgd `mes_remove_hw_queue` (MESAPI__REMOVE_QUEUE).
    pub(crate) fn mes_remove(&self, i: &MesRemoveQueueInput) -> Result {
        let mut st = self.mes().lock();
        let at = st.queues.iter().position(|q| q.doorbell_offset == i.doorbell_offset && q.gang_context_addr == i.gang_context_addr);
        let Some(at) = at else { return Err(EINVAL) };
        let mut q = st.queues.remove(at)?;
        self.mes_preempt(&mut q)
    }

    /// kfd2kgd `mes_suspend_all` (MESAPI__SUSPEND of every gang): every
    /// queue preempted, read pointers saved.
    pub(crate) fn mes_suspend(&self) -> Result {
        let mut st = self.mes().lock();
        st.suspended = true;
        let mut ret = Ok(());
        for q in st.queues.iter_mut() {
            let r = self.mes_preempt(q);
            ret = ret.and(r);
        }
        ret
    }

    /// kfd2kgd `mes_resume_all` (MESAPI__RESUME): every queue runs again
    /// from the state its MQD saved.
    pub(crate) fn mes_resume(&self) -> Result {
        let mut st = self.mes().lock();
        st.suspended = false;
        let mut ret = Ok(());
        for q in st.queues.iter_mut().filter(|q| q.hqd.is_none()) {
            let r = self.mes_desc(q).and_then(|d| self.mes_load(q, &d));
            match r {
                Ok(h) => q.hqd = Some(h),
                Err(e) => ret = ret.and(Err(e)),
            }
        }
        ret
    }

    /// `gpu_reset`: the firmware starts over with no queue (not saved).
    pub(crate) fn mes_reset(&self) {
        let mut st = self.mes().lock();
        st.suspended = false;
        for q in core::mem::take(&mut st.queues).into_iter() {
            if let Some(h) = q.hqd {
                let _ = self.engine().destroy(h);
            }
        }
    }
}
