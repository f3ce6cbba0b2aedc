/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rkfd_amdgpu.ko: the bridge between the patched in-tree amdgpu
 * (amdgpu.kfd=external, patches/amdgpu/) and rkfd (issue #15).
 *
 * Two translation units, because amdgpu's kgd_kfd_interface.h and rkfd's
 * include/rkfd/kgd_kfd_interface.h both define struct kfd2kgd_calls and
 * declare kgd2kfd_probe() etc. with different signatures:
 *
 *   - rkfd_amdgpu_kgd.c includes amdgpu's headers only: it registers the
 *     struct amdgpu_kfd_ops table and calls amdgpu's exported
 *     amdgpu_amdkfd_* functions;
 *   - rkfd_amdgpu_kfd.c includes rkfd's header only: it owns the bridge
 *     device, calls rkfd's kgd2kfd_* exports and implements rkfd's
 *     kfd2kgd_calls over the functions below.
 *
 * This header names neither side's types: amdgpu objects are void *.
 */
#ifndef RKFD_AMDGPU_H
#define RKFD_AMDGPU_H

#include <linux/types.h>

#define RKFD_AMDGPU_NAME_LEN 32

/* What the amdgpu side derives from a struct amdgpu_device for topology. */
struct rkfd_amdgpu_info {
	char name[RKFD_AMDGPU_NAME_LEN];
	u32 gfx_target_version;
	u32 vendor_id, device_id, domain, location_id;
	u32 drm_render_minor;
	u64 unique_id;
	u32 num_shader_engines, sh_per_se, cu_per_sh, simd_per_cu;
	u32 max_waves_per_simd, wave_front_size, lds_size_in_kb;
	u32 num_sdma_engines, num_sdma_xgmi_engines, num_xcc;
	u32 num_pipe_per_mec, num_queue_per_pipe;
	u32 max_engine_clk_fcompute, fw_version, sdma_fw_version;
	u64 vram_size;
	u32 vram_width, mem_clk_max, vram_is_public;
};

/* amdgpu side (rkfd_amdgpu_kgd.c). */
int rkfd_amdgpu_register(void);
void rkfd_amdgpu_unregister(void);
u64 rkfd_amdgpu_gpu_clock_counter(void *adev);
u64 rkfd_amdgpu_available_vram(void *adev);
int rkfd_amdgpu_acquire_vm(void *adev, void *drm_file, void **vm);
void rkfd_amdgpu_release_vm(void *vm);
u64 rkfd_amdgpu_process_page_dir(void *vm);
int rkfd_amdgpu_alloc_memory(void *adev, void *vm, u64 va, u64 size, u32 flags,
			     void **mem, u64 *mmap_offset);
void rkfd_amdgpu_free_memory(void *adev, void *vm, void *mem);
int rkfd_amdgpu_map_memory(void *adev, void *vm, void *mem);
int rkfd_amdgpu_unmap_memory(void *adev, void *vm, void *mem);
void *rkfd_amdgpu_map_gtt_to_kernel(void *mem, u64 *size);
int rkfd_amdgpu_reserve_mem_limit(u64 size, u32 flags);
void rkfd_amdgpu_unreserve_mem_limit(u64 size, u32 flags);
/*
 * Graphics interop.  get_dmabuf_info: *@owner is the amdgpu device the
 * dma-buf's BO belongs to (the caller finds its rkfd device).
 */
int rkfd_amdgpu_get_dmabuf_info(void *adev, int fd, void **owner, u64 *size, u32 *flags,
				void *metadata, u32 buffer_size, u32 *metadata_size);
int rkfd_amdgpu_import_dmabuf(void *adev, void *vm, int fd, u64 va, void **mem,
			      u64 *size, u32 *flags, u64 *mmap_offset);

/*
 * The HWS path of one GPU (struct rkfd_amdgpu_hws, amdgpu side): amdgpu's
 * kfd2kgd table for its GC version, the kernel doorbell page and the GTT
 * objects handed out.  Created before rkfd's device init, destroyed after
 * its exit (rkfd frees its GTT objects before).  create: ERR_PTR.
 */
void *rkfd_amdgpu_hws_create(void *adev);
void rkfd_amdgpu_hws_destroy(void *hws);
int rkfd_amdgpu_gtt_alloc(void *hws, u64 size, void **mem, u64 *gpu_addr, void **cpu_ptr);
void rkfd_amdgpu_gtt_free(void *hws, void *mem);
int rkfd_amdgpu_hiq_mqd_load(void *hws, void *mqd, u32 mqd_size, u32 pipe_id, u32 queue_id,
			     u32 doorbell_dword);
void rkfd_amdgpu_ring_kernel_doorbell(void *hws, u32 doorbell_dword, u64 value);
/* hqd_dump (@sdma false: pipe @a, queue @b) or hqd_sdma_dump (engine @a, queue @b). */
int rkfd_amdgpu_hqd_dump(void *hws, bool sdma, u32 a, u32 b, u32 (*dump)[2], u32 max_regs,
			 u32 *n_regs);

/*
 * rkfd side (rkfd_amdgpu_kfd.c).  probe returns the bridge device (which the
 * amdgpu side hands to amdgpu as its struct kfd_dev *) or NULL.
 */
void *rkfd_amdgpu_dev_probe(void *adev, const struct rkfd_amdgpu_info *info);
bool rkfd_amdgpu_dev_init(void *bdev);
void rkfd_amdgpu_dev_exit(void *bdev);
/* Hard-IRQ safe: copies the entry and defers it to a work item. */
void rkfd_amdgpu_dev_interrupt(void *bdev, const void *ih_ring_entry);

#endif /* RKFD_AMDGPU_H */
