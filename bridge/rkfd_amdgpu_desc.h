/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rkfd_amdgpu.ko: the pure part of the bridge's probe.  rkfd_amdgpu_kgd.c
 * reads plain values out of struct amdgpu_device into a struct
 * rkfd_amdgpu_desc; rkfd_amdgpu_derive() turns them into the topology
 * values rkfd gets at kgd2kfd_probe (struct rkfd_amdgpu_info), as upstream
 * amdkfd derives them (kgd2kfd_probe and kfd_topology_add_device), the
 * caches as kfd_get_gpu_cache_info (kfd_crat.c), the hive id as
 * kgd2kfd_device_init, the capability bits as kfd_topology_add_device and
 * the SDMA queues per engine as kfd_device_info_set_sdma_info.
 *
 * Also the pure part of the HWS calls: which amdgpu kfd2kgd table and MQD
 * layout a GC version has, and the kernel doorbell's index in the BAR.
 *
 * No kernel or amdgpu header beyond rkfd_amdgpu.h (<linux/types.h>) and
 * <linux/array_size.h>: the host test tests/bridge/ compiles this file
 * with gcc and checks the values for gfx90a, gfx1100 and gfx1103
 * descriptions (the caches, capability bits and SDMA queue counts against
 * upstream's own kfd_crat.c, kfd_topology.c and kfd_device.c code), the
 * table choice and the doorbell arithmetic.
 */
#ifndef RKFD_AMDGPU_DESC_H
#define RKFD_AMDGPU_DESC_H

#include <linux/array_size.h>

#include "rkfd_amdgpu.h"

/* An IP version (GC, SDMA) as one number, upstream's IP_VERSION() order. */
#define RKFD_AMDGPU_GC(maj, min, rev) (((maj) << 16) | ((min) << 8) | (rev))

/* What rkfd_amdgpu_kgd.c reads from amdgpu, unconverted. */
struct rkfd_amdgpu_desc {
	/* amdgpu_ip_version(adev, GC_HWIP, 0): IP_VERSION_MAJ/MIN/REV */
	u32 gc_major, gc_minor, gc_rev;
	bool vf;			/* SR-IOV virtual function */
	bool apu;			/* AMD_IS_APU or gmc.is_app_apu */
	u32 vendor_id, device_id, domain, bus, devfn;
	u32 render_minor;		/* 0 without a render node */
	u64 unique_id;
	/* adev->gfx.config and adev->gfx.cu_info */
	u32 max_shader_engines, max_sh_per_se, max_cu_per_sh;
	u32 simd_per_cu, max_waves_per_simd, wave_front_size, lds_size_kb;
	u32 sdma_instances;
	u32 xcc_mask;			/* adev->gfx.xcc_mask */
	u32 num_pipe_per_mec, num_queue_per_pipe;
	u32 max_engine_clk_mhz;		/* amdgpu_amdkfd_get_max_engine_clock_in_mhz */
	u32 mec_fw, sdma_fw;		/* amdgpu_amdkfd_get_fw_version */
	/* amdgpu_amdkfd_get_local_mem_info */
	u64 local_mem_size_private, local_mem_size_public;
	u32 vram_width, mem_clk_max;
	/*
	 * adev->gfx.config's cache fields (IP discovery's gc_info; 0 where
	 * the GPU's table has none) and adev->gmc.mall_size (bytes).
	 */
	u32 gc_tcp_l1_size, gc_num_tcp_per_wpg, gc_tcp_cache_line_size;
	u32 gc_l1_instruction_cache_size_per_sqc, gc_num_sqc_per_wgp;
	u32 gc_instruction_cache_line_size;
	u32 gc_l1_data_cache_size_per_sqc, gc_scalar_data_cache_line_size;
	u32 gc_gl1c_per_sa, gc_gl1c_size_per_instance;
	u32 gc_gl2c_per_gpu, gc_tcc_cache_line_size;
	u64 mall_size;
	/* adev->gmc.xgmi.hive_id (0: no hive) and amdgpu's use_xgmi_p2p */
	u64 xgmi_hive_id;
	bool use_xgmi_p2p;
	/*
	 * What kfd_topology_add_device() reads for the capability bits:
	 * adev->rev_id, adev->ras_enabled (a bit per AMDGPU_RAS_BLOCK__*),
	 * adev->gmc.is_app_apu and adev->gmc.xgmi.connected_to_cpu.
	 */
	u32 rev_id;
	u32 ras_enabled;
	bool is_app_apu, xgmi_connected_to_cpu;
	/* amdgpu_ip_version(adev, SDMA0_HWIP, 0) (kfd_device_info_set_sdma_info) */
	u32 sdma_major, sdma_minor, sdma_rev;
	u32 max_scratch_slots_per_cu;	/* adev->gfx.cu_info (the virtual CRAT's) */
};

/*
 * HSA_CAP_* bits (include/uapi/linux/kfd_sysfs.h) the bridge derives and
 * amdgpu's RAS block numbers (enum amdgpu_ras_block, amdgpu_ras.h) it
 * reads; tests/bridge checks them against the upstream headers and
 * rkfd_amdgpu_kgd.c against amdgpu's at build time.
 */
#define RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_MASK	0x00003000
#define RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_SHIFT	12
#define RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_2_0	0x2
#define RKFD_AMDGPU_HSA_CAP_MEM_EDC		0x00100000
#define RKFD_AMDGPU_HSA_CAP_RASEVENTNOTIFY	0x00200000
#define RKFD_AMDGPU_HSA_CAP_ASIC_REVISION_MASK	0x03c00000
#define RKFD_AMDGPU_HSA_CAP_ASIC_REVISION_SHIFT	22
#define RKFD_AMDGPU_HSA_CAP_SRAM_EDC		0x04000000
#define RKFD_AMDGPU_HSA_CAP_COHERENTHOSTACCESS	0x10000000
#define RKFD_AMDGPU_RAS_BLOCK_UMC		0
#define RKFD_AMDGPU_RAS_BLOCK_GFX		2

/*
 * A cache level as upstream's struct kfd_gpu_cache_info (amdkfd/kfd_crat.h)
 * has it, with its CRAT_CACHE_FLAGS_* bits (kfd_crat.h) and sizes in KiB.
 * tests/bridge checks these values against the upstream headers.
 */
struct rkfd_amdgpu_crat_cache {
	u32 cache_size, cache_level, cache_line_size, flags, num_cu_shared;
};

#define RKFD_AMDGPU_CRAT_CACHE_ENABLED	0x00000001
#define RKFD_AMDGPU_CRAT_CACHE_DATA	0x00000002
#define RKFD_AMDGPU_CRAT_CACHE_INST	0x00000004
#define RKFD_AMDGPU_CRAT_CACHE_CPU	0x00000008
#define RKFD_AMDGPU_CRAT_CACHE_SIMD	0x00000010
/* HSA_CACHE_TYPE_* (include/uapi/linux/kfd_sysfs.h) */
#define RKFD_AMDGPU_HSA_CACHE_DATA	0x00000001
#define RKFD_AMDGPU_HSA_CACHE_INST	0x00000002
#define RKFD_AMDGPU_HSA_CACHE_CPU	0x00000004
#define RKFD_AMDGPU_HSA_CACHE_HSACU	0x00000008

#define RKFD_AMDGPU_CRAT_L1 (RKFD_AMDGPU_CRAT_CACHE_ENABLED | RKFD_AMDGPU_CRAT_CACHE_SIMD)

/*
 * Upstream kfd_crat.c's aldebaran_cache_info (GC 9.4.2), entry for entry;
 * tests/bridge compares it with the table extracted from kfd_crat.c.
 */
static const struct rkfd_amdgpu_crat_cache rkfd_amdgpu_aldebaran_caches[] = {
	/* TCP L1 Cache per CU */
	{ 16, 1, 64, RKFD_AMDGPU_CRAT_L1 | RKFD_AMDGPU_CRAT_CACHE_DATA, 1 },
	/* Scalar L1 Instruction Cache per SQC */
	{ 32, 1, 64, RKFD_AMDGPU_CRAT_L1 | RKFD_AMDGPU_CRAT_CACHE_INST, 2 },
	/* Scalar L1 Data Cache per SQC */
	{ 16, 1, 64, RKFD_AMDGPU_CRAT_L1 | RKFD_AMDGPU_CRAT_CACHE_DATA, 2 },
	/* L2 Data Cache per GPU (Total Tex Cache) */
	{ 8192, 2, 128, RKFD_AMDGPU_CRAT_L1 | RKFD_AMDGPU_CRAT_CACHE_DATA, 14 },
};

/* Appends one entry to @out unless @max are there: the count, at most @max. */
static inline u32 rkfd_amdgpu_crat_push(struct rkfd_amdgpu_crat_cache *out, u32 n, u32 max,
					u32 size, u32 level, u32 line, u32 flags, u32 cus)
{
	if (n >= max)
		return n;
	out[n].cache_size = size;
	out[n].cache_level = level;
	out[n].cache_line_size = line;
	out[n].flags = flags;
	out[n].num_cu_shared = cus;
	return n + 1;
}

/*
 * Upstream kfd_fill_gpu_cache_info_from_gfx_config() (amdkfd/kfd_crat.c):
 * the cache levels IP discovery describes, each only if its size is known;
 * with @line_missing (GC 11, whose gc_info has no line sizes) a line size
 * of 0 becomes upstream's default.  At most @max entries (upstream: 6).
 */
static inline u32 rkfd_amdgpu_caches_from_gfx_config(const struct rkfd_amdgpu_desc *d,
						     bool line_missing,
						     struct rkfd_amdgpu_crat_cache *out,
						     u32 max)
{
	const u32 data = RKFD_AMDGPU_CRAT_L1 | RKFD_AMDGPU_CRAT_CACHE_DATA;
	const u32 inst = RKFD_AMDGPU_CRAT_L1 | RKFD_AMDGPU_CRAT_CACHE_INST;
	u32 n = 0, line;

	/* TCP L1 Cache per CU */
	if (d->gc_tcp_l1_size) {
		line = d->gc_tcp_cache_line_size;
		if (line_missing && !line)
			line = 128;
		n = rkfd_amdgpu_crat_push(out, n, max, d->gc_tcp_l1_size, 1, line, data,
					  d->gc_num_tcp_per_wpg / 2);
	}
	/* Scalar L1 Instruction Cache per SQC */
	if (d->gc_l1_instruction_cache_size_per_sqc) {
		line = d->gc_instruction_cache_line_size;
		if (line_missing && !line)
			line = 128;
		n = rkfd_amdgpu_crat_push(out, n, max, d->gc_l1_instruction_cache_size_per_sqc, 1,
					  line, inst, d->gc_num_sqc_per_wgp * 2);
	}
	/* Scalar L1 Data Cache per SQC */
	if (d->gc_l1_data_cache_size_per_sqc) {
		line = d->gc_scalar_data_cache_line_size;
		if (line_missing && !line)
			line = 64;
		n = rkfd_amdgpu_crat_push(out, n, max, d->gc_l1_data_cache_size_per_sqc, 1,
					  line, data, d->gc_num_sqc_per_wgp * 2);
	}
	/* GL1 Data Cache per SA: upstream sets its line size only if missing */
	if (d->gc_gl1c_per_sa && d->gc_gl1c_size_per_instance)
		n = rkfd_amdgpu_crat_push(out, n, max,
					  d->gc_gl1c_per_sa * d->gc_gl1c_size_per_instance, 1,
					  line_missing ? 128 : 0, data, d->max_cu_per_sh);
	/* L2 Data Cache per GPU (Total Tex Cache) */
	if (d->gc_gl2c_per_gpu) {
		line = d->gc_tcc_cache_line_size;
		if (line_missing && !line)
			line = 128;
		n = rkfd_amdgpu_crat_push(out, n, max, d->gc_gl2c_per_gpu, 2, line, data,
					  d->max_cu_per_sh);
	}
	/* L3 Data Cache per GPU (MALL, "Infinity Cache") */
	if (d->mall_size)
		n = rkfd_amdgpu_crat_push(out, n, max, (u32)(d->mall_size / 1024), 3, 64, data,
					  d->max_cu_per_sh);
	return n;
}

/*
 * Upstream kfd_get_gpu_cache_info() (amdkfd/kfd_crat.c) for the GC
 * versions the bridge attaches: GC 9.4.2 has aldebaran_cache_info, GC
 * 11.0.x the levels of its gfx config with cache_line_size_missing set.
 * The number of entries written to @out, at most @max; 0 for any other
 * GC version.
 */
static inline u32 rkfd_amdgpu_crat_caches(const struct rkfd_amdgpu_desc *d,
					  struct rkfd_amdgpu_crat_cache *out, u32 max)
{
	u32 gc = (d->gc_major << 16) | (d->gc_minor << 8) | d->gc_rev;
	u32 i, n = 0;

	if (gc == ((9 << 16) | (4 << 8) | 2)) {
		for (i = 0; i < ARRAY_SIZE(rkfd_amdgpu_aldebaran_caches) && n < max; i++)
			out[n++] = rkfd_amdgpu_aldebaran_caches[i];
		return n;
	}
	if (d->gc_major == 11 && d->gc_minor == 0 &&
	    (d->gc_rev == 0 || d->gc_rev == 1 || d->gc_rev == 4))
		return rkfd_amdgpu_caches_from_gfx_config(d, true, out, max);
	return 0;
}

/*
 * The HSA cache type of CRAT cache flags, as upstream's fill_in_l1_pcache()
 * and fill_in_l2_l3_pcache() (amdkfd/kfd_topology.c) set cache_type.
 */
static inline u32 rkfd_amdgpu_hsa_cache_type(u32 flags)
{
	u32 type = 0;

	if (flags & RKFD_AMDGPU_CRAT_CACHE_DATA)
		type |= RKFD_AMDGPU_HSA_CACHE_DATA;
	if (flags & RKFD_AMDGPU_CRAT_CACHE_INST)
		type |= RKFD_AMDGPU_HSA_CACHE_INST;
	if (flags & RKFD_AMDGPU_CRAT_CACHE_CPU)
		type |= RKFD_AMDGPU_HSA_CACHE_CPU;
	if (flags & RKFD_AMDGPU_CRAT_CACHE_SIMD)
		type |= RKFD_AMDGPU_HSA_CACHE_HSACU;
	return type;
}

/*
 * @info's caches from @d, as upstream kfd_fill_cache_non_crat_info()
 * lists them: an entry whose num_cu_shared is 0 shares no CU (upstream's
 * sibling mask is then empty and it adds no cache), so it is dropped;
 * more than 32 CUs (the width of upstream's CU bitmap) count as 32.
 */
static inline void rkfd_amdgpu_derive_caches(const struct rkfd_amdgpu_desc *d,
					     struct rkfd_amdgpu_info *info)
{
	struct rkfd_amdgpu_crat_cache crat[RKFD_AMDGPU_MAX_CACHES];
	u32 i, n = rkfd_amdgpu_crat_caches(d, crat, RKFD_AMDGPU_MAX_CACHES);

	info->num_caches = 0;
	for (i = 0; i < n; i++) {
		struct rkfd_amdgpu_cache *c = &info->caches[info->num_caches];

		if (!crat[i].num_cu_shared || !crat[i].cache_level)
			continue;
		c->level = crat[i].cache_level;
		c->size_kib = crat[i].cache_size;
		c->line_size = crat[i].cache_line_size;
		c->type = rkfd_amdgpu_hsa_cache_type(crat[i].flags);
		c->cus_shared = crat[i].num_cu_shared > 32 ? 32 : crat[i].num_cu_shared;
		info->num_caches++;
	}
}

/*
 * The node's hive_id as upstream kgd2kfd_device_init() (amdkfd/kfd_device.c)
 * sets kfd->hive_id: amdgpu's XGMI hive when amdgpu.use_xgmi_p2p is on,
 * else 0.  (Its fallback for a multi-partition GPU, the PCI id when
 * num_nodes > 1, does not apply: the bridge attaches no GC 9.4.3.)
 */
static inline u64 rkfd_amdgpu_hive_id(const struct rkfd_amdgpu_desc *d)
{
	return d->use_xgmi_p2p ? d->xgmi_hive_id : 0;
}

static inline u32 rkfd_amdgpu_popcount(u32 v)
{
	u32 n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
}

/*
 * The node's HSA_CAP_* bits as upstream kfd_topology_add_device() and
 * kfd_topology_set_capabilities() (amdkfd/kfd_topology.c) set them for a
 * GC 9.0.1+ GPU the bridge attaches, limited to what the bridge and rkfd
 * do over amdgpu:
 *
 *   - the ASIC revision (adev->rev_id) and doorbell type 2.0 (64-bit
 *     doorbells);
 *   - SRAM ECC if amdgpu's RAS covers GFX, HBM ECC if it covers UMC
 *     (adev->ras_enabled), RAS event notification if any block is on
 *     (upstream skips GC 9.0.1, which the bridge never attaches);
 *   - coherent host access on an app APU or a GPU whose XGMI connects it
 *     to the CPU.
 *
 * Not set: the debugger's bits (TRAP_DEBUG_*, WATCH_POINTS_*, the
 * firmware support bit; also debug_prop), since the bridge installs no
 * trap handler and rkfd has no debugger over amdgpu; PER_QUEUE_RESET
 * (gfx11 dGPUs upstream), since there is no per-queue reset here
 * (reset_mes_queue is NULL); SVMAPI_SUPPORTED, which rkfd sets itself
 * when its SVM works on the device (kgd2kfd_device_init).  ATS and
 * AQL_QUEUE_DOUBLE_MAP (Tonga) are never set for these GPUs upstream.
 */
static inline u32 rkfd_amdgpu_capability(const struct rkfd_amdgpu_desc *d)
{
	u32 cap = (RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_2_0 <<
		   RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_SHIFT) &
		  RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_MASK;

	cap |= (d->rev_id << RKFD_AMDGPU_HSA_CAP_ASIC_REVISION_SHIFT) &
	       RKFD_AMDGPU_HSA_CAP_ASIC_REVISION_MASK;
	if (d->ras_enabled & (1u << RKFD_AMDGPU_RAS_BLOCK_GFX))
		cap |= RKFD_AMDGPU_HSA_CAP_SRAM_EDC;
	if (d->ras_enabled & (1u << RKFD_AMDGPU_RAS_BLOCK_UMC))
		cap |= RKFD_AMDGPU_HSA_CAP_MEM_EDC;
	if (d->ras_enabled &&
	    !(d->gc_major == 9 && d->gc_minor == 0 && d->gc_rev == 1))
		cap |= RKFD_AMDGPU_HSA_CAP_RASEVENTNOTIFY;
	if (d->is_app_apu || d->xgmi_connected_to_cpu)
		cap |= RKFD_AMDGPU_HSA_CAP_COHERENTHOSTACCESS;
	return cap;
}

/*
 * SDMA queues per engine the KFD may use, as upstream's topology reports
 * them: kfd_device_info_set_sdma_info() (amdkfd/kfd_device.c) by SDMA IP
 * version, less the queues it reserves (SDMA 6 and 7: one for paging and
 * one for gfx).  Any other version gets upstream's default of 8.
 */
static inline u32 rkfd_amdgpu_sdma_queues_per_engine(u32 major, u32 minor, u32 rev)
{
	switch (RKFD_AMDGPU_GC(major, minor, rev)) {
	case RKFD_AMDGPU_GC(4, 0, 0):
	case RKFD_AMDGPU_GC(4, 0, 1):
	case RKFD_AMDGPU_GC(4, 1, 0):
	case RKFD_AMDGPU_GC(4, 1, 1):
	case RKFD_AMDGPU_GC(4, 1, 2):
	case RKFD_AMDGPU_GC(5, 2, 1):
	case RKFD_AMDGPU_GC(5, 2, 3):
	case RKFD_AMDGPU_GC(5, 2, 6):
	case RKFD_AMDGPU_GC(5, 2, 7):
		return 2;
	case RKFD_AMDGPU_GC(6, 0, 0):
	case RKFD_AMDGPU_GC(6, 0, 1):
	case RKFD_AMDGPU_GC(6, 0, 2):
	case RKFD_AMDGPU_GC(6, 0, 3):
	case RKFD_AMDGPU_GC(6, 1, 0):
	case RKFD_AMDGPU_GC(6, 1, 1):
	case RKFD_AMDGPU_GC(6, 1, 2):
	case RKFD_AMDGPU_GC(6, 1, 3):
	case RKFD_AMDGPU_GC(6, 1, 4):
	case RKFD_AMDGPU_GC(6, 4, 0):
	case RKFD_AMDGPU_GC(7, 0, 0):
	case RKFD_AMDGPU_GC(7, 0, 1):
	case RKFD_AMDGPU_GC(7, 1, 0):
		return 8 - 2;
	default:
		return 8;
	}
}

/*
 * The node's num_cp_queues as upstream get_cp_queues_num()
 * (kfd_device_queue_manager.c): the bits set in amdgpu's
 * shared_resources.cp_queue_bitmap (@kfd, AMDGPU_MAX_QUEUES bits, 32 a
 * word as bitmap_to_arr32 makes them), across every MEC.
 */
static inline u32 rkfd_amdgpu_cp_queues(const u32 kfd[4])
{
	u32 i, n = 0;

	for (i = 0; i < 4; i++)
		n += rkfd_amdgpu_popcount(kfd[i]);
	return n;
}

/*
 * gfx_target_version as upstream kgd2kfd_probe() (amdkfd/kfd_device.c)
 * derives it from the GC IP version, for the parts rkfd targets; 0 for any
 * other GPU (probe then attaches none rather than guess an ISA).
 */
static inline u32 rkfd_amdgpu_target_version(u32 major, u32 minor, u32 rev)
{
	if (major == 9 && minor == 4 && rev == 2)	/* MI210/MI250, gfx90a */
		return 90010;
	if (major == 11 && minor == 0 && rev == 0)	/* W7900, gfx1100 */
		return 110000;
	if (major == 11 && minor == 0 && (rev == 1 || rev == 4))	/* 780M, gfx1103 */
		return 110003;
	return 0;
}

/*
 * Fills @info from @d.  Returns false (and leaves @info alone) when the
 * GPU gets no KFD device: an SR-IOV VF, or a GC version rkfd does not know.
 */
static inline bool rkfd_amdgpu_derive(const struct rkfd_amdgpu_desc *d,
				      struct rkfd_amdgpu_info *info)
{
	u32 target = rkfd_amdgpu_target_version(d->gc_major, d->gc_minor, d->gc_rev);
	u32 xcc = rkfd_amdgpu_popcount(d->xcc_mask);

	if (d->vf || !target)
		return false;
	/* "gfx" + major + minor + stepping in hex: 90010 -> gfx90a. */
	snprintf(info->name, sizeof(info->name), "gfx%u%u%x",
		 target / 10000, (target / 100) % 100, target % 100);
	info->gfx_target_version = target;
	info->vendor_id = d->vendor_id;
	info->device_id = d->device_id;
	info->domain = d->domain;
	info->location_id = (d->bus << 8) | d->devfn;
	info->drm_render_minor = d->render_minor;
	info->unique_id = d->unique_id;
	info->num_shader_engines = d->max_shader_engines;
	info->sh_per_se = d->max_sh_per_se;
	info->cu_per_sh = d->max_cu_per_sh;
	info->simd_per_cu = d->simd_per_cu;
	info->max_waves_per_simd = d->max_waves_per_simd;
	info->wave_front_size = d->wave_front_size;
	info->lds_size_in_kb = d->lds_size_kb;
	info->num_sdma_engines = d->sdma_instances;
	info->num_xcc = xcc ? xcc : 1;
	info->num_pipe_per_mec = d->num_pipe_per_mec;
	info->num_queue_per_pipe = d->num_queue_per_pipe;
	info->max_engine_clk_fcompute = d->max_engine_clk_mhz;
	info->fw_version = d->mec_fw;
	info->sdma_fw_version = d->sdma_fw;
	/* An APU's memory is system memory: no VRAM bank (kfd_crat.c). */
	info->vram_size = d->apu ? 0 : d->local_mem_size_private + d->local_mem_size_public;
	info->vram_width = d->vram_width;
	info->mem_clk_max = d->mem_clk_max;
	info->vram_is_public = d->local_mem_size_private == 0;
	rkfd_amdgpu_derive_caches(d, info);
	info->hive_id = rkfd_amdgpu_hive_id(d);
	info->capability = rkfd_amdgpu_capability(d);
	info->num_sdma_queues_per_engine =
		rkfd_amdgpu_sdma_queues_per_engine(d->sdma_major, d->sdma_minor, d->sdma_rev);
	info->max_slots_scratch_cu = d->max_scratch_slots_per_cu;
	return true;
}

/*
 * amdgpu's kfd2kgd table for a GC IP version, as upstream kgd2kfd_probe()
 * (amdkfd/kfd_device.c) picks it for GC 9 and later (the tables patch 0003
 * exports), and the compute MQD layout that table's hiq_mqd_load reads
 * (amdgpu's v9/v10/v11/v12_structs.h).  RKFD_AMDGPU_F2G_NONE for a GC
 * version amdkfd has no table for.
 */
enum rkfd_amdgpu_f2g {
	RKFD_AMDGPU_F2G_NONE,
	RKFD_AMDGPU_F2G_GFX_V9,		/* gfx_v9_kfd2kgd */
	RKFD_AMDGPU_F2G_ARCTURUS,	/* arcturus_kfd2kgd */
	RKFD_AMDGPU_F2G_ALDEBARAN,	/* aldebaran_kfd2kgd */
	RKFD_AMDGPU_F2G_GC_9_4_3,	/* gc_9_4_3_kfd2kgd */
	RKFD_AMDGPU_F2G_GFX_V10,	/* gfx_v10_kfd2kgd */
	RKFD_AMDGPU_F2G_GFX_V10_3,	/* gfx_v10_3_kfd2kgd */
	RKFD_AMDGPU_F2G_GFX_V11,	/* gfx_v11_kfd2kgd */
	RKFD_AMDGPU_F2G_GFX_V12,	/* gfx_v12_kfd2kgd */
	RKFD_AMDGPU_F2G_GFX_V12_1,	/* gfx_v12_1_kfd2kgd */
};

enum rkfd_amdgpu_mqd {
	RKFD_AMDGPU_MQD_NONE,
	RKFD_AMDGPU_MQD_V9,		/* struct v9_mqd */
	RKFD_AMDGPU_MQD_V10,		/* struct v10_compute_mqd */
	RKFD_AMDGPU_MQD_V11,		/* struct v11_compute_mqd */
	RKFD_AMDGPU_MQD_V12,		/* struct v12_compute_mqd */
};

static inline enum rkfd_amdgpu_f2g rkfd_amdgpu_f2g_of(u32 major, u32 minor, u32 rev)
{
	switch (RKFD_AMDGPU_GC(major, minor, rev)) {
	case RKFD_AMDGPU_GC(9, 0, 1):
	case RKFD_AMDGPU_GC(9, 1, 0):
	case RKFD_AMDGPU_GC(9, 2, 1):
	case RKFD_AMDGPU_GC(9, 2, 2):
	case RKFD_AMDGPU_GC(9, 3, 0):
	case RKFD_AMDGPU_GC(9, 4, 0):
		return RKFD_AMDGPU_F2G_GFX_V9;
	case RKFD_AMDGPU_GC(9, 4, 1):
		return RKFD_AMDGPU_F2G_ARCTURUS;
	case RKFD_AMDGPU_GC(9, 4, 2):
		return RKFD_AMDGPU_F2G_ALDEBARAN;
	case RKFD_AMDGPU_GC(9, 4, 3):
	case RKFD_AMDGPU_GC(9, 4, 4):
	case RKFD_AMDGPU_GC(9, 5, 0):
		return RKFD_AMDGPU_F2G_GC_9_4_3;
	case RKFD_AMDGPU_GC(10, 1, 1):
	case RKFD_AMDGPU_GC(10, 1, 2):
	case RKFD_AMDGPU_GC(10, 1, 3):
	case RKFD_AMDGPU_GC(10, 1, 4):
	case RKFD_AMDGPU_GC(10, 1, 10):
		return RKFD_AMDGPU_F2G_GFX_V10;
	case RKFD_AMDGPU_GC(10, 3, 0):
	case RKFD_AMDGPU_GC(10, 3, 1):
	case RKFD_AMDGPU_GC(10, 3, 2):
	case RKFD_AMDGPU_GC(10, 3, 3):
	case RKFD_AMDGPU_GC(10, 3, 4):
	case RKFD_AMDGPU_GC(10, 3, 5):
	case RKFD_AMDGPU_GC(10, 3, 6):
	case RKFD_AMDGPU_GC(10, 3, 7):
		return RKFD_AMDGPU_F2G_GFX_V10_3;
	case RKFD_AMDGPU_GC(11, 0, 0):
	case RKFD_AMDGPU_GC(11, 0, 1):
	case RKFD_AMDGPU_GC(11, 0, 2):
	case RKFD_AMDGPU_GC(11, 0, 3):
	case RKFD_AMDGPU_GC(11, 0, 4):
	case RKFD_AMDGPU_GC(11, 5, 0):
	case RKFD_AMDGPU_GC(11, 5, 1):
	case RKFD_AMDGPU_GC(11, 5, 2):
	case RKFD_AMDGPU_GC(11, 5, 3):
	case RKFD_AMDGPU_GC(11, 5, 4):
	case RKFD_AMDGPU_GC(11, 5, 6):
	case RKFD_AMDGPU_GC(11, 7, 0):
	case RKFD_AMDGPU_GC(11, 7, 1):
		return RKFD_AMDGPU_F2G_GFX_V11;
	case RKFD_AMDGPU_GC(12, 0, 0):
	case RKFD_AMDGPU_GC(12, 0, 1):
		return RKFD_AMDGPU_F2G_GFX_V12;
	case RKFD_AMDGPU_GC(12, 1, 0):
		return RKFD_AMDGPU_F2G_GFX_V12_1;
	default:
		return RKFD_AMDGPU_F2G_NONE;
	}
}

/* The compute MQD a table's hiq_mqd_load takes (its kfd_mqd_manager). */
static inline enum rkfd_amdgpu_mqd rkfd_amdgpu_mqd_of(enum rkfd_amdgpu_f2g f2g)
{
	switch (f2g) {
	case RKFD_AMDGPU_F2G_GFX_V9:
	case RKFD_AMDGPU_F2G_ARCTURUS:
	case RKFD_AMDGPU_F2G_ALDEBARAN:
	case RKFD_AMDGPU_F2G_GC_9_4_3:
		return RKFD_AMDGPU_MQD_V9;
	case RKFD_AMDGPU_F2G_GFX_V10:
	case RKFD_AMDGPU_F2G_GFX_V10_3:
		return RKFD_AMDGPU_MQD_V10;
	case RKFD_AMDGPU_F2G_GFX_V11:
		return RKFD_AMDGPU_MQD_V11;
	case RKFD_AMDGPU_F2G_GFX_V12:
	case RKFD_AMDGPU_F2G_GFX_V12_1:
		return RKFD_AMDGPU_MQD_V12;
	default:
		return RKFD_AMDGPU_MQD_NONE;
	}
}

/*
 * Doorbells.  A doorbell BO (DOORBELL domain) has its byte offset in the
 * doorbell BAR as GPU offset; rkfd names a doorbell by its dword in such a
 * BO, the CP and the MES need its dword index in the BAR,
 * amdgpu_doorbell_index_on_bar(): BO offset / 4 + dword.  On gfx9+
 * doorbells are 64-bit (write_kernel_doorbell64, doorbell_size 8), so the
 * dword is even.  False for a dword outside the BO's @size bytes, an odd
 * one, or an index past 32 bits.
 */
static inline bool rkfd_amdgpu_doorbell_index(u64 bo_offset, u32 size, u32 dword,
					      u32 *bar_index)
{
	u64 index = bo_offset / 4 + dword;

	if (dword % 2 || dword >= size / 4 || index > 0xffffffffu)
		return false;
	*bar_index = index;
	return true;
}

/*
 * Kernel doorbells (the HIQ's): as upstream kfd_doorbell_init(), one page
 * of the doorbell BAR.
 */
#define RKFD_AMDGPU_DOORBELL_PAGE 4096u

static inline bool rkfd_amdgpu_kernel_doorbell(u64 page_offset, u32 dword, u32 *bar_index)
{
	return rkfd_amdgpu_doorbell_index(page_offset, RKFD_AMDGPU_DOORBELL_PAGE, dword,
					  bar_index);
}

/*
 * CP_HQD_PQ_DOORBELL_CONTROL.DOORBELL_OFFSET and
 * SDMA*_RLC*_DOORBELL_OFFSET.OFFSET, bits 27:2 on gfx9 to gfx12 (checked
 * against amdgpu's gc_9_0_sh_mask.h in rkfd_amdgpu_kgd.c).
 */
#define RKFD_AMDGPU_DOORBELL_OFFSET_SHIFT 2
#define RKFD_AMDGPU_DOORBELL_OFFSET_MASK 0x0ffffffcu

/*
 * The HIQ's MQD as rkfd built it names its doorbell by @dword of the
 * kernel doorbell page; the CP needs @bar_index.  Writes the doorbell word
 * (cp_hqd_pq_doorbell_control) with the offset replaced to *@out.  False
 * if @ctl does not name @dword (an MQD inconsistent with the call's
 * argument) or @bar_index does not fit the field.
 */
static inline bool rkfd_amdgpu_doorbell_control(u32 ctl, u32 dword, u32 bar_index, u32 *out)
{
	u32 field = RKFD_AMDGPU_DOORBELL_OFFSET_MASK >> RKFD_AMDGPU_DOORBELL_OFFSET_SHIFT;

	if (((ctl & RKFD_AMDGPU_DOORBELL_OFFSET_MASK) >> RKFD_AMDGPU_DOORBELL_OFFSET_SHIFT) !=
	    dword || bar_index > field)
		return false;
	*out = (ctl & ~RKFD_AMDGPU_DOORBELL_OFFSET_MASK) |
	       (bar_index << RKFD_AMDGPU_DOORBELL_OFFSET_SHIFT);
	return true;
}

/* The dword (HIQ) or BAR index (user queues) a doorbell word names. */
static inline u32 rkfd_amdgpu_doorbell_dword(u32 ctl)
{
	return (ctl & RKFD_AMDGPU_DOORBELL_OFFSET_MASK) >> RKFD_AMDGPU_DOORBELL_OFFSET_SHIFT;
}

/*
 * A process's doorbells (user queues): as upstream kfd_alloc_process_doorbells(),
 * one slice of the BAR per process and GPU, kfd_doorbell_process_slice()
 * bytes (8 KiB on gfx9+, what the bridge reports as doorbell_process_size).
 * The bridge tells rkfd where the slice is (get_process_doorbell_index:
 * amdgpu_doorbell_index_on_bar() of the slice's doorbell 0, slice offset
 * / 4), and rkfd's MQDs and MES requests name a queue's doorbell by its
 * BAR index, as upstream's q->properties.doorbell_off
 * (kfd_get_doorbell_dw_offset_in_bar).  False for a slice whose index does
 * not fit the doorbell field (bits 27:2: 26 bits).
 */
#define RKFD_AMDGPU_PROCESS_DOORBELLS 8192u

static inline bool rkfd_amdgpu_process_doorbell_index(u64 slice_offset, u32 *first)
{
	u32 index;

	if (!rkfd_amdgpu_doorbell_index(slice_offset, RKFD_AMDGPU_PROCESS_DOORBELLS, 0, &index) ||
	    (u64)index + RKFD_AMDGPU_PROCESS_DOORBELLS / 4 >
	    (RKFD_AMDGPU_DOORBELL_OFFSET_MASK >> RKFD_AMDGPU_DOORBELL_OFFSET_SHIFT) + 1ull)
		return false;
	*first = index;
	return true;
}

/*
 * Whether BAR index @bar_index (an MQD's doorbell field, a MES request's
 * doorbell_offset, as rkfd writes them) is a whole 64-bit doorbell of the
 * slice at byte @slice_offset of the BAR: the CP would otherwise ring
 * another process's doorbell (or none), so the bridge refuses it.
 */
static inline bool rkfd_amdgpu_process_doorbell_ok(u64 slice_offset, u32 bar_index)
{
	u64 first = slice_offset / 4, dword;

	if (bar_index < first)
		return false;
	dword = bar_index - first;
	return dword % 2 == 0 && dword < RKFD_AMDGPU_PROCESS_DOORBELLS / 4;
}

/*
 * The no-HWS path (upstream allocate_vmid / deallocate_vmid in
 * kfd_device_queue_manager.c): a process gets one of the KFD's VMIDs
 * (amdgpu's kgd2kfd_shared_resources.compute_vmid_bitmap) while it has a
 * queue loaded, the lowest free one.  -1 if none is free.
 */
static inline int rkfd_amdgpu_vmid_alloc(u32 kfd_vmids, u32 used)
{
	u32 free = kfd_vmids & ~used & 0xffff;	/* 16 VMIDs per hub */

	return free ? __builtin_ctz(free) : -1;
}

/*
 * The VMID of an SDMA queue is RB_VMID, bits 27:24 of its MQD's
 * sdmax_rlcx_rb_cntl on gfx9 to gfx11 (update_mqd_sdma; checked against
 * amdgpu's sdma0_4_2_2_sh_mask.h in rkfd_amdgpu_kgd.c); rkfd leaves it 0.
 */
#define RKFD_AMDGPU_SDMA_RB_VMID_SHIFT 24
#define RKFD_AMDGPU_SDMA_RB_VMID_MASK 0x0f000000u

static inline u32 rkfd_amdgpu_sdma_rb_cntl(u32 rb_cntl, u32 vmid)
{
	return (rb_cntl & ~RKFD_AMDGPU_SDMA_RB_VMID_MASK) |
	       ((vmid << RKFD_AMDGPU_SDMA_RB_VMID_SHIFT) & RKFD_AMDGPU_SDMA_RB_VMID_MASK);
}

/*
 * The compute HQDs amdgpu leaves to the KFD: kgd2kfd_shared_resources'
 * cp_queue_bitmap (AMDGPU_MAX_QUEUES = 128 bits), bit (mec * pipes + pipe) *
 * queues_per_pipe + queue, without the queues of amdgpu's own compute
 * rings (upstream's dqm init_pipelines / allocate_hqd use only those).
 * rkfd loads into the first MEC.  False for a slot out of range; else
 * *@bit is its bit.
 */
#define RKFD_AMDGPU_MAX_QUEUES 128u

static inline bool rkfd_amdgpu_hqd_bit(u32 pipe, u32 queue, u32 pipes, u32 queues_per_pipe,
				       u32 *bit)
{
	u64 b = (u64)pipe * queues_per_pipe + queue;

	if (pipe >= pipes || queue >= queues_per_pipe || b >= RKFD_AMDGPU_MAX_QUEUES)
		return false;
	*bit = b;
	return true;
}

/*
 * rkfd's kgd_gpu_info.reserved_hqds from amdgpu's cp_queue_bitmap (@kfd,
 * 32 bits a word, bitmap_to_arr32): of the first MEC's @slots (pipes x
 * queues per pipe, the bits rkfd's slots have in both maps), the ones the
 * bitmap leaves out are amdgpu's.  Slots past the first MEC are not rkfd's
 * to use and stay 0.
 */
static inline void rkfd_amdgpu_reserved_hqds(const u32 kfd[4], u32 slots, u32 out[4])
{
	u32 i;

	for (i = 0; i < 4; i++) {
		u32 mask = slots >= 32 * (i + 1) ? 0xffffffffu :
			   slots > 32 * i ? (1u << (slots - 32 * i)) - 1 : 0;

		out[i] = ~kfd[i] & mask;
	}
}

/*
 * An SDMA MQD's RLC queue: amdgpu's tables turn (sdma_engine_id,
 * sdma_queue_id) into register offsets unchecked (get_sdma_rlc_reg_offset),
 * so the bridge refuses an engine past adev->sdma.num_instances or a queue
 * past the 8 RLC queues per engine amdkfd uses on SDMA 4.2.2 and later
 * (kfd_device_info_set_sdma_info; the bridge attaches GC 9.4.2 and 11.x,
 * with SDMA 4.4 and 6.0).
 */
#define RKFD_AMDGPU_SDMA_RLC_QUEUES 8u

static inline bool rkfd_amdgpu_sdma_slot_ok(u32 engine, u32 queue, u32 num_engines)
{
	return engine < num_engines && queue < RKFD_AMDGPU_SDMA_RLC_QUEUES;
}

/*
 * An AQL queue's write pointer counts 64-byte packets, the CP's dwords:
 * upstream's load_mqd (kfd_mqd_manager_v9.c, _v10.c, _v11.c) passes
 * wptr_shift 4 for KFD_QUEUE_FORMAT_AQL, 0 for PM4, with wptr_mask 0.  rkfd
 * marks an AQL MQD in cp_hqd_aql_control.CONTROL0 (bit 0), as update_mqd.
 */
static inline u32 rkfd_amdgpu_wptr_shift(u32 cp_hqd_aql_control)
{
	return cp_hqd_aql_control & 1 ? 4 : 0;
}

/*
 * SH_MEM_CONFIG and SH_MEM_BASES of a process's VMID (no-HWS:
 * program_sh_mem_settings; MES: sh_mem_config_data), as upstream's
 * update_qpd_v9 / _v10 / _v11 and compute_sh_mem_bases_64bit() compute
 * them for the apertures kfd_init_apertures_v9() gives every gfx9+
 * process (LDS at 1 << 48, scratch at 2 << 48): SH_MEM_BASES is
 * SHARED_BASE (LDS >> 48) << 16 | PRIVATE_BASE (scratch >> 48).
 * ALIGNMENT_MODE is UNALIGNED (3): bits 4:3 on gfx9, 3:2 on gfx10/11 (where
 * INITIAL_INST_PREFETCH, bits 15:14, is 3).  On gfx9 RETRY_DISABLE (bit
 * 12) is set: a VMID the bridge programs itself (no-HWS) gets no retry
 * faults, as upstream gives a process with XNACK off (the bridge does not
 * know the process's XNACK mode here); under the HWS, rkfd's MAP_PROCESS
 * carries the process's own SH_MEM_CONFIG, and amdgpu's unresolved retry
 * faults reach rkfd through amdgpu_kfd_ops.restore_svm_pages.  GC 9.4.3's
 * F8_MODE and gfx12 are not covered: false.
 */
#define RKFD_AMDGPU_SH_MEM_BASES ((1u << 16) | 2u)

static inline bool rkfd_amdgpu_sh_mem_config(enum rkfd_amdgpu_mqd mqd, u32 *config)
{
	switch (mqd) {
	case RKFD_AMDGPU_MQD_V9:
		*config = 3u << 3 | 1u << 12;
		return true;
	case RKFD_AMDGPU_MQD_V10:
	case RKFD_AMDGPU_MQD_V11:
		*config = 3u << 2 | 3u << 14;
		return true;
	default:
		return false;
	}
}

/*
 * SVM (rkfd's svm_* calls; rkfd_amdgpu_kgd.c has the amdgpu half).
 *
 * What a page of one svm_map batch becomes, from its entry (RKFD_AMDGPU_SVM_*)
 * and whether the bridge has a PTE recorded for it: upstream
 * svm_range_map_to_gpu() maps pages of one memory domain (system or VRAM,
 * SVM_RANGE_VRAM_DOMAIN) with one amdgpu_vm_update_range() each; the
 * bridge also keeps read-only and writable pages apart (their PTE flags
 * differ) and clears what rkfd no longer maps.
 */
enum rkfd_amdgpu_svm_op {
	RKFD_AMDGPU_SVM_SKIP,		/* not mapped, nothing recorded */
	RKFD_AMDGPU_SVM_SYS_RO,		/* a system page, read-only */
	RKFD_AMDGPU_SVM_SYS_RW,
	RKFD_AMDGPU_SVM_VRAM_RO,	/* a VRAM page of this GPU, read-only */
	RKFD_AMDGPU_SVM_VRAM_RW,
	RKFD_AMDGPU_SVM_CLEAR,		/* not mapped, a PTE recorded: clear it */
};

static inline enum rkfd_amdgpu_svm_op rkfd_amdgpu_svm_op_of(u64 pte, bool recorded)
{
	bool write = pte & RKFD_AMDGPU_SVM_WRITE;

	if (!(pte & RKFD_AMDGPU_SVM_VALID))
		return recorded ? RKFD_AMDGPU_SVM_CLEAR : RKFD_AMDGPU_SVM_SKIP;
	if (pte & RKFD_AMDGPU_SVM_VRAM)
		return write ? RKFD_AMDGPU_SVM_VRAM_RW : RKFD_AMDGPU_SVM_VRAM_RO;
	return write ? RKFD_AMDGPU_SVM_SYS_RW : RKFD_AMDGPU_SVM_SYS_RO;
}

static inline bool rkfd_amdgpu_svm_op_vram(enum rkfd_amdgpu_svm_op op)
{
	return op == RKFD_AMDGPU_SVM_VRAM_RO || op == RKFD_AMDGPU_SVM_VRAM_RW;
}

static inline bool rkfd_amdgpu_svm_op_maps(enum rkfd_amdgpu_svm_op op)
{
	return op != RKFD_AMDGPU_SVM_SKIP && op != RKFD_AMDGPU_SVM_CLEAR;
}

/* The end of the run of ops equal to op[@i] (@i < @n): one page-table update. */
static inline u64 rkfd_amdgpu_svm_run_end(const u8 *op, u64 n, u64 i)
{
	u64 j;

	for (j = i + 1; j < n && op[j] == op[i]; j++)
		;
	return j;
}

/*
 * The GPU address of VRAM page @frame in a PTE (upstream
 * svm_range_dma_map_dev() for a device page: its VRAM offset plus
 * vm_manager.vram_base_offset, the VRAM's address in the GPU's physical
 * address space); the frame is a page index (rkfd's device page n is
 * VRAM page n, upstream svm_migrate_addr_to_pfn()).
 */
static inline u64 rkfd_amdgpu_svm_vram_addr(u64 vram_base_offset, u64 frame, u32 page_shift)
{
	return vram_base_offset + (frame << page_shift);
}

/*
 * The end of the run of consecutive VRAM frames that starts at @i (@i <
 * @n): svm_migrate_copy_memory_gart() copies to or from one contiguous
 * VRAM range (upstream svm_migrate_copy_to_vram / _to_ram cut their
 * batches the same way); the system side is a GART window, any pages.
 */
static inline u64 rkfd_amdgpu_frame_run_end(const u64 *frames, u64 n, u64 i)
{
	u64 j;

	for (j = i + 1; j < n && frames[j] == frames[j - 1] + 1; j++)
		;
	return j;
}

/*
 * Whether a VRAM BO for svm_alloc_vram_block(@order) is usable: its
 * first chunk (amdgpu's resource cursor) of @chunk_pages pages at frame
 * @first covers all 2^@order pages, @first is a multiple of 2^@order and
 * the block ends inside rkfd's device pages (@npages, the GPU's VRAM
 * pages).  Orders of 32 or more are refused.
 */
static inline bool rkfd_amdgpu_vram_block_ok(u64 first, u64 chunk_pages, u32 order, u64 npages)
{
	u64 size;

	if (order >= 32)
		return false;
	size = 1ull << order;
	return chunk_pages >= size && !(first & (size - 1)) && first < npages &&
	       size <= npages - first;
}

/* Whether VRAM frames [@first, @first + @n) are device pages rkfd has (@npages). */
static inline bool rkfd_amdgpu_vram_frames_ok(u64 first, u64 n, u64 npages)
{
	return first < npages && n <= npages - first;
}

#endif /* RKFD_AMDGPU_DESC_H */
