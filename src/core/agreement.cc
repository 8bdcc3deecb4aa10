#include "src/core/agreement.h"

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "src/platform/log.h"

namespace mpizip::core {
namespace {

std::once_flag g_keyval_once;
int g_keyval = MPI_KEYVAL_INVALID;
std::atomic<bool> g_any_disagreed{false};  // some communicator of this process disagreed
std::atomic<bool> g_logged{false};         // the first disagreement logs as a warning

void fnv(uint64_t* h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    *h ^= p[i];
    *h *= 0x100000001b3ull;
  }
}

void mark(MPI_Comm comm) {
  std::call_once(g_keyval_once, [] {
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &g_keyval,
                                nullptr) != MPI_SUCCESS)
      g_keyval = MPI_KEYVAL_INVALID;
  });
  g_any_disagreed.store(true, std::memory_order_release);
  if (g_keyval != MPI_KEYVAL_INVALID) PMPI_Comm_set_attr(comm, g_keyval, nullptr);
}

}  // namespace

uint64_t agreement_hash(const std::vector<AgreedValue>& values) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& v : values) {
    fnv(&h, v.env, std::strlen(v.env) + 1);
    fnv(&h, &v.bits, sizeof v.bits);
  }
  return h;
}

std::string disagreement_line(const std::vector<AgreedValue>& mine,
                              const std::vector<std::vector<uint64_t>>& all, const char* comm_name,
                              const char* consequence, std::vector<size_t>* differ) {
  std::string names, values;
  size_t count = 0;
  for (size_t k = 0; k < mine.size(); ++k) {
    for (size_t r = 1; r < all.size(); ++r) {
      if (all[r][k] == all[0][k]) continue;
      names += (count == 0 ? "" : ", ") + std::string(mine[k].env);
      values += (count == 0 ? "" : "; ") + std::string(mine[k].env) + " " +
                setting_text(mine[k].type, mine[k].choices, all[0][k]) + " on rank 0, " +
                setting_text(mine[k].type, mine[k].choices, all[r][k]) + " on rank " +
                std::to_string(r);
      ++count;
      if (differ != nullptr) differ->push_back(k);
      break;
    }
  }
  if (count == 0) return "";
  return names + (count == 1 ? " differs" : " differ") + " across the ranks of " + comm_name +
         " (" + values + "); " + consequence;
}

std::vector<size_t> values_differ(MPI_Comm comm, const std::vector<AgreedValue>& mine,
                                  const char* consequence, std::atomic<bool>* once) {
  int size = 0, rank = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &rank);
  if (size < 2) return {};
  std::vector<size_t> every(mine.size());
  for (size_t k = 0; k < mine.size(); ++k) every[k] = k;
  const uint64_t h = agreement_hash(mine);
  // Every rank's hash alike: the AND of the hashes equals the AND of the complements' complement
  // (the OR) only when every bit is the same everywhere.
  uint64_t in[2] = {h, ~h}, out[2] = {0, 0};
  if (PMPI_Allreduce(in, out, 2, MPI_UINT64_T, MPI_BAND, comm) != MPI_SUCCESS) {
    if (rank == 0) MPIZIP_WARN("cannot compare the ranks' settings on a communicator; %s", consequence);
    return every;
  }
  if (out[0] == ~out[1]) return {};
  // They differ: gather every rank's values to name the settings (rare: no cost when they agree).
  const size_t n = mine.size();
  std::vector<uint64_t> values(n), gathered(n * static_cast<size_t>(size));
  for (size_t k = 0; k < n; ++k) values[k] = mine[k].bits;
  if (PMPI_Allgather(values.data(), static_cast<int>(n), MPI_UINT64_T, gathered.data(),
                     static_cast<int>(n), MPI_UINT64_T, comm) != MPI_SUCCESS) {
    if (rank == 0) MPIZIP_WARN("cannot compare the ranks' settings on a communicator; %s", consequence);
    return every;
  }
  std::vector<std::vector<uint64_t>> all(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    all[r].assign(gathered.begin() + r * n, gathered.begin() + (r + 1) * n);
  char name[MPI_MAX_OBJECT_NAME] = {0};
  int len = 0;
  PMPI_Comm_get_name(comm, name, &len);
  const std::string comm_name =
      len > 0 ? std::string(name) : "a communicator of " + std::to_string(size) + " ranks";
  std::vector<size_t> differ;
  std::string line = disagreement_line(mine, all, comm_name.c_str(), consequence, &differ);
  // Every rank gathered the same values, so every rank finds the same indices. The hashes differ
  // while the values agree only for two lists of different settings (never: one declaration).
  if (differ.empty()) {
    differ = every;
    line = "the settings that must agree differ across the ranks of " + comm_name + "; " +
           consequence;
  }
  if (rank == 0) {
    if (once == nullptr || !once->exchange(true)) {
      MPIZIP_WARN("%s", line.c_str());
    } else {
      MPIZIP_INFO("%s", line.c_str());
    }
  }
  return differ;
}

bool settings_agree(MPI_Comm comm, const Settings& values) {
  if (values_differ(comm, agreed_values(values), kOffForComm, &g_logged).empty()) return true;
  mark(comm);
  return false;
}

bool settings_disagree(MPI_Comm comm) {
  if (!g_any_disagreed.load(std::memory_order_acquire) || g_keyval == MPI_KEYVAL_INVALID ||
      comm == MPI_COMM_NULL)
    return false;
  void* value = nullptr;
  int found = 0;
  return PMPI_Comm_get_attr(comm, g_keyval, &value, &found) == MPI_SUCCESS && found != 0;
}

}  // namespace mpizip::core
