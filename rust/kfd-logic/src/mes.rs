// SPDX-License-Identifier: GPL-2.0 OR MIT
//! What goes into a queue's MES request (GFX11+): the pure part of
//! amdkfd's `add_queue_mes` / `remove_queue_mes`
//! (`kfd_device_queue_manager.c`) and of amdgpu's `mes_v11_0.c` that turns
//! the request into a `MESAPI__ADD_QUEUE` packet (the priority levels).
//!
//! The structs mirror the device interface's `struct
//! kgd_mes_add_queue_input` / `kgd_mes_remove_queue_input`
//! (`include/rkfd/kgd_kfd_interface.h`, itself shaped like amdgpu_mes.h's
//! `mes_add_queue_input`); `src/mes.rs` copies them field by field into
//! the generated C structs.
//!
//! `core` only: the kernel module includes this file with `#[path]`.

/// `KFD_MES_PROCESS_QUANTUM`: 10 ms in the MES's 100 ns units.
pub const PROCESS_QUANTUM: u64 = 100_000;
/// `KFD_MES_GANG_QUANTUM`: 1 ms.
pub const GANG_QUANTUM: u64 = 10_000;
/// `AMDGPU_MES_PROC_CTX_SIZE`: one per process and GPU, in GTT.
pub const PROC_CTX_SIZE: usize = 0x1000;
/// `AMDGPU_MES_GANG_CTX_SIZE`: one per queue, in GTT.
pub const GANG_CTX_SIZE: usize = 0x1000;
/// `adev->vm_manager.max_pfn - 1` of a 48-bit GPU VM (every SOC15 GPU
/// amdkfd drives): the last page a process may use.
pub const PROCESS_VA_END: u64 = (1 << (48 - 12)) - 1;

/// `KFD_QUEUE_TYPE_COMPUTE` / `_SDMA` / `_SDMA_XGMI`: the internal queue
/// type's value (`queue_rules::QueueType as u32`).
pub const KFD_QUEUE_TYPE_COMPUTE: u32 = 0;
/// See [`KFD_QUEUE_TYPE_COMPUTE`].
pub const KFD_QUEUE_TYPE_SDMA: u32 = 1;

/// The queue types of the MES request (`AMDGPU_RING_TYPE_*`, equal to
/// `MES_QUEUE_TYPE_*` of `mes_v11_api_def.h` for these two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MesQueueType {
    /// `AMDGPU_RING_TYPE_COMPUTE` (1).
    Compute = 1,
    /// `AMDGPU_RING_TYPE_SDMA` (2).
    Sdma = 2,
}

/// `amdgpu_mes_priority_level` (equal to `MES_AMD_PRIORITY_LEVEL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorityLevel {
    Low = 0,
    Normal = 1,
    Medium = 2,
    High = 3,
    Realtime = 4,
}

/// C: `convert_to_amdgpu_ring_type` (amdkfd): compute and SDMA queues go
/// to the MES; any other type (an XGMI SDMA queue, an engine not yet
/// assigned) is refused (`None`: upstream WARNs and answers `-EINVAL`;
/// rkfd answers `-EINVAL` without the WARN).
pub fn mes_queue_type(kfd_type: u32) -> Option<MesQueueType> {
    match kfd_type {
        KFD_QUEUE_TYPE_COMPUTE => Some(MesQueueType::Compute),
        KFD_QUEUE_TYPE_SDMA => Some(MesQueueType::Sdma),
        _ => None,
    }
}

/// C: `convert_to_mes_priority_level` (`mes_v11_0.c`): the request's
/// levels 0-4 stay, anything else (a queue priority above 4: amdkfd
/// passes the queue's 0-15 priority as its in-process gang priority) is
/// `NORMAL`.
pub fn priority_level(priority: u32) -> PriorityLevel {
    match priority {
        0 => PriorityLevel::Low,
        2 => PriorityLevel::Medium,
        3 => PriorityLevel::High,
        4 => PriorityLevel::Realtime,
        _ => PriorityLevel::Normal,
    }
}

/// What amdkfd knows of the process on this GPU (C: the `qpd` / `pdd`
/// fields `add_queue_mes` reads).
#[derive(Clone, Copy, Debug, Default)]
pub struct MesProcess {
    pub pasid: u32,
    /// `qpd->page_table_base` (the GPU driver's `get_process_page_dir`).
    pub page_table_base: u64,
    /// `qpd->sh_mem_config`.
    pub sh_mem_config: u32,
    /// `pdd->proc_ctx_gpu_addr`.
    pub context_addr: u64,
    /// `qpd->tba_addr` / `tma_addr` (0: no trap handler installed).
    pub tba_addr: u64,
    pub tma_addr: u64,
    /// A debugger is attached with trap temporaries always set up
    /// (`skip_process_ctx_clear`).
    pub debugged: bool,
}

