// SPDX-License-Identifier: GPL-2.0
//! Guest tests of rkfd's memory extras: PASIDs (sysfs, debugfs), the
//! `/dev/kfd` mmap of doorbells and the MMIO remap page, DOORBELL and
//! MMIO_REMAP allocations, pinned USERPTR memory, GET_TILE_CONFIG and
//! debugfs `kfd/mem_limit`.  Run inside the test VM with rkfd and amdgpu
//! loaded; an optional argument filters tests by name.  Every scenario
//! runs in a forked child (rkfd keeps one process per mm).

use kfd_tests::harness::{ensure, ensure_eq, expect_errno, expect_ok, read_trimmed as read, Check, Harness};
use kfd_tests::kfd::{ensure_debugfs, errno_name, Kfd, DEBUGFS};
use kfd_tests::ops::{alloc, free, in_child, map};
use kfd_tests::rng::splitmix64;
use kfd_uapi as uapi;
use std::fs;

const PAGE: usize = 4096;
/// `doorbell_process_size` of every GFX9+ part (1024 queues × 8 bytes).
const DOORBELL_SLICE: usize = 8192;
const TYPE_DOORBELL: u64 = 0x3 << 62;
const TYPE_EVENTS: u64 = 0x2 << 62;
const TYPE_RESERVED_MEM: u64 = 0x1 << 62;
const GPU_ID_SHIFT: u32 = 46;
/// How long a scenario's child process may run before it is killed and
/// reported as hung (generous: a loaded TCG guest is slow).
const CHILD_SECS: u32 = 300;

fn kfd_off(kind: u64, gpu_id: u32) -> u64 {
    kind | (u64::from(gpu_id) << GPU_ID_SHIFT)
}

fn ok<T>(r: Result<T, i32>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {}", errno_name(e)))
}

use kfd_tests::harness::Fd;

/// A mapping, unmapped on drop.
struct Map {
    addr: *mut u8,
    len: usize,
}

impl Map {
    fn new(fd: i32, offset: u64, len: usize, prot: i32, flags: i32) -> Result<Map, i32> {
        // SAFETY: A fresh mapping chosen by the kernel; nothing is overwritten.
        let a = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, offset as libc::off_t) };
        if a == libc::MAP_FAILED {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
        } else {
            Ok(Map { addr: a.cast(), len })
        }
    }

    fn kfd(k: &Kfd, offset: u64, len: usize) -> Result<Map, i32> {
        Map::new(k.fd, offset, len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED)
    }

    fn anon(len: usize, prot: i32) -> Result<Map, String> {
        Map::new(-1, 0, len, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS)
            .map_err(|e| format!("anonymous mmap: {}", errno_name(e)))
    }

    fn write_u64(&self, off: usize, v: u64) {
        assert!(off + 8 <= self.len && off.is_multiple_of(8));
        // SAFETY: In bounds and aligned in a read-write mapping we own.
        unsafe { std::ptr::write_volatile(self.addr.add(off).cast::<u64>(), v) };
    }

    fn read_u64(&self, off: usize) -> u64 {
        assert!(off + 8 <= self.len && off.is_multiple_of(8));
        // SAFETY: In bounds and aligned in a readable mapping we own.
        unsafe { std::ptr::read_volatile(self.addr.add(off).cast::<u64>()) }
    }

    fn punch(&self, off: usize, len: usize) -> Check {
        // SAFETY: Unmapping part of our own mapping (the rest is unmapped
        // again on drop, which is harmless).
        let r = unsafe { libc::munmap(self.addr.add(off).cast(), len) };
        ensure(r == 0, "munmap")
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: Our own mapping.
        unsafe { libc::munmap(self.addr.cast(), self.len) };
    }
}

fn read_all(fd: i32) -> String {
    let mut msg = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        // SAFETY: Reading into our buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        msg.extend_from_slice(&buf[..n as usize]);
    }
    String::from_utf8_lossy(&msg).to_string()
}

/// A GPU node of the topology.
#[derive(Clone, Debug)]
struct Gpu {
    gpu_id: u32,
    gfx_target_version: u32,
    /// `array_count / simd_arrays_per_engine`.
    shader_engines: u32,
    /// `array_count`.
    shader_arrays: u32,
}

