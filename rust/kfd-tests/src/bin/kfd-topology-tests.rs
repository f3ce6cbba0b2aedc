// SPDX-License-Identifier: GPL-2.0
//! Guest tests of rkfd's KFD topology in sysfs, read the way libhsakmt and
//! rocm-smi read it.  The key lists are copied from upstream's
//! drivers/gpu/drm/amd/amdkfd/kfd_topology.c (Linux 7.3.4).  Run inside the
//! test VM with rkfd loaded; an optional argument filters tests by name.
//! `RKFD_TOPOLOGY=DIR` checks a copy of a topology tree instead (the class
//! path check is then skipped).

use kfd_tests::harness::{ensure, ensure_eq, Check, Harness};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const SYS_TOPOLOGY: &str = "/sys/devices/virtual/kfd/kfd/topology";
const CLASS_TOPOLOGY: &str = "/sys/class/kfd/kfd/topology";

/// node_show(): the keys every node prints, then the GPU-only ones, then
/// max_engine_clk_ccompute (always last).
const COMMON_KEYS: [&str; 31] = [
    "cpu_cores_count", "simd_count", "mem_banks_count", "caches_count",
    "io_links_count", "p2p_links_count", "cpu_core_id_base", "simd_id_base",
    "max_waves_per_simd", "lds_size_in_kb", "gds_size_in_kb", "num_gws",
    "wave_front_size", "array_count", "simd_arrays_per_engine", "cu_per_simd_array",
    "simd_per_cu", "max_slots_scratch_cu", "gfx_target_version", "vendor_id",
    "device_id", "location_id", "domain", "drm_render_minor", "hive_id",
    "num_sdma_engines", "num_sdma_xgmi_engines", "num_sdma_queues_per_engine",
    "num_cp_queues", "cwsr_size", "ctl_stack_size",
];
const GPU_ONLY_KEYS: [&str; 9] = [
    "max_engine_clk_fcompute", "local_mem_size", "fw_version", "capability",
    "capability2", "debug_prop", "sdma_fw_version", "unique_id", "num_xcc",
];
const LAST_KEY: &str = "max_engine_clk_ccompute";
/// sysprops_show(), mem_show(), kfd_cache_show(), iolink_show().
const SYSTEM_KEYS: [&str; 3] = ["platform_oem", "platform_id", "platform_rev"];
const MEM_KEYS: [&str; 5] = ["heap_type", "size_in_bytes", "flags", "width", "mem_clk_max"];
const CACHE_KEYS: [&str; 9] = [
    "processor_id_low", "level", "size", "cache_line_size", "cache_lines_per_tag",
    "association", "latency", "type", "sibling_map",
];
const IOLINK_KEYS: [&str; 13] = [
    "type", "version_major", "version_minor", "node_from", "node_to", "weight",
    "min_latency", "max_latency", "min_bandwidth", "max_bandwidth",
    "recommended_transfer_size", "recommended_sdma_engine_id_mask", "flags",
];
const HSA_CACHE_TYPE_DATA: u64 = 0x1;
const HSA_CACHE_TYPE_HSACU: u64 = 0x8;

/// The tree under test: `RKFD_TOPOLOGY` or the kfd device's.
fn topology() -> &'static str {
    static ROOT: OnceLock<String> = OnceLock::new();
    ROOT.get_or_init(|| std::env::var("RKFD_TOPOLOGY").unwrap_or_else(|_| SYS_TOPOLOGY.to_string()))
}

fn cpu_keys() -> Vec<&'static str> {
    COMMON_KEYS.iter().copied().chain([LAST_KEY]).collect()
}

fn gpu_keys() -> Vec<&'static str> {
    COMMON_KEYS.iter().copied().chain(GPU_ONLY_KEYS).chain([LAST_KEY]).collect()
}

/// Reads a sysfs file as libhsakmt does (one read of up to a page).
fn read(path: impl AsRef<Path>) -> Result<String, String> {
    let path = path.as_ref();
    let s = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if s.len() >= 4096 {
        return Err(format!("{}: {} bytes, more than a page", path.display(), s.len()));
    }
    Ok(s)
}

fn read_u64(path: impl AsRef<Path>) -> Result<u64, String> {
    let path = path.as_ref();
    let s = read(path)?;
    ensure(s.ends_with('\n') && s.lines().count() == 1, format!("{}: not one line: {s:?}", path.display()))?;
    s.trim_end().parse().map_err(|e| format!("{}: {s:?}: {e}", path.display()))
}

