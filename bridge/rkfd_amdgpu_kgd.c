// SPDX-License-Identifier: GPL-2.0
/*
 * rkfd_amdgpu.ko, amdgpu side: registers with the patched amdgpu
 * (amdgpu.kfd=external, patches/amdgpu/0005-0006) and calls its exported
 * amdgpu_amdkfd_* functions (namespace AMDGPU_KFD, patch 0003).  Compiled
 * with amdgpu's own headers from the patched source and amdgpu's Kconfig
 * symbols (scripts/build-amdgpu writes amdgpu-config.h); it includes no
 * rkfd header (see rkfd_amdgpu.h).  It also keeps each GPU's HWS path
 * (struct rkfd_amdgpu_hws: amdgpu's kfd2kgd table, the kernel doorbell
 * page, rkfd's GTT objects; bridge/README.md, "The HWS path").
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>

#include "amdgpu.h"
#include "amdgpu_amdkfd.h"
#include "amdgpu_kfd_ops.h"
#include "kgd_kfd_interface.h"
#include "v9_structs.h"
#include "v10_structs.h"
#include "v11_structs.h"
#include "v12_structs.h"
#include "gc/gc_9_0_sh_mask.h"

#include "rkfd_amdgpu.h"
#include "rkfd_amdgpu_desc.h"
#include "rkfd_amdgpu_f2g.h"

/* A VM acquired from one render-node file (rkfd's kfd2kgd acquire_vm). */
struct rkfd_amdgpu_vm {
	struct amdgpu_device *adev;
	struct file *filp;		/* reference held until release */
	void *drm_priv;			/* the struct drm_file */
	void *process_info;		/* amdgpu_amdkfd_process_info of this VM */
	struct dma_fence *ef;		/* eviction fence */
};

/* The plain values rkfd_amdgpu_derive() turns into topology values. */
static void rkfd_amdgpu_read_desc(struct amdgpu_device *adev, bool vf,
				  struct rkfd_amdgpu_desc *d)
{
	u32 gc = amdgpu_ip_version(adev, GC_HWIP, 0);
	struct drm_device *ddev = adev_to_drm(adev);
	struct kfd_local_mem_info mem = {};
	struct pci_dev *pdev = adev->pdev;

	d->gc_major = IP_VERSION_MAJ(gc);
	d->gc_minor = IP_VERSION_MIN(gc);
	d->gc_rev = IP_VERSION_REV(gc);
	d->vf = vf;
	d->apu = adev->gmc.is_app_apu || (adev->flags & AMD_IS_APU);
	d->vendor_id = pdev->vendor;
	d->device_id = pdev->device;
	d->domain = pci_domain_nr(pdev->bus);
	d->bus = pdev->bus->number;
	d->devfn = pdev->devfn;
	d->render_minor = ddev->render ? ddev->render->index : 0;
	d->unique_id = adev->unique_id;
	d->max_shader_engines = adev->gfx.config.max_shader_engines;
	d->max_sh_per_se = adev->gfx.config.max_sh_per_se;
	d->max_cu_per_sh = adev->gfx.config.max_cu_per_sh;
	d->simd_per_cu = adev->gfx.cu_info.simd_per_cu;
	d->max_waves_per_simd = adev->gfx.cu_info.max_waves_per_simd;
	d->wave_front_size = adev->gfx.cu_info.wave_front_size;
	d->lds_size_kb = adev->gfx.cu_info.lds_size;
	d->sdma_instances = adev->sdma.num_instances;
	d->xcc_mask = adev->gfx.xcc_mask;
	d->num_pipe_per_mec = adev->gfx.mec.num_pipe_per_mec;
	d->num_queue_per_pipe = adev->gfx.mec.num_queue_per_pipe;
	if (vf || !rkfd_amdgpu_target_version(d->gc_major, d->gc_minor, d->gc_rev))
		return;		/* no device: ask amdgpu nothing more */
	d->max_engine_clk_mhz = amdgpu_amdkfd_get_max_engine_clock_in_mhz(adev);
	d->mec_fw = amdgpu_amdkfd_get_fw_version(adev, KGD_ENGINE_MEC1);
	d->sdma_fw = amdgpu_amdkfd_get_fw_version(adev, KGD_ENGINE_SDMA1);
	amdgpu_amdkfd_get_local_mem_info(adev, &mem, NULL);
	d->local_mem_size_private = mem.local_mem_size_private;
	d->local_mem_size_public = mem.local_mem_size_public;
	d->vram_width = mem.vram_width;
	d->mem_clk_max = mem.mem_clk_max;
}

