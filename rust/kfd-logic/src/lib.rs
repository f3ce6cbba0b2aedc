// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Pure-logic parts of rkfd, tested on the host.
//!
//! Each module is one file that uses `core` only, so the kernel module can
//! include the same file with `#[path]`:
//!
//! - [`gfx`]: GPU generations (`src/device.rs`, `src/queue.rs`, the
//!   virtual GPU's `vgpu/profile.rs`);
//! - [`event_state`]: the KFD event state machine (`src/event.rs`);
//! - [`mes`]: what a queue's MES request carries (`src/mes.rs`);
//! - [`mmap_offset`]: `/dev/kfd` mmap offsets (`src/chardev.rs`);
//! - [`queue_rules`]: queue argument validation, queue/doorbell/SDMA slot
//!   assignment, interrupt decoding (`src/queue.rs`, `src/interrupt.rs`);
//! - [`smi`]: SMI event fifo, visibility rule and line formats (`src/smi.rs`);
//! - [`svm`]: SVM range bookkeeping and attribute algebra (`src/svm/`).

#![no_std]

pub mod event_state;
pub mod gfx;
pub mod mes;
pub mod mmap_offset;
pub mod queue_rules;
pub mod smi;
pub mod svm;
