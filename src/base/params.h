// Typed, cached access to environment parameters. Every variable is declared once in param_list.h;
// values are read from the configuration files and the environment on first use and then cached
// until a reload (ncclResetDebugInit), which publishes a fresh snapshot and leaves older ones intact.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace atl::params {

enum class Type { Int, Bool, String, Size };
/// "int", "bool", "string" or "size" (atoll-info, docs/ENV.md, ncclParam* errors).
const char* typeName(Type t);
enum class Source { Default, Config, Env };  // Config: NCCL_CONF_FILE, ~/.nccl.conf, /etc/nccl.conf

enum class Id : int {
#define ATOLL_PARAM(id, name, type, def, doc) id,
#include "base/param_list.h"
#undef ATOLL_PARAM
  Count
};

struct Def {
  Id id;
  const char* name;
  Type type;
  const char* defaultValue;
  const char* doc;
};

std::span<const Def> all();
const Def& def(Id id);

/// Value of an Int, Bool or Size parameter (an invalid setting warns once and yields the default).
int64_t getInt(Id id);
bool getBool(Id id);
/// Every parameter's number (getInt's value; 0 or 1 for a Bool) in the configuration in effect,
/// for code that reads several per call: one call, then plain loads. Never freed, so it may be
/// kept, though a reload (reloadForTesting) is seen only by a later numbers().
struct Numbers {
  const int64_t* values;
  int64_t operator[](Id id) const { return values[static_cast<size_t>(id)]; }
};
Numbers numbers();
/// The reference stays valid, and its text unchanged, for the process lifetime, even across a
/// reload on another thread; a reload changes what later calls return.
const std::string& getString(Id id);
Source source(Id id);
/// The value as text, as atoll-info prints it.
std::string valueText(Id id);

/// Parses "4M", "128K", "1G", "4096" into bytes; false on garbage or overflow.
bool parseSize(const std::string& text, int64_t* out);

/// Drops the cache so the next read sees the current environment (tests, ncclResetDebugInit).
/// Safe while other threads read: values already handed out are not freed.
void reloadForTesting();

}  // namespace atl::params
