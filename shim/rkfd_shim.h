/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The contract between rkfd's C shim and its Rust crate.
 *
 * C owns what Rust for Linux 7.3 has no abstraction for (character device +
 * class registration, raw file_operations); Rust owns all driver state.
 * Rust objects are opaque to C (void *).  Functions named rkfd_shim_* are C
 * called from Rust; rkfd_rs_* are Rust called from C.
 */
#ifndef RKFD_SHIM_H
#define RKFD_SHIM_H

#include <linux/types.h>

struct file;
struct vm_area_struct;
struct kobject;

/* C side, called from Rust (src/kabi.rs). */
int rkfd_shim_chrdev_register(void);
void rkfd_shim_chrdev_unregister(void);
int rkfd_shim_chrdev_major(void);
/* The kobject of /sys/devices/virtual/kfd/kfd; NULL while not registered. */
struct kobject *rkfd_shim_kfd_kobject(void);

/* Rust side, called from the file operations of /dev/kfd. */
int rkfd_rs_open(void **private_data);
void rkfd_rs_release(void *private_data);
long rkfd_rs_ioctl(void *private_data, unsigned int cmd, unsigned long arg);
int rkfd_rs_mmap(void *private_data, struct vm_area_struct *vma, unsigned long vm_start,
		 unsigned long vm_end, unsigned long vm_pgoff);

int rkfd_shim_log_level(void);
void rkfd_shim_kfd_dev_info(const char *msg);

/* KUnit only (CONFIG_KUNIT=y): a file standing for a render-node file. */
void *rkfd_shim_kunit_file(void);

/* Device interface (shim/rkfd_kgd.c, include/rkfd/kgd_kfd_interface.h). */
struct kgd_dev;
struct kfd_dev;
struct kfd2kgd_calls;
struct kgd_gpu_info;
struct module;

void *rkfd_shim_fget(int fd);
void rkfd_shim_fput(void *file);
bool rkfd_shim_try_module_get(void *owner);
void rkfd_shim_module_put(void *owner);

struct kfd_dev *rkfd_rs_kgd2kfd_probe(struct kgd_dev *kgd, struct module *owner,
				      const struct kfd2kgd_calls *calls,
				      const struct kgd_gpu_info *info);
int rkfd_rs_kgd2kfd_device_init(struct kfd_dev *kfd);
void rkfd_rs_kgd2kfd_device_exit(struct kfd_dev *kfd);
void rkfd_rs_kgd2kfd_interrupt(struct kfd_dev *kfd, const void *ih_ring_entry);

/* Process address-space lifetime (shim/rkfd_mm.c). */
struct mm_struct;
void *rkfd_shim_mm_notifier_register(struct mm_struct *mm, void *cookie);
void rkfd_shim_mm_notifier_unregister(void *handle, struct mm_struct *mm);
void rkfd_rs_mm_release(void *cookie);
u64 rkfd_shim_user_addr_limit(void);

/* Device cgroup (shim/rkfd_cgroup.c): 0 or -EPERM for the current task. */
int rkfd_shim_devcgroup_check_render(unsigned int render_minor);

/* SMI event files (shim/rkfd_smi.c). */
struct poll_table_struct;
int rkfd_shim_smi_getfd(void *client);
bool rkfd_shim_capable_sys_admin(void);
/* Copies task->comm (TASK_COMM_LEN = 16 bytes, NUL padded) to buf. */
void rkfd_shim_task_comm(void *task, char *buf);
ssize_t rkfd_rs_smi_read(void *client, char __user *buf, size_t size);
ssize_t rkfd_rs_smi_write(void *client, const char __user *buf);
bool rkfd_rs_smi_poll(void *client, struct file *filp, struct poll_table_struct *wait);
void rkfd_rs_smi_release(void *client);

#endif /* RKFD_SHIM_H */
