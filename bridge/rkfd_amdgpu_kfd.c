// SPDX-License-Identifier: GPL-2.0
/*
 * rkfd_amdgpu.ko, rkfd side: each GPU the patched amdgpu offers becomes an
 * rkfd device (kgd2kfd_probe/device_init/device_exit, exported by rkfd.ko),
 * and rkfd's kfd2kgd_calls are implemented over the amdgpu side
 * (rkfd_amdgpu_kgd.c).  It includes no amdgpu header (see rkfd_amdgpu.h).
 *
 * Calls that have no amdgpu counterpart yet return -EOPNOTSUPP and say so
 * once in the kernel log (pr_notice_once is per call site, so once per op).
 */
#define pr_fmt(fmt) "rkfd_amdgpu: " fmt

#include <linux/err.h>
#include <linux/list.h>
#include <linux/math.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include <rkfd/kgd_kfd_interface.h>
#include <uapi/linux/kfd_ioctl.h>

#include "rkfd_amdgpu.h"

/* IH entries buffered between the hard IRQ and rkfd (a power of two). */
#define RKFD_AMDGPU_IH_SLOTS 256

struct rkfd_amdgpu_dev {
	void *adev;			/* struct amdgpu_device */
	struct kgd_gpu_info *info;	/* from probe until kgd2kfd_probe */
	struct kfd_dev *kfd;		/* rkfd's device, from init */
	void *hws;			/* the HWS path (amdgpu side), from init to exit */
	void *svm;			/* SVM VRAM (amdgpu side), from init to exit */
	struct list_head link;		/* in rkfd_amdgpu_devs while rkfd serves it */
	/*
	 * kgd2kfd_interrupt() runs in process context only, amdgpu's IH calls
	 * ops->interrupt in hard IRQ: entries are copied into this ring under
	 * ih_lock and handed to rkfd by ih_work, as amdkfd's ih_fifo does.
	 */
	spinlock_t ih_lock;
	u32 ih_head, ih_tail;		/* free-running; head - tail entries queued */
	u32 ih_dropped;
	u32 ih[RKFD_AMDGPU_IH_SLOTS][KGD_IH_RING_ENTRY_DWORDS];
	struct work_struct ih_work;
};

/*
 * The devices rkfd serves (initialized, not exited), for the owner of a
 * dma-buf.  Lock order: rkfd_amdgpu_devs_lock is taken alone (no rkfd or
 * amdgpu call under it); ih_lock (per device) likewise.
 */
static LIST_HEAD(rkfd_amdgpu_devs);
static DEFINE_MUTEX(rkfd_amdgpu_devs_lock);

static struct rkfd_amdgpu_dev *to_bdev(struct kgd_dev *kgd)
{
	return (struct rkfd_amdgpu_dev *)kgd;
}

static int bridge_acquire_vm(struct kgd_dev *kgd, void *drm_file, __u16 context_id,
			     void **vm, __u32 *pasid, struct dma_fence **ef)
{
	return rkfd_amdgpu_acquire_vm(to_bdev(kgd)->hws, drm_file, context_id, vm, pasid,
				      (void **)ef);
}

static int bridge_restore_process_bos(struct kgd_dev *kgd, void *vm, struct dma_fence **ef)
{
	return rkfd_amdgpu_restore_process_bos(vm, (void **)ef);
}

static void bridge_release_vm(struct kgd_dev *kgd, void *vm)
{
	rkfd_amdgpu_release_vm(vm);
}

static __u64 bridge_get_process_page_dir(struct kgd_dev *kgd, void *vm)
{
	return rkfd_amdgpu_process_page_dir(vm);
}

/* amdgpu_doorbell_index_on_bar() of the VM's slice, doorbell 0. */
static __u32 bridge_get_process_doorbell_index(struct kgd_dev *kgd, void *vm)
{
	return rkfd_amdgpu_vm_doorbell_index(vm);
}

static int bridge_alloc_memory_of_gpu(struct kgd_dev *kgd, void *vm,
				      const struct kgd_mem_alloc *alloc,
				      void **mem, __u64 *mmap_offset)
{
	u64 va = alloc->va;

	/* amdgpu takes a USERPTR's CPU address in *mmap_offset (amdkfd's ioctl). */
	if (alloc->flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)
		*mmap_offset = alloc->user_addr;
	return rkfd_amdgpu_alloc_memory(to_bdev(kgd)->adev, vm, va, alloc->size,
					alloc->flags, mem, mmap_offset);
}

static void bridge_free_memory_of_gpu(struct kgd_dev *kgd, void *vm, void *mem)
{
	rkfd_amdgpu_free_memory(to_bdev(kgd)->adev, vm, mem);
}

