// SPDX-License-Identifier: GPL-2.0
//! kfd-shader-fuzz: hostile shaders on the virtual GPU's interpreter, run
//! inside the test VM.
//!
//!   kfd-shader-fuzz [--seed S] [--children N] [--dispatches D] [--verbose]
//!
//! Defaults: a random seed (printed first), 10 children per GPU, 12
//! dispatches each.  The seed fixes every choice (code, packets,
//! descriptors, memory kinds, XNACK, fates, kill delays); where a kill
//! lands is the machine's.
//!
//! On every GPU whose ISA the interpreter runs (`QueueProps::runs_shaders`:
//! gfx90a, gfx1030; the gfx11 profiles are skipped), forked children (a
//! shader scribbling over its process's memory hurts only that child) each
//! open /dev/kfd, bind the GPU, maybe turn XNACK on (before any queue),
//! put a 64 KiB code buffer in VRAM, GTT, userptr or SVM memory and a 64
//! KiB GTT data buffer, and dispatch, one queue each:
//!
//! - code: a code object of the GPU's ISA (`rust/amdgpu-isa/tests/
//!   fixtures`: gfx90a or gfx1030 builds of the test kernels and the HIP
//!   suite) loaded at its addresses, with a few words near the entry
//!   mutated (random words, bit flips, words from elsewhere);
//! - kernel descriptor: one of the code object's, some fields mutated, or a
//!   made-up one (an entry anywhere in `.text`, random user-SGPR enables
//!   and counts, workgroup-id and work-item-id enables, wave32, LDS and
//!   scratch sizes up to past the engine's limits);
//! - packet: dimensions 0-3, workgroup and grid sizes from plausible to 0
//!   and 65535, LDS and scratch sizes, the kernel object misaligned, null
//!   or unmapped, kernarg pointers into the data buffer, the code, unmapped
//!   memory or nowhere, kernargs of pointers into the data buffer, sizes
//!   and junk.
//!
//! Each dispatch is waited for: its completion signal reaching 0, or a
//! queue error (the process's HW_EXCEPTION event, or a MEMORY event for a
//! VM fault), within a time limit; one still running then is a shader that
//! never ends, and DESTROY_QUEUE ends it (and must return within 10 s).  A
//! dispatch the engine must refuse (what `vgpu/shader.rs` checks before it
//! runs anything: no dimensions, a zero size, more than 1024 work-items, a
//! null, misaligned or unmapped kernel object, scratch or LDS past the
//! limits, wave32 on gfx90a) must end in a queue error and never complete.
//! A child's last dispatch ends one of three ways: waited for as the
//! others, or with the child SIGKILLed (after a random delay) or exiting
//! with the shader still running.  A child that stayed also runs a
//! known-good dispatch (`s_endpgm`) at the end, which must complete.
//!
//! After the children: a known-good dispatch completes on each GPU in a new
//! process, every GPU's available memory is back to what it was before,
//! and the kernel log has no report (WARN, BUG, oops, ...).  The closing
//! line counts cases and puts the counts beside them:
//! `shader-fuzz: 5 passed, 0 failed (96 dispatches, 40 completed, ...)`.

use amdgpu_isa::code_object::{Elf, KernelDescriptor, KERNEL_DESCRIPTOR_SIZE};
use kfd_tests::harness::{ensure, flush, kernel_stacks, Args, Harness};
use kfd_tests::kfd::{errno_name, ioctl_fd, Kfd};
use kfd_tests::kmsg::KmsgWatch;
use kfd_tests::ops::{alloc, bind, map, memory_given_back, prop, topology_gpus, available_memory, TopoGpu, GTT, USERPTR, VRAM};
use kfd_tests::queue::{QueueMem, QueueProps};
use kfd_tests::rng::{parse_u64, random_seed, Rng};
use kfd_tests::svm::svm_set_attr;
use kfd_uapi as uapi;
use std::time::{Duration, Instant};

/// The code objects per ISA: the test kernels and the HIP suite.
const GFX9_OBJECTS: &[&[u8]] = &[
    include_bytes!("../../../amdgpu-isa/tests/fixtures/kernels.co"),
    include_bytes!("../../../amdgpu-isa/tests/fixtures/suite.co"),
];
const GFX10_OBJECTS: &[&[u8]] = &[
    include_bytes!("../../../amdgpu-isa/tests/fixtures/kernels_gfx1030.co"),
    include_bytes!("../../../amdgpu-isa/tests/fixtures/suite_gfx1030.co"),
];

