// SPDX-License-Identifier: GPL-2.0

//! One virtual GPU: the state shared by everything that uses it ([`Core`])
//! and its life cycle ([`Gpu`]): devices, registration with rkfd, removal.
//!
//! C: `struct amdgpu_device` and `amdgpu_amdkfd_device_probe/init/fini`
//! (`drivers/gpu/drm/amd/amdgpu/amdgpu_amdkfd.c`).

// Lock order: see the crate root (`vgpu/amdgpu_main.rs`).  `Core::throttle`
// is held across rkfd's `kgd2kfd_smi_event_throttle` so that a report and
// the device's removal stay apart.

use kernel::{
    id_pool::IdPool,
    new_mutex,
    page::Page,
    prelude::*,
    str::CString,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
        ArcBorrow,
        Mutex,
        SetOnce, //
    },
    time::{
        Instant,
        Monotonic, //
    },
};

use crate::{
    engine::{
        EngineHandle,
        Engines, //
    },
    kabi,
    mem::Mem,
    profile::Profile,
    sysmem::SystemMemory,
    vm::Vm,
    vram, //
};

/// Render-node mmap offsets: object `id` owns the byte range starting at
/// `(id + 1) << OFFSET_SLOT_SHIFT`, so an object is at most 1 TiB and offset
/// 0 (and everything below 1 TiB) is never valid, as with GEM's fake offsets.
pub(crate) const OFFSET_SLOT_SHIFT: u32 = 40;
/// The most memory objects one GPU may have at a time.
const MAX_OBJECTS: usize = 1 << 22;

/// The state of one virtual GPU that outlives its registration for as long
/// as a VM or memory object refers to it.
#[pin_data]
pub(crate) struct Core {
    /// What the GPU is.
    profile: &'static Profile,
    /// Which GPU of the module it is (0-based).
    index: u32,
    /// Device memory.
    vram: Arc<vram::Pool>,
    /// The module's system memory accounts (GTT and user pointers).
    sysmem: Arc<SystemMemory>,
    /// Mmap offset slots in use.  A leaf.
    #[pin]
    offsets: Mutex<IdPool>,
    /// When the GPU came up: its clock counter starts at 0 here.
    clock_base: Instant<Monotonic>,
    /// The MMIO remap page (amdgpu's `rmmio_remap`: the HDP flush
    /// registers user space writes to flush the host data path).  A virtual
    /// GPU has no HDP: a zeroed page whose writes are harmless.
    mmio_remap: Arc<kabi::SharedPages>,
    /// Where the VMs' doorbell traps go: the engines' workers while they
    /// run (`crate::engine::Bell`).
    bell: Arc<crate::engine::Bell>,
    /// rkfd's device for this GPU once registered (retry faults name the
    /// device by it), unset before.
    kfd: SetOnce<kabi::KfdIrq>,
    /// Thermal throttling (amdgpu's SMU throttling work): where to report
    /// it while rkfd has the device, and how many throttling interrupts
    /// the GPU raised (`smu->throttle_int_counter`).  The lock keeps the
    /// report and the device's removal apart.  Lock order: held across
    /// rkfd's `kgd2kfd_smi_event_throttle` (rkfd's SMI spinlocks only); no
    /// lock of ours inside.
    #[pin]
    throttle: Mutex<Throttle>,
    /// What the hwmon knob `vgpu_power` drives while rkfd has the device
    /// (amdgpu's suspend, resume and reset paths).  Lock order: held
    /// across rkfd's power entry points, which preempt the queues through
    /// kfd2kgd calls (`Kgd::cp`, `Kgd::mes`, `Kgd::hqds`, the engines) and
    /// across the engines' reset: outermost, with no lock of this driver
    /// held when it is taken (`vgpu/amdgpu_main.rs`, -2).  It keeps a
    /// transition and the device's removal apart.
    #[pin]
    power: Mutex<Option<PowerTarget>>,
    /// The VMs KFD processes use (`acquire_vm` adds, `release_vm`
    /// removes), each with the PASID it got when its file was opened: how
    /// the CP's scheduler and the MES find the VM of a MAP_PROCESS or
    /// ADD_QUEUE (by its page table base, checked against its PASID).
    /// Lock order: a leaf (`vgpu/amdgpu_main.rs`, 11).
    #[pin]
    pasid_vms: Mutex<KVec<Arc<crate::vm::Vm>>>,
    /// The next VM's root page directory slot ([`Core::alloc_page_dir`]).
    next_page_dir: Atomic<u64>,
    /// The process doorbell slices of the doorbell BAR in use
    /// ([`Core::alloc_doorbell_slice`]).  Lock order: a leaf
    /// (`vgpu/amdgpu_main.rs`, 6).
    #[pin]
    doorbell_slices: Mutex<IdPool>,
}

/// Bytes of the virtual GPU's doorbell BAR (amdgpu's `adev->doorbell.size`;
/// 8 MiB, as the SOC15 boards' BAR 2): 1024 slices of 8 KiB.
const DOORBELL_BAR_BYTES: u32 = 8 << 20;

/// See [`Core::power`]: rkfd's device and the GPU whose engines a reset
/// resets.
///
/// # Invariants
///
/// `kgd` points to the boxed [`Kgd`] of the [`Gpu`] that set this, which
/// clears it (`Gpu::drop`, under [`Core::power`]) before the `Kgd` moves
/// or drops.
struct PowerTarget {
    kfd: kabi::KfdIrq,
    kgd: core::ptr::NonNull<Kgd>,
}

