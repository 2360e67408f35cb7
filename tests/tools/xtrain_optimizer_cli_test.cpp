// `xtrain --optimizer ...` as a user runs it: every optimizer trains the built-in example, flags
// that do not apply or values out of range are usage errors naming the flag, the learning-rate
// schedules give the documented rates, and a resumed scheduled Adam run equals an uninterrupted
// one bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numbers>
#include <regex>
#include <string>
#include <vector>

#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::testing {
namespace {

namespace fs = std::filesystem;

CommandResult run(const std::string& args) {
  return runCommand("./xtrain " + args);
}

// One progress line: "step      3/10  epoch 0  loss 2.079442  lr 0.0005  samples/s 1234.5".
struct StepLine {
  int64_t step = 0, total = 0;
  double loss = 0, lr = 0;
};

std::vector<StepLine> stepLines(const std::string& output) {
  static const std::regex line(
      R"(step +([0-9]+)/([0-9]+) +epoch [0-9]+ +loss ([-+0-9.naife]+) +lr ([-+0-9.naife]+))");
  std::vector<StepLine> out;
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it) {
    const std::smatch& m = *it;
    out.push_back({std::stoll(m[1]), std::stoll(m[2]), std::stod(m[3]), std::stod(m[4])});
  }
  return out;
}

// The schedule as the documentation gives it, for run s (0-based) of T runs with W warm-up runs.
double expectedLr(const std::string& schedule, double base, int64_t W, int64_t s, int64_t T) {
  if (s < W) return base * static_cast<double>(s + 1) / static_cast<double>(W);
  if (schedule == "constant") return base;
  const double frac = static_cast<double>(s - W) / static_cast<double>(T - W);
  if (schedule == "linear") return base * static_cast<double>(T - s) / static_cast<double>(T - W);
  return base * 0.5 * (1.0 + std::cos(std::numbers::pi * frac));
}

// The printed rates of a run of `steps` steps equal the schedule's (the line prints 6 significant
// digits of the float32 rate).
void expectSchedule(const std::string& schedule, double base, int64_t warmup, int64_t steps,
                    const std::string& extra = "") {
  SCOPED_TRACE(schedule + " warm-up " + std::to_string(warmup));
  CommandResult r = run("--optimizer adam --lr " + std::to_string(base) + " --lr-schedule " +
                        schedule + " --warmup-steps " + std::to_string(warmup) + " --steps " +
                        std::to_string(steps) + extra);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto lines = stepLines(r.output);
  ASSERT_EQ(lines.size(), static_cast<size_t>(steps)) << r.output;
  for (const auto& l : lines) {
    const double want = expectedLr(schedule, base, warmup, l.step - 1, steps);
    EXPECT_NEAR(l.lr, want, 1e-5 * want) << "step " << l.step << "\n" << r.output;
  }
}

using XtrainOptimizerCli = ScratchDirTest;

TEST_F(XtrainOptimizerCli, EveryOptimizerTrainsTheExample) {
  for (const std::string name : {"sgd", "adam", "adamw", "lamb", "adamax", "adagrad", "rmsprop",
                                 "centered-rmsprop", "adadelta"}) {
    SCOPED_TRACE(name);
    CommandResult r = run("--optimizer " + name + " --steps 12 --seed 1");
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("optimizer " + name), std::string::npos) << r.output;
    const auto lines = stepLines(r.output);
    ASSERT_EQ(lines.size(), 12u) << r.output;
    EXPECT_LT(lines.back().loss, lines.front().loss) << r.output;
  }
  // The flags of each family reach the optimizer: with them the run still trains.
  for (const std::string args :
       {"--optimizer sgd --momentum 0.5 --dampening 0.1 --nesterov --weight-decay 1e-4",
        "--optimizer adamw --beta1 0.8 --beta2 0.99 --eps 1e-7 --weight-decay 0.01 "
        "--clip-norm 1 --loss-scaling 128",
        "--optimizer lamb --max-weight-norm 5 --lr 0.01",
        "--optimizer rmsprop --alpha 0.9 --momentum 0.5 --eps 1e-5 --clip-norm 0.5"}) {
    SCOPED_TRACE(args);
    CommandResult r = run(args + " --steps 12 --seed 1");
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const auto lines = stepLines(r.output);
    ASSERT_EQ(lines.size(), 12u) << r.output;
    EXPECT_LT(lines.back().loss, lines.front().loss) << r.output;
  }
}

