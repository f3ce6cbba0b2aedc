// SPDX-License-Identifier: GPL-2.0

//! Host facts the KFD topology prints for its CPU nodes: NUMA nodes, their
//! CPUs and memory, node distances, DMI memory data, the CPU clock and the
//! ACPI platform ids.
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_crat.c` (`kfd_create_vcrat_image_cpu`,
//! `kfd_fill_cu_for_cpu`, `kfd_fill_mem_info_for_cpu`,
//! `kfd_fill_iolink_info_for_cpu`), `kfd_topology.c` (`find_system_memory`,
//! `node_show`).  C header: `shim/rkfd_sysfs.h`.

use kernel::{ffi::c_int, prelude::*};

use super::super::shim_ffi as shim;

/// An online NUMA node with CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CpuNode {
    /// NUMA node id.
    pub(crate) nid: u32,
    /// Online CPUs of the node.
    pub(crate) cores: u32,
    /// APIC id of the node's first CPU (CPU number on other architectures).
    pub(crate) apic_id_base: u32,
    /// Memory managed by the node's zones, in bytes.
    pub(crate) mem_bytes: u64,
}

/// The online NUMA nodes that have CPUs, in node id order.  Upstream leaves
/// memory-only nodes out of the topology the same way.
pub(crate) fn cpu_nodes() -> Result<KVec<CpuNode>> {
    let mut nodes = KVec::new();
    // SAFETY: Walks the online node mask; any argument is valid.
    let mut nid = unsafe { shim::rkfd_shim_host_next_node(-1) };
    while nid >= 0 {
        let (mut cores, mut apic_id_base) = (0u32, 0u32);
        // SAFETY: `nid` is an online node id; the out pointers are valid.
        let ret = unsafe { shim::rkfd_shim_host_node_cpus(nid, &mut cores, &mut apic_id_base) };
        if ret == 0 {
            nodes.push(
                CpuNode {
                    nid: nid as u32,
                    cores,
                    apic_id_base,
                    // SAFETY: `nid` is an online node id.
                    mem_bytes: unsafe { shim::rkfd_shim_host_node_mem_bytes(nid) },
                },
                GFP_KERNEL,
            )?;
        }
        // SAFETY: As above.
        nid = unsafe { shim::rkfd_shim_host_next_node(nid) };
    }
    Ok(nodes)
}

/// The NUMA distance between two nodes (`node_distance`).
pub(crate) fn node_distance(from: u32, to: u32) -> u32 {
    match (c_int::try_from(from), c_int::try_from(to)) {
        // SAFETY: `node_distance` accepts any node ids.
        (Ok(from), Ok(to)) => unsafe { shim::rkfd_shim_host_node_distance(from, to) },
        _ => 0,
    }
}

/// The CRAT io link type between CPU nodes: 1 (HyperTransport) on AMD, 5
/// (QPI 1.1) on other x86_64 CPUs; `None` where upstream makes no CPU links.
pub(crate) fn cpu_link_type() -> Option<u32> {
    // SAFETY: Reads boot CPU data.
    match unsafe { shim::rkfd_shim_host_cpu_link_type() } {
        0 => None,
        t => Some(t),
    }
}

/// System memory width (bits) and maximum clock (MHz) from DMI, 0 if unknown.
pub(crate) fn dmi_memory() -> (u32, u32) {
    let (mut width, mut clk) = (0, 0);
    // SAFETY: The out pointers are valid; `dmi_walk` is safe to call any time.
    unsafe { shim::rkfd_shim_host_dmi_memory(&mut width, &mut clk) };
    (width, clk)
}

/// `cpufreq_quick_get_max(0) / 1000`: CPU 0's maximum clock in MHz, 0 without
/// cpufreq.  May sleep.
pub(crate) fn cpu_max_clock_mhz() -> u32 {
    // SAFETY: `cpufreq_quick_get_max` accepts any CPU number.
    let khz = unsafe { shim::rkfd_shim_host_cpu_max_khz() };
    khz / 1000
}

/// The values of `system_properties`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Platform {
    /// OEM table id of the ACPI DSDT.
    pub(crate) oem: u64,
    /// OEM id of the ACPI DSDT.
    pub(crate) id: u64,
    /// Revision of the ACPI DSDT.
    pub(crate) rev: u64,
}

/// The platform ids from the ACPI DSDT (zeros without one).
pub(crate) fn platform() -> Platform {
    let mut p = Platform::default();
    // SAFETY: The out pointers are valid.
    unsafe { shim::rkfd_shim_host_platform(&mut p.oem, &mut p.id, &mut p.rev) };
    p
}
