#pragma once
// A plain TCP client that sends exactly the bytes a test gives it, when it gives them (a header
// without its body, a body a byte at a time), for the limit tests of the runtime's HTTP server.
// Every wait is bounded by a timeout; nothing blocks forever.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace myop::runtime::testing {

struct RawResponse {
  unsigned status = 0;
  std::string head;  // status line and headers
  std::string body;
  bool has_header(const std::string& line) const {
    return head.find("\r\n" + line + "\r\n") != std::string::npos;
  }
};

class RawConnection {
 public:
  // `source`: the loopback address to connect from (any of 127.0.0.0/8), as another client would.
  explicit RawConnection(std::uint16_t port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (source != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &local.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) return;
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // False when the peer has closed (or reset) the connection.
  bool send(const std::string& bytes) {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const auto n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  // One response (Content-Length framed), or nullopt when none came within `timeout` or the
  // connection ended first.
  std::optional<RawResponse> read_response(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::size_t header_end = std::string::npos;
    while ((header_end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!receive(deadline)) return std::nullopt;
    }
    RawResponse response;
    response.head = pending_.substr(0, header_end + 2);
    if (response.head.size() > 12)
      response.status = static_cast<unsigned>(std::atoi(response.head.c_str() + 9));
    std::size_t length = 0;
    for (const char* name : {"\r\nContent-Length: ", "\r\ncontent-length: "}) {
      if (auto at = response.head.find(name); at != std::string::npos)
        length = std::strtoul(response.head.c_str() + at + std::char_traits<char>::length(name), nullptr, 10);
    }
    while (pending_.size() < header_end + 4 + length) {
      if (!receive(deadline)) return std::nullopt;
    }
    response.body = pending_.substr(header_end + 4, length);
    pending_.erase(0, header_end + 4 + length);
    return response;
  }

  // Whether the peer closed the connection (EOF or reset) within `timeout`; bytes that come first
  // are kept for read_response().
  bool closed_by_peer(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!receive(deadline)) return ended_;
    }
    return ended_;
  }

 private:
  // Reads what is there (waiting until `deadline`); false on timeout or the end of the connection.
  bool receive(std::chrono::steady_clock::time_point deadline) {
    if (ended_) return false;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd poll_fd{fd_, POLLIN, 0};
    if (::poll(&poll_fd, 1, static_cast<int>(left.count())) <= 0) return false;
    char buffer[65536];
    const auto n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) {
      ended_ = true;
      return false;
    }
    pending_.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool ended_ = false;
  std::string pending_;
};

// "POST <path> HTTP/1.1" with Host and Content-Length (or chunked when `length` is nullopt), no body.
inline std::string post_header(const std::string& path, std::optional<std::size_t> length,
                               const std::string& method = "POST") {
  std::string header = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  header += length ? "Content-Length: " + std::to_string(*length) + "\r\n" : "Transfer-Encoding: chunked\r\n";
  return header + "\r\n";
}

inline std::string get_request(const std::string& path) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
}

// The descriptor of this process's listening socket on 127.0.0.1:`port`, or -1: a test shuts it down
// under a server, as an accept error the server cannot recover from would.
inline int listening_socket(std::uint16_t port) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_in address{};
    socklen_t length = sizeof address;
    int listening = 0;
    socklen_t option_length = sizeof listening;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0 &&
        address.sin_family == AF_INET && ntohs(address.sin_port) == port &&
        ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &option_length) == 0 && listening != 0)
      return fd;
  }
  return -1;
}

}  // namespace myop::runtime::testing
