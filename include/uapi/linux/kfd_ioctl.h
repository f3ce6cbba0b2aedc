/* SPDX-License-Identifier: MIT */
/*
 * Copyright 2014 Advanced Micro Devices, Inc. (interface definitions);
 * Copyright 2026 the rkfd authors (this text).
 *
 * Permission is hereby granted, free of charge, to any person obtaining a
 * copy of this software and associated documentation files (the "Software"),
 * to deal in the Software without restriction, including without limitation
 * the rights to use, copy, modify, merge, publish, distribute, sublicense,
 * and/or sell copies of the Software, and to permit persons to whom the
 * Software is furnished to do so, subject to the following conditions:
 *
 * The above copyright notice and this permission notice shall be included in
 * all copies or substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT.  IN NO EVENT SHALL
 * THE COPYRIGHT HOLDER(S) OR AUTHOR(S) BE LIABLE FOR ANY CLAIM, DAMAGES OR
 * OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE,
 * ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR
 * OTHER DEALINGS IN THE SOFTWARE.
 */

/*
 * rkfd: user-space ABI of /dev/kfd (AMD HSA kernel fusion driver).
 *
 * ABI-compatible with the amdkfd interface version 1.23: every ioctl
 * number, structure layout, name and constant value matches, so unchanged
 * ROCm user space builds and runs against it.  Comments mark the data
 * direction as "in" (user -> driver) and "out" (driver -> user).
 */

#ifndef KFD_IOCTL_H_INCLUDED
#define KFD_IOCTL_H_INCLUDED

#include <drm/drm.h>
#include <linux/ioctl.h>

/* ------------------------------------------------------------------ */
/* Interface version (AMDKFD_IOC_GET_VERSION)                          */
/* ------------------------------------------------------------------ */

#define KFD_IOCTL_MAJOR_VERSION 1
#define KFD_IOCTL_MINOR_VERSION 23

/* AMDKFD_IOC_GET_VERSION: reports the version above. */
struct kfd_ioctl_get_version_args {
	__u32 major_version;		/* out */
	__u32 minor_version;		/* out */
};

/* ------------------------------------------------------------------ */
/* User-mode queues                                                    */
/* ------------------------------------------------------------------ */

/* Values of kfd_ioctl_create_queue_args.queue_type. */
#define KFD_IOC_QUEUE_TYPE_COMPUTE		0x0
#define KFD_IOC_QUEUE_TYPE_SDMA			0x1
#define KFD_IOC_QUEUE_TYPE_COMPUTE_AQL		0x2
#define KFD_IOC_QUEUE_TYPE_SDMA_XGMI		0x3
#define KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID	0x4

/* Upper bounds for queue_percentage / queue_priority, minimum ring size. */
#define KFD_MAX_QUEUE_PERCENTAGE	100
#define KFD_MAX_QUEUE_PRIORITY		15
#define KFD_MIN_QUEUE_RING_SIZE		1024

/* AMDKFD_IOC_CREATE_QUEUE: create a user-mode queue on one GPU. */
struct kfd_ioctl_create_queue_args {
	__u64 ring_base_address;	/* in */
	__u64 write_pointer_address;	/* in */
	__u64 read_pointer_address;	/* in */
	__u64 doorbell_offset;		/* out: mmap offset of the doorbell */

	__u32 ring_size;		/* in */
	__u32 gpu_id;			/* in */
	__u32 queue_type;		/* in: KFD_IOC_QUEUE_TYPE_* */
	__u32 queue_percentage;		/* in */
	__u32 queue_priority;		/* in */
	__u32 queue_id;			/* out */

	__u64 eop_buffer_address;	/* in */
	__u64 eop_buffer_size;		/* in */
	__u64 ctx_save_restore_address;	/* in */
	__u32 ctx_save_restore_size;	/* in */
	__u32 ctl_stack_size;		/* in */
	__u32 sdma_engine_id;		/* in: for SDMA_BY_ENG_ID */
	__u32 metadata_ring_size;	/* in */
};

/* AMDKFD_IOC_DESTROY_QUEUE: destroy a queue by id. */
struct kfd_ioctl_destroy_queue_args {
	__u32 queue_id;			/* in */
	__u32 pad;
};

/* AMDKFD_IOC_UPDATE_QUEUE: change ring / percentage / priority of a queue. */
struct kfd_ioctl_update_queue_args {
	__u64 ring_base_address;	/* in */

	__u32 queue_id;			/* in */
	__u32 ring_size;		/* in */
	__u32 queue_percentage;		/* in */
	__u32 queue_priority;		/* in */
};

/* AMDKFD_IOC_SET_CU_MASK: restrict a queue to a set of compute units. */
struct kfd_ioctl_set_cu_mask_args {
	__u32 queue_id;			/* in */
	__u32 num_cu_mask;		/* in: number of mask bits */
	__u64 cu_mask_ptr;		/* in: user pointer to __u32 words */
};

/* AMDKFD_IOC_GET_QUEUE_WAVE_STATE: copy out a queue's control stack. */
struct kfd_ioctl_get_queue_wave_state_args {
	__u64 ctl_stack_address;	/* in */
	__u32 ctl_stack_used_size;	/* out */
	__u32 save_area_used_size;	/* out */
	__u32 queue_id;			/* in */
	__u32 pad;
};

/* AMDKFD_IOC_ALLOC_QUEUE_GWS: attach global wave sync entries to a queue. */
struct kfd_ioctl_alloc_queue_gws_args {
	__u32 queue_id;			/* in */
	__u32 num_gws;			/* in */
	__u32 first_gws;		/* out: first (contiguous) entry */
	__u32 pad;
};

/* ------------------------------------------------------------------ */
/* Per-process memory policy, apertures and clocks                     */
/* ------------------------------------------------------------------ */

/* Values of default_policy / alternate_policy below. */
#define KFD_IOC_CACHE_POLICY_COHERENT 0
#define KFD_IOC_CACHE_POLICY_NONCOHERENT 1

/* Bits of kfd_ioctl_set_memory_policy_args.misc_process_flag. */
#define KFD_PROC_FLAG_MFMA_HIGH_PRECISION (1 << 0)

/* AMDKFD_IOC_SET_MEMORY_POLICY: cache policy and alternate aperture. */
struct kfd_ioctl_set_memory_policy_args {
	__u64 alternate_aperture_base;	/* in */
	__u64 alternate_aperture_size;	/* in */

	__u32 gpu_id;			/* in */
	__u32 default_policy;		/* in */
	__u32 alternate_policy;		/* in */
	__u32 misc_process_flag;	/* in: KFD_PROC_FLAG_* */
};

/* AMDKFD_IOC_GET_CLOCK_COUNTERS: monotonic GPU/CPU/system counters. */
struct kfd_ioctl_get_clock_counters_args {
	__u64 gpu_clock_counter;	/* out */
	__u64 cpu_clock_counter;	/* out */
	__u64 system_clock_counter;	/* out */
	__u64 system_clock_freq;	/* out */

	__u32 gpu_id;			/* in */
	__u32 pad;
};

