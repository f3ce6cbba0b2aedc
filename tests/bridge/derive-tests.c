// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of the bridge's pure part (bridge/rkfd_amdgpu_desc.h): the
 * topology values rkfd gets at probe from what amdgpu reports, for a gfx90a
 * (MI210), a gfx1100 (W7900) and a gfx1103 (780M, an APU) description, and
 * the GPUs the bridge must not attach.  The descriptions are what amdgpu's
 * gfx_v9_0 / gfx_v11_0 code and the public specifications give for those
 * parts; none has been read from real hardware here.
 * Also the HWS path's pure part: amdgpu's kfd2kgd table and MQD layout per
 * GC version (amdkfd's kgd2kfd_probe), the kernel doorbell's BAR index
 * and the HIQ MQD's doorbell control.
 * Also the caches (against upstream's own kfd_crat.c code and tables,
 * copied by gen-upstream.sh) and the XGMI hive id; the capability bits
 * and SDMA queues per engine (against upstream's kfd_topology.c /
 * kfd_device.c code, gen-upstream.sh --caps) and num_cp_queues.
 * Also SVM's pure part: what an svm_map entry becomes and the runs one
 * page-table update each covers, a VRAM page's PTE address, the runs of
 * consecutive VRAM frames one SDMA copy covers and the checks on a VRAM
 * block.
 * Prints "bridge-derive: N passed, N failed".
 */
#include <string.h>

#include "rkfd_amdgpu_desc.h"

static int pass, fail;

#define CHECK(what, cond) do {						\
	if (cond) {							\
		pass++;							\
		printf("ok - %s\n", what);				\
	} else {							\
		fail++;							\
		printf("not ok - %s (%s)\n", what, #cond);		\
	}								\
} while (0)

#define GiB (1ULL << 30)
#define MiB (1ULL << 20)

static const struct rkfd_amdgpu_desc mi210 = {
	.gc_major = 9, .gc_minor = 4, .gc_rev = 2,
	.vendor_id = 0x1002, .device_id = 0x740f, .domain = 0, .bus = 0x83, .devfn = 0x08,
	.render_minor = 128, .unique_id = 0x1234abcd5678ef01ULL,
	.max_shader_engines = 8, .max_sh_per_se = 1, .max_cu_per_sh = 16,
	.simd_per_cu = 4, .max_waves_per_simd = 8, .wave_front_size = 64, .lds_size_kb = 64,
	.sdma_instances = 5, .xcc_mask = 0x1, .num_pipe_per_mec = 4, .num_queue_per_pipe = 8,
	.max_engine_clk_mhz = 1700, .mec_fw = 78, .sdma_fw = 9,
	.local_mem_size_private = 0, .local_mem_size_public = 64 * GiB,
	.vram_width = 4096, .mem_clk_max = 1600,
	/* SDMA 4.4.0 (ALDEBARAN); RAS on for GFX, UMC, SDMA and MMHUB */
	.sdma_major = 4, .sdma_minor = 4, .sdma_rev = 0, .max_scratch_slots_per_cu = 32,
	.rev_id = 1, .ras_enabled = 0xf,
};

static const struct rkfd_amdgpu_desc w7900 = {
	.gc_major = 11, .gc_minor = 0, .gc_rev = 0,
	.vendor_id = 0x1002, .device_id = 0x7448, .domain = 1, .bus = 0x03, .devfn = 0,
	.render_minor = 129,
	.max_shader_engines = 6, .max_sh_per_se = 2, .max_cu_per_sh = 8,
	.simd_per_cu = 2, .max_waves_per_simd = 16, .wave_front_size = 32, .lds_size_kb = 64,
	.sdma_instances = 2, .xcc_mask = 0x1, .num_pipe_per_mec = 4, .num_queue_per_pipe = 8,
	.max_engine_clk_mhz = 2495, .mec_fw = 2120, .sdma_fw = 21,
	.local_mem_size_private = 48 * GiB - 256 * MiB, .local_mem_size_public = 256 * MiB,
	.vram_width = 384, .mem_clk_max = 1124,
	.sdma_major = 6, .sdma_minor = 0, .sdma_rev = 0, .max_scratch_slots_per_cu = 32,
	/*
	 * IP discovery's gc_info v1.2 of Navi 31 as the virtual GPU's gfx1100
	 * profile has it (vgpu/profile.rs): 32 KiB TCP (L0) per CU, 2 TCPs
	 * and 1 SQC per WGP, 64 KiB instruction and 16 KiB scalar cache per
	 * SQC, 256 KiB GL1 per shader array, 6 MiB L2; gc_info v1.2 carries
	 * no line sizes (upstream's "Cacheline size not available in IP
	 * discovery for gc11").  AMD's W7900 specification: 6 MB L2, 96 MB
	 * Infinity Cache (adev->gmc.mall_size).  Only the GL1 product is
	 * public, not its split into gl1c_per_sa x gl1c_size_per_instance.
	 */
	.gc_tcp_l1_size = 32, .gc_num_tcp_per_wpg = 2,
	.gc_l1_instruction_cache_size_per_sqc = 64, .gc_num_sqc_per_wgp = 1,
	.gc_l1_data_cache_size_per_sqc = 16,
	.gc_gl1c_per_sa = 1, .gc_gl1c_size_per_instance = 256,
	.gc_gl2c_per_gpu = 6144, .mall_size = 96 * MiB,
};

static const struct rkfd_amdgpu_desc r780m = {
	.gc_major = 11, .gc_minor = 0, .gc_rev = 1, .apu = true,
	.vendor_id = 0x1002, .device_id = 0x15bf, .domain = 0, .bus = 0xc4, .devfn = 0,
	.render_minor = 128,
	.max_shader_engines = 1, .max_sh_per_se = 2, .max_cu_per_sh = 6,
	.simd_per_cu = 2, .max_waves_per_simd = 16, .wave_front_size = 32, .lds_size_kb = 64,
	.sdma_instances = 1, .xcc_mask = 0x1, .num_pipe_per_mec = 4, .num_queue_per_pipe = 8,
	.max_engine_clk_mhz = 2700, .mec_fw = 2070, .sdma_fw = 19,
	.local_mem_size_private = 0, .local_mem_size_public = 512 * MiB,
	.vram_width = 128, .mem_clk_max = 2800,
	.sdma_major = 6, .sdma_minor = 0, .sdma_rev = 1, .max_scratch_slots_per_cu = 32,
	/* As the W7900 (the gfx1103 profile), but a 2 MiB L2 and no MALL. */
	.gc_tcp_l1_size = 32, .gc_num_tcp_per_wpg = 2,
	.gc_l1_instruction_cache_size_per_sqc = 64, .gc_num_sqc_per_wgp = 1,
	.gc_l1_data_cache_size_per_sqc = 16,
	.gc_gl1c_per_sa = 1, .gc_gl1c_size_per_instance = 256,
	.gc_gl2c_per_gpu = 2048, .mall_size = 0,
};

/* An info that derive must not touch: every byte 0x5a. */
static bool untouched(const struct rkfd_amdgpu_info *info)
{
	const unsigned char *p = (const void *)info;

	for (size_t i = 0; i < sizeof(*info); i++)
		if (p[i] != 0x5a)
			return false;
	return true;
}

static void attached(const char *what, const struct rkfd_amdgpu_desc *d,
		     const char *name, u32 target, u32 cus, u64 vram, u32 is_public)
{
	struct rkfd_amdgpu_info info;
	char msg[160];
	bool ok;

	memset(&info, 0, sizeof(info));
	ok = rkfd_amdgpu_derive(d, &info);
	snprintf(msg, sizeof(msg), "%s: attached", what);
	CHECK(msg, ok);
	if (!ok)
		return;
	snprintf(msg, sizeof(msg), "%s: name %s (got %s)", what, name, info.name);
	CHECK(msg, strcmp(info.name, name) == 0);
	snprintf(msg, sizeof(msg), "%s: gfx_target_version %u (got %u)", what, target,
		 info.gfx_target_version);
	CHECK(msg, info.gfx_target_version == target);
	snprintf(msg, sizeof(msg), "%s: %u CUs = SE x SH/SE x CU/SH (got %u)", what, cus,
		 info.num_shader_engines * info.sh_per_se * info.cu_per_sh);
	CHECK(msg, info.num_shader_engines * info.sh_per_se * info.cu_per_sh == cus);
	snprintf(msg, sizeof(msg), "%s: SIMD/CU, waves/SIMD, wave size, LDS as amdgpu's cu_info",
		 what);
	CHECK(msg, info.simd_per_cu == d->simd_per_cu &&
		   info.max_waves_per_simd == d->max_waves_per_simd &&
		   info.wave_front_size == d->wave_front_size &&
		   info.lds_size_in_kb == d->lds_size_kb);
	snprintf(msg, sizeof(msg), "%s: location_id = bus << 8 | devfn (0x%x)", what,
		 info.location_id);
	CHECK(msg, info.location_id == ((d->bus << 8) | d->devfn) && info.domain == d->domain);
	snprintf(msg, sizeof(msg), "%s: PCI ids, render minor, unique_id", what);
	CHECK(msg, info.vendor_id == d->vendor_id && info.device_id == d->device_id &&
		   info.drm_render_minor == d->render_minor && info.unique_id == d->unique_id);
	snprintf(msg, sizeof(msg), "%s: VRAM %llu MiB (got %llu MiB), public %u", what,
		 (unsigned long long)(vram / MiB), (unsigned long long)(info.vram_size / MiB),
		 is_public);
	CHECK(msg, info.vram_size == vram && info.vram_is_public == is_public);
	snprintf(msg, sizeof(msg), "%s: one XCC, SDMA engines, MEC pipes and queues", what);
	CHECK(msg, info.num_xcc == 1 && info.num_sdma_engines == d->sdma_instances &&
		   info.num_pipe_per_mec == d->num_pipe_per_mec &&
		   info.num_queue_per_pipe == d->num_queue_per_pipe);
	snprintf(msg, sizeof(msg), "%s: clock, firmware versions, VRAM width and clock", what);
	CHECK(msg, info.max_engine_clk_fcompute == d->max_engine_clk_mhz &&
		   info.fw_version == d->mec_fw && info.sdma_fw_version == d->sdma_fw &&
		   info.vram_width == d->vram_width && info.mem_clk_max == d->mem_clk_max);
}

static void not_attached(const char *what, const struct rkfd_amdgpu_desc *d)
{
	struct rkfd_amdgpu_info info;
	char msg[160];
	bool ok;

	memset(&info, 0x5a, sizeof(info));
	ok = rkfd_amdgpu_derive(d, &info);
	snprintf(msg, sizeof(msg), "%s: not attached, info untouched", what);
	CHECK(msg, !ok && untouched(&info));
}

static void table(u32 major, u32 minor, u32 rev, enum rkfd_amdgpu_f2g f2g,
		  enum rkfd_amdgpu_mqd mqd)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "GC %u.%u.%u: kfd2kgd table %d, MQD layout %d",
		 major, minor, rev, f2g, mqd);
	CHECK(msg, rkfd_amdgpu_f2g_of(major, minor, rev) == f2g &&
	      rkfd_amdgpu_mqd_of(rkfd_amdgpu_f2g_of(major, minor, rev)) == mqd);
}

