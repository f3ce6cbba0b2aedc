// SPDX-License-Identifier: GPL-2.0
//! SET_ATTR cost with 1k vs 100k SVM ranges through the real ioctl
//! (issue #4, benchmark piece (c), guest variant).  Prints figures and
//! ratios; asserts nothing about time.  Not part of `make check` (building
//! 100k ranges takes a while under TCG); `make bench-svm` runs it, or:
//!
//!     scripts/vm-run -- rust/target/release/kfd-svm-bench [RANGES...]
//!
//! For each N, one process fills N one-page ranges on even pages of a
//! reserved area, then times SET_ATTR on one existing range and on a gap
//! page, at random positions.  The gap page gets a new range each time
//! (the area stays mapped, so nothing removes them), so the set grows by
//! the number of samples, a few percent of N.

use kfd_tests::fuzz;
use kfd_tests::ops;

use kfd_tests::kfd::{errno_name, Kfd};
use kfd_tests::svm::svm_set_attr;
use kfd_uapi as uapi;
use std::time::Instant;

const PAGE: u64 = 4096;

fn set_attr(fd: i32, start: u64, attrs: &[(u32, u32)]) -> Result<(), String> {
    svm_set_attr(fd, start as usize, PAGE as usize, attrs)
        .map(|_| ())
        .map_err(|e| format!("SET_ATTR {start:#x}: {}", errno_name(e)))
}

/// (µs per SET_ATTR on an existing range, µs per SET_ATTR creating one),
/// in a child process so every N starts from an empty set.
fn measure(n: u64, samples: u64) -> Result<(f64, f64, f64), String> {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let gpus = fuzz::discover_gpus(&k);
    let mut bound = false;
    'outer: for &gpu in &gpus.ids {
        for path in &gpus.render_nodes {
            if let Ok(fd) = ops::open_rw(path) {
                if fuzz::acquire_vm(k.fd, fd, gpu).is_ok() {
                    bound = true;
                    break 'outer;
                }
                fuzz::close(fd);
            }
        }
    }
    if !bound {
        return Err("no GPU VM".into());
    }
    let len = 2 * (n + 1) * PAGE;
    // SAFETY: a fresh anonymous reservation, never touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err("mmap".into());
    }
    let base = p as u64;
    let g = uapi::KFD_IOCTL_SVM_ATTR_GRANULARITY;
    let t = Instant::now();
    for i in 0..n {
        set_attr(k.fd, base + 2 * i * PAGE, &[(g, 3)])?;
    }
    let fill = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ n;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let t = Instant::now();
    for i in 0..samples {
        set_attr(k.fd, base + 2 * next() * PAGE, &[(uapi::KFD_IOCTL_SVM_ATTR_SET_FLAGS, 1 << (i % 8))])?;
    }
    let update = t.elapsed().as_secs_f64() * 1e6 / samples as f64;
    let t = Instant::now();
    for _ in 0..samples {
        set_attr(k.fd, base + (2 * next() + 1) * PAGE, &[(g, 1)])?;
    }
    let create = t.elapsed().as_secs_f64() * 1e6 / samples as f64;
    Ok((fill, update, create))
}

fn main() {
    let ns: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let ns = if ns.is_empty() { vec![1_000, 100_000] } else { ns };
    let samples = 2_000;
    println!("svm-bench (guest, ioctl): µs per SET_ATTR, {samples} samples at random positions");
    println!("{:>8} {:>12} {:>14} {:>14}", "ranges", "fill (avg)", "update one", "create one");
    let mut rows = Vec::new();
    for &n in &ns {
        // SAFETY: fork; the child measures and exits (a fresh KFD process).
        let mut pipe = [0i32; 2];
        // SAFETY: creating a pipe.
        unsafe { libc::pipe(pipe.as_mut_ptr()) };
        // SAFETY: see above.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let line = match measure(n, samples) {
                Ok((f, u, c)) => format!("{f} {u} {c}\n"),
                Err(e) => format!("error {e}\n"),
            };
            // SAFETY: writing to our pipe, then leaving the child.
            unsafe {
                libc::write(pipe[1], line.as_ptr().cast(), line.len());
                libc::_exit(0);
            }
        }
        // SAFETY: closing our copy of the write end.
        unsafe { libc::close(pipe[1]) };
        let mut buf = vec![0u8; 256];
        // SAFETY: reading from our pipe.
        let r = unsafe { libc::read(pipe[0], buf.as_mut_ptr().cast(), buf.len()) };
        let mut status = 0;
        // SAFETY: waiting for our child, closing our fd.
        unsafe {
            libc::waitpid(pid, &mut status, 0);
            libc::close(pipe[0]);
        }
        let text = String::from_utf8_lossy(&buf[..r.max(0) as usize]).to_string();
        let v: Vec<f64> = text.split_whitespace().filter_map(|s| s.parse().ok()).collect();
        if v.len() != 3 {
            println!("{n:>8} {}", text.trim());
            continue;
        }
        println!("{n:>8} {:>12.1} {:>14.1} {:>14.1}", v[0], v[1], v[2]);
        rows.push((n, v[1], v[2]));
    }
    if rows.len() >= 2 {
        let (a, b) = (rows[0], rows[rows.len() - 1]);
        println!(
            "svm-bench: {} vs {} ranges: update x{:.2}, create x{:.2}",
            b.0,
            a.0,
            b.1 / a.1,
            b.2 / a.2
        );
    }
}
