// SPDX-License-Identifier: GPL-2.0
/*
 * Virtual amdgpu: KFD eviction fences (upstream amdgpu_amdkfd_fence.c)
 * and the debugfs knobs that play amdgpu's part in evictions.
 *
 * Each VM rkfd acquires gets a struct vgpu_evict_fence: the fence context
 * (amdgpu: process_info->eviction_fence's context), the process's mm and
 * rkfd's context id, and the current eviction fence, a real dma_fence whose
 * ->enable_signaling calls kgd2kfd_schedule_evict_and_restore_process() as
 * amdgpu's amdkfd_fence_enable_signaling() does.  restore_process_bos
 * (amdgpu_amdkfd_gpuvm_restore_process_bos) replaces it with a new fence of
 * the same context once it is signalled.  The virtual GPU has no TTM that moves memory, so
 * debugfs stands in for it, in /sys/kernel/debug/amdgpu_vgpu/:
 *
 *   evict         write a pid: enable signalling of the eviction fences of
 *                 that process's VMs (what a TTM eviction of a KFD BO does:
 *                 dma_fence_enable_signaling() through the BO's
 *                 reservation object); -ESRCH if it has none
 *   quiesce       write a pid: kgd2kfd_quiesce_mm(mm, USERPTR), as amdgpu's
 *                 userptr invalidation does (amdgpu_amdkfd_evict_userptr)
 *   resume        write a pid: kgd2kfd_resume_mm(mm)
 *   restore_rescheduled
 *                 write a pid: kgd2kfd_queue_restore_rescheduled(mm), as
 *                 amdgpu's userptr restore worker when it must try again
 *   userptr_fault write "pid va" (va in hex with 0x, or decimal):
 *                 kgd2kfd_signal_userptr_fault(pid, va), as amdgpu's
 *                 userptr restore worker with debug_vm_userptr when the
 *                 process unmapped a userptr BO's memory before freeing it
 *                 (amdgpu_amdkfd_signal_userptr_fault); -ESRCH if that pid
 *                 has no acquired VM here (amdgpu calls it only for a
 *                 process with KFD memory), -EINVAL for anything else
 *   vmfault_fast_path
 *                 while non-zero (default 0), a fatal VM fault the virtual
 *                 GPU raises after a retry fault rkfd could not resolve
 *                 (VGPU_ACCESS) first asks kgd2kfd_vmfault_fast_path, as
 *                 amdgpu's gmc v9 handler does for its soft ring, and is
 *                 dropped when rkfd says so (off by default: the tests
 *                 that count such faults expect every one)
 *   restore_fail  the next N restore_process_bos calls fail with -EBUSY
 *                 (amdgpu's validation failing, so rkfd backs off)
 *   evict_fences  one line per acquired VM: "pid P context_id 0xC seqno S
 *                 signaled 0|1 restores R unsignaled U" (U: restores that
 *                 found the fence unsignalled, so kept it, as amdgpu does)
 *
 * Lock order: vgpu_evict_lock (a mutex) is taken by acquire_vm,
 * release_vm, restore_process_bos (under rkfd's Process::inner) and by the
 * debugfs files, which call into rkfd (kgd2kfd_*) only after dropping it,
 * holding only fence and mm references.  The fence lock is a leaf here;
 * rkfd takes its own leaf spinlock inside it (enable_signaling).
 */
#include <linux/debugfs.h>
#include <linux/dma-fence.h>
#include <linux/kstrtox.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/threads.h>
#include <linux/uaccess.h>
#include <uapi/linux/kfd_ioctl.h>

#include <rkfd/kgd_kfd_interface.h>

#include "vgpu_shim.h"

/* One eviction fence (upstream struct amdgpu_amdkfd_fence). */
struct vgpu_kfd_fence {
	struct dma_fence base;
	spinlock_t lock;		/* the fence lock (dma_fence_init) */
	struct mm_struct *mm;		/* mmgrab'ed */
	u16 context_id;
	char timeline_name[TASK_COMM_LEN];
};

/* What one acquired VM keeps. */
struct vgpu_evict_fence {
	struct list_head link;		/* in vgpu_evict_list, under vgpu_evict_lock */
	pid_t tgid;
	struct mm_struct *mm;		/* mmgrab'ed */
	u16 context_id;
	u64 context;			/* dma_fence_context_alloc() */
	struct dma_fence *ef;		/* current fence, under vgpu_evict_lock */
	u64 restores;
	u64 unsignaled;			/* restores that found the fence unsignalled */
};

