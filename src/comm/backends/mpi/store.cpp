// The bootstrap store over MPI: rank 0 of MPI_COMM_WORLD holds every value; a service thread on
// rank 0 answers the other ranks' requests, which travel over a duplicate of MPI_COMM_WORLD.
//
// Request (any rank -> 0, tag kTagRequest): op, request id, reply tag, timeout, keys, value, delta.
// Reply (0 -> requester, tag = the request's reply tag): request id, status, number, text. get()
// and wait() park on rank 0 until the keys exist or their timeout passes; the requester waits a
// little longer than that (and gives up with CommTimeoutError if rank 0 never answers).
#include "comm/store.hpp"

#include <atomic>
#include <cstring>
#include <list>
#include <thread>

#include "comm/backends/mpi/mpi.hpp"
#include "comm/backends/mpi/runtime.hpp"
#include "xtrain/logging.hpp"

namespace xtrain::comm::mpi {

namespace {

constexpr int kTagRequest = 21;
constexpr int kFirstReplyTag = 1000;
constexpr int kReplyTags = 30000;  // MPI guarantees tags up to 32767
constexpr Milliseconds kReplyGrace{5000};

enum class StoreOp : uint8_t { Set = 1, Get = 2, Add = 3, Wait = 4, Check = 5, Bye = 6 };
enum class Status : uint8_t { Ok = 0, Timeout = 1, No = 2, Error = 3 };

// ---- serialisation

class Writer {
 public:
  void u8(uint8_t v) { s_.push_back(static_cast<char>(v)); }
  void i64(int64_t v) { s_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(const std::string& v) {
    i64(static_cast<int64_t>(v.size()));
    s_ += v;
  }
  std::string& data() { return s_; }

 private:
  std::string s_;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  uint8_t u8() {
    need(1);
    return static_cast<uint8_t>(s_[pos_++]);
  }
  int64_t i64() {
    need(8);
    int64_t v;
    std::memcpy(&v, s_.data() + pos_, 8);
    pos_ += 8;
    return v;
  }
  std::string str() {
    const int64_t n = i64();
    if (n < 0) throw internal_error("mpi store: malformed message");
    need(static_cast<size_t>(n));
    std::string v = s_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return v;
  }

 private:
  void need(size_t n) const {
    if (pos_ + n > s_.size()) throw internal_error("mpi store: truncated message");
  }
  const std::string& s_;
  size_t pos_ = 0;
};

struct Request {
  StoreOp op = StoreOp::Check;
  int64_t id = 0;
  int replyTag = 0;
  Milliseconds timeout{0};
  std::vector<std::string> keys;  // full keys (job id prefixed)
  std::string value;
  int64_t delta = 0;
};

std::string encode(const Request& r) {
  Writer w;
  w.u8(static_cast<uint8_t>(r.op));
  w.i64(r.id);
  w.i64(r.replyTag);
  w.i64(r.timeout.count());
  w.i64(static_cast<int64_t>(r.keys.size()));
  for (const auto& k : r.keys) w.str(k);
  w.str(r.value);
  w.i64(r.delta);
  return std::move(w.data());
}

Request decode(const std::string& s) {
  Reader rd(s);
  Request r;
  r.op = static_cast<StoreOp>(rd.u8());
  r.id = rd.i64();
  r.replyTag = static_cast<int>(rd.i64());
  r.timeout = Milliseconds(rd.i64());
  const int64_t n = rd.i64();
  for (int64_t i = 0; i < n; ++i) r.keys.push_back(rd.str());
  r.value = rd.str();
  r.delta = rd.i64();
  return r;
}

struct Reply {
  int64_t id = 0;
  Status status = Status::Ok;
  int64_t number = 0;
  std::string text;
};

// Strips "<jobId>/" for messages.
std::vector<std::string> shortKeys(const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  for (const auto& k : keys) {
    const auto slash = k.find('/');
    out.push_back(slash == std::string::npos ? k : k.substr(slash + 1));
  }
  return out;
}

// A message of unknown size from `source` with `tag`, if one is there (never blocks); `from` gets
// its sender.
std::optional<std::string> receive(MPI_Comm comm, int source, int tag, int* from = nullptr) {
  int flag = 0;
  MPI_Message m = MPI_MESSAGE_NULL;
  MPI_Status st;
  {
    MpiLock lock;
    check(MPI_Improbe(source, tag, comm, &flag, &m, &st), "mpi store: MPI_Improbe");
  }
  if (!flag) return std::nullopt;
  int len = 0;
  MPI_Get_count(&st, MPI_CHAR, &len);
  std::string buf(static_cast<size_t>(len), '\0');
  {
    MpiLock lock;
    check(MPI_Mrecv(buf.data(), len, MPI_CHAR, &m, MPI_STATUS_IGNORE), "mpi store: MPI_Mrecv");
  }
  if (from != nullptr) *from = st.MPI_SOURCE;
  return buf;
}

// ---- the process-wide service

class Service {
 public:
  Service(MPI_Comm comm, int rank, int size, Milliseconds timeout)
      : comm_(comm), rank_(rank), size_(size), timeout_(timeout) {
    if (rank_ == 0) thread_ = std::thread([this] { serve(); });
  }

