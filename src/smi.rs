// SPDX-License-Identifier: GPL-2.0

//! SMI events: a per-GPU stream of text lines about processes, faults,
//! migrations, queue evictions and resets, for tools such as `rocm-smi`.
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_smi_events.c`; the fifo, the
//! visibility rule and the line formats are pure logic in
//! `rust/kfd-logic/src/smi.rs` (host tested); the file is `kabi::smi`.
//!
//! # User space view (as upstream)
//!
//! - `AMDKFD_IOC_SMI_EVENTS(gpuid)` returns `anon_fd`, an `O_RDWR` file
//!   `kfd_smi_ev` (`-EINVAL` for a gpu_id the process has no pdd for).
//! - `write()` of at least 8 bytes sets the event mask
//!   (`KFD_SMI_EVENT_MASK_FROM_INDEX(event)` bits), returns 8; shorter
//!   writes or a range outside user space are `-EFAULT`.
//! - `read()` never blocks: `-EAGAIN` when empty, else up to
//!   `min(size, 8192)` bytes of whole lines `"<event hex> <fields>\n"`
//!   (a short read may split a line, as `kfifo_out`).  `poll()` reports
//!   `EPOLLIN | EPOLLRDNORM` while data is queued.
//! - A client opened without `CAP_SYS_ADMIN` receives only events of its
//!   own thread group (and events of no process, the GPU resets and thermal
//!   events); with it, everyone's.  Decided at open (`capable()` then).  The
//!   `KFD_SMI_EVENT_ALL_PROCESS` mask bit changes nothing (as in 7.3's
//!   `kfd_smi_ev_enabled`).
//! - Each client has an 8 KiB fifo; an event that does not fit is dropped
//!   for that client.
//! - The file holds a reference on the rkfd module (`rmmod rkfd` is refused
//!   while one is open) but none on the GPU: a client only remembers the
//!   `gpu_id`, so it outlives the GPU driver safely (it then receives nothing).
//!
//! # Producers (where upstream sends each event)
//!
//! | event | rkfd | upstream |
//! |---|---|---|
//! | `PROCESS_START` / `_END` | `process.rs`: `ACQUIRE_VM`, teardown | `kfd_process_device_init_vm`, `kfd_process_destroy_pdds` |
//! | `VMFAULT` | `interrupt.rs`: a UTCL2/VMC fault entry | `event_interrupt_wq_v9` |
//! | `THERMAL_THROTTLE` | `kgd2kfd_smi_event_throttle` (the virtual GPU's hwmon `vgpu_throttle`) | same entry, from amdgpu's SMU |
//! | `GPU_PRE_RESET` / `_POST_RESET` | `queue::recover` (a scheduler hang, debugfs `hang_hws`) | `kgd2kfd_pre_reset` / `_post_reset` |
//! | `PAGE_FAULT_START` / `_END` | `svm::fault`: a retry fault (`restore_pages`) | `svm_range_restore_pages` |
//! | `MIGRATE_START` / `_END` | `svm::migrate::to_vram` / `to_ram` (prefetch, GPU fault), `kabi::hmm` (CPU fault) | `svm_migrate_ram_to_vram` / `_vram_to_ram` |
//! | `QUEUE_EVICTION` / `_RESTORE` | `queue::evict_process` / `restore_process`, from the XNACK-off restore worker (`svm::notifier`, trigger SVM), the eviction works of `crate::eviction` (trigger TTM) and `kgd2kfd_quiesce_mm` / `_resume_mm` (the GPU driver's trigger) | `kfd_process_evict_queues` / `_restore_queues` |
//! | `QUEUE_RESTORE` flag `R` | `kgd2kfd_queue_restore_rescheduled` (the virtual GPU's debugfs `amdgpu_vgpu/restore_rescheduled`) | `kfd_smi_event_queue_restore_rescheduled`, from amdgpu's userptr restore worker |
//! | `UNMAP_FROM_GPU` | `svm::notifier`: invalidation (XNACK on, or `munmap`), SET_ATTR `NO_ACCESS` (one per range) | `svm_range_unmap_from_gpus` |
//!
//! The pid printed is the lead thread's, in hex for process/VM-fault
//! events and in the process's own pid namespace for the others, as
//! upstream.  SVM addresses are page numbers, as upstream.  rkfd has no
//! TTM eviction, userptr eviction or suspend, so those triggers never
//! appear; its virtual GPUs throttle only when told to.  Not reported:
//! the migrations back to system memory at process teardown (upstream
//! frees the VRAM instead), the one `Svms::map_on` makes before mapping a
//! read-only device page for a write (`EXDEV`), and the `munmap` worker's
//! unmapping of the surviving parts of a split range (rkfd re-registers
//! them; upstream splits in place); XNACK off, an invalidation sends
//! `QUEUE_EVICTION`, not `UNMAP_FROM_GPU` (upstream evicts the queues there
//! instead of unmapping; rkfd does both).
//!
//! # Context and locks
//!
//! Every event function may be called from any context that may take a
//! spinlock (process context, work items, softirq; not hard-IRQ), with any
//! rkfd lock held, inside MMU-notifier callbacks and under
//! `memalloc_noreclaim_save()`: it takes only [`CLIENTS`] and then a
//! client's fifo lock (both leaves, in that order), allocates nothing (the
//! line is formatted on the stack), and does nothing but a lock and a test
//! when no client exists.  (`gpu_reset` may allocate its sequence-number
//! slot with `GFP_ATOMIC`.)  [`migration`] runs its closure with no SMI lock
//! held.

use kernel::{
    fs::File,
    new_poll_condvar, new_spinlock,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        poll::{PollCondVar, PollTable},
        Arc, SpinLock,
    },
    task::Task,
    uaccess::UserSliceWriter, //
};

use crate::{
    device::Device,
    kabi::{self, smi as file},
    process::Process,
};

#[path = "../rust/kfd-logic/src/smi.rs"]
#[allow(dead_code, unreachable_pub, clippy::all)]
mod logic;

use logic::{Line, Ring, FIFO_SIZE};
pub(crate) use logic::{
    MIGRATE_TRIGGER_PAGEFAULT_GPU, MIGRATE_TRIGGER_PREFETCH, MIGRATE_TRIGGER_TTM_EVICTION, SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU,
};

/// The fifo of one client (C: `client->fifo` under `client->lock`).
struct Fifo {
    ring: Ring,
    buf: KVec<u8>,
}

/// One open SMI file (C: `struct kfd_smi_client`).
#[pin_data]
pub(crate) struct Client {
    /// The GPU it listens to.
    gpu_id: u32,
    /// Global thread group id of the opener.
    tgid: i32,
    /// Opened with `CAP_SYS_ADMIN`: sees every process's events.
    suser: bool,
    /// `KFD_SMI_EVENT_MASK_FROM_INDEX` bits, set by `write()`.
    mask: Atomic<u64>,
    /// The lines not read yet.  Lock order: innermost, taken under
    /// [`static@CLIENTS`] by the producers and alone by `read()`/`poll()`.
    #[pin]
    fifo: SpinLock<Fifo>,
    /// Woken when a line is queued; `poll()` waits here.
    #[pin]
    wait: PollCondVar,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised in module init (`init_module_state`) before
    // `/dev/kfd` is registered.
    pub(crate) unsafe(uninit) static CLIENTS: SpinLock<Clients> = Clients {
        list: KVec::new(),
        resets: KVec::new(),
    };
}

/// Every open client, and the GPU reset counters.
pub(crate) struct Clients {
    list: KVec<Arc<Client>>,
    /// `(gpu_id, reset_seq_num)` (C: `dev->reset_seq_num`).
    resets: KVec<(u32, u32)>,
}

/// Initialises the client list.  Called once from module init.
pub(crate) fn init_module_state() {
    // SAFETY: Called exactly once, from module init, before any other use.
    unsafe { CLIENTS.init() };
}

/// Frees the lists' storage at module exit.  No client exists then (each
/// open file holds a module reference).
pub(crate) fn exit_module_state() {
    let (list, resets) = {
        let mut c = CLIENTS.lock();
        (core::mem::replace(&mut c.list, KVec::new()), core::mem::replace(&mut c.resets, KVec::new()))
    };
    drop(list);
    drop(resets);
}

/// `AMDKFD_IOC_SMI_EVENTS` for `dev`: opens a client; returns its fd
/// (C: `kfd_smi_event_open`).
pub(crate) fn open(dev: &Device) -> Result<u32> {
    let mut buf = KVec::with_capacity(FIFO_SIZE, GFP_KERNEL)?;
    buf.resize(FIFO_SIZE, 0, GFP_KERNEL)?;
    let client = Arc::pin_init(
        try_pin_init!(Client {
            gpu_id: dev.gpu_id(),
            tgid: kernel::current!().group_leader().pid(),
            suser: file::capable_sys_admin(),
            mask: Atomic::new(0),
            fifo <- new_spinlock!(Fifo { ring: Ring::new(), buf }, "smi::Client::fifo"),
            wait <- new_poll_condvar!("smi::Client::wait"),
        }),
        GFP_KERNEL,
    )?;
    {
        let mut c = CLIENTS.lock();
        c.list.push(client.clone(), GFP_ATOMIC)?;
    }
    file::install_fd(client.clone()).inspect_err(|_| {
        let removed = remove(&client);
        drop(removed);
    })
}

/// Takes `client` off the list; the caller drops what is returned outside
/// the lock (the last reference sleeps in `PollCondVar`'s drop).
fn remove(client: &Arc<Client>) -> Option<Arc<Client>> {
    let mut c = CLIENTS.lock();
    let i = c.list.iter().position(|x| Arc::ptr_eq(x, client))?;
    c.list.remove(i).ok()
}

/// `release` of a client's file (C: `kfd_smi_ev_release`).
pub(crate) fn release(client: Arc<Client>) {
    let removed = remove(&client);
    drop(removed);
    drop(client);
}

/// The SMI file's operations ([`kabi::smi`] calls them).
impl file::SmiFile for Client {
    fn read(&self, out: UserSliceWriter, size: usize) -> Result<usize> {
        Client::read(self, out, size)
    }

    fn set_mask(&self, mask: u64) {
        Client::set_mask(self, mask);
    }

    fn poll(&self, file: &File, table: &PollTable<'_>) -> bool {
        Client::poll(self, file, table)
    }

    fn release(this: Arc<Self>) {
        release(this);
    }
}

impl Client {
    /// `write()`: the new event mask (C: `kfd_smi_ev_write`).
    pub(crate) fn set_mask(&self, mask: u64) {
        self.mask.store(mask, Relaxed);
    }

    /// `read()`: moves up to `min(size, 8192)` queued bytes to `out`
    /// (C: `kfd_smi_ev_read`); `-EAGAIN` if nothing is queued (or `size`
    /// is 0), `-EFAULT` if the copy fails (the bytes are gone, as upstream).
    pub(crate) fn read(&self, mut out: UserSliceWriter, size: usize) -> Result<usize> {
        let size = size.min(FIFO_SIZE);
        let mut tmp = KVec::with_capacity(size, GFP_KERNEL)?;
        tmp.resize(size, 0, GFP_KERNEL)?;
        let n = {
            let mut f = self.fifo.lock();
            let Fifo { ring, buf } = &mut *f;
            ring.pop(buf, &mut tmp)
        };
        if n == 0 {
            return Err(EAGAIN);
        }
        out.write_slice(&tmp[..n]).map_err(|_| EFAULT)?;
        Ok(n)
    }

    /// `poll()`: registers the waiter; whether data is queued.
    pub(crate) fn poll(&self, file: &File, table: &PollTable<'_>) -> bool {
        table.register_wait(file, &self.wait);
        !self.fifo.lock().ring.is_empty()
    }

    /// Queues `line` if it fits (C: `add_event_to_kfifo`).
    fn push(&self, line: &[u8]) {
        let mut f = self.fifo.lock();
        let Fifo { ring, buf } = &mut *f;
        if ring.push(buf, line) {
            self.wait.notify_all();
        }
    }
}

/// Delivers an event of process `tgid` (0: of no process) on `gpu_id` to
/// every client that may see it (C: `kfd_smi_event_add`).  `line` is only
/// formatted when some client exists.
fn add(gpu_id: u32, tgid: i32, event: u32, line: impl FnOnce() -> Line) {
    let c = CLIENTS.lock();
    if c.list.is_empty() {
        return;
    }
    let line = line();
    for client in c.list.iter() {
        if client.gpu_id == gpu_id
            && logic::enabled(client.mask.load(Relaxed), client.tgid, client.suser, tgid, event)
        {
            client.push(line.as_bytes());
        }
    }
}

/// The process an event is about, as SMI prints and filters it: the
/// global thread group id of its lead thread (clients are matched by it,
/// C: `kfd_smi_task_tgid`) and that thread's tgid in its own pid namespace
/// (printed, C: `kfd_smi_task_to_pid`).  Taken once, when the process is
/// created (neither changes for a thread group), so that events can be
/// sent from paths that hold SVM locks and must not look the process up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    tgid: i32,
    pid: i32,
}

impl Owner {
    /// The current thread group's (the opener of `/dev/kfd` creates the
    /// process, so this is the process's lead thread).
    pub(crate) fn current() -> Owner {
        Owner::of_task(kernel::current!().group_leader())
    }

    /// `process`'s (its lead thread's thread group), for events rkfd
    /// sends on a process's behalf from another thread (a suspend).
    pub(crate) fn of_process(process: &crate::process::Process) -> Owner {
        Owner::of_task(process.lead_thread())
    }

    /// `task`'s thread group.
    fn of_task(task: &Task) -> Owner {
        let ns = task.get_pid_ns();
        Owner { tgid: task.tgid(), pid: task.tgid_nr_ns(ns.as_deref()) }
    }
}

/// Boot-time ns (C: `ktime_get_boottime_ns`), the events' timestamps.
pub(crate) fn now() -> i64 {
    kabi::time::boottime_ns() as i64
}

/// Page number of a byte address (SVM events print pages, as upstream).
const fn pfn(addr: u64) -> u64 {
    addr >> kernel::page::PAGE_SHIFT
}

/// `PROCESS_START` / `PROCESS_END`: `process` bound / gave back its VM on
/// `dev` (C: `kfd_smi_event_process`; upstream prints the pid and name of
/// the VM's task, the thread that acquired it; rkfd the lead thread's).
pub(crate) fn event_process(dev: &Device, process: &Process, start: bool) {
    let event = if start { logic::PROCESS_START } else { logic::PROCESS_END };
    let lead = process.lead_thread();
    add(dev.gpu_id(), process.pid(), event, || {
        logic::fmt_process(event, lead.pid(), &file::task_comm(lead))
    });
}

/// `VMFAULT`: a fatal GPU VM fault of `process` on `dev`, for clients
/// allowed to see that process (C: `kfd_smi_event_update_vmfault` from the
/// interrupt handler of a VM-fault IH entry; `src/interrupt.rs`).
pub(crate) fn vm_fault(dev: &Device, process: &Process) {
    let lead = process.lead_thread();
    add(dev.gpu_id(), process.pid(), logic::VMFAULT, || {
        logic::fmt_vmfault(lead.pid(), &file::task_comm(lead))
    });
}

/// `GPU_PRE_RESET` (`post == false`: increments the GPU's reset sequence
/// number, whether or not a client listens, as upstream) / `GPU_POST_RESET`
/// (the same number), seen by every client of `dev` that asked (C:
/// `kfd_smi_event_update_gpu_reset` from `kgd2kfd_pre_reset` /
/// `kgd2kfd_post_reset`; `queue::recover`).  `cause` as
/// `amdgpu_reset_get_desc` ("HWS hang"); upstream's post-reset has none ("").
pub(crate) fn gpu_reset(dev: &Device, post: bool, cause: &str) {
    let gpu_id = dev.gpu_id();
    let mut c = CLIENTS.lock();
    let pos = c.resets.iter().position(|r| r.0 == gpu_id);
    let seq = match (pos, post) {
        (Some(i), false) => {
            c.resets[i].1 = c.resets[i].1.wrapping_add(1);
            c.resets[i].1
        }
        (Some(i), true) => c.resets[i].1,
        (None, false) => {
            // Without memory the count restarts at 1 next time: better than
            // failing a reset notification.
            let _ = c.resets.push((gpu_id, 1), GFP_ATOMIC);
            1
        }
        (None, true) => 0,
    };
    drop(c);
    let event = if post { logic::GPU_POST_RESET } else { logic::GPU_PRE_RESET };
    add(gpu_id, 0, event, || logic::fmt_gpu_reset(post, seq, cause));
}

/// `THERMAL_THROTTLE`: the GPU driver reports throttling (C:
/// `kgd2kfd_smi_event_throttle` → `kfd_smi_event_update_thermal_throttling`);
/// `counter` is the driver's throttling-interrupt count (upstream asks
/// amdgpu for it, `amdgpu_dpm_get_thermal_throttling_counter`; here the
/// driver passes it).
pub(crate) fn thermal_throttle(dev: &Device, bitmask: u64, counter: u64) {
    add(dev.gpu_id(), 0, logic::THERMAL_THROTTLE, || logic::fmt_thermal_throttle(bitmask, counter));
}

/// `PAGE_FAULT_START`: a GPU retry fault of `owner` on `gpu_id` at byte
/// address `addr`, about to be recovered (C: `kfd_smi_event_page_fault_start`
/// in `svm_range_restore_pages`, with the IH entry's timestamp; rkfd's
/// faults carry none, so the time the handler reached this point).
pub(crate) fn page_fault_start(owner: &Owner, gpu_id: u32, addr: u64, write: bool) {
    add(gpu_id, owner.tgid, logic::PAGE_FAULT_START, || {
        logic::fmt_page_fault_start(now(), owner.pid, pfn(addr), gpu_id, write)
    });
}

/// `PAGE_FAULT_END`: the fault at `addr` was handled, after a migration
/// (`migrated`) or by updating the mapping only (C:
/// `kfd_smi_event_page_fault_end`).
pub(crate) fn page_fault_end(owner: &Owner, gpu_id: u32, addr: u64, migrated: bool) {
    add(gpu_id, owner.tgid, logic::PAGE_FAULT_END, || {
        logic::fmt_page_fault_end(now(), owner.pid, pfn(addr), gpu_id, migrated)
    });
}

/// One SVM migration, as `MIGRATE_START` / `MIGRATE_END` describe it.
pub(crate) struct Migration {
    /// The GPU whose VRAM the pages enter or leave (the event's device).
    pub(crate) gpu_id: u32,
    /// Byte addresses `[start, end)`.
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// gpu_ids, 0 for system memory.
    pub(crate) from: u32,
    pub(crate) to: u32,
    /// The range's PREFETCH_LOC and PREFERRED_LOC (0xffffffff: undefined).
    pub(crate) prefetch_loc: u32,
    pub(crate) preferred_loc: u32,
    /// `KFD_MIGRATE_TRIGGER_*`.
    pub(crate) trigger: u32,
}

impl Migration {
    /// To `gpu_id`'s VRAM from system memory.
    pub(crate) fn to_vram(gpu_id: u32, start: u64, end: u64, locs: (u32, u32), trigger: u32) -> Self {
        Migration { gpu_id, start, end, from: 0, to: gpu_id, prefetch_loc: locs.0, preferred_loc: locs.1, trigger }
    }

    /// From `gpu_id`'s VRAM to system memory.
    pub(crate) fn to_ram(gpu_id: u32, start: u64, end: u64, locs: (u32, u32), trigger: u32) -> Self {
        Migration { gpu_id, start, end, from: gpu_id, to: 0, prefetch_loc: locs.0, preferred_loc: locs.1, trigger }
    }
}

/// Runs migration `f` (which returns the pages it moved) and reports it
/// to `owner`'s clients as `MIGRATE_START` (timestamped before `f` ran) and
/// `MIGRATE_END` with its error code (C: `kfd_smi_event_migration_start` /
/// `_end` around `migrate_vma_*` in `svm_migrate_ram_to_vram` /
/// `svm_migrate_vram_to_ram`).  Only a migration that moved pages or
/// failed is reported: upstream skips ranges already at the destination
/// by their `actual_loc` before migrating, where rkfd's mechanism asks
/// each device and learns from the result that nothing was there.  So
/// both lines are queued after `f` returns (an `UNMAP_FROM_GPU` that the
/// migration's own invalidation caused is queued before them, with a
/// later timestamp than the start).
pub(crate) fn migration(owner: &Owner, m: Migration, f: impl FnOnce() -> Result<u64>) -> Result<u64> {
    let t0 = now();
    let ret = f();
    migrated(owner, &m, t0, ret.as_ref().map(|n| *n).map_err(|e| e.to_errno()));
    ret
}

/// Reports migration `m` that started at `t0` and ended with `ret` (pages
/// moved, or a negative errno), if it moved something or failed.
fn migrated(owner: &Owner, m: &Migration, t0: i64, ret: core::result::Result<u64, i32>) {
    let error_code = match ret {
        Ok(0) => return,
        Ok(_) => 0,
        Err(e) => e,
    };
    let (start, end) = (pfn(m.start), pfn(m.end));
    add(m.gpu_id, owner.tgid, logic::MIGRATE_START, || {
        logic::fmt_migrate_start(
            t0,
            owner.pid,
            start,
            end.wrapping_sub(start),
            m.from,
            m.to,
            m.prefetch_loc,
            m.preferred_loc,
            m.trigger,
        )
    });
    add(m.gpu_id, owner.tgid, logic::MIGRATE_END, || {
        logic::fmt_migrate_end(now(), owner.pid, start, end.wrapping_sub(start), m.from, m.to, m.trigger, error_code)
    });
}

/// A CPU fault brought `[start, end)` back from VRAM to system memory
/// (dev_pagemap `migrate_to_ram`, C: `svm_migrate_to_ram` with
/// `KFD_MIGRATE_TRIGGER_PAGEFAULT_CPU`); `owner` and `gpu_id` are the
/// device page's (its process counters), `t0` when it started, `ret` pages
/// moved or a negative errno.  That path takes no rkfd lock, so the
/// range's prefetch and preferred locations are not known: printed as
/// undefined (ffffffff).
pub(crate) fn migration_cpu_fault(owner: &Owner, gpu_id: u32, start: u64, end: u64, t0: i64, ret: i64) {
    let m = Migration::to_ram(gpu_id, start, end, (UNDEFINED, UNDEFINED), logic::MIGRATE_TRIGGER_PAGEFAULT_CPU);
    let ret = if ret < 0 { Err(ret as i32) } else { Ok(ret as u64) };
    migrated(owner, &m, t0, ret);
}

/// `KFD_IOCTL_SVM_LOCATION_UNDEFINED`.
const UNDEFINED: u32 = 0xffff_ffff;

/// `QUEUE_EVICTION` on each of `gpu_ids`: the process's queues are
/// stopped, for `trigger` (`KFD_QUEUE_EVICTION_TRIGGER_*`) (C:
/// `kfd_smi_event_queue_eviction` per pdd in `kfd_process_evict_queues`).
pub(crate) fn queue_eviction(owner: &Owner, gpu_ids: impl Iterator<Item = u32>, trigger: u32) {
    for gpu_id in gpu_ids {
        add(gpu_id, owner.tgid, logic::QUEUE_EVICTION, || {
            logic::fmt_queue_eviction(now(), owner.pid, gpu_id, trigger)
        });
    }
}

/// `QUEUE_RESTORE` on each of `gpu_ids`: the queues run again (C:
/// `kfd_smi_event_queue_restore` per pdd in `kfd_process_restore_queues`).
pub(crate) fn queue_restore(owner: &Owner, gpu_ids: impl Iterator<Item = u32>) {
    restore_event(owner, gpu_ids, false);
}

/// `QUEUE_RESTORE` with the rescheduled flag (`'R'`) on each of
/// `gpu_ids`: a restore failed and is tried again later (C:
/// `kfd_smi_event_queue_restore_rescheduled`).
pub(crate) fn queue_restore_rescheduled(owner: &Owner, gpu_ids: impl Iterator<Item = u32>) {
    restore_event(owner, gpu_ids, true);
}

/// `QUEUE_RESTORE` on each of `gpu_ids`, with the `'R'` flag if
/// `rescheduled` (C: `KFD_EVENT_FMT_QUEUE_RESTORE`).
fn restore_event(owner: &Owner, gpu_ids: impl Iterator<Item = u32>, rescheduled: bool) {
    for gpu_id in gpu_ids {
        add(gpu_id, owner.tgid, logic::QUEUE_RESTORE, || {
            logic::fmt_queue_restore(now(), owner.pid, gpu_id, rescheduled)
        });
    }
}

/// An MMU-notifier invalidation of `owner`'s SVM memory `[start, end)`
/// unmapped it from `gpu_id` (`munmap`: the memory is freed; `migrate`:
/// `MMU_NOTIFY_MIGRATE`): `UNMAP_FROM_GPU` with upstream's trigger, or
/// nothing with XNACK off unless it is a `munmap` (upstream evicts the
/// queues there instead: `crate::queue::evict_process`).
pub(crate) fn svm_invalidated(owner: &Owner, gpu_id: u32, start: u64, end: u64, munmap: bool, migrate: bool, xnack_on: bool) {
    if let Some(trigger) = logic::unmap_trigger(munmap, migrate, xnack_on) {
        unmap_from_gpu(owner, gpu_id, start, end, trigger);
    }
}

/// `KFD_QUEUE_EVICTION_TRIGGER_SVM`: an XNACK-off invalidation evicted
/// the queues (C: `kgd2kfd_quiesce_mm(mm, KFD_QUEUE_EVICTION_TRIGGER_SVM)`).
pub(crate) const QUEUE_EVICTION_TRIGGER_SVM: u32 = logic::QUEUE_EVICTION_TRIGGER_SVM;

/// `KFD_QUEUE_EVICTION_TRIGGER_SUSPEND`: a suspend or a GPU reset evicted
/// every process's queues (C: `kfd_suspend_all_processes`).
pub(crate) const QUEUE_EVICTION_TRIGGER_SUSPEND: u32 = logic::QUEUE_EVICTION_TRIGGER_SUSPEND;

/// `KFD_QUEUE_EVICTION_TRIGGER_TTM`: the GPU driver moves the process's
/// memory (C: `evict_process_worker`, `crate::eviction`).
pub(crate) const QUEUE_EVICTION_TRIGGER_TTM: u32 = logic::QUEUE_EVICTION_TRIGGER_TTM;

/// `UNMAP_FROM_GPU`: bytes `[start, end)` were unmapped from `gpu_id`, for
/// `trigger` (`KFD_SVM_UNMAP_TRIGGER_*`) (C: `kfd_smi_event_unmap_from_gpu`
/// in `svm_range_unmap_from_gpus`; printed as first page and page count).
pub(crate) fn unmap_from_gpu(owner: &Owner, gpu_id: u32, start: u64, end: u64, trigger: u32) {
    if end <= start {
        return;
    }
    add(gpu_id, owner.tgid, logic::UNMAP_FROM_GPU, || {
        logic::fmt_unmap_from_gpu(now(), owner.pid, pfn(start), pfn(end - 1) - pfn(start) + 1, gpu_id, trigger)
    });
}

#[kunit_tests(rkfd_smi)]
mod tests {
    use super::*;

    #[test]
    fn lines_match_upstream_formats() {
        let l = logic::fmt_process(logic::PROCESS_START, 0x2a, b"init\0\0");
        assert_eq!(l.as_bytes(), b"c 2a init\n");
        let l = logic::fmt_queue_restore(1, 2, 0x10, true);
        assert_eq!(l.as_bytes(), b"a 1 -2 10 R\n");
    }

    #[test]
    fn no_client_means_no_work() {
        // With no client, `add` must not even format the line.
        if CLIENTS.lock().list.is_empty() {
            add(1, 1, logic::PROCESS_START, || panic!("formatted without a client"));
        }
    }
}
