/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of the ROCr guest programs (Debian's libhsa-runtime64
 * 5.2.3, unchanged): agents, memory pools, AQL barrier packets.
 */
#ifndef RKFD_ROCR_COMMON_H
#define RKFD_ROCR_COMMON_H

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_GPUS 8

struct agents {
	hsa_agent_t cpu;
	hsa_agent_t gpu[MAX_GPUS];
	int ngpus;
	hsa_amd_memory_pool_t sys_pool;	/* CPU: fine- or coarse-grained system memory */
	hsa_amd_memory_pool_t vram[MAX_GPUS];
	bool have_sys, have_vram[MAX_GPUS];
};

static hsa_status_t collect_agent(hsa_agent_t a, void *data)
{
	struct agents *ag = data;
	hsa_device_type_t t;

	if (hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) != HSA_STATUS_SUCCESS)
		return HSA_STATUS_SUCCESS;
	if (t == HSA_DEVICE_TYPE_CPU)
		ag->cpu = a;
	else if (t == HSA_DEVICE_TYPE_GPU && ag->ngpus < MAX_GPUS)
		ag->gpu[ag->ngpus++] = a;
	return HSA_STATUS_SUCCESS;
}

struct pool_pick {
	hsa_amd_memory_pool_t pool;
	bool found;
	bool want_coarse;
};

static hsa_status_t pick_pool(hsa_amd_memory_pool_t p, void *data)
{
	struct pool_pick *pp = data;
	hsa_amd_segment_t seg;
	uint32_t flags = 0;
	bool alloc = false;

	hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
	if (seg != HSA_AMD_SEGMENT_GLOBAL)
		return HSA_STATUS_SUCCESS;
	hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
	hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	if (!alloc || (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT))
		return HSA_STATUS_SUCCESS;
	if (pp->want_coarse && !(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED))
		return HSA_STATUS_SUCCESS;
	if (!pp->found) {
		pp->pool = p;
		pp->found = true;
	}
	return HSA_STATUS_SUCCESS;
}

static bool find_agents(struct agents *ag)
{
	struct pool_pick pp;

	memset(ag, 0, sizeof(*ag));
	if (hsa_iterate_agents(collect_agent, ag) != HSA_STATUS_SUCCESS)
		return false;
	memset(&pp, 0, sizeof(pp));
	hsa_amd_agent_iterate_memory_pools(ag->cpu, pick_pool, &pp);
	ag->sys_pool = pp.pool;
	ag->have_sys = pp.found;
	for (int i = 0; i < ag->ngpus; i++) {
		memset(&pp, 0, sizeof(pp));
		pp.want_coarse = true;
		hsa_amd_agent_iterate_memory_pools(ag->gpu[i], pick_pool, &pp);
		ag->vram[i] = pp.pool;
		ag->have_vram[i] = pp.found;
	}
	return true;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Header of a barrier packet: system-scope acquire and release fences. */
static uint16_t barrier_header(hsa_packet_type_t type)
{
	return (uint16_t)((type << HSA_PACKET_HEADER_TYPE) | (1 << HSA_PACKET_HEADER_BARRIER) |
			  (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
			  (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

/*
 * Writes a barrier-AND (or -OR) packet with up to 5 dependencies and a
 * completion signal (handle 0: none) and rings the doorbell.  The header is
 * published last, atomically, as the AQL protocol requires.  Returns the
 * packet's index.
 */
static uint64_t submit_barrier(hsa_queue_t *q, hsa_packet_type_t type, const hsa_signal_t *deps,
			       int ndeps, hsa_signal_t completion)
{
	uint64_t idx = hsa_queue_add_write_index_screlease(q, 1);
	hsa_barrier_and_packet_t *ring = q->base_address;
	hsa_barrier_and_packet_t *p;

	/* Wait for room (the packet processor frees slots as it goes). */
	while (idx - hsa_queue_load_read_index_scacquire(q) >= q->size)
		;
	p = &ring[idx & (q->size - 1)];
	memset((char *)p + 4, 0, sizeof(*p) - 4);
	for (int i = 0; i < ndeps && i < 5; i++)
		p->dep_signal[i] = deps[i];
	p->completion_signal = completion;
	__atomic_store_n((uint32_t *)p, (uint32_t)barrier_header(type), __ATOMIC_RELEASE);
	hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)idx);
	return idx;
}

#endif /* RKFD_ROCR_COMMON_H */
