// SPDX-License-Identifier: GPL-2.0

//! What rkfd asks of a virtual GPU (the `kfd2kgd` calls, [`kabi::Kfd2Kgd`]
//! on [`Kgd`]) and what it is told at probe ([`gpu_info`]).
//!
//! C: `drivers/gpu/drm/amd/amdgpu/amdgpu_amdkfd.c` and
//! `amdgpu_amdkfd_gpuvm.c` (the `amdgpu_amdkfd_*` functions amdkfd calls).

use core::ptr::NonNull;

use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow}, //
};

use crate::{
    engine,
    gart::GttObj,
    gpu::{Core, Kgd},
    kabi::{self, kgd},
    mem::{AllocRequest, Mem},
    mqd,
    profile::Profile,
    uapi,
    vm::Vm, //
};

// The engine's mirrors of the interface's constants.
const _: () = {
    assert!(engine::QUEUE_ERROR_INVALID_PACKET == kgd::KGD_QUEUE_ERROR_INVALID_PACKET);
    assert!(engine::QUEUE_ERROR_UNSUPPORTED == kgd::KGD_QUEUE_ERROR_UNSUPPORTED);
    assert!(engine::QUEUE_ERROR_VM_FAULT == kgd::KGD_QUEUE_ERROR_VM_FAULT);
    assert!(engine::QUEUE_ERROR_RESET == kgd::KGD_QUEUE_ERROR_RESET);
    assert!(crate::ih::ENTRY_DWORDS == kgd::KGD_IH_RING_ENTRY_DWORDS as usize);
};

impl Vm {
    /// Raises a retry fault for a GPU access at `addr` of this VM in rkfd
    /// ([`kabi::KfdIrq::svm_fault`]); `EFAULT` if no KFD process uses the
    /// VM (nothing can resolve the fault).  Must be called with no lock of
    /// this driver held.
    ///
    /// With `report_fatal`, a fault rkfd cannot resolve (`EFAULT`,
    /// `ENOMEM`) is also raised as a VM fault interrupt without the retry
    /// bit, as the IH ring would carry it, unless the VM fault fast path
    /// drops it ([`kabi::KfdIrq::vmfault_dropped`]).
    pub(crate) fn svm_fault(&self, addr: u64, write: bool, report_fatal: bool) -> Result {
        let (Some(kfd), Some(handle)) = (self.core().kfd(), self.kfd_handle()) else {
            return Err(EFAULT);
        };
        let r = kfd.svm_fault(handle, self.pasid(), addr, write);
        // The fatal fault, unless the VM fault fast path drops it (a
        // process's later faults, while debugfs enables it).
        if report_fatal && matches!(r, Err(e) if e == EFAULT || e == ENOMEM) && !kfd.vmfault_dropped(self.pasid()) {
            kfd.interrupt(&crate::ih::fatal_fault(self.core().profile().gfx, self.pasid(), addr, write));
        }
        r
    }
}

/// Which accounts `flags` name (`reserve_mem_limit`): user pointers
/// (system) or GTT (system and TTM); anything else is `EINVAL`.
fn limit_domain(flags: u32) -> Result<bool> {
    match flags {
        uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR => Ok(false),
        uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT => Ok(true),
        _ => Err(EINVAL),
    }
}

impl kabi::Kfd2Kgd for Kgd {
    type Vm = Vm;
    type Mem = Mem;
    type Gtt = GttObj;

    /// `amdgpu_amdkfd_gpuvm_acquire_process_vm`: the VM, which has had
    /// its PASID since the file was opened, becomes a KFD process's: the
    /// CP and the MES accept MAP_PROCESS / ADD_QUEUE naming it from now;
    /// its eviction fence carries rkfd's `context_id`.
    fn acquire_vm(&self, file: &kabi::DrmFileRef<'_>, context_id: u16) -> Result<(Arc<Vm>, Option<kabi::FenceRef>)> {
        let found = self.devices().file_state(file)?;
        found.acquire()?;
        if let Err(e) = found.core().add_kfd_vm(&found) {
            found.release();
            return Err(e);
        }
        match found.init_eviction_fence(context_id) {
            Ok(f) => Ok((found, Some(f))),
            Err(e) => {
                found.core().clone().remove_kfd_vm(&found);
                found.release();
                Err(e)
            }
        }
    }

    fn restore_process_bos(vm: ArcBorrow<'_, Vm>) -> Result<Option<kabi::FenceRef>> {
        vm.restore_eviction_fence()
    }

