#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds the HIP guest tests: tests/hip/NAME.hip -> tests/hip/build/NAME,
# with Debian's hipcc for gfx90a.  A binary is cached under the hash of its
# source, this script and the compiler version (hipcc takes a minute on two
# cores, more in the guest): build/NAME-<hash>, linked as build/NAME.
#   build.sh [--no-build] [NAME...]     (default: every .hip file here)
# NAME may name a subdirectory's program (bench/isa-bench: built as
# build/isa-bench).
# A program may name device code built apart ("// device-code-object:"
# lines: its own flags, e.g. -O0), cached with it as build/NAME-<hash>.*.co.
# --no-build: only link build/NAME to an up-to-date cached binary, fail if
# there is none (the guest: its root file system is read-only, and hipcc
# under TCG would take many minutes).
set -eu
self=$(realpath "$0")
cd "$(dirname "$self")"
build=1
if [ "${1:-}" = --no-build ]; then
	build=0
	shift
fi
HIPCC=${HIPCC:-hipcc}
if ! command -v "$HIPCC" >/dev/null && [ $build = 1 ]; then
	echo "build.sh: $HIPCC not found (Debian: hipcc, libamdhip64-dev)" >&2
	exit 1
fi
[ $build = 0 ] || mkdir -p build
names=("$@")
[ ${#names[@]} -gt 0 ] || names=($(for f in *.hip; do echo "${f%.hip}"; done))
# gfx90a only: the virtual GPU's interpreter runs no other ISA (and Debian
# has no device libraries for gfx1100); run.sh shows HIP the gfx90a GPUs only.
flags=(--offload-arch=gfx90a -O2)
version=$("$HIPCC" --version 2>/dev/null | sha256sum | cut -c1-16 || true)
for name in "${names[@]}"; do
	# "// device-code-object: FILE.hip FLAGS...": FILE.hip's device code
	# alone, built with FLAGS (e.g. -O0) into build/NAME-<hash>.BASE.co
	# beside the binary, which loads it with hipModuleLoad.
	dcos=$(sed -n 's|^// device-code-object: ||p' "$name.hip")
	dsrc=$(echo "$dcos" | awk 'NF { print $1 }')
	# "// link: FLAGS...": libraries the program links (e.g. -lrocsparse).
	link=$(sed -n 's|^// link: ||p' "$name.hip")
	hash=$(cat "$name.hip" $dsrc "$self" <(echo "${flags[*]} $version $dcos $link") | sha256sum | cut -c1-16)
	base=${name##*/}
	bin=build/$base-$hash
	if [ ! -x "$bin" ] && [ $build = 0 ]; then
		echo "build.sh: $bin is missing: run tests/hip/build.sh on the host" >&2
		exit 1
	fi
	if [ ! -x "$bin" ]; then
		while read -r src dflags; do
			[ -n "$src" ] || continue
			co=$bin.$(basename "$src" .hip).co
			echo "build.sh: hipcc $dflags $src (device code object)" >&2
			"$HIPCC" --offload-arch=gfx90a $dflags --cuda-device-only --no-gpu-bundle-output -c -o "$co.tmp.$$" "$src"
			mv "$co.tmp.$$" "$co"
		done <<<"$dcos"
		echo "build.sh: hipcc $name.hip" >&2
		"$HIPCC" "${flags[@]}" -o "$bin.tmp.$$" "$name.hip" $link
		mv "$bin.tmp.$$" "$bin"
	fi
	if [ "$(readlink "build/$base" 2>/dev/null)" != "$base-$hash" ]; then
		ln -sfn "$base-$hash" "build/$base"
	fi
done
