// SPDX-License-Identifier: GPL-2.0 OR MIT

//! The KFD event state machine, free of kernel types.
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_events.c` (`set_event`, `reset_event`,
//! `init_event_waiter`, `test_event_condition`, `free_waiters`,
//! `copy_signaled_event_data`, `lookup_signaled_event_by_partial_id`,
//! `user_timeout_to_jiffies`) and `kfd_events.h`.
//!
//! This one file is shared by two crates: the host crate `kfd-logic`
//! (`cargo test`) and the kernel module, which includes it with
//! `#[path = "../rust/kfd-logic/src/event_state.rs"] mod state;` from
//! `src/event.rs`.  So it uses `core` only: no `std`, no `alloc`, no
//! external crate, no kernel type.  The containers (event table, waiter
//! arrays) belong to the caller and are reached through [`EventTable`] and
//! slices.
//!
//! # The waiter model
//!
//! In C every waiter is a `wait_queue_entry` on its event's wait queue, and
//! `set_event` walks that queue setting `waiter->activated`.  Here an event
//! counts the times it was set ([`EventState::sets`]); a waiter that went on
//! the queue remembers that count, and is activated once the count moved.
//! A waiter stays "on the queue" until [`release`] (C: `free_waiters`), as
//! in C, so [`EventState::set`] sees it for the auto-reset decision
//! (`waitqueue_active`) even after it was activated.  The two models give
//! the same activations; `rust/kfd-logic/tests/event_state.rs` checks that
//! against a direct transcription of the C code on random operation
//! sequences.
//!
//! Arithmetic never panics (the kernel builds with overflow checks): the
//! counters use wrapping or saturating operations.

/// Event type `KFD_IOC_EVENT_SIGNAL` (C: `KFD_EVENT_TYPE_SIGNAL`).
pub const EVENT_TYPE_SIGNAL: u32 = 0;
/// Event type `KFD_IOC_EVENT_HW_EXCEPTION` (C: `KFD_EVENT_TYPE_HW_EXCEPTION`).
pub const EVENT_TYPE_HW_EXCEPTION: u32 = 3;
/// Event type `KFD_IOC_EVENT_DEBUG_EVENT` (C: `KFD_EVENT_TYPE_DEBUG`).
pub const EVENT_TYPE_DEBUG: u32 = 5;
/// Event type `KFD_IOC_EVENT_MEMORY` (C: `KFD_EVENT_TYPE_MEMORY`).
pub const EVENT_TYPE_MEMORY: u32 = 8;

/// `KFD_SIGNAL_EVENT_LIMIT`: slots of a signal page, and the most events one
/// `WAIT_EVENTS` may name.
pub const SIGNAL_EVENT_LIMIT: u32 = 4096;

/// First id of events without a signal slot (C: `KFD_FIRST_NONSIGNAL_EVENT_ID`,
/// `(INT_MAX >> 1) + 1`).
pub const FIRST_NONSIGNAL_EVENT_ID: u32 = 0x4000_0000;
/// Last id of events without a signal slot (C: `KFD_LAST_NONSIGNAL_EVENT_ID`,
/// `INT_MAX`).
pub const LAST_NONSIGNAL_EVENT_ID: u32 = 0x7fff_ffff;

/// First id a signal event can get: id 0 is reserved at process creation
/// (C: `kfd_event_init_process`, "fast path to ignore bogus events that are
/// sent by the CP without a context ID").
pub const FIRST_SIGNAL_EVENT_ID: u32 = 1;

/// Value of a signal slot that is not signalled (C: `UNSIGNALED_EVENT_SLOT`).
pub const UNSIGNALED_EVENT_SLOT: u64 = u64::MAX;

/// `WAIT_EVENTS` timeout meaning "poll" (C: `KFD_EVENT_TIMEOUT_IMMEDIATE`).
pub const TIMEOUT_IMMEDIATE: u32 = 0;
/// `WAIT_EVENTS` timeout meaning "forever" (C: `KFD_EVENT_TIMEOUT_INFINITE`).
pub const TIMEOUT_INFINITE: u32 = 0xffff_ffff;

/// `MAX_SCHEDULE_TIMEOUT` (`LONG_MAX`) of a 64-bit kernel, in jiffies.
pub const MAX_SCHEDULE_TIMEOUT: u64 = 0x7fff_ffff_ffff_ffff;

