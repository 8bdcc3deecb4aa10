#include "src/core/comm_hints.h"

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "src/core/agreement.h"
#include "src/core/comm_context.h"
#include "src/core/coll_route.h"
#include "src/core/protocol.h"
#include "src/core/runtime.h"
#include "src/platform/log.h"

namespace mpizip::core {
namespace {

std::mutex g_mutex;  // serialises changes of the states' hints_held

// Whether `a` and `b` hold the same value of every hinted setting (the others are the process's).
bool same_hints(const Settings& a, const Settings& b) {
  for (size_t k = 0; k < hint_decls().size(); ++k)
    if (hint_bits(k, a) != hint_bits(k, b)) return false;
  return true;
}

// Makes `values` the ones in force on `s` (nullptr: the process's settings). A set of values the
// state has held before is taken again, so that a communicator whose hints change back and forth
// keeps a bounded list.
void publish(CommState* s, const Settings* values) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (values == nullptr) {
    s->hints.store(nullptr, std::memory_order_release);
    return;
  }
  for (const auto& held : s->hints_held) {
    if (same_hints(held->values, *values)) {
      s->hints.store(held.get(), std::memory_order_release);
      return;
    }
  }
  auto h = std::make_shared<CommHints>();
  h->values = *values;
  h->policy = send_policy_for(*values);
  s->hints_held.push_back(h);
  s->hints.store(h.get(), std::memory_order_release);
}

// Reads the hints of `info` into `*values`, with one warning for each value not taken.
// Returns whether `info` holds any of them.
bool read_hints(MPI_Info info, Settings* values) {
  if (info == MPI_INFO_NULL) return false;
  bool any = false;
  const auto& decls = hint_decls();
  for (size_t k = 0; k < decls.size(); ++k) {
    int len = 0, found = 0;
    if (PMPI_Info_get_valuelen(info, decls[k].key, &len, &found) != MPI_SUCCESS || !found) continue;
    std::string text(static_cast<size_t>(len) + 1, '\0');
    if (PMPI_Info_get(info, decls[k].key, len + 1, text.data(), &found) != MPI_SUCCESS || !found)
      continue;
    text.resize(static_cast<size_t>(len));
    any = true;
    std::string why;
    if (!parse_hint(k, text.c_str(), values, &why)) {
      MPIZIP_WARN("%s; keeping %s=%s", why.c_str(), decls[k].key, hint_text(k, *values).c_str());
    } else if (!why.empty()) {
      MPIZIP_WARN("%s", why.c_str());
    }
  }
  return any;
}

// Collective over `comm`, where the job runs the protocol (the same on every rank): compares the
// hints of agreed settings in `*values` across the ranks, and where one differs puts the process's
// value back, on every rank alike.
void agree(MPI_Comm comm, Settings* values) {
  if (!protocol_job_on()) return;
  int inter = 0, size = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
      PMPI_Comm_size(comm, &size) != MPI_SUCCESS || size < 2)
    return;
  const auto& decls = hint_decls();
  std::vector<AgreedValue> mine;
  std::vector<size_t> hint_of;  // mine[i] is hint hint_of[i]'s setting
  for (AgreedValue v : agreed_values(*values)) {
    for (size_t k = 0; k < decls.size(); ++k) {
      if (decls[k].agreed && std::strcmp(decls[k].env, v.env) == 0) {
        v.env = decls[k].key;  // the log line names the hint
        mine.push_back(v);
        hint_of.push_back(k);
      }
    }
  }
  if (mine.empty()) return;
  const std::vector<size_t> differ = values_differ(
      comm, mine, "the communicator keeps MPIZip's default instead (the environment's value)");
  for (size_t i : differ) copy_hint(hint_of[i], settings(), values);
}

// Collective over `comm`: the values the hints ask for, agreed, in force; and the two-shot
// collectives' part of its context where they were off at its creation and are now wanted.
void put_in_force(MPI_Comm comm, CommState* s, Settings* values) {
  agree(comm, values);
  // Every rank alike: the values agree, and so does whether the context has that part
  // (comm_context_create).
  if (std::shared_ptr<CommContext> c = s->context; c && coll_wanted(*values) && !c->coll_transport)
    comm_context_add_collectives(comm, transport_options(*values), c.get());
  publish(s, values);
}

bool intracomm(MPI_Comm comm) {
  int inter = 0;
  return PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && !inter;
}

}  // namespace

int comm_set_info(MPI_Comm comm, MPI_Info info) {
  const int rc = PMPI_Comm_set_info(comm, info);
  if (rc != MPI_SUCCESS || !active() || comm == MPI_COMM_NULL || !intracomm(comm)) return rc;
  CommState* s = comm_state(comm);
  if (s == nullptr) return rc;
  Settings values = comm_settings(s);
  read_hints(info, &values);
  put_in_force(comm, s, &values);
  return rc;
}

void comm_hints_from_info(MPI_Comm newcomm, MPI_Info info) {
  if (!active() || newcomm == MPI_COMM_NULL || !intracomm(newcomm)) return;
  CommState* s = comm_state(newcomm);
  if (s == nullptr) return;
  Settings values = settings();
  // Every rank takes part in the comparison, whether its info holds hints or not.
  const bool any = read_hints(info, &values);
  agree(newcomm, &values);
  // No context yet: MPIZip sets the communicator up next, with these values.
  publish(s, any ? &values : nullptr);
}

int comm_get_info(MPI_Comm comm, MPI_Info* info_used) {
  const int rc = PMPI_Comm_get_info(comm, info_used);
  if (rc != MPI_SUCCESS || !active() || comm == MPI_COMM_NULL || info_used == nullptr) return rc;
  CommState* s = comm_state_find(comm);
  if (s == nullptr || !s->protocol.load(std::memory_order_acquire)) return rc;
  const Settings& values = comm_settings(s);
  const auto& decls = hint_decls();
  for (size_t k = 0; k < decls.size(); ++k) {
    const std::string text = hint_text(k, values);
    if (PMPI_Info_set(*info_used, decls[k].key, text.c_str()) != MPI_SUCCESS) {
      MPIZIP_WARN("cannot add %s to the info of a communicator", decls[k].key);
    }
  }
  return rc;
}

void comm_hints_inherit(const CommState& parent, CommState* child) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const CommHints* h = parent.hints.load(std::memory_order_acquire);
  if (h == nullptr) return;
  for (auto it = parent.hints_held.rbegin(); it != parent.hints_held.rend(); ++it) {
    if (it->get() == h) {
      child->hints_held.push_back(*it);
      child->hints.store(h, std::memory_order_release);
      return;
    }
  }
}

}  // namespace mpizip::core
