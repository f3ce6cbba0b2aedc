// SPDX-License-Identifier: GPL-2.0 OR MIT
//! What an engine sees of the GPU: memory through the queue's VM
//! ([`GpuMemory`]), interrupts and the clock ([`Events`]), and how a run of
//! a queue ends ([`Run`], [`Stop`]).

/// A GPU access that the VM's page table does not allow: the VA is not
/// mapped, or it is mapped read-only and `write` is set.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The faulting GPU virtual address.
    pub va: u64,
    /// The access was a write.
    pub write: bool,
}

/// Bytes moved per step by the default [`GpuMemory::copy`] and
/// [`GpuMemory::fill`].
const CHUNK: usize = 256;

/// GPU memory as one queue's VM sees it.  Addresses are GPU virtual
/// addresses; an access may cross pages.  An access either completes or
/// returns the first faulting address (bytes before it may have been
/// written, as on hardware).
pub trait GpuMemory {
    /// Reads `buf.len()` bytes at `va`.
    fn read(&mut self, va: u64, buf: &mut [u8]) -> Result<(), Fault>;
    /// Writes `data` at `va`.
    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), Fault>;
    /// Atomically adds `v` to the 64-bit word at `va` (8-byte aligned: the
    /// callers check) and returns the old value.  Atomic with respect to
    /// the CPU, which shares the memory.
    fn atomic_add_u64(&mut self, va: u64, v: u64) -> Result<u64, Fault>;

    /// Lets go of whatever the accesses hold between them (the virtual
    /// GPU: its VM's page-table lock), so that others (another worker
    /// running the same VM's shaders) get a turn; the next access takes it
    /// again.  A no-op where nothing is held.
    fn release(&mut self) {}

    /// Whether `len` bytes at `va` can be read (and written, if `write`)
    /// without a fault, accessing nothing: the first faulting address.
    /// The default checks nothing.
    fn probe(&mut self, va: u64, len: usize, write: bool) -> Result<(), Fault> {
        let _ = (va, len, write);
        Ok(())
    }

    /// Copies `len` bytes from `src` to `dst` (as a forward copy).
    fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), Fault> {
        let mut buf = [0u8; CHUNK];
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(CHUNK as u64) as usize;
            self.read(src.wrapping_add(done), &mut buf[..n])?;
            self.write(dst.wrapping_add(done), &buf[..n])?;
            done += n as u64;
        }
        Ok(())
    }

    /// Fills `len` bytes at `dst` with `pattern` (little-endian) repeated.
    fn fill(&mut self, dst: u64, pattern: u32, len: u64) -> Result<(), Fault> {
        let mut buf = [0u8; CHUNK];
        for (i, b) in buf.iter_mut().enumerate() {
            *b = pattern.to_le_bytes()[i % 4];
        }
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(CHUNK as u64) as usize;
            self.write(dst.wrapping_add(done), &buf[..n])?;
            done += n as u64;
        }
        Ok(())
    }

    /// Reads a little-endian 32-bit word.
    fn read_u32(&mut self, va: u64) -> Result<u32, Fault> {
        let mut b = [0u8; 4];
        self.read(va, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Reads a little-endian 64-bit word.
    fn read_u64(&mut self, va: u64) -> Result<u64, Fault> {
        let mut b = [0u8; 8];
        self.read(va, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Writes a little-endian 16-bit word.
    fn write_u16(&mut self, va: u64, v: u16) -> Result<(), Fault> {
        self.write(va, &v.to_le_bytes())
    }

    /// Writes a little-endian 32-bit word.
    fn write_u32(&mut self, va: u64, v: u32) -> Result<(), Fault> {
        self.write(va, &v.to_le_bytes())
    }

    /// Writes a little-endian 64-bit word.
    fn write_u64(&mut self, va: u64, v: u64) -> Result<(), Fault> {
        self.write(va, &v.to_le_bytes())
    }
}

/// What an engine raises besides memory accesses.
pub trait Events {
    /// An end-of-pipe / completion-signal / SDMA-trap interrupt carrying
    /// `context_id` (an event id for KFD signal events): the GPU driver
    /// passes it on as `KGD_IH_SIGNAL`.
    fn signal(&mut self, context_id: u32);
    /// The GPU's free-running clock (timestamps, RELEASE_MEM data_sel 3/4).
    fn clock(&mut self) -> u64;
}

/// `KGD_QUEUE_ERROR_INVALID_PACKET`: a packet no engine of this kind
/// defines, or a defined one with reserved or misaligned fields.
pub const QUEUE_ERROR_INVALID_PACKET: u32 = 1;
/// `KGD_QUEUE_ERROR_UNSUPPORTED`: a real packet the virtual GPU cannot
/// execute (a kernel dispatch: there is no ISA; register accesses).
pub const QUEUE_ERROR_UNSUPPORTED: u32 = 2;
/// `KGD_QUEUE_ERROR_VM_FAULT` (raised by the shell on a fatal [`Fault`]).
pub const QUEUE_ERROR_VM_FAULT: u32 = 3;
/// `KGD_QUEUE_ERROR_RESET` (raised by the shell on a GPU reset).
pub const QUEUE_ERROR_RESET: u32 = 4;

/// Why a run of a queue stopped.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Nothing to do: the read pointer reached the write pointer, or the
    /// next packet is not completely written yet (an AQL header still
    /// INVALID).  Resume when the doorbell rings.
    Idle,
    /// The next packet waits for memory to change (a barrier's dependency
    /// signal, WAIT_REG_MEM, POLL_REGMEM): poll again later.
    Blocked,
    /// The packet budget is spent; more work may be pending.
    Budget,
    /// The queue is in error (`QUEUE_ERROR_*`): the engine will not touch
    /// it again.  The read pointer stays at the offending packet.
    Error(u32),
    /// A GPU access faulted.  The read pointer stays at the packet, which
    /// is executed again (from where it stopped, for the steps that are not
    /// idempotent) if the queue is resumed after the fault is resolved.
    Fault(Fault),
}

/// The result of running a queue for a budget.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// Packets completed.
    pub packets: u32,
    /// Why it stopped.
    pub stop: Stop,
}

/// The comparison of WAIT_REG_MEM (PM4) and POLL_REGMEM (SDMA): `func` is
/// the 3-bit field both share; `None` for the reserved value 7.
pub fn compare(func: u32, value: u32, mask: u32, reference: u32) -> Option<bool> {
    let v = value & mask;
    Some(match func {
        0 => true,
        1 => v < reference,
        2 => v <= reference,
        3 => v == reference,
        4 => v != reference,
        5 => v >= reference,
        6 => v > reference,
        _ => return None,
    })
}

/// Where packets are fetched from (PM4 rings and indirect buffers, SDMA
/// rings: dword `i` counted from the queue's start).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Src {
    /// The ring: dword `i` is at `base + (i & mask) * 4`.
    Ring { base: u64, mask: u64 },
    /// An indirect buffer: dword `i` is at `base + i * 4`.
    Ib { base: u64 },
}

