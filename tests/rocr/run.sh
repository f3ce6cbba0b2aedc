#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest program (a line of scripts/guest/programs): ROCr 5.2.3 queues,
# barrier packets, signals and SDMA copies (tests/rocr/rocr-tests.c, built
# on the host by `make -C tests/rocr`).  Prints "rocr: N passed, N failed".
set -u
bin=$(dirname "$0")/build/rocr-tests
if [ ! -x "$bin" ]; then
	echo "not ok - $bin is missing: run 'make -C tests/rocr' on the host"
	echo "rocr: 0 passed, 1 failed"
	exit 1
fi
timeout 1200 "$bin" "$@"
