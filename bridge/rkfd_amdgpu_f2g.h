/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rkfd_amdgpu.ko, amdgpu side only: the per-ASIC kfd2kgd tables that
 * patches/amdgpu 0003 exports (namespace AMDGPU_KFD).  amdgpu declares them
 * nowhere but in amdkfd's kfd_device.c, which picks one per GC version;
 * rkfd_amdgpu_f2g_of() (rkfd_amdgpu_desc.h) makes the same choice.
 * Include after amdgpu's kgd_kfd_interface.h.
 */
#ifndef RKFD_AMDGPU_F2G_H
#define RKFD_AMDGPU_F2G_H

extern const struct kfd2kgd_calls gfx_v9_kfd2kgd;
extern const struct kfd2kgd_calls arcturus_kfd2kgd;
extern const struct kfd2kgd_calls aldebaran_kfd2kgd;
extern const struct kfd2kgd_calls gc_9_4_3_kfd2kgd;
extern const struct kfd2kgd_calls gfx_v10_kfd2kgd;
extern const struct kfd2kgd_calls gfx_v10_3_kfd2kgd;
extern const struct kfd2kgd_calls gfx_v11_kfd2kgd;
extern const struct kfd2kgd_calls gfx_v12_kfd2kgd;
extern const struct kfd2kgd_calls gfx_v12_1_kfd2kgd;

#endif /* RKFD_AMDGPU_F2G_H */
