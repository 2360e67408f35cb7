// `xtrain --metrics FILE` and scripts/plot-metrics: a JSON line per step written by instance 0 of
// an xrun job, its figures against the progress lines, appending on --resume, a path that cannot be
// written refused before training (exit code 2), and the plot of it (a PNG, or exit code 2 naming
// the line at fault).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "checkpoint/dataset_reader.hpp"
#include "testing/file_testing.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/training_testing.hpp"

namespace xtrain::testing {
namespace {

using nlohmann::json;

std::vector<std::string> linesOf(const std::string& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<json> metricsOf(const std::string& file) {
  std::vector<json> out;
  for (const auto& line : linesOf(file)) {
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << "not a JSON object: " << line;
    out.push_back(j);
  }
  return out;
}

std::vector<int64_t> stepsOf(const std::vector<json>& metrics) {
  std::vector<int64_t> steps;
  for (const auto& m : metrics) steps.push_back(m.value("step", int64_t{-1}));
  return steps;
}

// "[step] -> figure" of the progress lines matching `pattern` (the step, then the figure).
std::map<int64_t, double> printed(const std::string& output, const std::string& pattern) {
  std::map<int64_t, double> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(output.begin(), output.end(), re);
       it != std::sregex_iterator(); ++it) {
    out[std::stoll((*it)[1])] = std::stod((*it)[2]);
  }
  return out;
}

bool havePlotting() {
  return runCommand("/usr/bin/python3 -c 'import matplotlib'").exitCode == 0;
}

CommandResult plotMetrics(const std::string& args) {
  return runCommand("MPLBACKEND=Agg /usr/bin/python3 " XTRAIN_SOURCE_DIR "/scripts/plot-metrics " +
                    args);
}

bool isPng(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof magic);
  return in && std::string(magic, 8) == std::string("\x89PNG\r\n\x1a\n", 8);
}

class XtrainMetrics : public ScratchDirTest {
 protected:
  // A validation set for the built-in example: x [n, 32] float, labels [n] int.
  void writeValidationSet(int64_t n) {
    std::vector<float> xs(static_cast<size_t>(n * 32));
    std::vector<int32_t> ys(static_cast<size_t>(n));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 37) % 101) / 50 - 1;
    for (size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<int32_t>(i % 8);
    checkpoint::DatasetWriter writer(path("val.h5"));
    writer.write("x", TensorInfo(DataType::FLOAT, {n, 32}), xs.data());
    writer.write("labels", TensorInfo(DataType::INT32, {n}), ys.data());
  }
};