/// A parsed `key value` file: the keys in order and the numeric values.
struct Props {
    keys: Vec<String>,
    values: BTreeMap<String, u64>,
    raw: BTreeMap<String, String>,
}

impl Props {
    fn get(&self, key: &str) -> Result<u64, String> {
        self.values.get(key).copied().ok_or_else(|| format!("no numeric {key}"))
    }
}

fn props(path: impl AsRef<Path>) -> Result<Props, String> {
    let path = path.as_ref();
    let s = read(path)?;
    ensure(s.ends_with('\n'), format!("{}: no final newline", path.display()))?;
    let mut p = Props { keys: vec![], values: BTreeMap::new(), raw: BTreeMap::new() };
    for line in s.lines() {
        let (k, v) = line.split_once(' ').ok_or_else(|| format!("{}: bad line {line:?}", path.display()))?;
        ensure(!k.is_empty() && !v.contains(' '), format!("{}: bad line {line:?}", path.display()))?;
        if let Ok(n) = v.parse::<u64>() {
            p.values.insert(k.to_string(), n);
        } else if k != "sibling_map" {
            return Err(format!("{}: {k}: value {v:?} is not a number", path.display()));
        }
        p.keys.push(k.to_string());
        p.raw.insert(k.to_string(), v.to_string());
    }
    Ok(p)
}

fn ensure_keys(p: &Props, want: &[&str], what: &str) -> Check {
    let got: Vec<&str> = p.keys.iter().map(|s| s.as_str()).collect();
    if got == want {
        return Ok(());
    }
    let at = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
    Err(format!(
        "{what}: {} keys, want {}; first difference at #{at}: got {:?}, want {:?}",
        got.len(),
        want.len(),
        got.get(at),
        want.get(at)
    ))
}

/// The entries of a directory, sorted.
fn entries(dir: impl AsRef<Path>) -> Result<Vec<String>, String> {
    let dir = dir.as_ref();
    let mut v: Vec<String> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    Ok(v)
}

/// Checks that `dir` holds exactly `0..count` (libhsakmt opens i < count).
fn ensure_numbered(dir: impl AsRef<Path>, count: u64) -> Check {
    let dir = dir.as_ref();
    let mut got: Vec<u64> = Vec::new();
    for e in entries(dir)? {
        got.push(e.parse().map_err(|_| format!("{}: unexpected entry {e:?}", dir.display()))?);
    }
    got.sort();
    let want: Vec<u64> = (0..count).collect();
    ensure_eq(got, want, &format!("entries of {}", dir.display()))
}

fn node_dir(n: usize) -> PathBuf {
    Path::new(topology()).join("nodes").join(n.to_string())
}

fn num_nodes() -> Result<usize, String> {
    let e = entries(Path::new(topology()).join("nodes"))?;
    ensure(!e.is_empty(), "no nodes")?;
    ensure_numbered(Path::new(topology()).join("nodes"), e.len() as u64)?;
    Ok(e.len())
}

fn is_gpu(n: usize) -> Result<bool, String> {
    Ok(read_u64(node_dir(n).join("gpu_id"))? != 0)
}

fn gpu_nodes() -> Result<Vec<usize>, String> {
    let mut v = vec![];
    for n in 0..num_nodes()? {
        if is_gpu(n)? {
            v.push(n);
        }
    }
    Ok(v)
}

// --- Tests -----------------------------------------------------------------

fn generation_id_parses() -> Check {
    let a = read_u64(Path::new(topology()).join("generation_id"))?;
    ensure(a >= 1, format!("generation_id {a}, want >= 1 after init"))?;
    ensure(a <= u32::MAX as u64, "generation_id is not a u32")
}

fn system_properties_has_3_keys() -> Check {
    let p = props(Path::new(topology()).join("system_properties"))?;
    ensure_keys(&p, &SYSTEM_KEYS, "system_properties")
}

fn topology_dir_layout() -> Check {
    ensure_eq(
        entries(topology())?,
        vec!["generation_id".to_string(), "nodes".into(), "system_properties".into()],
        "entries of topology/",
    )
}

fn nodes_are_numbered_without_gaps() -> Check {
    num_nodes().map(|_| ())
}

