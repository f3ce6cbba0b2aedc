// SPDX-License-Identifier: GPL-2.0

//! The real parts the virtual GPU can present itself as.
//!
//! Every value is a property of the named part as upstream amdgpu/amdkfd
//! report it (`drivers/gpu/drm/amd/amdkfd/kfd_crat.c` cache tables,
//! `kfd_device.c` SDMA queue counts, `kfd_topology.c` capabilities), with
//! two deliberate exceptions, both scaled down because the virtual GPU is
//! backed by the host's RAM:
//!
//! - **Compute units:** every profile has 1 shader engine × 1 shader array
//!   × 4 CUs.  The per-queue context save area (and ROCr's scratch) grows
//!   with the CU count: 104 CUs of a real MI210 would make every user queue
//!   allocate ~60 MiB.  Caches shared by "the whole GPU" or "a shader array"
//!   are therefore shared by these 4 CUs.
//! - **VRAM:** a few hundred MiB instead of 16–64 GiB (module parameter
//!   `vram_mb` overrides it).
//!
//! The virtual GPU runs no firmware, but it reports the MEC and SDMA
//! firmware versions a real board of the part reports: amdgpu reads them
//! from the `ucode_version` of the firmware file's header
//! (`adev->gfx.mec_fw_version`, `adev->sdma.instance[0].fw_version`), hands
//! them to amdkfd through `amdgpu_amdkfd_get_fw_version(KGD_ENGINE_MEC1 /
//! KGD_ENGINE_SDMA1)`, and `kfd_topology.c` prints both unchanged as
//! `fw_version` and `sdma_fw_version` (libhsakmt keeps `& 0x3ff` of each as
//! `uCodeEngineVersions`; ROCm refuses an SDMA version of 0).  Each
//! profile's fields say which board's readout they come from.  Every value
//! also passes upstream's version gates for the part (`kfd_topology.c`
//! debug-firmware table, `kfd_device.c` atomics check), as a real board's
//! firmware does.

use kernel::prelude::*;

/// GPU generations, shared with rkfd and the host crate `kfd-logic`.
#[path = "../rust/kfd-logic/src/gfx.rs"]
#[expect(
    unreachable_pub,
    dead_code,
    reason = "a file shared with a host crate and rkfd: `pub` items, some used only there"
)]
pub(crate) mod gfx;

pub(crate) use gfx::{GfxVersion, SaveArea};

/// `HSA_CAP_*` and `HSA_CACHE_TYPE_*` bits from `include/uapi/linux/kfd_sysfs.h`.
pub(crate) mod hsa {
    /// `HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT`.
    pub(crate) const CAP_DOORBELL_TYPE_SHIFT: u32 = 12;
    /// `HSA_CAP_DOORBELL_TYPE_2_0`: 64-bit doorbells (SOC15, gfx9 and later).
    pub(crate) const CAP_DOORBELL_TYPE_2_0: u32 = 2;
    /// `HSA_CAP_MEM_EDCSUPPORTED`: ECC on device memory.
    pub(crate) const CAP_MEM_EDC: u32 = 0x0010_0000;
    /// `HSA_CAP_SRAM_EDCSUPPORTED`: ECC on on-chip SRAM (`:sramecc+` targets).
    pub(crate) const CAP_SRAM_EDC: u32 = 0x0400_0000;
    /// `HSA_CAP_SVMAPI_SUPPORTED`: never set here, rkfd's SVM is not ours to claim.
    pub(crate) const CAP_SVMAPI: u32 = 0x0800_0000;
    /// `HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED`: never set, there is no firmware.
    pub(crate) const CAP_TRAP_DEBUG_FIRMWARE: u32 = 0x2000_0000;
    /// `HSA_CACHE_TYPE_DATA`.
    pub(crate) const CACHE_DATA: u32 = 0x1;
    /// `HSA_CACHE_TYPE_INSTRUCTION`.
    pub(crate) const CACHE_INSTRUCTION: u32 = 0x2;
    /// `HSA_CACHE_TYPE_HSACU`: a cache of the compute units.
    pub(crate) const CACHE_HSACU: u32 = 0x8;
}

