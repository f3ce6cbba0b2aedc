// SPDX-License-Identifier: GPL-2.0

//! The signal page: one 64-bit slot per signal event, shared with user
//! space and the GPU.
//!
//! C: `p->signal_page`, `p->signal_mapped_size` and `kfd_event_page_set()` in
//! `drivers/gpu/drm/amd/amdkfd/kfd_events.c`.  User space (libhsakmt)
//! allocates the page as a GTT buffer object and passes its handle with the
//! first `CREATE_EVENT`; the memory code maps it into the kernel and hands
//! it over as a [`SignalPage`].  The GPU writes a slot when it signals the
//! event and raises an interrupt; the kernel resets the slot to
//! [`UNSIGNALED_EVENT_SLOT`] when it consumes the signal.
//!
//! Every access is a single relaxed 64-bit atomic (C: `READ_ONCE` /
//! `WRITE_ONCE`): user space and the GPU write the page concurrently.

use core::ptr::NonNull;

use kernel::{
    alloc::KVVec,
    prelude::*,
    sync::atomic::{Atomic, Relaxed}, //
};

use super::state::UNSIGNALED_EVENT_SLOT;

/// A kernel mapping of a signal page.
///
/// # Invariants
///
/// - `slots` is aligned for `u64` and valid for reads and writes of `len`
///   consecutive `u64` for the lifetime of `self`;
/// - the kernel accesses that memory only through `self`, with atomic
///   operations (user space and devices may access it concurrently; they are
///   outside the Rust memory model, as for any user-shared page).
pub(crate) struct SignalPage {
    /// The first slot.
    slots: NonNull<Atomic<u64>>,
    /// Whole slots in the mapping (`size / 8`).
    len: usize,
    /// Size of the mapping in bytes (C: `signal_mapped_size`).
    size: usize,
    /// What keeps the memory alive and mapped, dropped with the page: the
    /// memory code's mapping guard, or the buffer of a kernel-allocated page.
    /// Never touched otherwise.
    _owner: Option<KBox<dyn Send + Sync>>,
}

// SAFETY: `SignalPage` only hands out shared references to atomics in memory
// that stays valid for its lifetime (type invariants); the owner is `Send`.
unsafe impl Send for SignalPage {}

// SAFETY: All accesses through `&SignalPage` are atomic (type invariants);
// the owner is `Sync` and never accessed.
unsafe impl Sync for SignalPage {}

impl SignalPage {
    /// Wraps a kernel mapping of `size` bytes at `ptr`; `-EINVAL` if `ptr`
    /// is not 8-byte aligned.
    ///
    /// `owner`, if any, is dropped when the page is dropped (after the last
    /// access): pass the object whose drop unmaps the buffer, or `None` if
    /// the mapping is kept alive elsewhere.  The page is dropped when the
    /// registration it was made for fails, by [`super::Events::teardown`], or
    /// with the owning [`super::Events`].
    ///
    /// # Safety
    ///
    /// - `ptr` is valid for reads and writes of `size` bytes until the
    ///   returned value is dropped (whoever keeps the mapping, `owner` or the
    ///   caller, must not unmap or free it before);
    /// - for that time no other kernel code accesses the memory except with
    ///   atomic or volatile accesses (user space and the GPU may write it at
    ///   any time; that is expected).
    pub(crate) unsafe fn new(
        ptr: NonNull<u8>,
        size: usize,
        owner: Option<KBox<dyn Send + Sync>>,
    ) -> Result<Self> {
        if !ptr.cast::<Atomic<u64>>().as_ptr().is_aligned() {
            return Err(EINVAL);
        }
        // INVARIANT: `Atomic<u64>` has the layout of `u64`; the pointer is
        // aligned (checked); validity and exclusive atomic access are the
        // caller's guarantees.
        Ok(Self {
            slots: ptr.cast(),
            len: size / 8,
            size,
            _owner: owner,
        })
    }

    /// Allocates a kernel-owned page of `size` bytes, all slots zero.
    ///
    /// For tests, and for a device whose signal page the kernel provides.
    #[cfg_attr(
        not(CONFIG_KUNIT),
        allow(dead_code, reason = "used by the KUnit tests")
    )]
    pub(crate) fn alloc_zeroed(size: usize) -> Result<Self> {
        let len = size / 8;
        let mut buf = KVVec::with_capacity(len, GFP_KERNEL)?;
        for _ in 0..len {
            buf.push(Atomic::new(0u64), GFP_KERNEL)?;
        }
        let slots = NonNull::new(buf.as_mut_ptr()).ok_or(ENOMEM)?;
        // Moving the vector (into its box) does not move its heap buffer.
        let owner: KBox<dyn Send + Sync> = KBox::new(buf, GFP_KERNEL)?;
        // INVARIANT: `slots` points to the `len` atomics of `buf`, which lives
        // in `_owner` until `self` is dropped and is accessed only through
        // `self`.
        Ok(Self {
            slots,
            len,
            size,
            _owner: Some(owner),
        })
    }

    /// Size of the mapping in bytes (C: `signal_mapped_size`).
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The slots.
    fn slots(&self) -> &[Atomic<u64>] {
        // SAFETY: `slots` is aligned and valid for `len` atomics for the
        // lifetime of `self` (type invariants); only shared references to the
        // atomics are created.
        unsafe { core::slice::from_raw_parts(self.slots.as_ptr(), self.len) }
    }

    /// Reads slot `index` (C: `READ_ONCE(slots[index])`), `None` past the end.
    pub(crate) fn read(&self, index: u32) -> Option<u64> {
        let index = usize::try_from(index).ok()?;
        self.slots().get(index).map(|slot| slot.load(Relaxed))
    }

    /// Writes slot `index` (C: `WRITE_ONCE(slots[index], value)`); returns
    /// `false` past the end.
    pub(crate) fn write(&self, index: u32, value: u64) -> bool {
        let Some(slot) = usize::try_from(index)
            .ok()
            .and_then(|i| self.slots().get(i))
        else {
            return false;
        };
        slot.store(value, Relaxed);
        true
    }

    /// Whether slot `index` holds a signal (anything but
    /// [`UNSIGNALED_EVENT_SLOT`]).
    pub(crate) fn is_signaled(&self, index: u32) -> bool {
        self.read(index).is_some_and(|v| v != UNSIGNALED_EVENT_SLOT)
    }

    /// Marks the first `count` slots unsignalled (C: the `memset` of
    /// `kfd_event_page_set`).
    pub(crate) fn clear(&self, count: usize) {
        for slot in self.slots().iter().take(count) {
            slot.store(UNSIGNALED_EVENT_SLOT, Relaxed);
        }
    }
}
