// SPDX-License-Identifier: GPL-2.0 OR MIT
//! Host test helpers: a sparse GPU address space and a whole-dispatch runner.
#![allow(dead_code, reason = "each test binary uses a different part")]

use amdgpu_isa::code_object::{Elf, KernelDescriptor};
use amdgpu_isa::decode::Generation;
use amdgpu_isa::dispatch::{resume_workgroup, Dispatch, WorkgroupError, WorkgroupState};

/// Instructions per [`resume_workgroup`] call in [`run_kernel`]: small and
/// odd, so that slices end anywhere, barriers included.
const RESUME_BUDGET: u64 = 37;
use amdgpu_isa::memory::{Apertures, GlobalMemory, MemoryFault};
use amdgpu_isa::wave::Wave;

/// GPU memory as a few disjoint regions; anything else faults.
#[derive(Default)]
pub struct SparseMemory {
    regions: Vec<(u64, Vec<u8>)>,
    next: u64,
    /// Shader clock: advances by 4 per read; real time by 1.
    ticks: u64,
}

impl SparseMemory {
    pub fn new() -> Self {
        SparseMemory { regions: Vec::new(), next: 0x1_0000_0000, ticks: 0 }
    }
    pub fn map(&mut self, base: u64, bytes: Vec<u8>) {
        self.regions.push((base, bytes));
    }
    /// Places `bytes` at a fresh 4 KiB-aligned address (a guard gap between).
    pub fn alloc(&mut self, bytes: Vec<u8>) -> u64 {
        let base = self.next;
        self.next += (bytes.len() as u64 + 0x1fff) & !0xfff;
        self.map(base, bytes);
        base
    }
    /// A fresh 4 KiB-aligned address for `len` bytes, nothing mapped there.
    pub fn reserve(&mut self, len: usize) -> u64 {
        let base = self.next;
        self.next += (len as u64 + 0x1fff) & !0xfff;
        base
    }
    pub fn alloc_u32(&mut self, values: &[u32]) -> u64 {
        self.alloc(values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }
    fn find(&mut self, address: u64, len: usize) -> Option<&mut [u8]> {
        for (base, bytes) in self.regions.iter_mut() {
            // No wrap: a lane's address may be anything up to u64::MAX.
            if address >= *base && address.checked_add(len as u64).is_some_and(|end| end <= *base + bytes.len() as u64) {
                let o = (address - *base) as usize;
                return Some(&mut bytes[o..o + len]);
            }
        }
        None
    }
    pub fn read_u32s(&mut self, address: u64, count: usize) -> Vec<u32> {
        let b = self.find(address, count * 4).expect("mapped").to_vec();
        b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }
}

impl GlobalMemory for SparseMemory {
    fn read(&mut self, address: u64, bytes: &mut [u8]) -> Result<(), MemoryFault> {
        let src = self.find(address, bytes.len()).ok_or(MemoryFault { address, write: false })?;
        bytes.copy_from_slice(src);
        Ok(())
    }
    fn write(&mut self, address: u64, bytes: &[u8]) -> Result<(), MemoryFault> {
        let dst = self.find(address, bytes.len()).ok_or(MemoryFault { address, write: true })?;
        dst.copy_from_slice(bytes);
        Ok(())
    }
    fn probe(&mut self, address: u64, len: usize, write: bool) -> Result<(), MemoryFault> {
        self.find(address, len).map(|_| ()).ok_or(MemoryFault { address, write })
    }
    fn shader_clock(&mut self) -> u64 {
        self.ticks += 4;
        self.ticks
    }
    fn real_time(&mut self) -> u64 {
        self.ticks += 1;
        self.ticks / 4
    }
}

pub const APERTURES: Apertures = Apertures { shared_base_hi: 0x1_0000, private_base_hi: 0x2_0000 };
/// Where code objects are loaded (their vaddrs are added).
pub const CODE_BASE: u64 = 0x7f00_0000_0000;

/// A code object loaded into a SparseMemory.
pub struct LoadedCode<'a> {
    pub elf: Elf<'a>,
}

pub fn load_code_object(mem: &mut SparseMemory, bytes: &[u8]) {
    let elf = Elf::parse(bytes).expect("an AMDGPU ELF");
    let mut i = 0;
    while let Some(seg) = elf.load_segment(i) {
        let mut image = elf.segment_bytes(&seg).expect("segment in file").to_vec();
        image.resize(seg.mem_size.max(seg.file_size) as usize, 0);
        mem.map(CODE_BASE + seg.vaddr, image);
        i += 1;
    }
}

/// Each check `fn(Target)` named as a test on each target (a test file
/// using it declares `#[macro_use] mod common;`).
#[allow(unused_macros)] // Not every test binary uses it.
macro_rules! on_each_target {
    ($($check:ident),* $(,)?) => {
        mod gfx90a {
            $(#[test]
            fn $check() {
                super::$check(super::Target::Gfx90a)
            })*
        }
        mod gfx1030 {
            $(#[test]
            fn $check() {
                super::$check(super::Target::Gfx1030)
            })*
        }
    };
}

