// SPDX-License-Identifier: GPL-2.0 OR MIT
//! HWS packets: what amdkfd writes into the HIQ and the runlist IB for the
//! CP's hardware scheduler, and a parser for what the CP firmware reads.
//!
//! C: the packets of `kfd_pm4_headers_ai.h` (generated: dword positions are
//! the generated structs' field offsets, bit positions their bitfield
//! accessors), `pm_build_pm4_header` (`kfd_packet_manager_vi.c`),
//! `pm_set_resources_v9`, `pm_map_process_v9`, `pm_map_queues_v9`,
//! `pm_runlist_v9` (`kfd_packet_manager_v9.c`) and `pm_calc_rlib_size` /
//! `pm_create_runlist_ib` (`kfd_packet_manager.c`).
//!
//! Typed, built and parsed: SET_RESOURCES, RUN_LIST, MAP_PROCESS (the GFX9
//! layout and GC 9.4.2+'s `pm4_mes_map_process_aldebaran`,
//! `pm_map_process_aldebaran`), MAP_QUEUES, UNMAP_QUEUES
//! (`pm_unmap_queues_v9`), QUERY_STATUS (`pm_query_status_v9`) and
//! RELEASE_MEM (the ai layout; upstream's v9 packet manager has no
//! `release_mem`, [`ReleaseMem::end_of_pipe`] makes the one
//! `pm_release_mem_vi` makes).  With them the scheduling resources of
//! `set_sched_resources` (`kfd_device_queue_manager.c`) and the preemption
//! sequence of `unmap_queues_cpsch` (UNMAP_QUEUES then a QUERY_STATUS
//! fence, `pm_send_unmap_queue` / `pm_send_query_status`).  Not modelled:
//! enforce_isolation (`exec_cleaner_shader`, single-process runlists).

use core::mem::{offset_of, size_of};

use super::generated::kfd_pm4_headers_ai::*;
use super::generated::kfd_pm4_headers_aldebaran::pm4_mes_map_process_aldebaran;
use super::gfx::GfxVersion;
use super::generated::kfd_pm4_opcodes::{
    IT_MAP_PROCESS, IT_MAP_QUEUES, IT_QUERY_STATUS, IT_RELEASE_MEM, IT_RUN_LIST, IT_SET_RESOURCES, IT_UNMAP_QUEUES,
    PM4_TYPE_3,
};

/// Dwords of a packet struct.
const fn dwords<T>() -> usize {
    size_of::<T>() / 4
}

/// `sizeof(struct pm4_mes_map_process) / 4`.
pub const MAP_PROCESS_DWORDS: usize = dwords::<pm4_mes_map_process>();
/// `sizeof(struct pm4_mes_map_queues) / 4`.
pub const MAP_QUEUES_DWORDS: usize = dwords::<pm4_mes_map_queues>();
/// `sizeof(struct pm4_mes_runlist) / 4`.
pub const RUNLIST_DWORDS: usize = dwords::<pm4_mes_runlist>();
/// `sizeof(struct pm4_mes_set_resources) / 4`.
pub const SET_RESOURCES_DWORDS: usize = dwords::<pm4_mes_set_resources>();
/// `sizeof(struct pm4_mes_map_process_aldebaran) / 4`.
pub const MAP_PROCESS_ALDEBARAN_DWORDS: usize = dwords::<pm4_mes_map_process_aldebaran>();
/// `sizeof(struct pm4_mes_unmap_queues) / 4`.
pub const UNMAP_QUEUES_DWORDS: usize = dwords::<pm4_mes_unmap_queues>();
/// `sizeof(struct pm4_mes_query_status) / 4`.
pub const QUERY_STATUS_DWORDS: usize = dwords::<pm4_mes_query_status>();
/// `sizeof(struct pm4_mec_release_mem) / 4`.
pub const RELEASE_MEM_DWORDS: usize = dwords::<pm4_mec_release_mem>();
/// The longest MAP_PROCESS of either layout.
pub const MAP_PROCESS_MAX_DWORDS: usize =
    if MAP_PROCESS_ALDEBARAN_DWORDS > MAP_PROCESS_DWORDS { MAP_PROCESS_ALDEBARAN_DWORDS } else { MAP_PROCESS_DWORDS };

/// C: `KFD_FENCE_INIT`: what the driver writes to the preemption fence
/// before it asks for it.
pub const FENCE_INIT: u64 = 10;
/// C: `KFD_FENCE_COMPLETED`: what QUERY_STATUS writes to it.
pub const FENCE_COMPLETED: u64 = 100;
/// C: `queue_preemption_timeout_ms`'s default (module parameter).
pub const QUEUE_PREEMPTION_TIMEOUT_MS: u32 = 9000;

/// The preemption timeout a `queue_preemption_timeout_ms` module parameter
/// gives: the value itself from 1 up (upstream's "1 = Minimum"), else
/// (rkfd's -1 default, or a bad 0 or negative value) upstream's default
/// [`QUEUE_PREEMPTION_TIMEOUT_MS`].
pub const fn queue_preemption_timeout_ms(param: i32) -> u32 {
    if param >= 1 {
        param as u32
    } else {
        QUEUE_PREEMPTION_TIMEOUT_MS
    }
}

/// C: `KFD_UNMAP_LATENCY_MS / 100`, SET_RESOURCES' `unmap_latency` (the
/// time the CP waits for an SDMA preemption, in 100 ms), from the
/// driver's `queue_preemption_timeout_ms`.
pub const fn unmap_latency(queue_preemption_timeout_ms: u32) -> u32 {
    ((queue_preemption_timeout_ms - queue_preemption_timeout_ms / 10) >> 1) / 100
}

/// Which packet set the HWS speaks (C: `pm_init`'s choice of
/// `packet_manager_funcs`); they differ in MAP_PROCESS only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmFormat {
    /// `kfd_v9_pm_funcs` (GC 9.0.1 – 9.4.1, GC 10.x).
    V9,
    /// `kfd_aldebaran_pm_funcs` (GC 9.4.2, 9.4.3, 9.4.4, 9.5.0).
    Aldebaran,
}

impl PmFormat {
    /// The packet set of `gfx`.
    pub const fn of(gfx: GfxVersion) -> PmFormat {
        if gfx.hws_map_process_aldebaran() { PmFormat::Aldebaran } else { PmFormat::V9 }
    }

    /// C: `pmf->map_process_size / 4`.
    pub const fn map_process_dwords(self) -> usize {
        match self {
            PmFormat::V9 => MAP_PROCESS_DWORDS,
            PmFormat::Aldebaran => MAP_PROCESS_ALDEBARAN_DWORDS,
        }
    }
}

/// The bitfield structs of the header, read from and written to a dword.
trait Dword: Default {
    fn from_dword(dw: u32) -> Self;
    fn dword(&self) -> u32;
}

macro_rules! dword_bitfields {
    ($unit:ident: $($t:ty),* $(,)?) => {$(
        impl Dword for $t {
            fn from_dword(dw: u32) -> Self {
                Self { _bitfield_1: $unit::new(dw.to_ne_bytes()), ..Default::default() }
            }
            fn dword(&self) -> u32 {
                self._bitfield_1.get(0, 32) as u32
            }
        }
    )*};
}

