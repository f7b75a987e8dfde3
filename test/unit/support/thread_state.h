// Whether a thread of this process is asleep: blocked in a wait (a condition variable, a futex, a
// read), not running or runnable. A witness that a thread waits, where a test would otherwise sleep
// for a while and hope the thread got that far meanwhile.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace myop::testing {

// The calling thread's kernel id (for thread_asleep from another thread).
inline pid_t current_thread_id() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// Whether thread `id` of this process is in state S (interruptible sleep) per
// /proc/self/task/<id>/stat; false when it runs, is runnable, or has ended.
inline bool thread_asleep(pid_t id) {
  std::ifstream file("/proc/self/task/" + std::to_string(id) + "/stat");
  std::stringstream text;
  text << file.rdbuf();
  const std::string stat = text.str();
  // "<pid> (<comm>) <state> ...": the name may hold spaces and parentheses, the last ')' ends it.
  const auto name_end = stat.rfind(')');
  return name_end != std::string::npos && name_end + 2 < stat.size() && stat[name_end + 2] == 'S';
}

}  // namespace myop::testing
