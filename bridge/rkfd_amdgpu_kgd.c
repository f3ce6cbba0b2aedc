// SPDX-License-Identifier: GPL-2.0
/*
 * rkfd_amdgpu.ko, amdgpu side: registers with the patched amdgpu
 * (amdgpu.kfd=external, patches/amdgpu/0005-0006) and calls its exported
 * amdgpu_amdkfd_* functions (namespace AMDGPU_KFD, patch 0003).  Compiled
 * with amdgpu's own headers from the patched source and amdgpu's Kconfig
 * symbols (scripts/build-amdgpu writes amdgpu-config.h); it includes no
 * rkfd header (see rkfd_amdgpu.h).
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>

#include "amdgpu.h"
#include "amdgpu_amdkfd.h"
#include "amdgpu_kfd_ops.h"

#include "rkfd_amdgpu.h"
#include "rkfd_amdgpu_desc.h"

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

MODULE_IMPORT_NS("AMDGPU_KFD");