/// `PM4_MES_TYPE_3_HEADER`'s fields.
type Header = PM4_MES_TYPE_3_HEADER__bindgen_ty_1;
/// `pm4_mes_set_resources.bitfields2`, `.bitfields7`, `.bitfields8`.
type SetResBf2 = pm4_mes_set_resources__bindgen_ty_2__bindgen_ty_1;
type SetResBf7 = pm4_mes_set_resources__bindgen_ty_3__bindgen_ty_1;
type SetResBf8 = pm4_mes_set_resources__bindgen_ty_4__bindgen_ty_1;
/// `pm4_mes_runlist.bitfields4`.
type RunlistBf4 = pm4_mes_runlist__bindgen_ty_3__bindgen_ty_1;
/// `pm4_mes_map_process.bitfields2`, `.bitfields14`.
type MapProcBf2 = pm4_mes_map_process__bindgen_ty_2__bindgen_ty_1;
type MapProcBf14 = pm4_mes_map_process__bindgen_ty_3__bindgen_ty_1;
/// `pm4_mes_map_queues.bitfields2`, `.bitfields3`.
type MapQBf2 = pm4_mes_map_queues__bindgen_ty_2__bindgen_ty_1;
type MapQBf3 = pm4_mes_map_queues__bindgen_ty_3__bindgen_ty_1;
/// `pm4_mes_map_process_aldebaran.bitfields2`, `.bitfields14`.
type AldProcBf2 = super::generated::kfd_pm4_headers_aldebaran::pm4_mes_map_process_aldebaran__bindgen_ty_2__bindgen_ty_1;
type AldProcBf14 = super::generated::kfd_pm4_headers_aldebaran::pm4_mes_map_process_aldebaran__bindgen_ty_3__bindgen_ty_1;
/// `pm4_mes_unmap_queues.bitfields2`, `.bitfields3a`, `.bitfields3b`,
/// `.bitfields4` – `.bitfields6`.
type UnmapBf2 = pm4_mes_unmap_queues__bindgen_ty_2__bindgen_ty_1;
type UnmapBf3a = pm4_mes_unmap_queues__bindgen_ty_3__bindgen_ty_1;
type UnmapBf3b = pm4_mes_unmap_queues__bindgen_ty_3__bindgen_ty_2;
type UnmapBf4 = pm4_mes_unmap_queues__bindgen_ty_4__bindgen_ty_1;
type UnmapBf5 = pm4_mes_unmap_queues__bindgen_ty_5__bindgen_ty_1;
type UnmapBf6 = pm4_mes_unmap_queues__bindgen_ty_6__bindgen_ty_1;
/// `pm4_mes_query_status.bitfields2`, `.bitfields3a`, `.bitfields3b`.
type QueryBf2 = pm4_mes_query_status__bindgen_ty_2__bindgen_ty_1;
type QueryBf3a = pm4_mes_query_status__bindgen_ty_3__bindgen_ty_1;
type QueryBf3b = pm4_mes_query_status__bindgen_ty_3__bindgen_ty_2;
/// `pm4_mec_release_mem.bitfields2`, `.bitfields3`, `.bitfields4`.
type RelBf2 = pm4_mec_release_mem__bindgen_ty_2__bindgen_ty_1;
type RelBf3 = pm4_mec_release_mem__bindgen_ty_3__bindgen_ty_1;
type RelBf4 = pm4_mec_release_mem__bindgen_ty_4__bindgen_ty_1;

dword_bitfields!(__BindgenBitfieldUnit:
    Header, SetResBf2, SetResBf7, SetResBf8, RunlistBf4, MapProcBf2, MapProcBf14, MapQBf2, MapQBf3, UnmapBf2, UnmapBf3a,
    UnmapBf3b, UnmapBf4, UnmapBf5, UnmapBf6, QueryBf2, QueryBf3a, QueryBf3b, RelBf2, RelBf3, RelBf4,
);
/// The Aldebaran header's own copy of bindgen's bitfield unit.
use super::generated::kfd_pm4_headers_aldebaran::__BindgenBitfieldUnit as AldUnit;
dword_bitfields!(AldUnit: AldProcBf2, AldProcBf14);

/// The dword index of a field of a packet struct.
macro_rules! at {
    ($t:ty, $f:ident) => {
        offset_of!($t, $f) / 4
    };
}

/// C: `pm_build_pm4_header`: a type-3 header for a packet of `dwords`.
pub fn type3_header(opcode: u32, dwords: usize) -> u32 {
    let h = Header { _bitfield_1: Header::new_bitfield_1(0, opcode, dwords as u32 - 2, PM4_TYPE_3), ..Default::default() };
    h.dword()
}

fn lo(v: u64) -> u32 {
    v as u32
}
fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}
fn join(lo: u32, hi: u32) -> u64 {
    u64::from(hi) << 32 | u64::from(lo)
}

/// SET_RESOURCES (C: `struct scheduling_resources`, `pm_set_resources_v9`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetResources {
    /// VMIDs the HWS may use.
    pub vmid_mask: u32,
    /// `KFD_UNMAP_LATENCY_MS / 100`.
    pub unmap_latency: u32,
    /// HQD slots the HWS may use.
    pub queue_mask: u64,
    /// GWS entries.
    pub gws_mask: u64,
    /// OAC entries.
    pub oac_mask: u32,
    /// GDS heap base.
    pub gds_heap_base: u32,
    /// GDS heap size.
    pub gds_heap_size: u32,
    /// `enb_xnack_retry_disable_check` (`AMDGPU_GMC_XNACK_FLAG_CHAIN`).
    pub xnack_retry_disable_check: bool,
}

impl SetResources {
    /// The packet, `queue_type` HIQ as upstream.
    pub fn encode(&self) -> [u32; SET_RESOURCES_DWORDS] {
        type P = pm4_mes_set_resources;
        let mut p = [0; SET_RESOURCES_DWORDS];
        p[0] = type3_header(IT_SET_RESOURCES, SET_RESOURCES_DWORDS);
        let mut b2 = SetResBf2::default();
        b2.set_queue_type(queue_type__mes_set_resources__hsa_interface_queue_hiq);
        b2.set_vmid_mask(self.vmid_mask);
        b2.set_unmap_latency(self.unmap_latency);
        b2.set_enb_xnack_retry_disable_check(self.xnack_retry_disable_check.into());
        p[at!(P, __bindgen_anon_2)] = b2.dword();
        let mut b7 = SetResBf7::default();
        b7.set_oac_mask(self.oac_mask);
        p[at!(P, __bindgen_anon_3)] = b7.dword();
        let mut b8 = SetResBf8::default();
        b8.set_gds_heap_base(self.gds_heap_base);
        b8.set_gds_heap_size(self.gds_heap_size);
        p[at!(P, __bindgen_anon_4)] = b8.dword();
        p[at!(P, gws_mask_lo)] = lo(self.gws_mask);
        p[at!(P, gws_mask_hi)] = hi(self.gws_mask);
        p[at!(P, queue_mask_lo)] = lo(self.queue_mask);
        p[at!(P, queue_mask_hi)] = hi(self.queue_mask);
        p
    }

    fn decode(p: &[u32]) -> SetResources {
        type P = pm4_mes_set_resources;
        let b2 = SetResBf2::from_dword(p[at!(P, __bindgen_anon_2)]);
        let b8 = SetResBf8::from_dword(p[at!(P, __bindgen_anon_4)]);
        SetResources {
            vmid_mask: b2.vmid_mask(),
            unmap_latency: b2.unmap_latency(),
            xnack_retry_disable_check: b2.enb_xnack_retry_disable_check() != 0,
            queue_mask: join(p[at!(P, queue_mask_lo)], p[at!(P, queue_mask_hi)]),
            gws_mask: join(p[at!(P, gws_mask_lo)], p[at!(P, gws_mask_hi)]),
            oac_mask: SetResBf7::from_dword(p[at!(P, __bindgen_anon_3)]).oac_mask(),
            gds_heap_base: b8.gds_heap_base(),
            gds_heap_size: b8.gds_heap_size(),
        }
    }
}

