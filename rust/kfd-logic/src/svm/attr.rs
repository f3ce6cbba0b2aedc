// SPDX-License-Identifier: GPL-2.0 OR MIT

//! SVM attributes: the ABI constants, a range's attribute record, argument
//! validation and `GET_ATTR` aggregation.
//!
//! C: `svm_range_check_attr`, `svm_range_apply_attrs`,
//! `svm_range_is_same_attrs`, `svm_range_set_default_attributes`,
//! `svm_range_get_attr`, `kfd_ioctl_svm_validate` and `kfd_ioctl_svm`
//! (`kfd_svm.c`, `kfd_chardev.c`).  Everything here is a transcription of
//! those functions over plain values; the order of checks (and so which
//! errno wins when several arguments are bad) is upstream's, see
//! [`super`] for the whole call sequence.

use super::SvmError;

/// `KFD_IOCTL_SVM_OP_SET_ATTR`.
pub const OP_SET_ATTR: u32 = 0;
/// `KFD_IOCTL_SVM_OP_GET_ATTR`.
pub const OP_GET_ATTR: u32 = 1;

/// `KFD_IOCTL_SVM_LOCATION_SYSMEM`.
pub const LOCATION_SYSMEM: u32 = 0;
/// `KFD_IOCTL_SVM_LOCATION_UNDEFINED`.
pub const LOCATION_UNDEFINED: u32 = 0xffff_ffff;

/// `KFD_IOCTL_SVM_ATTR_PREFERRED_LOC`.
pub const ATTR_PREFERRED_LOC: u32 = 0;
/// `KFD_IOCTL_SVM_ATTR_PREFETCH_LOC`.
pub const ATTR_PREFETCH_LOC: u32 = 1;
/// `KFD_IOCTL_SVM_ATTR_ACCESS`.
pub const ATTR_ACCESS: u32 = 2;
/// `KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE`.
pub const ATTR_ACCESS_IN_PLACE: u32 = 3;
/// `KFD_IOCTL_SVM_ATTR_NO_ACCESS`.
pub const ATTR_NO_ACCESS: u32 = 4;
/// `KFD_IOCTL_SVM_ATTR_SET_FLAGS`.
pub const ATTR_SET_FLAGS: u32 = 5;
/// `KFD_IOCTL_SVM_ATTR_CLR_FLAGS`.
pub const ATTR_CLR_FLAGS: u32 = 6;
/// `KFD_IOCTL_SVM_ATTR_GRANULARITY`.
pub const ATTR_GRANULARITY: u32 = 7;

/// `KFD_IOCTL_SVM_FLAG_HOST_ACCESS`.
pub const FLAG_HOST_ACCESS: u32 = 0x1;
/// `KFD_IOCTL_SVM_FLAG_COHERENT`.
pub const FLAG_COHERENT: u32 = 0x2;
/// `KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED`.
pub const FLAG_GPU_ALWAYS_MAPPED: u32 = 0x40;

/// Flags of a new range (`svm_range_set_default_attributes`).
pub const DEFAULT_FLAGS: u32 = FLAG_HOST_ACCESS | FLAG_COHERENT;

/// Largest granularity a range stores (`svm_range_apply_attrs` caps at 0x3F).
pub const MAX_GRANULARITY: u32 = 0x3f;
/// Largest default granularity (`svm_range_list_init` caps the module
/// parameter at 0x1B, "the number of pages supported by a 4-level paging
/// table").
pub const MAX_DEFAULT_GRANULARITY: u8 = 0x1b;
/// Upstream's default granularity (`amdgpu_svm_default_granularity` = 9,
/// 2 MiB).
pub const DEFAULT_GRANULARITY: u8 = 9;

/// Most GPUs a process can have (`MAX_GPU_INSTANCE`): the width of [`GpuMask`].
pub const MAX_GPU_INSTANCE: usize = 64;

