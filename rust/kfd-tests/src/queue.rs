// SPDX-License-Identifier: GPL-2.0
//! User-mode queues for the reliability programs (kfd-race, kfd-storm):
//! the memory a queue needs (ring, pointers, EOP, save area), CREATE /
//! DESTROY / UPDATE_QUEUE, and work submitted the way user space does it:
//! packets written to the ring through a CPU mapping of the GTT object,
//! the write pointer moved, the doorbell rung.
//!
//! Work is an AQL BARRIER_AND packet whose completion signal the engine
//! decrements, or an SDMA FENCE packet that writes a value: both can be
//! checked from the CPU.  Layout of the one 64 KiB GTT object (`va`):
//!
//! - `+0`      AQL ring, 4 KiB (64 packets)
//! - `+4 KiB`  SDMA ring, 4 KiB (256 FENCE packets)
//! - `+8 KiB`  pointers: AQL rptr, AQL wptr, SDMA rptr, SDMA wptr (u64 each)
//! - `+12 KiB` AQL completion signal (`amd_signal_t`)
//! - `+16 KiB` SDMA fence target (u32)

use crate::kfd::ioctl_fd;
use crate::ops::{alloc, free, map, prop, TopoGpu, GTT, VRAM};
use kfd_uapi as uapi;

pub const RING: u64 = 4096;
const OBJ: u64 = 64 << 10;
const SDMA_RING: u64 = 4096;
const PTRS: u64 = 8192;
const SIGNAL: u64 = 12288;
const FENCE: u64 = 16384;
/// A kernel descriptor (code object v3 `.kd`, 64 bytes) with its code 256
/// bytes on, and the kernarg segment.
const KERNEL_OBJECT: u64 = 32768;
const KERNARG: u64 = 40960;
/// `s_branch -1` (SOPP, the same word on GFX9 and GFX10): never ends.
const S_BRANCH_SELF: u32 = 0xbf82_ffff;
/// AQL KERNEL_DISPATCH, barrier bit, system-scope acquire and release.
const AQL_KERNEL_DISPATCH: u16 = 2 | (1 << 8) | (2 << 9) | (2 << 11);
/// `HSA_PACKET_TYPE_BARRIER_AND` with system-scope acquire and release.
const AQL_BARRIER_AND: u16 = 3 | (2 << 9) | (2 << 11);
const AQL_INVALID: u16 = 1;
/// `SDMA_OP_FENCE`.
const SDMA_FENCE: u32 = 5;
/// `/dev/kfd` mmap type of doorbells, and the gpu_id's place in the offset.
const TYPE_DOORBELL: u64 = 0x3 << 62;
const GPU_ID_SHIFT: u32 = 46;
const DOORBELL_SLICE: usize = 8192;

/// What a GPU's topology says a queue needs.
#[derive(Clone, Copy, Debug, Default)]
pub struct QueueProps {
    pub cwsr_size: u32,
    pub ctl_stack_size: u32,
    pub sdma_engines: u32,
    /// The virtual GPU's shader interpreter runs this GPU's ISA (GFX9 and
    /// GFX10: `gfx_target_version` 9xxxx and 10xxxx; not GFX11).
    pub runs_shaders: bool,
}

impl QueueProps {
    pub fn of(gpu: &TopoGpu) -> QueueProps {
        let p = std::fs::read_to_string(format!("{}/properties", gpu.node_dir())).unwrap_or_default();
        let g = |k: &str| prop(&p, k).unwrap_or(0) as u32;
        QueueProps {
            cwsr_size: g("cwsr_size"),
            ctl_stack_size: g("ctl_stack_size"),
            sdma_engines: g("num_sdma_engines") + g("num_sdma_xgmi_engines"),
            runs_shaders: matches!(g("gfx_target_version") / 10000, 9 | 10),
        }
    }
}

/// One process's queue memory on one GPU (bound by the caller), CPU-mapped.
pub struct QueueMem {
    pub kfd: i32,
    pub gpu: u32,
    pub va: u64,
    pub props: QueueProps,
    cpu: usize,
    doorbells: usize,
    pub handles: Vec<u64>,
}

// SAFETY: The fields are plain addresses of shared memory mappings that
// live as long as the value (no Rust references into them); threads racing
// on that memory is the point of the race tests, and it is accessed through
// raw pointers (volatile operations), never through Rust references.
unsafe impl Send for QueueMem {}
// SAFETY: As for `Send`: `&QueueMem` only hands out those addresses.
unsafe impl Sync for QueueMem {}