static int bridge_map_memory_to_gpu(struct kgd_dev *kgd, void *vm, void *mem)
{
	return rkfd_amdgpu_map_memory(to_bdev(kgd)->adev, vm, mem);
}

static int bridge_unmap_memory_from_gpu(struct kgd_dev *kgd, void *vm, void *mem)
{
	return rkfd_amdgpu_unmap_memory(to_bdev(kgd)->adev, vm, mem);
}

static void *bridge_map_gtt_to_kernel(struct kgd_dev *kgd, void *mem, __u64 *size)
{
	return rkfd_amdgpu_map_gtt_to_kernel(mem, size);
}

static __u64 bridge_available_vram(struct kgd_dev *kgd)
{
	return rkfd_amdgpu_available_vram(to_bdev(kgd)->adev);
}

static __u64 bridge_get_gpu_clock_counter(struct kgd_dev *kgd)
{
	return rkfd_amdgpu_gpu_clock_counter(to_bdev(kgd)->adev);
}

/* kfd_doorbell_mmap / kfd_mmio_mmap (rkfd has checked the sizes). */
static int bridge_mmap_doorbells(struct kgd_dev *kgd, void *vm, void *vma)
{
	return rkfd_amdgpu_mmap_doorbells(vm, vma);
}

static int bridge_mmap_mmio_remap(struct kgd_dev *kgd, void *vma)
{
	return rkfd_amdgpu_mmap_mmio_remap(to_bdev(kgd)->adev, vma);
}

/*
 * User queues without the HWS: amdgpu's kfd2kgd hqd_load / hqd_sdma_load
 * and their destroy / is_occupied calls take MQDs of the layouts rkfd
 * builds; the bridge puts in the VMID, the BAR doorbell and (compute) a
 * GART copy for the CP (rkfd_amdgpu_kgd.c).  Built, never run on a GPU.
 */
static int bridge_hqd_load(struct kgd_dev *kgd, void *vm, void *mqd, __u32 mqd_size,
			   __u32 pipe_id, __u32 queue_id, __u64 wptr)
{
	return rkfd_amdgpu_hqd_load(to_bdev(kgd)->hws, vm, mqd, mqd_size, pipe_id, queue_id,
				    wptr);
}

static int bridge_hqd_sdma_load(struct kgd_dev *kgd, void *vm, void *mqd, __u32 mqd_size,
				__u64 wptr)
{
	return rkfd_amdgpu_hqd_sdma_load(to_bdev(kgd)->hws, vm, mqd, mqd_size, wptr);
}

static int bridge_hqd_destroy(struct kgd_dev *kgd, void *mqd, __u32 mqd_size,
			      __u32 pipe_id, __u32 queue_id)
{
	return rkfd_amdgpu_hqd_destroy(to_bdev(kgd)->hws, mqd, mqd_size, pipe_id, queue_id);
}

static int bridge_hqd_sdma_destroy(struct kgd_dev *kgd, void *mqd, __u32 mqd_size)
{
	return rkfd_amdgpu_hqd_sdma_destroy(to_bdev(kgd)->hws, mqd, mqd_size);
}

static int bridge_hqd_is_occupied(struct kgd_dev *kgd, __u64 queue_address,
				  __u32 pipe_id, __u32 queue_id)
{
	return rkfd_amdgpu_hqd_is_occupied(to_bdev(kgd)->hws, queue_address, pipe_id, queue_id);
}

static int bridge_hqd_sdma_is_occupied(struct kgd_dev *kgd, void *mqd, __u32 mqd_size)
{
	return rkfd_amdgpu_hqd_sdma_is_occupied(to_bdev(kgd)->hws, mqd, mqd_size);
}

/* debugfs hqds: amdgpu's register dumps (rkfd_amdgpu_kgd.c). */
static int bridge_hqd_dump(struct kgd_dev *kgd, __u32 pipe_id, __u32 queue_id,
			   __u32 (*dump)[2], __u32 max_regs, __u32 *n_regs)
{
	return rkfd_amdgpu_hqd_dump(to_bdev(kgd)->hws, false, pipe_id, queue_id, dump,
				    max_regs, n_regs);
}

static int bridge_hqd_sdma_dump(struct kgd_dev *kgd, __u32 engine, __u32 queue,
				__u32 (*dump)[2], __u32 max_regs, __u32 *n_regs)
{
	return rkfd_amdgpu_hqd_dump(to_bdev(kgd)->hws, true, engine, queue, dump, max_regs,
				    n_regs);
}

/*
 * User queues on MES (GFX11: rkfd's sched_policy 0/1), over amdgpu's
 * adev->mes.funcs->add_hw_queue / remove_hw_queue as upstream's
 * add_queue_mes / remove_queue_mes.  mes_suspend_all / mes_resume_all
 * stay NULL: rkfd never calls them (nor does 7.3's amdkfd call
 * amdgpu_mes_suspend / _resume).
 */
