// SPDX-License-Identifier: MIT
//! The /dev/kfd user-space ABI for Rust: the bindgen output of
//! `include/uapi/linux/kfd_ioctl.h` plus what bindgen cannot express — the
//! `_IOC` encoders, every `AMDKFD_IOC_*` number and the ioctl table.
//!
//! Only `core` is used, no external crate and no file submodule, so this one
//! file (with `bindings.rs` next to it) is shared by two crates:
//!
//! - the host crate `kfd-uapi` (`lib.rs`: `#![no_std]` + `mod abi`);
//! - the kernel module: `#[path = "../rust/kfd-uapi/src/abi.rs"] mod uapi;`.
//!
//! The `AMDKFD_IOC_*` values are computed from the sizes of the Rust structs;
//! `scripts/abi-check` compares them, and every struct layout and constant,
//! with what a C compiler makes of the upstream header.

#![allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code,
    unreachable_pub
)]

/// Bindgen output for `kfd_ioctl.h` (`scripts/gen-uapi-rs`): every struct,
/// enum constant and integer macro of the header, under its C name.
#[allow(
    clippy::all,
    clippy::as_underscore,
    clippy::cast_lossless,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr,
    clippy::undocumented_unsafe_blocks,
    missing_docs,
    improper_ctypes,
    unsafe_op_in_unsafe_fn
)]
pub mod bindings {
    include!("bindings.rs");
}

pub use bindings::*;

// ---------------------------------------------------------------------------
// ioctl number encoding: include/uapi/asm-generic/ioctl.h (x86 layout).
// ---------------------------------------------------------------------------

/// Width of the command-number field.
pub const IOC_NRBITS: u32 = 8;
/// Width of the type (driver letter) field.
pub const IOC_TYPEBITS: u32 = 8;
/// Width of the argument-size field.
pub const IOC_SIZEBITS: u32 = 14;
/// Width of the direction field.
pub const IOC_DIRBITS: u32 = 2;

/// Mask of the command-number field (after shifting).
pub const IOC_NRMASK: u32 = (1 << IOC_NRBITS) - 1;
/// Mask of the type field (after shifting).
pub const IOC_TYPEMASK: u32 = (1 << IOC_TYPEBITS) - 1;
/// Mask of the size field (after shifting).
pub const IOC_SIZEMASK: u32 = (1 << IOC_SIZEBITS) - 1;
/// Mask of the direction field (after shifting).
pub const IOC_DIRMASK: u32 = (1 << IOC_DIRBITS) - 1;

/// Position of the command-number field.
pub const IOC_NRSHIFT: u32 = 0;
/// Position of the type field.
pub const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
/// Position of the size field.
pub const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
/// Position of the direction field.
pub const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;

