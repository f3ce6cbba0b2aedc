#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest program: HIP programs on the virtual GPU (kernels run on the
# engine's shader interpreter).  Builds them if they are not built yet
# (tests/hip/build.sh: cached by source hash); in the guest, whose root file
# system is read-only, they must have been built on the host beforehand
# (`tests/hip/build.sh`).  Runs each with a timeout and prints
# "hip: N passed, N failed".
#   run.sh [NAME...]     (default: every .hip file here)
set -u
dir=$(dirname "$0")
names=("$@")
[ ${#names[@]} -gt 0 ] || names=($(cd "$dir" && for f in *.hip; do echo "${f%.hip}"; done))
pass=0
fail=0
for name in "${names[@]}"; do
	# Built here unless the tree is read-only (the guest: built beforehand
	# on the host, checked to be up to date).
	nobuild=
	[ -w "$dir" ] || nobuild=--no-build
	if ! "$dir/build.sh" $nobuild "$name"; then
		echo "not ok - $name: build failed"
		fail=$((fail + 1))
		continue
	fi
	# Streamed (a slow or stuck program shows how far it got), kept to check.
	log=$(mktemp)
	timeout -k 10 ${RKFD_HIP_TIMEOUT:-600} "$dir/build/$name" 2>&1 | tee "$log" | sed -u 's/^/  /'
	rc=${PIPESTATUS[0]}
	passed=0
	grep -q "^PASS $name" "$log" && passed=1
	rm -f "$log"
	if [ $rc = 0 ] && [ $passed = 1 ]; then
		echo "ok - $name"
		pass=$((pass + 1))
	else
		echo "not ok - $name (exit $rc)"
		fail=$((fail + 1))
	fi
done
echo "hip: $pass passed, $fail failed"
[ $fail = 0 ]
