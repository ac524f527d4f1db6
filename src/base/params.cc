#include "base/params.h"

#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "base/debug.h"

namespace atl::params {
namespace {

constexpr Def kDefs[] = {
#define ATOLL_PARAM(id, name, type, def, doc) {Id::id, name, Type::type, def, doc},
#include "base/param_list.h"
#undef ATOLL_PARAM
};
static_assert(std::size(kDefs) == static_cast<size_t>(Id::Count));

struct Value {
  int64_t number = 0;
  std::string text;
  Source source = Source::Default;
  bool operator==(const Value&) const = default;
};

bool parseInt(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 0);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool parseBool(const std::string& text, int64_t* out) {
  if (text == "1" || text == "true" || text == "TRUE" || text == "yes" || text == "on") return *out = 1, true;
  if (text == "0" || text == "false" || text == "FALSE" || text == "no" || text == "off") return *out = 0, true;
  return false;
}

bool parseTyped(Type type, const std::string& text, int64_t* out) {
  switch (type) {
    case Type::Int: return parseInt(text, out);
    case Type::Bool: return parseBool(text, out);
    case Type::Size: return parseSize(text, out);
    case Type::String: return true;
  }
  return false;
}

struct Snapshot {
  std::array<Value, std::size(kDefs)> values;
  std::array<int64_t, std::size(kDefs)> numbers{};  // values[i].number, packed for Numbers
  bool operator==(const Snapshot&) const = default;
};

/// Builds one snapshot from the defaults, the configuration files and the environment.
class Loader {
 public:
  Snapshot load() {
    for (const Def& d : kDefs) {
      Value& v = snap_.values[static_cast<size_t>(d.id)];
      v.text = d.defaultValue;
      parseTyped(d.type, v.text, &v.number);
    }
    // NCCL's order: the user's file (NCCL_CONF_FILE, else ~/.nccl.conf), then /etc/nccl.conf; the
    // first file to name a parameter wins, and the environment wins over every file.
    const char* conf = std::getenv(def(Id::ConfFile).name);
    const char* home = std::getenv("HOME");
    if (conf != nullptr && conf[0] != '\0')
      loadFile(conf, /*mustExist=*/true);
    else if (home != nullptr && home[0] != '\0')
      loadFile(std::string(home) + "/.nccl.conf", false);
    loadFile("/etc/nccl.conf", false);
    for (const Def& d : kDefs) {
      const char* env = std::getenv(d.name);
      if (env != nullptr) set(d, env, Source::Env, "the environment", 0);
    }
    return std::move(snap_);
  }

 private:
  /// Applies one setting unless a file already did; bad values warn and keep what was there.
  void set(const Def& d, const std::string& text, Source from, const std::string& where, int line) {
    Value& v = snap_.values[static_cast<size_t>(d.id)];
    if (from == Source::Config && v.source == Source::Config) return;
    int64_t parsed = 0;
    if (!parseTyped(d.type, text, &parsed)) {
      // Logging reads params too, so this warning goes straight to stderr.
      if (line > 0)
        std::fprintf(stderr, "NCCL WARN Ignoring invalid value '%s' for %s at %s:%d\n", text.c_str(), d.name,
                     where.c_str(), line);
      else
        std::fprintf(stderr, "NCCL WARN Ignoring invalid value '%s' for %s; using %s '%s'\n", text.c_str(), d.name,
                     v.source == Source::Config ? "the configured" : "default", v.text.c_str());
      return;
    }
    v.text = text;
    v.number = parsed;
    v.source = from;
  }

