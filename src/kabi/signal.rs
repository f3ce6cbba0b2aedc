// SPDX-License-Identifier: GPL-2.0

//! Signals rkfd sends to processes (upstream `send_sig` in `kfd_events.c`).

use kernel::{bindings, task::Task};

/// Sends `SIGBUS` to `task` (C: `send_sig(SIGBUS, p->lead_thread, 0)` in
/// `kfd_signal_process_terminate_event`).
pub(crate) fn send_sigbus(task: &Task) {
    // SAFETY: `task` is a live task (the reference keeps it); `send_sig`
    // takes the task's locks itself and may be called from process context.
    unsafe { bindings::send_sig(bindings::SIGBUS as i32, task.as_ptr(), 0) };
}
