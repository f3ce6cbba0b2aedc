// SPDX-License-Identifier: GPL-2.0

//! The shader engine: AQL KERNEL_DISPATCH packets run on the `amdgpu-isa`
//! interpreter ([`crate::isa`]), on the engine thread serving the queue.
//! gfx90a (GFX9, wave64) and gfx1030 (GFX10.3, wave32 or wave64) GPUs
//! ([`interpreter_isa`]); on the other profiles a dispatch ends the queue
//! with `QUEUE_ERROR_UNSUPPORTED`, as before.
//!
//! A dispatch reads its packet (`hsa_kernel_dispatch_packet_t`) and kernel
//! object (a code object v3+ kernel descriptor, or the legacy
//! `amd_kernel_code_t` ROCr's own blit kernels carry), then runs the grid's
//! workgroups, each one's waves taking turns of [`WAVE_TURN`] instructions
//! with `s_barrier` between them.  Every access goes through the queue's
//! VM as the engine's other packets do (`VmMem`).
//!
//! Workers: the queue's worker offers the dispatch ([`Grid`]) to the GPU's
//! other workers ([`Pool`], up to the `shader_workers` parameter), which
//! claim workgroups as it does and run them between rounds of their own
//! queues ([`Pool::help`]); a workgroup stays on the worker that claimed
//! it.  The packet completes once every workgroup ended; the first error
//! stops the others and ends the queue.
//!
//! Time slices: a call runs at most [`SLICE_STEPS`] wave instructions, then
//! returns `Stop::Budget`: the queue stays runnable, the scheduler serves
//! the worker's other queues, and `hqd_destroy` (queue destroy, process
//! exit, rmmod) waits for one slice at most, then stops the dispatch and
//! waits for the helpers' slices in progress ([`Pool::wait_helpers`]),
//! never for a shader that does not end.  The dispatch goes on where it
//! stopped on the next turn.
//!
//! Memory: the waves (128 KiB of registers each), LDS and scratch of one
//! workgroup are allocated per queue on its first dispatch, by the engine
//! with no lock held ([`Shader::take_need`], [`Buffers::new`]): never under
//! the queue's state lock or the VM's page-table lock, which reclaim
//! (mmu-notifier invalidation, queue eviction) may need.
//!
//! Memory faults are retry faults: the interpreter probes every lane of a
//! FLAT/GLOBAL/SMEM instruction first, so a fault leaves the wave as it
//! was; the queue's worker returns `Stop::Fault` (the engine asks rkfd to
//! resolve it, XNACK on, and the workgroup goes on from that instruction),
//! a helper raises it itself with no lock held.  Errors end the queue: a
//! fault rkfd cannot resolve is a VM fault (`KGD_IH_VM_FAULT`, no retry)
//! and `QUEUE_ERROR_VM_FAULT`; an
//! opcode or form the interpreter does not implement, `s_trap`, a launch
//! it cannot do (wave32 on gfx90a) `QUEUE_ERROR_UNSUPPORTED`; a malformed packet or
//! kernel object, or an LDS/scratch access out of bounds,
//! `QUEUE_ERROR_INVALID_PACKET`.  Each is logged once per queue error.
//! Besides the driver's queue error, ROCr learns of each (but VM faults,
//! which it learns of as VM faults) through the code the AQL processor
//! stores in `amd_queue_t.queue_inactive_signal` ([`aql::Shaders::
//! take_inactive_code`]), the CP firmware's: `s_trap` a debug trap
//! (`HSA_STATUS_ERROR_EXCEPTION`), an undecodable or unimplemented
//! instruction an illegal instruction, an LDS/scratch access out of bounds
//! a memory violation, scratch or LDS beyond what the engine gives an
//! invalid allocation (a failure, not ROCr's "insufficient scratch": the
//! queue does not resume once ROCr grows its scratch), a wave32 kernel or a
//! wave that cannot be launched an invalid ISA, and a malformed packet or
//! kernel object the matching invalid dimension / code / packet format.
//!
//! Not modelled: atomics are atomic against other waves (a lane's read and
//! write happen under one hold of the VM's lock, [`RELEASE_TRAFFIC`]), not
//! against the CPU; scratch is the engine's own memory, not the
//! queue's scratch backing; the clock `s_memtime`/`s_memrealtime` read is
//! the GPU's clock counter.

use core::cell::Cell;

use kernel::{
    alloc::flags::__GFP_ZERO,
    new_mutex,
    prelude::*,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Full,
            Relaxed,
            Release, //
        },
        Arc,
        Mutex, //
    },
};

use super::{
    aql,
    VmMem,
    mem::{
        Events,
        Fault,
        GpuMemory,
        Stop,
        QUEUE_ERROR_INVALID_PACKET,
        QUEUE_ERROR_UNSUPPORTED,
        QUEUE_ERROR_VM_FAULT, //
    },
};
use crate::vm::Vm;
use crate::isa::{
    decode::Generation,
    code_object::{
        is_amd_kernel_code,
        KernelDescriptor,
        AMD_KERNEL_CODE_SIZE,
        KERNEL_DESCRIPTOR_SIZE, //
    },
    dispatch::{
        resume_workgroup,
        Dispatch,
        WorkgroupError,
        WorkgroupState,
        MAX_WAVES, //
    },
    exec::ExecError,
    memory::{
        Apertures,
        GlobalMemory,
        MemoryFault,
        PRIVATE_SEGMENT_BUFFER, //
    },
    wave::Wave,
};
use crate::profile::gfx::{
    GfxArch,
    GfxVersion, //
};