/// The compute queue slots and VMIDs amdgpu leaves to amdkfd (C: the
/// fields of `kgd2kfd_shared_resources` `set_sched_resources` reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedResources {
    /// `compute_vmid_bitmap`: the VMIDs the HWS may give processes.
    pub compute_vmid_bitmap: u32,
    /// `cp_queue_bitmap` (`AMDGPU_MAX_QUEUES` = 128 bits): bit `i` is
    /// queue `i % num_queue_per_pipe` of pipe `i / num_queue_per_pipe %
    /// num_pipe_per_mec` of MEC `i / num_queue_per_pipe / num_pipe_per_mec`.
    pub cp_queue_bitmap: u128,
    /// `num_queue_per_pipe`.
    pub num_queue_per_pipe: u32,
    /// `num_pipe_per_mec`.
    pub num_pipe_per_mec: u32,
}

/// Why [`SetResources::for_scheduler`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetResourcesError {
    /// No queues or pipes per MEC.
    NoQueues,
    /// A first-MEC queue the 64-bit `queue_mask` cannot name (C: "Invalid
    /// queue enabled by amdgpu", or a slot past bit 63 of
    /// `amdgpu_queue_mask_bit_to_set_resource_bit`'s `mec * 32 + pipe * 8 +
    /// queue`).
    QueueOutOfMask(u32),
}

impl SetResources {
    /// C: `set_sched_resources` (`kfd_device_queue_manager.c`) with the
    /// fixed fields of `pm_set_resources_v9`: the first MEC's queues of
    /// `cp_queue_bitmap`, each at bit `pipe * 8 + queue` of `queue_mask`
    /// (`amdgpu_queue_mask_bit_to_set_resource_bit`), every GWS entry, no
    /// OAC or GDS, `unmap_latency` from the preemption timeout.
    pub fn for_scheduler(
        res: &SharedResources,
        xnack_chain: bool,
        queue_preemption_timeout_ms: u32,
    ) -> Result<SetResources, SetResourcesError> {
        let (qpp, ppm) = (res.num_queue_per_pipe, res.num_pipe_per_mec);
        if qpp == 0 || ppm == 0 {
            return Err(SetResourcesError::NoQueues);
        }
        let mut queue_mask = 0u64;
        for i in 0..128u32 {
            if res.cp_queue_bitmap & 1 << i == 0 || i / qpp / ppm > 0 {
                continue;
            }
            if i >= 64 {
                return Err(SetResourcesError::QueueOutOfMask(i));
            }
            let bit = (i / qpp % ppm) * 8 + i % qpp;
            if i % qpp >= 8 || bit >= 64 {
                return Err(SetResourcesError::QueueOutOfMask(i));
            }
            queue_mask |= 1 << bit;
        }
        Ok(SetResources {
            vmid_mask: res.compute_vmid_bitmap,
            unmap_latency: unmap_latency(queue_preemption_timeout_ms),
            queue_mask,
            gws_mask: u64::MAX,
            oac_mask: 0,
            gds_heap_base: 0,
            gds_heap_size: 0,
            xnack_retry_disable_check: xnack_chain,
        })
    }
}

/// RUN_LIST (C: `pm_runlist_v9`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunList {
    /// GPU address of the runlist IB (dword aligned).
    pub ib_base: u64,
    /// Its size in dwords.
    pub ib_size: u32,
    /// The IB chains to itself (over-subscription).
    pub chain: bool,
    /// Processes the HWS maps at once.
    pub process_cnt: u32,
}

impl RunList {
    /// The packet; `chained_runlist_idle_disable` follows `chain`, `valid` is set.
    pub fn encode(&self) -> [u32; RUNLIST_DWORDS] {
        type P = pm4_mes_runlist;
        let mut p = [0; RUNLIST_DWORDS];
        p[0] = type3_header(IT_RUN_LIST, RUNLIST_DWORDS);
        let mut b4 = RunlistBf4::default();
        b4.set_ib_size(self.ib_size);
        b4.set_chain(self.chain.into());
        b4.set_chained_runlist_idle_disable(self.chain.into());
        b4.set_valid(1);
        b4.set_process_cnt(self.process_cnt);
        p[at!(P, __bindgen_anon_3)] = b4.dword();
        p[at!(P, __bindgen_anon_2)] = lo(self.ib_base);
        p[at!(P, ib_base_hi)] = hi(self.ib_base);
        p
    }

    fn decode(p: &[u32]) -> RunList {
        type P = pm4_mes_runlist;
        let b4 = RunlistBf4::from_dword(p[at!(P, __bindgen_anon_3)]);
        RunList {
            ib_base: join(p[at!(P, __bindgen_anon_2)], p[at!(P, ib_base_hi)]),
            ib_size: b4.ib_size(),
            chain: b4.chain() != 0,
            process_cnt: b4.process_cnt(),
        }
    }
}

/// MAP_PROCESS (C: the `qcm_process_device` fields `pm_map_process_v9` copies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapProcess {
    /// The process's PASID.
    pub pasid: u32,
    /// `diq_enable` (`qpd->is_debug`).
    pub diq_enable: bool,
    /// `process_quantum`: 10 upstream.
    pub process_quantum: u32,
    /// `qpd->page_table_base`.
    pub page_table_base: u64,
    /// `qpd->sh_mem_bases`.
    pub sh_mem_bases: u32,
    /// `qpd->sh_mem_config`.
    pub sh_mem_config: u32,
    /// `qpd->tba_addr` (0: no trap handler).
    pub tba_addr: u64,
    /// `qpd->tma_addr`.
    pub tma_addr: u64,
    /// `qpd->gds_context_area`.
    pub gds_addr: u64,
    /// `qpd->gds_size` (10 bits).
    pub gds_size: u32,
    /// `num_gws` (0 unless the process has mapped a GWS queue).
    pub num_gws: u32,
    /// `qpd->num_oac`.
    pub num_oac: u32,
    /// `num_queues` (0 for a debugged process).
    pub num_queues: u32,
    /// Aldebaran only: `spi_gdbg_per_vmid_cntl` (`pdd->spi_dbg_override |
    /// spi_dbg_launch_mode`).
    pub spi_gdbg_per_vmid_cntl: u32,
    /// Aldebaran only: `tcp_watch_cntl` (the debugger's watch points).
    pub tcp_watch_cntl: [u32; 4],
    /// Aldebaran only: `single_memops`.
    pub single_memops: bool,
}

/// C: `SQ_SHADER_TBA_HI__TRAP_EN__SHIFT` (gc_10_1_0_sh_mask.h, which
/// `kfd_packet_manager_v9.c` includes).
use super::generated::gc_10_1_0_sh_mask::SQ_SHADER_TBA_HI__TRAP_EN__SHIFT;