/// What amdkfd knows of the queue (C: `q->properties`, `q->gart_mqd_addr`,
/// `q->gang_ctx_gpu_addr`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MesQueue {
    /// `queue_rules::QueueType as u32`.
    pub kfd_type: u32,
    pub aql: bool,
    /// 0-15.
    pub priority: u32,
    /// Ring bytes.
    pub ring_size: u64,
    /// The write pointer's GPU VA.
    pub wptr: u64,
    /// Its GART address, 0 if it has none.
    pub wptr_gart: u64,
    /// The doorbell's dword index in the GPU's doorbell BAR (C:
    /// `q->properties.doorbell_off`, `GfxVersion::doorbell_dw_offset_in_bar`).
    pub doorbell_off: u32,
    /// The MQD's GART address.
    pub mqd_addr: u64,
    /// The gang context's GART address.
    pub gang_context_addr: u64,
    /// `is_gws`.
    pub gws: bool,
}

/// C: `struct mes_add_queue_input` as `add_queue_mes` fills it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddQueueInput {
    pub process_id: u32,
    pub page_table_base_addr: u64,
    pub process_va_start: u64,
    pub process_va_end: u64,
    pub process_quantum: u64,
    pub process_context_addr: u64,
    pub gang_quantum: u64,
    pub gang_context_addr: u64,
    pub inprocess_gang_priority: u32,
    pub gang_global_priority_level: u32,
    pub doorbell_offset: u32,
    pub mqd_addr: u64,
    pub wptr_addr: u64,
    pub wptr_mc_addr: u64,
    pub queue_type: u32,
    pub paging: u32,
    pub gws_base: u32,
    pub gws_size: u32,
    pub tba_addr: u64,
    pub tma_addr: u64,
    pub trap_en: u32,
    pub skip_process_ctx_clear: u32,
    pub is_kfd_process: u32,
    pub is_aql_queue: u32,
    pub queue_size: u32,
    pub exclusively_scheduled: u32,
    pub sh_mem_config_data: u32,
}

/// C: `struct mes_remove_queue_input` as `remove_queue_mes` fills it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoveQueueInput {
    pub doorbell_offset: u32,
    pub gang_context_addr: u64,
}

/// C: `add_queue_mes`'s request for queue `q` of process `p`, with the
/// priorities already the levels `mes_v11_0_add_hw_queue` sends.
/// `cwsr_workaround`: the GPU's `GfxVersion::has_cwsr_workaround` (the
/// trap is then off).  `None`: a queue type the MES does not take.
pub fn add_queue_input(p: &MesProcess, q: &MesQueue, cwsr_workaround: bool) -> Option<AddQueueInput> {
    let queue_type = mes_queue_type(q.kfd_type)?;
    Some(AddQueueInput {
        process_id: p.pasid,
        page_table_base_addr: p.page_table_base,
        process_va_start: 0,
        process_va_end: PROCESS_VA_END,
        process_quantum: PROCESS_QUANTUM,
        process_context_addr: p.context_addr,
        gang_quantum: GANG_QUANTUM,
        gang_context_addr: q.gang_context_addr,
        inprocess_gang_priority: priority_level(q.priority) as u32,
        gang_global_priority_level: PriorityLevel::Normal as u32,
        doorbell_offset: q.doorbell_off,
        mqd_addr: q.mqd_addr,
        wptr_addr: q.wptr,
        wptr_mc_addr: q.wptr_gart,
        queue_type: queue_type as u32,
        paging: 0,
        gws_base: 0,
        gws_size: 0,
        tba_addr: p.tba_addr,
        tma_addr: p.tma_addr,
        trap_en: u32::from(!cwsr_workaround),
        skip_process_ctx_clear: u32::from(p.debugged),
        is_kfd_process: 1,
        is_aql_queue: u32::from(q.aql),
        // Dwords (C: `queue_size >> 2`); a ring is at most 4 GiB here.
        queue_size: (q.ring_size >> 2) as u32,
        exclusively_scheduled: u32::from(q.gws),
        sh_mem_config_data: p.sh_mem_config,
    })
}

