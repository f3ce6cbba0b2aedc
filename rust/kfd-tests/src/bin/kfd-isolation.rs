// SPDX-License-Identifier: GPL-2.0
//! kfd-isolation: what one process may see and do of another's GPU state,
//! and the container case.
//!
//! - device cgroup (cgroup v2 + a BPF_PROG_TYPE_CGROUP_DEVICE program that
//!   denies a GPU's render node, the `--device=/dev/kfd` container without
//!   that node): the GPU's topology files answer EPERM inside the cgroup and
//!   stay readable outside; /dev/kfd inside does not know the GPU (upstream
//!   kfd_init_apertures skips it: every ioctl naming it is EINVAL); with
//!   every GPU denied open(/dev/kfd) is EINVAL (kfd_gpu_node_num() == 0);
//! - SMI events: errnos of the file, the event lines, CAP_SYS_ADMIN
//!   isolation, module pinning;
//! - memory handles, render-node mmap offsets, doorbell pages, proc/<pid>
//!   sysfs of other processes, and a render fd received over a Unix socket.
//!
//! Needs root (cgroups, bpf(2), setuid).  Prints
//! `kfd-isolation: N passed, N failed`.

use kfd_tests::harness::{ensure, ensure_eq, expect_errno, Check, Harness};
use kfd_tests::kfd::{errno_name, ioctl_fd, Kfd};
use kfd_tests::ops::*;
use kfd_uapi as uapi;

const CHILD_SECS: u32 = 60;

// ---------------------------------------------------------------------------
// Device cgroup.

/// A cgroup v2 directory with a device program attached that denies the DRM
/// character devices `226:minor` (all of major 226 for `None`); removed on
/// drop (which also detaches and frees the program).
struct DenyCgroup {
    path: String,
    prog: i32,
}

/// Where cgroup v2 is mounted (mounting it if nothing is).
fn cgroup2_root() -> Result<String, String> {
    let mounts = std::fs::read_to_string("/proc/mounts").map_err(|e| e.to_string())?;
    if let Some(l) = mounts.lines().find(|l| l.split_whitespace().nth(2) == Some("cgroup2")) {
        return Ok(l.split_whitespace().nth(1).unwrap().to_string());
    }
    let dir = "/tmp/rkfd-cgroup2";
    let _ = std::fs::create_dir_all(dir);
    let c = |s: &str| std::ffi::CString::new(s).unwrap();
    let (src, dst, ty) = (c("none"), c(dir), c("cgroup2"));
    // SAFETY: valid C strings, no data.
    if unsafe { libc::mount(src.as_ptr(), dst.as_ptr(), ty.as_ptr(), 0, std::ptr::null()) } != 0 {
        return Err(format!("mount cgroup2: {}", errno_name(errno())));
    }
    Ok(dir.to_string())
}

/// One eBPF instruction.
fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    (code as u64) | ((dst as u64 | (src as u64) << 4) << 8) | ((off as u16 as u64) << 16) | ((imm as u32 as u64) << 32)
}

/// Loads a BPF_PROG_TYPE_CGROUP_DEVICE program: return 0 (deny) for char
/// device 226:minor (any 226 minor if `None`), 1 (allow) otherwise.
/// Context: `struct bpf_cgroup_dev_ctx { u32 access_type, major, minor; }`.
fn load_deny_prog(minor: Option<u32>) -> Result<i32, String> {
    const LDXW: u8 = 0x61; // BPF_LDX | BPF_W | BPF_MEM
    const JNE: u8 = 0x55; // BPF_JMP | BPF_JNE | BPF_K
    const MOV: u8 = 0xb7; // BPF_ALU64 | BPF_MOV | BPF_K
    const EXIT: u8 = 0x95; // BPF_JMP | BPF_EXIT
    let minor_check = match minor {
        Some(m) => insn(JNE, 3, 0, 2, m as i32),
        None => insn(MOV, 4, 0, 0, 0), // no check
    };
    let prog = [
        insn(LDXW, 2, 1, 4, 0),   // r2 = ctx->major
        insn(LDXW, 3, 1, 8, 0),   // r3 = ctx->minor
        insn(JNE, 2, 0, 3, 226),  // major != 226 -> allow
        minor_check,              // minor != m -> allow
        insn(MOV, 0, 0, 0, 0),    // deny
        insn(EXIT, 0, 0, 0, 0),
        insn(MOV, 0, 0, 0, 1),    // allow
        insn(EXIT, 0, 0, 0, 0),
    ];
    let license = b"GPL\0";
    let mut attr = [0u8; 128];
    attr[0..4].copy_from_slice(&15u32.to_ne_bytes()); // BPF_PROG_TYPE_CGROUP_DEVICE
    attr[4..8].copy_from_slice(&(prog.len() as u32).to_ne_bytes());
    attr[8..16].copy_from_slice(&(prog.as_ptr() as u64).to_ne_bytes());
    attr[16..24].copy_from_slice(&(license.as_ptr() as u64).to_ne_bytes());
    attr[68..72].copy_from_slice(&6u32.to_ne_bytes()); // BPF_CGROUP_DEVICE
    // SAFETY: bpf(BPF_PROG_LOAD) with a valid attr; the pointers outlive it.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, 5, attr.as_ptr(), attr.len()) };
    if fd < 0 {
        return Err(format!("BPF_PROG_LOAD: {}", errno_name(errno())));
    }
    Ok(fd as i32)
}

