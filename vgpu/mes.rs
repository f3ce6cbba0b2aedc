// SPDX-License-Identifier: GPL-2.0

//! The MES firmware on the virtual GPU's GFX11 profiles: the kfd2kgd
//! `mes_add_hw_queue` / `mes_remove_hw_queue` / `mes_suspend_all` /
//! `mes_resume_all` (upstream: amdgpu's `mes_v11_0.c`, which sends
//! `MESAPI__ADD_QUEUE` / `MESAPI__REMOVE_QUEUE` / `MESAPI__SUSPEND` /
//! `MESAPI__RESUME` to the firmware, and the firmware itself).  A queue
//! added is read from its MQD in the GART (as the HWS model reads the
//! MQDs MAP_QUEUES names, `crate::cp`) and loaded on the engines in the
//! VM its page table base names (which must be the VM of its PASID);
//! removing or suspending it preempts it and saves
//! its read pointer into the MQD, so adding or resuming it goes on from
//! there.  Requests are answered synchronously.
//!
//! What the firmware refuses (`-EINVAL`): a profile not scheduled by MES,
//! a queue type other than compute and SDMA, an unknown PASID, a page
//! table base that is not the VM of the PASID, process or
//! gang context or MQD addresses outside the GART, an MQD that does not
//! decode for the profile or does not match the request (AQL or PM4,
//! doorbell, write pointer), a doorbell (a BAR index, as amdgpu's
//! `doorbell_offset`) outside the process's doorbell slice or already
//! added, and removing a queue that was never added.

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
    /// The page table base the request carried: the VM the queue runs in.
    page_dir: u64,
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

/// A GART address the firmware cannot read (`EFAULT` of the GART) is a
/// request it refuses: `-EINVAL`, as the interface says.
fn refused(e: Error) -> Error {
    if e == EFAULT {
        EINVAL
    } else {
        e
    }
}

impl Kgd {
    fn mqd_size(&self, sdma: bool) -> Result<usize> {
        let p = self.core().profile();
        if sdma {
            mqd::sdma_mqd_size(p)
        } else {
            mqd::compute_mqd_size(p)
        }
    }

    /// What the engines need of a queue's MQD, read from the GART now.
    /// The MQD's doorbell (a BAR index) must be in the slice of the
    /// process's VM and be the request's `doorbell_offset`.
    fn mes_desc(&self, q: &Added) -> Result<QueueDesc> {
        let p = self.core().profile();
        let vm = self.mes_vm(q.page_dir, q.pasid)?;
        let bytes = self.gart().read_bytes(q.mqd_addr, self.mqd_size(q.sdma)?)?;
        let desc = if q.sdma {
            mqd::sdma_desc(p, &vm, &bytes, q.wptr_addr)?.0
        } else {
            mqd::compute_desc(p, &vm, &bytes, q.wptr_addr)?
        };
        if vm.doorbell_byte_offset(q.doorbell_offset)? != desc.doorbell_offset {
            return Err(EINVAL);
        }
        Ok(desc)
    }

    /// Loads `q` on the engines in its process's VM.
    fn mes_load(&self, q: &Added, desc: &QueueDesc) -> Result<Arc<Hqd>> {
        let vm = self.mes_vm(q.page_dir, q.pasid)?;
        self.engine().load(vm, desc)
    }

    /// The VM a request's page table base names (the firmware programs the
    /// VMID's page table from it), if it is the VM of its PASID.
    fn mes_vm(&self, page_dir: u64, pasid: u32) -> Result<Arc<crate::vm::Vm>> {
        let core = self.core();
        match (core.vm_of_page_dir(page_dir), core.vm_of_pasid(pasid)) {
            (Some(vm), Some(of_pasid)) if Arc::ptr_eq(&vm, &of_pasid) => Ok(vm),
            _ => Err(EINVAL),
        }
    }

    /// Preempts `q` (if it runs) and saves its read pointer into its MQD.
    /// `ETIME`: the engine did not let go (hung); it is off all the same.
    fn mes_preempt(&self, q: &mut Added) -> Result {
        let Some(hqd) = q.hqd.take() else { return Ok(()) };
        let ret = self.engine().destroy(hqd.clone());
        let p = self.core().profile();
        let (rptr, _) = hqd.saved_rptr();
        let mut bytes = self.gart().read_bytes(q.mqd_addr, self.mqd_size(q.sdma)?)?;
        if q.sdma {
            mqd::save_sdma(p, &mut bytes, rptr)?;
        } else {
            mqd::save_compute(p, &mut bytes, hqd.desc(), rptr)?;
        }
        self.gart().write_bytes(q.mqd_addr, &bytes)?;
        ret
    }

