#include "process_group_atoll.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <string>

#include "atoll_lib.h"
#include "shared_allocator.h"

namespace atoll_torch {
namespace {

ncclDataType_t toNccl(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return ncclFloat32;
    case at::kDouble: return ncclFloat64;
    case at::kHalf: return ncclFloat16;
    case at::kBFloat16: return ncclBfloat16;
    case at::kChar: return ncclInt8;
    case at::kByte: return ncclUint8;
    case at::kBool: return ncclUint8;
    case at::kInt: return ncclInt32;
    case at::kLong: return ncclInt64;
    case at::kUInt32: return ncclUint32;
    case at::kUInt64: return ncclUint64;
    case at::kFloat8_e4m3fn: return ncclFloat8e4m3;
    case at::kFloat8_e5m2: return ncclFloat8e5m2;
    default: break;
  }
  TORCH_CHECK(false, "atoll: unsupported tensor dtype ", t);
}

void checkTensor(const at::Tensor& t) {
  TORCH_CHECK(t.device().is_cpu(), "atoll: tensors must be on the CPU (got ", t.device(), ")");
  TORCH_CHECK(t.layout() == at::kStrided, "atoll: only dense tensors are supported");
}

void checkTensors(const std::vector<at::Tensor>& ts) {
  for (const at::Tensor& t : ts) checkTensor(t);
}

void checkSame(const std::vector<at::Tensor>& ts, const at::Tensor& like, const char* what) {
  for (const at::Tensor& t : ts) {
    checkTensor(t);
    TORCH_CHECK(t.scalar_type() == like.scalar_type() && t.numel() == like.numel(), "atoll: ", what,
                ": every tensor must have the input's dtype and size");
  }
}

at::Tensor single(const std::vector<at::Tensor>& ts, const char* what) {
  TORCH_CHECK(ts.size() == 1, "atoll: ", what, " takes exactly one tensor per process (got ", ts.size(), ")");
  checkTensor(ts[0]);
  return ts[0];
}

/// A reduction operator for one call: built-in ones map directly; PREMUL_SUM creates one on the
/// communicator, destroyed when the call is done.
class RedOp {
 public:
  RedOp(const c10d::ReduceOp& op, at::ScalarType type, ncclComm_t comm) : comm_(comm) {
    const bool isBool = type == at::kBool;
    switch (op.op_) {
      case c10d::ReduceOp::SUM: op_ = isBool ? ncclMax : ncclSum; return;  // bool sum is "any", as in Gloo
      case c10d::ReduceOp::PRODUCT: op_ = isBool ? ncclMin : ncclProd; return;
      case c10d::ReduceOp::MIN: op_ = ncclMin; return;
      case c10d::ReduceOp::MAX: op_ = ncclMax; return;
      case c10d::ReduceOp::AVG:
        TORCH_CHECK(!isBool, "atoll: AVG of bool tensors is undefined");
        op_ = ncclAvg;
        return;
      case c10d::ReduceOp::PREMUL_SUM: {
        auto supplement = c10::dynamic_intrusive_pointer_cast<c10d::PreMulSumSupplement>(op.supplement_);
        TORCH_CHECK(supplement, "atoll: PREMUL_SUM without a factor");
        at::Tensor factor = supplement->tensor_factor.defined()
                                ? supplement->tensor_factor.to(at::kCPU, type).contiguous()
                                : at::scalar_tensor(supplement->double_factor, at::TensorOptions().dtype(type));
        const ncclResult_t r = atoll().RedOpCreatePreMulSum(&op_, factor.data_ptr(), toNccl(type),
                                                            ncclScalarHostImmediate, comm_);
        TORCH_CHECK(r == ncclSuccess, "atoll: ncclRedOpCreatePreMulSum: ", atoll().GetLastError(comm_));
        created_ = true;
        return;
      }
      default: break;
    }
    TORCH_CHECK(false, "atoll: reduce op ", static_cast<int>(op.op_), " (bitwise) is not supported");
  }
  ~RedOp() {
    if (created_) atoll().RedOpDestroy(op_, comm_);
  }
  RedOp(const RedOp&) = delete;
  RedOp& operator=(const RedOp&) = delete;
  ncclRedOp_t get() const { return op_; }

