#include "base/result.h"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <variant>

using myop::base::fail;
using myop::base::Result;

namespace {

Result<int, std::string> parse_digit(char character) {
  if (character < '0' || character > '9') return fail(std::string("not a digit: ") + character);
  return character - '0';
}

Result<void, std::string> must_be_even(int number) {
  if (number % 2 != 0) return fail("odd");
  return {};
}

}  // namespace

TEST_CASE("base::Result holds a value or an error", "[base][result]") {
  const auto seven = parse_digit('7');
  REQUIRE(seven.ok());
  CHECK(static_cast<bool>(seven));
  CHECK(seven.value() == 7);
  CHECK(*seven == 7);

  const auto letter = parse_digit('x');
  REQUIRE_FALSE(letter.ok());
  CHECK_FALSE(static_cast<bool>(letter));
  CHECK(letter.error() == "not a digit: x");
}

TEST_CASE("Result: the wrong alternative is a loud programmer error", "[base][result]") {
  const auto letter = parse_digit('x');
  CHECK_THROWS_AS(letter.value(), std::bad_variant_access);
  const auto seven = parse_digit('7');
  CHECK_THROWS_AS(seven.error(), std::bad_variant_access);
  const Result<void, std::string> fine;
  CHECK_THROWS_AS(fine.error(), std::bad_optional_access);
}

TEST_CASE("Result<void, E> is success by default and carries only an error", "[base][result]") {
  CHECK(must_be_even(4).ok());
  const auto odd = must_be_even(3);
  REQUIRE_FALSE(odd);
  CHECK(odd.error() == "odd");
  // An error of a type other than a string converts implicitly.
  const Result<void, int> code = 42;
  REQUIRE_FALSE(code);
  CHECK(code.error() == 42);
}

TEST_CASE("Result with the same value and error type tells them apart by fail()", "[base][result]") {
  const Result<std::string, std::string> value = std::string("text");
  REQUIRE(value.ok());
  CHECK(*value == "text");
  CHECK(value->size() == 4);
  const Result<std::string, std::string> error = fail("why");
  REQUIRE_FALSE(error.ok());
  CHECK(error.error() == "why");
}

TEST_CASE("Result moves its value and its error out", "[base][result]") {
  Result<std::unique_ptr<int>, std::string> pointer = std::make_unique<int>(5);
  REQUIRE(pointer);
  const std::unique_ptr<int> taken = std::move(pointer).value();
  CHECK(*taken == 5);

  Result<int, std::unique_ptr<int>> failed = fail(std::make_unique<int>(9));
  REQUIRE_FALSE(failed);
  const std::unique_ptr<int> reason = std::move(failed).error();
  CHECK(*reason == 9);
}