static void hws_path(void)
{
	static const u32 attached_gc[][3] = { {9, 4, 2}, {11, 0, 0}, {11, 0, 1}, {11, 0, 4} };
	const u32 en = 1u << 30;	/* DOORBELL_EN, outside the offset field */
	unsigned int i;
	bool all = true;
	u32 idx = 0, ctl = 0;

	/* amdkfd's choice, one GC version per case of kgd2kfd_probe at least. */
	table(9, 0, 1, RKFD_AMDGPU_F2G_GFX_V9, RKFD_AMDGPU_MQD_V9);
	table(9, 3, 0, RKFD_AMDGPU_F2G_GFX_V9, RKFD_AMDGPU_MQD_V9);
	table(9, 4, 1, RKFD_AMDGPU_F2G_ARCTURUS, RKFD_AMDGPU_MQD_V9);
	table(9, 4, 2, RKFD_AMDGPU_F2G_ALDEBARAN, RKFD_AMDGPU_MQD_V9);
	table(9, 4, 3, RKFD_AMDGPU_F2G_GC_9_4_3, RKFD_AMDGPU_MQD_V9);
	table(9, 5, 0, RKFD_AMDGPU_F2G_GC_9_4_3, RKFD_AMDGPU_MQD_V9);
	table(10, 1, 10, RKFD_AMDGPU_F2G_GFX_V10, RKFD_AMDGPU_MQD_V10);
	table(10, 3, 0, RKFD_AMDGPU_F2G_GFX_V10_3, RKFD_AMDGPU_MQD_V10);
	table(11, 0, 0, RKFD_AMDGPU_F2G_GFX_V11, RKFD_AMDGPU_MQD_V11);
	table(11, 5, 0, RKFD_AMDGPU_F2G_GFX_V11, RKFD_AMDGPU_MQD_V11);
	table(12, 0, 1, RKFD_AMDGPU_F2G_GFX_V12, RKFD_AMDGPU_MQD_V12);
	table(12, 1, 0, RKFD_AMDGPU_F2G_GFX_V12_1, RKFD_AMDGPU_MQD_V12);
	table(8, 0, 3, RKFD_AMDGPU_F2G_NONE, RKFD_AMDGPU_MQD_NONE);
	table(9, 4, 5, RKFD_AMDGPU_F2G_NONE, RKFD_AMDGPU_MQD_NONE);
	table(11, 0, 5, RKFD_AMDGPU_F2G_NONE, RKFD_AMDGPU_MQD_NONE);
	for (i = 0; i < sizeof(attached_gc) / sizeof(attached_gc[0]); i++) {
		const u32 *gc = attached_gc[i];

		all &= rkfd_amdgpu_target_version(gc[0], gc[1], gc[2]) != 0 &&
		       rkfd_amdgpu_f2g_of(gc[0], gc[1], gc[2]) != RKFD_AMDGPU_F2G_NONE;
	}
	CHECK("every GC version the bridge attaches has a kfd2kgd table", all);

	/* The doorbell page at byte 0x2000 of the BAR: dword 2048 on. */
	CHECK("kernel doorbell 0 of the page at 0x2000 is BAR dword 2048",
	      rkfd_amdgpu_kernel_doorbell(0x2000, 0, &idx) && idx == 2048);
	CHECK("kernel doorbell dword 1022 is the page's last 64-bit one",
	      rkfd_amdgpu_kernel_doorbell(0x2000, 1022, &idx) && idx == 2048 + 1022);
	idx = 7;
	CHECK("an odd dword (not a 64-bit doorbell) is refused",
	      !rkfd_amdgpu_kernel_doorbell(0x2000, 1, &idx) && idx == 7);
	CHECK("a dword past the page is refused",
	      !rkfd_amdgpu_kernel_doorbell(0x2000, 1024, &idx) && idx == 7);
	CHECK("a BAR index past 32 bits is refused",
	      !rkfd_amdgpu_kernel_doorbell(1ull << 34, 0, &idx) && idx == 7);

	/* The HIQ MQD's control: the page dword becomes the BAR index. */
	CHECK("doorbell control: offset 0 -> 2048, other bits kept",
	      rkfd_amdgpu_doorbell_control(en | 3, 0, 2048, &ctl) &&
	      ctl == (en | 3 | 2048 << 2));
	CHECK("doorbell control: offset 2 -> 2048, the old offset gone",
	      rkfd_amdgpu_doorbell_control(en | 2 << 2, 2, 2048, &ctl) &&
	      ctl == (en | 2048 << 2));
	CHECK("doorbell control: offset 2 -> 0x3ffffff (the field's largest)",
	      rkfd_amdgpu_doorbell_control(en | 2 << 2, 2, 0x3ffffff, &ctl) &&
	      ctl == (en | 0x3ffffffu << 2));
	ctl = 5;
	CHECK("doorbell control naming another dword than hiq_mqd_load's is refused",
	      !rkfd_amdgpu_doorbell_control(en | 4 << 2, 2, 2048, &ctl) && ctl == 5);
	CHECK("a BAR index wider than the field is refused",
	      !rkfd_amdgpu_doorbell_control(en, 0, 0x4000000, &ctl) && ctl == 5);
}

/*
 * The user-queue path: a process's doorbell slice, VMIDs, the write
 * pointer's shift and the VMID's SH_MEM registers.
 */
