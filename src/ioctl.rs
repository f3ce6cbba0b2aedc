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
//!   ioctls such as MAP_MEMORY_TO_GPU report progress that way);
//! - an entry may have a `validate` step that sees the caller's size
//!   (upstream `AMDKFD_IOCTL_DEF_V`, used by `AMDKFD_IOC_SVM`, whose size
//!   field grows by 8 bytes per attribute); it runs after the copy-in, and
//!   its failure is returned without copying anything back.

use kernel::{
    alloc::KVVec,
    prelude::*,
    uaccess::UserSlice, //
};

use crate::{
    device,
    event::SignalPage,
    kabi::{self, kgd::DrmFile},
    memory::{self, Direction},
    process::{Apertures, Process},
    queue,
    uapi,
};

/// An ioctl handler: the caller's process and the argument buffer.
///
/// The buffer holds at least the kernel's own argument size, 8-byte aligned.
type Handler = fn(&Process, &mut [u8]) -> Result;

/// A check of the copied-in buffer against the caller's `_IOC_SIZE`.
type Validate = fn(&[u8], usize) -> Result;

/// One entry of the dispatch table.
struct IoctlDef {
    /// The kernel's own command (direction and size are taken from here).
    cmd: u32,
    /// The handler.
    handler: Handler,
    /// Optional size check (upstream `ioctl->validate`).
    validate: Option<Validate>,
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
        IoctlDef { cmd: uapi::$cmd, handler: $handler, validate: None }
    };
    ($cmd:ident, $handler:expr, $validate:expr) => {
        IoctlDef { cmd: uapi::$cmd, handler: $handler, validate: Some($validate) }
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
    fill_version(args);
    Ok(())
}

fn fill_version(args: &mut uapi::kfd_ioctl_get_version_args) {
    args.major_version = uapi::KFD_IOCTL_MAJOR_VERSION;
    args.minor_version = uapi::KFD_IOCTL_MINOR_VERSION;
}

/// IOCTL: GET_CLOCK_COUNTERS: GPU counter (0 for a gpu_id without GPU, as
/// the CPU node's 0), raw monotonic and boot time in ns at 1 GHz.
fn get_clock_counters(process: &Process, args: &mut uapi::kfd_ioctl_get_clock_counters_args) -> Result {
    let dev = process.inner.lock().pdd(args.gpu_id).ok().map(|p| p.dev.clone());
    args.gpu_clock_counter = dev.map_or(0, |d| d.kgd.gpu_clock_counter());
    args.cpu_clock_counter = kabi::time::raw_ns();
    args.system_clock_counter = kabi::time::boottime_ns();
    args.system_clock_freq = 1_000_000_000;
    Ok(())
}

/// Fills one aperture record for a pdd.
fn aperture_of(gpu_id: u32) -> uapi::kfd_process_device_apertures {
    let a = &Apertures::V9;
    uapi::kfd_process_device_apertures {
        lds_base: a.lds_base,
        lds_limit: a.lds_limit,
        scratch_base: a.scratch_base,
        scratch_limit: a.scratch_limit,
        gpuvm_base: a.gpuvm_base,
        gpuvm_limit: a.gpuvm_limit,
        gpu_id,
        pad: 0,
    }
}

/// IOCTL: GET_PROCESS_APERTURES (deprecated): up to 7 records inline.
fn get_process_apertures(process: &Process, args: &mut uapi::kfd_ioctl_get_process_apertures_args) -> Result {
    let inner = process.inner.lock();
    let mut n = 0;
    for (slot, pdd) in args.process_apertures.iter_mut().zip(inner.pdds.iter()) {
        *slot = aperture_of(pdd.dev.gpu_id());
        n += 1;
    }
    args.num_of_nodes = n;
    Ok(())
}

