#include "ampdelta/amp/query_text.h"

#include <cctype>
#include <optional>
#include <vector>

#include "ampdelta/util/ascii.h"
#include "ampdelta/util/status.h"

namespace ampdelta::amp {
namespace {

enum class TokenKind : uint8_t { kWord, kQuoted, kString, kSymbol };

struct Token {
  TokenKind kind;
  size_t begin;
  size_t end;
  /// Parenthesis depth the token is at (a parenthesis is at the depth outside it).
  int depth;
  /// Words: upper case. Symbols: the character.
  std::string text;
};

bool IsWordStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

bool IsWordPart(char c) {
  return IsWordStart(c) || std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '$';
}

// Split `sql` into tokens, skipping whitespace and comments (`--` to the end of the line,
// `/* … */` nested as DataFusion's parser nests them).
arrow::Result<std::vector<Token>> Tokenize(std::string_view sql) {
  std::vector<Token> tokens;
  int depth = 0;
  size_t i = 0;
  const size_t n = sql.size();
  while (i < n) {
    const char c = sql[i];
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
    } else if (c == '-' && i + 1 < n && sql[i + 1] == '-') {
      while (i < n && sql[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && sql[i + 1] == '*') {
      int nesting = 0;
      const size_t start = i;
      do {
        if (i + 1 < n && sql[i] == '/' && sql[i + 1] == '*') {
          ++nesting;
          i += 2;
        } else if (i + 1 < n && sql[i] == '*' && sql[i + 1] == '/') {
          --nesting;
          i += 2;
        } else if (i < n) {
          ++i;
        }
      } while (nesting > 0 && i < n);
      if (nesting > 0) {
        return arrow::Status::Invalid(
            "the query has an unterminated /* comment at offset ", start);
      }
    } else if (c == '\'' || c == '"' || c == '`') {
      const size_t start = i++;
      while (true) {
        if (i >= n) {
          return arrow::Status::Invalid(
              "the query has an unterminated ",
              c == '\'' ? "string literal" : "quoted identifier", " at offset ", start);
        }
        if (sql[i] == c) {
          if (i + 1 < n && sql[i + 1] == c) {
            i += 2;  // a doubled quote stands for itself
            continue;
          }
          ++i;
          break;
        }
        ++i;
      }
      tokens.push_back({c == '\'' ? TokenKind::kString : TokenKind::kQuoted, start, i,
                        depth, std::string(sql.substr(start, i - start))});
    } else if (IsWordPart(c)) {
      const size_t start = i;
      while (i < n && IsWordPart(sql[i])) ++i;
      tokens.push_back(
          {TokenKind::kWord, start, i, depth, AsciiUpper(sql.substr(start, i - start))});
    } else {
      if (c == ')') {
        if (depth == 0) {
          return arrow::Status::Invalid("the query has an unbalanced ')' at offset ", i);
        }
        --depth;
      }
      tokens.push_back({TokenKind::kSymbol, i, i + 1, depth, std::string(1, c)});
      if (c == '(') ++depth;
      ++i;
    }
  }
  if (depth != 0) return arrow::Status::Invalid("the query has an unclosed '('");
  return tokens;
}

bool IsWord(const Token& token, const char* word) {
  return token.kind == TokenKind::kWord && token.text == word;
}

bool IsSymbol(const Token& token, char symbol) {
  return token.kind == TokenKind::kSymbol && token.text.size() == 1 &&
         token.text[0] == symbol;
}

// The tokens that matter: trailing `;` dropped. A string that does not tokenize is
// treated as having no tokens (the server reports what is wrong with it).
std::vector<Token> Significant(std::string_view sql) {
  auto tokens = Tokenize(sql);
  if (!tokens.ok()) return {};
  while (!tokens->empty() && IsSymbol(tokens->back(), ';')) tokens->pop_back();
  return *std::move(tokens);
}

// The index of the last top-level SETTINGS keyword.
std::optional<size_t> FindSettings(const std::vector<Token>& tokens) {
  std::optional<size_t> found;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].depth == 0 && IsWord(tokens[i], "SETTINGS")) found = i;
  }
  return found;
}

