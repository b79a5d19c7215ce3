// UcxRpcServer / UcxRpcClient over real UCX on loopback (UCX_TLS=tcp,self unless the
// environment says otherwise: ucx_rpc.h), in one process and across two; no mocks.
#include "dist/ucx_rpc.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace deepinfer::dist {
namespace {

using Clock = std::chrono::steady_clock;

// The project's UCX settings on one machine (ucx_rpc.h), before any context reads them.
const bool kUcxTestTls = [] { return setenv("UCX_TLS", "tcp,self", /*overwrite=*/0) == 0; }();

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<UcxRpcServer> StartUcxServer(UcxRpcServer::Handler handler) {
  auto server = UcxRpcServer::Start("127.0.0.1", 0, std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return std::move(server).value();
}

std::unique_ptr<UcxRpcClient> MakeUcxClient() {
  auto client = UcxRpcClient::Create();
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(client).value();
}

void UcxEcho(std::string request, std::function<void(std::string)> respond) {
  respond(std::move(request));
}

// FNV-1a over 8-byte words (a checksum that sees every byte and its position, fast enough for
// 64 MiB in a test).
uint64_t UcxChecksum(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  for (; i < bytes.size(); ++i) h = (h ^ static_cast<uint8_t>(bytes[i])) * 0x100000001b3ull;
  return h;
}

// n pseudo-random bytes (splitmix64 of the word index), different per seed.
std::string UcxPattern(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t z = (seed << 40) + i + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::memcpy(s.data() + i, &z, std::min<size_t>(8, n - i));
  }
  return s;
}

TEST(UcxRpc, EchoRoundTrip) {
  auto server = StartUcxServer(UcxEcho);
  auto client = MakeUcxClient();
  ASSERT_NE(server->port(), 0);
  EXPECT_EQ(server->address(), "127.0.0.1:" + std::to_string(server->port()));
  for (const std::string msg : {"hello", "", "a second message on the same endpoint"}) {
    auto reply = client->Call(server->address(), msg, 10);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_EQ(*reply, msg);
  }
}

TEST(UcxRpc, BadArgumentsAreErrors) {
  auto client = MakeUcxClient();
  EXPECT_EQ(client->Call("no-port", "x", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client->Call("127.0.0.1:0", "x", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client->Call("127.0.0.1:99999", "x", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client->Call("127.0.0.1:5000", "x", 0).status().code(), StatusCode::kInvalidArgument);
}

// 64 MiB each way (rendezvous both ways): the reply is the request's checksum followed by the
// request with every byte complemented, so both directions are checked byte for byte.
TEST(UcxRpc, LargeMessagesBothWays) {
  auto server = StartUcxServer([](std::string request, std::function<void(std::string)> respond) {
    const uint64_t sum = UcxChecksum(request);
    std::string reply(8 + request.size(), '\0');
    std::memcpy(reply.data(), &sum, 8);
    for (size_t i = 0; i < request.size(); ++i) reply[8 + i] = static_cast<char>(~request[i]);
    respond(std::move(reply));
  });
  auto client = MakeUcxClient();
  const std::string request = UcxPattern(64 << 20, 7);
  auto reply = client->Call(server->address(), request, 60);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->size(), 8 + request.size());
  uint64_t sum;
  std::memcpy(&sum, reply->data(), 8);
  EXPECT_EQ(sum, UcxChecksum(request));
  std::string expected(request.size(), '\0');
  for (size_t i = 0; i < request.size(); ++i) expected[i] = static_cast<char>(~request[i]);
  EXPECT_TRUE(std::string_view(*reply).substr(8) == expected);
}

// The contract's size: 256 MiB one way, its checksum back.
TEST(UcxRpc, Request256MiB) {
  auto server = StartUcxServer([](std::string request, std::function<void(std::string)> respond) {
    respond(std::to_string(request.size()) + ":" + std::to_string(UcxChecksum(request)));
  });
  auto client = MakeUcxClient();
  const std::string request = UcxPattern(size_t{256} << 20, 11);
  auto reply = client->Call(server->address(), request, 60);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(*reply, std::to_string(request.size()) + ":" + std::to_string(UcxChecksum(request)));
}

TEST(UcxRpc, ConcurrentCallersShareOneClient) {
  auto server = StartUcxServer(UcxEcho);
  auto client = MakeUcxClient();
  constexpr int kThreads = 6;
  constexpr int kCalls = 20;
  std::vector<std::thread> threads;
  std::vector<int> good(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCalls; ++c) {
        // Small (eager) and 300 KiB (rendezvous) messages interleaved.
        const size_t n = (c % 3 == 0) ? (300 << 10) : static_cast<size_t>(16 + c);
        const std::string request = UcxPattern(n, static_cast<uint64_t>(t * 1000 + c));
        auto reply = client->Call(server->address(), request, 10);
        if (reply.ok() && *reply == request) ++good[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(good[t], kCalls) << "thread " << t;
}

// The handler hands `respond` to a worker thread, which answers later and out of order.
TEST(UcxRpc, RespondLaterFromAnotherThread) {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<std::string, std::function<void(std::string)>>> queue;
  bool done = false;
  std::thread worker([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done || queue.size() >= 2; });  // both calls in, then answer
    for (;;) {
      cv.wait(lock, [&] { return done || !queue.empty(); });
      if (queue.empty()) return;
      auto [request, respond] = std::move(queue.back());  // newest first
      queue.pop_back();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      respond("later:" + request);
      lock.lock();
    }
  });
  auto server = StartUcxServer([&](std::string request, std::function<void(std::string)> respond) {
    std::lock_guard<std::mutex> lock(mu);
    queue.emplace_back(std::move(request), std::move(respond));
    cv.notify_one();
  });
  auto client = MakeUcxClient();
  std::string a_reply, b_reply;
  std::thread a([&] { a_reply = client->Call(server->address(), "a", 10).value(); });
  std::thread b([&] { b_reply = client->Call(server->address(), "b", 10).value(); });
  a.join();
  b.join();
  EXPECT_EQ(a_reply, "later:a");
  EXPECT_EQ(b_reply, "later:b");
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_one();
  }
  worker.join();
}

// A server that dies: a call waiting on it fails at once, the next call to that address fails
// fast (nothing listens), and a new server on another port works with the same client.
TEST(UcxRpc, ServerDestroyedThenAnotherServer) {
  auto client = MakeUcxClient();
  std::mutex mu;
  std::vector<std::function<void(std::string)>> unanswered;  // kept past the server's end
  auto server = StartUcxServer([&](std::string request, std::function<void(std::string)> respond) {
    if (request == "hold") {
      std::lock_guard<std::mutex> lock(mu);
      unanswered.push_back(std::move(respond));
      return;
    }
    respond(std::move(request));
  });
  const std::string old_address = server->address();
  ASSERT_TRUE(client->Call(old_address, "ping", 10).ok());

  StatusOr<std::string> held = Internal("not run");
  double held_s = 0;
  std::thread holder([&] {
    const auto start = Clock::now();
    held = client->Call(old_address, "hold", 8);
    held_s = SecondsSince(start);
  });
  for (;;) {  // until the server holds the call
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!unanswered.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  server.reset();
  holder.join();
  EXPECT_FALSE(held.ok());
  EXPECT_NE(held.status().message().find(old_address), std::string::npos)
      << held.status().ToString();
  EXPECT_LT(held_s, 4) << held.status().ToString();
  unanswered.front()("too late");  // dropped, not a crash

  const auto start = Clock::now();
  auto next = client->Call(old_address, "ping", 5);
  EXPECT_FALSE(next.ok());
  EXPECT_LT(SecondsSince(start), 4) << next.status().ToString();
  EXPECT_NE(next.status().message().find(old_address), std::string::npos)
      << next.status().ToString();

  auto other = StartUcxServer(UcxEcho);
  ASSERT_NE(other->address(), old_address);
  auto reply = client->Call(other->address(), "again", 10);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(*reply, "again");
}

TEST(UcxRpc, NothingListensIsAnErrorNamingTheAddress) {
  uint16_t port = 0;
  {
    auto server = StartUcxServer(UcxEcho);  // take a free port, then let it go
    port = server->port();
  }
  auto client = MakeUcxClient();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  const auto start = Clock::now();
  auto reply = client->Call(address, "anyone?", 5);
  ASSERT_FALSE(reply.ok());
  EXPECT_LT(SecondsSince(start), 4);
  EXPECT_EQ(reply.status().code(), StatusCode::kInternal);
  EXPECT_EQ(reply.status().message().rfind("ucx: " + address + ": ", 0), 0u)
      << reply.status().ToString();
}

TEST(UcxRpc, TimeoutIsRespected) {
  std::mutex mu;
  std::vector<std::function<void(std::string)>> never;
  auto server = StartUcxServer([&](std::string, std::function<void(std::string)> respond) {
    std::lock_guard<std::mutex> lock(mu);
    never.push_back(std::move(respond));
  });
  auto client = MakeUcxClient();
  const auto start = Clock::now();
  auto reply = client->Call(server->address(), "silence", 0.5);
  const double took = SecondsSince(start);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(reply.status().message().find("deadline exceeded"), std::string::npos);
  EXPECT_GE(took, 0.49);
  EXPECT_LT(took, 1.5);
  // The client still works after a timed-out call, and the late reply is discarded.
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(never.size(), 1u);
    never.front()("late");
  }
  auto echo = StartUcxServer(UcxEcho);
  EXPECT_EQ(client->Call(echo->address(), "after", 10).value(), "after");
}

// A server in another process that is killed (SIGKILL, no goodbye) while it holds a call: the
// call fails at once, not at its timeout. The test binary runs itself as the peer, with
// DEEPINFER_UCX_PEER=1 and this test alone selected.
TEST(UcxRpc, PeerProcessKilledFailsCallInFlight) {
  if (std::getenv("DEEPINFER_UCX_PEER") != nullptr) {
    std::mutex mu;
    std::vector<std::function<void(std::string)>> held;
    auto server =
        StartUcxServer([&](std::string request, std::function<void(std::string)> respond) {
          std::lock_guard<std::mutex> lock(mu);
          if (request == "hold") {
            held.push_back(std::move(respond));
          } else {
            respond(std::move(request));
          }
        });
    std::printf("\nucx-peer-port=%u\n", static_cast<unsigned>(server->port()));
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(30));  // until the parent kills it
    return;
  }
  char exe[4096];
  const ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(exe_len, 0);
  exe[exe_len] = '\0';
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string filter = "--gtest_filter=UcxRpc.PeerProcessKilledFailsCallInFlight";
  char* argv[] = {exe, filter.data(), nullptr};
  std::vector<std::string> env_text = {"DEEPINFER_UCX_PEER=1"};
  for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, exe, &actions, nullptr, argv, envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);

