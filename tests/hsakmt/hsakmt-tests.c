// SPDX-License-Identifier: GPL-2.0
/*
 * Guest test: Debian's unchanged libhsakmt 5.2.3 (the thunk ROCr uses)
 * against rkfd and the virtual GPUs, for every GPU node of the topology.
 *
 *   open/close   hsaKmtOpenKFD/CloseKFD (nesting), hsaKmtGetVersion (1.x)
 *   topology     hsaKmtAcquireSystemProperties (NumNodes = CPU + GPU nodes);
 *                per GPU node hsaKmtGetNodeProperties against sysfs and
 *                against a table of the profiles (vgpu/profile.rs), memory
 *                banks, caches, IO links
 *   clocks       hsaKmtGetClockCounters (GPU nodes and the CPU node)
 *   memory       per GPU node every kind libhsakmt offers: host-visible VRAM,
 *                VRAM without host access (PROT_NONE private mapping),
 *                GTT (non-paged system memory), paged system memory
 *                (USERPTR), malloc'ed memory registered with
 *                hsaKmtRegisterMemory*, AQL queue memory; alloc/map/unmap/
 *                free, peer mappings, CPU patterns through the mappings, the
 *                per-process VRAM accounting in
 *                /sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id> and mem_info,
 *                the GPU's mem_info_vram_used, allocations beyond the VRAM
 *                and beyond the system-memory limits failing cleanly
 *   graphics     hsaKmtRegisterGraphicsHandleToNodes on a PRIME dma-buf of
 *                a GEM object made on the node's render node (GEM_CREATE,
 *                PRIME_HANDLE_TO_FD: GET_DMABUF_INFO + IMPORT_DMABUF), the
 *                import mapped to the GPU, the CPU pattern through the GEM
 *                mmap, deregistered, the GEM handle and dma-buf closed
 *   events       create/set/reset/wait, cross-thread wake-up, timeouts,
 *                auto- vs manual-reset, multiple events
 *   threads      concurrent alloc/map/free and events on every GPU
 *   xnack        hsaKmtGetXNACKMode / hsaKmtSetXNACKMode
 *   svm          hsaKmtSVMSetAttr / hsaKmtSVMGetAttr (not gated on the
 *                SVMAPISupported capability in 5.2.3): attribute round
 *                trips over split ranges, GET_ATTR aggregation, node-id
 *                translation, bad arguments (rkfd records attributes only)
 *   fork         a forked child opens its own KFD process
 *   reopen       CloseKFD + OpenKFD in one process, memory works again
 *   children     a child that allocates on every GPU and exits without
 *                freeing, one killed while blocked in hsaKmtWaitOnEvent:
 *                rkfd must give everything back (the runner then unloads
 *                the modules and scans kmemleak and dmesg)
 *
 * Prints one line per check, a per-profile summary ("# profile ...") and
 * closes with "hsakmt: N passed, N failed"; exits non-zero on failure.
 *
 *   hsakmt-tests [-v]          the tests
 *   hsakmt-tests --child MODE  internal: the child processes (exit, kill)
 */
#define _GNU_SOURCE
#include <drm/amdgpu_drm.h>
#include <errno.h>
#include <fcntl.h>
#include <hsakmt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define TOPOLOGY "/sys/devices/virtual/kfd/kfd/topology"
#define PROC_DIR "/sys/class/kfd/kfd/proc"
#define KiB ((uint64_t)1024)
#define MiB ((uint64_t)1024 * 1024)
#define MAX_NODES 32

/* ------------------------------------------------------------------------
 * Reporting: every check counts for the whole program and for the current
 * scope (a profile name while a GPU node is tested, "common" otherwise).
 */

static int passed, failed;
static bool verbose;

struct tally {
	char name[32];
	int pass, fail;
};
static struct tally tallies[MAX_NODES + 2];
static int ntallies;
static struct tally *scope;

static void set_scope(const char *name)
{
	for (int i = 0; i < ntallies; i++) {
		if (!strcmp(tallies[i].name, name)) {
			scope = &tallies[i];
			return;
		}
	}
	if (ntallies == (int)(sizeof(tallies) / sizeof(tallies[0]))) {
		scope = &tallies[0];
		return;
	}
	scope = &tallies[ntallies++];
	snprintf(scope->name, sizeof(scope->name), "%s", name);
}

__attribute__((format(printf, 2, 3))) static bool check(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		passed++;
		scope->pass++;
	} else {
		failed++;
		scope->fail++;
	}
	printf("%s - [%s] ", ok ? "ok" : "not ok", scope->name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	return ok;
}

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void summary(void)
{
	for (int i = 0; i < ntallies; i++)
		printf("# profile %s: %d passed, %d failed\n", tallies[i].name, tallies[i].pass,
		       tallies[i].fail);
	printf("hsakmt: %d passed, %d failed\n", passed, failed);
	fflush(stdout);
}

/* A hang must still end with the closing line (and count as a failure). */
static void on_alarm(int sig)
{
	char buf[128];
	int n = snprintf(buf, sizeof(buf), "not ok - timed out\nhsakmt: %d passed, %d failed\n",
			 passed, failed + 1);

	(void)sig;
	if (write(STDOUT_FILENO, buf, n) < 0)
		_exit(3);
	_exit(2);
}

static const char *status_name(HSAKMT_STATUS s)
{
	switch (s) {
	case HSAKMT_STATUS_SUCCESS: return "SUCCESS";
	case HSAKMT_STATUS_ERROR: return "ERROR";
	case HSAKMT_STATUS_DRIVER_MISMATCH: return "DRIVER_MISMATCH";
	case HSAKMT_STATUS_INVALID_PARAMETER: return "INVALID_PARAMETER";
	case HSAKMT_STATUS_INVALID_HANDLE: return "INVALID_HANDLE";
	case HSAKMT_STATUS_INVALID_NODE_UNIT: return "INVALID_NODE_UNIT";
	case HSAKMT_STATUS_NO_MEMORY: return "NO_MEMORY";
	case HSAKMT_STATUS_BUFFER_TOO_SMALL: return "BUFFER_TOO_SMALL";
	case HSAKMT_STATUS_NOT_IMPLEMENTED: return "NOT_IMPLEMENTED";
	case HSAKMT_STATUS_NOT_SUPPORTED: return "NOT_SUPPORTED";
	case HSAKMT_STATUS_UNAVAILABLE: return "UNAVAILABLE";
	case HSAKMT_STATUS_OUT_OF_RESOURCES: return "OUT_OF_RESOURCES";
	case HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED: return "KERNEL_IO_CHANNEL_NOT_OPENED";
	case HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR: return "KERNEL_COMMUNICATION_ERROR";
	case HSAKMT_STATUS_KERNEL_ALREADY_OPENED: return "KERNEL_ALREADY_OPENED";
	case HSAKMT_STATUS_HSAMMU_UNAVAILABLE: return "HSAMMU_UNAVAILABLE";
	case HSAKMT_STATUS_WAIT_FAILURE: return "WAIT_FAILURE";
	case HSAKMT_STATUS_WAIT_TIMEOUT: return "WAIT_TIMEOUT";
	case HSAKMT_STATUS_MEMORY_ALREADY_REGISTERED: return "MEMORY_ALREADY_REGISTERED";
	case HSAKMT_STATUS_MEMORY_NOT_REGISTERED: return "MEMORY_NOT_REGISTERED";
	case HSAKMT_STATUS_MEMORY_ALIGNMENT: return "MEMORY_ALIGNMENT";
	default: return "?";
	}
}

/* "name: status" for a check expecting `want`. */
#define EXPECT(call, want, ...)                                                          \
	({                                                                               \
		HSAKMT_STATUS _s = (call);                                               \
		char _what[160];                                                         \
		snprintf(_what, sizeof(_what), __VA_ARGS__);                             \
		check(_s == (want), "%s: %s (want %s)", _what, status_name(_s),          \
		      status_name(want));                                                \
	})
#define EXPECT_OK(call, ...) EXPECT(call, HSAKMT_STATUS_SUCCESS, __VA_ARGS__)

static double now_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000l };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ------------------------------------------------------------------------
 * sysfs: "name value" files.
 */

struct kvfile {
	bool ok;
	int n;
	struct {
		char key[64];
		unsigned long long val;
	} kv[160];
};

__attribute__((format(printf, 2, 3))) static bool kv_read(struct kvfile *f, const char *fmt, ...)
{
	char path[512], line[512];
	va_list ap;
	FILE *fp;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	memset(f, 0, sizeof(*f));
	fp = fopen(path, "r");
	if (!fp)
		return false;
	while (fgets(line, sizeof(line), fp) && f->n < (int)(sizeof(f->kv) / sizeof(f->kv[0]))) {
		if (sscanf(line, "%63s %llu", f->kv[f->n].key, &f->kv[f->n].val) == 2)
			f->n++;
	}
	fclose(fp);
	f->ok = true;
	return true;
}

static bool kv_get(const struct kvfile *f, const char *key, unsigned long long *val)
{
	for (int i = 0; i < f->n; i++) {
		if (!strcmp(f->kv[i].key, key)) {
			*val = f->kv[i].val;
			return true;
		}
	}
	return false;
}

/* A value of a "name value" file, or `dflt` if the key is missing. */
static unsigned long long kv_or(const struct kvfile *f, const char *key, unsigned long long dflt)
{
	unsigned long long v;

	return kv_get(f, key, &v) ? v : dflt;
}

/* A file holding one unsigned number; false if it cannot be read. */
__attribute__((format(printf, 2, 3))) static bool read_u64(unsigned long long *val, const char *fmt, ...)
{
	char path[512];
	va_list ap;
	FILE *fp;
	bool ok;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	fp = fopen(path, "r");
	if (!fp)
		return false;
	ok = fscanf(fp, "%llu", val) == 1;
	fclose(fp);
	return ok;
}

/* ------------------------------------------------------------------------
 * The virtual GPU profiles (vgpu/profile.rs), as libhsakmt must report them.
 * Every profile has 1 shader engine x 1 shader array x 4 CUs.
 */

struct profile {
	const char *name;
	uint32_t gfx_target_version;
	/* EngineId: gfx major.minor.stepping, and uCode = fw_version & 0x3ff
	 * (the MEC firmware each profile publishes, vgpu/profile.rs). */
	uint32_t major, minor, stepping, ucode;
	uint16_t device_id;
	uint32_t simd_per_cu, simd_count, wave_front_size, max_waves_per_simd, lds_kib;
	uint32_t array_count, arrays_per_engine, cu_per_array, max_slots_scratch_cu;
	uint32_t sdma, sdma_xgmi, sdma_queues, cp_queues;
	uint32_t max_engine_clk_mhz, mem_width, mem_clk_max_mhz;
	uint64_t default_vram_mib;
	bool apu, sram_ecc, mem_ecc, vram_public;
	/* Cache entries: level-1 caches once per CU group, others once. */
	uint32_t caches;
};

static const struct profile profiles[] = {
	/* MI210: L1 per CU (4), I$ and K$ per 2 CUs (2 + 2), L2 = 9. */
	{ "gfx90a", 90010, 9, 0, 10, 69, 0x740f, 4, 16, 64, 8, 64, 1, 1, 4, 32, 2, 3, 8, 24,
	  1700, 4096, 1600, 512, false, true, true, true, 9 },
	/* W6800: L0 4, I$ 2, K$ 2, GL1 1, L2 1, L3 1 = 11. */
	{ "gfx1030", 100300, 10, 3, 0, 113, 0x73a3, 2, 8, 32, 16, 64, 1, 1, 4, 32, 4, 0, 8, 24,
	  2320, 256, 1000, 512, false, false, false, true, 11 },
	/* W7900: as gfx1030 = 11. */
	{ "gfx1100", 110000, 11, 0, 0, 510, 0x7448, 2, 8, 32, 16, 64, 1, 1, 4, 32, 2, 0, 6, 24,
	  2495, 384, 1124, 512, false, false, false, true, 11 },
	/* 780M APU: no L3 = 10. */
	{ "gfx1103", 110003, 11, 0, 3, 40, 0x15bf, 2, 8, 32, 16, 64, 1, 1, 4, 32, 1, 0, 6, 24,
	  2700, 128, 2800, 256, true, false, false, true, 10 },
};

static const struct profile *profile_by_target(unsigned long long v)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (profiles[i].gfx_target_version == v)
			return &profiles[i];
	return NULL;
}

/* ------------------------------------------------------------------------
 * The topology as sysfs shows it.
 */

