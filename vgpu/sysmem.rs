// SPDX-License-Identifier: GPL-2.0

//! Limits on the system memory that memory objects hold, shared by every
//! GPU of the module.
//!
//! As upstream's `amdgpu_amdkfd_reserve_mem_limit()`: GTT and user-pointer
//! objects both count against a system limit, because both are (or will
//! be, once pinned) the host's pages; GTT objects, whose pages the driver
//! allocates itself, also count against the TTM limit.  This also bounds
//! the page tables a user can make the driver build for user pointers.
//!
//! The limits are upstream's (`amdgpu_amdkfd_gpuvm_init_mem_limits`): the
//! system limit is all RAM but 1/64, less `AMDGPU_RESERVE_MEM_LIMIT`
//! (1.5 GiB) left to the rest of the system, or half of it on a machine
//! with less than twice that; the TTM limit is `ttm_tt_pages_limit()`,
//! half of RAM by default.  Without the reserve, a 2 GiB machine let one
//! process pin ~1.97 GiB of user pointers: the pinning faulted the pages in
//! until the OOM killer killed the process (issue 16).
//!
//! C: `drivers/gpu/drm/amd/amdgpu/amdgpu_amdkfd_gpuvm.c` (`kfd_mem_limit`).

use kernel::{
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc,
    },
};

use crate::kabi;

/// The system memory accounts of the module's GPUs.
pub(crate) struct SystemMemory {
    /// Bytes held by GTT and user-pointer objects.
    used: Atomic<u64>,
    /// The most `used` may reach.
    limit: u64,
    /// Bytes held by GTT objects.
    gtt_used: Atomic<u64>,
    /// The most `gtt_used` may reach.
    gtt_limit: u64,
}

/// `AMDGPU_RESERVE_MEM_LIMIT`: system memory KFD leaves to the rest of the
/// system.
const RESERVE_MEM_LIMIT: u64 = 3 << 29;

/// Upstream's `(system, TTM)` limits for `ram` bytes of RAM
/// (`amdgpu_amdkfd_gpuvm_init_mem_limits`, `ttm_tt_mgr_init`).
fn limits_for_ram(ram: u64) -> (u64, u64) {
    let mut system = ram - (ram >> 6);
    if system < 2 * RESERVE_MEM_LIMIT {
        system >>= 1;
    } else {
        system -= RESERVE_MEM_LIMIT;
    }
    (system, ram / 2)
}

/// Adds `bytes` to `counter` unless that would pass `limit` (`ENOMEM`).
fn add_limited(counter: &Atomic<u64>, bytes: u64, limit: u64) -> Result {
    let mut cur = counter.load(Relaxed);
    loop {
        let new = cur
            .checked_add(bytes)
            .filter(|&n| n <= limit)
            .ok_or(ENOMEM)?;
        match counter.cmpxchg(cur, new, Relaxed) {
            Ok(_) => return Ok(()),
            Err(actual) => cur = actual,
        }
    }
}

impl SystemMemory {
    /// The accounts, with upstream's limits for this machine's RAM.
    pub(crate) fn new() -> Result<Arc<Self>> {
        let (limit, gtt_limit) = limits_for_ram(kabi::total_ram());
        Self::with_limits(limit, gtt_limit)
    }

    /// The accounts, with the given limits.
    pub(crate) fn with_limits(limit: u64, gtt_limit: u64) -> Result<Arc<Self>> {
        Ok(Arc::new(
            SystemMemory {
                used: Atomic::new(0),
                limit,
                gtt_used: Atomic::new(0),
                gtt_limit,
            },
            GFP_KERNEL,
        )?)
    }

    /// Accounts `bytes` of a GTT (`gtt`) or user-pointer object; `ENOMEM`
    /// over a limit.
    pub(crate) fn reserve(self: &Arc<Self>, bytes: u64, gtt: bool) -> Result<Reservation> {
        add_limited(&self.used, bytes, self.limit)?;
        if gtt {
            if let Err(e) = add_limited(&self.gtt_used, bytes, self.gtt_limit) {
                self.used.fetch_sub(bytes, Relaxed);
                return Err(e);
            }
        }
        Ok(Reservation {
            account: self.clone(),
            bytes,
            gtt,
        })
    }