impl DenyCgroup {
    fn new(minor: Option<u32>) -> Result<Self, String> {
        let root = cgroup2_root()?;
        // SAFETY: getpid has no preconditions.
        let path = format!("{root}/rkfd-deny-{}-{}", unsafe { libc::getpid() }, minor.map_or(-1, |m| m as i64));
        std::fs::create_dir(&path).map_err(|e| format!("mkdir {path}: {e}"))?;
        let prog = load_deny_prog(minor).inspect_err(|_| {
            let _ = std::fs::remove_dir(&path);
        })?;
        let cg = DenyCgroup { path, prog };
        let dir = std::ffi::CString::new(cg.path.clone()).unwrap();
        // SAFETY: valid C string.
        let dfd = unsafe { libc::open(dir.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if dfd < 0 {
            return Err(format!("open {}: {}", cg.path, errno_name(errno())));
        }
        let mut attr = [0u8; 32];
        attr[0..4].copy_from_slice(&(dfd as u32).to_ne_bytes());
        attr[4..8].copy_from_slice(&(cg.prog as u32).to_ne_bytes());
        attr[8..12].copy_from_slice(&6u32.to_ne_bytes()); // BPF_CGROUP_DEVICE
        // SAFETY: bpf(BPF_PROG_ATTACH) with a valid attr.
        let r = unsafe { libc::syscall(libc::SYS_bpf, 8, attr.as_ptr(), attr.len()) };
        let e = errno();
        close(dfd);
        if r != 0 {
            return Err(format!("BPF_PROG_ATTACH: {}", errno_name(e)));
        }
        Ok(cg)
    }

    /// Moves the calling process into the cgroup.
    fn enter(&self) -> Result<(), String> {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        std::fs::write(format!("{}/cgroup.procs", self.path), format!("{pid}\n"))
            .map_err(|e| format!("joining {}: {e}", self.path))
    }
}

impl Drop for DenyCgroup {
    fn drop(&mut self) {
        close(self.prog);
        // The children that joined have exited; an empty cgroup can go.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        eprintln!("kfd-isolation: could not remove {}", self.path);
    }
}

/// errno of reading `path` (0 = readable).
fn read_errno(path: &str) -> i32 {
    match std::fs::read(path) {
        Ok(_) => 0,
        Err(e) => e.raw_os_error().unwrap_or(-1),
    }
}

/// Every file of a GPU node that upstream guards: gpu_id, name,
/// properties, and each mem_banks/caches/io_links entry.
fn guarded_files(gpu: &TopoGpu) -> Vec<String> {
    let dir = gpu.node_dir();
    let mut v: Vec<String> = ["gpu_id", "name", "properties"].iter().map(|f| format!("{dir}/{f}")).collect();
    for sub in ["mem_banks", "caches", "io_links"] {
        if let Ok(rd) = std::fs::read_dir(format!("{dir}/{sub}")) {
            for e in rd.flatten() {
                v.push(format!("{dir}/{sub}/{}/properties", e.file_name().to_string_lossy()));
            }
        }
    }
    v
}

fn cgroup_hides_topology(gpus: &[TopoGpu]) -> Check {
    let denied = &gpus[0];
    let files = guarded_files(denied);
    ensure(files.len() > 4, format!("node {} has only {} files", denied.index, files.len()))?;
    let cg = DenyCgroup::new(Some(denied.render_minor))?;
    let others: Vec<TopoGpu> = gpus[1..].to_vec();
    let files_in = files.clone();
    let cg = &cg;
    in_child(CHILD_SECS, move || {
        cg.enter()?;
        for f in &files_in {
            ensure_eq(errno_name(read_errno(f)), errno_name(libc::EPERM), f)?;
        }
        // CPU node 0 and the other GPUs stay readable.
        ensure_eq(read_errno(&format!("{TOPOLOGY}/0/properties")), 0, "CPU node properties")?;
        for g in &others {
            for f in guarded_files(g) {
                ensure_eq(read_errno(&f), 0, &f)?;
            }
        }
        // The render node itself is denied by the cgroup (the kernel, not rkfd).
        expect_errno(open_rw(&denied.render_path()), libc::EPERM, "open of the denied render node")?;
        Ok(())
    })?;
    // Outside the cgroup everything is readable, while it exists.
    for f in &files {
        ensure_eq(read_errno(f), 0, &format!("outside the cgroup: {f}"))?;
    }
    Ok(())
}

fn cgroup_hides_gpu_from_kfd(gpus: &[TopoGpu]) -> Check {
    let denied = gpus[0].clone();
    let allowed = gpus[1].clone();
    let cg = DenyCgroup::new(Some(denied.render_minor))?;
    let cg = &cg;
    in_child(CHILD_SECS, move || {
        cg.enter()?;
        let k = Kfd::open().map_err(|e| format!("open /dev/kfd in the cgroup: {e}"))?;
        let ids = aperture_ids(&k).map_err(|e| format!("APERTURES_NEW: {}", errno_name(e)))?;
        ensure(!ids.contains(&denied.gpu_id), format!("apertures list the denied gpu {}: {ids:?}", denied.gpu_id))?;
        ensure(ids.contains(&allowed.gpu_id), format!("apertures miss the allowed gpu {}: {ids:?}", allowed.gpu_id))?;
        let mut old = uapi::kfd_ioctl_get_process_apertures_args::default();
        k.ioctl(uapi::AMDKFD_IOC_GET_PROCESS_APERTURES, &mut old).map_err(|e| format!("APERTURES: {}", errno_name(e)))?;
        ensure_eq(old.num_of_nodes as usize, ids.len(), "GET_PROCESS_APERTURES nodes")?;
        let mut am = uapi::kfd_ioctl_get_available_memory_args { gpu_id: denied.gpu_id, ..Default::default() };
        expect_errno(k.ioctl(uapi::AMDKFD_IOC_AVAILABLE_MEMORY, &mut am), libc::EINVAL, "AVAILABLE_MEMORY(denied)")?;
        let mut smi = uapi::kfd_ioctl_smi_events_args { gpuid: denied.gpu_id, anon_fd: 0 };
        expect_errno(k.ioctl(uapi::AMDKFD_IOC_SMI_EVENTS, &mut smi), libc::EINVAL, "SMI_EVENTS(denied)")?;
        // The allowed GPU's render fd offered for the denied gpu_id.
        let fd = bind(&k, &allowed)?;
        expect_errno(acquire_vm(k.fd, fd, denied.gpu_id), libc::EINVAL, "ACQUIRE_VM(denied gpu_id)")?;
        expect_errno(
            alloc(k.fd, denied.gpu_id, 1 << 30, 1 << 16, GTT, 0),
            libc::EINVAL,
            "ALLOC on the denied gpu",
        )?;
        let (h, _) = alloc(k.fd, allowed.gpu_id, 1 << 30, 1 << 16, GTT, 0)
            .map_err(|e| format!("ALLOC on the allowed gpu: {}", errno_name(e)))?;
        free(k.fd, h).map_err(|e| format!("FREE: {}", errno_name(e)))?;
        close(fd);
        Ok(())
    })?;
    // A process outside sees both.
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let ids = aperture_ids(&k).map_err(errno_name)?;
    ensure(ids.contains(&denied.gpu_id), "outside the cgroup the gpu is listed")
}

fn cgroup_all_denied_refuses_open(_gpus: &[TopoGpu]) -> Check {
    let cg = DenyCgroup::new(None)?;
    let cg = &cg;
    in_child(CHILD_SECS, move || {
        cg.enter()?;
        match Kfd::open() {
            Err(e) => ensure_eq(errno_name(e.raw_os_error().unwrap_or(0)), errno_name(libc::EINVAL), "open /dev/kfd"),
            Ok(_) => Err("open /dev/kfd succeeded with every GPU denied".into()),
        }
    })
}

/// A process that opened /dev/kfd before joining keeps its GPUs (pdds are
/// made at open, as upstream); new topology reads are still refused.
fn cgroup_decides_at_open(gpus: &[TopoGpu]) -> Check {
    let denied = gpus[0].clone();
    let cg = DenyCgroup::new(Some(denied.render_minor))?;
    let cg = &cg;
    in_child(CHILD_SECS, move || {
        let k = Kfd::open().map_err(|e| e.to_string())?;
        cg.enter()?;
        let ids = aperture_ids(&k).map_err(errno_name)?;
        ensure(ids.contains(&denied.gpu_id), "the gpu is kept by a process created before joining")?;
        ensure_eq(errno_name(read_errno(&format!("{}/properties", denied.node_dir()))), errno_name(libc::EPERM), "properties")
    })
}

// ---------------------------------------------------------------------------
// SMI events.

fn smi_open(k: &Kfd, gpu_id: u32) -> Result<i32, i32> {
    let mut a = uapi::kfd_ioctl_smi_events_args { gpuid: gpu_id, anon_fd: 0 };
    k.ioctl(uapi::AMDKFD_IOC_SMI_EVENTS, &mut a)?;
    Ok(a.anon_fd as i32)
}

fn smi_mask(fd: i32, mask: u64) -> Result<isize, i32> {
    // SAFETY: 8 bytes of our own.
    let n = unsafe { libc::write(fd, (&mask as *const u64).cast(), 8) };
    if n < 0 {
        Err(errno())
    } else {
        Ok(n)
    }
}

const START_END: u64 = (1 << (uapi::KFD_SMI_EVENT_PROCESS_START - 1)) | (1 << (uapi::KFD_SMI_EVENT_PROCESS_END - 1));

/// Reads everything queued (poll first, up to `ms`), as text.
fn smi_drain(fd: i32, ms: i32) -> String {
    let mut out = Vec::new();
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd of ours.
    unsafe { libc::poll(&mut pfd, 1, ms) };
    loop {
        let mut buf = [0u8; 1024];
        // SAFETY: our buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        out.extend_from_slice(&buf[..n as usize]);
    }
    String::from_utf8_lossy(&out).to_string()
}

/// Forks a process that binds `gpu`'s VM and exits; returns its pid.
fn spawn_vm_user(gpu: &TopoGpu) -> Result<i32, String> {
    let g = gpu.clone();
    // SAFETY: the child only binds and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let ok = Kfd::open().ok().and_then(|k| bind(&k, &g).ok().map(|_| k)).is_some();
        // SAFETY: exit without the parent's destructors.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let st = wait_child(pid, CHILD_SECS).ok_or("VM user hung")?;
    ensure(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0, "VM user failed to bind")?;
    Ok(pid)
}

fn has_line(text: &str, event: u32, pid: i32) -> bool {
    let prefix = format!("{:x} {:x} ", event, pid);
    text.lines().any(|l| l.starts_with(&prefix))
}

fn smi_errnos(gpus: &[TopoGpu]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    expect_errno(smi_open(&k, 0), libc::EINVAL, "SMI_EVENTS gpu_id 0")?;
    expect_errno(smi_open(&k, 0xdead_beef), libc::EINVAL, "SMI_EVENTS unknown gpu_id")?;
    let fd = smi_open(&k, gpus[0].gpu_id).map_err(|e| format!("SMI_EVENTS: {}", errno_name(e)))?;
    // SAFETY: fcntl on our fd.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    ensure_eq(fl & libc::O_ACCMODE, libc::O_RDWR, "anon fd access mode")?;
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).map_err(|e| e.to_string())?;
    ensure_eq(link.to_string_lossy().to_string(), "anon_inode:kfd_smi_ev".to_string(), "fd link")?;
    let four = [0u8; 4];
    // SAFETY: our buffers / NULL: the kernel checks.
    let w4 = unsafe { libc::write(fd, four.as_ptr().cast(), 4) };
    ensure(w4 < 0 && errno() == libc::EFAULT, format!("4-byte write: {w4} {}", errno_name(errno())))?;
    // SAFETY: as above.
    let wnull = unsafe { libc::write(fd, std::ptr::null(), 8) };
    ensure(wnull < 0 && errno() == libc::EFAULT, format!("NULL write: {wnull} {}", errno_name(errno())))?;
    let sixteen = [0u8; 16];
    // SAFETY: as above.
    let w16 = unsafe { libc::write(fd, sixteen.as_ptr().cast(), 16) };
    ensure_eq(w16, 8, "16-byte write returns 8")?;
    ensure_eq(smi_mask(fd, !0), Ok(8), "mask write")?;
    let mut buf = [0u8; 64];
    // SAFETY: our buffer.
    let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    ensure(r < 0 && errno() == libc::EAGAIN, format!("read of an empty fifo: {r} {}", errno_name(errno())))?;
    let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd.
    let p = unsafe { libc::poll(&mut pfd, 1, 0) };
    ensure_eq(p, 0, "poll of an empty fifo")?;
    // An event queued, then a zero-size read (EAGAIN, as upstream) and a
    // read into a bad pointer (EFAULT).
    let pid = spawn_vm_user(&gpus[0])?;
    // SAFETY: one pollfd.
    let p = unsafe { libc::poll(&mut pfd, 1, 5000) };
    ensure(p == 1 && pfd.revents & libc::POLLIN != 0, format!("poll after an event: {p} {:#x}", pfd.revents))?;
    // SAFETY: zero-size read.
    let r0 = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), 0) };
    ensure(r0 < 0 && errno() == libc::EAGAIN, format!("0-byte read: {r0} {}", errno_name(errno())))?;
    // Read one byte at a time: the line comes out whole, in order.
    let mut line = Vec::new();
    loop {
        let mut b = [0u8; 1];
        // SAFETY: our buffer.
        if unsafe { libc::read(fd, b.as_mut_ptr().cast(), 1) } != 1 {
            break;
        }
        line.push(b[0]);
    }
    let text = String::from_utf8_lossy(&line).to_string();
    ensure(has_line(&text, uapi::KFD_SMI_EVENT_PROCESS_START, pid), format!("byte-wise read: {text:?}"))?;
    close(fd);
    Ok(())
}