/// `_IOC_NONE`: no argument is copied.
pub const IOC_NONE: u32 = 0;
/// `_IOC_WRITE`: user space writes the argument, the driver reads it.
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ`: the driver writes the argument back to user space.
pub const IOC_READ: u32 = 2;

/// `_IOC(dir, type, nr, size)`.
///
/// Panics (at compile time when used in a `const`) if a field does not fit.
pub const fn ioc(dir: u32, ty: u32, nr: u32, size: u32) -> u32 {
    assert!(dir <= IOC_DIRMASK, "ioctl direction out of range");
    assert!(ty <= IOC_TYPEMASK, "ioctl type out of range");
    assert!(nr <= IOC_NRMASK, "ioctl number out of range");
    assert!(size <= IOC_SIZEMASK, "ioctl argument too large");
    (dir << IOC_DIRSHIFT) | (ty << IOC_TYPESHIFT) | (nr << IOC_NRSHIFT) | (size << IOC_SIZESHIFT)
}

/// `_IOC_TYPECHECK(T)`: the size of `T` as the size field holds it.
pub const fn ioc_typecheck<T>() -> u32 {
    let size = core::mem::size_of::<T>();
    assert!(size <= IOC_SIZEMASK as usize, "ioctl argument too large");
    size as u32
}

/// `_IOC_DIR(cmd)`.
pub const fn ioc_dir(cmd: u32) -> u32 {
    (cmd >> IOC_DIRSHIFT) & IOC_DIRMASK
}

/// `_IOC_TYPE(cmd)`.
pub const fn ioc_type(cmd: u32) -> u32 {
    (cmd >> IOC_TYPESHIFT) & IOC_TYPEMASK
}

/// `_IOC_NR(cmd)`.
pub const fn ioc_nr(cmd: u32) -> u32 {
    (cmd >> IOC_NRSHIFT) & IOC_NRMASK
}

/// `_IOC_SIZE(cmd)`.
pub const fn ioc_size(cmd: u32) -> u32 {
    (cmd >> IOC_SIZESHIFT) & IOC_SIZEMASK
}

/// `AMDKFD_IOCTL_BASE`, the type field of every kfd ioctl (`'K'`).
#[allow(clippy::cast_lossless)]
pub const AMDKFD_IOCTL_BASE: u32 = bindings::AMDKFD_IOCTL_BASE as u32;
/// First command number (`AMDKFD_COMMAND_START`, 0x01).
pub const AMDKFD_COMMAND_START: u32 = bindings::AMDKFD_COMMAND_START;
/// One past the last command number (`AMDKFD_COMMAND_END`, 0x29).
pub const AMDKFD_COMMAND_END: u32 = bindings::AMDKFD_COMMAND_END;

/// `AMDKFD_IO(nr)`: no argument.
pub const fn io(nr: u32) -> u32 {
    ioc(IOC_NONE, AMDKFD_IOCTL_BASE, nr, 0)
}

/// `AMDKFD_IOR(nr, T)`: the driver writes a `T` to user space.
pub const fn ior<T>(nr: u32) -> u32 {
    ioc(IOC_READ, AMDKFD_IOCTL_BASE, nr, ioc_typecheck::<T>())
}

/// `AMDKFD_IOW(nr, T)`: the driver reads a `T` from user space.
pub const fn iow<T>(nr: u32) -> u32 {
    ioc(IOC_WRITE, AMDKFD_IOCTL_BASE, nr, ioc_typecheck::<T>())
}

/// `AMDKFD_IOWR(nr, T)`: both directions.
pub const fn iowr<T>(nr: u32) -> u32 {
    ioc(
        IOC_READ | IOC_WRITE,
        AMDKFD_IOCTL_BASE,
        nr,
        ioc_typecheck::<T>(),
    )
}

// ---------------------------------------------------------------------------
// The ioctls, in the order and with the argument types of kfd_ioctl.h.
// ---------------------------------------------------------------------------

/// `AMDKFD_IOC_GET_VERSION`
pub const AMDKFD_IOC_GET_VERSION: u32 = ior::<kfd_ioctl_get_version_args>(0x01);
/// `AMDKFD_IOC_CREATE_QUEUE`
pub const AMDKFD_IOC_CREATE_QUEUE: u32 = iowr::<kfd_ioctl_create_queue_args>(0x02);
/// `AMDKFD_IOC_DESTROY_QUEUE`
pub const AMDKFD_IOC_DESTROY_QUEUE: u32 = iowr::<kfd_ioctl_destroy_queue_args>(0x03);
/// `AMDKFD_IOC_SET_MEMORY_POLICY`
pub const AMDKFD_IOC_SET_MEMORY_POLICY: u32 = iow::<kfd_ioctl_set_memory_policy_args>(0x04);
/// `AMDKFD_IOC_GET_CLOCK_COUNTERS`
pub const AMDKFD_IOC_GET_CLOCK_COUNTERS: u32 = iowr::<kfd_ioctl_get_clock_counters_args>(0x05);
/// `AMDKFD_IOC_GET_PROCESS_APERTURES` (deprecated, see `_NEW`)
pub const AMDKFD_IOC_GET_PROCESS_APERTURES: u32 = ior::<kfd_ioctl_get_process_apertures_args>(0x06);
/// `AMDKFD_IOC_UPDATE_QUEUE`
pub const AMDKFD_IOC_UPDATE_QUEUE: u32 = iow::<kfd_ioctl_update_queue_args>(0x07);
/// `AMDKFD_IOC_CREATE_EVENT`
pub const AMDKFD_IOC_CREATE_EVENT: u32 = iowr::<kfd_ioctl_create_event_args>(0x08);
/// `AMDKFD_IOC_DESTROY_EVENT`
pub const AMDKFD_IOC_DESTROY_EVENT: u32 = iow::<kfd_ioctl_destroy_event_args>(0x09);
/// `AMDKFD_IOC_SET_EVENT`
pub const AMDKFD_IOC_SET_EVENT: u32 = iow::<kfd_ioctl_set_event_args>(0x0A);
/// `AMDKFD_IOC_RESET_EVENT`
pub const AMDKFD_IOC_RESET_EVENT: u32 = iow::<kfd_ioctl_reset_event_args>(0x0B);
/// `AMDKFD_IOC_WAIT_EVENTS`
pub const AMDKFD_IOC_WAIT_EVENTS: u32 = iowr::<kfd_ioctl_wait_events_args>(0x0C);
/// `AMDKFD_IOC_DBG_REGISTER_DEPRECATED`
pub const AMDKFD_IOC_DBG_REGISTER_DEPRECATED: u32 = iow::<kfd_ioctl_dbg_register_args>(0x0D);
/// `AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED`
pub const AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED: u32 = iow::<kfd_ioctl_dbg_unregister_args>(0x0E);
/// `AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED`
pub const AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED: u32 =
    iow::<kfd_ioctl_dbg_address_watch_args>(0x0F);
/// `AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED`
pub const AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED: u32 =
    iow::<kfd_ioctl_dbg_wave_control_args>(0x10);
/// `AMDKFD_IOC_SET_SCRATCH_BACKING_VA`
pub const AMDKFD_IOC_SET_SCRATCH_BACKING_VA: u32 =
    iowr::<kfd_ioctl_set_scratch_backing_va_args>(0x11);
/// `AMDKFD_IOC_GET_TILE_CONFIG`
pub const AMDKFD_IOC_GET_TILE_CONFIG: u32 = iowr::<kfd_ioctl_get_tile_config_args>(0x12);
/// `AMDKFD_IOC_SET_TRAP_HANDLER`
pub const AMDKFD_IOC_SET_TRAP_HANDLER: u32 = iow::<kfd_ioctl_set_trap_handler_args>(0x13);
/// `AMDKFD_IOC_GET_PROCESS_APERTURES_NEW`
pub const AMDKFD_IOC_GET_PROCESS_APERTURES_NEW: u32 =
    iowr::<kfd_ioctl_get_process_apertures_new_args>(0x14);
/// `AMDKFD_IOC_ACQUIRE_VM`
pub const AMDKFD_IOC_ACQUIRE_VM: u32 = iow::<kfd_ioctl_acquire_vm_args>(0x15);
/// `AMDKFD_IOC_ALLOC_MEMORY_OF_GPU`
pub const AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: u32 = iowr::<kfd_ioctl_alloc_memory_of_gpu_args>(0x16);
/// `AMDKFD_IOC_FREE_MEMORY_OF_GPU`
pub const AMDKFD_IOC_FREE_MEMORY_OF_GPU: u32 = iow::<kfd_ioctl_free_memory_of_gpu_args>(0x17);
/// `AMDKFD_IOC_MAP_MEMORY_TO_GPU`
pub const AMDKFD_IOC_MAP_MEMORY_TO_GPU: u32 = iowr::<kfd_ioctl_map_memory_to_gpu_args>(0x18);
/// `AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU`
pub const AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU: u32 =
    iowr::<kfd_ioctl_unmap_memory_from_gpu_args>(0x19);
/// `AMDKFD_IOC_SET_CU_MASK`
pub const AMDKFD_IOC_SET_CU_MASK: u32 = iow::<kfd_ioctl_set_cu_mask_args>(0x1A);
/// `AMDKFD_IOC_GET_QUEUE_WAVE_STATE`
pub const AMDKFD_IOC_GET_QUEUE_WAVE_STATE: u32 = iowr::<kfd_ioctl_get_queue_wave_state_args>(0x1B);
/// `AMDKFD_IOC_GET_DMABUF_INFO`
pub const AMDKFD_IOC_GET_DMABUF_INFO: u32 = iowr::<kfd_ioctl_get_dmabuf_info_args>(0x1C);
/// `AMDKFD_IOC_IMPORT_DMABUF`
pub const AMDKFD_IOC_IMPORT_DMABUF: u32 = iowr::<kfd_ioctl_import_dmabuf_args>(0x1D);
/// `AMDKFD_IOC_ALLOC_QUEUE_GWS`
pub const AMDKFD_IOC_ALLOC_QUEUE_GWS: u32 = iowr::<kfd_ioctl_alloc_queue_gws_args>(0x1E);
/// `AMDKFD_IOC_SMI_EVENTS`
pub const AMDKFD_IOC_SMI_EVENTS: u32 = iowr::<kfd_ioctl_smi_events_args>(0x1F);
/// `AMDKFD_IOC_SVM`: the size field holds `sizeof(struct kfd_ioctl_svm_args)`
/// (without attributes); user space adds `nattr * sizeof(struct
/// kfd_ioctl_svm_attribute)` to it per call, see [`amdkfd_ioc_svm`].
pub const AMDKFD_IOC_SVM: u32 = iowr::<kfd_ioctl_svm_args>(0x20);
/// `AMDKFD_IOC_SET_XNACK_MODE`
pub const AMDKFD_IOC_SET_XNACK_MODE: u32 = iowr::<kfd_ioctl_set_xnack_mode_args>(0x21);
/// `AMDKFD_IOC_CRIU_OP`
pub const AMDKFD_IOC_CRIU_OP: u32 = iowr::<kfd_ioctl_criu_args>(0x22);
/// `AMDKFD_IOC_AVAILABLE_MEMORY`
pub const AMDKFD_IOC_AVAILABLE_MEMORY: u32 = iowr::<kfd_ioctl_get_available_memory_args>(0x23);
/// `AMDKFD_IOC_EXPORT_DMABUF`
pub const AMDKFD_IOC_EXPORT_DMABUF: u32 = iowr::<kfd_ioctl_export_dmabuf_args>(0x24);
/// `AMDKFD_IOC_RUNTIME_ENABLE`
pub const AMDKFD_IOC_RUNTIME_ENABLE: u32 = iowr::<kfd_ioctl_runtime_enable_args>(0x25);
/// `AMDKFD_IOC_DBG_TRAP`
pub const AMDKFD_IOC_DBG_TRAP: u32 = iowr::<kfd_ioctl_dbg_trap_args>(0x26);
/// `AMDKFD_IOC_CREATE_PROCESS`: `_IO`, no argument.
pub const AMDKFD_IOC_CREATE_PROCESS: u32 = io(0x27);
/// `AMDKFD_IOC_PROFILER`
pub const AMDKFD_IOC_PROFILER: u32 = iowr::<kfd_ioctl_profiler_args>(0x28);

/// `AMDKFD_IOC_SVM` as user space issues it for `nattr` attributes: the size
/// field grows by `nattr * sizeof(struct kfd_ioctl_svm_attribute)`.
///
/// Panics if the total does not fit the 14-bit size field.
pub const fn amdkfd_ioc_svm(nattr: u32) -> u32 {
    let attr = ioc_typecheck::<kfd_ioctl_svm_attribute>();
    let size = ioc_typecheck::<kfd_ioctl_svm_args>() as u64 + nattr as u64 * attr as u64;
    assert!(size <= IOC_SIZEMASK as u64, "too many SVM attributes");
    ioc(
        ioc_dir(AMDKFD_IOC_SVM),
        AMDKFD_IOCTL_BASE,
        ioc_nr(AMDKFD_IOC_SVM),
        size as u32,
    )
}

/// One ioctl of the table: command number, full command, C name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoctlDesc {
    /// `_IOC_NR(cmd)`, the index into the table plus one.
    pub nr: u32,
    /// The full command as user space passes it (`AMDKFD_IOC_*`).
    pub cmd: u32,
    /// The C macro name, e.g. `"AMDKFD_IOC_GET_VERSION"`.
    pub name: &'static str,
}

