// SPDX-License-Identifier: GPL-2.0 OR MIT

//! User-mode queue rules, free of kernel types: argument validation,
//! queue and doorbell slot assignment, SDMA queue assignment, CU masks.
//!
//! C: `set_queue_properties_from_user`, `kfd_ioctl_create_queue`,
//! `kfd_ioctl_update_queue`, `kfd_ioctl_set_cu_mask` (`kfd_chardev.c`),
//! `kfd_queue_acquire_buffers` (`kfd_queue.c`), `pqm_create_queue` and
//! `find_available_queue_slot` (`kfd_process_queue_manager.c`),
//! `allocate_doorbell` and `allocate_sdma_queue`
//! (`kfd_device_queue_manager.c`), `init_doorbell_bitmap`
//! (`kfd_doorbell.c`) and the SOC15 doorbell layouts (`amdgpu_doorbell.h`).
//!
//! Shared by the host crate (`cargo test`) and rkfd.ko (`src/queue.rs`
//! includes it with `#[path]`), so it uses `core` only.  Errors are
//! [`Errno`] values the kernel side maps to its own error type.  What
//! differs between GPU generations is asked of [`GfxVersion`] (`crate::gfx`,
//! which rkfd.ko includes at its crate root).

use crate::gfx::GfxVersion;

/// The errno a rule answers (the kernel maps each to `-E...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Errno {
    /// `-EINVAL`
    Inval,
    /// `-EFAULT`
    Fault,
    /// `-ENOTSUPP` (524; upstream returns it for an unknown queue type)
    NotSupp,
    /// `-ENOSPC`
    NoSpc,
    /// `-ENOMEM`
    NoMem,
    /// `-EBUSY`
    Busy,
}

/// `KFD_MAX_QUEUE_PERCENTAGE`.
pub const MAX_QUEUE_PERCENTAGE: u32 = 100;
/// `KFD_MAX_QUEUE_PRIORITY`.
pub const MAX_QUEUE_PRIORITY: u32 = 15;
/// `KFD_MIN_QUEUE_RING_SIZE`: smaller rings are clamped up to this.
pub const MIN_QUEUE_RING_SIZE: u32 = 1024;
/// `KFD_MAX_NUM_OF_QUEUES_PER_PROCESS`: queue ids and doorbells per process
/// and device.
pub const MAX_QUEUES_PER_PROCESS: u32 = 1024;
/// `KFD_QUEUE_DOORBELL_MIRROR_OFFSET`: SOC15 routes doorbell `i` and
/// `i + 512` alike.
pub const DOORBELL_MIRROR_OFFSET: u32 = 512;
/// Bytes of one SOC15 doorbell.
pub const DOORBELL_SIZE: u32 = 8;
/// `KFD_MMAP_TYPE_DOORBELL`.
pub const MMAP_TYPE_DOORBELL: u64 = 0x3 << 62;
/// `KFD_MMAP_GPU_ID_SHIFT`.
pub const MMAP_GPU_ID_SHIFT: u32 = 46;
/// Most CU mask bits SET_CU_MASK keeps (upstream `max_num_cus`).
pub const MAX_CU_MASK_BITS: u32 = 1024;
/// EOP buffer size topology implies for GFX8+ (`eop_buffer_size`, 4096
/// except Tonga).
pub const EOP_BUFFER_SIZE: u64 = 4096;

/// `KFD_MMAP_GPU_ID(gpu_id)`.
pub const fn mmap_gpu_id(gpu_id: u32) -> u64 {
    ((gpu_id as u64) & 0xffff) << MMAP_GPU_ID_SHIFT
}

/// The uapi queue types (`KFD_IOC_QUEUE_TYPE_*`).
pub const IOC_QUEUE_TYPE_COMPUTE: u32 = 0;
/// `KFD_IOC_QUEUE_TYPE_SDMA`.
pub const IOC_QUEUE_TYPE_SDMA: u32 = 1;
/// `KFD_IOC_QUEUE_TYPE_COMPUTE_AQL`.
pub const IOC_QUEUE_TYPE_COMPUTE_AQL: u32 = 2;
/// `KFD_IOC_QUEUE_TYPE_SDMA_XGMI`.
pub const IOC_QUEUE_TYPE_SDMA_XGMI: u32 = 3;
/// `KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID`.
pub const IOC_QUEUE_TYPE_SDMA_BY_ENG_ID: u32 = 4;

