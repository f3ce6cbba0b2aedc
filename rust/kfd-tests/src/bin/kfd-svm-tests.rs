// SPDX-License-Identifier: GPL-2.0
//! Guest tests of `AMDKFD_IOC_SVM` (SET_ATTR / GET_ATTR) and
//! `AMDKFD_IOC_SET_XNACK_MODE` through raw ioctls, for every GPU of the
//! guest: attribute round trips over split ranges, the aggregation rules of
//! GET_ATTR, the errno of every bad argument (sizes, alignment, overflow,
//! unmapped and device VMAs, KFD memory objects in the way), and the
//! reverse check of ALLOC_MEMORY_OF_GPU.
//!
//! CPU munmap removes the unmapped VA's ranges (`munmap_prunes_ranges`); the
//! debugfs `svm_ranges` dump is checked by `debugfs_dump`.  An optional
//! argument filters tests by name.

use kfd_tests::fuzz;
use kfd_tests::ops;

use kfd_tests::harness::{ensure, ensure_eq, expect_errno, Check, Harness};
use kfd_tests::kfd::{ensure_debugfs, errno_name, ioctl_fd, Kfd};
use kfd_uapi as uapi;

const PAGE: u64 = 4096;
const SYSMEM: u32 = uapi::KFD_IOCTL_SVM_LOCATION_SYSMEM;
const UNDEFINED: u32 = uapi::KFD_IOCTL_SVM_LOCATION_UNDEFINED;
const PREFERRED: u32 = uapi::KFD_IOCTL_SVM_ATTR_PREFERRED_LOC;
const PREFETCH: u32 = uapi::KFD_IOCTL_SVM_ATTR_PREFETCH_LOC;
const ACCESS: u32 = uapi::KFD_IOCTL_SVM_ATTR_ACCESS;
const IN_PLACE: u32 = uapi::KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE;
const NO_ACCESS: u32 = uapi::KFD_IOCTL_SVM_ATTR_NO_ACCESS;
const SET_FLAGS: u32 = uapi::KFD_IOCTL_SVM_ATTR_SET_FLAGS;
const CLR_FLAGS: u32 = uapi::KFD_IOCTL_SVM_ATTR_CLR_FLAGS;
const GRANULARITY: u32 = uapi::KFD_IOCTL_SVM_ATTR_GRANULARITY;
const DEFAULT_FLAGS: u32 = uapi::KFD_IOCTL_SVM_FLAG_HOST_ACCESS | uapi::KFD_IOCTL_SVM_FLAG_COHERENT;
const SET: u32 = uapi::KFD_IOCTL_SVM_OP_SET_ATTR;
const GET: u32 = uapi::KFD_IOCTL_SVM_OP_GET_ATTR;

/// The process: /dev/kfd with every GPU's VM acquired.
struct Ctx {
    kfd: Kfd,
    gpus: Vec<u32>,
    /// Render-node fd per GPU (index as `gpus`).
    renders: Vec<i32>,
}

impl Ctx {
    fn new() -> Result<Ctx, String> {
        let kfd = Kfd::open().map_err(|e| format!("open /dev/kfd: {e}"))?;
        let found = fuzz::discover_gpus(&kfd);
        let mut gpus = Vec::new();
        let mut renders = Vec::new();
        for &gpu in &found.ids {
            for path in &found.render_nodes {
                let Ok(fd) = ops::open_rw(path) else { continue };
                if fuzz::acquire_vm(kfd.fd, fd, gpu).is_ok() {
                    gpus.push(gpu);
                    renders.push(fd);
                    break;
                }
                fuzz::close(fd);
            }
        }
        if gpus.is_empty() {
            return Err("no GPU VM could be acquired".into());
        }
        Ok(Ctx { kfd, gpus, renders })
    }

    /// One SVM call with `attrs`; the attributes come back (also on error).
    fn svm(&self, op: u32, start: u64, size: u64, attrs: &mut [(u32, u32)]) -> Result<(), i32> {
        svm_fd(self.kfd.fd, op, start, size, attrs)
    }

    fn set(&self, start: u64, size: u64, attrs: &[(u32, u32)]) -> Check {
        let mut a = attrs.to_vec();
        self.svm(SET, start, size, &mut a)
            .map_err(|e| format!("SET_ATTR {start:#x}+{size:#x} {attrs:?}: {}", errno_name(e)))
    }

    fn get(&self, start: u64, size: u64, attrs: &[(u32, u32)]) -> Result<Vec<(u32, u32)>, String> {
        let mut a = attrs.to_vec();
        self.svm(GET, start, size, &mut a)
            .map_err(|e| format!("GET_ATTR {start:#x}+{size:#x} {attrs:?}: {}", errno_name(e)))?;
        Ok(a)
    }

