// SPDX-License-Identifier: GPL-2.0
/*
 * rkfd C shim: the kernel's HMM machinery under SVM (upstream kfd_migrate.c
 * and the HMM half of kfd_svm.c).  Policy lives in Rust (src/svm/);
 * this file only drives the kernel APIs Rust for Linux 7.3 has no
 * abstraction for:
 *
 *   - device-private VRAM: one MEMORY_DEVICE_PRIVATE dev_pagemap per GPU
 *     over a request_free_mem_region() range the size of its VRAM; device
 *     page n is VRAM page n (upstream svm_migrate_addr_to_pfn); the pagemap
 *     owner (the struct rkfd_svm_dev) identifies the GPU; dev_pagemap_ops
 *     migrate_to_ram (a CPU touch), folio_free and folio_split;
 *   - migration with migrate_vma_setup/pages/finalize in both directions,
 *     the copies done by the GPU driver's copy engine (kfd2kgd svm_copy).
 *     Where the GPU driver hands out aligned 2 MiB blocks
 *     (svm_alloc_vram_block) a transparent huge page migrates as one huge
 *     device page and back (MIGRATE_VMA_SELECT_COMPOUND, as the kernel's
 *     lib/test_hmm.c does; upstream amdkfd 7.3 migrates 4 KiB pages only):
 *     one folio to allocate, map and free instead of 512.  Anything else
 *     (no block free, a PTE-mapped or partial range, no THP) migrates page
 *     by page.  A huge folio that cannot get a huge destination is never
 *     handed to the core with small destinations: migrate_vma_pages()
 *     would split it unmapped (migrate_vma_split_unmapped_folio), which
 *     splits only this VMA's PMD, and a forked child's PMD migration
 *     entry would later be restored as a PMD over one small folio (the
 *     kernel then reports "Bad rss-counter state MM_ANONPAGES 512 /
 *     MM_SHMEMPAGES -512" and non-zero pgtables_bytes at exit, and
 *     hmm_range_fault() spins on a stale migration entry).  Such a folio
 *     is left in place and its batch runs again without
 *     MIGRATE_VMA_SELECT_COMPOUND: migrate_vma_collect() then splits it
 *     with split_folio() while it is mapped, in every process.
 *     Huge device pages are opt-in (svm_huge_pages, off by default):
 *     Linux 7.3's zap_huge_pmd() treats a PMD *migration entry* whose
 *     folio is device-private like a device-private entry
 *     (zap_huge_pmd_folio() tests folio_is_device_private(), not the
 *     entry), so it removes an rmap and puts a reference the migration
 *     entry never held.  Any migration of a huge device page out of VRAM
 *     (MIGRATE_VMA_SELECT_COMPOUND) turns the PMDs of every process that
 *     shares it after fork() into such entries (try_to_migrate()); a
 *     sharer that exits or unmaps meanwhile frees the folio under the
 *     migration: VRAM frames freed while still mapped, "Bad rss-counter
 *     state MM_ANONPAGES 512 / MM_SHMEMPAGES -512", non-zero
 *     pgtables_bytes, and hmm_range_fault() spinning for ever on the
 *     stale migration entry left behind (kfd-storm, kfd-race and
 *     kfd-svm-hmm-tests fork_while_migrating reproduce it with XNACK
 *     off).  Without huge device pages no device-private PMD exists and
 *     a THP splits on its way to VRAM, as upstream amdkfd 7.3 does;
 *   - one mmu_interval_notifier per SVM range, its lock (upstream
 *     prange->lock) and hmm_range_fault() with the read_begin/read_retry
 *     protocol of Documentation/mm/hmm.rst.
 *
 * Locking (docs/design.md has the whole order): callers hold mmap_lock (read)
 * for hmm_range_fault and migration.  struct rkfd_svm_range.lock is taken by
 * the invalidate callback and around the read_retry check + GPU page-table
 * update, inside memalloc_noreclaim_save() as upstream's svm_range_lock, so
 * nothing under it recurses into reclaim (which may invalidate).
 * migrate_to_ram takes no rkfd lock at all: a GPU fault handler may hold
 * rkfd's locks while hmm_range_fault() makes the CPU fault a page back.
 */
#include <linux/hmm.h>
#include <linux/highmem.h>
#include <linux/huge_mm.h>
#include <linux/ioport.h>
#include <linux/memremap.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/workqueue.h>

#include <rkfd/kgd_kfd_interface.h>

#include "rkfd_shim.h"

/* Pages per migration or hmm_range_fault batch: one 2 MiB granule. */
#define RKFD_SVM_BATCH 512UL
/* Huge device pages (see rkfd_shim_svm_dev_init). */
#define RKFD_SVM_HUGE 1
/* Frames handed to svm_free_vram at once from folio_free (on the stack). */
#define RKFD_SVM_FREE_CHUNK 32

/*
 * Fault injection for tests: huge destinations (a VRAM block, a system
 * THP) are "unavailable", so huge folios take the split path.
 */
static bool svm_huge_pages;
module_param(svm_huge_pages, bool, 0600);
MODULE_PARM_DESC(svm_huge_pages,
		 "SVM migrates transparent huge pages as huge device pages (default off: Linux 7.3 frees a shared one under a migration, see rkfd_hmm.c)");

static bool svm_fail_huge_alloc;
module_param(svm_fail_huge_alloc, bool, 0600);
MODULE_PARM_DESC(svm_fail_huge_alloc,
		 "SVM migration finds no huge VRAM block or system THP (fault injection for tests)");

