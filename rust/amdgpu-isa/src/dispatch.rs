// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Launching waves: initial SGPRs/VGPRs as the kernel descriptor asks
//! (LLVM AMDGPUUsage, "Initial Kernel Execution State"), and running one
//! workgroup's waves to the end with `s_barrier` between them.

use super::code_object::KernelDescriptor;
use super::decode::Generation;
use super::exec::{self, ExecError, StepOutcome};
use super::memory::{Apertures, Environment, GlobalMemory};
use super::wave::{Mode, Wave, WAVE_SIZE};
use core::borrow::BorrowMut;

/// What the dispatcher knows about one dispatch (from the AQL packet and the queue).
#[derive(Clone, Copy, Debug)]
pub struct Dispatch {
    pub kernel_descriptor: KernelDescriptor,
    /// GPU VA of the kernel descriptor (the AQL packet's kernel_object).
    pub kernel_object: u64,
    /// GPU VA of the AQL dispatch packet.
    pub dispatch_packet: u64,
    /// GPU VA of the queue's amd_queue_t.
    pub queue: u64,
    pub kernarg: u64,
    pub dispatch_id: u64,
    pub workgroup_size: [u32; 3],
    pub grid_size: [u32; 3],
    /// The private segment buffer V# (4 dwords) handed to the kernel.
    pub private_segment_buffer: [u32; 4],
    /// FLAT_SCRATCH init value (gfx9: the scratch base address).
    pub flat_scratch_init: u64,
    /// Bytes of private segment per work-item.
    pub private_segment_size: u32,
    /// The ISA of the GPU (the virtual GPU's `GfxVersion`, by arch).
    pub generation: Generation,
}

/// Why a wave cannot be launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// The descriptor asks for wave32, which GFX9 does not run.
    Wave32,
    /// More user SGPRs than USER_SGPR_COUNT says.
    UserSgprCount { enabled: u32, declared: u32 },
    /// A workgroup dimension is zero or the workgroup exceeds 1024 items.
    WorkgroupSize,
}

impl Dispatch {
    /// Work-items in each dimension of workgroup `id` (smaller at the
    /// grid's edge: partial workgroups).
    pub fn workgroup_extent(&self, id: [u32; 3]) -> [u32; 3] {
        let mut e = [0; 3];
        for d in 0..3 {
            let start = id[d] as u64 * self.workgroup_size[d] as u64;
            e[d] = (self.grid_size[d] as u64).saturating_sub(start).min(self.workgroup_size[d] as u64) as u32;
        }
        e
    }

    /// Workgroups in each dimension.
    pub fn workgroup_count(&self) -> [u32; 3] {
        core::array::from_fn(|d| self.grid_size[d].div_ceil(self.workgroup_size[d].max(1)))
    }

    /// Lanes per wave: 32 if the descriptor asks for wave32 on GFX10
    /// (ENABLE_WAVEFRONT_SIZE32), else 64.
    pub fn wave_lanes(&self) -> usize {
        if self.generation == Generation::Gfx10 && self.kernel_descriptor.wavefront_size32() {
            32
        } else {
            WAVE_SIZE
        }
    }

    /// Work-items of a whole workgroup (in u64: three u16 sizes of an AQL
    /// packet overflow u32).
    pub fn workgroup_items(&self) -> u64 {
        self.workgroup_size.iter().map(|&d| u64::from(d)).product()
    }

    /// Waves of a whole workgroup (the most any workgroup has).
    pub fn waves_per_workgroup(&self) -> usize {
        (self.workgroup_items() as usize).div_ceil(self.wave_lanes())
    }

    /// Waves of workgroup `id`.
    pub fn waves_in_workgroup(&self, id: [u32; 3]) -> usize {
        let e = self.workgroup_extent(id);
        (e.iter().map(|&d| u64::from(d)).product::<u64>() as usize).div_ceil(self.wave_lanes())
    }

