// SPDX-License-Identifier: MIT
//! Host tests of the hand-written half of kfd-uapi (abi.rs).  The full
//! layout/constant conformance against the upstream header is
//! scripts/abi-check; these check the encoders and the table themselves.

use core::mem::{offset_of, size_of};
use kfd_uapi::*;

#[test]
fn encoder_decoder_round_trip() {
    let mut n = 0;
    for dir in [IOC_NONE, IOC_WRITE, IOC_READ, IOC_READ | IOC_WRITE] {
        for ty in [0, 1, AMDKFD_IOCTL_BASE, 0x80, 0xff] {
            for nr in [0, 1, 0x28, 0x7f, 0x80, 0xff] {
                for size in [0, 1, 8, 24, 0x1000, 0x3fff] {
                    let cmd = ioc(dir, ty, nr, size);
                    assert_eq!(ioc_dir(cmd), dir, "dir of {cmd:#x}");
                    assert_eq!(ioc_type(cmd), ty, "type of {cmd:#x}");
                    assert_eq!(ioc_nr(cmd), nr, "nr of {cmd:#x}");
                    assert_eq!(ioc_size(cmd), size, "size of {cmd:#x}");
                    n += 1;
                }
            }
        }
    }
    assert_eq!(n, 4 * 5 * 6 * 6);
}

#[test]
fn encoder_bit_layout_is_x86_asm_generic() {
    // nr 0-7, type 8-15, size 16-29, dir 30-31; _IOC_WRITE=1, _IOC_READ=2.
    assert_eq!(ioc(0, 0, 1, 0), 1);
    assert_eq!(ioc(0, 1, 0, 0), 1 << 8);
    assert_eq!(ioc(0, 0, 0, 1), 1 << 16);
    assert_eq!(ioc(0, 0, 0, 0x3fff), 0x3fff << 16);
    assert_eq!(ioc(IOC_WRITE, 0, 0, 0), 1 << 30);
    assert_eq!(ioc(IOC_READ, 0, 0, 0), 1 << 31);
    assert_eq!(ioc(IOC_READ | IOC_WRITE, 0xff, 0xff, 0x3fff), u32::MAX);
    assert_eq!(AMDKFD_IOCTL_BASE, u32::from(b'K'));
}

#[test]
fn amdkfd_helpers_match_generic_ioc() {
    assert_eq!(io(7), ioc(IOC_NONE, AMDKFD_IOCTL_BASE, 7, 0));
    assert_eq!(ior::<u64>(7), ioc(IOC_READ, AMDKFD_IOCTL_BASE, 7, 8));
    assert_eq!(iow::<[u32; 3]>(7), ioc(IOC_WRITE, AMDKFD_IOCTL_BASE, 7, 12));
    assert_eq!(
        iowr::<kfd_ioctl_get_version_args>(7),
        ioc(3, AMDKFD_IOCTL_BASE, 7, 8)
    );
}

#[test]
#[should_panic(expected = "ioctl number out of range")]
fn encoder_rejects_nr_overflow() {
    let nr = std::hint::black_box(0x100);
    ioc(IOC_NONE, AMDKFD_IOCTL_BASE, nr, 0);
}

#[test]
#[should_panic(expected = "ioctl argument too large")]
fn encoder_rejects_size_overflow() {
    let size = std::hint::black_box(0x4000);
    ioc(IOC_READ, AMDKFD_IOCTL_BASE, 1, size);
}

#[test]
#[should_panic(expected = "ioctl direction out of range")]
fn encoder_rejects_dir_overflow() {
    let dir = std::hint::black_box(4);
    ioc(dir, AMDKFD_IOCTL_BASE, 1, 0);
}

#[test]
fn well_known_numbers() {
    // Values libhsakmt has been sending for years.
    assert_eq!(AMDKFD_IOC_GET_VERSION, 0x8008_4b01);
    assert_eq!(AMDKFD_IOC_CREATE_QUEUE, 0xc060_4b02);
    assert_eq!(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, 0xc028_4b16);
    assert_eq!(AMDKFD_IOC_SVM, 0xc018_4b20);
    assert_eq!(AMDKFD_IOC_CREATE_PROCESS, 0x0000_4b27);
}

