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

# The checks below run bash builtins, not grep, sed and awk: each process
# costs the guest about 0.1 s of CPU under TCG (README, "Where a guest's
# CPU goes").
topo=/sys/devices/virtual/kfd/kfd/topology/nodes
gpus=()
for n in "$topo"/*; do
	id=
	read -r id <"$n/gpu_id" 2>/dev/null
	[ "$id" != 0 ] && gpus+=("$n")
done
check "the topology has GPU nodes (${#gpus[@]})" test ${#gpus[@]} -gt 0
# prop NODE KEY: the value of KEY in NODE's properties, in $val.
prop() {
	local k v
	val=
	while read -r k v; do
		[ "$k" = "$2" ] && val=$v
	done <"$1/properties"
}
# target_of NODE: the node's gfx target, in $target.
target_of() {
	prop "$1" gfx_target_version
	case "$val" in
	90010) target=gfx90a ;; 100300) target=gfx1030 ;; 110000) target=gfx1100 ;; 110003) target=gfx1103 ;;
	*) target=unknown ;;
	esac
}
# has ERE: whether a line of rocminfo's output (lines[]) matches the
# extended regular expression ERE (grep -qE); agent_has ERE: a line of
# agent[] (below).
has() {
	local l
	for l in "${lines[@]}"; do
		[[ "$l" =~ $1 ]] && return 0
	done
	return 1
}
agent_has() {
	local l
	for l in "${agent[@]}"; do
		[[ "$l" =~ $1 ]] && return 0
	done
	return 1
}
# agent TARGET: rocminfo's lines from each "Name: TARGET" to the next
# "ISA Info" (sed -n '/Name: *TARGET *$/,/ISA Info/p'), in agent[].
agent() {
	local l in=0
	agent=()
	for l in "${lines[@]}"; do
		if [ $in = 0 ]; then
			[[ "$l" =~ Name:\ *$1\ *$ ]] || continue
			in=1
			agent+=("$l")
			continue
		fi
		agent+=("$l")
		[[ "$l" =~ ISA\ Info ]] && in=0
	done
}

out=$(mktemp)
start=$EPOCHSECONDS
timeout 600 rocminfo >"$out" 2>&1
rc=$?
echo "# rocminfo took $((EPOCHSECONDS - start)) s"
mapfile -t lines <"$out"
check "rocminfo exits 0 (got $rc)" test $rc = 0
check "rocminfo lists a CPU agent" has 'Device Type: *CPU'
# libhsakmt opens every render node with libdrm_amdgpu's
# amdgpu_device_initialize(), which must accept the virtual GPU's DRM
# driver (version 3.x, its INFO queries): no complaint of it on stderr.
check "libdrm_amdgpu initializes every render node (no amdgpu_device_initialize message)" \
	eval '! has "amdgpu_device_initialize|DRM version is|amdgpu_query_"'
for n in "${gpus[@]}"; do
	target_of "$n"
	t=$target
	case "$t" in
	gfx90a|gfx1030)
		prop "$n" simd_count
		cus=$val
		prop "$n" simd_per_cu
		cus=$((cus / val))
		agent "$t"
		check "rocminfo lists a $t agent" has "Name: *$t *\$"
		check "$t agent has $cus compute units" agent_has "Compute Unit: +$cus( |\$)"
		check "$t agent has a GLOBAL coarse-grained pool" agent_has 'COARSE GRAINED'
		check "$t agent ISA is amdgcn-amd-amdhsa--$t" has "amdgcn-amd-amdhsa--$t"
		;;
	*)
		check "rocminfo lists no $t agent (ROCr 5.2.3 drops gfx11)" \
			eval "! has 'Name: *$t *\$'"
		;;
	esac
done
if [ $fail != 0 ]; then sed 's/^/  rocminfo: /' "$out" | head -n 120; fi

rm -f /dev/shm/rocm_smi_card*
smi=$(mktemp)
start=$EPOCHSECONDS
timeout 600 rocm-smi >"$smi" 2>&1
echo "rocm-smi exit status $? after $((EPOCHSECONDS - start)) s" >>"$smi"
mapfile -t lines <"$smi"
rows=0
for l in "${lines[@]}"; do
	[[ "$l" =~ ^[0-9]+\ +[0-9.]+c ]] && rows=$((rows + 1))
done
check "rocm-smi prints a row per GPU ($rows of ${#gpus[@]})" test "$rows" = ${#gpus[@]}
if [ $fail != 0 ]; then
	sed 's/^/  rocm-smi: /' "$smi" | head -n 30
else
	for l in "${lines[@]}"; do
		[[ "$l" =~ ^(GPU|[0-9]+\ ) ]] && printf '%s\n' "$l"
	done
fi
rm -f "$out" "$smi"
echo "rocm: $pass passed, $fail failed"
[ $fail = 0 ]