/// GPU addresses of a child's objects (the queue's as kfd-storm's).
const QUEUE_VA: u64 = 1 << 41;
const CODE_VA: u64 = 1 << 40;
const DATA_VA: u64 = (1 << 40) + (1 << 30);
/// Nothing is mapped here.
const UNMAPPED_VA: u64 = (1 << 40) + (2 << 30);
/// The code and data buffers' size.
const BUF: usize = 64 << 10;
/// Where the dispatch's kernel descriptor goes in the code buffer (past
/// the code objects, which must end below).
const KD_SLOT: usize = 0xf000;
/// The known-good kernel's code (`s_endpgm`) in the code buffer.
const GOOD_CODE: usize = 0xf800;
/// `s_endpgm` (SOPP, GFX9 and GFX10).
const S_ENDPGM: u32 = 0xbf81_0000;
/// AQL KERNEL_DISPATCH, barrier bit, system-scope acquire and release.
const AQL_KERNEL_DISPATCH: u32 = 2 | (1 << 8) | (2 << 9) | (2 << 11);
/// The engine's limits (vgpu/shader.rs): scratch per lane, LDS.
const MAX_SCRATCH_LANE: u32 = 32 * 1024;
const MAX_LDS: u32 = 64 * 1024;
/// How long DESTROY_QUEUE of a queue running a shader may take.
const DESTROY_LIMIT: Duration = Duration::from_secs(10);
/// How long a child may take in all before it counts as hung.
const CHILD_LIMIT: Duration = Duration::from_secs(90);

/// A code object loaded at its addresses into a code buffer image.
struct Image {
    /// The buffer's bytes (the code object's segments at their vaddrs).
    bytes: Vec<u8>,
    /// Offsets of its kernel descriptors.
    kds: Vec<usize>,
    /// The executable segment: `[start, end)`.
    text: (usize, usize),
}

impl Image {
    fn load(obj: &[u8]) -> Option<Image> {
        let elf = Elf::parse(obj)?;
        let mut bytes = vec![0u8; BUF];
        let mut segs = Vec::new();
        let mut i = 0;
        while let Some(s) = elf.load_segment(i) {
            i += 1;
            let end = (s.vaddr + s.mem_size) as usize;
            if end > KD_SLOT {
                return None;
            }
            let b = elf.segment_bytes(&s)?;
            bytes[s.vaddr as usize..s.vaddr as usize + b.len()].copy_from_slice(b);
            segs.push((s.vaddr as usize, end));
        }
        // Kernel descriptors: 64-byte aligned, reserved bytes zero, entry
        // in another segment (the code).
        let mut kds = Vec::new();
        let mut text = None;
        for kd in (0..KD_SLOT).step_by(64) {
            let b = &bytes[kd..kd + KERNEL_DESCRIPTOR_SIZE];
            if b[12..16].iter().chain(&b[24..44]).any(|&x| x != 0) {
                continue;
            }
            let d = KernelDescriptor::parse(b)?;
            let entry = kd as i64 + d.kernel_code_entry_byte_offset;
            if d.kernel_code_entry_byte_offset == 0 || entry < 0 || entry % 4 != 0 {
                continue;
            }
            let entry = entry as usize;
            let Some(&seg) = segs.iter().find(|&&(s, e)| s <= entry && entry < e && !(s <= kd && kd < e)) else {
                continue;
            };
            text = Some(seg);
            kds.push(kd);
        }
        let text = text?;
        Some(Image { bytes, kds, text })
    }
}

/// What a GPU runs.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Isa {
    Gfx9,
    Gfx10,
}

impl Isa {
    fn of(gpu: &TopoGpu) -> Option<Isa> {
        if !QueueProps::of(gpu).runs_shaders {
            return None;
        }
        let p = std::fs::read_to_string(format!("{}/properties", gpu.node_dir())).unwrap_or_default();
        match prop(&p, "gfx_target_version").unwrap_or(0) / 10000 {
            9 => Some(Isa::Gfx9),
            10 => Some(Isa::Gfx10),
            _ => None,
        }
    }

    fn objects(self) -> &'static [&'static [u8]] {
        match self {
            Isa::Gfx9 => GFX9_OBJECTS,
            Isa::Gfx10 => GFX10_OBJECTS,
        }
    }
}

/// Where a child's code buffer lives.
#[derive(Clone, Copy, Debug)]
enum CodeMem {
    Vram,
    Gtt,
    Userptr,
    Svm,
}

/// How a child's last dispatch ends.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    /// Waited for as the others.
    Wait,
    /// SIGKILLed by the parent this long after it was submitted.
    Kill(Duration),
    /// The child exits with the shader running.
    Exit,
}

/// One dispatch: the packet's fields and the code buffer's image.
struct Dispatch {
    dims: u16,
    wg: [u16; 3],
    grid: [u32; 3],
    private: u32,
    group: u32,
    /// Kernel object: offset in the code buffer, or an absolute address
    /// (`None` offset).
    kobj: u64,
    kernarg: u64,
    code: Vec<u8>,
    /// The engine must refuse it: why.
    refused: Option<&'static str>,
    /// How long it may run before it counts as never ending.
    limit: Duration,
}

