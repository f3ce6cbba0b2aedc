// SPDX-License-Identifier: GPL-2.0
//! Helpers for the SVM guest programs (kfd-svm-hmm-tests, kfd-svm-hmm-bench):
//! GPUs from the topology, a KFD process bound to a GPU's VM, SVM
//! attributes, XNACK mode, the virtual GPU's GPU-access test interface
//! (DRM_IOCTL_AMDGPU_VGPU_ACCESS, vgpu/vgpu_shim.h) and the per-process
//! SVM counters.

use crate::kfd::{ioctl_fd, Kfd};
use kfd_uapi as uapi;
use std::ffi::CString;
use std::fs;

pub const PAGE: usize = 4096;
/// `HSA_CAP_SVMAPI_SUPPORTED`.
pub const CAP_SVMAPI: u32 = 0x0800_0000;

/// A GPU node of the topology.
#[derive(Clone, Debug)]
pub struct Gpu {
    pub gpu_id: u32,
    pub render_minor: u32,
    pub capability: u32,
    pub gfx_target_version: u32,
    pub name: String,
}

/// The GPU nodes, in node order.
pub fn gpus() -> Vec<Gpu> {
    let mut out = Vec::new();
    let base = "/sys/class/kfd/kfd/topology/nodes";
    let mut n = 0;
    while let Ok(id) = fs::read_to_string(format!("{base}/{n}/gpu_id")) {
        let gpu_id: u32 = id.trim().parse().unwrap_or(0);
        let props = fs::read_to_string(format!("{base}/{n}/properties")).unwrap_or_default();
        let prop = |k: &str| {
            props
                .lines()
                .find_map(|l| l.strip_prefix(k).and_then(|v| v.strip_prefix(' ')))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let name = fs::read_to_string(format!("{base}/{n}/name")).unwrap_or_default();
        if gpu_id != 0 {
            out.push(Gpu {
                gpu_id,
                render_minor: prop("drm_render_minor") as u32,
                capability: prop("capability") as u32,
                gfx_target_version: prop("gfx_target_version") as u32,
                name: name.trim().to_string(),
            });
        }
        n += 1;
    }
    out
}

/// The first GPU that advertises SVM.
pub fn svm_gpu() -> Option<Gpu> {
    gpus().into_iter().find(|g| g.capability & CAP_SVMAPI != 0)
}

/// A KFD process bound to one GPU's VM through a render-node file.
pub struct Ctx {
    pub kfd: Kfd,
    pub render: i32,
    pub gpu: Gpu,
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.render) };
    }
}

/// Opens a render node.
pub fn open_render(minor: u32) -> Result<i32, String> {
    let path = CString::new(format!("/dev/dri/renderD{minor}")).unwrap();
    // SAFETY: valid C string.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(format!("open renderD{minor}: {}", std::io::Error::last_os_error()));
    }
    Ok(fd)
}

impl Ctx {
    /// Opens /dev/kfd and the GPU's render node and acquires the VM.
    pub fn new(gpu: &Gpu) -> Result<Ctx, String> {
        let kfd = Kfd::open().map_err(|e| format!("/dev/kfd: {e}"))?;
        let render = open_render(gpu.render_minor)?;
        let mut a = uapi::kfd_ioctl_acquire_vm_args { drm_fd: render as u32, gpu_id: gpu.gpu_id };
        let ctx = Ctx { kfd, render, gpu: gpu.clone() };
        ctx.kfd
            .ioctl(uapi::AMDKFD_IOC_ACQUIRE_VM, &mut a)
            .map_err(|e| format!("ACQUIRE_VM: errno {e}"))?;
        Ok(ctx)
    }

    /// SET_XNACK_MODE; returns the mode.
    pub fn set_xnack(&self, on: bool) -> Result<i32, i32> {
        let mut a = uapi::kfd_ioctl_set_xnack_mode_args { xnack_enabled: i32::from(on) };
        self.kfd.ioctl(uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut a)?;
        Ok(a.xnack_enabled)
    }

    /// SVM SET_ATTR with `(type, value)` attributes over `[addr, addr+size)`.
    pub fn svm_set(&self, addr: usize, size: usize, attrs: &[(u32, u32)]) -> Result<(), i32> {
        svm_set_attr(self.kfd.fd, addr, size, attrs).map(|_| ())
    }