impl MapProcess {
    /// The packet (`sdma_enable` set, as upstream).
    pub fn encode(&self) -> [u32; MAP_PROCESS_DWORDS] {
        type P = pm4_mes_map_process;
        let mut p = [0; MAP_PROCESS_DWORDS];
        p[0] = type3_header(IT_MAP_PROCESS, MAP_PROCESS_DWORDS);
        let mut b2 = MapProcBf2::default();
        b2.set_diq_enable(self.diq_enable.into());
        b2.set_process_quantum(self.process_quantum);
        b2.set_pasid(self.pasid);
        p[at!(P, __bindgen_anon_2)] = b2.dword();
        let mut b14 = MapProcBf14::default();
        b14.set_gds_size(self.gds_size & 0x3f);
        b14.set_gds_size_hi((self.gds_size >> 6) & 0xf);
        b14.set_num_gws(self.num_gws);
        b14.set_num_oac(self.num_oac);
        b14.set_sdma_enable(1);
        b14.set_num_queues(self.num_queues);
        p[at!(P, __bindgen_anon_3)] = b14.dword();
        p[at!(P, sh_mem_config)] = self.sh_mem_config;
        p[at!(P, sh_mem_bases)] = self.sh_mem_bases;
        if self.tba_addr != 0 {
            p[at!(P, sq_shader_tba_lo)] = lo(self.tba_addr >> 8);
            p[at!(P, sq_shader_tba_hi)] = hi(self.tba_addr >> 8) | 1 << SQ_SHADER_TBA_HI__TRAP_EN__SHIFT;
            p[at!(P, sq_shader_tma_lo)] = lo(self.tma_addr >> 8);
            p[at!(P, sq_shader_tma_hi)] = hi(self.tma_addr >> 8);
        }
        p[at!(P, gds_addr_lo)] = lo(self.gds_addr);
        p[at!(P, gds_addr_hi)] = hi(self.gds_addr);
        p[at!(P, vm_context_page_table_base_addr_lo32)] = lo(self.page_table_base);
        p[at!(P, vm_context_page_table_base_addr_hi32)] = hi(self.page_table_base);
        p
    }

    /// The packet in `fmt`'s layout, into `out` (at least
    /// `fmt.map_process_dwords()` long); returns the dwords written.
    /// GFX9 (C: `pm_map_process_v9`) sets TRAP_EN in `sq_shader_tba_hi`
    /// and has no debugger words; Aldebaran (`pm_map_process_aldebaran`)
    /// the reverse.
    pub fn write(&self, fmt: PmFormat, out: &mut [u32]) -> usize {
        let n = fmt.map_process_dwords();
        match fmt {
            PmFormat::V9 => out[..n].copy_from_slice(&self.encode()),
            PmFormat::Aldebaran => out[..n].copy_from_slice(&self.encode_aldebaran()),
        }
        n
    }

    /// C: `pm_map_process_aldebaran` (enforce_isolation off).
    pub fn encode_aldebaran(&self) -> [u32; MAP_PROCESS_ALDEBARAN_DWORDS] {
        type P = pm4_mes_map_process_aldebaran;
        let mut p = [0; MAP_PROCESS_ALDEBARAN_DWORDS];
        p[0] = type3_header(IT_MAP_PROCESS, MAP_PROCESS_ALDEBARAN_DWORDS);
        let mut b2 = AldProcBf2::default();
        b2.set_diq_enable(self.diq_enable.into());
        b2.set_process_quantum(self.process_quantum);
        b2.set_pasid(self.pasid);
        b2.set_single_memops(self.single_memops.into());
        p[at!(P, __bindgen_anon_2)] = b2.dword();
        let mut b14 = AldProcBf14::default();
        b14.set_gds_size(self.gds_size & 0x3f);
        b14.set_gds_size_hi((self.gds_size >> 6) & 0xf);
        b14.set_num_gws(self.num_gws);
        b14.set_num_oac(self.num_oac);
        b14.set_sdma_enable(1);
        b14.set_num_queues(self.num_queues);
        p[at!(P, __bindgen_anon_3)] = b14.dword();
        p[at!(P, spi_gdbg_per_vmid_cntl)] = self.spi_gdbg_per_vmid_cntl;
        let w = at!(P, tcp_watch_cntl);
        p[w..w + 4].copy_from_slice(&self.tcp_watch_cntl);
        p[at!(P, sh_mem_config)] = self.sh_mem_config;
        p[at!(P, sh_mem_bases)] = self.sh_mem_bases;
        if self.tba_addr != 0 {
            p[at!(P, sq_shader_tba_lo)] = lo(self.tba_addr >> 8);
            p[at!(P, sq_shader_tba_hi)] = hi(self.tba_addr >> 8);
            p[at!(P, sq_shader_tma_lo)] = lo(self.tma_addr >> 8);
            p[at!(P, sq_shader_tma_hi)] = hi(self.tma_addr >> 8);
        }
        p[at!(P, gds_addr_lo)] = lo(self.gds_addr);
        p[at!(P, gds_addr_hi)] = hi(self.gds_addr);
        p[at!(P, vm_context_page_table_base_addr_lo32)] = lo(self.page_table_base);
        p[at!(P, vm_context_page_table_base_addr_hi32)] = hi(self.page_table_base);
        p
    }

    fn decode_aldebaran(p: &[u32]) -> MapProcess {
        type P = pm4_mes_map_process_aldebaran;
        let b2 = AldProcBf2::from_dword(p[at!(P, __bindgen_anon_2)]);
        let b14 = AldProcBf14::from_dword(p[at!(P, __bindgen_anon_3)]);
        let w = at!(P, tcp_watch_cntl);
        let mut tcp_watch_cntl = [0; 4];
        tcp_watch_cntl.copy_from_slice(&p[w..w + 4]);
        MapProcess {
            pasid: b2.pasid(),
            diq_enable: b2.diq_enable() != 0,
            process_quantum: b2.process_quantum(),
            single_memops: b2.single_memops() != 0,
            page_table_base: join(
                p[at!(P, vm_context_page_table_base_addr_lo32)],
                p[at!(P, vm_context_page_table_base_addr_hi32)],
            ),
            sh_mem_bases: p[at!(P, sh_mem_bases)],
            sh_mem_config: p[at!(P, sh_mem_config)],
            tba_addr: join(p[at!(P, sq_shader_tba_lo)], p[at!(P, sq_shader_tba_hi)]) << 8,
            tma_addr: join(p[at!(P, sq_shader_tma_lo)], p[at!(P, sq_shader_tma_hi)]) << 8,
            gds_addr: join(p[at!(P, gds_addr_lo)], p[at!(P, gds_addr_hi)]),
            gds_size: b14.gds_size() | b14.gds_size_hi() << 6,
            num_gws: b14.num_gws(),
            num_oac: b14.num_oac(),
            num_queues: b14.num_queues(),
            spi_gdbg_per_vmid_cntl: p[at!(P, spi_gdbg_per_vmid_cntl)],
            tcp_watch_cntl,
        }
    }

    fn decode(p: &[u32]) -> MapProcess {
        type P = pm4_mes_map_process;
        let b2 = MapProcBf2::from_dword(p[at!(P, __bindgen_anon_2)]);
        let b14 = MapProcBf14::from_dword(p[at!(P, __bindgen_anon_3)]);
        let tba_hi = p[at!(P, sq_shader_tba_hi)] & !(1 << SQ_SHADER_TBA_HI__TRAP_EN__SHIFT);
        MapProcess {
            pasid: b2.pasid(),
            diq_enable: b2.diq_enable() != 0,
            process_quantum: b2.process_quantum(),
            page_table_base: join(
                p[at!(P, vm_context_page_table_base_addr_lo32)],
                p[at!(P, vm_context_page_table_base_addr_hi32)],
            ),
            sh_mem_bases: p[at!(P, sh_mem_bases)],
            sh_mem_config: p[at!(P, sh_mem_config)],
            tba_addr: join(p[at!(P, sq_shader_tba_lo)], tba_hi) << 8,
            tma_addr: join(p[at!(P, sq_shader_tma_lo)], p[at!(P, sq_shader_tma_hi)]) << 8,
            gds_addr: join(p[at!(P, gds_addr_lo)], p[at!(P, gds_addr_hi)]),
            gds_size: b14.gds_size() | b14.gds_size_hi() << 6,
            num_gws: b14.num_gws(),
            num_oac: b14.num_oac(),
            num_queues: b14.num_queues(),
            ..MapProcess::default()
        }
    }
}