static void queue_path(void)
{
	u32 idx = 0, cfg = 0;

	/* A slice at byte 0x4000 of the BAR: BAR dword 4096 on, 2048 dwords. */
	CHECK("the slice at 0x4000 starts at BAR dword 4096 (doorbell_index_on_bar of doorbell 0)",
	      rkfd_amdgpu_process_doorbell_index(0x4000, &idx) && idx == 4096);
	idx = 7;
	CHECK("a slice whose doorbells pass the 26-bit doorbell field is refused",
	      !rkfd_amdgpu_process_doorbell_index(0x10000000ull - 0x1000, &idx) && idx == 7);
	CHECK("the field's last whole slice is taken",
	      rkfd_amdgpu_process_doorbell_index(0x10000000ull - 0x2000, &idx) &&
	      idx == 0x4000000 - 2048);
	/* rkfd's MQDs and MES requests carry BAR indexes: the slice's own only. */
	CHECK("BAR dword 4096 (doorbell 0) is the slice's",
	      rkfd_amdgpu_process_doorbell_ok(0x4000, 4096));
	CHECK("BAR dword 4096 + 2046 (doorbell 1023) is the slice's last one",
	      rkfd_amdgpu_process_doorbell_ok(0x4000, 4096 + 2046));
	CHECK("one past the 8 KiB slice (the next process's) is refused",
	      !rkfd_amdgpu_process_doorbell_ok(0x4000, 4096 + 2048));
	CHECK("below the slice (the previous process's, the kernel page) is refused",
	      !rkfd_amdgpu_process_doorbell_ok(0x4000, 4094));
	CHECK("a slice-relative index (doorbell 3 as dword 6) is refused",
	      !rkfd_amdgpu_process_doorbell_ok(0x4000, 6));
	CHECK("an odd BAR dword (half a 64-bit doorbell) is refused",
	      !rkfd_amdgpu_process_doorbell_ok(0x4000, 4096 + 3));
	CHECK("kernel doorbells stay within one page, process ones within 8 KiB",
	      !rkfd_amdgpu_kernel_doorbell(0x4000, 1024, &idx) &&
	      rkfd_amdgpu_process_doorbell_ok(0x4000, 4096 + 1024));

	/* The BAR index a doorbell word (compute or SDMA: bits 27:2) names. */
	CHECK("the BAR index a doorbell word names",
	      rkfd_amdgpu_doorbell_dword(1u << 30 | 4102u << 2 | 3) == 4102);

	/* amdgpu's KFD VMIDs on gfx9+: 8-15 (compute_vmid_bitmap 0xff00). */
	CHECK("the first KFD VMID is 8", rkfd_amdgpu_vmid_alloc(0xff00, 0) == 8);
	CHECK("the lowest free KFD VMID is taken",
	      rkfd_amdgpu_vmid_alloc(0xff00, 1u << 8 | 1u << 9 | 1u << 11) == 10);
	CHECK("no VMID when all KFD VMIDs are used", rkfd_amdgpu_vmid_alloc(0xff00, 0xff00) == -1);
	CHECK("VMIDs outside the KFD's bitmap are never taken",
	      rkfd_amdgpu_vmid_alloc(0xff00, 0x7f00) == 15 &&
	      rkfd_amdgpu_vmid_alloc(0x0000, 0) == -1 &&
	      rkfd_amdgpu_vmid_alloc(0x10000, 0) == -1);

	CHECK("SDMA RB_CNTL gets VMID 9 in bits 27:24, other bits kept",
	      rkfd_amdgpu_sdma_rb_cntl(0x00001017, 9) == 0x09001017);
	CHECK("SDMA RB_CNTL's old VMID is replaced",
	      rkfd_amdgpu_sdma_rb_cntl(0x0f000001, 8) == 0x08000001);
	CHECK("HQD pipe 1 queue 2 of 4 pipes x 8 queues is bit 10",
	      rkfd_amdgpu_hqd_bit(1, 2, 4, 8, &idx) && idx == 10);
	CHECK("HQD pipe 3 queue 7 is bit 31, the first MEC's last",
	      rkfd_amdgpu_hqd_bit(3, 7, 4, 8, &idx) && idx == 31);
	idx = 7;
	CHECK("an HQD slot past the MEC's pipes or queues is none",
	      !rkfd_amdgpu_hqd_bit(4, 0, 4, 8, &idx) && !rkfd_amdgpu_hqd_bit(0, 8, 4, 8, &idx) &&
	      !rkfd_amdgpu_hqd_bit(0, 0, 0, 0, &idx) && idx == 7);
	CHECK("an HQD bit past AMDGPU_MAX_QUEUES is none",
	      !rkfd_amdgpu_hqd_bit(16, 0, 32, 8, &idx) && rkfd_amdgpu_hqd_bit(15, 7, 32, 8, &idx) &&
	      idx == 127);
	{
		/* amdgpu on a gfx90a: queue 0 of pipes 0 and 1 are its compute rings. */
		const u32 kfd[4] = { 0xfffffefe, 0, 0, 0 };
		const u32 all[4] = { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff };
		const u32 none[4] = { 0, 0, 0, 0 };
		u32 r[4] = { 1, 1, 1, 1 };

		rkfd_amdgpu_reserved_hqds(kfd, 32, r);
		CHECK("reserved HQDs: amdgpu's two rings of 4 x 8 slots",
		      r[0] == 0x101 && !r[1] && !r[2] && !r[3]);
		rkfd_amdgpu_reserved_hqds(kfd, 12, r);
		CHECK("reserved HQDs: only the first MEC's slots count",
		      r[0] == 0x101 && !r[1]);
		rkfd_amdgpu_reserved_hqds(all, 128, r);
		CHECK("reserved HQDs: none when the KFD has every slot",
		      !r[0] && !r[1] && !r[2] && !r[3]);
		rkfd_amdgpu_reserved_hqds(none, 40, r);
		CHECK("reserved HQDs: 40 slots, none the KFD's, are 32 + 8 reserved",
		      r[0] == 0xffffffff && r[1] == 0xff && !r[2] && !r[3]);
	}
	CHECK("SDMA engine 4 queue 7 of a 5-engine gfx90a is a slot",
	      rkfd_amdgpu_sdma_slot_ok(4, 7, 5));
	CHECK("SDMA engine 5 of 5, or RLC queue 8, is none",
	      !rkfd_amdgpu_sdma_slot_ok(5, 0, 5) && !rkfd_amdgpu_sdma_slot_ok(0, 8, 5) &&
	      !rkfd_amdgpu_sdma_slot_ok(0, 0, 0));
	CHECK("an AQL MQD (aql_control CONTROL0) has write-pointer shift 4",
	      rkfd_amdgpu_wptr_shift(1) == 4);
	CHECK("a PM4 MQD has write-pointer shift 0", rkfd_amdgpu_wptr_shift(0) == 0);

	/* update_qpd_v9 / _v11 with gc_9_0 / gc_11_0_0_sh_mask.h's shifts. */
	CHECK("gfx9 SH_MEM_CONFIG: unaligned (3 << 3) | RETRY_DISABLE (1 << 12)",
	      rkfd_amdgpu_sh_mem_config(RKFD_AMDGPU_MQD_V9, &cfg) && cfg == 0x1018);
	CHECK("gfx10/11 SH_MEM_CONFIG: unaligned (3 << 2) | INITIAL_INST_PREFETCH 3 (<< 14)",
	      rkfd_amdgpu_sh_mem_config(RKFD_AMDGPU_MQD_V11, &cfg) && cfg == 0xc00c &&
	      rkfd_amdgpu_sh_mem_config(RKFD_AMDGPU_MQD_V10, &cfg) && cfg == 0xc00c);
	cfg = 5;
	CHECK("no SH_MEM_CONFIG for gfx12 (not covered)",
	      !rkfd_amdgpu_sh_mem_config(RKFD_AMDGPU_MQD_V12, &cfg) && cfg == 5);
	CHECK("SH_MEM_BASES: LDS 1 << 48 shared, scratch 2 << 48 private",
	      RKFD_AMDGPU_SH_MEM_BASES == 0x00010002);
}

