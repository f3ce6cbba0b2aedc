# SPDX-License-Identifier: GPL-2.0
# Shared settings for every rkfd script.  Source it; it defines paths only and
# never installs anything (scripts/setup does that).
#
# Everything the project downloads or builds lives outside the repository, in
# RKFD_CACHE (default /var/cache/rkfd), so a clean clone stays clean and a
# second run reuses the toolchain and the built kernel.

RKFD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RKFD_CACHE=${RKFD_CACHE:-/var/cache/rkfd}

# Pinned tool versions.  Changing one changes the kernel cache key.
KERNEL_SERIES=${KERNEL_SERIES:-7.3}
BINDGEN_VERSION=0.71.1
LIBCLANG_WHEEL_VERSION=18.1.1
VIRTME_NG_VERSION=1.42

# The kernel's toolchain: Debian's rustc-web, never the rustup rustc on PATH.
KRUSTC=/usr/bin/rustc
KRUST_LIB_SRC=/usr/lib/rustlib/src/rust/library
KBINDGEN=$RKFD_CACHE/tools/bin/bindgen
RKFD_VENV=$RKFD_CACHE/venv
LIBCLANG_PATH=$( (ls -d "$RKFD_VENV"/lib/python3*/site-packages/clang/native 2>/dev/null || true) | head -n 1)
[ -n "$LIBCLANG_PATH" ] || LIBCLANG_PATH=$RKFD_VENV/lib/python3/site-packages/clang/native
export LIBCLANG_PATH

RKFD_JOBS=${RKFD_JOBS:-$(nproc)}

# Where the unpacked kernel source lives, and the file that records which
# linux-source package it came from.
RKFD_SRC_DIR=$RKFD_CACHE/src
RKFD_SRC_STAMP=$RKFD_SRC_DIR/source-package

rkfd_kernel_src() {
	# The unpacked tree named in the stamp, if any.
	[ -f "$RKFD_SRC_STAMP" ] || return 1
	local dir
	dir=$(sed -n 's/^dir=//p' "$RKFD_SRC_STAMP")
	[ -f "$dir/Makefile" ] && echo "$dir"
}

# Key of the test-kernel build: source package + config fragment + toolchain.
rkfd_kernel_key() {
	local pkg frag tools
	pkg=$(sed -n 's/^package=//p' "$RKFD_SRC_STAMP" 2>/dev/null)
	frag=$(cat "$RKFD_ROOT/kernel/rkfd.config" "$RKFD_ROOT/scripts/build-kernel" | sha256sum | cut -c1-12)
	tools=$( { "$KRUSTC" --version; "$KBINDGEN" --version; gcc --version | head -1; } 2>/dev/null | sha256sum | cut -c1-8)
	echo "${pkg}-${frag}-${tools}"
}

rkfd_kdir() {
	echo "$RKFD_CACHE/kernel/$(rkfd_kernel_key)"
}

# Make variables every kernel or module build needs.
rkfd_kmake_vars() {
	echo "RUSTC=$KRUSTC BINDGEN=$KBINDGEN RUST_LIB_SRC=$KRUST_LIB_SRC"
}

log() { printf '[rkfd] %s\n' "$*" >&2; }
die() { printf '[rkfd] error: %s\n' "$*" >&2; exit 1; }