fn smi_root_sees_other_processes(gpus: &[TopoGpu]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let fd = smi_open(&k, gpus[0].gpu_id).map_err(errno_name)?;
    smi_mask(fd, START_END).map_err(errno_name)?;
    let pid = spawn_vm_user(&gpus[0])?;
    let text = smi_drain(fd, 5000);
    close(fd);
    ensure(has_line(&text, uapi::KFD_SMI_EVENT_PROCESS_START, pid), format!("no START of {pid:x} in {text:?}"))?;
    ensure(has_line(&text, uapi::KFD_SMI_EVENT_PROCESS_END, pid), format!("no END of {pid:x} in {text:?}"))?;
    // The line format: "<event> <pid hex> <comm>\n".
    let l = text.lines().find(|l| l.starts_with(&format!("c {pid:x} "))).unwrap();
    ensure(l.split(' ').count() == 3 && !l.ends_with(' '), format!("START line {l:?}"))
}

fn smi_mask_selects(gpus: &[TopoGpu]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let fd = smi_open(&k, gpus[0].gpu_id).map_err(errno_name)?;
    smi_mask(fd, 1 << (uapi::KFD_SMI_EVENT_PROCESS_END - 1)).map_err(errno_name)?;
    let pid = spawn_vm_user(&gpus[0])?;
    let text = smi_drain(fd, 5000);
    smi_mask(fd, 0).map_err(errno_name)?;
    let pid2 = spawn_vm_user(&gpus[0])?;
    let text2 = smi_drain(fd, 200);
    close(fd);
    ensure(has_line(&text, uapi::KFD_SMI_EVENT_PROCESS_END, pid), format!("no END in {text:?}"))?;
    ensure(!has_line(&text, uapi::KFD_SMI_EVENT_PROCESS_START, pid), format!("START despite the mask: {text:?}"))?;
    ensure(!text2.contains(&format!(" {pid2:x} ")), format!("events with mask 0: {text2:?}"))
}