/* The ops of @ptes as svm_map_batch classifies them (@rec: pages with a record). */
static void svm_ops(const u64 *ptes, const bool *rec, u64 n, u8 *op)
{
	u64 i;

	for (i = 0; i < n; i++)
		op[i] = rkfd_amdgpu_svm_op_of(ptes[i], rec[i]);
}

/* The runs of @op as "start-end:op" separated by spaces, into @buf. */
static const char *svm_runs(const u8 *op, u64 n, char *buf, size_t len)
{
	u64 i, j;
	size_t at = 0;

	buf[0] = 0;
	for (i = 0; i < n; i = j) {
		j = rkfd_amdgpu_svm_run_end(op, n, i);
		at += snprintf(buf + at, len - at, "%s%llu-%llu:%u", i ? " " : "",
			       (unsigned long long)i, (unsigned long long)j, op[i]);
	}
	return buf;
}

static void svm_path(void)
{
	const u64 V = RKFD_AMDGPU_SVM_VALID, W = RKFD_AMDGPU_SVM_WRITE, M = RKFD_AMDGPU_SVM_VRAM;
	/* sys rw, sys rw, vram rw, vram ro, vram ro, unmapped+recorded, unmapped, sys ro */
	const u64 ptes[8] = { V | W | 0x1000, V | W | 0x2000, V | M | W | 7, V | M | 8, V | M | 9,
			      0, 0, V | 0x3000 };
	const bool rec[8] = { false, true, false, false, true, true, false, false };
	const u64 frames[7] = { 4, 5, 6, 9, 3, 4, 4 };
	u8 op[8], one[1];
	char buf[128];

	/* KGD_SVM_PTE_*: the bits rkfd_amdgpu_kfd.c also checks at build time. */
	CHECK("SVM entry bits: VALID 63, VRAM 62, WRITE 61, frame 52 bits",
	      RKFD_AMDGPU_SVM_VALID == 1ull << 63 && RKFD_AMDGPU_SVM_VRAM == 1ull << 62 &&
	      RKFD_AMDGPU_SVM_WRITE == 1ull << 61 && RKFD_AMDGPU_SVM_FRAME == (1ull << 52) - 1);
	svm_ops(ptes, rec, 8, op);
	CHECK("svm ops: system rw/ro, VRAM rw/ro, clear (recorded), skip",
	      op[0] == RKFD_AMDGPU_SVM_SYS_RW && op[1] == RKFD_AMDGPU_SVM_SYS_RW &&
	      op[2] == RKFD_AMDGPU_SVM_VRAM_RW && op[3] == RKFD_AMDGPU_SVM_VRAM_RO &&
	      op[4] == RKFD_AMDGPU_SVM_VRAM_RO && op[5] == RKFD_AMDGPU_SVM_CLEAR &&
	      op[6] == RKFD_AMDGPU_SVM_SKIP && op[7] == RKFD_AMDGPU_SVM_SYS_RO);
	CHECK("a recorded page mapped again is mapped, not cleared", op[1] == op[0]);
	CHECK("the VRAM bit without VALID maps nothing",
	      rkfd_amdgpu_svm_op_of(M | W | 5, false) == RKFD_AMDGPU_SVM_SKIP &&
	      rkfd_amdgpu_svm_op_of(M | 5, true) == RKFD_AMDGPU_SVM_CLEAR);
	CHECK("only system and VRAM ops map; only VRAM ops are VRAM",
	      rkfd_amdgpu_svm_op_maps(RKFD_AMDGPU_SVM_SYS_RO) &&
	      rkfd_amdgpu_svm_op_maps(RKFD_AMDGPU_SVM_VRAM_RW) &&
	      !rkfd_amdgpu_svm_op_maps(RKFD_AMDGPU_SVM_CLEAR) &&
	      !rkfd_amdgpu_svm_op_maps(RKFD_AMDGPU_SVM_SKIP) &&
	      rkfd_amdgpu_svm_op_vram(RKFD_AMDGPU_SVM_VRAM_RO) &&
	      !rkfd_amdgpu_svm_op_vram(RKFD_AMDGPU_SVM_SYS_RW));
	svm_runs(op, 8, buf, sizeof(buf));
	CHECK("a mixed batch splits into runs by kind (sys rw, vram rw/ro, clear, skip, sys ro)",
	      strcmp(buf, "0-2:2 2-3:4 3-5:3 5-6:5 6-7:0 7-8:1") == 0);
	one[0] = RKFD_AMDGPU_SVM_VRAM_RW;
	CHECK("one page is one run", rkfd_amdgpu_svm_run_end(one, 1, 0) == 1);
	memset(op, RKFD_AMDGPU_SVM_VRAM_RO, sizeof(op));
	CHECK("a batch of one kind is one run", rkfd_amdgpu_svm_run_end(op, 8, 0) == 8 &&
	      rkfd_amdgpu_svm_run_end(op, 8, 5) == 8);

	CHECK("VRAM page 3's PTE address: vram_base_offset + 3 pages",
	      rkfd_amdgpu_svm_vram_addr(0x8000000000ull, 3, 12) == 0x8000003000ull);
	CHECK("VRAM frame 2^40 (4 PiB in): no truncation",
	      rkfd_amdgpu_svm_vram_addr(0, 1ull << 40, 12) == 1ull << 52);

	/* frames 4,5,6 | 9 | 3,4 | 4 */
	CHECK("copy runs: consecutive frames are one run",
	      rkfd_amdgpu_frame_run_end(frames, 7, 0) == 3);
	CHECK("copy runs: a gap ends a run", rkfd_amdgpu_frame_run_end(frames, 7, 3) == 4);
	CHECK("copy runs: a step back ends a run", rkfd_amdgpu_frame_run_end(frames, 7, 4) == 6);
	CHECK("copy runs: a repeated frame ends a run; the last page is a run",
	      rkfd_amdgpu_frame_run_end(frames, 7, 5) == 6 &&
	      rkfd_amdgpu_frame_run_end(frames, 7, 6) == 7);

	CHECK("a 2 MiB block at frame 512, one chunk of 512 pages, of 4096: ok",
	      rkfd_amdgpu_vram_block_ok(512, 512, 9, 4096));
	CHECK("a block at frame 256 (not 2 MiB aligned) is refused",
	      !rkfd_amdgpu_vram_block_ok(256, 512, 9, 4096));
	CHECK("a block whose first chunk is short (not contiguous) is refused",
	      !rkfd_amdgpu_vram_block_ok(512, 511, 9, 4096));
	CHECK("a block past rkfd's device pages is refused",
	      !rkfd_amdgpu_vram_block_ok(3584 + 512, 512, 9, 4096) &&
	      rkfd_amdgpu_vram_block_ok(3584, 512, 9, 4096) &&
	      !rkfd_amdgpu_vram_block_ok(512, 512, 9, 1000));
	CHECK("order 32 or more is refused", !rkfd_amdgpu_vram_block_ok(0, ~0ull, 32, ~0ull));
	CHECK("VRAM frames: inside, at the end, past it, wrapping",
	      rkfd_amdgpu_vram_frames_ok(0, 4096, 4096) &&
	      rkfd_amdgpu_vram_frames_ok(4095, 1, 4096) &&
	      !rkfd_amdgpu_vram_frames_ok(4095, 2, 4096) &&
	      !rkfd_amdgpu_vram_frames_ok(4096, 0, 4096) &&
	      !rkfd_amdgpu_vram_frames_ok(1, ~0ull, 4096));
}

/*
 * Upstream's cache code, copied unchanged from the kernel source by
 * gen-upstream.sh, over stand-ins for what it reads: the GC version
 * (KFD_GC_VERSION), asic_type, adev->gfx.config and adev->gmc.mall_size.
 */
enum { CHIP_KAVERI = 1, CHIP_HAWAII, CHIP_CARRIZO, CHIP_TONGA, CHIP_FIJI, CHIP_POLARIS10,
	CHIP_POLARIS11, CHIP_POLARIS12, CHIP_VEGAM, CHIP_IP_DISCOVERY };
