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
# need XNACK on) runs in the one-gfx90a reload too: "kfd-smi-tests: ...".
set -u
cd "$RKFD_ROOT"
orig=${RKFD_GPU:-gfx90a}
if ! grep -q '^amdgpu ' /proc/modules; then
	echo "kfd-svm-hmm-tests: 0 passed, 1 failed (amdgpu not loaded)"
	exit 1
fi
reload() {
	rmmod amdgpu || { echo "svm-tests: rmmod amdgpu failed" | tee /dev/kmsg >&2; return 1; }
	insmod vgpu/amdgpu.ko profile="$1"
}
rc=0
svm_race() {
	rust/target/release/kfd-race --rounds 1 --only 'svm:' || rc=1
	rust/target/release/kfd-storm --lifecycles 40 --svm 100 || rc=1
}
if [ "$orig" = gfx90a ] || reload gfx90a; then
	rust/target/release/kfd-svm-hmm-tests || rc=1
	rust/target/release/kfd-smi-tests || rc=1
	svm_race
else
	echo "kfd-svm-hmm-tests: 0 passed, 1 failed (reload as gfx90a)"
	rc=1
fi
if reload gfx90a,gfx90a; then
	rust/target/release/kfd-svm-hmm-tests || rc=1
else
	echo "kfd-svm-hmm-2gpu: 0 passed, 1 failed (reload as gfx90a,gfx90a)"
	rc=1
fi
reload "$orig" || rc=1
exit $rc