macro_rules! ioctl_table {
    ($($name:ident),* $(,)?) => {
        [$(IoctlDesc { nr: ioc_nr($name), cmd: $name, name: stringify!($name) }),*]
    };
}

/// Number of ioctls, `AMDKFD_COMMAND_END - AMDKFD_COMMAND_START`.
pub const NUM_IOCTLS: usize = 40;

/// Every kfd ioctl in command-number order: `IOCTLS[i].nr == i + 1`.
pub const IOCTLS: [IoctlDesc; NUM_IOCTLS] = ioctl_table![
    AMDKFD_IOC_GET_VERSION,
    AMDKFD_IOC_CREATE_QUEUE,
    AMDKFD_IOC_DESTROY_QUEUE,
    AMDKFD_IOC_SET_MEMORY_POLICY,
    AMDKFD_IOC_GET_CLOCK_COUNTERS,
    AMDKFD_IOC_GET_PROCESS_APERTURES,
    AMDKFD_IOC_UPDATE_QUEUE,
    AMDKFD_IOC_CREATE_EVENT,
    AMDKFD_IOC_DESTROY_EVENT,
    AMDKFD_IOC_SET_EVENT,
    AMDKFD_IOC_RESET_EVENT,
    AMDKFD_IOC_WAIT_EVENTS,
    AMDKFD_IOC_DBG_REGISTER_DEPRECATED,
    AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED,
    AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED,
    AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED,
    AMDKFD_IOC_SET_SCRATCH_BACKING_VA,
    AMDKFD_IOC_GET_TILE_CONFIG,
    AMDKFD_IOC_SET_TRAP_HANDLER,
    AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
    AMDKFD_IOC_ACQUIRE_VM,
    AMDKFD_IOC_ALLOC_MEMORY_OF_GPU,
    AMDKFD_IOC_FREE_MEMORY_OF_GPU,
    AMDKFD_IOC_MAP_MEMORY_TO_GPU,
    AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU,
    AMDKFD_IOC_SET_CU_MASK,
    AMDKFD_IOC_GET_QUEUE_WAVE_STATE,
    AMDKFD_IOC_GET_DMABUF_INFO,
    AMDKFD_IOC_IMPORT_DMABUF,
    AMDKFD_IOC_ALLOC_QUEUE_GWS,
    AMDKFD_IOC_SMI_EVENTS,
    AMDKFD_IOC_SVM,
    AMDKFD_IOC_SET_XNACK_MODE,
    AMDKFD_IOC_CRIU_OP,
    AMDKFD_IOC_AVAILABLE_MEMORY,
    AMDKFD_IOC_EXPORT_DMABUF,
    AMDKFD_IOC_RUNTIME_ENABLE,
    AMDKFD_IOC_DBG_TRAP,
    AMDKFD_IOC_CREATE_PROCESS,
    AMDKFD_IOC_PROFILER,
];

