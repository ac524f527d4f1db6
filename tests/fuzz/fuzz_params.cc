// The environment parsers: NCCL_ALGO, NCCL_PROTO (NCCL's syntax) and the size parser behind every
// Size parameter. No crash, and whatever they accept stays within the known algorithms/protocols.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/params.h"
#include "tuning/algo_env.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto p = atl::tuning::parseAlgoSpec(text);
      for (uint32_t m : p.filter.allowed)
        if (m & ~((1u << atl::algo::kNumAlgos) - 1)) std::abort();
      break;
    }
    case 1: {
      auto p = atl::tuning::parseProtoSpec(text);
      for (uint32_t m : p.filter.allowed)
        if (m & ~atl::tuning::ProtoFilter::kAll) std::abort();
      break;
    }
    default: {
      int64_t v = 0;
      if (atl::params::parseSize(std::string(text), &v) && v < 0) std::abort();
      break;
    }
  }
  return 0;
}
