// SPDX-License-Identifier: GPL-2.0
//! Raw access to /dev/kfd for tests: open, ioctl with any command and
//! buffer, errno capture.

use std::ffi::CString;
use std::io;

pub const DEV_KFD: &str = "/dev/kfd";

/// An open /dev/kfd file descriptor, closed on drop.
pub struct Kfd {
    pub fd: i32,
}

impl Kfd {
    pub fn open() -> io::Result<Kfd> {
        let path = CString::new(DEV_KFD).unwrap();
        // SAFETY: path is a valid C string.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(Kfd { fd })
        }
    }

    /// Issues `cmd` with `arg` as the raw argument; returns errno on failure.
    pub fn ioctl_raw(&self, cmd: u32, arg: usize) -> Result<i32, i32> {
        ioctl_fd(self.fd, cmd, arg)
    }

    /// Issues `cmd` on a typed argument struct.
    pub fn ioctl<T>(&self, cmd: u32, args: &mut T) -> Result<i32, i32> {
        self.ioctl_raw(cmd, args as *mut T as usize)
    }
}

impl Drop for Kfd {
    fn drop(&mut self) {
        // SAFETY: we own fd.
        unsafe { libc::close(self.fd) };
    }
}

/// ioctl on any fd; `Err(errno)` on failure.
pub fn ioctl_fd(fd: i32, cmd: u32, arg: usize) -> Result<i32, i32> {
    // SAFETY: the kernel validates every argument; a bad pointer yields EFAULT.
    let r = unsafe { libc::ioctl(fd, cmd as libc::c_ulong, arg) };
    if r < 0 {
        Err(io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(r)
    }
}

/// The name of errno `e` for messages (`errno N` for one not listed).
pub fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::ENOSPC => "ENOSPC",
        libc::ERANGE => "ERANGE",
        libc::ENOSYS => "ENOSYS",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::ETIME => "ETIME",
        libc::ETIMEDOUT => "ETIMEDOUT",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}

/// rkfd's debugfs directory.
pub const DEBUGFS: &str = "/sys/kernel/debug/kfd";

/// Mounts debugfs if needed; fails unless [`DEBUGFS`] exists then.
pub fn ensure_debugfs() -> Result<(), String> {
    if std::fs::metadata(DEBUGFS).is_ok() {
        return Ok(());
    }
    let src = CString::new("none").unwrap();
    let dst = CString::new("/sys/kernel/debug").unwrap();
    let ty = CString::new("debugfs").unwrap();
    // SAFETY: Valid C strings; mounting debugfs where it belongs.
    unsafe { libc::mount(src.as_ptr(), dst.as_ptr(), ty.as_ptr(), 0, std::ptr::null()) };
    if std::fs::metadata(DEBUGFS).is_ok() {
        Ok(())
    } else {
        Err(format!("{DEBUGFS} missing"))
    }
}