fn node_dir_layout() -> Check {
    let want: Vec<String> = ["caches", "gpu_id", "io_links", "mem_banks", "name", "p2p_links", "perf", "properties"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for n in 0..num_nodes()? {
        ensure_eq(entries(node_dir(n))?, want.clone(), &format!("entries of node {n}"))?;
        ensure(entries(node_dir(n).join("perf"))?.is_empty(), format!("node {n}: perf/ not empty"))?;
    }
    Ok(())
}

fn files_are_read_only_and_small() -> Check {
    fn walk(dir: &Path, files: &mut usize) -> Check {
        for e in fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let e = e.map_err(|e| e.to_string())?;
            let md = e.metadata().map_err(|e| e.to_string())?;
            if md.is_dir() {
                walk(&e.path(), files)?;
            } else {
                let mode = md.permissions().mode() & 0o777;
                ensure_eq(mode, 0o444, &format!("mode of {}", e.path().display()))?;
                read(e.path())?;
                *files += 1;
            }
        }
        Ok(())
    }
    let mut files = 0;
    walk(Path::new(topology()), &mut files)?;
    ensure(files >= 5, format!("only {files} files"))
}

fn cpu_nodes_first_with_32_keys() -> Check {
    let n = num_nodes()?;
    let mut seen_gpu = false;
    let mut cores = 0;
    for i in 0..n {
        if is_gpu(i)? {
            seen_gpu = true;
            continue;
        }
        ensure(!seen_gpu, format!("CPU node {i} after a GPU node"))?;
        let p = props(node_dir(i).join("properties"))?;
        ensure_keys(&p, &cpu_keys(), &format!("node {i} (CPU) properties"))?;
        ensure_eq(read(node_dir(i).join("name"))?, "\n".to_string(), &format!("node {i} name"))?;
        ensure_eq(p.get("simd_count")?, 0, "CPU simd_count")?;
        cores += p.get("cpu_cores_count")?;
    }
    ensure(!is_gpu(0)?, "node 0 is not a CPU node")?;
    let online = online_cpus()?;
    ensure_eq(cores, online, "sum of cpu_cores_count vs online CPUs")
}

fn online_cpus() -> Result<u64, String> {
    let s = read("/sys/devices/system/cpu/online")?;
    let mut n = 0;
    for part in s.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (u64, u64) = (a.parse().map_err(|_| s.clone())?, b.parse().map_err(|_| s.clone())?);
        n += b - a + 1;
    }
    Ok(n)
}

fn cpu_memory_is_system_heap() -> Check {
    for i in 0..num_nodes()? {
        if is_gpu(i)? {
            continue;
        }
        let p = props(node_dir(i).join("mem_banks/0/properties"))?;
        ensure_keys(&p, &MEM_KEYS, &format!("node {i} mem bank"))?;
        ensure_eq(p.get("heap_type")?, 0, "CPU heap_type (SYSTEM)")?;
        ensure(p.get("size_in_bytes")? > 0, "CPU memory size 0")?;
    }
    Ok(())
}

fn counts_match_entries() -> Check {
    for i in 0..num_nodes()? {
        let p = props(node_dir(i).join("properties"))?;
        for (key, dir, keys) in [
            ("mem_banks_count", "mem_banks", &MEM_KEYS[..]),
            ("caches_count", "caches", &CACHE_KEYS[..]),
            ("io_links_count", "io_links", &IOLINK_KEYS[..]),
            ("p2p_links_count", "p2p_links", &IOLINK_KEYS[..]),
        ] {
            let count = p.get(key)?;
            ensure_numbered(node_dir(i).join(dir), count)?;
            for j in 0..count {
                let sub = node_dir(i).join(dir).join(j.to_string());
                ensure_eq(entries(&sub)?, vec!["properties".to_string()], &format!("entries of {}", sub.display()))?;
                ensure_keys(&props(sub.join("properties"))?, keys, &format!("{}", sub.display()))?;
            }
        }
    }
    Ok(())
}

fn io_links_start_at_their_node() -> Check {
    let n = num_nodes()?;
    for i in 0..n {
        let count = props(node_dir(i).join("properties"))?.get("io_links_count")?;
        for j in 0..count {
            let l = props(node_dir(i).join(format!("io_links/{j}/properties")))?;
            ensure_eq(l.get("node_from")?, i as u64, &format!("node {i} link {j} node_from"))?;
            let to = l.get("node_to")?;
            ensure(to < n as u64 && to != i as u64, format!("node {i} link {j}: node_to {to}"))?;
            ensure(l.get("weight")? > 0, format!("node {i} link {j}: weight 0"))?;
        }
    }
    Ok(())
}