/// IOCTL: GET_PROCESS_APERTURES_NEW: count with `num_of_nodes == 0`, else
/// fill the user array with at most `num_of_nodes` records.
fn get_process_apertures_new(
    process: &Process,
    args: &mut uapi::kfd_ioctl_get_process_apertures_new_args,
) -> Result {
    let records = {
        let inner = process.inner.lock();
        if args.num_of_nodes == 0 {
            args.num_of_nodes = inner.pdds.len() as u32;
            return Ok(());
        }
        if args.num_of_nodes as usize > device::all()?.len() {
            return Err(EINVAL);
        }
        let mut records = KVec::new();
        for pdd in inner.pdds.iter().take(args.num_of_nodes as usize) {
            records.push(aperture_of(pdd.dev.gpu_id()), GFP_KERNEL)?;
        }
        records
    };
    args.num_of_nodes = records.len() as u32;
    let mut w = UserSlice::new(
        UserPtr::from_addr(args.kfd_process_device_apertures_ptr as usize),
        records.len() * size_of::<uapi::kfd_process_device_apertures>(),
    )
    .writer();
    for r in records.iter() {
        w.write_slice(uapi::as_bytes(r))?;
    }
    Ok(())
}

/// IOCTL: ACQUIRE_VM: binds the process to the GPU VM of a render-node
/// file of that GPU.  The same file again is a no-op, another one `-EBUSY`.
fn acquire_vm(process: &Process, args: &mut uapi::kfd_ioctl_acquire_vm_args) -> Result {
    process.acquire_vm(args.gpu_id, DrmFile::get(args.drm_fd)?)
}

/// IOCTL: SMI_EVENTS: opens an SMI event file for a GPU of the process.
fn smi_events(process: &Process, args: &mut uapi::kfd_ioctl_smi_events_args) -> Result {
    let dev = process.inner.lock().pdd(args.gpuid)?.dev.clone();
    args.anon_fd = crate::smi::open(&dev)?;
    Ok(())
}

/// IOCTL: SET_MEMORY_POLICY: cache policies (COHERENT or NONCOHERENT).
fn set_memory_policy(process: &Process, args: &mut uapi::kfd_ioctl_set_memory_policy_args) -> Result {
    let valid = |p: u32| p == uapi::KFD_IOC_CACHE_POLICY_COHERENT || p == uapi::KFD_IOC_CACHE_POLICY_NONCOHERENT;
    if !valid(args.default_policy) || !valid(args.alternate_policy) {
        return Err(EINVAL);
    }
    let mut inner = process.inner.lock();
    let pdd = inner.pdd(args.gpu_id)?;
    pdd.bound_vm().map_err(|_| ESRCH)?;
    pdd.memory_policy = (
        args.default_policy,
        args.alternate_policy,
        args.alternate_aperture_base,
        args.alternate_aperture_size,
    );
    // C: the dqm's set_cache_memory_policy (the asic op; without a
    // scheduler upstream also programs the VMID, which the GPU driver does
    // here when it maps the VM).
    let gfx = pdd.dev.gfx;
    let a = &Apertures::V9;
    pdd.sh_mem.set_cache_memory_policy(gfx, gfx.noretry_default(), args.misc_process_flag, a.lds_base, a.scratch_base);
    Ok(())
}

/// IOCTL: SET_SCRATCH_BACKING_VA: remembered for the queues of the device.
fn set_scratch_backing_va(process: &Process, args: &mut uapi::kfd_ioctl_set_scratch_backing_va_args) -> Result {
    let mut inner = process.inner.lock();
    let pdd = inner.pdd(args.gpu_id)?;
    pdd.bound_vm()?;
    pdd.scratch_backing_va = args.va_addr;
    Ok(())
}

/// IOCTL: SET_TRAP_HANDLER: remembered for the queues of the device.
fn set_trap_handler(process: &Process, args: &mut uapi::kfd_ioctl_set_trap_handler_args) -> Result {
    let mut inner = process.inner.lock();
    let pdd = inner.pdd(args.gpu_id)?;
    pdd.bound_vm().map_err(|_| ESRCH)?;
    pdd.trap_handler = (args.tba_addr, args.tma_addr);
    Ok(())
}

