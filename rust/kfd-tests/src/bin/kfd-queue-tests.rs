// SPDX-License-Identifier: GPL-2.0
//! Guest tests of rkfd's user-mode queue ioctls through raw /dev/kfd:
//! CREATE_QUEUE validation (every bad argument gives upstream's errno, in
//! upstream's order), queue ids and doorbell offsets, per-process
//! `queues/<qid>` sysfs, queue buffers pinned against unmapping,
//! DESTROY/UPDATE_QUEUE, SET_CU_MASK, ALLOC_QUEUE_GWS,
//! GET_QUEUE_WAVE_STATE, the per-device limit, two processes' separate
//! queues, their doorbells' BAR indexes in the HQDs and the runlist, and
//! teardown with queues alive; and issue #16's throughput
//! workload (rounds of four PM4 or SDMA queues created, given 1024
//! packets and an interrupt each, run and destroyed; 256 rounds, the
//! issue's 1024 with `RKFD_ISSUE16_ROUNDS=1024`), checked packet by packet
//! and event by event, untimed.
//!
//! When the GPU driver serves no hardware queues (`hqd_load` missing),
//! CREATE_QUEUE of a valid queue answers EOPNOTSUPP after validation; the
//! tests that need a queue then check exactly that.  An optional argument
//! filters tests by name.

use kfd_tests::debugfs::{hqd_dumps, holds_ring, HqdDump};
use kfd_tests::fuzz;
use kfd_tests::ops;

use kfd_tests::harness::{ensure, ensure_eq, expect_errno, expect_ok, Check, Harness};
use kfd_tests::ops::in_child;
use kfd_tests::kfd::{errno_name, Kfd};
use kfd_uapi as uapi;
use uapi::kfd_ioctl_create_queue_args as CreateArgs;

/// `-ENOTSUPP` as user space sees it (CREATE_QUEUE's unknown type).
/// How long a scenario's child process may run before it is killed and
/// reported as hung (generous: a loaded TCG guest is slow).
const CHILD_SECS: u32 = 300;
const ENOTSUPP: i32 = 524;
const KERNEL_ADDR: u64 = 0xffff_8000_0000_0000;
/// GPU VAs of the test objects (GPU VM aperture, away from the CPU's heap).
const VA_RING: u64 = 0x20_0000_0000;
const VA_PTRS: u64 = 0x20_1000_0000;
const VA_EOP: u64 = 0x20_2000_0000;
const VA_CTX: u64 = 0x20_3000_0000;
const VA_UNMAPPED: u64 = 0x20_4000_0000;
const RING_OBJ: u64 = 1 << 20;

/// One process's binding to one GPU with queue memory allocated and mapped.
struct Setup {
    kfd: Kfd,
    gpu: u32,
    render: i32,
    ring_handle: u64,
    cwsr_size: u32,
    ctl_stack_size: u32,
    sdma_engines: u32,
}

impl Drop for Setup {
    fn drop(&mut self) {
        fuzz::close(self.render);
    }
}

fn node_props(gpu: u32) -> Option<String> {
    let rd = std::fs::read_dir("/sys/devices/virtual/kfd/kfd/topology/nodes").ok()?;
    for e in rd.flatten() {
        let id = std::fs::read_to_string(e.path().join("gpu_id")).ok()?;
        if id.trim().parse::<u32>().ok() == Some(gpu) {
            return std::fs::read_to_string(e.path().join("properties")).ok();
        }
    }
    None
}

fn prop(props: &str, key: &str) -> u32 {
    props
        .lines()
        .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// ALLOC (writable) and, if `map`, MAP on `gpu`; returns the handle.
fn alloc(k: &Kfd, gpu: u32, va: u64, size: u64, flags: u32, map: bool) -> Result<u64, String> {
    let (handle, _) = ops::alloc(k.fd, gpu, va, size, flags | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE, 0)
        .map_err(|e| format!("ALLOC va {va:#x}: {}", errno_name(e)))?;
    if map {
        ops::map(k.fd, handle, gpu, true).map_err(|e| format!("MAP va {va:#x}: {}", errno_name(e)))?;
    }
    Ok(handle)
}

fn first_gpu() -> Result<u32, String> {
    // KFD_TEST_GPU=<n>: the n-th GPU of the topology instead of the first
    // (to run the tests on each profile of a multi-GPU guest).
    let n = std::env::var("KFD_TEST_GPU").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
    fuzz::topology_gpu_ids().get(n).copied().ok_or_else(|| format!("no GPU {n} in topology"))
}

fn setup() -> Result<Setup, String> {
    let kfd = Kfd::open().map_err(|e| e.to_string())?;
    let gpu = first_gpu()?;
    let props = node_props(gpu).ok_or("no topology node")?;
    let minor = prop(&props, "drm_render_minor");
    let render = ops::open_rw(&format!("/dev/dri/renderD{minor}")).ok().ok_or("open render node")?;
    fuzz::acquire_vm(kfd.fd, render, gpu).map_err(|e| format!("ACQUIRE_VM: {}", errno_name(e)))?;
    let cwsr_size = prop(&props, "cwsr_size");
    let ctl_stack_size = prop(&props, "ctl_stack_size");
    let sdma_engines = prop(&props, "num_sdma_engines") + prop(&props, "num_sdma_xgmi_engines");
    let gtt = uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT;
    let vram = uapi::KFD_IOC_ALLOC_MEM_FLAGS_VRAM;
    let ring_handle = alloc(&kfd, gpu, VA_RING, RING_OBJ, gtt, true)?;
    alloc(&kfd, gpu, VA_PTRS, 4096, gtt, true)?;
    alloc(&kfd, gpu, VA_EOP, 4096, vram, true)?;
    let ctx = (u64::from(cwsr_size) + 0xfff) & !0xfff;
    alloc(&kfd, gpu, VA_CTX, ctx.max(4096), vram, true)?;
    // Allocated, never mapped.
    alloc(&kfd, gpu, VA_UNMAPPED, 4096, gtt, false)?;
    Ok(Setup { kfd, gpu, render, ring_handle, cwsr_size, ctl_stack_size, sdma_engines })
}

impl Setup {
    /// CREATE_QUEUE arguments for a queue of `queue_type` with its ring at
    /// `ring` (`ring_size` bytes) and its read and write pointers at `rptr`
    /// and `wptr`; a compute queue also gets the EOP buffer and the CWSR
    /// area, as libhsakmt gives them.
    fn queue_args(&self, queue_type: u32, ring: u64, ring_size: u32, rptr: u64, wptr: u64) -> CreateArgs {
        let mut a = CreateArgs {
            ring_base_address: ring,
            write_pointer_address: wptr,
            read_pointer_address: rptr,
            ring_size,
            gpu_id: self.gpu,
            queue_type,
            queue_percentage: 100,
            queue_priority: 7,
            ..Default::default()
        };
        if queue_type != uapi::KFD_IOC_QUEUE_TYPE_SDMA && queue_type != uapi::KFD_IOC_QUEUE_TYPE_SDMA_XGMI {
            a.eop_buffer_address = VA_EOP;
            a.eop_buffer_size = 4096;
            a.ctx_save_restore_address = VA_CTX;
            a.ctx_save_restore_size = self.cwsr_size;
            a.ctl_stack_size = self.ctl_stack_size;
        }
        a
    }

    fn aql(&self) -> CreateArgs {
        self.queue_args(uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, VA_RING, 64 * 1024, VA_PTRS + 8, VA_PTRS)
    }

    fn sdma(&self) -> CreateArgs {
        self.queue_args(uapi::KFD_IOC_QUEUE_TYPE_SDMA, VA_RING, 4096, VA_PTRS + 24, VA_PTRS + 16)
    }

    fn create(&self, a: &mut CreateArgs) -> Result<i32, i32> {
        self.kfd.ioctl(uapi::AMDKFD_IOC_CREATE_QUEUE, a)
    }

    fn destroy(&self, qid: u32) -> Result<i32, i32> {
        let mut d = uapi::kfd_ioctl_destroy_queue_args { queue_id: qid, pad: 0 };
        self.kfd.ioctl(uapi::AMDKFD_IOC_DESTROY_QUEUE, &mut d)
    }

    /// Creates `a`; `Ok(None)` if the GPU driver serves no queues.
    fn create_or_unsupported(&self, a: &mut CreateArgs) -> Result<Option<u32>, String> {
        match self.create(a) {
            Ok(_) => Ok(Some(a.queue_id)),
            Err(libc::EOPNOTSUPP) => Ok(None),
            Err(e) => Err(format!("CREATE_QUEUE: {}", errno_name(e))),
        }
    }
}

fn bad_create_arguments() -> Check {
    let s = setup()?;
    type Edit = fn(&mut CreateArgs);
    let cases: &[(&str, Edit, i32)] = &[
        ("percentage 101", |a| a.queue_percentage = 101, libc::EINVAL),
        ("priority 16", |a| a.queue_priority = 16, libc::EINVAL),
        ("ring size not a power of two", |a| a.ring_size = 3000, libc::EINVAL),
        ("ring base in kernel space", |a| a.ring_base_address = KERNEL_ADDR, libc::EFAULT),
        ("metadata ring size 3", |a| a.metadata_ring_size = 3, libc::EINVAL),
        ("read pointer in kernel space", |a| a.read_pointer_address = KERNEL_ADDR, libc::EFAULT),
        ("write pointer in kernel space", |a| a.write_pointer_address = KERNEL_ADDR, libc::EFAULT),
        ("EOP buffer in kernel space", |a| a.eop_buffer_address = KERNEL_ADDR, libc::EFAULT),
        ("save area in kernel space", |a| a.ctx_save_restore_address = u64::MAX - 2, libc::EFAULT),
        ("queue type 5", |a| a.queue_type = 5, ENOTSUPP),
        ("unknown gpu_id", |a| a.gpu_id = 0xdead, libc::EINVAL),
        ("CPU node gpu_id 0", |a| a.gpu_id = 0, libc::EINVAL),
        ("SDMA engine id past the last engine", |a| {
            a.queue_type = uapi::KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID;
            a.sdma_engine_id = 64;
        }, libc::EINVAL),
        ("ring not mapped in the GPU VM", |a| a.ring_base_address = 0x30_0000_0000, libc::EINVAL),
        ("ring in an allocated but unmapped object", |a| a.ring_base_address = VA_UNMAPPED, libc::EINVAL),
        ("ring running past its object", |a| {
            a.ring_base_address = VA_RING + RING_OBJ - 4096;
        }, libc::EINVAL),
        ("read pointer not mapped", |a| a.read_pointer_address = 0x30_0000_0000, libc::EINVAL),
        ("write pointer not mapped", |a| a.write_pointer_address = VA_UNMAPPED, libc::EINVAL),
        ("EOP buffer smaller than 4 KiB", |a| a.eop_buffer_size = 2048, libc::EINVAL),
        ("EOP buffer not mapped", |a| a.eop_buffer_address = 0x30_0000_0000, libc::EINVAL),
        ("control stack size not topology's", |a| a.ctl_stack_size += 4096, libc::EINVAL),
        ("save area smaller than topology's cwsr_size", |a| a.ctx_save_restore_size -= 4096, libc::EINVAL),
        ("save area not mapped", |a| a.ctx_save_restore_address = 0x30_0000_0000, libc::EINVAL),
        ("no save area", |a| a.ctx_save_restore_address = 0, libc::EINVAL),
    ];
    for (what, edit, want) in cases {
        let mut a = s.aql();
        edit(&mut a);
        expect_errno(s.create(&mut a), *want, what)?;
    }
    // Checks run in upstream's order: percentage before pointers before type.
    let mut a = s.aql();
    a.queue_percentage = 200;
    a.read_pointer_address = KERNEL_ADDR;
    a.queue_type = 9;
    expect_errno(s.create(&mut a), libc::EINVAL, "percentage checked first")?;
    a.queue_percentage = 0;
    expect_errno(s.create(&mut a), libc::EFAULT, "pointers before type")?;
    // Without ACQUIRE_VM: ESRCH (a forked child is a new KFD process).
    let child = in_child(CHILD_SECS, || {
        let k = Kfd::open().map_err(|e| e.to_string())?;
        let mut a = CreateArgs { gpu_id: first_gpu()?, ring_size: 4096, queue_percentage: 100, ..Default::default() };
        expect_errno(k.ioctl(uapi::AMDKFD_IOC_CREATE_QUEUE, &mut a), libc::ESRCH, "no VM")
    });
    child.map_err(|e| format!("child: {e}"))
}

fn old_88_byte_create_queue_is_zero_filled() -> Check {
    // libhsakmt 5.2.3's struct lacks sdma_engine_id and metadata_ring_size.
    let s = setup()?;
    let mut a = s.aql();
    a.queue_percentage = 101;
    let cmd = uapi::ioc(uapi::ioc_dir(uapi::AMDKFD_IOC_CREATE_QUEUE), uapi::AMDKFD_IOCTL_BASE, 0x02, 88);
    expect_errno(s.kfd.ioctl_raw(cmd, &mut a as *mut _ as usize), libc::EINVAL, "88-byte, percentage 101")?;
    // Garbage past byte 88 must not be read: a bad metadata size there is ignored.
    let mut a = s.aql();
    a.metadata_ring_size = 3;
    match s.kfd.ioctl_raw(cmd, &mut a as *mut _ as usize) {
        Ok(_) => {
            ensure_eq(a.metadata_ring_size, 3, "bytes past 88 untouched")?;
            expect_ok(s.destroy(a.queue_id), "DESTROY")
        }
        Err(libc::EOPNOTSUPP) => Ok(()),
        Err(e) => Err(format!("88-byte valid queue: {}", errno_name(e))),
    }
}

fn unknown_queue_ids() -> Check {
    let s = setup()?;
    let k = &s.kfd;
    expect_errno(s.destroy(0), libc::EINVAL, "DESTROY_QUEUE")?;
    expect_errno(s.destroy(5000), libc::EINVAL, "DESTROY_QUEUE 5000")?;
    let mut u = uapi::kfd_ioctl_update_queue_args { queue_id: 3, ring_size: 4096, queue_percentage: 100, ..Default::default() };
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_UPDATE_QUEUE, &mut u), libc::EFAULT, "UPDATE_QUEUE")?;
    u.queue_priority = 16;
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_UPDATE_QUEUE, &mut u), libc::EINVAL, "UPDATE_QUEUE priority 16 (checked first)")?;
    let mask = [u32::MAX; 2];
    let mut c = uapi::kfd_ioctl_set_cu_mask_args { queue_id: 3, num_cu_mask: 64, cu_mask_ptr: mask.as_ptr() as u64 };
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_SET_CU_MASK, &mut c), libc::EFAULT, "SET_CU_MASK")?;
    c.num_cu_mask = 33;
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_SET_CU_MASK, &mut c), libc::EINVAL, "SET_CU_MASK 33 bits")?;
    c.num_cu_mask = 0;
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_SET_CU_MASK, &mut c), libc::EINVAL, "SET_CU_MASK 0 bits")?;
    c.num_cu_mask = 64;
    c.cu_mask_ptr = KERNEL_ADDR;
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_SET_CU_MASK, &mut c), libc::EFAULT, "SET_CU_MASK bad pointer")?;
    let mut g = uapi::kfd_ioctl_alloc_queue_gws_args { queue_id: 3, num_gws: 1, ..Default::default() };
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_ALLOC_QUEUE_GWS, &mut g), libc::EINVAL, "ALLOC_QUEUE_GWS")?;
    let mut w = uapi::kfd_ioctl_get_queue_wave_state_args { queue_id: 3, ..Default::default() };
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_GET_QUEUE_WAVE_STATE, &mut w), libc::EFAULT, "GET_QUEUE_WAVE_STATE")
}