#[test]
fn directions_and_sizes() {
    assert_eq!(ioc_dir(AMDKFD_IOC_GET_VERSION), IOC_READ);
    assert_eq!(ioc_dir(AMDKFD_IOC_SET_MEMORY_POLICY), IOC_WRITE);
    assert_eq!(ioc_dir(AMDKFD_IOC_CREATE_QUEUE), IOC_READ | IOC_WRITE);
    // CREATE_PROCESS is _IO: no direction, no size.
    assert_eq!(ioc_dir(AMDKFD_IOC_CREATE_PROCESS), IOC_NONE);
    assert_eq!(ioc_size(AMDKFD_IOC_CREATE_PROCESS), 0);
    // SVM's size field is the bare header, without the flexible array.
    assert_eq!(size_of::<kfd_ioctl_svm_args>(), 24);
    assert_eq!(ioc_size(AMDKFD_IOC_SVM), 24);
    assert_eq!(
        ioc_size(AMDKFD_IOC_DBG_TRAP) as usize,
        size_of::<kfd_ioctl_dbg_trap_args>()
    );
    assert_eq!(
        ioc_size(AMDKFD_IOC_PROFILER) as usize,
        size_of::<kfd_ioctl_profiler_args>()
    );
}

#[test]
fn svm_size_grows_with_attributes() {
    assert_eq!(amdkfd_ioc_svm(0), AMDKFD_IOC_SVM);
    for nattr in [1u32, 2, 7, 100] {
        let cmd = amdkfd_ioc_svm(nattr);
        assert_eq!(ioc_nr(cmd), 0x20);
        assert_eq!(ioc_dir(cmd), IOC_READ | IOC_WRITE);
        assert_eq!(ioc_size(cmd), 24 + 8 * nattr);
        // What libhsakmt does: AMDKFD_IOC_SVM + (nattr * 8 << _IOC_SIZESHIFT).
        assert_eq!(cmd, AMDKFD_IOC_SVM + ((nattr * 8) << IOC_SIZESHIFT));
    }
    assert_eq!(offset_of!(kfd_ioctl_svm_args, attrs), 24);
    assert_eq!(size_of::<kfd_ioctl_svm_attribute>(), 8);
}

#[test]
#[should_panic(expected = "too many SVM attributes")]
fn svm_size_overflow_is_caught() {
    amdkfd_ioc_svm(std::hint::black_box(2046));
}

#[test]
fn table_is_complete_and_ordered() {
    assert_eq!(IOCTLS.len(), 40);
    assert_eq!(
        IOCTLS.len() as u32,
        AMDKFD_COMMAND_END - AMDKFD_COMMAND_START
    );
    assert_eq!(AMDKFD_COMMAND_START, 0x01);
    assert_eq!(AMDKFD_COMMAND_END, 0x29);
    for (i, d) in IOCTLS.iter().enumerate() {
        assert_eq!(d.nr as usize, i + 1, "{}", d.name);
        assert_eq!(ioc_nr(d.cmd), d.nr, "{}", d.name);
        assert_eq!(ioc_type(d.cmd), AMDKFD_IOCTL_BASE, "{}", d.name);
        assert!(d.name.starts_with("AMDKFD_IOC_"), "{}", d.name);
        assert_eq!(ioctl_by_nr(d.nr), Some(d));
    }
    let mut cmds: Vec<u32> = IOCTLS.iter().map(|d| d.cmd).collect();
    cmds.sort();
    cmds.dedup();
    assert_eq!(cmds.len(), 40, "duplicate commands");
    let mut names: Vec<&str> = IOCTLS.iter().map(|d| d.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 40, "duplicate names");
}

#[test]
fn table_entries_are_the_constants() {
    let find = |name: &str| IOCTLS.iter().find(|d| d.name == name).map(|d| d.cmd);
    assert_eq!(find("AMDKFD_IOC_GET_VERSION"), Some(AMDKFD_IOC_GET_VERSION));
    assert_eq!(find("AMDKFD_IOC_SVM"), Some(AMDKFD_IOC_SVM));
    assert_eq!(
        find("AMDKFD_IOC_CREATE_PROCESS"),
        Some(AMDKFD_IOC_CREATE_PROCESS)
    );
    assert_eq!(find("AMDKFD_IOC_PROFILER"), Some(AMDKFD_IOC_PROFILER));
    assert_eq!(IOCTLS[0x1f].name, "AMDKFD_IOC_SVM");
    assert_eq!(IOCTLS[0x26].name, "AMDKFD_IOC_CREATE_PROCESS");
}