struct amdgpu_device {
	int asic_type;
	u32 gc_ip, sdma_ip;
	u32 rev_id, ras_enabled;
	bool vf;
	struct {
		struct {
			u32 max_cu_per_sh;
			u32 gc_tcp_l1_size, gc_num_tcp_per_wpg, gc_tcp_cache_line_size;
			u32 gc_l1_instruction_cache_size_per_sqc, gc_num_sqc_per_wgp;
			u32 gc_instruction_cache_line_size;
			u32 gc_l1_data_cache_size_per_sqc, gc_scalar_data_cache_line_size;
			u32 gc_gl1c_per_sa, gc_gl1c_size_per_instance;
			u32 gc_gl2c_per_gpu, gc_tcc_cache_line_size;
			u32 gc_tcp_size_per_cu, gc_num_cu_per_sqc, gc_tcc_size;
		} config;
	} gfx;
	struct {
		u64 mall_size;
		bool is_app_apu;
		struct {
			bool connected_to_cpu;
		} xgmi;
	} gmc;
};

struct kfd_dev {
	struct amdgpu_device *adev;
	struct {
		u32 num_sdma_queues_per_engine, num_reserved_sdma_queues_per_engine;
	} device_info;
};

struct kfd_node {
	struct amdgpu_device *adev;
	struct kfd_dev *kfd;
};

#define IP_VERSION(mj, mn, rv) (((mj) << 16) | ((mn) << 8) | (rv))
#define KFD_GC_VERSION(node) ((node)->adev->gc_ip)
#define fallthrough __attribute__((__fallthrough__))
#define pr_warn(...) ((void)0)
#include "upstream-caches.h"

/*
 * Upstream's capability and SDMA-queue code (gen-upstream.sh --caps) over
 * stand-ins: the node's properties, SR-IOV, the SDMA IP version, SVM
 * support (on: upstream then sets SVMAPI, which the bridge leaves to
 * rkfd).  The debugger's helpers only decide debugger bits, which the
 * bridge never sets: kfd_dbg_has_ttmps_always_setup() is false here and
 * the firmware check sets nothing.
 */
struct kfd_topology_device {
	struct {
		u32 capability, capability2;
		u64 debug_prop;
	} node_props;
	struct kfd_node *gpu;
};

#define WARN(cond, ...) ((void)(cond))
#define pr_debug(...) ((void)0)
#define dev_warn(...) ((void)0)
#define BIT(n) (1u << (n))
#define amdgpu_sriov_vf(adev) ((adev)->vf)
#define amdgpu_ip_version(adev, ip, inst) ((adev)->sdma_ip)
#define KFD_IS_SVM_API_SUPPORTED(adev) true
static inline bool kfd_dbg_has_ttmps_always_setup(struct kfd_node *n)
{
	(void)n;
	return false;
}

static void kfd_topology_set_dbg_firmware_support(struct kfd_topology_device *dev)
{
	(void)dev;
}
#include "upstream-caps.h"

/* upstream's KFD_MAX_CACHE_TYPES (kfd_topology.c): its caller's array */
#define UPSTREAM_MAX 6

/*
 * kfd_get_gpu_cache_info() of the GPU @d describes, into @out as upstream's
 * kfd_fill_cache_non_crat_info() calls it (a zeroed array of 6).
 */
static int upstream_caches(const struct rkfd_amdgpu_desc *d, struct kfd_gpu_cache_info *out)
{
	struct kfd_gpu_cache_info buf[UPSTREAM_MAX], *p = buf;
	struct amdgpu_device adev = {
		.asic_type = CHIP_IP_DISCOVERY,
		.gc_ip = IP_VERSION(d->gc_major, d->gc_minor, d->gc_rev),
	};
	struct kfd_dev kfd = { .adev = &adev };
	struct kfd_node node = { .adev = &adev, .kfd = &kfd };
	int n, i;

	adev.gfx.config.max_cu_per_sh = d->max_cu_per_sh;
	adev.gfx.config.gc_tcp_l1_size = d->gc_tcp_l1_size;
	adev.gfx.config.gc_num_tcp_per_wpg = d->gc_num_tcp_per_wpg;
	adev.gfx.config.gc_tcp_cache_line_size = d->gc_tcp_cache_line_size;
	adev.gfx.config.gc_l1_instruction_cache_size_per_sqc =
		d->gc_l1_instruction_cache_size_per_sqc;
	adev.gfx.config.gc_num_sqc_per_wgp = d->gc_num_sqc_per_wgp;
	adev.gfx.config.gc_instruction_cache_line_size = d->gc_instruction_cache_line_size;
	adev.gfx.config.gc_l1_data_cache_size_per_sqc = d->gc_l1_data_cache_size_per_sqc;
	adev.gfx.config.gc_scalar_data_cache_line_size = d->gc_scalar_data_cache_line_size;
	adev.gfx.config.gc_gl1c_per_sa = d->gc_gl1c_per_sa;
	adev.gfx.config.gc_gl1c_size_per_instance = d->gc_gl1c_size_per_instance;
	adev.gfx.config.gc_gl2c_per_gpu = d->gc_gl2c_per_gpu;
	adev.gfx.config.gc_tcc_cache_line_size = d->gc_tcc_cache_line_size;
	adev.gmc.mall_size = d->mall_size;
	memset(buf, 0, sizeof(buf));
	n = kfd_get_gpu_cache_info(&node, &p);
	for (i = 0; i < n && i < UPSTREAM_MAX; i++)
		out[i] = p[i];
	return n;
}

/* kfd_topology.c's cache_type of CRAT flags (fill_in_l1_pcache), with upstream's macros. */
static u32 upstream_type(u32 flags)
{
	u32 t = 0;

	if (flags & CRAT_CACHE_FLAGS_DATA_CACHE)
		t |= HSA_CACHE_TYPE_DATA;
	if (flags & CRAT_CACHE_FLAGS_INST_CACHE)
		t |= HSA_CACHE_TYPE_INSTRUCTION;
	if (flags & CRAT_CACHE_FLAGS_CPU_CACHE)
		t |= HSA_CACHE_TYPE_CPU;
	if (flags & CRAT_CACHE_FLAGS_SIMD_CACHE)
		t |= HSA_CACHE_TYPE_HSACU;
	return t;
}

static bool crat_same(const struct rkfd_amdgpu_crat_cache *a, const struct kfd_gpu_cache_info *b)
{
	return a->cache_size == b->cache_size && a->cache_level == b->cache_level &&
	       a->cache_line_size == b->cache_line_size && a->flags == b->flags &&
	       a->num_cu_shared == b->num_cu_shared;
}

/*
 * @d's caches as the bridge derives them against upstream's code on the
 * same values: the CRAT list entry for entry, then rkfd's caches (the
 * entries that share a CU, with upstream's HSA type).  @expect_n: the
 * number of caches rkfd gets.  Returns the bridge's info for more checks.
 */
static struct rkfd_amdgpu_info same_as_upstream(const char *what, const struct rkfd_amdgpu_desc *d,
						int expect_n)
{
	struct kfd_gpu_cache_info up[UPSTREAM_MAX];
	struct rkfd_amdgpu_crat_cache br[RKFD_AMDGPU_MAX_CACHES];
	struct rkfd_amdgpu_info info;
	int n_up = upstream_caches(d, up), i, k = 0;
	u32 n_br = rkfd_amdgpu_crat_caches(d, br, RKFD_AMDGPU_MAX_CACHES);
	bool same = (int)n_br == n_up, ok;
	char msg[200];

	for (i = 0; same && i < n_up; i++)
		same = crat_same(&br[i], &up[i]);
	snprintf(msg, sizeof(msg),
		 "%s: %u cache levels, each as upstream's kfd_get_gpu_cache_info (%d)",
		 what, n_br, n_up);
	CHECK(msg, same);

	memset(&info, 0, sizeof(info));
	ok = rkfd_amdgpu_derive(d, &info);
	for (i = 0; ok && i < n_up; i++) {
		const struct rkfd_amdgpu_cache *c = &info.caches[k];

		if (!up[i].num_cu_shared)
			continue;	/* upstream lists no cache for it */
		ok = k < (int)info.num_caches && c->level == up[i].cache_level &&
		     c->size_kib == up[i].cache_size && c->line_size == up[i].cache_line_size &&
		     c->type == upstream_type(up[i].flags) && c->cus_shared == up[i].num_cu_shared;
		k++;
	}
	snprintf(msg, sizeof(msg), "%s: rkfd gets %d caches (got %u), upstream's type and CUs",
		 what, expect_n, info.num_caches);
	CHECK(msg, ok && k == (int)info.num_caches && expect_n == k);
	return info;
}

