// SPDX-License-Identifier: GPL-2.0
//! Reading rkfd's debugfs queue files (`/sys/kernel/debug/kfd/`): the
//! register dumps of `hqds` (upstream `dqm_debugfs_hqds` /
//! `seq_reg_dump`) and a device's section of a per-device dump.

/// One `hqds` dump: its header line and its registers, `(byte offset,
/// value)`.
pub type HqdDump = (String, Vec<(u32, u32)>);

/// The lines of GPU `gpu_id`'s section of a per-device debugfs dump
/// (`hqds`, `rls`): from its "Node <n>, gpu_id <hex>:" line to the next
/// "Node " line, without either.
pub fn section(dump: &str, gpu_id: u32) -> String {
    let head = format!(", gpu_id {gpu_id:x}:");
    let mut out = String::new();
    let mut on = false;
    for line in dump.lines() {
        if line.starts_with("Node ") {
            on = line.ends_with(&head);
            continue;
        }
        if on {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Whether some CP HQD of GPU `gpu_id` in the `hqds` text holds an active
/// queue on the ring at `ring` (`None`: the text has no section of that
/// GPU or a row it cannot read).
pub fn ring_on_hqd(hqds: &str, gpu_id: u32, ring: u64) -> Option<bool> {
    Some(hqd_dumps(hqds, gpu_id)?.iter().any(|d| holds_ring(d, ring)))
}

/// The dumps of debugfs `hqds` under "Node <n>, gpu_id <gpu>:": each
/// header line with its registers, `(byte offset, value)`, read back from
/// `seq_reg_dump`'s rows (`    <offset>: <value> <value>...`, the values
/// of consecutive registers).
pub fn hqd_dumps(hqds: &str, gpu: u32) -> Option<Vec<HqdDump>> {
    let head = format!(", gpu_id {gpu:x}:");
    let mut lines = hqds.lines().skip_while(|l| !(l.starts_with("Node ") && l.ends_with(&head)));
    lines.next()?;
    let mut out: Vec<HqdDump> = Vec::new();
    for l in lines.take_while(|l| !l.starts_with("Node ")) {
        let row = l.strip_prefix("    ").and_then(|r| r.split_once(": ")).and_then(|(o, v)| Some((u32::from_str_radix(o, 16).ok()?, v)));
        match (row, out.last_mut()) {
            (Some((offset, values)), Some((_, regs))) => {
                for (i, v) in values.split_whitespace().enumerate() {
                    regs.push((offset + 4 * i as u32, u32::from_str_radix(v, 16).ok()?));
                }
            }
            (Some(_), None) => return None,
            (None, _) => out.push((l.to_string(), Vec::new())),
        }
    }
    Some(out)
}

/// Whether a CP HQD dump is of an active queue on the ring at `ring`: its
/// first register is CP_MQD_BASE_ADDR (of one of the generated register
/// sets), CP_HQD_ACTIVE (the third) is 1 and CP_HQD_PQ_BASE / _HI (the
/// ninth and tenth, in every generation's range) the ring >> 8.
pub fn holds_ring(dump: &HqdDump, ring: u64) -> bool {
    use amdgpu_hw::mqd::HqdRegs;
    let (header, regs) = dump;
    let first = regs.first().map(|r| r.0);
    let reg = |i: u32| regs.iter().find(|r| Some(r.0) == first.map(|f| f + 4 * i)).map(|r| r.1);
    header.contains("CP Pipe")
        && [HqdRegs::Gfx9, HqdRegs::Gfx10_3, HqdRegs::Gfx11].iter().any(|g| first == Some(g.compute_range().0 << 2))
        && regs.len() == 56
        && reg(2) == Some(1)
        && reg(8) == Some((ring >> 8) as u32)
        && reg(9) == Some((ring >> 40) as u32)
}

