#pragma once

/// \file flight_query_stream.h
/// \brief The QueryStream of one DoGet call, read straight from Arrow Flight's transport.
///
/// FlightClient::DoGet blocks until the server's first message and cannot be cancelled
/// before it returns, and ampd sends nothing before a stream's first microbatch. The
/// transport's DoGet returns at once with a call that TryCancel() ends at any moment, so
/// a stream can time out, be cancelled and be destroyed without leaving a thread behind.

#include <atomic>
#include <chrono>
#include <memory>

#include <arrow/flight/client.h>
#include <arrow/flight/transport.h>
#include <arrow/flight/types.h>
#include <arrow/result.h>

#include "ampdelta/amp/query_stream.h"

namespace ampdelta::amp {

/// \brief Start DoGet for `ticket` on `transport`, which the stream keeps alive.
///
/// The stream reports `planned` as its schema until the server sends its own. With a
/// positive `idle_timeout` each wait for a message is cancelled after that long, and
/// the schema is read before this returns; otherwise the first Next() reads it. A wait
/// is also cancelled within 50 ms of `stop` (when given) turning true.
arrow::Result<std::unique_ptr<QueryStream>> StartFlightQueryStream(
    std::shared_ptr<arrow::flight::internal::ClientTransport> transport,
    const arrow::flight::FlightCallOptions& call, const arrow::flight::Ticket& ticket,
    std::shared_ptr<arrow::Schema> planned, std::chrono::milliseconds idle_timeout,
    const std::atomic<bool>* stop = nullptr);

}  // namespace ampdelta::amp