/// What the kernel distinguishes about an event's type.
///
/// C: `ev->type`; only these four values change behaviour, every other
/// type is accepted and behaves as a plain CPU-invisible event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `KFD_IOC_EVENT_SIGNAL`: slot-backed, set by the CPU or the GPU.
    Signal,
    /// `KFD_IOC_EVENT_DEBUG_EVENT`: slot-backed, set by the GPU only.
    Debug,
    /// `KFD_IOC_EVENT_HW_EXCEPTION`: set on GPU reset / hardware exceptions.
    HwException,
    /// `KFD_IOC_EVENT_MEMORY`: set on GPU memory faults.
    Memory,
    /// Any other type (node change, device state change, system, ...).
    Other,
}

impl Kind {
    /// Classifies a user-space `event_type`.
    pub const fn from_type(event_type: u32) -> Self {
        match event_type {
            EVENT_TYPE_SIGNAL => Kind::Signal,
            EVENT_TYPE_DEBUG => Kind::Debug,
            EVENT_TYPE_HW_EXCEPTION => Kind::HwException,
            EVENT_TYPE_MEMORY => Kind::Memory,
            _ => Kind::Other,
        }
    }

    /// Whether the event owns a signal slot, with its id as slot index
    /// (C: the `create_signal_event` branch of `kfd_event_create`).
    pub const fn has_slot(self) -> bool {
        matches!(self, Kind::Signal | Kind::Debug)
    }

    /// C: `event_can_be_cpu_signaled` (SET_EVENT and RESET_EVENT).
    pub const fn can_cpu_signal(self) -> bool {
        matches!(self, Kind::Signal)
    }

    /// C: `event_can_be_gpu_signaled` (signal interrupts).
    pub const fn can_gpu_signal(self) -> bool {
        matches!(self, Kind::Signal | Kind::Debug)
    }
}

/// The state of one event (C: the signalling fields of `struct kfd_event`
/// plus the wait-queue bookkeeping).
#[derive(Clone, Debug)]
pub struct EventState {
    /// What kind of event this is.
    kind: Kind,
    /// Identity of this event object, unique within its table for the
    /// table's lifetime: a recycled id gets a new serial, so a waiter of a
    /// destroyed event never mistakes its successor for it.
    serial: u64,
    /// C: `auto_reset`.
    auto_reset: bool,
    /// C: `signaled`.
    signaled: bool,
    /// C: `event_age`: 1 at creation, incremented by every set, never 0 or
    /// 1 again after a wrap.
    age: u64,
    /// How many times the event was set: the activation clock of queued
    /// waiters.
    sets: u64,
    /// Waiters on the wait queue (C: `waitqueue_active(&ev->wq)` is
    /// `queued != 0`).
    queued: u32,
}

impl EventState {
    /// A new, unsignalled event with age 1 (C: `kfd_event_create`).
    pub const fn new(kind: Kind, auto_reset: bool, serial: u64) -> Self {
        Self {
            kind,
            serial,
            auto_reset,
            signaled: false,
            age: 1,
            sets: 0,
            queued: 0,
        }
    }

    /// The event's kind.
    pub const fn kind(&self) -> Kind {
        self.kind
    }

    /// The event's serial (see [`EventState`]).
    pub const fn serial(&self) -> u64 {
        self.serial
    }

    /// Whether the event resets itself when a waiter consumes it.
    pub const fn auto_reset(&self) -> bool {
        self.auto_reset
    }

    /// Whether the event is signalled (latched for the next waiter).
    pub const fn signaled(&self) -> bool {
        self.signaled
    }

    /// The event age reported through `last_event_age`.
    pub const fn age(&self) -> u64 {
        self.age
    }

    /// How many times the event has been set.
    pub const fn sets(&self) -> u64 {
        self.sets
    }

    /// How many waiters are on the event's wait queue.
    pub const fn queued(&self) -> u32 {
        self.queued
    }

    /// Sets the event (C: `set_event`): activates every queued waiter; an
    /// auto-reset event with queued waiters stays unsignalled, any other
    /// event latches.
    ///
    /// Returns whether a waiter was queued, i.e. whether sleepers must be
    /// woken.
    pub fn set(&mut self) -> bool {
        let had_waiters = self.queued != 0;
        self.signaled = !self.auto_reset || !had_waiters;
        self.age = self.age.wrapping_add(1);
        if self.age == 0 {
            // Never wrap back to the reserved/default ages 0 and 1.
            self.age = 2;
        }
        self.sets = self.sets.wrapping_add(1);
        had_waiters
    }

