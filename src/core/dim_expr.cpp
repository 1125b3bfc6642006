#include "core/dim_expr.hpp"
#include "core/checked_arithmetic.hpp"
#include <algorithm>
#include <cctype>
#include <kiln/error.hpp>
#include <kiln/shape.hpp>
#include <numeric>

namespace kiln::dim_expr {
namespace {

constexpr std::string_view kWhat = "dim size";
// Parentheses deeper than this are refused: dims come from graph files too, and the parser recurses.
constexpr int kMaxNesting = 32;

int64_t floor_quotient(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

std::string magnitude_text(int64_t c) { return std::to_string(c < 0 ? 0 - uint64_t(c) : uint64_t(c)); }

bool is_division(const Atom& a) { return a.numerator != nullptr; }

Atom symbol_atom(const std::string& name) { return Atom{name, nullptr, 0, name}; }

Term make_term(std::vector<Atom> atoms, int64_t coefficient) {
  std::sort(atoms.begin(), atoms.end(), [](const Atom& a, const Atom& b) { return a.key < b.key; });
  std::string key;
  for (const Atom& a : atoms)
    key += (key.empty() ? "" : "*") + a.key;
  return Term{std::move(atoms), coefficient, std::move(key)};
}

// A division's numerator prints bare when it is one symbol (seq/2), parenthesised otherwise.
std::string numerator_text(const Poly& p) {
  const auto& terms = p.terms();
  if (terms.size() == 1 && terms[0].coefficient == 1 && terms[0].atoms.size() == 1 && !is_division(terms[0].atoms[0]))
    return terms[0].atoms[0].symbol;
  return "(" + p.to_string() + ")";
}

Atom division_atom(const Poly& numerator, int64_t denominator) {
  return Atom{"", std::make_shared<const Poly>(numerator), denominator,
              numerator_text(numerator) + "/" + std::to_string(denominator)};
}

// The term without its sign. A division next to other factors is parenthesised: a*(b+1)/2 would
// parse back as floor(a*(b+1)/2).
std::string unsigned_term_text(const Term& t) {
  const bool alone = t.atoms.size() == 1 && (t.coefficient == 1 || t.coefficient == -1);
  std::string out;
  for (const Atom& a : t.atoms)
    out += (out.empty() ? "" : "*") + (is_division(a) && !alone ? "(" + a.key + ")" : a.key);
  if (t.atoms.empty()) return magnitude_text(t.coefficient);
  if (t.coefficient != 1 && t.coefficient != -1) out += "*" + magnitude_text(t.coefficient);
  return out;
}

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Poly parse() {
    Poly p = expression(0);
    skip_space();
    if (pos_ < text_.size()) fail(std::string("unexpected '") + text_[pos_] + "'");
    return p;
  }

private:
  [[noreturn]] void fail(const std::string& what) const {
    throw DimSyntaxError(std::string(text_), what + " at column " + std::to_string(pos_ + 1));
  }
  void skip_space() {
    while (pos_ < text_.size() && text_[pos_] == ' ')
      ++pos_;
  }
  bool at(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }

  // ['-'] term {('+' | '-') term}: a leading minus negates the whole first term, as printed.
  Poly expression(int depth) {
    const bool negated = at('-');
    if (negated) ++pos_;
    Poly p = term(depth);
    if (negated) p = Poly::constant(0) - p;
    while (at('+') || at('-')) {
      const bool plus = text_[pos_++] == '+';
      Poly rhs = term(depth);
      p = plus ? p + rhs : p - rhs;
    }
    return p;
  }

  // factor {('*' | '/') factor}, left to right; '/' is floor division by a positive constant.
  Poly term(int depth) {
    Poly p = factor(depth);
    while (at('*') || at('/')) {
      const bool times = text_[pos_++] == '*';
      const size_t divisor_at = pos_;
      Poly rhs = factor(depth);
      if (times) {
        p = p * rhs;
        continue;
      }
      std::optional<int64_t> divisor = rhs.constant_value();
      if (!divisor || *divisor <= 0) {
        pos_ = divisor_at;
        fail("a dim can only be divided by a positive integer");
      }
      p = floordiv(p, *divisor);
    }
    return p;
  }

  Poly factor(int depth) {
    skip_space();
    if (pos_ >= text_.size()) fail("missing operand");
    const char c = text_[pos_];
    if (c == '(') {
      if (depth >= kMaxNesting) fail("parentheses nest deeper than " + std::to_string(kMaxNesting));
      ++pos_;
      Poly p = expression(depth + 1);
      if (!at(')')) fail("missing ')'");
      ++pos_;
      return p;
    }
    if (c >= '0' && c <= '9') {
      int64_t value = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
        value = checked_add(checked_mul(value, 10, kWhat), text_[pos_++] - '0', kWhat);
      return Poly::constant(value);
    }
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    std::string name(text_.substr(start, pos_ - start));
    if (!is_valid_symbolic_name(name)) {
      pos_ = start;
      fail(std::string("unexpected '") + c + "'");
    }
    return Poly::symbol(name);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

} // namespace

DimSyntaxError::DimSyntaxError(const std::string& text, std::string reason)
    : Error(ErrorKind::spec, "invalid symbolic dimension '" + text + "': " + reason +
                                 "; expected a name such as batch or an expression such as batch*6, seq-1 or "
                                 "(seq+1)/2"),
      reason_(std::move(reason)) {}

Poly Poly::constant(int64_t value) {
  Poly p;
  if (value != 0) p.terms_.push_back(Term{{}, value, ""});
  return p;
}

Poly Poly::symbol(const std::string& name) { return monomial({symbol_atom(name)}, 1); }

Poly Poly::monomial(std::vector<Atom> atoms, int64_t coefficient) {
  Poly p;
  if (coefficient != 0) p.terms_.push_back(make_term(std::move(atoms), coefficient));
  return p;
}

Poly Poly::parse(std::string_view text) { return Parser(text).parse(); }

std::string Poly::to_string() const {
  if (terms_.empty()) return "0";
  std::string out;
  for (const Term& t : terms_)
    out += (t.coefficient < 0 ? "-" : out.empty() ? "" : "+") + unsigned_term_text(t);
  return out;
}

std::optional<int64_t> Poly::constant_value() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_[0].atoms.empty()) return terms_[0].coefficient;
  return std::nullopt;
}

void Poly::collect_symbols(std::set<std::string>& out) const {
  for (const Term& t : terms_)
    for (const Atom& a : t.atoms) {
      if (is_division(a))
        a.numerator->collect_symbols(out);
      else
        out.insert(a.symbol);
    }
}

Poly Poly::substitute(const DimBindings& bindings) const {
  Poly sum;
  for (const Term& t : terms_) {
    Poly product = constant(t.coefficient);
    for (const Atom& a : t.atoms) {
      if (is_division(a)) {
        product = product * floordiv(a.numerator->substitute(bindings), a.denominator);
        continue;
      }
      auto bound = bindings.find(a.symbol);
      product = product * (bound == bindings.end() ? symbol(a.symbol) : constant(bound->second));
    }
    sum = sum + product;
  }
  return sum;
}

void Poly::normalize() {
  std::sort(terms_.begin(), terms_.end(), [](const Term& a, const Term& b) {
    if (a.atoms.size() != b.atoms.size()) return a.atoms.size() > b.atoms.size();
    return a.key < b.key;
  });
  std::vector<Term> merged;
  for (Term& t : terms_) {
    if (!merged.empty() && merged.back().key == t.key)
      merged.back().coefficient = checked_add(merged.back().coefficient, t.coefficient, kWhat);
    else
      merged.push_back(std::move(t));
  }
  std::erase_if(merged, [](const Term& t) { return t.coefficient == 0; });
  terms_ = std::move(merged);
}

Poly operator+(const Poly& a, const Poly& b) {
  Poly out = a;
  out.terms_.insert(out.terms_.end(), b.terms_.begin(), b.terms_.end());
  out.normalize();
  return out;
}

Poly operator-(const Poly& a, const Poly& b) {
  Poly negated = b;
  for (Term& t : negated.terms_)
    t.coefficient = checked_sub(0, t.coefficient, kWhat);
  return a + negated;
}

Poly operator*(const Poly& a, const Poly& b) {
  Poly out;
  for (const Term& x : a.terms_)
    for (const Term& y : b.terms_) {
      std::vector<Atom> atoms = x.atoms;
      atoms.insert(atoms.end(), y.atoms.begin(), y.atoms.end());
      out.terms_.push_back(make_term(std::move(atoms), checked_mul(x.coefficient, y.coefficient, kWhat)));
    }
  out.normalize();
  return out;
}

Poly floordiv(const Poly& p, int64_t divisor) {
  if (divisor <= 0)
    throw Error(ErrorKind::shape,
                "dim " + p.to_string() + " divided by " + std::to_string(divisor) + ": the divisor must be positive");
  if (divisor == 1) return p;
  const auto& terms = p.terms();
  // floor(floor(x / a) / b) = floor(x / (a * b)) for integer x and positive a, b.
  if (terms.size() == 1 && terms[0].coefficient == 1 && terms[0].atoms.size() == 1 && is_division(terms[0].atoms[0]))
    return floordiv(*terms[0].atoms[0].numerator, checked_mul(terms[0].atoms[0].denominator, divisor, kWhat));
  // floor((divisor * q + r) / divisor) = q + floor(r / divisor) for integer-valued q.
  Poly quotient, remainder;
  for (const Term& t : terms) {
    const int64_t q = floor_quotient(t.coefficient, divisor);
    const int64_t r = t.coefficient - q * divisor;
    quotient = quotient + Poly::monomial(t.atoms, q);
    remainder = remainder + Poly::monomial(t.atoms, r);
  }
  if (std::optional<int64_t> r = remainder.constant_value())
    return quotient + Poly::constant(floor_quotient(*r, divisor));
  // floor(g * x / (g * d)) = floor(x / d): divide out the common factor so equal divisions print alike.
  int64_t g = divisor;
  for (const Term& t : remainder.terms())
    g = std::gcd(g, t.coefficient);
  Poly reduced;
  for (const Term& t : remainder.terms())
    reduced = reduced + Poly::monomial(t.atoms, t.coefficient / g);
  if (divisor / g == 1) return quotient + reduced;
  return quotient + Poly::monomial({division_atom(reduced, divisor / g)}, 1);
}

std::optional<Poly> exact_quotient(const Poly& p, const Poly& divisor) {
  if (divisor.terms().size() != 1) return std::nullopt;
  const Term& d = divisor.terms()[0];
  Poly out;
  for (const Term& t : p.terms()) {
    if (t.coefficient % d.coefficient) return std::nullopt;
    std::vector<Atom> left = t.atoms;
    for (const Atom& a : d.atoms) {
      auto it = std::find_if(left.begin(), left.end(), [&](const Atom& l) { return l.key == a.key; });
      if (it == left.end()) return std::nullopt;
      left.erase(it);
    }
    out = out + Poly::monomial(std::move(left), t.coefficient / d.coefficient);
  }
  return out;
}

} // namespace kiln::dim_expr
