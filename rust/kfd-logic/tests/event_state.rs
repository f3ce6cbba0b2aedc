// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Host tests of the KFD event state machine (`src/event_state.rs`).
//!
//! Two kinds: scenario tests of the semantics ROCr relies on, and a
//! differential test that runs random operation sequences against both the
//! crate's model (set counts, lazy activation) and `c_model`, a direct
//! transcription of `kfd_events.c` (per-event wait queues, per-waiter
//! `activated` flags), and compares every observable.

use std::collections::BTreeMap;

use kfd_logic::event_state::*;

/// A table of events for the crate's model.
#[derive(Default)]
struct Table {
    events: BTreeMap<u32, EventState>,
    next_serial: u64,
}

impl EventTable for Table {
    type Event = EventState;
    fn get(&self, id: u32) -> Option<&EventState> {
        self.events.get(&id)
    }
    fn get_mut(&mut self, id: u32) -> Option<&mut EventState> {
        self.events.get_mut(&id)
    }
}

impl Table {
    fn create(&mut self, kind: Kind, auto_reset: bool) -> u32 {
        let (start, last) = if kind.has_slot() {
            (FIRST_SIGNAL_EVENT_ID, SIGNAL_EVENT_LIMIT - 1)
        } else {
            (FIRST_NONSIGNAL_EVENT_ID, LAST_NONSIGNAL_EVENT_ID)
        };
        let id = lowest_free_id(self.events.keys().copied(), start, last).expect("id space");
        self.next_serial += 1;
        self.events
            .insert(id, EventState::new(kind, auto_reset, self.next_serial));
        id
    }

    fn state(&self, id: u32) -> &EventState {
        &self.events[&id]
    }

    fn set(&mut self, id: u32) -> bool {
        self.events.get_mut(&id).unwrap().set()
    }

    /// Starts a wait like `kfd_wait_on_events` up to its first sleep:
    /// `Err(())` if an id is unknown (the waiters so far are released).
    fn begin(&mut self, reqs: &[(u32, u64)]) -> Result<Vec<Waiter>, ()> {
        let mut waiters = Vec::new();
        for &(id, age) in reqs {
            match Waiter::init(self, id, age) {
                Some(w) => waiters.push(w),
                None => {
                    release(&waiters, self, false);
                    return Err(());
                }
            }
        }
        Ok(waiters)
    }
}

#[test]
fn kinds() {
    assert_eq!(Kind::from_type(0), Kind::Signal);
    assert_eq!(Kind::from_type(3), Kind::HwException);
    assert_eq!(Kind::from_type(5), Kind::Debug);
    assert_eq!(Kind::from_type(8), Kind::Memory);
    for other in [1, 2, 4, 6, 7, 9, 1000, u32::MAX] {
        assert_eq!(Kind::from_type(other), Kind::Other);
    }
    assert!(
        Kind::Signal.can_cpu_signal() && Kind::Signal.can_gpu_signal() && Kind::Signal.has_slot()
    );
    assert!(
        !Kind::Debug.can_cpu_signal() && Kind::Debug.can_gpu_signal() && Kind::Debug.has_slot()
    );
    for k in [Kind::HwException, Kind::Memory, Kind::Other] {
        assert!(!k.can_cpu_signal() && !k.can_gpu_signal() && !k.has_slot());
    }
    assert_eq!(FIRST_NONSIGNAL_EVENT_ID, (i32::MAX as u32 >> 1) + 1);
    assert_eq!(LAST_NONSIGNAL_EVENT_ID, i32::MAX as u32);
}

#[test]
fn new_event_is_unsignalled_with_age_one() {
    let st = EventState::new(Kind::Signal, true, 7);
    assert!(!st.signaled());
    assert_eq!(st.age(), 1);
    assert_eq!(st.queued(), 0);
    assert_eq!(st.serial(), 7);
}

