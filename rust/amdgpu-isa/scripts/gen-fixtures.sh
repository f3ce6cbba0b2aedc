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
set -euo pipefail
cd "$(dirname "$0")/.."
MC=(llvm-mc-15 -arch=amdgcn -mcpu=gfx90a -show-encoding)
mkdir -p tests/fixtures/exec

out=tests/fixtures/decode.txt
: >"$out"
grep -v '^\s*//' tests/asm/decode.s | grep -v '^\s*$' | while IFS= read -r line; do
	enc=$(printf '%s\n' "$line" | "${MC[@]}" | grep 'encoding:') || { echo "llvm-mc rejects: $line" >&2; exit 1; }
	text=$(printf '%s' "$enc" | sed 's/;.*//; s/^[[:space:]]*//; s/[[:space:]]*$//')
	bytes=$(printf '%s' "$enc" | sed 's/.*encoding: \[//; s/\].*//')
	printf '%s ; %s\n' "$bytes" "$text" >>"$out"
done
echo "decode.txt: $(wc -l <"$out") instructions"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for s in tests/asm/exec/*.s; do
	n=$(basename "$s" .s)
	llvm-mc-15 -arch=amdgcn -mcpu=gfx90a -filetype=obj "$s" -o "$tmp/$n.o"
	llvm-objcopy-15 -O binary --only-section=.text "$tmp/$n.o" "$tmp/$n.bin"
	od -An -tx4 -v -w4 "$tmp/$n.bin" | tr -d ' ' >"tests/fixtures/exec/$n.hex"
done
echo "exec: $(ls tests/fixtures/exec | wc -l) programs"

hipcc --offload-arch=gfx90a -O2 --cuda-device-only --no-gpu-bundle-output -c tests/hip/kernels.hip -o tests/fixtures/kernels.co
llvm-objdump-15 -d --mcpu=gfx90a tests/fixtures/kernels.co >tests/fixtures/kernels.dis
hipcc --offload-arch=gfx90a -O0 --cuda-device-only --no-gpu-bundle-output -c tests/hip/kernels.hip -o tests/fixtures/kernels_o0.co
echo "kernels.co: $(grep -c '^\s[a-z]' tests/fixtures/kernels.dis) instructions"
hipcc --offload-arch=gfx90a -O2 --cuda-device-only --no-gpu-bundle-output -c ../../tests/hip/suite.hip -o tests/fixtures/suite.co
hipcc --offload-arch=gfx90a -O0 --cuda-device-only --no-gpu-bundle-output -c ../../tests/hip/device/o0.hip -o tests/fixtures/suite_o0.co
