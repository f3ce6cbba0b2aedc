// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The virtual GPU's software engines, as pure logic over a [`mem::GpuMemory`].
//!
//! Each module is one `core`-only file that the kernel module includes with
//! `#[path]` under the same names (`vgpu/engine.rs`), so siblings are
//! reached as `super::mem` etc.:
//!
//! - [`mem`]: what an engine sees of the GPU (memory through the VM,
//!   interrupts, the clock) and how a run of a queue ends;
//! - [`aql`]: the AQL packet processor (compute queues of type AQL);
//! - [`pm4`]: the PM4 processor (compute queues of type COMPUTE);
//! - [`sdma`]: the SDMA engine (SDMA 4.x / 5.2 / 6.0 linear packets);
//! - [`sched`]: which queue the scheduler serves next.

#![no_std]

pub mod aql;
pub mod mem;
pub mod pm4;
pub mod sched;
pub mod sdma;