/// The ISA the interpreter runs for a GPU of generation `gfx`, if any:
/// GFX9 as gfx90a implements it, and GFX10.3.
pub(crate) fn interpreter_isa(gfx: GfxVersion) -> Option<Generation> {
    match gfx.arch() {
        GfxArch::Gfx9 if gfx == GfxVersion::GFX90A => Some(Generation::Gfx9),
        GfxArch::Gfx10_3 => Some(Generation::Gfx10),
        _ => None,
    }
}

/// Wave instructions a dispatch runs per turn of its queue (one time slice).
const SLICE_STEPS: u64 = 4096;
/// Retry faults a helper's workgroup may take in a row at one page rkfd
/// said it resolved before the fault is fatal (as the engine's
/// `MAX_RESOLVED_RETRIES` for the queue's own worker).
const MAX_RESOLVED_RETRIES: u32 = 1000;
/// Instructions a wave runs before the next wave of its workgroup.
const WAVE_TURN: u32 = 64;
/// LDS per workgroup (gfx90a: 64 KiB).
const MAX_LDS: u32 = 64 * 1024;
/// Private segment per work-item the engine provides at most: HIP asks
/// for a kernel's fixed size plus its default 16 KiB stack when the kernel
/// has a dynamic stack (calls at -O0), so a little over 16 KiB is common.
/// A workgroup of 1024 work-items at the limit takes 32 MiB (vmalloc).
const MAX_SCRATCH_LANE: u32 = 32 * 1024;
/// The apertures flat addresses are checked against: the LDS and scratch
/// apertures rkfd reports for gfx9 processes (`process.rs`: `1 << 48`,
/// `2 << 48`), high halves.
const APERTURES: Apertures = Apertures {
    shared_base_hi: 0x1_0000,
    private_base_hi: 0x2_0000,
};
/// Offset of `write_dispatch_id` in `amd_queue_t` (the queue's write
/// pointer address): the queue pointer kernels get is this much lower.
const AMD_QUEUE_WRITE_DISPATCH_ID: u64 = 56;

/// What one workgroup of a dispatch needs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Need {
    /// Waves.
    waves: usize,
    /// LDS bytes.
    lds: usize,
    /// Scratch bytes (all waves).
    scratch: usize,
}

/// A workgroup's storage: waves, LDS, scratch.
pub(crate) struct Buffers {
    /// The waves' registers.
    waves: KVec<VBox<Wave>>,
    /// The group segment.
    lds: VVec<u8>,
    /// The waves' private segments, lane-major, wave after wave.
    scratch: VVec<u8>,
}

impl Buffers {
    /// Storage for `need`: called with no lock held (it may reclaim).
    pub(crate) fn new(need: Need) -> Result<Self> {
        let mut waves = KVec::with_capacity(need.waves, GFP_KERNEL)?;
        for _ in 0..need.waves {
            let w = VBox::<Wave>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
            // SAFETY: the memory is zeroed (`__GFP_ZERO`), and all-zero
            // bytes are a valid `Wave`: its fields are integers, arrays of
            // integers, `bool`s, `Mode(u32)` and `Generation`, a
            // `#[repr(u8)]` enum whose variant 0 is `Gfx9`.
            let w = unsafe { w.assume_init() };
            waves.push(w, GFP_KERNEL)?;
        }
        Ok(Buffers {
            waves,
            lds: VVec::from_elem(0u8, need.lds, GFP_KERNEL)?,
            scratch: VVec::from_elem(0u8, need.scratch, GFP_KERNEL)?,
        })
    }

    /// Whether they hold `need`.
    fn hold(&self, need: Need) -> bool {
        self.waves.len() >= need.waves && self.lds.len() >= need.lds && self.scratch.len() >= need.scratch
    }
}

/// Bytes of global-memory traffic (a small access counting 64) after
/// which a running workgroup lets go of its VM's lock before its next read
/// ([`GpuMemory::release`]), so that workers running workgroups of one VM
/// take turns at it rather than in whole slices.  Never between a read and
/// the write that follows it: an atomic's read-modify-write of one lane
/// stays under one hold, atomic against the other workers.
const RELEASE_TRAFFIC: usize = 2048;

/// The dispatch in progress.
#[derive(Copy, Clone)]
struct Current {
    /// Its packet.
    pkt: u64,
    /// What the waves are launched with.
    dispatch: Dispatch,
    /// Workgroups per dimension.
    count: [u32; 3],
    /// Linear index of the next workgroup to start (with no [`Grid`]: the
    /// queue's worker runs them all).
    next: u64,
    /// Workgroups in all.
    total: u64,
    /// The workgroup the queue's worker is running: id, waves, barrier state.
    running: Option<([u32; 3], usize, WorkgroupState)>,
    /// LDS bytes per workgroup.
    lds: usize,
    /// Scratch bytes per lane.
    lane_bytes: u32,
}

impl Current {
    /// What one workgroup needs.
    fn need(&self) -> Need {
        let waves = self.dispatch.waves_per_workgroup();
        Need {
            waves,
            lds: self.lds,
            scratch: waves * self.dispatch.wave_lanes() * self.lane_bytes as usize,
        }
    }

    /// The id of workgroup `i` (linear, x fastest).
    fn workgroup_id(&self, i: u64) -> [u32; 3] {
        // Counts are at least 1 (zero grid sizes are refused): max(1)
        // leaves no division by zero to panic on.
        let [cx, cy, _] = self.count.map(|c| u64::from(c).max(1));
        [(i % cx) as u32, (i / cx % cy) as u32, (i / (cx * cy)) as u32]
    }
}