// SAFETY: Only `&Kgd` is used through the pointer, and `Kgd` is `Sync`
// (its state is behind locks); `KfdIrq` is `Send`.
unsafe impl Send for PowerTarget {}

/// See [`Core::throttle`].
struct Throttle {
    kfd: Option<kabi::KfdIrq>,
    count: u64,
}

impl Core {
    /// A GPU of `profile` with `vram_size` bytes of VRAM, whose GTT and
    /// user-pointer objects are accounted to `sysmem`.
    pub(crate) fn new(
        profile: &'static Profile,
        index: u32,
        vram_size: u64,
        sysmem: &Arc<SystemMemory>,
    ) -> Result<Arc<Self>> {
        let vram = vram::Pool::new(vram_size)?;
        Arc::pin_init(
            try_pin_init!(Core {
                profile,
                index,
                vram,
                sysmem: sysmem.clone(),
                offsets <- new_mutex!(IdPool::new(), "Core::offsets"),
                clock_base: Instant::now(),
                mmio_remap: Arc::new(kabi::SharedPages::new(1)?, GFP_KERNEL)?,
                bell: crate::engine::Bell::new()?,
                kfd: SetOnce::default(),
                throttle <- new_mutex!(Throttle { kfd: None, count: 0 }, "Core::throttle"),
                power <- new_mutex!(None, "Core::power"),
                pasid_vms <- new_mutex!(KVec::new(), "Core::pasid_vms"),
                next_page_dir: Atomic::new(0),
                doorbell_slices <- new_mutex!(IdPool::new(), "Core::doorbell_slices"),
            }),
            GFP_KERNEL,
        )
    }

    /// Records that a KFD process uses `vm` (`acquire_vm`): the CP's
    /// scheduler and the MES find it by its page table base and PASID
    /// from now.  Recorded once however often it is called.
    pub(crate) fn add_kfd_vm(&self, vm: &Arc<crate::vm::Vm>) -> Result {
        let mut l = self.pasid_vms.lock();
        if !l.iter().any(|v| Arc::ptr_eq(v, vm)) {
            l.push(vm.clone(), GFP_KERNEL)?;
        }
        Ok(())
    }

    /// Forgets `vm` (`release_vm`): no MAP_PROCESS or ADD_QUEUE names it
    /// any more.
    pub(crate) fn remove_kfd_vm(&self, vm: &Arc<crate::vm::Vm>) {
        let mut l = self.pasid_vms.lock();
        let old = l.iter().position(|v| Arc::ptr_eq(v, vm)).and_then(|i| l.remove(i).ok());
        drop(l);
        drop(old);
    }

    /// The page table base of a new VM (what `get_process_page_dir`
    /// answers): amdgpu's encoding of a root page directory in VRAM
    /// (`amdgpu_gmc_pd_addr`: its VRAM physical address |
    /// `AMDGPU_PTE_VALID`), at a 4 KiB slot of this GPU's VRAM address
    /// space just above the frames of its pool, one per VM, never reused
    /// while the GPU lives.  The virtual GPU's page tables are not in its
    /// VRAM (`crate::vm`): the slot takes no frame and no VRAM accounting
    /// (amdkfd's VRAM accounting leaves amdgpu's PD out too); it names the
    /// VM to the CP's scheduler, which finds the VM by it
    /// ([`Core::vm_of_page_dir`]).  `ENOSPC` once the slots would pass the
    /// 48-bit physical address a directory may have.
    pub(crate) fn alloc_page_dir(&self) -> Result<u64> {
        let n = self.next_page_dir.fetch_add(1, Relaxed);
        let phys = n.checked_mul(4096).and_then(|o| o.checked_add(self.vram.size().next_multiple_of(4096))).ok_or(ENOSPC)?;
        crate::cp::pd_addr_vram(phys).ok_or(ENOSPC)
    }

    /// Places a process's doorbell slice (`doorbell_process_size` bytes) in
    /// the GPU's doorbell BAR, the lowest free one, as amdgpu's doorbell
    /// BOs are placed for `kfd_alloc_process_doorbells`; returns the BAR
    /// dword index of its first doorbell (`amdgpu_doorbell_index_on_bar` of
    /// doorbell 0).  Slice 0 holds the GPU's kernel doorbells (amdgpu's
    /// rings', the KFD's HIQ page of `kfd_doorbell_init`) and is never a
    /// process's, so a doorbell index counted from a slice's start instead
    /// of the BAR's is outside every process's slice.  `ENOSPC` when the
    /// BAR is full.
    pub(crate) fn alloc_doorbell_slice(&self) -> Result<u32> {
        let slice = self.profile.doorbell_process_size();
        let slices = (DOORBELL_BAR_BYTES / slice) as usize;
        let mut ids = self.doorbell_slices.lock();
        loop {
            if let Some(unused) = ids.find_unused_id(1) {
                if unused.as_usize() >= slices {
                    return Err(ENOSPC);
                }
                let id = unused.acquire();
                // id < slices: the product stays below DOORBELL_BAR_BYTES.
                return Ok(id as u32 * (slice / 4));
            }
            // Sleeping allocation under a mutex is fine; it is a leaf lock.
            let resizer = ids.grow_request().ok_or(ENOSPC)?.realloc(GFP_KERNEL)?;
            ids.grow(resizer);
        }
    }