/// The `hsa_queue_destroy` case: two threads wait on the same auto-reset
/// event; one SET_EVENT must wake both, and the event must not stay
/// signalled afterwards.
#[test]
fn set_activates_every_waiter_of_auto_reset_event() {
    let mut t = Table::default();
    let e = t.create(Kind::Signal, true);
    let a = t.begin(&[(e, 0)]).unwrap();
    let b = t.begin(&[(e, 0)]).unwrap();
    assert_eq!(t.state(e).queued(), 2);
    assert_eq!(test_condition(false, &a, &t), WaitResult::Timeout);
    assert_eq!(test_condition(false, &b, &t), WaitResult::Timeout);

    assert!(t.set(e), "waiters were queued: sleepers must be woken");
    assert!(
        !t.state(e).signaled(),
        "auto-reset with waiters does not latch"
    );
    assert_eq!(test_condition(false, &a, &t), WaitResult::Complete);
    assert_eq!(test_condition(false, &b, &t), WaitResult::Complete);

    assert!(!release(&a, &mut t, false));
    assert!(!release(&b, &mut t, false));
    assert_eq!(t.state(e).queued(), 0);
    assert!(!t.state(e).signaled());
    // The next wait does not see the old signal.
    let c = t.begin(&[(e, 0)]).unwrap();
    assert_eq!(test_condition(false, &c, &t), WaitResult::Timeout);
}

#[test]
fn auto_reset_latches_without_waiters_and_first_wait_consumes() {
    let mut t = Table::default();
    let e = t.create(Kind::Signal, true);
    assert!(!t.set(e));
    assert!(t.state(e).signaled());
    let a = t.begin(&[(e, 0)]).unwrap();
    assert_eq!(test_condition(false, &a, &t), WaitResult::Complete);
    assert!(!t.state(e).signaled(), "consumed");
    assert_eq!(t.state(e).queued(), 0, "an activated waiter is not queued");
    release(&a, &mut t, false);
    let b = t.begin(&[(e, 0)]).unwrap();
    assert_eq!(test_condition(false, &b, &t), WaitResult::Timeout);
}

#[test]
fn manual_reset_stays_signalled_until_reset() {
    let mut t = Table::default();
    let e = t.create(Kind::Signal, false);
    let a = t.begin(&[(e, 0)]).unwrap();
    assert!(t.set(e));
    assert!(
        t.state(e).signaled(),
        "manual reset latches even with waiters"
    );
    assert_eq!(test_condition(false, &a, &t), WaitResult::Complete);
    release(&a, &mut t, false);
    for _ in 0..3 {
        let w = t.begin(&[(e, 0)]).unwrap();
        assert_eq!(test_condition(false, &w, &t), WaitResult::Complete);
        release(&w, &mut t, false);
    }
    t.events.get_mut(&e).unwrap().reset();
    let w = t.begin(&[(e, 0)]).unwrap();
    assert_eq!(test_condition(false, &w, &t), WaitResult::Timeout);
}

#[test]
fn a_second_set_while_an_activated_waiter_is_still_queued_does_not_latch() {
    // C: the waiter stays on the wait queue until free_waiters, so
    // waitqueue_active() is still true for the second set_event.
    let mut t = Table::default();
    let e = t.create(Kind::Signal, true);
    let a = t.begin(&[(e, 0)]).unwrap();
    t.set(e);
    t.set(e);
    assert!(!t.state(e).signaled());
    release(&a, &mut t, false);
    t.set(e);
    assert!(t.state(e).signaled(), "no waiter left: latches");
}

