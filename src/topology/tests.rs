// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of the topology: formats, derived values, gpu_id, links, and
//! the real sysfs tree (built under `/sys/kernel`, read back through the VFS).

use kernel::prelude::*;

#[kunit_tests(rkfd_topology)]
mod suite {
    use super::*;

    use kernel::{page::PAGE_SIZE, str::CString, sync::Arc};

    use crate::{
        kabi::{
            kgd::GpuInfo,
            sysfs::{self, host, Parent, Show, ShowBuffer},
        },
        topology::{
            gpu::{self, Gpu},
            nodes::{self, CpuEntry, HostLinks},
            props::Node,
            Topology,
        },
    };

    /// `node_show` keys, copied from upstream `kfd_topology.c` (7.3.4).
    #[rustfmt::skip]
    const CPU_KEYS: [&str; 32] = [
        "cpu_cores_count", "simd_count", "mem_banks_count", "caches_count",
        "io_links_count", "p2p_links_count", "cpu_core_id_base", "simd_id_base",
        "max_waves_per_simd", "lds_size_in_kb", "gds_size_in_kb", "num_gws",
        "wave_front_size", "array_count", "simd_arrays_per_engine", "cu_per_simd_array",
        "simd_per_cu", "max_slots_scratch_cu", "gfx_target_version", "vendor_id",
        "device_id", "location_id", "domain", "drm_render_minor", "hive_id",
        "num_sdma_engines", "num_sdma_xgmi_engines", "num_sdma_queues_per_engine",
        "num_cp_queues", "cwsr_size", "ctl_stack_size", "max_engine_clk_ccompute",
    ];
    /// The GPU-only keys, printed before `max_engine_clk_ccompute`.
    #[rustfmt::skip]
    const GPU_ONLY_KEYS: [&str; 9] = [
        "max_engine_clk_fcompute", "local_mem_size", "fw_version", "capability",
        "capability2", "debug_prop", "sdma_fw_version", "unique_id", "num_xcc",
    ];
    /// `mem_show`, `kfd_cache_show`, `iolink_show` keys.
    #[rustfmt::skip]
    const MEM_KEYS: [&str; 5] = ["heap_type", "size_in_bytes", "flags", "width", "mem_clk_max"];
    #[rustfmt::skip]
    const CACHE_KEYS: [&str; 9] = [
        "processor_id_low", "level", "size", "cache_line_size", "cache_lines_per_tag",
        "association", "latency", "type", "sibling_map",
    ];
    #[rustfmt::skip]
    const IOLINK_KEYS: [&str; 13] = [
        "type", "version_major", "version_minor", "node_from", "node_to", "weight",
        "min_latency", "max_latency", "min_bandwidth", "max_bandwidth",
        "recommended_transfer_size", "recommended_sdma_engine_id_mask", "flags",
    ];

    /// A small gfx1030-like GPU: 1 XCC, 1 SE, 2 SH, 4 CUs per SH.
    fn sample_gpu(location_id: u32) -> GpuInfo {
        let mut info = GpuInfo {
            gfx_target_version: 100300,
            vendor_id: 0x1002,
            device_id: 0x73bf,
            location_id,
            drm_render_minor: 128,
            unique_id: 0x1234_5678_9abc_def0,
            num_shader_engines: 1,
            sh_per_se: 2,
            cu_per_sh: 4,
            simd_per_cu: 2,
            max_waves_per_simd: 16,
            wave_front_size: 32,
            lds_size_in_kb: 64,
            max_slots_scratch_cu: 32,
            num_sdma_engines: 2,
            num_sdma_queues_per_engine: 8,
            num_cp_queues: 24,
            num_xcc: 1,
            max_engine_clk_fcompute: 2000,
            capability: 0x2000,
            vram_size: 1 << 30,
            vram_width: 256,
            mem_clk_max: 1000,
            vram_is_public: 1,
            num_caches: 2,
            ..Default::default()
        };
        for (i, b) in b"Virtual GFX1030".iter().enumerate() {
            info.name[i] = *b as _;
        }
        // L1: 16 KiB per 2 CUs; L2: 4 MiB for up to 8 CUs; both HSACU|DATA.
        for (c, (level, size_kib, line, cus)) in info
            .caches
            .iter_mut()
            .zip([(1, 16, 64, 2), (2, 4096, 128, 8)])
        {
            c.level = level;
            c.size_kib = size_kib;
            c.cache_line_size = line;
            c.type_ = 9;
            c.cus_per_cache = cus;
        }
        info
    }