    /// SVM GET_ATTR over `[addr, addr+size)`: `attrs` are `(type, value)`
    /// queries, answered in place.
    pub fn svm_get(&self, addr: usize, size: usize, attrs: &mut [(u32, u32)]) -> Result<(), i32> {
        let mut buf = vec![0u64; 3 + attrs.len()];
        buf[0] = addr as u64;
        buf[1] = size as u64;
        buf[2] = u64::from(uapi::KFD_IOCTL_SVM_OP_GET_ATTR) | ((attrs.len() as u64) << 32);
        for (i, &(t, v)) in attrs.iter().enumerate() {
            buf[3 + i] = u64::from(t) | (u64::from(v) << 32);
        }
        let cmd = uapi::amdkfd_ioc_svm(attrs.len() as u32);
        self.kfd.ioctl_raw(cmd, buf.as_mut_ptr() as usize)?;
        for (i, a) in attrs.iter_mut().enumerate() {
            *a = (buf[3 + i] as u32, (buf[3 + i] >> 32) as u32);
        }
        Ok(())
    }

    /// PREFETCH_LOC: `loc` is a gpu_id or 0 (system memory).
    pub fn prefetch(&self, addr: usize, size: usize, loc: u32) -> Result<(), i32> {
        self.svm_set(addr, size, &[(uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, loc)])
    }

    /// PREFERRED_LOC.
    pub fn prefer(&self, addr: usize, size: usize, loc: u32) -> Result<(), i32> {
        self.svm_set(addr, size, &[(uapi::KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, loc)])
    }

    /// The GPU reads `buf.len()` bytes at `va`; returns the retry faults raised.
    pub fn gpu_read(&self, va: usize, buf: &mut [u8]) -> Result<u32, i32> {
        gpu_access(self.render, va, buf.as_mut_ptr() as usize, buf.len(), false)
    }

    /// The GPU writes `buf` at `va`; returns the retry faults raised.
    pub fn gpu_write(&self, va: usize, buf: &[u8]) -> Result<u32, i32> {
        gpu_access(self.render, va, buf.as_ptr() as usize, buf.len(), true)
    }

    /// `counters_<gpu_id>/{faults,page_in,page_out}` of this process.
    pub fn counters(&self) -> Result<(u64, u64, u64), String> {
        let pid = std::process::id();
        let dir = format!("/sys/class/kfd/kfd/proc/{pid}/counters_{}", self.gpu.gpu_id);
        let r = |f: &str| -> Result<u64, String> {
            fs::read_to_string(format!("{dir}/{f}"))
                .map_err(|e| format!("{dir}/{f}: {e}"))?
                .trim()
                .parse()
                .map_err(|e| format!("{dir}/{f}: {e}"))
        };
        Ok((r("faults")?, r("page_in")?, r("page_out")?))
    }

    /// `svm_allocated` of `mem_info`, KiB.
    pub fn svm_allocated_kib(&self) -> Result<u64, String> {
        let pid = std::process::id();
        let p = format!("/sys/class/kfd/kfd/proc/{pid}/mem_info");
        let s = fs::read_to_string(&p).map_err(|e| format!("{p}: {e}"))?;
        s.lines()
            .find_map(|l| l.strip_prefix("svm_allocated "))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("{p}: no svm_allocated"))
    }
}

/// `struct drm_amdgpu_vgpu_access`.
#[repr(C)]
struct VgpuAccess {
    va: u64,
    size: u64,
    buf: u64,
    write: u32,
    faults: u32,
}

/// DRM_IOWR(DRM_COMMAND_BASE + 0x40, struct drm_amdgpu_vgpu_access).
const DRM_IOCTL_AMDGPU_VGPU_ACCESS: u32 =
    (3u32 << 30) | ((std::mem::size_of::<VgpuAccess>() as u32) << 16) | ((b'd' as u32) << 8) | (0x40 + 0x40);

/// The GPU-access test interface on a render-node fd.
pub fn gpu_access(render: i32, va: usize, buf: usize, len: usize, write: bool) -> Result<u32, i32> {
    let mut a = VgpuAccess { va: va as u64, size: len as u64, buf: buf as u64, write: u32::from(write), faults: 0 };
    ioctl_fd(render, DRM_IOCTL_AMDGPU_VGPU_ACCESS, &mut a as *mut VgpuAccess as usize)?;
    Ok(a.faults)
}

/// An anonymous private mapping, unmapped on drop (unless taken).
pub struct Anon {
    pub addr: usize,
    pub len: usize,
}

impl Anon {
    pub fn new(len: usize) -> Result<Anon, String> {
        Self::with_prot(len, libc::PROT_READ | libc::PROT_WRITE)
    }

