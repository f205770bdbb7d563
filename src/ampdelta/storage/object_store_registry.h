#pragma once

/// \file object_store_registry.h
/// \brief Open the ObjectStore a table URI or path names.

#include <map>
#include <memory>
#include <string>

#include "ampdelta/storage/object_store.h"

namespace ampdelta::storage {

/// \brief Open a store rooted at `uri`: a local path (`./rel`, `/abs`), `file://…`, or
/// `memory://name` (one shared in-process store per name, for tests and dry runs).
///
/// \param[in] options store options (credentials, endpoints) for cloud stores
/// \return the store, or Invalid naming an unsupported scheme
arrow::Result<std::shared_ptr<ObjectStore>> OpenObjectStore(
    const std::string& uri, const std::map<std::string, std::string>& options = {});

}  // namespace ampdelta::storage
