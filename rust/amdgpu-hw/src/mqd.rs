// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Memory queue descriptors: what amdkfd writes into a queue's MQD before
//! the CP (or the HWS, through MAP_QUEUES) loads it.
//!
//! C: `kfd_mqd_manager_v9.c`, `kfd_mqd_manager_v10.c`,
//! `kfd_mqd_manager_v11.c` (`init_mqd`, `update_mqd`, `init_mqd_hiq`,
//! `init_mqd_sdma`, `update_mqd_sdma`, `update_cu_mask`, `set_priority`)
//! and `mqd_symmetrically_map_cu_mask` / `pipe_priority_map` of
//! `kfd_mqd_manager.c`.  The layouts are the generated `v9_mqd`,
//! `v10_compute_mqd`, `v11_compute_mqd` and their SDMA MQDs; the register
//! fields are the generated `*_sh_mask` constants.  The three compute MQDs
//! share their field names, so one macro writes the fields every
//! generation sets and each generation adds its own.
//!
//! Not modelled: the multi-XCC MQDs of GC 9.4.3/9.4.4/9.5.0
//! (`init_mqd_v9_4_3`: one MQD per XCC, `cp_mqd_stride_size`, the per-XCC
//! CU mask), checkpoint/restore, and the wave-state readers.

// `super::`: this file is also compiled into the kernel modules
// (`kernel_mqd.rs`), whose parent module provides `gfx` and `generated`.
use super::gfx::{GfxArch, GfxVersion};

use super::generated::gc_10_1_0_sh_mask as gc10;
use super::generated::gc_11_0_0_sh_mask as gc11;
use super::generated::gc_9_0_sh_mask as gc9;
use super::generated::{gc_10_3_0_offset as gc10_3_off, gc_11_0_0_offset as gc11_off, gc_9_0_offset as gc9_off};
use super::generated::sdma0_4_2_2_offset as sdma4_2_2_off;
use super::generated::sdma0_4_0_sh_mask as sdma4;
use super::generated::v10_structs::{v10_compute_mqd, v10_sdma_mqd};
use super::generated::v11_structs::{v11_compute_mqd, v11_sdma_mqd};
use super::generated::v9_structs::{v9_mqd, v9_mqd__bindgen_ty_1, v9_mqd__bindgen_ty_1__bindgen_ty_1, v9_sdma_mqd};

/// C: `KFD_MAX_NUM_SE`.
pub const MAX_NUM_SE: usize = 8;
/// C: `KFD_MAX_NUM_SH_PER_SE`.
pub const MAX_NUM_SH_PER_SE: usize = 2;

/// C: `update_flag` values of `struct mqd_update_info` (`enum
/// mqd_update_flag`); `update_mqd` compares the perf-counter ones with
/// `==` and tests the others as bits, as upstream does.
pub mod update_flag {
    /// `UPDATE_FLAG_DBG_WA_ENABLE`.
    pub const DBG_WA_ENABLE: u32 = 1;
    /// `UPDATE_FLAG_DBG_WA_DISABLE`.
    pub const DBG_WA_DISABLE: u32 = 2;
    /// `UPDATE_FLAG_IS_GWS`.
    pub const IS_GWS: u32 = 4;
    /// `UPDATE_FLAG_PERFCOUNT_ENABLE`.
    pub const PERFCOUNT_ENABLE: u32 = 5;
    /// `UPDATE_FLAG_PERFCOUNT_DISABLE`.
    pub const PERFCOUNT_DISABLE: u32 = 6;
}

/// The MQD header every compute MQD starts with (C: `m->header`).
pub const MQD_HEADER: u32 = 0xC031_0800;
/// C: `SDMA_RLC_DUMMY_DEFAULT`.
pub const SDMA_RLC_DUMMY_DEFAULT: u32 = 0xf;
/// C: `amdgpu_sdma_phase_quantum`'s default (module parameter).
pub const SDMA_PHASE_QUANTUM_DEFAULT: u32 = 32;

/// C: `enum kfd_queue_format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QueueFormat {
    /// `KFD_QUEUE_FORMAT_PM4`.
    #[default]
    Pm4,
    /// `KFD_QUEUE_FORMAT_AQL`.
    Aql,
}

/// The fields of `struct queue_properties` the MQD managers read.
#[derive(Clone, Copy, Debug, Default)]
pub struct QueueProps {
    /// `format`.
    pub format: QueueFormat,
    /// `queue_address`: the ring, GPU VA.
    pub queue_address: u64,
    /// `queue_size`: the ring's size in bytes (a power of two).
    pub queue_size: u64,
    /// `read_ptr`: where the CP reports the read pointer.
    pub read_ptr: u64,
    /// `write_ptr`: where the CP polls the write pointer.
    pub write_ptr: u64,
    /// `doorbell_off`: the doorbell's dword offset in the BAR.
    pub doorbell_off: u32,
    /// `eop_ring_buffer_address`.
    pub eop_ring_buffer_address: u64,
    /// `eop_ring_buffer_size`, bytes.
    pub eop_ring_buffer_size: u32,
    /// `ctx_save_restore_area_address` (0: none).
    pub ctx_save_restore_area_address: u64,
    /// `ctx_save_restore_area_size`.
    pub ctx_save_restore_area_size: u32,
    /// `ctl_stack_size`.
    pub ctl_stack_size: u32,
    /// `tba_addr`: trap handler base (0: none).
    pub tba_addr: u64,
    /// `priority`, 0..=15.
    pub priority: u32,
    /// `vmid`: 0 under the HWS, which assigns VMIDs itself.
    pub vmid: u32,
    /// `sdma_engine_id`.
    pub sdma_engine_id: u32,
    /// `sdma_queue_id`.
    pub sdma_queue_id: u32,
    /// `is_dbg_wa`: the GFX11 debugger workaround halves the CU masks.
    pub is_dbg_wa: bool,
}

/// What `init_mqd` reads of the device rather than the queue.
#[derive(Clone, Copy, Debug)]
pub struct MqdDevice {
    /// The generation.
    pub gfx: GfxVersion,
    /// `kfd->cwsr_enabled`.
    pub cwsr_enabled: bool,
    /// `kfd->profiler_process != NULL`.
    pub profiler_active: bool,
    /// `amdgpu_amdkfd_have_atomics_support` (GFX11's CP acknowledges PCIe atomics).
    pub pcie_atomics: bool,
    /// `amdgpu_sdma_phase_quantum` (GFX11 SDMA MQDs).
    pub sdma_phase_quantum: u32,
}

/// The active CUs of one KFD node, per shader engine and shader array
/// (C: the `hweight32` of `cu_info->bitmap` that
/// `mqd_symmetrically_map_cu_mask` computes; the bitmap's layout is the
/// GPU driver's business, so the caller counts).
#[derive(Clone, Copy, Debug, Default)]
pub struct CuTopology {
    /// `gfx_info->max_shader_engines`.
    pub num_se: u32,
    /// `gfx_info->max_sh_per_se`.
    pub num_sh_per_se: u32,
    /// Active CUs of each (SE, SH).
    pub cu_per_sh: [[u32; MAX_NUM_SH_PER_SE]; MAX_NUM_SE],
    /// `cu_info->number / num_nodes`.
    pub cu_active: u32,
}

/// C: `struct mqd_update_info`.
#[derive(Clone, Copy, Debug, Default)]
pub struct MqdUpdate<'a> {
    /// `cu_mask.ptr` / `cu_mask.count` (bits), with the node's CUs.
    pub cu_mask: Option<(&'a [u32], u32, &'a CuTopology)>,
    /// `update_flag`, one of [`update_flag`].
    pub update_flag: u32,
}

/// C: `pipe_priority_map`: queue priority 0..=15 to CP pipe priority
/// (`KFD_PIPE_PRIORITY_CS_LOW`, `_MEDIUM`, `_HIGH`).
pub const fn pipe_priority(priority: u32) -> u32 {
    match priority {
        0..=6 => 0,
        7..=10 => 1,
        _ => 2,
    }
}

/// C: `order_base_2`: the smallest `n` with `1 << n >= v` (0 for 0 and 1).
const fn order_base_2(v: u64) -> u32 {
    if v <= 1 {
        0
    } else {
        64 - (v - 1).leading_zeros()
    }
}

