// SPDX-License-Identifier: GPL-2.0

//! The `AMDKFD_IOC_*` dispatcher and its handler table.
//!
//! C: `kfd_ioctl()` and `amdkfd_ioctls[]` in
//! `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c`.  ABI rules kept exactly:
//!
//! - lookup by `_IOC_NR` only, `-ENOTTY` outside `AMDKFD_COMMAND_START..END`;
//! - the table's own command decides the direction, the *caller's*
//!   `_IOC_SIZE` decides how much is copied in and out; the buffer is
//!   `max(ours, theirs)` bytes and zero-filled past the caller's part, so
//!   structs can grow in either direction;
//! - only the thread group that opened the file may use it (`-EBADF`);
//! - `IOC_OUT` data is copied back even when the handler failed (restartable
//!   ioctls such as MAP_MEMORY_TO_GPU report progress that way).

use kernel::{
    alloc::KVVec,
    prelude::*,
    uaccess::UserSlice, //
};

use crate::{
    process::Process,
    uapi,
};

/// An ioctl handler: the caller's process and the argument buffer.
///
/// The buffer holds at least the kernel's own argument size, 8-byte aligned.
type Handler = fn(&Process, &mut [u8]) -> Result;

/// One entry of the dispatch table.
struct IoctlDef {
    /// The kernel's own command (direction and size are taken from here).
    cmd: u32,
    /// The handler.
    handler: Handler,
}

/// Adapts a typed handler `fn(&Process, &mut Args) -> Result` to [`Handler`].
macro_rules! typed {
    ($handler:path) => {
        |process, buf| $handler(process, uapi::args_mut(buf)?)
    };
}

/// Builds an entry, checking at compile time that it sits at its number.
macro_rules! def {
    ($cmd:ident, $handler:expr) => {
        IoctlDef { cmd: uapi::$cmd, handler: $handler }
    };
}

/// Handler for ioctls whose subsystem has not been implemented yet.
fn not_supported(_process: &Process, _buf: &mut [u8]) -> Result {
    Err(EOPNOTSUPP)
}

/// Handler for the debugger ioctls upstream removed (it answers `-EPERM`).
fn deprecated(_process: &Process, _buf: &mut [u8]) -> Result {
    Err(EPERM)
}

/// IOCTL: GET_VERSION: the KFD interface version this driver implements.
fn get_version(_process: &Process, args: &mut uapi::kfd_ioctl_get_version_args) -> Result {
    args.major_version = uapi::KFD_IOCTL_MAJOR_VERSION;
    args.minor_version = uapi::KFD_IOCTL_MINOR_VERSION;
    Ok(())
}

/// The dispatch table, indexed by `_IOC_NR(cmd) - AMDKFD_COMMAND_START`.
const IOCTLS: [IoctlDef; uapi::IOCTLS.len()] = [
    def!(AMDKFD_IOC_GET_VERSION, typed!(get_version)),
    def!(AMDKFD_IOC_CREATE_QUEUE, not_supported),
    def!(AMDKFD_IOC_DESTROY_QUEUE, not_supported),
    def!(AMDKFD_IOC_SET_MEMORY_POLICY, not_supported),
    def!(AMDKFD_IOC_GET_CLOCK_COUNTERS, not_supported),
    def!(AMDKFD_IOC_GET_PROCESS_APERTURES, not_supported),
    def!(AMDKFD_IOC_UPDATE_QUEUE, not_supported),
    def!(AMDKFD_IOC_CREATE_EVENT, not_supported),
    def!(AMDKFD_IOC_DESTROY_EVENT, not_supported),
    def!(AMDKFD_IOC_SET_EVENT, not_supported),
    def!(AMDKFD_IOC_RESET_EVENT, not_supported),
    def!(AMDKFD_IOC_WAIT_EVENTS, not_supported),
    def!(AMDKFD_IOC_DBG_REGISTER_DEPRECATED, deprecated),
    def!(AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED, deprecated),
    def!(AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED, deprecated),
    def!(AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, deprecated),
    def!(AMDKFD_IOC_SET_SCRATCH_BACKING_VA, not_supported),
    def!(AMDKFD_IOC_GET_TILE_CONFIG, not_supported),
    def!(AMDKFD_IOC_SET_TRAP_HANDLER, not_supported),
    def!(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, not_supported),
    def!(AMDKFD_IOC_ACQUIRE_VM, not_supported),
    def!(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, not_supported),
    def!(AMDKFD_IOC_FREE_MEMORY_OF_GPU, not_supported),
    def!(AMDKFD_IOC_MAP_MEMORY_TO_GPU, not_supported),
    def!(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, not_supported),
    def!(AMDKFD_IOC_SET_CU_MASK, not_supported),
    def!(AMDKFD_IOC_GET_QUEUE_WAVE_STATE, not_supported),
    def!(AMDKFD_IOC_GET_DMABUF_INFO, not_supported),
    def!(AMDKFD_IOC_IMPORT_DMABUF, not_supported),
    def!(AMDKFD_IOC_ALLOC_QUEUE_GWS, not_supported),
    def!(AMDKFD_IOC_SMI_EVENTS, not_supported),
    def!(AMDKFD_IOC_SVM, not_supported),
    def!(AMDKFD_IOC_SET_XNACK_MODE, not_supported),
    def!(AMDKFD_IOC_CRIU_OP, not_supported),
    def!(AMDKFD_IOC_AVAILABLE_MEMORY, not_supported),
    def!(AMDKFD_IOC_EXPORT_DMABUF, not_supported),
    def!(AMDKFD_IOC_RUNTIME_ENABLE, not_supported),
    def!(AMDKFD_IOC_DBG_TRAP, not_supported),
    def!(AMDKFD_IOC_CREATE_PROCESS, not_supported),
    def!(AMDKFD_IOC_PROFILER, not_supported),
];