static DEFINE_MUTEX(vgpu_evict_lock);
static LIST_HEAD(vgpu_evict_list);
static atomic_t vgpu_fence_seq = ATOMIC_INIT(0);
static u32 vgpu_restore_fail;
static u32 vgpu_vmfault_fast_path;

bool vgpu_shim_vmfault_fast_path_on(void)
{
	return READ_ONCE(vgpu_vmfault_fast_path) != 0;
}
static struct dentry *vgpu_evict_dir;

static const struct dma_fence_ops vgpu_kfd_fence_ops;

static struct vgpu_kfd_fence *to_vgpu_kfd_fence(struct dma_fence *f)
{
	if (!f || rcu_access_pointer(f->ops) != &vgpu_kfd_fence_ops)
		return NULL;
	return container_of(f, struct vgpu_kfd_fence, base);
}

static const char *vgpu_kfd_fence_driver_name(struct dma_fence *f)
{
	return "amdgpu_vgpu_kfd_fence";
}

static const char *vgpu_kfd_fence_timeline_name(struct dma_fence *f)
{
	struct vgpu_kfd_fence *fence = to_vgpu_kfd_fence(f);

	return fence ? fence->timeline_name : "";
}

/* upstream amdkfd_fence_enable_signaling; under the fence lock */
static bool vgpu_kfd_fence_enable_signaling(struct dma_fence *f)
{
	struct vgpu_kfd_fence *fence = to_vgpu_kfd_fence(f);

	if (!fence)
		return false;
	if (dma_fence_is_signaled(f))
		return true;
	return !kgd2kfd_schedule_evict_and_restore_process(fence->mm, fence->context_id, f);
}

static void vgpu_kfd_fence_release(struct dma_fence *f)
{
	struct vgpu_kfd_fence *fence = to_vgpu_kfd_fence(f);

	if (!fence)
		return;
	mmdrop(fence->mm);
	kfree_rcu(f, rcu);
}

static const struct dma_fence_ops vgpu_kfd_fence_ops = {
	.get_driver_name = vgpu_kfd_fence_driver_name,
	.get_timeline_name = vgpu_kfd_fence_timeline_name,
	.enable_signaling = vgpu_kfd_fence_enable_signaling,
	.release = vgpu_kfd_fence_release,
};

/* upstream amdgpu_amdkfd_fence_create */
static struct dma_fence *vgpu_kfd_fence_create(u64 context, struct mm_struct *mm, u16 context_id)
{
	struct vgpu_kfd_fence *fence = kzalloc_obj(*fence, GFP_KERNEL);

	if (!fence)
		return NULL;
	mmgrab(mm);
	fence->mm = mm;
	fence->context_id = context_id;
	get_task_comm(fence->timeline_name, current);
	spin_lock_init(&fence->lock);
	dma_fence_init(&fence->base, &vgpu_kfd_fence_ops, &fence->lock, context,
		       atomic_inc_return(&vgpu_fence_seq));
	return &fence->base;
}

struct vgpu_evict_fence *vgpu_shim_evict_fence_create(u16 context_id, struct dma_fence **ef)
{
	struct mm_struct *mm = current->mm;
	struct vgpu_evict_fence *v;

	if (!mm)
		return NULL;
	v = kzalloc_obj(*v, GFP_KERNEL);
	if (!v)
		return NULL;
	v->context = dma_fence_context_alloc(1);
	v->ef = vgpu_kfd_fence_create(v->context, mm, context_id);
	if (!v->ef) {
		kfree(v);
		return NULL;
	}
	mmgrab(mm);
	v->mm = mm;
	v->tgid = task_tgid_nr(current);
	v->context_id = context_id;
	*ef = dma_fence_get(v->ef);
	mutex_lock(&vgpu_evict_lock);
	list_add_tail(&v->link, &vgpu_evict_list);
	mutex_unlock(&vgpu_evict_lock);
	return v;
}

