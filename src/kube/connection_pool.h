// HTTP/1.1 over TLS to one server, on the calling thread: a pool of keep-alive connections, each with
// its own Asio io_context that only the thread holding the connection runs.
//
// The transport sends its requests (GET, POST, PATCH, PUT, DELETE) and its watch streams through this
// pool. Neither costs a thread hand-off: resolve, connect, handshake, write and read run as Asio
// operations on the caller's own io_context, so the thread that asked is the thread that waits in epoll
// and parses the answer. (cpprestsdk's task chains crossed threads three or four times per request and
// twice per chunk of a watch; that was 44 % of the operator's samples in a perf profile of an update
// storm. Its watch connections also loaded the system trust store, 140 certificates, on every connect.)
//
// Connections are kept while the server keeps them alive. Before reuse an idle connection is checked for
// a pending close from the server (a readable socket), and one idle for longer than `max_idle_time` is
// dropped, so a request rarely meets a connection the server has already closed; when a GET or HEAD does
// (the connection fails before any byte of the answer arrived), it is sent once more on a new connection.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace myop::kube {

struct PoolEndpoint {
  std::string host;         // name or IP literal to connect to ("127.0.0.1", "api.example.com", "::1")
  std::string port;         // "6443"
  std::string path_prefix;  // the server URL's path ("" or "/k8s/clusters/c-1"), put before every target
  std::string host_header;  // the Host header
  std::string tls_name;     // SNI (when not an IP literal) and the name the certificate must carry
};

struct PoolRequest {
  std::string_view method;
  std::string_view target;  // path and encoded query
  const std::vector<std::pair<std::string, std::string>>* headers = nullptr;
  std::string_view body;
  std::string_view content_type;  // set with a body
  // send(): a longer answer body fails the request (PoolFailure::body_too_large) without being read
  // whole. The transport always sets one (Request::maximum_response_bytes). stream() has no limit.
  std::uint64_t maximum_body_bytes = std::numeric_limits<std::uint64_t>::max();
};

struct PoolAnswer {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string retry_after;  // the raw header, empty when absent
};

// Where a request failed, for the caller's error message and retry decision.
struct PoolFailure {
  enum class Stage {
    Resolve,    // the name did not resolve; nothing sent
    Connect,    // no TCP connection; nothing sent
    Handshake,  // TLS failed (often verification); nothing sent
    Write,      // the request could not be written completely; the server acts only on a whole request
    Read,       // the request was sent, the answer did not arrive whole; it may have been acted on
  };
  Stage stage = Stage::Read;
  boost::system::error_code code;
  bool timed_out = false;  // the deadline (for a stream's body: the idle timeout) passed during this stage
  bool cancelled = false;  // the stop token was triggered
  bool streaming = false;  // a stream failed after its 2xx header: nothing to retry
  bool body_too_large = false;  // the answer's body is longer than the request's maximum_body_bytes
};

// How a stream ended when no failure ended it.
struct PoolStreamEnd {
  enum class Kind {
    ServerClosed,      // the server ended the body
    StoppedByHandler,  // the chunk handler returned false
    Refused,           // a non-2xx answer: `answer` holds it, body included
  };
  Kind kind = Kind::ServerClosed;
  PoolAnswer answer;  // status and headers of the answer; the body only when Refused
};

// Receives a stream's body as it arrives (chunked encoding removed), in pieces of any size. Return false
// to stop reading.
using PoolChunkHandler = std::function<bool(std::string_view chunk)>;

struct PoolOptions {
  std::size_t max_idle = 64;                                     // idle connections kept
  std::chrono::seconds max_idle_time{std::chrono::seconds(50)};  // below the API server's idle timeout
};

class ConnectionPool {
 public:
  ConnectionPool(PoolEndpoint endpoint, std::shared_ptr<boost::asio::ssl::context> tls,
                 PoolOptions options = {});
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Sends one request and reads its whole answer on the calling thread, within `deadline`. Thread-safe:
  // each caller works on a connection of its own.
  std::variant<PoolAnswer, PoolFailure> send(const PoolRequest& request, const std::stop_token& stop,
                                             std::chrono::steady_clock::time_point deadline);

  // Opens `request` on a connection of its own and hands the body to `on_chunk` as it arrives, on the
  // calling thread; `on_header` sees the status and headers as soon as they are known. The header must arrive
  // before `open_deadline`; after it, no byte for `idle_timeout` ends the stream as timed out. The connection
  // is closed at the end. Exceptions of the handlers propagate.
  std::variant<PoolStreamEnd, PoolFailure> stream(
      const PoolRequest& request, const PoolChunkHandler& on_chunk,
      const std::function<void(const PoolAnswer& header)>& on_header, const std::stop_token& stop,
      std::chrono::steady_clock::time_point open_deadline, std::chrono::milliseconds idle_timeout);

  // Connections opened since the pool was made (a test sees reuse in it).
  std::size_t connections_opened() const;
  // Connections kept for reuse now.
  std::size_t idle_connections() const;

 private:
  struct Connection;
  struct ExchangeState {
    bool answer_started = false;  // a byte of the answer arrived
    bool keep_alive = false;      // a whole answer, and the server keeps the connection open
  };

  std::unique_ptr<Connection> take_idle();
  void give_back(std::unique_ptr<Connection> connection);
  std::variant<PoolAnswer, PoolFailure> exchange(Connection& connection, const PoolRequest& request,
                                                 const std::stop_token& stop,
                                                 std::chrono::steady_clock::time_point deadline,
                                                 ExchangeState& state);
  std::optional<PoolFailure> write_request(Connection& connection, const PoolRequest& request,
                                           const std::stop_token& stop,
                                           std::chrono::steady_clock::time_point deadline);
  std::unique_ptr<Connection> new_connection();
  boost::system::error_code resolve(Connection& connection, const std::stop_token& stop,
                                    std::chrono::steady_clock::time_point deadline,
                                    std::vector<boost::asio::ip::tcp::endpoint>& endpoints);
  std::optional<PoolFailure> open(Connection& connection, const std::stop_token& stop,
                                  std::chrono::steady_clock::time_point deadline);

  const PoolEndpoint endpoint_;
  const std::shared_ptr<boost::asio::ssl::context> tls_;
  const PoolOptions options_;
  std::optional<boost::asio::ip::tcp::endpoint> literal_address_;  // the host is an IP address: no resolver
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;  // most recently used last
  std::size_t opened_ = 0;
};

}  // namespace myop::kube