/// Page shift of the addresses user space passes (x86-64; the kernel crate
/// checks it against `PAGE_SHIFT` at build time).
pub const PAGE_SHIFT: u32 = 12;
/// Page size in bytes.
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;

/// Size of `struct kfd_ioctl_svm_args` without its trailing `attrs[]`.
pub const ARGS_HEADER_SIZE: u64 = 24;
/// Size of one `struct kfd_ioctl_svm_attribute`.
pub const ATTR_SIZE: u64 = 8;

/// A set of GPUs by process-device index (upstream `DECLARE_BITMAP(..,
/// MAX_GPU_INSTANCE)`; the index is the pdd index, `gpuidx`).
pub type GpuMask = u64;

/// One `struct kfd_ioctl_svm_attribute`: `(type, value)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attr {
    /// `KFD_IOCTL_SVM_ATTR_*`.
    pub ty: u32,
    /// A location, a gpu_id, flags or a granularity, depending on `ty`.
    pub value: u32,
}

impl Attr {
    /// Shorthand constructor.
    pub const fn new(ty: u32, value: u32) -> Self {
        Attr { ty, value }
    }
}

/// The GPUs of the calling process, as SVM sees them.
///
/// `ids[i]` is the gpu_id of process device `i` (upstream `p->pdds[i]`);
/// bit `i` of `supported` says whether that device can do SVM
/// (`svms->bitmap_supported`, set from `KFD_IS_SVM_API_SUPPORTED`).
#[derive(Clone, Copy, Debug)]
pub struct Gpus<'a> {
    /// gpu_id of each process device, in pdd order.
    pub ids: &'a [u32],
    /// SVM-capable devices, by index into `ids`.
    pub supported: GpuMask,
}

impl Gpus<'_> {
    /// Index of a gpu_id (`kfd_process_gpuidx_from_gpuid`), `None` if the
    /// process has no such device.
    pub fn index(&self, gpu_id: u32) -> Option<usize> {
        self.ids
            .iter()
            .position(|&id| id == gpu_id)
            .filter(|&i| i < MAX_GPU_INSTANCE)
    }

    /// The SVM-capable devices restricted to existing indices.
    pub fn supported_mask(&self) -> GpuMask {
        let n = self.ids.len().min(MAX_GPU_INSTANCE);
        let all = if n == MAX_GPU_INSTANCE {
            !0
        } else {
            (1u64 << n) - 1
        };
        self.supported & all
    }
}

/// The attributes of one range (the attribute fields of `struct svm_range`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attrs {
    /// `preferred_loc`: SYSMEM, UNDEFINED or a gpu_id.
    pub preferred_loc: u32,
    /// `prefetch_loc`: SYSMEM, UNDEFINED or a gpu_id.
    pub prefetch_loc: u32,
    /// `flags`: `KFD_IOCTL_SVM_FLAG_*`.
    pub flags: u32,
    /// `granularity`: log2 of the migration/mapping window in pages.
    pub granularity: u8,
    /// `bitmap_access`: GPUs that may access (and migrate) the range.
    pub access: GpuMask,
    /// `bitmap_aip`: GPUs that may access the range in place.
    pub access_in_place: GpuMask,
    /// `actual_loc`: where the pages are now (0 = system memory, else a
    /// gpu_id).  Set by the migration machinery, never by `SET_ATTR`; kept
    /// here so splitting copies it with the rest.
    pub actual_loc: u32,
}

impl Attrs {
    /// Attributes of a new range (`svm_range_new` +
    /// `svm_range_set_default_attributes`): locations UNDEFINED, flags
    /// HOST_ACCESS|COHERENT, the process's default granularity, access for
    /// every SVM-capable GPU when XNACK is on and for none when it is off.
    pub fn defaults(default_granularity: u8, xnack_enabled: bool, supported: GpuMask) -> Self {
        Attrs {
            preferred_loc: LOCATION_UNDEFINED,
            prefetch_loc: LOCATION_UNDEFINED,
            flags: DEFAULT_FLAGS,
            granularity: default_granularity,
            access: if xnack_enabled { supported } else { 0 },
            access_in_place: 0,
            actual_loc: LOCATION_SYSMEM,
        }
    }