struct gpu {
	uint32_t node;		/* HSA node id = sysfs node index */
	uint32_t gpu_id;
	const struct profile *p;	/* NULL: an unknown target */
	char name[32];		/* profile name (or gfx target) for messages */
	int render_minor;
	uint64_t vram_size;	/* mem_banks/0 size_in_bytes */
	bool vram_public;	/* heap type FB_PUBLIC */
};

static struct gpu gpus[MAX_NODES];
static int ngpus, ncpu_nodes, nnodes;

static bool scan_topology(void)
{
	struct kvfile props, bank;

	ngpus = ncpu_nodes = nnodes = 0;
	for (int n = 0; n < MAX_NODES; n++) {
		unsigned long long gpu_id;

		if (!read_u64(&gpu_id, TOPOLOGY "/nodes/%d/gpu_id", n))
			break;
		nnodes++;
		if (!kv_read(&props, TOPOLOGY "/nodes/%d/properties", n))
			return false;
		if (!gpu_id) {
			if (kv_or(&props, "cpu_cores_count", 0))
				ncpu_nodes++;
			continue;
		}
		struct gpu *g = &gpus[ngpus++];
		g->node = n;
		g->gpu_id = gpu_id;
		g->p = profile_by_target(kv_or(&props, "gfx_target_version", 0));
		if (g->p)
			snprintf(g->name, sizeof(g->name), "%s", g->p->name);
		else
			snprintf(g->name, sizeof(g->name), "target-%llu",
				 kv_or(&props, "gfx_target_version", 0));
		g->render_minor = kv_or(&props, "drm_render_minor", 0);
		if (kv_read(&bank, TOPOLOGY "/nodes/%d/mem_banks/0/properties", n)) {
			g->vram_size = kv_or(&bank, "size_in_bytes", 0);
			g->vram_public = kv_or(&bank, "heap_type", 0) == HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC;
		}
	}
	return nnodes > 0;
}

/* The process's VRAM on a GPU as rkfd accounts it (bytes). */
static long long proc_vram(pid_t pid, uint32_t gpu_id)
{
	unsigned long long v;

	if (!read_u64(&v, PROC_DIR "/%d/vram_%u", (int)pid, gpu_id))
		return -1;
	return (long long)v;
}

/* A line of /sys/class/kfd/kfd/proc/<pid>/mem_info (KiB), or -1. */
static long long proc_mem_info(pid_t pid, const char *key)
{
	struct kvfile f;
	unsigned long long v;

	if (!kv_read(&f, PROC_DIR "/%d/mem_info", (int)pid) || !kv_get(&f, key, &v))
		return -1;
	return (long long)v;
}

/* The GPU's VRAM in use, as its DRM device reports it (bytes), or -1. */
static long long gpu_vram_used(const struct gpu *g)
{
	unsigned long long v;

	if (!read_u64(&v, "/sys/class/drm/renderD%d/device/mem_info_vram_used", g->render_minor))
		return -1;
	return (long long)v;
}

/*
 * Finds the mapping of `addr` in /proc/self/maps: its permissions and path.
 */
static bool maps_find(const void *addr, char perms[8], char *path, size_t pathlen)
{
	char line[1024];
	FILE *fp = fopen("/proc/self/maps", "r");
	bool found = false;

	if (!fp)
		return false;
	while (fgets(line, sizeof(line), fp)) {
		unsigned long start, end;
		char p[8] = "", file[512] = "";
		int n = sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &start, &end, p, file);

		if (n >= 3 && (unsigned long)addr >= start && (unsigned long)addr < end) {
			snprintf(perms, 8, "%s", p);
			snprintf(path, pathlen, "%s", n == 4 ? file : "");
			found = true;
			break;
		}
	}
	fclose(fp);
	return found;
}

/* Returns the index of the first non-zero word, or -1. */
static long first_nonzero(const void *p, size_t n)
{
	const volatile uint64_t *q = p;

	for (size_t i = 0; i < n / 8; i++)
		if (q[i])
			return (long)i;
	return -1;
}

/* Writes a pattern of 64-bit words derived from `seed`. */
static void fill(void *p, size_t n, uint64_t seed)
{
	volatile uint64_t *q = p;

	for (size_t i = 0; i < n / 8; i++)
		q[i] = seed ^ (i * 0x9e3779b97f4a7c15ull);
}

/* Checks the pattern; returns the index of the first bad word, or -1. */
static long verify(const void *p, size_t n, uint64_t seed)
{
	const volatile uint64_t *q = p;

	for (size_t i = 0; i < n / 8; i++)
		if (q[i] != (seed ^ (i * 0x9e3779b97f4a7c15ull)))
			return (long)i;
	return -1;
}

static HsaMemFlags vram_flags(bool host_access)
{
	HsaMemFlags f = { 0 };

	f.ui32.NonPaged = 1;
	f.ui32.HostAccess = host_access;
	f.ui32.CoarseGrain = 1;
	f.ui32.NoSubstitute = 1;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	return f;
}

static HsaMemFlags system_flags(bool nonpaged)
{
	HsaMemFlags f = { 0 };

	f.ui32.NonPaged = nonpaged;
	f.ui32.HostAccess = 1;
	f.ui32.CoarseGrain = 1;
	f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
	return f;
}

static HSAKMT_STATUS map_to_node(void *p, uint64_t size, uint32_t node)
{
	HsaMemMapFlags mf = { 0 };
	HSAuint64 alt = 0;

	return hsaKmtMapMemoryToGPUNodes(p, size, &alt, mf, 1, &node);
}

/* ------------------------------------------------------------------------
 * Topology.
 */

static void test_system(void)
{
	HsaSystemProperties sys = { 0 };
	char want[256] = "", *env = getenv("RKFD_GPU");

	set_scope("common");
	bool scanned = scan_topology();
	check(scanned, "sysfs topology readable (%d nodes: %d CPU, %d GPU)", nnodes, ncpu_nodes, ngpus);
	if (!EXPECT_OK(hsaKmtAcquireSystemProperties(&sys), "hsaKmtAcquireSystemProperties"))
		return;
	check(sys.NumNodes == (HSAuint32)nnodes && nnodes == ncpu_nodes + ngpus,
	      "NumNodes %u = sysfs nodes %d = CPU nodes %d + GPUs %d", sys.NumNodes, nnodes,
	      ncpu_nodes, ngpus);
	check(ngpus > 0, "at least one GPU node (%d)", ngpus);

	/* The runner passes the profile list it loaded the virtual GPU with. */
	if (env && *env) {
		char got[256] = "";
		int found[MAX_NODES] = { 0 };
		bool all = true;
		int listed = 0;
		char *dup = strdup(env), *save = NULL;

		for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			bool hit = false;

			listed++;
			for (int i = 0; i < ngpus && !hit; i++) {
				if (!found[i] && !strcmp(gpus[i].name, t)) {
					found[i] = 1;
					hit = true;
				}
			}
			all &= hit;
		}
		free(dup);
		for (int i = 0; i < ngpus; i++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? "," : "",
				 gpus[i].name);
		snprintf(want, sizeof(want), "%s", env);
		bool listed_only = true;
		for (int i = 0; i < ngpus; i++) {
			char *hit = strstr(want, gpus[i].name);
			size_t len = strlen(gpus[i].name);

			listed_only &= hit && (hit == want || hit[-1] == ',') &&
				       (hit[len] == ',' || !hit[len]);
		}
		check(all && listed_only && listed <= ngpus, "GPU nodes %s are the profiles loaded (%s)",
		      got, want);
	}
	for (int i = 0; i < ngpus; i++)
		check(gpus[i].p != NULL, "GPU node %u (%s) has a known gfx target", gpus[i].node,
		      gpus[i].name);

	for (int n = 0; n < nnodes; n++) {
		HsaNodeProperties np;
		unsigned long long gpu_id = 1;

		read_u64(&gpu_id, TOPOLOGY "/nodes/%d/gpu_id", n);
		if (gpu_id)
			continue;
		memset(&np, 0, sizeof(np));
		if (EXPECT_OK(hsaKmtGetNodeProperties(n, &np), "hsaKmtGetNodeProperties(CPU node %d)", n))
			check(np.NumFComputeCores == 0 && np.NumCPUCores > 0,
			      "CPU node %d: %u CPU cores, no SIMDs", n, np.NumCPUCores);
	}
	HsaNodeProperties np;
	EXPECT(hsaKmtGetNodeProperties(sys.NumNodes, &np), HSAKMT_STATUS_INVALID_NODE_UNIT,
	       "hsaKmtGetNodeProperties(node %u, past the last)", sys.NumNodes);
}