/* One GPU's LDS/scratch/GPUVM apertures, as returned by the two ioctls below. */
struct kfd_process_device_apertures {
	__u64 lds_base;
	__u64 lds_limit;
	__u64 scratch_base;
	__u64 scratch_limit;
	__u64 gpuvm_base;
	__u64 gpuvm_limit;
	__u32 gpu_id;
	__u32 pad;
};

/* Fixed array size of the old AMDKFD_IOC_GET_PROCESS_APERTURES. */
#define NUM_OF_SUPPORTED_GPUS 7

/* AMDKFD_IOC_GET_PROCESS_APERTURES (old, fixed size; prefer _NEW). */
struct kfd_ioctl_get_process_apertures_args {
	struct kfd_process_device_apertures
			process_apertures[NUM_OF_SUPPORTED_GPUS];	/* out */
	__u32 num_of_nodes;		/* out: 1..NUM_OF_SUPPORTED_GPUS */
	__u32 pad;
};

/* AMDKFD_IOC_GET_PROCESS_APERTURES_NEW: apertures into a user array. */
struct kfd_ioctl_get_process_apertures_new_args {
	__u64 kfd_process_device_apertures_ptr;	/* in: user array */
	__u32 num_of_nodes;		/* in: capacity, out: entries filled */
	__u32 pad;
};

/* AMDKFD_IOC_AVAILABLE_MEMORY: VRAM still available to this process. */
struct kfd_ioctl_get_available_memory_args {
	__u64 available;		/* out: bytes */
	__u32 gpu_id;			/* in */
	__u32 pad;
};

/* AMDKFD_IOC_SET_SCRATCH_BACKING_VA: scratch backing address (dGPU). */
struct kfd_ioctl_set_scratch_backing_va_args {
	__u64 va_addr;			/* in */
	__u32 gpu_id;			/* in */
	__u32 pad;
};

/* AMDKFD_IOC_GET_TILE_CONFIG: tiling configuration; may grow at the end. */
struct kfd_ioctl_get_tile_config_args {
	__u64 tile_config_ptr;		/* in: user array */
	__u64 macro_tile_config_ptr;	/* in: user array */
	__u32 num_tile_configs;		/* in: capacity, out: filled */
	__u32 num_macro_tile_configs;	/* in: capacity, out: filled */

	__u32 gpu_id;			/* in */
	__u32 gb_addr_config;		/* out */
	__u32 num_banks;		/* out */
	__u32 num_ranks;		/* out */
};

/* AMDKFD_IOC_SET_TRAP_HANDLER: trap base / trap memory addresses. */
struct kfd_ioctl_set_trap_handler_args {
	__u64 tba_addr;			/* in */
	__u64 tma_addr;			/* in */
	__u32 gpu_id;			/* in */
	__u32 pad;
};

/* AMDKFD_IOC_ACQUIRE_VM: take over the GPU VM of a DRM render node fd. */
struct kfd_ioctl_acquire_vm_args {
	__u32 drm_fd;			/* in */
	__u32 gpu_id;			/* in */
};

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

/* "No file descriptor" marker. */
#define KFD_INVALID_FD     0xffffffff

/* Event types (kfd_ioctl_create_event_args.event_type), as HSA_EVENTTYPE. */
#define KFD_IOC_EVENT_SIGNAL			0
#define KFD_IOC_EVENT_NODECHANGE		1
#define KFD_IOC_EVENT_DEVICESTATECHANGE		2
#define KFD_IOC_EVENT_HW_EXCEPTION		3
#define KFD_IOC_EVENT_SYSTEM_EVENT		4
#define KFD_IOC_EVENT_DEBUG_EVENT		5
#define KFD_IOC_EVENT_PROFILE_EVENT		6
#define KFD_IOC_EVENT_QUEUE_EVENT		7
#define KFD_IOC_EVENT_MEMORY			8

/* Values of kfd_ioctl_wait_events_args.wait_result. */
#define KFD_IOC_WAIT_RESULT_COMPLETE		0
#define KFD_IOC_WAIT_RESULT_TIMEOUT		1
#define KFD_IOC_WAIT_RESULT_FAIL		2

/* Number of signal event slots in the event page. */
#define KFD_SIGNAL_EVENT_LIMIT			4096

/* kfd_hsa_hw_exception_data.reset_type */
#define KFD_HW_EXCEPTION_WHOLE_GPU_RESET	0
#define KFD_HW_EXCEPTION_PER_ENGINE_RESET	1

/* kfd_hsa_hw_exception_data.reset_cause */
#define KFD_HW_EXCEPTION_GPU_HANG	0
#define KFD_HW_EXCEPTION_ECC		1

/* kfd_hsa_memory_exception_data.ErrorType */
#define KFD_MEM_ERR_NO_RAS		0
#define KFD_MEM_ERR_SRAM_ECC		1
#define KFD_MEM_ERR_POISON_CONSUMED	2
#define KFD_MEM_ERR_GPU_HANG		3

/* AMDKFD_IOC_CREATE_EVENT: create an event; signal events get a page slot. */
struct kfd_ioctl_create_event_args {
	__u64 event_page_offset;	/* out */
	__u32 event_trigger_data;	/* out: signal events only */
	__u32 event_type;		/* in: KFD_IOC_EVENT_* */
	__u32 auto_reset;		/* in */
	__u32 node_id;			/* in: for some event types */
	__u32 event_id;			/* out */
	__u32 event_slot_index;		/* out */
};

/* AMDKFD_IOC_DESTROY_EVENT */
struct kfd_ioctl_destroy_event_args {
	__u32 event_id;			/* in */
	__u32 pad;
};

/* AMDKFD_IOC_SET_EVENT */
struct kfd_ioctl_set_event_args {
	__u32 event_id;			/* in */
	__u32 pad;
};

/* AMDKFD_IOC_RESET_EVENT */
struct kfd_ioctl_reset_event_args {
	__u32 event_id;			/* in */
	__u32 pad;
};

/* Cause bits of a GPU memory fault (kfd_hsa_memory_exception_data.failure). */
struct kfd_memory_exception_failure {
	__u32 NotPresent;
	__u32 ReadOnly;
	__u32 NoExecute;
	__u32 imprecise;
};

/* Payload of a KFD_IOC_EVENT_MEMORY event. */
struct kfd_hsa_memory_exception_data {
	struct kfd_memory_exception_failure failure;
	__u64 va;
	__u32 gpu_id;
	__u32 ErrorType;		/* KFD_MEM_ERR_* */
};

/* Payload of a KFD_IOC_EVENT_HW_EXCEPTION event. */
struct kfd_hsa_hw_exception_data {
	__u32 reset_type;		/* KFD_HW_EXCEPTION_*_RESET */
	__u32 reset_cause;		/* KFD_HW_EXCEPTION_GPU_HANG / _ECC */
	__u32 memory_lost;
	__u32 gpu_id;
};

/* Payload of a signal event. */
struct kfd_hsa_signal_event_data {
	__u64 last_event_age;		/* in/out */
};

