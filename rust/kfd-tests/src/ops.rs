// SPDX-License-Identifier: GPL-2.0
//! Small typed wrappers around the KFD ioctls, the topology and process
//! plumbing (fork a scenario, pass fds), shared by the guest programs.

use crate::kfd::{errno_name, ioctl_fd, Kfd};
use kfd_uapi as uapi;

pub const TOPOLOGY: &str = "/sys/class/kfd/kfd/topology/nodes";

pub const GTT: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
pub const VRAM: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
pub const USERPTR: u32 = uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;

/// errno of the last failed libc call.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The old name of [`crate::harness::expect_errno`].
pub use crate::harness::expect_errno as expect_err;

/// A GPU node of the topology.
#[derive(Clone, Debug)]
pub struct TopoGpu {
    /// Node index (`nodes/<index>`).
    pub index: usize,
    pub gpu_id: u32,
    pub render_minor: u32,
}

impl TopoGpu {
    pub fn render_path(&self) -> String {
        format!("/dev/dri/renderD{}", self.render_minor)
    }

    pub fn node_dir(&self) -> String {
        format!("{TOPOLOGY}/{}", self.index)
    }
}

/// The value of `key` in a topology `properties` text.
pub fn prop(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next() == Some(key)).then(|| it.next()?.parse().ok()).flatten()
    })
}

/// Every GPU node of the topology (read as the caller; unreadable nodes,
/// e.g. denied by the device cgroup, are skipped).
pub fn topology_gpus() -> Vec<TopoGpu> {
    let mut out = Vec::new();
    for index in 0..256 {
        let dir = format!("{TOPOLOGY}/{index}");
        if std::fs::metadata(&dir).is_err() {
            break;
        }
        let Ok(id) = std::fs::read_to_string(format!("{dir}/gpu_id")) else { continue };
        let Ok(gpu_id) = id.trim().parse::<u32>() else { continue };
        if gpu_id == 0 {
            continue;
        }
        let Ok(props) = std::fs::read_to_string(format!("{dir}/properties")) else { continue };
        let Some(minor) = prop(&props, "drm_render_minor") else { continue };
        out.push(TopoGpu { index, gpu_id, render_minor: minor as u32 });
    }
    out
}

/// The gpu_ids `GET_PROCESS_APERTURES_NEW` reports for this process.
pub fn aperture_ids(k: &Kfd) -> Result<Vec<u32>, i32> {
    Ok(apertures(k)?.iter().map(|a| a.gpu_id).collect())
}

/// The apertures `GET_PROCESS_APERTURES_NEW` reports for this process,
/// one record per GPU.
pub fn apertures(k: &Kfd) -> Result<Vec<uapi::kfd_process_device_apertures>, i32> {
    let mut args = uapi::kfd_ioctl_get_process_apertures_new_args::default();
    k.ioctl(uapi::AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &mut args)?;
    let mut ap = vec![uapi::kfd_process_device_apertures::default(); args.num_of_nodes as usize];
    args.kfd_process_device_apertures_ptr = ap.as_mut_ptr() as u64;
    k.ioctl(uapi::AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &mut args)?;
    ap.truncate(args.num_of_nodes as usize);
    Ok(ap)
}

/// Opens `path` read-write; `Err(errno)`.
pub fn open_rw(path: &str) -> Result<i32, i32> {
    let c = std::ffi::CString::new(path).unwrap();
    // SAFETY: valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd)
    }
}

pub fn close(fd: i32) {
    // SAFETY: closing a descriptor we own (or a stale number: EBADF).
    unsafe { libc::close(fd) };
}

pub fn acquire_vm(kfd: i32, drm_fd: i32, gpu_id: u32) -> Result<i32, i32> {
    let mut a = uapi::kfd_ioctl_acquire_vm_args { drm_fd: drm_fd as u32, gpu_id };
    ioctl_fd(kfd, uapi::AMDKFD_IOC_ACQUIRE_VM, &mut a as *mut _ as usize)
}

/// Opens the render node of `gpu` and binds it; returns the render fd.
pub fn bind(k: &Kfd, gpu: &TopoGpu) -> Result<i32, String> {
    let fd = open_rw(&gpu.render_path()).map_err(|e| format!("open {}: {}", gpu.render_path(), errno_name(e)))?;
    acquire_vm(k.fd, fd, gpu.gpu_id).map_err(|e| format!("ACQUIRE_VM {}: {}", gpu.gpu_id, errno_name(e)))?;
    Ok(fd)
}

