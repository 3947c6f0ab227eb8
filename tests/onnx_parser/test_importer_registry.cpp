// The op-type registry on its own (header-only, no protobuf).
#include <gtest/gtest.h>

#include "importer_registry.h"

namespace scn::onnx_import {
namespace {

ValueId import_a(NodeImport&) { return 1; }
ValueId import_b(NodeImport&) { return 2; }

TEST(ImporterRegistry, FindsWhatWasAdded) {
  ImporterRegistry r;
  r.add("Relu", &import_a);
  r.add("Add", &import_b);
  EXPECT_EQ(r.find("Relu"), &import_a);
  EXPECT_EQ(r.find("Add"), &import_b);
  EXPECT_EQ(r.find("relu"), nullptr);  // op types are case-sensitive, as in ONNX
  EXPECT_EQ(r.find("Conv"), nullptr);
  EXPECT_EQ(r.op_types(), "Add, Relu");
}

TEST(ImporterRegistry, DuplicateRegistrationIsAnError) {
  ImporterRegistry r;
  r.add("Relu", &import_a);
  try {
    r.add("Relu", &import_b);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'Relu' is registered twice"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(r.find("Relu"), &import_a);  // the first one stays
  EXPECT_THROW(r.add("Null", nullptr), Error);
}

}  // namespace
}  // namespace scn::onnx_import
