#include "runtime/eager.hpp"
#include "ir/ops.hpp"
#include <atomic>

namespace kiln::runtime {

namespace {
std::atomic<EagerExecutor> g_executor{nullptr};
}

void set_eager_executor(EagerExecutor executor) { g_executor.store(executor); }

std::vector<Tensor> run_eager(ir::OpKind kind, const ir::Attrs& attrs, std::span<const Tensor> inputs,
                              const std::vector<ir::ValueType>& result_types, const ir::SourceLoc& loc) {
  EagerExecutor executor = g_executor.load();
  if (!executor)
    throw Error(ErrorKind::unsupported, "kiln." + std::string(ir::op_info(kind).name) + " at " + loc.to_string() +
                                            ": eager execution needs the interpreter, which is not linked");
  return executor(kind, attrs, inputs, result_types, loc);
}

} // namespace kiln::runtime
