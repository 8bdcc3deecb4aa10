#include "src/core/comm_state.h"

#include "src/core/comm_context.h"
#include "src/core/comm_hints.h"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "src/platform/log.h"

namespace mpizip::core {

CommState::CommState() = default;
CommState::~CommState() = default;
namespace {

// Freed communicators whose statistics are kept individually; the counts of any further ones are
// folded into one aggregate, so an application that creates and frees communicators in a loop
// keeps a bounded registry.
constexpr size_t kKeepFreed = 32;

std::mutex g_mutex;
std::map<uint64_t, std::shared_ptr<CommState>> g_registry;  // by id: live and kept freed states
std::unique_ptr<CommState> g_process;       // calls without a communicator
std::unique_ptr<CommState> g_freed_others;  // freed communicators beyond kKeepFreed
size_t g_freed_kept = 0;
uint64_t g_next_id = 0;
int g_keyval = MPI_KEYVAL_INVALID;

// Caller holds g_mutex.
CommState* new_state(int size, std::string origin) {
  auto s = std::make_shared<CommState>();
  s->id = g_next_id++;
  s->size = size;
  s->origin = std::move(origin);
  CommState* raw = s.get();
  g_registry.emplace(raw->id, std::move(s));
  return raw;
}

bool has_calls(const CommState& s) {
  for (const auto& c : s.counters) {
    if (c.calls.load(std::memory_order_relaxed) != 0) return true;
  }
  return false;
}

// Caller holds g_mutex. Keeps, folds or drops the state of a freed communicator. A dropped state
// lives on while operations still pending on it hold it (their counts then go unreported).
void retire(CommState* s) {
  if (has_calls(*s) && g_freed_kept < kKeepFreed) {
    ++g_freed_kept;
    return;
  }
  if (has_calls(*s)) {
    if (!g_freed_others) {
      g_freed_others = std::make_unique<CommState>();
      g_freed_others->origin = "other freed communicators";
    }
    for (int i = 0; i < kMaxCallSites; ++i) {
      uint64_t calls = s->counters[i].calls.load(std::memory_order_relaxed);
      if (calls == 0) continue;
      g_freed_others->counters[i].calls.fetch_add(calls, std::memory_order_relaxed);
      g_freed_others->counters[i].bytes.fetch_add(s->counters[i].bytes.load(),
                                                  std::memory_order_relaxed);
      g_freed_others->names[i].store(s->names[i].load());
    }
  }
  g_registry.erase(s->id);
}

int copy_cb(MPI_Comm oldcomm, int, void*, void* attribute_val_in, void* attribute_val_out,
            int* flag) {
  auto* parent = static_cast<CommState*>(attribute_val_in);
  int size = 0;
  PMPI_Comm_size(oldcomm, &size);
  std::lock_guard<std::mutex> lock(g_mutex);
  CommState* child = new_state(size, "dup of comm " + std::to_string(parent->id));
  comm_hints_inherit(*parent, child);  // a duplicate keeps its parent's hints
  // The child's handle is unknown here; comm_state() records it at the first lookup.
  *static_cast<void**>(attribute_val_out) = child;
  *flag = 1;
  return MPI_SUCCESS;
}

// Bumped whenever a state leaves its communicator: invalidates every thread's lookup cache
// (a freed communicator's handle can come back for a new one).
std::atomic<uint64_t> g_generation{1};

int delete_cb(MPI_Comm comm, int, void* attribute_val, void*) {
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  auto* s = static_cast<CommState*>(attribute_val);
  // Keep the application's name for the communicator: it cannot be asked once freed.
  char name[MPI_MAX_OBJECT_NAME] = {0};
  int len = 0;
  bool named = PMPI_Comm_get_name(comm, name, &len) == MPI_SUCCESS && len > 0;
  std::shared_ptr<CommContext> context;  // released outside the lock, after the state's retirement
  std::lock_guard<std::mutex> lock(g_mutex);
  if (named) s->origin = std::string("'") + name + "' (" + s->origin + ")";
  s->protocol.store(false);
  context = std::move(s->context);
  s->freed.store(true);
  s->handle.store(MPI_COMM_NULL);
  retire(s);
  return MPI_SUCCESS;
}

}  // namespace

int comm_state_setup() {
  int rc = PMPI_Comm_create_keyval(copy_cb, delete_cb, &g_keyval, nullptr);
  if (rc != MPI_SUCCESS) return rc;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_process = std::make_unique<CommState>();
    g_process->origin = "no communicator";
  }
  comm_state(MPI_COMM_WORLD);
  return MPI_SUCCESS;
}

void comm_state_teardown() {
  // Contexts of communicators still alive, released in creation order (the same on every rank,
  // should a transport's teardown communicate) and outside the lock.
  std::vector<std::shared_ptr<CommContext>> held;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto& [id, s] : g_registry) {
      s->protocol.store(false);
      if (s->context) held.push_back(std::move(s->context));
    }
  }
  held.clear();
  if (g_keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&g_keyval);
}

CommState* comm_state(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL || g_keyval == MPI_KEYVAL_INVALID) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, g_keyval, &value, &found) == MPI_SUCCESS && found) {
    auto* s = static_cast<CommState*>(value);
    if (s->handle.load(std::memory_order_relaxed) == MPI_COMM_NULL) s->handle.store(comm);
    return s;
  }
  int size = 0;
  PMPI_Comm_size(comm, &size);
  std::lock_guard<std::mutex> lock(g_mutex);
  // Another thread may have attached a state meanwhile.
  if (PMPI_Comm_get_attr(comm, g_keyval, &value, &found) == MPI_SUCCESS && found) {
    return static_cast<CommState*>(value);
  }
  CommState* s = new_state(size, comm == MPI_COMM_WORLD ? "MPI_COMM_WORLD"
                                 : comm == MPI_COMM_SELF ? "MPI_COMM_SELF"
                                                         : "created");
  s->handle.store(comm);
  if (PMPI_Comm_set_attr(comm, g_keyval, s) != MPI_SUCCESS) {
    MPIZIP_WARN("cannot attach state to a communicator; its calls are not counted");
  }
  return s;
}

CommState* comm_state_find(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL || g_keyval == MPI_KEYVAL_INVALID) return nullptr;
  // The last communicator this thread looked up: MPI_Comm_get_attr takes a lock and a hash lookup
  // in the MPI library, a noticeable part of a small message's cost.
  struct Last {
    MPI_Comm comm = MPI_COMM_NULL;
    CommState* state = nullptr;
    uint64_t generation = 0;
  };
  static thread_local __attribute__((tls_model("initial-exec"))) Last last;
  const uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (last.comm == comm && last.generation == generation) return last.state;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, g_keyval, &value, &found) != MPI_SUCCESS || !found) return nullptr;
  last = Last{comm, static_cast<CommState*>(value), generation};
  return last.state;
}

CommState* process_state() { return g_process.get(); }

void for_each_comm_state(const std::function<void(CommState&)>& fn) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& [id, s] : g_registry) fn(*s);
  if (g_freed_others) fn(*g_freed_others);
}

size_t comm_state_count() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_registry.size();
}

}  // namespace mpizip::core