 private:
  ncclComm_t comm_;
  ncclRedOp_t op_ = ncclSum;
  bool created_ = false;
};

/// A contiguous view of `t` to compute in, written back to `t` by done() if it had to be a copy.
struct Dense {
  explicit Dense(const at::Tensor& t) : user(t), data(t.contiguous()) {}
  void done() {
    if (!data.is_same(user)) user.copy_(data);
  }
  void* ptr() const { return data.data_ptr(); }
  size_t count() const { return static_cast<size_t>(data.numel()); }
  ncclDataType_t type() const { return toNccl(data.scalar_type()); }
  at::Tensor user, data;
};

/// One flat tensor holding `parts` one after another (the buffer a root or a reduce-scatter sends).
at::Tensor flatten(const std::vector<at::Tensor>& parts) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& t : parts) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

/// Copies consecutive `each`-element pieces of `flat` into `outs`.
void unflatten(const at::Tensor& flat, int64_t each, const std::vector<at::Tensor>& outs) {
  for (size_t i = 0; i < outs.size(); ++i)
    outs[i].copy_(flat.narrow(0, static_cast<int64_t>(i) * each, each).view(outs[i].sizes()));
}

/// Splits of dim 0 into element offsets and counts (empty splits: equal parts).
void splitsToElements(const at::Tensor& t, const std::vector<int64_t>& splits, int size, std::vector<size_t>* offsets,
                      std::vector<size_t>* counts) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const size_t perRow = rows == 0 ? 0 : static_cast<size_t>(t.numel() / rows);
  offsets->assign(static_cast<size_t>(size), 0);
  counts->assign(static_cast<size_t>(size), 0);
  if (splits.empty()) {
    TORCH_CHECK(rows % size == 0, "atoll: all_to_all_single: dim 0 (", rows, ") must divide by the group size ", size);
    for (int p = 0; p < size; ++p) {
      (*counts)[static_cast<size_t>(p)] = static_cast<size_t>(rows / size) * perRow;
      (*offsets)[static_cast<size_t>(p)] = static_cast<size_t>(p) * (*counts)[static_cast<size_t>(p)];
    }
    return;
  }
  TORCH_CHECK(static_cast<int>(splits.size()) == size, "atoll: all_to_all_single: ", splits.size(),
              " split sizes for a group of ", size);
  size_t at = 0;
  for (int p = 0; p < size; ++p) {
    (*offsets)[static_cast<size_t>(p)] = at;
    (*counts)[static_cast<size_t>(p)] = static_cast<size_t>(splits[static_cast<size_t>(p)]) * perRow;
    at += (*counts)[static_cast<size_t>(p)];
  }
  TORCH_CHECK(at == static_cast<size_t>(t.numel()), "atoll: all_to_all_single: split sizes do not cover the tensor");
}

}  // namespace

// --- Work ---------------------------------------------------------------------------------------

AtollWork::AtollWork(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs)
    : Work(rank, type, title),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

bool AtollWork::isCompleted() { return future_->completed(); }
bool AtollWork::isSuccess() const { return future_->completed() && !future_->hasError(); }
std::exception_ptr AtollWork::exception() const {
  return future_->completed() && future_->hasError() ? future_->exception_ptr() : nullptr;
}
std::vector<at::Tensor> AtollWork::result() { return outputs_; }
c10::intrusive_ptr<c10::ivalue::Future> AtollWork::getFuture() { return future_; }

// Atoll bounds every wait itself (ATOLL_TIMEOUT_MS, a dead peer within 2 s), so the call's own
// error, not a second timer, ends a stuck wait.
bool AtollWork::wait(std::chrono::milliseconds) {
  future_->wait();
  if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
  return true;
}

void AtollWork::complete() { future_->markCompleted(c10::IValue(outputs_)); }
void AtollWork::fail(std::exception_ptr error) { future_->setError(std::move(error)); }

// --- Process group ------------------------------------------------------------------------------

