// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The scheduler model: proportional share, no starvation, no idle credit.

use gpu_engines::sched::*;

/// Serves `turns` packets among always-busy queues; returns packets each got.
fn serve(entries: &mut [Entry], turns: u32) -> Vec<u64> {
    let mut clock = Clock::default();
    let mut got = vec![0u64; entries.len()];
    for _ in 0..turns {
        let i = clock.pick(entries.iter()).unwrap();
        clock.charge(&mut entries[i], 1);
        got[i] += 1;
    }
    got
}

#[test]
fn priority_15_gets_twice_priority_7() {
    let mut e = [Entry::new(15, 100), Entry::new(7, 100)];
    let got = serve(&mut e, 30_000);
    // Weights 16:8: exactly 2:1 up to one stride's rounding.
    assert!(got[0].abs_diff(2 * got[1]) <= 2, "{got:?}");
}

#[test]
fn percentage_scales_and_zero_is_inactive() {
    let mut e = [Entry::new(7, 100), Entry::new(7, 25), Entry::new(15, 0)];
    let got = serve(&mut e, 10_000);
    assert!(got[0].abs_diff(4 * got[1]) <= 4, "{got:?}");
    assert_eq!(got[2], 0);
    let clock = Clock::default();
    assert_eq!(clock.pick([Entry::new(3, 0)].iter()), None);
    assert_eq!(weight(99, 999), 16 * 100);
}

#[test]
fn lowest_weight_is_not_starved() {
    let mut e = [Entry::new(15, 100), Entry::new(15, 100), Entry::new(0, 1)];
    let mut clock = Clock::default();
    let mut last = 0;
    let mut worst_gap = 0;
    for t in 0..100_000u32 {
        let i = clock.pick(e.iter()).unwrap();
        clock.charge(&mut e[i], 1);
        if i == 2 {
            worst_gap = worst_gap.max(t - last);
            last = t;
        }
    }
    // Weight 1 against 2 × 1600: served about every 3200 turns.
    assert!(last > 90_000 && worst_gap <= 3300, "last {last}, gap {worst_gap}");
}

#[test]
fn idle_time_earns_no_credit() {
    let mut busy = Entry::new(7, 100);
    let mut clock = Clock::default();
    for _ in 0..1000 {
        clock.charge(&mut busy, 1);
    }
    // A queue of the same weight wakes after being idle all that time.
    let mut late = Entry::new(7, 100);
    clock.wake(&mut late);
    let mut e = [busy, late];
    let got = {
        let mut got = [0u64; 2];
        for _ in 0..100 {
            let i = clock.pick(e.iter()).unwrap();
            clock.charge(&mut e[i], 1);
            got[i] += 1;
        }
        got
    };
    assert!(got[0].abs_diff(got[1]) <= 2, "{got:?}");
    // A turn that served nothing still costs.
    let mut a = Entry::new(15, 100);
    let before = a.pass;
    clock.charge(&mut a, 0);
    assert!(a.pass > before);
    // UPDATE_QUEUE changes the weight.
    clock.update(&mut a, 0, 50);
    assert_eq!(a.weight, 50);
}

#[test]
fn polling_spins_then_sleeps_short_then_long() {
    assert_eq!(poll(0), Poll::Spin);
    assert_eq!(poll(SPIN_NS - 1), Poll::Spin);
    assert_eq!(poll(SPIN_NS), Poll::SleepUs(SHORT_US));
    assert_eq!(poll(SHORT_NS - 1), Poll::SleepUs(SHORT_US));
    assert_eq!(poll(SHORT_NS), Poll::WaitMs(LONG_MS));
    assert_eq!(poll(u64::MAX), Poll::WaitMs(LONG_MS));
    // The short interval is what bounds the doorbell latency of a GPU
    // that was busy recently: under 100 us.
    assert!(SHORT_US < 100);
}

#[test]
fn queues_spread_over_workers() {
    assert_eq!(spread([]), None);
    assert_eq!(spread([0]), Some(0));
    assert_eq!(spread([3, 1, 1]), Some(1));
    let mut loads = [0usize; 3];
    for _ in 0..9 {
        let w = spread(loads).unwrap();
        loads[w] += 1;
    }
    assert_eq!(loads, [3, 3, 3]);
}