impl QueueMem {
    /// Allocates and maps the queue memory at GPU VA `va` (the EOP buffer
    /// and save area follow at `va + 1 MiB`, `va + 2 MiB`).  `render` is
    /// the render-node fd bound to `gpu` (for the CPU mapping).
    pub fn new(kfd: i32, render: i32, gpu: &TopoGpu, va: u64) -> Result<QueueMem, String> {
        let props = QueueProps::of(gpu);
        let e = |what: &str| {
            let what = what.to_string();
            move |e: i32| format!("{what}: {}", crate::kfd::errno_name(e))
        };
        let mut handles = Vec::new();
        let (h, off) = alloc(kfd, gpu.gpu_id, va, OBJ, GTT, 0).map_err(e("ALLOC queue GTT"))?;
        handles.push(h);
        map(kfd, h, gpu.gpu_id, true).map_err(e("MAP queue GTT"))?;
        // SAFETY: mapping the object through its render node.
        let cpu = unsafe {
            libc::mmap(std::ptr::null_mut(), OBJ as usize, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, render, off as i64)
        };
        if cpu == libc::MAP_FAILED {
            return Err(format!("mmap queue GTT: {}", std::io::Error::last_os_error()));
        }
        let (h, _) = alloc(kfd, gpu.gpu_id, va + (1 << 20), 4096, VRAM, 0).map_err(e("ALLOC EOP"))?;
        handles.push(h);
        map(kfd, h, gpu.gpu_id, true).map_err(e("MAP EOP"))?;
        let ctx = (u64::from(props.cwsr_size) + 0xfff) & !0xfff;
        let (h, _) = alloc(kfd, gpu.gpu_id, va + (2 << 20), ctx.max(4096), VRAM, 0).map_err(e("ALLOC save area"))?;
        handles.push(h);
        map(kfd, h, gpu.gpu_id, true).map_err(e("MAP save area"))?;
        let off = TYPE_DOORBELL | (u64::from(gpu.gpu_id) << GPU_ID_SHIFT);
        // SAFETY: a shared mapping of our doorbell slice.
        let db = unsafe {
            libc::mmap(std::ptr::null_mut(), DOORBELL_SLICE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, kfd, off as i64)
        };
        let doorbells = if db == libc::MAP_FAILED { 0 } else { db as usize };
        Ok(QueueMem { kfd, gpu: gpu.gpu_id, va, props, cpu: cpu as usize, doorbells, handles })
    }

