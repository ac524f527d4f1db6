// Compiled against Atoll's include/nccl.h (never NVIDIA's): the layout the library was built with.
#include "nccl.h"
#include "tests/abi/abi_layout.h"

#ifdef CUDART_VERSION
#error "abi_ours.cc must see Atoll's nccl.h, which does not pull in the CUDA runtime"
#endif

ABI_DEFINE_LAYOUT_FN(abiLayoutOurs)
ABI_DEFINE_LAYOUT230_FN(abiLayout230Ours)
