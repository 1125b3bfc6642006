// Tracing, staged graphs, compiled callables, sessions and the call-time trace cache: the C++
// non-template halves (TraceSession, CallableCore, TraceCache) that kiln's Python tree code drives.
#include "bindings.hpp"
#include "ir/graph.hpp"
#include <typeindex>

namespace kiln::python {
namespace {

using detail::TreeLeaf;
using detail::TreeLeaves;

// One trace: the session lives until finish() or abort(), so the thread's graph scope ends then.
class PyTraceSession {
public:
  PyTraceSession(const std::string& name, bool allow_subgraphs, const std::vector<std::string>& extensions)
      : session_(std::make_unique<detail::TraceSession>(StageOptions{name, allow_subgraphs, extensions}, "main")) {}
  std::vector<Tensor> add_inputs(const TreeLeaves& leaves) { return live().add_inputs(leaves); }
  std::shared_ptr<const ir::Module> finish(const std::vector<Tensor>& outputs) {
    auto module = live().finish(outputs);
    session_.reset();
    return module;
  }
  void abort() { session_.reset(); }

private:
  detail::TraceSession& live() {
    if (!session_) throw Error(ErrorKind::spec, "this trace has already finished");
    return *session_;
  }
  std::unique_ptr<detail::TraceSession> session_;
};

// A Python object kept by C++ (a result template in a trace-cache entry); released with the GIL.
struct PyHeld {
  py::object value;
  ~PyHeld() {
    if (!Py_IsInitialized()) {
      value.release();
      return;
    }
    py::gil_scoped_acquire gil;
    value = py::object();
  }
};

std::map<std::string, Tensor> weights_from_py(const py::dict& weights) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, value] : weights)
    out[name.cast<std::string>()] = tensor_from_py(value, "weight '" + name.cast<std::string>() + "'");
  return out;
}

CompileOptions compile_options(const py::dict& weights, const std::string& name,
                               const std::vector<std::string>& extensions, bool allow_subgraphs,
                               const std::shared_ptr<Session>& session) {
  return CompileOptions{weights_from_py(weights), name, extensions, allow_subgraphs, session, std::nullopt};
}

// Session.stats() and totals() as plain Python values, one dict key per field of the C++ structs.
py::dict signature_stats_to_py(const SignatureStats& s) {
  py::dict d;
  d["callable"] = s.callable;
  d["signature"] = s.signature;
  d["tier"] = s.tier;
  d["calls"] = s.calls;
  d["calls_per_tier"] = s.calls_per_tier;
  d["total_ms"] = s.total_ms;
  d["median_ms"] = s.median_ms;
  d["interp_compile_ms"] = s.interp_compile_ms;
  d["jit_compile_ms"] = s.jit_compile_ms;
  d["arena_bytes"] = s.arena_bytes;
  d["weight_bytes"] = s.weight_bytes;
  d["constant_bytes"] = s.constant_bytes;
  d["device_bytes"] = s.device_bytes;
  d["ops_per_lowering"] = s.ops_per_lowering;
  d["jit_error"] = s.jit_error;
  return d;
}

py::dict session_totals_to_py(const SessionTotals& t) {
  py::dict d;
  d["signatures_compiled"] = t.signatures_compiled;
  d["evictions"] = t.evictions;
  d["promotions"] = t.promotions;
  d["failed_promotions"] = t.failed_promotions;
  return d;
}

// A kiln.Error caught in Python, back as the kiln::Error it was (its kind, its message without the
// "<kind> error: " prefix str() carries).
Error error_from_py(const py::object& error) {
  const std::string kind = py::str(error.attr("kind"));
  std::string message = py::str(error);
  const std::string prefix = kind + " error: ";
  if (message.starts_with(prefix)) message.erase(0, prefix.size());
  for (ErrorKind k :
       {ErrorKind::spec, ErrorKind::shape, ErrorKind::dtype, ErrorKind::weight, ErrorKind::parse, ErrorKind::io,
        ErrorKind::unsupported, ErrorKind::internal, ErrorKind::extension, ErrorKind::numeric, ErrorKind::memory})
    if (kind == error_kind_name(k)) return Error(k, message);
  return Error(ErrorKind::internal, message);
}

