// ProgressBar: the plain-line format used when stdout is not a terminal, and the \r
// redraws of terminal mode.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace ember::data {
// Named per file: test files are compiled in unity batches (Note [Build time]).
namespace data_progress_test {

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(ProgressBar, PlainLinesEveryTenPercent) {
  std::ostringstream out;
  double t = 0;
  {
    ProgressBar bar(100, "epoch 1/2", 64, out, /*terminal=*/false, [&] { return t; });
    for (int64_t step = 1; step <= 100; ++step) {
      t = step * 0.01;  // 10 ms a step: 6400 samples/s
      bar.update(step, {{"loss", 0.5}, {"acc", 0.25}});
    }
    bar.close();
  }
  const auto lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 10u) << out.str();  // 10%, 20%, ..., 90%, then the final line
  EXPECT_EQ(lines[0], "epoch 1/2 10/100 (10%) loss 0.5000 acc 0.2500 | 6400 samples/s | ETA 0:01");
  EXPECT_EQ(lines[8].substr(0, 23), "epoch 1/2 90/100 (90%) ");
  EXPECT_EQ(lines[9], "epoch 1/2 100/100 (100%) loss 0.5000 acc 0.2500 | 6400 samples/s | 0:01");
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
}

TEST(ProgressBar, PlainLinesEveryIntervalSeconds) {
  std::ostringstream out;
  double t = 0;
  ProgressBar bar(1000000, "", 0, out, false, [&] { return t; });
  bar.set_print_interval(10);
  for (int64_t step = 1; step <= 100; ++step) {
    t = static_cast<double>(step);
    bar.update(step, {{"loss", 2.0}});
  }
  const auto lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 10u);  // at 10 s, 20 s, ..., 100 s
  EXPECT_EQ(lines[0].substr(0, 27), "10/1000000 (0%) loss 2.0000");
  EXPECT_NE(lines[0].find("ETA 277:46:30"), std::string::npos) << lines[0];
}

TEST(ProgressBar, TerminalRedrawsOneLine) {
  std::ostringstream out;
  double t = 0;
  {
    ProgressBar bar(4, "train", 0, out, /*terminal=*/true, [&] { return t; });
    for (int64_t step = 1; step <= 4; ++step) {
      t += 1.0;
      bar.update(step, {{"loss", 1.0 / static_cast<double>(step)}});
    }
  }  // the destructor closes
  const std::string s = out.str();
  EXPECT_EQ(s.front(), '\r');
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1);
  EXPECT_NE(s.find("train [==========>         ] 2/4 loss 0.5000 | ETA 0:02"), std::string::npos) << s;
  // The final line is padded with spaces to wipe the longer "ETA" line under it.
  EXPECT_NE(s.find("\rtrain [====================] 4/4 loss 0.2500 | 0:04    \n"), std::string::npos) << s;
}

}  // namespace
}  // namespace ember::data