/* amdgpu_kfd_ops.probe: one GPU amdgpu offers becomes an rkfd device. */
static struct kfd_dev *rkfd_amdgpu_probe(struct amdgpu_device *adev, bool vf)
{
	struct rkfd_amdgpu_desc d = {};
	struct rkfd_amdgpu_info *info;
	void *bdev = NULL;

	rkfd_amdgpu_read_desc(adev, vf, &d);
	info = kzalloc_obj(*info, GFP_KERNEL);
	if (!info)
		return NULL;
	if (rkfd_amdgpu_derive(&d, info))
		bdev = rkfd_amdgpu_dev_probe(adev, info);
	else
		dev_info(adev->dev, "rkfd_amdgpu: GC %u.%u.%u%s not supported, no KFD device\n",
			 d.gc_major, d.gc_minor, d.gc_rev, vf ? " (SR-IOV VF)" : "");
	kfree(info);
	return bdev;
}

static bool rkfd_amdgpu_device_init(struct kfd_dev *kfd,
				    const struct kgd2kfd_shared_resources *res)
{
	/*
	 * @res (VMID and queue bitmaps, doorbell aperture) is what hardware
	 * queues need; rkfd's hqd_* calls are not implemented over amdgpu yet.
	 */
	return rkfd_amdgpu_dev_init(kfd);
}

static void rkfd_amdgpu_device_exit(struct kfd_dev *kfd)
{
	rkfd_amdgpu_dev_exit(kfd);
}

/* Hard IRQ, under rcu_read_lock(): must not sleep. */
static void rkfd_amdgpu_interrupt(struct kfd_dev *kfd, const void *ih_ring_entry)
{
	rkfd_amdgpu_dev_interrupt(kfd, ih_ring_entry);
}

/*
 * The optional members stay NULL until rkfd's device interface has the
 * matching call (suspend/resume, reset, eviction, SVM retry faults, SMI):
 * amdgpu then behaves as with no KFD process for that call.
 */
static const struct amdgpu_kfd_ops rkfd_amdgpu_ops = {
	.probe = rkfd_amdgpu_probe,
	.device_init = rkfd_amdgpu_device_init,
	.device_exit = rkfd_amdgpu_device_exit,
	.interrupt = rkfd_amdgpu_interrupt,
};

int rkfd_amdgpu_register(void)
{
	return amdgpu_kfd_register(&rkfd_amdgpu_ops);
}

void rkfd_amdgpu_unregister(void)
{
	amdgpu_kfd_unregister(&rkfd_amdgpu_ops);
}

u64 rkfd_amdgpu_gpu_clock_counter(void *adev)
{
	return amdgpu_amdkfd_get_gpu_clock_counter(adev);
}

u64 rkfd_amdgpu_available_vram(void *adev)
{
	return amdgpu_amdkfd_get_available_memory(adev, 0);
}

/*
 * As amdkfd's kfd_process_device_init_vm(), which uses amdgpu's unexported
 * amdgpu_file_to_fpriv(): the file must be a DRM file of this very device.
 * The context id of the eviction fence is 0: rkfd has no eviction/restore
 * callbacks yet (schedule_evict_and_restore_process is not registered).
 */
int rkfd_amdgpu_acquire_vm(void *adev_, void *drm_file, void **vm_out)
{
	struct amdgpu_device *adev = adev_;
	struct drm_device *ddev = adev_to_drm(adev);
	struct file *filp = drm_file;
	struct rkfd_amdgpu_vm *vm;
	struct drm_file *file_priv;
	int ret;

	if (!filp || filp->f_op != ddev->driver->fops)
		return -EINVAL;
	file_priv = filp->private_data;
	if (!file_priv || !file_priv->minor || file_priv->minor->dev != ddev ||
	    !file_priv->driver_priv)
		return -EINVAL;
	vm = kzalloc_obj(*vm, GFP_KERNEL);
	if (!vm)
		return -ENOMEM;
	vm->adev = adev;
	vm->drm_priv = file_priv;
	ret = amdgpu_amdkfd_gpuvm_acquire_process_vm(adev, drm_priv_to_vm(file_priv),
						     &vm->process_info, 0, &vm->ef);
	if (ret) {
		kfree(vm);
		return ret;
	}
	vm->filp = get_file(filp);
	*vm_out = vm;
	return 0;
}