fn smi_gpus_are_separate(gpus: &[TopoGpu]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let fd = smi_open(&k, gpus[1].gpu_id).map_err(errno_name)?;
    smi_mask(fd, START_END).map_err(errno_name)?;
    let pid = spawn_vm_user(&gpus[0])?;
    let text = smi_drain(fd, 300);
    close(fd);
    ensure(!text.contains(&format!(" {pid:x} ")), format!("gpu {} client saw gpu {}'s events: {text:?}", gpus[1].gpu_id, gpus[0].gpu_id))
}

fn smi_unprivileged_sees_only_itself(gpus: &[TopoGpu]) -> Check {
    let gpu = gpus[0].clone();
    // The unprivileged client runs in a child; it asks the parent (us) to
    // start another VM user once its SMI file is open.
    let (a, b) = socketpair();
    // SAFETY: the child runs the closure and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        close(a);
        let r = (|| -> Check {
            drop_sys_admin()?;
            let k = Kfd::open().map_err(|e| e.to_string())?;
            let fd = smi_open(&k, gpu.gpu_id).map_err(|e| format!("SMI_EVENTS: {}", errno_name(e)))?;
            smi_mask(fd, !0).map_err(errno_name)?;
            send_u64(b, 1);
            let other = recv_u64(b).ok_or("no pid from the parent")? as i32;
            let _render = bind(&k, &gpu)?;
            // SAFETY: getpid has no preconditions.
            let me = unsafe { libc::getpid() };
            let text = smi_drain(fd, 5000);
            ensure(has_line(&text, uapi::KFD_SMI_EVENT_PROCESS_START, me), format!("own START missing: {text:?}"))?;
            ensure(!text.contains(&format!(" {other:x} ")), format!("saw process {other:x}'s events: {text:?}"))
        })();
        let msg = r.err().unwrap_or_default();
        // SAFETY: write our message and exit.
        unsafe {
            libc::write(b, msg.as_ptr().cast(), msg.len());
            libc::_exit(if msg.is_empty() { 0 } else { 1 });
        }
    }
    close(b);
    let ready = recv_u64(a);
    let other = if ready.is_some() { spawn_vm_user(&gpus[0]).unwrap_or(0) } else { 0 };
    send_u64(a, other as u64);
    let st = wait_child(pid, CHILD_SECS);
    let mut buf = [0u8; 512];
    // SAFETY: our buffer.
    let n = unsafe { libc::read(a, buf.as_mut_ptr().cast(), buf.len()) };
    close(a);
    let msg = if n > 0 { String::from_utf8_lossy(&buf[..n as usize]).to_string() } else { String::new() };
    ensure(other != 0, "the other VM user did not run")?;
    match st {
        Some(s) if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0 => Ok(()),
        Some(_) => Err(if msg.is_empty() { "client failed".into() } else { msg }),
        None => Err("client hung".into()),
    }
}