impl Dispatch {
    fn words(&self, signal: u64) -> [u32; 16] {
        let mut w = [0u32; 16];
        w[0] = AQL_KERNEL_DISPATCH | u32::from(self.dims) << 16;
        w[1] = u32::from(self.wg[0]) | u32::from(self.wg[1]) << 16;
        w[2] = u32::from(self.wg[2]);
        w[3] = self.grid[0];
        w[4] = self.grid[1];
        w[5] = self.grid[2];
        w[6] = self.private;
        w[7] = self.group;
        w[8] = self.kobj as u32;
        w[9] = (self.kobj >> 32) as u32;
        w[10] = self.kernarg as u32;
        w[11] = (self.kernarg >> 32) as u32;
        w[14] = signal as u32;
        w[15] = (signal >> 32) as u32;
        w
    }

    fn describe(&self, code_va: u64) -> String {
        format!(
            "dims {} wg {:?} grid {:?} private {:#x} group {:#x} kobj {:#x} kernarg {:#x}",
            self.dims,
            self.wg,
            self.grid,
            self.private,
            self.group,
            self.kobj.wrapping_sub(code_va),
            self.kernarg
        )
    }
}

fn put_u16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_le_bytes());
}
fn get_u32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

/// A workgroup or grid size: plausible mostly, sometimes an edge.
fn size(r: &mut Rng, edge: bool) -> u32 {
    if edge {
        *r.pick(&[0, 1, 2, 7, 63, 64, 65, 1023, 1024, 1025, 4096, 65535])
    } else {
        *r.pick(&[1, 32, 64, 64, 65, 128, 256])
    }
}

/// Draws a dispatch for a GPU of `isa` whose code buffer is at `code_va`.
fn draw(r: &mut Rng, isa: Isa, images: &[Image], code_va: u64) -> Dispatch {
    let img = r.pick(images);
    let mut code = img.bytes.clone();
    let (ts, te) = img.text;
    // The kernel descriptor: one of the code object's, maybe mutated, or
    // a made-up one.
    let mut kd = [0u8; 64];
    let entry;
    if r.chance(3, 5) && !img.kds.is_empty() {
        let at = *r.pick(&img.kds);
        kd.copy_from_slice(&code[at..at + 64]);
        entry = (at as i64 + i64::from_le_bytes(kd[16..24].try_into().unwrap())) as usize;
        for _ in 0..r.below(4).saturating_sub(1) {
            let (at, v) = match r.below(6) {
                0 => (0, *r.pick(&[0, 4, 4096, MAX_LDS, MAX_LDS + 1, u32::MAX])),
                1 => (4, *r.pick(&[0, 4, 16384, MAX_SCRATCH_LANE, MAX_SCRATCH_LANE + 1, u32::MAX - 1])),
                2 => (48, get_u32(&kd, 48) ^ 1 << r.below(32)),
                3 => (52, get_u32(&kd, 52) ^ 1 << r.below(32)),
                // kernel_code_properties (u16 at 56) and the reserved u16.
                4 => (56, get_u32(&kd, 56) ^ 1 << r.below(16)),
                _ => (44, r.u32()),
            };
            put_u32(&mut kd, at, v);
        }
    } else {
        entry = ts + 4 * r.below(((te - ts) / 4).saturating_sub(8) as u64) as usize;
        // Properties: private segment buffer, dispatch ptr, queue ptr,
        // kernarg ptr, dispatch id, flat scratch init, private segment
        // size (bits 0-6; 4, 2, 2, 2, 2, 2, 1 SGPRs); wave32 (bit 10).
        let props = r.below(128) as u16;
        let sgprs: u32 = [4, 2, 2, 2, 2, 2, 1].iter().enumerate().filter(|(i, _)| props & 1 << i != 0).map(|(_, n)| n).sum();
        let wave32 = match isa {
            Isa::Gfx10 => r.chance(1, 2),
            Isa::Gfx9 => r.chance(1, 20),
        };
        let count = if r.chance(4, 5) { sgprs } else { r.below(32) as u32 };
        // rsrc2: SCRATCH_EN, USER_SGPR, TGID_X/Y/Z_EN, TIDIG_COMP_CNT.
        let rsrc2 = r.below(2) as u32 | count << 1 | (r.below(8) as u32) << 7 | (r.below(4) as u32) << 11;
        let rsrc1 = if r.chance(1, 2) { r.u32() } else { 0x00af_0000 | r.below(64) as u32 };
        put_u32(&mut kd, 0, *r.pick(&[0, 0, 0, 256, 4096, MAX_LDS, MAX_LDS + 1, 0, 0, 64]));
        put_u32(&mut kd, 4, *r.pick(&[0, 0, 0, 0, 16, 1024, MAX_SCRATCH_LANE, MAX_SCRATCH_LANE + 4, u32::MAX, 0, 64]));
        put_u32(&mut kd, 8, *r.pick(&[0, 16, 24, 256]));
        put_u32(&mut kd, 48, rsrc1);
        put_u32(&mut kd, 52, rsrc2);
        put_u16(&mut kd, 56, props | if wave32 { 1 << 10 } else { 0 });
    }
    put_u64(&mut kd, 16, (entry as i64 - KD_SLOT as i64) as u64);
    // A legacy amd_kernel_code_t is parsed otherwise: not one of ours.
    if get_u32(&kd, 0) == 1 {
        put_u32(&mut kd, 0, 0);
    }
    code[KD_SLOT..KD_SLOT + 64].copy_from_slice(&kd);
    // A few words near the entry mutated.
    for _ in 0..r.below(6).saturating_sub(1) {
        let at = (entry + 4 * r.below(64) as usize).min(te - 4) & !3;
        let v = match r.below(4) {
            0 => r.u32(),
            1 => get_u32(&code, at) ^ 1 << r.below(32),
            2 => get_u32(&code, ts + 4 * r.below(((te - ts) / 4) as u64) as usize),
            _ => get_u32(&code, at) ^ (r.u32() & 0xffff),
        };
        put_u32(&mut code, at, v);
    }
    // Kernargs: pointers into the data buffer, sizes, junk (at DATA_VA).
    let edge = r.chance(1, 6);
    let mut wg = [size(r, edge) as u16, 1, 1];
    let mut grid = [wg[0] as u32 * r.range(1, 4) as u32, 1, 1];
    let dims = if edge { r.below(4) as u16 } else { 1 };
    for d in 1..usize::from(dims.max(1)) {
        wg[d] = size(r, edge) as u16;
        grid[d] = size(r, edge).max(u32::from(wg[d]));
    }
    if edge {
        grid[0] = size(r, true);
    }
    if r.chance(1, 30) {
        wg = [65535; 3];
    }
    if r.chance(1, 30) {
        grid = [65535, 65535, if r.chance(1, 2) { 65535 } else { 1 }];
    }
    let private = if r.chance(1, 12) { *r.pick(&[4, 1024, MAX_SCRATCH_LANE, MAX_SCRATCH_LANE + 1, u32::MAX - 2, u32::MAX]) } else { 0 };
    let group = if r.chance(1, 12) { *r.pick(&[64, 4096, MAX_LDS, MAX_LDS + 1, u32::MAX]) } else { 0 };
    let kd_va = code_va + KD_SLOT as u64;
    let kobj = match r.below(60) {
        0 => 0,
        1 | 2 => kd_va + 4 * r.range(1, 15),
        3 | 4 => UNMAPPED_VA,
        _ => kd_va,
    };
    let kernarg = match r.below(10) {
        0 => 0,
        1 => UNMAPPED_VA + 64,
        2 => code_va + 4 * r.below(1024),
        3 => DATA_VA + BUF as u64 - 8,
        _ => DATA_VA,
    };
    // What vgpu/shader.rs refuses before running anything.
    let items = wg.iter().map(|&d| u64::from(d)).product::<u64>();
    let d = KernelDescriptor::parse(&kd).unwrap();
    let lane = u64::from(private.max(d.private_segment_fixed_size)).next_multiple_of(4);
    let refused = if dims == 0 || wg.contains(&0) || grid.contains(&0) {
        Some("no dimensions or a zero size")
    } else if items > 1024 {
        Some("more than 1024 work-items")
    } else if kobj == 0 || kobj % 64 != 0 {
        Some("kernel object null or misaligned")
    } else if kobj == UNMAPPED_VA {
        Some("kernel object unmapped")
    } else if d.wavefront_size32() && isa == Isa::Gfx9 {
        Some("wave32 on gfx90a")
    } else if lane > u64::from(MAX_SCRATCH_LANE) {
        Some("scratch past the limit")
    } else if group.max(d.group_segment_fixed_size) > MAX_LDS {
        Some("LDS past the limit")
    } else {
        None
    };
    let limit = Duration::from_millis(r.range(300, 1200));
    Dispatch { dims, wg, grid, private, group, kobj, kernarg, code, refused, limit }
}