/// The doorbell capability of every SOC15 part.
const DOORBELL_2_0: u32 = hsa::CAP_DOORBELL_TYPE_2_0 << hsa::CAP_DOORBELL_TYPE_SHIFT;

/// Which compute units share one instance of a cache.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sharing {
    /// A fixed number of CUs (1: per CU; 2: per SQC / WGP).
    Cus(u32),
    /// The CUs of one shader array (GL1).
    ShaderArray,
    /// Every CU of the GPU (L2, MALL).
    Gpu,
}

/// One cache level, as a CRAT cache entry (`struct kfd_gpu_cache_info`).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Cache {
    /// Cache level, 1..3.
    pub(crate) level: u32,
    /// Size of one instance in KiB.
    pub(crate) size_kib: u32,
    /// Line size in bytes.
    pub(crate) line_size: u32,
    /// `HSA_CACHE_TYPE_*` bits.
    pub(crate) cache_type: u32,
    /// The CUs sharing an instance.
    pub(crate) sharing: Sharing,
}

/// A data cache of the compute units.
const fn data(level: u32, size_kib: u32, line_size: u32, sharing: Sharing) -> Cache {
    Cache {
        level,
        size_kib,
        line_size,
        cache_type: hsa::CACHE_DATA | hsa::CACHE_HSACU,
        sharing,
    }
}

/// An instruction cache of the compute units.
const fn instruction(size_kib: u32, line_size: u32, sharing: Sharing) -> Cache {
    Cache {
        level: 1,
        size_kib,
        line_size,
        cache_type: hsa::CACHE_INSTRUCTION | hsa::CACHE_HSACU,
        sharing,
    }
}

/// `AMDGPU_FAMILY_*` and `AMDGPU_VRAM_TYPE_*` of `include/uapi/drm/amdgpu_drm.h`.
pub(crate) mod drm {
    /// `AMDGPU_FAMILY_AI`: Vega10 and the other GC 9 dGPUs.
    pub(crate) const FAMILY_AI: u32 = 141;
    /// `AMDGPU_FAMILY_NV`: Navi.
    pub(crate) const FAMILY_NV: u32 = 143;
    /// `AMDGPU_FAMILY_GC_11_0_0`.
    pub(crate) const FAMILY_GC_11_0_0: u32 = 145;
    /// `AMDGPU_FAMILY_GC_11_0_1`.
    pub(crate) const FAMILY_GC_11_0_1: u32 = 148;
    /// `AMDGPU_VRAM_TYPE_HBM`.
    pub(crate) const VRAM_TYPE_HBM: u32 = 6;
    /// `AMDGPU_VRAM_TYPE_GDDR6`.
    pub(crate) const VRAM_TYPE_GDDR6: u32 = 9;
    /// `AMDGPU_VRAM_TYPE_DDR5`.
    pub(crate) const VRAM_TYPE_DDR5: u32 = 10;
}

/// An IP version as amdgpu packs it for user space
/// (`IP_VERSION_MAJ_MIN_REV`: major << 16 | minor << 8 | revision).
const fn ip(major: u32, minor: u32, rev: u32) -> u32 {
    major << 16 | minor << 8 | rev
}

/// What amdgpu knows the part as (`adev->family`, `rev_id`,
/// `external_rev_id`, the GC and SDMA IP versions, `gmc.vram_type`), what
/// `DRM_IOCTL_AMDGPU_INFO` reports and libdrm and Mesa identify it by.
#[derive(Debug)]
pub(crate) struct Amdgpu {
    /// `AMDGPU_FAMILY_*`.
    pub(crate) family: u32,
    /// `adev->rev_id` (the NBIO's revision register; 0 here: the first
    /// silicon revision of each part).
    pub(crate) rev_id: u32,
    /// `adev->external_rev_id`: `rev_id` plus the per-ASIC offset of
    /// `soc15.c` / `nv.c` / `soc21.c` `*_common_early_init`.
    pub(crate) external_rev: u32,
    /// GC IP version (packed by [`ip`]).
    pub(crate) gc_ip: u32,
    /// SDMA0 IP version (packed by [`ip`]).
    pub(crate) sdma_ip: u32,
    /// `AMDGPU_VRAM_TYPE_*`.
    pub(crate) vram_type: u32,
}