/*
 * amdkfd releases an acquired VM by dropping its file reference: amdgpu's
 * postclose then tears the KFD part of the VM down (amdgpu_vm_fini ->
 * amdgpu_amdkfd_gpuvm_destroy_cb).
 */
void rkfd_amdgpu_release_vm(void *vm_)
{
	struct rkfd_amdgpu_vm *vm = vm_;

	dma_fence_put(vm->ef);
	fput(vm->filp);
	kfree(vm);
}

int rkfd_amdgpu_alloc_memory(void *adev, void *vm_, u64 va, u64 size, u32 flags,
			     void **mem, u64 *mmap_offset)
{
	struct rkfd_amdgpu_vm *vm = vm_;

	return amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu(adev, va, size, vm->drm_priv,
						       (struct kgd_mem **)mem,
						       mmap_offset, flags, false);
}

void rkfd_amdgpu_free_memory(void *adev, void *vm_, void *mem)
{
	struct rkfd_amdgpu_vm *vm = vm_;
	u64 size;

	amdgpu_amdkfd_gpuvm_free_memory_of_gpu(adev, mem, vm->drm_priv, &size);
}

int rkfd_amdgpu_map_memory(void *adev, void *vm_, void *mem)
{
	struct rkfd_amdgpu_vm *vm = vm_;
	int ret;

	ret = amdgpu_amdkfd_gpuvm_map_memory_to_gpu(adev, mem, vm->drm_priv);
	if (ret)
		return ret;
	return amdgpu_amdkfd_gpuvm_sync_memory(adev, mem, true);
}

int rkfd_amdgpu_unmap_memory(void *adev, void *vm_, void *mem)
{
	struct rkfd_amdgpu_vm *vm = vm_;

	return amdgpu_amdkfd_gpuvm_unmap_memory_from_gpu(adev, mem, vm->drm_priv);
}

void *rkfd_amdgpu_map_gtt_to_kernel(void *mem, u64 *size)
{
	void *kptr = NULL;

	if (amdgpu_amdkfd_gpuvm_map_bo_to_kernel(mem, &kptr, size, AMDGPU_GEM_DOMAIN_GTT))
		return NULL;
	return kptr;
}

/* Module-wide system-memory accounts (adev NULL), as amdkfd's SVM does. */
int rkfd_amdgpu_reserve_mem_limit(u64 size, u32 flags)
{
	return amdgpu_amdkfd_reserve_mem_limit(NULL, size, flags, -1);
}

void rkfd_amdgpu_unreserve_mem_limit(u64 size, u32 flags)
{
	amdgpu_amdkfd_unreserve_mem_limit(NULL, size, flags, -1);
}

/*
 * Graphics interop, as amdkfd's GET_DMABUF_INFO ioctl: amdgpu allocates
 * the metadata copy, the bridge hands it to rkfd's buffer and frees it.
 * The BO's XCP partition is not looked at: the bridge attaches whole GPUs.
 */
int rkfd_amdgpu_get_dmabuf_info(void *adev, int fd, void **owner, u64 *size, u32 *flags,
				void *metadata, u32 buffer_size, u32 *metadata_size)
{
	struct amdgpu_device *dmabuf_adev = NULL;
	void *buf = NULL;
	s8 xcp_id;
	int ret;

	ret = amdgpu_amdkfd_get_dmabuf_info(adev, fd, &dmabuf_adev, size, &buf, buffer_size,
					    metadata_size, flags, &xcp_id);
	if (!ret && buf && *metadata_size <= buffer_size)
		memcpy(metadata, buf, *metadata_size);
	kfree(buf);
	*owner = dmabuf_adev;
	return ret;
}

/*
 * amdkfd's IMPORT_DMABUF: amdgpu turns the fd into a GEM handle of its KFD
 * DRM client and the BO into a kgd_mem of the VM, with the alloc flags
 * upstream gives an import.
 */
int rkfd_amdgpu_import_dmabuf(void *adev, void *vm_, int fd, u64 va, void **mem,
			      u64 *size, u32 *flags, u64 *mmap_offset)
{
	struct rkfd_amdgpu_vm *vm = vm_;
	struct kgd_mem *kmem;
	int ret;

	if (!PAGE_ALIGNED(va))
		return -EINVAL;
	ret = amdgpu_amdkfd_gpuvm_import_dmabuf_fd(adev, fd, va, vm->drm_priv, &kmem, size,
						   mmap_offset);
	if (ret)
		return ret;
	*flags = kmem->alloc_flags;
	*mem = kmem;
	return 0;
}

