// SPDX-License-Identifier: GPL-2.0

//! The device cgroup: may the current task use a GPU's render node?
//!
//! C: upstream `kfd_devcgroup_check_permission()` (`kfd_priv.h`), through
//! `rkfd_shim_devcgroup_check_render()` in `shim/rkfd_cgroup.c`.  A container
//! given `/dev/kfd` but not `/dev/dri/renderD<minor>` (a cgroup v1
//! `devices.deny` entry or a cgroup v2 `BPF_PROG_TYPE_CGROUP_DEVICE`
//! program) must not see or use that GPU through KFD either.

use kernel::prelude::*;

use super::to_result;

use super::shim_ffi as shim;

/// `Ok` if the current task's device cgroup allows read and write access to
/// the DRM character device `226:render_minor`, else `-EPERM` (or whatever
/// the cgroup's BPF program answered).
pub(crate) fn check_render_node(render_minor: u32) -> Result {
    // SAFETY: The shim only reads the current task's cgroups (under RCU) and
    // runs their device programs; it takes no pointer, any minor is a valid
    // question, and any process context may ask it.
    to_result(unsafe { shim::rkfd_shim_devcgroup_check_render(render_minor) })
}
