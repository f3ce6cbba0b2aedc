// SPDX-License-Identifier: GPL-2.0
//! The virtual amdgpu's software GPU page table as a host crate, so that its
//! logic is tested with `cargo test`.  The kernel module compiles
//! `src/table.rs` directly (`vgpu/vm.rs`); this file only adds the tests.

mod table;

pub use table::*;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// xorshift64*: a small deterministic generator, so failures reproduce.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn pte(aperture: Aperture, frame: u64, writable: bool) -> Pte {
        match Pte::new(aperture, frame, writable, false) {
            Ok(p) => p,
            Err(e) => panic!("bad test PTE: {e:?}"),
        }
    }

    /// The naive model: virtual page number -> PTE.
    type Model = HashMap<u64, Pte>;

    /// Areas the random ranges cluster in, so that they overlap and cross
    /// table boundaries at every level.
    const AREAS: [u64; 5] = [
        0x10000,                         // the bottom of the GPUVM aperture
        (2 << 20) - 64 * PAGE_SIZE,      // a PTB boundary
        (1 << 30) - 300 * PAGE_SIZE,     // a PDB0 boundary
        (512 << 30) - 1000 * PAGE_SIZE,  // a PDB1 boundary
        VA_END - 2048 * PAGE_SIZE,       // the top of the address space
    ];

    fn random_range(rng: &mut Rng) -> (u64, u64) {
        let base = AREAS[rng.below(AREAS.len() as u64) as usize];
        let va = base + rng.below(1500) * PAGE_SIZE;
        let max = (VA_END - va) / PAGE_SIZE;
        let npages = 1 + rng.below(700).min(max - 1);
        (va, npages)
    }

    fn random_pte(rng: &mut Rng) -> (Aperture, u64, bool) {
        let aperture = match rng.below(3) {
            0 => Aperture::Vram,
            1 => Aperture::System,
            _ => Aperture::UserVa,
        };
        (aperture, rng.below(1 << 40), rng.below(2) == 0)
    }

    fn check_range(pt: &PageTable, model: &Model, va: u64, npages: u64) {
        for i in 0..npages {
            let a = va + i * PAGE_SIZE;
            assert_eq!(pt.lookup(a), model.get(&(a >> PAGE_SHIFT)).copied(), "lookup {a:#x}");
            assert_eq!(pt.lookup(a + 123), pt.lookup(a), "offset within page {a:#x}");
        }
    }

    fn check_all(pt: &PageTable, model: &Model) {
        assert_eq!(pt.mapped_pages(), model.len() as u64);
        for (&vpn, p) in model {
            assert_eq!(pt.lookup(vpn << PAGE_SHIFT), Some(*p));
        }
    }

    /// Random map/unmap/lookup against the model.  With a table limit,
    /// NoMemory must leave everything as it was.
    fn run(seed: u64, steps: usize, limit: Option<usize>) {
        let mut rng = Rng(seed);
        let mut pt = PageTable::new().expect("root");
        if let Some(l) = limit {
            pt.set_table_limit(l);
        }
        let mut model = Model::new();
        let mut nomem = 0;
        for step in 0..steps {
            let (va, npages) = random_range(&mut rng);
            match rng.below(10) {
                0..=4 => {
                    let (ap, frame0, w) = random_pte(&mut rng);
                    let busy = (0..npages).any(|i| model.contains_key(&((va >> PAGE_SHIFT) + i)));
                    let live = pt.live_tables();
                    match pt.map(va, npages, |i| Ok(pte(ap, frame0 + i, w))) {
                        Ok(()) => {
                            assert!(!busy, "step {step}: map over a mapping succeeded");
                            for i in 0..npages {
                                model.insert((va >> PAGE_SHIFT) + i, pte(ap, frame0 + i, w));
                            }
                        }
                        Err(Error::Busy) => assert!(busy, "step {step}: spurious Busy"),
                        Err(Error::NoMemory) => {
                            assert!(limit.is_some(), "step {step}: NoMemory without a limit");
                            assert_eq!(pt.live_tables(), live, "step {step}: NoMemory leaked tables");
                            nomem += 1;
                        }
                        Err(e) => panic!("step {step}: map {va:#x}+{npages}: {e:?}"),
                    }
                }
                5..=8 => {
                    let want = (0..npages)
                        .filter(|i| model.remove(&((va >> PAGE_SHIFT) + i)).is_some())
                        .count() as u64;
                    assert_eq!(pt.unmap(va, npages), Ok(want), "step {step}: unmap count");
                }
                _ => {}
            }
            check_range(&pt, &model, va.saturating_sub(3 * PAGE_SIZE), npages + 6);
            if step % 64 == 0 {
                check_all(&pt, &model);
            }
            if let Some(l) = limit {
                assert!(pt.live_tables() <= l);
            }
        }
        check_all(&pt, &model);
        // Unmapping everything frees every table but the root.
        assert_eq!(pt.unmap(0, VA_END / PAGE_SIZE), Ok(model.len() as u64));
        assert_eq!(pt.mapped_pages(), 0);
        assert_eq!(pt.live_tables(), 1);
        if limit.is_some() {
            assert!(nomem > 0, "the limit was never hit; the test proves nothing");
        }
    }

    #[test]
    fn random_against_model() {
        for seed in 1..=12 {
            run(0x9e37_79b9_7f4a_7c15 ^ seed, 1500, None);
        }
    }

    #[test]
    fn random_with_table_limit_is_atomic() {
        for seed in 1..=6 {
            run(0xdead_beef_cafe_f00d ^ seed, 1500, Some(12));
        }
    }

    #[test]
    fn table_counts_per_level() {
        let mut pt = PageTable::new().unwrap();
        let p = |i| Ok(pte(Aperture::System, i, true));
        assert_eq!(pt.live_tables(), 1);
        pt.map(0x10000, 1, p).unwrap();
        assert_eq!(pt.live_tables(), 4, "root + PDB1 + PDB0 + PTB");
        // Crossing a 2 MiB boundary needs a second PTB.
        pt.map((2 << 20) - PAGE_SIZE, 2, p).unwrap();
        assert_eq!(pt.live_tables(), 5);
        // Crossing 1 GiB: a PDB0 and a PTB more.
        pt.map((1 << 30) - PAGE_SIZE, 2, p).unwrap();
        assert_eq!(pt.live_tables(), 8);
        // Crossing 512 GiB: a PDB0 and a PTB below it, a PDB1, a PDB0 and
        // a PTB above it.
        pt.map((512 << 30) - PAGE_SIZE, 2, p).unwrap();
        assert_eq!(pt.live_tables(), 13);
        assert_eq!(pt.unmap(0, VA_END / PAGE_SIZE), Ok(7));
        assert_eq!(pt.live_tables(), 1);
    }

    #[test]
    fn tables_are_reused() {
        let mut pt = PageTable::new().unwrap();
        for round in 0..50 {
            let va = 0x7000_0000_0000 + round * 0x4000_0000;
            pt.map(va, 1000, |i| Ok(pte(Aperture::Vram, i, false))).unwrap();
            assert_eq!(pt.unmap(va, 1000), Ok(1000));
        }
        // 1000 pages from a 1 GiB-aligned address: root, PDB1, PDB0, 2 PTBs.
        pt.map(0x7000_0000_0000, 1000, |i| Ok(pte(Aperture::Vram, i, false))).unwrap();
        assert_eq!(pt.live_tables(), 5);
    }

    #[test]
    fn arguments_are_checked() {
        let mut pt = PageTable::new().unwrap();
        let p = |i| Ok(pte(Aperture::Vram, i, true));
        assert_eq!(pt.map(0x1001, 1, p), Err(Error::Invalid));
        assert_eq!(pt.map(0x1000, 0, p), Err(Error::Invalid));
        assert_eq!(pt.map(VA_END, 1, p), Err(Error::OutOfRange));
        assert_eq!(pt.map(VA_END - PAGE_SIZE, 2, p), Err(Error::OutOfRange));
        assert_eq!(pt.map(PAGE_SIZE, u64::MAX, p), Err(Error::OutOfRange));
        assert_eq!(pt.unmap(0x1001, 1), Err(Error::Invalid));
        assert_eq!(pt.map(VA_END - PAGE_SIZE, 1, p), Ok(()));
        assert_eq!(pt.lookup(VA_END - 1), Some(pte(Aperture::Vram, 0, true)));
        assert_eq!(pt.lookup(VA_END), None);
        assert_eq!(pt.map(VA_END - 2 * PAGE_SIZE, 2, p), Err(Error::Busy));
        assert_eq!(pt.live_tables(), 4, "a failed map allocated nothing");
    }

    #[test]
    fn failing_pte_source_changes_nothing() {
        let mut pt = PageTable::new().unwrap();
        pt.map(0x20_0000, 1, |_| Ok(pte(Aperture::Vram, 1, true))).unwrap();
        let live = pt.live_tables();
        // Fails on the 700th page, after crossing into a new PTB and PDB0.
        let r = pt.map((1 << 30) - 600 * PAGE_SIZE, 1000, |i| {
            if i == 700 {
                Err(Error::BadFrame)
            } else {
                Ok(pte(Aperture::System, i, false))
            }
        });
        assert_eq!(r, Err(Error::BadFrame));
        assert_eq!(pt.live_tables(), live);
        assert_eq!(pt.mapped_pages(), 1);
        assert_eq!(pt.lookup((1 << 30) - 600 * PAGE_SIZE), None);
    }

    #[test]
    fn pte_fields_round_trip() {
        assert_eq!(Pte::new(Aperture::System, FRAME_LIMIT, true, true), Err(Error::BadFrame));
        let mut pt = PageTable::new().unwrap();
        let cases = [
            (Aperture::Vram, 0, false, false),
            (Aperture::System, FRAME_LIMIT - 1, true, false),
            (Aperture::UserVa, 0x7fff_ffff_f, false, true),
            (Aperture::Vram, 12345, true, true),
        ];
        for (i, &(ap, frame, w, x)) in cases.iter().enumerate() {
            let want = Pte::new(ap, frame, w, x).unwrap();
            let va = 0x1_0000_0000 + i as u64 * PAGE_SIZE;
            pt.map(va, 1, |_| Ok(want)).unwrap();
            let got = pt.lookup(va).unwrap();
            assert_eq!(got, want);
            assert_eq!((got.aperture(), got.frame(), got.writable(), got.executable()), (ap, frame, w, x));
        }
    }
}