/// Fills the data buffer: kernargs (pointers into it, sizes, junk) at 0,
/// the rest a pattern.
fn fill_data(r: &mut Rng, data: &mut [u8]) {
    for (i, c) in data.chunks_mut(8).enumerate() {
        let v = if i < 32 {
            match r.below(10) {
                0..=5 => DATA_VA + 4096 * r.range(1, 15),
                6 | 7 => r.range(1, 1024),
                8 => UNMAPPED_VA,
                _ => r.next(),
            }
        } else {
            i as u64
        };
        c.copy_from_slice(&v.to_le_bytes());
    }
}

/// What children saw.
#[derive(Default, Clone, Copy, Debug)]
struct Counts {
    dispatches: u64,
    completed: u64,
    queue_errors: u64,
    vm_faults: u64,
    never_ended: u64,
    refused: u64,
    killed: u64,
    exited: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.dispatches += o.dispatches;
        self.completed += o.completed;
        self.queue_errors += o.queue_errors;
        self.vm_faults += o.vm_faults;
        self.never_ended += o.never_ended;
        self.refused += o.refused;
        self.killed += o.killed;
        self.exited += o.exited;
    }

    fn encode(&self) -> String {
        format!(
            "{} {} {} {} {} {} {} {}",
            self.dispatches, self.completed, self.queue_errors, self.vm_faults, self.never_ended, self.refused, self.killed, self.exited
        )
    }

    fn decode(s: &str) -> Option<Counts> {
        let v: Vec<u64> = s.split_whitespace().map(|x| x.parse().ok()).collect::<Option<_>>()?;
        (v.len() == 8).then(|| Counts {
            dispatches: v[0],
            completed: v[1],
            queue_errors: v[2],
            vm_faults: v[3],
            never_ended: v[4],
            refused: v[5],
            killed: v[6],
            exited: v[7],
        })
    }
}

