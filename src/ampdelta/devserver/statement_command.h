#pragma once

/// \file statement_command.h
/// \brief Decode the GetFlightInfo command Amp accepts: `google.protobuf.Any` packing
/// `arrow.flight.protocol.sql.CommandStatementQuery`.
///
/// Kept apart from the client's encoder on purpose: each side is pinned to golden bytes,
/// so an encoding bug cannot cancel itself out.

#include <string>
#include <string_view>

#include <arrow/result.h>

namespace ampdelta::devserver {

/// \brief The only command type Amp understands.
inline constexpr std::string_view kCommandStatementQueryTypeUrl =
    "type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery";

/// \brief Return the SQL text of an Any-packed CommandStatementQuery.
///
/// \return Invalid("unsupported flight descriptor command: <type_url>") for another
///   type, Invalid("protobuf decode error: …") for malformed bytes or a query that is not
///   UTF-8
arrow::Result<std::string> DecodeStatementQueryCommand(std::string_view bytes);

}  // namespace ampdelta::devserver
