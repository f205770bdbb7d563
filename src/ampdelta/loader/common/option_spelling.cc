#include "ampdelta/loader/common/option_spelling.h"

#include <algorithm>

namespace ampdelta::loader {

std::string SpellOption(OptionSpelling spelling, std::string_view key,
                        OptionValue value) {
  if (spelling == OptionSpelling::kPython) {
    return std::string(key) + "=" + std::string(value.python);
  }
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  if (!value.cli.empty()) flag += " " + std::string(value.cli);
  return flag;
}

}  // namespace ampdelta::loader
