#include "ampdelta/devserver/ticket.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "ampdelta/util/json_internal.h"

namespace ampdelta::devserver {
namespace {

using nlohmann::json;

arrow::Status NotATicket(const char* why) {
  return arrow::Status::Invalid("ticket decoding error: not a dev-server ticket (", why,
                                ")");
}

}  // namespace

arrow::Result<std::string> EncodeTicket(const Ticket& ticket) {
  json cursor;
  if (!ticket.cursor.empty()) {
    cursor = json_util::ParseJson(ticket.cursor);
    if (!cursor.is_object())
      return arrow::Status::Invalid("ticket cursor is not a JSON object");
  }
  return json_util::DumpJson(
      json{{"query", ticket.query}, {"stream", ticket.streaming}, {"cursor", cursor}},
      "the ticket");
}

arrow::Result<Ticket> DecodeTicket(std::string_view bytes) {
  const json doc = json_util::ParseJson(bytes);
  if (!doc.is_object()) return NotATicket("not a JSON object");
  auto query = doc.find("query");
  if (query == doc.end() || !query->is_string()) return NotATicket("no query");
  Ticket ticket;
  ticket.query = query->get<std::string>();
  // Read member by member: json::value() throws on a wrongly typed member.
  const std::optional<bool> streaming = json_util::BoolOr(doc, "stream", false);
  if (!streaming) return NotATicket("stream is not a boolean");
  ticket.streaming = *streaming;
  auto cursor = doc.find("cursor");
  if (cursor != doc.end() && !cursor->is_null()) {
    if (!cursor->is_object()) return NotATicket("cursor is not an object");
    // Parsed text is UTF-8, so the lossy dump loses nothing.
    ticket.cursor = json_util::DumpJsonLossy(*cursor);
  }
  return ticket;
}

}  // namespace ampdelta::devserver
