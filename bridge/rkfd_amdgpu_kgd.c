// SPDX-License-Identifier: GPL-2.0
/*
 * rkfd_amdgpu.ko, amdgpu side: registers with the patched amdgpu
 * (amdgpu.kfd=external, patches/amdgpu/0005-0006) and calls its exported
 * amdgpu_amdkfd_* functions (namespace AMDGPU_KFD, patch 0003).  Compiled
 * with amdgpu's own headers from the patched source and amdgpu's Kconfig
 * symbols (scripts/build-amdgpu writes amdgpu-config.h); it includes no
 * rkfd header (see rkfd_amdgpu.h).  It also keeps each GPU's HWS path
 * (struct rkfd_amdgpu_hws: amdgpu's kfd2kgd table, the kernel doorbell
 * page, rkfd's GTT objects; bridge/README.md, "The HWS path").
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/kfd_sysfs.h>
#include <linux/dma-mapping.h>
#include <linux/llist.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/xarray.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>

#include "amdgpu.h"
#include "amdgpu_amdkfd.h"
#include "amdgpu_kfd_ops.h"
#include "amdgpu_mes.h"
#include "amdgpu_ras.h"
#include "amdgpu_reset.h"
#include "amdgpu_res_cursor.h"
#include "kgd_kfd_interface.h"
#include "kfd_migrate.h"
#include "v9_structs.h"
#include "v10_structs.h"
#include "v11_structs.h"
#include "v12_structs.h"
#include "gc/gc_9_0_sh_mask.h"
#include "sdma0/sdma0_4_2_2_sh_mask.h"

#include "rkfd_amdgpu.h"
#include "rkfd_amdgpu_desc.h"
#include "rkfd_amdgpu_f2g.h"

struct rkfd_amdgpu_hws;

#define RKFD_AMDGPU_SVM_BATCH 512	/* pages per SVM page-table update */

/* svm_map's per-batch arrays, one set per VM (used under its svm_lock). */
struct rkfd_amdgpu_svm_buf {
	dma_addr_t dma[RKFD_AMDGPU_SVM_BATCH];	/* the batch's new PTE addresses */
	unsigned long old[RKFD_AMDGPU_SVM_BATCH];	/* the records they replace */
	u8 op[RKFD_AMDGPU_SVM_BATCH];		/* enum rkfd_amdgpu_svm_op */
};

/*
 * A VM acquired from one render-node file (rkfd's kfd2kgd acquire_vm),
 * with what upstream keeps per process and GPU for its queues
 * (kfd_process_device's qpd): the doorbell slice and, while a queue of
 * it is loaded without the HWS, a VMID.
 */
struct rkfd_amdgpu_vm {
	struct amdgpu_device *adev;
	struct rkfd_amdgpu_hws *hws;
	struct list_head link;		/* in hws->vms, under hws->queue_lock */
	struct file *filp;		/* reference held until release */
	void *drm_priv;			/* the struct drm_file */
	void *process_info;		/* amdgpu_amdkfd_process_info of this VM */
	struct dma_fence *ef;		/* eviction fence */
	/* The doorbell slice (upstream qpd.proc_doorbells): a DOORBELL-domain BO. */
	void *db_bo;
	u64 db_offset;			/* bytes into the doorbell BAR */
	u32 db_index;			/* BAR dword index of its first doorbell */
	int vmid;			/* -1: none; under hws->queue_lock */
	u32 hqd_queues;			/* queues loaded with hqd_*load, under hws->queue_lock */
	/*
	 * SVM (rkfd_amdgpu_svm_map, below).  svm_lock: inside rkfd's range
	 * lock, outside amdgpu's VM locks (see there).
	 */
	struct mutex svm_lock;
	struct xarray svm_dma;		/* CPU page -> its PTE's record (RKFD_AMDGPU_SVM_REC_*) */
	struct rkfd_amdgpu_svm_buf *svm_buf;
};

static void rkfd_amdgpu_svm_release(struct rkfd_amdgpu_vm *vm);

/* The HWS path's state (below). */
static struct amdgpu_device *rkfd_amdgpu_hws_adev(struct rkfd_amdgpu_hws *hws);
static void rkfd_amdgpu_hws_add_vm(struct rkfd_amdgpu_hws *hws, struct rkfd_amdgpu_vm *vm);
static void rkfd_amdgpu_hws_del_vm(struct rkfd_amdgpu_hws *hws, struct rkfd_amdgpu_vm *vm);

/*
 * amdgpu's use_xgmi_p2p parameter (amdgpu_use_xgmi_p2p, which upstream's
 * kgd2kfd_device_init reads before it takes the XGMI hive id; not
 * exported): read from amdgpu's own parameter table, the value sysfs
 * shows (0444, fixed at load).  Upstream's default (1) if amdgpu has no
 * such int parameter.
 */
static bool rkfd_amdgpu_use_xgmi_p2p(struct amdgpu_device *adev)
{
	struct module *mod = adev->dev->driver ? adev->dev->driver->owner : NULL;
	unsigned int i;

	for (i = 0; mod && i < mod->num_kp; i++)
		if (!strcmp(mod->kp[i].name, "use_xgmi_p2p") && mod->kp[i].ops == &param_ops_int)
			return *(const int *)mod->kp[i].arg != 0;
	return true;
}

/* The plain values rkfd_amdgpu_derive() turns into topology values. */
static void rkfd_amdgpu_read_desc(struct amdgpu_device *adev, bool vf,
				  struct rkfd_amdgpu_desc *d)
{
	u32 gc = amdgpu_ip_version(adev, GC_HWIP, 0);
	u32 sdma = amdgpu_ip_version(adev, SDMA0_HWIP, 0);
	struct drm_device *ddev = adev_to_drm(adev);
	struct kfd_local_mem_info mem = {};
	struct pci_dev *pdev = adev->pdev;

	d->gc_major = IP_VERSION_MAJ(gc);
	d->gc_minor = IP_VERSION_MIN(gc);
	d->gc_rev = IP_VERSION_REV(gc);
	d->vf = vf;
	d->apu = adev->gmc.is_app_apu || (adev->flags & AMD_IS_APU);
	d->vendor_id = pdev->vendor;
	d->device_id = pdev->device;
	d->domain = pci_domain_nr(pdev->bus);
	d->bus = pdev->bus->number;
	d->devfn = pdev->devfn;
	d->render_minor = ddev->render ? ddev->render->index : 0;
	d->unique_id = adev->unique_id;
	d->max_shader_engines = adev->gfx.config.max_shader_engines;
	d->max_sh_per_se = adev->gfx.config.max_sh_per_se;
	d->max_cu_per_sh = adev->gfx.config.max_cu_per_sh;
	d->simd_per_cu = adev->gfx.cu_info.simd_per_cu;
	d->max_waves_per_simd = adev->gfx.cu_info.max_waves_per_simd;
	d->wave_front_size = adev->gfx.cu_info.wave_front_size;
	d->lds_size_kb = adev->gfx.cu_info.lds_size;
	d->sdma_instances = adev->sdma.num_instances;
	d->xcc_mask = adev->gfx.xcc_mask;
	d->num_pipe_per_mec = adev->gfx.mec.num_pipe_per_mec;
	d->num_queue_per_pipe = adev->gfx.mec.num_queue_per_pipe;
	if (vf || !rkfd_amdgpu_target_version(d->gc_major, d->gc_minor, d->gc_rev))
		return;		/* no device: ask amdgpu nothing more */
	d->max_engine_clk_mhz = amdgpu_amdkfd_get_max_engine_clock_in_mhz(adev);
	d->mec_fw = amdgpu_amdkfd_get_fw_version(adev, KGD_ENGINE_MEC1);
	d->sdma_fw = amdgpu_amdkfd_get_fw_version(adev, KGD_ENGINE_SDMA1);
	amdgpu_amdkfd_get_local_mem_info(adev, &mem, NULL);
	d->local_mem_size_private = mem.local_mem_size_private;
	d->local_mem_size_public = mem.local_mem_size_public;
	d->vram_width = mem.vram_width;
	d->mem_clk_max = mem.mem_clk_max;
	/* What kfd_fill_gpu_cache_info_from_gfx_config() reads (GC 11). */
	d->gc_tcp_l1_size = adev->gfx.config.gc_tcp_l1_size;
	d->gc_num_tcp_per_wpg = adev->gfx.config.gc_num_tcp_per_wpg;
	d->gc_tcp_cache_line_size = adev->gfx.config.gc_tcp_cache_line_size;
	d->gc_l1_instruction_cache_size_per_sqc =
		adev->gfx.config.gc_l1_instruction_cache_size_per_sqc;
	d->gc_num_sqc_per_wgp = adev->gfx.config.gc_num_sqc_per_wgp;
	d->gc_instruction_cache_line_size = adev->gfx.config.gc_instruction_cache_line_size;
	d->gc_l1_data_cache_size_per_sqc = adev->gfx.config.gc_l1_data_cache_size_per_sqc;
	d->gc_scalar_data_cache_line_size = adev->gfx.config.gc_scalar_data_cache_line_size;
	d->gc_gl1c_per_sa = adev->gfx.config.gc_gl1c_per_sa;
	d->gc_gl1c_size_per_instance = adev->gfx.config.gc_gl1c_size_per_instance;
	d->gc_gl2c_per_gpu = adev->gfx.config.gc_gl2c_per_gpu;
	d->gc_tcc_cache_line_size = adev->gfx.config.gc_tcc_cache_line_size;
	d->mall_size = adev->gmc.mall_size;
	/* kgd2kfd_device_init's hive id */
	d->xgmi_hive_id = adev->gmc.xgmi.hive_id;
	d->use_xgmi_p2p = rkfd_amdgpu_use_xgmi_p2p(adev);
	/* What kfd_topology_add_device() reads for the capability bits. */
	BUILD_BUG_ON(RKFD_AMDGPU_RAS_BLOCK_GFX != AMDGPU_RAS_BLOCK__GFX);
	BUILD_BUG_ON(RKFD_AMDGPU_RAS_BLOCK_UMC != AMDGPU_RAS_BLOCK__UMC);
	BUILD_BUG_ON(RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_MASK !=
		     HSA_CAP_DOORBELL_TYPE_TOTALBITS_MASK);
	BUILD_BUG_ON(RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_SHIFT !=
		     HSA_CAP_DOORBELL_TYPE_TOTALBITS_SHIFT);
	BUILD_BUG_ON(RKFD_AMDGPU_HSA_CAP_DOORBELL_TYPE_2_0 != HSA_CAP_DOORBELL_TYPE_2_0);
	BUILD_BUG_ON(RKFD_AMDGPU_HSA_CAP_MEM_EDC != HSA_CAP_MEM_EDCSUPPORTED);
	BUILD_BUG_ON(RKFD_AMDGPU_HSA_CAP_RASEVENTNOTIFY != HSA_CAP_RASEVENTNOTIFY);
	BUILD_BUG_ON(RKFD_AMDGPU_HSA_CAP_ASIC_REVISION_MASK != HSA_CAP_ASIC_REVISION_MASK);
	BUILD_BUG_ON(RKFD_AMDGPU_HSA_CAP_ASIC_REVISION_SHIFT != HSA_CAP_ASIC_REVISION_SHIFT);
	BUILD_BUG_ON(RKFD_AMDGPU_HSA_CAP_SRAM_EDC != HSA_CAP_SRAM_EDCSUPPORTED);
	BUILD_BUG_ON(RKFD_AMDGPU_HSA_CAP_COHERENTHOSTACCESS != HSA_CAP_FLAGS_COHERENTHOSTACCESS);
	d->rev_id = adev->rev_id;
	d->ras_enabled = adev->ras_enabled;
	d->is_app_apu = adev->gmc.is_app_apu;
	d->xgmi_connected_to_cpu = adev->gmc.xgmi.connected_to_cpu;
	d->sdma_major = IP_VERSION_MAJ(sdma);
	d->sdma_minor = IP_VERSION_MIN(sdma);
	d->sdma_rev = IP_VERSION_REV(sdma);
	d->max_scratch_slots_per_cu = adev->gfx.cu_info.max_scratch_slots_per_cu;
}

/* amdgpu_kfd_ops.probe: one GPU amdgpu offers becomes an rkfd device. */
static struct kfd_dev *rkfd_amdgpu_probe(struct amdgpu_device *adev, bool vf)
{
	struct rkfd_amdgpu_desc d = {};
	struct rkfd_amdgpu_info *info;
	void *bdev = NULL;

	rkfd_amdgpu_read_desc(adev, vf, &d);
	info = kzalloc_obj(*info, GFP_KERNEL);
	if (!info)
		return NULL;
	if (rkfd_amdgpu_derive(&d, info))
		bdev = rkfd_amdgpu_dev_probe(adev, info);
	else
		dev_info(adev->dev, "rkfd_amdgpu: GC %u.%u.%u%s not supported, no KFD device\n",
			 d.gc_major, d.gc_minor, d.gc_rev, vf ? " (SR-IOV VF)" : "");
	kfree(info);
	return bdev;
}

static bool rkfd_amdgpu_device_init(struct kfd_dev *kfd,
				    const struct kgd2kfd_shared_resources *res)
{
	/*
	 * @res: the KFD's VMIDs and HQDs go to the user-queue path, the HQDs
	 * amdgpu keeps to rkfd (kgd_gpu_info.reserved_hqds, at kgd2kfd_probe).
	 */
	return rkfd_amdgpu_dev_init(kfd, res);
}

static void rkfd_amdgpu_device_exit(struct kfd_dev *kfd)
{
	rkfd_amdgpu_dev_exit(kfd);
}

/* Hard IRQ, under rcu_read_lock(): must not sleep. */
static void rkfd_amdgpu_interrupt(struct kfd_dev *kfd, const void *ih_ring_entry)
{
	rkfd_amdgpu_dev_interrupt(kfd, ih_ring_entry);
}

/* amdgpu's userptr invalidation (amdgpu_amdkfd_evict_userptr) and its restore. */
static int rkfd_amdgpu_quiesce_mm(struct mm_struct *mm, u32 trigger)
{
	return rkfd_amdgpu_kfd_quiesce_mm(mm, trigger);
}

static int rkfd_amdgpu_resume_mm(struct mm_struct *mm)
{
	return rkfd_amdgpu_kfd_resume_mm(mm);
}

/*
 * A retry fault amdgpu's own handling did not resolve
 * (amdgpu_vm_handle_fault, from the IH soft ring's work: process context,
 * no amdgpu VM lock held), as upstream's svm_range_restore_pages: rkfd's
 * kgd2kfd_svm_fault maps the page (SVM in system memory).  @addr is a page
 * number.  0: handled, the access is retried.
 */
static int rkfd_amdgpu_restore_svm_pages(struct amdgpu_device *adev, u32 pasid, u32 vmid,
					 u32 node_id, u64 addr, u64 ts, bool write_fault)
{
	return rkfd_amdgpu_adev_svm_fault(adev, pasid, addr << PAGE_SHIFT, write_fault);
}

/* amdgpu's userptr restore worker will try again: an SMI event in rkfd. */
static void rkfd_amdgpu_queue_restore_rescheduled(struct mm_struct *mm)
{
	rkfd_amdgpu_kfd_queue_restore_rescheduled(mm);
}