  int rank() const { return rank_; }

  // Called from MPI_Finalize. The other ranks say goodbye (their requests are over); rank 0 keeps
  // serving until every rank did (bounded by the store's timeout: MPI_Finalize waits for every
  // process anyway), then stops its thread. Frees the communicator.
  void shutdown() {
    if (rank_ != 0) {
      Request bye;
      bye.op = StoreOp::Bye;
      const std::string msg = encode(bye);
      MPI_Request send = MPI_REQUEST_NULL;
      {
        MpiLock lock;
        if (MPI_Isend(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, kTagRequest, comm_,
                      &send) != MPI_SUCCESS) {
          send = MPI_REQUEST_NULL;
        }
      }
      completeOrRelease(send, Milliseconds(1000));
    }
    {
      std::lock_guard lock(mu_);
      draining_ = true;
      drainDeadline_ = Clock::now() + timeout_;
    }
    if (thread_.joinable()) thread_.join();
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    MpiLock lock;
    MPI_Comm_free(&comm_);
  }

  bool stopped() {
    std::lock_guard lock(mu_);
    return stopping_ || draining_;
  }

  // ---- local access (rank 0): the values, by full key ("<jobId>/<key>")

  void set(const std::string& key, const std::string& value) { values_.set(key, value); }
  int64_t add(const std::string& key, int64_t delta) { return values_.add(key, delta); }
  // Waits until every key exists; returns the missing ones on timeout.
  std::vector<std::string> waitFor(const std::vector<std::string>& keys, Milliseconds timeout) {
    try {
      values_.wait(keys, timeout);
      return {};
    } catch (const CommTimeoutError&) {
      return missing(keys);
    }
  }
  // The value of a key that exists.
  std::string value(const std::string& key) { return values_.get(key, Milliseconds(0)); }
  bool has(const std::vector<std::string>& keys) { return values_.check(keys); }

  // ---- remote access (ranks other than 0)

  Reply call(Request r, Milliseconds wait) {
    if (stopped()) throw error("mpi store: MPI was finalised");
    r.id = nextId_.fetch_add(1);
    r.replyTag = kFirstReplyTag + static_cast<int>(r.id % kReplyTags);
    const std::string msg = encode(r);
    MPI_Request send = MPI_REQUEST_NULL;
    {
      MpiLock lock;
      check(MPI_Isend(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, kTagRequest, comm_,
                      &send),
            "mpi store: MPI_Isend");
    }
    const auto deadline = Clock::now() + wait;
    // The reply's size is unknown: probe for it, then receive it.
    Backoff backoff(false);
    for (;;) {
      if (auto buf = receive(comm_, 0, r.replyTag)) {
        Reader rd(*buf);
        Reply reply;
        reply.id = rd.i64();
        reply.status = static_cast<Status>(rd.u8());
        reply.number = rd.i64();
        reply.text = rd.str();
        if (reply.id != r.id) continue;  // a late answer to an earlier request that gave up
        completeOrRelease(send, Milliseconds(1000));
        return reply;
      }
      if (!backoff.pause(deadline)) {
        completeOrRelease(send, Milliseconds(1000));
        throw CommTimeoutError(
            "mpi store: no answer from rank 0 within {} ms (rank 0 holds the store of the MPI job; "
            "is it alive and still running?)",
            wait.count());
      }
    }
  }

 private:
  std::vector<std::string> missing(const std::vector<std::string>& keys) {
    std::vector<std::string> out;
    for (const auto& k : keys) {
      if (!values_.check({k})) out.push_back(k);
    }
    return out;
  }

  struct Parked {
    int source;
    Request request;
    Clock::time_point deadline;
  };
  struct Outgoing {
    std::string data;
    MPI_Request request = MPI_REQUEST_NULL;
  };