int vgpu_shim_evict_fence_restore(struct vgpu_evict_fence *v, struct dma_fence **ef)
{
	struct dma_fence *old = NULL, *new;

	mutex_lock(&vgpu_evict_lock);
	if (vgpu_restore_fail) {
		vgpu_restore_fail--;
		mutex_unlock(&vgpu_evict_lock);
		return -EBUSY;
	}
	v->restores++;
	/*
	 * As amdgpu_amdkfd_gpuvm_restore_process_bos: a fence goes from
	 * unsignalled to signalled once, so a signalled one is replaced by a
	 * new fence of the same context; an unsignalled one (a retried
	 * restore, or rkfd not having signalled it) is kept, and counted.
	 */
	if (dma_fence_is_signaled(v->ef)) {
		new = vgpu_kfd_fence_create(v->context, v->mm, v->context_id);
		if (!new) {
			v->restores--;
			mutex_unlock(&vgpu_evict_lock);
			return -ENOMEM;
		}
		old = v->ef;
		v->ef = new;
	} else {
		v->unsignaled++;
	}
	*ef = dma_fence_get(v->ef);
	mutex_unlock(&vgpu_evict_lock);
	if (old)
		dma_fence_put(old);
	return 0;
}

void vgpu_shim_evict_fence_destroy(struct vgpu_evict_fence *v)
{
	if (!v)
		return;
	mutex_lock(&vgpu_evict_lock);
	list_del(&v->link);
	mutex_unlock(&vgpu_evict_lock);
	/* upstream amdkfd_fence_release: the process is gone, signal it. */
	dma_fence_signal(v->ef);
	dma_fence_put(v->ef);
	mmdrop(v->mm);
	kfree(v);
}

void vgpu_shim_fence_put(struct dma_fence *f)
{
	dma_fence_put(f);
}

/* The mm of @tgid's first VM, grabbed, or NULL. */
static struct mm_struct *vgpu_evict_mm_of(pid_t tgid)
{
	struct vgpu_evict_fence *v;
	struct mm_struct *mm = NULL;

	mutex_lock(&vgpu_evict_lock);
	list_for_each_entry(v, &vgpu_evict_list, link) {
		if (v->tgid == tgid) {
			mm = v->mm;
			mmgrab(mm);
			break;
		}
	}
	mutex_unlock(&vgpu_evict_lock);
	return mm;
}

static int vgpu_evict_parse_pid(const char __user *buf, size_t len, pid_t *pid)
{
	int ret = kstrtoint_from_user(buf, len, 10, pid);

	if (ret)
		return ret;
	return *pid > 0 ? 0 : -EINVAL;
}

static ssize_t vgpu_evict_write(struct file *file, const char __user *buf, size_t len,
				loff_t *pos)
{
	struct dma_fence *fences[16];
	struct vgpu_evict_fence *v;
	int i, n = 0, ret;
	pid_t pid;

	ret = vgpu_evict_parse_pid(buf, len, &pid);
	if (ret)
		return ret;
	mutex_lock(&vgpu_evict_lock);
	list_for_each_entry(v, &vgpu_evict_list, link) {
		if (v->tgid == pid && n < ARRAY_SIZE(fences))
			fences[n++] = dma_fence_get(v->ef);
	}
	mutex_unlock(&vgpu_evict_lock);
	if (!n)
		return -ESRCH;
	/* What a TTM eviction of the process's BOs does to their fences. */
	for (i = 0; i < n; i++) {
		dma_fence_enable_signaling(fences[i]);
		dma_fence_put(fences[i]);
	}
	return len;
}

enum vgpu_mm_call { VGPU_MM_QUIESCE, VGPU_MM_RESUME, VGPU_MM_RESTORE_RESCHEDULED };

/*
 * quiesce / resume / restore_rescheduled: kgd2kfd_quiesce_mm (as a userptr
 * invalidation), _resume_mm or _queue_restore_rescheduled on @buf's pid.
 */
static ssize_t vgpu_mm_call_write(const char __user *buf, size_t len, enum vgpu_mm_call call)
{
	struct mm_struct *mm;
	pid_t pid;
	int ret;

	ret = vgpu_evict_parse_pid(buf, len, &pid);
	if (ret)
		return ret;
	mm = vgpu_evict_mm_of(pid);
	if (!mm)
		return -ESRCH;
	switch (call) {
	case VGPU_MM_QUIESCE:
		ret = kgd2kfd_quiesce_mm(mm, KFD_QUEUE_EVICTION_TRIGGER_USERPTR);
		break;
	case VGPU_MM_RESUME:
		ret = kgd2kfd_resume_mm(mm);
		break;
	default:
		kgd2kfd_queue_restore_rescheduled(mm);
		break;
	}
	mmdrop(mm);
	return ret ? ret : len;
}

static ssize_t vgpu_quiesce_write(struct file *file, const char __user *buf, size_t len,
				  loff_t *pos)
{
	return vgpu_mm_call_write(buf, len, VGPU_MM_QUIESCE);
}