/// The first error of a dispatch's workgroups.
#[derive(Copy, Clone, Debug)]
struct GridError {
    /// The queue error.
    code: u32,
    /// The `queue_inactive_signal` code (0: none, or a VM fault).
    inactive: u64,
    /// A VM fault's address.
    fault: Option<Fault>,
}

/// A dispatch whose workgroups several of the GPU's workers run: the
/// queue's worker and up to `workers - 1` helpers ([`Pool::help`]) claim
/// workgroups in turn; a workgroup's waves stay on the worker that claimed
/// it.  The dispatch ends when every workgroup ended ([`Grid::finished`]),
/// or at the first error, which stops the others.
#[pin_data]
pub(crate) struct Grid {
    /// The queue's VM.
    vm: Arc<Vm>,
    /// The dispatch.
    launch: Current,
    /// The queue's worker.
    owner: usize,
    /// Workers that may run it, the owner included.
    workers: usize,
    /// Workers of the GPU.
    pool_size: usize,
    /// The next workgroup to claim.
    next: Atomic<u64>,
    /// Workgroups ended.
    done: Atomic<u64>,
    /// Cancelled (queue destroyed or unloaded, GPU reset) or failed:
    /// nothing more is claimed, helpers drop their workgroup.
    stop: Atomic<bool>,
    /// The first error.  A leaf.
    #[pin]
    error: Mutex<Option<GridError>>,
}

impl Grid {
    /// The next workgroup to run, if any is left.
    fn claim(&self) -> Option<u64> {
        if self.stop.load(Acquire) {
            return None;
        }
        let i = self.next.fetch_add(1, Relaxed);
        (i < self.launch.total).then_some(i)
    }

    /// A claimed workgroup ended (its writes are done: the worker's VM
    /// accesses are over, its hold of the VM's lock released).
    fn finish(&self) {
        self.done.fetch_add(1, Full);
    }

    /// Every workgroup ended.
    fn finished(&self) -> bool {
        self.done.load(Acquire) >= self.launch.total
    }

    /// Ends the dispatch with `e` (the first error wins).
    fn fail(&self, e: GridError) {
        {
            let mut g = self.error.lock();
            if g.is_none() {
                *g = Some(e);
            }
        }
        self.stop.store(true, Release);
    }

    /// The error that ended it.
    fn error(&self) -> Option<GridError> {
        *self.error.lock()
    }

    /// Whether worker `index` should help: not the owner, among the first
    /// `workers - 1` after it, and workgroups are left.
    fn wants(&self, index: usize) -> bool {
        if index == self.owner
            || index >= self.pool_size
            || self.stop.load(Relaxed)
            || self.next.load(Relaxed) >= self.launch.total
        {
            return false;
        }
        let rank = (index + self.pool_size - self.owner - 1) % self.pool_size;
        rank + 1 < self.workers
    }
}

/// What a worker runs of other workers' dispatches.
pub(crate) struct Helper {
    /// Its workgroup storage.
    buffers: Option<Buffers>,
    /// The workgroup it runs.
    work: Option<Work>,
}

/// A helper's workgroup.
struct Work {
    /// Its dispatch.
    grid: Arc<Grid>,
    /// Its id.
    id: [u32; 3],
    /// Its waves.
    waves: usize,
    /// Its barrier state.
    state: WorkgroupState,
    /// The page of its last retry fault, and how many in a row were there.
    retry: (u64, u32),
}

/// A GPU's dispatches that want helpers, and each worker's helper.
#[pin_data]
pub(crate) struct Pool {
    /// Dispatches with workgroups to claim.  Taken under `Hqd::state` and
    /// under a helper's slot; a leaf.
    #[pin]
    grids: Mutex<KVec<Arc<Grid>>>,
    /// Each worker's helper, held while it runs a slice (what cancelling a
    /// dispatch waits for, [`Pool::wait_helpers`]).  Taken with no lock of
    /// ours held; `Vm::inner` and `grids` come under it.
    slots: KVec<Pin<KBox<Mutex<Helper>>>>,
    /// A dispatch was published since the workers were last kicked.
    published: Atomic<bool>,
    /// The workers, to kick (cleared at shutdown).  Taken with no lock
    /// held; each `Engine::inner` in turn under it.
    #[pin]
    engines: Mutex<KVec<Arc<super::Engine>>>,
}

/// Dispatches published at once (one per queue at most), before a publish
/// has to allocate (and, under `Hqd::state`, may not: the dispatch then runs
/// on its queue's worker alone).
const POOL_GRIDS: usize = 64;

impl Pool {
    /// A pool for `workers` workers.
    pub(crate) fn new(workers: usize) -> Result<Arc<Self>> {
        let mut slots = KVec::with_capacity(workers, GFP_KERNEL)?;
        for _ in 0..workers {
            slots.push(
                KBox::pin_init(
                    new_mutex!(
                        Helper {
                            buffers: None,
                            work: None,
                        },
                        "Pool::slots"
                    ),
                    GFP_KERNEL,
                )?,
                GFP_KERNEL,
            )?;
        }
        let grids = KVec::with_capacity(POOL_GRIDS, GFP_KERNEL)?;
        Arc::pin_init(
            try_pin_init!(Pool {
                grids <- new_mutex!(grids, "Pool::grids"),
                slots,
                published: Atomic::new(false),
                engines <- new_mutex!(KVec::new(), "Pool::engines"),
            }),
            GFP_KERNEL,
        )
    }