fn smi_fd_pins_module_and_outlives_kfd(gpus: &[TopoGpu]) -> Check {
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let fd = smi_open(&k, gpus[0].gpu_id).map_err(errno_name)?;
    drop(k);
    // /dev/kfd is closed: only the SMI file holds the module now.
    let name = std::ffi::CString::new("rkfd").unwrap();
    // SAFETY: delete_module with a valid name.
    let r = unsafe { libc::syscall(libc::SYS_delete_module, name.as_ptr(), libc::O_NONBLOCK) };
    let e = errno();
    ensure(r != 0, "rmmod rkfd succeeded with an SMI file open")?;
    ensure_eq(errno_name(e), errno_name(libc::EWOULDBLOCK), "delete_module errno")?;
    smi_mask(fd, !0).map_err(|e| format!("mask after /dev/kfd closed: {}", errno_name(e)))?;
    let pid = spawn_vm_user(&gpus[0])?;
    let text = smi_drain(fd, 5000);
    close(fd);
    ensure(has_line(&text, uapi::KFD_SMI_EVENT_PROCESS_START, pid), format!("no START after /dev/kfd closed: {text:?}"))
}

// ---------------------------------------------------------------------------
// Cross-process.

/// A child allocates on `gpu` and reports (handle, mmap_offset, pid), then
/// waits until told to exit.
struct Owner {
    pid: i32,
    sock: i32,
    handle: u64,
    offset: u64,
}