/// Internal queue type (C: `enum kfd_queue_type`; its value is what
/// `proc/<pid>/queues/<qid>/type` prints).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueType {
    /// `KFD_QUEUE_TYPE_COMPUTE` (0), PM4 or AQL.
    Compute = 0,
    /// `KFD_QUEUE_TYPE_SDMA` (1).
    Sdma = 1,
    /// `KFD_QUEUE_TYPE_SDMA_XGMI` (3).
    SdmaXgmi = 3,
    /// `KFD_QUEUE_TYPE_SDMA_BY_ENG_ID` (4), before an engine is assigned.
    SdmaByEngId = 4,
}

impl QueueType {
    /// Whether it is an SDMA type.
    pub fn is_sdma(self) -> bool {
        !matches!(self, QueueType::Compute)
    }
}

/// The user's CREATE_QUEUE arguments the rules look at.
#[derive(Clone, Copy, Debug, Default)]
pub struct CreateArgs {
    pub ring_base: u64,
    pub wptr: u64,
    pub rptr: u64,
    pub ring_size: u32,
    pub queue_type: u32,
    pub percentage: u32,
    pub priority: u32,
    pub eop_address: u64,
    pub eop_size: u64,
    pub ctx_save_address: u64,
    pub ctx_save_size: u32,
    pub ctl_stack_size: u32,
    pub sdma_engine_id: u32,
    pub metadata_ring_size: u32,
}

/// Validated queue properties (C: `struct queue_properties`, the parts set
/// from user arguments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Properties {
    pub queue_type: QueueType,
    /// `KFD_QUEUE_FORMAT_AQL` (else PM4).
    pub aql: bool,
    /// Bits 0-7 of `queue_percentage`.
    pub percentage: u32,
    /// Bits 8-15 of `queue_percentage` (`pm4_target_xcc`).
    pub pm4_target_xcc: u32,
    pub priority: u32,
    pub ring_base: u64,
    /// Bytes, after clamping to [`MIN_QUEUE_RING_SIZE`].
    pub ring_size: u64,
    /// AQL only (0 otherwise).
    pub metadata_ring_size: u64,
    pub rptr: u64,
    pub wptr: u64,
    pub eop_address: u64,
    pub eop_size: u64,
    pub ctx_save_address: u64,
    pub ctx_save_size: u32,
    pub ctl_stack_size: u32,
    pub sdma_engine_id: u32,
    /// Its process's queues are evicted on its device (C:
    /// `q->properties.is_evicted`): set for every queue of the process and
    /// device while an eviction is in force (`qpd->evicted`, rkfd:
    /// `amdgpu-hw`'s `dqm::Evictions`), including queues created or
    /// updated meanwhile.
    pub is_evicted: bool,
}

impl Properties {
    /// Whether the scheduler serves the queue (C: `QUEUE_IS_ACTIVE`): a
    /// ring, a size, a non-zero percentage, and not evicted.
    pub fn is_active(&self) -> bool {
        self.ring_size > 0 && self.ring_base != 0 && self.percentage > 0 && !self.is_evicted
    }
}

/// `access_ok(addr, size)` against the user address limit `limit`
/// (x86-64: `TASK_SIZE_MAX`).
pub fn access_ok(addr: u64, size: u64, limit: u64) -> bool {
    size <= limit && addr <= limit - size
}

/// The uapi type to the internal type and format (`-ENOTSUPP` otherwise).
pub fn queue_type(ioc_type: u32) -> Result<(QueueType, bool), Errno> {
    match ioc_type {
        IOC_QUEUE_TYPE_COMPUTE => Ok((QueueType::Compute, false)),
        IOC_QUEUE_TYPE_COMPUTE_AQL => Ok((QueueType::Compute, true)),
        IOC_QUEUE_TYPE_SDMA => Ok((QueueType::Sdma, false)),
        IOC_QUEUE_TYPE_SDMA_XGMI => Ok((QueueType::SdmaXgmi, false)),
        IOC_QUEUE_TYPE_SDMA_BY_ENG_ID => Ok((QueueType::SdmaByEngId, false)),
        _ => Err(Errno::NotSupp),
    }
}

