// SPDX-License-Identifier: GPL-2.0
/*
 * The virtual amdgpu's C shim: what a real amdgpu exposes to ROCm user
 * space besides the KFD, for one virtual GPU each:
 *
 *   /sys/devices/faux/0000:c1:00.0/           parent, named like a PCI function
 *     vendor device vbios_version unique_id   (rocm-smi: isAMDGPU, BDF from path)
 *     mem_info_vram_total mem_info_vram_used gpu_busy_percent
 *     pp_dpm_sclk pp_dpm_mclk power_dpm_force_performance_level
 *     hwmon/hwmonN/{name,in0_*,temp1_*,power1_*,pwm1,pwm1_max}
 *     hwmon/hwmonN/vgpu_throttle              raises a throttling interrupt
 *     hwmon/hwmonN/vgpu_power                 suspend/resume/reset as amdgpu
 *     drm/cardN, drm/renderDN                  a minimal DRM driver
 *
 * The DRM driver reports amdgpu's DRM version (3.64.0, Linux 7.3) and
 * answers amdgpu's DRM_IOCTL_AMDGPU_INFO queries and contexts
 * (DRM_IOCTL_AMDGPU_CTX) as far as libdrm_amdgpu's amdgpu_device_initialize()
 * and ROCm use them, GEM objects in VRAM and GTT (GEM_CREATE, GEM_MMAP,
 * DRM core's GEM_CLOSE) and their PRIME export to dma-bufs, which rkfd
 * imports (IMPORT_DMABUF); no command submission.  It has one ioctl
 * of its own, the GPU-access test interface
 * (DRM_IOCTL_AMDGPU_VGPU_ACCESS, vgpu_shim.h), which makes the virtual GPU
 * read or write its VM and raise retry faults.  Its other job
 * is mmap(): the render node maps the memory objects rkfd allocates
 * through kfd2kgd, by the offset alloc_memory_of_gpu returned, as
 * amdgpu's GEM mmap does for libhsakmt.  All state lives in Rust
 * (called through struct vgpu_shim_ops); this file holds no GPU logic.
 *
 * Lifetimes: struct vgpu_shim_dev is created and destroyed by Rust
 * (vgpu/kabi/device.rs) and never outlives the Rust GPU it points to.  DRM
 * files and their mmaps hold references on this module (fops owner, vm_file),
 * so none can exist when the module unloads and the devices are destroyed.
 */
#include <linux/device.h>
#include <linux/device/faux.h>
#include <linux/cred.h>
#include <linux/dma-buf.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/memremap.h>
#include <linux/sched/mm.h>
#include <linux/hwmon.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mount.h>
#include <linux/namei.h>
#include <linux/pagemap.h>
#include <linux/refcount.h>
#include <linux/rmap.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>

#include <drm/drm_auth.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_prime.h>
#include <drm/drm_vma_manager.h>
#include <uapi/drm/amdgpu_drm.h>

#include <kunit/test.h>

#include "vgpu_shim.h"

static char *profile = "gfx90a";
module_param(profile, charp, 0444);
MODULE_PARM_DESC(profile, "GPU profile, or comma-separated list (GPU i gets entry i mod n): gfx90a (default, MI210), gfx1030 (W6800), gfx1100 (W7900), gfx1103 (780M)");

/* rocm-smi shows it as "Driver version"; the in-tree amdgpu has none. */
MODULE_VERSION("0.1.0-vgpu");
/* dma_buf_get/put for rkfd's imports (vgpu_shim_dmabuf_gem). */
MODULE_IMPORT_NS("DMA_BUF");

const char *vgpu_shim_profile(void)
{
	return profile;
}

/* The layout Rust mirrors in vgpu/kabi/shim_ffi.rs (generated). */
static_assert(sizeof(struct vgpu_shim_dev_info) == 176);
static_assert(offsetof(struct vgpu_shim_dev_info, unique_id) == 56);
static_assert(offsetof(struct vgpu_shim_dev_info, power_cap_uw) == 92);
static_assert(offsetof(struct vgpu_shim_dev_info, amdgpu) == 96);
static_assert(offsetof(struct vgpu_shim_amdgpu_info, gtt_size) == 72);

/* One virtual GPU's devices. */
struct vgpu_shim_dev {
	struct faux_device *faux;
	struct vgpu_drm *drm;		/* devres-managed on faux->dev */
	struct device *hwmon;
	void *gpu;			/* the Rust GPU, outlives this */
	const struct vgpu_shim_ops *ops;	/* what C calls in Rust */
	/*
	 * The live GEM objects by the page offset of their memory object
	 * (struct vgpu_gem), for the render node's mmap.  An entry goes when
	 * its object is freed; lookups take a reference with
	 * kref_get_unless_zero() under the xarray's lock.
	 */
	struct xarray gems;
	struct vgpu_shim_dev_info info;
};

/* The DRM device, embedded as DRM wants it. */
struct vgpu_drm {
	struct drm_device drm;
	struct vgpu_shim_dev *dev;
};

/*
 * A DRM file's driver_priv: the Rust state (its GPU VM) and the amdgpu
 * contexts it allocated (amdgpu_fpriv's ctx_mgr: ids only, from 1).
 */
struct vgpu_file {
	void *vm;
	struct xarray ctxs;
};

/* A GEM object (see "GEM objects and PRIME" below). */
struct vgpu_gem {
	struct drm_gem_object base;
	void *mem;		/* one reference on the Rust memory object */
	u64 mmap_offset;	/* its render-node mmap offset */
	u32 domains;		/* AMDGPU_GEM_DOMAIN_* asked for (bo->preferred_domains) */
	u64 flags;		/* AMDGPU_GEM_CREATE_* (bo->flags) */
};

/* ------------------------------------------------------------------------
 * DRM: a render node whose mmap maps KFD memory objects.
 */

static int vgpu_drm_open(struct drm_device *drm, struct drm_file *file)
{
	struct vgpu_drm *vdrm = container_of(drm, struct vgpu_drm, drm);
	struct vgpu_file *vf;
	int ret;

	vf = kzalloc_obj(*vf);
	if (!vf)
		return -ENOMEM;
	xa_init_flags(&vf->ctxs, XA_FLAGS_ALLOC1);
	/* Every DRM file gets its own GPU VM, as amdgpu_driver_open_kms does. */
	ret = vdrm->dev->ops->file_open(vdrm->dev->gpu, &vf->vm);
	if (ret) {
		kfree(vf);
		return ret;
	}
	file->driver_priv = vf;
	return 0;
}

/* The Rust state of an open DRM file of ours. */
static void *file_vm(struct drm_file *file)
{
	struct vgpu_file *vf = file->driver_priv;

	return vf ? vf->vm : NULL;
}

static struct vgpu_shim_dev *drm_file_vdev(struct drm_file *file)
{
	return container_of(file->minor->dev, struct vgpu_drm, drm)->dev;
}

/*
 * The devices of a VMA of our render node: its file holds a reference on
 * the DRM file, which pins the module, so the devices are not destroyed.
 */
static const struct file_operations vgpu_drm_fops;
static struct vgpu_shim_dev *gem_vdev(struct drm_gem_object *obj);

static struct vgpu_shim_dev *vma_vdev(struct vm_area_struct *vma)
{
	struct dma_buf *dmabuf;

	if (vma->vm_file->f_op == &vgpu_drm_fops)
		return drm_file_vdev(vma->vm_file->private_data);
	/*
	 * The only other file whose VMAs have our vm_ops: a dma-buf we
	 * exported (vgpu_dmabuf_mmap), which holds its GEM object.
	 */
	dmabuf = vma->vm_file->private_data;
	return gem_vdev(dmabuf->priv);
}

static void vgpu_drm_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct vgpu_file *vf = file->driver_priv;

	if (vf) {
		drm_file_vdev(file)->ops->file_close(vf->vm);
		/* Contexts are ids only: nothing to free but the entries. */
		xa_destroy(&vf->ctxs);
		kfree(vf);
	}
	file->driver_priv = NULL;
}

static void vgpu_vm_open(struct vm_area_struct *vma)
{
	/* A split, a fork or an mremap: the new VMA takes its own reference. */
	vma_vdev(vma)->ops->mem_get(vma->vm_private_data);
}

static void vgpu_vm_close(struct vm_area_struct *vma)
{
	vma_vdev(vma)->ops->mem_put(vma->vm_private_data);
}

static vm_fault_t vgpu_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct page *page;

	page = vma_vdev(vma)->ops->mem_page(vma->vm_private_data, vmf->pgoff);
	if (!page)
		return VM_FAULT_SIGBUS;
	return vmf_insert_pfn(vma, vmf->address, page_to_pfn(page));
}

/*
 * ptrace (PTRACE_PEEKDATA/POKEDATA) and /proc/PID/mem on a mapping of an
 * object, as TTM's ttm_bo_vm_access() with amdgpu_ttm_access_memory():
 * GUP refuses VM_PFNMAP, so access_remote_vm() asks us.  Also through the
 * PROT_NONE private mapping libhsakmt makes of VRAM the host may not
 * access (upstream reads such VRAM through MM_INDEX/MM_DATA).  Bytes
 * copied, or -EIO (outside the object, doorbells, MMIO remap: as upstream).
 */
static int vgpu_vm_access(struct vm_area_struct *vma, unsigned long addr, void *buf, int len,
			  int write)
{
	u64 offset = ((u64)vma->vm_pgoff << PAGE_SHIFT) + (addr - vma->vm_start);

	if (len < 1)
		return -EIO;
	return vma_vdev(vma)->ops->mem_access(vma->vm_private_data, offset, buf, len, write != 0);
}

static const struct vm_operations_struct vgpu_vm_ops = {
	.open = vgpu_vm_open,
	.close = vgpu_vm_close,
	.fault = vgpu_vm_fault,
	.access = vgpu_vm_access,
};

