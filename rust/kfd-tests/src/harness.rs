// SPDX-License-Identifier: GPL-2.0
//! A tiny test harness for guest programs: named checks, TAP-style lines,
//! a closing `<layer>: N passed, N failed` line and a non-zero exit on
//! failure.
//!
//! The closing line counts test cases: a case is one `ok`/`not ok` line,
//! however many calls, lifecycles or checks it made.  Those go beside the
//! counts, in parentheses (`fuzz: 2 passed, 0 failed (100000 calls, 0
//! failures)`), where
//! scripts/check shows them on its guest line without summing them.  Also:
//! the errno checks, the helpers that run a scenario in a child process,
//! command-line options and the guest programs' plumbing (stdout flushing,
//! kernel stacks for hang reports).

use crate::kfd::errno_name;
use crate::rng::parse_u64;
use std::fmt::Display;
use std::io::Write;

/// Result of one check: `Err` carries the reason.
pub type Check = Result<(), String>;

/// Collects test results.
///
/// `Harness::default()` runs every test; [`Harness::new`] takes a name
/// filter from the first argument (programs with options of their own use
/// the default).
#[derive(Default)]
pub struct Harness {
    passed: usize,
    failed: usize,
    filter: Option<String>,
    /// What the cases did, for the closing line (`100000 calls`).
    details: Vec<String>,
}

impl Harness {
    pub fn new() -> Self {
        Harness { filter: std::env::args().nth(1), ..Default::default() }
    }

    /// Runs `f` as test `name` unless filtered out.  With
    /// `RKFD_CASE_TIMES` set in the environment, a `# <name> took N ms`
    /// line follows each case (where a program's time goes).
    pub fn run(&mut self, name: &str, f: impl FnOnce() -> Check) {
        if let Some(filter) = &self.filter {
            if !name.contains(filter.as_str()) {
                return;
            }
        }
        let n = self.passed + self.failed + 1;
        let start = std::time::Instant::now();
        let r = f();
        if std::env::var_os("RKFD_CASE_TIMES").is_some() {
            println!("# {name} took {} ms", start.elapsed().as_millis());
        }
        match r {
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

    /// Records test `name` whose checks already ran (a fuzzer's calls, a
    /// storm's lifecycles): one case, whatever `result` sums up.
    pub fn record(&mut self, name: &str, result: Check) {
        self.run(name, || result);
    }

    /// Adds a note for the closing line: what the cases did (`100000 calls`).
    pub fn detail(&mut self, what: impl Display) {
        self.details.push(what.to_string());
    }

    /// Prints the closing line and returns the process exit code.
    pub fn finish(self, layer: &str) -> i32 {
        print_closing_line(layer, self.passed, self.failed, &self.details);
        flush();
        if self.failed == 0 && self.passed > 0 {
            0
        } else {
            1
        }
    }
}

/// The closing line `<layer>: N passed, N failed` of cases, with the
/// details in parentheses: for [`Harness::finish`] and for a watchdog
/// thread that has to end the program without the harness.
pub fn print_closing_line(layer: &str, passed: usize, failed: usize, details: &[String]) {
    println!("{}", closing_line(layer, passed, failed, details));
}

/// The text of [`print_closing_line`].
fn closing_line(layer: &str, passed: usize, failed: usize, details: &[String]) -> String {
    if details.is_empty() {
        format!("{layer}: {passed} passed, {failed} failed")
    } else {
        format!("{layer}: {passed} passed, {failed} failed ({})", details.join(", "))
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

/// Fails unless `r` is `Err(want)`.
pub fn expect_errno<T>(r: Result<T, i32>, want: i32, what: &str) -> Check {
    match r {
        Err(e) if e == want => Ok(()),
        Err(e) => Err(format!("{what}: got {}, want {}", errno_name(e), errno_name(want))),
        Ok(_) => Err(format!("{what}: succeeded, want {}", errno_name(want))),
    }
}

/// Fails with the errno's name unless `r` succeeded.
pub fn expect_ok<T>(r: Result<T, i32>, what: &str) -> Check {
    r.map(|_| ()).map_err(|e| format!("{what}: {}", errno_name(e)))
}

/// A file's text without trailing whitespace; the path in the error.
pub fn read_trimmed(path: impl AsRef<std::path::Path>) -> Result<String, String> {
    let p = path.as_ref();
    std::fs::read_to_string(p).map(|s| s.trim_end().to_string()).map_err(|e| format!("{}: {e}", p.display()))
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

/// Parses `--name value` style arguments.
pub struct Args {
    args: Vec<String>,
}

impl Args {
    pub fn from_env() -> Args {
        Args { args: std::env::args().skip(1).collect() }
    }

    pub fn flag(&self, name: &str) -> bool {
        self.args.iter().any(|a| a == name)
    }

    pub fn value(&self, name: &str) -> Option<&str> {
        let i = self.args.iter().position(|a| a == name)?;
        self.args.get(i + 1).map(|s| s.as_str())
    }

    pub fn u64(&self, name: &str, default: u64) -> u64 {
        match self.value(name) {
            Some(v) => parse_u64(v).unwrap_or_else(|| {
                eprintln!("bad value for {name}: {v}");
                std::process::exit(2)
            }),
            None => default,
        }
    }
}

/// Kernel stacks of every thread of `pid` (root only), for hang reports.
pub fn kernel_stacks(pid: i32) -> String {
    let mut out = String::new();
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in rd.filter_map(|e| e.ok()) {
        let tid = t.file_name().to_string_lossy().to_string();
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let wchan = std::fs::read_to_string(t.path().join("wchan")).unwrap_or_default();
        out += &format!("  task {tid} ({}) wchan {wchan}\n", comm.trim());
        if let Ok(st) = std::fs::read_to_string(t.path().join("stack")) {
            for l in st.lines() {
                out += &format!("    {l}\n");
            }
        }
    }
    out
}

/// Flushes stdout (the console log is all a crashed guest leaves).
pub fn flush() {
    let _ = std::io::stdout().flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closing_line_counts_cases_and_puts_details_beside() {
        assert_eq!(closing_line("guest", 18, 0, &[]), "guest: 18 passed, 0 failed");
        let details = ["100000 calls".to_string(), "0 failures".to_string()];
        assert_eq!(closing_line("fuzz", 2, 0, &details), "fuzz: 2 passed, 0 failed (100000 calls, 0 failures)");
    }

    #[test]
    fn record_counts_one_case_per_call_and_fails_the_exit_code() {
        let mut h = Harness::default();
        h.record("a", Ok(()));
        h.record("b", Err("why".into()));
        assert_eq!((h.passed, h.failed), (1, 1));
        assert_eq!(h.finish("t"), 1);
        let mut h = Harness::default();
        h.record("a", Ok(()));
        assert_eq!(h.finish("t"), 0);
        assert_eq!(Harness::default().finish("t"), 1, "no case passed");
    }

    #[test]
    fn expect_errno_names_both_errnos() {
        assert_eq!(expect_errno(Err::<i32, i32>(libc::EINVAL), libc::EINVAL, "x"), Ok(()));
        assert_eq!(expect_errno(Err::<i32, i32>(libc::ESRCH), libc::EINVAL, "x"), Err("x: got ESRCH, want EINVAL".into()));
        assert_eq!(expect_errno(Ok::<i32, i32>(0), libc::EOVERFLOW, "x"), Err("x: succeeded, want EOVERFLOW".into()));
    }
}