    /// The full answer for one GPU: preferred, prefetch, access type of
    /// `gpu`, SET_FLAGS, CLR_FLAGS, granularity.
    fn get_all(&self, start: u64, size: u64, gpu: u32) -> Result<Vec<(u32, u32)>, String> {
        self.get(
            start,
            size,
            &[(PREFERRED, 0), (PREFETCH, 0), (ACCESS, gpu), (SET_FLAGS, 0), (CLR_FLAGS, 0), (GRANULARITY, 0)],
        )
    }
}

/// `AMDKFD_IOC_SVM` with `attrs` on any fd, the size field covering them.
fn svm_fd(fd: i32, op: u32, start: u64, size: u64, attrs: &mut [(u32, u32)]) -> Result<(), i32> {
    let n = attrs.len();
    let mut buf = vec![0u64; 3 + n];
    buf[0] = start;
    buf[1] = size;
    buf[2] = u64::from(op) | (n as u64) << 32;
    for (i, &(t, v)) in attrs.iter().enumerate() {
        buf[3 + i] = u64::from(t) | u64::from(v) << 32;
    }
    let r = ioctl_fd(fd, uapi::amdkfd_ioc_svm(n as u32), buf.as_mut_ptr() as usize);
    for (i, a) in attrs.iter_mut().enumerate() {
        *a = (buf[3 + i] as u32, (buf[3 + i] >> 32) as u32);
    }
    r.map(|_| ())
}

/// `AMDKFD_IOC_SVM` with an explicit size field and header.
fn svm_raw(fd: i32, size_field: u32, buf: &mut [u64]) -> Result<i32, i32> {
    let cmd = uapi::ioc(uapi::IOC_READ | uapi::IOC_WRITE, uapi::AMDKFD_IOCTL_BASE, uapi::ioc_nr(uapi::AMDKFD_IOC_SVM), size_field);
    ioctl_fd(fd, cmd, buf.as_mut_ptr() as usize)
}

/// An anonymous private mapping, never unmapped (so no test sees another's
/// VA again; `munmap_prunes_ranges` unmaps on purpose).
struct Anon {
    addr: u64,
    #[expect(dead_code, reason = "the mapping is never unmapped; its length is kept for a reader of the struct (and a debugger)")]
    len: u64,
}

impl Anon {
    fn new(pages: u64) -> Result<Anon, String> {
        let len = pages * PAGE;
        // SAFETY: a fresh anonymous mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err("mmap".into());
        }
        Ok(Anon { addr: p as u64, len })
    }

    fn page(&self, i: u64) -> u64 {
        self.addr + i * PAGE
    }
}


fn round_trip_over_split_ranges(c: &Ctx) -> Check {
    let g0 = c.gpus[0];
    let m = Anon::new(16)?;
    // The whole area: preferred g0, granularity 5.
    c.set(m.page(0), 16 * PAGE, &[(PREFERRED, g0), (GRANULARITY, 5)])?;
    // The middle: sysmem, access g0, GPU_RO.
    c.set(m.page(4), 4 * PAGE, &[(PREFERRED, SYSMEM), (ACCESS, g0), (SET_FLAGS, uapi::KFD_IOCTL_SVM_FLAG_GPU_RO)])?;
    // A piece inside the middle: in place, granularity 2.
    c.set(m.page(6), PAGE, &[(IN_PLACE, g0), (GRANULARITY, 2)])?;

    let ro = uapi::KFD_IOCTL_SVM_FLAG_GPU_RO;
    let head = c.get_all(m.page(0), 4 * PAGE, g0)?;
    ensure_eq(
        head,
        vec![(PREFERRED, g0), (PREFETCH, UNDEFINED), (NO_ACCESS, g0), (SET_FLAGS, DEFAULT_FLAGS), (CLR_FLAGS, !DEFAULT_FLAGS), (GRANULARITY, 5)],
        "head [0, 4)",
    )?;
    let mid = c.get_all(m.page(4), 2 * PAGE, g0)?;
    ensure_eq(
        mid,
        vec![(PREFERRED, SYSMEM), (PREFETCH, UNDEFINED), (ACCESS, g0), (SET_FLAGS, DEFAULT_FLAGS | ro), (CLR_FLAGS, !(DEFAULT_FLAGS | ro)), (GRANULARITY, 5)],
        "middle [4, 6)",
    )?;
    let piece = c.get_all(m.page(6), PAGE, g0)?;
    ensure_eq(piece[2], (IN_PLACE, g0), "page 6 access")?;
    ensure_eq(piece[5], (GRANULARITY, 2), "page 6 granularity")?;
    // Over everything: locations differ, access is the AND (none), flags
    // AND/OR, granularity the minimum.
    let all = c.get_all(m.page(0), 16 * PAGE, g0)?;
    ensure_eq(
        all,
        vec![(PREFERRED, UNDEFINED), (PREFETCH, UNDEFINED), (NO_ACCESS, g0), (SET_FLAGS, DEFAULT_FLAGS), (CLR_FLAGS, !(DEFAULT_FLAGS | ro)), (GRANULARITY, 2)],
        "all [0, 16)",
    )?;
    // Pages 4..8 except 6: access; 6: in place → AND is neither.
    let across = c.get(m.page(4), 4 * PAGE, &[(ACCESS, g0)])?;
    ensure_eq(across[0], (NO_ACCESS, g0), "access over [4, 8)")?;
    // NO_ACCESS takes both away; a later entry of the same list wins.
    c.set(m.page(4), PAGE, &[(NO_ACCESS, g0), (ACCESS, g0), (NO_ACCESS, g0)])?;
    ensure_eq(c.get(m.page(4), PAGE, &[(ACCESS, g0)])?[0], (NO_ACCESS, g0), "page 4 after NO_ACCESS")?;
    // CLR_FLAGS, granularity capped at 0x3f.
    c.set(m.page(8), 8 * PAGE, &[(CLR_FLAGS, uapi::KFD_IOCTL_SVM_FLAG_HOST_ACCESS), (GRANULARITY, 1000)])?;
    let tail = c.get(m.page(8), 8 * PAGE, &[(SET_FLAGS, 0), (GRANULARITY, 0)])?;
    ensure_eq(tail, vec![(SET_FLAGS, uapi::KFD_IOCTL_SVM_FLAG_COHERENT), (GRANULARITY, 0x3f)], "tail")?;
    // PREFETCH_LOC is recorded.
    c.set(m.page(15), PAGE, &[(PREFETCH, g0)])?;
    ensure_eq(c.get(m.page(15), PAGE, &[(PREFETCH, 0)])?[0], (PREFETCH, g0), "prefetch")
}