// The `key = value` items of a SETTINGS clause starting at token `settings`, as
// half-open token index ranges.
std::vector<std::pair<size_t, size_t>> SettingItems(const std::vector<Token>& tokens,
                                                    size_t settings) {
  std::vector<std::pair<size_t, size_t>> items;
  size_t begin = settings + 1;
  for (size_t i = begin; i <= tokens.size(); ++i) {
    if (i == tokens.size() || (tokens[i].depth == 0 && IsSymbol(tokens[i], ','))) {
      if (i > begin) items.emplace_back(begin, i);
      begin = i + 1;
    }
  }
  return items;
}

bool IsStreamItem(const std::vector<Token>& tokens, std::pair<size_t, size_t> item) {
  return IsWord(tokens[item.first], "STREAM");
}

bool IsStreamTrue(const std::vector<Token>& tokens, std::pair<size_t, size_t> item) {
  return item.second - item.first == 3 && IsWord(tokens[item.first], "STREAM") &&
         IsSymbol(tokens[item.first + 1], '=') && IsWord(tokens[item.first + 2], "TRUE");
}

std::string_view Text(std::string_view sql, const std::vector<Token>& tokens,
                      std::pair<size_t, size_t> item) {
  const size_t begin = tokens[item.first].begin;
  return sql.substr(begin, tokens[item.second - 1].end - begin);
}

// The text up to the end of the last significant token.
std::string Head(std::string_view sql, const std::vector<Token>& tokens) {
  return tokens.empty() ? std::string() : std::string(sql.substr(0, tokens.back().end));
}

// Return true when `item` (a GROUP BY item) is the column `column`, bare (folded to lower
// case, as DataFusion folds unquoted identifiers), quoted, or qualified by a table.
bool NamesColumn(std::string_view sql, const std::vector<Token>& tokens,
                 std::pair<size_t, size_t> item, const std::string& column) {
  const size_t count = item.second - item.first;
  if (count % 2 == 0) return false;
  for (size_t i = item.first; i < item.second; ++i) {
    const bool name_slot = (i - item.first) % 2 == 0;
    const Token& token = tokens[i];
    if (name_slot && token.kind != TokenKind::kWord && token.kind != TokenKind::kQuoted) {
      return false;
    }
    if (!name_slot && !IsSymbol(token, '.')) return false;
  }
  const Token& last = tokens[item.second - 1];
  if (last.kind == TokenKind::kWord) {
    return AsciiLower(sql.substr(last.begin, last.end - last.begin)) == column;
  }
  std::string unquoted;
  const std::string_view body = sql.substr(last.begin + 1, last.end - last.begin - 2);
  for (size_t i = 0; i < body.size(); ++i) {
    unquoted.push_back(body[i]);
    if (body[i] == sql[last.begin] && i + 1 < body.size()) ++i;  // doubled quote
  }
  return unquoted == column;
}

// Return true when the GROUP BY at token `group` has `column` as one of its items.
bool GroupsBy(std::string_view sql, const std::vector<Token>& tokens, size_t group,
              const std::string& column) {
  size_t begin = group + 1;
  if (begin < tokens.size() && IsWord(tokens[begin], "BY")) ++begin;
  for (size_t i = begin; i <= tokens.size(); ++i) {
    const bool clause_end =
        i == tokens.size() ||
        (tokens[i].depth == 0 &&
         (IsWord(tokens[i], "HAVING") || IsWord(tokens[i], "WINDOW") ||
          IsWord(tokens[i], "QUALIFY") || IsWord(tokens[i], "ORDER") ||
          IsWord(tokens[i], "SETTINGS") || IsWord(tokens[i], "UNION")));
    if (clause_end || (tokens[i].depth == 0 && IsSymbol(tokens[i], ','))) {
      if (i > begin && NamesColumn(sql, tokens, {begin, i}, column)) return true;
      begin = i + 1;
    }
    if (clause_end) break;
  }
  return false;
}

