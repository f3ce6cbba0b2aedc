// SPDX-License-Identifier: GPL-2.0

//! MQD managers: each queue's memory queue descriptor in its GPU
//! generation's own layout, which the GPU driver loads into a hardware
//! queue (`hqd_load` / `hqd_sdma_load`).
//!
//! C: `kfd_mqd_manager.c`, `kfd_mqd_manager_v9.c`, `_v10.c`, `_v11.c`
//! (`init_mqd`, `update_mqd`, `init_mqd_sdma`, `update_mqd_sdma`,
//! `update_cu_mask`, `debugfs_show_mqd`).  The field logic is the host
//! crate `rust/amdgpu-hw`'s `mqd.rs` (host-tested, layouts generated from
//! the upstream headers), compiled in here through `kernel_mqd.rs`.
//!
//! Memory: upstream puts an MQD in a GTT buffer object (the CP reads it by
//! DMA through the GART: `allocate_mqd`, `kfd_gtt_sa_allocate`) and hands
//! amdgpu its CPU address, from which amdgpu's `hqd_load` writes the HQD
//! registers.  Without the HWS (`sched_policy=2`) rkfd keeps each MQD in
//! kernel memory (`KBox`) only and passes its address and size: the GPU
//! driver reads it during `hqd_load` and writes the saved state back during
//! `hqd_destroy`, with the CPU, as amdgpu's `hqd_load` does; nothing reads
//! it by DMA, so `cp_mqd_base_addr` is 0.  Under the HWS (`crate::hws`)
//! the MAP_QUEUES packets name the MQD's GPU address: `crate::queue` then
//! also keeps a GTT copy (`alloc_gtt_mem`, its address in
//! `cp_mqd_base_addr`), which the firmware reads and saves into, and this
//! `KBox` is the copy rkfd edits between preemptions.

use kernel::prelude::*;

use crate::{device::Device, queue::rules};

/// MQD layouts and field logic, `rust/amdgpu-hw/src/mqd.rs`, with the
/// generated layouts it names (`rust/amdgpu-hw/src/kernel_mqd.rs`).
#[path = "../rust/amdgpu-hw/src/kernel_mqd.rs"]
mod mqd_format;
use mqd_format::mqd as hw;

/// For `mqd_format`, which names the generations `super::gfx`.
use crate::gfx;

/// The kernel doorbell offset the HIQ's MQD carries for kernel doorbell
/// index `id`: dwords from the start of the GPU's kernel doorbell page
/// (64-bit doorbells are two dwords), what `hiq_mqd_load` and
/// `ring_kernel_doorbell` take.  User queues carry their BAR index
/// instead (`Queue`'s `doorbell_off`, `GfxVersion::doorbell_dw_offset_in_bar`).
pub(crate) fn kernel_doorbell_dwords(id: u32) -> u32 {
    rules::doorbell_byte_offset(id) / 4
}

/// One queue's MQD (C: `q->mqd` in its `kfd_mem_obj`).
pub(crate) enum Mqd {
    /// A compute queue's (`v9_mqd`, `v10_compute_mqd`, `v11_compute_mqd`).
    Compute(KBox<hw::ComputeMqd>),
    /// An SDMA queue's (`v9_sdma_mqd`, `v10_sdma_mqd`, `v11_sdma_mqd`).
    Sdma(KBox<hw::SdmaMqd>),
}

/// What the managers read of the device (`struct kfd_node`).
fn device(dev: &Device) -> hw::MqdDevice {
    hw::MqdDevice {
        gfx: dev.gfx,
        cwsr_enabled: dev.info.cwsr_size != 0,
        profiler_active: false,
        // amdgpu_amdkfd_have_atomics_support: the device interface does not
        // report PCIe atomics; GFX11 MQDs then leave the CP's bit clear.
        pcie_atomics: false,
        sdma_phase_quantum: hw::SDMA_PHASE_QUANTUM_DEFAULT,
    }
}