/* Compares one HsaNodeProperties field with a sysfs key (missing key = 0). */
#define SAME(field, key)                                                                    \
	do {                                                                                \
		unsigned long long _want = kv_or(&props, key, 0);                           \
		unsigned long long _got = (unsigned long long)(np.field);                   \
		nfields++;                                                                  \
		if (_got != _want) {                                                        \
			printf("#   %s = %llu, sysfs %s = %llu\n", #field, _got, key, _want); \
			nbad++;                                                             \
		}                                                                           \
	} while (0)

static void test_gpu_topology(const struct gpu *g)
{
	const struct profile *p = g->p;
	struct kvfile props;
	HsaNodeProperties np;
	int nfields = 0, nbad = 0;

	if (!check(kv_read(&props, TOPOLOGY "/nodes/%u/properties", g->node),
		   "node %u properties readable", g->node))
		return;
	memset(&np, 0, sizeof(np));
	if (!EXPECT_OK(hsaKmtGetNodeProperties(g->node, &np), "hsaKmtGetNodeProperties(node %u)",
		       g->node))
		return;

	/* Everything libhsakmt takes from sysfs as it is. */
	SAME(NumCPUCores, "cpu_cores_count");
	SAME(NumFComputeCores, "simd_count");
	SAME(NumCaches, "caches_count");
	SAME(NumIOLinks, "io_links_count");
	SAME(FComputeIdLo, "simd_id_base");
	SAME(Capability.Value, "capability");
	SAME(MaxWavesPerSIMD, "max_waves_per_simd");
	SAME(LDSSizeInKB, "lds_size_in_kb");
	SAME(GDSSizeInKB, "gds_size_in_kb");
	SAME(WaveFrontSize, "wave_front_size");
	SAME(NumShaderBanks, "array_count");
	SAME(NumArrays, "simd_arrays_per_engine");
	SAME(NumCUPerArray, "cu_per_simd_array");
	SAME(NumSIMDPerCU, "simd_per_cu");
	SAME(MaxSlotsScratchCU, "max_slots_scratch_cu");
	SAME(VendorId, "vendor_id");
	SAME(DeviceId, "device_id");
	SAME(LocationId, "location_id");
	SAME(Domain, "domain");
	SAME(MaxEngineClockMhzFCompute, "max_engine_clk_fcompute");
	SAME(MaxEngineClockMhzCCompute, "max_engine_clk_ccompute");
	SAME(DrmRenderMinor, "drm_render_minor");
	SAME(HiveID, "hive_id");
	SAME(NumSdmaEngines, "num_sdma_engines");
	SAME(NumSdmaXgmiEngines, "num_sdma_xgmi_engines");
	SAME(NumSdmaQueuesPerEngine, "num_sdma_queues_per_engine");
	SAME(NumCpQueues, "num_cp_queues");
	SAME(NumGws, "num_gws");
	SAME(UniqueID, "unique_id");
	SAME(DebugProperties.Value, "debug_prop");
	{
		unsigned long long fw = kv_or(&props, "fw_version", 0) & 0x3ff;
		unsigned long long sdma = kv_or(&props, "sdma_fw_version", 0) & 0x3ff;

		nfields += 2;
		if (np.EngineId.ui32.uCode != fw || np.uCodeEngineVersions.uCodeSDMA != sdma) {
			printf("#   uCode %u/%u, sysfs fw_version %llu sdma_fw_version %llu\n",
			       np.EngineId.ui32.uCode, np.uCodeEngineVersions.uCodeSDMA, fw, sdma);
			nbad++;
		}
	}
	check(nbad == 0, "node %u: %d of %d properties as sysfs shows them", g->node,
	      nfields - nbad, nfields);
	check(np.NumMemoryBanks >= kv_or(&props, "mem_banks_count", 0) && np.NumMemoryBanks > 0,
	      "node %u: NumMemoryBanks %u (sysfs mem_banks_count %llu, plus libhsakmt's apertures)",
	      g->node, np.NumMemoryBanks, kv_or(&props, "mem_banks_count", 0));
	note("node %u: AMDName '%s', LocalMemSize %" PRIu64 " (sysfs local_mem_size %llu), "
	     "capability %#x, gpu_id %u, renderD%d",
	     g->node, (const char *)np.AMDName, (uint64_t)np.LocalMemSize,
	     kv_or(&props, "local_mem_size", 0), np.Capability.Value, g->gpu_id, np.DrmRenderMinor);

	if (!p)
		return;
	/* The profile table (vgpu/profile.rs). */
	check(np.EngineId.ui32.Major == p->major && np.EngineId.ui32.Minor == p->minor &&
		      np.EngineId.ui32.Stepping == p->stepping,
	      "EngineId %u.%u.%u = gfx %u.%u.%u", np.EngineId.ui32.Major, np.EngineId.ui32.Minor,
	      np.EngineId.ui32.Stepping, p->major, p->minor, p->stepping);
	check(np.EngineId.ui32.uCode == p->ucode, "EngineId uCode (MEC firmware) %u = %u",
	      np.EngineId.ui32.uCode, p->ucode);
	check(np.DeviceId == p->device_id && np.VendorId == 0x1002, "device %04x:%04x = 1002:%04x",
	      np.VendorId, np.DeviceId, p->device_id);
	check(np.NumFComputeCores == p->simd_count && np.NumSIMDPerCU == p->simd_per_cu,
	      "%u SIMDs, %u per CU (want %u, %u)", np.NumFComputeCores, np.NumSIMDPerCU,
	      p->simd_count, p->simd_per_cu);
	check(np.NumSIMDPerCU && np.NumFComputeCores / np.NumSIMDPerCU == 4, "4 CUs (%u)",
	      np.NumSIMDPerCU ? np.NumFComputeCores / np.NumSIMDPerCU : 0);
	check(np.NumShaderBanks == p->array_count && np.NumArrays == p->arrays_per_engine &&
		      np.NumCUPerArray == p->cu_per_array,
	      "shader arrays %u, per engine %u, CUs per array %u (want %u, %u, %u)",
	      np.NumShaderBanks, np.NumArrays, np.NumCUPerArray, p->array_count,
	      p->arrays_per_engine, p->cu_per_array);
	check(np.WaveFrontSize == p->wave_front_size && np.MaxWavesPerSIMD == p->max_waves_per_simd,
	      "wavefront %u, %u waves per SIMD (want %u, %u)", np.WaveFrontSize,
	      np.MaxWavesPerSIMD, p->wave_front_size, p->max_waves_per_simd);
	check(np.LDSSizeInKB == p->lds_kib && np.MaxSlotsScratchCU == p->max_slots_scratch_cu,
	      "LDS %u KiB, %u scratch slots per CU", np.LDSSizeInKB, np.MaxSlotsScratchCU);
	check(np.NumSdmaEngines == p->sdma && np.NumSdmaXgmiEngines == p->sdma_xgmi &&
		      np.NumSdmaQueuesPerEngine == p->sdma_queues && np.NumCpQueues == p->cp_queues,
	      "SDMA %u+%u xgmi engines x %u queues, %u CP queues (want %u+%u x %u, %u)",
	      np.NumSdmaEngines, np.NumSdmaXgmiEngines, np.NumSdmaQueuesPerEngine,
	      np.NumCpQueues, p->sdma, p->sdma_xgmi, p->sdma_queues, p->cp_queues);
	check(np.MaxEngineClockMhzFCompute == p->max_engine_clk_mhz, "engine clock %u MHz (want %u)",
	      np.MaxEngineClockMhzFCompute, p->max_engine_clk_mhz);
	check(np.NumCPUCores == 0, "no CPU cores on the GPU node (%s)", p->apu ? "APU" : "dGPU");
	check((np.Capability.Value & 0x3000) == 0x2000, "capability %#x: 64-bit doorbells (2.0)",
	      np.Capability.Value);
	check(!!(np.Capability.Value & 0x04000000) == p->sram_ecc &&
		      !!(np.Capability.Value & 0x00100000) == p->mem_ecc,
	      "capability %#x: SRAM ECC %s, memory ECC %s", np.Capability.Value,
	      p->sram_ecc ? "yes" : "no", p->mem_ecc ? "yes" : "no");
	check(np.NumCaches == p->caches, "%u cache entries (want %u)", np.NumCaches, p->caches);
	check(np.DrmRenderMinor >= 128 && np.DrmRenderMinor <= 255, "render minor %d in 128..255",
	      np.DrmRenderMinor);
	check(np.UniqueID != 0, "unique id %#" PRIx64, (uint64_t)np.UniqueID);
}

static void test_gpu_memory_props(const struct gpu *g)
{
	HsaNodeProperties np;
	HsaMemoryProperties mp[16];
	struct kvfile props, bank;
	unsigned long long vram_mb = 0;
	uint64_t want_vram;
	bool lds = false, scratch = false, others_ok = true;

	memset(&np, 0, sizeof(np));
	memset(mp, 0, sizeof(mp));
	if (hsaKmtGetNodeProperties(g->node, &np) != HSAKMT_STATUS_SUCCESS ||
	    !kv_read(&props, TOPOLOGY "/nodes/%u/properties", g->node))
		return;
	if (!check(np.NumMemoryBanks > 0 && np.NumMemoryBanks <= 16, "%u memory banks", np.NumMemoryBanks))
		return;
	if (!EXPECT_OK(hsaKmtGetNodeMemoryProperties(g->node, np.NumMemoryBanks, mp),
		       "hsaKmtGetNodeMemoryProperties(node %u, %u)", g->node, np.NumMemoryBanks))
		return;
	unsigned long long nbanks = kv_or(&props, "mem_banks_count", 0);
	for (unsigned b = 0; b < np.NumMemoryBanks; b++) {
		if (b < nbanks) {
			kv_read(&bank, TOPOLOGY "/nodes/%u/mem_banks/%u/properties", g->node, b);
			check(bank.ok && mp[b].HeapType == kv_or(&bank, "heap_type", ~0ull) &&
				      mp[b].SizeInBytes == kv_or(&bank, "size_in_bytes", 0) &&
				      mp[b].Width == kv_or(&bank, "width", 0) &&
				      mp[b].MemoryClockMax == kv_or(&bank, "mem_clk_max", 0),
			      "bank %u: heap %u, %" PRIu64 " bytes, width %u, %u MHz as sysfs", b,
			      mp[b].HeapType, (uint64_t)mp[b].SizeInBytes, mp[b].Width,
			      mp[b].MemoryClockMax);
			continue;
		}
		/* libhsakmt's own entries: the GPU's apertures. */
		if (verbose)
			note("bank %u: heap %u base %#" PRIx64 " size %#" PRIx64, b, mp[b].HeapType,
			     (uint64_t)mp[b].VirtualBaseAddress, (uint64_t)mp[b].SizeInBytes);
		if (mp[b].HeapType == HSA_HEAPTYPE_GPU_LDS)
			lds = mp[b].VirtualBaseAddress == 1ull << 48;
		else if (mp[b].HeapType == HSA_HEAPTYPE_GPU_SCRATCH)
			scratch = mp[b].VirtualBaseAddress == 2ull << 48;
		else if (mp[b].HeapType < HSA_HEAPTYPE_GPU_GDS || mp[b].HeapType >= HSA_HEAPTYPE_NUMHEAPTYPES)
			others_ok = false;
	}
	check(lds && scratch && others_ok,
	      "aperture banks: LDS at 1<<48, scratch at 2<<48 (GET_PROCESS_APERTURES_NEW)");
	if (!g->p)
		return;
	read_u64(&vram_mb, "/sys/module/amdgpu/parameters/vram_mb");
	want_vram = (vram_mb ? vram_mb : g->p->default_vram_mib) * MiB;
	check(mp[0].SizeInBytes == want_vram, "VRAM %" PRIu64 " MiB (want %" PRIu64 " MiB%s)",
	      (uint64_t)mp[0].SizeInBytes / MiB, want_vram / MiB, vram_mb ? ", vram_mb" : "");
	check(mp[0].HeapType == (g->p->vram_public ? HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC
						   : HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE),
	      "VRAM heap type %u (%s BAR)", mp[0].HeapType, g->p->vram_public ? "large" : "small");
	check(mp[0].Width == g->p->mem_width && mp[0].MemoryClockMax == g->p->mem_clk_max_mhz,
	      "memory %u bits at %u MHz (want %u, %u)", mp[0].Width, mp[0].MemoryClockMax,
	      g->p->mem_width, g->p->mem_clk_max_mhz);
}

static void test_gpu_caches(const struct gpu *g)
{
	HsaNodeProperties np;
	HsaCacheProperties *cp;
	struct kvfile c;
	int data_cu = 0, bad = 0;

	memset(&np, 0, sizeof(np));
	if (hsaKmtGetNodeProperties(g->node, &np) != HSAKMT_STATUS_SUCCESS)
		return;
	if (!check(np.NumCaches > 0, "%u caches", np.NumCaches))
		return;
	cp = calloc(np.NumCaches, sizeof(*cp));
	if (!EXPECT_OK(hsaKmtGetNodeCacheProperties(g->node, np.FComputeIdLo, np.NumCaches, cp),
		       "hsaKmtGetNodeCacheProperties(node %u, %u)", g->node, np.NumCaches)) {
		free(cp);
		return;
	}
	for (unsigned i = 0; i < np.NumCaches; i++) {
		if (cp[i].CacheType.ui32.Data && cp[i].CacheType.ui32.HSACU &&
		    !cp[i].CacheType.ui32.Instruction)
			data_cu++;
		if (!kv_read(&c, TOPOLOGY "/nodes/%u/caches/%u/properties", g->node, i) ||
		    cp[i].CacheLevel != kv_or(&c, "level", 0) ||
		    cp[i].CacheSize != kv_or(&c, "size", 0) ||
		    cp[i].CacheLineSize != kv_or(&c, "cache_line_size", 0) ||
		    cp[i].CacheType.Value != kv_or(&c, "type", 0) ||
		    cp[i].ProcessorIdLow != kv_or(&c, "processor_id_low", 0)) {
			printf("#   cache %u: level %u size %u line %u type %#x cpu %u differs from sysfs\n",
			       i, cp[i].CacheLevel, cp[i].CacheSize, cp[i].CacheLineSize,
			       cp[i].CacheType.Value, cp[i].ProcessorIdLow);
			bad++;
		}
		if (cp[i].CacheLevel < 1 || cp[i].CacheLevel > 3 || !cp[i].CacheSize)
			bad++;
	}
	check(data_cu > 0, "%d caches of type data|HSACU (ROCr needs one)", data_cu);
	check(bad == 0, "%u caches match sysfs (level 1..3, size > 0)", np.NumCaches);
	free(cp);
}

static void test_gpu_io_links(const struct gpu *g)
{
	HsaNodeProperties np;
	HsaIoLinkProperties lp[MAX_NODES];
	struct kvfile l;
	int bad = 0, to_cpu = 0;

	memset(&np, 0, sizeof(np));
	if (hsaKmtGetNodeProperties(g->node, &np) != HSAKMT_STATUS_SUCCESS)
		return;
	if (!check(np.NumIOLinks > 0 && np.NumIOLinks <= MAX_NODES, "%u IO links", np.NumIOLinks))
		return;
	memset(lp, 0, sizeof(lp));
	if (!EXPECT_OK(hsaKmtGetNodeIoLinkProperties(g->node, np.NumIOLinks, lp),
		       "hsaKmtGetNodeIoLinkProperties(node %u, %u)", g->node, np.NumIOLinks))
		return;
	for (unsigned i = 0; i < np.NumIOLinks; i++) {
		unsigned long long to_gpu_id = 1;

		if (!kv_read(&l, TOPOLOGY "/nodes/%u/io_links/%u/properties", g->node, i) ||
		    lp[i].IoLinkType != kv_or(&l, "type", 0) || lp[i].NodeFrom != g->node ||
		    lp[i].NodeTo != kv_or(&l, "node_to", ~0ull) ||
		    lp[i].Weight != kv_or(&l, "weight", 0) ||
		    lp[i].MinimumBandwidth != kv_or(&l, "min_bandwidth", 0) ||
		    lp[i].MaximumBandwidth != kv_or(&l, "max_bandwidth", 0)) {
			printf("#   link %u: type %u %u->%u weight %u differs from sysfs\n", i,
			       lp[i].IoLinkType, lp[i].NodeFrom, lp[i].NodeTo, lp[i].Weight);
			bad++;
		}
		read_u64(&to_gpu_id, TOPOLOGY "/nodes/%u/gpu_id", lp[i].NodeTo);
		if (!to_gpu_id && lp[i].IoLinkType == HSA_IOLINKTYPE_PCIEXPRESS)
			to_cpu++;
	}
	check(bad == 0, "%u IO links match sysfs", np.NumIOLinks);
	check(to_cpu >= 1, "a PCIe link to a CPU node (%d)", to_cpu);
}

/* ------------------------------------------------------------------------
 * Clock counters.
 */

static void test_clocks(uint32_t node, const char *what)
{
	HsaClockCounters a = { 0 }, b = { 0 };
	uint64_t raw0, raw1, boot0;

	raw0 = now_ns(CLOCK_MONOTONIC_RAW);
	boot0 = now_ns(CLOCK_BOOTTIME);
	if (!EXPECT_OK(hsaKmtGetClockCounters(node, &a), "hsaKmtGetClockCounters(%s node %u)", what, node))
		return;
	raw1 = now_ns(CLOCK_MONOTONIC_RAW);
	sleep_ms(20);
	if (!EXPECT_OK(hsaKmtGetClockCounters(node, &b), "hsaKmtGetClockCounters(%s node %u) again",
		       what, node))
		return;
	check(a.SystemClockFrequencyHz == 1000000000ull, "system clock frequency %" PRIu64 " Hz",
	      (uint64_t)a.SystemClockFrequencyHz);
	check(a.CPUClockCounter >= raw0 && a.CPUClockCounter <= raw1,
	      "CPU counter is CLOCK_MONOTONIC_RAW in ns (%" PRIu64 " in [%" PRIu64 ", %" PRIu64 "])",
	      (uint64_t)a.CPUClockCounter, raw0, raw1);
	check(a.SystemClockCounter >= boot0 && a.SystemClockCounter <= now_ns(CLOCK_BOOTTIME),
	      "system counter is CLOCK_BOOTTIME in ns");
	check(b.CPUClockCounter > a.CPUClockCounter && b.SystemClockCounter > a.SystemClockCounter,
	      "counters advance (+%" PRIu64 " ns over a 20 ms sleep)",
	      (uint64_t)(b.CPUClockCounter - a.CPUClockCounter));
	if (node == 0)
		/* The CPU node has no GPU counter (upstream: 0 without a device). */
		check(a.GPUClockCounter == 0 && b.GPUClockCounter == 0, "no GPU counter on the CPU node (%"
		      PRIu64 ")", (uint64_t)a.GPUClockCounter);
	else
		check(b.GPUClockCounter > a.GPUClockCounter, "GPU counter advances (%" PRIu64 " -> %" PRIu64 ")",
		      (uint64_t)a.GPUClockCounter, (uint64_t)b.GPUClockCounter);
}

/* ------------------------------------------------------------------------
 * Memory.
 */

/* The VRAM counters of every GPU for this process. */
static void snapshot_vram(long long *v)
{
	for (int i = 0; i < ngpus; i++)
		v[i] = proc_vram(getpid(), gpus[i].gpu_id);
}

/* Whether every GPU's counter is `base` plus `delta` on GPU `gi`. */
static bool vram_is(const long long *base, int gi, long long delta, char *msg, size_t len)
{
	long long now[MAX_NODES];
	bool ok = true;

	snapshot_vram(now);
	msg[0] = 0;
	for (int i = 0; i < ngpus; i++) {
		long long want = base[i] + (i == gi ? delta : 0);

		if (base[i] < 0 || now[i] != want) {
			ok = false;
			snprintf(msg + strlen(msg), len - strlen(msg), " vram_%u=%lld (want %lld)",
				 gpus[i].gpu_id, now[i], want);
		}
	}
	return ok;
}

static void test_vram(const struct gpu *g, bool host_access)
{
	const uint64_t size = host_access ? 1 * MiB : 2 * MiB;
	const char *kind = host_access ? "host-visible VRAM" : "VRAM without host access";
	long long base[MAX_NODES];
	char msg[512], perms[8], path[256], want_path[64];
	HSAKMT_STATUS s;
	void *p = NULL;

	snapshot_vram(base);
	s = hsaKmtAllocMemory(g->node, size, vram_flags(host_access), &p);
	if (host_access && !g->vram_public) {
		/* A small BAR: upstream refuses host-visible VRAM. */
		check(s != HSAKMT_STATUS_SUCCESS, "%s on a small-BAR GPU refused: %s", kind,
		      status_name(s));
		if (s == HSAKMT_STATUS_SUCCESS)
			hsaKmtFreeMemory(p, size);
		return;
	}
	if (!check(s == HSAKMT_STATUS_SUCCESS && p, "alloc %" PRIu64 " KiB %s: %s", size / KiB, kind,
		   status_name(s)))
		return;
	check(vram_is(base, g - gpus, size, msg, sizeof(msg)),
	      "vram_%u grew by %" PRIu64 " KiB, other GPUs unchanged%s", g->gpu_id, size / KiB, msg);
	snprintf(want_path, sizeof(want_path), "/dev/dri/renderD%d", g->render_minor);
	if (check(maps_find(p, perms, path, sizeof(path)), "%s is mapped in the process", kind))
		check(!strcmp(path, want_path) &&
			      !strcmp(perms, host_access ? "rw-s" : "---p"),
		      "CPU mapping %s %s (want %s %s)", perms, path, host_access ? "rw-s" : "---p",
		      want_path);
	if (host_access) {
		long bad;

		bad = first_nonzero(p, size);
		check(bad == -1, "new VRAM reads as zero (first non-zero word %ld)", bad);
		fill(p, size, 0x5aa5f00d00000000ull | g->gpu_id);
		bad = verify(p, size, 0x5aa5f00d00000000ull | g->gpu_id);
		check(bad == -1, "CPU pattern written and read back through the mapping (bad word %ld)", bad);
	}
	EXPECT_OK(hsaKmtMapMemoryToGPU(p, size, NULL), "hsaKmtMapMemoryToGPU(%s, every GPU)", kind);
	EXPECT_OK(hsaKmtUnmapMemoryToGPU(p), "hsaKmtUnmapMemoryToGPU(%s)", kind);
	EXPECT_OK(map_to_node(p, size, g->node), "hsaKmtMapMemoryToGPUNodes(%s, node %u)", kind, g->node);
	if (host_access)
		check(verify(p, size, 0x5aa5f00d00000000ull | g->gpu_id) == -1,
		      "pattern intact while mapped to the GPU");
	if (ngpus > 1) {
		/* Only on another GPU: a peer mapping of this GPU's VRAM. */
		const struct gpu *peer = &gpus[(g - gpus + 1) % ngpus];

		EXPECT_OK(map_to_node(p, size, peer->node),
			  "hsaKmtMapMemoryToGPUNodes(%s, peer node %u %s only)", kind, peer->node,
			  peer->name);
	}
	if (host_access) {
		/* Still mapped: amdgpu refuses to free (EBUSY), libhsakmt keeps the buffer. */
		s = hsaKmtFreeMemory(p, size);
		check(s != HSAKMT_STATUS_SUCCESS, "hsaKmtFreeMemory while mapped to a GPU refused: %s",
		      status_name(s));
		if (s == HSAKMT_STATUS_SUCCESS)
			return;
		check(verify(p, size, 0x5aa5f00d00000000ull | g->gpu_id) == -1 &&
			      vram_is(base, g - gpus, size, msg, sizeof(msg)),
		      "the buffer is still there, pattern intact%s", msg);
	}
	EXPECT_OK(hsaKmtUnmapMemoryToGPU(p), "hsaKmtUnmapMemoryToGPU(%s) again", kind);
	EXPECT_OK(hsaKmtFreeMemory(p, size), "hsaKmtFreeMemory(%s)", kind);
	check(vram_is(base, g - gpus, 0, msg, sizeof(msg)), "vram_%u back to %lld after free%s",
	      g->gpu_id, base[g - gpus], msg);
}

/*
 * System memory: GTT (non-paged, allocated through the CPU node) or paged
 * (USERPTR, allocated through the GPU node), mapped to this GPU.
 */
static void test_system_memory(const struct gpu *g, bool gtt)
{
	const uint64_t size = 1 * MiB;
	const char *kind = gtt ? "GTT system memory" : "paged system memory (userptr)";
	const char *counter = gtt ? "gtt_allocated" : "userptr_allocated";
	const uint64_t seed = (gtt ? 0x6774740000000000ull : 0x7573720000000000ull) | g->gpu_id;
	long long base[MAX_NODES], kib0;
	char msg[512], perms[8], path[256];
	HSAKMT_STATUS s;
	void *p = NULL;

	snapshot_vram(base);
	kib0 = proc_mem_info(getpid(), counter);
	s = hsaKmtAllocMemory(gtt ? 0 : g->node, size, system_flags(gtt), &p);
	if (!check(s == HSAKMT_STATUS_SUCCESS && p, "alloc %" PRIu64 " KiB %s: %s", size / KiB, kind,
		   status_name(s)))
		return;
	check(kib0 >= 0 && proc_mem_info(getpid(), counter) == kib0 + (long long)(size / KiB),
	      "mem_info %s grew by %" PRIu64 " KiB (%lld -> %lld)", counter, size / KiB, kib0,
	      proc_mem_info(getpid(), counter));
	if (check(maps_find(p, perms, path, sizeof(path)), "%s is mapped in the process", kind))
		check(gtt ? (!strcmp(perms, "rw-s") && !strncmp(path, "/dev/dri/renderD", 16))
			  : (!strcmp(perms, "rw-p") && !path[0]),
		      "CPU mapping %s %s (%s)", perms, path[0] ? path : "anonymous",
		      gtt ? "a render node, shared" : "anonymous, private");
	fill(p, size, seed);
	EXPECT_OK(map_to_node(p, size, g->node), "hsaKmtMapMemoryToGPUNodes(%s, node %u)", kind, g->node);
	check(verify(p, size, seed) == -1, "CPU pattern intact while mapped to the GPU");
	fill(p, size, ~seed);
	check(verify(p, size, ~seed) == -1, "CPU rewrites it while mapped");
	EXPECT_OK(hsaKmtUnmapMemoryToGPU(p), "hsaKmtUnmapMemoryToGPU(%s)", kind);
	EXPECT_OK(hsaKmtFreeMemory(p, size), "hsaKmtFreeMemory(%s)", kind);
	check(proc_mem_info(getpid(), counter) == kib0, "mem_info %s back to %lld", counter, kib0);
	check(vram_is(base, -1, 0, msg, sizeof(msg)), "no VRAM used by system memory%s", msg);
}

/*
 * Graphics interop: a VRAM GEM object of the node's render node, exported
 * as a dma-buf and registered with libhsakmt, which asks GET_DMABUF_INFO
 * and IMPORT_DMABUF; the import maps to the GPU; the CPU pattern written
 * through the GEM mmap stays intact.
 */
static void test_graphics_interop(const struct gpu *g)
{
	const uint64_t size = 64 * KiB;
	const uint64_t seed = 0x67656d0000000000ull | g->gpu_id;
	union drm_amdgpu_gem_create create = { .in = {
		.bo_size = size, .alignment = 4096, .domains = AMDGPU_GEM_DOMAIN_VRAM } };
	union drm_amdgpu_gem_mmap gmap = { 0 };
	struct drm_prime_handle prime = { .flags = DRM_CLOEXEC | DRM_RDWR, .fd = -1 };
	struct drm_gem_close gclose = { 0 };
	HsaGraphicsResourceInfo info = { 0 };
	uint32_t node = g->node;
	char path[64];
	void *cpu = MAP_FAILED;
	int fd;

	snprintf(path, sizeof(path), "/dev/dri/renderD%d", g->render_minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (!check(fd >= 0, "open %s: %s", path, strerror(errno)))
		return;
	if (!check(!ioctl(fd, DRM_IOCTL_AMDGPU_GEM_CREATE, &create), "GEM_CREATE %" PRIu64 " KiB VRAM: %s",
		   size / KiB, strerror(errno)))
		goto out_fd;
	gmap.in.handle = gclose.handle = prime.handle = create.out.handle;
	if (check(!ioctl(fd, DRM_IOCTL_AMDGPU_GEM_MMAP, &gmap), "GEM_MMAP: %s", strerror(errno)))
		cpu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, gmap.out.addr_ptr);
	if (check(cpu != MAP_FAILED, "mmap of the GEM object: %s", strerror(errno)))
		fill(cpu, size, seed);
	if (!check(!ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime), "PRIME_HANDLE_TO_FD: %s",
		   strerror(errno)))
		goto out_gem;
	if (EXPECT_OK(hsaKmtRegisterGraphicsHandleToNodes(prime.fd, &info, 1, &node),
		      "hsaKmtRegisterGraphicsHandleToNodes(dma-buf, node %u)", node)) {
		check(info.MemoryAddress && info.SizeInBytes == size && info.MetadataSizeInBytes == 0,
		      "graphics resource: address %p, %" PRIu64 " bytes, %u bytes of metadata",
		      info.MemoryAddress, (uint64_t)info.SizeInBytes, info.MetadataSizeInBytes);
		EXPECT_OK(map_to_node(info.MemoryAddress, size, node),
			  "hsaKmtMapMemoryToGPUNodes(graphics resource, node %u)", node);
		EXPECT_OK(hsaKmtUnmapMemoryToGPU(info.MemoryAddress), "hsaKmtUnmapMemoryToGPU(graphics resource)");
		EXPECT_OK(hsaKmtDeregisterMemory(info.MemoryAddress), "hsaKmtDeregisterMemory(graphics resource)");
	}
	close(prime.fd);
	if (cpu != MAP_FAILED)
		check(verify(cpu, size, seed) == -1, "CPU pattern through the GEM mmap intact");
out_gem:
	check(!ioctl(fd, DRM_IOCTL_GEM_CLOSE, &gclose), "GEM_CLOSE: %s", strerror(errno));
	if (cpu != MAP_FAILED)
		munmap(cpu, size);
out_fd:
	close(fd);
}