    /// Gives back the slice whose first doorbell is at BAR dword `index`.
    pub(crate) fn free_doorbell_slice(&self, index: u32) {
        let slice_dwords = self.profile.doorbell_process_size() / 4;
        self.doorbell_slices.lock().release_id((index / slice_dwords) as usize);
    }

    /// The VM of a KFD process (acquired) whose page table base is
    /// `pd` (a CP programs the VMID's page table from it).
    pub(crate) fn vm_of_page_dir(&self, pd: u64) -> Option<Arc<crate::vm::Vm>> {
        self.pasid_vms.lock().iter().find(|v| v.page_dir() == pd).cloned()
    }

    /// The VM of a KFD process whose PASID is `pasid`.
    pub(crate) fn vm_of_pasid(&self, pasid: u32) -> Option<Arc<crate::vm::Vm>> {
        if pasid == 0 {
            return None;
        }
        self.pasid_vms.lock().iter().find(|v| v.pasid() == pasid).cloned()
    }

    /// What the GPU is.
    pub(crate) fn profile(&self) -> &'static Profile {
        self.profile
    }

    /// Which GPU of the module it is.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// The PCI-style name of its parent device: bus `c1` for GPU 0, `c2`
    /// for GPU 1, ...
    pub(crate) fn bus(&self) -> u32 {
        0xc1 + self.index
    }

    /// `location_id` in the KFD topology: `bus << 8 | devfn`, devfn 0.
    pub(crate) fn location_id(&self) -> u32 {
        self.bus() << 8
    }

    /// The device memory.
    pub(crate) fn vram(&self) -> &Arc<vram::Pool> {
        &self.vram
    }

    /// The GPU's free-running 100 MHz clock counter (amdgpu's RLC
    /// reference clock ticks at 100 MHz on these parts).
    pub(crate) fn clock_counter(&self) -> u64 {
        let ns = self.clock_base.elapsed().as_nanos();
        u64::try_from(ns).unwrap_or(0) / 10
    }

    /// The MMIO remap page.
    pub(crate) fn mmio_remap(&self) -> &Arc<kabi::SharedPages> {
        &self.mmio_remap
    }

    /// Where the VMs' doorbell traps go.
    pub(crate) fn bell(&self) -> &Arc<crate::engine::Bell> {
        &self.bell
    }

    /// Records rkfd's device (once, after registration).
    pub(crate) fn set_kfd(&self, kfd: kabi::KfdIrq) {
        let _ = self.kfd.populate(kfd);
    }

    /// rkfd's device, once registered.
    pub(crate) fn kfd(&self) -> Option<kabi::KfdIrq> {
        self.kfd.copy()
    }

    /// Raises a thermal throttling interrupt with amdgpu's throttler
    /// bitmask (the hwmon knob `vgpu_throttle`, as the SMU's interrupt
    /// would): counts it and tells rkfd (`kgd2kfd_smi_event_throttle`), if
    /// rkfd has the device.  Process context.
    pub(crate) fn raise_throttle(&self, bitmask: u64) {
        let mut t = self.throttle.lock();
        t.count += 1;
        let count = t.count;
        if let Some(kfd) = t.kfd.as_ref() {
            // Under the lock: `Gpu::drop` clears `kfd` (taking it) before
            // rkfd removes the device.  rkfd takes only its SMI spinlocks.
            kfd.throttle(bitmask, count);
        }
    }

    /// hwmon `vgpu_power`: what amdgpu does to the KFD at a suspend
    /// (`amdgpu_device_suspend` → `amdgpu_amdkfd_suspend(adev, true)`), a
    /// resume (`amdgpu_amdkfd_resume(adev, true)`), a GPU reset
    /// (`amdgpu_device_gpu_recover`: `amdgpu_amdkfd_clear_kfd_mapping`
    /// (`kgd2kfd_clear_mappings`: rkfd zaps the processes' doorbell and
    /// MMIO remap mmaps of the GPU), `amdgpu_amdkfd_pre_reset`, the ASIC
    /// reset, which here resets the CP, the MES and the engines as the
    /// kfd2kgd `gpu_reset` does, then `amdgpu_amdkfd_post_reset`), and the
    /// single calls: `suspend_process`, `resume_process`, `pre_reset`,
    /// `post_reset`, `stop_sched` / `start_sched` (node 0), `lock` /
    /// `unlock` (`check_and_lock_kfd`), `teardown`, `clear_mappings`, `sram_ecc`
    /// (`kgd2kfd_set_sram_ecc_flag`, what amdgpu's RAS code calls before
    /// the reset it asks for), `evict_vram` (`kgd2kfd_svm_evict_vram`: every
    /// process's SVM pages in this VRAM back to system memory, what TTM's
    /// eviction of the KFD's SVM BOs does in `amdgpu_device_evict_resources`),
    /// and `suspend_evict`: `suspend`, then, unless the profile is an APU
    /// (whose memory survives a suspend; upstream evicts an APU's only for
    /// S4), `evict_vram`, as the bridge's suspend op over the real amdgpu.
    /// `EINVAL` for another
    /// word, `ENODEV` while rkfd does not have the GPU, else rkfd's errno
    /// (a reset whose `pre_reset` fails is not done).  Process context.
    pub(crate) fn power_op(&self, op: &[u8]) -> Result {
        use kabi::PowerOp as P;
        let single = match op {
            b"suspend" => Some(P::Suspend),
            b"resume" => Some(P::Resume),
            b"suspend_process" => Some(P::SuspendProcess),
            b"resume_process" => Some(P::ResumeProcess),
            b"pre_reset" => Some(P::PreReset),
            b"post_reset" => Some(P::PostReset),
            b"stop_sched" => Some(P::StopSched),
            b"start_sched" => Some(P::StartSched),
            b"lock" => Some(P::Lock),
            b"unlock" => Some(P::Unlock),
            b"teardown" => Some(P::Teardown),
            b"sram_ecc" => Some(P::SramEcc),
            b"clear_mappings" => Some(P::ClearMappings),
            b"evict_vram" => Some(P::EvictVram),
            b"reset" | b"suspend_evict" => None,
            _ => return Err(EINVAL),
        };
        let guard = self.power.lock();
        let t = guard.as_ref().ok_or(ENODEV)?;
        if let Some(op) = single {
            return t.kfd.power(op);
        }
        if op == b"suspend_evict" {
            // amdgpu_device_suspend: amdgpu_amdkfd_suspend, then
            // amdgpu_device_evict_resources (VRAM of a dGPU only).
            t.kfd.power(P::Suspend)?;
            return if self.profile.apu { Ok(()) } else { t.kfd.power(P::EvictVram) };
        }
        // amdgpu_device_gpu_recover: user space loses the doorbells and
        // the MMIO page before the GPU halts.
        t.kfd.power(P::ClearMappings)?;
        t.kfd.power(P::PreReset)?;
        // SAFETY: By the type invariant the `Kgd` is live while `t` is set,
        // and `t` stays set while the guard is held.
        let kgd = unsafe { t.kgd.as_ref() };
        kgd.cp_reset();
        kgd.mes_reset();
        if let Err(e) = kgd.engine().reset() {
            pr_err!("GPU {}: resetting the engines failed: {:?}\n", self.index, e);
        }
        t.kfd.power(P::PostReset)
    }

    /// hwmon `vgpu_power` (read): rkfd's `kgd2kfd_compute_active`.
    pub(crate) fn compute_active(&self) -> Result<bool> {
        Ok(self.power.lock().as_ref().ok_or(ENODEV)?.kfd.compute_active())
    }

    /// Where throttling is reported (`None`: nowhere, the device is going).
    fn set_throttle_target(&self, kfd: Option<kabi::KfdIrq>) {
        self.throttle.lock().kfd = kfd;
    }

    /// The system memory accounts.
    pub(crate) fn sysmem(&self) -> &Arc<SystemMemory> {
        &self.sysmem
    }

    /// Takes a free mmap offset slot.
    pub(crate) fn alloc_offset(self: &Arc<Self>) -> Result<OffsetSlot> {
        let mut ids = self.offsets.lock();
        loop {
            if let Some(unused) = ids.find_unused_id(0) {
                if unused.as_usize() >= MAX_OBJECTS {
                    return Err(ENOSPC);
                }
                let id = unused.acquire();
                return Ok(OffsetSlot {
                    core: self.clone(),
                    id,
                });
            }
            // Sleeping allocation under a mutex is fine; it is a leaf lock.
            let resizer = ids.grow_request().ok_or(ENOSPC)?.realloc(GFP_KERNEL)?;
            ids.grow(resizer);
        }
    }
}