    /// Resets the event (C: `reset_event`).
    pub fn reset(&mut self) {
        self.signaled = false;
    }
}

/// Access to the state inside a caller's event object.
pub trait HasState {
    /// The event's state.
    fn state(&self) -> &EventState;
    /// The event's state, mutably.
    fn state_mut(&mut self) -> &mut EventState;
}

impl HasState for EventState {
    fn state(&self) -> &EventState {
        self
    }

    fn state_mut(&mut self) -> &mut EventState {
        self
    }
}

/// A process's events, looked up by id (C: `p->event_idr`).
pub trait EventTable {
    /// The caller's event object.
    type Event: HasState;
    /// The event with this id, if any.
    fn get(&self, id: u32) -> Option<&Self::Event>;
    /// The event with this id, if any, mutably.
    fn get_mut(&mut self, id: u32) -> Option<&mut Self::Event>;
}

/// One thread's wait on one event (C: `struct kfd_event_waiter`).
///
/// A waiter whose event has been destroyed reads as "event gone" (C:
/// `waiter->event == NULL`), whether or not it was on the wait queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waiter {
    /// Id of the event waited for.
    id: u32,
    /// Serial of the event waited for.
    serial: u64,
    /// Activated when initialised: the event was signalled (and consumed if
    /// auto-reset), or its age differed from the caller's.
    activated: bool,
    /// `Some(sets)` if the waiter went on the wait queue, with the event's
    /// set count at that time.
    queued_at: Option<u64>,
    /// C: `event_age_enabled`: the caller passed a non-zero
    /// `last_event_age` for a signal event.
    age_enabled: bool,
}

impl Waiter {
    /// Starts waiting on event `id` (C: `init_event_waiter`).
    ///
    /// Consumes the signal of a signalled auto-reset event.  A non-zero
    /// `last_event_age` of a signal event that differs from the event's age
    /// activates the waiter at once.  A waiter not activated goes on the
    /// event's wait queue.  Returns `None` if there is no event `id` (the
    /// caller answers `-EINVAL`).
    pub fn init<T: EventTable>(table: &mut T, id: u32, last_event_age: u64) -> Option<Waiter> {
        let st = table.get_mut(id)?.state_mut();
        let mut activated = st.signaled;
        st.signaled = st.signaled && !st.auto_reset;

        // last_event_age = 0 is reserved for backward compatibility.
        let age_enabled = st.kind == Kind::Signal && last_event_age != 0;
        if age_enabled && st.age != last_event_age {
            activated = true;
        }

        let queued_at = if activated {
            None
        } else {
            st.queued = st.queued.saturating_add(1);
            Some(st.sets)
        };
        Some(Waiter {
            id,
            serial: st.serial,
            activated,
            queued_at,
            age_enabled,
        })
    }

    /// Id of the event waited for.
    pub const fn id(&self) -> u32 {
        self.id
    }

    /// Whether the waiter went on the event's wait queue.
    pub const fn is_queued(&self) -> bool {
        self.queued_at.is_some()
    }

    /// Whether the caller asked for the event age.
    pub const fn age_enabled(&self) -> bool {
        self.age_enabled
    }

    /// The event waited for, unless it has been destroyed.
    pub fn event<'a, T: EventTable>(&self, table: &'a T) -> Option<&'a T::Event> {
        table
            .get(self.id)
            .filter(|ev| ev.state().serial == self.serial)
    }

    /// The event waited for, mutably, unless it has been destroyed.
    pub fn event_mut<'a, T: EventTable>(&self, table: &'a mut T) -> Option<&'a mut T::Event> {
        table
            .get_mut(self.id)
            .filter(|ev| ev.state().serial == self.serial)
    }

    /// Whether the waiter is activated, given its event's current state
    /// (C: `waiter->activated`).
    pub fn is_activated(&self, st: &EventState) -> bool {
        self.activated || self.queued_at.is_some_and(|sets| sets != st.sets)
    }
}

impl AsRef<Waiter> for Waiter {
    fn as_ref(&self) -> &Waiter {
        self
    }
}

/// The outcome of a wait (C: `KFD_IOC_WAIT_RESULT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitResult {
    /// `KFD_IOC_WAIT_RESULT_COMPLETE`: one (or, waiting for all, every)
    /// event was signalled.
    Complete,
    /// `KFD_IOC_WAIT_RESULT_TIMEOUT`: not yet.
    Timeout,
    /// `KFD_IOC_WAIT_RESULT_FAIL`: an event was destroyed.
    Fail,
}

