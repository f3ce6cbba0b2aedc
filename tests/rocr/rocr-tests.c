// SPDX-License-Identifier: GPL-2.0
/*
 * Queues, signals and SDMA copies through Debian's ROCr 5.2.3
 * (libhsa-runtime64), unchanged, against rkfd and the virtual GPU:
 *
 *  - hsa_queue_create on every GPU agent ROCr lists;
 *  - barrier-AND packets written by hand with dependency signals: the
 *    completion signal stays put while a dependency is pending and drops
 *    to 0 once all are satisfied (hsa_signal_wait_scacquire wakes);
 *    barrier-OR completes on the first dependency;
 *  - hsa_amd_memory_async_copy host -> VRAM -> host (the SDMA engine) with
 *    contents verified, 1 B ... 64 MiB, odd sizes and offsets included;
 *  - hsa_queue_destroy with work in flight (a barrier waiting on a signal
 *    nobody sets).
 *
 * Prints "rocr: N passed, N failed".
 */
#include <stdarg.h>
#include <stdlib.h>

#include "rocr-common.h"

static int passed, failed;

__attribute__((format(printf, 2, 3))) static bool check(bool ok, const char *fmt, ...)
{
	va_list ap;

	ok ? passed++ : failed++;
	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	return ok;
}

/* Long enough for a loaded TCG guest; success normally takes milliseconds. */
#define WAIT_NS (30ull * 1000 * 1000 * 1000)

static hsa_signal_value_t wait_zero(hsa_signal_t s, uint64_t ns)
{
	return hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, ns, HSA_WAIT_STATE_BLOCKED);
}

static void test_barriers(int gi, hsa_queue_t *q)
{
	hsa_signal_t dep[2], done;
	hsa_signal_value_t v;

	hsa_signal_create(1, 0, NULL, &dep[0]);
	hsa_signal_create(1, 0, NULL, &dep[1]);
	hsa_signal_create(1, 0, NULL, &done);

	/* Barrier-AND on two pending dependencies. */
	submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, dep, 2, done);
	v = wait_zero(done, 200ull * 1000 * 1000);
	check(v == 1, "gpu %d: barrier-AND waits while both dependencies are pending (value %ld)", gi,
	      (long)v);
	hsa_signal_store_screlease(dep[0], 0);
	v = wait_zero(done, 200ull * 1000 * 1000);
	check(v == 1, "gpu %d: ... and while one is still pending (value %ld)", gi, (long)v);
	hsa_signal_store_screlease(dep[1], 0);
	v = wait_zero(done, WAIT_NS);
	check(v == 0, "gpu %d: barrier-AND completes once both are satisfied (value %ld)", gi, (long)v);

	/* Barrier-OR: the first satisfied dependency is enough. */
	hsa_signal_store_screlease(dep[0], 1);
	hsa_signal_store_screlease(dep[1], 1);
	hsa_signal_store_screlease(done, 1);
	submit_barrier(q, HSA_PACKET_TYPE_BARRIER_OR, dep, 2, done);
	v = wait_zero(done, 200ull * 1000 * 1000);
	check(v == 1, "gpu %d: barrier-OR waits while no dependency is satisfied", gi);
	hsa_signal_store_screlease(dep[1], 0);
	v = wait_zero(done, WAIT_NS);
	check(v == 0, "gpu %d: barrier-OR completes on one satisfied dependency (value %ld)", gi, (long)v);

	/* A chain of 64 packets, each decrementing the same signal. */
	hsa_signal_store_screlease(done, 64);
	for (int i = 0; i < 64; i++)
		submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, NULL, 0, done);
	v = wait_zero(done, WAIT_NS);
	check(v == 0, "gpu %d: 64 barrier packets each decrement the completion signal (left %ld)", gi,
	      (long)v);

	hsa_signal_destroy(dep[0]);
	hsa_signal_destroy(dep[1]);
	hsa_signal_destroy(done);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static void test_copies(const struct agents *ag, int gi)
{
	static const size_t sizes[] = { 1, 7, 4096, 4099, 65537, 1 << 20, (16 << 20) + 12, 64 << 20 };
	const size_t max = 64 << 20;
	uint8_t *src = NULL, *dst = NULL, *vram = NULL;
	hsa_signal_t s;

	if (!check(ag->have_sys && ag->have_vram[gi], "gpu %d: system and VRAM pools", gi))
		return;
	if (!check(hsa_amd_memory_pool_allocate(ag->sys_pool, max + 64, 0, (void **)&src) == HSA_STATUS_SUCCESS &&
		   hsa_amd_memory_pool_allocate(ag->sys_pool, max + 64, 0, (void **)&dst) == HSA_STATUS_SUCCESS &&
		   hsa_amd_memory_pool_allocate(ag->vram[gi], max + 64, 0, (void **)&vram) == HSA_STATUS_SUCCESS,
		   "gpu %d: 64 MiB host buffers and VRAM allocated", gi))
		goto out;
	{
		hsa_agent_t both[2] = { ag->cpu, ag->gpu[gi] };

		hsa_amd_agents_allow_access(2, both, NULL, src);
		hsa_amd_agents_allow_access(2, both, NULL, dst);
		hsa_amd_agents_allow_access(1, &ag->gpu[gi], NULL, vram);
	}
	hsa_signal_create(1, 0, NULL, &s);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], off = i % 3; /* odd offsets too */
		double t0 = now_us(), t1;
		hsa_status_t st;
		bool ok;

		fill(src + off, n, (uint32_t)(n * 31 + i));
		memset(dst, 0, n + 8);
		hsa_signal_store_screlease(s, 1);
		st = hsa_amd_memory_async_copy(vram + off, ag->gpu[gi], src + off, ag->cpu, n, 0, NULL, s);
		ok = st == HSA_STATUS_SUCCESS && wait_zero(s, WAIT_NS) == 0;
		hsa_signal_store_screlease(s, 1);
		st = hsa_amd_memory_async_copy(dst + off, ag->cpu, vram + off, ag->gpu[gi], n, 0, NULL, s);
		ok = ok && st == HSA_STATUS_SUCCESS && wait_zero(s, WAIT_NS) == 0;
		t1 = now_us();
		if (!check(ok && !memcmp(src + off, dst + off, n) && dst[off + n] == 0,
			   "gpu %d: async copy host -> VRAM -> host of %zu bytes at offset %zu verified (%.1f ms)",
			   gi, n, off, (t1 - t0) / 1000) && !ok) {
			printf("# gpu %d: a copy did not complete; skipping larger sizes\n", gi);
			break;
		}
	}
	hsa_signal_destroy(s);
