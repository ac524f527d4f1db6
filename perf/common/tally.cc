#include "perf/common/tally.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <string_view>
#include <vector>

#include "src/base/fnv1a.h"

namespace atl::perf {
namespace {

using Clock = std::chrono::steady_clock;
// Clients reach the tally right after the all-reduce of the row's times, so they arrive together:
// a minute only runs out when a rank is gone or stuck.
constexpr auto kTimeout = std::chrono::seconds(60);
// A client waits longer than the server, so a missing rank is reported by the server, which knows
// how many clients did arrive.
constexpr auto kClientTimeout = kTimeout + std::chrono::seconds(15);
// Per address: process 0 may list interfaces that other hosts cannot route to.
constexpr auto kConnectTimeout = std::chrono::seconds(3);
constexpr uint64_t kHello = 0x4f4c4c4548594c54;
constexpr uint64_t kWelcome = 0x454d4f434c455754;
constexpr uint64_t kRelease = 0x455341454c45524c;
// Bytes on the server thread's wake pipe.
constexpr char kWakeStop = 0;
constexpr char kWakeRelease = 1;

// Every message either way: hello {kHello, token}, welcome {kWelcome, token}, per row the report
// and the totals {seq, out-of-place, in-place}, and at the end release {kRelease, token}.
struct Frame {
  uint64_t tag = 0;
  int64_t v[2] = {};
};

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  std::va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

[[noreturn]] void fatal(const TallyFail& fail, const std::string& message) {
  fail(message);
  std::abort();  // TallyFail must not return
}

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

uint64_t checksumOf(const TallyRecord& r) {
  return fnv1a(std::string_view(reinterpret_cast<const char*>(&r), offsetof(TallyRecord, checksum)));
}

int msUntil(Clock::time_point t) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, INT_MAX));
}

bool sendFrame(int fd, const Frame& f) {
  const char* p = reinterpret_cast<const char*>(&f);
  size_t left = sizeof f;
  while (left > 0) {
    const ssize_t n = send(fd, p, left, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

enum class Got { Frame, Closed, TimedOut, Error };

Got recvFrame(int fd, Frame* f, Clock::time_point deadline) {
  char* p = reinterpret_cast<char*>(f);
  size_t have = 0;
  while (have < sizeof *f) {
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, msUntil(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Got::Error;
    if (ready == 0) return Got::TimedOut;
    const ssize_t n = recv(fd, p + have, sizeof *f - have, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Got::Error;
    if (n == 0) return Got::Closed;
    have += static_cast<size_t>(n);
  }
  return Got::Frame;
}

const char* describe(Got got) {
  switch (got) {
    case Got::Frame:
      return "ok";
    case Got::Closed:
      return "connection closed";
    case Got::TimedOut:
      return "timed out";
    case Got::Error:
      break;
  }
  return std::strerror(errno);
}

// Non-loopback first: those are the ones a process on another host can reach.
std::vector<uint32_t> localAddresses() {
  std::vector<uint32_t> outside, loopback;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_UP) == 0) continue;
      sockaddr_in sa{};
      std::memcpy(&sa, i->ifa_addr, sizeof sa);
      std::vector<uint32_t>& to = (i->ifa_flags & IFF_LOOPBACK) != 0 ? loopback : outside;
      if (std::find(to.begin(), to.end(), sa.sin_addr.s_addr) == to.end()) to.push_back(sa.sin_addr.s_addr);
    }
    freeifaddrs(list);
  }
  if (loopback.empty()) loopback.push_back(htonl(INADDR_LOOPBACK));
  outside.resize(std::min<size_t>(outside.size(), TallyRecord::kMaxAddrs - 1));
  outside.push_back(loopback.front());
  return outside;
}

std::string addressText(uint32_t addr, uint16_t port) {
  char text[INET_ADDRSTRLEN] = "?";
  in_addr a{};
  a.s_addr = addr;
  inet_ntop(AF_INET, &a, text, sizeof text);
  return format("%s:%u", text, static_cast<unsigned>(ntohs(port)));
}

// A connection that sent the token and got the server's welcome back, or -1 with *why.
int connectTo(uint32_t addr, uint16_t port, uint64_t token, std::string* why) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *why = std::strerror(errno);
    return -1;
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = port;
  sa.sin_addr.s_addr = addr;
  const auto deadline = Clock::now() + kConnectTimeout;
  int err = connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    pollfd pfd{fd, POLLOUT, 0};
    int ready;
    while ((ready = poll(&pfd, 1, msUntil(deadline))) < 0 && errno == EINTR) {
    }
    socklen_t len = sizeof err;
    if (ready <= 0)
      err = ready == 0 ? ETIMEDOUT : errno;
    else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
      err = errno;
  }
  if (err == 0) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    Frame f{kHello, {static_cast<int64_t>(token), 0}};
    if (!sendFrame(fd, f)) {
      *why = std::strerror(errno);
    } else if (Got got = recvFrame(fd, &f, deadline); got != Got::Frame) {
      *why = describe(got);
    } else if (f.tag != kWelcome || static_cast<uint64_t>(f.v[0]) != token) {
      *why = "not this job's tally server";
    } else {
      return fd;
    }
  } else {
    *why = std::strerror(err);
  }
  close(fd);
  return -1;
}

}  // namespace

