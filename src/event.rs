// SPDX-License-Identifier: GPL-2.0

//! KFD events: per-process events, the signal page and `WAIT_EVENTS`.
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_events.c`, `kfd_events.h`, and the
//! event ioctls of `kfd_chardev.c` (`kfd_ioctl_create_event`, `..._destroy_event`,
//! `..._set_event`, `..._reset_event`, `..._wait_events`).
//!
//! An event is a per-process object that user space waits on with
//! `WAIT_EVENTS`.  Signal (and debug) events own a slot of the process's
//! signal page, and their id is the slot index; the GPU signals them by
//! writing the slot and raising an interrupt ([`Events::signal_from_interrupt`]),
//! the CPU by `SET_EVENT`.  Memory and hardware-exception events are set by
//! the kernel on GPU faults and resets, with data that `WAIT_EVENTS` copies
//! out.  `SET_EVENT` activates *every* current waiter; an auto-reset event
//! stays unsignalled when it woke someone and latches otherwise, until a
//! waiter consumes it.  ROCr relies on both (`hsa_queue_destroy` has two
//! threads waiting on one auto-reset event).
//!
//! # Design
//!
//! - One [`Events`] per process, pin-initialised inside it.  All mutable
//!   state is in [`Events::inner`]: the events by id, the signal page and the
//!   counters.  Sleeping waiters wait on the one condition variable
//!   [`Events::wait`]; whoever sets or destroys an event wakes them all and
//!   each re-tests its own condition.
//! - The state machine (signalled, auto-reset, age, waiters, the wait
//!   condition, what is copied out) is [`state`], a pure file shared with the
//!   host crate `rust/kfd-logic`, where it is tested against a transcription
//!   of the C code.  A waiter records its event's set count instead of being
//!   linked into a per-event wait queue, so a waiter never points into an
//!   event: a destroyed event just disappears from the table, and its waiters
//!   see it gone (C: `waiter->event == NULL`).
//! - `WAIT_EVENTS` copies the whole user array in before taking the lock and
//!   copies results out after dropping it.
//!
//! # Locking
//!
//! Lock order: see the crate root (`src/rkfd_main.rs`).
//!
//! `Events::inner` (a spinlock) is a leaf: while it is held nothing is
//! allocated, no user memory is touched and no caller-supplied code runs.
//! Only the condition variable's own wait-queue lock nests inside it.  So
//! every method except [`Events::wait`]/[`Events::wait_on`] may be called
//! with other (sleeping or spinning) locks held, from process context (the
//! lock does not disable interrupts: not from hard-IRQ context — upstream
//! signals from its interrupt workqueue too).  `create` calls its page-mapping
//! closure with no events lock held.  `wait`/`wait_on` sleep: call them with
//! no lock held.
//!
//! `Process::inner` (upstream `p->mutex`) is held around it in three places:
//! `CREATE_EVENT` holds the process mutex across the signal
//! page registration (as upstream around `kfd_kmap_event_page`),
//! `FREE_MEMORY_OF_GPU` reads [`Events::signal_page_handle`] under it, and
//! process teardown calls [`Events::teardown`] under it before it frees the
//! memory objects.
//!
//! # Costs
//!
//! - A set that finds queued waiters wakes every sleeping waiter of the
//!   process, and each re-tests its own events (a tree lookup per event it
//!   waits on).  That is cheap for ROCr's waits on one or two events; a wait
//!   on thousands of events costs more per wake-up than upstream's
//!   per-waiter flags.
//! - Taking a signal id walks the ids in use from 1 to the first gap, under
//!   the spinlock (at most 4095 of them; upstream's IDR is logarithmic).
//!
//! # Deviations from the C code (all on error or racy paths)
//!
//! - A user-space fault while reading the `WAIT_EVENTS` array fails the
//!   wait before any waiter is set up (C sets up and, for auto-reset events,
//!   consumes the events before the faulting entry).
//! - Destroying an event fails *every* wait on it; C fails only waits still
//!   queued on it and leaves the others with a dangling pointer.
//! - A fatal signal ends a wait with `-ERESTARTSYS`, not `-EINTR` (the Rust
//!   task API has no `fatal_signal_pending`); the task dies either way.
//! - Signal ids are capped below `KFD_FIRST_NONSIGNAL_EVENT_ID` however big
//!   the signal page (C would need an 8 GiB page to get there).

use crate::kabi::log::{kfd_err, kfd_warn};
use kernel::{
    alloc::KVVec,
    current,
    new_condvar,
    new_spinlock,
    prelude::*,
    rbtree::{CursorMut, Entry, RBTree, RBTreeNodeReservation},
    sync::{CondVar, CondVarTimeoutResult, SpinLock},
    time::{self, Jiffies},
    uaccess::UserSlice, //
};

use crate::uapi::{
    kfd_event_data,
    kfd_hsa_hw_exception_data,
    kfd_hsa_memory_exception_data,
    kfd_ioctl_create_event_args,
    kfd_ioctl_wait_events_args, //
};

mod page;

pub(crate) use page::SignalPage;

/// The pure event state machine, shared with the host crate `kfd-logic`.
#[path = "../rust/kfd-logic/src/event_state.rs"]
#[allow(
    unreachable_pub,
    dead_code,
    reason = "a file shared with a host crate: `pub` items, accessors for its tests"
)]
mod state;

use state::{CopyOut, EventState, EventTable, HasState, Kind, WaitResult, Waiter};

/// `mmap` type reported for signal events in `event_page_offset` (C:
/// `KFD_MMAP_TYPE_EVENTS`, `0x2 << KFD_MMAP_TYPE_SHIFT`).  Upstream no
/// longer maps anything at this offset; user space only tests it for 0.
pub(crate) const KFD_MMAP_TYPE_EVENTS: u64 = 0x2 << 62;

// The shared file's constants are the UAPI's.
const _: () = {
    use crate::uapi;
    assert!(state::SIGNAL_EVENT_LIMIT == uapi::KFD_SIGNAL_EVENT_LIMIT);
    assert!(state::EVENT_TYPE_SIGNAL == uapi::KFD_IOC_EVENT_SIGNAL);
    assert!(state::EVENT_TYPE_HW_EXCEPTION == uapi::KFD_IOC_EVENT_HW_EXCEPTION);
    assert!(state::EVENT_TYPE_DEBUG == uapi::KFD_IOC_EVENT_DEBUG_EVENT);
    assert!(state::EVENT_TYPE_MEMORY == uapi::KFD_IOC_EVENT_MEMORY);
    assert!(WaitResult::Complete.to_raw() == uapi::KFD_IOC_WAIT_RESULT_COMPLETE);
    assert!(WaitResult::Timeout.to_raw() == uapi::KFD_IOC_WAIT_RESULT_TIMEOUT);
    assert!(WaitResult::Fail.to_raw() == uapi::KFD_IOC_WAIT_RESULT_FAIL);
};

/// One event (C: `struct kfd_event`).
struct Event {
    /// Signal state, age and waiter bookkeeping.
    state: EventState,
    /// Data of the last memory exception (MEMORY events; C: the union's
    /// `memory_exception_data`).
    memory: kfd_hsa_memory_exception_data,
    /// Data of the last hardware exception (HW_EXCEPTION events; C: the
    /// union's `hw_exception_data`).
    hw: kfd_hsa_hw_exception_data,
}

impl HasState for Event {
    fn state(&self) -> &EventState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut EventState {
        &mut self.state
    }
}

/// The state behind [`Events::inner`].
struct Inner {
    /// The events by id (C: `p->event_idr`; id 0 is never used).
    events: RBTree<u32, Event>,
    /// The signal page, once registered (C: `p->signal_page`).
    page: Option<SignalPage>,
    /// The user's handle of the signal page buffer (C: `p->signal_handle`).
    signal_handle: u64,
    /// Slot-backed events plus the reserved id 0 (C: `p->signal_event_count`,
    /// starts at 1).
    signal_event_count: u32,
    /// The "limit reached" message was printed (C:
    /// `p->signal_event_limit_reached`).
    signal_event_limit_reached: bool,
    /// Serial of the last event created.
    last_serial: u64,
}

impl EventTable for Inner {
    type Event = Event;

    fn get(&self, id: u32) -> Option<&Event> {
        self.events.get(&id)
    }

    fn get_mut(&mut self, id: u32) -> Option<&mut Event> {
        self.events.get_mut(&id)
    }
}

/// The ids of `events` from `start` on, in ascending order.
fn ids_from(events: &mut RBTree<u32, Event>, start: u32) -> impl Iterator<Item = u32> + '_ {
    let mut cursor: Option<CursorMut<'_, u32, Event>> = events.cursor_lower_bound_mut(&start);
    core::iter::from_fn(move || {
        let c = cursor.take()?;
        let id = *c.current().0;
        cursor = c.move_next();
        Some(id)
    })
}

impl Inner {
    /// Takes a free signal slot and id (C: `create_signal_event` and
    /// `allocate_event_notification_slot`).
    fn alloc_signal_id(&mut self) -> Result<u32> {
        let slots = self.page.as_ref().map_or(0, |p| {
            state::signal_slots(u64::try_from(p.size()).unwrap_or(u64::MAX))
        });
        if slots != 0 && self.signal_event_count >= slots {
            if !self.signal_event_limit_reached {
                pr_debug!("Signal event wasn't created because limit was reached\n");
                self.signal_event_limit_reached = true;
            }
            return Err(ENOSPC);
        }
        let id = self.page.as_ref().ok_or(ENOMEM).and_then(|_| {
            state::lowest_free_id(
                ids_from(&mut self.events, state::FIRST_SIGNAL_EVENT_ID),
                state::FIRST_SIGNAL_EVENT_ID,
                slots.saturating_sub(1),
            )
            .ok_or(ENOSPC)
        });
        let id =
            id.inspect_err(|_| kfd_warn!("Failed to create signal event notification slot\n"))?;
        if let Some(page) = &self.page {
            page.write(id, state::UNSIGNALED_EVENT_SLOT);
        }
        Ok(id)
    }

    /// Takes an id for an event without a slot (C: `create_other_event`).
    fn alloc_other_id(&mut self) -> Result<u32> {
        state::lowest_free_id(
            ids_from(&mut self.events, state::FIRST_NONSIGNAL_EVENT_ID),
            state::FIRST_NONSIGNAL_EVENT_ID,
            state::LAST_NONSIGNAL_EVENT_ID,
        )
        .ok_or(ENOSPC)
    }

    /// Sets every event of `kind`, after `update` stored its data.  Returns
    /// how many were set and whether a waiter must be woken.
    fn set_all(&mut self, kind: Kind, mut update: impl FnMut(&mut Event)) -> (usize, bool) {
        let mut count = 0;
        let mut wake = false;
        for (_, ev) in self.events.iter_mut() {
            if ev.state.kind() == kind {
                update(ev);
                wake |= ev.state.set();
                count += 1;
            }
        }
        (count, wake)
    }
}

/// A GPU VM fault, as the interrupt handler decodes it (C:
/// `struct kfd_vm_fault_info`).
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(
    not(CONFIG_KUNIT),
    allow(dead_code, reason = "for the GPU interrupt handlers; tested by KUnit")
)]
pub(crate) struct VmFault {
    /// Faulting page number.
    pub(crate) page_addr: u64,
    /// The page was valid (protection fault, not a missing page).
    pub(crate) prot_valid: bool,
    /// The access was a write.
    pub(crate) prot_write: bool,
    /// The access was an instruction fetch.
    pub(crate) prot_exec: bool,
}

/// Builds the memory exception data of a GPU VM fault (C: the `!data` branch
/// of `kfd_signal_vm_fault_event`; SOC15 interrupt handlers pass their own
/// data instead).
#[cfg_attr(
    not(CONFIG_KUNIT),
    allow(dead_code, reason = "for the GPU interrupt handlers; tested by KUnit")
)]
pub(crate) fn vm_fault_data(
    user_gpu_id: u32,
    fault: Option<&VmFault>,
) -> kfd_hsa_memory_exception_data {
    let mut data = kfd_hsa_memory_exception_data {
        gpu_id: user_gpu_id,
        ..Default::default()
    };
    data.failure.imprecise = 1;
    if let Some(f) = fault {
        data.va = f.page_addr << kernel::page::PAGE_SHIFT;
        data.failure.NotPresent = u32::from(f.prot_valid);
        data.failure.NoExecute = u32::from(f.prot_exec);
        data.failure.ReadOnly = u32::from(f.prot_write);
        data.failure.imprecise = 0;
    }
    data
}

/// `kgd2kfd_signal_userptr_fault` (C: `kfd_lookup_process_by_pid` +
/// `kfd_signal_vm_fault_event_with_userptr`, which amdgpu's userptr
/// restore worker calls with `debug_vm_userptr` when the process unmapped
/// a userptr object's memory before freeing the object): on each GPU of
/// the process of thread group `tgid` its queues are evicted
/// (`kfd_evict_process_device`; they stay evicted) and its MEMORY events
/// are set with `va`, the GPU's gpu_id and `failure.NotPresent` (each GPU
/// in turn, so a waiter sees the last GPU's).  Nothing without such a
/// process.  Takes `Process::inner` (with no rkfd lock held), then the
/// process's events lock.
pub(crate) fn signal_vm_fault_with_userptr(tgid: i32, va: u64) {
    let Some(p) = crate::process::find_by_pid(tgid) else { return };
    let events = &p.events;
    let r = crate::queue::evict_process_devices(&p, |gpu_id| {
        let mut data = kfd_hsa_memory_exception_data { gpu_id, va, ..Default::default() };
        data.failure.NotPresent = 1;
        events.signal_memory_exception(&data);
    });
    if let Err(e) = r {
        kfd_warn!("pid {}: evicting queues for a userptr fault failed: {:?}\n", tgid, e);
    }
}

/// What a completed wait copies back into one `kfd_event_data` entry.
#[derive(Clone, Copy)]
pub(crate) enum Output {
    /// `memory_exception_data` (32 bytes).
    Memory(kfd_hsa_memory_exception_data),
    /// `hw_exception_data` (16 bytes, at the same offset).
    Hw(kfd_hsa_hw_exception_data),
    /// `signal_event_data.last_event_age` (8 bytes, at the same offset).
    Age(u64),
}

/// Bytes of a `kfd_event_data` entry.
const EVENT_DATA_SIZE: usize = core::mem::size_of::<kfd_event_data>();
/// Offset of `event_id` in a `kfd_event_data` entry.
const EVENT_ID_OFFSET: usize = core::mem::offset_of!(kfd_event_data, event_id);

// The layout the byte-level copies below rely on (checked against the C
// header by scripts/abi-check too).
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(EVENT_DATA_SIZE == 48);
    assert!(EVENT_ID_OFFSET == 40);
    assert!(offset_of!(kfd_event_data, __bindgen_anon_1) == 0);
    assert!(size_of::<kfd_hsa_memory_exception_data>() == 32);
    assert!(offset_of!(kfd_hsa_memory_exception_data, va) == 16);
    assert!(offset_of!(kfd_hsa_memory_exception_data, gpu_id) == 24);
    assert!(offset_of!(kfd_hsa_memory_exception_data, ErrorType) == 28);
    assert!(size_of::<kfd_hsa_hw_exception_data>() == 16);
};

impl Output {
    /// Encodes the data as user space sees it; returns the bytes to copy.
    pub(crate) fn encode<'a>(&self, buf: &'a mut [u8; 32]) -> &'a [u8] {
        fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
            if let Some(dst) = buf.get_mut(at..at + bytes.len()) {
                dst.copy_from_slice(bytes);
            }
        }
        let len = match self {
            Output::Memory(d) => {
                put(buf, 0, &d.failure.NotPresent.to_ne_bytes());
                put(buf, 4, &d.failure.ReadOnly.to_ne_bytes());
                put(buf, 8, &d.failure.NoExecute.to_ne_bytes());
                put(buf, 12, &d.failure.imprecise.to_ne_bytes());
                put(buf, 16, &d.va.to_ne_bytes());
                put(buf, 24, &d.gpu_id.to_ne_bytes());
                put(buf, 28, &d.ErrorType.to_ne_bytes());
                32
            }
            Output::Hw(d) => {
                put(buf, 0, &d.reset_type.to_ne_bytes());
                put(buf, 4, &d.reset_cause.to_ne_bytes());
                put(buf, 8, &d.memory_lost.to_ne_bytes());
                put(buf, 12, &d.gpu_id.to_ne_bytes());
                16
            }
            Output::Age(age) => {
                put(buf, 0, &age.to_ne_bytes());
                8
            }
        };
        &buf[..len]
    }
}

/// One entry of a wait: what the caller asked for, the waiter, and what to
/// copy back.
pub(crate) struct WaitEntry {
    /// The event waited for.
    event_id: u32,
    /// The caller's `last_event_age` (0: none).
    last_event_age: u64,
    /// The waiter, once set up.
    waiter: Waiter,
    /// What a completed wait copies back into this entry.
    output: Option<Output>,
}

impl AsRef<Waiter> for WaitEntry {
    fn as_ref(&self) -> &Waiter {
        &self.waiter
    }
}

impl WaitEntry {
    /// An entry waiting for `event_id`, with `last_event_age` (0: none).
    pub(crate) fn new(event_id: u32, last_event_age: u64) -> Self {
        Self {
            event_id,
            last_event_age,
            waiter: Waiter::default(),
            output: None,
        }
    }

    /// Parses one user `kfd_event_data` (`EVENT_DATA_SIZE` bytes).
    fn parse(bytes: &[u8]) -> Result<Self> {
        let age = bytes
            .get(0..8)
            .and_then(|b| b.try_into().ok())
            .ok_or(EINVAL)?;
        let id = bytes
            .get(EVENT_ID_OFFSET..EVENT_ID_OFFSET + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or(EINVAL)?;
        Ok(Self::new(u32::from_ne_bytes(id), u64::from_ne_bytes(age)))
    }

    /// What a completed wait copies back into this entry.
    #[cfg_attr(
        not(CONFIG_KUNIT),
        allow(dead_code, reason = "used by the KUnit tests")
    )]
    pub(crate) fn output(&self) -> Option<Output> {
        self.output
    }
}

/// A process's events (C: the `event_*`/`signal_*` fields of
/// `struct kfd_process`).
///
/// Dropping it frees every event and the signal page.  A thread in
/// [`Events::wait`] borrows it, so it cannot be dropped under a waiter; to
/// fail waiters and release the page early, see [`Events::teardown`].
#[pin_data]
pub(crate) struct Events {
    /// Events, signal page and counters.  Lock order: a leaf, taken under
    /// `Process::inner` and by the interrupt path.
    #[pin]
    inner: SpinLock<Inner>,
    /// Where waiting threads sleep; notified whenever an event with queued
    /// waiters is set and whenever an event is destroyed.
    #[pin]
    wait: CondVar,
}

impl Events {
    /// The events of a new process: none, no signal page, id 0 reserved
    /// (C: `kfd_event_init_process`).
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            inner <- new_spinlock!(
                Inner {
                    events: RBTree::new(),
                    page: None,
                    signal_handle: 0,
                    signal_event_count: 1,
                    signal_event_limit_reached: false,
                    last_serial: 0,
                },
                "Events::inner"
            ),
            wait <- new_condvar!("Events::wait"),
        })
    }

    /// CREATE_EVENT (C: `kfd_ioctl_create_event`, `kfd_event_create`).
    ///
    /// A non-zero `event_page_offset` is the handle of the user's signal page
    /// buffer: if no page is registered yet, `map_page(handle)` maps it (it
    /// may sleep; no events lock is held) and the page is registered with
    /// all slots unsignalled.  A second registration, or a page smaller than
    /// `KFD_SIGNAL_EVENT_LIMIT` slots, is `-EINVAL`.
    ///
    /// Then the event is created: `event_id` and `event_trigger_data` are its
    /// id; signal and debug events take the lowest free slot id (`-ENOMEM`
    /// without a signal page, `-ENOSPC` when full) and report
    /// `event_slot_index` = id and `event_page_offset` =
    /// [`KFD_MMAP_TYPE_EVENTS`]; other events get ids from
    /// `KFD_FIRST_NONSIGNAL_EVENT_ID` on and `event_page_offset` = 0.
    pub(crate) fn create(
        &self,
        args: &mut kfd_ioctl_create_event_args,
        map_page: impl FnOnce(u64) -> Result<SignalPage>,
    ) -> Result {
        if args.event_page_offset != 0 {
            self.register_page(args.event_page_offset, map_page)?;
        }

        let kind = Kind::from_type(args.event_type);
        let reservation = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let mut guard = self.inner.lock();
        let inner = &mut *guard;

        args.event_page_offset = 0;
        let id = if kind.has_slot() {
            inner.alloc_signal_id()?
        } else {
            inner.alloc_other_id()?
        };
        inner.last_serial = inner.last_serial.wrapping_add(1);
        let event = Event {
            state: EventState::new(kind, args.auto_reset != 0, inner.last_serial),
            memory: Default::default(),
            hw: Default::default(),
        };
        match inner.events.entry(id) {
            Entry::Vacant(slot) => {
                slot.insert(event, reservation);
            }
            // Not reachable: the id was free.
            Entry::Occupied(_) => return Err(EEXIST),
        }
        if kind.has_slot() {
            inner.signal_event_count = inner.signal_event_count.saturating_add(1);
            args.event_page_offset = KFD_MMAP_TYPE_EVENTS;
            args.event_slot_index = id;
        }
        args.event_id = id;
        args.event_trigger_data = id;
        Ok(())
    }

    /// Registers the signal page (C: `kfd_kmap_event_page`, `kfd_event_page_set`).
    fn register_page(
        &self,
        handle: u64,
        map_page: impl FnOnce(u64) -> Result<SignalPage>,
    ) -> Result {
        if self.inner.lock().page.is_some() {
            kfd_err!("Event page is already set\n");
            return Err(EINVAL);
        }
        let page = map_page(handle)?;
        let min = state::SIGNAL_EVENT_LIMIT as usize * 8;
        if page.size() < min {
            kfd_err!(
                "Event page size {} is too small, need at least {} bytes\n",
                page.size(),
                min
            );
            kfd_err!("Failed to set event page\n");
            return Err(EINVAL);
        }

        let mut inner = self.inner.lock();
        if inner.page.is_some() {
            // Lost a race with another CREATE_EVENT; `page` is unmapped on drop.
            drop(inner);
            kfd_err!("Event page is already set\n");
            return Err(EINVAL);
        }
        // Initialise all events to unsignalled.
        page.clear(state::SIGNAL_EVENT_LIMIT as usize);
        inner.page = Some(page);
        inner.signal_handle = handle;
        Ok(())
    }

    /// The handle of the registered signal page buffer, if any: freeing that
    /// buffer must fail with `-EPERM` (C: `kfd_ioctl_free_memory_of_gpu`
    /// checks `p->signal_handle`).
    pub(crate) fn signal_page_handle(&self) -> Option<u64> {
        let inner = self.inner.lock();
        inner.page.as_ref().map(|_| inner.signal_handle)
    }

    /// DESTROY_EVENT (C: `kfd_event_destroy`): `-EINVAL` for an unknown id.
    /// Waits on the event fail (`KFD_IOC_WAIT_RESULT_FAIL`, `-EIO`).
    pub(crate) fn destroy(&self, id: u32) -> Result {
        let mut inner = self.inner.lock();
        let event = inner.events.remove(&id).ok_or(EINVAL)?;
        if event.state.kind().has_slot() {
            inner.signal_event_count = inner.signal_event_count.saturating_sub(1);
        }
        drop(inner);
        // Wake up pending waiters; they will return failure.
        self.wait.notify_all();
        Ok(())
    }

    /// Process teardown (C: `kfd_process_kunmap_signal_bo` +
    /// `kfd_event_free_process`): destroys every event, failing any waiter,
    /// and unregisters the signal page, which is dropped before this returns.
    /// Call it before freeing the page's memory object.  The events are then
    /// as new: a later `CREATE_EVENT` may register a page again.
    pub(crate) fn teardown(&self) {
        let mut inner = self.inner.lock();
        let events = core::mem::replace(&mut inner.events, RBTree::new());
        let page = inner.page.take();
        inner.signal_handle = 0;
        inner.signal_event_count = 1;
        inner.signal_event_limit_reached = false;
        drop(inner);
        self.wait.notify_all();
        drop(events);
        drop(page);
    }

    /// Applies `f` to event `id` under the lock, waking waiters if `f` says so.
    fn with_event(&self, id: u32, f: impl FnOnce(&mut Event) -> Result<bool>) -> Result {
        let mut inner = self.inner.lock();
        let event = inner.events.get_mut(&id).ok_or(EINVAL)?;
        let wake = f(event)?;
        drop(inner);
        if wake {
            self.wait.notify_all();
        }
        Ok(())
    }

    /// SET_EVENT (C: `kfd_set_event`): signal events only (else `-EINVAL`,
    /// as for an unknown id).  Activates every waiter of the event; an
    /// auto-reset event with waiters stays unsignalled.
    pub(crate) fn set(&self, id: u32) -> Result {
        self.with_event(id, |ev| {
            if !ev.state.kind().can_cpu_signal() {
                return Err(EINVAL);
            }
            Ok(ev.state.set())
        })
    }

    /// RESET_EVENT (C: `kfd_reset_event`): signal events only (else `-EINVAL`).
    pub(crate) fn reset(&self, id: u32) -> Result {
        self.with_event(id, |ev| {
            if !ev.state.kind().can_cpu_signal() {
                return Err(EINVAL);
            }
            ev.state.reset();
            Ok(false)
        })
    }

    /// A signal interrupt of this process (C: `kfd_signal_event_interrupt`
    /// after the pasid lookup).
    ///
    /// `valid_id_bits` of `partial_id` name the event; the event found with a
    /// signalled slot has its slot reset to unsignalled and is set.  If the
    /// id does not lead to one, every slot is scanned and each signalled
    /// slot-backed event is acknowledged and set.  `mailbox_updated`: the
    /// firmware updates the slot before the interrupt, so an unsignalled slot
    /// means no signal.  Nothing happens without a signal page.
    #[cfg_attr(
        not(CONFIG_KUNIT),
        allow(dead_code, reason = "for the GPU interrupt handlers; tested by KUnit")
    )]
    pub(crate) fn signal_from_interrupt(
        &self,
        partial_id: u32,
        valid_id_bits: u32,
        mailbox_updated: bool,
    ) {
        let mut guard = self.inner.lock();
        let Inner { events, page, .. } = &mut *guard;
        let Some(page) = page.as_ref() else {
            return;
        };
        let found = if valid_id_bits != 0 {
            state::lookup_signaled_by_partial_id(
                partial_id,
                valid_id_bits,
                mailbox_updated,
                |id| page.is_signaled(id),
                |id| events.get(&id).is_some(),
            )
        } else {
            None
        };

        // C: set_event_from_interrupt.
        let set_from_interrupt = |id: u32, ev: &mut Event| {
            if !ev.state.kind().can_gpu_signal() {
                return false;
            }
            page.write(id, state::UNSIGNALED_EVENT_SLOT);
            ev.state.set()
        };

        let mut wake = false;
        match found.and_then(|id| events.get_mut(&id).map(|ev| (id, ev))) {
            Some((id, ev)) => wake = set_from_interrupt(id, ev),
            None => {
                // Partial ID lookup failed: assume the ID in the interrupt
                // payload was invalid and scan all signalled events.
                if valid_id_bits != 0 {
                    pr_debug!(
                        "Partial ID invalid: {} ({} valid bits)\n",
                        partial_id,
                        valid_id_bits
                    );
                }
                for (&id, ev) in events.iter_mut() {
                    if id >= state::SIGNAL_EVENT_LIMIT {
                        break;
                    }
                    if page.is_signaled(id) {
                        wake |= set_from_interrupt(id, ev);
                    }
                }
            }
        }
        drop(guard);
        if wake {
            self.wait.notify_all();
        }
    }

    /// Sets every MEMORY event, storing `data` for `WAIT_EVENTS` (C: the event
    /// part of `kfd_signal_vm_fault_event`; build `data` with
    /// [`vm_fault_data`] when the interrupt gives none).  Returns how many
    /// events were set.
    #[cfg_attr(
        not(CONFIG_KUNIT),
        allow(dead_code, reason = "for the GPU interrupt handlers; tested by KUnit")
    )]
    pub(crate) fn signal_memory_exception(&self, data: &kfd_hsa_memory_exception_data) -> usize {
        self.set_all(Kind::Memory, |ev| ev.memory = *data)
    }

    /// Sets every HW_EXCEPTION event, keeping their data (C: the event part
    /// of `kfd_signal_hw_exception_event`).  Returns how many were set; with
    /// none, upstream sends SIGTERM (`send_sigterm`) or logs "Process pid %d
    /// got unhandled exception" — the caller's job.
    #[cfg_attr(
        not(CONFIG_KUNIT),
        allow(dead_code, reason = "for the GPU interrupt handlers; tested by KUnit")
    )]
    pub(crate) fn signal_hw_exception(&self) -> usize {
        self.set_all(Kind::HwException, |_| {})
    }

    /// Sets every HW_EXCEPTION event with `hw` and, if given, every MEMORY
    /// event with `memory` (C: the per-process part of
    /// `kfd_signal_reset_event`, `memory` only for an SRAM ECC reset; and of
    /// `kfd_signal_poison_consumed_event`, which always passes it).
    #[cfg_attr(
        not(CONFIG_KUNIT),
        allow(dead_code, reason = "for the GPU interrupt handlers; tested by KUnit")
    )]
    pub(crate) fn signal_reset(
        &self,
        hw: &kfd_hsa_hw_exception_data,
        memory: Option<&kfd_hsa_memory_exception_data>,
    ) {
        let mut inner = self.inner.lock();
        let (_, mut wake) = inner.set_all(Kind::HwException, |ev| ev.hw = *hw);
        if let Some(memory) = memory {
            wake |= inner.set_all(Kind::Memory, |ev| ev.memory = *memory).1;
        }
        drop(inner);
        if wake {
            self.wait.notify_all();
        }
    }

    /// Sets every SIGNAL event (C: the event part of
    /// `kfd_signal_process_terminate_event`; the caller sends SIGBUS).
    #[cfg_attr(
        not(CONFIG_KUNIT),
        allow(dead_code, reason = "for the GPU interrupt handlers; tested by KUnit")
    )]
    pub(crate) fn signal_process_terminate(&self) {
        self.set_all(Kind::Signal, |_| {});
    }

    /// Sets every event of `kind` after `update` stored its data, waking
    /// waiters; returns how many were set.
    fn set_all(&self, kind: Kind, update: impl FnMut(&mut Event)) -> usize {
        let (count, wake) = self.inner.lock().set_all(kind, update);
        if wake {
            self.wait.notify_all();
        }
        count
    }

    /// WAIT_EVENTS (C: `kfd_ioctl_wait_events`, `kfd_wait_on_events`).
    ///
    /// Reads `num_events` (at most `KFD_SIGNAL_EVENT_LIMIT`, else `-ENOMEM`)
    /// `kfd_event_data` from `events_ptr`, waits as [`Events::wait_on`] and
    /// copies the exception data or event ages of the activated events back.
    /// Any error makes `wait_result` `KFD_IOC_WAIT_RESULT_FAIL`.
    pub(crate) fn wait(&self, args: &mut kfd_ioctl_wait_events_args) -> Result {
        let ret = self.wait_user(args);
        if ret.is_err() {
            args.wait_result = WaitResult::Fail.to_raw();
        }
        ret
    }

    /// [`Events::wait`] without the final `wait_result` fix-up.
    fn wait_user(&self, args: &mut kfd_ioctl_wait_events_args) -> Result {
        if args.num_events > state::SIGNAL_EVENT_LIMIT {
            return Err(ENOMEM);
        }
        let num = usize::try_from(args.num_events)?;
        let base = usize::try_from(args.events_ptr).map_err(|_| EFAULT)?;
        let len = num * EVENT_DATA_SIZE;

        let mut bytes = KVVec::new();
        UserSlice::new(UserPtr::from_addr(base), len).read_all(&mut bytes, GFP_KERNEL)?;
        let mut entries = KVVec::with_capacity(num, GFP_KERNEL)?;
        for chunk in bytes.chunks_exact(EVENT_DATA_SIZE) {
            entries.push(WaitEntry::parse(chunk)?, GFP_KERNEL)?;
        }
        drop(bytes);

        let ret = self.wait_on(
            &mut entries,
            args.wait_for_all != 0,
            &mut args.timeout,
            &mut args.wait_result,
        );

        // Copy event specific data, in order (also the entries before a
        // destroyed one when `wait_on` answered -EINVAL).
        let mut buf = [0u8; 32];
        for (i, entry) in entries.iter().enumerate() {
            let Some(output) = entry.output else {
                continue;
            };
            let data = output.encode(&mut buf);
            let addr = base.checked_add(i * EVENT_DATA_SIZE).ok_or(EFAULT)?;
            UserSlice::new(UserPtr::from_addr(addr), data.len())
                .writer()
                .write_slice(data)?;
        }
        ret
    }

    /// Waits on events given in kernel memory (C: `kfd_wait_on_events` minus
    /// the user copies).
    ///
    /// Sets up a waiter per entry (an unknown id is `-EINVAL`; a signalled
    /// auto-reset event is consumed; a signal event whose age differs from a
    /// non-zero `last_event_age` counts as signalled) and sleeps until one
    /// event (`all`: every event) is activated, an event is destroyed
    /// (`KFD_IOC_WAIT_RESULT_FAIL`, `-EIO`), the timeout expires
    /// (`KFD_IOC_WAIT_RESULT_TIMEOUT`, `Ok`) or a signal arrives
    /// (`-ERESTARTSYS`; a finite, non-zero `timeout_ms` is set to what is
    /// left, and consumed auto-reset signals are given back).
    ///
    /// `timeout_ms`: 0 polls, `0xffffffff` waits forever.  On completion each
    /// entry's [`WaitEntry::output`] says what to copy back to user space;
    /// `-EINVAL` if an event was destroyed after the wait completed (the
    /// entries before it are filled).  Any error makes `wait_result`
    /// `KFD_IOC_WAIT_RESULT_FAIL`.
    pub(crate) fn wait_on(
        &self,
        entries: &mut [WaitEntry],
        all: bool,
        timeout_ms: &mut u32,
        wait_result: &mut u32,
    ) -> Result {
        let mut result = WaitResult::Fail;
        let ret = self.wait_locked(entries, all, timeout_ms, &mut result);
        *wait_result = result.to_raw();
        match ret {
            Err(e) => {
                *wait_result = WaitResult::Fail.to_raw();
                Err(e)
            }
            Ok(()) if result == WaitResult::Fail => Err(EIO),
            Ok(()) => Ok(()),
        }
    }

    /// The body of [`Events::wait_on`].
    fn wait_locked(
        &self,
        entries: &mut [WaitEntry],
        all: bool,
        timeout_ms: &mut u32,
        result: &mut WaitResult,
    ) -> Result {
        let msecs_to_jiffies = |ms| u64::try_from(time::msecs_to_jiffies(ms)).unwrap_or(u64::MAX);
        let hz = msecs_to_jiffies(1000);
        let mut timeout = state::user_timeout_to_jiffies(*timeout_ms, msecs_to_jiffies);

        let mut guard = self.inner.lock();
        for i in 0..entries.len() {
            let (id, age) = (entries[i].event_id, entries[i].last_event_age);
            match Waiter::init(&mut *guard, id, age) {
                Some(waiter) => entries[i].waiter = waiter,
                None => {
                    state::release(&entries[..i], &mut *guard, false);
                    return Err(EINVAL);
                }
            }
        }

        // Check the condition once, then sleep until it changes.
        let mut ret = Ok(());
        *result = state::test_condition(all, entries, &*guard);
        if *result == WaitResult::Timeout {
            loop {
                if current!().signal_pending() {
                    ret = Err(ERESTARTSYS);
                    if *timeout_ms != state::TIMEOUT_IMMEDIATE
                        && *timeout_ms != state::TIMEOUT_INFINITE
                    {
                        *timeout_ms = state::remaining_timeout_ms(timeout, hz);
                    }
                    break;
                }
                *result = state::test_condition(all, entries, &*guard);
                if *result != WaitResult::Timeout || timeout == 0 {
                    break;
                }
                let jiffies = Jiffies::try_from(timeout).unwrap_or(Jiffies::MAX);
                timeout = match self.wait.wait_interruptible_timeout(&mut guard, jiffies) {
                    CondVarTimeoutResult::Timeout => 0,
                    CondVarTimeoutResult::Woken { jiffies }
                    | CondVarTimeoutResult::Signal { jiffies } => {
                        u64::try_from(jiffies).unwrap_or(u64::MAX)
                    }
                };
            }
        }

        // Decide what to copy back while the events cannot change; the event
        // may have been destroyed after signalling.
        if ret.is_ok() && *result == WaitResult::Complete {
            let copied = state::copy_out(entries, &*guard, |entry, ev, what| {
                entry.output = Some(match what {
                    CopyOut::Memory => Output::Memory(ev.memory),
                    CopyOut::HwException => Output::Hw(ev.hw),
                    CopyOut::Age(age) => Output::Age(age),
                });
            });
            if copied.is_err() {
                ret = Err(EINVAL);
            }
        }

        let wake = state::release(entries, &mut *guard, ret == Err(ERESTARTSYS));
        drop(guard);
        if wake {
            self.wait.notify_all();
        }
        ret
    }
}

#[kunit_tests(rkfd_event)]
mod tests {
    use super::*;
    use crate::uapi;
    use core::ptr::NonNull;
    use kernel::{
        sync::{
            atomic::{Atomic, Relaxed},
            Arc, Completion,
        },
        time::{delay::fsleep, Delta, Instant, Monotonic},
        workqueue,
    };

    const PAGE_HANDLE: u64 = 0x0001_2345_0000_0007;
    const PAGE_SIZE: usize = state::SIGNAL_EVENT_LIMIT as usize * 8;
    const COMPLETE: u32 = uapi::KFD_IOC_WAIT_RESULT_COMPLETE;
    const TIMEOUT: u32 = uapi::KFD_IOC_WAIT_RESULT_TIMEOUT;
    const FAIL: u32 = uapi::KFD_IOC_WAIT_RESULT_FAIL;

    fn new_events() -> Result<Arc<Events>> {
        Arc::pin_init(Events::new(), GFP_KERNEL)
    }

    fn no_page(_handle: u64) -> Result<SignalPage> {
        Err(EFAULT)
    }

    fn create(
        events: &Events,
        event_type: u32,
        auto_reset: bool,
    ) -> Result<kfd_ioctl_create_event_args> {
        let mut args = kfd_ioctl_create_event_args {
            event_type,
            auto_reset: u32::from(auto_reset),
            ..Default::default()
        };
        events.create(&mut args, no_page)?;
        Ok(args)
    }

    /// Registers a kernel-allocated signal page with the first signal event.
    fn create_with_page(events: &Events, auto_reset: bool) -> Result<kfd_ioctl_create_event_args> {
        let mut args = kfd_ioctl_create_event_args {
            event_page_offset: PAGE_HANDLE,
            event_type: uapi::KFD_IOC_EVENT_SIGNAL,
            auto_reset: u32::from(auto_reset),
            ..Default::default()
        };
        events.create(&mut args, |handle| {
            if handle != PAGE_HANDLE {
                return Err(EBADF);
            }
            SignalPage::alloc_zeroed(PAGE_SIZE)
        })?;
        Ok(args)
    }

    fn signal(events: &Events, auto_reset: bool) -> Result<u32> {
        Ok(create(events, uapi::KFD_IOC_EVENT_SIGNAL, auto_reset)?.event_id)
    }

    /// Polls (timeout 0): returns the result and the entries.
    fn poll(events: &Events, reqs: &[(u32, u64)], all: bool) -> (Result, u32, KVVec<WaitEntry>) {
        let mut entries = KVVec::new();
        for &(id, age) in reqs {
            if entries.push(WaitEntry::new(id, age), GFP_KERNEL).is_err() {
                return (Err(ENOMEM), FAIL, entries);
            }
        }
        let mut timeout = 0;
        let mut result = u32::MAX;
        let ret = events.wait_on(&mut entries, all, &mut timeout, &mut result);
        (ret, result, entries)
    }

    fn queued(events: &Events, id: u32) -> u32 {
        events
            .inner
            .lock()
            .events
            .get(&id)
            .map_or(0, |ev| ev.state.queued())
    }

    fn signaled(events: &Events, id: u32) -> bool {
        events
            .inner
            .lock()
            .events
            .get(&id)
            .is_some_and(|ev| ev.state.signaled())
    }

    fn slot(events: &Events, id: u32) -> Option<u64> {
        events.inner.lock().page.as_ref().and_then(|p| p.read(id))
    }

    fn gpu_write_slot(events: &Events, id: u32, value: u64) -> bool {
        events
            .inner
            .lock()
            .page
            .as_ref()
            .is_some_and(|p| p.write(id, value))
    }

    #[test]
    fn signal_events_need_a_signal_page() -> Result {
        let events = new_events()?;
        let mut args = kfd_ioctl_create_event_args {
            event_page_offset: 0,
            event_type: uapi::KFD_IOC_EVENT_SIGNAL,
            ..Default::default()
        };
        assert_eq!(events.create(&mut args, no_page), Err(ENOMEM));
        args.event_type = uapi::KFD_IOC_EVENT_DEBUG_EVENT;
        assert_eq!(events.create(&mut args, no_page), Err(ENOMEM));
        // Other types do not need one.
        let m = create(&events, uapi::KFD_IOC_EVENT_MEMORY, false)?;
        assert_eq!(m.event_id, state::FIRST_NONSIGNAL_EVENT_ID);
        assert_eq!(m.event_page_offset, 0);
        assert_eq!(events.signal_page_handle(), None);
        Ok(())
    }

    #[test]
    fn ids_slots_and_reuse() -> Result {
        let events = new_events()?;
        let a = create_with_page(&events, false)?;
        assert_eq!(events.signal_page_handle(), Some(PAGE_HANDLE));
        // Id 0 is reserved: the first signal event gets slot 1.
        assert_eq!(a.event_id, 1);
        assert_eq!(a.event_slot_index, 1);
        assert_eq!(a.event_trigger_data, 1);
        assert_eq!(a.event_page_offset, KFD_MMAP_TYPE_EVENTS);
        assert_eq!(KFD_MMAP_TYPE_EVENTS, 0x8000_0000_0000_0000);
        let b = create(&events, uapi::KFD_IOC_EVENT_DEBUG_EVENT, false)?;
        assert_eq!((b.event_id, b.event_slot_index), (2, 2));
        let o1 = create(&events, uapi::KFD_IOC_EVENT_NODECHANGE, false)?;
        let o2 = create(&events, uapi::KFD_IOC_EVENT_HW_EXCEPTION, false)?;
        assert_eq!(o1.event_id, 0x4000_0000);
        assert_eq!(o2.event_id, 0x4000_0001);
        assert_eq!(o2.event_trigger_data, 0x4000_0001);
        assert_eq!(o2.event_page_offset, 0);

        // The lowest free id is reused.
        events.destroy(1)?;
        assert_eq!(signal(&events, false)?, 1);
        events.destroy(0x4000_0000)?;
        assert_eq!(create(&events, 42, false)?.event_id, 0x4000_0000);

        // Unknown ids, id 0 included.
        assert_eq!(events.destroy(0), Err(EINVAL));
        assert_eq!(events.destroy(3), Err(EINVAL));
        assert_eq!(events.destroy(0x4000_0002), Err(EINVAL));
        assert_eq!(events.set(0), Err(EINVAL));
        assert_eq!(events.reset(77), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn page_registration() -> Result {
        let events = new_events()?;
        // Too small.
        let mut args = kfd_ioctl_create_event_args {
            event_page_offset: PAGE_HANDLE,
            ..Default::default()
        };
        let r = events.create(&mut args, |_| SignalPage::alloc_zeroed(PAGE_SIZE - 8));
        assert_eq!(r, Err(EINVAL));
        // The mapping's error is passed on.
        assert_eq!(events.create(&mut args, no_page), Err(EFAULT));
        assert_eq!(events.signal_page_handle(), None);

        let a = create_with_page(&events, false)?;
        // Every slot starts unsignalled; the event's own slot too.
        for id in [0, 1, 2, 4095] {
            assert_eq!(slot(&events, id), Some(state::UNSIGNALED_EVENT_SLOT));
        }
        // A second page is refused before mapping it, and creates nothing.
        let mut again = kfd_ioctl_create_event_args {
            event_page_offset: PAGE_HANDLE + 1,
            ..Default::default()
        };
        let mut mapped = false;
        let r = events.create(&mut again, |_| {
            mapped = true;
            SignalPage::alloc_zeroed(PAGE_SIZE)
        });
        assert_eq!(r, Err(EINVAL));
        // A second page is not mapped.
        assert!(!mapped);
        assert_eq!(again.event_id, 0);
        assert_eq!(events.signal_page_handle(), Some(PAGE_HANDLE));
        assert_eq!(signal(&events, false)?, a.event_id + 1);
        Ok(())
    }

    #[test]
    fn signal_slots_run_out() -> Result {
        let events = new_events()?;
        create_with_page(&events, false)?;
        // 4096 slots, id 0 reserved: 4095 signal events.
        for expected in 2..state::SIGNAL_EVENT_LIMIT {
            assert_eq!(signal(&events, false)?, expected);
        }
        assert_eq!(signal(&events, false), Err(ENOSPC));
        assert_eq!(
            create(&events, uapi::KFD_IOC_EVENT_DEBUG_EVENT, false).err(),
            Some(ENOSPC)
        );
        // Other events are not limited by slots.
        create(&events, uapi::KFD_IOC_EVENT_MEMORY, false)?;
        events.destroy(1234)?;
        assert_eq!(signal(&events, false)?, 1234);
        assert_eq!(signal(&events, false), Err(ENOSPC));
        // Teardown frees the events and the page; a page may come again.
        events.teardown();
        assert_eq!(events.signal_page_handle(), None);
        assert_eq!(signal(&events, false), Err(ENOMEM));
        assert_eq!(create_with_page(&events, false)?.event_id, 1);
        Ok(())
    }

    #[test]
    fn set_and_reset_only_signal_events() -> Result {
        let events = new_events()?;
        create_with_page(&events, false)?;
        let debug = create(&events, uapi::KFD_IOC_EVENT_DEBUG_EVENT, false)?.event_id;
        let memory = create(&events, uapi::KFD_IOC_EVENT_MEMORY, false)?.event_id;
        let hw = create(&events, uapi::KFD_IOC_EVENT_HW_EXCEPTION, false)?.event_id;
        for id in [debug, memory, hw] {
            assert_eq!(events.set(id), Err(EINVAL));
            assert_eq!(events.reset(id), Err(EINVAL));
        }
        events.set(1)?;
        assert!(signaled(&events, 1));
        events.reset(1)?;
        assert!(!signaled(&events, 1));
        Ok(())
    }

    #[test]
    fn poll_manual_and_auto_reset() -> Result {
        let events = new_events()?;
        let manual = create_with_page(&events, false)?.event_id;
        let auto = signal(&events, true)?;

        let (r, res, _) = poll(&events, &[(manual, 0)], false);
        assert_eq!((r, res), (Ok(()), TIMEOUT));
        // The poll's waiter is gone.
        assert_eq!(queued(&events, manual), 0);

        events.set(manual)?;
        events.set(auto)?;
        for _ in 0..2 {
            let (r, res, _) = poll(&events, &[(manual, 0)], false);
            // Manual reset stays signalled.
            assert_eq!((r, res), (Ok(()), COMPLETE));
        }
        let (r, res, _) = poll(&events, &[(auto, 0)], false);
        assert_eq!((r, res), (Ok(()), COMPLETE));
        let (r, res, _) = poll(&events, &[(auto, 0)], false);
        // Auto reset was consumed.
        assert_eq!((r, res), (Ok(()), TIMEOUT));

        // Any / all.
        events.reset(manual)?;
        events.set(auto)?;
        let (r, res, _) = poll(&events, &[(manual, 0), (auto, 0)], true);
        assert_eq!((r, res), (Ok(()), TIMEOUT));
        events.set(manual)?;
        events.set(auto)?;
        let (r, res, _) = poll(&events, &[(manual, 0), (auto, 0)], true);
        assert_eq!((r, res), (Ok(()), COMPLETE));

        // An empty wait is complete; an unknown id is -EINVAL and FAIL.
        let (r, res, _) = poll(&events, &[], false);
        assert_eq!((r, res), (Ok(()), COMPLETE));
        let (r, res, _) = poll(&events, &[(manual, 0), (999, 0)], false);
        assert_eq!((r, res), (Err(EINVAL), FAIL));
        assert_eq!(queued(&events, manual), 0);
        Ok(())
    }

    #[test]
    fn event_age_is_copied_out() -> Result {
        let events = new_events()?;
        let id = create_with_page(&events, false)?.event_id;
        let (r, res, _) = poll(&events, &[(id, 1)], false);
        // Age 1 is current.
        assert_eq!((r, res), (Ok(()), TIMEOUT));
        events.set(id)?;
        let (r, res, entries) = poll(&events, &[(id, 1)], false);
        assert_eq!((r, res), (Ok(()), COMPLETE));
        assert!(matches!(entries[0].output(), Some(Output::Age(2))));
        // Without last_event_age nothing is copied.
        let (_, _, entries) = poll(&events, &[(id, 0)], false);
        assert!(entries[0].output().is_none());
        Ok(())
    }

    #[test]
    fn exceptions_are_set_with_their_data() -> Result {
        let events = new_events()?;
        let mem = create(&events, uapi::KFD_IOC_EVENT_MEMORY, false)?.event_id;
        let hw = create(&events, uapi::KFD_IOC_EVENT_HW_EXCEPTION, false)?.event_id;

        let fault = VmFault {
            page_addr: 0x1234,
            prot_valid: true,
            prot_write: true,
            prot_exec: false,
        };
        let data = vm_fault_data(7, Some(&fault));
        assert_eq!(
            (data.va, data.gpu_id, data.failure.NotPresent),
            (0x123_4000, 7, 1)
        );
        assert_eq!(
            (
                data.failure.ReadOnly,
                data.failure.NoExecute,
                data.failure.imprecise
            ),
            (1, 0, 0)
        );
        assert_eq!(vm_fault_data(7, None).failure.imprecise, 1);

        assert_eq!(events.signal_memory_exception(&data), 1);
        let (r, res, entries) = poll(&events, &[(hw, 0), (mem, 0)], false);
        assert_eq!((r, res), (Ok(()), COMPLETE));
        assert!(entries[0].output().is_none());
        let Some(Output::Memory(out)) = entries[1].output() else {
            return Err(EINVAL);
        };
        assert_eq!(
            (out.va, out.gpu_id, out.failure.ReadOnly),
            (0x123_4000, 7, 1)
        );
        let mut buf = [0u8; 32];
        let bytes = Output::Memory(out).encode(&mut buf);
        assert_eq!(bytes.len(), 32);
        assert_eq!(&bytes[16..24], &0x123_4000u64.to_ne_bytes());
        assert_eq!(&bytes[24..28], &7u32.to_ne_bytes());

        let hw_data = kfd_hsa_hw_exception_data {
            reset_type: 0,
            reset_cause: uapi::KFD_HW_EXCEPTION_ECC,
            memory_lost: 1,
            gpu_id: 9,
        };
        events.signal_reset(&hw_data, None);
        let (_, res, entries) = poll(&events, &[(hw, 0)], false);
        assert_eq!(res, COMPLETE);
        let Some(Output::Hw(out)) = entries[0].output() else {
            return Err(EINVAL);
        };
        assert_eq!((out.memory_lost, out.gpu_id, out.reset_cause), (1, 9, 1));
        assert_eq!(Output::Hw(out).encode(&mut buf).len(), 16);
        assert_eq!(Output::Age(5).encode(&mut buf), &5u64.to_ne_bytes());

        assert_eq!(events.signal_hw_exception(), 1);
        let none = new_events()?;
        assert_eq!(none.signal_hw_exception(), 0);
        Ok(())
    }

    #[test]
    fn gpu_signals_through_the_slot() -> Result {
        let events = new_events()?;
        create_with_page(&events, true)?;
        for _ in 2..=29 {
            signal(&events, true)?;
        }
        // Exact id, mailbox updated.
        assert!(gpu_write_slot(&events, 5, 5));
        events.signal_from_interrupt(5, 32, true);
        assert!(signaled(&events, 5));
        // Acknowledged.
        assert_eq!(slot(&events, 5), Some(state::UNSIGNALED_EVENT_SLOT));
        // Mailbox updated but the slot is not signalled: nothing happens.
        events.signal_from_interrupt(6, 32, true);
        assert!(!signaled(&events, 6));
        // Partial id, 3 bits: 5, 13, 21, 29 match; 21 is signalled.
        assert!(gpu_write_slot(&events, 21, 0));
        events.signal_from_interrupt(5, 3, false);
        assert!(signaled(&events, 21));
        assert!(!signaled(&events, 13));
        // No valid bits: scan every slot.
        assert!(gpu_write_slot(&events, 3, 1));
        assert!(gpu_write_slot(&events, 28, 1));
        assert!(gpu_write_slot(&events, 100, 1));
        events.signal_from_interrupt(0, 0, false);
        assert!(signaled(&events, 3) && signaled(&events, 28));
        assert_eq!(slot(&events, 3), Some(state::UNSIGNALED_EVENT_SLOT));
        // No event 100: left alone.
        assert_eq!(slot(&events, 100), Some(1));
        // A process terminate sets every signal event.
        events.signal_process_terminate();
        assert!(signaled(&events, 7));
        Ok(())
    }

    /// What a waiter thread saw.
    #[pin_data]
    struct Outcome {
        /// Completed when the wait returned.
        #[pin]
        done: Completion,
        /// `wait_result`.
        result: Atomic<u32>,
        /// The errno (0 for success).
        errno: Atomic<i32>,
    }

    /// Starts a thread waiting on `ids` with `timeout_ms`.
    fn spawn_waiter(events: &Arc<Events>, id: u32, timeout_ms: u32) -> Result<Arc<Outcome>> {
        let outcome = Arc::pin_init(
            pin_init!(Outcome {
                done <- Completion::new(),
                result: Atomic::new(u32::MAX),
                errno: Atomic::new(0),
            }),
            GFP_KERNEL,
        )?;
        let (ev, out) = (events.clone(), outcome.clone());
        workqueue::system_long().try_spawn(GFP_KERNEL, move || {
            let mut entries = [WaitEntry::new(id, 0)];
            let mut timeout = timeout_ms;
            let mut result = u32::MAX;
            let ret = ev.wait_on(&mut entries, false, &mut timeout, &mut result);
            out.result.store(result, Relaxed);
            out.errno
                .store(ret.err().map_or(0, |e| e.to_errno()), Relaxed);
            out.done.complete_all();
        })?;
        Ok(outcome)
    }

    /// Waits (up to 10 s) until `n` waiters are queued on `id`.
    fn wait_queued(events: &Events, id: u32, n: u32) -> bool {
        for _ in 0..10_000 {
            if queued(events, id) >= n {
                return true;
            }
            fsleep(Delta::from_millis(1));
        }
        false
    }

    const WAITER_TIMEOUT_MS: u32 = 10_000;

    #[test]
    fn set_wakes_every_waiter() -> Result {
        let events = new_events()?;
        let id = create_with_page(&events, true)?.event_id;
        let a = spawn_waiter(&events, id, WAITER_TIMEOUT_MS)?;
        let b = spawn_waiter(&events, id, WAITER_TIMEOUT_MS)?;
        let both_queued = wait_queued(&events, id, 2);
        events.set(id)?;
        a.done.wait_for_completion();
        b.done.wait_for_completion();
        assert!(both_queued);
        for out in [&a, &b] {
            assert_eq!(out.result.load(Relaxed), COMPLETE);
            assert_eq!(out.errno.load(Relaxed), 0);
        }
        // The auto-reset event woke waiters: it did not latch.
        assert!(!signaled(&events, id));
        assert_eq!(queued(&events, id), 0);
        let (_, res, _) = poll(&events, &[(id, 0)], false);
        assert_eq!(res, TIMEOUT);
        Ok(())
    }

    #[test]
    fn interrupt_wakes_a_waiter() -> Result {
        let events = new_events()?;
        let id = create_with_page(&events, false)?.event_id;
        let a = spawn_waiter(&events, id, state::TIMEOUT_INFINITE)?;
        let was_queued = wait_queued(&events, id, 1);
        gpu_write_slot(&events, id, u64::from(id));
        events.signal_from_interrupt(id, 32, true);
        a.done.wait_for_completion();
        assert!(was_queued);
        assert_eq!(a.result.load(Relaxed), COMPLETE);
        Ok(())
    }

    #[test]
    fn destroy_fails_the_waiter() -> Result {
        let events = new_events()?;
        let id = create_with_page(&events, false)?.event_id;
        let a = spawn_waiter(&events, id, WAITER_TIMEOUT_MS)?;
        let was_queued = wait_queued(&events, id, 1);
        events.destroy(id)?;
        a.done.wait_for_completion();
        assert!(was_queued);
        assert_eq!(a.result.load(Relaxed), FAIL);
        assert_eq!(a.errno.load(Relaxed), EIO.to_errno());
        Ok(())
    }

    #[test]
    fn teardown_fails_waiters_and_drops_the_page() -> Result {
        let events = new_events()?;
        let id = create_with_page(&events, false)?.event_id;
        let other = create(&events, uapi::KFD_IOC_EVENT_MEMORY, false)?.event_id;
        let a = spawn_waiter(&events, id, WAITER_TIMEOUT_MS)?;
        let b = spawn_waiter(&events, other, WAITER_TIMEOUT_MS)?;
        let were_queued = wait_queued(&events, id, 1) && wait_queued(&events, other, 1);
        events.teardown();
        a.done.wait_for_completion();
        b.done.wait_for_completion();
        assert!(were_queued);
        for out in [&a, &b] {
            assert_eq!(out.result.load(Relaxed), FAIL);
            assert_eq!(out.errno.load(Relaxed), EIO.to_errno());
        }
        assert!(events.inner.lock().page.is_none());
        Ok(())
    }

    #[test]
    fn mapped_page_from_raw_pointer() -> Result {
        // Declared first, dropped last: outlives every page made from it.
        let mut buf = KVVec::from_elem(0u64, PAGE_SIZE / 8 + 1, GFP_KERNEL)?;
        let base = NonNull::new(buf.as_mut_ptr().cast::<u8>()).ok_or(ENOMEM)?;
        let events = new_events()?;

        let odd = NonNull::new(base.as_ptr().wrapping_add(4)).ok_or(ENOMEM)?;
        // SAFETY: `buf` is valid for `PAGE_SIZE + 8` bytes and outlives the
        // page; nothing else accesses it while the page exists.
        let r = unsafe { SignalPage::new(odd, PAGE_SIZE, None) };
        assert!(r.is_err());

        let mut args = kfd_ioctl_create_event_args {
            event_page_offset: PAGE_HANDLE,
            event_type: uapi::KFD_IOC_EVENT_SIGNAL,
            ..Default::default()
        };
        events.create(&mut args, |_| {
            // SAFETY: As above: `buf` outlives `events`, which owns the page.
            unsafe { SignalPage::new(base, PAGE_SIZE + 8, None) }
        })?;
        assert_eq!(slot(&events, 4095), Some(state::UNSIGNALED_EVENT_SLOT));
        // As upstream, only KFD_SIGNAL_EVENT_LIMIT slots are cleared; a slot
        // past them is cleared when its id (size / 8 = 4097 ids) is taken.
        assert_eq!(slot(&events, 4096), Some(0));
        events.set(args.event_id)?;
        events.teardown();
        drop(events);
        assert_eq!(buf[1], state::UNSIGNALED_EVENT_SLOT);
        Ok(())
    }

    #[test]
    fn finite_timeout_expires() -> Result {
        let events = new_events()?;
        let id = create_with_page(&events, false)?.event_id;
        let start = Instant::<Monotonic>::now();
        let mut entries = [WaitEntry::new(id, 0)];
        let mut timeout = 30;
        let mut result = u32::MAX;
        events.wait_on(&mut entries, false, &mut timeout, &mut result)?;
        assert_eq!(result, TIMEOUT);
        // Unchanged without a signal.
        assert_eq!(timeout, 30);
        // No assertion on the elapsed time: jiffies and the monotonic clock
        // disagree by up to a tick, and a timed assertion flakes under TCG.
        let _ = start;
        assert_eq!(queued(&events, id), 0);
        Ok(())
    }

    #[test]
    fn parse_user_entries() -> Result {
        let mut raw = [0u8; EVENT_DATA_SIZE];
        raw[0..8].copy_from_slice(&0x1122_3344_5566_7788u64.to_ne_bytes());
        raw[EVENT_ID_OFFSET..EVENT_ID_OFFSET + 4].copy_from_slice(&0x4000_0003u32.to_ne_bytes());
        let entry = WaitEntry::parse(&raw)?;
        assert_eq!(
            (entry.event_id, entry.last_event_age),
            (0x4000_0003, 0x1122_3344_5566_7788)
        );
        assert!(WaitEntry::parse(&raw[..40]).is_err());
        Ok(())
    }
}
