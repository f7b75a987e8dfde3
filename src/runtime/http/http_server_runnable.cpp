#include "runtime/http/http_server_runnable.h"

namespace myop::runtime {

HttpServerRunnable::HttpServerRunnable(HttpServer& server, std::string bind_address, Prepare prepare)
    : server_(server), bind_address_(std::move(bind_address)), prepare_(std::move(prepare)) {}

void HttpServerRunnable::start() {
  if (prepare_) {
    if (auto prepared = prepare_(); !prepared) return failed(prepared.error());
  }
  if (auto started = server_.start(bind_address_); !started) return failed(started.error());
  std::function<void()> synced;
  {
    std::lock_guard lock(mutex_);
    listening_ = true;
    synced = std::move(synced_);
  }
  if (synced) synced();
}

void HttpServerRunnable::stop() { server_.stop(); }

void HttpServerRunnable::on_synced(std::function<void()> callback) {
  {
    std::lock_guard lock(mutex_);
    if (!listening_) {
      synced_ = std::move(callback);
      return;
    }
  }
  callback();
}

void HttpServerRunnable::on_failed(const std::function<void(std::string)>& callback) {
  std::lock_guard lock(mutex_);
  failed_ = callback;
}

void HttpServerRunnable::failed(const std::string& error) {
  std::function<void(std::string)> callback;
  {
    std::lock_guard lock(mutex_);
    callback = failed_;
  }
  if (callback) callback(error);
}

}  // namespace myop::runtime