static int bridge_mes_add_hw_queue(struct kgd_dev *kgd, const struct kgd_mes_add_queue_input *i)
{
	struct rkfd_amdgpu_mes_add in = {
		.process_id = i->process_id,
		.process_quantum = i->process_quantum,
		.process_context_addr = i->process_context_addr,
		.gang_quantum = i->gang_quantum,
		.gang_context_addr = i->gang_context_addr,
		.inprocess_gang_priority = i->inprocess_gang_priority,
		.gang_global_priority_level = i->gang_global_priority_level,
		.doorbell_offset = i->doorbell_offset,
		.mqd_addr = i->mqd_addr,
		.wptr_addr = i->wptr_addr,
		.wptr_mc_addr = i->wptr_mc_addr,
		.queue_type = i->queue_type,
		.paging = i->paging,
		.gws_base = i->gws_base,
		.gws_size = i->gws_size,
		.tba_addr = i->tba_addr,
		.tma_addr = i->tma_addr,
		.trap_en = i->trap_en,
		.skip_process_ctx_clear = i->skip_process_ctx_clear,
		.is_kfd_process = i->is_kfd_process,
		.is_aql_queue = i->is_aql_queue,
		.queue_size = i->queue_size,
		.exclusively_scheduled = i->exclusively_scheduled,
	};

	BUILD_BUG_ON(KGD_MES_QUEUE_TYPE_COMPUTE != RKFD_AMDGPU_MES_QUEUE_COMPUTE);
	BUILD_BUG_ON(KGD_MES_QUEUE_TYPE_SDMA != RKFD_AMDGPU_MES_QUEUE_SDMA);
	BUILD_BUG_ON(KGD_MES_PRIORITY_LEVEL_REALTIME + 1 != RKFD_AMDGPU_MES_PRIORITY_LEVELS);
	return rkfd_amdgpu_mes_add(to_bdev(kgd)->hws, &in);
}

static int bridge_mes_remove_hw_queue(struct kgd_dev *kgd,
				      const struct kgd_mes_remove_queue_input *i)
{
	return rkfd_amdgpu_mes_remove(to_bdev(kgd)->hws, i->doorbell_offset,
				      i->gang_context_addr);
}

/*
 * The HWS path (sched_policy 0/1): kernel objects in the GART, the HIQ
 * loaded through amdgpu's KIQ and its doorbell in the kernel doorbell page
 * (rkfd_amdgpu_kgd.c).  Built, never run on a GPU.
 */
static int bridge_alloc_gtt_mem(struct kgd_dev *kgd, __u64 size, void **mem_obj,
				__u64 *gpu_addr, void **cpu_ptr)
{
	return rkfd_amdgpu_gtt_alloc(to_bdev(kgd)->hws, size, mem_obj, gpu_addr, cpu_ptr);
}

static void bridge_free_gtt_mem(struct kgd_dev *kgd, void *mem_obj)
{
	rkfd_amdgpu_gtt_free(to_bdev(kgd)->hws, mem_obj);
}

static int bridge_hiq_mqd_load(struct kgd_dev *kgd, void *mqd, __u32 mqd_size,
			       __u32 pipe_id, __u32 queue_id, __u32 doorbell_off)
{
	return rkfd_amdgpu_hiq_mqd_load(to_bdev(kgd)->hws, mqd, mqd_size, pipe_id, queue_id,
					doorbell_off);
}

static void bridge_ring_kernel_doorbell(struct kgd_dev *kgd, __u32 doorbell_off, __u64 value)
{
	rkfd_amdgpu_ring_kernel_doorbell(to_bdev(kgd)->hws, doorbell_off, value);
}

/* The bridge device of an amdgpu device, or NULL; under rkfd_amdgpu_devs_lock. */
static struct rkfd_amdgpu_dev *rkfd_amdgpu_bdev_of_locked(void *adev)
{
	struct rkfd_amdgpu_dev *bdev;

	lockdep_assert_held(&rkfd_amdgpu_devs_lock);
	list_for_each_entry(bdev, &rkfd_amdgpu_devs, link) {
		if (bdev->adev == adev)
			return bdev;
	}
	return NULL;
}

/* The rkfd device of an amdgpu device, if rkfd serves it. */
static struct kfd_dev *rkfd_amdgpu_kfd_of(void *adev)
{
	struct rkfd_amdgpu_dev *bdev;
	struct kfd_dev *kfd;

	mutex_lock(&rkfd_amdgpu_devs_lock);
	bdev = rkfd_amdgpu_bdev_of_locked(adev);
	kfd = bdev ? bdev->kfd : NULL;
	mutex_unlock(&rkfd_amdgpu_devs_lock);
	return kfd;
}

