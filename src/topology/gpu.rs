// SPDX-License-Identifier: GPL-2.0

//! A GPU in the topology: what its node prints, derived from the
//! [`GpuInfo`] the GPU driver reports at probe, as upstream derives it
//! from amdgpu's device data.
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_crat.c` (`kfd_create_vcrat_image_gpu`,
//! `kfd_fill_gpu_memory_affinity`, `kfd_fill_gpu_direct_io_link_to_cpu`,
//! `get_and_inc_gpu_processor_id`), `kfd_topology.c`
//! (`kfd_topology_add_device`, `kfd_generate_gpu_id`,
//! `kfd_fill_cache_non_crat_info`, `fill_in_l1_pcache`,
//! `fill_in_l2_l3_pcache`, `kfd_fill_iolink_non_crat_info`),
//! `amdgpu_amdkfd.c` (`amdgpu_amdkfd_get_pcie_bandwidth_mbytes`).
//!
//! Assumptions where `GpuInfo` carries less than amdgpu knows:
//! every CU is active (no harvest mask), the device sits on NUMA node 0, it
//! has PCIe atomics, no PCI subsystem ids (0 in the `gpu_id` hash) and no
//! PCIe link data (bandwidth as for links x1..x16, Gen1..Gen5), no GWS.

use crate::kabi::log::kfd_err;
use kernel::{prelude::*, sync::Arc};

use super::props::{
    Cache, GpuProps, IoLink, MemBank, Name, NodeProps, HSA_IOLINK_FLAGS_ENABLED,
    HSA_IOLINK_TYPE_PCIEXPRESS, HSA_MEM_HEAP_TYPE_FB_PRIVATE, HSA_MEM_HEAP_TYPE_FB_PUBLIC,
    SIBLING_MAP_SIZE,
};
use crate::kabi::kgd::GpuInfo;

/// First GPU processor id (C: `gpu_processor_id_low`); CPU APIC ids stay below.
pub(crate) const FIRST_PROCESSOR_ID: u32 = 0x8000_1000;
/// `gpu_id`s are 16-bit hashes (C: `KFD_GPU_ID_HASH_WIDTH`).
const GPU_ID_MASK: u32 = 0xffff;
/// Weight of a PCIe io link (`kfd_parse_subtype_iolink`).
const PCIE_WEIGHT: u32 = 20;
/// Most CUs per shader array: one bit each in a 32-bit CU bitmap.
const MAX_CU_PER_SH: u32 = 32;

/// PCIe bandwidth in MB/s of `lanes` lanes at `mbits` Mbit/s each, as
/// `amdgpu_amdkfd_get_pcie_bandwidth_mbytes` computes it.
const fn pcie_bandwidth_mbytes(lanes: u32, mbits: u32) -> u32 {
    lanes * mbits / 8
}
/// Slowest link: x1 Gen1 (2.5 GT/s), 312 MB/s.
const PCIE_MIN_BANDWIDTH: u32 = pcie_bandwidth_mbytes(1, 2500);
/// Fastest link: x16 Gen5 (32 GT/s), 64000 MB/s.
const PCIE_MAX_BANDWIDTH: u32 = pcie_bandwidth_mbytes(16, 32000);

/// CRC-16 with polynomial 0x8005, reflected (C: `crc16()` in `lib/crc/crc16.c`).
pub(crate) fn crc16(mut crc: u16, data: &[u8]) -> u16 {
    for &b in data {
        crc ^= u16::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xa001
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// The 16-bit hash of a device's identity (`kfd_generate_gpu_id`), before
/// making it non-zero and unique.  Stable for the same device across reloads.
pub(crate) fn gpu_id_hash(info: &GpuInfo) -> u32 {
    let buf: [u32; 8] = [
        info.location_id & 0xff, // devfn
        0,                       // subsystem vendor | subsystem device << 16: not reported
        info.domain,
        info.device_id,
        (info.location_id >> 8) & 0xff, // bus
        info.vram_size as u32,
        (info.vram_size >> 32) as u32,
        // First XCC (always 0 here) | XCC count << 16.
        info.num_xcc << 16,
    ];
    let mut bytes = [0u8; 32];
    for (chunk, word) in bytes.chunks_exact_mut(4).zip(buf) {
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
    u32::from(crc16(0, &bytes)) & GPU_ID_MASK
}

/// `hash` made non-zero and different from every id `taken` reports, by
/// counting up (`kfd_generate_gpu_id`).  Fails only if all 65535 are taken.
pub(crate) fn unique_gpu_id(hash: u32, taken: impl Fn(u32) -> bool) -> Result<u32> {
    let mut id = hash & GPU_ID_MASK;
    for _ in 0..=GPU_ID_MASK {
        if id == 0 {
            id = 1;
        }
        if !taken(id) {
            return Ok(id);
        }
        id = (id + 1) & GPU_ID_MASK;
    }
    Err(ENOSPC)
}

/// The shader geometry of a validated `GpuInfo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// XCCs.
    pub(crate) xcc: u32,
    /// Shader engines per XCC.
    pub(crate) se: u32,
    /// Shader arrays per engine.
    pub(crate) sh: u32,
    /// CUs per shader array.
    pub(crate) cu_per_sh: u32,
}

