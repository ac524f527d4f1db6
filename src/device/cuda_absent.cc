// Built when configure found no CUDA headers (cmake/Backends.cmake reports it).
#include "device/cuda_device.h"

namespace atl::device {

namespace {
constexpr const char* kAbsent =
    "this build has no CUDA backend (configure found no cuda.h; set ATOLL_CUDA_INCLUDE or install the CUDA toolkit "
    "and rebuild)";
}  // namespace

Result<const Device*> cuda() { return ATOLL_ERROR(ncclInvalidUsage, "ATOLL_DEVICE=cuda: %s", kAbsent); }

bool cudaPresent() { return false; }

std::string cudaAbsence() { return kAbsent; }

}  // namespace atl::device