/* Plain malloc'ed memory registered for one GPU and mapped to it. */
static void test_registered(const struct gpu *g)
{
	const size_t size = 256 * KiB + 64;	/* not page-aligned, nor its start */
	const uint64_t seed = 0x6d616c6c6f630000ull | g->gpu_id;
	long long kib0 = proc_mem_info(getpid(), "userptr_allocated"), kib1;
	uint32_t node = g->node;
	uint64_t *p = malloc(size);

	if (!check(p != NULL, "malloc(%zu)", size))
		return;
	fill(p, size, seed);
	if (!EXPECT_OK(hsaKmtRegisterMemoryToNodes(p, size, 1, &node),
		       "hsaKmtRegisterMemoryToNodes(malloc %p +%zu, node %u)", (void *)p, size, node)) {
		free(p);
		return;
	}
	kib1 = proc_mem_info(getpid(), "userptr_allocated");
	check(kib0 >= 0 && kib1 >= kib0 + (long long)(size / KiB) &&
		      kib1 <= kib0 + (long long)(size / KiB) + 8,
	      "mem_info userptr_allocated grew by the pages covered (%lld -> %lld KiB)", kib0, kib1);
	EXPECT_OK(map_to_node(p, size, g->node), "hsaKmtMapMemoryToGPUNodes(registered, node %u)", g->node);
	check(verify(p, size, seed) == -1, "pattern intact through the user's own mapping");
	fill(p, size, ~seed);
	check(verify(p, size, ~seed) == -1, "CPU rewrites registered memory while mapped");
	EXPECT_OK(hsaKmtUnmapMemoryToGPU(p), "hsaKmtUnmapMemoryToGPU(registered)");
	EXPECT_OK(hsaKmtDeregisterMemory(p), "hsaKmtDeregisterMemory");
	check(proc_mem_info(getpid(), "userptr_allocated") == kib0,
	      "mem_info userptr_allocated back to %lld", kib0);
	free(p);
}