static int vgpu_mmap_mem(struct vgpu_shim_dev *vdev, struct vm_area_struct *vma, void *mem);
static struct vgpu_gem *gem_at(struct vgpu_shim_dev *vdev, unsigned long pgoff);
static int vgpu_gem_mmap(struct vgpu_shim_dev *vdev, struct vgpu_gem *gem,
			 struct vm_area_struct *vma);

static int vgpu_drm_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct drm_file *priv = filp->private_data;
	struct vgpu_shim_dev *vdev = drm_file_vdev(priv);
	struct vgpu_gem *gem;
	void *mem;
	int ret;

	/*
	 * A GEM object the file has a handle for (drm_gem_mmap(): -EACCES
	 * without one), then the KFD objects of the file's VM.
	 */
	gem = gem_at(vdev, vma->vm_pgoff);
	if (gem) {
		if (drm_vma_node_is_allowed(&gem->base.vma_node, priv))
			ret = vgpu_gem_mmap(vdev, gem, vma);
		else
			ret = -EACCES;
		drm_gem_object_put(&gem->base);
		return ret;
	}

	/* Looks the offset up in this file's VM; takes a reference. */
	ret = vdev->ops->mmap(file_vm(priv), vma->vm_pgoff, vma_pages(vma), &mem);
	if (ret)
		return ret;
	return vgpu_mmap_mem(vdev, vma, mem);
}

static int vgpu_ioctl_access(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_amdgpu_vgpu_access *args = data;

	if (!file_vm(file))
		return -EINVAL;
	return drm_file_vdev(file)->ops->gpu_access(file_vm(file), args->va, args->size,
						    args->buf, args->write != 0, &args->faults);
}

/* ------------------------------------------------------------------------
 * amdgpu's UAPI (amdgpu_kms.c, amdgpu_ctx.c of Linux 7.3), as far as
 * libdrm_amdgpu's amdgpu_device_initialize() and ROCm use it: INFO queries
 * and contexts.  No command submission, GEM or PRIME (DRM answers -EINVAL
 * for those ioctl numbers: they have no entry in the table).
 */

/* amdgpu_vm.h, amdgpu_gmc.h: the VA layout of a 48-bit (4-level) GPU VM. */
#define VGPU_VA_RESERVED_BOTTOM		(1ULL << 16)
#define VGPU_VA_RESERVED_TOP		((1ULL << 16) + (2ULL << 20) + (2ULL << 20))
#define VGPU_GMC_HOLE_START		0x0000800000000000ULL
#define VGPU_GMC_HOLE_END		0xffff800000000000ULL
#define VGPU_VM_SIZE			(1ULL << 48)
/* amdgpu's default fragment size (amdgpu_vm_fragment_size -1: 9, 2 MiB). */
#define VGPU_PTE_FRAGMENT_SIZE		(1U << 21)
/* The RLC reference clock, in amdgpu_asic_get_xclk()'s 10 kHz units. */
#define VGPU_XCLK_10KHZ			10000
/* gfx.config.max_hw_contexts on GFX 9/10/11; gfx.config.max_gprs. */
#define VGPU_MAX_HW_CONTEXTS		8
#define VGPU_MAX_GPRS			256

static int copy_out(void __user *out, u32 size, const void *val, size_t len)
{
	return copy_to_user(out, val, min_t(size_t, size, len)) ? -EFAULT : 0;
}

/* amdgpu_kms.c: amdgpu_info_ioctl(), case AMDGPU_INFO_DEV_INFO. */
static void fill_dev_info(const struct vgpu_shim_dev_info *info,
			  struct drm_amdgpu_info_device *d)
{
	const struct vgpu_shim_amdgpu_info *a = &info->amdgpu;
	u64 vm_size = VGPU_VM_SIZE - VGPU_VA_RESERVED_TOP;
	u32 ao_per_sh = a->apu ? min(2U, a->cu_per_sh) : a->cu_per_sh;
	u32 se, sh;

	d->device_id = info->device_id;
	d->chip_rev = a->chip_rev;
	d->external_rev = a->external_rev;
	d->pci_rev = a->pci_rev;
	d->family = a->family;
	d->num_shader_engines = a->num_shader_engines;
	d->num_shader_arrays_per_engine = a->sh_per_se;
	/* All clocks in kHz; one DPM level, so minimum = maximum. */
	d->gpu_counter_freq = VGPU_XCLK_10KHZ * 10;
	d->max_engine_clock = d->min_engine_clock = (u64)info->sclk_mhz * 1000;
	d->max_memory_clock = d->min_memory_clock = (u64)info->mclk_mhz * 1000;
	/* One render backend per shader engine (as gb_addr_config says). */
	d->enabled_rb_pipes_mask = (1U << a->num_shader_engines) - 1;
	d->num_rb_pipes = a->num_shader_engines;
	d->num_hw_gfx_contexts = VGPU_MAX_HW_CONTEXTS;
	/*
	 * No mid-command-buffer preemption, TMZ or gang submit: the render
	 * node takes no command submission.
	 */
	d->ids_flags = a->apu ? AMDGPU_IDS_FLAGS_FUSION : 0;
	d->virtual_address_offset = VGPU_VA_RESERVED_BOTTOM;
	d->virtual_address_max = min(vm_size, VGPU_GMC_HOLE_START);
	d->virtual_address_alignment = PAGE_SIZE;
	d->pte_fragment_size = VGPU_PTE_FRAGMENT_SIZE;
	d->gart_page_size = PAGE_SIZE;
	if (vm_size > VGPU_GMC_HOLE_START) {
		d->high_va_offset = VGPU_GMC_HOLE_END;
		d->high_va_max = VGPU_GMC_HOLE_END | vm_size;
	}
	d->ce_ram_size = a->ce_ram_size;
	/* gfx_v9_0_get_cu_info(): 8 bits of ao_cu_mask per SH, 16 per SE. */
	for (se = 0; se < a->num_shader_engines && se < 4; se++) {
		for (sh = 0; sh < a->sh_per_se && sh < 4; sh++) {
			u32 cus = (u32)GENMASK(a->cu_per_sh - 1, 0);
			u32 ao = (u32)GENMASK(ao_per_sh - 1, 0);

			d->cu_bitmap[se][sh] = cus;
			d->cu_ao_bitmap[se][sh] = ao;
			if (se < 2 && sh < 2)
				d->cu_ao_mask |= (ao & 0xff) << (se * 16 + sh * 8);
			d->cu_active_number += hweight32(cus);
		}
	}
	d->vram_type = a->vram_type;
	d->vram_bit_width = a->vram_bit_width;
	d->wave_front_size = a->wave_front_size;
	d->num_shader_visible_vgprs = VGPU_MAX_GPRS;
	d->num_cu_per_sh = a->cu_per_sh;
}

