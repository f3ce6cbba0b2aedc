// SPDX-License-Identifier: GPL-2.0 OR MIT

//! SMI events (System Management Interface), free of kernel types.
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_smi_events.c` (`kfd_smi_ev_enabled`,
//! `kfd_smi_event_add`, the kfifo of a client) and the `KFD_EVENT_FMT_*`
//! macros of `include/uapi/linux/kfd_ioctl.h`.
//!
//! Shared by the host crate `kfd-logic` (`cargo test`) and the kernel
//! module (`#[path]` from `src/smi.rs`), so `core` only.
//!
//! - [`Ring`]: the byte fifo of one client (C: `struct kfifo` of
//!   [`FIFO_SIZE`] bytes): an event line goes in whole or not at all; a read
//!   takes any number of bytes, possibly part of a line, as `kfifo_out`.
//! - [`enabled`]: whether a client receives an event (its mask, and the
//!   rule that a client without `CAP_SYS_ADMIN` only sees its own process).
//! - [`Line`] and the `fmt_*` functions: one event line as upstream's
//!   `scnprintf("%x ", event)` + `KFD_EVENT_FMT_*`, truncated to
//!   [`MSG_SIZE`]` - 1` bytes like `scnprintf`.

use core::fmt::{self, Write};

/// Bytes of a client's fifo (C: `KFD_MAX_KFIFO_SIZE`); also the most one
/// `read` returns.
pub const FIFO_SIZE: usize = 8192;

/// Size of the buffer an event line is formatted into (C:
/// `KFD_SMI_EVENT_MSG_SIZE`); a line is at most `MSG_SIZE - 1` bytes.
pub const MSG_SIZE: usize = 96;

/// Event ids (C: `enum kfd_smi_event`).
pub const VMFAULT: u32 = 1;
pub const THERMAL_THROTTLE: u32 = 2;
pub const GPU_PRE_RESET: u32 = 3;
pub const GPU_POST_RESET: u32 = 4;
pub const MIGRATE_START: u32 = 5;
pub const MIGRATE_END: u32 = 6;
pub const PAGE_FAULT_START: u32 = 7;
pub const PAGE_FAULT_END: u32 = 8;
pub const QUEUE_EVICTION: u32 = 9;
pub const QUEUE_RESTORE: u32 = 10;
pub const UNMAP_FROM_GPU: u32 = 11;
pub const PROCESS_START: u32 = 12;
pub const PROCESS_END: u32 = 13;

/// Why pages migrated (C: `enum KFD_MIGRATE_TRIGGERS`).
pub const MIGRATE_TRIGGER_PREFETCH: u32 = 0;
pub const MIGRATE_TRIGGER_PAGEFAULT_GPU: u32 = 1;
pub const MIGRATE_TRIGGER_PAGEFAULT_CPU: u32 = 2;
pub const MIGRATE_TRIGGER_TTM_EVICTION: u32 = 3;

/// Why a process's queues were evicted (C: `enum KFD_QUEUE_EVICTION_TRIGGERS`).
pub const QUEUE_EVICTION_TRIGGER_SVM: u32 = 0;
pub const QUEUE_EVICTION_TRIGGER_USERPTR: u32 = 1;
pub const QUEUE_EVICTION_TRIGGER_TTM: u32 = 2;
pub const QUEUE_EVICTION_TRIGGER_SUSPEND: u32 = 3;

/// Why SVM memory was unmapped from a GPU (C: `enum KFD_SVM_UNMAP_TRIGGERS`).
pub const SVM_UNMAP_TRIGGER_MMU_NOTIFY: u32 = 0;
pub const SVM_UNMAP_TRIGGER_MMU_NOTIFY_MIGRATE: u32 = 1;
pub const SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU: u32 = 2;

/// The trigger of the `UNMAP_FROM_GPU` an MMU-notifier invalidation sends
/// (C: `svm_range_unmap_from_cpu` for `munmap`, `svm_range_evict`
/// otherwise): `munmap` frees the memory; a migration's invalidation
/// (`MMU_NOTIFY_MIGRATE`) moves it; anything else changes the CPU mapping.
/// `None` with XNACK off except for `munmap`: upstream then evicts the
/// process's queues (a `QUEUE_EVICTION`) instead of unmapping.
pub fn unmap_trigger(munmap: bool, migrate: bool, xnack_on: bool) -> Option<u32> {
    if munmap {
        Some(SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU)
    } else if !xnack_on {
        None
    } else if migrate {
        Some(SVM_UNMAP_TRIGGER_MMU_NOTIFY_MIGRATE)
    } else {
        Some(SVM_UNMAP_TRIGGER_MMU_NOTIFY)
    }
}