impl Src {
    /// The address of dword `i`.
    pub fn addr(&self, i: u64) -> u64 {
        match *self {
            Src::Ring { base, mask } => base.wrapping_add((i & mask) * 4),
            Src::Ib { base } => base.wrapping_add(i.wrapping_mul(4)),
        }
    }

    /// Dwords from `i` that are contiguous in memory (to the end of the
    /// ring; an IB is contiguous).
    fn contiguous(&self, i: u64) -> u64 {
        match *self {
            Src::Ring { mask, .. } => mask + 1 - (i & mask),
            Src::Ib { .. } => u64::MAX,
        }
    }
}

/// Dwords one fetch reads ([`Fetch`]).
pub const FETCH_DWORDS: usize = 64;
/// The page size fetches do not cross (one translation each).
const FETCH_PAGE: u64 = 4096;

/// Packet dwords read ahead: one memory read fetches up to
/// [`FETCH_DWORDS`] valid dwords of the source (never past the dwords the
/// producer published, the end of the ring or of a page), instead of one
/// read (a page-table lookup) per dword.  Only published dwords are
/// fetched, which the producer does not change until the read pointer has
/// passed them, so the window stays valid for the whole run.
pub struct Fetch {
    /// The source the window holds.
    src: Option<Src>,
    /// Its first dword's index.
    start: u64,
    /// Valid dwords.
    n: usize,
    /// The dwords.
    buf: [u32; FETCH_DWORDS],
}

impl Default for Fetch {
    fn default() -> Self {
        Fetch {
            src: None,
            start: 0,
            n: 0,
            buf: [0; FETCH_DWORDS],
        }
    }
}

impl Fetch {
    /// Dword `i` of `src`, of which dwords before `limit` are valid (the
    /// caller checked `i < limit`).
    pub fn dword<M: GpuMemory>(&mut self, m: &mut M, src: Src, i: u64, limit: u64) -> Result<u32, Stop> {
        if self.src == Some(src) && i.wrapping_sub(self.start) < self.n as u64 {
            return Ok(self.buf[(i - self.start) as usize]);
        }
        let a = src.addr(i);
        let to_page = (FETCH_PAGE - a % FETCH_PAGE) / 4;
        let n = (FETCH_DWORDS as u64)
            .min(limit.wrapping_sub(i).max(1))
            .min(to_page.max(1))
            .min(src.contiguous(i)) as usize;
        let mut bytes = [0u8; FETCH_DWORDS * 4];
        self.src = None;
        m.read(a, &mut bytes[..n * 4]).map_err(Stop::Fault)?;
        for (d, b) in self.buf.iter_mut().zip(bytes[..n * 4].chunks_exact(4)) {
            *d = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        self.src = Some(src);
        self.start = i;
        self.n = n;
        Ok(self.buf[0])
    }
}

/// Turns a memory result into a [`Stop`].
pub(crate) fn fault<T>(r: Result<T, Fault>) -> Result<T, Stop> {
    r.map_err(Stop::Fault)
}
