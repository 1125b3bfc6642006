#include "fuzz/round_trip.hpp"
#include <kiln/io.hpp>

namespace kiln::fuzz {

int check_safetensors(const uint8_t* data, size_t size) {
  const std::string input = write_input("input.safetensors", data, size);
  SafetensorsFile loaded;
  try {
    loaded = load_safetensors(input);
  } catch (const Error&) {
    return 0;
  }
  volatile uint8_t sink = 0;
  for (const auto& [name, tensor] : loaded.tensors)
    sink = sink + touch_every_byte(tensor);
  // A file kiln accepted must survive kiln's writer and reader unchanged.
  const std::string output = scratch_dir() + "/output.safetensors";
  SafetensorsFile reloaded;
  try {
    save_safetensors(output, loaded.tensors, loaded.metadata);
    reloaded = load_safetensors(output);
  } catch (const Error& e) {
    throw CheckFailure(std::string("an accepted file does not save and load back: ") + e.what());
  }
  if (reloaded.metadata != loaded.metadata) throw CheckFailure("metadata changed in the round-trip");
  if (reloaded.tensors.size() != loaded.tensors.size()) throw CheckFailure("tensor count changed in the round-trip");
  for (auto a = loaded.tensors.begin(), b = reloaded.tensors.begin(); a != loaded.tensors.end(); ++a, ++b) {
    if (a->first != b->first) throw CheckFailure("tensor names changed in the round-trip");
    check_same_tensor(a->second, b->second, "tensor '" + a->first + "'");
  }
  return 0;
}

} // namespace kiln::fuzz