impl Geometry {
    /// Checks what the properties are computed from; `EINVAL` (with a
    /// message) for a GPU whose node would be inconsistent or overflow.
    pub(crate) fn of(info: &GpuInfo) -> Result<Self> {
        let g = Geometry {
            xcc: info.num_xcc,
            se: info.num_shader_engines,
            sh: info.sh_per_se,
            cu_per_sh: info.cu_per_sh,
        };
        let reject = |what: &str| {
            kfd_err!("topology: GPU {:#x}: invalid {}\n", info.device_id, what);
            Err(EINVAL)
        };
        if g.xcc == 0 || g.se == 0 || g.sh == 0 {
            return reject("shader geometry (num_xcc, num_shader_engines, sh_per_se)");
        }
        if g.cu_per_sh == 0 || g.cu_per_sh > MAX_CU_PER_SH {
            return reject("cu_per_sh (1..=32)");
        }
        if info.simd_per_cu == 0 {
            return reject("simd_per_cu (0)");
        }
        // The L2/L3 sibling map has 4 bytes per shader array.
        let arrays = g.arrays().ok_or(EINVAL)?;
        if arrays
            .checked_mul(4)
            .is_none_or(|n| n as usize > SIBLING_MAP_SIZE)
        {
            return reject("shader array count (more than 32)");
        }
        if g.cus()
            .and_then(|c| c.checked_mul(info.simd_per_cu))
            .is_none()
        {
            return reject("CU count");
        }
        if info.num_caches as usize > info.caches.len() {
            return reject("num_caches");
        }
        for c in reported(&info.caches, info.num_caches) {
            if c.level == 0 || c.cus_per_cache == 0 || c.cus_per_cache > MAX_CU_PER_SH {
                return reject("cache (level 0, or cus_per_cache not 1..=32)");
            }
        }
        Ok(g)
    }

    /// Shader arrays over all XCCs.
    fn arrays(&self) -> Option<u32> {
        self.xcc.checked_mul(self.se)?.checked_mul(self.sh)
    }

    /// Shader arrays of one XCC (C: CRAT `array_count`).
    fn arrays_per_xcc(&self) -> u32 {
        self.se * self.sh
    }

    /// CUs over all XCCs (all active).
    fn cus(&self) -> Option<u32> {
        self.arrays()?.checked_mul(self.cu_per_sh)
    }

    /// Processor ids a GPU takes (`total_num_of_cu`: one XCC's CUs).
    pub(crate) fn processor_ids(&self) -> u32 {
        self.arrays_per_xcc() * self.cu_per_sh
    }

    /// The CU bitmap of a shader array: every CU active.
    fn sh_bitmap(&self) -> u64 {
        (1u64 << self.cu_per_sh) - 1
    }
}

/// A GPU registered in the topology.
pub(crate) struct Gpu {
    /// Its `gpu_id`.
    pub(crate) gpu_id: u32,
    /// What the device reported.
    info: GpuInfo,
    /// Its `name`.
    name: Name,
    /// Derived shader geometry.
    geometry: Geometry,
    /// First processor id of its CUs.
    simd_id_base: u32,
    /// Its one memory bank.
    mem_bank: Arc<MemBank>,
    /// Its caches.
    caches: KVec<Arc<Cache>>,
    /// `HSA_CAP_*` bits rkfd adds to what the device reports.
    pub(crate) cap_set: u32,
    /// `HSA_CAP_*` bits rkfd clears from what the device reports.
    pub(crate) cap_clear: u32,
}