static int bridge_get_dmabuf_info(struct kgd_dev *kgd, int fd, struct kfd_dev **owner,
				  __u64 *size, __u32 *flags, void *metadata,
				  __u32 buffer_size, __u32 *metadata_size)
{
	void *owner_adev;
	int ret;

	ret = rkfd_amdgpu_get_dmabuf_info(to_bdev(kgd)->adev, fd, &owner_adev, size, flags,
					  metadata, buffer_size, metadata_size);
	if (ret)
		return ret;
	*owner = rkfd_amdgpu_kfd_of(owner_adev);
	return *owner ? 0 : -EINVAL;
}

static int bridge_import_dmabuf(struct kgd_dev *kgd, void *vm, int fd, __u64 va,
				void **mem, __u64 *size, __u32 *flags, __u64 *mmap_offset)
{
	return rkfd_amdgpu_import_dmabuf(to_bdev(kgd)->adev, vm, fd, va, mem, size, flags,
					 mmap_offset);
}

/*
 * amdkfd's kfd_hws_hang -> amdgpu_amdkfd_gpu_reset: amdgpu's recovery runs
 * later, in its reset work, and brackets the ASIC reset with
 * kgd2kfd_pre_reset / kgd2kfd_post_reset.
 */
static int bridge_gpu_reset(struct kgd_dev *kgd)
{
	rkfd_amdgpu_gpu_reset(to_bdev(kgd)->adev);
	return 0;
}

static int bridge_reserve_mem_limit(struct kgd_dev *kgd, __u64 size, __u32 flags)
{
	return rkfd_amdgpu_reserve_mem_limit(size, flags);
}

static void bridge_unreserve_mem_limit(struct kgd_dev *kgd, __u64 size, __u32 flags)
{
	rkfd_amdgpu_unreserve_mem_limit(size, flags);
}

static_assert(RKFD_AMDGPU_SVM_VALID == KGD_SVM_PTE_VALID);
static_assert(RKFD_AMDGPU_SVM_VRAM == KGD_SVM_PTE_VRAM);
static_assert(RKFD_AMDGPU_SVM_WRITE == KGD_SVM_PTE_WRITE);
static_assert(RKFD_AMDGPU_SVM_FRAME == KGD_SVM_PTE_FRAME_MASK);

/*
 * SVM with VRAM, as upstream's svm_bo (kfd_svm.c svm_range_vram_node_new)
 * and kfd_migrate.c: the amdgpu side hands out pages of pinned VRAM BOs
 * (one BO per call), copies with SDMA through a GART window and maps
 * VRAM pages with VRAM PTEs (rkfd_amdgpu_kgd.c, "SVM VRAM").  Built and
 * loaded, never run on a GPU (make check's real-amdgpu guest has none).
 */
static int bridge_svm_alloc_vram(struct kgd_dev *kgd, __u64 npages, __u64 *frames)
{
	return rkfd_amdgpu_svm_vram_alloc(to_bdev(kgd)->svm, npages, frames);
}

static int bridge_svm_alloc_vram_block(struct kgd_dev *kgd, __u32 order, __u64 *first)
{
	return rkfd_amdgpu_svm_vram_alloc_block(to_bdev(kgd)->svm, order, first);
}

/* Any context, never sleeps (dev_pagemap_ops folio_free). */
static void bridge_svm_free_vram(struct kgd_dev *kgd, const __u64 *frames, __u64 npages)
{
	rkfd_amdgpu_svm_vram_free(to_bdev(kgd)->svm, frames, npages);
}

static int bridge_svm_copy(struct kgd_dev *kgd, const __u64 *frames, void *const *pages,
			   __u64 npages, __u32 direction)
{
	if (direction != KGD_SVM_COPY_TO_VRAM && direction != KGD_SVM_COPY_TO_SYSTEM)
		return -EINVAL;
	return rkfd_amdgpu_svm_vram_copy(to_bdev(kgd)->svm, frames, pages, npages,
					 direction == KGD_SVM_COPY_TO_VRAM);
}

static int bridge_svm_map(struct kgd_dev *kgd, void *vm, __u64 va, __u64 npages,
			  const __u64 *ptes)
{
	return rkfd_amdgpu_svm_map(to_bdev(kgd)->svm, vm, va, npages, ptes);
}

static void bridge_svm_unmap(struct kgd_dev *kgd, void *vm, __u64 va, __u64 npages)
{
	rkfd_amdgpu_svm_unmap(vm, va, npages);
}