/* A KFD eviction fence's ->enable_signaling (TTM evicts a KFD BO): atomic. */
static int rkfd_amdgpu_schedule_evict_and_restore_process(struct mm_struct *mm, u16 context_id,
							  struct dma_fence *fence)
{
	return rkfd_amdgpu_kfd_schedule_evict_and_restore_process(mm, context_id, fence);
}

/*
 * Power management and reset (rkfd's kgd2kfd_suspend & co., issue #15):
 * amdgpu calls them as it calls amdkfd's, from amdgpu_device_suspend /
 * _resume, the GPU recovery path (pre/post reset), runtime and S0ix PM
 * (start/stop_sched_all_nodes), partition switches (check_and_lock_kfd /
 * unlock_kfd) and gfx's queue reset (stop/start_sched, compute_active).
 * rkfd's kfd_dev is one node.
 */
static void rkfd_amdgpu_suspend(struct kfd_dev *kfd, bool suspend_proc)
{
	rkfd_amdgpu_dev_suspend(kfd, suspend_proc);
}

static int rkfd_amdgpu_resume(struct kfd_dev *kfd, bool resume_proc)
{
	return rkfd_amdgpu_dev_resume(kfd, resume_proc);
}

static void rkfd_amdgpu_suspend_process(struct kfd_dev *kfd)
{
	rkfd_amdgpu_dev_suspend_process(kfd);
}

static int rkfd_amdgpu_resume_process(struct kfd_dev *kfd)
{
	return rkfd_amdgpu_dev_resume_process(kfd);
}

/* The cause as amdkfd's kfd_smi_event_update_gpu_reset() words it. */
static int rkfd_amdgpu_pre_reset(struct kfd_dev *kfd,
				 struct amdgpu_reset_context *reset_context)
{
	char cause[64] = "";

	if (reset_context)
		amdgpu_reset_get_desc(reset_context, cause, sizeof(cause));
	return rkfd_amdgpu_dev_pre_reset(kfd, cause);
}

static int rkfd_amdgpu_post_reset(struct kfd_dev *kfd)
{
	return rkfd_amdgpu_dev_post_reset(kfd);
}

static int rkfd_amdgpu_check_and_lock_kfd(struct kfd_dev *kfd)
{
	return rkfd_amdgpu_dev_check_and_lock(kfd);
}

static void rkfd_amdgpu_unlock_kfd(struct kfd_dev *kfd)
{
	rkfd_amdgpu_dev_unlock(kfd);
}

static int rkfd_amdgpu_start_sched(struct kfd_dev *kfd, u32 node_id)
{
	return rkfd_amdgpu_dev_sched(kfd, node_id, true);
}

static int rkfd_amdgpu_stop_sched(struct kfd_dev *kfd, u32 node_id)
{
	return rkfd_amdgpu_dev_sched(kfd, node_id, false);
}

static int rkfd_amdgpu_start_sched_all_nodes(struct kfd_dev *kfd)
{
	return rkfd_amdgpu_dev_sched(kfd, 0, true);
}

static int rkfd_amdgpu_stop_sched_all_nodes(struct kfd_dev *kfd)
{
	return rkfd_amdgpu_dev_sched(kfd, 0, false);
}

static bool rkfd_amdgpu_compute_active(struct kfd_dev *kfd, u32 node_id)
{
	return rkfd_amdgpu_dev_compute_active(kfd, node_id);
}

static void rkfd_amdgpu_teardown_processes(struct amdgpu_device *adev)
{
	rkfd_amdgpu_adev_teardown_processes(adev);
}

/*
 * Atomic (under rcu_read_lock(), from the SMU's throttling work): rkfd's
 * kgd2kfd_smi_event_throttle takes only its SMI spinlocks.  The count is
 * the one amdkfd reads back (amdgpu_dpm_get_thermal_throttling_counter).
 */
static void rkfd_amdgpu_smi_event_throttle(struct kfd_dev *kfd, u64 throttle_bitmask)
{
	rkfd_amdgpu_dev_smi_throttle(kfd, throttle_bitmask);
}

/*
 * amdgpu's RAS code before it resets the GPU for an uncorrectable SRAM ECC
 * error (RCU, atomic): rkfd's kgd2kfd_set_sram_ecc_flag only counts it.
 */
static void rkfd_amdgpu_set_sram_ecc_flag(struct kfd_dev *kfd)
{
	rkfd_amdgpu_dev_sram_ecc(kfd);
}

/*
 * gmc_v9_0 / gmc_v12_1's VM fault interrupt, hard IRQ under RCU (upstream
 * kgd2kfd_vmfault_fast_path): only entries of the soft ring and ring 1
 * (retry faults amdgpu could not resolve) are filtered; rkfd says whether
 * the fault's process already had one (then it is dropped, and a retry
 * fault's CAM entry released as upstream does) or has no KFD process at
 * all (dropped).  adev->kfd.dev is the bridge's device, read under the
 * RCU read lock amdgpu holds (amdgpu clears it and waits for RCU before
 * device_exit).  The CAM doorbell is written as amdgpu_mm_wdoorbell does
 * (not exported): only inside the kernel doorbells, not while amdgpu has
 * cut off hardware access.
 */
static bool rkfd_amdgpu_vmfault_fast_path(struct amdgpu_device *adev,
					  struct amdgpu_iv_entry *entry, bool retry_fault)
{
	struct kfd_dev *kfd = READ_ONCE(adev->kfd.dev);
	u32 src_data_idx, cam_index, db;

	if (!kfd || (entry->ih != &adev->irq.ih_soft && entry->ih != &adev->irq.ih1))
		return false;
	if (!rkfd_amdgpu_dev_vmfault_fast_path(kfd, entry->pasid))
		return false;
	if (retry_fault && adev->irq.retry_cam_enabled) {
		src_data_idx = amdgpu_ip_version(adev, GC_HWIP, 0) == IP_VERSION(12, 1, 0) ? 3 : 2;
		cam_index = entry->src_data[src_data_idx] & 0x3ff;
		db = adev->irq.retry_cam_doorbell_index;
		if (!adev->no_hw_access && db < adev->doorbell.num_kernel_doorbells)
			writel(cam_index, adev->doorbell.cpu_addr + db);
	}
	return true;
}

/*
 * amdgpu_device_gpu_recover, before it halts the GPU
 * (amdgpu_amdkfd_clear_kfd_mapping): rkfd zaps every process's doorbell
 * and MMIO remap mmaps of this GPU.
 */
static void rkfd_amdgpu_clear_mappings(struct kfd_dev *kfd)
{
	rkfd_amdgpu_dev_clear_mappings(kfd);
}

/*
 * amdgpu's userptr restore worker with debug_vm_userptr: the process of
 * @pid unmapped a userptr BO's memory before freeing it.  rkfd names
 * processes by their thread group id in the initial namespace
 * (process_info->pid is the group leader's struct pid).
 */
static void rkfd_amdgpu_signal_userptr_fault(struct pid *pid, u64 va)
{
	rkfd_amdgpu_kfd_signal_userptr_fault(pid_nr(pid), va);
}

/*
 * Whether the suspend op is amdgpu_device_suspend's (in_suspend: not the
 * amdgpu_amdkfd_suspend of amdgpu_device_fini_hw, where rkfd's device exit
 * takes the pages back) and amdgpu_device_evict_resources() will evict
 * this GPU's VRAM after it: its condition, which skips an APU unless it is
 * going to S4 (hibernation) and S5 through the S4 callbacks.
 */
bool rkfd_amdgpu_vram_lost_at_suspend(void *adev_)
{
	struct amdgpu_device *adev = adev_;

	if (!adev->in_suspend || system_state == SYSTEM_POWER_OFF)
		return false;
	return adev->in_s4 || !(adev->flags & AMD_IS_APU);
}

u64 rkfd_amdgpu_throttle_counter(void *adev)
{
	return amdgpu_dpm_get_thermal_throttling_counter(adev);
}

/*
 * kfd2kgd gpu_reset: amdgpu's recovery, as amdkfd's kfd_hws_hang asks for
 * it (amdgpu_amdkfd_gpu_reset schedules the reset work; amdgpu then calls
 * pre_reset and post_reset above around the ASIC reset).
 */
void rkfd_amdgpu_gpu_reset(void *adev)
{
	amdgpu_amdkfd_gpu_reset(adev);
}

/*
 * The optional member left NULL with no rkfd counterpart yet (MES queue
 * reset): amdgpu then behaves as with no KFD process for that call.
 * evict_svm_bo stays NULL on purpose: the bridge pins its SVM VRAM BOs
 * ("SVM VRAM" below), so TTM never evicts them (upstream's are
 * evictable).  init_zone_device is NULL by choice (amdgpu then goes on
 * as for a GPU without device memory for SVM): it runs before probe and
 * device_init, with no rkfd device to give it to, and rkfd sets up its
 * device-private memory in kgd2kfd_probe, which amdgpu's re-init after a
 * reset-on-init reaches right after it (bridge/README.md).
 */
static const struct amdgpu_kfd_ops rkfd_amdgpu_ops = {
	.probe = rkfd_amdgpu_probe,
	.device_init = rkfd_amdgpu_device_init,
	.device_exit = rkfd_amdgpu_device_exit,
	.interrupt = rkfd_amdgpu_interrupt,
	.teardown_processes = rkfd_amdgpu_teardown_processes,
	.suspend = rkfd_amdgpu_suspend,
	.resume = rkfd_amdgpu_resume,
	.suspend_process = rkfd_amdgpu_suspend_process,
	.resume_process = rkfd_amdgpu_resume_process,
	.pre_reset = rkfd_amdgpu_pre_reset,
	.post_reset = rkfd_amdgpu_post_reset,
	.smi_event_throttle = rkfd_amdgpu_smi_event_throttle,
	.set_sram_ecc_flag = rkfd_amdgpu_set_sram_ecc_flag,
	.check_and_lock_kfd = rkfd_amdgpu_check_and_lock_kfd,
	.unlock_kfd = rkfd_amdgpu_unlock_kfd,
	.start_sched = rkfd_amdgpu_start_sched,
	.stop_sched = rkfd_amdgpu_stop_sched,
	.start_sched_all_nodes = rkfd_amdgpu_start_sched_all_nodes,
	.stop_sched_all_nodes = rkfd_amdgpu_stop_sched_all_nodes,
	.compute_active = rkfd_amdgpu_compute_active,
	.quiesce_mm = rkfd_amdgpu_quiesce_mm,
	.resume_mm = rkfd_amdgpu_resume_mm,
	.schedule_evict_and_restore_process = rkfd_amdgpu_schedule_evict_and_restore_process,
	.queue_restore_rescheduled = rkfd_amdgpu_queue_restore_rescheduled,
	.restore_svm_pages = rkfd_amdgpu_restore_svm_pages,
	.vmfault_fast_path = rkfd_amdgpu_vmfault_fast_path,
	.clear_mappings = rkfd_amdgpu_clear_mappings,
	.signal_userptr_fault = rkfd_amdgpu_signal_userptr_fault,
};

int rkfd_amdgpu_register(void)
{
	return amdgpu_kfd_register(&rkfd_amdgpu_ops);
}

void rkfd_amdgpu_unregister(void)
{
	amdgpu_kfd_unregister(&rkfd_amdgpu_ops);
}

u64 rkfd_amdgpu_gpu_clock_counter(void *adev)
{
	return amdgpu_amdkfd_get_gpu_clock_counter(adev);
}

u64 rkfd_amdgpu_available_vram(void *adev)
{
	return amdgpu_amdkfd_get_available_memory(adev, 0);
}

/*
 * As amdkfd's kfd_process_device_init_vm(), which uses amdgpu's unexported
 * amdgpu_file_to_fpriv(): the file must be a DRM file of this very device.
 * The eviction fence carries rkfd's @context_id, which amdgpu passes back
 * to schedule_evict_and_restore_process; rkfd gets its own reference in
 * *@ef_out.  The VM's doorbell slice is allocated here (upstream allocates
 * it on the first queue or doorbell mmap, kfd_alloc_process_doorbells).
 * *@pasid is the PASID amdgpu gave the VM when the render node was opened
 * (amdgpu_driver_open_kms), which amdkfd 7.3 takes as pdd->pasid: amdgpu
 * puts it in the VM's IH entries and VMID mapping; -EINVAL for a VM
 * without one, as kfd_process_device_init_vm.
 */
int rkfd_amdgpu_acquire_vm(void *hws_, void *drm_file, u16 context_id, void **vm_out,
			   u32 *pasid, void **ef_out)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct amdgpu_device *adev = rkfd_amdgpu_hws_adev(hws);
	struct drm_device *ddev = adev_to_drm(adev);
	struct file *filp = drm_file;
	struct rkfd_amdgpu_vm *vm;
	struct drm_file *file_priv;
	void *cpu = NULL;
	int ret;

	if (!filp || filp->f_op != ddev->driver->fops)
		return -EINVAL;
	file_priv = filp->private_data;
	if (!file_priv || !file_priv->minor || file_priv->minor->dev != ddev ||
	    !file_priv->driver_priv || !drm_priv_to_vm(file_priv)->pasid)
		return -EINVAL;
	vm = kzalloc_obj(*vm, GFP_KERNEL);
	if (!vm)
		return -ENOMEM;
	vm->svm_buf = kmalloc_obj(*vm->svm_buf, GFP_KERNEL);
	if (!vm->svm_buf) {
		kfree(vm);
		return -ENOMEM;
	}
	vm->adev = adev;
	vm->hws = hws;
	vm->drm_priv = file_priv;
	vm->vmid = -1;
	mutex_init(&vm->svm_lock);
	xa_init(&vm->svm_dma);
	ret = amdgpu_amdkfd_alloc_kernel_mem(adev, RKFD_AMDGPU_PROCESS_DOORBELLS,
					     AMDGPU_GEM_DOMAIN_DOORBELL, &vm->db_bo,
					     &vm->db_offset, &cpu, false);
	if (ret) {
		kfree(vm->svm_buf);
		kfree(vm);
		return ret;
	}
	/* Where rkfd's doorbell indexes count from (kfd_get_process_doorbells). */
	if (!rkfd_amdgpu_process_doorbell_index(vm->db_offset, &vm->db_index)) {
		amdgpu_amdkfd_free_kernel_mem(adev, &vm->db_bo);
		kfree(vm->svm_buf);
		kfree(vm);
		return -ENOSPC;
	}
	ret = amdgpu_amdkfd_gpuvm_acquire_process_vm(adev, drm_priv_to_vm(file_priv),
						     &vm->process_info, context_id, &vm->ef);
	if (ret) {
		amdgpu_amdkfd_free_kernel_mem(adev, &vm->db_bo);
		kfree(vm->svm_buf);
		kfree(vm);
		return ret;
	}
	vm->filp = get_file(filp);
	rkfd_amdgpu_hws_add_vm(hws, vm);
	*vm_out = vm;
	*pasid = drm_priv_to_vm(file_priv)->pasid;
	*ef_out = dma_fence_get(vm->ef);
	return 0;
}

/*
 * After rkfd signalled the eviction fence and stopped the queues (upstream
 * restore_process_helper): amdgpu validates and maps the VM's BOs again and
 * replaces vm->ef with a new fence if the old one was signalled.  Called
 * under rkfd's Process::inner, never at the same time as acquire or
 * release of the same VM.
 */