/// How a dispatch ended.
#[derive(Debug, PartialEq)]
enum Outcome {
    Completed,
    QueueError,
    VmFault,
    NeverEnded,
}

/// An event of the process: CREATE_EVENT (auto-reset).
fn create_event(kfd: i32, ty: u32) -> Result<u32, String> {
    let mut a = uapi::kfd_ioctl_create_event_args { event_type: ty, auto_reset: 1, ..Default::default() };
    ioctl_fd(kfd, uapi::AMDKFD_IOC_CREATE_EVENT, &mut a as *mut _ as usize).map_err(|e| format!("CREATE_EVENT {ty}: {}", errno_name(e)))?;
    Ok(a.event_id)
}

/// Whether event `id` is signalled within `ms` (consumes it).
fn event_signalled(kfd: i32, id: u32, ms: u32) -> bool {
    kfd_tests::ops::wait_one_event(kfd, id, ms) == Ok(uapi::KFD_IOC_WAIT_RESULT_COMPLETE)
}

/// A child's process: /dev/kfd, the GPU bound, queue memory, the code and
/// data buffers CPU-mapped, the exception events.
struct Proc {
    k: Kfd,
    q: QueueMem,
    code_va: u64,
    code: *mut u8,
    data: *mut u8,
    hw_event: u32,
    mem_event: u32,
}

