#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::ir::text {

enum class TokenKind {
  eof,
  bare_id,  // module, func.func, f32, array, true, attribute names
  value_id, // %0, %arg1 (text without the '%')
  symbol,   // @name or @"name" (text without the '@', unescaped)
  type_id,  // !kiln.tensor (text without the '!')
  number,   // -?[0-9][A-Za-z0-9_.]* plus exponent signs: classified by the parser
  string,   // "..." (text unescaped)
  punct,    // one of ( ) { } [ ] < > , : = # * + - /
  arrow,    // ->
};

struct Token {
  TokenKind kind = TokenKind::eof;
  std::string text;
  uint32_t line = 1;
  uint32_t column = 1;
};

// The dims and element type of a builtin `tensor<2x3xf32>` type, whose dims fuse with 'x' and
// therefore cannot be split into ordinary tokens.
struct BuiltinShape {
  std::vector<int64_t> dims;
  std::string element_type;
  uint32_t element_line = 1;
  uint32_t element_column = 1;
};

// Splits kiln's MLIR text into tokens on demand; skips whitespace and `//` comments.
class Lexer {
public:
  Lexer(std::string_view text, std::string source_name);

  Token next();
  // Reads `2x3xf32>`'s part before '>' straight from the text; call it right after lexing '<'.
  BuiltinShape builtin_shape();

  // Throws kiln::Error(parse) "<source>:<line>:<col>: <what>".
  [[noreturn]] void fail(uint32_t line, uint32_t column, const std::string& what) const;
  // "<source>:<line>:<col>", for errors of other kinds raised at a place in the text.
  std::string place(uint32_t line, uint32_t column) const;

private:
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  char take();
  void skip_space_and_comments();
  std::string take_while_identifier_char();
  Token lex_number(Token token);
  Token lex_string(Token token);
  Token lex_prefixed(Token token, TokenKind kind);

  std::string_view text_;
  std::string source_name_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  uint32_t column_ = 1;
};

} // namespace kiln::ir::text