static ssize_t vgpu_resume_write(struct file *file, const char __user *buf, size_t len,
				 loff_t *pos)
{
	return vgpu_mm_call_write(buf, len, VGPU_MM_RESUME);
}

static ssize_t vgpu_restore_rescheduled_write(struct file *file, const char __user *buf,
					      size_t len, loff_t *pos)
{
	return vgpu_mm_call_write(buf, len, VGPU_MM_RESTORE_RESCHEDULED);
}

/* Whether thread group @tgid has a VM acquired on a virtual GPU. */
static bool vgpu_evict_has_vm(pid_t tgid)
{
	struct vgpu_evict_fence *v;
	bool found = false;

	mutex_lock(&vgpu_evict_lock);
	list_for_each_entry(v, &vgpu_evict_list, link) {
		if (v->tgid == tgid) {
			found = true;
			break;
		}
	}
	mutex_unlock(&vgpu_evict_lock);
	return found;
}

static ssize_t vgpu_userptr_fault_write(struct file *file, const char __user *buf,
					size_t len, loff_t *pos)
{
	char line[64];
	long long pid;
	u64 va;
	int n;

	if (!len || len >= sizeof(line))
		return -EINVAL;
	if (copy_from_user(line, buf, len))
		return -EFAULT;
	line[len] = '\0';
	if (sscanf(line, "%lld %lli %n", &pid, (long long *)&va, &n) != 2 || (size_t)n != len ||
	    pid <= 0 || pid > PID_MAX_LIMIT)
		return -EINVAL;
	if (!vgpu_evict_has_vm(pid))
		return -ESRCH;
	kgd2kfd_signal_userptr_fault(pid, va);
	return len;
}

static int vgpu_evict_fences_show(struct seq_file *m, void *unused)
{
	struct vgpu_evict_fence *v;

	mutex_lock(&vgpu_evict_lock);
	list_for_each_entry(v, &vgpu_evict_list, link)
		seq_printf(m, "pid %d context_id 0x%x seqno %llu signaled %d restores %llu unsignaled %llu\n",
			   v->tgid, v->context_id, v->ef->seqno,
			   dma_fence_is_signaled(v->ef), v->restores, v->unsignaled);
	mutex_unlock(&vgpu_evict_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vgpu_evict_fences);

static const struct file_operations vgpu_evict_fops = {
	.owner = THIS_MODULE,
	.write = vgpu_evict_write,
};

static const struct file_operations vgpu_quiesce_fops = {
	.owner = THIS_MODULE,
	.write = vgpu_quiesce_write,
};

static const struct file_operations vgpu_resume_fops = {
	.owner = THIS_MODULE,
	.write = vgpu_resume_write,
};

static const struct file_operations vgpu_userptr_fault_fops = {
	.owner = THIS_MODULE,
	.write = vgpu_userptr_fault_write,
};

static const struct file_operations vgpu_restore_rescheduled_fops = {
	.owner = THIS_MODULE,
	.write = vgpu_restore_rescheduled_write,
};

void vgpu_shim_evict_debugfs_init(void)
{
	vgpu_evict_dir = debugfs_create_dir("amdgpu_vgpu", NULL);
	debugfs_create_file("evict", 0200, vgpu_evict_dir, NULL, &vgpu_evict_fops);
	debugfs_create_file("quiesce", 0200, vgpu_evict_dir, NULL, &vgpu_quiesce_fops);
	debugfs_create_file("resume", 0200, vgpu_evict_dir, NULL, &vgpu_resume_fops);
	debugfs_create_file("restore_rescheduled", 0200, vgpu_evict_dir, NULL,
			    &vgpu_restore_rescheduled_fops);
	debugfs_create_file("userptr_fault", 0200, vgpu_evict_dir, NULL, &vgpu_userptr_fault_fops);
	debugfs_create_u32("restore_fail", 0600, vgpu_evict_dir, &vgpu_restore_fail);
	debugfs_create_u32("vmfault_fast_path", 0600, vgpu_evict_dir, &vgpu_vmfault_fast_path);
	debugfs_create_file("evict_fences", 0400, vgpu_evict_dir, NULL, &vgpu_evict_fences_fops);
}

void vgpu_shim_evict_debugfs_exit(void)
{
	debugfs_remove_recursive(vgpu_evict_dir);
	vgpu_evict_dir = NULL;
	/* Fences freed with kfree_rcu use this module's code no more. */
	rcu_barrier();
}
