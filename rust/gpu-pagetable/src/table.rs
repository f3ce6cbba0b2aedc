// SPDX-License-Identifier: GPL-2.0

//! A software GPU page table: how the virtual amdgpu translates the GPU
//! virtual addresses of one VM.
//!
//! The layout is the GFX9+ GPUVM format in miniature (amdgpu's
//! `amdgpu_vm_pt.c`): 48-bit virtual addresses, 4 KiB pages and four levels
//! of 512-entry tables (PDB2, PDB1, PDB0 and the PTB), where every entry is a
//! `u64`.  A directory entry (PDE) holds the index of the next-level table.
//! A leaf entry (PTE) holds a valid bit, permissions, an aperture and a frame
//! number.
//!
//! All tables live in one growable array of `u64`, addressed by table index,
//! much as real page tables live in VRAM.  Table 0 is the root.  A table that
//! becomes empty goes back to a free list, which is threaded through the
//! table's first entry, and is reused.  The array itself is only released
//! when the [`PageTable`] is dropped.
//!
//! This is pure logic: it takes no locks (the owner serialises access) and
//! calls nothing in the kernel.  The same file is the `gpu-pagetable` host
//! crate (`cargo test -p gpu-pagetable` runs property tests against a
//! `HashMap` model) and is compiled into `amdgpu.ko` with `#[path]`.  The two
//! builds differ only in where table memory comes from (`mod store`).

/// The log2 of the GPU page size.
pub const PAGE_SHIFT: u32 = 12;
/// The GPU page size in bytes.
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;
/// The number of virtual address bits a VM translates.
pub const VA_BITS: u32 = 48;
/// The end of the translated virtual address space (exclusive).
pub const VA_END: u64 = 1 << VA_BITS;
/// The largest frame number a PTE can hold, plus one.
pub const FRAME_LIMIT: u64 = 1 << (64 - PAGE_SHIFT);

/// The number of levels: PDB2, PDB1, PDB0, PTB.
const LEVELS: u32 = 4;
/// The log2 of the number of entries per table.
const TABLE_SHIFT: u32 = 9;
/// The number of entries per table.
const ENTRIES: usize = 1 << TABLE_SHIFT;

/// Entry bit: the entry is valid (PDE and PTE).
const VALID: u64 = 1 << 0;
/// PTE bit: the GPU may write the page.
const WRITABLE: u64 = 1 << 1;
/// PTE bit: the GPU may execute from the page.
const EXECUTABLE: u64 = 1 << 2;
/// PTE field: the aperture (2 bits).
const APERTURE_SHIFT: u32 = 4;
/// Mask of the aperture field.
const APERTURE_MASK: u64 = 0b11 << APERTURE_SHIFT;

// Both builds must agree on the geometry.
const _: () = assert!(PAGE_SHIFT + LEVELS * TABLE_SHIFT == VA_BITS);

/// Where table memory comes from in the kernel: `KVVec`, charged to the
/// memory cgroup of the process that makes the mapping.
#[cfg(CONFIG_RUST)]
mod store {
    use kernel::alloc::{
        flags::GFP_KERNEL_ACCOUNT,
        KVVec, //
    };

    /// The backing array of every table.
    pub(super) type Words = KVVec<u64>;

    /// An empty array.
    pub(super) fn new() -> Words {
        KVVec::new()
    }

    /// Appends `n` zero words, or fails leaving `words` unchanged.
    pub(super) fn grow(words: &mut Words, n: usize) -> Result<(), super::Error> {
        words
            .extend_with(n, 0, GFP_KERNEL_ACCOUNT)
            .map_err(|_| super::Error::NoMemory)
    }
}

/// Where table memory comes from on the host: `Vec`, with fallible growth.
#[cfg(not(CONFIG_RUST))]
mod store {
    /// The backing array of every table.
    pub(super) type Words = Vec<u64>;

    /// An empty array.
    pub(super) fn new() -> Words {
        Vec::new()
    }

    /// Appends `n` zero words, or fails leaving `words` unchanged.
    pub(super) fn grow(words: &mut Words, n: usize) -> Result<(), super::Error> {
        words.try_reserve(n).map_err(|_| super::Error::NoMemory)?;
        words.resize(words.len() + n, 0);
        Ok(())
    }
}

/// Why a page-table operation failed.  Nothing was changed when it fails.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The address is not page aligned or the page count is zero.
    Invalid,
    /// The range does not fit in the [`VA_BITS`]-bit address space.
    OutOfRange,
    /// A page in the range is already mapped.
    Busy,
    /// Table memory could not be allocated, or the table limit was reached.
    NoMemory,
    /// A frame number does not fit in a PTE.
    BadFrame,
}