/// ALLOC_MEMORY_OF_GPU; `(handle, mmap_offset)`.
pub fn alloc(kfd: i32, gpu_id: u32, va: u64, size: u64, flags: u32, user_addr: u64) -> Result<(u64, u64), i32> {
    let mut a = uapi::kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: va,
        size,
        gpu_id,
        flags,
        mmap_offset: user_addr,
        ..Default::default()
    };
    ioctl_fd(kfd, uapi::AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a as *mut _ as usize)?;
    Ok((a.handle, a.mmap_offset))
}

pub fn free(kfd: i32, handle: u64) -> Result<i32, i32> {
    let mut a = uapi::kfd_ioctl_free_memory_of_gpu_args { handle };
    ioctl_fd(kfd, uapi::AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut a as *mut _ as usize)
}

/// MAP (or UNMAP) on one GPU; returns n_success.
pub fn map(kfd: i32, handle: u64, gpu_id: u32, do_map: bool) -> Result<u32, i32> {
    let ids = [gpu_id];
    let mut a = uapi::kfd_ioctl_map_memory_to_gpu_args {
        handle,
        device_ids_array_ptr: ids.as_ptr() as u64,
        n_devices: 1,
        n_success: 0,
    };
    let cmd = if do_map { uapi::AMDKFD_IOC_MAP_MEMORY_TO_GPU } else { uapi::AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU };
    ioctl_fd(kfd, cmd, &mut a as *mut _ as usize)?;
    Ok(a.n_success)
}

/// Runs `f` in a forked child (a fresh KFD process); its `Err` text comes
/// back through a pipe.  A child that does not exit within `secs` is
/// killed and reported.
pub fn in_child(secs: u32, f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let mut fds = [0i32; 2];
    // SAFETY: room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err("pipe failed".into());
    }
    // SAFETY: the child runs `f` and exits without unwinding into the parent.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err("fork failed".into());
    }
    if pid == 0 {
        close(fds[0]);
        let msg = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(Ok(())) => String::new(),
            Ok(Err(e)) => e,
            Err(_) => "panicked".to_string(),
        };
        // SAFETY: our buffer to our pipe, then exit without destructors.
        unsafe {
            libc::write(fds[1], msg.as_ptr().cast(), msg.len());
            libc::_exit(if msg.is_empty() { 0 } else { 1 });
        }
    }
    close(fds[1]);
    let status = wait_child(pid, secs);
    let mut msg = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        // SAFETY: reading into our buffer (the child is gone: no block).
        let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        msg.extend_from_slice(&buf[..n as usize]);
    }
    close(fds[0]);
    match status {
        None => Err(format!("child hung for {secs} s (killed)")),
        Some(s) if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0 => Ok(()),
        Some(_) if !msg.is_empty() => Err(String::from_utf8_lossy(&msg).to_string()),
        Some(s) => Err(format!("child died (status {s:#x})")),
    }
}

/// Waits for `pid` up to `secs` seconds; kills it after that (`None`).
pub fn wait_child(pid: i32, secs: u32) -> Option<i32> {
    let mut status = 0;
    for _ in 0..secs * 20 {
        // SAFETY: waiting for our child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return Some(status);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: our child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, &mut status, 0);
    }
    None
}

/// Room for one `SCM_RIGHTS` control message carrying one fd.
fn scm_space() -> usize {
    // SAFETY: CMSG_SPACE is a pure computation.
    unsafe { libc::CMSG_SPACE(std::mem::size_of::<i32>() as u32) as usize }
}

/// A message of one data byte (`iov`) with the control buffer `cbuf`.
fn scm_msghdr(iov: &mut libc::iovec, cbuf: &mut [u8]) -> libc::msghdr {
    // SAFETY: msghdr is plain data; all-zero is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = cbuf.len();
    msg
}

/// Sends `fd` over a Unix socket (SCM_RIGHTS).
pub fn send_fd(sock: i32, fd: i32) -> Result<(), String> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut cbuf = vec![0u8; scm_space()];
    let msg = scm_msghdr(&mut iov, &mut cbuf);
    // SAFETY: the pointers of `msg` refer to our live buffers; the control
    // buffer has room for the one header CMSG_FIRSTHDR returns.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<i32>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<i32>(), fd);
        if libc::sendmsg(sock, &msg, 0) < 0 {
            return Err(format!("sendmsg: {}", errno_name(errno())));
        }
    }
    Ok(())
}

