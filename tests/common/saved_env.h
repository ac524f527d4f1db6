// Environment variables a test changes, put back as they were when it ends.
#pragma once

#include <stdlib.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace atl::test {

class SavedEnv {
 public:
  SavedEnv() = default;
  /// Remembers each variable; with `unset`, also clears it.
  void save(std::initializer_list<const char*> names, bool unset = false) {
    for (const char* v : names) {
      const char* old = getenv(v);
      saved_.emplace_back(v, old ? std::optional<std::string>(old) : std::nullopt);
      if (unset) unsetenv(v);
    }
  }
  /// Puts every saved variable back (or removes it if it was unset) and forgets them.
  void restore() {
    for (auto& [name, value] : saved_) {
      if (value)
        setenv(name.c_str(), value->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
    saved_.clear();
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace atl::test
