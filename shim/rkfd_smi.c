// SPDX-License-Identifier: GPL-2.0
/*
 * The SMI event file (upstream kfd_smi_events.c: kfd_smi_ev_fops and
 * kfd_smi_event_open's anon_inode_getfd): an anonymous inode "kfd_smi_ev"
 * whose file operations are trampolines into Rust (src/kabi/smi.rs), plus
 * the two facts about the opener Rust has no abstraction for.
 *
 * .owner = THIS_MODULE: each SMI file holds a reference on rkfd (taken by
 * anon_inode_getfile), so rmmod rkfd is refused while one is open and the
 * file operations never run after the module is gone.
 */
#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "rkfd_shim.h"

static ssize_t rkfd_smi_read(struct file *filp, char __user *buf, size_t size, loff_t *off)
{
	return rkfd_rs_smi_read(filp->private_data, buf, size);
}

static ssize_t rkfd_smi_write(struct file *filp, const char __user *buf, size_t size,
			      loff_t *off)
{
	/* As upstream: a range beyond user space or shorter than the mask. */
	if (!access_ok(buf, size) || size < sizeof(u64))
		return -EFAULT;
	return rkfd_rs_smi_write(filp->private_data, buf);
}

static __poll_t rkfd_smi_poll(struct file *filp, struct poll_table_struct *wait)
{
	return rkfd_rs_smi_poll(filp->private_data, filp, wait) ? EPOLLIN | EPOLLRDNORM : 0;
}

static int rkfd_smi_release(struct inode *inode, struct file *filp)
{
	rkfd_rs_smi_release(filp->private_data);
	return 0;
}

static const struct file_operations rkfd_smi_fops = {
	.owner = THIS_MODULE,
	.poll = rkfd_smi_poll,
	.read = rkfd_smi_read,
	.write = rkfd_smi_write,
	.release = rkfd_smi_release,
};

int rkfd_shim_smi_getfd(void *client)
{
	return anon_inode_getfd("kfd_smi_ev", &rkfd_smi_fops, client, O_RDWR);
}

bool rkfd_shim_capable_sys_admin(void)
{
	return capable(CAP_SYS_ADMIN);
}

void rkfd_shim_task_comm(void *t, char *buf)
{
	struct task_struct *task = t;
	char comm[TASK_COMM_LEN];

	get_task_comm(comm, task);
	memcpy(buf, comm, TASK_COMM_LEN);
}
