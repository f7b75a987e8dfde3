#include "support/fault_proxy.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <sstream>

#include "myresource/operator_process.h"  // free_port, eventually
#include "support/testenv.h"

namespace myop::testing {
namespace {

std::string stream_name(ToxicStream stream) {
  return stream == ToxicStream::Upstream ? "upstream" : "downstream";
}

// "https://127.0.0.1:34567" -> "127.0.0.1:34567".
std::string host_port(const std::string& url) {
  const auto scheme = url.find("://");
  std::string rest = scheme == std::string::npos ? url : url.substr(scheme + 3);
  if (const auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  return rest;
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

FaultProxy::FaultProxy(const std::string& name) : name_(name) {
  const std::string binary = testenv::tool_binary("toxiproxy", "toxiproxy-server");
  api_port_ = free_port();
  listen_port_ = free_port();
  log_path_ = testenv::binary_dir() + "/testenv/toxiproxy-" + name_ + ".log";
  std::remove(log_path_.c_str());
  server_.start({binary, "-host", "127.0.0.1", "-port", std::to_string(api_port_)}, log_path_);
  const std::string probe =
      "curl -sf -o /dev/null http://127.0.0.1:" + std::to_string(api_port_) + "/version";
  if (!eventually([&] { return testenv::run(probe).ok(); }, std::chrono::seconds(20)))
    FAIL("toxiproxy-server did not answer within 20 s; its log:\n" << log_tail(log_path_, 40));
  api("POST", "/proxies",
      R"({"name":")" + name_ + R"(","listen":"127.0.0.1:)" + std::to_string(listen_port_) +
          R"(","upstream":")" + host_port(testenv::server_url()) + R"(","enabled":true})");
}

FaultProxy::~FaultProxy() { server_.stop(std::chrono::seconds(5)); }

std::string FaultProxy::url() const { return "https://127.0.0.1:" + std::to_string(listen_port_); }

std::string FaultProxy::api(const std::string& method, const std::string& path, const std::string& body) {
  std::string command = "curl -sS -f -X " + method + " http://127.0.0.1:" + std::to_string(api_port_) + path;
  if (!body.empty()) command += " -H 'Content-Type: application/json' --data " + shell_quote(body);
  const auto result = testenv::run(command);
  if (!result.ok())
    FAIL("toxiproxy " << method << " " << path << " " << body << " failed:\n" << result.output);
  return result.output;
}

void FaultProxy::add_toxic(const std::string& toxic, const std::string& type, ToxicStream stream,
                           double toxicity, const std::string& attributes_json) {
  std::ostringstream body;
  body << R"({"name":")" << toxic << R"(","type":")" << type << R"(","stream":")" << stream_name(stream)
       << R"(","toxicity":)" << toxicity << R"(,"attributes":)" << attributes_json << "}";
  api("POST", "/proxies/" + name_ + "/toxics", body.str());
}

void FaultProxy::add_latency(const std::string& toxic, ToxicStream stream, std::chrono::milliseconds latency,
                             std::chrono::milliseconds jitter) {
  add_toxic(toxic, "latency", stream, 1.0,
            R"({"latency":)" + std::to_string(latency.count()) + R"(,"jitter":)" +
                std::to_string(jitter.count()) + "}");
}

void FaultProxy::add_bandwidth(const std::string& toxic, ToxicStream stream, int kilobytes_per_second) {
  add_toxic(toxic, "bandwidth", stream, 1.0, R"({"rate":)" + std::to_string(kilobytes_per_second) + "}");
}

void FaultProxy::add_stall(const std::string& toxic) {
  add_toxic(toxic, "timeout", ToxicStream::Downstream, 1.0, R"({"timeout":0})");
}

void FaultProxy::add_blackhole(const std::string& toxic) {
  add_toxic(toxic, "timeout", ToxicStream::Upstream, 1.0, R"({"timeout":0})");
}

void FaultProxy::add_reset_peer(const std::string& toxic, ToxicStream stream, std::chrono::milliseconds after,
                                double toxicity) {
  add_toxic(toxic, "reset_peer", stream, toxicity, R"({"timeout":)" + std::to_string(after.count()) + "}");
}

void FaultProxy::add_slicer(const std::string& toxic, ToxicStream stream, std::chrono::microseconds delay) {
  add_toxic(toxic, "slicer", stream, 1.0,
            R"({"average_size":4,"size_variation":3,"delay":)" + std::to_string(delay.count()) + "}");
}

void FaultProxy::remove(const std::string& toxic) { api("DELETE", "/proxies/" + name_ + "/toxics/" + toxic); }

}  // namespace myop::testing
