/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Host stand-in for the kernel's <linux/types.h>, enough for
 * bridge/rkfd_amdgpu.h and bridge/rkfd_amdgpu_desc.h (tests/bridge/).
 */
#ifndef RKFD_HOST_LINUX_TYPES_H
#define RKFD_HOST_LINUX_TYPES_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
#endif
