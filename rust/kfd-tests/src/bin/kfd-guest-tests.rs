// SPDX-License-Identifier: GPL-2.0
//! Guest tests of rkfd's /dev/kfd: the chardev, the ioctl dispatcher's ABI
//! rules and the sysfs paths.  Run inside the test VM with rkfd loaded;
//! an optional argument filters tests by name.

use kfd_tests::harness::{ensure, ensure_eq, expect_errno, expect_ok, Check, Harness};
use kfd_tests::ops::{recv_fd, send_fd};
use kfd_tests::kfd::{self, errno_name, ioctl_fd, Kfd};
use kfd_uapi as uapi;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

fn get_version(k: &Kfd) -> Result<uapi::kfd_ioctl_get_version_args, String> {
    let mut args = uapi::kfd_ioctl_get_version_args::default();
    k.ioctl(uapi::AMDKFD_IOC_GET_VERSION, &mut args)
        .map_err(|e| format!("GET_VERSION: {}", errno_name(e)))?;
    Ok(args)
}

/// Encodes a command with another size in the size field, like callers
/// built against an older or newer header.
fn with_size(cmd: u32, size: u32) -> u32 {
    uapi::ioc(uapi::ioc_dir(cmd), uapi::AMDKFD_IOCTL_BASE, uapi::ioc_nr(cmd), size)
}

fn dev_kfd_is_chardev() -> Check {
    let md = std::fs::metadata(kfd::DEV_KFD).map_err(|e| format!("stat /dev/kfd: {e}"))?;
    ensure(md.file_type().is_char_device(), "/dev/kfd is not a character device")?;
    ensure_eq(dev_minor(md.rdev()), 0, "minor of /dev/kfd")
}

fn sysfs_paths() -> Check {
    let dev = "/sys/devices/virtual/kfd/kfd";
    ensure(std::path::Path::new(dev).is_dir(), format!("{dev} missing"))?;
    let class = std::fs::canonicalize("/sys/class/kfd/kfd").map_err(|e| format!("/sys/class/kfd/kfd: {e}"))?;
    ensure_eq(class.to_str().unwrap_or(""), dev, "/sys/class/kfd/kfd resolves to")?;
    // The sysfs dev file names the same device number as the node.
    let devno = std::fs::read_to_string(format!("{dev}/dev")).map_err(|e| e.to_string())?;
    let md = std::fs::metadata(kfd::DEV_KFD).map_err(|e| e.to_string())?;
    let want = format!("{}:{}", dev_major(md.rdev()), dev_minor(md.rdev()));
    ensure_eq(devno.trim(), want.as_str(), "kfd/dev")?;
    let subsystem = std::fs::read_link(format!("{dev}/subsystem")).map_err(|e| e.to_string())?;
    ensure(subsystem.ends_with("class/kfd"), format!("subsystem link {subsystem:?}"))
}

fn version_is_1_23() -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let v = get_version(&k)?;
    ensure_eq((v.major_version, v.minor_version), (1, 23), "interface version")
}

fn two_opens_in_one_process() -> Check {
    let a = Kfd::open().map_err(|e| e.to_string())?;
    let b = Kfd::open().map_err(|e| e.to_string())?;
    get_version(&a)?;
    get_version(&b)?;
    Ok(())
}

fn short_caller_struct_copies_only_its_size() -> Check {
    // A caller whose struct is 4 bytes: only major_version comes back.
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let mut buf = [0xaau8; 8];
    k.ioctl_raw(with_size(uapi::AMDKFD_IOC_GET_VERSION, 4), buf.as_mut_ptr() as usize)
        .map_err(errno_name)?;
    ensure_eq(u32::from_ne_bytes(buf[0..4].try_into().unwrap()), 1, "major")?;
    ensure_eq(&buf[4..8], &[0xaa; 4][..], "bytes past the caller's size")
}

fn long_caller_struct_is_zero_filled() -> Check {
    // A caller with a longer (future) struct gets zeroes past ours.
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let mut buf = [0xaau8; 32];
    k.ioctl_raw(with_size(uapi::AMDKFD_IOC_GET_VERSION, 24), buf.as_mut_ptr() as usize)
        .map_err(errno_name)?;
    ensure_eq(u32::from_ne_bytes(buf[4..8].try_into().unwrap()), uapi::KFD_IOCTL_MINOR_VERSION, "minor")?;
    ensure_eq(&buf[8..24], &[0u8; 16][..], "tail of a longer struct")?;
    ensure_eq(&buf[24..32], &[0xaa; 8][..], "bytes past the caller's size")
}