/// C: `mqd_symmetrically_map_cu_mask` for one XCC: spreads a CU mask over
/// the shader engines (bit `i` of `cu_mask` goes to SE `i % num_se` first,
/// then to the next SH, then to the next CU), in CU pairs from GFX10 on.
pub fn symmetrically_map_cu_mask(gfx: GfxVersion, topo: &CuTopology, cu_mask: &[u32], count: u32) -> [u32; MAX_NUM_SE] {
    let mut se_mask = [0u32; MAX_NUM_SE];
    if topo.num_se as usize > MAX_NUM_SE || topo.num_sh_per_se as usize > MAX_NUM_SH_PER_SE {
        return se_mask;
    }
    let wgp = gfx.has_wgp();
    let (en_mask, cu_inc) = if wgp { (0x3u32, 2) } else { (0x1u32, 1) };
    let count = count.min(topo.cu_active).min(cu_mask.len() as u32 * 32);
    let mut i = 0u32;
    let mut cu = 0;
    while cu < 16 {
        for sh in 0..topo.num_sh_per_se {
            for se in 0..topo.num_se {
                if topo.cu_per_sh[se as usize][sh as usize] > cu {
                    if cu_mask[(i / 32) as usize] & (en_mask << (i % 32)) != 0 {
                        se_mask[se as usize] |= en_mask << (cu + sh * 16);
                    }
                    i += cu_inc;
                    if i >= count {
                        return se_mask;
                    }
                }
            }
        }
        cu += cu_inc;
    }
    se_mask
}

/// The MQD layout of a generation (C: which `kfd_mqd_manager_v*.c`
/// `mqd_manager_init` picks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MqdGen {
    /// `kfd_mqd_manager_v9.c`: GC 9.x.
    V9,
    /// `kfd_mqd_manager_v10.c`: GC 10.1, 10.3.
    V10,
    /// `kfd_mqd_manager_v11.c`: GC 11.
    V11,
}

impl MqdGen {
    /// The layout `gfx` uses; `None` for GC 12 (`v12_structs.h`, not generated).
    pub const fn of(gfx: GfxVersion) -> Option<MqdGen> {
        match gfx.arch() {
            GfxArch::Gfx9 | GfxArch::Gfx9_4_3 | GfxArch::Gfx9_5 => Some(MqdGen::V9),
            GfxArch::Gfx10_1 | GfxArch::Gfx10_3 => Some(MqdGen::V10),
            GfxArch::Gfx11 => Some(MqdGen::V11),
            GfxArch::Gfx12 => None,
        }
    }
}

/// A compute (or HIQ) MQD of one generation.
#[derive(Clone, Copy)]
pub enum ComputeMqd {
    /// `struct v9_mqd`.
    V9(v9_mqd),
    /// `struct v10_compute_mqd`.
    V10(v10_compute_mqd),
    /// `struct v11_compute_mqd`.
    V11(v11_compute_mqd),
}

/// An SDMA MQD of one generation.
#[derive(Clone, Copy)]
pub enum SdmaMqd {
    /// `struct v9_sdma_mqd`.
    V9(v9_sdma_mqd),
    /// `struct v10_sdma_mqd`.
    V10(v10_sdma_mqd),
    /// `struct v11_sdma_mqd`.
    V11(v11_sdma_mqd),
}

impl ComputeMqd {
    /// A zeroed MQD of `gfx`'s layout (C: the `memset` of `init_mqd`).
    pub fn zeroed(gfx: GfxVersion) -> Option<ComputeMqd> {
        Some(match MqdGen::of(gfx)? {
            MqdGen::V9 => ComputeMqd::V9(v9_mqd::default()),
            MqdGen::V10 => ComputeMqd::V10(v10_compute_mqd::default()),
            MqdGen::V11 => ComputeMqd::V11(v11_compute_mqd::default()),
        })
    }
}

impl SdmaMqd {
    /// A zeroed SDMA MQD of `gfx`'s layout.
    pub fn zeroed(gfx: GfxVersion) -> Option<SdmaMqd> {
        Some(match MqdGen::of(gfx)? {
            MqdGen::V9 => SdmaMqd::V9(v9_sdma_mqd::default()),
            MqdGen::V10 => SdmaMqd::V10(v10_sdma_mqd::default()),
            MqdGen::V11 => SdmaMqd::V11(v11_sdma_mqd::default()),
        })
    }
}

/// The fields every generation's `init_mqd` sets the same way, with the
/// register fields of module `$r`.  `$cwsr` says whether the save area is
/// programmed.
macro_rules! init_compute_common {
    ($m:ident, $r:ident, $dev:ident, $q:ident, $mqd_addr:ident, $preload:expr, $cwsr:expr) => {{
        $m.header = MQD_HEADER;
        $m.compute_pipelinestat_enable = 1;
        $m.compute_static_thread_mgmt_se0 = 0xFFFF_FFFF;
        $m.compute_static_thread_mgmt_se1 = 0xFFFF_FFFF;
        $m.compute_static_thread_mgmt_se2 = 0xFFFF_FFFF;
        $m.compute_static_thread_mgmt_se3 = 0xFFFF_FFFF;
        $m.cp_hqd_persistent_state = $r::CP_HQD_PERSISTENT_STATE__PRELOAD_REQ_MASK
            | $preload << $r::CP_HQD_PERSISTENT_STATE__PRELOAD_SIZE__SHIFT;
        $m.cp_hqd_pq_control =
            5 << $r::CP_HQD_PQ_CONTROL__RPTR_BLOCK_SIZE__SHIFT | $r::CP_HQD_PQ_CONTROL__UNORD_DISPATCH_MASK;
        $m.cp_mqd_control = 1 << $r::CP_MQD_CONTROL__PRIV_STATE__SHIFT;
        $m.cp_mqd_base_addr_lo = $mqd_addr as u32;
        $m.cp_mqd_base_addr_hi = ($mqd_addr >> 32) as u32;
        $m.cp_hqd_quantum = 1 << $r::CP_HQD_QUANTUM__QUANTUM_EN__SHIFT
            | 1 << $r::CP_HQD_QUANTUM__QUANTUM_SCALE__SHIFT
            | 1 << $r::CP_HQD_QUANTUM__QUANTUM_DURATION__SHIFT;
        if $q.format == QueueFormat::Aql {
            $m.cp_hqd_aql_control = 1 << $r::CP_HQD_AQL_CONTROL__CONTROL0__SHIFT;
        }
        if $cwsr {
            $m.cp_hqd_persistent_state |= 1 << $r::CP_HQD_PERSISTENT_STATE__QSWITCH_MODE__SHIFT;
            $m.cp_hqd_ctx_save_base_addr_lo = $q.ctx_save_restore_area_address as u32;
            $m.cp_hqd_ctx_save_base_addr_hi = ($q.ctx_save_restore_area_address >> 32) as u32;
            $m.cp_hqd_ctx_save_size = $q.ctx_save_restore_area_size;
            $m.cp_hqd_cntl_stack_size = $q.ctl_stack_size;
            $m.cp_hqd_cntl_stack_offset = $q.ctl_stack_size;
            $m.cp_hqd_wg_state_offset = $q.ctl_stack_size;
        }
        if $dev.profiler_active {
            $m.compute_perfcount_enable = 1;
        }
    }};
}

/// The fields every generation's `update_mqd` sets the same way.
/// `$aql_extra`: the PQ_CONTROL bits a generation adds for AQL queues.
macro_rules! update_compute_common {
    ($m:ident, $r:ident, $dev:ident, $q:ident, $info:ident, $ib_control:expr, $aql_extra:expr) => {{
        $m.cp_hqd_pq_control &= !$r::CP_HQD_PQ_CONTROL__QUEUE_SIZE_MASK;
        $m.cp_hqd_pq_control |= order_base_2($q.queue_size / 4).wrapping_sub(1);
        $m.cp_hqd_pq_base_lo = ($q.queue_address >> 8) as u32;
        $m.cp_hqd_pq_base_hi = ($q.queue_address >> 40) as u32;
        $m.cp_hqd_pq_rptr_report_addr_lo = $q.read_ptr as u32;
        $m.cp_hqd_pq_rptr_report_addr_hi = ($q.read_ptr >> 32) as u32;
        $m.cp_hqd_pq_wptr_poll_addr_lo = $q.write_ptr as u32;
        $m.cp_hqd_pq_wptr_poll_addr_hi = ($q.write_ptr >> 32) as u32;
        $m.cp_hqd_pq_doorbell_control = $q.doorbell_off << $r::CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET__SHIFT;
        $m.cp_hqd_ib_control = $ib_control;
        // EOP ring of 2^(X+1) dwords, at most 0x800 dwords (X = 0xA).
        $m.cp_hqd_eop_control = if $q.eop_ring_buffer_size != 0 {
            order_base_2(u64::from($q.eop_ring_buffer_size) / 8).min(0xA)
        } else {
            0
        };
        $m.cp_hqd_eop_base_addr_lo = ($q.eop_ring_buffer_address >> 8) as u32;
        $m.cp_hqd_eop_base_addr_hi = ($q.eop_ring_buffer_address >> 40) as u32;
        $m.cp_hqd_iq_timer = 0;
        $m.cp_hqd_vmid = $q.vmid;
        if $q.format == QueueFormat::Aql {
            $m.cp_hqd_pq_control |= $r::CP_HQD_PQ_CONTROL__NO_UPDATE_RPTR_MASK
                | 2 << $r::CP_HQD_PQ_CONTROL__SLOT_BASED_WPTR__SHIFT
                | 1 << $r::CP_HQD_PQ_CONTROL__QUEUE_FULL_EN__SHIFT
                | $aql_extra;
            $m.cp_hqd_pq_doorbell_control |= 1 << $r::CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_BIF_DROP__SHIFT;
        }
        if let Some(info) = $info {
            if info.update_flag == update_flag::PERFCOUNT_ENABLE {
                $m.compute_perfcount_enable = 1;
            } else if info.update_flag == update_flag::PERFCOUNT_DISABLE {
                $m.compute_perfcount_enable = 0;
            }
        }
        $m.cp_hqd_pipe_priority = pipe_priority($q.priority);
    }};
}

