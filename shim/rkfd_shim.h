/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The contract between rkfd's C shim and its Rust crate.
 *
 * C owns what Rust for Linux 7.3 has no abstraction for (character device +
 * class registration, raw file_operations); Rust owns all driver state.
 * Rust objects are opaque to C (void *).  Functions named rkfd_shim_* are C
 * called from Rust.  What C calls in Rust comes in tables of function
 * pointers (struct rkfd_*_ops) that Rust hands over when it registers
 * something (src/kabi/ builds one table per implementing type); the
 * rkfd_rs_* functions are the few fixed entry points that remain.
 */
#ifndef RKFD_SHIM_H
#define RKFD_SHIM_H

#include <linux/types.h>

struct file;
struct vm_area_struct;
struct kobject;

/*
 * The file operations of /dev/kfd, in Rust.  @open stores the file's
 * state in *@private_data; the others get it back; @release is its last use.
 */
struct rkfd_chrdev_ops {
	int (*open)(void **private_data);
	void (*release)(void *private_data);
	long (*ioctl)(void *private_data, unsigned int cmd, unsigned long arg);
	int (*mmap)(void *private_data, struct vm_area_struct *vma, unsigned long vm_start,
		    unsigned long vm_end, unsigned long vm_pgoff);
};

/* C side, called from Rust (src/kabi/). @ops must outlive the registration. */
int rkfd_shim_chrdev_register(const struct rkfd_chrdev_ops *ops);
void rkfd_shim_chrdev_unregister(void);
int rkfd_shim_chrdev_major(void);
/*
 * Zaps every user mapping of /dev/kfd (all opens share one address_space)
 * whose mmap offset lies in [@start, @start + @len), byte offsets
 * (upstream kfd_dev_unmap_mapping_range).  Process context.
 */
void rkfd_shim_unmap_mapping_range(u64 start, u64 len);
/* The kobject of /sys/devices/virtual/kfd/kfd; NULL while not registered. */
struct kobject *rkfd_shim_kfd_kobject(void);

int rkfd_shim_log_level(void);
/* The sched_policy module parameter (upstream kfd_module.c). */
int rkfd_shim_sched_policy(void);
/* The hws_max_conc_proc module parameter (upstream amdgpu_drv.c). */
int rkfd_shim_hws_max_conc_proc(void);
/* The queue_preemption_timeout_ms module parameter (upstream amdgpu_drv.c). */
int rkfd_shim_queue_preemption_timeout_ms(void);
void rkfd_shim_kfd_dev_info(const char *msg);

/* KUnit only (CONFIG_KUNIT=y): a file standing for a render-node file. */
void *rkfd_shim_kunit_file(void);

/* Device interface (shim/rkfd_kgd.c, include/rkfd/kgd_kfd_interface.h). */
struct kgd_dev;
struct kfd_dev;
struct kfd2kgd_calls;
struct kgd_gpu_info;
struct module;
struct mm_struct;

void *rkfd_shim_fget(int fd);
void rkfd_shim_fput(void *file);
bool rkfd_shim_try_module_get(void *owner);
void rkfd_shim_module_put(void *owner);

/*
 * What the exported kgd2kfd_* functions call, in Rust (arguments checked as
 * kgd_kfd_interface.h promises: non-NULL handles).  Set at module init,
 * cleared at exit (no GPU driver is loaded then: it needs our exports).
 */
