// SPDX-License-Identifier: GPL-2.0

//! The VRAM of one virtual GPU: `vram_size / PAGE_SIZE` page frames.
//!
//! A frame index is a "VRAM address" (frame × 4 KiB), what the GPU page
//! tables of [`crate::vm`] point at for device memory.  The pool only hands
//! out frame indices and accounts them; frames need not be contiguous, as
//! amdgpu's VRAM manager does not promise contiguity either.
//!
//! Backing: each allocated frame is backed by a zeroed system page,
//! allocated with the frame, so an idle GPU costs no memory.  Nothing
//! outside this module sees how frames are backed.
//!
//! SVM: rkfd registers the VRAM as `MEMORY_DEVICE_PRIVATE` pages (device
//! page `n` = frame `n`, as upstream `kfd_migrate.c` does) and asks for
//! single frames through `svm_alloc_vram` / `svm_free_vram`, or for an
//! aligned block of 2^order frames for a huge device page through
//! `svm_alloc_vram_block`: the same frames and the same budget as memory
//! objects ([`Pool::svm_alloc`], [`Pool::svm_alloc_block`]).  The backing
//! page of an SVM frame lives in `PoolInner::backing`, indexed by frame,
//! because SVM frames are freed one by one from `folio_free`, which may
//! run in atomic context: hence a spinlock.  A frame keeps its backing
//! page after it is freed (up to a quarter of the VRAM's frames; beyond
//! that freed frames give their page back), as VRAM keeps existing: a
//! migration then costs
//! the copy, not a system-memory allocation and free per page (the kernel's
//! page allocator is not what a GPU's VRAM allocator costs).  The backing
//! is bounded by the VRAM size; a memory object allocated on such a frame
//! takes the page over (zeroed).
//!
//! C: `amdgpu_vram_mgr.c` (allocation and accounting only).

// Lock order: see the crate root (`vgpu/amdgpu_main.rs`).  `Pool::inner`
// is a spinlock because SVM frames are freed from
// `dev_pagemap_ops.folio_free`, in any context.

use kernel::{
    bitmap::BitmapVec,
    new_spinlock,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::{
        Arc,
        SpinLock, //
    },
};

/// The frames of one GPU's VRAM.
#[pin_data]
pub(crate) struct Pool {
    /// The number of frames.
    frames: usize,
    /// Which frames are allocated.  Lock order: innermost (taken in any
    /// context, under `Vm::inner` and rkfd's SVM locks).
    #[pin]
    inner: SpinLock<PoolInner>,
}

/// The allocation state of a [`Pool`].
///
/// # Invariants
///
/// `free` is the number of clear bits in `used`; `cursor < used.len()`;
/// `svm_frames` is the number of live slots of `backing`, each of them
/// with a page and its bit in `used` set.
struct PoolInner {
    /// One bit per frame, set while allocated.
    used: BitmapVec,
    /// Frames not allocated.
    free: usize,
    /// Where the next search starts (next fit).
    cursor: usize,
    /// Per frame (empty until the first SVM allocation; then `frames`
    /// entries): its backing page if SVM ever used it, and whether it is
    /// an SVM frame now.
    backing: KVVec<SvmSlot>,
    /// Frames allocated for SVM.
    svm_frames: usize,
    /// Backing pages kept for frames not allocated to SVM.
    kept: usize,
}

/// At most `frames / KEEP_FRACTION` unused frames keep their backing page.
const KEEP_FRACTION: usize = 4;