TEST_F(XtrainOptimizerCli, BadUsageNamesTheFlagAndExitsWithTwo) {
  struct Case {
    std::string args;
    std::vector<std::string> mentions;
  };
  const std::vector<Case> cases{
      {"--optimizer adagradd", {"adagradd", "adadelta"}},
      {"--beta1 0.9", {"--beta1 does not apply to --optimizer sgd"}},
      {"--optimizer adam --momentum 0.9", {"--momentum does not apply to --optimizer adam"}},
      {"--optimizer adam --nesterov", {"--nesterov does not apply to --optimizer adam"}},
      {"--optimizer adagrad --alpha 0.9", {"--alpha does not apply to --optimizer adagrad"}},
      {"--optimizer rmsprop --max-weight-norm 3", {"--max-weight-norm", "rmsprop"}},
      {"--optimizer sgd --eps 1e-8", {"--eps does not apply to --optimizer sgd"}},
      {"--optimizer adam --beta1 2", {"--beta1", "2"}},
      {"--optimizer adamw --beta2 -0.5", {"--beta2", "-0.5"}},
      {"--lr -1", {"--lr", "-1"}},
      {"--optimizer lamb --eps 0", {"--eps", "0"}},
      {"--optimizer adadelta --alpha 1.5", {"--alpha", "1.5"}},
      {"--weight-decay -0.1", {"--weight-decay", "-0.1"}},
      {"--loss-scaling 0", {"--loss-scaling"}},
      {"--clip-norm nan", {"--clip-norm"}},
      {"--momentum 0 --nesterov", {"--nesterov", "--momentum"}},
      {"--optimizer adam --beta1 x", {"--beta1", "'x'"}},
      {"--lr-schedule step", {"--lr-schedule", "step"}},
      {"--warmup-steps -2", {"--warmup-steps"}},
  };
  for (const auto& c : cases) {
    CommandResult r = run(c.args + " --steps 1");
    EXPECT_EQ(r.exitCode, 2) << c.args << "\n" << r.output;
    for (const auto& m : c.mentions)
      EXPECT_NE(r.output.find(m), std::string::npos) << c.args << ": no '" << m << "' in\n"
                                                     << r.output;
  }
  CommandResult h = run("--help");
  EXPECT_EQ(h.exitCode, 0);
  for (const char* flag : {"--beta1", "--max-weight-norm", "--clip-norm", "--lr-schedule",
                           "--warmup-steps", "centered-rmsprop"})
    EXPECT_NE(h.output.find(flag), std::string::npos) << flag;
}

TEST_F(XtrainOptimizerCli, LinearScheduleWithWarmup) {
  expectSchedule("linear", 0.002, 3, 10);
}

TEST_F(XtrainOptimizerCli, CosineScheduleWithWarmup) {
  expectSchedule("cosine", 0.002, 3, 10);
}

TEST_F(XtrainOptimizerCli, ConstantScheduleWithAndWithoutWarmup) {
  expectSchedule("constant", 0.002, 4, 8);
  expectSchedule("constant", 0.002, 0, 4);
  // Without warm-up a schedule starts at the base rate. The rate is set per run: the updates of
  // one run (--batches-per-step) share it, and the total is the number of runs.
  expectSchedule("cosine", 0.01, 0, 6, " --batches-per-step 2");
}

// A job stopped after the checkpoint of step 5 and restarted with the same command and --resume
// auto continues the cosine schedule at step 5 and ends with the weights of the uninterrupted run.
TEST_F(XtrainOptimizerCli, ResumedScheduledAdamEqualsAnUninterruptedRun) {
  const std::string flags =
      " --optimizer adam --lr 0.005 --weight-decay 0.001 --lr-schedule cosine --warmup-steps 2 "
      "--steps 10 --seed 4 --checkpoint-every 5";
  CommandResult straight =
      run(flags + " --checkpoint-dir " + path("a") + " --save-model " + path("straight.onnx"));
  ASSERT_EQ(straight.exitCode, 0) << straight.output;
  ASSERT_TRUE(fs::exists(dir_ / "a" / "ckpt-00000005")) << straight.output;

  // The state of the job when it stopped: its checkpoint at step 5 only.
  fs::create_directories(dir_ / "b");
  fs::copy(dir_ / "a" / "ckpt-00000005", dir_ / "b" / "ckpt-00000005", fs::copy_options::recursive);
  CommandResult resumed = run(flags + " --checkpoint-dir " + path("b") + " --resume auto" +
                              " --save-model " + path("resumed.onnx"));
  ASSERT_EQ(resumed.exitCode, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("at step 5"), std::string::npos) << resumed.output;

  const auto a = stepLines(straight.output), b = stepLines(resumed.output);
  ASSERT_EQ(a.size(), 10u) << straight.output;
  ASSERT_EQ(b.size(), 5u) << resumed.output;
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(b[i].step, a[i + 5].step);
    EXPECT_EQ(b[i].lr, a[i + 5].lr) << "step " << b[i].step;
    EXPECT_EQ(b[i].loss, a[i + 5].loss) << "step " << b[i].step;
  }
  expectSameInitializers(path("straight.onnx"), path("resumed.onnx"), 0);
}

}  // namespace
}  // namespace xtrain::testing