/* One element of the AMDKFD_IOC_WAIT_EVENTS array. */
struct kfd_event_data {
	union {
		struct kfd_hsa_memory_exception_data memory_exception_data;	/* out */
		struct kfd_hsa_hw_exception_data hw_exception_data;		/* out */
		struct kfd_hsa_signal_event_data signal_event_data;		/* in/out */
	};
	__u64 kfd_event_data_ext;	/* pointer reserved for extensions */
	__u32 event_id;			/* in */
	__u32 pad;
};

/* AMDKFD_IOC_WAIT_EVENTS: wait for any/all of an array of events. */
struct kfd_ioctl_wait_events_args {
	__u64 events_ptr;		/* in: struct kfd_event_data[] */
	__u32 num_events;		/* in */
	__u32 wait_for_all;		/* in */
	__u32 timeout;			/* in: milliseconds */
	__u32 wait_result;		/* out: KFD_IOC_WAIT_RESULT_* */
};

/* ------------------------------------------------------------------ */
/* GPU memory: allocation, mapping, dma-buf                            */
/* ------------------------------------------------------------------ */

/* kfd_ioctl_alloc_memory_of_gpu_args.flags: memory kind (low bits) ... */
#define KFD_IOC_ALLOC_MEM_FLAGS_VRAM		(1 << 0)
#define KFD_IOC_ALLOC_MEM_FLAGS_GTT		(1 << 1)
#define KFD_IOC_ALLOC_MEM_FLAGS_USERPTR		(1 << 2)
#define KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL	(1 << 3)
#define KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP	(1 << 4)
/* ... and attributes (high bits). */
#define KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE	(1 << 31)
#define KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE	(1 << 30)
#define KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC		(1 << 29)
#define KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE	(1 << 28)
#define KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM	(1 << 27)
#define KFD_IOC_ALLOC_MEM_FLAGS_COHERENT	(1 << 26)
#define KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED	(1 << 25)
#define KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT	(1 << 24)
#define KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS	(1 << 23)

/* AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: allocate a buffer at a fixed GPU VA. */
struct kfd_ioctl_alloc_memory_of_gpu_args {
	__u64 va_addr;			/* in */
	__u64 size;			/* in: bytes */
	__u64 handle;			/* out */
	__u64 mmap_offset;		/* in: CPU address (userptr); out: mmap offset */
	__u32 gpu_id;			/* in */
	__u32 flags;			/* in: KFD_IOC_ALLOC_MEM_FLAGS_* */
};

/* AMDKFD_IOC_FREE_MEMORY_OF_GPU */
struct kfd_ioctl_free_memory_of_gpu_args {
	__u64 handle;			/* in */
};

/* AMDKFD_IOC_MAP_MEMORY_TO_GPU: map on a list of GPUs; resumable via n_success. */
struct kfd_ioctl_map_memory_to_gpu_args {
	__u64 handle;			/* in */
	__u64 device_ids_array_ptr;	/* in: __u32 gpu_id[] */
	__u32 n_devices;		/* in */
	__u32 n_success;		/* in/out: devices done so far */
};

/* AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU: same shape as the map call. */
struct kfd_ioctl_unmap_memory_from_gpu_args {
	__u64 handle;			/* in */
	__u64 device_ids_array_ptr;	/* in: __u32 gpu_id[] */
	__u32 n_devices;		/* in */
	__u32 n_success;		/* in/out */
};

/* AMDKFD_IOC_GET_DMABUF_INFO: size, owner GPU and metadata of a dma-buf. */
struct kfd_ioctl_get_dmabuf_info_args {
	__u64 size;			/* out */
	__u64 metadata_ptr;		/* in */
	__u32 metadata_size;		/* in: buffer size, out: metadata size */
	__u32 gpu_id;			/* out */
	__u32 flags;			/* out: KFD_IOC_ALLOC_MEM_FLAGS_* */
	__u32 dmabuf_fd;		/* in */
};

/* AMDKFD_IOC_IMPORT_DMABUF: import a dma-buf at a GPU VA. */
struct kfd_ioctl_import_dmabuf_args {
	__u64 va_addr;			/* in */
	__u64 handle;			/* out */
	__u32 gpu_id;			/* in */
	__u32 dmabuf_fd;		/* in */
};

/* AMDKFD_IOC_EXPORT_DMABUF: export a buffer handle as a dma-buf fd. */
struct kfd_ioctl_export_dmabuf_args {
	__u64 handle;			/* in */
	__u32 flags;			/* in */
	__u32 dmabuf_fd;		/* out */
};

/* Byte offsets of registers inside the MMIO_REMAP page. */
enum kfd_mmio_remap {
	KFD_MMIO_REMAP_HDP_MEM_FLUSH_CNTL = 0,
	KFD_MMIO_REMAP_HDP_REG_FLUSH_CNTL = 4,
};

/* ------------------------------------------------------------------ */
/* SMI (system management interface) event stream                      */
/* ------------------------------------------------------------------ */

/* SMI event ids; KFD_SMI_EVENT_ALL_PROCESS is a privileged "all pids" bit. */
enum kfd_smi_event {
	KFD_SMI_EVENT_NONE = 0,
	KFD_SMI_EVENT_VMFAULT = 1,
	KFD_SMI_EVENT_THERMAL_THROTTLE = 2,
	KFD_SMI_EVENT_GPU_PRE_RESET = 3,
	KFD_SMI_EVENT_GPU_POST_RESET = 4,
	KFD_SMI_EVENT_MIGRATE_START = 5,
	KFD_SMI_EVENT_MIGRATE_END = 6,
	KFD_SMI_EVENT_PAGE_FAULT_START = 7,
	KFD_SMI_EVENT_PAGE_FAULT_END = 8,
	KFD_SMI_EVENT_QUEUE_EVICTION = 9,
	KFD_SMI_EVENT_QUEUE_RESTORE = 10,
	KFD_SMI_EVENT_UNMAP_FROM_GPU = 11,
	KFD_SMI_EVENT_PROCESS_START = 12,
	KFD_SMI_EVENT_PROCESS_END = 13,
	KFD_SMI_EVENT_ALL_PROCESS = 64
};

/* Trigger field of migrate start/end events. */
enum KFD_MIGRATE_TRIGGERS {
	KFD_MIGRATE_TRIGGER_PREFETCH,
	KFD_MIGRATE_TRIGGER_PAGEFAULT_GPU,
	KFD_MIGRATE_TRIGGER_PAGEFAULT_CPU,
	KFD_MIGRATE_TRIGGER_TTM_EVICTION
};

/* Trigger field of queue eviction events. */
enum KFD_QUEUE_EVICTION_TRIGGERS {
	KFD_QUEUE_EVICTION_TRIGGER_SVM,
	KFD_QUEUE_EVICTION_TRIGGER_USERPTR,
	KFD_QUEUE_EVICTION_TRIGGER_TTM,
	KFD_QUEUE_EVICTION_TRIGGER_SUSPEND,
	KFD_QUEUE_EVICTION_CRIU_CHECKPOINT,
	KFD_QUEUE_EVICTION_CRIU_RESTORE
};