/// IOCTL: SET_XNACK_MODE: `< 0` queries; `>= 0` sets, allowed only if every
/// GPU of the process supports per-process XNACK (`-EPERM` otherwise).
///
/// Like upstream (`kfd_ioctl_set_xnack_mode`) it refuses any setting while
/// the process has user queues (`-EBUSY`, checked first).  Then, as upstream,
/// the SVM ranges' system-memory reservation moves
/// (`svm_range_switch_xnack_reserve_mem`: given back with XNACK on, taken
/// with it off; `-ENOMEM` over the limit, the mode unchanged), under the
/// SVM lock together with the mode.  New ranges read the mode when they
/// are created (their default access is every GPU with XNACK on, none with
/// it off).
fn set_xnack_mode(process: &Process, args: &mut uapi::kfd_ioctl_set_xnack_mode_args) -> Result {
    let mut inner = process.inner.lock();
    if args.xnack_enabled < 0 {
        args.xnack_enabled = i32::from(inner.xnack_enabled);
        return Ok(());
    }
    if queue::has_queues_locked(&inner) {
        return Err(EBUSY);
    }
    let enable = args.xnack_enabled != 0;
    if enable == inner.xnack_enabled {
        return Ok(());
    }
    if enable && !inner.pdds.iter().all(|p| p.dev.supports_xnack_per_process()) {
        return Err(EPERM);
    }
    // The SVM list lock inside `Process::inner` (the documented order).
    process.svms.switch_xnack(enable)?;
    inner.xnack_enabled = enable;
    Ok(())
}

/// IOCTL: AVAILABLE_MEMORY: unallocated VRAM, 2 MiB aligned down.
fn available_memory(process: &Process, args: &mut uapi::kfd_ioctl_get_available_memory_args) -> Result {
    let dev = process.inner.lock().pdd(args.gpu_id)?.dev.clone();
    args.available = dev.kgd.available_vram() & !((1u64 << 21) - 1);
    Ok(())
}

/// IOCTL: GET_TILE_CONFIG, as upstream with amdgpu's
/// `amdgpu_amdkfd_get_tile_config`: GB_ADDR_CONFIG from the GPU, banks and
/// ranks 0 (not set from GFX9 on), and the 32 tile-mode / 16 macro-tile
/// words amdgpu has, all zero on GFX9+ (no legacy tiling): the counts are
/// clamped to those sizes and that many zero words copied to the user's
/// arrays (`-EFAULT` with the count set to 0 if the copy fails).
fn get_tile_config(process: &Process, args: &mut uapi::kfd_ioctl_get_tile_config_args) -> Result {
    const TILE_MODES: u32 = 32;
    const MACRO_TILE_MODES: u32 = 16;
    let dev = process.inner.lock().pdd(args.gpu_id)?.dev.clone();
    args.gb_addr_config = dev.info.gb_addr_config;
    args.num_banks = 0;
    args.num_ranks = 0;
    let zeros = [0u8; TILE_MODES as usize * 4];
    args.num_tile_configs = args.num_tile_configs.min(TILE_MODES);
    let n = args.num_tile_configs as usize * 4;
    let mut w = UserSlice::new(UserPtr::from_addr(args.tile_config_ptr as usize), n).writer();
    if w.write_slice(&zeros[..n]).is_err() {
        args.num_tile_configs = 0;
        return Err(EFAULT);
    }
    args.num_macro_tile_configs = args.num_macro_tile_configs.min(MACRO_TILE_MODES);
    let n = args.num_macro_tile_configs as usize * 4;
    let mut w = UserSlice::new(UserPtr::from_addr(args.macro_tile_config_ptr as usize), n).writer();
    if w.write_slice(&zeros[..n]).is_err() {
        args.num_macro_tile_configs = 0;
        return Err(EFAULT);
    }
    Ok(())
}

/// IOCTL: ALLOC_MEMORY_OF_GPU.  A VA or user pointer inside an SVM range
/// is `-EADDRINUSE` (checked under the SVM list lock alone, as upstream checks
/// under `svms->lock` before taking `p->mutex`).
fn alloc_memory_of_gpu(process: &Process, args: &mut uapi::kfd_ioctl_alloc_memory_of_gpu_args) -> Result {
    crate::svm::attr::check_alloc(process, args)?;
    memory::alloc(&mut process.inner.lock(), args)
}

/// IOCTL: GET_DMABUF_INFO.  Asks the process's first GPU (those of its
/// pdds are the ones its device cgroup allows), without `Process::inner`
/// held across the GPU driver's call, as upstream takes no `p->mutex`.
fn get_dmabuf_info(process: &Process, args: &mut uapi::kfd_ioctl_get_dmabuf_info_args) -> Result {
    let dev = process.inner.lock().pdds.first().map(|p| p.dev.clone()).ok_or(EINVAL)?;
    memory::get_dmabuf_info(&dev, args)
}

