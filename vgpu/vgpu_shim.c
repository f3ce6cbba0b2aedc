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
 *     drm/cardN, drm/renderDN                  a minimal DRM driver
 *
 * The DRM driver has one ioctl of its own, the GPU-access test interface
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
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_ioctl.h>

#include <kunit/test.h>

#include "vgpu_shim.h"

static char *profile = "gfx90a";
module_param(profile, charp, 0444);
MODULE_PARM_DESC(profile, "GPU profile, or comma-separated list (GPU i gets entry i mod n): gfx90a (default, MI210), gfx1030 (W6800), gfx1100 (W7900), gfx1103 (780M)");

/* rocm-smi shows it as "Driver version"; the in-tree amdgpu has none. */
MODULE_VERSION("0.1.0-vgpu");

const char *vgpu_shim_profile(void)
{
	return profile;
}

/* The layout Rust mirrors in vgpu/kabi/shim.rs. */
static_assert(sizeof(struct vgpu_shim_dev_info) == 96);
static_assert(offsetof(struct vgpu_shim_dev_info, unique_id) == 56);
static_assert(offsetof(struct vgpu_shim_dev_info, power_cap_uw) == 92);

/* One virtual GPU's devices. */
struct vgpu_shim_dev {
	struct faux_device *faux;
	struct vgpu_drm *drm;		/* devres-managed on faux->dev */
	struct device *hwmon;
	void *gpu;			/* the Rust GPU, outlives this */
	const struct vgpu_shim_ops *ops;	/* what C calls in Rust */
	struct vgpu_shim_dev_info info;
};

/* The DRM device, embedded as DRM wants it. */
struct vgpu_drm {
	struct drm_device drm;
	struct vgpu_shim_dev *dev;
};

/* ------------------------------------------------------------------------
 * DRM: a render node whose mmap maps KFD memory objects.
 */

static int vgpu_drm_open(struct drm_device *drm, struct drm_file *file)
{
	struct vgpu_drm *vdrm = container_of(drm, struct vgpu_drm, drm);

	/* Every DRM file gets its own GPU VM, as amdgpu_driver_open_kms does. */
	return vdrm->dev->ops->file_open(vdrm->dev->gpu, &file->driver_priv);
}

static struct vgpu_shim_dev *drm_file_vdev(struct drm_file *file)
{
	return container_of(file->minor->dev, struct vgpu_drm, drm)->dev;
}

/*
 * The devices of a VMA of our render node: its file holds a reference on
 * the DRM file, which pins the module, so the devices are not destroyed.
 */
static struct vgpu_shim_dev *vma_vdev(struct vm_area_struct *vma)
{
	return drm_file_vdev(vma->vm_file->private_data);
}

static void vgpu_drm_postclose(struct drm_device *drm, struct drm_file *file)
{
	if (file->driver_priv)
		drm_file_vdev(file)->ops->file_close(file->driver_priv);
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

static int vgpu_drm_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct drm_file *priv = filp->private_data;
	void *mem;
	int ret;

	/*
	 * As amdgpu_gem_object_mmap: libhsakmt maps VRAM that the host cannot
	 * access PROT_NONE + MAP_PRIVATE.  Clearing VM_MAYWRITE keeps such a
	 * mapping from ever becoming writable and makes it a non-COW mapping.
	 * Any other private mapping is refused, as TTM does.
	 */
	if (vma_is_cow_mapping(vma) && !(vma->vm_flags & VM_ACCESS_FLAGS))
		vm_flags_clear(vma, VM_MAYWRITE);
	if (vma_is_cow_mapping(vma))
		return -EINVAL;

	/* Looks the offset up in this file's VM; takes a reference. */
	ret = drm_file_vdev(priv)->ops->mmap(priv->driver_priv, vma->vm_pgoff, vma_pages(vma),
					     &mem);
	if (ret)
		return ret;

	vma->vm_private_data = mem;
	vma->vm_ops = &vgpu_vm_ops;
	/* Pages are inserted by PFN at fault time, as TTM does. */
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	return 0;
}

static int vgpu_ioctl_access(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_amdgpu_vgpu_access *args = data;

	if (!file->driver_priv)
		return -EINVAL;
	return drm_file_vdev(file)->ops->gpu_access(file->driver_priv, args->va, args->size,
						    args->buf, args->write != 0, &args->faults);
}

static const struct drm_ioctl_desc vgpu_ioctls[] = {
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
	.ioctls = vgpu_ioctls,
	.num_ioctls = ARRAY_SIZE(vgpu_ioctls),
	/* Not "amdgpu": it answers no DRM_IOCTL_AMDGPU_*, so say so. */
	.name = "amdgpu_vgpu",
	.desc = "Virtual AMD GPU for rkfd",
	.major = 0,
	.minor = 1,
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
	    fpriv->minor->type != DRM_MINOR_RENDER || !fpriv->driver_priv)
		return -EINVAL;
	*vm = fpriv->driver_priv;
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

static struct attribute *vgpu_hwmon_attrs[] = {
	&dev_attr_pwm1_max.attr,
	&dev_attr_vgpu_throttle.attr,
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
	    !ops->throttle || !ops->gpu_access)
		return -EINVAL;
	dev = kzalloc_obj(*dev);
	if (!dev)
		return -ENOMEM;
	dev->info = *info;
	dev->info.name[VGPU_SHIM_NAME_LEN - 1] = '\0';
	dev->info.vbios_version[VGPU_SHIM_VBIOS_LEN - 1] = '\0';
	dev->gpu = gpu;
	dev->ops = ops;

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
