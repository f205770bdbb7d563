#pragma once

/// \file temp_dir.h
/// \brief A temporary directory removed with its contents when the object dies.

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace ampdelta::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "ampdelta-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// \brief Return the directory's absolute path.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ampdelta::testing