arrow::Status Refuse(const std::string& why) {
  return InvalidInputError("cannot split the query into block ranges: ", why);
}

}  // namespace

bool HasStreamSetting(std::string_view sql) {
  const std::vector<Token> tokens = Significant(sql);
  const auto settings = FindSettings(tokens);
  if (!settings) return false;
  for (const auto& item : SettingItems(tokens, *settings)) {
    if (IsStreamTrue(tokens, item)) return true;
  }
  return false;
}

std::string EnsureStreamingQuery(std::string_view sql) {
  const std::vector<Token> tokens = Significant(sql);
  const std::string head = Head(sql, tokens);
  if (HasStreamSetting(sql)) return head;
  // A SETTINGS clause without `stream = true`: extend it rather than adding a second one.
  if (FindSettings(tokens)) return head + ", stream = true";
  return head + " SETTINGS stream = true";
}

std::string WithoutStreamSetting(std::string_view sql) {
  const std::vector<Token> tokens = Significant(sql);
  const auto settings = FindSettings(tokens);
  if (!settings) return Head(sql, tokens);
  std::string kept;
  for (const auto& item : SettingItems(tokens, *settings)) {
    if (IsStreamItem(tokens, item)) continue;
    if (!kept.empty()) kept += ", ";
    kept += Text(sql, tokens, item);
  }
  if (*settings == 0) return std::string();
  std::string text(sql.substr(0, tokens[*settings - 1].end));
  if (!kept.empty()) text += " SETTINGS " + kept;
  return text;
}

std::string QuoteIdentifier(std::string_view name) {
  std::string quoted = "\"";
  for (char c : name) {
    quoted.push_back(c);
    if (c == '"') quoted.push_back('"');
  }
  return quoted + "\"";
}

