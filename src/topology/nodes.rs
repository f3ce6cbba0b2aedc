// SPDX-License-Identifier: GPL-2.0

//! Building the node list: CPU nodes from the host, then GPU nodes, with the
//! io links between them numbered by node index.
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_crat.c` (`kfd_create_vcrat_image_cpu`,
//! `kfd_parse_subtype_iolink`), `kfd_topology.c`
//! (`kfd_add_non_crat_information`, `kfd_fill_iolink_non_crat_info`,
//! `kfd_topology_update_io_links`).
//!
//! Differences from upstream, where upstream numbers links by NUMA node id
//! instead of node index: CPU-to-CPU links go only to nodes that have CPUs
//! (upstream also links memory-only NUMA nodes, which have no topology node),
//! and a GPU links to the first CPU node (upstream: its PCI device's NUMA
//! node, 0 when unknown, which is the case for a virtual GPU).

use kernel::{prelude::*, sync::Arc};

use super::{
    gpu::Gpu,
    props::{
        IoLink, MemBank, Name, Node, NodeProps, HSA_IOLINK_FLAGS_ENABLED,
        HSA_IOLINK_FLAGS_NON_COHERENT, HSA_MEM_HEAP_TYPE_SYSTEM,
    },
};
use crate::kabi::sysfs::host;

/// A CPU node as the topology keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CpuEntry {
    /// The host's NUMA node.
    pub(crate) host: host::CpuNode,
    /// Memory width from DMI (first CPU node only, as upstream).
    pub(crate) mem_width: u32,
    /// Memory clock from DMI (first CPU node only, as upstream).
    pub(crate) mem_clk_max: u32,
}

/// The CPU nodes of this host.
pub(crate) fn cpu_entries() -> Result<KVec<CpuEntry>> {
    let (width, clk) = host::dmi_memory();
    let mut out = KVec::new();
    for (i, n) in host::cpu_nodes()?.iter().enumerate() {
        let first = i == 0;
        out.push(
            CpuEntry {
                host: *n,
                mem_width: if first { width } else { 0 },
                mem_clk_max: if first { clk } else { 0 },
            },
            GFP_KERNEL,
        )?;
    }
    Ok(out)
}

/// How CPU nodes are linked; a trait so tests can use fixed values.
pub(crate) trait HostLinks: Sync {
    /// The io link type between CPU nodes, `None` for no links.
    fn cpu_link_type(&self) -> Option<u32>;
    /// The weight of a link between NUMA nodes.
    fn distance(&self, from_nid: u32, to_nid: u32) -> u32;
}

/// The real host.
pub(crate) struct Host;

impl HostLinks for Host {
    fn cpu_link_type(&self) -> Option<u32> {
        host::cpu_link_type()
    }

    fn distance(&self, from_nid: u32, to_nid: u32) -> u32 {
        host::node_distance(from_nid, to_nid)
    }
}

/// The links of the real host.
pub(crate) static HOST_LINKS: Host = Host;

/// A node index.
fn index(i: usize) -> Result<u32> {
    u32::try_from(i).map_err(|_| EOVERFLOW)
}

/// The nodes for `cpus` and `gpus`, in that order.
pub(crate) fn build(
    cpus: &[CpuEntry],
    gpus: &[Gpu],
    links: &dyn HostLinks,
) -> Result<KVec<Arc<Node>>> {
    let mut nodes = KVec::with_capacity(cpus.len() + gpus.len(), GFP_KERNEL)?;
    // Upstream attaches a GPU to the CPU node of its NUMA node: node 0 here.
    let gpu_cpu = if cpus.is_empty() { None } else { Some(0u32) };

    for (i, cpu) in cpus.iter().enumerate() {
        let from = index(i)?;
        let mut io_links = KVec::new();
        if let Some(link_type) = links.cpu_link_type() {
            for (j, other) in cpus.iter().enumerate().filter(|&(j, _)| j != i) {
                let link = IoLink {
                    link_type,
                    node_from: from,
                    node_to: index(j)?,
                    weight: links.distance(cpu.host.nid, other.host.nid),
                    ..IoLink::default()
                };
                io_links.push(Arc::new(link, GFP_KERNEL)?, GFP_KERNEL)?;
            }
        }
        // The reverse of each large-BAR GPU's link (`kfd_parse_subtype_iolink`
        // with CRAT_IOLINK_FLAGS_BI_DIRECTIONAL): CPU to GPU over PCIe is
        // not coherent.
        for (g, gpu) in gpus.iter().enumerate() {
            if gpu_cpu == Some(from) && gpu.large_bar() {
                let to = index(cpus.len() + g)?;
                let mut link = gpu.link_to_cpu(to, from);
                link.node_from = from;
                link.node_to = to;
                link.flags = HSA_IOLINK_FLAGS_ENABLED | HSA_IOLINK_FLAGS_NON_COHERENT;
                io_links.push(Arc::new(link, GFP_KERNEL)?, GFP_KERNEL)?;
            }
        }
        let mem = MemBank {
            heap_type: HSA_MEM_HEAP_TYPE_SYSTEM,
            size_in_bytes: cpu.host.mem_bytes,
            flags: 0,
            width: cpu.mem_width,
            mem_clk_max: cpu.mem_clk_max,
        };
        let mut mem_banks = KVec::new();
        mem_banks.push(Arc::new(mem, GFP_KERNEL)?, GFP_KERNEL)?;
        let node = Node {
            gpu_id: 0,
            name: Name::default(),
            props: NodeProps {
                cpu_cores_count: cpu.host.cores,
                cpu_core_id_base: cpu.host.apic_id_base,
                ..NodeProps::default()
            },
            gpu: None,
            mem_banks,
            caches: KVec::new(),
            io_links,
        };
        nodes.push(Arc::new(node, GFP_KERNEL)?, GFP_KERNEL)?;
    }

    for (g, gpu) in gpus.iter().enumerate() {
        let me = index(cpus.len() + g)?;
        let mut io_links = KVec::new();
        if let Some(cpu) = gpu_cpu {
            io_links.push(Arc::new(gpu.link_to_cpu(me, cpu), GFP_KERNEL)?, GFP_KERNEL)?;
        }
        let mut mem_banks = KVec::new();
        mem_banks.push(gpu.mem_bank(), GFP_KERNEL)?;
        let mut caches = KVec::new();
        caches.extend_from_slice(gpu.caches(), GFP_KERNEL)?;
        let node = Node {
            gpu_id: gpu.gpu_id,
            name: gpu.name(),
            props: gpu.props(),
            gpu: Some(gpu.gpu_props()),
            mem_banks,
            caches,
            io_links,
        };
        nodes.push(Arc::new(node, GFP_KERNEL)?, GFP_KERNEL)?;
    }
    Ok(nodes)
}
