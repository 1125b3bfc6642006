#pragma once
#include <array>
#include <charconv>
#include <kiln/layout.hpp>
#include <kiln/tensor.hpp>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

// Flattening of nested spec / argument / result trees (vector, array, pair, tuple,
// map<string, ...>) into leaves with paths like "1.lo" or "0.2".
namespace kiln::detail {

struct TreeLeaf {
  enum class Kind { tensor, buffer, baked };
  std::string path;
  Kind kind = Kind::tensor;
  TensorLayout layout; // tensor and buffer leaves
  std::string baked;   // baked leaves: the value as text
};
using TreeLeaves = std::vector<TreeLeaf>;

inline std::string child_path(const std::string& parent, const std::string& child) {
  return parent.empty() ? child : parent + "." + child;
}

// A baked scalar as text, written into `buffer` (no allocation): what the spec keeps and a call's
// value is compared with. Floating point as printf's %.17g, 1-byte integers as numbers.
template <class T> std::string_view baked_chars(const T& v, std::array<char, 64>& buffer) {
  char *first = buffer.data(), *last = first + buffer.size();
  if constexpr (std::is_same_v<T, bool>)
    return v ? "true" : "false";
  else if constexpr (std::is_floating_point_v<T>)
    return {first, std::to_chars(first, last, v, std::chars_format::general, 17).ptr};
  else if constexpr (std::is_signed_v<T>)
    return {first, std::to_chars(first, last, static_cast<long long>(v)).ptr};
  else
    return {first, std::to_chars(first, last, static_cast<unsigned long long>(v)).ptr};
}

template <class T> std::string baked_text(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return v;
  } else {
    std::array<char, 64> buffer;
    return std::string(baked_chars(v, buffer));
  }
}

template <class T> struct is_std_vector : std::false_type {};
template <class T, class A> struct is_std_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_std_array : std::false_type {};
template <class T, size_t N> struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T> struct is_std_pair : std::false_type {};
template <class A, class B> struct is_std_pair<std::pair<A, B>> : std::true_type {};
template <class T> struct is_std_tuple : std::false_type {};
template <class... T> struct is_std_tuple<std::tuple<T...>> : std::true_type {};
template <class T> struct is_string_map : std::false_type {};
template <class V, class C, class A> struct is_string_map<std::map<std::string, V, C, A>> : std::true_type {};

template <class T> constexpr bool is_baked_v = std::is_arithmetic_v<T> || std::is_same_v<T, std::string>;

// Applies f(child, path) to each child of a container, in order (maps: sorted keys).
template <class C, class F> void for_each_child(C& c, const std::string& path, F&& f) {
  using T = std::remove_const_t<C>;
  if constexpr (is_std_vector<T>::value || is_std_array<T>::value) {
    size_t i = 0;
    for (auto& child : c)
      f(child, child_path(path, std::to_string(i++)));
  } else if constexpr (is_std_pair<T>::value) {
    f(c.first, child_path(path, "0"));
    f(c.second, child_path(path, "1"));
  } else if constexpr (is_std_tuple<T>::value) {
    size_t i = 0;
    std::apply([&](auto&... child) { (f(child, child_path(path, std::to_string(i++))), ...); }, c);
  } else if constexpr (is_string_map<T>::value) {
    for (auto& [key, child] : c)
      f(child, child_path(path, key));
  }
}

// Applies f(child) to each child of a container, in order (maps: sorted keys), without paths.
template <class C, class F> void for_each_element(C& c, F&& f) {
  using T = std::remove_const_t<C>;
  if constexpr (is_std_vector<T>::value || is_std_array<T>::value) {
    for (auto& child : c)
      f(child);
  } else if constexpr (is_std_pair<T>::value) {
    f(c.first);
    f(c.second);
  } else if constexpr (is_std_tuple<T>::value) {
    std::apply([&](auto&... child) { (f(child), ...); }, c);
  } else if constexpr (is_string_map<T>::value) {
    for (auto& [key, child] : c)
      f(child);
  }
}