/// IOCTL: IMPORT_DMABUF.
fn import_dmabuf(process: &Process, args: &mut uapi::kfd_ioctl_import_dmabuf_args) -> Result {
    memory::import_dmabuf(&mut process.inner.lock(), args)
}

/// IOCTL: FREE_MEMORY_OF_GPU.
fn free_memory_of_gpu(process: &Process, args: &mut uapi::kfd_ioctl_free_memory_of_gpu_args) -> Result {
    let mut inner = process.inner.lock();
    let signal_page = process.events.signal_page_handle();
    memory::free(&mut inner, args.handle, signal_page)
}

/// Most device ids a MAP/UNMAP call may name (bigger arrays cannot be
/// allocated upstream either: `-ENOMEM`).
const MAX_MAP_DEVICES: u32 = 1 << 16;

/// Reads the `n_devices` gpu_ids of a MAP/UNMAP call.
fn read_device_ids(ptr: u64, n_devices: u32, n_success: u32) -> Result<KVVec<u32>> {
    if n_devices == 0 || n_success > n_devices {
        return Err(EINVAL);
    }
    if n_devices > MAX_MAP_DEVICES {
        return Err(ENOMEM);
    }
    let n = n_devices as usize;
    let mut ids = KVVec::from_elem(0u32, n, GFP_KERNEL)?;
    let mut r = UserSlice::new(UserPtr::from_addr(ptr as usize), n * size_of::<u32>()).reader();
    r.read_slice(ids.as_mut_bytes())?;
    Ok(ids)
}

/// IOCTL: MAP_MEMORY_TO_GPU.
fn map_memory_to_gpu(process: &Process, args: &mut uapi::kfd_ioctl_map_memory_to_gpu_args) -> Result {
    let ids = read_device_ids(args.device_ids_array_ptr, args.n_devices, args.n_success)?;
    memory::map_or_unmap(&mut process.inner.lock(), args.handle, &ids, &mut args.n_success, Direction::Map)
}

/// IOCTL: UNMAP_MEMORY_FROM_GPU.
fn unmap_memory_from_gpu(process: &Process, args: &mut uapi::kfd_ioctl_unmap_memory_from_gpu_args) -> Result {
    let ids = read_device_ids(args.device_ids_array_ptr, args.n_devices, args.n_success)?;
    memory::map_or_unmap(&mut process.inner.lock(), args.handle, &ids, &mut args.n_success, Direction::Unmap)
}

/// IOCTL: CREATE_EVENT: creates an event; the first call with a non-zero
/// `event_page_offset` also registers the signal page (the handle of a GTT
/// memory object, C: `kfd_kmap_event_page`).
fn create_event(process: &Process, args: &mut uapi::kfd_ioctl_create_event_args) -> Result {
    // Held across the registration (upstream `p->mutex`): FREE_MEMORY_OF_GPU
    // checks the signal page handle under it, and teardown frees memory
    // objects under it only after `events.teardown()`.
    let mut inner = process.inner.lock();
    process.events.create(args, |handle| {
        let mapping = memory::map_to_kernel(&mut inner, handle)?;
        // SAFETY: A GTT object's kernel mapping stays valid until the object
        // is freed.  This object becomes the signal page: FREE_MEMORY_OF_GPU
        // refuses it (`-EPERM`) once registered, and `Process::teardown`
        // calls `events.teardown()`, which drops the page, before
        // `memory::release_all` frees it; if the registration fails the page
        // is dropped at once, and the object may be freed as any other.
        // The kernel accesses the mapping only through the page.
        unsafe { SignalPage::new(mapping.ptr, mapping.size, None) }
    })
}

/// IOCTL: DESTROY_EVENT.
fn destroy_event(process: &Process, args: &mut uapi::kfd_ioctl_destroy_event_args) -> Result {
    process.events.destroy(args.event_id)
}

/// IOCTL: SET_EVENT: sets a signal event, waking every waiter.
fn set_event(process: &Process, args: &mut uapi::kfd_ioctl_set_event_args) -> Result {
    process.events.set(args.event_id)
}

