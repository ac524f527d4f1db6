// libnccl-net-atoll.so: Atoll's Socket net (socket_net.h) under the symbol NCCL's hosts look for.
#include "transports/net/socket_net.h"

extern "C" __attribute__((visibility("default"))) atl::net::abi::Net11 ncclNetPlugin_v11;
atl::net::abi::Net11 ncclNetPlugin_v11 = atl::net::kSocketNet;