struct rkfd_kgd2kfd_ops {
	struct kfd_dev *(*probe)(struct kgd_dev *kgd, struct module *owner,
				 const struct kfd2kgd_calls *calls,
				 const struct kgd_gpu_info *info);
	int (*device_init)(struct kfd_dev *kfd);
	void (*device_exit)(struct kfd_dev *kfd);
	void (*interrupt)(struct kfd_dev *kfd, const void *ih_ring_entry);
	int (*svm_fault)(struct kfd_dev *kfd, u32 pasid, void *vm, u64 addr, u32 flags);
	void (*smi_event_throttle)(struct kfd_dev *kfd, u64 throttle_bitmask, u64 counter);
	void (*set_sram_ecc_flag)(struct kfd_dev *kfd);
	/* Power management and reset (kgd_kfd_interface.h). */
	void (*suspend)(struct kfd_dev *kfd, bool suspend_proc);
	int (*resume)(struct kfd_dev *kfd, bool resume_proc);
	void (*suspend_process)(struct kfd_dev *kfd);
	int (*resume_process)(struct kfd_dev *kfd);
	int (*pre_reset)(struct kfd_dev *kfd, const char *cause);
	int (*post_reset)(struct kfd_dev *kfd);
	int (*check_and_lock_kfd)(struct kfd_dev *kfd);
	void (*unlock_kfd)(struct kfd_dev *kfd);
	int (*start_sched)(struct kfd_dev *kfd, bool start);
	bool (*compute_active)(struct kfd_dev *kfd);
	void (*teardown_processes)(struct kfd_dev *kfd);
	/* SVM VRAM back to system memory (kgd_kfd_interface.h). */
	int (*svm_evict_vram)(struct kfd_dev *kfd);
	int (*quiesce_mm)(struct mm_struct *mm, u32 trigger);
	int (*resume_mm)(struct mm_struct *mm);
	void (*queue_restore_rescheduled)(struct mm_struct *mm);
	int (*vmfault_fast_path)(struct kfd_dev *kfd, u32 pasid);
	void (*clear_mappings)(struct kfd_dev *kfd);
	void (*signal_userptr_fault)(s32 tgid, u64 va);
};
void rkfd_shim_kgd2kfd_set_ops(const struct rkfd_kgd2kfd_ops *ops);

/* Process address-space lifetime (shim/rkfd_mm.c). */
/* @release(@cookie) runs once when @mm goes away (or at unregister). */
void *rkfd_shim_mm_notifier_register(struct mm_struct *mm, void *cookie,
				     void (*release)(void *cookie));
void rkfd_shim_mm_notifier_unregister(void *handle, struct mm_struct *mm);
u64 rkfd_shim_user_addr_limit(void);

/*
 * Process eviction by eviction fences (shim/rkfd_evict.c, upstream
 * kfd_process.c's eviction_work / restore_work and
 * kgd2kfd_schedule_evict_and_restore_process).  A registration per process
 * (its mm and context id) holds the two delayed works; the exported
 * kgd2kfd_schedule_evict_and_restore_process (atomic context) finds it by
 * mm and context id and schedules the eviction.  The works call Rust:
 * @evict stops the process's queues and signals its eviction fences
 * (0: done, 1: done but a fence was signalled already, so someone else
 * restores; -errno: not evicted); @restore_queues ends one eviction of the
 * queues; @restore restores the VMs' memory (new fences) and the queues
 * (0, or -errno: retried after PROCESS_BACK_OFF_TIME_MS).  Each is called
 * in process context with no lock held.
 */
struct rkfd_evict;
struct dma_fence;
struct rkfd_evict_ops {
	int (*evict)(void *cookie);
	void (*restore_queues)(void *cookie);
	int (*restore)(void *cookie);
};
/* NULL: out of memory. @ops and @cookie must stay valid until unregister. */
struct rkfd_evict *rkfd_shim_evict_register(struct mm_struct *mm, u16 context_id, void *cookie,
					    const struct rkfd_evict_ops *ops);
/* No work runs or is queued once this returns. */
void rkfd_shim_evict_unregister(struct rkfd_evict *e);
/* Evictions the registration has scheduled (debugging and tests). */
u64 rkfd_shim_evict_count(struct rkfd_evict *e);
/* Signals @f if it is not yet; true if it was signalled already. */
bool rkfd_shim_fence_signal(struct dma_fence *f);
void rkfd_shim_fence_put(struct dma_fence *f);

/* Device cgroup (shim/rkfd_cgroup.c): 0 or -EPERM for the current task. */
int rkfd_shim_devcgroup_check_render(unsigned int render_minor);

