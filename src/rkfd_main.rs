// SPDX-License-Identifier: GPL-2.0

//! rkfd: AMD's amdkfd compute driver (`/dev/kfd`) in Rust.
//!
//! The crate root is a table of contents; each subsystem lives in its own
//! module.  Only [`kabi`] touches raw `bindings::` or the C shim.

#![crate_name = "rkfd"]

use crate::kabi::log::{kfd_err, kfd_info};
use kernel::{prelude::*, sync::Arc};

mod chardev;
mod debugfs;
mod device;
mod event;
/// GPU generations, shared with the host crate `kfd-logic` (and the virtual
/// GPU); at the crate root because `queue::rules` names it `crate::gfx`.
#[path = "../rust/kfd-logic/src/gfx.rs"]
#[expect(
    unreachable_pub,
    dead_code,
    reason = "a file shared with a host crate and the virtual GPU: `pub` items, some used only there"
)]
mod gfx;
mod interrupt;
mod ioctl;
mod kabi;
mod memory;
mod process;
mod procfs;
mod queue;
mod smi;
mod svm;
mod topology;
mod uapi;

module! {
    type: Rkfd,
    name: "rkfd",
    authors: ["The rkfd authors"],
    description: "AMD GPU compute driver (amdkfd) in Rust",
    license: "GPL",
}

/// The loaded module: owns the `/dev/kfd` registration.
struct Rkfd {
    /// The KFD topology in sysfs, under the kfd device: declared before
    /// `_chardev` so it is dropped first.
    _topology: Arc<topology::Topology>,
    /// `/dev/kfd`, class `kfd`: unregistered on drop.
    _chardev: kabi::Chardev,
    /// The SVM workqueue: drained and destroyed after the above.
    _svm_wq: kabi::hmm::SvmWq,
    /// The `kgd2kfd_*` exports call rkfd while this exists (withdrawn last;
    /// no GPU driver is loaded then: they link against the exports).
    _kgd2kfd: kabi::kgd::Kgd2KfdRegistration,
}

impl kernel::Module for Rkfd {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        device::init_module_state();
        process::init_module_state();
        let kgd2kfd = kabi::kgd::Kgd2KfdRegistration::new::<device::Kgd2KfdEntries>();
        let svm_wq = kabi::hmm::SvmWq::new()?;
        debugfs::init();
        smi::init_module_state();
        let chardev = kabi::Chardev::register::<chardev::KfdFile>()
            .inspect_err(|e| kfd_err!("failed to register /dev/kfd: {:?}\n", e))?;
        kfd_info!(
            "Initialized module, interface {}.{}, /dev/kfd major {}\n",
            uapi::KFD_IOCTL_MAJOR_VERSION,
            uapi::KFD_IOCTL_MINOR_VERSION,
            chardev.major()
        );
        let topology = topology::Topology::new()
            .inspect_err(|e| kfd_err!("failed to create the topology: {:?}\n", e))?;
        device::set_topology(topology.clone());
        process::create_sysfs_root()
            .inspect_err(|e| kfd_err!("failed to create the proc directory: {:?}\n", e))?;
        Ok(Rkfd {
            _topology: topology,
            _chardev: chardev,
            _svm_wq: svm_wq,
            _kgd2kfd: kgd2kfd,
        })
    }
}

impl Drop for Rkfd {
    fn drop(&mut self) {
        process::exit_module_state();
        debugfs::exit();
        smi::exit_module_state();
        device::exit_module_state();
        kfd_info!("Unloading module\n");
    }
}
