// SPDX-License-Identifier: GPL-2.0
//! Shared pieces of rkfd's guest programs: a test harness, raw /dev/kfd
//! access, typed ioctl wrappers and process plumbing, the fuzzer's and the
//! storm's reliability harness, a PRNG, a kernel-log watcher, user queues,
//! SVM and an SMI events client.

pub mod debugfs;
pub mod fuzz;
pub mod harness;
pub mod kfd;
pub mod kmsg;
pub mod ops;
pub mod queue;
pub mod rng;
pub mod smi;
pub mod svm;