template <class T>
constexpr bool is_container_v = is_std_vector<T>::value || is_std_array<T>::value || is_std_pair<T>::value ||
                                is_std_tuple<T>::value || is_string_map<T>::value;

// ---- specs: TensorLayout / BufferLayout leaves, baked scalars and strings, containers of them.
template <class S> struct SpecTraits {}; // not a spec type: no `traced`

template <class S>
concept SpecType = requires {
  typename SpecTraits<std::decay_t<S>>::traced;
};

template <> struct SpecTraits<TensorLayout> { using traced = Tensor; };
template <> struct SpecTraits<BufferLayout> { using traced = Tensor; };
template <class T>
requires is_baked_v<T>
struct SpecTraits<T> {
  using traced = T;
};
template <> struct SpecTraits<const char*> { using traced = std::string; };
template <class S, class A>
requires SpecType<S>
struct SpecTraits<std::vector<S, A>> {
  using traced = std::vector<typename SpecTraits<S>::traced>;
};
template <class S, size_t N>
requires SpecType<S>
struct SpecTraits<std::array<S, N>> {
  using traced = std::array<typename SpecTraits<S>::traced, N>;
};
template <class A, class B>
requires(SpecType<A>&& SpecType<B>) struct SpecTraits<std::pair<A, B>> {
  using traced = std::pair<typename SpecTraits<A>::traced, typename SpecTraits<B>::traced>;
};
template <class... S>
requires(SpecType<S>&&...) struct SpecTraits<std::tuple<S...>> {
  using traced = std::tuple<typename SpecTraits<S>::traced...>;
};
template <class S, class C, class A>
requires SpecType<S>
struct SpecTraits<std::map<std::string, S, C, A>> {
  using traced = std::map<std::string, typename SpecTraits<S>::traced>;
};

template <class S> using traced_t = typename SpecTraits<std::decay_t<S>>::traced;

template <class S> void flatten_spec(const S& spec, const std::string& path, TreeLeaves& out) {
  if constexpr (std::is_same_v<S, BufferLayout>) {
    out.push_back({path, TreeLeaf::Kind::buffer, spec, {}});
  } else if constexpr (std::is_same_v<S, TensorLayout>) {
    out.push_back({path, TreeLeaf::Kind::tensor, spec, {}});
  } else if constexpr (std::is_same_v<S, const char*>) {
    out.push_back({path, TreeLeaf::Kind::baked, {}, spec});
  } else if constexpr (is_baked_v<S>) {
    out.push_back({path, TreeLeaf::Kind::baked, {}, baked_text(spec)});
  } else {
    for_each_child(spec, path, [&](const auto& child, const std::string& p) { flatten_spec(child, p, out); });
  }
}

// Builds the traced argument (containers of symbolic tensors) from the staged argument tensors.
template <class S> traced_t<S> build_traced(const S& spec, const std::vector<Tensor>& args, size_t& next) {
  if constexpr (std::is_same_v<S, TensorLayout> || std::is_same_v<S, BufferLayout>) {
    return args.at(next++);
  } else if constexpr (std::is_same_v<S, const char*>) {
    return std::string(spec);
  } else if constexpr (is_baked_v<S>) {
    return spec;
  } else if constexpr (is_std_vector<S>::value) {
    traced_t<S> out;
    for (const auto& child : spec)
      out.push_back(build_traced(child, args, next));
    return out;
  } else if constexpr (is_string_map<S>::value) {
    traced_t<S> out;
    for (const auto& [key, child] : spec)
      out.emplace(key, build_traced(child, args, next));
    return out;
  } else if constexpr (is_std_array<S>::value) {
    traced_t<S> out;
    for (size_t i = 0; i < spec.size(); ++i)
      out[i] = build_traced(spec[i], args, next);
    return out;
  } else if constexpr (is_std_pair<S>::value) {
    auto first = build_traced(spec.first, args, next);
    return {std::move(first), build_traced(spec.second, args, next)};
  } else {
    return std::apply([&](const auto&... c) { return traced_t<S>{build_traced(c, args, next)...}; }, spec);
  }
}