fn multi_gpu_access(c: &Ctx) -> Check {
    if c.gpus.len() < 2 {
        println!("# one GPU: multi-GPU access skipped");
        return Ok(());
    }
    let (a, b) = (c.gpus[0], c.gpus[1]);
    let m = Anon::new(4)?;
    c.set(m.page(0), 4 * PAGE, &[(ACCESS, a), (IN_PLACE, b)])?;
    c.set(m.page(2), 2 * PAGE, &[(PREFERRED, b)])?;
    let r = c.get(m.page(0), 4 * PAGE, &[(ACCESS, a), (ACCESS, b), (PREFERRED, 0)])?;
    ensure_eq(r, vec![(ACCESS, a), (IN_PLACE, b), (PREFERRED, UNDEFINED)], "two GPUs over two ranges")?;
    let r = c.get(m.page(2), 2 * PAGE, &[(PREFERRED, 0)])?;
    ensure_eq(r[0], (PREFERRED, b), "preferred GPU b")
}

fn no_range_reports_defaults(c: &Ctx) -> Check {
    let m = Anon::new(3)?;
    let d = c.get_all(m.page(0), 3 * PAGE, c.gpus[0])?;
    ensure_eq(
        d.clone(),
        vec![(PREFERRED, UNDEFINED), (PREFETCH, UNDEFINED), (NO_ACCESS, c.gpus[0]), (SET_FLAGS, DEFAULT_FLAGS), (CLR_FLAGS, !DEFAULT_FLAGS), (GRANULARITY, 9)],
        "defaults with XNACK off",
    )?;
    // nattr 0 creates ranges with the defaults: same answers.
    c.set(m.page(1), PAGE, &[])?;
    ensure_eq(c.get_all(m.page(0), 3 * PAGE, c.gpus[0])?, d, "after SET_ATTR without attributes")?;
    // Gaps do not count: one range with granularity 3 next to nothing.
    c.set(m.page(2), PAGE, &[(GRANULARITY, 3), (PREFERRED, SYSMEM)])?;
    let r = c.get(m.page(2), PAGE, &[(GRANULARITY, 0), (PREFERRED, 0)])?;
    ensure_eq(r, vec![(GRANULARITY, 3), (PREFERRED, SYSMEM)], "one range")?;
    let r = c.get(m.page(0), 3 * PAGE, &[(GRANULARITY, 0)])?;
    ensure_eq(r[0], (GRANULARITY, 3), "minimum over the ranges only")
}

