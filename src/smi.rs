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
//! # Producers
//!
//! rkfd emits `PROCESS_START` when a process binds a GPU VM
//! (`ACQUIRE_VM`, upstream `kfd_process_device_init_vm`) and `PROCESS_END`
//! when it gives the VM back at teardown (upstream
//! `kfd_process_destroy_pdds`).  The other events belong to subsystems that
//! are being built; they call the `event_*` functions below at the points
//! upstream does (named in each function's comment).  The pid printed is
//! the lead thread's, in hex for process/VM-fault events and in the
//! process's own pid namespace for the others, as upstream.
//!
//! # Context and locks
//!
//! Every `event_*` function may be called from any context that may take a
//! spinlock (process context, work items, softirq; not hard-IRQ), with any
//! rkfd lock held: it takes only [`CLIENTS`] and then a client's fifo lock
//! (both leaves, in that order), allocates nothing, and does nothing but a
//! lock and a test when no client exists.

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

/// Global thread group id (for matching clients) and the pid to print: the
/// lead thread's tgid in its own pid namespace (C: `kfd_smi_task_tgid`,
/// `kfd_smi_task_to_pid`).
fn pids(process: &Process) -> (i32, i32) {
    let lead: &Task = process.lead_thread();
    let ns = lead.get_pid_ns();
    (process.pid(), lead.tgid_nr_ns(ns.as_deref()))
}