/* amdgpu_firmware_info(): the versions of the firmware the part loads. */
static int fill_fw_info(const struct vgpu_shim_amdgpu_info *a,
			const struct drm_amdgpu_query_fw *q, struct drm_amdgpu_info_firmware *fw)
{
	/* amdgpu: "We only support one instance of each IP block right now." */
	if (q->ip_instance != 0)
		return -EINVAL;
	fw->ver = 0;
	fw->feature = 0;
	switch (q->fw_type) {
	case AMDGPU_INFO_FW_GFX_MEC:
		/* MEC1 and MEC2 run one firmware on these parts. */
		if (q->index > 1)
			return -EINVAL;
		fw->ver = a->mec_fw_version;
		return 0;
	case AMDGPU_INFO_FW_SDMA:
		if (q->index >= a->num_sdma)
			return -EINVAL;
		fw->ver = a->sdma_fw_version;
		return 0;
	case AMDGPU_INFO_FW_TA:
		/* amdgpu_ucode.h: enum ta_fw_type TA_FW_TYPE_PSP_XGMI (2). */
		if (q->index != 2)
			return -EINVAL;
		return 0;
	/*
	 * Firmware the virtual GPU has no readout of (it runs none): version
	 * 0, as amdgpu reports for a block whose firmware is not loaded.
	 */
	case AMDGPU_INFO_FW_VCE:
	case AMDGPU_INFO_FW_UVD:
	case AMDGPU_INFO_FW_VCN:
	case AMDGPU_INFO_FW_GMC:
	case AMDGPU_INFO_FW_GFX_ME:
	case AMDGPU_INFO_FW_GFX_PFP:
	case AMDGPU_INFO_FW_GFX_CE:
	case AMDGPU_INFO_FW_GFX_RLC:
	case AMDGPU_INFO_FW_GFX_RLC_RESTORE_LIST_CNTL:
	case AMDGPU_INFO_FW_GFX_RLC_RESTORE_LIST_GPM_MEM:
	case AMDGPU_INFO_FW_GFX_RLC_RESTORE_LIST_SRM_MEM:
	case AMDGPU_INFO_FW_GFX_RLCP:
	case AMDGPU_INFO_FW_GFX_RLCV:
	case AMDGPU_INFO_FW_SMC:
	case AMDGPU_INFO_FW_SOS:
	case AMDGPU_INFO_FW_ASD:
	case AMDGPU_INFO_FW_DMCU:
	case AMDGPU_INFO_FW_DMCUB:
	case AMDGPU_INFO_FW_TOC:
	case AMDGPU_INFO_FW_CAP:
	case AMDGPU_INFO_FW_MES_KIQ:
	case AMDGPU_INFO_FW_MES:
	case AMDGPU_INFO_FW_IMU:
	case AMDGPU_INFO_FW_VPE:
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * amdgpu_hw_ip_info(): the part has a GFX block (gfx and compute) and SDMA;
 * no multimedia blocks.  No rings take submissions (available_rings 0).
 */
static int fill_hw_ip_info(const struct vgpu_shim_amdgpu_info *a,
			   const struct drm_amdgpu_info *req, struct drm_amdgpu_info_hw_ip *ip)
{
	if (req->query_hw_ip.ip_instance >= AMDGPU_HW_IP_INSTANCE_MAX_COUNT)
		return -EINVAL;
	switch (req->query_hw_ip.type) {
	case AMDGPU_HW_IP_GFX:
	case AMDGPU_HW_IP_COMPUTE:
		/* The gfx_v9_0 / v10_0 / v11_0 IP block: major.0. */
		ip->hw_ip_version_major = a->gc_ip >> 16;
		ip->hw_ip_version_minor = 0;
		ip->ip_discovery_version = a->gc_ip;
		ip->ib_start_alignment = 32;
		ip->ib_size_alignment = 32;
		return 0;
	case AMDGPU_HW_IP_DMA:
		/* sdma_v4_0 (also SDMA 4.4), sdma_v5_2, sdma_v6_0. */
		ip->hw_ip_version_major = a->sdma_ip >> 16;
		ip->hw_ip_version_minor = (a->sdma_ip >> 16) == 4 ? 0 : (a->sdma_ip >> 8) & 0xff;
		ip->ip_discovery_version = a->sdma_ip;
		ip->ib_start_alignment = 256;
		ip->ib_size_alignment = 4;
		return 0;
	case AMDGPU_HW_IP_UVD:
	case AMDGPU_HW_IP_VCE:
	case AMDGPU_HW_IP_UVD_ENC:
	case AMDGPU_HW_IP_VCN_DEC:
	case AMDGPU_HW_IP_VCN_ENC:
	case AMDGPU_HW_IP_VCN_JPEG:
	case AMDGPU_HW_IP_VPE:
		/* A known IP the part lacks: all zero, as amdgpu answers. */
		return 0;
	default:
		return -EINVAL;
	}
}

static int vgpu_ioctl_info(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vgpu_shim_dev *vdev = drm_file_vdev(file);
	const struct vgpu_shim_dev_info *info = &vdev->info;
	const struct vgpu_shim_amdgpu_info *a = &info->amdgpu;
	struct drm_amdgpu_info *req = data;
	void __user *out = u64_to_user_ptr(req->return_pointer);
	u32 size = req->return_size;
	u32 ui32 = 0;
	u64 ui64 = 0;
	int ret;

	if (!req->return_size || !req->return_pointer)
		return -EINVAL;

	switch (req->query) {
	case AMDGPU_INFO_ACCEL_WORKING:
		ui32 = 1;
		return copy_out(out, size, &ui32, sizeof(ui32));
	case AMDGPU_INFO_HW_IP_INFO: {
		struct drm_amdgpu_info_hw_ip ip = {};

		ret = fill_hw_ip_info(a, req, &ip);
		return ret ? ret : copy_out(out, size, &ip, sizeof(ip));
	}
	case AMDGPU_INFO_HW_IP_COUNT:
		switch (req->query_hw_ip.type) {
		case AMDGPU_HW_IP_GFX:
		case AMDGPU_HW_IP_COMPUTE:
			ui32 = 1;
			break;
		case AMDGPU_HW_IP_DMA:
			ui32 = a->num_sdma;
			break;
		default:
			/* No such block on the part (or no such type). */
			return -EINVAL;
		}
		return copy_out(out, size, &ui32, sizeof(ui32));
	case AMDGPU_INFO_TIMESTAMP:
		ui64 = vdev->ops->clock_counter(vdev->gpu);
		return copy_out(out, size, &ui64, sizeof(ui64));
	case AMDGPU_INFO_FW_VERSION: {
		struct drm_amdgpu_info_firmware fw;

		ret = fill_fw_info(a, &req->query_fw, &fw);
		return ret ? ret : copy_out(out, size, &fw, sizeof(fw));
	}
	case AMDGPU_INFO_NUM_BYTES_MOVED:
	case AMDGPU_INFO_NUM_EVICTIONS:
	case AMDGPU_INFO_NUM_VRAM_CPU_PAGE_FAULTS:
		/* Nothing moves or is evicted; no VRAM is CPU-invisible. */
		return copy_out(out, size, &ui64, sizeof(ui64));
	case AMDGPU_INFO_VRAM_USAGE:
	case AMDGPU_INFO_VIS_VRAM_USAGE:
		/* All VRAM is CPU-visible. */
		ui64 = vdev->ops->vram_used(vdev->gpu);
		return copy_out(out, size, &ui64, sizeof(ui64));
	case AMDGPU_INFO_GTT_USAGE:
		ui64 = vdev->ops->gtt_used(vdev->gpu);
		return copy_out(out, size, &ui64, sizeof(ui64));
	case AMDGPU_INFO_VRAM_GTT: {
		struct drm_amdgpu_info_vram_gtt vg = {};

		/* Nothing pinned; amdgpu reserves AMDGPU_VM_RESERVED_VRAM for itself only. */
		vg.vram_size = info->vram_total;
		vg.vram_cpu_accessible_size = info->vram_total;
		vg.gtt_size = a->gtt_size;
		return copy_out(out, size, &vg, sizeof(vg));
	}
	case AMDGPU_INFO_MEMORY: {
		struct drm_amdgpu_memory_info mem = {};
		u64 vram_used = vdev->ops->vram_used(vdev->gpu);

		mem.vram.total_heap_size = info->vram_total;
		mem.vram.usable_heap_size = info->vram_total;
		mem.vram.heap_usage = vram_used;
		mem.vram.max_allocation = mem.vram.usable_heap_size * 3 / 4;
		mem.cpu_accessible_vram = mem.vram;
		mem.gtt.total_heap_size = a->gtt_size;
		mem.gtt.usable_heap_size = a->gtt_size;
		mem.gtt.heap_usage = vdev->ops->gtt_used(vdev->gpu);
		mem.gtt.max_allocation = mem.gtt.usable_heap_size * 3 / 4;
		return copy_out(out, size, &mem, sizeof(mem));
	}
	case AMDGPU_INFO_READ_MMR_REG: {
		u32 se = (req->read_mmr_reg.instance >> AMDGPU_INFO_MMR_SE_INDEX_SHIFT) &
			 AMDGPU_INFO_MMR_SE_INDEX_MASK;
		u32 sh = (req->read_mmr_reg.instance >> AMDGPU_INFO_MMR_SH_INDEX_SHIFT) &
			 AMDGPU_INFO_MMR_SH_INDEX_MASK;

		/* amdgpu_gfx.h: AMDGPU_GFX_MAX_SE 4, AMDGPU_GFX_MAX_SH_PER_SE 2. */
		if ((se != AMDGPU_INFO_MMR_SE_INDEX_MASK && se >= 4) ||
		    (sh != AMDGPU_INFO_MMR_SH_INDEX_MASK && sh >= 2) ||
		    req->read_mmr_reg.count > 128)
			return -EINVAL;
		/*
		 * The only register of the virtual part's allow list (amdgpu's
		 * soc15/nv/soc21 *_allowed_read_registers, the value
		 * gfx.config.gb_addr_config): GB_ADDR_CONFIG, dword 0x263e on
		 * GC 9.4.2 (base 0x2000 + 0x63e) and GC 10.3/11 (0x1260 + 0x13de).
		 * Any other offset is "unallowed": -EFAULT, as amdgpu.
		 */
		if (req->read_mmr_reg.count == 0)
			return 0;
		if (req->read_mmr_reg.dword_offset != 0x263e || req->read_mmr_reg.count != 1)
			return -EFAULT;
		return copy_out(out, size, &a->gb_addr_config, sizeof(u32));
	}
	case AMDGPU_INFO_DEV_INFO: {
		struct drm_amdgpu_info_device *d;

		d = kzalloc_obj(*d);
		if (!d)
			return -ENOMEM;
		fill_dev_info(info, d);
		ret = copy_out(out, size, d, sizeof(*d));
		kfree(d);
		return ret;
	}
	case AMDGPU_INFO_VRAM_LOST_COUNTER:
		/* VRAM is never lost: the virtual GPU's resets keep it. */
		return copy_out(out, size, &ui32, sizeof(ui32));
	default:
		/* Display, video, sensors, VBIOS, RAS, ...: not on this part. */
		return -EINVAL;
	}
}

/* amdgpu_ctx.c: amdgpu_ctx_priority_is_valid(). */
static bool ctx_priority_is_valid(s32 prio)
{
	switch (prio) {
	case AMDGPU_CTX_PRIORITY_VERY_LOW:
	case AMDGPU_CTX_PRIORITY_LOW:
	case AMDGPU_CTX_PRIORITY_NORMAL:
	case AMDGPU_CTX_PRIORITY_HIGH:
	case AMDGPU_CTX_PRIORITY_VERY_HIGH:
		return true;
	default:
		return false;
	}
}

/*
 * amdgpu_ctx_ioctl(): a context is only an id here (no submission): alloc,
 * free and the state queries, with amdgpu's checks and errnos.
 */
static int vgpu_ioctl_ctx(struct drm_device *drm, void *data, struct drm_file *file)
{
	union drm_amdgpu_ctx *args = data;
	struct vgpu_file *vf = file->driver_priv;
	u32 id = args->in.ctx_id;
	s32 prio = args->in.priority;
	int ret;

	if (!vf)
		return -EINVAL;
	/* Garbage priorities mean NORMAL, for backwards compatibility. */
	if (!ctx_priority_is_valid(prio))
		prio = AMDGPU_CTX_PRIORITY_NORMAL;

	switch (args->in.op) {
	case AMDGPU_CTX_OP_ALLOC_CTX:
		if (args->in.flags)
			return -EINVAL;
		/* amdgpu_ctx_priority_permit() */
		if (prio > AMDGPU_CTX_PRIORITY_NORMAL && !capable(CAP_SYS_NICE) &&
		    !drm_is_current_master(file))
			return -EACCES;
		/* Any non-NULL entry; the id is what matters. */
		ret = xa_alloc(&vf->ctxs, &id, xa_mk_value(0), xa_limit_32b, GFP_KERNEL);
		if (ret)
			return ret;
		memset(&args->out, 0, sizeof(args->out));
		args->out.alloc.ctx_id = id;
		return 0;
	case AMDGPU_CTX_OP_FREE_CTX:
		if (args->in.flags)
			return -EINVAL;
		return xa_erase(&vf->ctxs, id) ? 0 : -EINVAL;
	case AMDGPU_CTX_OP_QUERY_STATE:
	case AMDGPU_CTX_OP_QUERY_STATE2:
		if (args->in.flags)
			return -EINVAL;
		if (!xa_load(&vf->ctxs, id))
			return -EINVAL;
		/* No submission, so no hang, reset or lost VRAM to report. */
		memset(&args->out, 0, sizeof(args->out));
		return 0;
	default:
		/* Stable-pstate control: the virtual GPU has one clock level. */
		return -EINVAL;
	}
}

/* ------------------------------------------------------------------------
 * GEM objects and PRIME (amdgpu_gem.c, amdgpu_dma_buf.c of Linux 7.3).
 *
 * A GEM object holds one reference on a Rust memory object made for it
 * (ops->gem_create: VRAM or GTT pages, in no VM) and is refcounted by DRM:
 * its handles, the dma-bufs exported from it and DRM core's lookups.  CPU
 * mappings (render node or dma-buf) hold their own reference on the memory
 * object, as rkfd's imports (IMPORT_DMABUF, vgpu_shim_dmabuf_gem()) do, so
 * closing handles, dma-buf fds, mappings and KFD objects in any order
 * frees the memory exactly when the last goes.  The mmap offset of a GEM
 * object is its memory object's (one offset space with the KFD objects).
 * No GEM_METADATA, GEM_VA, GEM_OP, GEM_WAIT_IDLE, USERPTR: DRM's -EINVAL
 * for ioctls without a handler.
 */

static struct vgpu_gem *to_vgpu_gem(struct drm_gem_object *obj)
{
	return container_of(obj, struct vgpu_gem, base);
}

static struct vgpu_shim_dev *gem_vdev(struct drm_gem_object *obj)
{
	return container_of(obj->dev, struct vgpu_drm, drm)->dev;
}

static void vgpu_gem_free(struct drm_gem_object *obj)
{
	struct vgpu_gem *gem = to_vgpu_gem(obj);
	struct vgpu_shim_dev *vdev = gem_vdev(obj);

	xa_erase(&vdev->gems, gem->mmap_offset >> PAGE_SHIFT);
	vdev->ops->mem_put(gem->mem);
	drm_gem_object_release(obj);
	kfree(gem);
}

static struct dma_buf *vgpu_gem_prime_export(struct drm_gem_object *obj, int flags);

static const struct drm_gem_object_funcs vgpu_gem_funcs = {
	.free = vgpu_gem_free,
	.export = vgpu_gem_prime_export,
};

/* Maps memory object @mem (the caller's reference) into @vma. */
static int vgpu_mmap_mem(struct vgpu_shim_dev *vdev, struct vm_area_struct *vma, void *mem)
{
	/*
	 * As amdgpu_gem_object_mmap: libhsakmt maps VRAM that the host cannot
	 * access PROT_NONE + MAP_PRIVATE.  Clearing VM_MAYWRITE keeps such a
	 * mapping from ever becoming writable and makes it a non-COW mapping.
	 * Any other private mapping is refused, as TTM does.
	 */
	if (vma_is_cow_mapping(vma) && !(vma->vm_flags & VM_ACCESS_FLAGS))
		vm_flags_clear(vma, VM_MAYWRITE);
	if (vma_is_cow_mapping(vma)) {
		vdev->ops->mem_put(mem);
		return -EINVAL;
	}
	vma->vm_private_data = mem;
	vma->vm_ops = &vgpu_vm_ops;
	/* Pages are inserted by PFN at fault time, as TTM does. */
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	return 0;
}

/*
 * The GEM object whose render-node mmap offset is page @pgoff, with a
 * reference taken, or NULL.
 */
static struct vgpu_gem *gem_at(struct vgpu_shim_dev *vdev, unsigned long pgoff)
{
	struct vgpu_gem *gem;

	xa_lock(&vdev->gems);
	gem = xa_load(&vdev->gems, pgoff);
	if (gem && !kref_get_unless_zero(&gem->base.refcount))
		gem = NULL;
	xa_unlock(&vdev->gems);
	return gem;
}

/* A GEM object's pages for a CPU mapping of @vma (its first page offset). */
static int vgpu_gem_mmap(struct vgpu_shim_dev *vdev, struct vgpu_gem *gem,
			 struct vm_area_struct *vma)
{
	int ret;

	/* amdgpu_gem_object_mmap: not for objects the CPU may not access. */
	if (gem->flags & AMDGPU_GEM_CREATE_NO_CPU_ACCESS)
		return -EPERM;
	ret = vdev->ops->mem_cpu_map(gem->mem, vma_pages(vma));
	if (ret)
		return ret;
	vdev->ops->mem_get(gem->mem);
	return vgpu_mmap_mem(vdev, vma, gem->mem);
}

/* dma-buf mmap (drm_gem_dmabuf_mmap's place): offsets are in the buffer. */
static int vgpu_dmabuf_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct vgpu_gem *gem = to_vgpu_gem(dmabuf->priv);

	/* dma_buf_mmap_internal() checked the range against the buffer. */
	vma->vm_pgoff += gem->mmap_offset >> PAGE_SHIFT;
	return vgpu_gem_mmap(gem_vdev(&gem->base), gem, vma);
}

/*
 * amdgpu_dmabuf_ops without attachments to other devices: no scatterlist
 * (drm_gem_map_attach() refuses them, -ENOSYS), no kernel mapping.
 */
static const struct dma_buf_ops vgpu_dmabuf_ops = {
	.attach = drm_gem_map_attach,
	.detach = drm_gem_map_detach,
	.map_dma_buf = drm_gem_map_dma_buf,
	.unmap_dma_buf = drm_gem_unmap_dma_buf,
	.release = drm_gem_dmabuf_release,
	.mmap = vgpu_dmabuf_mmap,
	.vmap = drm_gem_dmabuf_vmap,
	.vunmap = drm_gem_dmabuf_vunmap,
};

/* amdgpu_gem_prime_export (no user pointers here). */
static struct dma_buf *vgpu_gem_prime_export(struct drm_gem_object *obj, int flags)
{
	struct dma_buf_export_info exp_info = {
		.exp_name = KBUILD_MODNAME,
		.owner = THIS_MODULE,
		.ops = &vgpu_dmabuf_ops,
		.size = obj->size,
		.flags = flags,
		.priv = obj,
		.resv = obj->resv,
	};

	if (to_vgpu_gem(obj)->flags & AMDGPU_GEM_CREATE_VM_ALWAYS_VALID)
		return ERR_PTR(-EPERM);
	return drm_gem_dmabuf_export(obj->dev, &exp_info);
}

/*
 * PRIME import into a render node (DRM_IOCTL_PRIME_FD_TO_HANDLE): our own
 * objects of this device, as amdgpu_gem_prime_import; anything else
 * (another device's, another driver's) -EINVAL, DRM's answer for a driver
 * without gem_prime_import_sg_table (amdgpu attaches those).
 */
static struct drm_gem_object *vgpu_gem_prime_import(struct drm_device *drm,
						    struct dma_buf *dmabuf)
{
	struct drm_gem_object *obj = dmabuf->priv;

	if (dmabuf->ops != &vgpu_dmabuf_ops || obj->dev != drm)
		return ERR_PTR(-EINVAL);
	drm_gem_object_get(obj);
	return obj;
}

int vgpu_shim_dmabuf_gem(int fd, void **mem, bool *vram, bool *cpu_access)
{
	struct dma_buf *dmabuf;
	struct vgpu_gem *gem;

	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (dmabuf->ops != &vgpu_dmabuf_ops) {
		/* amdgpu_amdkfd_get_dmabuf_info: "Can't handle non-graphics buffers" */
		dma_buf_put(dmabuf);
		return -EINVAL;
	}
	/* The dma-buf holds a reference on the object while we look. */
	gem = to_vgpu_gem(dmabuf->priv);
	gem_vdev(&gem->base)->ops->mem_get(gem->mem);
	*mem = gem->mem;
	*vram = gem->domains & AMDGPU_GEM_DOMAIN_VRAM;
	*cpu_access = gem->flags & AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED;
	dma_buf_put(dmabuf);
	return 0;
}

/* amdgpu_gem_are_domains_valid(). */
static bool gem_domains_are_valid(u32 domains)
{
	u32 normal = AMDGPU_GEM_DOMAIN_CPU | AMDGPU_GEM_DOMAIN_GTT | AMDGPU_GEM_DOMAIN_VRAM;
	u32 special = AMDGPU_GEM_DOMAIN_MASK & ~normal;

	if (!(domains & special))
		return true;
	if (domains & normal)
		return false;
	return !((domains & special) & ((domains & special) - 1));
}

/* amdgpu_gem.h: the flags user space may pass. */
#define VGPU_GEM_CREATE_SETTABLE_MASK	(AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED | \
	AMDGPU_GEM_CREATE_NO_CPU_ACCESS | \
	AMDGPU_GEM_CREATE_CPU_GTT_USWC | \
	AMDGPU_GEM_CREATE_VRAM_CLEARED | \
	AMDGPU_GEM_CREATE_VM_ALWAYS_VALID | \
	AMDGPU_GEM_CREATE_EXPLICIT_SYNC | \
	AMDGPU_GEM_CREATE_VRAM_WIPE_ON_RELEASE | \
	AMDGPU_GEM_CREATE_ENCRYPTED | \
	AMDGPU_GEM_CREATE_GFX12_DCC | \
	AMDGPU_GEM_CREATE_DISCARDABLE | \
	AMDGPU_GEM_CREATE_COHERENT | \
	AMDGPU_GEM_CREATE_UNCACHED | \
	AMDGPU_GEM_CREATE_EXT_COHERENT)