/* get_mem_limits NULL: debugfs mem_limit shows zeros. */
static const struct kfd2kgd_calls rkfd_amdgpu_calls = {
	.acquire_vm = bridge_acquire_vm,
	.restore_process_bos = bridge_restore_process_bos,
	.release_vm = bridge_release_vm,
	.get_process_page_dir = bridge_get_process_page_dir,
	.get_process_doorbell_index = bridge_get_process_doorbell_index,
	.alloc_memory_of_gpu = bridge_alloc_memory_of_gpu,
	.free_memory_of_gpu = bridge_free_memory_of_gpu,
	.map_memory_to_gpu = bridge_map_memory_to_gpu,
	.unmap_memory_from_gpu = bridge_unmap_memory_from_gpu,
	.map_gtt_to_kernel = bridge_map_gtt_to_kernel,
	.get_dmabuf_info = bridge_get_dmabuf_info,
	.import_dmabuf = bridge_import_dmabuf,
	.available_vram = bridge_available_vram,
	.get_gpu_clock_counter = bridge_get_gpu_clock_counter,
	.mmap_doorbells = bridge_mmap_doorbells,
	.mmap_mmio_remap = bridge_mmap_mmio_remap,
	.hqd_load = bridge_hqd_load,
	.hqd_sdma_load = bridge_hqd_sdma_load,
	.hqd_destroy = bridge_hqd_destroy,
	.hqd_sdma_destroy = bridge_hqd_sdma_destroy,
	.hqd_is_occupied = bridge_hqd_is_occupied,
	.hqd_sdma_is_occupied = bridge_hqd_sdma_is_occupied,
	.hqd_dump = bridge_hqd_dump,
	.hqd_sdma_dump = bridge_hqd_sdma_dump,
	.alloc_gtt_mem = bridge_alloc_gtt_mem,
	.free_gtt_mem = bridge_free_gtt_mem,
	.hiq_mqd_load = bridge_hiq_mqd_load,
	.ring_kernel_doorbell = bridge_ring_kernel_doorbell,
	.mes_add_hw_queue = bridge_mes_add_hw_queue,
	.mes_remove_hw_queue = bridge_mes_remove_hw_queue,
	.gpu_reset = bridge_gpu_reset,
	.reserve_mem_limit = bridge_reserve_mem_limit,
	.unreserve_mem_limit = bridge_unreserve_mem_limit,
	.svm_alloc_vram = bridge_svm_alloc_vram,
	.svm_alloc_vram_block = bridge_svm_alloc_vram_block,
	.svm_free_vram = bridge_svm_free_vram,
	.svm_copy = bridge_svm_copy,
	.svm_map = bridge_svm_map,
	.svm_unmap = bridge_svm_unmap,
};

static void rkfd_amdgpu_ih_work(struct work_struct *work)
{
	struct rkfd_amdgpu_dev *bdev = container_of(work, struct rkfd_amdgpu_dev, ih_work);
	u32 entry[KGD_IH_RING_ENTRY_DWORDS];
	unsigned long flags;
	u32 dropped;

	for (;;) {
		spin_lock_irqsave(&bdev->ih_lock, flags);
		if (bdev->ih_head == bdev->ih_tail) {
			dropped = bdev->ih_dropped;
			bdev->ih_dropped = 0;
			spin_unlock_irqrestore(&bdev->ih_lock, flags);
			break;
		}
		memcpy(entry, bdev->ih[bdev->ih_tail % RKFD_AMDGPU_IH_SLOTS], sizeof(entry));
		bdev->ih_tail++;
		spin_unlock_irqrestore(&bdev->ih_lock, flags);
		kgd2kfd_interrupt(bdev->kfd, entry);
	}
	if (dropped)
		pr_warn_ratelimited("%u interrupt entries dropped (ring full)\n", dropped);
}

void rkfd_amdgpu_dev_interrupt(void *bdev_, const void *ih_ring_entry)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;
	unsigned long flags;

	spin_lock_irqsave(&bdev->ih_lock, flags);
	if (bdev->ih_head - bdev->ih_tail < RKFD_AMDGPU_IH_SLOTS) {
		memcpy(bdev->ih[bdev->ih_head % RKFD_AMDGPU_IH_SLOTS], ih_ring_entry,
		       KGD_IH_RING_ENTRY_DWORDS * sizeof(u32));
		bdev->ih_head++;
	} else {
		bdev->ih_dropped++;
	}
	spin_unlock_irqrestore(&bdev->ih_lock, flags);
	queue_work(system_highpri_wq, &bdev->ih_work);
}

/*
 * amdgpu_kfd_ops power management and reset: rkfd's, once it has the device.
 *
 * suspend: amdgpu_amdkfd_suspend's place in amdgpu_device_suspend, before
 * amdgpu_device_evict_resources() and before the buffer funcs (the SDMA
 * copies svm_copy uses) are turned off.  The bridge's SVM VRAM BOs are
 * pinned, so that eviction skips them; where it evicts VRAM (a dGPU, an
 * APU going to S4) rkfd moves every process's SVM pages out of this VRAM
 * first, after its queues are off the GPU (upstream: TTM's eviction of
 * the SVM BOs, svm_range_evict_svm_bo).  Pages that stay are reported by
 * rkfd (per process and range) and here; the suspend goes on, as
 * amdgpu's ignores a failed eviction of a pinned BO.
 */