static const struct kfd2kgd_calls *rkfd_amdgpu_f2g_table(enum rkfd_amdgpu_f2g f2g)
{
	switch (f2g) {
	case RKFD_AMDGPU_F2G_GFX_V9:
		return &gfx_v9_kfd2kgd;
	case RKFD_AMDGPU_F2G_ARCTURUS:
		return &arcturus_kfd2kgd;
	case RKFD_AMDGPU_F2G_ALDEBARAN:
		return &aldebaran_kfd2kgd;
	case RKFD_AMDGPU_F2G_GC_9_4_3:
		return &gc_9_4_3_kfd2kgd;
	case RKFD_AMDGPU_F2G_GFX_V10:
		return &gfx_v10_kfd2kgd;
	case RKFD_AMDGPU_F2G_GFX_V10_3:
		return &gfx_v10_3_kfd2kgd;
	case RKFD_AMDGPU_F2G_GFX_V11:
		return &gfx_v11_kfd2kgd;
	case RKFD_AMDGPU_F2G_GFX_V12:
		return &gfx_v12_kfd2kgd;
	case RKFD_AMDGPU_F2G_GFX_V12_1:
		return &gfx_v12_1_kfd2kgd;
	default:
		return NULL;
	}
}

/* Where a compute MQD layout keeps what the HIQ load needs. */
struct rkfd_amdgpu_mqd_layout {
	size_t size, base_addr_lo, base_addr_hi, doorbell_control;
};

#define RKFD_AMDGPU_MQD_LAYOUT(type) ((struct rkfd_amdgpu_mqd_layout) {		\
	.size = sizeof(struct type),						\
	.base_addr_lo = offsetof(struct type, cp_mqd_base_addr_lo),		\
	.base_addr_hi = offsetof(struct type, cp_mqd_base_addr_hi),		\
	.doorbell_control = offsetof(struct type, cp_hqd_pq_doorbell_control),	\
})

static bool rkfd_amdgpu_mqd_layout(enum rkfd_amdgpu_mqd mqd, struct rkfd_amdgpu_mqd_layout *l)
{
	switch (mqd) {
	case RKFD_AMDGPU_MQD_V9:
		*l = RKFD_AMDGPU_MQD_LAYOUT(v9_mqd);
		return true;
	case RKFD_AMDGPU_MQD_V10:
		*l = RKFD_AMDGPU_MQD_LAYOUT(v10_compute_mqd);
		return true;
	case RKFD_AMDGPU_MQD_V11:
		*l = RKFD_AMDGPU_MQD_LAYOUT(v11_compute_mqd);
		return true;
	case RKFD_AMDGPU_MQD_V12:
		*l = RKFD_AMDGPU_MQD_LAYOUT(v12_compute_mqd);
		return true;
	default:
		return false;
	}
}

/* One kernel object of rkfd's (alloc_gtt_mem). */
struct rkfd_amdgpu_gtt {
	struct list_head link;		/* in rkfd_amdgpu_hws.gtt */
	void *bo;			/* amdgpu_amdkfd_alloc_kernel_mem's handle */
	u64 gpu_addr, size;
	void *cpu_ptr;
};

/* The HWS path of one GPU (see rkfd_amdgpu.h). */
struct rkfd_amdgpu_hws {
	struct amdgpu_device *adev;
	const struct kfd2kgd_calls *f2g;	/* NULL: amdkfd has no table either */
	enum rkfd_amdgpu_mqd mqd;
	/* The kernel doorbell page (upstream kfd->doorbells). */
	void *db_bo;
	u64 db_offset;				/* bytes into the doorbell BAR */
	u32 __iomem *db_ptr;
	/* Only lock of the amdgpu side; no amdgpu or rkfd call is made under it. */
	struct mutex gtt_lock;
	struct list_head gtt;			/* struct rkfd_amdgpu_gtt, under gtt_lock */
	bool hiq_mapped;			/* under gtt_lock */
	u32 hiq_doorbell;			/* its BAR index, under gtt_lock */
};

/*
 * As upstream kfd_doorbell_init(): one page of the doorbell BAR for the
 * kernel queues.  amdgpu_bo_create_kernel() is not exported;
 * amdgpu_amdkfd_alloc_kernel_mem() creates, pins and maps the same BO in
 * the DOORBELL domain, where its GPU offset is its BAR offset.
 */
