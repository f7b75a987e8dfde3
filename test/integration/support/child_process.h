#pragma once
// A program a test starts in the background: its own process group (so a wrapper such as strace and
// whatever it starts are signalled together), stdin from /dev/null, stdout and stderr appended to a
// log file. Used by the operator, Prometheus and Jaeger harnesses.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace myop::testing {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();  // kill()
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts arguments[0] (a path) with the rest as its arguments and `environment` added to this
  // process's. Fails the test when it cannot fork; an exec failure shows as an exit with 127.
  void start(std::vector<std::string> arguments, const std::string& log_path,
             const std::vector<std::pair<std::string, std::string>>& environment = {});
  // Reaps the process when it has exited.
  bool running();
  // SIGTERM to the group, then SIGKILL once `grace` has passed; waits for the exit. Returns false
  // when it had to kill. No-op (true) when not running.
  bool stop(std::chrono::milliseconds grace);
  // SIGKILL to the group; waits for the exit. No-op when not running.
  void kill();
  // Sends `signal` to the group (SIGSTOP / SIGCONT pause it as a stalled node would).
  void signal(int signal);
  // The process id (-1 when not started), e.g. to read /proc/<pid>/status.
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// The last `lines` lines of the file at `path` ("" when it cannot be read).
std::string log_tail(const std::string& path, std::size_t lines);

}  // namespace myop::testing
