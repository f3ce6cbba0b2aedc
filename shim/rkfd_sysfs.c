// SPDX-License-Identifier: GPL-2.0
/*
 * rkfd sysfs shim: kobject directories with read-only files formatted in
 * Rust (src/kabi/sysfs.rs), and the host facts the KFD topology prints for
 * its CPU nodes (as upstream's kfd_crat.c / kfd_topology.c read them).
 */
#include <linux/acpi.h>
#include <linux/cpufreq.h>
#include <linux/cpumask.h>
#include <linux/dmi.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/mmzone.h>
#include <linux/nodemask.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/topology.h>
#if defined(CONFIG_X86_64) && !defined(CONFIG_UML)
#include <asm/processor.h>
#endif

#include "rkfd_shim.h"
#include "rkfd_sysfs.h"

/* One read-only file; @file is its index in the directory's file list. */
struct rkfd_sysfs_attr {
	struct attribute attr;
	unsigned int file;
};

struct rkfd_sysfs_dir {
	struct kobject kobj;
	const void *data;		/* the Rust formatter's object */
	rkfd_sysfs_show_t show;
	unsigned int nr_files;
	struct rkfd_sysfs_attr files[] __counted_by(nr_files);
};

static ssize_t rkfd_sysfs_attr_show(struct kobject *kobj, struct attribute *attr, char *buf)
{
	struct rkfd_sysfs_dir *dir = container_of(kobj, struct rkfd_sysfs_dir, kobj);
	struct rkfd_sysfs_attr *file = container_of(attr, struct rkfd_sysfs_attr, attr);

	/* sysfs_kf_seq_show() hands us a zeroed buffer of PAGE_SIZE bytes. */
	return dir->show(dir->data, file->file, buf);
}

static void rkfd_sysfs_release(struct kobject *kobj)
{
	struct rkfd_sysfs_dir *dir = container_of(kobj, struct rkfd_sysfs_dir, kobj);
	unsigned int i;

	for (i = 0; i < dir->nr_files; i++)
		kfree_const(dir->files[i].attr.name);
	kfree(dir);
}

static const struct sysfs_ops rkfd_sysfs_ops = {
	.show = rkfd_sysfs_attr_show,
};

static const struct kobj_type rkfd_sysfs_ktype = {
	.release = rkfd_sysfs_release,
	.sysfs_ops = &rkfd_sysfs_ops,
};

struct kobject *rkfd_shim_sysfs_dir_kobj(struct rkfd_sysfs_dir *dir)
{
	return &dir->kobj;
}

/*
 * Creates directory @name under @parent with @nr_files files named @files
 * (mode 0444).  On failure nothing is left behind and @data is not retained.
 */
int rkfd_shim_sysfs_dir_create(struct kobject *parent, const char *name,
			       const char *const *files, unsigned int nr_files,
			       const void *data, rkfd_sysfs_show_t show,
			       struct rkfd_sysfs_dir **out)
{
	struct rkfd_sysfs_dir *dir;
	unsigned int i;
	int err;

	if (!parent)
		return -ENODEV;
	if (nr_files && !show)
		return -EINVAL;

	dir = kzalloc(struct_size(dir, files, nr_files), GFP_KERNEL);
	if (!dir)
		return -ENOMEM;
	dir->nr_files = nr_files;
	dir->data = data;
	dir->show = show;
	/* From here on the release callback frees everything. */
	kobject_init(&dir->kobj, &rkfd_sysfs_ktype);

	for (i = 0; i < nr_files; i++) {
		struct attribute *attr = &dir->files[i].attr;

		attr->name = kstrdup_const(files[i], GFP_KERNEL);
		if (!attr->name) {
			err = -ENOMEM;
			goto put;
		}
		attr->mode = 0444;
		sysfs_attr_init(attr);
		dir->files[i].file = i;
	}

	err = kobject_add(&dir->kobj, parent, "%s", name);
	if (err)
		goto put;

	for (i = 0; i < nr_files; i++) {
		err = sysfs_create_file(&dir->kobj, &dir->files[i].attr);
		if (err)
			goto del;
	}
	*out = dir;
	return 0;

del:
	kobject_del(&dir->kobj);
put:
	kobject_put(&dir->kobj);
	return err;
}

/*
 * Removes the directory from sysfs and drops its reference.  kobject_del()
 * removes the kernfs nodes, which waits until every running show() has
 * returned and makes later opens and reads fail.
 */
void rkfd_shim_sysfs_dir_destroy(struct rkfd_sysfs_dir *dir)
{
	kobject_del(&dir->kobj);
	kobject_put(&dir->kobj);
}

#if IS_BUILTIN(CONFIG_KUNIT)
struct kobject *rkfd_shim_sysfs_kunit_parent(void)
{
	return kernel_kobj;
}

/*
 * Reads @path (relative to the sysfs root) through the VFS.  Uses a private
 * sysfs mount: the test's kthread may not see the /sys of user space's
 * mount namespace.
 */
ssize_t rkfd_shim_sysfs_kunit_read(const char *path, char *buf, size_t len)
{
	struct file_system_type *type;
	struct vfsmount *mnt;
	struct file *f;
	loff_t pos = 0;
	ssize_t done = 0, n;

	type = get_fs_type("sysfs");
	if (!type)
		return -ENODEV;
	/* sysfs is built in: get_fs_type() took no module reference. */
	mnt = vfs_kern_mount(type, SB_KERNMOUNT, "sysfs", NULL);
	if (IS_ERR(mnt))
		return PTR_ERR(mnt);
	f = file_open_root_mnt(mnt, path, O_RDONLY, 0);
	if (IS_ERR(f)) {
		done = PTR_ERR(f);
		goto out;
	}
	while (done < len) {
		n = kernel_read(f, buf + done, len - done, &pos);
		if (n < 0) {
			done = n;
			break;
		}
		if (n == 0)
			break;
		done += n;
	}
	filp_close(f, NULL);
out:
	mntput(mnt);
	return done;
}
#endif