ProcessGroupAtoll::ProcessGroupAtoll(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size)
    : Backend(rank, size) {
  const AtollLib& lib = atoll();
  // As ProcessGroupNCCL: rank 0 makes the unique id (its rendezvous root runs in this process) and
  // the others read it from the group's store, which torch prefixes per group.
  const std::string key = "atoll_unique_id";
  ncclUniqueId id;
  if (rank == 0) {
    check(lib.GetUniqueId(&id), "ncclGetUniqueId");
    store->set(key, std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal));
  } else {
    const std::vector<uint8_t> bytes = store->get(key);
    TORCH_CHECK(bytes.size() == sizeof id.internal, "atoll: the store's unique id has ", bytes.size(), " bytes");
    std::memcpy(id.internal, bytes.data(), sizeof id.internal);
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "torch.distributed";
  check(lib.CommInitRankConfig(&comm_, size, id, rank, &config), "ncclCommInitRankConfig");
  worker_ = std::thread([this] { loop(); });
}

ProcessGroupAtoll::~ProcessGroupAtoll() { shutdown(); }

c10::intrusive_ptr<c10d::Backend> ProcessGroupAtoll::create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                            int size, const std::chrono::duration<float>&) {
  return c10::make_intrusive<ProcessGroupAtoll>(store, rank, size);
}

void ProcessGroupAtoll::stopWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void ProcessGroupAtoll::shutdown() {
  stopWorker();
  if (comm_ != nullptr) {
    // After a failed call the peers may be gone: abort returns promptly where destroy could wait.
    (failed_ ? atoll().CommAbort : atoll().CommDestroy)(comm_);
    comm_ = nullptr;
  }
}

void ProcessGroupAtoll::abort() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_ = true;
  }
  shutdown();
}

void ProcessGroupAtoll::check(ncclResult_t r, const char* what) const {
  if (r == ncclSuccess) return;
  const std::string message = std::string("atoll: ") + what + " failed: " + atoll().GetErrorString(r) + ": " +
                              atoll().GetLastError(comm_);
  C10_THROW_ERROR(DistBackendError, message);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::enqueue(c10d::OpType type, const char* title,
                                                          std::vector<at::Tensor> outputs, std::function<void()> body,
                                                          bool asyncOp) {
  auto work = c10::make_intrusive<AtollWork>(rank_, type, title, std::move(outputs));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(!stopping_, "atoll: the process group has been shut down");
    if (asyncOp || busy_ || !queue_.empty()) {
      queue_.emplace_back(work, std::move(body));
      wake_.notify_one();
      return work;
    }
    busy_ = true;  // inline: calls queued meanwhile wait for this one, so the order holds
  }
  run(*work, body);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
  }
  wake_.notify_all();
  return work;
}

void ProcessGroupAtoll::run(AtollWork& work, const std::function<void()>& body) {
  try {
    body();
    work.complete();
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      failed_ = true;
    }
    work.fail(std::current_exception());
  }
}

void ProcessGroupAtoll::loop() {
  for (;;) {
    std::pair<c10::intrusive_ptr<AtollWork>, std::function<void()>> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return (stopping_ && !busy_) || (!queue_.empty() && !busy_); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    run(*job.first, job.second);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    wake_.notify_all();
  }
}

