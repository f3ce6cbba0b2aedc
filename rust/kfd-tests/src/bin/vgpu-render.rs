// SPDX-License-Identifier: GPL-2.0
//! Guest tests of the virtual GPU (module "amdgpu", vgpu/) from user space:
//! what ROCm's rocminfo/rocm-smi/libhsakmt look at (module, DRM card and
//! render node, BDF-shaped device path, amdgpu sysfs files, hwmon), and,
//! through rkfd's /dev/kfd, the render node's part in ACQUIRE_VM and in
//! mapping memory objects.  Run inside the test VM with rkfd and amdgpu
//! loaded; an optional argument filters tests by name.

use amdgpu_hw::generated::amdgpu_drm as drm;
use kfd_tests::harness::{ensure, ensure_eq, expect_errno, expect_ok, read_trimmed as read, Check, Harness};
use kfd_tests::ops::{alloc, free, in_child, map};
use kfd_tests::kfd::{errno_name, ioctl_fd, Kfd};
use kfd_uapi as uapi;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

const PAGE: usize = 4096;
/// How long a scenario's child process may run before it is killed and
/// reported as hung (generous: a loaded TCG guest is slow).
const CHILD_SECS: u32 = 300;

/// One DRM card of the virtual GPU.
#[derive(Clone, Debug)]
struct Card {
    /// "card1".
    name: String,
    /// /sys/class/drm/cardN/device, resolved.
    device: PathBuf,
    /// The render node's minor.
    render_minor: u32,
}

/// The cards whose device reports AMD's vendor ID.
fn amd_cards() -> Result<Vec<Card>, String> {
    let mut cards = Vec::new();
    for entry in fs::read_dir("/sys/class/drm").map_err(|e| format!("/sys/class/drm: {e}"))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(num) = name.strip_prefix("card") else {
            continue;
        };
        if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let dev = entry.path().join("device");
        if read(dev.join("vendor")).ok().as_deref() != Some("0x1002") {
            continue;
        }
        let device = fs::canonicalize(&dev).map_err(|e| format!("{}: {e}", dev.display()))?;
        let mut render_minor = None;
        for d in fs::read_dir(device.join("drm"))
            .map_err(|e| format!("{}/drm: {e}", device.display()))?
        {
            let n = d
                .map_err(|e| e.to_string())?
                .file_name()
                .to_string_lossy()
                .to_string();
            if let Some(m) = n.strip_prefix("renderD") {
                render_minor = m.parse().ok();
            }
        }
        let render_minor = render_minor.ok_or(format!("{name}: no render node"))?;
        cards.push(Card {
            name,
            device,
            render_minor,
        });
    }
    cards.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(cards)
}

/// Whether `s` is a PCI function name, `dddd:bb:dd.f` in lower-case hex.
fn is_bdf(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && (b'0'..=b'7').contains(&b[11])
        && b.iter()
            .enumerate()
            .all(|(i, &c)| matches!(i, 4 | 7 | 10 | 11) || hex(c))
}

use kfd_tests::harness::Fd;

fn render_path(card: &Card) -> String {
    format!("/dev/dri/renderD{}", card.render_minor)
}

/// A mapping, unmapped on drop.
struct Map {
    addr: *mut u8,
    len: usize,
}

impl Map {
    fn new(fd: &Fd, offset: u64, len: usize, prot: i32, flags: i32) -> Result<Map, i32> {
        // SAFETY: A fresh mapping chosen by the kernel; nothing is overwritten.
        let a = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                flags,
                fd.0,
                offset as libc::off_t,
            )
        };
        if a == libc::MAP_FAILED {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
        } else {
            Ok(Map {
                addr: a.cast(),
                len,
            })
        }
    }

    fn shared_rw(fd: &Fd, offset: u64, len: usize) -> Result<Map, String> {
        Map::new(
            fd,
            offset,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
        )
        .map_err(|e| format!("mmap {offset:#x} shared rw: {}", errno_name(e)))
    }

    fn write(&self, off: usize, data: &[u8]) {
        assert!(off + data.len() <= self.len);
        // SAFETY: In bounds of a read-write mapping we own.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.addr.add(off), data.len()) };
    }

    fn read(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off + len <= self.len);
        let mut v = vec![0u8; len];
        // SAFETY: In bounds of a readable mapping we own.
        unsafe { std::ptr::copy_nonoverlapping(self.addr.add(off), v.as_mut_ptr(), len) };
        v
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: Our own mapping.
        unsafe { libc::munmap(self.addr.cast(), self.len) };
    }
}

// ---------------------------------------------------------------------------
// Module and devices.

fn module_is_listed() -> Check {
    let m = read("/proc/modules")?;
    ensure(
        m.lines().any(|l| l.starts_with("amdgpu ")),
        "amdgpu not in /proc/modules",
    )
}

fn module_is_live() -> Check {
    ensure_eq(
        read("/sys/module/amdgpu/initstate")?.as_str(),
        "live",
        "initstate",
    )?;
    ensure(
        !read("/sys/module/amdgpu/version")?.is_empty(),
        "empty version",
    )
}

fn cards_exist(cards: &[Card]) -> Check {
    ensure(!cards.is_empty(), "no DRM card with vendor 0x1002")?;
    // Each card's render node is its own.
    let mut minors: Vec<u32> = cards.iter().map(|c| c.render_minor).collect();
    minors.sort_unstable();
    minors.dedup();
    ensure_eq(minors.len(), cards.len(), "distinct render nodes")
}

fn card_path_has_bdf(card: &Card) -> Check {
    let link =
        fs::canonicalize(format!("/sys/class/drm/{}", card.name)).map_err(|e| e.to_string())?;
    let bdf = link
        .components()
        .filter_map(|c| c.as_os_str().to_str())
        .find(|c| is_bdf(c));
    ensure(
        bdf.is_some(),
        format!("no BDF component in {}", link.display()),
    )?;
    ensure(
        card.device
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_bdf),
        format!(
            "device {} is not named like a PCI function",
            card.device.display()
        ),
    )
}

fn render_node_opens(card: &Card) -> Check {
    let path = render_path(card);
    let md = fs::metadata(&path).map_err(|e| format!("{path}: {e}"))?;
    ensure(
        md.file_type().is_char_device(),
        format!("{path} is not a character device"),
    )?;
    let minor = ((md.rdev() & 0xff) | ((md.rdev() >> 12) & !0xff)) as u32;
    ensure_eq(minor, card.render_minor, "render node minor")?;
    Fd::open(&path).map(|_| ())
}

/// DRM_IOCTL_VERSION's argument (`struct drm_version`).
#[repr(C)]
#[derive(Default)]
struct DrmVersion {
    major: i32,
    minor: i32,
    patchlevel: i32,
    name_len: usize,
    name: usize,
    date_len: usize,
    date: usize,
    desc_len: usize,
    desc: usize,
}

/// _IOWR('d', 0x00, struct drm_version).
const DRM_IOCTL_VERSION: u32 =
    (3 << 30) | ((std::mem::size_of::<DrmVersion>() as u32) << 16) | (b'd' as u32) << 8;

fn render_node_is_drm(card: &Card) -> Check {
    let fd = Fd::open(&render_path(card))?;
    let mut name = [0u8; 32];
    let mut v = DrmVersion {
        name_len: name.len(),
        name: name.as_mut_ptr() as usize,
        ..Default::default()
    };
    ioctl_fd(fd.0, DRM_IOCTL_VERSION, &mut v as *mut DrmVersion as usize)
        .map_err(|e| format!("DRM_IOCTL_VERSION: {}", errno_name(e)))?;
    let n = v.name_len.min(name.len());
    ensure_eq(&name[..n], b"amdgpu_vgpu".as_slice(), "DRM driver name")?;
    // Linux 7.3 amdgpu's KMS_DRIVER_MAJOR.MINOR.PATCHLEVEL: libdrm_amdgpu
    // refuses any major but 3.
    ensure_eq(
        (v.major, v.minor, v.patchlevel),
        (3, 64, 0),
        "DRM driver version",
    )?;
    // A driver ioctl number with no handler.
    let r = ioctl_fd(fd.0, (3 << 30) | (8 << 16) | (b'd' as u32) << 8 | 0x7f, 0);
    ensure(r.is_err(), "an unknown driver ioctl succeeded")
}

// ---------------------------------------------------------------------------
// amdgpu's DRM UAPI on the render node (INFO queries, contexts).

/// `DRM_IOW(DRM_COMMAND_BASE + nr, T)`.
const fn drm_iow<T>(nr: u32) -> u32 {
    (1 << 30) | ((std::mem::size_of::<T>() as u32) << 16) | (b'd' as u32) << 8 | (0x40 + nr)
}

/// `DRM_IOWR(DRM_COMMAND_BASE + nr, T)`.
const fn drm_iowr<T>(nr: u32) -> u32 {
    (3 << 30) | ((std::mem::size_of::<T>() as u32) << 16) | (b'd' as u32) << 8 | (0x40 + nr)
}

const IOCTL_AMDGPU_INFO: u32 = drm_iow::<drm::drm_amdgpu_info>(drm::DRM_AMDGPU_INFO);
const IOCTL_AMDGPU_CTX: u32 = drm_iowr::<drm::drm_amdgpu_ctx>(drm::DRM_AMDGPU_CTX);

/// A plain-old-data UAPI struct (every bit pattern valid).
trait Pod: Default + Copy {}
impl Pod for u32 {}
impl Pod for u64 {}
impl Pod for drm::drm_amdgpu_info_device {}
impl Pod for drm::drm_amdgpu_info_hw_ip {}
impl Pod for drm::drm_amdgpu_info_firmware {}
impl Pod for drm::drm_amdgpu_info_vram_gtt {}
impl Pod for drm::drm_amdgpu_memory_info {}

/// `DRM_IOCTL_AMDGPU_INFO` with `req` (its return pointer and size set
/// here to `T`'s).
fn info<T: Pod>(fd: &Fd, mut req: drm::drm_amdgpu_info) -> Result<T, i32> {
    let mut out = T::default();
    req.return_pointer = &mut out as *mut T as u64;
    req.return_size = std::mem::size_of::<T>() as u32;
    ioctl_fd(fd.0, IOCTL_AMDGPU_INFO, &mut req as *mut _ as usize)?;
    Ok(out)
}

fn query(q: u32) -> drm::drm_amdgpu_info {
    drm::drm_amdgpu_info {
        query: q,
        ..Default::default()
    }
}

fn hw_ip_query(q: u32, ty: u32, inst: u32) -> drm::drm_amdgpu_info {
    let mut r = query(q);
    r.__bindgen_anon_1.query_hw_ip = drm::drm_amdgpu_info__bindgen_ty_1__bindgen_ty_2 {
        type_: ty,
        ip_instance: inst,
    };
    r
}

fn fw_query(fw_type: u32, ip_instance: u32, index: u32) -> drm::drm_amdgpu_info {
    let mut r = query(drm::AMDGPU_INFO_FW_VERSION);
    r.__bindgen_anon_1.query_fw = drm::drm_amdgpu_query_fw {
        fw_type,
        ip_instance,
        index,
        _pad: 0,
    };
    r
}

