#include "cli/command_reader.hpp"
#include <cstdlib>
#include <istream>
#include <ostream>
#if KILN_LINE_EDITING
#include <editline/readline.h>
#endif

namespace kiln::tools {

CommandReader::CommandReader(std::istream& in, std::ostream& out, bool interactive)
    : in_(in), out_(out), interactive_(interactive) {}

std::optional<std::string> CommandReader::next_line(const std::string& prompt) {
#if KILN_LINE_EDITING
  if (interactive_) {
    out_.flush();
    char* raw = readline(prompt.c_str());
    if (!raw) return std::nullopt;
    std::string line(raw);
    std::free(raw);
    if (line.find_first_not_of(" \t") != std::string::npos) add_history(line.c_str());
    return line;
  }
#endif
  if (interactive_) out_ << prompt << std::flush;
  std::string line;
  if (!std::getline(in_, line)) return std::nullopt;
  return line;
}

} // namespace kiln::tools