    /// Applies a `SET_ATTR` list in order (`svm_range_apply_attrs`).  The
    /// list must have passed [`check_set_attrs`]; an entry that did not
    /// (unknown type, unknown gpu) is skipped.  Returns whether the GPU
    /// mappings need an update: flags changed, or access changed with XNACK
    /// off (upstream's `update_mapping`).
    pub fn apply(&mut self, attrs: &[Attr], gpus: &Gpus<'_>, xnack_enabled: bool) -> bool {
        let mut update_mapping = false;
        for a in attrs {
            match a.ty {
                ATTR_PREFERRED_LOC => self.preferred_loc = a.value,
                ATTR_PREFETCH_LOC => self.prefetch_loc = a.value,
                ATTR_ACCESS | ATTR_ACCESS_IN_PLACE | ATTR_NO_ACCESS => {
                    if !xnack_enabled {
                        update_mapping = true;
                    }
                    let Some(i) = gpus.index(a.value) else {
                        continue;
                    };
                    let bit = 1u64 << i;
                    match a.ty {
                        ATTR_NO_ACCESS => {
                            self.access &= !bit;
                            self.access_in_place &= !bit;
                        }
                        ATTR_ACCESS => {
                            self.access |= bit;
                            self.access_in_place &= !bit;
                        }
                        _ => {
                            self.access &= !bit;
                            self.access_in_place |= bit;
                        }
                    }
                }
                ATTR_SET_FLAGS => {
                    update_mapping = true;
                    self.flags |= a.value;
                }
                ATTR_CLR_FLAGS => {
                    update_mapping = true;
                    self.flags &= !a.value;
                }
                ATTR_GRANULARITY => self.granularity = a.value.min(MAX_GRANULARITY) as u8,
                _ => {}
            }
        }
        update_mapping
    }

    /// Whether applying `attrs` would change nothing
    /// (`svm_range_is_same_attrs`).  A PREFETCH_LOC entry is never "the
    /// same": prefetching always triggers a migration.
    pub fn is_same(&self, attrs: &[Attr], gpus: &Gpus<'_>) -> bool {
        for a in attrs {
            let same = match a.ty {
                ATTR_PREFERRED_LOC => self.preferred_loc == a.value,
                ATTR_PREFETCH_LOC => false,
                ATTR_ACCESS | ATTR_ACCESS_IN_PLACE | ATTR_NO_ACCESS => {
                    let Some(i) = gpus.index(a.value) else {
                        return false;
                    };
                    let bit = 1u64 << i;
                    match a.ty {
                        ATTR_NO_ACCESS => (self.access | self.access_in_place) & bit == 0,
                        ATTR_ACCESS => self.access & bit != 0,
                        _ => self.access_in_place & bit != 0,
                    }
                }
                ATTR_SET_FLAGS => self.flags & a.value == a.value,
                ATTR_CLR_FLAGS => self.flags & a.value == 0,
                ATTR_GRANULARITY => u32::from(self.granularity) == a.value,
                _ => false,
            };
            if !same {
                return false;
            }
        }
        true
    }
}

/// `kfd_ioctl_svm_validate`: the caller's argument size (`_IOC_SIZE` of the
/// command) must hold the header and `nattr` attributes.  Computed in u64,
/// so no `nattr` overflows (upstream: `struct_size` saturating to
/// `SIZE_MAX`).
pub fn check_ioctl_size(user_size: usize, nattr: u32) -> Result<(), SvmError> {
    let expected = ARGS_HEADER_SIZE + ATTR_SIZE * u64::from(nattr);
    if (user_size as u64) < expected {
        return Err(SvmError::Inval);
    }
    Ok(())
}