fn argument_errnos(c: &Ctx) -> Check {
    let m = Anon::new(4)?;
    let a = m.page(0);
    let g0 = c.gpus[0];
    let set = |start, size, attrs: &[(u32, u32)]| c.svm(SET, start, size, &mut attrs.to_vec());
    let get = |start, size, attrs: &[(u32, u32)]| c.svm(GET, start, size, &mut attrs.to_vec());
    expect_errno(set(a + 8, PAGE, &[]), libc::EINVAL, "unaligned start")?;
    expect_errno(set(a, PAGE + 8, &[]), libc::EINVAL, "unaligned size")?;
    expect_errno(set(0, PAGE, &[]), libc::EINVAL, "start 0")?;
    expect_errno(set(a, 0, &[]), libc::EINVAL, "size 0")?;
    expect_errno(get(a + 1, PAGE, &[]), libc::EINVAL, "GET unaligned")?;
    expect_errno(c.svm(7, a, PAGE, &mut []), libc::EINVAL, "unknown op")?;
    expect_errno(set(a, PAGE, &[(8, 0)]), libc::EINVAL, "unknown attribute type")?;
    expect_errno(set(a, PAGE, &[(ACCESS, 0xdead)]), libc::EINVAL, "unknown gpu_id")?;
    expect_errno(set(a, PAGE, &[(ACCESS, SYSMEM)]), libc::EINVAL, "ACCESS to sysmem")?;
    expect_errno(set(a, PAGE, &[(PREFERRED, 0xdead)]), libc::EINVAL, "PREFERRED_LOC unknown gpu")?;
    expect_errno(set(a, PAGE, &[(PREFETCH, UNDEFINED)]), libc::EINVAL, "PREFETCH_LOC UNDEFINED")?;
    expect_errno(set(a, PAGE, &[(SET_FLAGS, 1), (NO_ACCESS, 0xdead)]), libc::EINVAL, "bad second entry")?;
    expect_errno(get(a, PAGE, &[(IN_PLACE, g0)]), libc::EINVAL, "GET ACCESS_IN_PLACE")?;
    expect_errno(get(a, PAGE, &[(NO_ACCESS, g0)]), libc::EINVAL, "GET NO_ACCESS")?;
    expect_errno(get(a, PAGE, &[(99, 0)]), libc::EINVAL, "GET unknown type")?;
    // GET: an unknown GPU in ACCESS fails after the entries before it were answered.
    let mut q = vec![(GRANULARITY, 0), (ACCESS, 0xdead)];
    expect_errno(c.svm(GET, a, PAGE, &mut q), libc::EINVAL, "GET ACCESS unknown gpu")?;
    ensure_eq(q[0], (GRANULARITY, 9), "answered before the bad entry")?;
    // Overflow of start + size.
    expect_errno(set(0xffff_ffff_ffff_0000, 0x20000, &[]), libc::EOVERFLOW, "start + size wraps")?;
    expect_errno(get(0xffff_ffff_ffff_0000, 0x20000, &[]), libc::EOVERFLOW, "GET start + size wraps")?;
    // A failed call changed nothing.
    ensure_eq(c.get(a, 4 * PAGE, &[(PREFERRED, 0)])?[0], (PREFERRED, UNDEFINED), "nothing recorded")
}

fn vma_errnos(c: &Ctx) -> Check {
    let m = Anon::new(4)?;
    let set = |start, size| c.svm(SET, start, size, &mut []);
    // Unmapped: a hole punched in the middle.
    // SAFETY: unmapping a page of our own mapping.
    unsafe { libc::munmap(m.page(2) as *mut libc::c_void, PAGE as usize) };
    expect_errno(set(m.page(2), PAGE), libc::EFAULT, "unmapped page")?;
    expect_errno(set(m.page(0), 4 * PAGE), libc::EFAULT, "range with a hole")?;
    expect_errno(c.svm(GET, m.page(1), 2 * PAGE, &mut [(GRANULARITY, 0)]), libc::EFAULT, "GET over a hole")?;
    c.set(m.page(0), 2 * PAGE, &[])?;
    // Kernel addresses and the fuzz zone's never-mapped hole.
    expect_errno(set(0xffff_8000_0000_0000, PAGE), libc::EFAULT, "kernel address")?;
    expect_errno(set(fuzz::HOLE as u64, PAGE), libc::EFAULT, "never-mapped address")?;
    // PROT_NONE memory is still memory (libhsakmt reserves VA that way).
    // SAFETY: changing protection of our own page.
    unsafe { libc::mprotect(m.page(3) as *mut libc::c_void, PAGE as usize, libc::PROT_NONE) };
    c.set(m.page(3), PAGE, &[])?;
    Ok(())
}

/// A GTT object of `gpu` mapped through the render node: a `VM_IO |
/// VM_PFNMAP` VMA.
fn pfnmap_vma_is_efault(c: &Ctx) -> Check {
    let gpu = c.gpus[0];
    let m = Anon::new(1)?; // a VA for the object
    let mut a = uapi::kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: m.page(0),
        size: PAGE,
        gpu_id: gpu,
        flags: uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    c.kfd
        .ioctl(uapi::AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a)
        .map_err(|e| format!("ALLOC GTT: {}", errno_name(e)))?;
    // SAFETY: mapping the object through its render node.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PAGE as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            c.renders[0],
            a.mmap_offset as libc::off_t,
        )
    };
    let r = if p == libc::MAP_FAILED {
        Err("mmap of the render node failed".to_string())
    } else {
        let r = expect_errno(c.svm(SET, p as u64, PAGE, &mut []), libc::EFAULT, "VM_PFNMAP VMA");
        // SAFETY: unmapping what we mapped.
        unsafe { libc::munmap(p, PAGE as usize) };
        r
    };
    let mut f = uapi::kfd_ioctl_free_memory_of_gpu_args { handle: a.handle };
    c.kfd.ioctl(uapi::AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut f).map_err(|e| format!("FREE: {}", errno_name(e)))?;
    r
}