fn mmr_query(dword_offset: u32, count: u32, instance: u32) -> drm::drm_amdgpu_info {
    let mut r = query(drm::AMDGPU_INFO_READ_MMR_REG);
    r.__bindgen_anon_1.read_mmr_reg = drm::drm_amdgpu_info__bindgen_ty_1__bindgen_ty_3 {
        dword_offset,
        count,
        instance,
        flags: 0,
    };
    r
}

/// The KFD topology node of `card` (by `drm_render_minor`): its
/// `properties` and its first memory bank's.
struct Topo {
    props: std::collections::HashMap<String, u64>,
    bank: std::collections::HashMap<String, u64>,
}

fn parse_props(path: &Path) -> Result<std::collections::HashMap<String, u64>, String> {
    Ok(read(path)?
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.parse().ok()?))
        })
        .collect())
}

impl Topo {
    fn of(card: &Card) -> Result<Topo, String> {
        let nodes = Path::new("/sys/class/kfd/kfd/topology/nodes");
        for e in fs::read_dir(nodes).map_err(|e| format!("{}: {e}", nodes.display()))? {
            let dir = e.map_err(|e| e.to_string())?.path();
            let props = parse_props(&dir.join("properties"))?;
            if props.get("drm_render_minor") == Some(&u64::from(card.render_minor)) {
                let bank = parse_props(&dir.join("mem_banks/0/properties"))?;
                return Ok(Topo { props, bank });
            }
        }
        Err(format!("no topology node with drm_render_minor {}", card.render_minor))
    }

    fn get(&self, k: &str) -> Result<u64, String> {
        self.props.get(k).copied().ok_or(format!("topology: no {k}"))
    }
}

/// The amdgpu family and external revision range (Mesa's
/// `ac_gpu_info.c` / `amdgpu_asic_addr.h` ranges) of a gfx target.
fn family_of(target: u64) -> Option<(u32, std::ops::Range<u32>)> {
    match target {
        90010 => Some((drm::AMDGPU_FAMILY_AI, 0x3c..0x100)),
        100300 => Some((drm::AMDGPU_FAMILY_NV, 0x28..0x32)),
        110000 => Some((drm::AMDGPU_FAMILY_GC_11_0_0, 0x01..0x10)),
        110003 => Some((drm::AMDGPU_FAMILY_GC_11_0_1, 0x01..0x10)),
        _ => None,
    }
}

fn amdgpu_info_dev_info(card: &Card) -> Check {
    let fd = Fd::open(&render_path(card))?;
    let t = Topo::of(card)?;
    let accel: u32 = info(&fd, query(drm::AMDGPU_INFO_ACCEL_WORKING))
        .map_err(|e| format!("ACCEL_WORKING: {}", errno_name(e)))?;
    ensure_eq(accel, 1, "ACCEL_WORKING")?;
    let d: drm::drm_amdgpu_info_device = info(&fd, query(drm::AMDGPU_INFO_DEV_INFO))
        .map_err(|e| format!("DEV_INFO: {}", errno_name(e)))?;
    ensure_eq(u64::from(d.device_id), t.get("device_id")?, "device_id vs topology")?;
    let target = t.get("gfx_target_version")?;
    let (family, ext) = family_of(target).ok_or(format!("unknown target {target}"))?;
    ensure_eq(d.family, family, "family")?;
    ensure(ext.contains(&d.external_rev), format!("external_rev {:#x} not in {ext:?}", d.external_rev))?;
    let sh = t.get("simd_arrays_per_engine")?;
    ensure_eq(u64::from(d.num_shader_arrays_per_engine), sh, "shader arrays per engine")?;
    ensure_eq(u64::from(d.num_shader_engines), t.get("array_count")? / sh, "shader engines")?;
    ensure_eq(u64::from(d.num_cu_per_sh), t.get("cu_per_simd_array")?, "CUs per SH")?;
    let cus = t.get("simd_count")? / t.get("simd_per_cu")?;
    ensure_eq(u64::from(d.cu_active_number), cus, "cu_active_number vs topology")?;
    let bits: u32 = d.cu_bitmap.iter().flatten().map(|b| b.count_ones()).sum();
    ensure_eq(u64::from(bits), cus, "CUs in cu_bitmap")?;
    ensure(d.cu_ao_mask != 0, "cu_ao_mask 0")?;
    ensure_eq(u64::from(d.wave_front_size), t.get("wave_front_size")?, "wave_front_size")?;
    ensure_eq(d.max_engine_clock, t.get("max_engine_clk_fcompute")? * 1000, "max_engine_clock kHz")?;
    ensure_eq(
        Some(d.max_memory_clock),
        t.bank.get("mem_clk_max").map(|m| m * 1000),
        "max_memory_clock kHz vs memory bank mem_clk_max",
    )?;
    ensure(d.min_engine_clock <= d.max_engine_clock, "min engine clock above max")?;
    ensure_eq(
        u64::from(d.vram_bit_width),
        t.bank.get("width").copied().unwrap_or(0),
        "vram_bit_width vs memory bank width",
    )?;
    // The 100 MHz RLC clock (AMDGPU_INFO_TIMESTAMP's), in kHz.
    ensure_eq(d.gpu_counter_freq, 100_000, "gpu_counter_freq")?;
    // What libdrm builds its VA managers from: a 48-bit VM with the hole.
    ensure_eq(
        (d.virtual_address_offset, d.virtual_address_max, d.high_va_offset),
        (0x1_0000, 0x8000_0000_0000, 0xffff_8000_0000_0000),
        "VA layout",
    )?;
    ensure(
        d.high_va_max > d.high_va_offset && d.virtual_address_alignment == 4096 && d.gart_page_size == 4096,
        "VA sizes",
    )?;
    let apu = d.ids_flags & u64::from(drm::AMDGPU_IDS_FLAGS_FUSION) != 0;
    ensure_eq(apu, target == 110003, "AMDGPU_IDS_FLAGS_FUSION (APU)")?;
    ensure_eq(
        d.device_id,
        u32::from_str_radix(read(card.device.join("device"))?.trim_start_matches("0x"), 16)
            .map_err(|e| e.to_string())?,
        "device_id vs sysfs",
    )?;
    // A short return buffer gets only its bytes.
    let mut two = [0u32, 0xdead_beef];
    let mut req = query(drm::AMDGPU_INFO_DEV_INFO);
    req.return_pointer = two.as_mut_ptr() as u64;
    req.return_size = 4;
    expect_ok(ioctl_fd(fd.0, IOCTL_AMDGPU_INFO, &mut req as *mut _ as usize), "DEV_INFO of 4 bytes")?;
    ensure_eq(two, [d.device_id, 0xdead_beef], "4-byte DEV_INFO")?;
    // GB_ADDR_CONFIG through the register read libdrm makes, and what
    // libdrm reads before it (the device_initialize sequence).
    let gb: u32 = info(&fd, mmr_query(0x263e, 1, 0xffff_ffff))
        .map_err(|e| format!("READ_MMR_REG GB_ADDR_CONFIG: {}", errno_name(e)))?;
    ensure(gb != 0, "GB_ADDR_CONFIG 0")?;
    expect_errno(info::<u32>(&fd, mmr_query(0x2640, 1, 0xffff_ffff)), libc::EFAULT, "unallowed register")?;
    expect_errno(info::<u64>(&fd, mmr_query(0x263e, 2, 0xffff_ffff)), libc::EFAULT, "register run past GB_ADDR_CONFIG")?;
    expect_errno(info::<u32>(&fd, mmr_query(0x263e, 129, 0xffff_ffff)), libc::EINVAL, "129 registers")?;
    expect_errno(info::<u32>(&fd, mmr_query(0x263e, 1, 7)), libc::EINVAL, "SE index 7")
}

fn amdgpu_info_memory(card: &Card) -> Check {
    let fd = Fd::open(&render_path(card))?;
    let t = Topo::of(card)?;
    let total: u64 = read(card.device.join("mem_info_vram_total"))?.parse().map_err(|e| format!("{e}"))?;
    ensure_eq(
        t.bank.get("size_in_bytes").copied(),
        Some(total),
        "topology VRAM bank vs mem_info_vram_total",
    )?;
    let vg: drm::drm_amdgpu_info_vram_gtt = info(&fd, query(drm::AMDGPU_INFO_VRAM_GTT))
        .map_err(|e| format!("VRAM_GTT: {}", errno_name(e)))?;
    ensure_eq(vg.vram_size, total, "VRAM_GTT vram_size")?;
    ensure_eq(vg.vram_cpu_accessible_size, total, "VRAM_GTT visible")?;
    ensure(vg.gtt_size > 0, "GTT size 0")?;
    let m: drm::drm_amdgpu_memory_info = info(&fd, query(drm::AMDGPU_INFO_MEMORY))
        .map_err(|e| format!("MEMORY: {}", errno_name(e)))?;
    ensure_eq(m.vram.total_heap_size, total, "MEMORY vram total")?;
    ensure_eq(m.gtt.total_heap_size, vg.gtt_size, "MEMORY gtt total")?;
    ensure(m.vram.heap_usage <= total && m.vram.max_allocation == total * 3 / 4, "MEMORY vram usage/max")?;
    let used: u64 = read(card.device.join("mem_info_vram_used"))?.parse().map_err(|e| format!("{e}"))?;
    let usage: u64 = info(&fd, query(drm::AMDGPU_INFO_VRAM_USAGE))
        .map_err(|e| format!("VRAM_USAGE: {}", errno_name(e)))?;
    ensure_eq(usage, used, "VRAM_USAGE vs mem_info_vram_used")?;
    let gtt: u64 = info(&fd, query(drm::AMDGPU_INFO_GTT_USAGE))
        .map_err(|e| format!("GTT_USAGE: {}", errno_name(e)))?;
    ensure(gtt <= vg.gtt_size, "GTT usage above size")?;
    let t0: u64 = info(&fd, query(drm::AMDGPU_INFO_TIMESTAMP)).map_err(|e| format!("TIMESTAMP: {}", errno_name(e)))?;
    std::thread::sleep(std::time::Duration::from_millis(2));
    let t1: u64 = info(&fd, query(drm::AMDGPU_INFO_TIMESTAMP)).map_err(|e| format!("TIMESTAMP: {}", errno_name(e)))?;
    ensure(t1 >= t0 + 100_000, format!("TIMESTAMP {t0} -> {t1} over 2 ms at 100 MHz"))
}

