// SPDX-License-Identifier: GPL-2.0
//! Guest tests of the virtual GPU (module "amdgpu", vgpu/) from user space:
//! what ROCm's rocminfo/rocm-smi/libhsakmt look at (module, DRM card and
//! render node, BDF-shaped device path, amdgpu sysfs files, hwmon), and,
//! through rkfd's /dev/kfd, the render node's part in ACQUIRE_VM and in
//! mapping memory objects.  Run inside the test VM with rkfd and amdgpu
//! loaded; an optional argument filters tests by name.

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
    // A driver ioctl it does not have.
    let r = ioctl_fd(fd.0, (3 << 30) | (8 << 16) | (b'd' as u32) << 8 | 0x40, 0);
    ensure(r.is_err(), "an unknown driver ioctl succeeded")
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
    }
    std::process::exit(h.finish("vgpu"));
}
