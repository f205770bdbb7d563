#pragma once

/// \file sol_parser.h
/// \brief The recursive-descent reader behind ParseSolType and the signature parsers
/// (internal to the evm module).

#include <string>
#include <string_view>
#include <vector>

#include <arrow/result.h>
#include <arrow/status.h>

#include "ampdelta/evm/sol_type.h"

namespace ampdelta::evm {

class SolParser {
 public:
  explicit SolParser(std::string_view text) : text_(text) {}

  /// \brief A type with its array suffixes; names inside tuples are read and dropped.
  arrow::Result<SolType> Type();
  /// \brief `(p, p, …)` where p is `type [indexed] [data location] [name]`; `indexed`
  /// only when `allow_indexed`.
  arrow::Result<std::vector<SolParam>> Params(bool allow_indexed);
  /// \brief An identifier ([A-Za-z_$][A-Za-z0-9_$]*), empty when none is next.
  std::string_view Identifier();
  /// \brief Skip `word` when it is the next identifier.
  bool ConsumeWord(std::string_view word);
  /// \brief Skip `c` when it is the next character (after spaces).
  bool Consume(char c);
  bool AtEnd();
  arrow::Status ExpectEnd();
  /// \brief An error naming the position and the text.
  arrow::Status Error(std::string_view what) const;

 private:
  arrow::Result<SolType> BaseType();
  arrow::Result<SolType> TupleType();
  arrow::Result<SolType> ElementaryType(std::string_view word);
  // `type` unless it holds too many values in place (fixed arrays of fixed arrays …).
  arrow::Result<SolType> CheckStaticSize(SolType type) const;
  void SkipSpace();

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace ampdelta::evm
