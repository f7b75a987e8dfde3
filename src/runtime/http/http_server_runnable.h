#pragma once
// An HTTP server as the manager runs it, in a group of runtime/manager/runnable_group.h: start() runs the
// server's preparation (its certificate, say) and binds; either failing fails the runnable, with the
// reason. It is synced once it listens, so what starts after it can count on it serving.
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/http/http_server.h"
#include "runtime/manager/runnable.h"

namespace myop::runtime {

class HttpServerRunnable final : public Runnable {
 public:
  // An error text, when the server cannot be prepared.
  using Prepare = std::function<base::Result<void, std::string>()>;

  // `server` must outlive this runnable.
  HttpServerRunnable(HttpServer& server, std::string bind_address, Prepare prepare = {});

  // server-<server name>, as its health check.
  std::string name() const override { return "server-" + server_.name(); }
  void start() override;
  void stop() override;
  bool has_synced() const override { return listening_; }
  void on_synced(std::function<void()> callback) override;
  void on_failed(const std::function<void(std::string)>& callback) override;

 private:
  void failed(const std::string& error);

  HttpServer& server_;
  const std::string bind_address_;
  Prepare prepare_;
  std::mutex mutex_;
  std::function<void()> synced_;
  std::function<void(std::string)> failed_;
  std::atomic<bool> listening_{false};
};

}  // namespace myop::runtime