    /// The `nth` compute (or SDMA, `sdma`) queue the MES has on the
    /// engines, in the order they were added: its MQD's GART address and
    /// the queue (`hqd_dump`; looked up under the lock, no copy).
    pub(crate) fn mes_loaded_nth(&self, sdma: bool, nth: usize) -> Option<(u64, Arc<Hqd>)> {
        let st = self.mes().lock();
        st.queues
            .iter()
            .filter_map(|q| q.hqd.as_ref().filter(|_| q.sdma == sdma).map(|h| (q.mqd_addr, h.clone())))
            .nth(nth)
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
        self.gart().read_dwords(i.process_context_addr, &mut probe).map_err(refused)?;
        self.gart().read_dwords(i.gang_context_addr, &mut probe).map_err(refused)?;
        let mut st = self.mes().lock();
        if st.queues.iter().any(|q| {
            (q.pasid == i.process_id && q.doorbell_offset == i.doorbell_offset) || q.gang_context_addr == i.gang_context_addr
        }) {
            return Err(EINVAL);
        }
        st.queues.reserve(1, GFP_KERNEL)?;
        let mut q = Added {
            pasid: i.process_id,
            page_dir: i.page_table_base_addr,
            doorbell_offset: i.doorbell_offset,
            gang_context_addr: i.gang_context_addr,
            mqd_addr: i.mqd_addr,
            wptr_addr: i.wptr_addr,
            sdma,
            hqd: None,
        };
        self.mes_vm(q.page_dir, q.pasid)?;
        let desc = self.mes_desc(&q).map_err(refused)?;
        let aql = desc.ty == uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
        if !sdma && aql != (i.is_aql_queue != 0) {
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

#[kernel::prelude::kunit_tests(amdgpu_vgpu_mes)]
mod tests {
    use super::*;
    use crate::{gart::GttObj, mqd::hw, profile::PROFILES, sysmem::SystemMemory};

    /// A gfx11 GPU (not registered with rkfd), a VM with a PASID, and the
    /// GART objects of one PM4 queue: its MQD, a process and a gang
    /// context (ring and pointers at VAs nothing maps: the test looks only
    /// at what the firmware loads and saves).
    struct Rig {
        kgd: KBox<Kgd>,
        vm: Arc<crate::vm::Vm>,
        mqd: Arc<GttObj>,
        proc_ctx: Arc<GttObj>,
        gang_ctx: Arc<GttObj>,
        input: MesAddQueueInput,
    }

    /// The queue's doorbell in its VM's slice (dwords); the requests and
    /// the MQD carry it as a BAR index.
    const DOORBELL: u32 = 4;

    impl Rig {
        fn new(index: u32) -> Result<Rig> {
            let p = PROFILES.iter().find(|p| p.gfx.uses_mes()).ok_or(EINVAL)?;
            let kgd = Kgd::new(p, index, 16 * 4096, &SystemMemory::new()?)?;
            let core = kgd.core().clone();
            let vm = crate::vm::Vm::new(core.clone())?;
            // Acquired: its doorbell slice is placed in the BAR.
            vm.acquire()?;
            core.add_kfd_vm(&vm)?;
            let doorbell = vm.doorbell_index() + DOORBELL;
            let (mqd, proc_ctx, gang_ctx) = (kgd.gart().alloc(4096)?, kgd.gart().alloc(4096)?, kgd.gart().alloc(4096)?);
            let base = 0x7f00_0000_0000u64;
            let q = hw::QueueProps {
                format: hw::QueueFormat::Pm4,
                queue_address: base,
                queue_size: 4096,
                read_ptr: base + 0x8000,
                write_ptr: base + 0x8008,
                doorbell_off: doorbell,
                ..Default::default()
            };
            let dev = hw::MqdDevice { gfx: p.gfx, cwsr_enabled: false, profiler_active: false, pcie_atomics: false, sdma_phase_quantum: hw::SDMA_PHASE_QUANTUM_DEFAULT };
            let mut m = hw::ComputeMqd::zeroed(p.gfx).ok_or(EINVAL)?;
            hw::init_compute_mqd(&mut m, &dev, mqd.addr(), &q);
            kgd.gart().write_bytes(mqd.addr(), m.as_bytes())?;
            let input = MesAddQueueInput {
                process_id: vm.pasid(),
                page_table_base_addr: vm.page_dir(),
                process_context_addr: proc_ctx.addr(),
                gang_context_addr: gang_ctx.addr(),
                doorbell_offset: doorbell,
                mqd_addr: mqd.addr(),
                wptr_addr: q.write_ptr,
                queue_type: QUEUE_TYPE_COMPUTE,
                is_kfd_process: 1,
                queue_size: 1024,
                ..Default::default()
            };
            Ok(Rig { kgd, vm, mqd, proc_ctx, gang_ctx, input })
        }

        fn running(&self) -> (usize, usize) {
            let st = self.kgd.mes().lock();
            (st.queues.len(), st.queues.iter().filter(|q| q.hqd.is_some()).count())
        }

        fn remove_input(&self) -> MesRemoveQueueInput {
            MesRemoveQueueInput { doorbell_offset: self.input.doorbell_offset, gang_context_addr: self.gang_ctx.addr() }
        }
    }

    impl Drop for Rig {
        fn drop(&mut self) {
            self.kgd.mes_reset();
            self.kgd.core().remove_kfd_vm(&self.vm);
            self.vm.release();
            for o in [&self.mqd, &self.proc_ctx, &self.gang_ctx] {
                self.kgd.gart().free(o);
            }
        }
    }

    /// Requests no firmware takes are refused and leave nothing behind.
    #[test]
    fn add_refuses_what_does_not_match_the_mqd() -> Result {
        let rig = Rig::new(0x3c)?;
        let i = rig.input;
        let other = crate::vm::Vm::new(rig.kgd.core().clone())?;
        // Another process's VM, acquired: its doorbell slice is elsewhere.
        let neighbour = crate::vm::Vm::new(rig.kgd.core().clone())?;
        neighbour.acquire()?;
        assert_ne!(neighbour.doorbell_index(), rig.vm.doorbell_index());
        let bad = [
            MesAddQueueInput { mqd_addr: rig.proc_ctx.addr(), ..i },
            MesAddQueueInput { mqd_addr: 0x1000, ..i },
            // Another doorbell of the slice than the MQD's; the MQD's
            // counted from the slice's start (slice-relative), or in the
            // other process's slice; one past the slice.
            MesAddQueueInput { doorbell_offset: i.doorbell_offset + 2, ..i },
            MesAddQueueInput { doorbell_offset: DOORBELL, ..i },
            MesAddQueueInput { doorbell_offset: neighbour.doorbell_index() + DOORBELL, ..i },
            MesAddQueueInput { doorbell_offset: rig.vm.doorbell_index() + rig.kgd.core().profile().doorbell_process_size() / 4, ..i },
            MesAddQueueInput { wptr_addr: i.wptr_addr + 8, ..i },
            MesAddQueueInput { is_aql_queue: 1, ..i },
            MesAddQueueInput { queue_type: 0, ..i },
            MesAddQueueInput { process_id: i.process_id + 1, ..i },
            // The page table base of no VM, or of a VM no KFD process
            // acquired.
            MesAddQueueInput { page_table_base_addr: 0, ..i },
            MesAddQueueInput { page_table_base_addr: i.page_table_base_addr + 0x1000_0000, ..i },
            MesAddQueueInput { page_table_base_addr: other.page_dir(), ..i },
            MesAddQueueInput { gang_context_addr: 0x2000, ..i },
        ];
        for b in bad.iter() {
            assert_eq!(rig.kgd.mes_add(b), Err(EINVAL));
        }
        assert_eq!(rig.running(), (0, 0));
        assert_eq!(rig.kgd.mes_remove(&rig.remove_input()), Err(EINVAL));
        neighbour.release();
        Ok(())
    }

    /// Add runs the queue, a second add of its doorbell is refused;
    /// suspend preempts it and resume runs it again; remove takes it off,
    /// and only once.
    #[test]
    fn add_suspend_resume_remove() -> Result {
        let rig = Rig::new(0x3d)?;
        rig.kgd.mes_add(&rig.input)?;
        assert_eq!(rig.running(), (1, 1));
        assert_eq!(rig.kgd.mes_add(&rig.input), Err(EINVAL));
        rig.kgd.mes_suspend()?;
        assert_eq!(rig.running(), (1, 0));
        rig.kgd.mes_resume()?;
        assert_eq!(rig.running(), (1, 1));
        assert_eq!(rig.kgd.mes_remove(&MesRemoveQueueInput { gang_context_addr: rig.proc_ctx.addr(), ..rig.remove_input() }), Err(EINVAL));
        rig.kgd.mes_remove(&rig.remove_input())?;
        assert_eq!(rig.running(), (0, 0));
        assert_eq!(rig.kgd.mes_remove(&rig.remove_input()), Err(EINVAL));
        Ok(())
    }

    /// A profile scheduled by the HWS has no MES.
    #[test]
    fn hws_profiles_have_no_mes() -> Result {
        let p = PROFILES.iter().find(|p| !p.gfx.uses_mes()).ok_or(EINVAL)?;
        let kgd = Kgd::new(p, 0x3e, 16 * 4096, &SystemMemory::new()?)?;
        assert_eq!(kgd.mes_add(&MesAddQueueInput::default()), Err(EOPNOTSUPP));
        Ok(())
    }
}
