// SPDX-License-Identifier: GPL-2.0

//! The thin layer between the virtual amdgpu and C: the shim
//! (`vgpu_shim.c`), rkfd's `kgd2kfd_*` exports and the `kfd2kgd`
//! callbacks rkfd makes.
//!
//! Every call into C and every entry point C calls back (`vgpu_rs_*`,
//! `kfd2kgd_calls`) lives below this module, each with its safety argument.
//! Everything above it is safe Rust.  Review rule:
//! `git grep -n 'bindings::\|extern "C"' vgpu/ ':!vgpu/kabi*'` is empty.

use kernel::{
    ffi::c_int,
    prelude::*, //
};

mod device;
mod engine;
mod kfd;
mod mm;
mod shim;
#[cfg(CONFIG_KUNIT = "y")]
pub(crate) mod testing;

pub(crate) use device::Devices;
pub(crate) use engine::{
    cond_resched,
    Direct,
    online_cpus,
    should_stop,
    PageMap,
    Thread,
    ThreadMain, //
};
pub(crate) use kfd::{
    svm_fault,
    KfdDevice,
    KfdIrq,
    SVM_PTE_FRAME_MASK,
    SVM_PTE_VALID,
    SVM_PTE_VRAM,
    SVM_PTE_WRITE, //
};
pub(crate) use mm::{
    page_pfn,
    pfn_rw,
    total_ram,
    KernelMap,
    NoReclaim,
    PinnedPages,
    SharedPages, //
};

/// Converts a C return value (0 or `-errno`) into a [`Result`].
fn to_result(ret: c_int) -> Result {
    if ret < 0 {
        Err(Error::from_errno(ret))
    } else {
        Ok(())
    }
}

/// The `profile=` module parameter (a `charp`, which Rust parameters cannot
/// be, so the shim declares it).
pub(crate) fn profile_param() -> &'static CStr {
    // SAFETY: The shim returns the parameter's current value, a
    // NUL-terminated string that lives until the module is unloaded
    // (its permissions are 0444: nothing changes it after load).
    unsafe { CStr::from_char_ptr(shim::vgpu_shim_profile()) }
}