/// C: `remove_queue_mes`'s request for queue `q`.
pub fn remove_queue_input(q: &MesQueue) -> RemoveQueueInput {
    RemoveQueueInput { doorbell_offset: q.doorbell_off, gang_context_addr: q.gang_context_addr }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gfx::GfxVersion;

    fn process() -> MesProcess {
        MesProcess {
            pasid: 0x8001,
            page_table_base: 0x0000_0080_0123_4001,
            sh_mem_config: 0xc00c,
            context_addr: 0x10_0000,
            tba_addr: 0,
            tma_addr: 0,
            debugged: false,
        }
    }

    fn queue() -> MesQueue {
        MesQueue {
            kfd_type: KFD_QUEUE_TYPE_COMPUTE,
            aql: true,
            priority: 7,
            ring_size: 4096,
            wptr: 0x7000_0000_0038,
            wptr_gart: 0,
            doorbell_off: 6,
            mqd_addr: 0x20_0000,
            gang_context_addr: 0x30_0000,
            gws: false,
        }
    }

    #[test]
    fn compute_queue_input_is_add_queue_mes() {
        let i = add_queue_input(&process(), &queue(), false).unwrap();
        assert_eq!(i.process_id, 0x8001);
        // add_queue_mes: qpd->page_table_base and qpd->sh_mem_config as
        // they are; no trap handler.
        assert_eq!(i.page_table_base_addr, 0x0000_0080_0123_4001);
        assert_eq!(i.sh_mem_config_data, 0xc00c);
        assert_eq!((i.tba_addr, i.tma_addr), (0, 0));
        assert_eq!(i.process_va_start, 0);
        assert_eq!(i.process_va_end, 0xf_ffff_ffff);
        assert_eq!(i.process_quantum, 100_000);
        assert_eq!(i.gang_quantum, 10_000);
        assert_eq!(i.process_context_addr, 0x10_0000);
        assert_eq!(i.gang_context_addr, 0x30_0000);
        assert_eq!(i.doorbell_offset, 6);
        assert_eq!(i.mqd_addr, 0x20_0000);
        assert_eq!(i.wptr_addr, 0x7000_0000_0038);
        assert_eq!(i.queue_type, 1);
        assert_eq!(i.queue_size, 1024);
        assert_eq!((i.is_kfd_process, i.is_aql_queue, i.paging, i.trap_en), (1, 1, 0, 1));
        assert_eq!(i.gang_global_priority_level, PriorityLevel::Normal as u32);
        // Priority 7 is no MES level: NORMAL.
        assert_eq!(i.inprocess_gang_priority, 1);
    }

    #[test]
    fn sdma_pm4_gws_and_debugged() {
        let q = MesQueue { kfd_type: KFD_QUEUE_TYPE_SDMA, aql: false, gws: true, ring_size: 1 << 20, ..queue() };
        let p = MesProcess { debugged: true, tba_addr: 0x5000, tma_addr: 0x6000, ..process() };
        let i = add_queue_input(&p, &q, true).unwrap();
        assert_eq!(i.queue_type, 2);
        assert_eq!(i.queue_size, 1 << 18);
        assert_eq!((i.is_aql_queue, i.exclusively_scheduled, i.skip_process_ctx_clear, i.trap_en), (0, 1, 1, 0));
        assert_eq!((i.tba_addr, i.tma_addr), (0x5000, 0x6000));
    }

    #[test]
    fn other_queue_types_are_refused() {
        // KFD_QUEUE_TYPE_HIQ (2), _SDMA_XGMI (3), _SDMA_BY_ENG_ID (4), DIQ (5).
        for t in 2..=5 {
            assert_eq!(mes_queue_type(t), None);
            assert!(add_queue_input(&process(), &MesQueue { kfd_type: t, ..queue() }, false).is_none());
        }
    }

    #[test]
    fn priority_levels_as_mes_v11() {
        let want = [0, 1, 2, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
        for (p, w) in want.iter().enumerate() {
            assert_eq!(priority_level(p as u32) as u32, *w, "priority {p}");
        }
        assert_eq!(priority_level(u32::MAX), PriorityLevel::Normal);
    }

    #[test]
    fn remove_names_the_queue_as_added() {
        let q = queue();
        let a = add_queue_input(&process(), &q, false).unwrap();
        let r = remove_queue_input(&q);
        assert_eq!((r.doorbell_offset, r.gang_context_addr), (a.doorbell_offset, a.gang_context_addr));
    }

    #[test]
    fn cwsr_workaround_generations() {
        let v = |t| GfxVersion::from_target_version(t).unwrap();
        for t in [110000, 110001, 110002, 110003] {
            assert!(v(t).has_cwsr_workaround(), "{t}");
            assert!(v(t).uses_mes());
        }
        for t in [90010, 100300, 110500, 110501, 120000] {
            assert!(!v(t).has_cwsr_workaround(), "{t}");
        }
    }
}