    /// Workers of the GPU.
    fn size(&self) -> usize {
        self.slots.len()
    }

    /// Registers the workers to kick.
    pub(crate) fn set_engines(&self, engines: KVec<Arc<super::Engine>>) {
        let old = core::mem::replace(&mut *self.engines.lock(), engines);
        drop(old);
    }

    /// Offers `g`'s workgroups to the helpers; whether it could (no memory
    /// is allocated here).
    fn publish(&self, g: &Arc<Grid>) -> bool {
        let mut l = self.grids.lock();
        if l.len() == l.capacity() {
            return false;
        }
        if l.push(g.clone(), GFP_NOWAIT).is_err() {
            return false;
        }
        self.published.store(true, Release);
        true
    }

    /// Withdraws `g`.
    fn unpublish(&self, g: &Grid) {
        let mut l = self.grids.lock();
        if let Some(i) = l.iter().position(|x| core::ptr::eq(&**x, g)) {
            let _ = l.remove(i);
        }
    }

    /// Waits until no helper is in a slice: after a dispatch was stopped,
    /// no helper touches its memory once this returns.  With no lock of
    /// ours held but rkfd's (helpers take none of rkfd's).
    pub(crate) fn wait_helpers(&self) {
        for s in self.slots.iter() {
            drop(s.lock());
        }
    }

    /// Kicks the other workers if a dispatch was published since the last
    /// call (worker `me` published it): a sleeping worker starts helping.
    /// With no lock of ours held.
    pub(crate) fn kick_others(&self, me: usize) {
        if !self.published.xchg(false, Relaxed) {
            return;
        }
        for e in self.engines.lock().iter() {
            if e.index != me {
                let mut g = e.inner.lock();
                e.kick(&mut g);
            }
        }
    }

    /// Forgets every helper's workgroup and storage (the workers stopped).
    pub(crate) fn clear(&self) {
        for s in self.slots.iter() {
            let (w, b) = {
                let mut h = s.lock();
                (h.work.take(), h.buffers.take())
            };
            drop(w);
            drop(b);
        }
        let grids = core::mem::take(&mut *self.grids.lock());
        drop(grids);
        self.set_engines(KVec::new());
    }

    /// Worker `index` runs one time slice of a dispatch of another worker
    /// that wants help; whether it did anything.  With no lock held.
    pub(crate) fn help(&self, index: usize) -> bool {
        let Some(slot) = self.slots.get(index) else {
            return false;
        };
        let mut h = slot.lock();
        if h.work.as_ref().is_some_and(|w| w.grid.stop.load(Acquire)) {
            // Stopped: dropped with no lock held (the last reference to a
            // dispatch may hold the last one to its VM).
            let stale = h.work.take();
            drop(h);
            drop(stale);
            return true;
        }
        if h.work.is_none() {
            let grid = {
                let l = self.grids.lock();
                l.iter().find(|g| g.wants(index)).cloned()
            };
            let Some(grid) = grid else {
                return false;
            };
            let need = grid.launch.need();
            if !h.buffers.as_ref().is_some_and(|b| b.hold(need)) {
                // Allocated with no lock held (reclaim may preempt queues).
                drop(h);
                let b = Buffers::new(need);
                h = slot.lock();
                match b {
                    Ok(b) => h.buffers = Some(b),
                    // The other workers run the workgroups.
                    Err(_) => {
                        drop(h);
                        drop(grid);
                        return false;
                    }
                }
            }
            let Some(b) = h.buffers.as_mut() else {
                return false;
            };
            let Some(i) = grid.claim() else {
                drop(h);
                drop(grid);
                return false;
            };
            let id = grid.launch.workgroup_id(i);
            match launch(&grid.launch, b, id) {
                Ok(waves) => {
                    h.work = Some(Work {
                        grid,
                        id,
                        waves,
                        state: WorkgroupState::default(),
                        retry: (0, 0),
                    })
                }
                Err(e) => {
                    grid.fail(e);
                    drop(h);
                    drop(grid);
                    return true;
                }
            }
        }
        let hr = &mut *h;
        let (Some(w), Some(b)) = (hr.work.as_mut(), hr.buffers.as_mut()) else {
            return false;
        };
        let r = {
            let vm = &w.grid.vm;
            let mut m = VmMem::new(vm);
            let mut clock = || vm.core().clock_counter();
            run_slice(&mut m, &mut clock, b, &w.grid.launch, w.waves, &mut w.state, SLICE_STEPS)
        };
        let ended = match r {
            Ok((true, _)) => {
                w.grid.finish();
                true
            }
            Ok((false, _)) => false,
            Err(WorkgroupError::Exec {
                error: ExecError::Memory { fault, .. },
                ..
            }) => {
                // A retry fault (see `Shader::run_own`), raised with no
                // lock of ours held; the workgroup goes on from the
                // faulting instruction on the next slice.  Resolved but
                // back at the same page too often: a VM fault.
                let page = fault.address & !0xfff;
                w.retry = match w.retry {
                    (p, k) if p == page => (p, k.saturating_add(1)),
                    _ => (page, 1),
                };
                let f = Fault {
                    va: fault.address,
                    write: fault.write,
                };
                if w.retry.1 <= MAX_RESOLVED_RETRIES {
                    let vm = w.grid.vm.clone();
                    drop(h);
                    let r = vm.svm_fault(f.va, f.write, false);
                    drop(vm);
                    if matches!(r, Err(e) if e != EAGAIN) {
                        let mut h = slot.lock();
                        let stale = h.work.take();
                        drop(h);
                        if let Some(w) = &stale {
                            w.grid.fail(vm_fault(w.grid.launch.pkt, w.id, f));
                        }
                        drop(stale);
                    }
                    return true;
                }
                w.grid.fail(vm_fault(w.grid.launch.pkt, w.id, f));
                true
            }
            Err(e) => {
                w.grid.fail(workgroup_error(w.grid.launch.pkt, w.id, e));
                true
            }
        };
        let stale = if ended { hr.work.take() } else { None };
        drop(h);
        drop(stale);
        true
    }
}