/// `KFD_SMI_EVENT_MASK_FROM_INDEX(i)`; 0 outside 1..=64.
pub const fn mask_from_index(i: u32) -> u64 {
    if i >= 1 && i <= 64 {
        1u64 << (i - 1)
    } else {
        0
    }
}

/// Whether a client receives event `event` of process `tgid` (0: an event
/// of no process, e.g. a GPU reset) (C: `kfd_smi_ev_enabled`).  A client
/// opened without `CAP_SYS_ADMIN` (`suser == false`) receives only events of
/// its own thread group, whatever its mask says.
pub fn enabled(mask: u64, client_tgid: i32, suser: bool, tgid: i32, event: u32) -> bool {
    if tgid != 0 && client_tgid != tgid && !suser {
        return false;
    }
    mask & mask_from_index(event) != 0
}

/// A byte ring over a caller-owned buffer of [`FIFO_SIZE`] bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Ring {
    /// Index of the oldest byte.
    head: usize,
    /// Bytes stored.
    len: usize,
}

impl Ring {
    pub const fn new() -> Self {
        Ring { head: 0, len: 0 }
    }

    /// Bytes stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Free bytes (C: `kfifo_avail`).
    pub fn avail(&self, buf: &[u8]) -> usize {
        buf.len().saturating_sub(self.len)
    }

    /// Appends `data` whole if it fits, else stores nothing and returns
    /// `false` (upstream drops an event that does not fit).
    pub fn push(&mut self, buf: &mut [u8], data: &[u8]) -> bool {
        let cap = buf.len();
        if cap == 0 || self.avail(buf) < data.len() {
            return false;
        }
        let mut tail = (self.head + self.len) % cap;
        for &b in data {
            buf[tail] = b;
            tail = (tail + 1) % cap;
        }
        self.len += data.len();
        true
    }

    /// Moves up to `out.len()` of the oldest bytes to `out`; returns how many.
    pub fn pop(&mut self, buf: &[u8], out: &mut [u8]) -> usize {
        let cap = buf.len();
        let n = out.len().min(self.len);
        for slot in out.iter_mut().take(n) {
            *slot = buf[self.head];
            self.head = (self.head + 1) % cap;
        }
        self.len -= n;
        if self.len == 0 {
            self.head = 0;
        }
        n
    }
}

/// One event line being formatted: at most `MSG_SIZE - 1` bytes, the rest
/// cut off silently (C: `scnprintf` into `char[KFD_SMI_EVENT_MSG_SIZE]`).
pub struct Line {
    buf: [u8; MSG_SIZE],
    len: usize,
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = MSG_SIZE - 1 - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

impl Line {
    /// `"<event in hex> "` followed by `args`.
    pub fn new(event: u32, args: fmt::Arguments<'_>) -> Line {
        let mut line = Line { buf: [0; MSG_SIZE], len: 0 };
        // `write_str` never fails; truncation is silent as in C.
        let _ = write!(line, "{:x} ", event);
        let _ = line.write_fmt(args);
        line
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// A task name as the kernel keeps it (`TASK_COMM_LEN` bytes, NUL padded),
/// shown up to its first NUL; bytes that are not UTF-8 show as `?`.
pub struct Comm<'a>(pub &'a [u8]);

impl fmt::Display for Comm<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(self.0.len());
        for &b in &self.0[..end] {
            f.write_char(if b.is_ascii() { b as char } else { '?' })?;
        }
        Ok(())
    }
}

/// `KFD_EVENT_FMT_PROCESS(pid, task_name)`: `"%x %s\n"`, for
/// [`PROCESS_START`] or [`PROCESS_END`].
pub fn fmt_process(event: u32, pid: i32, comm: &[u8]) -> Line {
    Line::new(event, format_args!("{:x} {}\n", pid, Comm(comm)))
}

/// `KFD_EVENT_FMT_VMFAULT(pid, task_name)`: `"%x:%s\n"`.
pub fn fmt_vmfault(pid: i32, comm: &[u8]) -> Line {
    Line::new(VMFAULT, format_args!("{:x}:{}\n", pid, Comm(comm)))
}

