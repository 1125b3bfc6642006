#pragma once
#include "jit/elementwise/region.hpp"
#include <cstddef>
#include <vector>

namespace kiln::jitc {

// Assigns vector registers to a region's values while one loop body is generated, node by node.
// Values are the nodes (0..N-1) and the inputs (N + k). Inputs and constant nodes are reloaded
// from memory when needed again; other nodes are spilled to their stack slot when their register
// is taken. Victims are the values whose next use is furthest away (Belady).
class RegisterAllocator {
public:
  class Listener {
  public:
    virtual void load(int reg, int value) = 0;  // input, constant, or a node spilled earlier
    virtual void spill(int reg, int value) = 0; // a computed node that is still needed

  protected:
    ~Listener() = default;
  };

  RegisterAllocator(const Region& region, int num_registers, Listener& listener);

  int value_of_arg(int32_t arg) const;
  // The register holding value (loading it if needed), pinned until unpin_all().
  int materialise(int value, size_t position);
  // A register holding nothing, pinned until unpin_all(); position is the node being generated.
  int acquire(size_t position);
  void bind(int reg, int value);
  void release(int reg);
  // Frees the value's register when nothing at or after position reads it.
  void release_if_dead(int value, size_t position);
  void unpin_all();

private:
  size_t next_use(int value, size_t position) const;
  bool rematerialisable(int value) const;

  const Region& region_;
  Listener& listener_;
  std::vector<std::vector<size_t>> uses_; // per value: positions of the nodes that read it
  std::vector<int> holder_;               // per register: value or -1
  std::vector<bool> pinned_;
  std::vector<int> register_of_; // per value: register or -1
  std::vector<bool> spilled_;
};

} // namespace kiln::jitc