/// A GPU the virtual amdgpu can be.
#[derive(Debug)]
pub(crate) struct Profile {
    /// The `profile=` module parameter value, the gfx target name.
    pub(crate) name: &'static str,
    /// What it is, for log messages.
    pub(crate) product: &'static str,
    /// Topology `nodes/N/name`: upstream's lower-case ASIC name.
    pub(crate) asic_name: &'static str,
    /// The gfx target (reported as `gfx_target_version`).
    pub(crate) gfx: GfxVersion,
    /// PCI device ID.
    pub(crate) device_id: u32,
    /// PCI revision ID: with the device ID, what libdrm's `amdgpu.ids`
    /// names the board by.
    pub(crate) pci_rev: u32,
    /// amdgpu's identity of the part (`DRM_IOCTL_AMDGPU_INFO`): see [`Amdgpu`].
    pub(crate) amdgpu: Amdgpu,
    /// An APU: VRAM is a carve-out of system memory.
    pub(crate) apu: bool,
    /// Shader engines.
    pub(crate) num_shader_engines: u32,
    /// Shader arrays per engine.
    pub(crate) sh_per_se: u32,
    /// CUs per shader array.
    pub(crate) cu_per_sh: u32,
    /// SIMDs per CU.
    pub(crate) simd_per_cu: u32,
    /// Wave slots per SIMD.
    pub(crate) max_waves_per_simd: u32,
    /// Wavefront size: 64 (GCN/CDNA) or 32 (RDNA).
    pub(crate) wave_front_size: u32,
    /// LDS per work-group in KiB.
    pub(crate) lds_size_kib: u32,
    /// Scratch wave slots per CU.
    pub(crate) max_slots_scratch_cu: u32,
    /// SDMA engines for PCIe traffic.
    pub(crate) num_sdma_engines: u32,
    /// SDMA engines reserved for XGMI.
    pub(crate) num_sdma_xgmi_engines: u32,
    /// SDMA queues per engine available to KFD.
    pub(crate) num_sdma_queues_per_engine: u32,
    /// Compute queues of MEC1 left to KFD.
    pub(crate) num_cp_queues: u32,
    /// Peak engine clock, MHz.
    pub(crate) max_engine_clk_mhz: u32,
    /// Peak memory clock, MHz, as `pp_dpm_mclk` reports it.
    pub(crate) mem_clk_max_mhz: u32,
    /// Memory bus width, bits.
    pub(crate) vram_width: u32,
    /// Default VRAM size of the virtual part, MiB.
    pub(crate) default_vram_mib: u32,
    /// Whole VRAM host-visible: an APU's carve-out, or a dGPU's large
    /// (resizable) BAR, as hosts configure these boards today.
    pub(crate) vram_is_public: bool,
    /// MEC firmware version.
    pub(crate) fw_version: u32,
    /// SDMA firmware version.
    pub(crate) sdma_fw_version: u32,
    /// Supports XNACK (retry on page fault); not in `kgd_gpu_info` yet.
    pub(crate) xnack_capable: bool,
    /// SRAM ECC (`:sramecc+`).
    pub(crate) sram_ecc: bool,
    /// Device memory ECC.
    pub(crate) mem_ecc: bool,
    /// The cache hierarchy.
    pub(crate) caches: &'static [Cache],
    /// hwmon in0 (vddgfx) at idle, mV.
    pub(crate) vddgfx_mv: u32,
    /// hwmon power1_average at idle, W.
    pub(crate) idle_power_w: u32,
    /// hwmon power1_cap: board power limit, W.
    pub(crate) power_cap_w: u32,
}

