# SPDX-License-Identifier: GPL-2.0
# rkfd top-level Makefile.
#
#   make            build rkfd.ko, then the virtual GPU vgpu/amdgpu.ko, against
#                   KDIR (default: the cached test kernel)
#   make KDIR=/lib/modules/$(uname -r)/build   build for a real CONFIG_RUST=y host
#   make demo       set up, build, boot the test kernel, load rkfd and show it
#   make check      host tests + ABI check + module build + guest tests (KUnit, user space)
#   make soak       the guest fuzzer and process storm at 10x make check's counts
#   make bench-svm  the SVM benchmark beside test_hmm (figures, not a test)
#   make bench-queues  queue benchmark in the test VM (ROCr: signal round trip,
#                   SDMA GB/s vs memcpy, priority 15 vs 7 packets/s; raw KFD:
#                   PM4 packets/s, SDMA GB/s with 4 queues, queue create+destroy/s,
#                   events/s, issue #16 rounds (PM4 and SDMA), doorbell latency
#                   vs a user-space poller, doorbell traps per section) under the
#                   default sched_policy 0, then reloaded under sched_policy 2 the
#                   round trip, packets/s and create+destroy latency, the policy-0
#                   figures as ratios against policy 2; prints figures
#   make bench-isa  the shader interpreter: vector add and LDS reduction over
#                   1M elements on the virtual GPU (HIP) vs a C loop in the
#                   guest, and the host build's lane-ops/s; prints figures
#   make bench-upstream  upstream amdkfd vs rkfd in one guest with no GPU (the
#                   patched amdgpu with its own amdkfd, then rkfd + amdgpu
#                   kfd=external + the bridge): open(/dev/kfd) attempts and
#                   topology sysfs reads per second against bare baselines,
#                   and every difference in the no-GPU ABI tests; prints figures
#   make setup      install the toolchain and kernel source (idempotent)
#   make kernel     build (or reuse) the cached test kernel

SHELL := /bin/bash
ROOT := $(CURDIR)
KRUSTC ?= /usr/bin/rustc
KRUST_LIB_SRC ?= /usr/lib/rustlib/src/rust/library
KBINDGEN ?= $(or $(RKFD_CACHE),/var/cache/rkfd)/tools/bin/bindgen
KDIR ?= $(shell $(ROOT)/scripts/kdir)

.PHONY: all modules clean setup kernel demo check host-test abi-check guest-tools soak bench-svm bench-queues bench-isa bench-upstream

all: modules

# The virtual GPU (vgpu/, module "amdgpu") calls rkfd's kgd2kfd_* exports:
# it is built after rkfd, against rkfd's Module.symvers.
modules:
	@test -n "$(KDIR)" || { echo "no test kernel: run 'make kernel' or pass KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(ROOT) RUSTC=$(KRUSTC) BINDGEN=$(KBINDGEN) RUST_LIB_SRC=$(KRUST_LIB_SRC) modules
	$(MAKE) -C $(KDIR) M=$(ROOT)/vgpu KBUILD_EXTRA_SYMBOLS=$(ROOT)/Module.symvers RUSTC=$(KRUSTC) BINDGEN=$(KBINDGEN) RUST_LIB_SRC=$(KRUST_LIB_SRC) modules

clean:
	-test -z "$(KDIR)" || $(MAKE) -C $(KDIR) M=$(ROOT) RUSTC=$(KRUSTC) clean
	-test -z "$(KDIR)" || $(MAKE) -C $(KDIR) M=$(ROOT)/vgpu RUSTC=$(KRUSTC) clean
	-test -z "$(KDIR)" || $(MAKE) -C $(KDIR) M=$(ROOT)/bridge clean
	cd rust && cargo clean

setup:
	scripts/setup

kernel: setup
	scripts/build-kernel >/dev/null

demo:
	scripts/demo

check:
	scripts/check

soak:
	scripts/soak

bench-svm: modules
	scripts/bench-svm

bench-queues: modules
	$(MAKE) -s -C tests/rocr
	cd rust && cargo build -q --release -p kfd-tests
	scripts/vm-run --gpu $(or $(GPU),gfx90a) -- scripts/guest/bench-queues

bench-isa: modules
	scripts/bench-isa

# The patched amdgpu is built (or reused) and the bridge built by
# scripts/vm-run --kgd real (scripts/build-amdgpu).
bench-upstream: modules
	cd rust && cargo build -q --release -p kfd-tests
	scripts/vm-run --kgd real --no-load --append kunit.enable=0 -- scripts/guest/bench-upstream