/* Registered for every GPU (hsaKmtRegisterMemory) and mapped to all of them. */
static void test_registered_all(void)
{
	const size_t size = 128 * KiB;
	void *p = NULL;

	if (!check(posix_memalign(&p, 4096, size) == 0, "posix_memalign(%zu)", size))
		return;
	fill(p, size, 42);
	if (EXPECT_OK(hsaKmtRegisterMemory(p, size), "hsaKmtRegisterMemory(%zu, every GPU)", size)) {
		EXPECT_OK(hsaKmtMapMemoryToGPU(p, size, NULL), "hsaKmtMapMemoryToGPU(registered, every GPU)");
		check(verify(p, size, 42) == -1, "pattern intact");
		EXPECT_OK(hsaKmtUnmapMemoryToGPU(p), "hsaKmtUnmapMemoryToGPU(registered, every GPU)");
		EXPECT_OK(hsaKmtDeregisterMemory(p), "hsaKmtDeregisterMemory(every GPU)");
	}
	free(p);
}

/* One GTT buffer mapped to every GPU node at once. */
static void test_gtt_all(void)
{
	const uint64_t size = 256 * KiB;
	uint32_t nodes[MAX_NODES];
	HsaMemMapFlags mf = { 0 };
	HSAuint64 alt = 0;
	void *p = NULL;

	for (int i = 0; i < ngpus; i++)
		nodes[i] = gpus[i].node;
	if (!EXPECT_OK(hsaKmtAllocMemory(0, size, system_flags(true), &p), "alloc GTT for every GPU"))
		return;
	fill(p, size, 7);
	EXPECT_OK(hsaKmtMapMemoryToGPUNodes(p, size, &alt, mf, ngpus, nodes),
		  "hsaKmtMapMemoryToGPUNodes(GTT, all %d GPU nodes)", ngpus);
	check(verify(p, size, 7) == -1, "pattern intact");
	EXPECT_OK(hsaKmtUnmapMemoryToGPU(p), "hsaKmtUnmapMemoryToGPU(GTT, all GPUs)");
	EXPECT_OK(hsaKmtFreeMemory(p, size), "hsaKmtFreeMemory(GTT, all GPUs)");
}

/*
 * AQL queue memory: libhsakmt asks for twice the size with AQL_QUEUE_MEM,
 * amdgpu allocates half and maps it twice (the ring wrap-around trick), so
 * the queue costs its own size in VRAM, for rkfd's books and the GPU's.
 */
static void test_aql_vram(const struct gpu *g)
{
	const uint64_t size = 1 * MiB;
	long long base[MAX_NODES], used0 = gpu_vram_used(g), used1;
	HsaMemFlags f = vram_flags(g->vram_public);
	char msg[512];
	HSAKMT_STATUS s;
	void *p = NULL;

	f.ui32.AQLQueueMemory = 1;
	snapshot_vram(base);
	s = hsaKmtAllocMemory(g->node, size, f, &p);
	if (!check(s == HSAKMT_STATUS_SUCCESS, "alloc %" PRIu64 " KiB AQL queue VRAM: %s", size / KiB,
		   status_name(s)))
		return;
	check(vram_is(base, g - gpus, size, msg, sizeof(msg)),
	      "vram_%u grew by the queue size, %" PRIu64 " KiB%s", g->gpu_id, size / KiB, msg);
	used1 = gpu_vram_used(g);
	check(used0 >= 0 && used1 == used0 + (long long)size,
	      "the GPU's mem_info_vram_used grew by %" PRIu64 " KiB (%lld KiB): amdgpu allocates half "
	      "of the doubled request", size / KiB, (used1 - used0) / (long long)KiB);
	if (g->vram_public) {
		fill(p, size, 0xa91);
		check(verify(p, size, 0xa91) == -1, "AQL VRAM pattern through the CPU mapping");
	}
	EXPECT_OK(map_to_node(p, size, g->node), "map AQL queue VRAM to node %u", g->node);
	EXPECT_OK(hsaKmtUnmapMemoryToGPU(p), "unmap AQL queue VRAM");
	EXPECT_OK(hsaKmtFreeMemory(p, size), "free AQL queue VRAM");
	check(vram_is(base, g - gpus, 0, msg, sizeof(msg)) && gpu_vram_used(g) == used0,
	      "vram_%u and mem_info_vram_used back%s", g->gpu_id, msg);
}

/* AQL queue memory in GTT: libhsakmt maps the same pages twice, back to back. */
static void test_aql_gtt(void)
{
	const uint64_t size = 256 * KiB;
	HsaMemFlags f = system_flags(true);
	HSAKMT_STATUS s;
	void *p = NULL;

	set_scope("common");
	f.ui32.AQLQueueMemory = 1;
	s = hsaKmtAllocMemory(0, size, f, &p);
	if (!check(s == HSAKMT_STATUS_SUCCESS, "alloc %" PRIu64 " KiB AQL queue GTT: %s", size / KiB,
		   status_name(s)))
		return;
	fill(p, size, 0xa92);
	check(verify((char *)p + size, size, 0xa92) == -1,
	      "the second CPU view shows what was written through the first (ring wrap-around)");
	fill((char *)p + size, 64, 0xa93);
	check(verify(p, 64, 0xa93) == -1, "and the other way round");
	EXPECT_OK(hsaKmtMapMemoryToGPU(p, size, NULL), "map AQL queue GTT to every GPU");
	EXPECT_OK(hsaKmtUnmapMemoryToGPU(p), "unmap AQL queue GTT");
	EXPECT_OK(hsaKmtFreeMemory(p, size), "free AQL queue GTT");
}

/* Allocations beyond the VRAM fail with an error status; nothing leaks. */
static void test_vram_limit(const struct gpu *g)
{
	const uint64_t chunk = g->vram_size / 8;
	long long base[MAX_NODES], used0 = gpu_vram_used(g);
	void *chunks[16];
	char msg[512];
	HSAKMT_STATUS s;
	uint64_t total = 0;
	void *p = NULL;
	int n = 0;

	if (!check(g->vram_size >= 16 * MiB, "VRAM size %" PRIu64 " MiB", g->vram_size / MiB))
		return;
	snapshot_vram(base);
	s = hsaKmtAllocMemory(g->node, g->vram_size + 2 * MiB, vram_flags(false), &p);
	check(s != HSAKMT_STATUS_SUCCESS, "alloc VRAM size + 2 MiB (%" PRIu64 " MiB) fails: %s",
	      (g->vram_size + 2 * MiB) / MiB, status_name(s));
	if (s == HSAKMT_STATUS_SUCCESS)
		hsaKmtFreeMemory(p, g->vram_size + 2 * MiB);
	check(vram_is(base, g - gpus, 0, msg, sizeof(msg)), "nothing accounted for the failure%s", msg);

	/* Fill the VRAM in eighths: at most 8 fit, then allocation fails. */
	for (n = 0; n < 16; n++) {
		chunks[n] = NULL;
		s = hsaKmtAllocMemory(g->node, chunk, vram_flags(false), &chunks[n]);
		if (s != HSAKMT_STATUS_SUCCESS)
			break;
		total += chunk;
	}
	/* Exactly what is free fits (used0: other users of this GPU's VRAM). */
	int fit = used0 >= 0 ? (int)((g->vram_size - used0) / chunk) : -1;
	check(n >= 1 && n <= 8 && (fit < 0 || n == fit) && s != HSAKMT_STATUS_SUCCESS,
	      "filling VRAM in %" PRIu64 " MiB pieces: %d fit (want %d), then %s", chunk / MiB, n,
	      fit, status_name(s));
	check(vram_is(base, g - gpus, total, msg, sizeof(msg)), "vram_%u = %" PRIu64 " MiB while full%s",
	      g->gpu_id, total / MiB, msg);
	if (used0 >= 0)
		check(gpu_vram_used(g) == used0 + (long long)total,
		      "the GPU's mem_info_vram_used grew by %" PRIu64 " MiB", total / MiB);
	p = NULL;
	s = hsaKmtAllocMemory(g->node, 64 * KiB, vram_flags(false), &p);
	if (used0 >= 0 && used0 + total == g->vram_size)
		check(s != HSAKMT_STATUS_SUCCESS, "VRAM full: 64 KiB more fails too: %s", status_name(s));
	if (s == HSAKMT_STATUS_SUCCESS)
		hsaKmtFreeMemory(p, 64 * KiB);
	bool freed = true;
	for (int i = 0; i < n; i++)
		freed &= hsaKmtFreeMemory(chunks[i], chunk) == HSAKMT_STATUS_SUCCESS;
	check(freed, "freed the %d pieces", n);
	check(vram_is(base, g - gpus, 0, msg, sizeof(msg)), "vram_%u back to %lld%s", g->gpu_id,
	      base[g - gpus], msg);
	if (used0 >= 0)
		check(gpu_vram_used(g) == used0, "the GPU's mem_info_vram_used back to %lld (%lld)",
		      used0, gpu_vram_used(g));
	/* The pieces really came back (the 9th now fits). */
	p = NULL;
	s = hsaKmtAllocMemory(g->node, chunk, vram_flags(false), &p);
	if (check(s == HSAKMT_STATUS_SUCCESS, "then a %" PRIu64 " MiB piece fits again: %s", chunk / MiB,
		  status_name(s)))
		EXPECT_OK(hsaKmtFreeMemory(p, chunk), "and free it");
}

