#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest: runs queue tests with rkfd reloaded under another sched_policy
# (issue #13 item 2: the HWS path), then reloads rkfd and the virtual GPU
# as they were (so the outer scripts/guest/run unloads them as usual).
#
#   scripts/guest/hws-tests.sh [--policy N] [--profile LIST] [-- CMD [ARGS...]]
#
# --policy: rkfd.ko sched_policy (default 0, the HWS); --profile: the
# virtual GPU's profile list for the run (default gfx90a); CMD: what to run
# (default rust/target/release/kfd-queue-tests, its closing line renamed
# "queue-sched<N>: ..." so that a make check layer counts it apart from the
# default run's "queue: ..."; "queue-mes<N>: ..." when every GPU of the
# profile list is a gfx11, scheduled by MES).  Before that it checks
# that rkfd refuses to load with sched_policy=3 (upstream kfd_init) and,
# for policy 0 and 1, that each GPU of a HWS family reports its hardware
# scheduler in dmesg and each gfx11 GPU its MES scheduling, and after the
# default run under policy 0 that the over-subscribed runlists logged
# upstream's warning (HWS GPUs), that the hang test's hang was declared
# after the preemption timeout rkfd was loaded with
# (queue_preemption_timeout_ms, 1 s here) and, on gfx11 GPUs, that no MES
# request failed and no queue is left with the MES.  The default run under
# policy 0 on HWS GPUs then runs, short, what else preempts the runlist
# (issue #13), each closing line renamed "<name>-sched0: ...": on an
# all-gfx90a profile (XNACK on) kfd-svm-hmm-tests'
# retry_faults_vs_queue_preemption (retry faults while the runlist is
# preempted under Process::inner), kfd-fuzz (3000 calls) and kfd-storm (16
# lifecycles).  Prints "hws-tests: N passed, N failed" for those checks
# ("mes-tests: ..." on gfx11 GPUs only); exits non-zero if they or CMD
# failed.
set -u
cd "$RKFD_ROOT"
policy=0 profile=gfx90a
while [ $# -gt 0 ]; do
	case $1 in
	--policy) policy=$2; shift 2 ;;
	--profile) profile=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
