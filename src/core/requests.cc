#include "src/core/requests.h"

#include "p2p/recv.h"

#include <atomic>
#include <chrono>
#include <memory_resource>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "src/core/mpi_status.h"
#include "src/core/errors.h"
#include "src/core/progress_thread.h"
#include "src/platform/log.h"

namespace mpizip::core {

std::atomic<size_t> g_in_flight{0};
std::atomic<size_t> g_watched{0};

namespace {

struct Entry {
  MPI_Request handle = MPI_REQUEST_NULL;  // what the application holds
  std::unique_ptr<platform::Operation> op;
  platform::OpStatus final;   // the operation's status once done
  std::atomic<bool> done{false};  // the operation finished (final is valid: written before)
  bool detached = false;      // the application freed the request before completion
  bool persistent = false;
  bool active = false;        // persistent: started and not yet completed by a wait or test
  OpFactory factory;          // persistent: builds the operation of each start
  MPI_Comm comm = MPI_COMM_NULL;  // whose error handler reports the operation's errors
  std::atomic<bool> freed{false};  // MPI freed the handle (free_cb); removed at the next reap()
  // A watched receive (request_watch): the handle is MPI's own receive request, looked at by
  // `landing` once MPI completes it. MPI_Request_get_status may see it complete before a wait or
  // test does: `settled` then says so, with the message's outcome in `final` where it was a
  // match message (`continued`), MPI's status standing otherwise.
  std::unique_ptr<Landing> landing;
  bool watch = false;  // registered by request_watch (counted in g_watched while registered)
  bool settled = false;
  bool continued = false;
  bool read_early = false;  // Landing::read_early ran
};

// What a wait or test must report for one of MPIZip's generalized requests that MPI completes
// in the call. MPI asks query_cb, inside that very call and on the calling thread, which reports
// success to MPI (so that MPI raises nothing on the wrong communicator) and records the
// operation's outcome here; the handler then reports the error and raises it on the operation's
// communicator. Recorded at completion, not looked up before the call, so that an operation the
// progress thread completes meanwhile keeps its error.
struct Completed {
  MPI_Request handle = MPI_REQUEST_NULL;
  platform::OpStatus final;
  MPI_Comm comm = MPI_COMM_NULL;
};
thread_local std::vector<Completed> t_completed;

// The record of `handle` if MPI completed it in the current call.
const Completed* completed(MPI_Request handle) {
  for (const Completed& c : t_completed) {
    if (c.handle == handle) return &c;
  }
  return nullptr;
}

std::recursive_mutex g_mutex;
// The table's nodes and the entries themselves come from pools (under g_mutex): a message of a
// window of small receives costs no heap allocation of its own here.
std::pmr::unsynchronized_pool_resource g_node_pool;
std::pmr::unordered_map<MPI_Request, Entry*> g_entries{&g_node_pool};
constexpr size_t kSpareEntries = 256;
std::vector<void*> g_spare_entries;  // memory of destroyed entries, at most kSpareEntries

Entry* new_entry() {
  {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    if (!g_spare_entries.empty()) {
      void* m = g_spare_entries.back();
      g_spare_entries.pop_back();
      return new (m) Entry;
    }
  }
  return new Entry;
}

// Called with g_mutex held.
void delete_entry(Entry* e) {
  if (g_spare_entries.size() >= kSpareEntries) {
    delete e;
    return;
  }
  e->~Entry();
  g_spare_entries.push_back(e);
}
std::atomic<size_t> g_count{0};
std::atomic<size_t> g_background_count{0};

// g_in_flight (requests.h): registered requests plus background operations. Under g_mutex.
void publish_in_flight() {
  g_in_flight.store(g_count.load(std::memory_order_relaxed) +
                        g_background_count.load(std::memory_order_relaxed),
                    std::memory_order_release);
}

// Detached operations (under g_mutex).
std::vector<std::unique_ptr<platform::Operation>> g_background;

// Advances the background operations once. Called with g_mutex held.
void progress_background() {
  if (g_background_count.load(std::memory_order_acquire) == 0) return;
  for (size_t i = 0; i < g_background.size();) {
    if (g_background[i]->progress()) {
      g_background[i] = std::move(g_background.back());
      g_background.pop_back();
    } else {
      ++i;
    }
  }
  g_background_count.store(g_background.size(), std::memory_order_release);
  publish_in_flight();
}

// Moves a detachable operation to the background. Called with g_mutex held.
void adopt(std::unique_ptr<platform::Operation> op) {
  g_background.push_back(std::move(op));
  g_background_count.store(g_background.size(), std::memory_order_release);
  publish_in_flight();
}

// Entries whose generalized request MPI freed (free_cb), removed from g_entries by reap(). MPICH
// calls free_cb inside its global critical section, where another thread may hold g_mutex and
// wait for that section in an MPI call: so free_cb takes only g_freed_mutex, which nobody holds
// across an MPI call, and the entry leaves g_entries later, under g_mutex.
std::mutex g_freed_mutex;
std::vector<Entry*> g_freed;
std::atomic<bool> g_have_freed{false};

void remove(Entry* e) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  // MPI may already have given the handle to a newer request of MPIZip's.
  auto it = g_entries.find(e->handle);
  if (it != g_entries.end() && it->second == e) g_entries.erase(it);
  if (e->watch) g_watched.fetch_sub(1, std::memory_order_acq_rel);
  g_count.store(g_entries.size(), std::memory_order_release);
  publish_in_flight();
  delete_entry(e);
}

// Removes the entries MPI freed. Called with g_mutex held.
void reap() {
  if (!g_have_freed.load(std::memory_order_acquire)) return;
  std::vector<Entry*> freed;
  {
    std::lock_guard<std::mutex> lock(g_freed_mutex);
    freed.swap(g_freed);
    g_have_freed.store(false, std::memory_order_release);
  }
  for (Entry* e : freed) remove(e);
}

// find() with g_mutex held and reap() done.
Entry* find_locked(MPI_Request r) {
  if (r == MPI_REQUEST_NULL) return nullptr;
  auto it = g_entries.find(r);
  return it == g_entries.end() || it->second->freed.load(std::memory_order_acquire) ? nullptr
                                                                                     : it->second;
}

Entry* find(MPI_Request r) {
  if (r == MPI_REQUEST_NULL || g_count.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  reap();
  return find_locked(r);
}

void add(Entry* e) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  reap();
  g_entries[e->handle] = e;
  if (e->watch) g_watched.fetch_add(1, std::memory_order_acq_rel);
  g_count.store(g_entries.size(), std::memory_order_release);
  publish_in_flight();
}

}  // namespace