/*
 * One placement try of amdgpu_gem_object_create(): amdgpu_bo_create()'s
 * size check (amdgpu_bo_validate_size: under the size of GTT if GTT is
 * among @domains, else of VRAM; -ENOMEM), then the memory.
 */
static int gem_object_create(struct vgpu_shim_dev *vdev, u64 size, u32 domains,
			     void **mem, u64 *offset)
{
	bool gtt = domains & AMDGPU_GEM_DOMAIN_GTT;
	u64 limit = gtt ? vdev->info.amdgpu.gtt_size : vdev->info.vram_total;
	int ret = -ENOMEM;

	if (size >= limit)
		return -ENOMEM;
	/* TTM's placement order: VRAM first when both are allowed. */
	if (domains & AMDGPU_GEM_DOMAIN_VRAM)
		ret = vdev->ops->gem_create(vdev->gpu, size, true, mem, offset);
	if (ret && gtt)
		ret = vdev->ops->gem_create(vdev->gpu, size, false, mem, offset);
	return ret;
}

static int vgpu_ioctl_gem_create(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct vgpu_shim_dev *vdev = container_of(drm, struct vgpu_drm, drm)->dev;
	union drm_amdgpu_gem_create *args = data;
	u64 flags = args->in.domain_flags;
	u64 size = args->in.bo_size;
	u32 domains, initial_domain;
	struct vgpu_gem *gem;
	u32 handle;
	void *mem;
	u64 offset;
	int ret;

	/* amdgpu_gem_create_ioctl()'s checks, in its order. */
	if (flags & ~VGPU_GEM_CREATE_SETTABLE_MASK)
		return -EINVAL;
	if (args->in.domains & ~AMDGPU_GEM_DOMAIN_MASK)
		return -EINVAL;
	if (!gem_domains_are_valid(args->in.domains))
		return -EINVAL;
	/* No TMZ (amdgpu_is_tmz() false), without amdgpu's DRM_NOTE_ONCE. */
	if (flags & AMDGPU_GEM_CREATE_ENCRYPTED)
		return -EINVAL;
	flags |= AMDGPU_GEM_CREATE_VRAM_CLEARED;
	domains = args->in.domains;
	if (domains & (AMDGPU_GEM_DOMAIN_GDS | AMDGPU_GEM_DOMAIN_GWS | AMDGPU_GEM_DOMAIN_OA)) {
		/* amdgpu DRM_ERRORs here; user input must not flood dmesg. */
		if (flags & AMDGPU_GEM_CREATE_VM_ALWAYS_VALID)
			return -EINVAL;
		flags |= AMDGPU_GEM_CREATE_NO_CPU_ACCESS;
	}
	/*
	 * Only VRAM and GTT objects exist here: the CPU domain alone (system
	 * memory the GPU does not map), the on-chip GDS/GWS/OA and no domain
	 * at all are refused.  amdgpu places them; a size of 0 fails in its
	 * TTM allocator.
	 */
	if (!(domains & (AMDGPU_GEM_DOMAIN_VRAM | AMDGPU_GEM_DOMAIN_GTT)) || !size)
		return -EINVAL;
	/* amdgpu_bo_create(): the size in whole pages. */
	if (size > U64_MAX - PAGE_SIZE)
		return -ENOMEM;
	size = PAGE_ALIGN(size);

	initial_domain = domains & (AMDGPU_GEM_DOMAIN_VRAM | AMDGPU_GEM_DOMAIN_GTT);
	ret = gem_object_create(vdev, size, initial_domain, &mem, &offset);
	/* VRAM only and none left: amdgpu retries with GTT allowed too. */
	if (ret && initial_domain == AMDGPU_GEM_DOMAIN_VRAM)
		ret = gem_object_create(vdev, size, initial_domain | AMDGPU_GEM_DOMAIN_GTT,
					&mem, &offset);
	if (ret)
		return ret;

	gem = kzalloc_obj(*gem);
	if (!gem) {
		vdev->ops->mem_put(mem);
		return -ENOMEM;
	}
	gem->mem = mem;
	gem->mmap_offset = offset;
	gem->domains = domains;
	gem->flags = flags;
	gem->base.funcs = &vgpu_gem_funcs;
	drm_gem_private_object_init(drm, &gem->base, size);
	ret = xa_insert(&vdev->gems, offset >> PAGE_SHIFT, gem, GFP_KERNEL);
	if (ret) {
		/* Not in the xarray: free by hand (.free would erase another's entry). */
		drm_gem_object_release(&gem->base);
		vdev->ops->mem_put(mem);
		kfree(gem);
		return ret == -EBUSY ? -EINVAL : ret;
	}

	ret = drm_gem_handle_create(file, &gem->base, &handle);
	/* The handle holds the object now. */
	drm_gem_object_put(&gem->base);
	if (ret)
		return ret;
	memset(args, 0, sizeof(*args));
	args->out.handle = handle;
	return 0;
}

