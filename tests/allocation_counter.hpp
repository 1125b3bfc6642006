#pragma once
// Counts every heap allocation of the process (all threads, libkiln and libstdc++ included) while
// counting is on: this file's malloc family replaces glibc's for the whole program and forwards to
// glibc's own entry points. Include it in exactly one program that is not built with a sanitizer
// (which replaces malloc itself).
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* pointer, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* pointer);
}

namespace kiln::test {

inline std::atomic<bool> counting{false};
inline std::atomic<uint64_t> allocations{0};

// Out of line so that a debugger can stop at each counted allocation (gdb: break counted_allocation).
[[gnu::noinline]] inline void counted_allocation() { allocations.fetch_add(1, std::memory_order_relaxed); }

inline void count_allocation() {
  if (counting.load(std::memory_order_relaxed)) counted_allocation();
}

// Allocations made by `body` (on any thread).
template <class Body> uint64_t allocations_during(Body&& body) {
  const uint64_t before = allocations.load();
  counting.store(true);
  body();
  counting.store(false);
  return allocations.load() - before;
}

} // namespace kiln::test

extern "C" {
void* malloc(size_t size) {
  kiln::test::count_allocation();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  kiln::test::count_allocation();
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, size_t size) {
  kiln::test::count_allocation();
  return __libc_realloc(pointer, size);
}
void* memalign(size_t alignment, size_t size) {
  kiln::test::count_allocation();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  kiln::test::count_allocation();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  kiln::test::count_allocation();
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* pointer = __libc_memalign(alignment, size);
  if (!pointer && size) return ENOMEM;
  *out = pointer;
  return 0;
}
void free(void* pointer) { __libc_free(pointer); }
}
