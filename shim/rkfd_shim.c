// SPDX-License-Identifier: GPL-2.0
/*
 * rkfd C shim: /dev/kfd as a character device of class "kfd", so that the
 * device lives at /sys/devices/virtual/kfd/kfd exactly as upstream amdkfd's
 * (kfd_chardev.c); ROCm's libhsakmt hard-codes that path for its topology.
 * A misc device would appear under /sys/devices/virtual/misc instead.
 *
 * The file operations are thin trampolines into Rust (struct
 * rkfd_chrdev_ops, given at registration).
 */
#include <linux/compat.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/kdev_t.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pseudo_fs.h>

#include "rkfd_shim.h"

static const char rkfd_dev_name[] = "kfd";
static int rkfd_major = -1;
static struct device *rkfd_device;

/* Set before the device exists, cleared after it is gone. */
static const struct rkfd_chrdev_ops *rkfd_ops;

static const struct class rkfd_class = {
	.name = rkfd_dev_name,
};

/*
 * One address_space for every open of /dev/kfd, as upstream's kfd_fs /
 * kfd_anon_inode (kfd_chardev.c): each open file's f_mapping is this
 * module-owned anonymous inode's, so the mmap offsets (type | gpu_id)
 * name the same range whichever device node or open the mapping came
 * from, and rkfd_shim_unmap_mapping_range() zaps every process's mappings
 * of a range (kgd2kfd_clear_mappings, before a GPU reset).
 */
static struct vfsmount *rkfd_fs_mnt;
static int rkfd_fs_cnt;
static struct inode *rkfd_anon_inode;

static int rkfd_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, 0x4b464400 /* "KFD", upstream's magic */) ? 0 : -ENOMEM;
}

static struct file_system_type rkfd_fs_type = {
	.name = "kfd",
	.init_fs_context = rkfd_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

/* Upstream kfd_fs_inode_new. */
static struct inode *rkfd_fs_inode_new(void)
{
	struct inode *inode;
	int r;

	r = simple_pin_fs(&rkfd_fs_type, &rkfd_fs_mnt, &rkfd_fs_cnt);
	if (r < 0)
		return ERR_PTR(r);
	inode = alloc_anon_inode(rkfd_fs_mnt->mnt_sb);
	if (IS_ERR(inode))
		simple_release_fs(&rkfd_fs_mnt, &rkfd_fs_cnt);
	return inode;
}

/* Upstream kfd_fs_inode_free. */
static void rkfd_fs_inode_free(struct inode *inode)
{
	if (inode) {
		iput(inode);
		simple_release_fs(&rkfd_fs_mnt, &rkfd_fs_cnt);
	}
}

/*
 * Upstream kfd_dev_unmap_mapping_range: removes the PTEs of every user
 * mapping of /dev/kfd whose offset lies in [@start, @start + @len) (byte
 * offsets as user space passes them to mmap), private COW copies included.
 * The VMAs stay: a later access finds no PTE and, as the mappings have no
 * fault handler, gets SIGBUS.  Process context; takes the mapping's
 * i_mmap_rwsem and the page-table locks.
 */
void rkfd_shim_unmap_mapping_range(u64 start, u64 len)
{
	struct inode *inode = READ_ONCE(rkfd_anon_inode);

	if (inode && len)
		unmap_mapping_range(inode->i_mapping, (loff_t)start, (loff_t)len, 1);
}

static int rkfd_fop_open(struct inode *inode, struct file *filp)
{
	if (iminor(inode) != 0)
		return -ENODEV;
	filp->f_mapping = rkfd_anon_inode->i_mapping;
	/* As upstream: 32-bit processes are not supported. */
	if (in_compat_syscall()) {
		dev_warn(rkfd_device, "Process %d (32-bit) failed to open /dev/kfd\n",
			 current->pid);
		return -EPERM;
	}
	return rkfd_ops->open(&filp->private_data);
}

static int rkfd_fop_release(struct inode *inode, struct file *filp)
{
	if (filp->private_data)
		rkfd_ops->release(filp->private_data);
	filp->private_data = NULL;
	return 0;
}

static long rkfd_fop_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	return rkfd_ops->ioctl(filp->private_data, cmd, arg);
}

static int rkfd_fop_mmap(struct file *filp, struct vm_area_struct *vma)
{
	return rkfd_ops->mmap(filp->private_data, vma, vma->vm_start, vma->vm_end, vma->vm_pgoff);
}

static const struct file_operations rkfd_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = rkfd_fop_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.open = rkfd_fop_open,
	.release = rkfd_fop_release,
	.mmap = rkfd_fop_mmap,
};

