// SPDX-License-Identifier: GPL-2.0 OR MIT
//! GPU generations: the gfx target a GPU reports, and what rkfd and the
//! virtual GPU ask of it.
//!
//! C: the `gfx_target_version` that `kgd2kfd_probe` (`kfd_device.c`) picks
//! per GC IP version, and the tests amdkfd makes on the GC version
//! (`KFD_GC_VERSION`, `KFD_IS_SOC15`, `KFD_SUPPORT_XNACK_PER_PROCESS` in
//! `kfd_priv.h`; `pqm_create_queue`, `pqm_update_mqd`,
//! `kfd_queue_ctx_save_restore_size`, ...).  Shaped like nova-core's
//! `Chipset::arch()`: a [`GfxVersion`] is one known target, [`GfxVersion::arch`]
//! its family, and every question the code asks of a generation is a method
//! here, never a number compared in place.
//!
//! The device interface (`kgd_gpu_info.gfx_target_version`) carries the
//! target version, `major * 10000 + minor * 100 + stepping` (gfx90a is
//! 9.0.10 = 90010), not the GC IP version; several GC versions share one
//! target (GC 9.4.3 and 9.4.4 are both gfx942), so the tests below are
//! stated on targets, each with the GC versions it stands for.
//!
//! Only SOC15 targets (GC 9 and later, `KFD_IS_SOC15`) are known: rkfd
//! implements the SOC15 doorbell layout, 64-bit doorbells and the SOC15
//! interrupt format, and refuses older GPUs at probe.  GC 12.1 (gfx1250)
//! is not known either: its doorbell layout (`soc_v1_0.c`) and context-save
//! sizes differ and nothing here models them.

use core::fmt;

/// A gfx target rkfd knows (C: `gfx_target_version`).
///
/// # Invariants
///
/// It is one of the targets [`GfxVersion::from_target_version`] accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GfxVersion {
    major: u8,
    minor: u8,
    stepping: u8,
}

/// The family of a [`GfxVersion`] (C: the `KFD_GC_VERSION` ranges amdkfd
/// tests).  Ordered oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GfxArch {
    /// GC 9.0.1 – 9.4.2 (Vega, Raven, Renoir, Arcturus, Aldebaran):
    /// gfx900 – gfx90c.
    Gfx9,
    /// GC 9.4.3 and 9.4.4 (MI300, "Aqua Vanjaram"): gfx940, gfx941, gfx942.
    Gfx9_4_3,
    /// GC 9.5.0 (MI350): gfx950.
    Gfx9_5,
    /// GC 10.1 (Navi 1x, Cyan Skillfish): gfx1010 – gfx1013.
    Gfx10_1,
    /// GC 10.3 (Navi 2x and the RDNA2 APUs): gfx1030 – gfx1036.
    Gfx10_3,
    /// GC 11 (Navi 3x, Phoenix, Strix): gfx1100 – gfx1171.
    Gfx11,
    /// GC 12.0 (Navi 4x): gfx1200, gfx1201.
    Gfx12,
}

/// The layout of the doorbell indices amdgpu reserves for SDMA, IH and VCN
/// on a SOC15 part (`doorbell_index`, set by `*_doorbell_index_init`);
/// KFD keeps them and their +512 mirror out of its CP doorbell bitmap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoorbellLayout {
    /// `vega10_doorbell_index_init` (GC 9.0.1, 9.1.0, 9.2.x, 9.3.0).
    Vega10,
    /// `vega20_doorbell_index_init` (GC 9.4.0, 9.4.1, 9.4.2).
    Vega20,
    /// `aqua_vanjaram_doorbell_index_init`, "layout 1" (GC 9.4.3, 9.4.4, 9.5.0).
    Layout1,
    /// `navi10_doorbell_index_init` and its `soc21`/`soc24` copies (GC 10, 11, 12.0).
    Navi10,
}