/* ------------------------------------------------------------------------
 * Events.
 */

static HsaEvent *new_event(bool manual, bool signaled)
{
	HsaEventDescriptor d;
	HsaEvent *ev = NULL;

	memset(&d, 0, sizeof(d));
	d.EventType = HSA_EVENTTYPE_SIGNAL;
	d.NodeId = gpus[0].node;
	d.SyncVar.SyncVar.UserData = NULL;
	d.SyncVar.SyncVarSize = sizeof(HSAuint64);
	if (hsaKmtCreateEvent(&d, manual, signaled, &ev) != HSAKMT_STATUS_SUCCESS)
		return NULL;
	return ev;
}

struct waiter {
	pthread_t thread;
	HsaEvent *ev;
	unsigned timeout_ms;
	volatile int done;
	HSAKMT_STATUS status;
	double woke_at;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->status = hsaKmtWaitOnEvent(w->ev, w->timeout_ms);
	w->woke_at = now_s(CLOCK_MONOTONIC);
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void start_waiter(struct waiter *w, HsaEvent *ev, unsigned timeout_ms)
{
	memset(w, 0, sizeof(*w));
	w->ev = ev;
	w->timeout_ms = timeout_ms;
	pthread_create(&w->thread, NULL, waiter_main, w);
}

static void test_events(void)
{
	const unsigned long_ms = 60000;
	struct waiter w[3];
	HsaEvent *ev, *ev2, *man;
	double t0, dt;

	set_scope("common");
	ev = new_event(false, false);
	if (!check(ev != NULL, "hsaKmtCreateEvent(signal, auto-reset, unsignalled)"))
		return;
	note("event id %u, slot address %#" PRIx64, ev->EventId, (uint64_t)ev->EventData.HWData2);

	t0 = now_s(CLOCK_MONOTONIC);
	EXPECT(hsaKmtWaitOnEvent(ev, 20), HSAKMT_STATUS_WAIT_TIMEOUT, "WaitOnEvent(unsignalled, 20 ms)");
	dt = now_s(CLOCK_MONOTONIC) - t0;
	/* No assertion on durations (jiffies and clocks disagree under TCG). */
	note("the 20 ms wait took %.0f ms", dt * 1e3);
	EXPECT(hsaKmtWaitOnEvent(ev, 0), HSAKMT_STATUS_WAIT_TIMEOUT, "WaitOnEvent(unsignalled, 0 ms)");

	/* A waiter blocked with a long timeout, woken by SetEvent from here. */
	start_waiter(&w[0], ev, long_ms);
	sleep_ms(500);
	check(!__atomic_load_n(&w[0].done, __ATOMIC_SEQ_CST),
	      "waiter thread blocked in WaitOnEvent(%u ms) after 500 ms", long_ms);
	t0 = now_s(CLOCK_MONOTONIC);
	EXPECT_OK(hsaKmtSetEvent(ev), "SetEvent from another thread");
	pthread_join(w[0].thread, NULL);
	check(w[0].status == HSAKMT_STATUS_SUCCESS, "waiter woken: %s", status_name(w[0].status));
	/* Not by its timeout: a SetEvent that only latches would end the
	 * wait successfully too, but 60 s later. */
	check(w[0].woke_at - t0 < long_ms / 2000.0, "woken by SetEvent, not by the timeout (%.0f ms)",
	      (w[0].woke_at - t0) * 1e3);
	EXPECT(hsaKmtWaitOnEvent(ev, 20), HSAKMT_STATUS_WAIT_TIMEOUT,
	       "auto-reset: the wake-up consumed the signal");

	/* Set with nobody waiting: latched until one wait consumes it. */
	EXPECT_OK(hsaKmtSetEvent(ev), "SetEvent with no waiter");
	EXPECT_OK(hsaKmtWaitOnEvent(ev, 1000), "the next wait returns at once");
	EXPECT(hsaKmtWaitOnEvent(ev, 20), HSAKMT_STATUS_WAIT_TIMEOUT, "and only that one");
	EXPECT_OK(hsaKmtSetEvent(ev), "SetEvent");
	EXPECT_OK(hsaKmtResetEvent(ev), "ResetEvent");
	EXPECT(hsaKmtWaitOnEvent(ev, 20), HSAKMT_STATUS_WAIT_TIMEOUT, "reset cleared the signal");

	/* Manual reset: one SetEvent wakes every waiter and stays signalled. */
	man = new_event(true, false);
	if (check(man != NULL, "hsaKmtCreateEvent(signal, manual reset)")) {
		for (int i = 0; i < 3; i++)
			start_waiter(&w[i], man, long_ms);
		sleep_ms(500);
		int blocked = 0;
		for (int i = 0; i < 3; i++)
			blocked += !__atomic_load_n(&w[i].done, __ATOMIC_SEQ_CST);
		check(blocked == 3, "3 waiters blocked (%d)", blocked);
		t0 = now_s(CLOCK_MONOTONIC);
		EXPECT_OK(hsaKmtSetEvent(man), "SetEvent(manual reset) once");
		int woken = 0;
		double last = t0;
		for (int i = 0; i < 3; i++) {
			pthread_join(w[i].thread, NULL);
			woken += w[i].status == HSAKMT_STATUS_SUCCESS;
			if (w[i].woke_at > last)
				last = w[i].woke_at;
		}
		check(woken == 3 && last - t0 < long_ms / 2000.0,
		      "all 3 waiters woken by SetEvent (%d, last after %.0f ms)", woken, (last - t0) * 1e3);
		EXPECT_OK(hsaKmtWaitOnEvent(man, 20), "manual reset: still signalled");
		EXPECT_OK(hsaKmtWaitOnEvent(man, 20), "still signalled on a second wait");
		EXPECT_OK(hsaKmtResetEvent(man), "ResetEvent(manual reset)");
		EXPECT(hsaKmtWaitOnEvent(man, 20), HSAKMT_STATUS_WAIT_TIMEOUT, "unsignalled after reset");
		EXPECT_OK(hsaKmtDestroyEvent(man), "DestroyEvent(manual reset)");
	}

	/* Created signalled. */
	ev2 = new_event(false, true);
	if (check(ev2 != NULL, "hsaKmtCreateEvent(signal, auto-reset, signalled)")) {
		EXPECT_OK(hsaKmtWaitOnEvent(ev2, 20), "an event created signalled satisfies a wait");
		EXPECT(hsaKmtWaitOnEvent(ev2, 20), HSAKMT_STATUS_WAIT_TIMEOUT, "once");

		/* Several events: any and all. */
		HsaEvent *both[2] = { ev, ev2 };
		EXPECT(hsaKmtWaitOnMultipleEvents(both, 2, false, 20), HSAKMT_STATUS_WAIT_TIMEOUT,
		       "WaitOnMultipleEvents(any of 2 unsignalled)");
		EXPECT_OK(hsaKmtSetEvent(ev2), "SetEvent(second)");
		EXPECT_OK(hsaKmtWaitOnMultipleEvents(both, 2, false, 1000),
			  "WaitOnMultipleEvents(any) with the second set");
		EXPECT_OK(hsaKmtSetEvent(ev), "SetEvent(first)");
		EXPECT_OK(hsaKmtSetEvent(ev2), "SetEvent(second)");
		EXPECT_OK(hsaKmtWaitOnMultipleEvents(both, 2, true, 1000),
			  "WaitOnMultipleEvents(all) with both set");
		EXPECT_OK(hsaKmtDestroyEvent(ev2), "DestroyEvent(second)");
	}
	EXPECT_OK(hsaKmtDestroyEvent(ev), "DestroyEvent(first)");

	/* Many events at once: slots in the event page are reused. */
	HsaEvent *many[64];
	int made = 0;
	for (int i = 0; i < 64; i++) {
		many[i] = new_event(false, false);
		made += many[i] != NULL;
	}
	bool distinct = true;
	for (int i = 0; i < 64; i++)
		for (int j = i + 1; j < 64; j++)
			if (many[i] && many[j] && many[i]->EventId == many[j]->EventId)
				distinct = false;
	check(made == 64 && distinct, "64 signal events with distinct ids (%d made)", made);
	int destroyed = 0;
	for (int i = 0; i < 64; i++)
		if (many[i])
			destroyed += hsaKmtDestroyEvent(many[i]) == HSAKMT_STATUS_SUCCESS;
	check(destroyed == made, "destroyed them (%d)", destroyed);
}

/* System memory beyond what the driver may hand out fails cleanly. */
static void test_system_limits(void)
{
	unsigned long long ram_kib = 0;
	struct kvfile mi;
	long long gtt0 = proc_mem_info(getpid(), "gtt_allocated");
	long long user0 = proc_mem_info(getpid(), "userptr_allocated");
	HSAKMT_STATUS s;
	uint64_t size;
	void *p = NULL;

	set_scope("common");
	bool have_ram = kv_read(&mi, "/proc/meminfo") && kv_get(&mi, "MemTotal:", &ram_kib) && ram_kib;
	if (!check(have_ram, "MemTotal %llu KiB", ram_kib))
		return;
	/* More than all RAM: past the GTT limit (3/4 of RAM) and the system limit. */
	size = (ram_kib * KiB + 4 * MiB) & ~(2 * MiB - 1);
	s = hsaKmtAllocMemory(0, size, system_flags(true), &p);
	check(s != HSAKMT_STATUS_SUCCESS, "GTT allocation of %" PRIu64 " MiB (> RAM) fails: %s",
	      size / MiB, status_name(s));
	if (s == HSAKMT_STATUS_SUCCESS)
		hsaKmtFreeMemory(p, size);
	check(proc_mem_info(getpid(), "gtt_allocated") == gtt0, "gtt_allocated still %lld KiB", gtt0);

	/* Registering twice the RAM (address space only, never touched). */
	size = 2 * ram_kib * KiB & ~(2 * MiB - 1);
	p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!check(p != MAP_FAILED, "reserve %" PRIu64 " MiB of address space", size / MiB))
		return;
	s = hsaKmtRegisterMemory(p, size);
	check(s != HSAKMT_STATUS_SUCCESS, "hsaKmtRegisterMemory of %" PRIu64 " MiB (2x RAM) fails: %s",
	      size / MiB, status_name(s));
	if (s == HSAKMT_STATUS_SUCCESS)
		hsaKmtDeregisterMemory(p);
	check(proc_mem_info(getpid(), "userptr_allocated") == user0, "userptr_allocated still %lld KiB",
	      user0);
	munmap(p, size);
}

/* Threads allocating, mapping and freeing on every GPU at once. */
struct worker {
	pthread_t thread;
	const struct gpu *g;
	int iters, errors;
	char first_error[96];
};

static void worker_error(struct worker *w, const char *what, HSAKMT_STATUS s)
{
	if (!w->errors++)
		snprintf(w->first_error, sizeof(w->first_error), "%s: %s", what, status_name(s));
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const uint64_t size = 64 * KiB;
	HSAKMT_STATUS s;

	for (int i = 0; i < w->iters; i++) {
		void *v = NULL, *m = NULL;

		s = hsaKmtAllocMemory(w->g->node, size, vram_flags(w->g->vram_public), &v);
		if (s) {
			worker_error(w, "alloc VRAM", s);
			continue;
		}
		if (w->g->vram_public) {
			fill(v, size, i);
			if (verify(v, size, i) != -1)
				worker_error(w, "VRAM pattern", HSAKMT_STATUS_ERROR);
		}
		if ((s = map_to_node(v, size, w->g->node)))
			worker_error(w, "map VRAM", s);
		else if ((s = hsaKmtUnmapMemoryToGPU(v)))
			worker_error(w, "unmap VRAM", s);
		if ((s = hsaKmtFreeMemory(v, size)))
			worker_error(w, "free VRAM", s);

		s = hsaKmtAllocMemory(w->g->node, size, system_flags(i & 1), &m);
		if (s) {
			worker_error(w, "alloc system memory", s);
			continue;
		}
		fill(m, size, i);
		if ((s = map_to_node(m, size, w->g->node)))
			worker_error(w, "map system memory", s);
		else if ((s = hsaKmtUnmapMemoryToGPU(m)))
			worker_error(w, "unmap system memory", s);
		if (verify(m, size, i) != -1)
			worker_error(w, "system memory pattern", HSAKMT_STATUS_ERROR);
		if ((s = hsaKmtFreeMemory(m, size)))
			worker_error(w, "free system memory", s);

		if (i % 4 == 0) {
			HsaEvent *ev = new_event(false, false);

			if (!ev) {
				worker_error(w, "create event", HSAKMT_STATUS_ERROR);
				continue;
			}
			if ((s = hsaKmtSetEvent(ev)) || (s = hsaKmtWaitOnEvent(ev, 1000)))
				worker_error(w, "set/wait event", s);
			if ((s = hsaKmtDestroyEvent(ev)))
				worker_error(w, "destroy event", s);
		}
	}
	return NULL;
}

