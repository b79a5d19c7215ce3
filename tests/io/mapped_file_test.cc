#include "io/mapped_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "test_files.h"

namespace deepinfer::io {
namespace {

using testing::TempDir;
using testing::WriteFile;

TEST(MappedFile, MapsContents) {
  TempDir dir;
  WriteFile(dir.File("a.bin"), std::string("hello\0world", 11));
  StatusOr<MappedFile> m = MappedFile::Open(dir.File("a.bin"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->size(), 11u);
  EXPECT_EQ(std::memcmp(m->data(), "hello\0world", 11), 0);
  EXPECT_EQ(m->path(), dir.File("a.bin"));
  m->AdviseWillNeed();
}

TEST(MappedFile, MoveTransfersTheMapping) {
  TempDir dir;
  WriteFile(dir.File("a.bin"), "abc");
  StatusOr<MappedFile> m = MappedFile::Open(dir.File("a.bin"));
  ASSERT_TRUE(m.ok());
  const std::byte* p = m->data();
  MappedFile a = std::move(m).value();
  MappedFile b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(static_cast<char>(b.data()[2]), 'c');
  MappedFile c;
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 3u);
}

void ExpectError(const std::string& path, StatusCode code, const std::string& what) {
  StatusOr<MappedFile> m = MappedFile::Open(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), code) << m.status().ToString();
  EXPECT_NE(m.status().message().find(path), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find(what), std::string::npos) << m.status().message();
}

TEST(MappedFile, Errors) {
  TempDir dir;
  ExpectError(dir.File("missing.bin"), StatusCode::kNotFound, "No such file");
  ExpectError(dir.path(), StatusCode::kInvalidArgument, "is a directory");
  WriteFile(dir.File("empty.bin"), "");
  ExpectError(dir.File("empty.bin"), StatusCode::kDataLoss, "empty");
  ExpectError("/dev/null", StatusCode::kInvalidArgument, "not a regular file");
}

TEST(MappedFile, PermissionDenied) {
  TempDir dir;
  WriteFile(dir.File("secret.bin"), "x");
  ASSERT_EQ(::chmod(dir.File("secret.bin").c_str(), 0), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);  // the child must be able to reach the file
  if (::geteuid() != 0) {
    ExpectError(dir.File("secret.bin"), StatusCode::kInvalidArgument, "Permission denied");
    return;
  }
  // Root ignores file permissions (CI runs as root): check in a child that drops to `nobody`.
  EXPECT_EXIT(
      {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) std::_Exit(2);
        auto file = MappedFile::Open(dir.File("secret.bin"));
        const bool ok = !file.ok() &&
                        file.status().message().find("Permission denied") != std::string::npos &&
                        file.status().message().find("secret.bin") != std::string::npos;
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace deepinfer::io
