// SPDX-License-Identifier: GPL-2.0 OR MIT
//! An in-memory GPU for the engine tests: sparse 4 KiB pages, each
//! read-write or read-only; anything else faults.

#![allow(dead_code)]

use std::collections::HashMap;

use gpu_engines::mem::{Events, Fault, GpuMemory};

pub const PAGE: u64 = 4096;

#[derive(Default)]
pub struct TestGpu {
    pages: HashMap<u64, (Box<[u8; PAGE as usize]>, bool)>,
    /// Memory accesses that went through (to check no access after an error).
    pub accesses: u64,
}

impl TestGpu {
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps `[va, va + len)` (page granular), zeroed.
    pub fn map(&mut self, va: u64, len: u64, writable: bool) {
        let first = va / PAGE;
        let last = (va + len - 1) / PAGE;
        for p in first..=last {
            self.pages
                .entry(p)
                .or_insert_with(|| (Box::new([0; PAGE as usize]), writable))
                .1 = writable;
        }
    }

    pub fn unmap(&mut self, va: u64, len: u64) {
        let first = va / PAGE;
        let last = (va + len - 1) / PAGE;
        for p in first..=last {
            self.pages.remove(&p);
        }
    }

    /// Host-side (CPU) accesses: never fault (they panic on unmapped).
    pub fn poke(&mut self, va: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let s = self.span(va + done as u64, data.len() - done, false).expect("poke: unmapped");
            let n = s.len();
            s.copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }
    pub fn peek(&mut self, va: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        let mut done = 0;
        while done < len {
            let s = self.span(va + done as u64, len - done, false).expect("peek: unmapped");
            let n = s.len();
            out[done..done + n].copy_from_slice(s);
            done += n;
        }
        out
    }
    pub fn poke32(&mut self, va: u64, v: u32) {
        self.poke(va, &v.to_le_bytes());
    }
    pub fn poke64(&mut self, va: u64, v: u64) {
        self.poke(va, &v.to_le_bytes());
    }
    pub fn peek32(&mut self, va: u64) -> u32 {
        u32::from_le_bytes(self.peek(va, 4).try_into().unwrap())
    }
    pub fn peek64(&mut self, va: u64) -> u64 {
        u64::from_le_bytes(self.peek(va, 8).try_into().unwrap())
    }
    pub fn poke_dwords(&mut self, va: u64, dws: &[u32]) {
        for (i, d) in dws.iter().enumerate() {
            self.poke32(va + 4 * i as u64, *d);
        }
    }
}

impl TestGpu {
    /// The page span at `va` for an access of up to `len` bytes.
    fn span(&mut self, va: u64, len: usize, write: bool) -> Result<&mut [u8], Fault> {
        let off = (va % PAGE) as usize;
        let n = len.min(PAGE as usize - off);
        match self.pages.get_mut(&(va / PAGE)) {
            Some((page, w)) if *w || !write => Ok(&mut page[off..off + n]),
            _ => Err(Fault { va, write }),
        }
    }
}

impl GpuMemory for TestGpu {
    fn read(&mut self, va: u64, buf: &mut [u8]) -> Result<(), Fault> {
        self.accesses += 1;
        let mut done = 0;
        while done < buf.len() {
            let s = self.span(va.wrapping_add(done as u64), buf.len() - done, false)?;
            let n = s.len();
            buf[done..done + n].copy_from_slice(s);
            done += n;
        }
        Ok(())
    }
    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), Fault> {
        self.accesses += 1;
        let mut done = 0;
        while done < data.len() {
            let s = self.span(va.wrapping_add(done as u64), data.len() - done, true)?;
            let n = s.len();
            s.copy_from_slice(&data[done..done + n]);
            done += n;
        }
        Ok(())
    }
    fn atomic_add_u64(&mut self, va: u64, v: u64) -> Result<u64, Fault> {
        assert_eq!(va % 8, 0, "engines check alignment before atomics");
        let mut b = [0u8; 8];
        self.read(va, &mut b)?;
        let old = u64::from_le_bytes(b);
        self.write(va, &old.wrapping_add(v).to_le_bytes())?;
        Ok(old)
    }
}

/// The interrupts an engine raised, and a clock.
#[derive(Default)]
pub struct Rec {
    pub irqs: Vec<u32>,
    pub now: u64,
}

impl Events for Rec {
    fn signal(&mut self, context_id: u32) {
        self.irqs.push(context_id);
    }
    fn clock(&mut self) -> u64 {
        self.now += 1;
        self.now
    }
}