/// A KFD memory object mapped on a GPU owns its VA: SVM there is
/// `-EADDRINUSE`; once unmapped from the GPU it is not (upstream checks the
/// GPU VMs' mappings).  And ALLOC_MEMORY_OF_GPU refuses VAs of SVM ranges.
fn memory_objects_and_svm_exclude_each_other(c: &Ctx) -> Check {
    let gpu = c.gpus[0];
    let m = Anon::new(8)?;
    let mut a = uapi::kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: m.page(2),
        size: 2 * PAGE,
        gpu_id: gpu,
        flags: uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    c.kfd
        .ioctl(uapi::AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a)
        .map_err(|e| format!("ALLOC VRAM: {}", errno_name(e)))?;
    let ids = [gpu];
    let mut mm = uapi::kfd_ioctl_map_memory_to_gpu_args {
        handle: a.handle,
        device_ids_array_ptr: ids.as_ptr() as u64,
        n_devices: 1,
        n_success: 0,
    };
    let check = (|| {
        c.kfd.ioctl(uapi::AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut mm).map_err(|e| format!("MAP: {}", errno_name(e)))?;
        expect_errno(c.svm(SET, m.page(0), 8 * PAGE, &mut []), libc::EADDRINUSE, "SET over a mapped object")?;
        expect_errno(c.svm(SET, m.page(3), PAGE, &mut []), libc::EADDRINUSE, "SET inside a mapped object")?;
        expect_errno(c.svm(GET, m.page(3), PAGE, &mut [(GRANULARITY, 0)]), libc::EADDRINUSE, "GET inside")?;
        c.set(m.page(0), 2 * PAGE, &[])?;
        c.set(m.page(4), 4 * PAGE, &[])?;
        let mut um = uapi::kfd_ioctl_unmap_memory_from_gpu_args {
            handle: a.handle,
            device_ids_array_ptr: ids.as_ptr() as u64,
            n_devices: 1,
            n_success: 0,
        };
        c.kfd.ioctl(uapi::AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &mut um).map_err(|e| format!("UNMAP: {}", errno_name(e)))?;
        // Unmapped from every GPU: SVM may use the VA (as upstream).
        c.set(m.page(3), PAGE, &[])?;
        Ok::<(), String>(())
    })();
    let mut f = uapi::kfd_ioctl_free_memory_of_gpu_args { handle: a.handle };
    let freed = c.kfd.ioctl(uapi::AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut f);
    check?;
    freed.map_err(|e| format!("FREE: {}", errno_name(e)))?;
    // The reverse: ALLOC at a VA inside an SVM range.
    let mut b = uapi::kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: m.page(5),
        size: PAGE,
        gpu_id: gpu,
        flags: uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
        ..Default::default()
    };
    let r = c.kfd.ioctl(uapi::AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut b).map(|_| ());
    if r.is_ok() {
        let mut f = uapi::kfd_ioctl_free_memory_of_gpu_args { handle: b.handle };
        let _ = c.kfd.ioctl(uapi::AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut f);
    }
    expect_errno(r, libc::EADDRINUSE, "ALLOC inside an SVM range")?;
    // A user pointer inside an SVM range, at a free GPU VA.
    let free_va = Anon::new(1)?;
    let mut u = uapi::kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: free_va.page(0),
        size: PAGE,
        mmap_offset: m.page(6),
        gpu_id: gpu,
        flags: uapi::KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
        ..Default::default()
    };
    let r = c.kfd.ioctl(uapi::AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut u).map(|_| ());
    if r.is_ok() {
        let mut f = uapi::kfd_ioctl_free_memory_of_gpu_args { handle: u.handle };
        let _ = c.kfd.ioctl(uapi::AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut f);
    }
    expect_errno(r, libc::EADDRINUSE, "USERPTR inside an SVM range")
}

