// SPDX-License-Identifier: GPL-2.0 OR MIT
//! The architectural state of one wave: wave64 on gfx90a, wave32 or wave64
//! on gfx1030.

use super::decode::Generation;

/// Lanes per wave at most (wave64; a wave32 uses lanes 0..32).
pub const WAVE_SIZE: usize = 64;
/// Addressable SGPRs: s0..s101 on GFX9 (102/103 are FLAT_SCRATCH there),
/// s0..s105 on GFX10 (VCC, M0, EXEC are separate fields).
pub const SGPR_COUNT: usize = 106;
/// Architectural VGPRs and accumulation VGPRs (AGPRs) per lane.
pub const VGPR_COUNT: usize = 256;
pub const AGPR_COUNT: usize = 256;

/// MODE register fields (hwreg 1) the interpreter honours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mode(pub u32);

impl Mode {
    /// FP_DENORM[1:0]: f32 denormals (0 flush, 3 keep); bits [5:4].
    pub fn f32_denormals(self) -> super::softfloat::Denormals {
        if (self.0 >> 4) & 3 == 0 {
            super::softfloat::Denormals::Flush
        } else {
            super::softfloat::Denormals::Keep
        }
    }
    /// FP_DENORM[3:2]: f64 and f16 denormals; bits [7:6].
    pub fn f64_denormals(self) -> super::softfloat::Denormals {
        if (self.0 >> 6) & 3 == 0 {
            super::softfloat::Denormals::Flush
        } else {
            super::softfloat::Denormals::Keep
        }
    }
    /// FP_ROUND[1:0] for f32; bits [1:0]. 0 is round to nearest even.
    pub fn f32_round(self) -> u32 {
        self.0 & 3
    }
}

/// One wave's registers and program counter.
pub struct Wave {
    pub pc: u64,
    pub sgpr: [u32; SGPR_COUNT],
    /// `vgpr[r][lane]`.
    pub vgpr: [[u32; WAVE_SIZE]; VGPR_COUNT],
    pub agpr: [[u32; WAVE_SIZE]; AGPR_COUNT],
    pub exec: u64,
    pub vcc: u64,
    pub scc: bool,
    pub m0: u32,
    pub mode: Mode,
    /// FLAT_SCRATCH (s102/s103 as operand codes 102/103).
    pub flat_scratch: u64,
    /// TTMP0..15, trap handler temporaries.
    pub ttmp: [u32; 16],
    /// Set by `s_endpgm`.
    pub ended: bool,
    /// The ISA the wave runs (GFX9 is 0: an all-zero `Wave` is valid).
    pub gen: Generation,
    /// A wave32 (GFX10): lanes 0..32, EXEC and VCC are their low halves
    /// (EXEC_LO, VCC_LO) and lane masks in SGPRs are one SGPR wide.
    pub wave32: bool,
}

impl Wave {
    /// A wave with every register zero.
    pub const fn new() -> Self {
        Wave {
            pc: 0,
            sgpr: [0; SGPR_COUNT],
            vgpr: [[0; WAVE_SIZE]; VGPR_COUNT],
            agpr: [[0; WAVE_SIZE]; AGPR_COUNT],
            exec: 0,
            vcc: 0,
            scc: false,
            m0: 0,
            mode: Mode(0),
            flat_scratch: 0,
            ttmp: [0; 16],
            ended: false,
            gen: Generation::Gfx9,
            wave32: false,
        }
    }

    /// Zeroes every register in place (no 130 KiB temporary on the stack).
    pub fn reset(&mut self) {
        self.pc = 0;
        self.sgpr = [0; SGPR_COUNT];
        for r in self.vgpr.iter_mut() {
            *r = [0; WAVE_SIZE];
        }
        for r in self.agpr.iter_mut() {
            *r = [0; WAVE_SIZE];
        }
        self.exec = 0;
        self.vcc = 0;
        self.scc = false;
        self.m0 = 0;
        self.mode = Mode(0);
        self.flat_scratch = 0;
        self.ttmp = [0; 16];
        self.ended = false;
        self.gen = Generation::Gfx9;
        self.wave32 = false;
    }

    /// Lanes of the wave: 32 or 64.
    pub fn lanes(&self) -> usize {
        if self.wave32 {
            32
        } else {
            64
        }
    }

    /// The lanes of the wave as a mask (EXEC's and VCC's meaningful bits).
    pub fn lane_mask(&self) -> u64 {
        if self.wave32 {
            0xffff_ffff
        } else {
            u64::MAX
        }
    }

    /// EXEC's lanes of this wave: a wave32 may write EXEC_HI (an SGPR
    /// like any other then), which enables no lane.
    pub fn exec_lanes(&self) -> u64 {
        self.exec & self.lane_mask()
    }

    pub fn lane_active(&self, lane: usize) -> bool {
        self.exec_lanes() >> lane & 1 == 1
    }
}

impl Default for Wave {
    fn default() -> Self {
        Self::new()
    }
}