/// The engine a MAP_QUEUES maps a queue on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// A compute queue.
    Compute,
    /// SDMA engine `n`.
    Sdma(u32),
}

/// MAP_QUEUES for one queue (C: `pm_map_queues_v9`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapQueues {
    /// The engine.
    pub engine: Engine,
    /// A static (debugged-process) compute queue:
    /// `normal_latency_static_queue` rather than `normal_compute`.
    pub is_static: bool,
    /// `gws_control_queue`.
    pub is_gws: bool,
    /// `doorbell_offset`.
    pub doorbell_off: u32,
    /// GPU address of the queue's MQD (`gart_mqd_addr`).
    pub mqd_addr: u64,
    /// The queue's write pointer (`write_ptr`).
    pub wptr_addr: u64,
}

impl MapQueues {
    /// The packet.  `ext_eng`: the SDMA IP is 5.2 or later
    /// (`pm_use_ext_eng`), so SDMA engines go through `extended_engine_sel`.
    pub fn encode(&self, ext_eng: bool) -> [u32; MAP_QUEUES_DWORDS] {
        type P = pm4_mes_map_queues;
        let mut p = [0; MAP_QUEUES_DWORDS];
        p[0] = type3_header(IT_MAP_QUEUES, MAP_QUEUES_DWORDS);
        let mut b2 = MapQBf2::default();
        b2.set_num_queues(1);
        b2.set_queue_sel(queue_sel__mes_map_queues__map_to_hws_determined_queue_slots_vi);
        b2.set_engine_sel(engine_sel__mes_map_queues__compute_vi);
        b2.set_gws_control_queue(self.is_gws.into());
        b2.set_extended_engine_sel(extended_engine_sel__mes_map_queues__legacy_engine_sel);
        b2.set_queue_type(queue_type__mes_map_queues__normal_compute_vi);
        match self.engine {
            Engine::Compute if self.is_static => {
                b2.set_queue_type(queue_type__mes_map_queues__normal_latency_static_queue_vi)
            }
            Engine::Compute => {}
            Engine::Sdma(n) if n < 2 && !ext_eng => b2.set_engine_sel(n + engine_sel__mes_map_queues__sdma0_vi),
            Engine::Sdma(n) => {
                b2.set_extended_engine_sel(if n >= 8 {
                    extended_engine_sel__mes_map_queues__sdma8_to_15_sel
                } else {
                    extended_engine_sel__mes_map_queues__sdma0_to_7_sel
                });
                b2.set_engine_sel(n % 8);
            }
        }
        p[at!(P, __bindgen_anon_2)] = b2.dword();
        let mut b3 = MapQBf3::default();
        b3.set_doorbell_offset(self.doorbell_off);
        p[at!(P, __bindgen_anon_3)] = b3.dword();
        p[at!(P, mqd_addr_lo)] = lo(self.mqd_addr);
        p[at!(P, mqd_addr_hi)] = hi(self.mqd_addr);
        p[at!(P, wptr_addr_lo)] = lo(self.wptr_addr);
        p[at!(P, wptr_addr_hi)] = hi(self.wptr_addr);
        p
    }

    fn decode(p: &[u32]) -> MapQueues {
        type P = pm4_mes_map_queues;
        let b2 = MapQBf2::from_dword(p[at!(P, __bindgen_anon_2)]);
        let engine = match (b2.extended_engine_sel(), b2.engine_sel()) {
            (e, n) if e == extended_engine_sel__mes_map_queues__sdma0_to_7_sel => Engine::Sdma(n),
            (e, n) if e == extended_engine_sel__mes_map_queues__sdma8_to_15_sel => Engine::Sdma(n + 8),
            (_, n) if n >= engine_sel__mes_map_queues__sdma0_vi => Engine::Sdma(n - engine_sel__mes_map_queues__sdma0_vi),
            _ => Engine::Compute,
        };
        MapQueues {
            engine,
            is_static: b2.queue_type() == queue_type__mes_map_queues__normal_latency_static_queue_vi,
            is_gws: b2.gws_control_queue() != 0,
            doorbell_off: MapQBf3::from_dword(p[at!(P, __bindgen_anon_3)]).doorbell_offset(),
            mqd_addr: join(p[at!(P, mqd_addr_lo)], p[at!(P, mqd_addr_hi)]),
            wptr_addr: join(p[at!(P, wptr_addr_lo)], p[at!(P, wptr_addr_hi)]),
        }
    }
}

/// What UNMAP_QUEUES does to the queues it selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnmapAction {
    /// Preempt them: save their state into their MQDs and unmap them
    /// (`preempt_queues`).
    Preempt,
    /// Reset them without saving (`reset_queues`; upstream's `reset`).
    Reset,
    /// `disable_process_queues` (not sent by amdkfd).
    DisableProcess,
}

/// Which queues UNMAP_QUEUES selects (C: `enum kfd_unmap_queues_filter`,
/// plus the by-doorbell form of the header amdkfd never sends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnmapFilter {
    /// `perform_request_on_specified_queues`: up to four queues by doorbell
    /// offset.
    Doorbells {
        /// `num_queues` (1..=4 meaningful).
        num: u32,
        /// `doorbell_offset0..3`.
        offsets: [u32; 4],
    },
    /// `KFD_UNMAP_QUEUES_FILTER_BY_PASID`: every queue of the process.
    Pasid(u32),
    /// `KFD_UNMAP_QUEUES_FILTER_ALL_QUEUES`.
    AllQueues,
    /// `KFD_UNMAP_QUEUES_FILTER_DYNAMIC_QUEUES`: all but static
    /// (debugged-process) queues.
    DynamicQueues,
}

/// UNMAP_QUEUES (C: `pm_unmap_queues_v9`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnmapQueues {
    /// Preempt or reset.
    pub action: UnmapAction,
    /// The queues.
    pub filter: UnmapFilter,
    /// `extended_engine_sel` is `sdma0_to_7_sel` (`pm_use_ext_eng`).
    pub ext_eng: bool,
    /// `engine_sel` (amdkfd: always `compute`; the HWS unmaps the
    /// selected processes' SDMA queues with them).
    pub engine_sel: u32,
}

impl UnmapQueues {
    /// What amdkfd sends (C: `pm_unmap_queues_v9(filter, param, reset)`).
    pub fn new(filter: UnmapFilter, reset: bool, ext_eng: bool) -> UnmapQueues {
        UnmapQueues {
            action: if reset { UnmapAction::Reset } else { UnmapAction::Preempt },
            filter,
            ext_eng,
            engine_sel: engine_sel__mes_unmap_queues__compute,
        }
    }

