// SPDX-License-Identifier: GPL-2.0
//! The rkfd device interface (kgd2kfd / kfd2kgd) for Rust: bindgen output of
//! `include/rkfd/kgd_kfd_interface.h` (`scripts/gen-kgd-rs`).
//!
//! Included by both kernel crates, rkfd and the virtual amdgpu, with
//! `#[path = "../rust/kgd-kfd/src/interface.rs"] mod kgd;`.  Only their `kabi`
//! layers may use it: it is raw C ABI.

#![allow(
    dead_code,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    unreachable_pub,
    missing_docs,
    clippy::all,
    unsafe_op_in_unsafe_fn
)]

include!("bindings.rs");