// --- Collectives --------------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  at::Tensor t = single(tensors, "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::BROADCAST, "atoll:broadcast", tensors, [this, t, root] {
    Dense d(t);
    check(atoll().Broadcast(d.ptr(), d.ptr(), d.count(), d.type(), root, comm_, nullptr), "ncclBroadcast");
    d.done();
  }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  at::Tensor t = single(tensors, "all_reduce");
  const c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::ALLREDUCE, "atoll:all_reduce", tensors, [this, t, op] {
    Dense d(t);
    RedOp r(op, t.scalar_type(), comm_);
    check(atoll().AllReduce(d.ptr(), d.ptr(), d.count(), d.type(), r.get(), comm_, nullptr), "ncclAllReduce");
    d.done();
  }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                      const c10d::AllreduceCoalescedOptions& opts) {
  checkTensors(tensors);
  const c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, "atoll:all_reduce_coalesced", tensors, [this, tensors, op] {
    std::vector<Dense> ds(tensors.begin(), tensors.end());
    std::vector<std::unique_ptr<RedOp>> ops;
    check(atoll().GroupStart(), "ncclGroupStart");
    for (Dense& d : ds) {
      ops.push_back(std::make_unique<RedOp>(op, d.data.scalar_type(), comm_));
      check(atoll().AllReduce(d.ptr(), d.ptr(), d.count(), d.type(), ops.back()->get(), comm_, nullptr),
            "ncclAllReduce");
    }
    check(atoll().GroupEnd(), "ncclGroupEnd");
    for (Dense& d : ds) d.done();
  }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  at::Tensor t = single(tensors, "reduce");
  const c10d::ReduceOp op = opts.reduceOp;
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::REDUCE, "atoll:reduce", tensors, [this, t, op, root] {
    Dense d(t);
    RedOp r(op, t.scalar_type(), comm_);
    check(atoll().Reduce(d.ptr(), d.ptr(), d.count(), d.type(), r.get(), root, comm_, nullptr), "ncclReduce");
    d.done();
  }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllgatherOptions& opts) {
  at::Tensor in = single(inputs, "all_gather");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
              "atoll: all_gather needs one list of ", size_, " output tensors");
  checkSame(outputs[0], in, "all_gather");
  std::vector<at::Tensor> outs = outputs[0];
  return enqueue(c10d::OpType::ALLGATHER, "atoll:all_gather", outs, [this, in, outs] {
    Dense d(in);
    at::Tensor flat = at::empty({static_cast<int64_t>(outs.size()) * in.numel()}, in.options());
    check(atoll().AllGather(d.ptr(), flat.data_ptr(), d.count(), d.type(), comm_, nullptr), "ncclAllGather");
    unflatten(flat, in.numel(), outs);
  }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                  const c10d::AllgatherOptions& opts) {
  checkTensor(input);
  checkTensor(output);
  TORCH_CHECK(output.numel() == input.numel() * size_ && output.scalar_type() == input.scalar_type(),
              "atoll: all_gather_into_tensor: the output must hold group-size times the input");
  return enqueue(c10d::OpType::_ALLGATHER_BASE, "atoll:all_gather_into_tensor", {output}, [this, input, output] {
    Dense in(input), out(output);
    check(atoll().AllGather(in.ptr(), out.ptr(), in.count(), in.type(), comm_, nullptr), "ncclAllGather");
    out.done();
  }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                  std::vector<at::Tensor>& inputs,
                                                                                  const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "atoll: as many outputs as inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkTensor(inputs[i]);
    checkTensor(outputs[i]);
    TORCH_CHECK(outputs[i].numel() == inputs[i].numel() * size_, "atoll: all_gather_into_tensor: bad output size");
  }
  return enqueue(c10d::OpType::COALESCED, "atoll:all_gather_into_tensor_coalesced", outputs,
                 [this, inputs, outputs] {
                   std::vector<Dense> ins(inputs.begin(), inputs.end()), outs(outputs.begin(), outputs.end());
                   check(atoll().GroupStart(), "ncclGroupStart");
                   for (size_t i = 0; i < ins.size(); ++i)
                     check(atoll().AllGather(ins[i].ptr(), outs[i].ptr(), ins[i].count(), ins[i].type(), comm_,
                                             nullptr),
                           "ncclAllGather");
                   check(atoll().GroupEnd(), "ncclGroupEnd");
                   for (Dense& d : outs) d.done();
                 }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                 std::vector<std::vector<at::Tensor>>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) {
  at::Tensor out = single(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
              "atoll: reduce_scatter needs one list of ", size_, " input tensors");
  checkSame(inputs[0], out, "reduce_scatter");
  std::vector<at::Tensor> ins = inputs[0];
  const c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::REDUCE_SCATTER, "atoll:reduce_scatter", outputs, [this, out, ins, op] {
    at::Tensor flat = flatten(ins);
    Dense d(out);
    RedOp r(op, out.scalar_type(), comm_);
    check(atoll().ReduceScatter(flat.data_ptr(), d.ptr(), d.count(), d.type(), r.get(), comm_, nullptr),
          "ncclReduceScatter");
    d.done();
  }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                       const c10d::ReduceScatterOptions& opts) {
  checkTensor(input);
  checkTensor(output);
  TORCH_CHECK(input.numel() == output.numel() * size_ && output.scalar_type() == input.scalar_type(),
              "atoll: reduce_scatter_tensor: the input must hold group-size times the output");
  const c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, "atoll:reduce_scatter_tensor", {output},
                 [this, input, output, op] {
                   Dense in(input), out(output);
                   RedOp r(op, output.scalar_type(), comm_);
                   check(atoll().ReduceScatter(in.ptr(), out.ptr(), out.count(), out.type(), r.get(), comm_, nullptr),
                         "ncclReduceScatter");
                   out.done();
                 }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "atoll: as many outputs as inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkTensor(inputs[i]);
    checkTensor(outputs[i]);
    TORCH_CHECK(inputs[i].numel() == outputs[i].numel() * size_, "atoll: reduce_scatter_tensor: bad input size");
  }
  const c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::COALESCED, "atoll:reduce_scatter_tensor_coalesced", outputs,
                 [this, inputs, outputs, op] {
                   std::vector<Dense> ins(inputs.begin(), inputs.end()), outs(outputs.begin(), outputs.end());
                   std::vector<std::unique_ptr<RedOp>> ops;
                   check(atoll().GroupStart(), "ncclGroupStart");
                   for (size_t i = 0; i < ins.size(); ++i) {
                     ops.push_back(std::make_unique<RedOp>(op, outs[i].data.scalar_type(), comm_));
                     check(atoll().ReduceScatter(ins[i].ptr(), outs[i].ptr(), outs[i].count(), outs[i].type(),
                                                 ops.back()->get(), comm_, nullptr),
                           "ncclReduceScatter");
                   }
                   check(atoll().GroupEnd(), "ncclGroupEnd");
                   for (Dense& d : outs) d.done();
                 }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                std::vector<int64_t>& outputSplits,
                                                                std::vector<int64_t>& inputSplits,
                                                                const c10d::AllToAllOptions& opts) {
  checkTensor(input);
  checkTensor(output);
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "atoll: all_to_all_single: dtypes differ");
  std::vector<size_t> inOff, inCount, outOff, outCount;
  splitsToElements(input, inputSplits, size_, &inOff, &inCount);
  splitsToElements(output, outputSplits, size_, &outOff, &outCount);
  return enqueue(c10d::OpType::ALLTOALL_BASE, "atoll:all_to_all_single", {output},
                 [this, input, output, inOff, inCount, outOff, outCount] {
                   Dense in(input), out(output);
                   const size_t es = input.element_size();
                   auto* src = static_cast<const char*>(in.ptr());
                   auto* dst = static_cast<char*>(out.ptr());
                   check(atoll().GroupStart(), "ncclGroupStart");
                   for (int p = 0; p < size_; ++p) {
                     const size_t i = static_cast<size_t>(p);
                     check(atoll().Send(src + inOff[i] * es, inCount[i], in.type(), p, comm_, nullptr), "ncclSend");
                     check(atoll().Recv(dst + outOff[i] * es, outCount[i], out.type(), p, comm_, nullptr), "ncclRecv");
                   }
                   check(atoll().GroupEnd(), "ncclGroupEnd");
                   out.done();
                 }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(static_cast<int>(outputs.size()) == size_ && static_cast<int>(inputs.size()) == size_,
              "atoll: all_to_all needs ", size_, " input and output tensors");
  checkTensors(inputs);
  checkTensors(outputs);
  return enqueue(c10d::OpType::ALLTOALL, "atoll:all_to_all", outputs, [this, inputs, outputs] {
    std::vector<Dense> ins(inputs.begin(), inputs.end()), outs(outputs.begin(), outputs.end());
    check(atoll().GroupStart(), "ncclGroupStart");
    for (int p = 0; p < size_; ++p) {
      const size_t i = static_cast<size_t>(p);
      check(atoll().Send(ins[i].ptr(), ins[i].count(), ins[i].type(), p, comm_, nullptr), "ncclSend");
      check(atoll().Recv(outs[i].ptr(), outs[i].count(), outs[i].type(), p, comm_, nullptr), "ncclRecv");
    }
    check(atoll().GroupEnd(), "ncclGroupEnd");
    for (Dense& d : outs) d.done();
  }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                         std::vector<at::Tensor>& inputs,
                                                         const c10d::GatherOptions& opts) {
  at::Tensor in = single(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                "atoll: gather needs one list of ", size_, " output tensors on the root");
    checkSame(outputs[0], in, "gather");
    outs = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(), "atoll: gather: only the root passes output tensors");
  }
  return enqueue(c10d::OpType::GATHER, "atoll:gather", outs, [this, in, outs, root] {
    Dense d(in);
    at::Tensor flat;
    if (!outs.empty()) flat = at::empty({static_cast<int64_t>(outs.size()) * in.numel()}, in.options());
    check(atoll().Gather(d.ptr(), flat.defined() ? flat.data_ptr() : nullptr, d.count(), d.type(), root, comm_,
                         nullptr),
          "ncclGather");
    unflatten(flat, in.numel(), outs);
  }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::scatter(std::vector<at::Tensor>& outputs,
                                                          std::vector<std::vector<at::Tensor>>& inputs,
                                                          const c10d::ScatterOptions& opts) {
  at::Tensor out = single(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> ins;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                "atoll: scatter needs one list of ", size_, " input tensors on the root");
    checkSame(inputs[0], out, "scatter");
    ins = inputs[0];
  } else {
    TORCH_CHECK(inputs.empty() || inputs[0].empty(), "atoll: scatter: only the root passes input tensors");
  }
  return enqueue(c10d::OpType::SCATTER, "atoll:scatter", outputs, [this, out, ins, root] {
    at::Tensor flat = ins.empty() ? at::Tensor() : flatten(ins);
    Dense d(out);
    check(atoll().Scatter(flat.defined() ? flat.data_ptr() : nullptr, d.ptr(), d.count(), d.type(), root, comm_,
                          nullptr),
          "ncclScatter");
    d.done();
  }, opts.asyncOp);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::send(std::vector<at::Tensor>& tensors, int dstRank, int) {
  at::Tensor t = single(tensors, "send");
  return enqueue(c10d::OpType::SEND, "atoll:send", tensors, [this, t, dstRank] {
    Dense d(t);
    check(atoll().Send(d.ptr(), d.count(), d.type(), dstRank, comm_, nullptr), "ncclSend");
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::recv(std::vector<at::Tensor>& tensors, int srcRank, int) {
  at::Tensor t = single(tensors, "recv");
  return enqueue(c10d::OpType::RECV, "atoll:recv", tensors, [this, t, srcRank] {
    Dense d(t);
    check(atoll().Recv(d.ptr(), d.count(), d.type(), srcRank, comm_, nullptr), "ncclRecv");
    d.done();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAtoll::barrier(const c10d::BarrierOptions& opts) {
  return enqueue(c10d::OpType::BARRIER, "atoll:barrier", {}, [this] {
    int32_t token = 0;
    check(atoll().AllReduce(&token, &token, 1, ncclInt32, ncclSum, comm_, nullptr), "ncclAllReduce (barrier)");
  }, opts.asyncOp);
}

at::Tensor ProcessGroupAtoll::allocateTensor(long size, at::TensorOptions options) {
  TORCH_CHECK(options.device().is_cpu(), "atoll: allocate_tensor serves CPU tensors (got ", options.device(), ")");
  TORCH_CHECK(size >= 0, "atoll: allocate_tensor of ", size, " elements");
  return at::detail::empty_generic({size}, poolAllocator().get(), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                   c10::typeMetaToScalarType(options.dtype()), std::nullopt);
}

bool ProcessGroupAtoll::supportsTensorAlloc(c10::DeviceIndex) { return true; }

}  // namespace atoll_torch