    /// The packet.
    pub fn encode(&self) -> [u32; UNMAP_QUEUES_DWORDS] {
        type P = pm4_mes_unmap_queues;
        let mut p = [0; UNMAP_QUEUES_DWORDS];
        p[0] = type3_header(IT_UNMAP_QUEUES, UNMAP_QUEUES_DWORDS);
        let mut b2 = UnmapBf2::default();
        b2.set_extended_engine_sel(if self.ext_eng {
            extended_engine_sel__mes_unmap_queues__sdma0_to_7_sel
        } else {
            extended_engine_sel__mes_unmap_queues__legacy_engine_sel
        });
        b2.set_engine_sel(self.engine_sel);
        b2.set_action(match self.action {
            UnmapAction::Preempt => action__mes_unmap_queues__preempt_queues,
            UnmapAction::Reset => action__mes_unmap_queues__reset_queues,
            UnmapAction::DisableProcess => action__mes_unmap_queues__disable_process_queues,
        });
        match self.filter {
            UnmapFilter::Doorbells { num, offsets } => {
                b2.set_queue_sel(queue_sel__mes_unmap_queues__perform_request_on_specified_queues);
                b2.set_num_queues(num);
                let mut b3 = UnmapBf3b::default();
                b3.set_doorbell_offset0(offsets[0]);
                p[at!(P, __bindgen_anon_3)] = b3.dword();
                let mut b4 = UnmapBf4::default();
                b4.set_doorbell_offset1(offsets[1]);
                p[at!(P, __bindgen_anon_4)] = b4.dword();
                let mut b5 = UnmapBf5::default();
                b5.set_doorbell_offset2(offsets[2]);
                p[at!(P, __bindgen_anon_5)] = b5.dword();
                let mut b6 = UnmapBf6::default();
                b6.set_doorbell_offset3(offsets[3]);
                p[at!(P, __bindgen_anon_6)] = b6.dword();
            }
            UnmapFilter::Pasid(pasid) => {
                b2.set_queue_sel(queue_sel__mes_unmap_queues__perform_request_on_pasid_queues);
                let mut b3 = UnmapBf3a::default();
                b3.set_pasid(pasid);
                p[at!(P, __bindgen_anon_3)] = b3.dword();
            }
            UnmapFilter::AllQueues => b2.set_queue_sel(queue_sel__mes_unmap_queues__unmap_all_queues),
            UnmapFilter::DynamicQueues => b2.set_queue_sel(queue_sel__mes_unmap_queues__unmap_all_non_static_queues),
        }
        p[at!(P, __bindgen_anon_2)] = b2.dword();
        p
    }

    /// `None` for the reserved action.
    fn decode(p: &[u32]) -> Option<UnmapQueues> {
        type P = pm4_mes_unmap_queues;
        let b2 = UnmapBf2::from_dword(p[at!(P, __bindgen_anon_2)]);
        let action = match b2.action() {
            a if a == action__mes_unmap_queues__preempt_queues => UnmapAction::Preempt,
            a if a == action__mes_unmap_queues__reset_queues => UnmapAction::Reset,
            a if a == action__mes_unmap_queues__disable_process_queues => UnmapAction::DisableProcess,
            _ => return None,
        };
        let filter = match b2.queue_sel() {
            q if q == queue_sel__mes_unmap_queues__perform_request_on_specified_queues => UnmapFilter::Doorbells {
                num: b2.num_queues(),
                offsets: [
                    UnmapBf3b::from_dword(p[at!(P, __bindgen_anon_3)]).doorbell_offset0(),
                    UnmapBf4::from_dword(p[at!(P, __bindgen_anon_4)]).doorbell_offset1(),
                    UnmapBf5::from_dword(p[at!(P, __bindgen_anon_5)]).doorbell_offset2(),
                    UnmapBf6::from_dword(p[at!(P, __bindgen_anon_6)]).doorbell_offset3(),
                ],
            },
            q if q == queue_sel__mes_unmap_queues__perform_request_on_pasid_queues => {
                UnmapFilter::Pasid(UnmapBf3a::from_dword(p[at!(P, __bindgen_anon_3)]).pasid())
            }
            q if q == queue_sel__mes_unmap_queues__unmap_all_queues => UnmapFilter::AllQueues,
            _ => UnmapFilter::DynamicQueues,
        };
        Some(UnmapQueues {
            action,
            filter,
            ext_eng: b2.extended_engine_sel() == extended_engine_sel__mes_unmap_queues__sdma0_to_7_sel,
            engine_sel: b2.engine_sel(),
        })
    }
}

/// QUERY_STATUS (C: `pm_query_status_v9`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryStatus {
    /// `context_id` (the interrupt's context id).
    pub context_id: u32,
    /// `interrupt_sel` (`mes_query_status_interrupt_sel_enum`).
    pub interrupt_sel: u32,
    /// `command` (`mes_query_status_command_enum`).
    pub command: u32,
    /// Ordinal 3: the PASID (`bitfields3a`) or doorbell offset and engine
    /// (`bitfields3b`) of a process/queue status query; 0 for a fence.
    pub ordinal3: u32,
    /// Where the fence value goes (`addr_lo`/`addr_hi`).
    pub addr: u64,
    /// The fence value (`data_lo`/`data_hi`).
    pub data: u64,
}

impl QueryStatus {
    /// What amdkfd sends after UNMAP_QUEUES (C: `pm_query_status_v9`):
    /// write `value` to `addr` once everything before it is done and its
    /// writes are acknowledged (`fence_only_after_write_ack`).
    pub fn fence(addr: u64, value: u64) -> QueryStatus {
        QueryStatus {
            context_id: 0,
            interrupt_sel: interrupt_sel__mes_query_status__completion_status,
            command: command__mes_query_status__fence_only_after_write_ack,
            ordinal3: 0,
            addr,
            data: value,
        }
    }

    /// The command writes the fence (every command but `interrupt_only`).
    pub fn writes_fence(&self) -> bool {
        self.command != command__mes_query_status__interrupt_only
    }

    /// The command raises an interrupt (`interrupt_only` or
    /// `fence_wait_for_write_ack_send_interrupt`).
    pub fn interrupts(&self) -> bool {
        self.command == command__mes_query_status__interrupt_only
            || self.command == command__mes_query_status__fence_wait_for_write_ack_send_interrupt
    }

    /// The packet.
    pub fn encode(&self) -> [u32; QUERY_STATUS_DWORDS] {
        type P = pm4_mes_query_status;
        let mut p = [0; QUERY_STATUS_DWORDS];
        p[0] = type3_header(IT_QUERY_STATUS, QUERY_STATUS_DWORDS);
        let mut b2 = QueryBf2::default();
        b2.set_context_id(self.context_id);
        b2.set_interrupt_sel(self.interrupt_sel);
        b2.set_command(self.command);
        p[at!(P, __bindgen_anon_2)] = b2.dword();
        p[at!(P, __bindgen_anon_3)] = self.ordinal3;
        p[at!(P, addr_lo)] = lo(self.addr);
        p[at!(P, addr_hi)] = hi(self.addr);
        p[at!(P, data_lo)] = lo(self.data);
        p[at!(P, data_hi)] = hi(self.data);
        p
    }

    fn decode(p: &[u32]) -> QueryStatus {
        type P = pm4_mes_query_status;
        let b2 = QueryBf2::from_dword(p[at!(P, __bindgen_anon_2)]);
        QueryStatus {
            context_id: b2.context_id(),
            interrupt_sel: b2.interrupt_sel(),
            command: b2.command(),
            ordinal3: p[at!(P, __bindgen_anon_3)],
            addr: join(p[at!(P, addr_lo)], p[at!(P, addr_hi)]),
            data: join(p[at!(P, data_lo)], p[at!(P, data_hi)]),
        }
    }

    /// The PASID of a process-status query (`bitfields3a.pasid`).
    pub fn pasid(&self) -> u32 {
        QueryBf3a::from_dword(self.ordinal3).pasid()
    }