    fn cpu(nid: u32) -> CpuEntry {
        CpuEntry {
            host: host::CpuNode {
                nid,
                cores: 4,
                apic_id_base: nid * 4,
                mem_bytes: 1 << 32,
            },
            mem_width: 64,
            mem_clk_max: 3200,
        }
    }

    /// Two NUMA nodes, HyperTransport, distance 10 + from + to.
    struct FakeLinks;

    impl HostLinks for FakeLinks {
        fn cpu_link_type(&self) -> Option<u32> {
            Some(1)
        }

        fn distance(&self, from: u32, to: u32) -> u32 {
            10 + from + to
        }
    }

    /// Formats with `f` into a page and returns the text.
    fn render(f: impl FnOnce(&mut ShowBuffer<'_>) -> Result) -> Result<KVec<u8>> {
        let mut page = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        let mut out = ShowBuffer::new(&mut page);
        f(&mut out)?;
        let mut text = KVec::new();
        text.extend_from_slice(out.as_bytes(), GFP_KERNEL)?;
        Ok(text)
    }

    fn text(bytes: &[u8]) -> Result<&str> {
        core::str::from_utf8(bytes).map_err(|_| EINVAL)
    }

    /// Checks `name value\n` lines with exactly `keys`, in order, and returns
    /// the value of `want`.
    fn check_keys(bytes: &[u8], keys: &[&str], want: &str) -> Result<u64> {
        let t = text(bytes)?;
        if !t.ends_with('\n') {
            return Err(EINVAL);
        }
        let mut found = None;
        let mut n = 0;
        for (line, key) in t.lines().zip(keys.iter()) {
            let (k, v) = line.split_once(' ').ok_or(EINVAL)?;
            if k != *key {
                pr_err!("key {}: got {}, want {}\n", n, k, key);
                return Err(EINVAL);
            }
            if k != "sibling_map" {
                let v: u64 = v.parse().map_err(|_| EINVAL)?;
                if k == want {
                    found = Some(v);
                }
            }
            n += 1;
        }
        if n != keys.len() || t.lines().count() != keys.len() {
            pr_err!("{} lines, want {}\n", t.lines().count(), keys.len());
            return Err(EINVAL);
        }
        Ok(found.unwrap_or(0))
    }

    fn gpu_keys() -> Result<KVec<&'static str>> {
        let mut keys = KVec::new();
        keys.extend_from_slice(&CPU_KEYS[..31], GFP_KERNEL)?;
        keys.extend_from_slice(&GPU_ONLY_KEYS, GFP_KERNEL)?;
        keys.push(CPU_KEYS[31], GFP_KERNEL)?;
        Ok(keys)
    }

    fn build(gpus: &[Gpu]) -> Result<KVec<Arc<Node>>> {
        nodes::build(&[cpu(0), cpu(1)], gpus, &FakeLinks)
    }

    #[test]
    fn crc16_matches_lib_crc16() {
        // CRC-16/ARC check value.
        assert_eq!(gpu::crc16(0, b"123456789"), 0xbb3d);
        assert_eq!(gpu::crc16(0, &[]), 0);
    }

    #[test]
    fn gpu_id_nonzero_unique_and_stable() -> Result {
        let (a, b) = (sample_gpu(0x300), sample_gpu(0x400));
        let ha = gpu::gpu_id_hash(&a);
        assert_eq!(ha, gpu::gpu_id_hash(&sample_gpu(0x300)));
        assert!(ha <= 0xffff);
        let ida = gpu::unique_gpu_id(ha, |_| false)?;
        let idb = gpu::unique_gpu_id(gpu::gpu_id_hash(&b), |id| id == ida)?;
        assert!(ida != 0 && idb != 0 && ida != idb);
        // Collisions count up, skipping 0, as upstream.
        assert_eq!(gpu::unique_gpu_id(0, |_| false)?, 1);
        assert_eq!(gpu::unique_gpu_id(7, |id| id == 7)?, 8);
        assert_eq!(gpu::unique_gpu_id(0xffff, |id| id == 0xffff)?, 1);
        assert_eq!(gpu::unique_gpu_id(5, |_| true).err(), Some(ENOSPC));
        Ok(())
    }