fn queue_dir(qid: u32) -> String {
    // SAFETY: getpid has no preconditions.
    format!("/sys/class/kfd/kfd/proc/{}/queues/{qid}", unsafe { libc::getpid() })
}

fn read_sysfs(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

fn aql_and_sdma_queue_ids_doorbells_and_sysfs() -> Check {
    let s = setup()?;
    let mut a = s.aql();
    let Some(q0) = s.create_or_unsupported(&mut a)? else {
        return Ok(());
    };
    ensure_eq(q0, 0, "first queue id")?;
    let slot = a.doorbell_offset & ((1 << 46) - 1);
    ensure_eq(a.doorbell_offset >> 62, 3, "doorbell mmap type")?;
    ensure_eq((a.doorbell_offset >> 46) & 0xffff, u64::from(s.gpu & 0xffff), "doorbell gpu_id")?;
    ensure_eq(slot, 0, "first CP doorbell byte offset")?;
    let mut b = s.aql();
    b.write_pointer_address = VA_PTRS + 32;
    b.read_pointer_address = VA_PTRS + 40;
    s.create(&mut b).map_err(|e| format!("second AQL queue: {}", errno_name(e)))?;
    ensure_eq(b.queue_id, 1, "second queue id")?;
    ensure_eq(b.doorbell_offset & 0xfff_ffff, 8, "second CP doorbell byte offset")?;
    // sysfs: size, type, gpuid without newline.
    let d = queue_dir(q0);
    ensure_eq(read_sysfs(&format!("{d}/size"))?, (64 * 1024).to_string(), "queues/0/size")?;
    ensure_eq(read_sysfs(&format!("{d}/type"))?, "0".to_string(), "queues/0/type")?;
    ensure_eq(read_sysfs(&format!("{d}/gpuid"))?, s.gpu.to_string(), "queues/0/gpuid")?;
    if s.sdma_engines > 0 {
        let mut c = s.sdma();
        s.create(&mut c).map_err(|e| format!("SDMA queue: {}", errno_name(e)))?;
        ensure_eq(c.queue_id, 2, "SDMA queue id")?;
        // Engine 0, queue 0: doorbell index 0x100 (SOC15 static SDMA doorbells).
        ensure_eq(c.doorbell_offset & 0xfff_ffff, 0x100 * 8, "SDMA doorbell byte offset")?;
        ensure_eq(read_sysfs(&format!("{}/type", queue_dir(2)))?, "1".to_string(), "SDMA type")?;
        expect_ok(s.destroy(2), "DESTROY SDMA")?;
    }
    // The ring's object is pinned to the GPU while queues use it.
    expect_errno(ops::map(s.kfd.fd, s.ring_handle, s.gpu, false), libc::EBUSY, "UNMAP of a queue's ring")?;
    expect_ok(s.destroy(q0), "DESTROY 0")?;
    ensure(!std::path::Path::new(&d).exists(), "queues/0 still there after DESTROY")?;
    expect_errno(s.destroy(q0), libc::EINVAL, "DESTROY 0 twice")?;
    // Freed ids and doorbells are reused.
    let mut c = s.aql();
    s.create(&mut c).map_err(|e| format!("re-create: {}", errno_name(e)))?;
    ensure_eq((c.queue_id, c.doorbell_offset & 0xfff), (0, 0), "reused id and doorbell")?;
    expect_ok(s.destroy(0), "DESTROY")?;
    expect_ok(s.destroy(1), "DESTROY")?;
    expect_ok(ops::map(s.kfd.fd, s.ring_handle, s.gpu, false), "UNMAP of the ring once no queue uses it")
}

fn update_cu_mask_gws_wave_state() -> Check {
    let s = setup()?;
    let mut a = s.aql();
    let Some(q) = s.create_or_unsupported(&mut a)? else {
        return Ok(());
    };
    let k = &s.kfd;
    let mut w = uapi::kfd_ioctl_get_queue_wave_state_args { queue_id: q, ..Default::default() };
    let mut hdr = [0xffu32; 4];
    w.ctl_stack_address = hdr.as_mut_ptr() as u64;
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_GET_QUEUE_WAVE_STATE, &mut w), libc::EINVAL, "wave state of an active queue")?;
    let mut u = uapi::kfd_ioctl_update_queue_args {
        ring_base_address: VA_RING,
        queue_id: q,
        ring_size: 4096,
        queue_percentage: 0,
        queue_priority: 15,
    };
    expect_ok(k.ioctl(uapi::AMDKFD_IOC_UPDATE_QUEUE, &mut u), "UPDATE_QUEUE to percentage 0")?;
    ensure_eq(read_sysfs(&format!("{}/size", queue_dir(q)))?, "4096".to_string(), "size after UPDATE")?;
    expect_ok(k.ioctl(uapi::AMDKFD_IOC_GET_QUEUE_WAVE_STATE, &mut w), "wave state of an inactive queue")?;
    ensure_eq((w.ctl_stack_used_size, w.save_area_used_size), (0, 0), "used sizes (no waves)")?;
    ensure_eq(hdr, [s.ctl_stack_size, 0, s.ctl_stack_size, 0], "wave_state header")?;
    u.ring_base_address = 0x30_0000_0000;
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_UPDATE_QUEUE, &mut u), libc::EFAULT, "UPDATE to an unmapped ring")?;
    let mask = [0x5u32, 0];
    let mut c = uapi::kfd_ioctl_set_cu_mask_args { queue_id: q, num_cu_mask: 64, cu_mask_ptr: mask.as_ptr() as u64 };
    let gfx10 = node_props(s.gpu).map(|p| prop(&p, "gfx_target_version") >= 100000).unwrap_or(false);
    let r = k.ioctl(uapi::AMDKFD_IOC_SET_CU_MASK, &mut c);
    if gfx10 {
        expect_errno(r, libc::EINVAL, "CU mask splitting a WGP pair")?;
    } else {
        expect_ok(r, "SET_CU_MASK")?;
    }
    let mut g = uapi::kfd_ioctl_alloc_queue_gws_args { queue_id: q, num_gws: 1, ..Default::default() };
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_ALLOC_QUEUE_GWS, &mut g), libc::ENODEV, "GWS on a GPU without GWS")?;
    // SET_XNACK_MODE: any setting is refused while queues exist; queries work.
    let mut x = uapi::kfd_ioctl_set_xnack_mode_args { xnack_enabled: 0 };
    expect_errno(k.ioctl(uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut x), libc::EBUSY, "SET_XNACK_MODE with queues")?;
    x.xnack_enabled = -1;
    expect_ok(k.ioctl(uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut x), "SET_XNACK_MODE query with queues")?;
    expect_ok(s.destroy(q), "DESTROY")?;
    x.xnack_enabled = 0;
    expect_ok(k.ioctl(uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut x), "SET_XNACK_MODE once the queues are gone")
}

