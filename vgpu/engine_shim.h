/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The engines' C helpers (vgpu/engine_shim.c), called from Rust
 * (vgpu/kabi/engine.rs mirrors these declarations).
 */
#ifndef VGPU_ENGINE_SHIM_H
#define VGPU_ENGINE_SHIM_H

#include <linux/types.h>

struct page;
struct task_struct;

/* Starts a kthread named vgpu-<role>/<index>.<worker>. */
int vgpu_engine_thread_start(int (*fn)(void *), void *data, const char *role,
			     unsigned int index, unsigned int worker, struct task_struct **out);
void vgpu_engine_thread_stop(struct task_struct *t);
bool vgpu_engine_thread_should_stop(void);
/* Sleeps up to @us microseconds; ends at once when the thread is stopped. */
void vgpu_engine_thread_sleep_us(unsigned long us);
void vgpu_engine_cond_resched(void);
unsigned int vgpu_engine_online_cpus(void);
unsigned int vgpu_engine_shader_workers(void);
void *vgpu_engine_kmap_pfn(unsigned long pfn);
void *vgpu_engine_direct_pfn(unsigned long pfn);
void *vgpu_engine_kmap_page(struct page *page);
void vgpu_engine_kunmap(void *addr);

#endif /* VGPU_ENGINE_SHIM_H */
