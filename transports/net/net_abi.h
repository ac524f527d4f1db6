// NCCL's network plugin ABI, versions 6 to 12, as a plugin .so exports it: a struct of function
// pointers named ncclNetPlugin_v<N>. The layouts must match NVIDIA's exactly (NCCL 2.28's
// src/include/plugin/net/net_v*.h, and 2.30's for v12), so they are spelled out here version by
// version; only the host (transports/net/net_plugin.h) uses them. Collective-net plugins
// (ncclCollNetPlugin_v*) are not hosted.
//
// What changed between versions, which is all the adapter needs to know:
//   v6   init(logger); connect(dev, handle, &send); accept(listen, &recv); int sizes.
//   v7   connect/accept gain a device-handle out-parameter; getDeviceMr, irecvConsumed.
//   v8   regMr takes size_t; properties gain regIsGlobal.
//   v9   isend/irecv take size_t sizes; makeVDevice; properties gain forceFlush, vProps,
//        maxP2pBytes, maxCollBytes.
//   v10  init(logger, profiler); connect(dev, config, handle, ...); isend/irecv take profiler
//        handles.
//   v11  per-communicator init(&ctx, commId, config, logger, profiler) with finalize(ctx);
//        listen/connect take the ctx; setNetAttr; properties gain maxMultiRequestSize.
//   v12  (NCCL 2.30) as v11, 8 devices per virtual NIC, properties gain railId and planeId.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace atl::net::abi {

inline constexpr int kHandleMaxSize = 128;  // NCCL_NET_HANDLE_MAXSIZE: what listen() may write
inline constexpr int kPtrHost = 0x1;        // NCCL_PTR_HOST
inline constexpr int kPtrCuda = 0x2;        // NCCL_PTR_CUDA
inline constexpr int kPtrDmaBuf = 0x4;      // NCCL_PTR_DMABUF
inline constexpr int kTrafficClassUndef = -1;

/// NCCL's ncclDebugLogLevel values, passed to a plugin's logger.
enum LogLevel : int { kLogNone = 0, kLogVersion = 1, kLogWarn = 2, kLogInfo = 3, kLogAbort = 4, kLogTrace = 5 };
using Logger = void (*)(LogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...);
using ProfilerCallback = ncclResult_t (*)(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData);

/// ncclNetDeviceType (an enum, so an int in every ABI).
using DeviceType = int;
/// The device-offload handle plugins may return from connect/accept (v7+); only passed through.
struct DeviceHandle;

struct Props6 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int speed;  // Mbps
  int port;
  float latency;  // us
  int maxComms;
  int maxRecvs;
};
struct Props7 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  DeviceType netDeviceType;
  int netDeviceVersion;
};
struct Props8 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  DeviceType netDeviceType;
  int netDeviceVersion;
};
template <int kDevs>
struct VDeviceProps {
  int ndevs;
  int devs[kDevs];
};
/// v9 and v10 share this layout.
struct Props9 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  DeviceType netDeviceType;
  int netDeviceVersion;
  VDeviceProps<4> vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
};
struct Props11 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  DeviceType netDeviceType;
  int netDeviceVersion;
  VDeviceProps<4> vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
};
struct Props12 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  DeviceType netDeviceType;
  int netDeviceVersion;
  VDeviceProps<8> vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
  int16_t railId;
  int16_t planeId;
};

/// ncclNetCommConfig_v10..v12_t.
struct CommConfig {
  int trafficClass;
};
struct CommAttr {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
};
/// ncclNetAttr_v11/v12_t (setNetAttr).
struct NetAttr {
  CommAttr sendCommAttr;
  CommAttr recvCommAttr;
  uint32_t op;
  uint32_t algo;
  uint32_t proto;
};

using R = ncclResult_t;