int rkfd_shim_chrdev_register(const struct rkfd_chrdev_ops *ops)
{
	int err;

	if (!ops || !ops->open || !ops->release || !ops->ioctl || !ops->mmap)
		return -EINVAL;
	rkfd_anon_inode = rkfd_fs_inode_new();
	if (IS_ERR(rkfd_anon_inode)) {
		err = PTR_ERR(rkfd_anon_inode);
		rkfd_anon_inode = NULL;
		return err;
	}
	rkfd_ops = ops;
	rkfd_major = register_chrdev(0, rkfd_dev_name, &rkfd_fops);
	if (rkfd_major < 0) {
		err = rkfd_major;
		goto err_chrdev;
	}

	err = class_register(&rkfd_class);
	if (err)
		goto err_class;

	rkfd_device = device_create(&rkfd_class, NULL, MKDEV(rkfd_major, 0), NULL,
				    rkfd_dev_name);
	if (IS_ERR(rkfd_device)) {
		err = PTR_ERR(rkfd_device);
		rkfd_device = NULL;
		goto err_device;
	}
	return 0;

err_device:
	class_unregister(&rkfd_class);
err_class:
	unregister_chrdev(rkfd_major, rkfd_dev_name);
err_chrdev:
	rkfd_major = -1;
	rkfd_ops = NULL;
	rkfd_fs_inode_free(rkfd_anon_inode);
	rkfd_anon_inode = NULL;
	return err;
}

void rkfd_shim_chrdev_unregister(void)
{
	if (rkfd_major < 0)
		return;
	device_destroy(&rkfd_class, MKDEV(rkfd_major, 0));
	class_unregister(&rkfd_class);
	unregister_chrdev(rkfd_major, rkfd_dev_name);
	rkfd_device = NULL;
	rkfd_major = -1;
	rkfd_ops = NULL;
	rkfd_fs_inode_free(rkfd_anon_inode);
	rkfd_anon_inode = NULL;
}

int rkfd_shim_chrdev_major(void)
{
	return rkfd_major;
}

struct kobject *rkfd_shim_kfd_kobject(void)
{
	return rkfd_device ? &rkfd_device->kobj : NULL;
}

/*
 * rkfd extension: how much rkfd itself prints (0 off, 1 errors, 2 warnings,
 * 3 info).  Writable at run time; a C parameter because Rust module
 * parameters are read-only in 7.3.
 */
static int log_level = 3;
module_param(log_level, int, 0644);
MODULE_PARM_DESC(log_level, "rkfd's own dmesg output: 0 off, 1 errors, 2 warnings, 3 info (default)");

int rkfd_shim_log_level(void)
{
	return READ_ONCE(log_level);
}

/*
 * Upstream amdkfd's sched_policy (kfd_module.c): 0 HWS, 1 HWS without
 * over-subscription, 2 no HWS; 0 by default, as upstream
 * (KFD_SCHED_POLICY_HWS).  Read-only; rkfd refuses to load with any other
 * value (src/rkfd_main.rs).
 */
static int sched_policy;	/* 0: KFD_SCHED_POLICY_HWS */
module_param(sched_policy, int, 0444);
MODULE_PARM_DESC(sched_policy,
	"Scheduling policy (0 = HWS (Default), 1 = HWS without over-subscription, 2 = Non-HWS (Used for debugging only))");

int rkfd_shim_sched_policy(void)
{
	return READ_ONCE(sched_policy);
}

/*
 * Upstream amdgpu's hws_max_conc_proc (amdgpu_drv.c): the processes the
 * HWS maps at once (max_proc_per_quantum), bounded by the KFD VMIDs; -1
 * (default) is all of them.
 */
static int hws_max_conc_proc = -1;
module_param(hws_max_conc_proc, int, 0444);
MODULE_PARM_DESC(hws_max_conc_proc,
	"Max # processes HWS can execute concurrently when sched_policy=0 (0 = no concurrency, #VMIDs for KFD = Maximum(default))");

int rkfd_shim_hws_max_conc_proc(void)
{
	return READ_ONCE(hws_max_conc_proc);
}

/*
 * Upstream amdgpu's queue_preemption_timeout_ms (amdgpu_drv.c): how long
 * the driver waits for the HWS to answer a preemption (its fence) before
 * it declares the scheduler hung and resets it; writable, as upstream's.
 * -1 (default) is upstream's 9000 (rust/amdgpu-hw pm4), as is a value
 * below 1.
 */
static int queue_preemption_timeout_ms = -1;
module_param(queue_preemption_timeout_ms, int, 0644);
MODULE_PARM_DESC(queue_preemption_timeout_ms,
	"queue preemption timeout in ms (1 = Minimum, -1 = upstream's default 9000)");

int rkfd_shim_queue_preemption_timeout_ms(void)
{
	return READ_ONCE(queue_preemption_timeout_ms);
}

void rkfd_shim_kfd_dev_info(const char *msg)
{
	if (rkfd_device)
		dev_info(rkfd_device, "%s\n", msg);
}
