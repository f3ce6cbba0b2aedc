// SPDX-License-Identifier: GPL-2.0
/*
 * rkfd C shim: the per-process mmu_notifier whose ->release tells rkfd that
 * the address space of a KFD process is going away (upstream
 * kfd_process_mmu_notifier_ops.release), so GPU state is released even if
 * a /dev/kfd file outlives the mm (passed to another process).
 */
#include <linux/mmu_notifier.h>
#include <linux/slab.h>

#include "rkfd_shim.h"

struct rkfd_mm_notifier {
	struct mmu_notifier mn;
	void *cookie;
	void (*release)(void *cookie);
};

static void rkfd_mm_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	struct rkfd_mm_notifier *n = container_of(mn, struct rkfd_mm_notifier, mn);

	n->release(n->cookie);
}

static const struct mmu_notifier_ops rkfd_mm_notifier_ops = {
	.release = rkfd_mm_release,
};

void *rkfd_shim_mm_notifier_register(struct mm_struct *mm, void *cookie,
				     void (*release)(void *cookie))
{
	struct rkfd_mm_notifier *n;
	int err;

	if (!release)
		return ERR_PTR(-EINVAL);
	n = kzalloc(sizeof(*n), GFP_KERNEL);
	if (!n)
		return ERR_PTR(-ENOMEM);
	n->mn.ops = &rkfd_mm_notifier_ops;
	n->cookie = cookie;
	n->release = release;
	err = mmu_notifier_register(&n->mn, mm);
	if (err) {
		kfree(n);
		return ERR_PTR(err);
	}
	return n;
}

void rkfd_shim_mm_notifier_unregister(void *handle, struct mm_struct *mm)
{
	struct rkfd_mm_notifier *n = handle;

	/* Calls ->release first if the mm is still alive. */
	mmu_notifier_unregister(&n->mn, mm);
	kfree(n);
}

/* The user address limit access_ok() checks against (queue arguments). */
u64 rkfd_shim_user_addr_limit(void)
{
	return TASK_SIZE_MAX;
}