arrow::Result<std::string> AddBlockFilter(std::string_view sql, const std::string& column,
                                          uint64_t first, uint64_t last) {
  if (column.empty()) return Refuse("the block column's name is empty");
  auto tokenized = Tokenize(sql);
  if (!tokenized.ok()) return Refuse(tokenized.status().message());
  std::vector<Token> tokens = *std::move(tokenized);
  while (!tokens.empty() && IsSymbol(tokens.back(), ';')) tokens.pop_back();
  if (tokens.empty()) return Refuse("it is empty");
  std::optional<size_t> select;
  std::optional<size_t> from;
  std::optional<size_t> where;
  std::optional<size_t> end;  // the first top-level clause after the FROM (or WHERE) list
  bool compound = false;      // anything a filter in the WHERE would change
  std::optional<size_t> group;
  bool having = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& token = tokens[i];
    if (token.depth != 0) {
      // A LIMIT in a subquery picks rows across every block too (unless ordered, not
      // the same rows each time).
      if ((IsWord(token, "LIMIT") || IsWord(token, "OFFSET") || IsWord(token, "FETCH")) &&
          !(i > 0 && IsWord(tokens[i - 1], "AS"))) {
        return Refuse("a " + token.text +
                      " in a subquery picks rows across every block, which no block "
                      "range can");
      }
      continue;
    }
    if (IsSymbol(token, ';')) return Refuse("it holds more than one statement");
    if (token.kind != TokenKind::kWord) continue;
    // A keyword right after AS is an alias (`FROM t AS window`), not a clause.
    if (i > 0 && IsWord(tokens[i - 1], "AS")) continue;
    const std::string& word = token.text;
    if (!select) {
      if (word == "SELECT") select = i;
      continue;
    }
    if (word == "LIMIT" || word == "OFFSET" || word == "FETCH") {
      return Refuse("a top-level " + word +
                    " picks rows across every block, which no block range can");
    }
    if (!from) {
      if (word == "DISTINCT" && i + 1 < tokens.size() && IsWord(tokens[i + 1], "ON")) {
        return Refuse("SELECT DISTINCT ON keeps one row per key across every block");
      }
      if (word == "OVER") compound = true;
      if (word == "FROM") from = i;
      continue;
    }
    if (word == "UNION" || word == "INTERSECT" || word == "EXCEPT" || word == "WINDOW" ||
        word == "QUALIFY" || word == "OVER") {
      compound = true;
    }
    if (word == "GROUP" && !group) group = i;
    if (word == "HAVING") having = true;
    if (word == "WHERE" && !where && !end) {
      where = i;
    } else if ((word == "GROUP" || word == "HAVING" || word == "WINDOW" ||
                word == "QUALIFY" || word == "ORDER" || word == "SETTINGS") &&
               !end) {
      end = i;
    }
  }
  if (!select) return Refuse("it has no top-level SELECT");
  if (!from) return Refuse("its SELECT has no FROM");
  // Groups by the block column hold one block each, so filtering rows first gives the
  // same groups; other groups (and aggregates over every row) would be split.
  if (group) {
    if (!GroupsBy(sql, tokens, *group, column)) compound = true;
  } else if (having) {
    compound = true;
  }
  // The block column must be the source's own column for a WHERE to filter it: `*`, or
  // the column itself without an alias. Without GROUP BY, a function call in the list may
  // aggregate every row.
  bool passes_column = false;
  size_t begin = *select + 1;
  if (IsWord(tokens[begin], "DISTINCT") || IsWord(tokens[begin], "ALL")) ++begin;
  for (size_t i = begin; i <= *from; ++i) {
    if (i < *from && !group && tokens[i].depth == 0 && IsSymbol(tokens[i], '(')) {
      compound = true;
    }
    if (i == *from || (tokens[i].depth == 0 && IsSymbol(tokens[i], ','))) {
      if (i == begin + 1 && IsSymbol(tokens[begin], '*')) passes_column = true;
      if (i > begin && NamesColumn(sql, tokens, {begin, i}, column)) passes_column = true;
      begin = i + 1;
    }
  }
  const std::string quoted = QuoteIdentifier(column);
  const std::string filter = quoted + " >= " + std::to_string(first) + " AND " + quoted +
                             " <= " + std::to_string(last);
  const std::string_view body = sql.substr(0, tokens.back().end);
  if (compound || !passes_column) {
    // Filter the query's result instead: right whatever the query computes, and servers
    // push such a filter down through projections and groupings by the column.
    const size_t settings_at = FindSettings(tokens).value_or(tokens.size());
    const size_t query_end = settings_at == 0 ? 0 : tokens[settings_at - 1].end;
    std::string text =
        "SELECT * FROM (" + std::string(sql.substr(0, query_end)) + "\n) WHERE " + filter;
    if (settings_at < tokens.size()) {
      text += " " + std::string(body.substr(tokens[settings_at].begin));
    }
    return text;
  }
  const size_t stop = end ? *end : tokens.size();  // token index after the condition
  std::string text;
  if (where) {
    if (stop == *where + 1) return Refuse("its WHERE has no condition");
    bool has_or = false;
    for (size_t i = *where + 1; i < stop; ++i) {
      if (tokens[i].depth == 0 && IsWord(tokens[i], "OR")) has_or = true;
    }
    const size_t where_end = tokens[*where].end;
    const size_t condition_end = tokens[stop - 1].end;
    text = std::string(sql.substr(0, where_end));
    text += has_or ? " (" : "";
    text += sql.substr(where_end, condition_end - where_end);
    text += has_or ? ")" : "";
    text += " AND " + filter;
    text += body.substr(condition_end);
  } else {
    const size_t anchor = tokens[stop - 1].end;
    text = std::string(sql.substr(0, anchor)) + " WHERE " + filter;
    text += body.substr(anchor);
  }
  return text;
}

}  // namespace ampdelta::amp
