#pragma once
// What one HTTP server (runtime/http/http_server.h) lets its clients hold, and the decisions on a request
// made from its header alone, without I/O: how many bytes of body to read and to reserve, or why not.
// The server applies them; test/unit/runtime/http/http_server_limits_test.cpp tests the decisions,
// http_server_test.cpp the server that applies them.
//
// Memory a client can make a server hold is bounded by these numbers: at most max_connections
// connections (max_connections_per_client of them from one address), each with at most max_header_bytes of
// header being parsed; request bodies are read only into a reservation of the server's budget
// (max_buffered_bytes), taken when the header is read (the Content-Length, or the path's whole limit for a
// chunked body) and given back once the response is written. A request that does not fit is answered 503 with
// Retry-After and its body is never read.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>

namespace myop::runtime {

inline constexpr std::size_t kKiB = 1024;
inline constexpr std::size_t kMiB = 1024 * kKiB;

struct HttpServerLimits {
  // Connections open at once. At the cap the server stops accepting (new connections wait in the
  // kernel's listen backlog, costing the process nothing) until one closes: a busy one within its
  // request deadline; while a new one waits, a kept-alive one idle for HttpTimeouts::idle_at_capacity
  // is closed for room.
  std::size_t max_connections = 64;
  // Connections open at once from one client address: beyond it a new connection from that address
  // is closed at once, so that one client (a pod flooding the port) cannot take every connection from
  // the others (the kubelet's probes, the API server's conversions).
  std::size_t max_connections_per_client = 16;
  // Request bodies held at once, read or being read (the budget).
  std::size_t max_buffered_bytes = 1 * kMiB;
  // The request line and headers of one request (431 beyond).
  std::size_t max_header_bytes = 16 * kKiB;
  // The body of a GET or HEAD, and of a request to a path that has no handler for its method (413
  // beyond); such a body is read and dropped.
  std::size_t max_get_body = 4 * kKiB;
  // The body of a POST path registered without a limit of its own (413 beyond).
  std::size_t max_post_body = 8 * kMiB;
  // Threads serving the connections: a slow handler (an authorization review, a large conversion)
  // holds one of them, never the others.
  unsigned threads = 2;
};

// Why a server refused or cut a request; the label value of myoperator_http_requests_rejected_total.
enum class Rejection {
  ConnectionLimit,        // a kept-alive idle connection closed to make room at the connection cap
  ClientConnectionLimit,  // a new connection closed at once: its client holds its share already
  BufferBudget,           // 503: the body does not fit into what is left of the budget
  BodyTooLarge,           // 413
  HeaderTooLarge,         // 431
  Deadline,               // the request (or a new connection's first one) was not read within its deadline
};
inline constexpr Rejection kRejections[] = {Rejection::ConnectionLimit, Rejection::ClientConnectionLimit,
                                            Rejection::BufferBudget,    Rejection::BodyTooLarge,
                                            Rejection::HeaderTooLarge,  Rejection::Deadline};
std::string_view rejection_label(Rejection rejection);

// What to do with a request's body once its header is read.
struct BodyPlan {
  bool too_large = false;   // answer 413 without reading it
  std::size_t reserve = 0;  // bytes of the budget to hold while the body is read and handled
};
// `content_length`: the header's, if any; `chunked`: Transfer-Encoding: chunked; `limit`: the path's.
// A chunked body reserves the whole limit: its size is known only once it is read.
BodyPlan plan_body(std::optional<std::uint64_t> content_length, bool chunked, std::size_t limit);

// The budget of buffered request bytes of one server. Thread-safe.
class RequestBudget {
 public:
  explicit RequestBudget(std::size_t capacity) : capacity_(capacity) {}
  RequestBudget(const RequestBudget&) = delete;
  RequestBudget& operator=(const RequestBudget&) = delete;

  // Bytes held until the reservation is destroyed (or released).
  class Reservation {
   public:
    Reservation() = default;
    ~Reservation() { release(); }
    Reservation(Reservation&& other) noexcept;
    Reservation& operator=(Reservation&& other) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    void release();
    std::size_t bytes() const { return bytes_; }

   private:
    friend class RequestBudget;
    Reservation(RequestBudget* budget, std::size_t bytes) : budget_(budget), bytes_(bytes) {}
    RequestBudget* budget_ = nullptr;
    std::size_t bytes_ = 0;
  };

  // nullopt when `bytes` do not fit into what is left now. Zero bytes always fit.
  std::optional<Reservation> reserve(std::size_t bytes);
  std::size_t in_use() const;
  std::size_t capacity() const { return capacity_; }

 private:
  void give_back(std::size_t bytes);
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::size_t in_use_ = 0;
};

}  // namespace myop::runtime