/// What kind of memory a PTE points at, which gives its frame number a meaning.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Aperture {
    /// Device memory: the frame is a page index into the GPU's VRAM.
    Vram,
    /// System memory: the frame is a CPU page frame number.
    System,
    /// A user-pointer page: the frame is the CPU virtual page number
    /// (user address >> [`PAGE_SHIFT`]) in the owning process, which is
    /// resolved when the page is used.
    UserVa,
}

impl Aperture {
    /// The encoding of the aperture in a PTE.
    const fn bits(self) -> u64 {
        (match self {
            Aperture::Vram => 0,
            Aperture::System => 1,
            Aperture::UserVa => 2,
        }) << APERTURE_SHIFT
    }

    /// Decodes the aperture field of a PTE.
    const fn from_bits(pte: u64) -> Option<Self> {
        match (pte & APERTURE_MASK) >> APERTURE_SHIFT {
            0 => Some(Aperture::Vram),
            1 => Some(Aperture::System),
            2 => Some(Aperture::UserVa),
            _ => None,
        }
    }
}

/// One page-table entry: what a GPU virtual page translates to.
///
/// # Invariants
///
/// `frame < FRAME_LIMIT`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Pte {
    /// The kind of memory.
    aperture: Aperture,
    /// The frame within the aperture.
    frame: u64,
    /// The GPU may write.
    writable: bool,
    /// The GPU may execute.
    executable: bool,
}

impl Pte {
    /// A PTE for `frame` of `aperture`; [`Error::BadFrame`] if the frame
    /// number is too large for the format.
    pub const fn new(
        aperture: Aperture,
        frame: u64,
        writable: bool,
        executable: bool,
    ) -> Result<Self, Error> {
        if frame >= FRAME_LIMIT {
            return Err(Error::BadFrame);
        }
        // INVARIANT: Checked above.
        Ok(Pte {
            aperture,
            frame,
            writable,
            executable,
        })
    }

    /// The kind of memory the page is.
    pub const fn aperture(&self) -> Aperture {
        self.aperture
    }

    /// The frame number within the aperture.
    pub const fn frame(&self) -> u64 {
        self.frame
    }

    /// Whether the GPU may write the page.
    pub const fn writable(&self) -> bool {
        self.writable
    }

    /// Whether the GPU may execute from the page.
    pub const fn executable(&self) -> bool {
        self.executable
    }

    /// The hardware-style encoding.
    const fn encode(self) -> u64 {
        let mut bits = VALID | self.aperture.bits() | (self.frame << PAGE_SHIFT);
        if self.writable {
            bits |= WRITABLE;
        }
        if self.executable {
            bits |= EXECUTABLE;
        }
        bits
    }

    /// Decodes a leaf entry; `None` if it is not valid.
    const fn decode(bits: u64) -> Option<Self> {
        if bits & VALID == 0 {
            return None;
        }
        let Some(aperture) = Aperture::from_bits(bits) else {
            return None;
        };
        // INVARIANT: A 64-bit word shifted right by PAGE_SHIFT is below FRAME_LIMIT.
        Some(Pte {
            aperture,
            frame: bits >> PAGE_SHIFT,
            writable: bits & WRITABLE != 0,
            executable: bits & EXECUTABLE != 0,
        })
    }
}

/// The number of bytes one entry of a table at `level` covers (level 0 is
/// the leaf level).
const fn entry_span(level: u32) -> u64 {
    1 << (PAGE_SHIFT + level * TABLE_SHIFT)
}

/// The index of `va` in a table at `level`.
const fn entry_index(va: u64, level: u32) -> usize {
    ((va >> (PAGE_SHIFT + level * TABLE_SHIFT)) as usize) & (ENTRIES - 1)
}

/// The end of the chunk of `[start, end)` that lies in the same entry at
/// `level` as `start`.
fn chunk_end(start: u64, end: u64, level: u32) -> u64 {
    let boundary = (start | (entry_span(level) - 1)) + 1;
    if boundary < end {
        boundary
    } else {
        end
    }
}

/// The number of tables a range needs below (and including) a missing table
/// at `level`.
fn tables_needed(level: u32, start: u64, end: u64) -> usize {
    if level == 0 {
        return 1;
    }
    let mut need = 1;
    let mut cs = start;
    while cs < end {
        let ce = chunk_end(cs, end, level);
        need += tables_needed(level - 1, cs, ce);
        cs = ce;
    }
    need
}

