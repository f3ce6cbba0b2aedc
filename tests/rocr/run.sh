#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest program (a line of scripts/guest/programs): ROCr 5.2.3 queues,
# barrier packets, signals and SDMA copies (tests/rocr/rocr-tests.c, built
# on the host by `make -C tests/rocr`).  Prints "rocr: N passed, N failed".
#
# It takes about 15 s in make check's guest.  If it has not ended after
# RKFD_ROCR_TIMEOUT seconds (240), every thread's kernel stack and wait
# channel is printed (where it waits: rkfd or user space), the kernel is
# asked for its blocked tasks (sysrq w), and the program is killed and
# counted as one failure: a hang is a defect to diagnose, not a wait for
# the guest's own time limit.
set -u
bin=$(dirname "$0")/build/rocr-tests
limit=${RKFD_ROCR_TIMEOUT:-240}
if [ ! -x "$bin" ]; then
	echo "not ok - $bin is missing: run 'make -C tests/rocr' on the host"
	echo "rocr: 0 passed, 1 failed"
	exit 1
fi
"$bin" "$@" &
pid=$!
for ((i = 0; i < limit; i++)); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 1
done
if kill -0 "$pid" 2>/dev/null; then
	echo "# rocr-tests (pid $pid) still running after $limit s: its threads"
	for t in /proc/"$pid"/task/*; do
		echo "# thread ${t##*/} $(cat "$t"/comm 2>/dev/null) state $(awk '{print $3}' "$t"/stat 2>/dev/null) wchan $(cat "$t"/wchan 2>/dev/null)"
		sed 's/^/#   /' "$t"/stack 2>/dev/null
	done
	[ -w /proc/sysrq-trigger ] && echo w >/proc/sysrq-trigger
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	echo "not ok - rocr-tests did not end in $limit s (threads' stacks above, blocked tasks in dmesg)"
	echo "rocr: 0 passed, 1 failed"
	exit 1
fi
wait "$pid"