/* One GPU's device-private VRAM (upstream: adev->kfd.pgmap). */
struct rkfd_svm_dev {
	struct dev_pagemap pgmap;	/* .owner = this struct */
	struct resource *res;
	unsigned long pfn_first;
	unsigned long npages;
	struct kgd_dev *kgd;
	const struct kfd2kgd_calls *calls;
	bool huge;	/* huge device pages possible (PMD order); see rkfd_svm_huge() */
};

static struct rkfd_svm_dev *page_to_sdev(struct page *page)
{
	return container_of(page_pgmap(page), struct rkfd_svm_dev, pgmap);
}

static u64 page_to_frame(struct rkfd_svm_dev *sdev, struct page *page)
{
	return page_to_pfn(page) - sdev->pfn_first;
}

/* Whether migrations to VRAM make huge device pages now (the device can, and svm_huge_pages). */
static bool rkfd_svm_huge(struct rkfd_svm_dev *sdev)
{
	return sdev->huge && READ_ONCE(svm_huge_pages);
}

/* ------------------------------------------------------------------------
 * Device pages.
 */

/*
 * The last reference to a device folio is gone: its frames go back to the
 * GPU driver, its process's counters lose it.  A huge folio's head holds
 * the counter reference for all its bytes; folio_split gave each tail a
 * reference of its own (0 bytes), so each folio puts its own size.
 */
static void rkfd_svm_folio_free(struct folio *folio)
{
	struct page *page = &folio->page;
	struct rkfd_svm_dev *sdev = page_to_sdev(page);
	u64 frame = page_to_frame(sdev, page), chunk[RKFD_SVM_FREE_CHUNK];
	unsigned long nr = folio_nr_pages(folio), i, k;

	/* Any context: svm_free_vram must not sleep (interface contract). */
	for (i = 0; i < nr; i += k) {
		for (k = 0; k < RKFD_SVM_FREE_CHUNK && i + k < nr; k++)
			chunk[k] = frame + i + k;
		sdev->calls->svm_free_vram(sdev->kgd, chunk, k);
	}
	if (page->zone_device_data)
		rkfd_rs_svm_counters_put(page->zone_device_data, PAGE_SIZE * nr);
	page->zone_device_data = NULL;
}

/*
 * The core splits a huge device folio (partial munmap, mprotect, a
 * migration that could not stay huge): called for each new @tail folio,
 * then once with @tail NULL.  Each tail gets its own counter reference.
 */
static void rkfd_svm_folio_split(struct folio *head, struct folio *tail)
{
	void *counters = head->page.zone_device_data;

	if (!tail)
		return;
	tail->pgmap = head->pgmap;
	tail->page.mapping = head->page.mapping;
	tail->page.zone_device_data = counters ? rkfd_rs_svm_counters_get(counters, 0) : NULL;
}

/* How a pass of rkfd_svm_vram_to_ram_pass() treats a huge device page. */
enum rkfd_svm_huge_back {
	RKFD_BACK_SMALL,	/* no MIGRATE_VMA_SELECT_COMPOUND: collect splits it */
	RKFD_BACK_HUGE,		/* as a THP, else left alone for a second pass */
	/*
	 * As a THP, else page by page, the core splitting the unmapped
	 * folio: only for a folio no other process maps (the top of the
	 * file says why).
	 */
	RKFD_BACK_HUGE_OR_SPLIT,
};

/*
 * One pass of rkfd_svm_vram_to_ram(): @mode says what happens to a huge
 * device page; *@again is set when one was left alone.  @gfp allocates
 * transparent huge pages.
 */
static long rkfd_svm_vram_to_ram_pass(struct rkfd_svm_dev *sdev, struct migrate_vma *args,
				      enum rkfd_svm_huge_back mode, gfp_t gfp, bool *again)
{
	unsigned long i, j, nr, n = (args->end - args->start) >> PAGE_SHIFT, cpages = 0;
	bool huge = mode != RKFD_BACK_SMALL;
	u64 *frames = NULL;
	struct page **pages = NULL;
	long ret;

