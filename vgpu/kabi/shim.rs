// SPDX-License-Identifier: GPL-2.0

//! Declarations of the C shim's functions (`vgpu/vgpu_shim.h`).
//!
//! The Rust side of that header (`vgpu_rs_*`) is defined in [`super::device`].

use kernel::{
    bindings,
    ffi::{
        c_char,
        c_int,
        c_uint,
        c_ulong,
        c_void, //
    },
};

/// Bytes of [`DevInfo::name`], NUL included (`VGPU_SHIM_NAME_LEN`).
pub(super) const NAME_LEN: usize = 16;
/// Bytes of [`DevInfo::vbios_version`], NUL included (`VGPU_SHIM_VBIOS_LEN`).
pub(super) const VBIOS_LEN: usize = 32;

/// `struct vgpu_shim_dev_info`: what the per-GPU devices show.  The C side
/// asserts the same size and offsets.
#[repr(C)]
#[derive(Default)]
pub(super) struct DevInfo {
    /// Parent device name, NUL-terminated.
    pub(super) name: [u8; NAME_LEN],
    /// `vbios_version`, NUL-terminated.
    pub(super) vbios_version: [u8; VBIOS_LEN],
    /// PCI vendor ID.
    pub(super) vendor_id: u32,
    /// PCI device ID.
    pub(super) device_id: u32,
    /// `unique_id`.
    pub(super) unique_id: u64,
    /// `mem_info_vram_total`, bytes.
    pub(super) vram_total: u64,
    /// `pp_dpm_sclk`, MHz.
    pub(super) sclk_mhz: u32,
    /// `pp_dpm_mclk`, MHz.
    pub(super) mclk_mhz: u32,
    /// hwmon `temp1_input`, m°C.
    pub(super) temp_mdeg: u32,
    /// hwmon `in0_input`, mV.
    pub(super) vddgfx_mv: u32,
    /// hwmon `power1_average`, µW.
    pub(super) power_avg_uw: u32,
    /// hwmon `power1_cap`, µW.
    pub(super) power_cap_uw: u32,
}

const _: () = {
    assert!(core::mem::size_of::<DevInfo>() == 96);
    assert!(core::mem::offset_of!(DevInfo, unique_id) == 56);
    assert!(core::mem::offset_of!(DevInfo, power_cap_uw) == 92);
};

/// `struct vgpu_shim_dev`, opaque.
#[repr(C)]
pub(super) struct ShimDev {
    _opaque: [u8; 0],
}

// `struct page` contains zero-sized members, which `improper_ctypes` flags;
// only pointers to it cross the boundary.
#[allow(improper_ctypes)]
extern "C" {
    pub(super) fn vgpu_shim_dev_create(
        info: *const DevInfo,
        gpu: *mut c_void,
        out: *mut *mut ShimDev,
    ) -> c_int;
    pub(super) fn vgpu_shim_dev_destroy(dev: *mut ShimDev);
    pub(super) fn vgpu_shim_dev_render_minor(dev: *const ShimDev) -> u32;
    #[cfg(CONFIG_KUNIT = "y")]
    pub(super) fn vgpu_shim_dev_primary_minor(dev: *const ShimDev) -> u32;
    pub(super) fn vgpu_shim_dev_log(dev: *const ShimDev, msg: *const c_char);
    pub(super) fn vgpu_shim_file_vm(
        dev: *const ShimDev,
        file: *mut c_void,
        vm: *mut *mut c_void,
    ) -> c_int;
    pub(super) fn vgpu_shim_profile() -> *const c_char;
    pub(super) fn vgpu_shim_vmap(pages: *mut *mut bindings::page, count: c_uint) -> *mut c_void;
    pub(super) fn vgpu_shim_vunmap(addr: *mut c_void);
    pub(super) fn vgpu_shim_page_pfn(page: *mut bindings::page) -> c_ulong;
    pub(super) fn vgpu_shim_total_ram() -> u64;
    pub(super) fn vgpu_shim_pin_user(
        start: c_ulong,
        nr: c_ulong,
        pages: *mut *mut bindings::page,
    ) -> c_int;
    pub(super) fn vgpu_shim_unpin_user(pages: *mut *mut bindings::page, nr: c_ulong);
    pub(super) fn vgpu_shim_mmap_pages(
        vma: *mut c_void,
        pages: *mut *mut bindings::page,
        count: c_ulong,
    ) -> c_int;
}

/// The KUnit-only helpers (`CONFIG_KUNIT=y`).
#[cfg(CONFIG_KUNIT = "y")]
pub(super) mod test {
    use kernel::ffi::{
        c_char,
        c_int,
        c_ulong,
        c_void, //
    };

    extern "C" {
        pub(crate) fn vgpu_shim_test_open(path: *const c_char, out: *mut *mut c_void) -> c_int;
        pub(crate) fn vgpu_shim_test_close(file: *mut c_void);
        pub(crate) fn vgpu_shim_test_mmap(
            file: *mut c_void,
            offset: u64,
            len: c_ulong,
            rw: bool,
            shared: bool,
            addr: *mut c_ulong,
        ) -> c_int;
        pub(crate) fn vgpu_shim_test_munmap(addr: c_ulong, len: c_ulong) -> c_int;
        pub(crate) fn vgpu_shim_test_mmap_anon(len: c_ulong, rw: bool, addr: *mut c_ulong) -> c_int;
        pub(crate) fn vgpu_shim_test_pfn_copy(
            pfn: c_ulong,
            off: c_ulong,
            buf: *mut c_void,
            len: c_ulong,
            to_page: bool,
        ) -> c_int;
        pub(crate) fn vgpu_shim_test_write_user(
            addr: c_ulong,
            src: *const c_void,
            len: c_ulong,
        ) -> c_int;
        pub(crate) fn vgpu_shim_test_read_user(
            dst: *mut c_void,
            addr: c_ulong,
            len: c_ulong,
        ) -> c_int;
    }
}