    /// The doorbell offset of a queue-status query (`bitfields3b`).
    pub fn doorbell_offset(&self) -> u32 {
        QueryBf3b::from_dword(self.ordinal3).doorbell_offset()
    }
}

/// C: `CACHE_FLUSH_AND_INV_TS_EVENT`.
pub const CACHE_FLUSH_AND_INV_TS_EVENT_ID: u32 = CACHE_FLUSH_AND_INV_TS_EVENT;

/// RELEASE_MEM in the ai layout (`pm4_mec_release_mem`): the fields
/// amdkfd's packet builder sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseMem {
    /// `event_type`.
    pub event_type: u32,
    /// `event_index` (`mec_release_mem_event_index_enum`).
    pub event_index: u32,
    /// `tcl1_action_ena`.
    pub tcl1_action: bool,
    /// `tc_action_ena`.
    pub tc_action: bool,
    /// `cache_policy`.
    pub cache_policy: u32,
    /// `dst_sel`.
    pub dst_sel: u32,
    /// `int_sel`.
    pub int_sel: u32,
    /// `data_sel`.
    pub data_sel: u32,
    /// The destination, dword aligned (`address_lo_32b` << 2, `address_hi`).
    pub addr: u64,
    /// `data_lo` / `data_hi`.
    pub data: u64,
    /// `int_ctxid`.
    pub int_ctxid: u32,
}

impl ReleaseMem {
    /// The packet `pm_release_mem_vi` builds (upstream's v9 packet manager
    /// sends none, `release_mem = NULL`): at end of pipe, flush and
    /// invalidate L1/L2, write the low 32 bits of 0 to `gpu_addr` and
    /// interrupt after the write is confirmed.
    pub fn end_of_pipe(gpu_addr: u64) -> ReleaseMem {
        ReleaseMem {
            event_type: CACHE_FLUSH_AND_INV_TS_EVENT_ID,
            event_index: event_index__mec_release_mem__end_of_pipe,
            tcl1_action: true,
            tc_action: true,
            cache_policy: cache_policy__mec_release_mem__lru,
            dst_sel: dst_sel__mec_release_mem__memory_controller,
            int_sel: int_sel__mec_release_mem__send_interrupt_after_write_confirm,
            data_sel: data_sel__mec_release_mem__send_32_bit_low,
            addr: gpu_addr & !3,
            data: 0,
            int_ctxid: 0,
        }
    }

    /// The packet.
    pub fn encode(&self) -> [u32; RELEASE_MEM_DWORDS] {
        type P = pm4_mec_release_mem;
        let mut p = [0; RELEASE_MEM_DWORDS];
        p[0] = type3_header(IT_RELEASE_MEM, RELEASE_MEM_DWORDS);
        let mut b2 = RelBf2::default();
        b2.set_event_type(self.event_type);
        b2.set_event_index(self.event_index);
        b2.set_tcl1_action_ena(self.tcl1_action.into());
        b2.set_tc_action_ena(self.tc_action.into());
        b2.set_cache_policy(self.cache_policy);
        p[at!(P, __bindgen_anon_2)] = b2.dword();
        let mut b3 = RelBf3::default();
        b3.set_dst_sel(self.dst_sel);
        b3.set_int_sel(self.int_sel);
        b3.set_data_sel(self.data_sel);
        p[at!(P, __bindgen_anon_3)] = b3.dword();
        let mut b4 = RelBf4::default();
        b4.set_address_lo_32b(lo(self.addr) >> 2);
        p[at!(P, __bindgen_anon_4)] = b4.dword();
        p[at!(P, __bindgen_anon_5)] = hi(self.addr);
        p[at!(P, __bindgen_anon_6)] = lo(self.data);
        p[at!(P, __bindgen_anon_7)] = hi(self.data);
        p[at!(P, int_ctxid)] = self.int_ctxid;
        p
    }

    fn decode(p: &[u32]) -> ReleaseMem {
        type P = pm4_mec_release_mem;
        let b2 = RelBf2::from_dword(p[at!(P, __bindgen_anon_2)]);
        let b3 = RelBf3::from_dword(p[at!(P, __bindgen_anon_3)]);
        let b4 = RelBf4::from_dword(p[at!(P, __bindgen_anon_4)]);
        ReleaseMem {
            event_type: b2.event_type(),
            event_index: b2.event_index(),
            tcl1_action: b2.tcl1_action_ena() != 0,
            tc_action: b2.tc_action_ena() != 0,
            cache_policy: b2.cache_policy(),
            dst_sel: b3.dst_sel(),
            int_sel: b3.int_sel(),
            data_sel: b3.data_sel(),
            addr: join(b4.address_lo_32b() << 2, p[at!(P, __bindgen_anon_5)]),
            data: join(p[at!(P, __bindgen_anon_6)], p[at!(P, __bindgen_anon_7)]),
            int_ctxid: p[at!(P, int_ctxid)],
        }
    }
}

/// Dwords of [`preemption`]'s sequence.
pub const PREEMPTION_DWORDS: usize = UNMAP_QUEUES_DWORDS + QUERY_STATUS_DWORDS;

/// C: what `unmap_queues_cpsch` writes to the HIQ: UNMAP_QUEUES
/// (`pm_send_unmap_queue`), then a QUERY_STATUS fence
/// (`pm_send_query_status`) writing [`FENCE_COMPLETED`] to `fence_addr`
/// once the preemption is done; the driver has set the fence to
/// [`FENCE_INIT`] and waits `queue_preemption_timeout_ms` for it, or
/// declares the HWS hung.
pub fn preemption(unmap: &UnmapQueues, fence_addr: u64) -> [u32; PREEMPTION_DWORDS] {
    let mut p = [0; PREEMPTION_DWORDS];
    p[..UNMAP_QUEUES_DWORDS].copy_from_slice(&unmap.encode());
    p[UNMAP_QUEUES_DWORDS..].copy_from_slice(&QueryStatus::fence(fence_addr, FENCE_COMPLETED).encode());
    p
}

/// One process of a runlist (C: a `device_process_node` and its queues).
#[derive(Clone, Copy, Debug)]
pub struct RunlistProcess<'a> {
    /// Its MAP_PROCESS.
    pub map: MapProcess,
    /// `process->xnack_enabled`.
    pub xnack_enabled: bool,
    /// Its active queues, kernel queues first (`priv_queue_list`, then
    /// `queues_list`), inactive ones left out by the caller.
    pub queues: &'a [MapQueues],
}

/// The scheduler limits `pm_calc_rlib_size` checks.
#[derive(Clone, Copy, Debug)]
pub struct RunlistLimits {
    /// `node->max_proc_per_quantum` (the HWS's VMIDs / `hws_max_conc_proc`).
    pub max_proc_per_quantum: u32,
    /// `get_cp_queues_num(dqm)`: HQD slots for compute queues.
    pub cp_queues: u32,
    /// `gmc.xnack_flags & AMDGPU_GMC_XNACK_FLAG_CHAIN`: mixed XNACK modes
    /// need a chained runlist.
    pub xnack_chain: bool,
    /// `pm_use_ext_eng`.
    pub ext_eng: bool,
    /// The MAP_PROCESS layout.
    pub format: PmFormat,
}

