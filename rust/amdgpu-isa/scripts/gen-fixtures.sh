#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# Regenerates the checked-in test fixtures with Debian's LLVM 15 and hipcc,
# so no instruction encoding in the tests is typed by hand:
#   tests/fixtures/decode.txt      each line of tests/asm/decode.s as llvm-mc-15
#                                  encodes it: "<bytes> ; <llvm's text>"
#   tests/fixtures/exec/<n>.hex    each tests/asm/exec/<n>.s assembled, one
#                                  32-bit little-endian word per line
#   tests/fixtures/kernels.co      tests/hip/kernels.hip built by hipcc for gfx90a
#   tests/fixtures/kernels.dis     llvm-objdump-15's disassembly of it
#   tests/fixtures/kernels_o0.co   the same built with -O0 (scratch, calls)
#   tests/fixtures/suite.co        the guest's HIP suite (../../tests/hip/suite.hip),
#                                  device code
#   tests/fixtures/suite_o0.co     its -O0 device code (../../tests/hip/device/o0.hip)
# and for gfx1030 (GFX10.3):
#   tests/fixtures/decode10.txt    tests/asm/decode10.s as llvm-mc-15 -mcpu=gfx1030 encodes it
#   tests/fixtures/exec10/<n>.hex  each tests/asm/exec10/<n>.s assembled for gfx1030 (wave64.s: +wavefrontsize64)
#   tests/fixtures/suite_gfx1030.co, suite_o0_gfx1030.co   the suite's device code for gfx1030
#   tests/fixtures/suite_gfx1030.dis                      llvm-objdump-15's disassembly of it
#   tests/fixtures/kernels_gfx1030.co, kernels_o0_gfx1030.co   tests/hip/kernels.hip for gfx1030
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p tests/fixtures/exec

# encode ASM OUT CPU: each line of ASM as "<bytes> ; <llvm's text>"
encode() {
	: >"$2"
	grep -v '^\s*//' "$1" | grep -v '^\s*$' | while IFS= read -r line; do
		enc=$(printf '%s\n' "$line" | llvm-mc-15 -arch=amdgcn -mcpu="$3" -show-encoding | grep 'encoding:') || { echo "llvm-mc rejects: $line" >&2; exit 1; }
		text=$(printf '%s' "$enc" | sed 's/;.*//; s/^[[:space:]]*//; s/[[:space:]]*$//')
		bytes=$(printf '%s' "$enc" | sed 's/.*encoding: \[//; s/\].*//')
		printf '%s ; %s\n' "$bytes" "$text" >>"$2"
	done
	echo "$2: $(wc -l <"$2") instructions"
}
encode tests/asm/decode.s tests/fixtures/decode.txt gfx90a
encode tests/asm/decode10.s tests/fixtures/decode10.txt gfx1030

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for dir_cpu in exec:gfx90a exec10:gfx1030; do
	dir=${dir_cpu%:*}
	cpu=${dir_cpu#*:}
	mkdir -p "tests/fixtures/$dir"
	for s in tests/asm/$dir/*.s; do
		n=$(basename "$s" .s)
		# exec10/wave64.s is a wave64 program (GFX10 runs both sizes).
		attr=
		[ "$dir/$n" != exec10/wave64 ] || attr=-mattr=+wavefrontsize64
		llvm-mc-15 -arch=amdgcn -mcpu="$cpu" $attr -filetype=obj "$s" -o "$tmp/$n.o"
		llvm-objcopy-15 -O binary --only-section=.text "$tmp/$n.o" "$tmp/$n.bin"
		od -An -tx4 -v -w4 "$tmp/$n.bin" | tr -d ' ' >"tests/fixtures/$dir/$n.hex"
	done
	echo "$dir: $(ls tests/fixtures/$dir | wc -l) programs"
done

hipcc --offload-arch=gfx90a -O2 --cuda-device-only --no-gpu-bundle-output -c tests/hip/kernels.hip -o tests/fixtures/kernels.co
llvm-objdump-15 -d --mcpu=gfx90a tests/fixtures/kernels.co >tests/fixtures/kernels.dis
hipcc --offload-arch=gfx90a -O0 --cuda-device-only --no-gpu-bundle-output -c tests/hip/kernels.hip -o tests/fixtures/kernels_o0.co
echo "kernels.co: $(grep -c '^\s[a-z]' tests/fixtures/kernels.dis) instructions"
hipcc --offload-arch=gfx90a -O2 --cuda-device-only --no-gpu-bundle-output -c ../../tests/hip/suite.hip -o tests/fixtures/suite.co
hipcc --offload-arch=gfx90a -O0 --cuda-device-only --no-gpu-bundle-output -c ../../tests/hip/device/o0.hip -o tests/fixtures/suite_o0.co
hipcc --offload-arch=gfx1030 -O2 --cuda-device-only --no-gpu-bundle-output -c ../../tests/hip/suite.hip -o tests/fixtures/suite_gfx1030.co
llvm-objdump-15 -d --mcpu=gfx1030 tests/fixtures/suite_gfx1030.co >tests/fixtures/suite_gfx1030.dis
hipcc --offload-arch=gfx1030 -O0 --cuda-device-only --no-gpu-bundle-output -c ../../tests/hip/device/o0.hip -o tests/fixtures/suite_o0_gfx1030.co
hipcc --offload-arch=gfx1030 -O2 --cuda-device-only --no-gpu-bundle-output -c tests/hip/kernels.hip -o tests/fixtures/kernels_gfx1030.co
hipcc --offload-arch=gfx1030 -O0 --cuda-device-only --no-gpu-bundle-output -c tests/hip/kernels.hip -o tests/fixtures/kernels_o0_gfx1030.co
