// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Host tests of the GPU-generation type against upstream amdkfd/amdgpu
//! (Linux 7.3: `kgd2kfd_probe`, `kfd_priv.h`, `kfd_queue.c`,
//! `amdgpu_doorbell.h`).

use kfd_logic::gfx::{DoorbellLayout, GfxArch, GfxVersion, SaveArea};

/// Every target 7.3's `kgd2kfd_probe` assigns to a SOC15 GPU up to GC 12.0,
/// with its name and family.
const TARGETS: &[(u32, &str, GfxArch)] = &[
    (90000, "gfx900", GfxArch::Gfx9),
    (90002, "gfx902", GfxArch::Gfx9),
    (90004, "gfx904", GfxArch::Gfx9),
    (90006, "gfx906", GfxArch::Gfx9),
    (90008, "gfx908", GfxArch::Gfx9),
    (90010, "gfx90a", GfxArch::Gfx9),
    (90012, "gfx90c", GfxArch::Gfx9),
    (90402, "gfx942", GfxArch::Gfx9_4_3),
    (90500, "gfx950", GfxArch::Gfx9_5),
    (100100, "gfx1010", GfxArch::Gfx10_1),
    (100101, "gfx1011", GfxArch::Gfx10_1),
    (100102, "gfx1012", GfxArch::Gfx10_1),
    (100103, "gfx1013", GfxArch::Gfx10_1),
    (100300, "gfx1030", GfxArch::Gfx10_3),
    (100306, "gfx1036", GfxArch::Gfx10_3),
    (110000, "gfx1100", GfxArch::Gfx11),
    (110001, "gfx1101", GfxArch::Gfx11),
    (110002, "gfx1102", GfxArch::Gfx11),
    (110003, "gfx1103", GfxArch::Gfx11),
    (110500, "gfx1150", GfxArch::Gfx11),
    (110504, "gfx1154", GfxArch::Gfx11),
    (110701, "gfx1171", GfxArch::Gfx11),
    (120000, "gfx1200", GfxArch::Gfx12),
    (120001, "gfx1201", GfxArch::Gfx12),
];

fn gfx(v: u32) -> GfxVersion {
    GfxVersion::from_target_version(v).unwrap_or_else(|| panic!("{v} not known"))
}

#[test]
fn known_targets_round_trip() {
    for &(v, name, arch) in TARGETS {
        let g = gfx(v);
        assert_eq!(g.target_version(), v);
        assert_eq!(g.to_string(), name);
        assert_eq!(g.arch(), arch, "{name}");
    }
    assert_eq!(GfxVersion::GFX90A.target_version(), 90010);
    assert_eq!(GfxVersion::GFX942.target_version(), 90402);
    assert_eq!(GfxVersion::GFX1030.target_version(), 100300);
    assert_eq!(GfxVersion::GFX1100.target_version(), 110000);
    assert_eq!(GfxVersion::GFX1103.target_version(), 110003);
}

#[test]
fn unknown_targets_are_refused() {
    // 0, pre-SOC15 (gfx700, Carrizo, Tonga, Fiji/Polaris), GC 12.1 (gfx1250),
    // targets no GPU has, and garbage.
    for v in [0, 70000, 80001, 80002, 80003, 90001, 90100, 90403, 100200, 100307, 110004, 110600, 120500, 130000, u32::MAX] {
        assert_eq!(GfxVersion::from_target_version(v), None, "{v}");
    }
}

#[test]
fn families_are_ordered() {
    assert!(GfxArch::Gfx9 < GfxArch::Gfx9_4_3 && GfxArch::Gfx9_5 < GfxArch::Gfx10_1);
    assert!(GfxArch::Gfx10_3 < GfxArch::Gfx11 && GfxArch::Gfx11 < GfxArch::Gfx12);
    assert!(GfxVersion::GFX90A < GfxVersion::GFX942 && GfxVersion::GFX1030 < GfxVersion::GFX1100);
}

