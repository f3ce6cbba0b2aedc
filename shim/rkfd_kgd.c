// SPDX-License-Identifier: GPL-2.0
/*
 * rkfd C shim: the kgd2kfd entry points GPU drivers call (exported, as
 * upstream amdkfd exports them to amdgpu), forwarding to Rust through the
 * table src/kabi/kgd.rs sets at module init, plus the
 * struct file and module reference helpers the device interface needs.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>

#include <rkfd/kgd_kfd_interface.h>

#include "rkfd_shim.h"

/*
 * Set at module init, before any GPU driver can link against the exports
 * below, and cleared at exit, after every such driver is gone.
 */
static const struct rkfd_kgd2kfd_ops *rkfd_kgd_ops;

void rkfd_shim_kgd2kfd_set_ops(const struct rkfd_kgd2kfd_ops *ops)
{
	WRITE_ONCE(rkfd_kgd_ops, ops);
}

struct kfd_dev *kgd2kfd_probe(struct kgd_dev *kgd, struct module *owner,
			      const struct kfd2kgd_calls *calls,
			      const struct kgd_gpu_info *info)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (!ops || !kgd || !calls || !info)
		return NULL;
	return ops->probe(kgd, owner, calls, info);
}
EXPORT_SYMBOL_GPL(kgd2kfd_probe);

int kgd2kfd_device_init(struct kfd_dev *kfd)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	return ops && kfd ? ops->device_init(kfd) : -EINVAL;
}
EXPORT_SYMBOL_GPL(kgd2kfd_device_init);

void kgd2kfd_device_exit(struct kfd_dev *kfd)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (ops && kfd)
		ops->device_exit(kfd);
}
EXPORT_SYMBOL_GPL(kgd2kfd_device_exit);

void kgd2kfd_interrupt(struct kfd_dev *kfd, const void *ih_ring_entry)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (ops && kfd && ih_ring_entry)
		ops->interrupt(kfd, ih_ring_entry);
}
EXPORT_SYMBOL_GPL(kgd2kfd_interrupt);

int kgd2kfd_svm_fault(struct kfd_dev *kfd, __u32 pasid, void *vm, __u64 addr, __u32 flags)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (!ops || !kfd || !vm)
		return -EINVAL;
	return ops->svm_fault(kfd, pasid, vm, addr, flags);
}
EXPORT_SYMBOL_GPL(kgd2kfd_svm_fault);

void kgd2kfd_smi_event_throttle(struct kfd_dev *kfd, __u64 throttle_bitmask, __u64 counter)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (!ops || !kfd)
		return;
	ops->smi_event_throttle(kfd, throttle_bitmask, counter);
}
EXPORT_SYMBOL_GPL(kgd2kfd_smi_event_throttle);

void kgd2kfd_set_sram_ecc_flag(struct kfd_dev *kfd)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (!ops || !kfd)
		return;
	ops->set_sram_ecc_flag(kfd);
}
EXPORT_SYMBOL_GPL(kgd2kfd_set_sram_ecc_flag);

/*
 * Power management and reset: upstream's kgd2kfd_suspend & co.  rkfd's
 * kfd_dev is one node: @node_id must be 0.
 */
void kgd2kfd_suspend(struct kfd_dev *kfd, int suspend_proc)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (ops && kfd)
		ops->suspend(kfd, suspend_proc != 0);
}
EXPORT_SYMBOL_GPL(kgd2kfd_suspend);

int kgd2kfd_resume(struct kfd_dev *kfd, int resume_proc)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	return ops && kfd ? ops->resume(kfd, resume_proc != 0) : -EINVAL;
}
EXPORT_SYMBOL_GPL(kgd2kfd_resume);

void kgd2kfd_suspend_process(struct kfd_dev *kfd)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (ops && kfd)
		ops->suspend_process(kfd);
}
EXPORT_SYMBOL_GPL(kgd2kfd_suspend_process);

int kgd2kfd_resume_process(struct kfd_dev *kfd)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	return ops && kfd ? ops->resume_process(kfd) : -EINVAL;
}
EXPORT_SYMBOL_GPL(kgd2kfd_resume_process);

int kgd2kfd_pre_reset(struct kfd_dev *kfd, const char *cause)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	return ops && kfd ? ops->pre_reset(kfd, cause) : -EINVAL;
}
EXPORT_SYMBOL_GPL(kgd2kfd_pre_reset);

int kgd2kfd_post_reset(struct kfd_dev *kfd)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	return ops && kfd ? ops->post_reset(kfd) : -EINVAL;
}
EXPORT_SYMBOL_GPL(kgd2kfd_post_reset);