/// C: `init_mqd` (then `update_mqd`, as upstream): the MQD of a user
/// compute queue whose MQD lives at GPU address `mqd_addr`.
pub fn init_compute_mqd(mqd: &mut ComputeMqd, dev: &MqdDevice, mqd_addr: u64, q: &QueueProps) {
    match mqd {
        ComputeMqd::V9(m) => {
            *m = v9_mqd::default();
            let cwsr = dev.cwsr_enabled && q.ctx_save_restore_area_address != 0;
            init_compute_common!(m, gc9, dev, q, mqd_addr, 0x53, cwsr);
            set_se4_7(m, [0xFFFF_FFFF; 4]);
            // Bit 14 makes the CP set up DISPATCH_PTR, for the debugger.
            m.cp_hqd_hq_status0 = 1 << 14;
            if q.tba_addr != 0 {
                m.compute_pgm_rsrc2 |= 1 << gc9::COMPUTE_PGM_RSRC2__TRAP_PRESENT__SHIFT;
            }
        }
        ComputeMqd::V10(m) => {
            *m = v10_compute_mqd::default();
            init_compute_common!(m, gc10, dev, q, mqd_addr, 0x53, dev.cwsr_enabled);
            m.cp_hqd_hq_scheduler0 = 1 << 14;
        }
        ComputeMqd::V11(m) => {
            *m = v11_compute_mqd::default();
            init_compute_common!(m, gc11, dev, q, mqd_addr, 0x55, dev.cwsr_enabled);
            let wa_mask = if q.is_dbg_wa { 0xffff } else { 0xFFFF_FFFF };
            set_all_se_v11(m, wa_mask);
            m.cp_hqd_hq_status0 = 1 << 14;
            if dev.pcie_atomics {
                m.cp_hqd_hq_status0 |= 1 << 29;
            }
        }
    }
    update_compute_mqd(mqd, dev, q, None);
}

/// C: `init_mqd_hiq`: a compute MQD, privileged and owned by the kernel.
pub fn init_hiq_mqd(mqd: &mut ComputeMqd, dev: &MqdDevice, mqd_addr: u64, q: &QueueProps) {
    init_compute_mqd(mqd, dev, mqd_addr, q);
    match mqd {
        ComputeMqd::V9(m) => {
            m.cp_hqd_pq_control |=
                1 << gc9::CP_HQD_PQ_CONTROL__PRIV_STATE__SHIFT | 1 << gc9::CP_HQD_PQ_CONTROL__KMD_QUEUE__SHIFT
        }
        ComputeMqd::V10(m) => {
            m.cp_hqd_pq_control |=
                1 << gc10::CP_HQD_PQ_CONTROL__PRIV_STATE__SHIFT | 1 << gc10::CP_HQD_PQ_CONTROL__KMD_QUEUE__SHIFT
        }
        ComputeMqd::V11(m) => {
            m.cp_hqd_pq_control |=
                1 << gc11::CP_HQD_PQ_CONTROL__PRIV_STATE__SHIFT | 1 << gc11::CP_HQD_PQ_CONTROL__KMD_QUEUE__SHIFT
        }
    }
}

/// C: `update_mqd`: the ring, pointers, doorbell, EOP, AQL, priority and
/// CU mask of a compute MQD.
pub fn update_compute_mqd(mqd: &mut ComputeMqd, dev: &MqdDevice, q: &QueueProps, info: Option<&MqdUpdate<'_>>) {
    match mqd {
        ComputeMqd::V9(m) => {
            let ib = 3 << gc9::CP_HQD_IB_CONTROL__MIN_IB_AVAIL_SIZE__SHIFT
                | 1 << gc9::CP_HQD_IB_CONTROL__IB_EXE_DISABLE__SHIFT;
            update_compute_common!(m, gc9, dev, q, info, ib, 1 << gc9::CP_HQD_PQ_CONTROL__WPP_CLAMP_EN__SHIFT);
            if dev.cwsr_enabled && q.ctx_save_restore_area_address != 0 {
                m.cp_hqd_ctx_save_control = 0;
            }
            if let Some(info) = info {
                if dev.gfx.gws_forces_simd_dist() {
                    if info.update_flag & update_flag::IS_GWS != 0 {
                        m.compute_resource_limits |= gc9::COMPUTE_RESOURCE_LIMITS__FORCE_SIMD_DIST_MASK;
                    } else {
                        m.compute_resource_limits &= !gc9::COMPUTE_RESOURCE_LIMITS__FORCE_SIMD_DIST_MASK;
                    }
                }
            }
        }
        ComputeMqd::V10(m) => {
            let ib = 3 << gc10::CP_HQD_IB_CONTROL__MIN_IB_AVAIL_SIZE__SHIFT;
            // GC 10 removed WPP_CLAMP from PQ_CONTROL.
            update_compute_common!(m, gc10, dev, q, info, ib, 0);
            if dev.cwsr_enabled {
                m.cp_hqd_ctx_save_control = 0;
            }
        }
        ComputeMqd::V11(m) => {
            let ib = 3 << gc11::CP_HQD_IB_CONTROL__MIN_IB_AVAIL_SIZE__SHIFT;
            update_compute_common!(m, gc11, dev, q, info, ib, 0);
            if dev.cwsr_enabled {
                m.cp_hqd_ctx_save_control = 0;
            }
        }
    }
    if let Some(info) = info {
        apply_cu_mask(mqd, dev.gfx, info);
    }
}

/// C: `update_cu_mask` of each generation: the static thread management
/// masks from a user CU mask (none on multi-XCC parts, whose masks are per
/// XCC); GFX11 also applies the debugger workaround flags.
pub fn apply_cu_mask(mqd: &mut ComputeMqd, gfx: GfxVersion, info: &MqdUpdate<'_>) {
    let se = |cu: (&[u32], u32, &CuTopology)| symmetrically_map_cu_mask(gfx, cu.2, cu.0, cu.1);
    match mqd {
        ComputeMqd::V9(m) => {
            if gfx.has_per_xcc_mqds() {
                return;
            }
            let Some(cu) = info.cu_mask else { return };
            let s = se(cu);
            set_se0_3(m, &s);
            set_se4_7(m, [s[4], s[5], s[6], s[7]]);
        }
        ComputeMqd::V10(m) => {
            let Some(cu) = info.cu_mask else { return };
            set_se0_3(m, &se(cu));
        }
        ComputeMqd::V11(m) => {
            let wa = info.update_flag & (update_flag::DBG_WA_ENABLE | update_flag::DBG_WA_DISABLE);
            if wa != 0 {
                set_all_se_v11(m, if info.update_flag & update_flag::DBG_WA_ENABLE != 0 { 0xffff } else { 0xFFFF_FFFF });
                return;
            }
            let Some(cu) = info.cu_mask else { return };
            let s = se(cu);
            set_se0_3(m, &s);
            m.compute_static_thread_mgmt_se4 = s[4];
            m.compute_static_thread_mgmt_se5 = s[5];
            m.compute_static_thread_mgmt_se6 = s[6];
            m.compute_static_thread_mgmt_se7 = s[7];
        }
    }
}

/// The first four static thread management masks, named alike in every
/// compute MQD.
trait StaticThreadMgmt {
    fn set_se(&mut self, se: [u32; 4]);
}

macro_rules! static_thread_mgmt {
    ($($t:ty),*) => {$(
        impl StaticThreadMgmt for $t {
            fn set_se(&mut self, se: [u32; 4]) {
                self.compute_static_thread_mgmt_se0 = se[0];
                self.compute_static_thread_mgmt_se1 = se[1];
                self.compute_static_thread_mgmt_se2 = se[2];
                self.compute_static_thread_mgmt_se3 = se[3];
            }
        }
    )*};
}
static_thread_mgmt!(v9_mqd, v10_compute_mqd, v11_compute_mqd);

fn set_se0_3(m: &mut impl StaticThreadMgmt, s: &[u32; MAX_NUM_SE]) {
    m.set_se([s[0], s[1], s[2], s[3]]);
}

fn set_all_se_v11(m: &mut v11_compute_mqd, mask: u32) {
    m.set_se([mask; 4]);
    m.compute_static_thread_mgmt_se4 = mask;
    m.compute_static_thread_mgmt_se5 = mask;
    m.compute_static_thread_mgmt_se6 = mask;
    m.compute_static_thread_mgmt_se7 = mask;
}