    fn vm_pasid(vm: &Vm) -> u32 {
        vm.pasid()
    }

    fn set_rkfd_vm_handle(vm: &Vm, handle: usize) {
        vm.set_kfd_handle(handle);
    }

    fn release_vm(vm: Arc<Vm>) {
        vm.core().clone().remove_kfd_vm(&vm);
        vm.release();
    }

    fn alloc_memory(vm: ArcBorrow<'_, Vm>, a: &kabi::MemAlloc) -> Result<(Arc<Mem>, u64)> {
        let req = AllocRequest {
            va: a.va,
            size: a.size,
            user_addr: a.user_addr,
            flags: a.flags,
        };
        let m = vm.alloc(&req)?;
        let offset = m.mmap_offset();
        Ok((m, offset))
    }

    fn free_memory(vm: ArcBorrow<'_, Vm>, mem: Arc<Mem>) {
        if vm.free(mem).is_err() {
            pr_warn!("free_memory_of_gpu: the object is not in this VM\n");
        }
    }

    fn map_memory(vm: ArcBorrow<'_, Vm>, mem: ArcBorrow<'_, Mem>) -> Result {
        // The VM keeps its own reference while the object is mapped.
        vm.map(&mem.into())
    }

    fn unmap_memory(vm: ArcBorrow<'_, Vm>, mem: ArcBorrow<'_, Mem>) -> Result {
        vm.unmap(&mem)
    }

    fn map_gtt_to_kernel(mem: ArcBorrow<'_, Mem>) -> Result<(NonNull<core::ffi::c_void>, u64)> {
        let addr = NonNull::new(mem.kernel_map()?).ok_or(ENOMEM)?;
        Ok((addr, mem.size()))
    }

    fn get_dmabuf_info(&self, fd: i32) -> Result<kabi::DmabufInfo> {
        // `amdgpu_amdkfd_get_dmabuf_info`: a GEM object of this driver (any
        // of its GPUs); all of them are VRAM or GTT objects.
        let gem = kabi::dmabuf_gem::<Core>(fd)?;
        // A GPU rkfd does not know (yet) has no gpu_id to report.
        let owner = gem.mem.gpu().kfd().ok_or(EINVAL)?;
        let mut flags = if gem.vram {
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM
        } else {
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT
        };
        if gem.cpu_access {
            flags |= uapi::KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
        }
        Ok(kabi::DmabufInfo {
            owner,
            size: gem.mem.size(),
            flags,
        })
    }

    fn import_dmabuf(vm: ArcBorrow<'_, Vm>, fd: i32, va: u64) -> Result<kabi::Imported<Mem>> {
        // `amdgpu_amdkfd_gpuvm_import_dmabuf_fd` / `import_obj_create`.
        let gem = kabi::dmabuf_gem::<Core>(fd)?;
        let domain = if gem.vram {
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM
        } else {
            uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT
        };
        let mem = vm.import(gem.mem, va)?;
        Ok(kabi::Imported {
            size: mem.size(),
            flags: domain | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | uapi::KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE,
            mmap_offset: mem.mmap_offset(),
            mem,
        })
    }

    fn available_vram(&self) -> u64 {
        self.core().vram().available()
    }

    fn gpu_clock_counter(&self) -> u64 {
        self.core().clock_counter()
    }

    fn process_page_dir(vm: ArcBorrow<'_, Vm>) -> u64 {
        vm.page_dir()
    }

    fn process_doorbell_index(vm: ArcBorrow<'_, Vm>) -> u32 {
        vm.doorbell_index()
    }

    /// The module's system-memory accounts (amdgpu's `kfd_mem_limit`:
    /// system = GTT + user pointers, TTM = GTT).
    fn mem_limits(&self) -> kabi::MemLimits {
        let m = self.core().sysmem();
        kabi::MemLimits {
            system_used: m.used(),
            system_limit: m.limit(),
            ttm_used: m.gtt_used(),
            ttm_limit: m.gtt_limit(),
        }
    }

    /// amdgpu's `amdgpu_amdkfd_reserve_mem_limit(NULL, ..)` (rkfd's
    /// XNACK-off SVM ranges).
    fn reserve_mem_limit(&self, size: u64, flags: u32) -> Result {
        limit_domain(flags).and_then(|gtt| self.core().sysmem().reserve_bytes(size, gtt))
    }

    fn unreserve_mem_limit(&self, size: u64, flags: u32) {
        if let Ok(gtt) = limit_domain(flags) {
            self.core().sysmem().unreserve_bytes(size, gtt);
        }
    }