    /// Maps the doorbell slice again (a new `mmap` of `/dev/kfd`; the old
    /// mapping is unmapped): after a GPU reset zapped the old one
    /// (`kgd2kfd_clear_mappings`), writes through it would be SIGBUS.
    /// `Err` with the errno if the new `mmap` fails.
    pub fn remap_doorbells(&mut self) -> Result<(), i32> {
        let off = TYPE_DOORBELL | (u64::from(self.gpu) << GPU_ID_SHIFT);
        // SAFETY: a shared mapping of our doorbell slice.
        let db = unsafe {
            libc::mmap(std::ptr::null_mut(), DOORBELL_SLICE, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, self.kfd, off as i64)
        };
        if db == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        }
        if self.doorbells != 0 {
            // SAFETY: our old mapping, replaced.
            unsafe { libc::munmap(self.doorbells as *mut _, DOORBELL_SLICE) };
        }
        self.doorbells = db as usize;
        Ok(())
    }

    fn at<T>(&self, off: u64) -> *mut T {
        (self.cpu + off as usize) as *mut T
    }

    /// CREATE_QUEUE arguments of an AQL queue over this memory.
    pub fn aql_args(&self) -> uapi::kfd_ioctl_create_queue_args {
        uapi::kfd_ioctl_create_queue_args {
            ring_base_address: self.va,
            write_pointer_address: self.va + PTRS + 8,
            read_pointer_address: self.va + PTRS,
            ring_size: RING as u32,
            gpu_id: self.gpu,
            queue_type: uapi::KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            queue_percentage: 100,
            queue_priority: 7,
            eop_buffer_address: self.va + (1 << 20),
            eop_buffer_size: 4096,
            ctx_save_restore_address: self.va + (2 << 20),
            ctx_save_restore_size: self.props.cwsr_size,
            ctl_stack_size: self.props.ctl_stack_size,
            ..Default::default()
        }
    }

    /// CREATE_QUEUE arguments of an SDMA queue over this memory.
    pub fn sdma_args(&self) -> uapi::kfd_ioctl_create_queue_args {
        uapi::kfd_ioctl_create_queue_args {
            ring_base_address: self.va + SDMA_RING,
            write_pointer_address: self.va + PTRS + 24,
            read_pointer_address: self.va + PTRS + 16,
            ring_size: RING as u32,
            gpu_id: self.gpu,
            queue_type: uapi::KFD_IOC_QUEUE_TYPE_SDMA,
            queue_percentage: 100,
            queue_priority: 7,
            ..Default::default()
        }
    }

    /// Resets the ring and pointers of `sdma` (or AQL) for a new queue.
    pub fn reset(&self, sdma: bool) {
        // SAFETY: inside our CPU mapping.
        unsafe {
            if sdma {
                std::ptr::write_bytes(self.at::<u8>(SDMA_RING), 0, RING as usize);
                self.at::<u64>(PTRS + 16).write_volatile(0);
                self.at::<u64>(PTRS + 24).write_volatile(0);
            } else {
                for i in 0..RING / 64 {
                    std::ptr::write_bytes(self.at::<u8>(i * 64), 0, 64);
                    self.at::<u16>(i * 64).write_volatile(AQL_INVALID);
                }
                self.at::<u64>(PTRS).write_volatile(0);
                self.at::<u64>(PTRS + 8).write_volatile(0);
            }
        }
    }

    /// Creates a queue; `Ok((queue_id, doorbell_offset))`.
    pub fn create(&self, sdma: bool) -> Result<(u32, u64), i32> {
        self.reset(sdma);
        let mut a = if sdma { self.sdma_args() } else { self.aql_args() };
        ioctl_fd(self.kfd, uapi::AMDKFD_IOC_CREATE_QUEUE, &mut a as *mut _ as usize)?;
        Ok((a.queue_id, a.doorbell_offset))
    }

    pub fn destroy(&self, qid: u32) -> Result<i32, i32> {
        destroy_queue(self.kfd, qid)
    }

    /// UPDATE_QUEUE keeping the ring (`sdma` selects which ring).
    pub fn update(&self, qid: u32, sdma: bool, percentage: u32, priority: u32) -> Result<i32, i32> {
        let mut u = uapi::kfd_ioctl_update_queue_args {
            ring_base_address: if sdma { self.va + SDMA_RING } else { self.va },
            queue_id: qid,
            ring_size: RING as u32,
            queue_percentage: percentage,
            queue_priority: priority,
        };
        ioctl_fd(self.kfd, uapi::AMDKFD_IOC_UPDATE_QUEUE, &mut u as *mut _ as usize)
    }

    /// Sets the AQL completion signal's value.
    pub fn set_signal(&self, v: i64) {
        // SAFETY: inside our mapping; amd_signal_t: kind at 0, value at 8,
        // mailbox at 16 (0: no interrupt).
        unsafe {
            self.at::<i64>(SIGNAL).write_volatile(1);
            self.at::<u64>(SIGNAL + 16).write_volatile(0);
            self.at::<i64>(SIGNAL + 8).write_volatile(v);
        }
    }

    /// The GPU address of the AQL completion signal ([`QueueMem::signal`]).
    pub fn signal_va(&self) -> u64 {
        self.va + SIGNAL
    }

    pub fn signal(&self) -> i64 {
        // SAFETY: inside our mapping.
        unsafe { self.at::<i64>(SIGNAL + 8).read_volatile() }
    }

    pub fn fence(&self) -> u32 {
        // SAFETY: inside our mapping.
        unsafe { self.at::<u32>(FENCE).read_volatile() }
    }

    fn ring_doorbell(&self, doorbell_offset: u64, value: u64) {
        let off = (doorbell_offset & ((1 << GPU_ID_SHIFT) - 1)) as usize;
        if self.doorbells != 0 && off + 8 <= DOORBELL_SLICE {
            // SAFETY: inside our doorbell mapping.
            unsafe { ((self.doorbells + off) as *mut u64).write_volatile(value) };
        }
    }

    /// Submits AQL packet number `index` (a BARRIER_AND that decrements the
    /// completion signal): packet, header last, write index, doorbell.
    pub fn aql_submit(&self, index: u64, doorbell_offset: u64) {
        let slot = (index % (RING / 64)) * 64;
        // SAFETY: inside our mapping.
        unsafe {
            std::ptr::write_bytes(self.at::<u8>(slot + 2), 0, 54);
            self.at::<u64>(slot + 56).write_volatile(self.va + SIGNAL);
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            self.at::<u16>(slot).write_volatile(AQL_BARRIER_AND);
            self.at::<u64>(PTRS + 8).write_volatile(index + 1);
        }
        self.ring_doorbell(doorbell_offset, index);
    }

    /// Submits AQL packet number `index` as a KERNEL_DISPATCH of one
    /// workgroup of 64 work-items running `s_branch -1`: a shader that never
    /// ends, so whatever comes next (a kill, DESTROY_QUEUE, process exit)
    /// meets a running shader.  No completion signal.
    pub fn aql_dispatch_forever(&self, index: u64, doorbell_offset: u64) {
        let slot = (index % (RING / 64)) * 64;
        // SAFETY: inside our mapping (the kernel object, kernarg and a
        // 64-byte ring slot all lie in the 64 KiB GTT object).
        unsafe {
            std::ptr::write_bytes(self.at::<u8>(KERNEL_OBJECT), 0, 256);
            self.at::<u64>(KERNEL_OBJECT + 16).write_volatile(256); // kernel_code_entry_byte_offset
            self.at::<u32>(KERNEL_OBJECT + 256).write_volatile(S_BRANCH_SELF);
            self.at::<u64>(KERNARG).write_volatile(0);
            std::ptr::write_bytes(self.at::<u8>(slot + 2), 0, 62);
            self.at::<u16>(slot + 2).write_volatile(1); // setup: 1 dimension
            for (o, v) in [(4, 64u16), (6, 1), (8, 1)] {
                self.at::<u16>(slot + o).write_volatile(v);
            }
            for (o, v) in [(12, 64u32), (16, 1), (20, 1)] {
                self.at::<u32>(slot + o).write_volatile(v);
            }
            self.at::<u64>(slot + 32).write_volatile(self.va + KERNEL_OBJECT);
            self.at::<u64>(slot + 40).write_volatile(self.va + KERNARG);
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            self.at::<u16>(slot).write_volatile(AQL_KERNEL_DISPATCH);
            self.at::<u64>(PTRS + 8).write_volatile(index + 1);
        }
        self.ring_doorbell(doorbell_offset, index);
    }

    /// Submits SDMA FENCE number `index` (writes `value` to the fence
    /// target): packet, write pointer (bytes), doorbell.
    pub fn sdma_submit(&self, index: u64, value: u32, doorbell_offset: u64) {
        let at = (index * 16) % RING;
        let target = self.va + FENCE;
        // SAFETY: inside our mapping.
        unsafe {
            let p = self.at::<u32>(SDMA_RING + at);
            p.write_volatile(SDMA_FENCE);
            p.add(1).write_volatile(target as u32);
            p.add(2).write_volatile((target >> 32) as u32);
            p.add(3).write_volatile(value);
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            self.at::<u64>(PTRS + 24).write_volatile((index + 1) * 16);
        }
        self.ring_doorbell(doorbell_offset, (index + 1) * 16);
    }

    /// A clean round trip on a fresh queue of each kind: `n` AQL packets
    /// bring the signal from `n` to 0, an SDMA fence lands; bounded by
    /// `secs` (a queue that never runs is a hang).
    pub fn round_trip(&self, n: u64, secs: u64) -> Result<(), String> {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        let (q, db) = self.create(false).map_err(|e| format!("CREATE AQL: {}", crate::kfd::errno_name(e)))?;
        self.set_signal(n as i64);
        for i in 0..n {
            self.aql_submit(i, db);
        }
        while self.signal() != 0 {
            if std::time::Instant::now() > until {
                let _ = self.destroy(q);
                return Err(format!("AQL signal still {} after {secs} s ({n} packets)", self.signal()));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.destroy(q).map_err(|e| format!("DESTROY AQL: {}", crate::kfd::errno_name(e)))?;
        if self.props.sdma_engines == 0 {
            return Ok(());
        }
        let (q, db) = self.create(true).map_err(|e| format!("CREATE SDMA: {}", crate::kfd::errno_name(e)))?;
        let want = 0x5eed_0000 | (n as u32 & 0xffff);
        for i in 0..n {
            self.sdma_submit(i, if i + 1 == n { want } else { i as u32 }, db);
        }
        while self.fence() != want {
            if std::time::Instant::now() > until {
                let _ = self.destroy(q);
                return Err(format!("SDMA fence {:#x} after {secs} s, want {want:#x}", self.fence()));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.destroy(q).map_err(|e| format!("DESTROY SDMA: {}", crate::kfd::errno_name(e)))?;
        Ok(())
    }

    /// Writes `words` as the packet(s) at position `index` of the ring
    /// (AQL: slot `index`, header last; SDMA: 64 bytes at `index * 64`)
    /// and moves the write pointer past them: garbage for fuzzing.
    pub fn raw_submit(&self, sdma: bool, index: u64, words: &[u32; 16], doorbell_offset: u64) {
        let at = (index * 64) % RING;
        let base = if sdma { SDMA_RING } else { 0 };
        // SAFETY: inside our mapping (64 bytes at a 64-byte slot of a ring).
        unsafe {
            let p = self.at::<u32>(base + at);
            for (i, &w) in words.iter().enumerate().skip(1) {
                p.add(i).write_volatile(w);
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            p.write_volatile(words[0]);
            if sdma {
                self.at::<u64>(PTRS + 24).write_volatile((index + 1) * 64);
            } else {
                self.at::<u64>(PTRS + 8).write_volatile(index + 1);
            }
        }
        self.ring_doorbell(doorbell_offset, index + 1);
    }

    /// Drops the CPU mappings only (the objects belonged to a process that
    /// is gone).
    pub fn forget(self) {
        // SAFETY: our mappings.
        unsafe {
            libc::munmap(self.cpu as *mut _, OBJ as usize);
            if self.doorbells != 0 {
                libc::munmap(self.doorbells as *mut _, DOORBELL_SLICE);
            }
        }
    }

    /// Frees the objects (after the queues are gone).
    pub fn release(self) {
        // SAFETY: our mappings.
        unsafe {
            libc::munmap(self.cpu as *mut _, OBJ as usize);
            if self.doorbells != 0 {
                libc::munmap(self.doorbells as *mut _, DOORBELL_SLICE);
            }
        }
        for &h in &self.handles {
            let _ = map(self.kfd, h, self.gpu, false);
            let _ = free(self.kfd, h);
        }
    }
}

pub fn destroy_queue(kfd: i32, qid: u32) -> Result<i32, i32> {
    let mut d = uapi::kfd_ioctl_destroy_queue_args { queue_id: qid, pad: 0 };
    ioctl_fd(kfd, uapi::AMDKFD_IOC_DESTROY_QUEUE, &mut d as *mut _ as usize)
}

/// Whether the GPU driver serves queues (CREATE_QUEUE of a valid queue is
/// not EOPNOTSUPP).
pub fn queues_served(q: &QueueMem) -> bool {
    match q.create(false) {
        Ok((qid, _)) => {
            let _ = q.destroy(qid);
            true
        }
        Err(_) => false,
    }
}

/// SDMA packets as words for [`QueueMem::raw_submit`] (one 64-byte slot).
impl QueueMem {
    /// The GPU address of the SDMA fence target ([`QueueMem::fence`]).
    pub fn fence_va(&self) -> u64 {
        self.va + FENCE
    }

    /// One ring slot: COPY_LINEAR of `len` bytes (1..=2^30) from `src` to
    /// `dst`, then a FENCE writing `value` to [`QueueMem::fence_va`],
    /// padded with a NOP to 16 dwords.
    pub fn sdma_copy_slot(&self, dst: u64, src: u64, len: u32, value: u32) -> [u32; 16] {
        let f = self.fence_va();
        [
            1, // SDMA_OP_COPY, SDMA_SUBOP_COPY_LINEAR
            len - 1,
            0,
            src as u32,
            (src >> 32) as u32,
            dst as u32,
            (dst >> 32) as u32,
            SDMA_FENCE,
            f as u32,
            (f >> 32) as u32,
            value,
            4 << 16, // SDMA_OP_NOP with 4 more dwords
            0,
            0,
            0,
            0,
        ]
    }
}