impl Proc {
    fn new(r: &mut Rng, gpu: &TopoGpu, isa: Isa, verbose: bool) -> Result<Proc, String> {
        let k = Kfd::open().map_err(|e| format!("open /dev/kfd: {e}"))?;
        let render = bind(&k, gpu)?;
        // XNACK on (gfx90a; before any queue), or off.
        let mut xnack = false;
        if isa == Isa::Gfx9 && r.chance(1, 2) {
            let mut x = uapi::kfd_ioctl_set_xnack_mode_args { xnack_enabled: 1 };
            xnack = ioctl_fd(k.fd, uapi::AMDKFD_IOC_SET_XNACK_MODE, &mut x as *mut _ as usize).is_ok();
        }
        let q = QueueMem::new(k.fd, render, gpu, QUEUE_VA)?;
        let render_map = |off: u64| -> Result<*mut u8, String> {
            // SAFETY: a shared mapping of our object through its render node.
            let p = unsafe { libc::mmap(std::ptr::null_mut(), BUF, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, render, off as i64) };
            if p == libc::MAP_FAILED {
                return Err(format!("mmap: {}", std::io::Error::last_os_error()));
            }
            Ok(p.cast())
        };
        let anon = || -> Result<*mut u8, String> {
            // SAFETY: a new private anonymous mapping.
            let p = unsafe {
                libc::mmap(std::ptr::null_mut(), BUF, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
            };
            if p == libc::MAP_FAILED {
                return Err(format!("mmap anon: {}", std::io::Error::last_os_error()));
            }
            // SAFETY: ours; populate it.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, BUF) };
            Ok(p.cast())
        };
        let e = |what: &'static str| move |e: i32| format!("{what}: {}", errno_name(e));
        let kind = *r.pick(&[CodeMem::Vram, CodeMem::Gtt, CodeMem::Userptr, CodeMem::Svm]);
        let (code_va, code) = match kind {
            CodeMem::Vram | CodeMem::Gtt => {
                let flags = match kind {
                    CodeMem::Vram => VRAM | uapi::KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC,
                    _ => GTT,
                };
                let (h, off) = alloc(k.fd, gpu.gpu_id, CODE_VA, BUF as u64, flags, 0).map_err(e("ALLOC code"))?;
                map(k.fd, h, gpu.gpu_id, true).map_err(e("MAP code"))?;
                (CODE_VA, render_map(off)?)
            }
            CodeMem::Userptr => {
                let p = anon()?;
                let (h, _) = alloc(k.fd, gpu.gpu_id, CODE_VA, BUF as u64, USERPTR, p as u64).map_err(e("ALLOC userptr code"))?;
                map(k.fd, h, gpu.gpu_id, true).map_err(e("MAP userptr code"))?;
                (CODE_VA, p)
            }
            CodeMem::Svm => {
                let p = anon()?;
                let attrs: Vec<(u32, u32)> = if xnack { Vec::new() } else { vec![(uapi::KFD_IOCTL_SVM_ATTR_ACCESS, gpu.gpu_id)] };
                let mut all = attrs.clone();
                all.push((uapi::KFD_IOCTL_SVM_ATTR_SET_FLAGS, uapi::KFD_IOCTL_SVM_FLAG_HOST_ACCESS | uapi::KFD_IOCTL_SVM_FLAG_COHERENT));
                svm_set_attr(k.fd, p as usize, BUF, &all).map_err(e("SVM SET_ATTR code"))?;
                (p as u64, p)
            }
        };
        let (h, off) = alloc(k.fd, gpu.gpu_id, DATA_VA, BUF as u64, GTT, 0).map_err(e("ALLOC data"))?;
        map(k.fd, h, gpu.gpu_id, true).map_err(e("MAP data"))?;
        let data = render_map(off)?;
        let hw_event = create_event(k.fd, uapi::KFD_IOC_EVENT_HW_EXCEPTION)?;
        let mem_event = create_event(k.fd, uapi::KFD_IOC_EVENT_MEMORY)?;
        if verbose {
            println!("#   child {}: code in {kind:?} at {code_va:#x}, XNACK {xnack}", std::process::id());
        }
        Ok(Proc { k, q, code_va, code, data, hw_event, mem_event })
    }

    /// Submits `d` on a new queue; the queue's id.
    fn submit(&self, r: &mut Rng, d: &Dispatch) -> Result<u32, String> {
        // SAFETY: our mappings of BUF bytes each.
        unsafe {
            std::ptr::copy_nonoverlapping(d.code.as_ptr(), self.code, BUF);
            fill_data(r, std::slice::from_raw_parts_mut(self.data, BUF));
        }
        let (qid, db) = self.q.create(false).map_err(|e| format!("CREATE_QUEUE: {}", errno_name(e)))?;
        self.q.set_signal(1);
        self.q.raw_submit(false, 0, &d.words(self.q.signal_va()), db);
        Ok(qid)
    }

    /// Waits up to `limit` for the dispatch on `qid` to end.
    fn wait(&self, limit: Duration) -> Outcome {
        let until = Instant::now() + limit;
        loop {
            if self.q.signal() == 0 {
                return Outcome::Completed;
            }
            if event_signalled(self.k.fd, self.mem_event, 0) {
                return Outcome::VmFault;
            }
            if event_signalled(self.k.fd, self.hw_event, 5) {
                // A VM fault raises both; the MEMORY event may come second.
                if event_signalled(self.k.fd, self.mem_event, 20) {
                    return Outcome::VmFault;
                }
                return Outcome::QueueError;
            }
            if Instant::now() > until {
                return Outcome::NeverEnded;
            }
        }
    }

    /// DESTROY_QUEUE, bounded.
    fn destroy(&self, qid: u32) -> Result<(), String> {
        let t = Instant::now();
        self.q.destroy(qid).map_err(|e| format!("DESTROY_QUEUE: {}", errno_name(e)))?;
        ensure(t.elapsed() < DESTROY_LIMIT, format!("DESTROY_QUEUE took {:?}", t.elapsed()))?;
        // Events of the dispatch that came late.
        while event_signalled(self.k.fd, self.mem_event, 0) || event_signalled(self.k.fd, self.hw_event, 0) {}
        Ok(())
    }

    /// A dispatch of one wave of `s_endpgm`: it must complete.
    fn known_good(&self) -> Result<(), String> {
        let mut code = vec![0u8; BUF];
        put_u32(&mut code, GOOD_CODE, S_ENDPGM);
        put_u64(&mut code, KD_SLOT + 16, (GOOD_CODE - KD_SLOT) as u64);
        let d = Dispatch {
            dims: 1,
            wg: [64, 1, 1],
            grid: [64, 1, 1],
            private: 0,
            group: 0,
            kobj: self.code_va + KD_SLOT as u64,
            kernarg: DATA_VA,
            code,
            refused: None,
            limit: Duration::from_secs(20),
        };
        let qid = self.submit(&mut Rng::new(0), &d)?;
        let o = self.wait(d.limit);
        self.destroy(qid)?;
        ensure(o == Outcome::Completed, format!("a known-good dispatch (s_endpgm) ended {o:?}"))
    }
}

/// A child's work: `n` dispatches, the last one ending as `fate` says.
/// Writes its counts (and problems) to `out` before the last dispatch of a
/// kill or exit fate.
fn child(r: &mut Rng, gpu: &TopoGpu, isa: Isa, images: &[Image], n: u64, fate: Fate, out: i32, verbose: bool) -> ! {
    let mut c = Counts::default();
    let mut problems = Vec::new();
    let report = |c: &Counts, problems: &[String]| {
        let msg = format!("{}\t{}\n", c.encode(), problems.join("; "));
        // SAFETY: our buffer to our pipe.
        unsafe { libc::write(out, msg.as_ptr().cast(), msg.len()) };
    };
    let p = match Proc::new(r, gpu, isa, verbose) {
        Ok(p) => p,
        Err(e) => {
            report(&c, &[format!("set-up: {e}")]);
            // SAFETY: leaving the child.
            unsafe { libc::_exit(1) };
        }
    };
    for i in 0..n {
        let d = draw(r, isa, images, p.code_va);
        let last = i + 1 == n;
        let qid = match p.submit(r, &d) {
            Ok(q) => q,
            Err(e) => {
                problems.push(e);
                break;
            }
        };
        c.dispatches += 1;
        if last && fate != Fate::Wait {
            match fate {
                Fate::Kill(_) => c.killed += 1,
                _ => c.exited += 1,
            }
            report(&c, &problems);
            if fate == Fate::Exit {
                // SAFETY: leaving with the queue and the shader live.
                unsafe { libc::_exit(0) };
            }
            loop {
                // SAFETY: waiting for the parent's SIGKILL.
                unsafe { libc::pause() };
            }
        }
        let o = p.wait(if d.refused.is_some() { Duration::from_secs(10) } else { d.limit });
        if verbose {
            println!("#   {i}: {} -> {o:?}{}", d.describe(p.code_va), d.refused.map(|w| format!(" (refused: {w})")).unwrap_or_default());
        }
        match o {
            Outcome::Completed => c.completed += 1,
            Outcome::QueueError => c.queue_errors += 1,
            Outcome::VmFault => {
                c.queue_errors += 1;
                c.vm_faults += 1
            }
            Outcome::NeverEnded => c.never_ended += 1,
        }
        if let Some(why) = d.refused {
            c.refused += 1;
            if matches!(o, Outcome::Completed | Outcome::NeverEnded) {
                problems.push(format!("dispatch {i} ({why}: {}) ended {o:?}, want a queue error", d.describe(p.code_va)));
            }
        }
        if let Err(e) = p.destroy(qid) {
            problems.push(format!("dispatch {i}: {e}"));
        }
        // One failure tells: the next would cost up to 10 s each.
        if !problems.is_empty() {
            break;
        }
    }
    if let Err(e) = p.known_good() {
        problems.push(e);
    }
    report(&c, &problems);
    flush();
    // SAFETY: leaving the child without the parent's destructors.
    unsafe { libc::_exit(0) };
}

/// Reads the child's report line (up to `limit`).
fn read_report(fd: i32, limit: Duration) -> Option<String> {
    let until = Instant::now() + limit;
    let mut buf = Vec::new();
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd of ours.
        let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(1000) as i32) };
        if n <= 0 {
            continue;
        }
        let mut b = [0u8; 4096];
        // SAFETY: reading into our buffer.
        let n = unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
        if n <= 0 {
            return (!buf.is_empty()).then(|| String::from_utf8_lossy(&buf).to_string());
        }
        buf.extend_from_slice(&b[..n as usize]);
        if buf.ends_with(b"\n") {
            return Some(String::from_utf8_lossy(&buf).trim_end().to_string());
        }
    }
}

