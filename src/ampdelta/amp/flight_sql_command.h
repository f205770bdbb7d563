#pragma once

/// \file flight_sql_command.h
/// \brief Hand-encoded Flight SQL `CommandStatementQuery` wrapped in
/// `google.protobuf.Any`.
///
/// The SDK wheel ships no Flight SQL, and Amp understands only this one command, so the
/// two messages are encoded here directly: each is a sequence of length-delimited fields.

#include <string>
#include <string_view>

namespace ampdelta::amp {

/// \brief The `type_url` Amp requires for a statement query.
inline constexpr std::string_view kStatementQueryTypeUrl =
    "type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery";

/// \brief Return the serialized `Any{type_url, value=CommandStatementQuery{query=sql}}`,
/// the bytes Amp expects as the CMD of the GetFlightInfo descriptor.
std::string EncodeStatementQueryCommand(std::string_view sql);

}  // namespace ampdelta::amp
