// scn::Error keeps the location in parts (file, node, op, attribute, input) next to what(), and
// write_file_atomic never leaves a half-written target.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "onnx_parser/parser_test_util.h"
#include "scn/error.h"
#include "scn/file_io.h"
#include "scn/onnx.h"

namespace scn::test {
namespace {

Error parse_failure(const std::string& path) {
  try {
    parse_onnx(path);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << path;
  return Error("none");
}

TEST(ErrorParts, OnnxAttributeErrorNamesFileNodeOpAttribute) {
  ModelDef m = small_centerpoint();
  m.node("conv1").set(attr_ints("stride", {0, 1, 1}));
  const std::string path = write_model(m, "parts_stride.onnx");
  const Error e = parse_failure(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.node(), "conv1");
  EXPECT_EQ(e.op(), "SparseConvolution");
  EXPECT_EQ(e.attribute(), "stride");
  EXPECT_TRUE(e.input().empty());
  // what() is the formatted location followed by the problem (the text the catalogue documents)
  EXPECT_EQ(std::string(e.what()).rfind(path + ": node 'conv1' (SparseConvolution): attribute 'stride': 0x1x1", 0), 0u)
      << e.what();
}

TEST(ErrorParts, NodeErrorWithoutAttribute) {
  ModelDef m = small_centerpoint();
  m.node("relu0").op_type = "Gelu";
  const std::string path = write_model(m, "parts_gelu.onnx");
  const Error e = parse_failure(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.node(), "relu0");
  EXPECT_EQ(e.op(), "Gelu");
  EXPECT_TRUE(e.attribute().empty());
  EXPECT_NE(std::string(e.what()).find(": node 'relu0' (Gelu): unknown op type 'Gelu'"), std::string::npos) << e.what();
}

TEST(ErrorParts, BuilderErrorsAndTheFormatter) {
  EngineBuilder b("api");
  const ValueId x = b.push_input("0", 4);
  try {
    b.push_reshape("r", x, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.file(), "api");
    EXPECT_EQ(e.node(), "r");
    EXPECT_EQ(e.op(), "Reshape");
  }
  EXPECT_EQ(format_context({"m.onnx", "conv3", "SparseConvolution", "stride", ""}),
            "m.onnx: node 'conv3' (SparseConvolution): attribute 'stride'");
  EXPECT_EQ(format_context({"", "conv3", "SparseConvolution", "", ""}), "node 'conv3' (SparseConvolution)");
  EXPECT_EQ(format_context({"f.tensor", "", "", "", "0"}), "f.tensor: input '0'");
  const Error plain("just text");
  EXPECT_TRUE(plain.context().empty());
  EXPECT_STREQ(plain.what(), "just text");
}

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(AtomicWrite, ReplacesWholeFileAndFailsCleanly) {
  const std::string dir = temp_dir() + "/atomic";
  ::mkdir(dir.c_str(), 0700);
  const std::string path = dir + "/out.bin";
  write_file_atomic(path, "first version");
  EXPECT_EQ(read_all(path), "first version");
  write_file_atomic(path, "second");
  EXPECT_EQ(read_all(path), "second");
  EXPECT_FALSE(std::ifstream(path + ".partial").good());

  // The temporary file cannot be created (its name is taken by a folder; fails even for root):
  // the error names the target, which keeps its old contents.
  ASSERT_EQ(::mkdir((path + ".partial").c_str(), 0700), 0);
  try {
    write_file_atomic(path, "never visible");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": cannot open for writing"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_all(path), "second");
  ::rmdir((path + ".partial").c_str());
  // a target that is a folder: the rename fails, the temporary file is removed
  const std::string sub0 = dir + "/sub0";
  ::mkdir(sub0.c_str(), 0700);
  EXPECT_THROW(write_file_atomic(sub0, "x"), Error);
  EXPECT_FALSE(std::ifstream(sub0 + ".partial").good());

  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only folders; the failure case cannot be made";
  ASSERT_EQ(::chmod(dir.c_str(), 0500), 0);  // read-only folder: the temporary file cannot be created
  try {
    write_file_atomic(path, "third, never visible");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": cannot open for writing"), std::string::npos) << e.what();
  }
  ::chmod(dir.c_str(), 0700);
  EXPECT_EQ(read_all(path), "second");  // untouched
  EXPECT_FALSE(std::ifstream(path + ".partial").good());
}

}  // namespace
}  // namespace scn::test