/* amdgpu_gem_mmap_ioctl() / amdgpu_mode_dumb_mmap(). */
static int vgpu_ioctl_gem_mmap(struct drm_device *drm, void *data, struct drm_file *file)
{
	union drm_amdgpu_gem_mmap *args = data;
	u32 handle = args->in.handle;
	struct drm_gem_object *obj;
	int ret = 0;

	memset(args, 0, sizeof(*args));
	obj = drm_gem_object_lookup(file, handle);
	if (!obj)
		return -ENOENT;
	if (to_vgpu_gem(obj)->flags & AMDGPU_GEM_CREATE_NO_CPU_ACCESS)
		ret = -EPERM;
	else
		args->out.addr_ptr = to_vgpu_gem(obj)->mmap_offset;
	drm_gem_object_put(obj);
	return ret;
}

static const struct drm_ioctl_desc vgpu_ioctls[] = {
	DRM_IOCTL_DEF_DRV(AMDGPU_GEM_CREATE, vgpu_ioctl_gem_create, DRM_AUTH | DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_GEM_MMAP, vgpu_ioctl_gem_mmap, DRM_AUTH | DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_CTX, vgpu_ioctl_ctx, DRM_AUTH | DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_INFO, vgpu_ioctl_info, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(AMDGPU_VGPU_ACCESS, vgpu_ioctl_access, DRM_RENDER_ALLOW),
};

static const struct file_operations vgpu_drm_fops = {
	.owner = THIS_MODULE,
	.open = drm_open,
	.release = drm_release,
	.unlocked_ioctl = drm_ioctl,
	.compat_ioctl = drm_compat_ioctl,
	.poll = drm_poll,
	.read = drm_read,
	.llseek = noop_llseek,
	.mmap = vgpu_drm_mmap,
	.fop_flags = FOP_UNSIGNED_OFFSET,
};

static const struct drm_driver vgpu_drm_driver = {
	.driver_features = DRIVER_GEM | DRIVER_RENDER,
	.open = vgpu_drm_open,
	.postclose = vgpu_drm_postclose,
	.fops = &vgpu_drm_fops,
	.gem_prime_import = vgpu_gem_prime_import,
	.ioctls = vgpu_ioctls,
	.num_ioctls = ARRAY_SIZE(vgpu_ioctls),
	/*
	 * Not "amdgpu": it answers amdgpu's INFO and CTX ioctls but takes no
	 * command submission, so graphics drivers must not pick it up.  The
	 * version is Linux 7.3's amdgpu's (KMS_DRIVER_MAJOR/MINOR/PATCHLEVEL):
	 * libdrm_amdgpu's amdgpu_device_initialize() wants major 3, and the
	 * ioctls answered are 3.64's.
	 */
	.name = "amdgpu_vgpu",
	.desc = "Virtual AMD GPU for rkfd",
	.major = 3,
	.minor = 64,
	.patchlevel = 0,
};

int vgpu_shim_file_vm(const struct vgpu_shim_dev *dev, struct file *file, void **vm)
{
	struct drm_file *fpriv;

	/* drm_stub_open() installs the driver's fops on every file it opens. */
	if (!file || file->f_op != &vgpu_drm_fops)
		return -EINVAL;
	fpriv = file->private_data;
	if (fpriv->minor->dev != &dev->drm->drm ||
	    fpriv->minor->type != DRM_MINOR_RENDER || !file_vm(fpriv))
		return -EINVAL;
	*vm = file_vm(fpriv);
	return 0;
}

/* ------------------------------------------------------------------------
 * sysfs of the parent device, in amdgpu's formats (amdgpu_pm.c, amdgpu_device.c).
 */

static struct vgpu_shim_dev *to_vdev(struct device *dev)
{
	return dev_get_drvdata(dev);
}

static ssize_t vendor_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0x%04x\n", to_vdev(dev)->info.vendor_id);
}
static DEVICE_ATTR_RO(vendor);

static ssize_t device_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0x%04x\n", to_vdev(dev)->info.device_id);
}
static DEVICE_ATTR_RO(device);

static ssize_t vbios_version_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", to_vdev(dev)->info.vbios_version);
}
static DEVICE_ATTR_RO(vbios_version);

static ssize_t unique_id_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%016llx\n", to_vdev(dev)->info.unique_id);
}
static DEVICE_ATTR_RO(unique_id);

static ssize_t mem_info_vram_total_show(struct device *dev, struct device_attribute *attr,
					char *buf)
{
	return sysfs_emit(buf, "%llu\n", to_vdev(dev)->info.vram_total);
}
static DEVICE_ATTR_RO(mem_info_vram_total);

static ssize_t mem_info_vram_used_show(struct device *dev, struct device_attribute *attr,
				       char *buf)
{
	struct vgpu_shim_dev *vdev = to_vdev(dev);

	return sysfs_emit(buf, "%llu\n", vdev->ops->vram_used(vdev->gpu));
}
static DEVICE_ATTR_RO(mem_info_vram_used);

static ssize_t gpu_busy_percent_show(struct device *dev, struct device_attribute *attr,
				     char *buf)
{
	/* Nothing executes on the virtual GPU yet. */
	return sysfs_emit(buf, "0\n");
}
static DEVICE_ATTR_RO(gpu_busy_percent);

