// Ranks as threads for context-parallel tests (model/deepseek_v41/context_parallel.h): an
// in-process ContextExchange over a mailbox keyed by (from, to, tag). Shared by the model and
// engine tests.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "model/deepseek_v41/context_parallel.h"

namespace deepinfer::model {

// Messages between the thread-ranks of one test, by (from, to, tag).
class Mailbox {
 public:
  void Put(int from, int to, int tag, std::string bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    received_[to] += static_cast<int64_t>(bytes.size());
    box_[{from, to, tag}] = std::move(bytes);
    cv_.notify_all();
  }
  std::string Take(int from, int to, int tag) {
    std::unique_lock<std::mutex> lock(mu_);
    const auto key = std::make_tuple(from, to, tag);
    cv_.wait(lock, [&] { return box_.count(key) > 0; });
    std::string bytes = std::move(box_[key]);
    box_.erase(key);
    return bytes;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::string> box_;
  std::map<int, int64_t> received_;  // bytes put for each receiver

 public:
  int64_t received(int to) {
    std::lock_guard<std::mutex> lock(mu_);
    return received_[to];
  }
};

class ThreadExchange : public ContextExchange {
 public:
  ThreadExchange(Mailbox* box, int rank, int size) : box_(box), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status Send(int to, int tag, std::string bytes) override {
    if (corrupt_tag_ == tag) bytes.pop_back();
    box_->Put(rank_, to, tag, std::move(bytes));
    return Status::Ok();
  }
  StatusOr<std::string> Receive(int from, int tag) override { return box_->Take(from, rank_, tag); }
  Status Flush() override { return Status::Ok(); }
  int corrupt_tag_ = -1;  // a layer whose bytes this rank sends one short

 private:
  Mailbox* box_;
  int rank_, size_;
};

}  // namespace deepinfer::model
