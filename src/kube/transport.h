// HTTPS to the API server: TLS, authentication, rate limit, retries, deadlines, metrics, and a streaming
// read for watches.
//
// `Transport` is the narrow interface the REST client and the watch build on; tests substitute a fake.
// `make_https_transport` builds the real one on a connection pool (kube/connection_pool.h) that the calling
// thread drives itself: calls block the calling thread, and no other thread works for them.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "kube/config.h"
#include "kube/credentials.h"
#include "kube/errors.h"
#include "kube/json_parser.h"
#include "kube/request_metrics.h"
#include "kube/retry_policy.h"

namespace myop::kube {

using HeaderList = std::vector<std::pair<std::string, std::string>>;
using QueryParameters = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method = "GET";
  std::string path;       // "/api/v1/namespaces/a/configmaps", not encoded query
  QueryParameters query;  // values are percent-encoded by the transport
  std::string body;
  std::string content_type;  // "application/json", "application/merge-patch+json", ...
  // The Accept header; "" asks for JSON. The client asks for protobuf for built-in kinds (kube/protobuf.h).
  std::string accept;
  HeaderList headers;  // extra headers; Authorization and User-Agent are added by the transport
  // The whole request including retries must finish within this; zero = TransportOptions default.
  std::chrono::milliseconds timeout{0};
  // A longer answer body is not read: the request fails (Reason::Transport, permanent, not retried).
  // One object by default; the client's LIST asks for kMaximumListJsonBytes. Streams have no limit
  // (the watch parser bounds each line).
  std::size_t maximum_response_bytes = kMaximumObjectJsonBytes;
};

struct Response {
  int status_code = 0;
  std::string body;
  std::string content_type;
  // The Retry-After header of a 429 or 5xx the transport gave up retrying (API Priority and Fairness
  // answers 429 with it and a plain-text body), for the Error made of this response.
  std::optional<std::chrono::seconds> retry_after{};
};

// How a stream ended when it ended without an error.
enum class StreamEnd {
  ServerClosed,      // the server ended the body (a watch's timeoutSeconds passed, or the server closed)
  StoppedByHandler,  // the chunk handler returned false
};

// Receives the body of a stream as it arrives, in chunks of any size: a line may be split across chunks
// and one chunk may hold many lines. Return false to stop reading.
using ChunkHandler = std::function<bool(std::string_view chunk)>;

struct StreamOptions {
  // No byte for this long ends the stream with a Timeout error. For a watch that asked for bookmarks it
  // must exceed the bookmark interval (about a minute); one without bookmarks can be quiet until its
  // timeoutSeconds. The watcher sets its stall timeout here (kube/watch.h).
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(11)};
  // Called once a 2xx answer's header has arrived, before the first chunk, with its Content-Type: the
  // body's encoding (a watch that asked for protobuf may be answered in JSON). May be empty.
  std::function<void(std::string_view content_type)> on_open;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Sends one request and returns the response of any HTTP status (2xx or not): callers map non-2xx with
  // error_from_response. An Error means no usable answer: transport failure, deadline, cancellation, or
  // retries used up (the last 429/5xx is then returned as a Response, not an Error).
  virtual Result<Response> send(const Request& request, std::stop_token stop = {}) = 0;

  // Opens `request` (a GET such as ?watch=1) and hands the body to `on_chunk` as it arrives. Blocks until
  // the server ends the body, `on_chunk` returns false, `stop` is requested (returns Cancelled within a
  // second), the stream is idle for too long (Timeout), or the connection fails (Transport). A non-2xx
  // answer is returned as the Error parsed from its Status body. Retries only the opening of the stream.
  virtual Result<StreamEnd> stream(const Request& request, const ChunkHandler& on_chunk,
                                   std::stop_token stop = {}, const StreamOptions& options = {}) = 0;

  // "host:port" of the server, the `host` metric label.
  virtual const std::string& host() const = 0;

  // The clock its deadlines and retry waits run on (TransportOptions::clock); whoever waits between
  // requests on this transport (Client's polls) waits on it too. The real clock unless overridden.
  virtual const std::shared_ptr<const base::Clock>& clock() const { return base::system_clock(); }
};

struct TransportOptions {
  double qps = 0;  // client-side limit in requests per second; <= 0: none
  int burst = 100;
  std::string user_agent = "kube-client-cpp";  // the program sets its own, e.g. "my-operator/0.1.0"
  std::chrono::milliseconds default_timeout{std::chrono::seconds(30)};
  // At most this many requests (streams not counted) are in flight at once, each on a connection of its
  // own (kept afterwards, up to this many idle); the rest wait, within their deadline.
  int max_requests_in_flight = 64;
  RetrySettings retry{};
  std::shared_ptr<RequestMetricsObserver> metrics;  // may be null
  std::shared_ptr<CredentialSource> credentials;    // null: make_credential_source(config)
  // Deadlines, retry waits and the rate limit run on it.
  std::shared_ptr<const base::Clock> clock = base::system_clock();
};

// The real transport. Fails early (InvalidConfiguration) on an unusable CA, certificate or key, naming
// where it came from. The server's certificate is always verified (against the configured CA, or the
// system trust store when none is configured) and must name the server.
Result<std::shared_ptr<Transport>> make_https_transport(const ClientConfig& config,
                                                        TransportOptions options = {});

// "a=1&b=x%2Cy" with RFC 3986 percent-encoding of names and values.
std::string encode_query(const QueryParameters& query);

}  // namespace myop::kube