fn amdgpu_info_hw_ip_and_firmware(card: &Card) -> Check {
    let fd = Fd::open(&render_path(card))?;
    let t = Topo::of(card)?;
    let target = t.get("gfx_target_version")?;
    let count = |ty| info::<u32>(&fd, hw_ip_query(drm::AMDGPU_INFO_HW_IP_COUNT, ty, 0));
    ensure_eq(count(drm::AMDGPU_HW_IP_GFX), Ok(1), "HW_IP_COUNT GFX")?;
    ensure_eq(count(drm::AMDGPU_HW_IP_COMPUTE), Ok(1), "HW_IP_COUNT COMPUTE")?;
    let sdma = t.get("num_sdma_engines")? + t.get("num_sdma_xgmi_engines")?;
    ensure_eq(count(drm::AMDGPU_HW_IP_DMA).map(u64::from), Ok(sdma), "HW_IP_COUNT DMA vs topology SDMA engines")?;
    expect_errno(count(drm::AMDGPU_HW_IP_VCN_DEC), libc::EINVAL, "HW_IP_COUNT of an absent block")?;
    let ip = |ty, inst| info::<drm::drm_amdgpu_info_hw_ip>(&fd, hw_ip_query(drm::AMDGPU_INFO_HW_IP_INFO, ty, inst));
    let c = ip(drm::AMDGPU_HW_IP_COMPUTE, 0).map_err(|e| format!("HW_IP_INFO COMPUTE: {}", errno_name(e)))?;
    ensure_eq(u64::from(c.hw_ip_version_major), target / 10000, "COMPUTE IP major vs gfx target")?;
    ensure_eq(u64::from(c.ip_discovery_version >> 16), target / 10000, "GC IP discovery major")?;
    ensure_eq((c.ib_start_alignment, c.ib_size_alignment), (32, 32), "COMPUTE IB alignment")?;
    let dma = ip(drm::AMDGPU_HW_IP_DMA, 0).map_err(|e| format!("HW_IP_INFO DMA: {}", errno_name(e)))?;
    ensure_eq((dma.ib_start_alignment, dma.ib_size_alignment), (256, 4), "DMA IB alignment")?;
    ensure(dma.hw_ip_version_major >= 4, "SDMA major")?;
    let vcn = ip(drm::AMDGPU_HW_IP_VCN_DEC, 0).map_err(|e| format!("HW_IP_INFO VCN: {}", errno_name(e)))?;
    ensure_eq(vcn.hw_ip_version_major, 0, "absent block's HW_IP_INFO is zero")?;
    expect_errno(ip(0x77, 0), libc::EINVAL, "HW_IP_INFO of an unknown type")?;
    expect_errno(ip(drm::AMDGPU_HW_IP_GFX, 99), libc::EINVAL, "HW_IP_INFO instance 99")?;

    let fw = |ty, inst, idx| info::<drm::drm_amdgpu_info_firmware>(&fd, fw_query(ty, inst, idx));
    let mec = fw(drm::AMDGPU_INFO_FW_GFX_MEC, 0, 0).map_err(|e| format!("FW MEC: {}", errno_name(e)))?;
    ensure_eq(u64::from(mec.ver), t.get("fw_version")?, "MEC firmware vs topology fw_version")?;
    let mec2 = fw(drm::AMDGPU_INFO_FW_GFX_MEC, 0, 1).map_err(|e| format!("FW MEC2: {}", errno_name(e)))?;
    ensure_eq(mec2.ver, mec.ver, "MEC2 firmware")?;
    expect_errno(fw(drm::AMDGPU_INFO_FW_GFX_MEC, 0, 2), libc::EINVAL, "FW MEC index 2")?;
    let s0 = fw(drm::AMDGPU_INFO_FW_SDMA, 0, 0).map_err(|e| format!("FW SDMA: {}", errno_name(e)))?;
    ensure_eq(u64::from(s0.ver), t.get("sdma_fw_version")?, "SDMA firmware vs topology sdma_fw_version")?;
    expect_errno(fw(drm::AMDGPU_INFO_FW_SDMA, 0, sdma as u32), libc::EINVAL, "FW SDMA past the last instance")?;
    expect_errno(fw(drm::AMDGPU_INFO_FW_GFX_MEC, 1, 0), libc::EINVAL, "FW ip_instance 1")?;
    expect_errno(fw(0x77, 0, 0), libc::EINVAL, "FW unknown type")?;
    // Firmware the virtual GPU has no readout of: 0, as amdgpu for firmware not loaded.
    ensure_eq(fw(drm::AMDGPU_INFO_FW_GFX_ME, 0, 0).map(|f| f.ver), Ok(0), "FW ME")
}

fn amdgpu_info_refuses_bad_requests(card: &Card) -> Check {
    let fd = Fd::open(&render_path(card))?;
    // Queries for what the part lacks (display, sensors, VBIOS, video) and
    // numbers amdgpu does not know: EINVAL, as amdgpu.
    for q in [
        drm::AMDGPU_INFO_CRTC_FROM_ID,
        drm::AMDGPU_INFO_SENSOR,
        drm::AMDGPU_INFO_VBIOS,
        drm::AMDGPU_INFO_VIDEO_CAPS,
        drm::AMDGPU_INFO_RAS_ENABLED_FEATURES,
        0x99,
    ] {
        expect_errno(info::<u64>(&fd, query(q)), libc::EINVAL, &format!("query {q:#x}"))?;
    }
    // No return buffer, or no size: EINVAL; a bad return pointer: EFAULT.
    let mut out = 0u32;
    let mut req = query(drm::AMDGPU_INFO_ACCEL_WORKING);
    req.return_size = 4;
    expect_errno(ioctl_fd(fd.0, IOCTL_AMDGPU_INFO, &mut req as *mut _ as usize), libc::EINVAL, "null return pointer")?;
    req.return_pointer = &mut out as *mut u32 as u64;
    req.return_size = 0;
    expect_errno(ioctl_fd(fd.0, IOCTL_AMDGPU_INFO, &mut req as *mut _ as usize), libc::EINVAL, "return size 0")?;
    req.return_pointer = 8;
    req.return_size = 4;
    expect_errno(ioctl_fd(fd.0, IOCTL_AMDGPU_INFO, &mut req as *mut _ as usize), libc::EFAULT, "return pointer 8")?;
    let mut req = query(drm::AMDGPU_INFO_DEV_INFO);
    req.return_pointer = 0x1000;
    req.return_size = 4096;
    expect_errno(ioctl_fd(fd.0, IOCTL_AMDGPU_INFO, &mut req as *mut _ as usize), libc::EFAULT, "DEV_INFO to 0x1000")?;
    // The request itself unreadable.
    expect_errno(ioctl_fd(fd.0, IOCTL_AMDGPU_INFO, 8), libc::EFAULT, "request at address 8")?;
    // amdgpu ioctls the render node does not answer (command submission,
    // GEM, VA): EINVAL, DRM's answer for a number with no handler.
    for nr in [drm::DRM_AMDGPU_GEM_CREATE, drm::DRM_AMDGPU_CS, drm::DRM_AMDGPU_GEM_VA] {
        let mut buf = [0u64; 16];
        expect_errno(
            ioctl_fd(fd.0, (3 << 30) | (32 << 16) | (b'd' as u32) << 8 | (0x40 + nr), buf.as_mut_ptr() as usize),
            libc::EINVAL,
            &format!("amdgpu ioctl {nr:#x}"),
        )?;
    }
    Ok(())
}

fn ctx(fd: &Fd, op: u32, flags: u32, ctx_id: u32, priority: i32) -> Result<drm::drm_amdgpu_ctx, i32> {
    let mut a = drm::drm_amdgpu_ctx {
        in_: drm::drm_amdgpu_ctx_in {
            op,
            flags,
            ctx_id,
            priority,
        },
    };
    ioctl_fd(fd.0, IOCTL_AMDGPU_CTX, &mut a as *mut _ as usize)?;
    Ok(a)
}

fn amdgpu_ctx_ids(card: &Card) -> Check {
    let fd = Fd::open(&render_path(card))?;
    let alloc = |prio| {
        ctx(&fd, drm::AMDGPU_CTX_OP_ALLOC_CTX, 0, 0, prio)
            // SAFETY: The kernel wrote the `out` view of the union.
            .map(|a| unsafe { a.out.alloc.ctx_id })
    };
    let a = alloc(drm::AMDGPU_CTX_PRIORITY_NORMAL as i32).map_err(|e| format!("ALLOC_CTX: {}", errno_name(e)))?;
    // A garbage priority is NORMAL (amdgpu's backwards compatibility).
    let b = alloc(12345).map_err(|e| format!("ALLOC_CTX prio 12345: {}", errno_name(e)))?;
    ensure(a != 0 && b != 0 && a != b, format!("context ids {a} {b}"))?;
    for op in [drm::AMDGPU_CTX_OP_QUERY_STATE, drm::AMDGPU_CTX_OP_QUERY_STATE2] {
        let s = ctx(&fd, op, 0, a, 0).map_err(|e| format!("QUERY_STATE{op}: {}", errno_name(e)))?;
        // SAFETY: The kernel wrote the `out` view of the union.
        let st = unsafe { s.out.state };
        ensure_eq((st.flags, st.hangs, st.reset_status), (0, 0, 0), "context state")?;
    }
    expect_errno(ctx(&fd, drm::AMDGPU_CTX_OP_ALLOC_CTX, 1, 0, 0), libc::EINVAL, "ALLOC_CTX flags 1")?;
    expect_errno(ctx(&fd, drm::AMDGPU_CTX_OP_QUERY_STATE, 1, a, 0), libc::EINVAL, "QUERY_STATE flags 1")?;
    expect_errno(ctx(&fd, 0x77, 0, a, 0), libc::EINVAL, "unknown op")?;
    expect_errno(ctx(&fd, drm::AMDGPU_CTX_OP_GET_STABLE_PSTATE, 0, a, 0), libc::EINVAL, "GET_STABLE_PSTATE")?;
    // Another file's contexts are not ours.
    let other = Fd::open(&render_path(card))?;
    expect_errno(ctx(&other, drm::AMDGPU_CTX_OP_FREE_CTX, 0, a, 0), libc::EINVAL, "FREE_CTX of another file's context")?;
    expect_ok(ctx(&fd, drm::AMDGPU_CTX_OP_FREE_CTX, 0, a, 0), "FREE_CTX")?;
    expect_errno(ctx(&fd, drm::AMDGPU_CTX_OP_FREE_CTX, 0, a, 0), libc::EINVAL, "FREE_CTX twice")?;
    expect_errno(ctx(&fd, drm::AMDGPU_CTX_OP_QUERY_STATE, 0, a, 0), libc::EINVAL, "QUERY_STATE of a freed context")?;
    expect_errno(ioctl_fd(fd.0, IOCTL_AMDGPU_CTX, 8), libc::EFAULT, "CTX request at address 8")?;
    // `b` stays allocated: closing the file frees it (kmemleak would say).
    Ok(())
}

