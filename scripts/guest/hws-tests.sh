#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest: the scheduling policies (issue #13 item 8, rkfd.sched_policy as
# upstream: 0 HWS, the default; 1 HWS without over-subscription; 2 no HWS,
# direct hqd_load).  The main guest runs every program under the default,
# policy 0 (gfx9/gfx10 GPUs on the HWS runlist, gfx11 GPUs on the MES);
# this script checks what that default must show and reloads rkfd under
# the other policies.  At the end it reloads rkfd (default policy) and the
# virtual GPU as they were, so the outer scripts/guest/run unloads them as
# usual.
#
#   scripts/guest/hws-tests.sh [--policy N] [--profile LIST] [-- CMD [ARGS...]]
#
# Without --policy: the default policy's checks, "hws-tests: N passed, N
# failed".  First, on the modules the main guest ran its programs on: no
# HQD is left occupied in debugfs hqds (gfx11 GPUs) and no GPU fell back from
# the MES or had an MES request fail.  Then that rkfd refuses to load with
# sched_policy=3 (upstream kfd_init), and a short reload with no
# sched_policy given (the default) and queue_preemption_timeout_ms=1000
# on the main guest's GPUs: the parameter reads 0, each gfx9/gfx10 GPU
# reports its hardware scheduler and each gfx11 GPU its MES scheduling in
# dmesg, and kfd-queue-tests' "hws:" checks (over-subscribed runlist,
# hang_count, hang_hws; closing line "queue-sched0: ...") logged upstream's
# over-subscription warning and declared the hang after the 1 s given
# (the main guest's own run waits upstream's 9 s for it).
#
# --policy N[,N...] (1 or 2; 0 works too): reloads rkfd under each N in
# turn on --profile (default gfx90a), checks that the parameter reads N and which GPUs
# report a hardware scheduler / MES scheduling (none under 2), closing
# line "hws-sched<N>: ...", and runs CMD or, without one, the policy's
# programs, each closing line renamed "<name>-sched<N>: ..." so that make
# check counts it apart from the default run's:
#   policy 2: kfd-queue-tests, kfd-fuzz (3000 calls), kfd-storm (16
#     lifecycles), tests/hsakmt/queues.sh and, on an all-gfx90a profile
#     (XNACK on), kfd-svm-hmm-tests' retry_faults_vs_queue_preemption
#     and evict_restore_busy_queues (XNACK off: eviction by hqd_destroy);
#   policy 1: kfd-queue-tests' "limit:" and "hws:" checks (it reads the
#     policy from /sys/module/rkfd/parameters/sched_policy and expects the
#     HWS's 32 slots, then EPERM);
#   policy 0: kfd-queue-tests.
# Exits non-zero if a check or a program failed.
set -u
cd "$RKFD_ROOT"
policy="" profile=gfx90a
while [ $# -gt 0 ]; do
	case $1 in
	--policy) policy=$2; shift 2 ;;
	--profile) profile=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