  void reply(int source, const Request& r, const Reply& rep) {
    Writer w;
    w.i64(r.id);
    w.u8(static_cast<uint8_t>(rep.status));
    w.i64(rep.number);
    w.str(rep.text);
    outgoing_.push_back(Outgoing{std::move(w.data()), MPI_REQUEST_NULL});
    auto& o = outgoing_.back();
    MpiLock lock;
    check(MPI_Isend(o.data.data(), static_cast<int>(o.data.size()), MPI_CHAR, source, r.replyTag,
                    comm_, &o.request),
          "mpi store: MPI_Isend");
  }

  // Answers a parked get/wait if it can; true when answered.
  bool tryAnswer(const Parked& p, bool expired) {
    const Request& r = p.request;
    const auto absent = missing(r.keys);
    if (absent.empty()) {
      reply(p.source, r, Reply{r.id, Status::Ok, 0, r.op == StoreOp::Get ? value(r.keys[0]) : ""});
      return true;
    }
    if (!expired) return false;
    reply(p.source, r, Reply{r.id, Status::Timeout, 0, format("{}", shortKeys(absent))});
    return true;
  }

  void handle(int source, const Request& r) {
    switch (r.op) {
      case StoreOp::Set:
        set(r.keys.at(0), r.value);
        return reply(source, r, Reply{r.id, Status::Ok, 0, ""});
      case StoreOp::Add:
        try {
          const int64_t v = add(r.keys.at(0), r.delta);
          return reply(source, r, Reply{r.id, Status::Ok, v, ""});
        } catch (const error& e) {
          return reply(source, r, Reply{r.id, Status::Error, 0, e.what()});
        }
      case StoreOp::Check:
        return reply(source, r, Reply{r.id, has(r.keys) ? Status::Ok : Status::No, 0, ""});
      case StoreOp::Bye: ++byes_; return;
      case StoreOp::Get:
      case StoreOp::Wait: {
        Parked p{source, r, Clock::now() + r.timeout};
        if (!tryAnswer(p, false)) parked_.push_back(std::move(p));
        return;
      }
    }
    reply(source, r, Reply{r.id, Status::Error, 0, "unknown store request"});
  }

  void serve() {
    Backoff backoff(false);
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (draining_ && (byes_ >= size_ - 1 || Clock::now() > drainDeadline_)) {
          if (byes_ < size_ - 1) {
            logging::comm::warn("mpi store: stopping with {} of {} ranks not finished",
                                size_ - 1 - byes_, size_ - 1);
          }
          break;
        }
      }
      try {
        int source = 0;
        const auto buf = receive(comm_, MPI_ANY_SOURCE, kTagRequest, &source);
        const bool flag = buf.has_value();
        if (flag) {
          handle(source, decode(*buf));
          backoff = Backoff(false);
        }
        const auto now = Clock::now();
        for (auto it = parked_.begin(); it != parked_.end();) {
          it = tryAnswer(*it, now >= it->deadline) ? parked_.erase(it) : std::next(it);
        }
        for (auto it = outgoing_.begin(); it != outgoing_.end();) {
          int done = 0;
          {
            MpiLock lock;
            check(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "mpi store: MPI_Test");
          }
          it = done ? outgoing_.erase(it) : std::next(it);
        }
        if (!flag) backoff.pause(Clock::time_point::max());
      } catch (const std::exception& e) {
        logging::comm::err("mpi store service: {}", e.what());
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    // Replies still in flight: MPI completes them (eager) or drops them at finalisation.
    for (auto& o : outgoing_) {
      MpiLock lock;
      if (o.request != MPI_REQUEST_NULL) MPI_Request_free(&o.request);
    }
  }

  MPI_Comm comm_;
  const int rank_;
  const int size_;
  const Milliseconds timeout_;
  InMemoryStore values_{"mpi", timeout_};  // rank 0's values (full keys)
  std::mutex mu_;                          // guards stopping_, draining_ and drainDeadline_
  bool stopping_ = false;
  bool draining_ = false;
  Clock::time_point drainDeadline_;
  int byes_ = 0;  // service thread only
  std::atomic<int64_t> nextId_{1};
  std::list<Parked> parked_;      // service thread only
  std::list<Outgoing> outgoing_;  // service thread only
  std::thread thread_;
};

std::mutex serviceMu;
std::shared_ptr<Service> theService;

std::shared_ptr<Service> service(Milliseconds timeout) {
  std::lock_guard lock(serviceMu);
  if (theService) {
    if (theService->stopped()) throw error("mpi store: MPI was finalised");
    return theService;
  }
  MPI_Comm comm = dupComm(MPI_COMM_WORLD, timeout, "creation of the mpi bootstrap store");
  int rank = 0;
  int size = 1;
  {
    MpiLock mpiLock;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
  }
  auto s = std::make_shared<Service>(comm, rank, size, timeout);
  theService = s;
  atFinalize([s] { s->shutdown(); });
  return s;
}

class MpiStore : public Store {
 public:
  MpiStore(std::string jobId, Milliseconds timeout, std::shared_ptr<Service> service)
      : jobId_(std::move(jobId)), timeout_(timeout), service_(std::move(service)) {}