fn now() -> i64 {
    kabi::time::boottime_ns() as i64
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

/// `VMFAULT`: a GPU VM fault of `process` on `dev` (C:
/// `kfd_smi_event_update_vmfault`, called from the interrupt work of a
/// VM-fault IH entry).
#[allow(dead_code)] // Producer: the interrupt handler (issue of queues/faults).
pub(crate) fn event_vmfault(dev: &Device, process: &Process) {
    let lead = process.lead_thread();
    add(dev.gpu_id(), process.pid(), logic::VMFAULT, || {
        logic::fmt_vmfault(lead.pid(), &file::task_comm(lead))
    });
}

/// `GPU_PRE_RESET` (`post == false`, increments the GPU's reset sequence
/// number) / `GPU_POST_RESET`, seen by every client of `dev` that asked
/// (C: `kfd_smi_event_update_gpu_reset`, from `kgd2kfd_pre_reset` /
/// `kgd2kfd_post_reset`).  `cause` as `amdgpu_reset_get_desc`, may be "".
#[allow(dead_code)] // Producer: GPU reset handling.
pub(crate) fn event_gpu_reset(dev: &Device, post: bool, cause: &str) {
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

/// `THERMAL_THROTTLE` (C: `kfd_smi_event_update_thermal_throttling`): the
/// throttle bitmask and the GPU's throttling counter.
#[allow(dead_code)] // Producer: a GPU driver's thermal interrupt.
pub(crate) fn event_thermal_throttle(dev: &Device, bitmask: u64, counter: u64) {
    add(dev.gpu_id(), 0, logic::THERMAL_THROTTLE, || {
        logic::Line::new(logic::THERMAL_THROTTLE, format_args!("{:x}:{:x}\n", bitmask, counter))
    });
}

/// `PAGE_FAULT_START`: a GPU retry fault of `process` at page `addr`
/// (C: `kfd_smi_event_page_fault_start`, `svm_range_restore_pages`);
/// `ts_ns` is the fault's boot-time timestamp.
#[allow(dead_code)] // Producer: SVM fault handling.
pub(crate) fn event_page_fault_start(dev: &Device, process: &Process, addr: u64, write: bool, ts_ns: i64) {
    let (tgid, pid) = pids(process);
    let node = dev.gpu_id();
    add(node, tgid, logic::PAGE_FAULT_START, || {
        logic::fmt_page_fault_start(ts_ns, pid, addr, node, write)
    });
}

/// `PAGE_FAULT_END`: the fault at page `addr` was recovered, by migration
/// (`migrated`) or by updating the mapping (C: `kfd_smi_event_page_fault_end`).
#[allow(dead_code)] // Producer: SVM fault handling.
pub(crate) fn event_page_fault_end(dev: &Device, process: &Process, addr: u64, migrated: bool) {
    let (tgid, pid) = pids(process);
    let node = dev.gpu_id();
    add(node, tgid, logic::PAGE_FAULT_END, || {
        logic::fmt_page_fault_end(now(), pid, addr, node, migrated)
    });
}

/// `MIGRATE_START`: pages `start..end` move `from` → `to` (gpu_ids, 0 for
/// system memory); `trigger` is a `KFD_MIGRATE_TRIGGER_*` (C:
/// `kfd_smi_event_migration_start`, `svm_migrate_ram_to_vram` etc.).
#[allow(dead_code, clippy::too_many_arguments)] // Producer: SVM migration.
pub(crate) fn event_migration_start(
    dev: &Device,
    process: &Process,
    start: u64,
    end: u64,
    from: u32,
    to: u32,
    prefetch_loc: u32,
    preferred_loc: u32,
    trigger: u32,
) {
    let (tgid, pid) = pids(process);
    add(dev.gpu_id(), tgid, logic::MIGRATE_START, || {
        logic::fmt_migrate_start(
            now(),
            pid,
            start,
            end.wrapping_sub(start),
            from,
            to,
            prefetch_loc,
            preferred_loc,
            trigger,
        )
    });
}

/// `MIGRATE_END`: as [`event_migration_start`], with the migration's
/// error code (0 on success) (C: `kfd_smi_event_migration_end`).
#[allow(dead_code, clippy::too_many_arguments)] // Producer: SVM migration.
pub(crate) fn event_migration_end(
    dev: &Device,
    process: &Process,
    start: u64,
    end: u64,
    from: u32,
    to: u32,
    trigger: u32,
    error_code: i32,
) {
    let (tgid, pid) = pids(process);
    add(dev.gpu_id(), tgid, logic::MIGRATE_END, || {
        logic::fmt_migrate_end(now(), pid, start, end.wrapping_sub(start), from, to, trigger, error_code)
    });
}

/// `QUEUE_EVICTION`: the process's queues on `dev` are evicted;
/// `trigger` is a `KFD_QUEUE_EVICTION_TRIGGER_*` (C:
/// `kfd_smi_event_queue_eviction`, `kfd_process_evict_queues`).
#[allow(dead_code)] // Producer: queue eviction.
pub(crate) fn event_queue_eviction(dev: &Device, process: &Process, trigger: u32) {
    let (tgid, pid) = pids(process);
    let node = dev.gpu_id();
    add(node, tgid, logic::QUEUE_EVICTION, || {
        logic::fmt_queue_eviction(now(), pid, node, trigger)
    });
}

/// `QUEUE_RESTORE`: the queues are back (`rescheduled`: the restore failed
/// and was rescheduled) (C: `kfd_smi_event_queue_restore`,
/// `kfd_smi_event_queue_restore_rescheduled`).
#[allow(dead_code)] // Producer: queue restore.
pub(crate) fn event_queue_restore(dev: &Device, process: &Process, rescheduled: bool) {
    let (tgid, pid) = pids(process);
    let node = dev.gpu_id();
    add(node, tgid, logic::QUEUE_RESTORE, || {
        logic::fmt_queue_restore(now(), pid, node, rescheduled)
    });
}

/// `UNMAP_FROM_GPU`: pages `addr..=last` were unmapped from `dev`;
/// `trigger` is a `KFD_SVM_UNMAP_TRIGGER_*` (C:
/// `kfd_smi_event_unmap_from_gpu`, `svm_range_unmap_from_gpus`).
#[allow(dead_code)] // Producer: SVM.
pub(crate) fn event_unmap_from_gpu(dev: &Device, process: &Process, addr: u64, last: u64, trigger: u32) {
    let (tgid, pid) = pids(process);
    let node = dev.gpu_id();
    add(node, tgid, logic::UNMAP_FROM_GPU, || {
        logic::fmt_unmap_from_gpu(now(), pid, addr, last.wrapping_sub(addr).wrapping_add(1), node, trigger)
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
