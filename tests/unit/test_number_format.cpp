// perf-style number formatting: thousands separators in text, none in CSV.
#include <gtest/gtest.h>

#include "pmcprof/report/number_format.hpp"

using namespace pmcprof;

TEST(NumberFormat, GroupedSmallNumbers) {
  EXPECT_EQ(format_grouped(0, 0), "0");
  EXPECT_EQ(format_grouped(0, 2), "0.00");
  EXPECT_EQ(format_grouped(999, 0), "999");
  EXPECT_EQ(format_grouped(999.994, 2), "999.99");
}

TEST(NumberFormat, GroupedThousands) {
  EXPECT_EQ(format_grouped(1000, 0), "1,000");
  EXPECT_EQ(format_grouped(999999, 0), "999,999");
  EXPECT_EQ(format_grouped(1000000, 0), "1,000,000");
  EXPECT_EQ(format_grouped(1234567.891, 2), "1,234,567.89");
  EXPECT_EQ(format_grouped(123456789012.0, 0), "123,456,789,012");
}

TEST(NumberFormat, GroupedRoundingCarriesIntoNewGroup) {
  EXPECT_EQ(format_grouped(999.999, 2), "1,000.00");
  EXPECT_EQ(format_grouped(999999.6, 0), "1,000,000");
}

TEST(NumberFormat, GroupedNegative) {
  EXPECT_EQ(format_grouped(-1, 0), "-1");
  EXPECT_EQ(format_grouped(-999, 0), "-999");
  EXPECT_EQ(format_grouped(-1000, 0), "-1,000");
  EXPECT_EQ(format_grouped(-1234567.891, 2), "-1,234,567.89");
}

TEST(NumberFormat, Fixed) {
  EXPECT_EQ(format_fixed(0, 0), "0");
  EXPECT_EQ(format_fixed(1234567.891, 2), "1234567.89");
  EXPECT_EQ(format_fixed(2.5, 3), "2.500");
  EXPECT_EQ(format_fixed(-12.345, 1), "-12.3");
  EXPECT_EQ(format_fixed(1e15, 0), "1000000000000000");
}

TEST(NumberFormat, PadLeft) {
  EXPECT_EQ(pad_left("42", 5), "   42");
  EXPECT_EQ(pad_left("12345", 5), "12345");
  EXPECT_EQ(pad_left("123456", 3), "123456");  // never truncates
  EXPECT_EQ(pad_left("", 2), "  ");
}

TEST(NumberFormat, PadRight) {
  EXPECT_EQ(pad_right("ab", 4), "ab  ");
  EXPECT_EQ(pad_right("abcd", 4), "abcd");
  EXPECT_EQ(pad_right("abcdef", 2), "abcdef");
  EXPECT_EQ(pad_right("", 0), "");
}