/// `v9_mqd`'s SE4..7 masks share their dwords with the GC 9.4.3 XCC
/// fields (an anonymous union upstream); writing a union field is safe.
fn set_se4_7(m: &mut v9_mqd, se: [u32; 4]) {
    m.__bindgen_anon_1 = v9_mqd__bindgen_ty_1 {
        __bindgen_anon_1: v9_mqd__bindgen_ty_1__bindgen_ty_1 {
            compute_static_thread_mgmt_se4: se[0],
            compute_static_thread_mgmt_se5: se[1],
            compute_static_thread_mgmt_se6: se[2],
            compute_static_thread_mgmt_se7: se[3],
        },
    };
}

/// `v9_mqd`'s SE4..7 masks, as a CP reads them.
pub fn v9_se4_7(m: &v9_mqd) -> [u32; 4] {
    // SAFETY: both members of the union are four `u32`s at the same
    // offsets (the generated layout asserts both), and every bit pattern
    // is a valid `u32`, so reading either member is sound.
    let u = unsafe { m.__bindgen_anon_1.__bindgen_anon_1 };
    [
        u.compute_static_thread_mgmt_se4,
        u.compute_static_thread_mgmt_se5,
        u.compute_static_thread_mgmt_se6,
        u.compute_static_thread_mgmt_se7,
    ]
}

/// The SDMA ring fields every generation sets alike.
macro_rules! update_sdma_common {
    ($m:ident, $q:ident, $rb_cntl:expr, $doorbell_shift:expr) => {{
        $m.sdmax_rlcx_rb_cntl = $rb_cntl;
        $m.sdmax_rlcx_rb_base = ($q.queue_address >> 8) as u32;
        $m.sdmax_rlcx_rb_base_hi = ($q.queue_address >> 40) as u32;
        $m.sdmax_rlcx_rb_rptr_addr_lo = $q.read_ptr as u32;
        $m.sdmax_rlcx_rb_rptr_addr_hi = ($q.read_ptr >> 32) as u32;
        $m.sdmax_rlcx_doorbell_offset = $q.doorbell_off << $doorbell_shift;
        $m.sdma_engine_id = $q.sdma_engine_id;
        $m.sdma_queue_id = $q.sdma_queue_id;
        $m.sdmax_rlcx_dummy_reg = SDMA_RLC_DUMMY_DEFAULT;
    }};
}

/// The SDMA RB_CNTL field shifts of a generation (`SDMA0_RLC0_RB_CNTL`
/// up to GFX10, `SDMA0_QUEUE0_RB_CNTL` on GFX11): ring size, VMID, read
/// pointer write-back enable and timer.
struct RbCntl([u32; 4]);

const RB_CNTL_V9: RbCntl = RbCntl([
    sdma4::SDMA0_RLC0_RB_CNTL__RB_SIZE__SHIFT,
    sdma4::SDMA0_RLC0_RB_CNTL__RB_VMID__SHIFT,
    sdma4::SDMA0_RLC0_RB_CNTL__RPTR_WRITEBACK_ENABLE__SHIFT,
    sdma4::SDMA0_RLC0_RB_CNTL__RPTR_WRITEBACK_TIMER__SHIFT,
]);
const RB_CNTL_V10: RbCntl = RbCntl([
    gc10::SDMA0_RLC0_RB_CNTL__RB_SIZE__SHIFT,
    gc10::SDMA0_RLC0_RB_CNTL__RB_VMID__SHIFT,
    gc10::SDMA0_RLC0_RB_CNTL__RPTR_WRITEBACK_ENABLE__SHIFT,
    gc10::SDMA0_RLC0_RB_CNTL__RPTR_WRITEBACK_TIMER__SHIFT,
]);
const RB_CNTL_V11: RbCntl = RbCntl([
    gc11::SDMA0_QUEUE0_RB_CNTL__RB_SIZE__SHIFT,
    gc11::SDMA0_QUEUE0_RB_CNTL__RB_VMID__SHIFT,
    gc11::SDMA0_QUEUE0_RB_CNTL__RPTR_WRITEBACK_ENABLE__SHIFT,
    gc11::SDMA0_QUEUE0_RB_CNTL__RPTR_WRITEBACK_TIMER__SHIFT,
]);

impl RbCntl {
    /// The RB_CNTL of queue `q`: log2 of its dwords, its VMID, read
    /// pointer write-back on, every 2^6 dwords.
    fn of(&self, q: &QueueProps) -> u32 {
        let [size, vmid, wb_enable, wb_timer] = self.0;
        order_base_2(q.queue_size / 4) << size | q.vmid << vmid | 1 << wb_enable | 6 << wb_timer
    }
}

/// C: `init_mqd_sdma` (a zeroed MQD, then `update_mqd_sdma`).
pub fn init_sdma_mqd(mqd: &mut SdmaMqd, dev: &MqdDevice, q: &QueueProps) {
    match mqd {
        SdmaMqd::V9(m) => *m = v9_sdma_mqd::default(),
        SdmaMqd::V10(m) => *m = v10_sdma_mqd::default(),
        SdmaMqd::V11(m) => *m = v11_sdma_mqd::default(),
    }
    update_sdma_mqd(mqd, dev, q);
}

/// C: `update_mqd_sdma`.
pub fn update_sdma_mqd(mqd: &mut SdmaMqd, dev: &MqdDevice, q: &QueueProps) {
    match mqd {
        SdmaMqd::V9(m) => {
            update_sdma_common!(m, q, RB_CNTL_V9.of(q), sdma4::SDMA0_RLC0_DOORBELL_OFFSET__OFFSET__SHIFT);
            // Context switches inside an IB, so one process's long IB
            // cannot starve the others.
            m.sdmax_rlcx_ib_cntl |= sdma4::SDMA0_GFX_IB_CNTL__SWITCH_INSIDE_IB_MASK;
        }
        SdmaMqd::V10(m) => {
            update_sdma_common!(m, q, RB_CNTL_V10.of(q), gc10::SDMA0_RLC0_DOORBELL_OFFSET__OFFSET__SHIFT);
        }
        SdmaMqd::V11(m) => {
            let rb = RB_CNTL_V11.of(q) | 1 << gc11::SDMA0_QUEUE0_RB_CNTL__F32_WPTR_POLL_ENABLE__SHIFT;
            update_sdma_common!(m, q, rb, gc11::SDMA0_QUEUE0_DOORBELL_OFFSET__OFFSET__SHIFT);
            m.sdmax_rlcx_rb_wptr_poll_addr_lo = q.write_ptr as u32;
            m.sdmax_rlcx_rb_wptr_poll_addr_hi = (q.write_ptr >> 32) as u32;
            m.sdmax_rlcx_sched_cntl = (dev.sdma_phase_quantum << gc11::SDMA0_QUEUE0_SCHEDULE_CNTL__CONTEXT_QUANTUM__SHIFT)
                & gc11::SDMA0_QUEUE0_SCHEDULE_CNTL__CONTEXT_QUANTUM_MASK;
        }
    }
}

// ---------------------------------------------------------------------
// The MQD in memory: what crosses the device interface (`hqd_load`,
// `hqd_sdma_load`) and what a CP reads back out of it.

/// The MQD structs: `#[repr(C)]` bindgen structs whose fields are all
/// `u32` (`v9_mqd`'s union too), so they have no padding and every bit
/// pattern is a valid value.
///
/// # Safety
///
/// Implement only for such types.
unsafe trait Pod: Copy + Default {}
// SAFETY: `u32` fields only (bindgen's generated assertions check that the
// size is four bytes per field, so there is no padding).
unsafe impl Pod for v9_mqd {}
// SAFETY: As for `v9_mqd`.
unsafe impl Pod for v10_compute_mqd {}
// SAFETY: As for `v9_mqd`.
unsafe impl Pod for v11_compute_mqd {}
// SAFETY: As for `v9_mqd`.
unsafe impl Pod for v9_sdma_mqd {}
// SAFETY: As for `v9_mqd`.
unsafe impl Pod for v10_sdma_mqd {}
// SAFETY: As for `v9_mqd`.
unsafe impl Pod for v11_sdma_mqd {}

fn bytes_of<T: Pod>(t: &T) -> &[u8] {
    // SAFETY: `T: Pod` has no padding, so all `size_of::<T>()` bytes of
    // `*t` are initialised; the slice borrows `t`.
    unsafe { core::slice::from_raw_parts((t as *const T).cast::<u8>(), core::mem::size_of::<T>()) }
}

fn bytes_of_mut<T: Pod>(t: &mut T) -> &mut [u8] {
    // SAFETY: As in `bytes_of`; and every bit pattern is a valid `T`, so
    // any bytes written through the slice leave a valid `T`.
    unsafe { core::slice::from_raw_parts_mut((t as *mut T).cast::<u8>(), core::mem::size_of::<T>()) }
}

/// A `T` read from exactly `size_of::<T>()` bytes.
fn from_bytes<T: Pod>(b: &[u8]) -> Option<T> {
    let mut t = T::default();
    let dst = bytes_of_mut(&mut t);
    if dst.len() != b.len() {
        return None;
    }
    dst.copy_from_slice(b);
    Some(t)
}

