#include "fuzz/round_trip.hpp"
#include <kiln/io.hpp>

namespace kiln::fuzz {

int check_npy(const uint8_t* data, size_t size) {
  const std::string input = write_input("input.npy", data, size);
  Tensor loaded;
  try {
    loaded = load_npy(input);
  } catch (const Error&) {
    return 0;
  }
  volatile uint8_t sink = touch_every_byte(loaded);
  (void)sink;
  // An array kiln accepted must survive kiln's writer and reader unchanged.
  const std::string output = scratch_dir() + "/output.npy";
  Tensor reloaded;
  try {
    save_npy(output, loaded);
    reloaded = load_npy(output);
  } catch (const Error& e) {
    throw CheckFailure(std::string("an accepted array does not save and load back: ") + e.what());
  }
  check_same_tensor(loaded, reloaded, "the array");
  return 0;
}

} // namespace kiln::fuzz