int rkfd_amdgpu_restore_process_bos(void *vm_, void **ef_out)
{
	struct rkfd_amdgpu_vm *vm = vm_;
	int ret;

	ret = amdgpu_amdkfd_gpuvm_restore_process_bos(vm->process_info,
						      (struct dma_fence __rcu **)&vm->ef);
	if (ret)
		return ret;
	*ef_out = dma_fence_get(vm->ef);
	return 0;
}

/*
 * amdkfd releases an acquired VM by dropping its file reference: amdgpu's
 * postclose then tears the KFD part of the VM down (amdgpu_vm_fini ->
 * amdgpu_amdkfd_gpuvm_destroy_cb).  rkfd has destroyed the VM's queues.
 */
void rkfd_amdgpu_release_vm(void *vm_)
{
	struct rkfd_amdgpu_vm *vm = vm_;

	rkfd_amdgpu_svm_release(vm);
	rkfd_amdgpu_hws_del_vm(vm->hws, vm);
	amdgpu_amdkfd_free_kernel_mem(vm->adev, &vm->db_bo);
	dma_fence_put(vm->ef);
	fput(vm->filp);
	kfree(vm);
}

/*
 * amdgpu_doorbell_index_on_bar(adev, slice, 0, 8): the BAR dword index of
 * the slice's first doorbell, from which rkfd counts a queue's doorbell
 * (upstream kfd_get_doorbell_dw_offset_in_bar).
 */
u32 rkfd_amdgpu_vm_doorbell_index(void *vm_)
{
	struct rkfd_amdgpu_vm *vm = vm_;

	return vm->db_index;
}

/* The VM's page directory as amdgpu encodes it for the CP (amdgpu_gmc_pd_addr). */
u64 rkfd_amdgpu_process_page_dir(void *vm_)
{
	struct rkfd_amdgpu_vm *vm = vm_;

	return amdgpu_amdkfd_gpuvm_get_process_page_dir(vm->drm_priv);
}

int rkfd_amdgpu_alloc_memory(void *adev, void *vm_, u64 va, u64 size, u32 flags,
			     void **mem, u64 *mmap_offset)
{
	struct rkfd_amdgpu_vm *vm = vm_;

	return amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu(adev, va, size, vm->drm_priv,
						       (struct kgd_mem **)mem,
						       mmap_offset, flags, false);
}

void rkfd_amdgpu_free_memory(void *adev, void *vm_, void *mem)
{
	struct rkfd_amdgpu_vm *vm = vm_;
	u64 size;

	amdgpu_amdkfd_gpuvm_free_memory_of_gpu(adev, mem, vm->drm_priv, &size);
}

int rkfd_amdgpu_map_memory(void *adev, void *vm_, void *mem)
{
	struct rkfd_amdgpu_vm *vm = vm_;
	int ret;

	ret = amdgpu_amdkfd_gpuvm_map_memory_to_gpu(adev, mem, vm->drm_priv);
	if (ret)
		return ret;
	return amdgpu_amdkfd_gpuvm_sync_memory(adev, mem, true);
}

/*
 * As amdkfd's UNMAP_MEMORY_FROM_GPU: unmap, wait for the page-table
 * update, then flush the VM's TLB (kfd_flush_tlb_after_unmap holds for
 * every GC version the bridge attaches), so no queue of the process can
 * still reach the memory when rkfd frees it.
 */
int rkfd_amdgpu_unmap_memory(void *adev, void *vm_, void *mem)
{
	struct rkfd_amdgpu_vm *vm = vm_;
	struct amdgpu_device *a = adev;
	int ret;

	ret = amdgpu_amdkfd_gpuvm_unmap_memory_from_gpu(adev, mem, vm->drm_priv);
	if (ret)
		return ret;
	ret = amdgpu_amdkfd_gpuvm_sync_memory(adev, mem, true);
	if (ret)
		return ret;
	return amdgpu_vm_flush_compute_tlb(adev, drm_priv_to_vm(vm->drm_priv),
					   TLB_FLUSH_HEAVYWEIGHT, a->gfx.xcc_mask);
}

void *rkfd_amdgpu_map_gtt_to_kernel(void *mem, u64 *size)
{
	void *kptr = NULL;

	if (amdgpu_amdkfd_gpuvm_map_bo_to_kernel(mem, &kptr, size, AMDGPU_GEM_DOMAIN_GTT))
		return NULL;
	return kptr;
}

/* Module-wide system-memory accounts (adev NULL), as amdkfd's SVM does. */
int rkfd_amdgpu_reserve_mem_limit(u64 size, u32 flags)
{
	return amdgpu_amdkfd_reserve_mem_limit(NULL, size, flags, -1);
}

void rkfd_amdgpu_unreserve_mem_limit(u64 size, u32 flags)
{
	amdgpu_amdkfd_unreserve_mem_limit(NULL, size, flags, -1);
}

/*
 * SVM VRAM (rkfd's kfd2kgd svm_alloc_vram, svm_alloc_vram_block,
 * svm_free_vram, svm_copy), as upstream's svm_bo and kfd_migrate.c.
 * Built, linked and loaded, never run: make check's real-amdgpu guest has
 * no GPU (bridge/README.md).
 *
 * Pages.  Each svm_alloc_vram / svm_alloc_vram_block call creates one VRAM
 * BO (upstream svm_range_vram_node_new: amdgpu_bo_create, domain VRAM,
 * NO_CPU_ACCESS; a block's BO also VRAM_CONTIGUOUS and aligned to its
 * size), accounted as upstream's svm_migrate_ram_to_vram does with
 * amdgpu_amdkfd_reserve_mem_limit(adev, size, KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
 * 0) (one budget with alloc_memory_of_gpu's VRAM; XCP 0: the bridge
 * attaches whole GPUs), and *pinned*.  Its pages are enumerated with
 * amdgpu's resource cursor: frame = VRAM offset >> PAGE_SHIFT, which is
 * rkfd's device page (rkfd_hmm.c; upstream svm_migrate_addr_to_pfn).
 * Deliberate difference: upstream leaves SVM BOs evictable and has TTM
 * evict them through amdgpu_kfd_ops.evict_svm_bo (svm_range_evict_svm_bo,
 * which migrates the range back to system memory); pinned BOs are never
 * evicted, so the bridge leaves evict_svm_bo NULL.  A GPU whose VRAM is
 * full of SVM pages makes further VRAM allocations fail (rkfd then keeps
 * pages in system memory), and amdgpu's eviction of VRAM before a suspend
 * or hibernation skips pinned BOs: so the suspend op has rkfd migrate
 * every SVM page out of this VRAM first (kgd2kfd_svm_evict_vram,
 * rkfd_amdgpu_dev_suspend), which frees these BOs' pages.
 *
 * svm_free_vram is called from dev_pagemap_ops folio_free in any context
 * and must not sleep: frames map to their BO in an xarray taken with its
 * IRQ-safe spinlock only (XA_FLAGS_LOCK_IRQ; erasing allocates nothing),
 * each BO counts its pages still handed out (atomic), and a BO whose last
 * page comes back goes on a lock-free list for a work item, which unpins
 * and frees it (that sleeps).  The device's exit (after rkfd's, whose
 * memunmap_pages waits for every device page) flushes the work and frees
 * whatever is left.  Locks: the xarray's is a leaf (nothing is called
 * under it).
 */
struct rkfd_amdgpu_svm_vram {
	struct amdgpu_device *adev;
	u64 npages;			/* rkfd's device pages: frames are below */
	struct xarray frames;		/* frame -> its struct rkfd_amdgpu_svm_bo */
	struct llist_head dead;		/* BOs whose pages have all come back */
	struct work_struct release;	/* frees them */
};

/* One VRAM BO of SVM pages (upstream struct svm_range_bo). */
struct rkfd_amdgpu_svm_bo {
	struct amdgpu_bo *bo;
	u64 size;			/* bytes, reserved with amdgpu_amdkfd_reserve_mem_limit */
	atomic_t pages;			/* pages handed out and not freed */
	struct llist_node dead;
};

/* Unpins and frees @sbo and gives its VRAM budget back; sleeps. */
static void rkfd_amdgpu_svm_bo_free(struct rkfd_amdgpu_svm_vram *svm,
				    struct rkfd_amdgpu_svm_bo *sbo)
{
	if (!amdgpu_bo_reserve(sbo->bo, true)) {
		amdgpu_bo_unpin(sbo->bo);
		amdgpu_bo_unreserve(sbo->bo);
	}
	amdgpu_bo_unref(&sbo->bo);
	amdgpu_amdkfd_unreserve_mem_limit(svm->adev, sbo->size, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, 0);
	kfree(sbo);
}

static void rkfd_amdgpu_svm_release_work(struct work_struct *work)
{
	struct rkfd_amdgpu_svm_vram *svm = container_of(work, struct rkfd_amdgpu_svm_vram,
							release);
	struct rkfd_amdgpu_svm_bo *sbo, *next;

	llist_for_each_entry_safe(sbo, next, llist_del_all(&svm->dead), dead)
		rkfd_amdgpu_svm_bo_free(svm, sbo);
}

void *rkfd_amdgpu_svm_vram_create(void *adev, u64 npages)
{
	struct rkfd_amdgpu_svm_vram *svm = kzalloc_obj(*svm, GFP_KERNEL);

	if (!svm)
		return ERR_PTR(-ENOMEM);
	svm->adev = adev;
	svm->npages = npages;
	xa_init_flags(&svm->frames, XA_FLAGS_LOCK_IRQ);
	init_llist_head(&svm->dead);
	INIT_WORK(&svm->release, rkfd_amdgpu_svm_release_work);
	return svm;
}

/*
 * After rkfd's device exit: no frame is handed out any more (its
 * dev_pagemap is gone).  BOs whose pages rkfd never gave back are freed
 * too, with a warning.
 */
void rkfd_amdgpu_svm_vram_destroy(void *svm_)
{
	struct rkfd_amdgpu_svm_vram *svm = svm_;
	struct rkfd_amdgpu_svm_bo *sbo;
	unsigned long frame, left = 0;

	flush_work(&svm->release);
	xa_for_each(&svm->frames, frame, sbo) {
		xa_erase_irq(&svm->frames, frame);
		left++;
		if (atomic_dec_and_test(&sbo->pages))
			rkfd_amdgpu_svm_bo_free(svm, sbo);
	}
	if (left)
		dev_warn(svm->adev->dev, "rkfd_amdgpu: %lu SVM VRAM pages never freed\n", left);
	xa_destroy(&svm->frames);
	kfree(svm);
}

/*
 * One pinned VRAM BO of @npages pages, its frames recorded: in @frames
 * (@order 0), or only the first in *@frames for a block of 2^@order
 * aligned contiguous pages.  -ENOMEM when VRAM or the budget is short.
 */
static int rkfd_amdgpu_svm_bo_new(struct rkfd_amdgpu_svm_vram *svm, u64 npages, u32 order,
				  u64 *frames)
{
	struct amdgpu_device *adev = svm->adev;
	struct amdgpu_bo_param bp = {};
	struct rkfd_amdgpu_svm_bo *sbo;
	struct amdgpu_res_cursor cur;
	u64 size, k = 0, i, f;
	int ret;

	if (!npages || (order && npages != 1ull << order))
		return -EINVAL;
	if (npages > svm->npages)
		return -ENOMEM;
	size = npages << PAGE_SHIFT;
	sbo = kzalloc_obj(*sbo, GFP_KERNEL);
	if (!sbo)
		return -ENOMEM;
	sbo->size = size;
	ret = amdgpu_amdkfd_reserve_mem_limit(adev, size, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, 0);
	if (ret) {
		kfree(sbo);
		return -ENOMEM;
	}
	bp.size = size;
	bp.byte_align = order ? PAGE_SIZE << order : PAGE_SIZE;
	bp.bo_ptr_size = sizeof(struct amdgpu_bo);
	bp.domain = AMDGPU_GEM_DOMAIN_VRAM;
	bp.flags = AMDGPU_GEM_CREATE_NO_CPU_ACCESS |
		   (order ? AMDGPU_GEM_CREATE_VRAM_CONTIGUOUS : 0);
	bp.type = ttm_bo_type_kernel;
	ret = amdgpu_bo_create(adev, &bp, &sbo->bo);
	if (ret)
		goto err_unreserve;
	ret = amdgpu_bo_reserve(sbo->bo, true);
	if (ret)
		goto err_unref;
	ret = amdgpu_bo_pin(sbo->bo, AMDGPU_GEM_DOMAIN_VRAM);
	amdgpu_bo_unreserve(sbo->bo);
	if (ret)
		goto err_unref;

	/* Its pages, chunk by chunk. */
	atomic_set(&sbo->pages, npages);
	amdgpu_res_first(sbo->bo->tbo.resource, 0, size, &cur);
	if (order) {
		/*
		 * A contiguous BO may still be several buddy blocks, each
		 * a chunk of the cursor: the block is the run of chunks
		 * that follow each other.
		 */
		struct amdgpu_res_cursor run = cur;
		u64 contiguous = 0;

		while (run.remaining && run.start == cur.start + contiguous) {
			contiguous += run.size;
			amdgpu_res_next(&run, run.size);
		}
		if (!rkfd_amdgpu_vram_block_ok(cur.start >> PAGE_SHIFT, contiguous >> PAGE_SHIFT,
					       order, svm->npages)) {
			ret = -ENOMEM;
			goto err_unpin;
		}
	}
	while (cur.remaining) {
		if (!rkfd_amdgpu_vram_frames_ok(cur.start >> PAGE_SHIFT, cur.size >> PAGE_SHIFT,
						svm->npages)) {
			ret = -ENOMEM;	/* past rkfd's device pages: unusable */
			goto err_erase;
		}
		for (i = 0; i < cur.size >> PAGE_SHIFT; i++, k++) {
			f = (cur.start >> PAGE_SHIFT) + i;
			ret = xa_insert_irq(&svm->frames, f, sbo, GFP_KERNEL);
			if (ret)
				goto err_erase;
			if (!order)
				frames[k] = f;
			else if (!k)
				*frames = f;
		}
		amdgpu_res_next(&cur, cur.size);
	}
	return 0;

err_erase:
	/* The first k pages are recorded (a block's are first, first + 1, ...). */
	for (i = 0; i < k; i++)
		xa_erase_irq(&svm->frames, order ? *frames + i : frames[i]);
err_unpin:
	if (!amdgpu_bo_reserve(sbo->bo, true)) {
		amdgpu_bo_unpin(sbo->bo);
		amdgpu_bo_unreserve(sbo->bo);
	}
err_unref:
	amdgpu_bo_unref(&sbo->bo);
err_unreserve:
	amdgpu_amdkfd_unreserve_mem_limit(adev, size, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, 0);
	kfree(sbo);
	return -ENOMEM;
}

/* svm_alloc_vram: all or nothing, one BO; 0 pages is nothing to do. */
int rkfd_amdgpu_svm_vram_alloc(void *svm, u64 npages, u64 *frames)
{
	return npages ? rkfd_amdgpu_svm_bo_new(svm, npages, 0, frames) : 0;
}