void set_status(const platform::OpStatus& s, MPI_Status* status);

namespace {

int query_cb(void* extra_state, MPI_Status* status) {
  const Entry* e = static_cast<Entry*>(extra_state);
  // MPI completes the request only after on_done() set `done`; acquiring it orders the read of
  // `final` after its write where MPI's own ordering is invisible (to ThreadSanitizer).
  (void)e->done.load(std::memory_order_acquire);
  t_completed.push_back(Completed{e->handle, e->final, e->comm});
  set_status(e->final, status);
  status->MPI_ERROR = MPI_SUCCESS;  // reported by the wait or test handler: see Completed
  return MPI_SUCCESS;
}

int free_cb(void* extra_state) {
  auto* e = static_cast<Entry*>(extra_state);
  e->freed.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(g_freed_mutex);
  g_freed.push_back(e);
  g_have_freed.store(true, std::memory_order_release);
  return MPI_SUCCESS;
}

int cancel_cb(void*, int) { return MPI_SUCCESS; }  // MPIZip's cancel() handles its requests

// Called with g_mutex held once e's operation is done, or detachable (it then goes on in the
// background).
void on_done(Entry* e) {
  e->final = e->op->status();
  e->done.store(true, std::memory_order_release);
  if (e->op->detachable()) {
    adopt(std::move(e->op));
  } else {
    e->op.reset();
  }
  if (e->persistent) {
    if (e->detached) {
      MPI_Request h = e->handle;
      PMPI_Request_free(&h);
      remove(e);
    }
    return;
  }
  MPI_Request h = e->handle;
  PMPI_Grequest_complete(h);
  if (e->detached) PMPI_Request_free(&h);  // calls free_cb
}

bool pending(const Entry* e) { return e->op != nullptr && !e->done.load(std::memory_order_acquire); }

// Completes a done persistent operation as seen by a wait or test: deactivates the carrier and
// reports the operation's status.
int consume_carrier(Entry* e, MPI_Status* status) {
  PMPI_Wait(&e->handle, MPI_STATUS_IGNORE);
  e->active = false;
  e->done.store(false, std::memory_order_relaxed);
  return fill_status(e->final, status);
}

// A watched receive's outcome, once MPI completed its request with `rc` and `*st` (never
// MPI_STATUS_IGNORE): `err` is the receive's error code; `ours` says that MPIZip's operation
// produced it (to be raised on the entry's communicator: MPI raised its own already).
struct Settled {
  int err = MPI_SUCCESS;
  bool ours = false;
};

// Looks at what a watched receive landed (Landing::landed) and runs a match message's operation
// to completion, writing its status over MPI's. Does not remove the entry.
Settled look(Entry* e, int rc, MPI_Status* st) {
  Settled out{rc, false};
  if (e->settled) {
    if (e->continued) out = Settled{fill_status(e->final, st), true};
    return out;
  }
  std::unique_ptr<platform::Operation> op = e->landing->landed(rc, st);
  e->settled = true;
  if (op) {
    drive(*op);
    e->final = op->status();
    e->continued = true;
    out = Settled{fill_status(e->final, st), true};
  }
  return out;
}

// As look(), for a request that the completion call freed: the entry goes too.
Settled settle(Entry* e, int rc, MPI_Status* st) {
  const Settled out = look(e, rc, st);
  remove(e);
  return out;
}

bool watched(const Entry* e) { return e != nullptr && e->landing != nullptr; }

// Nothing of MPIZip's needs this thread's calls to advance: the registered requests are all the
// MPI library's own receives, watched (request_watch), and no operation runs in the background.
// A wait may then block inside the MPI library, as the application's own call would, and look at
// the watched receives once they complete.
bool only_watched_in_flight() {
  return g_in_flight.load(std::memory_order_acquire) ==
         g_watched.load(std::memory_order_acquire);
}

int all_completed(int count, const std::vector<MPI_Request>& handles, Entry* const* carriers,
                  const std::vector<Entry*>& watches, int rc, MPI_Status* sts,
                  MPI_Status statuses[]);

// A watched receive that the application freed before it completed: it goes on in the
// background (MPI's request stays MPIZip's to complete), a match message's operation included.
class WatchedRecv : public platform::Operation {
 public:
  WatchedRecv(MPI_Request r, std::unique_ptr<Landing> l) : req_(r), landing_(std::move(l)) {}
  bool progress() override {
    if (next_) return next_->progress();
    int flag = 0;
    MPI_Status st;
    const int rc = PMPI_Test(&req_, &flag, &st);
    if (!flag) return false;
    next_ = landing_->landed(rc, &st);
    return !next_ || next_->progress();
  }