/// The CU layout of every virtual part (see the module documentation).
const SE: u32 = 1;
/// Shader arrays per engine.
const SH: u32 = 1;
/// CUs per shader array.
const CU: u32 = 4;

/// Every profile, the default first.
pub(crate) static PROFILES: [Profile; 4] = [
    // AMD Instinct MI210 (Aldebaran, GC 9.4.2).
    Profile {
        name: "gfx90a",
        product: "AMD Instinct MI210",
        asic_name: "aldebaran",
        gfx: GfxVersion::GFX90A,
        device_id: 0x740f,
        // Debian 12's amdgpu.ids: "740F, 02, AMD Instinct MI210".
        pci_rev: 0x02,
        amdgpu: Amdgpu {
            family: drm::FAMILY_AI,
            rev_id: 0,
            // soc15.c, GC 9.4.2: rev_id + 0x3c.
            external_rev: 0x3c,
            gc_ip: ip(9, 4, 2),
            sdma_ip: ip(4, 4, 0),
            vram_type: drm::VRAM_TYPE_HBM,
        },
        apu: false,
        num_shader_engines: SE,
        sh_per_se: SH,
        cu_per_sh: CU,
        simd_per_cu: 4,
        max_waves_per_simd: 8,
        wave_front_size: 64,
        lds_size_kib: 64,
        max_slots_scratch_cu: 32,
        // 5 SDMA instances; with XGMI, 2 serve PCIe and 3 XGMI.
        num_sdma_engines: 2,
        num_sdma_xgmi_engines: 3,
        num_sdma_queues_per_engine: 8,
        num_cp_queues: 24,
        max_engine_clk_mhz: 1700,
        mem_clk_max_mhz: 1600,
        vram_width: 4096,
        default_vram_mib: 512,
        vram_is_public: true,
        // rocm-smi of three MI210s (1002:740f, VBIOS 113-D67301-063):
        // "MEC firmware version: 69", "SDMA firmware version: 8"
        // (github ROCm/legacy-rocm-build issue 1886, January 2023).
        fw_version: 69,
        sdma_fw_version: 8,
        xnack_capable: true,
        sram_ecc: true,
        mem_ecc: true,
        // kfd_crat.c: aldebaran_cache_info.
        caches: &[
            data(1, 16, 64, Sharing::Cus(1)),
            instruction(32, 64, Sharing::Cus(2)),
            data(1, 16, 64, Sharing::Cus(2)),
            data(2, 8192, 128, Sharing::Gpu),
        ],
        vddgfx_mv: 800,
        idle_power_w: 43,
        power_cap_w: 300,
    },
    // AMD Radeon PRO W6800 (Navi 21, GC 10.3.0).
    Profile {
        name: "gfx1030",
        product: "AMD Radeon PRO W6800",
        asic_name: "sienna_cichlid",
        gfx: GfxVersion::GFX1030,
        device_id: 0x73a3,
        // Debian 12's amdgpu.ids: "73A3, 00, AMD Radeon Pro W6800".
        pci_rev: 0x00,
        amdgpu: Amdgpu {
            family: drm::FAMILY_NV,
            rev_id: 0,
            // nv.c, GC 10.3.0: rev_id + 0x28.
            external_rev: 0x28,
            gc_ip: ip(10, 3, 0),
            sdma_ip: ip(5, 2, 0),
            vram_type: drm::VRAM_TYPE_GDDR6,
        },
        apu: false,
        num_shader_engines: SE,
        sh_per_se: SH,
        cu_per_sh: CU,
        simd_per_cu: 2,
        max_waves_per_simd: 16,
        wave_front_size: 32,
        lds_size_kib: 64,
        max_slots_scratch_cu: 32,
        num_sdma_engines: 4,
        num_sdma_xgmi_engines: 0,
        num_sdma_queues_per_engine: 8,
        num_cp_queues: 24,
        max_engine_clk_mhz: 2320,
        mem_clk_max_mhz: 1000,
        vram_width: 256,
        default_vram_mib: 512,
        vram_is_public: true,
        // amdgpu_firmware_info of a Navi 21 board (sienna_cichlid_mec.bin and
        // sienna_cichlid_sdma.bin, the W6800's files): "MEC ... firmware
        // version: 0x00000071", "SDMA0 ... firmware version: 0x00000053"
        // (amd-gfx list, May 2023, "Re: [PATCH 10/66] drm/amd/display: Do not
        // set drr on pipe commit").
        fw_version: 113,
        sdma_fw_version: 83,
        xnack_capable: false,
        sram_ecc: false,
        mem_ecc: false,
        // kfd_crat.c: sienna_cichlid_cache_info (L3 = 128 MiB Infinity Cache).
        caches: &[
            data(1, 16, 128, Sharing::Cus(1)),
            instruction(32, 64, Sharing::Cus(2)),
            data(1, 16, 64, Sharing::Cus(2)),
            data(1, 128, 128, Sharing::ShaderArray),
            data(2, 4096, 128, Sharing::Gpu),
            data(3, 128 * 1024, 64, Sharing::Gpu),
        ],
        vddgfx_mv: 750,
        idle_power_w: 18,
        power_cap_w: 250,
    },
    // AMD Radeon PRO W7900 (Navi 31, GC 11.0.0).  ROCm 5.2.3 does not know gfx1100.
    Profile {
        name: "gfx1100",
        product: "AMD Radeon PRO W7900",
        asic_name: "ip discovery",
        gfx: GfxVersion::GFX1100,
        device_id: 0x7448,
        // Not in Debian 12's amdgpu.ids (libdrm 2.4.114), so libdrm names it
        // "AMD Radeon Graphics"; revision 0x00 is not checked against a board.
        pci_rev: 0x00,
        amdgpu: Amdgpu {
            family: drm::FAMILY_GC_11_0_0,
            rev_id: 0,
            // soc21.c, GC 11.0.0: rev_id + 0x1.
            external_rev: 0x01,
            gc_ip: ip(11, 0, 0),
            sdma_ip: ip(6, 0, 0),
            vram_type: drm::VRAM_TYPE_GDDR6,
        },
        apu: false,
        num_shader_engines: SE,
        sh_per_se: SH,
        cu_per_sh: CU,
        simd_per_cu: 2,
        max_waves_per_simd: 16,
        wave_front_size: 32,
        lds_size_kib: 64,
        max_slots_scratch_cu: 32,
        // SDMA 6.0: 2 instances, 2 of 8 queues each reserved (paging, gfx).
        num_sdma_engines: 2,
        num_sdma_xgmi_engines: 0,
        num_sdma_queues_per_engine: 6,
        num_cp_queues: 24,
        max_engine_clk_mhz: 2495,
        mem_clk_max_mhz: 1124,
        vram_width: 384,
        default_vram_mib: 512,
        vram_is_public: true,
        // amdgpu_firmware_info of a Navi 31 board (gc_11_0_0_mec.bin and
        // sdma_6_0_0.bin, the W7900's files): "MEC ... firmware version:
        // 0x000001fe", "SDMA0 ... firmware version: 0x00000013" (the
        // geohot/7900xtx notes, README).  RS64 MEC firmware: upstream needs
        // >= 509 for HWS without PCIe atomics.
        fw_version: 510,
        sdma_fw_version: 19,
        xnack_capable: false,
        sram_ecc: false,
        mem_ecc: false,
        // From IP discovery (kfd_fill_gpu_cache_info_from_gfx_config with the
        // gc11 line-size defaults): 32 KiB L0, 64 KiB I$ and 16 KiB K$ per
        // WGP, 256 KiB GL1, 6 MiB L2, 96 MiB Infinity Cache.
        caches: &[
            data(1, 32, 128, Sharing::Cus(1)),
            instruction(64, 128, Sharing::Cus(2)),
            data(1, 16, 64, Sharing::Cus(2)),
            data(1, 256, 128, Sharing::ShaderArray),
            data(2, 6144, 128, Sharing::Gpu),
            data(3, 96 * 1024, 64, Sharing::Gpu),
        ],
        vddgfx_mv: 750,
        idle_power_w: 25,
        power_cap_w: 295,
    },
    // AMD Radeon 780M (Phoenix APU, GC 11.0.1).  ROCm 5.2.3 does not know gfx1103.
    Profile {
        name: "gfx1103",
        product: "AMD Radeon 780M",
        asic_name: "ip discovery",
        gfx: GfxVersion::GFX1103,
        device_id: 0x15bf,
        // Not in Debian 12's amdgpu.ids (libdrm 2.4.114); revision 0xc1 is not
        // checked against a board.
        pci_rev: 0xc1,
        amdgpu: Amdgpu {
            family: drm::FAMILY_GC_11_0_1,
            rev_id: 0,
            // soc21.c, GC 11.0.1: rev_id + 0x1.
            external_rev: 0x01,
            gc_ip: ip(11, 0, 1),
            sdma_ip: ip(6, 0, 1),
            vram_type: drm::VRAM_TYPE_DDR5,
        },
        apu: true,
        num_shader_engines: SE,
        sh_per_se: SH,
        cu_per_sh: CU,
        simd_per_cu: 2,
        max_waves_per_simd: 16,
        wave_front_size: 32,
        lds_size_kib: 64,
        max_slots_scratch_cu: 32,
        // SDMA 6.0.1: one instance.
        num_sdma_engines: 1,
        num_sdma_xgmi_engines: 0,
        num_sdma_queues_per_engine: 6,
        num_cp_queues: 24,
        max_engine_clk_mhz: 2700,
        // DDR5-5600 system memory, dual channel.
        mem_clk_max_mhz: 2800,
        vram_width: 128,
        // The BIOS "UMA frame buffer" carve-out.
        default_vram_mib: 256,
        vram_is_public: true,
        // rocm-smi of Phoenix boards (GC 11.0.1, gc_11_0_1_mec.bin, F32 MEC
        // firmware): "MEC firmware version: 40" (a 780M, Phoenix3, in
        // sebhildebrandt/systeminformation pull request 960) and "SDMA
        // firmware version: 16" (a 7840U, Phoenix1 1002:15bf, in ROCm/legacy-rocm-build
        // issue 3207).
        fw_version: 40,
        sdma_fw_version: 16,
        xnack_capable: false,
        sram_ecc: false,
        mem_ecc: false,
        // From IP discovery: as gfx1100 but a 2 MiB L2 and no Infinity Cache.
        caches: &[
            data(1, 32, 128, Sharing::Cus(1)),
            instruction(64, 128, Sharing::Cus(2)),
            data(1, 16, 64, Sharing::Cus(2)),
            data(1, 256, 128, Sharing::ShaderArray),
            data(2, 2048, 128, Sharing::Gpu),
        ],
        vddgfx_mv: 700,
        idle_power_w: 6,
        power_cap_w: 54,
    },
];

