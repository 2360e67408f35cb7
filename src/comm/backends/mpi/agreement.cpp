#include "comm/backends/mpi/agreement.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "comm/backends/mpi/runtime.hpp"
#include "comm/queued_communicator.hpp"

namespace xtrain::comm::mpi {

namespace {

constexpr size_t kMaxMessage = 8192;

int toInt(size_t n) {
  return static_cast<int>(n);
}

// A verdict on the wire: [id (8 bytes), kind (1 byte), message].
std::vector<char> encodeVerdict(uint64_t id, Verdict v, const std::string& message) {
  std::vector<char> m(sizeof id);
  std::memcpy(m.data(), &id, sizeof id);
  m.push_back(static_cast<char>(v));
  const std::string text = message.substr(0, kMaxMessage - 16);
  m.insert(m.end(), text.begin(), text.end());
  return m;
}

// Buffers of requests still pending when their communicator went away: MPI_Request_free lets MPI
// finish them, so their memory must outlive it (reachable, never freed; rare and small).
std::mutex graveyardMu;
std::deque<std::vector<char>> graveyardChars;
std::deque<std::vector<uint64_t>> graveyardWords;

}  // namespace

Agreements::~Agreements() {
  std::lock_guard lock(mu_);
  if (orphans_.empty()) return;
  std::lock_guard grave(graveyardMu);
  for (auto& o : orphans_) {
    if (!finalizing() && o.request != MPI_REQUEST_NULL) {
      MpiLock mpi;
      MPI_Request_free(&o.request);
    }
    graveyardChars.push_back(std::move(o.chars));  // a moved vector keeps its buffer
    graveyardWords.push_back(std::move(o.words));
  }
}

Outcome Agreements::agree(const AgreementSpec& spec) {
  reapOrphans();
  return spec.self == spec.leader ? lead(spec) : follow(spec);
}

void Agreements::adopt(Orphan orphan) {
  std::lock_guard lock(mu_);
  orphans_.push_back(std::move(orphan));
}

// Frees the buffers of orphaned requests that MPI has finished with.
void Agreements::reapOrphans() {
  std::lock_guard lock(mu_);
  for (auto it = orphans_.begin(); it != orphans_.end();) {
    int done = 0;
    if (!finalizing()) {
      MpiLock mpi;
      if (MPI_Test(&it->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) done = 0;
    }
    it = done ? orphans_.erase(it) : it + 1;
  }
}

template <typename T>
void Agreements::finishSend(MPI_Request& request, std::vector<T> buffer, Milliseconds limit) {
  if (request == MPI_REQUEST_NULL) return;
  if (pollUntil(request, Clock::now() + limit, true)) return;
  Orphan o;
  o.request = request;
  if constexpr (std::is_same_v<T, char>) {
    o.chars = std::move(buffer);
  } else {
    o.words = std::move(buffer);
  }
  request = MPI_REQUEST_NULL;
  adopt(std::move(o));
}

void Agreements::abandon(uint64_t id) {
  std::lock_guard lock(mu_);
  abandoned_.insert(id);
}

bool Agreements::abandoned(uint64_t id) {
  std::lock_guard lock(mu_);
  return abandoned_.count(id) > 0;
}

Outcome Agreements::lead(const AgreementSpec& s) {
  const size_t m = s.members.size();
  const size_t words = 1 + s.mine.words.size();
  std::vector<std::vector<uint64_t>> hello(m, std::vector<uint64_t>(words));
  std::vector<MPI_Request> reqs(m, MPI_REQUEST_NULL);
  auto post = [&](size_t i) {
    MpiLock lock;
    check(MPI_Irecv(hello[i].data(), toInt(words), MPI_UINT64_T, s.members[i], s.tags.hello, s.comm,
                    &reqs[i]),
          "MPI_Irecv");
  };
  // A received hello counts unless it is a late message of a step this rank abandoned.
  auto current = [&](size_t i) { return hello[i][0] == s.mine.id || !abandoned(hello[i][0]); };
  for (size_t i = 0; i < m; ++i) post(i);
  const auto deadline = Clock::now() + s.timeout;
  std::vector<char> arrived(m, 0);
  std::vector<int> missing;
  Outcome out;
  Backoff backoff(false);
  for (;;) {
    bool pending = false;
    for (size_t i = 0; i < m; ++i) {
      if (arrived[i]) continue;
      int done = 0;
      {
        MpiLock lock;
        check(MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE), "MPI_Test");
      }
      if (done && current(i)) {
        arrived[i] = 1;
        continue;
      }
      if (done) post(i);  // a stale hello: wait for the current one
      pending = true;
    }
    if (auto late = memberGaveUp(s)) {
      out = {Verdict::Aborted, *late};
      break;
    }
    if (!pending) break;
    if (!backoff.pause(deadline)) {
      for (size_t i = 0; i < m; ++i) {
        if (arrived[i]) continue;
        // A hello may come while cancelling.
        if (!cancelReceive(reqs[i]) && current(i)) {
          arrived[i] = 1;
        } else {
          missing.push_back(s.members[i]);
        }
      }
      if (!missing.empty()) {
        out = {Verdict::Timeout, timeoutMessage(s.what, s.group, s.size, s.timeout, missing)};
      }
      break;
    }
  }
  for (size_t i = 0; i < m; ++i) {
    if (reqs[i] != MPI_REQUEST_NULL) cancelReceive(reqs[i]);
    // A cancellation that did not complete (the process is poisoned): the receive may still
    // write into hello[i], which must then outlive this call. Its proposal is not compared (the
    // verdict is a timeout).
    if (reqs[i] != MPI_REQUEST_NULL) {
      Orphan o;
      o.request = reqs[i];
      o.words = std::move(hello[i]);
      adopt(std::move(o));
      if (out.verdict == Verdict::Go)
        out = {Verdict::Timeout, "a cancelled receive did not complete"};
    }
  }
  if (out.verdict == Verdict::Go) {
    std::vector<Proposal> all{s.mine};
    for (const auto& h : hello) all.push_back(Proposal{h[0], {h.begin() + 1, h.end()}});
    if (auto msg = s.compare(all)) out = {Verdict::Mismatch, *msg};
  }
  if (out.verdict != Verdict::Go) abandon(s.mine.id);
  sendVerdicts(s, out, missing);
  return out;
}

// Leader: the verdict to every member. Members that did not arrive get "aborted" (when they do
// arrive, they fail at once). Small messages go out eagerly; give them a bounded time, then let MPI
// finish them.
void Agreements::sendVerdicts(const AgreementSpec& s, const Outcome& out,
                              const std::vector<int>& missing) {
  const size_t m = s.members.size();
  std::vector<std::vector<char>> messages(m);
  std::vector<MPI_Request> sends(m, MPI_REQUEST_NULL);
  for (size_t i = 0; i < m; ++i) {
    const bool absent = std::find(missing.begin(), missing.end(), s.members[i]) != missing.end();
    messages[i] = encodeVerdict(s.mine.id, absent ? Verdict::Aborted : out.verdict, out.message);
    MpiLock lock;
    check(MPI_Isend(messages[i].data(), toInt(messages[i].size()), MPI_CHAR, s.members[i],
                    s.tags.verdict, s.comm, &sends[i]),
          "MPI_Isend");
  }
  for (size_t i = 0; i < m; ++i) finishSend(sends[i], std::move(messages[i]), Milliseconds(2000));
}

// Leader: a member that gave up waiting for this step's verdict (this rank was late).
std::optional<std::string> Agreements::memberGaveUp(const AgreementSpec& s) {
  for (;;) {
    int flag = 0;
    MPI_Status st;
    uint64_t id = 0;
    {
      MpiLock lock;
      check(MPI_Iprobe(MPI_ANY_SOURCE, s.tags.giveUp, s.comm, &flag, &st), "MPI_Iprobe");
      if (!flag) return std::nullopt;
      check(MPI_Recv(&id, 1, MPI_UINT64_T, st.MPI_SOURCE, s.tags.giveUp, s.comm, MPI_STATUS_IGNORE),
            "MPI_Recv");
    }
    if (id != s.mine.id) continue;  // about an earlier step, which failed there already
    return format(
        "{} in group '{}' (size {}) timed out: ranks [{}] did not arrive in time (rank {} gave up "
        "waiting for rank {}, which leads the step)",
        s.what, s.group, s.size, s.leader, st.MPI_SOURCE, s.leader);
  }
}

Outcome Agreements::follow(const AgreementSpec& s) {
  std::vector<uint64_t> hello{s.mine.id};
  hello.insert(hello.end(), s.mine.words.begin(), s.mine.words.end());
  // The leader decides timeouts; wait a little longer than it does before blaming it.
  const Milliseconds grace = std::min(s.timeout, Milliseconds(2000));
  const auto deadline = Clock::now() + s.timeout + grace;
  std::vector<char> buf(kMaxMessage);
  MPI_Request send = MPI_REQUEST_NULL;
  {
    MpiLock lock;
    check(MPI_Isend(hello.data(), toInt(hello.size()), MPI_UINT64_T, s.leader, s.tags.hello, s.comm,
                    &send),
          "MPI_Isend");
  }
  for (;;) {
    MPI_Request recv = MPI_REQUEST_NULL;
    {
      MpiLock lock;
      check(MPI_Irecv(buf.data(), toInt(buf.size()), MPI_CHAR, s.leader, s.tags.verdict, s.comm,
                      &recv),
            "MPI_Irecv");
    }
    MPI_Status st;
    bool got = pollUntil(recv, deadline, false, &st);
    if (!got && !cancelReceive(recv, &st)) got = true;  // it came while cancelling
    if (!got) break;
    int len = 0;
    MPI_Get_count(&st, MPI_CHAR, &len);
    if (len < 9) {
      throw internal_error("mpi: short verdict ({} bytes) for {} in group '{}'", len, s.what,
                           s.group);
    }
    uint64_t id = 0;
    std::memcpy(&id, buf.data(), sizeof id);
    const auto v = static_cast<Verdict>(buf[8]);
    if (id != s.mine.id && abandoned(id)) continue;  // the answer to a step this rank gave up on
    finishSend(send, std::move(hello), Milliseconds(2000));
    if (v != Verdict::Go) return {v, std::string(buf.data() + 9, static_cast<size_t>(len) - 9)};
    if (id != s.mine.id) {
      return {Verdict::Mismatch,
              format("{}: the leader (rank {}) answered a different step", s.what, s.leader)};
    }
    return {};
  }
  // No verdict: tell the leader, so that it fails instead of starting the step without this rank.
  abandon(s.mine.id);
  MPI_Request req = MPI_REQUEST_NULL;
  const uint64_t* id = nullptr;
  {
    std::lock_guard lock(mu_);
    giveUps_.push_back(s.mine.id);  // the send's buffer, alive as long as the communicator
    id = &giveUps_.back();
  }
  if (send != MPI_REQUEST_NULL) {  // the hello may still be read: it stays until MPI is done
    Orphan o;
    o.request = send;
    o.words = std::move(hello);
    adopt(std::move(o));
  }
  {
    MpiLock lock;
    if (MPI_Isend(id, 1, MPI_UINT64_T, s.leader, s.tags.giveUp, s.comm, &req) == MPI_SUCCESS) {
      MPI_Request_free(&req);  // eager: the value is copied out at once
    }
  }
  return {Verdict::Timeout,
          timeoutMessage(s.what, s.group, s.size, s.timeout + grace, {s.leader}) +
              format(" (rank {} leads this step; other ranks may be missing too)", s.leader)};
}

}  // namespace xtrain::comm::mpi
