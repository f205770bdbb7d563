#pragma once

/// \file file_tags.h
/// \brief `add.tags` when files are combined (compaction, rewrites).
///
/// ampdelta treats a tag whose value is a JSON array as a set: the streaming loader
/// records the block ranges a file may hold that way, and a file made from others must
/// keep them all. Other tags survive only when every input agrees on their value.

#include <optional>
#include <vector>

#include "ampdelta/delta/log/actions.h"

namespace ampdelta::delta {

/// \brief Return the tags of a file made from `files`: set-valued tags (JSON arrays)
/// unioned (elements deduplicated, in first-seen order), other tags kept when every file
/// has the same value; nullopt when nothing is left.
std::optional<NullableStringMap> MergeFileTags(const std::vector<const Add*>& files);

}  // namespace ampdelta::delta
