// The table of table features (table_feature.h): one row per feature in enum order, the
// names the protocol uses, and the legacy versions each implies.

#include "ampdelta/delta/log/table_feature.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <arrow/type.h>
#include <gtest/gtest.h>

#include "ampdelta/delta/log/protocol_support.h"

namespace ampdelta::delta {
namespace {

TEST(TableFeatureTest, EveryFeatureHasOneRowInEnumOrderWithADistinctName) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < TableFeatureInfos().size(); ++i) {
    const auto& info = TableFeatureInfos()[i];
    EXPECT_EQ(static_cast<size_t>(info.feature), i) << info.name;
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_EQ(FeatureNamed(info.name), info.feature);
    // ampdelta reads only what readers must know of; what it reads it also writes.
    if (info.readable) {
      EXPECT_EQ(info.kind, FeatureKind::kReaderWriter) << info.name;
      EXPECT_TRUE(info.writable) << info.name;
    }
  }
  EXPECT_EQ(FeatureNamed("someFutureFeature"), std::nullopt);
  EXPECT_EQ(FeatureNamed("DeletionVectors"), std::nullopt);  // names are case-sensitive
  EXPECT_EQ(FeatureName(TableFeature::kTypeWideningPreview), "typeWidening-preview");
}

TEST(TableFeatureTest, LegacyVersionsImplyTheFeaturesOfTheirProtocolVersions) {
  Protocol legacy;
  legacy.min_writer_version = 1;
  EXPECT_TRUE(ImpliedWriterFeatures(legacy).empty());
  legacy.min_writer_version = 2;
  EXPECT_EQ(ImpliedWriterFeatures(legacy),
            (std::vector<std::string>{"appendOnly", "invariants"}));
  legacy.min_writer_version = 6;
  legacy.min_reader_version = 2;
  EXPECT_EQ(ImpliedWriterFeatures(legacy),
            (std::vector<std::string>{"appendOnly", "invariants", "checkConstraints",
                                      "changeDataFeed", "generatedColumns",
                                      "columnMapping", "identityColumns"}));
  EXPECT_EQ(ImpliedReaderFeatures(legacy), std::vector<std::string>{"columnMapping"});
  EXPECT_TRUE(HasWriterFeature(legacy, TableFeature::kIdentityColumns));
  EXPECT_FALSE(HasWriterFeature(legacy, TableFeature::kDeletionVectors));

  Protocol listed;
  listed.min_reader_version = 3;
  listed.min_writer_version = 7;
  listed.reader_features = std::vector<std::string>{"deletionVectors"};
  listed.writer_features =
      std::vector<std::string>{"deletionVectors", "someFutureFeature"};
  EXPECT_EQ(ImpliedWriterFeatures(listed),
            *listed.writer_features);  // unknown names kept
  EXPECT_TRUE(HasWriterFeature(listed, TableFeature::kDeletionVectors));
  EXPECT_FALSE(HasWriterFeature(listed, TableFeature::kAppendOnly));
}

// A reader-writer feature a write asks for (type widening for a widened column) is listed
// for readers too, as the protocol requires: before the feature table it was listed for
// writers only, at reader version 1.
TEST(TableFeatureTest, AReaderWriterFeatureAWriteNeedsIsListedForReadersToo) {
  const arrow::Schema schema({arrow::field("n", arrow::int32())});
  const Protocol upgraded =
      UpgradeProtocol(Protocol{}, schema, {}, {TableFeature::kTypeWidening});
  EXPECT_EQ(upgraded.min_reader_version, 3);
  EXPECT_EQ(upgraded.reader_features, std::vector<std::string>{"typeWidening"});
  ASSERT_TRUE(upgraded.writer_features.has_value());
  EXPECT_NE(std::find(upgraded.writer_features->begin(), upgraded.writer_features->end(),
                      "typeWidening"),
            upgraded.writer_features->end());
  // A writer-only feature stays off the readers' list.
  const Protocol domains =
      UpgradeProtocol(Protocol{}, schema, {}, {TableFeature::kDomainMetadata});
  EXPECT_EQ(domains.min_reader_version, 1);
  EXPECT_FALSE(domains.reader_features.has_value());
}

// A table that lists deletion vectors for writers but not for readers gets them listed
// for readers when a write needs them, whatever feature the write came for.
TEST(TableFeatureTest, AFeatureListedForWritersOnlyIsListedForReadersWhenNeeded) {
  Protocol writer_only;
  writer_only.min_reader_version = 3;
  writer_only.min_writer_version = 7;
  writer_only.reader_features = std::vector<std::string>{};
  writer_only.writer_features = std::vector<std::string>{"deletionVectors"};
  const arrow::Schema schema({arrow::field("n", arrow::int32())});
  const Protocol upgraded =
      UpgradeProtocol(writer_only, schema, {{"delta.enableDeletionVectors", "true"}});
  EXPECT_EQ(upgraded.reader_features, std::vector<std::string>{"deletionVectors"});
  EXPECT_EQ(upgraded.writer_features, std::vector<std::string>{"deletionVectors"});
}

}  // namespace
}  // namespace ampdelta::delta