fn gpu_nodes_have_41_keys() -> Check {
    for i in gpu_nodes()? {
        let p = props(node_dir(i).join("properties"))?;
        ensure_keys(&p, &gpu_keys(), &format!("node {i} (GPU) properties"))?;
        let simd = p.get("simd_count")?;
        let per_cu = p.get("simd_per_cu")?;
        ensure(simd > 0 && per_cu > 0 && simd % per_cu == 0, format!("simd_count {simd}, simd_per_cu {per_cu}"))?;
        ensure_eq(p.get("cpu_cores_count")?, 0, "GPU cpu_cores_count")?;
        ensure_eq(p.get("local_mem_size")?, 0, "local_mem_size (upstream prints 0)")?;
        ensure(p.get("simd_id_base")? >= 0x8000_1000, "simd_id_base below 0x80001000")?;
        let name = read(node_dir(i).join("name"))?;
        ensure(name.ends_with('\n') && name.trim_end() == name.trim_end().to_lowercase(), format!("name {name:?}"))?;
    }
    Ok(())
}

/// `(device_id, fw_version, sdma_fw_version)` of each virtual GPU profile:
/// the MEC and SDMA firmware versions a real board of the part reports, as
/// vgpu/profile.rs documents them with their source.
const PROFILE_FIRMWARE: [(u64, u64, u64); 4] = [
    (0x740f, 69, 8),   // gfx90a, MI210
    (0x73a3, 113, 83), // gfx1030, W6800
    (0x7448, 510, 19), // gfx1100, W7900
    (0x15bf, 40, 16),  // gfx1103, 780M
];

/// libhsakmt keeps `& 0x3ff` of both as `uCodeEngineVersions`; ROCm needs a
/// non-zero SDMA version.  A virtual part reports its board's versions.
fn gpu_firmware_versions() -> Check {
    for i in gpu_nodes()? {
        let p = props(node_dir(i).join("properties"))?;
        let (mec, sdma) = (p.get("fw_version")?, p.get("sdma_fw_version")?);
        ensure(mec & 0x3ff != 0, format!("node {i}: fw_version {mec}"))?;
        ensure(sdma & 0x3ff != 0, format!("node {i}: sdma_fw_version {sdma}"))?;
        let id = p.get("device_id")?;
        if let Some(&(_, want_mec, want_sdma)) = PROFILE_FIRMWARE.iter().find(|f| f.0 == id) {
            ensure_eq(mec, want_mec, &format!("node {i} (device {id:#x}) fw_version"))?;
            ensure_eq(sdma, want_sdma, &format!("node {i} (device {id:#x}) sdma_fw_version"))?;
        }
    }
    Ok(())
}

fn gpu_ids_nonzero_stable_unique() -> Check {
    let gpus = gpu_nodes()?;
    let mut ids = vec![];
    for &i in &gpus {
        let a = read_u64(node_dir(i).join("gpu_id"))?;
        let b = read_u64(node_dir(i).join("gpu_id"))?;
        ensure(a != 0 && a <= 0xffff, format!("node {i}: gpu_id {a}"))?;
        ensure_eq(a, b, "gpu_id on a second read")?;
        ensure(!ids.contains(&a), format!("gpu_id {a} twice"))?;
        ids.push(a);
    }
    Ok(())
}

fn gpu_has_hsacu_data_cache() -> Check {
    for i in gpu_nodes()? {
        let count = props(node_dir(i).join("properties"))?.get("caches_count")?;
        let mut found = false;
        for c in 0..count {
            let p = props(node_dir(i).join(format!("caches/{c}/properties")))?;
            let t = p.get("type")?;
            let level = p.get("level")?;
            found |= t & (HSA_CACHE_TYPE_HSACU | HSA_CACHE_TYPE_DATA) == HSA_CACHE_TYPE_HSACU | HSA_CACHE_TYPE_DATA
                && (1..=4).contains(&level);
            sibling_map_format(p.raw.get("sibling_map").map(String::as_str).unwrap_or(""))
                .map_err(|e| format!("node {i} cache {c}: {e}"))?;
        }
        ensure(found, format!("node {i}: no level 1..4 cache of type HSACU|DATA"))?;
    }
    Ok(())
}

