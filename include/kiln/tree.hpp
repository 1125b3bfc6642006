#pragma once
#include <array>
#include <kiln/layout.hpp>
#include <kiln/tensor.hpp>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
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

template <class T> std::string baked_text(const T& v) {
  std::ostringstream s;
  if constexpr (std::is_same_v<T, bool>)
    s << (v ? "true" : "false");
  else if constexpr (std::is_floating_point_v<T>)
    s.precision(17), s << v;
  else if constexpr (std::is_arithmetic_v<T> && sizeof(T) == 1)
    s << int(v);
  else
    s << v;
  return s.str();
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
    for_each_child(r, "", [&](const auto& c, const std::string&) { flatten_result(c, out); });
}

template <class R> void rebuild_result(R& r, const std::vector<Tensor>& outputs, size_t& next) {
  if constexpr (std::is_same_v<R, Tensor>)
    r = outputs.at(next++);
  else if constexpr (is_container_v<R>)
    for_each_child(r, "", [&](auto& c, const std::string&) { rebuild_result(c, outputs, next); });
}

} // namespace kiln::detail