/// Checks ring base and size and clamps the size as upstream (shared by
/// CREATE_QUEUE and UPDATE_QUEUE).
fn check_ring(ring_base: u64, ring_size: u32, limit: u64) -> Result<u64, Errno> {
    if ring_base != 0 && !access_ok(ring_base, 8, limit) {
        return Err(Errno::Fault);
    }
    if ring_size != 0 && !ring_size.is_power_of_two() {
        return Err(Errno::Inval);
    }
    Ok(u64::from(ring_size.max(MIN_QUEUE_RING_SIZE)))
}

/// Checks percentage and priority (shared by CREATE_QUEUE and UPDATE_QUEUE).
fn check_shares(percentage: u32, priority: u32) -> Result<(), Errno> {
    if percentage & 0xff > MAX_QUEUE_PERCENTAGE || priority > MAX_QUEUE_PRIORITY {
        return Err(Errno::Inval);
    }
    Ok(())
}

/// C: `set_queue_properties_from_user`, in upstream's order.  `limit` is
/// the user address limit for `access_ok`.
pub fn properties_from_user(a: &CreateArgs, limit: u64) -> Result<Properties, Errno> {
    check_shares(a.percentage, a.priority)?;
    let ring_size = check_ring(a.ring_base, a.ring_size, limit)?;
    if a.metadata_ring_size != 0 && !a.metadata_ring_size.is_power_of_two() {
        return Err(Errno::Inval);
    }
    if !access_ok(a.rptr, 4, limit) || !access_ok(a.wptr, 4, limit) {
        return Err(Errno::Fault);
    }
    if a.eop_address != 0 && !access_ok(a.eop_address, 4, limit) {
        return Err(Errno::Fault);
    }
    if a.ctx_save_address != 0 && !access_ok(a.ctx_save_address, 4, limit) {
        return Err(Errno::Fault);
    }
    let (queue_type, aql) = queue_type(a.queue_type)?;
    Ok(Properties {
        queue_type,
        aql,
        percentage: a.percentage & 0xff,
        pm4_target_xcc: (a.percentage >> 8) & 0xff,
        priority: a.priority,
        ring_base: a.ring_base,
        ring_size,
        metadata_ring_size: if aql { u64::from(a.metadata_ring_size) } else { 0 },
        rptr: a.rptr,
        wptr: a.wptr,
        eop_address: a.eop_address,
        eop_size: a.eop_size,
        ctx_save_address: a.ctx_save_address,
        ctx_save_size: a.ctx_save_size,
        ctl_stack_size: a.ctl_stack_size,
        sdma_engine_id: a.sdma_engine_id,
        is_evicted: false,
    })
}

/// UPDATE_QUEUE's checks (C: `kfd_ioctl_update_queue`): returns the clamped
/// ring size.
pub fn check_update(ring_base: u64, ring_size: u32, percentage: u32, priority: u32, limit: u64) -> Result<u64, Errno> {
    check_shares(percentage, priority)?;
    check_ring(ring_base, ring_size, limit)
}

/// What the device advertises that queue buffers are checked against.
#[derive(Clone, Copy, Debug)]
pub struct DeviceLimits {
    /// The GPU's generation.
    pub gfx: GfxVersion,
    /// Topology `cwsr_size`.
    pub cwsr_size: u32,
    /// Topology `ctl_stack_size`.
    pub ctl_stack_size: u32,
    pub num_sdma_engines: u32,
    pub num_sdma_xgmi_engines: u32,
    pub num_sdma_queues_per_engine: u32,
}

impl DeviceLimits {
    /// Queues a process may have on the device (C: `pqm_create_queue`'s
    /// `max_queues`).
    pub fn max_queues_per_process(&self) -> u32 {
        self.gfx.max_queues_per_process()
    }

    /// Highest `sdma_engine_id` SDMA_BY_ENG_ID accepts, if any engine.
    pub fn max_sdma_engine_id(&self) -> Option<u32> {
        (self.num_sdma_engines + self.num_sdma_xgmi_engines).checked_sub(1)
    }

    /// First and last doorbell index reserved for SDMA/IH/VCN
    /// (`doorbell_index.first_non_cp` / `last_non_cp`).
    pub fn non_cp_doorbells(&self) -> (u32, u32) {
        self.gfx.doorbell_layout().non_cp()
    }

