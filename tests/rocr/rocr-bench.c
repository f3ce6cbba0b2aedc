// SPDX-License-Identifier: GPL-2.0
/*
 * Queue benchmark through Debian's ROCr 5.2.3 on the first GPU agent
 * (`make bench-queues` runs it in the test VM).  Prints figures only; it
 * asserts nothing about time:
 *
 *  1. signal round trip: a barrier-AND packet with a completion signal is
 *     submitted and the submitter waits (hsa_signal_wait_scacquire) until
 *     the packet processor decremented it: latency per packet;
 *  2. SDMA copy bandwidth: hsa_amd_memory_async_copy of 64 MiB host -> VRAM
 *     and VRAM -> host, against memcpy of 64 MiB in the same guest;
 *  3. priority: two queues on one GPU, one at ROCr's HIGH priority (KFD
 *     queue priority 15), one at NORMAL (7), each kept full of barrier
 *     packets by its own thread for 3 s: packets served per second each.
 *
 * Exits non-zero only if the runtime fails.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "rocr-common.h"

#define WAIT_NS (30ull * 1000 * 1000 * 1000)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int bench_round_trip(hsa_agent_t gpu)
{
	enum { N = 200 };
	static double lat[N];
	hsa_queue_t *q;
	hsa_signal_t s;
	double sum = 0;

	if (hsa_queue_create(gpu, 256, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX, &q))
		return 1;
	hsa_signal_create(1, 0, NULL, &s);
	for (int i = 0; i < N; i++) {
		double t0;

		hsa_signal_store_screlease(s, 1);
		t0 = now_us();
		submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, NULL, 0, s);
		if (hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, WAIT_NS, HSA_WAIT_STATE_BLOCKED)) {
			printf("bench: round trip %d timed out\n", i);
			return 1;
		}
		lat[i] = now_us() - t0;
		sum += lat[i];
	}
	qsort(lat, N, sizeof(lat[0]), cmp_double);
	printf("bench: signal round trip (barrier-AND + completion signal -> waiter wakes), %d packets: "
	       "median %.1f us, mean %.1f us, p90 %.1f us, min %.1f us\n",
	       N, lat[N / 2], sum / N, lat[N * 9 / 10], lat[0]);
	hsa_signal_destroy(s);
	hsa_queue_destroy(q);
	return 0;
}

static int bench_copy(const struct agents *ag)
{
	const size_t n = 64 << 20;
	uint8_t *src, *dst, *vram;
	hsa_agent_t both[2] = { ag->cpu, ag->gpu[0] };
	double t0, up, down, mc;
	hsa_signal_t s;

	if (!ag->have_sys || !ag->have_vram[0] ||
	    hsa_amd_memory_pool_allocate(ag->sys_pool, n, 0, (void **)&src) ||
	    hsa_amd_memory_pool_allocate(ag->sys_pool, n, 0, (void **)&dst) ||
	    hsa_amd_memory_pool_allocate(ag->vram[0], n, 0, (void **)&vram))
		return 1;
	hsa_amd_agents_allow_access(2, both, NULL, src);
	hsa_amd_agents_allow_access(2, both, NULL, dst);
	hsa_amd_agents_allow_access(1, &ag->gpu[0], NULL, vram);
	memset(src, 0x5a, n);
	memset(dst, 0, n);
	hsa_signal_create(1, 0, NULL, &s);

	t0 = now_us();
	hsa_amd_memory_async_copy(vram, ag->gpu[0], src, ag->cpu, n, 0, NULL, s);
	if (hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, WAIT_NS, HSA_WAIT_STATE_BLOCKED))
		return 1;
	up = now_us() - t0;
	hsa_signal_store_screlease(s, 1);
	t0 = now_us();
	hsa_amd_memory_async_copy(dst, ag->cpu, vram, ag->gpu[0], n, 0, NULL, s);
	if (hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, WAIT_NS, HSA_WAIT_STATE_BLOCKED))
		return 1;
	down = now_us() - t0;
	t0 = now_us();
	memcpy(dst, src, n);
	mc = now_us() - t0;
	printf("bench: SDMA copy 64 MiB: host->VRAM %.2f GB/s, VRAM->host %.2f GB/s; memcpy in the guest "
	       "%.2f GB/s (contents %s)\n",
	       n / up / 1e3, n / down / 1e3, n / mc / 1e3, memcmp(src, dst, n) ? "DIFFER" : "match");
	hsa_signal_destroy(s);
	hsa_amd_memory_pool_free(src);
	hsa_amd_memory_pool_free(dst);
	hsa_amd_memory_pool_free(vram);
	return 0;
}

struct feeder {
	hsa_queue_t *q;
	atomic_bool *stop;
	uint64_t start_read, end_read;
};

static void *feed(void *arg)
{
	struct feeder *f = arg;
	hsa_signal_t none = { 0 };

	while (!atomic_load(f->stop)) {
		/* Keep the queue nearly full; never block on a full ring. */
		if (hsa_queue_load_write_index_relaxed(f->q) - hsa_queue_load_read_index_scacquire(f->q) <
		    f->q->size - 8)
			submit_barrier(f->q, HSA_PACKET_TYPE_BARRIER_AND, NULL, 0, none);
		else
			usleep(100);
	}
	return NULL;
}

static int bench_priority(hsa_agent_t gpu)
{
	struct feeder f[2];
	static const hsa_amd_queue_priority_t prio[2] = { HSA_AMD_QUEUE_PRIORITY_HIGH,
							  HSA_AMD_QUEUE_PRIORITY_NORMAL };
	pthread_t t[2];
	atomic_bool stop = false;
	const double secs = 3.0;

	for (int i = 0; i < 2; i++) {
		f[i].stop = &stop;
		if (hsa_queue_create(gpu, 4096, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX,
				     &f[i].q) ||
		    hsa_amd_queue_set_priority(f[i].q, prio[i]))
			return 1;
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, feed, &f[i]);
	usleep(200 * 1000); /* both queues busy */
	for (int i = 0; i < 2; i++)
		f[i].start_read = hsa_queue_load_read_index_scacquire(f[i].q);
	usleep((useconds_t)(secs * 1e6));
	for (int i = 0; i < 2; i++)
		f[i].end_read = hsa_queue_load_read_index_scacquire(f[i].q);
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	{
		double hi = (f[0].end_read - f[0].start_read) / secs;
		double lo = (f[1].end_read - f[1].start_read) / secs;

		printf("bench: two busy queues on one GPU for %.0f s: priority 15 (HIGH) %.0f packets/s, "
		       "priority 7 (NORMAL) %.0f packets/s, ratio %.2f\n",
		       secs, hi, lo, lo > 0 ? hi / lo : 0.0);
	}
	for (int i = 0; i < 2; i++)
		hsa_queue_destroy(f[i].q);
	return 0;
}

int main(void)
{
	struct agents ag;
	int rc = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (hsa_init() || !find_agents(&ag) || !ag.ngpus) {
		printf("bench: no ROCr GPU agent\n");
		return 1;
	}
	{
		char name[64] = "";

		hsa_agent_get_info(ag.gpu[0], HSA_AGENT_INFO_NAME, name);
		printf("bench: GPU agent %s (virtual GPU, software engines)\n", name);
	}
	rc |= bench_round_trip(ag.gpu[0]);
	rc |= bench_copy(&ag);
	rc |= bench_priority(ag.gpu[0]);
	hsa_shut_down();
	if (rc)
		printf("bench: a benchmark failed to run\n");
	return rc;
}