default=0
[ $# -gt 0 ] || default=1
# The closing lines' names: a run on gfx11 GPUs only tests the MES path.
tag=sched name=hws
if ! tr ',' '\n' <<<"$profile" | grep -qv '^gfx11'; then tag=mes name=mes; fi
orig=${RKFD_GPU:-gfx90a}
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok $*"; }
bad() { fail=$((fail + 1)); echo "not ok $*" | tee /dev/kmsg; }
# renamed NAME CMD...: runs CMD, its closing "<layer>: N passed, N failed"
# line renamed "NAME: ..." (a make check layer of its own).
renamed() {
	local name=$1
	shift
	"$@" | sed -u -E "s/^[a-z][a-z0-9-]*: ([0-9]+ passed, [0-9]+ failed)/$name: \1/"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
}

unload() {
	if grep -q '^amdgpu ' /proc/modules; then
		rmmod amdgpu || { bad "rmmod amdgpu"; return 1; }
		for _ in 1 2 3 4 5; do grep -qsE '^vgpu-(engine|cp)/' /proc/[0-9]*/comm || break; sleep 1; done
	fi
	if grep -q '^rkfd ' /proc/modules; then
		rmmod rkfd || { bad "rmmod rkfd"; return 1; }
	fi
}
# load POLICY PROFILE [RKFD_PARAM...]
load() {
	local policy=$1 gpus=$2
	shift 2
	insmod rkfd.ko sched_policy="$policy" "$@" || { bad "insmod rkfd.ko sched_policy=$policy $*"; return 1; }
	insmod vgpu/amdgpu.ko profile="$gpus" || { bad "insmod amdgpu.ko profile=$gpus"; return 1; }
}
# The virtual HWS answers a preemption in the doorbell write itself
# (vgpu/cp.rs): only a hung one misses its fence, and the hang test waits
# the whole timeout for it.  1 s of it rather than upstream's 9
# (RKFD_HWS_TIMEOUT= : upstream's, to compare).
hws_timeout=${RKFD_HWS_TIMEOUT-queue_preemption_timeout_ms=1000}

# mark: logs a line the next `since` reads the kernel log from (counting
# lines goes wrong once the log's ring buffer is full, as after
# scripts/guest/bench-queues' first half).
mark() { marker="hws-tests: mark $$ $(date +%s%N)"; echo "$marker" >/dev/kmsg; }
since() { dmesg | sed -n "\|$marker|,\$p"; }

rc=0
unload || rc=1
mark
if insmod rkfd.ko sched_policy=3 2>/dev/null; then
	bad "rkfd.ko loaded with sched_policy=3"
	rmmod rkfd
elif since | grep -q 'sched_policy has to be 0, 1 or 2'; then
	ok "sched_policy=3 refused"
else
	bad "sched_policy=3 refused without upstream's message"
fi
mark
if load "$policy" "$profile" $hws_timeout; then
	if [ "$policy" != 2 ]; then
		# gfx9/gfx10 GPUs run the HWS; gfx11 ones the MES, never the
		# fallback to no scheduler.
		want=$(tr ',' '\n' <<<"$profile" | grep -c '^gfx9\|^gfx10')
		got=$(since | grep -c 'hardware scheduler (sched_policy '"$policy"')')
		if [ "$got" = "$want" ]; then ok "HWS started on $got GPU(s)"; else bad "HWS started on $got GPU(s), want $want"; fi
		mes=$(tr ',' '\n' <<<"$profile" | grep -c '^gfx11')
		if [ "$mes" -gt 0 ]; then
			got=$(since | grep -c 'queues are scheduled by MES (sched_policy '"$policy"')')
			if [ "$got" = "$mes" ]; then ok "MES scheduling on $got GPU(s)"; else bad "MES scheduling on $got GPU(s), want $mes"; fi
		fi
	fi
	if [ $default = 1 ]; then
		rust/target/release/kfd-queue-tests | sed -u "s/^queue: \([0-9]* passed\)/queue-$tag$policy: \1/"
		[ "${PIPESTATUS[0]}" = 0 ] || rc=1
		if [ "$policy" = 0 ] && [ "$want" -gt 0 ]; then
			# The over-subscription tests chained the runlist: upstream's
			# warning, once per switch into over-subscription, never a WARN.
			got=$(since | grep -c 'Runlist is getting oversubscribed due to')
			if [ "$got" -ge 1 ]; then ok "over-subscription warned ($got line(s))"; else bad "no over-subscription warning in dmesg"; fi
			# The hang test's hang was declared after the timeout given.
			if [ -n "$hws_timeout" ]; then
				ms=${hws_timeout#*=}
				if since | grep -q "the preemption fence did not come in $ms ms"; then
					ok "HWS hang declared after queue_preemption_timeout_ms ($ms ms)"
				else
					bad "no HWS hang declared after $ms ms in dmesg"
				fi
			fi
			bin=rust/target/release
			if ! tr ',' '\n' <<<"$profile" | grep -qv '^gfx90a$'; then
				renamed svm-sched0 $bin/kfd-svm-hmm-tests retry_faults_vs_queue_preemption
			fi
			renamed fuzz-sched0 $bin/kfd-fuzz --calls 3000
			renamed storm-sched0 $bin/kfd-storm --lifecycles 16
		fi
		if [ "$policy" != 2 ] && [ "$mes" -gt 0 ]; then
			# The queues went to the MES: no GPU fell back, every queue
			# the tests made was removed (debugfs hqds lists none).
			got=$(since | grep -c 'is scheduled by MES.*offers no MES calls\|failed to add hardware queue to MES\|failed to remove hardware queue from MES')
			if [ "$got" = 0 ]; then ok "no MES fallback or failed MES request in dmesg"; else bad "$got MES fallback/failure line(s) in dmesg"; fi
			left=$(grep -c ' mes 0 queue 0: ' /sys/kernel/debug/kfd/hqds)
			if [ "$left" = 0 ]; then ok "no MES queue left"; else bad "$left MES queue(s) left in debugfs hqds"; fi
		fi
	else
		"$@" || rc=1
	fi
else
	rc=1
fi
unload || rc=1
load 2 "$orig" || rc=1
echo "$name-tests: $pass passed, $fail failed"
[ $fail = 0 ] || rc=1
exit $rc
