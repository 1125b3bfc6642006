#pragma once
#include <cstdint>
#include <kiln/error.hpp>
#include <kiln/shape.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Sizes given to symbols by a call's arguments.
using DimBindings = std::map<std::string, int64_t>;

namespace dim_expr {

class Poly;

// A malformed expression: kiln::Error(spec) with the whole story, and the reason alone ("missing
// ')' at column 7") for callers that say where the text was (the MLIR parser).
class DimSyntaxError : public Error {
public:
  DimSyntaxError(const std::string& text, std::string reason);
  const std::string& reason() const { return reason_; }

private:
  std::string reason_;
};

// A symbol, or floor(numerator / denominator) with a static denominator > 1 (a division that does
// not simplify away).
struct Atom {
  std::string symbol;
  std::shared_ptr<const Poly> numerator;
  int64_t denominator = 0;
  std::string key; // the printed form: orders atoms and tells equal ones apart
};

// coefficient * atoms[0] * atoms[1] * ...; atoms sorted by key.
struct Term {
  std::vector<Atom> atoms;
  int64_t coefficient = 0;
  std::string key; // the atoms' keys joined by '*'; empty for the constant term
};

// A dim expression in canonical form: a polynomial with integer coefficients over atoms, terms
// ordered by degree (highest first) then key, like terms merged, zero terms dropped. Every
// operation returns the canonical form, so equal polynomials print the same text, which is what
// Dim stores and compares. Arithmetic is checked: an overflow throws SizeError.
class Poly {
public:
  static Poly constant(int64_t value);
  static Poly symbol(const std::string& name);
  // coefficient * the atoms' product.
  static Poly monomial(std::vector<Atom> atoms, int64_t coefficient);
  // Parses `batch*6`, `seq-1`, `(seq+1)/2`, `s0*s1`: integers, names, + - * / (floor division by
  // a positive constant) and parentheses. Throws kiln::Error(spec) naming the text and the column.
  static Poly parse(std::string_view text);

  // The canonical text, without spaces: `batch*6`, `seq-1`, `(seq+1)/2`.
  std::string to_string() const;
  std::optional<int64_t> constant_value() const;
  const std::vector<Term>& terms() const { return terms_; }
  // The symbols it mentions, inside divisions too.
  void collect_symbols(std::set<std::string>& out) const;
  // Bound symbols replaced by their sizes; the result is re-simplified.
  Poly substitute(const DimBindings& bindings) const;

  friend Poly operator+(const Poly& a, const Poly& b);
  friend Poly operator-(const Poly& a, const Poly& b);
  friend Poly operator*(const Poly& a, const Poly& b);
  friend bool operator==(const Poly& a, const Poly& b) { return a.to_string() == b.to_string(); }

private:
  void normalize();
  std::vector<Term> terms_;
};

// floor(p / divisor) for a constant divisor > 0, simplified: whole multiples leave the division, so
// (2*seq+3)/2 is seq+1 and batch*6/3 is batch*2. Throws Error(shape) for divisor <= 0.
Poly floordiv(const Poly& p, int64_t divisor);
// p / divisor when divisor is a single term that divides every term of p exactly (batch*24 / 4 =
// batch*6, batch*seq*64 / seq = batch*64); nullopt otherwise.
std::optional<Poly> exact_quotient(const Poly& p, const Poly& divisor);

// The expression of a dim (a constant for a static one), and the dim of an expression: static when
// it is a constant, which must not be negative (Error(shape) otherwise).
Poly poly_of(const Dim& d);
Dim dim_of(const Poly& p);

} // namespace dim_expr
} // namespace kiln