    fn mmap_doorbells(vm: ArcBorrow<'_, Vm>, vma: &kabi::MmapVma<'_>) -> Result {
        vm.mmap_doorbells(vma)
    }

    fn mmap_mmio_remap(&self, vma: &kabi::MmapVma<'_>) -> Result {
        self.core().mmio_remap().mmap(vma)
    }

    /// The engine starts serving the compute queue the MQD describes in
    /// HQD (`pipe`, `queue`), which then holds it (and through it the VM)
    /// until `hqd_destroy`.
    fn hqd_load(&self, vm: ArcBorrow<'_, Vm>, m: &mut [u8], pipe: u32, queue: u32, wptr: u64) -> Result {
        let desc = mqd::compute_desc(self.core().profile(), &vm, m, wptr)?;
        let image = mqd::Slot::copy(m)?;
        let mut slots = self.hqds().lock();
        let slot = slots.compute(pipe, queue)?;
        if slot.is_some() {
            return Err(EBUSY);
        }
        *slot = Some(mqd::Slot { hqd: self.engine().load(vm.into(), &desc)?, mqd: image });
        Ok(())
    }

    /// As `hqd_load`, for the RLC queue the SDMA MQD names.
    fn hqd_sdma_load(&self, vm: ArcBorrow<'_, Vm>, m: &mut [u8], wptr: u64) -> Result {
        let (desc, engine, queue) = mqd::sdma_desc(self.core().profile(), &vm, m, wptr)?;
        let image = mqd::Slot::copy(m)?;
        let mut slots = self.hqds().lock();
        let slot = slots.sdma(engine, queue)?;
        if slot.is_some() {
            return Err(EBUSY);
        }
        *slot = Some(mqd::Slot { hqd: self.engine().load(vm.into(), &desc)?, mqd: image });
        Ok(())
    }

    /// Preempts and frees HQD (`pipe`, `queue`), then saves the queue's
    /// read pointer into the MQD.
    fn hqd_destroy(&self, m: &mut [u8], pipe: u32, queue: u32) -> Result {
        let hqd = self.hqds().lock().compute(pipe, queue)?.take().ok_or(EINVAL)?.hqd;
        let r = self.engine().destroy(hqd.clone());
        let (rptr, _) = hqd.saved_rptr();
        let saved = mqd::save_compute(self.core().profile(), m, hqd.desc(), rptr);
        r.and(saved)
    }

    fn hqd_sdma_destroy(&self, m: &mut [u8]) -> Result {
        let p = self.core().profile();
        let (engine, queue) = mqd::sdma_slot_of(p, m)?;
        let hqd = self.hqds().lock().sdma(engine, queue)?.take().ok_or(EINVAL)?.hqd;
        let r = self.engine().destroy(hqd.clone());
        let (rptr, _) = hqd.saved_rptr();
        r.and(mqd::save_sdma(p, m, rptr))
    }

    fn hqd_is_occupied(&self, ring: u64, pipe: u32, queue: u32) -> bool {
        let hqd = self.hqds().lock().compute(pipe, queue).ok().and_then(|s| s.as_ref().map(|s| s.hqd.clone()));
        hqd.is_some_and(|h| h.saved_rptr().1 == ring)
    }

    fn hqd_sdma_is_occupied(&self, m: &[u8]) -> bool {
        let Ok((engine, queue)) = mqd::sdma_slot_of(self.core().profile(), m) else {
            return false;
        };
        self.hqds().lock().sdma(engine, queue).is_ok_and(|s| s.is_some())
    }

    /// The HQD's registers (`crate::mqd::compute_dump`): the HIQ's where
    /// `hiq_mqd_load` put it; on rkfd's no-HWS path, the queue
    /// `hqd_load` put in the slot; under the CP's scheduler or the MES,
    /// whose firmware picks the HQDs, the n-th queue it has on the
    /// engines (in map order, n = queue * PIPES + pipe, spread over the
    /// pipes first as the HWS does), its MQD read from the GART.  An HQD
    /// holding nothing reads 0.
    fn hqd_dump(&self, pipe: u32, queue: u32, out: &mut [[u32; 2]]) -> Result<usize> {
        let p = self.core().profile();
        if let Some(r) = self.cp_hiq_dump(pipe, queue, out) {
            return r;
        }
        let slot = match self.hqds().lock().compute(pipe, queue)? {
            Some(s) => Some((s.hqd.clone(), mqd::Slot::copy(&s.mqd)?)),
            None => None,
        };
        if let Some((hqd, m)) = slot {
            return mqd::compute_dump(p, Some((&hqd, &m)), self.engine(), out);
        }
        let nth = (queue as usize) * (mqd::PIPES as usize) + pipe as usize;
        match self.firmware_queue(false, nth)? {
            Some((addr, hqd)) => {
                let m = self.gart().read_bytes(addr, mqd::compute_mqd_size(p)?)?;
                mqd::compute_dump(p, Some((&hqd, &m)), self.engine(), out)
            }
            None => mqd::compute_dump(p, None, self.engine(), out),
        }
    }