impl MqdGen {
    /// Bytes of this generation's compute MQD (C: `sizeof(struct v9_mqd)`, ...).
    pub const fn compute_size(self) -> usize {
        match self {
            MqdGen::V9 => core::mem::size_of::<v9_mqd>(),
            MqdGen::V10 => core::mem::size_of::<v10_compute_mqd>(),
            MqdGen::V11 => core::mem::size_of::<v11_compute_mqd>(),
        }
    }

    /// Bytes of this generation's SDMA MQD.
    pub const fn sdma_size(self) -> usize {
        match self {
            MqdGen::V9 => core::mem::size_of::<v9_sdma_mqd>(),
            MqdGen::V10 => core::mem::size_of::<v10_sdma_mqd>(),
            MqdGen::V11 => core::mem::size_of::<v11_sdma_mqd>(),
        }
    }
}

impl ComputeMqd {
    /// The MQD's bytes, as the CP reads them (`debugfs_show_mqd`).
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            ComputeMqd::V9(m) => bytes_of(m),
            ComputeMqd::V10(m) => bytes_of(m),
            ComputeMqd::V11(m) => bytes_of(m),
        }
    }

    /// The MQD's bytes, writable (the CP saves its state into them at
    /// dequeue).
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            ComputeMqd::V9(m) => bytes_of_mut(m),
            ComputeMqd::V10(m) => bytes_of_mut(m),
            ComputeMqd::V11(m) => bytes_of_mut(m),
        }
    }

    /// `cp_hqd_pq_rptr`: the read pointer the next load starts from.
    pub fn set_pq_rptr(&mut self, rptr: u32) {
        match self {
            ComputeMqd::V9(m) => m.cp_hqd_pq_rptr = rptr,
            ComputeMqd::V10(m) => m.cp_hqd_pq_rptr = rptr,
            ComputeMqd::V11(m) => m.cp_hqd_pq_rptr = rptr,
        }
    }
}

impl SdmaMqd {
    /// The MQD's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            SdmaMqd::V9(m) => bytes_of(m),
            SdmaMqd::V10(m) => bytes_of(m),
            SdmaMqd::V11(m) => bytes_of(m),
        }
    }

    /// The MQD's bytes, writable.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            SdmaMqd::V9(m) => bytes_of_mut(m),
            SdmaMqd::V10(m) => bytes_of_mut(m),
            SdmaMqd::V11(m) => bytes_of_mut(m),
        }
    }

    /// `sdmax_rlcx_rb_rptr` / `_hi`: the read pointer (bytes) the next
    /// load starts from.
    pub fn set_rb_rptr(&mut self, rptr: u64) {
        let (lo, hi) = (rptr as u32, (rptr >> 32) as u32);
        match self {
            SdmaMqd::V9(m) => (m.sdmax_rlcx_rb_rptr, m.sdmax_rlcx_rb_rptr_hi) = (lo, hi),
            SdmaMqd::V10(m) => (m.sdmax_rlcx_rb_rptr, m.sdmax_rlcx_rb_rptr_hi) = (lo, hi),
            SdmaMqd::V11(m) => (m.sdmax_rlcx_rb_rptr, m.sdmax_rlcx_rb_rptr_hi) = (lo, hi),
        }
    }
}

/// Why a CP refuses an MQD (the virtual GPU answers `-EINVAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MqdError {
    /// Not the size of the generation's MQD.
    Size,
    /// `header` is not [`MQD_HEADER`].
    Header,
    /// No ring, or a ring size the queue's pointers cannot address.
    Ring,
    /// No read-pointer report or write-pointer poll address.
    Pointers,
    /// `cp_hqd_pipe_priority` beyond `KFD_PIPE_PRIORITY_CS_HIGH`.
    Priority,
    /// An SDMA engine the register set does not know (`hqd_sdma_dump`).
    Range,
}

/// The largest `QUEUE_SIZE` / `RB_SIZE` a queue made from the ioctl can
/// have: CREATE_QUEUE's ring size is a `u32` power of two, at most 2 GiB
/// = 2^29 dwords.
const MAX_RING_LOG2_DWORDS: u32 = 29;

/// What a CP learns of a compute queue from its MQD (the registers
/// amdgpu's `hqd_load` writes from it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ComputeQueue {
    /// `cp_hqd_aql_control` CONTROL0: an AQL queue (else PM4).
    pub aql: bool,
    /// `cp_hqd_pq_base_lo/hi`: the ring, GPU VA.
    pub ring_base: u64,
    /// Ring bytes, from `cp_hqd_pq_control` QUEUE_SIZE (2^(n+1) dwords).
    pub ring_size: u64,
    /// `cp_hqd_pq_rptr_report_addr_lo/hi`.
    pub rptr_report: u64,
    /// `cp_hqd_pq_wptr_poll_addr_lo/hi`.
    pub wptr_poll: u64,
    /// `cp_hqd_pq_doorbell_control` DOORBELL_OFFSET: dwords.
    pub doorbell_off: u32,
    /// `cp_hqd_pipe_priority` (0 low, 1 medium, 2 high).
    pub pipe_priority: u32,
    /// `cp_hqd_quantum`, as written.
    pub quantum: u32,
    /// `cp_hqd_eop_base_addr_lo/hi`.
    pub eop_base: u64,
    /// EOP ring bytes from `cp_hqd_eop_control` (0: none).
    pub eop_size: u64,
    /// `cp_hqd_ctx_save_base_addr_lo/hi` (0: no CWSR).
    pub ctx_save_base: u64,
    /// `cp_hqd_ctx_save_size`.
    pub ctx_save_size: u32,
    /// `cp_hqd_cntl_stack_size`.
    pub ctl_stack_size: u32,
    /// `cp_hqd_vmid`.
    pub vmid: u32,
    /// `cp_hqd_pq_rptr`: where the queue resumes (dwords).
    pub pq_rptr: u32,
}

/// What an SDMA engine learns of a queue from its MQD (amdgpu's
/// `hqd_sdma_load`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SdmaQueue {
    /// `sdmax_rlcx_rb_base` / `_hi`.
    pub ring_base: u64,
    /// Ring bytes, from `sdmax_rlcx_rb_cntl` RB_SIZE (2^n dwords).
    pub ring_size: u64,
    /// `sdmax_rlcx_rb_rptr_addr_lo/hi`.
    pub rptr_report: u64,
    /// `sdmax_rlcx_rb_wptr_poll_addr_lo/hi` where the MQD manager sets it
    /// (GFX11, F32_WPTR_POLL_ENABLE), else 0: the driver is given the
    /// write pointer at load, as upstream's `hqd_sdma_load(.., wptr, ..)`.
    pub wptr_poll: u64,
    /// `sdmax_rlcx_doorbell_offset` OFFSET: dwords.
    pub doorbell_off: u32,
    /// `sdma_engine_id`.
    pub engine: u32,
    /// `sdma_queue_id`.
    pub queue: u32,
    /// `sdmax_rlcx_rb_rptr` / `_hi`: where the queue resumes (bytes).
    pub rb_rptr: u64,
}

fn addr(lo: u32, hi: u32) -> u64 {
    u64::from(hi) << 32 | u64::from(lo)
}

/// A 256-byte aligned base split as `>> 8` / `>> 40`.
fn base256(lo: u32, hi: u32) -> u64 {
    u64::from(hi) << 40 | u64::from(lo) << 8
}

macro_rules! decode_compute_common {
    ($m:ident, $r:ident) => {{
        if $m.header != MQD_HEADER {
            return Err(MqdError::Header);
        }
        let qs = ($m.cp_hqd_pq_control & $r::CP_HQD_PQ_CONTROL__QUEUE_SIZE_MASK) >> $r::CP_HQD_PQ_CONTROL__QUEUE_SIZE__SHIFT;
        let ring_base = base256($m.cp_hqd_pq_base_lo, $m.cp_hqd_pq_base_hi);
        if qs + 1 > MAX_RING_LOG2_DWORDS || ring_base == 0 {
            return Err(MqdError::Ring);
        }
        let q = ComputeQueue {
            aql: $m.cp_hqd_aql_control & $r::CP_HQD_AQL_CONTROL__CONTROL0_MASK != 0,
            ring_base,
            ring_size: 4u64 << (qs + 1),
            rptr_report: addr($m.cp_hqd_pq_rptr_report_addr_lo, $m.cp_hqd_pq_rptr_report_addr_hi),
            wptr_poll: addr($m.cp_hqd_pq_wptr_poll_addr_lo, $m.cp_hqd_pq_wptr_poll_addr_hi),
            doorbell_off: ($m.cp_hqd_pq_doorbell_control & $r::CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET_MASK)
                >> $r::CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET__SHIFT,
            pipe_priority: $m.cp_hqd_pipe_priority,
            quantum: $m.cp_hqd_quantum,
            eop_base: base256($m.cp_hqd_eop_base_addr_lo, $m.cp_hqd_eop_base_addr_hi),
            // EOP_SIZE (bits 5:0, at most 0xA as init_mqd writes it):
            // 2^(n+1) dwords.
            eop_size: if $m.cp_hqd_eop_control & 0x3f != 0 { 8u64 << ($m.cp_hqd_eop_control & 0x3f).min(0xA) } else { 0 },
            ctx_save_base: addr($m.cp_hqd_ctx_save_base_addr_lo, $m.cp_hqd_ctx_save_base_addr_hi),
            ctx_save_size: $m.cp_hqd_ctx_save_size,
            ctl_stack_size: $m.cp_hqd_cntl_stack_size,
            vmid: $m.cp_hqd_vmid,
            pq_rptr: $m.cp_hqd_pq_rptr,
        };
        if q.rptr_report == 0 || q.wptr_poll == 0 {
            return Err(MqdError::Pointers);
        }
        if q.pipe_priority > 2 {
            return Err(MqdError::Priority);
        }
        Ok(q)
    }};
}