#[test]
fn event_age() {
    let mut t = Table::default();
    let e = t.create(Kind::Signal, false);
    // Age 1 = the caller's: not activated, not signalled.
    let mut a = t.begin(&[(e, 1)]).unwrap();
    assert!(a[0].age_enabled());
    assert_eq!(test_condition(false, &a, &t), WaitResult::Timeout);
    t.set(e);
    assert_eq!(t.state(e).age(), 2);
    assert_eq!(test_condition(false, &a, &t), WaitResult::Complete);
    let mut out = Vec::new();
    copy_out(&mut a, &t, |w, _, what| out.push((w.id(), what))).unwrap();
    assert_eq!(out, [(e, CopyOut::Age(2))]);
    release(&a, &mut t, false);

    // A stale age completes at once even after a reset.
    t.events.get_mut(&e).unwrap().reset();
    let b = t.begin(&[(e, 1)]).unwrap();
    assert_eq!(test_condition(false, &b, &t), WaitResult::Complete);
    assert!(!b[0].is_queued());
    release(&b, &mut t, false);

    // last_event_age 0: no age check and no age copied.
    t.set(e);
    let mut c = t.begin(&[(e, 0)]).unwrap();
    assert!(!c[0].age_enabled());
    let mut n = 0;
    copy_out(&mut c, &t, |_, _, _| n += 1).unwrap();
    assert_eq!(n, 0);

    // Ages are only checked for signal events.
    let m = t.create(Kind::Memory, false);
    let d = t.begin(&[(m, 5)]).unwrap();
    assert!(!d[0].age_enabled());
    assert_eq!(test_condition(false, &d, &t), WaitResult::Timeout);
}

#[test]
fn copy_out_by_kind() {
    let mut t = Table::default();
    let s = t.create(Kind::Signal, false);
    let m = t.create(Kind::Memory, false);
    let h = t.create(Kind::HwException, false);
    let o = t.create(Kind::Other, false);
    let d = t.create(Kind::Debug, false);
    for id in [s, m, h, o, d] {
        t.set(id);
    }
    let mut w = t
        .begin(&[(s, 0), (m, 0), (h, 0), (o, 0), (d, 0), (s, 9)])
        .unwrap();
    let mut out = Vec::new();
    copy_out(&mut w, &t, |w, _, what| out.push((w.id(), what))).unwrap();
    assert_eq!(
        out,
        [
            (m, CopyOut::Memory),
            (h, CopyOut::HwException),
            (s, CopyOut::Age(2))
        ]
    );
}

#[test]
fn wait_all_and_any() {
    let mut t = Table::default();
    let a = t.create(Kind::Signal, false);
    let b = t.create(Kind::Signal, false);
    t.set(a);
    let w = t.begin(&[(a, 0), (b, 0)]).unwrap();
    assert_eq!(test_condition(true, &w, &t), WaitResult::Timeout);
    assert_eq!(test_condition(false, &w, &t), WaitResult::Complete);
    t.set(b);
    assert_eq!(test_condition(true, &w, &t), WaitResult::Complete);
    let empty: [Waiter; 0] = [];
    assert_eq!(test_condition(false, &empty, &t), WaitResult::Complete);
    assert_eq!(test_condition(true, &empty, &t), WaitResult::Complete);
}

#[test]
fn destroyed_events_fail_the_wait_and_the_copy() {
    let mut t = Table::default();
    let a = t.create(Kind::Signal, false);
    let b = t.create(Kind::Signal, false);
    let mut w = t.begin(&[(a, 0), (b, 0)]).unwrap();
    t.events.remove(&b);
    assert_eq!(test_condition(true, &w, &t), WaitResult::Fail);
    // Any-wait: an earlier activated waiter wins over a later failure (C order).
    t.set(a);
    assert_eq!(test_condition(false, &w, &t), WaitResult::Complete);
    let mut n = 0;
    assert_eq!(copy_out(&mut w, &t, |_, _, _| n += 1), Err(EventGone));
    // A recycled id is not the waited-for event.
    let b2 = t.create(Kind::Signal, false);
    assert_eq!(b2, b);
    t.set(b2);
    assert_eq!(test_condition(true, &w, &t), WaitResult::Fail);
    assert_eq!(t.state(b2).queued(), 0);
    release(&w, &mut t, false);
    assert_eq!(t.state(a).queued(), 0);
    assert_eq!(t.state(b2).queued(), 0);
}

#[test]
fn unknown_event_releases_the_waiters_so_far() {
    let mut t = Table::default();
    let a = t.create(Kind::Signal, true);
    t.set(a);
    assert!(t.begin(&[(a, 0), (12345, 0)]).is_err());
    assert_eq!(t.state(a).queued(), 0);
    // As upstream: the signal consumed by the first waiter is not given back.
    assert!(!t.state(a).signaled());
    assert!(Waiter::init(&mut t, 0, 0).is_none());
}