/// A memory object's render-node mmap offset slot; freed on drop.
pub(crate) struct OffsetSlot {
    /// The GPU whose offset space it is in.
    core: Arc<Core>,
    /// The slot.
    id: usize,
}

impl OffsetSlot {
    /// The first page offset (`vm_pgoff`) of the slot.
    pub(crate) fn pgoff(&self) -> u64 {
        (self.id as u64 + 1) << (OFFSET_SLOT_SHIFT - kernel::page::PAGE_SHIFT as u32)
    }

    /// The first byte offset of the slot, what `mmap()` is called with.
    pub(crate) fn offset(&self) -> u64 {
        (self.id as u64 + 1) << OFFSET_SLOT_SHIFT
    }

    /// The GPU whose offset space it is in.
    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// Whether the slot is in `gpu`'s offset space.
    pub(crate) fn is_on(&self, gpu: &Core) -> bool {
        core::ptr::eq(&*self.core, gpu)
    }
}

impl Drop for OffsetSlot {
    fn drop(&mut self) {
        self.core.offsets.lock().release_id(self.id);
    }
}

/// The render node's callbacks ([`kabi::Devices`] calls them): every open
/// file gets its own VM, as `amdgpu_driver_open_kms` does, and its mmap
/// maps that VM's memory objects.
impl kabi::RenderNode for Core {
    type File = Vm;
    type Mem = Mem;

    fn open(core: ArcBorrow<'_, Core>) -> Result<Arc<Vm>> {
        Vm::new(core.into())
    }

    fn mmap(vm: ArcBorrow<'_, Vm>, pgoff: u64, npages: u64) -> Result<Arc<Mem>> {
        vm.mmap_lookup(pgoff, npages)
    }

    fn mem_page(mem: &Mem, pgoff: u64) -> Option<&Page> {
        mem.page_at(pgoff)
    }