    /// Sets up wave number `wave_index` of workgroup `workgroup_id`.
    pub fn init_wave(&self, wave: &mut Wave, workgroup_id: [u32; 3], wave_index: usize) -> Result<(), LaunchError> {
        let kd = &self.kernel_descriptor;
        if kd.wavefront_size32() && self.generation == Generation::Gfx9 {
            return Err(LaunchError::Wave32);
        }
        if self.workgroup_size.contains(&0) || self.workgroup_items() > 1024 {
            return Err(LaunchError::WorkgroupSize);
        }
        wave.reset();
        wave.gen = self.generation;
        let lanes = self.wave_lanes();
        wave.wave32 = lanes == 32;
        wave.pc = (self.kernel_object as i64).wrapping_add(kd.kernel_code_entry_byte_offset) as u64;
        wave.mode = Mode(kd.initial_mode());
        let mut s = 0usize;
        let mut push = |wave: &mut Wave, v: u32| {
            if s < wave.sgpr.len() {
                wave.sgpr[s] = v;
            }
            s += 1;
        };
        let lo = |v: u64| v as u32;
        let hi = |v: u64| (v >> 32) as u32;
        if kd.enable_private_segment_buffer() {
            for d in self.private_segment_buffer {
                push(wave, d);
            }
        }
        for (enabled, value) in [
            (kd.enable_dispatch_ptr(), self.dispatch_packet),
            (kd.enable_queue_ptr(), self.queue),
            (kd.enable_kernarg_segment_ptr(), self.kernarg),
            (kd.enable_dispatch_id(), self.dispatch_id),
            (kd.enable_flat_scratch_init(), self.flat_scratch_init),
        ] {
            if enabled {
                push(wave, lo(value));
                push(wave, hi(value));
            }
        }
        if kd.enable_private_segment_size() {
            push(wave, self.private_segment_size);
        }
        let enabled = s as u32;
        if enabled > kd.user_sgpr_count() {
            return Err(LaunchError::UserSgprCount { enabled, declared: kd.user_sgpr_count() });
        }
        // System SGPRs follow the declared user SGPRs.
        let mut s = kd.user_sgpr_count() as usize;
        for d in 0..3 {
            if kd.enable_workgroup_id(d) {
                wave.sgpr[s] = workgroup_id[d as usize];
                s += 1;
            }
        }
        if kd.enable_workgroup_info() {
            // WORKGROUP_INFO is not defined by AMDGPUUsage for compute
            // beyond "reserved"; zero.
            wave.sgpr[s] = 0;
            s += 1;
        }
        if kd.enable_private_segment() {
            // Private segment wave byte offset: each wave's scratch is its own
            // lane-major slice (memory::Environment::scratch), so 0.
            wave.sgpr[s] = 0;
        }
        if kd.enable_flat_scratch_init() {
            wave.flat_scratch = self.flat_scratch_init;
        }
        // Work-item ids packed into v0 (x | y << 10 | z << 20) on gfx90a,
        // in v0, v1, v2 on GFX10 (as many as ENABLE_VGPR_WORKITEM_ID asks).
        let e = self.workgroup_extent(workgroup_id);
        let items = e[0] * e[1] * e[2];
        let mut exec = 0u64;
        for lane in 0..lanes {
            let t = (wave_index * lanes + lane) as u32;
            if t >= items {
                break;
            }
            let x = t % e[0];
            let y = (t / e[0]) % e[1];
            let z = t / (e[0] * e[1]);
            let dims = kd.workitem_id_dims();
            if self.generation == Generation::Gfx10 {
                wave.vgpr[0][lane] = x;
                if dims >= 1 {
                    wave.vgpr[1][lane] = y;
                }
                if dims >= 2 {
                    wave.vgpr[2][lane] = z;
                }
            } else {
                wave.vgpr[0][lane] = match dims {
                    0 => x,
                    1 => x | y << 10,
                    _ => x | y << 10 | z << 20,
                };
            }
            exec |= 1 << lane;
        }
        wave.exec = exec;
        Ok(())
    }
}

