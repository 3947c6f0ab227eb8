// The tuning cache file (plan/tuning_cache.h): round trip with several size buckets, atomic write, key
// differences, a file of the old format (re-tune, not an error), the model digest, and clear errors
// naming the file for truncated or corrupt caches.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/centerpoint_graph.h"
#include "plan/tuning_cache.h"

namespace scn {
namespace {

namespace fs = std::filesystem;

TuningCache sample() {
  TuningCache c;
  c.key = {{"gpu", "NVIDIA H200"}, {"compute_capability", "9.0"}, {"model", "0123456789abcdef"}, {"tune_skip", ""}};
  c.buckets = {{"rows 8192-12287", {{"conv0", "igemm m128n16k16s4t"}, {"conv 1", "igemm-i8 m64n64k32s4t"}}},
               {"device count", {{"conv0", "igemm m128n16k32s3"}, {"conv 1", "igemm-i8 m128n64k32s4t"}}}};
  return c;
}

std::string temp_path(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("scn_tuning_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

void expect_error(const std::string& text, const std::string& part) {
  try {
    parse_tuning_cache(text, "cache.tune");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("cache.tune: ", 0), 0u) << m;
    EXPECT_NE(m.find(part), std::string::npos) << m;
  }
}

TEST(TuningCache, RoundTripThroughAFile) {
  const std::string path = temp_path("roundtrip.tune");
  write_tuning_cache(path, sample());
  EXPECT_FALSE(fs::exists(path + ".partial")) << "the temporary file is renamed into place";
  const std::optional<TuningCache> back = read_tuning_cache(path);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->key, sample().key);
  EXPECT_EQ(back->format, kTuningCacheFormat);
  ASSERT_EQ(back->buckets.size(), 2u);
  EXPECT_EQ(back->buckets, sample().buckets);
  ASSERT_NE(back->bucket("device count"), nullptr);
  EXPECT_EQ(back->bucket("device count")->tiles[1].second, "igemm-i8 m128n64k32s4t");
  EXPECT_EQ(back->bucket("rows 1-2"), nullptr);
  EXPECT_EQ(key_difference(*back, sample()), "");
  EXPECT_FALSE(read_tuning_cache(temp_path("absent.tune")).has_value()) << "a missing file means: tune";
}

TEST(TuningCache, KeyDifferenceNamesTheField) {
  TuningCache now = sample();
  now.key[1].second = "8.0";
  EXPECT_EQ(key_difference(sample(), now), "compute_capability: '9.0' in the file, '8.0' here");
  now = sample();
  now.key.emplace_back("split", "0");
  EXPECT_EQ(key_difference(sample(), now), "split: (absent) in the file, '0' here");
}

TEST(TuningCache, AFileOfTheFirstFormatMeansRetuning) {
  // what scn wrote before size buckets: tile lines without a bucket
  const std::string v1 = "scn tuning cache 1\nkey\tgpu\tNVIDIA H200\ntile\tconv0\tigemm m128n16k16s4t\nend\t1\n";
  const TuningCache old = parse_tuning_cache(v1, "cache.tune");
  EXPECT_EQ(old.format, 1);
  EXPECT_TRUE(old.key.empty());
  EXPECT_TRUE(old.buckets.empty());
  EXPECT_EQ(key_difference(old, sample()), "format: 1 in the file, 2 here");
}

TEST(TuningCache, TruncatedOrCorruptFilesAreErrorsNamingThem) {
  const std::string good = serialize(sample());
  expect_error(good.substr(0, good.size() - 7), "truncated");  // the end line cut off
  expect_error(good.substr(0, good.find("tile")), "truncated");
  expect_error("", "empty");
  expect_error("not a cache\n", "header");
  std::string bad_count = good;
  bad_count.replace(bad_count.find("end\t4"), 5, "end\t3");
  expect_error(bad_count, "counts 3 tiles");
  expect_error("scn tuning cache x\n", "header");
  // a bucket's lines split by another bucket's: not what serialize writes
  TuningCache split = sample();
  split.buckets.push_back(split.buckets[0]);
  expect_error(serialize(split), "not together");
  // a tile line of the first format (no bucket) in a file of the current one
  std::string no_bucket = good;
  no_bucket.insert(no_bucket.find("end\t"), "tile\tconv0\tigemm m128n16k16s4t\n");
  expect_error(no_bucket, "unexpected 'tile");
  std::string garbage = good;
  garbage.insert(garbage.find("tile"), "bogus line\n");
  expect_error(garbage, "unexpected 'bogus line'");
  expect_error(good + "tile\tb\tx\ty\n", "after the end line");
  // a corrupt file on disk: read_tuning_cache names its path
  const std::string path = temp_path("corrupt.tune");
  std::ofstream(path) << good.substr(0, good.size() / 2);
  try {
    read_tuning_cache(path);
    ADD_FAILURE() << "a truncated file was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(TuningCache, ModelDigestFollowsTheContents) {
  const Graph a = test::centerpoint_builder({41, 160, 160}, 5, 1).graph();
  const Graph b = test::centerpoint_builder({41, 160, 160}, 5, 1).graph();
  const Graph c = test::centerpoint_builder({41, 160, 160}, 5, 2).graph();  // other weights
  EXPECT_EQ(model_digest(a), model_digest(b));
  EXPECT_EQ(model_digest(a).size(), 16u);
  EXPECT_NE(model_digest(a), model_digest(c));
  Graph d = a;
  d.source = "elsewhere.onnx";  // the file name is not the model
  EXPECT_EQ(model_digest(a), model_digest(d));
}

TEST(TuningCache, NamesDigestFollowsTheListInOrder) {
  const std::vector<std::string> a{"igemm m128n16k16s4t", "osplit c16x16r32p2s6w8"};
  EXPECT_EQ(names_digest(a), names_digest(a));
  EXPECT_EQ(names_digest(a).size(), 16u);
  EXPECT_NE(names_digest(a), names_digest({a[1], a[0]}));
  EXPECT_NE(names_digest(a), names_digest({a[0]}));
  EXPECT_NE(names_digest(a), names_digest({a[0], a[1], "osplit i8c16x16r32p2s6w8"}));
  // names are delimited: "ab" + "c" is not "a" + "bc"
  EXPECT_NE(names_digest({"ab", "c"}), names_digest({"a", "bc"}));
}

}  // namespace
}  // namespace scn