/// A GPU target the host tests compile for and run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Gfx90a,
    Gfx1030,
}

impl Target {
    pub fn arch(self) -> &'static str {
        match self {
            Target::Gfx90a => "gfx90a",
            Target::Gfx1030 => "gfx1030",
        }
    }
    pub fn generation(self) -> Generation {
        match self {
            Target::Gfx90a => Generation::Gfx9,
            Target::Gfx1030 => Generation::Gfx10,
        }
    }
    /// The checked-in fixture name of a code object built for this target.
    pub fn fixture(self, name: &str) -> String {
        match self {
            Target::Gfx90a => name.to_string(),
            Target::Gfx1030 => format!("{name}_gfx1030"),
        }
    }
}

/// Runs kernel `name` of the loaded gfx90a code object over `grid` work-items in
/// workgroups of `workgroup`, with `kernarg` bytes. Returns instructions executed.
pub fn run_kernel(mem: &mut SparseMemory, code: &[u8], name: &str, kernarg: &[u8], grid: [u32; 3], workgroup: [u32; 3]) -> u64 {
    run_kernel_on(Target::Gfx90a, mem, code, name, kernarg, grid, workgroup)
}

/// [`run_kernel`] on `target`.
pub fn run_kernel_on(target: Target, mem: &mut SparseMemory, code: &[u8], name: &str, kernarg: &[u8], grid: [u32; 3], workgroup: [u32; 3]) -> u64 {
    run_kernel_on_retrying(target, mem, code, name, kernarg, grid, workgroup, &mut |_, _| false)
}

/// As [`run_kernel`]; a memory fault is passed to `on_fault`, and if it
/// returns true (it mapped the page: an XNACK retry fault resolved) the
/// faulting wave goes on from the faulting instruction.
pub fn run_kernel_retrying(
    mem: &mut SparseMemory,
    code: &[u8],
    name: &str,
    kernarg: &[u8],
    grid: [u32; 3],
    workgroup: [u32; 3],
    on_fault: &mut dyn FnMut(&mut SparseMemory, amdgpu_isa::memory::MemoryFault) -> bool,
) -> u64 {
    run_kernel_on_retrying(Target::Gfx90a, mem, code, name, kernarg, grid, workgroup, on_fault)
}

/// [`run_kernel_retrying`] on `target`.
pub fn run_kernel_on_retrying(
    target: Target,
    mem: &mut SparseMemory,
    code: &[u8],
    name: &str,
    kernarg: &[u8],
    grid: [u32; 3],
    workgroup: [u32; 3],
    on_fault: &mut dyn FnMut(&mut SparseMemory, amdgpu_isa::memory::MemoryFault) -> bool,
) -> u64 {
    let elf = Elf::parse(code).expect("an AMDGPU ELF");
    let kd_vaddr = elf.symbol(&format!("{name}.kd")).unwrap_or_else(|| panic!("{name}.kd symbol"));
    let kd = KernelDescriptor::parse(elf.bytes_at(kd_vaddr, 64).expect("descriptor bytes")).expect("descriptor");
    let mut kernarg = kernarg.to_vec();
    // Kernels load kernargs in 16-byte s_load_dwordx4 pieces past the
    // declared size; ROCr's kernarg pool hands out 64-byte-aligned blocks.
    kernarg.resize((kd.kernarg_size.max(kernarg.len() as u32) as usize).next_multiple_of(64), 0);
    let kernarg_address = mem.alloc(kernarg);
    // hsa_kernel_dispatch_packet_t
    let mut packet = vec![0u8; 64];
    packet[4..6].copy_from_slice(&(workgroup[0] as u16).to_le_bytes());
    packet[6..8].copy_from_slice(&(workgroup[1] as u16).to_le_bytes());
    packet[8..10].copy_from_slice(&(workgroup[2] as u16).to_le_bytes());
    for d in 0..3 {
        packet[12 + 4 * d..16 + 4 * d].copy_from_slice(&grid[d].to_le_bytes());
    }
    packet[28..32].copy_from_slice(&kd.group_segment_fixed_size.to_le_bytes());
    packet[32..40].copy_from_slice(&(CODE_BASE + kd_vaddr).to_le_bytes());
    packet[40..48].copy_from_slice(&kernarg_address.to_le_bytes());
    let packet_address = mem.alloc(packet);
    let dispatch = Dispatch {
        kernel_descriptor: kd,
        kernel_object: CODE_BASE + kd_vaddr,
        dispatch_packet: packet_address,
        queue: 0,
        kernarg: kernarg_address,
        dispatch_id: 0,
        workgroup_size: workgroup,
        grid_size: grid,
        private_segment_buffer: amdgpu_isa::memory::PRIVATE_SEGMENT_BUFFER,
        flat_scratch_init: 0,
        private_segment_size: kd.private_segment_fixed_size,
        generation: target.generation(),
    };
    let count = dispatch.workgroup_count();
    let mut steps = 0;
    let mut waves: Vec<Box<Wave>> = Vec::new();
    for z in 0..count[2] {
        for y in 0..count[1] {
            for x in 0..count[0] {
                let id = [x, y, z];
                let n = dispatch.waves_in_workgroup(id);
                while waves.len() < n {
                    waves.push(Box::new(Wave::new()));
                }
                for (w, wave) in waves.iter_mut().take(n).enumerate() {
                    dispatch.init_wave(wave, id, w).expect("launch");
                }
                let mut lds = vec![0u8; kd.group_segment_fixed_size as usize];
                // A kernel with a dynamic stack (calls at -O0) gets 16 KiB more
                // per lane, as ROCr's default scratch allowance would.
                let lane_bytes = kd.private_segment_fixed_size + if kd.kernel_code_properties & (1 << 11) != 0 { 16384 } else { 0 };
                let mut scratch = vec![0u8; n * dispatch.wave_lanes() * lane_bytes as usize];
                // In time slices of a few instructions, as the virtual GPU
                // runs them (vgpu/shader.rs): resuming must not change results.
                let mut state = WorkgroupState::default();
                let mut wg_steps = 0u64;
                loop {
                    match resume_workgroup(&mut waves[..n], &mut state, mem, &mut lds, &mut scratch, lane_bytes, APERTURES, 64, RESUME_BUDGET) {
                        Ok((done, s)) => {
                            wg_steps += s;
                            if done {
                                break;
                            }
                            assert!(wg_steps < 10_000_000, "workgroup {id:?}: step budget");
                        }
                        Err(WorkgroupError::Exec { error: amdgpu_isa::exec::ExecError::Memory { fault, .. }, .. }) if on_fault(mem, fault) => {}
                        Err(WorkgroupError::Exec { wave, error }) => panic!("workgroup {id:?} wave {wave}: {error}"),
                        Err(other) => panic!("workgroup {id:?}: {other:?}"),
                    }
                }
                steps += wg_steps;
            }
        }
    }
    steps
}