static bool eq(u32 a, u32 b)
{
	return a == b;
}

static void check_caches(void)
{
	struct rkfd_amdgpu_crat_cache br[RKFD_AMDGPU_MAX_CACHES];
	struct rkfd_amdgpu_desc d;
	struct rkfd_amdgpu_info info;
	bool same;
	u32 i, n;

	/* The bridge's constants are upstream's. */
	CHECK("CRAT cache flags as kfd_crat.h",
	      eq(RKFD_AMDGPU_CRAT_CACHE_ENABLED, CRAT_CACHE_FLAGS_ENABLED) &&
	      eq(RKFD_AMDGPU_CRAT_CACHE_DATA, CRAT_CACHE_FLAGS_DATA_CACHE) &&
	      eq(RKFD_AMDGPU_CRAT_CACHE_INST, CRAT_CACHE_FLAGS_INST_CACHE) &&
	      eq(RKFD_AMDGPU_CRAT_CACHE_CPU, CRAT_CACHE_FLAGS_CPU_CACHE) &&
	      eq(RKFD_AMDGPU_CRAT_CACHE_SIMD, CRAT_CACHE_FLAGS_SIMD_CACHE));
	CHECK("HSA cache types as kfd_sysfs.h",
	      eq(RKFD_AMDGPU_HSA_CACHE_DATA, HSA_CACHE_TYPE_DATA) &&
	      eq(RKFD_AMDGPU_HSA_CACHE_INST, HSA_CACHE_TYPE_INSTRUCTION) &&
	      eq(RKFD_AMDGPU_HSA_CACHE_CPU, HSA_CACHE_TYPE_CPU) &&
	      eq(RKFD_AMDGPU_HSA_CACHE_HSACU, HSA_CACHE_TYPE_HSACU));
	for (same = true, i = 0; i < 32; i++)
		same &= rkfd_amdgpu_hsa_cache_type(1u << i) == upstream_type(1u << i);
	CHECK("each CRAT flag bit gives upstream's HSA type", same);

	/* GC 9.4.2: aldebaran_cache_info itself, entry for entry. */
	same = ARRAY_SIZE(rkfd_amdgpu_aldebaran_caches) == ARRAY_SIZE(aldebaran_cache_info);
	for (i = 0; same && i < ARRAY_SIZE(aldebaran_cache_info); i++)
		same = crat_same(&rkfd_amdgpu_aldebaran_caches[i], &aldebaran_cache_info[i]);
	CHECK("the bridge's aldebaran table is kfd_crat.c's aldebaran_cache_info", same);
	info = same_as_upstream("gfx90a (MI210)", &mi210, 4);
	CHECK("gfx90a: L1 16 KiB/CU, I$ 32 KiB/2 CUs, K$ 16 KiB/2 CUs, L2 8 MiB/14 CUs",
	      info.caches[0].level == 1 && info.caches[0].size_kib == 16 &&
	      info.caches[0].type == 9 && info.caches[0].cus_shared == 1 &&
	      info.caches[1].type == 10 && info.caches[1].size_kib == 32 &&
	      info.caches[1].cus_shared == 2 && info.caches[2].type == 9 &&
	      info.caches[3].level == 2 && info.caches[3].size_kib == 8192 &&
	      info.caches[3].line_size == 128 && info.caches[3].cus_shared == 14);

	/* GC 11: from the gfx config, line sizes missing. */
	info = same_as_upstream("gfx1100 (W7900)", &w7900, 6);
	CHECK("gfx1100: L1 32/128, I$ 64/128, K$ 16/64, GL1 256/128, L2 6144/128, L3 98304/64",
	      info.caches[0].size_kib == 32 && info.caches[0].line_size == 128 &&
	      info.caches[0].cus_shared == 1 && info.caches[0].type == 9 &&
	      info.caches[1].size_kib == 64 && info.caches[1].line_size == 128 &&
	      info.caches[1].cus_shared == 2 && info.caches[1].type == 10 &&
	      info.caches[2].size_kib == 16 && info.caches[2].line_size == 64 &&
	      info.caches[2].cus_shared == 2 &&
	      info.caches[3].level == 1 && info.caches[3].size_kib == 256 &&
	      info.caches[3].line_size == 128 && info.caches[3].cus_shared == 8 &&
	      info.caches[4].level == 2 && info.caches[4].size_kib == 6144 &&
	      info.caches[4].cus_shared == 8 &&
	      info.caches[5].level == 3 && info.caches[5].size_kib == 96 * 1024 &&
	      info.caches[5].line_size == 64 && info.caches[5].cus_shared == 8);
	info = same_as_upstream("gfx1103 (780M, GC 11.0.1)", &r780m, 5);
	CHECK("gfx1103: no L3 without a MALL, L2 2048 KiB, GL1 and L2 shared by 6 CUs",
	      info.caches[4].level == 2 && info.caches[4].size_kib == 2048 &&
	      info.caches[3].cus_shared == 6 && info.caches[4].cus_shared == 6);
	d = r780m;
	d.gc_rev = 4;
	same_as_upstream("gfx1103 (GC 11.0.4)", &d, 5);
	d = w7900;
	d.gc_tcp_cache_line_size = 64;
	d.gc_tcc_cache_line_size = 256;
	info = same_as_upstream("gfx1100 with line sizes in its gc_info", &d, 6);
	CHECK("a line size amdgpu reports is kept",
	      info.caches[0].line_size == 64 && info.caches[4].line_size == 256);

	/* A field amdgpu leaves 0 drops that level, as upstream. */
	d = w7900;
	d.gc_gl2c_per_gpu = 0;
	info = same_as_upstream("gfx1100 without gc_gl2c_per_gpu", &d, 5);
	CHECK("no L2 without gc_gl2c_per_gpu", info.caches[4].level == 3);
	d = w7900;
	d.gc_gl1c_size_per_instance = 0;
	same_as_upstream("gfx1100 without gc_gl1c_size_per_instance (no GL1)", &d, 5);
	d = w7900;
	d.gc_l1_instruction_cache_size_per_sqc = 0;
	d.mall_size = 0;
	same_as_upstream("gfx1100 without I$ and MALL", &d, 4);
	d = w7900;
	d.gc_num_tcp_per_wpg = 0;
	info = same_as_upstream("gfx1100 with gc_num_tcp_per_wpg 0 (an L1 shared by no CU)", &d, 5);
	CHECK("the L1 shared by no CU is not given to rkfd", info.caches[0].type == 10);
	d = w7900;
	d.gc_tcp_l1_size = 0;
	d.gc_l1_instruction_cache_size_per_sqc = 0;
	d.gc_l1_data_cache_size_per_sqc = 0;
	d.gc_gl1c_per_sa = 0;
	d.gc_gl2c_per_gpu = 0;
	d.mall_size = 0;
	same_as_upstream("gfx1100 with an empty gfx config", &d, 0);

	/* Bounded by the caller's room, never past it. */
	memset(br, 0x5a, sizeof(br));
	n = rkfd_amdgpu_crat_caches(&w7900, br, 3);
	CHECK("6 gfx-config levels into room for 3: 3 written, nothing past them",
	      n == 3 && br[2].cache_level == 1 && br[3].cache_level == 0x5a5a5a5a);
	memset(br, 0x5a, sizeof(br));
	n = rkfd_amdgpu_crat_caches(&mi210, br, 2);
	CHECK("aldebaran's 4 levels into room for 2: 2 written, nothing past them",
	      n == 2 && br[1].cache_size == 32 && br[2].cache_level == 0x5a5a5a5a);
	d = w7900;
	d.gc_num_tcp_per_wpg = 200;
	memset(&info, 0, sizeof(info));
	CHECK("more than 32 CUs sharing a cache count as 32 (rkfd's limit)",
	      rkfd_amdgpu_derive(&d, &info) && info.caches[0].cus_shared == 32);
	d = mi210;
	d.gc_minor = 4;
	d.gc_rev = 3;
	n = rkfd_amdgpu_crat_caches(&d, br, RKFD_AMDGPU_MAX_CACHES);
	CHECK("a GC version the bridge does not attach (9.4.3): no caches", n == 0);
}

