#include "transports/net/net_proxy.h"

#include <algorithm>

#include "base/debug.h"

namespace atl::net {

Proxy::Proxy() : thread_([this] { loop(); }) {}

Proxy::~Proxy() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  thread_.join();
}

Status Proxy::call(const std::function<Status()>& fn) {
  Task t{fn, Status::Ok(), false};
  std::unique_lock<std::mutex> lock(mu_);
  tasks_.push_back(&t);
  cv_.notify_all();
  doneCv_.wait(lock, [&] { return t.done; });
  return t.result;
}

void Proxy::add(Driven* d) {
  (void)call([this, d] {
    // Newest first: a transport's dials then run before its accepts in every turn, which plugins
    // whose connect or accept block (nccl-fastsocket) need to avoid two ranks both waiting in accept.
    driven_.insert(driven_.begin(), d);
    return Status::Ok();
  });
}

void Proxy::remove(Driven* d) {
  (void)call([this, d] {
    driven_.erase(std::remove(driven_.begin(), driven_.end(), d), driven_.end());
    return Status::Ok();
  });
}

void Proxy::wake() {
  std::lock_guard<std::mutex> lock(mu_);
  napping_.store(false, std::memory_order_release);
  cv_.notify_all();
}

bool Proxy::runTasks() {
  std::deque<Task*> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(tasks_);
  }
  if (batch.empty()) return false;
  for (Task* t : batch) {
    Status s = t->fn();
    std::lock_guard<std::mutex> lock(mu_);
    t->result = std::move(s);
    t->done = true;
  }
  doneCv_.notify_all();
  return true;
}

void Proxy::loop() {
  auto lastMove = std::chrono::steady_clock::now();
  while (!stop_.load(std::memory_order_acquire)) {
    bool moved = runTasks();
    for (Driven* d : driven_) moved = d->drive() || moved;
    const auto now = std::chrono::steady_clock::now();
    if (moved) {
      lastMove = now;
      continue;
    }
    if (now - lastMove < kSpin) {
      std::this_thread::yield();
      continue;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) return;
    if (!tasks_.empty()) continue;
    // A kick between here and the wait finds napping_ set, takes mu_ (so waits until we sleep)
    // and clears it; the predicate then ends the nap.
    napping_.store(true, std::memory_order_release);
    cv_.wait_for(lock, kIdleNap, [&] { return stop_ || !tasks_.empty() || !napping_.load(std::memory_order_acquire); });
    const bool kicked = !napping_.load(std::memory_order_acquire);
    napping_.store(false, std::memory_order_release);
    if (stop_) return;
    if (kicked) lastMove = std::chrono::steady_clock::now();
  }
}

}  // namespace atl::net