    fn mem_access(mem: &Mem, offset: u64, buf: &mut [u8], write: bool) -> Result {
        if write {
            mem.cpu_write(offset, buf)
        } else {
            mem.cpu_read(offset, buf)
        }
    }

    fn vram_used(&self) -> u64 {
        self.vram().used()
    }

    fn gtt_used(&self) -> u64 {
        // The module's one GTT account (amdgpu's is per device).
        self.sysmem().gtt_used()
    }

    fn clock_counter(&self) -> u64 {
        Core::clock_counter(self)
    }

    fn throttle(&self, bitmask: u64) {
        self.raise_throttle(bitmask);
    }

    fn power(&self, op: &[u8]) -> Result {
        self.power_op(op)
    }

    fn compute_active(&self) -> Result<bool> {
        Core::compute_active(self)
    }

    fn gpu_access(vm: ArcBorrow<'_, Vm>, va: u64, size: u64, buf: u64, write: bool, faults: &mut u32) -> Result {
        vm.gpu_access(va, size, buf, write, faults)
    }

    fn gem_create(core: ArcBorrow<'_, Core>, size: u64, vram: bool) -> Result<(Arc<Mem>, u64)> {
        let mem = Mem::new_gem(&core.into(), size, vram)?;
        let offset = mem.mmap_offset();
        Ok((mem, offset))
    }

    fn mem_cpu_map(mem: &Mem, npages: u64) -> Result {
        mem.check_cpu_map(npages)
    }
}

/// Creates the devices of `core` (parent device, render node, sysfs,
/// hwmon), showing what its profile says.
fn create_devices(core: &Arc<Core>) -> Result<kabi::Devices<Core>> {
    let profile = core.profile();
    let name = CString::try_from_fmt(fmt!("0000:{:02x}:00.0", core.bus()))?;
    let vbios = CString::try_from_fmt(fmt!("rkfd-vgpu-{}", profile.name))?;
    let info = kabi::DeviceInfo {
        name: &name,
        vbios_version: &vbios,
        vendor_id: 0x1002,
        device_id: profile.device_id,
        unique_id: profile.unique_id(core.index()),
        vram_total: core.vram().size(),
        sclk_mhz: profile.max_engine_clk_mhz,
        mclk_mhz: profile.mem_clk_max_mhz,
        temp_mdeg: 45_000,
        vddgfx_mv: profile.vddgfx_mv,
        power_avg_uw: profile.idle_power_w * 1_000_000,
        power_cap_uw: profile.power_cap_w * 1_000_000,
        amdgpu: kabi::AmdgpuInfo {
            family: profile.amdgpu.family,
            chip_rev: profile.amdgpu.rev_id,
            external_rev: profile.amdgpu.external_rev,
            pci_rev: profile.pci_rev,
            gc_ip: profile.amdgpu.gc_ip,
            sdma_ip: profile.amdgpu.sdma_ip,
            num_shader_engines: profile.num_shader_engines,
            sh_per_se: profile.sh_per_se,
            cu_per_sh: profile.cu_per_sh,
            wave_front_size: profile.wave_front_size,
            vram_type: profile.amdgpu.vram_type,
            vram_bit_width: profile.vram_width,
            // gfx_v9_0.c / gfx_v10_0.c: 32 KiB; GFX 11 has no constant engine.
            ce_ram_size: if profile.amdgpu.gc_ip >> 16 >= 11 { 0 } else { 0x8000 },
            gb_addr_config: profile.gb_addr_config(),
            mec_fw_version: profile.fw_version,
            sdma_fw_version: profile.sdma_fw_version,
            // Every SDMA instance of the part (PCIe and XGMI engines).
            num_sdma: profile.num_sdma_engines + profile.num_sdma_xgmi_engines,
            apu: profile.apu,
            gtt_size: core.sysmem().gtt_limit(),
        },
    };
    kabi::Devices::create(core, &info)
}

/// What rkfd's `struct kgd_dev *` handle and the devices' callbacks point
/// at.  Never moves and never changes once rkfd knows it.
pub(crate) struct Kgd {
    /// The devices: destroyed before `core` is released (field order).
    devices: kabi::Devices<Core>,
    /// The GPU.
    core: Arc<Core>,
    /// The scheduler and engines (hardware queues).
    engine: EngineHandle,
    /// The hardware queue slots (HQDs, SDMA RLC queues) and the queues
    /// loaded into them.  Lock order: 0 (`vgpu/amdgpu_main.rs`).
    hqds: Pin<KBox<Mutex<crate::mqd::Slots>>>,
    /// The kernel address space (`alloc_gtt_mem`).  Its lock is a leaf
    /// (`vgpu/amdgpu_main.rs`, 10).
    gart: Pin<KBox<crate::gart::Gart>>,
    /// The CP's hardware scheduler and its HIQ (`crate::cp`).  Lock order:
    /// outermost (`vgpu/amdgpu_main.rs`, entry -1): taken by
    /// `hiq_mqd_load`, `ring_kernel_doorbell`, `hws_hang` and `gpu_reset`
    /// with no other lock of this driver held; the engines' locks (1, 2),
    /// the GART's (10) and the PASID table (11) are taken under it; rkfd
    /// is called only after it is released.  Unmapping a queue under it
    /// waits for the engine's quantum (2), never for a retry fault: the
    /// engines release a queue before they raise one.
    cp: Pin<KBox<Mutex<crate::cp::CpState>>>,
    /// The MES firmware's queues (`crate::mes`, GFX11 profiles).  Lock
    /// order: beside `cp` (`vgpu/amdgpu_main.rs`, entry -1), never nested
    /// with it: taken by the kfd2kgd `mes_*` calls and `gpu_reset` with no
    /// other lock of this driver held; the engines' locks, the GART's and
    /// the PASID table are taken under it.
    mes: Pin<KBox<Mutex<crate::mes::MesState>>>,
}

