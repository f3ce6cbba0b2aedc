// SPDX-License-Identifier: GPL-2.0
//! A /dev/kmsg watcher: spots kernel reports (WARN, BUG, lockdep, KFENCE,
//! …) while a guest program runs, and writes marks (seeds) into the log.

use std::ffi::CString;
use std::io::Write;

/// Lines of the kernel log that fail a run (scripts/dmesg-check's list).
pub const BAD_KMSG: &[&str] = &[
    "WARNING:",
    "BUG:",
    "Oops",
    "general protection fault",
    "Kernel panic",
    "kernel BUG",
    "possible circular locking",
    "possible recursive locking",
    "inconsistent lock state",
    "DEADLOCK",
    "blocked for more than",
    "rcu: INFO",
    "detected stall",
    "KFENCE:",
    "kmemleak:",
    "sleeping function called from invalid context",
    "Unable to handle",
    "UBSAN",
    "refcount_t:",
    "list_add corruption",
    "list_del corruption",
    "double free",
    "use-after-free",
    "rust_panic",
    "panicked at",
];

/// Reads new /dev/kmsg records without blocking.
pub struct KmsgWatch {
    fd: i32,
    writer: Option<std::fs::File>,
}

impl KmsgWatch {
    pub fn open() -> KmsgWatch {
        let path = CString::new("/dev/kmsg").unwrap();
        // SAFETY: valid C string.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if fd >= 0 {
            // SAFETY: our fd; only new records from now on.
            unsafe { libc::lseek(fd, 0, libc::SEEK_END) };
        }
        let writer = std::fs::OpenOptions::new().write(true).open("/dev/kmsg").ok();
        KmsgWatch { fd, writer }
    }

    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// Writes a line to the kernel log (so dmesg.log carries the seed).
    pub fn mark(&mut self, line: &str) {
        if let Some(w) = self.writer.as_mut() {
            let _ = w.write_all(line.as_bytes());
        }
    }

    /// New records that match [`BAD_KMSG`].
    pub fn bad_lines(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if self.fd < 0 {
            return out;
        }
        let mut buf = vec![0u8; 8192];
        loop {
            // SAFETY: reading one record into our buffer.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
                if e == libc::EPIPE {
                    continue; // records were overwritten; keep reading
                }
                break;
            }
            if n == 0 {
                break;
            }
            let rec = String::from_utf8_lossy(&buf[..n as usize]);
            let msg = rec.split_once(';').map(|(_, m)| m).unwrap_or(&rec);
            let msg = msg.lines().next().unwrap_or("").to_string();
            if BAD_KMSG.iter().any(|p| msg.contains(p)) && !msg.contains("kmemleak: Kernel memory leak detector") {
                out.push(msg);
            }
        }
        out
    }
}