impl Owner {
    fn spawn(gpu: &TopoGpu, flags: u32) -> Result<Owner, String> {
        let (a, b) = socketpair();
        let g = gpu.clone();
        // SAFETY: the child runs the closure and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            close(a);
            let k = Kfd::open();
            let r = k.as_ref().ok().and_then(|k| {
                let _fd = bind(k, &g).ok()?;
                let (h, off) = alloc(k.fd, g.gpu_id, 1 << 32, 1 << 16, flags, 0).ok()?;
                map(k.fd, h, g.gpu_id, true).ok()?;
                send_u64(b, h);
                send_u64(b, off);
                recv_u64(b);
                Some(())
            });
            // SAFETY: exit without destructors.
            unsafe { libc::_exit(if r.is_some() { 0 } else { 1 }) };
        }
        close(b);
        let handle = recv_u64(a).ok_or("owner failed to allocate")?;
        let offset = recv_u64(a).ok_or("owner failed")?;
        Ok(Owner { pid, sock: a, handle, offset })
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        send_u64(self.sock, 0);
        close(self.sock);
        wait_child(self.pid, CHILD_SECS);
    }
}

fn other_process_handles_are_einval(gpus: &[TopoGpu]) -> Check {
    let gpu = gpus[0].clone();
    let owner = Owner::spawn(&gpu, VRAM)?;
    let (h, pid) = (owner.handle, owner.pid);
    in_child(CHILD_SECS, move || {
        let k = Kfd::open().map_err(|e| e.to_string())?;
        let _fd = bind(&k, &gpu)?;
        // Upstream: an unknown IDR handle is ENOMEM for MAP/UNMAP
        // (kfd_ioctl_map_memory_to_gpu), EINVAL for FREE.
        expect_errno(map(k.fd, h, gpu.gpu_id, true), libc::ENOMEM, "MAP of another process's handle")?;
        expect_errno(map(k.fd, h, gpu.gpu_id, false), libc::ENOMEM, "UNMAP of another process's handle")?;
        expect_errno(free(k.fd, h), libc::EINVAL, "FREE of another process's handle")?;
        // Its proc/<pid> is still intact: the owner's VRAM is counted.
        let v = std::fs::read_to_string(format!("/sys/class/kfd/kfd/proc/{pid}/vram_{}", gpu.gpu_id))
            .map_err(|e| format!("owner's vram file: {e}"))?;
        ensure(v.trim().parse::<u64>().unwrap_or(0) >= 1 << 16, format!("owner's vram_{} = {v:?}", gpu.gpu_id))
    })?;
    drop(owner);
    Ok(())
}

fn other_process_proc_sysfs_is_world_readable(gpus: &[TopoGpu]) -> Check {
    // Upstream creates proc/<pid>/ files 0444 (KFD_SYSFS_FILE_MODE): anyone
    // may read anyone's.  Checked as user nobody.
    let gpu = gpus[0].clone();
    let owner = Owner::spawn(&gpu, GTT)?;
    let pid = owner.pid;
    in_child(CHILD_SECS, move || {
        // SAFETY: dropping privileges in the child.
        unsafe {
            if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                return Err(format!("setuid nobody: {}", errno_name(errno())));
            }
        }
        let dir = format!("/sys/class/kfd/kfd/proc/{pid}");
        for f in ["pasid".to_string(), "mem_info".to_string(), format!("vram_{}", gpu.gpu_id)] {
            std::fs::read_to_string(format!("{dir}/{f}")).map_err(|e| format!("{dir}/{f} as nobody: {e}"))?;
        }
        // Nobody cannot write them (there is nothing to write).
        ensure(std::fs::write(format!("{dir}/pasid"), "1").is_err(), "pasid is writable")
    })?;
    drop(owner);
    Ok(())
}

