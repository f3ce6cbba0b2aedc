/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The contract between rkfd's sysfs shim (shim/rkfd_sysfs.c) and its Rust
 * side (src/kabi/sysfs.rs, src/kabi/sysfs/host.rs).
 *
 * A struct rkfd_sysfs_dir is one kobject (one sysfs directory) with a fixed
 * set of read-only (0444) files.  Reading file N calls the Rust formatter
 * show(data, N, page); C never looks at @data.  The directory is removed and
 * released by rkfd_shim_sysfs_dir_destroy(); once that returns, no show call
 * is running or will start, so Rust may free @data.
 *
 * The host queries at the end give the topology the facts upstream reads
 * while building its virtual CRAT for the CPU (kfd_crat.c).
 */
#ifndef RKFD_SYSFS_H
#define RKFD_SYSFS_H

#include <linux/types.h>

struct kobject;
struct rkfd_sysfs_dir;

/* Formats file @file of a directory into @buf (PAGE_SIZE bytes, zeroed). */
typedef ssize_t (*rkfd_sysfs_show_t)(const void *data, unsigned int file, char *buf);

struct kobject *rkfd_shim_sysfs_dir_kobj(struct rkfd_sysfs_dir *dir);
int rkfd_shim_sysfs_dir_create(struct kobject *parent, const char *name,
			       const char *const *files, unsigned int nr_files,
			       const void *data, rkfd_sysfs_show_t show,
			       struct rkfd_sysfs_dir **out);
void rkfd_shim_sysfs_dir_destroy(struct rkfd_sysfs_dir *dir);

#if IS_BUILTIN(CONFIG_KUNIT)
/* KUnit only: /sys/kernel, and a whole-file read through the VFS. */
struct kobject *rkfd_shim_sysfs_kunit_parent(void);
ssize_t rkfd_shim_sysfs_kunit_read(const char *path, char *buf, size_t len);
#endif

/* Host facts for the topology's CPU nodes. */
int rkfd_shim_host_next_node(int nid);
int rkfd_shim_host_node_cpus(int nid, u32 *cores, u32 *apic_id_base);
u64 rkfd_shim_host_node_mem_bytes(int nid);
u32 rkfd_shim_host_node_distance(int from, int to);
u32 rkfd_shim_host_cpu_link_type(void);
void rkfd_shim_host_dmi_memory(u32 *width, u32 *mem_clk_max);
u32 rkfd_shim_host_cpu_max_khz(void);
void rkfd_shim_host_platform(u64 *oem, u64 *id, u64 *rev);

#endif /* RKFD_SYSFS_H */