#[test]
fn interrupted_wait_gives_back_consumed_auto_reset_signals() {
    let mut t = Table::default();
    let a = t.create(Kind::Signal, true);
    let b = t.create(Kind::Signal, true);
    t.set(a);
    let w = t.begin(&[(a, 0), (b, 0)]).unwrap();
    assert!(!t.state(a).signaled());
    // Interrupted (-ERESTARTSYS): undo.
    assert!(!release(&w, &mut t, true));
    assert!(t.state(a).signaled(), "signal given back");
    assert!(!t.state(b).signaled(), "b was never activated");
    assert_eq!(t.state(a).age(), 3, "the undo is a set: the age moves");

    // Queued and activated by a set that did not latch: given back too,
    // waking the other waiters still queued.
    let c = t.create(Kind::Signal, true);
    let w1 = t.begin(&[(c, 0)]).unwrap();
    let w2 = t.begin(&[(c, 0)]).unwrap();
    t.set(c);
    assert!(!t.state(c).signaled());
    assert!(release(&w1, &mut t, true), "w2 still queued: wake");
    assert!(!t.state(c).signaled());
    assert!(!release(&w2, &mut t, true));
    assert!(t.state(c).signaled());
}

#[test]
fn age_never_wraps_to_reserved_values() {
    let mut st = EventState::new(Kind::Signal, false, 1);
    for _ in 0..10 {
        st.set();
    }
    assert_eq!(st.age(), 11);
    assert_eq!(st.sets(), 10);
}

#[test]
fn timeouts() {
    let hz1000 = |ms: u32| u64::from(ms);
    assert_eq!(user_timeout_to_jiffies(0, hz1000), 0);
    assert_eq!(
        user_timeout_to_jiffies(u32::MAX, hz1000),
        MAX_SCHEDULE_TIMEOUT
    );
    assert_eq!(user_timeout_to_jiffies(1, hz1000), 2);
    assert_eq!(user_timeout_to_jiffies(1000, hz1000), 1001);
    // ROCr's "almost infinite" 0xfffffffe stays finite, clamped to 2^31-1 ms.
    assert_eq!(user_timeout_to_jiffies(0xffff_fffe, hz1000), 0x8000_0000);
    let hz250 = |ms: u32| u64::from(ms).div_ceil(4);
    assert_eq!(user_timeout_to_jiffies(10, hz250), 4);

    assert_eq!(jiffies_to_msecs(7, 1000), 7);
    assert_eq!(jiffies_to_msecs(7, 250), 28);
    assert_eq!(jiffies_to_msecs(7, 100), 70);
    assert_eq!(jiffies_to_msecs(7, 2000), 4);
    assert_eq!(jiffies_to_msecs(3, 300), 10);
    assert_eq!(jiffies_to_msecs(u64::MAX, 100), u32::MAX);
    assert_eq!(jiffies_to_msecs(5, 0), 0);
    assert_eq!(remaining_timeout_ms(0, 1000), 0);
    assert_eq!(remaining_timeout_ms(1, 1000), 0);
    assert_eq!(remaining_timeout_ms(501, 1000), 500);
    assert_eq!(remaining_timeout_ms(51, 250), 200);
}

#[test]
fn id_allocation() {
    assert_eq!(lowest_free_id([], 1, 4095), Some(1));
    assert_eq!(lowest_free_id([1, 2, 3], 1, 4095), Some(4));
    assert_eq!(lowest_free_id([1, 3], 1, 4095), Some(2));
    assert_eq!(lowest_free_id([0, 5, 6], 5, 7), Some(7));
    assert_eq!(lowest_free_id([5, 6, 7], 5, 7), None);
    assert_eq!(
        lowest_free_id(
            [1, 2, FIRST_NONSIGNAL_EVENT_ID],
            FIRST_NONSIGNAL_EVENT_ID,
            LAST_NONSIGNAL_EVENT_ID
        ),
        Some(FIRST_NONSIGNAL_EVENT_ID + 1)
    );
    assert_eq!(
        lowest_free_id(
            [LAST_NONSIGNAL_EVENT_ID],
            LAST_NONSIGNAL_EVENT_ID,
            LAST_NONSIGNAL_EVENT_ID
        ),
        None
    );
    assert_eq!(lowest_free_id([], 3, 2), None);

    assert_eq!(signal_slots(0), 0);
    assert_eq!(signal_slots(4096 * 8), 4096);
    assert_eq!(signal_slots(4096 * 8 + 7), 4096);
    assert_eq!(signal_slots(u64::MAX), FIRST_NONSIGNAL_EVENT_ID);
}