/// `struct queue_properties` as the managers read it.
/// `doorbell_off`: the queue's doorbell as its BAR index
/// (`q->properties.doorbell_off`).
fn props(p: &rules::Properties, doorbell_off: u32, sdma: Option<&rules::SdmaSlot>) -> hw::QueueProps {
    hw::QueueProps {
        format: if p.aql { hw::QueueFormat::Aql } else { hw::QueueFormat::Pm4 },
        queue_address: p.ring_base,
        queue_size: p.ring_size,
        read_ptr: p.rptr,
        write_ptr: p.wptr,
        doorbell_off,
        eop_ring_buffer_address: p.eop_address,
        eop_ring_buffer_size: u32::try_from(p.eop_size).unwrap_or(u32::MAX),
        ctx_save_restore_area_address: p.ctx_save_address,
        ctx_save_restore_area_size: p.ctx_save_size,
        ctl_stack_size: p.ctl_stack_size,
        tba_addr: 0,
        priority: p.priority,
        // VMID-less: the GPU driver maps the queue's VM itself (upstream's
        // HWS mode, where the firmware assigns VMIDs).
        vmid: 0,
        sdma_engine_id: sdma.map_or(0, |s| s.engine),
        sdma_queue_id: sdma.map_or(0, |s| s.queue),
        is_dbg_wa: false,
    }
}

/// The CUs of `dev` for the CU-mask mapping: every CU of every shader
/// array active (the device interface reports counts, not a bitmap).
fn cu_topology(dev: &Device) -> hw::CuTopology {
    let i = &dev.info;
    let mut t = hw::CuTopology {
        num_se: i.num_shader_engines.min(hw::MAX_NUM_SE as u32),
        num_sh_per_se: i.sh_per_se.min(hw::MAX_NUM_SH_PER_SE as u32),
        ..Default::default()
    };
    for se in 0..t.num_se as usize {
        for sh in 0..t.num_sh_per_se as usize {
            t.cu_per_sh[se][sh] = i.cu_per_sh;
        }
    }
    t.cu_active = t.num_se * t.num_sh_per_se * i.cu_per_sh;
    t
}

impl Mqd {
    /// C: `init_mqd` / `init_mqd_sdma` for a new queue.  `ENODEV` for a
    /// generation without MQD layouts here (GC 12).
    /// `mqd_addr`: the GPU address the MQD will be read from (the HWS reads
    /// it there; 0 without the HWS, where it lives in kernel memory only).
    /// `doorbell_off`: the queue's doorbell, its dword index in the GPU's
    /// doorbell BAR (C: `q->properties.doorbell_off`).
    pub(crate) fn new(
        dev: &Device,
        p: &rules::Properties,
        doorbell_off: u32,
        sdma: Option<&rules::SdmaSlot>,
        mqd_addr: u64,
    ) -> Result<Self> {
        let d = device(dev);
        let q = props(p, doorbell_off, sdma);
        Ok(if p.queue_type.is_sdma() {
            let mut m = KBox::new(hw::SdmaMqd::zeroed(dev.gfx).ok_or(ENODEV)?, GFP_KERNEL)?;
            hw::init_sdma_mqd(&mut m, &d, &q);
            Mqd::Sdma(m)
        } else {
            let mut m = KBox::new(hw::ComputeMqd::zeroed(dev.gfx).ok_or(ENODEV)?, GFP_KERNEL)?;
            hw::init_compute_mqd(&mut m, &d, mqd_addr, &q);
            Mqd::Compute(m)
        })
    }

    /// C: `init_mqd_hiq` (`kfd_kernel_queue.c`'s `kq_initialize`): the
    /// HIQ's MQD, a privileged kernel PM4 queue on the ring at GPU address
    /// `ring` of `ring_size` bytes, read pointer reported at `rptr`, write
    /// pointer polled at `wptr`, kernel doorbell `doorbell_dwords`; the MQD
    /// lives at `mqd_addr`.
    pub(crate) fn new_hiq(dev: &Device, mqd_addr: u64, ring: u64, ring_size: u64, rptr: u64, wptr: u64, doorbell_dwords: u32) -> Result<Self> {
        let q = hw::QueueProps {
            format: hw::QueueFormat::Pm4,
            queue_address: ring,
            queue_size: ring_size,
            read_ptr: rptr,
            write_ptr: wptr,
            doorbell_off: doorbell_dwords,
            ..Default::default()
        };
        let mut m = KBox::new(hw::ComputeMqd::zeroed(dev.gfx).ok_or(ENODEV)?, GFP_KERNEL)?;
        hw::init_hiq_mqd(&mut m, &device(dev), mqd_addr, &q);
        Ok(Mqd::Compute(m))
    }

