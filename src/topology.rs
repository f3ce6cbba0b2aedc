// SPDX-License-Identifier: GPL-2.0

//! The KFD topology: the nodes (CPU NUMA nodes, then GPUs) that ROCm reads
//! from `/sys/devices/virtual/kfd/kfd/topology/` (also reachable as
//! `/sys/class/kfd/kfd/topology`).
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_topology.c` (topology list, sysfs
//! rendering, `kfd_topology_add_device`/`_remove_device`) and `kfd_crat.c`
//! (virtual CRAT for the CPU and GPUs).  There is no CRAT here: nodes are
//! built directly with the values upstream's virtual CRAT would produce.
//!
//! ```text
//! topology/generation_id       incremented on every change of the tree
//! topology/system_properties   platform_oem, platform_id, platform_rev
//! topology/nodes/N/            N = 0..count-1, CPU nodes first, then GPUs
//!     gpu_id, name, properties (32 keys CPU / 41 keys GPU)
//!     mem_banks/M/properties, caches/C/properties, io_links/L/properties,
//!     p2p_links/ (empty), perf/ (empty)
//! ```
//!
//! # Use
//!
//! The module struct creates the [`Topology`] once, after `/dev/kfd`
//! (its directory lives under the kfd device), and drops it before the
//! device.  A GPU is added with [`Topology::add_gpu`] when its device is
//! published (upstream: `kgd2kfd_device_init`), which returns its `gpu_id`,
//! and removed with [`Topology::remove_gpu`] at `kgd2kfd_device_exit`;
//! lookups are [`Topology::gpu`] and [`Topology::gpus`].  rkfd's own
//! capability bits go in with [`Topology::update_capability`].
//!
//! Every change rebuilds the whole `nodes/` tree, as upstream does, so node
//! directories are always numbered `0..N-1` and the links renumbered; then
//! `generation_id` is incremented.  libhsakmt reads `generation_id` before and
//! after its snapshot and retries if it changed.
//!
//! # Locking
//!
//! Lock order: see the crate root (`src/rkfd_main.rs`).
//!
//! `Topology::inner` is the only rkfd lock here.  It is held while sysfs
//! directories are created and removed, so it is taken before kernfs' locks
//! and the active references of topology files.  The files' `show` takes no
//! lock (nodes are immutable [`Arc`]s; `generation_id` is atomic), so there
//! is no inversion.  Callers may hold their own locks when calling in, as
//! long as no topology file's `show` could need them (none does).

use crate::kabi::log::{kfd_err, kfd_info};
use kernel::{
    new_mutex,
    prelude::*,
    str::CString,
    sync::{
        atomic::{Acquire, Atomic, Release},
        Arc, Mutex,
    }, //
};

use crate::kabi::{
    devcgroup,
    kgd::GpuInfo,
    sysfs::{host, Dir, Parent, Show, ShowBuffer},
};

mod gpu;
mod nodes;
mod props;

#[cfg(CONFIG_KUNIT = "y")]
mod tests;

pub(crate) use props::Node;

use gpu::Gpu;
use nodes::CpuEntry;

/// A GPU's place in the topology.
#[derive(Clone)]
#[allow(dead_code)] // Until the device layer (kgd2kfd_*) uses it.
pub(crate) struct GpuNode {
    /// Index of its node directory (`nodes/<index>`), also what io links and
    /// `GET_PROCESS_APERTURES` count in.
    pub(crate) index: u32,
    /// Its node, as currently shown.  `node.gpu_id` is the GPU's id and
    /// `node.props` holds e.g. `drm_render_minor`, `cwsr_size`.
    pub(crate) node: Arc<Node>,
}

/// `generation_id` and `system_properties` (C: `struct kfd_system_properties`).
struct SysProps {
    /// `generation_id`.
    generation: Atomic<u32>,
    /// `platform_oem`, `platform_id`, `platform_rev`.
    platform: host::Platform,
}