/// Reads a compute MQD of generation `gen` from its bytes, as the CP loads
/// it; an MQD no CP would run (wrong size or header, no ring, no pointer
/// addresses, an unknown pipe priority) is an error.
pub fn decode_compute(gen: MqdGen, bytes: &[u8]) -> Result<ComputeQueue, MqdError> {
    match gen {
        MqdGen::V9 => {
            let m: v9_mqd = from_bytes(bytes).ok_or(MqdError::Size)?;
            decode_compute_common!(m, gc9)
        }
        MqdGen::V10 => {
            let m: v10_compute_mqd = from_bytes(bytes).ok_or(MqdError::Size)?;
            decode_compute_common!(m, gc10)
        }
        MqdGen::V11 => {
            let m: v11_compute_mqd = from_bytes(bytes).ok_or(MqdError::Size)?;
            decode_compute_common!(m, gc11)
        }
    }
}

macro_rules! decode_sdma_common {
    ($m:ident, $size_mask:expr, $size_shift:expr, $db_mask:expr, $db_shift:expr, $wptr_poll:expr) => {{
        let rb = ($m.sdmax_rlcx_rb_cntl & $size_mask) >> $size_shift;
        let ring_base = base256($m.sdmax_rlcx_rb_base, $m.sdmax_rlcx_rb_base_hi);
        if rb > MAX_RING_LOG2_DWORDS || rb == 0 || ring_base == 0 {
            return Err(MqdError::Ring);
        }
        let q = SdmaQueue {
            ring_base,
            ring_size: 4u64 << rb,
            rptr_report: addr($m.sdmax_rlcx_rb_rptr_addr_lo, $m.sdmax_rlcx_rb_rptr_addr_hi),
            wptr_poll: $wptr_poll,
            doorbell_off: ($m.sdmax_rlcx_doorbell_offset & $db_mask) >> $db_shift,
            engine: $m.sdma_engine_id,
            queue: $m.sdma_queue_id,
            rb_rptr: addr($m.sdmax_rlcx_rb_rptr, $m.sdmax_rlcx_rb_rptr_hi),
        };
        if q.rptr_report == 0 {
            return Err(MqdError::Pointers);
        }
        Ok(q)
    }};
}

/// Reads an SDMA MQD of generation `gen` from its bytes.
pub fn decode_sdma(gen: MqdGen, bytes: &[u8]) -> Result<SdmaQueue, MqdError> {
    match gen {
        MqdGen::V9 => {
            let m: v9_sdma_mqd = from_bytes(bytes).ok_or(MqdError::Size)?;
            decode_sdma_common!(
                m,
                sdma4::SDMA0_RLC0_RB_CNTL__RB_SIZE_MASK,
                sdma4::SDMA0_RLC0_RB_CNTL__RB_SIZE__SHIFT,
                sdma4::SDMA0_RLC0_DOORBELL_OFFSET__OFFSET_MASK,
                sdma4::SDMA0_RLC0_DOORBELL_OFFSET__OFFSET__SHIFT,
                0
            )
        }
        MqdGen::V10 => {
            let m: v10_sdma_mqd = from_bytes(bytes).ok_or(MqdError::Size)?;
            decode_sdma_common!(
                m,
                gc10::SDMA0_RLC0_RB_CNTL__RB_SIZE_MASK,
                gc10::SDMA0_RLC0_RB_CNTL__RB_SIZE__SHIFT,
                gc10::SDMA0_RLC0_DOORBELL_OFFSET__OFFSET_MASK,
                gc10::SDMA0_RLC0_DOORBELL_OFFSET__OFFSET__SHIFT,
                0
            )
        }
        MqdGen::V11 => {
            let m: v11_sdma_mqd = from_bytes(bytes).ok_or(MqdError::Size)?;
            let poll = if m.sdmax_rlcx_rb_cntl & gc11::SDMA0_QUEUE0_RB_CNTL__F32_WPTR_POLL_ENABLE_MASK != 0 {
                addr(m.sdmax_rlcx_rb_wptr_poll_addr_lo, m.sdmax_rlcx_rb_wptr_poll_addr_hi)
            } else {
                0
            };
            decode_sdma_common!(
                m,
                gc11::SDMA0_QUEUE0_RB_CNTL__RB_SIZE_MASK,
                gc11::SDMA0_QUEUE0_RB_CNTL__RB_SIZE__SHIFT,
                gc11::SDMA0_QUEUE0_DOORBELL_OFFSET__OFFSET_MASK,
                gc11::SDMA0_QUEUE0_DOORBELL_OFFSET__OFFSET__SHIFT,
                poll
            )
        }
    }
}

/// Byte offset of the compute MQD's `cp_hqd_pq_rptr` (where a CP saves the
/// read pointer at dequeue).
pub const fn compute_pq_rptr_offset(gen: MqdGen) -> usize {
    match gen {
        MqdGen::V9 => core::mem::offset_of!(v9_mqd, cp_hqd_pq_rptr),
        MqdGen::V10 => core::mem::offset_of!(v10_compute_mqd, cp_hqd_pq_rptr),
        MqdGen::V11 => core::mem::offset_of!(v11_compute_mqd, cp_hqd_pq_rptr),
    }
}

/// Byte offset of the SDMA MQD's `sdmax_rlcx_rb_rptr` (`_hi` follows it).
pub const fn sdma_rb_rptr_offset(gen: MqdGen) -> usize {
    match gen {
        MqdGen::V9 => core::mem::offset_of!(v9_sdma_mqd, sdmax_rlcx_rb_rptr),
        MqdGen::V10 => core::mem::offset_of!(v10_sdma_mqd, sdmax_rlcx_rb_rptr),
        MqdGen::V11 => core::mem::offset_of!(v11_sdma_mqd, sdmax_rlcx_rb_rptr),
    }
}

/// Saves `rptr` (dwords) into a compute MQD's `cp_hqd_pq_rptr`, as a CP
/// does at dequeue; `Size` if `bytes` is not the generation's MQD.
pub fn save_compute_rptr(gen: MqdGen, bytes: &mut [u8], rptr: u32) -> Result<(), MqdError> {
    if bytes.len() != gen.compute_size() {
        return Err(MqdError::Size);
    }
    let o = compute_pq_rptr_offset(gen);
    bytes[o..o + 4].copy_from_slice(&rptr.to_le_bytes());
    Ok(())
}

/// Saves `rptr` (bytes) into an SDMA MQD's `sdmax_rlcx_rb_rptr` / `_hi`.
pub fn save_sdma_rptr(gen: MqdGen, bytes: &mut [u8], rptr: u64) -> Result<(), MqdError> {
    if bytes.len() != gen.sdma_size() {
        return Err(MqdError::Size);
    }
    let o = sdma_rb_rptr_offset(gen);
    bytes[o..o + 4].copy_from_slice(&(rptr as u32).to_le_bytes());
    bytes[o + 4..o + 8].copy_from_slice(&((rptr >> 32) as u32).to_le_bytes());
    Ok(())
}

/// The register set a GPU's `hqd_dump` / `hqd_sdma_dump` read, after the
/// kfd2kgd file that reads them (C: `amdgpu_amdkfd_gfx_v9.c`
/// `kgd_gfx_v9_hqd_dump` with `amdgpu_amdkfd_arcturus.c`
/// `kgd_arcturus_hqd_sdma_dump`, which GC 9.4.1 and 9.4.2 use;
/// `amdgpu_amdkfd_gfx_v10_3.c` `hqd_dump_v10_3` / `hqd_sdma_dump_v10_3`;
/// `amdgpu_amdkfd_gfx_v11.c` `hqd_dump_v11` / `hqd_sdma_dump_v11`).
/// Offsets are the generated `*_offset.h` values: dwords inside the
/// register's segment.  amdgpu adds the segment's base from the IP
/// discovery table (`SOC15_REG_OFFSET`); the virtual GPU has no such table,
/// so its dumps print segment-relative offsets (base 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HqdRegs {
    /// GC 9.x: `gc_9_0_offset.h`, `sdma0_4_2_2_offset.h`.
    Gfx9,
    /// GC 10.3: `gc_10_3_0_offset.h` (SDMA registers included).
    Gfx10_3,
    /// GC 11: `gc_11_0_0_offset.h` (SDMA queue registers included).
    Gfx11,
}