/// libdrm_amdgpu itself (Debian's, what libhsakmt 5.2.3 calls for every
/// render node): amdgpu_device_initialize() succeeds and reports 3.64 and
/// the part's identity.
fn libdrm_amdgpu_initializes(card: &Card) -> Check {
    type Init = unsafe extern "C" fn(i32, *mut u32, *mut u32, *mut *mut libc::c_void) -> i32;
    type Deinit = unsafe extern "C" fn(*mut libc::c_void) -> i32;
    type GpuInfo = unsafe extern "C" fn(*mut libc::c_void, *mut u8) -> i32;
    type Name = unsafe extern "C" fn(*mut libc::c_void) -> *const libc::c_char;
    // SAFETY: dlopen/dlsym with NUL-terminated names; the library stays
    // loaded (no dlclose) while its functions are used.
    let lib = unsafe { libc::dlopen(c"libdrm_amdgpu.so.1".as_ptr(), libc::RTLD_NOW) };
    ensure(!lib.is_null(), "dlopen libdrm_amdgpu.so.1")?;
    let sym = |n: &std::ffi::CStr| -> Result<*mut libc::c_void, String> {
        // SAFETY: As above.
        let p = unsafe { libc::dlsym(lib, n.as_ptr()) };
        if p.is_null() { Err(format!("dlsym {n:?}")) } else { Ok(p) }
    };
    // SAFETY: The symbols have these C signatures (libdrm's amdgpu.h).
    let (init, deinit, gpu_info, name) = unsafe {
        (
            std::mem::transmute::<*mut libc::c_void, Init>(sym(c"amdgpu_device_initialize")?),
            std::mem::transmute::<*mut libc::c_void, Deinit>(sym(c"amdgpu_device_deinitialize")?),
            std::mem::transmute::<*mut libc::c_void, GpuInfo>(sym(c"amdgpu_query_gpu_info")?),
            std::mem::transmute::<*mut libc::c_void, Name>(sym(c"amdgpu_get_marketing_name")?),
        )
    };
    let fd = Fd::open(&render_path(card))?;
    let (mut major, mut minor, mut dev) = (0u32, 0u32, std::ptr::null_mut());
    // SAFETY: Valid fd and out pointers.
    let r = unsafe { init(fd.0, &mut major, &mut minor, &mut dev) };
    ensure_eq(r, 0, "amdgpu_device_initialize")?;
    ensure_eq((major, minor), (3, 64), "libdrm's DRM version")?;
    // struct amdgpu_gpu_info starts asic_id, chip_rev, chip_external_rev,
    // family_id (u32 each); the buffer is larger than the whole struct.
    let mut buf = vec![0u8; 8192];
    // SAFETY: `dev` is initialized; `buf` holds the struct.
    let r = unsafe { gpu_info(dev, buf.as_mut_ptr()) };
    let word = |i: usize| u32::from_ne_bytes(buf[i * 4..i * 4 + 4].try_into().unwrap());
    // SAFETY: `dev` is initialized; the name is a C string libdrm owns.
    let marketing = unsafe { std::ffi::CStr::from_ptr(name(dev)) }.to_string_lossy().to_string();
    // SAFETY: Ours, once.
    unsafe { deinit(dev) };
    ensure_eq(r, 0, "amdgpu_query_gpu_info")?;
    let t = Topo::of(card)?;
    ensure_eq(u64::from(word(0)), t.get("device_id")?, "asic_id")?;
    let (family, _) = family_of(t.get("gfx_target_version")?).ok_or("unknown target")?;
    ensure_eq(word(3), family, "family_id")?;
    println!("# {}: libdrm_amdgpu {major}.{minor}, asic {:#06x} family {} ext rev {:#x}, {marketing:?}", card.name, word(0), word(3), word(2));
    Ok(())
}

fn render_node_refuses_unknown_offsets(card: &Card) -> Check {
    let fd = Fd::open(&render_path(card))?;
    expect_errno(
        Map::new(
            &fd,
            0,
            PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
        ),
        libc::EINVAL,
        "offset 0",
    )?;
    expect_errno(
        Map::new(&fd, 1 << 40, PAGE, libc::PROT_NONE, libc::MAP_PRIVATE),
        libc::EINVAL,
        "offset 1 TiB",
    )?;
    expect_errno(
        Map::new(&fd, 123 << 40, PAGE, libc::PROT_READ, libc::MAP_SHARED),
        libc::EINVAL,
        "offset 123 TiB",
    )
}

fn amdgpu_sysfs_files(card: &Card) -> Check {
    let d = &card.device;
    ensure_eq(read(d.join("vendor"))?.as_str(), "0x1002", "vendor")?;
    let device = read(d.join("device"))?;
    ensure(
        device.starts_with("0x") && device.len() == 6,
        format!("device {device:?}"),
    )?;
    ensure(
        !read(d.join("vbios_version"))?.is_empty(),
        "empty vbios_version",
    )?;
    let total: u64 = read(d.join("mem_info_vram_total"))?
        .parse()
        .map_err(|e| format!("vram_total: {e}"))?;
    let used: u64 = read(d.join("mem_info_vram_used"))?
        .parse()
        .map_err(|e| format!("vram_used: {e}"))?;
    ensure(
        total > 0 && used <= total,
        format!("vram used {used} of {total}"),
    )?;
    let busy: u32 = read(d.join("gpu_busy_percent"))?
        .parse()
        .map_err(|e| format!("gpu_busy_percent: {e}"))?;
    ensure(busy <= 100, "gpu_busy_percent > 100")?;
    for f in ["pp_dpm_sclk", "pp_dpm_mclk"] {
        let s = read(d.join(f))?;
        // "0: 1700Mhz *": rocm-smi takes the line with the star.
        let cur = s
            .lines()
            .find(|l| l.ends_with(" *"))
            .ok_or(format!("{f}: no current level in {s:?}"))?;
        let mhz = cur
            .split_whitespace()
            .nth(1)
            .and_then(|w| w.strip_suffix("Mhz"));
        ensure(
            mhz.is_some_and(|m| m.parse::<u32>().is_ok_and(|v| v > 0)),
            format!("{f}: {cur:?}"),
        )?;
    }
    ensure_eq(
        read(d.join("power_dpm_force_performance_level"))?.as_str(),
        "auto",
        "performance level",
    )
}

fn hwmon_files(card: &Card) -> Check {
    let dir = card.device.join("hwmon");
    let hw = fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("hwmon"))
        .ok_or("no hwmonN")?
        .path();
    ensure_eq(read(hw.join("name"))?.as_str(), "amdgpu", "hwmon name")?;
    ensure_eq(read(hw.join("in0_label"))?.as_str(), "vddgfx", "in0_label")?;
    ensure_eq(
        read(hw.join("temp1_label"))?.as_str(),
        "edge",
        "temp1_label",
    )?;
    let num = |f: &str| -> Result<i64, String> {
        read(hw.join(f))?.parse().map_err(|e| format!("{f}: {e}"))
    };
    ensure(num("in0_input")? > 0, "in0_input")?;
    let temp = num("temp1_input")?;
    ensure(
        (1_000..=110_000).contains(&temp),
        format!("temp1_input {temp}"),
    )?;
    let (avg, cap) = (num("power1_average")?, num("power1_cap")?);
    ensure(avg > 0 && cap >= avg, format!("power {avg} of cap {cap}"))?;
    let (pwm, max) = (num("pwm1")?, num("pwm1_max")?);
    ensure(
        max == 255 && (0..=max).contains(&pwm),
        format!("pwm1 {pwm} of {max}"),
    )
}

// ---------------------------------------------------------------------------
// Through rkfd.

/// The GPUs rkfd knows (GET_PROCESS_APERTURES_NEW).
fn gpu_ids(k: &Kfd) -> Result<Vec<u32>, String> {
    let mut args = uapi::kfd_ioctl_get_process_apertures_new_args::default();
    k.ioctl(uapi::AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &mut args)
        .map_err(|e| format!("APERTURES_NEW (count): {}", errno_name(e)))?;
    let mut ap = vec![uapi::kfd_process_device_apertures::default(); args.num_of_nodes as usize];
    args.kfd_process_device_apertures_ptr = ap.as_mut_ptr() as u64;
    k.ioctl(uapi::AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &mut args)
        .map_err(|e| format!("APERTURES_NEW: {}", errno_name(e)))?;
    Ok(ap
        .iter()
        .take(args.num_of_nodes as usize)
        .map(|a| a.gpu_id)
        .collect())
}

fn acquire(k: &Kfd, fd: i32, gpu_id: u32) -> Result<i32, i32> {
    let mut a = uapi::kfd_ioctl_acquire_vm_args {
        drm_fd: fd as u32,
        gpu_id,
    };
    k.ioctl(uapi::AMDKFD_IOC_ACQUIRE_VM, &mut a)
}

/// Binds every GPU to the render node rkfd accepts for it; checks that
/// exactly one of ours is accepted per GPU, and nothing else.
fn bind_all(k: &Kfd, cards: &[Card]) -> Result<Vec<(u32, Card, Fd)>, String> {
    let ids = gpu_ids(k)?;
    ensure(!ids.is_empty(), "rkfd reports no GPU")?;
    let null = Fd::open("/dev/null")?;
    let mut bound = Vec::new();
    for &id in &ids {
        expect_errno(
            acquire(k, null.0, id),
            libc::EINVAL,
            "ACQUIRE_VM with /dev/null",
        )?;
        let mut found = None;
        for card in cards {
            let fd = Fd::open(&render_path(card))?;
            match acquire(k, fd.0, id) {
                Ok(_) if found.is_none() => found = Some((card.clone(), fd)),
                Ok(_) => return Err(format!("gpu {id}: a second render node accepted")),
                // Another GPU's node before binding; any other after.
                Err(e) if e == libc::EINVAL || (found.is_some() && e == libc::EBUSY) => {}
                Err(e) => {
                    return Err(format!(
                        "gpu {id} + {}: {}",
                        render_path(card),
                        errno_name(e)
                    ))
                }
            }
        }
        let (card, fd) = found.ok_or(format!("gpu {id}: none of our render nodes accepted"))?;
        // The same file again is fine.
        acquire(k, fd.0, id).map_err(|e| format!("ACQUIRE_VM again: {}", errno_name(e)))?;
        bound.push((id, card, fd));
    }
    Ok(bound)
}

const GTT: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
const VRAM: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;

fn acquire_vm_takes_our_render_nodes(cards: &[Card]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    bind_all(&k, cards).map(|_| ())
}

fn gtt_maps_shared_through_render_node(cards: &[Card]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    for (id, _card, fd) in bind_all(&k, cards)? {
        let (h, off) = alloc(k.fd, id, 0x1_0000_0000, 2 * PAGE as u64, GTT, 0)
            .map_err(|e| format!("ALLOC GTT: {}", errno_name(e)))?;
        ensure(
            off != 0 && off % PAGE as u64 == 0,
            format!("mmap offset {off:#x}"),
        )?;
        let a = Map::shared_rw(&fd, off, 2 * PAGE)?;
        ensure(
            a.read(0, 2 * PAGE).iter().all(|&b| b == 0),
            "new GTT memory is not zeroed",
        )?;
        a.write(PAGE + 16, b"through-the-render-node");
        // A second mapping of the same offset shares the pages.
        let b = Map::shared_rw(&fd, off, 2 * PAGE)?;
        ensure_eq(
            b.read(PAGE + 16, 23),
            b"through-the-render-node".to_vec(),
            "second mapping",
        )?;
        ensure_eq(
            map(k.fd, h, id, true),
            Ok(1),
            "MAP_MEMORY_TO_GPU n_success",
        )?;
        ensure_eq(
            map(k.fd, h, id, false),
            Ok(1),
            "UNMAP_MEMORY_FROM_GPU n_success",
        )?;
        drop((a, b));
        expect_ok(free(k.fd, h), "FREE")?;
        // A freed object's offset is gone.
        expect_errno(
            Map::new(&fd, off, PAGE, libc::PROT_READ, libc::MAP_SHARED),
            libc::EINVAL,
            "mmap after FREE",
        )?;
    }
    Ok(())
}