impl Show for SysProps {
    fn show(&self, file: usize, out: &mut ShowBuffer<'_>) -> Result {
        match file {
            0 => out.emit(fmt!("{}\n", self.generation.load(Acquire))),
            1 => {
                let p = &self.platform;
                out.emit(fmt!("platform_oem {}\n", p.oem))?;
                out.emit(fmt!("platform_id {}\n", p.id))?;
                out.emit(fmt!("platform_rev {}\n", p.rev))
            }
            _ => Err(EINVAL),
        }
    }
}

/// The sysfs directories of one node; removed when dropped.
struct NodeDirs {
    /// Every directory of the node (each holds its parent).
    _dirs: KVec<Arc<Dir>>,
}

impl NodeDirs {
    /// Creates `nodes/<index>/` and everything below it
    /// (`kfd_build_sysfs_node_entry`).  Every file of a GPU node answers
    /// `-EPERM` to a reader whose device cgroup denies the GPU's render node
    /// (see [`CgroupGuard`]).
    fn create(nodes_dir: &Arc<Dir>, index: usize, node: &Arc<Node>) -> Result<Self> {
        let minor = node.gpu.as_ref().map(|_| node.props.drm_render_minor);
        let mut dirs = KVec::new();
        let name = CString::try_from_fmt(fmt!("{}", index))?;
        let dir = Dir::new(
            Parent::Dir(nodes_dir),
            &name,
            &props::NODE_FILES,
            CgroupGuard::new(minor, node)?,
        )?;
        let mem = Dir::new_empty(Parent::Dir(&dir), c"mem_banks")?;
        let caches = Dir::new_empty(Parent::Dir(&dir), c"caches")?;
        let links = Dir::new_empty(Parent::Dir(&dir), c"io_links")?;
        dirs.push(Dir::new_empty(Parent::Dir(&dir), c"p2p_links")?, GFP_KERNEL)?;
        dirs.push(Dir::new_empty(Parent::Dir(&dir), c"perf")?, GFP_KERNEL)?;
        Self::entries(&mut dirs, &mem, minor, &node.mem_banks)?;
        Self::entries(&mut dirs, &caches, minor, &node.caches)?;
        Self::entries(&mut dirs, &links, minor, &node.io_links)?;
        for d in [dir, mem, caches, links] {
            dirs.push(d, GFP_KERNEL)?;
        }
        Ok(NodeDirs { _dirs: dirs })
    }

    /// Creates `<parent>/<i>/properties` for each item.
    fn entries<T: Show>(
        dirs: &mut KVec<Arc<Dir>>,
        parent: &Arc<Dir>,
        minor: Option<u32>,
        items: &[Arc<T>],
    ) -> Result {
        for (i, item) in items.iter().enumerate() {
            let name = CString::try_from_fmt(fmt!("{}", i))?;
            let d = Dir::new(
                Parent::Dir(parent),
                &name,
                &props::PROPERTIES_FILE,
                CgroupGuard::new(minor, item)?,
            )?;
            dirs.push(d, GFP_KERNEL)?;
        }
        Ok(())
    }
}

/// The files of a GPU node, its memory banks, caches and io links: a reader
/// whose device cgroup denies the GPU's render node gets `-EPERM` (upstream
/// `kfd_devcgroup_check_permission()` in `node_show`, `mem_show`,
/// `kfd_cache_show` and `iolink_show`).  CPU nodes (`minor == None`) are
/// always readable.
struct CgroupGuard<T> {
    /// `drm_render_minor` of the node's GPU.
    minor: Option<u32>,
    inner: Arc<T>,
}

impl<T> CgroupGuard<T> {
    fn new(minor: Option<u32>, inner: &Arc<T>) -> Result<Arc<Self>> {
        Ok(Arc::new(CgroupGuard { minor, inner: inner.clone() }, GFP_KERNEL)?)
    }
}