/* Trigger field of unmap-from-GPU events. */
enum KFD_SVM_UNMAP_TRIGGERS {
	KFD_SVM_UNMAP_TRIGGER_MMU_NOTIFY,
	KFD_SVM_UNMAP_TRIGGER_MMU_NOTIFY_MIGRATE,
	KFD_SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU
};

/* Event mask bit written to the SMI fd; maximum length of one event line. */
#define KFD_SMI_EVENT_MASK_FROM_INDEX(i) (1ULL << ((i) - 1))
#define KFD_SMI_EVENT_MSG_SIZE	96

/* AMDKFD_IOC_SMI_EVENTS: open an fd that streams SMI event text lines. */
struct kfd_ioctl_smi_events_args {
	__u32 gpuid;			/* in */
	__u32 anon_fd;			/* out */
};

/*
 * printf/sscanf formats of the SMI event lines (after the event id).
 * Times are ns since boot, addresses and sizes in pages, node/from/to
 * are gpu ids (0 = system memory).
 */
#define KFD_EVENT_FMT_UPDATE_GPU_RESET(reset_seq_num, reset_cause)\
		"%x %s\n", (reset_seq_num), (reset_cause)

#define KFD_EVENT_FMT_THERMAL_THROTTLING(bitmask, counter)\
		"%llx:%llx\n", (bitmask), (counter)

#define KFD_EVENT_FMT_VMFAULT(pid, task_name)\
		"%x:%s\n", (pid), (task_name)

#define KFD_EVENT_FMT_PAGEFAULT_START(ns, pid, addr, node, rw)\
		"%lld -%d @%lx(%x) %c\n", (ns), (pid), (addr), (node), (rw)

#define KFD_EVENT_FMT_PAGEFAULT_END(ns, pid, addr, node, migrate_update)\
		"%lld -%d @%lx(%x) %c\n", (ns), (pid), (addr), (node), (migrate_update)

#define KFD_EVENT_FMT_MIGRATE_START(ns, pid, start, size, from, to, prefetch_loc,\
		preferred_loc, migrate_trigger)\
		"%lld -%d @%lx(%lx) %x->%x %x:%x %d\n", (ns), (pid), (start), (size),\
		(from), (to), (prefetch_loc), (preferred_loc), (migrate_trigger)

#define KFD_EVENT_FMT_MIGRATE_END(ns, pid, start, size, from, to, migrate_trigger, error_code) \
		"%lld -%d @%lx(%lx) %x->%x %d %d\n", (ns), (pid), (start), (size),\
		(from), (to), (migrate_trigger), (error_code)

#define KFD_EVENT_FMT_QUEUE_EVICTION(ns, pid, node, evict_trigger)\
		"%lld -%d %x %d\n", (ns), (pid), (node), (evict_trigger)

#define KFD_EVENT_FMT_QUEUE_RESTORE(ns, pid, node, rescheduled)\
		"%lld -%d %x %c\n", (ns), (pid), (node), (rescheduled)

#define KFD_EVENT_FMT_UNMAP_FROM_GPU(ns, pid, addr, size, node, unmap_trigger)\
		"%lld -%d @%lx(%lx) %x %d\n", (ns), (pid), (addr), (size),\
		(node), (unmap_trigger)

#define KFD_EVENT_FMT_PROCESS(pid, task_name)\
		"%x %s\n", (pid), (task_name)

/* ------------------------------------------------------------------ */
/* CRIU: checkpoint / restore of a KFD process (AMDKFD_IOC_CRIU_OP)    */
/* ------------------------------------------------------------------ */

/* kfd_ioctl_criu_args.op; PROCESS_INFO leaves queues evicted until UNPAUSE. */
enum kfd_criu_op {
	KFD_CRIU_OP_PROCESS_INFO,
	KFD_CRIU_OP_CHECKPOINT,
	KFD_CRIU_OP_UNPAUSE,
	KFD_CRIU_OP_RESTORE,
	KFD_CRIU_OP_RESUME,
};

/* AMDKFD_IOC_CRIU_OP: one step of a checkpoint or a restore. */
struct kfd_ioctl_criu_args {
	__u64 devices;			/* in/out: struct kfd_criu_device_bucket[] */
	__u64 bos;			/* in/out: struct kfd_criu_bo_bucket[] */
	__u64 priv_data;		/* in/out: opaque driver data */
	__u64 priv_data_size;		/* in/out: bytes */
	__u32 num_devices;		/* in/out */
	__u32 num_bos;			/* in/out */
	__u32 num_objects;		/* in/out: opaque object count */
	__u32 pid;			/* in/out */
	__u32 op;			/* in: enum kfd_criu_op */
};

/* CRIU: one GPU of the checkpointed process. */
struct kfd_criu_device_bucket {
	__u32 user_gpu_id;
	__u32 actual_gpu_id;
	__u32 drm_fd;
	__u32 pad;
};

/* CRIU: one buffer object of the checkpointed process. */
struct kfd_criu_bo_bucket {
	__u64 addr;
	__u64 size;
	__u64 offset;
	__u64 restored_offset;		/* out on restore */
	__u32 gpu_id;			/* user gpu id */
	__u32 alloc_flags;
	__u32 dmabuf_fd;
	__u32 pad;
};

/* ------------------------------------------------------------------ */
/* SVM: shared virtual memory attributes (AMDKFD_IOC_SVM)              */
/* ------------------------------------------------------------------ */

/* Flag bits for KFD_IOCTL_SVM_ATTR_SET_FLAGS / _CLR_FLAGS. */
#define KFD_IOCTL_SVM_FLAG_HOST_ACCESS 0x00000001
#define KFD_IOCTL_SVM_FLAG_COHERENT    0x00000002
#define KFD_IOCTL_SVM_FLAG_HIVE_LOCAL  0x00000004
#define KFD_IOCTL_SVM_FLAG_GPU_RO      0x00000008
#define KFD_IOCTL_SVM_FLAG_GPU_EXEC    0x00000010
#define KFD_IOCTL_SVM_FLAG_GPU_READ_MOSTLY     0x00000020
#define KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED   0x00000040
#define KFD_IOCTL_SVM_FLAG_EXT_COHERENT        0x00000080

/* kfd_ioctl_svm_args.op */
enum kfd_ioctl_svm_op {
	KFD_IOCTL_SVM_OP_SET_ATTR,
	KFD_IOCTL_SVM_OP_GET_ATTR
};

/* Non-GPU values for the preferred / prefetch location attributes. */
enum kfd_ioctl_svm_location {
	KFD_IOCTL_SVM_LOCATION_SYSMEM = 0,
	KFD_IOCTL_SVM_LOCATION_UNDEFINED = 0xffffffff
};

/* kfd_ioctl_svm_attribute.type */
enum kfd_ioctl_svm_attr_type {
	KFD_IOCTL_SVM_ATTR_PREFERRED_LOC,
	KFD_IOCTL_SVM_ATTR_PREFETCH_LOC,
	KFD_IOCTL_SVM_ATTR_ACCESS,
	KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE,
	KFD_IOCTL_SVM_ATTR_NO_ACCESS,
	KFD_IOCTL_SVM_ATTR_SET_FLAGS,
	KFD_IOCTL_SVM_ATTR_CLR_FLAGS,
	KFD_IOCTL_SVM_ATTR_GRANULARITY
};

