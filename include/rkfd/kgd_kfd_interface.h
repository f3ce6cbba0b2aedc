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
 *   - the bridge bridge/rkfd_amdgpu.ko (issue #15; built, not run on a GPU)
 *     implements it over the patched in-tree amdgpu's exported
 *     amdgpu_amdkfd_* functions.
 *
 * Rules:
 *   - every kfd2kgd callback may sleep and is called with no rkfd spinlock
 *     held (except svm_free_vram, which must not sleep: see the SVM
 *     section); callbacks never call back into rkfd synchronously, except
 *     kgd2kfd_interrupt(), kgd2kfd_svm_fault(), kgd2kfd_quiesce_mm() and
 *     kgd2kfd_resume_mm(), which may be called from any non-atomic context
 *     in which the GPU driver holds none of its own locks that a kfd2kgd
 *     callback takes, and kgd2kfd_schedule_evict_and_restore_process(),
 *     which may be called from any context (it takes only a leaf spinlock
 *     of rkfd's);
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
struct mm_struct;
struct dma_fence;	/* a GPU driver's eviction fence, opaque to rkfd */
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
	/*
	 * The compute queue slots rkfd loads MQDs into without the HWS
	 * (hqd_load): HQD (pipe, queue) of the first MEC, pipe <
	 * num_pipe_per_mec, queue < num_queue_per_pipe (upstream
	 * kgd2kfd_shared_resources).
	 */
	__u32 num_pipe_per_mec;
	__u32 num_queue_per_pipe;
	/*
	 * HQDs of the first MEC the GPU driver keeps for itself (its own
	 * compute rings; upstream: the slots missing from
	 * kgd2kfd_shared_resources.cp_queue_bitmap), bit pipe *
	 * num_queue_per_pipe + queue of the first 128 slots, 32 a word:
	 * rkfd loads no queue into them (hqd_load) and leaves them out of
	 * the HWS's queue mask (SET_RESOURCES).  All zero: none.
	 */
	__u32 reserved_hqds[4];
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
	__u32 doorbell_process_size;	/* bytes of doorbells per process (8192 on gfx9+) */
	__u32 num_caches;
	struct kgd_cache_info caches[KGD_MAX_CACHES];
	/*
	 * GET_TILE_CONFIG (amdgpu_amdkfd_get_tile_config): the GB_ADDR_CONFIG
	 * register as amdgpu reads it.  GFX9+ have no legacy tile or macro-tile
	 * modes (the tables are all zero) and report num_banks = num_ranks = 0.
	 */
	__u32 gb_addr_config;
	__u32 pad;
	/*
	 * The XGMI hive the GPU belongs to, nodes/N/properties hive_id
	 * (upstream kgd2kfd_device_init: amdgpu's gmc.xgmi.hive_id when
	 * amdgpu.use_xgmi_p2p is set); 0: in no hive.
	 */
	__u64 hive_id;
};

/* ALLOC_MEMORY_OF_GPU as the GPU driver sees it. */
struct kgd_mem_alloc {
	__u64 va;		/* GPU virtual address */
	__u64 size;		/* bytes, page aligned */
	__u64 user_addr;	/* USERPTR: the CPU address backing it */
	__u32 flags;		/* KFD_IOC_ALLOC_MEM_FLAGS_* */
	__u32 pad;
};

/*
 * Room for one hqd_dump / hqd_sdma_dump: amdgpu's dumps read 56 compute
 * HQD registers and at most 44 SDMA queue registers (HQD_N_REGS).
 */
#define KGD_HQD_DUMP_MAX_REGS	64

/*
 * Why an engine stopped a queue.  The GPU reports a
 * stop to rkfd as the hardware does (kgd2kfd_interrupt): INVALID_PACKET as
 * a CP bad-opcode interrupt with EC_QUEUE_PACKET_RESERVED, UNSUPPORTED with
 * EC_QUEUE_PACKET_UNSUPPORTED, VM_FAULT as the trap handler's SQ debug-trap
 * message with KFD_EC_MASK(EC_QUEUE_WAVE_MEMORY_VIOLATION) (after the VM
 * fault itself), each naming the queue by its doorbell index; RESET raises
 * nothing (rkfd asked for it).
 */
#define KGD_QUEUE_ERROR_INVALID_PACKET	1
#define KGD_QUEUE_ERROR_UNSUPPORTED	2	/* e.g. a kernel dispatch: no ISA on a virtual GPU */
#define KGD_QUEUE_ERROR_VM_FAULT	3
#define KGD_QUEUE_ERROR_RESET		4

/* Dwords of one interrupt-handler ring entry (kgd2kfd_interrupt). */
#define KGD_IH_RING_ENTRY_DWORDS	8

/* kgd2kfd_svm_fault() @flags. */
#define KGD_VM_FAULT_WRITE	(1u << 0)
#define KGD_VM_FAULT_EXEC	(1u << 1)

/*
 * The GPU driver's limits on the system memory KFD objects hold (amdgpu's
 * kfd_mem_limit, shown by debugfs kfd/mem_limit), in bytes.
 */
struct kgd_mem_limits {
	__u64 system_used;	/* GTT + USERPTR objects */
	__u64 system_limit;
	__u64 ttm_used;		/* GTT objects */
	__u64 ttm_limit;
};

/*
 * Shared virtual memory (SVM on HMM).  rkfd owns the policy and the kernel's
 * HMM machinery, as upstream amdkfd does (kfd_svm.c, kfd_migrate.c): it
 * registers the GPU's VRAM as MEMORY_DEVICE_PRIVATE pages (one dev_pagemap
 * per GPU whose owner identifies the GPU; device page n is VRAM page n, as
 * svm_migrate_addr_to_pfn), runs mmu_interval_notifiers, hmm_range_fault
 * and migrate_vma_*, and implements dev_pagemap_ops (migrate_to_ram,
 * folio_free).  The GPU driver provides what only the GPU has: VRAM pages
 * (one budget with alloc_memory_of_gpu's VRAM), the copy engine ("SDMA")
 * and the GPU page table.  A GPU driver that leaves the svm_* calls NULL has
 * no SVM: rkfd does not advertise HSA_CAP_SVMAPI_SUPPORTED for it.
 *
 * Locking (documented in docs/design.md): svm_map and svm_unmap are called
 * under rkfd's per-range lock, which rkfd's mmu_interval_notifier callback
 * also takes, so they must not take mmap_lock, must not wait for anything
 * an mmu notifier invalidation waits for and must not allocate memory with
 * direct reclaim (rkfd calls them inside memalloc_noreclaim_save(), as
 * upstream's svm_range_lock does).
 */

/* A GPU page-table entry of svm_map: a frame plus these bits. */
#define KGD_SVM_PTE_VALID	(1ull << 63)	/* map this page (else leave it unmapped) */
#define KGD_SVM_PTE_VRAM	(1ull << 62)	/* frame is a VRAM page index (else a CPU pfn) */
#define KGD_SVM_PTE_WRITE	(1ull << 61)	/* the GPU may write */
#define KGD_SVM_PTE_FRAME_MASK	((1ull << 52) - 1)

/* svm_copy directions. */
#define KGD_SVM_COPY_TO_VRAM	1
#define KGD_SVM_COPY_TO_SYSTEM	0

/*
 * MES (GFX11 and later: amdgpu schedules user queues with its MES firmware
 * instead of the HWS's runlists).  The calls and structs are shaped like
 * amdgpu's adev->mes.funcs->add_hw_queue / remove_hw_queue and
 * amdgpu_mes_suspend / amdgpu_mes_resume (amdgpu_mes.h's struct
 * mes_add_queue_input / mes_remove_queue_input, with the fields amdkfd's
 * add_queue_mes / remove_queue_mes fill; the XCC instance and the RS64
 * context array indices are dropped: one XCC, no RS64 memory).  Every
 * address the driver reads (MQD, process and gang contexts) is a GART
 * address of an alloc_gtt_mem object.
 */
#define KGD_MES_QUEUE_TYPE_COMPUTE	1	/* AMDGPU_RING_TYPE_COMPUTE */
#define KGD_MES_QUEUE_TYPE_SDMA		2	/* AMDGPU_RING_TYPE_SDMA */
/* amdgpu_mes_priority_level */
#define KGD_MES_PRIORITY_LEVEL_LOW	0
#define KGD_MES_PRIORITY_LEVEL_NORMAL	1
#define KGD_MES_PRIORITY_LEVEL_MEDIUM	2
#define KGD_MES_PRIORITY_LEVEL_HIGH	3
#define KGD_MES_PRIORITY_LEVEL_REALTIME	4
/* AMDGPU_MES_PROC_CTX_SIZE / AMDGPU_MES_GANG_CTX_SIZE: one page each */
#define KGD_MES_PROC_CTX_SIZE		0x1000
#define KGD_MES_GANG_CTX_SIZE		0x1000

struct kgd_mes_add_queue_input {
	__u32 process_id;		/* the VM's PASID (acquire_vm): names the VM */
	__u64 page_table_base_addr;	/* get_process_page_dir() of process_id's VM */
	__u64 process_va_start;		/* GPU pages */
	__u64 process_va_end;
	__u64 process_quantum;		/* 100 ns units */
	__u64 process_context_addr;	/* KGD_MES_PROC_CTX_SIZE bytes, one per process and GPU */
	__u64 gang_quantum;		/* 100 ns units */
	__u64 gang_context_addr;	/* KGD_MES_GANG_CTX_SIZE bytes, one per queue */
	__u32 inprocess_gang_priority;	/* KGD_MES_PRIORITY_LEVEL_* */
	__u32 gang_global_priority_level;	/* KGD_MES_PRIORITY_LEVEL_* */
	__u32 doorbell_offset;		/* the doorbell's dword index in the doorbell BAR */
	__u64 mqd_addr;			/* the queue's MQD (v11_compute_mqd / v11_sdma_mqd) */
	__u64 wptr_addr;		/* the write pointer, a GPU VA in the process's VM */
	__u64 wptr_mc_addr;		/* its GART address; 0: not mapped there (read wptr_addr) */
	__u32 queue_type;		/* KGD_MES_QUEUE_TYPE_* */
	__u32 paging;
	__u32 gws_base;
	__u32 gws_size;
	__u64 tba_addr;			/* trap handler */
	__u64 tma_addr;
	__u32 trap_en;
	__u32 skip_process_ctx_clear;
	__u32 is_kfd_process;
	__u32 is_aql_queue;
	__u32 queue_size;		/* dwords */
	__u32 exclusively_scheduled;	/* a GWS queue */
	__u32 sh_mem_config_data;	/* the process's SH_MEM_CONFIG (qpd->sh_mem_config) */
};

struct kgd_mes_remove_queue_input {
	__u32 doorbell_offset;		/* as added */
	__u64 gang_context_addr;	/* as added */
};

/*
 * Process eviction (upstream amdgpu_amdkfd_fence.c and kfd_process.c's
 * evict_process_worker / restore_process_worker).  Each VM rkfd acquires
 * gets an eviction fence from the GPU driver (a struct dma_fence, opaque to
 * rkfd, created with the process's mm and the context id rkfd passes to
 * acquire_vm, upstream p->context_id) that the driver attaches to the VM's
 * memory.  When the driver must move that memory (a TTM eviction), it
 * enables signalling of the fence, whose ->enable_signaling calls
 * kgd2kfd_schedule_evict_and_restore_process(mm, context_id, fence): rkfd
 * stops the process's queues on every GPU (SMI QUEUE_EVICTION, trigger
 * TTM), signals the process's eviction fences (the memory may move once
 * they are signalled) and, PROCESS_RESTORE_TIME_MS later, asks the driver
 * to restore the VMs' memory with restore_process_bos, which returns a new
 * eviction fence per VM, and restarts the queues (SMI QUEUE_RESTORE).  A
 * failed restore is retried PROCESS_BACK_OFF_TIME_MS later.  A process that
 * ends meanwhile cancels both steps; its fences are signalled and put.
 * rkfd holds one reference on each fence it was given (acquire_vm,
 * restore_process_bos) and drops it when the fence is replaced or the VM
 * released.  One process per mm: rkfd's processes all have context id
 * KGD_CONTEXT_ID_PRIMARY (upstream KFD_CONTEXT_ID_PRIMARY).
 */
#define KGD_CONTEXT_ID_PRIMARY	0xffff
/* upstream kfd_priv.h */
#define KGD_PROCESS_RESTORE_TIME_MS	100
#define KGD_PROCESS_BACK_OFF_TIME_MS	100
#define KGD_PROCESS_ACTIVE_TIME_MS	10

/* kfd2kgd: what rkfd asks of the GPU driver.  0 or -errno unless noted. */
struct kfd2kgd_calls {
	/*
	 * Binds a process to the GPU VM behind one of the device's DRM files
	 * (@drm_file is a struct file *).  -EINVAL if the file is not this
	 * device's render node.  On success *@vm is a handle rkfd passes back
	 * and releases with release_vm(); *@pasid is the VM's PASID: the
	 * one the GPU driver allocated when the DRM file was opened (upstream
	 * amdgpu_driver_open_kms: amdgpu_pasid_alloc(16), driver-wide, so
	 * one process has a different PASID on each GPU; amdkfd 7.3 reads it
	 * as avm->pasid into pdd->pasid in kfd_process_device_init_vm).  The
	 * driver owns it: it puts it in the VM's IH entries and in its
	 * VMID's PASID mapping, checks it in MAP_PROCESS and MES ADD_QUEUE,
	 * and frees it when the VM goes.  Never 0 on success (-EINVAL if the
	 * VM has none, as upstream's "vm %p has no pasid associated").
	 * *@ef is the VM's eviction fence (a reference for rkfd; NULL: the
	 * driver never evicts the VM's memory), created with the current mm
	 * and @context_id, which the driver passes back to
	 * kgd2kfd_schedule_evict_and_restore_process() (upstream
	 * amdgpu_amdkfd_gpuvm_acquire_process_vm()).
	 */
	int (*acquire_vm)(struct kgd_dev *kgd, void *drm_file, __u16 context_id,
			  void **vm, __u32 *pasid, struct dma_fence **ef);
	/*
	 * After an eviction (see "Process eviction" above; rkfd has signalled
	 * the VM's eviction fence and stopped the process's queues): makes
	 * the VM's memory valid again and gives a new eviction fence in *@ef
	 * (a reference for rkfd), which replaces the old one (upstream
	 * amdgpu_amdkfd_gpuvm_restore_process_bos()).  An error leaves *@ef
	 * alone: rkfd retries later.  May be NULL (nothing to restore).
	 */
	int (*restore_process_bos)(struct kgd_dev *kgd, void *vm, struct dma_fence **ef);
	void (*release_vm)(struct kgd_dev *kgd, void *vm);
	/*
	 * The VM's page directory as the GPU's VM context takes it (upstream
	 * amdgpu_amdkfd_gpuvm_get_process_page_dir: amdgpu_gmc_pd_addr() of
	 * the root page directory, the address with its PDE flags, e.g.
	 * AMDGPU_PTE_VALID, in the low bits): what MAP_PROCESS and MES
	 * ADD_QUEUE carry as the process's page table base, from which the
	 * scheduler programs the VMID's page table.  rkfd reads it when it
	 * maps the process's queues; it stays the same while the VM lives.
	 * May be NULL: rkfd then sends 0.
	 */
	__u64 (*get_process_page_dir)(struct kgd_dev *kgd, void *vm);
	/*
	 * Where @vm's doorbell slice (doorbell_process_size bytes, what
	 * mmap_doorbells maps) sits in the GPU's doorbell BAR: the index, in
	 * dwords from the BAR's start, of the slice's first doorbell
	 * (upstream amdgpu_doorbell_index_on_bar(adev,
	 * pdd->qpd.proc_doorbells, 0, doorbell_size), from which
	 * kfd_get_process_doorbells and kfd_get_doorbell_dw_offset_in_bar
	 * count).  Fixed from acquire_vm to release_vm; the slices of a GPU's
	 * acquired VMs do not overlap.  rkfd names a user queue's doorbell by
	 * its BAR index, this + doorbell id * doorbell size / 4, in every MQD,
	 * MAP_QUEUES / UNMAP_QUEUES packet and MES request, as upstream's
	 * q->properties.doorbell_off.  NULL: the driver serves no user
	 * queues (CREATE_QUEUE answers -EOPNOTSUPP, as without hqd_load).
	 */
	__u32 (*get_process_doorbell_index)(struct kgd_dev *kgd, void *vm);

	/* Memory objects of a VM.  *@mmap_offset: render-node mmap offset. */
	int (*alloc_memory_of_gpu)(struct kgd_dev *kgd, void *vm,
				   const struct kgd_mem_alloc *alloc,
				   void **mem, __u64 *mmap_offset);
	void (*free_memory_of_gpu)(struct kgd_dev *kgd, void *vm, void *mem);
	int (*map_memory_to_gpu)(struct kgd_dev *kgd, void *vm, void *mem);
	int (*unmap_memory_from_gpu)(struct kgd_dev *kgd, void *vm, void *mem);
	/* A kernel mapping of a GTT object (the event page); NULL if none. */
	void *(*map_gtt_to_kernel)(struct kgd_dev *kgd, void *mem, __u64 *size);

	/*
	 * Graphics interop (upstream amdgpu_amdkfd_get_dmabuf_info and
	 * amdgpu_amdkfd_gpuvm_import_dmabuf_fd); @fd is a dma-buf file
	 * descriptor of the calling process.  Either may be NULL: rkfd then
	 * answers -EOPNOTSUPP.
	 * get_dmabuf_info: -EBADF / -EINVAL for a bad fd or one that is not a
	 * dma-buf; -EINVAL unless the dma-buf is a GEM object of this GPU
	 * driver in the VRAM or GTT domain, or if the GPU it belongs to (any
	 * GPU of the driver) is not registered with rkfd.  Then *@owner is that
	 * GPU's kfd_dev (what kgd2kfd_probe returned), *@size its bytes, *@flags
	 * KFD_IOC_ALLOC_MEM_FLAGS_VRAM or _GTT (| _PUBLIC for CPU_ACCESS_REQUIRED)
	 * by its preferred domain, *@metadata_size the bytes of its metadata,
	 * which is copied to @metadata if it fits in @buffer_size (else -EINVAL).
	 * import_dmabuf: a memory object of @vm at GPU VA @va (page aligned)
	 * over the dma-buf's memory, used and freed like alloc_memory_of_gpu's
	 * (GPU-writable and executable, as upstream); it keeps the memory alive
	 * after the dma-buf and its GEM handles are gone.  *@size: its bytes;
	 * *@flags: KFD_IOC_ALLOC_MEM_FLAGS_VRAM or _GTT (its preferred domain)
	 * | _WRITABLE | _EXECUTABLE (upstream's alloc_flags of an import);
	 * *@mmap_offset: its render-node mmap offset.  Errors as get_dmabuf_info,
	 * and -EINVAL for a VA range that is not page aligned or does not fit.
	 */
	int (*get_dmabuf_info)(struct kgd_dev *kgd, int fd, struct kfd_dev **owner,
			       __u64 *size, __u32 *flags, void *metadata,
			       __u32 buffer_size, __u32 *metadata_size);
	int (*import_dmabuf)(struct kgd_dev *kgd, void *vm, int fd, __u64 va,
			     void **mem, __u64 *size, __u32 *flags, __u64 *mmap_offset);

	/* Bytes of VRAM not allocated yet. */
	__u64 (*available_vram)(struct kgd_dev *kgd);
	/* The GPU's free-running clock counter. */
	__u64 (*get_gpu_clock_counter)(struct kgd_dev *kgd);

	/*
	 * mmap through /dev/kfd: @vma is a struct vm_area_struct * whose size
	 * rkfd has checked (doorbell_process_size / one page).  The VM's own
	 * doorbell slice only; the device's MMIO remap (HDP flush) page.
	 */
	int (*mmap_doorbells)(struct kgd_dev *kgd, void *vm, void *vma);
	int (*mmap_mmio_remap)(struct kgd_dev *kgd, void *vma);

	/*
	 * Hardware queues, loaded directly (upstream's no-HWS path,
	 * kfd2kgd hqd_load / hqd_sdma_load).  rkfd builds each queue's MQD
	 * (memory queue descriptor) in its generation's layout (struct
	 * v9_mqd / v10_compute_mqd / v11_compute_mqd and v9_sdma_mqd /
	 * v10_sdma_mqd / v11_sdma_mqd of Linux 7.3's v*_structs.h, filled as
	 * kfd_mqd_manager_v9.c / _v10.c / _v11.c fill them) in kernel memory
	 * and hands it over: a compute queue goes into HQD (@pipe_id,
	 * @queue_id), a slot rkfd allocates (kgd_gpu_info.num_pipe_per_mec,
	 * num_queue_per_pipe); an SDMA queue into the RLC queue its MQD's
	 * sdma_engine_id / sdma_queue_id name.
	 *
	 * @mqd: the MQD, 4-byte aligned, @mqd_size bytes (the generation's
	 * struct size).  Addresses in it are GPU VAs in @vm; the doorbell
	 * offsets (CP_HQD_PQ_DOORBELL_CONTROL.DOORBELL_OFFSET,
	 * SDMA*_DOORBELL_OFFSET.OFFSET) are the doorbell's dword index in the
	 * GPU's doorbell BAR, inside @vm's slice (get_process_doorbell_index;
	 * an index outside it is -EINVAL); VMIDs are 0 (the GPU driver maps
	 * @vm itself).
	 * @wptr: the queue's write pointer (a GPU VA in @vm), which upstream
	 * passes as the user's pointer: the GPU driver reads the initial
	 * write pointer there (GFX9/10 SDMA MQDs carry no poll address).
	 *
	 * hqd_load / hqd_sdma_load: the engine serves the queue from now on.
	 * The MQD is read during the call only, as amdgpu writes the HQD
	 * registers from it.  -EINVAL for an MQD no CP would load
	 * (inconsistent fields, a slot out of range), -EBUSY if the slot is
	 * occupied.
	 * hqd_destroy / hqd_sdma_destroy: preempt the queue and free its
	 * slot; on return the engine no longer touches the queue's memory,
	 * and the queue's read pointer is saved in @mqd as a CP does at
	 * dequeue (cp_hqd_pq_rptr, dwords; sdmax_rlcx_rb_rptr / _hi, bytes),
	 * so loading the MQD again resumes the queue there.  -ETIME if the
	 * scheduler did not answer (hung): the slot is freed all the same
	 * and rkfd must reset.  -EINVAL if the slot holds no queue.
	 * hqd_is_occupied / hqd_sdma_is_occupied: 1 if the slot holds a queue
	 * (compute: one whose ring is at @queue_address), else 0 (upstream
	 * returns bool).
	 * hqd_dump / hqd_sdma_dump (debugfs hqds): the registers of HQD
	 * (@pipe_id, @queue_id) / of RLC queue @queue of SDMA @engine, as
	 * upstream's hqd_dump / hqd_sdma_dump read them, into @dump as
	 * (byte offset, value) pairs (the offset is the register's dword
	 * offset << 2); *@n_regs is set to how many.  rkfd passes room for
	 * KGD_HQD_DUMP_MAX_REGS (@max_regs) instead of upstream's kmalloc'ed
	 * array.  -EINVAL for a slot or engine the GPU does not have (rkfd
	 * skips the rest of that engine, as upstream), -ENOSPC if @max_regs
	 * is too small.  An empty slot's registers are dumped too.
	 */
	int (*hqd_load)(struct kgd_dev *kgd, void *vm, void *mqd, __u32 mqd_size,
			__u32 pipe_id, __u32 queue_id, __u64 wptr);
	int (*hqd_sdma_load)(struct kgd_dev *kgd, void *vm, void *mqd, __u32 mqd_size,
			     __u64 wptr);
	int (*hqd_destroy)(struct kgd_dev *kgd, void *mqd, __u32 mqd_size,
			   __u32 pipe_id, __u32 queue_id);
	int (*hqd_sdma_destroy)(struct kgd_dev *kgd, void *mqd, __u32 mqd_size);
	int (*hqd_is_occupied)(struct kgd_dev *kgd, __u64 queue_address,
			       __u32 pipe_id, __u32 queue_id);
	int (*hqd_sdma_is_occupied)(struct kgd_dev *kgd, void *mqd, __u32 mqd_size);
	int (*hqd_dump)(struct kgd_dev *kgd, __u32 pipe_id, __u32 queue_id,
			__u32 (*dump)[2], __u32 max_regs, __u32 *n_regs);
	int (*hqd_sdma_dump)(struct kgd_dev *kgd, __u32 engine, __u32 queue,
			     __u32 (*dump)[2], __u32 max_regs, __u32 *n_regs);
	/*
	 * Kernel objects the CP reads (upstream amdgpu_amdkfd_alloc_gtt_mem /
	 * amdgpu_amdkfd_free_gtt_mem): @size bytes of zeroed system memory,
	 * pinned, mapped into the kernel at *@cpu_ptr and into the GPU's
	 * kernel address space (GART, VMID 0) at *@gpu_addr; *@mem_obj is
	 * the handle free_gtt_mem takes.  rkfd's HIQ ring, its MQD, runlist
	 * IBs and the preemption fence live there (the HWS path).  -ENOMEM;
	 * -EOPNOTSUPP if the driver has no kernel address space.
	 */
	int (*alloc_gtt_mem)(struct kgd_dev *kgd, __u64 size, void **mem_obj,
			     __u64 *gpu_addr, void **cpu_ptr);
	void (*free_gtt_mem)(struct kgd_dev *kgd, void *mem_obj);
	/*
	 * The HWS's kernel queue (upstream kfd2kgd hiq_mqd_load; the last
	 * argument, the XCC instance, is always 0 here): loads the HIQ's MQD
	 * (@mqd_size bytes of the generation's compute MQD, read during the
	 * call; its addresses are GART addresses of alloc_gtt_mem objects)
	 * into HQD (@pipe_id, @queue_id) of the first MEC, its doorbell at
	 * dword @doorbell_off of the GPU's kernel doorbells.  From then on
	 * the CP's scheduler reads PM4 packets (kfd_pm4_headers_ai.h) from
	 * the ring up to the write pointer rung with ring_kernel_doorbell.
	 * Loading again (after gpu_reset) replaces it.  -EINVAL for an MQD no
	 * CP would load.  rkfd has written the same MQD to the alloc_gtt_mem
	 * object at its cp_mqd_base_addr before the call: a real CP reads it
	 * there (amdgpu's KIQ maps the HIQ by that address), and the GPU
	 * driver may rewrite fields there and in @mqd that only it knows
	 * (the bridge puts the doorbell's index in the doorbell BAR in).
	 * rkfd frees the HIQ's objects (free_gtt_mem) only once it needs no
	 * HIQ; a driver whose CP still has the HIQ mapped unmaps it first.
	 * ring_kernel_doorbell: writes @value (a kernel queue's 64-bit write
	 * pointer, dwords) to kernel doorbell @doorbell_off (upstream
	 * write_kernel_doorbell64 on kfd_get_kernel_doorbell's mapping).  The
	 * CP may process the packets after the call returns (a real GPU) or
	 * before (the virtual GPU): rkfd waits for nothing but the
	 * QUERY_STATUS fences it asks for, as upstream.
	 */
	int (*hiq_mqd_load)(struct kgd_dev *kgd, void *mqd, __u32 mqd_size,
			    __u32 pipe_id, __u32 queue_id, __u32 doorbell_off);
	void (*ring_kernel_doorbell)(struct kgd_dev *kgd, __u32 doorbell_off, __u64 value);
	/*
	 * MES (see above; all NULL: no MES, rkfd falls back to hqd_load).
	 * mes_add_hw_queue: the firmware schedules the queue from now on,
	 * reading its MQD at @input->mqd_addr (during the call: the driver
	 * keeps what it needs) and resuming it at the read pointer the MQD
	 * saved.  -EINVAL for input no firmware takes (an unknown process_id,
	 * an MQD that cannot be read or does not match queue_type and
	 * doorbell_offset, a doorbell outside the process's slice or already
	 * added); -ENOMEM; -ETIME if the
	 * firmware did not answer (hung: rkfd resets the GPU).
	 * mes_remove_hw_queue: preempts the queue the (doorbell_offset,
	 * gang_context_addr) pair names and forgets it; on return the engine
	 * no longer touches the queue's memory and its read pointer is saved
	 * in its MQD (as hqd_destroy), so adding it again resumes it.
	 * -EINVAL if no such queue was added; -ETIME as above (the queue is
	 * forgotten all the same).
	 * mes_suspend_all / mes_resume_all (amdgpu_mes_suspend / _resume):
	 * preempt every added queue, read pointers saved, and let them run
	 * again; added queues stay added.  Adding a queue while suspended
	 * leaves it suspended until mes_resume_all.
	 */
	int (*mes_add_hw_queue)(struct kgd_dev *kgd, const struct kgd_mes_add_queue_input *input);
	int (*mes_remove_hw_queue)(struct kgd_dev *kgd, const struct kgd_mes_remove_queue_input *input);
	int (*mes_suspend_all)(struct kgd_dev *kgd);
	int (*mes_resume_all)(struct kgd_dev *kgd);
	/*
	 * debugfs hang_hws without the HWS (sched_policy 2; upstream refuses
	 * hang_hws there): make the queues' preemption stop answering, as a
	 * hung engine does.  May be NULL (-EOPNOTSUPP).  Under the HWS rkfd
	 * writes upstream's 0x55 packet on its HIQ instead.
	 */
	int (*hws_hang)(struct kgd_dev *kgd);
	/* Reset the GPU: every queue stops with KGD_QUEUE_ERROR_RESET, the scheduler answers again. */
	int (*gpu_reset)(struct kgd_dev *kgd);

	/* debugfs kfd/mem_limit; may be NULL (all zero). */
	void (*get_mem_limits)(struct kgd_dev *kgd, struct kgd_mem_limits *out);
	/*
	 * Reserve / give back @size bytes of the system-memory limit without an
	 * object (amdgpu_amdkfd_reserve_mem_limit / _unreserve_mem_limit with
	 * adev NULL): SVM ranges of a process with XNACK off are accounted as
	 * user pointers (@flags KFD_IOC_ALLOC_MEM_FLAGS_USERPTR; _GTT also
	 * counts against the TTM limit).  -ENOMEM over the limit, nothing
	 * reserved.  Module-wide accounts, as get_mem_limits.  May be NULL (no
	 * accounting).
	 */
	int (*reserve_mem_limit)(struct kgd_dev *kgd, __u64 size, __u32 flags);
	void (*unreserve_mem_limit)(struct kgd_dev *kgd, __u64 size, __u32 flags);
	/*
	 * SVM (see above; all NULL: no SVM).
	 *
	 * svm_alloc_vram: @npages VRAM pages for device-private SVM pages,
	 * their indices in @frames; all or nothing, -ENOMEM when VRAM is
	 * exhausted (rkfd then leaves the data in system memory).  Contents
	 * are undefined until svm_copy fills them.
	 * svm_alloc_vram_block: 2^@order contiguous VRAM pages for one huge
	 * device page, the first at *@first, a multiple of 2^@order; -ENOMEM
	 * when no such block is free (rkfd then uses single pages).  May be
	 * NULL (no huge device pages).
	 * svm_free_vram: gives them back (pages of a block one by one or
	 * together).  Called from dev_pagemap_ops
	 * folio_free, in any context: must not sleep.
	 * svm_copy: the copy engine; copies @npages pages between VRAM page
	 * frames[i] and system page pages[i] (struct page *) in direction
	 * KGD_SVM_COPY_*.  A NULL system page with KGD_SVM_COPY_TO_VRAM
	 * clears the VRAM page (a never-touched page migrating).
	 * svm_map: maps @npages pages at @va into @vm's page table, page i
	 * as ptes[i] (KGD_SVM_PTE_*), replacing what rkfd mapped there
	 * before; entries without KGD_SVM_PTE_VALID leave the page unmapped.
	 * rkfd never maps SVM pages over a memory object's pages.  -EBUSY:
	 * the page table is busy (the bridge: amdgpu holds the VM's root PD);
	 * rkfd retries as for a racing invalidation, then answers -EAGAIN.
	 * svm_unmap: removes the pages of [@va, @va + @npages pages) from @vm's
	 * page table; on return the GPU no longer accesses them.
	 */
	int (*svm_alloc_vram)(struct kgd_dev *kgd, __u64 npages, __u64 *frames);
	int (*svm_alloc_vram_block)(struct kgd_dev *kgd, __u32 order, __u64 *first);
	void (*svm_free_vram)(struct kgd_dev *kgd, const __u64 *frames, __u64 npages);
	int (*svm_copy)(struct kgd_dev *kgd, const __u64 *frames, void *const *pages,
			__u64 npages, __u32 direction);
	int (*svm_map)(struct kgd_dev *kgd, void *vm, __u64 va, __u64 npages,
		       const __u64 *ptes);
	void (*svm_unmap)(struct kgd_dev *kgd, void *vm, __u64 va, __u64 npages);
};

/* kgd2kfd: what the GPU driver calls in rkfd (exported by rkfd.ko). */
struct kfd_dev *kgd2kfd_probe(struct kgd_dev *kgd, struct module *owner,
			      const struct kfd2kgd_calls *calls,
			      const struct kgd_gpu_info *info);
int kgd2kfd_device_init(struct kfd_dev *kfd);
void kgd2kfd_device_exit(struct kfd_dev *kfd);
/*
 * An interrupt from the GPU: @ih_ring_entry points to one interrupt-handler
 * ring entry as the GPU wrote it (as amdgpu passes it to amdkfd): 32 bytes,
 * KGD_IH_RING_ENTRY_DWORDS little-endian dwords in the SOC15 IH format of the GPU's family
 * (soc15_int.h; client and source ids of soc15_ih_clientid.h, SOC21 ones on
 * GC 11+), with the VM's PASID (acquire_vm) in dword 3.  rkfd decodes it
 * as amdkfd's kfd_int_process_v9.c / _v10.c / _v11.c do and ignores what
 * they ignore.  Any non-atomic context; rkfd copies the entry first.
 */
void kgd2kfd_interrupt(struct kfd_dev *kfd, const void *ih_ring_entry);
/*
 * A GPU access at @addr in @vm (the handle acquire_vm returned), whose
 * PASID is @pasid (acquire_vm), found no valid PTE: a retry fault
 * (upstream svm_range_restore_pages, which amdgpu calls with the PASID of
 * the IH entry; rkfd finds the process by it and checks that @vm is one of
 * its VMs).  @flags:
 * KGD_VM_FAULT_WRITE / _EXEC.  0: the page is mapped now (or another
 * fault mapped it), retry the access; -EAGAIN: retry later (a racing
 * invalidation); -EFAULT: fatal (XNACK off, no VMA, no SVM access): the
 * engine stops and raises a VM fault interrupt without the retry bit;
 * -ENOMEM likewise fatal.  Sleeps; the GPU driver must hold none of its
 * locks that kfd2kgd callbacks take (svm_map takes the page-table lock).
 */
int kgd2kfd_svm_fault(struct kfd_dev *kfd, __u32 pasid, void *vm, __u64 addr, __u32 flags);
/*
 * The GPU throttles (upstream kgd2kfd_smi_event_throttle, which amdgpu's
 * SMU code calls from its throttling work): @throttle_bitmask as amdgpu
 * reports it, @counter the driver's count of throttling interrupts (upstream
 * amdkfd reads it back with amdgpu_dpm_get_thermal_throttling_counter; here
 * the driver passes it).  rkfd sends an SMI THERMAL_THROTTLE event.
 * Process context; the GPU driver holds none of its locks that kfd2kgd
 * callbacks take.
 */
void kgd2kfd_smi_event_throttle(struct kfd_dev *kfd, __u64 throttle_bitmask, __u64 counter);
/*
 * An uncorrectable SRAM ECC error (upstream kgd2kfd_set_sram_ecc_flag,
 * which amdgpu's RAS code calls before it resets the GPU): the reset that
 * follows tells each process reset_cause KFD_HW_EXCEPTION_ECC in its
 * HW_EXCEPTION events and sets its MEMORY events with ErrorType
 * KFD_MEM_ERR_SRAM_ECC (kfd_signal_reset_event); kgd2kfd_post_reset clears
 * the flag.  Any context; never sleeps.
 */
void kgd2kfd_set_sram_ecc_flag(struct kfd_dev *kfd);
/*
 * Stop / restart the queues of @mm's process on every GPU (upstream
 * kgd2kfd_quiesce_mm / kgd2kfd_resume_mm, which amdgpu calls around a
 * userptr invalidation; @trigger a KFD_QUEUE_EVICTION_TRIGGER_* for the SMI
 * QUEUE_EVICTION event).  Evictions nest: each quiesce needs a resume.
 * -ESRCH if @mm has no KFD process.  Process context; sleeps.
 */
int kgd2kfd_quiesce_mm(struct mm_struct *mm, __u32 trigger);
int kgd2kfd_resume_mm(struct mm_struct *mm);
/*
 * The restore of @mm's process's userptr memory failed and is tried again
 * later (upstream kfd_smi_event_queue_restore_rescheduled, which amdgpu's
 * restore worker calls): an SMI QUEUE_RESTORE event with the 'R' flag on
 * each GPU of the process.  Nothing if @mm has no KFD process.  Process
 * context.
 */
void kgd2kfd_queue_restore_rescheduled(struct mm_struct *mm);
/*
 * A VM fault of the VM with @pasid (acquire_vm) that the GPU driver's
 * retry-fault handling did not resolve is about to be queued for
 * kgd2kfd_interrupt (upstream kgd2kfd_vmfault_fast_path, which amdgpu's
 * gmc v9 / v12.1 interrupt handlers call for entries of the IH soft ring
 * and ring 1): 1 to drop it (no KFD process has @pasid on this device, or
 * its process already had a fault delivered from this device: upstream's
 * p->gpu_page_fault, per device here), 0 to deliver it (the first; rkfd
 * marks it).  A @pasid past 16 bits is 0.  Any context, including hard
 * IRQ: takes no lock, never sleeps.  The GPU driver does what upstream
 * does besides (the retry CAM's doorbell on a dropped retry fault).
 */
int kgd2kfd_vmfault_fast_path(struct kfd_dev *kfd, __u32 pasid);
/*
 * The GPU is about to be reset (upstream amdgpu_amdkfd_clear_kfd_mapping,
 * which amdgpu_device_gpu_recover calls before amdgpu_amdkfd_pre_reset):
 * every process's mmaps of /dev/kfd of this device's doorbells and MMIO
 * remap page lose their PTEs (upstream kfd_dev_unmap_mapping_range of the
 * KFD_MMAP_TYPE_DOORBELL and _MMIO offsets of the gpu_id; rkfd zaps the
 * whole offset range of each type and gpu_id).  The VMAs stay; a process
 * that touches one afterwards gets SIGBUS, a new mmap maps the slice
 * again.  Nothing before kgd2kfd_device_init.  Process context; takes
 * the kernel's i_mmap_rwsem and page-table locks, no rkfd lock.
 */
void kgd2kfd_clear_mappings(struct kfd_dev *kfd);
/*
 * The userptr memory at GPU VA @va of the process whose thread group id
 * (in the initial PID namespace, pid_nr) is @tgid was unmapped before
 * the memory object was freed (upstream kfd_lookup_process_by_pid +
 * kfd_signal_vm_fault_event_with_userptr, from amdgpu's userptr restore
 * worker with debug_vm_userptr): on every GPU of the process its queues
 * are evicted (upstream kfd_evict_process_device: one more eviction,
 * never ended here, so they stay off the GPU) and its MEMORY events are
 * set with va @va, that GPU's gpu_id and failure.NotPresent = 1.
 * Nothing if @tgid has no KFD process.  Process context; sleeps
 * (preempts the queues).
 */
void kgd2kfd_signal_userptr_fault(__s32 tgid, __u64 va);
/*
 * An eviction fence of @mm's process (context @context_id) had signalling
 * enabled (upstream kgd2kfd_schedule_evict_and_restore_process, from the
 * fence's ->enable_signaling, under the fence's lock: atomic context,
 * never sleeps).  0: rkfd will signal it (eviction scheduled, or already
 * pending for this fence); -EINVAL for a NULL fence, 0 if it is already
 * signalled; -ENODEV if no process of @mm has @context_id.
 */
int kgd2kfd_schedule_evict_and_restore_process(struct mm_struct *mm, __u16 context_id,
					       struct dma_fence *fence);

/*
 * Power management and reset (upstream kfd_device.c; amdgpu calls them from
 * amdgpu_device_suspend/resume, the GPU-recovery path and the partition and
 * scheduler code, through amdgpu_amdkfd.c).  rkfd's kfd_dev is one node, so
 * @node_id must be 0 (-EINVAL otherwise, as upstream for a node id past
 * num_nodes).  Process context, none of the GPU driver's locks held that a
 * kfd2kgd callback takes; each may preempt the device's queues and wait for
 * the engines.  Any order is safe: a repeated call does nothing more, and
 * the calls that return a value give an errno for an order no GPU driver
 * uses instead of upstream's WARN_ONCE.
 *
 * kgd2kfd_suspend: with @suspend_proc, kgd2kfd_suspend_process first; then
 * the device's scheduler stops (upstream dqm->ops.stop: the HWS's or the
 * MES's queues are unmapped).  kgd2kfd_resume: the scheduler starts again
 * (the HIQ is loaded again and SET_RESOURCES sent), then with @resume_proc
 * kgd2kfd_resume_process; -EINVAL if @resume_proc and this device had not
 * suspended the processes.
 * kgd2kfd_suspend_process: the first device to call it locks the KFD (no
 * process may open /dev/kfd: -EINVAL, as upstream's kfd_create_process) and
 * evicts every process's queues (SMI QUEUE_EVICTION, trigger SUSPEND); new
 * queues of an existing process are created evicted until the resume.
 * Once per device: a second call without a resume does nothing.
 * kgd2kfd_resume_process: the last one restores them; -EINVAL if this
 * device had not suspended them.
 * kgd2kfd_pre_reset: SMI GPU_PRE_RESET with @cause (amdgpu_reset_get_desc;
 * may be NULL), kgd2kfd_suspend(kfd, true), then every process using the
 * device gets its HW_EXCEPTION events (whole-GPU reset, memory lost;
 * upstream kfd_signal_reset_event).  -EBUSY if a reset is already under
 * way (nothing done).  kgd2kfd_post_reset: the scheduler starts again, the
 * KFD lock this device held is dropped and SMI GPU_POST_RESET is sent; the
 * processes' queues stay evicted until they exit (as upstream: the reset
 * lost their state).  -EINVAL without a pre_reset.
 * kgd2kfd_check_and_lock_kfd: -EBUSY if the KFD is locked (suspend, reset)
 * or a process uses the device; otherwise locks the device (no process may
 * open /dev/kfd until kgd2kfd_unlock_kfd), for a partition switch.
 * kgd2kfd_unlock_kfd: undoes one check_and_lock_kfd (nothing if none).
 * kgd2kfd_stop_sched / kgd2kfd_start_sched (upstream halt_cpsch /
 * unhalt_cpsch): the HWS's or MES's queues are unmapped and no runlist is
 * sent until start_sched; new queues wait.  Nothing without a scheduler;
 * stopping twice or starting while running does nothing.
 * kgd2kfd_compute_active: 1 if user queues are mapped on the device, else
 * 0 (upstream returns bool; 0 for a bad @node_id).  @suspend_proc and
 * @resume_proc are booleans (0 or not), as upstream's.
 * kgd2kfd_teardown_processes: every process using the device gets its
 * signal events set and SIGBUS (upstream kfd_signal_process_terminate_event); rkfd
 * does not wait for them to exit: device_exit runs only once no process
 * holds the GPU driver's module.
 */
void kgd2kfd_suspend(struct kfd_dev *kfd, int suspend_proc);
int kgd2kfd_resume(struct kfd_dev *kfd, int resume_proc);
void kgd2kfd_suspend_process(struct kfd_dev *kfd);
int kgd2kfd_resume_process(struct kfd_dev *kfd);
int kgd2kfd_pre_reset(struct kfd_dev *kfd, const char *cause);
int kgd2kfd_post_reset(struct kfd_dev *kfd);
int kgd2kfd_check_and_lock_kfd(struct kfd_dev *kfd);
void kgd2kfd_unlock_kfd(struct kfd_dev *kfd);
int kgd2kfd_start_sched(struct kfd_dev *kfd, __u32 node_id);
int kgd2kfd_stop_sched(struct kfd_dev *kfd, __u32 node_id);
int kgd2kfd_compute_active(struct kfd_dev *kfd, __u32 node_id);
void kgd2kfd_teardown_processes(struct kfd_dev *kfd);
/*
 * Moves every SVM page any KFD process holds in this device's VRAM back to
 * system memory (upstream svm_range_evict_svm_bo, which TTM's eviction of
 * the KFD's SVM BOs runs during amdgpu_device_evict_resources; a GPU driver
 * whose SVM VRAM is not evictable by its memory manager calls this before
 * the VRAM is lost: a suspend after kgd2kfd_suspend, hibernation).  Each
 * range keeps its attributes; its pages' location becomes system memory
 * (SMI MIGRATE_START / _END with trigger KFD_MIGRATE_TRIGGER_TTM_EVICTION,
 * per range that had pages there), its GPU mappings are updated as after
 * any migration (XNACK on: unmapped, a later GPU access faults them in
 * again, possibly back into VRAM; XNACK off: the restore remaps them in
 * system memory), and a later prefetch may move them back.  Processes
 * whose address space or KFD state is going away are skipped (their
 * teardown frees or migrates their pages).
 * 0 on return: no SVM page of any KFD process is left in this GPU's VRAM.
 * Otherwise -EBUSY (pages the kernel would not migrate: pinned or busy,
 * after three tries per range) or -ENOMEM (no system memory for them),
 * after trying every process; dmesg names each process and range with
 * the count of pages left.  -EINVAL for a NULL @kfd.  Process context,
 * none of the GPU driver's locks held that a kfd2kgd call takes (svm_copy
 * and svm_free_vram are called); takes each process's SVM locks and
 * mmap_lock (read) in rkfd's order, never Process::inner; sleeps.
 */
int kgd2kfd_svm_evict_vram(struct kfd_dev *kfd);

#endif /* RKFD_KGD_KFD_INTERFACE_H */
