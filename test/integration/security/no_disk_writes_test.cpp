// The manager pod runs with readOnlyRootFilesystem: true, so the operator must write nothing to
// disk. strace follows the real binary (every thread) through start-up, a MyResource's create,
// update and delete, and a graceful shutdown, and records every file-system syscall; none may
// create, open for writing, remove, rename or change a file outside /dev, /proc and /sys.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

#include "myresource/operator_process.h"
#include "support/testenv.h"

using namespace myop;
using namespace myop::testing;
using namespace std::chrono_literals;

namespace {

const std::regex kOpen(R"re(\b(open|openat|openat2|creat)\((?:[^"]*)"([^"]*)\"(.*)$)re");
const std::regex kChange(
    R"re(\b(mkdir|mkdirat|rmdir|unlink|unlinkat|rename|renameat|renameat2|link|linkat|symlink|symlinkat|truncate|chmod|fchmodat|chown|fchownat|lchown|mknod|mknodat|utimensat|utimes|setxattr|lsetxattr|removexattr)\((?:[^"]*)"([^"]*)\")re");

bool harmless(const std::string& path) {
  return path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0 || path.rfind("/sys/", 0) == 0;
}

// The lines of an strace log that write to the file system.
std::vector<std::string> disk_writes(const std::string& trace_path, std::size_t& syscalls) {
  std::ifstream trace(trace_path);
  std::vector<std::string> writes;
  std::string line;
  syscalls = 0;
  while (std::getline(trace, line)) {
    std::smatch match;
    if (std::regex_search(line, match, kOpen)) {
      ++syscalls;
      const std::string rest = match[3];
      const bool writing = rest.find("O_WRONLY") != std::string::npos ||
                           rest.find("O_RDWR") != std::string::npos ||
                           rest.find("O_CREAT") != std::string::npos ||
                           rest.find("O_TRUNC") != std::string::npos || match[1] == "creat";
      if (writing && !harmless(match[2])) writes.push_back(line);
    } else if (std::regex_search(line, match, kChange)) {
      ++syscalls;
      if (!harmless(match[2])) writes.push_back(line);
    }
  }
  return writes;
}

}  // namespace

TEST_CASE("security: the operator writes nothing to disk (read-only root filesystem)",
          "[security][readonly]") {
  const auto found = testenv::run("command -v strace");
  if (!found.ok()) FAIL("strace is not installed (hack/install-deps.sh installs it)");
  const std::string strace = found.output.substr(0, found.output.find('\n'));
  testenv::ScopedNamespace ns("sec-readonly");
  const std::string trace = testenv::binary_dir() + "/testenv/no-disk-writes.strace";
  std::remove(trace.c_str());
  {
    OperatorProcess operator_process(
        {.user = "myop-readonly",
         .namespaces = {ns.name()},
         .pod_namespace = ns.name(),
         .command_prefix = {strace, "-f", "-qq", "-e", "trace=%file", "-o", trace, "--"}});
    operator_process.start();
    testenv::kubectl_apply(myresource_manifest(ns.name(), "web", "nginx:1.27.1"));
    CHECK(eventually([&] { return myresource_ready(ns.name(), "web"); }, 120s));
    testenv::kubectl_or_fail("patch myresource web -n " + ns.name() +
                             " --type merge -p '{\"spec\":{\"image\":\"nginx:1.27.2\"}}'");
    CHECK(eventually(
        [&] { return jsonpath("myresource", ns.name(), "web", "{.status.image}") == "nginx:1.27.2"; }, 120s));
    testenv::kubectl_or_fail("delete myresource web -n " + ns.name() + " --timeout=60s");
    INFO("operator log:\n" << operator_process.log_tail());
    operator_process.stop();
  }
  std::size_t syscalls = 0;
  {
    // The detector itself: it must see writes in strace's notation, and let reads pass.
    const std::string sample = trace + ".sample";
    std::ofstream(sample) << "1 openat(AT_FDCWD, \"/etc/ssl/certs\", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 19\n"
                          << "2 openat(AT_FDCWD, \"/tmp/x.log\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3\n"
                          << "3 openat(AT_FDCWD, \"/dev/null\", O_RDWR) = 4\n"
                          << "4 unlinkat(AT_FDCWD, \"/var/run/x.pid\", 0) = 0\n"
                          << "5 mkdir(\"/tmp/cache\", 0700) = -1 EROFS (Read-only file system)\n";
    const auto found = disk_writes(sample, syscalls);
    CHECK(syscalls == 5);
    CHECK(found.size() == 3);
    std::remove(sample.c_str());
  }
  const auto writes = disk_writes(trace, syscalls);
  // The trace saw the operator at all: it opened its kubeconfig and CA at least.
  CHECK(syscalls > 0);
  std::string listed;
  for (const auto& write : writes) listed += "  " + write + "\n";
  INFO("file-system writes (" << writes.size() << " of " << syscalls << " file syscalls):\n" << listed);
  CHECK(writes.empty());
}