/* svm_alloc_vram_block: 2^@order contiguous pages, the first a multiple of 2^@order. */
int rkfd_amdgpu_svm_vram_alloc_block(void *svm, u32 order, u64 *first)
{
	/* amdgpu_bo_param.byte_align is an int. */
	if (!order || order >= 32 || (PAGE_SIZE << order) > INT_MAX)
		return -EINVAL;
	return rkfd_amdgpu_svm_bo_new(svm, 1ull << order, order, first);
}

/*
 * svm_free_vram, in any context: never sleeps.  A frame that is not
 * handed out (a double free) is ignored and logged.
 */
void rkfd_amdgpu_svm_vram_free(void *svm_, const u64 *frames, u64 npages)
{
	struct rkfd_amdgpu_svm_vram *svm = svm_;
	struct rkfd_amdgpu_svm_bo *sbo;
	bool dead = false;
	unsigned long flags;
	u64 i, bad = 0;

	xa_lock_irqsave(&svm->frames, flags);
	for (i = 0; i < npages; i++) {
		sbo = frames[i] < svm->npages ? __xa_erase(&svm->frames, frames[i]) : NULL;
		if (!sbo) {
			bad++;
			continue;
		}
		if (atomic_dec_and_test(&sbo->pages)) {
			llist_add(&sbo->dead, &svm->dead);
			dead = true;
		}
	}
	xa_unlock_irqrestore(&svm->frames, flags);
	if (dead)
		queue_work(system_wq, &svm->release);
	if (bad)
		dev_err_ratelimited(svm->adev->dev,
				    "rkfd_amdgpu: %llu SVM VRAM frames freed that are not allocated\n",
				    bad);
}

/* Whether VRAM page @frame is handed out (svm_copy, svm_map: rkfd holds it). */
static bool rkfd_amdgpu_svm_frame_live(struct rkfd_amdgpu_svm_vram *svm, u64 frame)
{
	return frame < svm->npages && xa_load(&svm->frames, frame);
}

/*
 * svm_copy: SDMA as upstream's svm_migrate_copy_to_vram / _to_ram.  The
 * system pages are dma-mapped for the GPU and copied through a GART window,
 * each run of consecutive VRAM frames with one
 * svm_migrate_copy_memory_gart() (amdkfd's, patch 0010: GART window map,
 * amdgpu_copy_buffer on the buffer-funcs ring, serialized under its
 * entity's lock), then the bridge waits for the last copy's fence (the
 * ring runs them in order; upstream svm_migrate_copy_done).  A NULL system
 * page (to VRAM) is copied from the zero page: the VRAM page is cleared.
 * -EINVAL: a frame not handed out, a NULL page to system memory; -EBUSY
 * while amdgpu has no copy engine (buffer funcs off: suspend, reset).
 */
int rkfd_amdgpu_svm_vram_copy(void *svm_, const u64 *frames, void *const *pages, u64 npages,
			      bool to_vram)
{
	struct rkfd_amdgpu_svm_vram *svm = svm_;
	struct amdgpu_device *adev = svm->adev;
	enum dma_data_direction dir = to_vram ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	dma_addr_t zero = DMA_MAPPING_ERROR, *sys;
	struct dma_fence *fence = NULL;
	u64 *vram, i, j, mapped = 0;
	int ret = 0;

	if (!npages)
		return 0;
	if (!adev->mman.buffer_funcs_enabled)
		return -EBUSY;
	for (i = 0; i < npages; i++) {
		if (!rkfd_amdgpu_svm_frame_live(svm, frames[i]))
			return -EINVAL;
		if (!pages[i] && !to_vram)
			return -EINVAL;
	}
	sys = kvmalloc_array(npages, sizeof(*sys), GFP_KERNEL);
	vram = kvmalloc_array(npages, sizeof(*vram), GFP_KERNEL);
	if (!sys || !vram) {
		ret = -ENOMEM;
		goto out_free;
	}
	for (i = 0; i < npages; i++) {
		if (!pages[i] && zero == DMA_MAPPING_ERROR) {
			zero = dma_map_page(adev->dev, ZERO_PAGE(0), 0, PAGE_SIZE, DMA_TO_DEVICE);
			if (dma_mapping_error(adev->dev, zero)) {
				zero = DMA_MAPPING_ERROR;
				ret = -ENOMEM;
				break;
			}
		}
		if (pages[i]) {
			sys[i] = dma_map_page(adev->dev, pages[i], 0, PAGE_SIZE, dir);
			if (dma_mapping_error(adev->dev, sys[i])) {
				ret = -ENOMEM;
				break;
			}
		} else {
			sys[i] = zero;
		}
		vram[i] = frames[i] << PAGE_SHIFT;	/* VRAM offset (svm_migrate_addr) */
		mapped = i + 1;
	}
	for (i = 0; i < npages && !ret; i = j) {
		j = rkfd_amdgpu_frame_run_end(frames, npages, i);
		ret = svm_migrate_copy_memory_gart(adev, sys + i, vram + i, j - i,
						   to_vram ? FROM_RAM_TO_VRAM : FROM_VRAM_TO_RAM,
						   &fence);
	}
	/* Whatever was submitted finishes before its pages are unmapped. */
	if (fence) {
		long r = dma_fence_wait(fence, false);

		if (!ret && r)
			ret = r;
		if (!ret && fence->error)
			ret = fence->error;
		dma_fence_put(fence);
	}
	for (i = 0; i < mapped; i++)
		if (pages[i])
			dma_unmap_page(adev->dev, sys[i], PAGE_SIZE, dir);
	if (zero != DMA_MAPPING_ERROR)
		dma_unmap_page(adev->dev, zero, PAGE_SIZE, DMA_TO_DEVICE);
out_free:
	kvfree(vram);
	kvfree(sys);
	return ret;
}

/*
 * SVM page tables (rkfd's kfd2kgd svm_map / svm_unmap), as amdkfd's
 * svm_range_dma_map_dev + svm_range_map_to_gpu and
 * svm_range_unmap_from_gpu (kfd_svm.c): each system page rkfd maps is
 * dma-mapped for adev->dev and its PTE written by amdgpu_vm_update_range
 * (patch 0009) from that DMA address; a VRAM page of this GPU (one of
 * rkfd_amdgpu_svm_vram's, above) gets a VRAM PTE at vram_base_offset +
 * its VRAM offset.  The VM's svm_dma xarray, indexed by CPU page number,
 * records every PTE the bridge wrote for SVM until the page is unmapped
 * or mapped again: xa_mk_value(DMA address >> PAGE_SHIFT) for a system
 * page (dma-unmapped when the record goes), xa_mk_value(RKFD_AMDGPU_SVM_
 * REC_VRAM | frame) for a VRAM page.
 *
 * Locking.  rkfd calls both under its range lock, which its MMU-notifier
 * callback also takes (rkfd_main.rs, lock 8; svm_unmap also under lock
 * 9), inside memalloc_noreclaim_save().  Upstream maps with the VM's root
 * PD reserved *outside* its range lock (svm_range_reserve_bos, then
 * svm_range_lock), and lockdep knows dma_resv -> mmu_notifier
 * (dma_resv_lockdep), so a blocking dma_resv_lock() here would invert
 * that order.  Instead, under vm->svm_lock:
 *   - svm_map only trylocks the root PD's reservation and answers -EBUSY
 *     when it is contended or the VM is not ready (evicted PTs: rkfd's
 *     restore_process_bos validates them).  rkfd's map retries -EBUSY
 *     with a fresh hmm_range_fault and ends with -EAGAIN, which a fault
 *     answers as "retry later";
 *   - svm_unmap updates the page table with unlocked=true and no
 *     reservation, as upstream's MMU-notifier path does.
 * Order: rkfd range lock -> (rkfd Svms::vms) -> vm->svm_lock -> [root PD
 * resv, trylock only] -> amdgpu's vm->eviction_lock.  A trylock adds no
 * lockdep dependency on the locks held around it.  svm_lock is held only
 * inside memalloc_noreclaim_save() (rkfd's, and the bridge's own for
 * release_vm), so nothing under it enters reclaim, whose MMU notifiers
 * take rkfd's range lock: the bridge's allocations there are GFP_NOWAIT
 * (-ENOMEM is an answer), amdgpu's (page tables, TLB-flush callbacks,
 * fence slots) fail rather than reclaim, as under upstream's
 * svm_range_lock.  Nothing under svm_lock calls into rkfd.
 */
/* A record of svm_dma: a VRAM frame with this bit, else a DMA address >> PAGE_SHIFT. */
#define RKFD_AMDGPU_SVM_REC_VRAM BIT(60)
#define RKFD_AMDGPU_SVM_REC_NONE ULONG_MAX	/* no record (never an xa value) */

/*
 * svm_range_get_pte_flags() (the range's flags 0: not coherent, no
 * GPU_EXEC) for a system page or (@vram) a VRAM page of this GPU, on the
 * GC versions the bridge attaches; 0 for those where upstream's choice
 * depends on what rkfd does not pass (9.4.3+'s MTYPE_LOCAL and XCP
 * memory partitions, 12.1's AID).  Local VRAM: MTYPE_RW on 9.4.1/9.4.2
 * (snooped on 9.4.2 when the GPU's memory is the CPU's,
 * xgmi.connected_to_cpu), MTYPE_NC elsewhere, no SYSTEM bit.
 */
static u64 rkfd_amdgpu_svm_pte_flags(struct amdgpu_device *adev, struct amdgpu_vm *avm,
				     bool vram, bool write)
{
	u32 gc = amdgpu_ip_version(adev, GC_HWIP, 0);
	u64 pte = AMDGPU_PTE_VALID;
	u32 mtype = AMDGPU_VM_MTYPE_NC;
	bool snoop = !vram;

	switch (gc) {
	case IP_VERSION(9, 4, 3):
	case IP_VERSION(9, 4, 4):
	case IP_VERSION(9, 5, 0):
	case IP_VERSION(12, 1, 0):
		return 0;
	case IP_VERSION(9, 4, 1):
		if (vram)
			mtype = AMDGPU_VM_MTYPE_RW;
		break;
	case IP_VERSION(9, 4, 2):
		if (vram) {
			mtype = AMDGPU_VM_MTYPE_RW;
			snoop = adev->gmc.xgmi.connected_to_cpu;
		}
		break;
	default:
		break;
	}
	if (!vram)
		pte |= AMDGPU_PTE_SYSTEM;
	if (snoop)
		pte |= AMDGPU_PTE_SNOOPED;
	if (gc >= IP_VERSION(12, 0, 0))
		pte |= AMDGPU_PTE_IS_PTE;
	amdgpu_gmc_get_vm_pte(adev, avm, NULL, mtype, &pte);
	pte |= AMDGPU_PTE_READABLE;
	if (write)
		pte |= AMDGPU_PTE_WRITEABLE;
	return pte;
}

static unsigned long rkfd_amdgpu_svm_rec_at(struct rkfd_amdgpu_vm *vm, unsigned long index)
{
	void *e = xa_load(&vm->svm_dma, index);

	return e ? xa_to_value(e) : RKFD_AMDGPU_SVM_REC_NONE;
}

/* The DMA address a record holds (to unmap), DMA_MAPPING_ERROR for none or VRAM. */
static dma_addr_t rkfd_amdgpu_svm_rec_dma(unsigned long rec)
{
	if (rec == RKFD_AMDGPU_SVM_REC_NONE || (rec & RKFD_AMDGPU_SVM_REC_VRAM))
		return DMA_MAPPING_ERROR;
	return (dma_addr_t)rec << PAGE_SHIFT;
}

/*
 * Clears the PTEs of CPU pages [first, last] without the reservation
 * (upstream svm_range_unmap_from_gpu: unlocked, its MMU-notifier path),
 * waits for the update and flushes the TLB (kfd_flush_tlb).
 */
static int rkfd_amdgpu_svm_clear(struct rkfd_amdgpu_vm *vm, unsigned long first,
				 unsigned long last)
{
	struct amdgpu_vm *avm = drm_priv_to_vm(vm->drm_priv);
	struct dma_fence *fence = NULL;
	int ret;

	ret = amdgpu_vm_update_range(vm->adev, avm, false, true, true, false, NULL,
				     (u64)first * AMDGPU_GPU_PAGES_IN_CPU_PAGE,
				     (u64)(last + 1) * AMDGPU_GPU_PAGES_IN_CPU_PAGE - 1,
				     vm->adev->gmc.init_pte_flags, 0, 0, NULL, NULL, &fence);
	if (fence) {
		dma_fence_wait(fence, false);
		dma_fence_put(fence);
	}
	amdgpu_vm_flush_compute_tlb(vm->adev, avm, TLB_FLUSH_HEAVYWEIGHT,
				    vm->adev->gfx.xcc_mask);
	return ret;
}

/* dma-unmaps and forgets the recorded pages of [first, last]; under svm_lock. */
static void rkfd_amdgpu_svm_forget(struct rkfd_amdgpu_vm *vm, unsigned long first,
				   unsigned long last)
{
	unsigned long index;
	void *e;

	xa_for_each_range(&vm->svm_dma, index, e, first, last) {
		dma_addr_t dma = rkfd_amdgpu_svm_rec_dma(xa_to_value(e));

		if (dma != DMA_MAPPING_ERROR)
			dma_unmap_page(vm->adev->dev, dma, PAGE_SIZE, DMA_BIDIRECTIONAL);
		xa_erase(&vm->svm_dma, index);
	}
}

/*
 * One batch of svm_map, root PD reserved, in vm->svm_buf: dma-maps the
 * new system pages and records every new page (old[i]: what was recorded
 * before, RKFD_AMDGPU_SVM_REC_NONE for nothing), writes the PTEs run by
 * run (rkfd_amdgpu_svm_run_end: one kind per amdgpu_vm_update_range, as
 * upstream's domains; dma[i] the PTE address, a DMA address or
 * vram_base_offset + the VRAM offset), brings the PDEs up to date, waits
 * and flushes the TLB, then dma-unmaps what the batch replaced.  On an
 * error the batch's pages end up unmapped and forgotten.
 */
