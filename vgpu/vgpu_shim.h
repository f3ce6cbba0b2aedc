/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The contract between the virtual amdgpu's C shim and its Rust crate.
 *
 * C owns what Rust for Linux 7.3 has no abstraction for: the per-GPU
 * devices (a faux parent device named like a PCI function, a DRM driver
 * with its own mmap, sysfs attributes, a hwmon), the charp module
 * parameter and vmap().  Rust owns all GPU state; Rust objects are opaque
 * to C (void *).  vgpu_shim_* functions are C called from Rust; what C
 * calls in Rust comes in a table of function pointers (struct
 * vgpu_shim_ops) given at creation, one per GPU type (vgpu/kabi/device.rs).
 */
#ifndef VGPU_SHIM_H
#define VGPU_SHIM_H

#include <linux/types.h>

struct file;
struct page;
struct vgpu_shim_dev;

/* Bytes of the strings in struct vgpu_shim_dev_info, NUL included. */
#define VGPU_SHIM_NAME_LEN 16
#define VGPU_SHIM_VBIOS_LEN 32

/*
 * What the render node's amdgpu ioctls (DRM_IOCTL_AMDGPU_INFO) report
 * besides struct vgpu_shim_dev_info: fixed properties of the part, each as
 * amdgpu keeps it (the field comments name amdgpu's variable).  vgpu_shim.c
 * builds the UAPI structs of <uapi/drm/amdgpu_drm.h> from them.
 */
struct vgpu_shim_amdgpu_info {
	u32 family;			/* adev->family, AMDGPU_FAMILY_* */
	u32 chip_rev;			/* adev->rev_id */
	u32 external_rev;		/* adev->external_rev_id */
	u32 pci_rev;			/* pdev->revision */
	u32 gc_ip;			/* IP_VERSION_MAJ_MIN_REV(GC): maj << 16 | min << 8 | rev */
	u32 sdma_ip;			/* the same of SDMA0 */
	u32 num_shader_engines;		/* gfx.config.max_shader_engines */
	u32 sh_per_se;			/* gfx.config.max_sh_per_se */
	u32 cu_per_sh;			/* gfx.config.max_cu_per_sh */
	u32 wave_front_size;		/* gfx.cu_info.wave_front_size */
	u32 vram_type;			/* gmc.vram_type, AMDGPU_VRAM_TYPE_* */
	u32 vram_bit_width;		/* gmc.vram_width */
	u32 ce_ram_size;		/* gfx.ce_ram_size (0: no constant engine) */
	u32 gb_addr_config;		/* gfx.config.gb_addr_config */
	u32 mec_fw_version;		/* gfx.mec_fw_version (= mec2_fw_version) */
	u32 sdma_fw_version;		/* sdma.instance[*].fw_version */
	u32 num_sdma;			/* sdma.num_instances */
	u32 apu;			/* AMD_IS_APU */
	u64 gtt_size;			/* GTT manager size, bytes */
};

/* What the per-GPU devices show: fixed properties of the virtual part. */
struct vgpu_shim_dev_info {
	char name[VGPU_SHIM_NAME_LEN];		/* parent device, "0000:c1:00.0" */
	char vbios_version[VGPU_SHIM_VBIOS_LEN];
	u32 vendor_id;
	u32 device_id;
	u64 unique_id;
	u64 vram_total;				/* bytes */
	u32 sclk_mhz;				/* the one engine clock level */
	u32 mclk_mhz;				/* the one memory clock level */
	u32 temp_mdeg;				/* hwmon temp1 (edge), m°C */
	u32 vddgfx_mv;				/* hwmon in0 (vddgfx), mV */
	u32 power_avg_uw;			/* hwmon power1_average, µW */
	u32 power_cap_uw;			/* hwmon power1_cap, µW */
	struct vgpu_shim_amdgpu_info amdgpu;	/* DRM_IOCTL_AMDGPU_INFO */
};