#[test]
fn lookup_outside_the_range() {
    assert_eq!(ioctl_by_nr(0), None);
    assert_eq!(ioctl_by_nr(AMDKFD_COMMAND_END), None);
    assert_eq!(ioctl_by_nr(0xff), None);
    assert_eq!(ioctl_by_nr(u32::MAX), None);
    assert_eq!(
        ioctl_by_nr(1).map(|d| d.name),
        Some("AMDKFD_IOC_GET_VERSION")
    );
}

#[test]
fn bindings_sanity() {
    assert_eq!((KFD_IOCTL_MAJOR_VERSION, KFD_IOCTL_MINOR_VERSION), (1, 23));
    assert_eq!(size_of::<kfd_ioctl_get_version_args>(), 8);
    assert_eq!(size_of::<kfd_ioctl_create_queue_args>(), 96);
    // Anonymous unions are reachable under bindgen's name.
    assert_eq!(
        offset_of!(kfd_ioctl_dbg_trap_args, __bindgen_anon_1.enable),
        8
    );
    assert_eq!(
        offset_of!(kfd_ioctl_profiler_args, __bindgen_anon_1.version),
        4
    );
    // Enum constants keep their C names and are usable as u32.
    let q: u32 = KFD_IOC_QUEUE_TYPE_SDMA;
    let t: u32 = KFD_IOC_DBG_TRAP_ENABLE;
    assert_eq!((q, t), (1, 0));
    assert_eq!(KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE, 1 << 31);
    // Default is all zero bytes, also for the structs with unions.
    let a = kfd_ioctl_dbg_trap_args::default();
    // SAFETY: plain-old-data, read as bytes.
    let bytes: [u8; size_of::<kfd_ioctl_dbg_trap_args>()] = unsafe { core::mem::transmute(a) };
    assert!(bytes.iter().all(|&b| b == 0));
}

#[test]
// bindgen types each mask u32 or u64 by its value: u64::from covers both.
#[allow(clippy::useless_conversion)]
fn function_like_macros() {
    assert_eq!(kfd_ec_mask(1), 1);
    assert_eq!(kfd_ec_mask(64), 1 << 63);
    assert_eq!(kfd_ec_mask(0), 0);
    assert_eq!(kfd_ec_mask(65), 0);
    assert_eq!(kfd_smi_event_mask_from_index(KFD_SMI_EVENT_VMFAULT), 1);
    assert_eq!(
        kfd_smi_event_mask_from_index(KFD_SMI_EVENT_ALL_PROCESS),
        1 << 63
    );
    // The masks clang evaluated for bindings.rs against the Rust helpers.
    let all = |lo: u32, hi: u32, f: fn(u32) -> bool| {
        (lo..hi)
            .filter(|&e| f(e))
            .fold(0u64, |m, e| m | kfd_ec_mask(e))
    };
    let queue = u64::from(KFD_EC_MASK_QUEUE);
    let device = u64::from(KFD_EC_MASK_DEVICE);
    let process = u64::from(KFD_EC_MASK_PROCESS);
    let packet = u64::from(KFD_EC_MASK_PACKET);
    assert_eq!(all(0, 65, kfd_dbg_ec_type_is_queue), queue);
    assert_eq!(all(0, 65, kfd_dbg_ec_type_is_device), device);
    assert_eq!(all(0, 65, kfd_dbg_ec_type_is_process), process);
    assert_eq!(all(0, 65, kfd_dbg_ec_type_is_packet), packet);
    assert!(kfd_dbg_ec_type_is_queue(EC_QUEUE_WAVE_ABORT));
    assert!(!kfd_dbg_ec_type_is_device(EC_QUEUE_WAVE_ABORT));
    assert!(kfd_dbg_ec_type_is_device(EC_DEVICE_NEW));
    assert!(kfd_dbg_ec_type_is_process(EC_PROCESS_RUNTIME));
    assert!(kfd_dbg_ec_type_is_packet(EC_QUEUE_PACKET_RESERVED));
    assert!(kfd_dbg_ec_type_is_queue(EC_QUEUE_PACKET_RESERVED));
    assert!(!kfd_dbg_ec_is_valid(EC_NONE));
    assert!(!kfd_dbg_ec_is_valid(EC_MAX));
    assert!(!kfd_dbg_ec_type_is_queue(EC_MAX));
    assert_eq!(queue & device, 0);
    assert_eq!(packet & !queue, 0, "packet errors are queue errors");
}