impl Kgd {
    /// The devices.
    pub(crate) fn devices(&self) -> &kabi::Devices<Core> {
        &self.devices
    }

    /// The GPU.
    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// The scheduler and engines.
    pub(crate) fn engine(&self) -> &Engines {
        self.engine.engine()
    }

    /// The hardware queue slots.
    pub(crate) fn hqds(&self) -> &Mutex<crate::mqd::Slots> {
        &self.hqds
    }

    /// The kernel address space.
    pub(crate) fn gart(&self) -> &crate::gart::Gart {
        &self.gart
    }

    /// The CP's scheduler.
    pub(crate) fn cp(&self) -> &Mutex<crate::cp::CpState> {
        &self.cp
    }

    /// The MES firmware's queues.
    pub(crate) fn mes(&self) -> &Mutex<crate::mes::MesState> {
        &self.mes
    }
}

/// A registered virtual GPU.  Dropping it removes it from rkfd, then
/// destroys its devices.
pub(crate) struct Gpu {
    /// The CP firmware's quantum timer (`crate::cp::QuantumTimer`), which
    /// uses `_kgd`: stopped first in `drop`.
    quantum: Option<kabi::Thread>,
    /// rkfd's device: removed first (field order), after which rkfd makes
    /// no further call with the `kgd` handle.
    _kfd: kabi::KfdDevice,
    /// The handle rkfd holds; boxed so that its address is stable.
    _kgd: KBox<Kgd>,
}

impl Kgd {
    /// Creates GPU `index` of `profile`: its state and its devices, not yet
    /// known to rkfd.
    pub(crate) fn new(
        profile: &'static Profile,
        index: u32,
        vram_size: u64,
        sysmem: &Arc<SystemMemory>,
    ) -> Result<KBox<Self>> {
        let core = Core::new(profile, index, vram_size, sysmem)?;
        let devices = create_devices(&core)?;
        let engine = EngineHandle::start(&core)?;
        let hqds = KBox::pin_init(kernel::new_mutex!(crate::mqd::Slots::new(profile)?, "Kgd::hqds"), GFP_KERNEL)?;
        let gart = KBox::pin_init(crate::gart::Gart::new(), GFP_KERNEL)?;
        let cp = KBox::pin_init(kernel::new_mutex!(crate::cp::CpState::new(profile.gfx)?, "Kgd::cp"), GFP_KERNEL)?;
        let mes = KBox::pin_init(kernel::new_mutex!(crate::mes::MesState::new(), "Kgd::mes"), GFP_KERNEL)?;
        Ok(KBox::new(
            Kgd {
                devices,
                core,
                engine,
                hqds,
                gart,
                cp,
                mes,
            },
            GFP_KERNEL,
        )?)
    }
}

impl Gpu {
    /// Registers a GPU with rkfd (probe, then init).
    pub(crate) fn register(kgd: KBox<Kgd>, module: &'static ThisModule) -> Result<Self> {
        let core = &kgd.core;
        // The firmware's quantum timer, first: on an error below it stops
        // (dropped) before `kgd` goes.
        // SAFETY: `kgd` is boxed, never moved out of, and dropped only after
        // the thread stopped: here on an error (locals drop in reverse
        // order), else in `Gpu::drop`, which takes `quantum` first.
        let timer = Arc::new(unsafe { crate::cp::QuantumTimer::new(&kgd) }, GFP_KERNEL)?;
        let quantum = kabi::Thread::start(timer, c"cp", core.index(), 0)?;
        let info = crate::kfd2kgd::gpu_info(&kgd)?;
        // SAFETY: `kgd` is boxed, never moved out of or changed, and is
        // dropped only after the returned device (field order of `Gpu`).
        let kfd = unsafe { kabi::KfdDevice::register(&*kgd, module, info) }
            .inspect_err(|e| pr_err!("GPU {}: rkfd refused the device: {:?}\n", core.index(), e))?;
        // Retry faults name the device by it.
        core.set_kfd(kfd.irq());
        let profile = core.profile();
        let msg = CString::try_from_fmt(fmt!(
            "virtual {} ({}), {} CUs, {} MiB VRAM, renderD{}",
            profile.name,
            profile.product,
            profile.cu_count(),
            core.vram().size() >> 20,
            kgd.devices.render_minor()
        ))?;
        kgd.devices.log(&msg);
        kgd.engine.set_kfd(kfd.irq());
        kgd.core.set_throttle_target(Some(kfd.irq()));
        // INVARIANT: `Gpu::drop` clears it before `kgd` goes.
        *kgd.core.power.lock() = Some(PowerTarget { kfd: kfd.irq(), kgd: core::ptr::NonNull::from(&*kgd) });
        Ok(Gpu {
            quantum: Some(quantum),
            _kfd: kfd,
            _kgd: kgd,
        })
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // No suspend, resume or reset any more: one under way ends first.
        *self._kgd.core.power.lock() = None;
        // The quantum timer stops before anything it uses goes.
        drop(self.quantum.take());
        // The engine thread stops (and stops raising interrupts) before
        // rkfd removes the device; so do throttling reports.
        self._kgd.engine.shutdown();
        self._kgd.core.set_throttle_target(None);
    }
}

