#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest test: Debian's unchanged ROCm 5.2.3 user space against rkfd and the
# virtual GPU(s).  For every GPU node of the topology, rocminfo must list an
# agent of its gfx target with the topology's CU count, a VRAM pool and the
# right ISA; ROCr 5.2.3 knows gfx90a and gfx1030 but drops gfx11xx silently,
# so for gfx11 nodes the agent must be absent (those profiles are checked at
# the libhsakmt/ioctl level instead).  rocminfo must exit 0 (hsa_shut_down
# returned), list the CPU agent and print no libdrm_amdgpu complaint about
# a render node; rocm-smi must print a row per GPU.
# Prints "rocm: N passed, N failed".
set -u
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }
no() { fail=$((fail + 1)); echo "not ok - $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else no "$what"; fi; }

topo=/sys/devices/virtual/kfd/kfd/topology/nodes
gpus=()
for n in "$topo"/*; do
	[ "$(cat "$n/gpu_id" 2>/dev/null)" != 0 ] && gpus+=("$n")
done
check "the topology has GPU nodes (${#gpus[@]})" test ${#gpus[@]} -gt 0
prop() { awk -v k="$2" '$1 == k {print $2}' "$1/properties"; }
target_of() {
	case "$(prop "$1" gfx_target_version)" in
	90010) echo gfx90a ;; 100300) echo gfx1030 ;; 110000) echo gfx1100 ;; 110003) echo gfx1103 ;;
	*) echo unknown ;;
	esac
}

out=$(mktemp)
start=$EPOCHSECONDS
timeout 600 rocminfo >"$out" 2>&1
rc=$?
echo "# rocminfo took $((EPOCHSECONDS - start)) s"
check "rocminfo exits 0 (got $rc)" test $rc = 0
check "rocminfo lists a CPU agent" grep -q 'Device Type: *CPU' "$out"
# libhsakmt opens every render node with libdrm_amdgpu's
# amdgpu_device_initialize(), which must accept the virtual GPU's DRM
# driver (version 3.x, its INFO queries): no complaint of it on stderr.
check "libdrm_amdgpu initializes every render node (no amdgpu_device_initialize message)" \
	bash -c "! grep -E 'amdgpu_device_initialize|DRM version is|amdgpu_query_' '$out'"
for n in "${gpus[@]}"; do
	t=$(target_of "$n")
	case "$t" in
	gfx90a|gfx1030)
		cus=$(( $(prop "$n" simd_count) / $(prop "$n" simd_per_cu) ))
		check "rocminfo lists a $t agent" grep -q "Name: *$t *\$" "$out"
		check "$t agent has $cus compute units" \
			bash -c "sed -n '/Name: *$t *\$/,/ISA Info/p' '$out' | grep -qE 'Compute Unit: +$cus( |\$)'"
		check "$t agent has a GLOBAL coarse-grained pool" \
			bash -c "sed -n '/Name: *$t *\$/,/ISA Info/p' '$out' | grep -q 'COARSE GRAINED'"
		check "$t agent ISA is amdgcn-amd-amdhsa--$t" grep -q "amdgcn-amd-amdhsa--$t" "$out"
		;;
	*)
		check "rocminfo lists no $t agent (ROCr 5.2.3 drops gfx11)" \
			bash -c "! grep -q 'Name: *$t *\$' '$out'"
		;;
	esac
done
if [ $fail != 0 ]; then sed 's/^/  rocminfo: /' "$out" | head -n 120; fi

rm -f /dev/shm/rocm_smi_card*
smi=$(mktemp)
start=$EPOCHSECONDS
timeout 600 rocm-smi >"$smi" 2>&1
echo "rocm-smi exit status $? after $((EPOCHSECONDS - start)) s" >>"$smi"
rows=$(grep -cE '^[0-9]+ +[0-9.]+c' "$smi")
check "rocm-smi prints a row per GPU ($rows of ${#gpus[@]})" test "$rows" = ${#gpus[@]}
if [ $fail != 0 ]; then sed 's/^/  rocm-smi: /' "$smi" | head -n 30; else grep -E '^(GPU|[0-9]+ )' "$smi"; fi
rm -f "$out" "$smi"
echo "rocm: $pass passed, $fail failed"
[ $fail = 0 ]
