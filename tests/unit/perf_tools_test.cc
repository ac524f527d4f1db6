// The perf tools' checker must be trustworthy: encodings round-trip, patterns reduce exactly in any
// order with rounding to the datatype after every step, and a wrong element is always caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "perf/common/collectives.h"
#include "perf/common/options.h"
#include "perf/common/values.h"

namespace atl::perf {
namespace {

double roundTrip(ncclDataType_t type, double v) {
  unsigned char buf[8] = {};
  encode(type, v, buf, 0);
  return decode(type, buf, 0);
}

TEST(PerfValues, SmallIntegersAndPowersOfTwoRoundTrip) {
  for (const TypeInfo& t : allTypes()) {
    const double limit = std::min(t.exactLimit, 4096.0);
    for (double v = t.isSigned ? -limit : 0; v <= limit; v += 1) EXPECT_EQ(roundTrip(t.type, v), v) << t.name;
    for (int k = 0; k <= std::min(t.maxPow2, 16); ++k)
      EXPECT_EQ(roundTrip(t.type, std::ldexp(1.0, k)), std::ldexp(1.0, k)) << t.name;
  }
}

TEST(PerfValues, KnownBitPatterns) {
  unsigned char b[2] = {};
  encode(ncclFloat16, 1.0, b, 0);
  EXPECT_EQ(b[0] | b[1] << 8, 0x3c00);
  encode(ncclBfloat16, -2.0, b, 0);
  EXPECT_EQ(b[0] | b[1] << 8, 0xc000);
  encode(ncclFloat8e4m3, 448.0, b, 0);
  EXPECT_EQ(b[0], 0x7e);
  encode(ncclFloat8e5m2, 1.0, b, 0);
  EXPECT_EQ(b[0], 0x3c);
  b[0] = 0xff;
  EXPECT_TRUE(std::isnan(decode(ncclFloat8e4m3, b, 0)));
  EXPECT_EQ(roundTrip(ncclFloat16, std::ldexp(1.0, -24)), std::ldexp(1.0, -24));  // smallest subnormal
}

double apply(Combine c, double a, double b) {
  switch (c) {
    case Combine::Prod:
      return a * b;
    case Combine::Min:
      return std::min(a, b);
    case Combine::Max:
      return std::max(a, b);
    default:
      return a + b;
  }
}

TEST(PerfValues, ReductionsAreExactInAnyOrder) {
  std::mt19937 rng(7);
  for (const TypeInfo& t : allTypes()) {
    for (Combine c : {Combine::Sum, Combine::Prod, Combine::Min, Combine::Max}) {
      for (int n : {1, 2, 3, 4, 7, 9, 17, 64}) {
        Pattern p(t.type, c, n);
        std::vector<int> order(static_cast<size_t>(n));
        for (size_t i = 0; i < 300; ++i) {
          std::iota(order.begin(), order.end(), 0);
          std::shuffle(order.begin(), order.end(), rng);
          double acc = roundTrip(t.type, p.input(order[0], i));
          for (int k = 1; k < n; ++k) acc = roundTrip(t.type, apply(c, acc, p.input(order[static_cast<size_t>(k)], i)));
          ASSERT_EQ(acc, p.reduced(i)) << t.name << " n=" << n << " i=" << i << " combine=" << static_cast<int>(c);
        }
      }
    }
  }
}

TEST(PerfValues, InputsVaryAcrossRanksAndElements) {
  Pattern p(ncclFloat, Combine::Copy, 4);
  int distinct = 0;
  for (size_t i = 0; i < 100; ++i) distinct += p.input(0, i) != p.input(1, i);
  EXPECT_GT(distinct, 90);
}

TEST(PerfValues, CheckerCatchesWrongValues) {
  for (const TypeInfo& t : allTypes()) {
    Pattern p(t.type, Combine::Sum, 4);
    const double want = p.reduced(5);
    EXPECT_TRUE(p.matches(want, want));
    EXPECT_FALSE(p.matches(want + 1, want)) << t.name;
    EXPECT_FALSE(p.matches(std::nan(""), want)) << t.name;
  }
  // Avg on floats tolerates rounding of the division, integers truncate exactly.
  Pattern avg(ncclFloat, Combine::Avg, 3);
  EXPECT_TRUE(avg.matches(avg.reduced(1) * (1 + 1e-7), avg.reduced(1)));
  Pattern iavg(ncclInt32, Combine::Avg, 3);
  EXPECT_FALSE(iavg.matches(iavg.reduced(1) + 1, iavg.reduced(1)));
}

TEST(PerfCollectives, LayoutsFollowNcclTests) {
  Layout ag = layoutFor(Coll::AllGather, 1024, 4, 4, 2);
  EXPECT_EQ(ag.sendCount, 64u);
  EXPECT_EQ(ag.recvCount, 256u);
  EXPECT_EQ(ag.inPlaceSend, 128u);
  Layout rs = layoutFor(Coll::ReduceScatter, 1024, 4, 4, 3);
  EXPECT_EQ(rs.recvCount, 64u);
  EXPECT_EQ(rs.inPlaceRecv, 192u);
  Layout a2a = layoutFor(Coll::AlltoAll, 1000, 4, 3, 0);
  EXPECT_EQ(a2a.paramCount, 83u);
  EXPECT_EQ(a2a.sendCount, 249u);
  EXPECT_DOUBLE_EQ(busBwFactor(Coll::AllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busBwFactor(Coll::AllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busBwFactor(Coll::SendRecv, 4), 1.0);
  EXPECT_EQ(outputCount(Coll::Reduce, layoutFor(Coll::Reduce, 64, 4, 3, 1), 1, 0), 0u);
}

TEST(PerfOptions, SizesAndFlags) {
  size_t v = 0;
  EXPECT_TRUE(parseByteSize("8", &v) && v == 8);
  EXPECT_TRUE(parseByteSize("1K", &v) && v == 1024);
  EXPECT_TRUE(parseByteSize("64M", &v) && v == 64u << 20);
  EXPECT_TRUE(parseByteSize("1G", &v) && v == 1u << 30);
  EXPECT_TRUE(parseByteSize("2MB", &v) && v == 2u << 20);
  EXPECT_FALSE(parseByteSize("1X", &v));
  EXPECT_FALSE(parseByteSize("-1", &v));
  EXPECT_FALSE(parseByteSize("", &v));

  auto parse = [](std::vector<const char*> args, Options* o) {
    std::vector<char*> argv{const_cast<char*>("tool")};
    for (const char* a : args) argv.push_back(const_cast<char*>(a));
    std::string err;
    return parseOptions(static_cast<int>(argv.size()), argv.data(), o, &err);
  };
  Options o;
  ASSERT_EQ(parse({"-b", "8", "-e", "128M", "-f", "2", "-o", "all", "-d", "all", "-t", "2", "-g", "3", "-a", "2"}, &o),
            ParseOutcome::Run);
  EXPECT_EQ(o.maxBytes, 128u << 20);
  EXPECT_EQ(o.ops.size(), 5u);
  EXPECT_EQ(o.types.size(), 12u);
  EXPECT_EQ(o.ranksPerThread, 3);
  EXPECT_EQ(o.average, TimeReduce::Max);
  EXPECT_EQ(parse({"--bogus"}, &o), ParseOutcome::Error);
  EXPECT_EQ(parse({"-c", "2"}, &o), ParseOutcome::Error);
  EXPECT_EQ(parse({"-b", "1M", "-e", "1K"}, &o), ParseOutcome::Error);
  EXPECT_EQ(parse({"-n"}, &o), ParseOutcome::Error);
  EXPECT_EQ(parse({"extra"}, &o), ParseOutcome::Error);
  EXPECT_EQ(parse({"-h"}, &o), ParseOutcome::Help);
}

}  // namespace
}  // namespace atl::perf
