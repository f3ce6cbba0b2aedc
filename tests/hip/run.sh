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
	nodes=()
	for d in /sys/class/kfd/kfd/topology/nodes/*; do
		[ -d "$d" ] && nodes[${d##*/}]=$d
	done
	# (Indices in numeric order: bash lists an indexed array's in order.)
	for n in "${!nodes[@]}"; do
		v=
		while read -r key val; do
			[ "$key" = gfx_target_version ] && v=$val
		done <"${nodes[$n]}/properties" 2>/dev/null
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
# Every program is started from here, so what runs between them is kept
# to bash builtins: each process started costs the guest about 0.1 s of
# CPU under TCG (a kernel with lockdep, KFENCE and kmemleak), and this
# script started about 40 for one program (build.sh and its tools, sed,
# grep, awk, mktemp, tee).
# header FILE: the program's "// timeout:", "// expect-fail:" and
# "// subtests:" lines (the first of each), read in one pass.
header() {
	local line
	limit= expect= subtests=
	while IFS= read -r line; do
		case "$line" in
		"// timeout: "*) [ -n "$limit" ] || limit=${line#// timeout: } ;;
		"// expect-fail: "*) [ -n "$expect" ] || expect=${line#// expect-fail: } ;;
		"// subtests: "*) [ -n "$subtests" ] || subtests=${line#// subtests: } ;;
		esac
	done <"$1"
	[[ "$limit" =~ ^[0-9]+$ ]] || limit=
}
# logged TEXT [PATTERN]: whether a line of the program's output (lines[])
# is TEXT followed by what the extended glob PATTERN matches (nothing if
# none): grep -q "^TEXT..." without a grep.
shopt -s extglob
logged() {
	local l
	for l in "${lines[@]}"; do
		# shellcheck disable=SC2053 # $2 is a pattern, on purpose
		[[ "$l" == "$1"${2:-} ]] && return 0
	done
	return 1
}
# printed TEXT: whether a line of the program's output holds TEXT (grep -qF).
printed() {
	local l
	for l in "${lines[@]}"; do
		[[ "$l" == *"$1"* ]] && return 0
	done
	return 1
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Built here unless the tree is read-only (the guest: built beforehand on
# the host, checked to be up to date).  One build.sh for every program
# (bash and its tools start once); when it fails, each program's own
# says which.
nobuild=
[ -w "$dir" ] || nobuild=--no-build
built=0
"$dir/build.sh" $nobuild --arch "$arch" "${names[@]%%:*}" && built=1
pass=0
fail=0
for spec in "${names[@]}"; do
	name=${spec%%:*}
	args=()
	[ "$spec" = "$name" ] || IFS=, read -r -a args <<<"${spec#*:}"
	if [ $built = 0 ] && ! "$dir/build.sh" $nobuild --arch "$arch" "$name"; then
		echo "not ok - $name: build failed"
		fail=$((fail + 1))
		continue
	fi
	# Streamed (a slow or stuck program shows how far it got), kept to check.
	# A program with a "// timeout: SECONDS" line must end within that
	# (e.g. one that must fail fast rather than hang).
	header "$dir/$name.hip"
	start=$SECONDS
	timeout -k 10 ${limit:-${RKFD_HIP_TIMEOUT:-600}} "$dir/$bindir/${name##*/}" "${args[@]}" 2>&1 |
		while IFS= read -r l || [ -n "$l" ]; do
			printf '  %s\n' "$l"
			printf '%s\n' "$l" >&3
		done 3>"$log"
	rc=${PIPESTATUS[0]}
	took=$((SECONDS - start))
	mapfile -t lines <"$log"
	# A program with an "// expect-fail: TEXT" line passes if it fails
	# (in time) printing TEXT.  One with "// subtests: A B ..." runs named
	# checks, each printing "PASS A" or "FAIL A...": each counts, and one
	# that printed neither (the program died first) fails.  The others pass
	# if they exit 0 printing "PASS NAME".
	[ ${#args[@]} = 0 ] || subtests="${args[*]}"
	if [ -n "$subtests" ]; then
		for t in $subtests; do
			if logged "PASS $t" && ! logged "FAIL $t" '?([^[:alnum:]_]*)'; then
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
		continue
	fi
	passed=0
	if [ -n "$expect" ]; then
		[ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ] && printed "$expect" && passed=1
	else
		[ $rc = 0 ] && logged "PASS $name" '*' && passed=1
	fi
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