impl DoorbellLayout {
    /// First and last doorbell index reserved for SDMA/IH/VCN
    /// (`doorbell_index.first_non_cp` / `last_non_cp`).
    pub const fn non_cp(self) -> (u32, u32) {
        match self {
            // AMDGPU_DOORBELL64_{FIRST,LAST}_NON_CP.
            DoorbellLayout::Vega10 => (0xf0, 0xff),
            // AMDGPU_VEGA20_DOORBELL64_{FIRST,LAST}_NON_CP.
            DoorbellLayout::Vega20 => (0x100, 0x18f),
            // AMDGPU_DOORBELL_LAYOUT1_{FIRST,LAST}_NON_CP.
            DoorbellLayout::Layout1 => (0x100, 0x1e8),
            // AMDGPU_NAVI10_DOORBELL64_{FIRST,LAST}_NON_CP (the last is VPE's).
            DoorbellLayout::Navi10 => (0x100, 0x190),
        }
    }

    /// Doorbell index of SDMA engine `engine`'s first queue
    /// (`doorbell_index.sdma_engine[engine]`).
    pub const fn sdma_engine_base(self, engine: u32) -> u32 {
        match self {
            // AMDGPU_DOORBELL64_sDMA_ENGINE0 = 0xf0, ENGINE1 = 0xf2.
            DoorbellLayout::Vega10 => 0xf0 + 2 * engine,
            // 0x100 + 10 per engine (VEGA20/NAVI10 sDMA_ENGINEn; layout 1
            // computes it as sDMA_ENGINE_START + n * (sdma_doorbell_range / 2)).
            DoorbellLayout::Vega20 | DoorbellLayout::Layout1 | DoorbellLayout::Navi10 => 0x100 + 0x0a * engine,
        }
    }
}

/// A user queue's context save area (C: the topology `ctl_stack_size` and
/// `cwsr_size` that `kfd_queue_ctx_save_restore_size` computes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaveArea {
    /// `cwsr_size`: the whole per-queue save area, bytes.
    pub cwsr_size: u32,
    /// `ctl_stack_size`: its control stack, bytes.
    pub ctl_stack_size: u32,
}

/// `AMDGPU_GPU_PAGE_SIZE`, the alignment of the save areas.
const GPU_PAGE: u32 = 4096;

/// Rounds `v` up to a multiple of [`GPU_PAGE`].
const fn page_align(v: u32) -> u32 {
    v.div_ceil(GPU_PAGE) * GPU_PAGE
}

/// `SIZEOF_HSA_USER_CONTEXT_SAVE_AREA_HEADER`.
const SAVE_AREA_HEADER: u32 = 40;

impl GfxVersion {
    /// gfx90a: GC 9.4.2, AMD Instinct MI210/MI250.
    pub const GFX90A: GfxVersion = GfxVersion::known(9, 0, 10);
    /// gfx942: GC 9.4.3/9.4.4, AMD Instinct MI300.
    pub const GFX942: GfxVersion = GfxVersion::known(9, 4, 2);
    /// gfx1030: GC 10.3.0, Navi 21.
    pub const GFX1030: GfxVersion = GfxVersion::known(10, 3, 0);
    /// gfx1100: GC 11.0.0, Navi 31.
    pub const GFX1100: GfxVersion = GfxVersion::known(11, 0, 0);
    /// gfx1103: GC 11.0.1/11.0.4, Phoenix.
    pub const GFX1103: GfxVersion = GfxVersion::known(11, 0, 3);

    /// A target of the table in [`GfxVersion::from_target_version`]; a
    /// constant naming any other target fails to compile.
    const fn known(major: u8, minor: u8, stepping: u8) -> GfxVersion {
        let v = major as u32 * 10000 + minor as u32 * 100 + stepping as u32;
        match GfxVersion::from_target_version(v) {
            Some(g) => g,
            None => panic!("not a known gfx target"),
        }
    }

    /// The target a `gfx_target_version` names, if rkfd knows it: the
    /// SOC15 targets Linux 7.3's `kgd2kfd_probe` assigns (and gfx940/941,
    /// which older kernels assigned to GC 9.4.3), GC 12.1 excepted.
    pub const fn from_target_version(v: u32) -> Option<GfxVersion> {
        let known = matches!(
            v,
            // Vega10, Raven, Vega12, Vega20, Arcturus, Aldebaran, Renoir.
            90000 | 90002 | 90004 | 90006 | 90008 | 90010 | 90012
            // GC 9.4.3 / 9.4.4, GC 9.5.0.
            | 90400 | 90401 | 90402 | 90500
            // Navi10, Navi12, Navi14, Cyan Skillfish.
            | 100100..=100103
            // Sienna Cichlid .. GC 10.3.6/10.3.7.
            | 100300..=100306
            // GC 11.0.x, 11.5.x, 11.7.x.
            | 110000..=110003 | 110500..=110504 | 110700 | 110701
            // GC 12.0.0, 12.0.1.
            | 120000 | 120001
        );
        if !known {
            return None;
        }
        Some(GfxVersion {
            major: (v / 10000) as u8,
            minor: (v / 100 % 100) as u8,
            stepping: (v % 100) as u8,
        })
    }