  void loadFile(const std::string& path, bool mustExist) {
    std::ifstream in(path);
    if (!in) {
      if (mustExist) std::fprintf(stderr, "NCCL WARN Cannot read NCCL_CONF_FILE '%s'\n", path.c_str());
      return;
    }
    std::string raw;
    int line = 0;
    while (std::getline(in, raw)) {
      ++line;
      std::string_view t(raw);
      if (size_t hash = t.find('#'); hash != std::string_view::npos) t = t.substr(0, hash);
      auto trim = [](std::string_view x) {
        while (!x.empty() && std::isspace(static_cast<unsigned char>(x.front()))) x.remove_prefix(1);
        while (!x.empty() && std::isspace(static_cast<unsigned char>(x.back()))) x.remove_suffix(1);
        return x;
      };
      t = trim(t);
      if (t.empty()) continue;
      const size_t eq = t.find('=');
      if (eq == std::string_view::npos) {
        std::fprintf(stderr, "NCCL WARN Ignoring line %d of %s: expected NAME=VALUE\n", line, path.c_str());
        continue;
      }
      const std::string_view name = trim(t.substr(0, eq));
      const std::string_view value = trim(t.substr(eq + 1));
      // Unknown names are skipped quietly: a site file may configure NVIDIA NCCL features we lack.
      for (const Def& d : kDefs)
        if (name == d.name && d.id != Id::ConfFile) set(d, std::string(value), Source::Config, path, line);
    }
  }

  Snapshot snap_;
};

// Readers get references into an immutable snapshot; a reload publishes a new one instead of
// rewriting values in place. ncclResetDebugInit is public and may run while other threads hold
// a getString reference, so no published snapshot is ever freed. Reloads that find the same
// configuration as an earlier snapshot reuse it, so memory grows with distinct configurations
// seen, not with the number of reloads.
class Cache {
 public:
  const Value& get(Id id) { return snapshot().values[static_cast<size_t>(id)]; }
  const Snapshot& snapshot() {
    // Read on every collective: after the first load this is one acquire load.
    const Snapshot* s = current_.load(std::memory_order_acquire);
    if (s == nullptr) s = publish();
    return *s;
  }
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    current_.store(nullptr, std::memory_order_release);  // loaded lazily, as at start-up
  }

 private:
  const Snapshot* publish() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const Snapshot* s = current_.load(std::memory_order_acquire)) return s;  // another reader loaded it
    Snapshot fresh = Loader().load();
    for (size_t i = 0; i < fresh.values.size(); ++i) fresh.numbers[i] = fresh.values[i].number;
    const Snapshot* chosen = nullptr;
    for (const auto& kept : kept_)
      if (*kept == fresh) chosen = kept.get();
    if (chosen == nullptr) chosen = kept_.emplace_back(std::make_unique<const Snapshot>(std::move(fresh))).get();
    current_.store(chosen, std::memory_order_release);
    return chosen;
  }

  std::mutex mutex_;
  std::atomic<const Snapshot*> current_{nullptr};
  std::vector<std::unique_ptr<const Snapshot>> kept_;  // every snapshot ever published
};

Cache& cache() {
  static auto* c = new Cache();  // never destroyed: threads still running at exit may read it
  return *c;
}

}  // namespace

std::span<const Def> all() { return kDefs; }
const Def& def(Id id) { return kDefs[static_cast<size_t>(id)]; }
int64_t getInt(Id id) { return cache().get(id).number; }
Numbers numbers() { return Numbers{cache().snapshot().numbers.data()}; }
bool getBool(Id id) { return cache().get(id).number != 0; }
const std::string& getString(Id id) { return cache().get(id).text; }
Source source(Id id) { return cache().get(id).source; }
std::string valueText(Id id) { return cache().get(id).text; }
void reloadForTesting() { cache().reset(); }

bool parseSize(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (errno != 0 || end == text.c_str() || text[0] == '-') return false;
  unsigned long long mult = 1;
  std::string suffix(end);
  if (suffix == "K" || suffix == "k" || suffix == "KB" || suffix == "KiB") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MB" || suffix == "MiB") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GB" || suffix == "GiB") mult = 1ull << 30;
  else if (!suffix.empty()) return false;
  if (v > static_cast<unsigned long long>(LLONG_MAX) / mult) return false;
  *out = static_cast<int64_t>(v * mult);
  return true;
}

const char* typeName(Type t) {
  switch (t) {
    case Type::Int: return "int";
    case Type::Bool: return "bool";
    case Type::String: return "string";
    case Type::Size: return "size";
  }
  return "?";
}

}  // namespace atl::params
