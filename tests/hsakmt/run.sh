#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest program (a line of scripts/guest/programs): Debian's libhsakmt 5.2.3
# against rkfd and every virtual GPU.  The test is built on the host
# (`make -C tests/hsakmt`, part of `make check`); nothing is built here.
# Prints "hsakmt: N passed, N failed" and exits non-zero on failure.
set -u
bin=$(dirname "$0")/build/hsakmt-tests
if [ ! -x "$bin" ]; then
	echo "not ok - $bin is missing: run 'make -C tests/hsakmt' on the host"
	echo "hsakmt: 0 passed, 1 failed"
	exit 1
fi
# The program ends itself (with its closing line) after 20 minutes.
timeout 1500 "$bin" "$@"
