#pragma once

/// \file ticket.h
/// \brief The dev server's opaque Flight ticket: everything DoGet needs to re-plan a
/// query. A client may send any bytes as a ticket, so decoding checks all of them.

#include <string>
#include <string_view>

#include <arrow/result.h>

namespace ampdelta::devserver {

/// \brief What GetFlightInfo hands to DoGet.
struct Ticket {
  /// The SQL text.
  std::string query;
  /// True for a streaming query (`SETTINGS stream = true` or the `amp-stream` header).
  bool streaming = false;
  /// The client's `amp-resume` cursor as JSON object text; empty for none.
  std::string cursor;

  bool operator==(const Ticket& other) const = default;
};

/// \brief Encode a ticket as `{"query":…,"stream":…,"cursor":{…} or null}`.
/// \return Invalid when the query is not UTF-8 or the cursor is not a JSON object
arrow::Result<std::string> EncodeTicket(const Ticket& ticket);

/// \brief Decode a ticket EncodeTicket wrote.
/// \return Invalid("ticket decoding error: …") for any other bytes
arrow::Result<Ticket> DecodeTicket(std::string_view bytes);

}  // namespace ampdelta::devserver