 private:
  MPI_Request req_;
  std::unique_ptr<Landing> landing_;
  std::unique_ptr<platform::Operation> next_;
};

MPI_Status* at(MPI_Status statuses[], int i) {
  return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

// Sets MPI_ERROR of statuses[0, n) to errors[0, n), as a multiple-completion call does when it
// returns MPI_ERR_IN_STATUS.
void set_errors(MPI_Status statuses[], const std::vector<int>& errors, int n) {
  if (statuses == MPI_STATUSES_IGNORE) return;
  for (int i = 0; i < n; ++i) statuses[i].MPI_ERROR = errors[static_cast<size_t>(i)];
}

// The statuses of the requests that were null when a multiple-completion call began: the empty
// status (mpi_status.h), which MPI gives them and Open MPI leaves partly unset.
void set_empty_where_null(const std::vector<MPI_Request>& handles, MPI_Status statuses[]) {
  if (statuses == MPI_STATUSES_IGNORE) return;
  for (size_t i = 0; i < handles.size(); ++i) {
    if (handles[i] == MPI_REQUEST_NULL) status_set_empty(&statuses[i]);
  }
}

// Whether a multiple-completion call has a null request whose status it must fill.
bool any_null(int count, const MPI_Request requests[], const MPI_Status statuses[]) {
  if (statuses == MPI_STATUSES_IGNORE) return false;
  for (int i = 0; i < count; ++i) {
    if (requests[i] == MPI_REQUEST_NULL) return true;
  }
  return false;
}

// Raises `rc` on the communicator of the operation that caused it (single-request calls).
int raise_on(MPI_Comm comm, int rc) { return raise(comm, rc); }

// The MPI error code of a completed operation that MPI completed in this call, reported.
int reported(const Completed& c) { return report(c.final, "request"); }

}  // namespace

namespace {
bool g_truncation_reports_message = true;
bool g_probe_sets_error[2] = {false, false};  // probes, matched probes
}

void status_truncation_reports_message(bool whole) { g_truncation_reports_message = whole; }
void status_probes_set_error(bool probe, bool matched_probe) {
  g_probe_sets_error[0] = probe;
  g_probe_sets_error[1] = matched_probe;
}
bool probe_sets_error(bool matched) { return g_probe_sets_error[matched ? 1 : 0]; }

uint64_t reported_bytes(const platform::OpStatus& s) {
  if (g_truncation_reports_message && s.message_bytes > s.bytes && is_truncation(s.error)) {
    return s.message_bytes;
  }
  return s.bytes;
}

void set_status(const platform::OpStatus& s, MPI_Status* status) {
  if (status != MPI_STATUS_IGNORE) {
    status->MPI_SOURCE = s.source;
    status->MPI_TAG = s.tag;
    status_set_bytes(status, reported_bytes(s), s.cancelled);
  }
}

int fill_status(const platform::OpStatus& s, MPI_Status* status) {
  set_status(s, status);
  return report(s, "request");
}

int request_start(std::unique_ptr<platform::Operation> op, MPI_Comm comm, MPI_Request* request) {
  auto* e = new_entry();
  e->op = std::move(op);
  e->comm = comm;
  int rc = PMPI_Grequest_start(query_cb, free_cb, cancel_cb, e, &e->handle);
  if (rc != MPI_SUCCESS) {
    delete e;
    return rc;
  }
  add(e);
  *request = e->handle;
  // The new operation takes its first step now; every 16th start also advances every pending
  // operation. (Advancing them all at every start cost a window of W non-blocking calls W^2 MPI
  // tests: osu_bw's 64 messages a window ran at a fifteenth of MPI's rate. Waits, tests, blocking
  // calls and the progress thread still advance every operation.)
  static std::atomic<unsigned> starts{0};
  if ((starts.fetch_add(1, std::memory_order_relaxed) & 15) == 15) {
    progress();
  } else {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    if (pending(e) && (e->op->progress() || e->op->detachable())) on_done(e);
    progress_background();
  }
  progress_thread_notify();
  return MPI_SUCCESS;
}

void request_watch(MPI_Request mpi_request, std::unique_ptr<Landing> landing, MPI_Comm comm) {
  auto* e = new_entry();
  e->handle = mpi_request;
  e->landing = std::move(landing);
  e->watch = true;
  e->comm = comm;
  add(e);  // nothing for the helper thread (helper_work()): it is not woken
}

int request_persistent(OpFactory make, MPI_Comm comm, MPI_Request* request) {
  auto* e = new_entry();
  e->persistent = true;
  e->comm = comm;
  e->factory = std::move(make);
  int rc = PMPI_Send_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &e->handle);
  if (rc != MPI_SUCCESS) {
    delete e;
    return rc;
  }
  add(e);
  *request = e->handle;
  return MPI_SUCCESS;
}

