// SPDX-License-Identifier: GPL-2.0
//! kfd-info: what a user sees of /dev/kfd: the interface version and the
//! sysfs device.  Used by `make demo`.

use kfd_tests::kfd::{errno_name, Kfd};
use kfd_uapi as uapi;

fn main() {
    let k = match Kfd::open() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("kfd-info: cannot open /dev/kfd: {e}");
            std::process::exit(1);
        }
    };
    let mut v = uapi::kfd_ioctl_get_version_args::default();
    match k.ioctl(uapi::AMDKFD_IOC_GET_VERSION, &mut v) {
        Ok(_) => println!("/dev/kfd: KFD interface {}.{}", v.major_version, v.minor_version),
        Err(e) => {
            eprintln!("kfd-info: GET_VERSION failed: {}", errno_name(e));
            std::process::exit(1);
        }
    }
    for f in ["dev", "uevent"] {
        let p = format!("/sys/devices/virtual/kfd/kfd/{f}");
        match std::fs::read_to_string(&p) {
            Ok(s) => println!("{p}: {}", s.trim().replace('\n', " ")),
            Err(e) => println!("{p}: {e}"),
        }
    }
}
