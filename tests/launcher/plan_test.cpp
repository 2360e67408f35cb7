// Topology planning, the environment contract and the dry-run commands, on the library (no
// processes).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "launcher/environment.hpp"
#include "launcher/topology.hpp"
#include "launcher/xrun.hpp"

namespace xtrain::launcher {
namespace {

std::map<std::string, std::string> asMap(const EnvList& env) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : env) m[k] = v;
  return m;
}

std::string usageErrorOf(const TopologyRequest& r) {
  try {
    planTopology(r);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return {};
}

EnvLookup lookupFrom(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(XrunTopology, InstancesGetDisjointAlignedIpuRanges) {
  for (int n : {1, 2, 4, 8}) {
    for (int l : {1, 2}) {
      for (int k : {1, 2, 4}) {
        TopologyRequest r;
        r.numInstances = n;
        r.numReplicas = n * l;
        r.ipusPerReplica = k;
        Topology t = planTopology(r);
        ASSERT_EQ(t.instances.size(), static_cast<size_t>(n));
        EXPECT_EQ(t.numLocalReplicas, l);
        std::set<int> seen;
        for (const auto& p : t.instances) {
          EXPECT_EQ(p.replicaOffset, p.index * l);
          EXPECT_EQ(p.localIndex, p.index);
          EXPECT_EQ(p.host, "localhost");
          EXPECT_EQ(p.firstIpu, p.index * l * k);
          EXPECT_EQ(p.numIpus, l * k);
          EXPECT_EQ(p.firstIpu % k, 0);  // each replica's device is an aligned range
          for (int ipu = p.firstIpu; ipu < p.firstIpu + p.numIpus; ++ipu)
            EXPECT_TRUE(seen.insert(ipu).second);
        }
      }
    }
  }
}

TEST(XrunTopology, DefaultReplicasEqualInstances) {
  TopologyRequest r;
  r.numInstances = 3;
  Topology t = planTopology(r);
  EXPECT_EQ(t.numTotalReplicas, 3);
  EXPECT_EQ(t.numLocalReplicas, 1);
}

TEST(XrunTopology, HostsInBlocksAndIpusNumberedPerHost) {
  TopologyRequest r;
  r.numInstances = 4;
  r.numReplicas = 8;
  r.hosts = {"a", "b"};
  Topology t = planTopology(r);
  EXPECT_EQ(t.instancesPerHost, 2);
  EXPECT_EQ(t.instances[1].host, "a");
  EXPECT_EQ(t.instances[2].host, "b");
  EXPECT_EQ(t.instances[2].localIndex, 0);
  EXPECT_EQ(t.instances[2].firstIpu, 0);
  EXPECT_EQ(t.instances[3].firstIpu, 2);
  EXPECT_EQ(t.instances[3].replicaOffset, 6);
}

TEST(XrunTopology, ImpossibleLayoutsAreRefusedWithAlternatives) {
  TopologyRequest r;
  r.numInstances = 3;
  r.numReplicas = 4;
  std::string m = usageErrorOf(r);
  EXPECT_NE(m.find("cannot be split evenly over 3 instances"), std::string::npos) << m;
  EXPECT_NE(m.find("--num-replicas 3 or 6"), std::string::npos) << m;
  EXPECT_NE(m.find("-n one of 1, 2, 4"), std::string::npos) << m;

  r = TopologyRequest{};
  r.numInstances = 8;
  r.numReplicas = 16;
  r.ipusPerReplica = 8;  // 128 IPUs
  m = usageErrorOf(r);
  EXPECT_NE(m.find("needs 128 simulated IPUs per host"), std::string::npos) << m;
  EXPECT_NE(m.find("pool has 64"), std::string::npos) << m;
  EXPECT_NE(m.find("at most 8 replicas of 8 IPUs"), std::string::npos) << m;

  // Replicas of several IPUs share one device per instance, which holds a power of two IPUs; with
  // one IPU per replica three local replicas stay allowed.
  r = TopologyRequest{};
  r.numInstances = 2;
  r.numReplicas = 6;
  r.ipusPerReplica = 2;
  m = usageErrorOf(r);
  EXPECT_NE(m.find("--ipus-per-replica 2 with 3 replicas per instance"), std::string::npos) << m;
  EXPECT_NE(m.find("device of 6 IPUs"), std::string::npos) << m;
  EXPECT_NE(m.find("use --num-replicas 4 or 8"), std::string::npos) << m;
  EXPECT_NE(m.find("-n 6"), std::string::npos) << m;
  r.ipusPerReplica = 1;
  EXPECT_EQ(planTopology(r).numLocalReplicas, 3);

  r = TopologyRequest{};
  r.ipusPerReplica = 3;
  m = usageErrorOf(r);
  EXPECT_NE(m.find("not a power of two"), std::string::npos) << m;
  EXPECT_NE(m.find("use 2 or 4"), std::string::npos) << m;

  r = TopologyRequest{};
  r.numInstances = 3;
  r.hosts = {"a", "b"};
  m = usageErrorOf(r);
  EXPECT_NE(m.find("spread evenly over 2 hosts"), std::string::npos) << m;
}

TEST(XrunTopology, PoolSizeFromEnvironment) {
  EXPECT_EQ(poolSizeFromEnvironment(nullptr), 64);
  EXPECT_EQ(poolSizeFromEnvironment(""), 64);
  EXPECT_EQ(poolSizeFromEnvironment("8"), 8);
  EXPECT_THROW(poolSizeFromEnvironment("eight"), UsageError);
  EXPECT_THROW(poolSizeFromEnvironment("0"), UsageError);
  // xrun reads it as the library does: the same syntax and bound (it used to take " 8" and up to
  // 2^20 IPUs the library then refused).
  EXPECT_EQ(poolSizeFromEnvironment("65536"), 65536);
  for (const char* bad : {" 8", "8 ", "+8", "0x8", "65537", "1048576"}) {
    try {
      poolSizeFromEnvironment(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("XTRAIN_NUM_IPUS='") + bad +
                                           "': expected a whole number from 1 to 65536"),
                std::string::npos)
          << e.what();
    }
  }

  TopologyRequest r;
  r.numInstances = 4;
  r.numReplicas = 16;
  r.poolSize = 8;
  EXPECT_THROW(planTopology(r), UsageError);
  r.numReplicas = 8;
  EXPECT_NO_THROW(planTopology(r));
}

TEST(XrunTopology, DescribeAndIpuIds) {
  EXPECT_EQ(formatIpuIds(3, 1), "3");
  EXPECT_EQ(formatIpuIds(4, 4), "4-7");
  TopologyRequest r;
  r.numInstances = 2;
  r.numReplicas = 4;
  std::string text = describeTopology(planTopology(r));
  EXPECT_NE(text.find("2 instances x 2 local replicas = 4 replicas"), std::string::npos) << text;
  EXPECT_NE(text.find("2-3"), std::string::npos) << text;
}

TEST(XrunEnvironment, ContractPerInstanceMatchesPopDist) {
  TopologyRequest r;
  r.numInstances = 2;
  r.numReplicas = 4;
  r.ipusPerReplica = 2;
  Topology t = planTopology(r);
  JobInfo job{"job-1", "/tmp/xrun-job-1", "shm"};
  auto e = asMap(instanceEnvironment(t, 1, job));
  EXPECT_EQ(e["XTRAIN_JOB_ID"], "job-1");
  EXPECT_EQ(e["XTRAIN_NUM_INSTANCES"], "2");
  EXPECT_EQ(e["XTRAIN_INSTANCE_INDEX"], "1");
  EXPECT_EQ(e["XTRAIN_LOCAL_INSTANCE_INDEX"], "1");
  EXPECT_EQ(e["XTRAIN_NUM_LOCAL_REPLICAS"], "2");
  EXPECT_EQ(e["XTRAIN_NUM_TOTAL_REPLICAS"], "4");
  EXPECT_EQ(e["XTRAIN_REPLICA_INDEX_OFFSET"], "2");
  EXPECT_EQ(e["XTRAIN_NUM_IPUS_PER_REPLICA"], "2");
  EXPECT_EQ(e["XTRAIN_IPU_IDS"], "4-7");
  EXPECT_EQ(e["XTRAIN_COMM_BACKEND"], "shm");
  EXPECT_EQ(e["XTRAIN_RENDEZVOUS_DIR"], "/tmp/xrun-job-1");
  EXPECT_EQ(e["POPDIST_NUM_TOTAL_REPLICAS"], "4");
  EXPECT_EQ(e["POPDIST_NUM_IPUS_PER_REPLICA"], "2");
  EXPECT_EQ(e["POPDIST_NUM_LOCAL_REPLICAS"], "2");
  EXPECT_EQ(e["POPDIST_UNIFORM_REPLICAS_PER_INSTANCE"], "1");
  EXPECT_EQ(e["POPDIST_REPLICA_INDEX_OFFSET"], "2");
  EXPECT_EQ(e["POPDIST_LOCAL_INSTANCE_INDEX"], "1");
  // The shrinking variables only with --min-instances; XTRAIN_JOB_SECRET is passed apart (never on
  // a line).
  EXPECT_EQ(e.count("XTRAIN_ORIGINAL_NUM_INSTANCES"), 0u);
  EXPECT_EQ(e.count("XTRAIN_JOB_SECRET"), 0u);
  EXPECT_EQ(e.count("XTRAIN_CHECKPOINT_DIR_SEEN"), 0u);  // restarts only
  EXPECT_EQ(e.size() + 4, contractVariableNames().size());
  // Section 7: instance index = offset / L, instances = total / L.
  EXPECT_EQ(
      std::stoi(e["POPDIST_REPLICA_INDEX_OFFSET"]) / std::stoi(e["POPDIST_NUM_LOCAL_REPLICAS"]), 1);

  // The common part is the same for every instance.
  auto common = asMap(commonEnvironment(t, job));
  for (const auto& [k, v] : common) EXPECT_EQ(e[k], v) << k;
  EXPECT_EQ(common.count("XTRAIN_INSTANCE_INDEX"), 0u);

  job.originalNumInstances = 4;
  job.keepGlobalBatch = "accumulation";
  auto shrinking = asMap(instanceEnvironment(t, 1, job));
  EXPECT_EQ(shrinking["XTRAIN_ORIGINAL_NUM_INSTANCES"], "4");
  EXPECT_EQ(shrinking["XTRAIN_KEEP_GLOBAL_BATCH"], "accumulation");
  job.restartCount = 1;
  job.checkpointDirSeen = "0";
  shrinking = asMap(instanceEnvironment(t, 1, job));
  EXPECT_EQ(shrinking["XTRAIN_CHECKPOINT_DIR_SEEN"], "0");
  EXPECT_EQ(asMap(commonEnvironment(t, job))["XTRAIN_CHECKPOINT_DIR_SEEN"], "0");
  // Every contract variable now but XTRAIN_JOB_SECRET (passed apart).
  EXPECT_EQ(shrinking.size() + 1, contractVariableNames().size());
}

TEST(XrunEnvironment, JobIdsAreUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(ids.insert(makeJobId()).second);
}

TEST(XrunEnvironment, UserVariablesAndMerging) {
  auto user = resolveUserEnvironment(
      {{"A", std::string("1")}, {"HOME_X", std::nullopt}, {"UNSET", std::nullopt}},
      lookupFrom({{"HOME_X", "/h"}}));
  ASSERT_EQ(user.size(), 2u);
  EXPECT_EQ(user[1], (std::pair<std::string, std::string>("HOME_X", "/h")));

  try {
    resolveUserEnvironment({{"XTRAIN_IPU_IDS", std::string("0")}}, lookupFrom({}));
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("xrun sets XTRAIN_IPU_IDS"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(
      resolveUserEnvironment({{"POPDIST_NUM_TOTAL_REPLICAS", std::string("2")}}, lookupFrom({})),
      UsageError);
  try {
    resolveUserEnvironment({{"XTRAIN_JOB_SECRET", std::string("00")}}, lookupFrom({}));
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("-x XTRAIN_JOB_SECRET: xrun draws a new secret for every "
                                         "job"),
              std::string::npos)
        << e.what();
  }
  // A stale secret in xrun's own environment never reaches the instances.
  EXPECT_EQ(buildEnvp({"XTRAIN_JOB_SECRET=stale", "A=0"}, {}, {}),
            (std::vector<std::string>{"A=0"}));

  // Stale contract variables in xrun's own environment are dropped; -x beats inherited; contract
  // beats all.
  auto envp = buildEnvp({"PATH=/bin", "XTRAIN_INSTANCE_INDEX=9", "XTRAIN_STALE_OTHER=1", "A=0"},
                        {{"A", "1"}}, {{"XTRAIN_INSTANCE_INDEX", "0"}});
  EXPECT_EQ(envp, (std::vector<std::string>{"PATH=/bin", "XTRAIN_STALE_OTHER=1", "A=1",
                                            "XTRAIN_INSTANCE_INDEX=0"}));
}

TEST(XrunEnvironment, ResolveProgram) {
  EXPECT_EQ(resolveProgram("sh", "/nonexistent:/bin:/usr/bin"), "/bin/sh");
  try {
    resolveProgram("definitely-not-a-program-xyz", "/bin");
    ADD_FAILURE();
  } catch (const ProgramError& e) {
    EXPECT_EQ(e.exitCode(), 127);
    EXPECT_NE(std::string(e.what()).find("not found in PATH"), std::string::npos);
  }
  char plain[] = "/tmp/xrun-plain-XXXXXX";
  int fd = ::mkstemp(plain);  // mode 0600: not executable
  ASSERT_GE(fd, 0);
  ::close(fd);
  try {
    resolveProgram(plain, "/bin");
    ADD_FAILURE();
  } catch (const ProgramError& e) {
    EXPECT_EQ(e.exitCode(), 126);
    EXPECT_NE(std::string(e.what()).find("not executable"), std::string::npos);
  }
  ::unlink(plain);
  try {
    resolveProgram("/tmp", "/bin");
    ADD_FAILURE();
  } catch (const ProgramError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos);
  }
}

// srun's MPI plugins, as `srun --mpi=list` would list them (Debian's Slurm 22.05, and none at all).
std::vector<std::string> debianSrunPlugins() {
  return {"pmix", "none", "cray_shasta", "pmi2"};
}
std::vector<std::string> noSrunPlugins() {
  return {};
}

std::string thisHostShortName() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  const std::string host = name;
  return host.substr(0, host.find('.'));
}