impl Gpu {
    /// A GPU with id `gpu_id` whose CUs start at processor id `simd_id_base`.
    pub(crate) fn new(info: &GpuInfo, gpu_id: u32, simd_id_base: u32) -> Result<Self> {
        let geometry = Geometry::of(info)?;
        let raw_name = info.name.map(|c| c as u8);
        let mem_bank = Arc::new(
            MemBank {
                // Upstream: FB_PUBLIC when no VRAM is private (large BAR).
                heap_type: if info.vram_is_public != 0 {
                    HSA_MEM_HEAP_TYPE_FB_PUBLIC
                } else {
                    HSA_MEM_HEAP_TYPE_FB_PRIVATE
                },
                size_in_bytes: info.vram_size,
                flags: 0,
                width: info.vram_width,
                mem_clk_max: info.mem_clk_max,
            },
            GFP_KERNEL,
        )?;
        Ok(Gpu {
            gpu_id,
            info: *info,
            name: Name::new(&raw_name),
            geometry,
            simd_id_base,
            mem_bank,
            caches: caches(info, &geometry, simd_id_base)?,
            cap_set: 0,
            cap_clear: 0,
        })
    }

    /// Whether all VRAM is host-visible (`kfd_dev_is_large_bar`): then the
    /// CPU node also gets a link to the GPU.
    pub(crate) fn large_bar(&self) -> bool {
        self.info.vram_is_public != 0
    }

    /// Processor ids its CUs take from the topology's counter.
    pub(crate) fn processor_ids(&self) -> u32 {
        self.geometry.processor_ids()
    }

    /// The node's name.
    pub(crate) fn name(&self) -> Name {
        self.name
    }

    /// The node's common properties.
    pub(crate) fn props(&self) -> NodeProps {
        let i = &self.info;
        let g = &self.geometry;
        NodeProps {
            // `Geometry::of` checked that these products do not overflow.
            simd_count: g
                .cus()
                .and_then(|c| c.checked_mul(i.simd_per_cu))
                .unwrap_or(0),
            simd_id_base: self.simd_id_base,
            max_waves_per_simd: i.max_waves_per_simd,
            lds_size_in_kb: i.lds_size_in_kb,
            wave_front_size: i.wave_front_size,
            array_count: g.arrays().unwrap_or(0),
            simd_arrays_per_engine: g.sh,
            cu_per_simd_array: g.cu_per_sh,
            simd_per_cu: i.simd_per_cu,
            max_slots_scratch_cu: i.max_slots_scratch_cu,
            gfx_target_version: i.gfx_target_version,
            vendor_id: i.vendor_id,
            device_id: i.device_id,
            location_id: i.location_id,
            domain: i.domain,
            drm_render_minor: i.drm_render_minor,
            // Upstream: `kfd->hive_id`, amdgpu's XGMI hive (0: none).
            hive_id: i.hive_id,
            num_sdma_engines: i.num_sdma_engines,
            num_sdma_xgmi_engines: i.num_sdma_xgmi_engines,
            num_sdma_queues_per_engine: i.num_sdma_queues_per_engine,
            num_cp_queues: i.num_cp_queues,
            cwsr_size: i.cwsr_size,
            ctl_stack_size: i.ctl_stack_size,
            ..NodeProps::default()
        }
    }

    /// The node's GPU-only properties.
    pub(crate) fn gpu_props(&self) -> GpuProps {
        let i = &self.info;
        GpuProps {
            max_engine_clk_fcompute: i.max_engine_clk_fcompute,
            fw_version: i.fw_version,
            capability: (i.capability | self.cap_set) & !self.cap_clear,
            capability2: i.capability2,
            debug_prop: u64::from(i.debug_prop),
            sdma_fw_version: i.sdma_fw_version,
            unique_id: i.unique_id,
            num_xcc: i.num_xcc,
        }
    }

