// SPDX-License-Identifier: GPL-2.0
//! What a KFD driver serves without a GPU, timed: the open(/dev/kfd)
//! attempt, the topology sysfs reads libhsakmt makes, and bare baselines
//! (open of /dev/null, an ioctl on /dev/null, a read of an unrelated sysfs
//! file) measured in the same run.  `make bench-upstream` runs it once
//! against upstream amdkfd and once against rkfd in one guest
//! (scripts/guest/bench-upstream) and prints the ratios.  Prints figures,
//! asserts nothing about time.
//!
//! Output, one line per figure:
//!
//!     bench: <name> <operations per second> <result>
//!
//! where `<result>` is `ok` or the errno name every call of the loop got
//! (`mixed` if they differed).  A figure that cannot be measured (an
//! ioctl on /dev/kfd when its open fails) prints `-` as its rate and why.
//! Each rate is the best of 3 windows of `RKFD_BENCH_WINDOW_MS` (default
//! 300) milliseconds: the best, because other guests and builds share the
//! host's CPUs and only ever slow a window down.

use kfd_tests::kfd::{errno_name, ioctl_fd, DEV_KFD};
use kfd_uapi as uapi;
use std::ffi::CString;
use std::time::{Duration, Instant};

const TOPOLOGY: &str = "/sys/devices/virtual/kfd/kfd/topology";
/// A sysfs file unrelated to KFD, present on every kernel: the baseline
/// of a sysfs read.
const BASELINE_SYSFS: &str = "/sys/devices/system/cpu/online";

/// What every call of a loop returned: `Ok` or the errno.
type Outcome = Result<(), i32>;

fn window() -> Duration {
    let ms = std::env::var("RKFD_BENCH_WINDOW_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    Duration::from_millis(ms)
}

/// Calls `f` for `window` three times; returns the best rate (calls per
/// second) and what the calls returned ("ok", an errno name, or "mixed").
fn rate(window: Duration, mut f: impl FnMut() -> Outcome) -> (f64, String) {
    let first = f();
    let mut same = true;
    let mut best = 0f64;
    for _ in 0..3 {
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < window {
            for _ in 0..16 {
                same &= f() == first;
            }
            n += 16;
        }
        best = best.max(n as f64 / start.elapsed().as_secs_f64());
    }
    let result = match (same, first) {
        (false, _) => "mixed".to_string(),
        (true, Ok(())) => "ok".to_string(),
        (true, Err(e)) => errno_name(e),
    };
    (best, result)
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// open(2) with `flags`, closed again at once.
fn open_close(path: &CString, flags: i32) -> Outcome {
    // SAFETY: `path` is a valid C string.
    let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: we own `fd`.
    unsafe { libc::close(fd) };
    Ok(())
}

/// open + read + close of a whole file, as libhsakmt reads topology files.
fn read_file(path: &CString, buf: &mut [u8]) -> Outcome {
    // SAFETY: `path` is a valid C string.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(last_errno());
    }
    let mut r = Ok(());
    loop {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            r = Err(last_errno());
        }
        if n <= 0 {
            break;
        }
    }
    // SAFETY: we own `fd`.
    unsafe { libc::close(fd) };
    r
}

fn cstr(path: &str) -> CString {
    CString::new(path).expect("paths have no NUL")
}

/// The files of one libhsakmt topology snapshot (hsaKmtAcquireSystemProperties):
/// generation_id, system_properties, then per node gpu_id, name,
/// properties and the properties of its mem_banks, caches, io_links and
/// p2p_links, then generation_id again.
fn snapshot_files() -> Vec<CString> {
    let mut files = vec![cstr(&format!("{TOPOLOGY}/generation_id")), cstr(&format!("{TOPOLOGY}/system_properties"))];
    let mut nodes: Vec<u32> = std::fs::read_dir(format!("{TOPOLOGY}/nodes"))
        .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    nodes.sort_unstable();
    for n in nodes {
        let node = format!("{TOPOLOGY}/nodes/{n}");
        for f in ["gpu_id", "name", "properties"] {
            files.push(cstr(&format!("{node}/{f}")));
        }
        for sub in ["mem_banks", "caches", "io_links", "p2p_links"] {
            let mut ids: Vec<u32> = std::fs::read_dir(format!("{node}/{sub}"))
                .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
                .unwrap_or_default();
            ids.sort_unstable();
            files.extend(ids.iter().map(|i| cstr(&format!("{node}/{sub}/{i}/properties"))));
        }
    }
    files.push(cstr(&format!("{TOPOLOGY}/generation_id")));
    files
}

fn print(name: &str, (rate, result): (f64, String)) {
    println!("bench: {name} {rate:.0} {result}");
}

fn main() {
    let w = window();
    let mut buf = [0u8; 4096];
    let dev_null = cstr("/dev/null");
    let dev_kfd = cstr(DEV_KFD);

    // Baselines: what the same calls cost on files of no driver of ours.
    print("baseline-open-dev-null", rate(w, || open_close(&dev_null, libc::O_RDWR)));
    let null_fd = {
        // SAFETY: a valid C string.
        let fd = unsafe { libc::open(dev_null.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        assert!(fd >= 0, "open /dev/null: {}", errno_name(last_errno()));
        fd
    };
    let mut version = uapi::kfd_ioctl_get_version_args::default();
    let version_ptr = &mut version as *mut _ as usize;
    print(
        "baseline-ioctl-dev-null",
        rate(w, || ioctl_fd(null_fd, uapi::AMDKFD_IOC_GET_VERSION, version_ptr).map(|_| ())),
    );
    let baseline_sysfs = cstr(BASELINE_SYSFS);
    print("baseline-sysfs-read", rate(w, || read_file(&baseline_sysfs, &mut buf)));

    // /dev/kfd: the open attempt; GET_VERSION only if the open succeeds.
    print("kfd-open", rate(w, || open_close(&dev_kfd, libc::O_RDWR)));
    // SAFETY: a valid C string.
    let kfd_fd = unsafe { libc::open(dev_kfd.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if kfd_fd >= 0 {
        print(
            "kfd-get-version",
            rate(w, || ioctl_fd(kfd_fd, uapi::AMDKFD_IOC_GET_VERSION, version_ptr).map(|_| ())),
        );
        // SAFETY: we own `kfd_fd`.
        unsafe { libc::close(kfd_fd) };
    } else {
        println!("bench: kfd-get-version - not-measured:open-{}", errno_name(last_errno()));
    }

    // Topology: single files, then whole libhsakmt-style snapshots.
    for (name, rel) in [
        ("topology-generation_id", "generation_id"),
        ("topology-system_properties", "system_properties"),
        ("topology-node0-gpu_id", "nodes/0/gpu_id"),
        ("topology-node0-name", "nodes/0/name"),
        ("topology-node0-properties", "nodes/0/properties"),
        ("topology-node0-mem_bank0", "nodes/0/mem_banks/0/properties"),
    ] {
        let path = cstr(&format!("{TOPOLOGY}/{rel}"));
        print(name, rate(w, || read_file(&path, &mut buf)));
    }
    let files = snapshot_files();
    let (snapshots, result) = rate(w, || files.iter().try_for_each(|f| read_file(f, &mut buf)));
    println!("# a snapshot reads {} files", files.len());
    print("topology-snapshot", (snapshots, result.clone()));
    // The same, counted in files: comparable with the one-file reads.
    print("topology-snapshot-files", (snapshots * files.len() as f64, result));
    // SAFETY: we own `null_fd`.
    unsafe { libc::close(null_fd) };
}
