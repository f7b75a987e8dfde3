#pragma once
// Where an HTTPS server takes the TLS context for each new connection. A provider may hand out a
// new context after a certificate rotation; connections already open keep the one they started
// with (each holds a reference).
#include <memory>
#include <utility>

namespace boost::asio::ssl {
class context;
}

namespace myop::runtime {

class TlsContextProvider {
 public:
  virtual ~TlsContextProvider() = default;
  // Never null once the server is started.
  virtual std::shared_ptr<boost::asio::ssl::context> tls_context() = 0;
};

// One context for the life of the server (e.g. a self-signed certificate made at start).
class FixedTlsContextProvider final : public TlsContextProvider {
 public:
  explicit FixedTlsContextProvider(std::shared_ptr<boost::asio::ssl::context> context)
      : context_(std::move(context)) {}
  std::shared_ptr<boost::asio::ssl::context> tls_context() override { return context_; }

 private:
  std::shared_ptr<boost::asio::ssl::context> context_;
};

}  // namespace myop::runtime