orig=${RKFD_GPU:-gfx90a}
bin=rust/target/release
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok $*"; }
bad() { fail=$((fail + 1)); echo "not ok $*" | tee /dev/kmsg; }
# renamed NAME CMD...: runs CMD, its closing "<layer>: N passed, N failed"
# line renamed "NAME: ..." (a make check layer of its own), then its wall
# time as scripts/guest/tests prints a program's ("# NAME took N s").
renamed() {
	local name=$1 start
	shift
	start=$EPOCHSECONDS
	"$@" </dev/null | sed -u -E "s/^[a-z][a-z0-9-]*: ([0-9]+ passed, [0-9]+ failed)/$name: \1/"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
	echo "# $name took $((EPOCHSECONDS - start)) s"
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
# load PROFILE [RKFD_PARAM...]: no sched_policy= among the parameters is
# the default policy.
load() {
	local gpus=$1
	shift
	insmod rkfd.ko "$@" || { bad "insmod rkfd.ko $*"; return 1; }
	insmod vgpu/amdgpu.ko profile="$gpus" || { bad "insmod amdgpu.ko profile=$gpus"; return 1; }
}
# count_gpus PROFILE PATTERN: the profile's GPUs whose name matches.
count_gpus() { tr ',' '\n' <<<"$1" | grep -c "$2"; }

# mark: logs a line the next `since` reads the kernel log from (counting
# lines goes wrong once the log's ring buffer is full).
mark() { marker="hws-tests: mark $$ ${EPOCHREALTIME/./}"; echo "$marker" >/dev/kmsg; }
since() { dmesg | sed -n "\|$marker|,\$p"; }

# started POLICY PROFILE: rkfd reports POLICY, and dmesg since the mark the
# hardware scheduler on each gfx9/gfx10 GPU of PROFILE and the MES on each
# gfx11 one (none of either under policy 2).
started() {
	local p=$1 gpus=$2 want got mes
	got=$(cat /sys/module/rkfd/parameters/sched_policy)
	if [ "$got" = "$p" ]; then ok "sched_policy reads $p"; else bad "sched_policy reads '$got', want $p"; fi
	want=$(count_gpus "$gpus" '^gfx9\|^gfx10')
	mes=$(count_gpus "$gpus" '^gfx11')
	if [ "$p" = 2 ]; then want=0 mes=0; fi
	got=$(since | grep -c 'hardware scheduler (sched_policy ')
	if [ "$got" = "$want" ]; then ok "HWS started on $got GPU(s)"; else bad "HWS started on $got GPU(s), want $want"; fi
	got=$(since | grep -c 'queues are scheduled by MES (sched_policy ')
	if [ "$got" = "$mes" ]; then ok "MES scheduling on $got GPU(s)"; else bad "MES scheduling on $got GPU(s), want $mes"; fi
}
# no_mes_failure: no GPU fell back from the MES, no MES request failed
# (in the kernel log since the mark).
no_mes_failure() {
	local got
	got=$(since | grep -c 'is scheduled by MES.*offers no MES calls\|failed to add hardware queue to MES\|failed to remove hardware queue from MES')
	if [ "$got" = 0 ]; then ok "no MES fallback or failed MES request in dmesg$1"; else bad "$got MES fallback/failure line(s) in dmesg$1"; fi
}

rc=0
if [ -z "$policy" ]; then
	# The default policy's checks.
	marker=""
	if [ "$(count_gpus "$orig" '^gfx11')" -gt 0 ]; then
		# Every program of the main guest has ended: every queue they
		# gave the MES was removed.
		# debugfs hqds dumps every HQD's registers (upstream's
		# seq_reg_dump rows); an empty one reads all zeros: count the CP
		# and SDMA dumps whose first row is not (the HIQ is left out).
		left=$(awk '/^ *(Inst 0,  CP Pipe|SDMA Engine)/ { h = 1; next }
			h { h = 0; for (i = 2; i <= NF; i++) if ($i != "00000000") { n++; break } }
			END { print n + 0 }' /sys/kernel/debug/kfd/hqds)
		if [ "$left" = 0 ]; then ok "no occupied HQD left after the main guest's programs"; else bad "$left occupied HQD(s) left in debugfs hqds after the main guest's programs"; fi
		# (The whole kernel log there is, no mark.)
		since() { dmesg; }
		no_mes_failure " (main guest)"
		since() { dmesg | sed -n "\|$marker|,\$p"; }
	fi
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
	# The virtual HWS answers a preemption in the doorbell write itself
	# (vgpu/cp.rs): only a hung one misses its fence, and the hang test
	# waits the whole timeout for it: 1 s of it rather than upstream's 9.
	if load "$orig" queue_preemption_timeout_ms=1000; then
		started 0 "$orig"
		renamed queue-sched0 $bin/kfd-queue-tests hws:
		if [ "$(count_gpus "$orig" '^gfx9\|^gfx10')" -gt 0 ]; then
			# The over-subscription test chained the runlist: upstream's
			# warning, once per switch into over-subscription, never a WARN.
			got=$(since | grep -c 'Runlist is getting oversubscribed due to')
			if [ "$got" -ge 1 ]; then ok "over-subscription warned ($got line(s))"; else bad "no over-subscription warning in dmesg"; fi
			if since | grep -q "the preemption fence did not come in 1000 ms"; then
				ok "HWS hang declared after queue_preemption_timeout_ms (1000 ms)"
			else
				bad "no HWS hang declared after 1000 ms in dmesg"
			fi
		fi
		[ "$(count_gpus "$orig" '^gfx11')" = 0 ] || no_mes_failure ""
	else
		rc=1
	fi
	unload || rc=1
	load "$orig" || rc=1
	echo "hws-tests: $pass passed, $fail failed"
	[ $fail = 0 ] || rc=1
	exit $rc
fi

# One policy after the other, the default's modules restored at the end.
for p in ${policy//,/ }; do
	pass=0 fail=0
	unload || rc=1
	mark
	if load "$profile" sched_policy="$p"; then
		started "$p" "$profile"
		if [ $# -gt 0 ]; then
			"$@" || rc=1
		else
			if [ "$p" = 1 ]; then
				# What policy 1 changes: the "limit:" check (the HWS's 32
				# slots, then EPERM) and the "hws:" ones (the over-subscribed
				# runlist refused past the VMIDs and slots, hangs).  The
				# whole kfd-queue-tests ran under the HWS in the main guest.
				renamed queue-sched1 $bin/kfd-queue-tests limit:
				renamed queue-sched1 $bin/kfd-queue-tests hws:
			else
				renamed "queue-sched$p" $bin/kfd-queue-tests
			fi
			if [ "$p" = 2 ]; then
				renamed fuzz-sched2 $bin/kfd-fuzz --calls 3000
				renamed storm-sched2 $bin/kfd-storm --lifecycles 16
				renamed hsakmt-queues-sched2 tests/hsakmt/queues.sh
				if ! tr ',' '\n' <<<"$profile" | grep -qv '^gfx90a$'; then
					renamed svm-sched2 $bin/kfd-svm-hmm-tests retry_faults_vs_queue_preemption
					renamed evict-sched2 $bin/kfd-svm-hmm-tests evict_restore_busy_queues
				fi
			fi
		fi
	else
		rc=1
	fi
	# The last policy's line counts the reload of the default too.
	if [ "$p" = "${policy##*,}" ]; then
		unload || rc=1
		load "$orig" || rc=1
	fi
	echo "hws-sched$p: $pass passed, $fail failed"
	[ $fail = 0 ] || rc=1
done
exit $rc