#[test]
fn xnack_per_process_as_kfd_priv_h() {
    // KFD_SUPPORT_XNACK_PER_PROCESS: GC 9.4.2 (gfx90a), 9.4.3/9.4.4 (gfx942), 9.5.0.
    let yes: Vec<u32> = TARGETS.iter().map(|t| t.0).filter(|&v| gfx(v).supports_xnack_per_process()).collect();
    assert_eq!(yes, [90010, 90402, 90500]);
    assert!(gfx(90400).supports_xnack_per_process() && gfx(90401).supports_xnack_per_process());
}

#[test]
fn mes_from_gfx11() {
    for &(v, name, arch) in TARGETS {
        assert_eq!(gfx(v).uses_mes(), arch >= GfxArch::Gfx11, "{name}");
    }
    assert!(!GfxVersion::GFX1030.uses_mes() && GfxVersion::GFX1103.uses_mes());
}

#[test]
fn wgps_from_gfx10() {
    for &(v, name, _) in TARGETS {
        assert_eq!(gfx(v).has_wgp(), v >= 100000, "{name}");
        assert_eq!(gfx(v).is_gfx9(), v < 100000, "{name}");
    }
}

#[test]
fn queue_limit_as_pqm_create_queue() {
    let big: Vec<u32> = TARGETS.iter().map(|t| t.0).filter(|&v| gfx(v).max_queues_per_process() == 255).collect();
    assert_eq!(big, [90402, 90500]);
    assert_eq!(GfxVersion::GFX90A.max_queues_per_process(), 127);
    assert_eq!(GfxVersion::GFX1100.max_queues_per_process(), 127);
}

#[test]
fn hws_ext_eng_from_sdma_5_2() {
    for (v, want) in [(90010, false), (90402, false), (100100, false), (100300, true), (110000, true), (110003, true), (120001, true)] {
        assert_eq!(gfx(v).hws_sdma_ext_eng(), want, "{v}");
    }
}

#[test]
fn doorbell_layouts_as_amdgpu() {
    use DoorbellLayout::*;
    for (v, want) in [
        (90000, Vega10),
        (90002, Vega10),
        (90004, Vega10),
        (90012, Vega10),
        (90006, Vega20),
        (90008, Vega20),
        (90010, Vega20),
        (90402, Layout1),
        (90500, Layout1),
        (100100, Navi10),
        (100300, Navi10),
        (110003, Navi10),
        (120001, Navi10),
    ] {
        assert_eq!(gfx(v).doorbell_layout(), want, "{v}");
    }
    assert_eq!(Vega10.non_cp(), (0xf0, 0xff));
    assert_eq!(Vega20.non_cp(), (0x100, 0x18f));
    assert_eq!(Layout1.non_cp(), (0x100, 0x1e8));
    assert_eq!(Navi10.non_cp(), (0x100, 0x190));
    assert_eq!((Vega10.sdma_engine_base(0), Vega10.sdma_engine_base(1)), (0xf0, 0xf2));
    for l in [Vega20, Layout1, Navi10] {
        assert_eq!((l.sdma_engine_base(0), l.sdma_engine_base(1), l.sdma_engine_base(7)), (0x100, 0x10a, 0x146));
    }
    assert_eq!(GfxVersion::GFX90A.doorbell_size(), 8);
}

/// `kfd_get_doorbell_dw_offset_in_bar` for every target: the slice's
/// first BAR dword (`amdgpu_doorbell_index_on_bar` of the slice BO at
/// byte offset 3 * 8 KiB: 0x1800) + id * 2 (64-bit doorbells), the same
/// dword as CREATE_QUEUE's byte offset in the slice / 4 from the slice's
/// start; ids past the 1024 of a slice and sums past u32 are refused.
#[test]
fn doorbell_bar_index_as_kfd_doorbell_c() {
    for &(v, name, _) in TARGETS {
        let g = gfx(v);
        assert_eq!(g.doorbell_dwords(), 2, "{name}");
        let first = 3 * 8192 / 4;
        for (id, want) in [(0, 0x1800), (1, 0x1802), (0x1ff, 0x1800 + 0x3fe), (0x200, 0x1c00), (1023, 0x1800 + 2046)] {
            assert_eq!(g.doorbell_dw_offset_in_bar(first, id), Some(want), "{name} id {id}");
            assert_eq!(
                g.doorbell_dw_offset_in_bar(first, id),
                Some(first + kfd_logic::queue_rules::doorbell_byte_offset(id) / 4),
                "{name} id {id}"
            );
        }
        // A slice at the BAR's start (no kernel doorbells below it) is the
        // only one where the BAR index equals the slice-relative dword.
        assert_eq!(g.doorbell_dw_offset_in_bar(0, 5), Some(10), "{name}");
        assert_eq!(g.doorbell_dw_offset_in_bar(first, 1024), None, "{name}");
        assert_eq!(g.doorbell_dw_offset_in_bar(first, u32::MAX), None, "{name}");
        assert_eq!(g.doorbell_dw_offset_in_bar(u32::MAX - 1, 1), None, "{name}");
        assert_eq!(g.doorbell_dw_offset_in_bar(u32::MAX - 2, 1), Some(u32::MAX), "{name}");
    }
}

