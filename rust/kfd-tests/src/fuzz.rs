// SPDX-License-Identifier: GPL-2.0
//! Shared pieces of the reliability harness (`kfd-fuzz`, `kfd-storm`,
//! `kfd-race`): the errno whitelist, GPU and render-node discovery, a fixed
//! "fuzz zone" of user memory whose every pointer is safe to hand to the
//! kernel, hostile values, CPU mappings of memory objects and fd sweeping.
//!
//! The PRNG ([`crate::rng`]), the /dev/kmsg watcher ([`crate::kmsg`]), the
//! option parser and the stdout/stack helpers ([`crate::harness`]) and the
//! fd plumbing ([`crate::ops`]) live in their own modules; they are
//! re-exported here under the names the programs have always used.

use crate::kfd::{ioctl_fd, Kfd};
use kfd_uapi as uapi;

pub use crate::harness::{flush, kernel_stacks, Args};
/// The old name of [`crate::kfd::errno_name`] (which now knows every errno
/// this one did).
pub use crate::kfd::errno_name as errno_str;
pub use crate::kmsg::{KmsgWatch, BAD_KMSG};
pub use crate::ops::{acquire_vm, close};
pub use crate::rng::{parse_u64, random_seed, splitmix64, Rng};

// ---------------------------------------------------------------------------
// Errnos.

/// The errnos a KFD ioctl may legitimately answer to hostile input ("clear
/// errnos").  Anything else (EIO, ENXIO, ENOSYS, EOVERFLOW, ERANGE, …, or a
/// negative number that is not an errno at all) means the driver leaked an
/// internal error or took a path nobody designed, and is a failure.
///
/// Each one is returned by upstream amdkfd for a user-caused condition:
/// EPERM (capability, deprecated ioctls, signal page), ENOENT (no such
/// object), ESRCH (not bound to a VM / no such process), EINTR (signal
/// during a wait), EBADF (fd not usable by the caller, not a DRM/dma-buf fd),
/// EAGAIN (restartable), ENOMEM (counts too big to allocate, VRAM exhausted),
/// EACCES (CRIU without capability), EFAULT (bad user pointer), EBUSY (VM
/// already acquired, object mapped, profiler locked), EEXIST (runtime already
/// enabled with queues), ENODEV (device not bound / gone), EINVAL (bad
/// argument), ENOSPC (out of ids / doorbells), ENOTTY (unknown command),
/// E2BIG (array larger than the kernel's limit), EOPNOTSUPP (feature not
/// present), EADDRINUSE (SVM overlap), EOVERFLOW (SVM range end wraps
/// around), ETIME/ETIMEDOUT (wait timed out),
/// ERESTARTSYS is never seen by user space.
pub const CLEAR_ERRNOS: &[i32] = &[
    libc::EPERM,
    libc::ENOENT,
    libc::ESRCH,
    libc::EINTR,
    libc::EBADF,
    libc::EAGAIN,
    libc::ENOMEM,
    libc::EACCES,
    libc::EFAULT,
    libc::EBUSY,
    libc::EEXIST,
    libc::ENODEV,
    libc::EINVAL,
    libc::ENOSPC,
    libc::ENOTTY,
    libc::E2BIG,
    libc::EOPNOTSUPP,
    libc::EADDRINUSE,
    libc::EOVERFLOW,
    libc::ETIME,
    libc::ETIMEDOUT,
    // ENOTSUPP (kernel-internal 524): CREATE_QUEUE's unknown queue type, as upstream.
    524,
];

pub fn is_clear_errno(e: i32) -> bool {
    CLEAR_ERRNOS.contains(&e)
}

/// [`is_clear_errno`] for command number `nr`: WAIT_EVENTS may also answer
/// EIO (`KFD_IOC_WAIT_RESULT_FAIL`: an event was destroyed during the wait).
pub fn is_clear_errno_for(nr: u32, e: i32) -> bool {
    is_clear_errno(e) || (nr == 0x0c && e == libc::EIO)
}

/// Smallest signal page: KFD_SIGNAL_EVENT_LIMIT slots of 8 bytes.
pub const SIGNAL_PAGE_SIZE: u64 = 4096 * 8;

// ---------------------------------------------------------------------------
// GPUs.

