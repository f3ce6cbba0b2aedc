// SPDX-License-Identifier: GPL-2.0

//! The GPU's kernel address space (GART, VMID 0): the kernel objects rkfd
//! allocates with `alloc_gtt_mem` (its HIQ ring and MQD, runlist IBs, the
//! preemption fence, the MQDs of queues under the HWS), which the CP reads
//! and writes by GART address.
//!
//! C: `amdgpu_amdkfd_alloc_gtt_mem` / `amdgpu_amdkfd_free_gtt_mem`
//! (`amdgpu_amdkfd.c`), the GART of `amdgpu_gart.c`.

use kernel::{
    new_mutex,
    page::PAGE_SIZE,
    prelude::*,
    sync::{Arc, Mutex}, //
};

use crate::kabi::SharedPages;

/// Where the GART aperture starts (above any user VA of the profiles'
/// 48-bit VMs' lower half; only a distinct number space here).
pub(crate) const GART_BASE: u64 = 0x0000_8000_0000_0000;

/// One kernel object: zeroed pages mapped in the kernel at a GART address.
pub(crate) struct GttObj {
    addr: u64,
    mem: SharedPages,
}

impl GttObj {
    /// The GART address of the first byte.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// The backing pages.
    pub(crate) fn mem(&self) -> &SharedPages {
        &self.mem
    }
}

/// The objects and the next free address.
struct GartState {
    objs: KVec<Arc<GttObj>>,
    next: u64,
}

/// One GPU's GART.
#[pin_data]
pub(crate) struct Gart {
    /// Lock order: a leaf (`vgpu/amdgpu_main.rs`); never held across a
    /// call out of this file.
    #[pin]
    state: Mutex<GartState>,
}

impl Gart {
    /// An empty GART.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Gart {
            state <- new_mutex!(GartState { objs: KVec::new(), next: GART_BASE }),
        })
    }

    /// `size` zeroed bytes at a fresh GART address (never reused, so a
    /// stale address finds nothing rather than another object).
    pub(crate) fn alloc(&self, size: u64) -> Result<Arc<GttObj>> {
        if size == 0 || size > (64 << 20) {
            return Err(EINVAL);
        }
        let pages = usize::try_from(size.div_ceil(PAGE_SIZE as u64))?;
        let mem = SharedPages::new(pages)?;
        let mut st = self.state.lock();
        let addr = st.next;
        st.next = addr.checked_add((pages * PAGE_SIZE) as u64).ok_or(ENOMEM)?;
        let obj = Arc::new(GttObj { addr, mem }, GFP_KERNEL)?;
        st.objs.push(obj.clone(), GFP_KERNEL)?;
        Ok(obj)
    }

    /// Gives back `obj` (`free_gtt_mem`); the CP may still hold a
    /// reference for a read in progress, which keeps the pages.
    pub(crate) fn free(&self, obj: &GttObj) {
        let mut st = self.state.lock();
        let removed = match st.objs.iter().position(|o| core::ptr::eq(&**o, obj)) {
            Some(i) => st.objs.remove(i).ok(),
            None => None,
        };
        drop(st);
        // The pages are unmapped and freed (with the last reference) after
        // the lock is released.
        drop(removed);
    }

    /// The object holding GART address `addr` and `addr`'s byte offset in
    /// it.
    pub(crate) fn find(&self, addr: u64) -> Option<(Arc<GttObj>, usize)> {
        let st = self.state.lock();
        let o = st.objs.iter().find(|o| addr >= o.addr && addr - o.addr < o.mem.len() as u64)?;
        Some((o.clone(), (addr - o.addr) as usize))
    }

    /// Reads `out.len()` dwords at GART address `addr` (within one object).
    pub(crate) fn read_dwords(&self, addr: u64, out: &mut [u32]) -> Result {
        let (o, off) = self.find(addr).ok_or(EFAULT)?;
        for (i, d) in out.iter_mut().enumerate() {
            *d = o.mem.read_u32(off + 4 * i).ok_or(EFAULT)?;
        }
        Ok(())
    }

    /// Writes `data` at GART address `addr` (within one object).
    pub(crate) fn write_dwords(&self, addr: u64, data: &[u32]) -> Result {
        let (o, off) = self.find(addr).ok_or(EFAULT)?;
        for (i, &d) in data.iter().enumerate() {
            o.mem.write_u32(off + 4 * i, d).map_err(|_| EFAULT)?;
        }
        Ok(())
    }

    /// `len` bytes (a multiple of 4) at GART address `addr`, as the
    /// firmware reads an MQD (the HWS's and the MES's).
    pub(crate) fn read_bytes(&self, addr: u64, len: usize) -> Result<KVec<u8>> {
        let mut dw = KVec::from_elem(0u32, len / 4, GFP_KERNEL)?;
        self.read_dwords(addr, &mut dw)?;
        let mut out = KVec::with_capacity(len, GFP_KERNEL)?;
        for d in dw.iter() {
            out.extend_from_slice(&d.to_le_bytes(), GFP_KERNEL)?;
        }
        Ok(out)
    }

    /// Writes `bytes` (a multiple of 4) back to GART address `addr`.
    pub(crate) fn write_bytes(&self, addr: u64, bytes: &[u8]) -> Result {
        let mut dw = KVec::with_capacity(bytes.len() / 4, GFP_KERNEL)?;
        for c in bytes.chunks_exact(4) {
            dw.push(u32::from_le_bytes([c[0], c[1], c[2], c[3]]), GFP_KERNEL)?;
        }
        self.write_dwords(addr, &dw)
    }
}