fn other_process_render_offsets_do_not_map(gpus: &[TopoGpu]) -> Check {
    let gpu = gpus[0].clone();
    let owner = Owner::spawn(&gpu, GTT)?;
    let off = owner.offset;
    let r = in_child(CHILD_SECS, move || {
        let k = Kfd::open().map_err(|e| e.to_string())?;
        let fd = bind(&k, &gpu)?;
        // SAFETY: mapping our own render fd at a foreign offset: the kernel decides.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), 1 << 16, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, off as i64)
        };
        if p != libc::MAP_FAILED {
            // SAFETY: unmapping what we mapped.
            unsafe { libc::munmap(p, 1 << 16) };
            return Err(format!("mmap of another process's offset {off:#x} succeeded"));
        }
        // Upstream GEM answers EACCES (the offset exists, the file may not
        // use it); the virtual GPU keeps offsets per VM and answers EINVAL.
        let e = errno();
        ensure(e == libc::EACCES || e == libc::EINVAL, format!("mmap errno {}", errno_name(e)))
    });
    drop(owner);
    r
}

fn render_fd_over_socket_acquire_vm(gpus: &[TopoGpu]) -> Check {
    // The file is what counts, not who opened it: a received render fd whose
    // VM no KFD process uses binds; one already bound to another process's
    // KFD VM is refused (upstream: avm->process_info set -> EINVAL).
    let gpu = gpus[0].clone();
    let fresh = open_rw(&gpu.render_path()).map_err(errno_name)?;
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let bound = bind(&k, &gpu)?;
    let (a, b) = socketpair();
    send_fd(a, fresh)?;
    send_fd(a, bound)?;
    let g = gpu.clone();
    let r = in_child(CHILD_SECS, move || {
        let fresh = recv_fd(b).ok_or("no fd")?;
        let bound = recv_fd(b).ok_or("no fd")?;
        let k = Kfd::open().map_err(|e| e.to_string())?;
        expect_errno(acquire_vm(k.fd, bound, g.gpu_id), libc::EINVAL, "ACQUIRE_VM with a render fd bound by another process")?;
        acquire_vm(k.fd, fresh, g.gpu_id).map_err(|e| format!("ACQUIRE_VM with a received unbound render fd: {}", errno_name(e)))?;
        let (h, _) = alloc(k.fd, g.gpu_id, 1 << 32, 1 << 16, GTT, 0).map_err(|e| format!("ALLOC: {}", errno_name(e)))?;
        free(k.fd, h).map_err(|e| format!("FREE: {}", errno_name(e)))?;
        Ok(())
    });
    close(a);
    close(b);
    close(fresh);
    close(bound);
    r?;
    // Our own binding is unaffected.
    let (h, _) = alloc(k.fd, gpu.gpu_id, 1 << 32, 1 << 16, GTT, 0).map_err(|e| format!("ALLOC after: {}", errno_name(e)))?;
    free(k.fd, h).map(|_| ()).map_err(errno_name)
}

/// `/dev/kfd` doorbell offsets name a GPU, never a process (upstream
/// `kfd_doorbell_mmap` maps the caller's own slice).
const TYPE_DOORBELL: u64 = 0x3 << 62;
const GPU_ID_SHIFT: u32 = 46;
const DOORBELL_SLICE: usize = 8192;

fn map_doorbells(kfd: i32, gpu_id: u32) -> Result<*mut u64, i32> {
    let off = TYPE_DOORBELL | (u64::from(gpu_id) << GPU_ID_SHIFT);
    // SAFETY: a shared mapping of the kernel's choosing; only used while mapped.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), DOORBELL_SLICE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, kfd, off as i64)
    };
    if p == libc::MAP_FAILED {
        Err(errno())
    } else {
        Ok(p.cast())
    }
}

