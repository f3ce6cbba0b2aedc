// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The bindgen output of `scripts/gen-hw-rs`, one module per upstream file,
//! each named after it.  Never edited by hand: `scripts/gen-hw-rs --check`
//! fails on any difference.  Each struct's size, alignment and field
//! offsets are asserted by bindgen's `const _: () = { ... }` blocks, so a
//! moved field stops the crate from compiling.

/// `include/v9_structs.h`: `v9_mqd`, `v9_sdma_mqd`.
#[expect(non_snake_case)]
#[path = "generated/v9_structs.rs"]
pub mod v9_structs;
/// `include/v10_structs.h`: `v10_compute_mqd`, `v10_sdma_mqd`.
#[expect(non_snake_case)]
#[path = "generated/v10_structs.rs"]
pub mod v10_structs;
/// `include/v11_structs.h`: `v11_compute_mqd`, `v11_sdma_mqd`.
#[path = "generated/v11_structs.rs"]
pub mod v11_structs;
/// `include/asic_reg/gc/gc_9_0_sh_mask.h`: the fields `kfd_mqd_manager_v9.c` sets, and SH_MEM_CONFIG / SH_MEM_BASES.
#[path = "generated/gc_9_0_sh_mask.rs"]
pub mod gc_9_0_sh_mask;
/// `include/asic_reg/gc/gc_10_1_0_sh_mask.h`: the fields `kfd_mqd_manager_v10.c` sets, and SH_MEM_CONFIG / SH_MEM_BASES.
#[path = "generated/gc_10_1_0_sh_mask.rs"]
pub mod gc_10_1_0_sh_mask;
/// `include/asic_reg/gc/gc_11_0_0_sh_mask.h`: the fields `kfd_mqd_manager_v11.c` sets, and SH_MEM_CONFIG / SH_MEM_BASES.
#[path = "generated/gc_11_0_0_sh_mask.rs"]
pub mod gc_11_0_0_sh_mask;
/// `include/asic_reg/gc/gc_9_4_3_sh_mask.h`: the SH_MEM fields `kfd_device_queue_manager_v9.c` sets.
#[path = "generated/gc_9_4_3_sh_mask.rs"]
pub mod gc_9_4_3_sh_mask;
/// `include/vega10_enum.h`: `SH_MEM_ALIGNMENT_MODE` (`kfd_device_queue_manager_v9.c`).
#[expect(non_camel_case_types)]
#[path = "generated/vega10_enum.rs"]
pub mod vega10_enum;
/// `include/navi10_enum.h`: `SH_MEM_ALIGNMENT_MODE` (`kfd_device_queue_manager_v10.c`).
#[expect(non_camel_case_types)]
#[path = "generated/navi10_enum.rs"]
pub mod navi10_enum;
/// `include/soc21_enum.h`: `SH_MEM_ALIGNMENT_MODE` (`kfd_device_queue_manager_v11.c`).
#[expect(non_camel_case_types)]
#[path = "generated/soc21_enum.rs"]
pub mod soc21_enum;
/// `include/asic_reg/sdma0/sdma0_4_0_sh_mask.h`: the SDMA RLC queue fields of GFX9.
#[path = "generated/sdma0_4_0_sh_mask.rs"]
pub mod sdma0_4_0_sh_mask;
/// `include/asic_reg/gc/gc_9_0_offset.h`: the compute HQD registers `kgd_gfx_v9_hqd_dump` reads.
#[expect(non_upper_case_globals)]
#[path = "generated/gc_9_0_offset.rs"]
pub mod gc_9_0_offset;
/// `include/asic_reg/sdma0/sdma0_4_2_2_offset.h`: the SDMA RLC queue registers `kgd_arcturus_hqd_sdma_dump` reads.
#[expect(non_upper_case_globals)]
#[path = "generated/sdma0_4_2_2_offset.rs"]
pub mod sdma0_4_2_2_offset;
/// `include/asic_reg/gc/gc_10_3_0_offset.h`: the HQD and SDMA RLC queue registers of `hqd_dump_v10_3` / `hqd_sdma_dump_v10_3`.
#[expect(non_upper_case_globals)]
#[path = "generated/gc_10_3_0_offset.rs"]
pub mod gc_10_3_0_offset;
/// `include/asic_reg/gc/gc_11_0_0_offset.h`: the HQD and SDMA queue registers of `hqd_dump_v11` / `hqd_sdma_dump_v11`.
#[expect(non_upper_case_globals)]
#[path = "generated/gc_11_0_0_offset.rs"]
pub mod gc_11_0_0_offset;
/// `amdkfd/kfd_pm4_headers_ai.h`: the HWS packets.
#[expect(
    non_camel_case_types, non_snake_case, non_upper_case_globals, unnecessary_transmutes,
    clippy::missing_safety_doc, clippy::ptr_offset_with_cast, clippy::too_many_arguments, clippy::useless_transmute
)]
#[path = "generated/kfd_pm4_headers_ai.rs"]
pub mod kfd_pm4_headers_ai;
/// `amdkfd/kfd_pm4_headers_aldebaran.h`: GC 9.4.2+'s MAP_PROCESS.
#[expect(
    non_snake_case,
    clippy::missing_safety_doc, clippy::ptr_offset_with_cast, clippy::too_many_arguments, clippy::useless_transmute
)]
#[path = "generated/kfd_pm4_headers_aldebaran.rs"]
pub mod kfd_pm4_headers_aldebaran;
/// `amdkfd/kfd_pm4_opcodes.h`: `IT_*`, `PM4_TYPE_3`.
#[expect(non_camel_case_types)]
#[path = "generated/kfd_pm4_opcodes.rs"]
pub mod kfd_pm4_opcodes;
/// `amdkfd/soc15_int.h` and `include/soc15_ih_clientid.h`.
#[expect(non_camel_case_types, non_upper_case_globals)]
#[path = "generated/soc15_int.rs"]
pub mod soc15_int;
/// `amdgpu/amdgpu_gmc.h`: `AMDGPU_GMC9_FAULT_SOURCE_DATA_*`.
#[path = "generated/amdgpu_gmc.rs"]
pub mod amdgpu_gmc;
/// `amdgpu/amdgpu_vm.h`: `AMDGPU_PTE_VALID`, `AMDGPU_PTE_SYSTEM` (the
/// flags `amdgpu_gmc_pd_addr` puts on a page directory address).
#[path = "generated/amdgpu_vm.rs"]
pub mod amdgpu_vm;
/// `amdkfd/kfd_int_process_v9.c`: the SQ interrupt word fields.
#[expect(non_camel_case_types)]
#[path = "generated/kfd_int_process_v9.rs"]
pub mod kfd_int_process_v9;
/// `amdkfd/kfd_int_process_v10.c`: the SQ interrupt word fields.
#[expect(non_camel_case_types)]
#[path = "generated/kfd_int_process_v10.rs"]
pub mod kfd_int_process_v10;
/// `amdkfd/kfd_int_process_v11.c`: the SQ interrupt word fields.
#[expect(non_camel_case_types)]
#[path = "generated/kfd_int_process_v11.rs"]
pub mod kfd_int_process_v11;
/// `include/uapi/drm/amdgpu_drm.h`: the amdgpu DRM UAPI (what the virtual
/// GPU's render node answers: INFO queries, contexts).
#[expect(non_camel_case_types)]
#[allow(clippy::all, reason = "bindgen output")]
#[path = "generated/amdgpu_drm.rs"]
pub mod amdgpu_drm;