fn gpus() -> Result<Vec<Gpu>, String> {
    let base = "/sys/class/kfd/kfd/topology/nodes";
    let mut out = Vec::new();
    for e in fs::read_dir(base).map_err(|e| format!("{base}: {e}"))? {
        let path = e.map_err(|e| e.to_string())?.path();
        let id: u32 = read(format!("{}/gpu_id", path.display()))?.parse().unwrap_or(0);
        if id == 0 {
            continue;
        }
        let props = read(format!("{}/properties", path.display()))?;
        let prop = |k: &str| -> u32 {
            props
                .lines()
                .find_map(|l| l.strip_prefix(k).and_then(|v| v.strip_prefix(' ')))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        let arrays = prop("array_count");
        let per_engine = prop("simd_arrays_per_engine").max(1);
        out.push(Gpu {
            gpu_id: id,
            gfx_target_version: prop("gfx_target_version"),
            shader_engines: arrays / per_engine,
            shader_arrays: arrays,
        });
    }
    out.sort_by_key(|g| g.gpu_id);
    Ok(out)
}

/// Binds `gpu_id` to whichever of our render nodes ACQUIRE_VM accepts.
fn acquire(k: &Kfd, gpu_id: u32) -> Result<Fd, String> {
    let mut minors: Vec<String> = fs::read_dir("/dev/dri")
        .map_err(|e| format!("/dev/dri: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
        .filter(|n| n.starts_with("renderD"))
        .collect();
    minors.sort();
    for n in minors {
        let fd = Fd::open(&format!("/dev/dri/{n}"))?;
        let mut a = uapi::kfd_ioctl_acquire_vm_args { drm_fd: fd.0 as u32, gpu_id };
        if k.ioctl(uapi::AMDKFD_IOC_ACQUIRE_VM, &mut a).is_ok() {
            return Ok(fd);
        }
    }
    Err(format!("gpu {gpu_id}: no render node accepted"))
}

fn open_kfd() -> Result<Kfd, String> {
    Kfd::open().map_err(|e| format!("open /dev/kfd: {e}"))
}

fn my_sysfs_pasid() -> Result<u32, String> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    read(format!("/sys/class/kfd/kfd/proc/{pid}/pasid"))?
        .parse()
        .map_err(|e| format!("pasid: {e}"))
}

fn debugfs_pasid(gpu_id: u32) -> Result<u32, String> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    read(format!("{DEBUGFS}/proc/{pid}/pasid_{gpu_id}"))?
        .parse()
        .map_err(|e| format!("pasid_{gpu_id}: {e}"))
}

// ---------------------------------------------------------------------------
// PASIDs and debugfs.

/// Non-zero, distinct across live processes and across one process's GPUs;
/// `pasid_<gpu_id>` shows it once the device is bound (0 before, as
/// upstream's pdd->pasid).
fn pasids(gpus: &[Gpu]) -> Check {
    in_child(CHILD_SECS, || {
        let k = open_kfd()?;
        // sysfs prints 0 as upstream 7.3 (per-VM PASIDs); debugfs has them.
        ensure_eq(my_sysfs_pasid()?, 0, "proc/<pid>/pasid")?;
        let g = &gpus[0];
        ensure_eq(debugfs_pasid(g.gpu_id)?, 0, "pasid_<gpu> before ACQUIRE_VM")?;
        let _r = acquire(&k, g.gpu_id)?;
        let mine = debugfs_pasid(g.gpu_id)?;
        ensure(mine != 0 && mine < 1 << 16, format!("pasid {mine}"))?;
        // Issue #15: the PASIDs are the GPU driver's, one per VM from one
        // table for all its GPUs: this process has a different one on each.
        let mut held = Vec::new();
        let mut seen = vec![mine];
        for o in &gpus[1..] {
            held.push(acquire(&k, o.gpu_id)?);
            let p = debugfs_pasid(o.gpu_id)?;
            ensure(p != 0 && p < 1 << 16 && !seen.contains(&p), format!("pasid_{} = {p}, this process's others {seen:?}", o.gpu_id))?;
            seen.push(p);
        }
        // A second process at the same time has another one.
        let mut fds = [0i32; 2];
        // SAFETY: Room for two descriptors.
        ensure(unsafe { libc::pipe(fds.as_mut_ptr()) } == 0, "pipe")?;
        // SAFETY: The child only reports its PASID and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let msg = match open_kfd().and_then(|k| {
                let _r = acquire(&k, g.gpu_id)?;
                debugfs_pasid(g.gpu_id)
            }) {
                Ok(p) => p.to_string(),
                Err(e) => e,
            };
            // SAFETY: Writing our buffer to our pipe; exiting.
            unsafe {
                libc::write(fds[1], msg.as_ptr().cast(), msg.len());
                libc::_exit(0);
            }
        }
        // SAFETY: Our write end.
        unsafe { libc::close(fds[1]) };
        let other = read_all(fds[0]);
        // SAFETY: Our read end and child.
        unsafe {
            libc::close(fds[0]);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        let other: u32 = other.parse().map_err(|_| format!("child: {other}"))?;
        ensure(other != 0 && other != mine, format!("pasids {mine} and {other}"))
    })
}