/// Compiles a .hip file to a gfx90a code object with Debian's hipcc; without
/// hipcc, says so loudly and uses tests/fixtures/<name>.co (built by
/// scripts/gen-fixtures.sh) if there is one, else None (the test is skipped).
pub fn compile_hip(source: &str, name: &str) -> Option<Vec<u8>> {
    compile_hip_with(source, name, "-O2")
}

/// As [`compile_hip_with`] for `target`.
pub fn compile_hip_for(target: Target, source: &str, name: &str, opt: &str) -> Option<Vec<u8>> {
    compile_hip_target(target, source, &target.fixture(name), opt)
}

/// As [`compile_hip`], at optimisation level `opt` ("-O0", "-O2").  Each
/// (source, level) is compiled once per test process: the tests run on
/// parallel threads, and two of them writing and removing one output file
/// raced (a test read the code object after another had removed it).
pub fn compile_hip_with(source: &str, name: &str, opt: &str) -> Option<Vec<u8>> {
    compile_hip_target(Target::Gfx90a, source, name, opt)
}

fn compile_hip_target(target: Target, source: &str, name: &str, opt: &str) -> Option<Vec<u8>> {
    /// (target, source, optimisation level, code object) of each compiled kernel.
    type Built = Vec<(Target, String, String, Option<Vec<u8>>)>;
    static BUILT: std::sync::Mutex<Built> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, _, bytes)) = built.iter().find(|(t, s, o, _)| *t == target && s == source && o == opt) {
        return bytes.clone();
    }
    let bytes = compile_hip_uncached(target, source, name, opt);
    built.push((target, source.to_string(), opt.to_string(), bytes.clone()));
    bytes
}

fn compile_hip_uncached(target: Target, source: &str, name: &str, opt: &str) -> Option<Vec<u8>> {
    let have = std::process::Command::new("hipcc").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    if !have {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(format!("{name}.co"));
        eprintln!(
            "\n\n*** hipcc not found (scripts/setup installs hipcc, libamdhip64-dev, rocm-device-libs): {} ***\n",
            if fixture.exists() { "using the checked-in tests/fixtures code object" } else { "SKIPPED" }
        );
        return std::fs::read(fixture).ok();
    }
    let out = std::env::temp_dir().join(format!("amdgpu-isa-{}{}-{}.co", name, opt, std::process::id()));
    let arch = format!("--offload-arch={}", target.arch());
    let status = std::process::Command::new("hipcc")
        .args([arch.as_str(), opt, "--cuda-device-only", "--no-gpu-bundle-output", "-c", source, "-o"])
        .arg(&out)
        .status()
        .expect("run hipcc");
    assert!(status.success(), "hipcc failed on {source}");
    let bytes = std::fs::read(&out).expect("read code object");
    let _ = std::fs::remove_file(&out);
    Some(bytes)
}
