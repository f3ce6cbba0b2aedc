/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host stand-in for the kernel's <linux/array_size.h>, enough for
 * bridge/rkfd_amdgpu_desc.h (tests/bridge/).
 */
#ifndef RKFD_HOST_LINUX_ARRAY_SIZE_H
#define RKFD_HOST_LINUX_ARRAY_SIZE_H
#define ARRAY_SIZE(arr) (sizeof(arr) / sizeof((arr)[0]))
#endif