/// A frame as SVM sees it.
#[derive(Default)]
struct SvmSlot {
    /// Kept after the frame is freed (see the module documentation).
    page: Option<Page>,
    /// Allocated to SVM now.
    live: bool,
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
                inner <- new_spinlock!(
                    PoolInner {
                        used,
                        free: total,
                        cursor: 0,
                        backing: KVVec::new(),
                        svm_frames: 0,
                        kept: 0,
                    },
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
        // Frames that SVM used before bring their backing page along.
        let mut reused = KVVec::with_capacity(npages, GFP_KERNEL)?;
        {
            let mut inner = self.inner.lock();
            for &frame in alloc.frames.iter() {
                let page = inner.backing.get_mut(frame as usize).and_then(|slot| slot.page.take());
                if page.is_some() {
                    inner.kept -= 1;
                }
                reused.push_within_capacity(page).map_err(|_| ENOMEM)?;
            }
        }
        for page in reused.drain_all() {
            let page = match page {
                Some(page) => {
                    // SAFETY: The page was taken out of the table: nobody
                    // else reaches it.
                    unsafe { page.fill_zero_raw(0, PAGE_SIZE)? };
                    page
                }
                None => Page::alloc_page(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN)?,
            };
            alloc.pages.push_within_capacity(page).map_err(|_| ENOMEM)?;
        }
        Ok(alloc)
    }

    /// Bytes allocated for SVM.
    pub(crate) fn svm_used(&self) -> u64 {
        self.inner.lock().svm_frames as u64 * PAGE_SIZE as u64
    }

    /// Allocates one frame per entry of `out` for SVM (`svm_alloc_vram`)
    /// and writes their indices there; each is backed by a (not zeroed)
    /// system page.  All or nothing; `ENOMEM` when VRAM is exhausted.
    pub(crate) fn svm_alloc(&self, out: &mut [u64]) -> Result {
        let npages = out.len();
        if npages == 0 {
            return Ok(());
        }
        if npages > self.frames {
            return Err(ENOMEM);
        }
        self.ensure_backing_table()?;
        let mut frames = KVVec::with_capacity(npages, GFP_KERNEL)?;
        self.take_frames(&mut frames, npages)?;
        for (slot, &frame) in out.iter_mut().zip(frames.iter()) {
            *slot = u64::from(frame);
        }
        self.svm_commit(out)
    }

    /// Allocates `2^order` contiguous frames starting at a multiple of
    /// `2^order` for one huge device page (`svm_alloc_vram_block`) and
    /// returns the first.  `ENOMEM` when no such block is free.
    pub(crate) fn svm_alloc_block(&self, order: u32) -> Result<u64> {
        let n = 1usize.checked_shl(order).filter(|&n| n <= self.frames).ok_or(ENOMEM)?;
        self.ensure_backing_table()?;
        let first = {
            let mut inner = self.inner.lock();
            if inner.free < n {
                return Err(ENOMEM);
            }
            let mut block = 0;
            let mut found = None;
            while block + n <= self.frames {
                match inner.used.next_bit(block) {
                    Some(busy) if busy < block + n => block = (busy / n + 1) * n,
                    _ => {
                        found = Some(block);
                        break;
                    }
                }
            }
            let first = found.ok_or(ENOMEM)?;
            for f in first..first + n {
                inner.used.set_bit(f);
            }
            inner.free -= n;
            first
        };
        let mut frames = KVVec::with_capacity(n, GFP_KERNEL).inspect_err(|_| self.give_back(first, n))?;
        for f in first..first + n {
            frames.push_within_capacity(f as u64).map_err(|_| ENOMEM)?;
        }
        self.svm_commit(&frames)?;
        Ok(first as u64)
    }

    /// Returns frames `[first, first + n)` taken for SVM that did not get
    /// committed.
    fn give_back(&self, first: usize, n: usize) {
        let mut inner = self.inner.lock();
        for f in first..first + n {
            inner.used.clear_bit(f);
        }
        inner.free += n;
    }

    fn ensure_backing_table(&self) -> Result {
        if !self.inner.lock().backing.is_empty() {
            return Ok(());
        }
        let mut table = KVVec::with_capacity(self.frames, GFP_KERNEL)?;
        for _ in 0..self.frames {
            table.push_within_capacity(SvmSlot::default()).map_err(|_| ENOMEM)?;
        }
        let mut inner = self.inner.lock();
        if inner.backing.is_empty() {
            inner.backing = table;
        }
        Ok(())
    }