    pub fn with_prot(len: usize, prot: i32) -> Result<Anon, String> {
        // SAFETY: a fresh anonymous mapping.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        if p == libc::MAP_FAILED {
            return Err(format!("mmap {len}: {}", std::io::Error::last_os_error()));
        }
        Ok(Anon { addr: p as usize, len })
    }

    /// The mapping as bytes.  Memory the GPU and the kernel write behind
    /// the compiler's back (like a `volatile` buffer), so a shared borrow
    /// hands out a mutable slice; callers keep one slice at a time.
    #[expect(clippy::mut_from_ref, reason = "memory written behind the compiler's back; one slice at a time")]
    pub fn slice(&self) -> &mut [u8] {
        // SAFETY: our mapping, readable and writable while alive.
        unsafe { std::slice::from_raw_parts_mut(self.addr as *mut u8, self.len) }
    }

    /// Fills page i with a pattern derived from `seed` and i.
    pub fn fill(&self, seed: u8) {
        let s = self.slice();
        for (i, chunk) in s.chunks_mut(PAGE).enumerate() {
            chunk.fill(seed.wrapping_add(i as u8));
        }
    }
}

impl Drop for Anon {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: our mapping.
            unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
        }
    }
}

/// One `range` line of the debugfs `kfd/proc/<pid>/svm_ranges` dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpRange {
    /// First and last page (inclusive).
    pub start: u64,
    pub last: u64,
    /// Locations as printed: `sys`, `undef`, `mixed` or a gpu_id in hex.
    pub preferred: String,
    pub prefetch: String,
    pub actual: String,
    pub flags: u64,
    pub granularity: u32,
    pub access: u64,
    pub in_place: u64,
    /// The GPUs (bit = index in the `# gpus:` map) it is mapped on.
    pub mapped_on: u64,
}

/// AMDKFD_IOC_SVM SET_ATTR with `(type, value)` attributes over
/// `[addr, addr+size)` on the `/dev/kfd` file `kfd`.
pub fn svm_set_attr(kfd: i32, addr: usize, size: usize, attrs: &[(u32, u32)]) -> Result<i32, i32> {
    let mut buf = vec![0u64; 3 + attrs.len()];
    buf[0] = addr as u64;
    buf[1] = size as u64;
    buf[2] = u64::from(uapi::KFD_IOCTL_SVM_OP_SET_ATTR) | ((attrs.len() as u64) << 32);
    for (i, &(t, v)) in attrs.iter().enumerate() {
        buf[3 + i] = u64::from(t) | (u64::from(v) << 32);
    }
    crate::kfd::ioctl_fd(kfd, uapi::amdkfd_ioc_svm(attrs.len() as u32), buf.as_mut_ptr() as usize)
}

pub use crate::kfd::ensure_debugfs;

/// This process's SVM dump: the `range` lines and the `# gpus:` map
/// (gpu_id -> bit index of the access bitmaps).
pub fn svm_dump() -> Result<(Vec<DumpRange>, Vec<u32>), String> {
    ensure_debugfs()?;
    let path = format!("/sys/kernel/debug/kfd/proc/{}/svm_ranges", std::process::id());
    let text = fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let hex = |w: &str| u64::from_str_radix(w.trim_start_matches("0x"), 16).map_err(|e| format!("{w:?}: {e}"));
    let mut ids = Vec::new();
    if let Some(l) = text.lines().find(|l| l.starts_with("# gpus:")) {
        for w in l.split_whitespace() {
            if let Some((i, id)) = w.split_once('=') {
                if let (Ok(i), Ok(id)) = (i.parse::<usize>(), hex(id)) {
                    if ids.len() <= i {
                        ids.resize(i + 1, 0);
                    }
                    ids[i] = id as u32;
                }
            }
        }
    }
    let mut out = Vec::new();
    for l in text.lines().filter(|l| l.starts_with("range ")) {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() != 11 {
            return Err(format!("range line with {} words: {l:?}", w.len()));
        }
        out.push(DumpRange {
            start: hex(w[1])?,
            last: hex(w[2])?,
            preferred: w[3].to_string(),
            prefetch: w[4].to_string(),
            actual: w[5].to_string(),
            flags: hex(w[6])?,
            granularity: w[7].parse().map_err(|e| format!("{l:?}: {e}"))?,
            access: hex(w[8])?,
            in_place: hex(w[9])?,
            mapped_on: hex(w[10])?,
        });
    }
    Ok((out, ids))
}

/// The dump's range containing the byte address `addr`.
pub fn dump_range_at(addr: usize) -> Result<Option<DumpRange>, String> {
    let page = (addr / PAGE) as u64;
    Ok(svm_dump()?.0.into_iter().find(|r| r.start <= page && page <= r.last))
}