/// Receives one fd sent by [`send_fd`].
pub fn recv_fd(sock: i32) -> Option<i32> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut cbuf = vec![0u8; scm_space()];
    let mut msg = scm_msghdr(&mut iov, &mut cbuf);
    // SAFETY: as in send_fd; the kernel fills our buffers, and a control
    // header it returns lies inside `cbuf`.
    unsafe {
        if libc::recvmsg(sock, &mut msg, 0) <= 0 {
            return None;
        }
        let c = libc::CMSG_FIRSTHDR(&msg);
        if c.is_null() || (*c).cmsg_type != libc::SCM_RIGHTS {
            return None;
        }
        Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<i32>()))
    }
}

/// Writes `v` to a pipe/socket.
pub fn send_u64(fd: i32, v: u64) {
    // SAFETY: our 8-byte buffer.
    unsafe { libc::write(fd, (&v as *const u64).cast(), 8) };
}

/// Reads a u64 written by [`send_u64`]; `None` at EOF.
pub fn recv_u64(fd: i32) -> Option<u64> {
    let mut v = 0u64;
    // SAFETY: our 8-byte buffer.
    let n = unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
    (n == 8).then_some(v)
}

/// A socket pair (`AF_UNIX`, stream).
pub fn socketpair() -> (i32, i32) {
    let mut sv = [0i32; 2];
    // SAFETY: room for two descriptors.
    unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, sv.as_mut_ptr()) };
    (sv[0], sv[1])
}

/// `CAP_SYS_ADMIN` (linux/capability.h).
pub const CAP_SYS_ADMIN: u32 = 21;

/// Drops CAP_SYS_ADMIN from the effective and permitted sets (uid stays 0,
/// so /dev/kfd and the render nodes still open).
pub fn drop_sys_admin() -> Result<(), String> {
    #[repr(C)]
    struct Hdr {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut hdr = Hdr { version: 0x2008_0522, pid: 0 };
    let mut data = [Data::default(); 2];
    // SAFETY: capget/capset with a v3 header and two data words.
    unsafe {
        if libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) != 0 {
            return Err(format!("capget: {}", errno_name(errno())));
        }
        data[0].effective &= !(1 << CAP_SYS_ADMIN);
        data[0].permitted &= !(1 << CAP_SYS_ADMIN);
        if libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()) != 0 {
            return Err(format!("capset: {}", errno_name(errno())));
        }
    }
    Ok(())
}

/// Available memory of every GPU, for a process that binds nothing.
pub fn available_memory(gpus: &[TopoGpu]) -> Vec<u64> {
    let Ok(k) = Kfd::open() else { return Vec::new() };
    gpus.iter()
        .map(|g| {
            let mut a = uapi::kfd_ioctl_get_available_memory_args { gpu_id: g.gpu_id, ..Default::default() };
            let _ = k.ioctl(uapi::AMDKFD_IOC_AVAILABLE_MEMORY, &mut a);
            a.available
        })
        .collect()
}

/// Every GPU's available memory is `before` again once the processes a
/// test made are gone: their teardown may still run, on a loaded machine
/// for seconds, so this waits up to 30 s before it calls the difference a
/// leak.
pub fn memory_given_back(gpus: &[TopoGpu], before: &[u64]) -> Result<(), String> {
    let mut after = available_memory(gpus);
    for _ in 0..300 {
        if after == before {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        after = available_memory(gpus);
    }
    if after == before {
        Ok(())
    } else {
        Err(format!("available memory before {before:?}, after {after:?}"))
    }
}

/// WAIT_EVENTS on event `id` alone for `ms` milliseconds on `/dev/kfd` fd
/// `kfd`: the wait result (`KFD_IOC_WAIT_RESULT_*`), or the errno.
pub fn wait_one_event(kfd: i32, id: u32, ms: u32) -> Result<u32, i32> {
    let mut data = uapi::kfd_event_data { event_id: id, ..Default::default() };
    let mut w = uapi::kfd_ioctl_wait_events_args {
        events_ptr: &mut data as *mut _ as u64,
        num_events: 1,
        wait_for_all: 1,
        timeout: ms,
        wait_result: 0,
    };
    ioctl_fd(kfd, uapi::AMDKFD_IOC_WAIT_EVENTS, &mut w as *mut _ as usize)?;
    Ok(w.wait_result)
}
