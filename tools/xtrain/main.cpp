// xtrain: trains an ONNX model on an HDF5 data set (or the built-in example) on simulated IPUs.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>

#include "checkpoint/dataset_reader.hpp"
#include "checkpoint_dir.hpp"
#include "comm/types.hpp"
#include "common/env_value.hpp"
#include "common/timeline_job.hpp"
#include "global_batch.hpp"
#include "options.hpp"
#include "trainer.hpp"
#include "xtrain/dist.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

int main(int argc, char** argv) {
  using namespace xtrain;
  // Progress lines reach a file or pipe (xrun, a batch log) as they are written: a job killed
  // mid-run must leave its "resumed from" and "saved checkpoint" lines behind.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  tools::TrainOptions options;
  // --trace: written when main returns, whatever the outcome, or by SIGINT's handler.
  std::optional<timeline::JobTrace> trace;
  try {
    options = tools::parseOptions(std::vector<std::string>(argv + 1, argv + argc));
    if (options.help) {
      std::cout << tools::usageText();
      return 0;
    }
    // A job xrun shrank (--min-instances) keeps its global batch (global_batch.hpp).
    const std::string shrunk = tools::keepGlobalBatch(options);
    const auto index = readEnvWholeNumber("XTRAIN_INSTANCE_INDEX", 0, INT32_MAX);
    if (!shrunk.empty() && index.value_or(0) == 0) {
      std::cout << shrunk << "\n";
    }
    // --log-level sets the default; XTRAIN_LOG_LEVEL / XTRAIN_LOG_CONFIG, when set, win.
    logging::setDefaultLevel(logging::levelFromString(options.logLevel));
    logging::configureFromEnvironment();
    // Environment switches read later, when a data file is opened, would be reported under that
    // file's flag: a bad value is refused here, on its own.
    (void)checkpoint::DatasetReader::residentBytesFromEnvironment();
    // Likewise the durations first read at a collective or a checkpoint's agreement, maybe hours
    // in.
    (void)comm::defaultTimeout();
    (void)readEnvDuration("XTRAIN_CHECKPOINT_TIMEOUT");
    if (!options.trace.empty()) {
      trace.emplace(timeline::JobTraceRequest{options.trace, options.traceSteps, "--trace", true});
    }
  } catch (const tools::UsageError& e) {
    std::cerr << "xtrain: " << e.what() << "\n";
    return 2;
  } catch (const error& e) {
    std::cerr << "xtrain: " << e.what() << "\n";
    return 2;
  }
  try {
    // SIGUSR1 and SIGTERM (a scheduler's preemption warning, passed on by xrun) from here on ask
    // for a stop after the current step: train() checkpoints and returns kPreemptedExitCode.
    dist::handlePreemption();
    tools::refuseToOverwriteCheckpoints(options);
    tools::refuseToStartAfreshOnRestart(options);
    const int code = tools::train(options, std::cout);
    // A trace that cannot be written fails a run that succeeded; a run that failed or was
    // preempted keeps its exit code (the trace's failure is still printed).
    if (trace && code == 0) trace->finish();
    if (trace && code != 0) {
      try {
        trace->finish();
      } catch (const error& e) {
        std::cerr << "xtrain: " << e.what() << "\n";
      }
    }
    return code;
  } catch (const OutOfMemoryException& e) {
    std::cerr << "xtrain: " << e.what() << "\n" << e.getSummaryReport() << "\n";
    return 1;
  } catch (const runtime_error& e) {
    std::cerr << "xtrain: runtime failure: " << e.what() << "\n";
    return 1;
  } catch (const internal_error& e) {
    std::cerr << "xtrain: internal error (please report): " << e.what() << "\n";
    return 1;
  } catch (const error& e) {
    std::cerr << "xtrain: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "xtrain: runtime failure: " << e.what() << "\n";
    return 1;
  }
}
