#include "core/task_thread.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace deepinfer {
namespace {

// Each task runs once, on the task thread (not the owner's), and its writes are visible after
// Wait; the same thread serves every task.
TEST(TaskThread, RunsEachTaskOnceOnItsOwnThread) {
  TaskThread worker;
  const std::thread::id owner = std::this_thread::get_id();
  std::vector<int> values(500, 0);
  std::thread::id first{};
  for (size_t i = 0; i < values.size(); ++i) {
    std::thread::id ran{};
    worker.Start([&values, &ran, i] {
      values[i] += static_cast<int>(i) + 1;
      ran = std::this_thread::get_id();
    });
    if (i % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));  // owner busy
    worker.Wait();
    EXPECT_NE(ran, owner);
    if (i == 0) first = ran;
    EXPECT_EQ(ran, first);
  }
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], static_cast<int>(i) + 1);
}

// Wait returns only once a slow task has finished.
TEST(TaskThread, WaitBlocksUntilTheTaskReturns) {
  TaskThread worker;
  bool done = false;
  worker.Start([&done] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    done = true;
  });
  worker.Wait();
  EXPECT_TRUE(done);
}

TEST(TaskThread, DestroysCleanlyWithoutTasks) {
  { TaskThread idle; }
  TaskThread used;
  used.Start([] {});
  used.Wait();
  SUCCEED();
}

}  // namespace
}  // namespace deepinfer