Dynamic dynamic_of(const py::object& dynamic) {
  if (dynamic.is_none()) return Dynamic::automatic;
  return dynamic.cast<bool>() ? Dynamic::on : Dynamic::off;
}

const std::type_index kPythonArgs = typeid(py::object);

} // namespace

void bind_compile(py::module_& m) {
  py::class_<TreeLeaf>(m, "TreeLeaf")
      .def(py::init([](std::string path, const std::string& kind, std::optional<TensorLayout> layout,
                       std::string baked) {
             TreeLeaf leaf{std::move(path), TreeLeaf::Kind::tensor, layout.value_or(TensorLayout{}), std::move(baked)};
             if (kind == "buffer")
               leaf.kind = TreeLeaf::Kind::buffer;
             else if (kind == "baked")
               leaf.kind = TreeLeaf::Kind::baked;
             else if (kind != "tensor")
               throw Error(ErrorKind::internal, "leaf kind '" + kind + "'");
             return leaf;
           }),
           py::arg("path"), py::arg("kind"), py::arg("layout") = py::none(), py::arg("baked") = "")
      .def_readonly("path", &TreeLeaf::path)
      .def_readonly("layout", &TreeLeaf::layout)
      .def_readonly("baked", &TreeLeaf::baked);

  py::class_<ir::Module, std::shared_ptr<ir::Module>>(m, "_Module");

  py::class_<PyTraceSession>(m, "_TraceSession")
      .def(py::init<const std::string&, bool, const std::vector<std::string>&>())
      .def("add_inputs", &PyTraceSession::add_inputs)
      .def("finish",
           [](PyTraceSession& s, const std::vector<Tensor>& outputs) {
             return std::const_pointer_cast<ir::Module>(s.finish(outputs));
           })
      .def("abort", &PyTraceSession::abort);

  py::class_<StagedGraph>(m, "StagedGraph", "A traced graph: prints as MLIR text, saves, parses back.")
      .def(py::init([](const std::shared_ptr<ir::Module>& module, const TreeLeaves& leaves) {
        return StagedGraph(module, leaves);
      }))
      .def("to_mlir", &StagedGraph::to_mlir)
      .def("save", &StagedGraph::save, py::arg("path"))
      .def("__str__", &StagedGraph::to_mlir)
      .def("__repr__", [](const StagedGraph& g) { return "<StagedGraph @" + g.graph().name + ">"; })
      .def_property_readonly("_module",
                             [](const StagedGraph& g) { return std::const_pointer_cast<ir::Module>(g.module_ptr()); })
      .def_property_readonly("_leaves", &StagedGraph::input_leaves);
  m.def("load_staged", &load_staged, py::arg("path"));
  m.def("parse_staged", &parse_staged, py::arg("text"), py::arg("source_name") = "<string>");

  py::class_<Session, std::shared_ptr<Session>>(m, "Session",
                                                "Tiers, the executable cache and the weight registry callables share.")
      // Unset keywords take the environment's values (KILN_JIT, KILN_PROMOTE_AFTER, KILN_JIT_ASYNC,
      // KILN_PROMOTE_TO, KILN_CACHE_CAPACITY), as a C++ Session() does.
      .def(py::init([](const std::optional<std::string>& mode, std::optional<int> promote_after,
                       std::optional<bool> async, size_t capacity, const std::optional<std::string>& promote_to) {
             TierPolicy policy = TierPolicy::from_env();
             if (mode) policy.mode = parse_jit_mode(*mode, "Session mode");
             if (promote_after) {
               if (*promote_after < 0)
                 throw Error(ErrorKind::spec,
                             "Session promote_after=" + std::to_string(*promote_after) + ": expected 0 or more calls");
               policy.promote_after = *promote_after;
             }
             policy.async = async.value_or(policy.async);
             if (promote_to && *promote_to != "jit" && *promote_to != "accelerator")
               throw Error(ErrorKind::spec,
                           "Session promote_to='" + *promote_to + "': expected 'jit' or 'accelerator'");
             policy.promote_to = promote_to.value_or(policy.promote_to);
             return std::make_shared<Session>(policy, capacity);
           }),
           py::arg("mode") = py::none(), py::arg("promote_after") = py::none(), py::arg("async_compile") = py::none(),
           py::arg("cache_capacity") = 0, py::arg("promote_to") = py::none())
      .def_static("default", &Session::default_session)
      .def_property_readonly("mode", [](const Session& s) { return jit_mode_name(s.policy().mode); })
      .def_property_readonly("promote_after", [](const Session& s) { return s.policy().promote_after; })
      .def_property_readonly("async_compile", [](const Session& s) { return s.policy().async; })
      .def_property_readonly("promote_to", [](const Session& s) { return s.policy().promote_to; })
      .def("stats",
           [](const Session& s) {
             py::list out;
             for (const SignatureStats& entry : s.stats())
               out.append(signature_stats_to_py(entry));
             return out;
           })
      .def("totals", [](const Session& s) { return session_totals_to_py(s.totals()); })
      .def("stats_table", &Session::stats_table)
      .def("wait_for_promotions", &Session::wait_for_promotions, py::call_guard<py::gil_scoped_release>())
      .def("set_weight", [](Session& s, const std::string& name, const py::object& value) {
        s.weights().set(name, tensor_from_py(value, "weight '" + name + "'"));
      });

  py::class_<detail::CallableCore, std::shared_ptr<detail::CallableCore>>(m, "_CallableCore")
      .def(py::init([](const std::shared_ptr<ir::Module>& module, const TreeLeaves& leaves, const py::dict& weights,
                       const std::string& name, const std::vector<std::string>& extensions, bool allow_subgraphs,
                       const std::shared_ptr<Session>& session) {
             return std::make_shared<detail::CallableCore>(
                 module, leaves, compile_options(weights, name, extensions, allow_subgraphs, session));
           }),
           py::arg("module"), py::arg("leaves"), py::arg("weights"), py::arg("name"), py::arg("custom_extensions"),
           py::arg("allow_subgraphs"), py::arg("session"))
      // The GIL is released while the graph runs, so Python threads call one callable in parallel.
      .def("call", &detail::CallableCore::call, py::call_guard<py::gil_scoped_release>())
      .def("last_tier", &detail::CallableCore::last_tier)
      .def_property_readonly(
          "_module", [](const detail::CallableCore& c) { return std::const_pointer_cast<ir::Module>(c.module()); })
      .def_property_readonly("_leaves", &detail::CallableCore::spec);

  // F.as_subgraph's steps (kiln/functional.py drives them as SubgraphCaller does in C++).
  py::class_<detail::SubgraphBody>(m, "_SubgraphBody")
      .def_readonly("function", &detail::SubgraphBody::function)
      .def_property_readonly("result_template", [](const detail::SubgraphBody& b) {
        return static_cast<const PyHeld*>(b.result_template.get())->value;
      });
  m.def("_subgraphs_enabled", &detail::subgraphs_enabled);
  m.def("_subgraph_key", [](const std::string& name, const std::string& fn_id, const TreeLeaves& leaves) {
    return detail::subgraph_key(name, fn_id.c_str(), leaves);
  });
  m.def(
      "_find_subgraph", [](const std::string& key) { return detail::find_subgraph(key); },
      py::return_value_policy::reference);
  m.def("_begin_subgraph", &detail::begin_subgraph);
  m.def(
      "_end_subgraph",
      [](const std::string& key, const std::vector<Tensor>& outputs, const py::object& result_template) {
        return &detail::end_subgraph(key, outputs, std::make_shared<PyHeld>(PyHeld{result_template}));
      },
      py::return_value_policy::reference);
  m.def("_abandon_subgraph", &detail::abandon_subgraph);
  m.def("_emit_call", [](const std::string& function, const std::vector<Tensor>& args) {
    PythonCallerLocation where;
    return detail::emit_call(function, args, std::source_location::current());
  });

  using Cache = detail::TraceCache;
  py::class_<Cache::Entry, std::shared_ptr<Cache::Entry>>(m, "_CacheEntry")
      .def_property_readonly("core", [](const Cache::Entry& e) { return e.core; })
      .def_property_readonly("result_template",
                             [](const Cache::Entry& e) { return static_cast<const PyHeld*>(e.callable.get())->value; });
  // Copies out, so that no Python object keeps a decision (and its in-flight mark) alive.
  py::class_<Cache::Decision>(m, "_CacheDecision")
      .def_property_readonly("entry", [](const Cache::Decision& d) { return d.entry; })
      .def_property_readonly("layouts", [](const Cache::Decision& d) { return d.layouts; })
      .def_property_readonly("symbolic", [](const Cache::Decision& d) { return d.symbolic; })
      .def_property_readonly("eager", [](const Cache::Decision& d) { return d.eager; });
  py::class_<JitEntryStats>(m, "JitEntryStats")
      .def_readonly("signature", &JitEntryStats::signature)
      .def_readonly("tier", &JitEntryStats::tier)
      .def_readonly("calls", &JitEntryStats::calls)
      .def_readonly("compile_ms", &JitEntryStats::compile_ms);
  py::class_<JitStats>(m, "JitStats")
      .def_readonly("entries", &JitStats::entries)
      .def_readonly("hits", &JitStats::hits)
      .def_readonly("misses", &JitStats::misses)
      .def_readonly("uncached_calls", &JitStats::uncached_calls)
      .def_readonly("evictions", &JitStats::evictions)
      .def_readonly("compile_ms", &JitStats::compile_ms)
      .def_readonly("per_entry", &JitStats::per_entry);
  py::class_<Cache, std::shared_ptr<Cache>>(m, "_TraceCache")
      .def(py::init([](const py::object& dynamic, int limit, size_t capacity, bool fail, const std::string& name,
                       const py::dict& weights, const std::shared_ptr<Session>& session) {
             JitOptions options;
             options.dynamic = dynamic_of(dynamic);
             options.recompile_limit = limit;
             options.capacity = capacity;
             options.fail_on_recompile = fail;
             options.name = name;
             options.compile = compile_options(weights, name, {}, true, session);
             return std::make_shared<Cache>(options);
           }),
           py::arg("dynamic"), py::arg("recompile_limit"), py::arg("capacity"), py::arg("fail_on_recompile"),
           py::arg("name"), py::arg("weights"), py::arg("session"))
      // Without the GIL: decide() waits while another thread traces the same signature, and that
      // trace runs Python.
      .def(
          "decide",
          [](Cache& c, const TreeLeaves& leaves, const std::vector<Tensor>& tensors) {
            return c.decide(leaves, tensors, kPythonArgs);
          },
          py::call_guard<py::gil_scoped_release>())
      .def("symbolic_trace_failed",
           [](Cache& c, const py::object& error, const std::vector<Tensor>& tensors) {
             return c.symbolic_trace_failed(error_from_py(error), tensors);
           })
      .def("insert",
           [](Cache& c, const TreeLeaves& leaves, const std::vector<Tensor>& tensors,
              const std::vector<TensorLayout>& layouts, const py::object& result_template,
              std::shared_ptr<detail::CallableCore> core, double ms) {
             auto held = std::make_shared<const PyHeld>(PyHeld{result_template});
             return c.insert(leaves, tensors, kPythonArgs, layouts, held, std::move(core), ms);
           })
      .def("count_hit", &Cache::count_hit)
      .def("stats", &Cache::stats)
      .def("clear", &Cache::clear)
      .def("set_fail_on_recompile", &Cache::set_fail_on_recompile)
      .def("compile_options_session", [](const Cache& c) { return c.options().compile.session; })
      .def("stage_name", [](const Cache& c) { return c.stage_options().name; });
}

} // namespace kiln::python