static ssize_t pp_dpm_sclk_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	/* One DPM level, always current: the virtual GPU has a fixed clock. */
	return sysfs_emit(buf, "0: %uMhz *\n", to_vdev(dev)->info.sclk_mhz);
}
static DEVICE_ATTR_RO(pp_dpm_sclk);

static ssize_t pp_dpm_mclk_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0: %uMhz *\n", to_vdev(dev)->info.mclk_mhz);
}
static DEVICE_ATTR_RO(pp_dpm_mclk);

static ssize_t power_dpm_force_performance_level_show(struct device *dev,
						      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "auto\n");
}
static DEVICE_ATTR_RO(power_dpm_force_performance_level);

static struct attribute *vgpu_dev_attrs[] = {
	&dev_attr_vendor.attr,
	&dev_attr_device.attr,
	&dev_attr_vbios_version.attr,
	&dev_attr_unique_id.attr,
	&dev_attr_mem_info_vram_total.attr,
	&dev_attr_mem_info_vram_used.attr,
	&dev_attr_gpu_busy_percent.attr,
	&dev_attr_pp_dpm_sclk.attr,
	&dev_attr_pp_dpm_mclk.attr,
	&dev_attr_power_dpm_force_performance_level.attr,
	NULL,
};
ATTRIBUTE_GROUPS(vgpu_dev);

/* ------------------------------------------------------------------------
 * hwmon: constant virtual sensor readings, named as amdgpu names them.
 */

static int vgpu_hwmon_read(struct device *dev, enum hwmon_sensor_types type, u32 attr,
			   int channel, long *val)
{
	const struct vgpu_shim_dev_info *info = &((struct vgpu_shim_dev *)dev_get_drvdata(dev))->info;

	switch (type) {
	case hwmon_in:
		*val = info->vddgfx_mv;
		return 0;
	case hwmon_temp:
		*val = info->temp_mdeg;
		return 0;
	case hwmon_power:
		*val = attr == hwmon_power_cap ? info->power_cap_uw : info->power_avg_uw;
		return 0;
	case hwmon_pwm:
		/* No fan is spinning. */
		*val = 0;
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static int vgpu_hwmon_read_string(struct device *dev, enum hwmon_sensor_types type, u32 attr,
				  int channel, const char **str)
{
	switch (type) {
	case hwmon_in:
		*str = "vddgfx";
		return 0;
	case hwmon_temp:
		*str = "edge";
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static const struct hwmon_ops vgpu_hwmon_ops = {
	.visible = 0444,
	.read = vgpu_hwmon_read,
	.read_string = vgpu_hwmon_read_string,
};

static const struct hwmon_channel_info *const vgpu_hwmon_info[] = {
	HWMON_CHANNEL_INFO(in, HWMON_I_INPUT | HWMON_I_LABEL),
	HWMON_CHANNEL_INFO(temp, HWMON_T_INPUT | HWMON_T_LABEL),
	HWMON_CHANNEL_INFO(power, HWMON_P_AVERAGE | HWMON_P_CAP),
	HWMON_CHANNEL_INFO(pwm, HWMON_PWM_INPUT),
	NULL,
};

static const struct hwmon_chip_info vgpu_hwmon_chip = {
	.ops = &vgpu_hwmon_ops,
	.info = vgpu_hwmon_info,
};

/* amdgpu's own attribute, not a standard hwmon one. */
static ssize_t pwm1_max_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "255\n");
}
static DEVICE_ATTR_RO(pwm1_max);

/*
 * vgpu_throttle (write-only, root): raises a thermal throttling interrupt
 * with the written throttler bitmask (decimal or 0x-hex u64), as the SMU
 * firmware's would on a real GPU; rkfd then sends an SMI THERMAL_THROTTLE
 * event.  A virtual GPU never throttles by itself.
 */
static ssize_t vgpu_throttle_store(struct device *dev, struct device_attribute *attr,
				   const char *buf, size_t count)
{
	struct vgpu_shim_dev *vdev = dev_get_drvdata(dev);
	u64 mask;
	int ret;

	ret = kstrtou64(buf, 0, &mask);
	if (ret)
		return ret;
	vdev->ops->throttle(vdev->gpu, mask);
	return count;
}
static DEVICE_ATTR_WO(vgpu_throttle);

/*
 * vgpu_power (write: root): writing suspend, resume, reset, ... does what amdgpu
 * does to the KFD at a suspend, a resume or a GPU reset (the calls into
 * rkfd, in amdgpu's order, and for reset the engines' reset between
 * kgd2kfd_pre_reset and kgd2kfd_post_reset; evict_vram and suspend_evict
 * the VRAM eviction of a suspend, kgd2kfd_svm_evict_vram); the write fails
 * with rkfd's errno.  Reading shows rkfd's kgd2kfd_compute_active.
 */
static ssize_t vgpu_power_store(struct device *dev, struct device_attribute *attr,
				const char *buf, size_t count)
{
	struct vgpu_shim_dev *vdev = dev_get_drvdata(dev);
	int ret;

	ret = vdev->ops->power(vdev->gpu, buf, strcspn(buf, "\n"));
	return ret ? ret : count;
}

static ssize_t vgpu_power_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct vgpu_shim_dev *vdev = dev_get_drvdata(dev);
	int active = vdev->ops->compute_active(vdev->gpu);

	if (active < 0)
		return active;
	return sysfs_emit(buf, "compute_active %d\n", active);
}
static DEVICE_ATTR_RW(vgpu_power);

static struct attribute *vgpu_hwmon_attrs[] = {
	&dev_attr_pwm1_max.attr,
	&dev_attr_vgpu_throttle.attr,
	&dev_attr_vgpu_power.attr,
	NULL,
};
ATTRIBUTE_GROUPS(vgpu_hwmon);

/* ------------------------------------------------------------------------
 * Creation and teardown.
 */

int vgpu_shim_dev_create(const struct vgpu_shim_dev_info *info, void *gpu,
			 const struct vgpu_shim_ops *ops, struct vgpu_shim_dev **out)
{
	struct vgpu_shim_dev *dev;
	struct vgpu_drm *vdrm;
	int ret;

	if (!ops || !ops->file_open || !ops->file_close || !ops->mmap || !ops->mem_page ||
	    !ops->mem_access || !ops->mem_get || !ops->mem_put || !ops->vram_used ||
	    !ops->gtt_used || !ops->clock_counter || !ops->throttle || !ops->power ||
	    !ops->compute_active || !ops->gpu_access ||
	    !ops->gem_create || !ops->mem_cpu_map)
		return -EINVAL;
	dev = kzalloc_obj(*dev);
	if (!dev)
		return -ENOMEM;
	dev->info = *info;
	dev->info.name[VGPU_SHIM_NAME_LEN - 1] = '\0';
	dev->info.vbios_version[VGPU_SHIM_VBIOS_LEN - 1] = '\0';
	dev->gpu = gpu;
	dev->ops = ops;
	xa_init(&dev->gems);

	dev->faux = faux_device_create(dev->info.name, NULL, NULL);
	if (!dev->faux) {
		ret = -ENODEV;
		goto err_free;
	}
	/* Before the attributes appear: their show() functions need it. */
	faux_device_set_drvdata(dev->faux, dev);
	ret = device_add_groups(&dev->faux->dev, vgpu_dev_groups);
	if (ret)
		goto err_faux;

	if (!devres_open_group(&dev->faux->dev, NULL, GFP_KERNEL)) {
		ret = -ENOMEM;
		goto err_groups;
	}
	vdrm = devm_drm_dev_alloc(&dev->faux->dev, &vgpu_drm_driver, struct vgpu_drm, drm);
	if (IS_ERR(vdrm)) {
		ret = PTR_ERR(vdrm);
		goto err_devres;
	}
	vdrm->dev = dev;
	dev->drm = vdrm;
	ret = drm_dev_register(&vdrm->drm, 0);
	if (ret)
		goto err_devres;

	dev->hwmon = hwmon_device_register_with_info(&dev->faux->dev, "amdgpu", dev,
						     &vgpu_hwmon_chip, vgpu_hwmon_groups);
	if (IS_ERR(dev->hwmon)) {
		ret = PTR_ERR(dev->hwmon);
		goto err_drm;
	}

	*out = dev;
	return 0;

err_drm:
	drm_dev_unregister(&vdrm->drm);
err_devres:
	devres_release_group(&dev->faux->dev, NULL);
err_groups:
	device_remove_groups(&dev->faux->dev, vgpu_dev_groups);
err_faux:
	faux_device_destroy(dev->faux);
err_free:
	kfree(dev);
	return ret;
}

void vgpu_shim_dev_destroy(struct vgpu_shim_dev *dev)
{
	hwmon_device_unregister(dev->hwmon);
	drm_dev_unregister(&dev->drm->drm);
	/* Drops the DRM device: no DRM file is open (they pin the module). */
	devres_release_group(&dev->faux->dev, NULL);
	/* Waits for sysfs readers, which may still call ops->vram_used(). */
	device_remove_groups(&dev->faux->dev, vgpu_dev_groups);
	faux_device_destroy(dev->faux);
	/* Empty: GEM objects pin the module through their DRM device's files or dma-bufs. */
	xa_destroy(&dev->gems);
	kfree(dev);
}

u32 vgpu_shim_dev_render_minor(const struct vgpu_shim_dev *dev)
{
	return dev->drm->drm.render->index;
}

u32 vgpu_shim_dev_primary_minor(const struct vgpu_shim_dev *dev)
{
	return dev->drm->drm.primary->index;
}

void vgpu_shim_dev_log(const struct vgpu_shim_dev *dev, const char *msg)
{
	/* dev_info() would say "faux_driver", the faux bus's driver. */
	pr_info("amdgpu %s: %s\n", dev->info.name, msg);
}

/* ------------------------------------------------------------------------
 * Memory helpers.
 */

void *vgpu_shim_vmap(struct page **pages, unsigned int count)
{
	return vmap(pages, count, VM_MAP, PAGE_KERNEL);
}

void vgpu_shim_vunmap(void *addr)
{
	vunmap(addr);
}

unsigned long vgpu_shim_page_pfn(struct page *page)
{
	return page_to_pfn(page);
}

/*
 * Maps @count pages, all of @vma, for /dev/kfd (doorbells, the MMIO remap
 * page).  Upstream maps doorbell BAR pages with io_remap_pfn_range() and
 * VM_IO | VM_DONTCOPY | VM_DONTEXPAND | VM_NORESERVE | VM_DONTDUMP |
 * VM_PFNMAP, uncached.  Ours are ordinary RAM pages: inserted as refcounted
 * pages (vm_insert_pages(), so VM_MIXEDMAP instead of VM_PFNMAP: a page
 * outlives its owner while user space maps it), write-back (an uncached
 * alias of the kernel's write-back direct map would be wrong on x86), with
 * the other flags as upstream.
 */
int vgpu_shim_mmap_pages(struct vm_area_struct *vma, struct page **pages, unsigned long count)
{
	unsigned long num = count;
	int ret;

	if (vma->vm_end - vma->vm_start != count << PAGE_SHIFT)
		return -EINVAL;
	vm_flags_set(vma, VM_IO | VM_DONTCOPY | VM_DONTEXPAND | VM_NORESERVE | VM_DONTDUMP);
	ret = vm_insert_pages(vma, vma->vm_start, pages, &num);
	if (!ret && num)
		ret = -ENOMEM;
	return ret;
}

/*
 * Doorbells that trap after idle, as fb_deferred_io traps framebuffer
 * writes.  User space writes its doorbells to plain pages, which raise
 * nothing; an engine worker about to sleep arms them
 * (vgpu_shim_db_watch_arm): it write-protects every user PTE of the pages
 * through the rmap of each address_space they were mmapped from
 * (mapping_wrprotect_range(): page_vma_mkclean_one() clears, flushes the
 * TLB of and re-installs each PTE read-only and clean), then reads the
 * doorbells once more before it sleeps.  The next write takes a write
 * fault in a VM_SHARED mapping with ->page_mkwrite, which wakes the
 * worker (@rung) and lets the write proceed (the PTE becomes writable
 * and stays so until the next arm): one fault per idle period, none
 * while the engine polls.
 *
 * Races: ->page_mkwrite locks the page and returns VM_FAULT_LOCKED, so
 * the page stays locked until the core has made the PTE writable and
 * dirty (fault_dirty_shared_page() unlocks it); arm write-protects a
 * page under the same lock.  So an arm either runs before the fault
 * locked the page (and the fault's @rung comes after the worker's
 * snapshot, taken before arming) or after the PTE became writable (and
 * re-protects it: the write either landed before the TLB flush, and the
 * worker's re-read sees it, or faults again).  @armed (bit per page,
 * changed under the page lock) lets an arm skip pages no fault unarmed
 * since; PTEs only become writable through ->page_mkwrite (which clears
 * the bit) or at mmap, which installs them read-only (the write-notify
 * protection mmap gives such a VMA afterwards anyway).
 *
 * Mappings: the pages are mapped only by vgpu_shim_db_watch_mmap() (the
 * /dev/kfd doorbell mmap, VM_DONTCOPY: a fork does not inherit it);
 * each distinct (address_space, pgoff) is recorded with a reference on
 * its inode (released with the watch), so several VMAs, split or moved
 * VMAs (mremap keeps vm_pgoff) and several mmaps are all found by the
 * rmap walk; PTEs of other processes' doorbells at the same pgoff are
 * other pages (the walk matches the PFN) and untouched.  An unmap
 * concurrent with an arm is serialized by the rmap's i_mmap_rwsem and
 * the page-table locks; a closed VMA drops its watch reference (and
 * module reference) in ->close; process exit is the same.  More distinct
 * mappings than VGPU_DB_MAX_MAPS: arming fails (-EBUSY) and the engine
 * keeps polling that VM's doorbells.
 *
 * Lock order: @lock (maps) -> page lock -> i_mmap_rwsem -> PTL; the
 * fault holds mmap_lock (or the VMA lock) -> page lock -> whatever @rung
 * takes (the engine's locks), never @lock.
 */
#define VGPU_DB_MAX_MAPS 4
#define VGPU_DB_MAX_PAGES 4

/*
 * How long an engine worker keeps polling its doorbells after its last
 * work before it arms their traps (vgpu_shim_doorbell_arm_ns()).  Arming
 * costs an rmap walk and a TLB flush (an IPI to the producer's CPU) and
 * the producer's next doorbell write a fault, so a queue idle for less
 * than this (bursty work: queue create/run/destroy rounds) never pays
 * them.  A load-time knob for measurements: 0 arms right after the spin.
 */
static unsigned int doorbell_arm_us = 5000;
module_param(doorbell_arm_us, uint, 0444);
MODULE_PARM_DESC(doorbell_arm_us,
		 "idle time in us before an engine worker traps its doorbells instead of polling them (default 5000)");

u64 vgpu_shim_doorbell_arm_ns(void)
{
	return (u64)doorbell_arm_us * NSEC_PER_USEC;
}

/*
 * Counters for the benchmark (read-only parameters): doorbell pages
 * write-protected by arming, and doorbell writes that trapped.
 */
static atomic_long_t vgpu_db_arms, vgpu_db_traps;

static int vgpu_db_count_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read((atomic_long_t *)kp->arg));
}