    /// Second half of an SVM allocation: `frames` are taken (marked used)
    /// but not yet SVM frames.  Gives frames without a backing page one,
    /// then marks them all live.  On failure the frames go back.
    fn svm_commit(&self, frames: &[u64]) -> Result {
        let missing = {
            let inner = self.inner.lock();
            frames.iter().filter(|&&f| inner.backing[f as usize].page.is_none()).count()
        };
        let mut pages = KVVec::with_capacity(missing, GFP_KERNEL);
        if let Ok(pages) = pages.as_mut() {
            for _ in 0..missing {
                match Page::alloc_page(GFP_KERNEL | __GFP_NOWARN) {
                    Ok(page) => pages.push_within_capacity(page).map_err(|_| ENOMEM)?,
                    Err(_) => break,
                }
            }
        }
        let mut inner = self.inner.lock();
        let pages = match pages {
            Ok(pages) if pages.len() == missing => pages,
            _ => {
                for &f in frames {
                    inner.used.clear_bit(f as usize);
                }
                inner.free += frames.len();
                return Err(ENOMEM);
            }
        };
        let mut pages = pages.into_iter();
        for &f in frames {
            let f = f as usize;
            let slot = &mut inner.backing[f];
            let reused = slot.page.is_some();
            if !reused {
                slot.page = pages.next();
            }
            slot.live = true;
            if reused {
                inner.kept -= 1;
            }
        }
        inner.svm_frames += frames.len();
        Ok(())
    }

    /// Frees SVM frames (`svm_free_vram`, any context: no allocation, no
    /// sleep); their backing pages stay for the next user.  Frames that
    /// are not SVM frames are ignored and reported once per call.
    pub(crate) fn svm_free(&self, frames: &[u64]) {
        let mut bad = 0;
        let mut inner = self.inner.lock();
        for &frame in frames {
            match usize::try_from(frame) {
                Ok(f) if inner.backing.get(f).is_some_and(|slot| slot.live) => {
                    inner.backing[f].live = false;
                    // Keep at most a quarter of the VRAM's backing while
                    // unused: the rest goes back to the system (freeing a
                    // page does not sleep).
                    if inner.kept >= self.frames / KEEP_FRACTION {
                        inner.backing[f].page = None;
                    } else {
                        inner.kept += 1;
                    }
                    inner.used.clear_bit(f);
                    inner.free += 1;
                    inner.svm_frames -= 1;
                }
                _ => bad += 1,
            }
        }
        drop(inner);
        if bad != 0 {
            pr_warn!("svm_free_vram: {} frames were not SVM frames\n", bad);
        }
    }

