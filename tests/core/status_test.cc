#include "core/status.h"

#include <gtest/gtest.h>

namespace deepinfer {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  DI_ASSIGN_OR_RETURN(int h, Half(x));
  DI_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Status, PropagatesFirstError) {
  EXPECT_EQ(Quarter(8).value(), 2);
  const StatusOr<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().ToString(), "invalid argument: odd: 3");
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  const StatusOr<int> r = Half(3);
  EXPECT_DEATH((void)r.value(), "odd: 3");
}

}  // namespace
}  // namespace deepinfer