static int rkfd_amdgpu_svm_map_batch(struct rkfd_amdgpu_vm *vm, unsigned long first,
				     unsigned long n, const u64 *ptes)
{
	dma_addr_t *dma = vm->svm_buf->dma;
	unsigned long *old = vm->svm_buf->old, rec;
	u8 *op = vm->svm_buf->op;
	struct amdgpu_device *adev = vm->adev;
	struct amdgpu_vm *avm = drm_priv_to_vm(vm->drm_priv);
	struct dma_fence *fence;
	unsigned long i, j;
	int ret = 0;

	for (i = 0; i < n; i++) {
		u64 frame = ptes[i] & RKFD_AMDGPU_SVM_FRAME;

		old[i] = rkfd_amdgpu_svm_rec_at(vm, first + i);
		dma[i] = 0;
		op[i] = rkfd_amdgpu_svm_op_of(ptes[i], old[i] != RKFD_AMDGPU_SVM_REC_NONE);
		if (!rkfd_amdgpu_svm_op_maps(op[i]))
			continue;	/* a CLEAR is forgotten once its PTE is (below) */
		if (rkfd_amdgpu_svm_op_vram(op[i])) {
			dma[i] = rkfd_amdgpu_svm_vram_addr(adev->vm_manager.vram_base_offset,
							   frame, PAGE_SHIFT);
			rec = RKFD_AMDGPU_SVM_REC_VRAM | frame;
		} else {
			dma[i] = dma_map_page(adev->dev, pfn_to_page(frame), 0, PAGE_SIZE,
					      DMA_BIDIRECTIONAL);
			if (dma_mapping_error(adev->dev, dma[i])) {
				ret = -ENOMEM;
				break;
			}
			rec = dma[i] >> PAGE_SHIFT;
		}
		ret = xa_err(xa_store(&vm->svm_dma, first + i, xa_mk_value(rec), GFP_NOWAIT));
		if (ret) {
			if (!rkfd_amdgpu_svm_op_vram(op[i]))
				dma_unmap_page(adev->dev, dma[i], PAGE_SIZE, DMA_BIDIRECTIONAL);
			break;
		}
	}
	if (ret) {
		/* Nothing written to the page table yet: put the record back. */
		for (j = 0; j < i; j++) {
			if (!rkfd_amdgpu_svm_op_maps(op[j]))
				continue;
			if (!rkfd_amdgpu_svm_op_vram(op[j]))
				dma_unmap_page(adev->dev, dma[j], PAGE_SIZE, DMA_BIDIRECTIONAL);
			if (old[j] == RKFD_AMDGPU_SVM_REC_NONE)
				xa_erase(&vm->svm_dma, first + j);
			else	/* a slot that exists: no allocation */
				xa_store(&vm->svm_dma, first + j, xa_mk_value(old[j]), GFP_NOWAIT);
		}
		return ret;
	}

	for (i = 0; i < n && !ret; i = j) {
		bool clear = op[i] == RKFD_AMDGPU_SVM_CLEAR;
		u64 flags;

		j = rkfd_amdgpu_svm_run_end(op, n, i);
		if (op[i] == RKFD_AMDGPU_SVM_SKIP)
			continue;
		flags = clear ? adev->gmc.init_pte_flags :
			rkfd_amdgpu_svm_pte_flags(adev, avm, rkfd_amdgpu_svm_op_vram(op[i]),
						  op[i] == RKFD_AMDGPU_SVM_SYS_RW ||
						  op[i] == RKFD_AMDGPU_SVM_VRAM_RW);
		/* vram_base: unused with pages_addr (the addresses are whole). */
		ret = amdgpu_vm_update_range(adev, avm, false, false, true, true, NULL,
					     (u64)(first + i) * AMDGPU_GPU_PAGES_IN_CPU_PAGE,
					     (u64)(first + j) * AMDGPU_GPU_PAGES_IN_CPU_PAGE - 1,
					     flags, clear ? 0 : (u64)i << PAGE_SHIFT,
					     0, NULL, clear ? NULL : dma, &avm->last_update);
	}
	if (!ret)
		ret = amdgpu_vm_update_pdes(adev, avm, false);
	fence = dma_fence_get(avm->last_update);
	dma_fence_wait(fence, false);
	dma_fence_put(fence);
	amdgpu_vm_flush_compute_tlb(adev, avm, TLB_FLUSH_HEAVYWEIGHT, adev->gfx.xcc_mask);
	for (i = 0; i < n; i++)
		if (op[i] == RKFD_AMDGPU_SVM_CLEAR)
			xa_erase(&vm->svm_dma, first + i);
	if (ret) {
		/* Part of the batch may point at the new pages: unmap all of it. */
		rkfd_amdgpu_svm_clear(vm, first, first + n - 1);
		rkfd_amdgpu_svm_forget(vm, first, first + n - 1);
	}
	for (i = 0; i < n; i++) {
		dma_addr_t d = rkfd_amdgpu_svm_rec_dma(old[i]);

		if (d != DMA_MAPPING_ERROR)
			dma_unmap_page(adev->dev, d, PAGE_SIZE, DMA_BIDIRECTIONAL);
	}
	return ret;
}

/*
 * rkfd's svm_map: @npages CPU pages at @va, page i as ptes[i]
 * (RKFD_AMDGPU_SVM_*): a system page, or a VRAM page @svm handed out.
 * -EINVAL for a bad range or frame (a VRAM frame not handed out, e.g.
 * another GPU's), -EBUSY for a contended or not-ready VM (see above),
 * -ENOMEM, -EOPNOTSUPP on a GC version whose PTE flags are not derived.
 */
int rkfd_amdgpu_svm_map(void *svm, void *vm_, u64 va, u64 npages, const u64 *ptes)
{
	struct rkfd_amdgpu_vm *vm = vm_;
	struct amdgpu_device *adev = vm->adev;
	struct amdgpu_vm *avm = drm_priv_to_vm(vm->drm_priv);
	struct dma_resv *resv = avm->root.bo->tbo.base.resv;
	u64 max = adev->vm_manager.max_pfn / AMDGPU_GPU_PAGES_IN_CPU_PAGE;
	u64 first = va >> PAGE_SHIFT, i, done;
	unsigned int noreclaim;
	int ret;

	if (!npages || !PAGE_ALIGNED(va) || npages > max || first > max - npages)
		return -EINVAL;
	for (i = 0; i < npages; i++) {
		u64 frame = ptes[i] & RKFD_AMDGPU_SVM_FRAME;

		if (!(ptes[i] & RKFD_AMDGPU_SVM_VALID))
			continue;
		if (ptes[i] & RKFD_AMDGPU_SVM_VRAM) {
			if (!svm || !rkfd_amdgpu_svm_frame_live(svm, frame))
				return -EINVAL;
		} else if (!pfn_valid(frame) || is_zone_device_page(pfn_to_page(frame))) {
			return -EINVAL;
		}
	}
	if (!rkfd_amdgpu_svm_pte_flags(adev, avm, false, false))
		return -EOPNOTSUPP;
	noreclaim = memalloc_noreclaim_save();
	mutex_lock(&vm->svm_lock);
	if (!dma_resv_trylock(resv)) {
		ret = -EBUSY;
		goto out_unlock;
	}
	/* amdgpu_vm_lock_pd(vm, exec, 2) of svm_range_reserve_bos. */
	ret = dma_resv_reserve_fences(resv, 2);
	if (!ret && !amdgpu_vm_ready(avm))
		ret = -EBUSY;
	for (done = 0; !ret && done < npages; done += RKFD_AMDGPU_SVM_BATCH)
		ret = rkfd_amdgpu_svm_map_batch(vm, first + done,
						min_t(u64, npages - done, RKFD_AMDGPU_SVM_BATCH),
						ptes + done);
	dma_resv_unlock(resv);
out_unlock:
	mutex_unlock(&vm->svm_lock);
	memalloc_noreclaim_restore(noreclaim);
	return ret;
}

/*
 * rkfd's svm_unmap: the recorded pages of [@va, @va + @npages pages) (a
 * range with none, e.g. never mapped on this GPU, costs no page-table
 * update).  A failed update (the VM being evicted: amdgpu_vm_update_range
 * -EBUSY) is logged and the pages are dma-unmapped all the same, as
 * upstream's svm_range_evict ignores it: the process's queues are off the
 * GPU while its VM is evicted.
 */
void rkfd_amdgpu_svm_unmap(void *vm_, u64 va, u64 npages)
{
	struct rkfd_amdgpu_vm *vm = vm_;
	unsigned long first = va >> PAGE_SHIFT, last, index;
	unsigned int noreclaim;
	int ret;

	if (!npages || !PAGE_ALIGNED(va) || first + npages < first)
		return;
	last = first + npages - 1;
	noreclaim = memalloc_noreclaim_save();
	mutex_lock(&vm->svm_lock);
	index = first;
	if (xa_find(&vm->svm_dma, &index, last, XA_PRESENT)) {
		ret = rkfd_amdgpu_svm_clear(vm, first, last);
		if (ret)
			dev_warn_ratelimited(vm->adev->dev,
					     "rkfd_amdgpu: SVM unmap of %#llx+%llu pages: %d\n",
					     va, npages, ret);
		rkfd_amdgpu_svm_forget(vm, first, last);
	}
	mutex_unlock(&vm->svm_lock);
	memalloc_noreclaim_restore(noreclaim);
}

/*
 * release_vm with SVM pages still recorded (rkfd unmaps its ranges
 * first; this is the safety net): the render-node file's VM outlives the
 * release, so its PTEs must not keep the DMA addresses.
 */
static void rkfd_amdgpu_svm_release(struct rkfd_amdgpu_vm *vm)
{
	unsigned long index, start = 0, next = 0;
	unsigned int noreclaim;
	bool run = false;
	void *e;

	noreclaim = memalloc_noreclaim_save();
	mutex_lock(&vm->svm_lock);
	/* Each run of consecutive pages, one page-table update. */
	xa_for_each(&vm->svm_dma, index, e) {
		if (run && index != next)
			rkfd_amdgpu_svm_clear(vm, start, next - 1);
		if (!run || index != next)
			start = index;
		run = true;
		next = index + 1;
	}
	if (run) {
		rkfd_amdgpu_svm_clear(vm, start, next - 1);
		rkfd_amdgpu_svm_forget(vm, 0, ULONG_MAX);
	}
	mutex_unlock(&vm->svm_lock);
	memalloc_noreclaim_restore(noreclaim);
	xa_destroy(&vm->svm_dma);
	mutex_destroy(&vm->svm_lock);
	kfree(vm->svm_buf);
}

/*
 * Graphics interop, as amdkfd's GET_DMABUF_INFO ioctl: amdgpu allocates
 * the metadata copy, the bridge hands it to rkfd's buffer and frees it.
 * The BO's XCP partition is not looked at: the bridge attaches whole GPUs.
 */
int rkfd_amdgpu_get_dmabuf_info(void *adev, int fd, void **owner, u64 *size, u32 *flags,
				void *metadata, u32 buffer_size, u32 *metadata_size)
{
	struct amdgpu_device *dmabuf_adev = NULL;
	void *buf = NULL;
	s8 xcp_id;
	int ret;

	ret = amdgpu_amdkfd_get_dmabuf_info(adev, fd, &dmabuf_adev, size, &buf, buffer_size,
					    metadata_size, flags, &xcp_id);
	if (!ret && buf && *metadata_size <= buffer_size)
		memcpy(metadata, buf, *metadata_size);
	kfree(buf);
	*owner = dmabuf_adev;
	return ret;
}

/*
 * amdkfd's IMPORT_DMABUF: amdgpu turns the fd into a GEM handle of its KFD
 * DRM client and the BO into a kgd_mem of the VM, with the alloc flags
 * upstream gives an import.
 */
int rkfd_amdgpu_import_dmabuf(void *adev, void *vm_, int fd, u64 va, void **mem,
			      u64 *size, u32 *flags, u64 *mmap_offset)
{
	struct rkfd_amdgpu_vm *vm = vm_;
	struct kgd_mem *kmem;
	int ret;

	if (!PAGE_ALIGNED(va))
		return -EINVAL;
	ret = amdgpu_amdkfd_gpuvm_import_dmabuf_fd(adev, fd, va, vm->drm_priv, &kmem, size,
						   mmap_offset);
	if (ret)
		return ret;
	*flags = kmem->alloc_flags;
	*mem = kmem;
	return 0;
}

static const struct kfd2kgd_calls *rkfd_amdgpu_f2g_table(enum rkfd_amdgpu_f2g f2g)
{
	switch (f2g) {
	case RKFD_AMDGPU_F2G_GFX_V9:
		return &gfx_v9_kfd2kgd;
	case RKFD_AMDGPU_F2G_ARCTURUS:
		return &arcturus_kfd2kgd;
	case RKFD_AMDGPU_F2G_ALDEBARAN:
		return &aldebaran_kfd2kgd;
	case RKFD_AMDGPU_F2G_GC_9_4_3:
		return &gc_9_4_3_kfd2kgd;
	case RKFD_AMDGPU_F2G_GFX_V10:
		return &gfx_v10_kfd2kgd;
	case RKFD_AMDGPU_F2G_GFX_V10_3:
		return &gfx_v10_3_kfd2kgd;
	case RKFD_AMDGPU_F2G_GFX_V11:
		return &gfx_v11_kfd2kgd;
	case RKFD_AMDGPU_F2G_GFX_V12:
		return &gfx_v12_kfd2kgd;
	case RKFD_AMDGPU_F2G_GFX_V12_1:
		return &gfx_v12_1_kfd2kgd;
	default:
		return NULL;
	}
}

/* Where a compute MQD layout keeps what the HIQ load needs. */
struct rkfd_amdgpu_mqd_layout {
	size_t size, base_addr_lo, base_addr_hi, doorbell_control;
};

#define RKFD_AMDGPU_MQD_LAYOUT(type) ((struct rkfd_amdgpu_mqd_layout) {		\
	.size = sizeof(struct type),						\
	.base_addr_lo = offsetof(struct type, cp_mqd_base_addr_lo),		\
	.base_addr_hi = offsetof(struct type, cp_mqd_base_addr_hi),		\
	.doorbell_control = offsetof(struct type, cp_hqd_pq_doorbell_control),	\
})

static bool rkfd_amdgpu_mqd_layout(enum rkfd_amdgpu_mqd mqd, struct rkfd_amdgpu_mqd_layout *l)
{
	switch (mqd) {
	case RKFD_AMDGPU_MQD_V9:
		*l = RKFD_AMDGPU_MQD_LAYOUT(v9_mqd);
		return true;
	case RKFD_AMDGPU_MQD_V10:
		*l = RKFD_AMDGPU_MQD_LAYOUT(v10_compute_mqd);
		return true;
	case RKFD_AMDGPU_MQD_V11:
		*l = RKFD_AMDGPU_MQD_LAYOUT(v11_compute_mqd);
		return true;
	case RKFD_AMDGPU_MQD_V12:
		*l = RKFD_AMDGPU_MQD_LAYOUT(v12_compute_mqd);
		return true;
	default:
		return false;
	}
}

/* One kernel object of rkfd's (alloc_gtt_mem). */
struct rkfd_amdgpu_gtt {
	struct list_head link;		/* in rkfd_amdgpu_hws.gtt */
	void *bo;			/* amdgpu_amdkfd_alloc_kernel_mem's handle */
	u64 gpu_addr, size;
	void *cpu_ptr;
};

/*
 * The HWS path of one GPU (see rkfd_amdgpu.h), and its user queues.
 *
 * Lock order (the amdgpu side's only locks; the rkfd side's
 * rkfd_amdgpu_devs_lock and ih_lock are never held with them):
 * queue_lock, then gtt_lock.  No rkfd call is made under either.  Under
 * queue_lock the bridge calls amdgpu's kfd2kgd table (its srbm and KIQ
 * locks), amdgpu_amdkfd_alloc_kernel_mem/free_kernel_mem,
 * amdgpu_vm_flush_compute_tlb and, for MES, down_read_trylock of the
 * reset domain's semaphore and amdgpu_mes_lock, as upstream calls them
 * under dqm_lock; an SDMA load reads the write pointer from user memory
 * with page faults disabled (read_user_wptr), and no mmap path takes
 * queue_lock (mmap_doorbells reads only what acquire_vm fixed).  Under
 * gtt_lock no amdgpu call is made.
 */
