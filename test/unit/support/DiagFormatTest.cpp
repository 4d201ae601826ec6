// The one formatter of the diagnostics tables (support/DiagFormat.h): the compiler's, the snapshot
// library's and the Slurm plugin's messages are filled by it, whatever their arguments are held in.
#include "support/DiagFormat.h"
#include "support/Diagnostic.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

using namespace msc;

TEST(DiagFormat, ArgumentsGoWhereTheirIndexSaysAndAMissingOneIsLeftOut) {
  std::vector<std::string> two = {"a", "b"};
  EXPECT_EQ(fillDiagFormat("%1 then %0", two), "b then a");
  EXPECT_EQ(fillDiagFormat("%0 and %2", two), "a and ");
  EXPECT_EQ(fillDiagFormat("100% sure: %0%", two), "100% sure: a%");
  EXPECT_EQ(fillDiagFormat("", two), "");
}

TEST(DiagFormat, EveryHolderOfArgumentsFillsAlike) {
  std::vector<std::string> strings = {"x", "y"};
  std::vector<std::string_view> views = {"x", "y"};
  std::string format = "'%0' is not '%1'";
  EXPECT_EQ(fillDiagFormat(format, strings), fillDiagFormat(format, views));
  EXPECT_EQ(formatDiag(format, strings), "'x' is not 'y'") << "the compiler's diagnostics use it too";
}
