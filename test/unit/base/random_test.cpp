#include "base/random.h"

#include <link.h>
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <thread>

namespace {

// The size of the main program's static TLS block (its PT_TLS segment's memory size).
std::size_t main_program_tls_bytes() {
  std::size_t bytes = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type == PT_TLS)
            *static_cast<std::size_t*>(data) = info->dlpi_phdr[i].p_memsz;
        }
        return 1;  // the first object listed is the main program: stop there
      },
      &bytes);
  return bytes;
}

}  // namespace

TEST_CASE("thread_random is one generator per thread, made on the thread's first call", "[base][random]") {
  std::mt19937_64& mine = myop::base::thread_random();
  CHECK(&myop::base::thread_random() == &mine);

  const std::uint64_t first = mine();
  CHECK(mine() != first);

  std::mt19937_64* theirs = nullptr;
  std::uint64_t their_first = 0;
  std::thread([&] {
    theirs = &myop::base::thread_random();
    their_first = (*theirs)();
  }).join();
  CHECK(theirs != &mine);
  // Seeded from std::random_device each: two threads do not draw the same sequence.
  CHECK(their_first != first);
}

TEST_CASE("the program's static thread-local storage stays small", "[base][random]") {
  // glibc puts the static TLS block at the top of every thread's stack and zeroes it when the thread
  // starts, so each byte here is resident once per thread of the process, used or not. Per-thread
  // buffers and engines go on the heap, made on first use (base::thread_random, kube's ScratchPool): a
  // thread_local of 64 KiB once cost the operator 1.4 MiB of resident memory over its 20 threads.
  const std::size_t bytes = main_program_tls_bytes();
  INFO("PT_TLS memory size of this test binary: " << bytes << " bytes");
  CHECK(bytes > 0);  // the check itself works: the tracer's context and thread_random's pointer are here
  CHECK(bytes <= 1024);
}
