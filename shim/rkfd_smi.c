// SPDX-License-Identifier: GPL-2.0
/*
 * The SMI event file (upstream kfd_smi_events.c: kfd_smi_ev_fops and
 * kfd_smi_event_open's anon_inode_getfd): an anonymous inode "kfd_smi_ev"
 * whose file operations are trampolines into Rust (the struct rkfd_smi_ops
 * src/kabi/smi.rs passes with each file), plus
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
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "rkfd_shim.h"

/* An SMI file's private_data: Rust's client and its operations. */
struct rkfd_smi_file {
	const struct rkfd_smi_ops *ops;
	void *client;
};

static ssize_t rkfd_smi_read(struct file *filp, char __user *buf, size_t size, loff_t *off)
{
	struct rkfd_smi_file *f = filp->private_data;

	return f->ops->read(f->client, buf, size);
}

static ssize_t rkfd_smi_write(struct file *filp, const char __user *buf, size_t size,
			      loff_t *off)
{
	struct rkfd_smi_file *f = filp->private_data;

	/* As upstream: a range beyond user space or shorter than the mask. */
	if (!access_ok(buf, size) || size < sizeof(u64))
		return -EFAULT;
	return f->ops->write(f->client, buf);
}

static __poll_t rkfd_smi_poll(struct file *filp, struct poll_table_struct *wait)
{
	struct rkfd_smi_file *f = filp->private_data;

	return f->ops->poll(f->client, filp, wait) ? EPOLLIN | EPOLLRDNORM : 0;
}

static int rkfd_smi_release(struct inode *inode, struct file *filp)
{
	struct rkfd_smi_file *f = filp->private_data;

	f->ops->release(f->client);
	kfree(f);
	return 0;
}

static const struct file_operations rkfd_smi_fops = {
	.owner = THIS_MODULE,
	.poll = rkfd_smi_poll,
	.read = rkfd_smi_read,
	.write = rkfd_smi_write,
	.release = rkfd_smi_release,
};

int rkfd_shim_smi_getfd(void *client, const struct rkfd_smi_ops *ops)
{
	struct rkfd_smi_file *f;
	int fd;

	if (!ops || !ops->read || !ops->write || !ops->poll || !ops->release)
		return -EINVAL;
	f = kmalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->ops = ops;
	f->client = client;
	/* On success the file owns @f (and @client): freed in release. */
	fd = anon_inode_getfd("kfd_smi_ev", &rkfd_smi_fops, f, O_RDWR);
	if (fd < 0)
		kfree(f);
	return fd;
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