/// Runs one child; its counts, or what went wrong.
fn run_child(seed: u64, gpu: &TopoGpu, isa: Isa, images: &[Image], n: u64, verbose: bool) -> Result<Counts, String> {
    let mut r = Rng::new(seed);
    let fate = match r.below(4) {
        0 => Fate::Kill(Duration::from_millis(r.range(0, 300))),
        1 => Fate::Exit,
        _ => Fate::Wait,
    };
    let mut fds = [0i32; 2];
    // SAFETY: room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err("pipe failed".into());
    }
    flush();
    // SAFETY: the child runs `child` and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err("fork failed".into());
    }
    if pid == 0 {
        // SAFETY: the read end is the parent's.
        unsafe { libc::close(fds[0]) };
        child(&mut r, gpu, isa, images, n, fate, fds[1], verbose);
    }
    // SAFETY: the write end is the child's.
    unsafe { libc::close(fds[1]) };
    let t = Instant::now();
    let report = read_report(fds[0], CHILD_LIMIT);
    if let (Fate::Kill(after), Some(_)) = (fate, &report) {
        std::thread::sleep(after);
        // SAFETY: our child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let mut status = 0;
    let mut gone = false;
    while t.elapsed() < CHILD_LIMIT + Duration::from_secs(10) {
        // SAFETY: waiting for our child.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: our pipe.
    unsafe { libc::close(fds[0]) };
    if !gone {
        let stacks = kernel_stacks(pid);
        // SAFETY: our child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, &mut status, 0);
        }
        return Err(format!("child (seed {seed:#x}, {fate:?}) hung:\n{stacks}"));
    }
    let Some(report) = report else {
        return Err(format!("child (seed {seed:#x}, {fate:?}) reported nothing (status {status:#x})"));
    };
    let (counts, problems) = report.split_once('\t').unwrap_or((&report, ""));
    let counts = Counts::decode(counts).ok_or_else(|| format!("child (seed {seed:#x}): bad report {report:?}"))?;
    let ended_right = match fate {
        Fate::Kill(_) => libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL,
        _ => libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    };
    if !problems.is_empty() || !ended_right {
        return Err(format!("child (seed {seed:#x}, {fate:?}, status {status:#x}): {problems}"));
    }
    Ok(counts)
}

