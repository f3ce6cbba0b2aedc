// SPDX-License-Identifier: GPL-2.0
/*
 * rkfd C shim: process eviction by eviction fences (upstream kfd_process.c:
 * the eviction_work / restore_work delayed works, evict_process_worker,
 * restore_process_worker, and kfd_device.c's
 * kgd2kfd_schedule_evict_and_restore_process).  The policy (which queues,
 * which fences, which SMI events) is rkfd's Rust (src/process/evict.rs);
 * this file keeps what must work in atomic context: finding a process by
 * (mm, context id) from a fence's ->enable_signaling and queueing the work.
 *
 * Lock order: rkfd_evict_lock is a leaf spinlock, taken inside the GPU
 * driver's fence lock (->enable_signaling) and alone; nothing is called
 * under it but schedule/mod_delayed_work.  The works run with no lock held.
 */
#include <linux/dma-fence.h>
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include <rkfd/kgd_kfd_interface.h>

#include "rkfd_shim.h"

struct rkfd_evict {
	struct list_head link;		/* in rkfd_evict_list, under rkfd_evict_lock */
	struct mm_struct *mm;		/* identity only (the process holds the mm) */
	u16 context_id;
	bool dead;			/* under rkfd_evict_lock: schedule nothing more */
	u64 last_eviction_seqno;	/* rkfd_evict_lock; upstream p->last_eviction_seqno */
	u64 last_restore_timestamp;	/* jiffies (upstream p->last_restore_timestamp) */
	atomic64_t evictions;
	struct delayed_work eviction_work;
	struct delayed_work restore_work;
	void *cookie;
	const struct rkfd_evict_ops *ops;
};

static DEFINE_SPINLOCK(rkfd_evict_lock);
static LIST_HEAD(rkfd_evict_list);

/* upstream evict_process_worker */
static void rkfd_evict_worker(struct work_struct *work)
{
	struct rkfd_evict *e = container_of(to_delayed_work(work), struct rkfd_evict,
					    eviction_work);
	int ret;

	ret = e->ops->evict(e->cookie);
	if (ret < 0)
		return;
	/*
	 * If another path signalled the fence already it restores the
	 * queues; if a restore is pending, it covers this eviction too.
	 */
	if (ret == 1 || mod_delayed_work(system_freezable_wq, &e->restore_work,
					 msecs_to_jiffies(KGD_PROCESS_RESTORE_TIME_MS)))
		e->ops->restore_queues(e->cookie);
}

/* upstream restore_process_worker */
static void rkfd_restore_worker(struct work_struct *work)
{
	struct rkfd_evict *e = container_of(to_delayed_work(work), struct rkfd_evict,
					    restore_work);

	/* Set before the restore, as upstream: the process may be evicted again meanwhile. */
	WRITE_ONCE(e->last_restore_timestamp, get_jiffies_64());
	if (e->ops->restore(e->cookie))
		mod_delayed_work(system_freezable_wq, &e->restore_work,
				 msecs_to_jiffies(KGD_PROCESS_BACK_OFF_TIME_MS));
}

struct rkfd_evict *rkfd_shim_evict_register(struct mm_struct *mm, u16 context_id, void *cookie,
					    const struct rkfd_evict_ops *ops)
{
	struct rkfd_evict *e;

	if (!mm || !ops || !ops->evict || !ops->restore_queues || !ops->restore)
		return NULL;
	e = kzalloc_obj(*e, GFP_KERNEL);
	if (!e)
		return NULL;
	e->mm = mm;
	e->context_id = context_id;
	e->cookie = cookie;
	e->ops = ops;
	e->last_restore_timestamp = get_jiffies_64();
	atomic64_set(&e->evictions, 0);
	INIT_DELAYED_WORK(&e->eviction_work, rkfd_evict_worker);
	INIT_DELAYED_WORK(&e->restore_work, rkfd_restore_worker);
	spin_lock_irq(&rkfd_evict_lock);
	list_add_tail(&e->link, &rkfd_evict_list);
	spin_unlock_irq(&rkfd_evict_lock);
	return e;
}

void rkfd_shim_evict_unregister(struct rkfd_evict *e)
{
	if (!e)
		return;
	spin_lock_irq(&rkfd_evict_lock);
	e->dead = true;
	list_del(&e->link);
	spin_unlock_irq(&rkfd_evict_lock);
	/* The eviction work queues the restore: cancel it first. */
	cancel_delayed_work_sync(&e->eviction_work);
	cancel_delayed_work_sync(&e->restore_work);
	kfree(e);
}

u64 rkfd_shim_evict_count(struct rkfd_evict *e)
{
	return e ? atomic64_read(&e->evictions) : 0;
}

/* upstream kgd2kfd_schedule_evict_and_restore_process; atomic context */
int kgd2kfd_schedule_evict_and_restore_process(struct mm_struct *mm, __u16 context_id,
					       struct dma_fence *fence)
{
	unsigned long delay = msecs_to_jiffies(KGD_PROCESS_ACTIVE_TIME_MS);
	struct rkfd_evict *e;
	unsigned long flags;
	int ret = -ENODEV;
	u64 active;

	if (!fence)
		return -EINVAL;
	if (dma_fence_is_signaled(fence))
		return 0;
	spin_lock_irqsave(&rkfd_evict_lock, flags);
	list_for_each_entry(e, &rkfd_evict_list, link) {
		if (e->mm != mm || e->context_id != context_id || e->dead)
			continue;
		ret = 0;
		if (fence->seqno == e->last_eviction_seqno)
			break;
		e->last_eviction_seqno = fence->seqno;
		/* Avoid starvation: at least PROCESS_ACTIVE_TIME_MS since the last restore. */
		active = get_jiffies_64() - READ_ONCE(e->last_restore_timestamp);
		delay = delay > active ? delay - active : 0;
		atomic64_inc(&e->evictions);
		schedule_delayed_work(&e->eviction_work, delay);
		break;
	}
	spin_unlock_irqrestore(&rkfd_evict_lock, flags);
	return ret;
}
EXPORT_SYMBOL_GPL(kgd2kfd_schedule_evict_and_restore_process);

bool rkfd_shim_fence_signal(struct dma_fence *f)
{
	return dma_fence_check_and_signal(f);
}

void rkfd_shim_fence_put(struct dma_fence *f)
{
	dma_fence_put(f);
}