static void test_threads(void)
{
	const int per_gpu = 2, iters = 16;
	struct worker w[2 * MAX_NODES];
	long long base[MAX_NODES];
	char msg[512];
	int n = 0, errors = 0;
	double t0 = now_s(CLOCK_MONOTONIC);

	set_scope("common");
	snapshot_vram(base);
	long long gtt0 = proc_mem_info(getpid(), "gtt_allocated");
	long long user0 = proc_mem_info(getpid(), "userptr_allocated");
	for (int i = 0; i < ngpus; i++) {
		for (int k = 0; k < per_gpu; k++, n++) {
			memset(&w[n], 0, sizeof(w[n]));
			w[n].g = &gpus[i];
			w[n].iters = iters;
			pthread_create(&w[n].thread, NULL, worker_main, &w[n]);
		}
	}
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].errors)
			note("thread %d (%s): %d errors, first %s", i, w[i].g->name, w[i].errors,
			     w[i].first_error);
		errors += w[i].errors;
	}
	check(errors == 0, "%d threads x %d rounds of alloc/map/unmap/free and events on every GPU "
	      "at once: %d errors (%.1f s)", n, iters, errors, now_s(CLOCK_MONOTONIC) - t0);
	check(vram_is(base, -1, 0, msg, sizeof(msg)), "every vram_<gpu_id> back where it was%s", msg);
	check(proc_mem_info(getpid(), "gtt_allocated") == gtt0 &&
		      proc_mem_info(getpid(), "userptr_allocated") == user0,
	      "mem_info gtt/userptr back to %lld/%lld KiB", gtt0, user0);
}

/*
 * fork(): the child must open /dev/kfd and the render nodes anew (libhsakmt
 * does that after a fork) and gets a process of its own; the parent's
 * memory is unaffected.
 */
static void test_fork(void)
{
	const uint64_t size = 1 * MiB;
	const struct gpu *g = &gpus[0];
	long long base[MAX_NODES];
	char msg[512];
	void *keep = NULL;
	int status = 0;

	set_scope("common");
	snapshot_vram(base);
	if (!EXPECT_OK(hsaKmtAllocMemory(g->node, size, vram_flags(g->vram_public), &keep),
		       "parent: alloc VRAM before fork"))
		return;
	if (g->vram_public)
		fill(keep, size, 0xf0f0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		HsaSystemProperties sys;
		HsaVersionInfo v;
		int rc = 0;

		if (hsaKmtGetVersion(&v) != HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED)
			rc |= 1;
		if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS)
			_exit(rc | 2);
		if (hsaKmtAcquireSystemProperties(&sys) != HSAKMT_STATUS_SUCCESS)
			_exit(rc | 4);
		for (int i = 0; i < ngpus; i++) {
			void *p = NULL;

			if (hsaKmtAllocMemory(gpus[i].node, size, vram_flags(gpus[i].vram_public), &p)) {
				rc |= 8;
				continue;
			}
			if (gpus[i].vram_public) {
				fill(p, size, i);
				if (verify(p, size, i) != -1)
					rc |= 16;
			}
			if (proc_vram(getpid(), gpus[i].gpu_id) != (long long)size)
				rc |= 32;
			if (map_to_node(p, size, gpus[i].node) || hsaKmtUnmapMemoryToGPU(p) ||
			    hsaKmtFreeMemory(p, size))
				rc |= 64;
		}
		HsaEvent *ev = new_event(false, false);
		if (!ev || hsaKmtSetEvent(ev) || hsaKmtWaitOnEvent(ev, 1000) || hsaKmtDestroyEvent(ev))
			rc |= 128;
		if (hsaKmtCloseKFD() != HSAKMT_STATUS_SUCCESS)
			rc |= 64;
		_exit(rc & 0xff);
	}
	if (!check(pid > 0, "fork"))
		return;
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "forked child: not open until it opens; opens, allocates, maps, frees on every GPU, "
	      "events work (status %#x: 1 open before open, 2 open, 4 topology, 8 alloc, 16 pattern, "
	      "32 vram_<id>, 64 map/free/close, 128 events)",
	      status);
	if (g->vram_public)
		check(verify(keep, size, 0xf0f0) == -1, "parent's VRAM intact after the child");
	check(vram_is(base, 0, size, msg, sizeof(msg)), "parent's vram_<gpu_id> unchanged by the child%s",
	      msg);
	EXPECT_OK(map_to_node(keep, size, g->node), "parent: map after the child exited");
	EXPECT_OK(hsaKmtUnmapMemoryToGPU(keep), "parent: unmap");
	EXPECT_OK(hsaKmtFreeMemory(keep, size), "parent: free");
}

/* ------------------------------------------------------------------------
 * XNACK.
 */

static void test_xnack(void)
{
	HSAint32 mode = -1;
	bool all_per_process = true;

	set_scope("common");
	for (int i = 0; i < ngpus; i++)
		all_per_process &= gpus[i].p && gpus[i].p->gfx_target_version == 90010;
	if (!EXPECT_OK(hsaKmtGetXNACKMode(&mode), "hsaKmtGetXNACKMode"))
		return;
	check(mode == 0, "XNACK off by default (%d)", mode);
	HSAKMT_STATUS s = hsaKmtSetXNACKMode(1);
	if (all_per_process) {
		check(s == HSAKMT_STATUS_SUCCESS, "XNACK on with only gfx90a GPUs: %s", status_name(s));
		EXPECT_OK(hsaKmtGetXNACKMode(&mode), "hsaKmtGetXNACKMode");
		check(mode == 1, "XNACK now on (%d)", mode);
	} else {
		check(s != HSAKMT_STATUS_SUCCESS,
		      "XNACK on refused: not every GPU switches XNACK per process (%s)", status_name(s));
		EXPECT_OK(hsaKmtGetXNACKMode(&mode), "hsaKmtGetXNACKMode");
		check(mode == 0, "XNACK still off (%d)", mode);
	}
	EXPECT_OK(hsaKmtSetXNACKMode(0), "hsaKmtSetXNACKMode(0)");
}

/* ------------------------------------------------------------------------
 * SVM attributes.  libhsakmt names locations and GPUs by node id and
 * translates to and from gpu_ids; UNDEFINED comes back as INVALID_NODEID.
 */

#define SVM_INVALID_NODE 0xffffffffu

static bool svm_get(void *p, uint64_t len, HSA_SVM_ATTRIBUTE *a, unsigned n, const char *what)
{
	return EXPECT_OK(hsaKmtSVMGetAttr(p, len, n, a), "hsaKmtSVMGetAttr %s", what);
}

static void test_svm(void)
{
	const uint64_t pg = 4096, len = 16 * pg;
	const uint32_t dflt = HSA_SVM_FLAG_HOST_ACCESS | HSA_SVM_FLAG_COHERENT;
	uint32_t node = gpus[0].node;

	set_scope("common");
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!check(p != MAP_FAILED, "svm: mmap"))
		return;

	/* No range yet: the defaults (XNACK off: no access). */
	HSA_SVM_ATTRIBUTE d[] = {
		{ HSA_SVM_ATTR_PREFERRED_LOC, 0 }, { HSA_SVM_ATTR_ACCESS, node },
		{ HSA_SVM_ATTR_SET_FLAGS, 0 },     { HSA_SVM_ATTR_GRANULARITY, 0 },
	};
	if (svm_get(p, len, d, 4, "(no range)")) {
		check(d[0].value == SVM_INVALID_NODE, "svm: no range: preferred undefined (%#x)", d[0].value);
		check(d[1].type == HSA_SVM_ATTR_NO_ACCESS && d[1].value == node,
		      "svm: no range: no access (type %u, node %u)", d[1].type, d[1].value);
		check(d[2].value == dflt, "svm: no range: flags %#x", d[2].value);
		check(d[3].value == 9, "svm: no range: granularity %u", d[3].value);
	}

	/* Whole area on GPU 0, then the middle to system memory, read-only. */
	HSA_SVM_ATTRIBUTE s1[] = {
		{ HSA_SVM_ATTR_PREFERRED_LOC, node },
		{ HSA_SVM_ATTR_ACCESS, node },
		{ HSA_SVM_ATTR_GRANULARITY, 4 },
	};
	EXPECT_OK(hsaKmtSVMSetAttr(p, len, 3, s1), "hsaKmtSVMSetAttr whole");
	HSA_SVM_ATTRIBUTE s2[] = {
		{ HSA_SVM_ATTR_PREFERRED_LOC, 0 },
		{ HSA_SVM_ATTR_SET_FLAGS, HSA_SVM_FLAG_GPU_RO },
	};
	EXPECT_OK(hsaKmtSVMSetAttr(p + 4 * pg, 4 * pg, 2, s2), "hsaKmtSVMSetAttr middle");
	HSA_SVM_ATTRIBUTE s3[] = { { HSA_SVM_ATTR_ACCESS_IN_PLACE, node } };
	EXPECT_OK(hsaKmtSVMSetAttr(p + 12 * pg, pg, 1, s3), "hsaKmtSVMSetAttr in place");

	HSA_SVM_ATTRIBUTE g[] = {
		{ HSA_SVM_ATTR_PREFERRED_LOC, 0 }, { HSA_SVM_ATTR_ACCESS, node },
		{ HSA_SVM_ATTR_SET_FLAGS, 0 },     { HSA_SVM_ATTR_CLR_FLAGS, 0 },
		{ HSA_SVM_ATTR_GRANULARITY, 0 },
	};
	HSA_SVM_ATTRIBUTE q[5];

	memcpy(q, g, sizeof(q));
	if (svm_get(p + 4 * pg, 4 * pg, q, 5, "middle")) {
		check(q[0].value == 0, "svm: middle preferred system memory (node %u)", q[0].value);
		check(q[1].type == HSA_SVM_ATTR_ACCESS && q[1].value == node, "svm: middle access (type %u)",
		      q[1].type);
		check(q[2].value == (dflt | HSA_SVM_FLAG_GPU_RO), "svm: middle flags %#x", q[2].value);
		check(q[4].value == 4, "svm: middle granularity %u", q[4].value);
	}
	memcpy(q, g, sizeof(q));
	if (svm_get(p, 4 * pg, q, 5, "head")) {
		check(q[0].value == node, "svm: head preferred node %u (%u)", node, q[0].value);
		check(q[2].value == dflt, "svm: head flags %#x", q[2].value);
	}
	memcpy(q, g, sizeof(q));
	if (svm_get(p + 12 * pg, pg, q, 5, "in-place page"))
		check(q[1].type == HSA_SVM_ATTR_ACCESS_IN_PLACE, "svm: page 12 in place (type %u)", q[1].type);
	memcpy(q, g, sizeof(q));
	if (svm_get(p, len, q, 5, "whole")) {
		check(q[0].value == SVM_INVALID_NODE, "svm: whole: preferred differs -> undefined (%#x)",
		      q[0].value);
		check(q[1].type == HSA_SVM_ATTR_NO_ACCESS, "svm: whole: access AND -> no access (type %u)",
		      q[1].type);
		check(q[2].value == dflt && q[3].value == ~(dflt | HSA_SVM_FLAG_GPU_RO),
		      "svm: whole: SET_FLAGS AND %#x, CLR_FLAGS ~OR %#x", q[2].value, q[3].value);
		check(q[4].value == 4, "svm: whole: granularity %u", q[4].value);
	}
	for (int i = 1; i < ngpus; i++) {
		HSA_SVM_ATTRIBUTE o[] = { { HSA_SVM_ATTR_ACCESS, gpus[i].node } };

		if (svm_get(p, pg, o, 1, "other GPU"))
			check(o[0].type == HSA_SVM_ATTR_NO_ACCESS, "svm: node %u has no access (type %u)",
			      gpus[i].node, o[0].type);
	}

	/* Bad arguments: the library's own checks, then the kernel's. */
	HSA_SVM_ATTRIBUTE bad_node[] = { { HSA_SVM_ATTR_ACCESS, 1000 } };
	check(hsaKmtSVMSetAttr(p, len, 1, bad_node) != HSAKMT_STATUS_SUCCESS, "svm: unknown node refused");
	HSA_SVM_ATTRIBUTE cpu_access[] = { { HSA_SVM_ATTR_ACCESS, 0 } };
	check(hsaKmtSVMSetAttr(p, len, 1, cpu_access) != HSAKMT_STATUS_SUCCESS, "svm: CPU node access refused");
	EXPECT(hsaKmtSVMSetAttr(p + 1, pg, 0, NULL), HSAKMT_STATUS_INVALID_PARAMETER, "svm: unaligned start");
	HSA_SVM_ATTRIBUTE bad_type[] = { { 42, 0 } };
	EXPECT(hsaKmtSVMSetAttr(p, pg, 1, bad_type), HSAKMT_STATUS_ERROR, "svm: unknown type (kernel EINVAL)");
	munmap(p + 8 * pg, pg);
	EXPECT(hsaKmtSVMSetAttr(p, len, 0, NULL), HSAKMT_STATUS_ERROR, "svm: range with a hole (kernel EFAULT)");
	HSA_SVM_ATTRIBUTE gg[] = { { HSA_SVM_ATTR_GRANULARITY, 0 } };
	EXPECT(hsaKmtSVMGetAttr(p + 8 * pg, pg, 1, gg), HSAKMT_STATUS_ERROR, "svm: get on unmapped page (EFAULT)");
	/*
	 * Keep the area mapped: rkfd does not drop SVM ranges on munmap yet, and
	 * a later allocation that got this VA back would meet them (EADDRINUSE).
	 */
	check(mmap(p + 8 * pg, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		      p + 8 * pg,
	      "svm: hole mapped again");
}