/// GPU VAs of the disable/restore test's objects.
const VA_WORK: u64 = 0x20_5000_0000;
const VA_SIGNALS: u64 = 0x20_6000_0000;
/// Its work object: the ring, the pointers, the data target.
const WORK_RING: u64 = 0;
const WORK_RPTR: u64 = 4096;
const WORK_WPTR: u64 = 4096 + 8;
const WORK_TARGET: u64 = 8192;
const WORK_SIZE: u64 = 16384;
/// PM4 type-3 headers (`PACKET3(op, count)`): WRITE_DATA of one dword and
/// RELEASE_MEM (gfx9+: 7 dwords after the header).
const PM4_WRITE_DATA_1: u32 = (3 << 30) | (3 << 16) | (0x37 << 8);
const PM4_RELEASE_MEM: u32 = (3 << 30) | (6 << 16) | (0x49 << 8);
/// WRITE_DATA `dst_sel` memory; RELEASE_MEM `data_sel` 32-bit data and
/// `int_sel` "interrupt after the write".
const PM4_DST_MEMORY: u32 = 5 << 8;
const PM4_DATA32_INT: u32 = (1 << 29) | (2 << 24);
/// SDMA FENCE (addr, 32-bit data) and TRAP (int_ctx).
const SDMA_FENCE: u32 = 5;
const SDMA_TRAP: u32 = 6;

/// A CPU mapping of a GTT object through the render node.
struct CpuMap {
    at: usize,
    len: usize,
}

impl CpuMap {
    fn new(render: i32, offset: u64, len: u64) -> Result<CpuMap, String> {
        // SAFETY: a new shared mapping of our object; nothing else is at
        // the address the kernel picks.
        let at = unsafe {
            libc::mmap(std::ptr::null_mut(), len as usize, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, render, offset as i64)
        };
        if at == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        Ok(CpuMap { at: at as usize, len: len as usize })
    }

    fn write32(&self, off: u64, v: u32) {
        assert!(off as usize + 4 <= self.len);
        // SAFETY: inside the mapping (checked), aligned by every caller.
        unsafe { ((self.at + off as usize) as *mut u32).write_volatile(v) }
    }

    fn write64(&self, off: u64, v: u64) {
        assert!(off as usize + 8 <= self.len);
        // SAFETY: as write32.
        unsafe { ((self.at + off as usize) as *mut u64).write_volatile(v) }
    }

    fn read32(&self, off: u64) -> u32 {
        assert!(off as usize + 4 <= self.len);
        // SAFETY: as write32.
        unsafe { ((self.at + off as usize) as *const u32).read_volatile() }
    }
}

impl Drop for CpuMap {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.at as *mut _, self.len) };
    }
}

/// Allocates a GTT object at `va`, maps it to the GPU and the CPU.
fn gtt_cpu(s: &Setup, va: u64, size: u64) -> Result<(u64, CpuMap), String> {
    let mut a = uapi::kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: va,
        size,
        gpu_id: s.gpu,
        flags: uapi::KFD_IOC_ALLOC_MEM_FLAGS_GTT | uapi::KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    s.kfd.ioctl(uapi::AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).map_err(|e| format!("ALLOC va {va:#x}: {}", errno_name(e)))?;
    ops::map(s.kfd.fd, a.handle, s.gpu, true).map_err(|e| format!("MAP va {va:#x}: {}", errno_name(e)))?;
    Ok((a.handle, CpuMap::new(s.render, a.mmap_offset, size)?))
}

/// WAIT_EVENTS on one event for `ms`: whether it was signalled.
fn wait_event(k: &Kfd, id: u32, ms: u32) -> Result<bool, String> {
    let r = ops::wait_one_event(k.fd, id, ms).map_err(|e| format!("WAIT_EVENTS: {}", errno_name(e)))?;
    Ok(r == uapi::KFD_IOC_WAIT_RESULT_COMPLETE)
}

/// Writes one round at ring position `pos` (PM4: dwords; SDMA: bytes):
/// `value` to the data target, then the event's slot and its interrupt
/// (PM4: WRITE_DATA + RELEASE_MEM; SDMA: FENCE + FENCE + TRAP).  Returns
/// the new write pointer.
fn write_round(w: &CpuMap, sdma: bool, pos: u64, value: u32, slot_va: u64, event: u32) -> u64 {
    let target = VA_WORK + WORK_TARGET;
    let words: Vec<u32> = if sdma {
        vec![
            SDMA_FENCE, target as u32, (target >> 32) as u32, value,
            SDMA_FENCE, slot_va as u32, (slot_va >> 32) as u32, 1,
            SDMA_TRAP, event,
        ]
    } else {
        vec![
            PM4_WRITE_DATA_1, PM4_DST_MEMORY, target as u32, (target >> 32) as u32, value,
            PM4_RELEASE_MEM, 0, PM4_DATA32_INT, slot_va as u32, (slot_va >> 32) as u32, 1, 0, event,
        ]
    };
    let unit = if sdma { 1 } else { 4 };
    for (i, &v) in words.iter().enumerate() {
        let byte = (pos * unit + 4 * i as u64) % 4096;
        w.write32(WORK_RING + byte, v);
    }
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    let end = pos + words.len() as u64 * 4 / unit;
    w.write64(WORK_WPTR, end);
    end
}

/// UPDATE_QUEUE with ring address 0 disables a queue (upstream
/// `is_active`: address, size and percentage all non-zero); packets written
/// meanwhile wait, and run once a second UPDATE_QUEUE restores the ring.
fn update_queue_disable_restore(sdma: bool) -> Check {
    let s = setup()?;
    if sdma && s.sdma_engines == 0 {
        return Ok(());
    }
    let (_work, w) = gtt_cpu(&s, VA_WORK, WORK_SIZE)?;
    let (page, _sig) = gtt_cpu(&s, VA_SIGNALS, fuzz::SIGNAL_PAGE_SIZE)?;
    let mut ev = uapi::kfd_ioctl_create_event_args {
        event_page_offset: page,
        event_type: uapi::KFD_IOC_EVENT_SIGNAL,
        auto_reset: 1,
        ..Default::default()
    };
    expect_ok(s.kfd.ioctl(uapi::AMDKFD_IOC_CREATE_EVENT, &mut ev), "CREATE_EVENT")?;
    let slot_va = VA_SIGNALS + 8 * u64::from(ev.event_slot_index);
    let queue_type = if sdma { uapi::KFD_IOC_QUEUE_TYPE_SDMA } else { uapi::KFD_IOC_QUEUE_TYPE_COMPUTE };
    let mut a = s.queue_args(queue_type, VA_WORK + WORK_RING, 4096, VA_WORK + WORK_RPTR, VA_WORK + WORK_WPTR);
    let Some(q) = s.create_or_unsupported(&mut a)? else {
        return Ok(());
    };
    let kind = if sdma { "SDMA" } else { "PM4" };
    // The read pointer as the engine reports it: PM4 a 32-bit dword offset
    // in the ring, SDMA a 64-bit byte count (its low half here).
    let units = if sdma { 4096 } else { 1024 };
    let rptr = |w: &CpuMap| u64::from(w.read32(WORK_RPTR)) % units;
    let mut u = uapi::kfd_ioctl_update_queue_args {
        ring_base_address: VA_WORK + WORK_RING,
        queue_id: q,
        ring_size: 4096,
        queue_percentage: 100,
        queue_priority: 7,
    };
    let mut run = || -> Check {
        let end = write_round(&w, sdma, 0, 1, slot_va, ev.event_id);
        ensure(wait_event(&s.kfd, ev.event_id, 5000)?, format!("{kind}: first round's event"))?;
        ensure_eq(w.read32(WORK_TARGET), 1, &format!("{kind}: first round's data"))?;
        u.ring_base_address = 0;
        expect_ok(s.kfd.ioctl(uapi::AMDKFD_IOC_UPDATE_QUEUE, &mut u), "UPDATE_QUEUE ring 0 (disable)")?;
        let end2 = write_round(&w, sdma, end, 2, slot_va, ev.event_id);
        ensure(!wait_event(&s.kfd, ev.event_id, 300)?, format!("{kind}: a disabled queue ran"))?;
        ensure_eq((w.read32(WORK_TARGET), rptr(&w)), (1, end % units), &format!("{kind}: data, rptr while disabled"))?;
        u.ring_base_address = VA_WORK + WORK_RING;
        expect_ok(s.kfd.ioctl(uapi::AMDKFD_IOC_UPDATE_QUEUE, &mut u), "UPDATE_QUEUE restoring the ring")?;
        ensure(wait_event(&s.kfd, ev.event_id, 5000)?, format!("{kind}: no event after the restore (rptr {})", rptr(&w)))?;
        ensure_eq((w.read32(WORK_TARGET), rptr(&w)), (2, end2 % units), &format!("{kind}: data, rptr after the restore"))
    };
    let r = run();
    expect_ok(s.destroy(q), "DESTROY")?;
    r
}

