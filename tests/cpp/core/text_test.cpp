#include "pterun/core/text.h"

#include <gtest/gtest.h>

#include <string>

namespace pterun {
namespace {

using namespace std::string_literals;

TEST(Text, ValidUtf8IsAcceptedAndKeptAsItIs) {
  for (std::string s : {""s, "forward"s, "f\xc3\xb6rward"s, "\xe2\x82\xac"s, "\xf0\x9f\x98\x80"s,
                        "\xf4\x8f\xbf\xbf"s, "\xed\x9f\xbf"s}) {
    EXPECT_TRUE(is_valid_utf8(s)) << printable(s);
    EXPECT_EQ(printable(s), s);
  }
}

TEST(Text, MalformedUtf8IsRejected) {
  for (std::string s :
       {"\x9d"s, "fo\xff"s, "\xc3"s, "\xc0\xaf"s, "\xe0\x80\xaf"s, "\xed\xa0\x80"s,
        "\xf4\x90\x80\x80"s, "\xf0\x9f\x98"s, "\xf8\x88\x80\x80\x80"s, "a\xe2\x82"s}) {
    EXPECT_FALSE(is_valid_utf8(s)) << printable(s);
  }
}

TEST(Text, PrintableEscapesEveryByteThatIsNotUtf8) {
  EXPECT_EQ(printable("forw\x9drd"), "forw\\x9drd");
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("a\xe2\x82"), "a\\xe2\\x82");         // cut short
  EXPECT_EQ(printable("\xe2\x82\xac\xff"), "\xe2\x82\xac\\xff");
}

TEST(Text, PrintableEscapesControlAndInvisibleCharacters) {
  EXPECT_EQ(printable("a\nb\tc\x1b[0m"s), "a\\x0ab\\x09c\\x1b[0m");
  EXPECT_EQ(printable("nul\0here"s), "nul\\x00here");
  EXPECT_EQ(printable("\x7f"), "\\x7f");
  EXPECT_EQ(printable("\xc2\x85"), "\\u0085");  // NEL, a C1 control
  EXPECT_EQ(printable("ab\xe2\x80\xae"
                      "cd"),
            "ab\\u202ecd");                         // right-to-left override
  EXPECT_EQ(printable("\xe2\x80\xa8"), "\\u2028");  // line separator
}

TEST(Text, PrintableResultIsAlwaysValidUtf8) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::string out = printable(all);
  EXPECT_TRUE(is_valid_utf8(out));
  for (char c : out) EXPECT_GE(static_cast<unsigned char>(c), 0x20);
}

}  // namespace
}  // namespace pterun
