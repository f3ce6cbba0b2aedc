// SPDX-License-Identifier: GPL-2.0

//! Device power management and GPU reset, as the GPU driver drives them:
//! suspend/resume, process suspend/resume, pre/post reset, the KFD lock of
//! a partition switch, scheduler halt, `compute_active` and process
//! teardown.
//!
//! C: `kgd2kfd_suspend`, `kgd2kfd_resume`, `kgd2kfd_suspend_process`,
//! `kgd2kfd_resume_process`, `kgd2kfd_pre_reset`, `kgd2kfd_post_reset`,
//! `kgd2kfd_check_and_lock_kfd`, `kgd2kfd_unlock_kfd`,
//! `kgd2kfd_start_sched`, `kgd2kfd_stop_sched`, `kgd2kfd_compute_active`
//! and `kgd2kfd_teardown_processes` (`kfd_device.c`), over
//! `kfd_suspend_all_processes` / `kfd_resume_all_processes`
//! (`kfd_process.c`) and the queue manager's `start` / `stop` / `halt` /
//! `unhalt` (`crate::queue`: the HWS's `start_cpsch` / `stop_cpsch`, the
//! MES's, none for `sched_policy` 2, as `stop_nocpsch`).
//!
//! What a suspend does: the first device to suspend its processes locks
//! the KFD (upstream `kfd_locked`, [`crate::process::kfd_lock`]: opening
//! `/dev/kfd` is `-EINVAL` until the last resume) and evicts every
//! process's queues on every GPU (`crate::queue::evict_process`, SMI
//! `QUEUE_EVICTION` with trigger `SUSPEND`); a queue an existing process
//! creates meanwhile is created evicted and runs at the resume, as
//! upstream's `create_queue_cpsch` with `qpd->evicted`.  Then the device's
//! scheduler stops.  A reset (`pre_reset`) does the same after SMI
//! `GPU_PRE_RESET` and sets every process's HW_EXCEPTION events (the
//! whole-GPU-reset data `crate::queue::recover` sends for an HWS hang:
//! both share `queue::signal_reset` and `smi::gpu_reset`); `post_reset`
//! starts the scheduler, drops the reset's lock and sends
//! `GPU_POST_RESET`, and leaves the processes' queues evicted (upstream:
//! "KFD won't be able to resume existing process").
//!
//! Unlike upstream, whose counters trust amdgpu to pair its calls (a
//! resume without a suspend WARNs and takes `kfd_locked` below 0), each
//! device remembers what it holds ([`PowerState`]): a repeated suspend
//! does nothing more, a resume of processes this device did not suspend
//! or a `post_reset` without `pre_reset` is `-EINVAL`, a second
//! `pre_reset` `-EBUSY`, and `device_exit` gives back what the device
//! still holds (upstream `kgd2kfd_device_exit`'s `kgd2kfd_unlock_kfd(NULL)`).
//!
//! Lock order: [`DevicePower::state`] is 0 in the crate root's order,
//! outermost: taken with no rkfd lock held, and the transitions run under
//! it ([`static@crate::process::PROCESSES`] for the KFD lock, then each
//! process's `inner` and the queue locks 3, 3a, 3b).  The GPU driver calls
//! these entry points with none of its locks held that a kfd2kgd call
//! takes (the interface's contract), never from an engine thread.

use kernel::{
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Mutex,
    },
};

use crate::{
    device::Device,
    kabi::log::{kfd_err, kfd_info},
    process::Process,
};

/// One device's power state (C: the device's share of `kfd_locked`,
/// `kfd->kfd_dev_lock`, the dqm's `sched_running` / `sched_halt`).
pub(crate) struct DevicePower {
    /// What the device holds and has stopped.  Lock order: 0, outermost
    /// (module doc).
    state: Pin<KBox<Mutex<PowerState>>>,
    /// `kgd2kfd_check_and_lock_kfd` (upstream `kfd->kfd_dev_lock`): 0 or
    /// 1, changed under [`static@crate::process::PROCESSES`]; read by
    /// `/dev/kfd`'s open under it.
    dev_lock: Atomic<u32>,
}

/// What [`DevicePower::state`] protects.
#[derive(Default)]
struct PowerState {
    /// `kgd2kfd_suspend_process` ran (this device holds one count of the
    /// KFD lock) and no `kgd2kfd_resume_process` since.
    procs_suspended: bool,
    /// `kgd2kfd_pre_reset` ran (one more count of the KFD lock) and no
    /// `kgd2kfd_post_reset` since.
    in_reset: bool,
    /// The queue manager is stopped (`kgd2kfd_suspend`, `pre_reset`).
    stopped: bool,
    /// Scheduling is halted (`kgd2kfd_stop_sched`).
    halted: bool,
}