fn debugfs_files(gpus: &[Gpu]) -> Check {
    ensure_debugfs()?;
    let limit = read(format!("{DEBUGFS}/mem_limit"))?;
    let lines: Vec<&str> = limit.lines().collect();
    ensure_eq(lines.len(), 2, "mem_limit lines")?;
    for (line, what) in lines.iter().zip(["System", "TTM"]) {
        let rest = line
            .strip_prefix(&format!("{what} mem used "))
            .ok_or(format!("mem_limit: {line:?}"))?;
        let (used, limit) = rest.split_once("M out of ").ok_or(format!("mem_limit: {line:?}"))?;
        let used: u64 = used.parse().map_err(|_| format!("mem_limit: {line:?}"))?;
        let limit: u64 = limit.strip_suffix('M').and_then(|l| l.parse().ok()).ok_or(format!("{line:?}"))?;
        ensure(limit > 0 && used <= limit, format!("mem_limit: {line:?}"))?;
    }
    // A process's directory exists while it has /dev/kfd open, one pasid
    // file per GPU and the SVM range dump, and goes when it closes.
    in_child(CHILD_SECS, || {
        let _k = open_kfd()?;
        // SAFETY: getpid has no preconditions.
        let dir = format!("{DEBUGFS}/proc/{}", unsafe { libc::getpid() });
        let mut names: Vec<String> = fs::read_dir(&dir)
            .map_err(|e| format!("{dir}: {e}"))?
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
            .collect();
        names.sort();
        let mut want: Vec<String> = gpus.iter().map(|g| format!("pasid_{}", g.gpu_id)).collect();
        want.push("svm_ranges".into());
        want.sort();
        ensure_eq(names, want, "debugfs proc files")
    })?;
    let left = fs::read_dir(format!("{DEBUGFS}/proc")).map_err(|e| e.to_string())?.count();
    ensure_eq(left, 0, "kfd/proc entries after every process closed")
}

// ---------------------------------------------------------------------------
// /dev/kfd mmap.

fn doorbell_mmap(gpus: &[Gpu]) -> Check {
    in_child(CHILD_SECS, || {
        let k = open_kfd()?;
        let g = gpus[0].gpu_id;
        // Before ACQUIRE_VM the doorbells do not exist yet.
        expect_errno(Map::kfd(&k, kfd_off(TYPE_DOORBELL, g), DOORBELL_SLICE), libc::ENODEV, "before ACQUIRE_VM")?;
        let _r = acquire(&k, g)?;
        let a = ok(Map::kfd(&k, kfd_off(TYPE_DOORBELL, g), DOORBELL_SLICE), "doorbell mmap")?;
        // A second view (a queue's doorbell offset in the low bits is
        // ignored, as upstream) shares the pages.
        let b = ok(Map::kfd(&k, kfd_off(TYPE_DOORBELL, g) | 0x1000, DOORBELL_SLICE), "second doorbell mmap")?;
        ensure_eq(a.read_u64(0), 0, "fresh doorbell")?;
        for (off, v) in [(0usize, 0x1111u64), (8, 0x2222), (DOORBELL_SLICE - 8, u64::MAX)] {
            a.write_u64(off, v);
            ensure_eq(b.read_u64(off), v, &format!("doorbell {off:#x} through the other view"))?;
        }
        // Exactly one slice.
        for len in [PAGE, 3 * PAGE, 4 * PAGE] {
            expect_errno(Map::kfd(&k, kfd_off(TYPE_DOORBELL, g), len), libc::EINVAL, &format!("doorbell len {len}"))?;
        }
        // A gpu_id the process does not have.
        let unknown = (1..0xffffu32).find(|id| gpus.iter().all(|x| x.gpu_id != *id)).unwrap_or(0);
        expect_errno(Map::kfd(&k, kfd_off(TYPE_DOORBELL, unknown), DOORBELL_SLICE), libc::ENODEV, "unknown gpu_id")?;
        expect_errno(Map::kfd(&k, kfd_off(0, unknown), PAGE), libc::ENODEV, "MMIO of an unknown gpu_id")?;
        // Types upstream no longer serves.
        expect_errno(Map::kfd(&k, kfd_off(TYPE_EVENTS, g), PAGE), libc::EINVAL, "EVENTS")?;
        expect_errno(Map::kfd(&k, kfd_off(TYPE_RESERVED_MEM, g), PAGE), libc::EINVAL, "RESERVED_MEM")?;
        // A forked child may not map through the parent's file.
        let fd = k.fd;
        in_child(CHILD_SECS, move || {
            // SAFETY: `fd` is inherited and open.
            let r = Map::new(fd, kfd_off(TYPE_DOORBELL, g), DOORBELL_SLICE, libc::PROT_READ, libc::MAP_SHARED);
            expect_errno(r, libc::EBADF, "doorbell mmap from a forked child")
        })?;
        drop(b);
        ensure_eq(a.read_u64(8), 0x2222, "doorbell after the other view is gone")
    })
}