/// The issue #16 workload's rounds in make check (`RKFD_ISSUE16_ROUNDS`
/// overrides; the issue's count is 1024): 1024 PM4 and 1024 SDMA rounds
/// took 139 s in the TCG guest on a loaded 2-core host (2026-12-03), too
/// much of make check's time.
const ISSUE16_ROUNDS: u32 = 256;
/// Queues per round and packets per queue.
const ISSUE16_QUEUES: usize = 4;
const ISSUE16_PACKETS: u64 = 1024;
/// Its object: per queue a 32 KiB ring, then the pointers (64 bytes per
/// queue), then the targets (4 KiB per queue).
const VA_ISSUE16: u64 = 0x20_7000_0000;
const I16_RING: u64 = 32 << 10;
const I16_PTRS: u64 = ISSUE16_QUEUES as u64 * I16_RING;
const I16_TARGETS: u64 = I16_PTRS + 4096;
const I16_SIZE: u64 = I16_TARGETS + ISSUE16_QUEUES as u64 * 4096;
/// `/dev/kfd` mmap of the doorbells: type, the gpu_id's place, the slice.
const TYPE_DOORBELL: u64 = 0x3 << 62;
const GPU_ID_SHIFT: u32 = 46;
const DOORBELL_SLICE: usize = 8192;