/// C: the `OVER_SUBSCRIPTION_*` bits of `kfd_packet_manager.c`.
pub mod over_subscription {
    /// More processes than the HWS maps at once.
    pub const PROCESS_COUNT: u32 = 1 << 0;
    /// More compute queues than HQD slots.
    pub const COMPUTE_QUEUE_COUNT: u32 = 1 << 1;
    /// More than one GWS queue.
    pub const GWS_QUEUE_COUNT: u32 = 1 << 2;
    /// XNACK on and off processes mixed where that needs chaining.
    pub const XNACK_CONFLICT: u32 = 1 << 3;
}

/// What [`build_runlist_ib`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunlistIb {
    /// Dwords of the IB (the allocation size upstream, all of it written).
    pub dwords: usize,
    /// The [`over_subscription`] bits; non-zero means the IB ends in a
    /// RUN_LIST chaining to itself.
    pub over_subscription: u32,
}

/// Why a runlist could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunlistError {
    /// The buffer is smaller than the IB (C: the allocation failing):
    /// the IB needs `needed` dwords.
    NoSpace {
        /// Dwords of the IB (`pm_calc_rlib_size`'s `rlib_size` / 4).
        needed: usize,
    },
}

/// C: `pm_create_runlist_ib` with `pm_calc_rlib_size`: into `ib` (at GPU
/// address `ib_addr`), one MAP_PROCESS per process followed by one
/// MAP_QUEUES per queue, processes of the first process's XNACK mode
/// first; over-subscribed, a RUN_LIST chaining to the IB itself closes it.
pub fn build_runlist_ib(
    ib: &mut [u32],
    ib_addr: u64,
    processes: &[RunlistProcess<'_>],
    limits: &RunlistLimits,
) -> Result<RunlistIb, RunlistError> {
    let xnack_first = processes.first().is_some_and(|p| p.xnack_enabled);
    let xnack_conflict = processes.iter().any(|p| p.xnack_enabled != xnack_first);
    let process_count = processes.len() as u32;
    let queues = processes.iter().flat_map(|p| p.queues.iter());
    let queue_count = queues.clone().count();
    let compute_count = queues.clone().filter(|q| q.engine == Engine::Compute).count() as u32;
    let gws_count = queues.filter(|q| q.is_gws).count();

    let mut over = 0;
    // C: `max_proc_per_quantum` counts as 1 unless it is larger.
    if process_count > limits.max_proc_per_quantum.max(1) {
        over |= over_subscription::PROCESS_COUNT;
    }
    if compute_count > limits.cp_queues {
        over |= over_subscription::COMPUTE_QUEUE_COUNT;
    }
    if gws_count > 1 {
        over |= over_subscription::GWS_QUEUE_COUNT;
    }
    if xnack_conflict && limits.xnack_chain {
        over |= over_subscription::XNACK_CONFLICT;
    }
    let mut size = processes.len() * limits.format.map_process_dwords() + queue_count * MAP_QUEUES_DWORDS;
    if over != 0 {
        size += RUNLIST_DWORDS;
    }
    let ib = ib.get_mut(..size).ok_or(RunlistError::NoSpace { needed: size })?;
    ib.fill(0);

    let mut w = 0;
    let mut put = |packet: &[u32]| {
        ib[w..w + packet.len()].copy_from_slice(packet);
        w += packet.len();
    };
    for mode in [xnack_first, !xnack_first] {
        for p in processes.iter().filter(|p| p.xnack_enabled == mode) {
            let mut mp = [0; MAP_PROCESS_MAX_DWORDS];
            let n = p.map.write(limits.format, &mut mp);
            put(&mp[..n]);
            for q in p.queues {
                put(&q.encode(limits.ext_eng));
            }
        }
        if !xnack_conflict {
            break;
        }
    }
    if over != 0 {
        let chain = RunList {
            ib_base: ib_addr,
            ib_size: size as u32,
            chain: true,
            process_cnt: process_count.min(limits.max_proc_per_quantum),
        };
        put(&chain.encode());
    }
    Ok(RunlistIb { dwords: size, over_subscription: over })
}

/// A packet as the CP firmware reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// SET_RESOURCES.
    SetResources(SetResources),
    /// RUN_LIST.
    RunList(RunList),
    /// MAP_PROCESS.
    MapProcess(MapProcess),
    /// MAP_QUEUES.
    MapQueues(MapQueues),
    /// UNMAP_QUEUES.
    UnmapQueues(UnmapQueues),
    /// QUERY_STATUS.
    QueryStatus(QueryStatus),
    /// RELEASE_MEM.
    ReleaseMem(ReleaseMem),
    /// Another type-3 packet: its opcode and dwords.
    Other(u32, &'a [u32]),
}

/// Why [`Parser`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// The dword at this index is not a type-3 header.
    NotType3(usize),
    /// The packet at this index runs past the end of the IB.
    Truncated(usize),
    /// The packet at this index is shorter than its opcode's struct.
    TooShort(usize),
    /// The packet at this index has a reserved value in a field.
    Reserved(usize),
}

/// Iterates the packets of an IB (C: what the CP's HWS firmware does with
/// a runlist: decode each type-3 header, `count + 2` dwords per packet).
pub struct Parser<'a> {
    ib: &'a [u32],
    at: usize,
    format: PmFormat,
}

/// Parses `ib` as a CP speaking `format` reads it (MAP_PROCESS's layout).
pub fn parse(ib: &[u32], format: PmFormat) -> Parser<'_> {
    Parser { ib, at: 0, format }
}

impl Parser<'_> {
    /// The dword index of the next packet.
    pub fn position(&self) -> usize {
        self.at
    }
}

impl<'a> Iterator for Parser<'a> {
    type Item = Result<Packet<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        let start = self.at;
        let header = Header::from_dword(*self.ib.get(start)?);
        if header.type_() != PM4_TYPE_3 {
            self.at = self.ib.len();
            return Some(Err(ParseError::NotType3(start)));
        }
        let len = header.count() as usize + 2;
        let Some(p) = self.ib.get(start..start + len) else {
            self.at = self.ib.len();
            return Some(Err(ParseError::Truncated(start)));
        };
        self.at = start + len;
        let need = |n: usize| if len >= n { Ok(()) } else { Err(ParseError::TooShort(start)) };
        let op = header.opcode();
        let format = self.format;
        Some((|| {
            Ok(match op {
                IT_SET_RESOURCES => need(SET_RESOURCES_DWORDS).map(|()| Packet::SetResources(SetResources::decode(p)))?,
                IT_RUN_LIST => need(RUNLIST_DWORDS).map(|()| Packet::RunList(RunList::decode(p)))?,
                IT_MAP_PROCESS => {
                    need(format.map_process_dwords())?;
                    Packet::MapProcess(match format {
                        PmFormat::V9 => MapProcess::decode(p),
                        PmFormat::Aldebaran => MapProcess::decode_aldebaran(p),
                    })
                }
                IT_MAP_QUEUES => need(MAP_QUEUES_DWORDS).map(|()| Packet::MapQueues(MapQueues::decode(p)))?,
                IT_UNMAP_QUEUES => {
                    need(UNMAP_QUEUES_DWORDS)?;
                    Packet::UnmapQueues(UnmapQueues::decode(p).ok_or(ParseError::Reserved(start))?)
                }
                IT_QUERY_STATUS => need(QUERY_STATUS_DWORDS).map(|()| Packet::QueryStatus(QueryStatus::decode(p)))?,
                IT_RELEASE_MEM => need(RELEASE_MEM_DWORDS).map(|()| Packet::ReleaseMem(ReleaseMem::decode(p)))?,
                _ => Packet::Other(op, p),
            })
        })())
    }
}

#[cfg(test)]
mod tests;
