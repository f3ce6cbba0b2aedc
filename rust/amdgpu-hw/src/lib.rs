// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The AMD hardware formats amdkfd uses for queues and interrupts, for
//! rkfd and the virtual GPU.  Core only; tested on the host.
//!
//! Every layout comes from the upstream headers (Linux 7.3) through
//! `scripts/gen-hw-rs` (bindgen), into [`generated`]; the modules here add
//! the logic of the upstream file each is named after:
//!
//! - [`mqd`]: memory queue descriptors, `kfd_mqd_manager_v9.c`,
//!   `kfd_mqd_manager_v10.c`, `kfd_mqd_manager_v11.c` and the CU-mask
//!   mapping of `kfd_mqd_manager.c` (layouts: `v9_structs.h`,
//!   `v10_structs.h`, `v11_structs.h`);
//! - [`pm4`]: the HWS packets of `kfd_pm4_headers_ai.h`, the runlist of
//!   `kfd_packet_manager.c` / `kfd_packet_manager_v9.c`, and a parser (what
//!   the CP firmware does with a runlist IB);
//! - [`dqm`]: the HWS half of `kfd_device_queue_manager.c` (runlist
//!   sent / preempted with a fence, hang on timeout, `sched_policy`,
//!   eviction counting);
//! - [`qpd`]: a process's SH_MEM settings on a device
//!   (`kfd_device_queue_manager_v9.c` / `_v10.c` / `_v11.c`'s
//!   `set_cache_memory_policy_*`, `update_qpd_*`), which MAP_PROCESS and
//!   MES carry;
//! - [`hws`]: the CP firmware's scheduler, the virtual GPU's side of the
//!   HIQ (no C counterpart);
//! - [`kernel_queue`]: the HIQ ring, `kfd_kernel_queue.c`'s
//!   acquire/submit/rollback, and the CP's reader of it;
//! - [`ih`]: SOC15 interrupt-handler ring entries, `soc15_int.h`,
//!   `amdgpu_ih.c`'s `amdgpu_ih_decode_iv_helper` and the payloads
//!   `kfd_int_process_v9.c` / `_v10.c` / `_v11.c` decode, with an encoder
//!   (what a GPU writes).
//!
//! Generations are chosen by [`kfd_logic::gfx::GfxVersion::arch`], never by
//! numbers compared in place.

#![no_std]

// For `ih`, which names it `super::gfx` (it is compiled into the kernel
// modules too, next to their own `gfx`).
use kfd_logic::gfx;

pub mod dqm;
pub mod generated;
pub mod hws;
pub mod ih;
pub mod kernel_queue;
pub mod mqd;
pub mod pm4;
pub mod qpd;