// One thread polling every connection; rows complete in the order the clients report them.
struct Tally::Server {
  struct Conn {
    int fd;
    Clock::time_point helloBy;
    bool joined = false;
    uint64_t nextSeq = 0;
    Frame in{};
    size_t have = 0;
  };
  struct Row {
    std::vector<int> from;
    int64_t v[2] = {};
    Clock::time_point by;
  };

  int clients;
  uint64_t token;
  const TallyFail& fail;
  int listenFd = -1;
  int wake[2] = {-1, -1};
  std::vector<Conn> conns;
  std::map<uint64_t, Row> rows;
  int joined = 0;
  std::thread thread;

  Server(int n, const TallyFail& f) : clients(n), fail(f) {}
  ~Server() {
    if (thread.joinable()) {
      poke(kWakeStop);
      thread.join();
    }
    for (const Conn& c : conns) close(c.fd);
    for (int fd : {listenFd, wake[0], wake[1]}) {
      if (fd >= 0) close(fd);
    }
  }

  void poke(char what) {
    while (write(wake[1], &what, 1) < 0 && errno == EINTR) {
    }
  }
  void loop();
  // Returns false when the loop is to stop.
  bool woken();
  void read(Conn& c);
  void hello(Conn& c);
  void report(Conn& c);
  void lost(Conn& c);
};

void Tally::Server::loop() {
  std::vector<pollfd> fds;
  for (;;) {
    const auto now = Clock::now();
    auto next = Clock::time_point::max();
    for (const auto& [seq, row] : rows) {
      if (row.by <= now) {
        fatal(fail, format("row %llu: only %zu of %d clients reported within %lld s", ull(seq), row.from.size(),
                           clients, static_cast<long long>(kTimeout.count())));
      }
      next = std::min(next, row.by);
    }
    for (Conn& c : conns) {
      if (c.joined) continue;
      if (c.helloBy <= now) {
        close(c.fd);
        c.fd = -1;
      } else {
        next = std::min(next, c.helloBy);
      }
    }
    std::erase_if(conns, [](const Conn& c) { return c.fd < 0; });

    fds.assign({{wake[0], POLLIN, 0}, {listenFd, POLLIN, 0}});
    for (const Conn& c : conns) fds.push_back({c.fd, POLLIN, 0});
    const int ready = poll(fds.data(), fds.size(), next == Clock::time_point::max() ? -1 : msUntil(next));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) fatal(fail, format("poll: %s", std::strerror(errno)));
    if (fds[0].revents != 0 && !woken()) return;
    // Connections first: accepting may grow conns, which fds indexes.
    for (size_t i = 0; i < fds.size() - 2; ++i) {
      if (fds[i + 2].revents != 0 && conns[i].fd >= 0) read(conns[i]);
    }
    if ((fds[1].revents & POLLIN) != 0) {
      const int fd = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conns.push_back({fd, Clock::now() + kConnectTimeout});
      }
    }
  }
}

