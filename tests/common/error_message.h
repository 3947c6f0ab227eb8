// The message of the scn::Error a call throws, for tests that check what an error names.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>

#include "scn/error.h"

namespace scn::test {

/// What `fn` throws as an scn::Error; "<no error>" when it throws nothing (so that a search for the expected text
/// fails); any other exception is a test failure (bad input must give an scn::Error).
inline std::string error_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-scn exception: " << e.what();
    return e.what();
  }
  return "<no error>";
}

}  // namespace scn::test
