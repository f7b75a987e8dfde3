#pragma once
// What the acceptor and the connections of one HTTP server share (runtime/http/http_server.h): the
// routes, the limits and the budget, the count of open connections (in all and by client address)
// that the connection cap and the per-client share are decided on, and the connections waiting idle
// that may be closed to make room. Internal to the server: http_server.cpp and
// http_server_session.h use it.
#include <boost/asio/ip/address.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/http/http_server.h"
#include "runtime/http/http_server_limits.h"
#include "runtime/http/http_server_metrics.h"

namespace myop::runtime::http_server_detail {

struct PostRoute {
  HttpHandler handler;
  std::size_t max_body = 0;
};

// An exact path, else the longest registered prefix that ends in '/'.
template <typename Routes>
typename Routes::const_iterator find_route(const Routes& routes, const std::string& path) {
  auto found = routes.find(path);
  if (found != routes.end()) return found;
  for (auto it = routes.begin(); it != routes.end(); ++it) {
    const std::string& pattern = it->first;
    if (!pattern.empty() && pattern.back() == '/' && path.starts_with(pattern) &&
        (found == routes.end() || pattern.size() > found->first.size()))
      found = it;
  }
  return found;
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  virtual ~Connection() = default;
  // Closes the connection if it is still waiting for a request. Any thread.
  virtual void close_if_idle() = 0;
};

// What the acceptor and the connections of one server share. Each holds it, so it outlives them all.
struct ServerState {
  std::string name;
  std::map<std::string, HttpHandler> get_routes;  // GET and HEAD
  std::map<std::string, PostRoute> post_routes;
  HttpServerLimits limits;
  HttpTimeouts timeouts;
  std::shared_ptr<HttpServerMetrics> metrics;  // null: not exported
  RequestBudget budget;

  explicit ServerState(std::size_t budget_bytes) : budget(budget_bytes) {}

  void rejected(Rejection reason) {
    if (metrics) metrics->rejected(reason);
  }
  void answered(unsigned status) {
    if (metrics) metrics->answered(status);
  }
  void exception() {
    if (metrics) metrics->exception();
  }
  void buffered_changed() {
    if (metrics) metrics->set_buffered_bytes(budget.in_use());
  }

  // The connection cap. False: at the cap, accepting stops until connection_closed() resumes it.
  bool may_accept() {
    std::lock_guard lock(mutex);
    if (open < limits.max_connections) return true;
    accepting_paused = true;
    return false;
  }
  // A new connection from `client`: false (and not counted) when the client holds its share already.
  bool connection_opened(const boost::asio::ip::address& client) {
    std::lock_guard lock(mutex);
    auto& from_client = per_client[client];
    if (from_client >= limits.max_connections_per_client) {
      if (from_client == 0) per_client.erase(client);
      return false;
    }
    ++from_client;
    ++open;
    if (metrics) metrics->set_connections(open);
    return true;
  }
  void connection_closed(const boost::asio::ip::address& client) {
    std::function<void()> resume;
    {
      std::lock_guard lock(mutex);
      if (auto found = per_client.find(client); found != per_client.end() && --found->second == 0)
        per_client.erase(found);
      --open;
      if (metrics) metrics->set_connections(open);
      if (accepting_paused && !stopping && open < limits.max_connections) {
        accepting_paused = false;
        resume = resume_accepting;
      }
    }
    if (resume) resume();
  }

  // A kept-alive connection waits for its next request: a ticket to give back when it comes.
  std::uint64_t became_idle(std::weak_ptr<Connection> connection) {
    std::lock_guard lock(mutex);
    const std::uint64_t ticket = next_ticket++;
    idle.emplace(ticket, IdleConnection{std::move(connection), std::chrono::steady_clock::now()});
    return ticket;
  }
  void no_longer_idle(std::uint64_t ticket) {
    std::lock_guard lock(mutex);
    idle.erase(ticket);
  }
  // Since when the connection idle the longest has waited; nullopt when none is idle.
  std::optional<std::chrono::steady_clock::time_point> longest_idle_since() {
    std::lock_guard lock(mutex);
    if (idle.empty()) return std::nullopt;
    return idle.begin()->second.since;
  }
  // Closes the connection idle the longest, to make room at the cap, unless one closed for room is
  // still closing (each makes room for one newcomer).
  void close_longest_idle() {
    std::weak_ptr<Connection> longest;
    {
      std::lock_guard lock(mutex);
      if (idle.empty() || closing_for_room) return;
      longest = std::move(idle.begin()->second.connection);
      idle.erase(idle.begin());
      closing_for_room = true;
    }
    if (auto connection = longest.lock()) {
      rejected(Rejection::ConnectionLimit);
      connection->close_if_idle();  // calls closed_for_room() once it has closed, or declined
    } else {
      closed_for_room();
    }
  }
  void closed_for_room() {
    std::lock_guard lock(mutex);
    closing_for_room = false;
  }
  bool paused() {
    std::lock_guard lock(mutex);
    return accepting_paused && !stopping;
  }
  void stop() {
    std::lock_guard lock(mutex);
    stopping = true;
    resume_accepting = nullptr;
  }

  std::mutex mutex;
  std::size_t open = 0;
  std::map<boost::asio::ip::address, std::size_t> per_client;  // open connections by client address
  bool accepting_paused = false;
  bool closing_for_room = false;
  bool stopping = false;
  std::function<void()> resume_accepting;
  struct IdleConnection {
    std::weak_ptr<Connection> connection;
    std::chrono::steady_clock::time_point since;
  };
  std::uint64_t next_ticket = 0;
  std::map<std::uint64_t, IdleConnection> idle;  // by when they began to wait
};

// One connection, as drawn in http_server.h. `Stream` is beast::tcp_stream (HTTP) or TlsStream
// (HTTPS). Every step runs on the connection's strand.
}  // namespace myop::runtime::http_server_detail