struct rkfd_amdgpu_hws {
	struct amdgpu_device *adev;
	const struct kfd2kgd_calls *f2g;	/* NULL: amdkfd has no table either */
	enum rkfd_amdgpu_mqd mqd;
	/* The kernel doorbell page (upstream kfd->doorbells). */
	void *db_bo;
	u64 db_offset;				/* bytes into the doorbell BAR */
	u32 __iomem *db_ptr;
	struct mutex gtt_lock;			/* inner lock: gtt, hiq_* */
	struct list_head gtt;			/* struct rkfd_amdgpu_gtt, under gtt_lock */
	bool hiq_mapped;			/* under gtt_lock */
	u32 hiq_doorbell;			/* its BAR index, under gtt_lock */
	/* User queues (amdgpu's kgd2kfd_shared_resources). */
	u32 kfd_vmids;				/* compute_vmid_bitmap */
	DECLARE_BITMAP(kfd_queues, AMDGPU_MAX_QUEUES);	/* cp_queue_bitmap */
	struct mutex queue_lock;		/* outer lock: VMIDs, VMs, queues */
	u32 vmids_used;				/* under queue_lock */
	struct list_head vms;			/* struct rkfd_amdgpu_vm, under queue_lock */
	struct list_head queues;		/* struct rkfd_amdgpu_queue, under queue_lock */
	struct list_head mes_queues;		/* struct rkfd_amdgpu_mes_queue, under queue_lock */
};

static struct amdgpu_device *rkfd_amdgpu_hws_adev(struct rkfd_amdgpu_hws *hws)
{
	return hws->adev;
}

static void rkfd_amdgpu_hws_add_vm(struct rkfd_amdgpu_hws *hws, struct rkfd_amdgpu_vm *vm)
{
	mutex_lock(&hws->queue_lock);
	list_add(&vm->link, &hws->vms);
	mutex_unlock(&hws->queue_lock);
}

/*
 * The handle acquire_vm gave rkfd for the VM of @pasid, or NULL.  Only its
 * value is used after queue_lock is dropped: rkfd compares it with the
 * process's VMs and never dereferences it (kgd2kfd_svm_fault), so a VM
 * released meanwhile makes the fault fail, nothing worse.
 */
void *rkfd_amdgpu_vm_of_pasid(void *hws_, u32 pasid)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_vm *vm, *found = NULL;

	mutex_lock(&hws->queue_lock);
	list_for_each_entry(vm, &hws->vms, link) {
		if (drm_priv_to_vm(vm->drm_priv)->pasid == pasid) {
			found = vm;
			break;
		}
	}
	mutex_unlock(&hws->queue_lock);
	return found;
}

/*
 * As upstream kfd_doorbell_init(): one page of the doorbell BAR for the
 * kernel queues.  amdgpu_bo_create_kernel() is not exported;
 * amdgpu_amdkfd_alloc_kernel_mem() creates, pins and maps the same BO in
 * the DOORBELL domain, where its GPU offset is its BAR offset.
 */
void *rkfd_amdgpu_hws_create(void *adev_, const void *res_, u32 reserved_hqds[4],
			     u32 *num_cp_queues)
{
	const struct kgd2kfd_shared_resources *res = res_;
	struct amdgpu_device *adev = adev_;
	u32 kfd_queues[RKFD_AMDGPU_MAX_QUEUES / 32];
	u32 gc = amdgpu_ip_version(adev, GC_HWIP, 0);
	enum rkfd_amdgpu_f2g f2g;
	struct rkfd_amdgpu_hws *hws;
	void *cpu = NULL;
	int ret;

	BUILD_BUG_ON(RKFD_AMDGPU_DOORBELL_OFFSET_MASK !=
		     CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET_MASK);
	BUILD_BUG_ON(RKFD_AMDGPU_DOORBELL_OFFSET_SHIFT !=
		     CP_HQD_PQ_DOORBELL_CONTROL__DOORBELL_OFFSET__SHIFT);
	BUILD_BUG_ON(RKFD_AMDGPU_DOORBELL_PAGE != PAGE_SIZE);
	BUILD_BUG_ON(RKFD_AMDGPU_DOORBELL_OFFSET_MASK !=
		     SDMA0_RLC0_DOORBELL_OFFSET__OFFSET_MASK);
	BUILD_BUG_ON(RKFD_AMDGPU_DOORBELL_OFFSET_SHIFT !=
		     SDMA0_RLC0_DOORBELL_OFFSET__OFFSET__SHIFT);
	BUILD_BUG_ON(RKFD_AMDGPU_SDMA_RB_VMID_MASK != SDMA0_RLC0_RB_CNTL__RB_VMID_MASK);
	BUILD_BUG_ON(RKFD_AMDGPU_SDMA_RB_VMID_SHIFT != SDMA0_RLC0_RB_CNTL__RB_VMID__SHIFT);
	BUILD_BUG_ON(RKFD_AMDGPU_MAX_QUEUES != AMDGPU_MAX_QUEUES);

	hws = kzalloc_obj(*hws, GFP_KERNEL);
	if (!hws)
		return ERR_PTR(-ENOMEM);
	hws->adev = adev;
	f2g = rkfd_amdgpu_f2g_of(IP_VERSION_MAJ(gc), IP_VERSION_MIN(gc), IP_VERSION_REV(gc));
	hws->f2g = rkfd_amdgpu_f2g_table(f2g);
	hws->mqd = rkfd_amdgpu_mqd_of(f2g);
	mutex_init(&hws->gtt_lock);
	INIT_LIST_HEAD(&hws->gtt);
	hws->kfd_vmids = res->compute_vmid_bitmap;
	bitmap_copy(hws->kfd_queues, res->cp_queue_bitmap, AMDGPU_MAX_QUEUES);
	bitmap_to_arr32(kfd_queues, res->cp_queue_bitmap, AMDGPU_MAX_QUEUES);
	rkfd_amdgpu_reserved_hqds(kfd_queues, adev->gfx.mec.num_pipe_per_mec *
				  adev->gfx.mec.num_queue_per_pipe, reserved_hqds);
	*num_cp_queues = rkfd_amdgpu_cp_queues(kfd_queues);
	mutex_init(&hws->queue_lock);
	INIT_LIST_HEAD(&hws->vms);
	INIT_LIST_HEAD(&hws->queues);
	INIT_LIST_HEAD(&hws->mes_queues);
	ret = amdgpu_amdkfd_alloc_kernel_mem(adev, RKFD_AMDGPU_DOORBELL_PAGE,
					     AMDGPU_GEM_DOMAIN_DOORBELL, &hws->db_bo,
					     &hws->db_offset, &cpu, false);
	if (ret) {
		dev_err(adev->dev, "rkfd_amdgpu: no kernel doorbell page (%d)\n", ret);
		mutex_destroy(&hws->queue_lock);
		mutex_destroy(&hws->gtt_lock);
		kfree(hws);
		return ERR_PTR(ret);
	}
	hws->db_ptr = (u32 __iomem *)cpu;
	return hws;
}

void rkfd_amdgpu_hws_destroy(void *hws_)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_gtt *g, *tmp;

	/* rkfd has freed its objects; anything left would be a leak of its. */
	if (hws->hiq_mapped)
		amdgpu_amdkfd_unmap_hiq(hws->adev, hws->hiq_doorbell, 0);
	list_for_each_entry_safe(g, tmp, &hws->gtt, link) {
		dev_warn(hws->adev->dev, "rkfd_amdgpu: GTT object of %llu bytes not freed\n",
			 g->size);
		amdgpu_amdkfd_free_kernel_mem(hws->adev, &g->bo);
		list_del(&g->link);
		kfree(g);
	}
	amdgpu_amdkfd_free_kernel_mem(hws->adev, &hws->db_bo);
	/* rkfd has released its VMs and destroyed their queues. */
	if (!list_empty(&hws->vms) || !list_empty(&hws->queues) || !list_empty(&hws->mes_queues))
		dev_warn(hws->adev->dev, "rkfd_amdgpu: VMs or queues left at device exit\n");
	mutex_destroy(&hws->queue_lock);
	mutex_destroy(&hws->gtt_lock);
	kfree(hws);
}

/*
 * Upstream's kfd_gtt_sa_allocate() sub-allocates one such BO; here each
 * object is its own (rkfd allocates three pages and one runlist IB per
 * GPU).  Zeroed, as rkfd's interface promises.
 */
int rkfd_amdgpu_gtt_alloc(void *hws_, u64 size, void **mem, u64 *gpu_addr, void **cpu_ptr)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_gtt *g;
	int ret;

	if (!size || size > SZ_1G)
		return -EINVAL;
	g = kzalloc_obj(*g, GFP_KERNEL);
	if (!g)
		return -ENOMEM;
	ret = amdgpu_amdkfd_alloc_kernel_mem(hws->adev, size, AMDGPU_GEM_DOMAIN_GTT, &g->bo,
					     &g->gpu_addr, &g->cpu_ptr, false);
	if (ret) {
		kfree(g);
		return ret;
	}
	g->size = size;
	memset(g->cpu_ptr, 0, size);
	mutex_lock(&hws->gtt_lock);
	list_add(&g->link, &hws->gtt);
	mutex_unlock(&hws->gtt_lock);
	*mem = g;
	*gpu_addr = g->gpu_addr;
	*cpu_ptr = g->cpu_ptr;
	return 0;
}

/*
 * rkfd frees its kernel objects only when its HWS is gone (device exit, a
 * failed start), and has no call that unloads the HIQ: the first free
 * unmaps it through the KIQ, as upstream's kernel_queue_uninit ->
 * destroy_hiq_mqd (amdgpu_amdkfd_unmap_hiq), before the CP could read
 * freed memory.
 */
void rkfd_amdgpu_gtt_free(void *hws_, void *mem)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_gtt *g = mem;
	bool unmap;
	int ret;

	mutex_lock(&hws->gtt_lock);
	unmap = hws->hiq_mapped;
	hws->hiq_mapped = false;
	list_del(&g->link);
	mutex_unlock(&hws->gtt_lock);
	if (unmap) {
		ret = amdgpu_amdkfd_unmap_hiq(hws->adev, hws->hiq_doorbell, 0);
		if (ret)
			dev_warn(hws->adev->dev, "rkfd_amdgpu: unmapping the HIQ failed (%d)\n",
				 ret);
	}
	amdgpu_amdkfd_free_kernel_mem(hws->adev, &g->bo);
	kfree(g);
}

/* The kernel mapping of @size bytes of GTT at @gpu_addr, if rkfd owns them. */
static void *rkfd_amdgpu_gtt_cpu(struct rkfd_amdgpu_hws *hws, u64 gpu_addr, u64 size)
{
	struct rkfd_amdgpu_gtt *g;
	void *cpu = NULL;

	mutex_lock(&hws->gtt_lock);
	list_for_each_entry(g, &hws->gtt, link) {
		if (gpu_addr >= g->gpu_addr && size <= g->size &&
		    gpu_addr - g->gpu_addr <= g->size - size) {
			cpu = g->cpu_ptr + (gpu_addr - g->gpu_addr);
			break;
		}
	}
	mutex_unlock(&hws->gtt_lock);
	return cpu;
}

/*
 * kfd2kgd hqd_dump / hqd_sdma_dump of the GPU's table (kgd_gfx_v9_hqd_dump,
 * kgd_arcturus_hqd_sdma_dump, hqd_dump_v10_3, ...): amdgpu kmallocs the
 * (byte offset, value) pairs it read; they are copied into rkfd's array of
 * @max_regs and freed.  One XCC (instance 0), as rkfd's devices.
 */
int rkfd_amdgpu_hqd_dump(void *hws_, bool sdma, u32 a, u32 b, u32 (*dump)[2], u32 max_regs,
			 u32 *n_regs)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	u32 (*regs)[2] = NULL;
	u32 n = 0;
	int ret;

	if (!hws->f2g)
		return -EOPNOTSUPP;
	if (sdma && hws->f2g->hqd_sdma_dump)
		ret = hws->f2g->hqd_sdma_dump(hws->adev, a, b, &regs, &n);
	else if (!sdma && hws->f2g->hqd_dump)
		ret = hws->f2g->hqd_dump(hws->adev, a, b, &regs, &n, 0);
	else
		return -EOPNOTSUPP;
	if (ret)
		return ret;
	if (n > max_regs) {
		ret = -ENOSPC;
	} else {
		memcpy(dump, regs, n * sizeof(*regs));
		*n_regs = n;
	}
	kfree(regs);
	return ret;
}

/*
 * kfd2kgd hiq_mqd_load of the GPU's table (kgd_gfx_v9_hiq_mqd_load, ...),
 * which maps the HIQ through amdgpu's KIQ: MAP_QUEUES with the MQD's GART
 * address, its write-pointer poll address and the doorbell's BAR index.
 * The CP reads the MQD from GART, so the copy there (an object of
 * rkfd's, at cp_mqd_base_addr) gets the BAR index in its doorbell control
 * as well as @mqd, which only the table's call reads.  The KIQ packet is
 * committed, not waited for, as upstream.
 */
int rkfd_amdgpu_hiq_mqd_load(void *hws_, void *mqd, u32 mqd_size, u32 pipe_id, u32 queue_id,
			     u32 doorbell_dword)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_mqd_layout l;
	u32 bar_index, ctl, lo, hi;
	void *gart_copy;
	int ret;

	if (!hws->f2g || !hws->f2g->hiq_mqd_load || !rkfd_amdgpu_mqd_layout(hws->mqd, &l))
		return -EOPNOTSUPP;
	if (mqd_size < l.size ||
	    !rkfd_amdgpu_kernel_doorbell(hws->db_offset, doorbell_dword, &bar_index))
		return -EINVAL;
	memcpy(&ctl, mqd + l.doorbell_control, sizeof(ctl));
	memcpy(&lo, mqd + l.base_addr_lo, sizeof(lo));
	memcpy(&hi, mqd + l.base_addr_hi, sizeof(hi));
	if (!rkfd_amdgpu_doorbell_control(ctl, doorbell_dword, bar_index, &ctl))
		return -EINVAL;
	gart_copy = rkfd_amdgpu_gtt_cpu(hws, (u64)hi << 32 | lo, l.size);
	if (!gart_copy)
		return -EINVAL;
	memcpy(mqd + l.doorbell_control, &ctl, sizeof(ctl));
	memcpy(gart_copy + l.doorbell_control, &ctl, sizeof(ctl));
	ret = hws->f2g->hiq_mqd_load(hws->adev, mqd, pipe_id, queue_id, bar_index, 0);
	if (ret)
		return ret;
	mutex_lock(&hws->gtt_lock);
	hws->hiq_mapped = true;
	hws->hiq_doorbell = bar_index;
	mutex_unlock(&hws->gtt_lock);
	return 0;
}

/* Upstream kq_submit_packet -> write_kernel_doorbell64. */
void rkfd_amdgpu_ring_kernel_doorbell(void *hws_, u32 doorbell_dword, u64 value)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	u32 bar_index;

	if (!rkfd_amdgpu_kernel_doorbell(hws->db_offset, doorbell_dword, &bar_index)) {
		pr_warn_once("rkfd_amdgpu: kernel doorbell %u out of its page\n", doorbell_dword);
		return;
	}
	/* The ring and write-pointer stores (USWC GTT) land before the doorbell. */
	wmb();
	writeq(value, (u64 __iomem *)(hws->db_ptr + doorbell_dword));
}

