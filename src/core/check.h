// CHECK(cond) << context: abort with a message when an internal invariant is broken.
// For programmer errors only; bad input from users or files returns a Status instead.
#pragma once

#include <sstream>

namespace deepinfer::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets `CHECK(x) << a << b` parse as a statement with a void value.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace deepinfer::internal

#define CHECK(cond)                           \
  (cond) ? (void)0                            \
         : ::deepinfer::internal::Voidify() & \
               ::deepinfer::internal::CheckFailure(__FILE__, __LINE__, #cond)
#define CHECK_EQ(a, b) CHECK((a) == (b)) << #a " = " << (a) << ", " #b " = " << (b) << " "
#define CHECK_LE(a, b) CHECK((a) <= (b)) << #a " = " << (a) << ", " #b " = " << (b) << " "
#define CHECK_LT(a, b) CHECK((a) < (b)) << #a " = " << (a) << ", " #b " = " << (b) << " "
#define CHECK_GE(a, b) CHECK((a) >= (b)) << #a " = " << (a) << ", " #b " = " << (b) << " "
#define CHECK_GT(a, b) CHECK((a) > (b)) << #a " = " << (a) << ", " #b " = " << (b) << " "
// Checks of hot-path invariants: compiled in debug builds only.
#ifdef NDEBUG
#define DCHECK(cond) \
  while (false) CHECK(cond)
#else
#define DCHECK(cond) CHECK(cond)
#endif
#define DCHECK_GE(a, b) DCHECK((a) >= (b))
#define DCHECK_LT(a, b) DCHECK((a) < (b))