/* --- Host facts (kfd_crat.c: kfd_create_vcrat_image_cpu and helpers) --- */

/* The online NUMA node after @nid (-1: the first one), or -1 at the end. */
int rkfd_shim_host_next_node(int nid)
{
	int next = nid < 0 ? first_online_node : next_online_node(nid);

	return next < MAX_NUMNODES ? next : -1;
}

/*
 * CPU count of @nid and the APIC id of its first CPU (kfd_numa_node_to_apic_id);
 * -ENODEV for a node without CPUs, which upstream leaves out of the topology.
 */
int rkfd_shim_host_node_cpus(int nid, u32 *cores, u32 *apic_id_base)
{
	const struct cpumask *mask = cpumask_of_node(nid);
	unsigned int cpu;

	if (!mask || mask == cpu_none_mask)
		return -ENODEV;
	cpu = cpumask_first(mask);
	if (cpu >= nr_cpu_ids)
		return -ENODEV;
#if defined(CONFIG_X86_64) && !defined(CONFIG_UML)
	*apic_id_base = cpu_data(cpu).topo.apicid;
#else
	*apic_id_base = cpu;
#endif
	*cores = cpumask_weight(mask);
	return 0;
}

/* Managed memory of @nid in bytes (kfd_fill_mem_info_for_cpu). */
u64 rkfd_shim_host_node_mem_bytes(int nid)
{
	pg_data_t *pgdat = NODE_DATA(nid);
	u64 pages = 0;
	int zone_type;

	for (zone_type = 0; zone_type < MAX_NR_ZONES; zone_type++)
		pages += zone_managed_pages(&pgdat->node_zones[zone_type]);
	return pages << PAGE_SHIFT;
}

u32 rkfd_shim_host_node_distance(int from, int to)
{
	return node_distance(from, to);
}

/*
 * The CRAT io link type between CPU nodes (kfd_fill_iolink_info_for_cpu):
 * HyperTransport (1) on AMD, QPI 1.1 (5) otherwise; 0 where upstream
 * creates no CPU links (non-x86_64).
 */
u32 rkfd_shim_host_cpu_link_type(void)
{
#if defined(CONFIG_X86_64) && !defined(CONFIG_UML)
	return cpu_data(0).x86_vendor == X86_VENDOR_AMD ? 1 : 5;
#else
	return 0;
#endif
}

/* SMBIOS type 17 (memory device), as kfd_topology.c declares it. */
struct rkfd_dmi_mem_device {
	struct dmi_header header;
	u16 physical_handle;
	u16 error_handle;
	u16 total_width;
	u16 data_width;
	u16 size;
	u8 form_factor;
	u8 device_set;
	u8 device_locator;
	u8 bank_locator;
	u8 memory_type;
	u16 type_detail;
	u16 speed;
} __packed;

struct rkfd_dmi_memory {
	u32 width;
	u32 mem_clk_max;
};

static void rkfd_find_system_memory(const struct dmi_header *dm, void *private)
{
	const struct rkfd_dmi_mem_device *memdev =
		container_of(dm, struct rkfd_dmi_mem_device, header);
	struct rkfd_dmi_memory *mem = private;

	if (memdev->header.type != DMI_ENTRY_MEM_DEVICE)
		return;
	if (memdev->header.length < sizeof(struct rkfd_dmi_mem_device))
		return;
	if (memdev->total_width != 0xFFFF && memdev->total_width != 0)
		mem->width = memdev->total_width;
	if (memdev->speed != 0)
		mem->mem_clk_max = memdev->speed;
}

/* Width and clock of system memory from DMI (find_system_memory); 0 if unknown. */
void rkfd_shim_host_dmi_memory(u32 *width, u32 *mem_clk_max)
{
	struct rkfd_dmi_memory mem = {};

	dmi_walk(rkfd_find_system_memory, &mem);
	*width = mem.width;
	*mem_clk_max = mem.mem_clk_max;
}

/* cpufreq_quick_get_max(0) in kHz; 0 without cpufreq. */
u32 rkfd_shim_host_cpu_max_khz(void)
{
	return cpufreq_quick_get_max(0);
}

/*
 * system_properties from the ACPI DSDT header, as upstream copies it into
 * the CPU CRAT: platform_oem = OEM table id, platform_id = OEM id,
 * platform_rev = table revision.  All 0 without a DSDT.
 */
void rkfd_shim_host_platform(u64 *oem, u64 *id, u64 *rev)
{
	*oem = 0;
	*id = 0;
	*rev = 0;
#if IS_ENABLED(CONFIG_ACPI)
	{
		struct acpi_table_header *dsdt;

		if (ACPI_FAILURE(acpi_get_table(ACPI_SIG_DSDT, 0, &dsdt))) {
			pr_warn("DSDT table not found for OEM information\n");
			return;
		}
		BUILD_BUG_ON(sizeof(dsdt->oem_table_id) != sizeof(*oem));
		BUILD_BUG_ON(sizeof(dsdt->oem_id) > sizeof(*id));
		memcpy(oem, dsdt->oem_table_id, sizeof(dsdt->oem_table_id));
		memcpy(id, dsdt->oem_id, sizeof(dsdt->oem_id));
		*rev = dsdt->revision;
		acpi_put_table(dsdt);
	}
#endif
}