void rkfd_amdgpu_dev_suspend(void *bdev_, bool suspend_proc)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;
	int ret;

	if (!bdev->kfd)
		return;
	kgd2kfd_suspend(bdev->kfd, suspend_proc);
	if (!bdev->svm || !rkfd_amdgpu_vram_lost_at_suspend(bdev->adev))
		return;
	ret = kgd2kfd_svm_evict_vram(bdev->kfd);
	if (ret)
		pr_warn("SVM pages left in VRAM at suspend (%d): their data is lost\n", ret);
}

int rkfd_amdgpu_dev_resume(void *bdev_, bool resume_proc)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	return bdev->kfd ? kgd2kfd_resume(bdev->kfd, resume_proc) : 0;
}

void rkfd_amdgpu_dev_suspend_process(void *bdev_)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	if (bdev->kfd)
		kgd2kfd_suspend_process(bdev->kfd);
}

int rkfd_amdgpu_dev_resume_process(void *bdev_)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	return bdev->kfd ? kgd2kfd_resume_process(bdev->kfd) : 0;
}

int rkfd_amdgpu_dev_pre_reset(void *bdev_, const char *cause)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	return bdev->kfd ? kgd2kfd_pre_reset(bdev->kfd, cause) : 0;
}

int rkfd_amdgpu_dev_post_reset(void *bdev_)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	return bdev->kfd ? kgd2kfd_post_reset(bdev->kfd) : 0;
}

int rkfd_amdgpu_dev_check_and_lock(void *bdev_)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	return bdev->kfd ? kgd2kfd_check_and_lock_kfd(bdev->kfd) : 0;
}

void rkfd_amdgpu_dev_unlock(void *bdev_)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	if (bdev->kfd)
		kgd2kfd_unlock_kfd(bdev->kfd);
}

int rkfd_amdgpu_dev_sched(void *bdev_, u32 node_id, bool start)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	if (!bdev->kfd)
		return 0;
	return start ? kgd2kfd_start_sched(bdev->kfd, node_id) :
		       kgd2kfd_stop_sched(bdev->kfd, node_id);
}

bool rkfd_amdgpu_dev_compute_active(void *bdev_, u32 node_id)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	return bdev->kfd && kgd2kfd_compute_active(bdev->kfd, node_id) > 0;
}

void rkfd_amdgpu_dev_smi_throttle(void *bdev_, u64 throttle_bitmask)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	if (bdev->kfd)
		kgd2kfd_smi_event_throttle(bdev->kfd, throttle_bitmask,
					   rkfd_amdgpu_throttle_counter(bdev->adev));
}

/* An SRAM ECC error (amdgpu's RAS code, atomic): rkfd counts it. */
void rkfd_amdgpu_dev_sram_ecc(void *bdev_)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	if (bdev->kfd)
		kgd2kfd_set_sram_ecc_flag(bdev->kfd);
}

/*
 * The VM fault fast path (atomic: hard IRQ, RCU): true to drop a fault of
 * @pasid.  Nothing is dropped before kgd2kfd_probe; between it and the
 * end of kgd2kfd_device_init no process has the device, so rkfd drops
 * all (upstream: no kfd_process of the PASID).
 */
bool rkfd_amdgpu_dev_vmfault_fast_path(void *bdev_, u32 pasid)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;
	struct kfd_dev *kfd = READ_ONCE(bdev->kfd);

	return kfd && kgd2kfd_vmfault_fast_path(kfd, pasid) > 0;
}

/* Before amdgpu resets the GPU: rkfd zaps the /dev/kfd mmaps of it. */
void rkfd_amdgpu_dev_clear_mappings(void *bdev_)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	if (bdev->kfd)
		kgd2kfd_clear_mappings(bdev->kfd);
}

/*
 * amdgpu_kfd_ops.teardown_processes names the amdgpu device: its rkfd
 * device, looked up under the list lock and called after it (amdgpu's SRCU
 * section keeps the device until device_exit).
 */
void rkfd_amdgpu_adev_teardown_processes(void *adev)
{
	struct kfd_dev *kfd = rkfd_amdgpu_kfd_of(adev);

	if (kfd)
		kgd2kfd_teardown_processes(kfd);
}

int rkfd_amdgpu_kfd_quiesce_mm(void *mm, u32 trigger)
{
	return kgd2kfd_quiesce_mm(mm, trigger);
}