    /// The memory bank.
    pub(crate) fn mem_bank(&self) -> Arc<MemBank> {
        self.mem_bank.clone()
    }

    /// The caches.
    pub(crate) fn caches(&self) -> &[Arc<Cache>] {
        &self.caches
    }

    /// The PCIe link from the GPU's node `from` to CPU node `to`
    /// (`kfd_fill_gpu_direct_io_link_to_cpu`, flags as
    /// `kfd_fill_iolink_non_crat_info` sets them with PCIe atomics).
    pub(crate) fn link_to_cpu(&self, from: u32, to: u32) -> IoLink {
        IoLink {
            link_type: HSA_IOLINK_TYPE_PCIEXPRESS,
            node_from: from,
            node_to: to,
            weight: PCIE_WEIGHT,
            min_bandwidth: PCIE_MIN_BANDWIDTH,
            max_bandwidth: PCIE_MAX_BANDWIDTH,
            flags: HSA_IOLINK_FLAGS_ENABLED,
            ..IoLink::default()
        }
    }
}

/// The cache entries of a GPU (`kfd_fill_cache_non_crat_info`): for a level 1
/// cache one entry per group of `cus_per_cache` CUs of every shader array,
/// for other levels one entry for the whole GPU.
fn caches(info: &GpuInfo, g: &Geometry, simd_id_base: u32) -> Result<KVec<Arc<Cache>>> {
    let mut out = KVec::new();
    for c in reported(&info.caches, info.num_caches) {
        let shared = (1u64 << c.cus_per_cache) - 1;
        let entry = |processor_id_low: u32| Cache {
            processor_id_low,
            level: c.level,
            size: c.size_kib,
            cache_line_size: c.cache_line_size,
            cache_lines_per_tag: c.cache_lines_per_tag,
            association: c.associativity,
            latency: c.latency,
            cache_type: c.type_,
            sibling_map: [0; SIBLING_MAP_SIZE],
            sibling_map_size: 0,
        };
        let mut cu_processor_id = simd_id_base;
        if c.level == 1 {
            for _array in 0..g.arrays().unwrap_or(0) {
                let mut k = 0;
                while k < g.cu_per_sh {
                    let mask = (g.sh_bitmap() >> k) & shared;
                    if mask != 0 {
                        let first = mask.trailing_zeros();
                        let mut e = entry(cu_processor_id.wrapping_add(first));
                        put_mask(&mut e, 0, (mask >> first) as u32);
                        e.sibling_map_size = 4;
                        out.push(Arc::new(e, GFP_KERNEL)?, GFP_KERNEL)?;
                    }
                    let step = c.cus_per_cache.min(g.cu_per_sh - k);
                    cu_processor_id = cu_processor_id.wrapping_add(step);
                    k += c.cus_per_cache;
                }
            }
        } else {
            let mask = g.sh_bitmap() & shared;
            if mask == 0 {
                continue;
            }
            let first = mask.trailing_zeros();
            let mut e = entry(cu_processor_id.wrapping_add(first));
            // One word per shader array; upstream writes the first array's
            // mask (shifted to the first active CU) and then each array's.
            let mut word = (mask >> first) as u32;
            let mut at = 0;
            for _array in 0..g.arrays().unwrap_or(0) {
                put_mask(&mut e, at, word);
                at += 4;
                word = (g.sh_bitmap() & shared) as u32;
            }
            e.sibling_map_size = at;
            out.push(Arc::new(e, GFP_KERNEL)?, GFP_KERNEL)?;
        }
    }
    Ok(out)
}

/// The first `num` of a device's caches (`info.caches`, `info.num_caches`).
fn reported<C>(caches: &[C], num: u32) -> &[C] {
    let n = (num as usize).min(caches.len());
    caches.get(..n).unwrap_or(&[])
}

/// Stores `mask` little-endian at byte `at` of the sibling map (in bounds:
/// `Geometry::of` limits the arrays to `SIBLING_MAP_SIZE / 4`).
fn put_mask(cache: &mut Cache, at: usize, mask: u32) {
    if let Some(dst) = cache.sibling_map.get_mut(at..at + 4) {
        dst.copy_from_slice(&mask.to_le_bytes());
    }
}