/// Why a workgroup stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkgroupError {
    Exec { wave: usize, error: ExecError },
    /// The step budget ran out before every wave ended.
    StepBudget,
    /// More than 32 waves (1024 work-items) in one workgroup.
    TooManyWaves,
}

/// Waves per workgroup at most (1024 work-items of wave32).
pub const MAX_WAVES: usize = 32;

/// A workgroup in progress between [`resume_workgroup`] calls: which waves
/// wait at `s_barrier`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkgroupState {
    at_barrier: [bool; MAX_WAVES],
}

/// Runs the waves of one workgroup for at most `budget` instructions, from
/// where the last call with the same `state` stopped. Waves take turns of
/// up to `slice` instructions; one waiting at `s_barrier` sleeps until
/// every wave still running has arrived. `scratch` holds each wave's
/// lane-major private segment in turn (lanes per wave times
/// `scratch_lane_bytes` bytes per wave). Returns whether every wave ended, and the number of
/// instructions executed.
#[expect(clippy::too_many_arguments, reason = "the workgroup's whole environment, spelled out")]
pub fn resume_workgroup<W: BorrowMut<Wave>>(
    waves: &mut [W],
    state: &mut WorkgroupState,
    global: &mut dyn GlobalMemory,
    lds: &mut [u8],
    scratch: &mut [u8],
    scratch_lane_bytes: u32,
    apertures: Apertures,
    slice: u32,
    budget: u64,
) -> Result<(bool, u64), WorkgroupError> {
    if waves.len() > MAX_WAVES {
        return Err(WorkgroupError::TooManyWaves);
    }
    let lanes = waves.first().map_or(WAVE_SIZE, |w| w.borrow().lanes());
    let wave_scratch = lanes * scratch_lane_bytes as usize;
    let mut steps = 0u64;
    loop {
        let running = waves.iter().filter(|w| !w.borrow().ended).count();
        if running == 0 {
            return Ok((true, steps));
        }
        let waiting = waves.iter().enumerate().filter(|(i, w)| !w.borrow().ended && state.at_barrier[*i]).count();
        if waiting == running {
            state.at_barrier = [false; MAX_WAVES];
        }
        if steps >= budget {
            return Ok((false, steps));
        }
        for (w, wave) in waves.iter_mut().enumerate() {
            let wave: &mut Wave = wave.borrow_mut();
            if wave.ended || state.at_barrier[w] {
                continue;
            }
            let scratch_slice = scratch.get_mut(w * wave_scratch..(w + 1) * wave_scratch).unwrap_or(&mut []);
            let mut env = Environment { global: &mut *global, lds: &mut *lds, scratch: scratch_slice, scratch_lane_bytes, apertures };
            for _ in 0..slice {
                if steps >= budget {
                    break;
                }
                steps += 1;
                match exec::step(wave, &mut env).map_err(|error| WorkgroupError::Exec { wave: w, error })? {
                    StepOutcome::Continue => {}
                    StepOutcome::Barrier => {
                        state.at_barrier[w] = true;
                        break;
                    }
                    StepOutcome::Ended => break,
                }
            }
        }
    }
}

/// Runs the waves of one workgroup until all end ([`resume_workgroup`]
/// with one budget of `max_steps`: running out of it is an error).
/// Returns the number of instructions executed.
#[expect(clippy::too_many_arguments, reason = "the workgroup's whole environment, spelled out")]
pub fn run_workgroup<W: BorrowMut<Wave>>(
    waves: &mut [W],
    global: &mut dyn GlobalMemory,
    lds: &mut [u8],
    scratch: &mut [u8],
    scratch_lane_bytes: u32,
    apertures: Apertures,
    slice: u32,
    max_steps: u64,
) -> Result<u64, WorkgroupError> {
    let mut state = WorkgroupState::default();
    match resume_workgroup(waves, &mut state, global, lds, scratch, scratch_lane_bytes, apertures, slice, max_steps)? {
        (true, steps) => Ok(steps),
        (false, _) => Err(WorkgroupError::StepBudget),
    }
}