/// A four-level page table of one GPU VM.
///
/// # Invariants
///
/// - `words.len()` is a non-zero multiple of [`ENTRIES`]; table `t` is
///   `words[t * ENTRIES..(t + 1) * ENTRIES]`, table 0 is the root.
/// - Every valid PDE holds the index of a table that is reachable from
///   exactly that PDE; every table except the root is either reachable or on
///   the free list, never both.
/// - A table on the free list is all zero except entry 0, which holds the
///   next free table's index (0 ends the list); `free_count` is its length.
/// - Reachable non-root tables have at least one valid entry.
/// - `mapped` is the number of valid PTEs.
pub struct PageTable {
    /// Every table, [`ENTRIES`] words each.
    words: store::Words,
    /// The first free table, or 0 if none.
    free_head: usize,
    /// The length of the free list.
    free_count: usize,
    /// The most tables this page table may grow to.
    table_limit: usize,
    /// The number of valid PTEs.
    mapped: u64,
}

impl PageTable {
    /// An empty page table: just the root.
    pub fn new() -> Result<Self, Error> {
        let mut words = store::new();
        store::grow(&mut words, ENTRIES)?;
        // INVARIANT: One zeroed root table, nothing free, nothing mapped.
        Ok(PageTable {
            words,
            free_head: 0,
            free_count: 0,
            table_limit: usize::MAX,
            mapped: 0,
        })
    }

    /// Caps the number of tables (root included) this page table may use;
    /// mapping that would need more fails with [`Error::NoMemory`].
    pub fn set_table_limit(&mut self, limit: usize) {
        self.table_limit = limit;
    }

    /// The number of tables in use, the root included.
    pub fn live_tables(&self) -> usize {
        self.total_tables() - self.free_count
    }

    /// The number of valid PTEs.
    pub fn mapped_pages(&self) -> u64 {
        self.mapped
    }

    /// Translates the page containing `va`.
    pub fn lookup(&self, va: u64) -> Option<Pte> {
        if va >= VA_END {
            return None;
        }
        let mut table = 0;
        for level in (1..LEVELS).rev() {
            table = self.child(table, entry_index(va, level))?;
        }
        Pte::decode(self.words[table * ENTRIES + entry_index(va, 0)])
    }

    /// Maps `npages` pages at `va`, page `i` to `pte(i)`.
    ///
    /// All or nothing: fails with [`Error::Busy`] if any page of the range
    /// is already mapped, with the error of `pte` if it fails, and changes
    /// nothing on any error.
    pub fn map(
        &mut self,
        va: u64,
        npages: u64,
        mut pte: impl FnMut(u64) -> Result<Pte, Error>,
    ) -> Result<(), Error> {
        let end = range_end(va, npages)?;
        // Pass 1: check that the range is free and count the missing tables.
        let need = self.scan(Some(0), LEVELS - 1, va, end)?;
        // Allocate them, so that pass 2 cannot fail.
        self.reserve(need)?;
        // Pass 2: write.  Only `pte` can fail here (running out of reserved
        // tables would be a bug); the range was free, so unmapping it
        // restores the previous state.
        if let Err(e) = self.fill(0, LEVELS - 1, va, end, va, &mut pte) {
            self.clear(0, LEVELS - 1, va, end);
            return Err(e);
        }
        Ok(())
    }

    /// Unmaps every mapped page in `npages` pages at `va` and frees the
    /// tables that become empty.  Returns how many pages were mapped.
    pub fn unmap(&mut self, va: u64, npages: u64) -> Result<u64, Error> {
        let end = range_end(va, npages)?;
        Ok(self.clear(0, LEVELS - 1, va, end))
    }

    /// The number of tables, free or not.
    fn total_tables(&self) -> usize {
        self.words.len() / ENTRIES
    }

    /// The child table of entry `index` of directory `table`.
    fn child(&self, table: usize, index: usize) -> Option<usize> {
        let pde = self.words[table * ENTRIES + index];
        if pde & VALID == 0 {
            None
        } else {
            Some((pde >> PAGE_SHIFT) as usize)
        }
    }

