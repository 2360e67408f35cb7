// The failure witness: what stderr lines say about who failed, and the root-cause lines it makes.
#include "launcher/failure_witness.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>

namespace xtrain::launcher {
namespace {

constexpr int kExited3 = W_EXITCODE(3, 0);
constexpr int kKilled9 = 9;  // a waitpid status: killed by SIGKILL

EngineMode mpirun(std::vector<std::string> hosts = {}) {
  EngineMode e;
  e.tag = EngineTag::Mpirun;
  e.name = "mpirun";
  e.numInstances = 4;
  e.hostOfInstance = std::move(hosts);
  return e;
}

TEST(XrunFailureWitness, AnInstanceThatWroteNothing) {
  FailureWitness w(2, std::nullopt);
  EXPECT_EQ(w.instanceFailure(1, 42, kExited3, 0),
            "instance 1 (pid 42) exited with code 3; it wrote nothing on stderr");
  EXPECT_EQ(w.instanceFailure(0, 41, kKilled9, 1),
            "instance 0 (pid 41) was killed by signal 9 (SIGKILL), the first to fail; stopped "
            "the other 1 running; it wrote nothing on stderr");
}

TEST(XrunFailureWitness, QuotesTheLastThreeLinesOfTheFailedInstanceOnly) {
  FailureWitness w(2, std::nullopt);
  for (const char* line : {"one", "two", "three", "four"}) w.instanceStderr(1, line);
  w.instanceStderr(0, "not this one");
  w.instanceStderr(1, std::string(301, 'x'));
  EXPECT_EQ(w.instanceFailure(1, 7, kExited3, 0),
            "instance 1 (pid 7) exited with code 3; its last stderr lines: \"three\" | \"four\" | "
            "\"" +
                std::string(300, 'x') + "...\"");
}

TEST(XrunFailureWitness, KeepsTheFirstCollectiveTimeoutThatNamesInstances) {
  FailureWitness w(4, std::nullopt);
  w.instanceStderr(0, "an ordinary line");
  EXPECT_TRUE(w.didNotArrive().empty());
  w.instanceStderr(0,
                   "collective allreduce in group 'replicas-0' (size 4) timed out after 500 ms: "
                   "ranks [2, 3] did not arrive");
  w.instanceStderr(1,
                   "collective allreduce in group 'replicas-0' (size 4) timed out after 500 ms: "
                   "ranks [0] did not arrive");
  EXPECT_EQ(w.didNotArrive(), (std::vector<int>{2, 3}));
  EXPECT_FALSE(w.blamedInstance().has_value());  // only an engine's reports blame
}

TEST(XrunFailureWitness, EngineReportNamesTheInstanceAndQuotesItsLines) {
  FailureWitness w(4, mpirun());
  w.engineStderr("------------------------------------------");
  w.engineStderr("mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 9.");
  w.engineStderr("  Process name: [[17870,1],3]");  // not the first report: ignored
  EXPECT_EQ(w.blamedInstance(), 2);
  EXPECT_EQ(w.engineFailure(42, W_EXITCODE(137, 0)),
            "mpirun (pid 42) exited with code 137; it names instance 2 as the first to fail; "
            "mpirun's last stderr lines: \"mpirun noticed that process rank 2 with PID 0 on node "
            "vm exited on signal 9.\" | \"  Process name: [[17870,1],3]\"");
  w.instanceStderr(2, "xtrain: out of memory");
  EXPECT_EQ(w.engineFailure(42, W_EXITCODE(137, 0)),
            "mpirun (pid 42) exited with code 137; it names instance 2 as the first to fail; "
            "the instance's last stderr lines: \"xtrain: out of memory\"");
}

TEST(XrunFailureWitness, EngineNamesTheInstancesOfTheHostItLost) {
  FailureWitness w(4, mpirun({"h1", "h2", "h1", "h2"}));
  EXPECT_EQ(w.engineFailure(5, kExited3), "mpirun (pid 5) exited with code 3; nothing on stderr");
  w.engineStderr("  Remote daemon: [[43993,0],1] on node h2");
  w.engineStderr("  Remote daemon: [[43993,0],0] on node h1");
  EXPECT_EQ(w.lostHost(), "h2");
  EXPECT_EQ(w.engineFailure(5, kExited3),
            "mpirun (pid 5) exited with code 3; it lost contact with host h2 (instances 1, 3: "
            "unreachable, or their host or daemon died); mpirun's last stderr lines: \"  Remote "
            "daemon: [[43993,0],1] on node h2\" | \"  Remote daemon: [[43993,0],0] on node h1\"");
}

TEST(XrunFailureWitness, AnInstanceOutOfRangeIsNotBlamed) {
  EngineMode srun;
  srun.tag = EngineTag::Srun;
  srun.name = "srun";
  FailureWitness w(2, srun);
  w.engineStderr("srun: error: n1: task 7: Exited with exit code 3");
  EXPECT_FALSE(w.blamedInstance().has_value());
  EXPECT_EQ(w.engineFailure(9, kExited3),
            "srun (pid 9) exited with code 3; srun's last stderr lines: \"srun: error: n1: task "
            "7: Exited with exit code 3\"");
}

}  // namespace
}  // namespace xtrain::launcher