fn doorbells_of_live_processes_are_separate(gpus: &[TopoGpu]) -> Check {
    // Process A maps its doorbells, rings one and sends us its /dev/kfd fd;
    // a received fd cannot map anything (EBADF), and process B, live at the
    // same time, maps the same offset and gets its own, untouched page.
    let gpu = gpus[0].clone();
    let (a, b) = socketpair();
    let g = gpu.clone();
    // SAFETY: the child runs the closure and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        close(a);
        let ok = (|| -> Option<()> {
            let k = Kfd::open().ok()?;
            let _r = bind(&k, &g).ok()?;
            let db = map_doorbells(k.fd, g.gpu_id).ok()?;
            // SAFETY: inside our doorbell mapping.
            unsafe { db.add(2).write_volatile(0xa5a5) };
            send_fd(b, k.fd).ok()?;
            recv_u64(b)?;
            // SAFETY: as above.
            let v = unsafe { db.add(2).read_volatile() };
            send_u64(b, v);
            recv_u64(b);
            Some(())
        })();
        // SAFETY: exit without destructors.
        unsafe { libc::_exit(if ok.is_some() { 0 } else { 1 }) };
    }
    close(b);
    let r = (|| -> Check {
        let afd = recv_fd(a).ok_or("process A failed to map its doorbells")?;
        let got = map_doorbells(afd, gpu.gpu_id);
        close(afd);
        expect_errno(got, libc::EBADF, "doorbell mmap through a received /dev/kfd fd")?;
        let g = gpu.clone();
        in_child(CHILD_SECS, move || {
            let k = Kfd::open().map_err(|e| e.to_string())?;
            let _r = bind(&k, &g)?;
            let db = map_doorbells(k.fd, g.gpu_id).map_err(|e| format!("B's doorbell mmap: {}", errno_name(e)))?;
            // SAFETY: inside B's doorbell mapping.
            let v = unsafe { db.add(2).read_volatile() };
            ensure_eq(v, 0, "B's doorbell (A wrote 0xa5a5 to its own)")?;
            // SAFETY: as above.
            unsafe { db.add(2).write_volatile(0x5a5a) };
            Ok(())
        })?;
        send_u64(a, 1);
        let v = recv_u64(a).ok_or("process A died")?;
        ensure_eq(v, 0xa5a5, "A's doorbell after B wrote its own")
    })();
    send_u64(a, 1);
    close(a);
    let st = wait_child(pid, CHILD_SECS);
    r?;
    ensure(st.is_some_and(|s| libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0), "process A failed")
}

fn smi_via_forked_child_is_ebadf(gpus: &[TopoGpu]) -> Check {
    // The SMI ioctl follows the /dev/kfd rule: only the opener may use it.
    let k = Kfd::open().map_err(|e| e.to_string())?;
    let kfd = k.fd;
    let id = gpus[0].gpu_id;
    in_child(CHILD_SECS, move || {
        let mut a = uapi::kfd_ioctl_smi_events_args { gpuid: id, anon_fd: 0 };
        expect_errno(ioctl_fd(kfd, uapi::AMDKFD_IOC_SMI_EVENTS, &mut a as *mut _ as usize), libc::EBADF, "SMI_EVENTS from a child")
    })
}

fn main() {
    let mut h = Harness::new();
    let gpus = topology_gpus();
    h.run("topology lists a GPU", || ensure(!gpus.is_empty(), "no GPU node"));
    if gpus.is_empty() {
        std::process::exit(h.finish("kfd-isolation"));
    }
    let two = gpus.len() >= 2;
    h.run("cgroup: denied GPU's topology files are EPERM inside, readable outside", || cgroup_hides_topology(&gpus));
    if two {
        h.run("cgroup: /dev/kfd inside does not know the denied GPU", || cgroup_hides_gpu_from_kfd(&gpus));
    } else {
        println!("# skip: cgroup with one GPU allowed (needs two GPUs)");
    }
    h.run("cgroup: every GPU denied: open(/dev/kfd) is EINVAL", || cgroup_all_denied_refuses_open(&gpus));
    h.run("cgroup: a process created before joining keeps its GPUs", || cgroup_decides_at_open(&gpus));
    h.run("smi: errnos of the ioctl and the file", || smi_errnos(&gpus));
    h.run("smi: root client sees another process's START and END", || smi_root_sees_other_processes(&gpus));
    h.run("smi: the mask selects events", || smi_mask_selects(&gpus));
    if two {
        h.run("smi: one GPU's client does not see another GPU's events", || smi_gpus_are_separate(&gpus));
    }
    h.run("smi: client without CAP_SYS_ADMIN sees only its own process", || smi_unprivileged_sees_only_itself(&gpus));
    h.run("smi: an SMI file pins rkfd and outlives /dev/kfd", || smi_fd_pins_module_and_outlives_kfd(&gpus));
    h.run("smi: SMI_EVENTS from a forked child is EBADF", || smi_via_forked_child_is_ebadf(&gpus));
    h.run("isolation: another process's memory handles are unknown here (ENOMEM/EINVAL)", || other_process_handles_are_einval(&gpus));
    h.run("isolation: proc/<pid> of others is readable (0444), not writable", || {
        other_process_proc_sysfs_is_world_readable(&gpus)
    });
    h.run("isolation: another process's render-node offset does not map", || {
        other_process_render_offsets_do_not_map(&gpus)
    });
    h.run("isolation: render fd over a Unix socket: ACQUIRE_VM by the file's state", || {
        render_fd_over_socket_acquire_vm(&gpus)
    });
    h.run("isolation: doorbells of two live processes are separate; a received fd cannot map them", || {
        doorbells_of_live_processes_are_separate(&gpus)
    });
    std::process::exit(h.finish("kfd-isolation"));
}
