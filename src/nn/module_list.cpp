#include <kiln/nn.hpp>

namespace kiln::nn {

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const std::shared_ptr<Module>& module : modules)
    push_back(module);
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(children().size()), std::move(module));
}

Module& ModuleList::operator[](size_t index) const {
  if (index >= children().size())
    throw Error(ErrorKind::spec, describe() + ": index " + std::to_string(index) + " is out of range for " +
                                     std::to_string(children().size()) + " modules");
  return *children()[index].second;
}

} // namespace kiln::nn
