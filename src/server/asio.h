// The one include of Boost.Asio and Boost.Beast for the server layer.
//
// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>, and its
// configuration does not detect C++20 coroutines under clang with libstdc++ (the top
// CMakeLists.txt defines BOOST_ASIO_HAS_CO_AWAIT / BOOST_ASIO_HAS_STD_COROUTINE for clang).
#pragma once

#include <utility>  // before asio: see above

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace deepinfer::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

}  // namespace deepinfer::server