    /// `major * 10000 + minor * 100 + stepping`, as topology and the
    /// device interface carry it.
    pub const fn target_version(self) -> u32 {
        self.major as u32 * 10000 + self.minor as u32 * 100 + self.stepping as u32
    }

    /// The family.
    pub const fn arch(self) -> GfxArch {
        match (self.major, self.minor) {
            (9, 0) => GfxArch::Gfx9,
            (9, 4) => GfxArch::Gfx9_4_3,
            (9, _) => GfxArch::Gfx9_5,
            (10, 1) => GfxArch::Gfx10_1,
            (10, _) => GfxArch::Gfx10_3,
            (11, _) => GfxArch::Gfx11,
            _ => GfxArch::Gfx12,
        }
    }

    /// A GC 9.x part, whose registers follow `gfx_v9_0` (GB_ADDR_CONFIG's
    /// GFX9 format, the Vega SOC15 layouts) rather than GFX10's.
    pub const fn is_gfx9(self) -> bool {
        matches!(self.arch(), GfxArch::Gfx9 | GfxArch::Gfx9_4_3 | GfxArch::Gfx9_5)
    }

    /// Queues are scheduled by the MES firmware instead of the HWS
    /// (amdgpu enables MES for GC 11 and later), so e.g. the debugfs
    /// `hang_hws` HIQ packet has no meaning there.
    pub const fn uses_mes(self) -> bool {
        matches!(self.arch(), GfxArch::Gfx11 | GfxArch::Gfx12)
    }

    /// GC 11.0.0 to 11.0.3, whose MES needs the CWSR workaround: amdkfd
    /// adds their queues with the trap disabled (C:
    /// `kfd_dbg_has_cwsr_workaround`, `add_queue_mes`'s `trap_en`).
    pub const fn has_cwsr_workaround(self) -> bool {
        self.major == 11 && self.minor == 0 && self.stepping <= 3
    }

    /// GC 9.4.2 (gfx90a), 9.4.3, 9.4.4 or 9.5.0: the GFX9 parts from
    /// Aldebaran on (C: `KFD_GC_VERSION(dev) >= IP_VERSION(9, 4, 2)` on GFX9).
    const fn is_gc_9_4_2_on(self) -> bool {
        matches!(self.arch(), GfxArch::Gfx9_4_3 | GfxArch::Gfx9_5)
            || (self.major == 9 && self.minor == 0 && self.stepping == 10)
    }

    /// The HWS takes the Aldebaran MAP_PROCESS
    /// (`pm4_mes_map_process_aldebaran`, 21 dwords with the debugger's
    /// SPI/TCP words) rather than the GFX9 one (C: `pm_init` choosing
    /// `kfd_aldebaran_pm_funcs` for GC 9.4.2, 9.4.3, 9.4.4, 9.5.0).
    pub const fn hws_map_process_aldebaran(self) -> bool {
        self.is_gc_9_4_2_on()
    }

    /// The SDMA IP is 5.2 or later, so the HWS packets name SDMA engines
    /// through `extended_engine_sel` (C: `pm_use_ext_eng`,
    /// `kfd_packet_manager.c`: SDMA 5.2 came with GC 10.3; GC 10.1 has
    /// SDMA 5.0, GFX9 parts SDMA 4.x).
    pub const fn hws_sdma_ext_eng(self) -> bool {
        matches!(self.arch(), GfxArch::Gfx10_3 | GfxArch::Gfx11 | GfxArch::Gfx12)
    }

    /// The GPU retries page faults per process, so XNACK can be switched
    /// on per process and SVM serves GPU faults (C:
    /// `KFD_SUPPORT_XNACK_PER_PROCESS`: GC 9.4.2, 9.4.3, 9.4.4, 9.5.0).
    pub const fn supports_xnack_per_process(self) -> bool {
        self.is_gc_9_4_2_on()
    }

