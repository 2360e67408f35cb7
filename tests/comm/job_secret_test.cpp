// The job's secret (src/comm/job_secret.hpp): SHA-256 and HMAC-SHA-256 against their published test
// vectors, XTRAIN_JOB_SECRET's validation, and the gloo backend's authentication of its
// connections: ranks with the same secret form a group, a rank with another secret (a process that
// does not know the job's secret) is refused by every peer.
#include "comm/job_secret.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "comm/backend.hpp"
#include "comm/backends/shm/segment.hpp"
#include "comm/store.hpp"
#include "comm_test_util.hpp"
#include "testing/scratch_dir.hpp"

namespace xtrain::comm {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string hexOf(const std::array<uint8_t, 32>& digest) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

TEST(JobSecret, Sha256MatchesFips180Vectors) {
  EXPECT_EQ(hexOf(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hexOf(sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hexOf(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hexOf(sha256(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(JobSecret, HmacSha256MatchesRfc4231Vectors) {
  EXPECT_EQ(hexOf(hmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than the block is hashed first.
  EXPECT_EQ(hexOf(hmacSha256(std::string(131, '\xaa'),
                             "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(JobSecret, RandomHexAndComparison) {
  const std::string a = randomHex(16), b = randomHex(16);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_TRUE(equalInConstantTime(a, a));
  EXPECT_FALSE(equalInConstantTime(a, b));
  EXPECT_FALSE(equalInConstantTime(a, a.substr(1)));
}

TEST(JobSecret, EnvironmentVariableIsValidated) {
  ::unsetenv(kJobSecretVariable);
  EXPECT_EQ(jobSecretFromEnvironment(), std::nullopt);
  ::setenv(kJobSecretVariable, "0123abcd", 1);
  try {
    (void)jobSecretFromEnvironment();
    ADD_FAILURE() << "a short secret was accepted";
  } catch (const error& e) {
    EXPECT_TRUE(contains(e.what(), "XTRAIN_JOB_SECRET must be at least 32 hexadecimal"))
        << e.what();
  }
  ::setenv(kJobSecretVariable, std::string(64, 'a').c_str(), 1);
  EXPECT_EQ(jobSecretFromEnvironment(), std::string(64, 'a'));
  ::unsetenv(kJobSecretVariable);
}

class GlooAuthentication : public xtrain::testing::ScratchDirTest {
 protected:
  // Runs rank r of a 2-rank gloo group in a child process with XTRAIN_JOB_SECRET = secrets[r];
  // returns each child's exit code: 0 formed the group and summed, 3 refused as unauthenticated.
  std::vector<int> runRanks(const std::vector<std::string>& secrets) {
    std::vector<pid_t> pids;
    for (int r = 0; r < 2; ++r) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        int code = 4;
        try {
          ::setenv(kJobSecretVariable, secrets[static_cast<size_t>(r)].c_str(), 1);
          auto store = std::make_shared<FileStore>(dir_, "auth", Milliseconds(20000));
          auto comm =
              createCommunicator(CommConfig{store, r, 2, "world", Milliseconds(5000)}, "gloo");
          float x = 1.0f + static_cast<float>(r);
          comm->allReduce(viewOf(&x, 1, DataType::FLOAT))->wait(Milliseconds(5000));
          code = x == 3.0f ? 0 : 5;
        } catch (const std::exception& e) {
          code = contains(e.what(), "could not authenticate its connections") ? 3 : 4;
          if (code == 4) std::fprintf(stderr, "rank %d: %s\n", r, e.what());
        }
        ::_exit(code);
      }
      pids.push_back(pid);
    }
    std::vector<int> codes;
    for (pid_t pid : pids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    return codes;
  }
};

TEST_F(GlooAuthentication, RanksWithTheJobsSecretFormTheGroup) {
  const std::string secret = randomHex(32);
  EXPECT_EQ(runRanks({secret, secret}), (std::vector<int>{0, 0}));
}

TEST_F(GlooAuthentication, ARankWithoutTheSecretIsRefusedByItsPeer) {
  EXPECT_EQ(runRanks({randomHex(32), randomHex(32)}), (std::vector<int>{3, 3}));
}

// A segment another user planted under a name the job uses (or one open to others) is refused.
TEST(JobSegments, ASegmentNotOwnedByThisUserOrNot0600IsRefused) {
  const std::string name = "/xtrain-secret-test-" + std::to_string(::getpid());
  {
    auto own = shm::SharedSegment::create(name, 4096);
    auto again = shm::SharedSegment::open(name);  // its own user's, 0600: fine
    EXPECT_EQ(again.size(), 4096u);
  }
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  ASSERT_EQ(::fchmod(fd, 0666), 0);
  try {
    (void)shm::SharedSegment::open(name);
    ADD_FAILURE() << "a segment of mode 0666 was used";
  } catch (const error& e) {
    EXPECT_TRUE(contains(e.what(), "with mode 0666; expected one of yours")) << e.what();
  }
  if (::geteuid() == 0) {  // only root can give a segment away: as planted by user nobody
    ASSERT_EQ(::fchmod(fd, 0600), 0);
    ASSERT_EQ(::fchown(fd, 65534, 65534), 0);
    try {
      (void)shm::SharedSegment::open(name);
      ADD_FAILURE() << "another user's segment was used";
    } catch (const error& e) {
      EXPECT_TRUE(contains(e.what(), "belongs to uid 65534")) << e.what();
    }
  }
  ::close(fd);
  ::shm_unlink(name.c_str());
}

}  // namespace
}  // namespace xtrain::comm
