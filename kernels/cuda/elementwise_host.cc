#include "kernels/cuda/elementwise_host.h"

#include <cstring>

#include "kernels/dtype_dispatch.h"

namespace atl::kernels::cuda {
namespace {

const char* typeTag(ncclDataType_t dt) {
  switch (dt) {
    case ncclInt8: return "i8";
    case ncclUint8: return "u8";
    case ncclInt32: return "i32";
    case ncclUint32: return "u32";
    case ncclInt64: return "i64";
    case ncclUint64: return "u64";
    case ncclFloat16: return "f16";
    case ncclFloat32: return "f32";
    case ncclFloat64: return "f64";
    case ncclBfloat16: return "bf16";
    case ncclFloat8e4m3: return "e4m3";
    case ncclFloat8e5m2: return "e5m2";
    default: return nullptr;
  }
}

template <class T, class Op>
void grid(const EwArgs& x, Op op, uint64_t threads) {
  for (uint64_t t = 0; t < threads; ++t) ewThread<T>(x, op, t, threads);
}

}  // namespace

const char* opName(EwOp op) {
  switch (op) {
    case EwOp::Sum: return "sum";
    case EwOp::Prod: return "prod";
    case EwOp::Max: return "max";
    case EwOp::Min: return "min";
    case EwOp::Scale: return "scale";
    case EwOp::Divide: return "divide";
  }
  return nullptr;
}

std::string kernelName(EwOp op, ncclDataType_t dt) {
  const char* o = opName(op);
  const char* t = typeTag(dt);
  if (o == nullptr || t == nullptr) return {};
  return std::string("atoll_ew_") + o + "_" + t;
}

bool runGridOnHost(EwOp op, ncclDataType_t dt, const EwArgs& x, uint64_t threads) {
  if (opName(op) == nullptr) return false;
  return withType(dt, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case EwOp::Sum: grid<T>(x, BinaryOp<T, FuncSum>{}, threads); break;
      case EwOp::Prod: grid<T>(x, BinaryOp<T, FuncProd>{}, threads); break;
      case EwOp::Max: grid<T>(x, BinaryOp<T, FuncMax>{}, threads); break;
      case EwOp::Min: grid<T>(x, BinaryOp<T, FuncMin>{}, threads); break;
      case EwOp::Scale: {
        T s;
        std::memcpy(&s, &x.scalar, sizeof(T));
        grid<T>(x, ScaleOp<T>{FuncScale<T>{s}}, threads);
        break;
      }
      case EwOp::Divide: grid<T>(x, DivideOp<T>{FuncDivide<T>{x.divisor}}, threads); break;
    }
  });
}

}  // namespace atl::kernels::cuda