impl<T: Show> Show for CgroupGuard<T> {
    fn show(&self, file: usize, out: &mut ShowBuffer<'_>) -> Result {
        if let Some(minor) = self.minor {
            devcgroup::check_render_node(minor)?;
        }
        self.inner.show(file, out)
    }
}

/// The mutable state, under [`Topology::inner`].
struct Inner {
    /// The sysfs directories of `nodes`; declared first so it is dropped
    /// before the directories it lives in.
    tree: KVec<NodeDirs>,
    /// The nodes as shown, in index order.
    nodes: KVec<Arc<Node>>,
    /// `topology/nodes`.
    nodes_dir: Arc<Dir>,
    /// `topology`.
    _root: Arc<Dir>,
    /// The CPU nodes, fixed at creation.
    cpus: KVec<CpuEntry>,
    /// The GPUs, in registration order.
    gpus: KVec<Gpu>,
    /// The next GPU processor id (C: `gpu_processor_id_low`); never reused,
    /// as upstream.
    next_processor_id: u32,
}

impl Inner {
    /// Replaces the `nodes/` tree with one built from `cpus` and `gpus`
    /// (`kfd_topology_update_sysfs`).  On failure the tree may be partial;
    /// the next rebuild replaces it.
    fn rebuild(&mut self) -> Result {
        // The new tree reuses the names of the old one: remove it first.
        self.tree.clear();
        self.nodes = nodes::build(&self.cpus, &self.gpus, &nodes::HOST_LINKS)?;
        for (i, node) in self.nodes.iter().enumerate() {
            let dirs = NodeDirs::create(&self.nodes_dir, i, node)?;
            self.tree.push(dirs, GFP_KERNEL)?;
        }
        Ok(())
    }

    /// The place of GPU `gpu_id` among `nodes`.
    fn find(&self, gpu_id: u32) -> Option<GpuNode> {
        let (index, node) = self
            .nodes
            .iter()
            .enumerate()
            .find(|(_, n)| n.gpu.is_some() && n.gpu_id == gpu_id)?;
        Some(GpuNode {
            index: u32::try_from(index).ok()?,
            node: node.clone(),
        })
    }
}

/// The KFD topology and its sysfs tree (C: `topology_device_list`,
/// `sys_props`).  Its directories are removed when it is dropped.
#[pin_data]
pub(crate) struct Topology {
    /// What `topology/` itself shows; read by `show` without `inner`.
    sys: Arc<SysProps>,
    /// Nodes and their sysfs tree.  Lock order: taken with no other rkfd
    /// lock held; kernfs' locks come inside it.
    #[pin]
    inner: Mutex<Inner>,
}

