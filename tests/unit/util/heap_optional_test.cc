#include "ampdelta/util/heap_optional.h"

#include <map>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace ampdelta {
namespace {

TEST(HeapOptionalTest, BehavesAsAnOptionalAndTakesThePlaceOfAPointer) {
  static_assert(sizeof(HeapOptional<std::map<std::string, std::string>>) ==
                sizeof(void*));
  HeapOptional<std::string> value;
  EXPECT_FALSE(value);
  EXPECT_EQ(value, std::nullopt);
  EXPECT_EQ(value.value_or("fallback"), "fallback");
  value = std::string("set");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, "set");
  EXPECT_EQ(value->size(), 3u);
  EXPECT_EQ(value, std::string("set"));
  std::optional<std::string> copy = value;
  EXPECT_EQ(copy, std::optional<std::string>("set"));
  value.emplace(2, 'x');
  EXPECT_EQ(*value, "xx");
  value = std::nullopt;
  EXPECT_FALSE(value.has_value());
  value = std::optional<std::string>("again");
  EXPECT_EQ(value, std::optional<std::string>("again"));
  value.reset();
  EXPECT_EQ(value, std::optional<std::string>());
}

TEST(HeapOptionalTest, CopiesAreDeepAndCompareByValue) {
  HeapOptional<std::string> a = std::string("a");
  HeapOptional<std::string> b = a;
  EXPECT_EQ(a, b);
  *b = "b";
  EXPECT_EQ(*a, "a");
  EXPECT_FALSE(a == b);
  b = a;
  EXPECT_EQ(a, b);
  HeapOptional<std::string> moved = std::move(b);
  EXPECT_EQ(*moved, "a");
  EXPECT_EQ(HeapOptional<std::string>(), HeapOptional<std::string>(std::nullopt));
  EXPECT_FALSE(HeapOptional<std::string>() == a);
  HeapOptional<std::string>& self = a;
  a = self;  // self-assignment keeps the value
  EXPECT_EQ(*a, "a");
}

}  // namespace
}  // namespace ampdelta
