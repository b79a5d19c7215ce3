#include <gtest/gtest.h>
#include "core/bf16.h"
TEST(Bf16, RoundTrip) { EXPECT_EQ(deepinfer::FloatToBf16(1.0f), 0x3F80); }