/// One queue's shader engine.
pub(crate) struct Shader {
    /// The ISA the GPU runs, if the interpreter knows it (else dispatches
    /// end with `QUEUE_ERROR_UNSUPPORTED`).
    isa: Option<Generation>,
    /// GPU VA of the queue's `amd_queue_t`.
    queue: u64,
    /// The queue's VM.
    vm: Arc<Vm>,
    /// The GPU's workers' pool.
    pool: Arc<Pool>,
    /// The queue's worker.
    worker: usize,
    /// Workgroup storage, once a dispatch needed it.
    buffers: Option<Buffers>,
    /// Storage a dispatch waits for ([`Shader::take_need`]).
    need: Option<Need>,
    /// The dispatch in progress.
    current: Option<Current>,
    /// The last dispatch's workgroups, if other workers may run them
    /// (kept until the next dispatch, or [`Shader::cancel`]).
    grid: Option<Arc<Grid>>,
    /// The fault that ended the last dispatch, for the VM fault report.
    fault: Option<Fault>,
    /// The `queue_inactive_signal` code of the error that ended the last
    /// dispatch (0: none, or a VM fault).
    inactive: Cell<u64>,
}

/// The queue's VM as the interpreter sees it.
struct Global<'a, M> {
    /// The VM.
    m: &'a mut M,
    /// The GPU's clock.
    clock: &'a mut dyn FnMut() -> u64,
    /// Bytes accessed since the VM's lock was last let go.
    traffic: usize,
}

impl<M: GpuMemory> GlobalMemory for Global<'_, M> {
    fn read(&mut self, address: u64, bytes: &mut [u8]) -> core::result::Result<(), MemoryFault> {
        if self.traffic >= RELEASE_TRAFFIC {
            self.m.release();
            self.traffic = 0;
        }
        self.traffic += bytes.len().max(64);
        self.m.read(address, bytes).map_err(|f| MemoryFault {
            address: f.va,
            write: false,
        })
    }

    fn probe(&mut self, address: u64, len: usize, write: bool) -> core::result::Result<(), MemoryFault> {
        if self.traffic >= RELEASE_TRAFFIC {
            self.m.release();
            self.traffic = 0;
        }
        self.traffic += len.max(64);
        self.m.probe(address, len, write).map_err(|f| MemoryFault {
            address: f.va,
            write,
        })
    }

    fn write(&mut self, address: u64, bytes: &[u8]) -> core::result::Result<(), MemoryFault> {
        self.traffic += bytes.len().max(64);
        self.m.write(address, bytes).map_err(|f| MemoryFault {
            address: f.va,
            write: true,
        })
    }

    fn shader_clock(&mut self) -> u64 {
        (self.clock)()
    }

    fn real_time(&mut self) -> u64 {
        (self.clock)()
    }
}

fn u16_at(b: &[u8], o: usize) -> u32 {
    u32::from(u16::from_le_bytes([b[o], b[o + 1]]))
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from(u32_at(b, o)) | u64::from(u32_at(b, o + 4)) << 32
}

/// Ends a dispatch with queue error `code`, saying why.
fn fail(pkt: u64, code: u32, why: core::fmt::Arguments<'_>) -> Stop {
    pr_warn!("vgpu shader: dispatch packet {:#x}: {} (queue error {})\n", pkt, why, code);
    Stop::Error(code)
}

/// The `queue_inactive_signal` code of an instruction's error (0 for a VM
/// fault, which is reported as such).
fn exec_inactive_code(e: &ExecError) -> u64 {
    match e {
        ExecError::Memory { .. } => 0,
        ExecError::Trap { .. } => aql::INACTIVE_DEBUG_TRAP,
        ExecError::OutOfBounds { .. } => aql::INACTIVE_MEMORY_VIOLATION,
        ExecError::Decode { .. } | ExecError::UnsupportedOpcode { .. } | ExecError::UnsupportedForm { .. } => {
            aql::INACTIVE_ILLEGAL_INSTRUCTION
        }
    }
}

/// The error workgroup `id` of the dispatch at `pkt` ended with (logged).
fn workgroup_error(pkt: u64, id: [u32; 3], e: WorkgroupError) -> GridError {
    match e {
        WorkgroupError::Exec { wave, error } => {
            let inactive = exec_inactive_code(&error);
            let (code, fault) = match error {
                ExecError::Memory { fault, .. } => (
                    QUEUE_ERROR_VM_FAULT,
                    Some(Fault {
                        va: fault.address,
                        write: fault.write,
                    }),
                ),
                ExecError::OutOfBounds { .. } | ExecError::Decode { .. } => (QUEUE_ERROR_INVALID_PACKET, None),
                _ => (QUEUE_ERROR_UNSUPPORTED, None),
            };
            fail(pkt, code, format_args!("workgroup {:?} wave {}: {}", id, wave, error));
            GridError { code, inactive, fault }
        }
        e => {
            fail(pkt, QUEUE_ERROR_INVALID_PACKET, format_args!("workgroup {:?}: {:?}", id, e));
            GridError {
                code: QUEUE_ERROR_INVALID_PACKET,
                inactive: aql::INACTIVE_INVALID_PACKET,
                fault: None,
            }
        }
    }
}

