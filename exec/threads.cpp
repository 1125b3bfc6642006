#include "exec/threads.hpp"
#include "core/environment.hpp"
#include <Eigen/Core>
#include <algorithm>
#include <thread>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace kiln::exec {

namespace {

int threads_from_environment() {
  return int(env::num_threads().value_or(std::max(1, int(std::thread::hardware_concurrency()))));
}

int configure_threads() {
  const int threads = threads_from_environment();
  Eigen::setNbThreads(threads);
#ifdef _OPENMP
  omp_set_num_threads(threads);
#endif
  return threads;
}

} // namespace

int thread_index() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

int num_threads() {
  static const int threads = configure_threads();
  return threads;
}

} // namespace kiln::exec