#[kunit_tests(amdgpu_vgpu_core)]
mod tests {
    use super::*;
    use crate::profile::PROFILES;

    /// Every VM gets its own PASID when it is created, from one table for
    /// every GPU (amdgpu_pasid_alloc): VMs of two GPUs never share one, a
    /// freed PASID is not handed out again at once (cyclic), and acquiring
    /// the VM for a KFD process makes the CP find it by that PASID.
    #[test]
    fn vms_have_their_own_driver_wide_pasids() -> Result {
        let sysmem = SystemMemory::new()?;
        let (c0, c1) = (Core::new(&PROFILES[0], 7, 1 << 20, &sysmem)?, Core::new(&PROFILES[0], 8, 1 << 20, &sysmem)?);
        let (a, b) = (crate::vm::Vm::new(c0.clone())?, crate::vm::Vm::new(c1.clone())?);
        let (pa, pb) = (a.pasid(), b.pasid());
        assert!(pa != 0 && pb != 0 && pa != pb && pa < 1 << 16 && pb < 1 << 16);
        drop(a);
        let a2 = crate::vm::Vm::new(c0.clone())?;
        assert!(a2.pasid() != pa && a2.pasid() != pb);
        // Only an acquired VM is found by its PASID (and only on its GPU).
        assert!(c0.vm_of_pasid(a2.pasid()).is_none());
        c0.add_kfd_vm(&a2)?;
        c1.add_kfd_vm(&b)?;
        assert!(c0.vm_of_pasid(a2.pasid()).is_some_and(|v| Arc::ptr_eq(&v, &a2)));
        assert!(c0.vm_of_pasid(pb).is_none());
        assert!(c1.vm_of_pasid(a2.pasid()).is_none());
        c0.remove_kfd_vm(&a2);
        c1.remove_kfd_vm(&b);
        assert!(c0.vm_of_pasid(a2.pasid()).is_none());
        Ok(())
    }

    #[test]
    fn offsets_are_unique_and_reused() -> Result {
        let core = Core::new(&PROFILES[0], 7, 1 << 20, &SystemMemory::new()?)?;
        let a = core.alloc_offset()?;
        let b = core.alloc_offset()?;
        assert!(a.offset() != b.offset());
        assert!(a.offset() >= 1 << OFFSET_SLOT_SHIFT);
        assert_eq!(a.offset() >> kernel::page::PAGE_SHIFT, a.pgoff());
        let a_off = a.offset();
        drop(a);
        let c = core.alloc_offset()?;
        assert_eq!(c.offset(), a_off);
        // More than the inline bitmap holds: the pool grows.
        let mut many = KVec::new();
        for _ in 0..200 {
            many.push(core.alloc_offset()?, GFP_KERNEL)?;
        }
        assert!(many
            .iter()
            .all(|s| s.offset() != b.offset() && s.offset() != c.offset()));
        Ok(())
    }

    #[test]
    fn clock_counter_is_monotonic() -> Result {
        let core = Core::new(&PROFILES[0], 7, 1 << 20, &SystemMemory::new()?)?;
        let a = core.clock_counter();
        kernel::time::delay::fsleep(kernel::time::Delta::from_micros(100));
        let b = core.clock_counter();
        // 100 µs at 100 MHz is 10000 ticks.
        assert!(b >= a + 10_000);
        assert_eq!(core.location_id(), 0xc800);
        Ok(())
    }
}

#[kunit_tests(amdgpu_vgpu_render)]
mod render_tests {
    use super::*;
    use crate::{
        kabi::testing::TestFile,
        mem::AllocRequest,
        profile::PROFILES,
        uapi, //
    };
    use kernel::page::PAGE_SIZE;

    const PAGE: u64 = PAGE_SIZE as u64;
    const W: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    const GTT: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT | W;
    const VRAM: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM | W;
    const USERPTR: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | W;

    /// A GPU with devices but no rkfd registration.  Indices from 0x30 up
    /// keep the test devices' names (0000:f1:00.0, ...) clear of real GPUs'.
    fn gpu(index: u32, vram_pages: u64) -> Result<(Arc<Core>, kabi::Devices<Core>)> {
        let core = Core::new(
            &PROFILES[0],
            index,
            vram_pages * PAGE,
            &SystemMemory::new()?,
        )?;
        let devs = create_devices(&core)?;
        Ok((core, devs))
    }

    fn open_render(devs: &kabi::Devices<Core>) -> Result<TestFile> {
        TestFile::open(&CString::try_from_fmt(fmt!(
            "dri/renderD{}",
            devs.render_minor()
        ))?)
    }

    fn is(r: Result<impl Sized>, errno: Error) -> bool {
        matches!(r, Err(e) if e == errno)
    }