/// The VM fault a helper's workgroup `id` of the dispatch at `pkt` ended
/// with: a retry fault rkfd could not resolve (logged).
fn vm_fault(pkt: u64, id: [u32; 3], f: Fault) -> GridError {
    fail(
        pkt,
        QUEUE_ERROR_VM_FAULT,
        format_args!("workgroup {:?}: memory fault at {:#x} (write: {})", id, f.va, f.write),
    );
    GridError {
        code: QUEUE_ERROR_VM_FAULT,
        inactive: 0,
        fault: Some(f),
    }
}

/// Sets up workgroup `id` of `cur` in `b`: its number of waves.
fn launch(cur: &Current, b: &mut Buffers, id: [u32; 3]) -> core::result::Result<usize, GridError> {
    let n = cur.dispatch.waves_in_workgroup(id);
    if n > MAX_WAVES || n > b.waves.len() || cur.lds > b.lds.len() {
        fail(cur.pkt, QUEUE_ERROR_INVALID_PACKET, format_args!("{} waves in a workgroup", n));
        return Err(GridError {
            code: QUEUE_ERROR_INVALID_PACKET,
            inactive: aql::INACTIVE_GROUP_TOO_LARGE,
            fault: None,
        });
    }
    for (w, wave) in b.waves.iter_mut().take(n).enumerate() {
        if let Err(e) = cur.dispatch.init_wave(wave, id, w) {
            fail(cur.pkt, QUEUE_ERROR_UNSUPPORTED, format_args!("cannot launch: {:?}", e));
            return Err(GridError {
                code: QUEUE_ERROR_UNSUPPORTED,
                inactive: aql::INACTIVE_INVALID_ISA,
                fault: None,
            });
        }
    }
    b.lds[..cur.lds].fill(0);
    Ok(n)
}

/// Runs `waves` waves of a workgroup of `cur` in `b` for at most `budget`
/// instructions: whether they all ended, and the instructions run.
fn run_slice<M: GpuMemory>(
    m: &mut M,
    clock: &mut dyn FnMut() -> u64,
    b: &mut Buffers,
    cur: &Current,
    waves: usize,
    state: &mut WorkgroupState,
    budget: u64,
) -> core::result::Result<(bool, u64), WorkgroupError> {
    let scratch = waves * cur.dispatch.wave_lanes() * cur.lane_bytes as usize;
    if scratch > b.scratch.len() || waves > b.waves.len() {
        return Err(WorkgroupError::TooManyWaves);
    }
    let mut g = Global { m, clock, traffic: 0 };
    resume_workgroup(
        &mut b.waves[..waves],
        state,
        &mut g,
        &mut b.lds[..cur.lds],
        &mut b.scratch[..scratch],
        cur.lane_bytes,
        APERTURES,
        WAVE_TURN,
        budget,
    )
}

impl Shader {
    /// The shader engine of a queue on `vm` served by worker `worker` of
    /// `pool`, whose write pointer is at `wptr_va`, on a GPU running `isa`
    /// ([`interpreter_isa`]; None: it runs nothing, the interpreter does
    /// not know the GPU's ISA).
    pub(crate) fn new(wptr_va: u64, isa: Option<Generation>, vm: Arc<Vm>, pool: Arc<Pool>, worker: usize) -> Self {
        Shader {
            isa,
            queue: wptr_va.wrapping_sub(AMD_QUEUE_WRITE_DISPATCH_ID),
            vm,
            pool,
            worker,
            buffers: None,
            need: None,
            current: None,
            grid: None,
            fault: None,
            inactive: Cell::new(0),
        }
    }

    /// The storage a dispatch waits for: the engine allocates it
    /// ([`Buffers::new`]) with no lock held and [`Shader::install`]s it.
    pub(crate) fn take_need(&mut self) -> Option<Need> {
        self.need.take()
    }

    /// Installs storage allocated for [`Shader::take_need`].
    pub(crate) fn install(&mut self, b: Buffers) {
        self.buffers = Some(b);
    }

    /// Stops the last dispatch's helpers (the queue is destroyed or reset):
    /// the caller waits for them with [`Pool::wait_helpers`] after letting
    /// go of `Hqd::state` if this returns a dispatch.
    pub(crate) fn cancel(&mut self) -> Option<Arc<Grid>> {
        let g = self.grid.take()?;
        g.stop.store(true, Release);
        self.pool.unpublish(&g);
        Some(g)
    }

    /// Stops the last dispatch's helpers (the queue stopped with an
    /// error), keeping it for [`Shader::cancel`] to wait for them.
    pub(crate) fn stop_helpers(&self) {
        if let Some(g) = &self.grid {
            g.stop.store(true, Release);
            self.pool.unpublish(g);
        }
    }

    /// The fault that ended the last dispatch with `QUEUE_ERROR_VM_FAULT`.
    pub(crate) fn take_fault(&mut self) -> Option<Fault> {
        self.fault.take()
    }