/* One (type, value) attribute pair of an SVM call. */
struct kfd_ioctl_svm_attribute {
	__u32 type;			/* enum kfd_ioctl_svm_attr_type */
	__u32 value;
};

/* AMDKFD_IOC_SVM: set or query attributes of a VA range. */
struct kfd_ioctl_svm_args {
	__u64 start_addr;
	__u64 size;
	__u32 op;			/* enum kfd_ioctl_svm_op */
	__u32 nattr;
	struct kfd_ioctl_svm_attribute attrs[];	/* nattr entries */
};

/* AMDKFD_IOC_SET_XNACK_MODE: <0 query, 0 disable, >0 enable; returns mode. */
struct kfd_ioctl_set_xnack_mode_args {
	__s32 xnack_enabled;		/* in/out */
};

/* ------------------------------------------------------------------ */
/* Debugger (AMDKFD_IOC_RUNTIME_ENABLE, AMDKFD_IOC_DBG_TRAP)           */
/* ------------------------------------------------------------------ */

/* How launch_override.enable_mask combines with the current setting. */
enum kfd_dbg_trap_override_mode {
	KFD_DBG_TRAP_OVERRIDE_OR = 0,
	KFD_DBG_TRAP_OVERRIDE_REPLACE = 1
};

/* Hardware exceptions that can be made to raise a trap. */
enum kfd_dbg_trap_mask {
	KFD_DBG_TRAP_MASK_FP_INVALID = 1,
	KFD_DBG_TRAP_MASK_FP_INPUT_DENORMAL = 2,
	KFD_DBG_TRAP_MASK_FP_DIVIDE_BY_ZERO = 4,
	KFD_DBG_TRAP_MASK_FP_OVERFLOW = 8,
	KFD_DBG_TRAP_MASK_FP_UNDERFLOW = 16,
	KFD_DBG_TRAP_MASK_FP_INEXACT = 32,
	KFD_DBG_TRAP_MASK_INT_DIVIDE_BY_ZERO = 64,
	KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH = 128,
	KFD_DBG_TRAP_MASK_DBG_MEMORY_VIOLATION = 256,
	KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START = (1 << 30),
	KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_END = (1 << 31)
};

/* launch_mode.launch_mode */
enum kfd_dbg_trap_wave_launch_mode {
	KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL = 0,
	KFD_DBG_TRAP_WAVE_LAUNCH_MODE_HALT = 1,
	KFD_DBG_TRAP_WAVE_LAUNCH_MODE_DEBUG = 3
};

/* set_node_address_watch.mode */
enum kfd_dbg_trap_address_watch_mode {
	KFD_DBG_TRAP_ADDRESS_WATCH_MODE_READ = 0,
	KFD_DBG_TRAP_ADDRESS_WATCH_MODE_NONREAD = 1,
	KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ATOMIC = 2,
	KFD_DBG_TRAP_ADDRESS_WATCH_MODE_ALL = 3
};

/* set_flags.flags */
enum kfd_dbg_trap_flags {
	KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP = 1,
	KFD_DBG_TRAP_FLAG_SINGLE_ALU_OP = 2,
	KFD_DBG_TRAP_FLAG_LDS_OUT_OF_ADDR_RANGE = 4
};

/* Exception codes: 1..31 per queue, 32..47 per device, 48.. per process. */
enum kfd_dbg_trap_exception_code {
	EC_NONE = 0,
	EC_QUEUE_WAVE_ABORT = 1,
	EC_QUEUE_WAVE_TRAP = 2,
	EC_QUEUE_WAVE_MATH_ERROR = 3,
	EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION = 4,
	EC_QUEUE_WAVE_MEMORY_VIOLATION = 5,
	EC_QUEUE_WAVE_APERTURE_VIOLATION = 6,
	EC_QUEUE_PACKET_DISPATCH_DIM_INVALID = 16,
	EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID = 17,
	EC_QUEUE_PACKET_DISPATCH_CODE_INVALID = 18,
	EC_QUEUE_PACKET_RESERVED = 19,
	EC_QUEUE_PACKET_UNSUPPORTED = 20,
	EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID = 21,
	EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID = 22,
	EC_QUEUE_PACKET_VENDOR_UNSUPPORTED = 23,
	EC_QUEUE_PREEMPTION_ERROR = 30,
	EC_QUEUE_NEW = 31,
	EC_DEVICE_QUEUE_DELETE = 32,
	EC_DEVICE_MEMORY_VIOLATION = 33,
	EC_DEVICE_RAS_ERROR = 34,
	EC_DEVICE_FATAL_HALT = 35,
	EC_DEVICE_NEW = 36,
	EC_PROCESS_RUNTIME = 48,
	EC_PROCESS_DEVICE_REMOVE = 49,
	EC_MAX
};

/* 64-bit exception mask bit of an exception code. */
#define KFD_EC_MASK(ecode)	(1ULL << (ecode - 1))

/* All queue-, device-, process- and packet-class exception bits. */
#define KFD_EC_MASK_QUEUE	(KFD_EC_MASK(EC_QUEUE_WAVE_ABORT) |			\
				 KFD_EC_MASK(EC_QUEUE_WAVE_TRAP) |			\
				 KFD_EC_MASK(EC_QUEUE_WAVE_MATH_ERROR) |		\
				 KFD_EC_MASK(EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION) |	\
				 KFD_EC_MASK(EC_QUEUE_WAVE_MEMORY_VIOLATION) |		\
				 KFD_EC_MASK(EC_QUEUE_WAVE_APERTURE_VIOLATION) |	\
				 KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_DIM_INVALID) |	\
				 KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID) | \
				 KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_CODE_INVALID) |	\
				 KFD_EC_MASK(EC_QUEUE_PACKET_RESERVED) |		\
				 KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED) |		\
				 KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID) | \
				 KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID) | \
				 KFD_EC_MASK(EC_QUEUE_PACKET_VENDOR_UNSUPPORTED) |	\
				 KFD_EC_MASK(EC_QUEUE_PREEMPTION_ERROR) |		\
				 KFD_EC_MASK(EC_QUEUE_NEW))
#define KFD_EC_MASK_DEVICE	(KFD_EC_MASK(EC_DEVICE_QUEUE_DELETE) |			\
				 KFD_EC_MASK(EC_DEVICE_RAS_ERROR) |			\
				 KFD_EC_MASK(EC_DEVICE_FATAL_HALT) |			\
				 KFD_EC_MASK(EC_DEVICE_MEMORY_VIOLATION) |		\
				 KFD_EC_MASK(EC_DEVICE_NEW))
#define KFD_EC_MASK_PROCESS	(KFD_EC_MASK(EC_PROCESS_RUNTIME) |			\
				 KFD_EC_MASK(EC_PROCESS_DEVICE_REMOVE))
