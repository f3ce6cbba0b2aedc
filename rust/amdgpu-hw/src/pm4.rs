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
//! Typed: SET_RESOURCES, RUN_LIST, MAP_PROCESS, MAP_QUEUES; the parser
//! also names UNMAP_QUEUES, QUERY_STATUS and RELEASE_MEM by opcode and hands
//! back their dwords.  Not modelled: the Aldebaran MAP_PROCESS
//! (`kfd_pm4_headers_aldebaran.h`, debugger watch points), enforce_isolation.

use core::mem::{offset_of, size_of};

use crate::generated::kfd_pm4_headers_ai::*;
use crate::generated::kfd_pm4_opcodes::{
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

/// The bitfield structs of the header, read from and written to a dword.
trait Dword: Default {
    fn from_dword(dw: u32) -> Self;
    fn dword(&self) -> u32;
}

macro_rules! dword_bitfields {
    ($($t:ty),* $(,)?) => {$(
        impl Dword for $t {
            fn from_dword(dw: u32) -> Self {
                Self { _bitfield_1: __BindgenBitfieldUnit::new(dw.to_ne_bytes()), ..Default::default() }
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

dword_bitfields!(Header, SetResBf2, SetResBf7, SetResBf8, RunlistBf4, MapProcBf2, MapProcBf14, MapQBf2, MapQBf3);

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
}

/// C: `SQ_SHADER_TBA_HI__TRAP_EN__SHIFT` (gc_10_1_0_sh_mask.h, which
/// `kfd_packet_manager_v9.c` includes).
use crate::generated::gc_10_1_0_sh_mask::SQ_SHADER_TBA_HI__TRAP_EN__SHIFT;

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
    /// The buffer is smaller than the IB (C: the allocation failing).
    NoSpace,
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
    let mut size = processes.len() * MAP_PROCESS_DWORDS + queue_count * MAP_QUEUES_DWORDS;
    if over != 0 {
        size += RUNLIST_DWORDS;
    }
    let ib = ib.get_mut(..size).ok_or(RunlistError::NoSpace)?;
    ib.fill(0);

    let mut w = 0;
    let mut put = |packet: &[u32]| {
        ib[w..w + packet.len()].copy_from_slice(packet);
        w += packet.len();
    };
    for mode in [xnack_first, !xnack_first] {
        for p in processes.iter().filter(|p| p.xnack_enabled == mode) {
            put(&p.map.encode());
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
    /// UNMAP_QUEUES, its dwords (header included).
    UnmapQueues(&'a [u32]),
    /// QUERY_STATUS, its dwords.
    QueryStatus(&'a [u32]),
    /// RELEASE_MEM, its dwords.
    ReleaseMem(&'a [u32]),
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
}

/// Iterates the packets of an IB (C: what the CP's HWS firmware does with
/// a runlist: decode each type-3 header, `count + 2` dwords per packet).
pub struct Parser<'a> {
    ib: &'a [u32],
    at: usize,
}

/// Parses `ib`.
pub fn parse(ib: &[u32]) -> Parser<'_> {
    Parser { ib, at: 0 }
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
        Some((|| {
            Ok(match op {
                IT_SET_RESOURCES => need(SET_RESOURCES_DWORDS).map(|()| Packet::SetResources(SetResources::decode(p)))?,
                IT_RUN_LIST => need(RUNLIST_DWORDS).map(|()| Packet::RunList(RunList::decode(p)))?,
                IT_MAP_PROCESS => need(MAP_PROCESS_DWORDS).map(|()| Packet::MapProcess(MapProcess::decode(p)))?,
                IT_MAP_QUEUES => need(MAP_QUEUES_DWORDS).map(|()| Packet::MapQueues(MapQueues::decode(p)))?,
                IT_UNMAP_QUEUES => Packet::UnmapQueues(p),
                IT_QUERY_STATUS => Packet::QueryStatus(p),
                IT_RELEASE_MEM => Packet::ReleaseMem(p),
                _ => Packet::Other(op, p),
            })
        })())
    }
}

#[cfg(test)]
mod tests;