/* SMI event files (shim/rkfd_smi.c). */
struct poll_table_struct;
/* The file operations of an SMI file, in Rust; @client is the file's state. */
struct rkfd_smi_ops {
	ssize_t (*read)(void *client, char __user *buf, size_t size);
	ssize_t (*write)(void *client, const char __user *buf);
	bool (*poll)(void *client, struct file *filp, struct poll_table_struct *wait);
	void (*release)(void *client);
};
/* A new "kfd_smi_ev" fd for @client; @ops must outlive every such file. */
int rkfd_shim_smi_getfd(void *client, const struct rkfd_smi_ops *ops);
bool rkfd_shim_capable_sys_admin(void);
/* Copies task->comm (TASK_COMM_LEN = 16 bytes, NUL padded) to buf. */
void rkfd_shim_task_comm(void *task, char *buf);
/* SVM on HMM (shim/rkfd_hmm.c). */
struct rkfd_svm_dev;
struct rkfd_svm_range;
int rkfd_shim_svm_dev_init(struct kgd_dev *kgd, const struct kfd2kgd_calls *calls,
			   u64 vram_size, struct rkfd_svm_dev **out);
void rkfd_shim_svm_dev_fini(struct rkfd_svm_dev *sdev);
long rkfd_shim_svm_migrate_to_vram(struct mm_struct *mm, struct rkfd_svm_dev *sdev, u64 start,
				   u64 end, void *counters);
long rkfd_shim_svm_migrate_to_ram(struct mm_struct *mm, struct rkfd_svm_dev *sdev, u64 start,
				  u64 end);
int rkfd_shim_svm_mm_prepare(struct mm_struct *mm);
int rkfd_shim_svm_range_alloc(size_t cookie_size, struct rkfd_svm_range **out, void **cookie);
int rkfd_shim_svm_range_insert(struct rkfd_svm_range *r, struct mm_struct *mm, u64 start, u64 end);
void rkfd_shim_svm_range_free(struct rkfd_svm_range *r);
void *rkfd_shim_svm_range_cookie(struct rkfd_svm_range *r);
int rkfd_shim_svm_range_map(struct rkfd_svm_range *r, struct rkfd_svm_dev *sdev, void *vm,
			    u64 start, u64 end, bool write, unsigned long *seq);
void rkfd_shim_svm_range_unmap(struct rkfd_svm_range *r, struct rkfd_svm_dev *sdev, void *vm,
			       u64 start, u64 end);
int rkfd_shim_svm_wq_init(void);
void rkfd_shim_svm_wq_exit(void);
struct workqueue_struct *rkfd_shim_svm_wq(void);
void rkfd_shim_mmap_lock(struct mm_struct *mm, bool write);
void rkfd_shim_mmap_unlock(struct mm_struct *mm, bool write);
void rkfd_shim_mmap_downgrade(struct mm_struct *mm);
int rkfd_shim_vma_at(struct mm_struct *mm, u64 addr, u64 *start, u64 *end, bool *usable);
int rkfd_shim_vma_next(struct mm_struct *mm, u64 addr, u64 *start, u64 *end);
bool rkfd_shim_vma_heap_stack(struct mm_struct *mm, u64 addr);
bool rkfd_shim_svm_range_seq_valid(struct rkfd_svm_range *r, unsigned long seq);
int rkfd_shim_svm_range_locate(struct rkfd_svm_range *r, struct rkfd_svm_dev *sdev,
			       u64 start, u64 end, u64 *dev_pages, u64 *ram_pages);
/* Rust side: per-process per-GPU counters (device pages hold references). */
void *rkfd_rs_svm_counters_get(void *counters, u64 bytes);
void rkfd_rs_svm_counters_put(void *counters, u64 bytes);
void rkfd_rs_svm_count_page_in(void *counters, u64 pages);
void rkfd_rs_svm_count_page_out(void *counters, u64 pages);
void rkfd_rs_svm_cpu_migrated(void *counters, u64 start, u64 end, u64 t0_ns, long ret);
/* Rust side: a range's invalidate callback, under the range's lock. */
void rkfd_rs_svm_invalidate(void *cookie, u64 range_start, u64 start, u64 end, bool unmap,
			    bool migrate);

#endif /* RKFD_SHIM_H */