#define KFD_EC_MASK_PACKET	(KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_DIM_INVALID) |	\
				 KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID) | \
				 KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_CODE_INVALID) |	\
				 KFD_EC_MASK(EC_QUEUE_PACKET_RESERVED) |		\
				 KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED) |		\
				 KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID) | \
				 KFD_EC_MASK(EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID) | \
				 KFD_EC_MASK(EC_QUEUE_PACKET_VENDOR_UNSUPPORTED))

/* Classify an exception code. */
#define KFD_DBG_EC_IS_VALID(ecode) (ecode > EC_NONE && ecode < EC_MAX)
#define KFD_DBG_EC_TYPE_IS_QUEUE(ecode)					\
			(KFD_DBG_EC_IS_VALID(ecode) && !!(KFD_EC_MASK(ecode) & KFD_EC_MASK_QUEUE))
#define KFD_DBG_EC_TYPE_IS_DEVICE(ecode)				\
			(KFD_DBG_EC_IS_VALID(ecode) && !!(KFD_EC_MASK(ecode) & KFD_EC_MASK_DEVICE))
#define KFD_DBG_EC_TYPE_IS_PROCESS(ecode)				\
			(KFD_DBG_EC_IS_VALID(ecode) && !!(KFD_EC_MASK(ecode) & KFD_EC_MASK_PROCESS))
#define KFD_DBG_EC_TYPE_IS_PACKET(ecode)				\
			(KFD_DBG_EC_IS_VALID(ecode) && !!(KFD_EC_MASK(ecode) & KFD_EC_MASK_PACKET))

/* kfd_runtime_info.runtime_state */
enum kfd_dbg_runtime_state {
	DEBUG_RUNTIME_STATE_DISABLED = 0,
	DEBUG_RUNTIME_STATE_ENABLED = 1,
	DEBUG_RUNTIME_STATE_ENABLED_BUSY = 2,
	DEBUG_RUNTIME_STATE_ENABLED_ERROR = 3
};

/* Runtime state shared with the debugger (trap enable, exception info). */
struct kfd_runtime_info {
	__u64 r_debug;
	__u32 runtime_state;		/* enum kfd_dbg_runtime_state */
	__u32 ttmp_setup;
};

/* Bits of kfd_ioctl_runtime_enable_args.mode_mask. */
#define KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK	1
#define KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK	2

/* AMDKFD_IOC_RUNTIME_ENABLE: ROCr announces (or withdraws) itself. */
struct kfd_ioctl_runtime_enable_args {
	__u64 r_debug;			/* in: user r_debug pointer */
	__u32 mode_mask;		/* in: KFD_RUNTIME_ENABLE_MODE_* */
	__u32 capabilities_mask;	/* out */
};

/* One queue in a KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT buffer. */
struct kfd_queue_snapshot_entry {
	__u64 exception_status;
	__u64 ring_base_address;
	__u64 write_pointer_address;
	__u64 read_pointer_address;
	__u64 ctx_save_restore_address;
	__u32 queue_id;
	__u32 gpu_id;
	__u32 ring_size;
	__u32 queue_type;
	__u32 ctx_save_restore_area_size;
	__u32 reserved;
};

/* One device in a KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT buffer. */
struct kfd_dbg_device_info_entry {
	__u64 exception_status;
	__u64 lds_base;
	__u64 lds_limit;
	__u64 scratch_base;
	__u64 scratch_limit;
	__u64 gpuvm_base;
	__u64 gpuvm_limit;
	__u32 gpu_id;
	__u32 location_id;
	__u32 vendor_id;
	__u32 device_id;
	__u32 revision_id;
	__u32 subsystem_vendor_id;
	__u32 subsystem_device_id;
	__u32 fw_version;
	__u32 gfx_target_version;
	__u32 simd_count;
	__u32 max_waves_per_simd;
	__u32 array_count;
	__u32 simd_arrays_per_engine;
	__u32 num_xcc;
	__u32 capability;
	__u32 debug_prop;
	__u32 capability2;
	__u32 pad;
};

/* Per-queue status bits returned by suspend/resume queues. */
#define KFD_DBG_QUEUE_ERROR_BIT		30
#define KFD_DBG_QUEUE_INVALID_BIT	31
#define KFD_DBG_QUEUE_ERROR_MASK	(1 << KFD_DBG_QUEUE_ERROR_BIT)
#define KFD_DBG_QUEUE_INVALID_MASK	(1 << KFD_DBG_QUEUE_INVALID_BIT)

/* Header the driver writes at the start of a queue's context save area. */
struct kfd_context_save_area_header {
	struct {
		__u32 control_stack_offset;
		__u32 control_stack_size;
		__u32 wave_state_offset;
		__u32 wave_state_size;
	} wave_state;
	__u32 debug_offset;
	__u32 debug_size;
	__u64 err_payload_addr;
	__u32 err_event_id;
	__u32 reserved1;
};

/* kfd_ioctl_dbg_trap_args.op; "HW" ops need AMDKFD_IOC_RUNTIME_ENABLE first. */
enum kfd_dbg_trap_operations {
	KFD_IOC_DBG_TRAP_ENABLE = 0,
	KFD_IOC_DBG_TRAP_DISABLE = 1,
	KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT = 2,
	KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED = 3,
	KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE = 4,	/* HW */
	KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE = 5,	/* HW */
	KFD_IOC_DBG_TRAP_SUSPEND_QUEUES = 6,		/* HW */
	KFD_IOC_DBG_TRAP_RESUME_QUEUES = 7,		/* HW */
	KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH = 8,	/* HW */
	KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH = 9,	/* HW */
	KFD_IOC_DBG_TRAP_SET_FLAGS = 10,
	KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT = 11,
	KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO = 12,
	KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT = 13,
	KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT = 14
};

/* KFD_IOC_DBG_TRAP_ENABLE: start debugging; dbg_fd is poked on exceptions. */
struct kfd_ioctl_dbg_trap_enable_args {
	__u64 exception_mask;		/* in */
	__u64 rinfo_ptr;		/* in: struct kfd_runtime_info */
	__u32 rinfo_size;		/* in/out */
	__u32 dbg_fd;			/* in */
};

/* KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT: raise exceptions to the runtime. */
struct kfd_ioctl_dbg_trap_send_runtime_event_args {
	__u64 exception_mask;		/* in */
	__u32 gpu_id;			/* in */
	__u32 queue_id;			/* in */
};

/* KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED: exceptions reported to debugger. */
struct kfd_ioctl_dbg_trap_set_exceptions_enabled_args {
	__u64 exception_mask;		/* in */
};

/* KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE: enable HW exception traps. */
struct kfd_ioctl_dbg_trap_set_wave_launch_override_args {
	__u32 override_mode;		/* in: enum kfd_dbg_trap_override_mode */
	__u32 enable_mask;		/* in: wanted, out: previous */
	__u32 support_request_mask;	/* in: to check, out: supported */
	__u32 pad;
};

/* KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE */
struct kfd_ioctl_dbg_trap_set_wave_launch_mode_args {
	__u32 launch_mode;		/* in: enum kfd_dbg_trap_wave_launch_mode */
	__u32 pad;
};

/* KFD_IOC_DBG_TRAP_SUSPEND_QUEUES: returns the number suspended. */
struct kfd_ioctl_dbg_trap_suspend_queues_args {
	__u64 exception_mask;		/* in: exceptions to clear */
	__u64 queue_array_ptr;		/* in/out: __u32 queue ids, status bits */
	__u32 num_queues;		/* in */
	__u32 grace_period;		/* in: units of 1K GPU clocks */
};

/* KFD_IOC_DBG_TRAP_RESUME_QUEUES: returns the number resumed. */
struct kfd_ioctl_dbg_trap_resume_queues_args {
	__u64 queue_array_ptr;		/* in/out: __u32 queue ids, status bits */
	__u32 num_queues;		/* in */
	__u32 pad;
};

/* KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH */
struct kfd_ioctl_dbg_trap_set_node_address_watch_args {
	__u64 address;			/* in */
	__u32 mode;			/* in: enum kfd_dbg_trap_address_watch_mode */
	__u32 mask;			/* in */
	__u32 gpu_id;			/* in */
	__u32 id;			/* out: watch id */
};

/* KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH */
struct kfd_ioctl_dbg_trap_clear_node_address_watch_args {
	__u32 gpu_id;			/* in */
	__u32 id;			/* in */
};

/* KFD_IOC_DBG_TRAP_SET_FLAGS */
struct kfd_ioctl_dbg_trap_set_flags_args {
	__u32 flags;			/* in: new, out: previous (kfd_dbg_trap_flags) */
	__u32 pad;
};

/* KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT: next raised exception(s); -EAGAIN if none. */
struct kfd_ioctl_dbg_trap_query_debug_event_args {
	__u64 exception_mask;		/* in: to clear, out: raised */
	__u32 gpu_id;			/* out */
	__u32 queue_id;			/* out */
};

/* KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO: details of one raised exception. */
struct kfd_ioctl_dbg_trap_query_exception_info_args {
	__u64 info_ptr;			/* in */
	__u32 info_size;		/* in/out: bytes */
	__u32 source_id;		/* in: gpu or queue id */
	__u32 exception_code;		/* in */
	__u32 clear_exception;		/* in: 0 or 1 */
};

/* KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT: kfd_queue_snapshot_entry array. */
struct kfd_ioctl_dbg_trap_queue_snapshot_args {
	__u64 exception_mask;		/* in: exceptions to clear */
	__u64 snapshot_buf_ptr;		/* in */
	__u32 num_queues;		/* in: capacity, out: existing */
	__u32 entry_size;		/* in: stride, out: bytes filled */
};

/* KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT: kfd_dbg_device_info_entry array. */
struct kfd_ioctl_dbg_trap_device_snapshot_args {
	__u64 exception_mask;		/* in: exceptions to clear */
	__u64 snapshot_buf_ptr;		/* in */
	__u32 num_devices;		/* in: capacity, out: existing */
	__u32 entry_size;		/* in: stride, out: bytes filled */
};

/* AMDKFD_IOC_DBG_TRAP: debug operation on process pid, selected by op. */
struct kfd_ioctl_dbg_trap_args {
	__u32 pid;
	__u32 op;			/* enum kfd_dbg_trap_operations */

	union {
		struct kfd_ioctl_dbg_trap_enable_args enable;
		struct kfd_ioctl_dbg_trap_send_runtime_event_args send_runtime_event;
		struct kfd_ioctl_dbg_trap_set_exceptions_enabled_args set_exceptions_enabled;
		struct kfd_ioctl_dbg_trap_set_wave_launch_override_args launch_override;
		struct kfd_ioctl_dbg_trap_set_wave_launch_mode_args launch_mode;
		struct kfd_ioctl_dbg_trap_suspend_queues_args suspend_queues;
		struct kfd_ioctl_dbg_trap_resume_queues_args resume_queues;
		struct kfd_ioctl_dbg_trap_set_node_address_watch_args set_node_address_watch;
		struct kfd_ioctl_dbg_trap_clear_node_address_watch_args clear_node_address_watch;
		struct kfd_ioctl_dbg_trap_set_flags_args set_flags;
		struct kfd_ioctl_dbg_trap_query_debug_event_args query_debug_event;
		struct kfd_ioctl_dbg_trap_query_exception_info_args query_exception_info;
		struct kfd_ioctl_dbg_trap_queue_snapshot_args queue_snapshot;
		struct kfd_ioctl_dbg_trap_device_snapshot_args device_snapshot;
	};
};

/* Limits of the retired debugger interface below. */
#define MAX_ALLOWED_NUM_POINTS    100
#define MAX_ALLOWED_AW_BUFF_SIZE 4096
#define MAX_ALLOWED_WAC_BUFF_SIZE  128

/* AMDKFD_IOC_DBG_REGISTER_DEPRECATED (retired debugger API). */
struct kfd_ioctl_dbg_register_args {
	__u32 gpu_id;			/* in */
	__u32 pad;
};

/* AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED (retired debugger API). */
struct kfd_ioctl_dbg_unregister_args {
	__u32 gpu_id;			/* in */
	__u32 pad;
};

/* AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED (retired debugger API). */
struct kfd_ioctl_dbg_address_watch_args {
	__u64 content_ptr;		/* in */
	__u32 gpu_id;			/* in */
	__u32 buf_size_in_bytes;	/* in */
};

/* AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED (retired debugger API). */
struct kfd_ioctl_dbg_wave_control_args {
	__u64 content_ptr;		/* in */
	__u32 gpu_id;			/* in */
	__u32 buf_size_in_bytes;	/* in */
};

/* ------------------------------------------------------------------ */
/* Profiler (AMDKFD_IOC_PROFILER)                                      */
/* ------------------------------------------------------------------ */

#define KFD_IOC_PROFILER_VERSION_NUM 1

/* kfd_ioctl_profiler_args.op */
enum kfd_profiler_ops {
	KFD_IOC_PROFILER_PMC = 0,
	KFD_IOC_PROFILER_VERSION = 2,
	KFD_IOC_PROFILER_PTL_CONTROL = 3,
};

/* KFD_IOC_PROFILER_PMC: lock a GPU for profiling / force perf counters. */
struct kfd_ioctl_pmc_settings {
	__u32 gpu_id;			/* user gpu id */
	__u32 lock;
	__u32 perfcount_enable;
};

/* KFD_IOC_PROFILER_PTL_CONTROL: switch PTL on (1) or off (0). */
struct kfd_ioctl_ptl_control {
	__u32 gpu_id;			/* user gpu id */
	__u32 enable;
};

/* AMDKFD_IOC_PROFILER: profiler control, payload selected by op. */
struct kfd_ioctl_profiler_args {
	__u32 op;			/* enum kfd_profiler_ops */
	union {
		struct kfd_ioctl_pmc_settings pmc;
		struct kfd_ioctl_ptl_control ptl;
		__u32 version;		/* out: KFD_IOC_PROFILER_VERSION_NUM */
	};
};