    /// Doorbell index of SDMA engine `engine`'s first queue
    /// (`doorbell_index.sdma_engine[]`).
    pub fn sdma_engine_doorbell_base(&self, engine: u32) -> u32 {
        self.gfx.doorbell_layout().sdma_engine_base(engine)
    }
}

/// One buffer a queue needs: where, how many bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub va: u64,
    pub size: u64,
    pub what: BufferKind,
}

/// Which queue buffer (for messages and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferKind {
    Wptr,
    Rptr,
    Ring,
    Eop,
    CtxSave,
}

/// Size rounded up to 4 KiB pages.
fn page_align(x: u64) -> Option<u64> {
    x.checked_add(0xfff).map(|v| v & !0xfff)
}

/// C: `kfd_queue_acquire_buffers`' size checks: the buffers a queue must
/// find mapped in its GPU VM, in upstream's order, or the size error.
///
/// Upstream wants each address to start a GPU mapping of exactly the
/// expected size; ROCm 5.2.3 (which predates that check) places the read
/// and write pointers inside a larger object, so the caller checks that
/// each buffer lies *inside* one mapped object (see `src/queue.rs`).
pub fn required_buffers(p: &Properties, d: &DeviceLimits, out: &mut [Option<Buffer>; 5]) -> Result<(), Errno> {
    *out = [None; 5];
    out[0] = Some(Buffer { va: p.wptr, size: 8, what: BufferKind::Wptr });
    out[1] = Some(Buffer { va: p.rptr, size: 8, what: BufferKind::Rptr });
    let ring = p.ring_size.checked_add(p.metadata_ring_size).ok_or(Errno::Inval)?;
    out[2] = Some(Buffer { va: p.ring_base, size: ring, what: BufferKind::Ring });
    if p.queue_type != QueueType::Compute {
        return Ok(());
    }
    if p.eop_address != 0 {
        if p.eop_size < EOP_BUFFER_SIZE {
            return Err(Errno::Inval);
        }
        out[3] = Some(Buffer { va: p.eop_address, size: page_align(p.eop_size).ok_or(Errno::Inval)?, what: BufferKind::Eop });
    }
    if p.ctl_stack_size != d.ctl_stack_size || p.ctx_save_size < d.cwsr_size {
        return Err(Errno::Inval);
    }
    out[4] = Some(Buffer {
        va: p.ctx_save_address,
        size: page_align(u64::from(p.ctx_save_size)).ok_or(Errno::Inval)?,
        what: BufferKind::CtxSave,
    });
    Ok(())
}

/// Whether `[va, va + size)` lies inside an object mapped at
/// `[obj_va, obj_va + obj_size)`.
pub fn inside(va: u64, size: u64, obj_va: u64, obj_size: u64) -> bool {
    match (va.checked_add(size), obj_va.checked_add(obj_size)) {
        (Some(end), Some(obj_end)) => va >= obj_va && end <= obj_end,
        _ => false,
    }
}

/// A fixed bitmap of [`MAX_QUEUES_PER_PROCESS`] bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bitmap1024([u64; 16]);

impl Default for Bitmap1024 {
    fn default() -> Self {
        Bitmap1024([0; 16])
    }
}

impl Bitmap1024 {
    pub fn test(&self, i: u32) -> bool {
        i < 1024 && self.0[(i / 64) as usize] & (1 << (i % 64)) != 0
    }
    pub fn set(&mut self, i: u32) {
        if i < 1024 {
            self.0[(i / 64) as usize] |= 1 << (i % 64);
        }
    }
    pub fn clear(&mut self, i: u32) {
        if i < 1024 {
            self.0[(i / 64) as usize] &= !(1 << (i % 64));
        }
    }
    /// Lowest clear bit below `n`.
    pub fn first_zero(&self, n: u32) -> Option<u32> {
        (0..n.min(1024)).find(|&i| !self.test(i))
    }
    pub fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }
}

/// Queue ids of a process (C: `pqm->queue_slot_bitmap`).
#[derive(Clone, Copy, Debug, Default)]
pub struct QueueSlots(Bitmap1024);