/// Save areas worked out by hand from `kfd_queue_ctx_save_restore_size`.
#[test]
fn save_areas_as_kfd_queue_c() {
    let sa = |cwsr_size, ctl_stack_size| SaveArea { cwsr_size, ctl_stack_size };
    // The four virtual profiles: 4 CUs, 1 shader engine, 64 KiB LDS.
    // gfx90a: 160 waves * 8 B + 48 -> 1 page; 4 * (0x80000 + 0x15000).
    assert_eq!(GfxVersion::GFX90A.save_area(4, 1, 64), sa(0x255000, 0x1000));
    // gfx1030: 128 waves * 12 B + 48 -> 1 page; 4 * (0x40000 + 0x15000).
    assert_eq!(GfxVersion::GFX1030.save_area(4, 1, 64), sa(0x155000, 0x1000));
    // gfx1100: 4 * (0x60000 + 0x15000).
    assert_eq!(GfxVersion::GFX1100.save_area(4, 1, 64), sa(0x1d5000, 0x1000));
    // gfx1103: the default VGPR file.
    assert_eq!(GfxVersion::GFX1103.save_area(4, 1, 64), sa(0x155000, 0x1000));
    // A real MI210 (104 CUs, 8 engines): 4096 waves (engine-limited) * 8 B
    // + 48 -> 0x9000; 104 * 0x95000.
    assert_eq!(GfxVersion::GFX90A.save_area(104, 8, 64), sa(0x3c91000, 0x9000));
    // gfx906 (Vega20, 64 CUs): the default VGPR file.
    assert_eq!(gfx(90006).save_area(64, 4, 64), sa(0x1545000, 0x5000));
    // A W6800 with 80 CUs: 2560 waves * 12 B -> 0x8000, capped at 0x7000 on GFX10.
    assert_eq!(GfxVersion::GFX1030.save_area(80, 4, 64), sa(0x1a97000, 0x7000));
    // A W7900 with 96 CUs: no cap on GFX11 (0xa000).
    assert_eq!(GfxVersion::GFX1100.save_area(96, 6, 64), sa(0x2bea000, 0xa000));
    // gfx950 saves the CU's whole LDS (160 KiB here): 32 * 0xad000.
    assert_eq!(gfx(90500).save_area(32, 4, 160), sa(0x15a3000, 0x3000));
}

/// `amdgpu_gmc_noretry_set`'s `noretry_default`, per GC version.
#[test]
fn noretry_default_as_amdgpu_gmc_c() {
    // GC 9.0.1 (gfx900), 9.4.0 (gfx906), 9.4.1 (gfx908), 9.4.2 (gfx90a),
    // 9.4.3 (gfx942), 9.5.0 (gfx950), 10.3+ (gfx1030, gfx11, gfx12): on.
    for v in [90000, 90006, 90008, 90010, 90402, 90500, 100300, 110000, 110003, 120001] {
        assert!(gfx(v).noretry_default(), "{v}");
    }
    // Raven (9.1.0), Vega12 (9.2.1), Renoir (9.3.0), Navi1x (10.1): off.
    for v in [90002, 90004, 90012, 100100, 100103] {
        assert!(!gfx(v).noretry_default(), "{v}");
    }
}
