// xrun's command line: every option, its defaults, and the messages of refused command lines.
#include "launcher/options.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xtrain::launcher {
namespace {

using Args = std::vector<std::string>;

std::string usageErrorOf(const Args& args) {
  try {
    parseOptions(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return {};
}

TEST(XrunOptions, DefaultsAndProgram) {
  Options o = parseOptions({"train", "--lr", "0.1"});
  EXPECT_EQ(o.numInstances, 1);
  EXPECT_FALSE(o.numReplicas.has_value());
  EXPECT_EQ(o.ipusPerReplica, 1);
  EXPECT_EQ(o.engine, Engine::Auto);
  EXPECT_TRUE(o.tagOutput);
  EXPECT_EQ(o.tagFormat, TagFormat::Xrun);
  EXPECT_EQ(o.commBackend, "auto");
  EXPECT_FALSE(o.dryRun);
  EXPECT_FALSE(o.timeoutSeconds.has_value());
  EXPECT_EQ(o.program, "train");
  EXPECT_EQ(o.programArgs, (Args{"--lr", "0.1"}));
}

TEST(XrunOptions, PoprunLongNamesBothForms) {
  Options o = parseOptions({"--num-instances", "2", "--num-replicas=8", "--ipus-per-replica", "2",
                            "--only-output-from-instance=1", "--output-dir", "/tmp/o",
                            "--no-tag-output", "--print-topology", "--dry-run", "--timeout", "1.5",
                            "--comm-backend=gloo", "prog"});
  EXPECT_EQ(o.numInstances, 2);
  EXPECT_EQ(o.numReplicas, 8);
  EXPECT_EQ(o.ipusPerReplica, 2);
  EXPECT_EQ(o.onlyOutputFromInstance, 1);
  EXPECT_EQ(o.outputDir, "/tmp/o");
  EXPECT_FALSE(o.tagOutput);
  EXPECT_TRUE(o.printTopology);
  EXPECT_TRUE(o.dryRun);
  EXPECT_DOUBLE_EQ(*o.timeoutSeconds, 1.5);
  EXPECT_EQ(o.commBackend, "gloo");
  EXPECT_EQ(o.program, "prog");
}

TEST(XrunOptions, ShortOptionsAttachedOrSeparate) {
  Options o = parseOptions({"-n4", "-x", "A=1", "-xB", "-H", "h1,h2", "-Hh3", "prog"});
  EXPECT_EQ(o.numInstances, 4);
  ASSERT_EQ(o.env.size(), 2u);
  EXPECT_EQ(o.env[0].name, "A");
  EXPECT_EQ(o.env[0].value, "1");
  EXPECT_EQ(o.env[1].name, "B");
  EXPECT_FALSE(o.env[1].value.has_value());
  EXPECT_EQ(o.hosts, (Args{"h1", "h2", "h3"}));
}

TEST(XrunOptions, DoubleDashEndsOptionsAndProgramOptionsAreNotXruns) {
  Options o = parseOptions({"-n", "2", "--", "--weird-program", "-n", "7"});
  EXPECT_EQ(o.numInstances, 2);
  EXPECT_EQ(o.program, "--weird-program");
  EXPECT_EQ(o.programArgs, (Args{"-n", "7"}));

  o = parseOptions({"-n", "2", "prog", "--dry-run"});
  EXPECT_FALSE(o.dryRun);
  EXPECT_EQ(o.programArgs, (Args{"--dry-run"}));
}

TEST(XrunOptions, EnginesAndMpiArgs) {
  Options o = parseOptions({"--engine", "mpirun", "--mpi-global-args",
                            "--oversubscribe --mca btl 'self,tcp'", "--mpi-local-args=-x FOO",
                            "--hostfile", "hosts.txt", "prog"});
  EXPECT_EQ(o.engine, Engine::Mpirun);
  EXPECT_EQ(o.mpiGlobalArgs, (Args{"--oversubscribe", "--mca", "btl", "self,tcp"}));
  EXPECT_EQ(o.mpiLocalArgs, (Args{"-x", "FOO"}));
  EXPECT_EQ(o.hostfile, "hosts.txt");
  EXPECT_EQ(parseOptions({"--engine=srun", "p"}).engine, Engine::Srun);
  EXPECT_EQ(parseOptions({"--engine=local", "p"}).engine, Engine::Local);
}

TEST(XrunOptions, HelpAndVersionNeedNoProgram) {
  EXPECT_TRUE(parseOptions({"--help"}).help);
  EXPECT_TRUE(parseOptions({"-h"}).help);
  EXPECT_TRUE(parseOptions({"--version"}).version);
  EXPECT_NE(helpText().find("--num-instances"), std::string::npos);
}

TEST(XrunOptions, TagFormat) {
  EXPECT_EQ(parseOptions({"--tag-format", "mpi", "p"}).tagFormat, TagFormat::Mpi);
  EXPECT_NE(usageErrorOf({"--tag-format", "json", "p"}).find("'xrun'"), std::string::npos);
}

TEST(XrunOptions, RefusalsSayWhatWouldWork) {
  std::string m = usageErrorOf({"--num-instance", "2", "prog"});
  EXPECT_NE(m.find("unknown option '--num-instance'"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean --num-instances"), std::string::npos) << m;

  m = usageErrorOf({"-n", "two", "prog"});
  EXPECT_NE(m.find("whole number"), std::string::npos) << m;
  m = usageErrorOf({"-n", "0", "prog"});
  EXPECT_NE(m.find("at least 1"), std::string::npos) << m;
  m = usageErrorOf({"--timeout", "-3", "prog"});
  EXPECT_NE(m.find("--timeout='-3': expected a duration of more than 0"), std::string::npos) << m;
  m = usageErrorOf({"--comm-backend", "nccl", "prog"});
  EXPECT_NE(m.find("auto, shm, gloo, mpi"), std::string::npos) << m;
  m = usageErrorOf({"--engine", "ssh", "prog"});
  EXPECT_NE(m.find("auto, local, mpirun, srun"), std::string::npos) << m;
  m = usageErrorOf({"-x", "1BAD=2", "prog"});
  EXPECT_NE(m.find("VAR or VAR=VALUE"), std::string::npos) << m;
  m = usageErrorOf({"-n", "2"});
  EXPECT_NE(m.find("no program given"), std::string::npos) << m;
  m = usageErrorOf({"--timeout"});
  EXPECT_NE(m.find("needs a value"), std::string::npos) << m;
  m = usageErrorOf({"--dry-run=yes", "p"});
  EXPECT_NE(m.find("takes no value"), std::string::npos) << m;
  m = usageErrorOf({"-H", "a", "--hostfile", "f", "p"});
  EXPECT_NE(m.find("not both"), std::string::npos) << m;
  m = usageErrorOf({"-n", "2", "--only-output-from-instance", "2", "p"});
  EXPECT_NE(m.find("instances are 0..1"), std::string::npos) << m;
  m = usageErrorOf({"--grace-period", "3601", "p"});
  EXPECT_NE(m.find("--grace-period='3601': expected a duration of more than 0 and at most 3600 s"),
            std::string::npos)
      << m;
  // Durations that would overflow the clock's nanoseconds end the job at once: refused instead
  // (issue 27), whatever the flag.
  for (const char* flag : {"--timeout", "--restart-window", "--grow-after", "--restart-delay"}) {
    for (const char* bad : {"1e16", "inf", "2592001", "1e300"}) {
      m = usageErrorOf({flag, bad, "p"});
      EXPECT_NE(m.find(std::string(flag) + "='" + bad + "': expected a duration"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("at most 2592000 s (30 days)"), std::string::npos) << m;
    }
  }
}

TEST(XrunOptions, ShellWords) {
  EXPECT_EQ(splitShellWords("  a  b\tc "), (Args{"a", "b", "c"}));
  EXPECT_EQ(splitShellWords("'a b' \"c \\\"d\\\"\" e\\ f"), (Args{"a b", "c \"d\"", "e f"}));
  EXPECT_EQ(splitShellWords(""), Args{});
  EXPECT_EQ(splitShellWords("''"), (Args{""}));
  EXPECT_THROW(splitShellWords("'open"), UsageError);
  EXPECT_EQ(shellQuote("plain-word_1.x=y"), "plain-word_1.x=y");
  EXPECT_EQ(shellQuote("a b"), "'a b'");
  EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(shellQuote(""), "''");
}

}  // namespace
}  // namespace xtrain::launcher
