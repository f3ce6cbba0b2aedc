// SPDX-License-Identifier: GPL-2.0

//! The HIQ: the kernel queue through which rkfd talks to the GPU's
//! hardware scheduler (HWS) under `sched_policy` 0 and 1.
//!
//! C: `kfd_kernel_queue.c` (`kq_initialize` for `KFD_QUEUE_TYPE_HIQ`,
//! `kq_acquire_packet_buffer`, `kq_submit_packet`, `kernel_queue_uninit`)
//! and `init_mqd_hiq` / `load_mqd` (`hiq_mqd_load`) of the v9 MQD manager.
//! The ring arithmetic is the host crate's [`KernelRing`]
//! (`rust/amdgpu-hw/src/kernel_queue.rs`, host-tested); the MQD is built by
//! [`crate::mqd`].
//!
//! Memory: the ring, the HIQ's MQD and a page holding the read-pointer
//! report, the polled write pointer and the preemption fence are GTT
//! objects from the GPU driver (`alloc_gtt_mem`, upstream's
//! `kfd_gtt_sa_allocate`), which the CP reads and writes at their GART
//! addresses.  They are freed when the queue is dropped
//! (`free_gtt_mem`).
//!
//! Lock order: a [`KernelQueue`] lives in `crate::hws::HwsState`, under
//! `DeviceQueues::hws` (see the crate root); it has no lock of its own.

use kernel::prelude::*;

use crate::{
    device::Device,
    kabi::kgd::GttMem,
    mqd::{self, Mqd},
    packet_manager::hws_format::kernel_queue::{KernelRing, KERNEL_QUEUE_SIZE},
};

/// Dword of the misc page where the CP reports the HIQ's read pointer
/// (`rptr_gpu_addr`).
const RPTR: usize = 0;
/// Dword (64-bit value) of the HIQ's write pointer (`wptr_gpu_addr`).
const WPTR: usize = 2;
/// Dword (64-bit value) of the preemption fence (`dqm->fence_addr`).
const FENCE: usize = 4;
/// The HIQ's kernel doorbell (dword offset; upstream
/// `kfd_get_kernel_doorbell` hands out the first free one).
const HIQ_DOORBELL: u32 = 0;
/// HQD the HIQ is loaded into (`KFD_CIK_HIQ_PIPE`, `KFD_CIK_HIQ_QUEUE`;
/// amdgpu reserves it for the HIQ, rkfd's no-HWS slots never include it).
pub(crate) const HIQ_PIPE: u32 = 4;
pub(crate) const HIQ_QUEUE: u32 = 0;
/// Bytes allotted to the HIQ's MQD (every generation's compute MQD is
/// smaller than a page).
const MQD_BYTES: usize = 4096;

/// One device's HIQ (C: `struct kernel_queue` of type HIQ).
pub(crate) struct KernelQueue {
    /// The ring (`kq->pq`).
    ring: GttMem,
    /// The HIQ's MQD (`kq->queue->mqd_mem_obj`).
    mqd: GttMem,
    /// Read-pointer report, write pointer, fence (`kq->rptr_mem`,
    /// `kq->wptr_mem`, `dqm->fence_mem`, in one page here).
    misc: GttMem,
    /// The driver's side of the ring.
    kring: KernelRing,
}

impl KernelQueue {
    /// C: `kernel_queue_init(dev, KFD_QUEUE_TYPE_HIQ)`: allocates the
    /// ring, MQD and pointers in GTT and loads the HIQ
    /// (`hiq_mqd_load`).
    pub(crate) fn new(dev: &Device) -> Result<Self> {
        let ring = dev.kgd.alloc_gtt_mem(KERNEL_QUEUE_SIZE as usize)?;
        let mqd = dev.kgd.alloc_gtt_mem(MQD_BYTES)?;
        let misc = dev.kgd.alloc_gtt_mem(4096)?;
        let kring = KernelRing::new(KERNEL_QUEUE_SIZE).ok_or(EINVAL)?;
        let mut kq = KernelQueue { ring, mqd, misc, kring };
        kq.load(dev)?;
        Ok(kq)
    }

    /// Builds the HIQ's MQD for an empty ring and has the GPU driver load
    /// it (also after a GPU reset, which drops the HIQ).
    pub(crate) fn load(&mut self, dev: &Device) -> Result {
        self.kring = KernelRing::new(KERNEL_QUEUE_SIZE).ok_or(EINVAL)?;
        for i in 0..FENCE + 2 {
            self.misc.write_volatile(i, 0);
        }
        let base = self.misc.gpu_addr();
        let mut m = Mqd::new_hiq(
            dev,
            self.mqd.gpu_addr(),
            self.ring.gpu_addr(),
            u64::from(KERNEL_QUEUE_SIZE),
            base + (RPTR * 4) as u64,
            base + (WPTR * 4) as u64,
            mqd::kernel_doorbell_dwords(HIQ_DOORBELL),
        )?;
        self.mqd.write_bytes(m.as_bytes())?;
        dev.kgd.hiq_mqd_load(m.as_bytes_mut(), HIQ_PIPE, HIQ_QUEUE, mqd::kernel_doorbell_dwords(HIQ_DOORBELL))
    }

    /// C: `kq_acquire_packet_buffer` + copy + `kq_submit_packet`: writes
    /// `packets` to the ring and rings the HIQ's doorbell.  `ENOMEM` when
    /// the ring has no room (the CP has not read far enough), as upstream.
    pub(crate) fn submit(&mut self, dev: &Device, packets: &[u32]) -> Result {
        let n = u32::try_from(packets.len())?;
        let rptr = self.misc.read_volatile(RPTR).unwrap_or(0);
        let ring = self.ring.dwords_mut();
        let at = self.kring.acquire(ring, rptr, n).map_err(|_| ENOMEM)?;
        ring[at..at + packets.len()].copy_from_slice(packets);
        let wptr = self.kring.submit();
        self.misc.write_volatile(WPTR, wptr as u32);
        self.misc.write_volatile(WPTR + 1, (wptr >> 32) as u32);
        // The GPU driver orders the ring writes before the doorbell
        // (upstream `write_kernel_doorbell64`'s barrier).
        dev.kgd.ring_kernel_doorbell(mqd::kernel_doorbell_dwords(HIQ_DOORBELL), wptr);
        Ok(())
    }

    /// GPU address of the preemption fence.
    pub(crate) fn fence_addr(&self) -> u64 {
        self.misc.gpu_addr() + (FENCE * 4) as u64
    }

    /// Sets the fence (`*dqm->fence_addr = v`).
    pub(crate) fn set_fence(&self, v: u64) {
        self.misc.write_volatile(FENCE, v as u32);
        self.misc.write_volatile(FENCE + 1, (v >> 32) as u32);
    }

    /// The fence as the CP last wrote it.
    pub(crate) fn fence(&self) -> u64 {
        let lo = self.misc.read_volatile(FENCE).unwrap_or(0);
        let hi = self.misc.read_volatile(FENCE + 1).unwrap_or(0);
        u64::from(hi) << 32 | u64::from(lo)
    }
}