/// Each GPU's doorbells are its own pages; a fresh process gets fresh ones.
fn doorbells_per_gpu_and_process(gpus: &[Gpu]) -> Check {
    in_child(CHILD_SECS, || {
        let k = open_kfd()?;
        let mut maps = Vec::new();
        let mut fds = Vec::new();
        for g in gpus {
            fds.push(acquire(&k, g.gpu_id)?);
            maps.push(ok(Map::kfd(&k, kfd_off(TYPE_DOORBELL, g.gpu_id), DOORBELL_SLICE), "doorbell mmap")?);
        }
        for (i, m) in maps.iter().enumerate() {
            m.write_u64(16, 0x100 + i as u64);
        }
        for (i, m) in maps.iter().enumerate() {
            ensure_eq(m.read_u64(16), 0x100 + i as u64, &format!("doorbell of gpu {i}"))?;
        }
        Ok(())
    })?;
    // The next process's doorbells start at zero.
    in_child(CHILD_SECS, || {
        let k = open_kfd()?;
        let g = gpus[0].gpu_id;
        let _r = acquire(&k, g)?;
        let m = ok(Map::kfd(&k, kfd_off(TYPE_DOORBELL, g), DOORBELL_SLICE), "doorbell mmap")?;
        ensure_eq(m.read_u64(16), 0, "a new process's doorbell")
    })
}