// ---- call arguments: Tensors where the spec had layouts, the same baked values, same containers.
template <class A>
void flatten_args(const A& arg, const std::string& path, TreeLeaves& leaves, std::vector<Tensor>& tensors) {
  if constexpr (std::is_same_v<A, Tensor>) {
    leaves.push_back({path, TreeLeaf::Kind::tensor, arg.defined() ? arg.layout() : TensorLayout{}, {}});
    tensors.push_back(arg);
  } else if constexpr (std::is_same_v<A, const char*>) {
    leaves.push_back({path, TreeLeaf::Kind::baked, {}, arg});
  } else if constexpr (is_baked_v<A>) {
    leaves.push_back({path, TreeLeaf::Kind::baked, {}, baked_text(arg)});
  } else {
    static_assert(is_container_v<A>, "call arguments are Tensors, scalars, strings or containers of them");
    for_each_child(arg, path, [&](const auto& c, const std::string& p) { flatten_args(c, p, leaves, tensors); });
  }
}

// ---- results: Tensors become graph outputs; other leaves come back as they were at trace time.
template <class R> void flatten_result(const R& r, std::vector<Tensor>& out) {
  if constexpr (std::is_same_v<R, Tensor>)
    out.push_back(r);
  else if constexpr (is_container_v<R>)
    for_each_element(r, [&](const auto& c) { flatten_result(c, out); });
}

template <class R> void rebuild_result(R& r, std::span<const Tensor> outputs, size_t& next) {
  if constexpr (std::is_same_v<R, Tensor>) {
    if (next >= outputs.size()) throw Error(ErrorKind::internal, "the result has more tensors than the graph outputs");
    r = outputs[next++];
  } else if constexpr (is_container_v<R>) {
    for_each_element(r, [&](auto& c) { rebuild_result(c, outputs, next); });
  }
}
// `r` with every tensor leaf undefined: the shape of a result, as rebuild_result fills it. A traced
// result's tensors are symbolic and share their staging graph; a template that kept them would make
// every call copy (and count references to) them, from every calling thread.
template <class R> R without_tensors(R r) {
  if constexpr (std::is_same_v<R, Tensor>) {
    r = Tensor();
  } else if constexpr (is_container_v<R>) {
    for_each_element(r, [](auto& c) { c = without_tensors(std::move(c)); });
  }
  return r;
}
template <class R> void rebuild_result(R& r, const std::vector<Tensor>& outputs, size_t& next) {
  rebuild_result(r, std::span<const Tensor>(outputs), next);
}

// ---- the warm call: arguments walked without building paths.

// The tensors of one call, inline up to four: a call of a few arguments or results allocates no
// list for them.
class TensorList {
public:
  void push_back(const Tensor& t) {
    if (spill_.empty() && size_ < inline_.size()) {
      inline_[size_++] = t;
      return;
    }
    if (spill_.empty()) spill_.assign(inline_.begin(), inline_.end());
    spill_.push_back(t);
    ++size_;
  }
  // n default (undefined) tensors, replacing what the list held.
  void assign_empty(size_t n) {
    if (size_ != 0) {
      inline_ = {};
      spill_.clear();
    }
    if (n > inline_.size()) spill_.resize(n);
    size_ = n;
  }
  size_t size() const { return size_; }
  std::span<Tensor> span() { return {spill_.empty() ? inline_.data() : spill_.data(), size_}; }
  std::span<const Tensor> span() const { return {spill_.empty() ? inline_.data() : spill_.data(), size_}; }

private:
  std::array<Tensor, 4> inline_;
  std::vector<Tensor> spill_;
  size_t size_ = 0;
};