impl Topology {
    /// Creates `topology/` under the kfd device with one CPU node per online
    /// NUMA node that has CPUs (`kfd_topology_init`).  `ENODEV` if the kfd
    /// device is not registered.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Self::new_in(Parent::KfdDevice, c"topology")
    }

    fn new_in(parent: Parent<'_>, name: &CStr) -> Result<Arc<Self>> {
        let sys = Arc::new(
            SysProps {
                generation: Atomic::new(0),
                platform: host::platform(),
            },
            GFP_KERNEL,
        )?;
        let root = Dir::new(
            parent,
            name,
            &[c"generation_id", c"system_properties"],
            sys.clone(),
        )?;
        let nodes_dir = Dir::new_empty(Parent::Dir(&root), c"nodes")?;
        let mut inner = Inner {
            tree: KVec::new(),
            nodes: KVec::new(),
            nodes_dir,
            _root: root,
            cpus: nodes::cpu_entries()?,
            gpus: KVec::new(),
            next_processor_id: gpu::FIRST_PROCESSOR_ID,
        };
        inner.rebuild()?;
        sys.generation.fetch_add(1, Release);
        if !inner.cpus.is_empty() {
            kfd_info!("Topology: Add CPU node\n");
        }
        Arc::pin_init(
            pin_init!(Topology {
                sys,
                inner <- new_mutex!(inner, "Topology::inner"),
            }),
            GFP_KERNEL,
        )
    }

    /// Adds a GPU node for a device that reported `info` at probe
    /// (`kfd_topology_add_device`) and returns its `gpu_id`: non-zero, unique,
    /// and the same for the same device after a reload.  `EINVAL` for
    /// inconsistent `info`.
    pub(crate) fn add_gpu(&self, info: &GpuInfo) -> Result<u32> {
        let mut inner = self.inner.lock();
        let gpu_id = gpu::unique_gpu_id(gpu::gpu_id_hash(info), |id| {
            inner.gpus.iter().any(|g| g.gpu_id == id)
        })?;
        let base = inner.next_processor_id;
        let gpu = Gpu::new(info, gpu_id, base)?;
        let next = base.wrapping_add(gpu.processor_ids());
        inner.gpus.push(gpu, GFP_KERNEL)?;
        let res = inner.rebuild();
        if let Err(e) = res {
            kfd_err!("Failed to update GPU to sysfs topology: {:?}\n", e);
            inner.gpus.pop();
            let _ = inner.rebuild();
        } else {
            inner.next_processor_id = next;
            kfd_info!(
                "Topology: Add GPU node [{:#x}:{:#x}]\n",
                info.vendor_id,
                info.device_id
            );
        }
        self.sys.generation.fetch_add(1, Release);
        res.map(|()| gpu_id)
    }

    /// Removes GPU `gpu_id` (`kfd_topology_remove_device`); the nodes after
    /// it move down one index.  `ENODEV` if there is no such GPU.
    pub(crate) fn remove_gpu(&self, gpu_id: u32) -> Result {
        let mut inner = self.inner.lock();
        let pos = inner
            .gpus
            .iter()
            .position(|g| g.gpu_id == gpu_id)
            .ok_or(ENODEV)?;
        inner.gpus.remove(pos).map_err(|_| ENODEV)?;
        let res = inner.rebuild();
        if let Err(e) = res {
            // As upstream: better no node tree than a wrong one.
            kfd_err!("Failed to update sysfs topology: {:?}\n", e);
            inner.tree.clear();
        }
        self.sys.generation.fetch_add(1, Release);
        res
    }

    /// Sets and clears `HSA_CAP_*` bits of GPU `gpu_id`'s `capability` on top
    /// of what the device reported (e.g. SVM support), then rebuilds.
    pub(crate) fn update_capability(&self, gpu_id: u32, set: u32, clear: u32) -> Result {
        let mut inner = self.inner.lock();
        let gpu = inner
            .gpus
            .iter_mut()
            .find(|g| g.gpu_id == gpu_id)
            .ok_or(ENODEV)?;
        gpu.cap_set = (gpu.cap_set | set) & !clear;
        gpu.cap_clear = (gpu.cap_clear | clear) & !set;
        let res = inner.rebuild();
        self.sys.generation.fetch_add(1, Release);
        res
    }

    /// GPU `gpu_id`'s node and its index, if it exists.
    pub(crate) fn gpu(&self, gpu_id: u32) -> Option<GpuNode> {
        self.inner.lock().find(gpu_id)
    }

    /// Every GPU node, in node order.
    pub(crate) fn gpus(&self) -> Result<KVec<GpuNode>> {
        let inner = self.inner.lock();
        let mut out = KVec::new();
        for (index, node) in inner.nodes.iter().enumerate() {
            if node.gpu.is_some() {
                let index = u32::try_from(index).map_err(|_| EOVERFLOW)?;
                out.push(
                    GpuNode {
                        index,
                        node: node.clone(),
                    },
                    GFP_KERNEL,
                )?;
            }
        }
        Ok(out)
    }

    /// Number of nodes (CPU and GPU).
    pub(crate) fn num_nodes(&self) -> u32 {
        u32::try_from(self.inner.lock().nodes.len()).unwrap_or(u32::MAX)
    }

    /// The current `generation_id`.
    pub(crate) fn generation(&self) -> u32 {
        self.sys.generation.load(Acquire)
    }
}