    /// C: `update_mqd` / `update_mqd_sdma` after UPDATE_QUEUE, with the CU
    /// mask of SET_CU_MASK (`count` bits of `cu_mask`) if given.  A queue
    /// whose ring changed starts its new ring at 0 (the read pointer a CP
    /// saved in the MQD belonged to the old one).
    pub(crate) fn update(
        &mut self,
        dev: &Device,
        p: &rules::Properties,
        doorbell_off: u32,
        sdma: Option<&rules::SdmaSlot>,
        new_ring: bool,
        cu_mask: Option<(&[u32], u32)>,
    ) {
        let d = device(dev);
        let q = props(p, doorbell_off, sdma);
        match self {
            Mqd::Compute(m) => {
                let topo = cu_topology(dev);
                let info = cu_mask.map(|(mask, count)| hw::MqdUpdate { cu_mask: Some((mask, count, &topo)), update_flag: 0 });
                hw::update_compute_mqd(m, &d, &q, info.as_ref());
                if new_ring {
                    m.set_pq_rptr(0);
                }
            }
            Mqd::Sdma(m) => {
                hw::update_sdma_mqd(m, &d, &q);
                if new_ring {
                    m.set_rb_rptr(0);
                }
            }
        }
    }

    /// The MQD's bytes (debugfs `mqds`).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Mqd::Compute(m) => m.as_bytes(),
            Mqd::Sdma(m) => m.as_bytes(),
        }
    }

    /// The MQD's bytes, for the GPU driver (which saves state into them).
    pub(crate) fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Mqd::Compute(m) => m.as_bytes_mut(),
            Mqd::Sdma(m) => m.as_bytes_mut(),
        }
    }
}

/// `seq_hex_dump(m, "    ", DUMP_PREFIX_OFFSET, 32, 4, mqd, size, false)`,
/// as upstream's `debugfs_show_mqd` / `debugfs_show_mqd_sdma` print an
/// MQD: rows of 32 bytes, each `    <offset %08x>: ` and eight
/// little-endian dwords as `%08x`, space-separated.
pub(crate) fn hex_dump(out: &mut impl core::fmt::Write, bytes: &[u8]) -> core::fmt::Result {
    for (row, chunk) in bytes.chunks(32).enumerate() {
        write!(out, "    {:08x}:", row * 32)?;
        for w in chunk.chunks(4) {
            let mut d = [0u8; 4];
            d[..w.len()].copy_from_slice(w);
            write!(out, " {:08x}", u32::from_le_bytes(d))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Upstream's `seq_reg_dump` (`kfd_device_queue_manager.c`): `hqd_dump`'s
/// `(offset, value)` pairs in rows of 8 (host-tested in `amdgpu-hw`).
pub(crate) fn reg_dump(out: &mut impl core::fmt::Write, dump: &[[u32; 2]]) -> core::fmt::Result {
    hw::seq_reg_dump(out, dump)
}

#[kunit_tests(rkfd_mqd)]
mod tests {
    use super::*;

    #[test]
    fn hex_dump_is_seq_hex_dumps_format() {
        let mut b = [0u8; 40];
        for (i, x) in b.iter_mut().enumerate() {
            *x = i as u8;
        }
        let mut s = KVec::<u8>::new();
        struct W<'a>(&'a mut KVec<u8>);
        impl core::fmt::Write for W<'_> {
            fn write_str(&mut self, t: &str) -> core::fmt::Result {
                self.0.extend_from_slice(t.as_bytes(), GFP_KERNEL).map_err(|_| core::fmt::Error)
            }
        }
        hex_dump(&mut W(&mut s), &b).unwrap();
        assert_eq!(
            &s[..],
            &b"    00000000: 03020100 07060504 0b0a0908 0f0e0d0c 13121110 17161514 1b1a1918 1f1e1d1c\n    00000020: 23222120 27262524\n"[..]
        );
    }

    #[test]
    fn kernel_doorbell_offsets_are_dwords() {
        assert_eq!(kernel_doorbell_dwords(3), 6);
    }
}