fn main() {
    let args = Args::from_env();
    let seed = args.value("--seed").and_then(parse_u64).unwrap_or_else(random_seed);
    let children = args.u64("--children", 10);
    let dispatches = args.u64("--dispatches", 12).max(1);
    let verbose = args.flag("--verbose");
    println!("shader-fuzz: seed={seed:#x} children={children} dispatches={dispatches} (rerun: kfd-shader-fuzz --seed {seed:#x})");
    let mut kmsg = KmsgWatch::open();
    kmsg.mark(&format!("<7>kfd-shader-fuzz: seed={seed:#x} start\n"));
    let mut h = Harness::default();
    let gpus = topology_gpus();
    let shader_gpus: Vec<(TopoGpu, Isa)> = gpus.iter().filter_map(|g| Isa::of(g).map(|i| (g.clone(), i))).collect();
    for g in &gpus {
        if Isa::of(g).is_none() {
            println!("# skip: GPU {} (node {}): the interpreter does not run its ISA", g.gpu_id, g.index);
        }
    }
    h.run("a GPU runs shaders", || ensure(!shader_gpus.is_empty(), "no GPU whose ISA the interpreter runs"));
    if shader_gpus.is_empty() {
        std::process::exit(h.finish("shader-fuzz"));
    }
    let before = available_memory(&gpus);
    let mut rng = Rng::new(seed);
    let mut total = Counts::default();
    let t0 = Instant::now();
    for (gpu, isa) in &shader_gpus {
        let mut grng = rng.fork();
        let images: Vec<Image> = isa.objects().iter().filter_map(|o| Image::load(o)).collect();
        let name = format!("hostile dispatches on GPU {} ({isa:?})", gpu.gpu_id);
        let mut problems = Vec::new();
        let mut counts = Counts::default();
        let t = Instant::now();
        if images.len() != isa.objects().len() {
            problems.push(format!("{} of {} code objects loaded", images.len(), isa.objects().len()));
        }
        for _ in 0..children {
            let s = grng.next();
            match run_child(s, gpu, *isa, &images, dispatches, verbose) {
                Ok(c) => counts.add(&c),
                Err(e) => {
                    println!("# {e}");
                    problems.push(e);
                }
            }
        }
        println!("# GPU {} ({isa:?}): {counts:?} in {:.1} s", gpu.gpu_id, t.elapsed().as_secs_f64());
        total.add(&counts);
        h.record(&name, ensure(problems.is_empty(), format!("{} of {children} children failed", problems.len())));
        h.run(&format!("a known-good dispatch completes on GPU {} afterwards", gpu.gpu_id), || {
            kfd_tests::ops::in_child(60, || Proc::new(&mut Rng::new(seed), gpu, *isa, false)?.known_good())
        });
    }
    h.run("memory given back", || memory_given_back(&gpus, &before));
    h.run("kernel log clean", || {
        let bad = kmsg.bad_lines();
        ensure(bad.is_empty(), format!("kernel reports: {}", bad.join(" | ")))
    });
    println!("# {:.1} s", t0.elapsed().as_secs_f64());
    h.detail(format!(
        "{} dispatches, {} completed, {} queue errors, {} of them VM faults, {} never ended, {} refused, {} killed, {} exited",
        total.dispatches, total.completed, total.queue_errors, total.vm_faults, total.never_ended, total.refused, total.killed, total.exited
    ));
    std::process::exit(h.finish("shader-fuzz"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_object_loads_with_its_kernel_descriptors() {
        for isa in [Isa::Gfx9, Isa::Gfx10] {
            for o in isa.objects() {
                let img = Image::load(o).expect("loads below the descriptor slot");
                assert!(!img.kds.is_empty(), "{isa:?}: no kernel descriptor found");
                assert!(img.text.0 < img.text.1 && img.text.1 <= KD_SLOT);
                for &kd in &img.kds {
                    let d = KernelDescriptor::parse(&img.bytes[kd..kd + 64]).unwrap();
                    let entry = (kd as i64 + d.kernel_code_entry_byte_offset) as usize;
                    assert!((img.text.0..img.text.1).contains(&entry));
                }
            }
        }
    }

    #[test]
    fn draws_are_reproducible_and_reach_the_edges() {
        let images: Vec<Image> = GFX9_OBJECTS.iter().filter_map(|o| Image::load(o)).collect();
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let mut refused = 0;
        let mut huge = 0;
        for _ in 0..2000 {
            let (x, y) = (draw(&mut a, Isa::Gfx9, &images, CODE_VA), draw(&mut b, Isa::Gfx9, &images, CODE_VA));
            assert_eq!(x.words(0), y.words(0));
            assert!(x.code == y.code);
            refused += usize::from(x.refused.is_some());
            huge += usize::from(x.wg == [65535; 3]);
        }
        assert!(refused > 100 && refused < 1500, "{refused} of 2000 refused");
        assert!(huge > 15, "{huge} of 2000 with 65535^3 work-items");
    }
}
