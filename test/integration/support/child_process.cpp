#include "support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <thread>

namespace myop::testing {

ChildProcess::~ChildProcess() { kill(); }

void ChildProcess::start(std::vector<std::string> arguments, const std::string& log_path,
                         const std::vector<std::pair<std::string, std::string>>& environment) {
  REQUIRE(pid_ < 0);
  REQUIRE(!arguments.empty());
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::setsid();
    int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int null = ::open("/dev/null", O_RDONLY);
    if (log < 0 || null < 0) ::_exit(127);
    ::dup2(null, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    for (auto& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = child;
}

bool ChildProcess::running() {
  if (pid_ < 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

bool ChildProcess::stop(std::chrono::milliseconds grace) {
  if (!running()) return true;
  ::kill(-pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill();
  return false;
}

void ChildProcess::kill() {
  if (!running()) return;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void ChildProcess::signal(int signal) {
  if (pid_ > 0) ::kill(-pid_, signal);
}

std::string log_tail(const std::string& path, std::size_t lines) {
  std::ifstream file(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(file, line)) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  std::string text;
  for (const auto& kept : last) text += kept + "\n";
  return text;
}

}  // namespace myop::testing