// The table is dense and ordered, covers exactly START..END, and every entry
// is a 'K' ioctl.  Checked when the crate (or the kernel module) compiles.
const _: () = {
    assert!(AMDKFD_COMMAND_START == 0x01);
    assert!(AMDKFD_COMMAND_END == 0x29);
    assert!(NUM_IOCTLS as u32 == AMDKFD_COMMAND_END - AMDKFD_COMMAND_START);
    let mut i = 0;
    while i < IOCTLS.len() {
        assert!(
            IOCTLS[i].nr == i as u32 + 1,
            "IOCTLS is not in command-number order"
        );
        assert!(IOCTLS[i].nr == AMDKFD_COMMAND_START + i as u32);
        assert!(ioc_type(IOCTLS[i].cmd) == AMDKFD_IOCTL_BASE);
        i += 1;
    }
};

/// The table entry for command number `nr`, if it is a kfd ioctl.
pub const fn ioctl_by_nr(nr: u32) -> Option<&'static IoctlDesc> {
    if nr >= AMDKFD_COMMAND_START && nr < AMDKFD_COMMAND_END {
        // `&IOCTLS` is a constant expression, promoted to a 'static.
        let table: &'static [IoctlDesc; NUM_IOCTLS] = &IOCTLS;
        Some(&table[(nr - AMDKFD_COMMAND_START) as usize])
    } else {
        None
    }
}

