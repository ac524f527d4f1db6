// Built when configure found no CUDA headers (cmake/Backends.cmake reports it).
#include "device/cuda_device.h"

namespace atl::device {

Result<const Device*> cuda() {
  return ATOLL_ERROR(ncclInvalidUsage,
                     "ATOLL_DEVICE=cuda: this build has no CUDA backend (configure found no cuda.h; set "
                     "ATOLL_CUDA_INCLUDE or install the CUDA toolkit and rebuild)");
}

bool cudaPresent() { return false; }

}  // namespace atl::device
