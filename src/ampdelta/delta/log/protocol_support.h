#pragma once

/// \file protocol_support.h
/// \brief Which protocols ampdelta reads and writes, and the protocol a write needs
/// (PROTOCOL.md "Protocol Evolution", "Table Features"); the features themselves are in
/// table_feature.h.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <arrow/status.h>
#include <arrow/type_fwd.h>

#include "ampdelta/delta/log/actions.h"
#include "ampdelta/delta/log/table_feature.h"

namespace ampdelta::delta {

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
                             const std::vector<TableFeature>& writer_features = {});

/// \brief Return `existing` upgraded (never downgraded) to what a table with this schema
/// and configuration needs, as ProtocolForNewTable: a legacy protocol stays legacy while
/// only the change data feed is asked for; otherwise the features are listed, with those
/// the legacy versions implied (as Spark lists them). `writer_features` are needed
/// whatever the configuration says (`domainMetadata` for a stream's cursor in the log,
/// `clustering`, `typeWidening` for a widened column). A reader-writer feature is listed
/// for readers too (TableFeatureInfo::kind), also where the table listed it for writers
/// only.
Protocol UpgradeProtocol(const Protocol& existing, const arrow::Schema& schema,
                         const std::map<std::string, std::string>& configuration,
                         const std::vector<TableFeature>& writer_features = {});

/// \brief Return the weakest protocol that has everything `existing` and `required` have:
/// both legacy, the higher versions; otherwise table features (reader 3 when either needs
/// reader features, writer 7) listing the features of both, legacy versions' implied ones
/// included, so a table never loses a feature it had.
Protocol CombineProtocols(const Protocol& existing, const Protocol& required);

}  // namespace ampdelta::delta