out:
	if (src)
		hsa_amd_memory_pool_free(src);
	if (dst)
		hsa_amd_memory_pool_free(dst);
	if (vram)
		hsa_amd_memory_pool_free(vram);
}

static void test_destroy_in_flight(int gi, hsa_agent_t gpu)
{
	hsa_queue_t *q;
	hsa_signal_t never, done;

	if (!check(hsa_queue_create(gpu, 256, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX,
				    &q) == HSA_STATUS_SUCCESS, "gpu %d: second queue", gi))
		return;
	hsa_signal_create(1, 0, NULL, &never);
	hsa_signal_create(1, 0, NULL, &done);
	submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, &never, 1, done);
	for (int i = 0; i < 16; i++)
		submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, NULL, 0, done);
	check(hsa_queue_destroy(q) == HSA_STATUS_SUCCESS,
	      "gpu %d: hsa_queue_destroy with 17 packets in flight", gi);
	check(hsa_signal_load_scacquire(done) == 1, "gpu %d: the blocked barrier never completed", gi);
	hsa_signal_destroy(never);
	hsa_signal_destroy(done);
}

int main(void)
{
	struct agents ag;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!check(hsa_init() == HSA_STATUS_SUCCESS, "hsa_init"))
		goto done;
	find_agents(&ag);
	if (!check(ag.ngpus > 0, "ROCr lists %d GPU agent(s)", ag.ngpus))
		goto shut;
	for (int gi = 0; gi < ag.ngpus; gi++) {
		char name[64] = "";
		hsa_queue_t *q;

		hsa_agent_get_info(ag.gpu[gi], HSA_AGENT_INFO_NAME, name);
		printf("# gpu %d: %s\n", gi, name);
		if (!check(hsa_queue_create(ag.gpu[gi], 1024, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX,
					    UINT32_MAX, &q) == HSA_STATUS_SUCCESS,
			   "gpu %d: hsa_queue_create", gi))
			continue;
		test_barriers(gi, q);
		check(hsa_queue_destroy(q) == HSA_STATUS_SUCCESS, "gpu %d: hsa_queue_destroy", gi);
		test_copies(&ag, gi);
		test_destroy_in_flight(gi, ag.gpu[gi]);
	}
shut:
	check(hsa_shut_down() == HSA_STATUS_SUCCESS, "hsa_shut_down");
done:
	printf("rocr: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