/// `sibling_map` is every bit of whole bytes: 0/1 values, a multiple of 8.
fn sibling_map_format(v: &str) -> Check {
    let bits: Vec<&str> = v.split(',').collect();
    ensure(!v.is_empty() && bits.len() % 8 == 0, format!("sibling_map has {} values", bits.len()))?;
    ensure(bits.iter().all(|b| *b == "0" || *b == "1"), format!("sibling_map {v:?}"))?;
    ensure(bits.contains(&"1"), "sibling_map without a CU")
}

fn gpu_links_to_a_cpu() -> Check {
    for i in gpu_nodes()? {
        let l = props(node_dir(i).join("io_links/0/properties"))?;
        let to = l.get("node_to")? as usize;
        ensure(!is_gpu(to)?, format!("node {i}: first link goes to GPU node {to}"))?;
        ensure_eq(l.get("type")?, 2, "GPU link type (PCIe)")?;
        ensure_eq(l.get("weight")?, 20, "GPU link weight")?;
        let m = props(node_dir(i).join("mem_banks/0/properties"))?;
        let heap = m.get("heap_type")?;
        ensure(heap == 1 || heap == 2, format!("GPU heap_type {heap}"))?;
    }
    Ok(())
}

fn class_path_is_the_same_tree() -> Check {
    let a = fs::canonicalize(CLASS_TOPOLOGY).map_err(|e| format!("{CLASS_TOPOLOGY}: {e}"))?;
    ensure_eq(a.to_string_lossy().into_owned(), topology().to_string(), "canonical class path")?;
    ensure_eq(entries(Path::new(CLASS_TOPOLOGY).join("nodes"))?, entries(Path::new(topology()).join("nodes"))?, "nodes")?;
    ensure_eq(
        read(Path::new(CLASS_TOPOLOGY).join("nodes/0/properties"))?,
        read(node_dir(0).join("properties"))?,
        "node 0 through the class path",
    )
}

fn snapshot_is_consistent() -> Check {
    // libhsakmt: generation before, everything, generation after.
    let before = read_u64(Path::new(topology()).join("generation_id"))?;
    for i in 0..num_nodes()? {
        read_u64(node_dir(i).join("gpu_id"))?;
        props(node_dir(i).join("properties"))?;
    }
    let after = read_u64(Path::new(topology()).join("generation_id"))?;
    ensure_eq(after, before, "generation_id changed during an idle snapshot")
}

fn main() {
    let mut h = Harness::new();
    h.run("topology: generation_id parses", generation_id_parses);
    h.run("topology: system_properties has its 3 keys", system_properties_has_3_keys);
    h.run("topology: topology/ holds generation_id, nodes, system_properties", topology_dir_layout);
    h.run("topology: nodes/ holds exactly 0..N-1", nodes_are_numbered_without_gaps);
    h.run("topology: each node holds upstream's files and directories", node_dir_layout);
    h.run("topology: files are 0444 and under a page", files_are_read_only_and_small);
    h.run("topology: CPU nodes come first, 32 keys in order", cpu_nodes_first_with_32_keys);
    h.run("topology: CPU memory banks are SYSTEM heaps", cpu_memory_is_system_heap);
    h.run("topology: *_count matches the entries present", counts_match_entries);
    h.run("topology: io links start at their node", io_links_start_at_their_node);
    if topology() == SYS_TOPOLOGY {
        h.run("topology: /sys/class/kfd/kfd/topology is the same tree", class_path_is_the_same_tree);
    }
    h.run("topology: an idle snapshot keeps its generation", snapshot_is_consistent);
    match gpu_nodes() {
        Ok(g) if !g.is_empty() => {
            h.run("topology: GPU nodes print 41 keys in order", gpu_nodes_have_41_keys);
            h.run("topology: gpu_id non-zero, stable, unique", gpu_ids_nonzero_stable_unique);
            h.run("topology: MEC and SDMA firmware versions are the part's", gpu_firmware_versions);
            h.run("topology: GPU has an HSACU|DATA cache, sibling_map format", gpu_has_hsacu_data_cache);
            h.run("topology: GPU links to a CPU node over PCIe", gpu_links_to_a_cpu);
        }
        Ok(_) => println!("# no GPU node (no virtual GPU loaded): GPU node checks skipped"),
        Err(e) => h.run("topology: list GPU nodes", || Err(e)),
    }
    std::process::exit(h.finish("topology"));
}
