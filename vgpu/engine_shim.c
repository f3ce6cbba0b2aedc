// SPDX-License-Identifier: GPL-2.0
/*
 * What the virtual GPU's software engines need from C (vgpu/engine.rs,
 * through vgpu/kabi/engine.rs): the scheduler thread (one kthread per GPU)
 * and local kernel mappings of the pages the GPU accesses.  No logic.
 */
#include <linux/err.h>
#include <linux/highmem.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/cpumask.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>

#include "engine_shim.h"

int vgpu_engine_thread_start(int (*fn)(void *), void *data, const char *role,
			     unsigned int index, unsigned int worker, struct task_struct **out)
{
	struct task_struct *t = kthread_run(fn, data, "vgpu-%s/%u.%u", role, index, worker);

	if (IS_ERR(t))
		return PTR_ERR(t);
	*out = t;
	return 0;
}

/* Stops a thread started above; waits until it has returned. */
void vgpu_engine_thread_stop(struct task_struct *t)
{
	kthread_stop(t);
}

bool vgpu_engine_thread_should_stop(void)
{
	return kthread_should_stop();
}

/*
 * Sleeps @us microseconds (a quarter more at most, as fsleep), or less:
 * returns as soon as kthread_stop() is called on the current thread, which
 * sets the stop flag and then wakes the thread (fsleep/msleep would sleep
 * on).  TASK_IDLE: no signal ends the sleep, and it adds no load.
 */
void vgpu_engine_thread_sleep_us(unsigned long us)
{
	ktime_t end = ktime_add_us(ktime_get(), us);

	for (;;) {
		/* The state is set before the flag is read: a stop after the
		 * read finds the thread sleeping and wakes it. */
		set_current_state(TASK_IDLE);
		if (kthread_should_stop())
			break;
		/* 0: the time is up; else woken early: look again. */
		if (!schedule_hrtimeout_range(&end, (u64)(us / 4) * NSEC_PER_USEC, HRTIMER_MODE_ABS))
			break;
	}
	__set_current_state(TASK_RUNNING);
}

/* A polling engine thread lets others run (it polls without sleeping). */
void vgpu_engine_cond_resched(void)
{
	cond_resched();
}

unsigned int vgpu_engine_online_cpus(void)
{
	return num_online_cpus();
}

/*
 * How many of a GPU's workers run one kernel dispatch's workgroups (the
 * queue's own worker and helpers): 0 (default) all of them, 1 the queue's
 * worker alone.  Read when a dispatch starts; writable at run time (root),
 * for make bench-isa's 1-vs-N comparison.
 */
static unsigned int shader_workers;
module_param(shader_workers, uint, 0644);
MODULE_PARM_DESC(shader_workers,
		 "Workers (threads) running one kernel dispatch's workgroups: 0 all (default), 1 the queue's own");

unsigned int vgpu_engine_shader_workers(void)
{
	return READ_ONCE(shader_workers);
}

/* A local mapping of the page at @pfn, NULL if it is not memory. */
void *vgpu_engine_kmap_pfn(unsigned long pfn)
{
	if (!pfn_valid(pfn))
		return NULL;
	return kmap_local_page(pfn_to_page(pfn));
}

/*
 * The direct-map address of the page at @pfn, NULL if it is not memory or
 * the kernel has HIGHMEM (then only kmap reaches every page).
 */
void *vgpu_engine_direct_pfn(unsigned long pfn)
{
	if (IS_ENABLED(CONFIG_HIGHMEM) || !pfn_valid(pfn))
		return NULL;
	return page_address(pfn_to_page(pfn));
}

void *vgpu_engine_kmap_page(struct page *page)
{
	return kmap_local_page(page);
}

void vgpu_engine_kunmap(void *addr)
{
	kunmap_local(addr);
}
