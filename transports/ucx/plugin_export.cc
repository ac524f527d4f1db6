// libnccl-net-atoll-ucx.so: Atoll's UCX net (ucx_net.h) under the symbol NCCL's hosts look for.
#include "transports/ucx/ucx_net.h"

extern "C" __attribute__((visibility("default"))) atl::net::abi::Net11 ncclNetPlugin_v11;
atl::net::abi::Net11 ncclNetPlugin_v11 = atl::net::kUcxNet;
