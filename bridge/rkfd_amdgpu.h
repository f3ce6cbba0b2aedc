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

#include <linux/bits.h>
#include <linux/types.h>

#define RKFD_AMDGPU_NAME_LEN 32
/* rkfd's KGD_MAX_CACHES (checked at build time on the rkfd side). */
#define RKFD_AMDGPU_MAX_CACHES 8

/*
 * One cache level as rkfd's struct kgd_cache_info takes it: @type is
 * HSA_CACHE_TYPE_* bits, @cus_shared the CUs sharing one instance
 * (upstream's num_cu_shared, 1..32).
 */
struct rkfd_amdgpu_cache {
	u32 level, size_kib, line_size, type, cus_shared;
};

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
	u32 num_caches;
	struct rkfd_amdgpu_cache caches[RKFD_AMDGPU_MAX_CACHES];
	u64 hive_id;
	u32 capability;			/* HSA_CAP_* (rkfd_amdgpu_capability) */
	u32 num_sdma_queues_per_engine, max_slots_scratch_cu;
};

/* amdgpu side (rkfd_amdgpu_kgd.c). */
int rkfd_amdgpu_register(void);
void rkfd_amdgpu_unregister(void);
u64 rkfd_amdgpu_gpu_clock_counter(void *adev);
u64 rkfd_amdgpu_available_vram(void *adev);
/*
 * A VM is acquired on a device whose HWS path (@hws, below) exists: it
 * gets its doorbell slice there, and its queues a VMID.  *@ef: a reference
 * on its eviction fence (a struct dma_fence *, made with @context_id).
 * restore_process_bos: amdgpu_amdkfd_gpuvm_restore_process_bos of the VM,
 * *@ef a reference on its (possibly new) eviction fence.
 */
int rkfd_amdgpu_acquire_vm(void *hws, void *drm_file, u16 context_id, void **vm, u32 *pasid,
			   void **ef);
int rkfd_amdgpu_restore_process_bos(void *vm, void **ef);
void rkfd_amdgpu_release_vm(void *vm);
u64 rkfd_amdgpu_process_page_dir(void *vm);
/* The BAR dword index of the VM's doorbell slice's first doorbell. */
u32 rkfd_amdgpu_vm_doorbell_index(void *vm);
/* mmap of the VM's doorbell slice / the MMIO remap page (sizes checked by rkfd). */
int rkfd_amdgpu_mmap_doorbells(void *vm, void *vma);
int rkfd_amdgpu_mmap_mmio_remap(void *adev, void *vma);
int rkfd_amdgpu_alloc_memory(void *adev, void *vm, u64 va, u64 size, u32 flags,
			     void **mem, u64 *mmap_offset);
void rkfd_amdgpu_free_memory(void *adev, void *vm, void *mem);
int rkfd_amdgpu_map_memory(void *adev, void *vm, void *mem);
int rkfd_amdgpu_unmap_memory(void *adev, void *vm, void *mem);
void *rkfd_amdgpu_map_gtt_to_kernel(void *mem, u64 *size);
int rkfd_amdgpu_reserve_mem_limit(u64 size, u32 flags);
void rkfd_amdgpu_unreserve_mem_limit(u64 size, u32 flags);
/*
 * SVM (rkfd's svm_* calls; the amdgpu side's comments have the locking).
 * A page-table entry: a CPU pfn, or with RKFD_AMDGPU_SVM_VRAM a VRAM page
 * index, plus these bits, rkfd's KGD_SVM_PTE_* (checked at build time on
 * the rkfd side).
 */
#define RKFD_AMDGPU_SVM_VALID BIT_ULL(63)
#define RKFD_AMDGPU_SVM_VRAM BIT_ULL(62)
#define RKFD_AMDGPU_SVM_WRITE BIT_ULL(61)
#define RKFD_AMDGPU_SVM_FRAME (BIT_ULL(52) - 1)
/*
 * One GPU's VRAM for SVM device pages (struct rkfd_amdgpu_svm_vram):
 * created before rkfd's device init with the number of device pages rkfd
 * registers (@npages, its VRAM size in pages), destroyed after its exit,
 * when every page has come back.  create: ERR_PTR.  vram_free never
 * sleeps; copy: @to_vram as KGD_SVM_COPY_TO_VRAM, a NULL page clears.
 */