bool hasWord(const std::vector<std::string>& words, const std::string& w) {
  return std::find(words.begin(), words.end(), w) != words.end();
}

TEST(XrunPlan, SrunEngineChoosesHowInstancesMeet) {
  // salloc on this host: no SLURMD_NODENAME, but the one node of the allocation is this host, so
  // the instances meet in the job's directory, with no MPI plugin.
  Options o = parseOptions({"-n", "4", "prog"});
  auto salloc = [](std::map<std::string, std::string> extra) {
    std::map<std::string, std::string> vars{{"SLURM_JOB_ID", "9"},
                                            {"SLURM_JOB_NUM_NODES", "1"},
                                            {"SLURM_JOB_NODELIST", thisHostShortName()}};
    for (auto& [k, v] : extra) vars[k] = v;
    return lookupFrom(vars);
  };
  JobPlan plan = makePlan(o, salloc({}), debianSrunPlugins);
  EXPECT_EQ(plan.engine, Engine::Srun);
  EXPECT_FALSE(plan.job.rendezvousDir.empty());
  EXPECT_EQ(plan.srunMpi, "");
  EXPECT_NE(
      plan.rendezvousNote.find("meet in the job's rendezvous directory " + plan.job.rendezvousDir +
                               " (the allocation is one node, this host)"),
      std::string::npos)
      << plan.rendezvousNote;
  EXPECT_FALSE(hasWord(engineCommand(plan), "--mpi=pmix"));
  // The node may be shared with other jobs: xrun picks free IPUs, as for the local engine, and the
  // command gives task i instance i's block.
  ASSERT_TRUE(plan.freePool.has_value());
  plan.topology.instances[1].firstIpu = 6;
  const auto pickWords = engineCommand(plan);
  const bool picks = std::any_of(pickWords.begin(), pickWords.end(), [](const std::string& w) {
    return w.rfind(
               "case $SLURM_PROCID in 0) ipus=0;; 1) ipus=6;; 2) ipus=2;; 3) ipus=3;; esac; "
               "exec env ",
               0) == 0 &&
           w.find("XTRAIN_IPU_IDS=\"$ipus\"") != std::string::npos;
  });
  EXPECT_TRUE(picks);

  // The one node is another host: PMIx, which srun offers.
  plan = makePlan(o, salloc({{"SLURM_JOB_NODELIST", "node-elsewhere"}}), debianSrunPlugins);
  EXPECT_TRUE(plan.job.rendezvousDir.empty());
  EXPECT_FALSE(plan.freePool.has_value());
  EXPECT_EQ(plan.srunMpi, "pmix");
  auto words = engineCommand(plan);
  EXPECT_TRUE(hasWord(words, "--mpi=pmix"));
  EXPECT_LT(std::find(words.begin(), words.end(), "--mpi=pmix") - words.begin(),
            std::find(words.begin(), words.end(), "env") - words.begin());
  EXPECT_NE(
      plan.rendezvousNote.find("meet over PMIx (srun --mpi=pmix), since the allocation's node "
                               "(node-elsewhere) is not this host"),
      std::string::npos)
      << plan.rendezvousNote;

  // Several nodes: PMIx too.
  plan = makePlan(o, salloc({{"SLURM_JOB_NUM_NODES", "2"}, {"SLURMD_NODENAME", "n1"}}),
                  debianSrunPlugins);
  EXPECT_EQ(plan.srunMpi, "pmix");
  EXPECT_NE(plan.rendezvousNote.find("the allocation has 2 nodes"), std::string::npos);

  // The user's plugin is kept, from --mpi-global-args or SLURM_MPI_TYPE: xrun adds none.
  Options pmi2 = parseOptions({"-n", "4", "--mpi-global-args", "--mpi=pmi2", "prog"});
  plan = makePlan(pmi2, salloc({{"SLURM_JOB_NUM_NODES", "2"}}), debianSrunPlugins);
  EXPECT_EQ(plan.srunMpi, "");
  words = engineCommand(plan);
  EXPECT_EQ(std::count_if(words.begin(), words.end(),
                          [](const std::string& w) { return w.rfind("--mpi", 0) == 0; }),
            1);
  EXPECT_NE(plan.rendezvousNote.find("srun's MPI plugin 'pmi2' (--mpi=pmi2 in --mpi-global-args)"),
            std::string::npos)
      << plan.rendezvousNote;
  plan = makePlan(o, salloc({{"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_MPI_TYPE", "pmix_v4"}}),
                  debianSrunPlugins);
  EXPECT_EQ(plan.srunMpi, "");
  EXPECT_NE(plan.rendezvousNote.find("(SLURM_MPI_TYPE=pmix_v4)"), std::string::npos);
  // On one node here, the user's plugin does not stop the directory.
  plan = makePlan(pmi2, salloc({}), debianSrunPlugins);
  EXPECT_FALSE(plan.job.rendezvousDir.empty());

  // No way at all: a warning that says what to do.
  plan = makePlan(o, salloc({{"SLURM_JOB_NUM_NODES", "3"}}), noSrunPlugins);
  EXPECT_EQ(plan.srunMpi, "");
  EXPECT_TRUE(plan.job.rendezvousDir.empty());
  EXPECT_EQ(plan.rendezvousNote.rfind("warning: the allocation has 3 nodes and this srun offers no "
                                      "PMIx plugin (srun --mpi=list), so the instances have no way "
                                      "to meet",
                                      0),
            0u)
      << plan.rendezvousNote;

  // --comm-backend mpi needs one MPI job even on one node: PMIx as well as the directory.
  Options mpi = parseOptions({"-n", "4", "--comm-backend", "mpi", "prog"});
  plan = makePlan(mpi, salloc({}), debianSrunPlugins);
  EXPECT_FALSE(plan.job.rendezvousDir.empty());
  EXPECT_EQ(plan.srunMpi, "pmix");

  // The probe is asked only when needed; other engines never ask.
  int asked = 0;
  auto counting = [&] {
    ++asked;
    return debianSrunPlugins();
  };
  makePlan(o, salloc({}), counting);
  makePlan(parseOptions({"-n", "2", "--engine", "local", "prog"}), salloc({}), counting);
  EXPECT_EQ(asked, 0);
}