// Every entry sits at its own number: entry i handles command nr START + i.
const _: () = {
    let mut i = 0;
    while i < IOCTLS.len() {
        assert!(uapi::ioc_nr(IOCTLS[i].cmd) == uapi::AMDKFD_COMMAND_START + i as u32);
        i += 1;
    }
    assert!(uapi::AMDKFD_COMMAND_START + IOCTLS.len() as u32 == uapi::AMDKFD_COMMAND_END);
};

/// Arguments up to this size live on the stack, as upstream's 128-byte buffer.
const STACK_ARGS_WORDS: usize = 16;

/// Looks up the table entry for a caller's command.
fn lookup(cmd: u32) -> Result<&'static IoctlDef> {
    let nr = uapi::ioc_nr(cmd);
    if !(uapi::AMDKFD_COMMAND_START..uapi::AMDKFD_COMMAND_END).contains(&nr) {
        return Err(ENOTTY);
    }
    Ok(&IOCTLS[(nr - uapi::AMDKFD_COMMAND_START) as usize])
}

/// Sizes of one call: what the caller passes and what the buffer must hold.
#[derive(Debug, PartialEq)]
struct ArgSizes {
    /// Bytes copied from and to the caller (the caller's `_IOC_SIZE`).
    user: usize,
    /// Bytes of the kernel buffer: `max(user, kernel size)`.
    alloc: usize,
}

/// Computes the buffer sizes of a call (`usize`/`asize` in upstream).
fn arg_sizes(user_cmd: u32, kernel_cmd: u32) -> ArgSizes {
    let user = uapi::ioc_size(user_cmd) as usize;
    let alloc = user.max(uapi::ioc_size(kernel_cmd) as usize);
    ArgSizes { user, alloc }
}

/// Runs one ioctl for `process`.
pub(crate) fn dispatch(process: &Process, cmd: u32, arg: usize) -> Result<isize> {
    let def = lookup(cmd)?;
    if !process.is_caller_opener() {
        pr_debug!("Using KFD FD in wrong process\n");
        return Err(EBADF);
    }

    let dir = uapi::ioc_dir(def.cmd);
    let copy_in = dir & uapi::IOC_WRITE != 0;
    let copy_out = dir & uapi::IOC_READ != 0;
    if !copy_in && !copy_out {
        (def.handler)(process, &mut [])?;
        return Ok(0);
    }

    let sizes = arg_sizes(cmd, def.cmd);
    let words = sizes.alloc.div_ceil(8);
    let mut stack = [0u64; STACK_ARGS_WORDS];
    let mut heap;
    let buf: &mut [u64] = if words <= STACK_ARGS_WORDS {
        &mut stack[..words]
    } else {
        heap = KVVec::from_elem(0u64, words, GFP_KERNEL)?;
        &mut heap[..]
    };
    let bytes = &mut buf.as_mut_bytes()[..sizes.alloc];

    let (mut reader, mut writer) = UserSlice::new(UserPtr::from_addr(arg), sizes.user).reader_writer();
    if copy_in {
        reader.read_slice(&mut bytes[..sizes.user])?;
    }

    let ret = (def.handler)(process, bytes);

    if copy_out {
        writer.write_slice(&bytes[..sizes.user])?;
    }
    ret.map(|()| 0)
}

#[kunit_tests(rkfd_ioctl)]
mod tests {
    use super::*;

    #[test]
    fn lookup_by_number_only() -> Result {
        // The caller's direction, size and type byte do not matter for lookup.
        let cmd = uapi::AMDKFD_IOC_GET_VERSION;
        let nr = uapi::ioc_nr(cmd);
        assert_eq!(lookup(nr)?.cmd, cmd);
        assert_eq!(lookup(cmd ^ 0xff00)?.cmd, cmd);
        Ok(())
    }

    #[test]
    fn out_of_range_is_enotty() {
        assert_eq!(lookup(0).err(), Some(ENOTTY));
        assert_eq!(lookup(uapi::AMDKFD_COMMAND_END).err(), Some(ENOTTY));
        assert_eq!(lookup(0xff).err(), Some(ENOTTY));
    }

    #[test]
    fn buffer_is_the_larger_size() {
        let k = uapi::AMDKFD_IOC_WAIT_EVENTS;
        // A shorter caller struct gets a full-size, zero-padded buffer.
        let short = uapi::ioc(uapi::IOC_READ | uapi::IOC_WRITE, 0x4b, 0x0c, 8);
        assert_eq!(arg_sizes(short, k), ArgSizes { user: 8, alloc: uapi::ioc_size(k) as usize });
        // A longer caller struct is copied whole.
        let long = uapi::ioc(uapi::IOC_READ | uapi::IOC_WRITE, 0x4b, 0x0c, 200);
        assert_eq!(arg_sizes(long, k), ArgSizes { user: 200, alloc: 200 });
    }

    #[test]
    fn table_matches_uapi_names() {
        for (def, desc) in IOCTLS.iter().zip(uapi::IOCTLS.iter()) {
            assert_eq!(def.cmd, desc.cmd);
        }
    }

    #[test]
    fn get_version_reports_interface() -> Result {
        let mut buf = [0u64; 1];
        let bytes = buf.as_mut_bytes();
        let p = Process::new_for_current()?;
        (lookup(uapi::AMDKFD_IOC_GET_VERSION)?.handler)(&p, bytes)?;
        let args: &mut uapi::kfd_ioctl_get_version_args = uapi::args_mut(bytes)?;
        assert_eq!(args.major_version, 1);
        assert_eq!(args.minor_version, uapi::KFD_IOCTL_MINOR_VERSION);
        Ok(())
    }
}
