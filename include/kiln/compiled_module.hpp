#pragma once
#include <concepts>
#include <functional>
#include <kiln/jit.hpp>
#include <kiln/nn.hpp>

namespace kiln {

// An nn::Module compiled at call time (lucid's compile(model), torch.compile(model)): each call
// with a new input signature traces forward, later ones hit the entry (JitOptions say how dims
// become symbolic, the recompile limit, the cache's capacity). The module's parameters and buffers
// live in the session's weight registry under their full names, so both tiers read them in place;
// load_state_dict replaces them there too, and the next call of every entry computes with the new
// values (each tier refreshes its packed forms) without tracing again.
class CompiledModule {
public:
  CompiledModule(std::shared_ptr<nn::Module> module, JitOptions options);

  Tensor operator()(const Tensor& input) const { return forward_(input); }
  // Modules of several inputs (nn::Module::forward_inputs).
  Tensor operator()(const std::vector<Tensor>& inputs) const { return forward_inputs_(inputs); }

  // Delegated to the module.
  std::vector<Tensor> parameters() const { return module_->parameters(); }
  std::vector<std::pair<std::string, Tensor>> named_parameters() const { return module_->named_parameters(); }
  std::map<std::string, Tensor> state_dict() const { return module_->state_dict(); }
  // nn::Module::load_state_dict, then the registry: new weight versions, no retrace. Not while
  // another thread calls the module.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);
  void load_safetensors(const std::string& path, bool strict = true);

  // Entries, hits and misses of both call forms together.
  JitStats stats() const;
  void clear_cache();
  void set_fail_on_recompile(bool on);
  nn::Module& module() const { return *module_; }
  Session& session() const { return *session_; }

private:
  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<Session> session_;
  JitFunction<std::function<Tensor(const Tensor&)>> forward_;
  JitFunction<std::function<Tensor(const std::vector<Tensor>&)>> forward_inputs_;
};

// compile(module, {.dynamic = Dynamic::on}). Without a session in options.compile the module gets
// its own (its registry holds the module's weights), with options.compile.tiers as its policy.
template <class M>
requires std::derived_from<M, nn::Module> CompiledModule compile(std::shared_ptr<M> module, JitOptions options = {}) {
  return CompiledModule(std::move(module), std::move(options));
}

} // namespace kiln