impl WaitResult {
    /// The UAPI value.
    pub const fn to_raw(self) -> u32 {
        match self {
            WaitResult::Complete => 0,
            WaitResult::Timeout => 1,
            WaitResult::Fail => 2,
        }
    }
}

/// Tests a wait's condition (C: `test_event_condition`).
///
/// Walks the waiters in order: the first one whose event is gone makes the
/// wait fail; waiting for any, the first activated one completes it;
/// waiting for all, every one must be activated.  An empty wait is
/// complete.
pub fn test_condition<T: EventTable, W: AsRef<Waiter>>(
    all: bool,
    waiters: &[W],
    table: &T,
) -> WaitResult {
    let mut activated = 0usize;
    for w in waiters {
        let w = w.as_ref();
        let Some(ev) = w.event(table) else {
            return WaitResult::Fail;
        };
        if w.is_activated(ev.state()) {
            if !all {
                return WaitResult::Complete;
            }
            activated += 1;
        }
    }
    if activated == waiters.len() {
        WaitResult::Complete
    } else {
        WaitResult::Timeout
    }
}

/// Ends a wait (C: `free_waiters`): takes every waiter off its event's
/// queue, in order.  With `undo_auto_reset` (the wait was interrupted and
/// will be restarted) an activated waiter of an auto-reset event sets the
/// event again, so the signal it consumed is not lost.
///
/// Returns whether such a set found queued waiters to wake.
pub fn release<T: EventTable, W: AsRef<Waiter>>(
    waiters: &[W],
    table: &mut T,
    undo_auto_reset: bool,
) -> bool {
    let mut wake = false;
    for w in waiters {
        let w = w.as_ref();
        let Some(ev) = w.event_mut(table) else {
            continue;
        };
        let st = ev.state_mut();
        let activated = w.is_activated(st);
        if w.is_queued() {
            st.queued = st.queued.saturating_sub(1);
        }
        if undo_auto_reset && activated && st.auto_reset {
            wake |= st.set();
        }
    }
    wake
}

/// What a completed wait copies back into one `kfd_event_data` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyOut {
    /// The event's memory exception data (MEMORY events).
    Memory,
    /// The event's hardware exception data (HW_EXCEPTION events).
    HwException,
    /// The event's current age (signal events waited on with a non-zero
    /// `last_event_age`).
    Age(u64),
}

/// An event of a completed wait was destroyed before its data was copied
/// (C: `copy_signaled_event_data` answers `-EINVAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventGone;

/// Decides what a completed wait copies back (C:
/// `copy_signaled_event_data`): for each activated waiter, in order, calls
/// `out` with the waiter's entry, its event and what to copy.  Stops with
/// [`EventGone`] at the first waiter whose event was destroyed; the entries
/// before it have been reported.
pub fn copy_out<T: EventTable, W: AsRef<Waiter>>(
    waiters: &mut [W],
    table: &T,
    mut out: impl FnMut(&mut W, &T::Event, CopyOut),
) -> Result<(), EventGone> {
    for entry in waiters.iter_mut() {
        let w = *entry.as_ref();
        let ev = w.event(table).ok_or(EventGone)?;
        let st = ev.state();
        if !w.is_activated(st) {
            continue;
        }
        let what = match st.kind {
            Kind::Memory => CopyOut::Memory,
            Kind::HwException => CopyOut::HwException,
            Kind::Signal if w.age_enabled => CopyOut::Age(st.age),
            _ => continue,
        };
        out(entry, ev, what);
    }
    Ok(())
}

/// Converts a `WAIT_EVENTS` timeout to jiffies (C: `user_timeout_to_jiffies`).
///
/// 0 polls, `0xffffffff` waits forever ([`MAX_SCHEDULE_TIMEOUT`]); any
/// other value is clamped to `0x7fffffff` ms (as upstream: large values stay
/// finite) and rounded up by one jiffy.  `msecs_to_jiffies` is the kernel's
/// conversion.
pub fn user_timeout_to_jiffies(timeout_ms: u32, msecs_to_jiffies: impl FnOnce(u32) -> u64) -> u64 {
    match timeout_ms {
        TIMEOUT_IMMEDIATE => 0,
        TIMEOUT_INFINITE => MAX_SCHEDULE_TIMEOUT,
        ms => msecs_to_jiffies(ms.min(0x7fff_ffff))
            .saturating_add(1)
            .min(MAX_SCHEDULE_TIMEOUT),
    }
}

