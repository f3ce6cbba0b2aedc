// SPDX-License-Identifier: GPL-2.0

//! amdgpu: a virtual AMD GPU for rkfd.
//!
//! Plays the part the real amdgpu driver plays on a ROCm host, for GPUs
//! that do not exist: for each of `num_gpus` GPUs of one `profile` it
//! creates a parent device named like a PCI function (`0000:c1:00.0`), a
//! DRM render node, amdgpu's sysfs files and a hwmon, and registers the GPU
//! with rkfd through the C-ABI device interface
//! (`include/rkfd/kgd_kfd_interface.h`), implementing `kfd2kgd`: VMs bound to
//! render-node files, VRAM/GTT/user-pointer memory objects, a software GPU
//! page table, kernel mappings and a clock counter.
//!
//! Named `amdgpu` because ROCm user space looks for a module of that name
//! (`lsmod | grep amdgpu`, `/sys/module/amdgpu/initstate`).
//!
//! Parameters: `profile=gfx90a|gfx1030|gfx1100|gfx1103` (default gfx90a,
//! read only, in `/sys/module/amdgpu/parameters/profile`), `num_gpus=1..4`,
//! `vram_mb=` (0: the profile's default).  Built by the top-level `make`
//! after rkfd; `scripts/vm-run --gpu PROFILE -- CMD` loads both.
//!
//! Tests: KUnit suites `amdgpu_vgpu_*` run when the module loads (the
//! render-node suite maps memory objects into the test thread's own mm);
//! `cargo test -p gpu-pagetable` tests the page table on the host;
//! `rust/kfd-tests/src/bin/vgpu-render.rs` tests from user space.
//!
//! Module map: [`profile`] (what the GPU is), [`gpu`] (one GPU's state and
//! life cycle), [`vram`] (device memory), [`sysmem`] (GTT and user-pointer
//! limits), [`mem`] (memory objects), [`vm`] (GPU address spaces),
//! [`pagetable`] (their page tables), [`kabi`] (the only code that touches
//! C: shim, rkfd's interface, callbacks).

#![crate_name = "amdgpu"]

use kernel::prelude::*;

mod engine;
mod gpu;
mod isa;
mod kabi;
mod kfd2kgd;
mod mem;
mod profile;
mod sysmem;
mod vm;
mod vram;

#[path = "../rust/gpu-pagetable/src/table.rs"]
#[allow(dead_code, unreachable_pub)]
mod pagetable;

#[path = "../rust/kfd-uapi/src/abi.rs"]
#[allow(
    dead_code,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    unreachable_pub,
    clippy::all
)]
mod uapi;

module! {
    type: Amdgpu,
    name: "amdgpu",
    authors: ["The rkfd authors"],
    description: "Virtual AMD GPU for rkfd (amdkfd in Rust)",
    license: "GPL",
    params: {
        num_gpus: u32 {
            default: 1,
            description: "Number of virtual GPUs (1-4)",
        },
        vram_mb: u32 {
            default: 0,
            description: "VRAM per GPU in MiB (0: the profile's default; at most 65536)",
        },
    },
}

/// The most virtual GPUs.
const MAX_GPUS: u32 = 4;
/// The most VRAM per GPU, MiB.
const MAX_VRAM_MB: u32 = 65536;

/// The loaded module: its GPUs, removed when it unloads.
struct Amdgpu {
    /// The GPUs, in order.
    _gpus: KVec<gpu::Gpu>,
}

impl kernel::Module for Amdgpu {
    fn init(module: &'static ThisModule) -> Result<Self> {
        // `profile` is one name or a comma-separated list: GPU i gets
        // entry i % len, and a list of n names means at least n GPUs.
        let names = kabi::profile_param();
        let mut profiles = KVec::new();
        for name in names.to_bytes().split(|&b| b == b',') {
            let Some(profile) = profile::Profile::find(name) else {
                pr_err!(
                    "unknown profile {:?}; known: gfx90a, gfx1030, gfx1100, gfx1103\n",
                    names
                );
                return Err(EINVAL);
            };
            profiles.push(profile, GFP_KERNEL)?;
        }
        let count = module_parameters::num_gpus.value().max(profiles.len() as u32);
        if count == 0 || count > MAX_GPUS {
            pr_err!("num_gpus={} is not in 1..={}\n", count, MAX_GPUS);
            return Err(EINVAL);
        }
        let vram_mb = module_parameters::vram_mb.value();
        if vram_mb > MAX_VRAM_MB {
            pr_err!("vram_mb={} is more than {}\n", vram_mb, MAX_VRAM_MB);
            return Err(EINVAL);
        }
        let sysmem = sysmem::SystemMemory::new()?;
        // Every GPU's state and devices first, so that a failure leaves
        // nothing registered with rkfd, where processes could start using it.
        let mut kgds = KVec::with_capacity(count as usize, GFP_KERNEL)?;
        for index in 0..count {
            let profile = profiles[index as usize % profiles.len()];
            let mb = if vram_mb == 0 { profile.default_vram_mib } else { vram_mb };
            kgds.push(
                gpu::Kgd::new(profile, index, u64::from(mb) << 20, &sysmem)?,
                GFP_KERNEL,
            )?;
        }
        let mut gpus = KVec::with_capacity(kgds.len(), GFP_KERNEL)?;
        for kgd in kgds {
            // On failure the GPUs registered so far are removed as `gpus`
            // drops, and the rest as the iterator drops.
            gpus.push(gpu::Gpu::register(kgd, module)?, GFP_KERNEL)?;
        }
        Ok(Amdgpu { _gpus: gpus })
    }
}
