#pragma once
#include <cstdint>

// The one thread pool of both tiers: OpenMP's, sized once, so the interpreter's loops and the JIT's
// regions share its threads instead of each starting their own.
namespace kiln::exec {

// Threads of the pool (OpenMP and Eigen): KILN_NUM_THREADS, default all cores.
int num_threads();

// The calling thread's index in the running parallel_for, in [0, num_threads()); 0 outside one.
// Kernels use it to pick their thread's part of the scratch the plan gave them.
int thread_index();

// Work (in elements) below which a loop stays on one thread: the fork/join cost would dominate.
inline constexpr int64_t kParallelMinWork = int64_t(1) << 15;
inline bool worth_parallel(int64_t work) { return work >= kParallelMinWork; }

// Runs body(i) for i in [0, count), on the pool's threads when `parallel`. The body must not
// throw: checks belong before the loop.
template <class Body> void parallel_for(int64_t count, bool parallel, Body&& body) {
#ifdef _OPENMP
  const int threads = parallel && count > 1 ? num_threads() : 1;
  // No region at all when serial: an inactive region (`if (false)`) would make a parallel loop
  // inside body (a GEMM split into blocks) a nested team, which libgomp starts with fresh threads
  // on every call instead of its pool; that made two-thread calls up to ten times slower.
  if (threads <= 1) {
    for (int64_t i = 0; i < count; ++i)
      body(i);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < count; ++i)
    body(i);
#else
  (void)parallel;
  for (int64_t i = 0; i < count; ++i)
    body(i);
#endif
}

} // namespace kiln::exec
