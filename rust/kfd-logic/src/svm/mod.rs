// SPDX-License-Identifier: GPL-2.0 OR MIT

//! Shared virtual memory (SVM) bookkeeping, free of kernel types.
//!
//! C: `drivers/gpu/drm/amd/amdkfd/kfd_svm.c` (range list, attribute
//! algebra, `svm_range_set_attr` / `svm_range_get_attr`) and the SVM part of
//! `kfd_chardev.c` (`kfd_ioctl_svm`, `kfd_ioctl_svm_validate`).
//!
//! This directory is shared by two crates, like `event_state.rs`: the host
//! crate `kfd-logic` (`cargo test`, property tests against a per-page
//! model in `tests/svm_ranges.rs`) and the kernel module, which includes
//! `mod.rs` with `#[path]` from `src/svm/mod.rs`.  So it uses `core` only.
//!
//! - [`attr`]: ABI constants, the attribute record [`attr::Attrs`],
//!   `SET_ATTR` validation and application, `GET_ATTR` aggregation.
//! - [`ranges`]: the range set [`ranges::RangeSet`]: split, apply a
//!   `SET_ATTR` list to a sub-range, remove a sub-range, lookup, and how
//!   many ranges an operation reshapes (each needs a new interval
//!   notifier, allocated before the set changes).
//! - [`place`]: where a range's pages are ([`place::Placement`]) and the
//!   window a GPU retry fault maps ([`place::fault_window`]).
//!
//! # Call sequence of `AMDKFD_IOC_SVM` (upstream order of checks)
//!
//! 1. dispatcher: [`attr::check_ioctl_size`] (`-EINVAL` if `_IOC_SIZE` is
//!    smaller than `24 + 8 * nattr`);
//! 2. [`attr::check_request`]: page-aligned, non-zero start and size
//!    (`-EINVAL`); an unknown `op` is `-EINVAL`;
//! 3. SET_ATTR: [`attr::check_set_attrs`] (`-EINVAL`), then "no GPU VM
//!    yet" (`-EINVAL`, upstream's missing `process_info`), then
//!    `svm_range_is_valid`: [`attr::check_range_overflow`] (`-EOVERFLOW`),
//!    every page in VMAs without `VM_IO|VM_PFNMAP|VM_MIXEDMAP` (`-EFAULT`),
//!    no overlap with a GPU-mapped KFD memory object (`-EADDRINUSE`); then
//!    [`ranges::RangeSet::set_attr`];
//! 4. GET_ATTR: `svm_range_is_valid` first, then [`attr::parse_get_attrs`]
//!    (`-EINVAL`), then [`get_attr`] (`-EINVAL` for an ACCESS entry naming
//!    no GPU of the process, after filling the entries before it).
//!
//! # Storage: why a tree keyed by the last page
//!
//! Upstream keeps ranges in an interval tree (`svms->objects`) plus a list.
//! Ranges never overlap, so an ordered map keyed by the range's *last* page
//! answers every query an interval tree would: the only range that can
//! contain page `p` is the one with the smallest `last >= p` (a
//! lower-bound search, `RBTree::cursor_lower_bound` in the kernel,
//! `BTreeMap::range(p..)` on the host), and the ranges meeting `[s, l]` are
//! that one and its successors while `start <= l`.  Keyed by `last`, the
//! common mutation, cutting a range, keeps the key of the node that keeps
//! the right-hand piece and only *inserts* nodes for the left-hand pieces,
//! so `start` can be changed in place.  The kernel uses `RBTree` rather
//! than the maple tree because its Rust API gives owned node reservations
//! (allocate before, insert infallibly after) and in-place value access;
//! all operations are O(log n) (`ranges` walks k overlapped ranges in
//! O(k log n)).  See [`ranges::Store`].
//!
//! # Failure atomicity
//!
//! Every change first counts the nodes it will need and reserves them
//! ([`ranges::Store::reserve`]); only then does it change anything, and
//! nothing after that point can fail.  An allocation failure returns
//! [`SvmError::NoMem`] with the set unchanged (host tests inject failures
//! and compare).  Upstream reaches the same with clones of the overlapped
//! ranges (`svm_range_add` is "transactional").
//!
//! # Structure
//!
//! Upstream never merges ranges, and neither does this: ranges are created
//! for gaps (cut at `max_pages`-aligned blocks, `svm_range_split_new`) and
//! split.  Invariants (checked by the host tests after every operation):
//! sorted, non-overlapping, each range inside one `max_pages` block, every
//! range start either a block start or the start/end+1 of an interval some
//! earlier `SET_ATTR`/removal named — so the count is bounded by the
//! blocks touched plus twice the number of operations.
//!
//! # For the machinery (HMM, notifiers, migration, mapping)
//!
//! Each range carries a payload `T:` [`ranges::Payload`]: the kernel
//! hangs its per-range state there (`src/svm/range.rs`: the range's
//! `mmu_interval_notifier`, the GPUs it is mapped on, its last mappings).
//! The set calls the payload when the range is created
//! ([`ranges::Payload::new`]), split ([`ranges::Payload::split_off`]) and
//! when `SET_ATTR` changes its attributes
//! ([`ranges::Payload::attrs_changed`]).  An interval notifier cannot be
//! resized, so every range an operation creates or splits needs a new
//! one: [`ranges::RangeSet::set_attr_reshaped`] and
//! [`ranges::RangeSet::remove_reshaped`] count them exactly beforehand, so
//! the kernel allocates them before the set changes and registers them
//! after, without a failure path.  Removed ranges are handed back by value
//! ([`ranges::RangeSet::remove`], [`ranges::RangeSet::clear`]).  For the
//! retry-fault path, [`ranges::RangeSet::find`] finds the range of a
//! faulting page, [`ranges::RangeSet::unregistered_bounds`] +
//! [`ranges::RangeSet::insert_new`] create one where none exists
//! (`svm_range_create_unregistered_range`) and [`place::fault_window`]
//! is the window it maps.

pub mod attr;
pub mod place;
pub mod ranges;

use attr::{Attr, GetAggregate, Gpus};
use ranges::{Payload, RangeSet, Span, Store};

/// Errors of the SVM logic (the kernel maps them to errnos).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvmError {
    /// `-EINVAL`.
    Inval,
    /// `-EOVERFLOW`.
    Overflow,
    /// `-EFAULT`.
    Fault,
    /// `-EADDRINUSE`.
    AddrInUse,
    /// `-ENOMEM`.
    NoMem,
}

impl SvmError {
    /// The negative errno.
    pub fn to_errno(self) -> i32 {
        match self {
            SvmError::Inval => -22,
            SvmError::Overflow => -75,
            SvmError::Fault => -14,
            SvmError::AddrInUse => -98,
            SvmError::NoMem => -12,
        }
    }
}

/// `GET_ATTR` over `span` after the range checks (`svm_range_get_attr`
/// from its attribute loop on): parses the list, aggregates the ranges that
/// intersect `span` and writes the answers into `attrs`.
pub fn get_attr<T: Payload, S: Store<T>>(
    set: &RangeSet<T, S>,
    span: Span,
    attrs: &mut [Attr],
    gpus: &Gpus<'_>,
    xnack_enabled: bool,
) -> Result<(), SvmError> {
    let query = attr::parse_get_attrs(attrs)?;
    let mut agg = GetAggregate::new(query, gpus);
    for r in set.iter_overlapping(span.start, span.last) {
        agg.add(&r.attrs);
    }
    agg.fill(attrs, gpus, set.params().default_granularity, xnack_enabled)
}
