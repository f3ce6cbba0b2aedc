// SPDX-License-Identifier: GPL-2.0
// Guest test (tests/hip/run.sh): shaders that never end, and what must
// stop them.  Each case runs in a child process (the parent never starts
// HIP): the child launches a kernel of 4 workgroups that
// loops for ever (the queue's worker and a helper worker each run one of
// them, the others wait), waits until the kernel says it runs, then:
//   exit      the child leaves with _exit(): /dev/kfd's release destroys
//             its queues under the running shader
//   kill      the parent SIGKILLs it
//   munmap    (XNACK on) the kernel loops reading the child's mmap'ed
//             memory through retry faults, counting its passes; once a
//             pass is complete (the retry faults were resolved: a first
//             fault that was fatal fails the case, the child dies before
//             it is ready) the child munmaps it: the shader's next access
//             is a fault nothing resolves, a VM fault, and ROCr ends the
//             child with its memory-fault message.  Not in the default
//             list (gfx90a with XNACK on only: XNACK needs every GPU of
//             the process to support it): scripts/guest/svm-hmm-tests.sh
//             runs it in its one-gfx90a reload (`run.sh stress:munmap`).
// Each passes when the child is gone as it should be (run.sh's timeout
// bounds how long that may take: preemption waits for one time slice,
// never for the shader's end); the kernel log must stay clean (vm-run
// checks it).  The programs run after this one in the same guest (suite,
// ...) show the GPU still runs kernels.
// subtests: exit kill
// timeout: 300
#include <hip/hip_runtime.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static const int WGS = 4;

__global__ void forever(volatile unsigned *started, volatile unsigned *stop) {
	if (threadIdx.x == 0)
		started[blockIdx.x] = 1;
	while (*stop == 0) {
	}
}