fn size_field_rules(c: &Ctx) -> Check {
    let m = Anon::new(1)?;
    let fd = c.kfd.fd;
    let header = |nattr: u32| vec![m.page(0), PAGE, u64::from(GET) | u64::from(nattr) << 32];
    let expect = |r: Result<i32, i32>, want: i32, what: &str| expect_errno(r.map(|_| ()), want, what);
    // nattr 1 but the size field only covers the header.
    let mut b = header(1);
    b.push(u64::from(GRANULARITY));
    expect(svm_raw(fd, 24, &mut b), libc::EINVAL, "size field without room for the attribute")?;
    // nattr huge: no overflow, just too small a size field.
    let mut b = header(u32::MAX);
    b.push(u64::from(GRANULARITY));
    expect(svm_raw(fd, 32, &mut b), libc::EINVAL, "nattr 0xffffffff")?;
    let mut b = vec![0u64; 16383 / 8 + 1];
    b[..3].copy_from_slice(&header(0x1000_0000));
    expect(svm_raw(fd, 16376, &mut b), libc::EINVAL, "nattr 2^28 with the largest size field")?;
    // A size field smaller than the header.
    let mut b = header(0);
    expect(svm_raw(fd, 16, &mut b), libc::EINVAL, "size field 16")?;
    expect(svm_raw(fd, 0, &mut b), libc::EINVAL, "size field 0")?;
    // Larger than needed: fine (struct growth), the rest is untouched.
    let mut b = header(1);
    b.push(u64::from(GRANULARITY));
    b.push(0x5555_5555_5555_5555);
    svm_raw(fd, 40, &mut b).map_err(|e| format!("size field 40 for one attribute: {}", errno_name(e)))?;
    ensure_eq(b[3] >> 32, 9, "granularity answered")?;
    ensure_eq(b[4], 0x5555_5555_5555_5555, "bytes past the attributes")?;
    // The most attributes the 14-bit size field allows: 2044.
    let n = (16383 - 24) / 8;
    let mut attrs = vec![(GRANULARITY, 0); n];
    c.svm(GET, m.page(0), PAGE, &mut attrs).map_err(|e| format!("GET with {n} attributes: {}", errno_name(e)))?;
    ensure(attrs.iter().all(|&a| a == (GRANULARITY, 9)), "all answered")?;
    let mut attrs = vec![(SET_FLAGS, 0x10); n];
    c.svm(SET, m.page(0), PAGE, &mut attrs).map_err(|e| format!("SET with {n} attributes: {}", errno_name(e)))?;
    // NULL argument pointer.
    let cmd = uapi::amdkfd_ioc_svm(0);
    expect(ioctl_fd(fd, cmd, 0), libc::EFAULT, "NULL argument")
}

fn many_ranges(c: &Ctx) -> Check {
    // 512 single-page ranges, then one call over all of them.
    let m = Anon::new(1024)?;
    for i in 0..512 {
        c.set(m.page(2 * i), PAGE, &[(GRANULARITY, (i % 5) as u32)])?;
    }
    c.set(m.page(0), 1024 * PAGE, &[(SET_FLAGS, uapi::KFD_IOCTL_SVM_FLAG_GPU_EXEC)])?;
    let r = c.get(m.page(0), 1024 * PAGE, &[(SET_FLAGS, 0), (GRANULARITY, 0)])?;
    ensure_eq(r, vec![(SET_FLAGS, DEFAULT_FLAGS | uapi::KFD_IOCTL_SVM_FLAG_GPU_EXEC), (GRANULARITY, 0)], "over 1024 ranges")?;
    let r = c.get(m.page(3), 2 * PAGE, &[(GRANULARITY, 0)])?;
    ensure_eq(r[0], (GRANULARITY, 2), "pages 3, 4")
}

/// A process that never acquired a VM: SET_ATTR is `-EINVAL` (upstream: no
/// `process_info`), GET_ATTR works.
fn no_vm_no_set(_c: &Ctx) -> Check {
    // SAFETY: fork; the child only makes syscalls and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = (|| {
            let Ok(k) = Kfd::open() else { return 10 };
            let Ok(m) = Anon::new(1) else { return 11 };
            let mut none: [(u32, u32); 0] = [];
            if svm_fd(k.fd, SET, m.page(0), PAGE, &mut none) != Err(libc::EINVAL) {
                return 12;
            }
            let mut q = [(GRANULARITY, 0)];
            if svm_fd(k.fd, GET, m.page(0), PAGE, &mut q).is_err() || q[0] != (GRANULARITY, 9) {
                return 13;
            }
            0
        })();
        // SAFETY: leaving the child without running the parent's atexit handlers.
        unsafe { libc::_exit(code) };
    }
    ensure(pid > 0, "fork")?;
    let mut status = 0;
    // SAFETY: waiting for our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    ensure(libc::WIFEXITED(status), "child did not exit")?;
    ensure_eq(libc::WEXITSTATUS(status), 0, "child status (12: SET_ATTR not EINVAL, 13: GET_ATTR)")
}

/// The file of another process (a forked child) is `-EBADF`.
fn child_with_parents_fd_is_ebadf(c: &Ctx) -> Check {
    let fd = c.kfd.fd;
    // SAFETY: fork; the child only makes syscalls and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = match svm_fd(fd, GET, 0x10000, PAGE, &mut []) {
            Err(e) if e == libc::EBADF => 0,
            _ => 1,
        };
        // SAFETY: leaving the child.
        unsafe { libc::_exit(code) };
    }
    ensure(pid > 0, "fork")?;
    let mut status = 0;
    // SAFETY: waiting for our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    ensure(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child got something else than EBADF")
}

