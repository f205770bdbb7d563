#pragma once

/// \file table_features.h
/// \brief Which protocol versions and table features ampdelta reads and writes
/// (PROTOCOL.md "Protocol Evolution", "Table Features").

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <arrow/status.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta {

/// The writer feature domain metadata needs.
inline constexpr const char* kDomainMetadataFeature = "domainMetadata";

/// \brief Fail with kUnsupportedFeature, listing the features, unless ampdelta can read a
/// table with this protocol.
arrow::Status CheckReadSupported(const Protocol& protocol);

/// \brief Fail with kUnsupportedFeature, listing what ampdelta does not implement, unless
/// it can write this table: every writer feature must be implemented, and features whose
/// rules ampdelta does not enforce (invariants, generated or identity columns, column
/// defaults, row tracking) must not be in use. CHECK constraints are the writer's
/// (check_constraints.h); column mapping is validated (column_mapping.h).
arrow::Status CheckWriteSupported(const Protocol& protocol, const Metadata& metadata,
                                  const arrow::Schema& schema);

/// \brief Return the protocol for a new table with this schema and configuration: (1,2);
/// (1,4) for the change data feed alone; table features (writer 7) when a column needs
/// `timestampNtz` or the configuration turns on in-commit timestamps or deletion vectors
/// (reader 3 only for the reader features `timestampNtz` and `deletionVectors`).
Protocol ProtocolForNewTable(const arrow::Schema& schema,
                             const std::map<std::string, std::string>& configuration = {},
                             const std::vector<std::string>& writer_features = {});

/// \brief Return `existing` upgraded (never downgraded) to what a table with this schema
/// and configuration needs, as ProtocolForNewTable: a legacy protocol stays legacy while
/// only the change data feed is asked for; otherwise the features are listed, with those
/// the legacy versions implied (as Spark lists them). `writer_features` are needed
/// whatever the configuration says (`domainMetadata` for a stream's cursor in the log,
/// `clustering`).
Protocol UpgradeProtocol(const Protocol& existing, const arrow::Schema& schema,
                         const std::map<std::string, std::string>& configuration,
                         const std::vector<std::string>& writer_features = {});

/// \brief Return true when the table's protocol has writer feature `feature`.
bool HasWriterFeature(const Protocol& protocol, const std::string& feature);

/// \brief Return the weakest protocol that has everything `existing` and `required` have:
/// both legacy, the higher versions; otherwise table features (reader 3 when either needs
/// reader features, writer 7) listing the features of both, legacy versions' implied ones
/// included, so a table never loses a feature it had.
Protocol CombineProtocols(const Protocol& existing, const Protocol& required);

/// \brief Return the writer features a protocol implies (explicit list at writer v7,
/// legacy features for lower versions).
std::vector<std::string> ImpliedWriterFeatures(const Protocol& protocol);

}  // namespace ampdelta::delta