impl QueueSlots {
    /// C: `find_available_queue_slot`: lowest free id, `-ENOMEM` if none.
    pub fn alloc(&mut self) -> Result<u32, Errno> {
        let id = self.0.first_zero(MAX_QUEUES_PER_PROCESS).ok_or(Errno::NoMem)?;
        self.0.set(id);
        Ok(id)
    }
    pub fn free(&mut self, id: u32) {
        self.0.clear(id);
    }
}

/// Doorbells of one process on one device (C: `qpd->doorbell_bitmap`):
/// SOC15 reserves the non-CP range and its mirror for SDMA/IH/VCN.
#[derive(Clone, Copy, Debug)]
pub struct Doorbells(Bitmap1024);

impl Doorbells {
    /// C: `init_doorbell_bitmap`.
    pub fn new(d: &DeviceLimits) -> Self {
        let (start, end) = d.non_cp_doorbells();
        let mut b = Bitmap1024::default();
        for i in 0..MAX_QUEUES_PER_PROCESS / 2 {
            if i >= start && i <= end {
                b.set(i);
                b.set(i + DOORBELL_MIRROR_OFFSET);
            }
        }
        Doorbells(b)
    }

    /// A CP queue's doorbell id (C: `allocate_doorbell`, SOC15 CP branch):
    /// lowest free, `-EBUSY` if none.
    pub fn alloc_cp(&mut self) -> Result<u32, Errno> {
        let id = self.0.first_zero(MAX_QUEUES_PER_PROCESS).ok_or(Errno::Busy)?;
        self.0.set(id);
        Ok(id)
    }

    /// C: `deallocate_doorbell` (CP queues only; SDMA doorbells are static).
    pub fn free_cp(&mut self, id: u32) {
        self.0.clear(id);
    }

    /// Whether `id` is taken (or reserved).
    pub fn is_used(&self, id: u32) -> bool {
        self.0.test(id)
    }
}

/// An SDMA queue's static doorbell (C: `allocate_doorbell`, SDMA branch):
/// engine base, odd queue ids in the +512 mirror.
pub fn sdma_doorbell(d: &DeviceLimits, engine: u32, queue: u32) -> u32 {
    d.sdma_engine_doorbell_base(engine) + (queue & 1) * DOORBELL_MIRROR_OFFSET + (queue >> 1)
}

/// Byte offset of doorbell `id` in the process's doorbell slice.
pub fn doorbell_byte_offset(id: u32) -> u32 {
    id * DOORBELL_SIZE
}

/// CREATE_QUEUE's `doorbell_offset` (SOC15): mmap type, gpu_id and the
/// doorbell's byte offset in the process slice.
pub fn doorbell_mmap_offset(gpu_id: u32, id: u32) -> u64 {
    MMAP_TYPE_DOORBELL | mmap_gpu_id(gpu_id) | u64::from(doorbell_byte_offset(id))
}

/// An SDMA queue's assignment (C: `q->sdma_id`,
/// `properties.sdma_engine_id`, `properties.sdma_queue_id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdmaSlot {
    /// `Sdma` or `SdmaXgmi` (SDMA_BY_ENG_ID resolves to one of them).
    pub queue_type: QueueType,
    pub sdma_id: u32,
    pub engine: u32,
    pub queue: u32,
}

/// SDMA queues of a device, shared by all processes (C: `dqm->sdma_bitmap`,
/// `dqm->xgmi_sdma_bitmap`; a set bit is a *used* queue here).
#[derive(Clone, Copy, Debug, Default)]
pub struct SdmaQueues {
    used: Bitmap1024,
    used_xgmi: Bitmap1024,
}