fn vram_maps_prot_none_private(cards: &[Card]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    for (id, _card, fd) in bind_all(&k, cards)? {
        let (h, off) = alloc(k.fd, id, 0x2_0000_0000, 4 * PAGE as u64, VRAM, 0)
            .map_err(|e| format!("ALLOC VRAM: {}", errno_name(e)))?;
        // libhsakmt's mapping of VRAM the host may not access.
        let none = Map::new(&fd, off, 4 * PAGE, libc::PROT_NONE, libc::MAP_PRIVATE)
            .map_err(|e| format!("PROT_NONE MAP_PRIVATE: {}", errno_name(e)))?;
        // A private mapping with access would be copy-on-write: refused.
        expect_errno(
            Map::new(
                &fd,
                off,
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE,
            ),
            libc::EINVAL,
            "RW MAP_PRIVATE",
        )?;
        // mprotect() cannot make the PROT_NONE mapping writable.
        // SAFETY: Changing protection of our own mapping.
        let r =
            unsafe { libc::mprotect(none.addr.cast(), PAGE, libc::PROT_READ | libc::PROT_WRITE) };
        ensure(r != 0, "PROT_NONE private mapping became writable")?;
        let rw = Map::shared_rw(&fd, off, 4 * PAGE)?;
        rw.write(3 * PAGE, b"vram");
        ensure_eq(
            rw.read(3 * PAGE, 4),
            b"vram".to_vec(),
            "VRAM through MAP_SHARED",
        )?;
        // Larger than the object, or not at its start: refused.
        expect_errno(
            Map::new(&fd, off, 5 * PAGE, libc::PROT_READ, libc::MAP_SHARED),
            libc::EINVAL,
            "too long",
        )?;
        expect_errno(
            Map::new(
                &fd,
                off + PAGE as u64,
                PAGE,
                libc::PROT_READ,
                libc::MAP_SHARED,
            ),
            libc::EINVAL,
            "inside",
        )?;
        drop((none, rw));
        expect_ok(free(k.fd, h), "FREE")?;
    }
    Ok(())
}

/// A child stopped under our ptrace (PTRACE_TRACEME, then SIGSTOP): it
/// has our mappings (fork), so its addresses are ours.  Killed on drop.
struct Tracee(i32);

impl Tracee {
    fn start() -> Result<Tracee, String> {
        // SAFETY: The child only stops itself and exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err("fork failed".into());
        }
        if pid == 0 {
            // SAFETY: Plain system calls in the child, which never returns.
            unsafe {
                libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
                libc::raise(libc::SIGSTOP);
                libc::_exit(0);
            }
        }
        let t = Tracee(pid);
        let mut status = 0;
        // SAFETY: Waiting for our child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        ensure(r == pid && libc::WIFSTOPPED(status), format!("tracee did not stop (status {status:#x})"))?;
        Ok(t)
    }

    fn peek(&self, addr: usize) -> Result<u64, i32> {
        // SAFETY: PEEKDATA reads the stopped tracee; errors come in errno.
        unsafe {
            *libc::__errno_location() = 0;
            let v = libc::ptrace(libc::PTRACE_PEEKDATA, self.0, addr, 0);
            match *libc::__errno_location() {
                0 => Ok(v as u64),
                e => Err(e),
            }
        }
    }

    fn poke(&self, addr: usize, v: u64) -> Result<(), i32> {
        // SAFETY: POKEDATA writes the stopped tracee.
        let r = unsafe { libc::ptrace(libc::PTRACE_POKEDATA, self.0, addr, v as usize) };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
        }
    }

    /// `/proc/PID/mem` at `addr`: `Ok(bytes)` read or written.
    fn mem(&self, addr: usize, buf: &mut [u8], write: bool) -> Result<usize, i32> {
        use std::os::unix::fs::FileExt;
        let f = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("/proc/{}/mem", self.0))
            .map_err(|e| e.raw_os_error().unwrap_or(0))?;
        let r = if write {
            f.write_at(buf, addr as u64)
        } else {
            f.read_at(buf, addr as u64)
        };
        r.map_err(|e| e.raw_os_error().unwrap_or(0))
    }
}

impl Drop for Tracee {
    fn drop(&mut self) {
        // SAFETY: Killing and reaping our own child.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            libc::waitpid(self.0, std::ptr::null_mut(), 0);
        }
    }
}

/// What a debugger does to GPU memory a process maps from the render node
/// (upstream: TTM's `ttm_bo_vm_access`, `amdgpu_ttm_access_memory`):
/// PTRACE_PEEKDATA/POKEDATA and `/proc/PID/mem` reads and writes, across
/// a page boundary, on GTT, host-visible VRAM (MAP_SHARED) and VRAM the
/// host does not access (libhsakmt's PROT_NONE + MAP_PRIVATE mapping;
/// its bytes are checked through the GPU).  The data is checked both
/// ways.
fn ptrace_reaches_render_mappings(cards: &[Card]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    for (id, _card, fd) in bind_all(&k, cards)? {
        let len = 2 * PAGE;
        let (gtt, gtt_off) = alloc(k.fd, id, 0x5_0000_0000, len as u64, GTT, 0)
            .map_err(|e| format!("ALLOC GTT: {}", errno_name(e)))?;
        let public = VRAM | uapi::KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
        let (vis, vis_off) = alloc(k.fd, id, 0x5_1000_0000, len as u64, public, 0)
            .map_err(|e| format!("ALLOC public VRAM: {}", errno_name(e)))?;
        let (inv, inv_off) = alloc(k.fd, id, 0x5_2000_0000, len as u64, VRAM, 0)
            .map_err(|e| format!("ALLOC VRAM: {}", errno_name(e)))?;
        ensure_eq(map(k.fd, inv, id, true), Ok(1), "MAP_MEMORY_TO_GPU (VRAM)")?;
        let g = Map::shared_rw(&fd, gtt_off, len)?;
        let v = Map::shared_rw(&fd, vis_off, len)?;
        let n = Map::new(&fd, inv_off, len, libc::PROT_NONE, libc::MAP_PRIVATE)
            .map_err(|e| format!("VRAM PROT_NONE MAP_PRIVATE: {}", errno_name(e)))?;
        // The invisible object's bytes, as the GPU sees them at its VA.
        let gpu = |off: usize, buf: &mut [u8], write: bool| -> Check {
            let faults = kfd_tests::svm::gpu_access(fd.0, 0x5_2000_0000 + off, buf.as_mut_ptr() as usize, buf.len(), write)
                .map_err(|e| format!("VGPU_ACCESS: {}", errno_name(e)))?;
            ensure_eq(faults, 0, "GPU access faults")
        };
        let t = Tracee::start()?;
        let pattern: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
        for (what, map) in [("GTT", &g), ("public VRAM", &v), ("VRAM (PROT_NONE private)", &n)] {
            let cpu = map.addr as usize;
            let invisible = std::ptr::eq(map, &n);
            let put = |off: usize, data: &[u8]| -> Check {
                if invisible {
                    gpu(off, &mut data.to_vec(), true)
                } else {
                    map.write(off, data);
                    Ok(())
                }
            };
            let get = |off: usize, len: usize| -> Result<Vec<u8>, String> {
                if invisible {
                    let mut b = vec![0u8; len];
                    gpu(off, &mut b, false)?;
                    Ok(b)
                } else {
                    Ok(map.read(off, len))
                }
            };
            // The process's bytes reach the debugger...
            put(PAGE - 8, &0x1122_3344_5566_7788u64.to_ne_bytes())?;
            ensure_eq(t.peek(cpu + PAGE - 8), Ok(0x1122_3344_5566_7788), &format!("{what}: PEEKDATA"))?;
            put(PAGE - 100, &pattern)?;
            let mut buf = vec![0u8; 200];
            ensure_eq(t.mem(cpu + PAGE - 100, &mut buf, false), Ok(200), &format!("{what}: /proc/PID/mem read"))?;
            ensure_eq(&buf, &pattern, &format!("{what}: bytes read across the page boundary"))?;
            // ...and the debugger's bytes reach the process.
            ensure_eq(t.poke(cpu + 16, 0x0bad_cafe_dead_beef), Ok(()), &format!("{what}: POKEDATA"))?;
            ensure_eq(get(16, 8)?, 0x0bad_cafe_dead_beefu64.to_ne_bytes().to_vec(), &format!("{what}: poked word"))?;
            let mut rev: Vec<u8> = pattern.iter().rev().copied().collect();
            ensure_eq(t.mem(cpu + PAGE - 60, &mut rev, true), Ok(200), &format!("{what}: /proc/PID/mem write"))?;
            ensure_eq(get(PAGE - 60, 200)?, rev, &format!("{what}: bytes written across the page boundary"))?;
        }
        drop(t);
        drop((g, v, n));
        ensure_eq(map(k.fd, inv, id, false), Ok(1), "UNMAP_MEMORY_FROM_GPU (VRAM)")?;
        for h in [gtt, vis, inv] {
            expect_ok(free(k.fd, h), "FREE")?;
        }
    }
    Ok(())
}