    /// Accounts `bytes` without an object (amdgpu's
    /// `amdgpu_amdkfd_reserve_mem_limit(NULL, ..)`, for rkfd's SVM ranges):
    /// given back with [`Self::unreserve_bytes`].  `ENOMEM` over a limit,
    /// nothing accounted.
    pub(crate) fn reserve_bytes(&self, bytes: u64, gtt: bool) -> Result {
        add_limited(&self.used, bytes, self.limit)?;
        if gtt {
            if let Err(e) = add_limited(&self.gtt_used, bytes, self.gtt_limit) {
                self.used.fetch_sub(bytes, Relaxed);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Gives back what [`Self::reserve_bytes`] accounted (never below zero:
    /// a caller's bug must not wrap the account).
    pub(crate) fn unreserve_bytes(&self, bytes: u64, gtt: bool) {
        let sub = |c: &Atomic<u64>| {
            let mut cur = c.load(Relaxed);
            loop {
                match c.cmpxchg(cur, cur.saturating_sub(bytes), Relaxed) {
                    Ok(_) => return,
                    Err(actual) => cur = actual,
                }
            }
        };
        if gtt {
            sub(&self.gtt_used);
        }
        sub(&self.used);
    }

    /// Bytes held by GTT and user-pointer objects.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Relaxed)
    }

    /// Bytes held by GTT objects.
    pub(crate) fn gtt_used(&self) -> u64 {
        self.gtt_used.load(Relaxed)
    }

    /// The most [`Self::used`] may reach.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// The most [`Self::gtt_used`] may reach.
    pub(crate) fn gtt_limit(&self) -> u64 {
        self.gtt_limit
    }
}

/// Memory accounted to [`SystemMemory`]; unaccounted on drop.
pub(crate) struct Reservation {
    /// The accounts.
    account: Arc<SystemMemory>,
    /// How much.
    bytes: u64,
    /// Also on the GTT account.
    gtt: bool,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.gtt {
            self.account.gtt_used.fetch_sub(self.bytes, Relaxed);
        }
        self.account.used.fetch_sub(self.bytes, Relaxed);
    }
}

#[kunit_tests(amdgpu_vgpu_sysmem)]
mod tests {
    use super::*;

    #[test]
    fn limits() -> Result {
        let m = SystemMemory::with_limits(100, 60)?;
        let user = m.reserve(50, false)?;
        assert_eq!((m.used(), m.gtt_used()), (50, 0));
        // Within the GTT limit but not within the system limit.
        assert!(matches!(m.reserve(55, true), Err(e) if e == ENOMEM));
        assert_eq!((m.used(), m.gtt_used()), (50, 0));
        let gtt = m.reserve(40, true)?;
        assert_eq!((m.used(), m.gtt_used()), (90, 40));
        drop(user);
        // Within the system limit but not within the GTT limit.
        assert!(matches!(m.reserve(30, true), Err(e) if e == ENOMEM));
        assert_eq!((m.used(), m.gtt_used()), (40, 40));
        assert!(matches!(m.reserve(u64::MAX, false), Err(e) if e == ENOMEM));
        drop(gtt);
        assert_eq!((m.used(), m.gtt_used()), (0, 0));
        // Object-less reservations (SVM ranges): the same limits.
        m.reserve_bytes(70, false)?;
        assert!(matches!(m.reserve_bytes(31, false), Err(e) if e == ENOMEM));
        assert_eq!((m.used(), m.gtt_used()), (70, 0));
        m.unreserve_bytes(20, false);
        m.reserve_bytes(10, true)?;
        assert_eq!((m.used(), m.gtt_used()), (60, 10));
        m.unreserve_bytes(10, true);
        m.unreserve_bytes(80, false);
        assert_eq!((m.used(), m.gtt_used()), (0, 0));
        let ram = SystemMemory::new()?;
        assert!(ram.limit > 0 && ram.gtt_limit > 0);
        Ok(())
    }

    #[test]
    fn upstream_limits() -> Result {
        const GIB: u64 = 1 << 30;
        // A 2 GiB guest: half of 63/64 of RAM for the system, half for TTM.
        assert_eq!(limits_for_ram(2 * GIB), (2 * GIB * 63 / 64 / 2, GIB));
        // 64 GiB: all but 1/64 and 1.5 GiB.
        assert_eq!(limits_for_ram(64 * GIB), (63 * GIB - 3 * GIB / 2, 32 * GIB));
        // Either way the system keeps memory of its own.
        for ram in [GIB, 2 * GIB, 3 * GIB, 4 * GIB, 16 * GIB] {
            let (system, ttm) = limits_for_ram(ram);
            assert!(system <= ram / 2 || system <= ram - RESERVE_MEM_LIMIT);
            assert!(ttm <= ram / 2);
        }
        Ok(())
    }
}