struct Net6 {
  const char* name;
  R (*init)(Logger logFunction);
  R (*devices)(int* ndev);
  R (*getProperties)(int dev, Props6* props);
  R (*listen)(int dev, void* handle, void** listenComm);
  R (*connect)(int dev, void* handle, void** sendComm);
  R (*accept)(void* listenComm, void** recvComm);
  R (*regMr)(void* comm, void* data, int size, int type, void** mhandle);
  R (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  R (*deregMr)(void* comm, void* mhandle);
  R (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  R (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  R (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  R (*test)(void* request, int* done, int* sizes);
  R (*closeSend)(void* sendComm);
  R (*closeRecv)(void* recvComm);
  R (*closeListen)(void* listenComm);
};

struct Net7 {
  const char* name;
  R (*init)(Logger logFunction);
  R (*devices)(int* ndev);
  R (*getProperties)(int dev, Props7* props);
  R (*listen)(int dev, void* handle, void** listenComm);
  R (*connect)(int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  R (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  R (*regMr)(void* comm, void* data, int size, int type, void** mhandle);
  R (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  R (*deregMr)(void* comm, void* mhandle);
  R (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  R (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  R (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  R (*test)(void* request, int* done, int* sizes);
  R (*closeSend)(void* sendComm);
  R (*closeRecv)(void* recvComm);
  R (*closeListen)(void* listenComm);
  R (*getDeviceMr)(void* comm, void* mhandle, void** dptrMhandle);
  R (*irecvConsumed)(void* recvComm, int n, void* request);
};

struct Net8 {
  const char* name;
  R (*init)(Logger logFunction);
  R (*devices)(int* ndev);
  R (*getProperties)(int dev, Props8* props);
  R (*listen)(int dev, void* handle, void** listenComm);
  R (*connect)(int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  R (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  R (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  R (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  R (*deregMr)(void* comm, void* mhandle);
  R (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  R (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  R (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  R (*test)(void* request, int* done, int* sizes);
  R (*closeSend)(void* sendComm);
  R (*closeRecv)(void* recvComm);
  R (*closeListen)(void* listenComm);
  R (*getDeviceMr)(void* comm, void* mhandle, void** dptrMhandle);
  R (*irecvConsumed)(void* recvComm, int n, void* request);
};

struct Net9 {
  const char* name;
  R (*init)(Logger logFunction);
  R (*devices)(int* ndev);
  R (*getProperties)(int dev, Props9* props);
  R (*listen)(int dev, void* handle, void** listenComm);
  R (*connect)(int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  R (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  R (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  R (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  R (*deregMr)(void* comm, void* mhandle);
  R (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request);
  R (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** request);
  R (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  R (*test)(void* request, int* done, int* sizes);
  R (*closeSend)(void* sendComm);
  R (*closeRecv)(void* recvComm);
  R (*closeListen)(void* listenComm);
  R (*getDeviceMr)(void* comm, void* mhandle, void** dptrMhandle);
  R (*irecvConsumed)(void* recvComm, int n, void* request);
  R (*makeVDevice)(int* d, VDeviceProps<4>* props);
};

struct Net10 {
  const char* name;
  R (*init)(Logger logFunction, ProfilerCallback profFunction);
  R (*devices)(int* ndev);
  R (*getProperties)(int dev, Props9* props);
  R (*listen)(int dev, void* handle, void** listenComm);
  R (*connect)(int dev, CommConfig* config, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  R (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  R (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  R (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  R (*deregMr)(void* comm, void* mhandle);
  R (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
  R (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
             void** request);
  R (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  R (*test)(void* request, int* done, int* sizes);
  R (*closeSend)(void* sendComm);
  R (*closeRecv)(void* recvComm);
  R (*closeListen)(void* listenComm);
  R (*getDeviceMr)(void* comm, void* mhandle, void** dptrMhandle);
  R (*irecvConsumed)(void* recvComm, int n, void* request);
  R (*makeVDevice)(int* d, VDeviceProps<4>* props);
};

/// v11 and v12 differ only in their properties and virtual-device structs.
template <class Props, class VProps>
struct NetCtx {
  const char* name;
  R (*init)(void** ctx, uint64_t commId, CommConfig* config, Logger logFunction, ProfilerCallback profFunction);
  R (*devices)(int* ndev);
  R (*getProperties)(int dev, Props* props);
  R (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  R (*connect)(void* ctx, int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  R (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  R (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  R (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  R (*deregMr)(void* comm, void* mhandle);
  R (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
  R (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
             void** request);
  R (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  R (*test)(void* request, int* done, int* sizes);
  R (*closeSend)(void* sendComm);
  R (*closeRecv)(void* recvComm);
  R (*closeListen)(void* listenComm);
  R (*getDeviceMr)(void* comm, void* mhandle, void** dptrMhandle);
  R (*irecvConsumed)(void* recvComm, int n, void* request);
  R (*makeVDevice)(int* d, VProps* props);
  R (*finalize)(void* ctx);
  R (*setNetAttr)(void* ctx, NetAttr* netAttr);
};
using Net11 = NetCtx<Props11, VDeviceProps<4>>;
using Net12 = NetCtx<Props12, VDeviceProps<8>>;

}  // namespace atl::net::abi
