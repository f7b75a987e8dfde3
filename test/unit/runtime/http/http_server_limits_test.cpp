#include "runtime/http/http_server_limits.h"

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace myop::runtime;

TEST_CASE("a body plan: a Content-Length is reserved or too large, a chunked body reserves the limit",
          "[runtime][http_server]") {
  CHECK(plan_body(100, false, 1000).reserve == 100);
  CHECK_FALSE(plan_body(100, false, 1000).too_large);
  CHECK(plan_body(1000, false, 1000).reserve == 1000);
  CHECK(plan_body(1001, false, 1000).too_large);
  CHECK(plan_body(1001, false, 1000).reserve == 0);
  CHECK(plan_body(std::nullopt, true, 1000).reserve == 1000);
  CHECK(plan_body(std::nullopt, false, 1000).reserve == 0);  // no body at all
  CHECK(plan_body(0, false, 0).reserve == 0);
  CHECK_FALSE(plan_body(0, false, 0).too_large);
}

TEST_CASE("the request budget gives what is left and takes back what is released", "[runtime][http_server]") {
  RequestBudget budget(100);
  auto first = budget.reserve(60);
  REQUIRE(first);
  CHECK(budget.in_use() == 60);
  CHECK_FALSE(budget.reserve(41));
  auto second = budget.reserve(40);
  REQUIRE(second);
  CHECK(budget.in_use() == 100);
  CHECK(budget.reserve(0));  // nothing to hold always fits
  CHECK_FALSE(budget.reserve(1));
  first->release();
  CHECK(budget.in_use() == 40);
  first->release();  // twice is once
  CHECK(budget.in_use() == 40);
  {
    auto moved = std::move(*second);
    CHECK(budget.in_use() == 40);
  }
  CHECK(budget.in_use() == 0);
  CHECK(budget.reserve(100));
  CHECK_FALSE(budget.reserve(101));
}

TEST_CASE("the request budget never gives more than its capacity to threads racing for it",
          "[runtime][http_server]") {
  RequestBudget budget(1000);
  std::atomic<std::size_t> peak{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        if (auto reservation = budget.reserve(300)) {
          const std::size_t now = budget.in_use();
          std::size_t seen = peak.load();
          while (now > seen && !peak.compare_exchange_weak(seen, now)) {
          }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(peak.load() <= 1000);
  CHECK(peak.load() >= 300);
  CHECK(budget.in_use() == 0);
}

TEST_CASE("rejection reasons have distinct metric labels", "[runtime][http_server]") {
  std::set<std::string_view> labels;
  for (const Rejection reason : kRejections) labels.insert(rejection_label(reason));
  CHECK(labels == std::set<std::string_view>{"connection_limit", "client_connection_limit", "buffer_budget",
                                             "body_too_large", "header_too_large", "deadline"});
}
