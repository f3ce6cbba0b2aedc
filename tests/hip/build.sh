#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Builds the HIP guest tests: tests/hip/NAME.hip -> tests/hip/build/NAME,
# with Debian's hipcc for gfx90a.  A binary is cached under the hash of its
# source, this script and the compiler version (hipcc takes a minute on two
# cores, more in the guest): build/NAME-<hash>, linked as build/NAME.
#   build.sh [NAME...]     (default: every .hip file here)
set -eu
cd "$(dirname "$0")"
HIPCC=${HIPCC:-hipcc}
if ! command -v "$HIPCC" >/dev/null; then
	echo "build.sh: $HIPCC not found (Debian: hipcc, libamdhip64-dev)" >&2
	exit 1
fi
mkdir -p build
names=("$@")
[ ${#names[@]} -gt 0 ] || names=($(for f in *.hip; do echo "${f%.hip}"; done))
flags=(--offload-arch=gfx90a -O2)
version=$("$HIPCC" --version 2>/dev/null | sha256sum | cut -c1-16)
for name in "${names[@]}"; do
	hash=$(cat "$name.hip" "$0" <(echo "${flags[*]} $version") | sha256sum | cut -c1-16)
	bin=build/$name-$hash
	if [ ! -x "$bin" ]; then
		echo "build.sh: hipcc $name.hip" >&2
		"$HIPCC" "${flags[@]}" -o "$bin.tmp.$$" "$name.hip"
		mv "$bin.tmp.$$" "$bin"
	fi
	ln -sfn "$name-$hash" "build/$name"
done