/// What the harness knows of the machine's GPUs.
#[derive(Clone, Debug, Default)]
pub struct Gpus {
    /// gpu_ids: topology nodes with a non-zero gpu_id, then any others rkfd
    /// reports through GET_PROCESS_APERTURES_NEW.
    pub ids: Vec<u32>,
    /// /dev/dri/renderD* paths.
    pub render_nodes: Vec<String>,
}

/// gpu_ids from /sys/devices/virtual/kfd/kfd/topology/nodes/*/gpu_id.
pub fn topology_gpu_ids() -> Vec<u32> {
    let mut ids = Vec::new();
    let Ok(rd) = std::fs::read_dir("/sys/devices/virtual/kfd/kfd/topology/nodes") else {
        return ids;
    };
    let mut nodes: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    nodes.sort();
    for n in nodes {
        if let Ok(s) = std::fs::read_to_string(n.join("gpu_id")) {
            if let Ok(id) = s.trim().parse::<u32>() {
                if id != 0 && !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
    }
    ids
}

/// gpu_ids rkfd reports for this process (GET_PROCESS_APERTURES_NEW).
pub fn aperture_gpu_ids(k: &Kfd) -> Vec<u32> {
    aperture_gpu_ids_fd(k.fd)
}

pub fn aperture_gpu_ids_fd(fd: i32) -> Vec<u32> {
    let cmd = uapi::AMDKFD_IOC_GET_PROCESS_APERTURES_NEW;
    let mut args = uapi::kfd_ioctl_get_process_apertures_new_args::default();
    if ioctl_fd(fd, cmd, &mut args as *mut _ as usize).is_err() || args.num_of_nodes == 0 {
        return Vec::new();
    }
    let n = args.num_of_nodes.min(64) as usize;
    let mut ap = vec![uapi::kfd_process_device_apertures::default(); n];
    args.num_of_nodes = n as u32;
    args.kfd_process_device_apertures_ptr = ap.as_mut_ptr() as u64;
    if ioctl_fd(fd, cmd, &mut args as *mut _ as usize).is_err() {
        return Vec::new();
    }
    ap.iter().take(args.num_of_nodes.min(n as u32) as usize).map(|a| a.gpu_id).collect()
}

pub fn render_nodes() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/dev/dri")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with("renderD"))
                .map(|n| format!("/dev/dri/{n}"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn discover_gpus(k: &Kfd) -> Gpus {
    let mut ids = topology_gpu_ids();
    for id in aperture_gpu_ids(k) {
        if id != 0 && !ids.contains(&id) {
            ids.push(id);
        }
    }
    Gpus { ids, render_nodes: render_nodes() }
}

pub fn get_version(fd: i32) -> Result<(u32, u32), i32> {
    let mut v = uapi::kfd_ioctl_get_version_args::default();
    ioctl_fd(fd, uapi::AMDKFD_IOC_GET_VERSION, &mut v as *mut _ as usize)?;
    Ok((v.major_version, v.minor_version))
}

// ---------------------------------------------------------------------------
// The fuzz zone: fixed addresses far from everything the process maps on its
// own (heap, libraries, stacks live near 0x55.. and 0x7f..).  Whatever the
// kernel writes through a pointer from here can only land in scratch memory
// or fault; nothing else is ever mapped inside the zone, so the "unmapped"
// addresses stay unmapped.

pub const PAGE: usize = 4096;
/// Base of the zone (32 TiB).
pub const ZONE: usize = 0x2000_0000_0000;
/// Never mapped: 1 MiB at the base.
pub const HOLE: usize = ZONE;
/// Size of a scratch region.
pub const REGION: usize = 64 * 1024;
/// The ioctl argument region.
pub const ARG: usize = ZONE + 0x10_0000;
/// Regions for buffers that arguments point to.
pub const SUB: [usize; 3] = [ZONE + 0x20_0000, ZONE + 0x30_0000, ZONE + 0x40_0000];
/// One read-only page.
pub const RO: usize = ZONE + 0x50_0000;
/// One read-write page whose successor is never mapped.
pub const STRADDLE: usize = ZONE + 0x60_0000;
/// One PROT_NONE page (mapped, inaccessible).
pub const NOACCESS: usize = ZONE + 0x70_0000;
/// 1 MiB of ordinary memory for USERPTR objects and SVM ranges.
pub const USERMEM: usize = ZONE + 0x80_0000;
pub const USERMEM_SIZE: usize = 0x10_0000;
/// Start of a never-mapped stretch used for random "wild" pointers.
pub const WILD: usize = ZONE + 0x1000_0000;
pub const WILD_SIZE: u64 = 1 << 40;

fn map_fixed(addr: usize, len: usize, prot: i32) -> Result<(), String> {
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping.
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            len,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED || p as usize != addr {
        return Err(format!("mmap at {addr:#x}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

fn is_unmapped(addr: usize) -> bool {
    let mut v = 0u8;
    // SAFETY: mincore only inspects the page table; ENOMEM = not mapped.
    let r = unsafe { libc::mincore(addr as *mut libc::c_void, PAGE, &mut v) };
    r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOMEM)
}

/// Maps the zone.  Call once per process (children inherit it).
pub fn map_zone() -> Result<(), String> {
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    map_fixed(ARG, REGION, rw)?;
    for s in SUB {
        map_fixed(s, REGION, rw)?;
    }
    map_fixed(RO, PAGE, libc::PROT_READ)?;
    map_fixed(STRADDLE, PAGE, rw)?;
    map_fixed(NOACCESS, PAGE, libc::PROT_NONE)?;
    map_fixed(USERMEM, USERMEM_SIZE, rw)?;
    for a in [HOLE, STRADDLE + PAGE, ARG + REGION, WILD, WILD + (1 << 39)] {
        if !is_unmapped(a) {
            return Err(format!("{a:#x} should be unmapped"));
        }
    }
    Ok(())
}

/// Copies `data` to a zone address (the caller guarantees it is RW).
pub fn poke(addr: usize, data: &[u8]) {
    // SAFETY: addr..addr+len lies in a RW zone mapping (checked by callers).
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut u8, data.len()) };
}

/// Reads zone memory.
pub fn peek(addr: usize, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    // SAFETY: addr..addr+len lies in a readable zone mapping.
    unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, v.as_mut_ptr(), len) };
    v
}

/// Writes the read-only page: made writable, written, made read-only again.
pub fn poke_ro(off: usize, data: &[u8]) {
    let n = data.len().min(PAGE - off);
    // SAFETY: RO is our own page; protection is restored right after.
    unsafe {
        libc::mprotect(RO as *mut libc::c_void, PAGE, libc::PROT_READ | libc::PROT_WRITE);
        std::ptr::copy_nonoverlapping(data.as_ptr(), (RO + off) as *mut u8, n);
        libc::mprotect(RO as *mut libc::c_void, PAGE, libc::PROT_READ);
    }
}

/// How a pointer handed to the kernel is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtrKind {
    /// 8-byte aligned in a scratch region, room for the whole buffer.
    Good,
    /// Odd address in a scratch region.
    Misaligned,
    /// So close to the region's end that the buffer runs into unmapped memory.
    NearEnd,
    /// Near the end of a RW page whose next page is unmapped.
    Straddle,
    /// In the read-only page (reads work, writes fault).
    ReadOnly,
    /// In the PROT_NONE page.
    NoAccess,
    Null,
    /// 1..4095.
    Low,
    /// Unmapped user address.
    Unmapped,
    /// Kernel-half address (direct map, text, vmalloc, top page).
    Kernel,
    /// Non-canonical address.
    NonCanonical,
}

impl PtrKind {
    /// Whether the kernel reads what we put there (in full or in part).
    pub fn has_content(self) -> bool {
        matches!(self, PtrKind::Good | PtrKind::Misaligned | PtrKind::NearEnd | PtrKind::Straddle | PtrKind::ReadOnly)
    }
}

pub const PTR_KINDS: [PtrKind; 11] = [
    PtrKind::Good,
    PtrKind::Misaligned,
    PtrKind::NearEnd,
    PtrKind::Straddle,
    PtrKind::ReadOnly,
    PtrKind::NoAccess,
    PtrKind::Null,
    PtrKind::Low,
    PtrKind::Unmapped,
    PtrKind::Kernel,
    PtrKind::NonCanonical,
];

/// Picks a pointer kind: mostly good, the rest spread over the bad ones.
pub fn pick_kind(rng: &mut Rng, good_weight: u32) -> PtrKind {
    let w = [good_weight, 4, 5, 5, 5, 2, 4, 2, 3, 3, 2];
    PTR_KINDS[rng.weighted(&w)]
}

const KERNEL_ADDRS: [u64; 6] = [
    0xffff_8880_0000_0000,
    0xffff_ffff_8100_0000,
    0xffff_c900_0000_0000,
    0xffff_ffff_ffff_f000,
    0xffff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
];

/// Places `content` (the buffer the kernel will read, `len` bytes of which
/// it may also write) according to `kind` in `region` and returns the
/// address.  Kinds without content just give an address.
pub fn place(rng: &mut Rng, kind: PtrKind, region: usize, content: &[u8]) -> u64 {
    let len = content.len().max(1);
    match kind {
        PtrKind::Good => {
            let room = REGION.saturating_sub(len);
            let off = if room >= 8 && rng.chance(1, 4) { (rng.below((room / 8) as u64) * 8) as usize } else { 0 };
            poke(region + off, content);
            (region + off) as u64
        }
        PtrKind::Misaligned => {
            let off = [1usize, 2, 3, 4, 5, 7][rng.below(6) as usize];
            let n = content.len().min(REGION - off);
            poke(region + off, &content[..n]);
            (region + off) as u64
        }
        PtrKind::NearEnd => {
            let short = rng.range(1, len as u64) as usize;
            let addr = region + REGION - len + short;
            let n = REGION - (addr - region);
            poke(addr, &content[..n.min(content.len())]);
            addr as u64
        }
        PtrKind::Straddle => {
            let short = rng.range(1, len as u64) as usize;
            let avail = len.saturating_sub(short).clamp(0, PAGE);
            let addr = STRADDLE + PAGE - avail;
            poke(addr, &content[..avail.min(content.len())]);
            addr as u64
        }
        PtrKind::ReadOnly => {
            let off = if len < PAGE && rng.chance(1, 2) { 0 } else { (rng.below(8) * 8) as usize };
            poke_ro(off, content);
            (RO + off) as u64
        }
        PtrKind::NoAccess => (NOACCESS + (rng.below(64) * 8) as usize) as u64,
        PtrKind::Null => 0,
        PtrKind::Low => rng.range(1, 4095),
        PtrKind::Unmapped => {
            if rng.chance(1, 2) {
                (HOLE + (rng.below(256) * 16) as usize) as u64
            } else {
                WILD as u64 + (rng.below(WILD_SIZE) & !7)
            }
        }
        PtrKind::Kernel => {
            let base = *rng.pick(&KERNEL_ADDRS);
            if base >= 0xffff_ffff_ffff_f000 {
                base
            } else {
                base + (rng.below(1 << 20) & !7)
            }
        }
        PtrKind::NonCanonical => {
            let v = [0x0000_8000_0000_0000u64, 0x0001_0000_0000_0000, 0x7fff_0000_0000_0000, 0x8000_7fff_ffff_0000];
            *rng.pick(&v) + rng.below(4096)
        }
    }
}

// ---------------------------------------------------------------------------
// Interesting values.

pub const INTERESTING_U32: [u32; 22] = [
    0, 1, 2, 3, 7, 8, 16, 31, 32, 64, 0x7f, 0x80, 0xff, 0x100, 0xfff, 0x1000, 0xffff, 0x1_0000, 0x7fff_ffff,
    0x8000_0000, 0xffff_fffe, 0xffff_ffff,
];

pub const INTERESTING_U64: [u64; 16] = [
    0,
    1,
    0xfff,
    0x1000,
    0x1_0000,
    0x20_0000,
    0xffff_ffff,
    0x1_0000_0000,
    0x7fff_ffff_f000,
    0x8000_0000_0000,
    0x1_0000_0000_0000,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    0xffff_ffff_ffff_f000,
    0xffff_ffff_ffff_fffe,
    0xffff_ffff_ffff_ffff,
];

/// Counts of array elements: valid small ones and huge ones that must be
/// rejected before anything is allocated (upstream's WAIT_EVENTS bug).
pub const COUNTS: [u32; 20] = [
    0, 1, 2, 3, 7, 8, 64, 255, 256, 4095, 4096, 4097, 0xffff, 0x1_0000, 0x10_0000, 0x100_0000, 0x3fff_ffff,
    0x7fff_ffff, 0x8000_0000, 0xffff_ffff,
];

pub fn interesting_u32(rng: &mut Rng) -> u32 {
    if rng.chance(1, 5) {
        rng.u32()
    } else {
        *rng.pick(&INTERESTING_U32)
    }
}

pub fn interesting_u64(rng: &mut Rng) -> u64 {
    match rng.below(6) {
        0 => rng.next(),
        1 => u64::from(interesting_u32(rng)),
        _ => *rng.pick(&INTERESTING_U64),
    }
}

pub fn count(rng: &mut Rng, small: u32) -> u32 {
    if rng.chance(2, 3) {
        rng.below(u64::from(small) + 1) as u32
    } else {
        *rng.pick(&COUNTS)
    }
}

/// Raw argument bytes: a mix of zeroes, small numbers, interesting values
/// and safe pointers, never an address of the process's own memory.
pub fn raw_bytes(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len.div_ceil(8) * 8];
    for w in v.chunks_mut(8) {
        let x: u64 = match rng.below(10) {
            0..=2 => 0,
            3 | 4 => rng.below(16),
            5 | 6 => interesting_u64(rng),
            7 => u64::from(interesting_u32(rng)) | (u64::from(interesting_u32(rng)) << 32),
            8 => {
                let k = pick_kind(rng, 2);
                place_addr_only(rng, k)
            }
            _ => rng.next(),
        };
        w.copy_from_slice(&x.to_ne_bytes());
    }
    v.truncate(len);
    v
}

/// An address of a kind without writing anything (for values inside raw
/// bytes: the kernel may treat them as pointers).
pub fn place_addr_only(rng: &mut Rng, kind: PtrKind) -> u64 {
    match kind {
        PtrKind::Good => (SUB[rng.below(3) as usize] + (rng.below(64) * 8) as usize) as u64,
        PtrKind::Misaligned => (SUB[rng.below(3) as usize] + 3) as u64,
        PtrKind::NearEnd => (SUB[0] + REGION - 8) as u64,
        PtrKind::Straddle => (STRADDLE + PAGE - 4) as u64,
        PtrKind::ReadOnly => RO as u64,
        other => place(rng, other, SUB[2], &[]),
    }
}

// ---------------------------------------------------------------------------
// CPU mappings of memory objects (through the render node, as libhsakmt).

/// A shared RW mapping of `len` bytes of `fd` at `offset`; unmapped on drop.
pub struct CpuMap {
    pub addr: usize,
    pub len: usize,
}

impl CpuMap {
    pub fn new(fd: i32, offset: u64, len: usize) -> Result<CpuMap, i32> {
        // SAFETY: a fresh shared mapping chosen by the kernel; nothing else
        // of ours lives there.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        }
        Ok(CpuMap { addr: p as usize, len })
    }

    #[expect(clippy::mut_from_ref, reason = "memory the kernel and GPU write too; one slice at a time")]
    pub fn bytes(&self) -> &mut [u8] {
        // SAFETY: our mapping of `len` bytes, alive until drop.
        unsafe { std::slice::from_raw_parts_mut(self.addr as *mut u8, self.len) }
    }

    /// Writes a pattern derived from `tag` (one u64 per 8 bytes).
    pub fn fill(&self, tag: u64) {
        for (i, w) in self.bytes().chunks_mut(8).enumerate() {
            w.copy_from_slice(&pattern(tag, i).to_ne_bytes()[..w.len()]);
        }
    }

    /// Index of the first u64 that differs from the pattern of `tag`.
    pub fn check(&self, tag: u64) -> Option<usize> {
        self.bytes().chunks(8).enumerate().position(|(i, w)| w != &pattern(tag, i).to_ne_bytes()[..w.len()])
    }

    /// Offset of the first non-zero byte.
    pub fn first_nonzero(&self) -> Option<usize> {
        self.bytes().iter().position(|&b| b != 0)
    }
}

fn pattern(tag: u64, i: usize) -> u64 {
    let mut x = tag ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    splitmix64(&mut x) | 1
}

impl Drop for CpuMap {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
    }
}

// ---------------------------------------------------------------------------
// File descriptors.

/// Open fds of this process.
pub fn open_fds() -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|rd| rd.filter_map(|e| e.ok()).filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Closes every fd not in `keep` (fds the kernel created for us, e.g. SMI
/// or dma-buf fds whose number never came back because the copy-out failed).
pub fn sweep_fds(keep: &[i32]) -> usize {
    let mut n = 0;
    for fd in open_fds() {
        if !keep.contains(&fd) {
            close(fd);
            n += 1;
        }
    }
    n
}