    /// RLC queue `queue` of SDMA `engine` (`crate::mqd::sdma_dump`): the
    /// queue `hqd_sdma_load` put there, or under a firmware scheduler the
    /// n-th SDMA queue it has on the engines (n = queue * engines +
    /// engine), as `hqd_dump`.
    fn hqd_sdma_dump(&self, engine: u32, queue: u32, out: &mut [[u32; 2]]) -> Result<usize> {
        let p = self.core().profile();
        let slot = match self.hqds().lock().sdma(engine, queue)? {
            Some(s) => Some((s.hqd.clone(), mqd::Slot::copy(&s.mqd)?)),
            None => None,
        };
        if let Some((hqd, m)) = slot {
            return mqd::sdma_dump(p, engine, queue, Some((&hqd, &m)), self.engine(), out);
        }
        let engines = (p.num_sdma_engines + p.num_sdma_xgmi_engines) as usize;
        let nth = (queue as usize) * engines + engine as usize;
        match self.firmware_queue(true, nth)? {
            Some((addr, hqd)) => {
                let m = self.gart().read_bytes(addr, mqd::sdma_mqd_size(p)?)?;
                mqd::sdma_dump(p, engine, queue, Some((&hqd, &m)), self.engine(), out)
            }
            None => mqd::sdma_dump(p, engine, queue, None, self.engine(), out),
        }
    }

    /// A kernel object in this GPU's GART.
    fn alloc_gtt_mem(&self, size: u64) -> Result<(Arc<GttObj>, u64, NonNull<core::ffi::c_void>)> {
        let obj = self.gart().alloc(size)?;
        let (addr, cpu) = (obj.addr(), obj.mem().kernel_addr());
        Ok((obj, addr, cpu))
    }

    fn free_gtt_mem(&self, gtt: Arc<GttObj>) {
        self.gart().free(&gtt);
    }

    /// The CP's scheduler reads its HIQ from the ring this MQD describes
    /// (`crate::cp`).  The HIQ takes no HQD slot of rkfd's no-HWS path.
    fn hiq_mqd_load(&self, mqd: &mut [u8], pipe: u32, queue: u32, doorbell_off: u32) -> Result {
        self.cp_hiq_load(mqd, pipe, queue, doorbell_off)
    }

    /// The HIQ's packets are taken before this returns (`crate::cp`).
    fn ring_kernel_doorbell(&self, doorbell_off: u32, value: u64) {
        self.cp_doorbell(doorbell_off, value);
    }

    fn hws_hang(&self) -> Result {
        self.cp_hang();
        self.engine().hang();
        Ok(())
    }

    fn mes_add_hw_queue(&self, input: &kabi::MesAddQueueInput) -> Result {
        self.mes_add(input)
    }

    fn mes_remove_hw_queue(&self, input: &kabi::MesRemoveQueueInput) -> Result {
        self.mes_remove(input)
    }

    fn mes_suspend_all(&self) -> Result {
        self.mes_suspend()
    }

    fn mes_resume_all(&self) -> Result {
        self.mes_resume()
    }

    fn gpu_reset(&self) -> Result {
        self.cp_reset();
        self.mes_reset();
        self.engine().reset()
    }

    fn svm_alloc_vram(&self, frames: &mut [u64]) -> Result {
        self.core().vram().svm_alloc(frames)
    }

    fn svm_alloc_vram_block(&self, order: u32) -> Result<u64> {
        self.core().vram().svm_alloc_block(order)
    }

    fn svm_free_vram(&self, frames: &[u64]) {
        self.core().vram().svm_free(frames);
    }

