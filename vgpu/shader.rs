// SPDX-License-Identifier: GPL-2.0

//! The shader engine: AQL KERNEL_DISPATCH packets run on the `amdgpu-isa`
//! interpreter ([`crate::isa`]), on the engine thread serving the queue.
//! gfx90a (GFX9, wave64) and gfx1030 (GFX10.3, wave32 or wave64) GPUs
//! ([`interpreter_isa`]); on the other profiles a dispatch ends the queue
//! with `QUEUE_ERROR_UNSUPPORTED`, as before.
//!
//! A dispatch reads its packet (`hsa_kernel_dispatch_packet_t`) and kernel
//! object (a code object v3+ kernel descriptor, or the legacy
//! `amd_kernel_code_t` ROCr's own blit kernels carry), then runs the grid
//! one workgroup at a time, its waves taking turns of [`WAVE_TURN`]
//! instructions with `s_barrier` between them.  Every access goes through
//! the queue's VM as the engine's other packets do (`VmMem`).
//!
//! Time slices: a call runs at most [`SLICE_STEPS`] wave instructions, then
//! returns `Stop::Budget`: the queue stays runnable, the scheduler serves
//! the worker's other queues, and `hqd_destroy` (queue destroy, process
//! exit, rmmod) waits for one slice at most, never for a shader that does
//! not end.  The dispatch goes on where it stopped on the next turn.
//!
//! Memory: the waves (128 KiB of registers each), LDS and scratch of one
//! workgroup are allocated per queue on its first dispatch, by the engine
//! with no lock held ([`Shader::take_need`], [`Buffers::new`]): never under
//! the queue's state lock or the VM's page-table lock, which reclaim
//! (mmu-notifier invalidation, queue eviction) may need.
//!
//! Errors end the queue: a memory fault in a shader is a VM fault
//! (`KGD_IH_VM_FAULT`, no retry: an instruction is not restartable half
//! done, some lanes' results written) and `QUEUE_ERROR_VM_FAULT`; an
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
//! Not modelled: atomics are atomic against other waves (one thread runs
//! them), not against the CPU; scratch is the engine's own memory, not the
//! queue's scratch backing; the clock `s_memtime`/`s_memrealtime` read is
//! the GPU's clock counter.

use core::cell::Cell;

use kernel::{alloc::flags::__GFP_ZERO, prelude::*};

use super::{
    aql,
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

/// The dispatch in progress.
#[derive(Copy, Clone)]
struct Current {
    /// Its packet.
    pkt: u64,
    /// What the waves are launched with.
    dispatch: Dispatch,
    /// Workgroups per dimension.
    count: [u32; 3],
    /// Linear index of the next workgroup to start.
    next: u64,
    /// Workgroups in all.
    total: u64,
    /// The workgroup running: id, waves, barrier state.
    running: Option<([u32; 3], usize, WorkgroupState)>,
    /// LDS bytes per workgroup.
    lds: usize,
    /// Scratch bytes per lane.
    lane_bytes: u32,
}

/// One queue's shader engine.
pub(crate) struct Shader {
    /// The ISA the GPU runs, if the interpreter knows it (else dispatches
    /// end with `QUEUE_ERROR_UNSUPPORTED`).
    isa: Option<Generation>,
    /// GPU VA of the queue's `amd_queue_t`.
    queue: u64,
    /// Workgroup storage, once a dispatch needed it.
    buffers: Option<Buffers>,
    /// Storage a dispatch waits for ([`Shader::take_need`]).
    need: Option<Need>,
    /// The dispatch in progress.
    current: Option<Current>,
    /// The fault that ended the last dispatch, for the VM fault report.
    fault: Option<Fault>,
    /// The `queue_inactive_signal` code of the error that ended the last
    /// dispatch (0: none, or a VM fault).
    inactive: Cell<u64>,
}

/// The queue's VM as the interpreter sees it.
struct Global<'a, M, E> {
    /// The VM.
    m: &'a mut M,
    /// The clock.
    ev: &'a mut E,
}