bool Tally::Server::woken() {
  char what = kWakeStop;
  ssize_t n;
  while ((n = ::read(wake[0], &what, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1 || what == kWakeStop) return false;
  // Release: best effort, since a client that is gone needs no release (process 0's own clients
  // have closed by now).
  for (const Conn& c : conns) {
    if (c.joined) sendFrame(c.fd, {kRelease, {static_cast<int64_t>(token), 0}});
  }
  return true;
}

void Tally::Server::read(Conn& c) {
  const ssize_t n = recv(c.fd, reinterpret_cast<char*>(&c.in) + c.have, sizeof c.in - c.have, MSG_DONTWAIT);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) return lost(c);
  c.have += static_cast<size_t>(n);
  if (c.have < sizeof c.in) return;
  c.have = 0;
  c.joined ? report(c) : hello(c);
}

void Tally::Server::hello(Conn& c) {
  if (c.in.tag != kHello || static_cast<uint64_t>(c.in.v[0]) != token) {
    // Not one of ours (a stray connection to the port): drop it and keep serving the job.
    std::fprintf(stderr, "tally: dropped a connection without this job's token\n");
    close(c.fd);
    c.fd = -1;
    return;
  }
  if (joined == clients) fatal(fail, format("more than the %d expected clients joined", clients));
  c.joined = true;
  ++joined;
  if (!sendFrame(c.fd, {kWelcome, {static_cast<int64_t>(token), 0}})) lost(c);
}

void Tally::Server::report(Conn& c) {
  const uint64_t seq = c.in.tag;
  if (seq != c.nextSeq) {
    fatal(fail, format("a client reported row %llu where row %llu was due", ull(seq), ull(c.nextSeq)));
  }
  ++c.nextSeq;
  Row& row = rows[seq];
  if (row.from.empty()) row.by = Clock::now() + kTimeout;
  row.from.push_back(c.fd);
  row.v[0] += c.in.v[0];
  row.v[1] += c.in.v[1];
  if (static_cast<int>(row.from.size()) < clients) return;
  const Frame totals{seq, {row.v[0], row.v[1]}};
  for (int fd : row.from) {
    if (!sendFrame(fd, totals)) {
      fatal(fail, format("cannot send the totals of row %llu to a client: %s", ull(seq), std::strerror(errno)));
    }
  }
  rows.erase(seq);
}

void Tally::Server::lost(Conn& c) {
  // Clients leave only after the totals of their last row, which is every client's last row, so
  // a row still open means a client is gone mid-job (and its fd may be in the row's list).
  if (c.joined && !rows.empty()) {
    fatal(fail, format("a client disconnected while row %llu was open", ull(rows.begin()->first)));
  }
  close(c.fd);
  c.fd = -1;
}

// A generation barrier: a fast thread may add to the next row before a slow one has read this
// row's totals, but that next row cannot complete (and overwrite them) without the slow one.
struct Tally::Local {
  int clients;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t seq = 0;
  int arrived = 0;
  int64_t acc[2] = {};
  int64_t done[2] = {};

  explicit Local(int n) : clients(n) {}

  void sum(uint64_t row, int64_t v[2], const TallyFail& fail) {
    std::unique_lock<std::mutex> lock(mu);
    if (row != seq) fatal(fail, format("a thread reported row %llu where row %llu was due", ull(row), ull(seq)));
    acc[0] += v[0];
    acc[1] += v[1];
    if (++arrived == clients) {
      std::copy(acc, acc + 2, done);
      acc[0] = acc[1] = 0;
      arrived = 0;
      ++seq;
      cv.notify_all();
    } else if (!cv.wait_for(lock, kTimeout, [&] { return seq > row; })) {
      fatal(fail, format("row %llu: only %d of %d threads reported within %lld s", ull(row), arrived, clients,
                         static_cast<long long>(kTimeout.count())));
    }
    std::copy(done, done + 2, v);
  }
};

Tally::Tally(int clients, int localClients, bool crossProcess, bool serve, TallyFail fail)
    : crossProcess_(crossProcess), fail_(std::move(fail)) {
  if (!crossProcess_) {
    local_ = std::make_unique<Local>(localClients);
    return;
  }
  if (!serve) return;
  server_ = std::make_unique<Server>(clients, fail_);
  Server& s = *server_;
  s.listenFd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof sa;
  if (s.listenFd < 0 || bind(s.listenFd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0 ||
      listen(s.listenFd, SOMAXCONN) != 0 || getsockname(s.listenFd, reinterpret_cast<sockaddr*>(&sa), &len) != 0 ||
      pipe2(s.wake, O_CLOEXEC) != 0) {
    fatal(fail_, format("cannot start the server: %s", std::strerror(errno)));
  }
  std::random_device random;
  s.token = (static_cast<uint64_t>(random()) << 32 | random()) | 1;
  record_.magic = TallyRecord::kMagic;
  record_.version = TallyRecord::kVersion;
  record_.port = sa.sin_port;
  record_.token = s.token;
  const std::vector<uint32_t> addrs = localAddresses();
  record_.naddrs = static_cast<uint32_t>(addrs.size());
  std::copy(addrs.begin(), addrs.end(), record_.addrs);
  record_.checksum = checksumOf(record_);
  s.thread = std::thread([&s] { s.loop(); });
}

Tally::~Tally() = default;

void Tally::release() {
  if (server_ != nullptr) server_->poke(kWakeRelease);
}

std::unique_ptr<Tally::Client> Tally::join(const TallyRecord* received) {
  std::unique_ptr<Client> client(new Client(*this));
  if (!crossProcess_) return client;
  const TallyRecord& r = *received;
  if (r.magic != TallyRecord::kMagic || r.version != TallyRecord::kVersion || r.naddrs == 0 ||
      r.naddrs > TallyRecord::kMaxAddrs || r.checksum != checksumOf(r)) {
    fatal(fail_, format("the server's address record broadcast from rank 0 is garbled (magic 0x%08x, version %u, "
                        "%u addresses, checksum %s): ncclBroadcast delivered wrong data",
                        r.magic, r.version, r.naddrs, r.checksum == checksumOf(r) ? "ok" : "wrong"));
  }
  std::string tried;
  for (uint32_t i = 0; i < r.naddrs; ++i) {
    std::string why;
    const int fd = connectTo(r.addrs[i], r.port, r.token, &why);
    const std::string where = addressText(r.addrs[i], r.port);
    if (fd >= 0) {
      client->fd_ = fd;
      client->token_ = r.token;
      client->server_ = where;
      return client;
    }
    tried += format(" %s (%s)", where.c_str(), why.c_str());
  }
  fatal(fail_, format("cannot reach the server of process 0; tried%s", tried.c_str()));
}

void Tally::Client::awaitRelease() {
  if (fd_ < 0 || tally_.server_ != nullptr) return;
  // Closed or timed out: process 0 is gone or stuck, and its own status says so; this process's
  // results are final either way.
  Frame f;
  while (recvFrame(fd_, &f, Clock::now() + kClientTimeout) == Got::Frame) {
    if (f.tag == kRelease && static_cast<uint64_t>(f.v[0]) == token_) return;
  }
}

Tally::Client::~Client() {
  if (fd_ >= 0) close(fd_);
}

void Tally::Client::sum(uint64_t seq, int64_t v[2]) {
  if (fd_ < 0) return tally_.local_->sum(seq, v, tally_.fail_);
  Frame f{seq, {v[0], v[1]}};
  if (!sendFrame(fd_, f)) {
    fatal(tally_.fail_,
          format("cannot send row %llu to the server at %s: %s", ull(seq), server_.c_str(), std::strerror(errno)));
  }
  if (Got got = recvFrame(fd_, &f, Clock::now() + kClientTimeout); got != Got::Frame) {
    fatal(tally_.fail_,
          format("no totals for row %llu from the server at %s: %s", ull(seq), server_.c_str(), describe(got)));
  }
  if (f.tag != seq) {
    fatal(tally_.fail_, format("the server at %s sent row %llu for row %llu", server_.c_str(), ull(f.tag), ull(seq)));
  }
  v[0] = f.v[0];
  v[1] = f.v[1];
}

}  // namespace atl::perf