/// A request's range in pages: `[start, start + npages)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// First page.
    pub start: u64,
    /// Number of pages (non-zero).
    pub npages: u64,
}

impl PageRequest {
    /// Last page, `start + npages - 1`.  Upstream computes it without a
    /// check (`svm_range_add`, `svm_range_get_attr`); it only runs after
    /// [`check_range_overflow`], so it cannot wrap there.
    pub fn last(&self) -> u64 {
        self.start.wrapping_add(self.npages).wrapping_sub(1)
    }
}

/// `kfd_ioctl_svm`'s own checks: start and size page-aligned and non-zero
/// (`-EINVAL`); returns the range in pages (`svm_ioctl`'s shift).
pub fn check_request(start_addr: u64, size: u64) -> Result<PageRequest, SvmError> {
    if start_addr & (PAGE_SIZE - 1) != 0 || size & (PAGE_SIZE - 1) != 0 {
        return Err(SvmError::Inval);
    }
    if start_addr == 0 || size == 0 {
        return Err(SvmError::Inval);
    }
    Ok(PageRequest {
        start: start_addr >> PAGE_SHIFT,
        npages: size >> PAGE_SHIFT,
    })
}

/// The first step of `svm_range_is_valid`: the end address must not wrap
/// (`-EOVERFLOW`).  Returns `[start_addr, end_addr)` in bytes for the VMA
/// walk.
pub fn check_range_overflow(req: &PageRequest) -> Result<(u64, u64), SvmError> {
    let start = req.start << PAGE_SHIFT;
    let end = start
        .checked_add(req.npages << PAGE_SHIFT)
        .ok_or(SvmError::Overflow)?;
    Ok((start, end))
}

/// `svm_range_check_attr`: every type known, every gpu_id named by a
/// location or access entry one of the process's SVM-capable GPUs
/// (`-EINVAL`).  PREFERRED_LOC may also be SYSMEM or UNDEFINED,
/// PREFETCH_LOC may be SYSMEM (UNDEFINED is looked up as a gpu_id and so
/// refused, as upstream).
pub fn check_set_attrs(attrs: &[Attr], gpus: &Gpus<'_>) -> Result<(), SvmError> {
    for a in attrs {
        let gpu = match a.ty {
            ATTR_PREFERRED_LOC => {
                (a.value != LOCATION_SYSMEM && a.value != LOCATION_UNDEFINED).then_some(a.value)
            }
            ATTR_PREFETCH_LOC => (a.value != LOCATION_SYSMEM).then_some(a.value),
            ATTR_ACCESS | ATTR_ACCESS_IN_PLACE | ATTR_NO_ACCESS => Some(a.value),
            ATTR_SET_FLAGS | ATTR_CLR_FLAGS | ATTR_GRANULARITY => None,
            _ => return Err(SvmError::Inval),
        };
        if let Some(id) = gpu {
            let i = gpus.index(id).ok_or(SvmError::Inval)?;
            if gpus.supported & (1u64 << i) == 0 {
                return Err(SvmError::Inval);
            }
        }
    }
    Ok(())
}

/// What a `GET_ATTR` list asks for (the `get_*` booleans of
/// `svm_range_get_attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GetQuery {
    /// PREFERRED_LOC asked.
    pub preferred_loc: bool,
    /// PREFETCH_LOC asked.
    pub prefetch_loc: bool,
    /// ACCESS asked (its value names the GPU).
    pub access: bool,
    /// SET_FLAGS or CLR_FLAGS asked.
    pub flags: bool,
    /// GRANULARITY asked.
    pub granularity: bool,
}

