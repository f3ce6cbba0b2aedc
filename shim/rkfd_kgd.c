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