#[test]
fn partial_id_lookup() {
    let signalled = [13u32, 21, 4000];
    let exists = [5u32, 13, 21, 29];
    let slot = |id: u32| signalled.contains(&id);
    let ev = |id: u32| exists.contains(&id);

    // Exact ids (>= 12 valid bits).
    assert_eq!(
        lookup_signaled_by_partial_id(5, 32, false, slot, ev),
        Some(5)
    );
    assert_eq!(
        lookup_signaled_by_partial_id(5, 12, true, slot, ev),
        None,
        "mailbox says not signalled"
    );
    assert_eq!(
        lookup_signaled_by_partial_id(13, 12, true, slot, ev),
        Some(13)
    );
    assert_eq!(
        lookup_signaled_by_partial_id(6, 32, false, slot, ev),
        None,
        "no such event"
    );
    assert_eq!(
        lookup_signaled_by_partial_id(4096, 32, false, slot, ev),
        None
    );
    // 3 valid bits: candidates 5, 13, 21, ...: 13 is the first signalled one.
    assert_eq!(
        lookup_signaled_by_partial_id(5, 3, false, slot, ev),
        Some(13)
    );
    // 4 valid bits: candidates 5, 21, 37, ...
    assert_eq!(
        lookup_signaled_by_partial_id(5, 4, false, slot, ev),
        Some(21)
    );
    // Signalled slot without an event is skipped (4000 = 0 + 125 * 32).
    assert_eq!(lookup_signaled_by_partial_id(0, 5, false, slot, ev), None);
    // 0 valid bits: every id from partial_id on.
    assert_eq!(
        lookup_signaled_by_partial_id(14, 0, false, slot, ev),
        Some(21)
    );
}

// ---------------------------------------------------------------------------
// Differential test against a transcription of kfd_events.c.
// ---------------------------------------------------------------------------

mod c_model {
    //! `struct kfd_event` with a wait queue of waiter indices, and
    //! `struct kfd_event_waiter` with `event` and `activated`, operated on
    //! exactly as the C functions do.  One deliberate difference from the C
    //! code, which rkfd also makes: destroying an event detaches *every*
    //! waiter of it, not only the queued ones (C leaves the others with a
    //! dangling pointer).

    use super::Kind;
    use std::collections::BTreeMap;

    pub struct Event {
        pub kind: Kind,
        pub auto_reset: bool,
        pub signaled: bool,
        pub age: u64,
        pub wq: Vec<usize>,
    }

    #[derive(Clone, Copy)]
    pub struct Waiter {
        pub event: Option<u32>,
        pub activated: bool,
        pub age_enabled: bool,
    }

    #[derive(Default)]
    pub struct Process {
        pub events: BTreeMap<u32, Event>,
        pub waiters: Vec<Waiter>,
    }

    impl Process {
        pub fn create(&mut self, id: u32, kind: Kind, auto_reset: bool) {
            self.events.insert(
                id,
                Event {
                    kind,
                    auto_reset,
                    signaled: false,
                    age: 1,
                    wq: Vec::new(),
                },
            );
        }

        pub fn destroy(&mut self, id: u32) {
            self.events.remove(&id);
            for w in &mut self.waiters {
                if w.event == Some(id) {
                    w.event = None;
                }
            }
        }

        pub fn set_event(&mut self, id: u32) {
            let ev = self.events.get_mut(&id).unwrap();
            ev.signaled = !ev.auto_reset || ev.wq.is_empty();
            ev.age = ev.age.wrapping_add(1);
            if ev.age == 0 {
                ev.age = 2;
            }
            for &w in &ev.wq {
                self.waiters[w].activated = true;
            }
        }

