#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest program (a line of scripts/guest/programs): queues through Debian's
# libhsakmt 5.2.3 (tests/hsakmt/queue-tests.c, built on the host by
# `make -C tests/hsakmt`).  Prints "hsakmt-queues: N passed, N failed".
set -u
bin=$(dirname "$0")/build/queue-tests
if [ ! -x "$bin" ]; then
	echo "not ok - $bin is missing: run 'make -C tests/hsakmt' on the host"
	echo "hsakmt-queues: 0 passed, 1 failed"
	exit 1
fi
timeout 600 "$bin" "$@"