TEST(XrunPlan, ParsesSrunsListOfMpiPlugins) {
  // Slurm 22.05's `srun --mpi=list`, verbatim.
  EXPECT_EQ(parseSrunMpiList("MPI plugin types are...\n\tpmix\n\tnone\n\tcray_shasta\n\tpmi2\n"
                             "specific pmix plugin versions available: pmix_v4\n"),
            debianSrunPlugins());
  // srun without a configuration says so and lists nothing.
  EXPECT_TRUE(
      parseSrunMpiList("srun: fatal: Could not establish a configuration source\n").empty());
  EXPECT_TRUE(parseSrunMpiList("").empty());
}

TEST(XrunPlan, EngineResolution) {
  Options o;
  EXPECT_EQ(resolveEngine(o, {}, lookupFrom({})), Engine::Local);
  EXPECT_EQ(resolveEngine(o, {"localhost"}, lookupFrom({})), Engine::Local);
  EXPECT_EQ(resolveEngine(o, {"node7"}, lookupFrom({})), Engine::Mpirun);
  EXPECT_EQ(resolveEngine(o, {}, lookupFrom({{"SLURM_JOB_ID", "42"}})), Engine::Srun);
  o.engine = Engine::Local;
  EXPECT_EQ(resolveEngine(o, {}, lookupFrom({{"SLURM_JOB_ID", "42"}})), Engine::Local);
  EXPECT_THROW(resolveEngine(o, {"node7"}, lookupFrom({})), UsageError);
}

