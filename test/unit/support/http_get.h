#pragma once
// A minimal blocking HTTP client for tests of the runtime's servers.
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cstdint>
#include <string>

namespace myop::runtime::testing {

struct HttpAnswer {
  unsigned status = 0;
  std::string content_type;
  std::string body;
};

inline HttpAnswer http_request(std::uint16_t port, const std::string& target,
                               boost::beast::http::verb verb = boost::beast::http::verb::get,
                               const std::string& authorization = "", const std::string& body = "",
                               const std::string& content_type = "") {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context context;
  boost::asio::ip::tcp::resolver resolver(context);
  beast::tcp_stream stream(context);
  stream.expires_after(std::chrono::seconds(30));
  stream.connect(resolver.resolve("127.0.0.1", std::to_string(port)));
  http::request<http::string_body> request{verb, target, 11};
  request.set(http::field::host, "127.0.0.1");
  if (!authorization.empty()) request.set(http::field::authorization, authorization);
  if (!content_type.empty()) request.set(http::field::content_type, content_type);
  if (!body.empty()) {
    request.body() = body;
    request.prepare_payload();
  }
  http::write(stream, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(stream, buffer, response);
  beast::error_code ignored;
  stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  return {response.result_int(), std::string(response[http::field::content_type]), response.body()};
}

}  // namespace myop::runtime::testing