        pub fn reset_event(&mut self, id: u32) {
            self.events.get_mut(&id).unwrap().signaled = false;
        }

        /// init_event_waiter; returns the waiter index.
        pub fn init_event_waiter(&mut self, id: u32, last_event_age: u64) -> Option<usize> {
            let idx = self.waiters.len();
            let ev = self.events.get_mut(&id)?;
            let mut w = Waiter {
                event: Some(id),
                activated: ev.signaled,
                age_enabled: false,
            };
            ev.signaled = ev.signaled && !ev.auto_reset;
            if ev.kind == Kind::Signal && last_event_age != 0 {
                w.age_enabled = true;
                if ev.age != last_event_age {
                    w.activated = true;
                }
            }
            if !w.activated {
                ev.wq.push(idx);
            }
            self.waiters.push(w);
            Some(idx)
        }

        pub fn test_event_condition(&self, all: bool, ws: &[usize]) -> u32 {
            let mut n = 0;
            for &i in ws {
                let w = &self.waiters[i];
                if w.event.is_none() {
                    return 2;
                }
                if w.activated {
                    if !all {
                        return 0;
                    }
                    n += 1;
                }
            }
            if n == ws.len() {
                0
            } else {
                1
            }
        }

        pub fn free_waiters(&mut self, ws: &[usize], undo: bool) {
            for &i in ws {
                let Some(id) = self.waiters[i].event else {
                    continue;
                };
                let ev = self.events.get_mut(&id).unwrap();
                ev.wq.retain(|&x| x != i);
                if undo && self.waiters[i].activated && ev.auto_reset {
                    self.set_event(id);
                }
            }
        }

        /// copy_signaled_event_data: (index, what) or Err at a destroyed event.
        pub fn copy_signaled_event_data(
            &self,
            ws: &[usize],
        ) -> (Vec<(usize, super::CopyOut)>, bool) {
            let mut out = Vec::new();
            for (k, &i) in ws.iter().enumerate() {
                let w = &self.waiters[i];
                let Some(id) = w.event else {
                    return (out, false);
                };
                let ev = &self.events[&id];
                if w.activated {
                    match ev.kind {
                        Kind::Memory => out.push((k, super::CopyOut::Memory)),
                        Kind::HwException => out.push((k, super::CopyOut::HwException)),
                        Kind::Signal if w.age_enabled => out.push((k, super::CopyOut::Age(ev.age))),
                        _ => {}
                    }
                }
            }
            (out, true)
        }
    }
}

/// xorshift64*: deterministic, no external crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

struct Session {
    all: bool,
    ours: Vec<Waiter>,
    theirs: Vec<usize>,
}

fn compare_events(t: &Table, c: &c_model::Process) {
    assert_eq!(t.events.len(), c.events.len());
    for (id, st) in &t.events {
        let ev = &c.events[id];
        assert_eq!(st.signaled(), ev.signaled, "signaled of {id}");
        assert_eq!(st.age(), ev.age, "age of {id}");
        assert_eq!(st.queued() as usize, ev.wq.len(), "queued of {id}");
        assert_eq!(st.kind(), ev.kind);
    }
}