  void set(const std::string& key, const std::string& value) override {
    if (service_->rank() == 0) return service_->set(full(key), value);
    Request r;
    r.op = StoreOp::Set;
    r.keys = {full(key)};
    r.value = value;
    expectOk(service_->call(r, timeout_ + kReplyGrace), "set", {key});
  }

  std::string get(const std::string& key, std::optional<Milliseconds> timeout) override {
    const Milliseconds t = timeout ? *timeout : timeout_;
    if (service_->rank() == 0) {
      const auto missing = service_->waitFor({full(key)}, t);
      if (!missing.empty()) timedOut(t, {key});
      return service_->value(full(key));
    }
    Request r;
    r.op = StoreOp::Get;
    r.keys = {full(key)};
    r.timeout = t;
    const Reply rep = service_->call(r, t + kReplyGrace);
    if (rep.status == Status::Timeout) timedOut(t, {key});
    expectOk(rep, "get", {key});
    return rep.text;
  }

  int64_t add(const std::string& key, int64_t delta) override {
    if (service_->rank() == 0) return service_->add(full(key), delta);
    Request r;
    r.op = StoreOp::Add;
    r.keys = {full(key)};
    r.delta = delta;
    const Reply rep = service_->call(r, timeout_ + kReplyGrace);
    if (rep.status == Status::Error) throw error("{}", rep.text);
    expectOk(rep, "add", {key});
    return rep.number;
  }

  void wait(const std::vector<std::string>& keys, std::optional<Milliseconds> timeout) override {
    const Milliseconds t = timeout ? *timeout : timeout_;
    if (keys.empty()) return;
    if (service_->rank() == 0) {
      const auto missing = service_->waitFor(full(keys), t);
      if (!missing.empty()) timedOut(t, shortKeys(missing));
      return;
    }
    Request r;
    r.op = StoreOp::Wait;
    r.keys = full(keys);
    r.timeout = t;
    const Reply rep = service_->call(r, t + kReplyGrace);
    if (rep.status == Status::Timeout) {
      throw CommTimeoutError("mpi store of job '{}': timed out after {} ms waiting for keys {}",
                             jobId_, t.count(), rep.text);
    }
    expectOk(rep, "wait", keys);
  }

  bool check(const std::vector<std::string>& keys) override {
    if (keys.empty()) return true;
    if (service_->rank() == 0) return service_->has(full(keys));
    Request r;
    r.op = StoreOp::Check;
    r.keys = full(keys);
    const Reply rep = service_->call(r, timeout_ + kReplyGrace);
    return rep.status == Status::Ok;
  }

  const std::string& jobId() const override { return jobId_; }

 private:
  std::string full(const std::string& key) const { return jobId_ + "/" + key; }
  std::vector<std::string> full(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    for (const auto& k : keys) out.push_back(full(k));
    return out;
  }
  [[noreturn]] void timedOut(Milliseconds t, const std::vector<std::string>& missing) const {
    throw CommTimeoutError("mpi store of job '{}': timed out after {} ms waiting for keys {}",
                           jobId_, t.count(), missing);
  }
  void expectOk(const Reply& rep, const char* op, const std::vector<std::string>& keys) const {
    if (rep.status != Status::Ok) {
      throw runtime_error("mpi store of job '{}': {} of {} failed: {}", jobId_, op, keys, rep.text);
    }
  }

  std::string jobId_;
  Milliseconds timeout_;
  std::shared_ptr<Service> service_;
};

}  // namespace

std::shared_ptr<Store> createBootstrapStore(std::string jobId, Milliseconds timeout) {
  if (jobId.empty()) throw error("mpi store: the job id must not be empty");
  if (!launchedByMpi()) {
    throw error(
        "the mpi bootstrap store needs the processes started by mpirun or srun (none of "
        "OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_SIZE is set)");
  }
  ensureInitialized();
  return std::make_shared<MpiStore>(std::move(jobId), timeout, service(timeout));
}

}  // namespace xtrain::comm::mpi