static void check_hive(void)
{
	struct rkfd_amdgpu_desc d = mi210;
	struct rkfd_amdgpu_info info;

	d.use_xgmi_p2p = true;
	memset(&info, 0x5a, sizeof(info));
	CHECK("no XGMI (amdgpu's hive_id 0): node hive_id 0",
	      rkfd_amdgpu_derive(&d, &info) && info.hive_id == 0);
	d.xgmi_hive_id = 0x1a2b3c4d5e6f7081ULL;
	d.use_xgmi_p2p = true;
	memset(&info, 0x5a, sizeof(info));
	CHECK("an XGMI hive with use_xgmi_p2p: amdgpu's hive_id",
	      rkfd_amdgpu_derive(&d, &info) && info.hive_id == 0x1a2b3c4d5e6f7081ULL);
	d.use_xgmi_p2p = false;
	memset(&info, 0x5a, sizeof(info));
	CHECK("an XGMI hive with use_xgmi_p2p=0: 0, as kgd2kfd_device_init",
	      rkfd_amdgpu_derive(&d, &info) && info.hive_id == 0);
	memset(&info, 0x5a, sizeof(info));
	CHECK("gfx1100 (W7900, no XGMI): hive_id 0",
	      rkfd_amdgpu_derive(&w7900, &info) && info.hive_id == 0);
}

/*
 * The HSA_CAP_* bits upstream sets that the bridge leaves out: the
 * debugger's (no trap handler), per-queue reset (none over amdgpu) and
 * SVM (rkfd sets it itself).
 */
#define NOT_BRIDGE (HSA_CAP_TRAP_DEBUG_SUPPORT |				\
		    HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_TRAP_OVERRIDE_SUPPORTED |	\
		    HSA_CAP_TRAP_DEBUG_WAVE_LAUNCH_MODE_SUPPORTED |		\
		    HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED |	\
		    HSA_CAP_TRAP_DEBUG_FIRMWARE_SUPPORTED |			\
		    HSA_CAP_TRAP_DEBUG_PRECISE_ALU_OPERATIONS_SUPPORTED |	\
		    HSA_CAP_WATCH_POINTS_SUPPORTED |				\
		    HSA_CAP_WATCH_POINTS_TOTALBITS_MASK |			\
		    HSA_CAP_PER_QUEUE_RESET_SUPPORTED |				\
		    HSA_CAP_SVMAPI_SUPPORTED)

/* kfd_topology_add_device()'s capability lines on the GPU @d describes. */
static u32 upstream_caps(const struct rkfd_amdgpu_desc *d, u32 *cap2)
{
	struct amdgpu_device adev = {
		.asic_type = CHIP_IP_DISCOVERY,
		.gc_ip = IP_VERSION(d->gc_major, d->gc_minor, d->gc_rev),
		.rev_id = d->rev_id, .ras_enabled = d->ras_enabled, .vf = d->vf,
	};
	struct kfd_dev kfd = { .adev = &adev };
	struct kfd_node node = { .adev = &adev, .kfd = &kfd };
	struct kfd_topology_device dev = { .gpu = &node };

	adev.gmc.is_app_apu = d->is_app_apu;
	adev.gmc.xgmi.connected_to_cpu = d->xgmi_connected_to_cpu;
	upstream_add_device_caps(&dev);
	*cap2 = dev.node_props.capability2;
	return dev.node_props.capability;
}

/* upstream's num_sdma_queues_per_engine topology property for an SDMA IP version */
static u32 upstream_sdma_queues(u32 major, u32 minor, u32 rev)
{
	struct amdgpu_device adev = { .sdma_ip = IP_VERSION(major, minor, rev) };
	struct kfd_dev kfd = { .adev = &adev };

	kfd_device_info_set_sdma_info(&kfd);
	return kfd.device_info.num_sdma_queues_per_engine -
	       kfd.device_info.num_reserved_sdma_queues_per_engine;
}

/* One description: the bridge's bits are upstream's less NOT_BRIDGE, and no more. */
static bool caps_match(const struct rkfd_amdgpu_desc *d)
{
	u32 cap2, up = upstream_caps(d, &cap2), br = rkfd_amdgpu_capability(d);

	/* capability2: upstream's only bit here is the debugger's LDS one. */
	if (br != (up & ~(u32)NOT_BRIDGE) || (br & NOT_BRIDGE) ||
	    (cap2 & ~(u32)HSA_CAP2_TRAP_DEBUG_LDS_OUT_OF_ADDR_RANGE_SUPPORTED)) {
		printf("# GC %u.%u.%u rev %u ras 0x%x app_apu %d cpu_xgmi %d: bridge 0x%08x, upstream 0x%08x (cap2 0x%x)\n",
		       d->gc_major, d->gc_minor, d->gc_rev, d->rev_id, d->ras_enabled,
		       d->is_app_apu, d->xgmi_connected_to_cpu, br, up, cap2);
		return false;
	}
	return true;
}