/// Parses a `GET_ATTR` list: ACCESS_IN_PLACE, NO_ACCESS and unknown types
/// are `-EINVAL` (the gpu_id of an ACCESS entry is only checked when the
/// answer is filled in, see [`GetAggregate::fill`]).
pub fn parse_get_attrs(attrs: &[Attr]) -> Result<GetQuery, SvmError> {
    let mut q = GetQuery::default();
    for a in attrs {
        match a.ty {
            ATTR_PREFERRED_LOC => q.preferred_loc = true,
            ATTR_PREFETCH_LOC => q.prefetch_loc = true,
            ATTR_ACCESS => q.access = true,
            ATTR_SET_FLAGS | ATTR_CLR_FLAGS => q.flags = true,
            ATTR_GRANULARITY => q.granularity = true,
            _ => return Err(SvmError::Inval),
        }
    }
    Ok(q)
}

/// The running aggregate of `svm_range_get_attr` over the ranges that
/// intersect the queried interval.
///
/// Upstream rules, kept exactly:
///
/// - no range intersects: the defaults of a new range (UNDEFINED
///   locations, default flags and granularity, access = every SVM-capable
///   GPU with XNACK on, none with it off, no access-in-place);
/// - otherwise only the ranges count; pages of the interval that no range
///   covers are ignored;
/// - a location is the ranges' common value, UNDEFINED as soon as one range
///   has UNDEFINED or a different value;
/// - ACCESS: AND of the ranges' access bitmaps and, separately, of their
///   access-in-place bitmaps, both starting from the SVM-capable set;
///   the answer is ACCESS if the GPU is in the first, else ACCESS_IN_PLACE
///   if in the second, else NO_ACCESS;
/// - SET_FLAGS answers the AND of the flags, CLR_FLAGS the complement of
///   their OR;
/// - GRANULARITY is the minimum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GetAggregate {
    query: GetQuery,
    location: u32,
    prefetch_loc: u32,
    access: GpuMask,
    access_in_place: GpuMask,
    flags_and: u32,
    flags_or: u32,
    granularity: u8,
    seen: bool,
}

impl GetAggregate {
    /// Starts an aggregation for `query`.
    pub fn new(query: GetQuery, gpus: &Gpus<'_>) -> Self {
        let supported = gpus.supported_mask();
        GetAggregate {
            query,
            location: LOCATION_UNDEFINED,
            prefetch_loc: LOCATION_UNDEFINED,
            access: supported,
            access_in_place: supported,
            flags_and: 0xffff_ffff,
            flags_or: 0,
            granularity: 0xff,
            seen: false,
        }
    }

    /// Adds one range that intersects the interval (in address order, as
    /// upstream's interval-tree walk).
    pub fn add(&mut self, a: &Attrs) {
        self.seen = true;
        let q = &mut self.query;
        if q.preferred_loc {
            if a.preferred_loc == LOCATION_UNDEFINED
                || (self.location != LOCATION_UNDEFINED && self.location != a.preferred_loc)
            {
                self.location = LOCATION_UNDEFINED;
                q.preferred_loc = false;
            } else {
                self.location = a.preferred_loc;
            }
        }
        if q.prefetch_loc {
            if a.prefetch_loc == LOCATION_UNDEFINED
                || (self.prefetch_loc != LOCATION_UNDEFINED && self.prefetch_loc != a.prefetch_loc)
            {
                self.prefetch_loc = LOCATION_UNDEFINED;
                q.prefetch_loc = false;
            } else {
                self.prefetch_loc = a.prefetch_loc;
            }
        }
        if q.access {
            self.access &= a.access;
            self.access_in_place &= a.access_in_place;
        }
        if q.flags {
            self.flags_and &= a.flags;
            self.flags_or |= a.flags;
        }
        if q.granularity && a.granularity < self.granularity {
            self.granularity = a.granularity;
        }
    }

