// SPDX-License-Identifier: GPL-2.0

//! What one topology node prints: the properties of the node, its memory
//! banks, caches and io links, formatted exactly as upstream's sysfs shows.
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_topology.h` (`kfd_node_properties`,
//! `kfd_mem_properties`, `kfd_cache_properties`, `kfd_iolink_properties`),
//! `kfd_topology.c` (`node_show`, `mem_show`, `kfd_cache_show`,
//! `iolink_show`).  Values are `"%s %u\n"` / `"%s %llu\n"` lines.
//!
//! Every object here is immutable once built and shared through [`Arc`], so
//! `show` needs no lock: a topology change builds new objects.

use kernel::{prelude::*, sync::Arc};

use crate::kabi::sysfs::{host, Show, ShowBuffer};

/// `HSA_MEM_HEAP_TYPE_SYSTEM` (`include/uapi/linux/kfd_sysfs.h`).
pub(crate) const HSA_MEM_HEAP_TYPE_SYSTEM: u32 = 0;
/// `HSA_MEM_HEAP_TYPE_FB_PUBLIC`: VRAM, all of it host-visible.
pub(crate) const HSA_MEM_HEAP_TYPE_FB_PUBLIC: u32 = 1;
/// `HSA_MEM_HEAP_TYPE_FB_PRIVATE`: VRAM, not all of it host-visible.
pub(crate) const HSA_MEM_HEAP_TYPE_FB_PRIVATE: u32 = 2;
/// `HSA_IOLINK_TYPE_PCIEXPRESS`.
pub(crate) const HSA_IOLINK_TYPE_PCIEXPRESS: u32 = 2;
/// `HSA_IOLINK_FLAGS_ENABLED`.
pub(crate) const HSA_IOLINK_FLAGS_ENABLED: u32 = 1 << 0;
/// `HSA_IOLINK_FLAGS_NON_COHERENT`.
pub(crate) const HSA_IOLINK_FLAGS_NON_COHERENT: u32 = 1 << 1;

/// Bytes of a cache's sibling map (C: `CACHE_SIBLINGMAP_SIZE`).
pub(crate) const SIBLING_MAP_SIZE: usize = 128;

/// Files of `nodes/N/`, in creation order.
pub(crate) const NODE_FILES: [&CStr; 3] = [c"gpu_id", c"name", c"properties"];
/// Files of `mem_banks/M/`, `caches/C/` and `io_links/L/`.
pub(crate) const PROPERTIES_FILE: [&CStr; 1] = [c"properties"];

/// Writes `key value` lines.
struct Lines<'a, 'b>(&'a mut ShowBuffer<'b>);

impl Lines<'_, '_> {
    /// `"%s %u\n"`.
    fn u32(&mut self, key: &str, value: u32) -> Result {
        self.0.emit(fmt!("{} {}\n", key, value))
    }

    /// `"%s %llu\n"`.
    fn u64(&mut self, key: &str, value: u64) -> Result {
        self.0.emit(fmt!("{} {}\n", key, value))
    }
}

/// The properties every node prints (C: `struct kfd_node_properties`).
/// Counts of sub-objects are not stored: they are the lengths of [`Node`]'s
/// lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NodeProps {
    /// CPU cores of a CPU node; 0 on GPU nodes.
    pub(crate) cpu_cores_count: u32,
    /// SIMDs of a GPU node (`simd_per_cu` × CUs); 0 on CPU nodes.
    pub(crate) simd_count: u32,
    /// APIC id of the first CPU core.
    pub(crate) cpu_core_id_base: u32,
    /// First GPU processor id (from 0x80001000 upward).
    pub(crate) simd_id_base: u32,
    /// Waves per SIMD.
    pub(crate) max_waves_per_simd: u32,
    /// LDS per CU, KiB.
    pub(crate) lds_size_in_kb: u32,
    /// GDS, KiB (never set upstream).
    pub(crate) gds_size_in_kb: u32,
    /// GWS entries.
    pub(crate) num_gws: u32,
    /// Wavefront size.
    pub(crate) wave_front_size: u32,
    /// Shader arrays over all XCCs.
    pub(crate) array_count: u32,
    /// Shader arrays per shader engine.
    pub(crate) simd_arrays_per_engine: u32,
    /// CUs per shader array.
    pub(crate) cu_per_simd_array: u32,
    /// SIMDs per CU.
    pub(crate) simd_per_cu: u32,
    /// Scratch slots per CU.
    pub(crate) max_slots_scratch_cu: u32,
    /// `major * 10000 + minor * 100 + stepping`.
    pub(crate) gfx_target_version: u32,
    /// PCI vendor id.
    pub(crate) vendor_id: u32,
    /// PCI device id.
    pub(crate) device_id: u32,
    /// PCI `bus << 8 | devfn`.
    pub(crate) location_id: u32,
    /// PCI domain.
    pub(crate) domain: u32,
    /// Minor of `/dev/dri/renderD<minor>`.
    pub(crate) drm_render_minor: u32,
    /// XGMI hive id.
    pub(crate) hive_id: u64,
    /// PCIe SDMA engines.
    pub(crate) num_sdma_engines: u32,
    /// XGMI SDMA engines.
    pub(crate) num_sdma_xgmi_engines: u32,
    /// SDMA queues per engine.
    pub(crate) num_sdma_queues_per_engine: u32,
    /// Compute queues usable by the KFD.
    pub(crate) num_cp_queues: u32,
    /// Per-queue context save area size, bytes.
    pub(crate) cwsr_size: u32,
    /// Per-queue control stack size, bytes.
    pub(crate) ctl_stack_size: u32,
}

/// The properties only GPU nodes print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct GpuProps {
    /// Maximum engine clock, MHz.
    pub(crate) max_engine_clk_fcompute: u32,
    /// MEC firmware version.
    pub(crate) fw_version: u32,
    /// `HSA_CAP_*` bits.
    pub(crate) capability: u32,
    /// `HSA_CAP2_*` bits.
    pub(crate) capability2: u32,
    /// `HSA_DBG_*` bits.
    pub(crate) debug_prop: u64,
    /// SDMA firmware version.
    pub(crate) sdma_fw_version: u32,
    /// Unique id of the device.
    pub(crate) unique_id: u64,
    /// XCCs of the node.
    pub(crate) num_xcc: u32,
}

/// A node name (`nodes/N/name`): lower-case ASCII, at most 31 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Name {
    /// The bytes; `bytes[..len]` is the name.
    bytes: [u8; 31],
    /// Length of the name.
    len: usize,
}

impl Name {
    /// The name of `raw` (up to the first NUL, at most 31 bytes), lower-cased
    /// as upstream does with the ASIC name.  Bytes that are not printable
    /// ASCII become `?`.
    pub(crate) fn new(raw: &[u8]) -> Self {
        let mut name = Name::default();
        let chars = raw.iter().take_while(|&&b| b != 0);
        for (dst, &b) in name.bytes.iter_mut().zip(chars) {
            *dst = if b.is_ascii_graphic() || b == b' ' {
                b.to_ascii_lowercase()
            } else {
                b'?'
            };
            name.len += 1;
        }
        name
    }

    /// The name as text.
    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII is stored, so this cannot fail.
        let bytes = self.bytes.get(..self.len).unwrap_or(&[]);
        core::str::from_utf8(bytes).unwrap_or("")
    }
}

/// A memory bank, `mem_banks/M/properties` (C: `kfd_mem_properties`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MemBank {
    /// `HSA_MEM_HEAP_TYPE_*`.
    pub(crate) heap_type: u32,
    /// Size, bytes.
    pub(crate) size_in_bytes: u64,
    /// `HSA_MEM_FLAGS_*`.
    pub(crate) flags: u32,
    /// Bus width, bits.
    pub(crate) width: u32,
    /// Maximum memory clock, MHz.
    pub(crate) mem_clk_max: u32,
}

impl MemBank {
    /// Writes the 5 lines of `properties` (`mem_show`).
    pub(crate) fn write_properties(&self, out: &mut ShowBuffer<'_>) -> Result {
        let mut l = Lines(out);
        l.u32("heap_type", self.heap_type)?;
        l.u64("size_in_bytes", self.size_in_bytes)?;
        l.u32("flags", self.flags)?;
        l.u32("width", self.width)?;
        l.u32("mem_clk_max", self.mem_clk_max)
    }
}

impl Show for MemBank {
    fn show(&self, file: usize, out: &mut ShowBuffer<'_>) -> Result {
        match file {
            0 => self.write_properties(out),
            _ => Err(EINVAL),
        }
    }
}

/// A cache, `caches/C/properties` (C: `kfd_cache_properties`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cache {
    /// Processor id of the first CU sharing the cache.
    pub(crate) processor_id_low: u32,
    /// Cache level.
    pub(crate) level: u32,
    /// Size, KiB.
    pub(crate) size: u32,
    /// Line size, bytes.
    pub(crate) cache_line_size: u32,
    /// Lines per tag.
    pub(crate) cache_lines_per_tag: u32,
    /// Associativity.
    pub(crate) association: u32,
    /// Latency, ns.
    pub(crate) latency: u32,
    /// `HSA_CACHE_TYPE_*` bits.
    pub(crate) cache_type: u32,
    /// CUs sharing the cache, one bit each, relative to `processor_id_low`.
    pub(crate) sibling_map: [u8; SIBLING_MAP_SIZE],
    /// Bytes of `sibling_map` in use.
    pub(crate) sibling_map_size: usize,
}

impl Cache {
    /// Writes the 9 lines of `properties` (`kfd_cache_show`); `sibling_map`
    /// lists every bit of the used bytes, LSB first, comma-separated.
    pub(crate) fn write_properties(&self, out: &mut ShowBuffer<'_>) -> Result {
        let mut l = Lines(out);
        l.u32("processor_id_low", self.processor_id_low)?;
        l.u32("level", self.level)?;
        l.u32("size", self.size)?;
        l.u32("cache_line_size", self.cache_line_size)?;
        l.u32("cache_lines_per_tag", self.cache_lines_per_tag)?;
        l.u32("association", self.association)?;
        l.u32("latency", self.latency)?;
        l.u32("type", self.cache_type)?;
        out.emit(fmt!("sibling_map"))?;
        let used = self
            .sibling_map
            .get(..self.sibling_map_size)
            .ok_or(EINVAL)?;
        let mut sep = " ";
        for byte in used {
            for bit in 0..8 {
                out.emit(fmt!("{}{}", sep, (byte >> bit) & 1))?;
                sep = ",";
            }
        }
        out.emit(fmt!("\n"))
    }
}

impl Show for Cache {
    fn show(&self, file: usize, out: &mut ShowBuffer<'_>) -> Result {
        match file {
            0 => self.write_properties(out),
            _ => Err(EINVAL),
        }
    }
}

/// An io link, `io_links/L/properties` (C: `kfd_iolink_properties`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IoLink {
    /// `HSA_IOLINK_TYPE_*`.
    pub(crate) link_type: u32,
    /// Link version, major.
    pub(crate) version_major: u32,
    /// Link version, minor.
    pub(crate) version_minor: u32,
    /// Index of the node the link starts at (its own node).
    pub(crate) node_from: u32,
    /// Index of the node the link goes to.
    pub(crate) node_to: u32,
    /// Relative cost; PCIe is 20, CPU links the NUMA distance.
    pub(crate) weight: u32,
    /// Minimum latency, ns.
    pub(crate) min_latency: u32,
    /// Maximum latency, ns.
    pub(crate) max_latency: u32,
    /// Minimum bandwidth, MB/s.
    pub(crate) min_bandwidth: u32,
    /// Maximum bandwidth, MB/s.
    pub(crate) max_bandwidth: u32,
    /// Recommended transfer size, bytes.
    pub(crate) recommended_transfer_size: u32,
    /// Recommended SDMA engines (bit mask).
    pub(crate) recommended_sdma_engine_id_mask: u32,
    /// `HSA_IOLINK_FLAGS_*`.
    pub(crate) flags: u32,
}

impl IoLink {
    /// Writes the 13 lines of `properties` (`iolink_show`).
    pub(crate) fn write_properties(&self, out: &mut ShowBuffer<'_>) -> Result {
        let mut l = Lines(out);
        l.u32("type", self.link_type)?;
        l.u32("version_major", self.version_major)?;
        l.u32("version_minor", self.version_minor)?;
        l.u32("node_from", self.node_from)?;
        l.u32("node_to", self.node_to)?;
        l.u32("weight", self.weight)?;
        l.u32("min_latency", self.min_latency)?;
        l.u32("max_latency", self.max_latency)?;
        l.u32("min_bandwidth", self.min_bandwidth)?;
        l.u32("max_bandwidth", self.max_bandwidth)?;
        l.u32("recommended_transfer_size", self.recommended_transfer_size)?;
        l.u32(
            "recommended_sdma_engine_id_mask",
            self.recommended_sdma_engine_id_mask,
        )?;
        l.u32("flags", self.flags)
    }
}

impl Show for IoLink {
    fn show(&self, file: usize, out: &mut ShowBuffer<'_>) -> Result {
        match file {
            0 => self.write_properties(out),
            _ => Err(EINVAL),
        }
    }
}

/// One topology node as it is shown in `nodes/N/` (C: the sysfs-visible
/// part of `struct kfd_topology_device`).  Immutable; a topology change
/// builds new nodes.
pub(crate) struct Node {
    /// `gpu_id`: 0 for CPU nodes.
    pub(crate) gpu_id: u32,
    /// `name`: empty for CPU nodes.
    pub(crate) name: Name,
    /// The properties common to all nodes.
    pub(crate) props: NodeProps,
    /// The GPU-only properties; `None` for CPU nodes.
    pub(crate) gpu: Option<GpuProps>,
    /// `mem_banks/M`.
    pub(crate) mem_banks: KVec<Arc<MemBank>>,
    /// `caches/C`.
    pub(crate) caches: KVec<Arc<Cache>>,
    /// `io_links/L`.
    pub(crate) io_links: KVec<Arc<IoLink>>,
}

impl Node {
    /// Writes `properties` (`node_show`): 32 lines for a CPU node, 41 for a
    /// GPU node, in upstream's order.  `cpu_clk_mhz` is the last value,
    /// `max_engine_clk_ccompute`, which upstream reads at every show.
    pub(crate) fn write_properties(&self, out: &mut ShowBuffer<'_>, cpu_clk_mhz: u32) -> Result {
        let p = &self.props;
        let mut l = Lines(out);
        l.u32("cpu_cores_count", p.cpu_cores_count)?;
        l.u32(
            "simd_count",
            if self.gpu.is_some() { p.simd_count } else { 0 },
        )?;
        l.u32("mem_banks_count", count(self.mem_banks.len())?)?;
        l.u32("caches_count", count(self.caches.len())?)?;
        l.u32("io_links_count", count(self.io_links.len())?)?;
        l.u32("p2p_links_count", 0)?;
        l.u32("cpu_core_id_base", p.cpu_core_id_base)?;
        l.u32("simd_id_base", p.simd_id_base)?;
        l.u32("max_waves_per_simd", p.max_waves_per_simd)?;
        l.u32("lds_size_in_kb", p.lds_size_in_kb)?;
        l.u32("gds_size_in_kb", p.gds_size_in_kb)?;
        l.u32("num_gws", p.num_gws)?;
        l.u32("wave_front_size", p.wave_front_size)?;
        l.u32(
            "array_count",
            if self.gpu.is_some() { p.array_count } else { 0 },
        )?;
        l.u32("simd_arrays_per_engine", p.simd_arrays_per_engine)?;
        l.u32("cu_per_simd_array", p.cu_per_simd_array)?;
        l.u32("simd_per_cu", p.simd_per_cu)?;
        l.u32("max_slots_scratch_cu", p.max_slots_scratch_cu)?;
        l.u32("gfx_target_version", p.gfx_target_version)?;
        l.u32("vendor_id", p.vendor_id)?;
        l.u32("device_id", p.device_id)?;
        l.u32("location_id", p.location_id)?;
        l.u32("domain", p.domain)?;
        l.u32("drm_render_minor", p.drm_render_minor)?;
        l.u64("hive_id", p.hive_id)?;
        l.u32("num_sdma_engines", p.num_sdma_engines)?;
        l.u32("num_sdma_xgmi_engines", p.num_sdma_xgmi_engines)?;
        l.u32("num_sdma_queues_per_engine", p.num_sdma_queues_per_engine)?;
        l.u32("num_cp_queues", p.num_cp_queues)?;
        l.u32("cwsr_size", p.cwsr_size)?;
        l.u32("ctl_stack_size", p.ctl_stack_size)?;
        if let Some(g) = &self.gpu {
            l.u32("max_engine_clk_fcompute", g.max_engine_clk_fcompute)?;
            // Upstream always prints 0; sizes are in the memory banks.
            l.u64("local_mem_size", 0)?;
            l.u32("fw_version", g.fw_version)?;
            l.u32("capability", g.capability)?;
            l.u32("capability2", g.capability2)?;
            l.u64("debug_prop", g.debug_prop)?;
            l.u32("sdma_fw_version", g.sdma_fw_version)?;
            l.u64("unique_id", g.unique_id)?;
            l.u32("num_xcc", g.num_xcc)?;
        }
        l.u32("max_engine_clk_ccompute", cpu_clk_mhz)
    }
}

/// A list length as a printed count.
fn count(len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| EOVERFLOW)
}

impl Show for Node {
    fn show(&self, file: usize, out: &mut ShowBuffer<'_>) -> Result {
        match file {
            0 => out.emit(fmt!("{}\n", self.gpu_id)),
            1 => out.emit(fmt!("{}\n", self.name.as_str())),
            2 => self.write_properties(out, host::cpu_max_clock_mhz()),
            _ => Err(EINVAL),
        }
    }
}