    /// amdgpu disables retry faults by default (`gmc->noretry` with its
    /// `noretry` parameter at -1; C: `amdgpu_gmc_noretry_set`'s
    /// `noretry_default`: GC 9.0.1, 9.4.0 to 9.5.0, and 10.3 and later),
    /// which amdkfd reads as `kfd->noretry`.  The device interface does not
    /// carry the driver's value; rkfd assumes the default.
    pub const fn noretry_default(self) -> bool {
        match self.arch() {
            // gfx900 (9.0.1), gfx906 (9.4.0), gfx908 (9.4.1), gfx90a (9.4.2).
            GfxArch::Gfx9 => matches!(self.stepping, 0 | 6 | 8 | 10),
            GfxArch::Gfx9_4_3 | GfxArch::Gfx9_5 => true,
            GfxArch::Gfx10_1 => false,
            GfxArch::Gfx10_3 | GfxArch::Gfx11 | GfxArch::Gfx12 => true,
        }
    }

    /// CUs come in work-group-processor pairs, so a CU mask must enable
    /// both CUs of a pair or neither (C: `pqm_update_mqd`, GC 10+).
    pub const fn has_wgp(self) -> bool {
        !self.is_gfx9()
    }

    /// One KFD node spans several XCCs, each with its own MQD (C: the
    /// `*_v9_4_3` MQD manager functions, GC 9.4.3, 9.4.4 and 9.5.0); a
    /// queue's CU mask is applied per XCC, not by `update_mqd`.
    pub const fn has_per_xcc_mqds(self) -> bool {
        matches!(self.arch(), GfxArch::Gfx9_4_3 | GfxArch::Gfx9_5)
    }

    /// The MQD of a queue that uses GWS must force SIMD distribution
    /// (`COMPUTE_RESOURCE_LIMITS.FORCE_SIMD_DIST`; C: `update_mqd` in
    /// `kfd_mqd_manager_v9.c`, GC 9.4.2 and later GFX9 parts).
    pub const fn gws_forces_simd_dist(self) -> bool {
        self.is_gc_9_4_2_on()
    }

    /// Queues a process may have on one device (C: `pqm_create_queue`'s
    /// `max_queues`: the HWS limit 127; 255 on GC 9.4.3, 9.4.4 and 9.5.0).
    pub const fn max_queues_per_process(self) -> u32 {
        match self.arch() {
            GfxArch::Gfx9_4_3 | GfxArch::Gfx9_5 => 255,
            _ => 127,
        }
    }

    /// Which SDMA/IH/VCN doorbell indices amdgpu reserves.
    pub const fn doorbell_layout(self) -> DoorbellLayout {
        match self.arch() {
            // Vega20 (90006), Arcturus (90008), Aldebaran (90010).
            GfxArch::Gfx9 if self.stepping >= 6 && self.stepping <= 10 => DoorbellLayout::Vega20,
            GfxArch::Gfx9 => DoorbellLayout::Vega10,
            GfxArch::Gfx9_4_3 | GfxArch::Gfx9_5 => DoorbellLayout::Layout1,
            _ => DoorbellLayout::Navi10,
        }
    }

    /// Bytes of one doorbell: 8 on SOC15, every target here
    /// (C: `kfd_device_info_init`'s `doorbell_size`).
    pub const fn doorbell_size(self) -> u32 {
        8
    }

    /// Dwords of one doorbell in the doorbell BAR (C:
    /// `DIV_ROUND_UP(doorbell_size, 4)` of `amdgpu_doorbell_index_on_bar`,
    /// `doorbell_size / sizeof(u32)` of
    /// `kfd_get_doorbell_dw_offset_in_bar`): 2, 64-bit doorbells.
    pub const fn doorbell_dwords(self) -> u32 {
        self.doorbell_size().div_ceil(4)
    }