fn vram_accounting_follows_allocations(cards: &[Card]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    for (id, card, _fd) in bind_all(&k, cards)? {
        let used = || -> Result<u64, String> {
            read(card.device.join("mem_info_vram_used"))?
                .parse()
                .map_err(|e| format!("vram_used: {e}"))
        };
        let total: u64 = read(card.device.join("mem_info_vram_total"))?
            .parse()
            .map_err(|e| format!("{e}"))?;
        let before = used()?;
        let (h, _) = alloc(k.fd, id, 0x3_0000_0000, 1 << 20, VRAM, 0)
            .map_err(|e| format!("ALLOC 1 MiB: {}", errno_name(e)))?;
        ensure_eq(used()?, before + (1 << 20), "vram_used after 1 MiB")?;
        let mut avail = uapi::kfd_ioctl_get_available_memory_args {
            gpu_id: id,
            ..Default::default()
        };
        k.ioctl(uapi::AMDKFD_IOC_AVAILABLE_MEMORY, &mut avail)
            .map_err(|e| format!("AVAILABLE_MEMORY: {}", errno_name(e)))?;
        ensure(
            avail.available <= total - before - (1 << 20),
            format!("available {} of {total}", avail.available),
        )?;
        // More than all of it.
        expect_errno(
            alloc(k.fd, id, 0x4_0000_0000, total, VRAM, 0),
            libc::ENOMEM,
            "ALLOC all of VRAM again",
        )?;
        expect_ok(free(k.fd, h), "FREE")?;
        ensure_eq(used()?, before, "vram_used after FREE")?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// GEM objects, PRIME and rkfd's graphics interop (GET_DMABUF_INFO,
// IMPORT_DMABUF).

const IOCTL_AMDGPU_GEM_CREATE: u32 = drm_iowr::<drm::drm_amdgpu_gem_create>(drm::DRM_AMDGPU_GEM_CREATE);
const IOCTL_AMDGPU_GEM_MMAP: u32 = drm_iowr::<drm::drm_amdgpu_gem_mmap>(drm::DRM_AMDGPU_GEM_MMAP);

/// `struct drm_gem_close` of `<uapi/drm/drm.h>` (not in the amdgpu bindings).
#[repr(C)]
#[derive(Default)]
struct GemClose {
    handle: u32,
    pad: u32,
}

/// `struct drm_prime_handle` of `<uapi/drm/drm.h>`.
#[repr(C)]
#[derive(Default)]
struct PrimeHandle {
    handle: u32,
    flags: u32,
    fd: i32,
}

/// `DRM_IOW(0x09, struct drm_gem_close)`.
const IOCTL_GEM_CLOSE: u32 = (1 << 30) | ((std::mem::size_of::<GemClose>() as u32) << 16) | (b'd' as u32) << 8 | 0x09;
/// `DRM_IOWR(0x2d, struct drm_prime_handle)`.
const IOCTL_PRIME_HANDLE_TO_FD: u32 =
    (3 << 30) | ((std::mem::size_of::<PrimeHandle>() as u32) << 16) | (b'd' as u32) << 8 | 0x2d;
/// `DRM_IOWR(0x2e, struct drm_prime_handle)`.
const IOCTL_PRIME_FD_TO_HANDLE: u32 =
    (3 << 30) | ((std::mem::size_of::<PrimeHandle>() as u32) << 16) | (b'd' as u32) << 8 | 0x2e;

const GEM_VRAM: u64 = drm::AMDGPU_GEM_DOMAIN_VRAM as u64;
const GEM_GTT: u64 = drm::AMDGPU_GEM_DOMAIN_GTT as u64;

/// `DRM_IOCTL_AMDGPU_GEM_CREATE`: the handle.
fn gem_create(fd: &Fd, size: u64, domains: u64, flags: u64) -> Result<u32, i32> {
    let mut a = drm::drm_amdgpu_gem_create {
        in_: drm::drm_amdgpu_gem_create_in {
            bo_size: size,
            alignment: PAGE as u64,
            domains,
            domain_flags: flags,
        },
    };
    ioctl_fd(fd.0, IOCTL_AMDGPU_GEM_CREATE, &mut a as *mut _ as usize)?;
    // SAFETY: On success the kernel wrote `out` (plain integers).
    Ok(unsafe { a.out.handle })
}

/// `DRM_IOCTL_AMDGPU_GEM_MMAP`: the mmap offset.
fn gem_mmap(fd: &Fd, handle: u32) -> Result<u64, i32> {
    let mut a = drm::drm_amdgpu_gem_mmap {
        in_: drm::drm_amdgpu_gem_mmap_in { handle, _pad: 0 },
    };
    ioctl_fd(fd.0, IOCTL_AMDGPU_GEM_MMAP, &mut a as *mut _ as usize)?;
    // SAFETY: On success the kernel wrote `out` (a plain integer).
    Ok(unsafe { a.out.addr_ptr })
}

/// `DRM_IOCTL_GEM_CLOSE`.
fn gem_close(fd: &Fd, handle: u32) -> Result<i32, i32> {
    let mut a = GemClose { handle, pad: 0 };
    ioctl_fd(fd.0, IOCTL_GEM_CLOSE, &mut a as *mut _ as usize)
}

/// `DRM_IOCTL_PRIME_HANDLE_TO_FD`: a dma-buf fd.
fn prime_export(fd: &Fd, handle: u32, flags: u32) -> Result<Fd, i32> {
    let mut a = PrimeHandle { handle, flags, fd: -1 };
    ioctl_fd(fd.0, IOCTL_PRIME_HANDLE_TO_FD, &mut a as *mut _ as usize)?;
    Ok(Fd(a.fd))
}

/// `DRM_IOCTL_PRIME_FD_TO_HANDLE`.
fn prime_import(fd: &Fd, dmabuf: i32) -> Result<u32, i32> {
    let mut a = PrimeHandle { handle: 0, flags: 0, fd: dmabuf };
    ioctl_fd(fd.0, IOCTL_PRIME_FD_TO_HANDLE, &mut a as *mut _ as usize)?;
    Ok(a.handle)
}

/// A GEM object's CPU mapping (shared, read-write) through `GEM_MMAP`.
fn gem_map(fd: &Fd, handle: u32, len: usize) -> Result<Map, String> {
    let off = gem_mmap(fd, handle).map_err(|e| format!("GEM_MMAP: {}", errno_name(e)))?;
    Map::shared_rw(fd, off, len)
}

fn gem_create_refuses_bad_requests(card: &Card) -> Check {
    let fd = Fd::open(&render_path(card))?;
    let pg = PAGE as u64;
    let cases: [(&str, u64, u64, u64, i32); 9] = [
        ("unknown flag", pg, GEM_VRAM, 1 << 40, libc::EINVAL),
        ("unknown domain", pg, 1 << 10, 0, libc::EINVAL),
        ("two special domains", pg, u64::from(drm::AMDGPU_GEM_DOMAIN_GDS | drm::AMDGPU_GEM_DOMAIN_GWS), 0, libc::EINVAL),
        ("VRAM with GDS", pg, GEM_VRAM | u64::from(drm::AMDGPU_GEM_DOMAIN_GDS), 0, libc::EINVAL),
        ("ENCRYPTED without TMZ", pg, GEM_VRAM, u64::from(drm::AMDGPU_GEM_CREATE_ENCRYPTED), libc::EINVAL),
        ("CPU domain only", pg, u64::from(drm::AMDGPU_GEM_DOMAIN_CPU), 0, libc::EINVAL),
        ("size 0", 0, GEM_GTT, 0, libc::EINVAL),
        ("larger than GTT", 1 << 50, GEM_GTT, 0, libc::ENOMEM),
        ("larger than VRAM and GTT", 1 << 50, GEM_VRAM, 0, libc::ENOMEM),
    ];
    for (what, size, domains, flags, want) in cases {
        expect_errno(gem_create(&fd, size, domains, flags), want, &format!("GEM_CREATE {what}"))?;
    }
    expect_errno(gem_mmap(&fd, 0x7777), libc::ENOENT, "GEM_MMAP of an unknown handle")?;
    expect_errno(gem_close(&fd, 0x7777), libc::EINVAL, "GEM_CLOSE of an unknown handle")?;
    expect_errno(prime_export(&fd, 0x7777, libc::O_CLOEXEC as u32), libc::ENOENT, "PRIME export of an unknown handle")?;
    let null = Fd::open("/dev/null")?;
    expect_errno(prime_import(&fd, null.0), libc::EINVAL, "PRIME import of /dev/null")?;
    Ok(())
}

fn gem_objects_map_close_and_export(card: &Card) -> Check {
    let fd = Fd::open(&render_path(card))?;
    let other = Fd::open(&render_path(card))?;
    for (what, domains) in [("VRAM", GEM_VRAM), ("GTT", GEM_GTT), ("VRAM|GTT", GEM_VRAM | GEM_GTT)] {
        // 3 pages and a byte: a 4-page object.
        let h = gem_create(&fd, 3 * PAGE as u64 + 1, domains, 0)
            .map_err(|e| format!("GEM_CREATE {what}: {}", errno_name(e)))?;
        let off = gem_mmap(&fd, h).map_err(|e| format!("GEM_MMAP {what}: {}", errno_name(e)))?;
        ensure(off != 0 && off % PAGE as u64 == 0, format!("{what}: mmap offset {off:#x}"))?;
        let m = Map::shared_rw(&fd, off, 4 * PAGE)?;
        ensure(m.read(0, 4 * PAGE).iter().all(|&b| b == 0), format!("{what}: new object not zeroed"))?;
        m.write(3 * PAGE + 8, b"gem-object");
        expect_errno(
            Map::new(&fd, off, 5 * PAGE, libc::PROT_READ, libc::MAP_SHARED),
            libc::EINVAL,
            &format!("{what}: mmap past the object"),
        )?;
        // Another file of the same node has no handle: drm_gem_mmap's EACCES.
        expect_errno(
            Map::new(&other, off, PAGE, libc::PROT_READ, libc::MAP_SHARED),
            libc::EACCES,
            &format!("{what}: mmap from a file without a handle"),
        )?;
        // PRIME: bad flags, then a dma-buf the CPU maps too.
        expect_errno(prime_export(&fd, h, 0x4000_0000), libc::EINVAL, "PRIME export with bad flags")?;
        let buf = prime_export(&fd, h, (libc::O_CLOEXEC | libc::O_RDWR) as u32)
            .map_err(|e| format!("{what}: PRIME export: {}", errno_name(e)))?;
        let d = Map::shared_rw(&buf, 0, 4 * PAGE)?;
        ensure_eq(d.read(3 * PAGE + 8, 10), b"gem-object".to_vec(), "dma-buf mapping")?;
        // Back into the same file: the same handle; into another: a new one.
        ensure_eq(prime_import(&fd, buf.0), Ok(h), "PRIME import into the exporting file")?;
        let h2 = prime_import(&other, buf.0).map_err(|e| format!("{what}: PRIME import: {}", errno_name(e)))?;
        let o = gem_map(&other, h2, 4 * PAGE)?;
        o.write(8, b"other-file");
        ensure_eq(m.read(8, 10), b"other-file".to_vec(), "write through the other file's handle")?;
        // Closing the handle keeps the mappings' pages; the offset goes
        // with the last handle and dma-buf.
        expect_ok(gem_close(&fd, h), "GEM_CLOSE")?;
        expect_errno(gem_close(&fd, h), libc::EINVAL, "GEM_CLOSE twice")?;
        expect_errno(gem_mmap(&fd, h), libc::ENOENT, "GEM_MMAP after GEM_CLOSE")?;
        expect_ok(gem_close(&other, h2), "GEM_CLOSE (other file)")?;
        ensure_eq(m.read(3 * PAGE + 8, 10), b"gem-object".to_vec(), "mapping after GEM_CLOSE")?;
        drop(buf);
        ensure_eq(d.read(8, 10), b"other-file".to_vec(), "dma-buf mapping after close")?;
        drop((m, d, o));
        expect_errno(
            Map::new(&fd, off, PAGE, libc::PROT_READ, libc::MAP_SHARED),
            libc::EINVAL,
            &format!("{what}: mmap of a freed object"),
        )?;
    }
    // NO_CPU_ACCESS: no GEM_MMAP (amdgpu_mode_dumb_mmap's EPERM).
    let h = gem_create(&fd, PAGE as u64, GEM_VRAM, u64::from(drm::AMDGPU_GEM_CREATE_NO_CPU_ACCESS))
        .map_err(|e| format!("GEM_CREATE NO_CPU_ACCESS: {}", errno_name(e)))?;
    expect_errno(gem_mmap(&fd, h), libc::EPERM, "GEM_MMAP of a NO_CPU_ACCESS object")?;
    expect_ok(gem_close(&fd, h), "GEM_CLOSE")?;
    // VM_ALWAYS_VALID objects are not exported (amdgpu_gem_prime_export).
    let h = gem_create(&fd, PAGE as u64, GEM_GTT, u64::from(drm::AMDGPU_GEM_CREATE_VM_ALWAYS_VALID))
        .map_err(|e| format!("GEM_CREATE VM_ALWAYS_VALID: {}", errno_name(e)))?;
    expect_errno(prime_export(&fd, h, libc::O_CLOEXEC as u32), libc::EPERM, "PRIME export of VM_ALWAYS_VALID")?;
    expect_ok(gem_close(&fd, h), "GEM_CLOSE")?;
    Ok(())
}

fn dmabuf_info(k: &Kfd, dmabuf: i32, metadata: &mut [u8]) -> Result<uapi::kfd_ioctl_get_dmabuf_info_args, i32> {
    let mut a = uapi::kfd_ioctl_get_dmabuf_info_args {
        metadata_ptr: if metadata.is_empty() { 0 } else { metadata.as_mut_ptr() as u64 },
        metadata_size: metadata.len() as u32,
        dmabuf_fd: dmabuf as u32,
        ..Default::default()
    };
    k.ioctl(uapi::AMDKFD_IOC_GET_DMABUF_INFO, &mut a)?;
    Ok(a)
}

fn import_dmabuf(k: &Kfd, gpu_id: u32, dmabuf: i32, va: u64) -> Result<u64, i32> {
    let mut a = uapi::kfd_ioctl_import_dmabuf_args {
        va_addr: va,
        gpu_id,
        dmabuf_fd: dmabuf as u32,
        ..Default::default()
    };
    k.ioctl(uapi::AMDKFD_IOC_IMPORT_DMABUF, &mut a)?;
    Ok(a.handle)
}

/// VRAM in use on the card (sysfs `mem_info_vram_used`).
fn vram_used(card: &Card) -> Result<u64, String> {
    read(card.device.join("mem_info_vram_used"))?.parse().map_err(|e| format!("mem_info_vram_used: {e}"))
}

fn dmabuf_info_and_errors(cards: &[Card]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let bound = bind_all(&k, cards)?;
    let null = Fd::open("/dev/null")?;
    expect_errno(dmabuf_info(&k, null.0, &mut []), libc::EINVAL, "GET_DMABUF_INFO of /dev/null")?;
    expect_errno(dmabuf_info(&k, 999, &mut []), libc::EBADF, "GET_DMABUF_INFO of a closed fd")?;
    for (id, _card, fd) in &bound {
        let flags = u64::from(drm::AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED);
        for (what, domains, f, want) in [
            ("VRAM", GEM_VRAM, 0, uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM),
            ("VRAM CPU_ACCESS_REQUIRED", GEM_VRAM, flags, uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM | uapi::KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC),
            ("GTT", GEM_GTT, 0, uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT),
            ("VRAM|GTT", GEM_VRAM | GEM_GTT, 0, uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM),
        ] {
            let h = gem_create(fd, 5 * PAGE as u64, domains, f).map_err(|e| format!("GEM_CREATE {what}: {}", errno_name(e)))?;
            let buf = prime_export(fd, h, libc::O_CLOEXEC as u32).map_err(|e| format!("PRIME export: {}", errno_name(e)))?;
            // As libhsakmt asks: a 64-byte metadata buffer (none is kept).
            let mut md = [0xaau8; 64];
            let info = dmabuf_info(&k, buf.0, &mut md).map_err(|e| format!("GET_DMABUF_INFO {what}: {}", errno_name(e)))?;
            ensure_eq(
                (info.size, info.gpu_id, info.flags, info.metadata_size),
                (5 * PAGE as u64, *id, want, 0),
                &format!("GET_DMABUF_INFO {what}: size, gpu_id, flags, metadata_size"),
            )?;
            let info = dmabuf_info(&k, buf.0, &mut []).map_err(|e| format!("GET_DMABUF_INFO without metadata: {}", errno_name(e)))?;
            ensure_eq(info.size, 5 * PAGE as u64, "size without metadata buffer")?;
            // IMPORT_DMABUF's checks.
            expect_errno(import_dmabuf(&k, 0xdead, buf.0, 0x40_0000_0000), libc::EINVAL, "IMPORT_DMABUF on an unknown gpu_id")?;
            expect_errno(import_dmabuf(&k, *id, null.0, 0x40_0000_0000), libc::EINVAL, "IMPORT_DMABUF of /dev/null")?;
            expect_errno(import_dmabuf(&k, *id, 999, 0x40_0000_0000), libc::EBADF, "IMPORT_DMABUF of a closed fd")?;
            expect_errno(import_dmabuf(&k, *id, buf.0, 0x40_0000_0100), libc::EINVAL, "IMPORT_DMABUF at an unaligned VA")?;
            expect_errno(import_dmabuf(&k, *id, buf.0, 1 << 60), libc::EINVAL, "IMPORT_DMABUF beyond the VM")?;
            expect_ok(gem_close(fd, h), "GEM_CLOSE")?;
        }
    }
    // A process without ACQUIRE_VM: ENODEV (kfd_bind_process_to_device).
    let gpu_ids: Vec<u32> = bound.iter().map(|b| b.0).collect();
    let (_, _, fd) = bound.first().ok_or("no GPU")?;
    let h = gem_create(fd, PAGE as u64, GEM_GTT, 0).map_err(|e| format!("GEM_CREATE: {}", errno_name(e)))?;
    let buf = prime_export(fd, h, 0).map_err(|e| format!("PRIME export: {}", errno_name(e)))?;
    let child = in_child(CHILD_SECS, || {
        let k = Kfd::open().map_err(|e| e.to_string())?;
        let id = *gpu_ids.first().ok_or("no GPU")?;
        expect_errno(import_dmabuf(&k, id, buf.0, 0x40_0000_0000), libc::ENODEV, "IMPORT_DMABUF before ACQUIRE_VM")?;
        // GET_DMABUF_INFO needs no VM.
        let info = dmabuf_info(&k, buf.0, &mut []).map_err(|e| format!("GET_DMABUF_INFO: {}", errno_name(e)))?;
        ensure_eq(info.gpu_id, id, "gpu_id in a child")
    });
    expect_ok(gem_close(fd, h), "GEM_CLOSE")?;
    child
}

/// How one scenario gives up the GEM handle, the dma-buf fd and the KFD
/// object.
#[derive(Clone, Copy, Debug)]
enum Release {
    /// GEM handle, dma-buf fd, then the KFD object.
    HandleFdKfd,
    /// The KFD object, dma-buf fd, then the GEM handle.
    KfdFdHandle,
    /// dma-buf fd, KFD object, then the GEM handle.
    FdKfdHandle,
    /// Nothing: the process exits holding all three.
    Exit,
}

/// One GEM object of `card` (bound to `id` through `fd`) exported,
/// imported into the KFD at `va`, mapped, written by the GPU and read by
/// the CPU both ways, then released in `order`.
fn import_and_release(k: &Kfd, id: u32, fd: &Fd, domains: u64, va: u64, order: Release) -> Check {
    let len = 4 * PAGE;
    let h = gem_create(fd, len as u64, domains, 0).map_err(|e| format!("GEM_CREATE: {}", errno_name(e)))?;
    let cpu = gem_map(fd, h, len)?;
    let buf = prime_export(fd, h, libc::O_CLOEXEC as u32).map_err(|e| format!("PRIME export: {}", errno_name(e)))?;
    let kh = import_dmabuf(k, id, buf.0, va).map_err(|e| format!("IMPORT_DMABUF: {}", errno_name(e)))?;
    ensure_eq(kh >> 32, u64::from(id), "handle's gpu_id")?;
    ensure_eq(map(k.fd, kh, id, true), Ok(1), "MAP_MEMORY_TO_GPU of the import")?;
    let gpu = |off: usize, data: &mut [u8], write: bool| -> Check {
        let faults = kfd_tests::svm::gpu_access(fd.0, va as usize + off, data.as_mut_ptr() as usize, data.len(), write)
            .map_err(|e| format!("VGPU_ACCESS: {}", errno_name(e)))?;
        ensure_eq(faults, 0, "GPU access faults")
    };
    // The GPU writes through the KFD mapping, the CPU reads through GEM.
    let mut msg = *b"gpu-wrote-this";
    gpu(2 * PAGE + 100, &mut msg, true)?;
    ensure_eq(cpu.read(2 * PAGE + 100, msg.len()), msg.to_vec(), "CPU sees the GPU's write")?;
    cpu.write(3 * PAGE + 7, b"cpu-wrote-this");
    let mut back = [0u8; 14];
    gpu(3 * PAGE + 7, &mut back, false)?;
    ensure_eq(&back, b"cpu-wrote-this", "GPU sees the CPU's write")?;
    let check_alive = |stage: &str| -> Check {
        let mut m = *b"still-alive!";
        gpu(PAGE, &mut m, true)?;
        ensure_eq(cpu.read(PAGE, m.len()), m.to_vec(), &format!("GPU write after {stage}"))
    };
    let release_kfd = || -> Check {
        ensure_eq(map(k.fd, kh, id, false), Ok(1), "UNMAP_MEMORY_FROM_GPU")?;
        expect_ok(free(k.fd, kh), "FREE_MEMORY_OF_GPU of the import")
    };
    match order {
        Release::HandleFdKfd => {
            expect_ok(gem_close(fd, h), "GEM_CLOSE")?;
            check_alive("GEM_CLOSE")?;
            drop(buf);
            check_alive("closing the dma-buf")?;
            release_kfd()?;
        }
        Release::KfdFdHandle => {
            release_kfd()?;
            drop(buf);
            ensure_eq(cpu.read(2 * PAGE + 100, msg.len()), msg.to_vec(), "CPU mapping after FREE")?;
            expect_ok(gem_close(fd, h), "GEM_CLOSE")?;
        }
        Release::FdKfdHandle => {
            drop(buf);
            check_alive("closing the dma-buf")?;
            release_kfd()?;
            ensure_eq(gem_mmap(fd, h).map(|_| ()), Ok(()), "GEM_MMAP after FREE")?;
            expect_ok(gem_close(fd, h), "GEM_CLOSE")?;
        }
        Release::Exit => {
            std::mem::forget(buf);
            std::mem::forget(cpu);
            return Ok(());
        }
    }
    drop(cpu);
    Ok(())
}

fn import_map_and_release_in_any_order(cards: &[Card]) -> Check {
    for (i, order) in [Release::HandleFdKfd, Release::KfdFdHandle, Release::FdKfdHandle, Release::Exit]
        .into_iter()
        .enumerate()
    {
        let before: Vec<u64> = cards.iter().map(vram_used).collect::<Result<_, _>>()?;
        // Each order in a process of its own, whose exit releases the rest.
        in_child(CHILD_SECS, || {
            let k = Kfd::open().map_err(|e| e.to_string())?;
            for (id, _card, fd) in bind_all(&k, cards)? {
                for (j, domains) in [GEM_VRAM, GEM_GTT].into_iter().enumerate() {
                    let va = 0x41_0000_0000 + ((i * 2 + j) as u64) * 0x100_0000;
                    import_and_release(&k, id, &fd, domains, va, order)
                        .map_err(|e| format!("gpu {id} {order:?} domains {domains:#x}: {e}"))?;
                }
            }
            Ok(())
        })?;
        // The process's teardown may finish just after it exits.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut after: Vec<u64> = cards.iter().map(vram_used).collect::<Result<_, _>>()?;
        while after != before && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
            after = cards.iter().map(vram_used).collect::<Result<_, _>>()?;
        }
        ensure_eq(after, before, &format!("{order:?}: VRAM in use after the process"))?;
    }
    Ok(())
}

/// SDMA (a GPU engine) copies into an imported GEM object; the CPU sees it
/// through the GEM mapping.
fn sdma_writes_imported_object(cards: &[Card]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let gpus = kfd_tests::ops::topology_gpus();
    for (id, _card, fd) in bind_all(&k, cards)? {
        let topo = gpus.iter().find(|g| g.gpu_id == id).ok_or(format!("gpu {id} not in the topology"))?;
        let q = kfd_tests::queue::QueueMem::new(k.fd, fd.0, topo, 0x50_0000_0000)?;
        if q.props.sdma_engines == 0 {
            q.release();
            continue;
        }
        let len = 2 * PAGE;
        // The source: a KFD GTT object the CPU fills.
        let (src, src_off) = alloc(k.fd, id, 0x51_0000_0000, len as u64, GTT, 0)
            .map_err(|e| format!("ALLOC GTT: {}", errno_name(e)))?;
        ensure_eq(map(k.fd, src, id, true), Ok(1), "MAP source")?;
        let s = Map::shared_rw(&fd, src_off, len)?;
        let pattern: Vec<u8> = (0..len as u32).map(|i| (i * 13 + 5) as u8).collect();
        s.write(0, &pattern);
        // The destination: an imported VRAM GEM object.
        let h = gem_create(&fd, len as u64, GEM_VRAM, 0).map_err(|e| format!("GEM_CREATE: {}", errno_name(e)))?;
        let cpu = gem_map(&fd, h, len)?;
        let buf = prime_export(&fd, h, libc::O_CLOEXEC as u32).map_err(|e| format!("PRIME export: {}", errno_name(e)))?;
        let dst_va = 0x52_0000_0000;
        let kh = import_dmabuf(&k, id, buf.0, dst_va).map_err(|e| format!("IMPORT_DMABUF: {}", errno_name(e)))?;
        ensure_eq(map(k.fd, kh, id, true), Ok(1), "MAP import")?;
        let (qid, db) = q.create(true).map_err(|e| format!("CREATE SDMA: {}", errno_name(e)))?;
        let want = 0x1b0f_0001;
        q.raw_submit(true, 0, &q.sdma_copy_slot(dst_va, 0x51_0000_0000, len as u32, want), db);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while q.fence() != want && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let fence = q.fence();
        let _ = q.destroy(qid);
        ensure_eq(fence, want, "SDMA fence after the copy")?;
        ensure(cpu.read(0, len) == pattern, "the GEM mapping does not show the SDMA copy")?;
        ensure_eq(map(k.fd, kh, id, false), Ok(1), "UNMAP import")?;
        expect_ok(free(k.fd, kh), "FREE import")?;
        ensure_eq(map(k.fd, src, id, false), Ok(1), "UNMAP source")?;
        expect_ok(free(k.fd, src), "FREE source")?;
        expect_ok(gem_close(&fd, h), "GEM_CLOSE")?;
        drop((s, cpu, buf));
        q.release();
    }
    Ok(())
}

/// A GEM object of one GPU imported on another (upstream: a dma-buf
/// attachment over PCIe): GET_DMABUF_INFO names the owner, the importer's
/// VM reaches the owner's memory.
fn import_on_another_gpu(cards: &[Card]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let bound = bind_all(&k, cards)?;
    let (Some((a, _, afd)), Some((b, _, bfd))) = (bound.first(), bound.get(1)) else {
        println!("# one GPU: nothing to import across");
        return Ok(());
    };
    let len = 2 * PAGE;
    let h = gem_create(afd, len as u64, GEM_VRAM, 0).map_err(|e| format!("GEM_CREATE: {}", errno_name(e)))?;
    let cpu = gem_map(afd, h, len)?;
    let buf = prime_export(afd, h, libc::O_CLOEXEC as u32).map_err(|e| format!("PRIME export: {}", errno_name(e)))?;
    let info = dmabuf_info(&k, buf.0, &mut []).map_err(|e| format!("GET_DMABUF_INFO: {}", errno_name(e)))?;
    ensure_eq(info.gpu_id, *a, "owner gpu_id")?;
    // DRM PRIME into the other GPU's node: not ours to attach (EINVAL).
    expect_errno(prime_import(bfd, buf.0), libc::EINVAL, "PRIME import on another GPU's node")?;
    let va = 0x60_0000_0000;
    let kh = import_dmabuf(&k, *b, buf.0, va).map_err(|e| format!("IMPORT_DMABUF on gpu {b}: {}", errno_name(e)))?;
    ensure_eq(map(k.fd, kh, *b, true), Ok(1), "MAP on the importing GPU")?;
    let mut msg = *b"peer-gpu-write";
    let faults = kfd_tests::svm::gpu_access(bfd.0, va as usize + 64, msg.as_mut_ptr() as usize, msg.len(), true)
        .map_err(|e| format!("VGPU_ACCESS: {}", errno_name(e)))?;
    ensure_eq(faults, 0, "GPU access faults")?;
    ensure_eq(cpu.read(64, msg.len()), msg.to_vec(), "owner's CPU mapping shows the peer's write")?;
    expect_ok(gem_close(afd, h), "GEM_CLOSE")?;
    drop((buf, cpu));
    ensure_eq(map(k.fd, kh, *b, false), Ok(1), "UNMAP")?;
    expect_ok(free(k.fd, kh), "FREE")
}

fn main() {
    let mut h = Harness::new();
    h.run("module: /proc/modules lists amdgpu", module_is_listed);
    h.run(
        "module: /sys/module/amdgpu initstate live, version",
        module_is_live,
    );
    let cards = amd_cards().unwrap_or_else(|e| {
        println!("# {e}");
        Vec::new()
    });
    h.run(
        "drm: cards with vendor 0x1002, one render node each",
        || cards_exist(&cards),
    );
    for card in &cards {
        let n = &card.name;
        h.run(&format!("drm: {n} path has a PCI BDF component"), || {
            card_path_has_bdf(card)
        });
        h.run(&format!("drm: {n} render node opens O_RDWR"), || {
            render_node_opens(card)
        });
        h.run(&format!("drm: {n} render node is a DRM device"), || {
            render_node_is_drm(card)
        });
        h.run(&format!("amdgpu: {n} INFO ACCEL_WORKING, DEV_INFO, READ_MMR_REG vs topology"), || {
            amdgpu_info_dev_info(card)
        });
        h.run(&format!("amdgpu: {n} INFO VRAM_GTT, MEMORY, usage, TIMESTAMP"), || {
            amdgpu_info_memory(card)
        });
        h.run(&format!("amdgpu: {n} INFO HW_IP_COUNT/INFO, FW_VERSION vs topology"), || {
            amdgpu_info_hw_ip_and_firmware(card)
        });
        h.run(&format!("amdgpu: {n} unsupported queries and bad requests"), || {
            amdgpu_info_refuses_bad_requests(card)
        });
        h.run(&format!("amdgpu: {n} CTX alloc/query/free"), || amdgpu_ctx_ids(card));
        h.run(&format!("amdgpu: {n} libdrm amdgpu_device_initialize succeeds"), || {
            in_child(CHILD_SECS, || libdrm_amdgpu_initializes(card))
        });
        h.run(&format!("gem: {n} GEM_CREATE/MMAP/CLOSE and PRIME refuse bad requests"), || {
            gem_create_refuses_bad_requests(card)
        });
        h.run(&format!("gem: {n} objects map, close and export (VRAM, GTT)"), || {
            in_child(CHILD_SECS, || gem_objects_map_close_and_export(card))
        });
        h.run(&format!("mmap: {n} refuses unknown offsets"), || {
            render_node_refuses_unknown_offsets(card)
        });
        h.run(&format!("sysfs: {n} amdgpu device files"), || {
            amdgpu_sysfs_files(card)
        });
        h.run(&format!("hwmon: {n} sensors rocm-smi reads"), || {
            hwmon_files(card)
        });
    }
    if Path::new("/dev/kfd").exists() {
        h.run(
            "kfd: ACQUIRE_VM takes one of our render nodes per GPU",
            || in_child(CHILD_SECS, || acquire_vm_takes_our_render_nodes(&cards)),
        );
        h.run("kfd: GTT maps MAP_SHARED through the render node", || {
            in_child(CHILD_SECS, || gtt_maps_shared_through_render_node(&cards))
        });
        h.run("kfd: VRAM maps PROT_NONE + MAP_PRIVATE", || {
            in_child(CHILD_SECS, || vram_maps_prot_none_private(&cards))
        });
        h.run("kfd: ptrace and /proc/PID/mem reach GTT and VRAM mappings", || {
            in_child(CHILD_SECS, || ptrace_reaches_render_mappings(&cards))
        });
        h.run("kfd: VRAM accounting follows allocations", || {
            in_child(CHILD_SECS, || vram_accounting_follows_allocations(&cards))
        });
        h.run("kfd: GET_DMABUF_INFO and IMPORT_DMABUF checks", || {
            in_child(CHILD_SECS, || dmabuf_info_and_errors(&cards))
        });
        h.run("kfd: imported GEM objects map, GPU and CPU share them, any release order", || {
            import_map_and_release_in_any_order(&cards)
        });
        h.run("kfd: SDMA copies into an imported GEM object", || {
            in_child(CHILD_SECS, || sdma_writes_imported_object(&cards))
        });
        h.run("kfd: a GEM object imported on another GPU", || {
            in_child(CHILD_SECS, || import_on_another_gpu(&cards))
        });
    }
    std::process::exit(h.finish("vgpu"));
}