impl Profile {
    /// Looks a profile up by its `profile=` name.
    pub(crate) fn find(name: &[u8]) -> Option<&'static Profile> {
        PROFILES.iter().find(|p| p.name.as_bytes() == name)
    }

    /// The number of compute units.
    pub(crate) const fn cu_count(&self) -> u32 {
        self.num_shader_engines * self.sh_per_se * self.cu_per_sh
    }

    /// The SIMDs of the whole GPU (topology `simd_count`).
    pub(crate) const fn simd_count(&self) -> u32 {
        self.cu_count() * self.simd_per_cu
    }

    /// The CUs sharing one instance of `cache`.
    pub(crate) const fn cus_sharing(&self, cache: &Cache) -> u32 {
        match cache.sharing {
            Sharing::Cus(n) => {
                if n < self.cu_count() {
                    n
                } else {
                    self.cu_count()
                }
            }
            Sharing::ShaderArray => self.cu_per_sh,
            Sharing::Gpu => self.cu_count(),
        }
    }

    /// The `HSA_CAP_*` bits of the device itself.  Debugger and SVM bits
    /// describe what rkfd implements, not the GPU, so none are set here.
    pub(crate) const fn capability(&self) -> u32 {
        let mut cap = DOORBELL_2_0;
        if self.sram_ecc {
            cap |= hsa::CAP_SRAM_EDC;
        }
        if self.mem_ecc {
            cap |= hsa::CAP_MEM_EDC;
        }
        cap
    }

    /// `GB_ADDR_CONFIG` as amdgpu leaves it in `gfx.config.gb_addr_config`
    /// (what GET_TILE_CONFIG reports), built from this virtual part's
    /// geometry with the register's fields (gc_9_4_2 / gc_10_3_0 /
    /// gc_11_0_0 `GB_ADDR_CONFIG__*__SHIFT`): NUM_SHADER_ENGINES (bits
    /// 20:19) and NUM_RB_PER_SE (27:26) are log2 counts.
    ///
    /// - GFX 9.4.2: `gfx_v9_0_gpu_early_init` keeps only those two fields of
    ///   the hardware value and forces the rest to `0x22014042`;
    /// - GFX 10.3 / 11: the hardware value; ours has NUM_PIPES 4 (log2 2),
    ///   PIPE_INTERLEAVE_SIZE 256 B (0), MAX_COMPRESSED_FRAGS 8 (log2 3)
    ///   and NUM_PKRS one packer per shader array (log2).
    pub(crate) const fn gb_addr_config(&self) -> u32 {
        const fn log2(x: u32) -> u32 {
            if x <= 1 {
                0
            } else {
                31 - x.leading_zeros()
            }
        }
        // One render backend per shader engine on these small parts.
        let fields = (log2(self.num_shader_engines) & 3) << 19 | (log2(1) & 3) << 26;
        if self.gfx.is_gfx9() {
            0x2201_4042 | fields
        } else {
            let pkrs = log2(self.num_shader_engines * self.sh_per_se) & 7;
            2 | 3 << 6 | pkrs << 8 | fields
        }
    }

    /// Bytes of doorbells each process gets (`kfd_doorbell_process_slice`
    /// without MES: `KFD_MAX_NUM_OF_QUEUES_PER_PROCESS` (1024) doorbells,
    /// page aligned).  rkfd maps exactly this much.
    pub(crate) const fn doorbell_process_size(&self) -> u32 {
        (1024 * self.gfx.doorbell_size()).next_multiple_of(4096)
    }

    /// The per-queue save area, as upstream `kfd_queue.c:
    /// kfd_queue_ctx_save_restore_size()` computes it for this part (one XCC).
    pub(crate) const fn save_area(&self) -> SaveArea {
        self.gfx.save_area(self.cu_count(), self.num_shader_engines, self.lds_size_kib)
    }

    /// A stable, non-zero unique ID for GPU `index` of this profile
    /// (FNV-1a of the profile name and the index).
    pub(crate) fn unique_id(&self, index: u32) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in Iterator::chain(self.name.as_bytes().iter(), index.to_le_bytes().iter()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        if h == 0 {
            1
        } else {
            h
        }
    }
}

