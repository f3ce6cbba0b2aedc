// SPDX-License-Identifier: GPL-2.0

//! The VRAM of one virtual GPU: `vram_size / PAGE_SIZE` page frames.
//!
//! A frame index is a "VRAM address" (frame × 4 KiB), what the GPU page
//! tables of [`crate::vm`] point at for device memory.  The pool only hands
//! out frame indices and accounts them; frames need not be contiguous, as
//! amdgpu's VRAM manager does not promise contiguity either.
//!
//! Backing: each allocated frame is backed by a zeroed system page,
//! allocated with the frame, so an idle GPU costs no memory.  A later issue
//! backs VRAM with `MEMORY_DEVICE_PRIVATE` `ZONE_DEVICE` pages instead, as
//! `lib/test_hmm.c` does; then frame `n` is device page `n` of one
//! `dev_pagemap` and only [`Allocation::page`] and the allocation of
//! `pages` change.  Nothing outside this module sees how frames are backed.
//!
//! C: `amdgpu_vram_mgr.c` (allocation and accounting only).

// Lock order: `Pool::inner` is a leaf lock.

use kernel::{
    bitmap::BitmapVec,
    new_mutex,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};

/// The frames of one GPU's VRAM.
#[pin_data]
pub(crate) struct Pool {
    /// The number of frames.
    frames: usize,
    /// Which frames are allocated.
    #[pin]
    inner: Mutex<PoolInner>,
}

/// The allocation state of a [`Pool`].
///
/// # Invariants
///
/// `free` is the number of clear bits in `used`; `cursor < used.len()`.
struct PoolInner {
    /// One bit per frame, set while allocated.
    used: BitmapVec,
    /// Frames not allocated.
    free: usize,
    /// Where the next search starts (next fit).
    cursor: usize,
}

impl Pool {
    /// A pool of `size` bytes of VRAM (a whole number of pages, at least one).
    pub(crate) fn new(size: u64) -> Result<Arc<Self>> {
        let frames = usize::try_from(size / PAGE_SIZE as u64).map_err(|_| EINVAL)?;
        if frames == 0 || size % PAGE_SIZE as u64 != 0 || frames > BitmapVec::MAX_LEN {
            return Err(EINVAL);
        }
        let used = BitmapVec::new(frames, GFP_KERNEL)?;
        // Fields initialised earlier are references inside the initialiser.
        let total = frames;
        Arc::pin_init(
            try_pin_init!(Pool {
                frames,
                // INVARIANT: Nothing is allocated; 0 < frames.
                inner <- new_mutex!(
                    PoolInner { used, free: total, cursor: 0 },
                    "vram::Pool::inner"
                ),
            }),
            GFP_KERNEL,
        )
    }

    /// The size of the VRAM in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.frames as u64 * PAGE_SIZE as u64
    }

    /// Bytes allocated.
    pub(crate) fn used(&self) -> u64 {
        self.size() - self.available()
    }

    /// Bytes not allocated.
    pub(crate) fn available(&self) -> u64 {
        self.inner.lock().free as u64 * PAGE_SIZE as u64
    }

    /// Allocates `npages` frames, each backed by a zeroed page.
    ///
    /// `ENOMEM` when the VRAM or the host memory behind it is exhausted.
    pub(crate) fn alloc(self: &Arc<Self>, npages: usize) -> Result<Allocation> {
        if npages == 0 {
            return Err(EINVAL);
        }
        if npages > self.frames {
            return Err(ENOMEM);
        }
        let mut frames = KVVec::with_capacity(npages, GFP_KERNEL)?;
        let pages = KVVec::with_capacity(npages, GFP_KERNEL)?;
        self.take_frames(&mut frames, npages)?;
        // From here on, dropping `alloc` returns the frames.
        let mut alloc = Allocation {
            pool: self.clone(),
            frames,
            pages,
        };
        for _ in 0..npages {
            let page = Page::alloc_page(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN)?;
            alloc.pages.push_within_capacity(page).map_err(|_| ENOMEM)?;
        }
        Ok(alloc)
    }

    /// Marks `npages` free frames allocated and appends them to `frames`,
    /// whose spare capacity must be at least `npages`.  All or nothing.
    fn take_frames(&self, frames: &mut KVVec<u32>, npages: usize) -> Result {
        let mut inner = self.inner.lock();
        if inner.free < npages {
            return Err(ENOMEM);
        }
        let start = frames.len();
        let mut at = inner.cursor;
        while frames.len() - start < npages {
            // `free >= npages` guarantees a clear bit somewhere: wrap once.
            let Some(frame) = inner
                .used
                .next_zero_bit(at)
                .or_else(|| inner.used.next_zero_bit(0))
            else {
                break;
            };
            let Ok(index) = u32::try_from(frame) else {
                break;
            };
            if frames.push_within_capacity(index).is_err() {
                break;
            }
            inner.used.set_bit(frame);
            at = if frame + 1 < self.frames {
                frame + 1
            } else {
                0
            };
        }
        if frames.len() - start < npages {
            // Cannot happen (see above); undo rather than trust it.
            for &frame in &frames[start..] {
                inner.used.clear_bit(frame as usize);
            }
            frames.truncate(start);
            return Err(ENOMEM);
        }
        // INVARIANT: `npages` clear bits were set; `at < frames`.
        inner.free -= npages;
        inner.cursor = at;
        Ok(())
    }
}