void *rkfd_amdgpu_svm_vram_create(void *adev, u64 npages);
void rkfd_amdgpu_svm_vram_destroy(void *svm);
int rkfd_amdgpu_svm_vram_alloc(void *svm, u64 npages, u64 *frames);
int rkfd_amdgpu_svm_vram_alloc_block(void *svm, u32 order, u64 *first);
void rkfd_amdgpu_svm_vram_free(void *svm, const u64 *frames, u64 npages);
int rkfd_amdgpu_svm_vram_copy(void *svm, const u64 *frames, void *const *pages, u64 npages,
			      bool to_vram);
int rkfd_amdgpu_svm_map(void *svm, void *vm, u64 va, u64 npages, const u64 *ptes);
void rkfd_amdgpu_svm_unmap(void *vm, u64 va, u64 npages);

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
 * objects handed out, and its user queues.  Created before rkfd's device
 * init, destroyed after its exit (rkfd frees its GTT objects before).
 * @res: amdgpu's struct kgd2kfd_shared_resources; the first MEC's HQDs it
 * leaves out go to @reserved_hqds and the count of the HQDs it gives the
 * KFD to *@num_cp_queues (rkfd's kgd_gpu_info).  create: ERR_PTR.
 */
void *rkfd_amdgpu_hws_create(void *adev, const void *res, u32 reserved_hqds[4],
			     u32 *num_cp_queues);
void rkfd_amdgpu_hws_destroy(void *hws);
int rkfd_amdgpu_gtt_alloc(void *hws, u64 size, void **mem, u64 *gpu_addr, void **cpu_ptr);
void rkfd_amdgpu_gtt_free(void *hws, void *mem);
int rkfd_amdgpu_hiq_mqd_load(void *hws, void *mqd, u32 mqd_size, u32 pipe_id, u32 queue_id,
			     u32 doorbell_dword);
void rkfd_amdgpu_ring_kernel_doorbell(void *hws, u32 doorbell_dword, u64 value);
/* hqd_dump (@sdma false: pipe @a, queue @b) or hqd_sdma_dump (engine @a, queue @b). */
int rkfd_amdgpu_hqd_dump(void *hws, bool sdma, u32 a, u32 b, u32 dump[][2], u32 max_regs,
			 u32 *n_regs);

/*
 * User queues without the HWS (rkfd's hqd_* calls, upstream's
 * kfd_mqd_manager_v9.c load_mqd / destroy_mqd / is_occupied and their SDMA
 * variants over the GPU's kfd2kgd table).
 */
int rkfd_amdgpu_hqd_load(void *hws, void *vm, void *mqd, u32 mqd_size, u32 pipe_id,
			 u32 queue_id, u64 wptr);
int rkfd_amdgpu_hqd_sdma_load(void *hws, void *vm, void *mqd, u32 mqd_size, u64 wptr);
int rkfd_amdgpu_hqd_destroy(void *hws, void *mqd, u32 mqd_size, u32 pipe_id, u32 queue_id);
int rkfd_amdgpu_hqd_sdma_destroy(void *hws, void *mqd, u32 mqd_size);
int rkfd_amdgpu_hqd_is_occupied(void *hws, u64 queue_address, u32 pipe_id, u32 queue_id);
int rkfd_amdgpu_hqd_sdma_is_occupied(void *hws, void *mqd, u32 mqd_size);

/*
 * User queues on MES (rkfd's mes_add_hw_queue / mes_remove_hw_queue,
 * upstream's add_queue_mes / remove_queue_mes): rkfd's requests with
 * plain types.  The queue types are AMDGPU_RING_TYPE_COMPUTE / _SDMA, the
 * priorities amdgpu_mes_priority_level (checked at build time on both
 * sides).
 */
#define RKFD_AMDGPU_MES_QUEUE_COMPUTE 1
#define RKFD_AMDGPU_MES_QUEUE_SDMA 2
#define RKFD_AMDGPU_MES_PRIORITY_LEVELS 5

struct rkfd_amdgpu_mes_add {
	u32 process_id;			/* the VM's PASID (amdgpu's, from acquire_vm) */
	u64 process_quantum, process_context_addr;
	u64 gang_quantum, gang_context_addr;
	u32 inprocess_gang_priority, gang_global_priority_level;
	u32 doorbell_offset;		/* the doorbell's BAR index, in the process's slice */
	u64 mqd_addr, wptr_addr, wptr_mc_addr;
	u32 queue_type, paging, gws_base, gws_size;
	u64 tba_addr, tma_addr;
	u32 trap_en, skip_process_ctx_clear, is_kfd_process, is_aql_queue;
	u32 queue_size, exclusively_scheduled;
};

int rkfd_amdgpu_mes_add(void *hws, const struct rkfd_amdgpu_mes_add *in);
int rkfd_amdgpu_mes_remove(void *hws, u32 doorbell_offset, u64 gang_context_addr);

/*
 * rkfd side (rkfd_amdgpu_kfd.c).  probe returns the bridge device (which the
 * amdgpu side hands to amdgpu as its struct kfd_dev *) or NULL; rkfd's
 * kgd2kfd_probe waits for init, when amdgpu's shared resources exist.
 */
void *rkfd_amdgpu_dev_probe(void *adev, const struct rkfd_amdgpu_info *info);
bool rkfd_amdgpu_dev_init(void *bdev, const void *res);
void rkfd_amdgpu_dev_exit(void *bdev);
/* Hard-IRQ safe: copies the entry and defers it to a work item. */
void rkfd_amdgpu_dev_interrupt(void *bdev, const void *ih_ring_entry);
/*
 * Power management and reset, forwarded to rkfd's kgd2kfd_* (nothing, or
 * 0, before rkfd has the device, as amdkfd before init_complete).
 */
void rkfd_amdgpu_dev_suspend(void *bdev, bool suspend_proc);
int rkfd_amdgpu_dev_resume(void *bdev, bool resume_proc);
void rkfd_amdgpu_dev_suspend_process(void *bdev);
int rkfd_amdgpu_dev_resume_process(void *bdev);
int rkfd_amdgpu_dev_pre_reset(void *bdev, const char *cause);
int rkfd_amdgpu_dev_post_reset(void *bdev);
int rkfd_amdgpu_dev_check_and_lock(void *bdev);
void rkfd_amdgpu_dev_unlock(void *bdev);
int rkfd_amdgpu_dev_sched(void *bdev, u32 node_id, bool start);
bool rkfd_amdgpu_dev_compute_active(void *bdev, u32 node_id);
void rkfd_amdgpu_adev_teardown_processes(void *adev);
/* Atomic: under rcu_read_lock(). */
void rkfd_amdgpu_dev_smi_throttle(void *bdev, u64 throttle_bitmask);
void rkfd_amdgpu_dev_sram_ecc(void *bdev);
void rkfd_amdgpu_dev_clear_mappings(void *bdev);
bool rkfd_amdgpu_dev_vmfault_fast_path(void *bdev, u32 pasid);
/* amdgpu side: the SMU's throttling count; amdgpu's GPU recovery. */
u64 rkfd_amdgpu_throttle_counter(void *adev);
/* In amdgpu_device_suspend, with amdgpu_device_evict_resources() evicting VRAM. */
bool rkfd_amdgpu_vram_lost_at_suspend(void *adev);
void rkfd_amdgpu_gpu_reset(void *adev);
/*
 * Process eviction, forwarded to rkfd's kgd2kfd_quiesce_mm, _resume_mm and
 * kgd2kfd_schedule_evict_and_restore_process (the last in atomic context:
 * an eviction fence's ->enable_signaling).  @mm: a struct mm_struct *,
 * @fence a struct dma_fence *.
 */
int rkfd_amdgpu_kfd_quiesce_mm(void *mm, u32 trigger);
int rkfd_amdgpu_kfd_resume_mm(void *mm);
void rkfd_amdgpu_kfd_queue_restore_rescheduled(void *mm);
void rkfd_amdgpu_kfd_signal_userptr_fault(int tgid, u64 va);
int rkfd_amdgpu_adev_svm_fault(void *adev, u32 pasid, u64 addr, bool write);
void *rkfd_amdgpu_vm_of_pasid(void *hws, u32 pasid);
int rkfd_amdgpu_kfd_schedule_evict_and_restore_process(void *mm, u16 context_id, void *fence);

#endif /* RKFD_AMDGPU_H */