#[kunit_tests(amdgpu_vgpu_profile)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_sane() -> Result {
        for p in PROFILES.iter() {
            assert!(p.simd_count() > 0);
            assert!(p.simd_per_cu > 0);
            assert!(p.cu_count() == 4);
            assert!(p.wave_front_size == 32 || p.wave_front_size == 64);
            assert!(p.lds_size_kib == 64);
            assert!(p.max_waves_per_simd > 0);
            assert!(p.max_engine_clk_mhz > 0);
            assert!(p.default_vram_mib > 0);
            assert!(!p.caches.is_empty() && p.caches.len() <= 8);
            // ROCr needs a data cache of the CUs for HSA_AGENT_INFO_CACHE_SIZE.
            assert!(p
                .caches
                .iter()
                .any(|c| c.cache_type == hsa::CACHE_DATA | hsa::CACHE_HSACU));
            for c in p.caches.iter() {
                assert!((1..=3).contains(&c.level));
                assert!(c.size_kib > 0 && c.line_size.is_power_of_two());
                let shared = p.cus_sharing(c);
                assert!(shared >= 1 && shared <= p.cu_count());
            }
            // SOC15 doorbells, never the SVM or debug-firmware bits.
            let cap = p.capability();
            assert_eq!(cap & 0x3000, 0x2000);
            assert_eq!(cap & (hsa::CAP_SVMAPI | hsa::CAP_TRAP_DEBUG_FIRMWARE), 0);
            assert!(p.name.len() < 16 && p.asic_name.len() < 32);
            assert!(p.unique_id(0) != p.unique_id(1));
            assert_eq!(p.unique_id(3), p.unique_id(3));
        }
        let names: KVec<&str> = {
            let mut v = KVec::new();
            for p in PROFILES.iter() {
                v.push(p.name, GFP_KERNEL)?;
            }
            v
        };
        for (i, a) in names.iter().enumerate() {
            for b in names.iter().skip(i + 1) {
                assert!(a != b);
            }
        }
        Ok(())
    }

    #[test]
    fn per_part_facts() -> Result {
        let mi210 = Profile::find(b"gfx90a").ok_or(EINVAL)?;
        assert_eq!(mi210.device_id, 0x740f);
        assert_eq!(mi210.gfx.target_version(), 90010);
        assert_eq!(mi210.wave_front_size, 64);
        assert!(mi210.xnack_capable && mi210.sram_ecc);
        assert!(mi210.capability() & hsa::CAP_SRAM_EDC != 0);
        let w6800 = Profile::find(b"gfx1030").ok_or(EINVAL)?;
        assert_eq!(
            (w6800.device_id, w6800.wave_front_size, w6800.simd_per_cu),
            (0x73a3, 32, 2)
        );
        assert_eq!(w6800.capability() & hsa::CAP_SRAM_EDC, 0);
        let w7900 = Profile::find(b"gfx1100").ok_or(EINVAL)?;
        assert_eq!(w7900.device_id, 0x7448);
        let m780 = Profile::find(b"gfx1103").ok_or(EINVAL)?;
        assert_eq!(m780.device_id, 0x15bf);
        assert!(m780.apu && m780.vram_is_public);
        assert!(Profile::find(b"gfx900").is_none());
        assert!(Profile::find(b"").is_none());
        Ok(())
    }

    /// The save-area sizes, worked out by hand from kfd_queue.c for 4 CUs.
    #[test]
    fn save_area_matches_upstream() -> Result {
        let area = |n: &[u8]| Profile::find(n).map(|p| p.save_area()).ok_or(EINVAL);
        // gfx90a: 160 waves * 8 B + 48 -> 1 page; 4 * (0x80000 + 0x15000).
        assert_eq!(
            area(b"gfx90a")?,
            SaveArea {
                cwsr_size: 0x255000,
                ctl_stack_size: 0x1000
            }
        );
        // gfx1030: 128 waves * 12 B + 48 -> 1 page; 4 * (0x40000 + 0x15000).
        assert_eq!(
            area(b"gfx1030")?,
            SaveArea {
                cwsr_size: 0x155000,
                ctl_stack_size: 0x1000
            }
        );
        // gfx1100: 4 * (0x60000 + 0x15000).
        assert_eq!(
            area(b"gfx1100")?,
            SaveArea {
                cwsr_size: 0x1d5000,
                ctl_stack_size: 0x1000
            }
        );
        // gfx1103: the default VGPR file.
        assert_eq!(
            area(b"gfx1103")?,
            SaveArea {
                cwsr_size: 0x155000,
                ctl_stack_size: 0x1000
            }
        );
        Ok(())
    }
}