void progress() {
  if (g_count.load(std::memory_order_acquire) == 0 &&
      g_background_count.load(std::memory_order_acquire) == 0) {
    return;
  }
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  reap();
  std::vector<Entry*> finished;
  for (auto& [handle, e] : g_entries) {
    if (pending(e) && (e->op->progress() || e->op->detachable())) finished.push_back(e);
  }
  for (Entry* e : finished) on_done(e);
  // A receive waits for another's landing place to be read (p2p::LandingGuard: receives into
  // overlapping memory): watched receives that MPI completed are read now, not at their wait,
  // which the application may make after the other's.
  if (p2p::landing_waited_for()) {
    for (auto& [handle, e] : g_entries) {
      if (!watched(e) || e->settled || e->read_early || e->freed.load(std::memory_order_acquire))
        continue;
      int flag = 0;
      MPI_Status st;
      if (PMPI_Request_get_status(handle, &flag, &st) == MPI_SUCCESS && flag) {
        e->landing->read_early(st);
        e->read_early = true;
      }
    }
  }
  progress_background();
}

Status drive(platform::Operation& op) {
  while (!op.progress()) progress();
  return op.status().error;
}

Status drive_detachable(std::unique_ptr<platform::Operation> op) {
  while (!op->progress()) {
    if (op->detachable()) {
      const Status error = op->status().error;
      std::lock_guard<std::recursive_mutex> lock(g_mutex);
      adopt(std::move(op));
      progress_thread_notify();
      return error;
    }
    progress();
  }
  return op->status().error;
}

size_t background_count() { return g_background_count.load(std::memory_order_acquire); }

void background_adopt(std::unique_ptr<platform::Operation> op) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  adopt(std::move(op));
}

namespace {

// Background operations still pending when MPI_Finalize gives up on them: kept, never destroyed
// (their destructors would call MPI after MPI_Finalize), and reachable, so that leak checkers do
// not count them. Called with g_mutex held.
void abandon_background(const char* why) {
  MPIZIP_WARN("%zu send(s) abandoned at MPI_Finalize: %s", g_background.size(), why);
  static auto* abandoned = new std::vector<std::unique_ptr<platform::Operation>>();
  for (auto& op : g_background) abandoned->push_back(std::move(op));
  g_background.clear();
  g_background_count.store(0, std::memory_order_release);
  publish_in_flight();
}

}  // namespace

