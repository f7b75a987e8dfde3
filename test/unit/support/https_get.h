#pragma once
// A minimal blocking HTTPS client for tests of the runtime's TLS servers: verifies the server
// against a given CA (PEM), or not at all, and reports the certificate it was served.
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <cstdint>
#include <string>

namespace myop::runtime::testing {

struct HttpsAnswer {
  bool connected = false;  // false: TCP or the TLS handshake failed (see error)
  std::string error;
  unsigned status = 0;
  std::string body;
  std::string served_serial;  // hex serial of the certificate the server sent
};

struct HttpsRequest {
  std::string authorization;
  std::string ca_pem;       // empty: no verification
  int max_tls_version = 0;  // e.g. TLS1_1_VERSION to offer only old protocols; 0: any
  std::string target = "/metrics";
};

inline HttpsAnswer https_request(std::uint16_t port, const HttpsRequest& options);

// GET /metrics; `ca_pem` empty: the server's certificate is not verified.
inline HttpsAnswer https_get(std::uint16_t port, const std::string& authorization = "",
                             const std::string& ca_pem = "", int max_tls_version = 0) {
  HttpsRequest request;
  request.authorization = authorization;
  request.ca_pem = ca_pem;
  request.max_tls_version = max_tls_version;
  return https_request(port, request);
}

inline HttpsAnswer https_request(std::uint16_t port, const HttpsRequest& options) {
  namespace asio = boost::asio;
  namespace beast = boost::beast;
  namespace http = beast::http;
  HttpsAnswer answer;
  asio::io_context io;
  asio::ssl::context context(asio::ssl::context::tls_client);
  // Allow the old protocols on the client side, so a refusal comes from the server.
  SSL_CTX_set_security_level(context.native_handle(), 0);
  SSL_CTX_set_min_proto_version(context.native_handle(), 0);
  if (options.max_tls_version)
    SSL_CTX_set_max_proto_version(context.native_handle(), options.max_tls_version);
  if (!options.ca_pem.empty()) {
    context.add_certificate_authority(asio::buffer(options.ca_pem));
    context.set_verify_mode(asio::ssl::verify_peer);
  } else {
    context.set_verify_mode(asio::ssl::verify_none);
  }
  beast::ssl_stream<beast::tcp_stream> stream(io, context);
  beast::error_code error;
  beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
  asio::ip::tcp::resolver resolver(io);
  beast::get_lowest_layer(stream).connect(resolver.resolve("127.0.0.1", std::to_string(port)), error);
  if (!error) stream.handshake(asio::ssl::stream_base::client, error);
  if (error) {
    answer.error = error.message();
    return answer;
  }
  answer.connected = true;
  if (X509* certificate = SSL_get_peer_certificate(stream.native_handle())) {
    if (BIGNUM* serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(certificate), nullptr)) {
      char* hex = BN_bn2hex(serial);
      answer.served_serial = hex;
      OPENSSL_free(hex);
      BN_free(serial);
    }
    X509_free(certificate);
  }
  http::request<http::string_body> request{http::verb::get, options.target, 11};
  request.set(http::field::host, "127.0.0.1");
  if (!options.authorization.empty()) request.set(http::field::authorization, options.authorization);
  http::write(stream, request, error);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  if (!error) http::read(stream, buffer, response, error);
  if (error) {
    answer.error = error.message();
    return answer;
  }
  answer.status = response.result_int();
  answer.body = response.body();
  stream.shutdown(error);
  return answer;
}

}  // namespace myop::runtime::testing
