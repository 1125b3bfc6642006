#include "ir/text/parser.hpp"
#include "core/checked_arithmetic.hpp"
#include "core/dim_expr.hpp"
#include "ir/custom_ops.hpp"
#include "ir/ops.hpp"
#include "ir/text/lexer.hpp"
#include "ir/verify.hpp"
#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cstring>
#include <kiln/error.hpp>
#include <optional>
#include <unordered_map>

namespace kiln::ir {
namespace {

using text::Lexer;
using text::Token;
using text::TokenKind;

const char* const kDTypeChoices = "a dtype: f32, f64, f16, bf16, i8, i32, i64, ui8 or i1";

std::string describe(const Token& token) {
  switch (token.kind) {
  case TokenKind::eof: return "end of input";
  case TokenKind::string: return "string \"" + token.text + "\"";
  case TokenKind::value_id: return "`%" + token.text + "`";
  case TokenKind::symbol: return "`@" + token.text + "`";
  case TokenKind::type_id: return "`!" + token.text + "`";
  default: return "`" + token.text + "`";
  }
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(DType::boolean); ++i)
    if (name == dtype_name(static_cast<DType>(i))) return static_cast<DType>(i);
  return std::nullopt;
}

std::optional<int64_t> parse_decimal(std::string_view s) {
  int64_t value = 0;
  auto result = std::from_chars(s.data(), s.data() + s.size(), value);
  if (result.ec != std::errc() || result.ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

// A float literal needs a '.' (MLIR's rule); NaN and Inf come as the 16 hex digits of their bits.
std::optional<double> parse_float_or_bits(std::string_view s) {
  if (s.starts_with("0x")) {
    uint64_t bits = 0;
    auto result = std::from_chars(s.data() + 2, s.data() + s.size(), bits, 16);
    if (s.size() != 18 || result.ec != std::errc() || result.ptr != s.data() + s.size()) return std::nullopt;
    return std::bit_cast<double>(bits);
  }
  double value = 0;
  auto result = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.find('.') == std::string_view::npos || result.ec != std::errc() || result.ptr != s.data() + s.size())
    return std::nullopt;
  return value;
}

std::optional<std::string> decode_hex(std::string_view s) {
  if (!s.starts_with("0x") || s.size() % 2 != 0) return std::nullopt;
  std::string bytes;
  for (size_t i = 2; i < s.size(); i += 2) {
    unsigned value = 0;
    auto result = std::from_chars(s.data() + i, s.data() + i + 2, value, 16);
    if (result.ec != std::errc() || result.ptr != s.data() + i + 2) return std::nullopt;
    bytes += static_cast<char>(value);
  }
  return bytes;
}

// The name an argument keeps (ir::Function::arg_names): an identifier that is not positional
// (`arg3`, `3`), so that the CLI's --input NAME never means both a name and an index.
std::string argument_name(const std::string& written) {
  const bool identifier = !written.empty() &&
                          (std::isalpha(static_cast<unsigned char>(written[0])) || written[0] == '_') &&
                          std::all_of(written.begin(), written.end(),
                                      [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  const bool positional = written.size() > 3 && written.rfind("arg", 0) == 0 &&
                          written.find_first_not_of("0123456789", 3) == std::string::npos;
  return identifier && !positional ? written : "";
}

std::string type_list_text(const std::vector<ValueType>& types) {
  std::string out = "(";
  for (size_t i = 0; i < types.size(); ++i)
    out += (i ? ", " : "") + type_to_string(types[i]);
  return out + ")";
}

struct WrittenType {
  ValueType type;
  Token at;
};

struct ValueUse {
  ValueId id;
  Token at;
};

// One op as written, before it is checked and appended.
struct ParsedOp {
  std::optional<Token> result_name;
  size_t named_results = 0;
  Token at;
  OpKind kind = OpKind::custom;
  std::optional<Token> callee;
  std::vector<ValueUse> operands;
  Attrs attrs;
  Token colon;
  std::vector<WrittenType> operand_types;
  std::vector<WrittenType> result_types;
  SourceLoc loc;
};

struct PendingCall {
  size_t function;
  OpId op;
  Token callee;
};

class Parser {
public:
  Parser(std::string_view text, const std::string& source_name) : lexer_(text, source_name) { advance(); }
  Module parse();

private:
  using Scope = std::unordered_map<std::string, std::vector<ValueId>>;

  void advance() { token_ = lexer_.next(); }
  Token take();
  bool at_punct(char c) const { return token_.kind == TokenKind::punct && token_.text[0] == c; }
  bool at_bare(std::string_view word) const { return token_.kind == TokenKind::bare_id && token_.text == word; }
  Token expect_punct(char c, std::string_view context);
  Token expect_kind(TokenKind kind, std::string_view expected);
  [[noreturn]] void fail(const Token& at, const std::string& what, std::string_view expected) const;
  [[noreturn]] void fail_unexpected(std::string_view expected) const;
  void check_size(const WrittenType& written, const std::string& what) const;

  WrittenType parse_written_type();
  Dim parse_type_dim();
  // Dim(text), its errors turned into parse errors at `at`.
  Dim symbolic_dim(const Token& at, const std::string& text) const;
  DType parse_dtype_name(const Token& name);
  std::vector<WrittenType> parse_type_list_after_paren();
  std::vector<WrittenType> parse_result_types();

  Attrs parse_attr_dict();
  Attr parse_attr_value();
  Attr parse_number_attr();
  Attr parse_array_attr();
  Attr::Ints array_ints(const std::vector<Token>& numbers) const;
  Attr::Floats array_floats(const std::vector<Token>& numbers) const;
  Attr parse_shape_attr();
  Attr parse_dense_attr();
  Tensor dense_tensor(const Token& at, const std::string& bytes, const std::vector<int64_t>& dims, DType dtype);

  void parse_function();
  void parse_arguments(Function& fn, Scope& scope);
  void parse_body(Function& fn, Scope& scope, const std::vector<WrittenType>& declared);
  void parse_return(Function& fn, const Scope& scope, const std::vector<WrittenType>& declared);
  void parse_op(Function& fn, Scope& scope);
  void parse_op_name(ParsedOp& op);
  void check_result_names(const ParsedOp& op) const;
  void append_op(Function& fn, Scope& scope, ParsedOp op);
  size_t parse_result_names(const Scope& scope, std::optional<Token>& name);
  OpKind parse_op_kind(const Token& name);
  ValueUse parse_operand(const Scope& scope);
  std::vector<ValueUse> parse_operand_list(const Scope& scope);
  SourceLoc parse_loc();
  void check_operand_types(const Function& fn, const std::vector<ValueUse>& uses, const std::vector<WrittenType>& types,
                           const Token& at);
  void verify_op(const Token& at, OpKind kind, const std::vector<WrittenType>& operand_types, const Attrs& attrs,
                 const std::vector<WrittenType>& result_types, const SourceLoc& loc);
  void resolve_calls();
  void refuse_call_cycles() const;

  Lexer lexer_;
  Token token_;
  Module module_;
  std::vector<PendingCall> calls_;
};

Token Parser::take() {
  Token taken = token_;
  advance();
  return taken;
}

void Parser::fail(const Token& at, const std::string& what, std::string_view expected) const {
  lexer_.fail(at.line, at.column, what + ", expected " + std::string(expected));
}

void Parser::fail_unexpected(std::string_view expected) const {
  fail(token_, "unexpected " + describe(token_), expected);
}

// A written type too large to exist is a shape error at its place, before anything is sized from it.
void Parser::check_size(const WrittenType& written, const std::string& what) const {
  checked_static_byte_size(written.type.shape, written.type.dtype,
                           lexer_.place(written.at.line, written.at.column) + ": " + what);
}

Token Parser::expect_punct(char c, std::string_view context) {
  if (!at_punct(c)) fail_unexpected("`" + std::string(1, c) + "` " + std::string(context));
  return take();
}

Token Parser::expect_kind(TokenKind kind, std::string_view expected) {
  if (token_.kind != kind) fail_unexpected(expected);
  return take();
}

WrittenType Parser::parse_written_type() {
  WrittenType written{{}, token_};
  Token name = expect_kind(TokenKind::type_id, "a type such as !kiln.tensor<[2], f32>");
  if (name.text != "kiln.tensor" && name.text != "kiln.buffer")
    fail(name, "bad type " + describe(name), "!kiln.tensor<...> or !kiln.buffer<...>");
  written.type.is_buffer = name.text == "kiln.buffer";
  expect_punct('<', "after the type name");
  expect_punct('[', "to open the dims of a type");
  while (!at_punct(']')) {
    if (!written.type.shape.empty()) expect_punct(',', "or `]` between dims");
    written.type.shape.push_back(parse_type_dim());
  }
  advance();
  expect_punct(',', "between the dims and the dtype of a type");
  written.type.dtype = parse_dtype_name(token_);
  advance();
  expect_punct('>', "to close the type");
  return written;
}

// A size, a name, or an expression (batch*6, (seq+1)/2): its tokens up to the next `,` or `]`
// outside parentheses, read back as one text.
Dim Parser::parse_type_dim() {
  const Token first = token_;
  std::string text;
  for (int depth = 0; depth > 0 || !(at_punct(',') || at_punct(']'));) {
    const bool operator_token =
        token_.kind == TokenKind::punct && std::string_view("()*+-/").find(token_.text[0]) != std::string_view::npos;
    if (token_.kind != TokenKind::number && token_.kind != TokenKind::bare_id && !operator_token) break;
    if (at_punct('(')) ++depth;
    if (at_punct(')') && --depth < 0) break;
    text += take().text;
  }
  if (first.kind == TokenKind::number && text == first.text) {
    auto size = parse_decimal(text);
    if (size && *size >= 0) return Dim(*size);
  } else if (!text.empty()) {
    return symbolic_dim(first, text);
  }
  fail(first, "bad dim " + describe(first), "a size >= 0 or a symbolic name such as batch");
}

Dim Parser::symbolic_dim(const Token& at, const std::string& text) const {
  constexpr std::string_view expected = "a size, a symbolic name such as batch or an expression such as batch*6";
  try {
    return Dim(text);
  } catch (const dim_expr::DimSyntaxError& e) {
    fail(at, "bad dim `" + text + "`: " + e.reason(), expected);
  } catch (const Error& e) {
    fail(at, "bad dim `" + text + "`: " + e.message(), expected);
  }
}

DType Parser::parse_dtype_name(const Token& name) {
  auto dtype = name.kind == TokenKind::bare_id ? dtype_from_name(name.text) : std::nullopt;
  if (!dtype) fail(name, "bad dtype " + describe(name), kDTypeChoices);
  return *dtype;
}

std::vector<WrittenType> Parser::parse_type_list_after_paren() {
  std::vector<WrittenType> types;
  while (!at_punct(')')) {
    if (!types.empty()) expect_punct(',', "or `)` between types");
    types.push_back(parse_written_type());
  }
  advance();
  return types;
}

std::vector<WrittenType> Parser::parse_result_types() {
  if (!at_punct('(')) return {parse_written_type()};
  advance();
  return parse_type_list_after_paren();
}

Attrs Parser::parse_attr_dict() {
  expect_punct('{', "to open attributes");
  Attrs attrs;
  while (!at_punct('}')) {
    if (!attrs.empty()) expect_punct(',', "or `}` between attributes");
    if (token_.kind != TokenKind::bare_id && token_.kind != TokenKind::string) fail_unexpected("an attribute name");
    Token name = take();
    if (attrs.has(name.text)) fail(name, "attribute `" + name.text + "` given twice", "each name once");
    expect_punct('=', "after an attribute name");
    attrs.set(name.text, parse_attr_value());
  }
  advance();
  return attrs;
}

Attr Parser::parse_attr_value() {
  if (token_.kind == TokenKind::number) return parse_number_attr();
  if (token_.kind == TokenKind::string) return Attr::of_string(take().text);
  if (at_punct('[')) return parse_shape_attr();
  if (at_bare("true") || at_bare("false")) return Attr::of_bool(take().text == "true");
  if (at_bare("array")) return parse_array_attr();
  if (at_bare("dense")) return parse_dense_attr();
  if (token_.kind == TokenKind::bare_id && dtype_from_name(token_.text))
    return Attr::of_dtype(*dtype_from_name(take().text));
  fail(token_, "bad attribute " + describe(token_),
       "true, false, 3 : i64, 2.5 : f64, \"text\", array<i64: ...>, array<f64: ...>, [dims], a dtype or dense<...>");
}

Attr Parser::parse_number_attr() {
  Token number = take();
  expect_punct(':', "and i64 or f64 after a number");
  Token type = expect_kind(TokenKind::bare_id, "i64 or f64 after a number");
  if (type.text == "i64") {
    auto value = parse_decimal(number.text);
    if (!value) fail(number, "bad attribute: " + describe(number) + " is not a 64-bit integer", "e.g. 3 : i64");
    return Attr::of_int(*value);
  }
  if (type.text == "f64") {
    auto value = parse_float_or_bits(number.text);
    if (!value)
      fail(number, "bad attribute: " + describe(number) + " is not a float",
           "e.g. 2.5 : f64 or 0x7FF0000000000000 : f64");
    return Attr::of_float(*value);
  }
  fail(type, "bad attribute type " + describe(type), "i64 or f64");
}

Attr Parser::parse_array_attr() {
  advance();
  expect_punct('<', "after array");
  Token element = expect_kind(TokenKind::bare_id, "i64 or f64 in array<...>");
  if (element.text != "i64" && element.text != "f64")
    fail(element, "bad array element type " + describe(element), "i64 or f64");
  std::vector<Token> numbers;
  while (!at_punct('>')) {
    bool first = numbers.empty();
    expect_punct(first ? ':' : ',', first ? "or `>` after the element type" : "or `>` between array elements");
    numbers.push_back(expect_kind(TokenKind::number, "a number in array<" + element.text + ">"));
  }
  advance();
  return element.text == "i64" ? Attr::of_ints(array_ints(numbers)) : Attr::of_floats(array_floats(numbers));
}

Attr::Ints Parser::array_ints(const std::vector<Token>& numbers) const {
  Attr::Ints ints;
  for (const Token& number : numbers) {
    auto value = parse_decimal(number.text);
    if (!value) fail(number, "bad array element " + describe(number), "a 64-bit integer");
    ints.push_back(*value);
  }
  return ints;
}

Attr::Floats Parser::array_floats(const std::vector<Token>& numbers) const {
  Attr::Floats floats;
  for (const Token& number : numbers) {
    auto value = parse_float_or_bits(number.text);
    if (!value)
      fail(number, "bad array element " + describe(number), "a float with a '.' or 16 hex digits of its bits");
    floats.push_back(*value);
  }
  return floats;
}

// Dims as an array attribute: symbolic names are strings, sizes bare integers (-1 is reshape's "infer").
Attr Parser::parse_shape_attr() {
  advance();
  Shape shape;
  while (!at_punct(']')) {
    if (!shape.empty()) expect_punct(',', "or `]` between dims");
    Token dim = take();
    auto size = dim.kind == TokenKind::number ? parse_decimal(dim.text) : std::nullopt;
    if (size && *size >= -1) {
      shape.push_back(Dim(*size));
    } else if (dim.kind == TokenKind::string) {
      shape.push_back(symbolic_dim(dim, dim.text));
    } else {
      fail(dim, "bad dim " + describe(dim), "a size >= -1 or a quoted symbolic name such as \"batch\"");
    }
  }
  advance();
  return Attr::of_shape(std::move(shape));
}

Attr Parser::parse_dense_attr() {
  Token dense = take();
  expect_punct('<', "after dense");
  std::optional<std::string> bytes = std::string();
  if (token_.kind == TokenKind::string) {
    Token hex = take();
    bytes = decode_hex(hex.text);
    if (!bytes) fail(hex, "bad dense data " + describe(hex), "\"0x\" and pairs of hex digits");
  }
  expect_punct('>', "after the dense data");
  expect_punct(':', "and a tensor type after dense<...>");
  if (!at_bare("tensor")) fail_unexpected("a builtin type such as tensor<2x3xf32>");
  advance();
  if (!at_punct('<')) fail_unexpected("`<` after tensor");
  text::BuiltinShape shape = lexer_.builtin_shape();
  advance();
  expect_punct('>', "to close the tensor type");
  Token element_at{TokenKind::bare_id, shape.element_type, shape.element_line, shape.element_column};
  return Attr::of_tensor(dense_tensor(dense, *bytes, shape.dims, parse_dtype_name(element_at)));
}

// Checks the data size before allocating, so a huge written shape cannot exhaust memory.
Tensor Parser::dense_tensor(const Token& at, const std::string& bytes, const std::vector<int64_t>& dims, DType dtype) {
  bool packed_bits = dtype == DType::boolean;
  uint64_t tensor_bytes = 0;
  try {
    tensor_bytes = checked_byte_size(dims, dtype);
  } catch (const SizeError& error) {
    throw SizeError(lexer_.place(at.line, at.column) + ": dense tensor " + error.message());
  }
  // Booleans are stored one byte each (dtype_size 1) and written packed, 8 to a byte.
  uint64_t expected = packed_bits ? tensor_bytes / 8 + (tensor_bytes % 8 != 0) : tensor_bytes;
  if (bytes.size() != expected)
    fail(at, "dense data has " + std::to_string(bytes.size()) + " bytes",
         std::to_string(expected) + " for its tensor type");
  Tensor tensor = Tensor::empty(dims, dtype);
  auto data = static_cast<unsigned char*>(tensor.raw_data());
  if (!packed_bits) {
    if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
    return tensor;
  }
  for (int64_t i = 0; i < tensor.numel(); ++i)
    data[i] = (static_cast<unsigned char>(bytes[i / 8]) >> (i % 8)) & 1;
  return tensor;
}

void Parser::parse_function() {
  advance();
  Function fn;
  if (at_bare("private")) {
    fn.is_private = true;
    advance();
  }
  Token name = expect_kind(TokenKind::symbol, "a function name such as @main");
  if (module_.find(name.text)) fail(name, "function `@" + name.text + "` redefined", "a new function name");
  fn.name = name.text;
  Scope scope;
  parse_arguments(fn, scope);
  std::vector<WrittenType> declared;
  if (token_.kind == TokenKind::arrow) {
    advance();
    declared = parse_result_types();
  }
  for (size_t i = 0; i < declared.size(); ++i)
    check_size(declared[i], "result " + std::to_string(i) + " of @" + fn.name);
  expect_punct('{', "to open the body of @" + fn.name);
  parse_body(fn, scope, declared);
  module_.functions.push_back(std::move(fn));
}

void Parser::parse_arguments(Function& fn, Scope& scope) {
  expect_punct('(', "to open the arguments of @" + fn.name);
  while (!at_punct(')')) {
    if (!fn.args.empty()) expect_punct(',', "or `)` between arguments");
    Token name = expect_kind(TokenKind::value_id, "an argument such as %arg0");
    if (scope.count(name.text)) fail(name, "value " + describe(name) + " redefined", "a fresh name");
    expect_punct(':', "and a type after an argument");
    WrittenType written = parse_written_type();
    check_size(written, "argument " + describe(name) + " of @" + fn.name);
    scope[name.text] = {fn.add_arg(written.type, argument_name(name.text))};
  }
  advance();
}

void Parser::parse_body(Function& fn, Scope& scope, const std::vector<WrittenType>& declared) {
  while (!at_bare("return") && !at_bare("func.return")) {
    if (at_punct('}')) fail(token_, "missing `return` at the end of @" + fn.name, "`return` before `}`");
    if (token_.kind == TokenKind::eof)
      fail(token_, "unterminated region: the body of @" + fn.name + " has no `return` or `}`", "`}`");
    parse_op(fn, scope);
  }
  parse_return(fn, scope, declared);
  if (token_.kind == TokenKind::eof)
    fail(token_, "unterminated region: the body of @" + fn.name + " is not closed", "`}`");
  expect_punct('}', "after `return`");
}

void Parser::parse_return(Function& fn, const Scope& scope, const std::vector<WrittenType>& declared) {
  Token keyword = take();
  std::vector<ValueUse> uses;
  std::vector<WrittenType> types;
  if (token_.kind == TokenKind::value_id) {
    do {
      if (!uses.empty()) advance();
      uses.push_back(parse_operand(scope));
    } while (at_punct(','));
    Token colon = expect_punct(':', "and the types of the returned values");
    do {
      if (!types.empty()) advance();
      types.push_back(parse_written_type());
    } while (at_punct(','));
    check_operand_types(fn, uses, types, colon);
  }
  if (uses.size() != declared.size())
    fail(keyword,
         "wrong number of results: @" + fn.name + " declares " + std::to_string(declared.size()) +
             " but `return` gives " + std::to_string(uses.size()),
         std::to_string(declared.size()) + " values");
  for (size_t i = 0; i < uses.size(); ++i) {
    if (types[i].type != declared[i].type)
      fail(types[i].at,
           "returned type " + type_to_string(types[i].type) + " differs from result " + std::to_string(i) + " of @" +
               fn.name,
           type_to_string(declared[i].type));
    fn.outputs.push_back(uses[i].id);
  }
}

// `%k = ` or `%k:N = `; returns how many results the names bind (0 without a name).
size_t Parser::parse_result_names(const Scope& scope, std::optional<Token>& name) {
  if (token_.kind != TokenKind::value_id) return 0;
  name = take();
  if (scope.count(name->text)) fail(*name, "value " + describe(*name) + " redefined", "a fresh name");
  size_t count = 1;
  if (at_punct(':')) {
    advance();
    Token number = expect_kind(TokenKind::number, "a result count after `:`");
    auto value = parse_decimal(number.text);
    if (!value || *value < 1) fail(number, "bad result count " + describe(number), "a count >= 1");
    count = static_cast<size_t>(*value);
  }
  expect_punct('=', "after the result names");
  return count;
}

OpKind Parser::parse_op_kind(const Token& name) {
  std::string_view text = name.text;
  auto kind = text.starts_with("kiln.") ? op_kind_from_name(text.substr(5)) : std::nullopt;
  if (!kind || *kind == OpKind::call)
    fail(name, "unknown op `" + name.text + "`", "a kiln op such as \"kiln.add\" (calls are written func.call @f)");
  return *kind;
}

void Parser::parse_op(Function& fn, Scope& scope) {
  ParsedOp op;
  op.named_results = parse_result_names(scope, op.result_name);
  parse_op_name(op);
  op.operands = parse_operand_list(scope);
  op.attrs = at_punct('{') ? parse_attr_dict() : Attrs{};
  if (op.callee && op.attrs.has("callee"))
    fail(op.at, "func.call with a `callee` attribute", "the callee only as @name");
  if (op.callee) op.attrs.set("callee", Attr::of_string(op.callee->text));
  op.colon = expect_punct(':', "and the op's type after its operands");
  expect_punct('(', "to open the operand types");
  op.operand_types = parse_type_list_after_paren();
  expect_kind(TokenKind::arrow, "`->` before the result types");
  op.result_types = parse_result_types();
  op.loc = at_bare("loc") ? parse_loc() : SourceLoc{};
  check_operand_types(fn, op.operands, op.operand_types, op.colon);
  check_result_names(op);
  const std::string op_name =
      op.callee ? "func.call @" + op.callee->text : "kiln." + std::string(op_info(op.kind).name);
  for (size_t i = 0; i < op.result_types.size(); ++i)
    check_size(op.result_types[i], "result " + std::to_string(i) + " of " + op_name);
  verify_op(op.at, op.kind, op.operand_types, op.attrs, op.result_types, op.loc);
  append_op(fn, scope, std::move(op));
}

void Parser::parse_op_name(ParsedOp& op) {
  op.at = token_;
  if (token_.kind == TokenKind::string) {
    op.kind = parse_op_kind(take());
    return;
  }
  if (!at_bare("func.call") && !at_bare("call")) fail_unexpected("an op: \"kiln.<name>\"(...) or func.call @f(...)");
  advance();
  op.kind = OpKind::call;
  op.callee = expect_kind(TokenKind::symbol, "the callee such as @body");
}

void Parser::check_result_names(const ParsedOp& op) const {
  size_t count = op.result_types.size();
  if (op.named_results == count) return;
  std::string expected = count == 0 ? "no `%k = `" : count == 1 ? "`%k = `" : "`%k:" + std::to_string(count) + " = `";
  fail(op.result_name ? *op.result_name : op.at,
       "result count mismatch: " + std::to_string(op.named_results) + " result names for " + std::to_string(count) +
           " result types",
       expected);
}

void Parser::append_op(Function& fn, Scope& scope, ParsedOp op) {
  std::vector<ValueId> operand_ids;
  for (const ValueUse& use : op.operands)
    operand_ids.push_back(use.id);
  std::vector<ValueType> types;
  for (const WrittenType& written : op.result_types)
    types.push_back(written.type);
  OpId id = fn.add_op(op.kind, std::move(operand_ids), types, std::move(op.attrs), std::move(op.loc));
  if (op.callee) calls_.push_back({module_.functions.size(), id, *op.callee});
  if (op.result_name) scope[op.result_name->text] = fn.ops[id].results;
}

ValueUse Parser::parse_operand(const Scope& scope) {
  Token name = expect_kind(TokenKind::value_id, "a value such as %0");
  auto found = scope.find(name.text);
  if (found == scope.end()) fail(name, "undefined value " + describe(name), "a value defined above");
  const std::vector<ValueId>& group = found->second;
  if (!at_punct('#')) {
    if (group.size() != 1)
      fail(name, describe(name) + " names " + std::to_string(group.size()) + " results",
           "`%" + name.text + "#<index>`");
    return {group[0], name};
  }
  advance();
  Token index = expect_kind(TokenKind::number, "a result index after `#`");
  auto value = parse_decimal(index.text);
  if (!value || *value < 0 || static_cast<size_t>(*value) >= group.size())
    fail(index, "result index " + describe(index) + " out of range for " + describe(name),
         "an index below " + std::to_string(group.size()));
  return {group[static_cast<size_t>(*value)], name};
}

std::vector<ValueUse> Parser::parse_operand_list(const Scope& scope) {
  expect_punct('(', "to open the operands");
  std::vector<ValueUse> uses;
  while (!at_punct(')')) {
    if (!uses.empty()) expect_punct(',', "or `)` between operands");
    uses.push_back(parse_operand(scope));
  }
  advance();
  return uses;
}

SourceLoc Parser::parse_loc() {
  advance();
  expect_punct('(', "after loc");
  SourceLoc loc;
  loc.file = expect_kind(TokenKind::string, "a quoted file name in loc(\"file\":line:col)").text;
  for (uint32_t* field : {&loc.line, &loc.column}) {
    expect_punct(':', "in loc(\"file\":line:col)");
    Token number = expect_kind(TokenKind::number, "a line or column number");
    auto value = parse_decimal(number.text);
    if (!value || *value < 1 || *value > UINT32_MAX)
      fail(number, "bad location number " + describe(number), "a number >= 1");
    *field = static_cast<uint32_t>(*value);
  }
  expect_punct(')', "to close loc(...)");
  return loc;
}

void Parser::check_operand_types(const Function& fn, const std::vector<ValueUse>& uses,
                                 const std::vector<WrittenType>& types, const Token& at) {
  if (uses.size() != types.size())
    fail(at, std::to_string(uses.size()) + " operands but " + std::to_string(types.size()) + " operand types",
         "one type per operand");
  for (size_t i = 0; i < uses.size(); ++i) {
    const ValueType& actual = fn.type_of(uses[i].id);
    if (types[i].type != actual)
      fail(types[i].at,
           "operand type mismatch: " + describe(uses[i].at) + " is " + type_to_string(actual) + " but is written as " +
               type_to_string(types[i].type),
           type_to_string(actual));
  }
}

void Parser::verify_op(const Token& at, OpKind kind, const std::vector<WrittenType>& operand_types, const Attrs& attrs,
                       const std::vector<WrittenType>& result_types, const SourceLoc& loc) {
  const OpInfo& info = op_info(kind);
  auto count = static_cast<int>(operand_types.size());
  std::string op_name = "kiln." + std::string(info.name);
  if (count < info.min_operands || (info.max_operands >= 0 && count > info.max_operands))
    fail(at, op_name + " with " + std::to_string(count) + " operands",
         std::to_string(info.min_operands) +
             (info.max_operands < 0                    ? " or more"
              : info.max_operands == info.min_operands ? ""
                                                       : " to " + std::to_string(info.max_operands)) +
             " operands");
  std::vector<ValueType> operands;
  for (const WrittenType& written : operand_types)
    operands.push_back(written.type);
  try {
    decode_params(kind, attrs, operands);
  } catch (const AttrError& error) {
    fail(at, op_name + " with " + error.what(), "the attributes " + op_name + " requires");
  } catch (const InferError&) {
    // An axis the operands do not have: reported below by inference, with the op's place.
  }
  // A custom op of a loaded extension is checked against its shape function; others stay opaque.
  if (!info.infer && !(kind == OpKind::custom && custom_op_is_registered(attrs))) return;
  std::vector<ValueType> inferred;
  try {
    inferred = infer_op(kind, operands, attrs, loc);
  } catch (const SizeError& error) {
    throw SizeError(lexer_.place(at.line, at.column) + ": " + error.message());
  } catch (const Error& error) {
    fail(at, "invalid op: " + error.message(), "operands and attributes that " + op_name + " accepts");
  }
  if (inferred.size() != result_types.size())
    fail(at,
         "wrong number of results: " + op_name + " has " + std::to_string(inferred.size()) + " but " +
             std::to_string(result_types.size()) + " are written",
         std::to_string(inferred.size()));
  for (size_t i = 0; i < inferred.size(); ++i)
    if (inferred[i] != result_types[i].type)
      fail(result_types[i].at,
           "result type " + type_to_string(result_types[i].type) + " of " + op_name + " differs from its inferred type",
           type_to_string(inferred[i]));
}

void Parser::resolve_calls() {
  for (const PendingCall& call : calls_) {
    const Function* callee = module_.find(call.callee.text);
    if (!callee) fail(call.callee, "call to unknown function " + describe(call.callee), "a func.func of this module");
    const Function& caller = module_.functions.at(call.function);
    const Op& op = caller.ops.at(call.op);
    std::vector<ValueType> passed, returned;
    for (ValueId id : op.operands)
      passed.push_back(caller.type_of(id));
    for (ValueId id : op.results)
      returned.push_back(caller.type_of(id));
    if (passed != callee->arg_types())
      fail(call.callee, "call passes " + type_list_text(passed) + " to " + describe(call.callee),
           type_list_text(callee->arg_types()));
    if (returned != callee->output_types())
      fail(call.callee, "call expects " + type_list_text(returned) + " from " + describe(call.callee),
           type_list_text(callee->output_types()));
  }
}

void Parser::refuse_call_cycles() const {
  std::optional<CallProblem> problem = find_call_problem(module_);
  if (!problem) return;
  for (const PendingCall& call : calls_)
    if (call.function == problem->function && call.op == problem->op)
      fail(call.callee,
           "call to " + describe(call.callee) + " in @" + module_.functions[call.function].name + ": " + problem->what,
           "calls that kiln can inline: no cycles, nested at most " + std::to_string(kMaxCallDepth) + " deep");
}

Module Parser::parse() {
  if (!at_bare("module")) fail_unexpected("`module`");
  advance();
  if (token_.kind == TokenKind::symbol) module_.name = take().text;
  expect_punct('{', "to open the module");
  while (at_bare("func.func"))
    parse_function();
  if (token_.kind == TokenKind::eof) fail(token_, "unterminated region: the module is not closed", "`}`");
  if (!at_punct('}')) fail_unexpected("`func.func` or `}`");
  if (module_.functions.empty()) fail(token_, "the module has no functions", "a `func.func` (the entry function)");
  advance();
  if (token_.kind != TokenKind::eof)
    fail(token_, "trailing text " + describe(token_) + " after the module", "end of input");
  resolve_calls();
  refuse_call_cycles();
  return std::move(module_);
}

} // namespace

Module parse_module(std::string_view text, const std::string& source_name) { return Parser(text, source_name).parse(); }

} // namespace kiln::ir