impl DevicePower {
    /// A running device.
    pub(crate) fn new() -> Result<Self> {
        Ok(DevicePower {
            state: KBox::pin_init(kernel::new_mutex!(PowerState::default(), "DevicePower::state"), GFP_KERNEL)?,
            dev_lock: Atomic::new(0),
        })
    }

    /// Whether `kgd2kfd_check_and_lock_kfd` locked the device (read under
    /// [`static@crate::process::PROCESSES`]).
    pub(crate) fn is_locked(&self) -> bool {
        self.dev_lock.load(Relaxed) > 0
    }
}

/// C: `kfd_suspend_all_processes`: every process's queues are evicted on
/// every GPU it uses, SMI `QUEUE_EVICTION` with trigger `SUSPEND`.
fn suspend_all_processes() {
    let Ok(all) = crate::process::snapshot() else {
        kfd_err!("Failed to suspend the processes: out of memory\n");
        return;
    };
    for p in all.iter() {
        let owner = crate::smi::Owner::of_process(p);
        if crate::queue::evict_process(p, &owner, crate::smi::QUEUE_EVICTION_TRIGGER_SUSPEND).is_err() {
            kfd_err!("Failed to suspend process pid {}\n", p.pid());
        }
    }
}

/// C: `kfd_resume_all_processes`: one eviction of every process ends;
/// `-EFAULT` if any restore failed.
fn resume_all_processes() -> Result {
    let all = crate::process::snapshot()?;
    let mut ret = Ok(());
    for p in all.iter() {
        let owner = crate::smi::Owner::of_process(p);
        if crate::queue::restore_process(p, &owner).is_err() {
            kfd_err!("Restore process pid {} failed during resume\n", p.pid());
            ret = Err(EFAULT);
        }
    }
    ret
}

/// C: `kgd2kfd_suspend_process`, under the device's state lock.
fn suspend_process_locked(st: &mut PowerState) {
    if st.procs_suspended {
        return;
    }
    st.procs_suspended = true;
    if crate::process::kfd_lock() {
        suspend_all_processes();
    }
}

/// C: `kgd2kfd_resume_process`, under the device's state lock.
fn resume_process_locked(st: &mut PowerState) -> Result {
    if !st.procs_suspended {
        return Err(EINVAL);
    }
    st.procs_suspended = false;
    if crate::process::kfd_unlock() {
        resume_all_processes()
    } else {
        Ok(())
    }
}

/// C: `dqm->ops.stop`, under the device's state lock.
fn stop_locked(dev: &Device, st: &mut PowerState) {
    if st.stopped {
        return;
    }
    st.stopped = true;
    crate::queue::sched_stop(dev);
}

/// C: `kfd_resume` (`dqm->ops.start`), under the device's state lock.
fn start_locked(dev: &Device, st: &mut PowerState) -> Result {
    if !st.stopped {
        return Ok(());
    }
    crate::queue::sched_start(dev, st.halted).inspect_err(|e| {
        kfd_err!("Error starting queue manager for device {:x}:{:x}: {:?}\n", dev.info.vendor_id, dev.info.device_id, e);
    })?;
    st.stopped = false;
    Ok(())
}

/// `kgd2kfd_suspend`.
pub(crate) fn suspend(dev: &Device, procs: bool) {
    let mut st = dev.power.state.lock();
    if procs {
        suspend_process_locked(&mut st);
    }
    stop_locked(dev, &mut st);
}

/// `kgd2kfd_resume`: `-EINVAL` with `procs` if this device had not
/// suspended the processes (after starting the scheduler).
pub(crate) fn resume(dev: &Device, procs: bool) -> Result {
    let mut st = dev.power.state.lock();
    start_locked(dev, &mut st)?;
    if procs {
        resume_process_locked(&mut st)
    } else {
        Ok(())
    }
}

/// `kgd2kfd_suspend_process`.
pub(crate) fn suspend_process(dev: &Device) {
    suspend_process_locked(&mut dev.power.state.lock());
}

/// `kgd2kfd_resume_process`: `-EINVAL` if this device had not suspended
/// them.
pub(crate) fn resume_process(dev: &Device) -> Result {
    resume_process_locked(&mut dev.power.state.lock())
}