/// `KFD_EVENT_FMT_UPDATE_GPU_RESET(seq, cause)`: `"%x %s\n"`.
pub fn fmt_gpu_reset(post: bool, seq: u32, cause: &str) -> Line {
    let event = if post { GPU_POST_RESET } else { GPU_PRE_RESET };
    Line::new(event, format_args!("{:x} {}\n", seq, cause))
}

/// `KFD_EVENT_FMT_THERMAL_THROTTLING(bitmask, counter)`: `"%llx:%llx\n"`.
pub fn fmt_thermal_throttle(bitmask: u64, counter: u64) -> Line {
    Line::new(THERMAL_THROTTLE, format_args!("{:x}:{:x}\n", bitmask, counter))
}

/// `KFD_EVENT_FMT_PAGEFAULT_START(ns, pid, addr, node, rw)`:
/// `"%lld -%d @%lx(%x) %c\n"`; `write` gives `'W'`, else `'R'`.
pub fn fmt_page_fault_start(ns: i64, pid: i32, addr: u64, node: u32, write: bool) -> Line {
    let rw = if write { 'W' } else { 'R' };
    Line::new(PAGE_FAULT_START, format_args!("{} -{} @{:x}({:x}) {}\n", ns, pid, addr, node, rw))
}

/// `KFD_EVENT_FMT_PAGEFAULT_END(ns, pid, addr, node, migrate_update)`:
/// `'M'` if the fault migrated, else `'U'`.
pub fn fmt_page_fault_end(ns: i64, pid: i32, addr: u64, node: u32, migrated: bool) -> Line {
    let mu = if migrated { 'M' } else { 'U' };
    Line::new(PAGE_FAULT_END, format_args!("{} -{} @{:x}({:x}) {}\n", ns, pid, addr, node, mu))
}

/// `KFD_EVENT_FMT_MIGRATE_START`: `"%lld -%d @%lx(%lx) %x->%x %x:%x %d\n"`
/// (start and size in pages).
#[allow(clippy::too_many_arguments)]
pub fn fmt_migrate_start(
    ns: i64,
    pid: i32,
    start: u64,
    size: u64,
    from: u32,
    to: u32,
    prefetch_loc: u32,
    preferred_loc: u32,
    trigger: u32,
) -> Line {
    Line::new(
        MIGRATE_START,
        format_args!(
            "{} -{} @{:x}({:x}) {:x}->{:x} {:x}:{:x} {}\n",
            ns, pid, start, size, from, to, prefetch_loc, preferred_loc, trigger as i32
        ),
    )
}

/// `KFD_EVENT_FMT_MIGRATE_END`: `"%lld -%d @%lx(%lx) %x->%x %d %d\n"`.
#[allow(clippy::too_many_arguments)]
pub fn fmt_migrate_end(
    ns: i64,
    pid: i32,
    start: u64,
    size: u64,
    from: u32,
    to: u32,
    trigger: u32,
    error_code: i32,
) -> Line {
    Line::new(
        MIGRATE_END,
        format_args!(
            "{} -{} @{:x}({:x}) {:x}->{:x} {} {}\n",
            ns, pid, start, size, from, to, trigger as i32, error_code
        ),
    )
}

/// `KFD_EVENT_FMT_QUEUE_EVICTION(ns, pid, node, trigger)`: `"%lld -%d %x %d\n"`.
pub fn fmt_queue_eviction(ns: i64, pid: i32, node: u32, trigger: u32) -> Line {
    Line::new(QUEUE_EVICTION, format_args!("{} -{} {:x} {}\n", ns, pid, node, trigger as i32))
}

/// `KFD_EVENT_FMT_QUEUE_RESTORE(ns, pid, node, rescheduled)`:
/// `"%lld -%d %x %c\n"`; `'R'` if the restore was rescheduled, else `'0'`.
pub fn fmt_queue_restore(ns: i64, pid: i32, node: u32, rescheduled: bool) -> Line {
    let c = if rescheduled { 'R' } else { '0' };
    Line::new(QUEUE_RESTORE, format_args!("{} -{} {:x} {}\n", ns, pid, node, c))
}

/// `KFD_EVENT_FMT_UNMAP_FROM_GPU(ns, pid, addr, size, node, trigger)`:
/// `"%lld -%d @%lx(%lx) %x %d\n"`.
pub fn fmt_unmap_from_gpu(ns: i64, pid: i32, addr: u64, size: u64, node: u32, trigger: u32) -> Line {
    Line::new(
        UNMAP_FROM_GPU,
        format_args!("{} -{} @{:x}({:x}) {:x} {}\n", ns, pid, addr, size, node, trigger as i32),
    )
}