fn mmio_mmap(gpus: &[Gpu]) -> Check {
    in_child(CHILD_SECS, || {
        let k = open_kfd()?;
        for g in gpus {
            // One page, no VM needed (the remap page is the device's).
            let m = ok(Map::kfd(&k, kfd_off(0, g.gpu_id), PAGE), "MMIO mmap")?;
            m.write_u64(0, 1); // An HDP flush: harmless.
            expect_errno(Map::kfd(&k, kfd_off(0, g.gpu_id), 2 * PAGE), libc::EINVAL, "MMIO two pages")?;
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------
// DOORBELL, MMIO_REMAP and USERPTR objects.

const DOORBELL: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
    | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
    | uapi::KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
const MMIO: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP
    | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
    | uapi::KFD_IOC_ALLOC_MEM_FLAGS_COHERENT
    | uapi::KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE;
const USERPTR: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
const GTT: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;

fn doorbell_and_mmio_objects(gpus: &[Gpu]) -> Check {
    in_child(CHILD_SECS, || {
        let k = open_kfd()?;
        let mut fds = Vec::new();
        for (i, g) in gpus.iter().enumerate() {
            let id = g.gpu_id;
            let va = 0x10_0000_0000u64 + ((i as u64) << 30);
            expect_errno(alloc(k.fd, id, va, PAGE as u64, DOORBELL, 0), libc::ENODEV, "DOORBELL before ACQUIRE_VM")?;
            fds.push(acquire(&k, id)?);
            expect_errno(alloc(k.fd, id, va, PAGE as u64, DOORBELL, 0), libc::EINVAL, "DOORBELL of one page")?;
            expect_errno(alloc(k.fd, id, va, 4 * PAGE as u64, DOORBELL, 0), libc::EINVAL, "DOORBELL of 4 pages")?;
            expect_errno(alloc(k.fd, id, va, 2 * PAGE as u64, MMIO, 0), libc::EINVAL, "MMIO_REMAP of 2 pages")?;
            let (d, doff) = ok(alloc(k.fd, id, va, DOORBELL_SLICE as u64, DOORBELL, 0), "DOORBELL")?;
            ensure_eq(doff, kfd_off(TYPE_DOORBELL, id), "DOORBELL mmap_offset")?;
            let (m, moff) = ok(alloc(k.fd, id, va + 0x10_0000, PAGE as u64, MMIO, 0), "MMIO_REMAP")?;
            ensure_eq(moff, kfd_off(0, id), "MMIO_REMAP mmap_offset")?;
            ensure_eq(d >> 32, u64::from(id), "handle's gpu_id")?;
            // Mapped to the GPU like other objects, and by the CPU at the
            // offsets returned.
            ensure_eq(ok(map(k.fd, d, id, true), "MAP doorbell")?, 1, "n_success")?;
            ensure_eq(ok(map(k.fd, m, id, true), "MAP mmio")?, 1, "n_success")?;
            let dm = ok(Map::kfd(&k, doff, DOORBELL_SLICE), "mmap DOORBELL offset")?;
            let mm = ok(Map::kfd(&k, moff, PAGE), "mmap MMIO_REMAP offset")?;
            dm.write_u64(0, 7);
            ensure_eq(dm.read_u64(0), 7, "doorbell write")?;
            drop((dm, mm));
            let mut fa = uapi::kfd_ioctl_free_memory_of_gpu_args { handle: d };
            expect_errno(k.ioctl(uapi::AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut fa), libc::EBUSY, "FREE while mapped")?;
            ok(map(k.fd, d, id, false), "UNMAP doorbell")?;
            ok(map(k.fd, m, id, false), "UNMAP mmio")?;
            expect_ok(free(k.fd, d), "FREE")?;
            expect_ok(free(k.fd, m), "FREE")?;
        }
        Ok(())
    })
}

fn mem_info_userptr_kib() -> Result<u64, String> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let s = read(format!("/sys/class/kfd/kfd/proc/{pid}/mem_info"))?;
    s.lines()
        .find_map(|l| l.strip_prefix("userptr_allocated ").and_then(|v| v.parse().ok()))
        .ok_or(format!("mem_info: {s:?}"))
}

fn userptr_pins(gpus: &[Gpu]) -> Check {
    in_child(CHILD_SECS, || {
        let k = open_kfd()?;
        let g = gpus[0].gpu_id;
        let _r = acquire(&k, g)?;
        let va = 0x20_0000_0000u64;
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        // Nine pages, the last unmapped again: a known hole after eight.
        let mem = Map::anon(9 * PAGE, rw)?;
        mem.punch(8 * PAGE, PAGE)?;
        let base = mem.addr as u64;
        mem.write_u64(0, 0xfeed);
        // (The returned mmap_offset is the GPU driver's, as upstream's
        // amdgpu_bo_mmap_offset; the CPU keeps using its own mapping.)
        let (h, _) = ok(alloc(k.fd, g, va, 4 * PAGE as u64, USERPTR, base), "USERPTR")?;
        ensure_eq(mem_info_userptr_kib()?, 16, "userptr_allocated (KiB)")?;
        ok(map(k.fd, h, g, true), "MAP USERPTR")?;
        // The memory stays the process's: CPU access is unchanged.
        ensure_eq(mem.read_u64(0), 0xfeed, "CPU view of pinned memory")?;
        mem.write_u64(8, 0xbeef);
        ensure_eq(mem.read_u64(8), 0xbeef, "CPU write to pinned memory")?;
        ok(map(k.fd, h, g, false), "UNMAP USERPTR")?;
        expect_ok(free(k.fd, h), "FREE")?;
        ensure_eq(mem_info_userptr_kib()?, 0, "userptr_allocated after FREE")?;
        // Holes: past the end, in the middle, nothing mapped; read-only.
        expect_errno(alloc(k.fd, g, va, 9 * PAGE as u64, USERPTR, base), libc::EFAULT, "range past the mapping")?;
        mem.punch(4 * PAGE, PAGE)?;
        expect_errno(alloc(k.fd, g, va, 8 * PAGE as u64, USERPTR, base), libc::EFAULT, "range with a hole")?;
        expect_errno(alloc(k.fd, g, va, PAGE as u64, USERPTR, base + 4 * PAGE as u64), libc::EFAULT, "unmapped page")?;
        let ro = Map::anon(PAGE, libc::PROT_READ)?;
        expect_errno(alloc(k.fd, g, va, PAGE as u64, USERPTR, ro.addr as u64), libc::EFAULT, "read-only memory")?;
        expect_errno(alloc(k.fd, g, va, PAGE as u64, USERPTR, 0), libc::EINVAL, "user address 0")?;
        ensure_eq(mem_info_userptr_kib()?, 0, "userptr_allocated after failures")?;
        // The part before the hole still works; left for teardown.
        ok(alloc(k.fd, g, va, 4 * PAGE as u64, USERPTR, base), "USERPTR before the hole")?;
        Ok(())
    })
}

/// `/proc/vmstat`'s `oom_kill`: processes the OOM killer has killed.
fn oom_kills() -> Result<u64, String> {
    read("/proc/vmstat")?
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill ").and_then(|v| v.trim().parse().ok()))
        .ok_or_else(|| "/proc/vmstat: no oom_kill".into())
}

/// `MemTotal` of `/proc/meminfo`, bytes.
fn mem_total() -> Result<u64, String> {
    read("/proc/meminfo")?
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:").and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok()))
        .map(|kib| kib << 10)
        .ok_or_else(|| "/proc/meminfo: no MemTotal".into())
}

/// ALLOC + MAP + UNMAP + FREE of a `size`-byte GTT or user-pointer
/// (`user`) buffer: whether the driver accepted it; any refusal but
/// ENOMEM is an error.
fn try_system_buffer(k: &Kfd, gpu: u32, size: u64, user: bool) -> Result<bool, String> {
    let what = if user { "USERPTR" } else { "GTT" };
    // The memory a user pointer names: reserved lazily, as malloc's.
    let mem = if user {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
        Some(
            Map::new(-1, 0, size as usize, libc::PROT_READ | libc::PROT_WRITE, flags)
                .map_err(|e| format!("anonymous mmap of {size}: {}", errno_name(e)))?,
        )
    } else {
        None
    };
    let addr = mem.as_ref().map_or(0, |m| m.addr as u64);
    let flags = if user { USERPTR } else { GTT };
    let r = alloc(k.fd, gpu, 0x40_0000_0000, size, flags, addr).and_then(|(h, _)| match map(k.fd, h, gpu, true) {
        Ok(_) => Ok(h),
        Err(e) => {
            let _ = free(k.fd, h);
            Err(e)
        }
    });
    match r {
        Ok(h) => {
            expect_ok(map(k.fd, h, gpu, false), "UNMAP")?;
            expect_ok(free(k.fd, h), "FREE")?;
            Ok(true)
        }
        Err(libc::ENOMEM) => Ok(false),
        Err(e) => Err(format!("{what} of {size} bytes: {}, want ENOMEM", errno_name(e))),
    }
}

/// KFDTest's `LargestSysBufferTest`: the largest GTT or user-pointer
/// (`user`) buffer ALLOC + MAP accept, searched between 0 and all RAM in
/// 32 MiB steps (halving on failure, as a bisection does), so that sizes
/// right at the driver's limits are tried.  Every refusal must be ENOMEM
/// (upstream `amdgpu_amdkfd_reserve_mem_limit`), never a process killed for
/// memory the driver accepted but the system cannot back.  The size found
/// (at least 64 MiB).
fn largest_system_buffer(gpu: u32, user: bool) -> Result<u64, String> {
    const STEP: u64 = 32 << 20;
    let k = open_kfd()?;
    let _r = acquire(&k, gpu)?;
    let (mut low, mut high) = (0u64, mem_total()? / STEP);
    while high - low > 1 {
        let mid = (low + high) / 2;
        if try_system_buffer(&k, gpu, mid * STEP, user)? {
            low = mid;
        } else {
            high = mid;
        }
    }
    ensure(low * STEP >= 64 << 20, format!("largest buffer {} MiB", low * STEP >> 20))?;
    Ok(low * STEP)
}

fn largest_system_buffers(gpus: &[Gpu]) -> Check {
    let kills = oom_kills()?;
    for user in [false, true] {
        in_child(CHILD_SECS, || {
            let size = largest_system_buffer(gpus[0].gpu_id, user)?;
            println!("# largest {}: {} MiB", if user { "USERPTR" } else { "GTT" }, size >> 20);
            Ok(())
        })
            .map_err(|e| format!("{} search: {e}", if user { "USERPTR" } else { "GTT" }))?;
    }
    ensure_eq(oom_kills()?, kills, "processes the OOM killer killed during the searches")
}

/// A process that exits with everything allocated, mapped and mmapped
/// leaves the system memory accounts as they were.
fn exit_without_freeing(gpus: &[Gpu]) -> Check {
    ensure_debugfs()?;
    let before = read(format!("{DEBUGFS}/mem_limit"))?;
    in_child(CHILD_SECS, || {
        let k = open_kfd()?;
        let mut keep = Vec::new();
        for (i, g) in gpus.iter().enumerate() {
            let id = g.gpu_id;
            keep.push(acquire(&k, id)?);
            let va = 0x30_0000_0000u64 + ((i as u64) << 32);
            let mem = Map::anon(1024 * PAGE, libc::PROT_READ | libc::PROT_WRITE)?;
            let (u, _) = ok(alloc(k.fd, id, va, 1024 * PAGE as u64, USERPTR, mem.addr as u64), "USERPTR")?;
            ok(map(k.fd, u, id, true), "MAP")?;
            let (d, doff) = ok(alloc(k.fd, id, va + (1 << 30), DOORBELL_SLICE as u64, DOORBELL, 0), "DOORBELL")?;
            ok(map(k.fd, d, id, true), "MAP")?;
            let db = ok(Map::kfd(&k, doff, DOORBELL_SLICE), "doorbell mmap")?;
            db.write_u64(0, 1);
            std::mem::forget(db);
            std::mem::forget(mem);
        }
        // SAFETY: Exiting without cleanup is the point.
        unsafe { libc::_exit(0) }
    })?;
    ensure_eq(read(format!("{DEBUGFS}/mem_limit"))?, before, "mem_limit after the process exited")
}

// ---------------------------------------------------------------------------
// GET_TILE_CONFIG.

/// What amdgpu reports for GB_ADDR_CONFIG on this virtual part: the
/// register layout of gc_9_4_2 / gc_10_3_0 / gc_11_0_0 filled with the
/// topology's shader-engine and shader-array counts (see the virtual GPU's
/// profile.rs for the field choices).
fn expected_gb_addr_config(g: &Gpu) -> u32 {
    let log2 = |x: u32| if x <= 1 { 0 } else { 31 - x.leading_zeros() };
    let fields = (log2(g.shader_engines) & 3) << 19;
    if g.gfx_target_version < 100000 {
        0x2201_4042 | fields
    } else {
        2 | 3 << 6 | (log2(g.shader_arrays) & 7) << 8 | fields
    }
}

fn tile_config(gpus: &[Gpu]) -> Check {
    in_child(CHILD_SECS, || {
        let k = open_kfd()?;
        for g in gpus {
            let mut tiles = [0xffff_ffffu32; 40];
            let mut macros = [0xffff_ffffu32; 20];
            let mut a = uapi::kfd_ioctl_get_tile_config_args {
                tile_config_ptr: tiles.as_mut_ptr() as u64,
                macro_tile_config_ptr: macros.as_mut_ptr() as u64,
                num_tile_configs: 40,
                num_macro_tile_configs: 20,
                gpu_id: g.gpu_id,
                ..Default::default()
            };
            ok(k.ioctl(uapi::AMDKFD_IOC_GET_TILE_CONFIG, &mut a), "GET_TILE_CONFIG")?;
            ensure_eq((a.num_tile_configs, a.num_macro_tile_configs), (32, 16), "counts clamped to amdgpu's")?;
            ensure(tiles[..32].iter().all(|&t| t == 0), "tile modes are zero on GFX9+")?;
            ensure(tiles[32..].iter().all(|&t| t == 0xffff_ffff), "past the count untouched")?;
            ensure(macros[..16].iter().all(|&t| t == 0), "macro tile modes are zero")?;
            ensure(macros[16..].iter().all(|&t| t == 0xffff_ffff), "past the macro count untouched")?;
            ensure_eq((a.num_banks, a.num_ranks), (0, 0), "banks, ranks (not set from GFX9 on)")?;
            ensure_eq(a.gb_addr_config, expected_gb_addr_config(g), &format!("gb_addr_config of gfx {}", g.gfx_target_version))?;
            // Smaller user arrays: only that much is written.
            let mut small = [0xffff_ffffu32; 4];
            a.tile_config_ptr = small.as_mut_ptr() as u64;
            a.num_tile_configs = 2;
            a.num_macro_tile_configs = 0;
            a.macro_tile_config_ptr = 8; // Never touched with a count of 0.
            ok(k.ioctl(uapi::AMDKFD_IOC_GET_TILE_CONFIG, &mut a), "small GET_TILE_CONFIG")?;
            ensure_eq(small, [0, 0, 0xffff_ffff, 0xffff_ffff], "two words written")?;
            // A bad array: EFAULT, count 0.
            a.tile_config_ptr = 8;
            a.num_tile_configs = 4;
            expect_errno(k.ioctl(uapi::AMDKFD_IOC_GET_TILE_CONFIG, &mut a), libc::EFAULT, "bad tile array")?;
            ensure_eq(a.num_tile_configs, 0, "count after EFAULT")?;
        }
        let mut a = uapi::kfd_ioctl_get_tile_config_args { gpu_id: 0x1_0000, ..Default::default() };
        expect_errno(k.ioctl(uapi::AMDKFD_IOC_GET_TILE_CONFIG, &mut a), libc::EINVAL, "unknown gpu_id")
    })
}

/// Seeded random `/dev/kfd` mmaps (type, gpu_id, low bits, length,
/// protection, sharing), with and without bound VMs: each maps (and then
/// holds what is written to it) or fails with a clear errno.
fn mmap_offsets_fuzz(gpus: &[Gpu]) -> Check {
    let seed = std::env::var("KFD_MEM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x6b66_6d6du64);
    println!("# mmap fuzz seed {seed}");
    in_child(CHILD_SECS, || {
        let k = open_kfd()?;
        let mut rng = seed;
        let mut bound = Vec::new();
        let (mut mapped, mut failed) = (0u32, 0u32);
        for round in 0..3000u32 {
            let mut r = || splitmix64(&mut rng);
            if round == 1000 {
                // From here on the first GPU has a VM (its doorbells exist).
                bound.push(acquire(&k, gpus[0].gpu_id)?);
            }
            let kind = [TYPE_DOORBELL, TYPE_EVENTS, TYPE_RESERVED_MEM, 0][(r() % 4) as usize];
            let gpu_id = match r() % 4 {
                0 => (r() % 0x1_0000) as u32,
                1 => 0,
                _ => gpus[(r() % gpus.len() as u64) as usize].gpu_id,
            };
            let low = match r() % 3 {
                0 => 0,
                1 => (r() % 0x2000) & !0xfff,
                _ => (r() & ((1 << GPU_ID_SHIFT) - 1)) & !0xfff,
            };
            let len = [1usize, PAGE, 2 * PAGE, DOORBELL_SLICE, 3 * PAGE, 16 * PAGE][(r() % 6) as usize];
            let prot = [libc::PROT_READ, libc::PROT_READ | libc::PROT_WRITE, libc::PROT_NONE][(r() % 3) as usize];
            let flags = if r() % 4 == 0 { libc::MAP_PRIVATE } else { libc::MAP_SHARED };
            let off = kind | (u64::from(gpu_id) << GPU_ID_SHIFT) | low;
            match Map::new(k.fd, off, len, prot, flags) {
                Ok(m) => {
                    mapped += 1;
                    // (A 1-byte request maps a page; touch only what was asked.)
                    if len >= 8 && prot & libc::PROT_WRITE != 0 {
                        let v = r();
                        m.write_u64(0, v);
                        ensure_eq(m.read_u64(0), v, &format!("round {round}: write through {off:#x}"))?;
                    } else if len >= 8 && prot & libc::PROT_READ != 0 {
                        let _ = m.read_u64(0);
                    }
                }
                Err(e) if [libc::EINVAL, libc::ENODEV, libc::EOVERFLOW, libc::ENOMEM, libc::EACCES].contains(&e) => {
                    failed += 1
                }
                Err(e) => {
                    return Err(format!(
                        "round {round}: mmap({off:#x}, {len}, prot {prot}, flags {flags:#x}): {}",
                        errno_name(e)
                    ))
                }
            }
        }
        println!("# mmap fuzz: {mapped} mapped, {failed} refused");
        ensure(mapped > 0 && failed > 0, "both outcomes seen")
    })
}

fn main() {
    let mut h = Harness::new();
    let gpus = match gpus() {
        Ok(g) if !g.is_empty() => g,
        Ok(_) => {
            println!("not ok 1 - topology: no GPU");
            std::process::exit(1);
        }
        Err(e) => {
            println!("not ok 1 - topology: {e}");
            std::process::exit(1);
        }
    };
    h.run("pasid: non-zero, distinct per process and GPU, debugfs pasid_<gpu> after ACQUIRE_VM", || pasids(&gpus));
    h.run("debugfs: mem_limit format, proc/<pid>/pasid_<gpu> per GPU, removed at close", || debugfs_files(&gpus));
    h.run("mmap: own doorbells (shared views, sizes, gpu_ids, types, forked child)", || doorbell_mmap(&gpus));
    h.run("mmap: doorbells per GPU and per process", || doorbells_per_gpu_and_process(&gpus));
    h.run("mmap: MMIO remap page", || mmio_mmap(&gpus));
    h.run("alloc: DOORBELL and MMIO_REMAP objects", || doorbell_and_mmio_objects(&gpus));
    h.run("alloc: USERPTR pins, EFAULT for holes and read-only memory", || userptr_pins(&gpus));
    h.run("teardown: exit without freeing leaves the accounts as they were", || exit_without_freeing(&gpus));
    h.run("alloc: the largest GTT and USERPTR buffers: ENOMEM past them, nothing killed", || largest_system_buffers(&gpus));
    h.run("GET_TILE_CONFIG: gb_addr_config, zero tables clamped, EFAULT", || tile_config(&gpus));
    h.run("mmap: seeded random /dev/kfd offsets map or fail cleanly", || mmap_offsets_fuzz(&gpus));
    std::process::exit(h.finish("kfd-mem-tests"));
}