void *rkfd_amdgpu_hws_create(void *adev_)
{
	struct amdgpu_device *adev = adev_;
	u32 gc = amdgpu_ip_version(adev, GC_HWIP, 0);
	enum rkfd_amdgpu_f2g f2g;
	struct rkfd_amdgpu_hws *hws;
	void *cpu = NULL;
	int ret;

	BUILD_BUG_ON(RKFD_AMDGPU_DOORBELL_OFFSET_MASK !=
		     CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET_MASK);
	BUILD_BUG_ON(RKFD_AMDGPU_DOORBELL_OFFSET_SHIFT !=
		     CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET__SHIFT);
	BUILD_BUG_ON(RKFD_AMDGPU_DOORBELL_PAGE != PAGE_SIZE);

	hws = kzalloc_obj(*hws, GFP_KERNEL);
	if (!hws)
		return ERR_PTR(-ENOMEM);
	hws->adev = adev;
	f2g = rkfd_amdgpu_f2g_of(IP_VERSION_MAJ(gc), IP_VERSION_MIN(gc), IP_VERSION_REV(gc));
	hws->f2g = rkfd_amdgpu_f2g_table(f2g);
	hws->mqd = rkfd_amdgpu_mqd_of(f2g);
	mutex_init(&hws->gtt_lock);
	INIT_LIST_HEAD(&hws->gtt);
	ret = amdgpu_amdkfd_alloc_kernel_mem(adev, RKFD_AMDGPU_DOORBELL_PAGE,
					     AMDGPU_GEM_DOMAIN_DOORBELL, &hws->db_bo,
					     &hws->db_offset, &cpu, false);
	if (ret) {
		dev_err(adev->dev, "rkfd_amdgpu: no kernel doorbell page (%d)\n", ret);
		mutex_destroy(&hws->gtt_lock);
		kfree(hws);
		return ERR_PTR(ret);
	}
	hws->db_ptr = (u32 __iomem *)cpu;
	return hws;
}

void rkfd_amdgpu_hws_destroy(void *hws_)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_gtt *g, *tmp;

	/* rkfd has freed its objects; anything left would be a leak of its. */
	if (hws->hiq_mapped)
		amdgpu_amdkfd_unmap_hiq(hws->adev, hws->hiq_doorbell, 0);
	list_for_each_entry_safe(g, tmp, &hws->gtt, link) {
		dev_warn(hws->adev->dev, "rkfd_amdgpu: GTT object of %llu bytes not freed\n",
			 g->size);
		amdgpu_amdkfd_free_kernel_mem(hws->adev, &g->bo);
		list_del(&g->link);
		kfree(g);
	}
	amdgpu_amdkfd_free_kernel_mem(hws->adev, &hws->db_bo);
	mutex_destroy(&hws->gtt_lock);
	kfree(hws);
}

/*
 * Upstream's kfd_gtt_sa_allocate() sub-allocates one such BO; here each
 * object is its own (rkfd allocates three pages and one runlist IB per
 * GPU).  Zeroed, as rkfd's interface promises.
 */
int rkfd_amdgpu_gtt_alloc(void *hws_, u64 size, void **mem, u64 *gpu_addr, void **cpu_ptr)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_gtt *g;
	int ret;

	if (!size || size > SZ_1G)
		return -EINVAL;
	g = kzalloc_obj(*g, GFP_KERNEL);
	if (!g)
		return -ENOMEM;
	ret = amdgpu_amdkfd_alloc_kernel_mem(hws->adev, size, AMDGPU_GEM_DOMAIN_GTT, &g->bo,
					     &g->gpu_addr, &g->cpu_ptr, false);
	if (ret) {
		kfree(g);
		return ret;
	}
	g->size = size;
	memset(g->cpu_ptr, 0, size);
	mutex_lock(&hws->gtt_lock);
	list_add(&g->link, &hws->gtt);
	mutex_unlock(&hws->gtt_lock);
	*mem = g;
	*gpu_addr = g->gpu_addr;
	*cpu_ptr = g->cpu_ptr;
	return 0;
}

/*
 * rkfd frees its kernel objects only when its HWS is gone (device exit, a
 * failed start), and has no call that unloads the HIQ: the first free
 * unmaps it through the KIQ, as upstream's kernel_queue_uninit ->
 * destroy_hiq_mqd (amdgpu_amdkfd_unmap_hiq), before the CP could read
 * freed memory.
 */