/// Registers of one compute HQD dump (`HQD_N_REGS` of the three
/// `hqd_dump`s: `CP_MQD_BASE_ADDR` to `CP_HQD_PQ_WPTR_HI`).
pub const HQD_DUMP_MAX_REGS: usize = 64;

/// What the engine reports of a loaded compute queue now, over its MQD's
/// register image.
#[derive(Clone, Copy, Debug, Default)]
pub struct ComputeLive {
    /// `CP_HQD_ACTIVE`.
    pub active: bool,
    /// `CP_HQD_PQ_RPTR`, dwords.
    pub rptr_dwords: u32,
    /// `CP_HQD_PQ_WPTR_LO` / `_HI`, dwords.
    pub wptr_dwords: u64,
}

/// What the engine reports of a loaded SDMA queue now.
#[derive(Clone, Copy, Debug, Default)]
pub struct SdmaLive {
    /// `RB_RPTR` / `_HI`, bytes.
    pub rptr: u64,
    /// `RB_WPTR` / `_HI`, bytes.
    pub wptr: u64,
}

impl HqdRegs {
    /// The register set of `gfx`'s kfd2kgd file; `None` where no offsets
    /// are generated (GC 9.4.3+, 10.1, 12).
    pub const fn of(gfx: GfxVersion) -> Option<HqdRegs> {
        match gfx.arch() {
            GfxArch::Gfx9 => Some(HqdRegs::Gfx9),
            GfxArch::Gfx10_3 => Some(HqdRegs::Gfx10_3),
            GfxArch::Gfx11 => Some(HqdRegs::Gfx11),
            _ => None,
        }
    }

    /// The MQD layout whose fields mirror these registers.
    pub const fn mqd_gen(self) -> MqdGen {
        match self {
            HqdRegs::Gfx9 => MqdGen::V9,
            HqdRegs::Gfx10_3 => MqdGen::V10,
            HqdRegs::Gfx11 => MqdGen::V11,
        }
    }

    /// First and last register (dwords) of the compute dump.
    pub const fn compute_range(self) -> (u32, u32) {
        match self {
            HqdRegs::Gfx9 => (gc9_off::mmCP_MQD_BASE_ADDR, gc9_off::mmCP_HQD_PQ_WPTR_HI),
            HqdRegs::Gfx10_3 => (gc10_3_off::mmCP_MQD_BASE_ADDR, gc10_3_off::mmCP_HQD_PQ_WPTR_HI),
            HqdRegs::Gfx11 => (gc11_off::regCP_MQD_BASE_ADDR, gc11_off::regCP_HQD_PQ_WPTR_HI),
        }
    }

    /// `CP_HQD_PQ_DOORBELL_CONTROL` (dwords), a register of the compute
    /// dump: its DOORBELL_OFFSET field is the queue's doorbell as the CP
    /// rings it, a dword index in the doorbell BAR.
    pub const fn doorbell_control(self) -> u32 {
        match self {
            HqdRegs::Gfx9 => gc9_off::mmCP_HQD_PQ_DOORBELL_CONTROL,
            HqdRegs::Gfx10_3 => gc10_3_off::mmCP_HQD_PQ_DOORBELL_CONTROL,
            HqdRegs::Gfx11 => gc11_off::regCP_HQD_PQ_DOORBELL_CONTROL,
        }
    }

    /// The DOORBELL_OFFSET field of a `CP_HQD_PQ_DOORBELL_CONTROL` value.
    pub const fn doorbell_offset(self, ctl: u32) -> u32 {
        match self {
            HqdRegs::Gfx9 => (ctl & gc9::CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET_MASK) >> gc9::CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET__SHIFT,
            HqdRegs::Gfx10_3 => (ctl & gc10::CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET_MASK) >> gc10::CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET__SHIFT,
            HqdRegs::Gfx11 => (ctl & gc11::CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET_MASK) >> gc11::CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET__SHIFT,
        }
    }

    /// The register ranges of the SDMA dump, in the order read (offsets of
    /// engine 0's queue 0, dwords); the last is the `MIDCMD` range.
    pub const fn sdma_ranges(self) -> &'static [(u32, u32)] {
        match self {
            HqdRegs::Gfx9 => &[
                (sdma4_2_2_off::mmSDMA0_RLC0_RB_CNTL, sdma4_2_2_off::mmSDMA0_RLC0_DOORBELL),
                (sdma4_2_2_off::mmSDMA0_RLC0_STATUS, sdma4_2_2_off::mmSDMA0_RLC0_CSA_ADDR_HI),
                (sdma4_2_2_off::mmSDMA0_RLC0_IB_SUB_REMAIN, sdma4_2_2_off::mmSDMA0_RLC0_MINOR_PTR_UPDATE),
                (sdma4_2_2_off::mmSDMA0_RLC0_MIDCMD_DATA0, sdma4_2_2_off::mmSDMA0_RLC0_MIDCMD_CNTL),
            ],
            HqdRegs::Gfx10_3 => &[
                (gc10_3_off::mmSDMA0_RLC0_RB_CNTL, gc10_3_off::mmSDMA0_RLC0_DOORBELL),
                (gc10_3_off::mmSDMA0_RLC0_STATUS, gc10_3_off::mmSDMA0_RLC0_CSA_ADDR_HI),
                (gc10_3_off::mmSDMA0_RLC0_IB_SUB_REMAIN, gc10_3_off::mmSDMA0_RLC0_MINOR_PTR_UPDATE),
                (gc10_3_off::mmSDMA0_RLC0_MIDCMD_DATA0, gc10_3_off::mmSDMA0_RLC0_MIDCMD_CNTL),
            ],
            HqdRegs::Gfx11 => &[
                (gc11_off::regSDMA0_QUEUE0_RB_CNTL, gc11_off::regSDMA0_QUEUE0_RB_WPTR_HI),
                (gc11_off::regSDMA0_QUEUE0_RB_RPTR_ADDR_HI, gc11_off::regSDMA0_QUEUE0_DOORBELL),
                (gc11_off::regSDMA0_QUEUE0_DOORBELL_LOG, gc11_off::regSDMA0_QUEUE0_DOORBELL_LOG),
                (gc11_off::regSDMA0_QUEUE0_DOORBELL_OFFSET, gc11_off::regSDMA0_QUEUE0_RB_PREEMPT),
                (gc11_off::regSDMA0_QUEUE0_MIDCMD_DATA0, gc11_off::regSDMA0_QUEUE0_MIDCMD_CNTL),
            ],
        }
    }

    /// What `get_sdma_rlc_reg_offset` adds to engine 0's queue 0
    /// registers for queue `queue` of engine `engine` (without the segment
    /// base, see [`HqdRegs`]); `None` for an engine the file does not know
    /// (amdgpu's `default:` falls back to engine 0 with a warning).
    pub fn sdma_queue_offset(self, engine: u32, queue: u32) -> Option<u32> {
        let (engine_base, stride) = match self {
            // kgd_arcturus: SDMA0..7 each in its own segment, at the same
            // in-segment offsets.
            HqdRegs::Gfx9 => {
                if engine >= 8 {
                    return None;
                }
                (0, sdma4_2_2_off::mmSDMA0_RLC1_RB_CNTL - sdma4_2_2_off::mmSDMA0_RLC0_RB_CNTL)
            }
            HqdRegs::Gfx10_3 => {
                let first = [
                    gc10_3_off::mmSDMA0_RLC0_RB_CNTL,
                    gc10_3_off::mmSDMA1_RLC0_RB_CNTL,
                    gc10_3_off::mmSDMA2_RLC0_RB_CNTL,
                    gc10_3_off::mmSDMA3_RLC0_RB_CNTL,
                ];
                let f = *first.get(engine as usize)?;
                (f.wrapping_sub(gc10_3_off::mmSDMA0_RLC0_RB_CNTL), gc10_3_off::mmSDMA0_RLC1_RB_CNTL - gc10_3_off::mmSDMA0_RLC0_RB_CNTL)
            }
            HqdRegs::Gfx11 => {
                let first = [gc11_off::regSDMA0_QUEUE0_RB_CNTL, gc11_off::regSDMA1_QUEUE0_RB_CNTL];
                let f = *first.get(engine as usize)?;
                (f.wrapping_sub(gc11_off::regSDMA0_QUEUE0_RB_CNTL), gc11_off::regSDMA0_QUEUE1_RB_CNTL - gc11_off::regSDMA0_QUEUE0_RB_CNTL)
            }
        };
        engine_base.checked_add(queue.checked_mul(stride)?)
    }

    /// Registers of one SDMA dump (`HQD_N_REGS` of the `hqd_sdma_dump`s).
    pub fn sdma_regs(self) -> usize {
        self.sdma_ranges().iter().map(|&(a, b)| (b - a + 1) as usize).sum()
    }

    /// Registers of one compute dump.
    pub const fn compute_regs(self) -> usize {
        let (a, b) = self.compute_range();
        (b - a + 1) as usize
    }
}