impl<M: GpuMemory, E: Events> GlobalMemory for Global<'_, M, E> {
    fn read(&mut self, address: u64, bytes: &mut [u8]) -> core::result::Result<(), MemoryFault> {
        self.m.read(address, bytes).map_err(|f| MemoryFault {
            address: f.va,
            write: false,
        })
    }

    fn write(&mut self, address: u64, bytes: &[u8]) -> core::result::Result<(), MemoryFault> {
        self.m.write(address, bytes).map_err(|f| MemoryFault {
            address: f.va,
            write: true,
        })
    }

    fn shader_clock(&mut self) -> u64 {
        self.ev.clock()
    }

    fn real_time(&mut self) -> u64 {
        self.ev.clock()
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

impl Shader {
    /// The shader engine of a queue whose write pointer is at `wptr_va`,
    /// on a GPU running `isa` ([`interpreter_isa`]; None: it runs nothing,
    /// the interpreter does not know the GPU's ISA).
    pub(crate) fn new(wptr_va: u64, isa: Option<Generation>) -> Self {
        Shader {
            isa,
            queue: wptr_va.wrapping_sub(AMD_QUEUE_WRITE_DISPATCH_ID),
            buffers: None,
            need: None,
            current: None,
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

    /// The fault that ended the last dispatch with `QUEUE_ERROR_VM_FAULT`.
    pub(crate) fn take_fault(&mut self) -> Option<Fault> {
        self.fault.take()
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
        let items = wg[0] * wg[1] * wg[2];
        if items > 1024 {
            return Err(invalid(aql::INACTIVE_GROUP_TOO_LARGE, "more than 1024 work-items per workgroup"));
        }
        if kobj == 0 || kobj % 64 != 0 {
            return Err(invalid(aql::INACTIVE_INVALID_CODE, "kernel object null or not 64-byte aligned"));
        }
        let mut k = [0u8; AMD_KERNEL_CODE_SIZE];
        m.read(kobj, &mut k[..KERNEL_DESCRIPTOR_SIZE]).map_err(Stop::Fault)?;
        if is_amd_kernel_code(&k) {
            m.read(kobj + KERNEL_DESCRIPTOR_SIZE as u64, &mut k[KERNEL_DESCRIPTOR_SIZE..])
                .map_err(Stop::Fault)?;
        }
        let kd = KernelDescriptor::parse_kernel_object(&k)
            .ok_or_else(|| invalid(aql::INACTIVE_INVALID_CODE, "kernel object is neither a kernel descriptor nor an amd_kernel_code_t the engine runs"))?;
        let generation = self.isa.unwrap_or_default();
        if kd.wavefront_size32() && generation == Generation::Gfx9 {
            self.inactive.set(aql::INACTIVE_INVALID_ISA);
            return Err(fail(pkt, QUEUE_ERROR_UNSUPPORTED, format_args!("a wave32 kernel (gfx90a runs wave64)")));
        }
        let lane_bytes = private.max(kd.private_segment_fixed_size).next_multiple_of(4);
        if lane_bytes > MAX_SCRATCH_LANE {
            self.inactive.set(aql::INACTIVE_INVALID_ALLOCATION);
            return Err(fail(
                pkt,
                QUEUE_ERROR_UNSUPPORTED,
                format_args!("{} bytes of scratch per work-item (at most {})", lane_bytes, MAX_SCRATCH_LANE),
            ));
        }
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

    /// Runs the current dispatch for one time slice.
    fn slice<M: GpuMemory, E: Events>(
        &mut self,
        m: &mut M,
        ev: &mut E,
        cur: &mut Current,
    ) -> core::result::Result<(), Stop> {
        let pkt = cur.pkt;
        let waves_max = cur.dispatch.waves_per_workgroup();
        let lanes = cur.dispatch.wave_lanes();
        let need = Need {
            waves: waves_max,
            lds: cur.lds,
            scratch: waves_max * lanes * cur.lane_bytes as usize,
        };
        let b = match &mut self.buffers {
            Some(b) if b.hold(need) => b,
            _ => {
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
        };
        let mut left = SLICE_STEPS;
        loop {
            let (id, n, mut state) = match cur.running {
                Some(r) => r,
                None => {
                    if cur.next >= cur.total {
                        return Ok(());
                    }
                    let [cx, cy, _] = cur.count.map(u64::from);
                    let i = cur.next;
                    let id = [(i % cx) as u32, (i / cx % cy) as u32, (i / (cx * cy)) as u32];
                    let n = cur.dispatch.waves_in_workgroup(id);
                    if n > MAX_WAVES {
                        self.inactive.set(aql::INACTIVE_GROUP_TOO_LARGE);
                        return Err(fail(pkt, QUEUE_ERROR_INVALID_PACKET, format_args!("{} waves in a workgroup", n)));
                    }
                    for (w, wave) in b.waves.iter_mut().take(n).enumerate() {
                        cur.dispatch.init_wave(wave, id, w).map_err(|e| {
                            self.inactive.set(aql::INACTIVE_INVALID_ISA);
                            fail(pkt, QUEUE_ERROR_UNSUPPORTED, format_args!("cannot launch: {:?}", e))
                        })?;
                    }
                    b.lds[..cur.lds].fill(0);
                    (id, n, WorkgroupState::default())
                }
            };
            let scratch = n * lanes * cur.lane_bytes as usize;
            let mut g = Global { m: &mut *m, ev: &mut *ev };
            let r = resume_workgroup(
                &mut b.waves[..n],
                &mut state,
                &mut g,
                &mut b.lds[..cur.lds],
                &mut b.scratch[..scratch],
                cur.lane_bytes,
                APERTURES,
                WAVE_TURN,
                left,
            );
            match r {
                Ok((true, steps)) => {
                    left = left.saturating_sub(steps);
                    cur.running = None;
                    cur.next += 1;
                }
                Ok((false, _)) => {
                    cur.running = Some((id, n, state));
                    return Err(Stop::Budget);
                }
                Err(WorkgroupError::Exec { wave, error }) => {
                    self.inactive.set(exec_inactive_code(&error));
                    let code = match error {
                        ExecError::Memory { fault, .. } => {
                            self.fault = Some(Fault {
                                va: fault.address,
                                write: fault.write,
                            });
                            QUEUE_ERROR_VM_FAULT
                        }
                        ExecError::OutOfBounds { .. } | ExecError::Decode { .. } => QUEUE_ERROR_INVALID_PACKET,
                        _ => QUEUE_ERROR_UNSUPPORTED,
                    };
                    return Err(fail(
                        pkt,
                        code,
                        format_args!("workgroup {:?} wave {}: {}", id, wave, error),
                    ));
                }
                Err(e) => {
                    self.inactive.set(aql::INACTIVE_INVALID_PACKET);
                    return Err(fail(pkt, QUEUE_ERROR_INVALID_PACKET, format_args!("workgroup {:?}: {:?}", id, e)));
                }
            }
            if left == 0 {
                return Err(Stop::Budget);
            }
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
            _ => self.start(m, pkt, dispatch_id)?,
        };
        let r = self.slice(m, ev, &mut cur);
        if r == Err(Stop::Budget) {
            self.current = Some(cur);
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
