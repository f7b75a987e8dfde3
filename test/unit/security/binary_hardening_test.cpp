// The built my-operator binary carries the hardening CMakeLists.txt asks for, read back from
// the ELF file with readelf: PIE, full RELRO (GNU_RELRO + BIND_NOW), a non-executable stack,
// the stack protector and FORTIFY_SOURCE. The same checks run on this test binary, built with
// the same flags, so a regression shows even before my-operator links. [release-build]: these
// read the release build's binaries, so the sanitizer builds (hack/sanitize) leave them out.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <filesystem>
#include <regex>
#include <string>

#include "../packaging/packaging_files.h"

using myop::packaging::run_command;
using myop::packaging::shell_quote;

namespace {

// This test binary: <build>/test/unit_tests; my-operator is <build>/my-operator.
std::filesystem::path this_binary() { return std::filesystem::read_symlink("/proc/self/exe"); }
std::filesystem::path operator_binary() { return this_binary().parent_path().parent_path() / "my-operator"; }

std::string readelf(const std::string& options, const std::filesystem::path& binary) {
  const auto result = run_command("LC_ALL=C readelf -W " + options + " " + shell_quote(binary.string()));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  return result.output;
}

struct Hardening {
  bool pie = false;
  bool relro = false;
  bool bind_now = false;
  bool stack_not_executable = false;
  bool stack_protector = false;
  int fortified_calls = 0;
  int unfortified_calls = 0;  // calls of functions that have a _chk variant, without it
};

Hardening inspect(const std::filesystem::path& binary) {
  Hardening found;
  const std::string header = readelf("--file-header", binary);
  const std::string segments = readelf("--program-headers", binary);
  const std::string dynamic = readelf("--dynamic", binary);
  const std::string symbols = readelf("--dyn-syms", binary);
  // PIE: a shared-object type with the PIE flag (DF_1_PIE) in FLAGS_1.
  found.pie = header.find("DYN (Position-Independent Executable file)") != std::string::npos ||
              (header.find("Type:                              DYN") != std::string::npos &&
               std::regex_search(dynamic, std::regex(R"(FLAGS_1\).*\bPIE\b)")));
  found.relro = segments.find("GNU_RELRO") != std::string::npos;
  found.bind_now =
      std::regex_search(dynamic, std::regex(R"(\(BIND_NOW\)|\(FLAGS\).*\bBIND_NOW\b|\(FLAGS_1\).*\bNOW\b)"));
  std::smatch stack;
  found.stack_not_executable =
      std::regex_search(segments, stack, std::regex(R"(GNU_STACK(\s+0x[0-9a-f]+){5}\s+(\S+))")) &&
      stack[2] == "RW";
  found.stack_protector = symbols.find("__stack_chk_fail") != std::string::npos;
  static const std::regex fortified(R"(\b__[a-z]+_chk\b)");
  for (auto it = std::sregex_iterator(symbols.begin(), symbols.end(), fortified);
       it != std::sregex_iterator(); ++it)
    if (it->str() != "__stack_chk_fail") ++found.fortified_calls;
  return found;
}

void require_hardened(const std::filesystem::path& binary) {
  INFO(binary.string());
  REQUIRE(std::filesystem::exists(binary));
  const Hardening found = inspect(binary);
  CHECK(found.pie);
  CHECK(found.relro);
  CHECK(found.bind_now);
  CHECK(found.stack_not_executable);
  CHECK(found.stack_protector);
  // FORTIFY_SOURCE leaves no mark unless a fortifiable call was compiled; C++ code with
  // std::string and iostreams still calls memcpy/snprintf-like functions through their _chk forms.
  CHECK(found.fortified_calls > 0);
}

}  // namespace

TEST_CASE("security: this test binary is built hardened (the flags of CMakeLists.txt)",
          "[security][release-build]") {
  require_hardened(this_binary());
}

TEST_CASE("security: my-operator is built with stack protector, FORTIFY_SOURCE, PIE, full RELRO, noexecstack",
          "[security][release-build]") {
  if (!std::filesystem::exists(operator_binary()))
    FAIL("build my-operator first (cmake --build <build> --target my-operator): "
         << operator_binary().string());
  require_hardened(operator_binary());
}

TEST_CASE("security: the hardening check fails on a binary built without hardening", "[security]") {
  // The check can fail: a program linked with -no-pie, lazy binding, an executable stack and no
  // stack protector shows every one of those.
  myop::packaging::TemporaryFolder folder("myop-hardening");
  const auto source = folder.path() / "soft.cpp";
  myop::packaging::write_text(source,
                              "#include <cstring>\nint main(int argc, char** argv) { char b[8]; "
                              "std::strcpy(b, argv[0]); return b[0] + argc; }\n");
  const auto binary = folder.path() / "soft";
  const auto built = run_command(
      "c++ -O2 -fno-stack-protector -U_FORTIFY_SOURCE -fno-pie -no-pie "
      "-Wl,-z,lazy -Wl,-z,norelro -Wl,-z,execstack -o " +
      shell_quote(binary.string()) + " " + shell_quote(source.string()));
  INFO(built.output);
  REQUIRE(built.exit_code == 0);
  const Hardening found = inspect(binary);
  CHECK_FALSE(found.pie);
  CHECK_FALSE(found.relro);
  CHECK_FALSE(found.bind_now);
  CHECK_FALSE(found.stack_not_executable);
  CHECK_FALSE(found.stack_protector);
  CHECK(found.fortified_calls == 0);
}
