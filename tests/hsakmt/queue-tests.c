// SPDX-License-Identifier: GPL-2.0
/*
 * Queues through Debian's libhsakmt 5.2.3 against rkfd: hsaKmtCreateQueue
 * for AQL, PM4 compute and SDMA queues on every GPU node (libhsakmt
 * allocates the EOP buffer and the CWSR area itself, from topology's
 * properties, so this checks that rkfd's buffer and size rules accept what
 * the real user space sends), distinct queue ids and doorbells inside one
 * 8 KiB doorbell slice, doorbell writes, hsaKmtUpdateQueue, bad arguments
 * refused, hsaKmtDestroyQueue, and proc/<pid>/queues/<qid> following the
 * queues.
 *
 * A GPU whose driver serves no hardware queues yet makes hsaKmtCreateQueue
 * fail; that is reported as a note and the node's queue checks are skipped
 * (the validation itself is covered by kfd-queue-tests).
 *
 * Prints "hsakmt-queues: N passed, N failed".
 */
#include <hsakmt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

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

/* Entries of proc/<pid>/queues (libhsakmt's QueueId is its own handle,
 * not the KFD queue id, so the directories are counted). */
static int queue_dirs(void)
{
	char path[128];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/class/kfd/kfd/proc/%d/queues", (int)getpid());
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static HSAKMT_STATUS map_to_node(void *p, uint64_t size, uint32_t node)
{
	HsaMemMapFlags mf = { 0 };
	HSAuint64 alt = 0;

	return hsaKmtMapMemoryToGPUNodes(p, size, &alt, mf, 1, &node);
}

static void *alloc_system(uint32_t gpu_node, uint64_t size)
{
	HsaMemFlags f = { 0 };
	void *p = NULL;

	f.ui32.HostAccess = 1;
	f.ui32.NonPaged = 1;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	if (hsaKmtAllocMemory(0, size, f, &p) != HSAKMT_STATUS_SUCCESS)
		return NULL;
	if (map_to_node(p, size, gpu_node) != HSAKMT_STATUS_SUCCESS) {
		hsaKmtFreeMemory(p, size);
		return NULL;
	}
	memset(p, 0, size);
	return p;
}

static void free_system(void *p, uint64_t size)
{
	hsaKmtUnmapMemoryToGPU(p);
	hsaKmtFreeMemory(p, size);
}

static void test_node(uint32_t node, const HsaNodeProperties *np)
{
	const uint64_t ring_size = 64 * 1024;
	HsaQueueResource aql = { 0 }, pm4 = { 0 }, sdma = { 0 }, bad = { 0 };
	uint64_t *ptrs;
	void *ring, *ring2, *sring;
	HSAKMT_STATUS s;

	printf("# node %u: %u compute cores, %u SDMA engines\n", node, np->NumFComputeCores,
	       np->NumSdmaEngines + np->NumSdmaXgmiEngines);
	ring = alloc_system(node, ring_size);
	ring2 = alloc_system(node, ring_size);
	sring = alloc_system(node, 4096);
	ptrs = alloc_system(node, 4096);
	if (!check(ring && ring2 && sring && ptrs, "node %u: ring and pointer memory mapped to the GPU", node))
		return;

	aql.Queue_read_ptr_aql = &ptrs[0];
	aql.Queue_write_ptr_aql = &ptrs[1];
	s = hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, ring,
			      ring_size, NULL, &aql);
	if (s != HSAKMT_STATUS_SUCCESS) {
		printf("# node %u: hsaKmtCreateQueue(AQL) = %d: the GPU driver serves no queues; "
		       "skipping this node's queue checks\n", node, s);
		goto out;
	}
	check(true, "node %u: AQL queue %u created, doorbell %p", node, (unsigned)aql.QueueId,
	      (void *)aql.Queue_DoorBell_aql);
	check(queue_dirs() == 1, "node %u: proc/<pid>/queues has one queue (%d)", node, queue_dirs());

	pm4.Queue_read_ptr = (HSAuint32 *)&ptrs[2];
	pm4.Queue_write_ptr = (HSAuint32 *)&ptrs[3];
	s = hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE, 50, HSA_QUEUE_PRIORITY_MAXIMUM, ring2,
			      ring_size, NULL, &pm4);
	if (check(s == HSAKMT_STATUS_SUCCESS, "node %u: PM4 compute queue: status %d", node, s)) {
		uintptr_t a = (uintptr_t)aql.Queue_DoorBell_aql, b = (uintptr_t)pm4.Queue_DoorBell;

		check(queue_dirs() == 2, "node %u: two queue directories (%d)", node, queue_dirs());
		check(pm4.QueueId != aql.QueueId, "node %u: distinct queue ids %u, %u", node,
		      (unsigned)aql.QueueId, (unsigned)pm4.QueueId);
		check(a != b && (a & ~(uintptr_t)8191) == (b & ~(uintptr_t)8191),
		      "node %u: distinct doorbells in one 8 KiB slice (%#lx, %#lx)", node,
		      (unsigned long)a, (unsigned long)b);
		/* A doorbell write (nothing queued: the engine finds no packet). */
		*(volatile uint64_t *)aql.Queue_DoorBell_aql = 0;
		check(hsaKmtUpdateQueue(pm4.QueueId, 100, HSA_QUEUE_PRIORITY_NORMAL, ring2, ring_size,
					NULL) == HSAKMT_STATUS_SUCCESS,
		      "node %u: hsaKmtUpdateQueue", node);
		check(hsaKmtDestroyQueue(pm4.QueueId) == HSAKMT_STATUS_SUCCESS,
		      "node %u: destroy the PM4 queue", node);
		check(queue_dirs() == 1, "node %u: its sysfs directory is gone (%d left)", node, queue_dirs());
	}

	if (np->NumSdmaEngines) {
		sdma.Queue_read_ptr = (HSAuint32 *)&ptrs[4];
		sdma.Queue_write_ptr = (HSAuint32 *)&ptrs[5];
		s = hsaKmtCreateQueue(node, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, sring, 4096,
				      NULL, &sdma);
		if (check(s == HSAKMT_STATUS_SUCCESS, "node %u: SDMA queue: status %d", node, s))
			check(hsaKmtDestroyQueue(sdma.QueueId) == HSAKMT_STATUS_SUCCESS,
			      "node %u: destroy the SDMA queue", node);
	}

	/* Bad arguments: a ring that is not a power of two; unmapped pointers. */
	bad.Queue_read_ptr_aql = &ptrs[6];
	bad.Queue_write_ptr_aql = &ptrs[7];
	s = hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL, ring,
			      3000, NULL, &bad);
	check(s != HSAKMT_STATUS_SUCCESS, "node %u: ring size 3000 refused (%d)", node, s);
	{
		static uint64_t unmapped[2];

		bad.Queue_read_ptr_aql = &unmapped[0];
		bad.Queue_write_ptr_aql = &unmapped[1];
		s = hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL,
				      ring, ring_size, NULL, &bad);
		check(s != HSAKMT_STATUS_SUCCESS,
		      "node %u: pointers outside GPU-mapped memory refused (%d)", node, s);
	}

	check(hsaKmtDestroyQueue(aql.QueueId) == HSAKMT_STATUS_SUCCESS, "node %u: destroy the AQL queue",
	      node);
	check(queue_dirs() == 0, "node %u: no queue directory left (%d)", node, queue_dirs());
out:
	free_system(ring, ring_size);
	free_system(ring2, ring_size);
	free_system(sring, 4096);
	free_system(ptrs, 4096);
}

int main(void)
{
	HsaSystemProperties sp;
	int gpus = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!check(hsaKmtOpenKFD() == HSAKMT_STATUS_SUCCESS, "hsaKmtOpenKFD") ||
	    !check(hsaKmtAcquireSystemProperties(&sp) == HSAKMT_STATUS_SUCCESS,
		   "hsaKmtAcquireSystemProperties"))
		goto done;
	for (uint32_t n = 0; n < sp.NumNodes; n++) {
		HsaNodeProperties np;

		if (hsaKmtGetNodeProperties(n, &np) != HSAKMT_STATUS_SUCCESS || !np.NumFComputeCores)
			continue;
		gpus++;
		test_node(n, &np);
	}
	check(gpus > 0, "%d GPU node(s) tested", gpus);
	hsaKmtReleaseSystemProperties();
	hsaKmtCloseKFD();
done:
	printf("hsakmt-queues: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