    #[test]
    fn gpu_node_prints_41_keys_in_order() -> Result {
        let g = Gpu::new(&sample_gpu(0x300), 0x1234, gpu::FIRST_PROCESSOR_ID)?;
        let nodes = build(core::slice::from_ref(&g))?;
        assert_eq!(nodes.len(), 3);
        let n = &nodes[2];
        let keys = gpu_keys()?;
        let p = render(|o| n.write_properties(o, 2400))?;
        assert_eq!(check_keys(&p, &keys, "simd_count")?, 16);
        assert_eq!(check_keys(&p, &keys, "array_count")?, 2);
        assert_eq!(check_keys(&p, &keys, "simd_id_base")?, 0x8000_1000);
        assert_eq!(check_keys(&p, &keys, "mem_banks_count")?, 1);
        // L1 per 2 CUs: 2 per array, 2 arrays; one L2.
        assert_eq!(check_keys(&p, &keys, "caches_count")?, 5);
        assert_eq!(check_keys(&p, &keys, "io_links_count")?, 1);
        assert_eq!(check_keys(&p, &keys, "local_mem_size")?, 0);
        assert_eq!(check_keys(&p, &keys, "capability")?, 0x2000);
        assert_eq!(check_keys(&p, &keys, "max_engine_clk_ccompute")?, 2400);
        // In no XGMI hive.
        assert_eq!(check_keys(&p, &keys, "hive_id")?, 0);
        assert_eq!(render(|o| n.show(0, o))?.as_slice(), b"4660\n");
        assert_eq!(render(|o| n.show(1, o))?.as_slice(), b"virtual gfx1030\n");
        let m = render(|o| n.mem_banks[0].write_properties(o))?;
        assert_eq!(check_keys(&m, &MEM_KEYS, "heap_type")?, 1);
        assert_eq!(check_keys(&m, &MEM_KEYS, "size_in_bytes")?, 1 << 30);
        Ok(())
    }

    #[test]
    fn hive_id_reaches_node_properties() -> Result {
        let mut info = sample_gpu(0x300);
        info.hive_id = 0x1a2b_3c4d_5e6f_7081;
        let g = Gpu::new(&info, 0x1234, gpu::FIRST_PROCESSOR_ID)?;
        let nodes = build(core::slice::from_ref(&g))?;
        let p = render(|o| nodes[2].write_properties(o, 2400))?;
        assert_eq!(check_keys(&p, &gpu_keys()?, "hive_id")?, 0x1a2b_3c4d_5e6f_7081);
        Ok(())
    }

    #[test]
    fn cpu_node_prints_32_keys_in_order() -> Result {
        let nodes = build(&[])?;
        let p = render(|o| nodes[1].write_properties(o, 0))?;
        assert_eq!(check_keys(&p, &CPU_KEYS, "cpu_cores_count")?, 4);
        assert_eq!(check_keys(&p, &CPU_KEYS, "cpu_core_id_base")?, 4);
        assert_eq!(check_keys(&p, &CPU_KEYS, "simd_count")?, 0);
        assert_eq!(render(|o| nodes[1].show(0, o))?.as_slice(), b"0\n");
        assert_eq!(render(|o| nodes[1].show(1, o))?.as_slice(), b"\n");
        let m = render(|o| nodes[0].mem_banks[0].write_properties(o))?;
        assert_eq!(check_keys(&m, &MEM_KEYS, "heap_type")?, 0);
        assert_eq!(check_keys(&m, &MEM_KEYS, "mem_clk_max")?, 3200);
        Ok(())
    }

    #[test]
    fn caches_follow_upstream_layout_and_sibling_map_format() -> Result {
        let mut info = sample_gpu(0x300);
        // L1 shared by 3 of 4 CUs: blocks of 3 and 1 CU per array.
        info.caches[0].cus_per_cache = 3;
        let g = Gpu::new(&info, 1, 1000)?;
        let c = g.caches();
        assert_eq!(c.len(), 5);
        let ids: [u32; 4] = [1000, 1003, 1004, 1007];
        for (cache, id) in c.iter().zip(ids) {
            assert_eq!(cache.processor_id_low, id);
            assert_eq!(cache.sibling_map_size, 4);
        }
        let l1 = render(|o| c[0].write_properties(o))?;
        check_keys(&l1, &CACHE_KEYS, "level")?;
        let mut want = KVec::new();
        want.extend_from_slice(b"sibling_map 1,1,1", GFP_KERNEL)?;
        for _ in 3..32 {
            want.extend_from_slice(b",0", GFP_KERNEL)?;
        }
        want.push(b'\n', GFP_KERNEL)?;
        assert!(l1.ends_with(&want));
        let second = render(|o| c[1].write_properties(o))?;
        assert!(text(&second)?.contains("\nsibling_map 1,0,0,0,0,0,0,0,0,"));
        // L2: one entry, one 32-bit word (4 bits set) per shader array.
        let l2 = render(|o| c[4].write_properties(o))?;
        assert_eq!(check_keys(&l2, &CACHE_KEYS, "processor_id_low")?, 1000);
        assert_eq!(check_keys(&l2, &CACHE_KEYS, "level")?, 2);
        let map = text(&l2)?.lines().last().ok_or(EINVAL)?;
        let bits = map.strip_prefix("sibling_map ").ok_or(EINVAL)?;
        assert_eq!(bits.split(',').count(), 64);
        assert_eq!(bits.split(',').filter(|b| *b == "1").count(), 8);
        assert!(bits.starts_with("1,1,1,1,0,"));
        Ok(())
    }

