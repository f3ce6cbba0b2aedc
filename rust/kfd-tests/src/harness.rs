// SPDX-License-Identifier: GPL-2.0
//! A tiny test harness for guest programs: named checks, TAP-style lines,
//! a closing `N passed, N failed` line and a non-zero exit on failure.

use std::fmt::Display;

/// Result of one check: `Err` carries the reason.
pub type Check = Result<(), String>;

/// Collects test results.
#[derive(Default)]
pub struct Harness {
    passed: usize,
    failed: usize,
    filter: Option<String>,
}

impl Harness {
    pub fn new() -> Self {
        Harness { filter: std::env::args().nth(1), ..Default::default() }
    }

    /// Runs `f` as test `name` unless filtered out.
    pub fn run(&mut self, name: &str, f: impl FnOnce() -> Check) {
        if let Some(filter) = &self.filter {
            if !name.contains(filter.as_str()) {
                return;
            }
        }
        let n = self.passed + self.failed + 1;
        match f() {
            Ok(()) => {
                self.passed += 1;
                println!("ok {n} - {name}");
            }
            Err(why) => {
                self.failed += 1;
                println!("not ok {n} - {name}: {why}");
            }
        }
    }

    /// Prints the closing line and returns the process exit code.
    pub fn finish(self, layer: &str) -> i32 {
        println!("{layer}: {} passed, {} failed", self.passed, self.failed);
        if self.failed == 0 && self.passed > 0 {
            0
        } else {
            1
        }
    }
}

/// Fails with a message unless `cond`.
pub fn ensure(cond: bool, what: impl Display) -> Check {
    if cond {
        Ok(())
    } else {
        Err(what.to_string())
    }
}

/// Fails unless `got == want`.
pub fn ensure_eq<T: PartialEq + std::fmt::Debug>(got: T, want: T, what: &str) -> Check {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

/// An open file (read/write, close-on-exec), closed on drop.
pub struct Fd(pub i32);

impl Fd {
    /// Opens `path` read/write.
    pub fn open(path: &str) -> Result<Fd, String> {
        let c = std::ffi::CString::new(path).map_err(|e| e.to_string())?;
        // SAFETY: `c` is a valid C string.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            Err(format!("open {path}: {}", std::io::Error::last_os_error()))
        } else {
            Ok(Fd(fd))
        }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: We own the descriptor.
        unsafe { libc::close(self.0) };
    }
}
