// Checks behind -c: received bytes against what was sent, and reductions against a host
// reference computed from every rank's data.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "osu-bench/common/buffer.h"
#include "osu-bench/common/collective.h"
#include "osu-bench/common/harness.h"

namespace osub {

// Under -c, fills the first n bytes of a receive buffer with a byte no test sends as a whole
// buffer, so data that never arrived cannot pass.
void poison(const Context& ctx, Buffer& buf, size_t n);

// Whether every rank's verdict is true (collective).
bool agree_valid(bool local);

// Whether block r of `got` (blocks of `bytes`) is the first `bytes` of inputs[r] for every rank r,
// bit for bit: what a gather leaves at its root and an allgather everywhere.
bool gathered(std::span<const std::byte> got, const std::vector<std::vector<std::byte>>& inputs,
              size_t bytes);

// Whether block r of `got` (blocks of `bytes`) is block `rank` of inputs[r] for every rank r, bit
// for bit: what an all-to-all leaves on rank `rank`.
bool exchanged(std::span<const std::byte> got, const std::vector<std::vector<std::byte>>& inputs,
               int rank, size_t bytes);

// Whether the first layout.extent elements of buf hold, for every block k, the layout.counts[k]
// elements at source(k) at layout.displs[k], and the poison byte everywhere else, bit for bit: a
// v-collective's result, nothing written between or past its blocks (call under -c, after poison).
bool blocks_placed(const Context& ctx, const Buffer& buf, const VLayout& layout,
                   const std::function<const std::byte*(int k)>& source);

// blocks_placed with block k the first elements of inputs[k]: what MPI_Gatherv leaves at its root
// and MPI_Allgatherv everywhere.
bool gathered_v(const Context& ctx, const Buffer& buf, const VLayout& layout,
                const std::vector<std::vector<std::byte>>& inputs);

// Whether the first expected.size() bytes of buf equal expected, bit for bit.
bool equals_bytes(const Buffer& buf, std::span<const std::byte> expected);

// Whether result (count elements) is the sum of elements [first, first + count) of every rank's
// inputs (inputs[r] holds rank r's data). The reference adds in rank order. Integer datatypes and
// two-rank float sums have one possible result, checked bit for bit; with more ranks MPI may
// associate a float sum in any order, so a result that differs from the rank-order sum must lie
// within the error bound of some order, (n - 1) u sum|x_i|, of the exact sum.
bool check_sum(const Context& ctx, const std::vector<std::vector<std::byte>>& inputs, size_t first,
               std::span<const std::byte> result);

// Whether the first n bytes of buf are the same on every rank (collective): MPI's reductions
// must give every rank the same answer.
bool same_on_all_ranks(const Buffer& buf, size_t n);

// The header line that says how -c judges a reduction.
const char* sum_check_description(const Context& ctx);

}  // namespace osub