void rkfd_amdgpu_gtt_free(void *hws_, void *mem)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_gtt *g = mem;
	bool unmap;
	int ret;

	mutex_lock(&hws->gtt_lock);
	unmap = hws->hiq_mapped;
	hws->hiq_mapped = false;
	list_del(&g->link);
	mutex_unlock(&hws->gtt_lock);
	if (unmap) {
		ret = amdgpu_amdkfd_unmap_hiq(hws->adev, hws->hiq_doorbell, 0);
		if (ret)
			dev_warn(hws->adev->dev, "rkfd_amdgpu: unmapping the HIQ failed (%d)\n",
				 ret);
	}
	amdgpu_amdkfd_free_kernel_mem(hws->adev, &g->bo);
	kfree(g);
}

/* The kernel mapping of @size bytes of GTT at @gpu_addr, if rkfd owns them. */
static void *rkfd_amdgpu_gtt_cpu(struct rkfd_amdgpu_hws *hws, u64 gpu_addr, u64 size)
{
	struct rkfd_amdgpu_gtt *g;
	void *cpu = NULL;

	mutex_lock(&hws->gtt_lock);
	list_for_each_entry(g, &hws->gtt, link) {
		if (gpu_addr >= g->gpu_addr && size <= g->size &&
		    gpu_addr - g->gpu_addr <= g->size - size) {
			cpu = g->cpu_ptr + (gpu_addr - g->gpu_addr);
			break;
		}
	}
	mutex_unlock(&hws->gtt_lock);
	return cpu;
}

/*
 * kfd2kgd hiq_mqd_load of the GPU's table (kgd_gfx_v9_hiq_mqd_load, ...),
 * which maps the HIQ through amdgpu's KIQ: MAP_QUEUES with the MQD's GART
 * address, its write-pointer poll address and the doorbell's BAR index.
 * The CP reads the MQD from GART, so the copy there (an object of
 * rkfd's, at cp_mqd_base_addr) gets the BAR index in its doorbell control
 * as well as @mqd, which only the table's call reads.  The KIQ packet is
 * committed, not waited for, as upstream.
 */
int rkfd_amdgpu_hiq_mqd_load(void *hws_, void *mqd, u32 mqd_size, u32 pipe_id, u32 queue_id,
			     u32 doorbell_dword)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_mqd_layout l;
	u32 bar_index, ctl, lo, hi;
	void *gart_copy;
	int ret;

	if (!hws->f2g || !hws->f2g->hiq_mqd_load || !rkfd_amdgpu_mqd_layout(hws->mqd, &l))
		return -EOPNOTSUPP;
	if (mqd_size < l.size ||
	    !rkfd_amdgpu_kernel_doorbell(hws->db_offset, doorbell_dword, &bar_index))
		return -EINVAL;
	memcpy(&ctl, mqd + l.doorbell_control, sizeof(ctl));
	memcpy(&lo, mqd + l.base_addr_lo, sizeof(lo));
	memcpy(&hi, mqd + l.base_addr_hi, sizeof(hi));
	if (!rkfd_amdgpu_doorbell_control(ctl, doorbell_dword, bar_index, &ctl))
		return -EINVAL;
	gart_copy = rkfd_amdgpu_gtt_cpu(hws, (u64)hi << 32 | lo, l.size);
	if (!gart_copy)
		return -EINVAL;
	memcpy(mqd + l.doorbell_control, &ctl, sizeof(ctl));
	memcpy(gart_copy + l.doorbell_control, &ctl, sizeof(ctl));
	ret = hws->f2g->hiq_mqd_load(hws->adev, mqd, pipe_id, queue_id, bar_index, 0);
	if (ret)
		return ret;
	mutex_lock(&hws->gtt_lock);
	hws->hiq_mapped = true;
	hws->hiq_doorbell = bar_index;
	mutex_unlock(&hws->gtt_lock);
	return 0;
}

/* Upstream kq_submit_packet -> write_kernel_doorbell64. */
void rkfd_amdgpu_ring_kernel_doorbell(void *hws_, u32 doorbell_dword, u64 value)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	u32 bar_index;

	if (!rkfd_amdgpu_kernel_doorbell(hws->db_offset, doorbell_dword, &bar_index)) {
		pr_warn_once("rkfd_amdgpu: kernel doorbell %u out of its page\n", doorbell_dword);
		return;
	}
	/* The ring and write-pointer stores (USWC GTT) land before the doorbell. */
	wmb();
	writeq(value, (u64 __iomem *)(hws->db_ptr + doorbell_dword));
}

MODULE_IMPORT_NS("AMDGPU_KFD");
