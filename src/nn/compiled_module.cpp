#include <kiln/compiled_module.hpp>
#include <kiln/io.hpp>

namespace kiln {

namespace {

std::shared_ptr<Session> session_for(const JitOptions& options) {
  if (options.compile.session) return options.compile.session;
  return std::make_shared<Session>(options.compile.tiers.value_or(TierPolicy::from_env()));
}

JitOptions with_session(JitOptions options, std::shared_ptr<Session> session) {
  if (options.name.empty()) options.name = "module";
  options.compile.session = std::move(session);
  return options;
}

} // namespace

CompiledModule::CompiledModule(std::shared_ptr<nn::Module> module, JitOptions options)
    : module_(std::move(module)), session_(session_for(options)),
      forward_([m = module_.get()](const Tensor& x) { return m->forward(x); }, with_session(options, session_)),
      forward_inputs_([m = module_.get()](const std::vector<Tensor>& xs) { return m->forward_inputs(xs); },
                      with_session(options, session_)) {
  if (!module_) throw Error(ErrorKind::spec, "compile(module): the module is null");
  session_->weights().set_all(module_->state_dict());
}

void CompiledModule::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  module_->load_state_dict(state, strict);
  session_->weights().set_all(module_->state_dict());
}

void CompiledModule::load_safetensors(const std::string& path, bool strict) {
  module_->load_safetensors(path, strict);
  session_->weights().set_all(module_->state_dict());
}

JitStats CompiledModule::stats() const {
  JitStats a = forward_.stats();
  const JitStats b = forward_inputs_.stats();
  a.entries += b.entries;
  a.hits += b.hits;
  a.misses += b.misses;
  a.uncached_calls += b.uncached_calls;
  a.evictions += b.evictions;
  a.compile_ms += b.compile_ms;
  a.per_entry.insert(a.per_entry.end(), b.per_entry.begin(), b.per_entry.end());
  return a;
}

void CompiledModule::clear_cache() {
  forward_.clear_cache();
  forward_inputs_.clear_cache();
}

void CompiledModule::set_fail_on_recompile(bool on) {
  forward_.set_fail_on_recompile(on);
  forward_inputs_.set_fail_on_recompile(on);
}

} // namespace kiln
