#include "src/core/comm_state.h"

#include <deque>
#include <memory>
#include <mutex>

#include "src/platform/log.h"

namespace mpizip::core {
namespace {

std::mutex g_mutex;
std::deque<std::unique_ptr<CommState>> g_registry;  // owns every state; index = id + 1
std::unique_ptr<CommState> g_process;               // calls without a communicator
int g_keyval = MPI_KEYVAL_INVALID;

// Caller holds g_mutex.
CommState* new_state(int size, std::string origin) {
  auto s = std::make_unique<CommState>();
  s->id = g_registry.size();
  s->size = size;
  s->origin = std::move(origin);
  g_registry.push_back(std::move(s));
  return g_registry.back().get();
}

int copy_cb(MPI_Comm oldcomm, int, void*, void* attribute_val_in, void* attribute_val_out,
            int* flag) {
  auto* parent = static_cast<CommState*>(attribute_val_in);
  int size = 0;
  PMPI_Comm_size(oldcomm, &size);
  std::lock_guard<std::mutex> lock(g_mutex);
  CommState* child = new_state(size, "dup of comm " + std::to_string(parent->id));
  *static_cast<void**>(attribute_val_out) = child;
  *flag = 1;
  return MPI_SUCCESS;
}

int delete_cb(MPI_Comm, int, void* attribute_val, void*) {
  auto* s = static_cast<CommState*>(attribute_val);
  s->freed.store(true);
  s->handle.store(MPI_COMM_NULL);
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

CommState* process_state() { return g_process.get(); }

namespace detail {
void lock_registry() { g_mutex.lock(); }
void unlock_registry() { g_mutex.unlock(); }
size_t registry_size() { return g_registry.size(); }
CommState* registry_at(size_t i) { return g_registry[i].get(); }
}  // namespace detail

}  // namespace mpizip::core