  // The peer's port, from its stdout (10 s at most).
  std::string text;
  size_t mark = std::string::npos;
  const auto start = Clock::now();
  while ((mark = text.find("ucx-peer-port=")) == std::string::npos ||
         text.find('\n', mark) == std::string::npos) {
    pollfd fd{out[0], POLLIN, 0};
    if (SecondsSince(start) > 10 || poll(&fd, 1, 100) < 0) break;
    char buf[256];
    const ssize_t n = (fd.revents & (POLLIN | POLLHUP)) != 0 ? read(out[0], buf, sizeof(buf)) : 0;
    if (n > 0) text.append(buf, static_cast<size_t>(n));
    if ((fd.revents & POLLHUP) != 0 && n <= 0) break;
  }
  close(out[0]);
  ASSERT_NE(mark, std::string::npos) << "the peer printed no port:\n" << text;
  const std::string address =
      "127.0.0.1:" + text.substr(mark + 14, text.find('\n', mark) - mark - 14);

  auto client = MakeUcxClient();
  auto ping = client->Call(address, "ping", 10);
  EXPECT_TRUE(ping.ok() && *ping == "ping") << ping.status().ToString();
  StatusOr<std::string> held = Internal("not run");
  double held_s = 0;
  std::thread holder([&] {
    const auto t0 = Clock::now();
    held = client->Call(address, "hold", 10);
    held_s = SecondsSince(t0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the peer holds it by now
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  holder.join();
  ASSERT_FALSE(held.ok());
  EXPECT_EQ(held.status().code(), StatusCode::kInternal) << held.status().ToString();
  EXPECT_EQ(held.status().message().rfind("ucx: " + address + ": ", 0), 0u)
      << held.status().ToString();
  EXPECT_LT(held_s, 5) << held.status().ToString();
  const auto t1 = Clock::now();
  EXPECT_FALSE(client->Call(address, "ping", 10).ok());
  EXPECT_LT(SecondsSince(t1), 5);
}

}  // namespace
}  // namespace deepinfer::dist
