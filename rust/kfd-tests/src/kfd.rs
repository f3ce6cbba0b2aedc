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

/// errno name for messages.
pub fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EBADF => "EBADF",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EINVAL => "EINVAL",
        libc::ENOTTY => "ENOTTY",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}
