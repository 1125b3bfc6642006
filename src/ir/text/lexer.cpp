#include "ir/text/lexer.hpp"
#include <kiln/error.hpp>

namespace kiln::ir::text {
namespace {

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_identifier_char(char c) { return is_letter(c) || is_digit(c) || c == '$' || c == '.'; }

int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

} // namespace

Lexer::Lexer(std::string_view text, std::string source_name) : text_(text), source_name_(std::move(source_name)) {}

void Lexer::fail(uint32_t line, uint32_t column, const std::string& what) const {
  throw Error(ErrorKind::parse, place(line, column) + ": " + what);
}

std::string Lexer::place(uint32_t line, uint32_t column) const {
  return source_name_ + ":" + std::to_string(line) + ":" + std::to_string(column);
}

char Lexer::take() {
  char c = text_[pos_++];
  if (c == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  return c;
}

void Lexer::skip_space_and_comments() {
  while (pos_ < text_.size()) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      take();
    } else if (c == '/' && peek(1) == '/') {
      while (pos_ < text_.size() && peek() != '\n')
        take();
    } else {
      return;
    }
  }
}

std::string Lexer::take_while_identifier_char() {
  std::string out;
  while (is_identifier_char(peek()))
    out += take();
  return out;
}

Token Lexer::next() {
  skip_space_and_comments();
  Token token{TokenKind::eof, "", line_, column_};
  if (pos_ >= text_.size()) return token;
  char c = peek();
  if (is_letter(c)) {
    token.kind = TokenKind::bare_id;
    token.text = take_while_identifier_char();
    return token;
  }
  if (is_digit(c) || (c == '-' && is_digit(peek(1)))) return lex_number(token);
  if (c == '"') return lex_string(token);
  if (c == '%') return lex_prefixed(token, TokenKind::value_id);
  if (c == '@') return lex_prefixed(token, TokenKind::symbol);
  if (c == '!') return lex_prefixed(token, TokenKind::type_id);
  if (c == '-' && peek(1) == '>') {
    take();
    take();
    token.kind = TokenKind::arrow;
    token.text = "->";
    return token;
  }
  // * + - / appear only inside symbolic dims (batch*6, seq-1); '-' before a digit starts a number.
  if (std::string_view("(){}[]<>,:=#*+-/").find(c) != std::string_view::npos) {
    token.kind = TokenKind::punct;
    token.text = std::string(1, take());
    return token;
  }
  fail(line_, column_, std::string("unexpected character '") + c + "', expected a token of kiln's MLIR form");
}

// Numbers are lexed generously (`2x`, `1.5e-3`, `0x7FF0...`) so that the parser can name a malformed
// one whole instead of stopping in its middle.
Token Lexer::lex_number(Token token) {
  token.kind = TokenKind::number;
  if (peek() == '-') token.text += take();
  while (is_identifier_char(peek()) ||
         ((peek() == '+' || peek() == '-') && !token.text.empty() &&
          (token.text.back() == 'e' || token.text.back() == 'E') && is_digit(peek(1)) && token.text.find("0x") != 0)) {
    token.text += take();
  }
  return token;
}

Token Lexer::lex_string(Token token) {
  token.kind = TokenKind::string;
  take();
  while (true) {
    if (pos_ >= text_.size() || peek() == '\n') fail(token.line, token.column, "unterminated string, expected '\"'");
    char c = take();
    if (c == '"') return token;
    if (c != '\\') {
      token.text += c;
      continue;
    }
    uint32_t line = line_, column = column_ - 1;
    char e = pos_ < text_.size() ? take() : '\0';
    if (e == '"' || e == '\\') {
      token.text += e;
    } else if (e == 'n') {
      token.text += '\n';
    } else if (e == 't') {
      token.text += '\t';
    } else if (hex_value(e) >= 0 && hex_value(peek()) >= 0) {
      token.text += static_cast<char>(hex_value(e) * 16 + hex_value(take()));
    } else {
      fail(line, column, "bad escape in string, expected \\\", \\\\, \\n, \\t or two hex digits");
    }
  }
}

Token Lexer::lex_prefixed(Token token, TokenKind kind) {
  token.kind = kind;
  take();
  if (kind == TokenKind::symbol && peek() == '"') {
    token.text = lex_string(token).text;
    return token;
  }
  token.text = take_while_identifier_char();
  if (token.text.empty()) fail(token.line, token.column, "empty name after its sigil, expected a name");
  return token;
}

BuiltinShape Lexer::builtin_shape() {
  BuiltinShape shape;
  uint32_t line = line_, column = column_;
  while (is_digit(peek())) {
    std::string digits;
    while (is_digit(peek()))
      digits += take();
    if (peek() != 'x' || digits.size() > 18) fail(line, column, "bad tensor dim `" + digits + "`, expected <size>x");
    take();
    shape.dims.push_back(std::stoll(digits));
  }
  shape.element_line = line_;
  shape.element_column = column_;
  while (is_letter(peek()) || is_digit(peek()))
    shape.element_type += take();
  if (shape.element_type.empty()) fail(line_, column_, "missing element type, expected e.g. tensor<2x3xf32>");
  return shape;
}

} // namespace kiln::ir::text
