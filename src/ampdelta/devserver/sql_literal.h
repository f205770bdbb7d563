#pragma once

/// \file sql_literal.h
/// \brief A literal value of the dev server's SQL, on its own so the scalar functions can
/// see literal arguments without depending on the parser.

#include <cstdint>
#include <string>

namespace ampdelta::devserver::sql {

/// \brief A literal value in a predicate.
struct Literal {
  enum class Kind : uint8_t { kInteger, kFloat, kString, kBoolean, kHexBytes, kNull };
  Kind kind = Kind::kNull;
  /// Decimal digits (with sign) for integers, the text for floats and strings, the raw
  /// bytes for hex literals.
  std::string text;
  bool boolean = false;
};

}  // namespace ampdelta::devserver::sql