fn xnack(c: &Ctx) -> Check {
    let mut x = uapi::kfd_ioctl_set_xnack_mode_args { xnack_enabled: -1 };
    c.kfd.ioctl(uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut x).map_err(|e| format!("query: {}", errno_name(e)))?;
    ensure_eq(x.xnack_enabled, 0, "default mode")?;
    // Setting the current mode again is fine.
    let mut x = uapi::kfd_ioctl_set_xnack_mode_args { xnack_enabled: 0 };
    c.kfd.ioctl(uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut x).map_err(|e| format!("set 0: {}", errno_name(e)))?;
    let mut x = uapi::kfd_ioctl_set_xnack_mode_args { xnack_enabled: 1 };
    match c.kfd.ioctl(uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut x) {
        Err(e) if e == libc::EPERM => {
            println!("# XNACK cannot be enabled here (EPERM): not every GPU switches per process");
            return Ok(());
        }
        Err(e) => return Err(format!("enable: {}", errno_name(e))),
        Ok(_) => {}
    }
    let mut q = uapi::kfd_ioctl_set_xnack_mode_args { xnack_enabled: -1 };
    c.kfd.ioctl(uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut q).map_err(|e| format!("query: {}", errno_name(e)))?;
    ensure_eq(q.xnack_enabled, 1, "mode after enabling")?;
    // New ranges (and the no-range answer) give every GPU access.
    let m = Anon::new(2)?;
    let r = c.get(m.page(0), 2 * PAGE, &[(ACCESS, c.gpus[0])])?;
    ensure_eq(r[0], (ACCESS, c.gpus[0]), "no range, XNACK on")?;
    c.set(m.page(1), PAGE, &[])?;
    let mut want = Vec::new();
    let mut q: Vec<(u32, u32)> = c.gpus.iter().map(|&g| (ACCESS, g)).collect();
    c.svm(GET, m.page(1), PAGE, &mut q).map_err(|e| errno_name(e))?;
    for &g in &c.gpus {
        want.push((ACCESS, g));
    }
    let result = ensure_eq(q, want, "new range, XNACK on");
    let mut x = uapi::kfd_ioctl_set_xnack_mode_args { xnack_enabled: 0 };
    c.kfd.ioctl(uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut x).map_err(|e| format!("disable: {}", errno_name(e)))?;
    result
}

/// The debugfs `kfd/proc/<pid>/svm_ranges` dump shows what SET_ATTR did:
/// one `range` line per range with its bounds (pages), locations, flags,
/// granularity, access bitmap and the GPUs it is mapped on (bit = the
/// GPU's index in the `# gpus:` line).  With XNACK off, ACCESS maps the
/// range on that GPU at once (where it has device-private VRAM: SVM
/// mapping is off on the others).
fn debugfs_dump(c: &Ctx) -> Check {
    let g0 = c.gpus[0];
    let m = Anon::new(16)?;
    c.set(m.page(0), 16 * PAGE, &[(PREFERRED, g0), (GRANULARITY, 5)])?;
    c.set(m.page(4), 4 * PAGE, &[(ACCESS, g0), (CLR_FLAGS, uapi::KFD_IOCTL_SVM_FLAG_COHERENT), (PREFETCH, SYSMEM)])?;
    ensure_debugfs()?;
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let path = format!("/sys/kernel/debug/kfd/proc/{pid}/svm_ranges");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let head = text.lines().next().unwrap_or("");
    ensure(head.contains("inclusive page numbers"), format!("header line: {head:?}"))?;
    let gpus_line = text.lines().find(|l| l.starts_with("# gpus:")).ok_or("no '# gpus:' line")?;
    let idx = gpus_line
        .split_whitespace()
        .find_map(|w| {
            let (i, id) = w.split_once('=')?;
            (u32::from_str_radix(id.trim_start_matches("0x"), 16).ok()? == g0).then(|| i.parse::<u32>().ok())?
        })
        .ok_or(format!("gpu {g0:#x} not in {gpus_line:?}"))?;
    let hex = |w: &str| u64::from_str_radix(w.trim_start_matches("0x"), 16).map_err(|e| format!("{w:?}: {e}"));
    let (first, last) = (m.page(0) / PAGE, m.page(15) / PAGE);
    let mut got = Vec::new();
    let mut mapped = Vec::new();
    for l in text.lines().filter(|l| l.starts_with("range ")) {
        let w: Vec<&str> = l.split_whitespace().collect();
        ensure_eq(w.len(), 11, "words per range line")?;
        let (s, e) = (hex(w[1])?, hex(w[2])?);
        if e < first || s > last {
            continue;
        }
        got.push((s - first, e - first, w[3].to_string(), w[4].to_string(), hex(w[6])?, w[7].to_string(), hex(w[8])?));
        mapped.push(hex(w[10])?);
    }
    let g = format!("{g0:#x}");
    let want = vec![
        (0, 3, g.clone(), "undef".to_string(), u64::from(DEFAULT_FLAGS), "5".to_string(), 0),
        (4, 7, g.clone(), "sys".to_string(), u64::from(uapi::KFD_IOCTL_SVM_FLAG_HOST_ACCESS), "5".to_string(), 1 << idx),
        (8, 15, g.clone(), "undef".to_string(), u64::from(DEFAULT_FLAGS), "5".to_string(), 0),
    ];
    ensure_eq(got, want, "range lines (page offsets, preferred, prefetch, flags, granularity, access)")?;
    ensure(
        mapped[0] == 0 && mapped[2] == 0 && (mapped[1] == 0 || mapped[1] == 1 << idx),
        format!("mapped_on {mapped:x?}: only the ACCESS range, only on gpu {idx}"),
    )?;
    println!("# svm_ranges: {} range lines, mapped_on {mapped:x?}", text.lines().filter(|l| l.starts_with("range ")).count());
    Ok(())
}