impl SdmaQueues {
    /// C: `allocate_sdma_queue` (no restore): `-ENOMEM` when none is left.
    pub fn alloc(&mut self, d: &DeviceLimits, t: QueueType, engine_id: u32) -> Result<SdmaSlot, Errno> {
        let n_pcie = d.num_sdma_engines;
        let n_xgmi = d.num_sdma_xgmi_engines;
        let per = d.num_sdma_queues_per_engine;
        let (xgmi, start, step, count) = match t {
            QueueType::Sdma => (false, 0, 1, n_pcie * per),
            QueueType::SdmaXgmi => (true, 0, 1, n_xgmi * per),
            QueueType::SdmaByEngId if engine_id < n_pcie => (false, engine_id, n_pcie, n_pcie * per),
            QueueType::SdmaByEngId if engine_id < n_pcie + n_xgmi => (true, engine_id - n_pcie, n_xgmi, n_xgmi * per),
            _ => return Err(Errno::Inval),
        };
        let count = count.min(MAX_QUEUES_PER_PROCESS);
        let map = if xgmi { &mut self.used_xgmi } else { &mut self.used };
        let mut i = start;
        while i < count {
            if !map.test(i) {
                map.set(i);
                let engines = if xgmi { n_xgmi } else { n_pcie };
                let base = if xgmi { n_pcie } else { 0 };
                return Ok(SdmaSlot {
                    queue_type: if xgmi { QueueType::SdmaXgmi } else { QueueType::Sdma },
                    sdma_id: i,
                    engine: base + i % engines,
                    queue: i / engines,
                });
            }
            i += step;
        }
        Err(Errno::NoMem)
    }

    /// C: `deallocate_sdma_queue`.
    pub fn free(&mut self, slot: &SdmaSlot) {
        match slot.queue_type {
            QueueType::SdmaXgmi => self.used_xgmi.clear(slot.sdma_id),
            _ => self.used.clear(slot.sdma_id),
        }
    }

    /// SDMA queues in use.
    pub fn in_use(&self) -> u32 {
        self.used.count() + self.used_xgmi.count()
    }
}

/// A compute queue's hardware slot without the HWS: HQD `queue` of MEC
/// pipe `pipe` (C: `q->pipe`, `q->queue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HqdSlot {
    pub pipe: u32,
    pub queue: u32,
}

/// The device interface's `kgd_gpu_info.reserved_hqds` (four 32-bit
/// words, the first holding slots 0-31) as one 128-bit map: bit `pipe *
/// num_queue_per_pipe + queue` is an HQD of the first MEC the GPU driver
/// keeps for itself.
pub fn reserved_hqds(words: [u32; 4]) -> u128 {
    words.iter().rev().fold(0u128, |m, &w| m << 32 | u128::from(w))
}

/// The compute HQDs of a device, shared by all processes (C: the dqm's
/// `allocated_queues[pipe]` bitmaps and `next_pipe_to_allocate`; a set
/// bit is a used slot here).  At most 1024 slots.
#[derive(Clone, Copy, Debug, Default)]
pub struct HqdSlots {
    pipes: u32,
    queues_per_pipe: u32,
    used: Bitmap1024,
    /// Slots of the first 128 the GPU driver keeps ([`reserved_hqds`];
    /// C: the slots `init_pipelines` leaves out of `allocated_queues`
    /// because `cp_queue_bitmap` does not name them).
    reserved: u128,
    next_pipe: u32,
}

impl HqdSlots {
    /// `pipes` x `queues_per_pipe` free slots (capped at 1024 in all).
    pub fn new(pipes: u32, queues_per_pipe: u32) -> Self {
        Self::with_reserved(pipes, queues_per_pipe, 0)
    }

    /// As [`Self::new`], without the slots of `reserved`
    /// ([`reserved_hqds`]), which [`Self::alloc`] never hands out.
    pub fn with_reserved(pipes: u32, queues_per_pipe: u32, reserved: u128) -> Self {
        let pipes = pipes.min(1024);
        let queues_per_pipe = if pipes == 0 { 0 } else { queues_per_pipe.min(1024 / pipes) };
        HqdSlots { pipes, queues_per_pipe, used: Bitmap1024::default(), reserved, next_pipe: 0 }
    }

    fn is_reserved(&self, bit: u32) -> bool {
        bit < 128 && self.reserved >> bit & 1 != 0
    }

    /// C: `allocate_hqd`: the lowest free queue of the first pipe with
    /// one, searching from the pipe after the last one used (round
    /// robin, spreading queues over the pipes); `-EBUSY` when every slot
    /// is taken.
    pub fn alloc(&mut self) -> Result<HqdSlot, Errno> {
        // `checked_rem`: no division-by-zero panic path (there is no
        // iteration without pipes; objtool flagged the fall-through).
        for i in 0..self.pipes {
            let pipe = (self.next_pipe + i).checked_rem(self.pipes).unwrap_or(0);
            for queue in 0..self.queues_per_pipe {
                let bit = pipe * self.queues_per_pipe + queue;
                if !self.used.test(bit) && !self.is_reserved(bit) {
                    self.used.set(bit);
                    self.next_pipe = (pipe + 1).checked_rem(self.pipes).unwrap_or(0);
                    return Ok(HqdSlot { pipe, queue });
                }
            }
        }
        Err(Errno::Busy)
    }