fn zero_size_copies_nothing() -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    // Size 0: nothing to copy, so even a NULL pointer is fine (as upstream).
    expect_ok(k.ioctl_raw(with_size(uapi::AMDKFD_IOC_GET_VERSION, 0), 0), "size 0, NULL")
}

fn bad_pointers_are_efault() -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let cmd = uapi::AMDKFD_IOC_GET_VERSION;
    expect_errno(k.ioctl_raw(cmd, 0), libc::EFAULT, "NULL")?;
    expect_errno(k.ioctl_raw(cmd, 0xffff_8000_0000_0000), libc::EFAULT, "kernel address")?;
    expect_errno(k.ioctl_raw(cmd, 8), libc::EFAULT, "unmapped low address")?;
    // A read-only page: copy-out must fail, not oops.
    // SAFETY: plain anonymous mapping.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    ensure(p != libc::MAP_FAILED, "mmap")?;
    let r = k.ioctl_raw(cmd, p as usize);
    // SAFETY: unmapping what we mapped.
    unsafe { libc::munmap(p, 4096) };
    expect_errno(r, libc::EFAULT, "read-only page")
}

fn unknown_numbers_are_enotty() -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    for nr in [0u32, uapi::AMDKFD_COMMAND_END, 0x80, 0x85, 0xff] {
        let cmd = uapi::ioc(uapi::IOC_READ | uapi::IOC_WRITE, uapi::AMDKFD_IOCTL_BASE, nr, 8);
        let mut buf = [0u8; 8];
        expect_errno(k.ioctl_raw(cmd, buf.as_mut_ptr() as usize), libc::ENOTTY, &format!("nr {nr:#x}"))?;
    }
    Ok(())
}

fn deprecated_debugger_ioctls_are_eperm() -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    for cmd in [
        uapi::AMDKFD_IOC_DBG_REGISTER_DEPRECATED,
        uapi::AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED,
        uapi::AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED,
        uapi::AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED,
    ] {
        let mut buf = [0u8; 16];
        expect_errno(k.ioctl_raw(cmd, buf.as_mut_ptr() as usize), libc::EPERM, &format!("{cmd:#x}"))?;
    }
    Ok(())
}

fn every_known_ioctl_answers() -> Check {
    // Every table entry returns success or a clear errno with a zeroed buffer,
    // never a crash; the dmesg scan after the run checks for WARN/oops.
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let clear = [libc::EOPNOTSUPP, libc::EPERM, libc::EINVAL, libc::EFAULT, libc::ENOMEM, libc::EBUSY, libc::ENOENT, libc::EACCES];
    for d in uapi::IOCTLS.iter() {
        if d.cmd == uapi::AMDKFD_IOC_CREATE_PROCESS {
            continue; // replaces the fd's process; covered by its own issue
        }
        let mut buf = vec![0u64; 2048];
        match k.ioctl_raw(d.cmd, buf.as_mut_ptr() as usize) {
            Ok(_) => {}
            Err(e) if clear.contains(&e) => {}
            Err(e) => return Err(format!("{}: unexpected {}", d.name, errno_name(e))),
        }
    }
    Ok(())
}

fn forked_child_gets_ebadf() -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    get_version(&k)?;
    // SAFETY: the child only issues an ioctl and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut args = uapi::kfd_ioctl_get_version_args::default();
        let code = match k.ioctl(uapi::AMDKFD_IOC_GET_VERSION, &mut args) {
            Err(libc::EBADF) => 0,
            Err(_) => 2,
            Ok(_) => 3,
        };
        // SAFETY: leave without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    ensure(pid > 0, "fork failed")?;
    let mut status = 0;
    // SAFETY: waiting for our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    ensure_eq(libc::WEXITSTATUS(status), 0, "child exit (0 = EBADF, 2 = other errno, 3 = success)")?;
    // The parent still owns it.
    get_version(&k).map(|_| ())
}

fn thread_of_opener_may_use_fd() -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let fd = k.fd;
    let r = std::thread::spawn(move || {
        let mut args = uapi::kfd_ioctl_get_version_args::default();
        ioctl_fd(fd, uapi::AMDKFD_IOC_GET_VERSION, &mut args as *mut _ as usize)
    })
    .join()
    .map_err(|_| "thread panicked".to_string())?;
    expect_ok(r, "GET_VERSION from a second thread")
}