    /// Ends the dispatch with `e`: stops its helpers.
    fn grid_error(&mut self, e: GridError) -> Stop {
        self.inactive.set(e.inactive);
        if e.fault.is_some() {
            self.fault = e.fault;
        }
        if let Some(g) = &self.grid {
            g.fail(e);
            self.pool.unpublish(g);
        }
        Stop::Error(e.code)
    }

    /// Reads the packet and kernel object at `pkt`: the dispatch to run.
    fn start<M: GpuMemory>(&self, m: &mut M, pkt: u64, dispatch_id: u64) -> core::result::Result<Current, Stop> {
        let invalid = |code: u64, why: &str| {
            self.inactive.set(code);
            fail(pkt, QUEUE_ERROR_INVALID_PACKET, format_args!("{}", why))
        };
        let mut p = [0u8; 64];
        m.read(pkt, &mut p).map_err(Stop::Fault)?;
        let dims = u16_at(&p, 2) & 3;
        let wg = [u16_at(&p, 4), u16_at(&p, 6), u16_at(&p, 8)];
        let grid = [u32_at(&p, 12), u32_at(&p, 16), u32_at(&p, 20)];
        let private = u32_at(&p, 24);
        let group = u32_at(&p, 28);
        let kobj = u64_at(&p, 32);
        let kernarg = u64_at(&p, 40);
        if dims == 0 || wg.contains(&0) || grid.contains(&0) {
            return Err(invalid(aql::INACTIVE_INVALID_DIM, "no dimensions, or a zero workgroup or grid size"));
        }
        // In u64: three sizes of up to 65535 overflow u32 (an overflow is
        // a BUG() in the kernel; found by kfd-shader-fuzz).
        let items = wg.iter().map(|&d| u64::from(d)).product::<u64>();
        if items > 1024 {
            return Err(invalid(aql::INACTIVE_GROUP_TOO_LARGE, "more than 1024 work-items per workgroup"));
        }
        if kobj == 0 || kobj % 64 != 0 {
            return Err(invalid(aql::INACTIVE_INVALID_CODE, "kernel object null or not 64-byte aligned"));
        }
        let mut k = [0u8; AMD_KERNEL_CODE_SIZE];
        m.read(kobj, &mut k[..KERNEL_DESCRIPTOR_SIZE]).map_err(Stop::Fault)?;
        if is_amd_kernel_code(&k) {
            m.read(kobj.wrapping_add(KERNEL_DESCRIPTOR_SIZE as u64), &mut k[KERNEL_DESCRIPTOR_SIZE..])
                .map_err(Stop::Fault)?;
        }
        let kd = KernelDescriptor::parse_kernel_object(&k)
            .ok_or_else(|| invalid(aql::INACTIVE_INVALID_CODE, "kernel object is neither a kernel descriptor nor an amd_kernel_code_t the engine runs"))?;
        let generation = self.isa.unwrap_or_default();
        if kd.wavefront_size32() && generation == Generation::Gfx9 {
            self.inactive.set(aql::INACTIVE_INVALID_ISA);
            return Err(fail(pkt, QUEUE_ERROR_UNSUPPORTED, format_args!("a wave32 kernel (gfx90a runs wave64)")));
        }
        // Checked before it is rounded up: a size near u32::MAX would
        // overflow the rounding (found by kfd-shader-fuzz).  The limit is
        // a multiple of 4, so the check is the same as after rounding.
        let lane_bytes = private.max(kd.private_segment_fixed_size);
        if lane_bytes > MAX_SCRATCH_LANE {
            self.inactive.set(aql::INACTIVE_INVALID_ALLOCATION);
            return Err(fail(
                pkt,
                QUEUE_ERROR_UNSUPPORTED,
                format_args!("{} bytes of scratch per work-item (at most {})", lane_bytes, MAX_SCRATCH_LANE),
            ));
        }
        let lane_bytes = lane_bytes.next_multiple_of(4);
        let lds = group.max(kd.group_segment_fixed_size);
        if lds > MAX_LDS {
            return Err(invalid(aql::INACTIVE_INVALID_ALLOCATION, "more than 64 KiB of LDS"));
        }
        let dispatch = Dispatch {
            kernel_descriptor: kd,
            kernel_object: kobj,
            dispatch_packet: pkt,
            queue: self.queue,
            kernarg,
            dispatch_id,
            workgroup_size: wg,
            grid_size: grid,
            private_segment_buffer: PRIVATE_SEGMENT_BUFFER,
            flat_scratch_init: 0,
            private_segment_size: lane_bytes,
            generation,
        };
        let count = dispatch.workgroup_count();
        let total = count.iter().fold(1u64, |t, &c| t.saturating_mul(u64::from(c)));
        Ok(Current {
            pkt,
            dispatch,
            count,
            next: 0,
            total,
            running: None,
            lds: lds as usize,
            lane_bytes,
        })
    }

    /// Offers a new dispatch's workgroups to the other workers (as many as
    /// the `shader_workers` parameter allows), if it has more than one.
    /// Under `Hqd::state`: nothing here reclaims; without memory the
    /// queue's worker runs it alone.
    fn begin(&mut self, cur: &Current) {
        if let Some(old) = self.grid.take() {
            old.stop.store(true, Release);
            self.pool.unpublish(&old);
        }
        let size = self.pool.size();
        let workers = match crate::kabi::shader_workers() as usize {
            0 => size,
            n => n.min(size),
        };
        if workers < 2 || cur.total < 2 {
            return;
        }
        let (vm, launch, owner) = (self.vm.clone(), *cur, self.worker);
        let g = Arc::pin_init(
            try_pin_init!(Grid {
                vm,
                launch,
                owner,
                workers,
                pool_size: size,
                next: Atomic::new(0),
                done: Atomic::new(0),
                stop: Atomic::new(false),
                error <- new_mutex!(None, "Grid::error"),
            }),
            GFP_NOWAIT,
        );
        if let Ok(g) = g {
            if self.pool.publish(&g) {
                self.grid = Some(g);
            }
        }
    }

