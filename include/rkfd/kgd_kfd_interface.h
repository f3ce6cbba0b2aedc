/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The device interface between rkfd (the KFD) and a GPU driver (the KGD).
 *
 * Upstream amdkfd lives inside amdgpu and talks to it in two directions:
 * kgd2kfd_* (the GPU driver tells the KFD about devices and interrupts) and
 * kfd2kgd (the KFD asks the GPU driver for VMs, memory and clocks).  rkfd
 * keeps that split as a C ABI between two modules, so it never knows which
 * kind of GPU it drives:
 *
 *   - the virtual amdgpu (vgpu/, module "amdgpu") implements kfd2kgd in Rust;
 *   - the real-amdgpu shim (shim/rkfd_amdgpu.c) would implement it over
 *     amdgpu's amdgpu_amdkfd_* functions.
 *
 * Rules:
 *   - every kfd2kgd callback may sleep and is called with no rkfd spinlock
 *     held; callbacks never call back into rkfd synchronously, except
 *     kgd2kfd_interrupt() which may be called from any non-atomic context;
 *   - objects are opaque handles in both directions (struct kgd_dev,
 *     struct kfd_dev, kgd VM and memory handles are void *);
 *   - a GPU driver registers with kgd2kfd_probe() + kgd2kfd_device_init()
 *     and removes the device with kgd2kfd_device_exit(), after which rkfd
 *     makes no further call for it.  rkfd holds a reference on @owner while
 *     any process uses the device, so the GPU driver cannot be unloaded
 *     under a process.
 */
#ifndef RKFD_KGD_KFD_INTERFACE_H
#define RKFD_KGD_KFD_INTERFACE_H

#include <linux/types.h>

struct module;
struct kgd_dev;		/* the GPU driver's device, opaque to rkfd */
struct kfd_dev;		/* rkfd's device, opaque to the GPU driver */

#define KGD_MAX_CACHES 8
#define KGD_NAME_LEN 32

/* One cache level of the GPU, as topology's caches/N/properties prints it. */
struct kgd_cache_info {
	__u32 level;			/* 1..4 */
	__u32 size_kib;
	__u32 cache_line_size;		/* bytes */
	__u32 cache_lines_per_tag;
	__u32 associativity;
	__u32 latency;			/* ns */
	__u32 type;			/* HSA_CACHE_TYPE_* bits (DATA|HSACU = 9) */
	__u32 cus_per_cache;		/* CUs sharing one instance (sibling_map) */
};

/*
 * What a GPU tells rkfd at probe: the properties topology prints for its
 * node (upstream gets them from amdgpu_device and the CRAT builder).  All
 * values must be honest properties of the part being driven or emulated.
 */
struct kgd_gpu_info {
	char name[KGD_NAME_LEN];	/* nodes/N/name, lower case */
	__u32 gfx_target_version;	/* major*10000 + minor*100 + stepping */
	__u32 vendor_id, device_id;	/* PCI ids */
	__u32 domain;			/* PCI domain */
	__u32 location_id;		/* bus << 8 | devfn */
	__u32 drm_render_minor;		/* /dev/dri/renderD<minor> */
	__u64 unique_id;
	__u32 num_shader_engines;
	__u32 sh_per_se;		/* shader arrays per engine */
	__u32 cu_per_sh;		/* CUs per shader array */
	__u32 simd_per_cu;
	__u32 max_waves_per_simd;
	__u32 wave_front_size;
	__u32 lds_size_in_kb;
	__u32 max_slots_scratch_cu;
	__u32 num_sdma_engines;
	__u32 num_sdma_xgmi_engines;
	__u32 num_sdma_queues_per_engine;
	__u32 num_cp_queues;
	__u32 num_xcc;
	__u32 max_engine_clk_fcompute;	/* MHz */
	__u32 fw_version;		/* MEC */
	__u32 sdma_fw_version;
	__u32 capability;		/* HSA_CAP_* (kfd_sysfs.h) the device supports */
	__u32 capability2;
	__u32 debug_prop;
	__u32 cwsr_size;		/* per-queue context save area, bytes */
	__u32 ctl_stack_size;		/* per-queue control stack, bytes */
	__u64 vram_size;		/* bytes of local memory (0: APU, no VRAM) */
	__u32 vram_width;		/* bits */
	__u32 mem_clk_max;		/* MHz */
	__u32 vram_is_public;		/* whole VRAM host-visible (large BAR / APU) */
	__u32 num_caches;
	struct kgd_cache_info caches[KGD_MAX_CACHES];
};

/* ALLOC_MEMORY_OF_GPU as the GPU driver sees it. */
struct kgd_mem_alloc {
	__u64 va;		/* GPU virtual address */
	__u64 size;		/* bytes, page aligned */
	__u64 user_addr;	/* USERPTR: the CPU address backing it */
	__u32 flags;		/* KFD_IOC_ALLOC_MEM_FLAGS_* */
	__u32 pad;
};

/* kfd2kgd: what rkfd asks of the GPU driver.  0 or -errno unless noted. */
struct kfd2kgd_calls {
	/*
	 * Binds a process to the GPU VM behind one of the device's DRM files
	 * (@drm_file is a struct file *).  -EINVAL if the file is not this
	 * device's render node.  On success *@vm is a handle rkfd passes back
	 * and releases with release_vm().
	 */
	int (*acquire_vm)(struct kgd_dev *kgd, void *drm_file, void **vm);
	void (*release_vm)(struct kgd_dev *kgd, void *vm);

	/* Memory objects of a VM.  *@mmap_offset: render-node mmap offset. */
	int (*alloc_memory_of_gpu)(struct kgd_dev *kgd, void *vm,
				   const struct kgd_mem_alloc *alloc,
				   void **mem, __u64 *mmap_offset);
	void (*free_memory_of_gpu)(struct kgd_dev *kgd, void *vm, void *mem);
	int (*map_memory_to_gpu)(struct kgd_dev *kgd, void *vm, void *mem);
	int (*unmap_memory_from_gpu)(struct kgd_dev *kgd, void *vm, void *mem);
	/* A kernel mapping of a GTT object (the event page); NULL if none. */
	void *(*map_gtt_to_kernel)(struct kgd_dev *kgd, void *mem, __u64 *size);

	/* Bytes of VRAM not allocated yet. */
	__u64 (*available_vram)(struct kgd_dev *kgd);
	/* The GPU's free-running clock counter. */
	__u64 (*get_gpu_clock_counter)(struct kgd_dev *kgd);
};

/* kgd2kfd: what the GPU driver calls in rkfd (exported by rkfd.ko). */
struct kfd_dev *kgd2kfd_probe(struct kgd_dev *kgd, struct module *owner,
			      const struct kfd2kgd_calls *calls,
			      const struct kgd_gpu_info *info);
int kgd2kfd_device_init(struct kfd_dev *kfd);
void kgd2kfd_device_exit(struct kfd_dev *kfd);
/* An interrupt-handler ring entry from the GPU (events, faults). */
void kgd2kfd_interrupt(struct kfd_dev *kfd, const void *ih_ring_entry);

#endif /* RKFD_KGD_KFD_INTERFACE_H */