    /// Writes the answers into the list in place (`fill_values`).  An
    /// ACCESS entry naming no GPU of the process is `-EINVAL`; entries
    /// before it have already been written (and upstream copies the buffer
    /// back even on failure).
    pub fn fill(
        mut self,
        attrs: &mut [Attr],
        gpus: &Gpus<'_>,
        default_granularity: u8,
        xnack_enabled: bool,
    ) -> Result<(), SvmError> {
        if !self.seen {
            let d = Attrs::defaults(default_granularity, xnack_enabled, gpus.supported_mask());
            self.location = d.preferred_loc;
            self.prefetch_loc = d.prefetch_loc;
            self.granularity = d.granularity;
            self.flags_and = d.flags;
            self.flags_or = d.flags;
            self.access = d.access;
            self.access_in_place = 0;
        }
        for a in attrs.iter_mut() {
            match a.ty {
                ATTR_PREFERRED_LOC => a.value = self.location,
                ATTR_PREFETCH_LOC => a.value = self.prefetch_loc,
                ATTR_ACCESS => {
                    let i = gpus.index(a.value).ok_or(SvmError::Inval)?;
                    let bit = 1u64 << i;
                    a.ty = if self.access & bit != 0 {
                        ATTR_ACCESS
                    } else if self.access_in_place & bit != 0 {
                        ATTR_ACCESS_IN_PLACE
                    } else {
                        ATTR_NO_ACCESS
                    };
                }
                ATTR_SET_FLAGS => a.value = self.flags_and,
                ATTR_CLR_FLAGS => a.value = !self.flags_or,
                ATTR_GRANULARITY => a.value = u32::from(self.granularity),
                _ => {}
            }
        }
        Ok(())
    }
}

/// Where a retry fault of process device `gpu_idx` (gpu_id `gpu_id`)
/// restores a range with attributes `a` (upstream
/// `svm_range_best_restore_location`): `Some(LOCATION_SYSMEM)`,
/// `Some(gpu_id)` of the VRAM to migrate to, or `None` (no access: the
/// fault is fatal, `-EACCES`).
///
/// - `prefer_sysmem`: the faulting GPU keeps SVM in system memory
///   (upstream `apu_prefer_gtt`; here also a GPU without device-private
///   VRAM);
/// - `same_hive(a, b)`: GPUs `a` and `b` reach each other's VRAM
///   (upstream `svm_nodes_in_same_hive`: the same device or one XGMI hive);
/// - `actual_loc()`: where the range's pages are (0: system memory), asked
///   only for an ACCESS_IN_PLACE GPU, as upstream reads `actual_loc` only
///   there.
///
/// In order: PREFERRED_LOC naming this GPU or system memory wins; another
/// GPU's VRAM wins if reachable; else a GPU in ACCESS migrates to its own
/// VRAM; a GPU in ACCESS_IN_PLACE maps where the pages are if it can reach
/// them, else from system memory; any other GPU has no access.
pub fn best_restore_location(
    a: &Attrs,
    gpu_idx: usize,
    gpu_id: u32,
    prefer_sysmem: bool,
    same_hive: impl Fn(u32, u32) -> bool,
    actual_loc: impl FnOnce() -> u32,
) -> Option<u32> {
    if gpu_idx >= MAX_GPU_INSTANCE {
        return None;
    }
    if prefer_sysmem {
        return Some(LOCATION_SYSMEM);
    }
    if a.preferred_loc == gpu_id || a.preferred_loc == LOCATION_SYSMEM {
        return Some(a.preferred_loc);
    }
    if a.preferred_loc != LOCATION_UNDEFINED && same_hive(gpu_id, a.preferred_loc) {
        return Some(a.preferred_loc);
    }
    let bit = 1u64 << gpu_idx;
    if a.access & bit != 0 {
        return Some(gpu_id);
    }
    if a.access_in_place & bit != 0 {
        let actual = actual_loc();
        if actual == LOCATION_SYSMEM {
            return Some(LOCATION_SYSMEM);
        }
        return Some(if same_hive(gpu_id, actual) { actual } else { LOCATION_SYSMEM });
    }
    None
}