int kgd2kfd_check_and_lock_kfd(struct kfd_dev *kfd)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	return ops && kfd ? ops->check_and_lock_kfd(kfd) : -EINVAL;
}
EXPORT_SYMBOL_GPL(kgd2kfd_check_and_lock_kfd);

void kgd2kfd_unlock_kfd(struct kfd_dev *kfd)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (ops && kfd)
		ops->unlock_kfd(kfd);
}
EXPORT_SYMBOL_GPL(kgd2kfd_unlock_kfd);

int kgd2kfd_start_sched(struct kfd_dev *kfd, __u32 node_id)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (!ops || !kfd || node_id != 0)
		return -EINVAL;
	return ops->start_sched(kfd, true);
}
EXPORT_SYMBOL_GPL(kgd2kfd_start_sched);

int kgd2kfd_stop_sched(struct kfd_dev *kfd, __u32 node_id)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (!ops || !kfd || node_id != 0)
		return -EINVAL;
	return ops->start_sched(kfd, false);
}
EXPORT_SYMBOL_GPL(kgd2kfd_stop_sched);

int kgd2kfd_compute_active(struct kfd_dev *kfd, __u32 node_id)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	return ops && kfd && node_id == 0 && ops->compute_active(kfd);
}
EXPORT_SYMBOL_GPL(kgd2kfd_compute_active);

void kgd2kfd_teardown_processes(struct kfd_dev *kfd)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (ops && kfd)
		ops->teardown_processes(kfd);
}
EXPORT_SYMBOL_GPL(kgd2kfd_teardown_processes);

/* Upstream svm_range_evict_svm_bo for every process's pages in this VRAM. */
int kgd2kfd_svm_evict_vram(struct kfd_dev *kfd)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	return ops && kfd ? ops->svm_evict_vram(kfd) : -EINVAL;
}
EXPORT_SYMBOL_GPL(kgd2kfd_svm_evict_vram);

int kgd2kfd_quiesce_mm(struct mm_struct *mm, __u32 trigger)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (!ops || !mm)
		return -ESRCH;
	return ops->quiesce_mm(mm, trigger);
}
EXPORT_SYMBOL_GPL(kgd2kfd_quiesce_mm);

int kgd2kfd_resume_mm(struct mm_struct *mm)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (!ops || !mm)
		return -ESRCH;
	return ops->resume_mm(mm);
}
EXPORT_SYMBOL_GPL(kgd2kfd_resume_mm);

void kgd2kfd_queue_restore_rescheduled(struct mm_struct *mm)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (ops && mm)
		ops->queue_restore_rescheduled(mm);
}
EXPORT_SYMBOL_GPL(kgd2kfd_queue_restore_rescheduled);

/* Atomic context (hard IRQ, RCU): rkfd's side only reads and sets bits. */
int kgd2kfd_vmfault_fast_path(struct kfd_dev *kfd, __u32 pasid)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	return ops && kfd ? ops->vmfault_fast_path(kfd, pasid) : 0;
}
EXPORT_SYMBOL_GPL(kgd2kfd_vmfault_fast_path);

void kgd2kfd_clear_mappings(struct kfd_dev *kfd)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (ops && kfd)
		ops->clear_mappings(kfd);
}
EXPORT_SYMBOL_GPL(kgd2kfd_clear_mappings);

void kgd2kfd_signal_userptr_fault(__s32 tgid, __u64 va)
{
	const struct rkfd_kgd2kfd_ops *ops = READ_ONCE(rkfd_kgd_ops);

	if (ops && tgid > 0)
		ops->signal_userptr_fault(tgid, va);
}
EXPORT_SYMBOL_GPL(kgd2kfd_signal_userptr_fault);

void *rkfd_shim_fget(int fd)
{
	return fget(fd);
}

void rkfd_shim_fput(void *file)
{
	fput(file);
}

bool rkfd_shim_try_module_get(void *owner)
{
	return try_module_get(owner);
}

void rkfd_shim_module_put(void *owner)
{
	module_put(owner);
}

#if IS_BUILTIN(CONFIG_KUNIT)
#include <linux/anon_inodes.h>

/* No owner and no release: the file pins nothing and runs no rkfd code. */
static const struct file_operations rkfd_kunit_fops = {};

/* KUnit: a file to stand for a render-node file (kernel threads have no fds). */
void *rkfd_shim_kunit_file(void)
{
	struct file *f = anon_inode_getfile("[rkfd-kunit]", &rkfd_kunit_fops, NULL, O_RDWR);

	return IS_ERR(f) ? NULL : f;
}
#endif