/* ------------------------------------------------------------------ */
/* Ioctl commands on /dev/kfd                                          */
/* ------------------------------------------------------------------ */

#define AMDKFD_IOCTL_BASE 'K'
#define AMDKFD_IO(nr)			_IO(AMDKFD_IOCTL_BASE, nr)
#define AMDKFD_IOR(nr, type)		_IOR(AMDKFD_IOCTL_BASE, nr, type)
#define AMDKFD_IOW(nr, type)		_IOW(AMDKFD_IOCTL_BASE, nr, type)
#define AMDKFD_IOWR(nr, type)		_IOWR(AMDKFD_IOCTL_BASE, nr, type)

#define AMDKFD_IOC_GET_VERSION			AMDKFD_IOR(0x01, struct kfd_ioctl_get_version_args)
#define AMDKFD_IOC_CREATE_QUEUE			AMDKFD_IOWR(0x02, struct kfd_ioctl_create_queue_args)
#define AMDKFD_IOC_DESTROY_QUEUE		AMDKFD_IOWR(0x03, struct kfd_ioctl_destroy_queue_args)
#define AMDKFD_IOC_SET_MEMORY_POLICY		AMDKFD_IOW(0x04, struct kfd_ioctl_set_memory_policy_args)
#define AMDKFD_IOC_GET_CLOCK_COUNTERS		AMDKFD_IOWR(0x05, struct kfd_ioctl_get_clock_counters_args)
#define AMDKFD_IOC_GET_PROCESS_APERTURES	AMDKFD_IOR(0x06, struct kfd_ioctl_get_process_apertures_args)
#define AMDKFD_IOC_UPDATE_QUEUE			AMDKFD_IOW(0x07, struct kfd_ioctl_update_queue_args)
#define AMDKFD_IOC_CREATE_EVENT			AMDKFD_IOWR(0x08, struct kfd_ioctl_create_event_args)
#define AMDKFD_IOC_DESTROY_EVENT		AMDKFD_IOW(0x09, struct kfd_ioctl_destroy_event_args)
#define AMDKFD_IOC_SET_EVENT			AMDKFD_IOW(0x0A, struct kfd_ioctl_set_event_args)
#define AMDKFD_IOC_RESET_EVENT			AMDKFD_IOW(0x0B, struct kfd_ioctl_reset_event_args)
#define AMDKFD_IOC_WAIT_EVENTS			AMDKFD_IOWR(0x0C, struct kfd_ioctl_wait_events_args)
#define AMDKFD_IOC_DBG_REGISTER_DEPRECATED	AMDKFD_IOW(0x0D, struct kfd_ioctl_dbg_register_args)
#define AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED	AMDKFD_IOW(0x0E, struct kfd_ioctl_dbg_unregister_args)
#define AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED	AMDKFD_IOW(0x0F, struct kfd_ioctl_dbg_address_watch_args)
#define AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED	AMDKFD_IOW(0x10, struct kfd_ioctl_dbg_wave_control_args)
#define AMDKFD_IOC_SET_SCRATCH_BACKING_VA	AMDKFD_IOWR(0x11, struct kfd_ioctl_set_scratch_backing_va_args)
#define AMDKFD_IOC_GET_TILE_CONFIG		AMDKFD_IOWR(0x12, struct kfd_ioctl_get_tile_config_args)
#define AMDKFD_IOC_SET_TRAP_HANDLER		AMDKFD_IOW(0x13, struct kfd_ioctl_set_trap_handler_args)
#define AMDKFD_IOC_GET_PROCESS_APERTURES_NEW	AMDKFD_IOWR(0x14, struct kfd_ioctl_get_process_apertures_new_args)
#define AMDKFD_IOC_ACQUIRE_VM			AMDKFD_IOW(0x15, struct kfd_ioctl_acquire_vm_args)
#define AMDKFD_IOC_ALLOC_MEMORY_OF_GPU		AMDKFD_IOWR(0x16, struct kfd_ioctl_alloc_memory_of_gpu_args)
#define AMDKFD_IOC_FREE_MEMORY_OF_GPU		AMDKFD_IOW(0x17, struct kfd_ioctl_free_memory_of_gpu_args)
#define AMDKFD_IOC_MAP_MEMORY_TO_GPU		AMDKFD_IOWR(0x18, struct kfd_ioctl_map_memory_to_gpu_args)
#define AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU	AMDKFD_IOWR(0x19, struct kfd_ioctl_unmap_memory_from_gpu_args)
#define AMDKFD_IOC_SET_CU_MASK			AMDKFD_IOW(0x1A, struct kfd_ioctl_set_cu_mask_args)
#define AMDKFD_IOC_GET_QUEUE_WAVE_STATE		AMDKFD_IOWR(0x1B, struct kfd_ioctl_get_queue_wave_state_args)
#define AMDKFD_IOC_GET_DMABUF_INFO		AMDKFD_IOWR(0x1C, struct kfd_ioctl_get_dmabuf_info_args)
#define AMDKFD_IOC_IMPORT_DMABUF		AMDKFD_IOWR(0x1D, struct kfd_ioctl_import_dmabuf_args)
#define AMDKFD_IOC_ALLOC_QUEUE_GWS		AMDKFD_IOWR(0x1E, struct kfd_ioctl_alloc_queue_gws_args)
#define AMDKFD_IOC_SMI_EVENTS			AMDKFD_IOWR(0x1F, struct kfd_ioctl_smi_events_args)
#define AMDKFD_IOC_SVM				AMDKFD_IOWR(0x20, struct kfd_ioctl_svm_args)
#define AMDKFD_IOC_SET_XNACK_MODE		AMDKFD_IOWR(0x21, struct kfd_ioctl_set_xnack_mode_args)
#define AMDKFD_IOC_CRIU_OP			AMDKFD_IOWR(0x22, struct kfd_ioctl_criu_args)
#define AMDKFD_IOC_AVAILABLE_MEMORY		AMDKFD_IOWR(0x23, struct kfd_ioctl_get_available_memory_args)
#define AMDKFD_IOC_EXPORT_DMABUF		AMDKFD_IOWR(0x24, struct kfd_ioctl_export_dmabuf_args)
#define AMDKFD_IOC_RUNTIME_ENABLE		AMDKFD_IOWR(0x25, struct kfd_ioctl_runtime_enable_args)
#define AMDKFD_IOC_DBG_TRAP			AMDKFD_IOWR(0x26, struct kfd_ioctl_dbg_trap_args)
#define AMDKFD_IOC_CREATE_PROCESS		AMDKFD_IO(0x27)
#define AMDKFD_IOC_PROFILER			AMDKFD_IOWR(0x28, struct kfd_ioctl_profiler_args)

/* Valid command numbers are [AMDKFD_COMMAND_START, AMDKFD_COMMAND_END). */
#define AMDKFD_COMMAND_START		0x01
#define AMDKFD_COMMAND_END		0x29

#endif /* KFD_IOCTL_H_INCLUDED */
