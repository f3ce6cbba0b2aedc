// SPDX-License-Identifier: GPL-2.0
/*
 * Device-cgroup check of a GPU's render node (upstream
 * kfd_devcgroup_check_permission() in kfd_priv.h).  A C function because the
 * DEVCG_* access and type flags are macros and devcgroup_check_permission()
 * is an inline stub when neither CONFIG_CGROUP_DEVICE nor CONFIG_CGROUP_BPF
 * is set.
 */
#include <linux/device_cgroup.h>

#include "rkfd_shim.h"

/* As include/drm/drm_ioctl.h (not included: rkfd has no DRM device). */
#define RKFD_DRM_MAJOR 226

int rkfd_shim_devcgroup_check_render(unsigned int render_minor)
{
#if defined(CONFIG_CGROUP_DEVICE) || defined(CONFIG_CGROUP_BPF)
	return devcgroup_check_permission(DEVCG_DEV_CHAR, RKFD_DRM_MAJOR, render_minor,
					  DEVCG_ACC_WRITE | DEVCG_ACC_READ);
#else
	return 0;
#endif
}
