#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds the HIP guest tests: tests/hip/NAME.hip -> tests/hip/build/NAME,
# with Debian's hipcc for gfx90a (--arch gfx1030: build/gfx1030/NAME, for
# gfx1030).  A binary is cached under the hash of its source, this script,
# the target and the compiler version (hipcc takes a minute on two cores,
# more in the guest): build/NAME-<hash>, linked as build/NAME.
#   build.sh [--no-build] [--arch ARCH] [NAME...]   (default: every .hip file here)
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
arch=gfx90a
out=build
if [ "${1:-}" = --arch ]; then
	arch=$2
	shift 2
fi
# The virtual GPU interprets gfx90a and gfx1030 code (Debian has no device
# libraries for gfx1100); gfx90a's binaries stay where they always were.
case "$arch" in
gfx90a) ;;
gfx1030) out=build/$arch ;;
*)
	echo "build.sh: no HIP target $arch (gfx90a, gfx1030)" >&2
	exit 1
	;;
esac
HIPCC=${HIPCC:-hipcc}
if ! command -v "$HIPCC" >/dev/null && [ $build = 1 ]; then
	echo "build.sh: $HIPCC not found (Debian: hipcc, libamdhip64-dev)" >&2
	exit 1
fi
[ $build = 0 ] || mkdir -p "$out"
names=("$@")
[ ${#names[@]} -gt 0 ] || names=($(for f in *.hip; do echo "${f%.hip}"; done))
# One target per binary: run.sh shows HIP the GPUs of that target only.
flags=(--offload-arch=$arch -O2 -DRKFD_HIP_ARCH_$arch)
# The compiler's version is part of each hash.  The host build records it
# in $out/.hipcc-version; --no-build (the guest) reads it there rather than
# starting hipcc (a Perl script that runs clang: seconds per program under
# TCG, for every program run.sh checks).
if [ $build = 1 ]; then
	version=$("$HIPCC" --version 2>/dev/null | sha256sum | cut -c1-16 || true)
	if [ "$(cat "$out/.hipcc-version" 2>/dev/null)" != "$version" ]; then
		echo "$version" >"$out/.hipcc-version.tmp.$$"
		mv "$out/.hipcc-version.tmp.$$" "$out/.hipcc-version"
	fi
elif ! version=$(cat "$out/.hipcc-version" 2>/dev/null); then
	echo "build.sh: $out/.hipcc-version is missing: run tests/hip/build.sh on the host" >&2
	exit 1
fi
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
	bin=$out/$base-$hash
	if [ ! -x "$bin" ] && [ $build = 0 ]; then
		echo "build.sh: $bin is missing: run tests/hip/build.sh on the host" >&2
		exit 1
	fi
	if [ ! -x "$bin" ]; then
		while read -r src dflags; do
			[ -n "$src" ] || continue
			co=$bin.$(basename "$src" .hip).co
			echo "build.sh: hipcc $dflags $src (device code object)" >&2
			"$HIPCC" --offload-arch=$arch $dflags --cuda-device-only --no-gpu-bundle-output -c -o "$co.tmp.$$" "$src"
			mv "$co.tmp.$$" "$co"
		done <<<"$dcos"
		echo "build.sh: hipcc $name.hip" >&2
		"$HIPCC" "${flags[@]}" -o "$bin.tmp.$$" "$name.hip" $link
		mv "$bin.tmp.$$" "$bin"
	fi
	if [ "$(readlink "$out/$base" 2>/dev/null)" != "$base-$hash" ]; then
		ln -sfn "$base-$hash" "$out/$base"
	fi
done
