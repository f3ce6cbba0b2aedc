#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: Debian's unchanged ROCm 5.2.3 user space against rkfd and the
# virtual GPU.  rocminfo must list the CPU agent and the GPU agent of the
# loaded profile with the topology's CU count and a VRAM pool, and shut down
# cleanly; rocm-smi must print a row for the GPU.  Prints
# "rocm: N passed, N failed".  ROCr 5.2.3 knows gfx90a and gfx1030 but drops
# gfx11xx silently, so for gfx11 profiles only the CPU agent is expected.
set -u
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }
no() { fail=$((fail + 1)); echo "not ok - $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else no "$what"; fi; }

profile=${RKFD_GPU:-gfx90a}
topo=/sys/devices/virtual/kfd/kfd/topology/nodes
gpu_node=""
for n in "$topo"/*; do
	[ "$(cat "$n/gpu_id" 2>/dev/null)" != 0 ] && { gpu_node=$n; break; }
done
check "a GPU node exists in the topology" test -n "$gpu_node"
prop() { awk -v k="$1" '$1 == k {print $2}' "$gpu_node/properties"; }

out=$(mktemp)
timeout 120 rocminfo >"$out" 2>&1
rc=$?
check "rocminfo exits 0 (got $rc)" test $rc = 0
check "rocminfo lists a CPU agent" grep -q 'Device Type: *CPU' "$out"
case "$profile" in
gfx90a|gfx1030)
	check "rocminfo lists the $profile GPU agent" grep -q "Name: *$profile" "$out"
	if [ -n "$gpu_node" ]; then
		cus=$(( $(prop simd_count) / $(prop simd_per_cu) ))
		check "GPU agent has $cus compute units" \
			bash -c "sed -n '/Name: *$profile/,/ISA Info/p' '$out' | grep -qE 'Compute Unit: +$cus( |\$)'"
	fi
	check "GPU agent has a GLOBAL coarse-grained pool" \
		bash -c "sed -n '/Name: *$profile/,\$p' '$out' | grep -q 'COARSE GRAINED'"
	check "GPU agent ISA is amdgcn-amd-amdhsa--$profile" grep -q "amdgcn-amd-amdhsa--$profile" "$out"
	;;
*)
	check "rocminfo lists no GPU agent for $profile (ROCr 5.2.3 drops gfx11)" \
		bash -c "! grep -q 'Device Type: *GPU' '$out'"
	;;
esac
if [ $fail != 0 ]; then sed 's/^/  rocminfo: /' "$out" | head -n 80; fi

rm -f /dev/shm/rocm_smi_card*
smi=$(mktemp)
timeout 60 rocm-smi >"$smi" 2>&1
echo "rocm-smi exit status $?" >>"$smi"
check "rocm-smi prints a row for GPU 0" grep -qE '^0 +[0-9.]+c' "$smi"
if [ $fail != 0 ]; then sed 's/^/  rocm-smi: /' "$smi" | head -n 30; fi
rm -f "$out" "$smi"
echo "rocm: $pass passed, $fail failed"
[ $fail = 0 ]
