// SPDX-License-Identifier: GPL-2.0
//! An SMI events client (`AMDKFD_IOC_SMI_EVENTS`): one GPU's event file
//! with an event mask written to it, read as the text lines upstream's
//! `kfd_smi_event_add` queues (`<id hex> <fields>\n`).

use crate::harness::ensure_eq;
use crate::kfd::{errno_name, Kfd};
use crate::ops::close;
use kfd_uapi as uapi;

/// The mask bit of SMI event `event` (`KFD_SMI_EVENT_MASK_FROM_INDEX`).
pub fn bit(event: u32) -> u64 {
    1u64 << (event - 1)
}

/// An SMI event file of one GPU; closed on drop.
pub struct SmiFile(i32);

impl SmiFile {
    /// Opens `gpu_id`'s event file and writes `mask` (the events wanted).
    pub fn open(k: &Kfd, gpu_id: u32, mask: u64) -> Result<SmiFile, String> {
        let mut a = uapi::kfd_ioctl_smi_events_args { gpuid: gpu_id, anon_fd: 0 };
        k.ioctl(uapi::AMDKFD_IOC_SMI_EVENTS, &mut a).map_err(|e| format!("SMI_EVENTS: {}", errno_name(e)))?;
        let smi = SmiFile(a.anon_fd as i32);
        // SAFETY: 8 bytes of our own, written to our fd.
        let n = unsafe { libc::write(smi.0, (&mask as *const u64).cast(), 8) };
        ensure_eq(n, 8, "SMI mask write")?;
        Ok(smi)
    }

    /// Everything queued now, waiting up to `ms` for the first byte.
    pub fn drain(&self, ms: i32) -> String {
        let mut out = Vec::new();
        let mut pfd = libc::pollfd { fd: self.0, events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd of ours.
        unsafe { libc::poll(&mut pfd, 1, ms) };
        loop {
            let mut buf = [0u8; 4096];
            // SAFETY: our buffer, our fd.
            let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The event lines queued within `ms`: (id, the rest of the line).
    pub fn lines(&self, ms: i32) -> Vec<(u32, String)> {
        split_lines(&self.drain(ms))
    }
}

/// `text`'s event lines: (id, the rest of the line); others are skipped.
pub fn split_lines(text: &str) -> Vec<(u32, String)> {
    text.lines()
        .filter_map(|l| {
            let (id, rest) = l.split_once(' ')?;
            Some((u32::from_str_radix(id, 16).ok()?, rest.to_string()))
        })
        .collect()
}

impl Drop for SmiFile {
    fn drop(&mut self) {
        close(self.0);
    }
}
