#pragma once

/// \file query_text.h
/// \brief Small, careful edits of SQL text that a client must make. The text is
/// tokenized (quotes, comments, parentheses) and only the top-level statement's clauses
/// are touched, so whitespace, newlines, comments and subqueries never mislead an edit.

#include <cstdint>
#include <string>
#include <string_view>

#include <arrow/result.h>

namespace ampdelta::amp {

/// \brief Return true when the top-level query ends with `SETTINGS … stream = true …`
/// (case-insensitive, ignoring a trailing `;` and whitespace).
bool HasStreamSetting(std::string_view sql);

/// \brief Return `sql` with ` SETTINGS stream = true` appended unless it already streams.
/// Unlike the Python SDK, the clause is never added twice.
std::string EnsureStreamingQuery(std::string_view sql);

/// \brief Return `sql` without `stream = …` in its top-level SETTINGS clause (the clause
/// dropped when nothing else is left) and without a trailing `;`: the same query as a
/// batch query.
std::string WithoutStreamSetting(std::string_view sql);

/// \brief Return `sql` restricted to the rows whose `column` lies in [first, last].
///
/// A selection whose list passes the source's `column` on (`*`, or the column itself),
/// plain, DISTINCT or grouped by `column`, gets the condition ANDed into its top-level
/// WHERE (added when absent, the existing condition parenthesised when it has a top-level
/// OR), before its GROUP BY, ORDER BY or SETTINGS. Any other query (aggregates over every
/// row, other groupings, window functions, UNION, a renamed column) is filtered on its
/// result, `SELECT * FROM (<sql>) WHERE …`, which is right whatever it computes.
///
/// \return Invalid naming the construct when no block range can give a part of the
///   result: a top-level LIMIT / OFFSET / FETCH or DISTINCT ON (they pick rows across
///   every block), no top-level SELECT … FROM, more than one statement, unbalanced
///   parentheses or an unterminated quote or comment
arrow::Result<std::string> AddBlockFilter(std::string_view sql, const std::string& column,
                                          uint64_t first, uint64_t last);

/// \brief Return `name` as a double-quoted SQL identifier (`"` doubled).
std::string QuoteIdentifier(std::string_view name);

}  // namespace ampdelta::amp