void background_finish(double grace_seconds) {
  const auto since = std::chrono::steady_clock::now();
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  while (!g_background.empty()) {
    progress_background();
    if (!g_background.empty() &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count() >
            grace_seconds) {
      abandon_background("MPI has not sent what their transports had copied aside");
      break;
    }
  }
}

void background_drain(MPI_Comm world, double grace_seconds) {
  // Every correct receive completes before its process finalizes, and a receive completes only once
  // its payload has landed: so once every rank is here (the barrier), what is still pending waits
  // for a receiver that will never take it (a receive of at most the bare size that truncated the
  // match message, p2p/wire.h). That gets a bounded time, then is abandoned with one log line.
  MPI_Request all_here = MPI_REQUEST_NULL;
  if (PMPI_Ibarrier(world, &all_here) != MPI_SUCCESS) all_here = MPI_REQUEST_NULL;
  bool everyone = all_here == MPI_REQUEST_NULL;
  auto since = std::chrono::steady_clock::now();
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  while (!g_background.empty()) {
    progress_background();
    if (!everyone) {
      int flag = 0;
      PMPI_Test(&all_here, &flag, MPI_STATUS_IGNORE);
      if (flag) {
        everyone = true;
        since = std::chrono::steady_clock::now();
      }
    } else if (std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count() >
               grace_seconds) {
      abandon_background("their receivers never took the payload (a receive that truncated "
                         "the message?)");
      break;
    }
  }
  if (!everyone) PMPI_Wait(&all_here, MPI_STATUS_IGNORE);
}

int start(MPI_Request* request) {
  Entry* e = find(*request);
  if (e == nullptr || !e->persistent) return PMPI_Start(request);
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (e->active) return MPI_ERR_REQUEST;
  std::unique_ptr<platform::Operation> op;
  int rc = report(e->factory(&op), "MPI_Start");
  if (rc != MPI_SUCCESS) return rc;
  rc = PMPI_Start(&e->handle);
  if (rc != MPI_SUCCESS) return rc;
  // As a non-blocking send does: the work only this rank can do, before the call returns.
  while (op->awaits_own_calls() && !op->progress()) progress();
  e->op = std::move(op);
  e->done.store(false, std::memory_order_relaxed);
  e->active = true;
  progress();
  progress_thread_notify();
  return MPI_SUCCESS;
}