static int vgpu_db_count_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops vgpu_db_count_ops = {
	.set = vgpu_db_count_set,
	.get = vgpu_db_count_get,
};

module_param_cb(doorbell_arms, &vgpu_db_count_ops, &vgpu_db_arms, 0444);
MODULE_PARM_DESC(doorbell_arms, "doorbell pages write-protected by engine workers going idle (read-only)");
module_param_cb(doorbell_traps, &vgpu_db_count_ops, &vgpu_db_traps, 0444);
MODULE_PARM_DESC(doorbell_traps, "doorbell writes that trapped and woke the engines (read-only)");

struct vgpu_db_watch {
	refcount_t ref;
	void *target;
	void (*rung)(void *target, unsigned long watch, unsigned long offset);
	void (*release)(void *target);
	unsigned long nr_pages;
	struct page *pages[VGPU_DB_MAX_PAGES];
	/* Bit i: page i is write-protected everywhere since its last fault. */
	unsigned long armed;
	/* ktime_get_ns() of page i's last write fault. */
	u64 faulted[VGPU_DB_MAX_PAGES];
	struct mutex lock;
	unsigned int nr_maps;
	bool overflow;
	struct {
		struct address_space *mapping;
		pgoff_t pgoff;
	} maps[VGPU_DB_MAX_MAPS];
};

struct vgpu_db_watch *vgpu_shim_db_watch_new(struct page **pages, unsigned long count, void *target,
					     void (*rung)(void *target, unsigned long watch,
							  unsigned long offset),
					     void (*release)(void *target))
{
	struct vgpu_db_watch *w;
	unsigned long i;

	if (!count || count > VGPU_DB_MAX_PAGES)
		return NULL;
	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w)
		return NULL;
	refcount_set(&w->ref, 1);
	mutex_init(&w->lock);
	w->target = target;
	w->rung = rung;
	w->release = release;
	w->nr_pages = count;
	for (i = 0; i < count; i++) {
		get_page(pages[i]);
		w->pages[i] = pages[i];
	}
	return w;
}

void vgpu_shim_db_watch_put(struct vgpu_db_watch *w)
{
	unsigned int i;

	if (!refcount_dec_and_test(&w->ref))
		return;
	for (i = 0; i < w->nr_maps; i++)
		iput(w->maps[i].mapping->host);
	for (i = 0; i < w->nr_pages; i++)
		put_page(w->pages[i]);
	w->release(w->target);
	mutex_destroy(&w->lock);
	kfree(w);
}

static void vgpu_db_vm_open(struct vm_area_struct *vma)
{
	struct vgpu_db_watch *w = vma->vm_private_data;

	/* A split or moved VMA: our module's ops stay in use. */
	__module_get(THIS_MODULE);
	refcount_inc(&w->ref);
}

static void vgpu_db_vm_close(struct vm_area_struct *vma)
{
	vgpu_shim_db_watch_put(vma->vm_private_data);
	module_put(THIS_MODULE);
}

static vm_fault_t vgpu_db_vm_mkwrite(struct vm_fault *vmf)
{
	struct vgpu_db_watch *w = vmf->vma->vm_private_data;
	struct folio *folio = page_folio(vmf->page);
	unsigned long i;

	for (i = 0; i < w->nr_pages; i++)
		if (w->pages[i] == vmf->page)
			break;
	if (i == w->nr_pages)
		return VM_FAULT_SIGBUS;
	/* Held until the PTE is writable: see above. */
	folio_lock(folio);
	clear_bit(i, &w->armed);
	WRITE_ONCE(w->faulted[i], ktime_get_ns());
	atomic_long_inc(&vgpu_db_traps);
	w->rung(w->target, (unsigned long)w, i * PAGE_SIZE + offset_in_page(vmf->real_address));
	return VM_FAULT_LOCKED;
}

static const struct vm_operations_struct vgpu_db_vm_ops = {
	.open = vgpu_db_vm_open,
	.close = vgpu_db_vm_close,
	.page_mkwrite = vgpu_db_vm_mkwrite,
};

/*
 * The doorbell mmap: as vgpu_shim_mmap_pages(), with the PTEs installed
 * read-only (the first write traps) and the mapping recorded for arming.
 */
