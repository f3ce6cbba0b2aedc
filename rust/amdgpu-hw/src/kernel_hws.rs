// SPDX-License-Identifier: GPL-2.0

//! The HWS files as the virtual GPU compiles them: the driver's files as
//! rkfd compiles them (`kernel_dqm.rs`: `pm4.rs`, `kernel_queue.rs`,
//! `dqm.rs`, `qpd.rs`) and `hws.rs` (the CP firmware's scheduler).  Included with
//! `#[path]` as a module whose parent has the GPU generations in scope as
//! `gfx`, like `kernel_mqd.rs`; `hws.rs` names `pm4` through `super::`, as
//! in this host crate (`lib.rs`), which does not build this file.

/// The parent's GPU generations, for `kernel_dqm.rs`.
use super::gfx;

/// The driver's HWS files, with the generated layouts they name.
#[path = "kernel_dqm.rs"]
mod driver;
pub(crate) use driver::{dqm, kernel_queue, pm4, qpd};

/// The CP firmware's scheduler.
#[path = "hws.rs"]
#[allow(dead_code, unreachable_pub, reason = "a file shared with the host crate, rkfd and the virtual GPU")]
pub(crate) mod hws;