/// `kgd2kfd_pre_reset`: SMI `GPU_PRE_RESET` with `cause`, the KFD locked
/// and every process evicted (`kgd2kfd_suspend(kfd, true)`: the reset
/// holds its own count), the scheduler stopped, the processes using the
/// device told (`kfd_signal_reset_event`).  `-EBUSY` while a reset is
/// under way.
pub(crate) fn pre_reset(dev: &Device, cause: &[u8]) -> Result {
    let mut st = dev.power.state.lock();
    if st.in_reset {
        return Err(EBUSY);
    }
    st.in_reset = true;
    kfd_info!("gpu_id {}: GPU reset begins\n", dev.gpu_id());
    crate::smi::gpu_reset(dev, false, core::str::from_utf8(cause).unwrap_or(""));
    if crate::process::kfd_lock() {
        suspend_all_processes();
    }
    stop_locked(dev, &mut st);
    crate::queue::signal_reset(dev);
    Ok(())
}

/// `kgd2kfd_post_reset`: the scheduler starts again, the reset's count of
/// the KFD lock goes (the processes stay evicted), SMI `GPU_POST_RESET`.
/// `-EINVAL` without a `pre_reset`; a failed start is returned with the
/// reset still under way, as upstream.
pub(crate) fn post_reset(dev: &Device) -> Result {
    let mut st = dev.power.state.lock();
    if !st.in_reset {
        return Err(EINVAL);
    }
    start_locked(dev, &mut st)?;
    st.in_reset = false;
    crate::process::kfd_unlock();
    dev.sram_ecc_flag.store(0, Relaxed);
    crate::smi::gpu_reset(dev, true, "");
    kfd_info!("gpu_id {}: GPU reset done\n", dev.gpu_id());
    Ok(())
}

/// `kgd2kfd_check_and_lock_kfd`: `-EBUSY` if the KFD or the device is
/// locked or a process uses the device.
pub(crate) fn check_and_lock(dev: &Device) -> Result {
    let gpu_id = dev.gpu_id();
    crate::process::lock_device(&dev.power.dev_lock, || {
        crate::process::snapshot().map_or(true, |all| all.iter().any(|p| p.uses_device(gpu_id)))
    })
}

/// `kgd2kfd_unlock_kfd(kfd)`.
pub(crate) fn unlock(dev: &Device) {
    crate::process::unlock_device(&dev.power.dev_lock);
}

/// `kgd2kfd_start_sched` (`start`) / `kgd2kfd_stop_sched`: upstream's
/// `unhalt_cpsch` / `halt_cpsch`.  A stopped (suspended) device only
/// records it: the resume starts it halted or not.
pub(crate) fn start_sched(dev: &Device, start: bool) -> Result {
    let mut st = dev.power.state.lock();
    if st.halted != start {
        return Ok(());
    }
    st.halted = !start;
    if st.stopped {
        return Ok(());
    }
    crate::queue::sched_halt(dev, !start)
}

/// `kgd2kfd_compute_active`: user queues are on the GPU.
pub(crate) fn compute_active(dev: &Device) -> bool {
    crate::queue::compute_active(dev)
}

/// `kgd2kfd_teardown_processes`: every process using the device gets its
/// signal events set and SIGBUS (`kfd_signal_process_terminate_event`).
/// rkfd does not wait for them to exit (upstream does): the device is
/// only withdrawn once no process holds its GPU driver's module.
pub(crate) fn teardown_processes(dev: &Device) {
    let Ok(all) = crate::process::snapshot() else { return };
    for p in all.iter().filter(|p| p.uses_device(dev.gpu_id())) {
        terminate(p);
    }
}

/// C: `kfd_signal_process_terminate_event`.
fn terminate(p: &Process) {
    p.events.signal_process_terminate();
    kfd_info!("Sending SIGBUS to process {}\n", p.pid());
    crate::kabi::signal::send_sigbus(p.lead_thread());
}

/// `kgd2kfd_device_exit`: the device gives back what it still holds of
/// the KFD lock (upstream `kgd2kfd_unlock_kfd(NULL)` there), restoring
/// the processes if that was the last.
pub(crate) fn device_exit(dev: &Device) {
    let mut st = dev.power.state.lock();
    if st.in_reset {
        st.in_reset = false;
        crate::process::kfd_unlock();
    }
    if st.procs_suspended {
        let _ = resume_process_locked(&mut st);
    }
    drop(st);
    crate::process::unlock_device(&dev.power.dev_lock);
}
