// TaskThread: one persistent thread that runs one task at a time for its owner — the engine's
// asynchronous forward call (engine.h) — instead of a new thread per call (std::async creates
// and joins one per step: ~17 µs on the 2-vCPU host, plus a cold stack the scheduler must place).
//
// Start hands the thread a task; Wait blocks until it has returned. One owner thread calls both,
// alternately; the task's writes are visible to the owner after Wait.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace deepinfer {

class TaskThread {
 public:
  TaskThread();
  ~TaskThread();
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  // Requires no task running (every Start is followed by a Wait).
  void Start(std::function<void()> task);
  void Wait();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_;
  bool busy_ = false;  // a task was started and has not returned
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace deepinfer
