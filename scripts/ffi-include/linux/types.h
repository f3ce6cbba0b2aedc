/* SPDX-License-Identifier: GPL-2.0 */
/*
 * <linux/types.h> as scripts/gen-kgd-rs shows it to bindgen when it
 * generates the Rust declarations of the C shims' headers (shim/rkfd_*.h,
 * vgpu/vgpu_shim.h, vgpu/engine_shim.h): the kernel's own definitions,
 * for x86_64 (LP64), of the few names those headers use, and nothing
 * else.  Reading the kernel's headers instead would pull half the kernel
 * into the generated files.
 *
 * u8..u64 and s8..s64 are macros, not typedefs, so bindgen sees the C types
 * and the generated code uses kernel::ffi's (u32, u64, ...) instead of
 * aliases of its own.
 */
#ifndef RKFD_FFI_LINUX_TYPES_H
#define RKFD_FFI_LINUX_TYPES_H

#define u8 unsigned char
#define u16 unsigned short
#define u32 unsigned int
#define u64 unsigned long long
#define s8 signed char
#define s16 short
#define s32 int
#define s64 long long
#define __u32 u32
#define __u64 u64
typedef unsigned long size_t;	/* bindgen maps size_t to usize */
typedef long ssize_t;

#define bool _Bool
#define true 1
#define false 0

/* Sparse annotations. */
#define __user

/* Generate the KUnit-only declarations too; Rust uses them under cfg. */
#define IS_BUILTIN(option) 1

#endif /* RKFD_FFI_LINUX_TYPES_H */
