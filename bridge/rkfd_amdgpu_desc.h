/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rkfd_amdgpu.ko: the pure part of the bridge's probe.  rkfd_amdgpu_kgd.c
 * reads plain values out of struct amdgpu_device into a struct
 * rkfd_amdgpu_desc; rkfd_amdgpu_derive() turns them into the topology
 * values rkfd gets at kgd2kfd_probe (struct rkfd_amdgpu_info), as upstream
 * amdkfd derives them (kgd2kfd_probe and kfd_topology_add_device).
 *
 * No kernel or amdgpu header beyond rkfd_amdgpu.h (<linux/types.h>): the
 * host test tests/bridge/ compiles this file with gcc and checks the
 * values for gfx90a, gfx1100 and gfx1103 descriptions.
 */
#ifndef RKFD_AMDGPU_DESC_H
#define RKFD_AMDGPU_DESC_H

#include "rkfd_amdgpu.h"

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
};

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

static inline u32 rkfd_amdgpu_popcount(u32 v)
{
	u32 n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
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
	return true;
}

#endif /* RKFD_AMDGPU_DESC_H */