/*
 * User queues.  Without the HWS (rkfd's sched_policy 2) rkfd loads each
 * queue's MQD into a hardware slot itself, as upstream's no-HWS device
 * queue manager does (kfd_device_queue_manager.c create_queue_nocpsch /
 * destroy_queue_nocpsch_locked, kfd_mqd_manager_v9.c load_mqd /
 * destroy_mqd and the SDMA variants).  rkfd's MQDs name the doorbell as
 * amdgpu's table takes it, by its BAR index (from the slice index
 * rkfd_amdgpu_vm_doorbell_index reports); the bridge only checks
 * that it is a doorbell of the VM's slice (rkfd_amdgpu_process_doorbell_ok).
 * They differ from what the table takes in two ways the bridge makes up
 * for:
 *
 *   - the VMID is 0: the bridge binds one of the KFD's VMIDs to the VM
 *     while it has a queue loaded (upstream allocate_vmid /
 *     deallocate_vmid: PASID mapping, SH_MEM settings, page-table base,
 *     TLB flush) and writes it into the MQD (cp_hqd_vmid; SDMA RB_VMID);
 *   - a compute MQD is kernel memory with cp_mqd_base_addr 0: the CP
 *     needs a GART copy it reads and saves the queue's state into at
 *     dequeue (upstream's MQD is a GTT object, allocate_mqd), so the
 *     bridge gives each loaded compute queue one and copies the saved
 *     read pointer back into rkfd's MQD after hqd_destroy.
 */

/* Where the MQD layouts keep what the user-queue path rewrites. */
struct rkfd_amdgpu_cp_layout {
	size_t size, vmid, rptr, aql_control;
};

struct rkfd_amdgpu_sdma_layout {
	size_t size, rb_cntl, doorbell, engine, queue;
};

struct rkfd_amdgpu_queue_layout {
	struct rkfd_amdgpu_cp_layout cp;	/* v9_mqd / v10_compute_mqd / v11_compute_mqd */
	struct rkfd_amdgpu_sdma_layout sdma;	/* v9_sdma_mqd / v10_sdma_mqd / v11_sdma_mqd */
};

#define RKFD_AMDGPU_CP_LAYOUT(type) ((struct rkfd_amdgpu_cp_layout) {		\
	.size = sizeof(struct type),						\
	.vmid = offsetof(struct type, cp_hqd_vmid),				\
	.rptr = offsetof(struct type, cp_hqd_pq_rptr),				\
	.aql_control = offsetof(struct type, cp_hqd_aql_control),		\
})

#define RKFD_AMDGPU_SDMA_LAYOUT(type) ((struct rkfd_amdgpu_sdma_layout) {	\
	.size = sizeof(struct type),						\
	.rb_cntl = offsetof(struct type, sdmax_rlcx_rb_cntl),			\
	.doorbell = offsetof(struct type, sdmax_rlcx_doorbell_offset),		\
	.engine = offsetof(struct type, sdma_engine_id),			\
	.queue = offsetof(struct type, sdma_queue_id),				\
})

static bool rkfd_amdgpu_queue_layout(enum rkfd_amdgpu_mqd mqd,
				     struct rkfd_amdgpu_queue_layout *l)
{
	switch (mqd) {
	case RKFD_AMDGPU_MQD_V9:
		l->cp = RKFD_AMDGPU_CP_LAYOUT(v9_mqd);
		l->sdma = RKFD_AMDGPU_SDMA_LAYOUT(v9_sdma_mqd);
		return true;
	case RKFD_AMDGPU_MQD_V10:
		l->cp = RKFD_AMDGPU_CP_LAYOUT(v10_compute_mqd);
		l->sdma = RKFD_AMDGPU_SDMA_LAYOUT(v10_sdma_mqd);
		return true;
	case RKFD_AMDGPU_MQD_V11:
		l->cp = RKFD_AMDGPU_CP_LAYOUT(v11_compute_mqd);
		l->sdma = RKFD_AMDGPU_SDMA_LAYOUT(v11_sdma_mqd);
		return true;
	default:
		return false;
	}
}

static u32 rkfd_amdgpu_get32(const void *base, size_t off)
{
	u32 v;

	memcpy(&v, base + off, sizeof(v));
	return v;
}

static void rkfd_amdgpu_put32(void *base, size_t off, u32 v)
{
	memcpy(base + off, &v, sizeof(v));
}

/*
 * Upstream's KFD_UNMAP_LATENCY_MS with amdgpu's default
 * queue_preemption_timeout_ms (9000), which is not exported.
 */
#define RKFD_AMDGPU_UNMAP_LATENCY_MS ((9000 - 9000 / 10) >> 1)

/* A queue loaded without the HWS (upstream: its HQD or SDMA RLC slot). */
struct rkfd_amdgpu_queue {
	struct list_head link;		/* in hws->queues, under queue_lock */
	struct rkfd_amdgpu_vm *vm;
	bool sdma;
	u32 pipe, queue;		/* compute: HQD; SDMA: engine, RLC queue */
	/* Compute: the MQD the CP reads and saves into (GART). */
	void *mqd_bo;
	void *mqd_cpu;
	u64 mqd_gpu;
};

static struct rkfd_amdgpu_queue *rkfd_amdgpu_queue_find(struct rkfd_amdgpu_hws *hws, bool sdma,
							u32 pipe, u32 queue)
{
	struct rkfd_amdgpu_queue *q;

	lockdep_assert_held(&hws->queue_lock);
	list_for_each_entry(q, &hws->queues, link)
		if (q->sdma == sdma && q->pipe == pipe && q->queue == queue)
			return q;
	return NULL;
}

/*
 * Upstream allocate_vmid (no HWS): the VM's first loaded queue binds the
 * lowest free KFD VMID to its PASID (amdgpu's: the VM is amdgpu's), with
 * the SH_MEM settings and page-table base of the process, then flushes
 * its TLB.  No trap handler (rkfd reports no CWSR for the GPU).
 */
static int rkfd_amdgpu_vmid_bind(struct rkfd_amdgpu_hws *hws, struct rkfd_amdgpu_vm *vm)
{
	const struct kfd2kgd_calls *f2g = hws->f2g;
	struct amdgpu_vm *avm = drm_priv_to_vm(vm->drm_priv);
	u32 config;
	int vmid, ret;

	lockdep_assert_held(&hws->queue_lock);
	if (vm->vmid >= 0)
		return 0;
	if (!f2g->set_pasid_vmid_mapping || !f2g->program_sh_mem_settings ||
	    !f2g->set_vm_context_page_table_base ||
	    !rkfd_amdgpu_sh_mem_config(hws->mqd, &config))
		return -EOPNOTSUPP;
	vmid = rkfd_amdgpu_vmid_alloc(hws->kfd_vmids, hws->vmids_used);
	if (vmid < 0)
		return -ENOSPC;
	ret = f2g->set_pasid_vmid_mapping(hws->adev, avm->pasid, vmid, 0);
	if (ret)
		return ret;
	f2g->program_sh_mem_settings(hws->adev, vmid, config, 0, 0, RKFD_AMDGPU_SH_MEM_BASES, 0);
	f2g->set_vm_context_page_table_base(hws->adev, vmid,
					    amdgpu_amdkfd_gpuvm_get_process_page_dir(vm->drm_priv));
	ret = amdgpu_vm_flush_compute_tlb(hws->adev, avm, TLB_FLUSH_HEAVYWEIGHT,
					  hws->adev->gfx.xcc_mask);
	if (ret) {
		f2g->set_pasid_vmid_mapping(hws->adev, 0, vmid, 0);
		return ret;
	}
	hws->vmids_used |= BIT(vmid);
	vm->vmid = vmid;
	return 0;
}

/* Upstream deallocate_vmid: the VM's last queue is gone. */
static void rkfd_amdgpu_vmid_unbind(struct rkfd_amdgpu_hws *hws, struct rkfd_amdgpu_vm *vm)
{
	lockdep_assert_held(&hws->queue_lock);
	if (vm->hqd_queues || vm->vmid < 0)
		return;
	hws->f2g->set_pasid_vmid_mapping(hws->adev, 0, vm->vmid, 0);
	hws->vmids_used &= ~BIT(vm->vmid);
	vm->vmid = -1;
}

/*
 * rkfd destroys a VM's queues before releasing it; if it did not, their
 * records forget the VM (destroying them later frees the slot only) and
 * the VMID is unbound.
 */
static void rkfd_amdgpu_hws_del_vm(struct rkfd_amdgpu_hws *hws, struct rkfd_amdgpu_vm *vm)
{
	struct rkfd_amdgpu_queue *q;

	mutex_lock(&hws->queue_lock);
	list_del(&vm->link);
	if (vm->hqd_queues) {
		dev_warn(hws->adev->dev, "rkfd_amdgpu: VM released with %u queues loaded\n",
			 vm->hqd_queues);
		list_for_each_entry(q, &hws->queues, link)
			if (q->vm == vm)
				q->vm = NULL;
		vm->hqd_queues = 0;
	}
	rkfd_amdgpu_vmid_unbind(hws, vm);
	mutex_unlock(&hws->queue_lock);
}

/* A destroyed queue's VM has one queue less; its last frees the VMID. */
static void rkfd_amdgpu_queue_gone(struct rkfd_amdgpu_hws *hws, struct rkfd_amdgpu_queue *q)
{
	lockdep_assert_held(&hws->queue_lock);
	list_del(&q->link);
	if (!q->vm)
		return;
	q->vm->hqd_queues--;
	rkfd_amdgpu_vmid_unbind(hws, q->vm);
}

/*
 * rkfd's MQD's doorbell word @ctl names a doorbell by its BAR index: one of
 * @vm's slice, or the CP would ring another process's (-EINVAL).
 */
static int rkfd_amdgpu_user_doorbell(struct rkfd_amdgpu_vm *vm, u32 ctl)
{
	if (!rkfd_amdgpu_process_doorbell_ok(vm->db_offset, rkfd_amdgpu_doorbell_dword(ctl)))
		return -EINVAL;
	return 0;
}

/*
 * kfd_mqd_manager_v9.c load_mqd: the table's hqd_load writes the HQD
 * registers from the MQD and points the CP's write-pointer poll at @wptr
 * (a GPU VA of the process, as upstream passes the user's pointer).
 */
int rkfd_amdgpu_hqd_load(void *hws_, void *vm_, void *mqd, u32 mqd_size, u32 pipe_id,
			 u32 queue_id, u64 wptr)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_vm *vm = vm_;
	struct rkfd_amdgpu_mqd_layout ml;
	struct rkfd_amdgpu_queue_layout l;
	struct rkfd_amdgpu_queue *q;
	u32 bit;
	int ret;

	if (!hws->f2g || !hws->f2g->hqd_load || !hws->f2g->hqd_destroy ||
	    !rkfd_amdgpu_queue_layout(hws->mqd, &l) || !rkfd_amdgpu_mqd_layout(hws->mqd, &ml))
		return -EOPNOTSUPP;
	if (mqd_size < l.cp.size ||
	    !rkfd_amdgpu_hqd_bit(pipe_id, queue_id, hws->adev->gfx.mec.num_pipe_per_mec,
				 hws->adev->gfx.mec.num_queue_per_pipe, &bit))
		return -EINVAL;
	/* An HQD amdgpu keeps (its own compute rings) is occupied for rkfd. */
	if (!test_bit(bit, hws->kfd_queues))
		return -EBUSY;
	ret = rkfd_amdgpu_user_doorbell(vm, rkfd_amdgpu_get32(mqd, ml.doorbell_control));
	if (ret)
		return ret;
	q = kzalloc_obj(*q, GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	q->vm = vm;
	q->pipe = pipe_id;
	q->queue = queue_id;
	ret = amdgpu_amdkfd_alloc_kernel_mem(hws->adev, l.cp.size, AMDGPU_GEM_DOMAIN_GTT,
					     &q->mqd_bo, &q->mqd_gpu, &q->mqd_cpu,
					     hws->mqd == RKFD_AMDGPU_MQD_V9);
	if (ret) {
		kfree(q);
		return ret;
	}
	mutex_lock(&hws->queue_lock);
	if (rkfd_amdgpu_queue_find(hws, false, pipe_id, queue_id)) {
		ret = -EBUSY;
		goto out_unlock;
	}
	ret = rkfd_amdgpu_vmid_bind(hws, vm);
	if (ret)
		goto out_unlock;
	memcpy(q->mqd_cpu, mqd, l.cp.size);
	rkfd_amdgpu_put32(q->mqd_cpu, l.cp.vmid, vm->vmid);
	rkfd_amdgpu_put32(q->mqd_cpu, ml.base_addr_lo, lower_32_bits(q->mqd_gpu));
	rkfd_amdgpu_put32(q->mqd_cpu, ml.base_addr_hi, upper_32_bits(q->mqd_gpu));
	ret = hws->f2g->hqd_load(hws->adev, q->mqd_cpu, pipe_id, queue_id,
				 (u32 __user *)(uintptr_t)wptr,
				 rkfd_amdgpu_wptr_shift(rkfd_amdgpu_get32(mqd, l.cp.aql_control)),
				 0, current->mm, 0);
	if (ret) {
		rkfd_amdgpu_vmid_unbind(hws, vm);
		goto out_unlock;
	}
	vm->hqd_queues++;
	list_add(&q->link, &hws->queues);
	mutex_unlock(&hws->queue_lock);
	return 0;
out_unlock:
	mutex_unlock(&hws->queue_lock);
	amdgpu_amdkfd_free_kernel_mem(hws->adev, &q->mqd_bo);
	kfree(q);
	return ret;
}

/*
 * kfd_mqd_manager_v9.c destroy_mqd with the eviction's preemption
 * (WAVEFRONT_DRAIN: rkfd reports no CWSR), then the read pointer the CP
 * saved in the GART copy goes back into rkfd's MQD.  The slot is freed
 * even if the CP did not answer (-ETIME: rkfd resets the GPU).
 */
int rkfd_amdgpu_hqd_destroy(void *hws_, void *mqd, u32 mqd_size, u32 pipe_id, u32 queue_id)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_queue_layout l;
	struct rkfd_amdgpu_queue *q;
	int ret;

	if (!hws->f2g || !hws->f2g->hqd_destroy || !rkfd_amdgpu_queue_layout(hws->mqd, &l))
		return -EOPNOTSUPP;
	if (mqd_size < l.cp.size)
		return -EINVAL;
	mutex_lock(&hws->queue_lock);
	q = rkfd_amdgpu_queue_find(hws, false, pipe_id, queue_id);
	if (!q) {
		mutex_unlock(&hws->queue_lock);
		return -EINVAL;
	}
	ret = hws->f2g->hqd_destroy(hws->adev, q->mqd_cpu, KFD_PREEMPT_TYPE_WAVEFRONT_DRAIN,
				    RKFD_AMDGPU_UNMAP_LATENCY_MS, pipe_id, queue_id, 0);
	rkfd_amdgpu_put32(mqd, l.cp.rptr, rkfd_amdgpu_get32(q->mqd_cpu, l.cp.rptr));
	rkfd_amdgpu_queue_gone(hws, q);
	mutex_unlock(&hws->queue_lock);
	amdgpu_amdkfd_free_kernel_mem(hws->adev, &q->mqd_bo);
	kfree(q);
	return ret;
}

