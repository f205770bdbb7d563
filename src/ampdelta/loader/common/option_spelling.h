#pragma once

/// \file option_spelling.h
/// \brief How the caller wrote the load's options, so that a message naming one tells the
/// user what to type where they are: `--takeover after-table-max` on the CLI,
/// `takeover='after-table-max'` in Python.

#include <cstdint>
#include <string>
#include <string_view>

namespace ampdelta::loader {

/// \brief The surface a load was started from (LoadOptions::option_spelling).
enum class OptionSpelling : uint8_t {
  kCli,     // --block-column block_num
  kPython,  // block_column='block_num'
};

/// \brief One option's value as each surface writes it; empty: the option alone.
struct OptionValue {
  std::string_view cli;
  std::string_view python;
};

/// \brief `key` (a config/keyword name, `block_column`) with `value`, as `spelling`
/// writes it: `--block-column` / `--takeover from-block:N` on the CLI, `block_column=` /
/// `takeover=('from-block', N)` in Python.
std::string SpellOption(OptionSpelling spelling, std::string_view key,
                        OptionValue value = {});

}  // namespace ampdelta::loader
