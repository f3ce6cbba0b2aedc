// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Helpers shared by the host tests and the benchmark.
#![allow(dead_code)]
pub mod btree_store;