// xrun -n 2: one line per step from instance 0 alone (instance 1 writing too would double them),
// the loss and rate as printed, validation on the --val-every steps, the clipping norm; then
// plot-metrics draws it to a PNG.
TEST_F(XtrainMetrics, EveryStepOfAnXrunJobThenPlotted) {
  writeValidationSet(40);
  const std::string metrics = path("run.jsonl");
  const double before =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const CommandResult r = runCommand(
      "./xrun -n 2 ./xtrain --steps 4 --micro-batch-size 8 --lr 0.05 --clip-norm 5 --val-data " +
      path("val.h5") + " --val-every 2 --metrics " + metrics);
  const double after =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const std::vector<json> lines = metricsOf(metrics);
  ASSERT_EQ(stepsOf(lines), (std::vector<int64_t>{1, 2, 3, 4})) << r.output;
  const auto losses = printed(r.output, "step +([0-9]+)/4  epoch [0-9]+  loss ([0-9.]+)");
  const auto valLosses =
      printed(r.output, "validation  step ([0-9]+)  epoch [0-9.]+  loss ([0-9.]+)");
  ASSERT_EQ(losses.size(), 4u) << r.output;
  ASSERT_EQ(valLosses.size(), 2u) << r.output;
  const double samplesPerStep = 8 * 2;  // micro-batch x replicas (one per instance)
  for (const json& m : lines) {
    SCOPED_TRACE(m.dump());
    for (const char* key : {"step", "epoch", "loss", "lr", "step_time_s", "samples_per_s",
                            "reduction_share", "loss_scale", "grad_norm", "wall_time"}) {
      ASSERT_TRUE(m.contains(key) && m[key].is_number()) << key;
    }
    const int64_t step = m["step"];
    EXPECT_NEAR(m["loss"].get<double>(), losses.at(step), 1e-6);
    EXPECT_EQ(m["lr"].get<double>(), 0.05);
    EXPECT_EQ(m["loss_scale"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(m["epoch"].get<double>(), samplesPerStep * static_cast<double>(step) / 4096);
    EXPECT_GT(m["step_time_s"].get<double>(), 0);
    EXPECT_NEAR(m["samples_per_s"].get<double>() * m["step_time_s"].get<double>(), samplesPerStep,
                1e-6 * samplesPerStep);
    // Two instances reduce their gradients across the job in every step.
    EXPECT_GT(m["reduction_share"].get<double>(), 0);
    EXPECT_LE(m["reduction_share"].get<double>(), 1);
    EXPECT_GT(m["grad_norm"].get<double>(), 0);
    EXPECT_GE(m["wall_time"].get<double>(), before);
    EXPECT_LE(m["wall_time"].get<double>(), after);
    const bool validated = step % 2 == 0;
    EXPECT_EQ(m.contains("val_loss"), validated);
    EXPECT_EQ(m.contains("val_accuracy"), validated);  // the example's loss is a classifier's
    if (validated) {
      EXPECT_NEAR(m["val_loss"].get<double>(), valLosses.at(step), 1e-6);
      EXPECT_GE(m["val_accuracy"].get<double>(), 0);
      EXPECT_LE(m["val_accuracy"].get<double>(), 1);
      EXPECT_EQ(m["val_samples"].get<int64_t>(), 40);
    }
  }
  // The lines are written as the steps end: wall time never goes back.
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_GE(lines[i]["wall_time"].get<double>(), lines[i - 1]["wall_time"].get<double>());
  }

  if (!havePlotting()) GTEST_SKIP() << "no matplotlib for /usr/bin/python3 (python3-matplotlib)";
  const std::string png = path("run.png");
  const CommandResult plot = plotMetrics(metrics + " -o " + png);
  ASSERT_EQ(plot.exitCode, 0) << plot.output;
  EXPECT_TRUE(isPng(png));
  // Without -o: beside the metrics, .png for its extension.
  std::filesystem::remove(png);
  ASSERT_EQ(plotMetrics(metrics).exitCode, 0);
  EXPECT_TRUE(isPng(png));
}

// A --resume run appends to what the earlier run wrote; a fresh run replaces the file, but only
// when its first step ends: one that fails before leaves the earlier figures alone.
TEST_F(XtrainMetrics, ResumeAppendsAndAFreshRunReplaces) {
  const std::string metrics = path("m.jsonl");
  const std::string common = "./xtrain --micro-batch-size 8 --metrics " + metrics;
  CommandResult r = runCommand(common + " --steps 3 --checkpoint-dir " + path("ckpt"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(stepsOf(metricsOf(metrics)), (std::vector<int64_t>{1, 2, 3}));
  r = runCommand(common + " --steps 5 --checkpoint-dir " + path("ckpt") + " --resume auto");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(stepsOf(metricsOf(metrics)), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  r = runCommand(common + " --steps 2");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(stepsOf(metricsOf(metrics)), (std::vector<int64_t>{1, 2}));
  // --replicas 3 is refused after the file is opened, before the first step.
  r = runCommand(common + " --steps 2 --replicas 3");
  ASSERT_EQ(r.exitCode, 2) << r.output;
  EXPECT_EQ(stepsOf(metricsOf(metrics)), (std::vector<int64_t>{1, 2}));
}

// The learning rate in force during each step (a schedule changes it) and the loss scale.
TEST_F(XtrainMetrics, LearningRateOfTheScheduleAndLossScale) {
  const std::string metrics = path("m.jsonl");
  const CommandResult r = runCommand(
      "./xtrain --steps 4 --micro-batch-size 8 --lr 0.1 --lr-schedule linear "
      "--loss-scaling 4 --metrics " +
      metrics);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto rates =
      printed(r.output, "step +([0-9]+)/4  epoch [0-9]+  loss [0-9.]+  lr ([0-9.e-]+)");
  const std::vector<json> lines = metricsOf(metrics);
  ASSERT_EQ(stepsOf(lines), (std::vector<int64_t>{1, 2, 3, 4}));
  ASSERT_EQ(rates.size(), 4u) << r.output;
  std::set<double> distinct;
  for (const json& m : lines) {
    const double lr = m["lr"].get<double>();
    EXPECT_NEAR(lr, rates.at(m["step"].get<int64_t>()), 1e-5 * lr) << m.dump();
    distinct.insert(lr);
    EXPECT_EQ(m["loss_scale"].get<double>(), 4.0) << m.dump();
    EXPECT_FALSE(m.contains("grad_norm")) << "no --clip-norm: " << m.dump();
  }
  EXPECT_EQ(distinct.size(), 4u);  // linear decay: a new rate every step
}

// Bad usage, before any step: exit code 2 naming --metrics and the path.
TEST_F(XtrainMetrics, APathThatCannotBeWrittenIsRefusedBeforeTraining) {
  auto refused = [&](const std::string& file, const std::string& why) {
    SCOPED_TRACE(file);
    const CommandResult r = runCommand("./xtrain --steps 3 --metrics '" + file + "'");
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find("--metrics"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("step "), std::string::npos) << "trained: " << r.output;
  };
  refused(path("no/such/dir/m.jsonl"), "does not exist");
  refused(dir_.string(), "is a directory");
  refused("", "needs a path");
  if (::geteuid() != 0) {  // root writes anywhere
    std::filesystem::create_directory(path("ro"));
    ::chmod(path("ro").c_str(), 0500);
    refused(path("ro/m.jsonl"), "not writable");
    ::chmod(path("ro").c_str(), 0700);
  }
}

// How many times `needle` occurs in `text`.
size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A full disk (here a file size limit, RLIMIT_FSIZE, with SIGXFSZ ignored, so that the write that
// crosses it is cut short and the next one fails with EFBIG, as on a full disk) never leaves half a
// line: the part written is cut back, one warning says so, and training goes on to exit 0. The
// limits are chosen inside the first line (any line is longer than 100 bytes: its keys alone are)
// and in the middle of the second (from an unlimited run's lines).
TEST_F(XtrainMetrics, AFullDiskLeavesNoTornLine) {
  const std::string metrics = path("m.jsonl");
  const std::string command =
      "./xtrain --steps 4 --micro-batch-size 8 --seed 3 --metrics " + metrics;
  CommandResult r = runCommand(command);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto full = linesOf(metrics);
  ASSERT_EQ(full.size(), 4u);
  ASSERT_GT(full[0].size() + 1, 100u);
  const size_t secondLine = full[0].size() + 1 + full[1].size() / 2;
  for (const auto& [limit, wholeLines] : {std::pair<size_t, size_t>{100, 0}, {secondLine, 1}}) {
    SCOPED_TRACE("file size limit " + std::to_string(limit));
    r = runCommand("trap '' XFSZ; exec prlimit --fsize=" + std::to_string(limit) + " " + command);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_EQ(occurrences(r.output, "--metrics:"), 1u) << r.output;
    EXPECT_NE(r.output.find("the part of the line written was removed"), std::string::npos)
        << r.output;
    EXPECT_TRUE(std::regex_search(r.output, std::regex("step +4/4")))
        << "training stopped: " << r.output;
    const std::string bytes = readFileBytes(metrics);
    EXPECT_TRUE(bytes.empty() || bytes.back() == '\n') << "a torn last line: " << bytes;
    EXPECT_EQ(metricsOf(metrics).size(), wholeLines) << bytes;
  }
}

// A resumed run appends: a torn line an earlier writer left at the end (killed in the middle of
// it) is removed first, with a warning, instead of swallowing the resumed run's first line.
TEST_F(XtrainMetrics, ResumingCutsATornLastLineBeforeAppending) {
  const std::string metrics = path("m.jsonl");
  const std::string common = "./xtrain --micro-batch-size 8 --metrics " + metrics;
  CommandResult r = runCommand(common + " --steps 2 --checkpoint-dir " + path("ckpt"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  std::ofstream(metrics, std::ios::app) << "{\"step\":3,\"epoch\":0.0";
  r = runCommand(common + " --steps 4 --checkpoint-dir " + path("ckpt") + " --resume auto");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("ended in a torn line"), std::string::npos) << r.output;
  EXPECT_EQ(stepsOf(metricsOf(metrics)), (std::vector<int64_t>{1, 2, 3, 4}));
}

// plot-metrics refuses what it cannot draw: exit code 2, naming the file and, for a bad line, its
// number; nothing written.
TEST_F(XtrainMetrics, PlotMetricsRefusesBadInput) {
  if (!havePlotting()) GTEST_SKIP() << "no matplotlib for /usr/bin/python3 (python3-matplotlib)";
  auto refused = [&](const std::string& file, const std::string& why) {
    SCOPED_TRACE(file);
    const CommandResult r = plotMetrics(file + " -o " + path("out.png"));
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(path("out.png")));
  };
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(path(name)) << text;
    return path(name);
  };
  const std::string good = R"({"step":1,"loss":2.0,"samples_per_s":100})";
  refused(path("missing.jsonl"), "cannot read");
  refused(write("empty.jsonl", ""), "holds no metrics");
  refused(write("blank.jsonl", "\n\n"), "holds no metrics");
  refused(write("garbage.jsonl", good + "\n{\"step\":2,\n"), "garbage.jsonl:2: not JSON");
  refused(write("array.jsonl", good + "\n[1,2]\n"), "array.jsonl:2: expected a JSON object");
  refused(write("noloss.jsonl", good + "\n" + good + "\n{\"step\":3,\"samples_per_s\":1}\n"),
          "noloss.jsonl:3: the field 'loss' is missing");
  refused(write("text.jsonl", R"({"step":1,"loss":"low","samples_per_s":1})"),
          "text.jsonl:1: the field 'loss' is 'low', expected a number");
  refused(write("fraction.jsonl", R"({"step":1.5,"loss":1,"samples_per_s":1})"),
          "fraction.jsonl:1: the field 'step'");
}

}  // namespace
}  // namespace xtrain::testing