/* ------------------------------------------------------------------------
 * Child processes: allocate on every GPU and never free.
 */

/* What a child allocates on each GPU: host-visible and private VRAM. */
#define CHILD_VRAM (4 * MiB)

static int child_main(const char *mode)
{
	HsaSystemProperties sys;
	char line[8];

	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtAcquireSystemProperties(&sys))
		return 10;
	if (!scan_topology())
		return 11;
	for (int i = 0; i < ngpus; i++) {
		void *v = NULL, *pv = NULL, *sys_mem = NULL;
		void *reg = malloc(64 * KiB);
		uint32_t node = gpus[i].node;

		if (hsaKmtAllocMemory(node, CHILD_VRAM / 2, vram_flags(gpus[i].vram_public), &v) ||
		    hsaKmtAllocMemory(node, CHILD_VRAM / 2, vram_flags(false), &pv) ||
		    hsaKmtAllocMemory(node, 1 * MiB, system_flags(false), &sys_mem))
			return 12;
		if (gpus[i].vram_public)
			fill(v, CHILD_VRAM / 2, i);
		fill(sys_mem, 1 * MiB, i);
		if (hsaKmtMapMemoryToGPU(v, CHILD_VRAM / 2, NULL) || map_to_node(pv, CHILD_VRAM / 2, node) ||
		    map_to_node(sys_mem, 1 * MiB, node))
			return 13;
		if (!reg || hsaKmtRegisterMemoryToNodes(reg, 64 * KiB, 1, &node) ||
		    map_to_node(reg, 64 * KiB, node))
			return 14;
	}
	void *gtt = NULL;
	if (hsaKmtAllocMemory(0, 1 * MiB, system_flags(true), &gtt) || hsaKmtMapMemoryToGPU(gtt, 1 * MiB, NULL))
		return 15;
	HsaEvent *ev = new_event(false, false), *set = new_event(true, false);
	if (!ev || !set || hsaKmtSetEvent(set))
		return 16;

	if (!strcmp(mode, "kill")) {
		/* Blocked in the kernel when the parent kills it. */
		struct waiter w;

		start_waiter(&w, ev, HSA_EVENTTIMEOUT_INFINITE);
		sleep_ms(200);
		if (write(STDOUT_FILENO, "ready\n", 6) != 6)
			return 17;
		for (;;)
			pause();
	}
	if (write(STDOUT_FILENO, "ready\n", 6) != 6)
		return 17;
	/* Wait for the parent to look, then exit without freeing anything. */
	if (read(STDIN_FILENO, line, sizeof(line)) < 0)
		return 18;
	_exit(0);
}

static void test_child(const char *self, const char *mode)
{
	int to_child[2], from_child[2];
	posix_spawn_file_actions_t fa;
	long long used0[MAX_NODES];
	char *argv[] = { (char *)self, "--child", (char *)mode, NULL };
	char buf[16] = "", dir[128];
	bool kill_it = !strcmp(mode, "kill");
	pid_t pid;
	int status = 0;

	set_scope("common");
	for (int i = 0; i < ngpus; i++)
		used0[i] = gpu_vram_used(&gpus[i]);
	if (pipe(to_child) || pipe(from_child))
		return;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, to_child[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, from_child[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, to_child[1]);
	posix_spawn_file_actions_addclose(&fa, from_child[0]);
	int err = posix_spawn(&pid, self, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(to_child[0]);
	close(from_child[1]);
	if (!check(err == 0, "spawn a child (%s)", mode)) {
		close(to_child[1]);
		close(from_child[0]);
		return;
	}
	ssize_t n = read(from_child[0], buf, sizeof(buf) - 1);
	bool ready = n > 0 && !strncmp(buf, "ready", 5);
	check(ready, "child %d allocated and mapped memory on every GPU, made events", (int)pid);
	if (ready) {
		int good = 0;
		for (int i = 0; i < ngpus; i++)
			good += proc_vram(pid, gpus[i].gpu_id) == (long long)CHILD_VRAM;
		check(good == ngpus, "the child's vram_<gpu_id> shows %" PRIu64 " MiB on %d of %d GPUs",
		      CHILD_VRAM / MiB, good, ngpus);
		good = 0;
		for (int i = 0; i < ngpus; i++)
			good += used0[i] < 0 || gpu_vram_used(&gpus[i]) >= used0[i] + (long long)CHILD_VRAM;
		check(good == ngpus, "every GPU's mem_info_vram_used includes the child's VRAM");
	}
	if (kill_it)
		kill(pid, SIGKILL);
	close(to_child[1]);
	waitpid(pid, &status, 0);
	close(from_child[0]);
	if (kill_it)
		check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "child killed while blocked in WaitOnEvent (status %#x)", status);
	else
		check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child exited without freeing anything (status %#x)", status);

	/* rkfd gives everything back; upstream may do it from a work queue. */
	snprintf(dir, sizeof(dir), PROC_DIR "/%d", (int)pid);
	double t0 = now_s(CLOCK_MONOTONIC);
	bool gone = false, vram_back = false;
	while (now_s(CLOCK_MONOTONIC) - t0 < 30 && !(gone && vram_back)) {
		struct stat st;

		gone = stat(dir, &st) != 0;
		vram_back = true;
		for (int i = 0; i < ngpus; i++)
			vram_back &= used0[i] < 0 || gpu_vram_used(&gpus[i]) == used0[i];
		if (!(gone && vram_back))
			sleep_ms(50);
	}
	check(gone, "%s is gone (%.0f ms)", dir, (now_s(CLOCK_MONOTONIC) - t0) * 1e3);
	check(vram_back, "every GPU's mem_info_vram_used back to what it was");
}

/* ------------------------------------------------------------------------
 * Open, close, reopen.
 */

static void test_open_close(void)
{
	HsaVersionInfo v;

	set_scope("common");
	EXPECT(hsaKmtGetVersion(&v), HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED,
	       "hsaKmtGetVersion before hsaKmtOpenKFD");
	EXPECT_OK(hsaKmtOpenKFD(), "hsaKmtOpenKFD");
	EXPECT(hsaKmtOpenKFD(), HSAKMT_STATUS_KERNEL_ALREADY_OPENED, "hsaKmtOpenKFD again (nested)");
	EXPECT_OK(hsaKmtCloseKFD(), "hsaKmtCloseKFD (inner)");
	memset(&v, 0, sizeof(v));
	if (EXPECT_OK(hsaKmtGetVersion(&v), "hsaKmtGetVersion"))
		check(v.KernelInterfaceMajorVersion == 1, "KFD interface %u.%u (major 1)",
		      v.KernelInterfaceMajorVersion, v.KernelInterfaceMinorVersion);
	struct stat st;
	char dir[64];
	snprintf(dir, sizeof(dir), PROC_DIR "/%d", (int)getpid());
	check(stat(dir, &st) == 0, "%s exists while /dev/kfd is open", dir);
}

/* Close and open again in the same process: the render nodes stay open
 * (libhsakmt keeps them for the process lifetime) and are acquired again. */
static void test_reopen(void)
{
	HsaSystemProperties sys;
	HsaVersionInfo v;
	struct stat st;
	char dir[64];

	set_scope("common");
	hsaKmtReleaseSystemProperties();
	EXPECT_OK(hsaKmtCloseKFD(), "hsaKmtCloseKFD");
	EXPECT(hsaKmtGetVersion(&v), HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED,
	       "hsaKmtGetVersion after hsaKmtCloseKFD");
	snprintf(dir, sizeof(dir), PROC_DIR "/%d", (int)getpid());
	check(stat(dir, &st) != 0, "%s gone after the last close", dir);
	if (!EXPECT_OK(hsaKmtOpenKFD(), "hsaKmtOpenKFD again"))
		return;
	EXPECT_OK(hsaKmtAcquireSystemProperties(&sys), "hsaKmtAcquireSystemProperties again");
	for (int i = 0; i < ngpus; i++) {
		const uint64_t size = 1 * MiB;
		void *p = NULL;

		set_scope(gpus[i].name);
		HSAKMT_STATUS s = hsaKmtAllocMemory(gpus[i].node, size, vram_flags(gpus[i].vram_public), &p);
		if (!check(s == HSAKMT_STATUS_SUCCESS, "after reopen: alloc VRAM on node %u: %s",
			   gpus[i].node, status_name(s)))
			continue;
		if (gpus[i].vram_public) {
			fill(p, size, 99);
			check(verify(p, size, 99) == -1, "after reopen: CPU pattern through the mapping");
		}
		EXPECT_OK(map_to_node(p, size, gpus[i].node), "after reopen: map to node %u", gpus[i].node);
		EXPECT_OK(hsaKmtUnmapMemoryToGPU(p), "after reopen: unmap");
		EXPECT_OK(hsaKmtFreeMemory(p, size), "after reopen: free");
	}
	set_scope("common");
}

int main(int argc, char **argv)
{
	static char self[4096];

	if (argc == 3 && !strcmp(argv[1], "--child")) {
		set_scope("child");
		return child_main(argv[2]);
	}
	verbose = argc > 1 && !strcmp(argv[1], "-v");
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(1200);
	set_scope("common");
	if (!realpath("/proc/self/exe", self))
		snprintf(self, sizeof(self), "%s", argv[0]);

	test_open_close();
	test_system();
	for (int i = 0; i < ngpus; i++) {
		const struct gpu *g = &gpus[i];

		double t0 = now_s(CLOCK_MONOTONIC);

		set_scope(g->name);
		note("GPU node %u: %s, gpu_id %u, renderD%d, %" PRIu64 " MiB VRAM%s", g->node, g->name,
		     g->gpu_id, g->render_minor, g->vram_size / MiB, g->vram_public ? " (all host-visible)" : "");
		test_gpu_topology(g);
		test_gpu_memory_props(g);
		test_gpu_caches(g);
		test_gpu_io_links(g);
		test_clocks(g->node, "GPU");
		test_vram(g, true);
		test_vram(g, false);
		test_system_memory(g, true);
		test_system_memory(g, false);
		test_registered(g);
		test_graphics_interop(g);
		test_aql_vram(g);
		test_vram_limit(g);
		note("%s took %.1f s", g->name, now_s(CLOCK_MONOTONIC) - t0);
	}
	set_scope("common");
	if (ngpus) {
		double t0 = now_s(CLOCK_MONOTONIC);

		test_clocks(0, "CPU");
		test_gtt_all();
		test_aql_gtt();
		test_registered_all();
		test_system_limits();
		test_events();
		test_threads();
		test_xnack();
		test_svm();
		test_fork();
		test_reopen();
		test_child(self, "exit");
		test_child(self, "kill");
		note("common tests took %.1f s", now_s(CLOCK_MONOTONIC) - t0);
	}
	EXPECT_OK(hsaKmtCloseKFD(), "hsaKmtCloseKFD");
	summary();
	return failed ? 1 : 0;
}
