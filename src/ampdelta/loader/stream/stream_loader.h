#pragma once

/// \file stream_loader.h
/// \brief Streaming loads (docs/streaming.md): follow a streaming query into a Delta
/// table, exactly once across crashes and restarts, undoing reorgs at the cost of the
/// affected data.

#include <string>

#include "ampdelta/amp/client.h"
#include "ampdelta/loader/common/config.h"
#include "ampdelta/loader/common/load_options.h"
#include "ampdelta/loader/common/load_result.h"

namespace ampdelta::loader {

/// \brief Run `sql` as a streaming query and load it into the configured table until the
/// stream ends, `options.until_block` is committed, or `*options.stop` is set.
///
/// Microbatches commit when their `ranges_complete` marker has arrived, grouped by
/// `stream_commit_rows` / `stream_commit_interval`; each commit carries the stream's
/// `txn` (app id StreamAppId(sql)) and its files' block ranges, so a restart resumes
/// after the last committed block with `amp-resume`, and a second loader of the same
/// stream fails its first commit instead of duplicating rows. A reorg removes exactly the
/// rows of the invalidated microbatches in one commit (files wholly past the fork
/// removed, straddling files rewritten); a partial reorg also invalidates the straddling
/// microbatch and resumes before it. Transient server failures reconnect with
/// `resilience.retry` back-off.
///
/// \return the totals; each commit and reorg is also reported to `options.on_result`
LoadResult LoadStream(amp::Client& client, const std::string& sql,
                      const DeltaLakeConfig& config, const LoadOptions& options);

}  // namespace ampdelta::loader
