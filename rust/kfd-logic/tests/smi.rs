// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Host tests of the SMI event logic against upstream's formats and rules.

use kfd_logic::smi::*;

fn s(l: &Line) -> &str {
    std::str::from_utf8(l.as_bytes()).unwrap()
}

#[test]
fn process_line_is_hex_pid_and_comm() {
    let mut comm = [0u8; 16];
    comm[..8].copy_from_slice(b"kfd-test");
    // "%x " event, then "%x %s\n".
    assert_eq!(s(&fmt_process(PROCESS_START, 0x1234, &comm)), "c 1234 kfd-test\n");
    assert_eq!(s(&fmt_process(PROCESS_END, 255, &comm)), "d ff kfd-test\n");
}

#[test]
fn formats_match_the_uapi_macros() {
    assert_eq!(s(&fmt_vmfault(10, b"a\0")), "1 a:a\n");
    assert_eq!(s(&fmt_gpu_reset(false, 3, "")), "3 3 \n");
    assert_eq!(s(&fmt_gpu_reset(true, 0x1f, "x")), "4 1f x\n");
    assert_eq!(s(&fmt_page_fault_start(123, 7, 0x7f00, 0xab, true)), "7 123 -7 @7f00(ab) W\n");
    assert_eq!(s(&fmt_page_fault_end(5, 7, 0x10, 1, false)), "8 5 -7 @10(1) U\n");
    assert_eq!(s(&fmt_migrate_start(1, 2, 0x100, 0x10, 0, 0xbeef, 0, 0xbeef, 1)), "5 1 -2 @100(10) 0->beef 0:beef 1\n");
    assert_eq!(s(&fmt_migrate_end(1, 2, 0x100, 0x10, 0xbeef, 0, 2, -14)), "6 1 -2 @100(10) beef->0 2 -14\n");
    assert_eq!(s(&fmt_queue_eviction(9, 3, 0xab, 2)), "9 9 -3 ab 2\n");
    assert_eq!(s(&fmt_queue_restore(9, 3, 0xab, false)), "a 9 -3 ab 0\n");
    assert_eq!(s(&fmt_queue_restore(9, 3, 0xab, true)), "a 9 -3 ab R\n");
    assert_eq!(s(&fmt_unmap_from_gpu(9, 3, 0x1000, 4, 0xab, 0)), "b 9 -3 @1000(4) ab 0\n");
}

#[test]
fn long_lines_are_cut_at_95_bytes() {
    let cause = "x".repeat(200);
    let l = fmt_gpu_reset(true, 1, &cause);
    assert_eq!(l.as_bytes().len(), MSG_SIZE - 1);
    assert!(s(&l).starts_with("4 1 xxx"));
}

#[test]
fn visibility_rule() {
    let all = !0u64;
    // Own process: per mask.
    assert!(enabled(all, 5, false, 5, PROCESS_START));
    assert!(!enabled(mask_from_index(PROCESS_END), 5, false, 5, PROCESS_START));
    // Other process: only a CAP_SYS_ADMIN client.
    assert!(!enabled(all, 5, false, 6, PROCESS_START));
    assert!(enabled(all, 5, true, 6, PROCESS_START));
    // Events of no process (tgid 0) reach everyone who asked.
    assert!(enabled(all, 5, false, 0, GPU_PRE_RESET));
    assert!(!enabled(0, 5, true, 0, GPU_PRE_RESET));
    assert_eq!(mask_from_index(0), 0);
    assert_eq!(mask_from_index(65), 0);
    assert_eq!(mask_from_index(64), 1 << 63);
}

#[test]
fn ring_keeps_lines_whole_and_reads_partially() {
    let mut buf = vec![0u8; 16];
    let mut r = Ring::new();
    assert!(r.push(&mut buf, b"0123456789"));
    assert!(!r.push(&mut buf, b"abcdefg"), "7 > 6 free: dropped whole");
    assert_eq!(r.len(), 10);
    let mut out = [0u8; 4];
    assert_eq!(r.pop(&buf, &mut out), 4);
    assert_eq!(&out, b"0123");
    assert!(r.push(&mut buf, b"abcdefghij"), "wraps around");
    let mut out = [0u8; 64];
    let n = r.pop(&buf, &mut out);
    assert_eq!(&out[..n], b"456789abcdefghij");
    assert!(r.is_empty());
    assert_eq!(r.pop(&buf, &mut out), 0);
}

#[test]
fn ring_matches_a_model_on_random_operations() {
    let mut buf = vec![0u8; 37];
    let mut r = Ring::new();
    let mut model = std::collections::VecDeque::new();
    let mut x = 0x1234_5678_9abc_def0u64;
    for i in 0..20000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = (x % 20) as usize;
        if x & (1 << 40) != 0 {
            let data: Vec<u8> = (0..n).map(|k| (i as usize + k) as u8).collect();
            let fits = model.len() + n <= buf.len();
            assert_eq!(r.push(&mut buf, &data), fits);
            if fits {
                model.extend(data);
            }
        } else {
            let mut out = vec![0u8; n];
            let got = r.pop(&buf, &mut out);
            let want: Vec<u8> = model.drain(..n.min(model.len())).collect();
            assert_eq!(&out[..got], &want[..]);
        }
        assert_eq!(r.len(), model.len());
    }
}

#[test]
fn thermal_throttle_is_two_hex_numbers() {
    // KFD_EVENT_FMT_THERMAL_THROTTLING: "%llx:%llx\n".
    assert_eq!(s(&fmt_thermal_throttle(0x3, 0x1a)), "2 3:1a\n");
    assert_eq!(s(&fmt_thermal_throttle(u64::MAX, 0)), "2 ffffffffffffffff:0\n");
}

#[test]
fn triggers_are_upstream_enum_values() {
    assert_eq!(
        (MIGRATE_TRIGGER_PREFETCH, MIGRATE_TRIGGER_PAGEFAULT_GPU, MIGRATE_TRIGGER_PAGEFAULT_CPU, MIGRATE_TRIGGER_TTM_EVICTION),
        (0, 1, 2, 3)
    );
    assert_eq!(
        (QUEUE_EVICTION_TRIGGER_SVM, QUEUE_EVICTION_TRIGGER_USERPTR, QUEUE_EVICTION_TRIGGER_TTM, QUEUE_EVICTION_TRIGGER_SUSPEND),
        (0, 1, 2, 3)
    );
    assert_eq!(
        (SVM_UNMAP_TRIGGER_MMU_NOTIFY, SVM_UNMAP_TRIGGER_MMU_NOTIFY_MIGRATE, SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU),
        (0, 1, 2)
    );
    // munmap wins (MMU_NOTIFY_UNMAP is never a migration), then migration;
    // XNACK off sends no unmap for anything but munmap (queues are evicted).
    for xnack in [false, true] {
        assert_eq!(unmap_trigger(true, false, xnack), Some(SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU));
        assert_eq!(unmap_trigger(true, true, xnack), Some(SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU));
    }
    assert_eq!(unmap_trigger(false, true, true), Some(SVM_UNMAP_TRIGGER_MMU_NOTIFY_MIGRATE));
    assert_eq!(unmap_trigger(false, false, true), Some(SVM_UNMAP_TRIGGER_MMU_NOTIFY));
    assert_eq!(unmap_trigger(false, true, false), None);
    assert_eq!(unmap_trigger(false, false, false), None);
}