int vgpu_shim_db_watch_mmap(struct vgpu_db_watch *w, struct vm_area_struct *vma)
{
	struct address_space *mapping;
	unsigned long num = w->nr_pages;
	unsigned int i;
	int ret;

	if (vma->vm_end - vma->vm_start != w->nr_pages << PAGE_SHIFT || !vma->vm_file)
		return -EINVAL;
	mapping = vma->vm_file->f_mapping;
	mutex_lock(&w->lock);
	for (i = 0; i < w->nr_maps; i++)
		if (w->maps[i].mapping == mapping && w->maps[i].pgoff == vma->vm_pgoff)
			break;
	if (i == w->nr_maps) {
		if (w->nr_maps < VGPU_DB_MAX_MAPS) {
			ihold(mapping->host);
			w->maps[w->nr_maps].mapping = mapping;
			w->maps[w->nr_maps].pgoff = vma->vm_pgoff;
			w->nr_maps++;
		} else {
			w->overflow = true;
		}
	}
	mutex_unlock(&w->lock);
	vm_flags_set(vma, VM_IO | VM_DONTCOPY | VM_DONTEXPAND | VM_NORESERVE | VM_DONTDUMP);
	/* What vma_set_page_prot() gives a write-notify VMA after mmap. */
	if (vma->vm_flags & VM_SHARED)
		vma->vm_page_prot = vm_get_page_prot(vma->vm_flags & ~VM_SHARED);
	ret = vm_insert_pages(vma, vma->vm_start, w->pages, &num);
	if (!ret && num)
		ret = -ENOMEM;
	if (ret)
		return ret;
	if (!try_module_get(THIS_MODULE))
		return -ENODEV;
	refcount_inc(&w->ref);
	vma->vm_private_data = w;
	vma->vm_ops = &vgpu_db_vm_ops;
	return 0;
}

/*
 * Write-protects the pages' user PTEs so that the next write wakes the
 * engine.  0: armed; -EBUSY: a mapping is not tracked (the caller polls);
 * -EAGAIN: a page took a write fault less than @holdoff_ns ago (a queue
 * on it is busy: re-protecting it would make its producer fault on each
 * write; the caller polls and tries again later).
 */
int vgpu_shim_db_watch_arm(struct vgpu_db_watch *w, u64 holdoff_ns)
{
	u64 now = ktime_get_ns();
	unsigned long i;
	unsigned int m;
	int ret = 0;

	mutex_lock(&w->lock);
	if (w->overflow) {
		ret = -EBUSY;
		goto out;
	}
	for (i = 0; i < w->nr_pages; i++) {
		struct folio *folio = page_folio(w->pages[i]);

		if (test_bit(i, &w->armed))
			continue;
		if (now - READ_ONCE(w->faulted[i]) < holdoff_ns) {
			ret = -EAGAIN;
			continue;
		}
		folio_lock(folio);
		if (!test_bit(i, &w->armed)) {
			for (m = 0; m < w->nr_maps; m++)
				mapping_wrprotect_range(w->maps[m].mapping, w->maps[m].pgoff + i,
							page_to_pfn(w->pages[i]), 1);
			set_bit(i, &w->armed);
			atomic_long_inc(&vgpu_db_arms);
		}
		folio_unlock(folio);
	}
out:
	mutex_unlock(&w->lock);
	return ret;
}

/*
 * Pins @nr pages of the current process from @start for a USERPTR object
 * (FOLL_WRITE | FOLL_LONGTERM: the GPU writes them for as long as the
 * object lives; amdgpu gets the same pages through hmm_range_fault() with
 * write access).  All or nothing: a range with a hole or a read-only part
 * is -EFAULT and leaves nothing pinned.
 */
int vgpu_shim_pin_user(unsigned long start, unsigned long nr, struct page **pages)
{
	unsigned long done = 0;

	if (!current->mm)
		return -EFAULT;
	while (done < nr) {
		int chunk = min_t(unsigned long, nr - done, INT_MAX / 2);
		int got = pin_user_pages_fast(start + (done << PAGE_SHIFT), chunk,
					      FOLL_WRITE | FOLL_LONGTERM, pages + done);

		if (got <= 0) {
			unpin_user_pages(pages, done);
			/* A hole or a read-only page: -EFAULT, as amdgpu's hmm path. */
			if (got == -ENOMEM || got == -EINTR || got == -ERESTARTSYS)
				return got;
			return -EFAULT;
		}
		done += got;
	}
	return 0;
}

/* Unpins what vgpu_shim_pin_user() pinned; the GPU may have written them. */
void vgpu_shim_unpin_user(struct page **pages, unsigned long nr)
{
	unpin_user_pages_dirty_lock(pages, nr, true);
}

u64 vgpu_shim_total_ram(void)
{
	return (u64)totalram_pages() << PAGE_SHIFT;
}

/* amdgpu_ids.c: amdgpu_pasid_xa, amdgpu_pasid_xa_next. */
static DEFINE_XARRAY_FLAGS(vgpu_pasid_xa, XA_FLAGS_ALLOC1);
static u32 vgpu_pasid_xa_next;

/* amdgpu_pasid_alloc(16, ..). */
int vgpu_shim_pasid_alloc(u32 *pasid)
{
	int r = xa_alloc_cyclic(&vgpu_pasid_xa, pasid, NULL, XA_LIMIT(1, (1U << 16) - 1),
				&vgpu_pasid_xa_next, GFP_KERNEL);

	return r < 0 ? r : 0;
}

/* amdgpu_pasid_free(). */
void vgpu_shim_pasid_free(u32 pasid)
{
	xa_erase(&vgpu_pasid_xa, pasid);
}

unsigned int vgpu_shim_noreclaim_save(void)
{
	return memalloc_noreclaim_save();
}

void vgpu_shim_noreclaim_restore(unsigned int flags)
{
	memalloc_noreclaim_restore(flags);
}

int vgpu_shim_pfn_rw(unsigned long pfn, size_t offset, void *buf, size_t len, bool write)
{
	struct page *page;
	void *addr;

	if (!pfn_valid(pfn) || offset > PAGE_SIZE || len > PAGE_SIZE - offset)
		return -EFAULT;
	page = pfn_to_page(pfn);
	if (is_zone_device_page(page))
		return -EFAULT;
	addr = kmap_local_page(page);
	if (write)
		memcpy(addr + offset, buf, len);
	else
		memcpy(buf, addr + offset, len);
	kunmap_local(addr);
	return 0;
}

void vgpu_shim_copy_page(struct page *dst, struct page *src)
{
	if (src)
		copy_highpage(dst, src);
	else
		clear_highpage(dst);
}

/* ------------------------------------------------------------------------
 * KUnit helpers: user-space access from the test's kernel thread.
 */

#if IS_BUILTIN(CONFIG_KUNIT)

/*
 * Opens @path relative to devtmpfs ("dri/renderD128", "null").  KUnit runs
 * on kernel threads, whose root is the initial rootfs, where /dev is not
 * mounted; a private mount of devtmpfs (the same superblock) reaches the
 * device nodes from anywhere.
 */
int vgpu_shim_test_open(const char *path, struct file **out)
{
	struct file_system_type *type;
	struct vfsmount *mnt;
	struct path p;
	struct file *file;
	int ret;

	type = get_fs_type("devtmpfs");
	if (!type)
		return -ENODEV;
	mnt = vfs_kern_mount(type, 0, "devtmpfs", NULL);
	module_put(type->owner);
	if (IS_ERR(mnt))
		return PTR_ERR(mnt);
	ret = vfs_path_lookup(mnt->mnt_root, mnt, path, LOOKUP_FOLLOW, &p);
	if (ret)
		goto out;
	/* The file holds its own references on the dentry and the mount. */
	file = dentry_open(&p, O_RDWR, current_cred());
	path_put(&p);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto out;
	}
	*out = file;
out:
	mntput(mnt);
	return ret;
}

void vgpu_shim_test_close(struct file *file)
{
	fput(file);
	/* A kernel thread's final fput is deferred; make release happen now. */
	flush_delayed_fput();
}

int vgpu_shim_test_mmap(struct file *file, u64 offset, unsigned long len, bool rw,
			bool shared, unsigned long *addr)
{
	unsigned long a;
	int ret;

	ret = kunit_attach_mm();
	if (ret)
		return ret;
	a = vm_mmap(file, 0, len, rw ? PROT_READ | PROT_WRITE : PROT_NONE,
		    shared ? MAP_SHARED : MAP_PRIVATE, offset);
	if (IS_ERR_VALUE(a))
		return (int)a;
	*addr = a;
	return 0;
}

int vgpu_shim_test_mmap_anon(unsigned long len, bool rw, unsigned long *addr)
{
	unsigned long a;
	int ret;

	ret = kunit_attach_mm();
	if (ret)
		return ret;
	a = vm_mmap(NULL, 0, len, rw ? PROT_READ | PROT_WRITE : PROT_READ,
		    MAP_PRIVATE | MAP_ANONYMOUS, 0);
	if (IS_ERR_VALUE(a))
		return (int)a;
	*addr = a;
	return 0;
}

int vgpu_shim_test_munmap(unsigned long addr, unsigned long len)
{
	int ret = vm_munmap(addr, len);

	/* The VMA's file reference is dropped by a deferred fput too. */
	flush_delayed_fput();
	return ret;
}

/* Copies @len bytes at @off of page frame @pfn to (@to_page false) or from @buf. */
int vgpu_shim_test_pfn_copy(unsigned long pfn, unsigned long off, void *buf, unsigned long len,
			    bool to_page)
{
	void *p;

	if (!pfn_valid(pfn) || off + len > PAGE_SIZE || off + len < off)
		return -EINVAL;
	p = kmap_local_page(pfn_to_page(pfn));
	if (to_page)
		memcpy(p + off, buf, len);
	else
		memcpy(buf, p + off, len);
	kunmap_local(p);
	return 0;
}

int vgpu_shim_test_write_user(unsigned long addr, const void *src, unsigned long len)
{
	return copy_to_user((void __user *)addr, src, len) ? -EFAULT : 0;
}

int vgpu_shim_test_read_user(void *dst, unsigned long addr, unsigned long len)
{
	return copy_from_user(dst, (const void __user *)addr, len) ? -EFAULT : 0;
}

#endif /* CONFIG_KUNIT */
