/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host stand-in for the kernel's <linux/bits.h>, enough for
 * bridge/rkfd_amdgpu.h (tests/bridge/).
 */
#ifndef RKFD_HOST_LINUX_BITS_H
#define RKFD_HOST_LINUX_BITS_H
#define BIT_ULL(nr) (1ULL << (nr))
#endif