// started[WGS + w]: the passes over p workgroup w completed.
__global__ void reader(volatile unsigned *started, const volatile unsigned *p, int n, unsigned *sink) {
	if (threadIdx.x == 0)
		started[blockIdx.x] = 1;
	unsigned s = 0;
	for (;;) {
		for (int i = threadIdx.x; i < n; i += blockDim.x)
			s += p[i];
		if (s == 0xfffffffeu)
			break;
		__syncthreads();
		if (threadIdx.x == 0)
			started[WGS + blockIdx.x] += 1;
	}
	sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// The target build.sh compiled this binary for (--arch gfx1030 defines
// RKFD_HIP_ARCH_gfx1030); HIP runs it on a device of that target only.
#ifdef RKFD_HIP_ARCH_gfx1030
#define RKFD_HIP_ARCH "gfx1030"
#else
#define RKFD_HIP_ARCH "gfx90a"
#endif

static int use_target() {
	int count = 0;
	if (hipGetDeviceCount(&count) != hipSuccess)
		return -1;
	for (int d = 0; d < count; d++) {
		hipDeviceProp_t p;
		if (hipGetDeviceProperties(&p, d) == hipSuccess &&
		    strncmp(p.gcnArchName, RKFD_HIP_ARCH, strlen(RKFD_HIP_ARCH)) == 0)
			return hipSetDevice(d) == hipSuccess ? d : -1;
	}
	return -1;
}

// Waits (at most 120 s: a bound for a broken engine) until a workgroup
// of the kernel said it runs (`passes`: completed a pass over the mapped
// memory, started[WGS..]), then a little more for the other workers to
// start theirs.  (Not all 4: a worker runs one workgroup at a time, and
// these never end.)
static bool wait_started(volatile unsigned *started, bool passes) {
	for (int k = 0; k < 120000; k++) {
		int n = 0;
		for (int w = 0; w < WGS; w++)
			n += started[passes ? WGS + w : w] != 0;
		if (n > 0) {
			usleep(300 * 1000);
			n = 0;
			for (int w = 0; w < WGS; w++)
				n += started[w] != 0;
			printf("  %d of %d workgroups running\n", n, WGS);
			fflush(stdout);
			return true;
		}
		usleep(1000);
	}
	return false;
}

// The child: launches the case's kernel, says so on `ready`, then ends as
// the case asks.  Its exit status: 3 if the kernel never ran.
static void child(const char *name, int ready) {
	bool mapped = strcmp(name, "munmap") == 0;
	if (mapped)
		setenv("HSA_XNACK", "1", 1);
	if (use_target() < 0)
		_exit(2);
	printf("  %s: child %d started HIP\n", name, (int)getpid());
	fflush(stdout);
	unsigned *started, *stop;
	if (hipHostMalloc(&started, 64 * sizeof(unsigned)) != hipSuccess || hipMalloc(&stop, 64) != hipSuccess ||
	    hipMemset(stop, 0, 64) != hipSuccess)
		_exit(2);
	memset(started, 0, 64 * sizeof(unsigned));
	const int n = 8 * 1024; // 8 pages
	unsigned *p = nullptr, *sink = nullptr;
	if (mapped) {
		p = (unsigned *)mmap(nullptr, n * sizeof(unsigned), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				     -1, 0);
		if (p == MAP_FAILED || hipMalloc(&sink, WGS * 64 * sizeof(unsigned)) != hipSuccess)
			_exit(2);
		for (int i = 0; i < n; i++)
			p[i] = i;
		hipLaunchKernelGGL(reader, dim3(WGS), dim3(64), 0, 0, started, p, n, sink);
	} else {
		hipLaunchKernelGGL(forever, dim3(WGS), dim3(64), 0, 0, started, stop);
	}
	if (hipGetLastError() != hipSuccess)
		_exit(2);
	printf("  %s: kernel launched\n", name);
	fflush(stdout);
	if (!wait_started(started, mapped))
		_exit(3);
	if (mapped) {
		printf("  munmap: a workgroup read the mapped memory through (retry faults resolved)\n");
		fflush(stdout);
	}
	(void)!write(ready, "r", 1);
	if (mapped) {
		usleep(200 * 1000);
		munmap(p, n * sizeof(unsigned));
		// ROCr ends the process on the memory fault; if it does not,
		// synchronizing waits for a kernel that cannot end: run.sh's
		// timeout says so.
		hipDeviceSynchronize();
		_exit(4);
	}
	if (strcmp(name, "exit") == 0) {
		usleep(200 * 1000);
		_exit(0);
	}
	// "kill": wait for the parent's SIGKILL.
	for (;;)
		pause();
}

static bool run_case(const char *name) {
	int fds[2];
	if (pipe(fds) != 0)
		return false;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		close(fds[0]);
		child(name, fds[1]);
		_exit(5);
	}
	close(fds[1]);
	char c;
	bool ready = read(fds[0], &c, 1) == 1;
	close(fds[0]);
	if (ready && strcmp(name, "kill") == 0) {
		usleep(200 * 1000);
		kill(pid, SIGKILL);
	}
	int status = 0;
	if (waitpid(pid, &status, 0) != pid) {
		printf("  %s: waitpid: %s\n", name, strerror(errno));
		return false;
	}
	if (!ready) {
		printf("  %s: the child's kernel did not start (status %#x)\n", name, status);
		return false;
	}
	bool want;
	if (strcmp(name, "exit") == 0)
		want = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	else if (strcmp(name, "kill") == 0)
		want = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
	else // munmap: ROCr aborts on the fault, not our _exit(4)
		want = !(WIFEXITED(status) && WEXITSTATUS(status) == 4);
	if (!want)
		printf("  %s: child ended with status %#x\n", name, status);
	return want;
}

// Arguments: the cases to run (default exit and kill; munmap by name only).
int main(int argc, char **argv) {
	static const char *defaults[] = {"exit", "kill"};
	const char *const *cases = argc > 1 ? argv + 1 : defaults;
	int n = argc > 1 ? argc - 1 : 2;
	int failed = 0;
	for (int i = 0; i < n; i++) {
		const char *name = cases[i];
		bool ok = run_case(name);
		printf("%s %s\n", ok ? "PASS" : "FAIL", name);
		fflush(stdout);
		failed += !ok;
	}
	return failed ? 1 : 0;
}