fn random_run(seed: u64, steps: usize) {
    let mut rng = Rng(seed | 1);
    let mut t = Table::default();
    let mut c = c_model::Process::default();
    let mut sessions: Vec<Session> = Vec::new();
    let kinds = [
        Kind::Signal,
        Kind::Signal,
        Kind::Signal,
        Kind::Debug,
        Kind::Memory,
        Kind::HwException,
        Kind::Other,
    ];

    for _ in 0..steps {
        let ids: Vec<u32> = t.events.keys().copied().collect();
        let pick = |rng: &mut Rng| -> u32 {
            if ids.is_empty() || rng.chance(5) {
                // Sometimes an id that does not exist.
                [0, 77, FIRST_NONSIGNAL_EVENT_ID + 50][rng.below(3)]
            } else {
                ids[rng.below(ids.len())]
            }
        };
        match rng.below(100) {
            0..=11 if t.events.len() < 12 => {
                let kind = kinds[rng.below(kinds.len())];
                let auto = rng.chance(50);
                let id = t.create(kind, auto);
                c.create(id, kind, auto);
            }
            12..=16 => {
                let id = pick(&mut rng);
                if t.events.remove(&id).is_some() {
                    c.destroy(id);
                }
            }
            17..=44 => {
                // SET_EVENT, or a GPU interrupt for slot-backed events.
                let id = pick(&mut rng);
                let gpu = rng.chance(30);
                if let Some(st) = t.events.get_mut(&id) {
                    let ok = if gpu {
                        st.kind().can_gpu_signal()
                    } else {
                        st.kind().can_cpu_signal()
                    };
                    if ok {
                        st.set();
                        c.set_event(id);
                    }
                }
            }
            45..=52 => {
                let id = pick(&mut rng);
                if let Some(st) = t.events.get_mut(&id) {
                    if st.kind().can_cpu_signal() {
                        st.reset();
                        c.reset_event(id);
                    }
                }
            }
            53..=74 if sessions.len() < 6 => {
                // Begin a wait on 1..4 events (duplicates allowed).
                let n = 1 + rng.below(4);
                let reqs: Vec<(u32, u64)> = (0..n)
                    .map(|_| {
                        let id = pick(&mut rng);
                        let age = match rng.below(4) {
                            0 => 0,
                            1 => 1,
                            _ => t
                                .events
                                .get(&id)
                                .map_or(3, |s| s.age() - rng.below(2) as u64),
                        };
                        (id, age)
                    })
                    .collect();
                let all = rng.chance(30);
                let ours = t.begin(&reqs);
                let mut theirs = Vec::new();
                let mut failed = false;
                for &(id, age) in &reqs {
                    match c.init_event_waiter(id, age) {
                        Some(i) => theirs.push(i),
                        None => {
                            failed = true;
                            break;
                        }
                    }
                }
                if failed {
                    c.free_waiters(&theirs, false);
                }
                assert_eq!(ours.is_err(), failed);
                if let Ok(ours) = ours {
                    assert_eq!(
                        test_condition(all, &ours, &t).to_raw(),
                        c.test_event_condition(all, &theirs)
                    );
                    sessions.push(Session { all, ours, theirs });
                }
            }
            75..=84 if !sessions.is_empty() => {
                // Re-test a sleeping waiter (a wake-up).
                let s = &sessions[rng.below(sessions.len())];
                assert_eq!(
                    test_condition(s.all, &s.ours, &t).to_raw(),
                    c.test_event_condition(s.all, &s.theirs)
                );
            }
            85..=99 if !sessions.is_empty() => {
                // End a wait: copy out if complete, then free (undo = interrupted).
                let mut s = sessions.swap_remove(rng.below(sessions.len()));
                let r = test_condition(s.all, &s.ours, &t);
                assert_eq!(r.to_raw(), c.test_event_condition(s.all, &s.theirs));
                if r == WaitResult::Complete {
                    let mut ours_out = Vec::new();
                    let base = s.ours.as_ptr() as usize;
                    let res = copy_out(&mut s.ours, &t, |w, _, what| {
                        let k =
                            (w as *const Waiter as usize - base) / std::mem::size_of::<Waiter>();
                        ours_out.push((k, what));
                    });
                    let (theirs_out, ok) = c.copy_signaled_event_data(&s.theirs);
                    assert_eq!(ours_out, theirs_out);
                    assert_eq!(res.is_ok(), ok);
                }
                let undo = rng.chance(30);
                release(&s.ours, &mut t, undo);
                c.free_waiters(&s.theirs, undo);
            }
            _ => {}
        }
        compare_events(&t, &c);
    }
    for s in sessions {
        release(&s.ours, &mut t, false);
        c.free_waiters(&s.theirs, false);
    }
    compare_events(&t, &c);
    for st in t.events.values() {
        assert_eq!(st.queued(), 0);
    }
}

#[test]
fn random_sequences_match_the_c_model() {
    for seed in 0..3000u64 {
        random_run(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15), 300);
    }
}
