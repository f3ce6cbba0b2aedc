// SPDX-License-Identifier: GPL-2.0
//! Shared pieces of rkfd's guest programs: a test harness and raw /dev/kfd access.

pub mod harness;
pub mod kfd;
pub mod ops;
pub mod queue;
pub mod svm;