fn fd_passed_over_unix_socket_gets_ebadf() -> Check {
    let mut sv = [0i32; 2];
    // SAFETY: plain socketpair.
    ensure(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) } == 0, "socketpair")?;
    // SAFETY: the child receives one fd, issues an ioctl and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = match recv_fd(sv[1]) {
            Some(fd) => {
                let mut args = uapi::kfd_ioctl_get_version_args::default();
                match ioctl_fd(fd, uapi::AMDKFD_IOC_GET_VERSION, &mut args as *mut _ as usize) {
                    Err(libc::EBADF) => 0,
                    Err(_) => 2,
                    Ok(_) => 3,
                }
            }
            None => 4,
        };
        // SAFETY: leave without running destructors.
        unsafe { libc::_exit(code) };
    }
    // The parent opens /dev/kfd after the fork and sends it.
    let k = Kfd::open().map_err(|e| e.to_string())?;
    send_fd(sv[0], k.fd)?;
    let mut status = 0;
    // SAFETY: waiting for our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    // SAFETY: closing our socket ends.
    unsafe {
        libc::close(sv[0]);
        libc::close(sv[1]);
    }
    ensure_eq(libc::WEXITSTATUS(status), 0, "receiver exit (0 = EBADF)")
}

fn fd_outliving_its_process_is_released() -> Check {
    // A child opens /dev/kfd, hands the fd to us and exits: its mm goes away
    // (the driver's mm notifier releases the GPU state) while the file lives
    // on here; our close then releases the file.
    let mut sv = [0i32; 2];
    // SAFETY: plain socketpair.
    ensure(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) } == 0, "socketpair")?;
    // SAFETY: the child opens, sends and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = match Kfd::open() {
            Ok(k) => {
                let c = if send_fd(sv[0], k.fd).is_ok() { 0 } else { 2 };
                std::mem::forget(k);
                c
            }
            Err(_) => 3,
        };
        // SAFETY: leave without running destructors.
        unsafe { libc::_exit(code) };
    }
    // Only the child keeps its end: a child that exits without sending
    // (its open failed) gives EOF here, not a wait forever.
    // SAFETY: closing our copy of the child's end.
    unsafe { libc::close(sv[0]) };
    let fd = recv_fd(sv[1]);
    let mut status = 0;
    // SAFETY: waiting for our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    // SAFETY: closing our end.
    unsafe { libc::close(sv[1]) };
    ensure_eq(libc::WEXITSTATUS(status), 0, "child exit (3: its open failed)")?;
    let fd = fd.ok_or("no fd received")?;
    let mut args = uapi::kfd_ioctl_get_version_args::default();
    let r = ioctl_fd(fd, uapi::AMDKFD_IOC_GET_VERSION, &mut args as *mut _ as usize);
    // SAFETY: closing the received fd.
    unsafe { libc::close(fd) };
    expect_errno(r, libc::EBADF, "ioctl on a file whose process exited")
}

fn proc_sysfs_follows_the_process() -> Check {
    let dir = format!("/sys/class/kfd/kfd/proc/{}", std::process::id());
    ensure(!std::path::Path::new(&dir).exists(), format!("{dir} exists before open"))?;
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let pasid = std::fs::read_to_string(format!("{dir}/pasid")).map_err(|e| format!("{dir}/pasid: {e}"))?;
    // Upstream 7.3 prints 0 here since its PASIDs became per-VM; the real
    // ones are in debugfs pasid_<gpu_id> (kfd-mem-tests).
    ensure_eq(pasid.as_str(), "0\n", "proc/<pid>/pasid")?;
    ensure(std::path::Path::new(&format!("{dir}/queues")).is_dir(), "queues/ missing")?;
    // rkfd extension: mem_info, four "name KiB" lines.
    let mem_info = std::fs::read_to_string(format!("{dir}/mem_info")).map_err(|e| format!("mem_info: {e}"))?;
    let keys: Vec<&str> = mem_info.lines().filter_map(|l| l.split(' ').next()).collect();
    ensure_eq(keys, vec!["vram_used", "gtt_allocated", "userptr_allocated", "svm_allocated"], "mem_info keys")?;
    // One vram_<gpu_id> per GPU node of the topology, showing a number.
    for entry in std::fs::read_dir(&dir).map_err(|e| e.to_string())? {
        let name = entry.map_err(|e| e.to_string())?.file_name().into_string().unwrap_or_default();
        if name.starts_with("vram_") {
            let v = std::fs::read_to_string(format!("{dir}/{name}")).map_err(|e| e.to_string())?;
            v.trim().parse::<u64>().map_err(|_| format!("{name}: {v:?}"))?;
        }
    }
    let second = Kfd::open().map_err(|e| e.to_string())?;
    drop(k);
    ensure(std::path::Path::new(&dir).exists(), "removed while a file is still open")?;
    drop(second);
    ensure(!std::path::Path::new(&dir).exists(), format!("{dir} still exists after the last close"))
}