TEST(XrunPlan, PoolSizeFromDashXOrEnvironment) {
  Options o = parseOptions({"-n", "4", "--num-replicas", "16", "prog"});
  EXPECT_THROW(makePlan(o, lookupFrom({{"XTRAIN_NUM_IPUS", "8"}})), UsageError);
  EXPECT_NO_THROW(makePlan(o, lookupFrom({})));
  o = parseOptions({"-n", "4", "--num-replicas", "16", "-x", "XTRAIN_NUM_IPUS=8", "prog"});
  EXPECT_THROW(makePlan(o, lookupFrom({})), UsageError);
}

TEST(XrunPlan, DryRunCommands) {
  Options o = parseOptions({"-n", "2", "-x", "A=b c", "prog", "arg 1"});
  JobPlan plan = makePlan(o, lookupFrom({{"TMPDIR", "/scratch"}}));
  EXPECT_EQ(plan.job.rendezvousDir, "/scratch/xrun-" + plan.job.jobId);
  auto lines = plannedCommands(plan);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].rfind("env 'A=b c' XTRAIN_JOB_ID=", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("XTRAIN_INSTANCE_INDEX=1 "), std::string::npos);
  EXPECT_NE(lines[1].find(" prog 'arg 1'"), std::string::npos);

  o = parseOptions({"-n", "2", "-H", "h1,h2", "--mpi-global-args", "--oversubscribe",
                    "--mpi-local-args", "-q", "prog"});
  plan = makePlan(o, lookupFrom({}));
  EXPECT_EQ(plan.engine, Engine::Mpirun);
  lines = plannedCommands(plan);
  ASSERT_EQ(lines.size(), 1u);
  const std::string root = plan.runAsRoot ? "--allow-run-as-root " : "";
  const std::string keepalive =
      "--mca oob_tcp_keepalive_time 10 --mca oob_tcp_keepalive_intvl 5 --mca "
      "oob_tcp_keepalive_probes 3 ";
  EXPECT_EQ(lines[0].rfind("mpirun --tag-output --bind-to none " + root + keepalive +
                               "--oversubscribe -np 1 -H h1:1 -q -x XTRAIN_JOB_SECRET env ",
                           0),
            0u)
      << lines[0];
  EXPECT_NE(lines[0].find(" prog : -np 1 -H h2:1 -q -x XTRAIN_JOB_SECRET env "), std::string::npos)
      << lines[0];
  // The job's secret: 64 hex digits, named on mpirun's line, its value never.
  EXPECT_EQ(plan.job.secret.size(), 64u);
  EXPECT_EQ(plan.job.secret.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(lines[0].find(plan.job.secret), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("XTRAIN_INSTANCE_INDEX=1"), std::string::npos);
  EXPECT_EQ(plan.job.rendezvousDir, "");  // other hosts: not exported
  EXPECT_EQ(lines[0].find("XTRAIN_RENDEZVOUS_DIR"), std::string::npos) << lines[0];

  o = parseOptions({"-n", "4", "--num-replicas", "8", "--engine", "srun", "prog"});
  lines = plannedCommands(makePlan(o, lookupFrom({}), noSrunPlugins));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("srun --ntasks=4 --ntasks-per-node=4 --kill-on-bad-exit=1 --label "
                           "--disable-status env ",
                           0),
            0u)
      << lines[0];
  EXPECT_NE(lines[0].find("XTRAIN_REPLICA_INDEX_OFFSET=\"$((SLURM_PROCID*2))\""), std::string::npos)
      << lines[0];
}

