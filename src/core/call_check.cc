#include "core/call_check.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "algorithms/p2p.h"
#include "core/comm.h"
#include "core/debug.h"
#include "kernels/host/reduce.h"

namespace atl {
namespace {

constexpr uint32_t kMagic = 0x4b435441;  // "ATCK"
constexpr uint16_t kVersion = 1;
constexpr uint32_t kCollectives = 0, kPointToPoint = 1;

bool rooted(algo::Coll c) {
  return c == algo::Coll::Broadcast || c == algo::Coll::Reduce || c == algo::Coll::Gather || c == algo::Coll::Scatter;
}

uint64_t mix(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
  return h;
}

CallPrint blank(uint32_t kind) {
  CallPrint p;
  p.magic = kMagic;
  p.version = kVersion;
  p.size = sizeof(CallPrint);
  p.kind = kind;
  return p;
}

std::string describe(const CallPrint& p) {
  if (p.coll < 0) return "nothing";
  char out[160];
  const auto coll = static_cast<algo::Coll>(p.coll);
  const bool reduction = coll == algo::Coll::AllReduce || coll == algo::Coll::Reduce || coll == algo::Coll::ReduceScatter;
  char root[24] = "";
  if (rooted(coll)) snprintf(root, sizeof(root), ", root %d", p.root);
  char op[24] = "";
  if (reduction) {
    static constexpr const char* kOps[] = {"sum", "prod", "max", "min", "avg"};
    if (p.redop >= 0 && p.redop < 5)
      snprintf(op, sizeof(op), ", %s", kOps[p.redop]);
    else
      snprintf(op, sizeof(op), ", op %d", p.redop);
  }
  snprintf(out, sizeof(out), "%s(count %llu, %s%s%s)", algo::collName(coll), static_cast<unsigned long long>(p.count),
           kernels::dtypeName(static_cast<ncclDataType_t>(p.dtype)), op, root);
  std::string s = out;
  if (p.ops > 1) s += " and " + std::to_string(p.ops - 1) + " more collective(s) in its group";
  return s;
}

Status malformed(const CallPrint& p, int from) {
  return ATOLL_ERROR(ncclInvalidUsage,
                     "ATOLL_CHECK: rank %d sent a malformed call fingerprint (magic %08x, version %u, size %u; "
                     "expected %08x, %u, %zu): is it running another Atoll build, or without ATOLL_CHECK?",
                     from, p.magic, p.version, p.size, kMagic, kVersion, sizeof(CallPrint));
}

bool wellFormed(const CallPrint& p) { return p.magic == kMagic && p.version == kVersion && p.size == sizeof(CallPrint); }

}  // namespace

Result<std::unique_ptr<CallCheck>> prepareCallCheck(ncclComm* comm, std::span<const OpDesc* const> colls,
                                                    std::span<const OpDesc* const> p2p) {
  auto check = std::make_unique<CallCheck>();
  check->comm = comm;
  const int n = comm->nranks, self = comm->rank;
  algo::Schedule schedule;
  if (!colls.empty() && n > 1) {
    CallPrint p = blank(kCollectives);
    p.seq = comm->checkSeq++;
    p.ops = static_cast<uint32_t>(colls.size());
    uint64_t h = 1469598103934665603ull;
    for (const OpDesc* op : colls) {
      h = mix(h, static_cast<uint64_t>(op->coll));
      h = mix(h, op->count);
      h = mix(h, static_cast<uint64_t>(static_cast<uint32_t>(op->rawDtype)));
      h = mix(h, static_cast<uint64_t>(static_cast<uint32_t>(op->rawOp)));
      h = mix(h, rooted(op->coll) ? static_cast<uint64_t>(static_cast<uint32_t>(op->root)) : 0);
    }
    p.hash = h;
    const OpDesc& first = *colls.front();
    p.coll = static_cast<int32_t>(first.coll);
    p.dtype = first.rawDtype;
    p.redop = first.rawOp;
    p.root = rooted(first.coll) ? first.root : -1;
    p.count = first.count;
    // Every rank sends the same print to every rank, each pair on its own (a staged all-to-all
    // would stall behind a rank that launched point-to-point work instead, and never compare).
    check->collective = true;
    check->out.assign(static_cast<size_t>(n), p);
    for (int r = 0; r < n; ++r) check->peers.push_back(r);
  } else if (!p2p.empty()) {
    // Bytes to and from each peer, in call order of first appearance.
    for (const OpDesc* op : p2p) {
      const int peer = op->root;
      size_t i = 0;
      while (i < check->peers.size() && check->peers[i] != peer) ++i;
      if (i == check->peers.size()) {
        check->peers.push_back(peer);
        check->out.push_back(blank(kPointToPoint));
        check->out.back().coll = static_cast<int32_t>(algo::Coll::SendRecv);
      }
      const uint64_t bytes = op->count * kernels::dtypeSize(op->dtype);
      (op->isSend ? check->out[i].count : check->out[i].expect) += bytes;
    }
  }
  if (!check->peers.empty()) {
    check->in.assign(check->out.size(), CallPrint{});
    std::vector<algo::P2POp> ops;
    for (size_t i = 0; i < check->peers.size(); ++i) {
      if (check->peers[i] == self) {
        check->in[i] = check->out[i];  // compared locally
        continue;
      }
      ops.push_back({true, check->peers[i], sizeof(CallPrint), static_cast<algo::BufId>(algo::kFirstUserBuf + 2 * i)});
      ops.push_back({false, check->peers[i], sizeof(CallPrint), static_cast<algo::BufId>(algo::kFirstUserBuf + 2 * i + 1)});
    }
    schedule = algo::buildP2P(ops, self);
  }
  if (schedule.programs.empty()) return check;
  auto plan = std::make_unique<engine::Plan>();
  plan->dtype = ncclUint8;
  plan->elemSize = 1;
  plan->schedule = std::move(schedule);
  plan->buffers.assign(algo::kFirstUserBuf + 2 * check->peers.size(), nullptr);
  for (size_t i = 0; i < check->peers.size(); ++i) {
    plan->buffers[algo::kFirstUserBuf + 2 * i] = reinterpret_cast<std::byte*>(&check->out[i]);
    plan->buffers[algo::kFirstUserBuf + 2 * i + 1] = reinterpret_cast<std::byte*>(&check->in[i]);
  }
  char what[96];
  snprintf(what, sizeof(what), "ATOLL_CHECK fingerprint exchange on rank %d/%d", self, n);
  plan->what = what;
  check->plan = std::move(plan);
  return check;
}

Status compareCallPrints(CallCheck& check) {
  const ncclComm* comm = check.comm;
  if (check.in.empty()) return Status::Ok();
  if (check.collective) {  // in[r] is rank r's print
    // Compared with the lowest rank's print, in rank order, so every rank reports the same pair.
    for (size_t r = 0; r < check.in.size(); ++r)
      if (!wellFormed(check.in[r])) return malformed(check.in[r], static_cast<int>(r));
    for (size_t r = 0; r < check.in.size(); ++r) {
      if (check.in[r].kind == kCollectives) continue;
      check.desync = true;
      return ATOLL_ERROR(ncclInvalidUsage,
                         "ATOLL_CHECK: rank %d launched %s while rank %zu launched only point-to-point operations",
                         comm->rank, describe(check.out[0]).c_str(), r);
    }
    const CallPrint& ref = check.in[0];
    for (size_t r = 1; r < check.in.size(); ++r) {
      const CallPrint& p = check.in[r];
      if (p.seq != ref.seq)
        return ATOLL_ERROR(ncclInvalidUsage,
                           "ATOLL_CHECK: rank %zu is at collective launch %llu (%s) while rank 0 is at launch %llu (%s): "
                           "a rank skipped or added a call",
                           r, static_cast<unsigned long long>(p.seq), describe(p).c_str(),
                           static_cast<unsigned long long>(ref.seq), describe(ref).c_str());
      if (p.hash != ref.hash || p.ops != ref.ops)
        return ATOLL_ERROR(ncclInvalidUsage, "ATOLL_CHECK: ranks disagree on collective launch %llu: rank 0 called %s, rank %zu %s",
                           static_cast<unsigned long long>(ref.seq), describe(ref).c_str(), r, describe(p).c_str());
    }
    return Status::Ok();
  }
  for (size_t i = 0; i < check.peers.size(); ++i) {
    const CallPrint& mine = check.out[i];
    const CallPrint& theirs = check.in[i];
    const int peer = check.peers[i];
    if (!wellFormed(theirs)) return malformed(theirs, peer);
    if (theirs.kind != kPointToPoint) {
      check.desync = true;
      return ATOLL_ERROR(ncclInvalidUsage, "ATOLL_CHECK: rank %d exchanges point-to-point data with rank %d, which launched %s",
                         comm->rank, peer, describe(theirs).c_str());
    }
    if (mine.count != theirs.expect || mine.expect != theirs.count)
      return ATOLL_ERROR(ncclInvalidUsage,
                         "ATOLL_CHECK: rank %d sends %llu bytes to rank %d and receives %llu from it, but rank %d sends "
                         "%llu and receives %llu",
                         comm->rank, static_cast<unsigned long long>(mine.count), peer,
                         static_cast<unsigned long long>(mine.expect), peer,
                         static_cast<unsigned long long>(theirs.count), static_cast<unsigned long long>(theirs.expect));
  }
  return Status::Ok();
}

}  // namespace atl