fn rmmod_refused_while_open() -> Check {
    // With /dev/kfd open the module is pinned (fops owner): rmmod must fail.
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let name = std::ffi::CString::new("rkfd").unwrap();
    // SAFETY: delete_module with a valid name; O_NONBLOCK as rmmod uses.
    let r = unsafe { libc::syscall(libc::SYS_delete_module, name.as_ptr(), libc::O_NONBLOCK) };
    let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    ensure(r != 0, "rmmod succeeded while /dev/kfd was open")?;
    ensure_eq(errno_name(e), errno_name(libc::EWOULDBLOCK), "delete_module errno")?;
    get_version(&k).map(|_| ())
}

fn log_level_is_a_writable_parameter() -> Check {
    let p = "/sys/module/rkfd/parameters/log_level";
    let old = std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"))?;
    std::fs::write(p, "1").map_err(|e| format!("write {p}: {e}"))?;
    let now = std::fs::read_to_string(p).map_err(|e| e.to_string())?;
    std::fs::write(p, old.trim()).map_err(|e| e.to_string())?;
    ensure_eq(now.trim(), "1", "log_level after writing 1")
}

fn main() {
    let mut h = Harness::new();
    h.run("chardev: /dev/kfd is a character device, minor 0", dev_kfd_is_chardev);
    h.run("sysfs: /sys/devices/virtual/kfd/kfd and /sys/class/kfd/kfd", sysfs_paths);
    h.run("ioctl: GET_VERSION reports interface 1.23", version_is_1_23);
    h.run("ioctl: two opens in one process", two_opens_in_one_process);
    h.run("ioctl: shorter caller struct copies only its size", short_caller_struct_copies_only_its_size);
    h.run("ioctl: longer caller struct is zero-filled", long_caller_struct_is_zero_filled);
    h.run("ioctl: size 0 copies nothing", zero_size_copies_nothing);
    h.run("ioctl: bad pointers give EFAULT", bad_pointers_are_efault);
    h.run("ioctl: unknown numbers give ENOTTY", unknown_numbers_are_enotty);
    h.run("ioctl: deprecated debugger ioctls give EPERM", deprecated_debugger_ioctls_are_eperm);
    h.run("ioctl: every known ioctl answers with a clear errno", every_known_ioctl_answers);
    h.run("isolation: forked child gets EBADF", forked_child_gets_ebadf);
    h.run("isolation: another thread of the opener may use the fd", thread_of_opener_may_use_fd);
    h.run("isolation: fd received over a Unix socket gets EBADF", fd_passed_over_unix_socket_gets_ebadf);
    h.run("process: a file outliving its process is released", fd_outliving_its_process_is_released);
    h.run("process: proc/<pid> exists while the process has kfd open", proc_sysfs_follows_the_process);
    h.run("module: log_level is a writable parameter", log_level_is_a_writable_parameter);
    h.run("module: rmmod refused while /dev/kfd is open", rmmod_refused_while_open);
    std::process::exit(h.finish("guest"));
}

fn dev_major(dev: u64) -> u32 {
    // SAFETY: pure arithmetic on a device number.
    #[expect(unused_unsafe, reason = "libc::major/minor are safe const fns in this libc, unsafe in older ones")]
    unsafe {
        libc::major(dev)
    }
}

fn dev_minor(dev: u64) -> u32 {
    // SAFETY: pure arithmetic on a device number.
    #[expect(unused_unsafe, reason = "libc::major/minor are safe const fns in this libc, unsafe in older ones")]
    unsafe {
        libc::minor(dev)
    }
}