TEST(XrunPlan, EngineCommandsAndRendezvous) {
  // mpirun on this host only: slots per host = its instances, the rendezvous directory is kept,
  // and the thread defaults (this host's cores are known) are in every app context.
  Options o = parseOptions({"-n", "3", "--engine", "mpirun", "prog"});
  JobPlan plan = makePlan(o, lookupFrom({}));
  EXPECT_FALSE(plan.job.rendezvousDir.empty());
  auto words = engineCommand(plan);
  EXPECT_EQ(std::count(words.begin(), words.end(), "localhost:3"), 3);
  EXPECT_EQ(std::count(words.begin(), words.end(), "oob_tcp_keepalive_time"), 0);
  EXPECT_EQ(std::count(words.begin(), words.end(), ":"), 2);
  EXPECT_EQ(std::count(words.begin(), words.end(), "OMP_WAIT_POLICY=PASSIVE"), 3);
  EXPECT_EQ(std::count_if(words.begin(), words.end(),
                          [](const std::string& w) { return w.rfind("OMP_NUM_THREADS=", 0) == 0; }),
            3);
  EXPECT_EQ(
      std::count_if(words.begin(), words.end(),
                    [](const std::string& w) { return w.rfind("XTRAIN_RENDEZVOUS_DIR=", 0) == 0; }),
      3);
  EXPECT_EQ(std::count(words.begin(), words.end(), "--allow-run-as-root"),
            ::geteuid() == 0 ? 1 : 0);

  // Two hosts, two instances each: slots 2 per host; other hosts' cores are unknown.
  o = parseOptions({"-n", "4", "-H", "nodeA,nodeB", "prog"});
  plan = makePlan(o, lookupFrom({{"OMP_WAIT_POLICY", "ACTIVE"}}));
  words = engineCommand(plan);
  EXPECT_EQ(std::count(words.begin(), words.end(), "nodeA:2"), 2);
  EXPECT_EQ(std::count(words.begin(), words.end(), "nodeB:2"), 2);
  for (const auto& w : words) {
    EXPECT_NE(w.rfind("OMP_", 0), 0u) << w;
    EXPECT_NE(w.rfind("XTRAIN_RENDEZVOUS_DIR=", 0), 0u) << w;
  }
  // Other hosts: mpirun notices a lost host within seconds (its daemons' TCP keepalive), unless
  // the user set the keepalive (in --mpi-global-args or OMPI_MCA_ variables).
  auto after = [&](const std::string& name) {
    auto it = std::find(words.begin(), words.end(), name);
    return it == words.end() || it + 1 == words.end() ? std::string() : *(it + 1);
  };
  EXPECT_EQ(after("oob_tcp_keepalive_time"), "10");
  EXPECT_EQ(after("oob_tcp_keepalive_intvl"), "5");
  EXPECT_EQ(after("oob_tcp_keepalive_probes"), "3");
  o = parseOptions({"-n", "4", "-H", "nodeA,nodeB", "--mpi-global-args",
                    "--mca oob_tcp_keepalive_time 60", "prog"});
  words = engineCommand(makePlan(o, lookupFrom({})));
  EXPECT_EQ(after("oob_tcp_keepalive_time"), "60");
  EXPECT_EQ(after("oob_tcp_keepalive_probes"), "");
  o = parseOptions({"-n", "4", "-H", "nodeA,nodeB", "prog"});
  words = engineCommand(makePlan(o, lookupFrom({{"OMPI_MCA_oob_tcp_keepalive_probes", "9"}})));
  EXPECT_EQ(after("oob_tcp_keepalive_time"), "");

  // srun: the directory only in a one-node allocation xrun runs in.
  o = parseOptions({"-n", "2", "prog"});
  plan = makePlan(o, lookupFrom({{"SLURM_JOB_ID", "7"}}), noSrunPlugins);
  EXPECT_EQ(plan.engine, Engine::Srun);
  EXPECT_TRUE(plan.job.rendezvousDir.empty());
  plan = makePlan(o, lookupFrom({{"SLURM_JOB_ID", "7"}, {"SLURM_NNODES", "1"}}), noSrunPlugins);
  EXPECT_TRUE(plan.job.rendezvousDir.empty());
  plan = makePlan(
      o,
      lookupFrom({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NUM_NODES", "1"}, {"SLURMD_NODENAME", "n1"}}),
      noSrunPlugins);
  EXPECT_FALSE(plan.job.rendezvousDir.empty());
  words = engineCommand(plan);
  EXPECT_EQ(
      std::count_if(words.begin(), words.end(),
                    [](const std::string& w) { return w.rfind("XTRAIN_RENDEZVOUS_DIR=", 0) == 0; }),
      1);
  plan = makePlan(
      o,
      lookupFrom({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NUM_NODES", "2"}, {"SLURMD_NODENAME", "n1"}}),
      noSrunPlugins);
  EXPECT_TRUE(plan.job.rendezvousDir.empty());

  // The contract's names still include XTRAIN_RENDEZVOUS_DIR (-x may not set it).
  const auto& names = contractVariableNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "XTRAIN_RENDEZVOUS_DIR"), names.end());
}

// Instances on other hosts do not inherit xrun's environment: the engines carry xrun's
// XTRAIN_COMM_TIMEOUT on their command line, so every instance has the same collective timeout
// (a -x value wins); the local engine's instances inherit it and need nothing.
TEST(XrunPlan, EnginesCarryTheCollectiveTimeoutToOtherHosts) {
  auto count = [](const std::vector<std::string>& words, const std::string& w) {
    return std::count(words.begin(), words.end(), w);
  };
  Options o = parseOptions({"-n", "2", "-H", "node-a,node-b", "--engine", "mpirun", "prog"});
  JobPlan plan = makePlan(o, lookupFrom({{"XTRAIN_COMM_TIMEOUT", "45"}}), debianSrunPlugins);
  EXPECT_EQ(count(engineCommand(plan), "XTRAIN_COMM_TIMEOUT=45"), 2);
  plan = makePlan(o, lookupFrom({}), debianSrunPlugins);
  for (const auto& w : engineCommand(plan))
    EXPECT_EQ(w.find("XTRAIN_COMM_TIMEOUT"), std::string::npos) << w;
  Options dashX = parseOptions({"-n", "2", "-H", "node-a,node-b", "--engine", "mpirun", "-x",
                                "XTRAIN_COMM_TIMEOUT=9", "prog"});
  plan = makePlan(dashX, lookupFrom({{"XTRAIN_COMM_TIMEOUT", "45"}}), debianSrunPlugins);
  const auto words = engineCommand(plan);
  EXPECT_EQ(count(words, "XTRAIN_COMM_TIMEOUT=9"), 2);
  EXPECT_EQ(count(words, "XTRAIN_COMM_TIMEOUT=45"), 0);
  plan = makePlan(parseOptions({"-n", "2", "prog"}), lookupFrom({{"XTRAIN_COMM_TIMEOUT", "45"}}),
                  debianSrunPlugins);
  EXPECT_TRUE(plan.userEnv.empty());
}

}  // namespace
}  // namespace xtrain::launcher