/*
 * What the DRM files, their VMAs, sysfs and hwmon call in Rust.  @gpu is what
 * vgpu_shim_dev_create() was given; a file's state (*@vm, its driver_priv)
 * comes from @file_open and goes back in @file_close; a VMA's memory
 * object (*@mem, its vm_private_data) holds one reference per VMA
 * (@mmap, @mem_get) given back by @mem_put.  @vram_used and @gtt_used are
 * bytes in use (sysfs, AMDGPU_INFO), @clock_counter the GPU's 100 MHz
 * clock (AMDGPU_INFO_TIMESTAMP).
 *
 * GEM objects (DRM_IOCTL_AMDGPU_GEM_CREATE): @gem_create makes a memory
 * object of @size bytes (page aligned, non-zero) in VRAM (@vram) or GTT, in
 * no VM; *@mem holds one reference (the GEM object's, given back by
 * @mem_put), *@mmap_offset is its render-node mmap offset (its own, unique
 * on the GPU).  @mem_cpu_map checks a CPU mapping of @npages pages of an
 * object as the render node's mmap does for KFD objects (-EINVAL beyond
 * it).
 */
struct vgpu_shim_ops {
	int (*file_open)(void *gpu, void **vm);
	void (*file_close)(void *vm);
	int (*mmap)(void *vm, unsigned long pgoff, unsigned long npages, void **mem);
	struct page *(*mem_page)(void *mem, unsigned long pgoff);
	int (*mem_access)(void *mem, u64 offset, void *buf, int len, bool write);
	void (*mem_get)(void *mem);
	void (*mem_put)(void *mem);
	u64 (*vram_used)(void *gpu);
	u64 (*gtt_used)(void *gpu);
	u64 (*clock_counter)(void *gpu);
	void (*throttle)(void *gpu, u64 bitmask);
	/*
	 * hwmon vgpu_power: @op (@len bytes, not NUL-terminated) names what
	 * amdgpu would do (suspend, resume, reset, ...); 0 or -errno.
	 * @compute_active: rkfd's kgd2kfd_compute_active (0 or 1, -ENODEV).
	 */
	int (*power)(void *gpu, const char *op, size_t len);
	int (*compute_active)(void *gpu);
	int (*gpu_access)(void *vm, u64 va, u64 size, u64 buf, bool write, u32 *faults);
	int (*gem_create)(void *gpu, u64 size, bool vram, void **mem, u64 *mmap_offset);
	int (*mem_cpu_map)(void *mem, unsigned long npages);
};

/* C side, called from Rust (vgpu/kabi/).  @ops outlives the devices. */
int vgpu_shim_dev_create(const struct vgpu_shim_dev_info *info, void *gpu,
			 const struct vgpu_shim_ops *ops, struct vgpu_shim_dev **out);
void vgpu_shim_dev_destroy(struct vgpu_shim_dev *dev);
u32 vgpu_shim_dev_render_minor(const struct vgpu_shim_dev *dev);
u32 vgpu_shim_dev_primary_minor(const struct vgpu_shim_dev *dev);
void vgpu_shim_dev_log(const struct vgpu_shim_dev *dev, const char *msg);
int vgpu_shim_file_vm(const struct vgpu_shim_dev *dev, struct file *file, void **vm);
const char *vgpu_shim_profile(void);
/*
 * The GEM object behind dma-buf file descriptor @fd of the current process,
 * if a render node of this driver exported it (PRIME): *@mem its memory
 * object with a new reference for the caller (ops->mem_get); *@vram: VRAM
 * is among the domains it was created with (amdgpu's preferred_domains;
 * else GTT is), *@cpu_access: it was created CPU_ACCESS_REQUIRED.  -EBADF
 * (no such fd), -EINVAL (not a dma-buf, or not one of ours).
 */
int vgpu_shim_dmabuf_gem(int fd, void **mem, bool *vram, bool *cpu_access);
void *vgpu_shim_vmap(struct page **pages, unsigned int count);
void vgpu_shim_vunmap(void *addr);
unsigned long vgpu_shim_page_pfn(struct page *page);
struct vm_area_struct;
int vgpu_shim_pin_user(unsigned long start, unsigned long nr, struct page **pages);
void vgpu_shim_unpin_user(struct page **pages, unsigned long nr);
int vgpu_shim_mmap_pages(struct vm_area_struct *vma, struct page **pages, unsigned long count);

/*
 * Doorbell pages whose user mappings trap the first write after the
 * engines armed them (see vgpu_shim.c).  @rung(@target, @watch, @offset)
 * runs in the write fault (process context, may sleep) with the byte
 * offset written; @release(@target) when the last reference goes.
 */
struct vgpu_db_watch;
struct vgpu_db_watch *vgpu_shim_db_watch_new(struct page **pages, unsigned long count, void *target,
					     void (*rung)(void *target, unsigned long watch,
							  unsigned long offset),
					     void (*release)(void *target));
