#pragma once
// Helpers of the packaging tests: where the source tree is, reading files and YAML
// documents, running a command. Header-only so the integration tests can use it too
// (#include "../../unit/packaging/packaging_files.h").

#include <yaml-cpp/yaml.h>

#include <sys/wait.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace myop::packaging {

// The repository root, given by CMake (not __FILE__, which a compiler cache with base_dir may
// rewrite to a path relative to the build directory).
inline std::filesystem::path repository_root() { return MYOP_SOURCE_DIR; }

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot write " + path.string());
  file << text;
}

// Every non-empty document of a multi-document YAML text.
inline std::vector<YAML::Node> yaml_documents(const std::string& text) {
  std::vector<YAML::Node> documents;
  for (const YAML::Node& document : YAML::LoadAll(text)) {
    if (document.IsMap()) documents.push_back(document);
  }
  return documents;
}

// The YAML files directly in a folder, sorted by name.
inline std::vector<std::filesystem::path> yaml_files(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const auto extension = entry.path().extension();
    if (entry.is_regular_file() && (extension == ".yaml" || extension == ".yml"))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

struct CommandOutput {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command and collects what it prints; never throws.
inline CommandOutput run_command(const std::string& command) {
  CommandOutput result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), read);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// Single-quotes text for the shell.
inline std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// A fresh temporary folder, removed when the guard goes away.
class TemporaryFolder {
 public:
  explicit TemporaryFolder(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryFolder(const TemporaryFolder&) = delete;
  TemporaryFolder& operator=(const TemporaryFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace myop::packaging