    #[test]
    fn io_links_connect_cpus_and_gpus() -> Result {
        let mut small_bar = sample_gpu(0x400);
        small_bar.vram_is_public = 0;
        let gpus = [
            Gpu::new(&sample_gpu(0x300), 1, 0)?,
            Gpu::new(&small_bar, 2, 0)?,
        ];
        let nodes = build(&gpus)?;
        assert_eq!(nodes.len(), 4);
        // CPU 0: to CPU 1, then to the large-BAR GPU only.
        assert_eq!(nodes[0].io_links.len(), 2);
        let l = render(|o| nodes[0].io_links[0].write_properties(o))?;
        assert_eq!(check_keys(&l, &IOLINK_KEYS, "type")?, 1);
        assert_eq!(check_keys(&l, &IOLINK_KEYS, "node_to")?, 1);
        assert_eq!(check_keys(&l, &IOLINK_KEYS, "weight")?, 11);
        let l = render(|o| nodes[0].io_links[1].write_properties(o))?;
        assert_eq!(check_keys(&l, &IOLINK_KEYS, "type")?, 2);
        assert_eq!(check_keys(&l, &IOLINK_KEYS, "node_from")?, 0);
        assert_eq!(check_keys(&l, &IOLINK_KEYS, "node_to")?, 2);
        assert_eq!(check_keys(&l, &IOLINK_KEYS, "flags")?, 3);
        assert_eq!(nodes[1].io_links.len(), 1);
        // Each GPU: one PCIe link to CPU node 0.
        for (i, n) in nodes.iter().enumerate().skip(2) {
            assert_eq!(n.io_links.len(), 1);
            let l = render(|o| n.io_links[0].write_properties(o))?;
            assert_eq!(check_keys(&l, &IOLINK_KEYS, "node_from")?, i as u64);
            assert_eq!(check_keys(&l, &IOLINK_KEYS, "node_to")?, 0);
            assert_eq!(check_keys(&l, &IOLINK_KEYS, "weight")?, 20);
            assert_eq!(check_keys(&l, &IOLINK_KEYS, "min_bandwidth")?, 312);
            assert_eq!(check_keys(&l, &IOLINK_KEYS, "max_bandwidth")?, 64000);
            assert_eq!(check_keys(&l, &IOLINK_KEYS, "flags")?, 1);
        }
        let m = render(|o| nodes[3].mem_banks[0].write_properties(o))?;
        assert_eq!(check_keys(&m, &MEM_KEYS, "heap_type")?, 2);
        Ok(())
    }

    #[test]
    fn inconsistent_gpu_info_is_einval() {
        let bad: [fn(&mut GpuInfo); 6] = [
            |i| i.num_xcc = 0,
            |i| i.simd_per_cu = 0,
            |i| i.cu_per_sh = 33,
            |i| i.caches[0].cus_per_cache = 0,
            |i| i.num_caches = 9,
            |i| i.num_shader_engines = 17, // 34 shader arrays: sibling map too small
        ];
        for f in bad {
            let mut info = sample_gpu(0x300);
            f(&mut info);
            assert_eq!(Gpu::new(&info, 1, 0).err(), Some(EINVAL));
        }
    }

    #[test]
    fn show_buffer_refuses_to_truncate() -> Result {
        let mut small = [0u8; 8];
        let mut out = ShowBuffer::new(&mut small);
        out.emit(fmt!("1234567"))?;
        assert_eq!(out.emit(fmt!("8")).err(), Some(EFBIG));
        assert_eq!(out.as_bytes(), b"1234567");
        Ok(())
    }

    /// Reads `/sys/kernel/<path>` (through a private sysfs mount) into a fresh page.
    fn read(path: core::fmt::Arguments<'_>) -> Result<KVec<u8>> {
        let path = CString::try_from_fmt(fmt!("kernel/{}", path))?;
        let mut page = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
        let n = sysfs::read_for_tests(&path, &mut page)
            .inspect_err(|e| pr_debug!("read {:?}: {:?}\n", &*path, e))?;
        page.truncate(n);
        Ok(page)
    }

