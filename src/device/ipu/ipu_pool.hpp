// The host's pool of simulated IPUs: its configuration from the environment, Graphcore's device-id
// arithmetic, and the per-IPU OS locks that make acquisition exclusive across processes. Internal.
//
// Locks: one file per IPU, <dir>/ipu<N>.lock, locked with an open-file-description lock (fcntl
// F_OFD_SETLK; flock where OFD locks do not exist). Such a lock belongs to the open file, not the
// process, so two IpuLocks conflict even within one process, and the kernel drops it when the last
// descriptor closes, including when the process dies. Lock files are never deleted (deleting one
// would let two holders lock different files of the same name).
//
// Reservations: <dir>/ipu<N>.reserved, locked the same way by a launcher (xrun) for the whole job,
// from before it chooses the IPUs until the job ends, so that a second launcher, or a process
// picking a free device without XTRAIN_IPU_IDS, does not take IPUs whose instances have not
// attached yet. A process given XTRAIN_IPU_IDS (the job's own instances) ignores reservations.
#pragma once
#pragma GCC visibility push(default)

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xtrain::device {

inline constexpr int kDefaultPoolSize = 64;
inline constexpr int kMaxPoolSize = 1 << 16;

// The pool as the environment describes it now (XTRAIN_NUM_IPUS, XTRAIN_IPU_LOCK_DIR,
// XTRAIN_IPU_IDS).
struct PoolConfig {
  int numIpus = kDefaultPoolSize;
  std::string lockDir;
  bool lockDirIsDefault = true;
  std::optional<std::vector<int>>
      allowedIpus;          // sorted, unique; nullopt when XTRAIN_IPU_IDS is unset
  std::string allowedText;  // XTRAIN_IPU_IDS as given, for messages
};

// Throws xtrain::error naming the variable when one is malformed.
PoolConfig readPoolConfig();

// "4,5", "4-7", "0-3,8" -> sorted unique IPU ids, each < poolSize. Throws xtrain::error naming
// `what`.
std::vector<int> parseIpuIdList(std::string_view text, int poolSize, std::string_view what);

// One pool device: `numIpus` IPUs starting at `firstIpu`.
struct PoolDevice {
  int id = 0;
  int numIpus = 1;
  int firstIpu = 0;
  std::vector<int> ipus() const;
};

// Number of device ids of a pool of poolSize IPUs (sizes 1, 2, 4, ... up to poolSize).
int numPoolDeviceIds(int poolSize);
// Devices of numIpus IPUs (0: every size), by id.
std::vector<PoolDevice> poolDevices(int poolSize, int numIpus);
// The device with this id; nullopt when it is not a valid id.
std::optional<PoolDevice> poolDeviceById(int poolSize, int id);

std::string lockFilePath(const std::string& dir, int ipu);
std::string reservationFilePath(const std::string& dir, int ipu);

// Creates the lock directory if needed (mode 0700). The default directory must be owned by this
// user.
void ensureLockDir(const PoolConfig& config);

// One IPU's lock, held while the object lives.
class IpuLock {
 public:
  // Takes IPU `ipu`'s lock without waiting; nullptr when it is held elsewhere. Throws xtrain::error
  // when the lock file cannot be opened.
  static std::unique_ptr<IpuLock> tryAcquire(const std::string& dir, int ipu);
  // Takes IPU `ipu`'s reservation without waiting, recording `holder` ("xrun job J (process P)")
  // for other processes' messages; nullptr when another holds it.
  static std::unique_ptr<IpuLock> tryReserve(const std::string& dir, int ipu,
                                             const std::string& holder);
  ~IpuLock();
  IpuLock(const IpuLock&) = delete;
  IpuLock& operator=(const IpuLock&) = delete;

 private:
  explicit IpuLock(int fd) : fd_(fd) {}
  int fd_;
};

// nullopt when IPU `ipu` is free now; otherwise who holds it ("process 1234").
std::optional<std::string> ipuHolder(const std::string& dir, int ipu);
// nullopt when nobody reserves IPU `ipu`; otherwise who does ("xrun job J (process P)").
std::optional<std::string> ipuReserver(const std::string& dir, int ipu);

// "IPU 0 is held by process 1234; IPU 1 is reserved by xrun job J (process 99)" for the held or
// reserved ones among `ipus`; "" if none. At most maxItems are named; the rest are counted.
std::string describeHolders(const std::string& dir, const std::vector<int>& ipus,
                            size_t maxItems = 8);

}  // namespace xtrain::device

#pragma GCC visibility pop
