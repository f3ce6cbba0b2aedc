#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest: the SVM tests need XNACK on, which a process gets only if every GPU
# it sees supports it (upstream kfd_process_xnack_mode), so they run with
# the virtual GPU reloaded as one gfx90a, then as two (the multi-GPU fault
# location tests: kfd-svm-hmm-tests runs only those when it sees two SVM
# GPUs); then the original profile list comes back.  The reloads also check
# that rmmod works after the tests' killed-mid-migration processes.  Prints
# "kfd-svm-hmm-tests: N passed, N failed" and "kfd-svm-hmm-2gpu: ...".
# kfd-race's SVM races run in the one-gfx90a reload too (one round, XNACK
# on: retry faults; the full list's round runs them with XNACK off),
# printing "kfd-race: ...", and a short kfd-storm whose lifecycles all have
# SVM ranges (kills land mid-retry-fault and mid-migration), printing
# "storm: ...".  kfd-smi-tests (SMI events, several of them SVM ones that
# need XNACK on) runs in the one-gfx90a reload too: "kfd-smi-tests: ...",
# and tests/hip/xnack.hip (HIP with HSA_XNACK=1: kernels on malloc'ed and
# managed memory through retry faults) with tests/hip/stress.hip's munmap
# case (a forked child's shader reading its mmap'ed memory through retry
# faults until the child unmaps it): "hip-xnack: ...".  Each reload
# checks that no engine thread of the unloaded module is left
# (vgpu-engine/*: a thread running the freed module's code oopses) and that
# the reloaded module's KUnit suites passed (they run at insmod).
set -u
cd "$RKFD_ROOT"
orig=${RKFD_GPU:-gfx90a}
if ! grep -q '^amdgpu ' /proc/modules; then
	echo "kfd-svm-hmm-tests: 0 passed, 1 failed (amdgpu not loaded)"
	exit 1
fi
reload() {
	rmmod amdgpu || { echo "svm-tests: rmmod amdgpu failed" | tee /dev/kmsg >&2; return 1; }
	# (An exiting thread may show for a moment after kthread_stop returned:
	# a few seconds' grace.)
	for _ in 1 2 3 4 5; do grep -qsE '^vgpu-(engine|cp)/' /proc/[0-9]*/comm || break; sleep 1; done
	if grep -qsE '^vgpu-(engine|cp)/' /proc/[0-9]*/comm; then
		echo "svm-tests: vgpu-engine threads outlived rmmod amdgpu" | tee /dev/kmsg >&2
		return 1
	fi
	local n
	n=$(dmesg | wc -l)
	insmod vgpu/amdgpu.ko profile="$1" || return 1
	# KUnit's top-level "not ok N SUITE" (a suite with a failed case).
	if dmesg | tail -n +$((n + 1)) | grep -qE '^\[ *[0-9.]+\] not ok [0-9]+ '; then
		echo "svm-tests: amdgpu KUnit suites failed on insmod profile=$1" | tee /dev/kmsg >&2
		return 1
	fi
}
rc=0
# timed NAME CMD...: runs CMD, prints "# NAME took N s", returns CMD's status.
timed() {
	local name=$1 start status
	shift
	start=$EPOCHSECONDS
	"$@"
	status=$?
	echo "# $name took $((EPOCHSECONDS - start)) s"
	return $status
}
svm_race() {
	rust/target/release/kfd-race --rounds 1 --only 'svm:' || rc=1
	rust/target/release/kfd-storm --lifecycles 40 --svm 100 || rc=1
}
if [ "$orig" = gfx90a ] || timed "reload gfx90a" reload gfx90a; then
	timed kfd-svm-hmm-tests rust/target/release/kfd-svm-hmm-tests || rc=1
	timed kfd-smi-tests rust/target/release/kfd-smi-tests || rc=1
	timed hip-xnack tests/hip/run.sh --layer hip-xnack xnack stress:munmap || rc=1
	timed svm-race svm_race || rc=1
else
	echo "kfd-svm-hmm-tests: 0 passed, 1 failed (reload as gfx90a)"
	rc=1
fi
if timed "reload gfx90a,gfx90a" reload gfx90a,gfx90a; then
	timed kfd-svm-hmm-2gpu rust/target/release/kfd-svm-hmm-tests || rc=1
else
	echo "kfd-svm-hmm-2gpu: 0 passed, 1 failed (reload as gfx90a,gfx90a)"
	rc=1
fi
timed "reload $orig" reload "$orig" || rc=1
exit $rc