/// IOCTL: RESET_EVENT.
fn reset_event(process: &Process, args: &mut uapi::kfd_ioctl_reset_event_args) -> Result {
    process.events.reset(args.event_id)
}

/// IOCTL: WAIT_EVENTS: blocks until events are signalled (or the timeout,
/// a signal, or a destroyed event).
fn wait_events(process: &Process, args: &mut uapi::kfd_ioctl_wait_events_args) -> Result {
    process.events.wait(args)
}

/// The dispatch table, indexed by `_IOC_NR(cmd) - AMDKFD_COMMAND_START`.
const IOCTLS: [IoctlDef; uapi::IOCTLS.len()] = [
    def!(AMDKFD_IOC_GET_VERSION, typed!(get_version)),
    def!(AMDKFD_IOC_CREATE_QUEUE, typed!(queue::create)),
    def!(AMDKFD_IOC_DESTROY_QUEUE, typed!(queue::destroy)),
    def!(AMDKFD_IOC_SET_MEMORY_POLICY, typed!(set_memory_policy)),
    def!(AMDKFD_IOC_GET_CLOCK_COUNTERS, typed!(get_clock_counters)),
    def!(AMDKFD_IOC_GET_PROCESS_APERTURES, typed!(get_process_apertures)),
    def!(AMDKFD_IOC_UPDATE_QUEUE, typed!(queue::update)),
    def!(AMDKFD_IOC_CREATE_EVENT, typed!(create_event)),
    def!(AMDKFD_IOC_DESTROY_EVENT, typed!(destroy_event)),
    def!(AMDKFD_IOC_SET_EVENT, typed!(set_event)),
    def!(AMDKFD_IOC_RESET_EVENT, typed!(reset_event)),
    def!(AMDKFD_IOC_WAIT_EVENTS, typed!(wait_events)),
    def!(AMDKFD_IOC_DBG_REGISTER_DEPRECATED, deprecated),
    def!(AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED, deprecated),
    def!(AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED, deprecated),
    def!(AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, deprecated),
    def!(AMDKFD_IOC_SET_SCRATCH_BACKING_VA, typed!(set_scratch_backing_va)),
    def!(AMDKFD_IOC_GET_TILE_CONFIG, typed!(get_tile_config)),
    def!(AMDKFD_IOC_SET_TRAP_HANDLER, typed!(set_trap_handler)),
    def!(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, typed!(get_process_apertures_new)),
    def!(AMDKFD_IOC_ACQUIRE_VM, typed!(acquire_vm)),
    def!(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, typed!(alloc_memory_of_gpu)),
    def!(AMDKFD_IOC_FREE_MEMORY_OF_GPU, typed!(free_memory_of_gpu)),
    def!(AMDKFD_IOC_MAP_MEMORY_TO_GPU, typed!(map_memory_to_gpu)),
    def!(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, typed!(unmap_memory_from_gpu)),
    def!(AMDKFD_IOC_SET_CU_MASK, typed!(queue::set_cu_mask)),
    def!(AMDKFD_IOC_GET_QUEUE_WAVE_STATE, typed!(queue::get_wave_state)),
    def!(AMDKFD_IOC_GET_DMABUF_INFO, typed!(get_dmabuf_info)),
    def!(AMDKFD_IOC_IMPORT_DMABUF, typed!(import_dmabuf)),
    def!(AMDKFD_IOC_ALLOC_QUEUE_GWS, typed!(queue::alloc_gws)),
    def!(AMDKFD_IOC_SMI_EVENTS, typed!(smi_events)),
    def!(AMDKFD_IOC_SVM, crate::svm::attr::ioctl, crate::svm::attr::validate_ioctl),
    def!(AMDKFD_IOC_SET_XNACK_MODE, typed!(set_xnack_mode)),
    def!(AMDKFD_IOC_CRIU_OP, not_supported),
    def!(AMDKFD_IOC_AVAILABLE_MEMORY, typed!(available_memory)),
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

    if let Some(validate) = def.validate {
        validate(bytes, sizes.user)?;
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
        let args: &mut uapi::kfd_ioctl_get_version_args = uapi::args_mut(bytes)?;
        fill_version(args);
        assert_eq!(args.major_version, 1);
        assert_eq!(args.minor_version, uapi::KFD_IOCTL_MINOR_VERSION);
        Ok(())
    }
}