// ---------------------------------------------------------------------------
// Function-like macros of kfd_ioctl.h.
// ---------------------------------------------------------------------------

/// `KFD_EC_MASK(ecode)`: the bit of exception code `ecode` (1..=64) in a
/// 64-bit exception mask.  Returns 0 for codes outside that range (C's shift
/// would be undefined there).
pub const fn kfd_ec_mask(ecode: u32) -> u64 {
    if ecode >= 1 && ecode <= 64 {
        1u64 << (ecode - 1)
    } else {
        0
    }
}

/// `KFD_SMI_EVENT_MASK_FROM_INDEX(i)`: the bit of SMI event `i` (1..=64).
/// Returns 0 outside that range.
pub const fn kfd_smi_event_mask_from_index(i: u32) -> u64 {
    kfd_ec_mask(i)
}

/// `KFD_DBG_EC_IS_VALID(ecode)`.
pub const fn kfd_dbg_ec_is_valid(ecode: u32) -> bool {
    ecode > EC_NONE && ecode < EC_MAX
}

/// `KFD_DBG_EC_TYPE_IS_QUEUE(ecode)`.
#[allow(clippy::cast_lossless, clippy::unnecessary_cast)]
pub const fn kfd_dbg_ec_type_is_queue(ecode: u32) -> bool {
    kfd_dbg_ec_is_valid(ecode) && kfd_ec_mask(ecode) & (KFD_EC_MASK_QUEUE as u64) != 0
}

/// `KFD_DBG_EC_TYPE_IS_DEVICE(ecode)`.
#[allow(clippy::cast_lossless, clippy::unnecessary_cast)]
pub const fn kfd_dbg_ec_type_is_device(ecode: u32) -> bool {
    kfd_dbg_ec_is_valid(ecode) && kfd_ec_mask(ecode) & (KFD_EC_MASK_DEVICE as u64) != 0
}

/// `KFD_DBG_EC_TYPE_IS_PROCESS(ecode)`.
#[allow(clippy::cast_lossless, clippy::unnecessary_cast)]
pub const fn kfd_dbg_ec_type_is_process(ecode: u32) -> bool {
    kfd_dbg_ec_is_valid(ecode) && kfd_ec_mask(ecode) & (KFD_EC_MASK_PROCESS as u64) != 0
}

/// `KFD_DBG_EC_TYPE_IS_PACKET(ecode)`.
#[allow(clippy::cast_lossless, clippy::unnecessary_cast)]
pub const fn kfd_dbg_ec_type_is_packet(ecode: u32) -> bool {
    kfd_dbg_ec_is_valid(ecode) && kfd_ec_mask(ecode) & (KFD_EC_MASK_PACKET as u64) != 0
}