/// The issue #16 throughput workload, checked: each round creates four PM4
/// queues (or SDMA queues), gives each 1024 WRITE_DATA packets (SDMA:
/// FENCE) to its own 1024 dwords and a RELEASE_MEM with an interrupt
/// (SDMA: FENCE to the event's slot and a TRAP) for its own event, rings
/// the doorbells, waits for the four events, checks every dword written in
/// the round and destroys the queues.  The issue expects 1024 rounds in a
/// minute; nothing here is timed, but it must end within the test's
/// timeout, so it shows the throughput.  `RKFD_ISSUE16_ROUNDS` sets the
/// rounds (make check: [`ISSUE16_ROUNDS`]; the issue's full count:
/// `scripts/vm-run -- env RKFD_ISSUE16_ROUNDS=1024
/// rust/target/release/kfd-queue-tests throughput`).
fn issue16_rounds(sdma: bool) -> Check {
    let s = setup()?;
    if sdma && s.sdma_engines == 0 {
        return Ok(());
    }
    let rounds = std::env::var("RKFD_ISSUE16_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(ISSUE16_ROUNDS);
    let (_obj, w) = gtt_cpu(&s, VA_ISSUE16, I16_SIZE)?;
    let (page, _sig) = gtt_cpu(&s, VA_SIGNALS, fuzz::SIGNAL_PAGE_SIZE)?;
    let mut events = Vec::new();
    for i in 0..ISSUE16_QUEUES {
        let mut ev = uapi::kfd_ioctl_create_event_args {
            event_page_offset: if i == 0 { page } else { 0 },
            event_type: uapi::KFD_IOC_EVENT_SIGNAL,
            auto_reset: 1,
            ..Default::default()
        };
        expect_ok(s.kfd.ioctl(uapi::AMDKFD_IOC_CREATE_EVENT, &mut ev), "CREATE_EVENT")?;
        events.push((ev.event_id, VA_SIGNALS + 8 * u64::from(ev.event_slot_index)));
    }
    let dboff = TYPE_DOORBELL | (u64::from(s.gpu) << GPU_ID_SHIFT);
    // SAFETY: a new shared mapping of our doorbell slice.
    let db = unsafe {
        libc::mmap(std::ptr::null_mut(), DOORBELL_SLICE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, s.kfd.fd, dboff as i64)
    };
    ensure(db != libc::MAP_FAILED, "mmap doorbells")?;
    let kind = if sdma { "SDMA" } else { "PM4" };
    let mut qs = Vec::new();
    // Ok(false): the GPU driver serves no queues (CREATE_QUEUE says so).
    let round = |r: u32, qs: &mut Vec<u32>| -> Result<bool, String> {
        for i in 0..ISSUE16_QUEUES as u64 {
            let (ring, ptrs) = (I16_RING * i, I16_PTRS + 64 * i);
            w.write64(ptrs, 0);
            w.write64(ptrs + 8, 0);
            let queue_type = if sdma { uapi::KFD_IOC_QUEUE_TYPE_SDMA } else { uapi::KFD_IOC_QUEUE_TYPE_COMPUTE };
            let (ring_va, ring_size) = (VA_ISSUE16 + ring, I16_RING as u32);
            let mut a = s.queue_args(queue_type, ring_va, ring_size, VA_ISSUE16 + ptrs, VA_ISSUE16 + ptrs + 8);
            let Some(q) = s.create_or_unsupported(&mut a)? else {
                return Ok(false);
            };
            qs.push(q);
            // The round's packets: each dword of the queue's target
            // gets a value unique to the round.
            let mut pos = ring;
            let mut put = |v: u32| {
                w.write32(pos, v);
                pos += 4;
            };
            let target = VA_ISSUE16 + I16_TARGETS + 4096 * i;
            let (event, slot) = events[i as usize];
            for k in 0..ISSUE16_PACKETS {
                let (va, v) = (target + 4 * k, ((r + 1) << 16) | k as u32);
                if sdma {
                    for d in [SDMA_FENCE, va as u32, (va >> 32) as u32, v] {
                        put(d);
                    }
                } else {
                    for d in [PM4_WRITE_DATA_1, PM4_DST_MEMORY, va as u32, (va >> 32) as u32, v] {
                        put(d);
                    }
                }
            }
            let end: Vec<u32> = if sdma {
                vec![SDMA_FENCE, slot as u32, (slot >> 32) as u32, 1, SDMA_TRAP, event]
            } else {
                vec![PM4_RELEASE_MEM, 0, PM4_DATA32_INT, slot as u32, (slot >> 32) as u32, 1, 0, event]
            };
            for d in end {
                put(d);
            }
            // The write pointer: SDMA bytes, PM4 dwords.
            let wptr = if sdma { pos - ring } else { (pos - ring) / 4 };
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            w.write64(ptrs + 8, wptr);
            let off = (a.doorbell_offset & ((1 << GPU_ID_SHIFT) - 1)) as usize;
            ensure(off + 8 <= DOORBELL_SLICE, format!("doorbell offset {:#x}", a.doorbell_offset))?;
            // SAFETY: inside our doorbell mapping (checked).
            unsafe { ((db as usize + off) as *mut u64).write_volatile(wptr) };
        }
        for (i, &(event, _)) in events.iter().enumerate() {
            ensure(wait_event(&s.kfd, event, 30_000)?, format!("{kind} round {r}: queue {i}'s event did not fire"))?;
        }
        for i in 0..ISSUE16_QUEUES as u64 {
            for k in 0..ISSUE16_PACKETS {
                let got = w.read32(I16_TARGETS + 4096 * i + 4 * k);
                let want = ((r + 1) << 16) | k as u32;
                ensure(got == want, format!("{kind} round {r}: queue {i} dword {k} is {got:#x}, want {want:#x}"))?;
            }
        }
        Ok(true)
    };
    let mut res = Ok(true);
    for r in 0..rounds {
        res = round(r, &mut qs);
        for q in qs.drain(..) {
            let d = expect_ok(s.destroy(q), "DESTROY_QUEUE");
            res = d.and(res);
        }
        if res != Ok(true) {
            break;
        }
    }
    // SAFETY: our mapping.
    unsafe { libc::munmap(db, DOORBELL_SLICE) };
    res.map(|_| ())
}

/// This thread's minor page faults so far.
fn minor_faults() -> i64 {
    // SAFETY: plain data, all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage to fill.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_minflt
}

/// A doorbell rung after the engine went idle traps: the engine
/// write-protected the doorbell mapping before it slept, so the write
/// takes one page fault (a minor fault of this thread) that wakes it, and
/// the write lands: the packet runs.  Checked through every way the slice
/// is mapped: a first and a second mmap, the second made read-only and
/// writable again (mprotect), and a third moved by mremap.  Each ring
/// follows an idle period; the engine arms the trap some time after its
/// last work (how soon depends on the guest's scheduling, which no test
/// may assume), so a ring that did not trap is tried again after a longer
/// idle period, up to 5 s: only never trapping fails.
fn doorbell_traps_after_idle() -> Check {
    let s = setup()?;
    let (_work, w) = gtt_cpu(&s, VA_WORK, WORK_SIZE)?;
    let mut a = s.queue_args(uapi::KFD_IOC_QUEUE_TYPE_COMPUTE, VA_WORK + WORK_RING, 4096, VA_WORK + WORK_RPTR, VA_WORK + WORK_WPTR);
    let Some(q) = s.create_or_unsupported(&mut a)? else {
        return Ok(());
    };
    let off = (a.doorbell_offset & ((1 << GPU_ID_SHIFT) - 1)) as usize;
    let dboff = (TYPE_DOORBELL | (u64::from(s.gpu) << GPU_ID_SHIFT)) as i64;
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let map = || {
        // SAFETY: a new shared mapping of our doorbell slice.
        unsafe { libc::mmap(std::ptr::null_mut(), DOORBELL_SLICE, rw, libc::MAP_SHARED, s.kfd.fd, dboff) }
    };
    let (first, second, third) = (map(), map(), map());
    // A place to move the third mapping to.
    // SAFETY: a new anonymous reservation.
    let hole = unsafe {
        libc::mmap(std::ptr::null_mut(), DOORBELL_SLICE, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    let run = || -> Check {
        for m in [first, second, third, hole] {
            ensure(m != libc::MAP_FAILED, "mmap doorbells")?;
        }
        ensure(off + 8 <= DOORBELL_SLICE, format!("doorbell offset {:#x}", a.doorbell_offset))?;
        // SAFETY: our mappings, of the slice's size.
        let (ro, back, moved) = unsafe {
            (
                libc::mprotect(second, DOORBELL_SLICE, libc::PROT_READ),
                libc::mprotect(second, DOORBELL_SLICE, rw),
                libc::mremap(third, DOORBELL_SLICE, DOORBELL_SLICE, libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED, hole),
            )
        };
        ensure_eq((ro, back), (0, 0), "mprotect of the doorbells read-only and back")?;
        ensure(moved == hole, "mremap of the doorbells")?;
        let (mut pos, mut value) = (0u64, 0u32);
        for (name, db) in [("first mapping", first), ("second mapping", second), ("moved mapping", moved)] {
            let mut trapped = false;
            for attempt in 0..8u32 {
                std::thread::sleep(std::time::Duration::from_millis(20 << attempt));
                value += 1;
                let target = VA_WORK + WORK_TARGET;
                for d in [PM4_WRITE_DATA_1, PM4_DST_MEMORY, target as u32, (target >> 32) as u32, value] {
                    w.write32(WORK_RING + 4 * pos, d);
                    pos += 1;
                }
                std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
                w.write64(WORK_WPTR, pos);
                let before = minor_faults();
                // SAFETY: inside the doorbell mapping (checked).
                unsafe { ((db as usize + off) as *mut u64).write_volatile(pos) };
                let after = minor_faults();
                let t = std::time::Instant::now();
                while w.read32(WORK_TARGET) != value && t.elapsed() < std::time::Duration::from_secs(10) {
                    std::thread::yield_now();
                }
                ensure_eq(w.read32(WORK_TARGET), value, &format!("{name}: the packet after ring {attempt}"))?;
                if after > before {
                    trapped = true;
                    break;
                }
            }
            ensure(trapped, format!("{name}: no doorbell write after up to 2.6 s of idle trapped"))?;
        }
        Ok(())
    };
    let r = run();
    for m in [first, second, hole] {
        if m != libc::MAP_FAILED {
            // SAFETY: our mappings (the third one was moved onto `hole`).
            unsafe { libc::munmap(m, DOORBELL_SLICE) };
        }
    }
    expect_ok(s.destroy(q), "DESTROY")?;
    r
}

/// rkfd's `sched_policy` module parameter (its default, 0, the HWS, if
/// unreadable).
fn sched_policy() -> u32 {
    read_sysfs("/sys/module/rkfd/parameters/sched_policy").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// Whether rkfd hands queues to the hardware scheduler (policy 0, the
/// default, or 1; `scripts/guest/hws-tests.sh --policy 2,1` runs this
/// program under the other two).
fn hws_policy() -> bool {
    sched_policy() != 2
}

/// Whether `gpu` is a GFX11+ GPU, whose queues the MES schedules (no HWS).
fn mes_gpu(gpu: u32) -> bool {
    node_props(gpu).is_some_and(|p| prop(&p, "gfx_target_version") >= 110000)
}

/// Compute queues the virtual GPU's HWS has slots for (SET_RESOURCES'
/// `queue_mask`: 4 pipes x 8 queues).
const VGPU_HWS_SLOTS: u32 = 32;
/// Processes the HWS maps at once (the 8 KFD VMIDs, `max_proc_per_quantum`
/// with `hws_max_conc_proc` unset).
const VGPU_HWS_PROCESSES: u32 = 8;

/// 127 queues per process and device, then `ENOSPC` (upstream's
/// per-process limit), without the HWS and under policy 0 (whose runlist
/// is then chained, over-subscribed).  Under policy 1 the queue past the
/// HWS's slots is refused with `EPERM` (upstream's no-over-subscription
/// rule).
fn per_device_limit_127() -> Check {
    let s = setup()?;
    let (want, stop) = match sched_policy() {
        1 => (VGPU_HWS_SLOTS, libc::EPERM),
        _ => (127, libc::ENOSPC),
    };
    let mut made = 0u32;
    loop {
        // PM4 compute queues sharing one ring and pointer page.
        let mut a = s.aql();
        a.queue_type = uapi::KFD_IOC_QUEUE_TYPE_COMPUTE;
        match s.create(&mut a) {
            Ok(_) => made += 1,
            Err(libc::EOPNOTSUPP) if made == 0 => return Ok(()),
            Err(e) if e == stop => break,
            Err(e) => return Err(format!("queue {made}: {}", errno_name(e))),
        }
        ensure(made <= 255, "no limit")?;
    }
    ensure_eq(made, want, "queues per process and device")
    // Teardown destroys them all (the dmesg scan checks it stays clean).
}

/// The over-subscription test: processes, PM4 queues each, WRITE_DATA
/// packets each queue runs.
const OVS_PROCESSES: u32 = VGPU_HWS_PROCESSES + 1;
const OVS_QUEUES: u64 = 4;
const OVS_PACKETS: u32 = 64;
/// Its object in each process: per queue a 4 KiB ring, then the pointers
/// (64 bytes per queue), then the targets (one dword per queue).
const VA_OVS: u64 = 0x20_8000_0000;
const OVS_RING: u64 = 4096;
const OVS_PTRS: u64 = OVS_QUEUES * OVS_RING;
const OVS_TARGETS: u64 = OVS_PTRS + 4096;
const OVS_SIZE: u64 = OVS_TARGETS + 4096;
/// How long a process waits for its queues to finish.
const OVS_WAIT_SECS: u64 = 60;

/// One process of the over-subscription test: creates its queues, says
/// so on `ready` ('r', or 'e' if it could not), waits for a byte on `go`,
/// then gives each queue `OVS_PACKETS` WRITE_DATA packets (the k-th
/// writes k + 1 to the queue's target), rings, waits until every target
/// holds `OVS_PACKETS` (or `OVS_WAIT_SECS`), says 'd' on `ready`, and
/// destroys its queues only once a byte comes on `fin`: no queue leaves
/// the runlist (which would give a starved queue a slot) until every
/// process is done.
fn ovs_process(ready: i32, go: i32, fin: i32) -> Result<(), String> {
    let say = |b: u8| {
        // SAFETY: one byte from our stack to our pipe.
        unsafe { libc::write(ready, (&b as *const u8).cast(), 1) };
    };
    let wait_byte = |fd: i32| {
        let mut b = 0u8;
        // SAFETY: one byte into our stack from our pipe.
        unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) == 1 }
    };
    let made = (|| {
        let s = setup()?;
        let (obj, w) = gtt_cpu(&s, VA_OVS, OVS_SIZE)?;
        let dboff = TYPE_DOORBELL | (u64::from(s.gpu) << GPU_ID_SHIFT);
        // SAFETY: a new shared mapping of our doorbell slice.
        let db = unsafe {
            libc::mmap(std::ptr::null_mut(), DOORBELL_SLICE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, s.kfd.fd, dboff as i64)
        };
        ensure(db != libc::MAP_FAILED, "mmap doorbells")?;
        let mut qs = Vec::new();
        for i in 0..OVS_QUEUES {
            let ptrs = OVS_PTRS + 64 * i;
            let (ring_va, ring_size) = (VA_OVS + OVS_RING * i, OVS_RING as u32);
            let mut a = s.queue_args(uapi::KFD_IOC_QUEUE_TYPE_COMPUTE, ring_va, ring_size, VA_OVS + ptrs, VA_OVS + ptrs + 8);
            s.create(&mut a).map_err(|e| format!("CREATE_QUEUE {i}: {}", errno_name(e)))?;
            let off = (a.doorbell_offset & ((1 << GPU_ID_SHIFT) - 1)) as usize;
            ensure(off + 8 <= DOORBELL_SLICE, format!("doorbell offset {:#x}", a.doorbell_offset))?;
            qs.push((a.queue_id, off));
        }
        Ok((s, obj, w, db, qs))
    })();
    let (s, _obj, w, db, qs) = match made {
        Ok(m) => m,
        Err(e) => {
            say(b'e');
            return Err(e);
        }
    };
    say(b'r');
    let went = wait_byte(go);
    if went {
        for (i, &(_, off)) in qs.iter().enumerate() {
            let i = i as u64;
            let target = VA_OVS + OVS_TARGETS + 4 * i;
            let mut pos = OVS_RING * i;
            for k in 0..OVS_PACKETS {
                for d in [PM4_WRITE_DATA_1, PM4_DST_MEMORY, target as u32, (target >> 32) as u32, k + 1] {
                    w.write32(pos, d);
                    pos += 4;
                }
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            let wptr = (pos - OVS_RING * i) / 4;
            w.write64(OVS_PTRS + 64 * i + 8, wptr);
            // SAFETY: inside our doorbell mapping (checked at create).
            unsafe { ((db as usize + off) as *mut u64).write_volatile(wptr) };
        }
        let start = std::time::Instant::now();
        let done = |w: &CpuMap| (0..OVS_QUEUES).all(|i| w.read32(OVS_TARGETS + 4 * i) == OVS_PACKETS);
        while !done(&w) && start.elapsed().as_secs() < OVS_WAIT_SECS {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let got: Vec<u32> = (0..OVS_QUEUES).map(|i| w.read32(OVS_TARGETS + 4 * i)).collect();
    say(b'd');
    wait_byte(fin);
    for &(q, _) in &qs {
        expect_ok(s.destroy(q), "DESTROY")?;
    }
    ensure(went, "no go")?;
    ensure(
        got.iter().all(|&v| v == OVS_PACKETS),
        format!("pid {}: queues ran {got:?} of {OVS_PACKETS} packets in {OVS_WAIT_SECS} s", std::process::id()),
    )
}

/// Policy 0: more processes than the HWS maps at once and more compute
/// queues than its slots (9 processes of 4 PM4 queues: 36 queues over 32
/// slots and 8 VMIDs).  The runlist is chained (over-subscribed); every
/// queue must run all its packets, which the queues past the first
/// window do only if the firmware rotates the runlist.  Then every queue
/// is destroyed.
fn oversubscribed_runlist_all_queues_progress() -> Check {
    if sched_policy() != 0 {
        return Ok(());
    }
    let mut ready = [0i32; 2];
    let mut go = [0i32; 2];
    let mut fin = [0i32; 2];
    // SAFETY: room for two descriptors each.
    ensure(
        unsafe {
            libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) == 0
                && libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) == 0
                && libc::pipe2(fin.as_mut_ptr(), libc::O_CLOEXEC) == 0
        },
        "pipe",
    )?;
    let mut children = Vec::new();
    for _ in 0..OVS_PROCESSES {
        let (r, g, f) = (ready[1], go[0], fin[0]);
        let (tx, rx, ftx) = (go[1], ready[0], fin[1]);
        // Each child reports through a pipe of its own, as in_child does.
        let mut res = [0i32; 2];
        // SAFETY: room for two descriptors.
        ensure(unsafe { libc::pipe2(res.as_mut_ptr(), libc::O_CLOEXEC) } == 0, "pipe")?;
        // SAFETY: the child runs ovs_process and exits without unwinding.
        let pid = unsafe { libc::fork() };
        ensure(pid >= 0, "fork")?;
        if pid == 0 {
            ops::close(tx);
            ops::close(rx);
            ops::close(ftx);
            ops::close(res[0]);
            let msg = match std::panic::catch_unwind(|| ovs_process(r, g, f)) {
                Ok(Ok(())) => String::new(),
                Ok(Err(e)) => e,
                Err(_) => "panicked".to_string(),
            };
            // SAFETY: our buffer to our pipe, then exit without destructors.
            unsafe {
                libc::write(res[1], msg.as_ptr().cast(), msg.len());
                libc::_exit(if msg.is_empty() { 0 } else { 1 });
            }
        }
        ops::close(res[1]);
        children.push((pid, res[0]));
    }
    ops::close(ready[1]);
    ops::close(go[0]);
    ops::close(fin[0]);
    // Every process has its queues (or failed): 'r' or 'e' from each, or
    // the end of the pipe once all are gone.
    let mut readies = 0;
    for _ in 0..OVS_PROCESSES {
        let mut b = 0u8;
        // SAFETY: one byte into our stack from our pipe.
        if unsafe { libc::read(ready[0], (&mut b as *mut u8).cast(), 1) } != 1 {
            break;
        }
        readies += u32::from(b == b'r');
    }
    let all_ready = readies == OVS_PROCESSES;
    // Go (a process that failed reads nothing; one that is waiting runs).
    for _ in 0..OVS_PROCESSES {
        // SAFETY: one byte from our stack to our pipe.
        unsafe { libc::write(go[1], b"g".as_ptr().cast(), 1) };
    }
    ops::close(go[1]);
    // Every process that made its queues is done ('d') before any destroys
    // one; then they may.
    for _ in 0..readies {
        let mut b = 0u8;
        // SAFETY: one byte into our stack from our pipe.
        if unsafe { libc::read(ready[0], (&mut b as *mut u8).cast(), 1) } != 1 {
            break;
        }
    }
    for _ in 0..OVS_PROCESSES {
        // SAFETY: one byte from our stack to our pipe.
        unsafe { libc::write(fin[1], b"f".as_ptr().cast(), 1) };
    }
    ops::close(fin[1]);
    let mut errs = Vec::new();
    for (pid, res) in children {
        let status = ops::wait_child(pid, OVS_WAIT_SECS as u32 + CHILD_SECS);
        let mut msg = Vec::new();
        let mut buf = [0u8; 512];
        loop {
            // SAFETY: reading into our buffer (the child is gone: no block).
            let n = unsafe { libc::read(res, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            msg.extend_from_slice(&buf[..n as usize]);
        }
        ops::close(res);
        match status {
            Some(s) if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0 => {}
            Some(_) => errs.push(String::from_utf8_lossy(&msg).to_string()),
            None => errs.push(format!("pid {pid} hung (killed)")),
        }
    }
    ops::close(ready[0]);
    ensure(errs.is_empty(), errs.join("; "))?;
    ensure(all_ready, format!("{readies} of {OVS_PROCESSES} processes made their queues"))
}

fn two_processes_have_separate_queues() -> Check {
    let s = setup()?;
    let mut a = s.aql();
    let Some(q) = s.create_or_unsupported(&mut a)? else {
        return Ok(());
    };
    let mine = a.doorbell_offset;
    in_child(CHILD_SECS, move || {
        let c = setup()?;
        let mut b = c.aql();
        c.create(&mut b).map_err(|e| format!("child CREATE: {}", errno_name(e)))?;
        // Its own id space and doorbell slice: the same numbers as ours.
        ensure_eq((b.queue_id, b.doorbell_offset), (0, mine), "child's first queue")?;
        // Our queue ids are not the child's.
        expect_errno(c.destroy(q + 1), libc::EINVAL, "child destroys a queue it does not have")
    })?;
    // The child's exit tore its queue down; ours is intact.
    ensure(std::path::Path::new(&queue_dir(q)).exists(), "our queue dir")?;
    expect_ok(s.destroy(q), "DESTROY")
}

fn killed_process_with_queues() -> Check {
    // SAFETY: the child builds queues and waits to be killed.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // Keeps /dev/kfd open (the Setup) until the kill.
        let code = (|| {
            let s = setup().ok()?;
            for _ in 0..4 {
                let mut a = s.aql();
                s.create(&mut a).ok()?;
            }
            Some(s)
        })();
        // SAFETY: signalling readiness and waiting for SIGKILL.
        unsafe {
            if code.is_some() {
                libc::kill(libc::getppid(), libc::SIGUSR1);
            }
            libc::pause();
            libc::_exit(0);
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let dir = format!("/sys/class/kfd/kfd/proc/{pid}/queues");
    // Wait up to 30 s for the child to build its queues (or give up quietly).
    let mut seen = 0;
    for _ in 0..300 {
        seen = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        if seen >= 4 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // SAFETY: killing and reaping our child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    ensure(!std::path::Path::new(&format!("/sys/class/kfd/kfd/proc/{pid}")).exists(), "proc/<pid> left behind")?;
    // A new process can use the device as before.
    let s = setup()?;
    let mut a = s.aql();
    match s.create_or_unsupported(&mut a)? {
        Some(q) => {
            ensure(seen >= 4, format!("child had {seen} queues"))?;
            expect_ok(s.destroy(q), "DESTROY")
        }
        None => Ok(()),
    }
}

fn hws_sysfs_counts_hangs() -> Check {
    let gpu = first_gpu()?;
    let d = format!("/sys/class/kfd/kfd/hws_{gpu}");
    let n = read_sysfs(&format!("{d}/hang_count"))?;
    ensure(n.trim().parse::<u32>().is_ok(), format!("hang_count {n:?}"))?;
    let r = read_sysfs(&format!("{d}/last_reset"))?;
    ensure(r == "none\n" || r == "hws_hang\n", format!("last_reset {r:?}"))
}

fn hang_count(gpu: u32) -> Result<u32, String> {
    read_sysfs(&format!("/sys/class/kfd/kfd/hws_{gpu}/hang_count"))?.trim().parse().map_err(|e| format!("hang_count: {e}"))
}

/// rkfd's writable `queue_preemption_timeout_ms` parameter set to 1000
/// while the value lives, if it was the default (-1: upstream's 9 s);
/// given back on drop.
struct PreemptionTimeout(Option<String>);

impl PreemptionTimeout {
    const PARAM: &'static str = "/sys/module/rkfd/parameters/queue_preemption_timeout_ms";

    fn at_most_1s() -> PreemptionTimeout {
        match std::fs::read_to_string(Self::PARAM) {
            Ok(old) if old.trim() == "-1" && std::fs::write(Self::PARAM, "1000\n").is_ok() => PreemptionTimeout(Some(old)),
            _ => PreemptionTimeout(None),
        }
    }
}

impl Drop for PreemptionTimeout {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            let _ = std::fs::write(Self::PARAM, old);
        }
    }
}

fn hang_hws_is_detected_reset_counted_and_signalled() -> Check {
    let s = setup()?;
    let mut ev = uapi::kfd_ioctl_create_event_args { event_type: uapi::KFD_IOC_EVENT_HW_EXCEPTION, ..Default::default() };
    expect_ok(s.kfd.ioctl(uapi::AMDKFD_IOC_CREATE_EVENT, &mut ev), "CREATE_EVENT HW_EXCEPTION")?;
    let mut a = s.aql();
    let Some(q) = s.create_or_unsupported(&mut a)? else {
        return Ok(());
    };
    let before = hang_count(s.gpu)?;
    let path = "/sys/kernel/debug/kfd/hang_hws";
    std::fs::write(path, "999999\n").err().ok_or("hang_hws accepted an unknown gpu_id")?;
    // GFX11 GPUs are scheduled by MES, which upstream does not hang:
    // -EINVAL, nothing hangs, the queue goes normally.
    if mes_gpu(s.gpu) {
        let e = std::fs::write(path, format!("{}\n", s.gpu)).err().and_then(|e| e.raw_os_error());
        ensure_eq(e, Some(libc::EINVAL), "hang_hws on a MES GPU")?;
        ensure_eq(hang_count(s.gpu)?, before, "hang_count")?;
        return expect_ok(s.destroy(q), "DESTROY_QUEUE");
    }
    // The hang is seen when the preemption fence times out: upstream's
    // 9 s unless rkfd was loaded with a timeout (hws-tests.sh gives 1 s
    // and checks dmesg for it); 1 s here too, the parameter given back
    // after.
    let _timeout = PreemptionTimeout::at_most_1s();
    std::fs::write(path, format!("{}\n", s.gpu)).map_err(|e| format!("{path}: {e}"))?;
    // Detected at the next preemption: the queue goes, the call says ETIME.
    expect_errno(s.destroy(q), libc::ETIME, "DESTROY_QUEUE on a hung scheduler")?;
    ensure_eq(hang_count(s.gpu)?, before + 1, "hang_count")?;
    ensure_eq(read_sysfs(&format!("/sys/class/kfd/kfd/hws_{}/last_reset", s.gpu))?, "hws_hang\n".to_string(), "last_reset")?;
    // The process was told, with reset semantics (kfd_signal_reset_event).
    // SAFETY: plain data, all-zero is valid.
    let mut data: uapi::kfd_event_data = unsafe { std::mem::zeroed() };
    data.event_id = ev.event_id;
    let mut w = uapi::kfd_ioctl_wait_events_args {
        events_ptr: &mut data as *mut _ as u64,
        num_events: 1,
        wait_for_all: 1,
        timeout: 0,
        wait_result: 0,
    };
    expect_ok(s.kfd.ioctl(uapi::AMDKFD_IOC_WAIT_EVENTS, &mut w), "WAIT_EVENTS")?;
    ensure_eq(w.wait_result, uapi::KFD_IOC_WAIT_RESULT_COMPLETE, "HW exception event signalled")?;
    // SAFETY: the kernel filled the hw_exception_data member.
    let hw = unsafe { data.__bindgen_anon_1.hw_exception_data };
    ensure_eq(
        (hw.reset_type, hw.reset_cause, hw.memory_lost, hw.gpu_id),
        (uapi::KFD_HW_EXCEPTION_WHOLE_GPU_RESET, uapi::KFD_HW_EXCEPTION_GPU_HANG, 1, s.gpu),
        "hw_exception_data",
    )?;
    // After the reset the scheduler answers again.
    let mut b = s.aql();
    s.create(&mut b).map_err(|e| format!("CREATE after reset: {}", errno_name(e)))?;
    expect_ok(s.destroy(b.queue_id), "DESTROY after reset")
}

/// The dword at byte `offset` of the first MQD debugfs `mqds` dumps under
/// the process header `me` (rows of 32 bytes: `    <offset>: <8 dwords>`).
fn mqd_dword(mqds: &str, me: &str, offset: usize) -> Option<u32> {
    let section = &mqds[mqds.find(me)?..];
    let row = format!("    {:08x}:", offset / 32 * 32);
    let line = section.lines().find(|l| l.starts_with(&row))?;
    let word = line[row.len()..].split_whitespace().nth(offset % 32 / 4)?;
    u32::from_str_radix(word, 16).ok()
}

fn debugfs_lists_queues() -> Check {
    let s = setup()?;
    let mut a = s.aql();
    let Some(q) = s.create_or_unsupported(&mut a)? else {
        return Ok(());
    };
    let mqds = read_sysfs("/sys/kernel/debug/kfd/mqds")?;
    // SAFETY: getpid has no preconditions.
    let me = format!("Process {} PASID ", unsafe { libc::getpid() });
    ensure(mqds.contains(&me), format!("mqds lacks {me:?}: {mqds}"))?;
    ensure(mqds.contains(&format!("  Compute queue on device {:x}", s.gpu)), format!("mqds: {mqds}"))?;
    // The MQD as upstream's seq_hex_dump prints it: 32 bytes a row, the
    // compute MQD header (0xC0310800) first, and our ring among the
    // dwords (cp_hqd_pq_base_lo = ring >> 8).
    ensure(mqds.contains("\n    00000000: c0310800 "), format!("mqds: no compute MQD dump: {mqds}"))?;
    let base_lo = format!(" {:08x}", (a.ring_base_address >> 8) as u32);
    ensure(mqds.contains(&base_lo), format!("mqds: no dword {base_lo} (ring base >> 8): {mqds}"))?;
    check_rls(&s, a.write_pointer_address, true)?;
    // hqds: upstream's dqm_debugfs_hqds, the HQD registers as the GPU
    // driver's hqd_dump reads them.  Whatever the scheduler, one CP HQD
    // holds our queue: active, with our ring's base as CP_HQD_PQ_BASE.
    let hqds = read_sysfs("/sys/kernel/debug/kfd/hqds")?;
    let dumps = hqd_dumps(&hqds, s.gpu).ok_or_else(|| format!("hqds: no section of gpu_id {:x}: {hqds}", s.gpu))?;
    ensure(dumps.iter().any(|(h, _)| h.starts_with(" Inst 0,  CP Pipe 0, Queue 0")), format!("hqds: no CP Pipe 0 Queue 0: {hqds}"))?;
    ensure(dumps.iter().any(|(h, _)| h.starts_with("  SDMA Engine 0, RLC 0")), format!("hqds: no SDMA Engine 0 RLC 0: {hqds}"))?;
    if hws_policy() && !mes_gpu(s.gpu) {
        ensure(dumps.iter().any(|(h, _)| h.starts_with("   Inst 0, HIQ on MEC 2 Pipe 0 Queue 0")), format!("hqds: no HIQ under the HWS: {hqds}"))?;
    }
    let ours = |dumps: &[HqdDump]| dumps.iter().filter(|d| holds_ring(d, a.ring_base_address)).count();
    ensure_eq(ours(&dumps), 1, "hqds: active CP HQDs holding our ring")?;
    // SET_CU_MASK rewrites the MQD: compute_static_thread_mgmt_se0 (byte
    // 92 of every generation's compute MQD, v9/v10/v11_structs.h) goes
    // from all CUs to the two of the mask (one WGP on GFX10+).
    let se0 = |m: &str| mqd_dword(m, &me, 92);
    ensure_eq(se0(&mqds), Some(0xffff_ffff), "compute_static_thread_mgmt_se0 before SET_CU_MASK")?;
    let mask = [0x3u32, 0];
    let mut c = uapi::kfd_ioctl_set_cu_mask_args { queue_id: q, num_cu_mask: 64, cu_mask_ptr: mask.as_ptr() as u64 };
    expect_ok(s.kfd.ioctl(uapi::AMDKFD_IOC_SET_CU_MASK, &mut c), "SET_CU_MASK")?;
    let after = se0(&read_sysfs("/sys/kernel/debug/kfd/mqds")?);
    ensure(after.is_some_and(|v| v != 0xffff_ffff && v & 0x3 != 0), format!("se0 after SET_CU_MASK: {after:x?}"))?;
    expect_ok(s.destroy(q), "DESTROY")?;
    let hqds = read_sysfs("/sys/kernel/debug/kfd/hqds")?;
    let dumps = hqd_dumps(&hqds, s.gpu).ok_or_else(|| format!("hqds: no section of gpu_id {:x} after DESTROY", s.gpu))?;
    ensure_eq(ours(&dumps), 0, "hqds: active CP HQDs holding our ring after DESTROY")?;
    check_rls(&s, a.write_pointer_address, false)
}

/// The rows of our GPU's section of debugfs `rls` (upstream
/// `kfd_debugfs_rls_by_device`: "Node <n>, gpu_id <hex>:", then
/// `pm_debugfs_runlist`'s lines), as dwords if it dumps a runlist
/// (`seq_hex_dump`, prefix "  ", offsets, 8 dwords a row), `None` for
/// "  No active runlist".
fn rls_dwords(rls: &str, gpu: u32) -> Result<Option<Vec<u32>>, String> {
    let head = rls
        .lines()
        .position(|l| l.starts_with("Node ") && l.ends_with(&format!(", gpu_id {gpu:x}:")))
        .ok_or_else(|| format!("rls: no section for gpu_id {gpu:x}: {rls}"))?;
    let body: Vec<&str> = rls.lines().skip(head + 1).take_while(|l| l.starts_with("  ")).collect();
    if body == ["  No active runlist"] {
        return Ok(None);
    }
    let mut dwords = Vec::new();
    for (row, line) in body.iter().enumerate() {
        let prefix = format!("  {:08x}:", row * 32);
        let rest = line.strip_prefix(&prefix).ok_or_else(|| format!("rls: row {row} is not {prefix:?}...: {rls}"))?;
        let words: Vec<&str> = rest.split_whitespace().collect();
        ensure(!words.is_empty() && words.len() <= 8 && words.iter().all(|w| w.len() == 8), format!("rls: row {line:?}"))?;
        for w in words {
            dwords.push(u32::from_str_radix(w, 16).map_err(|e| format!("rls: {w:?}: {e}"))?);
        }
    }
    ensure(!dwords.is_empty(), format!("rls: empty section: {rls}"))?;
    Ok(Some(dwords))
}

/// debugfs `rls` as upstream prints it.  Without the HWS: "No active
/// runlist" for our GPU (upstream's packet manager has no runlist then).
/// Under it, with our queue (write pointer `wptr`) `live`: the dump
/// decodes, as the firmware reads it, as whole packets, and holds a
/// MAP_PROCESS with our PASID, our VM's page table base and our SH_MEM
/// settings, followed by its MAP_QUEUES, one of them ours; once the queue is gone no MAP_QUEUES carries `wptr` any more.
fn check_rls(s: &Setup, wptr: u64, live: bool) -> Check {
    use amdgpu_hw::pm4::{self, Packet};
    let rls = read_sysfs("/sys/kernel/debug/kfd/rls")?;
    let dump = rls_dwords(&rls, s.gpu)?;
    // No runlist without the HWS: under policy 2, and on an MES GPU
    // (gfx11), whose queues go to the MES one by one.
    if !hws_policy() || gfx_of(s.gpu)?.uses_mes() {
        return ensure(dump.is_none(), format!("rls: a runlist without the HWS: {rls}"));
    }
    if !live {
        let Some(dwords) = dump else { return Ok(()) };
        let ours = pm4::parse(&dwords, pm_format(s.gpu)?).filter_map(Result::ok).any(|p| matches!(p, Packet::MapQueues(m) if m.wptr_addr == wptr));
        return ensure(!ours, format!("rls still maps our queue: {rls}"));
    }
    let dwords = dump.ok_or_else(|| format!("rls: no active runlist with our queue live: {rls}"))?;
    let format = pm_format(s.gpu)?;
    let packets: Vec<Packet<'_>> =
        pm4::parse(&dwords, format).collect::<Result<_, _>>().map_err(|e| format!("rls: runlist does not decode ({e:?}): {rls}"))?;
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let pasid: u32 = read_sysfs(&format!("/sys/kernel/debug/kfd/proc/{pid}/pasid_{}", s.gpu))?
        .trim()
        .parse()
        .map_err(|e| format!("pasid_{}: {e}", s.gpu))?;
    let at = packets
        .iter()
        .position(|p| matches!(p, Packet::MapProcess(m) if m.pasid == pasid))
        .ok_or_else(|| format!("rls: no MAP_PROCESS of PASID {pasid}: {packets:x?}"))?;
    let Packet::MapProcess(mp) = packets[at] else { unreachable!() };
    // As upstream's pm_map_process_v9 / _aldebaran: the page table base
    // of our VM (amdgpu_gmc_pd_addr's encoding: AMDGPU_PTE_VALID, 64-byte
    // aligned, below 2^48), no other process's; and the SH_MEM settings of
    // update_qpd for our XNACK mode (this process never calls
    // SET_MEMORY_POLICY: gfx90a gets unaligned mode, RETRY_DISABLE by
    // XNACK and the bases of the LDS and scratch apertures
    // GET_PROCESS_APERTURES_NEW reports, 1 << 48 and 2 << 48; GFX10+'s
    // update_qpd sets nothing).
    ensure(
        amdgpu_hw::qpd::pd_phys_vram(mp.page_table_base).is_some(),
        format!("rls: MAP_PROCESS page table base {:#x} is no VRAM page directory", mp.page_table_base),
    )?;
    let shared = packets.iter().filter(|p| matches!(p, Packet::MapProcess(m) if m.pasid != pasid && m.page_table_base == mp.page_table_base)).count();
    ensure_eq(shared, 0, "other processes' MAP_PROCESS with our page table base")?;
    let mut x = uapi::kfd_ioctl_set_xnack_mode_args { xnack_enabled: -1 };
    expect_ok(s.kfd.ioctl(uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut x), "SET_XNACK_MODE query")?;
    let gfx = gfx_of(s.gpu)?;
    let mut want = amdgpu_hw::qpd::ShMem::default();
    let ap = ops::apertures(&s.kfd).map_err(|e| format!("GET_PROCESS_APERTURES_NEW: {}", errno_name(e)))?;
    let ap = ap.iter().find(|a| a.gpu_id == s.gpu).ok_or("GET_PROCESS_APERTURES_NEW: no record of our GPU")?;
    ensure_eq((ap.lds_base, ap.scratch_base), (1 << 48, 2 << 48), "LDS and scratch aperture bases")?;
    want.update_qpd(gfx, gfx.noretry_default(), x.xnack_enabled == 1, ap.lds_base, ap.scratch_base);
    if gfx == kfd_logic::gfx::GfxVersion::GFX90A {
        // Worked out from update_qpd_v9: 3 << 3, | 1 << 12 with XNACK off.
        ensure_eq((want.config, want.bases), (if x.xnack_enabled == 1 { 0x18 } else { 0x1018 }, 0x0001_0002), "gfx90a qpd")?;
    }
    ensure_eq((mp.sh_mem_config, mp.sh_mem_bases), (want.config, want.bases), "MAP_PROCESS (sh_mem_config, sh_mem_bases)")?;
    let queues = &packets[at + 1..];
    ensure(
        mp.num_queues >= 1 && queues.len() >= mp.num_queues as usize,
        format!("rls: MAP_PROCESS num_queues {} with {} packets after it", mp.num_queues, queues.len()),
    )?;
    let queues = &queues[..mp.num_queues as usize];
    ensure(queues.iter().all(|p| matches!(p, Packet::MapQueues(_))), format!("rls: MAP_PROCESS not followed by its MAP_QUEUES: {packets:x?}"))?;
    ensure(
        queues.iter().any(|p| matches!(p, Packet::MapQueues(m) if m.wptr_addr == wptr)),
        format!("rls: no MAP_QUEUES with our write pointer {wptr:#x}: {packets:x?}"),
    )
}

/// The PASID of process `pid` on `gpu` (debugfs `proc/<pid>/pasid_<gpu_id>`).
fn pasid_of(pid: i32, gpu: u32) -> Result<u32, String> {
    read_sysfs(&format!("/sys/kernel/debug/kfd/proc/{pid}/pasid_{gpu}"))?.trim().parse().map_err(|e| format!("pasid_{gpu}: {e}"))
}

/// Doorbells by their BAR index (issue #15; upstream
/// `kfd_get_doorbell_dw_offset_in_bar`, `q->properties.doorbell_off`):
/// two queues of ours (doorbell byte offsets 0 and 8 in our slice, as
/// CREATE_QUEUE reports them) and one of a child process (offset 0 in its
/// slice).  The HQD holding each queue (debugfs `hqds`, found by its ring)
/// has in `CP_HQD_PQ_DOORBELL_CONTROL.DOORBELL_OFFSET` its process's slice
/// start in the doorbell BAR + the byte offset / 4: the same start for our
/// two (2 dwords apart, 64-bit doorbells), page aligned, not 0 (a
/// slice-relative value would be 0 for both processes) and a whole slice
/// away from the child's.  Under the HWS the runlist's MAP_QUEUES of each
/// process (after its MAP_PROCESS, by PASID) carry exactly those indexes.
/// That the queues run at all (the other checks ring these doorbells) is
/// the virtual CP resolving the index in the process's slice: it refuses
/// one outside it.
fn doorbells_are_bar_indexes() -> Check {
    let s = setup()?;
    let (ring_a0, ring_a1, ring_b) = (VA_RING, VA_RING + 0x2_0000, VA_RING + 0x4_0000);
    let mut a0 = s.queue_args(uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, ring_a0, 64 * 1024, VA_PTRS + 8, VA_PTRS);
    let Some(q0) = s.create_or_unsupported(&mut a0)? else {
        return Ok(());
    };
    let mut a1 = s.queue_args(uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, ring_a1, 64 * 1024, VA_PTRS + 0x48, VA_PTRS + 0x40);
    let made1 = s.create(&mut a1).map(|_| ()).map_err(|e| format!("second AQL queue: {}", errno_name(e)));
    let q1 = a1.queue_id;
    let gpu = s.gpu;
    let slot = |off: u64| (off & ((1 << GPU_ID_SHIFT) - 1)) as u32;
    let (off_a0, off_a1) = (slot(a0.doorbell_offset), slot(a1.doorbell_offset));
    let r = made1.clone().and_then(|_| {
        ensure_eq((off_a0, off_a1), (0, 8), "our doorbells' byte offsets in the slice")?;
        in_child(CHILD_SECS, move || {
            let c = setup()?;
            let mut b = c.queue_args(uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, ring_b, 64 * 1024, VA_PTRS + 8, VA_PTRS);
            c.create(&mut b).map_err(|e| format!("child CREATE: {}", errno_name(e)))?;
            let off_b = slot(b.doorbell_offset);
            ensure_eq(off_b, 0, "child's doorbell byte offset in its slice")?;
            let regs = amdgpu_hw::mqd::HqdRegs::of(gfx_of(gpu)?).ok_or("no HQD register set for the GPU")?;
            let hqds = read_sysfs("/sys/kernel/debug/kfd/hqds")?;
            let dumps = hqd_dumps(&hqds, gpu).ok_or_else(|| format!("hqds: no section of gpu_id {gpu:x}: {hqds}"))?;
            let bar = |ring: u64| -> Result<u32, String> {
                let held: Vec<&HqdDump> = dumps.iter().filter(|d| holds_ring(d, ring)).collect();
                ensure_eq(held.len(), 1, &format!("hqds: active CP HQDs holding ring {ring:#x}"))?;
                let ctl = held[0].1.iter().find(|r| r.0 == regs.doorbell_control() << 2).ok_or("hqds: no CP_HQD_PQ_DOORBELL_CONTROL")?;
                Ok(regs.doorbell_offset(ctl.1))
            };
            let (h_a0, h_a1, h_b) = (bar(ring_a0)?, bar(ring_a1)?, bar(ring_b)?);
            let first_a = h_a0.checked_sub(off_a0 / 4).ok_or(format!("HQD doorbell {h_a0:#x}"))?;
            let first_b = h_b.checked_sub(off_b / 4).ok_or(format!("HQD doorbell {h_b:#x}"))?;
            ensure_eq(h_a1, first_a + off_a1 / 4, &format!("our second queue's HQD doorbell (first {first_a:#x})"))?;
            ensure(first_a != 0 && first_b != 0, format!("slice-relative HQD doorbells: ours {h_a0:#x} {h_a1:#x}, the child's {h_b:#x}"))?;
            ensure(first_a % 1024 == 0 && first_b % 1024 == 0, format!("slices not page aligned in the BAR: {first_a:#x}, {first_b:#x}"))?;
            ensure(
                first_a.abs_diff(first_b) as usize * 4 >= DOORBELL_SLICE,
                format!("two processes' slices overlap in the BAR: {first_a:#x}, {first_b:#x}"),
            )?;
            if !hws_policy() || mes_gpu(gpu) {
                return Ok(());
            }
            use amdgpu_hw::pm4::{self, Packet};
            let rls = read_sysfs("/sys/kernel/debug/kfd/rls")?;
            let dwords = rls_dwords(&rls, gpu)?.ok_or_else(|| format!("rls: no active runlist: {rls}"))?;
            let packets: Vec<Packet<'_>> =
                pm4::parse(&dwords, pm_format(gpu)?).collect::<Result<_, _>>().map_err(|e| format!("rls: does not decode ({e:?}): {rls}"))?;
            // SAFETY: getppid and getpid have no preconditions.
            let (ppid, pid) = unsafe { (libc::getppid(), libc::getpid()) };
            for (who, pasid, want) in [("ours", pasid_of(ppid, gpu)?, vec![h_a0, h_a1]), ("the child's", pasid_of(pid, gpu)?, vec![h_b])] {
                let at = packets
                    .iter()
                    .position(|p| matches!(p, Packet::MapProcess(m) if m.pasid == pasid))
                    .ok_or_else(|| format!("rls: no MAP_PROCESS of PASID {pasid}: {packets:x?}"))?;
                let Packet::MapProcess(mp) = packets[at] else { unreachable!() };
                let mut got: Vec<u32> = packets[at + 1..]
                    .iter()
                    .take(mp.num_queues as usize)
                    .filter_map(|p| match p {
                        Packet::MapQueues(m) => Some(m.doorbell_off),
                        _ => None,
                    })
                    .collect();
                got.sort_unstable();
                ensure_eq(got, want.clone(), &format!("rls: {who} MAP_QUEUES doorbell_offset (the HQDs' BAR indexes)"))?;
            }
            Ok(())
        })
    });
    if made1.is_ok() {
        expect_ok(s.destroy(q1), "DESTROY 1")?;
    }
    expect_ok(s.destroy(q0), "DESTROY 0")?;
    r
}

/// The GPU's generation, from its topology node.
fn gfx_of(gpu: u32) -> Result<kfd_logic::gfx::GfxVersion, String> {
    let props = node_props(gpu).ok_or("no topology node")?;
    let v = prop(&props, "gfx_target_version") as u32;
    kfd_logic::gfx::GfxVersion::from_target_version(v).ok_or_else(|| format!("unknown gfx_target_version {v}"))
}

/// The packet set of the GPU's HWS (MAP_PROCESS differs on aldebaran).
fn pm_format(gpu: u32) -> Result<amdgpu_hw::pm4::PmFormat, String> {
    Ok(amdgpu_hw::pm4::PmFormat::of(gfx_of(gpu)?))
}

fn main() {
    // SAFETY: SIGUSR1 from children only says "ready"; ignore it.
    unsafe { libc::signal(libc::SIGUSR1, libc::SIG_IGN) };
    let mut h = Harness::new();
    h.run("create: every bad argument gives upstream's errno, in order", bad_create_arguments);
    h.run("create: libhsakmt 5.2.3's 88-byte struct is zero-filled", old_88_byte_create_queue_is_zero_filled);
    h.run("ids: unknown queue ids give upstream's errnos", unknown_queue_ids);
    h.run("create: AQL and SDMA ids, doorbell offsets, sysfs, pinned ring", aql_and_sdma_queue_ids_doorbells_and_sysfs);
    h.run("queue: UPDATE, SET_CU_MASK, ALLOC_QUEUE_GWS, GET_QUEUE_WAVE_STATE, SET_XNACK_MODE", update_cu_mask_gws_wave_state);
    h.run("update: PM4 queue disabled by ring 0 runs its packets once restored", || update_queue_disable_restore(false));
    h.run("update: SDMA queue disabled by ring 0 runs its packets once restored", || update_queue_disable_restore(true));
    h.run("throughput: issue #16 rounds, 4 PM4 queues x 1024 WRITE_DATA + RELEASE_MEM interrupt", || issue16_rounds(false));
    h.run("throughput: issue #16 rounds, 4 SDMA queues x 1024 FENCE + TRAP", || issue16_rounds(true));
    h.run("doorbell: a ring after idle traps (every mapping: mmap twice, mprotect, mremap) and runs", doorbell_traps_after_idle);
    h.run("limit: 127 queues per process and device, then ENOSPC (policy 1: the HWS's 32, then EPERM)", per_device_limit_127);
    h.run("hws: over-subscribed runlist (9 processes x 4 PM4 queues), every queue runs its packets", oversubscribed_runlist_all_queues_progress);
    h.run("processes: two processes have separate queues and doorbells", two_processes_have_separate_queues);
    h.run("teardown: a process killed with queues active", killed_process_with_queues);
    h.run("hws: hws_<gpu_id>/hang_count and last_reset", hws_sysfs_counts_hangs);
    h.run("debugfs: mqds, hqds and rls list the queue", debugfs_lists_queues);
    h.run("hws: runlist and HQD doorbells are BAR indexes, one slice per process", doorbells_are_bar_indexes);
    h.run("hws: hang_hws detected at preemption, reset, counted, signalled", hang_hws_is_detected_reset_counted_and_signalled);
    std::process::exit(h.finish("queue"));
}