/// Converts jiffies to milliseconds for a kernel running at `hz` (C:
/// `jiffies_to_msecs`, all three of its compile-time variants; the result is
/// saturated instead of truncated to 32 bits).
pub fn jiffies_to_msecs(jiffies: u64, hz: u64) -> u32 {
    // No 128-bit arithmetic: the kernel has no `__udivti3`.  A saturated
    // product still saturates the 32-bit result.
    const MSEC_PER_SEC: u64 = 1000;
    let ms = if hz == 0 {
        0
    } else if hz <= MSEC_PER_SEC && MSEC_PER_SEC.is_multiple_of(hz) {
        (MSEC_PER_SEC / hz).saturating_mul(jiffies)
    } else if hz > MSEC_PER_SEC && hz.is_multiple_of(MSEC_PER_SEC) {
        jiffies.div_ceil(hz / MSEC_PER_SEC)
    } else {
        jiffies.saturating_mul(MSEC_PER_SEC).div_ceil(hz)
    };
    u32::try_from(ms).unwrap_or(u32::MAX)
}

/// The timeout written back to user space when a wait is interrupted by a
/// signal (C: `jiffies_to_msecs(max(0l, timeout - 1))` for timeouts other
/// than 0 and infinite; the caller leaves those unchanged).
pub fn remaining_timeout_ms(remaining_jiffies: u64, hz: u64) -> u32 {
    jiffies_to_msecs(remaining_jiffies.saturating_sub(1), hz)
}

/// How many slot ids a signal page of `mapped_size` bytes provides: ids are
/// allocated below this bound (C: `idr_alloc(..., 0, p->signal_mapped_size /
/// 8, ...)`).  Clamped so signal ids never reach [`FIRST_NONSIGNAL_EVENT_ID`]
/// (upstream would only get there with a signal page of 8 GiB).
pub fn signal_slots(mapped_size: u64) -> u32 {
    u32::try_from(mapped_size / 8)
        .unwrap_or(u32::MAX)
        .min(FIRST_NONSIGNAL_EVENT_ID)
}

/// The lowest id in `start..=last` not in `used` (C: `idr_alloc(start,
/// last + 1)`), or `None` if all are taken (C: `-ENOSPC`).
///
/// `used` yields the ids in use in ascending order; ids below `start` are
/// skipped, and the walk stops at the first gap.
pub fn lowest_free_id(used: impl IntoIterator<Item = u32>, start: u32, last: u32) -> Option<u32> {
    let mut candidate = start;
    for id in used {
        if id < candidate {
            continue;
        }
        if id > candidate {
            break;
        }
        if candidate == last {
            return None;
        }
        candidate += 1;
    }
    (candidate <= last).then_some(candidate)
}

/// Finds the event a signal interrupt names (C:
/// `lookup_signaled_event_by_partial_id`).
///
/// `valid_bits` of `partial_id` are valid.  With at least 12 valid bits
/// (`1 << bits >= KFD_SIGNAL_EVENT_LIMIT`) the id is exact: it names its
/// event, unless the firmware updated the mailbox and the slot is not
/// signalled.  Otherwise every id `partial_id + k << valid_bits` is a
/// candidate and the first one whose slot is signalled and that has an event
/// is chosen.  `None` tells the caller to scan every slot.
///
/// `slot_signaled(id)` reads slot `id` of the signal page; `exists(id)`
/// tells whether event `id` exists.  The caller checks that a signal page is
/// registered.
pub fn lookup_signaled_by_partial_id(
    partial_id: u32,
    valid_bits: u32,
    mailbox_updated: bool,
    slot_signaled: impl Fn(u32) -> bool,
    exists: impl Fn(u32) -> bool,
) -> Option<u32> {
    if partial_id >= SIGNAL_EVENT_LIMIT {
        return None;
    }

    // Fast path: the id is not partial, one lookup does.
    if valid_bits > 31 || (1u32 << valid_bits) >= SIGNAL_EVENT_LIMIT {
        if mailbox_updated && !slot_signaled(partial_id) {
            return None;
        }
        return exists(partial_id).then_some(partial_id);
    }

    // Partial ids: the first matching id that has signalled.
    let step = 1u32 << valid_bits;
    let mut id = partial_id;
    while id < SIGNAL_EVENT_LIMIT {
        if slot_signaled(id) && exists(id) {
            return Some(id);
        }
        id += step;
    }
    None
}