int rkfd_amdgpu_kfd_resume_mm(void *mm)
{
	return kgd2kfd_resume_mm(mm);
}

void rkfd_amdgpu_kfd_queue_restore_rescheduled(void *mm)
{
	kgd2kfd_queue_restore_rescheduled(mm);
}

void rkfd_amdgpu_kfd_signal_userptr_fault(int tgid, u64 va)
{
	kgd2kfd_signal_userptr_fault(tgid, va);
}

/*
 * A retry fault at @addr of the VM of @pasid on @adev: rkfd's
 * kgd2kfd_svm_fault with the bridge's handle of that VM.  The device is
 * looked up under the list lock and used after it (amdgpu's SRCU section
 * around the call keeps it until device_exit), as teardown_processes.
 * -EFAULT when no KFD VM has @pasid (amdgpu then handles the fault as
 * without a KFD).
 */
int rkfd_amdgpu_adev_svm_fault(void *adev, u32 pasid, u64 addr, bool write)
{
	struct rkfd_amdgpu_dev *bdev;
	struct kfd_dev *kfd = NULL;
	void *hws = NULL, *vm;

	mutex_lock(&rkfd_amdgpu_devs_lock);
	bdev = rkfd_amdgpu_bdev_of_locked(adev);
	if (bdev) {
		kfd = bdev->kfd;
		hws = bdev->hws;
	}
	mutex_unlock(&rkfd_amdgpu_devs_lock);
	if (!kfd || !hws)
		return -EFAULT;
	vm = rkfd_amdgpu_vm_of_pasid(hws, pasid);
	if (!vm)
		return -EFAULT;
	return kgd2kfd_svm_fault(kfd, pasid, vm, addr, write ? KGD_VM_FAULT_WRITE : 0);
}

/* Atomic context (a fence's ->enable_signaling): rkfd's export never sleeps. */
int rkfd_amdgpu_kfd_schedule_evict_and_restore_process(void *mm, u16 context_id, void *fence)
{
	return kgd2kfd_schedule_evict_and_restore_process(mm, context_id, fence);
}

/*
 * amdgpu_kfd_ops.probe: the topology values are kept for init, where
 * rkfd's kgd2kfd_probe gets them with the HQDs amdgpu keeps, which only
 * its shared resources (at device_init) tell.
 */
void *rkfd_amdgpu_dev_probe(void *adev, const struct rkfd_amdgpu_info *in)
{
	struct rkfd_amdgpu_dev *bdev;
	struct kgd_gpu_info *info;
	u32 i;

	BUILD_BUG_ON(RKFD_AMDGPU_MAX_CACHES != KGD_MAX_CACHES);
	bdev = kzalloc_obj(*bdev, GFP_KERNEL);
	info = kzalloc_obj(*info, GFP_KERNEL);
	if (!bdev || !info)
		goto fail;
	bdev->adev = adev;
	INIT_LIST_HEAD(&bdev->link);
	spin_lock_init(&bdev->ih_lock);
	INIT_WORK(&bdev->ih_work, rkfd_amdgpu_ih_work);

	strscpy(info->name, in->name, sizeof(info->name));
	info->gfx_target_version = in->gfx_target_version;
	info->vendor_id = in->vendor_id;
	info->device_id = in->device_id;
	info->domain = in->domain;
	info->location_id = in->location_id;
	info->drm_render_minor = in->drm_render_minor;
	info->unique_id = in->unique_id;
	info->num_shader_engines = in->num_shader_engines;
	info->sh_per_se = in->sh_per_se;
	info->cu_per_sh = in->cu_per_sh;
	info->simd_per_cu = in->simd_per_cu;
	info->max_waves_per_simd = in->max_waves_per_simd;
	info->wave_front_size = in->wave_front_size;
	info->lds_size_in_kb = in->lds_size_in_kb;
	info->num_sdma_engines = in->num_sdma_engines;
	info->num_sdma_xgmi_engines = in->num_sdma_xgmi_engines;
	info->num_xcc = in->num_xcc;
	info->num_pipe_per_mec = in->num_pipe_per_mec;
	info->num_queue_per_pipe = in->num_queue_per_pipe;
	info->max_engine_clk_fcompute = in->max_engine_clk_fcompute;
	info->fw_version = in->fw_version;
	info->sdma_fw_version = in->sdma_fw_version;
	info->vram_size = in->vram_size;
	info->vram_width = in->vram_width;
	info->mem_clk_max = in->mem_clk_max;
	info->vram_is_public = in->vram_is_public;
	info->doorbell_process_size = 8192;	/* gfx9+ (amdkfd's kfd_doorbell_process_slice) */
	/* kfd_get_gpu_cache_info's levels (rkfd_amdgpu_derive_caches) */
	info->num_caches = min_t(u32, in->num_caches, KGD_MAX_CACHES);
	for (i = 0; i < info->num_caches; i++) {
		info->caches[i].level = in->caches[i].level;
		info->caches[i].size_kib = in->caches[i].size_kib;
		info->caches[i].cache_line_size = in->caches[i].line_size;
		info->caches[i].type = in->caches[i].type;
		info->caches[i].cus_per_cache = in->caches[i].cus_shared;
	}
	info->hive_id = in->hive_id;
	/* kfd_topology_add_device's bits the bridge honours (rkfd_amdgpu_capability) */
	info->capability = in->capability;
	info->num_sdma_queues_per_engine = in->num_sdma_queues_per_engine;
	info->max_slots_scratch_cu = in->max_slots_scratch_cu;
	/*
	 * num_cp_queues and reserved_hqds: at init, from the shared resources.
	 * Left 0: capability2 and debug_prop (debugger bits: no trap handler
	 * here), and cwsr_size / ctl_stack_size, since CWSR needs the trap
	 * handler the bridge does not install (0 is "no CWSR" to rkfd; see
	 * bridge/README.md).  Not derived yet: XGMI io_links.
	 */
	bdev->info = info;
	return bdev;
fail:
	kfree(info);
	kfree(bdev);
	return NULL;
}

