#pragma once
// A fault proxy on loopback between a client (the operator) and the API server: Toxiproxy
// (hack/tools/toxiproxy), started as a child process, one proxy per FaultProxy, faults ("toxics")
// added and removed over its HTTP API. It relays TCP bytes, so TLS passes through untouched: the
// client still verifies the API server's certificate, which is valid for 127.0.0.1 (hack/testenv).
//
// Which toxic gives which fault (Toxiproxy v2.5.0, toxics/*.go):
//   latency      `latency`: every piece of data waits `latency` ms (+- jitter) before it is passed on;
//   bandwidth    `bandwidth`: at most `rate` KB/s;
//   stall        `timeout` with timeout 0 on the downstream (server -> client): the connection stays
//                open and nothing more reaches the client (what the server sends is dropped). Removing
//                the toxic closes every connection it held (TimeoutToxic::Cleanup). A non-zero timeout
//                would close the connection after it: not a silent stall;
//   blackhole    `timeout` with timeout 0 on the upstream (client -> server): the proxy accepts and
//                reads, the server never hears from the client, so nothing ever answers;
//   reset_peer   `reset_peer`: swallows the next piece of data, waits `timeout` ms and closes the
//                connection: with RST (SO_LINGER 0) for connections opened while the toxic exists
//                (their first piece is the TLS handshake: the request is never sent), with FIN for
//                connections that were open when it was added (the next answer: the server has
//                handled the request, the client gets the connection closed instead of the answer);
//   slicer       `slicer` with average_size 4, size_variation 3: every write cut into 1..7 byte
//                pieces, `delay` us apart (at 100 us nearly every read of the client returns one
//                piece; at 10 us, reads merge pieces).
// A toxic's `toxicity` (0..1) is the share of connections it applies to, drawn once per connection.
#include <chrono>
#include <string>

#include "support/child_process.h"

namespace myop::testing {

enum class ToxicStream {
  Upstream,    // client -> server
  Downstream,  // server -> client
};

class FaultProxy {
 public:
  // Starts toxiproxy-server (built on first use) and a proxy to the control plane's API server on a
  // free 127.0.0.1 port. FAILs with the server's log when it does not come up.
  explicit FaultProxy(const std::string& name);
  ~FaultProxy();  // stops the server (every proxied connection closes)
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // https://127.0.0.1:<port>: the API server as seen through the proxy (OperatorOptions::server,
  // testenv::kubeconfig_with_server).
  std::string url() const;

  void add_latency(const std::string& toxic, ToxicStream stream, std::chrono::milliseconds latency,
                   std::chrono::milliseconds jitter = {});
  void add_bandwidth(const std::string& toxic, ToxicStream stream, int kilobytes_per_second);
  // Existing and new connections: nothing more from the server reaches the client; they stay open.
  void add_stall(const std::string& toxic);
  // Connections are accepted and read; nothing reaches the server, nothing ever answers.
  void add_blackhole(const std::string& toxic);
  void add_reset_peer(const std::string& toxic, ToxicStream stream, std::chrono::milliseconds after,
                      double toxicity = 1.0);
  // Every write cut into pieces of 1 to 7 bytes, `delay` apart.
  void add_slicer(const std::string& toxic, ToxicStream stream, std::chrono::microseconds delay);
  void remove(const std::string& toxic);

  const std::string& log_path() const { return log_path_; }

 private:
  void add_toxic(const std::string& toxic, const std::string& type, ToxicStream stream, double toxicity,
                 const std::string& attributes_json);
  // curl against the admin API; FAILs with the answer unless it succeeds.
  std::string api(const std::string& method, const std::string& path, const std::string& body = "");

  std::string name_;
  std::string log_path_;
  unsigned short api_port_ = 0;
  unsigned short listen_port_ = 0;
  ChildProcess server_;
};

}  // namespace myop::testing