    /// Checks that `[start, end)` is unmapped under `table` (a table at
    /// `level`, or a missing one) and returns the number of missing tables.
    fn scan(&self, table: Option<usize>, level: u32, start: u64, end: u64) -> Result<usize, Error> {
        let Some(table) = table else {
            return Ok(tables_needed(level, start, end));
        };
        let mut need = 0;
        let mut cs = start;
        while cs < end {
            let ce = chunk_end(cs, end, level);
            let index = entry_index(cs, level);
            if level == 0 {
                if self.words[table * ENTRIES + index] & VALID != 0 {
                    return Err(Error::Busy);
                }
            } else {
                need += self.scan(self.child(table, index), level - 1, cs, ce)?;
            }
            cs = ce;
        }
        Ok(need)
    }

    /// Makes sure the free list holds at least `need` tables.
    fn reserve(&mut self, need: usize) -> Result<(), Error> {
        while self.free_count < need {
            if self.total_tables() >= self.table_limit {
                return Err(Error::NoMemory);
            }
            store::grow(&mut self.words, ENTRIES)?;
            // INVARIANT: The new table is zero and goes straight onto the free list.
            self.push_free(self.total_tables() - 1);
        }
        Ok(())
    }

    /// Puts the empty, unreachable `table` on the free list.
    fn push_free(&mut self, table: usize) {
        self.words[table * ENTRIES] = self.free_head as u64;
        self.free_head = table;
        self.free_count += 1;
    }

    /// Takes a zeroed table off the free list.
    fn pop_free(&mut self) -> Option<usize> {
        if self.free_count == 0 {
            return None;
        }
        let table = self.free_head;
        self.free_head = self.words[table * ENTRIES] as usize;
        self.words[table * ENTRIES] = 0;
        self.free_count -= 1;
        Some(table)
    }

    /// Writes the PTEs of `[start, end)` under `table` (a table at `level`),
    /// creating missing tables from the free list.  `va0` is the start of
    /// the whole mapping, which numbers the pages passed to `pte`.
    fn fill(
        &mut self,
        table: usize,
        level: u32,
        start: u64,
        end: u64,
        va0: u64,
        pte: &mut impl FnMut(u64) -> Result<Pte, Error>,
    ) -> Result<(), Error> {
        let mut cs = start;
        while cs < end {
            let ce = chunk_end(cs, end, level);
            let slot = table * ENTRIES + entry_index(cs, level);
            if level == 0 {
                self.words[slot] = pte((cs - va0) >> PAGE_SHIFT)?.encode();
                self.mapped += 1;
            } else {
                let child = match self.child(table, entry_index(cs, level)) {
                    Some(child) => child,
                    None => {
                        let child = self.pop_free().ok_or(Error::NoMemory)?;
                        self.words[slot] = VALID | ((child as u64) << PAGE_SHIFT);
                        child
                    }
                };
                self.fill(child, level - 1, cs, ce, va0, pte)?;
            }
            cs = ce;
        }
        Ok(())
    }

    /// Clears the PTEs of `[start, end)` under `table` (a table at `level`)
    /// and frees child tables that become empty.  Returns the number of
    /// PTEs that were valid.
    fn clear(&mut self, table: usize, level: u32, start: u64, end: u64) -> u64 {
        let mut cleared = 0;
        let mut cs = start;
        while cs < end {
            let ce = chunk_end(cs, end, level);
            let index = entry_index(cs, level);
            let slot = table * ENTRIES + index;
            if level == 0 {
                if self.words[slot] & VALID != 0 {
                    self.words[slot] = 0;
                    self.mapped -= 1;
                    cleared += 1;
                }
            } else if let Some(child) = self.child(table, index) {
                cleared += self.clear(child, level - 1, cs, ce);
                if self.is_empty(child) {
                    self.words[slot] = 0;
                    // INVARIANT: `child` is empty and no longer reachable.
                    self.push_free(child);
                }
            }
            cs = ce;
        }
        cleared
    }

    /// Whether `table` has no valid entry.
    fn is_empty(&self, table: usize) -> bool {
        self.words[table * ENTRIES..(table + 1) * ENTRIES]
            .iter()
            .all(|&w| w == 0)
    }
}

/// Checks a mapping request and returns the end of its range.
fn range_end(va: u64, npages: u64) -> Result<u64, Error> {
    if va % PAGE_SIZE != 0 || npages == 0 {
        return Err(Error::Invalid);
    }
    let size = npages.checked_mul(PAGE_SIZE).ok_or(Error::OutOfRange)?;
    let end = va.checked_add(size).ok_or(Error::OutOfRange)?;
    if end > VA_END {
        return Err(Error::OutOfRange);
    }
    Ok(end)
}