/*
 * The HWS path first (it also reads which HQDs amdgpu keeps), then rkfd's
 * kgd2kfd_probe and kgd2kfd_device_init, which starts the HWS.  amdgpu
 * may call init again after a failed one: what exists is kept.
 * @res: amdgpu's kgd2kfd_shared_resources, read by the amdgpu side.
 */
bool rkfd_amdgpu_dev_init(void *bdev_, const void *res)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;
	void *hws, *svm;

	if (!bdev->hws) {
		hws = rkfd_amdgpu_hws_create(bdev->adev, res, bdev->info->reserved_hqds,
					     &bdev->info->num_cp_queues);
		if (IS_ERR(hws))
			return false;
		bdev->hws = hws;
	}
	if (!bdev->svm) {
		/* rkfd's device pages: its VRAM size, whole pages (rkfd_hmm.c). */
		svm = rkfd_amdgpu_svm_vram_create(bdev->adev,
						  DIV_ROUND_UP(bdev->info->vram_size, PAGE_SIZE));
		if (IS_ERR(svm))
			return false;
		bdev->svm = svm;
	}
	if (!bdev->kfd) {
		/* Read locklessly by the VM fault fast path. */
		WRITE_ONCE(bdev->kfd, kgd2kfd_probe((struct kgd_dev *)bdev, THIS_MODULE,
						    &rkfd_amdgpu_calls, bdev->info));
		if (!bdev->kfd)
			return false;
		kfree(bdev->info);
		bdev->info = NULL;
	}
	if (kgd2kfd_device_init(bdev->kfd))
		return false;
	mutex_lock(&rkfd_amdgpu_devs_lock);
	list_add(&bdev->link, &rkfd_amdgpu_devs);
	mutex_unlock(&rkfd_amdgpu_devs_lock);
	return true;
}

/*
 * amdgpu has stopped calling ops->interrupt for this device (it cleared
 * adev->kfd.dev and waited for RCU) before device_exit.
 */
void rkfd_amdgpu_dev_exit(void *bdev_)
{
	struct rkfd_amdgpu_dev *bdev = bdev_;

	cancel_work_sync(&bdev->ih_work);
	mutex_lock(&rkfd_amdgpu_devs_lock);
	list_del_init(&bdev->link);
	mutex_unlock(&rkfd_amdgpu_devs_lock);
	if (bdev->kfd)
		kgd2kfd_device_exit(bdev->kfd);
	/* After rkfd's exit: its dev_pagemap is gone, every VRAM page back. */
	if (bdev->svm)
		rkfd_amdgpu_svm_vram_destroy(bdev->svm);
	if (bdev->hws)
		rkfd_amdgpu_hws_destroy(bdev->hws);
	kfree(bdev->info);
	kfree(bdev);
}

static int __init rkfd_amdgpu_init(void)
{
	int ret = rkfd_amdgpu_register();

	if (ret == -ENODEV)
		pr_err("amdgpu was not loaded with kfd=external\n");
	else if (ret)
		pr_err("amdgpu_kfd_register failed: %d\n", ret);
	return ret;
}

/* Unregister first: amdgpu tears the devices down through device_exit. */
static void __exit rkfd_amdgpu_exit(void)
{
	rkfd_amdgpu_unregister();
}

module_init(rkfd_amdgpu_init);
module_exit(rkfd_amdgpu_exit);
MODULE_DESCRIPTION("rkfd bridge to the in-tree amdgpu driver (amdgpu.kfd=external)");
MODULE_LICENSE("GPL");