/// Frames of VRAM owned by one memory object, returned to the pool on drop.
///
/// # Invariants
///
/// Every entry of `frames` is set in `pool`'s bitmap and owned by this
/// allocation alone; `pages` backs them one to one once [`Pool::alloc`]
/// returned it.
pub(crate) struct Allocation {
    /// The pool the frames come from.
    pool: Arc<Pool>,
    /// The frame of each page of the object.
    frames: KVVec<u32>,
    /// The host pages backing the frames.
    pages: KVVec<Page>,
}

impl Allocation {
    /// The number of pages.
    pub(crate) fn len(&self) -> usize {
        self.frames.len()
    }

    /// The VRAM frame (the "VRAM address" >> 12) of page `index`.
    pub(crate) fn frame(&self, index: usize) -> Option<u64> {
        self.frames.get(index).map(|&f| u64::from(f))
    }

    /// The host page backing page `index`.
    pub(crate) fn page(&self, index: usize) -> Option<&Page> {
        self.pages.get(index)
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        let mut inner = self.pool.inner.lock();
        for &frame in self.frames.iter() {
            inner.used.clear_bit(frame as usize);
        }
        // INVARIANT: By the type invariant these bits were set and ours alone.
        inner.free += self.frames.len();
    }
}

#[kunit_tests(amdgpu_vgpu_vram)]
mod tests {
    use super::*;

    const PAGE: u64 = PAGE_SIZE as u64;

    #[test]
    fn accounting_and_exhaustion() -> Result {
        let pool = Pool::new(64 * PAGE)?;
        assert_eq!(pool.size(), 64 * PAGE);
        assert_eq!(pool.available(), 64 * PAGE);
        let a = pool.alloc(40)?;
        assert_eq!(a.len(), 40);
        assert_eq!(pool.used(), 40 * PAGE);
        assert!(matches!(pool.alloc(25), Err(e) if e == ENOMEM));
        assert_eq!(pool.used(), 40 * PAGE);
        let b = pool.alloc(24)?;
        assert_eq!(pool.available(), 0);
        assert!(matches!(pool.alloc(1), Err(e) if e == ENOMEM));
        drop(a);
        assert_eq!(pool.available(), 40 * PAGE);
        drop(b);
        assert_eq!(pool.available(), 64 * PAGE);
        assert!(matches!(pool.alloc(0), Err(e) if e == EINVAL));
        assert!(matches!(pool.alloc(65), Err(e) if e == ENOMEM));
        assert!(Pool::new(0).is_err());
        assert!(Pool::new(PAGE + 1).is_err());
        Ok(())
    }

    #[test]
    fn frames_are_unique_and_reused() -> Result {
        let pool = Pool::new(16 * PAGE)?;
        let a = pool.alloc(5)?;
        let b = pool.alloc(5)?;
        // Free a hole at the start, then take more than the tail holds:
        // the allocation wraps around and fills the hole.
        drop(a);
        let c = pool.alloc(11)?;
        let mut seen = [false; 16];
        for alloc in [&b, &c] {
            for i in 0..alloc.len() {
                let f = alloc.frame(i).ok_or(EINVAL)? as usize;
                assert!(f < 16);
                assert!(!seen[f]);
                seen[f] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert!(c.frame(11).is_none() && c.page(11).is_none());
        Ok(())
    }

    #[test]
    fn pages_are_zeroed() -> Result {
        let pool = Pool::new(4 * PAGE)?;
        let a = pool.alloc(2)?;
        for i in 0..2 {
            let page = a.page(i).ok_or(EINVAL)?;
            let mut buf = [0xa5u8; 64];
            // SAFETY: `buf` is valid for writes of 64 bytes; the page is ours.
            unsafe { page.read_raw(buf.as_mut_ptr(), PAGE_SIZE - 64, 64)? };
            assert!(buf.iter().all(|&b| b == 0));
        }
        Ok(())
    }
}