    /// The doorbell of a process's queue as the CP and the schedulers
    /// name it: its dword index in the GPU's doorbell BAR (C:
    /// `kfd_get_doorbell_dw_offset_in_bar`, which becomes
    /// `q->properties.doorbell_off`: the MQD's
    /// `CP_HQD_PQ_DOORBELL_CONTROL.DOORBELL_OFFSET` or SDMA
    /// `DOORBELL_OFFSET`, MAP_QUEUES' and UNMAP_QUEUES' `doorbell_offset`,
    /// MES ADD_QUEUE's `doorbell_offset`).  `first_db_index` is the BAR
    /// index of the slice's first doorbell (C: `amdgpu_doorbell_index_on_bar(adev,
    /// pdd->qpd.proc_doorbells, 0, doorbell_size)`: the slice's byte
    /// offset in the BAR / 4); `doorbell_id` the doorbell's index in the
    /// slice (`q->doorbell_id`, below `KFD_MAX_NUM_OF_QUEUES_PER_PROCESS`,
    /// 1024).  `None` for an id past the slice or an index past `u32`.
    pub const fn doorbell_dw_offset_in_bar(self, first_db_index: u32, doorbell_id: u32) -> Option<u32> {
        // KFD_MAX_NUM_OF_QUEUES_PER_PROCESS doorbells per slice.
        if doorbell_id >= 1024 {
            return None;
        }
        first_db_index.checked_add(doorbell_id * self.doorbell_dwords())
    }

    /// The VGPR file of one CU that a context save stores
    /// (C: `kfd_get_vgpr_size_per_cu`).
    const fn vgpr_size_per_cu(self) -> u32 {
        match self.target_version() {
            // Aqua Vanjaram, Aldebaran, Arcturus, GC 9.5.0.
            90402 | 90010 | 90008 | 90500 => 0x80000,
            // Plum Bonito, Wheat Nas, gfx1151, gfx1200, gfx1201.
            110000 | 110001 | 110501 | 120000 | 120001 => 0x60000,
            _ => 0x40000,
        }
    }

    /// The LDS of one CU that a context save stores
    /// (C: `kfd_get_lds_size_per_cu`): the CU's whole LDS on GC 9.5.0.
    const fn lds_size_per_cu(self, lds_size_kib: u32) -> u32 {
        match self.arch() {
            GfxArch::Gfx9_5 => lds_size_kib << 10,
            _ => 0x10000,
        }
    }

    /// The per-queue context save area of a part with `cu_num` CUs (one
    /// XCC), `num_shader_engines` engines and `lds_size_kib` KiB of LDS
    /// per CU (C: `kfd_queue_ctx_save_restore_size`).
    pub const fn save_area(self, cu_num: u32, num_shader_engines: u32, lds_size_kib: u32) -> SaveArea {
        // get_num_waves(): GFX9 is limited by the engines' wave slots
        // (array_count / simd_arrays_per_engine = shader engines).
        let wave_num = if self.is_gfx9() {
            let by_se = num_shader_engines * 512;
            if cu_num * 40 < by_se {
                cu_num * 40
            } else {
                by_se
            }
        } else {
            cu_num * 32
        };
        // SGPR and HWREG sizes differ on GC 12.1 only, which is not known.
        let (sgpr, hwreg) = (0x4000, 0x1000);
        let per_cu = self.vgpr_size_per_cu() + sgpr + self.lds_size_per_cu(lds_size_kib) + hwreg;
        let wg_data_size = page_align(cu_num * per_cu);
        // CNTL_STACK_BYTES_PER_WAVE: 12 from Navi10 (GFX10) on.
        let ctl_bytes_per_wave = if self.is_gfx9() { 8 } else { 12 };
        let mut ctl_stack_size = page_align(SAVE_AREA_HEADER + wave_num * ctl_bytes_per_wave + 8);
        // GFX10's hardware limits the control stack to 0x7000 bytes.
        if matches!(self.arch(), GfxArch::Gfx10_1 | GfxArch::Gfx10_3) && ctl_stack_size > 0x7000 {
            ctl_stack_size = 0x7000;
        }
        SaveArea {
            cwsr_size: page_align(ctl_stack_size + wg_data_size),
            ctl_stack_size,
        }
    }
}

impl fmt::Display for GfxVersion {
    /// The target's name as the compiler and ROCm spell it: `gfx90a`,
    /// `gfx1030` (the stepping is one hex digit).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gfx{}{}{:x}", self.major, self.minor, self.stepping)
    }
}
