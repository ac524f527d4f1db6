#include <algorithm>
#include <sstream>

#include "algorithms/schedule.h"

namespace atl::algo {

const char* collName(Coll c) {
  switch (c) {
    case Coll::AllReduce: return "AllReduce";
    case Coll::Broadcast: return "Broadcast";
    case Coll::Reduce: return "Reduce";
    case Coll::AllGather: return "AllGather";
    case Coll::ReduceScatter: return "ReduceScatter";
    case Coll::AlltoAll: return "AlltoAll";
    case Coll::Gather: return "Gather";
    case Coll::Scatter: return "Scatter";
    case Coll::SendRecv: return "SendRecv";
  }
  return "?";
}

const char* algoName(Algo a) {
  switch (a) {
    case Algo::Ring: return "ring";
    case Algo::RecursiveDoubling: return "rd";
    case Algo::Tree: return "tree";
    case Algo::RecursiveHalvingDoubling: return "rhd";
    case Algo::Direct: return "direct";
    case Algo::Hierarchical: return "hierarchical";
    case Algo::Binomial: return "binomial";
    case Algo::Bruck: return "bruck";
  }
  return "?";
}

Span evenSplit(size_t total, int parts, int index) {
  size_t p = static_cast<size_t>(parts), i = static_cast<size_t>(index);
  size_t base = total / p, extra = total % p;
  size_t offset = i * base + std::min(i, extra);
  return {offset, base + (i < extra ? 1 : 0)};
}

int channelsFor(size_t count, int nchannels, size_t minPerChannel) {
  if (minPerChannel == 0) minPerChannel = 1;
  size_t byShare = count / minPerChannel;
  return static_cast<int>(std::clamp<size_t>(byShare, 1, static_cast<size_t>(std::max(nchannels, 1))));
}

int channelsUsed(const Schedule& s) {
  std::vector<int> channels;
  for (const Program& p : s.programs) channels.push_back(p.channel);
  std::sort(channels.begin(), channels.end());
  return static_cast<int>(std::unique(channels.begin(), channels.end()) - channels.begin());
}

void addTransfer(Program& prog, int sendPeer, Ref src, size_t sendCount, int recvPeer, Ref dst, size_t recvCount,
                 bool reduce, Ref acc) {
  Step st;
  st.kind = StepKind::Transfer;
  if (sendPeer >= 0 && sendCount > 0) {
    st.sendPeer = sendPeer;
    st.src = src;
    st.sendCount = sendCount;
  }
  if (recvPeer >= 0 && recvCount > 0) {
    st.recvPeer = recvPeer;
    st.dst = dst;
    st.recvCount = recvCount;
    st.reduce = reduce;
    st.acc = acc;
  }
  if (st.sendPeer >= 0 || st.recvPeer >= 0) prog.steps.push_back(st);
}

void addCopy(Program& prog, Ref src, Ref dst, size_t count) {
  if (count == 0) return;
  Step st;
  st.kind = StepKind::LocalCopy;
  st.src = src;
  st.dst = dst;
  st.sendCount = count;
  prog.steps.push_back(st);
}

void addLocalReduce(Program& prog, Ref a, Ref b, Ref dst, size_t count) {
  if (count == 0) return;
  Step st;
  st.kind = StepKind::LocalReduce;
  st.src = a;
  st.acc = b;
  st.dst = dst;
  st.sendCount = count;
  prog.steps.push_back(st);
}

namespace {
std::string bufName(BufId b) {
  switch (b) {
    case kSendBuf: return "send";
    case kRecvBuf: return "recv";
    case kScratchBuf: return "scratch";
    default: return "user" + std::to_string(b - kFirstUserBuf);
  }
}
}  // namespace

std::string describe(const Schedule& s) {
  std::ostringstream out;
  for (size_t p = 0; p < s.programs.size(); ++p) {
    out << "program " << p << " (channel " << s.programs[p].channel << ")\n";
    for (const Step& st : s.programs[p].steps) {
      out << "  ";
      if (st.kind == StepKind::LocalCopy) {
        out << "copy " << st.sendCount << " " << bufName(st.src.buf) << "+" << st.src.offset << " -> "
            << bufName(st.dst.buf) << "+" << st.dst.offset;
      } else if (st.kind == StepKind::LocalReduce) {
        out << "reduce " << st.sendCount << " " << bufName(st.src.buf) << "+" << st.src.offset << " , "
            << bufName(st.acc.buf) << "+" << st.acc.offset << " -> " << bufName(st.dst.buf) << "+" << st.dst.offset;
      } else {
        if (st.sendPeer >= 0)
          out << "send " << st.sendCount << " " << bufName(st.src.buf) << "+" << st.src.offset << " ->r" << st.sendPeer << " ";
        if (st.recvPeer >= 0) {
          out << "recv " << st.recvCount << " r" << st.recvPeer << "-> " << bufName(st.dst.buf) << "+" << st.dst.offset;
          if (st.reduce) out << " (reduce with " << bufName(st.acc.buf) << "+" << st.acc.offset << ")";
        }
      }
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace atl::algo
