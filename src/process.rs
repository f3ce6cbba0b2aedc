// SPDX-License-Identifier: GPL-2.0

//! KFD processes: the driver's per-process context.
//!
//! C: `struct kfd_process` (`drivers/gpu/drm/amd/amdkfd/kfd_process.c`).
//! For now a process is created per open of `/dev/kfd` and remembers the
//! thread group that opened it; only that thread group may use the file
//! (upstream's `lead_thread` rule).

use kernel::{
    current,
    prelude::*,
    sync::{aref::ARef, Arc},
    task::Task, //
};

/// A KFD process.
pub(crate) struct Process {
    /// The group leader of the thread group that opened `/dev/kfd`.
    lead_thread: ARef<Task>,
}

impl Process {
    /// Creates the process context for the current thread group.
    pub(crate) fn new_for_current() -> Result<Arc<Self>> {
        let lead_thread: ARef<Task> = current!().group_leader().into();
        Ok(Arc::new(Process { lead_thread }, GFP_KERNEL)?)
    }

    /// Whether the calling thread belongs to the thread group that opened
    /// the file (a forked child or a process that received the fd does not).
    pub(crate) fn is_caller_opener(&self) -> bool {
        *current!().group_leader() == *self.lead_thread
    }
}