void vgpu_shim_db_watch_put(struct vgpu_db_watch *w);
int vgpu_shim_db_watch_mmap(struct vgpu_db_watch *w, struct vm_area_struct *vma);
int vgpu_shim_db_watch_arm(struct vgpu_db_watch *w, u64 holdoff_ns);
/* How long a worker polls after work before it arms the traps, ns. */
u64 vgpu_shim_doorbell_arm_ns(void);
u64 vgpu_shim_total_ram(void);
/*
 * A new PASID for a VM, driver-wide (every virtual GPU allocates from the
 * one table, as amdgpu_pasid_alloc(16, ..)): 1..0xffff, cyclic.  0 and
 * *@pasid set, or -errno (-EBUSY: all in use).
 */
int vgpu_shim_pasid_alloc(u32 *pasid);
void vgpu_shim_pasid_free(u32 pasid);
unsigned int vgpu_shim_noreclaim_save(void);
void vgpu_shim_noreclaim_restore(unsigned int flags);
int vgpu_shim_pfn_rw(unsigned long pfn, size_t offset, void *buf, size_t len, bool write);
void vgpu_shim_copy_page(struct page *dst, struct page *src);

/*
 * The GPU-access test interface (a DRM ioctl on the render node):
 * "the GPU reads or writes @size bytes at GPU VA @va of this file's VM",
 * walking the VM's page table and raising retry faults (kgd2kfd_svm_fault)
 * for pages that are not mapped, as the engines will.  Reads copy into,
 * writes copy from, the user buffer @buf.  @faults returns how many retry
 * faults were raised.  -EFAULT: a fatal GPU VM fault (XNACK off, no VMA),
 * also reported to rkfd as a VM fault interrupt (no retry bit).
 */
struct drm_amdgpu_vgpu_access {
	__u64 va;
	__u64 size;
	__u64 buf;
	__u32 write;
	__u32 faults;
};
#define DRM_AMDGPU_VGPU_ACCESS	0x40
#define DRM_IOCTL_AMDGPU_VGPU_ACCESS \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_VGPU_ACCESS, struct drm_amdgpu_vgpu_access)

/*
 * KFD eviction fences (vgpu/evict_shim.c, upstream amdgpu_amdkfd_fence.c):
 * one struct vgpu_evict_fence per VM rkfd acquired.  create: the current
 * process's (its mm, its tgid) with rkfd's @context_id; *@ef gets a
 * reference on its first fence; NULL: out of memory or no mm.  restore
 * (restore_process_bos): a new fence replaces a signalled one (an
 * unsignalled one stays), *@ef a reference on the current one; -EBUSY
 * while debugfs restore_fail is set, -ENOMEM.  destroy: signals
 * and drops the current fence (release_vm).  The debugfs files (evict,
 * quiesce, resume, restore_fail, evict_fences under amdgpu_vgpu/) live
 * from module init to exit.
 */
struct dma_fence;
struct vgpu_evict_fence;
struct vgpu_evict_fence *vgpu_shim_evict_fence_create(u16 context_id, struct dma_fence **ef);
int vgpu_shim_evict_fence_restore(struct vgpu_evict_fence *v, struct dma_fence **ef);
void vgpu_shim_evict_fence_destroy(struct vgpu_evict_fence *v);
void vgpu_shim_fence_put(struct dma_fence *f);
void vgpu_shim_evict_debugfs_init(void);
void vgpu_shim_evict_debugfs_exit(void);
/* debugfs amdgpu_vgpu/vmfault_fast_path is set (evict_shim.c). */
bool vgpu_shim_vmfault_fast_path_on(void);

/*
 * Test-only helpers for the KUnit suites (CONFIG_KUNIT=y): open a render
 * node and map it into the test thread's own mm, as user space would.
 */
int vgpu_shim_test_open(const char *devtmpfs_path, struct file **out);
void vgpu_shim_test_close(struct file *file);
int vgpu_shim_test_mmap(struct file *file, u64 offset, unsigned long len, bool rw,
			bool shared, unsigned long *addr);
int vgpu_shim_test_munmap(unsigned long addr, unsigned long len);
int vgpu_shim_test_mmap_anon(unsigned long len, bool rw, unsigned long *addr);
int vgpu_shim_test_pfn_copy(unsigned long pfn, unsigned long off, void *buf, unsigned long len,
			    bool to_page);
int vgpu_shim_test_write_user(unsigned long addr, const void *src, unsigned long len);
int vgpu_shim_test_read_user(void *dst, unsigned long addr, unsigned long len);

#endif /* VGPU_SHIM_H */