/// Dword `i` of `bytes` (little-endian), 0 past the end.
fn dword(bytes: &[u8], i: usize) -> u32 {
    match bytes.get(i * 4..i * 4 + 4) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

fn put_dword(bytes: &mut [u8], offset: usize, v: u32) {
    bytes[offset..offset + 4].copy_from_slice(&v.to_le_bytes());
}

/// `(cp_mqd_base_addr_lo, cp_hqd_active, cp_hqd_pq_wptr_lo)` byte offsets
/// of `gen`'s compute MQD: the first register-image field, and the live
/// ones `compute_hqd_dump` overlays.
fn compute_image_offsets(gen: MqdGen) -> (usize, usize, usize) {
    match gen {
        MqdGen::V9 => (
            core::mem::offset_of!(v9_mqd, cp_mqd_base_addr_lo),
            core::mem::offset_of!(v9_mqd, cp_hqd_active),
            core::mem::offset_of!(v9_mqd, cp_hqd_pq_wptr_lo),
        ),
        MqdGen::V10 => (
            core::mem::offset_of!(v10_compute_mqd, cp_mqd_base_addr_lo),
            core::mem::offset_of!(v10_compute_mqd, cp_hqd_active),
            core::mem::offset_of!(v10_compute_mqd, cp_hqd_pq_wptr_lo),
        ),
        MqdGen::V11 => (
            core::mem::offset_of!(v11_compute_mqd, cp_mqd_base_addr_lo),
            core::mem::offset_of!(v11_compute_mqd, cp_hqd_active),
            core::mem::offset_of!(v11_compute_mqd, cp_hqd_pq_wptr_lo),
        ),
    }
}

/// Byte offset of `sdmax_rlcx_rb_wptr` in `gen`'s SDMA MQD.
fn sdma_rb_wptr_offset(gen: MqdGen) -> usize {
    match gen {
        MqdGen::V9 => core::mem::offset_of!(v9_sdma_mqd, sdmax_rlcx_rb_wptr),
        MqdGen::V10 => core::mem::offset_of!(v10_sdma_mqd, sdmax_rlcx_rb_wptr),
        MqdGen::V11 => core::mem::offset_of!(v11_sdma_mqd, sdmax_rlcx_rb_wptr),
    }
}

/// A compute HQD's registers as `hqd_dump` reads them, into `out` as
/// `(byte offset, value)` pairs (the offset is the register's dword
/// offset << 2, as amdgpu's `DUMP_REG`); returns how many.  A loaded HQD
/// holds the register image of the MQD it loaded (`hqd_load` writes
/// `CP_MQD_BASE_ADDR`..`CP_HQD_PQ_WPTR_HI` from `cp_mqd_base_addr_lo`
/// on), with the engine's `live` values over it; an empty one (`mqd`
/// `None`) reads 0.  `Size` if `mqd` is not the generation's compute MQD
/// or `out` is too short.
pub fn compute_hqd_dump(regs: HqdRegs, mqd: Option<&[u8]>, live: ComputeLive, out: &mut [[u32; 2]]) -> Result<usize, MqdError> {
    let gen = regs.mqd_gen();
    let (first, last) = regs.compute_range();
    let n = regs.compute_regs();
    if out.len() < n {
        return Err(MqdError::Size);
    }
    let mut image = [0u8; HQD_DUMP_MAX_REGS * 4];
    if let Some(m) = mqd {
        if m.len() != gen.compute_size() {
            return Err(MqdError::Size);
        }
        let (base, active, wptr) = compute_image_offsets(gen);
        let src = m.get(base..base + n * 4).ok_or(MqdError::Size)?;
        image[..n * 4].copy_from_slice(src);
        put_dword(&mut image, active - base, u32::from(live.active));
        put_dword(&mut image, compute_pq_rptr_offset(gen) - base, live.rptr_dwords);
        put_dword(&mut image, wptr - base, live.wptr_dwords as u32);
        put_dword(&mut image, wptr - base + 4, (live.wptr_dwords >> 32) as u32);
    }
    for (i, reg) in (first..=last).enumerate() {
        out[i] = [reg << 2, dword(&image, i)];
    }
    Ok(n)
}

/// An SDMA queue's registers as `hqd_sdma_dump` reads them for queue
/// `queue` of engine `engine`, into `out`; returns how many.  A loaded
/// queue's registers are its MQD's (the SDMA MQDs list their fields in the
/// dump's order, `sdmax_rlcx_rb_cntl` on), with `live`'s read and write
/// pointers over them; the `MIDCMD` registers, where an engine saves a
/// command it was preempted in, read 0 (the virtual engines never stop
/// mid-command).  An empty queue (`mqd` `None`) reads 0.  `Range` for an
/// engine the register set does not know, `Size` as for
/// [`compute_hqd_dump`].
pub fn sdma_hqd_dump(
    regs: HqdRegs,
    engine: u32,
    queue: u32,
    mqd: Option<&[u8]>,
    live: SdmaLive,
    out: &mut [[u32; 2]],
) -> Result<usize, MqdError> {
    let gen = regs.mqd_gen();
    let base = regs.sdma_queue_offset(engine, queue).ok_or(MqdError::Range)?;
    let n = regs.sdma_regs();
    if out.len() < n {
        return Err(MqdError::Size);
    }
    let mut image = [0u8; HQD_DUMP_MAX_REGS * 4];
    if let Some(m) = mqd {
        if m.len() != gen.sdma_size() {
            return Err(MqdError::Size);
        }
        image[..n * 4].copy_from_slice(m.get(..n * 4).ok_or(MqdError::Size)?);
        let r = sdma_rb_rptr_offset(gen);
        put_dword(&mut image, r, live.rptr as u32);
        put_dword(&mut image, r + 4, (live.rptr >> 32) as u32);
        let w = sdma_rb_wptr_offset(gen);
        put_dword(&mut image, w, live.wptr as u32);
        put_dword(&mut image, w + 4, (live.wptr >> 32) as u32);
    }
    let ranges = regs.sdma_ranges();
    let midcmd = ranges.len() - 1;
    let mut i = 0;
    for (k, &(a, b)) in ranges.iter().enumerate() {
        for reg in a..=b {
            let v = if k == midcmd { 0 } else { dword(&image, i) };
            out[i] = [base.wrapping_add(reg) << 2, v];
            i += 1;
        }
    }
    Ok(n)
}

/// Prints `(offset, value)` register pairs as upstream's `seq_reg_dump`
/// (`kfd_device_queue_manager.c`): a row starts at a register that does
/// not follow the previous one (offset + 4) or after 8 values, as
/// `"    %08x: %08x"`, the next values of the row as `" %08x"`, rows
/// separated by a newline, and a newline at the end (alone for an empty
/// dump).
pub fn seq_reg_dump(out: &mut impl core::fmt::Write, dump: &[[u32; 2]]) -> core::fmt::Result {
    // Formatted by hand into one row at a time, one `write_str` per row:
    // debugfs `hqds` prints hundreds of thousands of these values per
    // read (every HQD of every GPU, again at each of `seq_read`'s buffer
    // doublings), where `write!` with `{:08x}` costs several formatter
    // calls per value.
    let mut row = Row::default();
    let mut count = 0u32;
    for (i, r) in dump.iter().enumerate() {
        let follows = i > 0 && dump[i - 1][0].wrapping_add(4) == r[0];
        if count == 0 || !follows {
            if i > 0 {
                row.push(b"\n");
                out.write_str(row.text()?)?;
                row.len = 0;
            }
            row.push(b"    ");
            row.hex(r[0]);
            row.push(b": ");
            row.hex(r[1]);
            count = 7;
        } else {
            row.push(b" ");
            row.hex(r[1]);
            count -= 1;
        }
    }
    row.push(b"\n");
    out.write_str(row.text()?)
}

/// One row of [`seq_reg_dump`]: at most `"    %08x: %08x"`, 7 times
/// `" %08x"` and a newline (86 bytes).
struct Row {
    buf: [u8; 96],
    len: usize,
}

impl Default for Row {
    fn default() -> Row {
        Row { buf: [0; 96], len: 0 }
    }
}

impl Row {
    fn push(&mut self, s: &[u8]) {
        self.buf[self.len..self.len + s.len()].copy_from_slice(s);
        self.len += s.len();
    }

    /// `v` as `%08x`.
    fn hex(&mut self, v: u32) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        for i in 0..8 {
            self.buf[self.len + i] = DIGITS[((v >> (28 - 4 * i)) & 0xf) as usize];
        }
        self.len += 8;
    }

    fn text(&self) -> Result<&str, core::fmt::Error> {
        core::str::from_utf8(&self.buf[..self.len]).map_err(|_| core::fmt::Error)
    }
}

#[cfg(test)]
mod tests;