    /// Runs `f` on the backing page of SVM frame `frame` (under the pool
    /// lock: `f` must not sleep).  `EINVAL` if `frame` is not an SVM frame.
    pub(crate) fn svm_with_page<R>(&self, frame: u64, f: impl FnOnce(&Page) -> R) -> Result<R> {
        let inner = self.inner.lock();
        let page = usize::try_from(frame)
            .ok()
            .and_then(|i| inner.backing.get(i))
            .filter(|slot| slot.live)
            .and_then(|slot| slot.page.as_ref())
            .ok_or(EINVAL)?;
        Ok(f(page))
    }

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
    fn svm_frames_share_the_budget() -> Result {
        let pool = Pool::new(8 * PAGE)?;
        let obj = pool.alloc(3)?;
        let mut frames = [0u64; 5];
        pool.svm_alloc(&mut frames)?;
        assert_eq!(pool.available(), 0);
        assert_eq!(pool.svm_used(), 5 * PAGE);
        let mut one = [0u64; 1];
        assert!(matches!(pool.svm_alloc(&mut one), Err(e) if e == ENOMEM));
        assert!(matches!(pool.alloc(1), Err(e) if e == ENOMEM));
        for f in frames {
            assert!((0..obj.len()).all(|i| obj.frame(i) != Some(f)));
            assert!(pool.svm_with_page(f, |_| ()).is_ok());
        }
        // An object's frame is not an SVM frame.
        assert!(pool.svm_with_page(obj.frame(0).ok_or(EINVAL)?, |_| ()).is_err());
        pool.svm_free(&frames[..2]);
        assert_eq!(pool.available(), 2 * PAGE);
        assert!(pool.svm_with_page(frames[0], |_| ()).is_err());
        pool.svm_free(&frames[2..]);
        drop(obj);
        assert_eq!((pool.available(), pool.svm_used()), (8 * PAGE, 0));
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

    #[test]
    fn svm_blocks_are_aligned_and_exclusive() -> Result {
        let pool = Pool::new(1024 * PAGE)?;
        let first = pool.svm_alloc_block(9)?;
        assert_eq!(first % 512, 0);
        assert_eq!(pool.svm_used(), 512 * PAGE);
        for f in first..first + 512 {
            assert!(pool.svm_with_page(f, |_| ()).is_ok());
        }
        // One frame taken in the other block: no aligned block is left,
        // although 511 frames are free.
        let obj = pool.alloc(1)?;
        let taken = obj.frame(0).ok_or(EINVAL)?;
        assert!(taken / 512 != first / 512);
        assert!(matches!(pool.svm_alloc_block(9), Err(e) if e == ENOMEM));
        assert_eq!(pool.available(), 511 * PAGE);
        // Too large an order, or more than the pool.
        assert!(pool.svm_alloc_block(11).is_err());
        assert!(pool.svm_alloc_block(64).is_err());
        // Freed page by page (as a split huge page is), the block is whole again.
        let mut frames = KVec::with_capacity(512, GFP_KERNEL)?;
        for f in first..first + 512 {
            frames.push(f, GFP_KERNEL)?;
        }
        pool.svm_free(&frames[..100]);
        pool.svm_free(&frames[100..]);
        assert_eq!(pool.svm_used(), 0);
        assert_eq!(pool.svm_alloc_block(9)?, first);
        pool.svm_free(&frames);
        Ok(())
    }

    #[test]
    fn svm_backing_is_kept_and_handed_to_objects_zeroed() -> Result {
        // 32 frames, all SVM: when freed, the first 8 (a quarter) keep
        // their page.
        let pool = Pool::new(32 * PAGE)?;
        let mut frames = [0u64; 32];
        pool.svm_alloc(&mut frames)?;
        let pattern = [0x5au8; 32];
        for &f in &frames {
            // SAFETY: `pattern` is valid for reads of 32 bytes; the page is ours.
            pool.svm_with_page(f, |p| unsafe { p.write_raw(pattern.as_ptr(), 64, 32) })??;
        }
        pool.svm_free(&frames);
        assert!(pool.svm_with_page(frames[0], |_| ()).is_err());
        // SVM again (all frames): a kept frame still has the old contents
        // (the copy engine overwrites them; nothing reads a frame before).
        let mut again = [0u64; 32];
        pool.svm_alloc(&mut again)?;
        let mut back = [0u8; 32];
        // SAFETY: `back` is valid for writes of 32 bytes.
        pool.svm_with_page(frames[3], |p| unsafe { p.read_raw(back.as_mut_ptr(), 64, 32) })??;
        assert_eq!(back, pattern);
        pool.svm_free(&again);
        // A memory object on those frames gets them zeroed.
        let obj = pool.alloc(32)?;
        for i in 0..32 {
            let mut buf = [0xa5u8; 32];
            // SAFETY: `buf` is valid for writes of 32 bytes; the page is ours.
            unsafe { obj.page(i).ok_or(EINVAL)?.read_raw(buf.as_mut_ptr(), 64, 32)? };
            assert!(buf.iter().all(|&b| b == 0));
        }
        Ok(())
    }
}