static void check_caps(void)
{
	static const u32 ras[] = { 0, 1u << AMDGPU_RAS_BLOCK__GFX, 1u << AMDGPU_RAS_BLOCK__UMC,
				   (1u << AMDGPU_RAS_BLOCK__GFX) | (1u << AMDGPU_RAS_BLOCK__UMC),
				   1u << AMDGPU_RAS_BLOCK__SDMA, 0xf, 0xffffffffu };
	static const u32 revs[] = { 0, 1, 0xf, 0x10, 0x3f };
	const struct rkfd_amdgpu_desc *parts[] = { &mi210, &w7900, &r780m };
	struct rkfd_amdgpu_info info;
	struct rkfd_amdgpu_desc d;
	u32 cap2, up, n = 0, bad = 0, i, j, k, f;
	char msg[200];

	CHECK("HSA_CAP_* bits as kfd_sysfs.h defines them",
	      RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_MASK == HSA_CAP_DOORBELL_TYPE_TOTALBITS_MASK &&
	      RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_SHIFT == HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT &&
	      RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_2_0 == HSA_CAP_DOORBELL_TYPE_2_0 &&
	      RKFD_AMDGPU_HSA_CAP_MEM_EDC == HSA_CAP_MEM_EDCSUPPORTED &&
	      RKFD_AMDGPU_HSA_CAP_RASEVENTNOTIFY == HSA_CAP_RASEVENTNOTIFY &&
	      RKFD_AMDGPU_HSA_CAP_ASIC_REVISION_MASK == HSA_CAP_ASIC_REVISION_MASK &&
	      RKFD_AMDGPU_HSA_CAP_ASIC_REVISION_SHIFT == HSA_CAP_ASIC_REVISION_SHIFT &&
	      RKFD_AMDGPU_HSA_CAP_SRAM_EDC == HSA_CAP_SRAM_EDCSUPPORTED &&
	      RKFD_AMDGPU_HSA_CAP_COHERENTHOSTACCESS == HSA_CAP_FLAGS_COHERENTHOSTACCESS);
	CHECK("RAS block numbers as amdgpu_ras.h's enum amdgpu_ras_block",
	      RKFD_AMDGPU_RAS_BLOCK_GFX == AMDGPU_RAS_BLOCK__GFX &&
	      RKFD_AMDGPU_RAS_BLOCK_UMC == AMDGPU_RAS_BLOCK__UMC);

	/* Every part x RAS state x revision x coherence, against upstream's lines. */
	for (i = 0; i < 3; i++)
		for (j = 0; j < ARRAY_SIZE(ras); j++)
			for (k = 0; k < ARRAY_SIZE(revs); k++)
				for (f = 0; f < 4; f++) {
					d = *parts[i];
					d.ras_enabled = ras[j];
					d.rev_id = revs[k];
					d.is_app_apu = f & 1;
					d.xgmi_connected_to_cpu = f & 2;
					n++;
					bad += !caps_match(&d);
				}
	snprintf(msg, sizeof(msg),
		 "capability of gfx90a/gfx1100/gfx1103 in %u RAS/revision/coherence states: upstream's kfd_topology_add_device bits less the debugger, per-queue reset and SVM ones (%u differ)",
		 n, bad);
	CHECK(msg, n == 420 && bad == 0);
	/*
	 * The GC versions around them (RASEVENTNOTIFY's 9.0.1 exception among
	 * them), from 9.0.1: upstream sets no doorbell type below it (WARN).
	 */
	n = bad = 0;
	for (i = 9; i <= 12; i++)
		for (j = 0; j <= 5; j++)
			for (k = 0; k <= 4; k++) {
				if (i == 9 && j == 0 && k == 0)
					continue;
				d = mi210;
				d.gc_major = i;
				d.gc_minor = j;
				d.gc_rev = k;
				n++;
				bad += !caps_match(&d);
			}
	d = mi210;
	d.gc_minor = 0;
	d.gc_rev = 1;
	snprintf(msg, sizeof(msg),
		 "capability of GC 9.0.1-12.5.4 with RAS on matches upstream's the same way (%u of %u differ; no RASEVENTNOTIFY on GC 9.0.1)",
		 bad, n);
	CHECK(msg, bad == 0 && !(rkfd_amdgpu_capability(&d) & HSA_CAP_RASEVENTNOTIFY));
	/* The bits left out are ones upstream does set for these parts. */
	up = upstream_caps(&w7900, &cap2);
	CHECK("upstream sets debugger, per-queue reset and SVM bits on gfx1100; the bridge none",
	      (up & HSA_CAP_TRAP_DEBUG_SUPPORT) && (up & HSA_CAP_PER_QUEUE_RESET_SUPPORTED) &&
	      (up & HSA_CAP_SVMAPI_SUPPORTED) && !(rkfd_amdgpu_capability(&w7900) & NOT_BRIDGE));
	up = upstream_caps(&mi210, &cap2);
	CHECK("upstream sets precise-memory debugging on gfx90a; the bridge not",
	      (up & HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED) &&
	      !(rkfd_amdgpu_capability(&mi210) & HSA_CAP_TRAP_DEBUG_PRECISE_MEMORY_OPERATIONS_SUPPORTED));

	memset(&info, 0, sizeof(info));
	CHECK("gfx90a (MI210, RAS on, rev 1): doorbell type 2.0, SRAM and HBM ECC, RAS events, revision 1",
	      rkfd_amdgpu_derive(&mi210, &info) &&
	      info.capability == ((HSA_CAP_DOORBELL_TYPE_2_0 << HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT) |
				  HSA_CAP_SRAM_EDCSUPPORTED | HSA_CAP_MEM_EDCSUPPORTED |
				  HSA_CAP_RASEVENTNOTIFY | (1u << HSA_CAP_ASIC_REVISION_SHIFT)));
	memset(&info, 0, sizeof(info));
	CHECK("gfx1100 (W7900, no RAS): doorbell type 2.0 alone",
	      rkfd_amdgpu_derive(&w7900, &info) &&
	      info.capability == (HSA_CAP_DOORBELL_TYPE_2_0 << HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT));
	d = mi210;
	d.xgmi_connected_to_cpu = true;
	memset(&info, 0, sizeof(info));
	CHECK("gfx90a connected to the CPU by XGMI: coherent host access",
	      rkfd_amdgpu_derive(&d, &info) &&
	      (info.capability & HSA_CAP_FLAGS_COHERENTHOSTACCESS));
	memset(&info, 0, sizeof(info));
	CHECK("gfx1103 (780M, an APU but no app APU): no coherent host access, as upstream",
	      rkfd_amdgpu_derive(&r780m, &info) &&
	      !(info.capability & HSA_CAP_FLAGS_COHERENTHOSTACCESS) && caps_match(&r780m));

	/* SDMA queues per engine, against kfd_device_info_set_sdma_info(). */
	n = bad = 0;
	for (i = 3; i <= 8; i++)
		for (j = 0; j <= 6; j++)
			for (k = 0; k <= 8; k++) {
				n++;
				if (rkfd_amdgpu_sdma_queues_per_engine(i, j, k) !=
				    upstream_sdma_queues(i, j, k)) {
					printf("# SDMA %u.%u.%u: bridge %u, upstream %u\n", i, j, k,
					       rkfd_amdgpu_sdma_queues_per_engine(i, j, k),
					       upstream_sdma_queues(i, j, k));
					bad++;
				}
			}
	snprintf(msg, sizeof(msg),
		 "SDMA queues per engine of SDMA 3.0.0-8.6.8 as kfd_device_info_set_sdma_info less its reserved ones (%u of %u differ)",
		 bad, n);
	CHECK(msg, bad == 0);
	memset(&info, 0, sizeof(info));
	CHECK("gfx90a (SDMA 4.4.0): 8 SDMA queues per engine; scratch slots 32",
	      rkfd_amdgpu_derive(&mi210, &info) && info.num_sdma_queues_per_engine == 8 &&
	      info.max_slots_scratch_cu == 32);
	memset(&info, 0, sizeof(info));
	CHECK("gfx1100 (SDMA 6.0.0): 6 (8, 2 reserved for paging and gfx)",
	      rkfd_amdgpu_derive(&w7900, &info) && info.num_sdma_queues_per_engine == 6);
	memset(&info, 0, sizeof(info));
	CHECK("gfx1103 (SDMA 6.0.1): 6", rkfd_amdgpu_derive(&r780m, &info) &&
	      info.num_sdma_queues_per_engine == 6);

	/* num_cp_queues: upstream's bitmap_weight of cp_queue_bitmap. */
	{
		static const u32 maps[][4] = {
			{ 0, 0, 0, 0 },
			{ 0xfffffffcu, 0, 0, 0 },	/* amdgpu keeps 2 of MEC 0's 32 */
			{ 0xffffff00u, 0xffffffffu, 0, 0 },	/* and a second MEC */
			{ 0x1, 0x0, 0x0, 0x80000000u },	/* the first and the last slot */
			{ 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu },
		};
		static const u32 want[] = { 0, 30, 56, 2, 128 };

		bad = 0;
		for (i = 0; i < ARRAY_SIZE(maps); i++)
			bad += rkfd_amdgpu_cp_queues(maps[i]) != want[i];
		CHECK("num_cp_queues counts cp_queue_bitmap's bits across all MECs (0, 30, 56, 2, 128)",
		      bad == 0);
	}
}

int main(void)
{
	struct rkfd_amdgpu_desc d;
	struct rkfd_amdgpu_info info;

	attached("gfx90a (MI210, GC 9.4.2)", &mi210, "gfx90a", 90010, 128, 64 * GiB, 1);
	attached("gfx1100 (W7900, GC 11.0.0)", &w7900, "gfx1100", 110000, 96, 48 * GiB, 0);
	attached("gfx1103 (780M APU, GC 11.0.1)", &r780m, "gfx1103", 110003, 12, 0, 1);
	d = r780m;
	d.gc_rev = 4;
	attached("gfx1103 (GC 11.0.4)", &d, "gfx1103", 110003, 12, 0, 1);

	d = mi210;
	d.vf = true;
	not_attached("gfx90a as an SR-IOV VF", &d);
	d = mi210;
	d.gc_rev = 3;
	not_attached("GC 9.4.3 (gfx942, not a target)", &d);
	d = w7900;
	d.gc_rev = 2;
	not_attached("GC 11.0.2 (gfx1102, not a target)", &d);
	d = w7900;
	d.gc_major = 10;
	d.gc_minor = 3;
	not_attached("GC 10.3.0 (gfx1030 on real hardware, not a target)", &d);

	/* XCCs: the popcount of amdgpu's mask, at least one. */
	d = mi210;
	d.xcc_mask = 0;
	memset(&info, 0, sizeof(info));
	CHECK("an empty XCC mask counts as one XCC", rkfd_amdgpu_derive(&d, &info) && info.num_xcc == 1);
	d.xcc_mask = 0xff;
	CHECK("XCC mask 0xff is 8 XCCs", rkfd_amdgpu_derive(&d, &info) && info.num_xcc == 8);
	/* A dGPU without large BAR: private + public, not public. */
	d = mi210;
	d.local_mem_size_private = 64 * GiB - 256 * MiB;
	d.local_mem_size_public = 256 * MiB;
	CHECK("VRAM is private + public; not public when a part is private",
	      rkfd_amdgpu_derive(&d, &info) && info.vram_size == 64 * GiB && !info.vram_is_public);

	check_caches();
	check_hive();
	check_caps();
	hws_path();
	queue_path();
	svm_path();

	printf("bridge-derive: %d passed, %d failed\n", pass, fail);
	return fail != 0;
}