int rkfd_amdgpu_hqd_is_occupied(void *hws_, u64 queue_address, u32 pipe_id, u32 queue_id)
{
	struct rkfd_amdgpu_hws *hws = hws_;

	if (!hws->f2g || !hws->f2g->hqd_is_occupied)
		return 0;
	return hws->f2g->hqd_is_occupied(hws->adev, queue_address, pipe_id, queue_id, 0);
}

/* The SDMA RLC queue an SDMA MQD names. */
static int rkfd_amdgpu_sdma_slot(struct rkfd_amdgpu_hws *hws, const void *mqd, u32 mqd_size,
				 struct rkfd_amdgpu_queue_layout *l, u32 *engine, u32 *queue)
{
	if (!hws->f2g || !hws->f2g->hqd_sdma_load || !hws->f2g->hqd_sdma_destroy ||
	    !hws->f2g->hqd_sdma_is_occupied || !rkfd_amdgpu_queue_layout(hws->mqd, l))
		return -EOPNOTSUPP;
	if (mqd_size < l->sdma.size)
		return -EINVAL;
	*engine = rkfd_amdgpu_get32(mqd, l->sdma.engine);
	*queue = rkfd_amdgpu_get32(mqd, l->sdma.queue);
	if (!rkfd_amdgpu_sdma_slot_ok(*engine, *queue, hws->adev->sdma.num_instances))
		return -EINVAL;
	return 0;
}

/*
 * kfd_mqd_manager_v9.c load_mqd_sdma: the table's hqd_sdma_load programs
 * the RLC queue from a copy of the MQD with the VMID (its doorbell is
 * already the BAR index, checked to be the VM's);
 * it reads the initial write pointer at @wptr through the calling
 * process's mm (upstream passes current->mm at queue creation).
 */
int rkfd_amdgpu_hqd_sdma_load(void *hws_, void *vm_, void *mqd, u32 mqd_size, u64 wptr)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_vm *vm = vm_;
	struct rkfd_amdgpu_queue_layout l;
	struct rkfd_amdgpu_queue *q;
	u32 engine, queue;
	void *copy;
	int ret;

	ret = rkfd_amdgpu_sdma_slot(hws, mqd, mqd_size, &l, &engine, &queue);
	if (ret)
		return ret;
	ret = rkfd_amdgpu_user_doorbell(vm, rkfd_amdgpu_get32(mqd, l.sdma.doorbell));
	if (ret)
		return ret;
	q = kzalloc_obj(*q, GFP_KERNEL);
	copy = kmemdup(mqd, l.sdma.size, GFP_KERNEL);
	if (!q || !copy) {
		ret = -ENOMEM;
		goto out_free;
	}
	q->vm = vm;
	q->sdma = true;
	q->pipe = engine;
	q->queue = queue;
	mutex_lock(&hws->queue_lock);
	if (rkfd_amdgpu_queue_find(hws, true, engine, queue)) {
		ret = -EBUSY;
		goto out_unlock;
	}
	ret = rkfd_amdgpu_vmid_bind(hws, vm);
	if (ret)
		goto out_unlock;
	rkfd_amdgpu_put32(copy, l.sdma.rb_cntl,
			  rkfd_amdgpu_sdma_rb_cntl(rkfd_amdgpu_get32(copy, l.sdma.rb_cntl),
						   vm->vmid));
	ret = hws->f2g->hqd_sdma_load(hws->adev, copy, (u32 __user *)(uintptr_t)wptr,
				      current->mm);
	if (ret) {
		rkfd_amdgpu_vmid_unbind(hws, vm);
		goto out_unlock;
	}
	vm->hqd_queues++;
	list_add(&q->link, &hws->queues);
	q = NULL;
out_unlock:
	mutex_unlock(&hws->queue_lock);
out_free:
	kfree(copy);
	kfree(q);
	return ret;
}

/*
 * kfd_mqd_manager_v9.c destroy_mqd_sdma: the table's hqd_sdma_destroy
 * stops the RLC queue and saves its read pointer in rkfd's MQD
 * (sdmax_rlcx_rb_rptr / _hi), which is all it writes.
 */
int rkfd_amdgpu_hqd_sdma_destroy(void *hws_, void *mqd, u32 mqd_size)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_queue_layout l;
	struct rkfd_amdgpu_queue *q;
	u32 engine, queue;
	int ret;

	ret = rkfd_amdgpu_sdma_slot(hws, mqd, mqd_size, &l, &engine, &queue);
	if (ret)
		return ret;
	mutex_lock(&hws->queue_lock);
	q = rkfd_amdgpu_queue_find(hws, true, engine, queue);
	if (!q) {
		mutex_unlock(&hws->queue_lock);
		return -EINVAL;
	}
	ret = hws->f2g->hqd_sdma_destroy(hws->adev, mqd, RKFD_AMDGPU_UNMAP_LATENCY_MS);
	rkfd_amdgpu_queue_gone(hws, q);
	mutex_unlock(&hws->queue_lock);
	kfree(q);
	return ret;
}

int rkfd_amdgpu_hqd_sdma_is_occupied(void *hws_, void *mqd, u32 mqd_size)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct rkfd_amdgpu_queue_layout l;
	u32 engine, queue;

	if (rkfd_amdgpu_sdma_slot(hws, mqd, mqd_size, &l, &engine, &queue))
		return 0;
	return hws->f2g->hqd_sdma_is_occupied(hws->adev, mqd);
}

/*
 * kfd_doorbell_mmap: the VM's doorbell slice, uncached, as I/O memory
 * (kfd_get_process_doorbells: the doorbell BAR's base + the slice's
 * offset).  rkfd has checked the size (doorbell_process_size).
 */
int rkfd_amdgpu_mmap_doorbells(void *vm_, void *vma_)
{
	struct rkfd_amdgpu_vm *vm = vm_;
	struct vm_area_struct *vma = vma_;
	phys_addr_t address = vm->adev->doorbell.base + vm->db_offset;

	if (vma->vm_end - vma->vm_start != RKFD_AMDGPU_PROCESS_DOORBELLS)
		return -EINVAL;
	vm_flags_set(vma, VM_IO | VM_DONTCOPY | VM_DONTEXPAND | VM_NORESERVE | VM_DONTDUMP |
		     VM_PFNMAP);
	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	return io_remap_pfn_range(vma, vma->vm_start, address >> PAGE_SHIFT,
				  RKFD_AMDGPU_PROCESS_DOORBELLS, vma->vm_page_prot);
}

/* kfd_mmio_mmap: the MMIO remap page (HDP flush), uncached. */
int rkfd_amdgpu_mmap_mmio_remap(void *adev_, void *vma_)
{
	struct amdgpu_device *adev = adev_;
	struct vm_area_struct *vma = vma_;
	phys_addr_t address = adev->rmmio_remap.bus_addr;

	if (vma->vm_end - vma->vm_start != PAGE_SIZE || PAGE_SIZE > 4096)
		return -EINVAL;
	if (!address)
		return -ENOMEM;
	vm_flags_set(vma, VM_IO | VM_DONTCOPY | VM_DONTEXPAND | VM_NORESERVE | VM_DONTDUMP |
		     VM_PFNMAP);
	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	return io_remap_pfn_range(vma, vma->vm_start, address >> PAGE_SHIFT, PAGE_SIZE,
				  vma->vm_page_prot);
}

/* A queue added to MES, for its removal (which names it as rkfd added it). */
struct rkfd_amdgpu_mes_queue {
	struct list_head link;		/* in hws->mes_queues, under queue_lock */
	u32 bar_index;			/* its doorbell, as rkfd and the firmware name it */
	u64 gang_context_addr;
	u32 queue_type;
};

static struct rkfd_amdgpu_mes_queue *rkfd_amdgpu_mes_find(struct rkfd_amdgpu_hws *hws,
							  u32 bar_index, u64 gang_ctx)
{
	struct rkfd_amdgpu_mes_queue *m;

	lockdep_assert_held(&hws->queue_lock);
	list_for_each_entry(m, &hws->mes_queues, link)
		if (m->bar_index == bar_index && m->gang_context_addr == gang_ctx)
			return m;
	return NULL;
}

/*
 * upstream add_queue_mes: rkfd's request with what amdgpu owns filled in
 * (amdgpu's PASID and page directory of the VM rkfd's PASID names, the
 * VA range, SH_MEM_CONFIG, the XCC); the doorbell is already its BAR
 * index, in the request and in the MQD the firmware reads from GART (an
 * object of rkfd's), checked to be the same and in the VM's slice.  Under
 * the reset domain's semaphore and amdgpu_mes_lock.
 */
int rkfd_amdgpu_mes_add(void *hws_, const struct rkfd_amdgpu_mes_add *in)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct amdgpu_device *adev = hws->adev;
	struct rkfd_amdgpu_mqd_layout ml;
	struct rkfd_amdgpu_queue_layout l;
	struct mes_add_queue_input input = {};
	struct rkfd_amdgpu_vm *vm = NULL, *v;
	struct rkfd_amdgpu_mes_queue *m;
	size_t db_off, mqd_size;
	void *gart_mqd;
	u32 config;
	int ret;

	BUILD_BUG_ON(RKFD_AMDGPU_MES_QUEUE_COMPUTE != AMDGPU_RING_TYPE_COMPUTE);
	BUILD_BUG_ON(RKFD_AMDGPU_MES_QUEUE_SDMA != AMDGPU_RING_TYPE_SDMA);
	BUILD_BUG_ON(RKFD_AMDGPU_MES_PRIORITY_LEVELS != AMDGPU_MES_PRIORITY_NUM_LEVELS);

	if (!adev->enable_mes || !adev->mes.funcs || !adev->mes.funcs->add_hw_queue ||
	    !rkfd_amdgpu_queue_layout(hws->mqd, &l) || !rkfd_amdgpu_mqd_layout(hws->mqd, &ml) ||
	    !rkfd_amdgpu_sh_mem_config(hws->mqd, &config))
		return -EOPNOTSUPP;
	if (in->queue_type == RKFD_AMDGPU_MES_QUEUE_COMPUTE) {
		db_off = ml.doorbell_control;
		mqd_size = l.cp.size;
	} else if (in->queue_type == RKFD_AMDGPU_MES_QUEUE_SDMA) {
		db_off = l.sdma.doorbell;
		mqd_size = l.sdma.size;
	} else {
		return -EINVAL;
	}
	if (in->inprocess_gang_priority >= RKFD_AMDGPU_MES_PRIORITY_LEVELS ||
	    in->gang_global_priority_level >= RKFD_AMDGPU_MES_PRIORITY_LEVELS)
		return -EINVAL;
	m = kzalloc_obj(*m, GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	mutex_lock(&hws->queue_lock);
	list_for_each_entry(v, &hws->vms, link) {
		if (drm_priv_to_vm(v->drm_priv)->pasid == in->process_id) {
			vm = v;
			break;
		}
	}
	ret = -EINVAL;
	if (!vm || rkfd_amdgpu_mes_find(hws, in->doorbell_offset, in->gang_context_addr) ||
	    !rkfd_amdgpu_process_doorbell_ok(vm->db_offset, in->doorbell_offset))
		goto out_unlock;
	gart_mqd = rkfd_amdgpu_gtt_cpu(hws, in->mqd_addr, mqd_size);
	if (!gart_mqd ||
	    rkfd_amdgpu_doorbell_dword(rkfd_amdgpu_get32(gart_mqd, db_off)) != in->doorbell_offset)
		goto out_unlock;
	m->bar_index = in->doorbell_offset;

	input.xcc_id = ffs(adev->gfx.xcc_mask) - 1;
	input.process_id = drm_priv_to_vm(vm->drm_priv)->pasid;
	input.page_table_base_addr = amdgpu_amdkfd_gpuvm_get_process_page_dir(vm->drm_priv);
	input.process_va_start = 0;
	input.process_va_end = adev->vm_manager.max_pfn - 1;
	input.process_quantum = in->process_quantum;
	input.process_context_addr = in->process_context_addr;
	input.gang_quantum = in->gang_quantum;
	input.gang_context_addr = in->gang_context_addr;
	input.inprocess_gang_priority = in->inprocess_gang_priority;
	input.gang_global_priority_level = in->gang_global_priority_level;
	input.doorbell_offset = in->doorbell_offset;
	input.mqd_addr = in->mqd_addr;
	input.wptr_addr = in->wptr_addr;
	input.wptr_mc_addr = in->wptr_mc_addr;
	input.queue_type = in->queue_type;
	input.paging = in->paging;
	input.gws_base = in->gws_base;
	input.gws_size = in->gws_size;
	input.tba_addr = in->tba_addr;
	input.tma_addr = in->tma_addr;
	input.trap_en = in->trap_en;
	input.skip_process_ctx_clear = in->skip_process_ctx_clear;
	input.is_kfd_process = in->is_kfd_process;
	input.is_aql_queue = in->is_aql_queue;
	input.queue_size = in->queue_size;
	input.exclusively_scheduled = in->exclusively_scheduled;
	input.sh_mem_config_data = config;

	if (!down_read_trylock(&adev->reset_domain->sem)) {
		ret = -EIO;
		goto out_unlock;
	}
	amdgpu_mes_lock(&adev->mes);
	ret = adev->mes.funcs->add_hw_queue(&adev->mes, &input);
	amdgpu_mes_unlock(&adev->mes);
	up_read(&adev->reset_domain->sem);
	if (ret)
		goto out_unlock;
	m->gang_context_addr = in->gang_context_addr;
	m->queue_type = in->queue_type;
	list_add(&m->link, &hws->mes_queues);
	m = NULL;
out_unlock:
	mutex_unlock(&hws->queue_lock);
	kfree(m);
	return ret;
}

/*
 * upstream remove_queue_mes: the queue as added (its BAR doorbell, gang
 * context and type).  Forgotten even if the firmware did not answer.
 */
int rkfd_amdgpu_mes_remove(void *hws_, u32 doorbell_offset, u64 gang_context_addr)
{
	struct rkfd_amdgpu_hws *hws = hws_;
	struct amdgpu_device *adev = hws->adev;
	struct mes_remove_queue_input input = {};
	struct rkfd_amdgpu_mes_queue *m;
	int ret;

	if (!adev->enable_mes || !adev->mes.funcs || !adev->mes.funcs->remove_hw_queue)
		return -EOPNOTSUPP;
	mutex_lock(&hws->queue_lock);
	m = rkfd_amdgpu_mes_find(hws, doorbell_offset, gang_context_addr);
	if (!m) {
		mutex_unlock(&hws->queue_lock);
		return -EINVAL;
	}
	list_del(&m->link);
	input.xcc_id = ffs(adev->gfx.xcc_mask) - 1;
	input.doorbell_offset = m->bar_index;
	input.gang_context_addr = m->gang_context_addr;
	input.queue_type = m->queue_type;
	if (down_read_trylock(&adev->reset_domain->sem)) {
		amdgpu_mes_lock(&adev->mes);
		ret = adev->mes.funcs->remove_hw_queue(&adev->mes, &input);
		amdgpu_mes_unlock(&adev->mes);
		up_read(&adev->reset_domain->sem);
	} else {
		ret = -EIO;
	}
	mutex_unlock(&hws->queue_lock);
	kfree(m);
	return ret;
}

MODULE_IMPORT_NS("AMDGPU_KFD");
