#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest program: HIP programs on the virtual GPU (kernels run on the
# engine's shader interpreter).  Builds them if they are not built yet
# (tests/hip/build.sh: cached by source hash); in the guest, whose root file
# system is read-only, they must have been built on the host beforehand
# (`tests/hip/build.sh`).  Runs each with a timeout and prints
# "hip: N passed, N failed" (gfx1030: "hip-gfx1030: ..."), counting each
# sub-test of a program that declares them ("// subtests: ...").
#   run.sh [--arch gfx90a|gfx1030] [--layer LAYER] [NAME...]
# (default: gfx90a; every .hip file here without a "// ARCH: skip REASON"
# line; named programs run even with one; NAME may name a subdirectory's
# program, e.g. reach/rand, run by hand; NAME:A,B runs the program with
# the arguments A B as its sub-tests instead of its "// subtests:" line,
# e.g. stress:munmap; --layer names the summary line)
set -u
dir=$(dirname "$0")
arch=gfx90a
if [ "${1:-}" = --arch ]; then
	arch=$2
	shift 2
fi
case "$arch" in
gfx90a) target_version=90010 bindir=build layer=hip ;;
gfx1030) target_version=100300 bindir=build/gfx1030 layer=hip-gfx1030 ;;
*)
	echo "run.sh: no HIP target $arch (gfx90a, gfx1030)" >&2
	exit 1
	;;
esac
if [ "${1:-}" = --layer ]; then
	layer=$2
	shift 2
fi
names=("$@")
[ ${#names[@]} -gt 0 ] || names=($(cd "$dir" && for f in *.hip; do
	grep -q "^// $arch: skip" "$f" || echo "${f%.hip}"
done))
# HIP refuses to start unless it has a code object for every GPU it sees
# (hipErrorNoBinaryForGpu), and the guest of `make check` has one GPU of each
# profile: show ROCr the GPUs of the target only (ROCR_VISIBLE_DEVICES:
# indices among GPU nodes, in topology order).
if [ -z "${ROCR_VISIBLE_DEVICES:-}" ]; then
	gpus=
	i=0
	for n in $(ls /sys/class/kfd/kfd/topology/nodes 2>/dev/null | sort -n); do
		v=$(awk '$1 == "gfx_target_version" { print $2 }' "/sys/class/kfd/kfd/topology/nodes/$n/properties" 2>/dev/null)
		[ -n "$v" ] && [ "$v" != 0 ] || continue
		[ "$v" = "$target_version" ] && gpus=${gpus:+$gpus,}$i
		i=$((i + 1))
	done
	if [ -z "$gpus" ]; then
		echo "not ok - no $arch GPU"
		echo "$layer: 0 passed, 1 failed"
		exit 1
	fi
	export ROCR_VISIBLE_DEVICES=$gpus
fi
pass=0
fail=0
for spec in "${names[@]}"; do
	name=${spec%%:*}
	args=()
	[ "$spec" = "$name" ] || IFS=, read -r -a args <<<"${spec#*:}"
	# Built here unless the tree is read-only (the guest: built beforehand
	# on the host, checked to be up to date).
	nobuild=
	[ -w "$dir" ] || nobuild=--no-build
	if ! "$dir/build.sh" $nobuild --arch "$arch" "$name"; then
		echo "not ok - $name: build failed"
		fail=$((fail + 1))
		continue
	fi
	# Streamed (a slow or stuck program shows how far it got), kept to check.
	# A program with a "// timeout: SECONDS" line must end within that
	# (e.g. one that must fail fast rather than hang).
	limit=$(sed -n 's|^// timeout: \([0-9][0-9]*\)$|\1|p' "$dir/$name.hip")
	log=$(mktemp)
	start=$SECONDS
	timeout -k 10 ${limit:-${RKFD_HIP_TIMEOUT:-600}} "$dir/$bindir/${name##*/}" "${args[@]}" 2>&1 | tee "$log" | sed -u 's/^/  /'
	rc=${PIPESTATUS[0]}
	took=$((SECONDS - start))
	# A program with an "// expect-fail: TEXT" line passes if it fails
	# (in time) printing TEXT.  One with "// subtests: A B ..." runs named
	# checks, each printing "PASS A" or "FAIL A...": each counts, and one
	# that printed neither (the program died first) fails.  The others pass
	# if they exit 0 printing "PASS NAME".
	expect=$(sed -n 's|^// expect-fail: ||p' "$dir/$name.hip")
	subtests=$(sed -n 's|^// subtests: ||p' "$dir/$name.hip")
	[ ${#args[@]} = 0 ] || subtests="${args[*]}"
	if [ -n "$subtests" ]; then
		for t in $subtests; do
			if grep -q "^PASS $t\$" "$log" && ! grep -q "^FAIL $t\b" "$log"; then
				echo "ok - $name $t"
				pass=$((pass + 1))
			else
				echo "not ok - $name $t"
				fail=$((fail + 1))
			fi
		done
		if [ $rc != 0 ]; then
			echo "not ok - $name (exit $rc)"
			fail=$((fail + 1))
		fi
		echo "# $name took ${took}s"
		rm -f "$log"
		continue
	fi
	passed=0
	if [ -n "$expect" ]; then
		[ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ] && grep -qF "$expect" "$log" && passed=1
	else
		[ $rc = 0 ] && grep -q "^PASS $name" "$log" && passed=1
	fi
	rm -f "$log"
	if [ $passed = 1 ]; then
		echo "ok - $name (${took}s)"
		pass=$((pass + 1))
	else
		echo "not ok - $name (exit $rc, ${took}s)"
		fail=$((fail + 1))
	fi
done
echo "$layer: $pass passed, $fail failed"
[ $fail = 0 ]