    /// Runs the current dispatch for one time slice: the queue's worker
    /// runs workgroups it claims; `Ok` once every workgroup (its own and
    /// the helpers') ended.
    fn slice<M: GpuMemory, E: Events>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        cur: &mut Current,
    ) -> core::result::Result<(), Stop> {
        if let Some(e) = self.grid.as_ref().and_then(|g| g.error()) {
            return Err(self.grid_error(e));
        }
        let need = cur.need();
        if !self.buffers.as_ref().is_some_and(|b| b.hold(need)) {
            // Allocated by the engine before the next turn.
            let have = self.buffers.as_ref().map(|b| Need {
                waves: b.waves.len(),
                lds: b.lds.len(),
                scratch: b.scratch.len(),
            });
            let have = have.unwrap_or_default();
            self.need = Some(Need {
                waves: need.waves.max(have.waves),
                lds: need.lds.max(have.lds),
                scratch: need.scratch.max(have.scratch),
            });
            return Err(Stop::Budget);
        }
        let Some(mut b) = self.buffers.take() else {
            return Err(Stop::Budget);
        };
        let r = self.run_own(m, ev, cur, &mut b);
        self.buffers = Some(b);
        r
    }

    /// [`Shader::slice`] with the workgroup storage `b`.
    fn run_own<M: GpuMemory, E: Events>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        cur: &mut Current,
        b: &mut Buffers,
    ) -> core::result::Result<(), Stop> {
        let mut left = SLICE_STEPS;
        let mut clock = || ev.clock();
        loop {
            let (id, n, mut state) = match cur.running {
                Some(r) => r,
                None => {
                    let i = match &self.grid {
                        Some(g) => g.claim(),
                        None if cur.next < cur.total => {
                            cur.next += 1;
                            Some(cur.next - 1)
                        }
                        None => None,
                    };
                    let Some(i) = i else {
                        break;
                    };
                    let id = cur.workgroup_id(i);
                    match launch(cur, b, id) {
                        Ok(n) => (id, n, WorkgroupState::default()),
                        Err(e) => return Err(self.grid_error(e)),
                    }
                }
            };
            match run_slice(m, &mut clock, b, cur, n, &mut state, left) {
                Ok((true, steps)) => {
                    left = left.saturating_sub(steps);
                    cur.running = None;
                    if let Some(g) = &self.grid {
                        g.finish();
                    }
                }
                Ok((false, _)) => {
                    cur.running = Some((id, n, state));
                    return Err(Stop::Budget);
                }
                Err(WorkgroupError::Exec {
                    error: ExecError::Memory { fault, .. },
                    ..
                }) => {
                    // Taken before the instruction changed anything (the
                    // interpreter probes every lane first): the engine
                    // raises a retry fault (XNACK, SVM) and the workgroup
                    // goes on from that instruction once it is resolved;
                    // if it cannot be, a VM fault ends the queue.
                    cur.running = Some((id, n, state));
                    return Err(Stop::Fault(Fault {
                        va: fault.address,
                        write: fault.write,
                    }));
                }
                Err(e) => {
                    cur.running = None;
                    let e = workgroup_error(cur.pkt, id, e);
                    return Err(self.grid_error(e));
                }
            }
            if left == 0 {
                return Err(Stop::Budget);
            }
        }
        // Nothing left to claim: done once the helpers' workgroups ended;
        // until then the queue is blocked (polled, not spun on: its worker
        // helps other dispatches or sleeps a little meanwhile).
        match &self.grid {
            Some(g) if !g.finished() => match g.error() {
                Some(e) => Err(self.grid_error(e)),
                None => Err(Stop::Blocked),
            },
            _ => Ok(()),
        }
    }
}

impl aql::Shaders for Shader {
    fn dispatch<M: GpuMemory, E: Events>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        pkt: u64,
        dispatch_id: u64,
    ) -> core::result::Result<(), Stop> {
        self.inactive.set(0);
        if self.isa.is_none() {
            self.inactive.set(aql::INACTIVE_INVALID_ISA);
            return Err(Stop::Error(QUEUE_ERROR_UNSUPPORTED));
        }
        let mut cur = match self.current.take() {
            Some(c) if c.pkt == pkt && c.dispatch.dispatch_id == dispatch_id => c,
            _ => {
                let c = self.start(m, pkt, dispatch_id)?;
                self.begin(&c);
                c
            }
        };
        let r = self.slice(m, ev, &mut cur);
        match r {
            Err(Stop::Budget | Stop::Blocked | Stop::Fault(_)) => self.current = Some(cur),
            Ok(()) => {
                // Every workgroup ended: no helper touches it any more.
                if let Some(g) = self.grid.take() {
                    self.pool.unpublish(&g);
                }
            }
            // Errors stopped the helpers; the dispatch is kept until the
            // queue goes ([`Shader::cancel`] waits for them).
            Err(_) => {}
        }
        r
    }

    fn take_inactive_code(&mut self) -> Option<u64> {
        match self.inactive.replace(0) {
            0 => None,
            c => Some(c),
        }
    }
}
