#pragma once
#include <iosfwd>
#include <optional>
#include <string>

namespace kiln::tools {

// The lines a REPL reads. On a terminal: a prompt, and line editing with history when the build
// has libedit (-Dline_editing, on when libedit-dev is installed); otherwise plain lines from `in`
// and no prompt, so a piped script's output holds only the answers.
class CommandReader {
public:
  CommandReader(std::istream& in, std::ostream& out, bool interactive);
  // The next line, or nullopt at the end of input.
  std::optional<std::string> next_line(const std::string& prompt);

private:
  std::istream& in_;
  std::ostream& out_;
  bool interactive_;
};

} // namespace kiln::tools
