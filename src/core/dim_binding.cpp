#include "core/dim_binding.hpp"
#include <kiln/error.hpp>
#include <map>
#include <set>

namespace kiln {
namespace {

using dim_expr::Poly;

struct Site {
  const ShapeToBind* shape;
  size_t dim;
  Poly poly;
  std::set<std::string> symbols;
};

std::string place(const Site& s) { return "argument " + s.shape->argument + " dim " + std::to_string(s.dim); }
int64_t concrete_size(const Site& s) { return (*s.shape->concrete)[s.dim].size(); }

// p = coefficient * symbol + rest, where neither coefficient nor rest mentions symbol; nullopt when
// p is not of that form (symbol squared or inside a division).
struct LinearForm {
  Poly coefficient, rest;
};
std::optional<LinearForm> linear_in(const Poly& p, const std::string& symbol) {
  LinearForm form;
  bool found = false;
  for (const dim_expr::Term& t : p.terms()) {
    std::vector<dim_expr::Atom> others;
    size_t count = 0;
    for (const dim_expr::Atom& a : t.atoms) {
      std::set<std::string> inside;
      if (a.numerator) a.numerator->collect_symbols(inside);
      if (inside.count(symbol)) return std::nullopt;
      if (!a.numerator && a.symbol == symbol)
        ++count;
      else
        others.push_back(a);
    }
    if (count > 1) return std::nullopt;
    if (count == 1) {
      form.coefficient = form.coefficient + Poly::monomial(std::move(others), t.coefficient);
      found = true;
    } else {
      form.rest = form.rest + Poly::monomial(t.atoms, t.coefficient);
    }
  }
  if (!found) return std::nullopt;
  return form;
}

std::vector<Site> symbolic_sites(std::span<const ShapeToBind> shapes) {
  std::vector<Site> sites;
  for (const ShapeToBind& shape : shapes)
    for (size_t d = 0; d < shape.declared->size(); ++d) {
      const Dim& dim = (*shape.declared)[d];
      if (dim.is_static()) continue;
      Site site{&shape, d, dim_expr::poly_of(dim), {}};
      site.poly.collect_symbols(site.symbols);
      sites.push_back(std::move(site));
    }
  return sites;
}

// The size of `symbol` that makes the site's dim its concrete size, the other symbols bound.
int64_t solve(const Site& site, const LinearForm& form, const std::string& symbol, const DimBindings& bound) {
  const int64_t a = *form.coefficient.substitute(bound).constant_value();
  const int64_t c = *form.rest.substitute(bound).constant_value();
  const int64_t size = concrete_size(site);
  int64_t difference = 0;
  // An overflowing difference has no solution that is a size either.
  const bool overflow = __builtin_sub_overflow(size, c, &difference);
  if (overflow || a == 0 || (a == -1 && difference == INT64_MIN) || difference % a != 0 || difference / a < 0)
    throw Error(ErrorKind::spec, place(site) + " is " + std::to_string(size) + ", which " + site.poly.to_string() +
                                     " is for no size of '" + symbol + "'");
  return difference / a;
}

// Solves symbols until none is left that a site can solve; with sizes, records their values.
DimBindings solve_all(const std::vector<Site>& sites, bool with_sizes, std::map<std::string, const Site*>& source) {
  DimBindings bound;
  std::set<std::string> known;
  for (bool progress = true; progress;) {
    progress = false;
    for (const Site& site : sites) {
      std::vector<std::string> unknown;
      for (const std::string& s : site.symbols)
        if (!known.count(s)) unknown.push_back(s);
      if (unknown.size() != 1) continue;
      std::optional<LinearForm> form = linear_in(site.poly, unknown[0]);
      if (!form) continue;
      if (with_sizes) bound[unknown[0]] = solve(site, *form, unknown[0], bound);
      known.insert(unknown[0]);
      source[unknown[0]] = &site;
      progress = true;
    }
  }
  for (const Site& site : sites)
    for (const std::string& s : site.symbols)
      if (!known.count(s))
        throw Error(ErrorKind::spec, place(site) + " is " + site.poly.to_string() + ": symbol '" + s +
                                         "' cannot be solved from any input dim; give some input a dim that is " + s +
                                         ", or linear in it such as " + s + "*2+1");
  return bound;
}

// The common case, every symbolic dim a plain name: one map, no expressions built.
std::optional<DimBindings> bind_plain_names(std::span<const ShapeToBind> shapes) {
  DimBindings bound;
  std::map<std::string, const ShapeToBind*> source;
  for (const ShapeToBind& shape : shapes)
    for (size_t d = 0; d < shape.declared->size(); ++d) {
      const Dim& dim = (*shape.declared)[d];
      if (dim.is_static()) continue;
      if (!dim.is_symbol()) return std::nullopt;
      const int64_t size = (*shape.concrete)[d].size();
      auto [it, fresh] = bound.emplace(dim.name(), size);
      if (fresh)
        source[dim.name()] = &shape;
      else if (it->second != size)
        throw Error(ErrorKind::spec, "symbolic dimension '" + dim.name() + "' is " + std::to_string(it->second) +
                                         " in argument " + source[dim.name()]->argument + " but " +
                                         std::to_string(size) + " in argument " + shape.argument);
    }
  return bound;
}

std::string bindings_text(const std::set<std::string>& symbols, const DimBindings& bound,
                          const std::map<std::string, const Site*>& source) {
  std::string out;
  for (const std::string& s : symbols)
    out += (out.empty() ? "" : ", ") + s + " = " + std::to_string(bound.at(s)) + " from " + place(*source.at(s));
  return out;
}

} // namespace

DimBindings bind_dims(std::span<const ShapeToBind> shapes) {
  if (std::optional<DimBindings> plain = bind_plain_names(shapes)) return *plain;
  std::vector<Site> sites = symbolic_sites(shapes);
  std::map<std::string, const Site*> source;
  DimBindings bound = solve_all(sites, true, source);
  for (const Site& site : sites) {
    const int64_t want = *site.poly.substitute(bound).constant_value(), got = concrete_size(site);
    if (want == got) continue;
    if (site.poly.terms().size() == 1 && site.symbols.size() == 1 && site.poly.to_string() == *site.symbols.begin())
      throw Error(ErrorKind::spec, "symbolic dimension '" + site.poly.to_string() + "' is " + std::to_string(want) +
                                       " in argument " + source.at(site.poly.to_string())->shape->argument + " but " +
                                       std::to_string(got) + " in argument " + site.shape->argument);
    throw Error(ErrorKind::spec, place(site) + ": expected " + site.poly.to_string() + " = " + std::to_string(want) +
                                     " (" + bindings_text(site.symbols, bound, source) + "), got " +
                                     std::to_string(got));
  }
  return bound;
}

void check_dims_solvable(std::span<const ShapeToBind> shapes) {
  std::map<std::string, const Site*> source;
  solve_all(symbolic_sites(shapes), false, source);
}

} // namespace kiln
