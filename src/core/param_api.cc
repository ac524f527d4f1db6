// NCCL 2.30's parameter API over Atoll's registry (base/param_list.h): every variable that
// atoll-info --params lists can be read by its name, with the value the library itself uses
// (defaults, NCCL_CONF_FILE/~/.nccl.conf//etc/nccl.conf, then the environment, as cached).
//
// Typing follows NVIDIA's rules where ours can: a getter reads only what its type can hold (an Int
// or Size parameter through any integer type wide enough for its value, a Bool as 0/1), strings
// only through ncclParamGetStr, and ncclParamGet copies the stored bytes (int64 for numbers, one
// byte for a Bool, the text and its NUL for a string).
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.h"
#include "core/nccl_api.h"

using namespace atl;

namespace {

const params::Def* findKey(const char* key) {
  if (key == nullptr) return nullptr;
  for (const params::Def& d : params::all())
    if (std::string_view(d.name) == key) return &d;
  return nullptr;
}

// Handles point into the registry's table, which lives as long as the library; anything else is
// rejected rather than dereferenced.
Result<const params::Def*> fromHandle(ncclParamHandle_t h, const char* fn) {
  const std::span<const params::Def> defs = params::all();
  const auto* d = reinterpret_cast<const params::Def*>(h);
  for (const params::Def& candidate : defs)
    if (&candidate == d) return d;
  return ATOLL_ERROR(ncclInvalidArgument, "%s: %p is not a handle from ncclParamBind", fn, static_cast<void*>(h));
}

template <class T>
Status getInteger(ncclParamHandle_t h, T* out, const char* fn) {
  ATOLL_ASSIGN_OR_RETURN(const params::Def* d, fromHandle(h, fn));
  if (out == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "%s: out is NULL", fn);
  if (d->type == params::Type::String)
    return ATOLL_ERROR(ncclInvalidArgument, "%s: %s is a string parameter; read it with ncclParamGetStr", fn, d->name);
  const int64_t v = params::getInt(d->id);  // a Bool's number is already 0 or 1
  const bool fits = std::is_signed_v<T>
                        ? v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                              v <= static_cast<int64_t>(std::numeric_limits<T>::max())
                        : v >= 0 && static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  if (!fits)
    return ATOLL_ERROR(ncclInvalidArgument, "%s: %s = %lld does not fit the requested type", fn, d->name,
                       static_cast<long long>(v));
  *out = static_cast<T>(v);
  return Status::Ok();
}

}  // namespace

NCCL_API(ncclResult_t, ncclParamBind, ncclParamHandle_t* out, const char* key) {
  return apiGuard(__func__, [&]() -> Status {
    if (out == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclParamBind: out is NULL");
    const params::Def* d = findKey(key);
    if (d == nullptr)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclParamBind: no parameter named '%s' (atoll-info --params lists them)",
                         key ? key : "(null)");
    *out = reinterpret_cast<ncclParamHandle_t>(const_cast<params::Def*>(d));
    return Status::Ok();
  });
}

#define ATOLL_PARAM_GETTER(fn, T) \
  NCCL_API(ncclResult_t, fn, ncclParamHandle_t h, T* out) { \
    return apiGuard(__func__, [&] { return getInteger(h, out, #fn); }); \
  }
ATOLL_PARAM_GETTER(ncclParamGetI8, int8_t)
ATOLL_PARAM_GETTER(ncclParamGetI16, int16_t)
ATOLL_PARAM_GETTER(ncclParamGetI32, int32_t)
ATOLL_PARAM_GETTER(ncclParamGetI64, int64_t)
ATOLL_PARAM_GETTER(ncclParamGetU8, uint8_t)
ATOLL_PARAM_GETTER(ncclParamGetU16, uint16_t)
ATOLL_PARAM_GETTER(ncclParamGetU32, uint32_t)
ATOLL_PARAM_GETTER(ncclParamGetU64, uint64_t)
#undef ATOLL_PARAM_GETTER

NCCL_API(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char** out) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_ASSIGN_OR_RETURN(const params::Def* d, fromHandle(h, "ncclParamGetStr"));
    if (out == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclParamGetStr: out is NULL");
    if (d->type != params::Type::String)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclParamGetStr: %s is a %s parameter; read it with an integer getter",
                         d->name, params::typeName(d->type));
    *out = params::getString(d->id).c_str();  // valid for the process lifetime (base/params.h)
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void* out, int maxLen, int* len) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_ASSIGN_OR_RETURN(const params::Def* d, fromHandle(h, "ncclParamGet"));
    if (len == nullptr || (out == nullptr && maxLen > 0))
      return ATOLL_ERROR(ncclInvalidArgument, "ncclParamGet: out or len is NULL");
    *len = 0;
    int64_t number = 0;
    uint8_t flag = 0;
    const void* from = nullptr;
    size_t bytes = 0;
    switch (d->type) {
      case params::Type::String: {
        const std::string& text = params::getString(d->id);
        from = text.c_str();
        bytes = text.size() + 1;
        break;
      }
      case params::Type::Bool:
        flag = params::getBool(d->id) ? 1 : 0;
        from = &flag;
        bytes = sizeof flag;
        break;
      case params::Type::Int:
      case params::Type::Size:
        number = params::getInt(d->id);
        from = &number;
        bytes = sizeof number;
        break;
    }
    if (maxLen < 0 || static_cast<size_t>(maxLen) < bytes)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclParamGet: %s needs %zu bytes, maxLen is %d", d->name, bytes, maxLen);
    std::memcpy(out, from, bytes);
    *len = static_cast<int>(bytes);
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclParamGetParameter, const char* key, const char** value, int* valueLen) {
  return apiGuard(__func__, [&]() -> Status {
    if (value == nullptr || valueLen == nullptr)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclParamGetParameter: value or valueLen is NULL");
    *valueLen = 0;
    const params::Def* d = findKey(key);
    if (d == nullptr)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclParamGetParameter: no parameter named '%s'", key ? key : "(null)");
    thread_local std::string text;  // valid until this thread's next call, as NCCL documents
    text = params::valueText(d->id);
    *value = text.c_str();
    *valueLen = static_cast<int>(text.size());
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclParamGetAllParameterKeys, const char*** table, int* tableLen) {
  return apiGuard(__func__, [&]() -> Status {
    if (table == nullptr || tableLen == nullptr)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclParamGetAllParameterKeys: table or tableLen is NULL");
    // Every parameter is documented (docs/ENV.md), so NCCL_PARAM_DUMP_ALL changes nothing here.
    static const std::vector<const char*> keys = [] {
      std::vector<const char*> k;
      for (const params::Def& d : params::all()) k.push_back(d.name);
      return k;
    }();
    *table = const_cast<const char**>(keys.data());
    *tableLen = static_cast<int>(keys.size());
    return Status::Ok();
  });
}

NCCL_API(void, ncclParamDumpAll, void) {
  std::printf("=== Atoll parameter registry ===\n");
  for (const params::Def& d : params::all()) {
    const params::Source src = params::source(d.id);
    std::printf("%s (%s) %s\n    Current value=%s set_by=%s default=%s\n\n", d.name, params::typeName(d.type), d.doc,
                params::valueText(d.id).c_str(),
                src == params::Source::Env ? "Env" : src == params::Source::Config ? "Config" : "Default",
                d.defaultValue);
  }
  std::fflush(stdout);
}
