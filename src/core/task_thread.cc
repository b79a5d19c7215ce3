#include "core/task_thread.h"

#include "core/check.h"

namespace deepinfer {

TaskThread::TaskThread() : thread_([this] { Loop(); }) {}

TaskThread::~TaskThread() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void TaskThread::Start(std::function<void()> task) {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    CHECK(!busy_) << "TaskThread::Start while a task runs";
    task_ = std::move(task);
    busy_ = true;
  }
  cv_.notify_all();
}

void TaskThread::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
}

void TaskThread::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || (busy_ && task_); });
    if (stop_) return;
    std::function<void()> task = std::move(task_);
    task_ = nullptr;
    lock.unlock();
    task();
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace deepinfer
