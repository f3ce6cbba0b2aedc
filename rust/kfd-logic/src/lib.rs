// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Pure-logic parts of rkfd, tested on the host.
//!
//! Each module is one file that uses `core` only, so the kernel module can
//! include the same file with `#[path]`:
//!
//! - [`event_state`]: the KFD event state machine (`src/event.rs`).
//! - [`svm`]: SVM range bookkeeping and attribute algebra (`src/svm/`).

#![no_std]

pub mod event_state;
pub mod svm;