	args->pgmap_owner = sdev;
	args->flags = MIGRATE_VMA_SELECT_DEVICE_PRIVATE | (huge ? MIGRATE_VMA_SELECT_COMPOUND : 0);
	ret = migrate_vma_setup(args);
	if (ret)
		return ret;
	if (!args->cpages) {
		migrate_vma_finalize(args);
		return 0;
	}
	frames = kvcalloc(n, sizeof(*frames), GFP_KERNEL);
	pages = kvcalloc(n, sizeof(*pages), GFP_KERNEL);
	if (!frames || !pages) {
		ret = -ENOMEM;
		goto finalize;
	}
	for (i = 0; i < n; i += nr) {
		struct page *spage = migrate_pfn_to_page(args->src[i]);
		unsigned long addr = args->start + (i << PAGE_SHIFT);
		unsigned long write = args->src[i] & MIGRATE_PFN_WRITE;
		struct folio *dfolio = NULL;

		nr = 1;
		args->dst[i] = 0;
		if (!spage || !(args->src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		if (!is_device_private_page(spage) || page_to_sdev(spage) != sdev)
			continue;
		if (args->src[i] & MIGRATE_PFN_COMPOUND) {
			nr = min(folio_nr_pages(page_folio(spage)), n - i);
			if (!READ_ONCE(svm_fail_huge_alloc))
				dfolio = vma_alloc_folio(gfp,
							 folio_order(page_folio(spage)),
							 args->vma, addr);
			if (!dfolio && mode == RKFD_BACK_HUGE) {
				*again = true;
				continue;
			}
		}
		if (dfolio) {
			/* One huge page for the huge device page. */
			folio_lock(dfolio);
			args->dst[i] = migrate_pfn(folio_pfn(dfolio)) | MIGRATE_PFN_COMPOUND | write;
			for (j = 0; j < nr; j++) {
				frames[cpages] = page_to_frame(sdev, spage) + j;
				pages[cpages++] = folio_page(dfolio, j);
			}
			continue;
		}
		/* Page by page. */
		for (j = 0; j < nr; j++) {
			struct page *dpage = alloc_page_vma(GFP_HIGHUSER_MOVABLE, args->vma,
							    addr + (j << PAGE_SHIFT));

			if (!dpage) {
				ret = -ENOMEM;
				break;
			}
			lock_page(dpage);
			frames[cpages] = page_to_frame(sdev, spage) + j;
			pages[cpages++] = dpage;
			args->dst[i + j] = migrate_pfn(page_to_pfn(dpage)) | write;
		}
		if (ret)
			break;
	}
	if (cpages) {
		int err = sdev->calls->svm_copy(sdev->kgd, frames, (void *const *)pages,
						cpages, KGD_SVM_COPY_TO_SYSTEM);
		if (err) {
			/* Nothing may migrate with garbage in it. */
			for (i = 0; i < n; i++) {
				struct page *dpage = migrate_pfn_to_page(args->dst[i]);

				if (dpage) {
					unlock_page(dpage);
					put_page(dpage);
				}
				args->dst[i] = 0;
			}
			ret = err;
			cpages = 0;
		}
	}
	migrate_vma_pages(args);
	/* Count what moved, and the process it moved for. */
	for (i = 0, cpages = 0; i < n; i += nr) {
		struct page *spage = migrate_pfn_to_page(args->src[i]);

		nr = 1;
		if (!args->dst[i] || !(args->src[i] & MIGRATE_PFN_MIGRATE) || !spage)
			continue;
		if (args->dst[i] & MIGRATE_PFN_COMPOUND)
			nr = min(folio_nr_pages(page_folio(migrate_pfn_to_page(args->dst[i]))), n - i);
		cpages += nr;
		if (spage->zone_device_data)
			rkfd_rs_svm_count_page_out(spage->zone_device_data, nr);
	}
	if (ret >= 0)
		ret = cpages;
finalize:
	migrate_vma_finalize(args);
	kvfree(frames);
	kvfree(pages);
	return ret;
}

/*
 * Migrates the device pages of @sdev in [args->start, args->end) of
 * args->vma back to system memory; args->src/dst have room for the range.
 * With @huge, a huge device page comes back as a transparent huge page
 * when one can be allocated, else a second pass without
 * MIGRATE_VMA_SELECT_COMPOUND brings it back page by page.  Returns the
 * number of pages migrated or -errno.
 */
static long rkfd_svm_vram_to_ram(struct rkfd_svm_dev *sdev, struct migrate_vma *args, bool huge)
{
	unsigned long n = (args->end - args->start) >> PAGE_SHIFT;
	bool again = false;
	long ret, more;

	ret = rkfd_svm_vram_to_ram_pass(sdev, args, huge ? RKFD_BACK_HUGE : RKFD_BACK_SMALL,
					GFP_TRANSHUGE_LIGHT, &again);
	if (ret < 0 || !again)
		return ret;
	memset(args->dst, 0, n * sizeof(*args->dst));
	more = rkfd_svm_vram_to_ram_pass(sdev, args, RKFD_BACK_SMALL, 0, &again);
	return more < 0 ? more : ret + more;
}

/*
 * dev_pagemap_ops.migrate_to_ram: the CPU touched a page in VRAM.  As
 * upstream svm_migrate_to_ram, more than the page comes back: 64 pages
 * (256 KiB, clipped to the VMA) around it, or the whole huge device page
 * when the fault hit one mapped by a PMD (as lib/test_hmm.c does), as a
 * transparent huge page, else split first.  Takes no rkfd lock.
 */
static vm_fault_t rkfd_svm_migrate_to_ram(struct vm_fault *vmf)
{
	/* 64 pages around the fault: the arrays fit on the stack. */
	unsigned long src_small[64], dst_small[64];
	const unsigned long span = ARRAY_SIZE(src_small) << PAGE_SHIFT;
	struct rkfd_svm_dev *sdev = page_to_sdev(vmf->page);
	struct folio *folio = page_folio(vmf->page);
	struct vm_area_struct *vma = vmf->vma;
	unsigned long base = ALIGN_DOWN(vmf->address, span);
	struct migrate_vma args = {
		.vma = vma,
		.start = max(base, vma->vm_start),
		.end = min(base + span, vma->vm_end),
		.src = src_small,
		.dst = dst_small,
		.fault_page = vmf->page,
	};
	/* A PTE-mapped page of a huge folio: migrate it as small pages. */
	bool huge = folio_test_large(folio) && !vmf->pte;
	/* For the SMI event: the process and GPU the page belongs to. */
	void *counters = vmf->page->zone_device_data;
	u64 t0 = ktime_get_boottime_ns();
	long ret;

	if (counters)
		counters = rkfd_rs_svm_counters_get(counters, 0);

	if (huge) {
		unsigned long size = folio_size(folio);

		args.start = ALIGN_DOWN(vmf->address, size);
		args.end = args.start + size;
		args.src = kvcalloc(folio_nr_pages(folio), sizeof(*args.src), GFP_KERNEL);
		args.dst = kvcalloc(folio_nr_pages(folio), sizeof(*args.dst), GFP_KERNEL);
		if (!args.src || !args.dst) {
			ret = -ENOMEM;
			goto out;
		}
	} else {
		memset(src_small, 0, sizeof(src_small));
		memset(dst_small, 0, sizeof(dst_small));
	}
	if (huge) {
		/*
		 * The second pass of rkfd_svm_vram_to_ram() cannot split the
		 * faulting folio (its collect step takes a second reference,
		 * so split_folio() fails for ever and the CPU faults for
		 * ever), and no split is exported to modules.  A folio only
		 * this process maps may be split by the core unmapped; one a
		 * forked child maps too must come back whole, so its huge
		 * page may reclaim and compact (GFP_TRANSHUGE), and failing
		 * that the fault fails as out of memory.
		 */
		bool shared = folio_mapcount(folio) > 1, again = false;

		ret = rkfd_svm_vram_to_ram_pass(sdev, &args,
						shared ? RKFD_BACK_HUGE : RKFD_BACK_HUGE_OR_SPLIT,
						shared ? GFP_TRANSHUGE : GFP_TRANSHUGE_LIGHT, &again);
		if (ret >= 0 && again)
			ret = -ENOMEM;
	} else {
		ret = rkfd_svm_vram_to_ram(sdev, &args, false);
	}
out:
	if (huge) {
		kvfree(args.src);
		kvfree(args.dst);
	}
	if (counters) {
		rkfd_rs_svm_cpu_migrated(counters, args.start, args.end, t0, ret);
		rkfd_rs_svm_counters_put(counters, 0);
	}
	if (ret < 0)
		return ret == -ENOMEM ? VM_FAULT_OOM : VM_FAULT_SIGBUS;
	return 0;
}

static const struct dev_pagemap_ops rkfd_svm_pgmap_ops = {
	.folio_free = rkfd_svm_folio_free,
	.migrate_to_ram = rkfd_svm_migrate_to_ram,
	.folio_split = rkfd_svm_folio_split,
};

int rkfd_shim_svm_dev_init(struct kgd_dev *kgd, const struct kfd2kgd_calls *calls,
			   u64 vram_size, struct rkfd_svm_dev **out)
{
	struct rkfd_svm_dev *sdev;
	void *r;
	int ret;

	if (!calls->svm_alloc_vram || !calls->svm_free_vram || !calls->svm_copy ||
	    !calls->svm_map || !calls->svm_unmap || !vram_size)
		return -EOPNOTSUPP;
	sdev = kzalloc(sizeof(*sdev), GFP_KERNEL);
	if (!sdev)
		return -ENOMEM;
	vram_size = ALIGN(vram_size, PAGE_SIZE);
	sdev->res = request_free_mem_region(&iomem_resource, vram_size, "rkfd_svm_vram");
	if (IS_ERR_OR_NULL(sdev->res)) {
		ret = sdev->res ? PTR_ERR(sdev->res) : -ENOMEM;
		goto err_free;
	}
	sdev->pgmap.type = MEMORY_DEVICE_PRIVATE;
	sdev->pgmap.range.start = sdev->res->start;
	sdev->pgmap.range.end = sdev->res->start + vram_size - 1;
	sdev->pgmap.nr_range = 1;
	sdev->pgmap.ops = &rkfd_svm_pgmap_ops;
	sdev->pgmap.owner = sdev;
	sdev->kgd = kgd;
	sdev->calls = calls;
	sdev->pfn_first = sdev->res->start >> PAGE_SHIFT;
	sdev->npages = vram_size >> PAGE_SHIFT;
	/* Huge device pages need blocks and PMD-aligned device pfns. */
	sdev->huge = RKFD_SVM_HUGE && calls->svm_alloc_vram_block && thp_migration_supported() &&
		     IS_ALIGNED(sdev->pfn_first, HPAGE_PMD_NR);
	r = memremap_pages(&sdev->pgmap, numa_node_id());
	if (IS_ERR_OR_NULL(r)) {
		ret = r ? PTR_ERR(r) : -EFAULT;
		goto err_region;
	}
	*out = sdev;
	return 0;

err_region:
	release_mem_region(sdev->res->start, resource_size(sdev->res));
err_free:
	kfree(sdev);
	return ret;
}

void rkfd_shim_svm_dev_fini(struct rkfd_svm_dev *sdev)
{
	/* Waits until every device page is freed (their mms are gone). */
	memunmap_pages(&sdev->pgmap);
	release_mem_region(sdev->res->start, resource_size(sdev->res));
	kfree(sdev);
}

/* ------------------------------------------------------------------------
 * Migration (caller holds mmap_lock for reading and an mm reference).
 */

/*
 * Migrates the system pages of [start, end) (within one VMA, at most one
 * 2 MiB-aligned batch) to @sdev's VRAM.  @counters is the process's
 * per-GPU counters (page_in, svm bytes), a reference on which each device
 * folio keeps.  A transparent huge page (or an empty aligned 2 MiB) that
 * the batch covers whole becomes one huge device page when the GPU driver
 * has a block free, else single pages (an empty 2 MiB directly; a THP
 * after a second pass without MIGRATE_VMA_SELECT_COMPOUND has split it,
 * see the top of the file).  @compound: first pass.  Returns pages
 * migrated, or -ENOMEM when VRAM ran out before anything moved.
 */
static long rkfd_svm_ram_to_vram_vma(struct rkfd_svm_dev *sdev, struct vm_area_struct *vma,
				     unsigned long start, unsigned long end, void *counters,
				     unsigned long *src, unsigned long *dst, u64 *frames,
				     u64 *dframes, struct page **pages, bool compound)
{
	unsigned long i, j, n = (end - start) >> PAGE_SHIFT, k = 0, nr, small = 0, next = 0;
	struct migrate_vma args = {
		.vma = vma, .start = start, .end = end, .src = src, .dst = dst,
		.pgmap_owner = sdev, .flags = MIGRATE_VMA_SELECT_SYSTEM |
			(compound ? MIGRATE_VMA_SELECT_COMPOUND : 0),
	};
	bool huge = false, wanted = false, again = false;
	u64 first = 0;
	long ret;
	int err;

	memset(src, 0, n * sizeof(*src));
	memset(dst, 0, n * sizeof(*dst));
	ret = migrate_vma_setup(&args);
	if (ret)
		return ret;
	/*
	 * A huge entry can only be the first of an aligned 2 MiB batch; its
	 * other entries are empty.  Without a block an empty 2 MiB takes 512
	 * frames, a THP waits for the second pass.
	 */
	for (i = 0; i < n; i++) {
		if (!(src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		wanted = true;
		if (!(src[i] & MIGRATE_PFN_COMPOUND))
			small++;
		else if (!READ_ONCE(svm_fail_huge_alloc) &&
			 !sdev->calls->svm_alloc_vram_block(sdev->kgd, HPAGE_PMD_ORDER, &first))
			huge = true;
		else if (!migrate_pfn_to_page(src[i]))
			small += min(HPAGE_PMD_NR, n - i);
		else
			again = true;
	}
	if (small && sdev->calls->svm_alloc_vram(sdev->kgd, small, frames))
		small = 0;	/* VRAM exhausted: only a huge page may still move */
	for (i = 0; i < n; i += nr) {
		struct page *spage = migrate_pfn_to_page(src[i]);
		/*
		 * Writable as the CPU mapping was (a page shared copy-on-write
		 * stays read-only); an empty PTE becomes what the VMA allows.
		 */
		unsigned long write = (src[i] & MIGRATE_PFN_WRITE) ||
				      (!spage && (vma->vm_flags & VM_WRITE)) ?
				      MIGRATE_PFN_WRITE : 0;

		nr = (src[i] & MIGRATE_PFN_COMPOUND) ? min(HPAGE_PMD_NR, n - i) : 1;
		if (!(src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		if (nr > 1 && spage && !huge)
			continue;	/* a THP without a block: second pass */
		if (nr > 1 && huge) {
			struct page *dpage = pfn_to_page(sdev->pfn_first + first);

			zone_device_folio_init(page_folio(dpage), &sdev->pgmap, HPAGE_PMD_ORDER);
			dpage->zone_device_data = rkfd_rs_svm_counters_get(counters, PAGE_SIZE * nr);
			dst[i] = migrate_pfn(page_to_pfn(dpage)) | MIGRATE_PFN_COMPOUND | write;
			for (j = 0; j < nr; j++) {
				dframes[k] = first + j;
				/* NULL source: untouched memory, the copy engine clears it. */
				pages[k++] = spage ? folio_page(page_folio(spage), j) : NULL;
			}
			continue;
		}
		if (next + nr > small)
			continue;	/* out of frames: stays in system memory */
		/* Page by page (the core splits a huge source page). */
		for (j = 0; j < nr; j++) {
			struct page *dpage = pfn_to_page(sdev->pfn_first + frames[next]);

			zone_device_page_init(dpage, &sdev->pgmap, 0);	/* locks it */
			dpage->zone_device_data = rkfd_rs_svm_counters_get(counters, PAGE_SIZE);
			dst[i + j] = migrate_pfn(page_to_pfn(dpage)) | write;
			dframes[k] = frames[next++];
			pages[k++] = spage && nr > 1 ? folio_page(page_folio(spage), j) : spage;
		}
	}
	/* Frames allocated but not used. */
	if (next < small)
		sdev->calls->svm_free_vram(sdev->kgd, frames + next, small - next);
	if (!k) {
		migrate_vma_finalize(&args);
		if (again)
			return rkfd_svm_ram_to_vram_vma(sdev, vma, start, end, counters, src, dst,
							frames, dframes, pages, false);
		return wanted ? -ENOMEM : 0;
	}
	err = sdev->calls->svm_copy(sdev->kgd, dframes, (void *const *)pages, k,
				    KGD_SVM_COPY_TO_VRAM);
	if (err) {
		/* Unlocked and put: folio_free gives the frames back. */
		for (i = 0; i < n; i++) {
			struct page *dpage = migrate_pfn_to_page(dst[i]);

			if (dpage) {
				unlock_page(dpage);
				put_page(dpage);
			}
			dst[i] = 0;
		}
		migrate_vma_finalize(&args);
		return err;
	}
	migrate_vma_pages(&args);
	for (i = 0, k = 0; i < n; i++)
		if (dst[i] && (src[i] & MIGRATE_PFN_MIGRATE))
			k += (dst[i] & MIGRATE_PFN_COMPOUND) ? min(HPAGE_PMD_NR, n - i) : 1;
	/* Pages that did not migrate are freed by finalize (folio_free). */
	migrate_vma_finalize(&args);
	rkfd_rs_svm_count_page_in(counters, k);
	if (again) {
		long more = rkfd_svm_ram_to_vram_vma(sdev, vma, start, end, counters, src, dst,
						     frames, dframes, pages, false);

		if (more > 0)
			k += more;
	}
	return k;
}

/* Walks the VMAs of [start, end) in batches; @to_vram selects the direction. */
static long rkfd_svm_migrate(struct mm_struct *mm, struct rkfd_svm_dev *sdev, u64 start,
			     u64 end, void *counters, bool to_vram)
{
	unsigned long *src, *dst;
	struct page **pages;
	u64 *frames, *dframes;
	long total = 0, ret = 0;
	u64 addr = start;

	mmap_assert_locked(mm);
	src = kvcalloc(RKFD_SVM_BATCH, sizeof(*src), GFP_KERNEL);
	dst = kvcalloc(RKFD_SVM_BATCH, sizeof(*dst), GFP_KERNEL);
	frames = kvcalloc(RKFD_SVM_BATCH, sizeof(*frames), GFP_KERNEL);
	dframes = kvcalloc(RKFD_SVM_BATCH, sizeof(*dframes), GFP_KERNEL);
	pages = kvcalloc(RKFD_SVM_BATCH, sizeof(*pages), GFP_KERNEL);
	if (!src || !dst || !frames || !dframes || !pages) {
		ret = -ENOMEM;
		goto out;
	}
	while (addr < end) {
		struct vm_area_struct *vma = vma_lookup(mm, addr);
		u64 next;

		if (!vma) {
			ret = -EFAULT;
			break;
		}
		next = min3(end, (u64)vma->vm_end,
			    ALIGN_DOWN(addr, RKFD_SVM_BATCH << PAGE_SHIFT) +
				    (RKFD_SVM_BATCH << PAGE_SHIFT));
		if (to_vram) {
			ret = rkfd_svm_ram_to_vram_vma(sdev, vma, addr, next, counters, src, dst,
						       frames, dframes, pages, rkfd_svm_huge(sdev));
		} else {
			struct migrate_vma args = {
				.vma = vma, .start = addr, .end = next, .src = src, .dst = dst,
			};

			memset(src, 0, RKFD_SVM_BATCH * sizeof(*src));
			memset(dst, 0, RKFD_SVM_BATCH * sizeof(*dst));
			ret = rkfd_svm_vram_to_ram(sdev, &args, rkfd_svm_huge(sdev));
		}
		if (ret < 0)
			break;
		total += ret;
		addr = next;
		cond_resched();
	}
out:
	kvfree(src);
	kvfree(dst);
	kvfree(frames);
	kvfree(dframes);
	kvfree(pages);
	/*
	 * The real errno, even after partial progress (what moved stays
	 * moved and counted): EFAULT for a VMA hole (a munmap whose range
	 * pruning is still pending), ENOMEM for memory.  VRAM that runs out
	 * part way is ENOSPC, which prefetch treats as "the rest stays in
	 * system memory".
	 */
	if (ret == -ENOMEM && total && to_vram)
		return -ENOSPC;
	return ret < 0 ? ret : total;
}

long rkfd_shim_svm_migrate_to_vram(struct mm_struct *mm, struct rkfd_svm_dev *sdev, u64 start,
				   u64 end, void *counters)
{
	return rkfd_svm_migrate(mm, sdev, start, end, counters, true);
}

long rkfd_shim_svm_migrate_to_ram(struct mm_struct *mm, struct rkfd_svm_dev *sdev, u64 start,
				  u64 end)
{
	return rkfd_svm_migrate(mm, sdev, start, end, NULL, false);
}

/* ------------------------------------------------------------------------
 * Ranges: one mmu_interval_notifier each.
 */

struct rkfd_svm_range {
	struct mmu_interval_notifier notifier;
	struct mutex lock;	/* upstream prange->lock */
	void *cookie;		/* Rust: the process's SVM state, in cookie_space */
	u64 cookie_space[];	/* the caller's cookie_size bytes */
};

static bool rkfd_svm_invalidate(struct mmu_interval_notifier *mni,
				const struct mmu_notifier_range *range, unsigned long cur_seq)
{
	struct rkfd_svm_range *r = container_of(mni, struct rkfd_svm_range, notifier);
	unsigned long start = max(range->start, mni->interval_tree.start);
	unsigned long end = min(range->end, mni->interval_tree.last + 1);
	unsigned int flags;

	/* The mm is going away: rkfd's process teardown unmaps everything. */
	if (range->event == MMU_NOTIFY_RELEASE)
		return true;
	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&r->lock);
	flags = memalloc_noreclaim_save();
	/*
	 * Rust first (it marks an XNACK-off process evicted, then unmaps),
	 * then the sequence: a GPU fault that finds the last mapping's
	 * sequence stale then also finds the eviction counted (Rust's
	 * Svms::xnack_off_retry).  Mappers wait for this lock, so none runs
	 * between the unmap and the new sequence.
	 */
	rkfd_rs_svm_invalidate(r->cookie, mni->interval_tree.start, start, end,
			       range->event == MMU_NOTIFY_UNMAP, range->event == MMU_NOTIFY_MIGRATE);
	mmu_interval_set_seq(mni, cur_seq);
	memalloc_noreclaim_restore(flags);
	mutex_unlock(&r->lock);
	return true;
}

static const struct mmu_interval_notifier_ops rkfd_svm_range_ops = {
	.invalidate = rkfd_svm_invalidate,
};

/*
 * Makes @mm ready for interval notifiers (mmu_notifier_register(NULL, mm)
 * sets up the interval tree).  mmu_interval_notifier_insert() would do it on
 * the first insertion, taking mmap_lock for writing, which the SVM paths
 * hold for reading: so once, when the process is created.
 */
int rkfd_shim_svm_mm_prepare(struct mm_struct *mm)
{
	return mmu_notifier_register(NULL, mm);
}

/*
 * A range's notifier in two steps, so that a caller can allocate every
 * notifier an operation needs before it changes its range tree, and then
 * register them without a failure path: rkfd_shim_svm_range_alloc (may
 * fail, no lock needed; one allocation holding the notifier and the
 * caller's @cookie_size bytes of cookie, 8-aligned, at most 64), then rkfd_shim_svm_range_insert (mmap_lock held
 * for writing, as upstream svm_range_add_notifier_locked; with the mm
 * prepared by rkfd_shim_svm_mm_prepare it allocates nothing).  A range
 * that was never inserted may be freed.
 */
int rkfd_shim_svm_range_alloc(size_t cookie_size, struct rkfd_svm_range **out, void **cookie)
{
	struct rkfd_svm_range *r;

	if (cookie_size > 64)
		return -EINVAL;
	r = kzalloc(struct_size(r, cookie_space, DIV_ROUND_UP(cookie_size, sizeof(u64))), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	mutex_init(&r->lock);
	r->cookie = r->cookie_space;
	*out = r;
	*cookie = r->cookie;
	return 0;
}

int rkfd_shim_svm_range_insert(struct rkfd_svm_range *r, struct mm_struct *mm, u64 start, u64 end)
{
	int ret;

	if (start >= end || (start | end) & ~PAGE_MASK || r->notifier.mm)
		return -EINVAL;
	ret = mmu_interval_notifier_insert_locked(&r->notifier, mm, start, end - start,
						  &rkfd_svm_range_ops);
	/* A failed insertion may have set the field: not registered. */
	if (ret)
		r->notifier.mm = NULL;
	return ret;
}

void *rkfd_shim_svm_range_cookie(struct rkfd_svm_range *r)
{
	return r->cookie;
}

void rkfd_shim_svm_range_free(struct rkfd_svm_range *r)
{
	/* Waits for running invalidate callbacks. */
	if (r->notifier.mm)
		mmu_interval_notifier_remove(&r->notifier);
	mutex_destroy(&r->lock);
	kfree(r);
}

/*
 * hmm_range_fault over [start, end) of @r (caller holds mmap_lock for
 * reading), then, under r->lock and unless an invalidation raced with it,
 * maps the result into @vm of @sdev's GPU.  Device pages of @sdev are
 * mapped as VRAM; any other page as system memory.  -EBUSY: raced, retry.
 * -EXDEV: @write and a device page is read-only: migrate to RAM first.
 * @write: fault pages writable.  *@seq: the notifier sequence the
 * mapping is valid for (rkfd_shim_svm_range_seq_valid).
 */
int rkfd_shim_svm_range_map(struct rkfd_svm_range *r, struct rkfd_svm_dev *sdev, void *vm,
			    u64 start, u64 end, bool write, unsigned long *seq)
{
	unsigned long n = (end - start) >> PAGE_SHIFT, i;
	unsigned long *pfns;
	u64 *ptes;
	struct hmm_range range = {
		.notifier = &r->notifier,
		.start = start,
		.end = end,
		.default_flags = HMM_PFN_REQ_FAULT | (write ? HMM_PFN_REQ_WRITE : 0),
		.dev_private_owner = sdev,
	};
	unsigned int flags;
	int ret;

	if (start >= end || start < r->notifier.interval_tree.start ||
	    end - 1 > r->notifier.interval_tree.last)
		return -EINVAL;
	mmap_assert_locked(r->notifier.mm);
	pfns = kvcalloc(n, sizeof(*pfns), GFP_KERNEL);
	ptes = kvcalloc(n, sizeof(*ptes), GFP_KERNEL);
	if (!pfns || !ptes) {
		ret = -ENOMEM;
		goto out;
	}
	range.hmm_pfns = pfns;
	range.notifier_seq = mmu_interval_read_begin(&r->notifier);
	ret = hmm_range_fault(&range);
	if (ret)
		goto out;
	for (i = 0; i < n; i++) {
		unsigned long p = pfns[i];
		struct page *page;

		if (!(p & HMM_PFN_VALID) || (p & HMM_PFN_ERROR))
			continue;
		page = hmm_pfn_to_page(p);
		if (is_device_private_page(page)) {
			if (page_to_sdev(page) != sdev)
				continue;	/* cannot happen: owner is sdev */
			/*
			 * A huge device page mapped by a PMD: 7.3's
			 * hmm_vma_handle_absent_pmd() numbers the pfns from the
			 * folio's head at the start of the walk, also when the
			 * range starts inside the PMD (hmm_vma_handle_pmd adds
			 * the offset).  Take the page from the address.
			 */
			if (hmm_pfn_to_map_order(p)) {
				unsigned long addr = start + (i << PAGE_SHIFT);
				unsigned long size = PAGE_SIZE << hmm_pfn_to_map_order(p);
				struct folio *folio = page_folio(page);

				if (folio_size(folio) == size)
					page = folio_page(folio, (addr & (size - 1)) >> PAGE_SHIFT);
			}
			/*
			 * hmm_range_fault does not fault our own device pages,
			 * so a read-only one (shared copy-on-write after fork)
			 * cannot be written by the GPU in place: the caller
			 * migrates the window to system memory (where the CPU
			 * fault breaks the COW) and maps again.
			 */
			if (write && !(p & HMM_PFN_WRITE)) {
				ret = -EXDEV;
				goto out;
			}
			ptes[i] = KGD_SVM_PTE_VALID | KGD_SVM_PTE_VRAM | page_to_frame(sdev, page);
		} else {
			ptes[i] = KGD_SVM_PTE_VALID | page_to_pfn(page);
		}
		if (p & HMM_PFN_WRITE)
			ptes[i] |= KGD_SVM_PTE_WRITE;
	}
	mutex_lock(&r->lock);
	flags = memalloc_noreclaim_save();
	if (mmu_interval_read_retry(&r->notifier, range.notifier_seq))
		ret = -EBUSY;
	else
		ret = sdev->calls->svm_map(sdev->kgd, vm, start, n, ptes);
	*seq = range.notifier_seq;
	memalloc_noreclaim_restore(flags);
	mutex_unlock(&r->lock);
out:
	kvfree(pfns);
	kvfree(ptes);
	return ret;
}

/*
 * Where the pages of [start, end) of @r are (upstream prange->actual_loc,
 * which upstream keeps as bookkeeping; here it is read from the CPU page
 * table): hmm_range_fault without faulting anything, @sdev as the
 * device-private owner, so its device pages are reported and anything
 * else not present is skipped.  *@dev_pages: pages in @sdev's VRAM;
 * *@ram_pages: pages present in system memory.  Caller holds mmap_lock for
 * reading.  -EBUSY: invalidations kept racing.
 */
int rkfd_shim_svm_range_locate(struct rkfd_svm_range *r, struct rkfd_svm_dev *sdev,
			       u64 start, u64 end, u64 *dev_pages, u64 *ram_pages)
{
	unsigned long *pfns;
	u64 at;
	int ret = 0;

	*dev_pages = 0;
	*ram_pages = 0;
	if (start >= end || start < r->notifier.interval_tree.start ||
	    end - 1 > r->notifier.interval_tree.last)
		return -EINVAL;
	mmap_assert_locked(r->notifier.mm);
	pfns = kvcalloc(RKFD_SVM_BATCH, sizeof(*pfns), GFP_KERNEL);
	if (!pfns)
		return -ENOMEM;
	for (at = start; at < end && !ret;) {
		u64 stop = min_t(u64, end, at + (RKFD_SVM_BATCH << PAGE_SHIFT));
		unsigned long n = (stop - at) >> PAGE_SHIFT, i;
		struct hmm_range range = {
			.notifier = &r->notifier,
			.start = at,
			.end = stop,
			.hmm_pfns = pfns,
			.dev_private_owner = sdev,
		};
		int tries = 16;

		do {
			memset(pfns, 0, n * sizeof(*pfns));
			range.notifier_seq = mmu_interval_read_begin(&r->notifier);
			ret = hmm_range_fault(&range);
		} while (ret == -EBUSY && --tries);
		if (ret)
			break;
		for (i = 0; i < n; i++) {
			if (!(pfns[i] & HMM_PFN_VALID) || (pfns[i] & HMM_PFN_ERROR))
				continue;
			if (is_device_private_page(hmm_pfn_to_page(pfns[i])))
				(*dev_pages)++;
			else
				(*ram_pages)++;
		}
		at = stop;
	}
	kvfree(pfns);
	return ret;
}

/* Unmaps [start, end) from @vm under r->lock (range removal, NO_ACCESS). */
void rkfd_shim_svm_range_unmap(struct rkfd_svm_range *r, struct rkfd_svm_dev *sdev, void *vm,
			       u64 start, u64 end)
{
	unsigned int flags;

	mutex_lock(&r->lock);
	flags = memalloc_noreclaim_save();
	sdev->calls->svm_unmap(sdev->kgd, vm, start, (end - start) >> PAGE_SHIFT);
	memalloc_noreclaim_restore(flags);
	mutex_unlock(&r->lock);
}

/* ------------------------------------------------------------------------
 * The SVM workqueue (deferred munmap processing, the XNACK-off restore
 * worker): rkfd's own, so module exit drains it.
 */

static struct workqueue_struct *rkfd_svm_wq;

int rkfd_shim_svm_wq_init(void)
{
	rkfd_svm_wq = alloc_workqueue("rkfd_svm", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	return rkfd_svm_wq ? 0 : -ENOMEM;
}

void rkfd_shim_svm_wq_exit(void)
{
	if (rkfd_svm_wq)
		destroy_workqueue(rkfd_svm_wq);
	rkfd_svm_wq = NULL;
}

struct workqueue_struct *rkfd_shim_svm_wq(void)
{
	return rkfd_svm_wq;
}

/* mmap_lock for the SVM paths (Rust for Linux 7.3 has no write guard). */
void rkfd_shim_mmap_lock(struct mm_struct *mm, bool write)
{
	if (write)
		mmap_write_lock(mm);
	else
		mmap_read_lock(mm);
}

void rkfd_shim_mmap_unlock(struct mm_struct *mm, bool write)
{
	if (write)
		mmap_write_unlock(mm);
	else
		mmap_read_unlock(mm);
}

void rkfd_shim_mmap_downgrade(struct mm_struct *mm)
{
	mmap_write_downgrade(mm);
}

/*
 * The VMA at @addr (mmap_lock held): its bounds and whether SVM may use it
 * (upstream svm_range_check_vm: not VM_IO | VM_PFNMAP | VM_MIXEDMAP).
 * -EFAULT: none there.
 */
int rkfd_shim_vma_at(struct mm_struct *mm, u64 addr, u64 *start, u64 *end, bool *usable)
{
	struct vm_area_struct *vma;

	mmap_assert_locked(mm);
	vma = vma_lookup(mm, addr);
	if (!vma)
		return -EFAULT;
	*start = vma->vm_start;
	*end = vma->vm_end;
	*usable = !(vma->vm_flags & (VM_IO | VM_PFNMAP | VM_MIXEDMAP));
	return 0;
}

/*
 * Whether the VMA at @addr is the process's initial heap (brk) or stack
 * (upstream svm_range_get_range_boundaries' is_heap_stack: a range created
 * there by a GPU fault prefers system memory).  false if there is no VMA.
 */
bool rkfd_shim_vma_heap_stack(struct mm_struct *mm, u64 addr)
{
	struct vm_area_struct *vma;

	mmap_assert_locked(mm);
	vma = vma_lookup(mm, addr);
	return vma && (vma_is_initial_heap(vma) || vma_is_initial_stack(vma));
}

/* The first VMA ending after @addr (find_vma): its bounds; -ENOENT if none. */
int rkfd_shim_vma_next(struct mm_struct *mm, u64 addr, u64 *start, u64 *end)
{
	struct vm_area_struct *vma;

	mmap_assert_locked(mm);
	vma = find_vma(mm, addr);
	if (!vma)
		return -ENOENT;
	*start = vma->vm_start;
	*end = vma->vm_end;
	return 0;
}

/* Whether no invalidation of @r happened since @seq (the duplicate-fault filter). */
bool rkfd_shim_svm_range_seq_valid(struct rkfd_svm_range *r, unsigned long seq)
{
	return !mmu_interval_check_retry(&r->notifier, seq);
}