    /// The copy engine: page by page, under the VRAM pool's lock.
    fn svm_copy(&self, frames: &[u64], pages: &kabi::CopyPages<'_>, to_vram: bool) -> Result {
        if frames.len() != pages.len() {
            return Err(EINVAL);
        }
        for (&frame, sys) in frames.iter().zip(pages.iter()) {
            match (sys, to_vram) {
                (Some(sys), true) => self.core().vram().svm_with_page(frame, |vram| sys.copy_to(vram))?,
                (None, true) => self.core().vram().svm_with_page(frame, kabi::clear_page)?,
                (Some(sys), false) => self.core().vram().svm_with_page(frame, |vram| sys.copy_from(vram))?,
                (None, false) => return Err(EINVAL),
            }
        }
        Ok(())
    }

    fn svm_map(vm: ArcBorrow<'_, Vm>, va: u64, ptes: &[u64]) -> Result {
        vm.svm_map(va, ptes)
    }

    fn svm_unmap(vm: ArcBorrow<'_, Vm>, va: u64, npages: u64) {
        vm.svm_unmap(va, npages);
    }
}

impl Kgd {
    /// The `nth` compute (or SDMA, `sdma`) queue the CP's scheduler or the
    /// MES has on the engines: its MQD's GART address and the queue.  A
    /// GPU uses one or the other; each lock is taken alone.
    fn firmware_queue(&self, sdma: bool, nth: usize) -> Result<Option<(u64, Arc<engine::Hqd>)>> {
        Ok(match self.cp_mapped_nth(sdma, nth) {
            Ok(q) => q,
            Err(()) => self.mes_loaded_nth(sdma, nth),
        })
    }
}

/// The properties topology shows for `kgd`'s GPU (what `kgd2kfd_probe`
/// is told).
pub(crate) fn gpu_info(kgd: &Kgd) -> Result<kabi::GpuInfo> {
    let core: &Arc<Core> = kgd.core();
    let p: &Profile = core.profile();
    let save = p.save_area();
    let mut info = kabi::GpuInfo {
        gfx_target_version: p.gfx.target_version(),
        vendor_id: 0x1002,
        device_id: p.device_id,
        domain: 0,
        location_id: core.location_id(),
        drm_render_minor: kgd.devices().render_minor(),
        unique_id: p.unique_id(core.index()),
        num_shader_engines: p.num_shader_engines,
        sh_per_se: p.sh_per_se,
        cu_per_sh: p.cu_per_sh,
        simd_per_cu: p.simd_per_cu,
        max_waves_per_simd: p.max_waves_per_simd,
        wave_front_size: p.wave_front_size,
        lds_size_in_kb: p.lds_size_kib,
        max_slots_scratch_cu: p.max_slots_scratch_cu,
        num_sdma_engines: p.num_sdma_engines,
        num_sdma_xgmi_engines: p.num_sdma_xgmi_engines,
        num_sdma_queues_per_engine: p.num_sdma_queues_per_engine,
        num_cp_queues: p.num_cp_queues,
        num_pipe_per_mec: mqd::PIPES,
        num_queue_per_pipe: mqd::QUEUES_PER_PIPE,
        // No HQD is kept: the virtual GPU has no compute rings of its own.
        reserved_hqds: [0; 4],
        num_xcc: 1,
        max_engine_clk_fcompute: p.max_engine_clk_mhz,
        fw_version: p.fw_version,
        sdma_fw_version: p.sdma_fw_version,
        capability: p.capability(),
        capability2: 0,
        debug_prop: 0,
        cwsr_size: save.cwsr_size,
        ctl_stack_size: save.ctl_stack_size,
        vram_size: core.vram().size(),
        vram_width: p.vram_width,
        mem_clk_max: p.mem_clk_max_mhz,
        vram_is_public: u32::from(p.vram_is_public),
        doorbell_process_size: p.doorbell_process_size(),
        gb_addr_config: p.gb_addr_config(),
        // No XGMI hive is modelled: every virtual GPU stands alone.
        hive_id: 0,
        ..Default::default()
    };
    let name = p.asic_name.as_bytes();
    if name.len() >= info.name.len() || p.caches.len() > info.caches.len() {
        return Err(EINVAL);
    }
    for (dst, &src) in info.name.iter_mut().zip(name) {
        *dst = core::ffi::c_char::from_ne_bytes([src]);
    }
    for (dst, c) in info.caches.iter_mut().zip(p.caches) {
        *dst = kabi::CacheInfo {
            level: c.level,
            size_kib: c.size_kib,
            cache_line_size: c.line_size,
            type_: c.cache_type,
            cus_per_cache: p.cus_sharing(c),
            ..Default::default()
        };
    }
    info.num_caches = u32::try_from(p.caches.len())?;
    Ok(info)
}