// What decides a call's leaf paths and baked values besides its C++ argument types: the sizes of
// its vectors and maps, and as text its map keys and scalars. A call whose structure equals that of
// an earlier call that passed the full check has the same paths and baked values.
struct ArgumentStructure {
  const std::type_info* args_type = nullptr; // std::tuple<Args...> of the call
  std::vector<uint64_t> sizes;
  std::vector<std::string> texts;
  friend bool operator==(const ArgumentStructure& a, const ArgumentStructure& b) {
    return *a.args_type == *b.args_type && a.sizes == b.sizes && a.texts == b.texts;
  }
};

// Walks a call's arguments once: gathers the tensor leaves and either compares the structure with
// an expected one as it goes (allocating nothing but past four tensors) or records it.
class ArgumentWalk {
public:
  // Compares with `expected`; a null `expected` never matches.
  ArgumentWalk(const ArgumentStructure* expected, const std::type_info& args_type)
      : expected_(expected), matched_(expected && expected->args_type && *expected->args_type == args_type) {}
  // Records the structure into `recording`.
  ArgumentWalk(ArgumentStructure& recording, const std::type_info& args_type) : recording_(&recording) {
    recording.args_type = &args_type;
  }

  void tensor(const Tensor& t) { tensors_.push_back(t); }
  void size(uint64_t n) {
    if (recording_)
      recording_->sizes.push_back(n);
    else
      matched_ = matched_ && next_size_ < expected_->sizes.size() && expected_->sizes[next_size_++] == n;
  }
  void text(std::string_view t) {
    if (recording_)
      recording_->texts.emplace_back(t);
    else
      matched_ = matched_ && next_text_ < expected_->texts.size() && expected_->texts[next_text_++] == t;
  }

  // Whether the whole structure equalled the expected one.
  bool matched() const {
    return matched_ && next_size_ == expected_->sizes.size() && next_text_ == expected_->texts.size();
  }
  std::span<const Tensor> tensors() const { return tensors_.span(); }

private:
  const ArgumentStructure* expected_ = nullptr;
  ArgumentStructure* recording_ = nullptr;
  bool matched_ = false;
  size_t next_size_ = 0, next_text_ = 0;
  TensorList tensors_;
};

// Arguments that are all tensors: their structure is their count, which their type says.
template <class... Args> constexpr bool all_tensors_v = sizeof...(Args) > 0 && (std::is_same_v<Args, Tensor> && ...);

// Whether a tensor-only call matches `expected` (its structure is its type alone).
template <class... Args> bool tensors_match(const ArgumentStructure* expected) {
  return expected && expected->args_type && *expected->args_type == typeid(std::tuple<Args...>);
}

// Calls `run` with the tensors of a tensor-only call as one span: the argument itself for one, a
// copy of the handles for more.
template <class Run, class... Args> decltype(auto) with_tensor_span(const Run& run, const Args&... args) {
  if constexpr (sizeof...(Args) == 1) {
    return run(std::span<const Tensor>(std::addressof(args)..., 1));
  } else {
    const std::array<Tensor, sizeof...(Args)> tensors{args...};
    return run(std::span<const Tensor>(tensors));
  }
}

// flatten_args's walk for the warm call: the same leaves in the same order, without paths.
template <class A> void walk_args(const A& arg, ArgumentWalk& walk) {
  if constexpr (std::is_same_v<A, Tensor>) {
    walk.tensor(arg);
  } else if constexpr (std::is_same_v<A, const char*>) {
    walk.text(arg);
  } else if constexpr (std::is_same_v<A, std::string>) {
    walk.text(arg);
  } else if constexpr (is_baked_v<A>) {
    std::array<char, 64> buffer;
    walk.text(baked_chars(arg, buffer));
  } else if constexpr (is_std_vector<A>::value) {
    walk.size(arg.size());
    for (const auto& child : arg)
      walk_args(child, walk);
  } else if constexpr (is_string_map<A>::value) {
    walk.size(arg.size());
    for (const auto& [key, child] : arg) {
      walk.text(key);
      walk_args(child, walk);
    }
  } else {
    static_assert(is_container_v<A>, "call arguments are Tensors, scalars, strings or containers of them");
    for_each_element(arg, [&](const auto& child) { walk_args(child, walk); });
  }
}

} // namespace kiln::detail
