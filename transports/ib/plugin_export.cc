// libnccl-net-atoll-ib.so: Atoll's ibverbs net (ib_net.h) under the symbol NCCL's hosts look for.
#include "transports/ib/ib_net.h"

extern "C" __attribute__((visibility("default"))) atl::net::abi::Net11 ncclNetPlugin_v11;
atl::net::abi::Net11 ncclNetPlugin_v11 = atl::net::kIbNet;