    #[test]
    fn acquire_vm_takes_only_our_render_node() -> Result {
        let (_core, devs) = gpu(0x30, 16)?;
        let (_core2, devs2) = gpu(0x31, 16)?;
        let f = open_render(&devs)?;
        let vm = f.vm_of(&devs)?;
        // The same file again: the same VM.
        assert!(Arc::ptr_eq(&vm, &f.vm_of(&devs)?));
        // Another open file of the node: its own VM.
        let g = open_render(&devs)?;
        assert!(!Arc::ptr_eq(&vm, &g.vm_of(&devs)?));
        // Another GPU's render node, our primary node, a non-DRM file.
        assert!(is(f.vm_of(&devs2), EINVAL));
        let card = TestFile::open(&CString::try_from_fmt(fmt!(
            "dri/card{}",
            devs.primary_minor()
        ))?)?;
        assert!(is(card.vm_of(&devs), EINVAL));
        let null = TestFile::open(c"null")?;
        assert!(is(null.vm_of(&devs), EINVAL));
        // renderD128 is vgem (built in) or the module's first GPU: not ours.
        assert!(devs.render_minor() != 128);
        let other = TestFile::open(c"dri/renderD128")?;
        assert!(is(other.vm_of(&devs), EINVAL));
        Ok(())
    }

    #[test]
    fn render_node_maps_objects() -> Result {
        let (core, devs) = gpu(0x32, 16)?;
        let f = open_render(&devs)?;
        let vm = f.vm_of(&devs)?;
        // User pointers pin real memory of the test's mm.
        let user_mem = crate::kabi::testing::UserMap::anon(PAGE_SIZE, true)?;
        let req = |va, pages, flags| AllocRequest {
            va,
            size: pages * PAGE,
            user_addr: user_mem.addr(),
            flags,
        };
        let gtt = vm.alloc(&req(0x10000, 2, GTT))?;
        let vram = vm.alloc(&req(0x100000, 4, VRAM))?;
        let user = vm.alloc(&req(0x200000, 1, USERPTR))?;
        let mut buf = [0u8; 8];

        // GTT, MAP_SHARED read-write: the kernel mapping (the event page)
        // sees what user space writes.
        let m1 = f.mmap(gtt.mmap_offset(), 2 * PAGE_SIZE, true, true)?;
        m1.write(PAGE_SIZE + 8, b"vgpu-gtt")?;
        let k = gtt.kernel_map()?.cast::<u8>();
        // SAFETY: `k` maps the object's 2 pages while `gtt` is alive.
        let seen = unsafe { core::slice::from_raw_parts(k.add(PAGE_SIZE + 8), 8) };
        assert!(seen == b"vgpu-gtt");
        // Two mappings of one offset share the pages.
        let m2 = f.mmap(gtt.mmap_offset(), 2 * PAGE_SIZE, true, true)?;
        m2.read(PAGE_SIZE + 8, &mut buf)?;
        assert!(&buf == b"vgpu-gtt");
        m2.write(0, b"second!!")?;
        m1.read(0, &mut buf)?;
        assert!(&buf == b"second!!");

        // VRAM: PROT_NONE + MAP_PRIVATE, as libhsakmt maps VRAM the host
        // cannot see, works and stays inaccessible; other private mappings
        // are refused; MAP_SHARED read-write works.
        let none = f.mmap(vram.mmap_offset(), 4 * PAGE_SIZE, false, false)?;
        assert!(is(none.read(0, &mut buf), EFAULT));
        assert!(is(
            f.mmap(vram.mmap_offset(), 4 * PAGE_SIZE, true, false),
            EINVAL
        ));
        let rw = f.mmap(vram.mmap_offset(), 4 * PAGE_SIZE, true, true)?;
        rw.write(3 * PAGE_SIZE, b"vram-rw!")?;
        rw.read(3 * PAGE_SIZE, &mut buf)?;
        assert!(&buf == b"vram-rw!");
        // Splitting the mapping: the rest still works.
        rw.punch(PAGE_SIZE, PAGE_SIZE)?;
        rw.read(3 * PAGE_SIZE, &mut buf)?;
        assert!(&buf == b"vram-rw!");
        assert!(is(rw.read(PAGE_SIZE, &mut buf), EFAULT));

        // Offsets that are no object's start, too long, user pointers.
        assert!(is(f.mmap(0, PAGE_SIZE, true, true), EINVAL));
        assert!(is(
            f.mmap(vram.mmap_offset() + PAGE, PAGE_SIZE, true, true),
            EINVAL
        ));
        assert!(is(
            f.mmap(vram.mmap_offset(), 5 * PAGE_SIZE, true, true),
            EINVAL
        ));
        assert!(is(f.mmap(user.mmap_offset(), PAGE_SIZE, true, true), EPERM));
        // Another file of the node has its own VM: not its objects.
        let g = open_render(&devs)?;
        assert!(is(
            g.mmap(vram.mmap_offset(), PAGE_SIZE, true, true),
            EINVAL
        ));

        // A freed object cannot be mapped again; its mappings keep working.
        let gtt_offset = gtt.mmap_offset();
        vm.free(gtt)?;
        assert!(is(f.mmap(gtt_offset, PAGE_SIZE, true, true), EINVAL));
        m1.read(PAGE_SIZE + 8, &mut buf)?;
        assert!(&buf == b"vgpu-gtt");

        // VRAM stays allocated until its last mapping goes away.
        vm.free(vram)?;
        vm.free(user)?;
        assert_eq!(core.vram().used(), 4 * PAGE);
        drop((none, rw));
        assert_eq!(core.vram().used(), 0);
        drop((m1, m2));
        assert_eq!(core.sysmem().gtt_used(), 0);
        Ok(())
    }
}