    /// C: `deallocate_hqd`.
    pub fn free(&mut self, s: HqdSlot) {
        if s.pipe < self.pipes && s.queue < self.queues_per_pipe {
            self.used.clear(s.pipe * self.queues_per_pipe + s.queue);
        }
    }

    /// Slots in use.
    pub fn in_use(&self) -> u32 {
        self.used.count()
    }

    /// Queues per pipe (after the 1024-slot cap).
    pub fn queues_per_pipe(&self) -> u32 {
        self.queues_per_pipe
    }
}

/// SET_CU_MASK's count checks (C: `kfd_ioctl_set_cu_mask`): the number of
/// mask bits kept and of 32-bit words to copy from user space.
pub fn cu_mask_words(num_cu_mask: u32) -> Result<(u32, usize), Errno> {
    if num_cu_mask % 32 != 0 || num_cu_mask == 0 {
        return Err(Errno::Inval);
    }
    let bits = num_cu_mask.min(MAX_CU_MASK_BITS);
    Ok((bits, (bits / 32) as usize))
}

/// The WGP pairing rule (C: `pqm_update_mqd`): on a GPU with work-group
/// processors both CUs of a pair enabled or neither.
pub fn cu_mask_pairs_ok(gfx: GfxVersion, bits: u32, mask: &[u32]) -> bool {
    if !gfx.has_wgp() {
        return true;
    }
    let mut i = 0;
    while i < bits {
        let word = mask.get((i / 32) as usize).copied().unwrap_or(0);
        let pair = (word >> (i % 32)) & 3;
        if pair != 0 && pair != 3 {
            return false;
        }
        i += 2;
    }
    true
}

/// GET_QUEUE_WAVE_STATE of an idle compute queue with no saved waves (C:
/// `get_wave_state` of `kfd_mqd_manager_v9.c` on an MQD whose control stack
/// is empty: stack offset = stack size = work-group state offset).
/// Returns (header `control_stack_offset`, `control_stack_size`,
/// `wave_state_offset`, `wave_state_size`) and the two used sizes.
pub fn idle_wave_state(ctl_stack_size: u32) -> ([u32; 4], u32, u32) {
    ([ctl_stack_size, 0, ctl_stack_size, 0], 0, 0)
}

/// `KGD_QUEUE_ERROR_INVALID_PACKET`: a CP bad opcode (or another queue
/// exception rkfd has no closer reason for).
pub const QUEUE_ERROR_INVALID_PACKET: u32 = 1;
/// `KGD_QUEUE_ERROR_UNSUPPORTED`: `EC_QUEUE_PACKET_UNSUPPORTED`.
pub const QUEUE_ERROR_UNSUPPORTED: u32 = 2;
/// `KGD_QUEUE_ERROR_VM_FAULT`: `EC_QUEUE_WAVE_MEMORY_VIOLATION`.
pub const QUEUE_ERROR_VM_FAULT: u32 = 3;
/// `KGD_QUEUE_ERROR_RESET`.
pub const QUEUE_ERROR_RESET: u32 = 4;

/// The `KGD_QUEUE_ERROR_*` rkfd records for a queue exception the GPU
/// reported (a KFD exception code of `kfd_ioctl.h`, from a CP bad-opcode or
/// SQ debug-trap interrupt): the inverse of what the GPU driver sends for
/// each stop (`kgd_kfd_interface.h`).  Other codes are invalid packets.
pub const fn queue_error_of_exception(ecode: u32) -> u32 {
    /// `EC_QUEUE_WAVE_MEMORY_VIOLATION`.
    const MEMORY_VIOLATION: u32 = 5;
    /// `EC_QUEUE_PACKET_UNSUPPORTED`.
    const PACKET_UNSUPPORTED: u32 = 20;
    match ecode {
        MEMORY_VIOLATION => QUEUE_ERROR_VM_FAULT,
        PACKET_UNSUPPORTED => QUEUE_ERROR_UNSUPPORTED,
        _ => QUEUE_ERROR_INVALID_PACKET,
    }
}