    fn read_u64(path: core::fmt::Arguments<'_>) -> Result<u64> {
        text(&read(path)?)?.trim_end().parse().map_err(|_| EINVAL)
    }

    #[test]
    fn sysfs_tree_is_renumbered_after_removal() -> Result {
        const ROOT: &str = "rkfd_kunit_topology";
        let t = Topology::new_in(Parent::KernelForTests, c"rkfd_kunit_topology")?;
        let ncpu = t.num_nodes();
        assert!(ncpu >= 1);
        assert_eq!(read_u64(fmt!("{}/generation_id", ROOT))?, 1);
        let sys = read(fmt!("{}/system_properties", ROOT))?;
        assert_eq!(text(&sys)?.lines().count(), 3);
        let p = read(fmt!("{}/nodes/0/properties", ROOT))?;
        check_keys(&p, &CPU_KEYS, "cpu_cores_count")?;

        let a = t.add_gpu(&sample_gpu(0x300))?;
        let b = t.add_gpu(&sample_gpu(0x400))?;
        assert!(a != 0 && b != 0 && a != b);
        assert_eq!(t.generation(), 3);
        assert_eq!(
            read_u64(fmt!("{}/nodes/{}/gpu_id", ROOT, ncpu))?,
            u64::from(a)
        );
        assert_eq!(
            read_u64(fmt!("{}/nodes/{}/gpu_id", ROOT, ncpu + 1))?,
            u64::from(b)
        );
        let p = read(fmt!("{}/nodes/{}/properties", ROOT, ncpu + 1))?;
        // Processor ids continue after the first GPU's 8 CUs.
        assert_eq!(check_keys(&p, &gpu_keys()?, "simd_id_base")?, 0x8000_1008);
        let c = read(fmt!("{}/nodes/{}/caches/4/properties", ROOT, ncpu + 1))?;
        assert_eq!(check_keys(&c, &CACHE_KEYS, "type")?, 9);
        let l = read(fmt!("{}/nodes/0/io_links/{}/properties", ROOT, ncpu - 1))?;
        assert_eq!(check_keys(&l, &IOLINK_KEYS, "node_to")?, u64::from(ncpu));

        t.remove_gpu(a)?;
        assert_eq!(t.generation(), 4);
        assert_eq!(t.remove_gpu(a).err(), Some(ENODEV));
        assert_eq!(
            read_u64(fmt!("{}/nodes/{}/gpu_id", ROOT, ncpu))?,
            u64::from(b)
        );
        let gone = read(fmt!("{}/nodes/{}/gpu_id", ROOT, ncpu + 1));
        assert_eq!(gone.err(), Some(ENOENT));
        let l = read(fmt!("{}/nodes/{}/io_links/0/properties", ROOT, ncpu))?;
        assert_eq!(check_keys(&l, &IOLINK_KEYS, "node_from")?, u64::from(ncpu));
        assert!(t.gpu(a).is_none());
        let g = t.gpu(b).ok_or(ENODEV)?;
        assert_eq!((g.index, g.node.gpu_id), (ncpu, b));
        assert_eq!(t.gpus()?.len(), 1);

        // rkfd's own capability bits go on top of the device's.
        t.update_capability(b, 0x0800_0000, 0x2000)?;
        let p = read(fmt!("{}/nodes/{}/properties", ROOT, ncpu))?;
        assert_eq!(check_keys(&p, &gpu_keys()?, "capability")?, 0x0800_0000);

        drop(t);
        assert_eq!(read(fmt!("{}/generation_id", ROOT)).err(), Some(ENOENT));
        Ok(())
    }

    #[test]
    fn sysfs_parent_outlives_children() -> Result {
        let sys = Arc::new(
            super::super::SysProps {
                generation: kernel::sync::atomic::Atomic::new(7),
                platform: host::Platform::default(),
            },
            GFP_KERNEL,
        )?;
        let files = [c"generation_id", c"system_properties"];
        let parent = sysfs::Dir::new(
            Parent::KernelForTests,
            c"rkfd_kunit_dir",
            &files,
            sys.clone(),
        )?;
        let child = sysfs::Dir::new(Parent::Dir(&parent), c"child", &files, sys)?;
        drop(parent);
        // The child keeps its parent in sysfs.
        assert_eq!(read_u64(fmt!("rkfd_kunit_dir/generation_id"))?, 7);
        assert_eq!(read_u64(fmt!("rkfd_kunit_dir/child/generation_id"))?, 7);
        drop(child);
        assert_eq!(
            read(fmt!("rkfd_kunit_dir/generation_id")).err(),
            Some(ENOENT)
        );
        Ok(())
    }
}
