// The one include of Boost.Asio and Boost.Beast for the server layer.
//
// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>, and its
// configuration detects C++20 coroutines under GCC only: under clang (libFuzzer builds,
// clang-tidy) with libstdc++ they are switched on here.
#pragma once

#include <utility>  // before asio: see above

#if defined(__clang__) && !defined(BOOST_ASIO_HAS_CO_AWAIT)
#define BOOST_ASIO_HAS_CO_AWAIT 1
#define BOOST_ASIO_HAS_STD_COROUTINE 1
#endif

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace deepinfer::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

}  // namespace deepinfer::server