int startall(int count, MPI_Request requests[]) {
  for (int i = 0; i < count; ++i) {
    int rc = start(&requests[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

int test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (*request == MPI_REQUEST_NULL) {
    *flag = 1;
    status_set_empty(status);
    return MPI_SUCCESS;
  }
  if (request_count() == 0) return PMPI_Test(request, flag, status);
  progress();
  Entry* e = find(*request);
  if (watched(e)) {
    const MPI_Comm comm = e->comm;
    MPI_Status own;
    MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
    const int rc = PMPI_Test(request, flag, st);
    if (!*flag) return rc;
    const Settled out = settle(e, rc, st);
    return out.ours ? raise_on(comm, out.err) : out.err;
  }
  if (e == nullptr || !e->persistent || !e->active) {
    const MPI_Request handle = *request;
    t_completed.clear();
    int rc = PMPI_Test(request, flag, status);
    if (rc != MPI_SUCCESS || !*flag) return rc;
    const Completed* c = completed(handle);
    return c != nullptr ? raise_on(c->comm, reported(*c)) : rc;
  }
  const bool done = e->done.load(std::memory_order_acquire);
  *flag = done ? 1 : 0;
  return done ? raise_on(e->comm, consume_carrier(e, status)) : MPI_SUCCESS;
}

int wait(MPI_Request* request, MPI_Status* status) {
  if (*request == MPI_REQUEST_NULL) {
    status_set_empty(status);
    return MPI_SUCCESS;
  }
  if (request_count() == 0) return PMPI_Wait(request, status);
  if (only_watched_in_flight()) {
    Entry* e = find(*request);
    if (e == nullptr || watched(e)) {
      if (e == nullptr) return PMPI_Wait(request, status);
      const MPI_Comm comm = e->comm;
      MPI_Status own;
      MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
      const int rc = PMPI_Wait(request, st);
      const Settled out = settle(e, rc, st);
      return out.ours ? raise_on(comm, out.err) : out.err;
    }
  }
  int flag = 0;
  int rc = MPI_SUCCESS;
  while (!flag) rc = test(request, &flag, status);
  return rc;
}

int testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (request_count() == 0 && !any_null(count, requests, statuses)) {
    return PMPI_Testall(count, requests, flag, statuses);
  }
  progress();
  std::vector<Entry*> carriers(count, nullptr);
  for (int i = 0; i < count; ++i) {
    Entry* e = find(requests[i]);
    if (e != nullptr && e->persistent && e->active) {
      if (!e->done.load(std::memory_order_acquire)) {
        *flag = 0;
        return MPI_SUCCESS;
      }
      carriers[i] = e;
    }
  }
  std::vector<MPI_Request> handles(requests, requests + count);
  // Watched receives need MPI's statuses, which the application may not ask for.
  std::vector<Entry*> watches(count, nullptr);
  bool any_watched = false;
  for (int i = 0; i < count; ++i) {
    Entry* e = carriers[i] == nullptr ? find(requests[i]) : nullptr;
    if (watched(e)) watches[i] = e, any_watched = true;
  }
  std::vector<MPI_Status> own(statuses == MPI_STATUSES_IGNORE && any_watched ? count : 0);
  MPI_Status* sts = own.empty() ? statuses : own.data();
  t_completed.clear();
  int rc = PMPI_Testall(count, requests, flag, sts);
  if (!*flag) return rc;
  return all_completed(count, handles, carriers.data(), watches, rc, sts, statuses);
}

namespace {

// After the MPI library completed every request of a testall or waitall (`rc`, statuses in `sts`,
// the application's `statuses` possibly MPI_STATUSES_IGNORE): empty statuses for null handles,
// watched receives looked at, persistent carriers (null: none) reported, MPIZip's errors raised.
int all_completed(int count, const std::vector<MPI_Request>& handles, Entry* const* carriers,
                  const std::vector<Entry*>& watches, int rc, MPI_Status* sts,
                  MPI_Status statuses[]) {
  set_empty_where_null(handles, statuses);
  bool error = false;
  MPI_Comm error_comm = MPI_COMM_NULL;
  thread_local std::vector<int> errors;
  errors.assign(static_cast<size_t>(count), MPI_SUCCESS);
  for (int i = 0; i < count; ++i) {
    int err = rc == MPI_ERR_IN_STATUS && sts != MPI_STATUSES_IGNORE ? sts[i].MPI_ERROR
                                                                    : MPI_SUCCESS;
    MPI_Comm comm = MPI_COMM_NULL;
    if (watches[i] != nullptr) {
      const MPI_Comm watch_comm = watches[i]->comm;
      const Settled out = settle(watches[i], err, &sts[i]);
      err = out.err;
      if (out.ours) comm = watch_comm;
    } else if (carriers != nullptr && carriers[i] != nullptr) {
      carriers[i]->active = false;
      carriers[i]->done.store(false, std::memory_order_relaxed);
      err = fill_status(carriers[i]->final, at(statuses, i));
      comm = carriers[i]->comm;
    } else if (const Completed* c = completed(handles[static_cast<size_t>(i)])) {
      err = reported(*c);
      comm = c->comm;
    }
    errors[static_cast<size_t>(i)] = err;
    if (err != MPI_SUCCESS) {
      error = true;
      if (error_comm == MPI_COMM_NULL) error_comm = comm;
    }
  }
  if (!error) return rc;
  set_errors(statuses, errors, count);
  return error_comm != MPI_COMM_NULL ? raise_on(error_comm, MPI_ERR_IN_STATUS) : MPI_ERR_IN_STATUS;
}

}  // namespace

int waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (request_count() == 0) {
    if (!any_null(count, requests, statuses)) return PMPI_Waitall(count, requests, statuses);
    const std::vector<MPI_Request> handles(requests, requests + count);
    const int rc = PMPI_Waitall(count, requests, statuses);
    set_empty_where_null(handles, statuses);
    return rc;
  }
  if (only_watched_in_flight()) {
    // Scratch of this thread's, kept between calls (a window of messages allocates nothing).
    thread_local std::vector<Entry*> watches;
    thread_local std::vector<MPI_Request> handles;
    thread_local std::vector<MPI_Status> own;
    watches.assign(static_cast<size_t>(count), nullptr);
    bool any_watched = false, others = false;
    {
      std::lock_guard<std::recursive_mutex> lock(g_mutex);
      reap();
      for (int i = 0; i < count && !others; ++i) {
        Entry* e = find_locked(requests[i]);
        if (watched(e)) {
          watches[i] = e;
          any_watched = true;
        } else {
          others = e != nullptr;  // a carrier or an operation registered since: the general loop
        }
      }
    }
    if (!others) {
      handles.assign(requests, requests + count);
      const bool own_statuses = statuses == MPI_STATUSES_IGNORE && any_watched;
      if (own_statuses) own.resize(static_cast<size_t>(count));
      MPI_Status* sts = own_statuses ? own.data() : statuses;
      t_completed.clear();
      const int rc = PMPI_Waitall(count, requests, sts);
      return all_completed(count, handles, nullptr, watches, rc, sts, statuses);
    }
  }
  int flag = 0;
  int rc = MPI_SUCCESS;
  while (!flag) rc = testall(count, requests, &flag, statuses);
  return rc;
}

int testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (request_count() == 0) {
    const int rc = PMPI_Testany(count, requests, index, flag, status);
    if (rc == MPI_SUCCESS && *flag && *index == MPI_UNDEFINED) status_set_empty(status);
    return rc;
  }
  progress();
  bool carriers_pending = false;
  std::vector<MPI_Request> copy(requests, requests + count);
  for (int i = 0; i < count; ++i) {
    Entry* e = find(requests[i]);
    if (e == nullptr || !e->persistent || !e->active) continue;
    if (e->done.load(std::memory_order_acquire)) {
      *index = i;
      *flag = 1;
      return raise_on(e->comm, consume_carrier(e, status));
    }
    carriers_pending = true;
    copy[i] = MPI_REQUEST_NULL;  // MPI must not complete it: its operation is still running
  }
  // Watched receives, found before MPI frees their handles (which it may then give to another).
  std::vector<Entry*> watches(count, nullptr);
  for (int i = 0; i < count; ++i) {
    Entry* e = copy[i] != MPI_REQUEST_NULL ? find(copy[i]) : nullptr;
    if (watched(e)) watches[i] = e;
  }
  MPI_Status own;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
  t_completed.clear();
  int rc = PMPI_Testany(count, copy.data(), index, flag, st);
  if (*flag && *index == MPI_UNDEFINED && !carriers_pending) status_set_empty(status);
  if (*flag && *index != MPI_UNDEFINED) {
    const MPI_Request handle = requests[*index];
    requests[*index] = copy[*index];
    if (const Completed* c = completed(handle)) {
      if (rc == MPI_SUCCESS) rc = raise_on(c->comm, reported(*c));
    } else if (Entry* e = watches[static_cast<size_t>(*index)]) {
      const MPI_Comm comm = e->comm;
      const Settled out = settle(e, rc, st);
      rc = out.ours ? raise_on(comm, out.err) : out.err;
    }
  } else if (*flag && carriers_pending) {
    *flag = 0;
  }
  return rc;
}

int waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (g_count.load(std::memory_order_acquire) == 0) {
    const int rc = PMPI_Waitany(count, requests, index, status);
    if (rc == MPI_SUCCESS && *index == MPI_UNDEFINED) status_set_empty(status);
    return rc;
  }
  int flag = 0;
  int rc = MPI_SUCCESS;
  while (!flag) rc = testany(count, requests, index, &flag, status);
  return rc;
}

int testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
             MPI_Status statuses[]) {
  progress();
  bool carriers_pending = false, error = false;
  MPI_Comm error_comm = MPI_COMM_NULL;
  int n = 0;
  std::vector<int> errors(static_cast<size_t>(incount), MPI_SUCCESS);
  std::vector<MPI_Request> copy(requests, requests + incount);
  for (int i = 0; i < incount; ++i) {
    Entry* e = find(requests[i]);
    if (e == nullptr || !e->persistent || !e->active) continue;
    copy[i] = MPI_REQUEST_NULL;
    if (!e->done.load(std::memory_order_acquire)) {
      carriers_pending = true;
      continue;
    }
    const int err = consume_carrier(e, at(statuses, n));
    if (err != MPI_SUCCESS) {
      error = true;
      if (error_comm == MPI_COMM_NULL) error_comm = e->comm;
    }
    errors[static_cast<size_t>(n)] = err;
    indices[n++] = i;
  }
  int more = 0;
  std::vector<int> more_indices(incount);
  // Watched receives need MPI's statuses, which the application may not ask for.
  std::vector<Entry*> watches(incount, nullptr);
  bool any_watched = false;
  for (int i = 0; i < incount; ++i) {
    Entry* e = copy[i] != MPI_REQUEST_NULL ? find(copy[i]) : nullptr;
    if (watched(e)) watches[i] = e, any_watched = true;
  }
  const bool want_statuses = statuses != MPI_STATUSES_IGNORE || any_watched;
  std::vector<MPI_Status> more_statuses(want_statuses ? incount : 0);
  t_completed.clear();
  int rc = PMPI_Testsome(incount, copy.data(), &more, more_indices.data(),
                         want_statuses ? more_statuses.data() : MPI_STATUSES_IGNORE);
  if (rc == MPI_ERR_IN_STATUS) error = true;
  if (more != MPI_UNDEFINED) {
    for (int k = 0; k < more; ++k) {
      const int i = more_indices[k];
      const MPI_Request handle = requests[i];
      requests[i] = copy[i];
      int err = rc == MPI_ERR_IN_STATUS && want_statuses ? more_statuses[k].MPI_ERROR
                                                          : MPI_SUCCESS;
      if (watches[i] != nullptr) {
        const MPI_Comm comm = watches[i]->comm;
        const Settled out = settle(watches[i], err, &more_statuses[k]);
        err = out.err;
        if (out.ours && err != MPI_SUCCESS) {
          error = true;
          if (error_comm == MPI_COMM_NULL) error_comm = comm;
        }
      }
      if (statuses != MPI_STATUSES_IGNORE) statuses[n] = more_statuses[k];
      if (const Completed* c = completed(handle)) {
        err = reported(*c);
        if (err != MPI_SUCCESS) {
          error = true;
          if (error_comm == MPI_COMM_NULL) error_comm = c->comm;
        }
      }
      errors[static_cast<size_t>(n)] = err;
      indices[n++] = i;
    }
  }
  *outcount = (n == 0 && more == MPI_UNDEFINED && !carriers_pending) ? MPI_UNDEFINED : n;
  if (!error) return rc;
  set_errors(statuses, errors, n);
  return error_comm != MPI_COMM_NULL ? raise_on(error_comm, MPI_ERR_IN_STATUS) : MPI_ERR_IN_STATUS;
}

int waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
             MPI_Status statuses[]) {
  if (g_count.load(std::memory_order_acquire) == 0) {
    return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  }
  int rc = MPI_SUCCESS;
  *outcount = 0;
  while (*outcount == 0) rc = testsome(incount, requests, outcount, indices, statuses);
  return rc;
}

int request_free(MPI_Request* request) {
  Entry* e = find(*request);
  if (e == nullptr) return PMPI_Request_free(request);
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (watched(e)) {
    // MPI's request stays MPIZip's to complete, in the background: what it lands may be a match
    // message to go on with. One that MPI_Request_get_status saw settled is complete already.
    if (e->settled) {
      PMPI_Request_free(request);
    } else {
      adopt(std::make_unique<WatchedRecv>(*request, std::move(e->landing)));
      *request = MPI_REQUEST_NULL;
    }
    remove(e);
    return MPI_SUCCESS;
  }
  if (e->persistent) {
    if (e->active && !e->done) {
      e->detached = true;  // progress() frees it once its operation is done
    } else {
      MPI_Request h = e->handle;
      PMPI_Request_free(&h);
      remove(e);
    }
  } else if (e->done) {
    MPI_Request h = e->handle;
    PMPI_Request_free(&h);  // calls free_cb
  } else {
    e->detached = true;  // on_done() completes and frees it
  }
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

int cancel(MPI_Request* request) {
  Entry* e = find(*request);
  if (e == nullptr || watched(e)) return PMPI_Cancel(request);
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (pending(e) && e->op->cancel()) on_done(e);
  return MPI_SUCCESS;
}

int request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (request == MPI_REQUEST_NULL) {
    *flag = 1;
    status_set_empty(status);
    return MPI_SUCCESS;
  }
  progress();
  Entry* e = find(request);
  if (watched(e)) {
    // MPI keeps the request: the wait or test that completes it reports what look() found.
    MPI_Status own;
    MPI_Status* st = status == MPI_STATUS_IGNORE ? &own : status;
    const int rc = PMPI_Request_get_status(request, flag, st);
    if (rc != MPI_SUCCESS || !*flag) return rc;
    const Settled out = look(e, MPI_SUCCESS, st);
    return out.ours ? raise_on(e->comm, out.err) : out.err;
  }
  if (e == nullptr || !e->persistent || !e->active) {
    // The operation's error is reported by the wait or test that completes the request; what
    // query_cb records here is not needed.
    t_completed.clear();
    const int rc = PMPI_Request_get_status(request, flag, status);
    t_completed.clear();
    return rc;
  }
  const bool done = e->done.load(std::memory_order_acquire);
  *flag = done ? 1 : 0;
  if (done) fill_status(e->final, status);
  return MPI_SUCCESS;
}

}  // namespace mpizip::core
