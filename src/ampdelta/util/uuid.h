#pragma once

/// \file uuid.h
/// \brief Random (version 4) UUIDs for file names, table ids and transaction ids.

#include <string>

namespace ampdelta {

/// \brief Return a new random UUID in canonical form (8-4-4-4-12 lower-case hex).
/// Thread-safe.
std::string NewUuid();

}  // namespace ampdelta
