// my-operator: flags -> options -> manager -> run. Every behaviour lives in a layer under src/
// (docs/architecture.md).
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <exception>
#include <stop_token>
#include <variant>

#include "app/bootstrap.h"
#include "app/options.h"
#include "myresource/myresource_controller.h"
#include "runtime/logging.h"
#include "runtime/manager/signal_watcher.h"
#include "version.h"

namespace {

int run(int argc, char** argv) {
  auto parsed = myop::app::parse_options(argc, argv);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const myop::app::Options& options = std::get<myop::app::Options>(parsed);
  myop::app::tune_process();

  // Signals are blocked for every thread made after this; only the watcher's thread takes them.
  std::stop_source stop;
  myop::runtime::SignalWatcher signals(stop);
  myop::runtime::configure_logging(
      options.log_format == "json" ? myop::runtime::LogFormat::json : myop::runtime::LogFormat::text,
      spdlog::level::from_str(options.log_level));

  std::string operator_namespace;
  auto manager = myop::app::make_manager(options, operator_namespace);
  if (!manager) {
    spdlog::critical("{}", manager.error().message);
    return EXIT_FAILURE;
  }
  myop::myresource::MyResourceControllerOptions controller;
  controller.operator_namespace = operator_namespace;
  controller.config_map = options.config_map;
  controller.max_concurrent_reconciles = options.max_concurrent_reconciles;
  controller.orphan_sweep_period = options.orphan_sweep_period;
  controller.stuck_deletion_timeout = options.stuck_deletion_timeout;
  controller.version = myop::kVersion;
  if (!options.webhook_only) myop::myresource::add_myresource_controller(*manager.value(), controller);

  const int exit_code = manager.value()->run(stop.get_token());
  myop::app::finish_tracing(*manager.value());
  spdlog::info("my-operator stopped (exit code {})", exit_code);
  return exit_code;
}

}  // namespace

// A failure no layer handled (a configuration error thrown while wiring, memory exhausted) ends the
// process with its message and exit code 1, never with std::terminate's abort.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& failure) {
    spdlog::critical("my-operator: {}", failure.what());
  } catch (...) {
    spdlog::critical("my-operator: unknown exception");
  }
  return EXIT_FAILURE;
}