/// A CPU `munmap` removes the attribute ranges of the unmapped VA (the
/// deferred worker; SET/GET_ATTR wait for it as upstream flushes it): GET
/// over the hole is `EFAULT` (no VMA, `svm_range_is_valid`), the rest keeps
/// its attributes, and a new mapping at the same VA starts with none
/// (the no-range defaults), also when queried together with the old parts.
fn munmap_prunes_ranges(c: &Ctx) -> Check {
    let g0 = c.gpus[0];
    let m = Anon::new(16)?;
    let d = c.get_all(m.page(4), 4 * PAGE, g0)?;
    c.set(m.page(0), 16 * PAGE, &[(PREFERRED, g0), (GRANULARITY, 3), (CLR_FLAGS, uapi::KFD_IOCTL_SVM_FLAG_COHERENT)])?;
    ensure(c.get_all(m.page(4), 4 * PAGE, g0)? != d, "attributes set")?;
    // SAFETY: unmapping pages of our own mapping, not used afterwards.
    ensure(unsafe { libc::munmap(m.page(4) as *mut libc::c_void, (4 * PAGE) as usize) } == 0, "munmap")?;
    let mut q = [(GRANULARITY, 0)];
    expect_errno(c.svm(GET, m.page(4), 4 * PAGE, &mut q), libc::EFAULT, "GET_ATTR over the hole")?;
    let kept = vec![(PREFERRED, g0), (GRANULARITY, 3), (SET_FLAGS, uapi::KFD_IOCTL_SVM_FLAG_HOST_ACCESS)];
    let q = [(PREFERRED, 0), (GRANULARITY, 0), (SET_FLAGS, 0)];
    ensure_eq(c.get(m.page(0), 4 * PAGE, &q)?, kept.clone(), "before the hole")?;
    ensure_eq(c.get(m.page(8), 8 * PAGE, &q)?, kept.clone(), "after the hole")?;
    // SAFETY: a fresh anonymous mapping in the hole we made.
    let p = unsafe {
        libc::mmap(
            m.page(4) as *mut libc::c_void,
            (4 * PAGE) as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    ensure(p as u64 == m.page(4), format!("mmap in the hole: {p:?}"))?;
    ensure_eq(c.get_all(m.page(4), 4 * PAGE, g0)?, d.clone(), "new mapping at the same VA")?;
    // Over all 16 pages: the old parts' granularity 3 is the minimum, but
    // the preferred location no longer agrees only if the middle had a
    // range; with none there, g0 is what the ranges say.
    ensure_eq(c.get(m.page(0), 16 * PAGE, &q)?, kept, "old parts around a range-less middle")?;
    // Setting the middle again creates a fresh range there.
    c.set(m.page(4), 4 * PAGE, &[(GRANULARITY, 4)])?;
    let r = c.get(m.page(4), 4 * PAGE, &[(PREFERRED, 0), (GRANULARITY, 0)])?;
    ensure_eq(r, vec![(PREFERRED, UNDEFINED), (GRANULARITY, 4)], "fresh range in the new mapping")
}

fn main() {
    let mut h = Harness::new();
    let ctx = match Ctx::new() {
        Ok(c) => c,
        Err(e) => {
            h.run("setup", || Err(e));
            std::process::exit(h.finish("svm"));
        }
    };
    println!("# GPUs with a VM: {:?}", ctx.gpus);
    h.run("round_trip_over_split_ranges", || round_trip_over_split_ranges(&ctx));
    h.run("multi_gpu_access", || multi_gpu_access(&ctx));
    h.run("no_range_reports_defaults", || no_range_reports_defaults(&ctx));
    h.run("argument_errnos", || argument_errnos(&ctx));
    h.run("vma_errnos", || vma_errnos(&ctx));
    h.run("pfnmap_vma_is_efault", || pfnmap_vma_is_efault(&ctx));
    h.run("memory_objects_and_svm_exclude_each_other", || memory_objects_and_svm_exclude_each_other(&ctx));
    h.run("size_field_rules", || size_field_rules(&ctx));
    h.run("many_ranges", || many_ranges(&ctx));
    h.run("no_vm_no_set", || no_vm_no_set(&ctx));
    h.run("child_with_parents_fd_is_ebadf", || child_with_parents_fd_is_ebadf(&ctx));
    h.run("xnack", || xnack(&ctx));
    h.run("debugfs_dump", || debugfs_dump(&ctx));
    h.run("munmap_prunes_ranges", || munmap_prunes_ranges(&ctx));
    for &fd in &ctx.renders {
        fuzz::close(fd);
    }
    std::process::exit(h.finish("svm"));
}
