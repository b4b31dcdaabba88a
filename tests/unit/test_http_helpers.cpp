// run/http_server.hpp: content negotiation and compression.
#include <gtest/gtest.h>
#include <zlib.h>

#include "pmcprof/run/http_server.hpp"

using namespace pmcprof;

TEST(HttpHelpers, AcceptsGzip) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("deflate, gzip"));
  EXPECT_TRUE(accepts_gzip("GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_TRUE(accepts_gzip("gzip, deflate, br"));  // curl --compressed
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip; q=0.000"));
  EXPECT_FALSE(accepts_gzip("x-gzip2"));
}

TEST(HttpHelpers, GzipRoundTrip) {
  std::string text;
  for (int i = 0; i < 2000; ++i)
    text += "pmcprof_event_total{event=\"page-faults\",cgroup=\"/c" + std::to_string(i) + "\"} " +
            std::to_string(i * 7) + "\n";
  const std::string gz = gzip_compress(text);
  ASSERT_GT(gz.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_LT(gz.size() * 5, text.size());
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out(text.size() + 16, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  EXPECT_EQ(out, text);
  EXPECT_FALSE(gzip_compress("").empty());
}
